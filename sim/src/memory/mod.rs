//! Device memory of the simulated Neuron device: HBM, host DMA memory and on-chip memory.
//!
//! Implements docs/simulator.md §2 *Memory* following docs/driver.md §8 (address maps docs/driver.md §8.1,
//! allocator docs/driver.md §8.2) and docs/driver.md §7 (what `mmap` points at). This module owns:
//!
//! - [`DeviceMemory`]: the allocator of device HBM and host DMA memory, the handle table, the
//!   per-core accounting ([`CoreMemUsage`]), the sparse backing store of every allocation,
//!   address-based access for DMA ([`DeviceMemory::read`], [`DeviceMemory::write`],
//!   [`DeviceMemory::copy`], …), handle-based access for the HAL ([`DeviceMemory::read_at`], …),
//!   injected uncorrectable errors ([`DeviceMemory::poison`]), and DMA between it and on-chip
//!   memory ([`DeviceMemory::copy_to_onchip`], [`DeviceMemory::copy_from_onchip`]). The
//!   `*_hinted` variants take a caller-held [`SlotHint`] (the allocation that caller touched
//!   last), so a DMA queue streaming through one allocation skips the address lookup.
//! - [`OnChip`] (module `onchip`): a core's SBUF and PSUM. Each core owns its own (it lives
//!   in the core's clock domain, docs/simulator.md §8.1), so `DeviceMemory` holds none.
//! - [`MemFault`]: what a device-side access can fail with.
//!
//! Submodules: `alloc` (placement and handles), `backing` (the host memory behind allocations;
//! the only `unsafe` code), `onchip`.
//!
//! # Allocator
//!
//! Our reading of the driver's allocator (`neuron_mempool.c`, docs/driver.md §8.2), made deterministic:
//!
//! - **Reserved carve-out.** The first 16 MiB of every HBM channel belong to the driver. User
//!   memory on trn1 starts at `0x1000000` on channel 0 and `0x1001000000` on channel 1.
//! - **Granularity and alignment.** Sizes are rounded up to 4 KiB pages (size 0 is refused).
//!   An alignment of 0 or at most 4 KiB is implicit (page alignment); a larger one must be a
//!   power of two no larger than `INT_MAX` and is honoured; anything else is
//!   [`HalError::InvalidArgument`].
//! - **Per-core slices (our addition, for determinism).** The driver has one pool pair per
//!   channel shared by every process and core, so concurrent requests would be placed in
//!   arrival order. Here each channel's usable space (after the carve-out) is split equally among
//!   its *home* cores — the cores with `target.hbm_channel_of(nc) == channel`: one per channel on
//!   trn1, two per channel on trn2 (halves). Each slice has its own pools, so the addresses a
//!   core gets depend only on that core's own sequence of requests, whatever other threads do.
//!   **The one exception:** a request from a core for a channel that is not its home channel is
//!   served from the slice of that channel's first home core, so its placement interacts with
//!   that core's requests.
//! - **Small and main pools.** The top of each slice is its small pool: the channel's top 1 GiB
//!   (`mempool_small_pool_size`) divided among the home cores (trn1 1 GiB, trn2 512 MiB each); the
//!   rest is the main pool. Requests of at most 512 KiB (`mempool_small_alloc_max`) try the small
//!   pool first, then the main pool; larger ones the main pool first, then the small pool.
//!   Within a pool placement is first fit in address order (a `BTreeMap` free list coalescing on
//!   free), so freed memory is reused at the same address.
//! - **Contiguous scratchpad.** Category 19 (`CONTIGUOUS_SCRATCHPAD_DEVICE`) is placed in the
//!   main pool growing downward from its end (top-down fit), never in the small pool. The driver
//!   requires these to be freed in reverse order; we accept any order.
//! - **Host memory** ([`MemLocation::Host`]) lives in the target's host window
//!   (`host_window_base .. + host_window_size`), split equally among the cores, first fit, no
//!   small pool. A non-zero alignment is refused with [`HalError::InvalidArgument`] (the driver
//!   returns `-EINVAL`). The driver also range-checks `dram_channel` for host requests;
//!   [`MemLocation::Host`] carries no channel, so the ioctl-emulation layer must do that check.
//! - **Validation.** A core not on the device, or a channel index ≥ the channel count, is
//!   [`HalError::InvalidArgument`]. No room in either candidate pool is
//!   [`HalError::OutOfMemory`] (the accounting is left unchanged).
//! - **Handles** are small integers from 1 (0 is invalid), recycled LIFO: freed handles are
//!   reused before new ones, the most recently freed first. Freeing an unknown or already freed
//!   handle is [`HalError::InvalidArgument`]. At most 512 × 8192 handles exist at once, like the
//!   driver's table.
//! - **`alloc_base_offset`** ([`MemoryConfig`]) makes every pool (main, small, host) start that
//!   many bytes after its nominal start, keeping its end, so every address shifts by the same
//!   amount as long as the pools are not full — a run whose trace differs only by that shift is
//!   address-independent.
//!
//! # Access
//!
//! Device-side accesses name device addresses (HBM or the host window). Each access must lie
//! entirely inside **one live allocation**, else it faults with [`MemFault::Unmapped`]. This is
//! stricter than hardware, which would happily read the gap between two allocations or a freed
//! page; it catches runtime bugs (a descriptor built from a stale address, a length one element
//! too long) at the first bad access. Zero-length accesses always succeed. On any fault nothing
//! is transferred.
//!
//! # Backing store
//!
//! Each allocation is backed by its own zero-initialised block that commits host memory only for
//! pages written (see module `backing`). The block never moves while allocated, and the
//! simulator touches it only through raw-pointer copies, so the pointer handed out by
//! [`DeviceMemory::chunk_ptr`] (which `Hal::map` returns) may be written by host code under the
//! HAL's `# Safety` contract. Freeing an allocation releases its block.

