//! The driver backend: the [`Hal`] trait over the Linux Neuron driver (`/dev/neuronN`), through an
//! injectable syscall layer ([`Syscalls`]).
//!
//! This module owns [`DriverHal`] (docs/ARCHITECTURE.md §2.1, "driver" backend), the syscall layer
//! ([`Syscalls`], [`RealSyscalls`], module `syscalls`) and the runtime-ABI version this platform
//! speaks to the driver ([`runtime_abi_version`]). Every request number and argument struct comes
//! from [`crate::abi`]; every rule from docs/driver.md (section numbers below).
//!
//! # Which ioctl backs which HAL method
//!
//! | HAL method | ioctl(s) |
//! |---|---|
//! | [`discover`] | `open(O_WRONLY)` + `close` of `/dev/neuron0, 1, …` until one does not exist |
//! | [`DriverHal::open`] | `DEVICE_BASIC_INFO` (arch → [`Target`]), `COMPATIBLE_VERSION` (checked), `DRIVER_INFO_GET` (features, optional) |
//! | [`Hal::mem_alloc`] | `MEM_ALLOC_V2MT64` (handle through the out-pointer), then `MEM_GET_EXTENDED_INFO` (rounded size, for accounting) |
//! | [`Hal::mem_free`] | `MEM_FREE` |
//! | [`Hal::mem_info`] | `MEM_GET_EXTENDED_INFO` |
//! | [`Hal::copy_to_device`] / [`Hal::copy_from_device`] | `MEM_BUF_COPY64`, in pieces of [`COPY_PIECE`] bytes |
//! | [`Hal::memset`] | `MEMSET64` |
//! | [`Hal::map`] / [`Hal::unmap`] | `MEM_GET_EXTENDED_INFO`, then `mmap` of the whole allocation at its `mmap_offset` / `munmap` |
//! | [`Hal::dma_queue_init`] | `DMA_QUEUE_INIT` (`rxc_handle` 0) |
//! | [`Hal::dma_queue_copy_start`] | `DMA_QUEUE_COPY_START` |
//! | [`Hal::dma_queue_state`] | `DMA_QUEUE_GET_STATE` (two out-pointers) |
//! | semaphores / events | `SEMAPHORE_READ/WRITE/INCREMENT/DECREMENT`, `EVENT_SET/GET` |
//! | [`Hal::notification_init`] | `NOTIFICATIONS_INIT_V2`, then `MEM_GET_EXTENDED_INFO` on its handle |
//! | [`Hal::nc_reset`] | `NC_RESET` + `NC_RESET_READY` |
//! | [`Hal::wait`] | polls `SEMAPHORE_READ` or `MEM_BUF_COPY64` (see below) |
//! | [`Hal::memory_usage`] | none: the backend's own accounting |
//!
//! # Hazards avoided (docs/driver.md §12)
//!
//! Each is commented where it is avoided. In short: exact request numbers from [`crate::abi::req`]
//! (1); the handle of `MEM_GET_EXTENDED_INFO` is kept in a variable and the `mem_handle` /
//! `version` fields it writes back are ignored, and a positive return is an error (2); host
//! allocations are never sent with a non-zero `align` (3); `rxc_handle` is always 0 (4);
//! `DMA_QUEUE_COPY_START` is never issued with `rx_desc_count == 0` or on a queue this backend
//! has not initialised (5); `DMA_ACK_COMPLETED` is never issued (6); copies are split below 4 GiB
//! (7); `DMA_DESCRIPTOR_COPYOUT` and `NOTIFICATIONS_QUEUE_INFO` are not used (8, 9); event and
//! semaphore indices and cores are validated before the call (11).
//!
//! # Errors
//!
//! A negative errno becomes [`HalError::Os`] with the ioctl's name ([`Ioctl::name`]); a positive
//! return where the ABI expects 0 also becomes [`HalError::Os`], with `errno` = that positive
//! value (docs/driver.md §2.3). `ENOMEM` from an allocation is [`HalError::OutOfMemory`]. Arguments the
//! backend refuses before calling the driver (because the driver would misbehave on them) are
//! [`HalError::InvalidArgument`].
//!
//! # Waiting and accounting
//!
//! The real device runs by itself, so [`Hal::wait`] polls: `SEMAPHORE_READ` for a semaphore
//! condition, a 4-byte `MEM_BUF_COPY64` from the device for a memory condition, with a short
//! back-off between polls (a few immediate re-polls, then sleeps from 1 µs doubling to 1 ms)
//! until the condition holds or the timeout passes.
//!
//! [`Hal::memory_usage`] comes from this backend's own record of what it allocated (including
//! notification queues, accounted as the driver does under `NOTIFICATION_{HOST,DEVICE}`), since
//! the driver's sysfs counters are not part of the ioctl ABI and not available to the emulation.

mod syscalls;

use std::collections::BTreeMap;
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

pub use nix::errno::Errno;
pub use nix::fcntl::OFlag;
pub use syscalls::{RealSyscalls, Syscalls};

use zerocopy::{FromBytes, Immutable, IntoBytes};

use crate::abi::{self, Ioctl, MemAllocCategory, NqDeviceType, QueueSwStatus};
use crate::check::{self, Probe};
use crate::hal::{
    AllocRequest, CoreMemUsage, DeviceInfo, Mapping, MemInfo, MemLocation, NotificationQueue,
    NqRequest, QueueState, QueueStatus, RingSpec, WaitCondition,
};
use crate::{EventId, Hal, HalError, HalResult, MemHandle, NcIndex, QueueRef, SemaphoreId, Target};

