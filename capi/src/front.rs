//! What the C library is to the runtime's session ([`nrt_runtime::nrt::session::Front`]): the
//! libnrt-format log its messages go to, the process's session guard through which its
//! background threads reach it, and the program's legacy-async callback
//! (`nrt_register_async_exec_callback`), called with each finished execution.

use std::ffi::c_void;
use std::sync::{Mutex, MutexGuard};

use nrt_runtime::nrt::legacy::Completion;
use nrt_runtime::nrt::log::Log;
use nrt_runtime::nrt::session::{Front, Session};
use nrt_runtime::{Result, Runtime};

use crate::log;
use crate::session::NRT;
use crate::types::AsyncExecCallback;

struct Callback {
    f: AsyncExecCallback,
    params: usize,
}

static CALLBACK: Mutex<Callback> = Mutex::new(Callback { f: None, params: 0 });

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Registers the program's legacy-async callback and its parameter.
pub fn register_callback(f: AsyncExecCallback, params: *mut c_void) {
    *lock(&CALLBACK) = Callback {
        f,
        params: params as usize,
    };
}

/// The C library as the runtime session's front end.
#[derive(Debug, Clone, Copy, Default)]
pub struct CFront;

impl Log for CFront {
    fn error(&self, msg: &str) {
        log::error(msg);
    }
    fn info(&self, msg: &str) {
        log::info(msg);
    }
}

impl Front for CFront {
    fn try_with(&self, f: &mut dyn FnMut(&Runtime, &Session)) -> Option<Result<()>> {
        NRT.try_with_session(|rt, s| {
            f(rt, &s.nrt);
            Ok(())
        })
    }

    fn with(&self, f: &mut dyn FnMut(&Runtime, &Session)) -> Result<()> {
        NRT.with_session(|rt, s| {
            f(rt, &s.nrt);
            Ok(())
        })
    }

    fn legacy_completed(&self, c: &Completion) {
        let status = c.result.as_ref().map_or_else(|e| e.status.code(), |_| 0);
        if let Err(e) = &c.result {
            let _c = log::enter("nrt_execute");
            log::error(&format!("async execution {:#x}: {e}", c.req.seq_id));
        }
        let cb = lock(&CALLBACK);
        if let Some(f) = cb.f {
            // SAFETY: the callback and its parameter were registered by the program for exactly
            // this call.
            unsafe {
                f(
                    cb.params as *mut c_void,
                    c.model,
                    c.visible,
                    c.req.seq_id,
                    status,
                )
            };
        }
    }
}
