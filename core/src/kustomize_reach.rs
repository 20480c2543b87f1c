//! Render, then kustomize: what kiln-cmp and kiln-flux do with a directory that holds a
//! kustomization, in the layouts teams have (an overlay per environment over a shared base, a
//! `components/` folder, several levels of overlays).
//!
//! 1. [`prepare`]: the kustomization's reach is found in the source tree
//!    ([`kustomize_paths::check_and_reach`]: every directory and file it names, transitively,
//!    each checked to stay inside the door's root); kiln's inputs in every directory it reaches
//!    are rendered in place, as one run ([`inplace::build`]), so an instance in an overlay finds
//!    its definition in the base, and the kustomizations are rewritten to name what the rendered
//!    tree holds. The tree kept is what kustomize may read: the reached directories, rendered,
//!    and the files the kustomizations name, byte for byte. A definition or instance outside the
//!    reach is not in it, so it can reach neither kustomize nor an artifact.
//! 2. [`build`]: the tree is written to a scratch directory, the door edits what it must (Flux
//!    writes the Kustomization's transformations into the kustomization), every path is checked
//!    again over the scratch copy (the rewritten kustomizations included), and kustomize builds
//!    it. What it prints is checked for objects kiln should have rendered ([`unrendered`]):
//!    silence about an unrendered ResourceGraphDefinition or instance would hand it to the
//!    cluster as it is.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::diag::{codes, Diagnostic, Diagnostics};
use crate::document::{parse_file, Document};
use crate::inplace::{self, tree, OutFile};
use crate::kustomize_build::{self, Program};
use crate::kustomize_paths::{self, Reach};
use crate::source::Root;

/// A tree prepared for kustomize.
#[derive(Debug, Default)]
pub struct Prepared {
    /// The files kustomize may read, relative to the root, in sorted path order: kiln's inputs
    /// rendered, the rest byte for byte.
    pub files: Vec<OutFile>,
    /// What the kustomization reaches.
    pub reach: Reach,
    /// The kinds the rendered ResourceGraphDefinitions define, as (group, kind).
    pub defined: BTreeSet<(String, String)>,
    /// Warnings of the render.
    pub warnings: Vec<Diagnostic>,
    /// Lines for people (kurel's log).
    pub log: Vec<String>,
}

/// Render what the kustomization in `entry` (relative to `root`; diagnostics call the root
/// `shown`) reaches, from `all`, every file of the root ([`tree::read`]). `components` are more
/// directories the build will name, relative to `entry` (a Flux Kustomization's
/// `spec.components`). `opts.request.values` are relative to `entry`. All or nothing.
pub fn prepare(
    root: &Path,
    shown: &Path,
    entry: &Path,
    components: &[String],
    all: Vec<tree::File>,
    opts: &inplace::Options,
    check: &kustomize_paths::Options,
) -> Result<Prepared, Diagnostics> {
    let confined = Root::named(root, shown.to_path_buf()).map_err(|d| Diagnostics(vec![d]))?;
    let (mut escapes, mut reach) = kustomize_paths::check_and_reach(&confined, entry, check);
    for c in components {
        let shown_c = confined.display_name(&entry.join(c));
        match confined.resolve_from(entry, Path::new(c), &shown_c) {
            Ok(Some((rel, _))) => {
                let (more, theirs) = kustomize_paths::check_and_reach(&confined, &rel, check);
                escapes.0.extend(more.0);
                reach.dirs.extend(theirs.dirs);
                reach.resources.extend(theirs.resources);
                reach.files.extend(theirs.files);
            }
            // Not there: kustomize says so when it builds.
            Ok(None) => {}
            Err(d) => escapes.push(d),
        }
    }
    if escapes.has_errors() {
        return Err(escapes);
    }
    // The run's directory: the entry when the kustomization reaches nothing outside it, so that
    // such a directory renders (and names its files) exactly as before; else the root, whose
    // paths every message then uses.
    let entry_rel = slashed(entry);
    let outside = reach
        .dirs
        .iter()
        .chain(&reach.resources)
        .any(|d| !(d == &entry_rel || kustomize_paths::is_under(d, &entry_rel)));
    let top = if outside {
        String::new()
    } else {
        entry_rel.clone()
    };
    let mut inputs = Vec::new();
    let mut kept = Vec::new();
    for f in all {
        // A file a kustomization names as a patch, a generator's file or a configuration is
        // kustomize's, not a manifest: it is taken as it is.
        if reach.renders(&f.rel) && !reach.files.contains(&f.rel) {
            let rel = strip_dir(&f.rel, &top).to_string();
            inputs.push(tree::File { rel, ..f });
        } else if reach.holds(&f.rel) {
            kept.push(OutFile {
                rel: f.rel,
                bytes: f.bytes,
                executable: f.executable,
                manifest: false,
            });
        }
    }
    let defined = defined_kinds(&inputs, opts);
    let from_top = strip_dir(&entry_rel, &top).to_string();
    let mut opts = opts.clone();
    if !from_top.is_empty() {
        for v in &mut opts.request.values {
            *v = Path::new(&from_top).join(&*v);
        }
    }
    let built = inplace::build(&root.join(&top), inputs, &opts)?;
    let mut files = kept;
    files.extend(built.files.into_iter().map(|f| OutFile {
        rel: join_dir(&top, &f.rel),
        ..f
    }));
    files.sort_by(|a, b| a.rel.cmp(&b.rel));
    Ok(Prepared {
        files,
        reach,
        defined,
        warnings: built.warnings,
        log: built.log,
    })
}

