//! # nrt-kabi — kernel-ABI emulation
//!
//! The Neuron driver's `open` / `ioctl` / `mmap` interface answered
//! in-process on top of simulated devices (docs/ARCHITECTURE.md §2.6, "Kernel ABI emulation").
//!
//! [`EmulatedDriver`] implements [`nrt_hal::driver::Syscalls`], the syscall layer under the driver
//! backend [`nrt_hal::driver::DriverHal`], so that backend — the exact request numbers and
//! argument bytes it would send to `/dev/neuronN` — runs against [`Sim`]s: one per device node.
//! Requests are decoded with [`Ioctl::from_request`]; the argument struct is read from the user
//! address (its true size, [`Ioctl::arg_size`]); user pointers inside it (the handle out-pointer
//! of `MEM_ALLOC_*`, the buffer of `MEM_BUF_COPY64`, the out-pointers of `DMA_QUEUE_GET_STATE`, …)
//! are followed in this same address space; results are written back into the struct or through
//! the pointers, with the driver's validation and return conventions (docs/driver.md §2.3).
//!
//! # Driver semantics mirrored
//!
//! * Unknown request numbers: `-EINVAL`. A misc fd (opened `O_WRONLY`) accepts only the misc
//!   ioctls (`COMPATIBLE_VERSION`, `DEVICE_BASIC_INFO`, `DRIVER_INFO_GET/SET`, core claiming,
//!   `DEVICE_BDF_EXT`, `DMABUF_FD`); anything else on it is `-EINVAL` (docs/driver.md §2.2, §10).
//! * `COMPATIBLE_VERSION` writes `{max, min}` per arch (v2 7/5, v3 11/10); `DEVICE_BASIC_INFO`
//!   `{arch, revision}` with revision 240 (the hardware emulator's id); `DRIVER_INFO_GET` flags
//!   `0xFF`.
//! * `MEM_ALLOC_V2MT64` (and `V2MT`, `V2`): `nc_id < 8`, `dram_channel` below the channel count
//!   even for host memory, host memory with `align != 0` → `-EINVAL`; no room → `-ENOMEM`; the
//!   handle (the simulator's, numbered from 1 and recycled LIFO like the driver's) is written
//!   through the `mem_handle` out-pointer only. Out-of-range `mem_type` is relabelled unknown.
//! * `MEM_GET_EXTENDED_INFO` with a bad handle returns **positive 22**; on success it writes back,
//!   like the driver, a kernel-pointer-looking value into `mem_handle`
//!   ([`FAKE_KERNEL_POINTER_BASE`]) and garbage into `version` ([`GARBAGE_VERSION`]) (hazard 2).
//! * `MEM_BUF_COPY64`: bounds `offset + size <= chunk size` (`-EINVAL`); on device memory the
//!   size is truncated to 32 bits after the bounds check, as the driver's loop does (hazard 7).
//! * `DMA_QUEUE_INIT`: `rxc_handle != 0` → `-1` (hazard 4); ring counts outside the udma rules →
//!   `-1` (a udma error). `DMA_QUEUE_COPY_START`: counts above the ring sizes → `-1`.
//! * Semaphore ioctls: `nc_id` (truncated to u8) `<` core count and index (truncated to u16)
//!   `<` 256, else `-EINVAL`. Event ioctls do not validate `nc_id` and check `index > 256`, so
//!   index 256 is **accepted** (hazard 11): such an access, or one to a core the device lacks,
//!   has no effect and reads 0 (the driver would touch an unrelated register).
//! * `NC_RESET` resets the cores at once (mask `0xFFFFFFFF` = all) and returns `request_id` =
//!   the process id; `NC_RESET_READY` reports result 0.
//! * `NOTIFICATIONS_QUEUE_INFO` returns `-1`; `DMA_QUIESCE_QUEUES` `-ENOTTY` (the kernel's
//!   translation of `-ENOIOCTLCMD`); `DRIVER_INFO_SET` `-ENOTSUPP` (524); the deprecated no-ops
//!   return 0.
//! * `mmap(fd, len, offset)`: `offset` is a device-visible address; the allocation containing it
//!   is mapped from its start, and `len` must be the whole chunk size, else `-EINVAL` (docs/driver.md §7). The
//!   pointer returned is the allocation's backing store in the simulator ([`Hal::map`]), so host
//!   writes through it are what the device sees.
//! * Allocations have process lifespan: when the last normal fd of a device is closed *and* its
//!   last mapping is unmapped (a mapping holds a file reference), everything allocated through
//!   the emulation on that device and not yet freed is freed. Notification-queue memory has
//!   device lifespan and survives.
//! * Unknown fd: `-EBADF`.
//!
//! # Deviations (documented choices)
//!
//! * `DMA_QUEUE_COPY_START` with `rx_desc_count == 0`, or on a queue that was never initialised
//!   (no RX ring), is a **kernel BUG** in the driver (hazard 5); here it is refused with
//!   `-EINVAL`. Likewise `DMA_ACK_COMPLETED` on a non-power-of-two ring (hazard 6).
//! * Only the cores' own DMA engines exist (`eng_id < 16 × cores`); the host engines (v2 32/33,
//!   v3 128–131) and TOP_SP notification queues are not modelled: `-EINVAL`. A queue must have
//!   both a TX and an RX ring (handle 0 → `-EINVAL`).
//! * `DMA_QUEUE_GET_STATE` validates `eng_id` / `qid` (`-EINVAL`), which the driver does not.
//!   `base_addr` / `length` come from the last `DMA_QUEUE_INIT` through this emulation.
//! * A null user pointer where the driver would `copy_{from,to}_user` gives `-EFAULT`; other bad
//!   user pointers cannot be detected in-process — that is the `# Safety` contract of
//!   [`Syscalls::ioctl`].
//! * Ioctls this module recognises but does not emulate (BAR access, `PROGRAM_ENGINE*`,
//!   `MEM_COPY*`, `DMA_COPY_DESCRIPTORS*`, the 32-bit copy / memset variants, core claiming, pod
//!   and scrub ioctls, …) return `-ENOSYS`, distinct from the driver's `-EINVAL` for an unknown
//!   number.
//!
//! # Time
//!
//! The real device runs by itself; the simulator advances only when asked (docs/ARCHITECTURE.md §4). So that
//! the driver backend's polling waits make progress, every ioctl that *observes* the device
//! (`SEMAPHORE_READ`, `EVENT_GET`, `DMA_QUEUE_GET_STATE`, `MEM_BUF_COPY64` from the device) first
//! runs up to [`EmulatedDriver::advance_budget`] pending device events ([`Sim::advance`]). The
//! device's own timeline stays deterministic; only how far it has got when the host looks
//! depends on the polling.

