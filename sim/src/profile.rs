//! Per-execution activity counters of one core, for a profile summary in the shape of a
//! device profile's (`nrt-emu profile`): busy time per engine and of DMA, instruction counts,
//! and bytes moved by memory. Reset when an execution begins; read after it completes
//! ([`crate::Sim::exec_profile`]). Beside them, [`CoreActivity`] accumulates whole executions
//! for the life of the device — what the driver's per-core sysfs counters report
//! (docs/driver.md §13).
//!
//! Engines and DMA record each instruction or descriptor pair as a busy interval in device
//! cycles. Intervals reach the counters in nondecreasing start order (the scheduler runs units
//! in time order, and a unit runs ahead only while no earlier wake-up is pending), so the time
//! during which *any* engine (or any DMA queue) is busy is kept as a running union.

use nrt_hal::EngineKind;

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
    /// product, [`crate::compute::ComputeOutcome::pe_macs`]): arithmetic any exact simulator
    /// of the execution must do on the host.
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
    pub(crate) fn engine(&mut self, kind: EngineKind, start: u64, cycles: u64) {
        self.engine_active[kind.index()] += cycles;
        self.engine_instructions[kind.index()] += 1;
        self.engines_busy.add(start, cycles);
    }
}

/// Executions of one core since the device was created, kept across core resets (the driver's
/// per-core counters run from driver load, docs/driver.md §13; [`crate::Sim::core_activity`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CoreActivity {
    /// Executions completed, faulted ones included.
    pub executions: u64,
    /// Executions that completed with a fault (an error notification).
    pub faulted: u64,
    /// Multiply-accumulates the PE array computed over all executions.
    pub pe_macs: u64,
    /// Device cycles of the last completed execution, from its start to its completion.
    pub last_cycles: u64,
    /// Device cycles spent in executions, summed.
    pub busy_cycles: u64,
}
