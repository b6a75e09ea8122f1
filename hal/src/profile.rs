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

use crate::addr::{EngineKind, NcIndex};

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
    /// Busy cycles per engine (exec-request order: PE, ACT, POOL, DVE, SP).
    pub engine_active: [u64; 5],
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
        self.engine_active[kind.index()] += cycles;
        self.engine_instructions[kind.index()] += 1;
        self.engines_busy.add(start, cycles);
    }
}