//!
//! # Counters and the sysfs tree
//!
//! The driver also reports each device through sysfs: fixed facts and per-core counters of
//! memory in use, executions and resets (docs/driver.md §13). The emulation keeps those
//! counters live ([`EmulatedDriver::counters`]): after every ioctl that allocates or frees
//! memory it copies each simulator's per-core memory accounting, after every ioctl that lets the
//! device run it copies each core's execution totals ([`nrt_sim::Sim::core_activity`]), and it
//! counts core-reset requests and open descriptors itself.
//!
//! | module | owns |
//! |---|---|
//! | [`counters`] | the counters of one device as a flat array of atomic words, and snapshots of them |
//! | [`sysfs`] | the tree under `/sys/devices/virtual/neuron_device/`, `/sys/class/neuron_device/`, `/sys/module/neuron/`: what exists and what each file reads |
//! | [`registry`] | counters published in shared files, so that every process sees every process's devices |

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod counters;
pub mod registry;
pub mod sysfs;

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard};

/// The fields every `MEM_ALLOC_V2*` variant shares (they differ only in `mem_type` and size).
macro_rules! alloc_args {
    ($a:expr, $mem_type:expr) => {
        AllocArgs {
            size: $a.size,
            align: $a.align,
            host_memory: $a.host_memory,
            dram_channel: $a.dram_channel,
            nc_id: $a.nc_id,
            mem_type: $mem_type,
            out: $a.mem_handle,
        }
    };
}

use nrt_hal::abi::{self, Arch, Ioctl, MemAllocCategory, NqDeviceType, NqType, QueueSwStatus};
use nrt_hal::driver::{Errno, OFlag, Syscalls};
use nrt_hal::hal::{AllocRequest, MemLocation, NqRequest, QueueStatus, RingSpec};
use nrt_hal::udma::RingGeometry;
use nrt_hal::{
    DeviceAddr, DmaEngine, EventId, Hal, HalError, MemHandle, NcIndex, QueueId, QueueRef,
    SemaphoreId,
};

use zerocopy::{FromBytes, Immutable, IntoBytes};

use nrt_sim::Sim;

use counters::{CoreCounter, DeviceCounters, DEVICE_MEM_CATEGORIES, HOST_MEM_CATEGORIES};

/// Device events run before each observing ioctl unless configured otherwise
/// ([`EmulatedDriver::with_advance_budget`]).
pub const DEFAULT_ADVANCE_BUDGET: usize = 4096;

/// First file descriptor number the emulation hands out (`'N' << 8`), far from the small numbers
/// of real descriptors so a mix-up is visible.
pub const FD_BASE: RawFd = 0x4E00;

/// What `MEM_GET_EXTENDED_INFO` writes back into `mem_handle`: this base plus 64 × the handle,
/// shaped like a kernel direct-map pointer, as the driver writes `(u64)mc` (hazard 2).
pub const FAKE_KERNEL_POINTER_BASE: u64 = 0xFFFF_8880_0000_0000;

/// What `MEM_GET_EXTENDED_INFO` writes back into `version`: the driver returns uninitialised
/// kernel stack there (hazard 2).
pub const GARBAGE_VERSION: u32 = 0xCCCC_CCCC;

/// `ENOTSUPP` (524), the kernel-internal errno `DRIVER_INFO_SET` returns.
pub const ENOTSUPP: i32 = 524;

/// The result of one emulated ioctl: `Ok(n ≥ 0)` or the negative errno as `Err`.
type Ret = Result<i32, Errno>;

/// The kernel driver's user-space ABI over simulated devices. See the module docs.
pub struct EmulatedDriver {
    sims: Vec<Arc<Sim>>,
    budget: usize,
    state: Mutex<State>,
    counters: Counters,
}

/// Where the devices' counters live.
enum Counters {
    /// On the heap: only this process sees them.
    Owned(Box<[DeviceCounters]>),
    /// In memory shared with other processes ([`registry::Publication`]).
    Shared(&'static [DeviceCounters]),
}

impl Counters {
    fn get(&self) -> &[DeviceCounters] {
        match self {
            Counters::Owned(b) => b,
            Counters::Shared(s) => s,
        }
    }
}

impl std::fmt::Debug for EmulatedDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmulatedDriver")
            .field("devices", &self.sims.len())
            .field("advance_budget", &self.budget)
            .finish()
    }
}

#[derive(Debug)]
struct State {
    next_fd: RawFd,
    fds: BTreeMap<RawFd, OpenFd>,
    devices: Vec<DevState>,
}

#[derive(Debug, Clone, Copy)]
struct OpenFd {
    device: usize,
    /// Opened `O_WRONLY`: misc ioctls only, no attach.
    misc: bool,
}

#[derive(Debug, Default)]
struct DevState {
    /// Open normal (attached) fds.
    attached: usize,
    /// Live allocations made through the emulation (process lifespan).
    owned: BTreeSet<u64>,
    /// Live mappings: (pointer, length) → how many (the same chunk may be mapped twice).
    maps: BTreeMap<(usize, usize), usize>,
    /// Queues initialised through the emulation.
    queues: BTreeMap<QueueRef, Rings>,
}

#[derive(Debug, Clone, Copy)]
struct Rings {
    tx_count: u32,
    rx_count: u32,
    tx_pa: u64,
    rx_pa: u64,
}

/// The ioctls a misc (`O_WRONLY`) fd accepts (docs/driver.md §2.2, column "fd" = M).
fn is_misc(cmd: Ioctl) -> bool {
    matches!(
        cmd,
        Ioctl::CompatibleVersion
            | Ioctl::DeviceBasicInfo
            | Ioctl::DriverInfoGet
            | Ioctl::DriverInfoSet
            | Ioctl::CrwlNcRangeMark
            | Ioctl::CrwlNcRangeMarkExt0
            | Ioctl::CrwlNcRangeUnmark
            | Ioctl::CrwlNcRangeUnmarkExt0
            | Ioctl::DeviceBdfExt
            | Ioctl::DmabufFd
    )
}

