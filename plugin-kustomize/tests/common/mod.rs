//! Helpers of the kiln-krm integration tests: the binary under test and the `kiln` beside it;
//! the rest is kiln-test-support's.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code, unused_imports)]

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

pub use kiln_test_support::{copy_dir, read, show, testdata, tool, tree};

/// The kiln-krm binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_kiln-krm"))
}

/// Run a command with `stdin` as its input. The input is written from another thread, and a
/// command that stops reading early (an input over its limit) is not an error of the test.
pub fn run(cmd: &mut Command, stdin: &str) -> Output {
    cmd.stdout(Stdio::piped());
    run_to(cmd, stdin)
}

/// [`run`] with stdout as the caller set it up.
pub fn run_to(cmd: &mut Command, stdin: &str) -> Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let text = stdin.to_string();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(text.as_bytes());
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// The `kiln` CLI of this workspace, beside the kiln-krm binary under test: built first (a no-op
/// when it is current), so the two are compared at the same kiln-core.
pub fn kiln_cli() -> PathBuf {
    kiln_test_support::sibling(&bin(), &["kiln"], "kiln")
}
