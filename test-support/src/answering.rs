//! A live process of one of kiln's executables, seen once it has done its work and waits to
//! write its answer: for the integration tests of the doors, which check the
//! threads each starts (`kiln_core::process::worker_pool`). Linux only: read from `/proc`.

use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Command, Output, Stdio};

/// What [`while_answering`] saw.
pub struct Answered {
    /// The process's threads, from `/proc/PID/status`.
    pub threads: usize,
    /// The soft limit of its main thread's stack, from `/proc/PID/limits` ("unlimited" or bytes).
    pub stack: String,
    /// Its exit status, whole stdout and stderr.
    pub output: Output,
}

/// Run `cmd` with `stdin` on its standard input and its stdout through a pipe shrunk to one
/// page: once a first page is read, the process has done its work (each door writes its answer
/// when it is complete) and waits to write the rest, with every thread it started still there.
/// The answer must be longer than three pages.
pub fn while_answering(cmd: &mut Command, stdin: &[u8]) -> Answered {
    // The pipe is made and shrunk before the process starts: shrunk after, a fast process may
    // already have written more than a page into it, and the kernel refuses to shrink a pipe
    // below what it holds (EBUSY).
    let mut ends = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    assert_eq!(
        unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) },
        0
    );
    // SAFETY: both descriptors were just opened by pipe2 and are owned by nothing else.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
    // SAFETY: F_SETPIPE_SZ takes an integer; the descriptor is the open read end of the pipe.
    let page = unsafe { libc::fcntl(read_end.as_raw_fd(), libc::F_SETPIPE_SZ, 4096) };
    assert_eq!(
        page,
        4096,
        "the answer pipe was not shrunk: {}",
        std::io::Error::last_os_error()
    );
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(write_end)
        .stderr(Stdio::piped())
        .spawn()
        .expect("the process starts");
    // The command keeps the write end it was given: replaced, it is closed here, so that the
    // process's exit ends the answer.
    cmd.stdout(Stdio::null());
    let mut stdout = std::fs::File::from(read_end);
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).unwrap();
    drop(input);
    let mut answer = vec![0; 4096];
    if stdout.read_exact(&mut answer).is_err() {
        let o = child.wait_with_output().unwrap();
        panic!(
            "no first page of the answer ({}): {}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let proc = |file: &str, key: &str| {
        let text = std::fs::read_to_string(format!("/proc/{}/{file}", child.id())).unwrap();
        let line = text.lines().find_map(|l| l.strip_prefix(key));
        let value = line.unwrap_or_else(|| panic!("no {key} in /proc/PID/{file}"));
        value
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string()
    };
    let threads = proc("status", "Threads:").parse().unwrap();
    let stack = proc("limits", "Max stack size");
    stdout.read_to_end(&mut answer).unwrap();
    let mut output = child.wait_with_output().unwrap();
    output.stdout = answer;
    Answered {
        threads,
        stack,
        output,
    }
}

/// The threads of a process with a worker a core, its main thread one of them.
pub fn a_worker_a_core() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}
