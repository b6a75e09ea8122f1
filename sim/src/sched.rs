//! The discrete-event scheduler: a priority queue of unit wake-ups keyed by
//! (time, core, unit) — a stable key, so ties never depend on insertion order or host threads.
//!
//! Every unit (a core's sequencer, each of its five engines, each of its DMA engines) has at most
//! one pending wake-up. Scheduling a unit that is already pending keeps the earlier time; a
//! woken unit re-examines its own state, so a later request is never lost.

use nrt_hal::EngineKind;

/// A schedulable unit of one core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Unit {
    /// The TPB sequencer.
    Sequencer,
    /// A compute engine.
    Engine(EngineKind),
    /// A DMA engine (local index).
    Dma(u32),
    /// The DMAs the core's engines issue themselves ([`crate::dge`]).
    Dge,
}

impl Unit {
    /// Dense index of the unit within its core; its order is the order of `Unit` itself.
    fn slot(self) -> usize {
        match self {
            Unit::Sequencer => 0,
            Unit::Engine(e) => 1 + e.index(),
            Unit::Dma(d) => 6 + d as usize,
            Unit::Dge => DGE_SLOT,
        }
    }

    /// The unit of dense index `slot` (the inverse of [`Unit::slot`]).
    fn from_slot(slot: usize) -> Unit {
        match slot {
            0 => Unit::Sequencer,
            1..=5 => Unit::Engine(EngineKind::ALL[slot - 1]),
            DGE_SLOT => Unit::Dge,
            _ => Unit::Dma((slot - 6) as u32),
        }
    }
}

/// The slot of [`Unit::Dge`]: after the sequencer, 5 engines and 16 DMA engines.
const DGE_SLOT: usize = 6 + 16;

/// Units per core: sequencer, 5 engines, 16 DMA engines, the engine-issued DMAs.
const UNITS_PER_CORE: usize = DGE_SLOT + 1;

/// One pending wake-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Wake {
    /// Device cycle.
    pub time: u64,
    /// Core index.
    pub nc: u32,
    /// Unit.
    pub unit: Unit,
}

/// The event queue.
///
/// Entries are packed keys, `time << 64 | slot`, where `slot` is the unit's dense index in the
/// domain (core-major, then [`Unit::slot`]): a key sorts exactly as its (time, core, unit) does,
/// and compares as one integer. `pending` holds each slot's live wake-up time.
///
/// The queue is a vector sorted in *descending* key order, the earliest wake-up last: a domain
/// has a handful of entries pending at a time (two DMA engines taking turns keep two), so an
/// insertion moves a few keys from the end and a pop is `Vec::pop`, cheaper than a binary
/// heap's sifts at these sizes.
#[derive(Debug)]
pub(crate) struct Scheduler {
    queue: Vec<u128>,
    pending: Vec<Option<u64>>,
    /// The first core of the clock domain this scheduler serves.
    base: u32,
}

impl Scheduler {
    /// A scheduler for the `cores` cores from core `base` on (one clock domain).
    pub fn new(base: u32, cores: u32) -> Self {
        Scheduler {
            queue: Vec::new(),
            pending: vec![None; cores as usize * UNITS_PER_CORE],
            base,
        }
    }

    #[inline]
    fn slot(&self, nc: u32, unit: Unit) -> usize {
        (nc - self.base) as usize * UNITS_PER_CORE + unit.slot()
    }

    #[inline]
    fn key(time: u64, slot: usize) -> u128 {
        (u128::from(time) << 64) | slot as u128
    }

    /// The wake-up a key stands for.
    fn wake(&self, key: u128) -> Wake {
        let slot = key as u64 as usize;
        Wake {
            time: (key >> 64) as u64,
            nc: self.base + (slot / UNITS_PER_CORE) as u32,
            unit: Unit::from_slot(slot % UNITS_PER_CORE),
        }
    }

    /// Whether `key` is its slot's live wake-up (not superseded or cancelled).
    #[inline]
    fn live(&self, key: u128) -> bool {
        self.pending[key as u64 as usize] == Some((key >> 64) as u64)
    }

    /// Wakes `unit` of core `nc` at `time`, unless it already has an earlier or equal wake-up.
    pub fn schedule(&mut self, time: u64, nc: u32, unit: Unit) {
        let s = self.slot(nc, unit);
        match self.pending[s] {
            Some(t) if t <= time => {}
            _ => {
                self.pending[s] = Some(time);
                self.insert(Self::key(time, s));
            }
        }
    }

    /// Inserts `key`, keeping the queue sorted (descending, earliest last).
    #[inline]
    fn insert(&mut self, key: u128) {
        // A new wake-up is mostly among the earliest: push it at that end and move it up past
        // the few earlier ones.
        self.queue.push(key);
        let q = &mut self.queue[..];
        let mut i = q.len() - 1;
        while i > 0 && q[i - 1] < key {
            q[i] = q[i - 1];
            i -= 1;
        }
        q[i] = key;
    }

    /// The key of the earliest live wake-up, dropping stale entries before it.
    #[inline]
    fn peek_key(&mut self) -> Option<u128> {
        while let Some(&k) = self.queue.last() {
            if self.live(k) {
                return Some(k);
            }
            self.queue.pop();
        }
        None
    }

    /// The earliest live wake-up, without removing it.
    #[cfg(test)]
    pub fn peek(&mut self) -> Option<Wake> {
        self.peek_key().map(|k| self.wake(k))
    }

    /// Whether any live wake-up is pending.
    pub fn has_pending(&mut self) -> bool {
        self.peek_key().is_some()
    }

