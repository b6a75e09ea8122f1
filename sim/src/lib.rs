//! (being written)
pub mod compute;
pub mod memory;
