//! Profiling: `nrt_profile_*`, continuous profiling and `nrt_inspect_*`.
//!
//! A profile here is the simulator's device timeline as Chrome/Perfetto trace JSON (one track
//! per engine and DMA queue). The timeline records while any profile is active and is cleared
//! when one starts. An inspect session also captures the system trace, and at
//! `nrt_inspect_stop` writes `<output_dir>/session_<id>/device_profile.json` (the timeline) and
//! `system_profile.json` (the runtime events) for the activities enabled. The driver backend
//! has no timeline: profiling it answers `NRT_INVALID`.
//!
//! `NEURON_RT_INSPECT_ENABLE=1` begins an inspect session at `nrt_init` (output in
//! `NEURON_RT_INSPECT_OUTPUT_DIR`, default `./output`) and ends it at `nrt_close`.
//! With inspect-on-fail (`NEURON_RT_INSPECT_ON_FAIL=1`, alone or with ENABLE, or the config's
//! setter) every failed execution writes what was captured so far into
//! `session_<id>/failure_<n>/` ([`execution_failed`]).

use std::collections::BTreeSet;
use std::ffi::{c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use nrt_runtime::{Error, Result};

use crate::api::trace::{self, SysTraceConfig};
use crate::guard;
use crate::handles::{Kind, Table};
use crate::ptr;
use crate::session::{self, Session};
use crate::types::NrtStatusC;

/// The inspect activity types.
pub const ACTIVITIES: [&str; 4] = [
    "system_profile",
    "device_profile",
    "host_memory",
    "cpu_util",
];

/// `nrt_inspect_config_t`.
#[derive(Debug, Clone)]
pub struct InspectConfig {
    session_id: i32,
    output_dir: String,
    sys_trace: SysTraceConfig,
    activities: BTreeSet<&'static str>,
    enable_inspect: bool,
    enable_on_fail: bool,
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

/// `nrt_profile_continuous_options_t`.
#[derive(Debug, Clone)]
pub struct ContinuousOptions {
    output_dir: String,
}

impl Default for ContinuousOptions {
    fn default() -> Self {
        ContinuousOptions {
            output_dir: "./output".into(),
        }
    }
}

static INSPECT_CONFIGS: Table<InspectConfig> = Table::new(Kind::InspectConfig);
static CONTINUOUS: Table<ContinuousOptions> = Table::new(Kind::ProfileOptions);

#[derive(Default)]
struct Active {
    model: Option<(usize, String)>,
    continuous: bool,
    saves: u64,
    /// Failure dumps written in this session (inspect on fail).
    failures: u64,
    inspect: Option<(InspectConfig, bool)>,
}

/// A session's profiling.
#[derive(Default)]
pub struct ProfileState {
    inner: Mutex<Active>,
}

fn sim(s: &Session) -> Result<&nrt_sim::Sim> {
    s.sim.as_deref().ok_or_else(|| {
        Error::invalid("profiling records the simulator's timeline; the driver backend (NRT_EMU_BACKEND=driver) has none")
    })
}

fn write(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::failure(format!("cannot create {}: {e}", dir.display())))?;
    }
    std::fs::write(path, text)
        .map_err(|e| Error::failure(format!("cannot write {}: {e}", path.display())))
}

impl ProfileState {
    fn lock(&self) -> std::sync::MutexGuard<'_, Active> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Turns the timeline on (cleared) or off as the active profiles need.
    fn sync_timeline(a: &Active, s: &Session, starting: bool) -> Result<()> {
        let sim = sim(s)?;
        let on = a.model.is_some() || a.continuous || a.inspect.is_some();
        if starting {
            sim.clear_timeline();
        }
        sim.set_timeline(on);
        Ok(())
    }
}

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
        session::with(|_, s| {
            s.model(model as usize, "model")?;
            sim(s)?;
            write(Path::new(path), "")?;
            let mut a = s.profile.lock();
            a.model = Some((model as usize, path.to_string()));
            ProfileState::sync_timeline(&a, s, true)
        })
    })
}

/// `nrt_profile_stop`: writes the timeline to `filename` (the name given to start).
///
/// # Safety
///
/// `filename` is NULL or a NUL-terminated string.
pub unsafe extern "C" fn nrt_profile_stop(filename: *const c_char) -> NrtStatusC {
    guard::status("nrt_profile_stop", || {
        // SAFETY: the caller's contract.
        let path = unsafe { ptr::string(filename, "filename", ptr::STRING_MAX)? };
        session::with(|_, s| {
            let mut a = s.profile.lock();
            match &a.model {
                Some((_, p)) if p == path => {}
                Some((_, p)) => {
                    return Err(Error::invalid(format!(
                        "profiling writes to {p:?} (given to nrt_profile_start), not {path:?}"
                    )))
                }
                None => return Err(Error::invalid("no profile is running (nrt_profile_start)")),
            }
            write(Path::new(path), &sim(s)?.timeline_json())?;
            a.model = None;
            ProfileState::sync_timeline(&a, s, false)
        })
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
        session::with(|rt, s| {
            if rt.config().async_max_inflight > 0 {
                return Err(Error::invalid(
                    "continuous profiling cannot run with NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS > 0",
                ));
            }
            let mut a = s.profile.lock();
            if a.inspect.is_some() {
                return Err(Error::invalid(
                    "continuous profiling cannot run during an inspect session",
                ));
            }
            a.continuous = true;
            ProfileState::sync_timeline(&a, s, true)
        })
    })
}

