//! # nrt-capi — `libnrt.so.1` over nrt-emu
//!
//! The public Neuron runtime C API (the headers in `include/nrt/` and `include/ndl/`) as a
//! drop-in `libnrt.so.1`: SONAME `libnrt.so.1`, every function exported at symbol version
//! `NRT_2.0.0`, so a program built for AWS's runtime runs unchanged on the simulator (or, with
//! `NRT_EMU_BACKEND=driver`, on the kernel driver). The facts it matches are in docs/c-api.md.
//!
//! This crate is the boundary only: pointer and string checks, handle tables, status mapping,
//! the environment, logging; every behaviour is `nrt-runtime`'s (the session's system trace,
//! profiling, async units and legacy dispatcher are `nrt_runtime::nrt`), and the device is
//! opened by the platform's one opener, `nrt-backend`.
//!
//! | module | owns |
//! |---|---|
//! | [`export`] | the export table: versioned symbols for every C function |
//! | [`api`] | the C entry points, one module per area |
//! | [`guard`] | each entry point's `catch_unwind`, status mapping and error log line |
//! | [`ptr`] | checks of the caller's pointers, strings and buffers |
//! | [`handles`] | opaque handles as never-reused tokens in tables |
//! | [`headers`] | the headers, embedded for `nrt-emu install` |
//! | [`session`] | the `nrt_init` … `nrt_close` session: the handle tables next to the runtime's session |
//! | [`front`] | the library as the runtime session's front end: its log, the session guard, the legacy-async callback |
//! | [`env`] | the environment `nrt_init` reads, strictly checked |
//! | [`log`] | libnrt's console log format, `NEURON_RT_LOG_LEVEL` |
//! | [`types`] | the C structs, with compile-time layout checks |
//!
//! Rust code can call the entry points directly (`nrt::api::tensor::nrt_tensor_read`, …): the
//! exported symbols jump to exactly these functions.

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod api;
pub mod env;
pub mod export;
pub mod front;
pub mod guard;
pub mod handles;
pub mod headers;
pub mod log;
pub mod ptr;
pub mod session;
pub mod types;

pub use api::lifecycle::{api_version_string, reset_for_tests, IDENT, NRT_API_VERSION};
