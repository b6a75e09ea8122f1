//! The [`Hal`] trait: the one device interface the runtime is written against.
//!
//! Its shape follows the kernel driver's ioctl set (docs/driver.md §2.2): one method per
//! operation the runtime needs — device info; memory alloc / free / copy in / copy out / memset /
//! physical address / map into the process; DMA queue init and copy-start (tail increment);
//! semaphore read / write / increment / decrement; event set / get; notification-queue init;
//! core reset — plus [`Hal::wait`], through which time passes (docs/ARCHITECTURE.md §4), and
//! one optional capability, [`Hal::profiler`] (the device timeline, [`crate::profile`]).
//!
//! Two backends implement it: `nrt-sim`'s simulated device and the driver backend over
//! `/dev/neuronN`. The runtime never asks which one it runs on; differences (memory sizes, clock
//! rates) come from [`Hal::device_info`] and the [`Target`] tables.
//!
//! # Rules every backend follows
//!
//! - **Validation lives in the runtime.** A [`HalError`] is what a caller cannot foresee: out of
//!   memory, a device fault, a timeout, an unsupported operation, or an error the OS returned.
//!   Backends still refuse bad arguments (a freed handle, an index out of range) rather than
//!   misbehave — as [`HalError::InvalidArgument`], which the runtime treats as its own bug.
//! - **Waiting drives time.** The simulator has no background thread; device time advances only
//!   inside [`Hal::wait`]. The driver backend polls instead. Runtime code is identical.
//! - **Every method takes `&self`** and is safe to call from several threads; a backend serialises
//!   internally where the device needs it.
//!
//! # Mapping device memory
//!
//! A real runtime writes descriptors and exec requests into device memory through its own
//! mapping; [`Hal::map`] exposes that mapping, in the manner of wgpu-hal's `map_buffer`. It is
//! `unsafe` because the returned pointer aliases memory the device reads and writes
//! asynchronously; see its `# Safety` section.

use core::fmt;
use core::ptr::NonNull;
use core::time::Duration;

use crate::abi::{MemAllocCategory, NqType};
use crate::addr::{DeviceAddr, EventId, MemHandle, NcIndex, QueueRef, SemaphoreId};
use crate::isa::SemCmp;
use crate::profile::Profiler;
use crate::target::Target;

/// Result of a HAL call.
pub type HalResult<T> = Result<T, HalError>;

/// What a HAL call can fail with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HalError {
    /// The device (or host DMA memory) has no room for the request.
    #[error("out of device memory: {requested} bytes requested from {location}")]
    OutOfMemory {
        /// Bytes requested (after rounding).
        requested: u64,
        /// Where the allocation was attempted.
        location: MemLocation,
    },
    /// The backend refused an argument (a freed handle, an index out of range, a bound
    /// exceeded). The runtime validates before calling, so this indicates a runtime bug or a
    /// driver that disagrees with the target tables.
    #[error("{op}: invalid argument: {reason}")]
    InvalidArgument {
        /// The operation (ioctl name) that refused.
        op: &'static str,
        /// What was wrong.
        reason: String,
    },
    /// The device reported a fault (DMA abort, uncorrectable memory error, core error).
    #[error("device fault{}: {reason}", .nc.map(|n| format!(" on {n}")).unwrap_or_default())]
    DeviceFault {
        /// The core concerned, if any.
        nc: Option<NcIndex>,
        /// What the device reported.
        reason: String,
    },
    /// A wait did not see its condition in time.
    #[error("timed out after {waited:?} waiting for {what}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long the wait lasted (host time on the driver; see [`Hal::wait`] for the simulator).
        waited: Duration,
    },
    /// The backend does not implement the operation.
    #[error("{op} is not supported by this backend")]
    Unsupported {
        /// The operation.
        op: &'static str,
    },
    /// The kernel driver returned an error.
    #[error("ioctl {ioctl} failed: {message} (errno {errno})")]
    Os {
        /// The ioctl (or syscall) name, e.g. `MEM_ALLOC_V2MT64`.
        ioctl: &'static str,
        /// The errno value (or the driver's positive return code, docs/driver.md §2.3).
        errno: i32,
        /// The OS's description.
        message: String,
    },
    /// The device is gone or unusable until reset.
    #[error("device lost: {0}")]
    DeviceLost(String),
}

