//! Execution: `nrt_execute`, `nrt_execute_repeat`, and the legacy implicit-async callback.
//!
//! The handles are resolved here; what an execution does — sync, or queued in legacy
//! implicit-async mode (`NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS` > 0) with its completion
//! handed to the registered callback by the session's dispatcher, recorded in the system
//! trace, dumped on failure under inspect-on-fail — is the runtime session's
//! ([`nrt_runtime::nrt::session::Session::execute`]).

use std::ffi::c_void;

use nrt_runtime::{Error, Result, Runtime};

use crate::front;
use crate::guard;
use crate::session::{self, Session};
use crate::types::{AsyncExecCallback, NrtStatusC};

/// `repeat` executions of `model` with the caller's sets (one is `nrt_execute`: in legacy
/// async mode only queued).
fn execute(
    rt: &Runtime,
    s: &Session,
    (model, input_set, output_set): (*mut c_void, *const c_void, *mut c_void),
    repeat: u32,
) -> Result<()> {
    let m = s.model(model as usize, "model")?;
    let ins = s.tensor_set(input_set as usize, "input_set")?;
    let outs = s.tensor_set(output_set as usize, "output_set")?;
    s.nrt
        .execute(rt, (m.id, m.vnc), &ins, &outs, repeat)
        .map(|_| ())
}

/// `nrt_execute`.
pub extern "C" fn nrt_execute(
    model: *mut c_void,
    input_set: *const c_void,
    output_set: *mut c_void,
) -> NrtStatusC {
    guard::status("nrt_execute", || {
        session::with(|rt, s| execute(rt, s, (model, input_set, output_set), 1))
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
        session::with(|rt, s| execute(rt, s, (model, input_set, output_set), count))
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
