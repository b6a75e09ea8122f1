//! # nrt-profile — neuron-profile's view of an execution, simulated or measured
//!
//! docs/profile.md. Teams read device runs through `neuron-profile`'s JSON export; this crate
//! holds that schema as Rust types, derives its summary by the profiler's own rules, reads
//! the device's raw trace (NTFF) into the same model, and compares a simulated profile with
//! a device one instruction by instruction.
//!
//! | module | owns |
//! |---|---|
//! | [`model`] | the profile types: `instruction[]`, `dma[]`, `active_time[]`, `semaphore_update[]`, `summary[0]`, `model_info[]`, `neff_header[0]`, `metadata[0]` (docs/profile.md §2) |
//! | [`json`] | the writer (device key names, Go's number forms) and the reader (unknown keys tolerated) (docs/profile.md §2.2) |
//! | [`summary`] | the summary, `active_time[]` and `model_info[]` rules, and recomputing a summary from a profile's own records (docs/profile.md §4) |
//! | [`builder`] | what the simulator fills: instructions, DMA packets, semaphore updates with times in ns → a [`Profile`] (docs/profile.md §5) |
//! | [`ntff`] | the device trace reader, versions 5 and 6: records, calibration figures, the profile by neuron-profile 2.28's rules (docs/profile.md §3) |
//! | [`compare`](mod@compare) | per-engine instruction alignment and the text / JSON report (docs/profile.md §6) |
//! | [`error`] | [`ProfileError`] and [`NtffError`]: every bad input, named |
//!
//! No module panics on input: malformed JSON, traces and builder records are errors.

#![warn(missing_docs)]

pub mod builder;
pub mod compare;
pub mod error;
pub mod json;
pub mod model;
pub mod ntff;
pub mod summary;

pub use builder::{Instr, Packet, ProfileBuilder, SG00};
pub use compare::{compare, Comparison, ComparisonJson, EngineAlignment, Method};
pub use error::{NtffError, ProfileError};
pub use model::{
    ActiveTime, DmaPacket, Instruction, Metadata, ModelInfo, NeffHeader, Profile, QueueType,
    SemaphoreUpdate, Summary,
};
pub use nrt_hal::EngineKind;
pub use ntff::{Calibration, NtffTrace};
pub use summary::summarize;

/// Reads a profile from a file: a device trace when it starts like one (format byte 5 or 6
/// followed by the trace's header), else neuron-profile JSON.
pub fn read_profile(path: &std::path::Path) -> Result<Profile, ProfileError> {
    let bytes = std::fs::read(path).map_err(|source| ProfileError::Io {
        path: path.display().to_string(),
        source,
    })?;
    if matches!(bytes.first(), Some(5 | 6)) {
        NtffTrace::parse(&bytes)
            .map(|t| t.to_profile())
            .map_err(|e| ProfileError::from(e).in_file(path))
    } else {
        json::from_slice(&bytes).map_err(|e| e.in_file(path))
    }
}
