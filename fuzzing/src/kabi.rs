//! Target `kabi`: the kernel-ABI emulation ([`nrt_kabi::EmulatedDriver`], a
//! [`Syscalls`]) fed arbitrary request numbers and argument bytes, and arbitrary
//! open / ioctl / mmap / munmap / close sequences, on a fresh trn1 simulator per input.
//!
//! # Keeping the `# Safety` contract
//!
//! [`Syscalls::ioctl`] requires the argument to be valid for the request's argument struct and
//! every user pointer inside the struct to be null or valid for what the ABI implies. The
//! harness therefore never passes fuzz bytes as pointers:
//!
//! * the argument is a buffer of exactly [`Ioctl::arg_size`] bytes filled from the input (or
//!   null; 64 bytes for requests whose struct is not modelled, and for unknown numbers);
//! * for every [`Ioctl`] kind, [`user_pointers`] lists the pointer fields of its struct and how
//!   big the pointee is (fixed, or a size / count field times a unit). Each pointer field is
//!   overwritten with null or with a pointer to a harness-owned buffer of that size, after the
//!   size field has been clamped so the buffer is at most [`MAX_USER_BUF`] bytes. The match in
//!   [`user_pointers`] names every kind, so a new ioctl does not compile until it is classified.
//!
//! Mappings are used only while the allocation behind them is live (checked against
//! [`Hal::map`] before each access) and unmapped only once, as [`Syscalls::munmap`] requires.
//!
//! Allocation sizes are clamped to [`MAX_ALLOC`] (a host-resource bound of the harness: a
//! `MEMSET64` over a 64 GiB chunk would be legitimate but slow).

use std::mem::{offset_of, size_of};
use std::ptr::NonNull;
use std::sync::Arc;

use nrt_hal::abi::{self, Ioctl};
use nrt_hal::driver::{OFlag, Syscalls};
use nrt_hal::le::{u32_at, u64_at};
use nrt_hal::{Hal, MemHandle, Target};
use nrt_kabi::{EmulatedDriver, FD_BASE};
use nrt_sim::{Sim, SimConfig};

use crate::input::{Input, Out};

/// Most operations one input runs.
pub const MAX_OPS: usize = 128;
/// Largest user buffer behind a sanitised pointer (bytes).
pub const MAX_USER_BUF: usize = 64 << 10;
/// Largest allocation size passed to `MEM_ALLOC_*` (larger sizes are reduced modulo this + 1).
pub const MAX_ALLOC: u64 = 4 << 20;
/// Argument buffer for requests without a modelled struct.
const UNMODELLED_ARG: usize = 64;

/// How many bytes a user pointer field points to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PointeeLen {
    /// A fixed-size out-value or struct.
    Fixed(usize),
    /// `unit` × the `u32` field at byte `at` of the argument struct.
    U32 {
        /// Byte offset of the count field.
        at: usize,
        /// Bytes per counted element.
        unit: usize,
    },
    /// `unit` × the `u64` field at byte `at` of the argument struct.
    U64 {
        /// Byte offset of the count field.
        at: usize,
        /// Bytes per counted element.
        unit: usize,
    },
}

/// A user pointer (a `u64` holding an address) inside an ioctl's argument struct.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserPtr {
    /// Byte offset of the pointer field.
    pub at: usize,
    /// Size of what it points to.
    pub len: PointeeLen,
}

const fn fixed(at: usize, len: usize) -> UserPtr {
    UserPtr {
        at,
        len: PointeeLen::Fixed(len),
    }
}

