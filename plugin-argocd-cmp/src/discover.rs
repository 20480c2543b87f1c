//! `kiln-cmp discover`: whether the application directory holds kiln inputs, cheaply (Argo CD
//! runs it for every application without a named plugin, on every refresh).
//!
//! A match is a kurel package (`*.kurel/`, or a `parameters.yaml` with a top-level `kurel:`), or a
//! manifest file mentioning a kro ResourceGraphDefinition or an `openchoreo.dev` kind. Files are
//! searched as text, not parsed, and the walk is bounded; the first match ends it.

use std::path::Path;

/// Most directory levels below the application directory looked at.
const MAX_DEPTH: usize = 8;
/// Most files looked at.
const MAX_FILES: usize = 5000;
/// Most bytes of one file read.
const MAX_BYTES: u64 = 256 * 1024;

/// What in the directory is a kiln input, if anything (a path relative to it).
pub fn discover(dir: &Path) -> Option<String> {
    let mut seen = 0;
    walk(dir, Path::new(""), 0, &mut seen)
}

fn walk(dir: &Path, rel: &Path, depth: usize, seen: &mut usize) -> Option<String> {
    if depth > MAX_DEPTH {
        return None;
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir).ok()?.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    let mut dirs = Vec::new();
    for e in entries {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with('.') {
            continue;
        }
        let Ok(t) = e.file_type() else { continue };
        let r = rel.join(&name);
        if t.is_dir() {
            if name.ends_with(".kurel") && !name.ends_with(".local.kurel") {
                return Some(r.display().to_string());
            }
            dirs.push((e.path(), r));
        } else if t.is_file() {
            *seen += 1;
            if *seen > MAX_FILES {
                return None;
            }
            let manifest = [".yaml", ".yml", ".json"].iter().any(|x| name.ends_with(x));
            if manifest && mentions_kiln(&e.path(), name == "parameters.yaml") {
                return Some(r.display().to_string());
            }
        }
    }
    dirs.into_iter()
        .find_map(|(p, r)| walk(&p, &r, depth + 1, seen))
}

fn mentions_kiln(path: &Path, parameters: bool) -> bool {
    use std::io::Read;
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    let mut text = String::new();
    if f.take(MAX_BYTES).read_to_string(&mut text).is_err() {
        return false;
    }
    text.contains("kind: ResourceGraphDefinition")
        || text.contains("\"kind\": \"ResourceGraphDefinition\"")
        || text.contains("apiVersion: openchoreo.dev/")
        || text.contains("\"apiVersion\": \"openchoreo.dev/")
        || (parameters && text.lines().any(|l| l.starts_with("kurel:")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_kind_of_input_and_nothing_else() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        std::fs::write(d.join("cm.yaml"), "apiVersion: v1\nkind: ConfigMap\n").unwrap();
        assert_eq!(discover(d), None);
        std::fs::create_dir_all(d.join("deep/er")).unwrap();
        std::fs::write(
            d.join("deep/er/rgd.yaml"),
            "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\n",
        )
        .unwrap();
        assert_eq!(discover(d).as_deref(), Some("deep/er/rgd.yaml"));
        let k = tempfile::tempdir().unwrap();
        std::fs::create_dir(k.path().join("app.kurel")).unwrap();
        assert_eq!(discover(k.path()).as_deref(), Some("app.kurel"));
        let p = tempfile::tempdir().unwrap();
        std::fs::write(p.path().join("parameters.yaml"), "kurel:\n  name: a\n").unwrap();
        assert!(discover(p.path()).is_some());
    }
}
