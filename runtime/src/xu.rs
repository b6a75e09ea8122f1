//! The per-vcore execution unit (XU): the submit funnel and its lock-free, single-producer
//! completion ring (docs/runtime.md §4.2 "The Submit Funnel", docs/runtime.md §4.4 "The lock-free publish" / `xu_queue`,
//! with the status codes of docs/runtime.md §6 and checklist step 8 of docs/runtime.md §4.4).
//!
//! # What this module owns
//!
//! * The **funnel** ([`ExecutionUnit::submit`]): the one path every execution on a vcore goes
//!   through. Under the XU's submit lock it runs the gates, decides the model switch, runs the
//!   caller's stage + doorbell closure, and publishes the execution into the ring.
//! * The **ring** of `capacity` slots. Each slot holds the execution's sequence id, its compute
//!   index, its model handle and its completion state, all as atomics. Two cursors index it:
//!   `scheduled_tail` (producer: how many executions were ever published) and `exec_head`
//!   (consumer: how many were retired). Each sits on its own cache line (see
//!   [`ExecutionUnit::cursor_addresses`]) so the producer's increments do not invalidate the
//!   line the completion harvester polls.
//! * The **health** of the XU: a failed stage poisons it (fail-stop) until [`ExecutionUnit::reset`];
//!   [`ExecutionUnit::close`] shuts it down for good.
//!
//! It does not own staging, the doorbell or the completion engine: the first two are the
//! closure given to `submit`, the last calls [`ExecutionUnit::complete`] and
//! [`ExecutionUnit::retire`].
//!
//! # The funnel's gates, in the real runtime's order
//!
//! | gate | condition | status |
//! |---|---|---|
//! | 1 | the XU is poisoned (a stage failed) | [`NrtStatus::ExecUnitUnrecoverable`] (101) |
//! | 2 | `scheduled_tail - exec_head >= capacity` | [`NrtStatus::QueueFull`] (7) |
//! | 3 | the XU is closed | [`NrtStatus::Closed`] (14) |
//! | 4 | the 48-bit sequence space is spent (see [`SEQ_NUM_MAX`]) | [`NrtStatus::Resource`] (4) |
//!
//! Full is checked before closed, as in the real runtime. Then `model_switch` is
//! `last_posted_model != Some(model)`, the stage runs, and on success the slot is written and
//! published. A failing (or panicking) stage poisons the XU and nothing is published.
//!
//! # Sequence ids
//!
//! `seq_id = (tail & 0xFFFF_FFFF_FFFF) | (xu_id << 48)`, where `tail` is the ring position the
//! execution was published at. `tail` never wraps: like the real runtime's assertion, the funnel refuses
//! to publish once the tail after the increment would reach [`SEQ_NUM_MAX`].
//!
//! # Memory ordering
//!
//! * **Producer uniqueness.** Only `submit` writes slots and `scheduled_tail`, and it does so
//!   while holding the submit mutex: there is exactly one producer at a time, so the tail can be
//!   read, the slot written, and the tail advanced without a CAS.
//! * **Publish.** The producer writes a slot's fields with `Relaxed` stores and then advances
//!   `scheduled_tail` with a `Release` `fetch_add`. A consumer that loads the tail with
//!   `Acquire` and sees `t` therefore sees every slot below `t` fully written.
//! * **Completion.** The slot's `state` word carries the ring position in its upper 48 bits and
//!   a tag (pending, being written, or a status code) in its low 16 bits. `complete` flips
//!   `pending(pos)` to `done(pos, code)` with a `compare_exchange` (`AcqRel`), so a stale or
//!   duplicate completion for an older lap of the same slot can never match (no ABA: positions
//!   never repeat), and exactly one completion of an execution wins.
//! * **Retire.** `retire` loads the leading slot's state with `Acquire` (seeing the completion)
//!   and advances `exec_head` with a `compare_exchange` (`AcqRel`), so several harvesters may
//!   retire concurrently and each position is retired exactly once, in order.
//! * **Reuse.** The producer reads `exec_head` with `Acquire` in the queue-full gate. It only
//!   reuses the slot of position `p - capacity` once `exec_head > p - capacity`, i.e. after
//!   the `Release` that retired it; so every consumer read of that slot made before retiring it
//!   happens-before the producer's overwrite.
//! * **Consistent snapshots.** [`ExecutionUnit::entry`] reads several fields of a slot that a
//!   concurrent retire + submit might recycle. It is a seqlock read: the producer marks the
//!   slot "being written" for the new position, issues a `Release` fence, then writes the
//!   fields; the reader loads the state (`Acquire`), the fields, issues an `Acquire` fence and
//!   reloads the state. If any field read saw the new lap, the fences synchronise and the reload
//!   sees the new position, so the snapshot is discarded as retired.
//! * **Health flags** (`poisoned`, `closed`) are independent booleans, checked under the
//!   submit lock with `Acquire` and set with `Release`; they order nothing else.
//!
//! The submit path allocates nothing after [`ExecutionUnit::new`]: the ring is allocated once,
//! the stage is a generic closure, and only error messages build `String`s.
//!
//! The atomics, the fence and the submit mutex come from [`crate::sync`], so under
//! `--cfg loom` the ring is model-checked as it is (`runtime/tests/loom/xu.rs`); only APIs
//! loom also has are used.