/// The user pointers of `cmd`'s argument struct (docs/driver.md §3; the **User pointer** fields
/// of `nrt_hal::abi`).
///
/// Longer than the ~120-line guideline on purpose: it is a table with one arm per ioctl that
/// carries user pointers, each naming the fields of that request's struct.
pub fn user_pointers(cmd: Ioctl) -> Vec<UserPtr> {
    use Ioctl::*;
    macro_rules! by_u32 {
        ($t:ty, $p:ident, $n:ident, $unit:expr) => {
            UserPtr {
                at: offset_of!($t, $p),
                len: PointeeLen::U32 {
                    at: offset_of!($t, $n),
                    unit: $unit,
                },
            }
        };
    }
    macro_rules! by_u64 {
        ($t:ty, $p:ident, $n:ident, $unit:expr) => {
            UserPtr {
                at: offset_of!($t, $p),
                len: PointeeLen::U64 {
                    at: offset_of!($t, $n),
                    unit: $unit,
                },
            }
        };
    }
    match cmd {
        MemAlloc => vec![fixed(offset_of!(abi::MemAlloc, mem_handle), 8)],
        MemAllocV2 => vec![fixed(offset_of!(abi::MemAllocV2, mem_handle), 8)],
        MemAllocV2Mt => vec![fixed(offset_of!(abi::MemAllocV2Mt, mem_handle), 8)],
        MemAllocV2Mt64 => vec![fixed(offset_of!(abi::MemAllocV2Mt64, mem_handle), 8)],
        MemGetPa => vec![fixed(offset_of!(abi::MemGetPa, pa), 8)],
        MemGetInfo => vec![
            fixed(offset_of!(abi::MemGetInfo, mmap_offset), 8),
            fixed(offset_of!(abi::MemGetInfo, pa), 8),
        ],
        MemBufCopy64 | MemBufZerocopy64 => vec![by_u64!(abi::MemBufCopy64, buffer, size, 1)],
        MemBufCopy => vec![by_u32!(abi::MemBufCopy, buffer, size, 1)],
        ProgramEngine => vec![by_u32!(abi::ProgramEngine, buffer, size, 1)],
        ProgramEngineNc => vec![by_u32!(abi::ProgramEngineNc, buffer, size, 1)],
        ProgramEngineNc64 => vec![by_u64!(abi::ProgramEngineNc64, buffer, size, 1)],
        DmaEngGetState => vec![fixed(
            offset_of!(abi::DmaEngGetState, state),
            size_of::<abi::DmaEngState>(),
        )],
        DmaQueueGetState => vec![
            fixed(
                offset_of!(abi::DmaQueueGetState, tx),
                size_of::<abi::DmaQueueState>(),
            ),
            fixed(
                offset_of!(abi::DmaQueueGetState, rx),
                size_of::<abi::DmaQueueState>(),
            ),
        ],
        DmaCopyDescriptors => vec![by_u32!(abi::DmaCopyDescriptors, buffer, num_descs, 16)],
        DmaCopyDescriptors64 => vec![by_u32!(abi::DmaCopyDescriptors64, buffer, num_descs, 16)],
        DmaDescriptorCopyout => vec![by_u32!(abi::DmaDescriptorCopyout, buffer, count, 16)],
        BarRead | BarWrite => vec![
            by_u32!(abi::BarRw, address, count, 8),
            by_u32!(abi::BarRw, data, count, 4),
        ],
        PostMetric => vec![by_u32!(abi::PostMetric, data, data_size, 1)],
        DmabufFd => vec![fixed(offset_of!(abi::DmabufFd, fd), 4)],
        Printk => vec![by_u32!(abi::Printk, buffer, size, 1)],
        // Structs without user pointers (values, handles, device addresses, kernel-looking
        // values, or not modelled at all — `arg_size` is `None` for those).
        DeviceReset
        | DeviceReady
        | DeviceInfo
        | DeviceInit
        | DeviceRelease
        | DeviceAppPid
        | DeviceGetAllAppsInfo
        | MemFree
        | MemCopy
        | MemCopy64
        | Memset
        | Memset64
        | MemGetExtendedInfo
        | DmaEngInit
        | DmaEngSetState
        | DmaQueueInit
        | DmaQueueRelease
        | DmaQueueCopyStart
        | DmaAckCompleted
        | DmaQuiesceQueues
        | SemaphoreIncrement
        | SemaphoreDecrement
        | SemaphoreRead
        | SemaphoreWrite
        | EventSet
        | EventGet
        | NotificationsInitV1
        | NotificationsDestroyV1
        | NotificationsInitV2
        | NotificationsInitWithReallocV2
        | NotificationsQueueInfo
        | ReadHwCounters
        | AcquireNeuronDs
        | ReleaseNeuronDs
        | CrwlReaderEnter
        | CrwlReaderExit
        | CrwlWriterEnter
        | CrwlWriterDowngrade
        | CrwlNcRangeMark
        | CrwlNcRangeMarkExt0
        | CrwlNcRangeUnmark
        | CrwlNcRangeUnmarkExt0
        | CinitSetState
        | NcModelStartedCount
        | CompatibleVersion
        | DeviceBasicInfo
        | DeviceBdf
        | NcReset
        | NcResetReady
        | DeviceResetStatus
        | DeviceBdfExt
        | MemCopyAsync
        | MemCopyAsync64
        | MemCopyAsyncWait
        | DriverInfoGet
        | DriverInfoSet
        | MemMcGetInfo
        | MemMcGetInfoV2
        | ResourceMmapInfo
        | HostDeviceId
        | HostDeviceIdToRidMap
        | DumpMemChunks
        | NcPidStateDump
        | HbmScrubStart
        | HbmScrubWait
        | GetLogicalToPhysicalNcMap
        | PodInfo
        | PodStatus
        | PodStatusV2
        | PodCtrl
        | PodCtrlV2
        | DmaQueueInitBatch => Vec::new(),
    }
}