/// Check every kustomization of a tree rendered in place as a whole (`kiln-flux build PATH`):
/// what each names must be inside the tree, or the tree given to Flux would name files it
/// does not hold. `files` are the tree's files, relative to `root`.
pub fn check_tree(
    root: &Path,
    files: &[tree::File],
    check: &kustomize_paths::Options,
) -> Diagnostics {
    let mut diags = Diagnostics::new();
    let confined = match Root::new(root) {
        Ok(r) => r,
        Err(d) => {
            diags.push(d);
            return diags;
        }
    };
    let dirs: BTreeSet<&str> = files
        .iter()
        .filter(|f| kustomize_paths::is_kustomization_file(&f.rel))
        .filter(|f| !f.rel.split('/').any(|c| c.starts_with('.')))
        .map(|f| f.rel.rsplit_once('/').map_or("", |(d, _)| d))
        .collect();
    for d in dirs {
        for found in kustomize_paths::check(&confined, Path::new(d), check).0 {
            if !diags.0.contains(&found) {
                diags.push(found);
            }
        }
    }
    diags
}

/// How a door runs kustomize over a prepared tree.
pub struct Build<'a> {
    /// kustomize or kubectl.
    pub program: &'a Program,
    /// Options after the directory (Flux: load restrictions off; Argo CD: its build options).
    pub args: &'a [String],
    /// The path check of the scratch copy.
    pub check: &'a kustomize_paths::Options,
    /// Ship definitions to the kro controller (they may then be in the output).
    pub kro_mode: bool,
    /// What to fix when kustomize fails.
    pub hint: &'a str,
    /// Find the file each object came from ([`Built::origins`]), through kustomize's origin
    /// annotations (`buildMetadata: [originAnnotations]`), which are taken off again.
    pub origins: bool,
    /// How long kustomize may run, and how much of what it prints is read.
    pub bounds: kustomize_build::Bounds,
}

/// What kustomize built.
#[derive(Debug, Default)]
pub struct Built {
    /// Its objects, in its order.
    pub docs: Vec<Document>,
    /// With [`Build::origins`]: the file each object came from, relative to the root (`None`
    /// for a generated object); else empty.
    pub origins: Vec<Option<String>>,
}

/// kustomize's annotation naming where an object came from.
const ORIGIN: &str = "config.kubernetes.io/origin";

