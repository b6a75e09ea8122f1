//! The integration tests of nrt-kabi, gathered into one test binary so that a
//! fresh clone compiles and links one executable for the crate instead of one per file.
//! Each module is one former test file; its own docs say what it covers.

#![deny(clippy::undocumented_unsafe_blocks)]

mod counters;
mod kabi;
