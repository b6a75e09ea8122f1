//! The TNC cache's rendezvous (`nrt_runtime::tnc`): loaders of one NEFF racing through
//! `enter`, the creator completing, failing or dropping its guard, waiters blocked on the
//! condition variable. loom reports a deadlock if a waiter is never woken.
//!
//! Checked in every execution: a reuser's value is the one a successful creator published
//! (one parse per successful rendezvous: a reuser never parses); a waiter of a failed creator
//! goes independent with `CreatorFailed` (or becomes the next creator after the slot was
//! freed), never reuses; the Creator roles handed out match the creators seen; and at the end
//! the slot is `Uninit` with no users, no waiters, and the cached value dropped.

use std::sync::Arc;

use loom::thread;
use nrt_runtime::tnc::{Entry, IndependentReason, TncCache, TncState};

use crate::explore;

const A: [u8; 16] = [0xA; 16];
const B: [u8; 16] = [0xB; 16];

/// How a loader's creator role ends, if it gets one.
#[derive(Clone, Copy)]
enum Creation {
    Succeed,
    /// `CreatorGuard::fail`.
    Fail,
    /// Dropping the guard without completing (as when unwinding).
    Abandon,
}

/// What one loader ended with.
#[derive(Debug)]
enum Outcome {
    Created(Arc<u32>),
    CreatorFailed,
    Reused { value: Arc<u32>, waited: bool },
    Independent(IndependentReason),
}

/// One load of `uuid` through the cache; `id` tags the value this loader would parse.
fn load(cache: &TncCache<u32>, uuid: [u8; 16], id: u32, creation: Creation) -> Outcome {
    match cache.enter(uuid) {
        Entry::Creator(guard) => match creation {
            Creation::Succeed => {
                let lease = guard
                    .complete(Ok::<_, ()>(Arc::new(id)))
                    .expect("an Ok creation publishes");
                // Hold the slot a little longer through a kept reference.
                let value = Arc::clone(lease.value());
                let kept = lease.keep();
                cache.release_kept(kept);
                Outcome::Created(value)
            }
            Creation::Fail => {
                guard.fail();
                Outcome::CreatorFailed
            }
            Creation::Abandon => {
                drop(guard);
                Outcome::CreatorFailed
            }
        },
        Entry::Reuse(lease) => Outcome::Reused {
            value: Arc::clone(lease.value()),
            waited: lease.waited(),
        },
        Entry::Independent(reason) => Outcome::Independent(reason),
    }
}

fn check(cache: &TncCache<u32>, outcomes: &[Outcome]) {
    let created: Vec<&Arc<u32>> = outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::Created(v) => Some(v),
            _ => None,
        })
        .collect();
    let creators = outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Created(_) | Outcome::CreatorFailed))
        .count();
    assert_eq!(cache.creations(), creators as u64, "{outcomes:?}");
    for o in outcomes {
        if let Outcome::Reused { value, .. } = o {
            assert!(
                created.iter().any(|c| Arc::ptr_eq(c, value)),
                "a reuser got a value no successful creator published: {outcomes:?}"
            );
        }
    }
    assert_eq!(cache.state(), TncState::Uninit, "{outcomes:?}");
    assert_eq!(cache.users(), 0);
    assert_eq!(cache.waiters(), 0);
    assert_eq!(cache.uuid(), None);
    // The cache dropped its copy of every value: only the outcomes hold them.
    for c in &created {
        let holders = outcomes
            .iter()
            .filter(|o| match o {
                Outcome::Created(v) | Outcome::Reused { value: v, .. } => Arc::ptr_eq(v, c),
                _ => false,
            })
            .count();
        assert_eq!(Arc::strong_count(c), holders, "{outcomes:?}");
    }
}

