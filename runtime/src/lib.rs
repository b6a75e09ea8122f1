//! # nrt-runtime — the Neuron runtime over the HAL
//!
//! Reimplements the AWS Neuron runtime's pipeline (the behaviour described in docs/runtime.md and
//! docs/exec.md) against [`nrt_hal::Hal`]:
//!
//! | module | owns | described in |
//! |---|---|---|
//! | [`status`], [`error`] | `NRT_STATUS` codes and the error type | docs/runtime.md §6 |
//! | [`neff`] | the NEFF container: 1024-byte header, hash, gzip + ustar, reader and writer | docs/runtime.md §2.3 |
//! | [`manifest`] | `neff.json`, `kelf-N.json`, `def.json`, engine JSON, `.npy` constants | docs/runtime.md §2.4 |
//! | [`kbin`] | the per-subgraph KBIN records and their build (S2/S3, no HAL call) | docs/runtime.md §2.5 |
//! | [`tnc`] | the single-slot, UUID-keyed parse cache | docs/runtime.md §2.3 |
//! | [`model`] | a loaded model's types, below `load` and `exec`: [`LoadedModel`], the per-core record and its hardware queues, patch records, submit template, dynamic-ring cache | docs/runtime.md §2.6, §2.7, §3.2 |
//! | [`load`] | S4 staging (memory plan, DMA rings, instruction blocks) and S5 relocation | docs/runtime.md §2.6, §2.7 |
//! | [`config`] | the `NEURON_RT_*` environment | docs/runtime.md §7 |
//! | [`tensor`] | tensors (device/host/virtual) and name-keyed tensor sets | docs/runtime.md §3.1 |
//! | [`xu`] | the per-vcore execution unit: submit funnel, lock-free completion ring, seq ids | docs/runtime.md §4.2, §4.4, §6 |
//! | [`exec`] | the execute path: bind, stage, doorbell, complete, async workers; execute, wait, poll, host staging and recovery of a poisoned core | docs/runtime.md §3–§5, docs/exec.md |
//! | [`nrt`] | the libnrt-shaped layer a C front end calls: the `nrt_init`/`nrt_close` guard, the session (visible cores, system trace, profiling and inspect, `nrta_*` async units, legacy async dispatcher) | docs/runtime.md §2.2, docs/c-api.md §5 |
//! | [`profile`] | one execution in neuron-profile's schema: the device's trace mapped back to the NEFF's records, queue sets and names | docs/profile.md §5 |
//! | [`runtime`] | init, load orchestration (S0–S5), the registry, the per-core queue and scratchpad pools, unload; the API that delegates execution to `exec` | docs/runtime.md §2 |
//! | `sync` | the std/loom seam of the concurrency kernels (model-checked with `--cfg loom`) | — |
//!
//! Modules import downwards only: `runtime` → `load`, `exec` → `model` → `kbin`, `neff`,
//! `manifest`, `tnc`; no set of modules imports each other in a loop.
//!
//! The runtime sees a device only through the HAL; it never asks which backend it runs on.

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod config;
pub mod error;
pub mod exec;
pub mod kbin;
pub mod load;
pub mod manifest;
pub mod model;
pub mod neff;
pub mod nrt;
pub mod profile;
pub mod runtime;
pub mod status;
mod sync;
pub mod tensor;
pub mod tnc;
pub mod xu;

pub use error::{Error, Result};
pub use model::{LoadedModel, ModelId};
pub use runtime::Runtime;
pub use status::NrtStatus;
