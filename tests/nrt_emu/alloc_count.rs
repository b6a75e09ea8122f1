//! The test binary's global allocator: it forwards to the system allocator and counts
//!
//! - the allocations (alloc, alloc_zeroed, realloc) of each thread, for `hot_path`, which
//!   proves the warm async submit allocates nothing on the submitting thread; other tests
//!   running on other threads do not disturb a thread's count;
//! - the live heap bytes and allocations of the whole process, for `leak`. Those include every
//!   test running at the time, so `leak` measures in a child process that runs it alone
//!   ([`run_alone`]).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::process::Command;
use std::sync::atomic::{AtomicI64, Ordering};

thread_local! {
    /// Allocations made by this thread. `const`-initialised and without a destructor, so
    /// touching it never allocates or registers anything.
    static THREAD_ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);
static LIVE_ALLOCS: AtomicI64 = AtomicI64::new(0);

struct Counting;

impl Counting {
    #[inline]
    fn count_thread() {
        // `try_with`: during thread teardown the slot may be gone; such allocations are not ours.
        let _ = THREAD_ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
    }

    #[inline]
    fn count_live(p: *mut u8, bytes: i64, allocs: i64) {
        if !p.is_null() {
            LIVE_BYTES.fetch_add(bytes, Ordering::Relaxed);
            LIVE_ALLOCS.fetch_add(allocs, Ordering::Relaxed);
        }
    }
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged; the counters
// are a plain thread-local `Cell` and atomics, whose updates neither allocate nor re-enter the
// allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        Self::count_thread();
        // SAFETY: forwarded contract.
        let p = unsafe { System.alloc(layout) };
        Self::count_live(p, layout.size() as i64, 1);
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        Self::count_thread();
        // SAFETY: forwarded contract.
        let p = unsafe { System.alloc_zeroed(layout) };
        Self::count_live(p, layout.size() as i64, 1);
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        Self::count_thread();
        // SAFETY: forwarded contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        Self::count_live(p, new_size as i64 - layout.size() as i64, 0);
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded contract.
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        LIVE_ALLOCS.fetch_sub(1, Ordering::Relaxed);
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by the current thread so far.
pub fn thread_allocations() -> u64 {
    THREAD_ALLOCATIONS.try_with(Cell::get).unwrap_or(0)
}

/// Live heap (bytes, allocations) of the whole process.
pub fn live_heap() -> (i64, i64) {
    (
        LIVE_BYTES.load(Ordering::SeqCst),
        LIVE_ALLOCS.load(Ordering::SeqCst),
    )
}

/// Set in the child process [`run_alone`] starts.
const ALONE: &str = "NRT_EMU_TEST_ALONE";

/// Runs test `path` (its full name in this binary, e.g. `leak::cycles`) alone in a child
/// process of this binary and fails unless it ran there and passed; returns `true` in that
/// child, where the caller then does the work. A filter that matched no test fails too, so
/// the parent cannot pass without the test having run.
pub fn run_alone(path: &str) -> bool {
    if std::env::var_os(ALONE).is_some_and(|v| v == path) {
        return true;
    }
    let out = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([path, "--exact", "--nocapture", "--test-threads=1"])
        .env(ALONE, path)
        .output()
        .expect("the test binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{path} in a child process:\n{stdout}\n{stderr}"
    );
    false
}
