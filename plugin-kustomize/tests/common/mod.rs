//! Helpers of the kiln-krm integration tests: the binary, the real clients, package copies.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The kiln-krm binary under test.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_kiln-krm"))
}

/// `testdata/` at the workspace root.
pub fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata")
}

/// A real client on PATH, or a test failure naming how to get it: the kiln-krm integration
/// tests are judged by the real kpt and kustomize, so a machine without them must not pass them
/// by skipping (the project's machines have both in their image).
pub fn tool(name: &str) -> PathBuf {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    found.unwrap_or_else(|| {
        panic!(
            "`{name}` is not on PATH, and this test needs the real client: install {} and \
             put it on PATH",
            install_hint(name)
        )
    })
}

/// Where a client the tests need comes from.
pub fn install_hint(name: &str) -> &'static str {
    match name {
        "kpt" => "kpt 1.0 (a release binary of kptdev/kpt)",
        "kubectl" => "kubectl 1.27 or newer (kustomize v5 is built in)",
        _ => "it",
    }
}

/// Copy a directory tree.
pub fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dst = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            fs::copy(e.path(), &dst).unwrap();
        }
    }
}

/// Every file below `dir`, by slash path, with its bytes.
pub fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, d: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                let rel = p
                    .strip_prefix(base)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.insert(rel, fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
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

/// stdout and stderr of an output, for assertion messages.
pub fn show(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A file's text.
pub fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The `kiln` CLI of this workspace, beside the kiln-krm binary under test: built first (a no-op
/// when it is current), so the two are compared at the same kiln-core.
pub fn kiln_cli() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build
        .args(["build", "--quiet", "-p", "kiln", "--bin", "kiln"])
        .arg("--manifest-path")
        .arg(&manifest);
    // The profile the binary under test was built with (its directory's name).
    match bin().parent().and_then(|d| d.file_name()) {
        Some(p) if p == "release" => {
            build.arg("--release");
        }
        Some(p) if p != "debug" => {
            build.arg("--profile").arg(p);
        }
        _ => {}
    }
    let o = build.output().unwrap();
    assert!(o.status.success(), "building kiln: {}", show(&o));
    let kiln = bin().with_file_name("kiln");
    assert!(kiln.is_file(), "{} is missing", kiln.display());
    kiln
}