/// The errno a simulator error becomes.
fn errno_of(e: &HalError) -> Errno {
    match e {
        HalError::OutOfMemory { .. } => Errno::ENOMEM,
        HalError::InvalidArgument { .. } => Errno::EINVAL,
        HalError::DeviceFault { .. } => Errno::EIO,
        HalError::Timeout { .. } => Errno::ETIMEDOUT,
        HalError::Unsupported { .. } => Errno::ENOSYS,
        HalError::Os { errno, .. } => Errno::from_raw(*errno),
        HalError::DeviceLost(_) => Errno::ENODEV,
    }
}

fn hal<T>(r: Result<T, HalError>) -> Result<T, Errno> {
    r.map_err(|e| errno_of(&e))
}

/// A user-space struct the driver copies in and out (`copy_{from,to}_user`): `len` bytes at
/// `ptr`. Invariant (established by [`UserArg::new`]'s caller): the bytes are valid for reads
/// and writes, and not accessed by anything else, while the value lives.
struct UserArg {
    ptr: *mut u8,
    len: usize,
}

impl UserArg {
    /// # Safety
    ///
    /// `ptr` is valid for reads and writes of `len` bytes, unaliased, for the lifetime of the
    /// returned value.
    unsafe fn new(ptr: *mut u8, len: usize) -> UserArg {
        UserArg { ptr, len }
    }

    /// The struct (`copy_from_user`). `-EFAULT` if `T` is not the size of the user region.
    fn read<T: FromBytes>(&self) -> Result<T, Errno> {
        if core::mem::size_of::<T>() != self.len {
            return Err(Errno::EFAULT);
        }
        // SAFETY: the region is valid for reads of `len` = `size_of::<T>()` bytes (type
        // invariant); `read_unaligned` needs no alignment, and `T: FromBytes` accepts every bit
        // pattern user space may have left there.
        Ok(unsafe { self.ptr.cast::<T>().read_unaligned() })
    }

    /// Writes `v` over the struct (`copy_to_user`). `-EFAULT` if `T` is not the region's size.
    fn write<T: IntoBytes + Immutable>(&self, v: &T) -> Result<(), Errno> {
        let b = v.as_bytes();
        if b.len() != self.len {
            return Err(Errno::EFAULT);
        }
        // SAFETY: the region is valid for writes of `len` bytes and unaliased (type invariant);
        // `b` is a distinct value of the same length.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), self.ptr, b.len()) };
        Ok(())
    }
}

/// The fields every `MEM_ALLOC_*` variant carries.
struct AllocArgs {
    size: u64,
    align: u64,
    host_memory: u32,
    dram_channel: u32,
    nc_id: u32,
    /// `None` for the V2 API (forced UNKNOWN_{HOST,DEVICE}).
    mem_type: Option<u32>,
    out: u64,
}

impl EmulatedDriver {
    /// A driver with one device node per simulator: `sims[N]` answers `/dev/neuronN`. Its
    /// counters are its own (on the heap).
    pub fn new(sims: Vec<Arc<Sim>>) -> Self {
        let counters = sims.iter().map(|_| DeviceCounters::default()).collect();
        Self::build(sims, Counters::Owned(counters))
    }

    /// [`EmulatedDriver::new`] keeping the counters in `counters` (one per simulator), memory
    /// other processes read ([`registry::Publication::counters`]).
    ///
    /// # Panics
    ///
    /// If `counters` does not have one entry per simulator.
    pub fn with_counters(sims: Vec<Arc<Sim>>, counters: &'static [DeviceCounters]) -> Self {
        assert_eq!(counters.len(), sims.len(), "one counter set per device");
        Self::build(sims, Counters::Shared(counters))
    }

    fn build(sims: Vec<Arc<Sim>>, counters: Counters) -> Self {
        let devices = sims.iter().map(|_| DevState::default()).collect();
        let d = EmulatedDriver {
            sims,
            budget: DEFAULT_ADVANCE_BUDGET,
            state: Mutex::new(State {
                next_fd: FD_BASE,
                fds: BTreeMap::new(),
                devices,
            }),
            counters,
        };
        for dev in 0..d.sims.len() {
            d.publish_memory(dev);
            d.publish_activity(dev);
        }
        d
    }

    /// Device `index`'s counters, as sysfs shows them (module docs).
    pub fn counters(&self, index: usize) -> Option<&DeviceCounters> {
        self.counters.get().get(index)
    }

    /// Copies device `dev`'s memory accounting into its counters: per core, device memory
    /// (all and by sysfs category) and host memory; per device, host memory by category.
    fn publish_memory(&self, dev: usize) {
        let sim = &self.sims[dev];
        let c = &self.counters.get()[dev];
        let mut host = [0u64; HOST_MEM_CATEGORIES.len()];
        for nc in 0..sim.target().spec().nc_count {
            let Ok(u) = sim.memory_usage(NcIndex(nc)) else {
                continue;
            };
            let core = nc as usize;
            let sum = |cats: &[MemAllocCategory]| -> u64 {
                cats.iter().map(|&k| u.by_category[k as usize]).sum()
            };
            c.set_core(core, CoreCounter::DeviceMem, u.device_bytes());
            c.set_core(core, CoreCounter::HostMem, u.host_bytes());
            for (i, (_, cats)) in DEVICE_MEM_CATEGORIES.iter().enumerate() {
                c.set_core(core, CoreCounter::DeviceCategory(i), sum(cats));
            }
            for (h, (_, cats)) in host.iter_mut().zip(HOST_MEM_CATEGORIES.iter()) {
                *h += sum(cats);
            }
        }
        for (i, h) in host.into_iter().enumerate() {
            c.set_host(i, h);
        }
    }

    /// Copies device `dev`'s execution totals into its counters: per core, `status/success`
    /// and `status/execute_completed_with_error` (executions that completed with a fault),
    /// `other_info/inference_count`, `flop_count` (two per MAC, as the driver counts) and
    /// `nc_time_in_use` (the last execution, µs at the sequencer clock).
    fn publish_activity(&self, dev: usize) {
        let sim = &self.sims[dev];
        let c = &self.counters.get()[dev];
        let target = sim.target();
        for nc in 0..target.spec().nc_count {
            let a = sim.core_activity(NcIndex(nc));
            let core = nc as usize;
            let set = |name: &str, v: u64, status: bool| {
                let counter = if status {
                    CoreCounter::status(name)
                } else {
                    CoreCounter::other(name)
                };
                if let Some(counter) = counter {
                    c.set_core(core, counter, v);
                }
            };
            set("success", a.executions - a.faulted, true);
            set("execute_completed_with_error", a.faulted, true);
            set("inference_count", a.executions, false);
            set("flop_count", 2 * a.pe_macs, false);
            set(
                "nc_time_in_use",
                (target.cycles_to_ns(a.last_cycles) / 1000.0).round() as u64,
                false,
            );
        }
    }

