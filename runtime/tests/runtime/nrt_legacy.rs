//! Legacy implicit async execution of a libnrt session (`nrt_runtime::nrt::legacy`): queued
//! executions, completions handed to the front end in submission order, and the drain.

use std::time::{Duration, Instant};

use nrt_runtime::config::RuntimeConfig;
use nrt_runtime::NrtStatus;

use crate::session::open;

#[test]
fn queued_executions_complete_in_order_and_drain() {
    let h = open(RuntimeConfig {
        async_max_inflight: 2,
        ..RuntimeConfig::default()
    });
    h.start_trace();
    let (id, vnc) = h.load_add();
    let (ins, outs) = h.io(id, vnc);
    for _ in 0..4 {
        let r = h.execute((id, vnc), (&ins, &outs), 1).unwrap();
        assert!(r.is_none(), "only queued");
    }
    h.with(|rt, s| s.drain(rt, 0)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while h.front.done.lock().unwrap().len() < 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    let done = h.front.done.lock().unwrap().clone();
    assert_eq!(done.len(), 4, "{done:?}");
    assert!(
        done.iter().all(|d| d.0 == id.0 && d.1 == 0 && d.3 == 0),
        "{done:?}"
    );
    assert!(
        done.windows(2).all(|w| w[0].2 < w[1].2),
        "in order: {done:?}"
    );
    let trace = h.fetch_trace();
    assert_eq!(trace.matches("async_exec_schedule").count(), 4, "{trace}");
    assert!(trace.contains("\"op\":\"nrt_execute\""), "{trace}");
    let e = h.with(|rt, s| s.drain(rt, 5)).unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid);
}

#[test]
fn a_repeat_waits_also_in_legacy_async_mode() {
    let h = open(RuntimeConfig {
        async_max_inflight: 2,
        ..RuntimeConfig::default()
    });
    let (id, vnc) = h.load_add();
    let (ins, outs) = h.io(id, vnc);
    // add has two inputs and one output: it cannot repeat, and the failure is recorded.
    h.start_trace();
    let e = h.execute((id, vnc), (&ins, &outs), 2).unwrap_err();
    assert!(e.message.contains("cannot repeat"), "{e}");
    let trace = h.fetch_trace();
    assert!(
        trace.contains("\"nc_exec\"") && trace.contains("NRT_INVALID"),
        "{trace}"
    );
    assert!(h.front.done.lock().unwrap().is_empty());
}
