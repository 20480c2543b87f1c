//! Set-up of the process the binaries run in.
//!
//! Each binary installs [`at_load`] with [`run_at_load!`](crate::run_at_load), so that it runs
//! before the allocator reserves its first arena, and then starts its workers with
//! [`worker_pool`]: none for a small run.

/// What every binary sets before anything is allocated: no transparent huge pages, and freed
/// memory kept for reuse ([`no_huge_pages`], [`keep_freed_memory`]).
///
/// It runs from the executable's initialisers ([`run_at_load!`](crate::run_at_load)), before
/// mimalloc's own, which reserves a 1 GiB arena and advises huge pages on it: called from `main`
/// instead, the kernel has already handed out huge pages, zeroed whole, for the allocations the
/// runtime makes before `main`, and a small run's resident set doubles.
pub extern "C" fn at_load() {
    no_huge_pages();
    keep_freed_memory();
    EXITS_SOON.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Set by [`at_load`]: this process is one of kiln's executables, which exit once they have
/// answered.
static EXITS_SOON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Done with `x`: dropped, except in one of kiln's executables ([`at_load`]), where it is left
/// for the process's exit to reclaim.
///
/// Freeing a large run's objects one by one is work nobody waits for: the process is about to
/// exit, and the kernel takes back its memory whole; the drop would run on the thread that then
/// writes the answer, and in a large pass-through it is a sixth of the run. A library caller (a test, an embedding program) gets the plain drop.
pub fn discard<T>(x: T) {
    if exits_soon() {
        std::mem::forget(x);
    } else {
        drop(x);
    }
}

/// Whether this process is one of kiln's executables ([`at_load`]), which exit once they have
/// answered: what it no longer needs is left for the exit ([`discard`]).
pub fn exits_soon() -> bool {
    EXITS_SOON.load(std::sync::atomic::Ordering::Relaxed)
}

/// Leave the process with `code` now, in one of kiln's executables ([`at_load`]), after flushing
/// stdout and stderr; elsewhere `code` is handed back for `main` to return.
///
/// What a normal exit runs after `main` is mimalloc's sweep of its heap (`mi_process_done`
/// collects every page, though the kernel is about to take the memory whole), serial work on the
/// main thread between kiln's last write and its exit. kiln registers nothing of its own to run at exit; a run that made a temporary tree has
/// removed it before `main` returns.
pub fn end(code: std::process::ExitCode) -> std::process::ExitCode {
    use std::io::Write;
    if !exits_soon() {
        return code;
    }
    // A failed flush is left to the normal exit, which reports nothing either but loses no byte
    // that could still be written.
    if std::io::stdout().flush().is_err() || std::io::stderr().flush().is_err() {
        return code;
    }
    // `ExitCode` does not say its number; it is one of the 256 a process can exit with.
    match (0..=u8::MAX).find(|n| std::process::ExitCode::from(*n) == code) {
        // SAFETY: _exit ends the process at once; nothing of this process runs after it, so no
        // memory is touched afterwards, and the output was flushed above.
        #[cfg(target_os = "linux")]
        Some(n) => unsafe { libc::_exit(i32::from(n)) },
        _ => code,
    }
}

/// Install [`at_load`] in the executable's initialisers (`.init_array`), at a priority that runs
/// after the Rust runtime's own (00099) and before every constructor without one, mimalloc's
/// among them. Use it once, at the top level of a binary's `main.rs`.
#[macro_export]
macro_rules! run_at_load {
    () => {
        #[cfg(target_os = "linux")]
        #[used]
        #[link_section = ".init_array.00100"]
        static KILN_AT_LOAD: extern "C" fn() = $crate::process::at_load;
    };
}

/// No transparent huge pages for this process.
///
/// mimalloc asks for huge pages on its arena (`MADV_HUGEPAGE`). With THP in the kernel's common
/// `madvise` mode, the first touch of each 2 MiB region then faults in, and zeroes, a whole huge
/// page: a small app spends a large share of its run zeroing them (`clear_page_erms`), and a
/// fleet's peak resident set counts whole huge pages it touches only in part.
/// The kernel honours this for every later fault of the process, whatever the allocator asked.
pub fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_THP_DISABLE) takes integer arguments only and touches no memory of the
    // process; a kernel that does not know the option returns EINVAL, which changes nothing.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// Transparent huge pages again, from here on, when a run is large: `input_bytes` of YAML or
