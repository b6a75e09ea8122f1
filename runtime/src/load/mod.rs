//! The load pipeline's device half: S4 staging ([`stage`]), S5 relocation ([`translate`],
//! [`dma`]). S0–S3 live in [`crate::neff`], [`crate::manifest`], [`crate::kbin`] and the TNC
//! cache; the orchestration, registration and unload in [`crate::runtime`]. What staging
//! produces — the per-core record, its queues, patch records and submit template — are the
//! types of [`crate::model`].

pub mod dma;
pub mod stage;
pub mod translate;
