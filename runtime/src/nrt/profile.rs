//! Profiling (docs/c-api.md §5.6, §6.3): `nrt_profile_*`, continuous profiling and
//! `nrt_inspect_*`.
//!
//! A profile is the device timeline as Chrome/Perfetto trace JSON (one track per engine and
//! DMA queue), which a backend offers through its profiling capability
//! ([`nrt_hal::profile::Profiler`], from [`nrt_hal::Hal::profiler`]): the simulator records one,
//! the driver backend has none, and profiling it answers `NRT_INVALID`. The timeline records
//! while any profile is active and is cleared when one starts. An inspect session also
//! captures the system trace, and when it stops writes
//! `<output_dir>/session_<id>/device_profile.json` (the timeline) and `system_profile.json`
//! (the runtime events) for the activities enabled. With inspect-on-fail every failed
//! execution writes what was captured so far into `session_<id>/failure_<n>/`
//! ([`Profiling::execution_failed`]). The same recording traces each execution instruction by
//! instruction: `nrt_profile_stop` to a file named `*.profile.json` writes the last execution
//! in neuron-profile's JSON (docs/profile.md §7) instead of the timeline, and an inspect
//! session writes it as `neuron_profile.json` beside `device_profile.json`.
//!
//! Which inspect session the environment (`NEURON_RT_INSPECT_*`) asks for is the front end's
//! to read; it hands the result over as an [`InspectConfig`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use nrt_hal::profile::Profiler;

use super::log::Log;
use super::trace::{SysTrace, SysTraceConfig};
use crate::error::{Error, Result};

/// The inspect activity types.
pub const ACTIVITIES: [&str; 4] = [
    "system_profile",
    "device_profile",
    "host_memory",
    "cpu_util",
];

/// An inspect session's settings (`nrt_inspect_config_t`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InspectConfig {
    /// The output goes to `<output_dir>/session_<session_id>/`.
    pub session_id: i32,
    /// Where the output goes.
    pub output_dir: String,
    /// The system trace the session captures.
    pub sys_trace: SysTraceConfig,
    /// The activities enabled (of [`ACTIVITIES`]).
    pub activities: BTreeSet<&'static str>,
    /// Write the capture when the session stops.
    pub enable_inspect: bool,
    /// Write the capture when an execution fails.
    pub enable_on_fail: bool,
}

impl Default for InspectConfig {
    fn default() -> Self {
        InspectConfig {
            session_id: 1,
            output_dir: "./output".into(),
            sys_trace: SysTraceConfig::default(),
            activities: ACTIVITIES.into_iter().collect(),
            enable_inspect: false,
            enable_on_fail: false,
        }
    }
}

impl InspectConfig {
    /// Enables or disables activity `name` (one of [`ACTIVITIES`], or `all`).
    pub fn set_activity(&mut self, name: &str, enabled: bool) -> Result<()> {
        let set: Vec<&'static str> = if name == "all" {
            ACTIVITIES.to_vec()
        } else {
            vec![ACTIVITIES.iter().copied().find(|a| *a == name).ok_or_else(|| {
                Error::invalid(format!("{name:?} is not an activity type (system_profile, device_profile, host_memory, cpu_util, all)"))
            })?]
        };
        for a in set {
            if enabled {
                self.activities.insert(a);
            } else {
                self.activities.remove(a);
            }
        }
        Ok(())
    }

    /// The activities enabled, in [`ACTIVITIES`] order.
    pub fn enabled_activities(&self) -> Vec<&'static str> {
        ACTIVITIES
            .iter()
            .copied()
            .filter(|a| self.activities.contains(a))
            .collect()
    }

    fn session_dir(&self) -> PathBuf {
        PathBuf::from(&self.output_dir).join(format!("session_{}", self.session_id))
    }
}

/// Continuous profiling's settings (`nrt_profile_continuous_options_t`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContinuousOptions {
    /// Where each save is written.
    pub output_dir: String,
}

impl Default for ContinuousOptions {
    fn default() -> Self {
        ContinuousOptions {
            output_dir: "./output".into(),
        }
    }
}

/// The last execution while a profile was recording: the model and its tensors' device
/// addresses, what its neuron-profile JSON is built from.
pub type LastExecution = (crate::model::ModelId, BTreeMap<String, nrt_hal::DeviceAddr>);

#[derive(Default)]
struct Active {
    /// The last execution recorded.
    last: Option<LastExecution>,
    /// The file `nrt_profile_start` named.
    model: Option<String>,
    continuous: bool,
    saves: u64,
    /// Failure dumps written in this session (inspect on fail).
    failures: u64,
    /// The running inspect session, and whether it started the system trace.
    inspect: Option<(InspectConfig, bool)>,
}

