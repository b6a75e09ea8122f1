//! Tensors: allocation (every placement, empty + attached buffer, slices), reads and writes
//! (single and batched), copies, memset, sizes, addresses, output completion counters.

use std::ffi::{c_char, c_int, c_void};
use std::ptr::NonNull;
use std::time::Duration;

use nrt_runtime::tensor::{Placement, Tensor};
use nrt_runtime::{Error, Result};

use crate::guard;
use crate::ptr;
use crate::session::{self, Session};
use crate::types::{NrtStatusC, NrtTensorBatch, NrtTensorDeviceAllocationInfo, TENSOR_NAME_MAX};

/// The largest HOST-placement tensor (DMA-able host memory).
pub const HOST_TENSOR_MAX: usize = 4 << 20;

/// # Safety
///
/// `name` is NULL or a NUL-terminated string.
unsafe fn name_arg<'a>(name: *const c_char) -> Result<&'a str> {
    // SAFETY: forwarded.
    unsafe { ptr::opt_string(name, "name", TENSOR_NAME_MAX - 1) }
}

fn placement(v: u32) -> Result<Placement> {
    match v {
        0 => Ok(Placement::Device),
        1 => Ok(Placement::Host),
        2 => Ok(Placement::Virtual),
        _ => Err(Error::invalid(format!(
            "tensor placement {v} is not an nrt_tensor_placement_t (0 DEVICE, 1 HOST, 2 VIRTUAL)"
        ))),
    }
}

fn insert(s: &Session, t: Tensor, out: &mut *mut c_void) {
    *out = s.tensors.insert(t) as *mut c_void;
}

/// `nrt_tensor_allocate`.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string; `tensor` is NULL or writable.
pub unsafe extern "C" fn nrt_tensor_allocate(
    tensor_placement: u32,
    vnc: c_int,
    size: usize,
    name: *const c_char,
    tensor: *mut *mut c_void,
) -> NrtStatusC {
    guard::status("nrt_tensor_allocate", || {
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(tensor, "tensor")? };
        // SAFETY: the caller's contract.
        let name = unsafe { name_arg(name)? };
        let p = placement(tensor_placement)?;
        if p == Placement::Host && size > HOST_TENSOR_MAX {
            return Err(Error::resource(format!(
                "tensor {name:?}: HOST placement is limited to {HOST_TENSOR_MAX} bytes, {size} requested"
            )));
        }
        session::with(|rt, s| {
            let v = match (p, vnc) {
                (Placement::Device, _) => s.vnc(vnc.into())?,
                (_, -1) => s.nrt.visible().start,
                _ => s.vnc(vnc.into())?,
            };
            let t = rt.tensor_allocate(p, v, size as u64, name)?;
            insert(s, t, out);
            Ok(())
        })
    })
}

/// `nrt_tensor_free`: frees the tensor and clears `*tensor`.
///
/// # Safety
///
/// `tensor` is NULL or points at a writable handle.
pub unsafe extern "C" fn nrt_tensor_free(tensor: *mut *mut c_void) {
    guard::void("nrt_tensor_free", || {
        // SAFETY: the caller's contract.
        let slot = unsafe { ptr::out(tensor, "tensor")? };
        session::with(|_, s| s.tensors.remove(*slot as usize, "*tensor"))?;
        *slot = std::ptr::null_mut();
        Ok(())
    })
}

fn tensor(p: *const c_void, arg: &str) -> Result<Tensor> {
    session::with(|_, s| s.tensor(p as usize, arg))
}

/// `nrt_tensor_read`.
///
/// # Safety
///
/// `buf` is NULL or points at `size` writable bytes.
pub unsafe extern "C" fn nrt_tensor_read(
    tensor_: *const c_void,
    buf: *mut c_void,
    offset: usize,
    size: usize,
) -> NrtStatusC {
    guard::status("nrt_tensor_read", || {
        let t = tensor(tensor_, "tensor")?;
        // SAFETY: the caller's contract.
        let buf = unsafe { ptr::bytes_mut(buf, size, "buf")? };
        t.read(offset as u64, buf)
    })
}

/// `nrt_tensor_write`.
///
/// # Safety
///
/// `buf` is NULL or points at `size` readable bytes.
pub unsafe extern "C" fn nrt_tensor_write(
    tensor_: *mut c_void,
    buf: *const c_void,
    offset: usize,
    size: usize,
) -> NrtStatusC {
    guard::status("nrt_tensor_write", || {
        let t = tensor(tensor_, "tensor")?;
        // SAFETY: the caller's contract.
        let buf = unsafe { ptr::bytes(buf, size, "buf")? };
        t.write(offset as u64, buf)
    })
}

