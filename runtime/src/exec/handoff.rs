//! The hand-off between a logical core's API threads and its async worker (docs/runtime.md §4.1 async
//! fork, docs/runtime.md §4.4): staged executions go in, in submission order; their results come out, keyed by
//! sequence id, to whoever waits for them.
//!
//! # What this module owns
//!
//! * The FIFO of staged executions the worker has not finished, and the results it published.
//! * The blocking: the worker sleeps until there is work or a shutdown, and a waiter sleeps
//!   until its result is published, a predicate holds, or its timeout passes. The two sides
//!   sleep on separate condition variables, and each is notified only when someone sleeps on
//!   it (the board counts its sleepers under its lock): a push while the worker is busy
//!   completing an earlier job, or a publish nobody waits for, makes no wake-up call (no
//!   futex system call) at all.
//! * The worker's short poll before it sleeps: finding no job, it watches the queue's length
//!   (an atomic mirror, written under the lock) for up to [`IDLE_SPIN`] before it marks
//!   itself idle and sleeps. A submit that follows a completion closely (a pipelined caller:
//!   wait, then submit again) then finds the worker awake and makes no wake-up call, which
//!   would otherwise cost it a futex system call and an inter-processor interrupt. The poll
//!   only decides when the worker looks again: whether a job is there is always decided
//!   under the lock, so it changes no result or order. (Under loom there is no poll.)
//! * A waiter's short poll before it sleeps, the mirror image: it watches the count of
//!   published results (an atomic, written under the lock) for up to [`WAIT_SPIN`], yielding
//!   its CPU between looks, before it counts itself a sleeper. A pipelined caller's next
//!   result is usually published within that time, and then the worker's publish makes no
//!   wake-up call: on a virtual machine, waking a sleeping thread on an idle vCPU costs an
//!   inter-processor interrupt and a VM exit, which made 8 executions in flight slower than
//!   one at a time. (Under loom there is no poll.)
//!
//! An execution stays at the front of the FIFO while the worker completes it and leaves it
//! only in the same critical section that publishes its result, so a waiter never sees it in
//! neither place. Failed executions (including those that poisoned the execution unit) are
//! published like successful ones, with their error: a waiter wakes either way.
//!
//! It does not know what an execution is or how it completes ([`super::worker`] does). The
//! mutex and condition variable come from [`crate::sync`], so this module is model-checked
//! with loom as it is (`runtime/tests/loom/exec.rs`).

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use crate::sync::{AtomicU64, Condvar, Mutex, MutexGuard, Ordering, PoisonError};

/// How long an idle worker polls for a next job before it sleeps (see the module docs).
pub const IDLE_SPIN: Duration = Duration::from_micros(50);

/// How long a waiter polls for its result before it sleeps (see the module docs): about one
/// small model's simulated execution on a slow host.
pub const WAIT_SPIN: Duration = Duration::from_micros(250);

struct Board<J, R> {
    pending: VecDeque<J>,
    results: BTreeMap<u64, R>,
    shutdown: bool,
    /// Whether the worker sleeps on `work` (set and cleared by the worker under the lock).
    worker_idle: bool,
    /// How many waiters sleep on `done` (counted under the lock).
    waiters: u32,
}

/// One logical core's queue of staged jobs `J` and published results `R`.
pub struct Handoff<J, R> {
    board: Mutex<Board<J, R>>,
    /// `pending.len()`, stored under the lock at every change: what the worker's poll
    /// watches (a hint only; see [`Handoff::next`]).
    queued: AtomicU64,
    /// Results published so far, stored under the lock at every publish: what a waiter's poll
    /// watches (a hint only; see [`Handoff::wait`]).
    published: AtomicU64,
    /// The worker sleeps here: notified by a push or a shutdown that finds it idle.
    work: Condvar,
    /// Waiters sleep here: notified by a publish or a shutdown that finds any.
    done: Condvar,
}

impl<J, R> Default for Handoff<J, R> {
    fn default() -> Self {
        Self::new()
    }
}

impl<J, R> std::fmt::Debug for Handoff<J, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let b = self.lock();
        f.debug_struct("Handoff")
            .field("pending", &b.pending.len())
            .field("results", &b.results.len())
            .field("shutdown", &b.shutdown)
            .finish()
    }
}

impl<J, R> Handoff<J, R> {
    /// An empty, running hand-off.
    pub fn new() -> Self {
        Handoff {
            board: Mutex::new(Board {
                pending: VecDeque::new(),
                results: BTreeMap::new(),
                shutdown: false,
                worker_idle: false,
                waiters: 0,
            }),
            queued: AtomicU64::new(0),
            published: AtomicU64::new(0),
            work: Condvar::new(),
            done: Condvar::new(),
        }
    }

