//! `nrt_init`, `nrt_close`, versions, instance information, status names and core counts.

use std::collections::BTreeMap;
use std::ffi::{c_char, CString};
use std::sync::{Arc, OnceLock};

use nrt_hal::Target;
use nrt_runtime::{Error, NrtStatus, Result};

use crate::env::{self, process_env};
use crate::front::CFront;
use crate::guard;
use crate::log;
use crate::ptr;
use crate::session::{Session, NRT};
use crate::types::{fill_c_chars, NrtInstanceInfo, NrtStatusC, NrtVersion};

/// The string that marks a library as nrt-emu's (in `nrt_get_version`'s detail, and found by
/// `nrt-emu install` in the file).
pub const IDENT: &str = concat!("nrt-emu libnrt ", env!("CARGO_PKG_VERSION"));

/// The libnrt API level this library implements, as `nrt_get_version` reports it (`rt_major`,
/// `rt_minor`, `rt_patch`, `rt_maintenance`): the Neuron Runtime Library release whose public
/// headers `include/nrt/` reproduces (docs/c-api.md §8.3). A client gating on "runtime ≥ 2.x"
/// sees a 2.x runtime; nrt-emu's own version is in `rt_detail` and `git_hash`.
pub use nrt_hal::version::NRT_API_VERSION;

/// [`NRT_API_VERSION`] as `major.minor.patch.maintenance`.
pub fn api_version_string() -> String {
    nrt_hal::version::nrt_api_version_string()
}

/// `nrt_init`.
///
/// # Safety
///
/// `fw_version` and `fal_version` are NULL or NUL-terminated strings.
pub unsafe extern "C" fn nrt_init(
    framework: u32,
    fw_version: *const c_char,
    fal_version: *const c_char,
) -> NrtStatusC {
    log::configure();
    log::install_bridge();
    guard::status("nrt_init", || {
        if !(1..=5).contains(&framework) {
            return Err(Error::invalid(format!(
                "framework type {framework} is not an nrt_framework_type_t (1 = NO_FW … 5 = PRECHECK)"
            )));
        }
        // SAFETY: the caller passes NULL or NUL-terminated strings.
        let fw = unsafe { ptr::opt_string(fw_version, "fw_version", ptr::STRING_MAX)? };
        // SAFETY: as above.
        let fal = unsafe { ptr::opt_string(fal_version, "fal_version", ptr::STRING_MAX)? };
        let get = process_env;
        let settings = env::device_settings(&get)?;
        let cfg = env::runtime_config(&get)?;
        let device = nrt_backend::open(&settings)?;
        let (target, backend) = (device.target, device.backend);
        NRT.init_with(device.hal, cfg, |rt| {
            let visible = env::visible_cores(&get, rt.vcore_count())?;
            let nrt = nrt_runtime::nrt::session::Session::new(rt, visible, Arc::new(CFront));
            Ok(Session::new(backend, nrt))
        })?;
        let backend = backend.describe();
        log::info(&format!(
            "{IDENT}: Neuron Runtime API {} on a {target} {backend} (framework {framework} {fw:?}, {fal:?})",
            api_version_string()
        ));
        crate::api::profile::begin_from_env();
        Ok(())
    })
}

/// `nrt_close`.
pub extern "C" fn nrt_close() {
    guard::void("nrt_close", || {
        crate::api::profile::end_from_env();
        NRT.close()
    })
}

/// `nrt_get_version`.
///
/// # Safety
///
/// `ver` is NULL or points at `size` writable bytes.
pub unsafe extern "C" fn nrt_get_version(ver: *mut NrtVersion, size: usize) -> NrtStatusC {
    guard::status("nrt_get_version", || {
        if ver.is_null() {
            return Err(ptr::null("ver"));
        }
        let [major, minor, patch, maint] = NRT_API_VERSION;
        let mut v = NrtVersion {
            rt_major: major,
            rt_minor: minor,
            rt_patch: patch,
            rt_maintenance: maint,
            rt_detail: [0; 128],
            git_hash: [0; 64],
        };
        fill_c_chars(
            &mut v.rt_detail,
            &format!("{IDENT} (Neuron Runtime API {})", api_version_string()),
        );
        fill_c_chars(
            &mut v.git_hash,
            concat!("nrt-emu-", env!("CARGO_PKG_VERSION")),
        );
        let n = size.min(std::mem::size_of::<NrtVersion>());
        // SAFETY: `ver` holds `size >= n` writable bytes (the caller's contract), and `v` is
        // a plain struct of at least `n` bytes.
        unsafe {
            std::ptr::copy_nonoverlapping((&v as *const NrtVersion).cast::<u8>(), ver.cast(), n)
        };
        Ok(())
    })
}

