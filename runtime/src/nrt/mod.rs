//! The libnrt-shaped layer over [`crate::Runtime`] (docs/c-api.md §5): what a `libnrt` front
//! end — the drop-in C library — does beyond calling the runtime, so that the front end holds
//! only pointer and string checks, handle tables, status mapping, environment configuration and
//! logging.
//!
//! | module | owns |
//! |---|---|
//! | [`lifecycle`] | [`Nrt`]: one runtime behind the `nrt_init` / `nrt_close` guard (`NRT_UNINITIALIZED`, `NRT_CLOSED`), with the front end's per-session state |
//! | [`session`] | [`session::Session`]: the visible cores, and the calls that tie the parts below to the runtime (load, execute and repeat recorded; async requests harvested; profiles through the backend's profiling capability) |
//! | [`trace`] | the system trace: per-core event rings, fetched as JSON |
//! | [`profile`] | `nrt_profile_*`, continuous profiling, inspect sessions and inspect-on-fail dumps |
//! | [`nrta`] | the explicit async units (`nrta_*`), their sequence ids and error trackers |
//! | [`legacy`] | the legacy implicit-async dispatcher and its drain |
//! | [`log`] | the [`log::Log`] a session reports to |
//!
//! `session` sits on top of the others; none of them imports it.

pub mod legacy;
pub mod lifecycle;
pub mod log;
pub mod nrta;
pub mod profile;
pub mod session;
pub mod trace;

pub use lifecycle::{status_as_str, Nrt};