mod alloc;
mod backing;
mod onchip;

use std::collections::{BTreeMap, BTreeSet};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use nrt_hal::abi::MemAllocCategory;
use nrt_hal::hal::{AllocRequest, CoreMemUsage, MemInfo, MemLocation};
use nrt_hal::{DeviceAddr, HalError, MemHandle, NcIndex, Target};

pub use alloc::{
    MAX_ALIGN, MAX_ALLOC_BASE_OFFSET, MAX_HANDLES, PAGE_SIZE, RESERVED_PER_CHANNEL,
    SMALL_ALLOC_MAX, SMALL_POOL_SIZE,
};
pub use onchip::{OnChip, OnChipAddr, OnChipSpace};

use alloc::{HandleTable, Placer};
use backing::Block;

/// What a device-side memory access can fail with. The DMA model turns it into a DMA fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum MemFault {
    /// The range is not entirely inside one live allocation.
    #[error("unmapped access: {len:#x} bytes at {addr} are not inside one live allocation")]
    Unmapped {
        /// First byte of the access.
        addr: DeviceAddr,
        /// Length of the access.
        len: u64,
    },
    /// The access read a byte with an (injected) uncorrectable memory error.
    #[error("uncorrectable memory error at {addr}")]
    Uncorrectable {
        /// The first poisoned byte the access covered.
        addr: DeviceAddr,
    },
    /// An on-chip access ran past the physical size of its partition.
    #[error(
        "{space} partition {partition}: {len:#x} bytes at offset {offset:#x} run past the \
         partition's {limit:#x} physical bytes"
    )]
    OutOfWindow {
        /// SBUF or PSUM.
        space: OnChipSpace,
        /// The partition addressed.
        partition: u32,
        /// Offset inside the partition.
        offset: u32,
        /// Length of the access.
        len: u64,
        /// Physical bytes per partition.
        limit: u64,
    },
    /// An on-chip access named a partition the core lacks.
    #[error("{space} partition {partition} does not exist (the core has {partitions})")]
    NoSuchPartition {
        /// SBUF or PSUM.
        space: OnChipSpace,
        /// The partition addressed.
        partition: u32,
        /// Partitions of that space.
        partitions: u32,
    },
    /// An on-chip access named a core the device lacks.
    #[error("{nc} is not a core of this device")]
    NoSuchCore {
        /// The core addressed.
        nc: NcIndex,
    },
}