/// The batches, each with its tensor and operations (offset, buffer, size).
///
/// # Safety
///
/// `batches` points at `n` batches whose `ops` point at `num_ops` operations each.
unsafe fn batches<'a>(
    batches: *const NrtTensorBatch,
    n: u64,
) -> Result<Vec<(Tensor, &'a [crate::types::NrtTensorBatchOp])>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    if batches.is_null() {
        return Err(ptr::null("batches"));
    }
    let n = usize::try_from(n).map_err(|_| Error::invalid("num_batches is too large"))?;
    // SAFETY: the caller's contract.
    let list = unsafe { std::slice::from_raw_parts(batches, n) };
    let mut out = Vec::with_capacity(n);
    for (i, b) in list.iter().enumerate() {
        let t = tensor(b.tensor, &format!("batches[{i}].tensor"))?;
        let ops = if b.num_ops == 0 {
            &[][..]
        } else if b.ops.is_null() {
            return Err(ptr::null(&format!("batches[{i}].ops")));
        } else {
            // SAFETY: the caller's contract.
            unsafe { std::slice::from_raw_parts(b.ops, b.num_ops as usize) }
        };
        out.push((t, ops));
    }
    Ok(out)
}

/// `nrt_tensor_read_batch`: each batch is checked whole before it runs. (`unsafe`, which skips
/// the runtime's tracking of concurrent tensor use, changes nothing: reads are always safe
/// here.)
///
/// # Safety
///
/// `batches` points at `num_batches` batches; each op's buffer holds `size` writable bytes.
pub unsafe extern "C" fn nrt_tensor_read_batch(
    batches_: *const NrtTensorBatch,
    num_batches: u64,
    _unsafe: bool,
) -> NrtStatusC {
    guard::status("nrt_tensor_read_batch", || {
        // SAFETY: the caller's contract.
        for (t, ops) in unsafe { batches(batches_, num_batches)? } {
            let mut list = Vec::with_capacity(ops.len());
            for (i, op) in ops.iter().enumerate() {
                // SAFETY: the caller's contract.
                let buf = unsafe {
                    ptr::bytes_mut(op.buffer, op.size as usize, &format!("ops[{i}].buffer"))?
                };
                list.push((op.offset, buf));
            }
            t.read_batch(&mut list)?;
        }
        Ok(())
    })
}

/// `nrt_tensor_write_batch`.
///
/// # Safety
///
/// `batches` points at `num_batches` batches; each op's buffer holds `size` readable bytes.
pub unsafe extern "C" fn nrt_tensor_write_batch(
    batches_: *const NrtTensorBatch,
    num_batches: u64,
    _unsafe: bool,
) -> NrtStatusC {
    guard::status("nrt_tensor_write_batch", || {
        // SAFETY: the caller's contract.
        for (t, ops) in unsafe { batches(batches_, num_batches)? } {
            let mut list = Vec::with_capacity(ops.len());
            for (i, op) in ops.iter().enumerate() {
                // SAFETY: the caller's contract.
                let buf = unsafe {
                    ptr::bytes(op.buffer, op.size as usize, &format!("ops[{i}].buffer"))?
                };
                list.push((op.offset, buf));
            }
            t.write_batch(&list)?;
        }
        Ok(())
    })
}

/// `nrt_tensor_copy`.
pub extern "C" fn nrt_tensor_copy(
    src: *const c_void,
    src_offset: usize,
    dst: *mut c_void,
    dst_offset: usize,
    size: usize,
) -> NrtStatusC {
    guard::status("nrt_tensor_copy", || {
        let s = tensor(src, "src")?;
        let d = tensor(dst, "dst")?;
        Tensor::copy(&s, src_offset as u64, &d, dst_offset as u64, size as u64)
    })
}

/// `nrt_tensor_get_size`: 0 for a NULL or stale handle.
pub extern "C" fn nrt_tensor_get_size(tensor_: *const c_void) -> usize {
    guard::value("nrt_tensor_get_size", 0, || {
        Ok(tensor(tensor_, "tensor")?.size() as usize)
    })
}

/// `nrt_tensor_memset`: `value` is converted to a byte, as by `memset`.
pub extern "C" fn nrt_tensor_memset(
    tensor_: *mut c_void,
    offset: u64,
    value: c_int,
    size: usize,
) -> NrtStatusC {
    guard::status("nrt_tensor_memset", || {
        tensor(tensor_, "tensor")?.memset(offset, value as u8, size as u64)
    })
}

