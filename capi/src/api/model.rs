//! Models: load, unload, queries, tensor information.

use std::collections::BTreeSet;
use std::ffi::c_void;
use std::sync::Mutex;

use nrt_runtime::tensor::TensorUsage;
use nrt_runtime::{Error, Result};

use crate::guard;
use crate::ptr;
use crate::session::{self, Model};
use crate::types::{fill_c_chars, NrtModelInfo, NrtStatusC, NrtTensorInfo, NrtTensorInfoArray};

/// The `vnc_count` values accepted (-1, the documented one, and 1: one core per model).
fn check_vnc_count(vnc_count: i32) -> Result<()> {
    if vnc_count == -1 || vnc_count == 1 {
        Ok(())
    } else {
        Err(Error::invalid(format!(
            "vnc_count {vnc_count}: replicating a model over several NeuronCores is not supported; pass -1"
        )))
    }
}

/// # Safety
///
/// `neff_bytes` points at `size` readable bytes (or is NULL); `model` is NULL or writable.
unsafe fn load(
    neff_bytes: *const c_void,
    size: usize,
    vnc: i32,
    vnc_count: i32,
    model: *mut *mut c_void,
) -> Result<()> {
    // SAFETY: the caller's contract.
    let out = unsafe { ptr::out(model, "model")? };
    if size == 0 {
        return Err(Error::invalid(
            "argument `size` is 0: a NEFF has at least a header",
        ));
    }
    // SAFETY: the caller's contract.
    let bytes = unsafe { ptr::bytes(neff_bytes, size, "neff_bytes")? };
    check_vnc_count(vnc_count)?;
    session::with(|rt, s| {
        let (id, vnc) = s.nrt.load(rt, bytes, vnc)?;
        *out = s.models.insert(Model { id, vnc }) as *mut c_void;
        Ok(())
    })
}

/// `nrt_load`.
///
/// # Safety
///
/// `neff_bytes` points at `size` readable bytes; `model` is NULL or writable.
pub unsafe extern "C" fn nrt_load(
    neff_bytes: *const c_void,
    size: usize,
    vnc: i32,
    vnc_count: i32,
    model: *mut *mut c_void,
) -> NrtStatusC {
    // SAFETY: forwarded.
    guard::status("nrt_load", || unsafe {
        load(neff_bytes, size, vnc, vnc_count, model)
    })
}

/// `nrt_load_collectives`: a single-worker world only.
///
/// # Safety
///
/// As [`nrt_load`].
pub unsafe extern "C" fn nrt_load_collectives(
    neff_bytes: *const c_void,
    size: usize,
    vnc: i32,
    vnc_count: i32,
    ctx_device_id: u32,
    ctx_device_count: u32,
    model: *mut *mut c_void,
) -> NrtStatusC {
    guard::status("nrt_load_collectives", || {
        crate::api::device::single_worker(ctx_device_id, ctx_device_count)?;
        // SAFETY: forwarded.
        unsafe { load(neff_bytes, size, vnc, vnc_count, model) }
    })
}

/// `nrt_unload`.
pub extern "C" fn nrt_unload(model: *mut c_void) -> NrtStatusC {
    guard::status("nrt_unload", || {
        session::with(|rt, s| {
            let m = s.models.remove(model as usize, "model")?;
            s.nrt.unload(rt, m.id, m.vnc)
        })
    })
}

fn model_vnc_count(function: &'static str, model: *const c_void, out: *mut u32) -> NrtStatusC {
    guard::status(function, || {
        // SAFETY: the caller passes NULL or a writable u32.
        let out = unsafe { ptr::out(out, "vnc_count")? };
        session::with(|_, s| {
            s.model(model as usize, "model")?;
            // Every model occupies one logical core.
            *out = 1;
            Ok(())
        })
    })
}

/// `nrt_get_model_vnc_count`.
///
/// # Safety
///
/// `vnc_count` is NULL or writable.
pub unsafe extern "C" fn nrt_get_model_vnc_count(
    model: *const c_void,
    vnc_count: *mut u32,
) -> NrtStatusC {
    model_vnc_count("nrt_get_model_vnc_count", model, vnc_count)
}

/// `nrt_get_model_nc_count`.
///
/// # Safety
///
/// `vnc_count` is NULL or writable.
pub unsafe extern "C" fn nrt_get_model_nc_count(
    model: *const c_void,
    vnc_count: *mut u32,
) -> NrtStatusC {
    model_vnc_count("nrt_get_model_nc_count", model, vnc_count)
}

/// `nrt_get_model_instance_count`: 1 (a model is staged once).
///
/// # Safety
///
/// `instance_count` is NULL or writable.
pub unsafe extern "C" fn nrt_get_model_instance_count(
    model: *mut c_void,
    instance_count: *mut u32,
) -> NrtStatusC {
    guard::status("nrt_get_model_instance_count", || {
        // SAFETY: the caller passes NULL or a writable u32.
        let out = unsafe { ptr::out(instance_count, "instance_count")? };
        session::with(|_, s| {
            s.model(model as usize, "model")?;
            *out = 1;
            Ok(())
        })
    })
}

