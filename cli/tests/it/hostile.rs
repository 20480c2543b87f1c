//! Hostile input and hostile surroundings through the real `kiln` binary (issue 24): each case
//! asserts the exact outcome, a diagnostic with its code, a non-zero exit and nothing written,
//! never a crash, a silent success or a partial result. The doors have their own cases in their
//! crates' `tests/` (each door reads and writes through its own code).

use crate::common::KILN;
use kiln_test_support::flux_preview;
use kiln_test_support::Cmd;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common;
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
    let mut child = Command::new(KILN)
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
    let out = Command::new(KILN)
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

// ---------------------------------------------------------------------------------------------
// Every hostile input of `testdata/bad/` through every door.
//
// The golden suite runs each case folder through `kiln render` and compares the diagnostics. The
// doors read the same inputs through their own code (a KRM functionConfig's `paths`, an Argo CD
// app directory, a Flux tree), so each case is run through each of them too, under a memory cap
// (1 GiB of address space) and a time limit, and must end the same way: the same error codes,
// exit 1, no manifest on stdout (a KRM function answers with its results and the input items,
// here none), and none of the case's secret values anywhere in what the door printed.
// ---------------------------------------------------------------------------------------------

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Door {
    Cli,
    Krm,
    Cmp,
    Flux,
}

impl Door {
    fn exe(self) -> PathBuf {
        match self {
            Door::Cli => PathBuf::from(KILN),
            Door::Krm => door_binary("kiln-krm"),
            Door::Cmp => door_binary("kiln-cmp"),
            Door::Flux => door_binary("kiln-flux"),
        }
    }
}

/// A door executable of this workspace, built in the profile of the `kiln` binary under test.
fn door_binary(name: &str) -> PathBuf {
    kiln_test_support::sibling(
        Path::new(crate::common::KILN),
        &["kiln-krm", "kiln-cmp", "kiln-flux"],
        name,
    )
}

