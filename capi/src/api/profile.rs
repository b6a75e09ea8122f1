//! Profiling's C entry points: `nrt_profile_*`, continuous profiling and `nrt_inspect_*` — the
//! option objects as handles, the paths and lists the caller passes and receives. What a
//! profile is (the device timeline, through the backend's profiling capability; the driver
//! backend has none and answers `NRT_INVALID`), inspect sessions and inspect-on-fail dumps are
//! the runtime session's ([`nrt_runtime::nrt::profile`]).
//!
//! `NEURON_RT_INSPECT_ENABLE=1` begins an inspect session at `nrt_init` (output in
//! `NEURON_RT_INSPECT_OUTPUT_DIR`, default `./output`) and ends it at `nrt_close`; the
//! variables are read by [`crate::env::inspect_config`].

use std::ffi::{c_char, c_int, c_void};

use nrt_runtime::nrt::profile::{ContinuousOptions, InspectConfig, ACTIVITIES};
use nrt_runtime::{Error, Result};

use crate::env;
use crate::guard;
use crate::handles::{Kind, Table};
use crate::ptr;
use crate::session;
use crate::types::NrtStatusC;

static INSPECT_CONFIGS: Table<InspectConfig> = Table::new(Kind::InspectConfig);
static CONTINUOUS: Table<ContinuousOptions> = Table::new(Kind::ProfileOptions);

/// `nrt_profile_start`.
///
/// # Safety
///
/// `filename` is NULL or a NUL-terminated string.
pub unsafe extern "C" fn nrt_profile_start(
    model: *mut c_void,
    filename: *const c_char,
) -> NrtStatusC {
    guard::status("nrt_profile_start", || {
        // SAFETY: the caller's contract.
        let path = unsafe { ptr::string(filename, "filename", ptr::STRING_MAX)? };
        session::with(|rt, s| {
            s.model(model as usize, "model")?;
            s.nrt.profile_start(rt, path)
        })
    })
}

/// `nrt_profile_stop`: writes the timeline to `filename` (the name given to start) — or, for a
/// name ending in `.profile.json`, the last execution in neuron-profile's JSON
/// (docs/profile.md §7).
///
/// # Safety
///
/// `filename` is NULL or a NUL-terminated string.
pub unsafe extern "C" fn nrt_profile_stop(filename: *const c_char) -> NrtStatusC {
    guard::status("nrt_profile_stop", || {
        // SAFETY: the caller's contract.
        let path = unsafe { ptr::string(filename, "filename", ptr::STRING_MAX)? };
        session::with(|rt, s| s.nrt.profile_stop(rt, path))
    })
}

/// `nrt_profile_continuous_options_allocate`.
///
/// # Safety
///
/// `options` is NULL or writable.
pub unsafe extern "C" fn nrt_profile_continuous_options_allocate(
    options: *mut *mut c_void,
) -> NrtStatusC {
    guard::status("nrt_profile_continuous_options_allocate", || {
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(options, "options")? };
        *out = CONTINUOUS.insert(ContinuousOptions::default()) as *mut c_void;
        Ok(())
    })
}

/// `nrt_profile_continuous_options_free`.
pub extern "C" fn nrt_profile_continuous_options_free(options: *mut c_void) -> NrtStatusC {
    guard::status("nrt_profile_continuous_options_free", || {
        CONTINUOUS.remove(options as usize, "options").map(|_| ())
    })
}

/// `nrt_profile_continuous_options_set_output_dir`.
///
/// # Safety
///
/// `output_dir` is NULL or a NUL-terminated string.
pub unsafe extern "C" fn nrt_profile_continuous_options_set_output_dir(
    options: *mut c_void,
    output_dir: *const c_char,
) -> NrtStatusC {
    guard::status("nrt_profile_continuous_options_set_output_dir", || {
        // SAFETY: the caller's contract.
        let dir = unsafe { non_empty_path(output_dir)? };
        CONTINUOUS.with(options as usize, "options", |o| {
            o.output_dir = dir.to_string()
        })
    })
}

/// # Safety
///
/// `p` is NULL or a NUL-terminated string.
unsafe fn non_empty_path<'a>(p: *const c_char) -> Result<&'a str> {
    // SAFETY: forwarded.
    let s = unsafe { ptr::string(p, "output_dir", ptr::STRING_MAX)? };
    if s.is_empty() {
        return Err(Error::invalid("argument `output_dir` is empty"));
    }
    Ok(s)
}

/// `nrt_profile_continuous_start`: refused while an inspect session or legacy async execution
/// is on.
pub extern "C" fn nrt_profile_continuous_start(options: *mut c_void) -> NrtStatusC {
    guard::status("nrt_profile_continuous_start", || {
        CONTINUOUS.get(options as usize, "options")?;
        session::with(|rt, s| s.nrt.continuous_start(rt))
    })
}

