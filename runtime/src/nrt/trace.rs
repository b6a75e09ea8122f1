//! The system trace (docs/c-api.md §5.6): runtime events per visible core — model loads and
//! unloads, executions with their status and device cycles, async requests — in ring
//! buffers, fetched as JSON (`nrt_sys_trace_*`, and `nrt_trace_start`/`nrt_trace_stop` which
//! write them to a file).
//!
//! Events carry an ordinal (`"seq"`, the order the runtime saw them) instead of a wall-clock
//! time, so a trace is the same on every run of the same calls. An execution's `nc_exec` event
//! carries its simulated device time: `"device_cycles"` per core of the model (start to
//! completion on the device, sequencer clock) and `"device_ns"`, the same in nanoseconds at the
//! target's sequencer clock — how a libnrt program reads the device time of its executions. A
//! ring holds at most `max_events_per_nc` events; the oldest are dropped (and counted) beyond
//! that.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

use nrt_hal::Target;
use serde_json::json;

use crate::error::{Error, Result};
use crate::exec::ExecReport;

/// Every event type, as `nrt_sys_trace_get_event_types` lists them.
pub const EVENT_TYPES: [&str; 5] = [
    "model_load",
    "model_unload",
    "nc_exec",
    "async_tensor_op",
    "async_exec_schedule",
];

/// Default ring size per core.
pub const DEFAULT_MAX_EVENTS: u64 = 1_000_000;

/// What a capture records (`nrt_sys_trace_config_t`): the ring size per core, and the cores
/// and event types left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SysTraceConfig {
    max_events_per_nc: u64,
    disabled_ncs: BTreeSet<u32>,
    disabled_types: BTreeSet<&'static str>,
}

impl Default for SysTraceConfig {
    fn default() -> Self {
        SysTraceConfig {
            max_events_per_nc: DEFAULT_MAX_EVENTS,
            disabled_ncs: BTreeSet::new(),
            disabled_types: BTreeSet::new(),
        }
    }
}

fn event_type(name: &str) -> Result<&'static str> {
    EVENT_TYPES
        .iter()
        .copied()
        .find(|t| *t == name)
        .ok_or_else(|| {
            Error::invalid(format!(
                "{name:?} is not an event type (nrt_sys_trace_get_event_types lists: {})",
                EVENT_TYPES.join(", ")
            ))
        })
}

impl SysTraceConfig {
    /// Enables or disables capture of `event_type` (one of [`EVENT_TYPES`]).
    pub fn set_type(&mut self, event_type: &str, enabled: bool) -> Result<()> {
        let t = self::event_type(event_type)?;
        if enabled {
            self.disabled_types.remove(t);
        } else {
            self.disabled_types.insert(t);
        }
        Ok(())
    }

    /// Enables or disables capture on visible core `nc`.
    pub fn set_nc(&mut self, nc: u32, enabled: bool) {
        if enabled {
            self.disabled_ncs.remove(&nc);
        } else {
            self.disabled_ncs.insert(nc);
        }
    }

    /// Sets the ring size per core.
    pub fn set_max_events(&mut self, n: u64) {
        self.max_events_per_nc = n;
    }

    /// The event types captured, in [`EVENT_TYPES`] order.
    pub fn enabled_types(&self) -> Vec<&'static str> {
        EVENT_TYPES
            .iter()
            .copied()
            .filter(|t| !self.disabled_types.contains(t))
            .collect()
    }
}

/// Which events a fetch returns (`nrt_sys_trace_fetch_options_t`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FetchOptions {
    /// At most this many events per core (`None`: all).
    pub max_events_per_nc: Option<u64>,
    /// Only this visible core's events (`None`: every core's).
    pub nc_idx: Option<u64>,
}

struct Event {
    seq: u64,
    kind: &'static str,
    fields: serde_json::Value,
}

#[derive(Default)]
struct Capture {
    config: Option<SysTraceConfig>,
    rings: BTreeMap<u32, VecDeque<Event>>,
    dropped: u64,
    next: u64,
}

/// A session's system-trace capture.
pub struct SysTrace {
    inner: Mutex<Capture>,
    target: Target,
}

impl std::fmt::Debug for SysTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SysTrace")
            .field("active", &self.active())
            .finish()
    }
}