use crate::error::{Error, Result};
use crate::status::NrtStatus;
use crate::sync::{fence, AtomicBool, AtomicU32, AtomicU64, Mutex, Ordering, PoisonError};

/// Bits of a sequence id that hold the ring position.
pub const SEQ_INDEX_MASK: u64 = 0xFFFF_FFFF_FFFF;

/// The real runtime's `NRTA_SEQ_NUM_MAX`: the tail after a publish must stay below this, so the last
/// position that can be published is `SEQ_NUM_MAX - 2`.
pub const SEQ_NUM_MAX: u64 = 0xFFFF_FFFF_FFFE;

/// The sequence id of ring position `index` on XU `xu_id`.
pub const fn seq_id(xu_id: u16, index: u64) -> u64 {
    (index & SEQ_INDEX_MASK) | ((xu_id as u64) << 48)
}

/// The XU id a sequence id was issued by (its top 16 bits).
pub const fn seq_xu_id(seq_id: u64) -> u16 {
    (seq_id >> 48) as u16
}

/// The ring position a sequence id names (its low 48 bits).
pub const fn seq_index(seq_id: u64) -> u64 {
    seq_id & SEQ_INDEX_MASK
}

/// Low-16-bit tag of a slot state: published, not yet completed.
const TAG_PENDING: u64 = 0xFFFF;
/// Low-16-bit tag of a slot state: the producer is rewriting the slot for this position.
const TAG_WRITING: u64 = 0xFFFE;
/// A state that names no position (initial slots).
const STATE_EMPTY: u64 = u64::MAX;

const fn state(pos: u64, tag: u64) -> u64 {
    (pos << 16) | tag
}
const fn state_pos(state: u64) -> u64 {
    state >> 16
}
const fn state_tag(state: u64) -> u64 {
    state & 0xFFFF
}

/// A value alone on its cache line(s). 128 bytes, like `crossbeam_utils::CachePadded` on
/// x86-64, where the adjacent-line prefetcher pairs 64-byte lines.
#[repr(C, align(128))]
struct CacheLine<T>(T);

/// One ring slot; every field is atomic so producer and consumers never race non-atomically.
struct Slot {
    seq_id: AtomicU64,
    compute_idx: AtomicU64,
    model: AtomicU32,
    /// `state(pos, tag)`; see the module docs.
    state: AtomicU64,
}

impl Slot {
    fn new() -> Self {
        Slot {
            seq_id: AtomicU64::new(0),
            compute_idx: AtomicU64::new(0),
            model: AtomicU32::new(0),
            state: AtomicU64::new(STATE_EMPTY),
        }
    }
}

