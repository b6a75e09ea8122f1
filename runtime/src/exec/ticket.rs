//! The `compute_req_lock` and its dense `compute_idx` ticket (docs/runtime.md §4.3).
//!
//! # What this module owns
//!
//! * [`ComputeReqLock`]: one physical core's lock, guarding the core's execution state (created
//!   at the core's first execution) and its ticket counter, `compute_idx_tail`.
//! * [`ComputeReqGuard::issue`]: stage one execution and issue its ticket. The ticket is the
//!   tail before the stage; the tail advances only if the stage succeeds, so the tickets of a
//!   core are dense (`0, 1, 2, …` with no gap and no repeat) however many threads contend, and
//!   a ticket always names an execution that is fully staged.
//! * [`stage_lockstep`]: one execution of a logical core: take the locks of its cores in
//!   order (the first core's lock is the `compute_req_lock` of the vcore), stage every core,
//!   release the locks, and only then ring each core's doorbell. The vcore's ticket is its
//!   first core's.
//!
//! It knows nothing of the device: what "create", "stage" and "doorbell" do is the caller's
//! ([`super::CoreExec`] and the HAL). The lock comes from [`crate::sync`], so this module is
//! model-checked with loom as it is (`runtime/tests/loom/exec.rs`).

use crate::sync::{Mutex, MutexGuard, PoisonError};

/// The most cores a logical core has (LNC=2).
pub const MAX_VCORE: usize = 2;

struct Core<T> {
    /// The next ticket: how many executions were staged on this core since its state was
    /// created.
    compute_idx_tail: u64,
    /// The core's execution state; `None` before its first execution and after a reset.
    state: Option<T>,
}

/// One physical core's `compute_req_lock`, with the state it guards and its ticket counter.
pub struct ComputeReqLock<T> {
    core: Mutex<Core<T>>,
}

impl<T> Default for ComputeReqLock<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for ComputeReqLock<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let g = self.lock();
        f.debug_struct("ComputeReqLock")
            .field("compute_idx_tail", &g.compute_idx_tail())
            .field("state", g.state())
            .finish()
    }
}

/// The held `compute_req_lock` of one core.
pub struct ComputeReqGuard<'a, T> {
    core: MutexGuard<'a, Core<T>>,
}

impl<T> ComputeReqLock<T> {
    /// A core with no execution state yet; its first ticket will be 0.
    pub fn new() -> Self {
        ComputeReqLock {
            core: Mutex::new(Core {
                compute_idx_tail: 0,
                state: None,
            }),
        }
    }

    /// Takes the lock. A stage that panicked issued no ticket (the tail advances only after a
    /// successful stage), so the mutex's poisoning carries no information and is ignored.
    pub fn lock(&self) -> ComputeReqGuard<'_, T> {
        ComputeReqGuard {
            core: self.core.lock().unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// Removes the core's execution state and restarts its tickets at 0, for a core being
    /// reset (whose completion counter restarts at 0 too). Returns the state to release.
    pub fn reset(&self) -> Option<T> {
        let mut g = self.lock();
        g.core.compute_idx_tail = 0;
        g.core.state.take()
    }
}

impl<T> ComputeReqGuard<'_, T> {
    /// Tickets issued so far: the ticket the next successful stage will get.
    pub fn compute_idx_tail(&self) -> u64 {
        self.core.compute_idx_tail
    }

    /// The core's execution state, if it has been created.
    pub fn state(&self) -> &Option<T> {
        &self.core.state
    }

    /// The core's execution state, mutably, if it has been created.
    pub fn state_mut(&mut self) -> Option<&mut T> {
        self.core.state.as_mut()
    }

    /// Stages one execution and issues its ticket: creates the core's state with `create` if
    /// this is its first execution, runs `stage(ticket, state)`, and on success advances the
    /// tail and returns the ticket. On failure nothing is issued (the next stage gets the same
    /// ticket) and the error is returned.
    ///
    /// # Errors
    ///
    /// Whatever `create` or `stage` returns.
    pub fn issue<E>(
        &mut self,
        create: impl FnOnce() -> Result<T, E>,
        stage: impl FnOnce(u64, &mut T) -> Result<(), E>,
    ) -> Result<u64, E> {
        let core = &mut *self.core;
        let state = match &mut core.state {
            Some(state) => state,
            empty => empty.insert(create()?),
        };
        let ticket = core.compute_idx_tail;
        stage(ticket, state)?;
        core.compute_idx_tail = ticket + 1;
        Ok(ticket)
    }
}

/// Stages one execution on the cores of a logical core in lockstep, then rings their
/// doorbells; returns each core's ticket (entries past the number of cores are 0).
///
/// The locks of `cores` (at most [`MAX_VCORE`] are used) are taken in order and all held
/// while staging, so two executions of the vcore stage atomically with respect to each other
/// and every core sees them in the same order. The doorbells are rung only after every core
/// staged and every lock was released: a doorbell never precedes its execution's stage, and a
/// failed stage rings none. `create`, `stage` and `doorbell` get the core's position in
/// `cores`.
///
/// # Errors
///
/// The first error of `create`, `stage` or `doorbell`; the cores staged before a failing one
/// keep their tickets (the execution unit poisons itself, see [`crate::xu`]).
pub fn stage_lockstep<'a, T: 'a, E>(
    cores: impl IntoIterator<Item = &'a ComputeReqLock<T>>,
    mut create: impl FnMut(usize) -> Result<T, E>,
    mut stage: impl FnMut(usize, u64, &mut T) -> Result<(), E>,
    mut doorbell: impl FnMut(usize) -> Result<(), E>,
) -> Result<[u64; MAX_VCORE], E> {
    let mut guards: [Option<ComputeReqGuard<'a, T>>; MAX_VCORE] = [None, None];
    let mut n = 0;
    for (g, core) in guards.iter_mut().zip(cores) {
        *g = Some(core.lock());
        n += 1;
    }
    let mut tickets = [0; MAX_VCORE];
    for (i, g) in guards.iter_mut().enumerate() {
        if let Some(g) = g {
            tickets[i] = g.issue(|| create(i), |ticket, state| stage(i, ticket, state))?;
        }
    }
    drop(guards);
    for i in 0..n {
        doorbell(i)?;
    }
    Ok(tickets)
}