/// `nrt_profile_continuous_save`: writes the timeline so far into the output directory as
/// `profile_vnc<vnc>_<n>.json`; profiling goes on.
pub extern "C" fn nrt_profile_continuous_save(vnc: u32, options: *mut c_void) -> NrtStatusC {
    guard::status("nrt_profile_continuous_save", || {
        let o = CONTINUOUS.get(options as usize, "options")?;
        session::with(|_, s| {
            s.vnc(vnc.into())?;
            let mut a = s.profile.lock();
            if !a.continuous {
                return Err(Error::invalid("continuous profiling is not running"));
            }
            a.saves += 1;
            let path =
                PathBuf::from(&o.output_dir).join(format!("profile_vnc{vnc}_{}.json", a.saves));
            write(&path, &sim(s)?.timeline_json())
        })
    })
}

/// `nrt_profile_continuous_stop`.
pub extern "C" fn nrt_profile_continuous_stop() -> NrtStatusC {
    guard::status("nrt_profile_continuous_stop", || {
        session::with(|_, s| {
            let mut a = s.profile.lock();
            if !a.continuous {
                return Err(Error::invalid("continuous profiling is not running"));
            }
            a.continuous = false;
            ProfileState::sync_timeline(&a, s, false)
        })
    })
}

fn begin(s: &Session, cfg: InspectConfig) -> Result<()> {
    let mut a = s.profile.lock();
    if a.inspect.is_some() {
        return Err(Error::invalid("an inspect session is already running"));
    }
    if !(cfg.enable_inspect || cfg.enable_on_fail) {
        crate::log::info(
            "inspect: enable_inspect and enable_inspect_on_fail are both off; nothing is profiled",
        );
        return Ok(());
    }
    let owns_trace = !s.trace.active() && cfg.activities.contains("system_profile");
    if owns_trace {
        s.trace.start(cfg.sys_trace.clone());
    }
    let device = cfg.activities.contains("device_profile");
    a.inspect = Some((cfg, owns_trace));
    if device {
        ProfileState::sync_timeline(&a, s, true)?;
    }
    Ok(())
}

fn session_dir(cfg: &InspectConfig) -> PathBuf {
    PathBuf::from(&cfg.output_dir).join(format!("session_{}", cfg.session_id))
}

