//! Device and memory helpers, and the collectives entry points of a one-worker world.
//!
//! This platform is one device with no network: collectives exist only for a world of one
//! worker (`g_device_count` 1, id 0), where a barrier returns at once and an all-gather is a
//! copy; any larger world is `NRT_FAILURE` with a line saying why. EFA, dma-buf export and
//! whole-HBM mappings do not exist here and answer their documented error status.

use std::ffi::{c_char, c_int, c_void};
use std::sync::Mutex;

use nrt_runtime::{Error, NrtStatus, Result};

use crate::guard;
use crate::ptr;
use crate::session::{self, NRT};
use crate::types::{fill_c_chars, NrtStatusC, NrtUcodeInfo, NrtVncMemoryStats};

/// Refuses a world of more than one worker.
pub fn single_worker(id: u32, count: u32) -> Result<()> {
    if count == 1 && id == 0 {
        Ok(())
    } else {
        Err(Error::failure(format!(
            "a collectives world of {count} workers (this is worker {id}) needs a network; this platform is one simulated device, so only a world of 1 exists"
        )))
    }
}

fn world(function: &'static str, vnc: i64, id: u32, count: u32) -> NrtStatusC {
    guard::status(function, || {
        session::with(|_, s| s.vnc(vnc).map(|_| ()))?;
        single_worker(id, count)
    })
}

/// `nrt_build_global_comm`.
pub extern "C" fn nrt_build_global_comm(
    vnc: i32,
    g_device_id: u32,
    g_device_count: u32,
) -> NrtStatusC {
    world(
        "nrt_build_global_comm",
        vnc.into(),
        g_device_id,
        g_device_count,
    )
}

/// `nrt_cc_global_comm_init`.
pub extern "C" fn nrt_cc_global_comm_init(
    vnc: u32,
    g_device_id: u32,
    g_device_count: u32,
) -> NrtStatusC {
    world(
        "nrt_cc_global_comm_init",
        vnc.into(),
        g_device_id,
        g_device_count,
    )
}

/// `nrt_barrier`: immediate in a world of one.
pub extern "C" fn nrt_barrier(vnc: i32, g_device_id: u32, g_device_count: u32) -> NrtStatusC {
    world("nrt_barrier", vnc.into(), g_device_id, g_device_count)
}

/// `nrt_all_gather`: in a world of one, `output` receives `input`.
///
/// # Safety
///
/// `input` and `output` point at `rank_input_size * g_device_count` bytes (`input` at
/// `rank_input_size`).
pub unsafe extern "C" fn nrt_all_gather(
    vnc: i32,
    g_device_id: u32,
    g_device_count: u32,
    rank_input_size: u32,
    input: *mut c_void,
    output: *mut c_void,
) -> NrtStatusC {
    guard::status("nrt_all_gather", || {
        session::with(|_, s| s.vnc(vnc.into()).map(|_| ()))?;
        single_worker(g_device_id, g_device_count)?;
        let n = rank_input_size as usize;
        // SAFETY: the caller's contract.
        let src = unsafe { ptr::bytes(input, n, "input")? };
        // SAFETY: the caller's contract.
        let dst = unsafe { ptr::bytes_mut(output, n, "output")? };
        dst.copy_from_slice(src);
        Ok(())
    })
}

/// `nrt_get_libnccl_net`: no NCCL network plugin here.
///
/// # Safety
///
/// `err` is NULL or writable; `err_msg` is NULL or holds `err_msg_size` bytes.
pub unsafe extern "C" fn nrt_get_libnccl_net(
    err: *mut c_int,
    err_msg: *mut c_char,
    err_msg_size: usize,
) -> *mut c_void {
    const WHY: &str = "nrt-emu has no NCCL network plugin (no EFA on a simulated device)";
    guard::value("nrt_get_libnccl_net", std::ptr::null_mut(), || {
        crate::log::error(WHY);
        // SAFETY: the caller's contract.
        unsafe {
            ptr::write_opt(err, NrtStatus::Failure.code() as c_int);
            if !err_msg.is_null() && err_msg_size > 0 {
                fill_c_chars(std::slice::from_raw_parts_mut(err_msg, err_msg_size), WHY);
            }
        }
        Ok(std::ptr::null_mut())
    })
}

