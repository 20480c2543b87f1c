//! Running a program as a test does: a builder over [`Command`] that writes the input from
//! another thread, so that a program that stops reading early (an input over its limit) is not an
//! error of the test, and the executables of the workspace.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;

/// A command to run: program, arguments, working directory, environment and input.
pub struct Cmd {
    cmd: Command,
    stdin: Option<Vec<u8>>,
}

impl Cmd {
    /// `program` with no arguments, in the test's working directory, with no input.
    pub fn new(program: impl AsRef<OsStr>) -> Cmd {
        Cmd {
            cmd: Command::new(program),
            stdin: None,
        }
    }

    /// One of kiln's executables, without colour (`NO_COLOR`: a diagnostic compared as text
    /// must not depend on the terminal of whoever runs the tests).
    pub fn kiln(exe: impl AsRef<OsStr>) -> Cmd {
        let mut c = Cmd::new(exe);
        c.env("NO_COLOR", "1");
        c
    }

    /// Add an argument.
    pub fn arg(&mut self, a: impl AsRef<OsStr>) -> &mut Cmd {
        self.cmd.arg(a);
        self
    }

    /// Add arguments.
    pub fn args<I, S>(&mut self, args: I) -> &mut Cmd
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd.args(args);
        self
    }

    /// Run in `dir`.
    pub fn dir(&mut self, dir: impl AsRef<Path>) -> &mut Cmd {
        self.cmd.current_dir(dir);
        self
    }

    /// Set an environment variable.
    pub fn env(&mut self, k: impl AsRef<OsStr>, v: impl AsRef<OsStr>) -> &mut Cmd {
        self.cmd.env(k, v);
        self
    }

    /// Give the program `input` on its standard input (without, it reads an empty input).
    pub fn stdin(&mut self, input: impl AsRef<[u8]>) -> &mut Cmd {
        self.stdin = Some(input.as_ref().to_vec());
        self
    }

    /// The underlying command, for what the builder does not say.
    pub fn command(&mut self) -> &mut Command {
        &mut self.cmd
    }

    /// Run to its end: exit status, whole stdout and stderr.
    pub fn output(&mut self) -> Output {
        let Some(input) = self.stdin.clone() else {
            return self
                .cmd
                .output()
                .unwrap_or_else(|e| panic!("{:?}: {e}", self.cmd));
        };
        let mut child = self
            .cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{:?}: {e}", self.cmd));
        let mut pipe = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        });
        let out = child.wait_with_output().unwrap();
        writer.join().unwrap();
        out
    }
}

/// Bytes as text (lossy).
pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Exit code, stdout and stderr of an output, for assertion messages.
pub fn show(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    )
}

/// The executable `name` of the workspace's `packages`, beside `exe` (the executable under
/// test) and built in its profile first (a no-op when current): cargo builds only a package's
/// own executables for its tests, and two doors are compared at the same kiln-core.
pub fn sibling(exe: &Path, packages: &[&str], name: &str) -> PathBuf {
    // Once a process: the tests that ask run in parallel, and cargo would queue on its lock.
    static BUILT: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    let key = packages.join(" ");
    if !built.contains(&key) {
        build(exe, packages);
        built.push(key);
    }
    drop(built);
    let path = exe.with_file_name(name);
    assert!(path.is_file(), "{} is missing", path.display());
    path
}

fn build(exe: &Path, packages: &[&str]) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut build = Command::new(cargo);
    build.args(["build", "--quiet"]);
    for p in packages {
        build.args(["-p", p]);
    }
    build
        .arg("--manifest-path")
        .arg(crate::repo().join("Cargo.toml"));
    // The profile the executable under test was built with (its directory's name).
    match exe.parent().and_then(|d| d.file_name()) {
        Some(p) if p == "release" => {
            build.arg("--release");
        }
        Some(p) if p != "debug" => {
            build.arg("--profile").arg(p);
        }
        _ => {}
    }
    let o = build.output().expect("cargo runs");
    assert!(o.status.success(), "building {packages:?}: {}", show(&o));
}