/// Called after an execution failed: with inspect-on-fail on (`NEURON_RT_INSPECT_ON_FAIL=1`
/// or `nrt_inspect_config_set_enable_inspect_on_fail`), writes what the session captured so
/// far into `<output_dir>/session_<id>/failure_<n>/`: `device_profile.json` (the device
/// timeline) and `system_profile.json` (the runtime events), for the activities enabled, and
/// says where in one ERROR line. The session goes on.
pub fn execution_failed(s: &Session, vnc: u32, error: &nrt_runtime::Error) {
    let mut a = s.profile.lock();
    let Some((cfg, _)) = a.inspect.as_ref().filter(|(c, _)| c.enable_on_fail) else {
        return;
    };
    let cfg = cfg.clone();
    a.failures += 1;
    let dir = session_dir(&cfg).join(format!("failure_{}", a.failures));
    drop(a);
    let mut written = Vec::new();
    let mut result = Ok(());
    if cfg.activities.contains("device_profile") {
        if let Some(sim) = s.sim.as_deref() {
            let f = dir.join("device_profile.json");
            result = result.and(write(&f, &sim.timeline_json()));
            written.push(f);
        }
    }
    if cfg.activities.contains("system_profile") {
        let f = dir.join("system_profile.json");
        result = result.and(write(&f, &s.trace.fetch(&Default::default())));
        written.push(f);
    }
    match result {
        Ok(()) => crate::log::error(&format!(
            "inspect on fail: execution on NeuronCore {vnc} failed with {}; wrote {}",
            error.status.name(),
            written
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Err(e) => crate::log::error(&format!("inspect on fail: {}", e.message)),
    }
}

fn stop(s: &Session) -> Result<()> {
    let mut a = s.profile.lock();
    let Some((cfg, owns_trace)) = a.inspect.take() else {
        return Err(Error::invalid(
            "no inspect session is running (nrt_inspect_begin)",
        ));
    };
    let dir = session_dir(&cfg);
    if !cfg.enable_inspect {
        // Inspect-on-fail only: the dumps were written when executions failed.
        ProfileState::sync_timeline(&a, s, false).ok();
        if owns_trace {
            s.trace.stop();
        }
        return Ok(());
    }
    if cfg.activities.contains("device_profile") {
        if let Some(sim) = s.sim.as_deref() {
            write(&dir.join("device_profile.json"), &sim.timeline_json())?;
        }
        ProfileState::sync_timeline(&a, s, false).ok();
    }
    if cfg.activities.contains("system_profile") {
        write(
            &dir.join("system_profile.json"),
            &s.trace.fetch(&Default::default()),
        )?;
        if owns_trace {
            s.trace.stop();
        }
    }
    Ok(())
}

/// The inspect configuration the `NEURON_RT_INSPECT_*` variables describe.
fn env_config() -> InspectConfig {
    let get = |k: &str| std::env::var(k).ok();
    let on = |k: &str, default: bool| {
        get(k).map_or(default, |v| v.trim() != "0" && !v.trim().is_empty())
    };
    let mut c = InspectConfig {
        enable_inspect: true,
        enable_on_fail: on("NEURON_RT_INSPECT_ON_FAIL", false),
        ..InspectConfig::default()
    };
    if let Some(d) = get("NEURON_RT_INSPECT_OUTPUT_DIR").filter(|d| !d.is_empty()) {
        c.output_dir = d;
    }
    if !on("NEURON_RT_INSPECT_SYSTEM_PROFILE", true) {
        c.activities.remove("system_profile");
    }
    if !on("NEURON_RT_INSPECT_DEVICE_PROFILE", true) {
        c.activities.remove("device_profile");
    }
    if let Some(n) = get("NEURON_RT_INSPECT_SYS_TRACE_MAX_EVENTS_PER_NC")
        .and_then(|v| v.trim().replace(',', "").parse().ok())
    {
        crate::api::trace::set_max_events(&mut c.sys_trace, n);
    }
    c
}

/// Called by `nrt_init`: `NEURON_RT_INSPECT_ENABLE=1` begins an inspect session, and so does
/// `NEURON_RT_INSPECT_ON_FAIL=1` alone (one that writes only when an execution fails).
pub fn begin_from_env() {
    let set = |k: &str| std::env::var(k).is_ok_and(|v| v.trim() == "1");
    if set("NEURON_RT_INSPECT_ENABLE") || set("NEURON_RT_INSPECT_ON_FAIL") {
        let cfg = InspectConfig {
            enable_inspect: set("NEURON_RT_INSPECT_ENABLE"),
            ..env_config()
        };
        if let Err(e) = session::with(|_, s| begin(s, cfg)) {
            crate::log::error(&format!("NEURON_RT_INSPECT_ENABLE=1: {}", e.message));
        }
    }
}

/// Called by `nrt_close`: ends a running inspect session, writing its output.
pub fn end_from_env() {
    let _ = session::with(|_, s| {
        if s.profile.lock().inspect.is_some() {
            stop(s)
        } else {
            Ok(())
        }
    })
    .map_err(|e| crate::log::error(&format!("inspect output: {}", e.message)));
}

/// `nrt_inspect_begin`.
pub extern "C" fn nrt_inspect_begin() -> NrtStatusC {
    guard::status("nrt_inspect_begin", || {
        session::with(|_, s| begin(s, env_config()))
    })
}

/// `nrt_inspect_stop`.
pub extern "C" fn nrt_inspect_stop() -> NrtStatusC {
    guard::status("nrt_inspect_stop", || session::with(|_, s| stop(s)))
}

/// `nrt_inspect_begin_with_options`: NULL = defaults.
pub extern "C" fn nrt_inspect_begin_with_options(options: *mut c_void) -> NrtStatusC {
    guard::status("nrt_inspect_begin_with_options", || {
        let cfg = if options.is_null() {
            InspectConfig::default()
        } else {
            INSPECT_CONFIGS.get(options as usize, "options")?
        };
        session::with(|_, s| begin(s, cfg))
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
            trace::set_max_events(&mut c.sys_trace, n);
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
            trace::set_nc(&mut c.sys_trace, nc_idx, enabled);
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
        |c| trace::set_type(&mut c.sys_trace, name?, enabled),
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
        trace::string_list(&ACTIVITIES, activity_types, "activity_types", count)
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
        let c = INSPECT_CONFIGS.get(options as usize, "options")?;
        let names: Vec<&str> = ACTIVITIES
            .iter()
            .copied()
            .filter(|a| c.activities.contains(a))
            .collect();
        // SAFETY: forwarded.
        unsafe { trace::string_list(&names, activity_types, "activity_types", count) }
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
        unsafe { trace::free_string_list(activity_types, count) };
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
        let name = name?;
        let set: Vec<&'static str> = if name == "all" {
            ACTIVITIES.to_vec()
        } else {
            vec![ACTIVITIES.iter().copied().find(|a| *a == name).ok_or_else(|| {
                Error::invalid(format!("{name:?} is not an activity type (system_profile, device_profile, host_memory, cpu_util, all)"))
            })?]
        };
        for a in set {
            if enabled {
                c.activities.insert(a);
            } else {
                c.activities.remove(a);
            }
        }
        Ok(())
    })
}
