//! The execution unit's single-producer ring (`nrt_runtime::xu`): submitters publishing
//! through the funnel, completers and harvesters consuming, readers taking snapshots of slots
//! that may be recycled under them. The payload (seq id, compute index, model) of a slot is
//! written with relaxed stores and published by the cursor's release; loom explores the weak
//! memory orders as well as the interleavings.
//!
//! Checked: a published execution's payload is seen whole by every reader (never a torn or
//! stale mix, even across a slot's reuse); sequence ids encode the XU id and a dense position;
//! the queue is full exactly at `capacity` in flight; every completion lands exactly once, and
//! every position is retired exactly once, in order.

use loom::sync::Arc;
use loom::thread;
use nrt_runtime::xu::{seq_id, seq_index, seq_xu_id, Entry, ExecutionUnit, SlotState};
use nrt_runtime::NrtStatus;

use crate::explore;

const XU: u16 = 5;

/// The payload an execution at ring position `pos` is published with.
fn compute_idx_of(pos: u64) -> u64 {
    100 + pos
}
fn model_of(pos: u64) -> u32 {
    7 + pos as u32
}

/// Publishes the execution of position `pos` (the caller knows it is next).
fn publish(xu: &ExecutionUnit, pos: u64) -> nrt_runtime::Result<nrt_runtime::xu::Submitted> {
    xu.submit(model_of(pos), |_| Ok(compute_idx_of(pos)))
}

/// A snapshot must be one position's payload, whole.
fn check_entry(pos: u64, e: Option<Entry>) {
    if let Some(e) = e {
        assert_eq!(e.seq_id, seq_id(XU, pos), "torn snapshot {e:?}");
        assert_eq!(e.compute_idx, compute_idx_of(pos), "torn snapshot {e:?}");
        assert_eq!(e.model, model_of(pos), "torn snapshot {e:?}");
        assert!(matches!(
            e.state,
            SlotState::Pending | SlotState::Completed(NrtStatus::Success)
        ));
    }
}

/// One producer publishes two executions while a consumer reads their slots and completes
/// and retires what it finds: the consumer sees each payload whole once the cursor shows it.
#[test]
fn xu_publish_orders_payload_before_cursor() {
    explore("xu_publish_orders_payload_before_cursor", None, || {
        let xu = Arc::new(ExecutionUnit::new(XU, 2));
        let producer = {
            let xu = xu.clone();
            thread::spawn(move || {
                for pos in 0..2 {
                    let sub = publish(&xu, pos).expect("room for two");
                    assert_eq!(sub.seq_id, seq_id(XU, pos));
                    assert_eq!(seq_xu_id(sub.seq_id), XU);
                    assert_eq!(seq_index(sub.seq_id), pos);
                    assert_eq!(sub.slot_index, pos as u32);
                    assert!(sub.model_switch);
                }
            })
        };
        let consumer = {
            let xu = xu.clone();
            thread::spawn(move || consume(&xu))
        };
        let retired = consumer.join().unwrap();
        producer.join().unwrap();
        for pos in 0..2 {
            let seq = seq_id(XU, pos);
            if xu.status_of(seq) == Some(SlotState::Pending) {
                xu.complete(seq, NrtStatus::Success).unwrap();
            }
        }
        assert_eq!(retired + xu.retire(), 2);
        assert_eq!(xu.scheduled_tail(), 2);
        assert_eq!(xu.exec_head(), 2);
        assert_eq!(xu.in_flight(), 0);
        assert_eq!(xu.last_completed(), Some(seq_id(XU, 1)));
    });
}

/// The consumer of `xu_publish_orders_payload_before_cursor`: snapshots, completes and
/// retires whatever is published; returns how many it retired.
fn consume(xu: &ExecutionUnit) -> usize {
    let mut completed = 0;
    for pos in 0..2 {
        let seq = seq_id(XU, pos);
        // Published exactly when the tail is past it.
        let tail = xu.scheduled_tail();
        let e = xu.entry(seq);
        check_entry(pos, e);
        if pos < tail {
            assert!(xu.status_of(seq).is_some());
        }
        if e.is_some() {
            xu.complete(seq, NrtStatus::Success)
                .expect("first completion");
            completed += 1;
        }
    }
    let retired = xu.retire();
    assert!(retired <= completed);
    retired
}

