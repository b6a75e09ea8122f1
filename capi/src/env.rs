//! The configuration `nrt_init` reads, checked strictly: a variable whose value is not what its
//! documentation allows fails `nrt_init` with `NRT_INVALID` and a log line naming it (the
//! runtime's own reader, [`RuntimeConfig::from_env`], then takes the values).
//!
//! | variable | values | meaning |
//! |---|---|---|
//! | `NRT_EMU_BACKEND` | `sim` (default), `driver` | the simulator, or the kernel driver on `/dev/neuron0` |
//! | `NRT_EMU_TARGET` | `trn1`, `trn2` | the simulated generation (default: `NEURON_PLATFORM_TARGET_OVERRIDE`, else trn2) |
//! | `NEURON_RT_VISIBLE_CORES` | `2`, `0-3`, `3,4,5`, `3-5,6`: contiguous, ascending | the cores this process uses, renumbered from 0 |
//! | `NEURON_RT_NUM_CORES` | 0 (all) … the core count | the first n cores, when VISIBLE_CORES is unset |
//! | `NEURON_RT_VIRTUAL_CORE_SIZE` / `NEURON_LOGICAL_NC_CONFIG` | 1, 2 | physical cores per logical core (default 1 on trn1, 2 on trn2) |
//! | `NEURON_RT_EXEC_TIMEOUT` | seconds > 0 | execution timeout |
//! | `NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS` | integer ≥ 0 | legacy implicit async execution |
//! | `NEURON_RT_VALIDATE_HASH` | true/false/1/0/yes/no/on/off | check the NEFF hash at load |
//!
//! Core counts and indices are in logical cores (VNCs).

use std::ops::Range;

use nrt_hal::Target;
use nrt_runtime::config::RuntimeConfig;
use nrt_runtime::{Error, NrtStatus, Result};

/// The device backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The simulator.
    Sim,
    /// The kernel driver.
    Driver,
}

/// Where the device comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceChoice {
    /// Backend.
    pub backend: Backend,
    /// The generation a variable named (`None`: trn2 on the simulator, the device's own on the
    /// driver).
    pub target: Option<Target>,
}

impl DeviceChoice {
    /// The generation to simulate.
    pub fn sim_target(&self) -> Target {
        self.target.unwrap_or(Target::Trn2)
    }
}

fn bad(var: &str, value: &str, expected: &str) -> Error {
    Error::invalid(format!("{var}={value:?} is invalid: expected {expected}"))
}

/// `NRT_EMU_BACKEND` and `NRT_EMU_TARGET` / `NEURON_PLATFORM_TARGET_OVERRIDE`.
pub fn device_choice(get: &impl Fn(&str) -> Option<String>) -> Result<DeviceChoice> {
    let backend = match get("NRT_EMU_BACKEND") {
        None => Backend::Sim,
        Some(v) => match v.trim().to_ascii_lowercase().as_str() {
            "" | "sim" => Backend::Sim,
            "driver" => Backend::Driver,
            _ => return Err(bad("NRT_EMU_BACKEND", &v, "sim or driver")),
        },
    };
    let mut target = None;
    for var in ["NRT_EMU_TARGET", "NEURON_PLATFORM_TARGET_OVERRIDE"] {
        if let Some(v) = get(var) {
            target = Some(match v.trim().to_ascii_lowercase().as_str() {
                "trn1" => Target::Trn1,
                "trn2" => Target::Trn2,
                _ => return Err(bad(var, &v, "trn1 or trn2")),
            });
            break;
        }
    }
    Ok(DeviceChoice { backend, target })
}

/// Parses `NEURON_RT_VISIBLE_CORES`: indices and inclusive ranges separated by commas, which
/// together must form one ascending run.
pub fn parse_visible_cores(v: &str) -> Result<Range<u32>> {
    const VAR: &str = "NEURON_RT_VISIBLE_CORES";
    const WANT: &str =
        "core indices or ranges forming one ascending run, e.g. 2, 0-3, 3,4,5 or 3-5,6";
    let mut run: Option<Range<u32>> = None;
    for item in v.split(',') {
        let item = item.trim();
        let num = |s: &str| s.trim().parse::<u32>().map_err(|_| bad(VAR, v, WANT));
        let (a, b) = match item.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let n = num(item)?;
                (n, n)
            }
        };
        if b < a {
            return Err(bad(VAR, v, WANT));
        }
        run = Some(match run {
            None => a..b + 1,
            Some(r) if r.end == a => r.start..b + 1,
            Some(_) => {
                return Err(Error::invalid(format!(
                    "{VAR}={v:?} is invalid: the cores must be contiguous and ascending"
                )))
            }
        });
    }
    run.ok_or_else(|| bad(VAR, v, WANT))
}

fn not_available(requested: &str, available: u32) -> Error {
    Error::new(
        NrtStatus::Resource,
        format!("NeuronCore(s) not available - Requested:{requested} Available:{available}"),
    )
}

