//! Running kustomize over a rendered tree: the scratch copy it runs in, finding the program, and
//! the run itself. Shared by the doors that build a kustomization after rendering a tree in place
//! ([`crate::inplace`]): kiln-flux's preview and kiln-cmp's kustomize applications.
//!
//! Nothing here checks what the kustomizations name: a caller runs
//! [`crate::kustomize_paths::check`] on the scratch copy first, and runs kustomize only when it
//! finds nothing.
//!
//! A build is bounded ([`Bounds`]): in time, in the bytes kiln reads of what it prints and in the
//! documents those bytes hold. Overlays that include a base twice, level over level, make
//! kustomize's work grow as 2^levels (24 levels are 16 million objects) long before it prints a
//! byte; a child that passes a bound is killed with its process group and reaped, and the build
//! is KLN1018 with no output.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::diag::{codes, Diagnostic};
use crate::document::SourceFile;
use crate::inplace::OutFile;
use crate::limits::{Limit, Limits};

/// How long a build may run by default. Flux bounds a Kustomization's reconciliation by its
/// `spec.timeout`, which is never under a minute (kustomize-controller, `api/v1`
/// `Kustomization.GetTimeout`); Argo CD kills a plugin's command after `ARGOCD_EXEC_TIMEOUT`,
/// 90 s unless set (argo-cd `util/exec/exec.go`). A minute is below Argo CD's, so kiln-cmp's own
/// diagnostic reaches Argo CD before Argo CD gives up on the plugin.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The environment variable that sets the time limit of a build, in seconds (`90`, `90s`, `2m`):
/// read by kiln-flux and, on the sidecar, kiln-cmp.
pub const TIMEOUT_VARIABLE: &str = "KILN_KUSTOMIZE_TIMEOUT";

/// How much of kustomize's standard error is kept for a message.
const STDERR_KEPT: usize = 64 << 10;

/// What bounds one build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Wall-clock time from start to exit.
    pub timeout: Duration,
    /// Most bytes read of what it prints.
    pub max_bytes: usize,
    /// The limit `max_bytes` comes from, named in the diagnostic.
    pub bytes_limit: Limit,
    /// Most documents what it prints may hold (counted by their `---` lines, before parsing).
    pub max_documents: usize,
}

impl Bounds {
    /// The bounds of a run with `limits` and the time limit `timeout`. What kustomize prints is
    /// read back as one input, so more than `input-bytes` would be refused once read: the reading
    /// stops at that limit, or at `output-bytes` when that is lower.
    pub fn new(limits: &Limits, timeout: Duration) -> Self {
        let (max_bytes, bytes_limit) = if limits.output_bytes < limits.yaml.max_input_bytes {
            (limits.output_bytes, Limit::OutputBytes)
        } else {
            (limits.yaml.max_input_bytes, Limit::InputBytes)
        };
        Self {
            timeout,
            max_bytes,
            bytes_limit,
            max_documents: limits.yaml.max_documents,
        }
    }
}

/// The time limit written in [`TIMEOUT_VARIABLE`]: whole seconds, optionally followed by `s`, or
/// whole minutes followed by `m`; at least one second.
pub fn parse_timeout(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (digits, unit) = match t.strip_suffix('m') {
        Some(d) => (d, 60),
        None => (t.strip_suffix('s').unwrap_or(t), 1),
    };
    let n: u64 = digits
        .parse()
        .ok()
        .filter(|n| *n > 0)
        .and_then(|n: u64| n.checked_mul(unit))
        .ok_or_else(|| {
            format!("{TIMEOUT_VARIABLE} is not a whole number of seconds or minutes, at least 1 (examples: 90, 90s, 2m)")
        })?;
    Ok(Duration::from_secs(n))
}

/// The program that builds: `kustomize` (run as `kustomize build DIR ARGS…`) or `kubectl` (run as
/// `kubectl kustomize DIR ARGS…`), told apart by the program's file name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program(pub PathBuf);

