//! kustomize's order, checked: the transformer form must not render inputs kustomize has
//! already transformed.
//!
//! Within one kustomization, kustomize runs `generators:` first, then its built-in transformers
//! (`namespace`, `namePrefix`, `nameSuffix`, `labels`, `commonLabels`, `commonAnnotations`,
//! `patches`, `replicas`, `images`, `replacements`, …), then the `transformers:` list
//! (`configureBuiltinTransformers` before `configureExternalTransformers` in kustomize's
//! `api/internal/target/kusttarget.go`). kiln listed under `transformers:` would therefore
//! receive instances already renamed, relabelled and patched, and render objects that carry none
//! of it: a replicas patch aimed at the rendered Deployment finds nothing, labels are missing,
//! and the prefix of the instance's name leaks into selectors. The build would succeed with the
//! user's transformations missing, so it is refused instead.
//!
//! Two signs show it, and either refuses:
//! - an item kiln renders carries the records kustomize's rename transformers leave on what they
//!   touch (`internal.config.kubernetes.io/prefixes`, `…/suffixes`, `…/previousNames`,
//!   `…/previousKinds`), showing a name or kind changed: set by a `namePrefix` or `nameSuffix`
//!   of this kustomization or of a base below it;
//! - kiln renders anything as a transformer (the items carry kustomize's [`ID`]) and the
//!   kustomization that runs it (the working directory: kustomize runs exec plugins and
//!   functions in the kustomization's root) sets any built-in transformer field; labels,
//!   annotations, patches, replicas and images leave no record on the items.
//!
//! A `namespace` is the exception: it moves the instance, and what kiln renders from an
//! instance is in the instance's namespace. kustomize records the move with the same records
//! (`StorePreviousId` in kustomize's `api/resource/resource.go` stores the name, kind and
//! namespace before the change), so a record whose names and kinds are the item's own is not a
//! rename.
//!
//! A transformer's items come on stdin, without their files: [`origins`] finds them again, for
//! diagnostics.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use kiln_core::diag::{codes, Diagnostic};
use kiln_core::document::{parse_file, YamlLimits};
use kiln_core::kustomize_paths::is_remote;
use kiln_core::source::Root;
use serde_json::Value;

use crate::annotations;

/// The annotations kustomize's prefix, suffix and namespace transformers leave on what they
/// changed (kyaml's `utils.BuildAnnotation*` keys).
pub const RENAME_RECORDS: [&str; 5] = [
    "internal.config.kubernetes.io/prefixes",
    "internal.config.kubernetes.io/suffixes",
    "internal.config.kubernetes.io/previousNames",
    "internal.config.kubernetes.io/previousKinds",
    "internal.config.kubernetes.io/previousNamespaces",
];

/// The annotation kustomize puts on every item it hands a transformer (`utils.GetResMapWithIDAnnotation`).
pub const ID: &str = "kustomize.config.k8s.io/id";

/// The kustomization fields whose transformers run before `transformers:` and change what kiln
/// renders without carrying the change over to it (`namespace`, which runs before them too, is
/// carried over: see the module documentation).
pub const BUILTIN_TRANSFORMERS: [&str; 11] = [
    "namePrefix",
    "nameSuffix",
    "labels",
    "commonLabels",
    "commonAnnotations",
    "patches",
    "patchesStrategicMerge",
    "patchesJson6902",
    "replicas",
    "images",
    "replacements",
];

// The names kustomize looks for a kustomization under, in its order.
use kiln_core::kustomize_paths::KUSTOMIZATION_FILES;

const HINT: &str = "kustomize runs its own transformers before `transformers:`: keep kiln in a \
base kustomization and put namePrefix, namespace, labels, patches, replicas and images in an \
overlay listing that base under `resources:` (docs/krm.md, \"kustomize\")";