impl MemFault {
    /// The device address the fault names: the access's first byte for
    /// [`MemFault::Unmapped`], the poisoned byte for [`MemFault::Uncorrectable`]. On-chip faults
    /// name a partition and offset instead (the caller knows the window address it decoded).
    pub fn addr(&self) -> Option<DeviceAddr> {
        match *self {
            MemFault::Unmapped { addr, .. } | MemFault::Uncorrectable { addr } => Some(addr),
            MemFault::OutOfWindow { .. }
            | MemFault::NoSuchPartition { .. }
            | MemFault::NoSuchCore { .. } => None,
        }
    }
}

/// Configuration of [`DeviceMemory`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryConfig {
    /// Bytes by which every pool's start is shifted (see the module docs). A page multiple;
    /// other values are rounded down to one, and values above [`MAX_ALLOC_BASE_OFFSET`] are
    /// capped to it ([`DeviceMemory::config`] reports the value in force).
    pub alloc_base_offset: u64,
}

/// One live allocation.
#[derive(Debug)]
struct Chunk {
    pa: u64,
    size: u64,
    location: MemLocation,
    nc: NcIndex,
    category: MemAllocCategory,
    pool: usize,
    block: Block,
}

impl Chunk {
    /// Offset of `[addr, addr + len)` inside this chunk, if it lies entirely inside.
    #[inline]
    fn offset_of(&self, addr: u64, len: u64) -> Option<usize> {
        let off = addr.checked_sub(self.pa)?;
        (off <= self.size && len <= self.size - off).then_some(off as usize)
    }
}

/// The last few allocations an address lookup found: their address ranges and slots.
///
/// A DMA descriptor pair touches up to four allocations (the TX ring, the RX ring, the source
/// and the destination buffer), so a single remembered allocation misses on nearly every access,
/// and a miss walks the address B-tree. An entry is only a guess: the lookup takes the first
/// entry whose range contains the access and checks that slot's live chunk really does, so a
/// freed, reused or (under concurrent `&self` lookups) torn entry costs a miss, never a wrong
/// answer. Hits change nothing but speed. Atomics, because lookups take `&self` and the memory
/// is `Sync`.
#[derive(Debug)]
struct RecentHits {
    /// Most recently inserted first; unused entries hold an empty range.
    entries: [RecentHit; RECENT_HITS],
}

/// One [`RecentHits`] entry: the allocation `[first, end)` in `slot`.
#[derive(Debug, Default)]
struct RecentHit {
    first: AtomicU64,
    end: AtomicU64,
    slot: AtomicUsize,
}

/// How many recent lookups [`RecentHits`] remembers.
const RECENT_HITS: usize = 8;

impl RecentHits {
    fn new() -> Self {
        RecentHits {
            entries: std::array::from_fn(|_| RecentHit::default()),
        }
    }

    /// The slot of the first entry whose range contains `[addr, addr + len)`.
    #[inline]
    fn candidate(&self, addr: u64, len: u64) -> Option<usize> {
        self.entries.iter().find_map(|e| {
            let (first, end, slot) = e.get();
            let room = end.checked_sub(first)?;
            (addr.checked_sub(first)? <= room.checked_sub(len)?).then_some(slot)
        })
    }

    /// Remembers the allocation `[first, end)` in `slot` as the most recent, forgetting the
    /// oldest.
    fn insert(&self, first: u64, end: u64, slot: usize) {
        for i in (1..RECENT_HITS).rev() {
            self.entries[i].set(self.entries[i - 1].get());
        }
        self.entries[0].set((first, end, slot));
    }
}

impl RecentHit {
    #[inline]
    fn get(&self) -> (u64, u64, usize) {
        (
            self.first.load(Ordering::Relaxed),
            self.end.load(Ordering::Relaxed),
            self.slot.load(Ordering::Relaxed),
        )
    }