impl Program {
    /// Whether the program is kubectl (its file name starts with `kubectl`).
    pub fn is_kubectl(&self) -> bool {
        self.0
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("kubectl"))
    }

    /// The arguments that build `dir` with `extra` options.
    pub fn args(&self, dir: &Path, extra: &[String]) -> Vec<std::ffi::OsString> {
        let mut a: Vec<std::ffi::OsString> = vec![if self.is_kubectl() {
            "kustomize".into()
        } else {
            "build".into()
        }];
        a.push(dir.as_os_str().to_os_string());
        a.extend(extra.iter().map(Into::into));
        a
    }
}

/// The first of `names` found as a file on `PATH`.
pub fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for name in names {
        for dir in std::env::split_paths(&path) {
            let c = dir.join(name);
            if c.is_file() {
                return Some(c);
            }
        }
    }
    None
}

/// Run `program` over `dir` (with the working directory `cwd`), and return what it prints.
/// `shown` names `dir` in diagnostics (a scratch path means nothing to a user); `hint` says
/// what to fix when the build fails. Standard input is closed; the output must be UTF-8. A
/// build past one of `bounds` is killed (with every process it started) and reaped: KLN1018.
pub fn run(
    program: &Program,
    dir: &Path,
    cwd: &Path,
    extra: &[String],
    shown: &str,
    hint: &str,
    bounds: &Bounds,
) -> Result<String, Diagnostic> {
    let mut cmd = Command::new(&program.0);
    cmd.args(program.args(dir, extra))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group, so that stopping it stops what it started (kustomize runs helm,
    // exec plugins) instead of leaving them writing into the pipes.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd.spawn().map_err(|e| {
        Diagnostic::error(
            codes::REQUEST_INVALID,
            format!("cannot run {}: {e}", program.0.display()),
        )
        .with_hint("check that kustomize (or kubectl) is installed and executable")
    })?;
    let start = Instant::now();
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let (tx, rx) = std::sync::mpsc::channel();
    let (max_bytes, max_documents) = (bounds.max_bytes, bounds.max_documents);
    std::thread::spawn(move || {
        let _ = tx.send(stdout.map(|o| read_output(o, max_bytes, max_documents)));
    });
    let errors = std::thread::spawn(move || stderr.map(read_head).unwrap_or_default());
    let over = |what: String, advice: &str, limit: Option<Limit>| {
        let hint = match limit {
            Some(l) => l.hint(advice),
            None => format!("{advice}, or raise the limit: {TIMEOUT_VARIABLE}=SECONDS (see docs/errors.md, KLN1018)"),
        };
        Diagnostic::error(
            codes::KUSTOMIZE_BUILD_LIMIT,
            format!("kustomize build {what}: it was stopped"),
        )
        .in_file(shown.to_string())
        .with_hint(hint)
    };
    let timed_out = || {
        over(
            format!("did not finish within {} s", bounds.timeout.as_secs()),
            "overlays that include a base more than once, level over level, double kustomize's work with every level: include each base once",
            None,
        )
    };
    let out = match rx.recv_timeout(bounds.timeout) {
        Ok(Some(Ok(out))) => out,
        Ok(Some(Err(Over::Bytes))) => {
            stop(&mut child);
            return Err(over(
                format!(
                    "printed more than {} bytes, the limit ({})",
                    bounds.max_bytes, bounds.bytes_limit
                ),
                "build less in one kustomization",
                Some(bounds.bytes_limit),
            ));
        }
        Ok(Some(Err(Over::Documents))) => {
            stop(&mut child);
            return Err(over(
                format!(
                    "printed more than {} documents, the limit ({})",
                    bounds.max_documents,
                    Limit::Documents
                ),
                "build fewer objects in one kustomization",
                Some(Limit::Documents),
            ));
        }
        Ok(Some(Err(Over::Io(e)))) => {
            stop(&mut child);
            return Err(Diagnostic::error(
                codes::IO_READ,
                format!("cannot read what kustomize prints: {e}"),
            )
            .in_file(shown.to_string()));
        }
        Ok(None) | Err(_) => {
            stop(&mut child);
            return Err(timed_out());
        }
    };
    // Its output ended: it is exiting, within what is left of the time.
    let Some(status) = wait_until(&mut child, start + bounds.timeout) else {
        stop(&mut child);
        return Err(timed_out());
    };
    if !status.success() {
        let stderr = errors.join().unwrap_or_default();
        let stderr = String::from_utf8_lossy(&stderr);
        let stderr: Vec<&str> = stderr.lines().map(without_log_header).collect();
        let mut msg = stderr
            .join("\n")
            .trim()
            .replace(&dir.display().to_string(), shown);
        let cwd_shown = cwd.display().to_string();
        if !cwd_shown.is_empty() && cwd_shown != "/" {
            msg = msg.replace(&cwd_shown, ".");
        }
        return Err(Diagnostic::error(
            codes::REQUEST_INVALID,
            format!("kustomize build failed: {msg}"),
        )
        .in_file(shown.to_string())
        .with_hint(hint.to_string()));
    }
    String::from_utf8(out).map_err(|_| {
        Diagnostic::error(codes::NOT_UTF8, "kustomize wrote output that is not UTF-8")
            .in_file(shown.to_string())
    })
}

