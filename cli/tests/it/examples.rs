//! Issue 23.18: the worked example runs as its README says (examples/webapp/README.md).

use crate::common::KILN;
use kiln_test_support::readme;

#[test]
fn the_webapp_example_runs_as_its_readme_says() {
    let d = tempfile::tempdir().unwrap();
    readme::copy_in("examples/webapp", d.path());
    let ran = readme::run(
        "examples/webapp/README.md",
        d.path(),
        &[("kiln", KILN.into())],
        &["cli"],
        &[],
        &[],
    );
    assert_eq!(ran.len(), 2, "the README's two kiln commands");
    let out = String::from_utf8_lossy(&ran[0].output.stdout);
    assert!(out.contains("kind: Deployment"), "{out}");
}

/// The README says how to install every executable from the checkout.
#[test]
fn the_readme_installs_every_executable_from_the_checkout() {
    let text = std::fs::read_to_string(kiln_test_support::repo().join("README.md")).unwrap();
    let lines = readme::sh_lines(&text);
    for krate in [
        "cli",
        "plugin-kustomize",
        "plugin-argocd-cmp",
        "plugin-flux",
    ] {
        let line = format!("cargo install --locked --path {krate}");
        assert!(lines.contains(&line), "README lacks `{line}`");
        assert!(kiln_test_support::repo()
            .join(krate)
            .join("Cargo.toml")
            .is_file());
    }
}
