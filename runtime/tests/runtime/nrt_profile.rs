//! Profiling of a libnrt session (`nrt_runtime::nrt::profile`): profiles through the backend's
//! profiling capability, continuous profiling, inspect sessions and inspect-on-fail dumps.

use std::sync::Arc;

use nrt_hal::Target;
use nrt_runtime::config::RuntimeConfig;
use nrt_runtime::nrt::profile::{ContinuousOptions, InspectConfig, ACTIVITIES};
use nrt_runtime::tensor::TensorSet;
use nrt_runtime::NrtStatus;
use nrt_sim::{Sim, SimConfig};

use crate::session::{open, open_on, scratch, NoProfiler};

#[test]
fn a_profile_writes_the_device_timeline_to_the_file_it_started_with() {
    let h = open(RuntimeConfig::default());
    let dir = scratch("profile");
    let file = dir.join("p.json");
    let path = file.to_str().unwrap();
    let (id, vnc) = h.load_add();
    let (ins, outs) = h.io(id, vnc);
    h.with(|rt, s| s.profile_start(rt, path)).unwrap();
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "",
        "created at start"
    );
    h.execute((id, vnc), (&ins, &outs), 1).unwrap();
    let e = h
        .with(|rt, s| s.profile_stop(rt, "other.json"))
        .unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid);
    assert!(e.message.contains("not \"other.json\""), "{e}");
    h.with(|rt, s| s.profile_stop(rt, path)).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("traceEvents"), "{text}");
    let e = h.with(|rt, s| s.profile_stop(rt, path)).unwrap_err();
    assert!(e.message.contains("no profile is running"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_profile_named_profile_json_is_the_last_execution_in_neuron_profiles_schema() {
    let h = open(RuntimeConfig::default());
    let dir = scratch("neuron-profile");
    let file = dir.join("run.profile.json");
    let path = file.to_str().unwrap();
    let (id, vnc) = h.load_add();
    let (ins, outs) = h.io(id, vnc);
    // Nothing executed while profiling: nothing to write.
    h.with(|rt, s| s.profile_start(rt, path)).unwrap();
    let e = h.with(|rt, s| s.profile_stop(rt, path)).unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid);
    assert!(e.message.contains("no model executed"), "{e}");
    h.with(|rt, s| s.profile_start(rt, path)).unwrap();
    h.execute((id, vnc), (&ins, &outs), 1).unwrap();
    h.with(|rt, s| s.profile_stop(rt, path)).unwrap();
    let p = nrt_profile::json::read_file(&file).unwrap();
    assert!(p.metadata().unwrap().is_simulation);
    assert!(!p.instruction.is_empty() && !p.dma.is_empty());
    let s = p.summary().unwrap();
    assert!(
        s.total_time > 0.0 && s.total_time < 1e-3,
        "{}",
        s.total_time
    );
    // The runtime's instructions around the program are there, as on the device.
    assert!(p.instruction.iter().any(|i| i.opcode == "TENSOR_LOAD"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_backend_without_the_capability_answers_nrt_invalid() {
    let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn1)));
    let h = open_on(Arc::new(NoProfiler(sim)), RuntimeConfig::default());
    let dir = scratch("noprofiler");
    let file = dir.join("p.json");
    let e = h
        .with(|rt, s| s.profile_start(rt, file.to_str().unwrap()))
        .unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid);
    assert!(e.message.contains("does not record"), "{e}");
    assert!(!file.exists());
    let e = h.with(|rt, s| s.continuous_start(rt)).unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn continuous_profiling_saves_numbered_files_until_stopped() {
    let h = open(RuntimeConfig::default());
    let dir = scratch("continuous");
    let o = ContinuousOptions {
        output_dir: dir.to_str().unwrap().to_string(),
    };
    let e = h.with(|rt, s| s.continuous_save(rt, 0, &o)).unwrap_err();
    assert!(e.message.contains("not running"), "{e}");
    h.with(|rt, s| s.continuous_start(rt)).unwrap();
    h.with(|rt, s| s.continuous_save(rt, 0, &o)).unwrap();
    h.with(|rt, s| s.continuous_save(rt, 0, &o)).unwrap();
    assert!(dir.join("profile_vnc0_1.json").exists());
    assert!(dir.join("profile_vnc0_2.json").exists());
    let e = h.with(|rt, s| s.continuous_save(rt, 99, &o)).unwrap_err();
    assert!(e.message.contains("not visible"), "{e}");
    h.with(|rt, s| s.continuous_stop(rt)).unwrap();
    assert!(h.with(|rt, s| s.continuous_stop(rt)).is_err());
    let _ = std::fs::remove_dir_all(&dir);
    // Not with legacy async execution.
    let h = open(RuntimeConfig {
        async_max_inflight: 2,
        ..RuntimeConfig::default()
    });
    let e = h.with(|rt, s| s.continuous_start(rt)).unwrap_err();
    assert!(
        e.message
            .contains("NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS"),
        "{e}"
    );
}

#[test]
fn an_inspect_session_writes_both_profiles_when_it_stops() {
    let h = open(RuntimeConfig::default());
    let dir = scratch("inspect");
    let cfg = InspectConfig {
        output_dir: dir.to_str().unwrap().to_string(),
        session_id: 7,
        enable_inspect: true,
        ..InspectConfig::default()
    };
    let (id, vnc) = h.load_add();
    let (ins, outs) = h.io(id, vnc);
    h.with(|rt, s| s.inspect_begin(rt, cfg.clone())).unwrap();
    assert!(h.with(|_, s| Ok(s.inspecting())).unwrap());
    let e = h
        .with(|rt, s| s.inspect_begin(rt, cfg.clone()))
        .unwrap_err();
    assert!(e.message.contains("already running"), "{e}");
    let e = h.with(|rt, s| s.continuous_start(rt)).unwrap_err();
    assert!(e.message.contains("inspect session"), "{e}");
    h.execute((id, vnc), (&ins, &outs), 1).unwrap();
    h.with(|rt, s| s.inspect_stop(rt)).unwrap();
    let out = dir.join("session_7");
    let device = std::fs::read_to_string(out.join("device_profile.json")).unwrap();
    assert!(device.contains("traceEvents"), "{device}");
    let system = std::fs::read_to_string(out.join("system_profile.json")).unwrap();
    assert!(system.contains("nc_exec"), "{system}");
    // And the execution in neuron-profile's schema.
    let p = nrt_profile::json::read_file(&out.join("neuron_profile.json")).unwrap();
    assert!(p.metadata().unwrap().is_simulation && !p.instruction.is_empty());
    assert!(
        !h.with(|_, s| Ok(s.trace.active())).unwrap(),
        "its trace stopped with it"
    );
    let e = h.with(|rt, s| s.inspect_stop(rt)).unwrap_err();
    assert!(e.message.contains("nrt_inspect_begin"), "{e}");
    // Neither inspect nor on-fail: nothing begins, and the session says so.
    h.with(|rt, s| s.inspect_begin(rt, InspectConfig::default()))
        .unwrap();
    assert!(!h.with(|_, s| Ok(s.inspecting())).unwrap());
    assert!(
        h.lines().iter().any(|l| l.starts_with("INFO inspect:")),
        "{:?}",
        h.lines()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn inspect_on_fail_dumps_each_failed_execution_into_its_own_directory() {
    let h = open(RuntimeConfig::default());
    let dir = scratch("onfail");
    let cfg = InspectConfig {
        output_dir: dir.to_str().unwrap().to_string(),
        enable_on_fail: true,
        ..InspectConfig::default()
    };
    let (id, vnc) = h.load_add();
    h.with(|rt, s| s.inspect_begin(rt, cfg)).unwrap();
    let empty = TensorSet::new();
    for n in 1..=2 {
        let e = h.execute((id, vnc), (&empty, &empty), 1).unwrap_err();
        assert_eq!(e.status, NrtStatus::Invalid);
        let failure = dir.join(format!("session_1/failure_{n}"));
        assert!(failure.join("device_profile.json").exists());
        let system = std::fs::read_to_string(failure.join("system_profile.json")).unwrap();
        assert!(system.contains("NRT_INVALID"), "{system}");
    }
    let lines = h.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("ERROR inspect on fail") && l.contains("failure_2")),
        "{lines:?}"
    );
    // On-fail only: stopping writes nothing more.
    h.with(|rt, s| s.inspect_stop(rt)).unwrap();
    assert!(!dir.join("session_1/device_profile.json").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn inspect_activities() {
    let mut c = InspectConfig::default();
    assert_eq!(c.enabled_activities(), ACTIVITIES);
    c.set_activity("all", false).unwrap();
    assert!(c.enabled_activities().is_empty());
    c.set_activity("cpu_util", true).unwrap();
    assert_eq!(c.enabled_activities(), ["cpu_util"]);
    let e = c.set_activity("gpu", true).unwrap_err();
    assert!(e.message.contains("not an activity type"), "{e}");
}
