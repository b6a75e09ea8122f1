//! A libnrt session's behaviour over the runtime: what lives between `nrt_init` and
//! `nrt_close` besides the [`Runtime`] itself — the visible cores, the system trace
//! ([`super::trace`]), profiling and inspect ([`super::profile`]), the explicit async units
//! ([`super::nrta`]) and the legacy implicit-async dispatcher ([`super::legacy`]) — and the
//! calls that tie them together: an execution is recorded in the trace and, when it fails,
//! may write an inspect-on-fail dump; a finished async request is harvested in order.
//!
//! A front end (the C library) keeps one [`Session`] in its per-session state next to the
//! runtime (see [`super::Nrt`]) and serves it as its [`Front`]: the log the session writes to,
//! the way the session's background threads reach the open session again, and the callback of
//! a finished legacy-async execution. Handles, pointer checks and the environment stay the
//! front end's.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use nrt_hal::profile::Profiler;

use super::legacy::{Completion, Legacy, Polled};
use super::log::Log;
use super::nrta::{AsyncUnits, ComputeRequest, ErrorTracker, Finished, TensorRequest};
use super::profile::{ContinuousOptions, InspectConfig, Profiling};
use super::trace::SysTrace;
use crate::error::{Error, Result};
use crate::exec::ExecReport;
use crate::model::ModelId;
use crate::runtime::Runtime;
use crate::tensor::TensorSet;

/// What a session needs from its front end.
pub trait Front: Log {
    /// Runs `f` on the open runtime and session without waiting: `None` while `nrt_init` or
    /// `nrt_close` holds the session's guard, `Some(Err)` when no session is open.
    fn try_with(&self, f: &mut dyn FnMut(&Runtime, &Session)) -> Option<Result<()>>;

    /// Runs `f` on the open runtime and session, waiting for the guard; `Err` when no session
    /// is open.
    fn with(&self, f: &mut dyn FnMut(&Runtime, &Session)) -> Result<()>;

    /// A legacy-async execution finished (called on the dispatcher thread, in submission
    /// order).
    fn legacy_completed(&self, c: &Completion);
}

/// Signals a waiter once (the C library writes an eventfd).
pub type Signal = Box<dyn FnOnce() + Send>;

/// A libnrt session's state and behaviour over the runtime.
pub struct Session {
    visible: Range<u32>,
    /// The system trace.
    pub trace: SysTrace,
    profile: Profiling,
    nrta: AsyncUnits,
    legacy: Legacy,
    front: Arc<dyn Front>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("visible", &self.visible)
            .finish_non_exhaustive()
    }
}

fn profiler(rt: &Runtime) -> Option<&dyn Profiler> {
    rt.hal().profiler()
}

impl Session {
    /// The session of runtime `rt` over its logical cores `visible` (visible core `i` is the
    /// runtime's `visible.start + i`), serving `front`.
    pub fn new(rt: &Runtime, visible: Range<u32>, front: Arc<dyn Front>) -> Session {
        let polling = Arc::clone(&front);
        let completing = Arc::clone(&front);
        let legacy = Legacy::new(
            Box::new(move |req| {
                let mut got = None;
                match polling.try_with(&mut |rt, _| got = rt.poll(req)) {
                    None => Polled::Later,
                    Some(Err(_)) => Polled::Gone,
                    Some(Ok(())) => got.map_or(Polled::Later, Polled::Done),
                }
            }),
            Box::new(move |c| completing.legacy_completed(c)),
        );
        Session {
            visible,
            trace: SysTrace::new(rt.target()),
            profile: Profiling::default(),
            nrta: AsyncUnits::default(),
            legacy,
            front,
        }
    }

    /// The runtime's logical cores this session uses.
    pub fn visible(&self) -> Range<u32> {
        self.visible.clone()
    }

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

    // ---- models and executions ----

    /// `nrt_load`: loads `neff` on visible core `vnc` (`< 0`: the runtime picks among the
    /// visible ones) and records it; returns the model and the runtime's logical core.
    pub fn load(&self, rt: &Runtime, neff: &[u8], vnc: i32) -> Result<(ModelId, u32)> {
        let want = if vnc < 0 {
            -1
        } else {
            self.vnc(vnc.into())? as i32
        };
        let id = rt.load_within(neff, want, self.visible.clone())?;
        let abs = rt.model(id)?.vnc;
        self.trace
            .record_model(self.visible_index(abs), "model_load", id.0, 0);
        Ok((id, abs))
    }

