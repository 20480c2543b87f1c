//! "Did you mean" hints, from one helper (`kiln_core::suggest`), reach the user: a misspelt
//! resource id in a kro expression names the id meant.

mod common;

use common::{kiln, text, write};

#[test]
fn a_misspelt_resource_id_names_the_id_meant() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "rgd.yaml",
        "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {name: web}\nspec:\n  schema:\n    apiVersion: v1alpha1\n    kind: Web\n    spec: {name: string}\n  resources:\n    - id: deployment\n      template:\n        apiVersion: v1\n        kind: ConfigMap\n        metadata: {name: \"${schema.spec.name}\"}\n    - id: svc\n      template:\n        apiVersion: v1\n        kind: ConfigMap\n        metadata: {name: \"${deploymnet.metadata.name}-x\"}\n",
    );
    let out = kiln(
        tmp.path(),
        &["validate", "rgd.yaml", "--diagnostics", "json"],
    );
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
    let hints: Vec<&str> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["hint"].as_str())
        .collect();
    assert!(
        hints
            .iter()
            .any(|h| h.contains("did you mean \"deployment\"?")),
        "{}",
        text(&out.stderr)
    );
}
