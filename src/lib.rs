//! # nrt-emu
//!
//! The facade of the nrt-emu platform: the AWS Neuron runtime's load → execute pipeline over one
//! device interface ([`hal::Hal`]) with two backends, a deterministic simulator and the real
//! kernel driver. This crate re-exports the public API of the workspace's crates:
//!
//! - [`hal`] (`nrt-hal`): the device contract — addresses, target tables, UDMA descriptors, the
//!   driver ABI, exec requests, the instruction encoding and the `Hal` trait;
//! - [`sim`] (`nrt-sim`): the simulated device;
//! - [`runtime`] (`nrt-runtime`): the Neuron runtime;
//! - [`backend`] (`nrt-backend`): the one device opener — backend and generation from flags
//!   and the environment to an opened device and its profiling capability;
//! - [`conformance`] (`nrt-conformance`): recorded, canonical descriptor-stream traces;
//!
//! and holds [`floor`], the host's physical floor of a simulation (its sgemm and memcpy rates),
//! which benchmarks and tests print next to a simulation's host time.

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod floor;

pub use nrt_backend as backend;
pub use nrt_conformance as conformance;
pub use nrt_hal as hal;
pub use nrt_runtime as runtime;
pub use nrt_sim as sim;
