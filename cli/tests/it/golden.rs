//! Golden cases: every folder under `testdata/` that holds an `expected.yaml` or `expected-errors.txt`
//! is rendered by the real `kiln` binary and compared.
//!
//! - Inputs are the folder's `*.yaml`, `*.yml` and `*.json` files (except `expected*`), in name order,
//!   rendered with `kiln render`, plus the flags listed in an optional `args` file. The only flag
//!   the harness adds is `--diagnostics json` (it reads the diagnostics; stdout does not change):
//!   a case's output is what the command its files spell prints, so a doc or `--help` example
//!   that names a case's files prints the case's expected output.
//!   An optional `command` file names another subcommand to run instead of `render` (`status`).
//! - `expected.yaml`: exit 0, and stdout parses to the same documents, in the same order, with the same
//!   keys in the same order and the same scalar types.
//! - `expected-errors.txt`: exit 1, nothing on stdout, and the error diagnostics (for a run that
//!   failed on warnings alone, under `--strict`, the warnings), one per line as
//!   `CODE FILE[:LINE] PATH: MESSAGE` (file name only), are exactly these lines. Each must also
//!   carry a hint.
//! - `expected-warnings.txt`: the warnings, in the same form, of either kind of case (for a
//!   `--strict` failure they are the errors above instead). Without the file a case must warn of
//!   nothing: a warning is part of what a case specifies.
//!
//! Every folder with an `args`, `command` or `expected-warnings.txt` file must be a case, and no
//! folder may hold both `expected.yaml` and `expected-errors.txt`: a case that does not run
//! fails the suite instead of passing unseen.
//!
//! `KILN_BLESS=1 cargo test -p kiln --test it golden` rewrites the expected files from the actual output; a
//! blessed file must then be read and checked by hand before it is committed. Blessing is refused
//! when `CI` is set, where it would turn every mismatch into a pass.

use crate::common::KILN;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata")
}

fn cases(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            if p.join("expected.yaml").exists() || p.join("expected-errors.txt").exists() {
                out.push(p.clone());
            }
            cases(&p, out);
        }
    }
}

fn inputs(case: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(case)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            p.is_file()
                && !name.starts_with("expected")
                && (name.ends_with(".yaml") || name.ends_with(".yml") || name.ends_with(".json"))
        })
        .collect();
    files.sort();
    files
}

fn parse_stream(text: &str) -> Result<Vec<Value>, String> {
    kiln_yaml(text)
}

/// Parse with the same reader kiln uses, so types are judged by one set of rules.
fn kiln_yaml(text: &str) -> Result<Vec<Value>, String> {
    kiln_core::document::parse_file("expected.yaml", text.to_string(), &Default::default())
        .map(|docs| docs.into_iter().map(|d| d.value).collect())
        .map_err(|d| d.to_string())
}

fn canonical(docs: &[Value]) -> Vec<String> {
    // serde_json keeps key order (preserve_order), so this compares order and types exactly.
    docs.iter()
        .map(|d| serde_json::to_string_pretty(d).unwrap())
        .collect()
}

/// Which diagnostics of a run a list holds.
#[derive(Clone, Copy, PartialEq)]
enum Severity {
    /// The errors (for a run that failed on warnings alone, under `--strict`, the warnings).
    Errors,
    /// The warnings (none for such a `--strict` failure: they are its errors).
    Warnings,
}

fn diag_lines(stderr: &str, which: Severity, failed: bool) -> Result<Vec<String>, String> {
    if stderr.trim().is_empty() {
        return Ok(Vec::new());
    }
    let v: Value =
        serde_json::from_str(stderr).map_err(|e| format!("stderr is not JSON ({e}): {stderr}"))?;
    let mut lines = Vec::new();
    let all = v["diagnostics"].as_array().ok_or("no diagnostics array")?;
    // A run that failed on warnings alone (`--strict`) is specified by its warnings.
    let strict_failure = failed && all.iter().all(|d| d["severity"] != "error");
    for d in all {
        let is_error = d["severity"] == "error" || strict_failure;
        if is_error != (which == Severity::Errors) {
            continue;
        }
        if is_error && d["hint"].as_str().is_none_or(str::is_empty) {
            return Err(format!("error without a hint: {d}"));
        }
        let file = d["file"]
            .as_str()
            .map(|f| {
                Path::new(f)
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .to_string()
            })
            .ok_or_else(|| format!("diagnostic without a file: {d}"))?;
        let loc = match d["line"].as_u64() {
            Some(l) => format!("{file}:{l}"),
            None => file,
        };
        let path = d["path"]
            .as_str()
            .map(|p| format!(" {p}:"))
            .unwrap_or_default();
        lines.push(format!(
            "{} {loc}{path} {}",
            d["code"].as_str().unwrap(),
            d["message"].as_str().unwrap()
        ));
    }
    Ok(lines)
}

