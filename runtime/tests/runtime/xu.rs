//! The execution unit's submit funnel and completion ring (docs/runtime.md §4.2, §4.4).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use nrt_runtime::xu::{
    seq_id, seq_index, seq_xu_id, ExecutionUnit, SlotState, Submitted, SEQ_NUM_MAX,
};
use nrt_runtime::{Error, NrtStatus};

fn ok_stage(idx: u64) -> impl FnOnce(bool) -> nrt_runtime::Result<u64> {
    move |_| Ok(idx)
}

fn submit_ok(xu: &ExecutionUnit, model: u32) -> Submitted {
    xu.submit(model, ok_stage(0)).expect("submit")
}

/// Submits a stage for model 1 that is expected to be refused; returns the error and whether
/// the stage ran anyway.
fn submit_refused(xu: &ExecutionUnit) -> (Error, bool) {
    let ran = AtomicBool::new(false);
    let err = xu
        .submit(1, |_| {
            ran.store(true, Ordering::SeqCst);
            Ok(0)
        })
        .unwrap_err();
    (err, ran.load(Ordering::SeqCst))
}

fn status_of_err<T: std::fmt::Debug>(r: nrt_runtime::Result<T>) -> NrtStatus {
    r.expect_err("expected an error").status
}

#[test]
fn seq_ids_encode_xu_id_and_position() {
    let xu = ExecutionUnit::new(3, 8);
    let ids: Vec<u64> = (0..3).map(|_| submit_ok(&xu, 1).seq_id).collect();
    assert_eq!(ids, vec![3 << 48, (3 << 48) | 1, (3 << 48) | 2]);
    assert_eq!(seq_xu_id(ids[2]), 3);
    assert_eq!(seq_index(ids[2]), 2);
    assert_eq!(seq_id(3, 2), ids[2]);
    assert_eq!(xu.xu_id(), 3);
    assert_eq!(xu.capacity(), 8);
}

#[test]
fn slot_index_wraps_with_capacity_but_seq_ids_do_not() {
    let xu = ExecutionUnit::new(0, 2);
    let mut slots = Vec::new();
    for i in 0..5u64 {
        let s = submit_ok(&xu, 7);
        assert_eq!(seq_index(s.seq_id), i);
        slots.push(s.slot_index);
        xu.complete(s.seq_id, NrtStatus::Success).unwrap();
        assert_eq!(xu.retire(), 1);
    }
    assert_eq!(slots, vec![0, 1, 0, 1, 0]);
}

#[test]
fn queue_full_when_capacity_in_flight_then_recovers() {
    let xu = ExecutionUnit::new(1, 4);
    let subs: Vec<Submitted> = (0..4).map(|_| submit_ok(&xu, 1)).collect();
    assert_eq!(xu.in_flight(), 4);
    let (err, ran) = submit_refused(&xu);
    assert_eq!(err.status, NrtStatus::QueueFull);
    assert_eq!(err.status.code(), 7);
    assert!(!ran, "stage ran on a full queue");
    assert!(!xu.is_poisoned(), "queue full must not poison");

    // Completing without retiring does not free a slot.
    xu.complete(subs[0].seq_id, NrtStatus::Success).unwrap();
    assert_eq!(
        status_of_err(xu.submit(1, ok_stage(0))),
        NrtStatus::QueueFull
    );
    assert_eq!(xu.retire(), 1);
    assert_eq!(xu.in_flight(), 3);
    let s = submit_ok(&xu, 1);
    assert_eq!(seq_index(s.seq_id), 4);
    assert_eq!(s.slot_index, 0);
}

#[test]
fn retire_is_in_order() {
    let xu = ExecutionUnit::new(2, 4);
    let a = submit_ok(&xu, 1);
    let b = submit_ok(&xu, 1);
    xu.complete(b.seq_id, NrtStatus::ExecCompletedWithErr)
        .unwrap();
    assert_eq!(xu.retire(), 0, "slot 1 retired before slot 0 completed");
    assert_eq!(xu.status_of(a.seq_id), Some(SlotState::Pending));
    assert_eq!(
        xu.status_of(b.seq_id),
        Some(SlotState::Completed(NrtStatus::ExecCompletedWithErr))
    );
    assert_eq!(xu.last_completed(), None);
    assert_eq!(xu.exec_head(), 0);

    xu.complete(a.seq_id, NrtStatus::Success).unwrap();
    assert_eq!(xu.retire(), 2);
    assert_eq!(xu.status_of(a.seq_id), Some(SlotState::Retired));
    assert_eq!(xu.status_of(b.seq_id), Some(SlotState::Retired));
    assert_eq!(xu.last_completed(), Some(b.seq_id));
    assert_eq!(xu.in_flight(), 0);
    assert_eq!(xu.retire(), 0);
}

