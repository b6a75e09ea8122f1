//! The process's one runtime session (between `nrt_init` and `nrt_close`) and the handle
//! tables that outlive it.
//!
//! The lifecycle guard is the runtime's [`Nrt`]: before `nrt_init` every session call answers
//! `NRT_UNINITIALIZED`, after `nrt_close` `NRT_CLOSED`. The [`Session`] — the handle tables of
//! models, tensors and error trackers, and the runtime's session behaviour
//! ([`nrt_runtime::nrt::session::Session`]: visible cores, system trace, profiling, async
//! units) — lives inside it and is dropped at `nrt_close` before the runtime, so every tensor
//! the program did not free is freed while the device is still open. Tensor sets and the
//! profiling/trace option objects are plain host containers, usable at any time, so their
//! tables are process-wide.

use std::collections::BTreeMap;
use std::sync::Arc;

use nrt_backend::{Backend, FaultPlan};
use nrt_runtime::nrt::nrta::ErrorTracker;
use nrt_runtime::nrt::Nrt;
use nrt_runtime::tensor::{Tensor, TensorSet};
use nrt_runtime::{Error, ModelId, Result, Runtime};

use crate::handles::{Kind, Table};
use crate::types::NrtaError;

/// A loaded model.
#[derive(Debug, Clone, Copy)]
pub struct Model {
    /// The runtime's handle.
    pub id: ModelId,
    /// The runtime's logical core (absolute).
    pub vnc: u32,
}

/// An error tracker handle's entry (`nrta_error_tracker_t`).
#[derive(Debug)]
pub struct Tracker {
    /// The runtime's tracker.
    pub tracker: Arc<ErrorTracker>,
    /// The list `nrta_error_tracker_get_list` handed out last (valid until the next call).
    pub snapshot: Vec<NrtaError>,
}

/// What lives between `nrt_init` and `nrt_close`.
pub struct Session {
    /// The backend the environment chose.
    pub backend: Backend,
    /// Loaded models.
    pub models: Table<Model>,
    /// Tensors.
    pub tensors: Table<Tensor>,
    /// Error trackers of the explicit async API.
    pub trackers: Table<Tracker>,
    /// The runtime's session: visible cores, system trace, profiling, async units.
    pub nrt: nrt_runtime::nrt::session::Session,
}

/// The process's runtime.
pub static NRT: Nrt<Session> = Nrt::new();

/// Tensor sets: name → tensor handle.
pub static SETS: Table<BTreeMap<String, usize>> = Table::new(Kind::TensorSet);

/// Runs `f` on the open session.
pub fn with<T>(f: impl FnOnce(&Runtime, &Session) -> Result<T>) -> Result<T> {
    NRT.with_session(f)
}

impl Session {
    /// A session with empty tables over the runtime's session `nrt`.
    pub fn new(backend: Backend, nrt: nrt_runtime::nrt::session::Session) -> Session {
        Session {
            backend,
            models: Table::new(Kind::Model),
            tensors: Table::new(Kind::Tensor),
            trackers: Table::new(Kind::ErrorTracker),
            nrt,
        }
    }

    /// The runtime's logical core of visible core `vnc`.
    pub fn vnc(&self, vnc: i64) -> Result<u32> {
        self.nrt.vnc(vnc)
    }

    /// The visible index of the runtime's logical core `abs`.
    pub fn visible_index(&self, abs: u32) -> u32 {
        self.nrt.visible_index(abs)
    }

    /// The tensor of handle `p`.
    pub fn tensor(&self, p: usize, arg: &str) -> Result<Tensor> {
        self.tensors.get(p, arg)
    }

    /// The model of handle `p`.
    pub fn model(&self, p: usize, arg: &str) -> Result<Model> {
        self.models.get(p, arg)
    }

    /// The error tracker of handle `p` (`None` for NULL).
    pub fn tracker(&self, p: usize, arg: &str) -> Result<Option<Arc<ErrorTracker>>> {
        if p == 0 {
            return Ok(None);
        }
        self.trackers.with(p, arg, |t| Some(Arc::clone(&t.tracker)))
    }

    /// The runtime tensor set a C tensor set stands for (every bound handle must be live).
    pub fn tensor_set(&self, p: usize, arg: &str) -> Result<TensorSet> {
        let bound = SETS.get(p, arg)?;
        let mut set = TensorSet::new();
        for (name, t) in &bound {
            let tensor = self.tensors.get(*t, "tensor").map_err(|e| {
                Error::invalid(format!(
                    "`{arg}` binds {name:?} to a tensor that is no longer valid: {}",
                    e.message
                ))
            })?;
            set.add(name, tensor);
        }
        Ok(set)
    }
}

/// Faults the simulator of the next sessions injects (see [`inject_faults`]).
static FAULTS: std::sync::Mutex<Option<FaultPlan>> = std::sync::Mutex::new(None);

/// Makes the simulated device of every later `nrt_init` inject `plan` (`None`: no faults), so
/// a program's failure paths — a hung engine's timeout, a DMA abort, an HBM error — can be
/// driven through the C API. The driver backend ignores it.
pub fn inject_faults(plan: Option<FaultPlan>) {
    *FAULTS.lock().unwrap_or_else(|p| p.into_inner()) = plan;
}

/// The faults [`inject_faults`] set.
pub fn injected_faults() -> Option<FaultPlan> {
    FAULTS.lock().unwrap_or_else(|p| p.into_inner()).clone()
}
