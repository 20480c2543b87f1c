//! Fuzz regressions, replayed on stable Rust in the ordinary test suite.
//!
//! The fuzz targets' bodies (`fuzz/src/targets.rs`) are compiled into this test as they are, so a
//! saved input runs through exactly the code libFuzzer ran it through. Inputs live in
//! `fuzz/regressions/TARGET/NAME`: every input that once crashed a target, minimised with
//! `cargo fuzz tmin` (crashes in kro/component/kurel render inputs are golden cases under
//! `testdata/bad/fuzz/` instead), plus hand-written hostile inputs for each target.
//!
//! libFuzzer aborts on any panic, including one that kiln catches itself (a panicking parser
//! thread is joined and reported as an error); a test would not notice those, so a panic hook
//! counts every panic and the replay fails if there was any.

#[path = "../../fuzz/src/targets.rs"]
#[allow(dead_code)]
mod targets;

/// The `envsubst` target keeps its body in its own file (see its module doc).
#[path = "../../fuzz/fuzz_targets/envsubst.rs"]
#[allow(dead_code)]
mod envsubst_target;

/// So does the `yaml_fast` target.
#[path = "../../fuzz/fuzz_targets/yaml_fast.rs"]
#[allow(dead_code)]
mod yaml_fast_target;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The stack of the `kiln` binary's main thread, where it reads and parses inputs (the targets
/// move evaluation to a worker with the CLI's worker stack themselves).
const MAIN_STACK: usize = 8 << 20;

/// A saved input must finish well within this (debug build); a slower one is a regression of a
/// timeout finding.
const PER_INPUT: Duration = Duration::from_secs(60);

static PANICS: AtomicUsize = AtomicUsize::new(0);
/// The hook is process-wide; tests that install it take turns.
static HOOK: Mutex<()> = Mutex::new(());

fn regressions() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions")
}

fn target(name: &str) -> targets::Target {
    targets::TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("fuzz/regressions/{name}: no such fuzz target"))
        .1
}

/// One input for one target.
struct Input {
    label: String,
    target: targets::Target,
    data: Vec<u8>,
}

impl Input {
    fn new(label: impl Into<String>, target: targets::Target, data: impl Into<Vec<u8>>) -> Self {
        Self {
            label: label.into(),
            target,
            data: data.into(),
        }
    }
}

/// Run inputs through their targets on a thread with the CLI's main stack, counting panics.
fn replay(inputs: Vec<Input>) -> Result<(), String> {
    let _guard = HOOK.lock().unwrap_or_else(|e| e.into_inner());
    PANICS.store(0, Ordering::SeqCst);
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        default_hook(info);
    }));
    let result = std::thread::Builder::new()
        .stack_size(MAIN_STACK)
        .spawn(move || {
            let mut failures = Vec::new();
            for input in inputs {
                let before = PANICS.load(Ordering::SeqCst);
                let start = Instant::now();
                let outcome = std::panic::catch_unwind(|| (input.target)(&input.data));
                let took = start.elapsed();
                if outcome.is_err() || PANICS.load(Ordering::SeqCst) > before {
                    failures.push(format!("{}: panicked", input.label));
                } else if took > PER_INPUT {
                    failures.push(format!("{}: took {took:?}", input.label));
                }
            }
            failures
        })
        .expect("replay thread starts")
        .join();
    let _ = std::panic::take_hook();
    match result {
        Ok(failures) if failures.is_empty() => Ok(()),
        Ok(failures) => Err(failures.join("\n")),
        Err(_) => Err("the replay thread died".into()),
    }
}

#[test]
fn saved_inputs_replay_without_panics() {
    let mut inputs = Vec::new();
    let mut dirs: Vec<_> = std::fs::read_dir(regressions())
        .expect("fuzz/regressions exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let f = target(&name);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        for file in files {
            let label = format!("{name}/{}", file.file_name().unwrap().to_string_lossy());
            inputs.push(Input::new(label, f, std::fs::read(&file).unwrap()));
        }
    }
    assert!(
        inputs.len() >= targets::TARGETS.len(),
        "only {} saved inputs",
        inputs.len()
    );
    if let Err(e) = replay(inputs) {
        panic!("saved fuzz inputs failed:\n{e}");
    }
}

/// Every target must survive the degenerate inputs libFuzzer starts from.
#[test]
fn every_target_takes_trivial_inputs() {
    let mut inputs = Vec::new();
    for (name, f) in targets::TARGETS {
        for data in [&b""[..], b"\n", b"\xff", b"~", b"{}", b"[]", b"${}", b"\0"] {
            inputs.push(Input::new(format!("{name}/{data:?}"), *f, data));
        }
    }
    if let Err(e) = replay(inputs) {
        panic!("{e}");
    }
}

/// The replay must see a panic that the code under test catches itself, as libFuzzer does.
#[test]
fn replay_counts_caught_panics() {
    fn caught(_: &[u8]) {
        let _ = std::panic::catch_unwind(|| panic!("caught inside the target"));
    }
    fn quiet(_: &[u8]) {}
    let refused = replay(vec![Input::new("caught", caught, b"")]).expect_err("an error");
    assert_eq!(refused, "caught: panicked");
    assert!(replay(vec![Input::new("quiet", quiet, b"")]).is_ok());
}

