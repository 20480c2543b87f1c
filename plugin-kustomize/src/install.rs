//! `kiln-krm install-exec-plugin`: put the executable where kustomize looks for the legacy exec
//! plugin of `apiVersion: fn.kiln.dev/v1alpha1, kind: Render`.
//!
//! kustomize looks for `<plugin dir>/<group>/<version>/<lowercase kind>/<Kind>` and runs it if it
//! is executable; the plugin dir is `$XDG_CONFIG_HOME/kustomize/plugin` (or
//! `~/.config/kustomize/plugin`). The copy is written beside its final name and renamed over it,
//! so a build running at the same time never starts a half-written file.

use std::fs;
use std::path::{Path, PathBuf};

/// The plugin's path below the plugin directory.
pub const RELATIVE: &str = "fn.kiln.dev/v1alpha1/render/Render";

/// kustomize's default plugin directory, from the environment.
pub fn default_dir(xdg_config_home: Option<&str>, home: Option<&str>) -> Option<PathBuf> {
    match (
        xdg_config_home.filter(|s| !s.is_empty()),
        home.filter(|s| !s.is_empty()),
    ) {
        (Some(x), _) => Some(Path::new(x).join("kustomize/plugin")),
        (None, Some(h)) => Some(Path::new(h).join(".config/kustomize/plugin")),
        (None, None) => None,
    }
}

/// Copy `exe` to `dir/fn.kiln.dev/v1alpha1/render/Render`, executable; returns the path.
pub fn install(exe: &Path, dir: &Path) -> std::io::Result<PathBuf> {
    let target = dir.join(RELATIVE);
    let parent = target.parent().expect("RELATIVE has directories");
    fs::create_dir_all(parent)?;
    let tmp = parent.join(".Render.kiln-krm.tmp");
    fs::copy(exe, &tmp)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755))?;
    }
    fs::rename(&tmp, &target)?;
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_dir_follows_xdg() {
        assert_eq!(
            default_dir(Some("/x"), Some("/h")).unwrap(),
            Path::new("/x/kustomize/plugin")
        );
        assert_eq!(
            default_dir(Some(""), Some("/h")).unwrap(),
            Path::new("/h/.config/kustomize/plugin")
        );
        assert!(default_dir(None, None).is_none());
    }

    #[test]
    fn installs_an_executable_copy() {
        let d = tempfile::tempdir().unwrap();
        let exe = d.path().join("exe");
        fs::write(&exe, b"#!/bin/sh\n").unwrap();
        let t = install(&exe, &d.path().join("plugins")).unwrap();
        assert!(t.ends_with("fn.kiln.dev/v1alpha1/render/Render"));
        assert_eq!(fs::read(&t).unwrap(), b"#!/bin/sh\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                fs::metadata(&t).unwrap().permissions().mode() & 0o777,
                0o755
            );
        }
        // Installing again replaces it.
        install(&exe, &d.path().join("plugins")).unwrap();
    }
}