/// Build `entry` of a prepared tree with kustomize, in a scratch copy. `edit` changes the
/// scratch copy's entry directory before the check runs (Flux's Kustomization fields).
/// Diagnostics name files relative to `shown`, never the scratch directory.
pub fn build(
    shown: &Path,
    entry: &Path,
    prepared: &Prepared,
    b: &Build<'_>,
    edit: impl FnOnce(&Path) -> Result<(), Diagnostics>,
) -> Result<Built, Diagnostics> {
    let scratch = tempfile::Builder::new()
        .prefix("kiln-kustomize-")
        .tempdir()
        .map_err(|e| {
            Diagnostics(vec![Diagnostic::error(
                codes::IO_READ,
                format!("cannot create a scratch directory: {e}"),
            )
            .with_hint("check the temporary directory (TMPDIR)")])
        })?;
    let at = scratch.path();
    let named = |ds: Diagnostics| Diagnostics(ds.0.into_iter().map(|d| unscratch(d, at)).collect());
    kustomize_build::stage(at, Path::new(""), &[], &prepared.files)
        .map_err(|d| Diagnostics(vec![d]))?;
    std::fs::create_dir_all(at.join(entry))
        .map_err(|e| Diagnostics(vec![kustomize_build::io_err(&at.join(entry), &e)]))?;
    edit(&at.join(entry)).map_err(named)?;
    let annotated = b.origins && annotate_origins(&at.join(entry), &b.check.yaml).map_err(named)?;
    let root = Root::named(at, shown.to_path_buf()).map_err(|d| Diagnostics(vec![d]))?;
    let escapes = kustomize_paths::check(&root, entry, b.check);
    if escapes.has_errors() {
        return Err(named(escapes));
    }
    let shown_entry = root.display_name(entry);
    // kustomize quotes the node it fails on, which may be a Secret's data.
    let text = kustomize_build::run(
        b.program,
        &at.join(entry),
        at,
        b.args,
        &shown_entry,
        b.hint,
        &b.bounds,
    )
    .map_err(|d| {
        named(Diagnostics(kustomize_build::redacted(
            vec![d],
            &[&prepared.files],
        )))
    })?;
    let yaml = b.check.yaml;
    let mut docs = parse_file("kustomize build", text, &yaml).map_err(|d| Diagnostics(vec![d]))?;
    let stray = unrendered(&docs, &prepared.defined, b.kro_mode, &shown_entry);
    if !stray.is_empty() {
        return Err(Diagnostics(stray));
    }
    let origins = if annotated {
        let base = slashed(entry);
        docs.iter_mut()
            .map(|d| {
                take_origin(&mut d.value).and_then(|p| kustomize_paths::join_lexically(&base, &p))
            })
            .collect()
    } else {
        Vec::new()
    };
    Ok(Built { docs, origins })
}

/// Ask kustomize for origin annotations in the kustomization of `dir`, unless it asks for them
/// itself (then they are the user's, and stay). Whether they were added.
fn annotate_origins(dir: &Path, yaml: &crate::document::YamlLimits) -> Result<bool, Diagnostics> {
    let Some(name) = kustomize_paths::KUSTOMIZATION_FILES
        .iter()
        .find(|n| dir.join(n).is_file())
    else {
        return Ok(false);
    };
    let path = dir.join(name);
    let io = |e: std::io::Error| Diagnostics(vec![kustomize_build::io_err(&path, &e)]);
    let text = std::fs::read_to_string(&path).map_err(io)?;
    let mut docs = parse_file(name, text, yaml).map_err(|d| Diagnostics(vec![d]))?;
    let Some(Value::Object(k)) = docs.first_mut().map(|d| &mut d.value) else {
        return Ok(false);
    };
    let list = k
        .entry("buildMetadata")
        .or_insert_with(|| Value::Array(Vec::new()));
    let Value::Array(a) = list else {
        return Ok(false);
    };
    if a.iter().any(|v| v == "originAnnotations") {
        return Ok(false);
    }
    a.push(Value::String("originAnnotations".into()));
    let value = Value::Object(std::mem::take(k));
    let out = crate::output::to_yaml(&value).map_err(|d| Diagnostics(vec![d]))?;
    std::fs::write(&path, out).map_err(io)?;
    Ok(true)
}

/// Take kustomize's origin annotation off an object: its `path`, relative to the kustomization
/// built.
fn take_origin(o: &mut Value) -> Option<String> {
    let meta = o.get_mut("metadata")?.as_object_mut()?;
    let notes = meta.get_mut("annotations")?.as_object_mut()?;
    let origin = notes.remove(ORIGIN)?;
    if notes.is_empty() {
        meta.remove("annotations");
    }
    origin
        .as_str()?
        .lines()
        .find_map(|l| l.strip_prefix("path: "))
        .map(|p| p.trim().trim_matches('"').trim_matches('\'').to_string())
}

