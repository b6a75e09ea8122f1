//! The TNC ("temporary NEFF cache"): a single-slot, UUID-keyed parse cache that lets loaders
//! racing to load the *same* NEFF parse it once (load stage S1, docs/runtime.md §2.3).
//!
//! It is not a general cache: it holds at most one value, keyed by the NEFF's 128-bit UUID,
//! and only while someone uses it. Its job is to coalesce concurrent loads of one model.
//!
//! # States
//!
//! | state | meaning |
//! |---|---|
//! | [`TncState::Uninit`] | the slot is free (no UUID, no value, no users) |
//! | [`TncState::Pending`] | a creator is parsing the NEFF with the slot's UUID |
//! | [`TncState::Ready`] | the parse succeeded; the value is shared with every user |
//! | [`TncState::Failed`] | the creator failed; the slot stays busy until its last user leaves |
//!
//! The slot is reference-counted: the creator and every reuser hold one reference, returned by
//! dropping (or [`Lease::release`]-ing) what [`TncCache::enter`] gave them. When the last one
//! is returned the slot goes back to `Uninit` and the cached value is dropped (users keep their
//! own `Arc`s).
//!
//! # Roles
//!
//! [`TncCache::enter`] hands each caller one role:
//!
//! | slot when entering | role | result |
//! |---|---|---|
//! | `Uninit` | **Creator** | [`Entry::Creator`]: parse, then [`CreatorGuard::complete`] |
//! | `Ready`, same UUID | **Reuse** | [`Entry::Reuse`] with the shared value |
//! | `Pending`, same UUID | **Wait** | blocks until the creator finishes, then [`Entry::Reuse`] (success) or [`Entry::Independent`] with [`IndependentReason::CreatorFailed`] (failure) |
//! | another UUID, or `Failed` | **Independent** | [`Entry::Independent`]: parse privately, the cache is not involved |
//!
//! Waiting uses a [`Condvar`] (no busy waiting). A creator that fails — explicitly, or by
//! dropping its [`CreatorGuard`] without completing, e.g. while unwinding — marks the slot
//! `Failed` and wakes **every** waiter, so no waiter can deadlock on a creator that gave up.
//! A waiter keeps its reference while it waits, so the slot cannot be recycled for another
//! UUID under it.
//!
//! The slot's mutex and condition variable come from [`crate::sync`], so the rendezvous is
//! model-checked with loom (`runtime/tests/loom/tnc.rs`); the cached values are plain
//! `std::sync::Arc`s handed to the callers.

use std::sync::Arc;

use crate::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// The state of the cache slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TncState {
    /// Free.
    Uninit,
    /// A creator is building the value.
    Pending,
    /// The value is available.
    Ready,
    /// The creator failed; busy until the last user releases.
    Failed,
}

/// The role a caller of [`TncCache::enter`] was given (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// First user: builds the value.
    Creator,
    /// Uses the value a creator built (possibly after waiting for it).
    Reuse,
    /// Waited for a pending creator (resolved to `Reuse` or `Independent` before `enter`
    /// returns; reported by [`Lease::waited`] and [`IndependentReason::CreatorFailed`]).
    Wait,
    /// Does its own work without the cache.
    Independent,
}

/// Why a caller was sent off on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndependentReason {
    /// The slot holds (or is building) a different UUID.
    OtherUuid,
    /// The slot holds this UUID but its creation failed and users still hold it.
    SlotBusy,
    /// This caller waited for the creator of its UUID, which failed.
    CreatorFailed,
}

struct Slot<T> {
    state: TncState,
    uuid: [u8; 16],
    value: Option<Arc<T>>,
    /// References held (creator + reusers + waiters).
    users: u64,
    /// Callers currently blocked waiting for a pending creation.
    waiters: u64,
    /// Number of Creator roles handed out.
    creations: u64,
}

impl<T> Slot<T> {
    /// The free slot.
    const UNINIT: Self = Slot {
        state: TncState::Uninit,
        uuid: [0; 16],
        value: None,
        users: 0,
        waiters: 0,
        creations: 0,
    };
}

/// The single-slot, UUID-keyed parse cache. Generic over the cached value.
pub struct TncCache<T> {
    slot: Mutex<Slot<T>>,
    cond: Condvar,
}

impl<T> Default for TncCache<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> std::fmt::Debug for TncCache<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.lock();
        f.debug_struct("TncCache")
            .field("state", &s.state)
            .field("uuid", &s.uuid)
            .field("users", &s.users)
            .field("waiters", &s.waiters)
            .field("creations", &s.creations)
            .finish()
    }
}

