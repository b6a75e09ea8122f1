//! Per-generation device tables: trn1 (NEFF target `sunda`, NeuronCore-v2) and trn2 (`cayman`,
//! NeuronCore-v3).
//!
//! Everything the runtime and the simulator need to know about a device's shape lives here:
//! core and engine counts, HBM channels, the host DMA window, SBUF/PSUM geometry, each core's
//! MMIO map, clocks and bandwidths. Each number cites its source:
//!
//! - `docs/driver.md §n` — the kernel driver's own tables;
//! - `docs/isa.md §n`, `docs/neff.md §n` — AWS documentation and real NEFFs;
//! - **our choice** — the public record is silent, so the platform defines it. Every such choice
//!   is also what the simulator implements, so runtime and device agree by construction.
//!
//! The MMIO decoder [`Target::decode_mmio`] is the single place that turns a device address into a
//! register; the simulator routes every store through it (whether from a DMA descriptor, an
//! engine `WRITE` or a HAL call) and traces use it to name addresses symbolically.

use core::fmt;

use crate::addr::{AddrRange, DeviceAddr, DmaEngine, EngineKind, EventId, NcIndex, QueueId};
use crate::addr::{QueueRef, SemaphoreId};

/// A device generation this platform emulates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Target {
    /// Trainium1 / Inferentia2: NeuronCore-v2, NEFF target `sunda`, driver arch v2.
    Trn1,
    /// Trainium2: NeuronCore-v3, NEFF target `cayman`, driver arch v3.
    Trn2,
}

/// One HBM channel (stack) of a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HbmChannel {
    /// Device address of the channel's first byte (docs/driver.md §8.1).
    pub base: DeviceAddr,
    /// Bytes the driver uses in this channel (docs/driver.md §8.1 "HBM size used").
    pub size: u64,
}

impl HbmChannel {
    /// The channel's address range.
    pub const fn range(&self) -> AddrRange {
        AddrRange::new(self.base, self.size)
    }
}

/// State-buffer (SBUF) geometry of one core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SbufGeometry {
    /// Number of partitions (docs/isa.md §2.2: 128 on every generation).
    pub partitions: u32,
    /// Physical bytes per partition (docs/isa.md §2.2: 192 KiB on v2, 224 KiB on v3).
    pub partition_bytes: u32,
    /// Distance between consecutive partitions in the SBUF's device address window, as DMA
    /// descriptors address it (docs/neff.md §8.2: 256 KiB on both trn1 and trn2, in all real descriptors).
    pub partition_stride: u32,
}

impl SbufGeometry {
    /// Total physical bytes.
    pub const fn total_bytes(&self) -> u64 {
        self.partitions as u64 * self.partition_bytes as u64
    }
    /// Bytes of device address window (partitions × stride).
    pub const fn window_bytes(&self) -> u64 {
        self.partitions as u64 * self.partition_stride as u64
    }
}

/// PSUM (matmul accumulator memory) geometry of one core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PsumGeometry {
    /// Number of partitions (docs/isa.md §2.2: 128).
    pub partitions: u32,
    /// Bytes per partition (docs/isa.md §2.2: 16 KiB = 8 banks × 2 KiB).
    pub partition_bytes: u32,
    /// Banks per partition (docs/isa.md §2.2: 8).
    pub banks: u32,
    /// Bytes per bank (docs/isa.md §2.2: 2 KiB = 512 fp32; nki-library `PSUM_BANK_SIZE = 2048`).
    pub bank_bytes: u32,
}

/// Engine clocks in Hz (docs/isa.md §2.2 unless noted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineClocks {
    /// Tensor engine (PE).
    pub pe: u64,
    /// Scalar engine (ACT).
    pub act: u64,
    /// GpSimd engine (POOL).
    pub pool: u64,
    /// Vector engine (DVE).
    pub dve: u64,
    /// Sync engine (SP) — **our choice**: the scalar clock; the public record gives none.
    pub sp: u64,
}

impl EngineClocks {
    /// The clock of engine `e`.
    pub const fn of(&self, e: EngineKind) -> u64 {
        match e {
            EngineKind::Pe => self.pe,
            EngineKind::Act => self.act,
            EngineKind::Pool => self.pool,
            EngineKind::Dve => self.dve,
            EngineKind::Sp => self.sp,
        }
    }
}

/// The static description of one generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetSpec {
    /// Instance family name (`trn1`, `trn2`).
    pub name: &'static str,
    /// NEFF `kelf-N.json` `target` string (docs/neff.md §6: `sunda`, `cayman`).
    pub neff_target: &'static str,
    /// NeuronCore version name (docs/isa.md §2.2).
    pub core_version: &'static str,
    /// Driver `enum neuron_arch` value (docs/driver.md §3.7, §10: 2 = v2, 3 = v3).
    pub arch: u32,
    /// PCI device id (docs/driver.md §10: trn1 0x7164, trn2 0x7364).
    pub pci_device_id: u16,
    /// NeuronCores per device (docs/driver.md §11: v2 2, v3 8).
    pub nc_count: u32,
    /// DMA engines per core (docs/driver.md §11: 16).
    pub dma_engines_per_core: u32,
    /// Queues per DMA engine (docs/driver.md §11: 16, `DMA_MAX_Q_V4`).
    pub queues_per_engine: u32,
    /// Semaphores per core (docs/driver.md §11: 256 on v2 and v3).
    pub semaphores_per_core: u32,
    /// Events per core (docs/driver.md §11: 256).
    pub events_per_core: u32,
    /// HBM channels (docs/driver.md §8.1).
    pub hbm: &'static [HbmChannel],
    /// Device address where host DMA memory appears (`pci_host_base`, docs/driver.md §7, §8.1).
    pub host_window_base: DeviceAddr,
    /// Size of the host window this platform models — **our choice**: 64 GiB.
    pub host_window_size: u64,
    /// SBUF geometry.
    pub sbuf: SbufGeometry,
    /// PSUM geometry.
    pub psum: PsumGeometry,
    /// Device address of each core's TPB register window (docs/driver.md §5.3).
    pub tpb_bases: &'static [u64],
    /// Engine clocks.
    pub clocks: EngineClocks,
    /// Sustained bandwidth of one DMA engine in bytes/s (docs/isa.md §2.2: ~27 GiB/s per engine on
    /// trn1; the same figure is used for trn2, where the record gives none — our choice).
    pub dma_engine_bandwidth: u64,
    /// HBM bandwidth of the whole device in bytes/s (docs/isa.md §2.2: 820 GB/s trn1, ~2.9 TB/s trn2).
    pub hbm_bandwidth: u64,
    /// Compatible runtime-ABI range the driver accepts, (min, max) (docs/driver.md §10).
    pub abi_version_range: (u32, u32),
}