/// Clamps the size fields of `arg` so no pointee exceeds [`MAX_USER_BUF`], then returns the
/// pointee sizes, in `ptrs` order.
pub fn clamp_sizes(arg: &mut [u8], ptrs: &[UserPtr]) -> Vec<usize> {
    ptrs.iter()
        .map(|p| match p.len {
            PointeeLen::Fixed(n) => n,
            PointeeLen::U32 { at, unit } => {
                let max = (MAX_USER_BUF / unit) as u32;
                let v = u32_at(arg, at);
                let v = if v > max { v % (max + 1) } else { v };
                arg[at..at + 4].copy_from_slice(&v.to_le_bytes());
                v as usize * unit
            }
            PointeeLen::U64 { at, unit } => {
                let max = (MAX_USER_BUF / unit) as u64;
                let v = u64_at(arg, at);
                let v = if v > max { v % (max + 1) } else { v };
                arg[at..at + 8].copy_from_slice(&v.to_le_bytes());
                v as usize * unit
            }
        })
        .collect()
}

/// Operation tags (first byte modulo [`OP_COUNT`]).
pub mod op {
    /// Open a device node (or another path) with selected flags.
    pub const OPEN: u8 = 0;
    /// Close a descriptor of the harness.
    pub const CLOSE: u8 = 1;
    /// Issue an ioctl with a request number and argument bytes.
    pub const IOCTL: u8 = 2;
    /// Map an allocation by its device address.
    pub const MMAP: u8 = 3;
    /// Unmap a mapping of the harness.
    pub const MUNMAP: u8 = 4;
    /// Write bytes through a live mapping.
    pub const MAP_WRITE: u8 = 5;
    /// Let the devices run a bounded number of events.
    pub const ADVANCE: u8 = 6;
}
/// Number of operation kinds; IOCTL is drawn for every tag ≥ 7 too, so most operations are
/// ioctls.
pub const OP_COUNT: u8 = 12;

struct Mapped {
    ptr: NonNull<u8>,
    len: usize,
    handle: MemHandle,
}

struct Rig {
    sim: Arc<Sim>,
    drv: EmulatedDriver,
    fds: Vec<i32>,
    handles: Vec<MemHandle>,
    maps: Vec<Mapped>,
    stats: KabiStats,
}

