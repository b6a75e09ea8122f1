//! The Linux Neuron kernel driver's user-space ABI: ioctl request numbers and the `#[repr(C)]`
//! argument structs they carry.
//!
//! Source of every number: docs/driver.md §2 (encoding, request table, return values)
//! and docs/driver.md §3 (struct layouts), which were computed by compiling the driver's own headers
//! (`neuron_ioctl.h`, `share/neuron_driver_shared.h`, aws-neuronx-dkms 2.24.7.0) on x86-64. The
//! driver backend (`hal::driver`) emits these numbers and structs; the simulator's kernel-ABI
//! emulation decodes them. Neither side keeps a private copy.
//!
//! # What this module owns
//!
//! * [`IOCTL_BASE`] (`'N'`) and one request number per driver ioctl, as `pub const u32` in [`req`]
//!   and as the enum [`Ioctl`] (with [`Ioctl::request`], [`Ioctl::name`],
//!   [`Ioctl::from_request`] and [`Ioctl::arg_size`]) for dispatch. Every number is built with
//!   nix's `request_code_{none,read,write,readwrite}!` macros and pinned to the literal of
//!   docs/driver.md §2.2 by the tests.
//! * The argument structs, named after the C struct without `neuron_ioctl_` in CamelCase
//!   (`neuron_ioctl_mem_alloc_v2_mem_type64` → [`MemAllocV2Mt64`]), fields named as in the
//!   driver. All derive zerocopy's `FromBytes, IntoBytes, Immutable, KnownLayout`; implicit C
//!   padding is spelled out as `_pad*` byte arrays (always zero when we write them), so the byte
//!   image is fully defined. Each struct's size and every field offset is asserted at compile
//!   time against docs/driver.md §3.
//! * The enums and constants those structs carry ([`MemAllocCategory`], [`NqType`],
//!   [`NqDeviceType`], [`DmaQueueType`], [`UdmaState`], [`Arch`], [`MmapBlock`],
//!   [`MmapResource`], [`DriverFeatures`], [`NC_MAP_DEVICE`], …).
//!
//! # Encoding rules the backend must follow
//!
//! * `request = dir << 30 | size << 16 | 'N' << 8 | nr` (generic Linux encoding, x86-64 and
//!   aarch64 — the only hosts the driver supports; a compile-time assertion fails the build on a
//!   host whose encoding differs).
//! * **The direction bits are not semantically meaningful.** Many `_IOR` ioctls are pure inputs,
//!   and `DEVICE_BASIC_INFO` / `COMPATIBLE_VERSION` are `_IOW` yet return data. The driver
//!   compares the full 32-bit command, so the exact numbers here must be emitted — never
//!   re-derive them from what the ioctl "does".
//! * **Pointer-vs-struct size rule.** When the driver's macro names a *pointer* type
//!   (`struct X *`) the size field is [`PTR_SIZE`] (8) whatever the struct's size; the newer
//!   `…64`/`V2MT`/`BATCH`/`_EXT0` variants name the *struct*, so their size field is the real
//!   struct size; `__u8` encodes 1 and `__s32` 4. Several ioctls therefore share an `nr` and
//!   differ only in size (MEM_ALLOC_V2 / V2MT / V2MT64 are all nr 102 with sizes 8 / 48 / 56).
//!   The rule affects only the number: in every case the ioctl argument is the user address of
//!   the struct itself, and the driver copies `sizeof(struct)` bytes ([`Ioctl::arg_size`]).
//! * **Pointer fields.** Fields the C struct declares as pointers (`__u64 *`, `void *`,
//!   `struct X *`) are `u64` here holding a *user-space address* (LP64); the driver reads or
//!   writes through them with `copy_{from,to}_user`. They are documented as such on each field.
//!
//! # Return-value conventions (docs/driver.md §2.3)
//!
//! * Most failures are a negative errno (`ioctl()` returns -1 and sets `errno`).
//! * Many paths return the raw result of `copy_to_user`, i.e. a **positive count of bytes not
//!   copied** instead of `-EFAULT`; `ioctl()` then returns that positive number with `errno`
//!   untouched. Treat any positive return as failure.
//! * `MEM_GET_EXTENDED_INFO` with a bad handle returns **positive `EINVAL` (22)**.
//! * Several paths return a literal `-1` (seen as `EPERM`): `NOTIFICATIONS_QUEUE_INFO`, unknown
//!   semaphore/event sub-commands, and udma errors propagated from `DMA_QUEUE_INIT` /
//!   `DMA_QUEUE_COPY_START`.
//! * Unknown commands: `-EINVAL` (after the misc-fd fallback).
//!
//! # Hazards the driver backend must avoid (docs/driver.md §12)
//!
//! 1. Request numbers encode size 8 for pointer-typed macros; use exactly the values in [`req`].
//! 2. `MEM_GET_EXTENDED_INFO` overwrites `mem_handle` with a *kernel pointer* and leaves garbage
//!    in `version`; a bad handle returns positive 22. Keep the handle in a separate variable.
//! 3. A host allocation with non-zero `align` fails with `-EINVAL`.
//! 4. `DMA_QUEUE_INIT` with `rxc_handle != 0` fails with `-1`.
//! 5. `DMA_QUEUE_COPY_START` with `rx_desc_count == 0`, or on a queue without an RX ring, hits a
//!    **kernel BUG**.
//! 6. `DMA_ACK_COMPLETED` on a non-power-of-two ring hits a kernel BUG (and has no hardware
//!    effect anyway) — do not issue it.
//! 7. `MEM_BUF_COPY64` to/from device memory truncates sizes ≥ 4 GiB; split large copies.
//! 8. `DMA_DESCRIPTOR_COPYOUT` ignores `start_index` for device-memory rings.
//! 9. `NOTIFICATIONS_QUEUE_INFO` is unimplemented (returns -1); the NQ entry format is not in the
//!    driver (see [`crate::notify`]).
//! 10. The NQ hardware slot is `engine_index` (type ignored) in the setter, contradicting the
//!     driver's own decoder; do not derive slot numbering from the driver alone.
//! 11. Event ioctls accept index 256 and do not validate `nc_id`; validate before calling.
//! 12. `DEVICE_INFO.bar_address` are kernel virtual addresses, needed only as the base for
//!     `BAR_READ` / `BAR_WRITE` addresses.

use core::mem::{offset_of, size_of};
use core::ops::RangeInclusive;

use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

/// `NEURON_IOCTL_BASE`, the ioctl "type" byte: the character `'N'` (0x4E).
pub const IOCTL_BASE: u8 = b'N';

/// The size field a pointer-typed ioctl macro (`_IOR('N', nr, struct X *)`) encodes: the size of
/// a pointer on LP64 (x86-64, aarch64), whatever the pointed-to struct's size.
pub const PTR_SIZE: usize = 8;

/// `_IOC_NONE`: direction bits of an `_IO` request.
pub const IOC_NONE: u8 = 0;
/// `_IOC_WRITE`: direction bit of an `_IOW` request (user → kernel, nominally).
pub const IOC_WRITE: u8 = 1;
/// `_IOC_READ`: direction bit of an `_IOR` request (kernel → user, nominally).
pub const IOC_READ: u8 = 2;

/// `_IOC_NR(request)`: the command number, bits 7:0.
pub const fn ioc_nr(request: u32) -> u8 {
    (request & 0xFF) as u8
}

/// `_IOC_TYPE(request)`: the type byte, bits 15:8 ([`IOCTL_BASE`] for this driver).
pub const fn ioc_type(request: u32) -> u8 {
    ((request >> 8) & 0xFF) as u8
}

/// `_IOC_SIZE(request)`: the 14-bit size field, bits 29:16.
pub const fn ioc_size(request: u32) -> u16 {
    ((request >> 16) & 0x3FFF) as u16
}

/// `_IOC_DIR(request)`: the direction bits 31:30 ([`IOC_NONE`], [`IOC_WRITE`], [`IOC_READ`] or
/// both). Not semantically meaningful for this driver — see the module docs.
pub const fn ioc_dir(request: u32) -> u8 {
    (request >> 30) as u8
}

// ---------------------------------------------------------------------------------------------
// Request numbers
// ---------------------------------------------------------------------------------------------

/// One table drives [`req`], [`Ioctl`] and its lookups, so they cannot drift apart.
///
/// Row syntax: `Variant => CONST: _IOx(nr, size, "C type in the macro") -> ArgStruct;` where
/// `size` follows the driver's macro (`PTR_SIZE` for a pointer type, `size_of::<T>()` for a
/// struct type) and `-> ArgStruct` (optional) is the type the driver copies at the user address
/// (`()` for none).
macro_rules! ioctl_table {
    ($(
        $(#[doc = $doc:literal])*
        $variant:ident => $konst:ident : $dir:ident ( $nr:literal $(, $size:expr, $cty:literal)? )
            $(-> $arg:ty)? ;
    )*) => {
        /// Request numbers of every driver ioctl, as the exact 32-bit values the driver compares.
        ///
        /// Names are the C macro names without the `NEURON_IOCTL_` prefix. Built with nix's
        /// `request_code_*!` macros following the driver's macro (pointer type → size
        /// [`PTR_SIZE`](crate::abi::PTR_SIZE), struct type → struct size).
        pub mod req {
            #[allow(unused_imports)]
            use super::*;
            $(
                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = concat!(
                    "`NEURON_IOCTL_", stringify!($konst), "` = `", stringify!($dir), "('N', ",
                    stringify!($nr) $(, ", ", $cty)?, ")`."
                )]
                pub const $konst: u32 = ioctl_table!(@code $dir, $nr $(, $size)?);
            )*
        }

        /// Every driver ioctl, for dispatch on a request number (the simulator's ABI emulation)
        /// and for tracing (the driver backend). See [`req`] for the raw numbers.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Ioctl {
            $(
                $(#[doc = $doc])*
                #[doc = ""]
                #[doc = concat!("Request [`req::", stringify!($konst), "`].")]
                $variant,
            )*
        }

        impl Ioctl {
            /// Every ioctl, in table order.
            pub const ALL: &'static [Ioctl] = &[$(Ioctl::$variant),*];

            /// The exact 32-bit request number to pass to `ioctl(2)`.
            pub const fn request(self) -> u32 {
                match self {
                    $(Ioctl::$variant => req::$konst,)*
                }
            }

            /// The C macro name without the `NEURON_IOCTL_` prefix (e.g. `"MEM_ALLOC_V2MT64"`),
            /// identical to the constant's name in [`req`].
            pub const fn name(self) -> &'static str {
                match self {
                    $(Ioctl::$variant => stringify!($konst),)*
                }
            }

            /// The ioctl whose full 32-bit request number is `request`, if any. Ioctls that share
            /// an `nr` (e.g. MEM_ALLOC_V2 / V2MT / V2MT64) are told apart by their size field.
            #[deny(unreachable_patterns)] // two equal request numbers would be a table error
            pub const fn from_request(request: u32) -> Option<Ioctl> {
                match request {
                    $(req::$konst => Some(Ioctl::$variant),)*
                    _ => None,
                }
            }

            /// Bytes the driver copies from/to the user address passed as the ioctl argument:
            /// `sizeof` the argument struct (not the encoded size, which is 8 for pointer-typed
            /// macros). `Some(0)` when the ioctl takes no argument; `None` when this module does
            /// not model the argument struct.
            pub const fn arg_size(self) -> Option<usize> {
                match self {
                    $(Ioctl::$variant => ioctl_table!(@arg $($arg)?),)*
                }
            }
        }
    };

    (@code _IO, $nr:literal) => {
        nix::request_code_none!($crate::abi::IOCTL_BASE, $nr) as u32
    };
    (@code _IOR, $nr:literal, $size:expr) => {
        nix::request_code_read!($crate::abi::IOCTL_BASE, $nr, $size) as u32
    };
    (@code _IOW, $nr:literal, $size:expr) => {
        nix::request_code_write!($crate::abi::IOCTL_BASE, $nr, $size) as u32
    };
    (@code _IOWR, $nr:literal, $size:expr) => {
        nix::request_code_readwrite!($crate::abi::IOCTL_BASE, $nr, $size) as u32
    };
    (@arg) => { None };
    (@arg $arg:ty) => { Some(size_of::<$arg>()) };
}

