//! The integration tests of nrt-runtime, gathered into one test binary so that a
//! fresh clone compiles and links one executable for the crate instead of one per file.
//! Each module is one former test file; its own docs say what it covers.

mod kbin_build;
mod manifest;
mod neff_container;
mod nrt_async;
mod nrt_legacy;
mod nrt_profile;
mod nrt_trace;
mod session;
mod support;
mod tnc;
mod xu;
