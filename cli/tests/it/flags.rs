//! Every flag applies or errors (issue 18): a flag or an input that would silently do nothing is a
//! usage error (exit 2) naming why, never an empty or wrong stream with exit 0.

use crate::common;
use crate::common::KILN;
use kiln_test_support::Cmd;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use common::{kiln, text, write};

fn webapp() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/webapp")
}

#[test]
fn an_empty_directory_is_refused_unless_empty_is_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    for cmd in ["render", "validate"] {
        let out = kiln(tmp.path(), &[cmd]);
        assert_eq!(out.status.code(), Some(2), "{cmd}");
        assert!(out.stdout.is_empty());
        let err = text(&out.stderr);
        assert!(
            err.contains("KLN1010") && err.contains("nothing to render"),
            "{err}"
        );
        let out = kiln(tmp.path(), &[cmd, "--allow-empty"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(out.stdout.is_empty());
    }
    // Comments only are no documents either.
    write(tmp.path(), "notes.yaml", "# nothing yet\n");
    let out = kiln(tmp.path(), &["render", "notes.yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}

#[test]
fn piped_stdin_without_a_path_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(KILN)
        .current_dir(tmp.path())
        .arg("render")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n";
    // kiln may exit before reading: a closed pipe is fine.
    let _ = child.stdin.take().unwrap().write_all(manifest.as_bytes());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(
        text(&out.stderr).contains("pass `-` to read stdin"),
        "{}",
        text(&out.stderr)
    );
    // `-` reads it.
    let out = Cmd::new(KILN)
        .dir(tmp.path())
        .args(["render", "-"])
        .stdin(manifest)
        .output();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("name: a"));
}

#[test]
fn a_format_name_is_not_an_output_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let w = webapp();
    let out = kiln(tmp.path(), &["render", w.to_str().unwrap(), "-o", "json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!tmp.path().join("json").exists());
    assert!(
        text(&out.stderr).contains("--output-format json"),
        "{}",
        text(&out.stderr)
    );
    // Named unambiguously, it is a directory.
    let out = kiln(tmp.path(), &["render", w.to_str().unwrap(), "-o", "./json"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(tmp.path().join("json/manifests.yaml").is_file());
}

#[test]
fn an_environment_without_components_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let w = webapp();
    let out = kiln(
        tmp.path(),
        &["render", w.to_str().unwrap(), "--env", "production"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = text(&out.stderr);
    assert!(
        err.contains("KLN1010") && err.contains("no component"),
        "{err}"
    );
}
