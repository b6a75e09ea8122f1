//! The C entry points, one module per area. Every function here is `extern "C"` with the
//! header's signature; [`crate::export`] exports it at `NRT_2.0.0`.

pub mod absent;
pub mod device;
pub mod exec;
pub mod lifecycle;
pub mod model;
pub mod nrta;
pub mod profile;
pub mod set;
pub mod tensor;
pub mod trace;
