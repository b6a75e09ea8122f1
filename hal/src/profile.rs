//! Profiling, a capability a backend may offer ([`Hal::profiler`](crate::Hal::profiler)): the
//! device timeline — what each engine and DMA queue did when, as Chrome/Perfetto trace JSON —
//! and each core's activity counters of its last execution ([`ExecProfile`]), in the shape of a
//! device profile's summary (busy time per engine and of DMA, instruction counts, bytes moved by
//! memory; docs/c-api.md §5.6).
//!
//! The simulator offers it; the driver backend does not (a real device's profile is read by the
//! Neuron tools, not through the driver's ioctl set), and a decorator offers whatever its inner
//! backend does. Nothing asks which backend it has: a caller that needs a profile asks for the
//! capability and reports its absence.

use crate::addr::{EngineKind, NcIndex, QueueRef};

/// A backend's profiling capability. Like [`Hal`](crate::Hal), callable from any thread.
pub trait Profiler: Send + Sync {
    /// Starts or stops recording the timeline.
    fn set_recording(&self, enabled: bool);

    /// Forgets the timeline recorded so far.
    fn clear(&self);

    /// The timeline recorded so far as Chrome / Perfetto trace JSON.
    fn timeline_json(&self) -> String;

    /// What core `nc` did during its current or last execution (all zero for a core the device
    /// does not have).
    fn exec_profile(&self, nc: NcIndex) -> ExecProfile;

    /// Starts or stops recording each execution instruction by instruction ([`ExecTrace`]).
    /// Off by default: a backend that cannot trace ignores it.
    fn set_tracing(&self, _enabled: bool) {}

    /// The instruction-level record of core `nc`'s last execution begun while tracing was on
    /// (`None` when there is none, or the backend does not trace).
    fn exec_trace(&self, _nc: NcIndex) -> Option<ExecTrace> {
        None
    }
}

/// One execution of one core, instruction by instruction, DMA packet by DMA packet: what a
/// profile in neuron-profile's schema is made from (docs/profile.md §5). Times are device
/// cycles at `clock_hz` from the device's own time base; `window` is the execution's profiled
/// window, from the engines' launch to the end of the last instruction the window keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecTrace {
    /// Device cycles per second.
    pub clock_hz: u64,
    /// The profiled window, `(start, end)`; `end` is 0 while the execution runs.
    pub window: (u64, u64),
    /// Per engine (exec-request order), the profiler's pc of the program's first record: how
    /// many of the runtime's instructions precede it in the stream the device runs.
    pub program_pc: [u32; 5],
    /// Executed instructions, in the order they issued.
    pub instructions: Vec<TracedInstr>,
    /// DMA packets, in the order they started.
    pub dma: Vec<TracedDma>,
    /// Semaphore updates, in time order.
    pub semaphores: Vec<TracedSemaphore>,
}

/// One executed instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TracedInstr {
    /// The engine.
    pub engine: EngineKind,
    /// What it was.
    pub origin: Origin,
    /// Issue (its waits held), device cycles.
    pub start: u64,
    /// Completion, device cycles.
    pub end: u64,
}

/// Where a traced instruction came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Record `index` of the engine's instruction stream (as the runtime staged it).
    Stream {
        /// The record index.
        index: u32,
    },
    /// One of the runtime's own instructions around the program, as the device runs them.
    Runtime(RuntimeInstr),
}

/// One of the runtime's instructions around a program (docs/simulator.md §7.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RuntimeInstr {
    /// The profiler's opcode name (`DRAIN`, `EVENT_SEMAPHORE`, …).
    pub opcode: &'static str,
    /// The profiler's operands text.
    pub operands: &'static str,
    /// Its pc.
    pub pc: RuntimePc,
}

/// The pc of a runtime instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuntimePc {
    /// At this pc of the stream the device runs (the preamble, and the runtime's own block
    /// the postamble jumps back to).
    At(u32),
    /// In the postamble, this many records after the program's last.
    After(u32),
}