    /// A driver with the single device `/dev/neuron0`.
    pub fn single(sim: Arc<Sim>) -> Self {
        Self::new(vec![sim])
    }

    /// Sets how many device events run before each observing ioctl (see the module docs); at
    /// least 1.
    pub fn with_advance_budget(mut self, events: usize) -> Self {
        self.budget = events.max(1);
        self
    }

    /// Device events run before each observing ioctl.
    pub fn advance_budget(&self) -> usize {
        self.budget
    }

    /// The simulator behind `/dev/neuron<index>`.
    pub fn sim(&self, index: usize) -> Option<&Arc<Sim>> {
        self.sims.get(index)
    }

    /// Number of device nodes.
    pub fn device_count(&self) -> usize {
        self.sims.len()
    }

    /// Open file descriptors (all devices).
    pub fn open_fds(&self) -> usize {
        self.lock().fds.len()
    }

    /// Live mappings of device `index`.
    pub fn live_mappings(&self, index: usize) -> usize {
        self.lock()
            .devices
            .get(index)
            .map_or(0, |d| d.maps.values().sum())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn file(&self, fd: RawFd) -> Result<OpenFd, Errno> {
        self.lock().fds.get(&fd).copied().ok_or(Errno::EBADF)
    }

    /// Frees what the process allocated on device `dev` once nothing holds the device open (no
    /// attached fd, no mapping) — the driver's per-process cleanup (docs/driver.md §8.2, §9.2).
    fn release_if_unused(&self, st: &mut State, dev: usize) {
        let d = &mut st.devices[dev];
        if d.attached > 0 || !d.maps.is_empty() {
            return;
        }
        let sim = &self.sims[dev];
        for h in std::mem::take(&mut d.owned) {
            if let Some(h) = MemHandle::new(h) {
                let _ = sim.mem_free(h);
            }
        }
        d.queues.clear();
    }

    /// Decodes a device-global engine number and queue index into a queue of a core.
    fn queue_of(&self, dev: usize, eng_id: u32, qid: u32) -> Result<QueueRef, Errno> {
        let spec = self.sims[dev].target().spec();
        if eng_id >= spec.nc_count * DmaEngine::PER_CORE || qid >= spec.queues_per_engine {
            return Err(Errno::EINVAL);
        }
        let (nc, engine) = DmaEngine::from_global(eng_id);
        Ok(QueueRef::new(nc, engine, QueueId(qid)))
    }

    /// Runs the device for a while, as the real one would have meanwhile.
    fn advance(&self, dev: usize) {
        self.sims[dev].advance(self.budget);
    }

    /// Brings device `dev`'s counters up to date after `cmd` (module docs): memory after the
    /// ioctls that allocate or free, executions after those that let the device run.
    fn publish_after(&self, dev: usize, cmd: Ioctl) {
        match cmd {
            Ioctl::MemAllocV2Mt64
            | Ioctl::MemAllocV2Mt
            | Ioctl::MemAllocV2
            | Ioctl::MemFree
            | Ioctl::NotificationsInitV2
            | Ioctl::NotificationsDestroyV1
            | Ioctl::DmaQueueInit
            | Ioctl::DmaQueueRelease => self.publish_memory(dev),
            Ioctl::NcReset => {
                self.publish_memory(dev);
                self.publish_activity(dev);
            }
            Ioctl::SemaphoreRead
            | Ioctl::EventGet
            | Ioctl::DmaQueueGetState
            | Ioctl::MemBufCopy64 => self.publish_activity(dev),
            _ => {}
        }
    }

    /// `MEM_ALLOC_*` on device `dev`.
    ///
    /// # Safety
    ///
    /// `a.out` is 0 or valid for an unaligned 8-byte write (the struct's `mem_handle`
    /// out-pointer, per the `Syscalls::ioctl` contract).
    unsafe fn alloc(&self, dev: usize, a: AllocArgs) -> Ret {
        let sim = &self.sims[dev];
        let target = sim.target();
        if a.nc_id >= abi::MAX_NC_PER_DEVICE {
            return Err(Errno::EINVAL);
        }
        // The channel is range-checked even for host memory (docs/driver.md §8.2).
        if a.dram_channel as usize >= target.spec().hbm.len() {
            return Err(Errno::EINVAL);
        }
        let host = a.host_memory != 0;
        if host && a.align != 0 {
            // Hazard 3.
            return Err(Errno::EINVAL);
        }
        let category = match a.mem_type {
            Some(t) => MemAllocCategory::from_raw(t, host),
            None => MemAllocCategory::from_raw(u32::MAX, host),
        };
        let req = AllocRequest {
            size: a.size,
            align: a.align,
            location: if host {
                MemLocation::Host
            } else {
                MemLocation::Device {
                    channel: a.dram_channel,
                }
            },
            nc: NcIndex(a.nc_id),
            category,
        };
        let mut st = self.lock();
        let handle = hal(sim.mem_alloc(&req))?;
        if a.out == 0 {
            // copy_to_user of the handle fails: undo.
            let _ = sim.mem_free(handle);
            return Err(Errno::EFAULT);
        }
        // SAFETY: `a.out` is non-zero, hence valid for the 8-byte write (this function's
        // contract).
        unsafe { (a.out as *mut u64).write_unaligned(handle.raw()) };
        st.devices[dev].owned.insert(handle.raw());
        Ok(0)
    }

    fn handle_info(
        &self,
        dev: usize,
        raw: u64,
    ) -> Result<(MemHandle, nrt_hal::hal::MemInfo), Errno> {
        let h = MemHandle::new(raw).ok_or(Errno::EINVAL)?;
        let info = hal(self.sims[dev].mem_info(h))?;
        Ok((h, info))
    }

    /// One emulated ioctl on device `dev`: the argument struct is read from `arg`, and the
    /// request goes to the method of its family.
    ///
    /// # Safety
    ///
    /// As [`Syscalls::ioctl`]; additionally `arg` is non-null when `cmd` takes an argument.
    unsafe fn dispatch(&self, dev: usize, cmd: Ioctl, arg: *mut u8) -> Ret {
        // SAFETY: `arg` is valid for reads and writes of the argument struct of `cmd`, i.e.
        // `Ioctl::arg_size(cmd)` bytes, and unaliased during the call (this function's contract).
        // `UserArg::read/write` check that each arm's struct type has exactly that size.
        let user = unsafe { UserArg::new(arg, cmd.arg_size().unwrap_or(0)) };
        match cmd {
            Ioctl::CompatibleVersion
            | Ioctl::DeviceBasicInfo
            | Ioctl::DriverInfoGet
            | Ioctl::DriverInfoSet => self.info_ioctl(dev, cmd, &user),
            Ioctl::MemAllocV2Mt64
            | Ioctl::MemAllocV2Mt
            | Ioctl::MemAllocV2
            | Ioctl::MemFree
            | Ioctl::MemGetExtendedInfo
            | Ioctl::MemGetPa
            | Ioctl::MemGetInfo
            | Ioctl::MemBufCopy64
            | Ioctl::Memset64 => {
                // SAFETY: the user pointers inside the struct are valid (this function's
                // contract).
                unsafe { self.memory_ioctl(dev, cmd, &user) }
            }
            Ioctl::DmaQueueInit
            | Ioctl::DmaQueueCopyStart
            | Ioctl::DmaQueueGetState
            | Ioctl::DmaQueueRelease
            | Ioctl::DmaEngInit
            | Ioctl::DeviceInit
            | Ioctl::DeviceRelease
            | Ioctl::NotificationsDestroyV1
            | Ioctl::DmaAckCompleted
            | Ioctl::DmaQuiesceQueues => {
                // SAFETY: as above.
                unsafe { self.dma_ioctl(dev, cmd, &user) }
            }
            Ioctl::SemaphoreRead
            | Ioctl::SemaphoreWrite
            | Ioctl::SemaphoreIncrement
            | Ioctl::SemaphoreDecrement
            | Ioctl::EventSet
            | Ioctl::EventGet => self.sync_ioctl(dev, cmd, &user),
            Ioctl::NotificationsInitV2 | Ioctl::NotificationsQueueInfo => {
                self.nq_ioctl(dev, cmd, &user)
            }
            Ioctl::NcReset
            | Ioctl::NcResetReady
            | Ioctl::DeviceResetStatus
            | Ioctl::DeviceReady => self.reset_ioctl(dev, cmd, &user),
            _ => Err(Errno::ENOSYS),
        }
    }

    /// `COMPATIBLE_VERSION`, `DEVICE_BASIC_INFO`, `DRIVER_INFO_GET/SET`.
    fn info_ioctl(&self, dev: usize, cmd: Ioctl, user: &UserArg) -> Ret {
        let spec = self.sims[dev].target().spec();
        // `arch` is 2 or 3 for every target this platform models.
        let arch = Arch::from_raw(spec.arch).unwrap_or(Arch::V2);
        match cmd {
            Ioctl::CompatibleVersion => {
                // Struct order is {max, min}.
                let v = arch.compatible_version();
                user.write(&v)?;
                Ok(0)
            }
            Ioctl::DeviceBasicInfo => {
                let v = abi::DeviceBasicInfo {
                    architecture: spec.arch,
                    revision: abi::REVISION_EMULATOR,
                };
                user.write(&v)?;
                Ok(0)
            }
            Ioctl::DriverInfoGet => {
                let v = abi::DeviceDriverInfo {
                    architecture: spec.arch,
                    revision: abi::REVISION_EMULATOR,
                    version: abi::DEVICE_DRIVER_INFO_VERSION0,
                    size: core::mem::size_of::<abi::DeviceDriverInfo>() as u32,
                    feature_flags1: abi::DRIVER_FEATURES_REPORTED.bits(),
                };
                user.write(&v)?;
                Ok(0)
            }
            Ioctl::DriverInfoSet => Err(Errno::from_raw(ENOTSUPP)),
            _ => Err(Errno::ENOSYS),
        }
    }

    /// Allocation, free, memory info, copies and memset.
    ///
    /// Longer than the ~120-line guideline on purpose: one short arm per ioctl of the family,
    /// each decoding its argument struct and calling the device.
    ///
    /// # Safety
    ///
    /// As [`EmulatedDriver::dispatch`]: the user pointers inside the argument struct are valid
    /// for the accesses the driver makes through them.
    unsafe fn memory_ioctl(&self, dev: usize, cmd: Ioctl, user: &UserArg) -> Ret {
        let sim = &*self.sims[dev];
        match cmd {
            Ioctl::MemAllocV2Mt64 => {
                let a: abi::MemAllocV2Mt64 = user.read()?;
                let args = alloc_args!(a, Some(a.mem_type));
                // SAFETY: `args.out` is the struct's out-pointer (`Syscalls::ioctl` contract).
                unsafe { self.alloc(dev, args) }
            }
            Ioctl::MemAllocV2Mt => {
                let a: abi::MemAllocV2Mt = user.read()?;
                let args = alloc_args!(a, Some(a.mem_type));
                // SAFETY: `args.out` is the struct's out-pointer (`Syscalls::ioctl` contract).
                unsafe { self.alloc(dev, args) }
            }
            Ioctl::MemAllocV2 => {
                let a: abi::MemAllocV2 = user.read()?;
                let args = alloc_args!(a, None);
                // SAFETY: `args.out` is the struct's out-pointer (`Syscalls::ioctl` contract).
                unsafe { self.alloc(dev, args) }
            }
            Ioctl::MemFree => {
                let a: abi::MemFree = user.read()?;
                let h = MemHandle::new(a.mem_handle).ok_or(Errno::EINVAL)?;
                let mut st = self.lock();
                hal(sim.mem_free(h))?;
                st.devices[dev].owned.remove(&h.raw());
                Ok(0)
            }
            Ioctl::MemGetExtendedInfo => {
                let mut a: abi::MemGetExtendedInfo = user.read()?;
                let Ok((h, info)) = self.handle_info(dev, a.mem_handle) else {
                    // Hazard 2: a bad handle is a *positive* EINVAL, nothing written back.
                    return Ok(Errno::EINVAL as i32);
                };
                a.mem_handle = FAKE_KERNEL_POINTER_BASE + (h.raw() << 6);
                a.version = GARBAGE_VERSION;
                a.host_memory = u32::from(info.location == MemLocation::Host);
                a.mmap_offset = info.pa.raw();
                a.pa = info.pa.raw();
                a.pid = u64::from(std::process::id());
                a.size = info.size;
                user.write(&a)?;
                Ok(0)
            }
            Ioctl::MemGetPa => {
                let a: abi::MemGetPa = user.read()?;
                let (_, info) = self.handle_info(dev, a.mem_handle)?;
                if a.pa == 0 {
                    return Err(Errno::EFAULT);
                }
                // SAFETY: `a.pa` is the struct's `__u64 *` out-pointer, valid for 8 bytes by the
                // `Syscalls::ioctl` contract.
                unsafe { (a.pa as *mut u64).write_unaligned(info.pa.raw()) };
                Ok(0)
            }
            Ioctl::MemGetInfo => {
                let a: abi::MemGetInfo = user.read()?;
                let (_, info) = self.handle_info(dev, a.mem_handle)?;
                if a.pa == 0 {
                    return Err(Errno::EFAULT);
                }
                // SAFETY: both are the struct's `__u64 *` out-pointers (mmap_offset optional),
                // valid for 8 bytes by the `Syscalls::ioctl` contract.
                unsafe {
                    if a.mmap_offset != 0 {
                        (a.mmap_offset as *mut u64).write_unaligned(info.pa.raw());
                    }
                    (a.pa as *mut u64).write_unaligned(info.pa.raw());
                }
                Ok(0)
            }
            Ioctl::MemBufCopy64 => {
                let a: abi::MemBufCopy64 = user.read()?;
                let (h, info) = self.handle_info(dev, a.mem_handle)?;
                if a.offset
                    .checked_add(a.size)
                    .is_none_or(|end| end > info.size)
                {
                    return Err(Errno::EINVAL);
                }
                // Hazard 7: the device-memory loop counts in 32 bits.
                let len = match info.location {
                    MemLocation::Host => a.size,
                    MemLocation::Device { .. } => a.size & 0xFFFF_FFFF,
                };
                if len == 0 {
                    return Ok(0);
                }
                if a.buffer == 0 {
                    return Err(Errno::EFAULT);
                }
                let len = usize::try_from(len).map_err(|_| Errno::EFAULT)?;
                if a.copy_to_mem_handle != 0 {
                    // SAFETY: `a.buffer` is the user buffer of a copy to the device: valid for
                    // reads of `size` (≥ `len`) bytes by the `Syscalls::ioctl` contract.
                    let src = unsafe { std::slice::from_raw_parts(a.buffer as *const u8, len) };
                    hal(sim.copy_to_device(h, a.offset, src))?;
                } else {
                    self.advance(dev);
                    // SAFETY: `a.buffer` is the user buffer of a copy from the device: valid for
                    // writes of `size` (≥ `len`) bytes and unaliased during the call by the
                    // `Syscalls::ioctl` contract.
                    let dst = unsafe { std::slice::from_raw_parts_mut(a.buffer as *mut u8, len) };
                    hal(sim.copy_from_device(h, a.offset, dst))?;
                }
                Ok(0)
            }
            Ioctl::Memset64 => {
                let a: abi::Memset64 = user.read()?;
                let (h, info) = self.handle_info(dev, a.mem_handle)?;
                if a.offset
                    .checked_add(a.size)
                    .is_none_or(|end| end > info.size)
                {
                    return Err(Errno::EINVAL);
                }
                // The low byte of `value`.
                hal(sim.memset(h, a.offset, a.value as u8, a.size))?;
                Ok(0)
            }
            _ => Err(Errno::ENOSYS),
        }
    }

    /// DMA queue init, copy start, state, acknowledgement, and the no-ops.
    ///
    /// Longer than the ~120-line guideline on purpose: one short arm per ioctl of the family,
    /// each decoding its argument struct and calling the device.
    ///
    /// # Safety
    ///
    /// As [`EmulatedDriver::dispatch`]: the user pointers inside the argument struct are valid
    /// for the accesses the driver makes through them.
    unsafe fn dma_ioctl(&self, dev: usize, cmd: Ioctl, user: &UserArg) -> Ret {
        let sim = &*self.sims[dev];
        match cmd {
            Ioctl::DmaQueueInit => {
                let a: abi::DmaQueueInit = user.read()?;
                let q = self.queue_of(dev, a.eng_id, a.qid)?;
                let (tx, tx_info) = self.handle_info(dev, a.tx_handle)?;
                let (rx, rx_info) = self.handle_info(dev, a.rx_handle)?;
                if a.rxc_handle != 0 {
                    // Hazard 4: "Completion ring not supported", a literal -1.
                    return Err(Errno::EPERM);
                }
                if RingGeometry::new(a.tx_desc_count).is_err()
                    || RingGeometry::new(a.rx_desc_count).is_err()
                {
                    // A udma error, propagated as -1.
                    return Err(Errno::EPERM);
                }
                let mut st = self.lock();
                hal(sim.dma_queue_init(
                    q,
                    RingSpec {
                        handle: tx,
                        count: a.tx_desc_count,
                    },
                    RingSpec {
                        handle: rx,
                        count: a.rx_desc_count,
                    },
                ))?;
                st.devices[dev].queues.insert(
                    q,
                    Rings {
                        tx_count: a.tx_desc_count,
                        rx_count: a.rx_desc_count,
                        tx_pa: tx_info.pa.raw(),
                        rx_pa: rx_info.pa.raw(),
                    },
                );
                Ok(0)
            }
            Ioctl::DmaQueueCopyStart => {
                let a: abi::DmaQueueCopyStart = user.read()?;
                let q = self.queue_of(dev, a.eng_id, a.qid)?;
                let rings = self.lock().devices[dev].queues.get(&q).copied();
                // Hazard 5: no RX ring, or rx_desc_count == 0, is a kernel BUG_ON in the driver;
                // refused here instead.
                let Some(rings) = rings else {
                    return Err(Errno::EINVAL);
                };
                if a.rx_desc_count == 0 {
                    return Err(Errno::EINVAL);
                }
                if a.tx_desc_count > rings.tx_count || a.rx_desc_count > rings.rx_count {
                    return Err(Errno::EPERM);
                }
                hal(sim.dma_queue_copy_start(q, a.tx_desc_count, a.rx_desc_count))?;
                Ok(0)
            }
            Ioctl::DmaQueueGetState => {
                let a: abi::DmaQueueGetState = user.read()?;
                let q = self.queue_of(dev, a.eng_id, a.qid)?;
                if a.tx == 0 || a.rx == 0 {
                    return Err(Errno::EFAULT);
                }
                self.advance(dev);
                let s = hal(sim.dma_queue_state(q))?;
                let rings = self.lock().devices[dev].queues.get(&q).copied();
                let sw_status = match s.status {
                    QueueStatus::Disabled => QueueSwStatus::Disabled,
                    QueueStatus::Enabled => QueueSwStatus::Enabled,
                    QueueStatus::Aborted => QueueSwStatus::Aborted,
                }
                .raw();
                let state = |base: u64, length: u32, head: u32, tail: u32| abi::DmaQueueState {
                    sw_status,
                    base_addr: base & !0x3F,
                    length: length & 0xFF_FFFF,
                    head_pointer: head & 0xFF_FFFF,
                    tail_pointer: tail & 0xFF_FFFF,
                    ..Default::default()
                };
                let tx = state(
                    rings.map_or(0, |r| r.tx_pa),
                    rings.map_or(0, |r| r.tx_count),
                    s.tx_head,
                    s.tx_tail,
                );
                let rx = state(
                    rings.map_or(0, |r| r.rx_pa),
                    rings.map_or(0, |r| r.rx_count),
                    s.rx_head,
                    s.rx_tail,
                );
                let len = core::mem::size_of::<abi::DmaQueueState>();
                // SAFETY: `a.tx` is the struct's `neuron_dma_queue_state *` TX out-pointer, valid
                // for the 48-byte write by the `Syscalls::ioctl` contract.
                unsafe { UserArg::new(a.tx as *mut u8, len) }.write(&tx)?;
                // SAFETY: likewise for the RX out-pointer.
                unsafe { UserArg::new(a.rx as *mut u8, len) }.write(&rx)?;
                Ok(0)
            }
            Ioctl::DmaQueueRelease
            | Ioctl::DmaEngInit
            | Ioctl::DeviceInit
            | Ioctl::DeviceRelease => Ok(0),
            Ioctl::NotificationsDestroyV1 => Ok(0),
            Ioctl::DmaAckCompleted => {
                let a: abi::DmaAckCompleted = user.read()?;
                let q = self.queue_of(dev, a.eng_id, a.qid)?;
                let rings = self.lock().devices[dev].queues.get(&q).copied();
                match rings {
                    // Hazard 6: a kernel BUG on a non-power-of-two ring; refused here.
                    Some(r) if r.tx_count.is_power_of_two() && r.rx_count.is_power_of_two() => {
                        Ok(0)
                    }
                    _ => Err(Errno::EINVAL),
                }
            }
            Ioctl::DmaQuiesceQueues => Err(Errno::ENOTTY),
            _ => Err(Errno::ENOSYS),
        }
    }

    /// Semaphores and events.
    fn sync_ioctl(&self, dev: usize, cmd: Ioctl, user: &UserArg) -> Ret {
        let sim = &*self.sims[dev];
        let target = self.sims[dev].target();
        let spec = self.sims[dev].target().spec();
        match cmd {
            Ioctl::SemaphoreRead
            | Ioctl::SemaphoreWrite
            | Ioctl::SemaphoreIncrement
            | Ioctl::SemaphoreDecrement => {
                // The request encodes size 8, the struct is 12 bytes (`arg_size`).
                let mut a: abi::Semaphore = user.read()?;
                let nc = NcIndex(u32::from(a.nc_id as u8));
                let sem = SemaphoreId(u32::from(a.semaphore_index as u16));
                if !target.has_core(nc) || sem.0 >= spec.semaphores_per_core {
                    return Err(Errno::EINVAL);
                }
                match cmd {
                    Ioctl::SemaphoreRead => {
                        self.advance(dev);
                        a.value = hal(sim.semaphore_read(nc, sem))? as u32;
                        user.write(&a)?;
                    }
                    Ioctl::SemaphoreWrite => hal(sim.semaphore_write(nc, sem, a.value as i32))?,
                    Ioctl::SemaphoreIncrement => hal(sim.semaphore_increment(nc, sem, a.value))?,
                    _ => hal(sim.semaphore_decrement(nc, sem, a.value))?,
                }
                Ok(0)
            }
            Ioctl::EventSet | Ioctl::EventGet => {
                let mut a: abi::Event = user.read()?;
                let nc = NcIndex(u32::from(a.nc_id as u8));
                let index = u32::from(a.event_index as u16);
                // Hazard 11: `index > count` (256 passes), nc_id unchecked.
                if index > spec.events_per_core {
                    return Err(Errno::EINVAL);
                }
                let real = target.has_core(nc) && index < spec.events_per_core;
                if cmd == Ioctl::EventSet {
                    if real {
                        hal(sim.event_set(nc, EventId(index), a.value))?;
                    }
                } else {
                    a.value = if real {
                        self.advance(dev);
                        hal(sim.event_get(nc, EventId(index)))?
                    } else {
                        0
                    };
                    user.write(&a)?;
                }
                Ok(0)
            }
            _ => Err(Errno::ENOSYS),
        }
    }

    /// Notification queues.
    fn nq_ioctl(&self, dev: usize, cmd: Ioctl, user: &UserArg) -> Ret {
        let sim = &*self.sims[dev];
        let spec = self.sims[dev].target().spec();
        match cmd {
            Ioctl::NotificationsInitV2 => {
                let mut a: abi::NotificationsInitV2 = user.read()?;
                if NqDeviceType::from_raw(a.nq_dev_type) != Some(NqDeviceType::NeuronCore) {
                    // TOP_SP queues are not modelled.
                    return Err(Errno::EINVAL);
                }
                let nq_type = NqType::from_raw(a.nq_type).ok_or(Errno::EINVAL)?;
                if a.engine_index >= abi::MAX_NQ_ENGINE {
                    return Err(Errno::EINVAL);
                }
                let host = a.on_host_memory != 0;
                if !host && a.dram_channel as usize >= spec.hbm.len() {
                    return Err(Errno::EINVAL);
                }
                let q = hal(sim.notification_init(&NqRequest {
                    nc: NcIndex(a.nq_dev_id),
                    nq_type,
                    engine_index: a.engine_index,
                    size: a.size,
                    location: if host {
                        MemLocation::Host
                    } else {
                        MemLocation::Device {
                            channel: a.dram_channel,
                        }
                    },
                }))?;
                // A device NQ is not host-mappable directly: -1 (docs/driver.md §6).
                a.mmap_offset = if host {
                    q.pa.raw()
                } else {
                    abi::NQ_DEVICE_MMAP_OFFSET
                };
                a.mem_handle = q.handle.raw();
                user.write(&a)?;
                Ok(0)
            }
            Ioctl::NotificationsQueueInfo => Err(Errno::EPERM),
            _ => Err(Errno::ENOSYS),
        }
    }

    /// Core reset and the readiness queries.
    fn reset_ioctl(&self, dev: usize, cmd: Ioctl, user: &UserArg) -> Ret {
        let sim = &*self.sims[dev];
        let spec = self.sims[dev].target().spec();
        match cmd {
            Ioctl::NcReset => {
                let mut a: abi::DeviceReset = user.read()?;
                let all = (1u32 << spec.nc_count) - 1;
                let mask = if a.nc_map == abi::NC_MAP_DEVICE {
                    all
                } else {
                    a.nc_map & all
                };
                let mut st = self.lock();
                for nc in (0..spec.nc_count).filter(|nc| mask & (1 << nc) != 0) {
                    self.counters.get()[dev].add_core(
                        nc as usize,
                        CoreCounter::other("reset_req_count").expect("a driver counter"),
                        1,
                    );
                }
                hal(sim.nc_reset(mask))?;
                st.devices[dev]
                    .queues
                    .retain(|q, _| mask & (1 << q.nc.0) == 0);
                a.request_id = std::process::id();
                user.write(&a)?;
                Ok(0)
            }
            Ioctl::NcResetReady => {
                // Resets complete synchronously in NC_RESET.
                let mut a: abi::DeviceReady = user.read()?;
                a.result = abi::RESET_RESULT_OK;
                user.write(&a)?;
                Ok(0)
            }
            Ioctl::DeviceResetStatus | Ioctl::DeviceReady => {
                user.write(&1u8)?;
                Ok(0)
            }
            _ => Err(Errno::ENOSYS),
        }
    }
}

/// Parses `/dev/neuron<N>`.
fn parse_device_path(path: &str) -> Option<usize> {
    let n = path.strip_prefix("/dev/neuron")?;
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) || (n.len() > 1 && n.starts_with('0'))
    {
        return None;
    }
    n.parse().ok()
}