/// A one-slot ring: position 0 is completed and retired and its slot reused for position 1
/// while a reader snapshots both. Every snapshot is one position's payload (the seqlock), and
/// the producer is refused with `QueueFull` exactly while position 0 is unretired.
#[test]
fn xu_slot_reuse_never_tears_a_snapshot() {
    explore("xu_slot_reuse_never_tears_a_snapshot", Some(2), || {
        let xu = Arc::new(ExecutionUnit::new(XU, 1));
        publish(&xu, 0).unwrap();
        let harvester = {
            let xu = xu.clone();
            thread::spawn(move || {
                xu.complete(seq_id(XU, 0), NrtStatus::Success).unwrap();
                assert_eq!(xu.retire(), 1);
            })
        };
        let reader = {
            let xu = xu.clone();
            thread::spawn(move || {
                for pos in [0, 1] {
                    check_entry(pos, xu.entry(seq_id(XU, pos)));
                }
            })
        };
        // The producer: full until position 0 is retired.
        let producer = {
            let xu = xu.clone();
            thread::spawn(move || {
                let head = xu.exec_head();
                match publish(&xu, 1) {
                    Ok(sub) => assert_eq!(sub.seq_id, seq_id(XU, 1)),
                    Err(e) => {
                        assert_eq!(e.status, NrtStatus::QueueFull);
                        assert_eq!(head, 0);
                    }
                }
            })
        };
        harvester.join().unwrap();
        reader.join().unwrap();
        producer.join().unwrap();
        if xu.scheduled_tail() == 1 {
            // Refused while full; there is room now.
            publish(&xu, 1).expect("room after the retire");
        }
        assert_eq!(xu.in_flight(), 1);
        assert_eq!(xu.status_of(seq_id(XU, 0)), Some(SlotState::Retired));
    });
}

/// Two completers each report both executions (as a duplicate completion engine would) and
/// then harvest: every execution is completed exactly once and retired exactly once.
#[test]
fn xu_completions_and_retires_happen_once() {
    explore("xu_completions_and_retires_happen_once", None, || {
        let xu = Arc::new(ExecutionUnit::new(XU, 2));
        publish(&xu, 0).unwrap();
        publish(&xu, 1).unwrap();
        let completer = |order: [u64; 2]| {
            let xu = xu.clone();
            thread::spawn(move || {
                let won: Vec<bool> = order
                    .iter()
                    .map(|&pos| xu.complete(seq_id(XU, pos), NrtStatus::Success).is_ok())
                    .collect();
                (won, xu.retire())
            })
        };
        let a = completer([0, 1]);
        let b = completer([1, 0]);
        let (won_a, retired_a) = a.join().unwrap();
        let (won_b, retired_b) = b.join().unwrap();
        // a completed [0, 1], b completed [1, 0]: each position won exactly once.
        assert!(
            won_a[0] ^ won_b[1],
            "position 0 completed {won_a:?} {won_b:?}"
        );
        assert!(
            won_a[1] ^ won_b[0],
            "position 1 completed {won_a:?} {won_b:?}"
        );
        assert_eq!(retired_a + retired_b + xu.retire(), 2);
        assert_eq!(xu.exec_head(), 2);
        assert_eq!(xu.last_completed(), Some(seq_id(XU, 1)));
    });
}

/// Two submitters race through the funnel of a one-slot ring while a harvester retires:
/// published seq ids are dense and unique, the first publish is a model switch and a repeat
/// of the same model is not, and a refusal is `QueueFull` (or the poison gate after the
/// other submitter's failed stage).
#[test]
fn xu_submitters_are_serialised() {
    explore("xu_submitters_are_serialised", Some(2), || {
        let xu = Arc::new(ExecutionUnit::new(XU, 1));
        let submitter = |fail: bool| {
            let xu = xu.clone();
            thread::spawn(move || {
                xu.submit(1, |switch| {
                    if fail {
                        Err(nrt_runtime::Error::new(NrtStatus::Failure, "stage failed"))
                    } else {
                        Ok(u64::from(switch))
                    }
                })
            })
        };
        let a = submitter(false);
        let b = submitter(false);
        let c = submitter(true);
        // The harvester: retire whatever is published at position 0.
        let harvester = {
            let xu = xu.clone();
            thread::spawn(move || {
                if xu.complete(seq_id(XU, 0), NrtStatus::Success).is_ok() {
                    assert_eq!(xu.retire(), 1);
                }
            })
        };
        let results = [a.join().unwrap(), b.join().unwrap(), c.join().unwrap()];
        harvester.join().unwrap();
        // The failing stage never publishes; it poisons the XU if it ran at all.
        let c_status = results[2].as_ref().expect_err("never published").status;
        assert!(matches!(
            c_status,
            NrtStatus::Failure | NrtStatus::QueueFull
        ));
        assert_eq!(xu.is_poisoned(), c_status == NrtStatus::Failure);
        let mut published: Vec<_> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        published.sort_by_key(|s| s.seq_id);
        for (pos, sub) in published.iter().enumerate() {
            assert_eq!(sub.seq_id, seq_id(XU, pos as u64));
            // The stage saw the switch decision the funnel reports.
            assert_eq!(sub.compute_idx, u64::from(sub.model_switch));
            assert_eq!(sub.model_switch, pos == 0);
        }
        assert_eq!(xu.scheduled_tail(), published.len() as u64);
        for r in results.iter().filter_map(|r| r.as_ref().err()) {
            assert!(
                matches!(
                    r.status,
                    NrtStatus::QueueFull | NrtStatus::ExecUnitUnrecoverable | NrtStatus::Failure
                ),
                "{r:?}"
            );
        }
    });
}
