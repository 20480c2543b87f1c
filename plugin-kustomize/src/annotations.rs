//! The orchestrators' bookkeeping annotations: which they are, reading the file an item came
//! from, and placing new items in files.
//!
//! kpt writes each item back to the file its path annotation names, at the position its index
//! annotation gives; kustomize and kpt match outputs to inputs by their id annotations. kiln
//! never changes these on items it passes through (it hands those back exactly as received), and
//! strips them from the copies it renders from, so a template that copies an instance's
//! annotations cannot copy the instance's file position onto its children.

use kiln_core::lookup;
use serde_json::{Map, Value};

/// Where kpt and kyaml readers record an item's file (slash path relative to the package).
pub const PATH: &str = "internal.config.kubernetes.io/path";
/// The legacy copy of [`PATH`]; kpt fails when the two differ.
pub const LEGACY_PATH: &str = "config.kubernetes.io/path";
/// The item's position among the documents of its file.
pub const INDEX: &str = "internal.config.kubernetes.io/index";
/// The legacy copy of [`INDEX`].
pub const LEGACY_INDEX: &str = "config.kubernetes.io/index";
/// kiln's mark on objects it rendered into a package that kpt writes back: the source they came
/// from, so that the next run replaces them instead of adding them again.
pub const RENDERED_FROM: &str = "kiln.dev/rendered-from";

/// Whether an annotation belongs to kustomize's or kpt's bookkeeping.
pub fn is_bookkeeping(key: &str) -> bool {
    key.starts_with("config.kubernetes.io/")
        || key.starts_with("internal.config.kubernetes.io/")
        || key.starts_with("kustomize.config.k8s.io/")
        || key == "config.k8s.io/id"
}

// Asked several times of every item (thousands in a pass-through): small maps are scanned
// rather than hashed (`kiln_core::lookup`).
fn annotations(item: &Value) -> Option<&Map<String, Value>> {
    let metadata = lookup::field(item, "metadata")?;
    lookup::field(metadata, "annotations")?.as_object()
}

/// One annotation's value, if it is a string.
pub fn get<'a>(item: &'a Value, key: &str) -> Option<&'a str> {
    lookup::get(annotations(item)?, key)?.as_str()
}

/// The file an item came from (the internal annotation, else the legacy one).
pub fn source_path(item: &Value) -> Option<&str> {
    get(item, PATH)
        .or_else(|| get(item, LEGACY_PATH))
        .filter(|p| !p.is_empty())
}

/// The item's index in its file (0 when not recorded).
pub fn source_index(item: &Value) -> usize {
    get(item, INDEX)
        .or_else(|| get(item, LEGACY_INDEX))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// A copy of the item without bookkeeping annotations (and without an annotations map left
/// empty by that), for rendering.
pub fn without_bookkeeping(item: &Value) -> Value {
    let mut v = item.clone();
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        if let Some(Value::Object(a)) = meta.get_mut("annotations") {
            a.retain(|k, _| !is_bookkeeping(k));
            if a.is_empty() {
                meta.remove("annotations");
            }
        }
    }
    v
}

/// Set an object's file and index, internal and legacy alike (kpt refuses a pair that differs),
/// and, under `kpt fn render`, the package the path is relative to
/// ([`crate::packages::PACKAGE_PATH`]). An object whose metadata is not a mapping is left alone
/// (it is passed on as rendered).
pub fn place(
    obj: &mut Value,
    package: Option<&str>,
    path: &str,
    index: usize,
    rendered_from: Option<&str>,
) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    let ann = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(ann) = ann.as_object_mut() else {
        return;
    };
    let index = index.to_string();
    ann.insert(PATH.into(), Value::String(path.into()));
    ann.insert(LEGACY_PATH.into(), Value::String(path.into()));
    ann.insert(INDEX.into(), Value::String(index.clone()));
    ann.insert(LEGACY_INDEX.into(), Value::String(index));
    if let Some(p) = package {
        ann.insert(
            crate::packages::PACKAGE_PATH.into(),
            Value::String(p.into()),
        );
    }
    if let Some(src) = rendered_from {
        ann.insert(RENDERED_FROM.into(), Value::String(src.into()));
    }
}

