//! Hostile input and hostile surroundings through the real `kiln` binary (issue 24): each case
//! asserts the exact outcome, a diagnostic with its code, a non-zero exit and nothing written,
//! never a crash, a silent success or a partial result. The doors have their own cases in their
//! crates' `tests/` (each door reads and writes through its own code).

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

mod common;
use common::{kiln, text, write};

/// 5,000 ConfigMaps of about 200 bytes: far more than a pipe's 64 KiB buffer.
fn big_stream(dir: &Path) {
    let docs: Vec<String> = (0..5000)
        .map(|i| {
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm{i}\n  namespace: web\ndata:\n  k: \"{}\"\n",
                "x".repeat(100)
            )
        })
        .collect();
    write(dir, "big.yaml", &docs.join("---\n"));
}

/// `kiln render BIG | head -c 100`: the reader goes away after 100 bytes. kiln used to exit 0,
/// so a script could not tell that the rest was lost. It now ends quietly with 141, the status
/// a shell reports for a process that SIGPIPE ended (`yes | head`), and prints nothing.
#[test]
fn a_closed_pipe_is_not_success() {
    let tmp = tempfile::tempdir().unwrap();
    big_stream(tmp.path());
    let mut child = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .current_dir(tmp.path())
        .args(["render", "big.yaml"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 100];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    // The read end is closed here (dropped above); kiln still has most of its output to write.
    let out = child.wait_with_output().unwrap();
    assert!(first.starts_with(b"apiVersion: v1"));
    assert_eq!(out.status.code(), Some(141), "{}", text(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
}

/// A full device is an error with a message, not a silent exit.
#[test]
fn a_full_device_is_an_error_with_a_message() {
    let tmp = tempfile::tempdir().unwrap();
    big_stream(tmp.path());
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full exists on Linux");
    let out = Command::new(env!("CARGO_BIN_EXE_kiln"))
        .current_dir(tmp.path())
        .args(["render", "big.yaml"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("cannot write output: No space left on device"),
        "{}",
        text(&out.stderr)
    );
    // The same render to a pipe that stays open succeeds: the failure above is the device's.
    let ok = kiln(tmp.path(), &["render", "big.yaml"]);
    assert_eq!(ok.status.code(), Some(0));
    assert_eq!(text(&ok.stdout).matches("kind: ConfigMap").count(), 5000);
}