/// A session's profiles.
#[derive(Default)]
pub struct Profiling {
    inner: Mutex<Active>,
}

impl std::fmt::Debug for Profiling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Profiling")
            .field("inspecting", &self.inspecting())
            .finish()
    }
}

/// The backend's profiling capability, or `NRT_INVALID` saying there is none.
pub fn profiler(p: Option<&dyn Profiler>) -> Result<&dyn Profiler> {
    p.ok_or_else(|| {
        Error::invalid("profiling records the device timeline, which this backend does not record (the simulator does; the driver backend, NRT_EMU_BACKEND=driver, has none)")
    })
}

/// Writes `text` to `path`, creating its directory.
fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::failure(format!("cannot create {}: {e}", dir.display())))?;
    }
    std::fs::write(path, text)
        .map_err(|e| Error::failure(format!("cannot write {}: {e}", path.display())))
}

/// Turns the timeline and the instruction-level trace on (cleared) or off as the active
/// profiles need.
fn sync_timeline(a: &Active, p: Option<&dyn Profiler>, starting: bool) -> Result<()> {
    let p = profiler(p)?;
    let on = a.model.is_some() || a.continuous || a.inspect.is_some();
    if starting {
        p.clear();
    }
    p.set_recording(on);
    p.set_tracing(on);
    Ok(())
}

impl Profiling {
    fn lock(&self) -> MutexGuard<'_, Active> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether an inspect session is running.
    pub fn inspecting(&self) -> bool {
        self.lock().inspect.is_some()
    }

    /// Whether any profile is recording.
    pub fn recording(&self) -> bool {
        let a = self.lock();
        a.model.is_some() || a.continuous || a.inspect.is_some()
    }

    /// Notes an execution of model `id` with its tensors at `io` while recording.
    pub fn executed(&self, id: crate::model::ModelId, io: BTreeMap<String, nrt_hal::DeviceAddr>) {
        let mut a = self.lock();
        if a.model.is_some() || a.continuous || a.inspect.is_some() {
            a.last = Some((id, io));
        }
    }

    /// The last execution recorded, if any.
    pub fn last_execution(&self) -> Option<LastExecution> {
        self.lock().last.clone()
    }

    /// `nrt_profile_start`: records the timeline for `path` (created empty now).
    pub fn start(&self, p: Option<&dyn Profiler>, path: &str) -> Result<()> {
        profiler(p)?;
        write(Path::new(path), "")?;
        let mut a = self.lock();
        a.model = Some(path.to_string());
        sync_timeline(&a, p, true)
    }

    /// `nrt_profile_stop`: writes the timeline to `path` (the name given to start), or
    /// `neuron_profile` — the last execution in neuron-profile's JSON — when given.
    pub fn stop(
        &self,
        p: Option<&dyn Profiler>,
        path: &str,
        neuron_profile: Option<String>,
    ) -> Result<()> {
        let mut a = self.lock();
        match &a.model {
            Some(started) if started == path => {}
            Some(started) => {
                return Err(Error::invalid(format!(
                    "profiling writes to {started:?} (given to nrt_profile_start), not {path:?}"
                )))
            }
            None => return Err(Error::invalid("no profile is running (nrt_profile_start)")),
        }
        let text = match neuron_profile {
            Some(j) => j,
            None => profiler(p)?.timeline_json(),
        };
        write(Path::new(path), &text)?;
        a.model = None;
        if !(a.continuous || a.inspect.is_some()) {
            a.last = None;
        }
        sync_timeline(&a, p, false)
    }

    /// `nrt_profile_continuous_start`: refused during an inspect session.
    pub fn continuous_start(&self, p: Option<&dyn Profiler>) -> Result<()> {
        let mut a = self.lock();
        if a.inspect.is_some() {
            return Err(Error::invalid(
                "continuous profiling cannot run during an inspect session",
            ));
        }
        a.continuous = true;
        sync_timeline(&a, p, true)
    }

    /// `nrt_profile_continuous_save`: writes the timeline so far into the output directory as
    /// `profile_vnc<vnc>_<n>.json`; profiling goes on.
    pub fn continuous_save(
        &self,
        p: Option<&dyn Profiler>,
        vnc: u32,
        o: &ContinuousOptions,
    ) -> Result<()> {
        let mut a = self.lock();
        if !a.continuous {
            return Err(Error::invalid("continuous profiling is not running"));
        }
        a.saves += 1;
        let path = PathBuf::from(&o.output_dir).join(format!("profile_vnc{vnc}_{}.json", a.saves));
        write(&path, &profiler(p)?.timeline_json())
    }