    /// Whether a wake-up of `unit` of core `nc` at `time` would sort before every live one
    /// (true when none is pending).
    #[inline]
    pub fn runs_before(&mut self, time: u64, nc: u32, unit: Unit) -> bool {
        let k = Self::key(time, self.slot(nc, unit));
        self.peek_key().is_none_or(|p| k < p)
    }

    /// Removes and returns the earliest live wake-up (stale entries, superseded by an earlier
    /// reschedule or cancelled, are skipped).
    pub fn pop(&mut self) -> Option<Wake> {
        while let Some(k) = self.queue.pop() {
            if self.live(k) {
                self.pending[k as u64 as usize] = None;
                return Some(self.wake(k));
            }
        }
        None
    }

    /// Cancels every wake-up of core `nc` (core reset).
    pub fn cancel_core(&mut self, nc: u32) {
        let base = (nc - self.base) as usize * UNITS_PER_CORE;
        for p in &mut self.pending[base..base + UNITS_PER_CORE] {
            *p = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_time_then_core_then_unit() {
        let mut s = Scheduler::new(0, 2);
        s.schedule(10, 1, Unit::Sequencer);
        s.schedule(10, 0, Unit::Dma(3));
        s.schedule(10, 0, Unit::Engine(EngineKind::Act));
        s.schedule(5, 1, Unit::Dma(0));
        let order: Vec<_> = std::iter::from_fn(|| s.pop()).collect();
        assert_eq!(
            order,
            vec![
                Wake {
                    time: 5,
                    nc: 1,
                    unit: Unit::Dma(0)
                },
                Wake {
                    time: 10,
                    nc: 0,
                    unit: Unit::Engine(EngineKind::Act)
                },
                Wake {
                    time: 10,
                    nc: 0,
                    unit: Unit::Dma(3)
                },
                Wake {
                    time: 10,
                    nc: 1,
                    unit: Unit::Sequencer
                },
            ]
        );
    }

    #[test]
    fn one_pending_wake_per_unit_keeps_the_earliest() {
        let mut s = Scheduler::new(0, 1);
        s.schedule(10, 0, Unit::Sequencer);
        s.schedule(20, 0, Unit::Sequencer);
        s.schedule(7, 0, Unit::Sequencer);
        assert_eq!(s.pop().map(|w| w.time), Some(7));
        assert!(s.pop().is_none());
        assert!(s.peek().is_none());
        s.schedule(3, 0, Unit::Dma(1));
        s.cancel_core(0);
        assert!(s.peek().is_none());
    }

    /// Every unit of a core: its sequencer, its engines and 16 DMA engines.
    fn all_units() -> Vec<Unit> {
        std::iter::once(Unit::Sequencer)
            .chain(EngineKind::ALL.into_iter().map(Unit::Engine))
            .chain((0..16).map(Unit::Dma))
            .collect()
    }

    #[test]
    fn keys_sort_as_wakes_do() {
        let units = all_units();
        let s = Scheduler::new(2, 2);
        let mut wakes = Vec::new();
        for time in [0, 1, u64::MAX] {
            for nc in [2, 3] {
                for &unit in &units {
                    assert_eq!(Unit::from_slot(unit.slot()), unit);
                    wakes.push(Wake { time, nc, unit });
                }
            }
        }
        for a in &wakes {
            let ka = Scheduler::key(a.time, s.slot(a.nc, a.unit));
            assert_eq!(s.wake(ka), *a);
            for b in &wakes {
                let kb = Scheduler::key(b.time, s.slot(b.nc, b.unit));
                assert_eq!(ka.cmp(&kb), a.cmp(b));
            }
        }
    }

    #[test]
    fn pops_the_earliest_pending_wake_of_a_reference_model() {
        // Random schedules, pops and core cancels against the plain definition: each unit's
        // earliest requested time since it last ran, popped in (time, core, unit) order.
        let units = all_units();
        let mut rng = crate::rng::SplitMix64::new(7);
        let mut s = Scheduler::new(1, 3);
        let mut model: std::collections::BTreeMap<(u32, Unit), u64> = Default::default();
        let mut now = 0;
        for _ in 0..20_000 {
            match rng.below(10) {
                0..=5 => {
                    let nc = 1 + rng.below(3) as u32;
                    let unit = units[rng.below(units.len() as u64) as usize];
                    let time = now + rng.below(50);
                    s.schedule(time, nc, unit);
                    let t = model.entry((nc, unit)).or_insert(time);
                    *t = (*t).min(time);
                }
                6..=8 => {
                    let want = model
                        .iter()
                        .map(|(&(nc, unit), &time)| Wake { time, nc, unit })
                        .min();
                    if let Some(w) = want {
                        model.remove(&(w.nc, w.unit));
                        now = w.time;
                    }
                    assert_eq!(s.pop(), want);
                }
                _ => {
                    let nc = 1 + rng.below(3) as u32;
                    s.cancel_core(nc);
                    model.retain(|&(n, _), _| n != nc);
                }
            }
        }
    }

    #[test]
    fn runs_before_compares_with_the_earliest_live_wake() {
        let mut s = Scheduler::new(0, 2);
        assert!(s.runs_before(100, 1, Unit::Dma(0)));
        s.schedule(10, 0, Unit::Dma(1));
        assert!(s.runs_before(10, 0, Unit::Dma(0)));
        assert!(!s.runs_before(10, 0, Unit::Dma(1)));
        assert!(!s.runs_before(10, 1, Unit::Sequencer));
        assert!(s.runs_before(9, 1, Unit::Sequencer));
    }
}
