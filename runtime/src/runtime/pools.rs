//! The runtime's per-core pools that models take from at load and give back at unload
//! (docs/runtime.md §2.6): the free hardware DMA queues of each core and each core's shared
//! scratchpad, the one allocation every model's `virtual` vars live in. [`CorePools`] is the
//! [`CoreResources`] staging and unload are handed.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};

use nrt_hal::abi::MemAllocCategory;
use nrt_hal::hal::{AllocRequest, MemLocation};
use nrt_hal::target::reserved;
use nrt_hal::{DeviceAddr, Hal, MemHandle, NcIndex, Target};

use crate::error::{Error, Result};
use crate::model::core_model::CoreResources;
use crate::model::queue::IO_QUEUE;

/// The hardware queues a core can give models: every (engine, queue) except the exec queue,
/// the IO queue and the driver-reserved queues 14 and 15 (docs/driver.md §9.2).
pub fn queue_pool(target: Target) -> BTreeSet<(u32, u32)> {
    let s = target.spec();
    let mut pool = BTreeSet::new();
    for e in 0..s.dma_engines_per_core {
        for q in 0..s.queues_per_engine.min(14) {
            let reserved_pair = e == reserved::HW_EXEC_ENGINE.0
                && (q == reserved::HW_EXEC_QUEUE.0 || q == IO_QUEUE.0);
            if !reserved_pair {
                pool.insert((e, q));
            }
        }
    }
    pool
}

#[derive(Debug)]
struct Scratchpad {
    handle: MemHandle,
    pa: DeviceAddr,
    size: u64,
    users: u32,
}

#[derive(Debug)]
struct CoreState {
    queues: Mutex<BTreeSet<(u32, u32)>>,
    scratchpad: Mutex<Option<Scratchpad>>,
}

/// The queue pool and the shared scratchpad of every core of one device.
pub struct CorePools {
    hal: Arc<dyn Hal>,
    target: Target,
    /// The scratchpad's size is a multiple of this (`NEURON_SCRATCHPAD_PAGE_SIZE`, at least 4 KiB).
    page: u64,
    cores: Vec<CoreState>,
}

impl std::fmt::Debug for CorePools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CorePools")
            .field("target", &self.target)
            .field("cores", &self.cores)
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl CorePools {
    /// Full pools for `nc_count` cores of `target`, no scratchpad yet; scratchpads are sized in
    /// multiples of `scratchpad_page_size` (at least 4 KiB).
    pub fn new(
        hal: Arc<dyn Hal>,
        target: Target,
        nc_count: u32,
        scratchpad_page_size: u64,
    ) -> Self {
        CorePools {
            hal,
            target,
            page: scratchpad_page_size.max(4096),
            cores: (0..nc_count)
                .map(|_| CoreState {
                    queues: Mutex::new(queue_pool(target)),
                    scratchpad: Mutex::new(None),
                })
                .collect(),
        }
    }
}

impl CoreResources for CorePools {
    fn take_queues(&self, nc: NcIndex, n: usize) -> Result<Vec<(u32, u32)>> {
        let mut pool = lock(&self.cores[nc.index()].queues);
        if pool.len() < n {
            return Err(Error::resource(format!(
                "{nc} has {} free DMA queues, {n} needed",
                pool.len()
            )));
        }
        // Spread the set over the DMA engines, as the hardware spreads a queue set's queues:
        // each round takes the lowest free queue of every engine that has one, in engine order.
        let mut taken = Vec::with_capacity(n);
        while taken.len() < n {
            let mut round: Vec<(u32, u32)> = Vec::new();
            for &(e, q) in pool.iter() {
                if round.last().is_none_or(|&(le, _)| le != e) {
                    round.push((e, q));
                }
            }
            for t in round.into_iter().take(n - taken.len()) {
                pool.remove(&t);
                taken.push(t);
            }
        }
        Ok(taken)
    }

    fn return_queues(&self, nc: NcIndex, queues: &[(u32, u32)]) {
        lock(&self.cores[nc.index()].queues).extend(queues.iter().copied());
    }

    fn acquire_scratchpad(&self, nc: NcIndex, need: u64) -> Result<DeviceAddr> {
        let mut sp = lock(&self.cores[nc.index()].scratchpad);
        if let Some(s) = sp.as_mut() {
            if s.size >= need {
                s.users += 1;
                return Ok(s.pa);
            }
            if s.users > 0 {
                return Err(Error::resource(format!(
                    "the shared scratchpad of {nc} is {} bytes and in use; this model needs {need}",
                    s.size
                )));
            }
            let _ = self.hal.mem_free(s.handle);
            *sp = None;
        }
        let size = need.div_ceil(self.page).saturating_mul(self.page);
        let handle = self.hal.mem_alloc(&AllocRequest {
            size,
            align: 0,
            location: MemLocation::Device {
                channel: self.target.hbm_channel_of(nc),
            },
            nc,
            category: MemAllocCategory::ScratchpadDevice,
        })?;
        let pa = match self.hal.mem_info(handle) {
            Ok(i) => i.pa,
            Err(e) => {
                let _ = self.hal.mem_free(handle);
                return Err(e.into());
            }
        };
        *sp = Some(Scratchpad {
            handle,
            pa,
            size,
            users: 1,
        });
        Ok(pa)
    }

    fn release_scratchpad(&self, nc: NcIndex) {
        let mut sp = lock(&self.cores[nc.index()].scratchpad);
        if let Some(s) = sp.as_mut() {
            s.users = s.users.saturating_sub(1);
            if s.users == 0 {
                let _ = self.hal.mem_free(s.handle);
                *sp = None;
            }
        }
    }
}