ioctl_table! {
    /// Deprecated: closes DMA and starts a full device reset; returns 0.
    DeviceReset => DEVICE_RESET: _IO(1) -> ();
    /// Deprecated: waits for a reset of the caller's pid, writes one byte (1 = ok).
    DeviceReady => DEVICE_READY: _IOR(2, 1, "__u8") -> u8;
    /// Fills a [`DeviceInfo`] (80 bytes).
    DeviceInfo => DEVICE_INFO: _IOR(3, PTR_SIZE, "struct neuron_ioctl_device_info *") -> DeviceInfo;
    /// Deprecated no-op; returns 0.
    DeviceInit => DEVICE_INIT: _IOR(4, PTR_SIZE, "struct neuron_ioctl_device_init *") -> DeviceInit;
    /// Deprecated no-op; returns 0.
    DeviceRelease => DEVICE_RELEASE: _IO(5) -> ();
    /// Pid of attached process slot 0.
    DeviceAppPid => DEVICE_APP_PID: _IOR(6, 4, "__s32") -> i32;
    /// Attached-process table (variable-length argument; not modelled).
    DeviceGetAllAppsInfo => DEVICE_GET_ALL_APPS_INFO:
        _IOR(7, PTR_SIZE, "struct neuron_ioctl_get_apps_info *");
    /// Reads BAR registers at kernel virtual addresses (docs/driver.md §7).
    BarRead => BAR_READ: _IOR(11, PTR_SIZE, "struct neuron_ioctl_bar_rw *") -> BarRw;
    /// Writes BAR0 registers (write-block list applies); requires attach.
    BarWrite => BAR_WRITE: _IOW(12, PTR_SIZE, "struct neuron_ioctl_bar_rw *") -> BarRw;
    /// Writes a metric into misc RAM.
    PostMetric => POST_METRIC: _IOW(13, PTR_SIZE, "struct neuron_ioctl_post_metric *")
        -> PostMetric;
    /// v1 allocation API; requires attach.
    MemAlloc => MEM_ALLOC: _IOR(21, PTR_SIZE, "struct neuron_ioctl_mem_alloc *") -> MemAlloc;
    /// Frees a memory handle; requires attach.
    MemFree => MEM_FREE: _IOR(22, PTR_SIZE, "struct neuron_ioctl_mem_free *") -> MemFree;
    /// DMA copy between two handles, 32-bit sizes; requires attach.
    MemCopy => MEM_COPY: _IOR(23, PTR_SIZE, "struct neuron_ioctl_mem_copy *") -> MemCopy;
    /// DMA copy between two handles, 64-bit sizes.
    MemCopy64 => MEM_COPY64: _IOR(23, size_of::<MemCopy64>(), "struct neuron_ioctl_mem_copy64")
        -> MemCopy64;
    /// User buffer ↔ memory handle copy, 32-bit sizes.
    MemBufCopy => MEM_BUF_COPY: _IOWR(24, PTR_SIZE, "struct neuron_ioctl_mem_buf_copy *")
        -> MemBufCopy;
    /// User buffer ↔ memory handle copy, 64-bit sizes.
    MemBufCopy64 => MEM_BUF_COPY64:
        _IOWR(24, size_of::<MemBufCopy64>(), "struct neuron_ioctl_mem_buf_copy64") -> MemBufCopy64;
    /// Deprecated: physical address of a handle (use MEM_GET_EXTENDED_INFO); requires attach.
    MemGetPa => MEM_GET_PA: _IOR(25, PTR_SIZE, "struct neuron_ioctl_mem_get_pa *") -> MemGetPa;
    /// Deprecated: mmap offset and pa of a handle; requires attach.
    MemGetInfo => MEM_GET_INFO: _IOR(26, PTR_SIZE, "struct neuron_ioctl_mem_get_info *")
        -> MemGetInfo;
    /// Copies a user buffer to an engine address via driver DMA.
    ProgramEngine => PROGRAM_ENGINE: _IOWR(27, PTR_SIZE, "struct neuron_ioctl_program_engine *")
        -> ProgramEngine;
    /// Fills a handle's range with the low byte of `value`, 32-bit size.
    Memset => MEMSET: _IOR(28, PTR_SIZE, "struct neuron_ioctl_memset *") -> Memset;
    /// Fills a handle's range with the low byte of `value`, 64-bit size.
    Memset64 => MEMSET64: _IOR(28, size_of::<Memset64>(), "struct neuron_ioctl_memset64")
        -> Memset64;
    /// pa, mmap offset, size, pid of a handle (see hazard 2).
    MemGetExtendedInfo => MEM_GET_EXTENDED_INFO:
        _IOR(29, PTR_SIZE, "struct neuron_ioctl_mem_get_extended_info *") -> MemGetExtendedInfo;
    /// Deprecated no-op; returns 0. Requires attach.
    DmaEngInit => DMA_ENG_INIT: _IOR(30, PTR_SIZE, "struct neuron_ioctl_dma_eng_init *")
        -> DmaEngInit;
    /// Writes an engine's m2s/s2m change-state registers; requires attach.
    DmaEngSetState => DMA_ENG_SET_STATE:
        _IOR(31, PTR_SIZE, "struct neuron_ioctl_dma_eng_set_state *") -> DmaEngSetState;
    /// Reads an engine's state into a user [`DmaEngState`].
    DmaEngGetState => DMA_ENG_GET_STATE:
        _IOWR(32, PTR_SIZE, "struct neuron_ioctl_dma_eng_get_state *") -> DmaEngGetState;
    /// Initialises one DMA queue's rings; requires attach.
    DmaQueueInit => DMA_QUEUE_INIT: _IOR(33, PTR_SIZE, "struct neuron_ioctl_dma_queue_init *")
        -> DmaQueueInit;
    /// No-op (trace only); returns 0. Requires attach.
    DmaQueueRelease => DMA_QUEUE_RELEASE:
        _IOR(34, PTR_SIZE, "struct neuron_ioctl_dma_queue_release *") -> DmaQueueRelease;
    /// Increments a queue's TX/RX tail registers by descriptor counts (hazard 5).
    DmaQueueCopyStart => DMA_QUEUE_COPY_START:
        _IOR(35, PTR_SIZE, "struct neuron_ioctl_dma_queue_copy_start *") -> DmaQueueCopyStart;
    /// Software completion counter only (hazard 6); requires attach.
    DmaAckCompleted => DMA_ACK_COMPLETED:
        _IOR(36, PTR_SIZE, "struct neuron_ioctl_dma_ack_completed *") -> DmaAckCompleted;
    /// Reads a queue's TX and RX state into user [`DmaQueueState`]s.
    DmaQueueGetState => DMA_QUEUE_GET_STATE:
        _IOWR(37, PTR_SIZE, "struct neuron_ioctl_dma_queue_get_state *") -> DmaQueueGetState;
    /// Copies user descriptors into a ring, 32-bit offset; requires attach.
    DmaCopyDescriptors => DMA_COPY_DESCRIPTORS:
        _IOR(38, PTR_SIZE, "struct neuron_ioctl_dma_copy_descriptors *") -> DmaCopyDescriptors;
    /// Copies user descriptors into a ring, 64-bit offset.
    DmaCopyDescriptors64 => DMA_COPY_DESCRIPTORS64:
        _IOR(38, size_of::<DmaCopyDescriptors64>(), "struct neuron_ioctl_dma_copy_descriptors64")
        -> DmaCopyDescriptors64;
    /// Copies ring descriptors out to a user buffer (hazard 8).
    DmaDescriptorCopyout => DMA_DESCRIPTOR_COPYOUT:
        _IOWR(39, PTR_SIZE, "struct neuron_ioctl_dma_descriptor_copyout *")
        -> DmaDescriptorCopyout;
    /// Removed: returns `-ENOIOCTLCMD`.
    DmaQuiesceQueues => DMA_QUIESCE_QUEUES:
        _IOR(40, PTR_SIZE, "struct neuron_ioctl_dma_quiesce_all *");
    /// Increments a core semaphore by `value`.
    SemaphoreIncrement => SEMAPHORE_INCREMENT:
        _IOR(41, PTR_SIZE, "struct neuron_ioctl_semaphore *") -> Semaphore;
    /// Decrements a core semaphore by `value`.
    SemaphoreDecrement => SEMAPHORE_DECREMENT:
        _IOR(42, PTR_SIZE, "struct neuron_ioctl_semaphore *") -> Semaphore;
    /// Reads a core semaphore; the value is written back into the struct.
    SemaphoreRead => SEMAPHORE_READ: _IOWR(43, PTR_SIZE, "struct neuron_ioctl_semaphore *")
        -> Semaphore;
    /// Sets a core semaphore to `value`.
    SemaphoreWrite => SEMAPHORE_WRITE: _IOR(44, PTR_SIZE, "struct neuron_ioctl_semaphore *")
        -> Semaphore;
    /// Sets a core event; the macro names the semaphore struct (same layout as [`Event`]).
    EventSet => EVENT_SET: _IOR(45, PTR_SIZE, "struct neuron_ioctl_semaphore *") -> Event;
    /// Reads a core event; the value is written back. Macro names the semaphore struct.
    EventGet => EVENT_GET: _IOWR(46, PTR_SIZE, "struct neuron_ioctl_semaphore *") -> Event;
    /// v1 notification-queue init (host memory only); requires attach.
    NotificationsInitV1 => NOTIFICATIONS_INIT_V1:
        _IOR(51, PTR_SIZE, "struct neuron_ioctl_notifications_init_v1 *") -> NotificationsInitV1;
    /// No-op; returns 0.
    NotificationsDestroyV1 => NOTIFICATIONS_DESTROY_V1:
        _IOR(52, PTR_SIZE, "struct neuron_ioctl_notifications_destroy *") -> NotificationsDestroy;
    /// Notification-queue init (reuses existing memory); requires attach.
    NotificationsInitV2 => NOTIFICATIONS_INIT_V2:
        _IOR(53, PTR_SIZE, "struct neuron_ioctl_notifications_init_v2 *") -> NotificationsInitV2;
    /// Notification-queue init with optional forced reallocation; requires attach.
    NotificationsInitWithReallocV2 => NOTIFICATIONS_INIT_WITH_REALLOC_V2:
        _IOR(54, PTR_SIZE, "struct neuron_ioctl_notifications_init_with_realloc_v2 *")
        -> NotificationsInitWithReallocV2;
    /// **Not implemented**: returns -1.
    NotificationsQueueInfo => NOTIFICATIONS_QUEUE_INFO:
        _IOR(58, PTR_SIZE, "struct neuron_ioctl_notifications_queue_info *")
        -> NotificationsQueueInfo;
    /// Reads hardware counters (not modelled).
    ReadHwCounters => READ_HW_COUNTERS:
        _IOR(61, PTR_SIZE, "struct neuron_ioctl_read_hw_counters *");
    /// Neuron DS acquire (not modelled).
    AcquireNeuronDs => ACQUIRE_NEURON_DS:
        _IOR(71, PTR_SIZE, "struct neuron_ioctl_neuron_ds_info *");
    /// Neuron DS release (not modelled).
    ReleaseNeuronDs => RELEASE_NEURON_DS:
        _IOR(72, PTR_SIZE, "struct neuron_ioctl_neuron_ds_info *");
    /// Core reader-lock enter (not modelled).
    CrwlReaderEnter => CRWL_READER_ENTER: _IOW(81, PTR_SIZE, "struct neuron_ioctl_crwl *");
    /// Core reader-lock exit (not modelled).
    CrwlReaderExit => CRWL_READER_EXIT: _IOW(82, PTR_SIZE, "struct neuron_ioctl_crwl *");
    /// Core writer-lock enter (not modelled).
    CrwlWriterEnter => CRWL_WRITER_ENTER: _IOW(83, PTR_SIZE, "struct neuron_ioctl_crwl *");
    /// Core writer-lock downgrade (not modelled).
    CrwlWriterDowngrade => CRWL_WRITER_DOWNGRADE: _IOW(84, PTR_SIZE, "struct neuron_ioctl_crwl *");
    /// Claims `nc_count` consecutive free cores (misc fd).
    CrwlNcRangeMark => CRWL_NC_RANGE_MARK: _IOW(85, PTR_SIZE, "struct neuron_ioctl_crwl_nc_map *")
        -> CrwlNcMap;
    /// Claims cores, 512-bit bitmap (misc fd).
    CrwlNcRangeMarkExt0 => CRWL_NC_RANGE_MARK_EXT0:
        _IOWR(85, size_of::<CrwlNcMapExt>(), "struct neuron_ioctl_crwl_nc_map_ext") -> CrwlNcMapExt;
    /// Releases claimed cores (misc fd).
    CrwlNcRangeUnmark => CRWL_NC_RANGE_UNMARK:
        _IOW(86, PTR_SIZE, "struct neuron_ioctl_crwl_nc_map *") -> CrwlNcMap;
    /// Releases claimed cores, 512-bit bitmap (misc fd).
    CrwlNcRangeUnmarkExt0 => CRWL_NC_RANGE_UNMARK_EXT0:
        _IOW(86, size_of::<CrwlNcMapExt>(), "struct neuron_ioctl_crwl_nc_map_ext") -> CrwlNcMapExt;
    /// Sets a core's init state (see [`CinitState`]).
    CinitSetState => CINIT_SET_STATE: _IOW(91, PTR_SIZE, "struct neuron_ioctl_cinit_set *")
        -> CinitSet;
    /// Number of model starts on a core.
    NcModelStartedCount => NC_MODEL_STARTED_COUNT:
        _IOW(92, PTR_SIZE, "struct neuron_ioctl_nc_model_started_count *") -> NcModelStartedCount;
    /// Returns the accepted runtime-version range `{max, min}` (misc fd). `_IOW` but returns data.
    CompatibleVersion => COMPATIBLE_VERSION:
        _IOW(93, PTR_SIZE, "struct neuron_ioctl_compatible_version *") -> CompatibleVersion;
    /// Returns `{architecture, revision}` (misc fd). `_IOW` but returns data.
    DeviceBasicInfo => DEVICE_BASIC_INFO:
        _IOW(100, PTR_SIZE, "struct neuron_ioctl_device_basic_info *") -> DeviceBasicInfo;
    /// Deprecated: PCI bus/slot/function (not modelled).
    DeviceBdf => DEVICE_BDF: _IOR(101, PTR_SIZE, "struct neuron_ioctl_device_bdf *");
    /// Allocation without `mem_type` (forced UNKNOWN_{HOST,DEVICE}).
    MemAllocV2 => MEM_ALLOC_V2: _IOR(102, PTR_SIZE, "struct neuron_ioctl_mem_alloc_v2 *")
        -> MemAllocV2;
    /// Allocation with `mem_type`.
    MemAllocV2Mt => MEM_ALLOC_V2MT:
        _IOR(102, size_of::<MemAllocV2Mt>(), "struct neuron_ioctl_mem_alloc_v2_mem_type")
        -> MemAllocV2Mt;
    /// Allocation with `mem_type`; same handler as V2MT, the size marks ≥ 4 GiB copy support.
    MemAllocV2Mt64 => MEM_ALLOC_V2MT64:
        _IOR(102, size_of::<MemAllocV2Mt64>(), "struct neuron_ioctl_mem_alloc_v2_mem_type64")
        -> MemAllocV2Mt64;
    /// Asynchronous core reset; returns `request_id`.
    NcReset => NC_RESET: _IOR(103, PTR_SIZE, "struct neuron_ioctl_device_reset *") -> DeviceReset;
    /// Blocks until the reset `request_id` completes.
    NcResetReady => NC_RESET_READY: _IOR(104, PTR_SIZE, "struct neuron_ioctl_device_ready *")
        -> DeviceReady;
    /// Per-core PROGRAM_ENGINE, 32-bit size.
    ProgramEngineNc => PROGRAM_ENGINE_NC:
        _IOWR(105, PTR_SIZE, "struct neuron_ioctl_program_engine_nc *") -> ProgramEngineNc;
    /// Per-core PROGRAM_ENGINE, 64-bit size.
    ProgramEngineNc64 => PROGRAM_ENGINE_NC64:
        _IOWR(105, size_of::<ProgramEngineNc64>(), "struct neuron_ioctl_program_engine_nc64")
        -> ProgramEngineNc64;
    /// Deprecated: always writes 1.
    DeviceResetStatus => DEVICE_RESET_STATUS: _IOR(106, 1, "__u8") -> u8;
    /// PCI location of any device (misc fd; not modelled).
    DeviceBdfExt => DEVICE_BDF_EXT: _IOR(106, PTR_SIZE, "struct neuron_ioctl_device_bdf_ext *");
    /// dma-buf fd for a mapped range (misc fd).
    DmabufFd => DMABUF_FD: _IOR(107, PTR_SIZE, "struct neuron_ioctl_dmabuf_fd *") -> DmabufFd;
    /// Asynchronous copy, 32-bit sizes.
    MemCopyAsync => MEM_COPY_ASYNC:
        _IOWR(108, size_of::<MemCopyAsync>(), "struct neuron_ioctl_mem_copy_async")
        -> MemCopyAsync;
    /// Asynchronous copy, 64-bit sizes.
    MemCopyAsync64 => MEM_COPY_ASYNC64:
        _IOWR(108, size_of::<MemCopyAsync64>(), "struct neuron_ioctl_mem_copy_async64")
        -> MemCopyAsync64;
    /// Waits for an asynchronous copy; requires attach.
    MemCopyAsyncWait => MEM_COPY_ASYNC_WAIT:
        _IOW(109, size_of::<MemCopyAsyncWait>(), "struct neuron_ioctl_mem_copy_async_wait")
        -> MemCopyAsyncWait;
    /// Driver info and feature flags (misc fd). Dispatched by nr; requires `_IOC_DIR == READ`
    /// and `_IOC_SIZE >= 24`.
    DriverInfoGet => DRIVER_INFO_GET:
        _IOR(110, size_of::<DeviceDriverInfo>(), "struct neuron_ioctl_device_driver_info")
        -> DeviceDriverInfo;
    /// Returns `-ENOTSUPP`.
    DriverInfoSet => DRIVER_INFO_SET:
        _IOW(110, size_of::<DeviceDriverInfo>(), "struct neuron_ioctl_device_driver_info")
        -> DeviceDriverInfo;
    /// pa → mem-chunk mmap offset and size.
    MemMcGetInfo => MEM_MC_GET_INFO:
        _IOWR(111, size_of::<MemGetMcMmapInfo>(), "struct neuron_ioctl_mem_get_mc_mmap_info")
        -> MemGetMcMmapInfo;
    /// pa → mem-chunk mmap offset, size and handle.
    MemMcGetInfoV2 => MEM_MC_GET_INFO_V2:
        _IOWR(111, size_of::<MemGetMcMmapInfoV2>(), "struct neuron_ioctl_mem_get_mc_mmap_info_v2")
        -> MemGetMcMmapInfoV2;
    /// mmap offset and size of a special resource (docs/driver.md §7).
    ResourceMmapInfo => RESOURCE_MMAP_INFO:
        _IOWR(112, size_of::<ResourceMmapInfo>(), "struct neuron_ioctl_resource_mmap_info")
        -> ResourceMmapInfo;
    /// Logs a user message to the kernel log.
    Printk => PRINTK: _IOW(113, size_of::<Printk>(), "struct neuron_ioctl_printk") -> Printk;
    /// Host device id of this device.
    HostDeviceId => HOST_DEVICE_ID:
        _IOR(114, size_of::<HostDeviceId>(), "struct neuron_ioctl_host_device_id") -> HostDeviceId;
    /// Host device id → routing id map (260-byte struct; not modelled).
    HostDeviceIdToRidMap => HOST_DEVICE_ID_TO_RID_MAP:
        _IOWR(115, 260, "struct neuron_ioctl_host_device_id_to_rid_map");
    /// Dumps mem-chunk info (not modelled).
    DumpMemChunks => DUMP_MEM_CHUNKS: _IOR(116, PTR_SIZE, "struct neuron_ioctl_dump_mem_chunks *");
    /// Dumps per-pid core state to the kernel log (16-byte struct; not modelled).
    NcPidStateDump => NC_PID_STATE_DUMP: _IOWR(117, 16, "struct neuron_ioctl_nc_pid_state_dump");
    /// Starts an HBM scrub (16-byte struct; not modelled).
    HbmScrubStart => HBM_SCRUB_START: _IOWR(118, 16, "struct neuron_ioctl_hbm_scrub_start");
    /// Waits for an HBM scrub (8-byte struct; not modelled).
    HbmScrubWait => HBM_SCRUB_WAIT: _IOWR(119, 8, "struct neuron_ioctl_hbm_scrub_wait");
    /// Logical → physical core map (16-byte struct; not modelled).
    GetLogicalToPhysicalNcMap => GET_LOGICAL_TO_PHYSICAL_NC_MAP:
        _IOWR(120, 16, "struct neuron_ioctl_get_logical_to_physical_nc_map");
    /// Pod info (260-byte struct; not modelled).
    PodInfo => POD_INFO: _IOWR(121, 260, "struct neuron_ioctl_pod_info");
    /// Pod election status (268-byte struct; not modelled).
    PodStatus => POD_STATUS: _IOWR(122, 268, "struct neuron_ioctl_pod_status");
    /// Pod election status v2 (276-byte struct; not modelled).
    PodStatusV2 => POD_STATUS_V2: _IOWR(122, 276, "struct neuron_ioctl_pod_status_v2");
    /// Pod control (16-byte struct; not modelled).
    PodCtrl => POD_CTRL: _IOWR(123, 16, "struct neuron_ioctl_pod_ctrl");
    /// Pod control v2 (20-byte struct; not modelled).
    PodCtrlV2 => POD_CTRL_V2: _IOWR(123, 20, "struct neuron_ioctl_pod_ctrl_v2");
    /// Pins user pages and DMAs directly to/from them.
    MemBufZerocopy64 => MEM_BUF_ZEROCOPY64:
        _IOWR(124, size_of::<MemBufCopy64>(), "struct neuron_ioctl_mem_buf_copy64") -> MemBufCopy64;
    /// Initialises up to 255 DMA queues in one call (`count >= 256` → `-E2BIG`). nr 133 lies
    /// above `NEURON_IOCTL_MAX` (125).
    DmaQueueInitBatch => DMA_QUEUE_INIT_BATCH:
        _IOR(133, size_of::<DmaQueueInitBatch>(), "struct neuron_ioctl_dma_queue_init_batch")
        -> DmaQueueInitBatch;
}

