//! The integration tests of nrt-profile, gathered into one test binary. Each module is one
//! area; its own docs say what it covers. The device material (traces, JSON exports, the
//! decoded-format notes) is read from the shared folder next to the workspace; a test whose
//! material is absent prints a `SKIP` line and passes.

mod builder;
mod compare;
mod corrupt;
mod device_json;
mod ntff_json;
mod ntff_tables;
mod shared;
