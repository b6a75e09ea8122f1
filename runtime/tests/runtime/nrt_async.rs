//! The explicit async units of a libnrt session (`nrt_runtime::nrt::nrta`): sequence ids,
//! tensor requests, compute requests on the runtime's execution unit, error trackers and
//! completion signals.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use nrt_runtime::config::RuntimeConfig;
use nrt_runtime::nrt::nrta::{
    public_seq, unit_id, ComputeRequest, ErrorTracker, TensorRequest, TrackerLookup, COMPUTE,
    TENSOR_OP, TENSOR_READ, TENSOR_WRITE,
};
use nrt_runtime::tensor::TensorSet;
use nrt_runtime::{Error, ModelId, NrtStatus, Result};

use crate::session::open;

fn no_tracker() -> Result<Option<Arc<ErrorTracker>>> {
    Ok(None)
}

type Sets<'a> = &'a dyn Fn() -> Result<(TensorSet, TensorSet)>;

fn compute(model: ModelId, queue: i32, sets: Sets<'_>) -> ComputeRequest<'_> {
    ComputeRequest {
        model,
        queue,
        tracker: &no_tracker,
        sets,
    }
}

fn req<'a>(ty: u32, queue: i32, tracker: TrackerLookup<'a>, what: &'a str) -> TensorRequest<'a> {
    TensorRequest {
        ty,
        queue,
        tracker,
        what,
    }
}

#[test]
fn unit_ids_and_public_sequence_ids() {
    assert_eq!(unit_id(2, TENSOR_WRITE, 1).unwrap(), 0x0211);
    assert_eq!(unit_id(0, COMPUTE, 0).unwrap(), 0x0003);
    assert_eq!(public_seq(0x0211, 0), 0x0211_0000_0000_0001);
    let e = unit_id(0, COMPUTE, 1).unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid);
    assert!(e.message.contains("has 1 queue"), "{e}");
    assert_eq!(unit_id(0, 4, 0).unwrap_err().status, NrtStatus::Failure);
    assert_eq!(unit_id(0, 9, 0).unwrap_err().status, NrtStatus::Invalid);
    assert!(unit_id(256, TENSOR_READ, 0).is_err());
}

#[test]
fn tensor_requests_complete_in_the_call_and_failures_reach_the_tracker() {
    let h = open(RuntimeConfig::default());
    h.start_trace();
    let (id, vnc) = h.load_add();
    let (ins, _outs) = h.io(id, vnc);
    let (_, a) = ins.iter().next().unwrap();
    let tracker = Arc::new(h.with(|_, s| s.error_tracker(0)).unwrap());
    let t = Arc::clone(&tracker);
    let lookup = move || Ok(Some(Arc::clone(&t)));
    let seq = h
        .with(|_, s| {
            s.schedule_tensor(
                vnc,
                req(TENSOR_WRITE, 1, &lookup, "nrta_tensor_write"),
                || a.write(0, &[1, 2, 3, 4]),
            )
        })
        .unwrap();
    assert_eq!(seq, public_seq(unit_id(0, TENSOR_WRITE, 1).unwrap(), 0));
    assert!(h.with(|rt, s| s.is_completed(rt, seq)).unwrap());
    let mut back = [0u8; 4];
    let read = h
        .with(|_, s| {
            s.schedule_tensor(
                vnc,
                req(TENSOR_READ, 0, &no_tracker, "nrta_tensor_read"),
                || a.read(0, &mut back),
            )
        })
        .unwrap();
    assert_eq!(back, [1, 2, 3, 4]);
    assert_eq!(
        h.with(|rt, s| s.last_sequence(rt, 0, TENSOR_READ, 0))
            .unwrap(),
        read
    );
    // A failing operation: the call succeeds, the tracker and the log get the failure.
    let failed = h
        .with(|_, s| {
            s.schedule_tensor(vnc, req(TENSOR_OP, 0, &lookup, "nrta_tensor_copy"), || {
                Err(Error::invalid("bad copy"))
            })
        })
        .unwrap();
    assert_eq!(tracker.errors(), [(failed, NrtStatus::Invalid)]);
    assert!(
        h.lines()
            .iter()
            .any(|l| l.starts_with("ERROR async nrta_tensor_copy") && l.contains("bad copy")),
        "{:?}",
        h.lines()
    );
    let trace = h.fetch_trace();
    assert_eq!(trace.matches("async_tensor_op").count(), 3, "{trace}");
    // Another core's tracker is refused before anything runs.
    let other = Arc::new(ErrorTracker::new(1));
    let lookup = move || Ok(Some(Arc::clone(&other)));
    let e = h
        .with(|_, s| s.schedule_tensor(vnc, req(TENSOR_OP, 0, &lookup, "x"), || Ok(())))
        .unwrap_err();
    assert!(e.message.contains("belongs to core 1"), "{e}");
    // Unknown sequence ids.
    let e = h.with(|rt, s| s.is_completed(rt, seq + 100)).unwrap_err();
    assert!(e.message.contains("never issued"), "{e}");
    assert!(h.with(|rt, s| s.is_completed(rt, 0)).is_err());
}

