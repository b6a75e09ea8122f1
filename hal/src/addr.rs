//! Address and handle newtypes.
//!
//! No raw `u64` crosses an API of this platform: a device address is a [`DeviceAddr`], a memory
//! allocation is a [`MemHandle`], a NeuronCore is an [`NcIndex`], and so on. Arithmetic on
//! addresses is checked — overflow is an error the caller must handle, never a silent wrap — in the
//! manner of rust-vmm's `vm-memory` `GuestAddress`.

use core::fmt;

/// Arithmetic on a [`DeviceAddr`] left the 64-bit address space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("device address arithmetic overflowed: {base} + {offset:#x}")]
pub struct AddrOverflow {
    /// The address the arithmetic started from.
    pub base: DeviceAddr,
    /// The offset that did not fit.
    pub offset: u64,
}

/// A device-visible physical address: what a DMA descriptor's `buf_ptr` holds, what
/// `MEM_GET_EXTENDED_INFO` reports as `pa`, and what the driver accepts as an mmap offset
/// (docs/driver.md §7). Host DMA memory appears in this space above the target's host window.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct DeviceAddr(u64);

impl DeviceAddr {
    /// The address zero.
    pub const ZERO: DeviceAddr = DeviceAddr(0);

    /// Wraps a raw address.
    pub const fn new(raw: u64) -> Self {
        DeviceAddr(raw)
    }

    /// The raw 64-bit value, for wire formats.
    pub const fn raw(self) -> u64 {
        self.0
    }

    /// `self + offset`, or an error if that leaves the address space.
    pub fn checked_add(self, offset: u64) -> Result<DeviceAddr, AddrOverflow> {
        self.0
            .checked_add(offset)
            .map(DeviceAddr)
            .ok_or(AddrOverflow { base: self, offset })
    }

    /// `self - base` if `self >= base`.
    pub fn offset_from(self, base: DeviceAddr) -> Option<u64> {
        self.0.checked_sub(base.0)
    }

    /// Whether `self` is a multiple of `align` (which must be a power of two; zero counts as 1).
    pub const fn is_aligned(self, align: u64) -> bool {
        align <= 1 || self.0 & (align - 1) == 0
    }

    /// The low 32 bits, as split into `*_lo` wire fields.
    pub const fn lo32(self) -> u32 {
        self.0 as u32
    }

    /// The high 32 bits, as split into `*_hi` wire fields.
    pub const fn hi32(self) -> u32 {
        (self.0 >> 32) as u32
    }

    /// Reassembles an address from its `lo`/`hi` wire halves.
    pub const fn from_lo_hi(lo: u32, hi: u32) -> Self {
        DeviceAddr((hi as u64) << 32 | lo as u64)
    }
}

impl fmt::Debug for DeviceAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceAddr({:#x})", self.0)
    }
}

impl fmt::Display for DeviceAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// A half-open range `[start, start + len)` of device addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AddrRange {
    /// First address in the range.
    pub start: DeviceAddr,
    /// Length in bytes.
    pub len: u64,
}

impl AddrRange {
    /// A range of `len` bytes at `start`.
    pub const fn new(start: DeviceAddr, len: u64) -> Self {
        AddrRange { start, len }
    }

    /// One past the last address; `None` if the range reaches past `u64::MAX`.
    pub fn end(&self) -> Option<u64> {
        self.start.raw().checked_add(self.len)
    }

    /// Whether `[addr, addr + len)` lies entirely inside this range.
    pub fn contains_span(&self, addr: DeviceAddr, len: u64) -> bool {
        let (Some(end), Some(span_end)) = (self.end(), addr.raw().checked_add(len)) else {
            return false;
        };
        addr.raw() >= self.start.raw() && span_end <= end
    }

    /// Whether `addr` lies inside this range.
    pub fn contains(&self, addr: DeviceAddr) -> bool {
        self.contains_span(addr, 1)
    }
}

/// A driver memory handle: a small integer starting at 1, 0 being invalid, recycled LIFO
/// (docs/driver.md §8.2).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MemHandle(core::num::NonZeroU64);

