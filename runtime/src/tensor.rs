//! Tensors and tensor sets (the `nrt_tensor_t` / `nrt_tensor_set_t` of `nrt.h`, docs/c-api.md
//! §5.3).
//!
//! A tensor is *device* (HBM on a logical core, what async execution needs), *host* (DMA-able
//! host memory; on this platform the device's host window), or *virtual* (process memory: the
//! runtime's own, or a caller's buffer attached with [`Tensor::external`]). A tensor may be a
//! *slice* viewing part of another's storage, or *empty* (no storage yet). Tensors are shared
//! handles; the storage is freed when the last tensor using it drops. Each tensor counts the
//! executions that completed writing it as an output (`nrt_tensor_check_output_completion`).
//! A tensor set maps names to tensors — the binding key of execution is the name (docs/runtime.md §3.1).

use std::collections::BTreeMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use nrt_hal::abi::MemAllocCategory;
use nrt_hal::hal::{AllocRequest, Mapping, MemLocation};
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
    /// HBM or host DMA memory owned through the HAL. `va` is the process mapping made by the
    /// first [`Tensor::host_ptr`] (kept until the storage is freed).
    Hal {
        hal: Arc<dyn Hal>,
        handle: MemHandle,
        pa: DeviceAddr,
        va: OnceLock<Mapping>,
    },
    /// Process memory.
    Virtual(Mutex<Vec<u8>>),
    /// Memory the caller owns (`nrt_tensor_attach_buffer`): never freed here.
    External(ExternalBuffer),
    /// No storage at all (`nrt_tensor_allocate_empty` before a buffer is attached).
    Empty,
}

/// The caller's buffer behind an attached tensor.
struct ExternalBuffer {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the pointer is only dereferenced by `Tensor::read`/`write`/`memset` within
// `ptr..ptr+len`; whoever made the tensor ([`Tensor::external`]) promised that range stays valid
// and is not accessed concurrently in a conflicting way, from any thread, while the tensor lives.
unsafe impl Send for ExternalBuffer {}
// SAFETY: as above; sharing the descriptor does not access the memory.
unsafe impl Sync for ExternalBuffer {}

impl Drop for Storage {
    fn drop(&mut self) {
        if let Storage::Hal {
            hal, handle, va, ..
        } = self
        {
            if let Some(m) = va.take() {
                // SAFETY: the mapping came from `hal.map` on this handle, and every pointer
                // derived from it belongs to a tensor sharing this storage, all of which are gone.
                let _ = unsafe { hal.unmap(m) };
            }
            let _ = hal.mem_free(*handle);
        }
    }
}

struct Inner {
    name: String,
    size: u64,
    placement: Placement,
    vnc: u32,
    nc: NcIndex,
    /// Where this tensor starts inside `storage` (non-zero for slices).
    offset: u64,
    storage: Arc<Storage>,
    /// Executions that completed writing this tensor as an output.
    completions: AtomicU64,
}

/// A tensor handle (cheap to clone; the memory lives until the last handle drops).
///
/// A slice ([`Tensor::slice`]) is a tensor of its own that views part of another tensor's
/// storage; the storage is freed when the last tensor using it is dropped.
#[derive(Clone)]
pub struct Tensor(Arc<Inner>);

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tensor")
            .field("name", &self.0.name)
            .field("size", &self.0.size)
            .field("placement", &self.0.placement)
            .field("vnc", &self.0.vnc)
            .field("offset", &self.0.offset)
            .finish()
    }
}