/// Found by the `kpatch` target (artifact `crash-3ebcaa6c…`, minimised to 11 bytes): in
/// `kurel/kpatch.rs` `parse_path`, text after a bracket group that starts with `]` was taken for
/// another group and sliced `1..0` (a panic, KLN9001). Now a syntax error
/// (`testdata/bad/fuzz/kpatch-bracket-after-group`).
#[test]
fn kpatch_header_with_bracket_after_group() {
    let input = Input::new(
        "kpatch/bracket-after-group",
        targets::kpatch,
        b"[a.b.c[0]]]\n",
    );
    if let Err(e) = replay(vec![input]) {
        panic!("{e}");
    }
}

/// The `envsubst` target (not in `targets::TARGETS`: its body is in its own file) on the
/// degenerate inputs libFuzzer starts from and on hand-written hostile ones: deep nesting,
/// text multiplied by replacing the empty pattern, long trim patterns, long runs of `$`, a
/// variables section, YAML objects with quoted fields and escapes.
#[test]
fn envsubst_target_takes_hostile_inputs() {
    let f: targets::Target = envsubst_target::run;
    let mut inputs = Vec::new();
    for data in [
        &b""[..],
        b"\n",
        b"\xff",
        b"~",
        b"{}",
        b"[]",
        b"${}",
        b"\0",
        b"$",
        b"$$",
    ] {
        inputs.push(Input::new(format!("envsubst/{data:?}"), f, data));
    }
    let hostile: Vec<(&str, Vec<u8>)> = vec![
        ("deep", "${a:-".repeat(10_000).into_bytes()),
        ("deep-closed", format!("{}x{}", "${a:-".repeat(64), "}".repeat(64)).into_bytes()),
        (
            "multiply",
            b"v=xxxxxxxxxxxxxxxx\0${v///${v///${v///${v///${v}}}}}".to_vec(),
        ),
        ("long-glob", format!("v={}\0${{v%%{}}}", "a".repeat(3000), "*a?".repeat(300)).into_bytes()),
        ("dollars", "$".repeat(5000).into_bytes()),
        ("dollar-brace", "${".repeat(2000).into_bytes()),
        ("escapes", r"${a/\/\/\//$$$$}".repeat(200).into_bytes()),
        (
            "yaml-object",
            b"a=1\nbad-name=2\0kind: K\nmetadata: {name: \"${a}\"}\ndata:\n  q: \"${a} $$\"\n  s: '${b:-x}'\n  ${a}: [${a}, \"$${a}\"]\n".to_vec(),
        ),
        ("yaml-breaks", b"s=a: b\0kind: K\ndata:\n  x: ${s}\n  y: \"${s}\"\n".to_vec()),
        ("non-ascii", "u=é€😀\0${u:1} ${u#?} ${u%?} ${u^^} ${#u} ${u/€/e}".as_bytes().to_vec()),
    ];
    for (name, data) in hostile {
        inputs.push(Input::new(format!("envsubst/{name}"), f, data));
    }
    if let Err(e) = replay(inputs) {
        panic!("{e}");
    }
}

/// The `yaml_fast` target (its body is in its own file, like `envsubst`'s) on the degenerate
/// inputs libFuzzer starts from and on inputs at the edges of the fast YAML reader's subset:
/// limits, comment runs, escapes, line ends, flow nesting, numbers.
#[test]
fn yaml_fast_target_takes_edge_inputs() {
    let f: targets::Target = yaml_fast_target::run;
    let mut inputs = Vec::new();
    for data in [
        &b""[..],
        b"\n",
        b"\xff",
        b"~",
        b"{}",
        b"[]",
        b"---",
        b"-",
        b"a:",
        b":",
        b"- -",
        b"a: b: c",
    ] {
        inputs.push(Input::new(format!("yaml_fast/{data:?}"), f, data));
    }
    let edges: Vec<(&str, String)> = vec![
        (
            "deep-block",
            (0..200).map(|d| format!("{}k:\n", " ".repeat(d))).collect(),
        ),
        (
            "deep-flow",
            format!("a: {}{}\n", "[".repeat(200), "]".repeat(200)),
        ),
        ("nodes", format!("a: [{}]\n", vec!["1"; 70].join(", "))),
        ("documents", "a: 1\n---\n".repeat(6)),
        ("comments", format!("a:\n{}  b: 1\n", "# c\n".repeat(40))),
        (
            "escapes",
            "a: \"\\x41\\u00e9\\U0001F600\\N\\_\\L\\P\\ud800\"\n".into(),
        ),
        ("crlf", "a: 1\r\nb:\r\n- x\r\n".into()),
        (
            "numbers",
            "a: [0777, 08, 1e3, 0x1F, 1_000, .inf, -0, 1.0.0, 2001-12-14]\n".into(),
        ),
        ("long-key", format!("{}: v\n", "k".repeat(2000))),
    ];
    for (name, data) in edges {
        inputs.push(Input::new(
            format!("yaml_fast/{name}"),
            f,
            data.into_bytes(),
        ));
    }
    if let Err(e) = replay(inputs) {
        panic!("{e}");
    }
}