/// What only the (single, lock-holding) producer touches.
struct Producer {
    /// The model of the last published execution; `None` before the first or after `reset`.
    last_posted_model: Option<u32>,
}

/// Where an execution is in its life on the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlotState {
    /// Published and not yet completed.
    Pending,
    /// Completed with this status, but not yet retired (an earlier execution is still pending).
    Completed(NrtStatus),
    /// Retired: below `exec_head`, its slot may already hold a later execution.
    Retired,
}

/// What a successful [`ExecutionUnit::submit`] published.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Submitted {
    /// `(position & 0xFFFF_FFFF_FFFF) | (xu_id << 48)`.
    pub seq_id: u64,
    /// Whether the stage was told this execution switches models.
    pub model_switch: bool,
    /// The compute index the stage returned.
    pub compute_idx: u64,
    /// The ring slot the execution occupies (`position % capacity`).
    pub slot_index: u32,
}

/// A consistent snapshot of one published, not yet retired execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    /// Its sequence id.
    pub seq_id: u64,
    /// The compute index its stage returned.
    pub compute_idx: u64,
    /// The model handle it was submitted for.
    pub model: u32,
    /// [`SlotState::Pending`] or [`SlotState::Completed`].
    pub state: SlotState,
}

/// Disarmed on a normal return; if the stage unwinds, poisons the XU on the way out.
struct PoisonOnUnwind<'a> {
    poisoned: &'a AtomicBool,
    armed: bool,
}

impl Drop for PoisonOnUnwind<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.poisoned.store(true, Ordering::Release);
        }
    }
}

/// A per-vcore execution unit: the submit funnel plus its single-producer completion ring.
///
/// `submit` may be called from any number of threads (the submit lock serialises them into
/// one producer); `complete`, `retire` and the queries may run concurrently on other threads.
pub struct ExecutionUnit {
    xu_id: u16,
    capacity: u32,
    /// The position the first execution was published at (0 unless `starting_at`).
    first_index: u64,
    /// Producer cursor: positions `< scheduled_tail` are published.
    scheduled_tail: CacheLine<AtomicU64>,
    /// Consumer cursor: positions `< exec_head` are retired.
    exec_head: CacheLine<AtomicU64>,
    poisoned: AtomicBool,
    closed: AtomicBool,
    /// The submit lock: holding it is what makes the producer single.
    producer: Mutex<Producer>,
    slots: Box<[Slot]>,
}

impl std::fmt::Debug for ExecutionUnit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExecutionUnit")
            .field("xu_id", &self.xu_id)
            .field("capacity", &self.capacity)
            .field("scheduled_tail", &self.scheduled_tail())
            .field("exec_head", &self.exec_head())
            .field("poisoned", &self.is_poisoned())
            .field("closed", &self.is_closed())
            .finish_non_exhaustive()
    }
}

impl ExecutionUnit {
    /// A healthy, open XU `xu_id` with an empty ring of `capacity` slots.
    ///
    /// # Panics
    ///
    /// If `capacity` is 0.
    pub fn new(xu_id: u16, capacity: u32) -> Self {
        Self::starting_at(xu_id, capacity, 0)
    }

    /// Like [`new`](Self::new), but the first execution is published at ring position
    /// `first_index` instead of 0 (both cursors start there). For resuming a numbering, and
    /// for exercising the end of the 48-bit sequence space.
    ///
    /// # Panics
    ///
    /// If `capacity` is 0 or `first_index >= SEQ_NUM_MAX`.
    pub fn starting_at(xu_id: u16, capacity: u32, first_index: u64) -> Self {
        assert!(capacity > 0, "an execution unit needs at least one slot");
        assert!(
            first_index < SEQ_NUM_MAX,
            "first index {first_index:#x} is past the sequence space"
        );
        ExecutionUnit {
            xu_id,
            capacity,
            first_index,
            scheduled_tail: CacheLine(AtomicU64::new(first_index)),
            exec_head: CacheLine(AtomicU64::new(first_index)),
            poisoned: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            producer: Mutex::new(Producer {
                last_posted_model: None,
            }),
            slots: (0..capacity).map(|_| Slot::new()).collect(),
        }
    }