/// What a `kabi` program achieved (for tests of the seeds).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KabiStats {
    /// Ioctls that returned `Ok`.
    pub ioctls_ok: usize,
    /// Successful mmaps.
    pub mmaps: usize,
}

impl Rig {
    fn fd(&self, sel: u8) -> i32 {
        match self.fds.get(sel as usize) {
            Some(&fd) => fd,
            None if sel == 0xFF => -1,
            None => FD_BASE + i32::from(sel & 0x1F),
        }
    }

    fn ioctl(&mut self, inp: &mut Input<'_>) {
        let fd = self.fd(inp.u8());
        let r = inp.u8();
        let (cmd, request) = if r < 0xF0 {
            let c = Ioctl::ALL[r as usize % Ioctl::ALL.len()];
            (Some(c), c.request())
        } else {
            let raw = inp.u32();
            (Ioctl::from_request(raw), raw)
        };
        let flags = inp.u8();
        let size = cmd.and_then(Ioctl::arg_size).unwrap_or(UNMODELLED_ARG);
        let mut arg = vec![0u8; size];
        let src = inp.bytes(size);
        arg[..src.len()].copy_from_slice(src);
        // Sanitise every user pointer: null, or a harness buffer of the clamped size.
        let ptrs = cmd.map(user_pointers).unwrap_or_default();
        let lens = clamp_sizes(&mut arg, &ptrs);
        let mut bufs: Vec<Vec<u8>> = Vec::with_capacity(ptrs.len());
        for (p, len) in ptrs.iter().zip(&lens) {
            let choice = inp.u8();
            let value = if choice.is_multiple_of(8) {
                0
            } else {
                // At least one byte so the pointer is a real allocation even for length 0.
                bufs.push(vec![choice; (*len).max(1)]);
                bufs.last_mut().expect("just pushed").as_mut_ptr() as u64
            };
            arg[p.at..p.at + 8].copy_from_slice(&value.to_le_bytes());
        }
        let argp = if flags & 0x80 != 0 {
            std::ptr::null_mut()
        } else {
            arg.as_mut_ptr()
        };
        // SAFETY: `argp` is null or points to `arg`, `arg_size` bytes (64 for unmodelled
        // requests, which the emulation does not read) owned by this frame; every user pointer
        // inside it is null or points to a buffer in `bufs` of the size the struct's (clamped)
        // size fields imply; nothing else accesses these buffers during the call.
        let res = unsafe { self.drv.ioctl(fd, request, argp) };
        if res.is_ok() {
            self.stats.ioctls_ok += 1;
            self.learn(cmd, &arg, &ptrs, &bufs);
        }
    }

    /// Remembers handles the driver returned, for later mmaps.
    fn learn(&mut self, cmd: Option<Ioctl>, arg: &[u8], ptrs: &[UserPtr], bufs: &[Vec<u8>]) {
        let h = match cmd {
            Some(
                Ioctl::MemAlloc | Ioctl::MemAllocV2 | Ioctl::MemAllocV2Mt | Ioctl::MemAllocV2Mt64,
            ) => {
                // The out-pointer is the only pointer; it was a buffer if it is non-null.
                let p = u64_at(arg, ptrs[0].at);
                bufs.first().filter(|_| p != 0).map(|b| u64_at(b, 0))
            }
            Some(Ioctl::NotificationsInitV2) => Some(u64_at(
                arg,
                offset_of!(abi::NotificationsInitV2, mem_handle),
            )),
            _ => None,
        };
        if let Some(h) = h.and_then(MemHandle::new) {
            if self.handles.len() < 64 {
                self.handles.push(h);
            }
        }
    }