// The numbers of docs/driver.md §2.2 are for the generic Linux encoding; nix encodes differently on
// mips/powerpc/sparc, where the driver does not exist. Fail the build there rather than emit
// numbers no Neuron driver understands (and that `ioc_*` would mis-decode).
const _: () = assert!(req::SEMAPHORE_INCREMENT == 0x8008_4E29);
const _: () = assert!(req::MEM_ALLOC_V2MT64 == 0x8038_4E66);
const _: () = assert!(req::MEM_BUF_COPY64 == 0xC028_4E18);

impl Ioctl {
    /// `_IOC_NR` of the request.
    pub const fn nr(self) -> u8 {
        ioc_nr(self.request())
    }

    /// `_IOC_SIZE` of the request: 8 for pointer-typed macros, else the struct size. Not the
    /// number of bytes the driver copies — see [`Ioctl::arg_size`].
    pub const fn encoded_size(self) -> u16 {
        ioc_size(self.request())
    }

    /// `_IOC_DIR` of the request (not semantically meaningful; see the module docs).
    pub const fn dir(self) -> u8 {
        ioc_dir(self.request())
    }

    /// The request in the type `libc::ioctl` takes on this target (`c_ulong` on glibc, `c_int`
    /// on musl); the bit pattern is [`Ioctl::request`].
    pub const fn request_code(self) -> nix::sys::ioctl::ioctl_num_type {
        self.request() as nix::sys::ioctl::ioctl_num_type
    }
}

impl core::fmt::Display for Ioctl {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.name())
    }
}

// ---------------------------------------------------------------------------------------------
// Argument structs
// ---------------------------------------------------------------------------------------------

/// Compile-time size and field-offset assertions against docs/driver.md §3.
macro_rules! assert_layout {
    ($t:ty = $size:literal { $($field:ident @ $off:literal),* $(,)? }) => {
        const _: () = {
            assert!(size_of::<$t>() == $size);
            $(assert!(offset_of!($t, $field) == $off);)*
        };
    };
}

/// Declares a wire struct with the common derives.
macro_rules! wire_struct {
    ($(#[$m:meta])* pub struct $name:ident { $($body:tt)* }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, Default,
            FromBytes, IntoBytes, Immutable, KnownLayout,
        )]
        pub struct $name { $($body)* }
    };
}

