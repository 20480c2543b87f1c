//! Timing and memory of child processes, and the small statistics the table needs.
//!
//! A process is timed from just before `spawn` to the return of `wait4(2)`, which also gives the
//! child's own peak resident set (`ru_maxrss`), so no external tool (hyperfine, `/usr/bin/time`) is
//! needed.
//!
//! `ru_maxrss` has a trap: Rust starts children with `posix_spawn`, which glibc implements with
//! `vfork`, and at `exec` Linux folds the peak resident set of the address space being left — the
//! parent's — into the child's. After the harness has held a large fleet in memory, every child
//! would report at least that peak. So measured processes are started by a small helper process,
//! started by [`start_spawner`] while the harness is still small: the figure is then the child's
//! own (or the helper's few MiB, if that were larger).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The argument that makes the harness binary the helper process (see [`spawner_main`]).
pub const SPAWNER_ARG: &str = "--internal-spawner";

/// One finished process.
#[derive(Debug, Clone)]
pub struct ProcRun {
    /// Spawn to reap.
    pub wall: Duration,
    /// Peak resident set of the child, in KiB (Linux `ru_maxrss`).
    pub max_rss_kib: u64,
    /// Exit code, or `None` when killed by a signal.
    pub code: Option<i32>,
    /// What the child wrote on stderr (kept for error messages).
    pub stderr: String,
}

impl ProcRun {
    /// Whether it exited with 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// The first lines of stderr, for a one-line "not available: …" reason.
    pub fn reason(&self) -> String {
        let first: Vec<&str> = self
            .stderr
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .take(2)
            .collect();
        let status = match self.code {
            Some(c) => format!("exit {c}"),
            None => "killed by a signal".into(),
        };
        if first.is_empty() {
            status
        } else {
            format!("{status}: {}", first.join(" / "))
        }
    }
}

/// Where a measured process's stdout goes.
pub enum Sink<'a> {
    /// Discarded (`/dev/null`): per-app runs, where only time matters.
    Null,
    /// Written to this file (created or truncated): batch runs, whose bytes are counted and compared.
    File(&'a Path),
}

/// The helper process that starts measured processes, and the pipes to it.
struct Spawner {
    child: Child,
    requests: ChildStdin,
    replies: BufReader<ChildStdout>,
}

static SPAWNER: OnceLock<Mutex<Spawner>> = OnceLock::new();

/// Start the helper process that [`run`] sends measured processes to: the harness binary itself
/// with [`SPAWNER_ARG`]. Call it first thing, while this process is small. Without it, [`run`]
/// starts processes itself (tests do), and their peak memory includes this process's.
pub fn start_spawner() -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this executable: {e}"))?;
    let mut child = Command::new(exe)
        .arg(SPAWNER_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start the process spawner: {e}"))?;
    let (Some(requests), Some(replies)) = (child.stdin.take(), child.stdout.take()) else {
        return Err("the process spawner has no pipes".into());
    };
    let spawner = Spawner {
        child,
        requests,
        replies: BufReader::new(replies),
    };
    SPAWNER
        .set(Mutex::new(spawner))
        .map_err(|_| "the process spawner is already running".to_string())
}

/// Stop the helper process (it also ends when this process's end of the pipe closes).
pub fn stop_spawner() {
    if let Some(m) = SPAWNER.get() {
        if let Ok(mut s) = m.lock() {
            let _ = s.requests.write_all(b"\n");
            let _ = s.requests.flush();
            let _ = s.child.wait();
        }
    }
}

/// The helper process: reads one JSON request per line on stdin (program, args, working
/// directory, environment changes, where stdout goes), runs it with [`run`] and answers one JSON
/// line on stdout, until stdin ends or an empty line.
pub fn spawner_main() -> ExitCode {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            break;
        }
        let reply = match serde_json::from_str::<Value>(&line) {
            Ok(req) => execute(&req),
            Err(e) => json!({"error": format!("bad request: {e}")}),
        };
        if writeln!(out, "{reply}").and_then(|_| out.flush()).is_err() {
            break;
        }
    }
    ExitCode::SUCCESS
}