    fn mmap(&mut self, inp: &mut Input<'_>) {
        let fd = self.fd(inp.u8());
        let mode = inp.u8();
        let (sel, len, raw) = (inp.u8(), inp.u32() as usize, inp.u64());
        let known = (!self.handles.is_empty())
            .then(|| self.handles[sel as usize % self.handles.len()])
            .and_then(|h| self.sim.mem_info(h).ok().map(|i| (h, i)));
        let (offset, len) = match (mode % 3, known) {
            (0, Some((_, i))) => (i.pa.raw(), i.size as usize),
            (1, Some((_, i))) => (i.pa.raw().wrapping_add(raw & 0xFFFF_F000), len),
            _ => (raw, len),
        };
        // SAFETY: the mapping is accessed only in `map_write`, after checking its allocation is
        // still the one mapped (the `Hal::map` contract), and unmapped once.
        if let Ok(ptr) = unsafe { self.drv.mmap(fd, len, offset) } {
            let handle = self
                .sim
                .lookup(nrt_hal::DeviceAddr::new(offset))
                .map(|(h, _)| h)
                .expect("a successful mmap maps a live allocation");
            self.maps.push(Mapped { ptr, len, handle });
            self.stats.mmaps += 1;
        }
    }

    fn munmap(&mut self, sel: u8) {
        if self.maps.is_empty() {
            return;
        }
        let m = self.maps.remove(sel as usize % self.maps.len());
        // SAFETY: `m` is a live mapping from this driver's `mmap`, unmapped once (removed from
        // the list), and no reference into it exists.
        let r = unsafe { self.drv.munmap(m.ptr, m.len) };
        r.expect("unmapping a live mapping succeeds");
    }

    fn map_write(&mut self, inp: &mut Input<'_>) {
        let (sel, off, v) = (inp.u8(), inp.u32() as usize, inp.u8());
        if self.maps.is_empty() {
            return;
        }
        let m = &self.maps[sel as usize % self.maps.len()];
        // SAFETY: `map` only reads the allocation table; the pointer is compared, not used.
        let current = unsafe { self.sim.map(m.handle) };
        if current.map(|c| c.ptr) != Ok(m.ptr) || m.len == 0 {
            return; // freed (MEM_FREE) behind the mapping: not accessible any more
        }
        // SAFETY: the allocation behind the mapping is live and is the one mapped (checked
        // above), `off < len` bytes into it, and no device work runs concurrently (this thread
        // drives the simulator).
        unsafe { m.ptr.as_ptr().add(off % m.len).write(v) };
    }

    fn step(&mut self, inp: &mut Input<'_>) {
        match inp.u8() % OP_COUNT {
            op::OPEN => {
                let (dev, flags) = (inp.u8(), inp.u8());
                let path = ["/dev/neuron0", "/dev/neuron1", "/dev/neuron01", "/dev/null"]
                    [dev as usize % 4];
                let flags = if flags & 1 == 0 {
                    OFlag::O_RDWR
                } else {
                    OFlag::O_WRONLY
                };
                if let Ok(fd) = self.drv.open(path, flags) {
                    self.fds.push(fd);
                }
            }
            op::CLOSE => {
                let sel = inp.u8();
                let fd = self.fd(sel);
                if self.drv.close(fd).is_ok() {
                    self.fds.retain(|&f| f != fd);
                }
            }
            op::MMAP => self.mmap(inp),
            op::MUNMAP => {
                let sel = inp.u8();
                self.munmap(sel);
            }
            op::MAP_WRITE => self.map_write(inp),
            op::ADVANCE => {
                let n = inp.u16();
                self.sim.advance(usize::from(n));
            }
            _ => self.ioctl(inp),
        }
    }
}

/// `kabi`: runs the program in `data` against a fresh emulated `/dev/neuron0` (see the module
/// docs); at the end everything is unmapped and closed, and the driver must agree that nothing
/// is open or mapped.
pub fn kabi(data: &[u8]) {
    run(data);
}