    /// `nrt_unload` of model `id` on the runtime's logical core `vnc`, recorded.
    pub fn unload(&self, rt: &Runtime, id: ModelId, vnc: u32) -> Result<()> {
        rt.unload(id)?;
        self.trace
            .record_model(self.visible_index(vnc), "model_unload", id.0, 0);
        Ok(())
    }

    /// `nrt_execute` (`repeat` 1) and `nrt_execute_repeat` of model `id` on the runtime's
    /// logical core `vnc`, recorded in the trace. One execution in legacy async mode
    /// (`NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS` > 0) is only queued (`Ok(None)`), its
    /// completion going to [`Front::legacy_completed`]; `repeat` > 1 executions, each after the
    /// first reading the previous one's outputs ([`Runtime::execute_repeat`] owns the rule),
    /// always wait for the last run, also in legacy async mode.
    pub fn execute(
        &self,
        rt: &Runtime,
        (id, vnc): (ModelId, u32),
        inputs: &TensorSet,
        outputs: &TensorSet,
        repeat: u32,
    ) -> Result<Option<ExecReport>> {
        let r = if repeat > 1 {
            rt.execute_repeat(id, inputs, outputs, repeat)
        } else if rt.config().async_max_inflight > 0 {
            let req = rt.execute_async_counted(id, inputs, outputs)?;
            let v = self.visible_index(vnc);
            self.trace
                .record_async(v, "async_exec_schedule", req.seq_id, "nrt_execute");
            self.legacy.submit(req, id.0, vnc, v);
            return Ok(None);
        } else {
            rt.execute(id, inputs, outputs)
        };
        let v = self.visible_index(vnc);
        self.trace.record_exec(v, id.0, &r);
        if r.is_ok() && self.profile.recording() {
            let io = inputs
                .iter()
                .chain(outputs.iter())
                .filter_map(|(n, t)| t.device_addr().map(|a| (n.to_string(), a)))
                .collect();
            self.profile.executed(id, io);
        }
        if let Err(e) = &r {
            self.profile
                .execution_failed(profiler(rt), &self.trace, &*self.front, v, e);
        }
        r.map(Some)
    }

    /// `nrt_async_drain_queued_execs`: waits until visible core `vnc` has no queued
    /// legacy-async execution (at most the execution timeout per queued execution).
    pub fn drain(&self, rt: &Runtime, vnc: i64) -> Result<()> {
        let v = self.vnc(vnc)?;
        let limit = rt.config().async_max_inflight.max(1) + 1;
        self.legacy
            .drain(v, rt.config().exec_timeout.saturating_mul(limit))
    }

    // ---- explicit async (nrta) ----

    /// Collects the finished compute requests of the explicit async API, in order: each is
    /// recorded in the trace and on its error tracker, and a failure logged (and maybe dumped,
    /// inspect on fail).
    pub fn collect_finished(&self, rt: &Runtime) {
        self.nrta.harvest(rt, &mut |f: Finished| {
            let v = self.visible_index(f.vnc);
            self.trace.record_exec(v, f.model, &f.result);
            if let Err(e) = &f.result {
                self.front
                    .error(&format!("async execution {:#x}: {}", f.seq, e));
                self.profile
                    .execution_failed(profiler(rt), &self.trace, &*self.front, v, e);
            }
        });
    }

    /// A new error tracker of visible core `lnc`.
    pub fn error_tracker(&self, lnc: u32) -> Result<ErrorTracker> {
        self.vnc(lnc.into())?;
        Ok(ErrorTracker::new(lnc))
    }

    /// `nrta_tensor_read`/`_write`/`_copy`: runs `op` as request `req` on the runtime's
    /// logical core `vnc` (see [`AsyncUnits::schedule_tensor`]); returns its public sequence
    /// id.
    pub fn schedule_tensor(
        &self,
        vnc: u32,
        req: TensorRequest<'_>,
        op: impl FnOnce() -> Result<()>,
    ) -> Result<u64> {
        let lnc = self.visible_index(vnc);
        self.nrta
            .schedule_tensor((&self.trace, &*self.front), lnc, req, op)
    }

    /// `nrta_execute_schedule`: compute request `req` on the runtime's logical core `vnc` (see
    /// [`AsyncUnits::schedule_execute`]); returns its public sequence id.
    pub fn schedule_execute(&self, rt: &Runtime, vnc: u32, req: ComputeRequest<'_>) -> Result<u64> {
        let lnc = self.visible_index(vnc);
        self.nrta.schedule_execute((rt, &self.trace), lnc, req)
    }

    /// `nrta_is_completed`: whether public sequence id `seq` has completed.
    pub fn is_completed(&self, rt: &Runtime, seq: u64) -> Result<bool> {
        self.nrta.completed(seq, || self.collect_finished(rt))
    }

