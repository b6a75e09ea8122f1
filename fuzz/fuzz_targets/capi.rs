//! libFuzzer wrapper of [`nrt_fuzz::capi::capi`]; the logic lives there (stable, replayed by
//! `fuzzing/tests/replay.rs`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| nrt_fuzz::capi::capi(data));
