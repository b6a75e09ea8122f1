//! The dynamic-ring cache of a model's dynamic queue (docs/runtime.md §3.2: the dynamic ring
//! build with its PA-keyed LRU cache). A queue whose descriptors touch the caller's input or
//! output tensors is resolved per execution against those tensors' physical addresses; each
//! resolution is one ring pair plus a page of register words (`drbp_low/high`, `drl` of each
//! ring, laid out as [`words`] says) that the execution's IO-queue swap descriptors copy into
//! the queue's registers before rewinding it.
//!
//! This module owns the cached state and its policy — entries keyed by the IO addresses, least
//! recently used evicted once no in-flight execution may still use it. Building an entry on a
//! miss is the execute path's (`crate::exec::dynring`), which hands [`Cache::get`] the builder.

use nrt_hal::{DeviceAddr, Hal, MemHandle};

use crate::error::Result;

/// Cached rings per dynamic queue before the least recently used is evicted.
pub const CACHE_ENTRIES: usize = 8;
/// Most IO vars one dynamic queue may reference (the cache key is a fixed array).
pub const MAX_KEY: usize = 16;

/// Byte offsets of the register words in an entry's word page.
pub mod words {
    /// TX ring base, low 32 bits.
    pub const TX_BASE_LO: u64 = 0;
    /// TX ring base, high 32 bits.
    pub const TX_BASE_HI: u64 = 4;
    /// RX ring base, low 32 bits.
    pub const RX_BASE_LO: u64 = 8;
    /// RX ring base, high 32 bits.
    pub const RX_BASE_HI: u64 = 12;
    /// Ring length (both rings).
    pub const LEN: u64 = 16;
}

/// One cached resolution.
#[derive(Debug)]
pub struct Entry {
    key: [u64; MAX_KEY],
    key_len: usize,
    tx: MemHandle,
    rx: MemHandle,
    words: MemHandle,
    /// Device address of the word page.
    pub words_pa: DeviceAddr,
    last_use: u64,
    /// Per-core execution index of the last execution that used it.
    pub last_exec: u64,
}

impl Entry {
    /// A resolution for the IO addresses `key` (at most [`MAX_KEY`]): its TX and RX rings and
    /// its word page `words` at `words_pa`.
    pub fn new(
        key: &[u64],
        tx: MemHandle,
        rx: MemHandle,
        words: MemHandle,
        words_pa: DeviceAddr,
    ) -> Entry {
        let mut k = [0u64; MAX_KEY];
        k[..key.len()].copy_from_slice(key);
        Entry {
            key: k,
            key_len: key.len(),
            tx,
            rx,
            words,
            words_pa,
            last_use: 0,
            last_exec: 0,
        }
    }

    fn free(&self, hal: &dyn Hal) {
        let _ = hal.mem_free(self.tx);
        let _ = hal.mem_free(self.rx);
        let _ = hal.mem_free(self.words);
    }
}

/// The LRU cache of one dynamic queue.
#[derive(Debug, Default)]
pub struct Cache {
    entries: Vec<Entry>,
    clock: u64,
    /// Misses so far (rings built).
    pub builds: u64,
}

impl Cache {
    /// A cache with room for [`CACHE_ENTRIES`] entries (reserved up front).
    pub fn new() -> Self {
        Cache {
            entries: Vec::with_capacity(CACHE_ENTRIES + 1),
            clock: 0,
            builds: 0,
        }
    }

    /// Whether [`Cache::get`] of `key` would miss with a full cache and find no entry to evict
    /// when `completed` executions have retired: the caller then reads a fresher count.
    pub fn needs_eviction(&self, key: &[u64], completed: u64) -> bool {
        self.entries.len() >= CACHE_ENTRIES
            && !self.entries.iter().any(|e| &e.key[..e.key_len] == key)
            && !self.entries.iter().any(|e| e.last_exec < completed)
    }

    /// The entry for the IO addresses `key`, used by execution `exec_index`; on a miss, `build`
    /// makes it. `completed` is the core's count of retired executions: only entries no
    /// in-flight execution may still use are evicted.
    pub fn get(
        &mut self,
        hal: &dyn Hal,
        key: &[u64],
        exec_index: u64,
        completed: u64,
        build: impl FnOnce() -> Result<Entry>,
    ) -> Result<&Entry> {
        self.clock += 1;
        let clock = self.clock;
        if let Some(i) = self.entries.iter().position(|e| &e.key[..e.key_len] == key) {
            let e = &mut self.entries[i];
            e.last_use = clock;
            e.last_exec = exec_index;
            return Ok(&self.entries[i]);
        }
        if self.entries.len() >= CACHE_ENTRIES {
            if let Some(i) = self
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.last_exec < completed)
                .min_by_key(|(_, e)| e.last_use)
                .map(|(i, _)| i)
            {
                let e = self.entries.swap_remove(i);
                e.free(hal);
            }
        }
        let entry = build()?;
        self.builds += 1;
        self.entries.push(Entry {
            last_use: clock,
            last_exec: exec_index,
            ..entry
        });
        Ok(self.entries.last().expect("just pushed"))
    }

    /// Frees every entry.
    pub fn release(&mut self, hal: &dyn Hal) {
        for e in self.entries.drain(..) {
            e.free(hal);
        }
    }
}
