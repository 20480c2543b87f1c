//! Issue 23.18: examples/kustomize and examples/kpt (with its kurel package) run as their
//! READMEs say, with the real `kubectl kustomize` and `kpt`.

mod common;

use kiln_test_support::readme;

use common::*;

#[test]
fn the_kustomize_example_runs_as_its_readme_says() {
    let d = tempfile::tempdir().unwrap();
    readme::copy_in("examples/kustomize", d.path());
    let xdg = d.path().join("config");
    let ran = readme::run(
        "examples/kustomize/README.md",
        d.path(),
        &[("kiln-krm", bin()), ("kubectl", tool("kubectl"))],
        &["plugin-kustomize"],
        &[],
        &[
            ("XDG_CONFIG_HOME", xdg.display().to_string()),
            ("HOME", d.path().display().to_string()),
        ],
    );
    assert_eq!(ran.len(), 4, "install-exec-plugin and three builds");
    assert!(xdg
        .join("kustomize/plugin/fn.kiln.dev/v1alpha1/render/Render")
        .is_file());
    for r in &ran[1..] {
        let out = String::from_utf8_lossy(&r.output.stdout);
        assert!(out.contains("kind: Deployment"), "{}: {out}", r.step);
    }
    let prod = String::from_utf8_lossy(&ran[3].output.stdout);
    assert!(
        prod.contains("name: eu-shop") && prod.contains("replicas: 5"),
        "{prod}"
    );
}

#[test]
fn the_kpt_examples_run_as_their_readme_says() {
    let d = tempfile::tempdir().unwrap();
    readme::copy_in("examples/kpt", d.path());
    let ran = readme::run(
        "examples/kpt/README.md",
        d.path(),
        &[("kiln-krm", bin()), ("kpt", tool("kpt"))],
        &["plugin-kustomize"],
        &[],
        &[("HOME", d.path().display().to_string())],
    );
    assert_eq!(ran.len(), 2, "the two kpt fn render commands");
    let app = d.path().join("examples/kpt/app");
    let rendered = std::fs::read_to_string(app.join("deployment_shop.yaml")).unwrap();
    assert!(
        rendered.contains("kiln.dev/rendered-from: shop.yaml"),
        "{rendered}"
    );
    let kurel = d.path().join("examples/kpt/kurel");
    let rendered = std::fs::read_to_string(kurel.join("deployment_web.yaml")).unwrap();
    assert!(
        rendered.contains("kiln.dev/rendered-from: app.kurel"),
        "{rendered}"
    );
}