/// Where an allocation lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemLocation {
    /// Device HBM on the given channel (`dram_channel`).
    Device {
        /// HBM channel index.
        channel: u32,
    },
    /// DMA-able host memory (`host_memory = 1`); it appears to the device in the host window.
    Host,
}

impl fmt::Display for MemLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MemLocation::Device { channel } => write!(f, "HBM channel {channel}"),
            MemLocation::Host => f.write_str("host DMA memory"),
        }
    }
}

/// An allocation request (the fields of `MEM_ALLOC_V2MT64`, docs/driver.md §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocRequest {
    /// Bytes; the backend rounds up to 4 KiB pages.
    pub size: u64,
    /// Alignment in bytes, 0 for the default (page). Must be 0 for host memory.
    pub align: u64,
    /// Host or device, and which HBM channel.
    pub location: MemLocation,
    /// The core the allocation is accounted to.
    pub nc: NcIndex,
    /// The accounting category (`mem_alloc_category_t`).
    pub category: MemAllocCategory,
}

/// What the backend knows about an allocation (`MEM_GET_EXTENDED_INFO`, docs/driver.md §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemInfo {
    /// Device-visible physical address of the first byte.
    pub pa: DeviceAddr,
    /// Size in bytes, rounded to whole pages.
    pub size: u64,
    /// Where it lives.
    pub location: MemLocation,
    /// The core it is accounted to.
    pub nc: NcIndex,
    /// Its accounting category.
    pub category: MemAllocCategory,
}

/// A mapping of one whole allocation into the calling process.
#[derive(Debug, PartialEq, Eq)]
pub struct Mapping {
    /// The allocation mapped.
    pub handle: MemHandle,
    /// First byte of the mapping.
    pub ptr: NonNull<u8>,
    /// Length in bytes (the allocation's rounded size).
    pub len: usize,
}

// SAFETY: a `Mapping` is a plain address range; it carries no thread-affine state. All access
// through it is governed by the `# Safety` contract of `Hal::map`, which already requires callers
// to synchronise with other users of the same bytes whatever thread they run on.
unsafe impl Send for Mapping {}
// SAFETY: as above; sharing the descriptor does not access the memory.
unsafe impl Sync for Mapping {}

/// One ring of a DMA queue: the allocation backing it and its length in descriptors. The ring
/// starts at the first byte of the allocation (docs/driver.md §4.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RingSpec {
    /// The memory holding the 16-byte descriptors.
    pub handle: MemHandle,
    /// Number of descriptors.
    pub count: u32,
}

/// Software status of a DMA queue (`neuron_dma_queue_state.sw_status`, docs/driver.md §3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueStatus {
    /// Not initialised, or reset.
    Disabled,
    /// Running.
    Enabled,
    /// Stopped by an error (a bad descriptor or an injected abort).
    Aborted,
}

/// Ring pointers of one DMA queue (`DMA_QUEUE_GET_STATE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueState {
    /// Queue status.
    pub status: QueueStatus,
    /// TX ring: next descriptor the engine will fetch.
    pub tx_head: u32,
    /// TX ring: tail (one past the last descriptor made available).
    pub tx_tail: u32,
    /// RX ring head.
    pub rx_head: u32,
    /// RX ring tail.
    pub rx_tail: u32,
}

/// A notification-queue request (`NOTIFICATIONS_INIT_V2`, docs/driver.md §3.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NqRequest {
    /// The core.
    pub nc: NcIndex,
    /// The queue type.
    pub nq_type: NqType,
    /// Engine or queue index within the type (0..16).
    pub engine_index: u32,
    /// Bytes, a power of two.
    pub size: u32,
    /// Host or device memory.
    pub location: MemLocation,
}

/// A notification queue the device writes entries into (format: [`crate::notify`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotificationQueue {
    /// The memory holding the ring; read it with [`Hal::copy_from_device`] or [`Hal::map`].
    pub handle: MemHandle,
    /// Its device address.
    pub pa: DeviceAddr,
    /// Its size in bytes.
    pub size: u32,
}

