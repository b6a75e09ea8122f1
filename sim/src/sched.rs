//! The discrete-event scheduler: a min-heap of unit wake-ups keyed by
//! (time, core, unit) — a stable key, so ties never depend on insertion order or host threads.
//!
//! Every unit (a core's sequencer, each of its five engines, each of its DMA engines) has at most
//! one pending wake-up. Scheduling a unit that is already pending keeps the earlier time; a
//! woken unit re-examines its own state, so a later request is never lost.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

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
}

impl Unit {
    /// Dense index of the unit within its core.
    fn slot(self) -> usize {
        match self {
            Unit::Sequencer => 0,
            Unit::Engine(e) => 1 + e.index(),
            Unit::Dma(d) => 6 + d as usize,
        }
    }
}

/// Units per core: sequencer, 5 engines, 16 DMA engines.
const UNITS_PER_CORE: usize = 6 + 16;

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

/// The event heap.
#[derive(Debug)]
pub(crate) struct Scheduler {
    heap: BinaryHeap<Reverse<Wake>>,
    pending: Vec<Option<u64>>,
    /// The first core of the clock domain this scheduler serves.
    base: u32,
}

impl Scheduler {
    /// A scheduler for the `cores` cores from core `base` on (one clock domain).
    pub fn new(base: u32, cores: u32) -> Self {
        Scheduler {
            heap: BinaryHeap::new(),
            pending: vec![None; cores as usize * UNITS_PER_CORE],
            base,
        }
    }

    fn slot(&self, nc: u32, unit: Unit) -> usize {
        (nc - self.base) as usize * UNITS_PER_CORE + unit.slot()
    }

    /// Wakes `unit` of core `nc` at `time`, unless it already has an earlier or equal wake-up.
    pub fn schedule(&mut self, time: u64, nc: u32, unit: Unit) {
        let s = self.slot(nc, unit);
        match self.pending[s] {
            Some(t) if t <= time => {}
            _ => {
                self.pending[s] = Some(time);
                self.heap.push(Reverse(Wake { time, nc, unit }));
            }
        }
    }

    /// The earliest live wake-up, without removing it.
    pub fn peek(&mut self) -> Option<Wake> {
        while let Some(Reverse(w)) = self.heap.peek() {
            if self.pending[self.slot(w.nc, w.unit)] == Some(w.time) {
                return Some(*w);
            }
            self.heap.pop();
        }
        None
    }

    /// Removes and returns the earliest live wake-up (stale entries, superseded by an earlier
    /// reschedule or cancelled, are skipped).
    pub fn pop(&mut self) -> Option<Wake> {
        while let Some(Reverse(w)) = self.heap.pop() {
            let s = self.slot(w.nc, w.unit);
            if self.pending[s] == Some(w.time) {
                self.pending[s] = None;
                return Some(w);
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
}
