//! The real clients a test is judged by (kpt, kubectl, kubernetes-validate): found, or the test
//! fails naming what to install. A check that needs one must never pass by skipping; the
//! project's machines have them in their image.

use std::path::PathBuf;
use std::process::Command;

/// A program on PATH, or a test failure naming how to get it.
pub fn tool(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "{name} is needed by this test and is not on PATH: install {}",
                install_hint(name)
            )
        })
}

/// Where a program the tests need comes from.
pub fn install_hint(name: &str) -> &'static str {
    match name {
        "kpt" => "kpt 1.0 (a release binary of kptdev/kpt)",
        "kubectl" => "kubectl 1.27 or newer (kustomize v5 is built in)",
        "tar" => "tar (Debian: apt-get install tar)",
        _ => "it",
    }
}

/// The `kubernetes-validate` executable, installed into target/ by
/// scripts/kubernetes-validate.sh (python3 and PyPI). A failure to install fails the test: the
/// check never passes silently.
pub fn validator() -> PathBuf {
    let o = Command::new("bash")
        .arg(crate::repo().join("scripts/kubernetes-validate.sh"))
        .output()
        .expect("bash runs");
    assert!(
        o.status.success(),
        "scripts/kubernetes-validate.sh could not install kubernetes-validate (needs python3 and PyPI):\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&o.stdout).trim().to_string())
}