/// What the device is (`DEVICE_BASIC_INFO`, `DRIVER_INFO_GET`, `COMPATIBLE_VERSION`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The generation.
    pub target: Target,
    /// PCI revision (docs/driver.md §3.7: 255 = qemu, 240 = emulator; the simulator reports 240).
    pub revision: u32,
    /// Number of NeuronCores.
    pub nc_count: u32,
    /// The runtime-ABI versions the driver accepts, (min, max).
    pub abi_version_range: (u32, u32),
}

/// Memory accounted to one core (driver sysfs `memory_usage`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CoreMemUsage {
    /// Bytes in use per `mem_alloc_category_t` (indexed by the category's raw value).
    pub by_category: [u64; MemAllocCategory::COUNT],
    /// Live allocations.
    pub allocations: u64,
}

impl CoreMemUsage {
    /// Bytes of device memory in use.
    pub fn device_bytes(&self) -> u64 {
        MemAllocCategory::ALL
            .iter()
            .filter(|c| !c.is_host())
            .map(|c| self.by_category[*c as usize])
            .sum()
    }
    /// Bytes of host DMA memory in use.
    pub fn host_bytes(&self) -> u64 {
        MemAllocCategory::ALL
            .iter()
            .filter(|c| c.is_host())
            .map(|c| self.by_category[*c as usize])
            .sum()
    }
}

/// A condition [`Hal::wait`] blocks on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitCondition {
    /// Semaphore `sem` of core `nc` compares to `value` as `cmp` says.
    Semaphore {
        /// Core.
        nc: NcIndex,
        /// Semaphore.
        sem: SemaphoreId,
        /// Comparison `sem <cmp> value`.
        cmp: SemCmp,
        /// Value compared against.
        value: i32,
    },
    /// The little-endian u32 at byte `offset` of allocation `handle` compares to `value`.
    Memory32 {
        /// The allocation.
        handle: MemHandle,
        /// Byte offset, 4-byte aligned.
        offset: u64,
        /// Comparison `word <cmp> value` (unsigned).
        cmp: SemCmp,
        /// Value compared against.
        value: u32,
    },
}

/// The Neuron device interface.
///
/// All methods are callable from any thread. Errors are described on [`HalError`].
pub trait Hal: Send + Sync {
    /// What the device is.
    fn device_info(&self) -> HalResult<DeviceInfo>;

    /// Allocates memory (`MEM_ALLOC_V2MT64`). Returns a handle; placement is deterministic for
    /// a given sequence of requests.
    fn mem_alloc(&self, req: &AllocRequest) -> HalResult<MemHandle>;

    /// Frees an allocation (`MEM_FREE`). The handle may be reused by a later allocation.
    fn mem_free(&self, handle: MemHandle) -> HalResult<()>;

    /// Physical address, size and accounting of an allocation (`MEM_GET_EXTENDED_INFO`).
    fn mem_info(&self, handle: MemHandle) -> HalResult<MemInfo>;

    /// Copies `src` into the allocation at byte `offset` (`MEM_BUF_COPY64`, to device).
    fn copy_to_device(&self, handle: MemHandle, offset: u64, src: &[u8]) -> HalResult<()>;

    /// Copies from the allocation at byte `offset` into `dst` (`MEM_BUF_COPY64`, from device).
    fn copy_from_device(&self, handle: MemHandle, offset: u64, dst: &mut [u8]) -> HalResult<()>;

    /// Fills `size` bytes at `offset` with `value` (`MEMSET64`).
    fn memset(&self, handle: MemHandle, offset: u64, value: u8, size: u64) -> HalResult<()>;

    /// Maps a whole allocation into the process (mmap at offset = its physical address, docs/driver.md §7).
    ///
    /// # Safety
    ///
    /// The returned [`Mapping`] aliases memory the device reads and writes. The caller must:
    /// - access only `ptr .. ptr + len`, and only until [`Hal::unmap`] or [`Hal::mem_free`] of
    ///   the handle (after which the pointer dangles);
    /// - not read or write bytes that a device operation started by an earlier HAL call may still
    ///   be accessing (a DMA in flight, an engine running), and not let device operations access
    ///   bytes while a host access is in progress: order the two through HAL calls — a completed
    ///   [`Hal::wait`] is the synchronisation point after which the device's writes are visible,
    ///   and any HAL call that starts device work (e.g. [`Hal::dma_queue_copy_start`],
    ///   [`Hal::semaphore_increment`]) publishes the host's earlier writes to the device;
    /// - not create overlapping `&mut` references from two mappings of the same handle.
    unsafe fn map(&self, handle: MemHandle) -> HalResult<Mapping>;