    /// This XU's id (the top 16 bits of its sequence ids).
    pub fn xu_id(&self) -> u16 {
        self.xu_id
    }

    /// How many executions may be in flight (published, not retired) at once.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Addresses of the producer cursor (`scheduled_tail`) and the consumer cursor
    /// (`exec_head`), to check that they sit on different cache lines.
    pub fn cursor_addresses(&self) -> (usize, usize) {
        (
            &self.scheduled_tail.0 as *const AtomicU64 as usize,
            &self.exec_head.0 as *const AtomicU64 as usize,
        )
    }

    /// The producer cursor: the ring position the next execution will be published at.
    pub fn scheduled_tail(&self) -> u64 {
        self.scheduled_tail.0.load(Ordering::Acquire)
    }

    /// The consumer cursor: every position below it is retired.
    pub fn exec_head(&self) -> u64 {
        self.exec_head.0.load(Ordering::Acquire)
    }

    /// Executions published and not yet retired (`scheduled_tail - exec_head`).
    pub fn in_flight(&self) -> u64 {
        // Head first: the tail only grows, so a later tail load is never below this head.
        let head = self.exec_head.0.load(Ordering::Acquire);
        let tail = self.scheduled_tail.0.load(Ordering::Acquire);
        tail.saturating_sub(head)
    }

    /// Shut the XU down: every later submit that passes the poison and queue-full gates fails
    /// with [`NrtStatus::Closed`]. Executions already published still complete and retire.
    pub fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    /// Whether [`close`](Self::close) was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Mark the XU unrecoverable: every later submit fails with
    /// [`NrtStatus::ExecUnitUnrecoverable`] until [`reset`](Self::reset).
    pub fn poison(&self) {
        self.poisoned.store(true, Ordering::Release);
    }