impl Syscalls for EmulatedDriver {
    fn open(&self, path: &str, flags: OFlag) -> Result<RawFd, Errno> {
        let device = parse_device_path(path)
            .filter(|&d| d < self.sims.len())
            .ok_or(Errno::ENOENT)?;
        let misc = flags & OFlag::O_ACCMODE == OFlag::O_WRONLY;
        let mut st = self.lock();
        let fd = st.next_fd;
        st.next_fd = fd.checked_add(1).ok_or(Errno::EMFILE)?;
        st.fds.insert(fd, OpenFd { device, misc });
        if !misc {
            st.devices[device].attached += 1;
            self.counters.get()[device].attach(1);
        }
        Ok(fd)
    }

    fn close(&self, fd: RawFd) -> Result<(), Errno> {
        let mut st = self.lock();
        let f = st.fds.remove(&fd).ok_or(Errno::EBADF)?;
        if !f.misc {
            st.devices[f.device].attached -= 1;
            self.counters.get()[f.device].attach(-1);
            self.release_if_unused(&mut st, f.device);
            drop(st);
            self.publish_memory(f.device);
        }
        Ok(())
    }

    unsafe fn ioctl(&self, fd: RawFd, request: u32, arg: *mut u8) -> Result<i32, Errno> {
        let f = self.file(fd)?;
        let cmd = Ioctl::from_request(request).ok_or(Errno::EINVAL)?;
        if f.misc && !is_misc(cmd) {
            return Err(Errno::EINVAL);
        }
        if cmd.arg_size().unwrap_or(0) > 0 && arg.is_null() {
            return Err(Errno::EFAULT);
        }
        // SAFETY: forwarded from this function's contract; `arg` is non-null whenever `cmd`
        // takes an argument (checked above).
        let r = unsafe { self.dispatch(f.device, cmd, arg) };
        self.publish_after(f.device, cmd);
        r
    }