/// What a door did with one input.
struct Outcome {
    status: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Outcome {
    /// The codes of the errors it reported (warnings aside): the CLI's JSON diagnostics, the
    /// doors' `error[KLN1005]` lines on stderr (kiln-krm prints them beside its results).
    fn codes(&self, door: Door) -> BTreeSet<String> {
        if door == Door::Cli {
            let v: serde_json::Value = serde_json::from_str(&self.stderr)
                .unwrap_or_else(|e| panic!("stderr is not JSON ({e}): {}", self.stderr));
            return v["diagnostics"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|d| d["severity"] == "error")
                .filter_map(|d| d["code"].as_str().map(str::to_string))
                .collect();
        }
        self.stderr
            .match_indices("error[KLN")
            .filter_map(|(i, _)| self.stderr.get(i + 6..i + 13))
            .map(str::to_string)
            .collect()
    }
}

/// Run `exe` with `args` in `dir`, stdin from `stdin`, under the memory cap and time limit.
fn capped(exe: &Path, args: &[&str], dir: &Path, env: &[(&str, &str)], stdin: &str) -> Outcome {
    capped_from(exe, args, dir, env, Feed::Text(stdin.to_string()))
}

/// What a capped run reads on stdin.
enum Feed {
    Text(String),
    /// An open file: `/dev/zero` never ends.
    File(std::fs::File),
}

fn capped_from(exe: &Path, args: &[&str], dir: &Path, env: &[(&str, &str)], feed: Feed) -> Outcome {
    const LIMIT: Duration = Duration::from_secs(60);
    let prlimit = Path::new("/usr/bin/prlimit");
    assert!(
        prlimit.is_file(),
        "prlimit (util-linux) is needed to cap the doors' memory"
    );
    let mut cmd = Command::new(prlimit);
    cmd.arg(format!("--as={}", 1u64 << 30))
        .arg("--")
        .arg(exe)
        .args(args)
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let fed = match feed {
        Feed::Text(t) => {
            cmd.stdin(Stdio::piped());
            Some(t)
        }
        Feed::File(f) => {
            cmd.stdin(f);
            None
        }
    };
    let mut child = cmd.spawn().expect("prlimit runs");
    let input = child.stdin.take();
    let feeder = std::thread::spawn(move || {
        use std::io::Write;
        if let (Some(mut input), Some(fed)) = (input, fed) {
            let _ = input.write_all(fed.as_bytes());
        }
    });
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stdout.read_to_end(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = stderr.read_to_end(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            panic!(
                "{} {args:?} in {}: still running after {LIMIT:?}",
                exe.display(),
                dir.display()
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    feeder.join().unwrap();
    Outcome {
        status: status.code(),
        stdout: text(&out_reader.join().unwrap()),
        stderr: text(&err_reader.join().unwrap()),
    }
}

/// Run `door` over `input` (a path under `checkout`, relative to it).
fn through(door: Door, checkout: &Path, input: &str) -> Outcome {
    let exe = door.exe();
    match door {
        Door::Cli => capped(
            &exe,
            &["render", input, "--diagnostics", "json"],
            checkout,
            &[],
            "",
        ),
        Door::Flux => capped(&exe, &["build", input], checkout, &[], ""),
        Door::Krm => {
            let list = format!(
                "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n\
                 functionConfig:\n  apiVersion: fn.kiln.dev/v1alpha1\n  kind: Render\n  \
                 metadata: {{name: render}}\n  spec: {{paths: [{input:?}]}}\n"
            );
            capped(&exe, &[], checkout, &[], &list)
        }
        // Argo CD runs the plugin in the application's directory of the checkout, with the
        // application's path in the environment (reposerver/repository/repository.go).
        Door::Cmp => capped(
            &exe,
            &["generate"],
            &checkout.join(input),
            &[
                ("ARGOCD_APP_NAME", "hostile"),
                ("ARGOCD_APP_NAMESPACE", "default"),
                ("ARGOCD_APP_SOURCE_PATH", input),
                ("ARGOCD_APP_PARAMETERS", "null"),
                ("KUBE_VERSION", "1.37.1"),
            ],
            "",
        ),
    }
}

/// Copy a case folder, keeping symlinks as symlinks (a link to /etc must stay one).
fn copy_case(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if ["expected-errors.txt", "args"].contains(&name.to_str().unwrap_or("")) {
            continue;
        }
        let ty = e.file_type().unwrap();
        let dest = to.join(&name);
        if ty.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(e.path()).unwrap(), &dest).unwrap();
        } else if ty.is_dir() {
            copy_case(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// Every folder under `testdata/bad` with an `expected-errors.txt`, run with `kiln render` (no
/// `command` file) and no flags (an `args` file may name a path inside the case): the input
/// below the case folder, and the error codes expected.
fn bad_cases() -> Vec<(PathBuf, String, BTreeSet<String>)> {
    fn walk(d: &Path, out: &mut Vec<PathBuf>) {
        let mut entries: Vec<_> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() && !p.is_symlink() {
                if p.join("expected-errors.txt").is_file() {
                    out.push(p);
                } else {
                    walk(&p, out);
                }
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/bad");
    let mut dirs = Vec::new();
    walk(&root, &mut dirs);
    let mut cases = Vec::new();
    for d in dirs {
        if d.join("command").exists() {
            continue;
        }
        let sub = match std::fs::read_to_string(d.join("args")) {
            Err(_) => String::new(),
            Ok(a) => {
                let a = a.trim();
                if a.starts_with('-') || a.contains(' ') || !d.join(a).exists() {
                    continue; // flags have no common spelling across the doors
                }
                a.to_string()
            }
        };
        let expected = std::fs::read_to_string(d.join("expected-errors.txt")).unwrap();
        let codes: BTreeSet<String> = expected
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .map(str::to_string)
            .collect();
        assert!(!codes.is_empty(), "{}: no expected error", d.display());
        cases.push((d, sub, codes));
    }
    cases
}

/// Values the secrets cases hold that must never be printed: as they are written, and the base64
/// of `secrets/base64-of-a-secret`'s password (which a template copies into another object).
const SECRETS: &[&str] = &[
    "Hunter2-Secret",
    "hunter2-very-secret",
    "SHVudGVyMi1TZWNyZXQB",
];

/// Run every bad case through `door`; return the failures, one line each.
fn every_bad_case_through(door: Door) {
    let cases = bad_cases();
    // The count is what runs, not a floor: a case folder that silently stopped running would
    // change it (and the list of folders is on disk).
    assert!(cases.len() >= 100, "only {} bad cases found", cases.len());
    let mut failures = Vec::new();
    for (case, sub, expected) in &cases {
        let tmp = tempfile::tempdir().unwrap();
        let app = tmp.path().join("app");
        copy_case(case, &app);
        let input = if sub.is_empty() {
            "app".to_string()
        } else {
            format!("app/{sub}")
        };
        let out = through(door, tmp.path(), &input);
        // kiln-flux builds a tree that holds packages; a package as the tree itself is refused
        // with what to do (its objects would go beside it, outside the tree), after the tree's
        // read has refused any path leaving it.
        let refused_root = BTreeSet::from(["KLN1010".to_string()]);
        let expected = if door == Door::Flux
            && kiln_core::kurel::is_package(&tmp.path().join(&input))
            && !expected.contains("KLN1002")
        {
            &refused_root
        } else {
            expected
        };
        let name = case
            .strip_prefix(Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata"))
            .unwrap()
            .display()
            .to_string();
        let mut problems = Vec::new();
        if out.status != Some(1) {
            problems.push(format!("exit {:?}", out.status));
        }
        let got = out.codes(door);
        if &got != expected {
            problems.push(format!("codes {got:?}, expected {expected:?}"));
        }
        let manifests = match door {
            Door::Krm => out.stdout.contains("items: []") && out.stdout.contains("severity: error"),
            _ => out.stdout.is_empty(),
        };
        if !manifests {
            problems.push(format!(
                "stdout: {}",
                out.stdout.chars().take(300).collect::<String>()
            ));
        }
        for s in SECRETS {
            if out.stdout.contains(s) || out.stderr.contains(s) {
                problems.push(format!("printed the secret {s:?}"));
            }
        }
        if !problems.is_empty() {
            failures.push(format!(
                "{name} through {door:?}: {}\n    stderr: {}",
                problems.join("; "),
                out.stderr
                    .lines()
                    .take(3)
                    .collect::<Vec<_>>()
                    .join("\n            ")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} bad cases end differently through {door:?}:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn every_bad_case_through_the_cli() {
    every_bad_case_through(Door::Cli);
}

#[test]
fn every_bad_case_through_kiln_krm() {
    every_bad_case_through(Door::Krm);
}

#[test]
fn every_bad_case_through_kiln_cmp() {
    every_bad_case_through(Door::Cmp);
}

#[test]
fn every_bad_case_through_kiln_flux() {
    every_bad_case_through(Door::Flux);
}

/// Files that are not files, inside an input directory: a FIFO (reading it would block until
/// someone writes), a character device (endless), a symlink to `/dev/zero` and a symlink loop.
/// Every door refuses each by name (KLN1007 for what is not a regular file, KLN1002 for a link
/// leaving the tree, KLN1001 for the loop) and none hangs: the time limit in [`capped`] fails
/// the test if one does.
#[test]
fn special_files_in_a_tree_are_refused_by_every_door_without_hanging() {
    for door in [Door::Cli, Door::Krm, Door::Cmp, Door::Flux] {
        for (name, make, code) in [
            (
                "fifo.yaml",
                (|p: &Path| {
                    let st = Command::new("mkfifo").arg(p).status().expect("mkfifo runs");
                    assert!(st.success());
                }) as fn(&Path),
                "KLN1007",
            ),
            (
                "zero.yaml",
                |p: &Path| std::os::unix::fs::symlink("/dev/zero", p).unwrap(),
                "KLN1002",
            ),
            (
                "device.yaml",
                |p: &Path| {
                    // The same character device as /dev/zero (1, 5), inside the tree.
                    let st = Command::new("mknod")
                        .arg(p)
                        .args(["c", "1", "5"])
                        .status()
                        .expect("mknod runs");
                    assert!(
                        st.success(),
                        "mknod needs root, as on the project's machines"
                    );
                },
                "KLN1007",
            ),
            (
                "loop.yaml",
                |p: &Path| std::os::unix::fs::symlink("loop.yaml", p).unwrap(),
                "KLN1001",
            ),
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let app = tmp.path().join("app");
            write(
                &app,
                "cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: web}\n",
            );
            make(&app.join(name));
            let out = through(door, tmp.path(), "app");
            assert_eq!(out.status, Some(1), "{door:?} {name}: {}", out.stderr);
            assert_eq!(
                out.codes(door),
                BTreeSet::from([code.to_string()]),
                "{door:?} {name}: {}",
                out.stderr
            );
            if door != Door::Krm {
                assert!(out.stdout.is_empty(), "{door:?} {name}: {}", out.stdout);
            }
        }
    }
}

/// Paths from a door's configuration (not from the person running kiln) that leave its root:
/// kiln-krm's functionConfig `paths`, `values` and `observed` (root: kustomize's working
/// directory), kiln-cmp's `values` and `observed` parameters (root: the checkout). Each is refused
/// with KLN1002 and the outside file's content is never printed. (kiln-flux's `spec.path` has the
/// same cases in plugin-flux/tests/flux.rs, `a_path_that_leaves_the_root_is_refused`.)
#[test]
fn door_configuration_paths_never_leave_the_root() {
    const OUTSIDE: &str = "outside-secret-7f3a";
    for target in ["../outside.yaml", "/tmp/../etc/passwd", "link.yaml"] {
        for field in ["paths", "values", "observed"] {
            let tmp = tempfile::tempdir().unwrap();
            let root = tmp.path().join("repo");
            write(
                tmp.path(),
                "outside.yaml",
                &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {OUTSIDE}}}\n"),
            );
            write(
                &root,
                "app/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: web}\n",
            );
            // A kurel package, so that `values` are read at all.
            write(
                &root,
                "app/pkg.kurel/parameters.yaml",
                "kurel: {name: pkg, version: 1.0.0, appVersion: \"1.0\"}\nname: x\n",
            );
            write(
                &root,
                "app/pkg.kurel/resources/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"${name}\", namespace: web}\n",
            );
            std::os::unix::fs::symlink(tmp.path().join("outside.yaml"), root.join("link.yaml"))
                .unwrap();
            std::os::unix::fs::symlink(tmp.path().join("outside.yaml"), root.join("app/link.yaml"))
                .unwrap();
            // kiln-krm: the functionConfig names the path; kustomize's working directory is the root.
            let extra = if field == "paths" {
                format!("paths: [{target:?}]")
            } else {
                format!("paths: [app/cm.yaml, app/pkg.kurel], {field}: [{target:?}]")
            };
            let list = format!(
                "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n\
                 functionConfig:\n  apiVersion: fn.kiln.dev/v1alpha1\n  kind: Render\n  \
                 metadata: {{name: render}}\n  spec: {{{extra}}}\n"
            );
            let out = capped(&Door::Krm.exe(), &[], &root, &[], &list);
            assert_eq!(out.status, Some(1), "krm {field}={target}: {}", out.stderr);
            assert!(
                out.codes(Door::Krm).contains("KLN1002"),
                "krm {field}={target}: {}",
                out.stderr
            );
            assert!(!out.stdout.contains(OUTSIDE) && !out.stderr.contains(OUTSIDE));
            // kiln-cmp: Argo CD hands the parameters as JSON; the checkout is the root.
            if field == "paths" {
                continue;
            }
            let target = target.replace("../", "../../");
            let params = format!(r#"[{{"name":"{field}","array":["{target}"]}}]"#);
            let out = capped(
                &Door::Cmp.exe(),
                &["generate"],
                &root.join("app"),
                &[
                    ("ARGOCD_APP_NAME", "hostile"),
                    ("ARGOCD_APP_NAMESPACE", "default"),
                    ("ARGOCD_APP_SOURCE_PATH", "app"),
                    ("ARGOCD_APP_PARAMETERS", &params),
                    ("KUBE_VERSION", "1.37.1"),
                ],
                "",
            );
            assert_eq!(out.status, Some(1), "cmp {field}={target}: {}", out.stderr);
            assert!(
                out.codes(Door::Cmp).contains("KLN1002"),
                "cmp {field}={target}: {}",
                out.stderr
            );
            assert!(out.stdout.is_empty());
            assert!(!out.stderr.contains(OUTSIDE));
        }
    }
}

/// Every door that reads a stream reads it within `input-bytes`, as it goes: stdin here is
/// `/dev/zero`, which never ends, so a door that read everything before checking (kiln-krm and
/// `kiln-flux envsubst` did: a 500 MB ResourceList aborted on allocation) would run into the time
/// limit or the memory cap instead of answering KLN1005. kiln-cmp reads no stdin (Argo CD gives
/// it none).
#[test]
fn endless_stdin_is_read_within_the_limit_by_every_door() {
    let tmp = tempfile::tempdir().unwrap();
    let runs: [(Door, &[&str]); 3] = [
        (Door::Cli, &["render", "-", "--limit", "input-bytes=64Ki"]),
        (Door::Krm, &["--limit", "input-bytes=64Ki"]),
        (Door::Flux, &["envsubst", "--limit", "input-bytes=64Ki"]),
    ];
    for (door, args) in runs {
        let zero = std::fs::File::open("/dev/zero").unwrap();
        let out = capped_from(&door.exe(), args, tmp.path(), &[], Feed::File(zero));
        assert_eq!(out.status, Some(1), "{door:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("KLN1005") && out.stderr.contains("over the limit of 65536 bytes"),
            "{door:?}: {}",
            out.stderr
        );
    }
}

/// Several runs writing to one `-o` target at the same time (two CI jobs, a watch loop): each
/// either succeeds or fails with a message, and what is left is always one whole output, equal
/// to a single run's, never a mix or half a file. Directories and single files alike.
#[test]
fn concurrent_writers_to_one_output_leave_a_whole_output() {
    let tmp = tempfile::tempdir().unwrap();
    big_stream(tmp.path());
    let single = kiln(tmp.path(), &["render", "big.yaml"]);
    assert_eq!(single.status.code(), Some(0));
    for target in ["out", "out.yaml"] {
        let children: Vec<_> = (0..4)
            .map(|_| {
                Command::new(KILN)
                    .current_dir(tmp.path())
                    .args(["render", "big.yaml", "-o", target])
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut succeeded = 0;
        for c in children {
            let o = c.wait_with_output().unwrap();
            match o.status.code() {
                Some(0) => succeeded += 1,
                Some(1) => assert!(
                    !o.stderr.is_empty(),
                    "{target}: a failure without a message"
                ),
                other => panic!("{target}: exit {other:?}: {}", text(&o.stderr)),
            }
        }
        assert!(succeeded >= 1, "{target}: no writer succeeded");
        let written = if target == "out" {
            std::fs::read(tmp.path().join("out/manifests.yaml")).unwrap()
        } else {
            // A file starts with kiln's mark (the protection of `-o FILE`).
            let all = std::fs::read(tmp.path().join(target)).unwrap();
            let mark = kiln_core::layout::FILE_MARKER.as_bytes();
            assert!(all.starts_with(mark), "{target}: no mark");
            all[mark.len()..].to_vec()
        };
        assert_eq!(written, single.stdout, "{target}: not one whole output");
        // No temporary file or directory is left beside the target.
        let leftovers: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
            .filter(|n| n.contains(".kiln-"))
            .collect();
        assert!(leftovers.is_empty(), "{target}: left {leftovers:?}");
    }
}

/// Values given to a door (options, a functionConfig, Argo CD parameters and plugin env,
/// command-line arguments) of 100 KiB, the most one argument or environment variable may hold
/// (Linux's MAX_ARG_STRLEN is 128 KiB): every door refuses or warns about each with a message
/// that quotes a bounded prefix (`"vvv…"… (102400 bytes)`), never the value (issue 39: kiln-krm
/// echoed a 20 MB `set` value twice, 40 MB on stderr). `kiln_core::diag::quote` is the one
/// quoting helper. (A key that long is written as YAML's explicit `? key`: an implicit key is
/// at most 1024 characters.)
#[test]
fn huge_option_values_are_quoted_by_a_prefix_in_every_door() {
    let big = "v".repeat(100 << 10);
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: web}\ndata: {k: v}\n",
    );
    write(
        tmp.path(),
        "app/pkg.kurel/parameters.yaml",
        "kurel: {name: pkg, version: 1.0.0, appVersion: \"1.0\"}\nport: 1\n",
    );
    write(
        tmp.path(),
        "app/pkg.kurel/resources/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: p, namespace: web}\ndata:\n  port: \"${port}\"\n",
    );
    // What quote writes after a prefix: `… (102400 bytes)` (a path's length includes its
    // directory).
    let failures = std::cell::RefCell::new(Vec::new());
    let check = |what: &str, out: Outcome| {
        let all = format!("{}{}", out.stdout, out.stderr);
        let quoted = all.split("… (").skip(1).any(|r| {
            r.split_once(" bytes)")
                .is_some_and(|(n, _)| n.parse::<usize>().is_ok_and(|n| n >= 100 << 10))
        });
        if all.len() >= 4096 || !quoted {
            failures.borrow_mut().push(format!(
                "{what}: exit {:?}, {} bytes printed: {}",
                out.status,
                all.len(),
                all.chars().take(300).collect::<String>()
            ));
        }
    };
    // kiln-krm: the functionConfig (a Render, and kpt's ConfigMap of `key=value`).
    let krm = |spec: String| {
        let list = format!(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig:\n{spec}"
        );
        capped(&Door::Krm.exe(), &[], tmp.path(), &[], &list)
    };
    let render = |field: &str| {
        format!("  apiVersion: fn.kiln.dev/v1alpha1\n  kind: Render\n  metadata: {{name: r}}\n  spec:\n    paths: [app]\n    {field}\n")
    };
    for (what, field) in [
        ("set value", format!("set: {{port: {big}}}")),
        ("set key", format!("set:\n      ? {big}\n      : 1")),
        (
            "set of a map",
            format!("set:\n      ? {big}\n      : {{a: 1}}"),
        ),
        ("environment", format!("environment: {big}")),
        ("mode", format!("mode: {big}")),
        ("unknown field", format!("? {big}\n    : 1")),
        ("values", format!("values: [{big}]")),
        ("observed", format!("observed: [{big}]")),
        ("a path leaving", format!("values: [../{big}]")),
    ] {
        check(&format!("kiln-krm {what}"), krm(render(&field)));
    }
    for (what, field) in [
        ("option", format!("? {big}\n    : x")),
        ("mode", format!("mode: {big}")),
    ] {
        let cm = format!("  apiVersion: v1\n  kind: ConfigMap\n  metadata: {{name: r}}\n  data:\n    paths: app\n    {field}\n");
        check(&format!("kiln-krm ConfigMap {what}"), krm(cm));
    }
    // kiln-cmp: Argo CD's parameters and plugin env, in the application's directory.
    let cmp = |env: &[(&str, &str)]| {
        let mut all = vec![
            ("ARGOCD_APP_NAME", "hostile"),
            ("ARGOCD_APP_SOURCE_PATH", "app"),
            ("KUBE_VERSION", "1.37.1"),
        ];
        all.extend_from_slice(env);
        capped(
            &Door::Cmp.exe(),
            &["generate"],
            &tmp.path().join("app"),
            &all,
            "",
        )
    };
    let param = |p: String| -> String { format!("[{p}]") };
    for (what, p) in [
        (
            "environment",
            format!(r#"{{"name":"environment","string":"{big}"}}"#),
        ),
        (
            "set value",
            format!(r#"{{"name":"set","map":{{"port":"{big}"}}}}"#),
        ),
        (
            "set key",
            format!(r#"{{"name":"set","map":{{"{big}":"1"}}}}"#),
        ),
        (
            "values",
            format!(r#"{{"name":"values","array":["{big}"]}}"#),
        ),
        (
            "observed",
            format!(r#"{{"name":"observed","array":["{big}"]}}"#),
        ),
        ("mode", format!(r#"{{"name":"mode","string":"{big}"}}"#)),
        ("name", format!(r#"{{"name":"{big}","string":"x"}}"#)),
    ] {
        let params = param(p);
        // The JSON around the value takes a few bytes of the 128 KiB.
        check(
            &format!("kiln-cmp parameter {what}"),
            cmp(&[("ARGOCD_APP_PARAMETERS", &params)]),
        );
    }
    check(
        "kiln-cmp plugin env ENVIRONMENT",
        cmp(&[
            ("ARGOCD_APP_PARAMETERS", "null"),
            ("ARGOCD_ENV_ENVIRONMENT", &big),
        ]),
    );
    // kiln-flux and kiln: command-line arguments.
    let flux = |args: &[&str]| capped(&Door::Flux.exe(), args, tmp.path(), &[], "");
    let cli = |args: &[&str]| capped(&Door::Cli.exe(), args, tmp.path(), &[], "");
    let limit = format!("input-bytes={big}");
    let path = format!("app/{big}");
    check("kiln-flux env", flux(&["build", "app", "--env", &big]));
    check(
        "kiln-flux limit",
        flux(&["build", "app", "--limit", &limit]),
    );
    check("kiln-flux path", flux(&["build", &path]));
    let set_value = format!("port={big}");
    let set_key = format!("{big}=1");
    let secret = format!("a..{big}");
    for (what, args) in [
        ("set value", vec!["render", "app", "--set", &set_value]),
        ("set key", vec!["render", "app", "--set", &set_key]),
        ("env", vec!["render", "app", "--env", &big]),
        ("limit", vec!["render", "app", "--limit", &limit]),
        ("secret", vec!["render", "app", "--secret", &secret]),
        ("values", vec!["render", "app", "--values", &big]),
    ] {
        check(&format!("kiln {what}"), cli(&args));
    }
    let failures = failures.into_inner();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Run git in `dir` with a fixed identity, outside any user or system configuration.
fn git(dir: &Path, args: &[&str]) {
    let o = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "kiln")
        .env("GIT_AUTHOR_EMAIL", "kiln@localhost")
        .env("GIT_COMMITTER_NAME", "kiln")
        .env("GIT_COMMITTER_EMAIL", "kiln@localhost")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git runs (it must be installed for these tests)");
    assert!(o.status.success(), "git {args:?}: {}", text(&o.stderr));
}

/// Version-control data is never an input (issue 39): `.git/config` holds a CI token. A door's
/// configuration naming it (kiln-krm's `paths`, kiln-cmp's application path and `values`), and a
/// symlink of the tree into it, are refused with KLN1002 naming `.git`, and the token is never
/// printed. `kiln diff` does not follow a working tree's link into `.git`, nor a revision's.
/// (kiln-flux's `spec.path: ./.git` and its artifacts: plugin-flux/tests/flux.rs,
/// `version_control_data_is_never_read_nor_packed`.)
#[test]
fn version_control_data_is_never_an_input_of_any_door() {
    const TOKEN: &str = "ghp_k1lnCiT0ken";
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    write(
        &repo,
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: web}\n",
    );
    write(
        &repo,
        "app/pkg.kurel/parameters.yaml",
        "kurel: {name: pkg, version: 1.0.0, appVersion: \"1.0\"}\nname: x\n",
    );
    write(
        &repo,
        "app/pkg.kurel/resources/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"${name}\", namespace: web}\n",
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "one"]);
    git(
        &repo,
        &[
            "config",
            "remote.origin.url",
            &format!("https://ci:{TOKEN}@example.com/repo.git"),
        ],
    );
    let refused = |what: &str, door: Door, out: &Outcome| {
        assert_eq!(out.status, Some(1), "{what}: {}", out.stderr);
        assert!(
            out.codes(door).contains("KLN1002") && out.stderr.contains(".git"),
            "{what}: {}",
            out.stderr
        );
        assert!(
            !out.stdout.contains(TOKEN) && !out.stderr.contains(TOKEN),
            "{what}: the token leaked"
        );
    };
    let krm = |spec: &str| {
        let list = format!(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n\
             functionConfig:\n  apiVersion: fn.kiln.dev/v1alpha1\n  kind: Render\n  \
             metadata: {{name: render}}\n  spec: {{{spec}}}\n"
        );
        capped(&Door::Krm.exe(), &[], &repo, &[], &list)
    };
    let cmp = |app: &str, params: &str| {
        capped(
            &Door::Cmp.exe(),
            &["generate"],
            &repo.join(app),
            &[
                ("ARGOCD_APP_NAME", "hostile"),
                ("ARGOCD_APP_NAMESPACE", "default"),
                ("ARGOCD_APP_SOURCE_PATH", app),
                ("ARGOCD_APP_PARAMETERS", params),
                ("KUBE_VERSION", "1.37.1"),
            ],
            "",
        )
    };
    // Named by the door's configuration.
    refused("krm paths", Door::Krm, &krm("paths: [.git/config]"));
    refused("krm paths (a directory)", Door::Krm, &krm("paths: [.git]"));
    refused(
        "krm values",
        Door::Krm,
        &krm("paths: [app/pkg.kurel], values: [.git/config]"),
    );
    refused("cmp application path", Door::Cmp, &cmp(".git", "null"));
    refused(
        "cmp values",
        Door::Cmp,
        &cmp("app", r#"[{"name":"values","array":["../.git/config"]}]"#),
    );
    // A link of the tree into it, met in a walk.
    std::os::unix::fs::symlink("../.git/config", repo.join("app/token.yaml")).unwrap();
    refused("krm link", Door::Krm, &krm("paths: [app]"));
    refused("cmp link", Door::Cmp, &cmp("app", "null"));
    // kiln diff: the working tree's link, then the same link committed (the revision's).
    let diff = |args: &[&str]| {
        let mut all = vec!["diff"];
        all.extend_from_slice(args);
        capped(&Door::Cli.exe(), &all, &repo, &[], "")
    };
    let check_diff = |what: &str, out: &Outcome| {
        assert_eq!(out.status, Some(4), "{what}: {}", out.stderr);
        assert!(
            out.stderr.contains("KLN1002") && out.stderr.contains("inside .git"),
            "{what}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains(TOKEN) && !out.stdout.contains(TOKEN));
    };
    check_diff("diff, working tree", &diff(&["app"]));
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "two"]);
    check_diff(
        "diff, revision",
        &diff(&["app", "--base", "HEAD", "--head", "HEAD"]),
    );
}

/// Paths a user writes are bounded by `yaml-depth` (issue 39): each segment is a level of
/// nesting, and a set key builds it. A `set` key of 100,000 segments killed kiln-krm with
/// SIGSEGV (the nesting it built was dropped recursively), and 60,000 of them in Argo CD's
/// parameters took quadratic time; a kpatch path as deep does the same through a package. Each
/// door now answers KLN1005 naming the limit, at once, within the memory cap: the CLI's `--set`,
/// kiln-krm's `set`, kiln-cmp's `set` parameter, and a package's kpatch path through all four.
#[test]
fn paths_deeper_than_any_document_are_refused_by_every_door() {
    let deep = vec!["a"; 100_000].join(".");
    // An argument or environment variable holds at most 128 KiB (Linux's MAX_ARG_STRLEN).
    let argument = vec!["a"; 60_000].join(".");
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path();
    write(
        repo,
        "app/pkg.kurel/parameters.yaml",
        "kurel: {name: pkg, version: 1.0.0, appVersion: \"1.0\"}\nname: x\n",
    );
    write(
        repo,
        "app/pkg.kurel/resources/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"${name}\", namespace: web}\n",
    );
    let refused = |what: &str, door: Door, out: &Outcome| {
        assert_eq!(out.status, Some(1), "{what}: {}", out.stderr);
        assert!(
            out.codes(door).contains("KLN1005"),
            "{what}: {}",
            out.stderr
        );
        assert!(
            out.stderr
                .contains("000 segments, more than the limit of 128 (yaml-depth)")
                || out
                    .stderr
                    .contains("001 segments, more than the limit of 128 (yaml-depth)"),
            "{what}: {}",
            out.stderr
        );
        // The hostile value is quoted short, never whole.
        assert!(
            out.stderr.len() < 20_000,
            "{what}: {} bytes",
            out.stderr.len()
        );
    };
    let set = format!("{argument}=1");
    let cli = capped(
        &Door::Cli.exe(),
        &[
            "render",
            "app/pkg.kurel",
            "--set",
            &set,
            "--diagnostics",
            "json",
        ],
        repo,
        &[],
        "",
    );
    refused("kiln --set", Door::Cli, &cli);
    let list = format!(
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n\
         functionConfig:\n  apiVersion: fn.kiln.dev/v1alpha1\n  kind: Render\n  \
         metadata: {{name: render}}\n  spec:\n    paths: [app/pkg.kurel]\n    set:\n      ? {deep}\n      : 1\n"
    );
    refused(
        "kiln-krm set",
        Door::Krm,
        &capped(&Door::Krm.exe(), &[], repo, &[], &list),
    );
    let params = serde_json::json!([{"name": "set", "map": {argument: "1"}}]).to_string();
    let cmp = capped(
        &Door::Cmp.exe(),
        &["generate"],
        &repo.join("app"),
        &[
            ("ARGOCD_APP_NAME", "hostile"),
            ("ARGOCD_APP_NAMESPACE", "default"),
            ("ARGOCD_APP_SOURCE_PATH", "app"),
            ("ARGOCD_APP_PARAMETERS", &params),
            ("KUBE_VERSION", "1.37.1"),
        ],
        "",
    );
    refused("kiln-cmp set", Door::Cmp, &cmp);
    // The same depth in a package's kpatch path, read by every door.
    write(
        repo,
        "app/pkg.kurel/patches/10-deep.kpatch",
        &format!("[configmap.x]\ndata.{deep}: \"1\"\n"),
    );
    for door in [Door::Cli, Door::Krm, Door::Cmp, Door::Flux] {
        let out = through(door, repo, "app");
        let what = format!("kpatch path through {door:?}");
        refused(&what, door, &out);
    }
    // A million index groups: parsed in linear time (a copy of the rest of the line per group
    // made it hours), then refused like any path that deep, well within the time limit.
    write(
        repo,
        "app/pkg.kurel/patches/10-deep.kpatch",
        &format!("[configmap.x]\ndata{}: \"1\"\n", "[0]".repeat(1_000_000)),
    );
    refused(
        "kpatch index groups",
        Door::Cli,
        &through(Door::Cli, repo, "app"),
    );
}

/// A namespace from a door's options is what kiln writes into every namespaced object that
/// sets none (issue 39): `../../etc` and a million characters were written with exit 0. Every
/// door now refuses one the API server would refuse, in its words (KLN1010), the value quoted
/// short and never written: the CLI's `-n`, kiln-krm's `namespace`, kiln-cmp's destination
/// namespace, kiln-flux's `-n`. (Namespaces in inputs and rendered objects: the cases
/// `testdata/bad/hostile/namespace-*`, through every door above; a Flux Kustomization's:
/// plugin-flux/tests/flux.rs.)
#[test]
fn namespaces_the_api_server_refuses_are_refused_by_every_door() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path();
    write(
        repo,
        "app/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
    );
    // An argument or environment variable holds at most 128 KiB; kiln-krm's stdin has no such
    // bound.
    let long = "a".repeat(100_000);
    let longest = "a".repeat(1_000_000);
    for ns in [
        "../../etc",
        "Web",
        "a.b",
        "",
        long.as_str(),
        longest.as_str(),
    ] {
        let what = |door: &str| format!("{door} namespace {:?}", &ns[..ns.len().min(12)]);
        let check = |door: Door, out: &Outcome, exit: i32| {
            let what = what(&format!("{door:?}"));
            assert_eq!(out.status, Some(exit), "{what}: {}", out.stderr);
            assert!(
                out.codes(door).contains("KLN1010"),
                "{what}: {}",
                out.stderr
            );
            assert!(
                out.stderr.contains("Invalid value: ")
                    && (out.stderr.contains("must be no more than 63 characters")
                        || out.stderr.contains("lowercase RFC 1123 label")
                        || out.stderr.contains("must not contain dots")),
                "{what}: {}",
                out.stderr
            );
            assert!(
                out.stderr.len() < 4_000,
                "{what}: {} bytes",
                out.stderr.len()
            );
            assert!(
                !out.stdout.contains("kind: ConfigMap"),
                "{what}: {}",
                out.stdout
            );
        };
        if ns.len() < 1_000_000 {
            let cli = capped(
                &Door::Cli.exe(),
                &["render", "app", "-n", ns, "--diagnostics", "json"],
                repo,
                &[],
                "",
            );
            check(Door::Cli, &cli, 2);
            let flux = capped(
                &Door::Flux.exe(),
                &["build", "app", "-n", ns],
                repo,
                &[],
                "",
            );
            check(Door::Flux, &flux, 1);
        }
        // Argo CD gives no namespace as an empty one (unset).
        if !ns.is_empty() && ns.len() < 1_000_000 {
            let cmp = capped(
                &Door::Cmp.exe(),
                &["generate"],
                &repo.join("app"),
                &[
                    ("ARGOCD_APP_NAME", "hostile"),
                    ("ARGOCD_APP_NAMESPACE", ns),
                    ("ARGOCD_APP_SOURCE_PATH", "app"),
                    ("ARGOCD_APP_PARAMETERS", "null"),
                    ("KUBE_VERSION", "1.37.1"),
                ],
                "",
            );
            check(Door::Cmp, &cmp, 1);
        }
        let list = format!(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n\
             functionConfig:\n  apiVersion: fn.kiln.dev/v1alpha1\n  kind: Render\n  \
             metadata: {{name: render}}\n  spec: {{paths: [app], namespace: {ns:?}}}\n"
        );
        let krm = capped(&Door::Krm.exe(), &[], repo, &[], &list);
        check(Door::Krm, &krm, 1);
    }
}

/// Issue 39: values read from an input as large as the input limits allow, handed to CEL
/// functions whose result grows with them: `findAll("")` on a 30 MB string (a match per
/// character) and `json.unmarshal` of 20 million numbers. Each ends in KLN5007, under the memory
/// cap and the time limit of [`capped`], before anything that size is built.
#[test]
fn large_input_values_meet_the_evaluation_budget_not_the_memory_limit() {
    let rgd = |field: &str, expr: &str| {
        format!(
            "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {{name: big}}\n\
             spec:\n  schema:\n    apiVersion: v1alpha1\n    kind: Big\n    spec:\n      {field}: string\n  \
             resources:\n    - id: config\n      template:\n        apiVersion: v1\n        kind: ConfigMap\n        \
             metadata: {{name: \"${{schema.metadata.name}}\"}}\n        data:\n          v: '${{{expr}}}'\n"
        )
    };
    let cases = [
        (
            "s",
            "x".repeat(30_000_000),
            r#"string(size(schema.spec.s.findAll("")))"#,
        ),
        (
            "j",
            format!("[{}1]", "1,".repeat(20_000_000)),
            "string(size(json.unmarshal(schema.spec.j)))",
        ),
    ];
    for (field, value, expr) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let app = tmp.path().join("app");
        std::fs::create_dir(&app).unwrap();
        write(&app, "rgd.yaml", &rgd(field, expr));
        write(
            &app,
            "instance.yaml",
            &format!("apiVersion: kro.run/v1alpha1\nkind: Big\nmetadata: {{name: b}}\nspec:\n  {field}: \"{value}\"\n"),
        );
        let out = through(Door::Cli, tmp.path(), "app");
        assert_eq!(out.status, Some(1), "{expr}: {}", out.stderr);
        assert_eq!(
            out.codes(Door::Cli),
            BTreeSet::from(["KLN5007".to_string()]),
            "{expr}: {}",
            out.stderr.chars().take(600).collect::<String>()
        );
        assert!(out.stdout.is_empty(), "{expr}");
    }
}

// ---------------------------------------------------------------------------------------------
// Issue 39: what grows without bound from a small input.
// ---------------------------------------------------------------------------------------------

/// Whether a process whose environment holds `mark` is still running: a door's child left
/// behind after the door exited.
fn left_behind(mark: &str) -> Vec<String> {
    let needle = format!("KILN_TEST_MARK={mark}");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read(e.path().join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|kv| kv == needle.as_bytes()))
        })
        .map(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            String::from_utf8_lossy(&cmd).replace('\0', " ")
        })
        .collect()
}

/// kubectl on PATH, or a failure naming what to install: the build that never ends must be the
/// real kustomize's.
fn kubectl() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("kubectl"))
        .find(|p| p.is_file())
        .expect("kubectl 1.27 or newer (kustomize v5 is built in) is needed by this test")
}

/// `levels` overlays, each including the one below twice (through two directories with their
/// own `namePrefix`, so the objects do not collide): the top one is 2^levels ConfigMaps, and
/// kustomize's work doubles with every level before it prints anything.
fn doubling_overlays(root: &Path, levels: usize) {
    write(
        root,
        "ov/l0/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n",
    );
    write(root, "ov/l0/kustomization.yaml", "resources: [cm.yaml]\n");
    for i in 1..=levels {
        for side in ["a", "b"] {
            write(
                root,
                &format!("ov/l{i}/{side}/kustomization.yaml"),
                &format!("resources: [../../l{}]\nnamePrefix: {side}-\n", i - 1),
            );
        }
        write(
            root,
            &format!("ov/l{i}/kustomization.yaml"),
            "resources: [a, b]\n",
        );
    }
}

/// 24 levels of overlays are 16 million objects for kustomize, which neither door's build
/// would ever finish: kiln-cmp (an application directory with a kustomization) and kiln-flux's
/// preview (`--kustomization`) stop it at the time limit (set low here through
/// `KILN_KUSTOMIZE_TIMEOUT`), under the memory cap, with KLN1018, no output, and no kubectl
/// left running.
#[test]
fn a_kustomize_build_that_never_ends_is_stopped_by_every_door_that_runs_one() {
    let kubectl = kubectl().display().to_string();
    let tmp = tempfile::tempdir().unwrap();
    let checkout = tmp.path().join("repo");
    doubling_overlays(&checkout, 24);
    write(
        tmp.path(),
        "ks.yaml",
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n\
         metadata: {name: apps, namespace: flux-system}\n\
         spec: {interval: 10m, path: ./ov/l24, prune: true, sourceRef: {kind: GitRepository, name: repo}}\n",
    );
    let ks = tmp.path().join("ks.yaml").display().to_string();
    let root = checkout.display().to_string();
    for door in [Door::Cmp, Door::Flux] {
        let mark = format!("{door:?}-{}", std::process::id());
        let mut env = vec![
            ("KILN_KUSTOMIZE_TIMEOUT", "3"),
            ("KILN_TEST_MARK", mark.as_str()),
        ];
        let out = match door {
            Door::Cmp => {
                env.extend([
                    ("KILN_KUSTOMIZE", kubectl.as_str()),
                    ("ARGOCD_APP_NAME", "hostile"),
                    ("ARGOCD_APP_NAMESPACE", "default"),
                    ("ARGOCD_APP_SOURCE_PATH", "ov/l24"),
                    ("ARGOCD_APP_PARAMETERS", "null"),
                    ("KUBE_VERSION", "1.37.1"),
                ]);
                capped(
                    &door.exe(),
                    &["generate"],
                    &checkout.join("ov/l24"),
                    &env,
                    "",
                )
            }
            _ => capped(
                &door.exe(),
                &flux_preview(&ks, &root, &[]),
                tmp.path(),
                &env,
                "",
            ),
        };
        assert_eq!(out.status, Some(1), "{door:?}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{door:?}: {}", out.stdout);
        assert!(
            out.stderr.contains("error[KLN1018]")
                && out
                    .stderr
                    .contains("kustomize build did not finish within 3 s"),
            "{door:?}: {}",
            out.stderr
        );
        // A process killed with its group may be seen for a moment (SIGKILL is asynchronous).
        let since = Instant::now();
        loop {
            let left = left_behind(&mark);
            if left.is_empty() {
                break;
            }
            assert!(
                since.elapsed() < Duration::from_secs(10),
                "{door:?} left running: {left:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A 30 MB variable used 40 times is 1.2 GB of substituted text, over the 1 GiB output limit:
/// Flux substitution measures what it would build before building any of it, across objects
/// (40 ConfigMaps using it once each through `kiln-flux build --kustomization --substitute`,
/// one object using it 40 times) and in `kiln-flux envsubst` (whose environment holds at most
/// 128 KiB a variable: 100 KB used 12,000 times), so each ends in KLN8005 under the 1 GiB
/// memory cap instead of allocating the output first.
#[test]
fn a_large_variable_used_many_times_ends_at_the_output_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let big = "x".repeat(30_000_000);
    let cm = |name: &str, uses: usize| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}}}\ndata: {{v: \"{}\"}}\n",
            "${V}".repeat(uses)
        )
    };
    let many: Vec<String> = (0..40).map(|i| format!("cm{i:02}.yaml")).collect();
    for f in &many {
        write(tmp.path(), &format!("src/many/{f}"), &cm(&f[..4], 1));
    }
    write(
        tmp.path(),
        "src/many/kustomization.yaml",
        &format!("resources: [{}]\n", many.join(", ")),
    );
    write(tmp.path(), "src/one/cm.yaml", &cm("one", 40));
    write(
        tmp.path(),
        "src/one/kustomization.yaml",
        "resources: [cm.yaml]\n",
    );
    let root = tmp.path().join("src").display().to_string();
    for (dir, named) in [("many", "ConfigMap cm35"), ("one", "ConfigMap one")] {
        write(
            tmp.path(),
            "ks.yaml",
            &format!(
                "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n\
                 metadata: {{name: apps, namespace: flux-system}}\n\
                 spec:\n  interval: 10m\n  path: ./{dir}\n  prune: true\n  \
                 sourceRef: {{kind: GitRepository, name: repo}}\n  \
                 postBuild:\n    substitute:\n      V: {big}\n"
            ),
        );
        let ks = tmp.path().join("ks.yaml").display().to_string();
        let out = capped(
            &Door::Flux.exe(),
            &flux_preview(&ks, &root, &["--substitute"]),
            tmp.path(),
            &[],
            "",
        );
        assert_eq!(out.status, Some(1), "{dir}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{dir}: partial output");
        assert!(
            out.stderr.contains("error[KLN8005]")
                && out.stderr.contains(named)
                && out.stderr.contains("more than 1073741824 bytes"),
            "{dir}: {}",
            out.stderr
        );
        assert!(!out.stderr.contains("xxxx"), "{dir}: the value is quoted");
    }
    let value = "x".repeat(100_000);
    let out = capped(
        &Door::Flux.exe(),
        &["envsubst"],
        tmp.path(),
        &[("V", &value)],
        &"${V}".repeat(12_000),
    );
    assert_eq!(out.status, Some(1), "{}", out.stderr);
    assert!(out.stdout.is_empty(), "partial output");
    assert!(
        out.stderr.contains("error[KLN8005]") && out.stderr.contains("more than 1073741824 bytes"),
        "{}",
        out.stderr
    );
}

/// `git` in `dir` with `stdin`, as the diff tests run it (fixed identity and dates, no user
/// configuration); its stdout.
fn git_fed(dir: &Path, args: &[&str], stdin: &str) -> String {
    let o = Cmd::new("git")
        .dir(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "kiln")
        .env("GIT_AUTHOR_EMAIL", "kiln@localhost")
        .env("GIT_COMMITTER_NAME", "kiln")
        .env("GIT_COMMITTER_EMAIL", "kiln@localhost")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .stdin(stdin)
        .output();
    assert!(o.status.success(), "git {args:?}: {}", text(&o.stderr));
    text(&o.stdout).trim().to_string()
}

/// Git stores a tree once however often it is named: a tree of 5,000 files referenced 5,000
/// times from a directory beside the application is 25 million paths in a repository of a few
/// hundred kilobytes. `kiln diff` of the application reads only what a render of it reads, so
/// it succeeds under the 1 GiB memory cap (walking the whole revision ran out of memory);
/// naming the expanding directory ends in the `tree-entries` limit (KLN1005), exit 4, nothing
/// on stdout.
#[test]
fn a_tree_referenced_millions_of_times_is_not_walked_by_kiln_diff() {
    let tmp = tempfile::tempdir().unwrap();
    let r = tmp.path();
    git_fed(r, &["init", "-q", "-b", "main"], "");
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, namespace: shop}\ndata: {mode: slow}\n";
    write(r, "apps/web/cm.yaml", cm);
    git_fed(r, &["add", "apps/web/cm.yaml"], "");
    let blob = git_fed(r, &["hash-object", "-w", "--stdin"], "a: 1\n");
    let lines = |mode: &str, kind: &str, id: &str| -> String {
        (0..5000)
            .map(|i| format!("{mode} {kind} {id}\tf{i:04}\n"))
            .collect()
    };
    let inner = git_fed(r, &["mktree"], &lines("100644", "blob", &blob));
    let bomb = git_fed(r, &["mktree"], &lines("040000", "tree", &inner));
    let web = git_fed(r, &["write-tree", "--prefix=apps/web/"], "");
    let apps = git_fed(
        r,
        &["mktree"],
        &format!("040000 tree {bomb}\tbomb\n040000 tree {web}\tweb\n"),
    );
    let top = git_fed(r, &["mktree"], &format!("040000 tree {apps}\tapps\n"));
    let commit = git_fed(r, &["commit-tree", top.as_str(), "-m", "bomb"], "");
    git_fed(r, &["update-ref", "HEAD", commit.as_str()], "");
    // The working tree changes the application (the bomb is in the revision only).
    write(r, "apps/web/cm.yaml", &cm.replace("slow", "fast"));
    let exe = Door::Cli.exe();
    let out = capped(&exe, &["diff", "apps/web", "--color", "never"], r, &[], "");
    assert_eq!(out.status, Some(0), "{}", out.stderr);
    assert!(
        out.stdout.contains("-  mode: slow") && out.stdout.contains("+  mode: fast"),
        "{}",
        out.stdout
    );
    for args in [
        &["diff", "apps/bomb"][..],
        &["diff", "apps/web", "apps/bomb", "--diagnostics", "json"],
    ] {
        let out = capped(&exe, args, r, &[], "");
        assert_eq!(out.status, Some(4), "{args:?}: {}", out.stderr);
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
        assert!(
            out.stderr.contains("KLN1005")
                && out
                    .stderr
                    .contains("more than 1000000 entries, the limit (tree-entries)")
                && out.stderr.contains("--limit tree-entries=N"),
            "{args:?}: {}",
            out.stderr
        );
    }
    // The limit is the user's: one of the 5,000 directories holds 5,000 entries.
    for (limit, over) in [("tree-entries=4999", true), ("tree-entries=5000", false)] {
        let out = capped(
            &exe,
            &["diff", "apps/bomb/f0001", "--limit", limit],
            r,
            &[],
            "",
        );
        assert_eq!(
            out.stderr
                .contains("more than 4999 entries, the limit (tree-entries)"),
            over,
            "{limit}: {}",
            out.stderr
        );
    }
}
