//! The integration tests of nrt-hal, gathered into one test binary so that a
//! fresh clone compiles and links one executable for the crate instead of one per file.
//! Each module is one former test file; its own docs say what it covers.

mod abi;
mod exec_request;
mod isa_disasm;
mod isa_errors;
mod isa_neuron;
mod isa_roundtrip;
mod isa_semantics;
mod notify;
mod udma;
