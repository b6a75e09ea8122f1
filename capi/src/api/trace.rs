//! The system trace: runtime events per visible core (model loads and unloads, executions with
//! their status and device cycles, async requests) in ring buffers, fetched as JSON
//! (`nrt_sys_trace_*`, and `nrt_trace_start`/`nrt_trace_stop` which write them to a file).
//!
//! Events carry an ordinal (`"seq"`, the order the runtime saw them) instead of a wall-clock
//! time, so a trace is the same on every run of the same calls. An execution's `nc_exec` event
//! carries its simulated device time: `"device_cycles"` per core of the model (start to
//! completion on the device, sequencer clock) and `"device_ns"`, the same in nanoseconds at the
//! target's sequencer clock — how a libnrt program reads the device time of its executions. A ring holds at most
//! `max_events_per_nc` events; the oldest are dropped (and counted) beyond that.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ffi::{c_char, CString};
use std::sync::Mutex;

use nrt_hal::Target;
use nrt_runtime::exec::ExecReport;
use nrt_runtime::{Error, Result};
use serde_json::json;

use crate::guard;
use crate::handles::{Kind, Table};
use crate::ptr;
use crate::session;
use crate::types::NrtStatusC;

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

/// `nrt_sys_trace_config_t`.
#[derive(Debug, Clone)]
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

/// `nrt_sys_trace_fetch_options_t`.
#[derive(Debug, Clone, Default)]
pub struct FetchOptions {
    max_events_per_nc: Option<u64>,
    nc_idx: Option<u64>,
}

static CONFIGS: Table<SysTraceConfig> = Table::new(Kind::SysTraceConfig);
static FETCH: Table<FetchOptions> = Table::new(Kind::FetchOptions);

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

/// A session's capture.
pub struct TraceState {
    inner: Mutex<Capture>,
    target: Target,
}