    fn set(&self, (first, end, slot): (u64, u64, usize)) {
        self.first.store(first, Ordering::Relaxed);
        self.end.store(end, Ordering::Relaxed);
        self.slot.store(slot, Ordering::Relaxed);
    }
}

/// A caller's memo of the allocation its last address lookup found (its slot), for a caller
/// that keeps touching one allocation — a DMA queue streaming its descriptor ring or a tensor.
///
/// Like a [`RecentHits`] entry it is only a guess: the slot's live chunk is checked to contain
/// the access, so a freed or reused slot costs a full lookup, never a wrong answer. Unlike the
/// shared entries it is the caller's own, so a hit needs neither a scan nor atomics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotHint(usize);

impl Default for SlotHint {
    fn default() -> Self {
        SlotHint(usize::MAX)
    }
}

/// The memory of one simulated device shared by all its cores: HBM and host DMA allocations. See the module docs for the allocator and access rules.
#[derive(Debug)]
pub struct DeviceMemory {
    target: Target,
    config: MemoryConfig,
    placer: Placer,
    table: HandleTable<Chunk>,
    /// Live allocations by first address → slot.
    by_addr: BTreeMap<u64, usize>,
    /// The allocations recent address lookups hit (verified on use), see [`RecentHits`].
    recent: RecentHits,
    usage: Vec<CoreMemUsage>,
    poisoned: BTreeSet<u64>,
}

fn invalid(op: &'static str, reason: impl Into<String>) -> HalError {
    HalError::InvalidArgument {
        op,
        reason: reason.into(),
    }
}

impl DeviceMemory {
    /// Empty memory of a `target` device: no allocations, zeroed on-chip memory.
    pub fn new(target: Target, config: MemoryConfig) -> Self {
        let offset = (config.alloc_base_offset & !(PAGE_SIZE - 1)).min(MAX_ALLOC_BASE_OFFSET);
        let cores = target.spec().nc_count as usize;
        DeviceMemory {
            target,
            config: MemoryConfig {
                alloc_base_offset: offset,
            },
            placer: Placer::new(target, offset),
            table: HandleTable::new(),
            by_addr: BTreeMap::new(),
            recent: RecentHits::new(),
            usage: vec![CoreMemUsage::default(); cores],
            poisoned: BTreeSet::new(),
        }
    }

    /// The device generation.
    pub fn target(&self) -> Target {
        self.target
    }

    /// The configuration in force (after rounding and capping).
    pub fn config(&self) -> MemoryConfig {
        self.config
    }

    /// Allocates memory (`MEM_ALLOC_V2MT64`, docs/driver.md §3.1) following the rules in the module docs.
    pub fn alloc(&mut self, req: &AllocRequest) -> Result<MemHandle, HalError> {
        const OP: &str = "mem_alloc";
        let spec = self.target.spec();
        if !self.target.has_core(req.nc) {
            return Err(invalid(
                OP,
                format!("{} is not a core of this device", req.nc),
            ));
        }
        let host = match req.location {
            MemLocation::Device { channel } => {
                if channel as usize >= spec.hbm.len() {
                    return Err(invalid(
                        OP,
                        format!("HBM channel {channel} ≥ channel count {}", spec.hbm.len()),
                    ));
                }
                false
            }
            MemLocation::Host => true,
        };
        if host && req.align != 0 {
            return Err(invalid(OP, "alignment must be 0 for host memory"));
        }
        if req.size == 0 {
            return Err(invalid(OP, "size 0"));
        }
        let align = if req.align <= PAGE_SIZE {
            PAGE_SIZE
        } else if req.align.is_power_of_two() && req.align <= MAX_ALIGN {
            req.align
        } else {
            return Err(invalid(
                OP,
                format!("alignment {:#x} is not a power of two ≤ INT_MAX", req.align),
            ));
        };
        let oom = |requested| HalError::OutOfMemory {
            requested,
            location: req.location,
        };
        let size = alloc::align_up(req.size, PAGE_SIZE).ok_or(oom(req.size))?;
        let len = usize::try_from(size).map_err(|_| oom(size))?;
        if !self.table.has_room() {
            return Err(oom(size));
        }
        let contiguous = !host && req.category == MemAllocCategory::ContiguousScratchpadDevice;
        let (pa, pool) = self
            .placer
            .place(req.nc, req.location, size, align, contiguous)
            .ok_or(oom(size))?;
        let block = match Block::zeroed(len) {
            Ok(b) => b,
            Err(_) => {
                self.placer.release(pool, pa, size);
                return Err(oom(size));
            }
        };
        let chunk = Chunk {
            pa,
            size,
            location: req.location,
            nc: req.nc,
            category: req.category,
            pool,
            block,
        };
        let Some((handle, slot)) = self.table.insert(chunk) else {
            self.placer.release(pool, pa, size);
            return Err(oom(size));
        };
        self.by_addr.insert(pa, slot);
        if let Some(u) = self.usage.get_mut(req.nc.index()) {
            u.by_category[req.category as usize] += size;
            u.allocations += 1;
        }
        Ok(handle)
    }