/// more than [`HUGE_INPUT`].
///
/// Faults are what a large run pays for its memory in a virtual machine, where each fault is
/// expensive: with huge pages a large pass-through takes about fifty times fewer faults and a
/// third less CPU. A small run is the other way round ([`no_huge_pages`]): it touches a few pages
/// of each huge page it would fault in, and zeroing whole ones costs it more than it saves. A parsed
/// object takes about ten times its text, so from [`HUGE_INPUT`] on the huge pages are filled.
pub fn huge_pages_for(input_bytes: usize) {
    #[cfg(target_os = "linux")]
    if input_bytes >= HUGE_INPUT {
        // SAFETY: as in `no_huge_pages`.
        unsafe {
            libc::prctl(libc::PR_SET_THP_DISABLE, 0, 0, 0, 0);
        }
    }
}

/// The input size from which a run uses huge pages ([`huge_pages_for`]).
pub const HUGE_INPUT: usize = 1 << 20;

/// mimalloc never returns freed memory to the system (`purge_delay` -1).
///
/// A run lasts well under a second, and what it frees it soon allocates again: returned pages
/// fault in and are zeroed anew when reused, and at exit mimalloc purged every arena page by
/// page (`madvise(MADV_DONTNEED)`), work the kernel does anyway when the process ends. In
/// kiln-krm's pass-through of 5 000 items that purge at exit was 8% of the main thread's samples.
/// The peak resident set is unchanged: it is the high-water mark either way.
pub fn keep_freed_memory() {
    // SAFETY: mi_option_set only writes mimalloc's option table; it is safe before mimalloc's
    // own initialisation, which keeps an option that is already set.
    unsafe {
        libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1);
    }
}

/// `mi_option_purge_delay` in mimalloc's `mi_option_t` (include/mimalloc.h).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// The stack of each worker thread: templates are evaluated and nested YAML is read recursively
/// on rayon's workers, and rayon's default (2 MiB) is too small for the deepest input the limits
/// allow in an unoptimised build.
pub const WORKER_STACK: usize = 16 << 20;

/// Start the global worker pool before any parallel work: `jobs` threads, or one per core when
/// `None` — except for a `small` run ([`small_input`]), which gets one. The main thread is one
/// of them: `jobs` 1 or a small run starts no thread at all. Each binary calls it once from its
/// main thread; a second call changes nothing.
///
/// A thread pool costs a small run more than it gives: workers are started, woken for each
/// parallel step and spin waiting for more (`sched_yield` becomes the most frequent system
/// call), so `kiln render examples/webapp` is faster with the main thread as the pool's one
/// worker. The crossover lies between web-app fleets of a few dozen and a hundred instances
/// ([`SMALL_INPUT`]). Past it, the main thread works beside the spawned workers instead of
/// handing each parallel step to them and waiting.
///
/// The main thread then needs a worker's stack: its limit (`RLIMIT_STACK`, which the kernel
/// checks as the stack grows) is raised to [`WORKER_STACK`]. Where it cannot be, or the caller
/// is not the main thread (a test harness), every worker is a spawned thread, as many as the
/// pool has.
pub fn worker_pool(jobs: Option<usize>, small: bool) {
    let mut pool = rayon::ThreadPoolBuilder::new().stack_size(WORKER_STACK);
    if let Some(j) = jobs.or(small.then_some(1)) {
        pool = pool.num_threads(j);
    }
    if main_stack_as_worker() {
        pool = pool.use_current_thread();
    }
    // An error means the pool exists already (a test harness, an earlier call): keep it.
    let _ = pool.build_global();
}

/// Whether this is the process's main thread and its stack may now grow to [`WORKER_STACK`]
/// (its soft limit raised if it was lower; the hard limit allowing it).
fn main_stack_as_worker() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: gettid and getpid take no arguments; the main thread's id is the process's.
        if unsafe { libc::gettid() != libc::getpid() } {
            return false;
        }
        let want = WORKER_STACK as libc::rlim_t;
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the struct it is given, which lives for the call.
        if unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut lim) } != 0 {
            return false;
        }
        if lim.rlim_cur == libc::RLIM_INFINITY || lim.rlim_cur >= want {
            return true;
        }
        if lim.rlim_max != libc::RLIM_INFINITY && lim.rlim_max < want {
            return false;
        }
        lim.rlim_cur = want;
        // SAFETY: setrlimit reads the struct it is given, which lives for the call.
        unsafe { libc::setrlimit(libc::RLIMIT_STACK, &lim) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    false
}

/// Outputs from this size on are given their space in the file before they are written
/// ([`reserve_file_space`]).
pub const RESERVED_OUTPUT: usize = 1 << 20;