/// The logical cores the process uses, out of `total`.
pub fn visible_cores(get: &impl Fn(&str) -> Option<String>, total: u32) -> Result<Range<u32>> {
    if let Some(v) = get("NEURON_RT_VISIBLE_CORES").filter(|v| !v.trim().is_empty()) {
        let r = parse_visible_cores(&v)?;
        if r.end > total {
            return Err(not_available(&format!("{}-{}", r.start, r.end - 1), total));
        }
        return Ok(r);
    }
    if let Some(v) = get("NEURON_RT_NUM_CORES").filter(|v| !v.trim().is_empty()) {
        let n: u32 = v
            .trim()
            .parse()
            .map_err(|_| bad("NEURON_RT_NUM_CORES", &v, "a core count"))?;
        if n == 0 {
            return Ok(0..total);
        }
        if n > total {
            return Err(not_available(&n.to_string(), total));
        }
        return Ok(0..n);
    }
    Ok(0..total)
}

fn truthy(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" | "" => Some(false),
        _ => None,
    }
}

/// The runtime configuration, after checking each variable [`RuntimeConfig::from_lookup`]
/// reads leniently.
pub fn runtime_config(get: &impl Fn(&str) -> Option<String>) -> Result<RuntimeConfig> {
    if let Some(v) = get("NEURON_RT_VALIDATE_HASH") {
        truthy(&v).ok_or_else(|| bad("NEURON_RT_VALIDATE_HASH", &v, "true or false"))?;
    }
    if let Some(v) = get("NEURON_RT_EXEC_TIMEOUT") {
        let ok = v
            .trim()
            .parse::<f64>()
            .is_ok_and(|s| s.is_finite() && s > 0.0);
        if !ok {
            return Err(bad("NEURON_RT_EXEC_TIMEOUT", &v, "a number of seconds > 0"));
        }
    }
    if let Some(v) = get("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS") {
        v.trim().parse::<u32>().map_err(|_| {
            bad(
                "NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS",
                &v,
                "an integer >= 0",
            )
        })?;
    }
    for var in ["NEURON_LOGICAL_NC_CONFIG", "NEURON_RT_VIRTUAL_CORE_SIZE"] {
        if let Some(v) = get(var) {
            if !matches!(v.trim(), "1" | "2") {
                return Err(bad(var, &v, "1 or 2"));
            }
        }
    }
    Ok(RuntimeConfig::from_lookup(get))
}

/// The process environment as a lookup.
pub fn process_env(var: &str) -> Option<String> {
    std::env::var(var).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| vars.iter().find(|v| v.0 == k).map(|v| v.1.to_string())
    }

    #[test]
    fn visible_cores_forms() {
        assert_eq!(parse_visible_cores("2").unwrap(), 2..3);
        assert_eq!(parse_visible_cores("0-3").unwrap(), 0..4);
        assert_eq!(parse_visible_cores("3,4,5,6").unwrap(), 3..7);
        assert_eq!(parse_visible_cores("3-5,6").unwrap(), 3..7);
        for bad in ["3,5,6", "0,2,4", "5,3", "3-1", "", "a", "1-", "-1"] {
            let e = parse_visible_cores(bad).unwrap_err();
            assert!(e.message.contains("NEURON_RT_VISIBLE_CORES"), "{bad}: {e}");
        }
    }

    #[test]
    fn selection_and_precedence() {
        assert_eq!(visible_cores(&env(&[]), 4).unwrap(), 0..4);
        assert_eq!(
            visible_cores(&env(&[("NEURON_RT_NUM_CORES", "2")]), 4).unwrap(),
            0..2
        );
        let both = [
            ("NEURON_RT_NUM_CORES", "1"),
            ("NEURON_RT_VISIBLE_CORES", "2-3"),
        ];
        assert_eq!(visible_cores(&env(&both), 4).unwrap(), 2..4);
        let e = visible_cores(&env(&[("NEURON_RT_VISIBLE_CORES", "3-4")]), 4).unwrap_err();
        assert_eq!(e.status, NrtStatus::Resource);
        assert!(e.message.contains("not available"), "{e}");
        assert!(visible_cores(&env(&[("NEURON_RT_NUM_CORES", "x")]), 4).is_err());
    }

    #[test]
    fn device_variables() {
        let c = device_choice(&env(&[])).unwrap();
        assert_eq!((c.backend, c.sim_target()), (Backend::Sim, Target::Trn2));
        let c = device_choice(&env(&[
            ("NRT_EMU_TARGET", "TRN1"),
            ("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2"),
        ]))
        .unwrap();
        assert_eq!(c.target, Some(Target::Trn1));
        let e = device_choice(&env(&[("NRT_EMU_BACKEND", "gpu")])).unwrap_err();
        assert!(e.message.contains("NRT_EMU_BACKEND"), "{e}");
        let e = device_choice(&env(&[("NEURON_PLATFORM_TARGET_OVERRIDE", "inf9")])).unwrap_err();
        assert!(e.message.contains("NEURON_PLATFORM_TARGET_OVERRIDE"), "{e}");
        let e = runtime_config(&env(&[("NEURON_RT_EXEC_TIMEOUT", "-1")])).unwrap_err();
        assert!(e.message.contains("NEURON_RT_EXEC_TIMEOUT"), "{e}");
        let e = runtime_config(&env(&[("NEURON_RT_VIRTUAL_CORE_SIZE", "4")])).unwrap_err();
        assert!(e.message.contains("NEURON_RT_VIRTUAL_CORE_SIZE"), "{e}");
    }
}