    /// Unmaps a mapping made by [`Hal::map`].
    ///
    /// # Safety
    ///
    /// `mapping` came from [`Hal::map`] on this backend, and no reference derived from its
    /// pointer is used afterwards.
    unsafe fn unmap(&self, mapping: Mapping) -> HalResult<()>;

    /// Initialises a DMA queue on the given TX and RX rings (`DMA_QUEUE_INIT`, no completion
    /// ring). Resets the queue's head, tail and ring-id phase.
    fn dma_queue_init(&self, queue: QueueRef, tx: RingSpec, rx: RingSpec) -> HalResult<()>;

    /// Makes `tx_count` more TX and `rx_count` more RX descriptors available to the engine
    /// (`DMA_QUEUE_COPY_START`: RX tail first, then TX). `rx_count` must be non-zero.
    fn dma_queue_copy_start(&self, queue: QueueRef, tx_count: u32, rx_count: u32) -> HalResult<()>;

    /// Ring pointers and status of a queue (`DMA_QUEUE_GET_STATE`).
    fn dma_queue_state(&self, queue: QueueRef) -> HalResult<QueueState>;

    /// Reads a semaphore (`SEMAPHORE_READ`).
    fn semaphore_read(&self, nc: NcIndex, sem: SemaphoreId) -> HalResult<i32>;

    /// Sets a semaphore (`SEMAPHORE_WRITE`).
    fn semaphore_write(&self, nc: NcIndex, sem: SemaphoreId, value: i32) -> HalResult<()>;

    /// Adds `amount` to a semaphore (`SEMAPHORE_INCREMENT`) — the doorbell of an execution.
    fn semaphore_increment(&self, nc: NcIndex, sem: SemaphoreId, amount: u32) -> HalResult<()>;

    /// Subtracts `amount` from a semaphore (`SEMAPHORE_DECREMENT`).
    fn semaphore_decrement(&self, nc: NcIndex, sem: SemaphoreId, amount: u32) -> HalResult<()>;

    /// Sets an event to 0 or 1 (`EVENT_SET`).
    fn event_set(&self, nc: NcIndex, event: EventId, value: u32) -> HalResult<()>;

    /// Reads an event (`EVENT_GET`).
    fn event_get(&self, nc: NcIndex, event: EventId) -> HalResult<u32>;

    /// Creates (or returns the existing) notification queue for (core, type, index)
    /// (`NOTIFICATIONS_INIT_V2`).
    fn notification_init(&self, req: &NqRequest) -> HalResult<NotificationQueue>;

    /// Resets the cores in `nc_mask` (bit n = core n) and waits until they are ready
    /// (`NC_RESET` + `NC_RESET_READY`). Their queues, semaphores, events and notification
    /// queues return to their initial state; allocations survive.
    fn nc_reset(&self, nc_mask: u32) -> HalResult<()>;

    /// Blocks until `cond` holds or `timeout` passes.
    ///
    /// On the simulator this is where device time advances: the device runs its pending work
    /// until the condition holds. If the device goes idle with the condition still false (for
    /// example an engine waits on a semaphore nobody will signal), nothing more can happen by
    /// itself, and the call waits on the host for another thread's HAL call until `timeout`
    /// (host time) passes. On the driver backend it polls.
    fn wait(&self, cond: &WaitCondition, timeout: Duration) -> HalResult<()>;

    /// Memory accounted to core `nc`, per category.
    fn memory_usage(&self, nc: NcIndex) -> HalResult<CoreMemUsage>;

    /// The backend's profiling capability — the device timeline and per-execution activity
    /// counters ([`crate::profile`]) — if it offers one: the simulator does, the driver backend
    /// does not (the default). Not a device operation: it makes no device call and is not
    /// among [`HAL_METHODS`].
    fn profiler(&self) -> Option<&dyn Profiler> {
        None
    }
}