/// `nrt_get_vnc_memory_stats`: the device's accounting for the core.
///
/// # Safety
///
/// `stats` is NULL or holds `stats_size_in` writable bytes; `stats_size_out` is NULL or
/// writable.
pub unsafe extern "C" fn nrt_get_vnc_memory_stats(
    vnc: u32,
    stats: *mut NrtVncMemoryStats,
    stats_size_in: usize,
    stats_size_out: *mut usize,
) -> NrtStatusC {
    guard::status("nrt_get_vnc_memory_stats", || {
        if stats.is_null() {
            return Err(ptr::null("stats"));
        }
        let (used, limit) = session::with(|rt, s| rt.vcore_memory(s.vnc(vnc.into())?))?;
        let v = NrtVncMemoryStats {
            bytes_used: used as usize,
            bytes_limit: limit as usize,
        };
        let n = stats_size_in.min(std::mem::size_of::<NrtVncMemoryStats>());
        // SAFETY: `stats` holds `stats_size_in >= n` writable bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (&v as *const NrtVncMemoryStats).cast::<u8>(),
                stats.cast(),
                n,
            );
            ptr::write_opt(stats_size_out, n);
        }
        Ok(())
    })
}

/// `nrt_get_hbm_mmap_va`: `NRT_INVALID` (whole HBM regions cannot be mapped here; tensors can,
/// with `nrt_tensor_get_va`).
pub extern "C" fn nrt_get_hbm_mmap_va(
    device_id: c_int,
    hbm_idx: c_int,
    addr: *mut *mut c_void,
    size: *mut usize,
) -> NrtStatusC {
    guard::status("nrt_get_hbm_mmap_va", || {
        if addr.is_null() {
            return Err(ptr::null("addr"));
        }
        if size.is_null() {
            return Err(ptr::null("size"));
        }
        Err(Error::invalid(format!(
            "mapping HBM region {hbm_idx} of device {device_id} is not supported on this platform (map a tensor with nrt_tensor_get_va)"
        )))
    })
}

/// `nrt_get_dmabuf_fd`: `NRT_INVALID` (no dma-buf export: nothing here registers memory for
/// EFA peer-direct).
pub extern "C" fn nrt_get_dmabuf_fd(va: u64, size: u64, fd: *mut c_int) -> NrtStatusC {
    guard::status("nrt_get_dmabuf_fd", || {
        if fd.is_null() {
            return Err(ptr::null("fd"));
        }
        Err(Error::invalid(format!(
            "no dma-buf can be exported for {size} bytes at {va:#x}: this platform has no EFA peer-direct memory"
        )))
    })
}

/// `nrt_host_device_id_get`: one device, not remapped, so device 0 is host device 0.
///
/// # Safety
///
/// `host_device_id` is NULL or writable.
pub unsafe extern "C" fn nrt_host_device_id_get(
    neuron_dev: c_int,
    host_device_id: *mut u32,
) -> NrtStatusC {
    guard::status("nrt_host_device_id_get", || {
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(host_device_id, "host_device_id")? };
        session::with(|_, _| Ok(()))?;
        if neuron_dev != 0 {
            return Err(Error::invalid(format!(
                "Neuron device {neuron_dev} does not exist (this instance has device 0)"
            )));
        }
        *out = 0;
        Ok(())
    })
}