/// A diagnostic when an item kiln rendered was renamed by kustomize first (a namespace moved
/// alone is not a rename).
pub fn renamed(item: &Value, name: &str) -> Option<Diagnostic> {
    let field = |k: &str| {
        item.get("metadata")
            .and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let kind = item.get("kind").and_then(Value::as_str).unwrap_or("");
    let current = field("name");
    let record = |k: &str| annotations::get(item, &format!("internal.config.kubernetes.io/{k}"));
    // kustomize keeps each list comma-separated, oldest first.
    let other_than = |k: &str, now: &str| record(k).is_some_and(|r| r.split(',').any(|p| p != now));
    let renamed = ["prefixes", "suffixes"]
        .iter()
        .any(|k| record(k).is_some_and(|r| !r.is_empty()))
        || other_than("previousNames", &current)
        || other_than("previousKinds", kind);
    if !renamed {
        return None;
    }
    let found: Vec<&str> = RENAME_RECORDS
        .iter()
        .filter(|k| annotations::get(item, k).is_some())
        .map(|k| k.trim_start_matches("internal.config.kubernetes.io/"))
        .collect();
    Some(
        Diagnostic::error(
            codes::REQUEST_INVALID,
            format!(
                "{kind} {:?} reached kiln already renamed by kustomize (its namePrefix or \
                 nameSuffix; recorded as {}): what kiln renders from it would not be renamed",
                field("name"),
                found.join(", ")
            ),
        )
        .in_file(name)
        .with_hint(HINT),
    )
}

/// The built-in transformer fields the kustomization in `root` sets, with its file name; `None`
/// when there is no kustomization there. A kustomization that cannot be read or parsed is left
/// to kustomize, which read it already.
pub fn builtin_transformers(root: &Path, limits: &YamlLimits) -> Option<(String, Vec<String>)> {
    let (file, kustomization) = kustomization_in(root, limits)?;
    let map = kustomization.as_object()?;
    let set: Vec<String> = BUILTIN_TRANSFORMERS
        .iter()
        .filter(|k| match map.get(**k) {
            None | Some(Value::Null) => false,
            Some(Value::String(s)) => !s.is_empty(),
            Some(Value::Array(a)) => !a.is_empty(),
            Some(Value::Object(o)) => !o.is_empty(),
            Some(_) => true,
        })
        .map(|k| k.to_string())
        .collect();
    Some((file, set))
}

/// The kustomization in `dir` (a regular file of one of kustomize's names), with its file name.
/// One that cannot be read or parsed is left to kustomize, which read it already.
fn kustomization_in(dir: &Path, limits: &YamlLimits) -> Option<(String, Value)> {
    let (file, text) = KUSTOMIZATION_FILES.iter().find_map(|f| {
        let p = dir.join(f);
        // A regular file only: opening a fifo would wait for a writer.
        if !std::fs::metadata(&p).ok()?.is_file() {
            return None;
        }
        let opened = std::fs::File::open(&p).ok()?;
        let text = crate::read_input(opened, f, limits.max_input_bytes).ok()?;
        Some((f.to_string(), text))
    })?;
    let docs = parse_file(&file, text, limits).ok()?;
    let value = docs.into_iter().next()?.value;
    Some((file, value))
}

/// kustomize's record of an item's file (`buildMetadata: [originAnnotations]`): a small YAML
/// mapping whose `path` is relative to the kustomization being built.
pub const ORIGIN: &str = "config.kubernetes.io/origin";

/// Most kustomization directories [`origins`] follows below the root.
const MAX_KUSTOMIZATIONS: usize = 100;

/// The file (a slash path) and document index each of a transformer's items came from, for
/// diagnostics: kustomize's [`ORIGIN`] annotation, else the document with the item's original
/// apiVersion, kind, name and namespace (before kustomize's namespace transformer moved it) in a
/// file the kustomization in `root` lists under `resources:`, directly or through the
/// kustomizations of directories it lists. Only what is inside `root` is read; `None` where
/// neither says.
pub fn origins(items: &[&Value], root: &Path, limits: &YamlLimits) -> Vec<Option<(String, usize)>> {
    let annotated: Vec<Option<String>> = items
        .iter()
        .map(|v| {
            let text = annotations::get(v, ORIGIN)?;
            let path = text.lines().find_map(|l| l.trim().strip_prefix("path:"))?;
            Some(
                path.trim()
                    .trim_matches(|c| c == '"' || c == '\'')
                    .to_string(),
            )
        })
        .collect();
    let mut found = HashMap::new();
    if annotated.iter().any(Option::is_none) {
        if let Ok(r) = Root::new(root) {
            let mut seen = HashSet::new();
            index_resources(&r, Path::new(""), limits, &mut seen, &mut found);
        }
    }
    let mut shared: HashMap<&str, usize> = HashMap::new();
    for p in annotated.iter().flatten() {
        *shared.entry(p.as_str()).or_default() += 1;
    }
    items
        .iter()
        .zip(&annotated)
        .map(|(v, origin)| match origin {
            // Several items of one file: which is which, by kind and name.
            Some(p) if shared[p.as_str()] > 1 => Some((format!("{p} ({})", identity(v)), 0)),
            Some(p) => Some((p.clone(), 0)),
            None => found.get(&original_id(v)).cloned(),
        })
        .collect()
}

/// `Kind name`, for telling apart the items of one file.
fn identity(v: &Value) -> String {
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    let name = v
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    format!("{kind} {name}")
}

/// apiVersion, kind, name and namespace (`default` for none, as kustomize records it).
type Id = (String, String, String, String);

fn id_of(v: &Value) -> Id {
    let s = |x: Option<&Value>| x.and_then(Value::as_str).unwrap_or("").to_string();
    let meta = v.get("metadata");
    let ns = s(meta.and_then(|m| m.get("namespace")));
    (
        s(v.get("apiVersion")),
        s(v.get("kind")),
        s(meta.and_then(|m| m.get("name"))),
        if ns.is_empty() { "default".into() } else { ns },
    )
}

/// An item's identity before kustomize changed it: the oldest of its records, where it has them.
fn original_id(v: &Value) -> Id {
    let (api_version, kind, name, namespace) = id_of(v);
    let first = |k: &str, now: String| {
        annotations::get(v, &format!("internal.config.kubernetes.io/{k}"))
            .and_then(|r| r.split(',').next())
            .filter(|r| !r.is_empty())
            .map_or(now, String::from)
    };
    (
        api_version,
        first("previousKinds", kind),
        first("previousNames", name),
        first("previousNamespaces", namespace),
    )
}

/// Index the documents of the files the kustomization in `dir` (relative to the root) lists
/// under `resources:`, following the directories it lists into their kustomizations.
fn index_resources(
    root: &Root,
    dir: &Path,
    limits: &YamlLimits,
    seen: &mut HashSet<PathBuf>,
    found: &mut HashMap<Id, (String, usize)>,
) {
    if seen.len() >= MAX_KUSTOMIZATIONS || !seen.insert(dir.to_path_buf()) {
        return;
    }
    // Through the root: a kustomization file that is a link out of it is not read.
    let Some(kustomization) = KUSTOMIZATION_FILES.iter().find_map(|f| {
        let rel = dir.join(f);
        let text = root.read_to_string(&rel, limits.max_input_bytes).ok()?;
        let docs = parse_file(&rel.to_string_lossy(), text, limits).ok()?;
        docs.into_iter().next().map(|d| d.value)
    }) else {
        return;
    };
    let entries = ["resources", "bases"]
        .iter()
        .filter_map(|k| kustomization.get(*k)?.as_array())
        .flatten()
        .filter_map(Value::as_str)
        .filter(|e| !is_remote(e));
    for entry in entries {
        let Ok(Some((rel, real))) = root.resolve_from(dir, Path::new(entry), entry) else {
            continue;
        };
        if real.is_dir() {
            index_resources(root, &rel, limits, seen, found);
            continue;
        }
        let name = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        let Ok(text) = root.read_to_string(&rel, limits.max_input_bytes) else {
            continue;
        };
        let Ok(docs) = parse_file(&name, text, limits) else {
            continue;
        };
        for (i, d) in docs.iter().enumerate() {
            found
                .entry(id_of(&d.value))
                .or_insert_with(|| (name.clone(), i));
        }
    }
}

/// The diagnostic for a kustomization that sets built-in transformers beside kiln as a
/// transformer.
pub fn transformed_before(file: &str, fields: &[String]) -> Diagnostic {
    Diagnostic::error(
        codes::REQUEST_INVALID,
        format!(
            "kiln runs as a transformer of this kustomization, after its {}: kustomize applied \
             them to the inputs kiln renders, not to the rendered objects",
            fields.join(", ")
        ),
    )
    .in_file(file)
    .at(fields.first().map(String::as_str).unwrap_or(""))
    .with_hint(HINT)
}