/// `nrt_tensor_allocate_empty`.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string; `tensor` is NULL or writable.
pub unsafe extern "C" fn nrt_tensor_allocate_empty(
    name: *const c_char,
    tensor_: *mut *mut c_void,
) -> NrtStatusC {
    guard::status("nrt_tensor_allocate_empty", || {
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(tensor_, "tensor")? };
        // SAFETY: the caller's contract.
        let name = unsafe { name_arg(name)? };
        session::with(|_, s| {
            insert(s, Tensor::empty(name), out);
            Ok(())
        })
    })
}

/// `nrt_tensor_attach_buffer`: the tensor now uses the caller's buffer (its former storage is
/// released, unless slices still use it).
///
/// # Safety
///
/// `buffer` points at `size` bytes that stay valid, and are not accessed concurrently with a
/// tensor operation, until the tensor is freed.
pub unsafe extern "C" fn nrt_tensor_attach_buffer(
    tensor_: *mut c_void,
    buffer: *mut c_void,
    size: usize,
) -> NrtStatusC {
    guard::status("nrt_tensor_attach_buffer", || {
        let ptr = NonNull::new(buffer.cast::<u8>()).ok_or_else(|| ptr::null("buffer"))?;
        session::with(|_, s| {
            let old = s.tensor(tensor_ as usize, "tensor")?;
            // SAFETY: the caller's contract (above) is `Tensor::external`'s.
            let new = unsafe { Tensor::external(ptr, size, old.name())? };
            s.tensors.with(tensor_ as usize, "tensor", |t| *t = new)
        })
    })
}

/// `nrt_tensor_allocate_slice`.
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string; `tensor_slice` is NULL or writable.
pub unsafe extern "C" fn nrt_tensor_allocate_slice(
    tensor_source: *const c_void,
    offset: usize,
    size: usize,
    name: *const c_char,
    tensor_slice: *mut *mut c_void,
) -> NrtStatusC {
    guard::status("nrt_tensor_allocate_slice", || {
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(tensor_slice, "tensor_slice")? };
        // SAFETY: the caller's contract.
        let name = unsafe { name_arg(name)? };
        session::with(|_, s| {
            let src = s.tensor(tensor_source as usize, "tensor_source")?;
            let t = src.slice(offset as u64, size as u64, name)?;
            insert(s, t, out);
            Ok(())
        })
    })
}

/// `nrt_tensor_get_va`: NULL on failure.
pub extern "C" fn nrt_tensor_get_va(tensor_: *const c_void) -> *mut c_void {
    guard::value("nrt_tensor_get_va", std::ptr::null_mut(), || {
        Ok(tensor(tensor_, "tensor")?.host_ptr()?.as_ptr().cast())
    })
}

/// `nrt_tensor_get_device_allocation_info`.
///
/// # Safety
///
/// `alloc_info` is NULL or writable.
pub unsafe extern "C" fn nrt_tensor_get_device_allocation_info(
    tensor_: *const c_void,
    alloc_info: *mut NrtTensorDeviceAllocationInfo,
) -> NrtStatusC {
    guard::status("nrt_tensor_get_device_allocation_info", || {
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(alloc_info, "alloc_info")? };
        session::with(|rt, s| {
            let t = s.tensor(tensor_ as usize, "tensor")?;
            let (pa, size) = t.device_allocation()?;
            *out = NrtTensorDeviceAllocationInfo {
                physical_address: pa.raw(),
                size: size as usize,
                hbm_index: rt.target().hbm_channel_of(t.nc()) as c_int,
            };
            Ok(())
        })
    })
}

/// `nrt_tensor_check_output_completion`: `timeout` in µs, negative = forever.
pub extern "C" fn nrt_tensor_check_output_completion(
    output_tensor: *const c_void,
    timeout: i64,
    expected_completion_count: u64,
) -> NrtStatusC {
    guard::status("nrt_tensor_check_output_completion", || {
        let t = tensor(output_tensor, "output_tensor")?;
        let limit = u64::try_from(timeout).ok().map(Duration::from_micros);
        t.wait_completions(expected_completion_count, limit)
    })
}

/// `nrt_tensor_reset_output_completion`.
pub extern "C" fn nrt_tensor_reset_output_completion(output_tensor: *mut c_void) -> NrtStatusC {
    guard::status("nrt_tensor_reset_output_completion", || {
        tensor(output_tensor, "output_tensor")?.reset_completions();
        Ok(())
    })
}
