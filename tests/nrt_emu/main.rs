//! The integration tests of the root package (`nrt-emu`: the CLI and the end-to-end tests),
//! gathered into one test binary so that a fresh clone compiles and links one executable for
//! the crate instead of one per file.
//! Each module is one former test file; its own docs say what it covers.
//! `support` holds the helpers several modules share; `alloc_count` is the binary's global
//! allocator, which counts allocations per thread (`hot_path`) and live heap bytes of the
//! whole process (`leak`, which runs its cycles alone in a child process for that reason).

#![deny(clippy::undocumented_unsafe_blocks)]

mod alloc_count;
mod cli;
mod core_threads;
mod current_neffs;
mod device_checks;
mod dge_gather;
mod docs_citations;
mod driver_emulated;
mod exec_faults;
mod execute;
mod exhaustion;
mod fault_recovery;
mod hot_path;
mod inspect_cli;
mod leak;
mod load;
mod neuron_errors;
mod numeric;
mod profile_sim;
mod real_neffs;
mod run_cli;
mod runtime_drop;
mod shim_driver;
mod stress;
mod support;