impl SysTrace {
    /// An idle capture for a device of generation `target` (its clock converts cycles to time).
    pub fn new(target: Target) -> Self {
        SysTrace {
            inner: Mutex::default(),
            target,
        }
    }

    fn lock(&self) -> MutexGuard<'_, Capture> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts capturing with `config` (replacing a running capture's settings).
    pub fn start(&self, config: SysTraceConfig) {
        let mut c = self.lock();
        c.config = Some(config);
    }

    /// Stops capturing and drops the captured events; whether a capture was running.
    pub fn stop(&self) -> bool {
        let mut c = self.lock();
        let was = c.config.is_some();
        *c = Capture::default();
        was
    }

    /// `nrt_sys_trace_stop`: [`SysTrace::stop`], an error when no capture was running.
    pub fn stop_running(&self) -> Result<()> {
        if self.stop() {
            Ok(())
        } else {
            Err(Error::invalid(
                "no system trace is running (nrt_sys_trace_start)",
            ))
        }
    }

    /// `nrt_trace_stop`: writes the captured events to `path` as JSON and stops.
    pub fn stop_to_file(&self, path: &str) -> Result<()> {
        if !self.active() {
            return Err(Error::invalid("no trace is running (nrt_trace_start)"));
        }
        let text = self.fetch(&FetchOptions::default());
        self.stop();
        std::fs::write(Path::new(path), text)
            .map_err(|e| Error::failure(format!("cannot write {path}: {e}")))
    }

    /// Whether a capture is running.
    pub fn active(&self) -> bool {
        self.lock().config.is_some()
    }

    fn record(&self, nc: u32, kind: &'static str, fields: serde_json::Value) {
        let mut c = self.lock();
        let Some(cfg) = &c.config else { return };
        if cfg.disabled_ncs.contains(&nc) || cfg.disabled_types.contains(kind) {
            return;
        }
        let max = cfg.max_events_per_nc.max(1) as usize;
        let seq = c.next;
        c.next += 1;
        let ring = c.rings.entry(nc).or_default();
        ring.push_back(Event { seq, kind, fields });
        let over = ring.len() > max;
        if over {
            ring.pop_front();
            c.dropped += 1;
        }
    }

    /// A model load or unload (`kind`) on visible core `nc`.
    pub fn record_model(&self, nc: u32, kind: &'static str, model: u32, status: u32) {
        self.record(nc, kind, json!({"model_id": model, "status_code": status}));
    }

    /// An execution on visible core `nc`.
    pub fn record_exec(&self, nc: u32, model: u32, r: &Result<ExecReport>) {
        let fields = match r {
            Ok(rep) => json!({
                "model_id": model, "status": "NRT_SUCCESS", "status_code": 0,
                "seq_id": rep.seq_id, "device_cycles": rep.cycles,
                "device_ns": rep.cycles.iter().map(|&c| self.target.cycles_to_ns(c)).collect::<Vec<_>>(),
            }),
            Err(e) => json!({
                "model_id": model, "status": e.status.name(), "status_code": e.status.code(),
            }),
        };
        self.record(nc, "nc_exec", fields);
    }

    /// An async request (`kind`) scheduled on visible core `nc`.
    pub fn record_async(&self, nc: u32, kind: &'static str, seq: u64, what: &str) {
        self.record(nc, kind, json!({"seq_id": seq, "op": what}));
    }

    /// The captured events as JSON, removing those returned.
    pub fn fetch(&self, opts: &FetchOptions) -> String {
        let mut c = self.lock();
        let dropped = c.dropped;
        let mut out = Vec::new();
        for (nc, ring) in c.rings.iter_mut() {
            if opts.nc_idx.is_some_and(|n| n != u64::from(*nc)) {
                continue;
            }
            let take = opts
                .max_events_per_nc
                .map_or(ring.len(), |m| ring.len().min(m as usize));
            for e in ring.drain(..take) {
                let mut v = json!({"seq": e.seq, "nc_idx": nc, "event_type": e.kind});
                if let (Some(obj), Some(f)) = (v.as_object_mut(), e.fields.as_object()) {
                    obj.extend(f.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
                out.push(v);
            }
        }
        out.sort_by_key(|v| v["seq"].as_u64());
        json!({"events": out, "dropped_events": dropped}).to_string()
    }
}