/// The runtime-ABI version this platform speaks to a trn1 (v2) driver. Same number as
/// `nrt_runtime::abi_version(Target::Trn1)`; the driver accepts 5..=7 (docs/driver.md §10).
pub const RUNTIME_ABI_VERSION_TRN1: u32 = 7;
/// The runtime-ABI version this platform speaks to a trn2 (v3) driver. Same number as
/// `nrt_runtime::abi_version(Target::Trn2)`; the driver accepts 10..=11 (docs/driver.md §10).
pub const RUNTIME_ABI_VERSION_TRN2: u32 = 11;

/// The runtime-ABI version this platform speaks to a driver of `target`.
pub const fn runtime_abi_version(target: Target) -> u32 {
    match target {
        Target::Trn1 => RUNTIME_ABI_VERSION_TRN1,
        Target::Trn2 => RUNTIME_ABI_VERSION_TRN2,
    }
}

/// Largest piece of one `MEM_BUF_COPY64`. The driver's device-memory copy loop counts in 32 bits
/// and silently truncates sizes ≥ 4 GiB (hazard 7); 1 GiB pieces stay well below that.
pub const COPY_PIECE: u64 = 1 << 30;

/// The pieces `(offset into the transfer, length)` a copy of `len` bytes is split into: each at
/// most [`COPY_PIECE`] bytes, in order, covering `0..len` exactly. Empty for `len == 0`.
pub fn copy_pieces(len: u64) -> impl Iterator<Item = (u64, u64)> {
    (0..len.div_ceil(COPY_PIECE)).map(move |i| {
        let off = i * COPY_PIECE;
        (off, COPY_PIECE.min(len - off))
    })
}

/// The device node of device `index`: `/dev/neuron<index>` (docs/driver.md §10).
pub fn device_path(index: u32) -> String {
    format!("/dev/neuron{index}")
}

/// Most device nodes [`discover`] probes (`/dev/neuron0` … `/dev/neuron63`).
pub const MAX_DEVICES: u32 = 64;

/// Device discovery: the indices `N` of the device nodes `/dev/neuron<N>` that open, probing
/// `0, 1, …` up to [`MAX_DEVICES`] and stopping at the first node that does not exist (the driver
/// numbers its devices densely from 0, docs/driver.md §10). A node that exists but cannot be opened (busy,
/// permission) is skipped, not reported. Each probe opens the node as a misc fd (`O_WRONLY`,
/// which does not attach the process to the device, docs/driver.md §10) and closes it at once.
pub fn discover(sys: &dyn Syscalls) -> Vec<u32> {
    let mut found = Vec::new();
    for index in 0..MAX_DEVICES {
        match sys.open(&device_path(index), OFlag::O_WRONLY | OFlag::O_CLOEXEC) {
            Ok(fd) => {
                // Nothing to do about a failed close of a probe descriptor.
                let _ = sys.close(fd);
                found.push(index);
            }
            Err(Errno::ENOENT) | Err(Errno::ENODEV) | Err(Errno::ENXIO) => break,
            Err(_) => {}
        }
    }
    found
}

/// Argument structs without user pointers: the driver only reads and writes the struct itself, so
/// passing one to `ioctl` is safe whatever its field values.
trait PlainArg: FromBytes + IntoBytes + Immutable {}
impl PlainArg for abi::CompatibleVersion {}
impl PlainArg for abi::DeviceBasicInfo {}
impl PlainArg for abi::DeviceDriverInfo {}
impl PlainArg for abi::MemFree {}
impl PlainArg for abi::MemGetExtendedInfo {}
impl PlainArg for abi::Memset64 {}
impl PlainArg for abi::DmaQueueInit {}
impl PlainArg for abi::DmaQueueCopyStart {}
impl PlainArg for abi::Semaphore {}
impl PlainArg for abi::Event {}
impl PlainArg for abi::NotificationsInitV2 {}
impl PlainArg for abi::DeviceReset {}
impl PlainArg for abi::DeviceReady {}

/// An open device node; closed on drop.
struct DeviceFd {
    sys: Arc<dyn Syscalls>,
    fd: RawFd,
}

impl Drop for DeviceFd {
    fn drop(&mut self) {
        // Nothing useful can be done about a failing close at drop time.
        let _ = self.sys.close(self.fd);
    }
}

/// What this backend knows about one allocation it made (or a notification queue it obtained).
#[derive(Debug, Clone, Copy)]
struct AllocRecord {
    nc: NcIndex,
    category: MemAllocCategory,
    /// Rounded size (from `MEM_GET_EXTENDED_INFO`).
    size: u64,
    location: MemLocation,
    /// For notification-queue memory: the queue size reported to the caller.
    nq_size: Option<u32>,
}

#[derive(Debug, Default)]
struct State {
    /// Live allocations by raw handle.
    allocs: BTreeMap<u64, AllocRecord>,
    /// Queues this backend initialised, with their (TX, RX) ring lengths.
    queues: BTreeMap<QueueRef, (u32, u32)>,
}

/// The [`Hal`] over the Linux Neuron driver. See the module docs.
pub struct DriverHal {
    fd: DeviceFd,
    device: u32,
    info: DeviceInfo,
    features: Option<abi::DriverFeatures>,
    state: Mutex<State>,
}

impl std::fmt::Debug for DriverHal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DriverHal")
            .field("device", &self.device)
            .field("fd", &self.fd.fd)
            .field("target", &self.info.target)
            .finish()
    }
}

fn os_error(ioctl: &'static str, e: Errno) -> HalError {
    HalError::Os {
        ioctl,
        errno: e as i32,
        message: e.desc().to_string(),
    }
}

