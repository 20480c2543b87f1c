//! `kiln-cmp parameters`: the announcement Argo CD shows in the Application's UI, a JSON array of
//! `{name, title, tooltip, itemType, collectionType, string | array | map}`.
//!
//! The defaults announced are the ones [`crate::options`] applies (Argo CD never sends a default
//! back). What the application directory holds makes the tooltips specific: the environments its
//! components are deployed to, its values files, its kurel package. It is best effort: a
//! directory that does not load still gets the announcement (the errors are generate's to
//! report), and only the variables Argo CD gives this command are used (no namespace, no
//! revision).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use kiln_core::document::YamlLimits;
use kiln_core::source::{load_inputs_in, Access, Input, Root};
use serde_json::{json, Value};

use crate::generate::Place;
use crate::options::{Kind, Opt, OPTIONS};

/// What the application directory shows about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    /// Environments its components name (ComponentDeployment, ReleaseBinding, snapshots).
    pub environments: Vec<String>,
    /// Values files in it (`values*.yaml`, or under a `values/` directory), relative to it.
    pub values_files: Vec<String>,
    /// Names of the kurel packages in it.
    pub packages: Vec<String>,
}

/// Look at the application directory.
pub fn find(place: &Place) -> Found {
    let mut f = Found::default();
    // Named relative to the repository (the display name of its root is empty): the checkout
    // is a temporary directory, and Argo CD caches and shows the tooltips.
    let Ok(root) = Root::named(&place.root, PathBuf::new()) else {
        return f;
    };
    let access = Access::Within(root);
    let loaded = load_inputs_in(
        &[Input::Path(place.app.clone())],
        &access,
        &YamlLimits::default(),
        true,
    );
    let mut envs = BTreeSet::new();
    for d in &loaded.documents {
        let openchoreo = kiln_core::component::is_component_document(d);
        if openchoreo
            && matches!(
                d.kind(),
                Some("ComponentDeployment" | "ReleaseBinding" | "ComponentEnvSnapshot")
            )
        {
            if let Some(e) = d.value.pointer("/spec/environment").and_then(Value::as_str) {
                envs.insert(e.to_string());
            }
        }
    }
    f.environments = envs.into_iter().collect();
    f.packages = loaded.packages.iter().map(|p| p.name.clone()).collect();
    let app = place.root.join(&place.app);
    let mut values = Vec::new();
    collect_values(&app, Path::new(""), false, 0, &mut values);
    values.sort();
    f.values_files = values;
    f
}

fn collect_values(dir: &Path, rel: &Path, in_values: bool, depth: usize, out: &mut Vec<String>) {
    // A GitOps tree is shallow; a bound keeps a pathological one cheap.
    if depth > 6 || out.len() > 200 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with('.') {
            continue;
        }
        let Ok(t) = e.file_type() else { continue };
        let r = rel.join(&name);
        if t.is_dir() {
            collect_values(&e.path(), &r, in_values || name == "values", depth + 1, out);
        } else if t.is_file()
            && (name.ends_with(".yaml") || name.ends_with(".yml"))
            && (in_values || name.starts_with("values"))
        {
            out.push(r.to_string_lossy().replace('\\', "/"));
        }
    }
}

/// One announced parameter of `opt`, with `tooltip`: `{name, title, tooltip, itemType,
/// collectionType}` and the default kiln applies (Argo CD never sends it back), if it has one.
pub fn entry(opt: &Opt, tooltip: &str) -> Value {
    let mut e = json!({"name": opt.param, "title": opt.title, "tooltip": tooltip,
        "itemType": opt.kind.item_type(), "collectionType": opt.kind.collection()});
    match (opt.kind, opt.kind.default_text()) {
        (Kind::List, _) => e["array"] = json!([]),
        (Kind::Map, _) => e["map"] = json!({}),
        (_, Some(d)) => e["string"] = json!(d),
        (_, None) => {}
    }
    e
}

/// The tooltip of `opt` for a directory showing `found`.
fn tooltip(opt: &Opt, found: &Found) -> String {
    match opt.param {
        "environment" if found.environments.is_empty() => "Environment component releases are rendered for (no ComponentDeployment found in this directory).".to_string(),
        "environment" => format!(
            "Environment component releases are rendered for: {}.",
            found.environments.join(", ")
        ),
        "values" if !found.values_files.is_empty() => format!(
            "{} Found: {}.",
            opt.tooltip,
            found.values_files.join(", ")
        ),
        "set" if found.packages.is_empty() => {
            "kurel parameter overrides, path: value (the directory holds no kurel package).".to_string()
        }
        "set" => format!(
            "kurel parameter overrides for {}, path: value, after the values files.",
            found.packages.join(", ")
        ),
        _ => opt.tooltip.to_string(),
    }
}

/// The announcement: every option of [`OPTIONS`], in order, its tooltip made specific to the
/// directory.
pub fn announcement(found: &Found) -> Value {
    Value::Array(
        OPTIONS
            .iter()
            .map(|o| entry(o, &tooltip(o, found)))
            .collect(),
    )
}

/// The static announcement of `plugin.yaml`: every option with its general tooltip.
pub fn static_announcement() -> Value {
    Value::Array(OPTIONS.iter().map(|o| entry(o, o.tooltip)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn announces_every_option_with_the_applied_defaults() {
        let a = announcement(&Found::default());
        let names: Vec<&str> = a
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        let known: Vec<&str> = OPTIONS.iter().map(|o| o.param).collect();
        assert_eq!(names, known);
        // The defaults announced are the defaults applied.
        let d = crate::options::Options::default();
        assert_eq!(a[3]["string"], json!(d.strict.to_string()));
        assert_eq!(a[4]["string"], json!(d.allow_empty.to_string()));
        assert_eq!(a[6]["string"], json!("direct"));
        assert!(!d.kro_mode);
    }
}