    /// `nrta_get_sequence`: the last completed request of unit (visible core `lnc`, type `xu`,
    /// `queue`).
    pub fn last_sequence(&self, rt: &Runtime, lnc: u32, xu: u32, queue: i32) -> Result<u64> {
        self.vnc(lnc.into())?;
        self.nrta
            .last_sequence(lnc, xu, queue, || self.collect_finished(rt))
    }

    /// `nrta_get_completion_handle`: once `seq` has completed, the signal `make_signal` makes
    /// (after `seq` was checked) is given — now if it has, else by a thread that looks every
    /// 200 µs, and that also gives it when the session ends.
    pub fn when_completed(
        &self,
        rt: &Runtime,
        seq: u64,
        make_signal: impl FnOnce() -> Result<Signal>,
    ) -> Result<()> {
        let done = self.is_completed(rt, seq)?;
        let signal = make_signal()?;
        if done {
            signal();
            return Ok(());
        }
        let front = Arc::clone(&self.front);
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_micros(200));
            let mut completed = Ok(false);
            let reached = front.with(&mut |rt, s| completed = s.is_completed(rt, seq));
            match (reached, completed) {
                (Ok(()), Ok(false)) => continue,
                // Completed, or the session ended: either way nothing more will happen.
                _ => return signal(),
            }
        });
        Ok(())
    }

    // ---- profiling ----

    /// `nrt_profile_start`: records the device timeline for `path`.
    pub fn profile_start(&self, rt: &Runtime, path: &str) -> Result<()> {
        self.profile.start(profiler(rt), path)
    }

    /// `nrt_profile_stop`: writes the timeline to `path` (the name given to start) — or, for a
    /// name ending in `.profile.json`, the last execution in neuron-profile's JSON.
    pub fn profile_stop(&self, rt: &Runtime, path: &str) -> Result<()> {
        let json = if path.ends_with(".profile.json") {
            let (id, io) = self.profile.last_execution().ok_or_else(|| {
                crate::error::Error::invalid(format!(
                    "{path:?} asks for neuron-profile's JSON, but no model executed while profiling"
                ))
            })?;
            Some(self.neuron_profile(rt, id, &io)?)
        } else {
            None
        };
        self.profile.stop(profiler(rt), path, json)
    }

    /// Model `id`'s last execution (tensors at `io`) as neuron-profile's JSON text.
    fn neuron_profile(
        &self,
        rt: &Runtime,
        id: ModelId,
        io: &std::collections::BTreeMap<String, nrt_hal::DeviceAddr>,
    ) -> Result<String> {
        let base = nrt_profile::Summary {
            runtime_version: format!("nrt-emu {}", env!("CARGO_PKG_VERSION")),
            ..Default::default()
        };
        let p = rt.execution_profile_of(id, io, base)?;
        Ok(nrt_profile::json::to_string(&p))
    }

    /// `nrt_profile_continuous_start`: refused in legacy async mode and during an inspect
    /// session.
    pub fn continuous_start(&self, rt: &Runtime) -> Result<()> {
        if rt.config().async_max_inflight > 0 {
            return Err(Error::invalid(
                "continuous profiling cannot run with NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS > 0",
            ));
        }
        self.profile.continuous_start(profiler(rt))
    }

    /// `nrt_profile_continuous_save` of visible core `vnc` into `options`' directory.
    pub fn continuous_save(
        &self,
        rt: &Runtime,
        vnc: u32,
        options: &ContinuousOptions,
    ) -> Result<()> {
        self.vnc(vnc.into())?;
        self.profile.continuous_save(profiler(rt), vnc, options)
    }

    /// `nrt_profile_continuous_stop`.
    pub fn continuous_stop(&self, rt: &Runtime) -> Result<()> {
        self.profile.continuous_stop(profiler(rt))
    }

    /// `nrt_inspect_begin*`: starts an inspect session with `cfg`.
    pub fn inspect_begin(&self, rt: &Runtime, cfg: InspectConfig) -> Result<()> {
        self.profile
            .inspect_begin(profiler(rt), &self.trace, &*self.front, cfg)
    }

    /// `nrt_inspect_stop`: ends the inspect session, writing its output.
    pub fn inspect_stop(&self, rt: &Runtime) -> Result<()> {
        let json = self
            .profile
            .last_execution()
            .and_then(|(id, io)| self.neuron_profile(rt, id, &io).ok());
        self.profile.inspect_stop(profiler(rt), &self.trace, json)
    }

    /// Whether an inspect session is running.
    pub fn inspecting(&self) -> bool {
        self.profile.inspecting()
    }
}
