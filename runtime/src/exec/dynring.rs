//! Dynamic rings: a model queue whose descriptors touch the caller's input or output tensors is
//! resolved per execution against those tensors' physical addresses (docs/runtime.md §3.2: the dynamic
//! ring build with its PA-keyed LRU cache). An entry is one ring pair plus a page of register
//! words (`drbp_low/high`, `drl` of each ring) that the execution's IO-queue swap descriptors
//! copy into the queue's registers before rewinding it.

use nrt_hal::abi::MemAllocCategory;
use nrt_hal::hal::{AllocRequest, MemLocation};
use nrt_hal::{DeviceAddr, Hal, MemHandle, NcIndex};

use crate::error::{Error, Result};
use crate::load::dma::Loc;
use crate::load::stage::HwQueue;

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

    /// The entry for the IO addresses `key`, building it on a miss. `resolve` maps every var of
    /// the queue's pairs to an address. `completed` is the core's count of retired executions:
    /// only entries no in-flight execution may still use are evicted.
    #[allow(clippy::too_many_arguments)]
    pub fn get(
        &mut self,
        hal: &dyn Hal,
        nc: NcIndex,
        q: &HwQueue,
        key: &[u64],
        resolve: &impl Fn(u32) -> Option<DeviceAddr>,
        exec_index: u64,
        completed: u64,
    ) -> Result<&Entry> {
        self.clock += 1;
        let clock = self.clock;
        if let Some(i) = self.entries.iter().position(|e| &e.key[..e.key_len] == key) {
            let e = &mut self.entries[i];
            e.last_use = clock;
            e.last_exec = exec_index;
            return Ok(&self.entries[i]);
        }
        if key.len() > MAX_KEY {
            return Err(Error::failure(format!(
                "queue {} references {} IO vars; at most {MAX_KEY} supported",
                q.queue,
                key.len()
            )));
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
                free(hal, &e);
            }
        }
        let entry = build(hal, nc, q, key, resolve)?;
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
            free(hal, &e);
        }
    }
}

fn free(hal: &dyn Hal, e: &Entry) {
    let _ = hal.mem_free(e.tx);
    let _ = hal.mem_free(e.rx);
    let _ = hal.mem_free(e.words);
}

fn build(
    hal: &dyn Hal,
    nc: NcIndex,
    q: &HwQueue,
    key: &[u64],
    resolve: &impl Fn(u32) -> Option<DeviceAddr>,
) -> Result<Entry> {
    let channel = hal.device_info()?.target.hbm_channel_of(nc);
    let bytes = q.ring_len as u64 * 16;
    let mut made = Vec::with_capacity(3);
    let mut alloc = |size: u64, category| -> Result<MemHandle> {
        let h = hal.mem_alloc(&AllocRequest {
            size,
            align: 0,
            location: MemLocation::Device { channel },
            nc,
            category,
        })?;
        made.push(h);
        Ok(h)
    };
    let result = (|| {
        let tx = alloc(bytes, MemAllocCategory::DmaRingsDevice)?;
        let rx = alloc(bytes, MemAllocCategory::DmaRingsDevice)?;
        let words = alloc(64, MemAllocCategory::MiscDevice)?;
        let ring = HwQueue {
            tx: (tx, hal.mem_info(tx)?.pa),
            rx: (rx, hal.mem_info(rx)?.pa),
            ..q.clone()
        };
        crate::load::stage::write_ring(hal, &ring, resolve)?;
        let mut w = [0u8; 20];
        w[0..4].copy_from_slice(&ring.tx.1.lo32().to_le_bytes());
        w[4..8].copy_from_slice(&ring.tx.1.hi32().to_le_bytes());
        w[8..12].copy_from_slice(&ring.rx.1.lo32().to_le_bytes());
        w[12..16].copy_from_slice(&ring.rx.1.hi32().to_le_bytes());
        w[16..20].copy_from_slice(&q.ring_len.to_le_bytes());
        hal.copy_to_device(words, 0, &w)?;
        let mut k = [0u64; MAX_KEY];
        k[..key.len()].copy_from_slice(key);
        Ok(Entry {
            key: k,
            key_len: key.len(),
            tx,
            rx,
            words,
            words_pa: hal.mem_info(words)?.pa,
            last_use: 0,
            last_exec: 0,
        })
    })();
    if result.is_err() {
        for h in made {
            let _ = hal.mem_free(h);
        }
    }
    result
}

/// The IO vars a queue's pairs reference, in first-use order, without duplicates.
pub fn io_vars(q: &HwQueue, is_io: &impl Fn(u32) -> bool) -> Vec<u32> {
    let mut out = Vec::new();
    for t in &q.pairs {
        for l in [t.src, t.dst] {
            if let Loc::Var { var_id, .. } = l {
                if is_io(var_id) && !out.contains(&var_id) {
                    out.push(var_id);
                }
            }
        }
    }
    out
}
