//! # nrt-runtime — the Neuron runtime over the HAL
//!
//! Reimplements the AWS Neuron runtime's pipeline (the behaviour described by the notes in
//! `shared/seeds/`) against [`nrt_hal::Hal`]:
//!
//! | module | owns | seed |
//! |---|---|---|
//! | [`status`], [`error`] | `NRT_STATUS` codes and the error type | — |
//! | [`neff`] | the NEFF container: 1024-byte header, hash, gzip + ustar, reader and writer | 000 S1 |
//! | [`manifest`] | `neff.json`, `kelf-N.json`, `def.json`, engine JSON, `.npy` constants | 000 S2 |
//! | [`kbin`] | the per-subgraph KBIN records and their build (S2/S3, no HAL call) | 000 S3 |
//! | [`tnc`] | the single-slot, UUID-keyed parse cache | 000 S1 |
//! | [`load`] | S4 staging (memory plan, DMA rings, instruction blocks) and S5 relocation | 000 S4/S5 |
//! | [`config`] | the `NEURON_RT_*` environment | — |
//! | [`tensor`] | tensors (device/host/virtual) and name-keyed tensor sets | 001 §2 |
//! | [`xu`] | the per-vcore execution unit: submit funnel, lock-free completion ring, seq ids | 003 §4/§6–§8 |
//! | [`exec`] | the execute path: bind, stage, doorbell, complete, async workers | 001, 003 |
//! | [`nrt`] | the `nrt.h`-shaped lifecycle guard (`NRT_UNINITIALIZED`, `NRT_CLOSED`) | 003 §1 |
//! | [`runtime`] | init, load orchestration (S0–S5), the registry, unload | 000 |
//! | `sync` | the std/loom seam of the concurrency kernels (model-checked with `--cfg loom`) | — |
//!
//! The runtime sees a device only through the HAL; it never asks which backend it runs on.

#![warn(missing_docs)]

pub mod config;
pub mod error;
pub mod exec;
pub mod kbin;
pub mod load;
pub mod manifest;
pub mod neff;
pub mod nrt;
pub mod runtime;
pub mod status;
mod sync;
pub mod tensor;
pub mod tnc;
pub mod xu;

pub use error::{Error, Result};
pub use runtime::{LoadedModel, ModelId, Runtime};
pub use status::NrtStatus;