impl TraceState {
    /// An idle capture for a device of generation `target` (its clock converts cycles to time).
    pub fn new(target: Target) -> Self {
        TraceState {
            inner: Mutex::default(),
            target,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Capture> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts capturing with `config` (replacing a running capture's settings).
    pub fn start(&self, config: SysTraceConfig) {
        let mut c = self.lock();
        c.config = Some(config);
    }

    /// Stops capturing and drops the captured events.
    pub fn stop(&self) -> bool {
        let mut c = self.lock();
        let was = c.config.is_some();
        *c = Capture::default();
        was
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

    /// A model load or unload on visible core `nc`.
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

    /// An async request scheduled on visible core `nc`.
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

/// A `malloc`ed copy of `s` (NUL-terminated), for strings the caller frees.
fn c_string(s: &str) -> Result<*mut c_char> {
    let c = CString::new(s).map_err(|_| Error::invalid("string contains NUL"))?;
    // SAFETY: `c` is NUL-terminated; strdup copies it into malloc'ed memory (checked).
    let p = unsafe { libc::strdup(c.as_ptr()) };
    if p.is_null() {
        return Err(Error::resource("out of memory"));
    }
    Ok(p)
}

/// Hands `names` to the caller as a `malloc`ed array of `malloc`ed strings; `arg` is the
/// list argument's name (for the NULL error).
///
/// # Safety
///
/// `list` and `count` are NULL or writable.
pub unsafe fn string_list(
    names: &[&str],
    list: *mut *mut *const c_char,
    arg: &str,
    count: *mut usize,
) -> Result<()> {
    // SAFETY: the caller's contract.
    let (list, count) = unsafe { (ptr::out(list, arg)?, ptr::out(count, "count")?) };
    let n = names.len().max(1);
    // SAFETY: calloc has no preconditions; checked for NULL.
    let arr =
        unsafe { libc::calloc(n, std::mem::size_of::<*const c_char>()) }.cast::<*const c_char>();
    if arr.is_null() {
        return Err(Error::resource("out of memory"));
    }
    for (i, name) in names.iter().enumerate() {
        match c_string(name) {
            // SAFETY: `arr` holds `n > i` pointers.
            Ok(p) => unsafe { arr.add(i).write(p) },
            Err(e) => {
                // SAFETY: the first `i` entries were allocated above.
                unsafe { free_string_list(arr, i) };
                return Err(e);
            }
        }
    }
    *list = arr;
    *count = names.len();
    Ok(())
}

/// Frees a list made by [`string_list`].
///
/// # Safety
///
/// `list` is NULL or came from [`string_list`] with at least `count` entries.
pub unsafe fn free_string_list(list: *const *const c_char, count: usize) {
    if list.is_null() {
        return;
    }
    for i in 0..count {
        // SAFETY: entry `i < count` is a malloc'ed string or NULL.
        unsafe { libc::free((*list.add(i)).cast_mut().cast()) };
    }
    // SAFETY: the array is malloc'ed.
    unsafe { libc::free(list.cast_mut().cast()) };
}

// ---- nrt_sys_trace_config_t ----

/// `nrt_sys_trace_config_allocate`.
///
/// # Safety
///
/// `options` is NULL or writable.
pub unsafe extern "C" fn nrt_sys_trace_config_allocate(
    options: *mut *mut std::ffi::c_void,
) -> NrtStatusC {
    guard::status("nrt_sys_trace_config_allocate", || {
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(options, "options")? };
        *out = CONFIGS.insert(SysTraceConfig::default()) as *mut _;
        Ok(())
    })
}

fn with_config(
    function: &'static str,
    p: *mut std::ffi::c_void,
    f: impl FnOnce(&mut SysTraceConfig),
) {
    guard::void(function, || CONFIGS.with(p as usize, "options", f));
}

/// `nrt_sys_trace_config_set_defaults`.
pub extern "C" fn nrt_sys_trace_config_set_defaults(options: *mut std::ffi::c_void) {
    with_config("nrt_sys_trace_config_set_defaults", options, |c| {
        *c = SysTraceConfig::default()
    });
}

/// `nrt_sys_trace_config_free`.
pub extern "C" fn nrt_sys_trace_config_free(options: *mut std::ffi::c_void) {
    guard::void("nrt_sys_trace_config_free", || {
        CONFIGS.remove(options as usize, "options").map(|_| ())
    });
}

/// `nrt_sys_trace_config_set_max_events_per_nc`.
pub extern "C" fn nrt_sys_trace_config_set_max_events_per_nc(
    options: *mut std::ffi::c_void,
    max_events_per_nc: u64,
) {
    with_config("nrt_sys_trace_config_set_max_events_per_nc", options, |c| {
        set_max_events(c, max_events_per_nc)
    });
}

/// `nrt_sys_trace_config_set_capture_enabled_for_nc`.
pub extern "C" fn nrt_sys_trace_config_set_capture_enabled_for_nc(
    options: *mut std::ffi::c_void,
    nc_idx: u32,
    enabled: bool,
) {
    with_config(
        "nrt_sys_trace_config_set_capture_enabled_for_nc",
        options,
        |c| set_nc(c, nc_idx, enabled),
    );
}

/// Enables or disables capture of `event_type`.
pub fn set_type(c: &mut SysTraceConfig, event_type: &str, enabled: bool) -> Result<()> {
    let t = self::event_type(event_type)?;
    if enabled {
        c.disabled_types.remove(t);
    } else {
        c.disabled_types.insert(t);
    }
    Ok(())
}

/// Enables or disables capture on visible core `nc`.
pub fn set_nc(c: &mut SysTraceConfig, nc: u32, enabled: bool) {
    if enabled {
        c.disabled_ncs.remove(&nc);
    } else {
        c.disabled_ncs.insert(nc);
    }
}

/// Sets the ring size per core.
pub fn set_max_events(c: &mut SysTraceConfig, n: u64) {
    c.max_events_per_nc = n;
}

/// `nrt_sys_trace_config_set_capture_enabled_for_event_type`.
///
/// # Safety
///
/// `event_type` is NULL or a NUL-terminated string.
pub unsafe extern "C" fn nrt_sys_trace_config_set_capture_enabled_for_event_type(
    options: *mut std::ffi::c_void,
    event_type: *const c_char,
    enabled: bool,
) -> NrtStatusC {
    guard::status(
        "nrt_sys_trace_config_set_capture_enabled_for_event_type",
        || {
            // SAFETY: the caller's contract.
            let name = unsafe { ptr::string(event_type, "event_type", ptr::STRING_MAX)? };
            CONFIGS.with(options as usize, "options", |c| set_type(c, name, enabled))?
        },
    )
}

/// `nrt_sys_trace_get_event_types`.
///
/// # Safety
///
/// `event_types` and `count` are NULL or writable.
pub unsafe extern "C" fn nrt_sys_trace_get_event_types(
    event_types: *mut *mut *const c_char,
    count: *mut usize,
) -> NrtStatusC {
    // SAFETY: forwarded.
    guard::status("nrt_sys_trace_get_event_types", || unsafe {
        string_list(&EVENT_TYPES, event_types, "event_types", count)
    })
}

/// `nrt_sys_trace_free_event_types`.
///
/// # Safety
///
/// `event_types` is NULL or a list from this library with `count` entries.
pub unsafe extern "C" fn nrt_sys_trace_free_event_types(
    event_types: *const *const c_char,
    count: usize,
) {
    guard::void("nrt_sys_trace_free_event_types", || {
        // SAFETY: the caller's contract (NULL or a list of `count` entries from this library) is
        // exactly `free_string_list`'s.
        unsafe { free_string_list(event_types, count) };
        Ok(())
    })
}

/// `nrt_sys_trace_config_get_enabled_event_types`.
///
/// # Safety
///
/// `event_types` and `count` are NULL or writable.
pub unsafe extern "C" fn nrt_sys_trace_config_get_enabled_event_types(
    options: *mut std::ffi::c_void,
    event_types: *mut *mut *const c_char,
    count: *mut usize,
) -> NrtStatusC {
    guard::status("nrt_sys_trace_config_get_enabled_event_types", || {
        let c = CONFIGS.get(options as usize, "options")?;
        let names: Vec<&str> = EVENT_TYPES
            .iter()
            .copied()
            .filter(|t| !c.disabled_types.contains(t))
            .collect();
        // SAFETY: forwarded.
        unsafe { string_list(&names, event_types, "event_types", count) }
    })
}

/// `nrt_sys_trace_start`: `options` NULL = defaults.
pub extern "C" fn nrt_sys_trace_start(options: *mut std::ffi::c_void) -> NrtStatusC {
    guard::status("nrt_sys_trace_start", || {
        let cfg = if options.is_null() {
            SysTraceConfig::default()
        } else {
            CONFIGS.get(options as usize, "options")?
        };
        session::with(|_, s| {
            s.trace.start(cfg);
            Ok(())
        })
    })
}

/// `nrt_sys_trace_stop`.
pub extern "C" fn nrt_sys_trace_stop() -> NrtStatusC {
    guard::status("nrt_sys_trace_stop", || {
        session::with(|_, s| {
            if s.trace.stop() {
                Ok(())
            } else {
                Err(Error::invalid(
                    "no system trace is running (nrt_sys_trace_start)",
                ))
            }
        })
    })
}

// ---- nrt_sys_trace_fetch_options_t ----

/// `nrt_sys_trace_fetch_options_allocate`.
///
/// # Safety
///
/// `options` is NULL or writable.
pub unsafe extern "C" fn nrt_sys_trace_fetch_options_allocate(
    options: *mut *mut std::ffi::c_void,
) -> NrtStatusC {
    guard::status("nrt_sys_trace_fetch_options_allocate", || {
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(options, "options")? };
        *out = FETCH.insert(FetchOptions::default()) as *mut _;
        Ok(())
    })
}

fn with_fetch(function: &'static str, p: *mut std::ffi::c_void, f: impl FnOnce(&mut FetchOptions)) {
    guard::void(function, || FETCH.with(p as usize, "options", f));
}

/// `nrt_sys_trace_fetch_options_set_defaults`.
pub extern "C" fn nrt_sys_trace_fetch_options_set_defaults(options: *mut std::ffi::c_void) {
    with_fetch("nrt_sys_trace_fetch_options_set_defaults", options, |o| {
        *o = FetchOptions::default()
    });
}

/// `nrt_sys_trace_fetch_options_free`.
pub extern "C" fn nrt_sys_trace_fetch_options_free(options: *mut std::ffi::c_void) {
    guard::void("nrt_sys_trace_fetch_options_free", || {
        FETCH.remove(options as usize, "options").map(|_| ())
    });
}

/// `nrt_sys_trace_fetch_options_set_max_events_per_nc`.
pub extern "C" fn nrt_sys_trace_fetch_options_set_max_events_per_nc(
    options: *mut std::ffi::c_void,
    max_events_per_nc: u64,
) {
    with_fetch(
        "nrt_sys_trace_fetch_options_set_max_events_per_nc",
        options,
        |o| o.max_events_per_nc = Some(max_events_per_nc),
    );
}

/// `nrt_sys_trace_fetch_options_set_nc_idx`.
pub extern "C" fn nrt_sys_trace_fetch_options_set_nc_idx(
    options: *mut std::ffi::c_void,
    nc_idx: u64,
) {
    with_fetch("nrt_sys_trace_fetch_options_set_nc_idx", options, |o| {
        o.nc_idx = Some(nc_idx)
    });
}

/// Fetch buffers handed out and not yet freed.
static BUFFERS: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());

/// `nrt_sys_trace_fetch_events`.
///
/// # Safety
///
/// `buffer` and `written_size` are NULL or writable.
pub unsafe extern "C" fn nrt_sys_trace_fetch_events(
    buffer: *mut *mut c_char,
    written_size: *mut usize,
    options: *const std::ffi::c_void,
) -> NrtStatusC {
    guard::status("nrt_sys_trace_fetch_events", || {
        // SAFETY: the caller's contract.
        let (buf, size) = unsafe {
            (
                ptr::out(buffer, "buffer")?,
                ptr::out(written_size, "written_size")?,
            )
        };
        if !buf.is_null() {
            return Err(Error::invalid(
                "`*buffer` must be NULL on entry (the library allocates the buffer)",
            ));
        }
        let opts = if options.is_null() {
            FetchOptions::default()
        } else {
            FETCH.get(options as usize, "options")?
        };
        let text = session::with(|_, s| Ok(s.trace.fetch(&opts)))?;
        let p = c_string(&text)?;
        BUFFERS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(p as usize);
        *buf = p;
        *size = text.len();
        Ok(())
    })
}

/// `nrt_sys_trace_buffer_free`.
///
/// # Safety
///
/// `buffer` is NULL or came from [`nrt_sys_trace_fetch_events`] (anything else is refused).
pub unsafe extern "C" fn nrt_sys_trace_buffer_free(buffer: *mut c_char) {
    guard::void("nrt_sys_trace_buffer_free", || {
        if buffer.is_null() {
            return Err(ptr::null("buffer"));
        }
        if !BUFFERS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(buffer as usize))
        {
            return Err(Error::invalid(format!(
                "argument `buffer` ({buffer:p}) is not a buffer from nrt_sys_trace_fetch_events, or was already freed"
            )));
        }
        // SAFETY: the buffer was malloc'ed (strdup) by nrt_sys_trace_fetch_events, once.
        unsafe { libc::free(buffer.cast()) };
        Ok(())
    })
}

// ---- nrt_trace_start / nrt_trace_stop (nrt_experimental.h) ----

/// `nrt_trace_start`: captures every event type on every visible core. (`trace_mem`: the
/// simulator's allocation accounting is reported by `nrt_get_vnc_memory_stats`; no separate
/// memory events are recorded.)
pub extern "C" fn nrt_trace_start(_trace_mem: bool) -> NrtStatusC {
    guard::status("nrt_trace_start", || {
        session::with(|_, s| {
            s.trace.start(SysTraceConfig::default());
            Ok(())
        })
    })
}

/// `nrt_trace_stop`: writes the captured events to `filename` as JSON and stops.
///
/// # Safety
///
/// `filename` is NULL or a NUL-terminated string.
pub unsafe extern "C" fn nrt_trace_stop(filename: *const c_char) -> NrtStatusC {
    guard::status("nrt_trace_stop", || {
        // SAFETY: the caller's contract.
        let path = unsafe { ptr::string(filename, "filename", ptr::STRING_MAX)? };
        session::with(|_, s| {
            if !s.trace.active() {
                return Err(Error::invalid("no trace is running (nrt_trace_start)"));
            }
            let text = s.trace.fetch(&FetchOptions::default());
            s.trace.stop();
            std::fs::write(path, text)
                .map_err(|e| Error::failure(format!("cannot write {path}: {e}")))
        })
    })
}
