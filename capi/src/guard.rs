//! The boundary of every entry point: the function column of the log is set, the body runs
//! under `catch_unwind` (no unwind crosses into C), and an error becomes its `NRT_STATUS` plus
//! one ERROR line naming the problem.

use std::panic::{catch_unwind, AssertUnwindSafe};

use nrt_runtime::{Error, NrtStatus, Result};

use crate::log;
use crate::types::NrtStatusC;

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".to_string())
}

fn run<T>(function: &'static str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    let _col = log::enter(function);
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(Error::failure(format!(
            "internal error in {function}: {}",
            panic_message(&*p)
        ))),
    }
}

fn report(function: &'static str, e: &Error) {
    let _col = log::enter(function);
    log::error(&format!("{}: {}", e.status.name(), e.message));
}

/// An `NRT_STATUS` entry point.
pub fn status(function: &'static str, f: impl FnOnce() -> Result<()>) -> NrtStatusC {
    match run(function, f) {
        Ok(()) => NrtStatus::Success.code(),
        Err(e) => {
            report(function, &e);
            e.status.code()
        }
    }
}

/// An entry point returning a value (`size_t`, a pointer): `fallback` on error.
pub fn value<T>(function: &'static str, fallback: T, f: impl FnOnce() -> Result<T>) -> T {
    match run(function, f) {
        Ok(v) => v,
        Err(e) => {
            report(function, &e);
            fallback
        }
    }
}

/// A `void` entry point.
pub fn void(function: &'static str, f: impl FnOnce() -> Result<()>) {
    value(function, (), f)
}