/// HBM channel table of trn1: ch0 at 0, ch1 at 0x10_0000_0000, 16 GiB used each (docs/driver.md §8.1).
const TRN1_HBM: [HbmChannel; 2] = [
    HbmChannel {
        base: DeviceAddr::new(0x0),
        size: 0x4_0000_0000,
    },
    HbmChannel {
        base: DeviceAddr::new(0x10_0000_0000),
        size: 0x4_0000_0000,
    },
];

/// HBM channel table of trn2: four channels, 24 GiB used each (docs/driver.md §8.1, `V3_HBM_ACTIVE_SIZE`).
const TRN2_HBM: [HbmChannel; 4] = [
    HbmChannel {
        base: DeviceAddr::new(0x0),
        size: 0x6_0000_0000,
    },
    HbmChannel {
        base: DeviceAddr::new(0x40_0000_0000),
        size: 0x6_0000_0000,
    },
    HbmChannel {
        base: DeviceAddr::new(0x8000_0000_0000),
        size: 0x6_0000_0000,
    },
    HbmChannel {
        base: DeviceAddr::new(0x8040_0000_0000),
        size: 0x6_0000_0000,
    },
];

/// trn1 TPB bases: `0xFFFC0000000 + k * 0x4000000` (docs/driver.md §5.3, `V2_MMAP_TPB_OFFSET`).
const TRN1_TPB: [u64; 2] = [0xFFF_C000_0000, 0xFFF_C400_0000];

/// trn2 TPB bases, `V3_MMAP_TPB_k_BASE` (docs/driver.md §5.3).
const TRN2_TPB: [u64; 8] = [
    0x20_0000_0000,
    0x30_0000_0000,
    0x60_0000_0000,
    0x70_0000_0000,
    0x8020_0000_0000,
    0x8030_0000_0000,
    0x8060_0000_0000,
    0x8070_0000_0000,
];

static TRN1: TargetSpec = TargetSpec {
    name: "trn1",
    neff_target: "sunda",
    core_version: "NeuronCore-v2",
    arch: 2,
    pci_device_id: 0x7164,
    nc_count: 2,
    dma_engines_per_core: 16,
    queues_per_engine: 16,
    semaphores_per_core: 256,
    events_per_core: 256,
    hbm: &TRN1_HBM,
    host_window_base: DeviceAddr::new(0x1000_0000_0000),
    host_window_size: 64 << 30,
    sbuf: SbufGeometry {
        partitions: 128,
        partition_bytes: 192 << 10,
        partition_stride: 256 << 10,
    },
    psum: PsumGeometry {
        partitions: 128,
        partition_bytes: 16 << 10,
        banks: 8,
        bank_bytes: 2 << 10,
    },
    tpb_bases: &TRN1_TPB,
    clocks: EngineClocks {
        pe: 2_800_000_000,
        act: 1_400_000_000,
        pool: 1_400_000_000,
        dve: 1_120_000_000,
        sp: 1_400_000_000,
    },
    // ~27 GiB/s per engine (docs/isa.md §2.2).
    dma_engine_bandwidth: 27 << 30,
    hbm_bandwidth: 820_000_000_000,
    abi_version_range: (5, 7),
};

static TRN2: TargetSpec = TargetSpec {
    name: "trn2",
    neff_target: "cayman",
    core_version: "NeuronCore-v3",
    arch: 3,
    pci_device_id: 0x7364,
    nc_count: 8,
    dma_engines_per_core: 16,
    queues_per_engine: 16,
    semaphores_per_core: 256,
    events_per_core: 256,
    hbm: &TRN2_HBM,
    host_window_base: DeviceAddr::new(0x4000_0000_0000),
    host_window_size: 64 << 30,
    sbuf: SbufGeometry {
        partitions: 128,
        partition_bytes: 224 << 10,
        partition_stride: 256 << 10,
    },
    psum: PsumGeometry {
        partitions: 128,
        partition_bytes: 16 << 10,
        banks: 8,
        bank_bytes: 2 << 10,
    },
    tpb_bases: &TRN2_TPB,
    clocks: EngineClocks {
        pe: 2_400_000_000,
        act: 1_200_000_000,
        pool: 1_200_000_000,
        dve: 960_000_000,
        sp: 1_200_000_000,
    },
    dma_engine_bandwidth: 27 << 30,
    hbm_bandwidth: 2_900_000_000_000,
    abi_version_range: (10, 11),
};

/// Offsets inside a core's TPB register window (docs/driver.md §5.1: the v2/v3 column; our choice where
/// marked).
pub mod tpb {
    /// SBUF window: 128 partitions × 256 KiB stride starting at the TPB base (docs/driver.md §7: the
    /// TPB k SBUF resource is the first 32 MiB of the TPB window).
    pub const SBUF: u64 = 0x0;
    /// PSUM window — **our choice**: right after the 32 MiB SBUF window, partitions at a
    /// 16 KiB stride (2 MiB).
    pub const PSUM: u64 = 0x200_0000;
    /// Sequencer register block — **our choice** (see [`super::seq`]).
    pub const SEQ: u64 = 0x260_0000;
    /// Events: 4 bytes each (docs/driver.md §5.1).
    pub const EVENTS: u64 = 0x270_0000;
    /// Semaphore READ window (docs/driver.md §5.1).
    pub const SEM_READ: u64 = 0x270_1000;
    /// Semaphore SET window (docs/driver.md §5.1).
    pub const SEM_SET: u64 = 0x270_1400;
    /// Semaphore INCREMENT window (docs/driver.md §5.1).
    pub const SEM_INC: u64 = 0x270_1800;
    /// Semaphore DECREMENT window (docs/driver.md §5.1).
    pub const SEM_DEC: u64 = 0x270_1C00;
    /// Size of the event + semaphore window (docs/driver.md §5.1 `MMAP_NC_SEMA_SIZE`).
    pub const SEMA_WINDOW: u64 = 0x2000;
    /// Bytes of the whole TPB window (docs/driver.md §7: TPBs are 0x4000000 apart).
    pub const WINDOW: u64 = 0x400_0000;
}