#[test]
fn complete_rejects_bad_seq_ids() {
    let xu = ExecutionUnit::new(5, 4);
    let a = submit_ok(&xu, 1);
    // never published
    assert_eq!(
        status_of_err(xu.complete(seq_id(5, 1), NrtStatus::Success)),
        NrtStatus::Invalid
    );
    // another XU
    assert_eq!(
        status_of_err(xu.complete(seq_id(6, 0), NrtStatus::Success)),
        NrtStatus::Invalid
    );
    xu.complete(a.seq_id, NrtStatus::Success).unwrap();
    // twice
    assert_eq!(
        status_of_err(xu.complete(a.seq_id, NrtStatus::Success)),
        NrtStatus::Invalid
    );
    xu.retire();
    // retired
    assert_eq!(
        status_of_err(xu.complete(a.seq_id, NrtStatus::Success)),
        NrtStatus::Invalid
    );
    assert_eq!(xu.status_of(seq_id(5, 1)), None);
    assert_eq!(xu.status_of(seq_id(6, 0)), None);
}

#[test]
fn entry_snapshots_slot_contents() {
    let xu = ExecutionUnit::new(4, 2);
    let a = xu.submit(11, ok_stage(100)).unwrap();
    let b = xu.submit(12, ok_stage(101)).unwrap();
    let ea = xu.entry(a.seq_id).unwrap();
    assert_eq!(
        (ea.seq_id, ea.compute_idx, ea.model, ea.state),
        (a.seq_id, 100, 11, SlotState::Pending)
    );
    xu.complete(b.seq_id, NrtStatus::ExecOob).unwrap();
    let eb = xu.entry(b.seq_id).unwrap();
    assert_eq!(
        (eb.compute_idx, eb.model, eb.state),
        (101, 12, SlotState::Completed(NrtStatus::ExecOob))
    );
    xu.complete(a.seq_id, NrtStatus::Success).unwrap();
    xu.retire();
    assert_eq!(xu.entry(a.seq_id), None);
    // The slot is reused; the old seq id still reads as retired, the new one as pending.
    let c = xu.submit(11, ok_stage(102)).unwrap();
    assert_eq!(c.slot_index, a.slot_index);
    assert_eq!(xu.status_of(a.seq_id), Some(SlotState::Retired));
    assert_eq!(xu.entry(c.seq_id).unwrap().compute_idx, 102);
}

#[test]
fn failing_stage_poisons_until_reset() {
    let xu = ExecutionUnit::new(0, 8);
    submit_ok(&xu, 1);
    let err = xu
        .submit(1, |_| {
            Err(Error::new(NrtStatus::HwError, "doorbell failed"))
        })
        .unwrap_err();
    assert_eq!(
        err.status,
        NrtStatus::HwError,
        "the stage's own error is returned"
    );
    assert!(xu.is_poisoned());
    assert_eq!(xu.in_flight(), 1, "a failed stage publishes nothing");

    let calls = AtomicUsize::new(0);
    for _ in 0..3 {
        let err = xu
            .submit(1, |_| {
                calls.fetch_add(1, Ordering::SeqCst);
                Ok(0)
            })
            .unwrap_err();
        assert_eq!(err.status, NrtStatus::ExecUnitUnrecoverable);
        assert_eq!(err.status.code(), 101);
        assert!(!err.message.is_empty());
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "stage ran on a poisoned XU"
    );

    xu.reset();
    assert!(!xu.is_poisoned());
    let s = xu.submit(1, ok_stage(9)).unwrap();
    assert_eq!(
        seq_index(s.seq_id),
        1,
        "the failed submit consumed no seq id"
    );
    assert!(s.model_switch, "reset forgets the last posted model");
}

#[test]
fn poison_beats_full_and_full_beats_closed() {
    let xu = ExecutionUnit::new(0, 1);
    submit_ok(&xu, 1);
    xu.close();
    // full is checked before closed
    assert_eq!(
        status_of_err(xu.submit(1, ok_stage(0))),
        NrtStatus::QueueFull
    );
    xu.poison();
    assert_eq!(
        status_of_err(xu.submit(1, ok_stage(0))),
        NrtStatus::ExecUnitUnrecoverable
    );
}