    /// Whether the XU is poisoned (a stage failed, or [`poison`](Self::poison) was called).
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::Acquire)
    }

    /// Clear the poison, e.g. once the model has been reloaded. Takes the submit lock, and
    /// forgets the last posted model so the next submit is staged as a model switch (the
    /// failed stage may have left the device half-switched). Does not reopen a closed XU.
    pub fn reset(&self) {
        let mut producer = self.lock_producer();
        producer.last_posted_model = None;
        self.poisoned.store(false, Ordering::Release);
    }

    fn lock_producer(&self) -> impl std::ops::DerefMut<Target = Producer> + '_ {
        // A stage that panicked poisoned the XU itself (PoisonOnUnwind) and left the producer
        // state consistent (nothing is written before the stage returns), so the mutex's own
        // poisoning carries no extra information.
        self.producer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The submit funnel (docs/runtime.md §4.2): gate, decide the model switch, stage + doorbell, publish.
    ///
    /// `stage(model_switch)` stages the execution and rings its doorbell, returning the
    /// execution's compute index. It runs under the submit lock, at most once, and only if
    /// every gate passed. If it fails (or panics) the XU is poisoned, nothing is published, and
    /// its error is returned.
    ///
    /// # Errors
    ///
    /// [`NrtStatus::ExecUnitUnrecoverable`] if poisoned, [`NrtStatus::QueueFull`] if `capacity`
    /// executions are in flight, [`NrtStatus::Closed`] after [`close`](Self::close),
    /// [`NrtStatus::Resource`] once the sequence space is spent; or the stage's error.
    pub fn submit<F>(&self, model: u32, stage: F) -> Result<Submitted>
    where
        F: FnOnce(bool) -> Result<u64>,
    {
        let mut producer = self.lock_producer();

        // Gate 1: health.
        if self.poisoned.load(Ordering::Acquire) {
            return Err(Error::new(
                NrtStatus::ExecUnitUnrecoverable,
                format!(
                    "execution unit {} is unrecoverable after a failed submit; reset needed",
                    self.xu_id
                ),
            ));
        }
        // We are the only writer of the tail, so a relaxed load sees our own last store.
        let tail = self.scheduled_tail.0.load(Ordering::Relaxed);
        // Gate 2: capacity. Acquire pairs with retire's Release: the slot we may reuse has been
        // fully read by the harvester.
        let head = self.exec_head.0.load(Ordering::Acquire);
        if tail - head >= u64::from(self.capacity) {
            return Err(Error::new(
                NrtStatus::QueueFull,
                format!(
                    "execution unit {}: {} executions in flight (capacity {})",
                    self.xu_id,
                    tail - head,
                    self.capacity
                ),
            ));
        }
        // Gate 3: shutdown (after full, as in the real runtime).
        if self.closed.load(Ordering::Acquire) {
            return Err(Error::new(
                NrtStatus::Closed,
                format!("execution unit {} is closed", self.xu_id),
            ));
        }
        // Gate 4: the tail after this publish must stay below SEQ_NUM_MAX (never wraps).
        if tail + 1 >= SEQ_NUM_MAX {
            return Err(Error::new(
                NrtStatus::Resource,
                format!(
                    "execution unit {}: sequence space exhausted at position {tail:#x}",
                    self.xu_id
                ),
            ));
        }

        let model_switch = producer.last_posted_model != Some(model);

        let mut guard = PoisonOnUnwind {
            poisoned: &self.poisoned,
            armed: true,
        };
        let staged = stage(model_switch);
        guard.armed = false;
        drop(guard);
        let compute_idx = match staged {
            Ok(idx) => idx,
            Err(e) => {
                // Fail-stop: a half-staged or half-fired execution cannot be retried here.
                self.poisoned.store(true, Ordering::Release);
                return Err(e);
            }
        };

        producer.last_posted_model = Some(model);

        // Write the slot (seqlock-style: mark, fence, fields, state), then publish.
        let slot_index = (tail % u64::from(self.capacity)) as u32;
        let slot = &self.slots[slot_index as usize];
        let seq = seq_id(self.xu_id, tail);
        slot.state
            .store(state(tail, TAG_WRITING), Ordering::Relaxed);
        fence(Ordering::Release);
        slot.seq_id.store(seq, Ordering::Relaxed);
        slot.compute_idx.store(compute_idx, Ordering::Relaxed);
        slot.model.store(model, Ordering::Relaxed);
        slot.state
            .store(state(tail, TAG_PENDING), Ordering::Release);
        self.scheduled_tail.0.fetch_add(1, Ordering::Release);

        Ok(Submitted {
            seq_id: seq,
            model_switch,
            compute_idx,
            slot_index,
        })
    }

    /// The published, unretired position `seq_id` names, or why it does not name one.
    fn live_position(&self, seq_id: u64) -> std::result::Result<u64, &'static str> {
        if seq_xu_id(seq_id) != self.xu_id {
            return Err("was issued by another execution unit");
        }
        let pos = seq_index(seq_id);
        // Head before tail: the tail only grows, so [head, tail) is a valid window.
        let head = self.exec_head.0.load(Ordering::Acquire);
        if pos < head {
            return Err("is already retired");
        }
        let tail = self.scheduled_tail.0.load(Ordering::Acquire);
        if pos >= tail {
            return Err("was never published");
        }
        Ok(pos)
    }

    fn slot_of(&self, pos: u64) -> &Slot {
        &self.slots[(pos % u64::from(self.capacity)) as usize]
    }

    /// Record that execution `seq_id` finished with `status` (the completion engine's report).
    /// It stays in the ring until [`retire`](Self::retire) passes it.
    ///
    /// # Errors
    ///
    /// [`NrtStatus::Invalid`] if `seq_id` is from another XU, not published, already retired,
    /// or already completed.
    pub fn complete(&self, seq_id: u64, status: NrtStatus) -> Result<()> {
        let pos = self.live_position(seq_id).map_err(|why| {
            Error::invalid(format!(
                "execution unit {}: completion for seq id {seq_id:#x}, which {why}",
                self.xu_id
            ))
        })?;
        // A pending position cannot be retired under us (retire stops at pending slots), and
        // the position in the state word makes a stale lap unmatchable.
        let done = state(pos, u64::from(status.code()));
        self.slot_of(pos)
            .state
            .compare_exchange(
                state(pos, TAG_PENDING),
                done,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .map(|_| ())
            .map_err(|_| {
                Error::invalid(format!(
                    "execution unit {}: seq id {seq_id:#x} completed twice",
                    self.xu_id
                ))
            })
    }

    /// Advance `exec_head` over every leading completed execution, in order; returns how many
    /// were retired. Stops at the first pending one.
    pub fn retire(&self) -> usize {
        let mut retired = 0;
        let mut head = self.exec_head.0.load(Ordering::Acquire);
        loop {
            let tail = self.scheduled_tail.0.load(Ordering::Acquire);
            if head >= tail {
                return retired;
            }
            let st = self.slot_of(head).state.load(Ordering::Acquire);
            if state_pos(st) != head {
                // Another harvester retired `head` and the producer reused its slot.
                let now = self.exec_head.0.load(Ordering::Acquire);
                if now == head {
                    return retired; // unreachable in practice; stay conservative
                }
                head = now;
                continue;
            }
            let tag = state_tag(st);
            if tag == TAG_PENDING || tag == TAG_WRITING {
                return retired;
            }
            match self.exec_head.0.compare_exchange(
                head,
                head + 1,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => {
                    retired += 1;
                    head += 1;
                }
                Err(now) => head = now,
            }
        }
    }

    /// The sequence id of the last retired execution: every execution up to and including it
    /// has completed (the real runtime's `tpb_xu_get_last_completed`). `None` before the first
    /// retirement.
    pub fn last_completed(&self) -> Option<u64> {
        let head = self.exec_head.0.load(Ordering::Acquire);
        (head > self.first_index).then(|| seq_id(self.xu_id, head - 1))
    }

    /// Where execution `seq_id` is: `None` if it is from another XU or not yet published.
    pub fn status_of(&self, seq_id: u64) -> Option<SlotState> {
        if seq_xu_id(seq_id) != self.xu_id {
            return None;
        }
        let pos = seq_index(seq_id);
        let head = self.exec_head.0.load(Ordering::Acquire);
        if pos < head {
            return Some(SlotState::Retired);
        }
        let tail = self.scheduled_tail.0.load(Ordering::Acquire);
        if pos >= tail {
            return None;
        }
        let st = self.slot_of(pos).state.load(Ordering::Acquire);
        Some(Self::decode(pos, st))
    }

    fn decode(pos: u64, st: u64) -> SlotState {
        if state_pos(st) != pos {
            // Published (pos < tail) and its slot already holds a later lap: it was retired.
            return SlotState::Retired;
        }
        match state_tag(st) {
            TAG_PENDING | TAG_WRITING => SlotState::Pending,
            code => SlotState::Completed(
                NrtStatus::from_code(code as u32).unwrap_or(NrtStatus::Failure),
            ),
        }
    }

    /// A consistent snapshot of execution `seq_id`'s slot, if it is published and not retired.
    pub fn entry(&self, seq_id: u64) -> Option<Entry> {
        let pos = self.live_position(seq_id).ok()?;
        let slot = self.slot_of(pos);
        let before = slot.state.load(Ordering::Acquire);
        if state_pos(before) != pos {
            return None;
        }
        let seq = slot.seq_id.load(Ordering::Relaxed);
        let compute_idx = slot.compute_idx.load(Ordering::Relaxed);
        let model = slot.model.load(Ordering::Relaxed);
        fence(Ordering::Acquire);
        let after = slot.state.load(Ordering::Relaxed);
        if state_pos(after) != pos {
            return None; // recycled while we read
        }
        // `after` may have gained a completion since `before`; report the newer state.
        Some(Entry {
            seq_id: seq,
            compute_idx,
            model,
            state: Self::decode(pos, after),
        })
    }
}
