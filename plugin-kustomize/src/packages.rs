//! kpt's packages, as `kpt fn render` tells a function about them.
//!
//! `kpt fn render PARENT` runs each subpackage's pipeline first, on that subpackage's resources,
//! then the parent's pipeline on the parent's resources and all the subpackages' (`hydrate` in
//! kpt's `internal/util/render/executor.go`). While it runs, an item's path annotation is relative
//! to its own package, which [`PACKAGE_PATH`] names by its absolute path (`LocalResources` in
//! kpt's `internal/pkg/pkg.go`); an item a function adds without one is given the package whose
//! pipeline runs (`setPkgPathAnnotationIfNotExist` in `internal/fnruntime/runner.go`), and the
//! paths are made relative to the root package only once every pipeline has run
//! (`adjustRelPath`). `kpt fn eval` and `kpt fn source` send no package path: every path is
//! relative to the package evaluated, and it is all one package here.
//!
//! What a parent's kiln step does with a subpackage's items follows from that order. A
//! subpackage with a kiln step of its own was rendered with its own options a moment before: the
//! parent leaves its items, and those of the packages below it, alone. A subpackage without one
//! is rendered by the nearest kiln step above it, with that step's options, and its objects are
//! written beside their sources, in the subpackage.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::config;

/// The absolute path of the package an item belongs to, during `kpt fn render`.
pub const PACKAGE_PATH: &str = "internal.config.kubernetes.io/package-path";

/// The program and image name of kiln's KRM function.
const PROGRAM: &str = "kiln-krm";

/// One item as [`Packages::of`] reads it: its package path, its path in the package, the item.
pub type Seen<'a> = (Option<&'a str>, Option<&'a str>, &'a Value);

/// The packages the items come from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Packages {
    /// The package whose pipeline runs (every other one is below it); `None` when the items name
    /// no package (`kpt fn eval`, kustomize, standalone mode).
    running: Option<String>,
    /// Every package the items name, as kpt wrote it.
    known: Vec<String>,
    /// The packages below the running one with a kiln step of their own.
    own_steps: Vec<String>,
}