/// The name of every [`Hal`] device operation, in trait order, as [`HalLayer::on_call`] reports
/// them ([`Hal::profiler`], a capability rather than an operation, is not one).
pub const HAL_METHODS: [&str; 22] = [
    "device_info",
    "mem_alloc",
    "mem_free",
    "mem_info",
    "copy_to_device",
    "copy_from_device",
    "memset",
    "map",
    "unmap",
    "dma_queue_init",
    "dma_queue_copy_start",
    "dma_queue_state",
    "semaphore_read",
    "semaphore_write",
    "semaphore_increment",
    "semaphore_decrement",
    "event_set",
    "event_get",
    "notification_init",
    "nc_reset",
    "wait",
    "memory_usage",
];

/// A decorator of a [`Hal`]: a backend wrapped to observe or change some of its calls (the
/// conformance recorder, fault and mutation layers in tests, benchmark harnesses).
///
/// A layer names the backend it wraps ([`HalLayer::inner`]); every method of [`Hal`] is
/// provided here, forwarding to that backend, and the blanket `impl<L: HalLayer> Hal for L`
/// makes each layer a [`Hal`]. A layer overrides only the methods it changes, and when the
/// trait grows, the new method forwards without touching any layer.
///
/// ```
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use nrt_hal::{Hal, HalLayer, HalResult, NcIndex, SemaphoreId};
///
/// /// Counts doorbells (semaphore increments) and forwards everything.
/// struct Doorbells<H> {
///     inner: H,
///     rung: AtomicU64,
/// }
///
/// impl<H: Hal> HalLayer for Doorbells<H> {
///     type Inner = H;
///     fn inner(&self) -> &H {
///         &self.inner
///     }
///     fn semaphore_increment(&self, nc: NcIndex, sem: SemaphoreId, n: u32) -> HalResult<()> {
///         self.rung.fetch_add(1, Ordering::Relaxed);
///         self.inner.semaphore_increment(nc, sem, n)
///     }
/// }
/// ```
///
/// The methods share their names with [`Hal`]'s, so a module that calls them on a layer
/// (rather than implementing one) imports only [`Hal`].
pub trait HalLayer: Send + Sync {
    /// The backend this layer wraps.
    type Inner: Hal + ?Sized;

    /// The wrapped backend; every method not overridden forwards to it.
    fn inner(&self) -> &Self::Inner;

    /// Called before every [`Hal`] method of the layer with the method's name (one of
    /// [`HAL_METHODS`]); does nothing unless overridden. A layer that counts or logs calls
    /// overrides only this.
    fn on_call(&self, method: &'static str) {
        let _ = method;
    }

