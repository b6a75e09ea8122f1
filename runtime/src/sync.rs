//! The synchronisation seam of the runtime's concurrency kernels.
//!
//! The kernels that are model-checked with [loom](https://docs.rs/loom) — the TNC cache
//! ([`crate::tnc`]), the execution unit's ring ([`crate::xu`]), the `compute_req_lock` ticket
//! ([`crate::exec::ticket`]) and the async completion hand-off ([`crate::exec::handoff`]) —
//! take their atomics, mutexes and condition variables from here instead of `std::sync`.
//! Normally these are `std`'s; under `--cfg loom` they are loom's, so the model checker
//! explores every interleaving of the production code itself (`runtime/tests/loom.rs`).
//!
//! Only what both libraries provide with the same signatures is re-exported. Under loom a
//! condition variable's timed wait never times out, so a missed notification shows up as a
//! deadlock instead of a late return.

#[cfg(loom)]
pub(crate) use loom::sync::{
    atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering},
    Condvar, Mutex, MutexGuard,
};
#[cfg(not(loom))]
pub(crate) use std::sync::{
    atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering},
    Condvar, Mutex, MutexGuard,
};

pub(crate) use std::sync::PoisonError;