impl Packages {
    /// The packages of the items. Items that name packages not all below one of them (no kpt
    /// sends that) are read as one package, as items that name none are.
    pub fn of(items: &[Seen<'_>]) -> Self {
        let mut known: Vec<String> = items
            .iter()
            .filter_map(|(p, _, _)| *p)
            .filter(|p| !p.is_empty())
            .collect::<HashSet<&str>>()
            .into_iter()
            .map(String::from)
            .collect();
        known.sort();
        let Some(running) = known
            .iter()
            .min_by_key(|p| Path::new(p).components().count())
            .cloned()
        else {
            return Self::default();
        };
        if !known.iter().all(|p| Path::new(p).starts_with(&running)) {
            return Self::default();
        }
        let renders: HashSet<(&str, &str)> = items
            .iter()
            .filter(|(_, _, v)| is_render_config(v))
            .filter_map(|(p, f, _)| Some(((*p)?, (*f)?)))
            .collect();
        let own_steps = items
            .iter()
            .filter(|(_, _, v)| is_kptfile(v))
            .filter_map(|(p, _, v)| Some(((*p)?, *v)))
            .filter(|(p, _)| *p != running.as_str())
            .filter(|(p, kptfile)| has_kiln_step(kptfile, |c| renders.contains(&(*p, c))))
            .map(|(p, _)| p.to_string())
            .collect();
        Self {
            running: Some(running),
            known,
            own_steps,
        }
    }

    /// Whether the items of `package` belong to the kiln step of a package below the running one
    /// (that package's, or one between it and the running package).
    pub fn owned_below(&self, package: Option<&str>) -> bool {
        package.is_some_and(|p| {
            self.own_steps
                .iter()
                .any(|q| Path::new(p).starts_with(Path::new(q)))
        })
    }

    /// The package whose pipeline runs, when the items name packages.
    pub fn running(&self) -> Option<&str> {
        self.running.as_deref()
    }

    /// The package an item of `package` is written to: its own, or the running package for an
    /// item that names none (what kpt gives it).
    pub fn key<'a>(&'a self, package: Option<&'a str>) -> Option<&'a str> {
        package.or(self.running.as_deref())
    }

    /// A package's directory relative to the running package, as a slash path (`""` for the
    /// running package, or where no package is named).
    pub fn relative(&self, package: Option<&str>) -> String {
        match (package, &self.running) {
            (Some(p), Some(r)) => Path::new(p).strip_prefix(r).map(slash).unwrap_or_default(),
            _ => String::new(),
        }
    }

    /// `file`, a slash path in `package`, relative to the running package.
    pub fn shown(&self, package: Option<&str>, file: &str) -> String {
        join(&self.relative(package), file)
    }

    /// The package that objects rendered from `source`, a file or a kurel package named by a
    /// slash path relative to kiln's working directory `root`, are written to: the one
    /// [`Packages::holding`] the directory they go to, else the running package.
    pub fn receiving(&self, root: &Path, source: &str) -> Option<String> {
        let dir = crate::annotations::dir_of(source.trim_end_matches('/'));
        // The mark is the package's text: only a plain relative path is looked at.
        let plain = Path::new(dir)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        plain
            .then(|| self.holding(root, dir))
            .flatten()
            .map(|(p, _)| p)
            .or_else(|| self.running.clone())
    }

    /// Where objects for the directory `dir` (a slash path relative to kiln's working directory
    /// `root`) are written: the deepest package the items name that holds it, and the directory
    /// relative to that package. `None` when no package holds it, or the items name none.
    pub fn holding(&self, root: &Path, dir: &str) -> Option<(String, String)> {
        if self.known.is_empty() {
            return None;
        }
        let target = root.join(dir);
        let deepest = |target: &Path, of: &dyn Fn(&str) -> Option<PathBuf>| {
            self.known
                .iter()
                .filter_map(|p| Some((p, target.strip_prefix(of(p)?).ok()?.to_path_buf())))
                .min_by_key(|(_, rest)| rest.components().count())
                .map(|(p, rest)| (p.clone(), slash(&rest)))
        };
        deepest(&target, &|p| Some(PathBuf::from(p))).or_else(|| {
            // kpt names packages from its own view of the working directory, which may go through
            // a symbolic link that the process's working directory has resolved.
            let target = std::fs::canonicalize(&target).ok()?;
            deepest(&target, &|p| std::fs::canonicalize(p).ok())
        })
    }
}

/// The package an item belongs to ([`PACKAGE_PATH`]), when kpt named one.
pub fn of_item(v: &Value) -> Option<&str> {
    crate::annotations::get(v, PACKAGE_PATH).filter(|p| !p.is_empty())
}

/// Whether the item is a Kptfile.
pub fn is_kptfile(v: &Value) -> bool {
    // Asked of every item (thousands in a pass-through): scanned, not hashed.
    let field = |k| kiln_core::lookup::field(v, k).and_then(Value::as_str);
    field("kind") == Some("Kptfile")
        && field("apiVersion").is_some_and(|a| a.starts_with("kpt.dev/"))
}

fn is_render_config(v: &Value) -> bool {
    v.get("apiVersion").and_then(Value::as_str) == Some(config::API_VERSION)
        && v.get("kind").and_then(Value::as_str) == Some(config::KIND)
}

/// Whether a Kptfile's pipeline runs kiln among its mutators: an `exec` of a program named
/// `kiln-krm` (or as this program is named), an `image` named `kiln-krm` (any registry, tag or
/// digest), or a step whose `configPath` is a Render configuration (`is_render`, by the path in
/// the package).
pub fn has_kiln_step(kptfile: &Value, is_render: impl Fn(&str) -> bool) -> bool {
    let Some(mutators) = kptfile
        .get("pipeline")
        .and_then(|p| p.get("mutators"))
        .and_then(Value::as_array)
    else {
        return false;
    };
    let this = std::env::current_exe()
        .ok()
        .and_then(|e| e.file_name().map(|n| n.to_string_lossy().into_owned()));
    mutators.iter().any(|m| {
        let field = |k| m.get(k).and_then(Value::as_str);
        let exec = field("exec").and_then(|e| e.split_whitespace().next());
        let program = exec.map(|e| e.rsplit(['/', '\\']).next().unwrap_or(e));
        program.is_some_and(|p| p == PROGRAM || this.as_deref() == Some(p))
            || field("image").is_some_and(|i| image_name(i) == PROGRAM)
            || field("configPath").is_some_and(&is_render)
    })
}

/// The name of an image reference, without registry, path, tag or digest.
fn image_name(image: &str) -> &str {
    let image = image.split('@').next().unwrap_or(image);
    let last = image.rsplit('/').next().unwrap_or(image);
    last.split(':').next().unwrap_or(last)
}

fn slash(p: &Path) -> String {
    p.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Two slash paths joined (`a` may be empty).
pub fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else if b.is_empty() {
        a.to_string()
    } else {
        format!("{a}/{b}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kptfile(mutators: Value) -> Value {
        json!({"apiVersion": "kpt.dev/v1", "kind": "Kptfile", "metadata": {"name": "k"},
            "pipeline": {"mutators": mutators}})
    }

    #[test]
    fn kiln_steps_are_recognised_by_program_image_or_configuration() {
        let no = |_: &str| false;
        for m in [
            json!([{"exec": "kiln-krm"}]),
            json!([{"exec": "/usr/local/bin/kiln-krm"}]),
            json!([{"image": "set-labels"}, {"image": "ghcr.io/acme/kiln-krm:1.2@sha256:ab"}]),
            json!([{"image": "kiln-krm"}]),
        ] {
            assert!(has_kiln_step(&kptfile(m.clone()), no), "{m}");
        }
        for m in [
            json!([{"exec": "kiln-krm-wrapper"}]),
            json!([{"image": "ghcr.io/kiln-krm/set-labels:1"}]),
            json!([{"configPath": "render.yaml"}]),
            json!([]),
        ] {
            assert!(!has_kiln_step(&kptfile(m.clone()), no), "{m}");
        }
        let render = |p: &str| p == "render.yaml";
        assert!(has_kiln_step(
            &kptfile(json!([{"exec": "my-kiln", "configPath": "render.yaml"}])),
            render
        ));
        let validators = json!({"apiVersion": "kpt.dev/v1", "kind": "Kptfile",
            "pipeline": {"validators": [{"exec": "kiln-krm"}]}});
        assert!(!has_kiln_step(&validators, no));
    }

    #[test]
    fn packages_below_a_kiln_step_are_its_own() {
        let top = kptfile(json!([{"exec": "kiln-krm"}]));
        let with = kptfile(json!([{"image": "kiln-krm"}]));
        let without = json!({"apiVersion": "kpt.dev/v1", "kind": "Kptfile"});
        let by_config = kptfile(json!([{"exec": "other", "configPath": "r.yaml"}]));
        let render = json!({"apiVersion": config::API_VERSION, "kind": config::KIND});
        let items: Vec<Seen<'_>> = vec![
            (Some("/r/p/db/deep"), Some("Kptfile"), &without),
            (Some("/r/p/db"), Some("Kptfile"), &with),
            (Some("/r/p/web"), Some("Kptfile"), &without),
            (Some("/r/p/cfg"), Some("Kptfile"), &by_config),
            (Some("/r/p/cfg"), Some("r.yaml"), &render),
            (Some("/r/p"), Some("Kptfile"), &top),
        ];
        let p = Packages::of(&items);
        assert_eq!(p.running.as_deref(), Some("/r/p"));
        assert!(p.owned_below(Some("/r/p/db")));
        assert!(p.owned_below(Some("/r/p/db/deep")));
        assert!(p.owned_below(Some("/r/p/cfg")));
        assert!(!p.owned_below(Some("/r/p/web")));
        assert!(!p.owned_below(Some("/r/p")));
        assert!(!p.owned_below(Some("/r/p/dbx")));
        assert!(!p.owned_below(None));
        assert_eq!(p.relative(Some("/r/p/db/deep")), "db/deep");
        assert_eq!(p.shown(Some("/r/p/web"), "a/b.yaml"), "web/a/b.yaml");
        assert_eq!(p.shown(Some("/r/p"), "b.yaml"), "b.yaml");
        assert_eq!(p.key(None), Some("/r/p"));
        assert_eq!(
            p.holding(Path::new("/r"), "p/db/deep/x"),
            Some(("/r/p/db/deep".into(), "x".into()))
        );
        assert_eq!(
            p.holding(Path::new("/r/p"), ""),
            Some(("/r/p".into(), "".into()))
        );
        assert_eq!(p.holding(Path::new("/r"), "q"), None);
        // A package's own run: it is the running package, nothing is below another step.
        let own: Vec<Seen<'_>> = vec![(Some("/r/p/db"), Some("Kptfile"), &with)];
        assert!(!Packages::of(&own).owned_below(Some("/r/p/db")));
        // No package paths (kpt fn eval): one package, nothing owned, nothing held.
        let eval: Vec<Seen<'_>> = vec![(None, Some("db/Kptfile"), &with)];
        let p = Packages::of(&eval);
        assert_eq!(p, Packages::default());
        assert!(!p.owned_below(None));
        assert_eq!(p.shown(None, "db/x.yaml"), "db/x.yaml");
        assert_eq!(p.holding(Path::new("/r"), "db"), None);
    }
}
