//! Execution: `nrt_execute`, `nrt_execute_repeat`, and the legacy implicit-async callback.
//!
//! With `NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS` > 0 the runtime executes through its
//! async execution unit (device tensors only, as libnrt requires) and the registered callback
//! receives each execution's status. This library calls it on the calling thread when the
//! execution completes, before `nrt_execute` returns (so `nrt_async_drain_queued_execs` finds
//! nothing queued).

use std::ffi::c_void;
use std::sync::Mutex;

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

/// One execution of `model` with the caller's sets; the trace records it.
pub fn execute_once(
    rt: &Runtime,
    s: &Session,
    model: *mut c_void,
    input_set: *const c_void,
    output_set: *mut c_void,
) -> Result<ExecReport> {
    let m = s.model(model as usize, "model")?;
    let ins = s.tensor_set(input_set as usize, "input_set")?;
    let outs = s.tensor_set(output_set as usize, "output_set")?;
    let r = rt.execute(m.id, &ins, &outs);
    s.trace.record_exec(s.visible_index(m.vnc), m.id.0, &r);
    if rt.config().async_max_inflight > 0 {
        let status = r.as_ref().map_or_else(|e| e.status.code(), |_| 0);
        let job = r.as_ref().map_or(0, |rep| rep.seq_id);
        let cb = CALLBACK.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(f) = cb.f {
            // SAFETY: the callback and its parameter were registered by the program for exactly
            // this call.
            unsafe {
                f(
                    cb.params as *mut c_void,
                    m.id.0,
                    s.visible_index(m.vnc),
                    job,
                    status,
                )
            };
        }
    }
    r
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

/// `nrt_execute_repeat`: `repeat_count` executions in order with the same sets (a NEFF built
/// for repetition binds its outputs onto its inputs, so each run reads the previous results).
pub extern "C" fn nrt_execute_repeat(
    model: *mut c_void,
    input_set: *const c_void,
    output_set: *mut c_void,
    repeat_count: i32,
) -> NrtStatusC {
    guard::status("nrt_execute_repeat", || {
        if repeat_count < 1 {
            return Err(Error::invalid(format!(
                "repeat_count {repeat_count}: at least 1 execution"
            )));
        }
        session::with(|rt, s| {
            for _ in 0..repeat_count {
                execute_once(rt, s, model, input_set, output_set)?;
            }
            Ok(())
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

/// `nrt_async_drain_queued_execs`: executions complete before `nrt_execute` returns here, so
/// nothing is ever queued; checks the core.
pub extern "C" fn nrt_async_drain_queued_execs(vnc: i32) -> NrtStatusC {
    guard::status("nrt_async_drain_queued_execs", || {
        session::with(|_, s| s.vnc(vnc.into()).map(|_| ()))
    })
}