/// Runs one loader per entry of `loaders` on its own thread and checks the outcomes.
fn race(loaders: &'static [([u8; 16], Creation)]) -> Vec<Outcome> {
    let cache = loom::sync::Arc::new(TncCache::<u32>::new());
    let handles: Vec<_> = loaders
        .iter()
        .enumerate()
        .map(|(id, &(uuid, creation))| {
            let cache = cache.clone();
            thread::spawn(move || load(&cache, uuid, id as u32, creation))
        })
        .collect();
    let outcomes: Vec<Outcome> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    check(&cache, &outcomes);
    outcomes
}

/// Two loaders of one NEFF, both able to create: a creator plus a reuser (of a ready slot or
/// after waiting), or two creators in turn when they do not overlap. Never an independent.
#[test]
fn tnc_two_loaders_share_one_parse() {
    explore("tnc_two_loaders_share_one_parse", None, || {
        let outcomes = race(&[(A, Creation::Succeed), (A, Creation::Succeed)]);
        assert!(
            outcomes
                .iter()
                .all(|o| matches!(o, Outcome::Created(_) | Outcome::Reused { .. })),
            "{outcomes:?}"
        );
        assert!(outcomes.iter().any(|o| matches!(o, Outcome::Created(_))));
        // A waiter waited on the other loader, which therefore created.
        if let [Outcome::Reused { waited: true, .. }, other]
        | [other, Outcome::Reused { waited: true, .. }] = &outcomes[..]
        {
            assert!(matches!(other, Outcome::Created(_)), "{outcomes:?}");
        }
    });
}

/// A creator that fails (explicitly, or by dropping its guard) while another loader of the
/// same NEFF waits: the waiter is woken and goes independent with `CreatorFailed`, or, if it
/// arrived after the slot was freed, becomes the next creator. It never reuses a failed parse,
/// and nobody hangs.
#[test]
fn tnc_creator_failure_wakes_the_waiter() {
    for (name, how) in [
        ("tnc_creator_fail_wakes_the_waiter", Creation::Fail),
        ("tnc_creator_abandon_wakes_the_waiter", Creation::Abandon),
    ] {
        explore(name, None, move || {
            let loaders: &'static [([u8; 16], Creation)] = match how {
                Creation::Fail => &[(A, Creation::Fail), (A, Creation::Succeed)],
                _ => &[(A, Creation::Abandon), (A, Creation::Succeed)],
            };
            let outcomes = race(loaders);
            match &outcomes[..] {
                // The failing loader created first: the other waited and was sent off, found
                // the slot still busy, or created after it was freed.
                [Outcome::CreatorFailed, other] => assert!(
                    matches!(
                        other,
                        Outcome::Independent(
                            IndependentReason::CreatorFailed | IndependentReason::SlotBusy
                        ) | Outcome::Created(_)
                    ),
                    "{outcomes:?}"
                ),
                // The succeeding loader created first: the failing one reused its value.
                [Outcome::Reused { .. }, Outcome::Created(_)] => {}
                other => panic!("unexpected outcomes {other:?}"),
            }
        });
    }
}

/// Three loaders, two NEFFs: the Creator, Wait/Reuse and Independent (`OtherUuid`) roles in
/// one race, with the first NEFF's creator failing.
#[test]
fn tnc_three_loaders_two_uuids() {
    explore("tnc_three_loaders_two_uuids", Some(3), || {
        let outcomes = race(&[
            (A, Creation::Fail),
            (A, Creation::Succeed),
            (B, Creation::Succeed),
        ]);
        // The other NEFF's loader creates (the slot was free) or goes off on its own.
        assert!(
            matches!(
                outcomes[2],
                Outcome::Created(_) | Outcome::Independent(IndependentReason::OtherUuid)
            ),
            "{outcomes:?}"
        );
        // A loader of the first NEFF never waits on the second's creator.
        assert!(
            !matches!(&outcomes[..2], [_, Outcome::Reused { value, .. }] | [Outcome::Reused { value, .. }, _] if **value == 2),
            "{outcomes:?}"
        );
    });
}