// The windows inside a TPB do not overlap (the SBUF window is checked against each target in the
// tests, since its size is per-target data).
const _: () = assert!(tpb::SEQ >= tpb::PSUM + 128 * 16 * 1024);
const _: () = assert!(tpb::EVENTS >= tpb::SEQ + seq::WINDOW);
const _: () = assert!(tpb::SEM_DEC + 0x400 <= tpb::EVENTS + tpb::SEMA_WINDOW);

/// Sequencer registers, offsets from `tpb_base + tpb::SEQ`, and the sequencer protocol —
/// **our choice** throughout: the hardware's sequencer interface is not public. The runtime and
/// the simulator both follow this protocol:
///
/// 1. Each core's *hardware exec queue* is the DMA queue
///    ([`reserved::HW_EXEC_ENGINE`], [`reserved::HW_EXEC_QUEUE`]). The runtime initialises it
///    like any queue and appends TX/RX descriptor pairs to its rings through a mapping, with the
///    ring-id phase of the pass; it never increments its tail itself — the sequencer does.
/// 2. Incrementing semaphore [`reserved::INFERENCE_START`] by n queues n executions (the
///    doorbell, docs/exec.md §4). For each, the sequencer fetches descriptor pairs at the exec
///    queue's head, checks their ring-id phase, and performs them as DMA copies (through the same
///    store path as any DMA), up to and including the first pair whose RX descriptor has
///    `INT_EN` set: the end of that execution's block. A phase mismatch before that means
///    nothing (or not enough) was staged: an execution error. Before fetching, the sequencer
///    resets every semaphore below [`reserved::FIRST_SEMAPHORE`] and every event below
///    [`reserved::FIRST_EVENT`] of its core to 0, so a model's synchronisation counts start
///    from zero on every execution.
/// 3. A block's pairs are, in order (docs/exec.md §3): the 56-byte request buffer
///    (`device_exec_request_t` + `cc_dma_increment`) copied into [`seq::EXEC_REQUEST`]; a 4-byte
///    store to event [`reserved::HW_EXEC_QUEUE_REQUEST_LOAD`], which latches that slot as the
///    current request; two 4-byte stores to the TX and RX tail-increment registers of the queue
///    holding the execution's IO descriptors; optionally the collectives model-switch chain.
///    Any store to a tail-increment register kicks that queue.
///    A block may also rewind or re-point a model's queues by storing to their ring registers
///    ([`MmioReg::QueueRegister`]).
/// 4. After the block, the sequencer waits until every queue it kicked during the block has
///    drained, then starts each engine whose request address is non-zero at that address.
/// 5. When every started engine has retired (`End`), the sequencer increments semaphore
///    [`reserved::COMPLETION`] by 1, advances `COMPUTE_IDX_HEAD`, and writes a completion entry
///    ([`crate::notify`]) to the core's notification queue. A fault during the execution (DMA
///    error, bad instruction, memory error) stops the core's engines, writes an error entry, then
///    completes the execution the same way with an error status, so a waiter never hangs on a
///    fault the device detected; an engine that simply never retires is only seen as a timeout.
pub mod seq {
    /// The request slot: 52-byte `device_exec_request_t` followed by the 4-byte trailer.
    pub const EXEC_REQUEST: u64 = 0x000;
    /// Bytes of the request slot.
    pub const EXEC_REQUEST_LEN: u64 = 0x38;
    /// Completed executions, low 32 bits (read-only; `compute_idx_head`).
    pub const COMPUTE_IDX_HEAD_LO: u64 = 0x040;
    /// Completed executions, high 32 bits (read-only).
    pub const COMPUTE_IDX_HEAD_HI: u64 = 0x044;
    /// Sequencer status (read-only): 0 idle, 1 running, 2 faulted.
    pub const STATUS: u64 = 0x048;
    /// Bytes of the sequencer register block.
    pub const WINDOW: u64 = 0x100;
}

/// Runtime-reserved semaphores, events and queues — **our choice**. A NEFF's `def.json` declares
/// `runtime_semaphore_count` (3) and `runtime_event_count` (12) (docs/neff.md §7.1); this platform reserves
/// the top of each id space for them, so compiler-assigned ids (which start low) never collide.
pub mod reserved {
    use crate::addr::{DmaEngine, EventId, QueueId, SemaphoreId};

    /// Incremented by the host once per execution per core: the doorbell (docs/exec.md §4).
    pub const INFERENCE_START: SemaphoreId = SemaphoreId(255);
    /// Incremented by the sequencer when an execution retires: `compute_idx_head`.
    pub const COMPLETION: SemaphoreId = SemaphoreId(254);
    /// Third runtime semaphore, spare.
    pub const SPARE: SemaphoreId = SemaphoreId(253);
    /// First semaphore id reserved for the runtime.
    pub const FIRST_SEMAPHORE: u32 = 253;
    /// Poked by trigger pair 2: the request in the sequencer's slot is ready to load.
    pub const HW_EXEC_QUEUE_REQUEST_LOAD: EventId = EventId(255);
    /// Poked at the end of the collectives model-switch chain.
    pub const COLLECTIVES_CTX_LOAD: EventId = EventId(254);
    /// First event id reserved for the runtime (12 events: 244..=255).
    pub const FIRST_EVENT: u32 = 244;
    /// The hardware exec queue of every core: the DMA queue holding the trigger pairs the
    /// sequencer runs when INFERENCE_START is incremented.
    pub const HW_EXEC_ENGINE: DmaEngine = DmaEngine(0);
    /// Queue of [`HW_EXEC_ENGINE`] used as the hardware exec queue (queues 14 and 15 are reserved
    /// by the driver for NX cores and collectives, docs/driver.md §9.2).
    pub const HW_EXEC_QUEUE: QueueId = QueueId(13);
}