/// What [`TncCache::enter`] returns: the caller's role, carrying what that role needs.
#[must_use = "a Creator must complete; dropping a CreatorGuard marks the creation failed"]
pub enum Entry<'a, T> {
    /// Build the value and hand it to [`CreatorGuard::complete`].
    Creator(CreatorGuard<'a, T>),
    /// Use the cached value; drop the lease when done.
    Reuse(Lease<'a, T>),
    /// Work without the cache.
    Independent(IndependentReason),
}

impl<T> Entry<'_, T> {
    /// The role (a waiter reports the role it resolved to).
    pub fn role(&self) -> Role {
        match self {
            Entry::Creator(_) => Role::Creator,
            Entry::Reuse(_) => Role::Reuse,
            Entry::Independent(_) => Role::Independent,
        }
    }
}

impl<T> std::fmt::Debug for Entry<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Entry::Creator(_) => f.write_str("Creator"),
            Entry::Reuse(l) => write!(f, "Reuse {{ waited: {} }}", l.waited),
            Entry::Independent(r) => write!(f, "Independent({r:?})"),
        }
    }
}

/// The creator's obligation: exactly one of [`complete`](Self::complete) or
/// [`fail`](Self::fail). Dropping it without either marks the creation failed (and wakes
/// every waiter).
#[must_use = "dropping a CreatorGuard marks the creation failed"]
pub struct CreatorGuard<'a, T> {
    cache: &'a TncCache<T>,
    done: bool,
}

impl<'a, T> CreatorGuard<'a, T> {
    /// Publishes the creator's result. On `Ok` the slot becomes `Ready`, every waiter is woken
    /// to reuse the value, and the creator gets a [`Lease`] on it (its reference stays held
    /// until the lease is dropped). On `Err` the slot becomes `Failed`, every waiter is woken
    /// to go independent, the creator's reference is released and the error returned.
    pub fn complete<E>(mut self, result: Result<Arc<T>, E>) -> Result<Lease<'a, T>, E> {
        self.done = true;
        match result {
            Ok(value) => {
                {
                    let mut s = self.cache.lock();
                    s.state = TncState::Ready;
                    s.value = Some(Arc::clone(&value));
                }
                self.cache.cond.notify_all();
                Ok(Lease {
                    cache: self.cache,
                    value,
                    waited: false,
                    kept: false,
                })
            }
            Err(e) => {
                self.cache.fail_creation();
                Err(e)
            }
        }
    }

    /// Gives up: the slot becomes `Failed`, waiters go independent.
    pub fn fail(mut self) {
        self.done = true;
        self.cache.fail_creation();
    }
}

impl<T> Drop for CreatorGuard<'_, T> {
    fn drop(&mut self) {
        if !self.done {
            self.cache.fail_creation();
        }
    }
}

/// A reference to the cached value. The slot stays busy until every lease is dropped or
/// [`release`](Self::release)d.
pub struct Lease<'a, T> {
    cache: &'a TncCache<T>,
    value: Arc<T>,
    waited: bool,
    kept: bool,
}

/// A slot reference detached from its [`Lease`] by [`Lease::keep`]: the slot stays referenced
/// until the token is handed back to [`TncCache::release_kept`].
#[derive(Debug)]
#[must_use = "a kept reference pins the cache slot until it is released"]
pub struct KeptRef {
    uuid: [u8; 16],
}

impl<T> Lease<'_, T> {
    /// The shared value.
    pub fn value(&self) -> &Arc<T> {
        &self.value
    }

    /// Whether this caller waited for a pending creator (the real runtime's Wait role).
    pub fn waited(&self) -> bool {
        self.waited
    }

    /// Returns the reference (same as dropping the lease).
    pub fn release(self) {}

    /// Keeps the slot referenced beyond this borrow (for as long as something built from the
    /// value lives); hand the token to [`TncCache::release_kept`] to release it.
    pub fn keep(mut self) -> KeptRef {
        self.kept = true;
        let uuid = self.cache.lock().uuid;
        KeptRef { uuid }
    }
}

impl<T> Drop for Lease<'_, T> {
    fn drop(&mut self) {
        if !self.kept {
            self.cache.release_ref();
        }
    }
}

