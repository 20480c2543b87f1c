//! Set-up of the process the binaries run in (called first thing in each `main`).

/// No transparent huge pages for this process.
///
/// The binaries allocate with mimalloc, which reserves a 1 GiB arena and asks for huge pages on
/// it (`MADV_HUGEPAGE`). With THP in the kernel's common `madvise` mode, the first touch of each
/// 2 MiB region then faults in, and zeroes, a whole huge page: in a profile of one small app as a
/// process that zeroing (`clear_page_erms`) was 12% of the samples, and at 10 000 web-app
/// instances whole huge pages counted in the peak resident set (171–173 MiB against 137 MiB with
/// 4 KiB pages, user and system time the same within noise). The kernel honours this for every
/// later fault of the process, whatever the allocator asked; mimalloc's own `allow_thp` option
/// cannot help, since its arena is reserved before `main` runs.
pub fn no_huge_pages() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_THP_DISABLE) takes integer arguments only and touches no memory of the
    // process; a kernel that does not know the option returns EINVAL, which changes nothing.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// The stack of each worker thread: templates are evaluated and nested YAML is read recursively
/// on rayon's workers, and rayon's default (2 MiB) is too small for the deepest input the limits
/// allow in an unoptimised build.
pub const WORKER_STACK: usize = 16 << 20;

/// Start the global worker pool with [`WORKER_STACK`]-sized stacks and `jobs` threads (one per
/// core when `None`). Each binary calls it before any parallel work; a second call changes
/// nothing.
pub fn worker_pool(jobs: Option<usize>) {
    let mut pool = rayon::ThreadPoolBuilder::new().stack_size(WORKER_STACK);
    if let Some(j) = jobs {
        pool = pool.num_threads(j);
    }
    // An error means the pool exists already (a test harness, an earlier call): keep it.
    let _ = pool.build_global();
}