// ----- 2.1 Memory allocation -----------------------------------------------------------------

wire_struct! {
    /// `struct neuron_ioctl_mem_alloc` (32 bytes): the v1 allocation API ([`Ioctl::MemAlloc`]).
    pub struct MemAlloc {
        /// In: bytes (rounded up to PAGE_SIZE).
        pub size: u64,
        /// In: nonzero → host DRAM, 0 → device HBM.
        pub host_memory: u32,
        /// In: HBM channel.
        pub dram_channel: u32,
        /// In: region (forced 0 on v2/v3).
        pub dram_region: u32,
        /// In: owning core.
        pub nc_id: u32,
        /// **User pointer** (`__u64 *`) to a u64 that receives the handle.
        pub mem_handle: u64,
    }
}
assert_layout!(MemAlloc = 32 {
    size @ 0, host_memory @ 8, dram_channel @ 12, dram_region @ 16, nc_id @ 20, mem_handle @ 24,
});

wire_struct! {
    /// `struct neuron_ioctl_mem_alloc_v2` (40 bytes, [`Ioctl::MemAllocV2`]); the driver forces
    /// the category to UNKNOWN_{HOST,DEVICE}.
    pub struct MemAllocV2 {
        /// In: bytes (rounded up to PAGE_SIZE).
        pub size: u64,
        /// In: alignment; must be 0 for host memory.
        pub align: u64,
        /// In: nonzero → host DRAM, 0 → device HBM.
        pub host_memory: u32,
        /// In: HBM channel.
        pub dram_channel: u32,
        /// In: region (forced 0 on v2/v3).
        pub dram_region: u32,
        /// In: owning core (< [`MAX_NC_PER_DEVICE`]).
        pub nc_id: u32,
        /// **User pointer** (`__u64 *`) to a u64 that receives the handle.
        pub mem_handle: u64,
    }
}
assert_layout!(MemAllocV2 = 40 {
    size @ 0, align @ 8, host_memory @ 16, dram_channel @ 20, dram_region @ 24, nc_id @ 28,
    mem_handle @ 32,
});

wire_struct! {
    /// `struct neuron_ioctl_mem_alloc_v2_mem_type` (48 bytes, [`Ioctl::MemAllocV2Mt`]):
    /// identical to [`MemAllocV2Mt64`] up to offset 40, without `pad`.
    pub struct MemAllocV2Mt {
        /// In: bytes (rounded up to PAGE_SIZE).
        pub size: u64,
        /// In: alignment; must be 0 for host memory.
        pub align: u64,
        /// In: nonzero → host DRAM, 0 → device HBM.
        pub host_memory: u32,
        /// In: HBM channel (checked against the channel count even for host memory).
        pub dram_channel: u32,
        /// In: region (forced 0 on v2/v3).
        pub dram_region: u32,
        /// In: owning core (< [`MAX_NC_PER_DEVICE`]).
        pub nc_id: u32,
        /// In: [`MemAllocCategory`] as u32.
        pub mem_type: u32,
        /// C padding; zero.
        pub _pad0: [u8; 4],
        /// **User pointer** (`__u64 *`) to a u64 that receives the handle.
        pub mem_handle: u64,
    }
}
assert_layout!(MemAllocV2Mt = 48 {
    size @ 0, align @ 8, host_memory @ 16, dram_channel @ 20, dram_region @ 24, nc_id @ 28,
    mem_type @ 32, _pad0 @ 36, mem_handle @ 40,
});

wire_struct! {
    /// `struct neuron_ioctl_mem_alloc_v2_mem_type64` (56 bytes, [`Ioctl::MemAllocV2Mt64`]).
    ///
    /// The handle is written with an 8-byte `copy_to_user` into `*mem_handle`; nothing is written
    /// into this struct.
    pub struct MemAllocV2Mt64 {
        /// In: bytes (driver rounds up to PAGE_SIZE).
        pub size: u64,
        /// In: alignment; **must be 0 for host memory** (else `-EINVAL`).
        pub align: u64,
        /// In: nonzero → host DRAM, 0 → device HBM.
        pub host_memory: u32,
        /// In: HBM channel (checked against the channel count even for host memory).
        pub dram_channel: u32,
        /// In: region (forced 0 on v2/v3: one region per channel).
        pub dram_region: u32,
        /// In: owning core (< [`MAX_NC_PER_DEVICE`]).
        pub nc_id: u32,
        /// In: [`MemAllocCategory`] as u32 (sysfs accounting; 19 = contiguous scratchpad also
        /// changes placement). Not cross-checked against `host_memory`.
        pub mem_type: u32,
        /// C padding; zero.
        pub _pad0: [u8; 4],
        /// **User pointer** (`__u64 *`) to a u64 that receives the handle.
        pub mem_handle: u64,
        /// The driver's dummy field: exists only to change `sizeof` and hence the request number.
        pub pad: u32,
        /// C tail padding; zero.
        pub _pad1: [u8; 4],
    }
}
assert_layout!(MemAllocV2Mt64 = 56 {
    size @ 0, align @ 8, host_memory @ 16, dram_channel @ 20, dram_region @ 24, nc_id @ 28,
    mem_type @ 32, _pad0 @ 36, mem_handle @ 40, pad @ 48, _pad1 @ 52,
});

wire_struct! {
    /// `struct neuron_ioctl_mem_free` (8 bytes, [`Ioctl::MemFree`]).
    pub struct MemFree {
        /// In: handle to free.
        pub mem_handle: u64,
    }
}
assert_layout!(MemFree = 8 { mem_handle @ 0 });

// ----- 2.2 Memory info -----------------------------------------------------------------------

wire_struct! {
    /// `struct neuron_ioctl_mem_get_pa` (16 bytes, [`Ioctl::MemGetPa`], deprecated).
    pub struct MemGetPa {
        /// In: handle.
        pub mem_handle: u64,
        /// **User pointer** (`__u64 *`) receiving the physical address.
        pub pa: u64,
    }
}
assert_layout!(MemGetPa = 16 { mem_handle @ 0, pa @ 8 });

wire_struct! {
    /// `struct neuron_ioctl_mem_get_info` (24 bytes, [`Ioctl::MemGetInfo`], deprecated). Both
    /// outputs are written through the user pointers.
    pub struct MemGetInfo {
        /// In: handle.
        pub mem_handle: u64,
        /// **User pointer** (`__u64 *`, optional: 0 allowed) receiving the mmap offset.
        pub mmap_offset: u64,
        /// **User pointer** (`__u64 *`) receiving the physical address.
        pub pa: u64,
    }
}
assert_layout!(MemGetInfo = 24 { mem_handle @ 0, mmap_offset @ 8, pa @ 16 });

wire_struct! {
    /// `struct neuron_ioctl_mem_get_extended_info` (48 bytes, [`Ioctl::MemGetExtendedInfo`]).
    /// Outputs are written back **into the struct** (hazard 2).
    pub struct MemGetExtendedInfo {
        /// In: handle. **On return overwritten with a kernel pointer** — keep the handle
        /// elsewhere.
        pub mem_handle: u64,
        /// In: [`MEM_GET_EXTENDED_INFO_VERSION`] (1); on return uninitialised kernel data.
        pub version: u32,
        /// Out: 1 if host memory.
        pub host_memory: u32,
        /// Out: mmap offset (= `pa`, docs/driver.md §7).
        pub mmap_offset: u64,
        /// Out: device-visible address (host allocations include the PCIe host-base bit).
        pub pa: u64,
        /// Out: allocating tgid.
        pub pid: u64,
        /// Out: rounded (page-multiple) size.
        pub size: u64,
    }
}
assert_layout!(MemGetExtendedInfo = 48 {
    mem_handle @ 0, version @ 8, host_memory @ 12, mmap_offset @ 16, pa @ 24, pid @ 32, size @ 40,
});

wire_struct! {
    /// `struct neuron_ioctl_mem_get_mc_mmap_info` (24 bytes, [`Ioctl::MemMcGetInfo`]).
    pub struct MemGetMcMmapInfo {
        /// In: a device address inside the chunk.
        pub pa: u64,
        /// Out: mmap offset (= the chunk's pa).
        pub mmap_offset: u64,
        /// Out: chunk size.
        pub size: u64,
    }
}
assert_layout!(MemGetMcMmapInfo = 24 { pa @ 0, mmap_offset @ 8, size @ 16 });

wire_struct! {
    /// `struct neuron_ioctl_mem_get_mc_mmap_info_v2` (32 bytes, [`Ioctl::MemMcGetInfoV2`]).
    pub struct MemGetMcMmapInfoV2 {
        /// In: a device address inside the chunk.
        pub pa: u64,
        /// Out: mmap offset (= the chunk's pa).
        pub mmap_offset: u64,
        /// Out: chunk size.
        pub size: u64,
        /// Out: the chunk's handle.
        pub mem_handle: u64,
    }
}
assert_layout!(MemGetMcMmapInfoV2 = 32 { pa @ 0, mmap_offset @ 8, size @ 16, mem_handle @ 24 });

// ----- 2.3 Copies and memset -----------------------------------------------------------------

wire_struct! {
    /// `struct neuron_ioctl_mem_buf_copy64` (40 bytes, [`Ioctl::MemBufCopy64`] and
    /// [`Ioctl::MemBufZerocopy64`]). Bounds: `offset + size <= chunk size`.
    pub struct MemBufCopy64 {
        /// In: the memory handle.
        pub mem_handle: u64,
        /// **User pointer** (`void *`) to the host buffer.
        pub buffer: u64,
        /// In: bytes (device-memory copies truncate sizes ≥ 4 GiB, hazard 7).
        pub size: u64,
        /// In: byte offset into the handle's chunk.
        pub offset: u64,
        /// In: nonzero = buffer → memory; zero = memory → buffer.
        pub copy_to_mem_handle: u32,
        /// C tail padding; zero.
        pub _pad0: [u8; 4],
    }
}
assert_layout!(MemBufCopy64 = 40 {
    mem_handle @ 0, buffer @ 8, size @ 16, offset @ 24, copy_to_mem_handle @ 32, _pad0 @ 36,
});

wire_struct! {
    /// `struct neuron_ioctl_mem_buf_copy` (32 bytes, [`Ioctl::MemBufCopy`]).
    pub struct MemBufCopy {
        /// In: the memory handle.
        pub mem_handle: u64,
        /// **User pointer** (`void *`) to the host buffer.
        pub buffer: u64,
        /// In: bytes.
        pub size: u32,
        /// In: byte offset into the handle's chunk.
        pub offset: u32,
        /// In: nonzero = buffer → memory; zero = memory → buffer.
        pub copy_to_mem_handle: u32,
        /// C tail padding; zero.
        pub _pad0: [u8; 4],
    }
}
assert_layout!(MemBufCopy = 32 {
    mem_handle @ 0, buffer @ 8, size @ 16, offset @ 20, copy_to_mem_handle @ 24, _pad0 @ 28,
});

wire_struct! {
    /// `struct neuron_ioctl_mem_copy64` (40 bytes, [`Ioctl::MemCopy64`]): DMA chunk → chunk.
    pub struct MemCopy64 {
        /// In: source handle.
        pub src_mem_handle: u64,
        /// In: destination handle.
        pub dst_mem_handle: u64,
        /// In: bytes.
        pub size: u64,
        /// In: offset into the source chunk.
        pub src_offset: u64,
        /// In: offset into the destination chunk.
        pub dst_offset: u64,
    }
}
assert_layout!(MemCopy64 = 40 {
    src_mem_handle @ 0, dst_mem_handle @ 8, size @ 16, src_offset @ 24, dst_offset @ 32,
});

wire_struct! {
    /// `struct neuron_ioctl_mem_copy` (32 bytes, [`Ioctl::MemCopy`]).
    pub struct MemCopy {
        /// In: source handle.
        pub src_mem_handle: u64,
        /// In: destination handle.
        pub dst_mem_handle: u64,
        /// In: bytes.
        pub size: u32,
        /// In: offset into the source chunk.
        pub src_offset: u32,
        /// In: offset into the destination chunk.
        pub dst_offset: u32,
        /// C tail padding; zero.
        pub _pad0: [u8; 4],
    }
}
assert_layout!(MemCopy = 32 {
    src_mem_handle @ 0, dst_mem_handle @ 8, size @ 16, src_offset @ 20, dst_offset @ 24,
    _pad0 @ 28,
});