/// `nrt_profile_continuous_save`: writes the timeline so far into the output directory as
/// `profile_vnc<vnc>_<n>.json`; profiling goes on.
pub extern "C" fn nrt_profile_continuous_save(vnc: u32, options: *mut c_void) -> NrtStatusC {
    guard::status("nrt_profile_continuous_save", || {
        let o = CONTINUOUS.get(options as usize, "options")?;
        session::with(|rt, s| s.nrt.continuous_save(rt, vnc, &o))
    })
}

/// `nrt_profile_continuous_stop`.
pub extern "C" fn nrt_profile_continuous_stop() -> NrtStatusC {
    guard::status("nrt_profile_continuous_stop", || {
        session::with(|rt, s| s.nrt.continuous_stop(rt))
    })
}

/// Called by `nrt_init`: `NEURON_RT_INSPECT_ENABLE=1` begins an inspect session, and so does
/// `NEURON_RT_INSPECT_ON_FAIL=1` alone (one that writes only when an execution fails).
pub fn begin_from_env() {
    if let Some(cfg) = env::inspect_at_init(&env::process_env) {
        if let Err(e) = session::with(|rt, s| s.nrt.inspect_begin(rt, cfg)) {
            crate::log::error(&format!("NEURON_RT_INSPECT_ENABLE=1: {}", e.message));
        }
    }
}

/// Called by `nrt_close`: ends a running inspect session, writing its output.
pub fn end_from_env() {
    let _ = session::with(|rt, s| {
        if s.nrt.inspecting() {
            s.nrt.inspect_stop(rt)
        } else {
            Ok(())
        }
    })
    .map_err(|e| crate::log::error(&format!("inspect output: {}", e.message)));
}

/// `nrt_inspect_begin`.
pub extern "C" fn nrt_inspect_begin() -> NrtStatusC {
    guard::status("nrt_inspect_begin", || {
        let cfg = env::inspect_config(&env::process_env);
        session::with(|rt, s| s.nrt.inspect_begin(rt, cfg))
    })
}

/// `nrt_inspect_stop`.
pub extern "C" fn nrt_inspect_stop() -> NrtStatusC {
    guard::status("nrt_inspect_stop", || {
        session::with(|rt, s| s.nrt.inspect_stop(rt))
    })
}

/// `nrt_inspect_begin_with_options`: NULL = defaults.
pub extern "C" fn nrt_inspect_begin_with_options(options: *mut c_void) -> NrtStatusC {
    guard::status("nrt_inspect_begin_with_options", || {
        let cfg = if options.is_null() {
            InspectConfig::default()
        } else {
            INSPECT_CONFIGS.get(options as usize, "options")?
        };
        session::with(|rt, s| s.nrt.inspect_begin(rt, cfg))
    })
}

/// `nrt_inspect_config_allocate`.
///
/// # Safety
///
/// `options` is NULL or writable.
pub unsafe extern "C" fn nrt_inspect_config_allocate(options: *mut *mut c_void) -> NrtStatusC {
    guard::status("nrt_inspect_config_allocate", || {
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(options, "options")? };
        *out = INSPECT_CONFIGS.insert(InspectConfig::default()) as *mut c_void;
        Ok(())
    })
}

fn edit(
    function: &'static str,
    options: *mut c_void,
    f: impl FnOnce(&mut InspectConfig) -> Result<()>,
) -> NrtStatusC {
    guard::status(function, || {
        INSPECT_CONFIGS.with(options as usize, "options", f)?
    })
}

/// `nrt_inspect_config_set_defaults`.
pub extern "C" fn nrt_inspect_config_set_defaults(options: *mut c_void) -> NrtStatusC {
    edit("nrt_inspect_config_set_defaults", options, |c| {
        *c = InspectConfig::default();
        Ok(())
    })
}

/// `nrt_inspect_config_free`.
pub extern "C" fn nrt_inspect_config_free(options: *mut c_void) -> NrtStatusC {
    guard::status("nrt_inspect_config_free", || {
        INSPECT_CONFIGS
            .remove(options as usize, "options")
            .map(|_| ())
    })
}

/// `nrt_inspect_config_set_session_id`.
pub extern "C" fn nrt_inspect_config_set_session_id(
    options: *mut c_void,
    session_id: c_int,
) -> NrtStatusC {
    edit("nrt_inspect_config_set_session_id", options, |c| {
        c.session_id = session_id;
        Ok(())
    })
}

/// `nrt_inspect_config_set_output_dir`.
///
/// # Safety
///
/// `output_dir` is NULL or a NUL-terminated string.
pub unsafe extern "C" fn nrt_inspect_config_set_output_dir(
    options: *mut c_void,
    output_dir: *const c_char,
) -> NrtStatusC {
    // SAFETY: the caller's contract.
    let dir = unsafe { non_empty_path(output_dir) };
    edit("nrt_inspect_config_set_output_dir", options, |c| {
        c.output_dir = dir?.to_string();
        Ok(())
    })
}

