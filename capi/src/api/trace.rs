//! The system trace's C entry points (`nrt_sys_trace_*`, and `nrt_trace_start`/`nrt_trace_stop`
//! of `nrt_experimental.h`): the option objects as handles, the lists and buffers handed to
//! the caller. The capture itself — per-core event rings, fetched as JSON — is the runtime
//! session's ([`nrt_runtime::nrt::trace`]).

use std::collections::BTreeSet;
use std::ffi::c_char;
use std::sync::Mutex;

use nrt_runtime::nrt::trace::{FetchOptions, SysTraceConfig, EVENT_TYPES};
use nrt_runtime::Error;

use crate::guard;
use crate::handles::{Kind, Table};
use crate::ptr;
use crate::session;
use crate::types::NrtStatusC;

static CONFIGS: Table<SysTraceConfig> = Table::new(Kind::SysTraceConfig);
static FETCH: Table<FetchOptions> = Table::new(Kind::FetchOptions);

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
        c.set_max_events(max_events_per_nc)
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
        |c| c.set_nc(nc_idx, enabled),
    );
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
            CONFIGS.with(options as usize, "options", |c| c.set_type(name, enabled))?
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
        ptr::string_list(&EVENT_TYPES, event_types, "event_types", count)
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
        unsafe { ptr::free_string_list(event_types, count) };
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
        let names = CONFIGS.get(options as usize, "options")?.enabled_types();
        // SAFETY: forwarded.
        unsafe { ptr::string_list(&names, event_types, "event_types", count) }
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
            s.nrt.trace.start(cfg);
            Ok(())
        })
    })
}

/// `nrt_sys_trace_stop`.
pub extern "C" fn nrt_sys_trace_stop() -> NrtStatusC {
    guard::status("nrt_sys_trace_stop", || {
        session::with(|_, s| s.nrt.trace.stop_running())
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
        let text = session::with(|_, s| Ok(s.nrt.trace.fetch(&opts)))?;
        let p = ptr::c_string(&text)?;
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
            s.nrt.trace.start(SysTraceConfig::default());
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
        session::with(|_, s| s.nrt.trace.stop_to_file(path))
    })
}