/// When `fd` is a regular file and `len` at least [`RESERVED_OUTPUT`], ask the file system for
/// the space `len` more bytes will take where the next write lands, before writing them
/// (`fallocate` with `FALLOC_FL_KEEP_SIZE`: the file's size, and so what a reader sees, still
/// grows only as the bytes are written). On ext4 each page written into a range without blocks
/// reserves a block on its own (delayed allocation); into a range already allocated it does
/// not, and the write of a large output is serial work on the main thread at the end of the run,
/// where a third of it goes to those reservations. Linkers (mold, lld) do the same with their
/// output. `Ok(true)` when the space was reserved, `Ok(false)` when nothing was asked (not a
/// regular file, a small output, not Linux); an error is the file system's answer (no
/// `fallocate` on it, a full disk), after which the writes go as they would have.
pub fn reserve_file_space(fd: std::os::fd::BorrowedFd<'_>, len: usize) -> std::io::Result<bool> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        if len < RESERVED_OUTPUT {
            return Ok(false);
        }
        let fd = fd.as_raw_fd();
        let Ok(len) = libc::off_t::try_from(len) else {
            return Ok(false);
        };
        // SAFETY: `fd` is borrowed, so open for the whole call; fstat writes the struct it is
        // given; fcntl, lseek and fallocate take plain integers.
        unsafe {
            let mut st: libc::stat = std::mem::zeroed();
            if libc::fstat(fd, &mut st) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if st.st_mode & libc::S_IFMT != libc::S_IFREG {
                return Ok(false);
            }
            // With O_APPEND (`>>`) every write lands at the end, wherever the offset is.
            let flags = libc::fcntl(fd, libc::F_GETFL);
            let at = if flags >= 0 && flags & libc::O_APPEND != 0 {
                st.st_size
            } else {
                libc::lseek(fd, 0, libc::SEEK_CUR)
            };
            if at < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::fallocate(fd, libc::FALLOC_FL_KEEP_SIZE, at, len) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(true)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (fd, len);
        Ok(false)
    }
}

/// The most items a worker takes in one piece from a parallel pass over files, documents or
/// units (`with_max_len`). Rayon splits an indexed iterator into about as many pieces as there
/// are threads, and splits a piece again only once it is stolen: the main thread then runs its
/// first piece, thousands of items, from start to end, and once the other workers are done they
/// have nothing left to steal, and sit idle at the end of a fleet's render. Pieces of a few items cost a join
/// each (well under a microsecond) and leave at most a few items' work for the last worker.
pub const PIECE: usize = 4;

/// Inputs up to this many bytes are small: [`worker_pool`] gives them no threads.
pub const SMALL_INPUT: u64 = 32 << 10;

/// How many directory entries [`small_input`] looks at before it calls an input large: the
/// look costs a small input nothing and a large one no more than this.
const SMALL_ENTRIES: usize = 64;