impl MemHandle {
    /// Wraps a raw handle; `None` for the invalid handle 0.
    pub const fn new(raw: u64) -> Option<Self> {
        match core::num::NonZeroU64::new(raw) {
            Some(v) => Some(MemHandle(v)),
            None => None,
        }
    }

    /// The raw value, for wire formats.
    pub const fn raw(self) -> u64 {
        self.0.get()
    }
}

impl fmt::Debug for MemHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MemHandle({})", self.0)
    }
}

impl fmt::Display for MemHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "h{}", self.0)
    }
}

macro_rules! index_newtype {
    ($(#[$doc:meta])* $name:ident($inner:ty), $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
        pub struct $name(pub $inner);

        impl $name {
            /// The index as a `usize`, for table lookups.
            pub const fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "({})"), self.0)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!($prefix, "{}"), self.0)
            }
        }
    };
}

index_newtype!(
    /// A NeuronCore (TPB) index within one device: 0..2 on trn1, 0..8 on trn2.
    NcIndex(u32),
    "nc"
);
index_newtype!(
    /// A DMA engine index *local to its core* (0..16). The device-global engine number the driver
    /// uses is `nc * 16 + local` (docs/driver.md §9.1); see [`DmaEngine::global`].
    DmaEngine(u32),
    "e"
);
index_newtype!(
    /// A queue within a DMA engine (0..16, docs/driver.md §11 `DMA_MAX_Q_V4`).
    QueueId(u32),
    "q"
);
index_newtype!(
    /// A hardware semaphore of one core (0..256).
    SemaphoreId(u32),
    "sem"
);
index_newtype!(
    /// A hardware event of one core (0..256).
    EventId(u32),
    "evt"
);

impl DmaEngine {
    /// Number of DMA engines each NeuronCore owns on v2 and v3 (docs/driver.md §11).
    pub const PER_CORE: u32 = 16;

    /// The device-global engine number the driver's ioctls take (`eng_id`):
    /// core `nc` owns engines `16*nc .. 16*nc + 15` (docs/driver.md §9.1).
    pub fn global(self, nc: NcIndex) -> u32 {
        nc.0 * Self::PER_CORE + self.0
    }

    /// Splits a device-global engine number into (core, local engine), for engines that belong
    /// to a core (not the host engines 32/33 on v2 or 128..132 on v3).
    pub fn from_global(eng_id: u32) -> (NcIndex, DmaEngine) {
        (
            NcIndex(eng_id / Self::PER_CORE),
            DmaEngine(eng_id % Self::PER_CORE),
        )
    }
}

/// A DMA queue named by its core, engine and queue index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueueRef {
    /// The owning core.
    pub nc: NcIndex,
    /// The engine, local to the core.
    pub engine: DmaEngine,
    /// The queue within the engine.
    pub queue: QueueId,
}

impl QueueRef {
    /// A queue reference.
    pub const fn new(nc: NcIndex, engine: DmaEngine, queue: QueueId) -> Self {
        QueueRef { nc, engine, queue }
    }
}

impl fmt::Display for QueueRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.nc, self.engine, self.queue)
    }
}

/// The five compute engines of a NeuronCore (docs/isa.md §2.1), in the order the
/// runtime fills `device_exec_request_t.eng_addresses_*` (docs/exec.md §2: PE, ACT, POOL, DVE, SP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum EngineKind {
    /// Tensor engine: the 128×128 systolic array (def.json key `pe`).
    Pe = 0,
    /// Scalar engine: activation functions (def.json key `act`, file `Activation.json`).
    Act = 1,
    /// GpSimd engine (def.json key `pool`, file `Pool.json`).
    Pool = 2,
    /// Vector engine (def.json key `dve`, file `DVE.json`).
    Dve = 3,
    /// Sync engine: semaphores and DMA triggering (def.json key `sp`, file `SP.json`).
    Sp = 4,
}

impl EngineKind {
    /// All engines, in exec-request order.
    pub const ALL: [EngineKind; 5] = [
        EngineKind::Pe,
        EngineKind::Act,
        EngineKind::Pool,
        EngineKind::Dve,
        EngineKind::Sp,
    ];