/// Why reading a build's output stopped early.
#[derive(Debug)]
enum Over {
    Bytes,
    Documents,
    Io(std::io::Error),
}

/// Read `from` to its end, within `max_bytes` and `max_documents`. Documents are counted by the
/// lines that start one (`---` at the start of a line, then the line's end or a space): every
/// document but the first starts with one, so more such lines than `max_documents` is more
/// documents than that, whatever the parser would make of them.
fn read_output(
    mut from: impl Read,
    max_bytes: usize,
    max_documents: usize,
) -> Result<Vec<u8>, Over> {
    let mut out = Vec::new();
    let mut chunk = vec![0u8; 64 << 10];
    let (mut scanned, mut markers) = (0, 0usize);
    loop {
        let n = match from.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Over::Io(e)),
        };
        if out.len() + n > max_bytes {
            return Err(Over::Bytes);
        }
        out.extend_from_slice(&chunk[..n]);
        let (found, next) = document_markers(&out, scanned);
        markers += found;
        scanned = next;
        if markers > max_documents {
            return Err(Over::Documents);
        }
    }
    markers += document_markers_at_end(&out, scanned);
    if markers > max_documents {
        return Err(Over::Documents);
    }
    Ok(out)
}

/// The document start lines (`---` then a line end or a space) that begin at or after `from`,
/// and where to resume: a line whose first four bytes have not all arrived is left for later.
fn document_markers(b: &[u8], from: usize) -> (usize, usize) {
    let mut found = 0;
    let mut i = from;
    while i < b.len() {
        let line_start = i == 0 || b[i - 1] == b'\n';
        if line_start && b[i] == b'-' {
            if b.len() - i < 4 {
                return (found, i);
            }
            if &b[i..i + 3] == b"---" && matches!(b[i + 3], b'\n' | b'\r' | b' ' | b'\t') {
                found += 1;
            }
        }
        i += 1;
    }
    (found, i)
}

/// A `---` that ends the output without a line end.
fn document_markers_at_end(b: &[u8], from: usize) -> usize {
    usize::from(b.len() >= from + 3 && b[from..].starts_with(b"---") && b.len() == from + 3)
}

/// The first [`STDERR_KEPT`] bytes of `from`, the rest read and dropped (a child blocked on a
/// full pipe would never exit).
fn read_head(mut from: impl Read) -> Vec<u8> {
    let mut kept = Vec::new();
    let _ = (&mut from).take(STDERR_KEPT as u64).read_to_end(&mut kept);
    let _ = std::io::copy(&mut from, &mut std::io::sink());
    kept
}

/// Wait for `child` until `deadline`; `None` when it is still running then.
fn wait_until(child: &mut Child, deadline: Instant) -> Option<ExitStatus> {
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => return None,
        }
    }
}

