//! Tensors and tensor sets (the `nrt_tensor_t` / `nrt_tensor_set_t` of `nrt.h`, docs/c-api.md
//! §5.3).
//!
//! A tensor is *device* (HBM on a logical core, what async execution needs), *host* (DMA-able
//! host memory; on this platform the device's host window), or *virtual* (plain process
//! memory). Tensors are shared handles; the memory is freed when the last handle drops. A
//! tensor set maps names to tensors — the binding key of execution is the name (docs/runtime.md §3.1).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use nrt_hal::abi::MemAllocCategory;
use nrt_hal::hal::{AllocRequest, MemLocation};
use nrt_hal::{DeviceAddr, Hal, MemHandle, NcIndex};

use crate::error::{Error, Result};
use crate::status::NrtStatus;

/// `nrt_tensor_placement_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Placement {
    /// `NRT_TENSOR_PLACEMENT_DEVICE` (0): device HBM.
    Device = 0,
    /// `NRT_TENSOR_PLACEMENT_HOST` (1): DMA-able host memory.
    Host = 1,
    /// `NRT_TENSOR_PLACEMENT_VIRTUAL` (2): ordinary process memory.
    Virtual = 2,
}

enum Storage {
    /// HBM or host DMA memory owned through the HAL.
    Hal {
        hal: Arc<dyn Hal>,
        handle: MemHandle,
        pa: DeviceAddr,
    },
    /// Process memory.
    Virtual(Mutex<Vec<u8>>),
}

struct Inner {
    name: String,
    size: u64,
    placement: Placement,
    vnc: u32,
    nc: NcIndex,
    storage: Storage,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Storage::Hal { hal, handle, .. } = &self.storage {
            let _ = hal.mem_free(*handle);
        }
    }
}

/// A tensor handle (cheap to clone; the memory lives until the last handle drops).
#[derive(Clone)]
pub struct Tensor(Arc<Inner>);

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor")
            .field("name", &self.0.name)
            .field("size", &self.0.size)
            .field("placement", &self.0.placement)
            .field("vnc", &self.0.vnc)
            .finish()
    }
}

impl Tensor {
    /// Allocates a zero-filled tensor. `nc` is the physical core whose memory a device tensor
    /// uses (the first core of logical core `vnc`).
    pub fn allocate(
        hal: &Arc<dyn Hal>,
        placement: Placement,
        vnc: u32,
        nc: NcIndex,
        size: u64,
        name: &str,
    ) -> Result<Tensor> {
        if size == 0 {
            return Err(Error::invalid(format!(
                "tensor {name:?}: size 0 (nrt rejects 0-byte tensors)"
            )));
        }
        let storage = match placement {
            Placement::Virtual => Storage::Virtual(Mutex::new(vec![0; size as usize])),
            Placement::Device | Placement::Host => {
                let target = hal.device_info()?.target;
                let (location, category) = match placement {
                    Placement::Device => (
                        MemLocation::Device {
                            channel: target.hbm_channel_of(nc),
                        },
                        MemAllocCategory::TensorsDevice,
                    ),
                    _ => (MemLocation::Host, MemAllocCategory::TensorsHost),
                };
                let handle = hal
                    .mem_alloc(&AllocRequest {
                        size,
                        align: 0,
                        location,
                        nc,
                        category,
                    })
                    .map_err(|e| Error::from(e).context(format!("allocating tensor {name:?}")))?;
                let pa = match hal.mem_info(handle) {
                    Ok(i) => i.pa,
                    Err(e) => {
                        let _ = hal.mem_free(handle);
                        return Err(e.into());
                    }
                };
                Storage::Hal {
                    hal: hal.clone(),
                    handle,
                    pa,
                }
            }
        };
        Ok(Tensor(Arc::new(Inner {
            name: name.to_string(),
            size,
            placement,
            vnc,
            nc,
            storage,
        })))
    }

    /// The name given at allocation.
    pub fn name(&self) -> &str {
        &self.0.name
    }
    /// Bytes.
    pub fn size(&self) -> u64 {
        self.0.size
    }
    /// Placement.
    pub fn placement(&self) -> Placement {
        self.0.placement
    }
    /// The logical core it was allocated for.
    pub fn vnc(&self) -> u32 {
        self.0.vnc
    }
    /// The physical core whose memory holds it.
    pub fn nc(&self) -> NcIndex {
        self.0.nc
    }

    /// The device-visible address, for device and host tensors.
    pub fn device_addr(&self) -> Option<DeviceAddr> {
        match &self.0.storage {
            Storage::Hal { pa, .. } => Some(*pa),
            Storage::Virtual(_) => None,
        }
    }

    /// Whether two handles name the same tensor.
    pub fn same(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    fn bounds(&self, offset: u64, len: usize) -> Result<()> {
        match offset.checked_add(len as u64) {
            Some(end) if end <= self.0.size => Ok(()),
            _ => Err(Error::invalid(format!(
                "tensor {:?}: {len} bytes at offset {offset} exceed its {} bytes",
                self.0.name, self.0.size
            ))),
        }
    }

    /// `nrt_tensor_read`.
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.bounds(offset, buf.len())?;
        match &self.0.storage {
            Storage::Hal { hal, handle, .. } => Ok(hal.copy_from_device(*handle, offset, buf)?),
            Storage::Virtual(v) => {
                let v = v.lock().unwrap_or_else(|p| p.into_inner());
                buf.copy_from_slice(&v[offset as usize..offset as usize + buf.len()]);
                Ok(())
            }
        }
    }

