//! The TNC parse cache (docs/runtime.md §2.3): one UUID-keyed slot, four states, the Creator /
//! Reuse / Wait / Independent roles, failure wake-up and ref-counted release. Every
//! multi-threaded test runs under a watchdog so a deadlock fails instead of hanging.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use nrt_runtime::tnc::{Entry, IndependentReason, Role, TncCache, TncState};

const A: [u8; 16] = [0xA; 16];
const B: [u8; 16] = [0xB; 16];

/// Runs `f` on its own thread; fails the test if it does not finish within `secs`.
fn watchdog<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .expect("deadlock: the test did not finish in time")
}

/// Polls until `cond` holds (test-side only; the cache itself never polls).
fn eventually(mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "condition never held"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn single_thread_lifecycle() {
    let c: TncCache<String> = TncCache::new();
    assert_eq!(c.state(), TncState::Uninit);
    assert_eq!(c.uuid(), None);

    let Entry::Creator(g) = c.enter(A) else {
        panic!("first entry must create")
    };
    assert_eq!(c.state(), TncState::Pending);
    assert_eq!(c.uuid(), Some(A));
    // Different UUID while Pending: Independent.
    let e = c.enter(B);
    assert_eq!(e.role(), Role::Independent);
    assert!(matches!(
        e,
        Entry::Independent(IndependentReason::OtherUuid)
    ));

    let lease = g
        .complete(Ok::<_, ()>(Arc::new("parsed".to_string())))
        .unwrap();
    assert_eq!(c.state(), TncState::Ready);
    assert!(!lease.waited());
    let Entry::Reuse(r) = c.enter(A) else {
        panic!("ready + same uuid must reuse")
    };
    assert!(!r.waited());
    assert!(Arc::ptr_eq(r.value(), lease.value()));
    assert_eq!(c.users(), 2);
    assert!(matches!(
        c.enter(B),
        Entry::Independent(IndependentReason::OtherUuid)
    ));

    r.release();
    assert_eq!(c.state(), TncState::Ready);
    drop(lease);
    // Last user gone: back to Uninit, and a new UUID creates.
    assert_eq!(c.state(), TncState::Uninit);
    assert_eq!(c.users(), 0);
    let Entry::Creator(g) = c.enter(B) else {
        panic!("free slot must create")
    };
    assert_eq!(c.uuid(), Some(B));
    g.fail();
    assert_eq!(c.state(), TncState::Uninit);
    assert_eq!(c.creations(), 2);
}

#[test]
fn creator_error_sends_the_waiter_independent() {
    let c = Arc::new(TncCache::<u32>::new());
    let Entry::Creator(g) = c.enter(A) else {
        panic!()
    };
    // A waiter holds a reference across the failure.
    let c2 = Arc::clone(&c);
    let waiter = thread::spawn(move || {
        let e = c2.enter(A);
        let role = e.role();
        let reason = match e {
            Entry::Independent(r) => Some(r),
            _ => None,
        };
        (role, reason)
    });
    eventually(|| c.waiters() == 1);
    // Fail while the waiter is still registered; the waiter's reference keeps the slot busy
    // until it wakes, so entering now sees Failed (SlotBusy) or, once it left, Uninit.
    let err = g.complete(Err::<Arc<u32>, _>("parse error")).err();
    assert_eq!(err, Some("parse error"));
    let (role, reason) = watchdog(10, move || waiter.join().unwrap());
    assert_eq!(role, Role::Independent);
    assert_eq!(reason, Some(IndependentReason::CreatorFailed));
    assert_eq!(c.state(), TncState::Uninit);
    assert_eq!(c.users(), 0);
}

#[test]
fn same_uuid_after_failure_is_busy_or_fresh_never_blocks() {
    // While failed waiters still hold the slot, a new entrant of the same UUID is sent off
    // (SlotBusy) instead of waiting; once they have left, it creates afresh.
    let c = Arc::new(TncCache::<u32>::new());
    let Entry::Creator(g) = c.enter(A) else {
        panic!()
    };
    let waiters: Vec<_> = (0..64)
        .map(|_| {
            let c = Arc::clone(&c);
            thread::spawn(move || assert!(matches!(c.enter(A), Entry::Independent(_))))
        })
        .collect();
    eventually(|| c.waiters() == 64);
    g.fail();
    let c2 = Arc::clone(&c);
    let seen = watchdog(10, move || {
        let mut seen = Vec::new();
        loop {
            match c2.enter(A) {
                Entry::Independent(r) => seen.push(r),
                Entry::Creator(g) => {
                    g.fail();
                    return seen;
                }
                Entry::Reuse(_) => panic!("nothing to reuse after a failure"),
            }
        }
    });
    assert!(
        seen.iter().all(|&r| r == IndependentReason::SlotBusy),
        "{seen:?}"
    );
    for w in waiters {
        w.join().unwrap();
    }
    assert_eq!(c.state(), TncState::Uninit);
}

#[test]
fn sixty_four_threads_one_creation() {
    let out = watchdog(30, || {
        let c = Arc::new(TncCache::<Vec<u8>>::new());
        let start = Arc::new(Barrier::new(64));
        let builds = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..64)
            .map(|i| {
                let (c, start, builds) = (Arc::clone(&c), Arc::clone(&start), Arc::clone(&builds));
                thread::spawn(move || {
                    start.wait();
                    match c.enter(A) {
                        Entry::Creator(g) => {
                            builds.fetch_add(1, Ordering::SeqCst);
                            // Give everyone time to arrive and wait.
                            thread::sleep(Duration::from_millis(100));
                            let lease = g.complete(Ok::<_, ()>(Arc::new(vec![1, 2, 3]))).unwrap();
                            let v = Arc::clone(lease.value());
                            // Keep the slot until everyone has been served.
                            thread::sleep(Duration::from_millis(100));
                            (i, "creator", v)
                        }
                        Entry::Reuse(lease) => {
                            let v = Arc::clone(lease.value());
                            let how = if lease.waited() { "waited" } else { "reused" };
                            (i, how, v)
                        }
                        Entry::Independent(r) => panic!("thread {i} went independent: {r:?}"),
                    }
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        (c, builds.load(Ordering::SeqCst), results)
    });
    let (c, builds, results) = out;
    assert_eq!(builds, 1);
    assert_eq!(c.creations(), 1);
    assert_eq!(results.len(), 64);
    let creator = results.iter().filter(|r| r.1 == "creator").count();
    assert_eq!(creator, 1);
    assert!(
        results.iter().any(|r| r.1 == "waited"),
        "threads arriving during the build wait for it"
    );
    let first = &results[0].2;
    assert!(results.iter().all(|r| Arc::ptr_eq(&r.2, first)));
    assert_eq!(**first, [1, 2, 3]);
    assert_eq!(c.state(), TncState::Uninit, "all released");
    assert_eq!(c.users(), 0);
}

fn fail_wakes_all(explicit: bool) {
    const N: usize = 32;
    let c = Arc::new(TncCache::<u64>::new());
    let Entry::Creator(g) = c.enter(A) else {
        panic!()
    };
    let waiters: Vec<_> = (0..N)
        .map(|_| {
            let c = Arc::clone(&c);
            thread::spawn(move || match c.enter(A) {
                Entry::Independent(r) => r,
                other => panic!("expected Independent, got {other:?}"),
            })
        })
        .collect();
    eventually(|| c.waiters() == N as u64);
    assert_eq!(c.users(), N as u64 + 1);
    if explicit {
        g.fail();
    } else {
        drop(g);
    }
    let reasons = watchdog(10, move || {
        waiters
            .into_iter()
            .map(|h| h.join().unwrap())
            .collect::<Vec<_>>()
    });
    assert_eq!(reasons.len(), N);
    assert!(reasons
        .iter()
        .all(|&r| r == IndependentReason::CreatorFailed));
    assert_eq!(c.state(), TncState::Uninit);
    assert_eq!(c.users(), 0);
    assert_eq!(c.waiters(), 0);
    // The slot is usable again.
    assert!(matches!(c.enter(B), Entry::Creator(_)));
    assert_eq!(c.creations(), 2);
}

#[test]
fn creator_failure_wakes_every_waiter() {
    fail_wakes_all(true);
}

#[test]
fn dropped_creator_guard_wakes_every_waiter() {
    fail_wakes_all(false);
}

#[test]
fn panicking_creator_does_not_strand_waiters() {
    let c = Arc::new(TncCache::<u8>::new());
    let c1 = Arc::clone(&c);
    let started = Arc::new(Barrier::new(2));
    let s1 = Arc::clone(&started);
    let creator = thread::spawn(move || {
        let Entry::Creator(_g) = c1.enter(A) else {
            panic!("expected creator")
        };
        s1.wait();
        // Wait until the other thread is blocked, then blow up while holding the guard.
        let start = Instant::now();
        while c1.waiters() == 0 && start.elapsed() < Duration::from_secs(10) {
            thread::sleep(Duration::from_millis(1));
        }
        panic!("parser crashed");
    });
    started.wait();
    let c2 = Arc::clone(&c);
    let reason = watchdog(10, move || match c2.enter(A) {
        Entry::Independent(r) => r,
        other => panic!("{other:?}"),
    });
    assert!(creator.join().is_err());
    assert_eq!(reason, IndependentReason::CreatorFailed);
    assert_eq!(c.state(), TncState::Uninit);
}

#[test]
fn different_uuid_while_pending_is_independent_and_does_not_wait() {
    let c = Arc::new(TncCache::<u8>::new());
    let Entry::Creator(g) = c.enter(A) else {
        panic!()
    };
    let c2 = Arc::clone(&c);
    // Would deadlock if a different UUID waited for the pending creator.
    let e = watchdog(5, move || match c2.enter(B) {
        Entry::Independent(r) => r,
        other => panic!("{other:?}"),
    });
    assert_eq!(e, IndependentReason::OtherUuid);
    assert_eq!(c.users(), 1, "independent callers take no reference");
    let lease = g.complete(Ok::<_, ()>(Arc::new(5))).unwrap();
    assert_eq!(**lease.value(), 5);
}

#[test]
fn get_or_create_coalesces_and_propagates_errors() {
    let (c, builds, vals) = watchdog(30, || {
        let c = Arc::new(TncCache::<u32>::new());
        let builds = Arc::new(AtomicUsize::new(0));
        let start = Arc::new(Barrier::new(16));
        let hs: Vec<_> = (0..16)
            .map(|_| {
                let (c, builds, start) = (Arc::clone(&c), Arc::clone(&builds), Arc::clone(&start));
                thread::spawn(move || {
                    start.wait();
                    c.get_or_create(A, || {
                        builds.fetch_add(1, Ordering::SeqCst);
                        thread::sleep(Duration::from_millis(150));
                        Ok::<_, String>(42)
                    })
                    .unwrap()
                })
            })
            .collect();
        let vals: Vec<_> = hs.into_iter().map(|h| *h.join().unwrap()).collect();
        (c, builds.load(Ordering::SeqCst), vals)
    });
    assert!(vals.iter().all(|&v| v == 42));
    // Threads that arrive after the creator released rebuild; those overlapping it do not.
    assert!((1..16).contains(&builds), "builds = {builds}");
    assert_eq!(c.state(), TncState::Uninit);

    let e = c.get_or_create(B, || Err::<u32, _>("bad neff".to_string()));
    assert_eq!(e.unwrap_err(), "bad neff");
    assert_eq!(c.state(), TncState::Uninit);
}
