//! The threads `kiln render` works on (`kiln_core::process::worker_pool`): the main thread alone
//! for small inputs, a worker a core otherwise (the main thread one of them), as many as
//! `--jobs` says when it is given, and the same bytes every way.

#![cfg(target_os = "linux")]

use crate::common;
use crate::common::KILN;
use kiln_test_support::answering;

use std::path::Path;
use std::process::Command;

use answering::*;
use common::*;

/// `kiln args` in `dir` with `stdin`, seen while it writes its output.
fn kiln_answering(dir: &Path, args: &[&str], stdin: &str) -> Answered {
    let a = while_answering(
        Command::new(KILN).current_dir(dir).args(args),
        stdin.as_bytes(),
    );
    assert!(a.output.status.success(), "{}", text(&a.output.stderr));
    a
}

/// examples/webapp's definition and `n` instances of it (about 200 bytes each); the two
/// files' text.
fn webapps(dir: &Path, n: usize) -> String {
    let rgd = include_str!("../../../examples/webapp/rgd.yaml");
    let mut instances = String::new();
    for i in 0..n {
        instances.push_str(&format!(
            "---\napiVersion: example.com/v1alpha1\nkind: WebApp\nmetadata:\n  name: app-{i}\n  namespace: team-{i}\nspec:\n  image: ghcr.io/example/app:1.{i}.0\n  replicas: 2\n  regions: [eu-west-1, us-east-1]\n  ingress:\n    enabled: true\n    host: app-{i}.example.com\n"
        ));
    }
    write(dir, "rgd.yaml", rgd);
    write(dir, "instances.yaml", &instances);
    format!("{rgd}\n{instances}")
}

/// A directory of a few KiB renders on the main thread alone; the same input on stdin (whose
/// size kiln cannot know beforehand) on a worker a core, and `--jobs 2` on two: the same bytes.
#[test]
fn a_small_render_starts_no_threads() {
    let tmp = tempfile::tempdir().unwrap();
    let all = webapps(tmp.path(), 6);
    assert!(all.len() < 32 << 10);
    let alone = kiln_answering(tmp.path(), &["render", "."], "");
    assert_eq!(alone.threads, 1, "threads started for a small input");
    let piped = kiln_answering(tmp.path(), &["render", "-"], &all);
    assert_eq!(
        piped.threads,
        a_worker_a_core(),
        "stdin is not known to be small"
    );
    let two = kiln_answering(tmp.path(), &["render", "--jobs", "2", "."], "");
    assert_eq!(two.threads, 2, "--jobs 2: the main thread and one more");
    assert!(
        alone.output.stdout == two.output.stdout,
        "the output depends on the threads"
    );
    assert!(
        alone.output.stdout == piped.output.stdout,
        "the output depends on the source"
    );
}

/// Past 32 KiB a render gets a worker a core, unless `--jobs 1` says one: then the main thread
/// is that one.
#[test]
fn a_larger_render_starts_a_worker_a_core() {
    let tmp = tempfile::tempdir().unwrap();
    let all = webapps(tmp.path(), 200);
    assert!(all.len() > 32 << 10);
    let many = kiln_answering(tmp.path(), &["render", "."], "");
    assert_eq!(
        many.threads,
        a_worker_a_core(),
        "a worker a core, the main thread one of them"
    );
    let one = kiln_answering(tmp.path(), &["render", "--jobs", "1", "."], "");
    assert_eq!(one.threads, 1, "--jobs 1 started threads");
    assert!(
        many.output.stdout == one.output.stdout,
        "the output depends on the threads"
    );
}

/// A large output written into a regular file (space reserved first:
/// `kiln_core::process::reserve_file_space`) lands exactly where stdout points, as the same
/// bytes through a pipe: after what a file opened for appending holds (`>>`), and over the
/// start of a longer file opened without truncating (`1<>`), whose end stays as it was.
#[test]
fn a_large_output_lands_where_stdout_points() {
    let tmp = tempfile::tempdir().unwrap();
    webapps(tmp.path(), 600);
    let kiln = |stdout: std::process::Stdio| {
        let o = Command::new(KILN)
            .current_dir(tmp.path())
            .args(["render", "."])
            .stdout(stdout)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        o.stdout
    };
    let piped = kiln(std::process::Stdio::piped());
    assert!(
        piped.len() > kiln_core::process::RESERVED_OUTPUT,
        "{}",
        piped.len()
    );
    let out = tmp.path().join("out.yaml");
    let before = b"# kept\n".repeat(piped.len() / 7 + 1000);

    std::fs::write(&out, b"# kept\n").unwrap();
    let appending = std::fs::OpenOptions::new().append(true).open(&out).unwrap();
    kiln(appending.into());
    assert!(
        std::fs::read(&out).unwrap() == [&b"# kept\n"[..], &piped].concat(),
        ">>"
    );

    std::fs::write(&out, &before).unwrap();
    let over = std::fs::OpenOptions::new().write(true).open(&out).unwrap();
    kiln(over.into());
    let bytes = std::fs::read(&out).unwrap();
    assert_eq!(bytes.len(), before.len(), "1<>: the size");
    assert!(bytes[..piped.len()] == piped[..], "1<>: the output");
    assert!(
        bytes[piped.len()..] == before[piped.len()..],
        "1<>: the rest"
    );
}