wire_struct! {
    /// `struct neuron_ioctl_mem_copy_async64` (56 bytes, [`Ioctl::MemCopyAsync64`]).
    pub struct MemCopyAsync64 {
        /// In: source handle.
        pub src_mem_handle: u64,
        /// In: destination handle.
        pub dst_mem_handle: u64,
        /// In: bytes.
        pub size: u64,
        /// In: offset into the source chunk.
        pub src_offset: u64,
        /// In: offset into the destination chunk.
        pub dst_offset: u64,
        /// In: host address to prefetch (device → host transfers).
        pub host_prefetch_addr: u64,
        /// In: previous transfer to wait on ([`DMA_H2T_CTX_HANDLE_NONE`] = none).
        pub pwait_handle: u32,
        /// Out: this transfer's wait handle.
        pub wait_handle: u32,
    }
}
assert_layout!(MemCopyAsync64 = 56 {
    src_mem_handle @ 0, dst_mem_handle @ 8, size @ 16, src_offset @ 24, dst_offset @ 32,
    host_prefetch_addr @ 40, pwait_handle @ 48, wait_handle @ 52,
});

wire_struct! {
    /// `struct neuron_ioctl_mem_copy_async` (48 bytes, [`Ioctl::MemCopyAsync`]). Layout from
    /// `neuron_ioctl.h`; docs/driver.md §2.2 confirms only its size (through the request number).
    pub struct MemCopyAsync {
        /// In: source handle.
        pub src_mem_handle: u64,
        /// In: destination handle.
        pub dst_mem_handle: u64,
        /// In: bytes.
        pub size: u32,
        /// In: offset into the source chunk.
        pub src_offset: u32,
        /// In: offset into the destination chunk.
        pub dst_offset: u32,
        /// C padding; zero.
        pub _pad0: [u8; 4],
        /// In: host address to prefetch.
        pub host_prefetch_addr: u64,
        /// In: previous transfer to wait on ([`DMA_H2T_CTX_HANDLE_NONE`] = none).
        pub pwait_handle: u32,
        /// Out: this transfer's wait handle.
        pub wait_handle: u32,
    }
}
assert_layout!(MemCopyAsync = 48 {
    src_mem_handle @ 0, dst_mem_handle @ 8, size @ 16, src_offset @ 20, dst_offset @ 24,
    _pad0 @ 28, host_prefetch_addr @ 32, pwait_handle @ 40, wait_handle @ 44,
});

wire_struct! {
    /// `struct neuron_ioctl_mem_copy_async_wait` (24 bytes, [`Ioctl::MemCopyAsyncWait`]).
    pub struct MemCopyAsyncWait {
        /// In: source handle.
        pub src_mem_handle: u64,
        /// In: destination handle.
        pub dst_mem_handle: u64,
        /// In: handle to wait on (must be 1 or 2).
        pub pwait_handle: u32,
        /// C tail padding; zero.
        pub _pad0: [u8; 4],
    }
}
assert_layout!(MemCopyAsyncWait = 24 {
    src_mem_handle @ 0, dst_mem_handle @ 8, pwait_handle @ 16, _pad0 @ 20,
});

wire_struct! {
    /// `struct neuron_ioctl_memset64` (32 bytes, [`Ioctl::Memset64`]). Fills with the **low
    /// byte** of `value`.
    pub struct Memset64 {
        /// In: destination handle.
        pub mem_handle: u64,
        /// In: byte offset into the chunk.
        pub offset: u64,
        /// In: fill value (only bits 7:0 are used).
        pub value: u32,
        /// C padding; zero.
        pub _pad0: [u8; 4],
        /// In: bytes.
        pub size: u64,
    }
}
assert_layout!(Memset64 = 32 { mem_handle @ 0, offset @ 8, value @ 16, _pad0 @ 20, size @ 24 });

wire_struct! {
    /// `struct neuron_ioctl_memset` (24 bytes, [`Ioctl::Memset`]).
    pub struct Memset {
        /// In: destination handle.
        pub mem_handle: u64,
        /// In: byte offset into the chunk.
        pub offset: u64,
        /// In: fill value (only bits 7:0 are used).
        pub value: u32,
        /// In: bytes.
        pub size: u32,
    }
}
assert_layout!(Memset = 24 { mem_handle @ 0, offset @ 8, value @ 16, size @ 20 });

wire_struct! {
    /// `struct neuron_ioctl_program_engine` (24 bytes, [`Ioctl::ProgramEngine`]). Layout from
    /// `neuron_ioctl.h`.
    pub struct ProgramEngine {
        /// In: destination device address.
        pub dst: u64,
        /// **User pointer** (`void *`) to the source buffer.
        pub buffer: u64,
        /// In: bytes.
        pub size: u32,
        /// In: offset applied to both `buffer` and `dst`.
        pub offset: u32,
    }
}
assert_layout!(ProgramEngine = 24 { dst @ 0, buffer @ 8, size @ 16, offset @ 20 });

wire_struct! {
    /// `struct neuron_ioctl_program_engine_nc64` (40 bytes, [`Ioctl::ProgramEngineNc64`]):
    /// copies `buffer + offset` → `dst + offset`; the range must lie in the arch's allowed
    /// regions (docs/driver.md §8.4).
    pub struct ProgramEngineNc64 {
        /// In: core index.
        pub nc_id: u32,
        /// C padding; zero.
        pub _pad0: [u8; 4],
        /// In: destination device address.
        pub dst: u64,
        /// **User pointer** (`void *`) to the source buffer.
        pub buffer: u64,
        /// In: bytes.
        pub size: u64,
        /// In: offset applied to both `buffer` and `dst`.
        pub offset: u64,
    }
}
assert_layout!(ProgramEngineNc64 = 40 {
    nc_id @ 0, _pad0 @ 4, dst @ 8, buffer @ 16, size @ 24, offset @ 32,
});

wire_struct! {
    /// `struct neuron_ioctl_program_engine_nc` (32 bytes, [`Ioctl::ProgramEngineNc`]).
    pub struct ProgramEngineNc {
        /// In: core index.
        pub nc_id: u32,
        /// C padding; zero.
        pub _pad0: [u8; 4],
        /// In: destination device address.
        pub dst: u64,
        /// **User pointer** (`void *`) to the source buffer.
        pub buffer: u64,
        /// In: bytes.
        pub size: u32,
        /// In: offset applied to both `buffer` and `dst`.
        pub offset: u32,
    }
}
assert_layout!(ProgramEngineNc = 32 {
    nc_id @ 0, _pad0 @ 4, dst @ 8, buffer @ 16, size @ 24, offset @ 28,
});

// ----- 2.4 DMA queues ------------------------------------------------------------------------

wire_struct! {
    /// `struct neuron_ioctl_dma_queue_init` (48 bytes, [`Ioctl::DmaQueueInit`]; also the entry of
    /// [`DmaQueueInitBatch`]).
    pub struct DmaQueueInit {
        /// In: DMA engine index (device-global, docs/driver.md §9).
        pub eng_id: u32,
        /// In: queue index in the engine, < 16.
        pub qid: u32,
        /// In: TX (m2s) ring length in descriptors.
        pub tx_desc_count: u32,
        /// In: RX (s2m) ring length in descriptors.
        pub rx_desc_count: u32,
        /// In: mem handle backing the TX ring (0 = none).
        pub tx_handle: u64,
        /// In: mem handle backing the RX ring (0 = none).
        pub rx_handle: u64,
        /// In: completion-ring handle — **must be 0** (hazard 4).
        pub rxc_handle: u64,
        /// In: AXI port (ORs `port_1_base`, which is 0 on v2/v3).
        pub axi_port: u32,
        /// C tail padding; zero.
        pub _pad0: [u8; 4],
    }
}
assert_layout!(DmaQueueInit = 48 {
    eng_id @ 0, qid @ 4, tx_desc_count @ 8, rx_desc_count @ 12, tx_handle @ 16, rx_handle @ 24,
    rxc_handle @ 32, axi_port @ 40, _pad0 @ 44,
});

/// `struct neuron_ioctl_dma_queue_init_batch` (12296 bytes, [`Ioctl::DmaQueueInitBatch`]).
/// The handler rejects `count >= MAX_DMA_QUEUE_INIT_BATCH` with `-E2BIG`, so at most 255 entries
/// are usable.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct DmaQueueInitBatch {
    /// In: number of valid entries (< 256).
    pub count: u32,
    /// C padding; zero.
    pub _pad0: [u8; 4],
    /// In: the queue inits; entries at and beyond `count` are ignored.
    pub entries: [DmaQueueInit; MAX_DMA_QUEUE_INIT_BATCH],
}
assert_layout!(DmaQueueInitBatch = 12296 { count @ 0, _pad0 @ 4, entries @ 8 });

impl Default for DmaQueueInitBatch {
    fn default() -> Self {
        Self::new_zeroed()
    }
}

impl DmaQueueInitBatch {
    /// A batch holding `entries`, or `None` if there are more than the driver accepts
    /// (`entries.len() >= MAX_DMA_QUEUE_INIT_BATCH`).
    pub fn from_entries(entries: &[DmaQueueInit]) -> Option<Self> {
        if entries.len() >= MAX_DMA_QUEUE_INIT_BATCH {
            return None;
        }
        let mut batch = Self::new_zeroed();
        batch.count = entries.len() as u32;
        batch.entries[..entries.len()].copy_from_slice(entries);
        Some(batch)
    }

    /// The first `count` entries (clamped to the array length).
    pub fn valid_entries(&self) -> &[DmaQueueInit] {
        let n = (self.count as usize).min(MAX_DMA_QUEUE_INIT_BATCH);
        &self.entries[..n]
    }
}

wire_struct! {
    /// `struct neuron_ioctl_dma_queue_release` (8 bytes, [`Ioctl::DmaQueueRelease`]).
    pub struct DmaQueueRelease {
        /// In: DMA engine index.
        pub eng_id: u32,
        /// In: queue index.
        pub qid: u32,
    }
}
assert_layout!(DmaQueueRelease = 8 { eng_id @ 0, qid @ 4 });

wire_struct! {
    /// `struct neuron_ioctl_dma_queue_copy_start` (16 bytes, [`Ioctl::DmaQueueCopyStart`]):
    /// increments the TX/RX tail pointers. `rx_desc_count == 0` is a kernel BUG (hazard 5).
    pub struct DmaQueueCopyStart {
        /// In: DMA engine index.
        pub eng_id: u32,
        /// In: queue index.
        pub qid: u32,
        /// In: TX descriptors to hand to hardware.
        pub tx_desc_count: u32,
        /// In: RX descriptors to hand to hardware (must be nonzero).
        pub rx_desc_count: u32,
    }
}
assert_layout!(DmaQueueCopyStart = 16 {
    eng_id @ 0, qid @ 4, tx_desc_count @ 8, rx_desc_count @ 12,
});

wire_struct! {
    /// `struct neuron_ioctl_dma_ack_completed` (12 bytes, [`Ioctl::DmaAckCompleted`]).
    pub struct DmaAckCompleted {
        /// In: DMA engine index.
        pub eng_id: u32,
        /// In: queue index.
        pub qid: u32,
        /// In: descriptors to acknowledge.
        pub count: u32,
    }
}
assert_layout!(DmaAckCompleted = 12 { eng_id @ 0, qid @ 4, count @ 8 });

wire_struct! {
    /// `struct neuron_ioctl_dma_eng_init` (4 bytes, [`Ioctl::DmaEngInit`], deprecated).
    pub struct DmaEngInit {
        /// In: DMA engine index.
        pub eng_id: u32,
    }
}
assert_layout!(DmaEngInit = 4 { eng_id @ 0 });

wire_struct! {
    /// `struct neuron_ioctl_dma_eng_set_state` (8 bytes, [`Ioctl::DmaEngSetState`]).
    pub struct DmaEngSetState {
        /// In: DMA engine index.
        pub eng_id: u32,
        /// In: [`UdmaState`] — DISABLE, NORMAL or ABORT.
        pub state: u32,
    }
}
assert_layout!(DmaEngSetState = 8 { eng_id @ 0, state @ 4 });