    /// Frees an allocation (`MEM_FREE`), releasing its backing memory. Its handle becomes the
    /// next one reused.
    pub fn free(&mut self, handle: MemHandle) -> Result<(), HalError> {
        let chunk = self
            .table
            .remove(handle)
            .ok_or_else(|| invalid("mem_free", format!("{handle} is not a live allocation")))?;
        self.by_addr.remove(&chunk.pa);
        self.placer.release(chunk.pool, chunk.pa, chunk.size);
        if let Some(u) = self.usage.get_mut(chunk.nc.index()) {
            let c = &mut u.by_category[chunk.category as usize];
            *c = c.saturating_sub(chunk.size);
            u.allocations = u.allocations.saturating_sub(1);
        }
        Ok(())
    }

    fn chunk(&self, op: &'static str, handle: MemHandle) -> Result<&Chunk, HalError> {
        self.table
            .get(handle)
            .ok_or_else(|| invalid(op, format!("{handle} is not a live allocation")))
    }

    /// Address, size and accounting of an allocation (`MEM_GET_EXTENDED_INFO`).
    pub fn info(&self, handle: MemHandle) -> Result<MemInfo, HalError> {
        let c = self.chunk("mem_info", handle)?;
        Ok(MemInfo {
            pa: DeviceAddr::new(c.pa),
            size: c.size,
            location: c.location,
            nc: c.nc,
            category: c.category,
        })
    }

    /// The host pointer and length of an allocation's backing block, for `Hal::map`. The
    /// pointer is valid, and does not move, until the allocation is freed; the simulator never
    /// holds references into it (see the module docs).
    pub fn chunk_ptr(&self, handle: MemHandle) -> Result<(NonNull<u8>, usize), HalError> {
        let c = self.chunk("mem_map", handle)?;
        Ok((c.block.ptr(), c.block.len()))
    }

    /// The live allocation containing `addr`, and the offset of `addr` inside it (the lookup the
    /// driver's `mmap` does with its offset, docs/driver.md §7).
    pub fn lookup(&self, addr: DeviceAddr) -> Option<(MemHandle, u64)> {
        let (slot, off) = self.locate(addr.raw(), 1)?;
        Some((HandleTable::<Chunk>::handle_of(slot)?, off as u64))
    }

    /// Memory accounted to core `nc`: bytes (rounded) per category and live allocations. A core
    /// the device lacks has none.
    pub fn usage(&self, nc: NcIndex) -> CoreMemUsage {
        self.usage.get(nc.index()).cloned().unwrap_or_default()
    }

    /// Number of live allocations on the device.
    pub fn live_allocations(&self) -> usize {
        self.table.live()
    }

    /// The slot of the live allocation containing `[addr, addr + len)` and the offset inside it.
    #[inline]
    fn locate(&self, addr: u64, len: u64) -> Option<(usize, usize)> {
        if let Some(slot) = self.recent.candidate(addr, len) {
            if let Some(off) = self.table.slot(slot).and_then(|c| c.offset_of(addr, len)) {
                return Some((slot, off));
            }
        }
        self.locate_in_tree(addr, len)
    }

