//! Dynamic rings, the bind step's half (docs/runtime.md §3.2: the dynamic ring build with its
//! PA-keyed LRU cache): a model queue whose descriptors touch the caller's input or output
//! tensors is resolved per execution against those tensors' physical addresses. [`get`] looks
//! the resolution up in the queue's cache ([`crate::model::ring_cache`], which owns the cached
//! entries and the eviction policy) and on a miss builds it here: one ring pair with the
//! queue's pairs resolved, plus the page of register words that the execution's IO-queue swap
//! descriptors copy into the queue's registers before rewinding it.

use nrt_hal::abi::MemAllocCategory;
use nrt_hal::hal::{AllocRequest, MemLocation};
use nrt_hal::{DeviceAddr, Hal, MemHandle, NcIndex};

use crate::error::{Error, Result};
use crate::model::queue::{write_ring, HwQueue};
use crate::model::ring_cache::{Cache, Entry, MAX_KEY};

/// The resolution of queue `q` of core `nc` for the IO addresses `key`, from `cache` or built
/// on a miss. `resolve` maps every var of the queue's pairs to an address. `completed` is the
/// core's count of retired executions: only entries no in-flight execution may still use are
/// evicted.
#[allow(clippy::too_many_arguments)]
pub fn get<'c>(
    cache: &'c mut Cache,
    hal: &dyn Hal,
    nc: NcIndex,
    q: &HwQueue,
    key: &[u64],
    resolve: &impl Fn(u32) -> Option<DeviceAddr>,
    exec_index: u64,
    completed: u64,
) -> Result<&'c Entry> {
    if key.len() > MAX_KEY {
        return Err(Error::failure(format!(
            "queue {} references {} IO vars; at most {MAX_KEY} supported",
            q.queue,
            key.len()
        )));
    }
    cache.get(hal, key, exec_index, completed, || {
        build(hal, nc, q, key, resolve)
    })
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
        write_ring(hal, &ring, resolve)?;
        let mut w = [0u8; 20];
        w[0..4].copy_from_slice(&ring.tx.1.lo32().to_le_bytes());
        w[4..8].copy_from_slice(&ring.tx.1.hi32().to_le_bytes());
        w[8..12].copy_from_slice(&ring.rx.1.lo32().to_le_bytes());
        w[12..16].copy_from_slice(&ring.rx.1.hi32().to_le_bytes());
        w[16..20].copy_from_slice(&q.ring_len.to_le_bytes());
        hal.copy_to_device(words, 0, &w)?;
        Ok(Entry::new(key, tx, rx, words, hal.mem_info(words)?.pa))
    })();
    if result.is_err() {
        for h in made {
            let _ = hal.mem_free(h);
        }
    }
    result
}