/// The file a rendered object goes to: `<kind>_<name>.yaml`, lowercased as kpt names new
/// resources, in the directory of the source it was rendered from. Characters that are not safe
/// in a file name become `_`, so a hostile name cannot leave the directory.
pub fn file_for(obj: &Value, source_dir: &str) -> String {
    let part = |s: Option<&str>| -> String {
        let s = s.unwrap_or("").to_lowercase();
        let cleaned: String = s
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        // The parts are joined with `_` and a suffix, so `..` here can never be a whole name.
        if cleaned.is_empty() {
            "_".to_string()
        } else {
            cleaned
        }
    };
    let kind = part(obj.get("kind").and_then(Value::as_str));
    let name = part(
        obj.get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str),
    );
    let file = format!("{kind}_{name}.yaml");
    if source_dir.is_empty() {
        file
    } else {
        format!("{source_dir}/{file}")
    }
}

/// The directory part of a slash path (`""` for a file at the top).
pub fn dir_of(path: &str) -> &str {
    path.rsplit_once('/').map(|(d, _)| d).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kpt_item() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1", "annotations": {
            "foo": "bar",
            "config.kubernetes.io/index": "1", "config.kubernetes.io/path": "sub/cm.yaml",
            "internal.config.kubernetes.io/index": "1", "internal.config.kubernetes.io/path": "sub/cm.yaml",
            "internal.config.kubernetes.io/seqindent": "compact",
            "internal.config.kubernetes.io/annotations-migration-resource-id": "0",
            "internal.config.kubernetes.io/id": "1", "config.k8s.io/id": "1",
            "kustomize.config.k8s.io/id": "x", "config.kubernetes.io/local-config": "true"}}})
    }

    #[test]
    fn reads_path_and_index() {
        let i = kpt_item();
        assert_eq!(source_path(&i), Some("sub/cm.yaml"));
        assert_eq!(source_index(&i), 1);
        let legacy_only = json!({"metadata": {"annotations": {"config.kubernetes.io/path": "a.yaml", "config.kubernetes.io/index": "2"}}});
        assert_eq!(source_path(&legacy_only), Some("a.yaml"));
        assert_eq!(source_index(&legacy_only), 2);
        assert_eq!(source_path(&json!({"metadata": {}})), None);
        assert_eq!(source_index(&json!({})), 0);
    }

    #[test]
    fn strips_only_bookkeeping() {
        let s = without_bookkeeping(&kpt_item());
        assert_eq!(s["metadata"]["annotations"], json!({"foo": "bar"}));
        let bare = json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "a", "annotations": {"config.k8s.io/id": "1"}}});
        assert_eq!(without_bookkeeping(&bare)["metadata"], json!({"name": "a"}));
        assert!(!is_bookkeeping("kiln.dev/rendered-from"));
        assert!(!is_bookkeeping("kubernetes.io/description"));
    }

    #[test]
    fn places_internal_and_legacy_alike() {
        let mut o =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}});
        place(
            &mut o,
            None,
            "apps/deployment_web.yaml",
            2,
            Some("apps/app.yaml"),
        );
        let a = &o["metadata"]["annotations"];
        assert!(a.get(crate::packages::PACKAGE_PATH).is_none());
        assert_eq!(a[PATH], a[LEGACY_PATH]);
        assert_eq!(a[INDEX], "2");
        assert_eq!(a[LEGACY_INDEX], "2");
        assert_eq!(a[RENDERED_FROM], "apps/app.yaml");
        place(&mut o, Some("/r/pkg/web"), "deployment_web.yaml", 0, None);
        assert_eq!(
            o["metadata"]["annotations"][crate::packages::PACKAGE_PATH],
            "/r/pkg/web"
        );
    }

    #[test]
    fn file_names_stay_in_their_directory() {
        let o = json!({"kind": "ConfigMap", "metadata": {"name": "../../etc/Passwd"}});
        assert_eq!(file_for(&o, "apps"), "apps/configmap_.._.._etc_passwd.yaml");
        let o = json!({"kind": "Deployment", "metadata": {"name": "Web"}});
        assert_eq!(file_for(&o, ""), "deployment_web.yaml");
        assert_eq!(file_for(&json!({}), ""), "___.yaml");
        assert_eq!(dir_of("a/b/c.yaml"), "a/b");
        assert_eq!(dir_of("c.yaml"), "");
    }
}
