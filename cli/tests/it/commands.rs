//! Every command reads what `render` reads (issue 28): `graph`, `schema`, `validate`, `status`,
//! `info` and `snapshot create` accept the mixed tree `render` accepts (kro, components, kurel
//! packages, plain manifests, a kustomization), each acts on the kinds it knows and says which it
//! skipped.

use std::path::{Path, PathBuf};

use crate::common;
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

/// `kiln info` describes every kurel package of the tree, each exactly as `kiln info PKG`
/// describes it alone, and names what it skipped; a tree without a package (a strategies tree) is
/// an error that says what the inputs hold.
#[test]
fn info_describes_the_packages_of_a_mixed_tree_and_names_what_it_skipped() {
    let o = kiln(&root(), &["info", TREE]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(
        err.trim_end(),
        "note: kiln info describes kurel packages; skipped 1 ResourceGraphDefinition(s) and 2 \
         instance(s), 7 component document(s), 2 plain manifest(s)"
    );
    let out = text(&o.stdout);
    let docs: Vec<&str> = out.split("---\n").collect();
    assert_eq!(docs.len(), 2, "one document per package:\n{out}");
    for (doc, pkg) in docs.iter().zip(["cache.kurel", "web.kurel"]) {
        let alone = kiln(&root(), &["info", &format!("{TREE}/packages/{pkg}")]);
        assert_eq!(alone.status.code(), Some(0), "{}", text(&alone.stderr));
        assert_eq!(*doc, text(&alone.stdout), "{pkg} in the tree and alone");
    }
    assert!(docs[1].contains("localExtension: "), "{}", docs[1]);
    // With JSON diagnostics stderr is one JSON document (every package's, no note).
    let o = kiln(&root(), &["info", TREE, "--diagnostics", "json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: serde_json::Value =
        serde_json::from_slice(&o.stderr).unwrap_or_else(|_| panic!("{}", text(&o.stderr)));
    assert_eq!(v, serde_json::json!({"diagnostics": []}));

    let kro = "testdata/strategies/nested-two-level";
    let o = kiln(
        &root(),
        &[
            "info",
            &format!("{kro}/rgds.yaml"),
            &format!("{kro}/shop.yaml"),
        ],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(o.stdout.is_empty());
    assert!(
        err.contains("KLN7001")
            && err.contains("no kurel package found")
            && err.contains("ResourceGraphDefinition(s) and 1 instance(s)"),
        "{err}"
    );
}

/// `kiln snapshot create` reads the mixed tree through the request walk, as `render` does (kurel
/// packages are units, not files read as manifests; kustomizations are left out): the snapshot
/// is the one of the component folder alone, and what it skipped is named; in a tree without
/// components it names the kro inputs it saw.
#[test]
fn snapshot_create_reads_the_mixed_tree_and_names_what_it_skipped() {
    let args = |path: &str| {
        [
            "snapshot",
            "create",
            "--component",
            "checkout-service",
            "--env",
            "production",
            path,
        ]
        .map(str::to_string)
    };
    let o = kiln(&root(), &args(TREE).each_ref().map(String::as_str));
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert_eq!(
        err.trim_end(),
        format!(
            "note: kiln snapshot create reads component documents; skipped 1 \
             ResourceGraphDefinition(s) and 2 instance(s), kurel package(s) \
             {TREE}/packages/cache.kurel, {TREE}/packages/web.kurel, 2 plain manifest(s)"
        )
    );
    let components = format!("{TREE}/components");
    let alone = kiln(&root(), &args(&components).each_ref().map(String::as_str));
    assert_eq!(alone.status.code(), Some(0), "{}", text(&alone.stderr));
    assert!(alone.stderr.is_empty(), "{}", text(&alone.stderr));
    assert_eq!(text(&o.stdout), text(&alone.stdout));
    assert!(
        text(&o.stdout).contains("kind: ComponentEnvSnapshot"),
        "{}",
        text(&o.stdout)
    );

    let kro = "testdata/strategies/kro-mode";
    let o = kiln(
        &root(),
        &[
            "snapshot",
            "create",
            "--component",
            "checkout-service",
            "--env",
            "production",
            &format!("{kro}/rgds.yaml"),
            &format!("{kro}/shop.yaml"),
        ],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(o.stdout.is_empty());
    assert!(
        err.contains("skipped 4 ResourceGraphDefinition(s) and 1 instance(s)")
            && err.contains("no Component named \"checkout-service\""),
        "{err}"
    );
}