/// Kill `child` and its process group, and reap it (no zombie is left behind).
fn stop(child: &mut Child) {
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals the process group the child leads (it
        // was started in a group of its own); no memory is involved.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// A line of kubectl's log without its header (`E1127 16:20:20.444300   12595 run.go:72] `):
/// the time and process id would make the same failure a different message every run.
fn without_log_header(line: &str) -> &str {
    let b = line.as_bytes();
    let header = b.len() > 5
        && matches!(b[0], b'E' | b'W' | b'I' | b'F')
        && b[1..5].iter().all(u8::is_ascii_digit)
        && b[5] == b' ';
    match line.find("] ") {
        Some(i) if header => &line[i + 2..],
        _ => line,
    }
}

/// `diagnostics` of a failed build with the secrets of the files it was staged from (the
/// rendered tree and the files beside it) blanked out: kustomize's messages quote the node they
/// fail on (`node contents: …`), which may be a Secret's data.
pub fn redacted(diagnostics: Vec<Diagnostic>, staged: &[&[OutFile]]) -> Vec<Diagnostic> {
    if diagnostics.is_empty() {
        return diagnostics;
    }
    let files: Vec<Arc<SourceFile>> = staged
        .iter()
        .flat_map(|fs| fs.iter())
        .filter_map(|f| {
            let text = std::str::from_utf8(&f.bytes).ok()?;
            Some(Arc::new(SourceFile {
                name: f.rel.clone(),
                text: text.to_string(),
            }))
        })
        .collect();
    let secrets = crate::request::collect_secrets(&files, &[], &[]);
    diagnostics
        .iter()
        .map(|d| secrets.redact_diagnostic(d))
        .collect()
}

/// Write a scratch copy: `others` (files outside the rendered tree, byte for byte) at their
/// paths, and `built` (the rendered tree) below `rel`.
pub fn stage(
    stage: &Path,
    rel: &Path,
    others: &[OutFile],
    built: &[OutFile],
) -> Result<(), Diagnostic> {
    let put = |path: PathBuf, f: &OutFile| -> Result<(), Diagnostic> {
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p).map_err(|e| io_err(&path, &e))?;
        }
        std::fs::write(&path, &f.bytes).map_err(|e| io_err(&path, &e))
    };
    for f in others {
        put(stage.join(&f.rel), f)?;
    }
    std::fs::create_dir_all(stage.join(rel)).map_err(|e| io_err(stage, &e))?;
    for f in built {
        put(stage.join(rel).join(&f.rel), f)?;
    }
    Ok(())
}

