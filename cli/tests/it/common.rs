//! Helpers shared by the integration tests that drive the real `kiln` binary.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Run `kiln args` in `dir`, without colour.
pub fn kiln(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kiln"))
        .current_dir(dir)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("kiln runs")
}

/// Bytes as text (lossy).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_string()
}

/// Write `content` to `dir/name`, creating directories.
pub fn write(dir: &Path, name: &str, content: &str) {
    let p = dir.join(name);
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, content).unwrap();
}

/// A Secret whose values hold a control character (`\x01` in YAML) and the line separator
/// (`\L`), in plain text and as base64.
pub const ESCAPED_SECRET: &str = "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: prod}\nstringData:\n  password: \"hunter22\\x01zz-secret\"\n  other: \"line\\Lsep-secret\"\n";

/// Base64 of the Secret's `password` (as a `data` field elsewhere would hold it).
pub const ESCAPED_SECRET_BASE64: &str = "aHVudGVyMjIBenotc2VjcmV0";

/// The `kubernetes-validate` executable, installed into target/ by
/// scripts/kubernetes-validate.sh (python3 and PyPI). A failure to install fails the test: the
/// check never passes silently.
pub fn validator() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let o = Command::new("bash")
        .arg(root.join("scripts/kubernetes-validate.sh"))
        .output()
        .expect("bash runs");
    assert!(
        o.status.success(),
        "scripts/kubernetes-validate.sh could not install kubernetes-validate (needs python3 and PyPI):\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    PathBuf::from(String::from_utf8_lossy(&o.stdout).trim().to_string())
}