    /// The board lock. Every update is a single queue or map operation, so a panic while
    /// holding it leaves the board consistent and poisoning is ignored.
    fn lock(&self) -> MutexGuard<'_, Board<J, R>> {
        self.board.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A waiter's sleep on `done`, counted so a publish knows to notify.
    fn wait_timeout<'a>(
        &self,
        mut b: MutexGuard<'a, Board<J, R>>,
        timeout: Duration,
    ) -> MutexGuard<'a, Board<J, R>> {
        b.waiters += 1;
        let mut b = self
            .done
            .wait_timeout(b, timeout)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
        b.waiters -= 1;
        b
    }

    /// Makes room for `additional` pending jobs without reallocating later.
    pub fn reserve(&self, additional: usize) {
        self.lock().pending.reserve(additional);
    }

    /// Queues a staged job for the worker, waking it only if it sleeps (a busy worker finds
    /// the job when it looks for its next one).
    pub fn push(&self, job: J) {
        let idle = {
            let mut b = self.lock();
            b.pending.push_back(job);
            self.queued.store(b.pending.len() as u64, Ordering::Relaxed);
            b.worker_idle
        };
        if idle {
            self.work.notify_one();
        }
    }

    /// The worker's side: blocks until a job is pending and returns (a copy of) the oldest,
    /// which stays queued until [`finish`](Self::finish); `None` once shut down and drained.
    /// Finding none, it first polls for up to [`IDLE_SPIN`] (outside the lock), then sleeps.
    pub fn next(&self) -> Option<J>
    where
        J: Clone,
    {
        let mut b = self.lock();
        let mut polled = false;
        loop {
            if let Some(front) = b.pending.front() {
                return Some(front.clone());
            }
            if b.shutdown {
                return None;
            }
            if !polled {
                polled = true;
                drop(b);
                self.poll_for_job();
                b = self.lock();
                continue;
            }
            b.worker_idle = true;
            b = self.work.wait(b).unwrap_or_else(PoisonError::into_inner);
            b.worker_idle = false;
        }
    }

    /// Returns once a job looks queued or [`IDLE_SPIN`] passed (a hint: the caller re-checks
    /// under the lock).
    #[cfg(not(loom))]
    fn poll_for_job(&self) {
        let start = Instant::now();
        loop {
            for _ in 0..64 {
                if self.queued.load(Ordering::Relaxed) > 0 {
                    return;
                }
                std::hint::spin_loop();
            }
            if start.elapsed() >= IDLE_SPIN {
                return;
            }
        }
    }

    /// Under loom the worker does not poll: it re-checks once and sleeps.
    #[cfg(loom)]
    fn poll_for_job(&self) {}

    /// The worker's side: the oldest job finished with `result`, published under `seq_id`.
    /// Wakes every waiter (each checks whether its result or predicate is there).
    pub fn finish(&self, seq_id: u64, result: R) {
        let waiters = {
            let mut b = self.lock();
            b.pending.pop_front();
            self.queued.store(b.pending.len() as u64, Ordering::Relaxed);
            b.results.insert(seq_id, result);
            let n = self.published.load(Ordering::Relaxed);
            self.published.store(n + 1, Ordering::Relaxed);
            b.waiters
        };
        if waiters > 0 {
            self.done.notify_all();
        }
    }

    /// Takes the result published under `seq_id`, waiting up to `timeout` for it; `None` if it
    /// was not published in time. Not there yet, it first polls for up to [`WAIT_SPIN`]
    /// (outside the lock), then sleeps.
    pub fn wait(&self, seq_id: u64, timeout: Duration) -> Option<R> {
        let start = Instant::now();
        let deadline = start + timeout;
        let poll_until = start + WAIT_SPIN.min(timeout);
        let mut b = self.lock();
        loop {
            if let Some(r) = b.results.remove(&seq_id) {
                return Some(r);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            if cfg!(not(loom)) && now < poll_until {
                let seen = self.published.load(Ordering::Relaxed);
                drop(b);
                self.poll_for_publish(seen, poll_until);
                b = self.lock();
                continue;
            }
            b = self.wait_timeout(b, deadline - now);
        }
    }

    /// Returns once a result looks published after the `seen`-th or `until` passed (a hint:
    /// the caller re-checks under the lock). Yields the CPU between looks, so a waiter that
    /// shares one with a worker does not hold the worker back.
    #[cfg(not(loom))]
    fn poll_for_publish(&self, seen: u64, until: Instant) {
        loop {
            for _ in 0..64 {
                if self.published.load(Ordering::Relaxed) != seen {
                    return;
                }
                std::hint::spin_loop();
            }
            if Instant::now() >= until {
                return;
            }
            std::thread::yield_now();
        }
    }

    /// Under loom a waiter does not poll (and `wait` never calls this).
    #[cfg(loom)]
    fn poll_for_publish(&self, _seen: u64, _until: Instant) {}

    /// Takes the result published under `seq_id`, if it is.
    pub fn poll(&self, seq_id: u64) -> Option<R> {
        self.lock().results.remove(&seq_id)
    }

    /// Blocks until `ready()` holds, waking at every publish and at least every `recheck`
    /// (for conditions that change without a publish); `false` if `timeout` passed first.
    pub fn wait_until(
        &self,
        ready: impl Fn() -> bool,
        timeout: Duration,
        recheck: Duration,
    ) -> bool {
        let deadline = Instant::now() + timeout;
        let mut b = self.lock();
        while !ready() {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            b = self.wait_timeout(b, (deadline - now).min(recheck));
        }
        true
    }

    /// Asks the worker to stop once the pending jobs are done, and wakes it.
    pub fn shutdown(&self) {
        self.lock().shutdown = true;
        self.work.notify_all();
        self.done.notify_all();
    }
}
