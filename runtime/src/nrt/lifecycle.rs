//! The `nrt.h`-shaped entry point: one runtime instance behind the lifecycle guard of
//! `nrt_init` / `nrt_close` (docs/c-api.md §5). Every call made before
//! [`Nrt::init`] answers `NRT_UNINITIALIZED` (13) and every call after [`Nrt::close`] answers
//! `NRT_CLOSED` (14), as the real runtime's state guard does; the work itself is [`Runtime`]'s.
//!
//! A front end may keep per-session state `S` next to the runtime (the C API keeps its handle
//! tables there): it is made at init from the new runtime, reached with [`Nrt::with_session`],
//! and dropped at close *before* the runtime, so whatever it holds (tensors) is released while
//! the device is still open. [`Nrt::reset`] returns the guard to "not yet initialised", for
//! harnesses that run many sessions in one process.

use std::sync::{Arc, RwLock};

use nrt_hal::Hal;

use crate::config::RuntimeConfig;
use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::status::NrtStatus;

struct Opened<S> {
    // Field order is drop order: the front end's state goes before the runtime.
    ext: S,
    rt: Runtime,
}

enum State<S> {
    Uninitialized,
    Init(Box<Opened<S>>),
    Closed,
}

/// The runtime's lifecycle, with a front end's per-session state `S`.
pub struct Nrt<S = ()> {
    state: RwLock<State<S>>,
}

impl<S> Default for Nrt<S> {
    fn default() -> Self {
        Nrt::new()
    }
}

impl<S> std::fmt::Debug for Nrt<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match &*self.state.read().unwrap_or_else(|p| p.into_inner()) {
            State::Uninitialized => "uninitialized",
            State::Init(_) => "initialized",
            State::Closed => "closed",
        };
        write!(f, "Nrt({s})")
    }
}

fn uninitialized() -> Error {
    Error::new(NrtStatus::Uninitialized, "called before nrt_init")
}

fn closed() -> Error {
    Error::new(NrtStatus::Closed, "called after nrt_close")
}

impl Nrt<()> {
    /// `nrt_init`: opens the device. A second init is `NRT_FAILURE`; init after close is
    /// `NRT_CLOSED`.
    pub fn init(&self, hal: Arc<dyn Hal>, cfg: RuntimeConfig) -> Result<()> {
        self.init_with(hal, cfg, |_| Ok(()))
    }
}

impl<S> Nrt<S> {
    /// A runtime not yet initialised.
    pub const fn new() -> Nrt<S> {
        Nrt {
            state: RwLock::new(State::Uninitialized),
        }
    }

    /// `nrt_init` with the front end's session state, made by `ext` from the new runtime (if
    /// `ext` fails, the runtime is dropped and the guard stays uninitialised).
    pub fn init_with(
        &self,
        hal: Arc<dyn Hal>,
        cfg: RuntimeConfig,
        ext: impl FnOnce(&Runtime) -> Result<S>,
    ) -> Result<()> {
        let mut s = self.state.write().unwrap_or_else(|p| p.into_inner());
        match *s {
            State::Uninitialized => {
                let rt = Runtime::new(hal, cfg)?;
                let ext = ext(&rt)?;
                *s = State::Init(Box::new(Opened { ext, rt }));
                Ok(())
            }
            State::Init(_) => Err(Error::failure("nrt_init called twice")),
            State::Closed => Err(Error::new(NrtStatus::Closed, "the runtime is closed")),
        }
    }

    /// `nrt_close`: stops the runtime and releases everything; later calls answer
    /// `NRT_CLOSED`. Waits for calls in progress to return.
    pub fn close(&self) -> Result<()> {
        let mut s = self.state.write().unwrap_or_else(|p| p.into_inner());
        match std::mem::replace(&mut *s, State::Closed) {
            State::Init(session) => {
                session.rt.close();
                drop(session);
                Ok(())
            }
            State::Uninitialized => {
                *s = State::Uninitialized;
                Err(Error::new(
                    NrtStatus::Uninitialized,
                    "nrt_close before nrt_init",
                ))
            }
            State::Closed => Err(Error::new(NrtStatus::Closed, "the runtime is closed")),
        }
    }

    /// Back to "not yet initialised", closing a running session first.
    pub fn reset(&self) {
        let mut s = self.state.write().unwrap_or_else(|p| p.into_inner());
        if let State::Init(session) = std::mem::replace(&mut *s, State::Uninitialized) {
            session.rt.close();
        }
    }

    /// Whether `nrt_init` succeeded and `nrt_close` has not been called.
    pub fn is_open(&self) -> bool {
        matches!(
            *self.state.read().unwrap_or_else(|p| p.into_inner()),
            State::Init(_)
        )
    }

    /// Runs `f` on the initialised runtime, or answers the lifecycle status.
    pub fn with<T>(&self, f: impl FnOnce(&Runtime) -> Result<T>) -> Result<T> {
        self.with_session(|rt, _| f(rt))
    }

    /// Runs `f` on the initialised runtime and the session state, or answers the lifecycle
    /// status.
    pub fn with_session<T>(&self, f: impl FnOnce(&Runtime, &S) -> Result<T>) -> Result<T> {
        match &*self.state.read().unwrap_or_else(|p| p.into_inner()) {
            State::Init(s) => f(&s.rt, &s.ext),
            State::Uninitialized => Err(uninitialized()),
            State::Closed => Err(closed()),
        }
    }
}

impl<S> Nrt<S> {
    /// [`Nrt::with_session`] without waiting: `None` when `nrt_init` or `nrt_close` holds the
    /// guard right now (a background thread that must not block a close uses this).
    pub fn try_with_session<T>(
        &self,
        f: impl FnOnce(&Runtime, &S) -> Result<T>,
    ) -> Option<Result<T>> {
        let g = self.state.try_read().ok()?;
        Some(match &*g {
            State::Init(s) => f(&s.rt, &s.ext),
            State::Uninitialized => Err(uninitialized()),
            State::Closed => Err(closed()),
        })
    }
}

/// `nrt_get_status_as_str`.
pub fn status_as_str(code: u32) -> &'static str {
    NrtStatus::from_code(code).map_or("NRT_UNKNOWN_STATUS", NrtStatus::name)
}