/// Run one request of [`spawner_main`].
fn execute(req: &Value) -> Value {
    let text = |v: &Value| v.as_str().map(str::to_string);
    let Some(program) = text(&req["program"]) else {
        return json!({"error": "no program"});
    };
    let mut cmd = Command::new(program);
    for a in req["args"].as_array().into_iter().flatten() {
        cmd.arg(a.as_str().unwrap_or_default());
    }
    if let Some(d) = text(&req["cwd"]) {
        cmd.current_dir(d);
    }
    for e in req["env"].as_array().into_iter().flatten() {
        match (text(&e[0]), text(&e[1])) {
            (Some(k), Some(v)) => cmd.env(k, v),
            (Some(k), None) => cmd.env_remove(k),
            _ => &mut cmd,
        };
    }
    let out = text(&req["out"]);
    let sink = out
        .as_deref()
        .map_or(Sink::Null, |p| Sink::File(Path::new(p)));
    let stdin = text(&req["in"]);
    match run_here(&mut cmd, stdin.as_deref().map(Path::new), sink) {
        Ok(r) => json!({
            "wall_ns": r.wall.as_nanos() as u64,
            "max_rss_kib": r.max_rss_kib,
            "code": r.code,
            "stderr": r.stderr,
        }),
        Err(e) => json!({"error": e}),
    }
}

/// Send `cmd` to the helper process and wait for its measurement.
fn run_remote(
    m: &Mutex<Spawner>,
    cmd: &Command,
    stdin: Option<&Path>,
    sink: Sink<'_>,
) -> Result<ProcRun, String> {
    let lossy = |s: &std::ffi::OsStr| s.to_string_lossy().to_string();
    let absolute = |p: &Path| {
        std::path::absolute(p)
            .unwrap_or_else(|_| p.to_path_buf())
            .to_string_lossy()
            .to_string()
    };
    let req = json!({
        "program": lossy(cmd.get_program()),
        "args": cmd.get_args().map(lossy).collect::<Vec<_>>(),
        "cwd": cmd.get_current_dir().map(|d| d.to_string_lossy().to_string()),
        "env": cmd
            .get_envs()
            .map(|(k, v)| json!([lossy(k), v.map(lossy)]))
            .collect::<Vec<_>>(),
        "out": match sink {
            Sink::Null => Value::Null,
            Sink::File(p) => json!(absolute(p)),
        },
        "in": stdin.map(absolute),
    });
    let mut s = m
        .lock()
        .map_err(|_| "the process spawner failed".to_string())?;
    writeln!(s.requests, "{req}")
        .and_then(|_| s.requests.flush())
        .map_err(|e| format!("cannot talk to the process spawner: {e}"))?;
    let mut line = String::new();
    s.replies
        .read_line(&mut line)
        .map_err(|e| format!("no answer from the process spawner: {e}"))?;
    let reply: Value = serde_json::from_str(&line)
        .map_err(|e| format!("bad answer from the process spawner ({e}): {line:?}"))?;
    if let Some(e) = reply["error"].as_str() {
        return Err(e.to_string());
    }
    Ok(ProcRun {
        wall: Duration::from_nanos(reply["wall_ns"].as_u64().unwrap_or(0)),
        max_rss_kib: reply["max_rss_kib"].as_u64().unwrap_or(0),
        code: reply["code"].as_i64().and_then(|c| i32::try_from(c).ok()),
        stderr: reply["stderr"].as_str().unwrap_or_default().to_string(),
    })
}

/// Run `cmd` to completion and measure it. stdin is closed; stderr is collected on a thread so a
/// chatty child cannot block on a full pipe. The helper process starts it when
/// [`start_spawner`] was called, so its peak memory is its own.
pub fn run(cmd: &mut Command, sink: Sink<'_>) -> Result<ProcRun, String> {
    run_reading(cmd, None, sink)
}

