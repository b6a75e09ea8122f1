//! The driver's per-device and per-core counters that its sysfs tree shows (docs/driver.md §13.3),
//! kept live by [`crate::EmulatedDriver`] from the simulators it answers for: memory in use per
//! category (from each simulator's allocator accounting), executions and their outcome, MACs and
//! the last execution's duration (from [`nrt_sim::Sim::core_activity`]), core-reset requests and
//! how many descriptors hold each device open.
//!
//! One device's counters are a flat array of `u64` words ([`DeviceCounters`]), so that the same
//! layout can live on the heap or in a file shared with other processes
//! ([`crate::registry`]) and be read back word by word ([`DeviceSnapshot`]). A *counter* is
//! three words with the driver's meaning (`neuron_sysfs_metrics.c`):
//!
//! | word | meaning |
//! |---|---|
//! | `total` | the current value (bytes in use; executions so far) |
//! | `present` | the size of the last change |
//! | `peak` | the largest `total` seen |

use std::sync::atomic::{AtomicU64, Ordering};

use nrt_hal::abi::MemAllocCategory as Cat;

/// Cores per device the layout has room for (`MAX_NC_PER_DEVICE`, docs/driver.md §11).
pub const MAX_CORES: usize = 8;

/// Words of one counter: `total`, `present`, `peak`.
const COUNTER_WORDS: usize = 3;

/// The device-memory categories of `neuron_coreK/stats/memory_usage/device_mem/`, in the
/// driver's order, with the allocation categories (`mem_alloc_category_t`) each one sums.
pub const DEVICE_MEM_CATEGORIES: [(&str, &[Cat]); 11] = [
    ("model_code", &[Cat::CodeDevice]),
    ("tensors", &[Cat::TensorsDevice]),
    ("constants", &[Cat::ConstantsDevice]),
    // The contiguous scratchpad is scratchpad placed differently (docs/driver.md §8.2): counted
    // here (inference; the driver's table has no node of its own for it).
    (
        "model_shared_scratchpad",
        &[Cat::ScratchpadDevice, Cat::ContiguousScratchpadDevice],
    ),
    ("runtime_memory", &[Cat::MiscDevice]),
    ("driver_memory", &[Cat::NcdevDevice]),
    ("collectives", &[Cat::CollectivesDevice]),
    ("nonshared_scratchpad", &[Cat::ScratchpadNonsharedDevice]),
    ("notifications", &[Cat::NotificationDevice]),
    ("dma_rings", &[Cat::DmaRingsDevice]),
    ("uncategorized", &[Cat::UnknownDevice]),
];

/// The host-memory categories of `neuronN/stats/memory_usage/host_mem/`, in the driver's order.
pub const HOST_MEM_CATEGORIES: [(&str, &[Cat]); 8] = [
    ("dma_buffers", &[Cat::CodeHost]),
    ("tensors", &[Cat::TensorsHost]),
    ("constants", &[Cat::ConstantsHost]),
    ("application_memory", &[Cat::MiscHost]),
    ("driver_memory", &[Cat::NcdevHost]),
    ("notifications", &[Cat::NotificationHost]),
    ("dma_rings", &[Cat::DmaRingsHost]),
    ("uncategorized", &[Cat::UnknownHost]),
];

/// The counters of `neuron_coreK/stats/status/`, one per execution outcome, in the driver's
/// order.
pub const STATUS: [&str; 24] = [
    "success",
    "failure",
    "timeout",
    "exec_bad_input",
    "hw_error",
    "execute_completed_with_error",
    "execute_completed_with_num_error",
    "generic_error",
    "resource_error",
    "resource_nc_error",
    "execute_failed_to_queue",
    "invalid_error",
    "unsupported_neff_version",
    "oob_error",
    "hw_collectives_error",
    "hw_hbm_ue_error",
    "hw_nc_ue_error",
    "hw_dma_abort_error",
    "execute_sw_nq_overflow",
    "execute_sw_semaphore_error",
    "execute_sw_event_error",
    "execute_sw_psum_collision",
    "execute_sw_sequencer_fatal",
    "hw_repairable_hbm_ue_error",
];

/// The counters of `neuron_coreK/stats/other_info/`, in the driver's order.
pub const OTHER_INFO: [&str; 6] = [
    "model_load_count",
    "reset_req_count",
    "reset_fail_count",
    "inference_count",
    "flop_count",
    "nc_time_in_use",
];

/// A counter of one core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoreCounter {
    /// `memory_usage/device_mem`: every device category together.
    DeviceMem,
    /// `memory_usage/device_mem/<DEVICE_MEM_CATEGORIES[i]>`.
    DeviceCategory(usize),
    /// `memory_usage/host_mem`: host memory allocated for this core.
    HostMem,
    /// `status/<STATUS[i]>`.
    Status(usize),
    /// `other_info/<OTHER_INFO[i]>`.
    Other(usize),
}