#[test]
fn compute_requests_are_harvested_in_order_and_recorded() {
    let h = open(RuntimeConfig::default());
    h.start_trace();
    let (id, vnc) = h.load_add();
    let (ins, outs) = h.io(id, vnc);
    let sets = || Ok((ins.clone(), outs.clone()));
    let seqs: Vec<u64> = (0..3)
        .map(|_| {
            h.with(|rt, s| s.schedule_execute(rt, vnc, compute(id, 0, &sets)))
                .unwrap()
        })
        .collect();
    let unit = unit_id(0, COMPUTE, 0).unwrap();
    assert!(seqs.iter().all(|s| (s >> 48) as u16 == unit));
    let last = *seqs.last().unwrap();
    let mut done = false;
    for _ in 0..2000 {
        done = h.with(|rt, s| s.is_completed(rt, last)).unwrap();
        if done {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    assert!(done, "the last request completed");
    for s in &seqs {
        assert!(h.with(|rt, ses| ses.is_completed(rt, *s)).unwrap());
    }
    assert_eq!(
        h.with(|rt, s| s.last_sequence(rt, 0, COMPUTE, 0)).unwrap(),
        last
    );
    let trace = h.fetch_trace();
    assert_eq!(trace.matches("\"nc_exec\"").count(), 3, "{trace}");
    assert_eq!(trace.matches("async_exec_schedule").count(), 3, "{trace}");
    // A queue the COMPUTE unit does not have.
    let e = h
        .with(|rt, s| s.schedule_execute(rt, vnc, compute(id, 1, &sets)))
        .unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid);
}

#[test]
fn a_completion_signal_is_given_once_the_request_completed() {
    let h = open(RuntimeConfig::default());
    let (id, vnc) = h.load_add();
    let (ins, outs) = h.io(id, vnc);
    let sets = || Ok((ins.clone(), outs.clone()));
    let seq = h
        .with(|rt, s| s.schedule_execute(rt, vnc, compute(id, 0, &sets)))
        .unwrap();
    let (tx, rx) = mpsc::channel();
    h.with(|rt, s| {
        s.when_completed(rt, seq, || {
            Ok(Box::new(move || {
                let _ = tx.send(());
            }))
        })
    })
    .unwrap();
    rx.recv_timeout(Duration::from_secs(10)).expect("signalled");
    assert!(h.with(|rt, s| s.is_completed(rt, seq)).unwrap());
    // An unknown sequence id is refused before a signal is made.
    let e = h
        .with(|rt, s| {
            s.when_completed(rt, seq + 5, || {
                panic!("no signal for an unknown sequence id")
            })
        })
        .unwrap_err();
    assert!(e.message.contains("never issued"), "{e}");
}
