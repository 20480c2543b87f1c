//! What README.md and docs/*.md show as commands runs as shown (issue 40: 13 of 183 documented
//! claims were false, and nothing ran the docs' commands).
//!
//! Every fenced block of commands is one of two kinds, so the docs stay readable:
//!
//! - ```` ```console ````: a `$ COMMAND` line, then what it prints (stdout, then stderr), run from
//!   the repository root against its examples and testdata with `NO_COLOR=1`. A `...` line stands
//!   for any number of lines (an abridged output); a last line `[exit N]` is the exit status
//!   expected (else 0). Lines are compared without trailing blanks.
//! - ```` ```sh ```` (or `console`) right after a comment `<!-- not run: REASON -->`: commands
//!   that cannot run here (a cluster, Argo CD or Flux controllers, network, installing), shown
//!   but not run. The reason is required.
//!
//! A block of commands that is neither fails the test: an example nobody runs is a claim nobody
//! checks. `kiln --help`'s examples run in `help.rs`; the examples' READMEs in `examples.rs` and
//! the door crates' tests.

use crate::common::KILN;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .canonicalize()
        .unwrap()
}

/// The documents whose commands are checked.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![repo().join("README.md")];
    let mut more: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    more.sort();
    docs.extend(more);
    docs
}

/// One fenced block of commands.
struct Block {
    /// `FILE:LINE` of its opening fence.
    at: String,
    /// The reason given in a `<!-- not run: … -->` comment just before it.
    not_run: Option<String>,
    /// `console` (runs) or `sh`.
    console: bool,
    lines: Vec<String>,
}

fn blocks(doc: &Path) -> Vec<Block> {
    let text = std::fs::read_to_string(doc).unwrap();
    let name = doc.strip_prefix(repo()).unwrap().display().to_string();
    let mut out = Vec::new();
    let mut previous = "";
    let mut open: Option<Block> = None;
    for (i, line) in text.lines().enumerate() {
        if let Some(b) = open.as_mut() {
            if line.trim_start().starts_with("```") {
                out.push(open.take().unwrap());
                previous = line;
            } else {
                b.lines.push(line.to_string());
            }
            continue;
        }
        let fence = line.trim_start();
        if let Some(info) = fence.strip_prefix("```") {
            let info = info.trim();
            if info == "sh" || info == "console" {
                let not_run = previous
                    .trim()
                    .strip_prefix("<!-- not run:")
                    .and_then(|r| r.strip_suffix("-->"))
                    .map(|r| r.trim().to_string());
                open = Some(Block {
                    at: format!("{name}:{}", i + 1),
                    not_run,
                    console: info == "console",
                    lines: Vec::new(),
                });
            } else if !info.is_empty() || fence == "```" {
                // Another language, or an unlabelled block (output, diagrams): skip to its end.
                open = Some(Block {
                    at: String::new(),
                    not_run: Some("not commands".into()),
                    console: false,
                    lines: Vec::new(),
                });
            }
        }
        if !line.trim().is_empty() {
            previous = line;
        }
    }
    out.retain(|b| !b.at.is_empty());
    out
}

/// The commands of a console block, each with the lines it should print and its exit status.
fn examples(b: &Block) -> Vec<(String, Vec<String>, i32)> {
    let mut out: Vec<(String, Vec<String>, i32)> = Vec::new();
    for line in &b.lines {
        if let Some(cmd) = line.strip_prefix("$ ") {
            out.push((cmd.trim().to_string(), Vec::new(), 0));
        } else if let Some(last) = out.last_mut() {
            match line
                .trim()
                .strip_prefix("[exit ")
                .and_then(|r| r.strip_suffix(']'))
            {
                Some(code) => last.2 = code.parse().expect("[exit N]"),
                None => last.1.push(line.trim_end().to_string()),
            }
        } else {
            panic!("{}: console output before any `$ ` line", b.at);
        }
    }
    out
}

/// Whether `got` matches `want`, where a `...` line of `want` stands for any lines.
fn matches(want: &[String], got: &[&str]) -> bool {
    match want.split_first() {
        None => got.is_empty(),
        Some((w, rest)) if w == "..." => (0..=got.len()).any(|i| matches(rest, &got[i..])),
        Some((w, rest)) => got
            .split_first()
            .is_some_and(|(g, more)| g.trim_end() == w && matches(rest, more)),
    }
}

fn run(at: &str, cmd: &str) -> (String, i32) {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    assert!(
        !cmd.contains(['|', '<', '>', '&', ';', '$', '`', '"', '\'']),
        "{at}: `{cmd}`: a console example is one command with plain words"
    );
    let exe = match words[0] {
        "kiln" => KILN,
        other => panic!("{at}: `{cmd}`: the test runs kiln; mark a block of {other} `not run`"),
    };
    let o = Command::new(exe)
        .args(&words[1..])
        .current_dir(repo())
        .env("NO_COLOR", "1")
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (text, o.status.code().unwrap_or(-1))
}

#[test]
fn every_command_in_the_docs_runs_as_shown_or_says_why_not() {
    let mut problems = Vec::new();
    let mut ran = 0;
    for doc in documents() {
        for b in blocks(&doc) {
            match &b.not_run {
                Some(reason) if reason.is_empty() => {
                    problems.push(format!("{}: `not run` without a reason", b.at))
                }
                Some(_) => {}
                None if !b.console => problems.push(format!(
                    "{}: a sh block that is not run: make it a console block with its output, or say `<!-- not run: REASON -->` before it",
                    b.at
                )),
                None => {
                    for (cmd, want, code) in examples(&b) {
                        let (got, status) = run(&b.at, &cmd);
                        let lines: Vec<&str> = got.lines().collect();
                        if status != code || !matches(&want, &lines) {
                            problems.push(format!(
                                "{}: `{cmd}`: exit {status} (expected {code}); it printed:\n{got}\n--- the doc shows:\n{}",
                                b.at,
                                want.join("\n")
                            ));
                        }
                        ran += 1;
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
    assert!(ran >= 3, "only {ran} documented commands ran");
}

#[test]
fn dots_stand_for_any_lines() {
    let w = |s: &[&str]| s.iter().map(|l| l.to_string()).collect::<Vec<_>>();
    assert!(matches(&w(&["a", "...", "d"]), &["a", "b", "c", "d"]));
    assert!(matches(&w(&["a", "...", "d"]), &["a", "d"]));
    assert!(!matches(&w(&["a", "d"]), &["a", "b", "d"]));
    assert!(!matches(&w(&["a", "..."]), &["b"]));
}