    /// [`Hal::device_info`].
    fn device_info(&self) -> HalResult<DeviceInfo> {
        self.inner().device_info()
    }
    /// [`Hal::mem_alloc`].
    fn mem_alloc(&self, req: &AllocRequest) -> HalResult<MemHandle> {
        self.inner().mem_alloc(req)
    }
    /// [`Hal::mem_free`].
    fn mem_free(&self, handle: MemHandle) -> HalResult<()> {
        self.inner().mem_free(handle)
    }
    /// [`Hal::mem_info`].
    fn mem_info(&self, handle: MemHandle) -> HalResult<MemInfo> {
        self.inner().mem_info(handle)
    }
    /// [`Hal::copy_to_device`].
    fn copy_to_device(&self, handle: MemHandle, offset: u64, src: &[u8]) -> HalResult<()> {
        self.inner().copy_to_device(handle, offset, src)
    }
    /// [`Hal::copy_from_device`].
    fn copy_from_device(&self, handle: MemHandle, offset: u64, dst: &mut [u8]) -> HalResult<()> {
        self.inner().copy_from_device(handle, offset, dst)
    }
    /// [`Hal::memset`].
    fn memset(&self, handle: MemHandle, offset: u64, value: u8, size: u64) -> HalResult<()> {
        self.inner().memset(handle, offset, value, size)
    }
    /// [`Hal::map`].
    ///
    /// # Safety
    ///
    /// As [`Hal::map`].
    unsafe fn map(&self, handle: MemHandle) -> HalResult<Mapping> {
        // SAFETY: the caller upholds `Hal::map`'s contract for this call, and the mapping comes
        // from the inner backend, whose memory it aliases; forwarding changes neither.
        unsafe { self.inner().map(handle) }
    }
    /// [`Hal::unmap`].
    ///
    /// # Safety
    ///
    /// As [`Hal::unmap`]: `mapping` came from [`HalLayer::map`] of this layer (so from the inner
    /// backend) and is no longer used.
    unsafe fn unmap(&self, mapping: Mapping) -> HalResult<()> {
        // SAFETY: per this method's contract the mapping came from the inner backend's `map`
        // and nothing derived from it is used afterwards.
        unsafe { self.inner().unmap(mapping) }
    }
    /// [`Hal::dma_queue_init`].
    fn dma_queue_init(&self, queue: QueueRef, tx: RingSpec, rx: RingSpec) -> HalResult<()> {
        self.inner().dma_queue_init(queue, tx, rx)
    }
    /// [`Hal::dma_queue_copy_start`].
    fn dma_queue_copy_start(&self, queue: QueueRef, tx_count: u32, rx_count: u32) -> HalResult<()> {
        self.inner().dma_queue_copy_start(queue, tx_count, rx_count)
    }
    /// [`Hal::dma_queue_state`].
    fn dma_queue_state(&self, queue: QueueRef) -> HalResult<QueueState> {
        self.inner().dma_queue_state(queue)
    }
    /// [`Hal::semaphore_read`].
    fn semaphore_read(&self, nc: NcIndex, sem: SemaphoreId) -> HalResult<i32> {
        self.inner().semaphore_read(nc, sem)
    }
    /// [`Hal::semaphore_write`].
    fn semaphore_write(&self, nc: NcIndex, sem: SemaphoreId, value: i32) -> HalResult<()> {
        self.inner().semaphore_write(nc, sem, value)
    }
    /// [`Hal::semaphore_increment`].
    fn semaphore_increment(&self, nc: NcIndex, sem: SemaphoreId, amount: u32) -> HalResult<()> {
        self.inner().semaphore_increment(nc, sem, amount)
    }
    /// [`Hal::semaphore_decrement`].
    fn semaphore_decrement(&self, nc: NcIndex, sem: SemaphoreId, amount: u32) -> HalResult<()> {
        self.inner().semaphore_decrement(nc, sem, amount)
    }
    /// [`Hal::event_set`].
    fn event_set(&self, nc: NcIndex, event: EventId, value: u32) -> HalResult<()> {
        self.inner().event_set(nc, event, value)
    }
    /// [`Hal::event_get`].
    fn event_get(&self, nc: NcIndex, event: EventId) -> HalResult<u32> {
        self.inner().event_get(nc, event)
    }
    /// [`Hal::notification_init`].
    fn notification_init(&self, req: &NqRequest) -> HalResult<NotificationQueue> {
        self.inner().notification_init(req)
    }
    /// [`Hal::nc_reset`].
    fn nc_reset(&self, nc_mask: u32) -> HalResult<()> {
        self.inner().nc_reset(nc_mask)
    }
    /// [`Hal::wait`].
    fn wait(&self, cond: &WaitCondition, timeout: Duration) -> HalResult<()> {
        self.inner().wait(cond, timeout)
    }
    /// [`Hal::memory_usage`].
    fn memory_usage(&self, nc: NcIndex) -> HalResult<CoreMemUsage> {
        self.inner().memory_usage(nc)
    }
    /// [`Hal::profiler`]: the inner backend's.
    fn profiler(&self) -> Option<&dyn Profiler> {
        self.inner().profiler()
    }
}

