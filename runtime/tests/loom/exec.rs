//! The execute path's kernels (`nrt_runtime::exec::ticket`, `nrt_runtime::exec::handoff`),
//! composed with the execution unit the way `exec::worker` composes them.
//!
//! Checked: `compute_req_lock` tickets are dense and unique under contention and a failed
//! stage issues none; lockstep staging gives every core of the vcore the same ticket and the
//! funnel's order, and a doorbell is never seen before its stage; a waiter for an async
//! execution always wakes when its result is published, including the error result of a
//! completion that poisoned the execution unit, and a backpressured submitter wakes when the
//! worker retires. loom reports any missed wake-up as a deadlock (its timed waits never time
//! out).

use std::time::Duration;

use loom::sync::atomic::{AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;
use nrt_runtime::exec::handoff::Handoff;
use nrt_runtime::exec::ticket::{stage_lockstep, ComputeReqLock};
use nrt_runtime::xu::{seq_index, ExecutionUnit};
use nrt_runtime::{Error, NrtStatus};

use crate::explore;

/// Long enough never to expire (loom's timed waits do not time out anyway).
const FOREVER: Duration = Duration::from_secs(3600);

/// What a core's state records: the tickets staged on it, in order.
type Staged = Vec<u64>;

/// Three submitters contend for one core's `compute_req_lock`; one's stage fails. The
/// successful tickets are exactly `0..k` with no gap or repeat, staged in ticket order, the
/// core's state is created once, and the failure consumed no ticket.
#[test]
fn ticket_dense_under_contention() {
    explore("ticket_dense_under_contention", Some(3), || {
        let core = Arc::new(ComputeReqLock::<Staged>::new());
        let creations = Arc::new(AtomicU64::new(0));
        let submitter = |fail: bool| {
            let (core, creations) = (core.clone(), creations.clone());
            thread::spawn(move || {
                core.lock().issue(
                    || {
                        creations.fetch_add(1, Ordering::Relaxed);
                        Ok(Vec::new())
                    },
                    |ticket, staged: &mut Staged| {
                        if fail {
                            return Err(ticket);
                        }
                        staged.push(ticket);
                        Ok(())
                    },
                )
            })
        };
        let handles = [submitter(false), submitter(true), submitter(false)];
        let results: Vec<Result<u64, u64>> =
            handles.into_iter().map(|h| h.join().unwrap()).collect();
        let mut tickets: Vec<u64> = results.iter().filter_map(|r| r.ok()).collect();
        tickets.sort_unstable();
        assert_eq!(tickets, [0, 1]);
        // The failed stage was offered the next ticket, which stayed unissued.
        let offered = results[1].expect_err("its stage fails");
        assert!(offered <= 2);
        let g = core.lock();
        assert_eq!(g.compute_idx_tail(), 2);
        assert_eq!(g.state().as_deref(), Some(&[0, 1][..]));
        assert_eq!(creations.load(Ordering::Relaxed), 1);
        drop(g);
        // A reset restarts the numbering and hands the state back.
        assert_eq!(core.reset(), Some(vec![0, 1]));
        assert_eq!(core.lock().compute_idx_tail(), 0);
    });
}

/// Two submitters of a two-core vcore go through the execution unit's funnel into lockstep
/// staging, as `ExecShared::submit` does, while a "device" watches each core's doorbell.
/// Both cores of an execution get the same ticket, the vcore tickets follow the funnel's
/// order, and whenever the device sees `d` doorbells on a core, `d` executions are staged
/// there.
#[test]
fn lockstep_doorbells_follow_stages() {
    explore("lockstep_doorbells_follow_stages", Some(2), || {
        let xu = Arc::new(ExecutionUnit::new(0, 4));
        let cores = Arc::new([ComputeReqLock::<Staged>::new(), ComputeReqLock::new()]);
        let doorbells = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
        let submitter = || {
            let (xu, cores, doorbells) = (xu.clone(), cores.clone(), doorbells.clone());
            thread::spawn(move || {
                let mut per_core = [0; 2];
                let sub = xu
                    .submit(1, |_| {
                        let tickets = stage_lockstep(
                            cores.iter(),
                            |_| Ok::<_, Error>(Vec::new()),
                            |_, ticket, staged| {
                                staged.push(ticket);
                                Ok(())
                            },
                            |i| {
                                doorbells[i].fetch_add(1, Ordering::Release);
                                Ok(())
                            },
                        )?;
                        per_core = tickets;
                        Ok(tickets[0])
                    })
                    .expect("room for both");
                (sub, per_core)
            })
        };
        let a = submitter();
        let b = submitter();
        // The device: a doorbell it sees has its stage behind it.
        let device = {
            let (cores, doorbells) = (cores.clone(), doorbells.clone());
            thread::spawn(move || {
                for (core, bell) in cores.iter().zip(doorbells.iter()) {
                    let rung = bell.load(Ordering::Acquire);
                    let staged = core.lock().compute_idx_tail();
                    assert!(
                        rung <= staged,
                        "doorbell {rung} before its stage ({staged})"
                    );
                }
            })
        };
        device.join().unwrap();
        for h in [a, b] {
            let (sub, per_core) = h.join().unwrap();
            assert_eq!(per_core[0], per_core[1], "cores out of lockstep");
            assert_eq!(sub.compute_idx, per_core[0]);
            // No failure anywhere: the vcore ticket is the funnel position.
            assert_eq!(sub.compute_idx, seq_index(sub.seq_id));
        }
        for (core, bell) in cores.iter().zip(doorbells.iter()) {
            assert_eq!(bell.load(Ordering::Relaxed), 2);
            assert_eq!(core.lock().state().as_deref(), Some(&[0, 1][..]));
        }
    });
}

type Job = u64;
type Outcome = Result<u64, NrtStatus>;

/// The async path with a failing completion: an execution is submitted and queued, the
/// worker's completion times out (poisoning the execution unit, completing and retiring the
/// execution with the error, publishing it) while one thread waits for the result and a
/// backpressured submitter waits for room. Both wake; the waiter gets the error; shutdown
/// stops the worker.
#[test]
fn handoff_waiters_wake_on_publish_and_poison() {
    explore(
        "handoff_waiters_wake_on_publish_and_poison",
        Some(3),
        || {
            let xu = Arc::new(ExecutionUnit::new(0, 1));
            let handoff = Arc::new(Handoff::<Job, Outcome>::new());
            let seq = xu.submit(1, |_| Ok(0)).unwrap().seq_id;
            handoff.push(seq);
            let worker = {
                let (xu, handoff) = (xu.clone(), handoff.clone());
                thread::spawn(move || {
                    while let Some(seq) = handoff.next() {
                        // `ExecShared::complete` on a timed-out execution.
                        xu.poison();
                        let _ = xu.complete(seq, NrtStatus::Timeout);
                        xu.retire();
                        handoff.finish(seq, Err(NrtStatus::Timeout));
                    }
                })
            };
            let waiter = {
                let handoff = handoff.clone();
                thread::spawn(move || handoff.wait(seq, FOREVER))
            };
            // A submitter under backpressure (limit 1).
            let backpressured = {
                let (xu, handoff) = (xu.clone(), handoff.clone());
                thread::spawn(move || handoff.wait_until(|| xu.in_flight() < 1, FOREVER, FOREVER))
            };
            assert!(backpressured.join().unwrap());
            assert_eq!(waiter.join().unwrap(), Some(Err(NrtStatus::Timeout)));
            assert!(xu.is_poisoned());
            assert_eq!(
                xu.submit(1, |_| Ok(1)).unwrap_err().status,
                NrtStatus::ExecUnitUnrecoverable
            );
            handoff.shutdown();
            worker.join().unwrap();
            assert_eq!(handoff.poll(seq), None, "a result is taken once");
        },
    );
}

/// Two executions in flight (the second submitted while the worker may be asleep), two
/// waiters (one per result) and the worker: each waiter gets exactly its own result, whatever
/// the order of publishing and waiting.
#[test]
fn handoff_each_waiter_gets_its_result() {
    explore("handoff_each_waiter_gets_its_result", Some(2), || {
        let handoff = Arc::new(Handoff::<Job, Outcome>::new());
        handoff.push(1);
        let worker = {
            let handoff = handoff.clone();
            thread::spawn(move || {
                while let Some(seq) = handoff.next() {
                    handoff.finish(seq, Ok(seq * 10));
                }
            })
        };
        let waiter = |seq: u64| {
            let handoff = handoff.clone();
            thread::spawn(move || handoff.wait(seq, FOREVER))
        };
        let w1 = waiter(1);
        let w2 = waiter(2);
        let submitter = {
            let handoff = handoff.clone();
            thread::spawn(move || handoff.push(2))
        };
        submitter.join().unwrap();
        assert_eq!(w1.join().unwrap(), Some(Ok(10)));
        assert_eq!(w2.join().unwrap(), Some(Ok(20)));
        handoff.shutdown();
        worker.join().unwrap();
    });
}