/// Objects of kustomize's output that kiln renders and did not: a ResourceGraphDefinition or an
/// instance of a kind one defines (unless they are meant for the kro controller), or a
/// component-type document. Each reached kustomize from outside what kiln rendered.
pub fn unrendered(
    docs: &[Document],
    defined: &BTreeSet<(String, String)>,
    kro_mode: bool,
    shown: &str,
) -> Vec<Diagnostic> {
    docs.iter()
        .filter_map(|d| {
            let kind = d.kind()?;
            let api = d.api_version()?;
            let group = crate::scope::group_of(api);
            let what = if crate::kro::rgd::is_rgd(d) {
                "the ResourceGraphDefinition"
            } else if defined.contains(&(group.to_string(), kind.to_string())) {
                "the instance"
            } else if group == "openchoreo.dev" && crate::component::renders_kind(kind) {
                "the component-type document"
            } else {
                return None;
            };
            if kro_mode && what != "the component-type document" {
                return None;
            }
            let name = d
                .value
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("?");
            Some(
                Diagnostic::error(
                    codes::REQUEST_INVALID,
                    format!(
                        "kustomize's output holds {what} {kind} {}, which kiln did not render: kustomize read it from outside the directories the kustomization reaches as resources",
                        crate::diag::quote(name)
                    ),
                )
                .in_file(shown.to_string())
                .with_hint("kiln renders the directories and files a kustomization names in `resources`, `bases` and `components`; name the directory that holds it there, not through a generator, transformer or patch"),
            )
        })
        .collect()
}

/// The kinds ResourceGraphDefinitions among `files` define. Only files that mention the kind
/// are parsed again.
fn defined_kinds(files: &[tree::File], opts: &inplace::Options) -> BTreeSet<(String, String)> {
    let needle = b"ResourceGraphDefinition";
    files
        .iter()
        .filter(|f| inplace::is_manifest_name(&f.rel))
        .filter(|f| f.bytes.windows(needle.len()).any(|w| w == needle))
        .filter_map(|f| {
            let text = String::from_utf8(f.bytes.clone()).ok()?;
            parse_file(&f.rel, text, &opts.request.limits.yaml).ok()
        })
        .flatten()
        .filter_map(|d| crate::kro::rgd::defined_kind(&d.value))
        .collect()
}

fn strip_dir<'a>(rel: &'a str, dir: &str) -> &'a str {
    if dir.is_empty() {
        return rel;
    }
    rel.strip_prefix(dir)
        .and_then(|r| r.strip_prefix('/'))
        .unwrap_or(if rel == dir { "" } else { rel })
}

fn join_dir(dir: &str, rel: &str) -> String {
    if dir.is_empty() {
        rel.to_string()
    } else {
        format!("{dir}/{rel}")
    }
}

fn slashed(p: &Path) -> String {
    let s = p.to_string_lossy().replace('\\', "/");
    let s = s.trim_start_matches("./").trim_end_matches('/');
    if s == "." {
        String::new()
    } else {
        s.to_string()
    }
}

