//! The configuration `nrt_init` reads, checked strictly: a variable whose value is not what its
//! documentation allows fails `nrt_init` with `NRT_INVALID` and a log line naming it (the
//! runtime's own reader, [`RuntimeConfig::from_env`], then takes the values). The device
//! variables are read by the platform's one device opener ([`nrt_backend::Settings::from_env`]);
//! the inspect variables (`NEURON_RT_INSPECT_*`) by [`inspect_config`].
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

use nrt_backend::Settings;
use nrt_runtime::config::RuntimeConfig;
use nrt_runtime::nrt::profile::InspectConfig;
use nrt_runtime::{Error, NrtStatus, Result};

fn bad(var: &str, value: &str, expected: &str) -> Error {
    Error::invalid(format!("{var}={value:?} is invalid: expected {expected}"))
}

/// The device `NRT_EMU_BACKEND` and `NRT_EMU_TARGET` / `NEURON_PLATFORM_TARGET_OVERRIDE` name,
/// the simulator injecting the faults of [`crate::session::inject_faults`].
pub fn device_settings(get: &impl Fn(&str) -> Option<String>) -> Result<Settings> {
    Ok(Settings::from_env(get)?.with_faults(crate::session::injected_faults()))
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

/// The inspect session the `NEURON_RT_INSPECT_*` variables describe (`nrt_inspect_begin`):
/// inspect enabled, on fail if `NEURON_RT_INSPECT_ON_FAIL`, into
/// `NEURON_RT_INSPECT_OUTPUT_DIR`, with the system and device profiles unless
/// `NEURON_RT_INSPECT_SYSTEM_PROFILE` / `_DEVICE_PROFILE` is 0, and
/// `NEURON_RT_INSPECT_SYS_TRACE_MAX_EVENTS_PER_NC` events per core.
pub fn inspect_config(get: &impl Fn(&str) -> Option<String>) -> InspectConfig {
    let on = |k: &str, default: bool| {
        get(k).map_or(default, |v| v.trim() != "0" && !v.trim().is_empty())
    };
    let mut c = InspectConfig {
        enable_inspect: true,
        enable_on_fail: on("NEURON_RT_INSPECT_ON_FAIL", false),
        ..InspectConfig::default()
    };
    if let Some(d) = get("NEURON_RT_INSPECT_OUTPUT_DIR").filter(|d| !d.is_empty()) {
        c.output_dir = d;
    }
    if !on("NEURON_RT_INSPECT_SYSTEM_PROFILE", true) {
        c.activities.remove("system_profile");
    }
    if !on("NEURON_RT_INSPECT_DEVICE_PROFILE", true) {
        c.activities.remove("device_profile");
    }
    if let Some(n) = get("NEURON_RT_INSPECT_SYS_TRACE_MAX_EVENTS_PER_NC")
        .and_then(|v| v.trim().replace(',', "").parse().ok())
    {
        c.sys_trace.set_max_events(n);
    }
    c
}

/// The inspect session `nrt_init` begins: with `NEURON_RT_INSPECT_ENABLE=1`, or
/// `NEURON_RT_INSPECT_ON_FAIL=1` alone (one that writes only when an execution fails).
pub fn inspect_at_init(get: &impl Fn(&str) -> Option<String>) -> Option<InspectConfig> {
    let set = |k: &str| get(k).is_some_and(|v| v.trim() == "1");
    (set("NEURON_RT_INSPECT_ENABLE") || set("NEURON_RT_INSPECT_ON_FAIL")).then(|| InspectConfig {
        enable_inspect: set("NEURON_RT_INSPECT_ENABLE"),
        ..inspect_config(get)
    })
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

    /// (The device variables' part of this test is nrt-backend's `settings::device_variables`.)
    #[test]
    fn runtime_variables() {
        let e = device_settings(&env(&[("NRT_EMU_BACKEND", "gpu")])).unwrap_err();
        assert!(e.message.contains("NRT_EMU_BACKEND"), "{e}");
        let e = runtime_config(&env(&[("NEURON_RT_EXEC_TIMEOUT", "-1")])).unwrap_err();
        assert!(e.message.contains("NEURON_RT_EXEC_TIMEOUT"), "{e}");
        let e = runtime_config(&env(&[("NEURON_RT_VIRTUAL_CORE_SIZE", "4")])).unwrap_err();
        assert!(e.message.contains("NEURON_RT_VIRTUAL_CORE_SIZE"), "{e}");
    }
}
