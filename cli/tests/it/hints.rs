//! "Did you mean" hints, from one helper (`kiln_core::suggest`), reach the user: a misspelt
//! resource id in a kro expression names the id meant.

use crate::common;

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

/// Issue 38.6: hints that name the fix. A component deployed to two environments, rendered
/// without `--env`: the duplicate objects are the two environments' releases, and the hint used
/// to say "rename one". It now names `--env`. Under `--strict`, a run that fails on warnings
/// alone says that strict mode made them fatal. kiln's own function configuration read as an
/// input is named as such, with where it belongs.
#[test]
fn hints_name_the_fix_for_environments_strict_and_kilns_own_configuration() {
    let tmp = tempfile::tempdir().unwrap();
    let case =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/component/seed-web-app");
    for f in [
        "01-web-app.yaml",
        "02-addons.yaml",
        "03-component.yaml",
        "04-deployments.yaml",
    ] {
        std::fs::copy(case.join(f), tmp.path().join(f)).unwrap();
    }
    let out = kiln(tmp.path(), &["render", ".", "--diagnostics", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&out.stderr).unwrap();
    let dups: Vec<&serde_json::Value> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "KLN1012")
        .collect();
    assert!(!dups.is_empty(), "{}", text(&out.stderr));
    for d in dups {
        let hint = d["hint"].as_str().unwrap();
        assert!(
            hint.contains("--env") && !hint.contains("rename one"),
            "{hint}"
        );
    }
    let out = kiln(tmp.path(), &["render", ".", "--env", "production"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    let strict = tempfile::tempdir().unwrap();
    write(
        strict.path(),
        "dup.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: web\ndata:\n  k: one\n  k: two\n",
    );
    let out = kiln(strict.path(), &["render", "dup.yaml", "--strict"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("--strict made the 1 warning(s) above fatal"),
        "{err}"
    );
    assert!(out.stdout.is_empty());

    let own = tempfile::tempdir().unwrap();
    write(
        own.path(),
        "render.yaml",
        "apiVersion: fn.kiln.dev/v1alpha1\nkind: Render\nmetadata:\n  name: kiln\nspec:\n  paths: [apps]\n",
    );
    let out = kiln(own.path(), &["render", "render.yaml"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("kiln's own function configuration"), "{err}");
    assert!(!err.contains("--pass-through fn.kiln.dev"), "{err}");
}

/// Issue 38 (tried as a new user would): `kiln render` of an overlay directory, which holds only
/// a kustomization and its patch, has nothing of its own to render. The hint used to say only
/// "name the files to render"; it now says what the directory holds and which door builds it.
#[test]
fn an_overlay_alone_names_the_doors_that_build_it() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "prod/kustomization.yaml",
        "resources: [../base]\npatches:\n- path: replicas.yaml\n",
    );
    write(
        tmp.path(),
        "prod/replicas.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 3\n",
    );
    let out = kiln(tmp.path(), &["render", "prod", "--diagnostics", "json"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("nothing to render"), "{err}");
    assert!(
        err.contains("prod/kustomization.yaml") && err.contains("kiln-flux build --kustomization"),
        "{err}"
    );
}
