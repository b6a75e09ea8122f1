//! Execution: `nrt_execute`, `nrt_execute_repeat`, and the legacy implicit-async callback.
//!
//! With `NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS` > 0 (legacy implicit async mode)
//! `nrt_execute` submits through the runtime's async execution unit (device tensors only, as
//! libnrt requires) and returns; a dispatcher thread of the session takes the completions in
//! submission order and calls the registered callback with each status
//! (`nrt_register_async_exec_callback`; without one the status is only logged when it is an
//! error). `nrt_async_drain_queued_execs` waits until a core has nothing queued. The dispatcher
//! never blocks `nrt_close`: it only polls, and stops when the session goes.

use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nrt_runtime::exec::worker::ExecRequest;

use nrt_runtime::exec::ExecReport;
use nrt_runtime::{Error, Result, Runtime};

use crate::guard;
use crate::session::{self, Session};
use crate::types::{AsyncExecCallback, NrtStatusC};

struct Callback {
    f: AsyncExecCallback,
    params: usize,
}

static CALLBACK: Mutex<Callback> = Mutex::new(Callback { f: None, params: 0 });

struct Job {
    req: ExecRequest,
    model: u32,
    vnc: u32,
}

#[derive(Default)]
struct Queue {
    jobs: Mutex<VecDeque<Job>>,
    changed: Condvar,
    stop: AtomicBool,
}

/// A session's legacy-async dispatcher.
#[derive(Default)]
pub struct Legacy {
    queue: Arc<Queue>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
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

fn dispatch(q: &Queue) {
    loop {
        let Some((req, model, vnc)) = ({
            let mut jobs = lock(&q.jobs);
            while jobs.is_empty() && !q.stop.load(Ordering::SeqCst) {
                jobs = q.changed.wait(jobs).unwrap_or_else(|p| p.into_inner());
            }
            jobs.front().map(|j| (j.req, j.model, j.vnc))
        }) else {
            return;
        };
        // Poll, never block: nrt_close takes the session exclusively and then stops this thread.
        let result = loop {
            if q.stop.load(Ordering::SeqCst) {
                return;
            }
            match session::NRT.try_with_session(|rt, s| Ok((rt.poll(req), s.visible_index(vnc)))) {
                Some(Ok((Some(r), v))) => break (r, v),
                Some(Err(_)) => return,
                _ => std::thread::sleep(Duration::from_micros(50)),
            }
        };
        let (r, v) = result;
        let status = r.as_ref().map_or_else(|e| e.status.code(), |_| 0);
        if let Err(e) = &r {
            let _c = crate::log::enter("nrt_execute");
            crate::log::error(&format!("async execution {:#x}: {e}", req.seq_id));
        }
        let cb = lock(&CALLBACK);
        if let Some(f) = cb.f {
            // SAFETY: the callback and its parameter were registered by the program for exactly
            // this call.
            unsafe { f(cb.params as *mut c_void, model, v, req.seq_id, status) };
        }
        drop(cb);
        lock(&q.jobs).pop_front();
        q.changed.notify_all();
    }
}

impl Legacy {
    fn submit(&self, job: Job) {
        let mut w = lock(&self.worker);
        if w.is_none() {
            let q = Arc::clone(&self.queue);
            *w = Some(
                std::thread::Builder::new()
                    .name("nrt-legacy-async".into())
                    .spawn(move || dispatch(&q))
                    .expect("spawning the legacy async dispatcher"),
            );
        }
        lock(&self.queue.jobs).push_back(job);
        self.queue.changed.notify_all();
    }