    /// `nrt_profile_continuous_stop`.
    pub fn continuous_stop(&self, p: Option<&dyn Profiler>) -> Result<()> {
        let mut a = self.lock();
        if !a.continuous {
            return Err(Error::invalid("continuous profiling is not running"));
        }
        a.continuous = false;
        sync_timeline(&a, p, false)
    }

    /// `nrt_inspect_begin*`: starts an inspect session with `cfg` (its system trace unless one
    /// is running already).
    pub fn inspect_begin(
        &self,
        p: Option<&dyn Profiler>,
        trace: &SysTrace,
        log: &dyn Log,
        cfg: InspectConfig,
    ) -> Result<()> {
        let mut a = self.lock();
        if a.inspect.is_some() {
            return Err(Error::invalid("an inspect session is already running"));
        }
        if !(cfg.enable_inspect || cfg.enable_on_fail) {
            log.info(
                "inspect: enable_inspect and enable_inspect_on_fail are both off; nothing is profiled",
            );
            return Ok(());
        }
        let owns_trace = !trace.active() && cfg.activities.contains("system_profile");
        if owns_trace {
            trace.start(cfg.sys_trace.clone());
        }
        let device = cfg.activities.contains("device_profile");
        a.inspect = Some((cfg, owns_trace));
        if device {
            sync_timeline(&a, p, true)?;
        }
        Ok(())
    }

    /// `nrt_inspect_stop`: ends the inspect session, writing its output (with
    /// `neuron_profile`, the last execution in neuron-profile's JSON, as
    /// `neuron_profile.json`).
    pub fn inspect_stop(
        &self,
        p: Option<&dyn Profiler>,
        trace: &SysTrace,
        neuron_profile: Option<String>,
    ) -> Result<()> {
        let mut a = self.lock();
        let Some((cfg, owns_trace)) = a.inspect.take() else {
            return Err(Error::invalid(
                "no inspect session is running (nrt_inspect_begin)",
            ));
        };
        let dir = cfg.session_dir();
        if !cfg.enable_inspect {
            // Inspect-on-fail only: the dumps were written when executions failed.
            sync_timeline(&a, p, false).ok();
            if owns_trace {
                trace.stop();
            }
            return Ok(());
        }
        if cfg.activities.contains("device_profile") {
            if let Some(p) = p {
                write(&dir.join("device_profile.json"), &p.timeline_json())?;
            }
            if let Some(j) = neuron_profile {
                write(&dir.join("neuron_profile.json"), &j)?;
            }
            if a.model.is_none() && !a.continuous {
                a.last = None;
            }
            sync_timeline(&a, p, false).ok();
        }
        if cfg.activities.contains("system_profile") {
            write(
                &dir.join("system_profile.json"),
                &trace.fetch(&Default::default()),
            )?;
            if owns_trace {
                trace.stop();
            }
        }
        Ok(())
    }

    /// Called after an execution on visible core `vnc` failed with `error`: with
    /// inspect-on-fail on, writes what the session captured so far into
    /// `<output_dir>/session_<id>/failure_<n>/` — `device_profile.json` (the device timeline)
    /// and `system_profile.json` (the runtime events), for the activities enabled — and says
    /// where in one ERROR line. The session goes on.
    pub fn execution_failed(
        &self,
        p: Option<&dyn Profiler>,
        trace: &SysTrace,
        log: &dyn Log,
        vnc: u32,
        error: &Error,
    ) {
        let mut a = self.lock();
        let Some((cfg, _)) = a.inspect.as_ref().filter(|(c, _)| c.enable_on_fail) else {
            return;
        };
        let cfg = cfg.clone();
        a.failures += 1;
        let dir = cfg.session_dir().join(format!("failure_{}", a.failures));
        drop(a);
        let mut written = Vec::new();
        let mut result = Ok(());
        if cfg.activities.contains("device_profile") {
            if let Some(p) = p {
                let f = dir.join("device_profile.json");
                result = result.and(write(&f, &p.timeline_json()));
                written.push(f);
            }
        }
        if cfg.activities.contains("system_profile") {
            let f = dir.join("system_profile.json");
            result = result.and(write(&f, &trace.fetch(&Default::default())));
            written.push(f);
        }
        match result {
            Ok(()) => log.error(&format!(
                "inspect on fail: execution on NeuronCore {vnc} failed with {}; wrote {}",
                error.status.name(),
                written
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Err(e) => log.error(&format!("inspect on fail: {}", e.message)),
        }
    }
}
