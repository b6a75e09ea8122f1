//! The fault plan: faults the simulated device injects, each surfacing the way hardware would —
//! an allocation error, an error notification and aborted queue, a timeout, a corrupted entry —
//! never as a host panic.
//!
//! A plan is plain data, so a test states exactly what goes wrong; [`FaultPlan::from_seed`]
//! builds a random single-fault plan from a seed for stress tests, deterministically.

use nrt_hal::{DeviceAddr, DmaEngine, EngineKind, NcIndex, QueueId, QueueRef, Target};

use crate::rng::SplitMix64;

/// Faults to inject into one simulated device.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultPlan {
    /// Fail these allocations (1-based count of `mem_alloc` calls on the device) with
    /// out-of-memory.
    pub fail_allocations: Vec<u64>,
    /// Abort these DMA queues the first time they process a descriptor: the queue stops and an
    /// error entry (`DmaFault::Aborted`) is written.
    pub abort_queues: Vec<QueueRef>,
    /// These engines never retire: they stop at their `End` instruction without signalling, so
    /// the execution never completes and the runtime sees a timeout.
    pub hung_engines: Vec<(NcIndex, EngineKind)>,
    /// HBM bytes with an uncorrectable error: reading them faults the reading DMA or engine
    /// fetch with an `HbmUncorrectable` entry.
    pub hbm_uncorrectable: Vec<DeviceAddr>,
    /// Corrupt the N-th completion entry (1-based, device-wide): its kind byte is written as an
    /// invalid value, which the reader reports as a decode error.
    pub corrupt_completions: Vec<u64>,
}

impl FaultPlan {
    /// No faults.
    pub fn none() -> Self {
        FaultPlan::default()
    }

    /// Whether the plan injects nothing.
    pub fn is_empty(&self) -> bool {
        *self == FaultPlan::default()
    }

    /// A plan with exactly one fault, chosen and parameterised by `seed` (splitmix64), for the
    /// given target. The same seed always gives the same plan.
    pub fn from_seed(seed: u64, target: Target) -> Self {
        let mut rng = SplitMix64::new(seed);
        let spec = target.spec();
        let nc = NcIndex((rng.next_u64() % spec.nc_count as u64) as u32);
        let mut plan = FaultPlan::default();
        match rng.next_u64() % 5 {
            0 => plan.fail_allocations.push(1 + rng.next_u64() % 16),
            1 => plan.abort_queues.push(QueueRef::new(
                nc,
                DmaEngine((rng.next_u64() % spec.dma_engines_per_core as u64) as u32),
                QueueId((rng.next_u64() % spec.queues_per_engine as u64) as u32),
            )),
            2 => plan
                .hung_engines
                .push((nc, EngineKind::ALL[(rng.next_u64() % 5) as usize])),
            3 => {
                let ch = &spec.hbm[target.hbm_channel_of(nc) as usize];
                // Somewhere in the first 64 MiB of user memory of the channel.
                let off = (16 << 20) + rng.next_u64() % (64 << 20);
                plan.hbm_uncorrectable
                    .push(DeviceAddr::new(ch.base.raw() + off));
            }
            _ => plan.corrupt_completions.push(1 + rng.next_u64() % 8),
        }
        plan
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_plans_are_reproducible_and_single() {
        for seed in 0..64 {
            let a = FaultPlan::from_seed(seed, Target::Trn2);
            assert_eq!(a, FaultPlan::from_seed(seed, Target::Trn2));
            let n = a.fail_allocations.len()
                + a.abort_queues.len()
                + a.hung_engines.len()
                + a.hbm_uncorrectable.len()
                + a.corrupt_completions.len();
            assert_eq!(n, 1);
        }
        assert_ne!(
            FaultPlan::from_seed(1, Target::Trn1),
            FaultPlan::from_seed(2, Target::Trn1)
        );
    }
}