/// [`run`] with the file `stdin` (when given) on the process's standard input, as a shell's
/// `< FILE` gives it, without a shell in the measurement.
pub fn run_reading(
    cmd: &mut Command,
    stdin: Option<&Path>,
    sink: Sink<'_>,
) -> Result<ProcRun, String> {
    match SPAWNER.get() {
        Some(m) => run_remote(m, cmd, stdin, sink),
        None => run_here(cmd, stdin, sink),
    }
}

/// [`run_reading`] from this process.
fn run_here(cmd: &mut Command, stdin: Option<&Path>, sink: Sink<'_>) -> Result<ProcRun, String> {
    let stdout = match sink {
        Sink::Null => Stdio::null(),
        Sink::File(p) => std::fs::File::create(p)
            .map(Stdio::from)
            .map_err(|e| format!("cannot create {}: {e}", p.display()))?,
    };
    let stdin = match stdin {
        None => Stdio::null(),
        Some(p) => std::fs::File::open(p)
            .map(Stdio::from)
            .map_err(|e| format!("cannot read {}: {e}", p.display()))?,
    };
    cmd.stdin(stdin).stdout(stdout).stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", cmd.get_program()))?;
    let reader = spawn_stderr_reader(&mut child);
    let (status, rusage) = wait4(&child)?;
    let wall = start.elapsed();
    let stderr = reader
        .map(|h| h.join().unwrap_or_default())
        .unwrap_or_default();
    // The child was reaped by wait4; std's `Child` never waits on drop, so nothing else touches it.
    drop(child);
    Ok(ProcRun {
        wall,
        // Linux reports ru_maxrss in KiB.
        max_rss_kib: u64::try_from(rusage.ru_maxrss).unwrap_or(0),
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        stderr,
    })
}

fn spawn_stderr_reader(child: &mut Child) -> Option<std::thread::JoinHandle<String>> {
    let mut err = child.stderr.take()?;
    Some(std::thread::spawn(move || {
        let mut buf = Vec::new();
        // A read error only loses diagnostics text; the exit status still tells failure.
        let _ = err.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    }))
}

fn wait4(child: &Child) -> Result<(libc::c_int, libc::rusage), String> {
    let pid = libc::pid_t::try_from(child.id()).map_err(|_| "pid out of range".to_string())?;
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain old data; all-zero is a valid value that wait4 overwrites.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own unreaped child; the pointers are to live locals.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            return Ok((status, usage));
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(format!("wait4({pid}) failed: {err}"));
        }
    }
}

/// Run a command `runs` times (at least once), stdout to `out` (or discarded); stop at the first
/// failure and return it as the error.
pub fn repeat(
    runs: usize,
    mut make: impl FnMut() -> Command,
    out: Option<&Path>,
) -> Result<Vec<ProcRun>, ProcRun> {
    let mut all = Vec::with_capacity(runs.max(1));
    for _ in 0..runs.max(1) {
        let sink = out.map_or(Sink::Null, Sink::File);
        let r = run(&mut make(), sink).map_err(|e| ProcRun {
            wall: Duration::ZERO,
            max_rss_kib: 0,
            code: None,
            stderr: e,
        })?;
        if !r.success() {
            return Err(r);
        }
        all.push(r);
    }
    Ok(all)
}

/// Summary of repeated timings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stats {
    /// How many.
    pub n: usize,
    /// Fastest.
    pub min: Duration,
    /// Median (mean of the middle two for an even count).
    pub median: Duration,
    /// Mean.
    pub mean: Duration,
    /// 90th percentile (nearest rank).
    pub p90: Duration,
    /// Sum.
    pub total: Duration,
}

