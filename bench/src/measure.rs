//! Timing and memory of child processes, and the small statistics the table needs.
//!
//! A process is timed from just before `spawn` to the return of `wait4(2)`, which also gives the
//! child's own peak resident set (`ru_maxrss`), so no external tool (hyperfine, `/usr/bin/time`) is
//! needed and the figure is the child's alone, not the harness's.

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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

/// Run `cmd` to completion and measure it. stdin is closed; stderr is collected on a thread so a
/// chatty child cannot block on a full pipe.
pub fn run(cmd: &mut Command, sink: Sink<'_>) -> Result<ProcRun, String> {
    let stdout = match sink {
        Sink::Null => Stdio::null(),
        Sink::File(p) => std::fs::File::create(p)
            .map(Stdio::from)
            .map_err(|e| format!("cannot create {}: {e}", p.display()))?,
    };
    cmd.stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::piped());
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