/// The lines of an expected list; a missing file is the empty list, an unreadable one an error
/// (never "no diagnostics expected").
fn expected_lines(path: &Path) -> Result<Vec<String>, String> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    Ok(text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect())
}

/// Compare one list of diagnostics with its file, or rewrite the file when blessing.
fn compare_lines(file: &Path, got: &[String], bless: bool, what: &str) -> Result<(), String> {
    let want = expected_lines(file)?;
    if want == got {
        return Ok(());
    }
    if bless {
        if got.is_empty() {
            fs::remove_file(file).map_err(|e| e.to_string())?;
        } else {
            fs::write(file, got.join("\n") + "\n").map_err(|e| e.to_string())?;
        }
        return Ok(());
    }
    Err(format!(
        "{what} differ.\n--- expected\n{}\n--- actual\n{}",
        want.join("\n"),
        got.join("\n")
    ))
}

fn run_case(case: &Path, bless: bool) -> Result<(), String> {
    let mut cmd = Command::new(KILN);
    let sub = fs::read_to_string(case.join("command")).unwrap_or_else(|_| "render".into());
    cmd.arg(sub.trim()).arg("--diagnostics").arg("json");
    if let Ok(extra) = fs::read_to_string(case.join("args")) {
        cmd.args(extra.split_whitespace());
    }
    // Run inside the case folder with relative names, so diagnostics name files portably.
    cmd.current_dir(case);
    cmd.args(
        inputs(case)
            .iter()
            .map(|p| p.file_name().unwrap().to_owned()),
    );
    let out = cmd.output().map_err(|e| e.to_string())?;
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let code = out.status.code();

    let expected_yaml = case.join("expected.yaml");
    let warnings = case.join("expected-warnings.txt");
    if expected_yaml.exists() {
        if code != Some(0) {
            return Err(format!("exit {code:?}, stderr:\n{stderr}"));
        }
        compare_lines(
            &warnings,
            &diag_lines(&stderr, Severity::Warnings, false)?,
            bless,
            "warnings",
        )?;
        let want = parse_stream(&fs::read_to_string(&expected_yaml).unwrap())?;
        let got = parse_stream(&stdout)?;
        let (w, g) = (canonical(&want), canonical(&got));
        if w != g && bless {
            // Only cases that differ are rewritten, so hand-written files that agree stay as written.
            fs::write(&expected_yaml, &stdout).unwrap();
            return Ok(());
        }
        if w != g {
            return Err(format!(
                "output differs.\n--- expected ({} docs)\n{}\n--- actual ({} docs)\n{}",
                w.len(),
                w.join("\n"),
                g.len(),
                g.join("\n")
            ));
        }
        return Ok(());
    }

    let expected_errors = case.join("expected-errors.txt");
    if code != Some(1) {
        return Err(format!(
            "expected exit 1, got {code:?}; stdout:\n{stdout}\nstderr:\n{stderr}"
        ));
    }
    if !stdout.is_empty() {
        return Err(format!("partial output on stdout:\n{stdout}"));
    }
    compare_lines(
        &expected_errors,
        &diag_lines(&stderr, Severity::Errors, true)?,
        bless,
        "diagnostics",
    )?;
    compare_lines(
        &warnings,
        &diag_lines(&stderr, Severity::Warnings, true)?,
        bless,
        "warnings",
    )
}

/// Folders that look like cases but would not run: a harness file beside no expectation, or two
/// expectations that contradict each other.
fn unrun_cases(dir: &Path, out: &mut Vec<String>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    let has = |n: &str| dir.join(n).exists();
    let is_case = has("expected.yaml") || has("expected-errors.txt");
    if has("expected.yaml") && has("expected-errors.txt") {
        out.push(format!(
            "{}: both expected.yaml and expected-errors.txt",
            dir.display()
        ));
    }
    for marker in ["args", "command", "expected-warnings.txt"] {
        if has(marker) && !is_case {
            out.push(format!(
                "{}: {marker} but no expected.yaml or expected-errors.txt",
                dir.display()
            ));
        }
    }
    for p in entries {
        if p.is_dir() && !p.is_symlink() {
            unrun_cases(&p, out);
        }
    }
}

#[test]
fn golden_cases() {
    let bless = std::env::var_os("KILN_BLESS").is_some();
    assert!(
        !(bless && std::env::var_os("CI").is_some()),
        "KILN_BLESS is refused under CI: it would turn every mismatch into a pass"
    );
    let mut all = Vec::new();
    cases(&testdata(), &mut all);
    let mut unrun = Vec::new();
    unrun_cases(&testdata(), &mut unrun);
    assert!(
        unrun.is_empty(),
        "case folders that would not run:\n{}",
        unrun.join("\n")
    );
    let mut failures = Vec::new();
    for case in &all {
        if let Err(e) = run_case(case, bless) {
            failures.push(format!(
                "== {}\n{e}",
                case.strip_prefix(testdata()).unwrap().display()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} golden cases failed:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n\n")
    );
}
