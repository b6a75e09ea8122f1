//! Per-execution activity counters of one core, for a profile summary in the shape of a
//! device profile's (`nrt-emu profile`): busy time per engine and of DMA, instruction counts,
//! and bytes moved by memory. Reset when an execution begins; read after it completes
//! ([`crate::Sim::exec_profile`], or the simulator's profiling capability,
//! [`nrt_hal::profile::Profiler::exec_profile`]); the counter types are the device contract's
//! ([`nrt_hal::profile`]) and the simulator fills them in. Beside them, [`CoreActivity`]
//! accumulates whole executions for the life of the device — what the driver's per-core sysfs
//! counters report (docs/driver.md §13).
//!
//! Engines and DMA record each instruction or descriptor pair as a busy interval in device
//! cycles. Intervals reach the counters in nondecreasing start order (the scheduler runs units
//! in time order, and a unit runs ahead only while no earlier wake-up is pending), so the time
//! during which *any* engine (or any DMA queue) is busy is kept as a running union. The PE's
//! multiply-accumulates ([`ExecProfile::pe_macs`]) are
//! [`crate::compute::ComputeOutcome::pe_macs`] summed.
//!
//! With tracing on ([`nrt_hal::profile::Profiler::set_tracing`]) each execution is also
//! recorded instruction by instruction, DMA packet by packet and semaphore update by semaphore
//! update ([`ExecTrace`]): what `nrt-emu profile` turns into neuron-profile's JSON
//! (docs/profile.md §5). Recording is one branch per event when off.

pub use nrt_hal::profile::{BusyUnion, ExecProfile, ExecTrace};
use nrt_hal::profile::{Origin, RuntimeInstr, TracedDma, TracedInstr, TracedSemaphore};
use nrt_hal::EngineKind;

/// The trace of one core's execution while it is recorded.
#[derive(Debug, Clone, Default)]
pub(crate) struct TraceRecorder {
    /// What was recorded.
    pub trace: ExecTrace,
    /// Whether the execution is still running (records are taken only then).
    pub open: bool,
}

impl TraceRecorder {
    /// A recorder for an execution on a device whose clock is `clock_hz`.
    pub fn new(clock_hz: u64) -> Self {
        TraceRecorder {
            trace: ExecTrace {
                clock_hz,
                ..ExecTrace::default()
            },
            open: true,
        }
    }

    /// Record `index` of `engine`'s stream ran from `start` to `end`.
    #[inline]
    pub fn instruction(&mut self, engine: EngineKind, index: u32, start: u64, end: u64) {
        if self.open {
            self.trace.instructions.push(TracedInstr {
                engine,
                origin: Origin::Stream { index },
                start,
                end,
            });
        }
    }

    /// A runtime instruction of `engine` ran from `start` to `end`.
    #[inline]
    pub fn runtime(&mut self, engine: EngineKind, what: RuntimeInstr, start: u64, end: u64) {
        if self.open {
            self.trace.instructions.push(TracedInstr {
                engine,
                origin: Origin::Runtime(what),
                start,
                end,
            });
        }
    }

    /// A DMA packet.
    #[inline]
    pub fn dma(&mut self, d: TracedDma) {
        if self.open {
            self.trace.dma.push(d);
        }
    }

    /// Semaphore `id` reached `value` at `time`.
    #[inline]
    pub fn semaphore(&mut self, id: u32, value: i32, time: u64) {
        if self.open {
            self.trace
                .semaphores
                .push(TracedSemaphore { id, value, time });
        }
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