/// UDMA queue register offsets inside an engine's register block (docs/driver.md §4.5).
pub mod udma_regs {
    /// TX (m2s) queue q register block: `engine + 0x1000 + q * 0x1000`.
    pub const TX_QUEUE: u64 = 0x1000;
    /// RX (s2m) queue q register block: `engine + 0x21000 + q * 0x1000`.
    pub const RX_QUEUE: u64 = 0x2_1000;
    /// Stride between queue register blocks.
    pub const QUEUE_STRIDE: u64 = 0x1000;
    /// `drbp_low` inside a queue block: ring base bits 31:0.
    pub const DRBP_LOW: u64 = 0x28;
    /// `drbp_high` inside a queue block: ring base bits 63:32.
    pub const DRBP_HIGH: u64 = 0x2C;
    /// `drl` inside a queue block: ring length in descriptors.
    pub const DRL: u64 = 0x30;
    /// `drtp_inc` inside a queue block: writing N advances the tail by N descriptors.
    pub const DRTP_INC: u64 = 0x38;
    /// `q_sw_ctrl` of a TX queue block (bit 8 resets the queue).
    pub const TX_Q_SW_CTRL: u64 = 0xB0;
    /// `q_sw_ctrl` of an RX queue block (bit 8 resets the queue).
    pub const RX_Q_SW_CTRL: u64 = 0x64;
    /// The reset bit of `q_sw_ctrl`.
    pub const Q_SW_CTRL_RESET: u32 = 1 << 8;
    /// Bytes of one engine's register block as modelled (`struct unit_regs_v4`, 0x3C800).
    pub const ENGINE_BLOCK: u64 = 0x3_C800;
}

/// Direction of a DMA queue ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    /// m2s: the source side (TX ring).
    Tx,
    /// s2m: the destination side (RX ring).
    Rx,
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::Tx => "tx",
            Direction::Rx => "rx",
        })
    }
}

/// What a device address decodes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MmioReg {
    /// Byte `offset` of SBUF partition `partition` of core `nc` (window address; `offset` may
    /// exceed the physical partition size, which the device treats as a fault).
    Sbuf {
        /// Core.
        nc: NcIndex,
        /// Partition 0..128.
        partition: u32,
        /// Byte offset inside the partition's 256 KiB stride.
        offset: u32,
    },
    /// Byte `offset` of PSUM partition `partition` of core `nc`.
    Psum {
        /// Core.
        nc: NcIndex,
        /// Partition 0..128.
        partition: u32,
        /// Byte offset inside the partition.
        offset: u32,
    },
    /// Event `id` of core `nc`.
    Event {
        /// Core.
        nc: NcIndex,
        /// Event.
        id: EventId,
    },
    /// A semaphore operation window entry.
    Semaphore {
        /// Core.
        nc: NcIndex,
        /// Semaphore.
        id: SemaphoreId,
        /// Which window was addressed.
        op: SemWindow,
    },
    /// A sequencer register: byte `offset` inside the sequencer block.
    Sequencer {
        /// Core.
        nc: NcIndex,
        /// Byte offset (see [`seq`]).
        offset: u64,
    },
    /// The `drtp_inc` register of a DMA queue ring.
    TailIncrement {
        /// The queue.
        queue: QueueRef,
        /// Which ring.
        dir: Direction,
    },
    /// A ring-programming register of a DMA queue ring (docs/driver.md §4.5): base, length or the
    /// software-control reset. The driver refuses these to user BAR writes, but the device's own
    /// DMA (the runtime's exec-queue block) may store to them, which is how a model's rings are
    /// re-pointed and rewound per execution on this platform.
    QueueRegister {
        /// The queue.
        queue: QueueRef,
        /// Which ring.
        dir: Direction,
        /// Which register.
        reg: QueueReg,
    },
}

/// The ring-programming registers of a queue ring that [`MmioReg::QueueRegister`] names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QueueReg {
    /// `drbp_low`: ring base bits 31:0 (takes effect at the next reset).
    BaseLow,
    /// `drbp_high`: ring base bits 63:32 (takes effect at the next reset).
    BaseHigh,
    /// `drl`: ring length in descriptors (takes effect at the next reset).
    Length,
    /// `q_sw_ctrl`: storing bit 8 resets the ring — head, tail and pending count to 0, ring-id
    /// phase back to 1, base and length from the registers above.
    SwCtrl,
}

impl QueueReg {
    /// Offset inside the ring's queue register block.
    pub const fn offset(self, dir: Direction) -> u64 {
        match (self, dir) {
            (QueueReg::BaseLow, _) => udma_regs::DRBP_LOW,
            (QueueReg::BaseHigh, _) => udma_regs::DRBP_HIGH,
            (QueueReg::Length, _) => udma_regs::DRL,
            (QueueReg::SwCtrl, Direction::Tx) => udma_regs::TX_Q_SW_CTRL,
            (QueueReg::SwCtrl, Direction::Rx) => udma_regs::RX_Q_SW_CTRL,
        }
    }

    fn name(self) -> &'static str {
        match self {
            QueueReg::BaseLow => "q_base_lo",
            QueueReg::BaseHigh => "q_base_hi",
            QueueReg::Length => "q_len",
            QueueReg::SwCtrl => "q_reset",
        }
    }
}

/// The four semaphore windows (docs/driver.md §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SemWindow {
    /// Loads return the value; stores are ignored.
    Read,
    /// Stores set the value.
    Set,
    /// Stores add the stored amount.
    Increment,
    /// Stores subtract the stored amount.
    Decrement,
}

