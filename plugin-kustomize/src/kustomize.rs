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
//!   `…/previousKinds`, `…/previousNamespaces`): set by a `namePrefix`, `nameSuffix` or
//!   `namespace` of this kustomization or of a base below it;
//! - kiln renders anything as a transformer (the items carry kustomize's [`ID`]) and the
//!   kustomization that runs it (the working directory: kustomize runs exec plugins and
//!   functions in the kustomization's root) sets any built-in transformer field; labels,
//!   annotations, patches, replicas and images leave no record on the items.

use std::path::Path;

use kiln_core::diag::{codes, Diagnostic};
use kiln_core::document::{parse_file, YamlLimits};
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

/// The kustomization fields whose transformers run before `transformers:`.
pub const BUILTIN_TRANSFORMERS: [&str; 12] = [
    "namespace",
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

/// A diagnostic when an item kiln rendered was renamed by kustomize first.
pub fn renamed(item: &Value, name: &str) -> Option<Diagnostic> {
    let found: Vec<&str> = RENAME_RECORDS
        .iter()
        .filter(|k| annotations::get(item, k).is_some())
        .map(|k| k.trim_start_matches("internal.config.kubernetes.io/"))
        .collect();
    if found.is_empty() {
        return None;
    }
    let field = |k: &str| {
        item.get("metadata")
            .and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let kind = item.get("kind").and_then(Value::as_str).unwrap_or("");
    Some(
        Diagnostic::error(
            codes::REQUEST_INVALID,
            format!(
                "{kind} {:?} reached kiln already renamed by kustomize (its namePrefix, nameSuffix \
                 or namespace; recorded as {}): what kiln renders from it would not be renamed",
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
    let (file, text) = KUSTOMIZATION_FILES.iter().find_map(|f| {
        let p = root.join(f);
        // A regular file only: opening a fifo would wait for a writer.
        if !std::fs::metadata(&p).ok()?.is_file() {
            return None;
        }
        let opened = std::fs::File::open(&p).ok()?;
        let text = crate::read_input(opened, f, limits.max_input_bytes).ok()?;
        Some((f.to_string(), text))
    })?;
    let docs = parse_file(&file, text, limits).ok()?;
    let map = docs.first()?.value.as_object()?;
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