/// The generation: the session's, or the one the environment names.
fn target() -> Result<Target> {
    if let Ok(t) = NRT.with_session(|rt, _| Ok(rt.target())) {
        return Ok(t);
    }
    let settings = env::device_settings(&process_env)?;
    match settings.target_unopened() {
        Some(t) => Ok(t),
        None => Ok(nrt_backend::open(&settings)?.target),
    }
}

/// `nrt_get_instance_info`: a one-device instance of the target's family.
///
/// # Safety
///
/// `info` is NULL or points at `instance_info_len` writable bytes.
pub unsafe extern "C" fn nrt_get_instance_info(
    info: *mut NrtInstanceInfo,
    instance_info_len: usize,
) -> NrtStatusC {
    guard::status("nrt_get_instance_info", || {
        if info.is_null() {
            return Err(ptr::null("info"));
        }
        let t = target()?;
        let (family, size) = match t {
            Target::Trn1 => (2, 1), // NRT_INSTANCE_TRN1, NRT_INSTANCE_SIZE_2XL: one device
            Target::Trn2 => (5, 8), // NRT_INSTANCE_TRN2, NRT_INSTANCE_SIZE_3XL: one device
        };
        let mut v = NrtInstanceInfo {
            family,
            size,
            arch_name: [0; 16],
            device_revision: [0; 8],
        };
        fill_c_chars(&mut v.arch_name, t.spec().name);
        fill_c_chars(&mut v.device_revision, "sim");
        let n = instance_info_len.min(std::mem::size_of::<NrtInstanceInfo>());
        // SAFETY: `info` holds `instance_info_len >= n` writable bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (&v as *const NrtInstanceInfo).cast::<u8>(),
                info.cast(),
                n,
            )
        };
        Ok(())
    })
}

/// `nrt_get_status_as_str`.
pub extern "C" fn nrt_get_status_as_str(status: u32) -> *const c_char {
    static NAMES: OnceLock<BTreeMap<u32, CString>> = OnceLock::new();
    static UNKNOWN: &std::ffi::CStr = c"NRT_UNKNOWN_STATUS";
    let names = NAMES.get_or_init(|| {
        NrtStatus::ALL
            .iter()
            .filter_map(|s| Some((s.code(), CString::new(s.name()).ok()?)))
            .collect()
    });
    names.get(&status).map_or(UNKNOWN.as_ptr(), |c| c.as_ptr())
}

/// (total, visible) logical cores: the session's, or what `nrt_init` would select now.
fn core_counts() -> Result<(u32, u32)> {
    if let Ok(c) = NRT.with_session(|rt, s| Ok((rt.vcore_count(), s.nrt.visible().len() as u32))) {
        return Ok(c);
    }
    let cfg = env::runtime_config(&process_env)?;
    let t = target()?;
    let total = t.spec().nc_count / cfg.vcore_size_for(t).max(1);
    let visible = env::visible_cores(&process_env, total)?;
    Ok((total, visible.len() as u32))
}

fn count(function: &'static str, out: *mut u32, visible: bool) -> NrtStatusC {
    guard::status(function, || {
        // SAFETY: the caller passes NULL or a writable u32.
        let out = unsafe { ptr::out(out, "vnc_count")? };
        let (total, vis) = core_counts()?;
        *out = if visible { vis } else { total };
        Ok(())
    })
}

/// `nrt_get_total_vnc_count`.
///
/// # Safety
///
/// `vnc_count` is NULL or writable.
pub unsafe extern "C" fn nrt_get_total_vnc_count(vnc_count: *mut u32) -> NrtStatusC {
    count("nrt_get_total_vnc_count", vnc_count, false)
}

/// `nrt_get_total_nc_count` (deprecated alias).
///
/// # Safety
///
/// `vnc_count` is NULL or writable.
pub unsafe extern "C" fn nrt_get_total_nc_count(vnc_count: *mut u32) -> NrtStatusC {
    count("nrt_get_total_nc_count", vnc_count, false)
}

/// `nrt_get_visible_vnc_count`.
///
/// # Safety
///
/// `vnc_count` is NULL or writable.
pub unsafe extern "C" fn nrt_get_visible_vnc_count(vnc_count: *mut u32) -> NrtStatusC {
    count("nrt_get_visible_vnc_count", vnc_count, true)
}

/// `nrt_get_visible_nc_count` (deprecated alias).
///
/// # Safety
///
/// `vnc_count` is NULL or writable.
pub unsafe extern "C" fn nrt_get_visible_nc_count(vnc_count: *mut u32) -> NrtStatusC {
    count("nrt_get_visible_nc_count", vnc_count, true)
}

/// Back to "before `nrt_init`" (closing an open session): for in-process harnesses (the fuzz
/// target, tests) that run many sessions in one process. Not exported to C.
pub fn reset_for_tests() {
    NRT.reset();
}
