//! Running a README's commands as it says to (issue 23.18): every line of its ```sh blocks, in
//! order, from a copy of the repository's files, as a shell would run it.
//!
//! A line is split at `&&` into steps; a comment (`#` after a blank) is dropped. A step `cd DIR`
//! changes the working directory for the rest of the README, as in a shell; leading
//! `NAME=VALUE` words set the step's environment; `cargo install --locked --path CRATE` is
//! checked (the crate exists, the `--locked` flag is there) and stands for the test's own build
//! of that crate, whose binary is put first on `PATH`; a program listed in `not_run` (docker) is
//! checked to be named but not run. Every other step must exit 0.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::repo;

/// The lines of a README's ```sh blocks, comments dropped.
pub fn sh_lines(readme: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    for line in readme.lines() {
        match line.trim() {
            "```sh" => in_sh = true,
            "```" => in_sh = false,
            l if in_sh => {
                let l = match l.find(" #") {
                    Some(i) => &l[..i],
                    None if l.starts_with('#') => "",
                    None => l,
                };
                if !l.trim().is_empty() {
                    out.push(l.trim().to_string());
                }
            }
            _ => {}
        }
    }
    out
}

/// Copy `rel` (a directory of the repository) into `to` at the same relative path.
pub fn copy_in(rel: &str, to: &Path) {
    crate::copy_dir(&repo().join(rel), &to.join(rel));
}

/// One step the README ran, and its output.
pub struct Ran {
    /// The step as written.
    pub step: String,
    /// Its output.
    pub output: Output,
}

/// Run the README at `readme` (relative to the repository) in `root` (a copy of what it needs).
/// `bins`: the program names the README may run, with the executable for each (the test's
/// build for a workspace binary, the real tool otherwise); `installs`: the crates the README
/// must install with `cargo install --locked --path`; `env`: extra environment for every step.
pub fn run(
    readme: &str,
    root: &Path,
    bins: &[(&str, PathBuf)],
    installs: &[&str],
    not_run: &[&str],
    env: &[(&str, String)],
) -> Vec<Ran> {
    let text = std::fs::read_to_string(repo().join(readme)).unwrap();
    let lines = sh_lines(&text);
    assert!(!lines.is_empty(), "{readme} has no sh block");
    let mut path: Vec<PathBuf> = bins
        .iter()
        .filter_map(|(_, p)| p.parent().map(Path::to_path_buf))
        .collect();
    path.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let path = std::env::join_paths(path).unwrap();
    let mut cwd = root.to_path_buf();
    let mut installed = Vec::new();
    let mut ran = Vec::new();
    for line in &lines {
        for step in line.split("&&").map(str::trim) {
            let mut words: Vec<&str> = step.split_whitespace().collect();
            let mut vars = Vec::new();
            while let Some((k, v)) = words.first().and_then(|w| w.split_once('=')) {
                if k.is_empty() || !k.chars().all(|c| c.is_ascii_uppercase() || c == '_') {
                    break;
                }
                vars.push((k.to_string(), v.to_string()));
                words.remove(0);
            }
            match words.as_slice() {
                ["cd", dir] => {
                    cwd = cwd.join(dir);
                    assert!(cwd.is_dir(), "{readme}: `{step}`: no such directory");
                }
                ["cargo", "install", rest @ ..] => {
                    assert!(
                        rest.contains(&"--locked"),
                        "{readme}: `{step}` without --locked"
                    );
                    let i = rest.iter().position(|w| *w == "--path").expect("--path");
                    let krate = rest[i + 1];
                    assert!(
                        repo().join(krate).join("Cargo.toml").is_file(),
                        "{readme}: `{step}`: no crate at {krate}"
                    );
                    installed.push(krate.to_string());
                }
                [program, ..] if not_run.contains(program) => {}
                [program, args @ ..] => {
                    let exe = bins
                        .iter()
                        .find(|(n, _)| n == program)
                        .map(|(_, p)| p.clone())
                        .unwrap_or_else(|| {
                            panic!("{readme}: `{step}`: the test cannot run {program}")
                        });
                    let mut c = Command::new(exe);
                    c.args(args)
                        .current_dir(&cwd)
                        .stdin(Stdio::null())
                        .env("PATH", &path);
                    for (k, v) in env {
                        c.env(k, v);
                    }
                    for (k, v) in &vars {
                        c.env(k, v);
                    }
                    let output = c.output().unwrap();
                    assert_eq!(
                        output.status.code(),
                        Some(0),
                        "{readme}: `{step}`:\n{}",
                        String::from_utf8_lossy(&output.stderr)
                    );
                    ran.push(Ran {
                        step: step.to_string(),
                        output,
                    });
                }
                [] => {}
            }
        }
    }
    for k in installs {
        assert!(
            installed.iter().any(|i| i == k),
            "{readme} does not say `cargo install --locked --path {k}`"
        );
    }
    ran
}
