//! Execution: `nrt_execute`, `nrt_execute_repeat`, and the legacy implicit-async callback.
//!
//! The handles are resolved here; what an execution does — sync, or queued in legacy
//! implicit-async mode (`NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS` > 0) with its completion
//! handed to the registered callback by the session's dispatcher, recorded in the system
//! trace, dumped on failure under inspect-on-fail — is the runtime session's
//! ([`nrt_runtime::nrt::session::Session::execute`]).

use std::ffi::c_void;

use nrt_runtime::exec::ExecReport;
use nrt_runtime::{Error, Result, Runtime};

use crate::front;
use crate::guard;
use crate::session::{self, Session};
use crate::types::{AsyncExecCallback, NrtStatusC};

/// One execution of `model` with the caller's sets; the trace records it.
/// In legacy async mode the execution is only queued (`Ok(None)`).
fn execute_once(
    rt: &Runtime,
    s: &Session,
    model: *mut c_void,
    input_set: *const c_void,
    output_set: *mut c_void,
) -> Result<Option<ExecReport>> {
    let m = s.model(model as usize, "model")?;
    let ins = s.tensor_set(input_set as usize, "input_set")?;
    let outs = s.tensor_set(output_set as usize, "output_set")?;
    s.nrt.execute(rt, m.id, m.vnc, &ins, &outs)
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
            let m = s.model(model as usize, "model")?;
            let ins = s.tensor_set(input_set as usize, "input_set")?;
            let outs = s.tensor_set(output_set as usize, "output_set")?;
            s.nrt.execute_repeat(rt, m.id, m.vnc, &ins, &outs, count)
        })
    })
}

/// `nrt_register_async_exec_callback`.
pub extern "C" fn nrt_register_async_exec_callback(
    callback: AsyncExecCallback,
    params: *mut c_void,
) -> NrtStatusC {
    guard::status("nrt_register_async_exec_callback", || {
        front::register_callback(callback, params);
        Ok(())
    })
}

/// `nrt_async_drain_queued_execs`: waits until core `vnc` has no queued legacy-async
/// execution (at most the execution timeout per queued execution).
pub extern "C" fn nrt_async_drain_queued_execs(vnc: i32) -> NrtStatusC {
    guard::status("nrt_async_drain_queued_execs", || {
        session::with(|rt, s| s.nrt.drain(rt, vnc.into()))
    })
}