/// [`kabi`], returning what the program achieved.
pub fn run(data: &[u8]) -> KabiStats {
    let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn1)));
    let drv = EmulatedDriver::single(sim.clone()).with_advance_budget(256);
    let mut rig = Rig {
        sim,
        drv,
        fds: Vec::new(),
        handles: Vec::new(),
        maps: Vec::new(),
        stats: KabiStats::default(),
    };
    let mut inp = Input::new(data);
    let mut n = 0;
    while !inp.is_empty() && n < MAX_OPS {
        rig.step(&mut inp);
        n += 1;
    }
    while !rig.maps.is_empty() {
        rig.munmap(0);
    }
    for fd in std::mem::take(&mut rig.fds) {
        rig.drv.close(fd).expect("closing an open fd succeeds");
    }
    assert_eq!(rig.drv.open_fds(), 0, "descriptors left open");
    assert_eq!(rig.drv.live_mappings(0), 0, "mappings left");
    rig.stats
}

// ---------------------------------------------------------------------------------------------
// Seeds.

/// Writer of `kabi` programs.
#[derive(Debug, Default)]
pub struct Program(pub Out);

impl Program {
    /// `open("/dev/neuron0")`, read-write (`misc` = O_WRONLY).
    pub fn open(&mut self, misc: bool) -> &mut Self {
        self.0.u8(op::OPEN).u8(0).bool(misc);
        self
    }
    /// An ioctl on fd slot `fd` with argument `arg` (padded/truncated to the struct size) and
    /// pointer choices `ptrs` (0 = null, else a buffer).
    pub fn ioctl(&mut self, fd: u8, cmd: Ioctl, arg: &[u8], ptrs: &[u8]) -> &mut Self {
        let idx = Ioctl::ALL.iter().position(|c| *c == cmd).expect("listed") as u8;
        self.0.u8(op::IOCTL).u8(fd).u8(idx).u8(0);
        let size = cmd.arg_size().unwrap_or(UNMODELLED_ARG);
        let mut a = arg.to_vec();
        a.resize(size, 0);
        self.0.bytes(&a).bytes(ptrs);
        self
    }
    /// mmap of the first learned handle, whole.
    pub fn mmap_first(&mut self, fd: u8) -> &mut Self {
        self.0.u8(op::MMAP).u8(fd).u8(0).u8(0).u32(0).u64(0);
        self
    }
    /// A byte written through the first mapping.
    pub fn map_write(&mut self, off: u32, v: u8) -> &mut Self {
        self.0.u8(op::MAP_WRITE).u8(0).u32(off).u8(v);
        self
    }
    /// Unmaps the first mapping.
    pub fn munmap(&mut self) -> &mut Self {
        self.0.u8(op::MUNMAP).u8(0);
        self
    }
    /// Closes fd slot `fd`.
    pub fn close(&mut self, fd: u8) -> &mut Self {
        self.0.u8(op::CLOSE).u8(fd);
        self
    }
    /// The bytes.
    pub fn bytes(&self) -> Vec<u8> {
        self.0 .0.clone()
    }
}

fn le(fields: &[u64], widths: &[usize]) -> Vec<u8> {
    let mut v = Vec::new();
    for (f, w) in fields.iter().zip(widths) {
        v.extend_from_slice(&f.to_le_bytes()[..*w]);
    }
    v
}

