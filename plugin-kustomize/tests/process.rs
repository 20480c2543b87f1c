//! The process kiln-krm runs in (`kiln_core::process`), read from the kernel's view of a live
//! kiln-krm: no transparent huge pages from its first allocation on, huge pages again once its
//! input is large, and the answer the same either way; no threads for a small input, a worker a
//! core for a larger one. Linux only: the state is read from `/proc/PID/status`, `limits` and
//! `smaps_rollup` while kiln-krm waits for the rest of stdin or to write the rest of its answer.

#![cfg(target_os = "linux")]

use kiln_test_support::answering;
mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use answering::*;
use common::*;

/// The value of a `Key:` line of `/proc/PID/<file>`, once `ok` accepts it (polled: the process
/// reads its stdin at its own pace); the last value seen when it never does.
fn proc_field(pid: u32, file: &str, key: &str, ok: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last = String::new();
    while Instant::now() < deadline {
        let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap_or_default();
        if let Some(v) = text
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .map(|v| v.trim().to_string())
        {
            if ok(&v) {
                return v;
            }
            last = v;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    last
}

/// A ResourceList of `n` ConfigMaps of about 200 bytes each.
fn list(n: usize) -> String {
    let mut s = String::from("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n");
    for i in 0..n {
        s.push_str(&format!(
            "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: cm-{i}\n  data:\n    text: a value long enough to make the item about two hundred bytes, {i}\n"
        ));
    }
    s
}

/// `run_at_load!` sets the process up before anything is allocated: THP is off (a kernel that
/// has THP at all then shows `THP_enabled: 0`), and none of the memory the runtime allocated
/// before `main` sits on huge pages (called from `main`, two huge pages were already in use).
/// Once more than `HUGE_INPUT` (1 MiB) has come on stdin, huge pages are on again; the answer is
/// the input, byte for byte, either way.
#[test]
fn huge_pages_off_at_load_and_on_for_a_large_input() {
    if !std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists() {
        eprintln!("this kernel has no transparent huge pages: nothing to check");
        return;
    }
    let input = list(8000);
    assert!(input.len() > (1 << 20) + 65536, "{}", input.len());
    let mut child = Command::new(bin())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kiln-krm starts");
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();

    // Nothing read yet: kiln-krm waits on stdin, as set up at load.
    assert_eq!(
        proc_field(pid, "status", "THP_enabled:", |v| v == "0"),
        "0",
        "THP is not disabled before main's first read"
    );
    assert_eq!(
        proc_field(pid, "smaps_rollup", "AnonHugePages:", |_| true),
        "0 kB",
        "memory allocated before main is on huge pages"
    );

    // Half a mebibyte: still a small run.
    let (head, tail) = input.split_at(1 << 19);
    stdin.write_all(head.as_bytes()).unwrap();
    stdin.flush().unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(
        proc_field(pid, "status", "THP_enabled:", |_| true),
        "0",
        "huge pages on for half a mebibyte"
    );

    // Past 1 MiB: a large run.
    let (middle, rest) = tail.split_at((1 << 19) + 65536);
    stdin.write_all(middle.as_bytes()).unwrap();
    stdin.flush().unwrap();
    assert_eq!(
        proc_field(pid, "status", "THP_enabled:", |v| v == "1"),
        "1",
        "huge pages still off after more than 1 MiB of input"
    );
    stdin.write_all(rest.as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout == input.as_bytes(),
        "the pass-through answer differs from its input"
    );
}

/// kiln-krm seen while it writes its answer to `input`, started by `sh` after `ulimit ARGS`.
fn while_answering_under(ulimit: &str, input: &str) -> Answered {
    let a = while_answering(
        Command::new("sh")
            .arg("-c")
            .arg(format!("ulimit {ulimit} && exec \"$0\""))
            .arg(bin()),
        input.as_bytes(),
    );
    assert!(a.output.status.success(), "{}", show(&a.output));
    a
}

/// A ResourceList of one item nested `depth` levels (about 17 KB at 124 levels), passed through.
fn deep_item(depth: usize) -> String {
    let mut s = String::from(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nfunctionConfig:\n  apiVersion: fn.kiln.dev/v1alpha1\n  kind: Render\n  metadata: {name: f}\n  spec:\n    passThrough: ['*']\nitems:\n- apiVersion: example.com/v1\n  kind: Thing\n  metadata:\n    name: t\n  spec:\n",
    );
    for d in 0..depth {
        s.push_str(&format!("{}k{d}:\n", " ".repeat(4 + 2 * d)));
    }
    s.push_str(&format!("{}v\n", " ".repeat(4 + 2 * depth)));
    s
}

/// A small input (at most `SMALL_INPUT`, 32 KiB) starts no worker: the main thread renders it,
/// its stack's limit raised to a worker's 16 MiB first, so that an item nested as deep as the
/// limits allow passes in this unoptimised build from a shell whose soft limit is 1 MiB. Where
/// the main thread's stack may not grow to a worker's (a hard limit of 8 MiB, as many containers
/// have), the small input is rendered on one worker with a worker's stack instead.
#[test]
fn a_small_input_is_rendered_by_the_main_thread_alone_or_one_worker() {
    let input = deep_item(124);
    assert!(input.len() > 3 * 4096 && input.len() <= 32 << 10);
    for (ulimit, threads, stack) in [("-S -s 1024", 1, 16 << 20), ("-s 8192", 2, 8 << 20)] {
        let a = while_answering_under(ulimit, &input);
        assert_eq!(a.threads, threads, "ulimit {ulimit}: threads");
        assert_eq!(
            a.stack,
            stack.to_string(),
            "ulimit {ulimit}: main stack limit"
        );
        assert!(
            String::from_utf8_lossy(&a.output.stdout).contains("k123:\n"),
            "ulimit {ulimit}: the deepest key is lost"
        );
    }
}

/// Past `SMALL_INPUT` the workers start, one a core, the main thread one of them; a main thread
/// without room for a worker's stack waits for as many spawned ones.
#[test]
fn a_larger_input_is_rendered_on_the_workers() {
    let input = list(300);
    assert!(input.len() > 32 << 10, "{}", input.len());
    for (ulimit, threads) in [("-S -s 8192", 0), ("-s 8192", 1)] {
        let a = while_answering_under(ulimit, &input);
        assert_eq!(a.threads, threads + a_worker_a_core(), "ulimit {ulimit}");
        assert!(
            a.output.stdout == input.as_bytes(),
            "the answer differs from the input"
        );
    }
}