/// `nrt_inspect_config_set_sys_trace_max_events_per_nc`.
pub extern "C" fn nrt_inspect_config_set_sys_trace_max_events_per_nc(
    options: *mut c_void,
    n: u64,
) -> NrtStatusC {
    edit(
        "nrt_inspect_config_set_sys_trace_max_events_per_nc",
        options,
        |c| {
            c.sys_trace.set_max_events(n);
            Ok(())
        },
    )
}

/// `nrt_inspect_config_set_capture_enabled_for_nc`.
pub extern "C" fn nrt_inspect_config_set_capture_enabled_for_nc(
    options: *mut c_void,
    nc_idx: u32,
    enabled: bool,
) -> NrtStatusC {
    edit(
        "nrt_inspect_config_set_capture_enabled_for_nc",
        options,
        |c| {
            c.sys_trace.set_nc(nc_idx, enabled);
            Ok(())
        },
    )
}

/// `nrt_inspect_config_set_capture_enabled_for_event_type_string`.
///
/// # Safety
///
/// `event_type` is NULL or a NUL-terminated string.
pub unsafe extern "C" fn nrt_inspect_config_set_capture_enabled_for_event_type_string(
    options: *mut c_void,
    event_type: *const c_char,
    enabled: bool,
) -> NrtStatusC {
    // SAFETY: the caller's contract.
    let name = unsafe { ptr::string(event_type, "event_type", ptr::STRING_MAX) };
    edit(
        "nrt_inspect_config_set_capture_enabled_for_event_type_string",
        options,
        |c| c.sys_trace.set_type(name?, enabled),
    )
}

/// `nrt_inspect_config_set_enable_inspect`.
pub extern "C" fn nrt_inspect_config_set_enable_inspect(
    options: *mut c_void,
    enable_inspect: bool,
) -> NrtStatusC {
    edit("nrt_inspect_config_set_enable_inspect", options, |c| {
        c.enable_inspect = enable_inspect;
        Ok(())
    })
}

/// `nrt_inspect_config_set_enable_inspect_on_fail`.
pub extern "C" fn nrt_inspect_config_set_enable_inspect_on_fail(
    options: *mut c_void,
    enable: bool,
) -> NrtStatusC {
    edit(
        "nrt_inspect_config_set_enable_inspect_on_fail",
        options,
        |c| {
            c.enable_on_fail = enable;
            Ok(())
        },
    )
}

/// `nrt_inspect_config_get_all_activity_types`.
///
/// # Safety
///
/// `activity_types` and `count` are NULL or writable.
pub unsafe extern "C" fn nrt_inspect_config_get_all_activity_types(
    activity_types: *mut *mut *const c_char,
    count: *mut usize,
) -> NrtStatusC {
    // SAFETY: forwarded.
    guard::status("nrt_inspect_config_get_all_activity_types", || unsafe {
        ptr::string_list(&ACTIVITIES, activity_types, "activity_types", count)
    })
}

/// `nrt_inspect_config_get_enabled_activity_types`.
///
/// # Safety
///
/// `activity_types` and `count` are NULL or writable.
pub unsafe extern "C" fn nrt_inspect_config_get_enabled_activity_types(
    options: *mut c_void,
    activity_types: *mut *mut *const c_char,
    count: *mut usize,
) -> NrtStatusC {
    guard::status("nrt_inspect_config_get_enabled_activity_types", || {
        let names = INSPECT_CONFIGS
            .get(options as usize, "options")?
            .enabled_activities();
        // SAFETY: forwarded.
        unsafe { ptr::string_list(&names, activity_types, "activity_types", count) }
    })
}

/// `nrt_inspect_config_free_activity_types`.
///
/// # Safety
///
/// `activity_types` is NULL or a list from this library with `count` entries.
pub unsafe extern "C" fn nrt_inspect_config_free_activity_types(
    activity_types: *const *const c_char,
    count: usize,
) {
    guard::void("nrt_inspect_config_free_activity_types", || {
        // SAFETY: forwarded.
        unsafe { ptr::free_string_list(activity_types, count) };
        Ok(())
    })
}

/// `nrt_inspect_config_set_activity`.
///
/// # Safety
///
/// `activity_type` is NULL or a NUL-terminated string.
pub unsafe extern "C" fn nrt_inspect_config_set_activity(
    options: *mut c_void,
    activity_type: *const c_char,
    enabled: bool,
) -> NrtStatusC {
    // SAFETY: the caller's contract.
    let name = unsafe { ptr::string(activity_type, "activity_type", ptr::STRING_MAX) };
    edit("nrt_inspect_config_set_activity", options, |c| {
        c.set_activity(name?, enabled)
    })
}