/// Hand-made `kabi` seeds: the driver backend's usual call sequences and some abuse.
pub fn seeds() -> Vec<(String, Vec<u8>)> {
    use args::*;
    let mut out = Vec::new();
    let mut add = |name: &str, p: &Program| out.push((format!("kabi-{name}"), p.bytes()));

    // alloc 64 KiB device memory on nc 0: size, align, host, channel, region, nc, mem_type, pad, out
    let alloc = alloc_v2mt64(65536, false);
    let mut p = Program::default();
    p.open(true)
        .ioctl(0, Ioctl::CompatibleVersion, &[], &[])
        .close(0);
    p.open(false).ioctl(0, Ioctl::DeviceBasicInfo, &[], &[]);
    p.ioctl(0, Ioctl::MemAllocV2Mt64, &alloc, &[1]);
    p.ioctl(0, Ioctl::MemGetExtendedInfo, &le(&[1], &[8]), &[]);
    // MEM_BUF_COPY64: handle 1, buffer, size 4096, offset 0, to device
    p.ioctl(
        0,
        Ioctl::MemBufCopy64,
        &le(&[1, 0, 4096, 0, 1], &[8, 8, 8, 8, 4]),
        &[1],
    );
    p.ioctl(
        0,
        Ioctl::MemBufCopy64,
        &le(&[1, 0, 4096, 0, 0], &[8, 8, 8, 8, 4]),
        &[1],
    );
    p.ioctl(
        0,
        Ioctl::Memset64,
        &le(&[1, 0, 0x5A, 8192], &[8, 8, 8, 8]),
        &[],
    );
    p.mmap_first(0).map_write(17, 0xAB).munmap();
    p.ioctl(0, Ioctl::MemFree, &le(&[1], &[8]), &[]);
    p.close(0);
    add("memory", &p);

    let mut p = Program::default();
    p.open(false);
    p.ioctl(0, Ioctl::MemAllocV2Mt64, &alloc_v2mt64(4096, false), &[1]);
    p.ioctl(0, Ioctl::MemAllocV2Mt64, &alloc_v2mt64(4096, false), &[1]);
    // DMA_QUEUE_INIT eng 0 q 0, 64/64 descriptors, tx handle 1, rx handle 2
    p.ioctl(
        0,
        Ioctl::DmaQueueInit,
        &le(&[0, 0, 64, 64, 1, 2, 0, 0], &[4, 4, 4, 4, 8, 8, 8, 4]),
        &[],
    );
    p.ioctl(
        0,
        Ioctl::DmaQueueCopyStart,
        &le(&[0, 0, 1, 1], &[4, 4, 4, 4]),
        &[],
    );
    p.ioctl(0, Ioctl::DmaQueueGetState, &le(&[0, 0], &[4, 4]), &[1, 1]);
    p.ioctl(0, Ioctl::DmaAckCompleted, &le(&[0, 0, 1], &[4, 4, 4]), &[]);
    p.ioctl(
        0,
        Ioctl::SemaphoreIncrement,
        &le(&[0, 3, 5], &[4, 4, 4]),
        &[],
    );
    p.ioctl(0, Ioctl::SemaphoreRead, &le(&[0, 3, 0], &[4, 4, 4]), &[]);
    p.ioctl(0, Ioctl::EventSet, &le(&[0, 256, 1], &[4, 4, 4]), &[]);
    p.ioctl(0, Ioctl::EventGet, &le(&[0, 7, 0], &[4, 4, 4]), &[]);
    // NOTIFICATIONS_INIT_V2: dev id 0, type NC, nq type error, engine 0, size 4096, host
    p.ioctl(
        0,
        Ioctl::NotificationsInitV2,
        &le(&[0, 0, 3, 0, 4096, 1], &[4, 4, 4, 4, 4, 4]),
        &[],
    );
    p.ioctl(0, Ioctl::NcReset, &le(&[0xFFFF_FFFF], &[4]), &[]);
    p.ioctl(0, Ioctl::NcResetReady, &[], &[]);
    p.close(0);
    add("queues", &p);

    let mut p = Program::default();
    p.open(false);
    for &cmd in Ioctl::ALL {
        let n = user_pointers(cmd).len();
        p.ioctl(0, cmd, &[0xFF; 8], &vec![1; n]);
    }
    p.close(0);
    add("every_ioctl", &p);
    out
}

mod args {
    //! Argument builders for seeds.
    use super::le;

    /// `MEM_ALLOC_V2MT64` of `size` bytes on core 0, channel 0.
    pub fn alloc_v2mt64(size: u64, host: bool) -> Vec<u8> {
        // size, align, host_memory, dram_channel, dram_region, nc_id, mem_type, pad0, mem_handle
        le(
            &[size, 0, u64::from(host), 0, 0, 0, 8, 0, 0],
            &[8, 8, 4, 4, 4, 4, 4, 4, 8],
        )
    }
}