/// Whether the files at `paths` (files or directories, walked as the reading walks them:
/// hidden entries skipped) come to at most [`SMALL_INPUT`] bytes, from their sizes alone.
///
/// An estimate, on the safe side: a symlink, anything but a file or a directory, an entry that
/// cannot be read or more than [`SMALL_ENTRIES`] entries make the input large. Nothing is
/// opened but directories, and no symlink is followed.
pub fn small_input<P: AsRef<std::path::Path>>(paths: &[P]) -> bool {
    use std::path::PathBuf;
    let mut left = SMALL_ENTRIES;
    let mut bytes = 0u64;
    // Counts one entry; false when the input is not small.
    let mut count = |meta: std::io::Result<std::fs::Metadata>, path: PathBuf, dirs: &mut Vec<_>| {
        let Ok(meta) = meta else { return false };
        if left == 0 {
            return false;
        }
        left -= 1;
        let kind = meta.file_type();
        if kind.is_file() {
            bytes += meta.len();
            bytes <= SMALL_INPUT
        } else if kind.is_dir() {
            dirs.push(path);
            true
        } else {
            false
        }
    };
    let mut dirs: Vec<PathBuf> = Vec::new();
    for p in paths {
        let p = p.as_ref();
        if !count(std::fs::symlink_metadata(p), p.to_path_buf(), &mut dirs) {
            return false;
        }
    }
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return false;
        };
        for e in entries {
            let Ok(e) = e else { return false };
            if e.file_name().as_encoded_bytes().starts_with(b".") {
                continue;
            }
            // DirEntry::metadata does not follow a symlink.
            if !count(e.metadata(), e.path(), &mut dirs) {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// A test process is not one of kiln's executables (`at_load` never ran in it): what it
    /// discards is dropped.
    #[test]
    fn discard_drops_outside_the_executables() {
        static DROPPED: AtomicBool = AtomicBool::new(false);
        struct Probe;
        impl Drop for Probe {
            fn drop(&mut self) {
                DROPPED.store(true, Ordering::SeqCst);
            }
        }
        discard(Probe);
        assert!(DROPPED.load(Ordering::SeqCst));
    }

    /// Huge pages come back from `HUGE_INPUT` bytes on, not below (read with PR_GET_THP_DISABLE;
    /// this test process's own setting is all it changes).
    #[cfg(target_os = "linux")]
    #[test]
    fn huge_pages_only_for_large_inputs() {
        // SAFETY: PR_GET_THP_DISABLE takes no pointer and returns the flag.
        let disabled = || unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
        no_huge_pages();
        if disabled() != 1 {
            // A kernel without the option: nothing to check.
            return;
        }
        huge_pages_for(HUGE_INPUT - 1);
        assert_eq!(disabled(), 1, "a small input turned huge pages on");
        huge_pages_for(HUGE_INPUT);
        assert_eq!(disabled(), 0, "a large input left huge pages off");
    }

    /// The space for a large output is reserved where the next write lands (the offset, or the
    /// end of a file opened for appending), and nothing a reader sees changes: not the size, not
    /// the bytes. A small output, or a device, asks for nothing.
    #[cfg(target_os = "linux")]
    #[test]
    fn space_is_reserved_where_a_large_output_will_be_written() {
        use std::io::{Seek, Write};
        use std::os::fd::AsFd;
        use std::os::unix::fs::MetadataExt;
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("out.yaml");
        // Already 3 MiB long, with blocks.
        let before = vec![b'#'; 3 * RESERVED_OUTPUT];
        let blocks = |f: &std::fs::File| f.metadata().unwrap().blocks() * 512;
        let open = |append: bool, at_end: bool| {
            std::fs::write(&path, &before).unwrap();
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .append(append)
                .open(&path)
                .unwrap();
            if at_end {
                f.seek(std::io::SeekFrom::End(0)).unwrap();
            }
            let had = blocks(&f);
            assert!(had >= before.len() as u64, "{had}");
            (f, had)
        };
        let out = 2 * RESERVED_OUTPUT;
        let cases = [
            // At offset 0 the next 2 MiB have blocks already.
            ("offset 0", false, false, 0),
            ("offset at the end", false, true, out),
            ("appending", true, false, out),
        ];
        for (case, append, at_end, more) in cases {
            let (mut f, had) = open(append, at_end);
            assert!(!reserve_file_space(f.as_fd(), RESERVED_OUTPUT - 1).unwrap());
            assert_eq!(blocks(&f), had, "{case}: space reserved for a small output");
            assert!(reserve_file_space(f.as_fd(), out).unwrap(), "{case}");
            let now = blocks(&f);
            assert!(
                now >= had + more as u64 && now < had + more as u64 + RESERVED_OUTPUT as u64,
                "{case}: {had} -> {now} bytes in blocks"
            );
            assert_eq!(
                f.metadata().unwrap().len(),
                before.len() as u64,
                "{case}: size"
            );
            f.write_all(b"after\n").unwrap();
            let bytes = std::fs::read(&path).unwrap();
            let expected = if more == 0 {
                [&b"after\n"[..], &before[6..]].concat()
            } else {
                [&before[..], b"after\n"].concat()
            };
            assert!(
                bytes == expected,
                "{case}: the bytes are not what was written"
            );
        }

        // Not a regular file.
        let null = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/null")
            .unwrap();
        assert!(!reserve_file_space(null.as_fd(), out).unwrap());
    }

    /// The estimate: sizes of files up to SMALL_INPUT in all, hidden entries skipped, and on the
    /// safe side for what it does not look into (symlinks, too many entries, missing paths).
    #[test]
    fn small_input_sums_file_sizes_within_bounds() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let write = |rel: &str, bytes: usize| {
            let p = d.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x".repeat(bytes)).unwrap();
        };
        let half = (SMALL_INPUT / 2) as usize;
        write("a.yaml", half);
        write("sub/b.yaml", half);
        assert!(small_input(&[d]), "exactly SMALL_INPUT is small");
        assert!(small_input(&[d.join("a.yaml")]), "a named file");
        write(".git/objects/big", 10 * half);
        assert!(small_input(&[d]), "hidden entries are skipped");
        assert!(!small_input(&[d, d]), "each named path counts");
        write("sub/c.yaml", 1);
        assert!(!small_input(&[d]), "one byte over");
        assert!(
            !small_input(&[d.join("missing")]),
            "a path that is not there"
        );

        let many = tempfile::tempdir().unwrap();
        for i in 0..SMALL_ENTRIES {
            std::fs::write(many.path().join(format!("{i}.yaml")), "k: v\n").unwrap();
        }
        assert!(!small_input(&[many.path()]), "the directory and 64 files");
        std::fs::remove_file(many.path().join("0.yaml")).unwrap();
        assert!(small_input(&[many.path()]), "the directory and 63 files");

        #[cfg(unix)]
        {
            let link = tempfile::tempdir().unwrap();
            std::os::unix::fs::symlink(d.join("a.yaml"), link.path().join("a.yaml")).unwrap();
            assert!(
                !small_input(&[link.path()]),
                "a symlink is not looked through"
            );
        }
    }
}