    /// [`DeviceMemory::locate`], trying the slot `hint` names first and remembering the slot
    /// found in it.
    #[inline]
    fn locate_hinted(&self, hint: &mut SlotHint, addr: u64, len: u64) -> Option<(usize, usize)> {
        if let Some(off) = self.table.slot(hint.0).and_then(|c| c.offset_of(addr, len)) {
            return Some((hint.0, off));
        }
        let found = self.locate(addr, len)?;
        hint.0 = found.0;
        Some(found)
    }

    /// [`DeviceMemory::locate_hinted`], as a fault.
    #[inline]
    fn locate_hinted_or_fault(
        &self,
        hint: &mut SlotHint,
        addr: DeviceAddr,
        len: u64,
    ) -> Result<(usize, usize), MemFault> {
        self.locate_hinted(hint, addr.raw(), len)
            .ok_or(MemFault::Unmapped { addr, len })
    }

    /// [`DeviceMemory::locate`] when no recent allocation holds the range: the address B-tree,
    /// out of line so the common path stays small enough to inline.
    #[cold]
    #[inline(never)]
    fn locate_in_tree(&self, addr: u64, len: u64) -> Option<(usize, usize)> {
        let (_, &slot) = self.by_addr.range(..=addr).next_back()?;
        let chunk = self.table.slot(slot)?;
        let off = chunk.offset_of(addr, len)?;
        self.recent.insert(chunk.pa, chunk.pa + chunk.size, slot);
        Some((slot, off))
    }

    /// [`DeviceMemory::locate`], as a fault.
    #[inline]
    fn locate_or_fault(&self, addr: DeviceAddr, len: u64) -> Result<(usize, usize), MemFault> {
        self.locate(addr.raw(), len)
            .ok_or(MemFault::Unmapped { addr, len })
    }

    /// The first poisoned byte in `[addr, addr + len)`, if any. Cheap when nothing is poisoned.
    #[inline]
    fn first_poisoned(&self, addr: u64, len: u64) -> Option<u64> {
        if self.poisoned.is_empty() {
            return None;
        }
        let end = addr.saturating_add(len);
        self.poisoned.range(addr..end).next().copied()
    }

    #[inline]
    fn check_poison(&self, addr: DeviceAddr, len: u64) -> Result<(), MemFault> {
        match self.first_poisoned(addr.raw(), len) {
            Some(p) => Err(MemFault::Uncorrectable {
                addr: DeviceAddr::new(p),
            }),
            None => Ok(()),
        }
    }

    /// Reads `dst.len()` bytes at device address `addr`.
    #[inline]
    pub fn read(&self, addr: DeviceAddr, dst: &mut [u8]) -> Result<(), MemFault> {
        self.read_hinted(&mut SlotHint::default(), addr, dst)
    }

    /// [`DeviceMemory::read`], looking in the allocation `hint` remembers first (and
    /// remembering the one read from).
    #[inline]
    pub fn read_hinted(
        &self,
        hint: &mut SlotHint,
        addr: DeviceAddr,
        dst: &mut [u8],
    ) -> Result<(), MemFault> {
        let len = dst.len() as u64;
        if len == 0 {
            return Ok(());
        }
        let (slot, off) = self.locate_hinted_or_fault(hint, addr, len)?;
        self.check_poison(addr, len)?;
        let unmapped = MemFault::Unmapped { addr, len };
        let chunk = self.table.slot(slot).ok_or(unmapped)?;
        chunk.block.read(off, dst).map_err(|_| unmapped)
    }

    /// Writes `src` at device address `addr`. Writing does not clear poisoned bytes.
    #[inline]
    pub fn write(&self, addr: DeviceAddr, src: &[u8]) -> Result<(), MemFault> {
        let len = src.len() as u64;
        if len == 0 {
            return Ok(());
        }
        let (slot, off) = self.locate_or_fault(addr, len)?;
        let unmapped = MemFault::Unmapped { addr, len };
        let chunk = self.table.slot(slot).ok_or(unmapped)?;
        chunk.block.write(off, src).map_err(|_| unmapped)
    }

