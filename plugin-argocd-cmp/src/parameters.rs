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
use std::path::Path;

use kiln_core::document::YamlLimits;
use kiln_core::source::{load_inputs_in, Access, Input};
use serde_json::{json, Value};

use crate::generate::Place;

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
    let Ok(access) = Access::within(&place.root) else {
        return f;
    };
    let loaded = load_inputs_in(
        &[Input::Path(place.app.clone())],
        &access,
        &YamlLimits::default(),
        true,
    );
    let mut envs = BTreeSet::new();
    for d in &loaded.documents {
        let openchoreo = d
            .api_version()
            .is_some_and(|a| a.starts_with("openchoreo.dev/"));
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

/// The announcement.
pub fn announcement(found: &Found) -> Value {
    let envs = if found.environments.is_empty() {
        "Environment component releases are rendered for (no ComponentDeployment found in this directory).".to_string()
    } else {
        format!(
            "Environment component releases are rendered for: {}.",
            found.environments.join(", ")
        )
    };
    let values = if found.values_files.is_empty() {
        "kurel values files, relative to the application directory, in order.".to_string()
    } else {
        format!(
            "kurel values files, relative to the application directory, in order. Found: {}.",
            found.values_files.join(", ")
        )
    };
    let set = if found.packages.is_empty() {
        "kurel parameter overrides, path: value (the directory holds no kurel package).".to_string()
    } else {
        format!(
            "kurel parameter overrides for {}, path: value, after the values files.",
            found.packages.join(", ")
        )
    };
    json!([
        {"name": "environment", "title": "Environment", "tooltip": envs,
         "itemType": "string", "collectionType": "string"},
        {"name": "values", "title": "Values files", "tooltip": values,
         "itemType": "string", "collectionType": "array", "array": []},
        {"name": "set", "title": "Set", "tooltip": set,
         "itemType": "string", "collectionType": "map", "map": {}},
        {"name": "strict", "title": "Strict", "tooltip": "true: warnings fail the render.",
         "itemType": "boolean", "collectionType": "string", "string": "false"},
        {"name": "allowEmpty", "title": "Allow empty",
         "tooltip": "true: an application that renders no objects is accepted (with auto-prune, that deletes its resources).",
         "itemType": "boolean", "collectionType": "string", "string": "false"},
        {"name": "passThrough", "title": "Pass-through groups",
         "tooltip": "API groups whose custom resources pass through unrendered (* for all); the cluster's own groups (KUBE_API_VERSIONS) always do.",
         "itemType": "string", "collectionType": "array", "array": []},
        {"name": "mode", "title": "kro mode",
         "tooltip": "direct: render every object here. kro: check everything the same way, then ship the ResourceGraphDefinitions and defaulted instances to the kro controller.",
         "itemType": "string", "collectionType": "string", "string": "direct"},
        {"name": "emitCRDs", "title": "Emit instance CRDs",
         "tooltip": "kro mode, true: also emit each RGD's generated instance CRD, first.",
         "itemType": "boolean", "collectionType": "string", "string": "false"},
        {"name": "syncWaves", "title": "Sync waves",
         "tooltip": "kro mode, true: sync waves on CRDs (-2) and RGDs (-1), and SkipDryRunOnMissingResource on instances whose CRD kro creates.",
         "itemType": "boolean", "collectionType": "string", "string": "false"},
        {"name": "observed", "title": "Observed state",
         "tooltip": "Files or directories of live objects (kubectl get -o yaml output), relative to the application directory: externalRefs and status reads resolve against them.",
         "itemType": "string", "collectionType": "array", "array": []},
        {"name": "noProvenance", "title": "No provenance",
         "tooltip": "true: leave out the kiln.dev/definition, kiln.dev/instance and kiln.dev/node annotations.",
         "itemType": "boolean", "collectionType": "string", "string": "false"}
    ])
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
        let known: Vec<&str> = crate::options::PARAMETERS.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, known);
        // The defaults announced are the defaults applied.
        let d = crate::options::Options::default();
        assert_eq!(a[3]["string"], json!(d.strict.to_string()));
        assert_eq!(a[4]["string"], json!(d.allow_empty.to_string()));
        for p in a.as_array().unwrap() {
            let shape = crate::options::PARAMETERS
                .iter()
                .find(|(n, _)| *n == p["name"])
                .unwrap()
                .1;
            assert_eq!(p["collectionType"], shape);
        }
    }
}