/// A diagnostic without the scratch directory's path in it.
fn unscratch(mut d: Diagnostic, scratch: &Path) -> Diagnostic {
    let s = scratch.display().to_string();
    d.message = d.message.replace(&format!("{s}/"), "").replace(&s, ".");
    d.file = d
        .file
        .map(|f| f.replace(&format!("{s}/"), "").replace(&s, "."));
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::parse_file;

    const RGD: &str = "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata:\n  name: apps\nspec:\n  schema:\n    apiVersion: v1alpha1\n    kind: App\n    group: example.dev\n    spec:\n      name: string\n  resources:\n  - id: cm\n    template:\n      apiVersion: v1\n      kind: ConfigMap\n      metadata:\n        name: ${schema.spec.name}\n      data:\n        k: v\n";

    fn app(name: &str) -> String {
        format!("apiVersion: example.dev/v1alpha1\nkind: App\nmetadata:\n  name: {name}\n  namespace: web\nspec:\n  name: {name}\n")
    }

    fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, Vec<tree::File>) {
        let d = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let p = d.path().join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let all = tree::read(d.path(), d.path(), 1 << 20).unwrap();
        (d, all)
    }

    fn text_of<'a>(p: &'a Prepared, rel: &str) -> Option<&'a str> {
        p.files
            .iter()
            .find(|f| f.rel == rel)
            .map(|f| std::str::from_utf8(&f.bytes).unwrap())
    }

    /// An overlay over a base in another directory: the base's definition and instance are
    /// rendered, the overlay's kustomization is kept, and a directory the overlay does not
    /// reach (another environment, with a definition of its own) is not in the tree at all.
    #[test]
    fn what_an_overlay_reaches_is_rendered_and_nothing_else_is_kept() {
        let inst = app("shop");
        let (d, all) = tree(&[
            ("base/rgd.yaml", RGD),
            ("base/app.yaml", &inst),
            (
                "base/kustomization.yaml",
                "resources: [rgd.yaml, app.yaml]\n",
            ),
            (
                "overlays/prod/kustomization.yaml",
                "resources: [../../base]\npatches:\n- path: ../../patches/p.yaml\n",
            ),
            (
                "patches/p.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: shop\n",
            ),
            ("overlays/staging/rgd.yaml", RGD),
            (
                "overlays/staging/kustomization.yaml",
                "resources: [rgd.yaml]\n",
            ),
        ]);
        let p = prepare(
            d.path(),
            Path::new(""),
            Path::new("overlays/prod"),
            &[],
            all,
            &inplace::Options::default(),
            &kustomize_paths::Options::default(),
        )
        .unwrap();
        let names: Vec<&str> = p.files.iter().map(|f| f.rel.as_str()).collect();
        assert_eq!(
            names,
            [
                "base/app.yaml",
                "base/kustomization.yaml",
                "overlays/prod/kustomization.yaml",
                "patches/p.yaml"
            ]
        );
        let rendered = text_of(&p, "base/app.yaml").unwrap();
        assert!(
            rendered.contains("kind: ConfigMap") && !rendered.contains("kind: App"),
            "{rendered}"
        );
        assert!(
            text_of(&p, "base/kustomization.yaml")
                .unwrap()
                .ends_with("\nresources:\n- app.yaml\n"),
            "{:?}",
            text_of(&p, "base/kustomization.yaml")
        );
        assert!(p
            .defined
            .contains(&("example.dev".to_string(), "App".to_string())));
    }

    /// A kustomization that names a path outside the root is refused before anything renders.
    #[test]
    fn a_reach_outside_the_root_is_refused_first() {
        let (d, all) = tree(&[("app/kustomization.yaml", "resources: [../../elsewhere]\n")]);
        let e = prepare(
            d.path(),
            Path::new(""),
            Path::new("app"),
            &[],
            all,
            &inplace::Options::default(),
            &kustomize_paths::Options::default(),
        )
        .unwrap_err();
        assert_eq!(e.0[0].code, codes::PATH_ESCAPE, "{e:?}");
    }

    #[test]
    fn unrendered_definitions_instances_and_component_kinds_are_named() {
        let text = format!("{RGD}---\n{}---\napiVersion: openchoreo.dev/v1alpha1\nkind: ComponentType\nmetadata:\n  name: t\n---\napiVersion: openchoreo.dev/v1alpha1\nkind: Environment\nmetadata:\n  name: e\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n", app("x"));
        let docs = parse_file("out", text, &Default::default()).unwrap();
        let defined = BTreeSet::from([("example.dev".to_string(), "App".to_string())]);
        let found = unrendered(&docs, &defined, false, "app");
        let msgs: Vec<&str> = found.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(found.len(), 3, "{msgs:?}");
        assert!(
            msgs[0].contains("the ResourceGraphDefinition ResourceGraphDefinition \"apps\""),
            "{msgs:?}"
        );
        assert!(msgs[1].contains("the instance App \"x\""), "{msgs:?}");
        assert!(msgs[2].contains("ComponentType \"t\""), "{msgs:?}");
        // Shipped to the kro controller, definitions and instances are the output.
        assert_eq!(unrendered(&docs, &defined, true, "app").len(), 1);
    }

    #[test]
    fn origins_are_paths_from_the_root() {
        let join = kustomize_paths::join_lexically;
        assert_eq!(
            join("apps/prod", "../base/x.yaml").as_deref(),
            Some("apps/base/x.yaml")
        );
        assert_eq!(join("", "x.yaml").as_deref(), Some("x.yaml"));
        assert_eq!(join("a", "../../x.yaml"), None);
        assert_eq!(join("/abs/a", "../x.yaml").as_deref(), Some("/abs/x.yaml"));
        let mut o = serde_json::json!({"metadata": {"name": "a", "annotations": {ORIGIN: "path: ../base/cm.yaml\n"}}});
        assert_eq!(take_origin(&mut o).as_deref(), Some("../base/cm.yaml"));
        assert_eq!(o, serde_json::json!({"metadata": {"name": "a"}}));
    }

    #[test]
    fn paths_below_the_run_directory() {
        assert_eq!(strip_dir("apps/prod/x.yaml", "apps"), "prod/x.yaml");
        assert_eq!(strip_dir("apps", "apps"), "");
        assert_eq!(strip_dir("x.yaml", ""), "x.yaml");
    }
}
