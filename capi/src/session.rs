//! The process's one runtime session (between `nrt_init` and `nrt_close`) and the handle
//! tables that outlive it.
//!
//! The lifecycle guard is the runtime's [`Nrt`]: before `nrt_init` every session call answers
//! `NRT_UNINITIALIZED`, after `nrt_close` `NRT_CLOSED`. The [`Session`] — the device, the
//! visible cores and the tables of models and tensors — lives inside it and is dropped at
//! `nrt_close` before the runtime, so every tensor the program did not free is freed while the
//! device is still open. Tensor sets and the profiling/trace option objects are plain host
//! containers, usable at any time, so their tables are process-wide.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use nrt_hal::driver::{device_path, DriverHal, RealSyscalls};
use nrt_hal::{Hal, Target};
use nrt_runtime::nrt::Nrt;
use nrt_runtime::tensor::Tensor;
use nrt_runtime::{Error, ModelId, Result, Runtime};
use nrt_sim::{Sim, SimConfig};

use crate::env::{Backend, DeviceChoice};
use crate::handles::{Kind, Table};

/// A loaded model.
#[derive(Debug, Clone, Copy)]
pub struct Model {
    /// The runtime's handle.
    pub id: ModelId,
    /// The runtime's logical core (absolute).
    pub vnc: u32,
}

/// What lives between `nrt_init` and `nrt_close`.
pub struct Session {
    /// The device choice the environment made.
    pub choice: DeviceChoice,
    /// The device's generation.
    pub target: Target,
    /// The simulator, when the backend is `sim` (for its timeline).
    pub sim: Option<Arc<Sim>>,
    /// The runtime's logical cores this process uses; visible core `i` is `visible.start + i`.
    pub visible: Range<u32>,
    /// Loaded models.
    pub models: Table<Model>,
    /// Tensors.
    pub tensors: Table<Tensor>,
    /// Explicit async state (`nrta_*`).
    pub nrta: crate::api::nrta::AsyncState,
    /// Profiling state.
    pub profile: crate::api::profile::ProfileState,
    /// The system trace.
    pub trace: crate::api::trace::TraceState,
    /// The legacy implicit-async dispatcher.
    pub legacy: crate::api::exec::Legacy,
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
    /// The runtime's logical core of visible core `vnc`.
    pub fn vnc(&self, vnc: i64) -> Result<u32> {
        let n = self.visible.len() as i64;
        if vnc < 0 || vnc >= n {
            return Err(Error::invalid(format!(
                "NeuronCore {vnc} is not visible to this process ({n} visible: 0..{})",
                n - 1
            )));
        }
        Ok(self.visible.start + vnc as u32)
    }

    /// The visible index of the runtime's logical core `abs`.
    pub fn visible_index(&self, abs: u32) -> u32 {
        abs.saturating_sub(self.visible.start)
    }

    /// The tensor of handle `p`.
    pub fn tensor(&self, p: usize, arg: &str) -> Result<Tensor> {
        self.tensors.get(p, arg)
    }

    /// The model of handle `p`.
    pub fn model(&self, p: usize, arg: &str) -> Result<Model> {
        self.models.get(p, arg)
    }

    /// The runtime tensor set a C tensor set stands for (every bound handle must be live).
    pub fn tensor_set(&self, p: usize, arg: &str) -> Result<nrt_runtime::tensor::TensorSet> {
        let bound = SETS.get(p, arg)?;
        let mut set = nrt_runtime::tensor::TensorSet::new();
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
static FAULTS: std::sync::Mutex<Option<nrt_sim::FaultPlan>> = std::sync::Mutex::new(None);

/// Makes the simulated device of every later `nrt_init` inject `plan` (`None`: no faults), so
/// a program's failure paths — a hung engine's timeout, a DMA abort, an HBM error — can be
/// driven through the C API. The driver backend ignores it.
pub fn inject_faults(plan: Option<nrt_sim::FaultPlan>) {
    *FAULTS.lock().unwrap_or_else(|p| p.into_inner()) = plan;
}

/// An opened device: the HAL, its generation, and the simulator behind it (if it is one).
pub type OpenDevice = (Arc<dyn Hal>, Target, Option<Arc<Sim>>);

/// Opens the device `choice` names.
pub fn open_device(choice: DeviceChoice) -> Result<OpenDevice> {
    match choice.backend {
        Backend::Sim => {
            let target = choice.sim_target();
            let mut cfg = SimConfig::new(target);
            if let Some(plan) = FAULTS.lock().unwrap_or_else(|p| p.into_inner()).clone() {
                cfg = cfg.with_faults(plan);
            }
            let sim = Arc::new(Sim::new(cfg));
            Ok((sim.clone(), target, Some(sim)))
        }
        Backend::Driver => {
            let hal = DriverHal::open(0, Arc::new(RealSyscalls)).map_err(|e| {
                Error::failure(format!(
                    "NRT_EMU_BACKEND=driver: cannot open {}: {e}",
                    device_path(0)
                ))
            })?;
            let target = hal.device_info()?.target;
            if let Some(want) = choice.target.filter(|t| *t != target) {
                return Err(Error::invalid(format!(
                    "the environment asks for {want}, but {} is a {target}",
                    device_path(0)
                )));
            }
            Ok((Arc::new(hal), target, None))
        }
    }
}