    /// Sets `len` bytes at `addr` to `value`.
    pub fn fill(&self, addr: DeviceAddr, value: u8, len: u64) -> Result<(), MemFault> {
        if len == 0 {
            return Ok(());
        }
        let (slot, off) = self.locate_or_fault(addr, len)?;
        let unmapped = MemFault::Unmapped { addr, len };
        let chunk = self.table.slot(slot).ok_or(unmapped)?;
        chunk
            .block
            .fill(off, value, len as usize)
            .map_err(|_| unmapped)
    }

    /// Copies `len` bytes from `src` to `dst` (memmove semantics: the ranges may overlap inside
    /// one allocation). Each range must lie inside one live allocation; a poisoned source byte
    /// faults with [`MemFault::Uncorrectable`].
    pub fn copy(&self, src: DeviceAddr, dst: DeviceAddr, len: u64) -> Result<(), MemFault> {
        self.copy_hinted(&mut [SlotHint::default(); 2], src, dst, len)
    }

    /// [`DeviceMemory::copy`], with the source's and the destination's [`SlotHint`].
    pub fn copy_hinted(
        &self,
        hints: &mut [SlotHint; 2],
        src: DeviceAddr,
        dst: DeviceAddr,
        len: u64,
    ) -> Result<(), MemFault> {
        if len == 0 {
            return Ok(());
        }
        let [sh, dh] = hints;
        let (s_slot, s_off) = self.locate_hinted_or_fault(sh, src, len)?;
        let (d_slot, d_off) = self.locate_hinted_or_fault(dh, dst, len)?;
        self.check_poison(src, len)?;
        let n = len as usize;
        let unmapped = MemFault::Unmapped { addr: dst, len };
        let done = if s_slot == d_slot {
            let chunk = self.table.slot(d_slot).ok_or(unmapped)?;
            chunk.block.copy_within(s_off, d_off, n)
        } else {
            let s = self.table.slot(s_slot).ok_or(unmapped)?;
            let d = self.table.slot(d_slot).ok_or(unmapped)?;
            d.block.copy_from(d_off, &s.block, s_off, n)
        };
        done.map_err(|_| unmapped)
    }