/// `nrt_host_device_id_rid_map_get`: host device 0 has routing id 0.
///
/// # Safety
///
/// `count` is NULL or writable; `host_did_to_rid_map` holds `*count` entries.
pub unsafe extern "C" fn nrt_host_device_id_rid_map_get(
    count: *mut u32,
    host_did_to_rid_map: *mut u32,
) -> NrtStatusC {
    guard::status("nrt_host_device_id_rid_map_get", || {
        // SAFETY: the caller's contract.
        let count = unsafe { ptr::out(count, "count")? };
        session::with(|_, _| Ok(()))?;
        if *count < 1 {
            return Err(Error::invalid("count is 0: the map has 1 entry"));
        }
        if host_did_to_rid_map.is_null() {
            return Err(ptr::null("host_did_to_rid_map"));
        }
        // SAFETY: the map holds `*count >= 1` entries.
        unsafe { host_did_to_rid_map.write(0) };
        *count = 1;
        Ok(())
    })
}

/// `nrt_get_attached_efa_bdf`: `NRT_FAILURE` (no EFA device).
pub extern "C" fn nrt_get_attached_efa_bdf(
    va: *const c_void,
    efa_bdf: *mut c_char,
    len: *mut usize,
) -> NrtStatusC {
    guard::status("nrt_get_attached_efa_bdf", || {
        for (p, arg) in [
            (va, "va"),
            (efa_bdf.cast_const().cast(), "efa_bdf"),
            (len.cast_const().cast(), "len"),
        ] {
            if p.is_null() {
                return Err(ptr::null(arg));
            }
        }
        Err(Error::failure(format!(
            "no EFA device is attached to the device holding {va:p}: this platform has none"
        )))
    })
}

/// Sizes of the pooling-engine images given before `nrt_init`.
static UCODE: Mutex<Option<(usize, usize)>> = Mutex::new(None);

/// `nrt_set_pool_eng_ucode`: accepted before `nrt_init` (the simulated pooling engine runs no
/// microcode, so the images are checked and recorded, not used); `NRT_INVALID` afterwards.
///
/// # Safety
///
/// `ucode_info` is NULL or valid; each image's `bin` holds `size` bytes.
pub unsafe extern "C" fn nrt_set_pool_eng_ucode(ucode_info: *const NrtUcodeInfo) -> NrtStatusC {
    guard::status("nrt_set_pool_eng_ucode", || {
        // SAFETY: the caller's contract.
        let info = unsafe { ptr::inp(ucode_info, "ucode_info")? };
        if NRT.is_open() {
            return Err(Error::invalid(
                "nrt_set_pool_eng_ucode must be called before nrt_init",
            ));
        }
        for (img, arg) in [(info.iram, "iram"), (info.dram, "dram")] {
            if img.size > 0 && img.bin.is_null() {
                return Err(ptr::null(&format!("ucode_info->{arg}.bin")));
            }
        }
        *UCODE.lock().unwrap_or_else(|p| p.into_inner()) = Some((info.iram.size, info.dram.size));
        crate::log::info(&format!(
            "pooling-engine microcode recorded ({} + {} bytes); the simulator's pooling engine does not run microcode",
            info.iram.size, info.dram.size
        ));
        Ok(())
    })
}

/// `nrt_memcpy_to_device`: `dest` must lie inside the mapping of a live tensor
/// (`nrt_tensor_get_va`); the bytes go through that tensor.
///
/// # Safety
///
/// `src` points at `size` readable bytes.
pub unsafe extern "C" fn nrt_memcpy_to_device(
    dest: *mut c_void,
    src: *const c_void,
    size: usize,
) -> NrtStatusC {
    guard::status("nrt_memcpy_to_device", || {
        if dest.is_null() {
            return Err(ptr::null("dest"));
        }
        // SAFETY: the caller's contract.
        let bytes = unsafe { ptr::bytes(src, size, "src")? };
        let at = dest as usize;
        session::with(|_, s| {
            for (_, t) in s.tensors.entries() {
                if t.device_addr().is_none() {
                    continue;
                }
                let Ok(base) = t.host_ptr() else { continue };
                let base = base.as_ptr() as usize;
                let end = base + t.size() as usize;
                if at >= base && at.saturating_add(size) <= end {
                    return t.write((at - base) as u64, bytes);
                }
            }
            Err(Error::invalid(format!(
                "{size} bytes at {dest:p} are not inside the mapping of a device tensor"
            )))
        })
    })
}
