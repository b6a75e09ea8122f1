//! # nrt-sim — a simulated Neuron device
//!
//! A deterministic, cycle-approximate model of one AWS Neuron device (trn1 or trn2) behind the
//! [`nrt_hal::Hal`] trait: sparse HBM and host DMA memory with the driver's allocator, each
//! core's SBUF and PSUM, the MMIO register map (semaphores, events, DMA tail increments,
//! sequencer), UDMA descriptor rings and DMA engines, notification queues, and the TPB
//! sequencer with its five engines computing real numbers. It is the backend every CI run uses.
//!
//! | module | owns |
//! |---|---|
//! | [`memory`] | allocator, sparse backing store, address resolution, on-chip SBUF/PSUM |
//! | [`compute`] | numerics and cost model of the compute instructions |
//! | `device` | device state, the one store/load path through the MMIO decoder, notifications |
//! | `dma` | DMA engines and queues, descriptor processing and DMA timing |
//! | `engine` | the five engines' instruction streams |
//! | `neuron` | the Neuron records with semantics of their own (registers, affine select) |
//! | `dge` | the DMAs engines issue themselves (`dma.direct`) |
//! | `sequencer` | doorbell → execution → completion |
//! | `sched` | the discrete-event scheduler |
//! | [`timeline`] | spans and Chrome/Perfetto export |
//! | [`faults`] | the fault plan |
//! | [`profile`] | per-execution activity counters (`nrt-emu profile`) |
//! | [`rng`] | SplitMix64, the one seeded generator (fault plans, inputs, the zoo) |
//! | [`values`] | host tensor data in a storage dtype (the one value ⇄ bytes table) and the shared seeded inputs |
//! | `testkit` | helpers that drive the device through the HAL without the runtime (tests, benches; feature `test-utils`) |
//!
//! The kernel driver's ioctl ABI answered over a [`Sim`] is not here but in the `nrt-kabi` crate,
//! so the device model never depends on the driver backend.
//!
//! Determinism: there is no background thread, time advances only inside [`nrt_hal::Hal::wait`],
//! every ordering is by a stable key, and no hash-map iteration order reaches an output. The
//! same HAL calls give the same memory bytes, notification entries, cycle counts and timeline.

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod compute;
mod config;
mod device;
mod dge;
mod dma;
mod engine;
pub mod faults;
pub mod memory;
mod neuron;
pub mod profile;
pub mod rng;
mod sched;
mod sequencer;
mod sim;
#[cfg(feature = "test-utils")]
pub mod testkit;
pub mod timeline;
pub mod values;
mod wrapper;

pub use config::{SimConfig, TimingConfig};
pub use device::SimStats;
pub use faults::FaultPlan;
pub use sim::Sim;
pub use wrapper::RuntimeVersion;

/// Simulated device time in microseconds of `cycles` device cycles (the SP clock of `target`).
pub fn device_time_us(target: nrt_hal::Target, cycles: u64) -> f64 {
    cycles as f64 * 1e6 / target.spec().clocks.sp as f64
}
