//! Helpers shared by the integration tests that drive the real `kiln` binary.

use std::path::{Path, PathBuf};
use std::process::Output;

use kiln_test_support::Cmd;
pub use kiln_test_support::{copy_dir, text, validator, write};

/// The `kiln` executable under test.
pub const KILN: &str = env!("CARGO_BIN_EXE_kiln");

/// `kiln` in `dir`, without colour, to add arguments, input or environment to.
pub fn kiln_cmd(dir: &Path) -> Cmd {
    let mut c = Cmd::kiln(KILN);
    c.dir(dir);
    c
}

/// Run `kiln args` in `dir`, without colour.
pub fn kiln(dir: &Path, args: &[&str]) -> Output {
    kiln_cmd(dir).args(args).output()
}

/// The repository's root, as the tests name it (not canonicalized: diagnostics quote paths).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A Secret whose values hold a control character (`\x01` in YAML) and the line separator
/// (`\L`), in plain text and as base64.
pub const ESCAPED_SECRET: &str = "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: prod}\nstringData:\n  password: \"hunter22\\x01zz-secret\"\n  other: \"line\\Lsep-secret\"\n";

/// Base64 of the Secret's `password` (as a `data` field elsewhere would hold it).
pub const ESCAPED_SECRET_BASE64: &str = "aHVudGVyMjIBenotc2VjcmV0";
