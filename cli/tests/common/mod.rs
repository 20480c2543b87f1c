//! Helpers shared by the integration tests that drive the real `kiln` binary.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use std::fs;
use std::path::Path;
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