wire_struct! {
    /// `struct neuron_ioctl_dma_eng_get_state` (16 bytes, [`Ioctl::DmaEngGetState`]).
    pub struct DmaEngGetState {
        /// In: DMA engine index.
        pub eng_id: u32,
        /// C padding; zero.
        pub _pad0: [u8; 4],
        /// **User pointer** (`struct neuron_dma_eng_state *`) receiving a [`DmaEngState`].
        pub state: u64,
    }
}
assert_layout!(DmaEngGetState = 16 { eng_id @ 0, _pad0 @ 4, state @ 8 });

wire_struct! {
    /// `struct neuron_dma_eng_state` (20 bytes), written through [`DmaEngGetState::state`].
    pub struct DmaEngState {
        /// Always 4.
        pub revision_id: u32,
        /// 16.
        pub max_queues: u32,
        /// 16.
        pub num_queues: u32,
        /// m2s [`UdmaState`].
        pub tx_state: u32,
        /// s2m [`UdmaState`].
        pub rx_state: u32,
    }
}
assert_layout!(DmaEngState = 20 {
    revision_id @ 0, max_queues @ 4, num_queues @ 8, tx_state @ 12, rx_state @ 16,
});

wire_struct! {
    /// `struct neuron_ioctl_dma_queue_get_state` (24 bytes, [`Ioctl::DmaQueueGetState`]).
    pub struct DmaQueueGetState {
        /// In: DMA engine index.
        pub eng_id: u32,
        /// In: queue index.
        pub qid: u32,
        /// **User pointer** (`struct neuron_dma_queue_state *`) receiving the TX [`DmaQueueState`].
        pub tx: u64,
        /// **User pointer** (`struct neuron_dma_queue_state *`) receiving the RX [`DmaQueueState`].
        pub rx: u64,
    }
}
assert_layout!(DmaQueueGetState = 24 { eng_id @ 0, qid @ 4, tx @ 8, rx @ 16 });

wire_struct! {
    /// `struct neuron_dma_queue_state` (48 bytes), written through [`DmaQueueGetState`]'s
    /// pointers (`ndmar_queue_read_state`).
    pub struct DmaQueueState {
        /// Ring status register.
        pub hw_status: u32,
        /// [`QueueSwStatus`].
        pub sw_status: u32,
        /// Ring base address (low bits masked to 64 B).
        pub base_addr: u64,
        /// Ring length in descriptors (24-bit).
        pub length: u32,
        /// Head pointer (24-bit).
        pub head_pointer: u32,
        /// Tail pointer (24-bit).
        pub tail_pointer: u32,
        /// C padding; zero.
        pub _pad0: [u8; 4],
        /// Completion ring base address.
        pub completion_base_addr: u64,
        /// Completion ring head.
        pub completion_head: u32,
        /// C tail padding; zero.
        pub _pad1: [u8; 4],
    }
}
assert_layout!(DmaQueueState = 48 {
    hw_status @ 0, sw_status @ 4, base_addr @ 8, length @ 16, head_pointer @ 20,
    tail_pointer @ 24, _pad0 @ 28, completion_base_addr @ 32, completion_head @ 40, _pad1 @ 44,
});

wire_struct! {
    /// `struct neuron_ioctl_dma_copy_descriptors64` (40 bytes, [`Ioctl::DmaCopyDescriptors64`]).
    pub struct DmaCopyDescriptors64 {
        /// In: ring memory handle.
        pub mem_handle: u64,
        /// **User pointer** (`void *`) to the descriptors.
        pub buffer: u64,
        /// In: number of 16-byte descriptors.
        pub num_descs: u32,
        /// C padding; zero.
        pub _pad0: [u8; 4],
        /// In: byte offset into the ring chunk.
        pub offset: u64,
        /// In: [`DmaQueueType`] (4-byte enum).
        pub queue_type: u32,
        /// C tail padding; zero.
        pub _pad1: [u8; 4],
    }
}
assert_layout!(DmaCopyDescriptors64 = 40 {
    mem_handle @ 0, buffer @ 8, num_descs @ 16, _pad0 @ 20, offset @ 24, queue_type @ 32,
    _pad1 @ 36,
});

wire_struct! {
    /// `struct neuron_ioctl_dma_copy_descriptors` (32 bytes, [`Ioctl::DmaCopyDescriptors`]).
    pub struct DmaCopyDescriptors {
        /// In: ring memory handle.
        pub mem_handle: u64,
        /// **User pointer** (`void *`) to the descriptors.
        pub buffer: u64,
        /// In: number of 16-byte descriptors.
        pub num_descs: u32,
        /// In: byte offset into the ring chunk.
        pub offset: u32,
        /// In: [`DmaQueueType`] (4-byte enum).
        pub queue_type: u32,
        /// C tail padding; zero.
        pub _pad0: [u8; 4],
    }
}
assert_layout!(DmaCopyDescriptors = 32 {
    mem_handle @ 0, buffer @ 8, num_descs @ 16, offset @ 20, queue_type @ 24, _pad0 @ 28,
});

wire_struct! {
    /// `struct neuron_ioctl_dma_descriptor_copyout` (32 bytes, [`Ioctl::DmaDescriptorCopyout`]).
    pub struct DmaDescriptorCopyout {
        /// In: DMA engine index.
        pub eng_id: u32,
        /// In: queue index.
        pub qid: u32,
        /// In: [`DmaQueueType`] (4-byte enum).
        pub r#type: u32,
        /// In: first descriptor index (ignored for device-memory rings, hazard 8).
        pub start_index: u32,
        /// In: descriptors to copy out.
        pub count: u32,
        /// C padding; zero.
        pub _pad0: [u8; 4],
        /// **User pointer** (`void *`) receiving the descriptors.
        pub buffer: u64,
    }
}
assert_layout!(DmaDescriptorCopyout = 32 {
    eng_id @ 0, qid @ 4, r#type @ 8, start_index @ 12, count @ 16, _pad0 @ 20, buffer @ 24,
});

// ----- 2.5 Semaphores and events -------------------------------------------------------------

wire_struct! {
    /// `struct neuron_ioctl_semaphore` (12 bytes): SEMAPHORE_INCREMENT / DECREMENT / READ /
    /// WRITE. READ writes `value` back.
    pub struct Semaphore {
        /// In: core index.
        pub nc_id: u32,
        /// In: semaphore index.
        pub semaphore_index: u32,
        /// In/out: operand or read value.
        pub value: u32,
    }
}
assert_layout!(Semaphore = 12 { nc_id @ 0, semaphore_index @ 4, value @ 8 });

wire_struct! {
    /// `struct neuron_ioctl_event` (12 bytes): EVENT_SET / EVENT_GET (whose macros name the
    /// semaphore struct — same layout). GET writes `value` back. The driver accepts index 256
    /// and does not validate `nc_id` (hazard 11).
    pub struct Event {
        /// In: core index.
        pub nc_id: u32,
        /// In: event index.
        pub event_index: u32,
        /// In/out: value to set or read value.
        pub value: u32,
    }
}
assert_layout!(Event = 12 { nc_id @ 0, event_index @ 4, value @ 8 });

// ----- 2.6 Notification queues ---------------------------------------------------------------

wire_struct! {
    /// `struct neuron_ioctl_notifications_init_v2` (48 bytes, [`Ioctl::NotificationsInitV2`]).
    pub struct NotificationsInitV2 {
        /// In: core index (or TOP_SP index when `nq_dev_type` = TOPSP).
        pub nq_dev_id: u32,
        /// In: [`NqDeviceType`].
        pub nq_dev_type: u32,
        /// In: [`NqType`].
        pub nq_type: u32,
        /// In: engine / queue index within the type (0..16).
        pub engine_index: u32,
        /// In: bytes, a power of two (0 passes the check).
        pub size: u32,
        /// In: nonzero → host DRAM.
        pub on_host_memory: u32,
        /// In: HBM channel if device memory.
        pub dram_channel: u32,
        /// In: region (forced 0).
        pub dram_region: u32,
        /// Out: mmap offset (host NQ) or [`NQ_DEVICE_MMAP_OFFSET`] (device NQ).
        pub mmap_offset: u64,
        /// Out: handle of the backing memory.
        pub mem_handle: u64,
    }
}
assert_layout!(NotificationsInitV2 = 48 {
    nq_dev_id @ 0, nq_dev_type @ 4, nq_type @ 8, engine_index @ 12, size @ 16,
    on_host_memory @ 20, dram_channel @ 24, dram_region @ 28, mmap_offset @ 32, mem_handle @ 40,
});

wire_struct! {
    /// `struct neuron_ioctl_notifications_init_with_realloc_v2` (56 bytes,
    /// [`Ioctl::NotificationsInitWithReallocV2`]).
    pub struct NotificationsInitWithReallocV2 {
        /// In: core index (or TOP_SP index).
        pub nq_dev_id: u32,
        /// In: [`NqDeviceType`].
        pub nq_dev_type: u32,
        /// In: [`NqType`].
        pub nq_type: u32,
        /// In: engine / queue index within the type.
        pub engine_index: u32,
        /// In: bytes, a power of two.
        pub size: u32,
        /// In: nonzero → host DRAM.
        pub on_host_memory: u32,
        /// In: HBM channel if device memory.
        pub dram_channel: u32,
        /// In: region (forced 0).
        pub dram_region: u32,
        /// In: nonzero → allocate new memory, reprogram, free the old chunk.
        pub force_alloc_mem: u32,
        /// C padding; zero.
        pub _pad0: [u8; 4],
        /// Out: mmap offset (host NQ) or [`NQ_DEVICE_MMAP_OFFSET`] (device NQ).
        pub mmap_offset: u64,
        /// Out: handle of the backing memory.
        pub mem_handle: u64,
    }
}
assert_layout!(NotificationsInitWithReallocV2 = 56 {
    nq_dev_id @ 0, nq_dev_type @ 4, nq_type @ 8, engine_index @ 12, size @ 16,
    on_host_memory @ 20, dram_channel @ 24, dram_region @ 28, force_alloc_mem @ 32, _pad0 @ 36,
    mmap_offset @ 40, mem_handle @ 48,
});

wire_struct! {
    /// `struct neuron_ioctl_notifications_init_v1` (24 bytes, [`Ioctl::NotificationsInitV1`];
    /// always host memory).
    pub struct NotificationsInitV1 {
        /// In: core index.
        pub nc_id: u32,
        /// In: [`NqType`].
        pub nq_type: u32,
        /// In: engine index.
        pub engine_index: u32,
        /// In: bytes.
        pub size: u32,
        /// Out: mmap offset.
        pub mmap_offset: u64,
    }
}
assert_layout!(NotificationsInitV1 = 24 {
    nc_id @ 0, nq_type @ 4, engine_index @ 8, size @ 12, mmap_offset @ 16,
});

wire_struct! {
    /// `struct neuron_ioctl_notifications_destroy` (8 bytes, [`Ioctl::NotificationsDestroyV1`]).
    pub struct NotificationsDestroy {
        /// In: the NQ's mmap offset.
        pub mmap_offset: u64,
    }
}
assert_layout!(NotificationsDestroy = 8 { mmap_offset @ 0 });

wire_struct! {
    /// `struct neuron_ioctl_notifications_queue_info` (12 bytes,
    /// [`Ioctl::NotificationsQueueInfo`] — unimplemented, returns -1).
    pub struct NotificationsQueueInfo {
        /// In: core or TOP_SP index.
        pub nq_dev_id: u8,
        /// In: [`NqDeviceType`].
        pub nq_dev_type: u8,
        /// In: [`NqType`].
        pub nq_type: u8,
        /// In: engine index.
        pub engine_index: u8,
        /// Out: queue head.
        pub head: u32,
        /// Out: current phase bit.
        pub phase_bit: u32,
    }
}
assert_layout!(NotificationsQueueInfo = 12 {
    nq_dev_id @ 0, nq_dev_type @ 1, nq_type @ 2, engine_index @ 3, head @ 4, phase_bit @ 8,
});

// ----- 2.7 Device / version / mmap info ------------------------------------------------------

