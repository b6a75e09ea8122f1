//! # nrt-fuzz — the logic of the platform's fuzz targets, on stable Rust
//!
//! Each target is a plain function from arbitrary bytes to `()` that must never panic, hang or
//! allocate without bound; a panic here is a bug in the crate under test (or a broken harness
//! invariant, which the panic message names). The libFuzzer wrappers in `fuzz/fuzz_targets/`
//! (nightly, `cargo fuzz`) only call these functions, so the stable test `tests/fuzz/replay.rs` can
//! replay every committed regression input and every seed through exactly the same code.
//!
//! | module | owns | target(s) |
//! |---|---|---|
//! | [`input`] | the byte cursor the structured targets read their operations from | — |
//! | [`neff`] | NEFF parse stages S0–S3, and full load S0–S5 + one execution + unload on the simulator | `neff_parse`, `neff_load` |
//! | [`isa`] | the instruction decoder, its canonical-encoding property and the disassembler | `isa_decode` |
//! | [`dma`] | descriptor rings built from fuzz bytes, processed by the simulator's DMA engines | `sim_dma` |
//! | [`kabi`] | the kernel-ABI emulation fed arbitrary request numbers and argument bytes, with user pointers sanitised | `kabi` |
//! | [`capi`] | random sequences of libnrt C API calls with hostile arguments; device memory back at its baseline after `nrt_close` | `capi` |
//! | [`seeds`] | seed inputs: the model zoo, the malformed corpus, instruction streams of the zoo, hand-made DMA and kabi programs | — |
//!
//! Resource policy: the targets bound what a single input can make the host do (NEFF
//! decompression [`neff::FUZZ_LIMITS`], allocation sizes, operation counts, simulator events),
//! so that libFuzzer's `-rss_limit_mb` / `-malloc_limit_mb` / `-timeout` flag only real defects:
//! an allocation or a loop that the code under test does not bound by its own limits.

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod capi;
pub mod dma;
pub mod input;
pub mod isa;
pub mod kabi;
pub mod neff;
pub mod seeds;

/// The fixtures crate's directory (the zoo and the malformed corpus).
pub fn fixtures_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

/// A fuzz target: arbitrary bytes in, no panic out.
pub type Target = fn(&[u8]);

/// Every target, by the name its `fuzz/fuzz_targets/<name>.rs` wrapper and its corpus and
/// regression directories use.
pub const TARGETS: &[(&str, Target)] = &[
    ("neff_parse", neff::neff_parse),
    ("neff_load", neff::neff_load),
    ("isa_decode", isa::isa_decode),
    ("sim_dma", dma::sim_dma),
    ("kabi", kabi::kabi),
    ("capi", capi::capi),
];

/// The target called `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, f)| *f)
}
