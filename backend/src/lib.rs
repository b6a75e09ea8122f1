//! # nrt-backend — one way to open a device
//!
//! Every program of the platform that touches a device — the command line's `run`, `conform`
//! and `profile`, and the drop-in C library (and through it the Python package) — opens it
//! here: settings in ([`Settings`]: the [`Backend`], the generation asked for and who asked,
//! simulator options), an opened [`Device`] out (the [`Hal`] the runtime is given, its
//! generation, and through [`Hal::profiler`] the backend's profiling capability, if it offers
//! one).
//!
//! | item | owns |
//! |---|---|
//! | [`Backend`] | the backend names (`sim`, `driver`) and `NRT_EMU_BACKEND` |
//! | [`Settings`] | what to open; [`Settings::from_env`] reads `NRT_EMU_BACKEND`, `NRT_EMU_TARGET` and `NEURON_PLATFORM_TARGET_OVERRIDE` strictly |
//! | [`open`] | the one opener: the simulator built with the settings' generation and options, or the kernel driver on `/dev/neuron0` checked against the generation asked for |
//! | [`Device`] | an opened device |
//!
//! This crate is the only one besides the tests that knows both backends: it sits below the
//! C library and the command line and above `nrt-hal` (with its driver backend), `nrt-sim` and
//! `nrt-runtime` (for the error type) — the runtime itself never depends on the simulator
//! (docs/ARCHITECTURE.md §3).

#![warn(missing_docs)]

use std::sync::Arc;

use nrt_hal::driver::{device_path, DriverHal, RealSyscalls};
use nrt_hal::profile::Profiler;
use nrt_hal::{Hal, Target};
use nrt_runtime::{Error, Result};
pub use nrt_sim::RuntimeVersion;
use nrt_sim::{Sim, SimConfig};

pub use nrt_sim::FaultPlan;

/// The variable that names the backend when no flag does.
pub const BACKEND_ENV: &str = "NRT_EMU_BACKEND";

/// The variables that name the generation, the first one set winning.
pub const TARGET_ENV: [&str; 2] = ["NRT_EMU_TARGET", "NEURON_PLATFORM_TARGET_OVERRIDE"];

/// The device node the driver backend opens (`/dev/neuron0`).
pub const DRIVER_DEVICE: u32 = 0;

/// The device backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The simulated device.
    Sim,
    /// The Linux kernel driver (`/dev/neuronN`).
    Driver,
}

fn bad(var: &str, value: &str, expected: &str) -> Error {
    Error::invalid(format!("{var}={value:?} is invalid: expected {expected}"))
}

impl Backend {
    /// Every backend, in the order the names are listed.
    pub const ALL: [Backend; 2] = [Backend::Sim, Backend::Driver];

    /// Its name: `sim` or `driver`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sim => "sim",
            Backend::Driver => "driver",
        }
    }

    /// What it is, in a sentence: `simulator` or `driver`.
    pub fn describe(self) -> &'static str {
        match self {
            Backend::Sim => "simulator",
            Backend::Driver => "driver",
        }
    }

    /// The backend `name` names (ASCII case and surrounding blanks ignored).
    pub fn parse(name: &str) -> Option<Backend> {
        let name = name.trim();
        Backend::ALL
            .into_iter()
            .find(|b| b.name().eq_ignore_ascii_case(name))
    }

    /// The backend `$NRT_EMU_BACKEND` names in `get`: `None` when unset or blank; a value that
    /// names none is `NRT_INVALID` naming the variable.
    pub fn from_env(get: &impl Fn(&str) -> Option<String>) -> Result<Option<Backend>> {
        match get(BACKEND_ENV) {
            None => Ok(None),
            Some(v) if v.trim().is_empty() => Ok(None),
            Some(v) => Backend::parse(&v)
                .map(Some)
                .ok_or_else(|| bad(BACKEND_ENV, &v, "sim or driver")),
        }
    }

    /// The backend `flag` names, else `$NRT_EMU_BACKEND`, else the simulator.
    pub fn from_flag_or_env(
        flag: Option<Backend>,
        get: &impl Fn(&str) -> Option<String>,
    ) -> Result<Backend> {
        match flag {
            Some(b) => Ok(b),
            None => Ok(Backend::from_env(get)?.unwrap_or(Backend::Sim)),
        }
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What to open.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The backend.
    pub backend: Backend,
    /// The generation asked for: on the simulator the one simulated (trn2 when none), on the
    /// driver a check of the device's own.
    pub target: Option<Target>,
    /// Who asked for `target` (`the environment`, `--target`, `the NEFF`), for the message
    /// when the device is another generation.
    pub target_from: &'static str,
    /// What the message of a driver that cannot be opened suggests instead (`use --backend
    /// sim`).
    pub sim_hint: &'static str,
    /// Record the device timeline from the start, on a backend that records one.
    pub timeline: bool,
    /// The simulator injects these faults.
    pub faults: Option<FaultPlan>,
    /// The runtime whose instructions the simulator runs around every program (its default
    /// when `None`, docs/simulator.md §7.6).
    pub runtime: Option<RuntimeVersion>,
}

