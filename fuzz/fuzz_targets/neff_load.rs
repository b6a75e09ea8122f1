//! libFuzzer wrapper of [`nrt_fuzz::neff::neff_load`]; the logic lives there (stable, replayed by
//! `fuzzing/tests/fuzz/replay.rs`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nrt_fuzz::neff::neff_load(data));