impl fmt::Display for MmioReg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MmioReg::Sbuf {
                nc,
                partition,
                offset,
            } => write!(f, "sbuf[{nc}:p{partition}+{offset:#x}]"),
            MmioReg::Psum {
                nc,
                partition,
                offset,
            } => write!(f, "psum[{nc}:p{partition}+{offset:#x}]"),
            MmioReg::Event { nc, id } => write!(f, "evt[{nc}:{}]", id.0),
            MmioReg::Semaphore { nc, id, op } => {
                let w = match op {
                    SemWindow::Read => "sem",
                    SemWindow::Set => "sem_set",
                    SemWindow::Increment => "sem_inc",
                    SemWindow::Decrement => "sem_dec",
                };
                write!(f, "{w}[{nc}:{}]", id.0)
            }
            MmioReg::Sequencer { nc, offset } => write!(f, "seq[{nc}+{offset:#x}]"),
            MmioReg::TailIncrement { queue, dir } => write!(
                f,
                "tail_inc[{}.{}.{}.{dir}]",
                queue.nc, queue.engine, queue.queue
            ),
            MmioReg::QueueRegister { queue, dir, reg } => write!(
                f,
                "{}[{}.{}.{}.{dir}]",
                reg.name(),
                queue.nc,
                queue.engine,
                queue.queue
            ),
        }
    }
}

impl Target {
    /// Both targets.
    pub const ALL: [Target; 2] = [Target::Trn1, Target::Trn2];

