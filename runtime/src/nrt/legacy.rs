//! Legacy implicit async execution (docs/c-api.md §5.4): with
//! `NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS` > 0, `nrt_execute` submits through the runtime's
//! async execution unit (device tensors only, as libnrt requires) and returns; a dispatcher
//! thread of the session takes the completions in submission order and hands each to the front
//! end (which calls the callback the program registered with
//! `nrt_register_async_exec_callback`). `nrt_async_drain_queued_execs` waits until a core has
//! nothing queued ([`Legacy::drain`]).
//!
//! The dispatcher never blocks `nrt_close`: it only polls, through a [`Poll`] that fails fast
//! while the session's guard is held, and it stops when the session goes.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::exec::worker::ExecRequest;
use crate::exec::ExecReport;
use crate::status::NrtStatus;

/// What one look at an async request found.
#[derive(Debug)]
pub enum Polled {
    /// It finished, so.
    Done(Result<ExecReport>),
    /// Not yet, or the session could not be reached right now: look again.
    Later,
    /// The session is gone: nothing more will complete.
    Gone,
}

/// How the dispatcher looks at a request without blocking the session's close.
pub type Poll = Box<dyn Fn(ExecRequest) -> Polled + Send + Sync>;

/// A finished legacy-async execution, as the dispatcher hands it to the front end.
#[derive(Debug)]
pub struct Completion {
    /// The request.
    pub req: ExecRequest,
    /// The runtime's model handle.
    pub model: u32,
    /// The visible core it ran on.
    pub visible: u32,
    /// How it ended.
    pub result: Result<ExecReport>,
}

/// What the front end does with each completion (in submission order, on the dispatcher
/// thread).
pub type OnComplete = Box<dyn Fn(&Completion) + Send + Sync>;

struct Job {
    req: ExecRequest,
    model: u32,
    vnc: u32,
    visible: u32,
}

#[derive(Default)]
struct Queue {
    jobs: Mutex<VecDeque<Job>>,
    changed: Condvar,
    stop: AtomicBool,
}

/// A session's legacy-async dispatcher.
pub struct Legacy {
    queue: Arc<Queue>,
    worker: Mutex<Option<JoinHandle<()>>>,
    hooks: Arc<(Poll, OnComplete)>,
}

impl std::fmt::Debug for Legacy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Legacy").finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Drop for Legacy {
    fn drop(&mut self) {
        self.queue.stop.store(true, Ordering::SeqCst);
        self.queue.changed.notify_all();
        if let Some(h) = lock(&self.worker).take() {
            let _ = h.join();
        }
    }
}

fn dispatch(q: &Queue, poll: &Poll, on_complete: &OnComplete) {
    loop {
        let Some((req, model, visible)) = ({
            let mut jobs = lock(&q.jobs);
            while jobs.is_empty() && !q.stop.load(Ordering::SeqCst) {
                jobs = q.changed.wait(jobs).unwrap_or_else(|p| p.into_inner());
            }
            jobs.front().map(|j| (j.req, j.model, j.visible))
        }) else {
            return;
        };
        // Poll, never block: nrt_close takes the session exclusively and then stops this thread.
        let result = loop {
            if q.stop.load(Ordering::SeqCst) {
                return;
            }
            match poll(req) {
                Polled::Done(r) => break r,
                Polled::Gone => return,
                Polled::Later => std::thread::sleep(Duration::from_micros(50)),
            }
        };
        on_complete(&Completion {
            req,
            model,
            visible,
            result,
        });
        lock(&q.jobs).pop_front();
        q.changed.notify_all();
    }
}

impl Legacy {
    /// An idle dispatcher (its thread starts at the first submit) that looks at requests with
    /// `poll` and hands each completion to `on_complete`.
    pub fn new(poll: Poll, on_complete: OnComplete) -> Legacy {
        Legacy {
            queue: Arc::default(),
            worker: Mutex::new(None),
            hooks: Arc::new((poll, on_complete)),
        }
    }

    /// Queues submitted request `req` of `model` on the runtime's logical core `vnc` (visible
    /// core `visible`).
    pub fn submit(&self, req: ExecRequest, model: u32, vnc: u32, visible: u32) {
        let mut w = lock(&self.worker);
        if w.is_none() {
            let q = Arc::clone(&self.queue);
            let hooks = Arc::clone(&self.hooks);
            *w = Some(
                std::thread::Builder::new()
                    .name("nrt-legacy-async".into())
                    .spawn(move || dispatch(&q, &hooks.0, &hooks.1))
                    .expect("spawning the legacy async dispatcher"),
            );
        }
        lock(&self.queue.jobs).push_back(Job {
            req,
            model,
            vnc,
            visible,
        });
        self.queue.changed.notify_all();
    }

    /// Waits until the runtime's logical core `vnc` has no queued execution, at most `timeout`.
    pub fn drain(&self, vnc: u32, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut jobs = lock(&self.queue.jobs);
        while jobs.iter().any(|j| j.vnc == vnc) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::new(
                    NrtStatus::Timeout,
                    format!("queued executions of core {vnc} did not complete within {timeout:?}"),
                ));
            }
            jobs = self
                .queue
                .changed
                .wait_timeout(jobs, left.min(Duration::from_millis(10)))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        Ok(())
    }
}
