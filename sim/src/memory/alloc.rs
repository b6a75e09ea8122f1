//! Placement and handles: where each allocation goes, and the handle table.
//!
//! Implements our reading of the driver's allocator (docs/driver.md §8.2, address map
//! docs/driver.md §8.1) with per-core pools for deterministic placement; the full description is in the
//! [parent module's docs](super#allocator). This module owns:
//!
//! - [`FreeList`]: a `BTreeMap`-based free list of one pool, first-fit (bottom-up) or
//!   top-down, with coalescing on release. Iteration is in address order only (no hash maps).
//! - [`Placer`]: the pool layout of one device (per channel, per home-core slice: a main pool
//!   and a small pool; per core: a slice of the host window) and the pool-selection rules.
//! - [`HandleTable`]: handles 1, 2, 3, … recycled LIFO.

use std::collections::BTreeMap;

use nrt_hal::hal::MemLocation;
use nrt_hal::{MemHandle, NcIndex, Target};

/// Allocation granularity: sizes are rounded up to this, and it is the implicit alignment
/// (driver `PAGE_SIZE`, docs/driver.md §8.2).
pub const PAGE_SIZE: u64 = 4096;
/// Bytes reserved by the driver at the bottom of every HBM channel (docs/driver.md §8.2).
pub const RESERVED_PER_CHANNEL: u64 = 16 << 20;
/// Size of a channel's small pool, at the top of the channel (`mempool_small_pool_size`,
/// docs/driver.md §8.2). Split equally among the channel's home cores.
pub const SMALL_POOL_SIZE: u64 = 1 << 30;
/// Largest request that prefers the small pool (`mempool_small_alloc_max`, docs/driver.md §8.2).
pub const SMALL_ALLOC_MAX: u64 = 512 << 10;
/// Largest alignment accepted (the driver's first-fit-aligned takes `align ≤ INT_MAX`).
pub const MAX_ALIGN: u64 = i32::MAX as u64;
/// Number of handles the driver's table holds (512 × 8192, docs/driver.md §11).
pub const MAX_HANDLES: u64 = 512 * 8192;
/// Largest honoured [`super::MemoryConfig::alloc_base_offset`]: 256 MiB, half the smallest
/// per-core small pool (trn2: 512 MiB), so every pool stays non-empty.
pub const MAX_ALLOC_BASE_OFFSET: u64 = 256 << 20;

/// `x` rounded up to a multiple of `align` (a power of two), or `None` on overflow.
pub(crate) fn align_up(x: u64, align: u64) -> Option<u64> {
    Some(x.checked_add(align - 1)? & !(align - 1))
}

/// `x` rounded down to a multiple of `align` (a power of two).
fn align_down(x: u64, align: u64) -> u64 {
    x & !(align - 1)
}

/// The free extents of one pool: start → end (exclusive); disjoint and never adjacent (adjacent
/// extents are coalesced on release).
#[derive(Debug, Clone)]
pub(crate) struct FreeList {
    free: BTreeMap<u64, u64>,
}

impl FreeList {
    /// A free list whose whole range `[start, end)` is free.
    fn new(start: u64, end: u64) -> Self {
        let mut free = BTreeMap::new();
        if start < end {
            free.insert(start, end);
        }
        FreeList { free }
    }

    /// Removes `[at, at + size)` from the extent `[s, e)`, keeping the remainders.
    fn take(&mut self, s: u64, e: u64, at: u64, size: u64) -> u64 {
        self.free.remove(&s);
        if s < at {
            self.free.insert(s, at);
        }
        if at + size < e {
            self.free.insert(at + size, e);
        }
        at
    }

    /// The lowest `align`-aligned address where `size` bytes fit (first fit), taken.
    fn alloc_first_fit(&mut self, size: u64, align: u64) -> Option<u64> {
        let (s, e, at) = self.free.iter().find_map(|(&s, &e)| {
            let at = align_up(s, align)?;
            (at.checked_add(size)? <= e).then_some((s, e, at))
        })?;
        Some(self.take(s, e, at, size))
    }