impl<T> TncCache<T> {
    /// An empty (`Uninit`) cache.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        TncCache {
            slot: Mutex::new(Slot::UNINIT),
            cond: Condvar::new(),
        }
    }

    /// An empty (`Uninit`) cache (loom's primitives have no `const` constructors).
    #[cfg(loom)]
    pub fn new() -> Self {
        TncCache {
            slot: Mutex::new(Slot::UNINIT),
            cond: Condvar::new(),
        }
    }

    /// The slot lock. A panic while holding it cannot leave the slot inconsistent (every
    /// update is a few plain stores), so poisoning is ignored.
    fn lock(&self) -> MutexGuard<'_, Slot<T>> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Enters the cache for the NEFF with `uuid`, blocking while a creator of the same UUID is
    /// pending. See the module docs for the roles.
    pub fn enter(&self, uuid: [u8; 16]) -> Entry<'_, T> {
        let mut s = self.lock();
        match s.state {
            TncState::Uninit => {
                debug_assert!(s.users == 0 && s.waiters == 0 && s.value.is_none());
                s.state = TncState::Pending;
                s.uuid = uuid;
                s.users = 1;
                s.creations += 1;
                Entry::Creator(CreatorGuard {
                    cache: self,
                    done: false,
                })
            }
            _ if s.uuid != uuid => Entry::Independent(IndependentReason::OtherUuid),
            TncState::Ready => {
                s.users += 1;
                let value = s.value.clone();
                drop(s);
                self.lease_or_independent(value, false)
            }
            TncState::Failed => Entry::Independent(IndependentReason::SlotBusy),
            TncState::Pending => {
                s.users += 1;
                s.waiters += 1;
                while s.state == TncState::Pending {
                    s = self.cond.wait(s).unwrap_or_else(PoisonError::into_inner);
                }
                s.waiters -= 1;
                // Our reference kept the slot from being recycled, so it still holds `uuid`.
                if s.state == TncState::Ready {
                    let value = s.value.clone();
                    drop(s);
                    self.lease_or_independent(value, true)
                } else {
                    drop(s);
                    self.release_ref();
                    Entry::Independent(IndependentReason::CreatorFailed)
                }
            }
        }
    }

    /// A lease on `value` for a caller that already holds a reference (a `Ready` slot always
    /// has a value; if it somehow did not, the reference is returned and the caller goes
    /// independent).
    fn lease_or_independent(&self, value: Option<Arc<T>>, waited: bool) -> Entry<'_, T> {
        match value {
            Some(value) => Entry::Reuse(Lease {
                cache: self,
                value,
                waited,
                kept: false,
            }),
            None => {
                self.release_ref();
                Entry::Independent(IndependentReason::SlotBusy)
            }
        }
    }

    fn fail_creation(&self) {
        {
            let mut s = self.lock();
            s.state = TncState::Failed;
            s.value = None;
        }
        self.cond.notify_all();
        self.release_ref();
    }

    /// Returns one reference; the last one frees the slot.
    fn release_ref(&self) {
        let mut s = self.lock();
        s.users = s.users.saturating_sub(1);
        if s.users == 0 {
            s.state = TncState::Uninit;
            s.uuid = [0; 16];
            // Drop the cached value outside the lock.
            let value = s.value.take();
            drop(s);
            drop(value);
        }
    }

    /// Convenience over [`enter`](Self::enter) for callers that need the value only while
    /// building: a Creator runs `build` and publishes its result, a reuser (or waiter that
    /// resolved to reuse) gets the shared value, an independent caller runs `build` for
    /// itself. The slot reference is released before returning, so the cache coalesces only
    /// loads that overlap the creator's build. If `build` panics, the creation is marked
    /// failed (waiters go independent) and the panic continues.
    pub fn get_or_create<E>(
        &self,
        uuid: [u8; 16],
        build: impl FnOnce() -> Result<T, E>,
    ) -> Result<Arc<T>, E> {
        match self.enter(uuid) {
            Entry::Creator(guard) => {
                let lease = guard.complete(build().map(Arc::new))?;
                Ok(Arc::clone(lease.value()))
            }
            Entry::Reuse(lease) => Ok(Arc::clone(lease.value())),
            Entry::Independent(_) => build().map(Arc::new),
        }
    }

    /// Releases a reference kept with [`Lease::keep`].
    pub fn release_kept(&self, kept: KeptRef) {
        debug_assert_eq!(
            self.lock().uuid,
            kept.uuid,
            "a kept reference outlived its slot"
        );
        self.release_ref();
    }

    /// Number of Creator roles handed out so far.
    pub fn creations(&self) -> u64 {
        self.lock().creations
    }

    /// The slot's current state.
    pub fn state(&self) -> TncState {
        self.lock().state
    }

    /// The UUID the slot holds (None when `Uninit`).
    pub fn uuid(&self) -> Option<[u8; 16]> {
        let s = self.lock();
        (s.state != TncState::Uninit).then_some(s.uuid)
    }

    /// References currently held on the slot (creator, reusers and waiters).
    pub fn users(&self) -> u64 {
        self.lock().users
    }

    /// Callers currently blocked waiting for a pending creator.
    pub fn waiters(&self) -> u64 {
        self.lock().waiters
    }
}