/// A failure to write the scratch copy.
pub fn io_err(p: &Path, e: &std::io::Error) -> Diagnostic {
    Diagnostic::error(
        codes::IO_READ,
        format!("cannot write the scratch copy: {e}"),
    )
    .in_file(p.display().to_string())
    .with_hint("check the space and permissions of the temporary directory (TMPDIR)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectls_log_header_is_left_out() {
        assert_eq!(
            without_log_header(
                "E1127 16:20:20.444300   12595 run.go:72] \"command failed\" err=\"x\""
            ),
            "\"command failed\" err=\"x\""
        );
        assert_eq!(without_log_header("Error: x] y"), "Error: x] y");
    }

    #[test]
    fn the_time_limit_is_read_in_seconds_or_minutes() {
        assert_eq!(parse_timeout("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_timeout(" 90s "), Ok(Duration::from_secs(90)));
        assert_eq!(parse_timeout("2m"), Ok(Duration::from_secs(120)));
        for bad in ["", "0", "-1", "1.5", "1h", "90 s", "99999999999999999999m"] {
            let e = parse_timeout(bad).unwrap_err();
            assert!(e.contains(TIMEOUT_VARIABLE), "{bad}: {e}");
        }
    }

    /// The output is read within the bytes and documents it may hold, the documents counted by
    /// the lines that start one, wherever the reads split them.
    #[test]
    fn output_is_read_within_its_bytes_and_documents() {
        /// A reader handing out `step` bytes at a time.
        struct Drip<'a>(&'a [u8], usize);
        impl Read for Drip<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.1.min(self.0.len()).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let three = b"a: 1\n---\nb: 2\n--- \nc: |\n  ---\n----\n---x\n---";
        for step in [1, 2, 3, 5, 64 << 10] {
            assert!(read_output(Drip(three, step), 1000, 3).is_ok(), "{step}");
            assert!(
                matches!(
                    read_output(Drip(three, step), 1000, 2),
                    Err(Over::Documents)
                ),
                "{step}"
            );
            assert!(
                matches!(
                    read_output(Drip(three, step), three.len() - 1, 9),
                    Err(Over::Bytes)
                ),
                "{step}"
            );
        }
        assert!(read_output(&b"---\n"[..], 10, 0).is_err());
        assert!(read_output(&b"a: 1\n"[..], 10, 0).is_ok());
    }

    /// A fake kustomize: a shell script that ignores its arguments and runs `body`.
    fn fake(dir: &Path, body: &str) -> Program {
        use std::os::unix::fs::PermissionsExt;
        let p = dir.join("kustomize");
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        Program(p)
    }

    fn bounds(timeout: Duration, max_bytes: usize, max_documents: usize) -> Bounds {
        Bounds {
            timeout,
            max_bytes,
            bytes_limit: Limit::OutputBytes,
            max_documents,
        }
    }

    /// Whether a process whose command line holds `mark` is still running (zombies have none).
    fn running(mark: &str) -> bool {
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(mark)
            })
        })
    }

    /// A build past a bound is stopped with everything it started, and nothing of what it
    /// printed is returned; within the bounds, the output is returned whole.
    #[test]
    fn a_build_past_a_bound_is_stopped_with_what_it_started() {
        let d = tempfile::tempdir().unwrap();
        let mark = format!("{}", 7_000_000 + std::process::id());
        let cases = [
            // Slow, and its own child slower still: both are stopped.
            (
                format!("sleep {mark} & echo 'a: 1'; sleep {mark}"),
                4096,
                "did not finish within 1 s",
            ),
            // Endless output.
            (
                format!("sleep {mark} & yes 'a: 1'"),
                4096,
                "printed more than 4096 bytes, the limit (output-bytes)",
            ),
            // Endless documents, in few bytes each.
            (
                format!("sleep {mark} & yes -- '---'"),
                1 << 30,
                "printed more than 5 documents, the limit (documents)",
            ),
        ];
        for (body, max_bytes, why) in cases {
            let p = fake(d.path(), &body);
            let t = Instant::now();
            let e = run(
                &p,
                d.path(),
                d.path(),
                &[],
                "app",
                "fix it",
                &bounds(Duration::from_secs(1), max_bytes, 5),
            )
            .unwrap_err();
            assert_eq!(e.code, codes::KUSTOMIZE_BUILD_LIMIT, "{body}: {e}");
            assert!(e.message.contains(why), "{body}: {e}");
            assert_eq!(e.file.as_deref(), Some("app"));
            assert!(t.elapsed() < Duration::from_secs(30), "{body}");
            // SIGKILL is delivered asynchronously: a killed process may be seen for a moment.
            let gone = Instant::now();
            while running(&format!("sleep {mark}")) {
                assert!(
                    gone.elapsed() < Duration::from_secs(10),
                    "{body}: its child is still running"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let p = fake(d.path(), "printf 'a: 1\\n---\\nb: 2\\n'");
        assert_eq!(
            run(
                &p,
                d.path(),
                d.path(),
                &[],
                "app",
                "",
                &bounds(Duration::from_secs(60), 4096, 2)
            ),
            Ok("a: 1\n---\nb: 2\n".to_string())
        );
        let p = fake(d.path(), "echo broken >&2; exit 3");
        let e = run(
            &p,
            d.path(),
            d.path(),
            &[],
            "app",
            "fix it",
            &bounds(Duration::from_secs(60), 4096, 2),
        )
        .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (codes::REQUEST_INVALID, "kustomize build failed: broken")
        );
    }

    #[test]
    fn the_bytes_read_stop_at_the_lower_of_the_input_and_output_limits() {
        let mut l = Limits::default();
        let b = Bounds::new(&l, DEFAULT_TIMEOUT);
        assert_eq!(
            (b.max_bytes, b.bytes_limit),
            (l.yaml.max_input_bytes, Limit::InputBytes)
        );
        assert_eq!(b.max_documents, l.yaml.max_documents);
        l.output_bytes = 1000;
        let b = Bounds::new(&l, DEFAULT_TIMEOUT);
        assert_eq!((b.max_bytes, b.bytes_limit), (1000, Limit::OutputBytes));
    }

    #[test]
    fn kubectl_and_kustomize_are_run_as_each_builds() {
        let d = Path::new("/x");
        let k = Program("/usr/bin/kubectl".into());
        assert_eq!(k.args(d, &[]), ["kustomize", "/x"]);
        let k = Program("/opt/kustomize".into());
        assert_eq!(
            k.args(d, &["--enable-helm".into()]),
            ["build", "/x", "--enable-helm"]
        );
    }
}