    /// The highest `align`-aligned address where `size` bytes fit (growing downward from the
    /// end of the pool), taken.
    fn alloc_top_down(&mut self, size: u64, align: u64) -> Option<u64> {
        let (s, e, at) = self.free.iter().rev().find_map(|(&s, &e)| {
            let at = align_down(e.checked_sub(size)?, align);
            (at >= s).then_some((s, e, at))
        })?;
        Some(self.take(s, e, at, size))
    }

    /// Returns `[start, start + size)` to the free list, merging with its neighbours.
    fn release(&mut self, start: u64, size: u64) {
        let mut s = start;
        let mut e = start.saturating_add(size);
        if let Some((&ps, &pe)) = self.free.range(..s).next_back() {
            if pe == s {
                self.free.remove(&ps);
                s = ps;
            }
        }
        if let Some(ne) = self.free.remove(&e) {
            e = ne;
        }
        self.free.insert(s, e);
    }
}

/// The pools of one home-core slice of an HBM channel (indices into [`Placer::pools`]).
#[derive(Debug, Clone, Copy)]
struct Slice {
    main: usize,
    small: usize,
}

/// The layout of one HBM channel.
#[derive(Debug, Clone)]
struct ChannelPools {
    /// The channel's home cores (`target.hbm_channel_of(nc) == channel`), ascending.
    homes: Vec<NcIndex>,
    /// One slice per home core (one slice if the channel has no home core).
    slices: Vec<Slice>,
}

/// A pool: a range of device addresses and its free list.
#[derive(Debug, Clone)]
struct Pool {
    free: FreeList,
}

/// The pool layout of one device and its placement rules (see the parent module's docs).
#[derive(Debug, Clone)]
pub(crate) struct Placer {
    pools: Vec<Pool>,
    channels: Vec<ChannelPools>,
    /// The host-window pool of each core.
    host: Vec<usize>,
}

impl Placer {
    /// The layout of `target` with every pool starting `offset` bytes (a page multiple, at most
    /// [`MAX_ALLOC_BASE_OFFSET`]) after its nominal start.
    pub(crate) fn new(target: Target, offset: u64) -> Placer {
        let spec = target.spec();
        let mut pools = Vec::new();
        let mut add_pool = |start: u64, end: u64| {
            pools.push(Pool {
                free: FreeList::new(start, end),
            });
            pools.len() - 1
        };
        let mut channels = Vec::with_capacity(spec.hbm.len());
        for (ch, hbm) in spec.hbm.iter().enumerate() {
            let homes: Vec<NcIndex> = (0..spec.nc_count)
                .map(NcIndex)
                .filter(|&nc| target.hbm_channel_of(nc) as usize == ch)
                .collect();
            let n = homes.len().max(1) as u64;
            let base = hbm.base.raw();
            let usable_start = base + RESERVED_PER_CHANNEL;
            let end = base + hbm.size;
            let slice_len = align_down(end.saturating_sub(usable_start) / n, PAGE_SIZE);
            let small_len = align_down(SMALL_POOL_SIZE / n, PAGE_SIZE).min(slice_len / 2);
            let slices = (0..n)
                .map(|i| {
                    let s = usable_start + i * slice_len;
                    let e = s + slice_len;
                    let split = e - small_len;
                    // Nominal pools [s, split) and [split, e), each starting `offset` later.
                    let main = add_pool(s + offset, split + offset);
                    let small = add_pool(split + offset, e);
                    Slice { main, small }
                })
                .collect();
            channels.push(ChannelPools { homes, slices });
        }
        let cores = u64::from(spec.nc_count.max(1));
        let host_slice = align_down(spec.host_window_size / cores, PAGE_SIZE);
        let host_base = spec.host_window_base.raw();
        let host = (0..cores)
            .map(|i| {
                let s = host_base + i * host_slice;
                add_pool(s + offset, s + host_slice)
            })
            .collect();
        Placer {
            pools,
            channels,
            host,
        }
    }