    unsafe fn mmap(&self, fd: RawFd, len: usize, offset: u64) -> Result<NonNull<u8>, Errno> {
        let f = self.file(fd)?;
        let sim = &self.sims[f.device];
        // vm_pgoff: the offset is a page multiple.
        if !offset.is_multiple_of(nrt_sim::memory::PAGE_SIZE) {
            return Err(Errno::EINVAL);
        }
        // The offset is a device-visible address; an offset inside a chunk maps the chunk from
        // its start, and the length must be the whole chunk (docs/driver.md §7).
        let (handle, _) = sim.lookup(DeviceAddr::new(offset)).ok_or(Errno::EINVAL)?;
        let info = hal(sim.mem_info(handle))?;
        if len as u64 != info.size {
            return Err(Errno::EINVAL);
        }
        let mut st = self.lock();
        // SAFETY: the caller takes on `Syscalls::mmap`'s contract, which is `Hal::map`'s: the
        // memory is accessed only under that contract and until it is unmapped (this module
        // keeps the device open, so its allocations alive, while a mapping exists).
        let m = hal(unsafe { sim.map(handle) })?;
        *st.devices[f.device]
            .maps
            .entry((m.ptr.as_ptr() as usize, m.len))
            .or_insert(0) += 1;
        Ok(m.ptr)
    }

