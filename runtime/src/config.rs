//! Runtime configuration: the `NEURON_RT_*` environment variables that make sense on this
//! platform (docs/c-api.md §6), read once at init.
//!
//! | variable | field | default |
//! |---|---|---|
//! | `NEURON_RT_VALIDATE_HASH` | `validate_hash` | false |
//! | `NEURON_RT_EXEC_TIMEOUT` (seconds) | `exec_timeout` | 30 s (the configuration table's value; the prose says 2 s) |
//! | `NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS` | `async_max_inflight` | 0 (sync) |
//! | `NEURON_RT_ALLOW_LEGACY_NEFF` | `allow_legacy_neff` | false |
//! | `NEURON_LOGICAL_NC_CONFIG` / `NEURON_RT_VIRTUAL_CORE_SIZE` | `vcore_size` | 1 on trn1, 2 on trn2 |
//! | `NEURON_SCRATCHPAD_PAGE_SIZE` (MB) | `scratchpad_page_size` | 64 MiB |
//! | `NRT_EMU_SKIP_TPB_CONFIG` (ours) | `skip_config_optimization` | true |
//! | `NRT_EMU_MAX_NEFF_FILE_BYTES` (ours) | `max_neff_file` | 4 GiB |

use std::time::Duration;

use nrt_hal::Target;

/// Runtime settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// Verify the NEFF payload hash at load.
    pub validate_hash: bool,
    /// How long an execution may take before `NRT_TIMEOUT`.
    pub exec_timeout: Duration,
    /// Async execution when > 0: the in-flight limit.
    pub async_max_inflight: u32,
    /// Let a NEFF compiled for an older generation load.
    pub allow_legacy_neff: bool,
    /// Physical cores per logical core; `None` = the target's default.
    pub vcore_size: Option<u32>,
    /// Scratchpad allocation granule.
    pub scratchpad_page_size: u64,
    /// The skip-config optimisation (`reload_seq_config`/`load_act_dve_tables` diffing).
    pub skip_config_optimization: bool,
    /// Limits on a NEFF's decompressed contents (decompression-bomb guard).
    pub neff_limits: crate::neff::Limits,
    /// Largest file [`crate::neff::read_file`] reads from a path.
    pub max_neff_file: u64,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            validate_hash: false,
            exec_timeout: Duration::from_secs(30),
            async_max_inflight: 0,
            allow_legacy_neff: false,
            vcore_size: None,
            scratchpad_page_size: 64 << 20,
            skip_config_optimization: true,
            neff_limits: crate::neff::Limits::default(),
            max_neff_file: crate::neff::file::DEFAULT_MAX_FILE_BYTES,
        }
    }
}

fn truthy(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

impl RuntimeConfig {
    /// The configuration the environment describes (unset or unparsable values keep defaults).
    pub fn from_env() -> Self {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// The configuration from an arbitrary variable lookup (tests use this).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        let mut c = RuntimeConfig::default();
        if let Some(v) = get("NEURON_RT_VALIDATE_HASH") {
            c.validate_hash = truthy(&v);
        }
        if let Some(s) = get("NEURON_RT_EXEC_TIMEOUT").and_then(|v| v.trim().parse::<f64>().ok()) {
            if s.is_finite() && s > 0.0 {
                c.exec_timeout = Duration::from_secs_f64(s);
            }
        }
        if let Some(n) = get("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS")
            .and_then(|v| v.trim().parse::<u32>().ok())
        {
            c.async_max_inflight = n;
        }
        if let Some(v) = get("NEURON_RT_ALLOW_LEGACY_NEFF") {
            c.allow_legacy_neff = truthy(&v);
        }
        c.vcore_size = get("NEURON_LOGICAL_NC_CONFIG")
            .or_else(|| get("NEURON_RT_VIRTUAL_CORE_SIZE"))
            .and_then(|v| v.trim().parse::<u32>().ok())
            .filter(|n| *n == 1 || *n == 2);
        if let Some(mb) =
            get("NEURON_SCRATCHPAD_PAGE_SIZE").and_then(|v| v.trim().parse::<u64>().ok())
        {
            if mb > 0 {
                c.scratchpad_page_size = mb << 20;
            }
        }
        if let Some(v) = get("NRT_EMU_SKIP_TPB_CONFIG") {
            c.skip_config_optimization = truthy(&v);
        }
        if let Some(n) =
            get("NRT_EMU_MAX_NEFF_FILE_BYTES").and_then(|v| v.trim().parse::<u64>().ok())
        {
            c.max_neff_file = n;
        }
        c
    }

    /// Physical cores per logical core on `target`.
    pub fn vcore_size_for(&self, target: Target) -> u32 {
        self.vcore_size.unwrap_or(match target {
            Target::Trn1 => 1,
            Target::Trn2 => 2,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn environment_is_parsed_and_bad_values_ignored() {
        let env = [
            ("NEURON_RT_VALIDATE_HASH", "TRUE"),
            ("NEURON_RT_EXEC_TIMEOUT", "2"),
            ("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS", "8"),
            ("NEURON_LOGICAL_NC_CONFIG", "7"),
            ("NRT_EMU_SKIP_TPB_CONFIG", "0"),
        ];
        let c =
            RuntimeConfig::from_lookup(|k| env.iter().find(|e| e.0 == k).map(|e| e.1.to_string()));
        assert!(c.validate_hash);
        assert_eq!(c.exec_timeout, Duration::from_secs(2));
        assert_eq!(c.async_max_inflight, 8);
        assert_eq!(c.vcore_size, None, "7 is not a valid LNC size");
        assert!(!c.skip_config_optimization);
        assert_eq!(c.vcore_size_for(Target::Trn2), 2);
        assert_eq!(
            RuntimeConfig::from_lookup(|_| None),
            RuntimeConfig::default()
        );
    }
}