#[test]
fn panicking_stage_poisons() {
    let xu = ExecutionUnit::new(0, 4);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = xu.submit(1, |_| panic!("stage blew up"));
    }));
    assert!(r.is_err());
    assert!(xu.is_poisoned());
    assert_eq!(
        status_of_err(xu.submit(1, ok_stage(0))),
        NrtStatus::ExecUnitUnrecoverable
    );
    xu.reset();
    submit_ok(&xu, 1);
}

#[test]
fn closed_rejects_with_14() {
    let xu = ExecutionUnit::new(0, 4);
    let a = submit_ok(&xu, 1);
    xu.close();
    assert!(xu.is_closed());
    let (err, ran) = submit_refused(&xu);
    assert_eq!(err.status, NrtStatus::Closed);
    assert_eq!(err.status.code(), 14);
    assert!(!ran);
    // In-flight work still drains after close; reset does not reopen.
    xu.complete(a.seq_id, NrtStatus::Success).unwrap();
    assert_eq!(xu.retire(), 1);
    xu.reset();
    assert_eq!(status_of_err(xu.submit(1, ok_stage(0))), NrtStatus::Closed);
}

#[test]
fn model_switch_on_first_and_on_change_only() {
    let xu = ExecutionUnit::new(0, 16);
    let seen = Mutex::new(Vec::new());
    let mut got = Vec::new();
    for model in [1, 1, 2, 2, 1] {
        let s = xu
            .submit(model, |sw| {
                seen.lock().unwrap().push(sw);
                Ok(0)
            })
            .unwrap();
        got.push(s.model_switch);
    }
    let expected = vec![true, false, true, false, true];
    assert_eq!(got, expected);
    assert_eq!(
        *seen.lock().unwrap(),
        expected,
        "stage saw a different flag"
    );
}

#[test]
fn failed_stage_does_not_record_model() {
    let xu = ExecutionUnit::new(0, 16);
    submit_ok(&xu, 1);
    let _ = xu.submit(2, |_| Err(Error::failure("stage")));
    xu.reset();
    // reset forgot everything, so even model 1 is a switch
    assert!(submit_ok(&xu, 1).model_switch);
    assert!(!submit_ok(&xu, 1).model_switch);
}

#[test]
fn cursors_are_on_separate_cache_lines() {
    for cap in [1, 4, 1024] {
        let xu = ExecutionUnit::new(0, cap);
        let (tail, head) = xu.cursor_addresses();
        assert!(
            tail.abs_diff(head) >= 64,
            "tail {tail:#x} and head {head:#x} share a cache line"
        );
        assert_ne!(tail / 64, head / 64);
    }
}

#[test]
fn sequence_space_never_wraps() {
    // The tail after a publish must stay below SEQ_NUM_MAX: the last position is MAX - 2.
    let xu = ExecutionUnit::starting_at(7, 4, SEQ_NUM_MAX - 3);
    let a = submit_ok(&xu, 1);
    let b = submit_ok(&xu, 1);
    assert_eq!(seq_index(a.seq_id), SEQ_NUM_MAX - 3);
    assert_eq!(seq_index(b.seq_id), SEQ_NUM_MAX - 2);
    assert_eq!(seq_xu_id(b.seq_id), 7);
    let (err, ran) = submit_refused(&xu);
    assert_eq!(err.status, NrtStatus::Resource);
    assert!(!ran);
    assert!(!xu.is_poisoned());
    assert_eq!(xu.last_completed(), None);
    xu.complete(a.seq_id, NrtStatus::Success).unwrap();
    assert_eq!(xu.retire(), 1);
    assert_eq!(xu.last_completed(), Some(a.seq_id));
}

#[test]
fn stage_runs_exactly_once_per_successful_submit() {
    let xu = ExecutionUnit::new(0, 3);
    let calls = AtomicUsize::new(0);
    let stage = |_| {
        calls.fetch_add(1, Ordering::SeqCst);
        Ok(0)
    };
    let mut ok = 0;
    for i in 0..10 {
        if xu.submit(1, stage).is_ok() {
            ok += 1;
        }
        if i % 4 == 3 {
            // drain: complete everything in flight, newest first, then retire all
            for p in (xu.exec_head()..xu.scheduled_tail()).rev() {
                xu.complete(seq_id(0, p), NrtStatus::Success).unwrap();
            }
            xu.retire();
            assert_eq!(xu.in_flight(), 0);
        }
    }
    assert_eq!(calls.load(Ordering::SeqCst), ok);
    assert!(ok < 10, "some submits should have hit QueueFull");
    let _ = xu.submit(1, |_| {
        calls.fetch_add(1, Ordering::SeqCst);
        Err(Error::failure("boom"))
    });
    let before = calls.load(Ordering::SeqCst);
    for _ in 0..5 {
        assert!(xu.submit(1, stage).is_err());
    }
    assert_eq!(
        calls.load(Ordering::SeqCst),
        before,
        "stage ran after poisoning"
    );
}