    /// The static table of this target.
    pub fn spec(self) -> &'static TargetSpec {
        match self {
            Target::Trn1 => &TRN1,
            Target::Trn2 => &TRN2,
        }
    }

    /// Instance family name: `trn1` or `trn2`.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// Parses `trn1`/`trn2` (also accepts the NEFF names `sunda`/`cayman`).
    pub fn from_name(s: &str) -> Option<Target> {
        Self::ALL
            .into_iter()
            .find(|t| t.name() == s || t.spec().neff_target == s)
    }

    /// The target whose NEFF `target` string is `s` (`sunda`, `cayman`). `*` (any) is not a
    /// target; callers handle it.
    pub fn from_neff_target(s: &str) -> Option<Target> {
        Self::ALL.into_iter().find(|t| t.spec().neff_target == s)
    }

    /// The target of a driver `enum neuron_arch` value.
    pub fn from_arch(arch: u32) -> Option<Target> {
        Self::ALL.into_iter().find(|t| t.spec().arch == arch)
    }

    /// Device time in nanoseconds of `cycles` at the sequencer clock (`clocks.sp`), the unit of
    /// every cycle count the simulator and the runtime report (docs/simulator.md "Time base").
    pub fn cycles_to_ns(self, cycles: u64) -> f64 {
        cycles as f64 * 1e9 / self.spec().clocks.sp as f64
    }

    /// Whether `nc` is a core of this device.
    pub fn has_core(self, nc: NcIndex) -> bool {
        nc.0 < self.spec().nc_count
    }

    /// The HBM channel a core's memory is allocated from by default: trn1 core k → channel k;
    /// trn2's four stacks are each shared by two cores, so core k → channel k / 2 (docs/isa.md §2.2).
    pub fn hbm_channel_of(self, nc: NcIndex) -> u32 {
        match self {
            Target::Trn1 => nc.0,
            Target::Trn2 => nc.0 / 2,
        }
    }

    /// Device address of core `nc`'s TPB window, or `None` for a core this device lacks.
    pub fn tpb_base(self, nc: NcIndex) -> Option<DeviceAddr> {
        self.spec()
            .tpb_bases
            .get(nc.index())
            .map(|b| DeviceAddr::new(*b))
    }

    fn tpb_addr(self, nc: NcIndex, off: u64) -> Option<DeviceAddr> {
        self.tpb_base(nc)?.checked_add(off).ok()
    }

    /// Device address of event `id` of core `nc` (docs/driver.md §5.3: `tpb + 0x2700000 + 4*id`).
    pub fn event_addr(self, nc: NcIndex, id: EventId) -> Option<DeviceAddr> {
        (id.0 < self.spec().events_per_core)
            .then(|| self.tpb_addr(nc, tpb::EVENTS + 4 * id.0 as u64))?
    }

    /// Device address of semaphore `id`'s entry in window `op` of core `nc` (docs/driver.md §5.1).
    pub fn semaphore_addr(self, nc: NcIndex, id: SemaphoreId, op: SemWindow) -> Option<DeviceAddr> {
        let base = match op {
            SemWindow::Read => tpb::SEM_READ,
            SemWindow::Set => tpb::SEM_SET,
            SemWindow::Increment => tpb::SEM_INC,
            SemWindow::Decrement => tpb::SEM_DEC,
        };
        (id.0 < self.spec().semaphores_per_core)
            .then(|| self.tpb_addr(nc, base + 4 * id.0 as u64))?
    }

    /// Device address of byte `offset` of SBUF partition `partition` of core `nc`, in the
    /// 256 KiB-stride window DMA descriptors use (docs/neff.md §8.2).
    pub fn sbuf_addr(self, nc: NcIndex, partition: u32, offset: u32) -> Option<DeviceAddr> {
        let g = self.spec().sbuf;
        (partition < g.partitions && offset < g.partition_stride).then(|| {
            self.tpb_addr(
                nc,
                tpb::SBUF + partition as u64 * g.partition_stride as u64 + offset as u64,
            )
        })?
    }

    /// Device address of byte `offset` of PSUM partition `partition` of core `nc` (our choice of
    /// window, see [`tpb::PSUM`]).
    pub fn psum_addr(self, nc: NcIndex, partition: u32, offset: u32) -> Option<DeviceAddr> {
        let g = self.spec().psum;
        (partition < g.partitions && offset < g.partition_bytes).then(|| {
            self.tpb_addr(
                nc,
                tpb::PSUM + partition as u64 * g.partition_bytes as u64 + offset as u64,
            )
        })?
    }

    /// Device address of sequencer register `offset` of core `nc` (see [`seq`]).
    pub fn seq_addr(self, nc: NcIndex, offset: u64) -> Option<DeviceAddr> {
        (offset < seq::WINDOW).then(|| self.tpb_addr(nc, tpb::SEQ + offset))?
    }

    /// Device address of the register block of DMA engine `engine` of core `nc`.
    ///
    /// - trn1: the APB window at device `0xFFFF0000000` maps BAR0 `0x30000000` (docs/driver.md §8.1); NC0
    ///   engine e sits at BAR0 `0x30000000 + e*0x40000`, NC1 at `0x30700000 + e*0x40000`
    ///   (docs/driver.md §9.1), so the device address is `0xFFFF0000000 + (bar0 − 0x30000000)`.
    /// - trn2: engine g = 16·nc + e lives in SENG s = g/32 at BAR0 `SENG_s + (g%32)*0x100000`
    ///   (docs/driver.md §9.1). The device-side address of the SENG windows is not public; **our choice**:
    ///   `0x8000000000 + bar0`, i.e. the IO0 window (`0x8000000000` → BAR0 0, docs/driver.md §8.1) extended
    ///   linearly.
    pub fn dma_engine_base(self, nc: NcIndex, engine: DmaEngine) -> Option<DeviceAddr> {
        let spec = self.spec();
        if nc.0 >= spec.nc_count || engine.0 >= spec.dma_engines_per_core {
            return None;
        }
        let e = engine.0 as u64;
        let addr = match self {
            Target::Trn1 => {
                let bar0 = [0x3000_0000u64, 0x3070_0000][nc.index()] + e * 0x4_0000;
                0xFFF_F000_0000 + (bar0 - 0x3000_0000)
            }
            Target::Trn2 => {
                let g = engine.global(nc) as u64;
                let seng = [0x8200_0000u64, 0x9400_0000, 0xA200_0000, 0xB400_0000];
                0x80_0000_0000 + seng[(g / 32) as usize] + (g % 32) * 0x10_0000
            }
        };
        Some(DeviceAddr::new(addr))
    }

    /// Device address of the `drtp_inc` (tail-increment) register of `queue`'s `dir` ring
    /// (docs/driver.md §4.5: TX `engine + 0x1038 + q*0x1000`, RX `engine + 0x21038 + q*0x1000`).
    pub fn tail_inc_addr(self, queue: QueueRef, dir: Direction) -> Option<DeviceAddr> {
        if queue.queue.0 >= self.spec().queues_per_engine {
            return None;
        }
        let base = self.dma_engine_base(queue.nc, queue.engine)?;
        let blk = match dir {
            Direction::Tx => udma_regs::TX_QUEUE,
            Direction::Rx => udma_regs::RX_QUEUE,
        };
        base.checked_add(blk + queue.queue.0 as u64 * udma_regs::QUEUE_STRIDE + udma_regs::DRTP_INC)
            .ok()
    }

    /// Device address of ring-programming register `reg` of `queue`'s `dir` ring.
    pub fn queue_reg_addr(
        self,
        queue: QueueRef,
        dir: Direction,
        reg: QueueReg,
    ) -> Option<DeviceAddr> {
        if queue.queue.0 >= self.spec().queues_per_engine {
            return None;
        }
        let base = self.dma_engine_base(queue.nc, queue.engine)?;
        let blk = match dir {
            Direction::Tx => udma_regs::TX_QUEUE,
            Direction::Rx => udma_regs::RX_QUEUE,
        };
        base.checked_add(blk + queue.queue.0 as u64 * udma_regs::QUEUE_STRIDE + reg.offset(dir))
            .ok()
    }

    /// Whether `addr` lies in the host DMA window.
    pub fn is_host_addr(self, addr: DeviceAddr) -> bool {
        let s = self.spec();
        AddrRange::new(s.host_window_base, s.host_window_size).contains(addr)
    }

    /// The HBM channel containing `addr`, if any.
    pub fn hbm_channel_at(self, addr: DeviceAddr) -> Option<u32> {
        self.spec()
            .hbm
            .iter()
            .position(|c| c.range().contains(addr))
            .map(|i| i as u32)
    }

    /// Decodes a device address that falls in a register or on-chip memory window. Returns
    /// `None` for HBM, host memory and addresses no window covers. Semaphore, event and register
    /// addresses must be 4-byte aligned to decode.
    pub fn decode_mmio(self, addr: DeviceAddr) -> Option<MmioReg> {
        let spec = self.spec();
        for (i, &base) in spec.tpb_bases.iter().enumerate() {
            let nc = NcIndex(i as u32);
            let Some(off) = addr.raw().checked_sub(base) else {
                continue;
            };
            if off >= tpb::WINDOW {
                continue;
            }
            return self.decode_tpb(nc, off);
        }
        self.decode_udma(addr)
    }

    fn decode_tpb(self, nc: NcIndex, off: u64) -> Option<MmioReg> {
        let spec = self.spec();
        let sb = spec.sbuf;
        if off < tpb::SBUF + sb.window_bytes() {
            let rel = off - tpb::SBUF;
            return Some(MmioReg::Sbuf {
                nc,
                partition: (rel / sb.partition_stride as u64) as u32,
                offset: (rel % sb.partition_stride as u64) as u32,
            });
        }
        let ps = spec.psum;
        let psum_len = ps.partitions as u64 * ps.partition_bytes as u64;
        if (tpb::PSUM..tpb::PSUM + psum_len).contains(&off) {
            let rel = off - tpb::PSUM;
            return Some(MmioReg::Psum {
                nc,
                partition: (rel / ps.partition_bytes as u64) as u32,
                offset: (rel % ps.partition_bytes as u64) as u32,
            });
        }
        if !off.is_multiple_of(4) {
            return None;
        }
        if (tpb::SEQ..tpb::SEQ + seq::WINDOW).contains(&off) {
            return Some(MmioReg::Sequencer {
                nc,
                offset: off - tpb::SEQ,
            });
        }
        let idx = |base: u64, count: u32| -> Option<u32> {
            let i = off.checked_sub(base)? / 4;
            (i < count as u64 && off >= base).then_some(i as u32)
        };
        if let Some(i) = idx(tpb::EVENTS, spec.events_per_core) {
            return Some(MmioReg::Event { nc, id: EventId(i) });
        }
        for (base, op) in [
            (tpb::SEM_READ, SemWindow::Read),
            (tpb::SEM_SET, SemWindow::Set),
            (tpb::SEM_INC, SemWindow::Increment),
            (tpb::SEM_DEC, SemWindow::Decrement),
        ] {
            if off >= base && off < base + 0x400 {
                let i = idx(base, spec.semaphores_per_core)?;
                return Some(MmioReg::Semaphore {
                    nc,
                    id: SemaphoreId(i),
                    op,
                });
            }
        }
        None
    }

    fn decode_udma(self, addr: DeviceAddr) -> Option<MmioReg> {
        let spec = self.spec();
        // Locate the engine arithmetically (the inverse of `dma_engine_base`).
        let (nc, engine, off) = match self {
            Target::Trn1 => {
                let rel = addr.raw().checked_sub(0xFFF_F000_0000)?;
                let (nc, base) = if rel < 0x40_0000 {
                    (0, 0)
                } else if (0x70_0000..0xB0_0000).contains(&rel) {
                    (1, 0x70_0000)
                } else {
                    return None;
                };
                let e = (rel - base) / 0x4_0000;
                (nc, e as u32, (rel - base) % 0x4_0000)
            }
            Target::Trn2 => {
                let bar0 = addr.raw().checked_sub(0x80_0000_0000)?;
                let seng = [0x8200_0000u64, 0x9400_0000, 0xA200_0000, 0xB400_0000];
                let s = seng
                    .iter()
                    .position(|&b| (b..b + 32 * 0x10_0000).contains(&bar0))?;
                let rel = bar0 - seng[s];
                let g = 32 * s as u64 + rel / 0x10_0000;
                ((g / 16) as u32, (g % 16) as u32, rel % 0x10_0000)
            }
        };
        if nc >= spec.nc_count || off >= udma_regs::ENGINE_BLOCK {
            return None;
        }
        for (blk, dir) in [
            (udma_regs::TX_QUEUE, Direction::Tx),
            (udma_regs::RX_QUEUE, Direction::Rx),
        ] {
            let Some(rel) = off.checked_sub(blk) else {
                continue;
            };
            let q = rel / udma_regs::QUEUE_STRIDE;
            if q >= spec.queues_per_engine as u64 {
                continue;
            }
            let queue = QueueRef::new(NcIndex(nc), DmaEngine(engine), QueueId(q as u32));
            let reg_off = rel % udma_regs::QUEUE_STRIDE;
            if reg_off == udma_regs::DRTP_INC {
                return Some(MmioReg::TailIncrement { queue, dir });
            }
            for reg in [
                QueueReg::BaseLow,
                QueueReg::BaseHigh,
                QueueReg::Length,
                QueueReg::SwCtrl,
            ] {
                if reg.offset(dir) == reg_off {
                    return Some(MmioReg::QueueRegister { queue, dir, reg });
                }
            }
        }
        None
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The Neuron generations NEFFs name (kelf `target`), modelled or not: the NEFF target, the
/// instance family it is, and the modelled [`Target`] if this platform simulates it. A NEFF
/// for an unmodelled generation can still be read (inspected, disassembled), not run.
pub const GENERATIONS: [(&str, &str, Option<Target>); 3] = [
    ("sunda", "trn1", Some(Target::Trn1)),
    ("cayman", "trn2", Some(Target::Trn2)),
    ("mariana", "trn3", None),
];

/// The instance family (`trn1`, `trn2`, `trn3`) of a NEFF target name, if it is a known one.
pub fn generation_of(neff_target: &str) -> Option<&'static str> {
    GENERATIONS.iter().find(|g| g.0 == neff_target).map(|g| g.1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neff_target_names() {
        assert_eq!(Target::from_neff_target("sunda"), Some(Target::Trn1));
        assert_eq!(Target::from_neff_target("cayman"), Some(Target::Trn2));
        assert_eq!(Target::from_neff_target("mariana"), None);
        assert_eq!(Target::from_name("trn2"), Some(Target::Trn2));
        assert_eq!(Target::from_arch(2), Some(Target::Trn1));
    }

    #[test]
    fn cycles_to_ns_uses_the_sequencer_clock() {
        // 1.4 GHz on trn1, 1.2 GHz on trn2.
        assert_eq!(Target::Trn1.cycles_to_ns(1_400), 1_000.0);
        assert_eq!(Target::Trn2.cycles_to_ns(1_200), 1_000.0);
        assert_eq!(Target::Trn2.cycles_to_ns(0), 0.0);
    }

    #[test]
    fn abi_event_and_semaphore_addresses() {
        // docs/driver.md §5.3: event i of NC k = 0xFFFC2700000 + k*0x4000000 + 4*i (v2);
        // semaphore-incr i = 0xFFFC2701800 + k*0x4000000 + 4*i.
        let t = Target::Trn1;
        assert_eq!(
            t.event_addr(NcIndex(1), EventId(3)).unwrap().raw(),
            0xFFF_C270_0000 + 0x400_0000 + 12
        );
        assert_eq!(
            t.semaphore_addr(NcIndex(0), SemaphoreId(5), SemWindow::Increment)
                .unwrap()
                .raw(),
            0xFFF_C270_1814
        );
        assert_eq!(
            Target::Trn2
                .event_addr(NcIndex(4), EventId(0))
                .unwrap()
                .raw(),
            0x8020_0270_0000
        );
        assert!(t.event_addr(NcIndex(2), EventId(0)).is_none());
        assert!(t.event_addr(NcIndex(0), EventId(256)).is_none());
    }

    #[test]
    fn tail_increment_register_addresses() {
        let q = QueueRef::new(NcIndex(0), DmaEngine(3), QueueId(2));
        // trn1 NC0 engine 3 base = 0xFFFF0000000 + 3*0x40000; TX q2 = +0x1038 + 0x2000.
        assert_eq!(
            Target::Trn1.tail_inc_addr(q, Direction::Tx).unwrap().raw(),
            0xFFF_F000_0000 + 0xC_0000 + 0x3038
        );
        assert_eq!(
            Target::Trn1.tail_inc_addr(q, Direction::Rx).unwrap().raw(),
            0xFFF_F000_0000 + 0xC_0000 + 0x2_3038
        );
        let q1 = QueueRef::new(NcIndex(1), DmaEngine(0), QueueId(0));
        assert_eq!(
            Target::Trn1.tail_inc_addr(q1, Direction::Tx).unwrap().raw(),
            0xFFF_F070_1038
        );
    }

    #[test]
    fn decoder_inverts_every_address_builder() {
        for t in Target::ALL {
            let s = t.spec();
            for n in 0..s.nc_count {
                let nc = NcIndex(n);
                for i in [0, 1, 77, 255] {
                    let a = t.event_addr(nc, EventId(i)).unwrap();
                    assert_eq!(
                        t.decode_mmio(a),
                        Some(MmioReg::Event { nc, id: EventId(i) })
                    );
                    for op in [
                        SemWindow::Read,
                        SemWindow::Set,
                        SemWindow::Increment,
                        SemWindow::Decrement,
                    ] {
                        let a = t.semaphore_addr(nc, SemaphoreId(i), op).unwrap();
                        assert_eq!(
                            t.decode_mmio(a),
                            Some(MmioReg::Semaphore {
                                nc,
                                id: SemaphoreId(i),
                                op
                            })
                        );
                    }
                }
                for e in 0..16 {
                    for q in [0, 7, 15] {
                        for dir in [Direction::Tx, Direction::Rx] {
                            let queue = QueueRef::new(nc, DmaEngine(e), QueueId(q));
                            let a = t.tail_inc_addr(queue, dir).unwrap();
                            assert_eq!(
                                t.decode_mmio(a),
                                Some(MmioReg::TailIncrement { queue, dir })
                            );
                        }
                    }
                }
                for reg in [
                    QueueReg::BaseLow,
                    QueueReg::BaseHigh,
                    QueueReg::Length,
                    QueueReg::SwCtrl,
                ] {
                    for dir in [Direction::Tx, Direction::Rx] {
                        let queue = QueueRef::new(nc, DmaEngine(5), QueueId(9));
                        let a = t.queue_reg_addr(queue, dir, reg).unwrap();
                        assert_eq!(
                            t.decode_mmio(a),
                            Some(MmioReg::QueueRegister { queue, dir, reg })
                        );
                    }
                }
                let a = t.sbuf_addr(nc, 12, 0x1a0).unwrap();
                assert_eq!(
                    t.decode_mmio(a),
                    Some(MmioReg::Sbuf {
                        nc,
                        partition: 12,
                        offset: 0x1a0
                    })
                );
                let a = t.psum_addr(nc, 127, 0x3ffc).unwrap();
                assert_eq!(
                    t.decode_mmio(a),
                    Some(MmioReg::Psum {
                        nc,
                        partition: 127,
                        offset: 0x3ffc
                    })
                );
                let a = t.seq_addr(nc, seq::STATUS).unwrap();
                assert_eq!(
                    t.decode_mmio(a),
                    Some(MmioReg::Sequencer {
                        nc,
                        offset: seq::STATUS
                    })
                );
            }
            // HBM and host memory are not MMIO.
            assert_eq!(t.decode_mmio(DeviceAddr::new(0x100_0000)), None);
            assert_eq!(t.decode_mmio(s.host_window_base), None);
        }
    }

    #[test]
    fn canonical_register_names() {
        let t = Target::Trn1;
        let q = QueueRef::new(NcIndex(0), DmaEngine(3), QueueId(2));
        let a = t.tail_inc_addr(q, Direction::Tx).unwrap();
        assert_eq!(
            t.decode_mmio(a).unwrap().to_string(),
            "tail_inc[nc0.e3.q2.tx]"
        );
        let a = t.sbuf_addr(NcIndex(0), 12, 0x1a0).unwrap();
        assert_eq!(t.decode_mmio(a).unwrap().to_string(), "sbuf[nc0:p12+0x1a0]");
        let a = t
            .semaphore_addr(NcIndex(0), SemaphoreId(5), SemWindow::Read)
            .unwrap();
        assert_eq!(t.decode_mmio(a).unwrap().to_string(), "sem[nc0:5]");
        let a = t.event_addr(NcIndex(0), EventId(3)).unwrap();
        assert_eq!(t.decode_mmio(a).unwrap().to_string(), "evt[nc0:3]");
    }

    #[test]
    fn geometry_numbers() {
        let t1 = Target::Trn1.spec();
        assert_eq!(t1.sbuf.total_bytes(), 24 << 20);
        assert_eq!(t1.sbuf.window_bytes(), 32 << 20);
        let t2 = Target::Trn2.spec();
        assert_eq!(t2.sbuf.total_bytes(), 28 << 20);
        assert_eq!(t2.hbm.iter().map(|c| c.size).sum::<u64>(), 96 << 30);
        assert_eq!(t1.hbm.iter().map(|c| c.size).sum::<u64>(), 32 << 30);
        assert_eq!(
            t1.psum.partitions as u64 * t1.psum.partition_bytes as u64,
            2 << 20
        );
        assert_eq!(t1.psum.banks * t1.psum.bank_bytes, t1.psum.partition_bytes);
        // Windows do not overlap inside a TPB.
        assert!(tpb::PSUM >= tpb::SBUF + t2.sbuf.window_bytes());
        assert_eq!(Target::Trn2.hbm_channel_of(NcIndex(5)), 2);
        assert_eq!(
            Target::Trn1.hbm_channel_at(DeviceAddr::new(0x10_0000_1000)),
            Some(1)
        );
    }
}
