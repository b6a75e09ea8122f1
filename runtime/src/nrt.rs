//! The `nrt.h`-shaped entry point: one runtime instance behind the lifecycle guard of
//! `nrt_init` / `nrt_close` (docs/c-api.md §5). Every call made before
//! [`Nrt::init`] answers `NRT_UNINITIALIZED` (13) and every call after [`Nrt::close`] answers
//! `NRT_CLOSED` (14), as the real runtime's state guard does; the work itself is [`Runtime`]'s.

use std::sync::{Arc, RwLock};

use nrt_hal::Hal;

use crate::config::RuntimeConfig;
use crate::error::{Error, Result};
use crate::runtime::Runtime;
use crate::status::NrtStatus;

enum State {
    Uninitialized,
    Init(Box<Runtime>),
    Closed,
}

/// The runtime's lifecycle.
pub struct Nrt {
    state: RwLock<State>,
}

impl Default for Nrt {
    fn default() -> Self {
        Nrt::new()
    }
}

impl std::fmt::Debug for Nrt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match &*self.state.read().unwrap_or_else(|p| p.into_inner()) {
            State::Uninitialized => "uninitialized",
            State::Init(_) => "initialized",
            State::Closed => "closed",
        };
        write!(f, "Nrt({s})")
    }
}

impl Nrt {
    /// A runtime not yet initialised.
    pub const fn new() -> Nrt {
        Nrt {
            state: RwLock::new(State::Uninitialized),
        }
    }

    /// `nrt_init`: opens the device. A second init is `NRT_FAILURE`; init after close is
    /// `NRT_CLOSED`.
    pub fn init(&self, hal: Arc<dyn Hal>, cfg: RuntimeConfig) -> Result<()> {
        let mut s = self.state.write().unwrap_or_else(|p| p.into_inner());
        match *s {
            State::Uninitialized => {
                *s = State::Init(Box::new(Runtime::new(hal, cfg)?));
                Ok(())
            }
            State::Init(_) => Err(Error::failure("nrt_init called twice")),
            State::Closed => Err(Error::new(NrtStatus::Closed, "the runtime is closed")),
        }
    }

    /// `nrt_close`: stops the runtime; later calls answer `NRT_CLOSED`.
    pub fn close(&self) -> Result<()> {
        let mut s = self.state.write().unwrap_or_else(|p| p.into_inner());
        match std::mem::replace(&mut *s, State::Closed) {
            State::Init(rt) => {
                rt.close();
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

    /// Runs `f` on the initialised runtime, or answers the lifecycle status.
    pub fn with<T>(&self, f: impl FnOnce(&Runtime) -> Result<T>) -> Result<T> {
        match &*self.state.read().unwrap_or_else(|p| p.into_inner()) {
            State::Init(rt) => f(rt),
            State::Uninitialized => Err(Error::new(
                NrtStatus::Uninitialized,
                "called before nrt_init",
            )),
            State::Closed => Err(Error::new(NrtStatus::Closed, "called after nrt_close")),
        }
    }
}

/// `nrt_get_status_as_str`.
pub fn status_as_str(code: u32) -> &'static str {
    NrtStatus::from_code(code).map_or("NRT_UNKNOWN_STATUS", NrtStatus::name)
}
