//! The C types of the headers, `#[repr(C)]`, with their sizes and field offsets checked at
//! compile time against the layout table of docs/c-api.md (x86-64 LP64).
//!
//! Enum-typed parameters cross the boundary as `u32` (a C caller may pass any value; a Rust
//! enum with an invalid discriminant would be undefined behaviour), and are decoded here.

use std::ffi::{c_char, c_int, c_void};
use std::mem::{offset_of, size_of};

/// `NRT_STATUS`.
pub type NrtStatusC = u32;
/// `nrta_seq_t`.
pub type NrtaSeq = u64;

/// `nrt_version_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NrtVersion {
    /// Major.
    pub rt_major: u64,
    /// Minor.
    pub rt_minor: u64,
    /// Patch.
    pub rt_patch: u64,
    /// Maintenance.
    pub rt_maintenance: u64,
    /// Free-form detail.
    pub rt_detail: [c_char; 128],
    /// Source revision.
    pub git_hash: [c_char; 64],
}

/// `nrt_instance_info_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NrtInstanceInfo {
    /// `NRT_INSTANCE_*`.
    pub family: u32,
    /// `NRT_INSTANCE_SIZE_*`.
    pub size: u32,
    /// Architecture name.
    pub arch_name: [c_char; 16],
    /// Device revision.
    pub device_revision: [c_char; 8],
}

/// `nrt_tensor_batch_op_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NrtTensorBatchOp {
    /// Byte offset in the tensor.
    pub offset: u64,
    /// Bytes.
    pub size: u64,
    /// The caller's buffer.
    pub buffer: *mut c_void,
}

/// `nrt_tensor_batch_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NrtTensorBatch {
    /// The tensor.
    pub tensor: *const c_void,
    /// Its operations.
    pub ops: *const NrtTensorBatchOp,
    /// How many.
    pub num_ops: u32,
}

/// `nrt_tensor_device_allocation_info_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NrtTensorDeviceAllocationInfo {
    /// Device address.
    pub physical_address: u64,
    /// Allocation size.
    pub size: usize,
    /// HBM channel.
    pub hbm_index: c_int,
}

/// `nrt_vnc_memory_stats_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NrtVncMemoryStats {
    /// Bytes in use.
    pub bytes_used: usize,
    /// Bytes available in total.
    pub bytes_limit: usize,
}

/// `nrt_cc_comm_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NrtCcComm {
    /// Replica group.
    pub replica_group: *mut u32,
    /// Rank.
    pub rank: u32,
    /// Ranks.
    pub rank_n: u32,
    /// Device id.
    pub ctx_device_id: u32,
    /// Devices.
    pub ctx_device_count: u32,
    /// Core.
    pub vnc: u32,
}

/// `nrt_tensor_list_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NrtTensorList {
    /// Tensors.
    pub tensors: *mut *mut c_void,
    /// How many.
    pub num_tensors: usize,
}

/// `nrt_tensor_info_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NrtTensorInfo {
    /// NUL-terminated name.
    pub name: [c_char; 256],
    /// `nrt_tensor_usage_t`.
    pub usage: u32,
    /// Bytes.
    pub size: usize,
    /// `nrt_dtype_t`.
    pub dtype: u32,
    /// `ndim` dimensions.
    pub shape: *mut u32,
    /// Rank.
    pub ndim: u32,
}

/// The fixed part of `nrt_tensor_info_array_t` (entries follow it).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NrtTensorInfoArray {
    /// Entries.
    pub tensor_count: u64,
}

/// `nrt_ucode_img`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NrtUcodeImg {
    /// Image bytes.
    pub bin: *mut u8,
    /// Size.
    pub size: usize,
}

/// `nrt_ucode_info`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NrtUcodeInfo {
    /// Instruction RAM image.
    pub iram: NrtUcodeImg,
    /// Data RAM image.
    pub dram: NrtUcodeImg,
}

/// `nrt_model_info_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct NrtModelInfo {
    /// The (visible) core the model is on.
    pub vnc: u32,
}

/// `nrta_error_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NrtaError {
    /// The failed request.
    pub seq_id: u64,
    /// Its `NRT_STATUS`.
    pub error_code: u64,
}

/// `NRT_ASYNC_EXEC_STATUS_CALLBACK`.
pub type AsyncExecCallback = Option<unsafe extern "C" fn(*mut c_void, u32, u32, u64, NrtStatusC)>;

/// `NRT_TENSOR_NAME_MAX`.
pub const TENSOR_NAME_MAX: usize = 256;

macro_rules! layout {
    ($t:ty, $size:expr, $($field:ident @ $off:expr),*) => {
        const _: () = assert!(size_of::<$t>() == $size);
        $(const _: () = assert!(offset_of!($t, $field) == $off);)*
    };
}

#[cfg(target_pointer_width = "64")]
mod checks {
    use super::*;
    layout!(NrtVersion, 224, rt_major @ 0, rt_minor @ 8, rt_patch @ 16, rt_maintenance @ 24, rt_detail @ 32, git_hash @ 160);
    layout!(NrtInstanceInfo, 32, family @ 0, size @ 4, arch_name @ 8, device_revision @ 24);
    layout!(NrtTensorBatchOp, 24, offset @ 0, size @ 8, buffer @ 16);
    layout!(NrtTensorBatch, 24, tensor @ 0, ops @ 8, num_ops @ 16);
    layout!(NrtTensorDeviceAllocationInfo, 24, physical_address @ 0, size @ 8, hbm_index @ 16);
    layout!(NrtVncMemoryStats, 16, bytes_used @ 0, bytes_limit @ 8);
    layout!(NrtCcComm, 32, replica_group @ 0, rank @ 8, rank_n @ 12, ctx_device_id @ 16, ctx_device_count @ 20, vnc @ 24);
    layout!(NrtTensorList, 16, tensors @ 0, num_tensors @ 8);
    layout!(NrtTensorInfo, 296, name @ 0, usage @ 256, size @ 264, dtype @ 272, shape @ 280, ndim @ 288);
    layout!(NrtTensorInfoArray, 8, tensor_count @ 0);
    layout!(NrtUcodeImg, 16, bin @ 0, size @ 8);
    layout!(NrtUcodeInfo, 32, iram @ 0, dram @ 16);
    layout!(NrtModelInfo, 4, vnc @ 0);
    layout!(NrtaError, 16, seq_id @ 0, error_code @ 8);
}

/// Copies `s` into a C char array, truncated to leave room for the NUL (which is written).
pub fn fill_c_chars(dst: &mut [c_char], s: &str) {
    let n = s.len().min(dst.len().saturating_sub(1));
    for (d, b) in dst.iter_mut().zip(s.as_bytes()[..n].iter()) {
        *d = *b as c_char;
    }
    for d in dst.iter_mut().skip(n) {
        *d = 0;
    }
}