impl Settings {
    /// `backend`, with no generation asked for, no timeline and no faults.
    pub fn new(backend: Backend) -> Settings {
        Settings {
            backend,
            target: None,
            target_from: "the environment",
            sim_hint: "use the simulator",
            timeline: false,
            faults: None,
            runtime: None,
        }
    }

    /// The settings the environment `get` gives: the backend of `$NRT_EMU_BACKEND` (else
    /// the simulator) and the generation of `$NRT_EMU_TARGET`, else
    /// `$NEURON_PLATFORM_TARGET_OVERRIDE` (`trn1` or `trn2`). A value a variable does not allow
    /// is `NRT_INVALID` naming it.
    pub fn from_env(get: &impl Fn(&str) -> Option<String>) -> Result<Settings> {
        let mut s = Settings::new(Backend::from_env(get)?.unwrap_or(Backend::Sim));
        s.sim_hint = "use NRT_EMU_BACKEND=sim";
        for var in TARGET_ENV {
            if let Some(v) = get(var) {
                s.target = Some(match v.trim().to_ascii_lowercase().as_str() {
                    "trn1" => Target::Trn1,
                    "trn2" => Target::Trn2,
                    _ => return Err(bad(var, &v, "trn1 or trn2")),
                });
                break;
            }
        }
        Ok(s)
    }

    /// These settings asking for generation `target` (`from` says who asks).
    pub fn with_target(mut self, target: Target, from: &'static str) -> Settings {
        self.target = Some(target);
        self.target_from = from;
        self
    }

    /// These settings suggesting `hint` when the driver cannot be opened.
    pub fn with_sim_hint(mut self, hint: &'static str) -> Settings {
        self.sim_hint = hint;
        self
    }

    /// These settings recording the device timeline from the start, or not.
    pub fn with_timeline(mut self, timeline: bool) -> Settings {
        self.timeline = timeline;
        self
    }

    /// These settings with the simulator running runtime `version`'s instructions around
    /// every program.
    pub fn with_runtime(mut self, version: Option<RuntimeVersion>) -> Settings {
        self.runtime = version;
        self
    }

    /// These settings with the simulator injecting `faults`.
    pub fn with_faults(mut self, faults: Option<FaultPlan>) -> Settings {
        self.faults = faults;
        self
    }

    /// The generation [`open`] would give, when it is known without opening a device: the
    /// simulator's; `None` on the driver, whose device decides.
    pub fn target_unopened(&self) -> Option<Target> {
        match self.backend {
            Backend::Sim => Some(self.target.unwrap_or(Target::Trn2)),
            Backend::Driver => None,
        }
    }
}

/// An opened device.
pub struct Device {
    /// The device interface the runtime is given.
    pub hal: Arc<dyn Hal>,
    /// Its generation.
    pub target: Target,
    /// The backend behind it.
    pub backend: Backend,
}

impl std::fmt::Debug for Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Device")
            .field("target", &self.target)
            .field("backend", &self.backend)
            .finish()
    }
}

impl Device {
    /// The backend's profiling capability (the device timeline, per-execution activity
    /// counters), if it offers one: the simulator does, the driver does not.
    pub fn profiler(&self) -> Option<&dyn Profiler> {
        self.hal.profiler()
    }
}

/// Opens the device `settings` name.
///
/// - **sim**: a fresh simulator of the generation asked for (trn2 when none), with its timeline
///   recording from the start if asked and the faults given.
/// - **driver**: `/dev/neuron0` through the driver backend; `NRT_FAILURE` naming the node and
///   suggesting [`Settings::sim_hint`] when it cannot be opened, `NRT_INVALID` when the device
///   is not the generation asked for.
pub fn open(settings: &Settings) -> Result<Device> {
    match settings.backend {
        Backend::Sim => {
            let target = settings.target.unwrap_or(Target::Trn2);
            let mut cfg = SimConfig::new(target);
            if settings.timeline {
                cfg = cfg.with_timeline();
            }
            if let Some(plan) = &settings.faults {
                cfg = cfg.with_faults(plan.clone());
            }
            if let Some(v) = settings.runtime {
                cfg.timing.runtime = Some(v);
            }
            Ok(Device {
                hal: Arc::new(Sim::new(cfg)),
                target,
                backend: Backend::Sim,
            })
        }
        Backend::Driver => {
            let path = device_path(DRIVER_DEVICE);
            let hal = DriverHal::open(DRIVER_DEVICE, Arc::new(RealSyscalls)).map_err(|e| {
                Error::failure(format!(
                    "the driver backend cannot open {path}: {e} (is this a Trainium/Inferentia \
                     host with the Neuron driver loaded? without a device, {})",
                    settings.sim_hint
                ))
            })?;
            let target = hal.device_info()?.target;
            if let Some(want) = settings.target.filter(|t| *t != target) {
                return Err(Error::invalid(format!(
                    "{} asks for {want}, but {path} is a {target}",
                    settings.target_from
                )));
            }
            if settings.timeline {
                if let Some(p) = hal.profiler() {
                    p.set_recording(true);
                }
            }
            Ok(Device {
                hal: Arc::new(hal),
                target,
                backend: Backend::Driver,
            })
        }
    }
}