#[test]
fn concurrent_producers_and_harvester() {
    const PRODUCERS: usize = 4;
    const PER: usize = 10_000;
    const TOTAL: u64 = (PRODUCERS * PER) as u64;
    let xu = Arc::new(ExecutionUnit::new(9, 64));
    let stage_calls = Arc::new(AtomicU64::new(0));
    let next_compute = Arc::new(AtomicU64::new(0));
    // A broken ring must fail this test, not hang it.
    let deadline = Instant::now() + Duration::from_secs(60);
    let give_up = Arc::new(AtomicBool::new(false));

    let harvester = {
        let xu = Arc::clone(&xu);
        let give_up = Arc::clone(&give_up);
        thread::spawn(move || {
            // If this thread panics, tell the producers so they stop waiting for space.
            struct Flag(Arc<AtomicBool>);
            impl Drop for Flag {
                fn drop(&mut self) {
                    if thread::panicking() {
                        self.0.store(true, Ordering::SeqCst);
                    }
                }
            }
            let _flag = Flag(give_up);
            let mut next = 0u64; // next position to complete
            let mut retired = 0u64;
            let mut round = 0u64;
            while retired < TOTAL {
                assert!(
                    Instant::now() < deadline,
                    "harvester stuck at {retired}/{TOTAL}"
                );
                let tail = xu.scheduled_tail();
                // Complete in a scrambled order: odd positions of each batch first.
                let batch: Vec<u64> = (next..tail).collect();
                for p in batch.iter().filter(|p| *p % 2 == 1) {
                    xu.complete(seq_id(9, *p), NrtStatus::Success).unwrap();
                }
                for p in batch.iter().filter(|p| *p % 2 == 0) {
                    let e = xu.entry(seq_id(9, *p)).expect("published entry");
                    assert_eq!(e.seq_id, seq_id(9, *p));
                    assert_eq!(e.state, SlotState::Pending);
                    xu.complete(seq_id(9, *p), NrtStatus::Success).unwrap();
                }
                next = tail;
                retired += xu.retire() as u64;
                assert!(xu.exec_head() <= xu.scheduled_tail());
                round += 1;
                if round.is_multiple_of(7) {
                    thread::yield_now();
                }
            }
        })
    };

    let producers: Vec<_> = (0..PRODUCERS)
        .map(|_| {
            let xu = Arc::clone(&xu);
            let stage_calls = Arc::clone(&stage_calls);
            let next_compute = Arc::clone(&next_compute);
            let give_up = Arc::clone(&give_up);
            thread::spawn(move || {
                let mut ids = Vec::with_capacity(PER);
                let mut backoff = 0u32;
                while ids.len() < PER {
                    match xu.submit(1, |_| {
                        stage_calls.fetch_add(1, Ordering::SeqCst);
                        Ok(next_compute.fetch_add(1, Ordering::SeqCst))
                    }) {
                        Ok(s) => {
                            ids.push(s.seq_id);
                            backoff = 0;
                        }
                        Err(e) => {
                            assert_eq!(e.status, NrtStatus::QueueFull);
                            assert!(
                                !give_up.load(Ordering::SeqCst) && Instant::now() < deadline,
                                "producer starved: the harvester died or the ring stalled"
                            );
                            backoff = (backoff + 1).min(6);
                            if backoff < 6 {
                                thread::yield_now();
                            } else {
                                thread::sleep(Duration::from_micros(50));
                            }
                        }
                    }
                }
                ids
            })
        })
        .collect();

    let mut all = HashSet::new();
    for p in producers {
        for id in p.join().unwrap() {
            assert_eq!(seq_xu_id(id), 9);
            assert!(all.insert(id), "duplicate seq id {id:#x}");
        }
    }
    harvester.join().unwrap();

    assert_eq!(all.len() as u64, TOTAL);
    let dense: HashSet<u64> = (0..TOTAL).map(|p| seq_id(9, p)).collect();
    assert_eq!(all, dense, "seq ids are not dense");
    assert_eq!(stage_calls.load(Ordering::SeqCst), TOTAL);
    assert_eq!(xu.scheduled_tail(), TOTAL);
    assert_eq!(xu.exec_head(), xu.scheduled_tail());
    assert_eq!(xu.in_flight(), 0);
    assert_eq!(xu.last_completed(), Some(seq_id(9, TOTAL - 1)));
}
