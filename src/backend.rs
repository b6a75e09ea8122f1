//! The device backend of the command line: `--backend sim|driver`, shared by `run` and
//! `conform`, and the `NRT_EMU_BACKEND` variable `run` falls back to.

use clap::ValueEnum;
use nrt_emu::runtime::{Error, Result};

/// The environment variable that picks the backend when `--backend` is not given.
pub const BACKEND_ENV: &str = "NRT_EMU_BACKEND";

/// The device backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// The simulated device.
    Sim,
    /// The Linux kernel driver (`/dev/neuronN`).
    Driver,
}

impl Backend {
    /// The backend `flag` or `$NRT_EMU_BACKEND` selects (sim when neither does).
    pub fn from_flag_or_env(flag: Option<Backend>) -> Result<Backend> {
        if let Some(b) = flag {
            return Ok(b);
        }
        match std::env::var(BACKEND_ENV) {
            Ok(v) if v.trim().is_empty() => Ok(Backend::Sim),
            Ok(v) => Backend::from_str(v.trim(), true).map_err(|_| {
                Error::invalid(format!(
                    "{BACKEND_ENV}={v:?} names no backend (expected sim or driver)"
                ))
            }),
            Err(_) => Ok(Backend::Sim),
        }
    }
}