/// A positive return where the ABI expects 0 (docs/driver.md §2.3): a `copy_to_user` residue or a positive
/// errno such as `MEM_GET_EXTENDED_INFO`'s 22 for a bad handle.
fn positive_error(ioctl: Ioctl, n: i32) -> HalError {
    let what = if ioctl == Ioctl::MemGetExtendedInfo && n == Errno::EINVAL as i32 {
        "bad memory handle".to_string()
    } else {
        format!("{} or {n} bytes not copied", Errno::from_raw(n).desc())
    };
    HalError::Os {
        ioctl: ioctl.name(),
        errno: n,
        message: format!("driver returned positive {n} instead of 0 ({what})"),
    }
}

impl DriverHal {
    /// SEMAPHORE_INCREMENT / DECREMENT: the 12-byte `{nc, index, value}` struct, although the
    /// request number encodes 8 (a pointer-typed macro, docs/driver.md §2.2).
    fn semaphore_store(
        &self,
        ioctl: Ioctl,
        op: &'static str,
        nc: NcIndex,
        sem: SemaphoreId,
        value: u32,
    ) -> HalResult<()> {
        self.check_sem(op, nc, sem)?;
        let mut a = abi::Semaphore {
            nc_id: nc.0,
            semaphore_index: sem.0,
            value,
        };
        self.call(ioctl, &mut a)
    }

    /// Opens `/dev/neuron<device>` through `sys` and checks the driver: its architecture must be
    /// trn1 (2) or trn2 (3), and its COMPATIBLE_VERSION range must contain
    /// [`runtime_abi_version`] of that target.
    pub fn open(device: u32, sys: Arc<dyn Syscalls>) -> HalResult<DriverHal> {
        Self::open_inner(device, sys, None)
    }

    /// [`DriverHal::open`], claiming runtime-ABI version `abi_version` instead of this platform's
    /// own (for testing the version check, or a runtime that speaks another version).
    pub fn open_with_abi_version(
        device: u32,
        sys: Arc<dyn Syscalls>,
        abi_version: u32,
    ) -> HalResult<DriverHal> {
        Self::open_inner(device, sys, Some(abi_version))
    }

    fn open_inner(
        device: u32,
        sys: Arc<dyn Syscalls>,
        abi_version: Option<u32>,
    ) -> HalResult<DriverHal> {
        let path = device_path(device);
        // A normal (read-write) fd attaches the process; O_WRONLY would give a misc fd on which
        // most ioctls fail (docs/driver.md §10).
        let raw = sys
            .open(&path, OFlag::O_RDWR | OFlag::O_CLOEXEC)
            .map_err(|e| HalError::Os {
                ioctl: "open",
                errno: e as i32,
                message: format!("{path}: {}", e.desc()),
            })?;
        let fd = DeviceFd { sys, fd: raw };

        let mut basic = abi::DeviceBasicInfo::default();
        call_plain(&fd, Ioctl::DeviceBasicInfo, &mut basic)?;
        let target = Target::from_arch(basic.architecture).ok_or_else(|| HalError::Os {
            ioctl: Ioctl::DeviceBasicInfo.name(),
            errno: Errno::ENODEV as i32,
            message: format!(
                "{path}: driver architecture {} is not supported (nrt-emu drives trn1 = 2 and \
                 trn2 = 3)",
                basic.architecture
            ),
        })?;

        // Struct order is {max, min} (docs/driver.md §3.7); the zerocopy type names the fields, so they
        // cannot be swapped here.
        let mut compat = abi::CompatibleVersion::default();
        call_plain(&fd, Ioctl::CompatibleVersion, &mut compat)?;
        let ours = abi_version.unwrap_or(runtime_abi_version(target));
        if !compat.contains(ours) {
            return Err(HalError::Os {
                ioctl: Ioctl::CompatibleVersion.name(),
                errno: Errno::EPROTO as i32,
                message: format!(
                    "{path}: the {target} driver accepts runtime ABI versions {}..={}, this \
                     runtime speaks {ours}; refusing to use the device",
                    compat.min, compat.max
                ),
            });
        }

        // Optional: the driver's feature flags ([`DriverHal::features`]).
        let mut drv = abi::DeviceDriverInfo::default();
        let features = call_plain(&fd, Ioctl::DriverInfoGet, &mut drv)
            .ok()
            .map(|()| drv.features());

        let spec = target.spec();
        let info = DeviceInfo {
            target,
            revision: basic.revision,
            nc_count: spec.nc_count,
            abi_version_range: (compat.min, compat.max),
        };
        Ok(DriverHal {
            fd,
            device,
            info,
            features,
            state: Mutex::new(State::default()),
        })
    }

    /// The device index (`N` of `/dev/neuronN`).
    pub fn device_index(&self) -> u32 {
        self.device
    }