    /// Position in the exec request's engine-address arrays.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The engine at exec-request position `i`.
    pub fn from_index(i: usize) -> Option<EngineKind> {
        Self::ALL.get(i).copied()
    }

    /// The key naming this engine in `def.json` (`pe`, `act`, `pool`, `dve`, `sp`).
    pub const fn def_key(self) -> &'static str {
        match self {
            EngineKind::Pe => "pe",
            EngineKind::Act => "act",
            EngineKind::Pool => "pool",
            EngineKind::Dve => "dve",
            EngineKind::Sp => "sp",
        }
    }

    /// The engine JSON/binary base name real compilers use (`PE`, `Activation`, `Pool`, `DVE`, `SP`).
    pub const fn file_stem(self) -> &'static str {
        match self {
            EngineKind::Pe => "PE",
            EngineKind::Act => "Activation",
            EngineKind::Pool => "Pool",
            EngineKind::Dve => "DVE",
            EngineKind::Sp => "SP",
        }
    }

    /// Parses a `def.json` engine key or a queue-set `owner` value.
    pub fn from_def_key(key: &str) -> Option<EngineKind> {
        Self::ALL.into_iter().find(|e| e.def_key() == key)
    }

    /// Short upper-case name used in traces and disassembly.
    pub const fn name(self) -> &'static str {
        match self {
            EngineKind::Pe => "PE",
            EngineKind::Act => "ACT",
            EngineKind::Pool => "POOL",
            EngineKind::Dve => "DVE",
            EngineKind::Sp => "SP",
        }
    }
}

impl fmt::Display for EngineKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_add_overflows_to_error() {
        let a = DeviceAddr::new(u64::MAX - 3);
        assert_eq!(a.checked_add(3).unwrap().raw(), u64::MAX);
        let err = a.checked_add(4).unwrap_err();
        assert_eq!(err.offset, 4);
        assert!(err.to_string().contains("overflowed"));
    }

    #[test]
    fn lo_hi_round_trip() {
        let a = DeviceAddr::new(0x0000_1234_89ab_cdef);
        assert_eq!(a.lo32(), 0x89ab_cdef);
        assert_eq!(a.hi32(), 0x1234);
        assert_eq!(DeviceAddr::from_lo_hi(a.lo32(), a.hi32()), a);
    }

    #[test]
    fn range_containment_is_overflow_safe() {
        let r = AddrRange::new(DeviceAddr::new(0x1000), 0x1000);
        assert!(r.contains_span(DeviceAddr::new(0x1000), 0x1000));
        assert!(!r.contains_span(DeviceAddr::new(0x1001), 0x1000));
        assert!(!r.contains_span(DeviceAddr::new(0xfff), 1));
        assert!(!r.contains_span(DeviceAddr::new(u64::MAX), 2));
        let top = AddrRange::new(DeviceAddr::new(u64::MAX - 1), 8);
        assert_eq!(top.end(), None);
        assert!(!top.contains(DeviceAddr::new(u64::MAX)));
    }

    #[test]
    fn mem_handle_zero_is_invalid() {
        assert!(MemHandle::new(0).is_none());
        assert_eq!(MemHandle::new(7).unwrap().raw(), 7);
    }

    #[test]
    fn global_engine_numbering() {
        assert_eq!(DmaEngine(3).global(NcIndex(1)), 19);
        assert_eq!(DmaEngine::from_global(19), (NcIndex(1), DmaEngine(3)));
    }

    #[test]
    fn engine_order_matches_exec_request() {
        let names: Vec<_> = EngineKind::ALL.iter().map(|e| e.def_key()).collect();
        assert_eq!(names, ["pe", "act", "pool", "dve", "sp"]);
        for (i, e) in EngineKind::ALL.iter().enumerate() {
            assert_eq!(e.index(), i);
            assert_eq!(EngineKind::from_index(i), Some(*e));
            assert_eq!(EngineKind::from_def_key(e.def_key()), Some(*e));
        }
    }
}