    fn drain(&self, vnc: u32, timeout: Duration) -> Result<()> {
        let deadline = Instant::now() + timeout;
        let mut jobs = lock(&self.queue.jobs);
        while jobs.iter().any(|j| j.vnc == vnc) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(Error::new(
                    nrt_runtime::NrtStatus::Timeout,
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

/// One execution of `model` with the caller's sets; the trace records it.
/// In legacy async mode the execution is only queued (`Ok(None)`).
pub fn execute_once(
    rt: &Runtime,
    s: &Session,
    model: *mut c_void,
    input_set: *const c_void,
    output_set: *mut c_void,
) -> Result<Option<ExecReport>> {
    let m = s.model(model as usize, "model")?;
    let ins = s.tensor_set(input_set as usize, "input_set")?;
    let outs = s.tensor_set(output_set as usize, "output_set")?;
    if rt.config().async_max_inflight > 0 {
        let req = rt.execute_async_counted(m.id, &ins, &outs)?;
        let v = s.visible_index(m.vnc);
        s.trace
            .record_async(v, "async_exec_schedule", req.seq_id, "nrt_execute");
        s.legacy.submit(Job {
            req,
            model: m.id.0,
            vnc: m.vnc,
        });
        return Ok(None);
    }
    let r = rt.execute(m.id, &ins, &outs);
    s.trace.record_exec(s.visible_index(m.vnc), m.id.0, &r);
    if let Err(e) = &r {
        crate::api::profile::execution_failed(s, s.visible_index(m.vnc), e);
    }
    r.map(Some)
}

/// `nrt_execute`.
pub extern "C" fn nrt_execute(
    model: *mut c_void,
    input_set: *const c_void,
    output_set: *mut c_void,
) -> NrtStatusC {
    guard::status("nrt_execute", || {
        session::with(|rt, s| execute_once(rt, s, model, input_set, output_set).map(|_| ()))
    })
}

/// `nrt_execute_repeat`: `repeat_count` executions, each after the first reading the previous
/// one's outputs as its inputs (the runtime's [`Runtime::execute_repeat`] owns the rule). One
/// repetition is exactly `nrt_execute`; more always wait for the last run, also in legacy async
/// mode.
pub extern "C" fn nrt_execute_repeat(
    model: *mut c_void,
    input_set: *const c_void,
    output_set: *mut c_void,
    repeat_count: i32,
) -> NrtStatusC {
    guard::status("nrt_execute_repeat", || {
        let count = u32::try_from(repeat_count)
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| {
                Error::invalid(format!("repeat_count {repeat_count}: at least 1 execution"))
            })?;
        session::with(|rt, s| {
            if count == 1 {
                return execute_once(rt, s, model, input_set, output_set).map(|_| ());
            }
            let m = s.model(model as usize, "model")?;
            let ins = s.tensor_set(input_set as usize, "input_set")?;
            let outs = s.tensor_set(output_set as usize, "output_set")?;
            let r = rt.execute_repeat(m.id, &ins, &outs, count);
            let v = s.visible_index(m.vnc);
            s.trace.record_exec(v, m.id.0, &r);
            if let Err(e) = &r {
                crate::api::profile::execution_failed(s, v, e);
            }
            r.map(|_| ())
        })
    })
}

/// `nrt_register_async_exec_callback`.
pub extern "C" fn nrt_register_async_exec_callback(
    callback: AsyncExecCallback,
    params: *mut c_void,
) -> NrtStatusC {
    guard::status("nrt_register_async_exec_callback", || {
        *CALLBACK.lock().unwrap_or_else(|p| p.into_inner()) = Callback {
            f: callback,
            params: params as usize,
        };
        Ok(())
    })
}

/// `nrt_async_drain_queued_execs`: waits until core `vnc` has no queued legacy-async
/// execution (at most the execution timeout per queued execution).
pub extern "C" fn nrt_async_drain_queued_execs(vnc: i32) -> NrtStatusC {
    guard::status("nrt_async_drain_queued_execs", || {
        session::with(|rt, s| {
            let v = s.vnc(vnc.into())?;
            let limit = rt.config().async_max_inflight.max(1) + 1;
            s.legacy
                .drain(v, rt.config().exec_timeout.saturating_mul(limit))
        })
    })
}