impl Stats {
    /// Statistics of a non-empty set of durations (`None` when empty).
    pub fn of(times: &[Duration]) -> Option<Stats> {
        if times.is_empty() {
            return None;
        }
        let mut t = times.to_vec();
        t.sort();
        let n = t.len();
        let total: Duration = t.iter().sum();
        let median = if n % 2 == 1 {
            t[n / 2]
        } else {
            (t[n / 2 - 1] + t[n / 2]) / 2
        };
        // Nearest-rank percentile: the smallest value with at least 90% of the set at or below it.
        let rank = (n * 9).div_ceil(10).max(1);
        Some(Stats {
            n,
            min: t[0],
            median,
            mean: total / n as u32,
            p90: t[rank - 1],
            total,
        })
    }
}

/// Time an in-process closure `runs` times and return the fastest run and the last result.
pub fn best_of<T>(runs: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut best = Duration::MAX;
    let mut last = None;
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        let v = f();
        best = best.min(start.elapsed());
        last = Some(v);
    }
    (best, last.expect("ran at least once"))
}

/// Peak resident set of this process so far, in KiB (`VmHWM` of /proc/self/status), if readable.
pub fn self_peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: &[u64]) -> Vec<Duration> {
        v.iter().map(|&m| Duration::from_millis(m)).collect()
    }

    #[test]
    fn stats_of_odd_and_even_sets() {
        let s = Stats::of(&ms(&[5, 1, 3])).expect("non-empty");
        assert_eq!(s.min, Duration::from_millis(1));
        assert_eq!(s.median, Duration::from_millis(3));
        assert_eq!(s.mean, Duration::from_millis(3));
        assert_eq!(s.p90, Duration::from_millis(5));
        let s = Stats::of(&ms(&[1, 2, 3, 4])).expect("non-empty");
        assert_eq!(s.median, Duration::from_micros(2500));
        assert_eq!(s.total, Duration::from_millis(10));
        assert!(Stats::of(&[]).is_none());
    }

    #[test]
    fn the_spawner_runs_requests_as_run_does() {
        let tmp = std::env::temp_dir().join(format!("kiln-bench-spawn-{}", std::process::id()));
        let reply = execute(&json!({
            "program": "sh",
            "args": ["-c", "echo \"$GREETING\"; pwd >&2; exit 3"],
            "cwd": "/",
            "env": [["GREETING", "hello"]],
            "out": tmp.to_string_lossy(),
        }));
        assert_eq!(reply["code"], 3, "{reply}");
        assert_eq!(reply["stderr"], "/\n");
        assert!(reply["max_rss_kib"].as_u64().is_some_and(|k| k > 0));
        assert_eq!(
            std::fs::read_to_string(&tmp).expect("stdout file"),
            "hello\n"
        );
        let _ = std::fs::remove_file(&tmp);
        assert!(execute(&json!({"args": []}))["error"].is_string());
    }

    /// A file on stdin, here and through the helper process's request alike.
    #[test]
    fn stdin_is_read_from_a_file_when_given() {
        let dir = std::env::temp_dir().join(format!("kiln-bench-stdin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (input, out) = (dir.join("in"), dir.join("out"));
        std::fs::write(&input, "five\n").unwrap();
        let r = run_reading(&mut Command::new("cat"), Some(&input), Sink::File(&out));
        assert!(r.expect("runs cat").success());
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "five\n");
        let reply = execute(&json!({
            "program": "cat",
            "in": input.to_string_lossy(),
            "out": out.to_string_lossy(),
        }));
        assert_eq!(reply["code"], 0, "{reply}");
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "five\n");
        let missing = run_reading(&mut Command::new("cat"), Some(&dir.join("no")), Sink::Null);
        assert!(missing.is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn child_processes_are_timed_with_their_exit_code_and_memory() {
        let ok = run(Command::new("true").arg("x"), Sink::Null).expect("runs true");
        assert!(ok.success());
        assert!(ok.max_rss_kib > 0);
        let mut sh = Command::new("sh");
        sh.args(["-c", "echo broken >&2; exit 3"]);
        let bad = run(&mut sh, Sink::Null).expect("runs sh");
        assert_eq!(bad.code, Some(3));
        assert_eq!(bad.reason(), "exit 3: broken");
    }
}