    /// Reads the little-endian `u32` at `addr`.
    #[inline]
    pub fn read_u32(&self, addr: DeviceAddr) -> Result<u32, MemFault> {
        let mut b = [0u8; 4];
        self.read(addr, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    /// Writes `value` little-endian at `addr`.
    #[inline]
    pub fn write_u32(&self, addr: DeviceAddr, value: u32) -> Result<(), MemFault> {
        self.write(addr, &value.to_le_bytes())
    }

    /// Marks the byte at `addr` as holding an uncorrectable error (fault injection). A later
    /// read or copy whose source covers it faults with [`MemFault::Uncorrectable`]; writes do
    /// not clear it, nor does freeing the allocation.
    pub fn poison(&mut self, addr: DeviceAddr) {
        self.poisoned.insert(addr.raw());
    }

    /// Removes every injected uncorrectable error.
    pub fn clear_poison(&mut self) {
        self.poisoned.clear();
    }

    /// The byte range `[offset, offset + len)` of `chunk`, or `InvalidArgument`.
    fn span(op: &'static str, chunk: &Chunk, offset: u64, len: u64) -> Result<usize, HalError> {
        match offset.checked_add(len) {
            Some(end) if end <= chunk.size => Ok(offset as usize),
            _ => Err(invalid(
                op,
                format!(
                    "{len:#x} bytes at offset {offset:#x} exceed the allocation's {:#x} bytes",
                    chunk.size
                ),
            )),
        }
    }

    /// Copies from an allocation at byte `offset` into `dst` (`MEM_BUF_COPY64` from device).
    /// Out of bounds is [`HalError::InvalidArgument`]; a poisoned byte is
    /// [`HalError::DeviceFault`] (the driver's DMA would report the memory error).
    pub fn read_at(&self, handle: MemHandle, offset: u64, dst: &mut [u8]) -> Result<(), HalError> {
        const OP: &str = "copy_from_device";
        let chunk = self.chunk(OP, handle)?;
        let len = dst.len() as u64;
        let off = Self::span(OP, chunk, offset, len)?;
        if let Some(p) = self.first_poisoned(chunk.pa + offset, len) {
            return Err(HalError::DeviceFault {
                nc: Some(chunk.nc),
                reason: MemFault::Uncorrectable {
                    addr: DeviceAddr::new(p),
                }
                .to_string(),
            });
        }
        chunk
            .block
            .read(off, dst)
            .map_err(|_| invalid(OP, "backing block out of bounds"))
    }

    /// Copies `src` into an allocation at byte `offset` (`MEM_BUF_COPY64` to device).
    pub fn write_at(&self, handle: MemHandle, offset: u64, src: &[u8]) -> Result<(), HalError> {
        const OP: &str = "copy_to_device";
        let chunk = self.chunk(OP, handle)?;
        let off = Self::span(OP, chunk, offset, src.len() as u64)?;
        chunk
            .block
            .write(off, src)
            .map_err(|_| invalid(OP, "backing block out of bounds"))
    }

    /// Fills `len` bytes of an allocation at byte `offset` with `value` (`MEMSET64`).
    pub fn fill_at(
        &self,
        handle: MemHandle,
        offset: u64,
        value: u8,
        len: u64,
    ) -> Result<(), HalError> {
        const OP: &str = "memset";
        let chunk = self.chunk(OP, handle)?;
        let off = Self::span(OP, chunk, offset, len)?;
        chunk
            .block
            .fill(off, value, len as usize)
            .map_err(|_| invalid(OP, "backing block out of bounds"))
    }

    /// DMA from device memory at `src` to `dst` of the on-chip memory `onchip` (no bounce
    /// buffer). On-chip memory belongs to its core's clock domain, not to this struct.
    pub fn copy_to_onchip(
        &self,
        src: DeviceAddr,
        onchip: &mut OnChip,
        dst: OnChipAddr,
        len: u64,
    ) -> Result<(), MemFault> {
        self.copy_to_onchip_hinted(&mut SlotHint::default(), src, onchip, dst, len)
    }

    /// [`DeviceMemory::copy_to_onchip`], with the source's [`SlotHint`].
    pub fn copy_to_onchip_hinted(
        &self,
        hint: &mut SlotHint,
        src: DeviceAddr,
        onchip: &mut OnChip,
        dst: OnChipAddr,
        len: u64,
    ) -> Result<(), MemFault> {
        if len == 0 {
            return Ok(());
        }
        let (slot, off) = self.locate_hinted_or_fault(hint, src, len)?;
        self.check_poison(src, len)?;
        let unmapped = MemFault::Unmapped { addr: src, len };
        let chunk = self.table.slot(slot).ok_or(unmapped)?;
        let d = onchip.slice_mut(dst.space, dst.partition, dst.offset, len)?;
        chunk.block.read(off, d).map_err(|_| unmapped)
    }

    /// DMA from `src` of the on-chip memory `onchip` to device memory at `dst`.
    pub fn copy_from_onchip(
        &self,
        onchip: &OnChip,
        src: OnChipAddr,
        dst: DeviceAddr,
        len: u64,
    ) -> Result<(), MemFault> {
        self.copy_from_onchip_hinted(&mut SlotHint::default(), onchip, src, dst, len)
    }

    /// [`DeviceMemory::copy_from_onchip`], with the destination's [`SlotHint`].
    pub fn copy_from_onchip_hinted(
        &self,
        hint: &mut SlotHint,
        onchip: &OnChip,
        src: OnChipAddr,
        dst: DeviceAddr,
        len: u64,
    ) -> Result<(), MemFault> {
        if len == 0 {
            return Ok(());
        }
        let (slot, off) = self.locate_hinted_or_fault(hint, dst, len)?;
        let s = onchip.slice(src.space, src.partition, src.offset, len)?;
        let unmapped = MemFault::Unmapped { addr: dst, len };
        let chunk = self.table.slot(slot).ok_or(unmapped)?;
        chunk.block.write(off, s).map_err(|_| unmapped)
    }
}