impl Tensor {
    fn from_parts(
        name: &str,
        size: u64,
        placement: Placement,
        (vnc, nc): (u32, NcIndex),
        storage: Storage,
    ) -> Tensor {
        Tensor(Arc::new(Inner {
            name: name.to_string(),
            size,
            placement,
            vnc,
            nc,
            offset: 0,
            storage: Arc::new(storage),
            completions: AtomicU64::new(0),
        }))
    }

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
            Placement::Virtual => {
                let len = usize::try_from(size)
                    .map_err(|_| Error::resource(format!("tensor {name:?}: {size} bytes")))?;
                let mut v = Vec::new();
                v.try_reserve_exact(len).map_err(|_| {
                    Error::resource(format!(
                        "tensor {name:?}: cannot allocate {size} bytes of host memory"
                    ))
                })?;
                v.resize(len, 0);
                Storage::Virtual(Mutex::new(v))
            }
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
                    va: OnceLock::new(),
                }
            }
        };
        Ok(Tensor::from_parts(
            name,
            size,
            placement,
            (vnc, nc),
            storage,
        ))
    }

    /// A tensor with no storage (`nrt_tensor_allocate_empty`): size 0, virtual, until a buffer
    /// is attached. Every access is out of bounds.
    pub fn empty(name: &str) -> Tensor {
        Tensor::from_parts(name, 0, Placement::Virtual, (0, NcIndex(0)), Storage::Empty)
    }

    /// A virtual tensor over the caller's `len` bytes at `ptr` (`nrt_tensor_attach_buffer`).
    /// The memory is never freed by the tensor.
    ///
    /// # Safety
    ///
    /// `ptr..ptr+len` must be valid for reads and writes for as long as this tensor or any
    /// slice or clone of it lives, and must not be accessed by anyone else while a tensor
    /// operation (read, write, memset, an execution using it) is in progress.
    pub unsafe fn external(ptr: NonNull<u8>, len: usize, name: &str) -> Result<Tensor> {
        if len == 0 {
            return Err(Error::invalid(format!(
                "tensor {name:?}: a 0-byte buffer cannot be attached"
            )));
        }
        Ok(Tensor::from_parts(
            name,
            len as u64,
            Placement::Virtual,
            (0, NcIndex(0)),
            Storage::External(ExternalBuffer { ptr, len }),
        ))
    }

    /// `nrt_tensor_allocate_slice`: a tensor viewing bytes `offset..offset+size` of this one,
    /// sharing its storage (no copy).
    pub fn slice(&self, offset: u64, size: u64, name: &str) -> Result<Tensor> {
        if size == 0 {
            return Err(Error::invalid(format!(
                "slice {name:?} of tensor {:?}: size 0",
                self.0.name
            )));
        }
        self.bounds(offset, size)?;
        Ok(Tensor(Arc::new(Inner {
            name: name.to_string(),
            size,
            placement: self.0.placement,
            vnc: self.0.vnc,
            nc: self.0.nc,
            offset: self.0.offset + offset,
            storage: Arc::clone(&self.0.storage),
            completions: AtomicU64::new(0),
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

    /// Whether the tensor has storage (false only for [`Tensor::empty`]).
    pub fn has_storage(&self) -> bool {
        !matches!(*self.0.storage, Storage::Empty)
    }

    /// The device-visible address, for device and host tensors.
    pub fn device_addr(&self) -> Option<DeviceAddr> {
        match &*self.0.storage {
            Storage::Hal { pa, .. } => Some(DeviceAddr::new(pa.raw() + self.0.offset)),
            _ => None,
        }
    }

    /// `nrt_tensor_get_device_allocation_info`: the device address of the tensor, and the size
    /// of the whole allocation holding it (larger than the tensor for a slice).
    pub fn device_allocation(&self) -> Result<(DeviceAddr, u64)> {
        match &*self.0.storage {
            Storage::Hal { hal, handle, .. } => {
                let info = hal.mem_info(*handle)?;
                Ok((DeviceAddr::new(info.pa.raw() + self.0.offset), info.size))
            }
            _ => Err(Error::invalid(format!(
                "tensor {:?} is not in device memory",
                self.0.name
            ))),
        }
    }

    /// `nrt_tensor_get_va`: the process address of the tensor's first byte. Device and host
    /// tensors are mapped into the process on first use (the mapping lives as long as the
    /// storage). Accesses through the pointer are the caller's to synchronise with executions.
    pub fn host_ptr(&self) -> Result<NonNull<u8>> {
        let base = match &*self.0.storage {
            Storage::Hal {
                hal, handle, va, ..
            } => {
                if va.get().is_none() {
                    // SAFETY: the mapping is kept in the storage and unmapped only when the
                    // storage is dropped (after every tensor using it); this function only hands
                    // out its address, and using it is the caller's responsibility.
                    let m = unsafe { hal.map(*handle)? };
                    if let Err(m) = va.set(m) {
                        // Another thread mapped it first; give this mapping back.
                        // SAFETY: `m` came from `hal.map` above and no pointer derived from it
                        // escaped.
                        let _ = unsafe { hal.unmap(m) };
                    }
                }
                va.get().map(|m| m.ptr)
            }
            Storage::Virtual(v) => {
                NonNull::new(v.lock().unwrap_or_else(|p| p.into_inner()).as_mut_ptr())
            }
            Storage::External(b) => Some(b.ptr),
            Storage::Empty => None,
        };
        let base =
            base.ok_or_else(|| Error::invalid(format!("tensor {:?} has no storage", self.0.name)))?;
        // SAFETY: `offset` is inside the storage (checked when the slice was made).
        Ok(unsafe { base.add(self.0.offset as usize) })
    }

    /// Whether two handles name the same tensor.
    pub fn same(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    fn bounds(&self, offset: u64, len: u64) -> Result<()> {
        if !self.has_storage() {
            return Err(Error::invalid(format!(
                "tensor {:?} has no storage (allocated empty, no buffer attached)",
                self.0.name
            )));
        }
        match offset.checked_add(len) {
            Some(end) if end <= self.0.size => Ok(()),
            _ => Err(Error::invalid(format!(
                "tensor {:?}: {len} bytes at offset {offset} exceed its {} bytes",
                self.0.name, self.0.size
            ))),
        }
    }

    /// Runs `f` on the storage bytes `offset..offset+len` (already bounds-checked) of a
    /// process-memory tensor.
    fn with_host_bytes<T>(&self, offset: u64, len: usize, f: impl FnOnce(&mut [u8]) -> T) -> T {
        let at = (self.0.offset + offset) as usize;
        match &*self.0.storage {
            Storage::Virtual(v) => {
                let mut v = v.lock().unwrap_or_else(|p| p.into_inner());
                f(&mut v[at..at + len])
            }
            Storage::External(b) => {
                debug_assert!(at + len <= b.len);
                // SAFETY: `at + len <= b.len` (bounds checked by the caller against the
                // tensor, which lies inside the buffer), and `Tensor::external`'s contract makes
                // the range valid and unaliased for the duration of this call.
                let bytes = unsafe { std::slice::from_raw_parts_mut(b.ptr.as_ptr().add(at), len) };
                f(bytes)
            }
            Storage::Hal { .. } | Storage::Empty => {
                unreachable!("with_host_bytes is only called for process-memory storage")
            }
        }
    }

    /// `nrt_tensor_read`.
    pub fn read(&self, offset: u64, buf: &mut [u8]) -> Result<()> {
        self.bounds(offset, buf.len() as u64)?;
        match &*self.0.storage {
            Storage::Hal { hal, handle, .. } => {
                Ok(hal.copy_from_device(*handle, self.0.offset + offset, buf)?)
            }
            _ => {
                self.with_host_bytes(offset, buf.len(), |b| buf.copy_from_slice(b));
                Ok(())
            }
        }
    }

    /// `nrt_tensor_write`.
    pub fn write(&self, offset: u64, buf: &[u8]) -> Result<()> {
        self.bounds(offset, buf.len() as u64)?;
        match &*self.0.storage {
            Storage::Hal { hal, handle, .. } => {
                Ok(hal.copy_to_device(*handle, self.0.offset + offset, buf)?)
            }
            _ => {
                self.with_host_bytes(offset, buf.len(), |b| b.copy_from_slice(buf));
                Ok(())
            }
        }
    }

    /// `nrt_tensor_memset`.
    pub fn memset(&self, offset: u64, value: u8, size: u64) -> Result<()> {
        self.bounds(offset, size)?;
        match &*self.0.storage {
            Storage::Hal { hal, handle, .. } => {
                Ok(hal.memset(*handle, self.0.offset + offset, value, size)?)
            }
            _ => {
                self.with_host_bytes(offset, size as usize, |b| b.fill(value));
                Ok(())
            }
        }
    }

    /// `nrt_tensor_read_batch` for one tensor: every `(offset, buffer)` is checked first, then
    /// read in order, so a batch with one bad op reads nothing.
    pub fn read_batch(&self, ops: &mut [(u64, &mut [u8])]) -> Result<()> {
        for (off, buf) in ops.iter() {
            self.bounds(*off, buf.len() as u64)?;
        }
        for (off, buf) in ops.iter_mut() {
            self.read(*off, buf)?;
        }
        Ok(())
    }

    /// `nrt_tensor_write_batch` for one tensor: checked as a whole, then written in order.
    pub fn write_batch(&self, ops: &[(u64, &[u8])]) -> Result<()> {
        for (off, buf) in ops {
            self.bounds(*off, buf.len() as u64)?;
        }
        for (off, buf) in ops {
            self.write(*off, buf)?;
        }
        Ok(())
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

    /// `nrt_tensor_copy`: between any two tensors with storage, except that two device tensors
    /// must be on the same logical core (else `NRT_INVALID`).
    pub fn copy(src: &Tensor, src_off: u64, dst: &Tensor, dst_off: u64, size: u64) -> Result<()> {
        if src.placement() == Placement::Device
            && dst.placement() == Placement::Device
            && src.vnc() != dst.vnc()
        {
            return Err(Error::invalid(format!(
                "nrt_tensor_copy: {:?} is on logical core {}, {:?} on {}",
                src.name(),
                src.vnc(),
                dst.name(),
                dst.vnc()
            )));
        }
        src.bounds(src_off, size)?;
        dst.bounds(dst_off, size)?;
        let mut buf = vec![0; size as usize];
        src.read(src_off, &mut buf)?;
        dst.write(dst_off, &buf)
    }

    /// How many executions completed writing this tensor as an output (since the last reset).
    pub fn completions(&self) -> u64 {
        self.0.completions.load(Ordering::Acquire)
    }

    /// `nrt_tensor_reset_output_completion`.
    pub fn reset_completions(&self) {
        self.0.completions.store(0, Ordering::Release);
    }

    pub(crate) fn completed_as_output(&self) {
        self.0.completions.fetch_add(1, Ordering::AcqRel);
    }

    /// `nrt_tensor_check_output_completion`: waits until [`Tensor::completions`] reaches
    /// `expected`, at most `timeout` (`None` = forever). `NRT_TIMEOUT` when it does not.
    pub fn wait_completions(&self, expected: u64, timeout: Option<Duration>) -> Result<()> {
        let start = Instant::now();
        while self.completions() < expected {
            if timeout.is_some_and(|t| start.elapsed() >= t) {
                return Err(Error::new(
                    NrtStatus::Timeout,
                    format!(
                        "tensor {:?}: {} of {expected} output completions after {:?}",
                        self.0.name,
                        self.completions(),
                        timeout.unwrap_or_default()
                    ),
                ));
            }
            std::thread::sleep(Duration::from_micros(50));
        }
        Ok(())
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
/// logical core `vnc`, and no name bound that the model does not declare.
///
/// Linear in the number of tensors when `distinct` (the model's names are pairwise distinct,
/// known from load): every declared name was then found in the set, so the set binds an
/// undeclared one exactly when it holds more tensors than the model declares. Otherwise (or
/// to name the undeclared tensor) the set is scanned against the declared names.
pub(crate) fn check_set(
    kind: &str,
    set: &TensorSet,
    want: &[crate::kbin::IoTensor],
    distinct: bool,
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
    if distinct && set.len() == want.len() {
        return Ok(());
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

#[cfg(test)]
mod tests {
    use super::*;
    use nrt_hal::Target;
    use nrt_sim::{Sim, SimConfig};

    fn device() -> (Arc<Sim>, Arc<dyn Hal>) {
        let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn1)));
        (sim.clone(), sim)
    }

    fn used(sim: &Sim) -> u64 {
        sim.memory_usage(NcIndex(0)).unwrap().device_bytes()
    }

    #[test]
    fn slices_view_and_share_storage_until_the_last_user_drops() {
        let (sim, hal) = device();
        let base = used(&sim);
        let t = Tensor::allocate(&hal, Placement::Device, 0, NcIndex(0), 64, "t").unwrap();
        t.write(0, &(0u8..64).collect::<Vec<_>>()).unwrap();
        let s = t.slice(16, 8, "s").unwrap();
        assert_eq!(s.to_vec().unwrap(), (16u8..24).collect::<Vec<_>>());
        assert_eq!(
            s.device_addr().unwrap().raw(),
            t.device_addr().unwrap().raw() + 16
        );
        let ss = s.slice(4, 4, "ss").unwrap();
        ss.write(0, &[0xAA; 4]).unwrap();
        assert_eq!(t.to_vec().unwrap()[20..24], [0xAA; 4]);
        let e = s.slice(4, 5, "too long").unwrap_err();
        assert_eq!(e.status, NrtStatus::Invalid, "{e}");
        let (pa, alloc) = ss.device_allocation().unwrap();
        assert_eq!(pa.raw(), t.device_addr().unwrap().raw() + 20);
        assert!(alloc >= 64);
        drop(t);
        assert!(used(&sim) > base, "the slices keep the storage alive");
        drop((s, ss));
        assert_eq!(used(&sim), base);
    }

    #[test]
    fn empty_and_external_tensors() {
        let e = Tensor::empty("e");
        assert!(!e.has_storage());
        let err = e.write(0, &[1]).unwrap_err();
        assert!(err.message.contains("no storage"), "{err}");
        let mut buf = vec![7u8; 16];
        let ptr = NonNull::new(buf.as_mut_ptr()).unwrap();
        // SAFETY: `buf` outlives `x` and is not touched while `x` is used.
        let x = unsafe { Tensor::external(ptr, 16, "x") }.unwrap();
        assert_eq!(x.placement(), Placement::Virtual);
        x.memset(2, 0x11, 3).unwrap();
        x.write_batch(&[(0, &[9u8][..]), (15, &[8u8][..])]).unwrap();
        let bad = x.write_batch(&[(0, &[1u8][..]), (16, &[1u8][..])]);
        assert!(bad.is_err());
        assert_eq!(x.host_ptr().unwrap(), ptr);
        drop(x);
        assert_eq!(buf[..6], [9, 7, 0x11, 0x11, 0x11, 7]);
        assert_eq!(buf[15], 8);
    }

    #[test]
    fn copy_between_placements_and_refusal_across_cores() {
        let (_sim, hal) = device();
        let d0 = Tensor::allocate(&hal, Placement::Device, 0, NcIndex(0), 8, "d0").unwrap();
        let d1 = Tensor::allocate(&hal, Placement::Device, 1, NcIndex(1), 8, "d1").unwrap();
        let v = Tensor::allocate(&hal, Placement::Virtual, 0, NcIndex(0), 8, "v").unwrap();
        v.write(0, &[1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        Tensor::copy(&v, 2, &d0, 0, 4).unwrap();
        let mut out = [0u8; 4];
        let mut ops = [(0u64, &mut out[..])];
        d0.read_batch(&mut ops).unwrap();
        assert_eq!(out, [3, 4, 5, 6]);
        let e = Tensor::copy(&d0, 0, &d1, 0, 4).unwrap_err();
        assert_eq!(e.status, NrtStatus::Invalid);
        assert!(Tensor::copy(&d0, 6, &v, 0, 4).is_err(), "out of bounds");
    }

    #[test]
    fn completion_counter_waits_and_times_out() {
        let t = Tensor::empty("o");
        t.completed_as_output();
        t.wait_completions(1, Some(Duration::ZERO)).unwrap();
        let e = t
            .wait_completions(2, Some(Duration::from_millis(1)))
            .unwrap_err();
        assert_eq!(e.status, NrtStatus::Timeout);
        t.reset_completions();
        assert_eq!(t.completions(), 0);
    }
}
