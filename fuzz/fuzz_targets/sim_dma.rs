//! libFuzzer wrapper of [`nrt_fuzz::dma::sim_dma`]; the logic lives there (stable, replayed by
//! `fuzzing/tests/fuzz/replay.rs`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nrt_fuzz::dma::sim_dma(data));