wire_struct! {
    /// `struct neuron_ioctl_device_info` (80 bytes, [`Ioctl::DeviceInfo`]).
    pub struct DeviceInfo {
        /// [`Arch`] as u32.
        pub architecture: u32,
        /// PCI revision id byte ([`REVISION_QEMU`], [`REVISION_EMULATOR`], …).
        pub revision: u32,
        /// Number of valid `connected_devices` (≤ 8).
        pub connected_device_count: u32,
        /// Neighbour device indices.
        pub connected_devices: [u32; MAX_CONNECTED_DEVICES],
        /// C padding; zero.
        pub _pad0: [u8; 4],
        /// **Kernel virtual addresses** of the ioremapped BAR0 and BAR2 (BAR2 is 0 on v2/v3);
        /// only meaningful as the base for BAR_READ / BAR_WRITE addresses.
        pub bar_address: [u64; MAX_BARS],
        /// BAR0 and BAR2 sizes.
        pub bar_size: [u64; MAX_BARS],
    }
}
assert_layout!(DeviceInfo = 80 {
    architecture @ 0, revision @ 4, connected_device_count @ 8, connected_devices @ 12,
    _pad0 @ 44, bar_address @ 48, bar_size @ 64,
});

wire_struct! {
    /// `struct neuron_ioctl_device_basic_info` (8 bytes, [`Ioctl::DeviceBasicInfo`]).
    pub struct DeviceBasicInfo {
        /// Out: [`Arch`] as u32.
        pub architecture: u32,
        /// Out: PCI revision id.
        pub revision: u32,
    }
}
assert_layout!(DeviceBasicInfo = 8 { architecture @ 0, revision @ 4 });

wire_struct! {
    /// `struct neuron_ioctl_device_driver_info` (24 bytes, [`Ioctl::DriverInfoGet`]).
    pub struct DeviceDriverInfo {
        /// Out: [`Arch`] as u32.
        pub architecture: u32,
        /// Out: PCI revision id.
        pub revision: u32,
        /// Out: [`DEVICE_DRIVER_INFO_VERSION0`].
        pub version: u32,
        /// Out: `sizeof` this struct (24).
        pub size: u32,
        /// Out: [`DriverFeatures`] bits (0xFF from driver 2.24.7.0).
        pub feature_flags1: u64,
    }
}
assert_layout!(DeviceDriverInfo = 24 {
    architecture @ 0, revision @ 4, version @ 8, size @ 12, feature_flags1 @ 16,
});

impl DeviceDriverInfo {
    /// `feature_flags1` as [`DriverFeatures`], unknown bits retained.
    pub const fn features(&self) -> DriverFeatures {
        DriverFeatures::from_bits_retain(self.feature_flags1)
    }
}

wire_struct! {
    /// `struct neuron_ioctl_compatible_version` (8 bytes, [`Ioctl::CompatibleVersion`]): the
    /// runtime ABI versions the driver accepts. **`max` comes first.**
    pub struct CompatibleVersion {
        /// Out: highest supported runtime version.
        pub max: u32,
        /// Out: lowest supported runtime version.
        pub min: u32,
    }
}
assert_layout!(CompatibleVersion = 8 { max @ 0, min @ 4 });

impl CompatibleVersion {
    /// Whether runtime ABI version `version` lies in `min..=max`.
    pub const fn contains(&self, version: u32) -> bool {
        self.min <= version && version <= self.max
    }

    /// `min..=max`.
    pub const fn range(&self) -> RangeInclusive<u32> {
        self.min..=self.max
    }
}

wire_struct! {
    /// `struct neuron_ioctl_resource_mmap_info` (32 bytes, [`Ioctl::ResourceMmapInfo`]).
    pub struct ResourceMmapInfo {
        /// In: [`MmapBlock`].
        pub block: u32,
        /// In: index of the block (core, TOP_SP or HBM).
        pub block_id: u32,
        /// In: [`MmapResource`].
        pub resource: u32,
        /// C padding; zero.
        pub _pad0: [u8; 4],
        /// Out: mmap offset of the resource.
        pub offset: u64,
        /// Out: mmap size of the resource.
        pub size: u64,
    }
}
assert_layout!(ResourceMmapInfo = 32 {
    block @ 0, block_id @ 4, resource @ 8, _pad0 @ 12, offset @ 16, size @ 24,
});

wire_struct! {
    /// `struct neuron_ioctl_device_reset` (8 bytes, [`Ioctl::NcReset`]).
    pub struct DeviceReset {
        /// In: bitmap of cores, or [`NC_MAP_DEVICE`] for the whole device.
        pub nc_map: u32,
        /// Out: request id (the caller's tgid), for NC_RESET_READY.
        pub request_id: u32,
    }
}
assert_layout!(DeviceReset = 8 { nc_map @ 0, request_id @ 4 });

wire_struct! {
    /// `struct neuron_ioctl_device_ready` (8 bytes, [`Ioctl::NcResetReady`]).
    pub struct DeviceReady {
        /// In: request id from NC_RESET.
        pub request_id: u32,
        /// Out: [`RESET_RESULT_OK`], [`RESET_RESULT_FAILED`] or `-EINTR`.
        pub result: i32,
    }
}
assert_layout!(DeviceReady = 8 { request_id @ 0, result @ 4 });

wire_struct! {
    /// `struct neuron_ioctl_device_init` (4 bytes, [`Ioctl::DeviceInit`], deprecated no-op).
    pub struct DeviceInit {
        /// In: number of memory regions (ignored).
        pub mem_regions: u32,
    }
}
assert_layout!(DeviceInit = 4 { mem_regions @ 0 });

wire_struct! {
    /// `struct neuron_ioctl_bar_rw` (32 bytes, [`Ioctl::BarRead`] / [`Ioctl::BarWrite`]).
    pub struct BarRw {
        /// In: BAR index (0; 2 is unused on v2/v3).
        pub bar: u32,
        /// C padding; zero.
        pub _pad0: [u8; 4],
        /// **User pointer** (`__u64 *`) to `count` register addresses (kernel virtual addresses
        /// = `DeviceInfo::bar_address[0]` + BAR0 offset).
        pub address: u64,
        /// **User pointer** (`__u32 *`) to `count` data words (in for write, out for read).
        pub data: u64,
        /// In: number of registers (≤ 100 for reads on v2/v3).
        pub count: u32,
        /// C tail padding; zero.
        pub _pad1: [u8; 4],
    }
}
assert_layout!(BarRw = 32 { bar @ 0, _pad0 @ 4, address @ 8, data @ 16, count @ 24, _pad1 @ 28 });

wire_struct! {
    /// `struct neuron_ioctl_post_metric` (16 bytes, [`Ioctl::PostMetric`]). Layout from
    /// `neuron_ioctl.h`.
    pub struct PostMetric {
        /// **User pointer** (`__u32 *`) to the metric data.
        pub data: u64,
        /// In: total data size in bytes.
        pub data_size: u32,
        /// C tail padding; zero.
        pub _pad0: [u8; 4],
    }
}
assert_layout!(PostMetric = 16 { data @ 0, data_size @ 8, _pad0 @ 12 });

wire_struct! {
    /// `struct neuron_ioctl_crwl_nc_map` (24 bytes, [`Ioctl::CrwlNcRangeMark`] /
    /// [`Ioctl::CrwlNcRangeUnmark`]).
    pub struct CrwlNcMap {
        /// In: cores wanted.
        pub nc_count: u32,
        /// In: first core index of the search range (device-relative).
        pub start_nc_index: u32,
        /// In: last core index of the search range.
        pub end_nc_index: u32,
        /// Out: most free cores available (on `-EBUSY`).
        pub max_nc_available: u32,
        /// In/out: bitmap of cores (`unsigned long`).
        pub bitmap: u64,
    }
}
assert_layout!(CrwlNcMap = 24 {
    nc_count @ 0, start_nc_index @ 4, end_nc_index @ 8, max_nc_available @ 12, bitmap @ 16,
});

wire_struct! {
    /// `struct neuron_ioctl_crwl_nc_map_ext` (80 bytes, the `_EXT0` core-claim ioctls).
    pub struct CrwlNcMapExt {
        /// In: cores wanted.
        pub nc_count: u32,
        /// In: first core index of the search range.
        pub start_nc_index: u32,
        /// In: last core index of the search range.
        pub end_nc_index: u32,
        /// Out: most free cores available.
        pub max_nc_available: u32,
        /// In/out: 512-bit bitmap of cores (`unsigned long[8]`).
        pub bitmap: [u64; 8],
    }
}
assert_layout!(CrwlNcMapExt = 80 {
    nc_count @ 0, start_nc_index @ 4, end_nc_index @ 8, max_nc_available @ 12, bitmap @ 16,
});

wire_struct! {
    /// `struct neuron_ioctl_cinit_set` (12 bytes, [`Ioctl::CinitSetState`]).
    pub struct CinitSet {
        /// In: core index.
        pub nc_id: u32,
        /// In: [`CinitState`] to set.
        pub state: u32,
        /// Out: state after the call.
        pub new_state: u32,
    }
}
assert_layout!(CinitSet = 12 { nc_id @ 0, state @ 4, new_state @ 8 });

wire_struct! {
    /// `struct neuron_ioctl_nc_model_started_count` (16 bytes, [`Ioctl::NcModelStartedCount`]).
    /// Layout from `neuron_ioctl.h`.
    pub struct NcModelStartedCount {
        /// In: core index.
        pub nc_id: u32,
        /// C padding; zero.
        pub _pad0: [u8; 4],
        /// Out: number of model starts.
        pub started_count: u64,
    }
}
assert_layout!(NcModelStartedCount = 16 { nc_id @ 0, _pad0 @ 4, started_count @ 8 });

wire_struct! {
    /// `struct neuron_ioctl_dmabuf_fd` (24 bytes, [`Ioctl::DmabufFd`]). Layout from
    /// `neuron_ioctl.h`.
    pub struct DmabufFd {
        /// In: user virtual address of an mmap'ed device range.
        pub va: u64,
        /// In: bytes.
        pub size: u64,
        /// **User pointer** (`__s32 *`) receiving the dma-buf fd.
        pub fd: u64,
    }
}
assert_layout!(DmabufFd = 24 { va @ 0, size @ 8, fd @ 16 });

wire_struct! {
    /// `struct neuron_ioctl_printk` (16 bytes, [`Ioctl::Printk`]). Layout from `neuron_ioctl.h`.
    pub struct Printk {
        /// **User pointer** (`void *`) to the message.
        pub buffer: u64,
        /// In: buffer size including the NUL terminator.
        pub size: u32,
        /// In: additional action.
        pub action: u32,
    }
}
assert_layout!(Printk = 16 { buffer @ 0, size @ 8, action @ 12 });

wire_struct! {
    /// `struct neuron_ioctl_host_device_id` (4 bytes, [`Ioctl::HostDeviceId`]).
    pub struct HostDeviceId {
        /// Out: host device id of this device.
        pub host_device_id: u32,
    }
}
assert_layout!(HostDeviceId = 4 { host_device_id @ 0 });

// ---------------------------------------------------------------------------------------------
// Enums and constants
// ---------------------------------------------------------------------------------------------

