//! Every command reads what `render` reads (issue 28): `graph`, `schema`, `validate` and
//! `status` accept the mixed tree `render` accepts (kro, components, kurel packages, plain
//! manifests, a kustomization), each acts on the kinds it knows and says which it skipped.

use std::path::{Path, PathBuf};

mod common;
use common::{kiln, text};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

const TREE: &str = "testdata/render/mixed-tree/tree";

#[test]
fn graph_shows_the_rgds_of_a_mixed_tree_and_names_what_it_skipped() {
    let o = kiln(&root(), &["graph", TREE]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        text(&o.stdout).starts_with("webapps.example.com"),
        "{}",
        text(&o.stdout)
    );
    assert!(
        err.contains("skipped 7 component document(s)")
            && err.contains("cache.kurel")
            && err.contains("web.kurel"),
        "{err}"
    );
    // Nothing to graph is an error that says what the inputs hold, not an empty graph.
    let o = kiln(&root(), &["graph", "testdata/kurel/monitoring"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    assert!(
        text(&o.stderr).contains("kurel package(s)"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn schema_prints_every_definition_and_package_of_a_tree() {
    let o = kiln(&root(), &["schema", TREE, "--output-format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let all: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let titles: Vec<String> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            d["title"]
                .as_str()
                .or(d["kind"].as_str())
                .unwrap_or("")
                .to_string()
        })
        .collect();
    assert_eq!(
        titles,
        [
            "CustomResourceDefinition",
            "ComponentTypeDefinition/web-app",
            "Addon/persistent-volume-claim",
            "Addon/add-file-logging-sidecar",
            "cache 1.0.0 parameters",
            "app 1.0.0 parameters",
        ],
        "{all}"
    );
}

#[test]
fn validate_and_status_read_the_mixed_tree() {
    let o = kiln(&root(), &["validate", TREE, "--env", "production"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = kiln(
        &root(),
        &[
            "status",
            TREE,
            "--observed",
            "testdata/strategies/status/observed",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("kind: WebApp"),
        "{}",
        text(&o.stdout)
    );
}

/// `kiln validate DIR` without `--env` checks every environment, each on its own: one
/// component's releases for two environments are not duplicates of each other (they were
/// reported as KLN1012). `render` without `--env` still refuses to put both into one stream, and
/// a real duplicate is still an error in `validate`.
#[test]
fn validate_checks_each_environment_on_its_own() {
    let o = kiln(&root(), &["validate", TREE]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = kiln(&root(), &["render", TREE, "--diagnostics", "json"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("KLN1012"), "{}", text(&o.stderr));
    let tmp = tempfile::tempdir().unwrap();
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: same, namespace: web}\n";
    common::write(tmp.path(), "a.yaml", cm);
    common::write(tmp.path(), "b.yaml", cm);
    let o = kiln(tmp.path(), &["validate", ".", "--diagnostics", "json"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stderr).contains("KLN1012"), "{}", text(&o.stderr));
}