    unsafe fn munmap(&self, ptr: NonNull<u8>, len: usize) -> Result<(), Errno> {
        let mut st = self.lock();
        let key = (ptr.as_ptr() as usize, len);
        let dev = st
            .devices
            .iter()
            .position(|d| d.maps.contains_key(&key))
            .ok_or(Errno::EINVAL)?;
        let maps = &mut st.devices[dev].maps;
        match maps.get_mut(&key) {
            Some(n) if *n > 1 => *n -= 1,
            _ => {
                maps.remove(&key);
            }
        }
        self.release_if_unused(&mut st, dev);
        drop(st);
        self.publish_memory(dev);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_paths_parse_like_device_nodes() {
        assert_eq!(parse_device_path("/dev/neuron0"), Some(0));
        assert_eq!(parse_device_path("/dev/neuron12"), Some(12));
        for bad in [
            "/dev/neuron",
            "/dev/neuron01",
            "/dev/neuron-1",
            "/dev/neuronx",
            "neuron0",
        ] {
            assert_eq!(parse_device_path(bad), None, "{bad}");
        }
    }

    #[test]
    fn sim_errors_map_to_driver_errnos() {
        let oom = HalError::OutOfMemory {
            requested: 1,
            location: MemLocation::Host,
        };
        assert_eq!(errno_of(&oom), Errno::ENOMEM);
        let inv = HalError::InvalidArgument {
            op: "x",
            reason: String::new(),
        };
        assert_eq!(errno_of(&inv), Errno::EINVAL);
        assert!(is_misc(Ioctl::CompatibleVersion));
        assert!(!is_misc(Ioctl::MemAllocV2Mt64));
    }
}