    /// `nrt_tensor_write`.
    pub fn write(&self, offset: u64, buf: &[u8]) -> Result<()> {
        self.bounds(offset, buf.len())?;
        match &self.0.storage {
            Storage::Hal { hal, handle, .. } => Ok(hal.copy_to_device(*handle, offset, buf)?),
            Storage::Virtual(v) => {
                let mut v = v.lock().unwrap_or_else(|p| p.into_inner());
                v[offset as usize..offset as usize + buf.len()].copy_from_slice(buf);
                Ok(())
            }
        }
    }

    /// `nrt_tensor_memset`.
    pub fn memset(&self, offset: u64, value: u8, size: u64) -> Result<()> {
        self.bounds(offset, size as usize)?;
        match &self.0.storage {
            Storage::Hal { hal, handle, .. } => Ok(hal.memset(*handle, offset, value, size)?),
            Storage::Virtual(v) => {
                let mut v = v.lock().unwrap_or_else(|p| p.into_inner());
                v[offset as usize..(offset + size) as usize].fill(value);
                Ok(())
            }
        }
    }

    /// Reads the whole tensor.
    pub fn to_vec(&self) -> Result<Vec<u8>> {
        let mut v = vec![0; self.0.size as usize];
        self.read(0, &mut v)?;
        Ok(v)
    }

    /// Copies all of `src` into `dst` (same size), whatever their placements.
    pub(crate) fn copy_out(src: &Tensor, dst: &Tensor) -> Result<()> {
        dst.write(0, &src.to_vec()?)
    }

    /// `nrt_tensor_copy`: device ↔ device on the same logical core only (else `NRT_INVALID`).
    pub fn copy(src: &Tensor, src_off: u64, dst: &Tensor, dst_off: u64, size: u64) -> Result<()> {
        if src.placement() != Placement::Device || dst.placement() != Placement::Device {
            return Err(Error::invalid("nrt_tensor_copy copies device tensors only"));
        }
        if src.vnc() != dst.vnc() {
            return Err(Error::invalid(format!(
                "nrt_tensor_copy: {:?} is on logical core {}, {:?} on {}",
                src.name(),
                src.vnc(),
                dst.name(),
                dst.vnc()
            )));
        }
        src.bounds(src_off, size as usize)?;
        dst.bounds(dst_off, size as usize)?;
        let mut buf = vec![0; size as usize];
        src.read(src_off, &mut buf)?;
        dst.write(dst_off, &buf)
    }
}

/// A name-keyed set of tensors (`nrt_tensor_set_t`).
#[derive(Debug, Clone, Default)]
pub struct TensorSet {
    tensors: BTreeMap<String, Tensor>,
}

impl TensorSet {
    /// An empty set.
    pub fn new() -> Self {
        TensorSet::default()
    }

    /// Adds or replaces the tensor bound to `name` (`nrt_add_tensor_to_tensor_set`).
    pub fn add(&mut self, name: &str, t: Tensor) {
        self.tensors.insert(name.to_string(), t);
    }

    /// The tensor bound to `name` (`nrt_get_tensor_from_tensor_set`).
    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.tensors.get(name)
    }

    /// Number of tensors.
    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// (name, tensor) pairs by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Tensor)> {
        self.tensors.iter().map(|(k, v)| (k.as_str(), v))
    }
}

/// `nrt_tensor_usage_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TensorUsage {
    /// `NRT_TENSOR_USAGE_INPUT` (0).
    Input = 0,
    /// `NRT_TENSOR_USAGE_OUTPUT` (1).
    Output = 1,
}

/// `nrt_tensor_info_t`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorInfo {
    /// Name.
    pub name: String,
    /// Input or output.
    pub usage: TensorUsage,
    /// Bytes.
    pub size: u64,
    /// Element type.
    pub dtype: nrt_hal::Dtype,
    /// Shape.
    pub shape: Vec<u64>,
}

/// Checks a caller's set against a model's contract: every name bound, sizes equal, all on
/// logical core `vnc`.
pub(crate) fn check_set(
    kind: &str,
    set: &TensorSet,
    want: &[crate::kbin::IoTensor],
    vnc: u32,
) -> Result<()> {
    for io in want {
        let t = set.get(&io.name).ok_or_else(|| {
            Error::invalid(format!(
                "{kind} tensor {:?} is missing from the {kind} set",
                io.name
            ))
        })?;
        if t.size() != io.size {
            return Err(Error::invalid(format!(
                "{kind} tensor {:?} is {} bytes, the model expects {}",
                io.name,
                t.size(),
                io.size
            )));
        }
        if t.placement() == Placement::Device && t.vnc() != vnc {
            return Err(Error::invalid(format!(
                "{kind} tensor {:?} is on logical core {}, the model on {vnc}",
                io.name,
                t.vnc()
            )));
        }
    }
    for (name, _) in set.iter() {
        if !want.iter().any(|w| w.name == name) {
            return Err(Error::new(
                NrtStatus::Invalid,
                format!("{kind} set binds {name:?}, which is not a model {kind}"),
            ));
        }
    }
    Ok(())
}