/// `nrt_get_model_info`.
///
/// # Safety
///
/// `info` is NULL or points at `info_size_in` writable bytes; `info_size_out` is NULL or
/// writable.
pub unsafe extern "C" fn nrt_get_model_info(
    model: *const c_void,
    info: *mut NrtModelInfo,
    info_size_in: usize,
    info_size_out: *mut usize,
) -> NrtStatusC {
    guard::status("nrt_get_model_info", || {
        if info.is_null() {
            return Err(ptr::null("info"));
        }
        let v = session::with(|_, s| {
            let m = s.model(model as usize, "model")?;
            Ok(NrtModelInfo {
                vnc: s.visible_index(m.vnc),
            })
        })?;
        let n = info_size_in.min(std::mem::size_of::<NrtModelInfo>());
        // SAFETY: `info` holds `info_size_in >= n` writable bytes.
        unsafe {
            std::ptr::copy_nonoverlapping((&v as *const NrtModelInfo).cast::<u8>(), info.cast(), n);
            ptr::write_opt(info_size_out, n);
        }
        Ok(())
    })
}

/// Blocks handed out by `nrt_get_model_tensor_info` and not yet freed.
static INFO_BLOCKS: Mutex<BTreeSet<usize>> = Mutex::new(BTreeSet::new());

/// `nrt_get_model_tensor_info`: one `malloc`ed block — the count, the entries, then every
/// entry's shape.
///
/// # Safety
///
/// `tensor_info` is NULL or writable.
pub unsafe extern "C" fn nrt_get_model_tensor_info(
    model: *mut c_void,
    tensor_info: *mut *mut NrtTensorInfoArray,
) -> NrtStatusC {
    guard::status("nrt_get_model_tensor_info", || {
        // SAFETY: the caller passes NULL or a writable pointer.
        let out = unsafe { ptr::out(tensor_info, "tensor_info")? };
        let infos =
            session::with(|rt, s| rt.model_tensor_info(s.model(model as usize, "model")?.id))?;
        let head = std::mem::size_of::<NrtTensorInfoArray>();
        let entry = std::mem::size_of::<NrtTensorInfo>();
        let dims: usize = infos.iter().map(|t| t.shape.len()).sum();
        let bytes = head + entry * infos.len() + 4 * dims;
        // SAFETY: calloc has no preconditions; the result is checked for NULL.
        let block = unsafe { libc::calloc(1, bytes) }.cast::<u8>();
        if block.is_null() {
            return Err(Error::resource(format!("cannot allocate {bytes} bytes")));
        }
        // SAFETY: `block` holds `bytes` zeroed bytes, aligned for any type (malloc), laid out
        // as the header, `infos.len()` entries (each 8-aligned: 296 is a multiple of 8) and
        // `dims` u32 shape values after them.
        unsafe {
            block
                .cast::<NrtTensorInfoArray>()
                .write(NrtTensorInfoArray {
                    tensor_count: infos.len() as u64,
                });
            let entries = block.add(head).cast::<NrtTensorInfo>();
            let mut shape = block.add(head + entry * infos.len()).cast::<u32>();
            for (i, t) in infos.iter().enumerate() {
                let mut e = NrtTensorInfo {
                    name: [0; 256],
                    usage: match t.usage {
                        TensorUsage::Input => 0,
                        TensorUsage::Output => 1,
                    },
                    size: t.size as usize,
                    dtype: t.dtype as u32,
                    shape,
                    ndim: t.shape.len() as u32,
                };
                fill_c_chars(&mut e.name, &t.name);
                entries.add(i).write(e);
                for &d in &t.shape {
                    shape.write(u32::try_from(d).unwrap_or(u32::MAX));
                    shape = shape.add(1);
                }
            }
        }
        INFO_BLOCKS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(block as usize);
        *out = block.cast();
        Ok(())
    })
}

/// `nrt_free_model_tensor_info`.
///
/// # Safety
///
/// `tensor_info` came from [`nrt_get_model_tensor_info`] (anything else is refused).
pub unsafe extern "C" fn nrt_free_model_tensor_info(
    tensor_info: *mut NrtTensorInfoArray,
) -> NrtStatusC {
    guard::status("nrt_free_model_tensor_info", || {
        if tensor_info.is_null() {
            return Err(ptr::null("tensor_info"));
        }
        let known = INFO_BLOCKS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(tensor_info as usize));
        if !known {
            return Err(Error::invalid(format!(
                "argument `tensor_info` ({tensor_info:p}) is not a block from nrt_get_model_tensor_info, or was already freed"
            )));
        }
        // SAFETY: the block was allocated with calloc by nrt_get_model_tensor_info and is freed
        // once (it was just removed from the live set).
        unsafe { libc::free(tensor_info.cast()) };
        Ok(())
    })
}