impl CoreCounter {
    /// Counter number within a core's block.
    fn slot(self) -> usize {
        match self {
            CoreCounter::DeviceMem => 0,
            CoreCounter::DeviceCategory(i) => 1 + i,
            CoreCounter::HostMem => 1 + DEVICE_MEM_CATEGORIES.len(),
            CoreCounter::Status(i) => 2 + DEVICE_MEM_CATEGORIES.len() + i,
            CoreCounter::Other(i) => 2 + DEVICE_MEM_CATEGORIES.len() + STATUS.len() + i,
        }
    }

    /// `status/<name>`'s counter.
    pub fn status(name: &str) -> Option<CoreCounter> {
        STATUS
            .iter()
            .position(|n| *n == name)
            .map(CoreCounter::Status)
    }

    /// `other_info/<name>`'s counter.
    pub fn other(name: &str) -> Option<CoreCounter> {
        OTHER_INFO
            .iter()
            .position(|n| *n == name)
            .map(CoreCounter::Other)
    }
}

const CORE_COUNTERS: usize = 2 + DEVICE_MEM_CATEGORIES.len() + STATUS.len() + OTHER_INFO.len();
const CORE_WORDS: usize = CORE_COUNTERS * COUNTER_WORDS;
/// Word 0: descriptors holding the device open (normal, not misc).
const ATTACHED: usize = 0;
const CORES_BASE: usize = 1;
const HOST_BASE: usize = CORES_BASE + MAX_CORES * CORE_WORDS;

/// Words of one device's counters.
pub const DEVICE_WORDS: usize = HOST_BASE + HOST_MEM_CATEGORIES.len() * COUNTER_WORDS;

fn core_word(core: usize, c: CoreCounter) -> usize {
    assert!(core < MAX_CORES, "core {core} beyond the counter layout");
    CORES_BASE + core * CORE_WORDS + c.slot() * COUNTER_WORDS
}

fn host_word(category: usize) -> usize {
    assert!(category < HOST_MEM_CATEGORIES.len());
    HOST_BASE + category * COUNTER_WORDS
}

/// One counter's three values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CounterValue {
    /// Current value.
    pub total: u64,
    /// Size of the last change.
    pub present: u64,
    /// Largest value seen.
    pub peak: u64,
}

/// One device's counters, updated in place with atomic stores (a reader in another process
/// may look at any time; each word is read whole, a counter's three words not necessarily
/// together).
#[repr(transparent)]
pub struct DeviceCounters {
    words: [AtomicU64; DEVICE_WORDS],
}

impl std::fmt::Debug for DeviceCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceCounters")
            .field("attached", &self.attached())
            .finish_non_exhaustive()
    }
}

impl Default for DeviceCounters {
    fn default() -> Self {
        DeviceCounters {
            words: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

impl DeviceCounters {
    /// Sets the counter at `word` to `value`: `present` becomes the size of the change and
    /// `peak` the largest value seen (nothing happens when the value is unchanged).
    fn set(&self, word: usize, value: u64) {
        let total = &self.words[word];
        let old = total.load(Ordering::Relaxed);
        if old == value {
            return;
        }
        total.store(value, Ordering::Relaxed);
        self.words[word + 1].store(value.abs_diff(old), Ordering::Relaxed);
        self.words[word + 2].fetch_max(value, Ordering::Relaxed);
    }

    /// Sets core `core`'s counter `c` (see [`DeviceCounters::set`]).
    pub fn set_core(&self, core: usize, c: CoreCounter, value: u64) {
        self.set(core_word(core, c), value);
    }

    /// Adds `delta` to core `core`'s counter `c`.
    pub fn add_core(&self, core: usize, c: CoreCounter, delta: u64) {
        let w = core_word(core, c);
        let v = self.words[w].load(Ordering::Relaxed).saturating_add(delta);
        self.set(w, v);
    }

    /// Sets the device's host-memory category `category` (index into [`HOST_MEM_CATEGORIES`]).
    pub fn set_host(&self, category: usize, value: u64) {
        self.set(host_word(category), value);
    }

    /// Records one more (`+1`) or one fewer (`-1`) descriptor holding the device open.
    pub fn attach(&self, delta: i64) {
        let w = &self.words[ATTACHED];
        if delta >= 0 {
            w.fetch_add(delta as u64, Ordering::Relaxed);
        } else {
            let _ = w.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
                Some(v.saturating_sub(delta.unsigned_abs()))
            });
        }
    }

    /// Descriptors holding the device open.
    pub fn attached(&self) -> u64 {
        self.words[ATTACHED].load(Ordering::Relaxed)
    }

    /// The words as they are now.
    pub fn snapshot(&self) -> DeviceSnapshot {
        DeviceSnapshot {
            words: self
                .words
                .iter()
                .map(|w| w.load(Ordering::Relaxed))
                .collect(),
        }
    }

    /// Counters over `words` words of memory that hold [`DEVICE_WORDS`]·n words in this layout
    /// (a file mapping shared with other processes, [`crate::registry`]).
    ///
    /// # Safety
    ///
    /// `ptr` is 8-byte aligned and valid for reads and writes of `n` · [`DEVICE_WORDS`] words
    /// for `'a`, accessed by this process only through the returned slice (other processes
    /// may read and write the words concurrently: they are only ever accessed atomically).
    pub unsafe fn from_raw<'a>(ptr: *mut u64, n: usize) -> &'a [DeviceCounters] {
        // SAFETY: `DeviceCounters` is `repr(transparent)` over `[AtomicU64; DEVICE_WORDS]`,
        // which has the size and alignment of `[u64; DEVICE_WORDS]`; the memory is valid and
        // only accessed atomically (the caller's contract).
        unsafe { std::slice::from_raw_parts(ptr.cast::<DeviceCounters>(), n) }
    }
}

/// One device's counters at one moment (or summed over several processes' devices).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSnapshot {
    words: Vec<u64>,
}

