//! Per-execution activity counters of one core, for a profile summary in the shape of a
//! device profile's (`nrt-emu profile`): busy time per engine and of DMA, instruction counts,
//! and bytes moved by memory. Reset when an execution begins; read after it completes
//! ([`crate::Sim::exec_profile`], or the simulator's profiling capability,
//! [`nrt_hal::profile::Profiler::exec_profile`]). The counter types are the device contract's
//! ([`nrt_hal::profile`]); the simulator fills them in.
//!
//! Engines and DMA record each instruction or descriptor pair as a busy interval in device
//! cycles. Intervals reach the counters in nondecreasing start order (the scheduler runs units
//! in time order, and a unit runs ahead only while no earlier wake-up is pending), so the time
//! during which *any* engine (or any DMA queue) is busy is kept as a running union. The PE's
//! multiply-accumulates ([`ExecProfile::pe_macs`]) are
//! [`crate::compute::ComputeOutcome::pe_macs`] summed.

pub use nrt_hal::profile::{BusyUnion, ExecProfile};