/// One DMA packet (a descriptor pair of a queue, or a piece of an engine-issued DMA).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TracedDma {
    /// Who moved it.
    pub source: DmaSource,
    /// Bytes written (4 for a semaphore write).
    pub bytes: u64,
    /// Start, device cycles.
    pub start: u64,
    /// Data written, device cycles.
    pub end: u64,
    /// HBM (or host) bytes it read and wrote.
    pub hbm: (u64, u64),
    /// Whether it is a semaphore write that ends a DMA block.
    pub semaphore_write: bool,
}

/// The mover of a [`TracedDma`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaSource {
    /// One of the runtime's own DMAs around a program (its instruction fetch), on the
    /// device's queue `queue` of the runtime's queue set.
    Runtime {
        /// The device's queue number (0–15 on the first core of a pair, 16–31 on the second).
        queue: u32,
    },
    /// A descriptor pair of this hardware queue.
    Queue(QueueRef),
    /// Part of the DMA an engine issued at instruction `index` of its stream, completing into
    /// semaphore `semaphore`; `lane` spreads its packets over the core's DMA engines.
    Engine {
        /// The issuing engine.
        engine: EngineKind,
        /// Its instruction index.
        index: u32,
        /// The semaphore the DMA increments.
        semaphore: u32,
        /// The DMA engine (0–15) that moved this packet.
        lane: u32,
    },
}

/// A semaphore reaching a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TracedSemaphore {
    /// The semaphore.
    pub id: u32,
    /// Its value after the update.
    pub value: i32,
    /// Device cycle.
    pub time: u64,
}

/// A running union of busy intervals that arrive in nondecreasing start order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BusyUnion {
    /// Cycles covered by at least one interval.
    pub cycles: u64,
    until: u64,
}

impl BusyUnion {
    /// Adds the interval `[start, start + len)`.
    pub fn add(&mut self, start: u64, len: u64) {
        let end = start + len;
        if end > self.until {
            self.cycles += end - start.max(self.until);
            self.until = end;
        }
    }
}

/// What one core did during its last execution (all times in device cycles).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecProfile {
    /// Busy cycles per engine (exec-request order: PE, ACT, POOL, DVE, SP): the union of its
    /// instructions' intervals, which overlap where an engine pipelines.
    pub engine_active: [u64; 5],
    /// The running unions behind `engine_active`.
    pub engine_busy: [BusyUnion; 5],
    /// Instructions retired per engine.
    pub engine_instructions: [u64; 5],
    /// `matmul.mm` instructions.
    pub matmul_instructions: u64,
    /// Multiply-accumulates the PE array computed (`K · M · N` per `matmul.mm` that forms a
    /// product): arithmetic any exact simulator of the execution must do on the host.
    pub pe_macs: u64,
    /// Cycles during which any engine was busy.
    pub engines_busy: BusyUnion,
    /// Cycles during which any DMA queue was moving a descriptor pair.
    pub dma_busy: BusyUnion,
    /// Busy cycles summed over DMA queues (exceeds the execution time when queues overlap).
    pub dma_queue_cycles: u64,
    /// Descriptor pairs processed.
    pub dma_pairs: u64,
    /// Bytes moved by DMA into memory or on-chip memory (register stores not counted).
    pub dma_bytes: u64,
    /// Bytes DMA read from HBM / host memory.
    pub hbm_read_bytes: u64,
    /// Bytes DMA wrote to HBM / host memory.
    pub hbm_write_bytes: u64,
    /// Bytes DMA read from SBUF or PSUM.
    pub sbuf_read_bytes: u64,
    /// Bytes DMA wrote to SBUF or PSUM.
    pub sbuf_write_bytes: u64,
}

impl ExecProfile {
    /// Records an engine instruction busy from `start` for `cycles`.
    pub fn engine(&mut self, kind: EngineKind, start: u64, cycles: u64) {
        let u = &mut self.engine_busy[kind.index()];
        u.add(start, cycles);
        self.engine_active[kind.index()] = u.cycles;
        self.engine_instructions[kind.index()] += 1;
        self.engines_busy.add(start, cycles);
    }
}