    /// The driver's feature flags (`DRIVER_INFO_GET`), if it answered.
    pub fn features(&self) -> Option<abi::DriverFeatures> {
        self.features
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn target(&self) -> Target {
        self.info.target
    }

    fn check_nc(&self, op: &'static str, nc: NcIndex) -> HalResult<()> {
        check::core(self.target(), op, nc)
    }

    fn check_sem(&self, op: &'static str, nc: NcIndex, sem: SemaphoreId) -> HalResult<()> {
        check::semaphore(self.target(), op, nc, sem)
    }

    fn check_event(&self, op: &'static str, nc: NcIndex, event: EventId) -> HalResult<()> {
        // Hazard 11: the driver does not validate nc_id for events and accepts index 256 (its
        // check is `index > count`); both would touch an unrelated register.
        check::event(self.target(), op, nc, event)
    }

    fn check_queue(&self, op: &'static str, q: QueueRef) -> HalResult<()> {
        check::queue(self.target(), op, q)
    }

    fn call<T: PlainArg>(&self, ioctl: Ioctl, arg: &mut T) -> HalResult<()> {
        call_plain(&self.fd, ioctl, arg)
    }

    /// `MEM_GET_EXTENDED_INFO` on `handle`.
    fn extended_info(&self, handle: MemHandle) -> HalResult<abi::MemGetExtendedInfo> {
        let mut a = abi::MemGetExtendedInfo {
            mem_handle: handle.raw(),
            version: abi::MEM_GET_EXTENDED_INFO_VERSION,
            ..Default::default()
        };
        // Hazard 2: a bad handle returns positive 22, which `call` reports as an error; on
        // success the driver overwrites `mem_handle` with a kernel pointer and `version` with
        // stack garbage, so neither is read back — the caller keeps `handle`.
        self.call(Ioctl::MemGetExtendedInfo, &mut a)?;
        Ok(a)
    }

    /// One `MEM_BUF_COPY64` of `len` bytes between `buf` and the allocation at `offset`.
    ///
    /// # Safety
    ///
    /// `buf` is valid for reads of `len` bytes (`to_device`) or writes of `len` bytes (not
    /// `to_device`), and nothing else accesses it during the call.
    unsafe fn buf_copy(
        &self,
        handle: MemHandle,
        offset: u64,
        buf: *mut u8,
        len: u64,
        to_device: bool,
    ) -> HalResult<()> {
        let mut a = abi::MemBufCopy64 {
            mem_handle: handle.raw(),
            buffer: buf as u64,
            size: len,
            offset,
            copy_to_mem_handle: u32::from(to_device),
            _pad0: [0; 4],
        };
        // SAFETY: `a.buffer` is valid for `len` bytes in the direction the driver uses it
        // (this function's contract); the struct itself is a live local.
        unsafe { call_with_pointers(&self.fd, Ioctl::MemBufCopy64, &mut a) }
    }

    /// Copies `len` bytes between `buf` and the allocation in pieces below 4 GiB (hazard 7).
    ///
    /// # Safety
    ///
    /// As [`DriverHal::buf_copy`] for the whole `len`.
    unsafe fn copy(
        &self,
        op: &'static str,
        handle: MemHandle,
        offset: u64,
        buf: *mut u8,
        len: u64,
        to_device: bool,
    ) -> HalResult<()> {
        // Refuse a copy that runs past a known allocation before any piece is sent, so a bad
        // request never leaves a partial copy behind (the driver would refuse only the piece
        // that crosses the end).
        if let Some(rec) = self.lock().allocs.get(&handle.raw()) {
            if offset.checked_add(len).is_none_or(|end| end > rec.size) {
                return Err(check::invalid(
                    op,
                    format!(
                        "{len:#x} bytes at offset {offset:#x} exceed the allocation's {:#x} bytes",
                        rec.size
                    ),
                ));
            }
        }
        for (off, n) in copy_pieces(len) {
            let piece_offset = offset
                .checked_add(off)
                .ok_or_else(|| check::invalid(op, "offset overflows"))?;
            // SAFETY: `off + n <= len`, so the piece lies inside the buffer of this function's
            // contract (and `off < len` fits a usize because the buffer exists).
            unsafe {
                self.buf_copy(handle, piece_offset, buf.add(off as usize), n, to_device)?;
            }
        }
        Ok(())
    }

    fn read_u32(&self, handle: MemHandle, offset: u64) -> HalResult<u32> {
        let mut b = [0u8; 4];
        self.copy_from_device(handle, offset, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    fn condition_holds(&self, cond: &WaitCondition) -> HalResult<bool> {
        cond.holds(|probe| match probe {
            Probe::Semaphore { nc, sem } => Ok(self.semaphore_read(nc, sem)? as u32),
            Probe::Word { handle, offset } => self.read_u32(handle, offset),
        })
    }
}

/// Issues `ioctl` with a pointer-free argument struct.
fn call_plain<T: PlainArg>(fd: &DeviceFd, ioctl: Ioctl, arg: &mut T) -> HalResult<()> {
    // SAFETY: `T: PlainArg` has no user pointers, so the only memory the driver touches is the
    // struct itself, a live exclusive borrow.
    unsafe { call_with_pointers(fd, ioctl, arg) }
}

/// Issues `ioctl` with `arg` and turns the result into a [`HalResult`]: 0 is success, a negative
/// errno or a positive return is [`HalError::Os`] (docs/driver.md §2.3).
///
/// # Safety
///
/// Every user pointer inside `arg` is valid for the access the driver makes through it during the
/// call (see [`Syscalls::ioctl`]).
unsafe fn call_with_pointers<T: FromBytes + IntoBytes + Immutable>(
    fd: &DeviceFd,
    ioctl: Ioctl,
    arg: &mut T,
) -> HalResult<()> {
    // The driver copies `arg_size` bytes, which for pointer-typed macros is not the size
    // encoded in the request (e.g. the semaphore ioctls encode 8 but copy the 12-byte struct).
    debug_assert_eq!(ioctl.arg_size(), Some(core::mem::size_of::<T>()));
    let ptr = arg.as_mut_bytes().as_mut_ptr();
    // SAFETY: `ptr` addresses `size_of::<T>()` bytes of an exclusively borrowed struct, the
    // argument struct of this request (asserted above); the pointers inside it are valid by this
    // function's contract. Hazard 1: `ioctl.request()` is the exact number from `abi::req`.
    let r = unsafe { fd.sys.ioctl(fd.fd, ioctl.request(), ptr) };
    match r {
        Ok(0) => Ok(()),
        Ok(n) => Err(positive_error(ioctl, n)),
        Err(e) => Err(os_error(ioctl.name(), e)),
    }
}

/// The pause before poll number `n` (1-based) of [`Hal::wait`]: the first 32 re-polls are
/// immediate (a yield), then sleeps start at 1 µs and double up to 1 ms.
fn poll_pause(n: u32) -> Duration {
    const SPIN: u32 = 32;
    if n <= SPIN {
        Duration::ZERO
    } else {
        Duration::from_micros(1u64 << (n - SPIN - 1).min(10)).min(Duration::from_millis(1))
    }
}

impl Hal for DriverHal {
    fn device_info(&self) -> HalResult<DeviceInfo> {
        Ok(self.info.clone())
    }

    fn mem_alloc(&self, req: &AllocRequest) -> HalResult<MemHandle> {
        const OP: &str = "MEM_ALLOC_V2MT64";
        self.check_nc(OP, req.nc)?;
        let (host, channel) = match req.location {
            MemLocation::Host => (true, 0),
            MemLocation::Device { channel } => (false, channel),
        };
        if host && req.align != 0 {
            // Hazard 3: the driver returns -EINVAL for a host allocation with align != 0.
            return Err(check::invalid(OP, "alignment must be 0 for host memory"));
        }
        let mut out: u64 = 0;
        let mut a = abi::MemAllocV2Mt64 {
            size: req.size,
            align: req.align,
            host_memory: u32::from(host),
            // Checked against the channel count even for host memory; 0 is always valid.
            dram_channel: channel,
            dram_region: 0,
            nc_id: req.nc.0,
            mem_type: req.category.raw(),
            _pad0: [0; 4],
            mem_handle: &mut out as *mut u64 as u64,
            pad: 0,
            _pad1: [0; 4],
        };
        let mut st = self.lock();
        // SAFETY: `a.mem_handle` points to `out`, a live local u64 the driver writes 8 bytes
        // into; nothing else touches it during the call.
        let r = unsafe { call_with_pointers(&self.fd, Ioctl::MemAllocV2Mt64, &mut a) };
        match r {
            Ok(()) => {}
            Err(HalError::Os { errno, .. }) if errno == Errno::ENOMEM as i32 => {
                return Err(HalError::OutOfMemory {
                    requested: req.size,
                    location: req.location,
                })
            }
            Err(e) => return Err(e),
        }
        // The handle comes only through the out-pointer; nothing is written into the struct.
        let handle = MemHandle::new(out).ok_or_else(|| HalError::Os {
            ioctl: OP,
            errno: 0,
            message: "driver reported success but wrote handle 0".into(),
        })?;
        let size = match self.extended_info(handle) {
            Ok(x) => x.size,
            Err(e) => {
                let mut f = abi::MemFree {
                    mem_handle: handle.raw(),
                };
                let _ = self.call(Ioctl::MemFree, &mut f);
                return Err(e);
            }
        };
        st.allocs.insert(
            handle.raw(),
            AllocRecord {
                nc: req.nc,
                category: req.category,
                size,
                location: req.location,
                nq_size: None,
            },
        );
        Ok(handle)
    }

    fn mem_free(&self, handle: MemHandle) -> HalResult<()> {
        let mut st = self.lock();
        let mut a = abi::MemFree {
            mem_handle: handle.raw(),
        };
        self.call(Ioctl::MemFree, &mut a)?;
        st.allocs.remove(&handle.raw());
        Ok(())
    }

    fn mem_info(&self, handle: MemHandle) -> HalResult<MemInfo> {
        let x = self.extended_info(handle)?;
        let rec = self.lock().allocs.get(&handle.raw()).copied();
        let location = match rec {
            Some(r) => r.location,
            None if x.host_memory != 0 => MemLocation::Host,
            None => MemLocation::Device {
                channel: self
                    .target()
                    .hbm_channel_at(crate::DeviceAddr::new(x.pa))
                    .unwrap_or(0),
            },
        };
        Ok(MemInfo {
            pa: crate::DeviceAddr::new(x.pa),
            size: x.size,
            location,
            // Not allocated through this backend: the driver does not say; report core 0 and the
            // unknown category of the location.
            nc: rec.map_or(NcIndex(0), |r| r.nc),
            category: rec.map_or(
                MemAllocCategory::from_raw(u32::MAX, location == MemLocation::Host),
                |r| r.category,
            ),
        })
    }

    fn copy_to_device(&self, handle: MemHandle, offset: u64, src: &[u8]) -> HalResult<()> {
        // SAFETY: `src` is valid for reads of `src.len()` bytes for the whole call, and with
        // `copy_to_mem_handle = 1` the driver only reads the buffer.
        unsafe {
            self.copy(
                "copy_to_device",
                handle,
                offset,
                src.as_ptr().cast_mut(),
                src.len() as u64,
                true,
            )
        }
    }

    fn copy_from_device(&self, handle: MemHandle, offset: u64, dst: &mut [u8]) -> HalResult<()> {
        // SAFETY: `dst` is an exclusive borrow valid for writes of `dst.len()` bytes for the
        // whole call, and not otherwise used until it returns.
        unsafe {
            self.copy(
                "copy_from_device",
                handle,
                offset,
                dst.as_mut_ptr(),
                dst.len() as u64,
                false,
            )
        }
    }

    fn memset(&self, handle: MemHandle, offset: u64, value: u8, size: u64) -> HalResult<()> {
        let mut a = abi::Memset64 {
            mem_handle: handle.raw(),
            offset,
            // The driver fills with the low byte of `value`.
            value: u32::from(value),
            _pad0: [0; 4],
            size,
        };
        self.call(Ioctl::Memset64, &mut a)
    }

    unsafe fn map(&self, handle: MemHandle) -> HalResult<Mapping> {
        let x = self.extended_info(handle)?;
        let len = usize::try_from(x.size).map_err(|_| {
            check::invalid("mmap", format!("{:#x} bytes do not fit a usize", x.size))
        })?;
        // The driver refuses partial maps: the length is the whole (rounded) allocation and the
        // offset its mmap_offset (= pa, docs/driver.md §7).
        // SAFETY: the caller of `map` takes on the `# Safety` contract of `Hal::map`, which is the
        // contract `Syscalls::mmap` asks for.
        let ptr = unsafe { self.fd.sys.mmap(self.fd.fd, len, x.mmap_offset) }
            .map_err(|e| os_error("mmap", e))?;
        Ok(Mapping { handle, ptr, len })
    }

    unsafe fn unmap(&self, mapping: Mapping) -> HalResult<()> {
        // SAFETY: per `Hal::unmap`'s contract the mapping came from `map` above (one `mmap` of
        // exactly `ptr`/`len`) and is no longer referenced.
        unsafe { self.fd.sys.munmap(mapping.ptr, mapping.len) }.map_err(|e| os_error("munmap", e))
    }

    fn dma_queue_init(&self, queue: QueueRef, tx: RingSpec, rx: RingSpec) -> HalResult<()> {
        const OP: &str = "DMA_QUEUE_INIT";
        self.check_queue(OP, queue)?;
        // Ring sizes follow the udma rules (docs/driver.md §4.4: 32 ≤ count ≤ 2^24 − 16, multiple of 16)
        // before the call; the driver would fail with an opaque -1. A power of two is not
        // required since runtime ABI 7, which both targets' versions are.
        check::rings(OP, tx, rx)?;
        let mut a = abi::DmaQueueInit {
            eng_id: queue.engine.global(queue.nc),
            qid: queue.queue.0,
            tx_desc_count: tx.count,
            rx_desc_count: rx.count,
            tx_handle: tx.handle.raw(),
            rx_handle: rx.handle.raw(),
            // Hazard 4: completion rings are unsupported; a non-zero handle fails with -1.
            rxc_handle: 0,
            axi_port: 0,
            _pad0: [0; 4],
        };
        let mut st = self.lock();
        self.call(Ioctl::DmaQueueInit, &mut a)?;
        st.queues.insert(queue, (tx.count, rx.count));
        Ok(())
    }

    fn dma_queue_copy_start(&self, queue: QueueRef, tx_count: u32, rx_count: u32) -> HalResult<()> {
        const OP: &str = "DMA_QUEUE_COPY_START";
        self.check_queue(OP, queue)?;
        // Hazard 5: rx_desc_count == 0, or a queue without an RX ring, hits a kernel BUG_ON.
        check::copy_start(OP, rx_count)?;
        let Some((tx_len, rx_len)) = self.lock().queues.get(&queue).copied() else {
            return Err(check::invalid(
                OP,
                format!("queue {queue} was not initialised through this backend"),
            ));
        };
        if tx_count > tx_len || rx_count > rx_len {
            return Err(check::invalid(
                OP,
                format!(
                    "counts tx {tx_count} / rx {rx_count} exceed the ring sizes {tx_len} / {rx_len}"
                ),
            ));
        }
        let mut a = abi::DmaQueueCopyStart {
            eng_id: queue.engine.global(queue.nc),
            qid: queue.queue.0,
            tx_desc_count: tx_count,
            rx_desc_count: rx_count,
        };
        self.call(Ioctl::DmaQueueCopyStart, &mut a)
    }

    fn dma_queue_state(&self, queue: QueueRef) -> HalResult<QueueState> {
        const OP: &str = "DMA_QUEUE_GET_STATE";
        // The driver reads registers without validating eng_id / qid (docs/driver.md §4.7).
        self.check_queue(OP, queue)?;
        let mut tx = abi::DmaQueueState::default();
        let mut rx = abi::DmaQueueState::default();
        let mut a = abi::DmaQueueGetState {
            eng_id: queue.engine.global(queue.nc),
            qid: queue.queue.0,
            tx: &mut tx as *mut abi::DmaQueueState as u64,
            rx: &mut rx as *mut abi::DmaQueueState as u64,
        };
        // SAFETY: `a.tx` / `a.rx` point to two distinct live locals of the 48-byte
        // `neuron_dma_queue_state` the driver writes; nothing else accesses them meanwhile.
        unsafe { call_with_pointers(&self.fd, Ioctl::DmaQueueGetState, &mut a) }?;
        let status = match QueueSwStatus::from_raw(tx.sw_status) {
            Some(QueueSwStatus::Disabled) => QueueStatus::Disabled,
            Some(QueueSwStatus::Enabled) => QueueStatus::Enabled,
            Some(QueueSwStatus::Aborted) => QueueStatus::Aborted,
            None => {
                return Err(HalError::DeviceFault {
                    nc: Some(queue.nc),
                    reason: format!("queue {queue}: unknown sw_status {}", tx.sw_status),
                })
            }
        };
        const PTR_MASK: u32 = 0x00FF_FFFF; // 24-bit ring offsets
        Ok(QueueState {
            status,
            tx_head: tx.head_pointer & PTR_MASK,
            tx_tail: tx.tail_pointer & PTR_MASK,
            rx_head: rx.head_pointer & PTR_MASK,
            rx_tail: rx.tail_pointer & PTR_MASK,
        })
    }

    fn semaphore_read(&self, nc: NcIndex, sem: SemaphoreId) -> HalResult<i32> {
        self.check_sem("SEMAPHORE_READ", nc, sem)?;
        // The request number encodes size 8 (pointer-typed macro) but the driver copies the
        // 12-byte struct: pass the whole struct (hazard 1).
        let mut a = abi::Semaphore {
            nc_id: nc.0,
            semaphore_index: sem.0,
            value: 0,
        };
        self.call(Ioctl::SemaphoreRead, &mut a)?;
        Ok(a.value as i32)
    }

    fn semaphore_write(&self, nc: NcIndex, sem: SemaphoreId, value: i32) -> HalResult<()> {
        self.check_sem("SEMAPHORE_WRITE", nc, sem)?;
        let mut a = abi::Semaphore {
            nc_id: nc.0,
            semaphore_index: sem.0,
            value: value as u32,
        };
        self.call(Ioctl::SemaphoreWrite, &mut a)
    }

    fn semaphore_increment(&self, nc: NcIndex, sem: SemaphoreId, amount: u32) -> HalResult<()> {
        self.semaphore_store(
            Ioctl::SemaphoreIncrement,
            "SEMAPHORE_INCREMENT",
            nc,
            sem,
            amount,
        )
    }

    fn semaphore_decrement(&self, nc: NcIndex, sem: SemaphoreId, amount: u32) -> HalResult<()> {
        self.semaphore_store(
            Ioctl::SemaphoreDecrement,
            "SEMAPHORE_DECREMENT",
            nc,
            sem,
            amount,
        )
    }

    fn event_set(&self, nc: NcIndex, event: EventId, value: u32) -> HalResult<()> {
        self.check_event("EVENT_SET", nc, event)?;
        let mut a = abi::Event {
            nc_id: nc.0,
            event_index: event.0,
            value,
        };
        self.call(Ioctl::EventSet, &mut a)
    }

    fn event_get(&self, nc: NcIndex, event: EventId) -> HalResult<u32> {
        self.check_event("EVENT_GET", nc, event)?;
        let mut a = abi::Event {
            nc_id: nc.0,
            event_index: event.0,
            value: 0,
        };
        self.call(Ioctl::EventGet, &mut a)?;
        Ok(a.value)
    }

    fn notification_init(&self, req: &NqRequest) -> HalResult<NotificationQueue> {
        const OP: &str = "NOTIFICATIONS_INIT_V2";
        // The driver lets size 0 through its power-of-two check.
        check::notification(self.target(), OP, req)?;
        let (host, channel) = match req.location {
            MemLocation::Host => (true, 0),
            MemLocation::Device { channel } => (false, channel),
        };
        let mut a = abi::NotificationsInitV2 {
            nq_dev_id: req.nc.0,
            nq_dev_type: NqDeviceType::NeuronCore.raw(),
            nq_type: req.nq_type.raw(),
            engine_index: req.engine_index,
            size: req.size,
            on_host_memory: u32::from(host),
            dram_channel: channel,
            dram_region: 0,
            mmap_offset: 0,
            mem_handle: 0,
        };
        let mut st = self.lock();
        self.call(Ioctl::NotificationsInitV2, &mut a)?;
        let handle = MemHandle::new(a.mem_handle).ok_or_else(|| HalError::Os {
            ioctl: OP,
            errno: 0,
            message: "driver reported success but returned handle 0".into(),
        })?;
        // A device NQ reports mmap_offset -1; its handle still works with
        // MEM_GET_EXTENDED_INFO, whose pa/mmap_offset map it (docs/driver.md §6). One call serves both
        // kinds and also gives the rounded size for accounting.
        let x = self.extended_info(handle)?;
        if a.mmap_offset != abi::NQ_DEVICE_MMAP_OFFSET && a.mmap_offset != x.mmap_offset {
            return Err(HalError::Os {
                ioctl: OP,
                errno: 0,
                message: format!(
                    "host NQ mmap_offset {:#x} differs from its memory's {:#x}",
                    a.mmap_offset, x.mmap_offset
                ),
            });
        }
        // The driver reuses an existing queue's memory even if the size differs (docs/driver.md §6);
        // report the size of the queue that exists, as the simulator does.
        let size = match st.allocs.get(&handle.raw()).and_then(|r| r.nq_size) {
            Some(s) => s,
            None => {
                st.allocs.insert(
                    handle.raw(),
                    AllocRecord {
                        nc: req.nc,
                        category: if host {
                            MemAllocCategory::NotificationHost
                        } else {
                            MemAllocCategory::NotificationDevice
                        },
                        size: x.size,
                        location: req.location,
                        nq_size: Some(req.size),
                    },
                );
                req.size
            }
        };
        Ok(NotificationQueue {
            handle,
            pa: crate::DeviceAddr::new(x.pa),
            size,
        })
    }

    fn nc_reset(&self, nc_mask: u32) -> HalResult<()> {
        const OP: &str = "NC_RESET";
        let n = self.info.nc_count;
        let all = if n >= 32 { u32::MAX } else { (1u32 << n) - 1 };
        if nc_mask & !all != 0 {
            return Err(check::invalid(
                OP,
                format!("core mask {nc_mask:#x} names cores this device lacks"),
            ));
        }
        let mut st = self.lock();
        let mut r = abi::DeviceReset {
            nc_map: nc_mask,
            request_id: 0,
        };
        self.call(Ioctl::NcReset, &mut r)?;
        // NC_RESET is asynchronous and returns a request id; NC_RESET_READY blocks until done.
        let mut ready = abi::DeviceReady {
            request_id: r.request_id,
            result: 0,
        };
        self.call(Ioctl::NcResetReady, &mut ready)?;
        match ready.result {
            abi::RESET_RESULT_OK => {}
            abi::RESET_RESULT_FAILED => {
                return Err(HalError::DeviceFault {
                    nc: None,
                    reason: format!("reset of cores {nc_mask:#x} failed"),
                })
            }
            other => {
                let e = Errno::from_raw(-other);
                return Err(HalError::Os {
                    ioctl: Ioctl::NcResetReady.name(),
                    errno: e as i32,
                    message: format!("reset wait returned {other}: {}", e.desc()),
                });
            }
        }
        // The reset destroyed the cores' notification queues (and freed their memory) and
        // reset their DMA queues; allocations survive.
        let reset = |nc: NcIndex| nc_mask & (1 << nc.0) != 0;
        st.allocs
            .retain(|_, r| !(r.nq_size.is_some() && reset(r.nc)));
        st.queues.retain(|q, _| !reset(q.nc));
        Ok(())
    }

    fn wait(&self, cond: &WaitCondition, timeout: Duration) -> HalResult<()> {
        check::wait(self.target(), cond)?;
        let start = Instant::now();
        let mut polls = 0u32;
        loop {
            if self.condition_holds(cond)? {
                return Ok(());
            }
            let waited = start.elapsed();
            if waited >= timeout {
                return Err(HalError::Timeout {
                    what: format!("{cond:?}"),
                    waited,
                });
            }
            polls = polls.saturating_add(1);
            let pause = poll_pause(polls).min(timeout - waited);
            if pause.is_zero() {
                std::thread::yield_now();
            } else {
                std::thread::sleep(pause);
            }
        }
    }

    fn memory_usage(&self, nc: NcIndex) -> HalResult<CoreMemUsage> {
        self.check_nc("memory_usage", nc)?;
        let mut u = CoreMemUsage::default();
        for r in self.lock().allocs.values().filter(|r| r.nc == nc) {
            u.by_category[r.category as usize] += r.size;
            u.allocations += 1;
        }
        Ok(u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_split_below_four_gib() {
        assert_eq!(copy_pieces(0).count(), 0);
        assert_eq!(copy_pieces(5).collect::<Vec<_>>(), vec![(0, 5)]);
        assert_eq!(
            copy_pieces(COPY_PIECE).collect::<Vec<_>>(),
            vec![(0, COPY_PIECE)]
        );
        let len = (5u64 << 30) + 3;
        let pieces: Vec<_> = copy_pieces(len).collect();
        assert_eq!(pieces.len(), 6);
        assert!(pieces.iter().all(|&(_, n)| n > 0 && n < 1 << 32));
        assert_eq!(pieces.last(), Some(&(5 << 30, 3)));
        let mut next = 0;
        for (off, n) in pieces {
            assert_eq!(off, next);
            next += n;
        }
        assert_eq!(next, len);
    }

    #[test]
    fn abi_versions_match_the_driver_ranges() {
        for t in Target::ALL {
            let arch = abi::Arch::from_raw(t.spec().arch).unwrap();
            assert!(arch.compatible_version().contains(runtime_abi_version(t)));
            let (min, max) = t.spec().abi_version_range;
            assert!((min..=max).contains(&runtime_abi_version(t)));
        }
    }

    #[test]
    fn polling_backs_off_to_a_millisecond() {
        assert_eq!(poll_pause(1), Duration::ZERO);
        assert_eq!(poll_pause(32), Duration::ZERO);
        assert_eq!(poll_pause(33), Duration::from_micros(1));
        assert_eq!(poll_pause(34), Duration::from_micros(2));
        assert_eq!(poll_pause(10_000), Duration::from_millis(1));
    }

    #[test]
    fn real_syscalls_reach_the_os() {
        let sys = RealSyscalls;
        // No Neuron device here (skipped on a machine that has one).
        if !std::path::Path::new(&device_path(0)).exists() {
            let e = DriverHal::open(0, Arc::new(RealSyscalls)).unwrap_err();
            assert!(
                matches!(e, HalError::Os { ioctl: "open", errno, .. } if errno == Errno::ENOENT as i32),
                "{e:?}"
            );
        }
        // A Neuron ioctl on a file that is not a Neuron device: ENOTTY through the layer.
        let fd = sys
            .open("/dev/null", OFlag::O_RDWR | OFlag::O_CLOEXEC)
            .unwrap();
        let mut v = abi::CompatibleVersion::default();
        // SAFETY: `v` is the live 8-byte argument struct of the request.
        let r = unsafe {
            sys.ioctl(
                fd,
                Ioctl::CompatibleVersion.request(),
                v.as_mut_bytes().as_mut_ptr(),
            )
        };
        assert_eq!(r, Err(Errno::ENOTTY));
        sys.close(fd).unwrap();
        assert_eq!(sys.close(fd), Err(Errno::EBADF));
        // mmap / munmap of a shared page of /dev/zero.
        let fd = sys
            .open("/dev/zero", OFlag::O_RDWR | OFlag::O_CLOEXEC)
            .unwrap();
        // SAFETY: the fresh mapping is only read below, then unmapped.
        unsafe {
            let p = sys.mmap(fd, 4096, 0).unwrap();
            assert_eq!(*p.as_ptr().add(4095), 0);
            sys.munmap(p, 4096).unwrap();
            assert_eq!(sys.mmap(fd, 0, 0), Err(Errno::EINVAL));
        }
        sys.close(fd).unwrap();
    }

    #[test]
    fn positive_returns_name_the_bad_handle() {
        match positive_error(Ioctl::MemGetExtendedInfo, 22) {
            HalError::Os {
                ioctl,
                errno,
                message,
            } => {
                assert_eq!(ioctl, "MEM_GET_EXTENDED_INFO");
                assert_eq!(errno, 22);
                assert!(message.contains("bad memory handle"), "{message}");
            }
            e => panic!("{e:?}"),
        }
    }
}