/// Every layer is a [`Hal`]: each method reports the call to [`HalLayer::on_call`], then calls
/// the layer's (overridden or forwarding) method.
impl<L: HalLayer> Hal for L {
    fn device_info(&self) -> HalResult<DeviceInfo> {
        self.on_call("device_info");
        HalLayer::device_info(self)
    }
    fn mem_alloc(&self, req: &AllocRequest) -> HalResult<MemHandle> {
        self.on_call("mem_alloc");
        HalLayer::mem_alloc(self, req)
    }
    fn mem_free(&self, handle: MemHandle) -> HalResult<()> {
        self.on_call("mem_free");
        HalLayer::mem_free(self, handle)
    }
    fn mem_info(&self, handle: MemHandle) -> HalResult<MemInfo> {
        self.on_call("mem_info");
        HalLayer::mem_info(self, handle)
    }
    fn copy_to_device(&self, handle: MemHandle, offset: u64, src: &[u8]) -> HalResult<()> {
        self.on_call("copy_to_device");
        HalLayer::copy_to_device(self, handle, offset, src)
    }
    fn copy_from_device(&self, handle: MemHandle, offset: u64, dst: &mut [u8]) -> HalResult<()> {
        self.on_call("copy_from_device");
        HalLayer::copy_from_device(self, handle, offset, dst)
    }
    fn memset(&self, handle: MemHandle, offset: u64, value: u8, size: u64) -> HalResult<()> {
        self.on_call("memset");
        HalLayer::memset(self, handle, offset, value, size)
    }
    unsafe fn map(&self, handle: MemHandle) -> HalResult<Mapping> {
        self.on_call("map");
        // SAFETY: the caller upholds `Hal::map`'s contract, which is `HalLayer::map`'s.
        unsafe { HalLayer::map(self, handle) }
    }
    unsafe fn unmap(&self, mapping: Mapping) -> HalResult<()> {
        self.on_call("unmap");
        // SAFETY: the mapping came from `Hal::map` of this layer, i.e. from `HalLayer::map`,
        // and is no longer used: `HalLayer::unmap`'s contract.
        unsafe { HalLayer::unmap(self, mapping) }
    }
    fn dma_queue_init(&self, queue: QueueRef, tx: RingSpec, rx: RingSpec) -> HalResult<()> {
        self.on_call("dma_queue_init");
        HalLayer::dma_queue_init(self, queue, tx, rx)
    }
    fn dma_queue_copy_start(&self, queue: QueueRef, tx_count: u32, rx_count: u32) -> HalResult<()> {
        self.on_call("dma_queue_copy_start");
        HalLayer::dma_queue_copy_start(self, queue, tx_count, rx_count)
    }
    fn dma_queue_state(&self, queue: QueueRef) -> HalResult<QueueState> {
        self.on_call("dma_queue_state");
        HalLayer::dma_queue_state(self, queue)
    }
    fn semaphore_read(&self, nc: NcIndex, sem: SemaphoreId) -> HalResult<i32> {
        self.on_call("semaphore_read");
        HalLayer::semaphore_read(self, nc, sem)
    }
    fn semaphore_write(&self, nc: NcIndex, sem: SemaphoreId, value: i32) -> HalResult<()> {
        self.on_call("semaphore_write");
        HalLayer::semaphore_write(self, nc, sem, value)
    }
    fn semaphore_increment(&self, nc: NcIndex, sem: SemaphoreId, amount: u32) -> HalResult<()> {
        self.on_call("semaphore_increment");
        HalLayer::semaphore_increment(self, nc, sem, amount)
    }
    fn semaphore_decrement(&self, nc: NcIndex, sem: SemaphoreId, amount: u32) -> HalResult<()> {
        self.on_call("semaphore_decrement");
        HalLayer::semaphore_decrement(self, nc, sem, amount)
    }
    fn event_set(&self, nc: NcIndex, event: EventId, value: u32) -> HalResult<()> {
        self.on_call("event_set");
        HalLayer::event_set(self, nc, event, value)
    }
    fn event_get(&self, nc: NcIndex, event: EventId) -> HalResult<u32> {
        self.on_call("event_get");
        HalLayer::event_get(self, nc, event)
    }
    fn notification_init(&self, req: &NqRequest) -> HalResult<NotificationQueue> {
        self.on_call("notification_init");
        HalLayer::notification_init(self, req)
    }
    fn nc_reset(&self, nc_mask: u32) -> HalResult<()> {
        self.on_call("nc_reset");
        HalLayer::nc_reset(self, nc_mask)
    }
    fn wait(&self, cond: &WaitCondition, timeout: Duration) -> HalResult<()> {
        self.on_call("wait");
        HalLayer::wait(self, cond, timeout)
    }
    fn memory_usage(&self, nc: NcIndex) -> HalResult<CoreMemUsage> {
        self.on_call("memory_usage");
        HalLayer::memory_usage(self, nc)
    }
    fn profiler(&self) -> Option<&dyn Profiler> {
        HalLayer::profiler(self)
    }
}
