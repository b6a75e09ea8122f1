//! # nrt-conformance — a model's exact device-facing behaviour as a reviewable text
//!
//! docs/ARCHITECTURE.md §8. A [`Recorder`] wraps any [`nrt_hal::Hal`] backend and turns every call — and
//! every descriptor the device is asked to consume, decoded from ring memory — into a line of a
//! canonical [`Trace`]: ordered by (core, stream, sequence) so thread interleaving cannot
//! change it, and symbolic throughout (`#<alloc id>+0x<offset>` per core, `sem[nc0:5]`,
//! `evt[nc0:3]`, `tail_inc[nc0.e3.q2.tx]`, `sbuf[nc0:p12+0x1a0]`), so it does not depend on the
//! physical addresses a backend chose. No cycle counts, host times or handle numbers appear in
//! it. The same text therefore compares a simulator run with a run on silicon.
//!
//! | module | owns |
//! |---|---|
//! | [`recorder`] | the decorator: forwarding, the allocation table and symbols, ring decoding at queue init / doorbell / tail increment |
//! | [`render`] | the decoder: descriptors, exec requests, instruction records (disassembly), data |
//! | [`trace`] | events, canonical order, text form, first-difference report |
//! | [`harness`] | load + two executions under a recorder with seeded inputs: per-phase traces and output digests |
//!
//! The committed snapshots (`tests/snapshots/*.snap`, one per zoo model × target × phase) are
//! checked by `tests/conformance/snapshots.rs`; `determinism.rs` is the determinism gate (20 runs,
//! 1 and 8 threads) and the address-independence test; `sensitivity.rs` shows that a
//! changed descriptor field fails the check; `backends.rs` shows that the driver backend
//! (over the simulator's kernel-ABI emulation) gives the simulator's trace byte for byte.
//! `nrt-emu conform` runs the harness on a NEFF file and compares with a snapshot document.
//!
//! **Assumption** (see [`recorder`]): one stream is driven by one thread at a time — true of the
//! runtime, whose concurrent work (LNC staging threads) is on different cores.

#![deny(clippy::undocumented_unsafe_blocks)]
#![warn(missing_docs)]

pub mod harness;
pub mod recorder;
pub mod render;
pub mod trace;

pub use harness::{run_on, run_sim, Conformance, Phase, PhaseRecord, RunOptions, DEFAULT_SEED};
pub use recorder::{AllocRecord, Recorder};
pub use trace::{first_difference, Event, Trace};