    /// Places `size` bytes (a page multiple) aligned to `align` (a power of two ≥ a page) for
    /// core `nc`. `contiguous` selects the contiguous-scratchpad placement (top-down in the
    /// main pool). Returns the address and the pool it came from, or `None` if nothing fits
    /// (or `nc`/the channel is not on the device).
    pub(crate) fn place(
        &mut self,
        nc: NcIndex,
        location: MemLocation,
        size: u64,
        align: u64,
        contiguous: bool,
    ) -> Option<(u64, usize)> {
        match location {
            MemLocation::Host => {
                let pool = *self.host.get(nc.index())?;
                let at = self
                    .pools
                    .get_mut(pool)?
                    .free
                    .alloc_first_fit(size, align)?;
                Some((at, pool))
            }
            MemLocation::Device { channel } => {
                let ch = self.channels.get(channel as usize)?;
                let slice_idx = ch.homes.iter().position(|&h| h == nc).unwrap_or(0);
                let slice = *ch.slices.get(slice_idx)?;
                if contiguous {
                    let at = self
                        .pools
                        .get_mut(slice.main)?
                        .free
                        .alloc_top_down(size, align)?;
                    return Some((at, slice.main));
                }
                let order = if size <= SMALL_ALLOC_MAX {
                    [slice.small, slice.main]
                } else {
                    [slice.main, slice.small]
                };
                order.into_iter().find_map(|pool| {
                    let at = self
                        .pools
                        .get_mut(pool)?
                        .free
                        .alloc_first_fit(size, align)?;
                    Some((at, pool))
                })
            }
        }
    }

    /// Returns a placement made by [`Placer::place`].
    pub(crate) fn release(&mut self, pool: usize, at: u64, size: u64) {
        if let Some(p) = self.pools.get_mut(pool) {
            p.free.release(at, size);
        }
    }
}

/// Handles 1, 2, 3, … (0 invalid) mapping to values; freed handles are reused first, the most
/// recently freed first (docs/driver.md §8.2). Slot `i` holds handle `i + 1`.
#[derive(Debug)]
pub(crate) struct HandleTable<T> {
    slots: Vec<Option<T>>,
    /// Freed slot indices; the last one is reused next.
    freed: Vec<usize>,
    live: usize,
}

impl<T> HandleTable<T> {
    /// An empty table.
    pub(crate) fn new() -> Self {
        HandleTable {
            slots: Vec::new(),
            freed: Vec::new(),
            live: 0,
        }
    }

    /// The slot index of handle `h`.
    pub(crate) fn slot_of(h: MemHandle) -> Option<usize> {
        usize::try_from(h.raw() - 1).ok()
    }

    /// The handle of slot `i`.
    pub(crate) fn handle_of(i: usize) -> Option<MemHandle> {
        MemHandle::new((i as u64).checked_add(1)?)
    }

    /// Whether another value can be inserted.
    pub(crate) fn has_room(&self) -> bool {
        !self.freed.is_empty() || (self.slots.len() as u64) < MAX_HANDLES
    }

    /// Stores `v` under the next handle (`None` if the table is full).
    pub(crate) fn insert(&mut self, v: T) -> Option<(MemHandle, usize)> {
        let slot = match self.freed.pop() {
            Some(i) => {
                *self.slots.get_mut(i)? = Some(v);
                i
            }
            None => {
                if !self.has_room() {
                    return None;
                }
                self.slots.push(Some(v));
                self.slots.len() - 1
            }
        };
        self.live += 1;
        Some((Self::handle_of(slot)?, slot))
    }

    /// The value of handle `h`.
    pub(crate) fn get(&self, h: MemHandle) -> Option<&T> {
        self.slot(Self::slot_of(h)?)
    }

    /// The value in slot `i`.
    #[inline]
    pub(crate) fn slot(&self, i: usize) -> Option<&T> {
        self.slots.get(i)?.as_ref()
    }

    /// Removes handle `h`, making it the next handle reused.
    pub(crate) fn remove(&mut self, h: MemHandle) -> Option<T> {
        let i = Self::slot_of(h)?;
        let v = self.slots.get_mut(i)?.take()?;
        self.freed.push(i);
        self.live -= 1;
        Some(v)
    }

    /// Number of live values.
    pub(crate) fn live(&self) -> usize {
        self.live
    }
}
