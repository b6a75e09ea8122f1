//! The system trace of a libnrt session (`nrt_runtime::nrt::trace`): rings per core with a
//! bound, filters, fetches in order, and the executions and loads a session records.

use nrt_hal::Target;
use nrt_runtime::config::RuntimeConfig;
use nrt_runtime::exec::ExecReport;
use nrt_runtime::nrt::trace::{FetchOptions, SysTrace, SysTraceConfig, EVENT_TYPES};
use nrt_runtime::{Error, NrtStatus};
use serde_json::Value;

use crate::session::{open, scratch};

fn events(t: &SysTrace, opts: &FetchOptions) -> (Vec<Value>, u64) {
    let v: Value = serde_json::from_str(&t.fetch(opts)).unwrap();
    (
        v["events"].as_array().unwrap().clone(),
        v["dropped_events"].as_u64().unwrap(),
    )
}

#[test]
fn nothing_is_recorded_until_a_capture_starts() {
    let t = SysTrace::new(Target::Trn1);
    assert!(!t.active());
    t.record_model(0, "model_load", 1, 0);
    assert_eq!(events(&t, &FetchOptions::default()).0.len(), 0);
    let e = t.stop_running().unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid);
    assert!(e.message.contains("nrt_sys_trace_start"), "{e}");
}

#[test]
fn a_ring_keeps_the_newest_events_and_counts_the_dropped() {
    let t = SysTrace::new(Target::Trn1);
    let mut cfg = SysTraceConfig::default();
    cfg.set_max_events(2);
    t.start(cfg);
    for m in 0..5 {
        t.record_model(0, "model_load", m, 0);
    }
    t.record_model(1, "model_unload", 9, 0);
    let (ev, dropped) = events(&t, &FetchOptions::default());
    assert_eq!(dropped, 3);
    let models: Vec<u64> = ev.iter().map(|e| e["model_id"].as_u64().unwrap()).collect();
    assert_eq!(models, [3, 4, 9], "the newest two of core 0, then core 1's");
    let seqs: Vec<u64> = ev.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "in the order seen: {seqs:?}"
    );
    assert_eq!(ev[2]["nc_idx"], 1);
    assert_eq!(ev[2]["event_type"], "model_unload");
    // Fetched events are gone.
    assert!(events(&t, &FetchOptions::default()).0.is_empty());
    assert!(t.stop());
    assert!(!t.active());
}

#[test]
fn disabled_cores_and_types_are_not_captured_and_fetches_filter() {
    let mut cfg = SysTraceConfig::default();
    cfg.set_nc(1, false);
    cfg.set_type("async_tensor_op", false).unwrap();
    let e = cfg.set_type("bogus", true).unwrap_err();
    assert!(e.message.contains("nrt_sys_trace_get_event_types"), "{e}");
    assert_eq!(
        cfg.enabled_types(),
        EVENT_TYPES
            .iter()
            .copied()
            .filter(|t| *t != "async_tensor_op")
            .collect::<Vec<_>>()
    );
    let t = SysTrace::new(Target::Trn1);
    t.start(cfg);
    t.record_model(1, "model_load", 1, 0);
    t.record_async(0, "async_tensor_op", 7, "write");
    t.record_async(0, "async_exec_schedule", 8, "execute");
    t.record_async(2, "async_exec_schedule", 9, "execute");
    t.record_async(2, "async_exec_schedule", 10, "execute");
    let only2 = FetchOptions {
        nc_idx: Some(2),
        max_events_per_nc: Some(1),
    };
    let (ev, _) = events(&t, &only2);
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0]["seq_id"], 9);
    let (ev, _) = events(&t, &FetchOptions::default());
    let seqs: Vec<u64> = ev.iter().map(|e| e["seq_id"].as_u64().unwrap()).collect();
    assert_eq!(seqs, [8, 10]);
}

#[test]
fn an_execution_carries_its_device_time_and_a_failure_its_status() {
    let t = SysTrace::new(Target::Trn1);
    t.start(SysTraceConfig::default());
    let report = ExecReport {
        compute_idx: 0,
        seq_id: 5,
        cycles: vec![1400],
    };
    t.record_exec(0, 3, &Ok(report));
    t.record_exec(0, 3, &Err(Error::new(NrtStatus::Timeout, "late")));
    let (ev, _) = events(&t, &FetchOptions::default());
    assert_eq!(ev[0]["status"], "NRT_SUCCESS");
    assert_eq!(ev[0]["device_cycles"][0], 1400);
    assert_eq!(
        ev[0]["device_ns"][0].as_f64().unwrap(),
        Target::Trn1.cycles_to_ns(1400)
    );
    assert_eq!(ev[1]["status"], "NRT_TIMEOUT");
    assert_eq!(ev[1]["status_code"], NrtStatus::Timeout.code());
}

#[test]
fn a_session_records_loads_executions_and_unloads() {
    let h = open(RuntimeConfig::default());
    h.start_trace();
    let (id, vnc) = h.load_add();
    let (ins, outs) = h.io(id, vnc);
    h.execute((id, vnc), (&ins, &outs), 1).unwrap();
    h.with(|rt, s| s.unload(rt, id, vnc)).unwrap();
    let dir = scratch("systrace");
    let file = dir.join("trace.json");
    h.with(|_, s| s.trace.stop_to_file(file.to_str().unwrap()))
        .unwrap();
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let kinds: Vec<&str> = v["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["model_load", "nc_exec", "model_unload"]);
    assert!(!h.with(|_, s| Ok(s.trace.active())).unwrap());
    let e = h
        .with(|_, s| s.trace.stop_to_file(file.to_str().unwrap()))
        .unwrap_err();
    assert!(e.message.contains("nrt_trace_start"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