impl Default for DeviceSnapshot {
    fn default() -> Self {
        DeviceSnapshot {
            words: vec![0; DEVICE_WORDS],
        }
    }
}

impl DeviceSnapshot {
    /// A snapshot from [`DEVICE_WORDS`] words (as a file holds them); `None` for another length.
    pub fn from_words(words: &[u64]) -> Option<DeviceSnapshot> {
        (words.len() == DEVICE_WORDS).then(|| DeviceSnapshot {
            words: words.to_vec(),
        })
    }

    fn value(&self, w: usize) -> CounterValue {
        CounterValue {
            total: self.words[w],
            present: self.words[w + 1],
            peak: self.words[w + 2],
        }
    }

    /// Core `core`'s counter `c`.
    pub fn core(&self, core: usize, c: CoreCounter) -> CounterValue {
        self.value(core_word(core, c))
    }

    /// The device's host-memory category `category`.
    pub fn host(&self, category: usize) -> CounterValue {
        self.value(host_word(category))
    }

    /// Descriptors holding the device open.
    pub fn attached(&self) -> u64 {
        self.words[ATTACHED]
    }

    /// Adds `other` word by word: totals and peaks add up, `present` is the sum of the last
    /// changes (several processes' devices seen as one, docs/driver.md §13.3).
    pub fn add(&mut self, other: &DeviceSnapshot) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a = a.saturating_add(*b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_keeps_total_last_change_and_peak() {
        let c = DeviceCounters::default();
        let m = CoreCounter::DeviceMem;
        c.set_core(1, m, 4096);
        c.set_core(1, m, 12288);
        c.set_core(1, m, 4096);
        let v = c.snapshot().core(1, m);
        assert_eq!(
            v,
            CounterValue {
                total: 4096,
                present: 8192,
                peak: 12288
            }
        );
        // Unchanged: the last change stays what it was.
        c.set_core(1, m, 4096);
        assert_eq!(c.snapshot().core(1, m).present, 8192);
        assert_eq!(c.snapshot().core(0, m), CounterValue::default());
        c.add_core(0, CoreCounter::Other(3), 2);
        c.add_core(0, CoreCounter::Other(3), 3);
        assert_eq!(c.snapshot().core(0, CoreCounter::Other(3)).total, 5);
        assert_eq!(c.snapshot().core(0, CoreCounter::Other(3)).present, 3);
    }

    #[test]
    fn counters_do_not_overlap_and_snapshots_add() {
        let c = DeviceCounters::default();
        let mut seen = std::collections::BTreeSet::new();
        for core in 0..MAX_CORES {
            for i in 0..CORE_COUNTERS {
                let cc = match i {
                    0 => CoreCounter::DeviceMem,
                    i if i <= DEVICE_MEM_CATEGORIES.len() => CoreCounter::DeviceCategory(i - 1),
                    i if i == DEVICE_MEM_CATEGORIES.len() + 1 => CoreCounter::HostMem,
                    i if i < 2 + DEVICE_MEM_CATEGORIES.len() + STATUS.len() => {
                        CoreCounter::Status(i - 2 - DEVICE_MEM_CATEGORIES.len())
                    }
                    i => CoreCounter::Other(i - 2 - DEVICE_MEM_CATEGORIES.len() - STATUS.len()),
                };
                assert!(seen.insert(core_word(core, cc)));
                c.set_core(core, cc, (core * 1000 + i + 1) as u64);
            }
        }
        for h in 0..HOST_MEM_CATEGORIES.len() {
            assert!(seen.insert(host_word(h)));
            c.set_host(h, 7);
        }
        c.attach(2);
        c.attach(-1);
        let mut s = c.snapshot();
        s.add(&c.snapshot());
        assert_eq!(s.attached(), 2);
        assert_eq!(
            s.core(7, CoreCounter::Other(5)).total,
            2 * (7000 + CORE_COUNTERS as u64)
        );
        assert_eq!(s.host(7).total, 14);
        assert_eq!(
            CoreCounter::status("hw_error"),
            Some(CoreCounter::Status(4))
        );
        assert_eq!(
            CoreCounter::other("flop_count"),
            Some(CoreCounter::Other(4))
        );
    }
}