/// Declares a `#[repr(u32)]` wire enum with an exact lookup function.
macro_rules! wire_enum {
    (
        $(#[$m:meta])*
        pub enum $name:ident : $lookup:ident {
            $( $(#[doc = $d:literal])* $v:ident = $n:literal, )*
        }
    ) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u32)]
        pub enum $name {
            $( $(#[doc = $d])* $v = $n, )*
        }

        impl $name {
            /// Every value, in wire order.
            pub const ALL: &'static [$name] = &[$($name::$v),*];

            /// The value whose wire integer is `raw`, if any.
            pub const fn $lookup(raw: u32) -> Option<Self> {
                match raw {
                    $($n => Some($name::$v),)*
                    _ => None,
                }
            }

            /// The wire integer.
            pub const fn raw(self) -> u32 {
                self as u32
            }
        }

        impl From<$name> for u32 {
            fn from(v: $name) -> u32 {
                v as u32
            }
        }
    };
}

wire_enum! {
    /// `mem_alloc_category_t` (`share/neuron_driver_shared.h`): the allocation category passed in
    /// `mem_type`, used for sysfs accounting (and, for 19, placement).
    pub enum MemAllocCategory: from_raw_exact {
        /// `NEURON_MEMALLOC_TYPE_UNKNOWN_HOST`.
        UnknownHost = 0,
        /// `NEURON_MEMALLOC_TYPE_CODE_HOST`.
        CodeHost = 1,
        /// `NEURON_MEMALLOC_TYPE_TENSORS_HOST`.
        TensorsHost = 2,
        /// `NEURON_MEMALLOC_TYPE_CONSTANTS_HOST`.
        ConstantsHost = 3,
        /// `NEURON_MEMALLOC_TYPE_MISC_HOST`.
        MiscHost = 4,
        /// `NEURON_MEMALLOC_TYPE_NCDEV_HOST`.
        NcdevHost = 5,
        /// `NEURON_MEMALLOC_TYPE_NOTIFICATION_HOST`.
        NotificationHost = 6,
        /// `NEURON_MEMALLOC_TYPE_UNKNOWN_DEVICE`.
        UnknownDevice = 7,
        /// `NEURON_MEMALLOC_TYPE_CODE_DEVICE`.
        CodeDevice = 8,
        /// `NEURON_MEMALLOC_TYPE_TENSORS_DEVICE`.
        TensorsDevice = 9,
        /// `NEURON_MEMALLOC_TYPE_CONSTANTS_DEVICE`.
        ConstantsDevice = 10,
        /// `NEURON_MEMALLOC_TYPE_SCRATCHPAD_DEVICE`.
        ScratchpadDevice = 11,
        /// `NEURON_MEMALLOC_TYPE_MISC_DEVICE`.
        MiscDevice = 12,
        /// `NEURON_MEMALLOC_TYPE_NCDEV_DEVICE`.
        NcdevDevice = 13,
        /// `NEURON_MEMALLOC_TYPE_COLLECTIVES_DEVICE`.
        CollectivesDevice = 14,
        /// `NEURON_MEMALLOC_TYPE_SCRATCHPAD_NONSHARED_DEVICE`.
        ScratchpadNonsharedDevice = 15,
        /// `NEURON_MEMALLOC_TYPE_NOTIFICATION_DEVICE`.
        NotificationDevice = 16,
        /// `NEURON_MEMALLOC_TYPE_DMA_RINGS_HOST`.
        DmaRingsHost = 17,
        /// `NEURON_MEMALLOC_TYPE_DMA_RINGS_DEVICE`.
        DmaRingsDevice = 18,
        /// `NEURON_MEMALLOC_TYPE_CONTIGUOUS_SCRATCHPAD_DEVICE`: changes placement (may be mapped
        /// across following chunks).
        ContiguousScratchpadDevice = 19,
    }
}

impl MemAllocCategory {
    /// `NEURON_MEMALLOC_TYPE_MAX`: one past the last category.
    pub const MAX: u32 = 20;

    /// Number of categories (= [`MemAllocCategory::MAX`]), for arrays indexed by `raw()`.
    pub const COUNT: usize = Self::MAX as usize;

    /// The category the driver records for a requested `mem_type`, as `neuron_mempool.c` does:
    /// in-range values map to themselves; out-of-range values (≥ [`MemAllocCategory::MAX`], or
    /// negative as a C `int`) are accepted and re-labelled `UnknownHost` / `UnknownDevice` by the
    /// allocation's location. `mem_type` is never cross-checked against `host_memory`.
    pub const fn from_raw(raw: u32, host_memory: bool) -> Self {
        match Self::from_raw_exact(raw) {
            Some(c) => c,
            None if host_memory => MemAllocCategory::UnknownHost,
            None => MemAllocCategory::UnknownDevice,
        }
    }

    /// Whether the category's name says host memory (`*_HOST`: 0–6 and 17).
    pub const fn is_host(self) -> bool {
        matches!(
            self,
            MemAllocCategory::UnknownHost
                | MemAllocCategory::CodeHost
                | MemAllocCategory::TensorsHost
                | MemAllocCategory::ConstantsHost
                | MemAllocCategory::MiscHost
                | MemAllocCategory::NcdevHost
                | MemAllocCategory::NotificationHost
                | MemAllocCategory::DmaRingsHost
        )
    }
}

wire_enum! {
    /// `enum NQ_TYPE`: notification-queue types (docs/driver.md §6).
    pub enum NqType: from_raw {
        /// Implicit, per instruction.
        Trace = 0,
        /// Explicit NOTIFY instruction.
        Notify = 1,
        /// Event set/clear.
        Event = 2,
        /// Errors.
        Error = 3,
        /// Generated by DMA transfers (programmed into the SDMA engine's notific block).
        TraceDma = 4,
        /// HAM throttling.
        Throttle = 5,
    }
}

impl NqType {
    /// `NQ_TYPE_MAX`: number of types.
    pub const MAX: u32 = 6;

    /// The driver's queue identity `nq_type * MAX_NQ_ENGINE + engine_index` (must be < 96).
    pub const fn nq_id(self, engine_index: u32) -> u32 {
        self as u32 * MAX_NQ_ENGINE + engine_index
    }
}

/// `MAX_NQ_ENGINE`: queues per NQ type per core.
pub const MAX_NQ_ENGINE: u32 = 16;

/// Device-NQ value of `NotificationsInitV2::mmap_offset` (`-1`): the ring is not host-mappable
/// directly; map it via MEM_GET_EXTENDED_INFO's `mmap_offset` instead.
pub const NQ_DEVICE_MMAP_OFFSET: u64 = u64::MAX;

wire_enum! {
    /// `enum NQ_DEVICE_TYPE`: what `nq_dev_id` indexes.
    pub enum NqDeviceType: from_raw {
        /// A NeuronCore.
        NeuronCore = 0,
        /// A TOP_SP.
        TopSp = 1,
    }
}

wire_enum! {
    /// `enum neuron_dma_queue_type` (4 bytes on the wire).
    pub enum DmaQueueType: from_raw {
        /// TX (m2s, source) ring.
        Tx = 0,
        /// RX (s2m, destination) ring.
        Rx = 1,
        /// Completion ring.
        Completion = 2,
    }
}

wire_enum! {
    /// `enum udma_state` (`udma/udma.h`): engine direction states. DMA_ENG_SET_STATE accepts
    /// `Disable`, `Normal` and `Abort`.
    pub enum UdmaState: from_raw {
        /// Disabled.
        Disable = 0,
        /// Idle.
        Idle = 1,
        /// Normal (running).
        Normal = 2,
        /// Aborted.
        Abort = 3,
        /// Reset.
        Reset = 4,
    }
}

wire_enum! {
    /// Software status in [`DmaQueueState::sw_status`].
    pub enum QueueSwStatus: from_raw {
        /// Queue disabled.
        Disabled = 1,
        /// Queue enabled.
        Enabled = 2,
        /// Queue aborted.
        Aborted = 3,
    }
}

wire_enum! {
    /// `enum neuron_arch`, as reported in `architecture` fields.
    pub enum Arch: from_raw {
        /// Inferentia1 (inf1).
        V1 = 1,
        /// Trainium1 / Inferentia2 (trn1, inf2; "sunda").
        V2 = 2,
        /// Trainium2 (trn2; "cayman").
        V3 = 3,
    }
}

impl Arch {
    /// The runtime ABI versions driver 2.24.7.0 accepts on this arch (docs/driver.md §10), as
    /// COMPATIBLE_VERSION reports them: v1 2..=7, v2 5..=7, v3 10..=11.
    pub const fn compatible_version(self) -> CompatibleVersion {
        match self {
            Arch::V1 => CompatibleVersion { max: 7, min: 2 },
            Arch::V2 => CompatibleVersion { max: 7, min: 5 },
            Arch::V3 => CompatibleVersion { max: 11, min: 10 },
        }
    }
}

wire_enum! {
    /// `enum neuron_dm_block_type`: the block in [`ResourceMmapInfo::block`].
    pub enum MmapBlock: from_raw {
        /// A core's TPB.
        Tpb = 0,
        /// A TOP_SP.
        TopSp = 1,
        /// An HBM stack (v3).
        Hbm = 2,
    }
}

wire_enum! {
    /// `enum neuron_dm_resource_type`: the resource in [`ResourceMmapInfo::resource`].
    pub enum MmapResource: from_raw {
        /// Semaphore/event page.
        Semaphore = 0,
        /// The whole block (mapped read-only).
        All = 1,
        /// State buffer.
        Sbuf = 2,
        /// Device memory (HBM).
        Dmem = 3,
    }
}

wire_enum! {
    /// Core-init states for [`CinitSet::state`].
    pub enum CinitState: from_raw {
        /// Initialisation started.
        Started = 1,
        /// Initialisation completed.
        Completed = 2,
    }
}

bitflags::bitflags! {
    /// `enum neuron_driver_feature_flag`: bits of [`DeviceDriverInfo::feature_flags1`].
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub struct DriverFeatures: u64 {
        /// dma-buf export (DMABUF_FD).
        const DMABUF = 1 << 0;
        /// Asynchronous copies (MEM_COPY_ASYNC*).
        const ASYNC_DMA = 1 << 1;
        /// DMA_QUEUE_INIT_BATCH.
        const BATCH_DMAQ_INIT = 1 << 2;
        /// Large core maps (CRWL `_EXT0`).
        const BIG_CORE_MAPS = 1 << 3;
        /// MEM_ALLOC_V2MT (`mem_type`).
        const MEM_ALLOC_TYPE = 1 << 4;
        /// HBM scrub ioctls.
        const HBM_SCRUB = 1 << 5;
        /// MEM_ALLOC_V2MT64 / ≥ 4 GiB copies.
        const MEM_ALLOC64 = 1 << 6;
        /// Contiguous scratchpad category.
        const CONTIGUOUS_SCRATCHPAD = 1 << 7;
    }
}

/// The feature flags driver 2.24.7.0 reports: `0xFF` (every flag above).
pub const DRIVER_FEATURES_REPORTED: DriverFeatures = DriverFeatures::from_bits_retain(0xFF);

/// The driver release this module's numbers come from.
pub const DRIVER_VERSION: &str = "2.24.7.0";

/// `NEURON_DEVICE_DRIVER_INFO_VERSION0`: [`DeviceDriverInfo::version`].
pub const DEVICE_DRIVER_INFO_VERSION0: u32 = 0;

/// Value to put in [`MemGetExtendedInfo::version`].
pub const MEM_GET_EXTENDED_INFO_VERSION: u32 = 1;

/// `NEURON_NC_MAP_DEVICE`: [`DeviceReset::nc_map`] value meaning the whole device.
pub const NC_MAP_DEVICE: u32 = 0xFFFF_FFFF;

/// [`DeviceReady::result`]: reset succeeded.
pub const RESET_RESULT_OK: i32 = 0;
/// [`DeviceReady::result`]: reset failed.
pub const RESET_RESULT_FAILED: i32 = 1;

/// `MAX_NC_PER_DEVICE`: bound on `nc_id` in allocation requests.
pub const MAX_NC_PER_DEVICE: u32 = 8;

/// `MAX_DMA_QUEUE_INIT_BATCH`: array length of [`DmaQueueInitBatch::entries`]; `count` must be
/// strictly smaller.
pub const MAX_DMA_QUEUE_INIT_BATCH: usize = 256;

/// `NEURON_IOCTL_MAX_CONNECTED_DEVICES`: length of [`DeviceInfo::connected_devices`].
pub const MAX_CONNECTED_DEVICES: usize = 8;

/// `NEURON_MAX_BARS`: length of [`DeviceInfo::bar_address`] / `bar_size`.
pub const MAX_BARS: usize = 2;

/// `MAX_NEURON_DEVICE_COUNT`: at most this many `/dev/neuron<N>` nodes.
pub const MAX_NEURON_DEVICE_COUNT: u32 = 64;

/// `NEURON_IOCTL_MAX` (125); nr 133 (DMA_QUEUE_INIT_BATCH) nevertheless exists.
pub const NEURON_IOCTL_MAX: u8 = 125;

/// PCI revision id reported under qemu.
pub const REVISION_QEMU: u32 = 255;
/// PCI revision id reported by the hardware emulator.
pub const REVISION_EMULATOR: u32 = 240;

/// `NEURON_DMA_H2T_CTX_HANDLE_NONE` (-1 as u32): no previous async transfer to wait on.
pub const DMA_H2T_CTX_HANDLE_NONE: u32 = u32::MAX;
/// `NEURON_DMA_H2T_CTX_HANDLE_SYNC`.
pub const DMA_H2T_CTX_HANDLE_SYNC: u32 = 0;
/// `NEURON_DMA_H2T_CTX_HANDLE_ASYNC1`.
pub const DMA_H2T_CTX_HANDLE_ASYNC1: u32 = 1;
/// `NEURON_DMA_H2T_CTX_HANDLE_ASYNC2`.
pub const DMA_H2T_CTX_HANDLE_ASYNC2: u32 = 2;
