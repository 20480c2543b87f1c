//! Set-up of the process the binaries run in.
//!
//! Each binary installs [`at_load`] with [`run_at_load!`](crate::run_at_load), so that it runs
//! before the allocator reserves its first arena, and then starts its workers with
//! [`worker_pool`].

/// What every binary sets before anything is allocated: no transparent huge pages, and freed
/// memory kept for reuse ([`no_huge_pages`], [`keep_freed_memory`]).
///
/// It runs from the executable's initialisers ([`run_at_load!`](crate::run_at_load)), before
/// mimalloc's own, which reserves a 1 GiB arena and advises huge pages on it: called from `main`
/// instead, the kernel had already handed out two huge pages for the allocations the runtime
/// makes before `main` (4 MiB zeroed in every run; a process's resident set at its first read of
/// stdin went from 8.1 MiB to 4.3 MiB).
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
/// exit, and the kernel takes back its memory whole. In kiln-krm's pass-through of 5 000 items,
/// dropping the items, the units and the texts took 11 ms of a 62 ms run, on the thread that
/// then writes the answer. A library caller (a test, an embedding program) gets the plain drop.
pub fn discard<T>(x: T) {
    if EXITS_SOON.load(std::sync::atomic::Ordering::Relaxed) {
        std::mem::forget(x);
    } else {
        drop(x);
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
/// page: in a profile of one small app as a process that zeroing (`clear_page_erms`) was 12% of
/// the samples, and at 10 000 web-app instances whole huge pages counted in the peak resident set
/// (171–173 MiB against 137 MiB with 4 KiB pages, user and system time the same within noise).
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
/// Faults are what a large run pays for its memory on this kind of machine (a virtual machine,
/// where each fault of a 4 KiB page costs about 2 µs): kiln-krm's pass-through of 5 000 items
/// (4.5 MB) took 16 000 faults and 120 ms of CPU with 4 KiB pages, 300 faults and 84 ms with
/// huge pages. A small run is the other way round ([`no_huge_pages`]): it touches a few pages of
/// each huge page it would fault in, and zeroing whole ones cost a small app 5%. A parsed
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
}
