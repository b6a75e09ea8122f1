//! Backing store: the host memory behind each allocation of device HBM or host DMA memory.
//!
//! Implements the "sparse, zero-initialised" half of docs/simulator.md §2 *Memory*: every allocation owns
//! one [`Block`], a zero-filled heap block obtained so that pages nobody wrote are never
//! committed. A trn2 device's 96 GiB of HBM therefore costs host memory only for the pages that
//! were actually written.
//!
//! - Blocks of at least [`MMAP_THRESHOLD`] bytes on Linux (x86-64, aarch64) are private anonymous
//!   mappings with `MAP_NORESERVE`: the kernel supplies zero pages on first touch and does not
//!   charge the whole size against the overcommit heuristic, so a 24 GiB allocation succeeds on
//!   a machine with less RAM as long as little of it is written.
//! - Smaller blocks (and all blocks on other hosts) come from `std::alloc::alloc_zeroed` with
//!   alignment 1, which the system allocator serves with `calloc` (itself lazily mapped for large
//!   sizes). Alignment above 16 is deliberately avoided: it makes the allocator `memset` — and
//!   so commit — every page.
//!
//! # Aliasing contract
//!
//! A block never moves while it is allocated: `Hal::map` hands its raw pointer to host code,
//! which may write through it at any time the HAL's `# Safety` contract allows. The simulator
//! therefore never forms a `&[u8]` or `&mut [u8]` over a block's bytes; every access here is a
//! raw-pointer copy (`ptr::copy`, `ptr::copy_nonoverlapping`, `ptr::write_bytes`) after a bounds
//! check, so host writes through the mapping are not aliasing violations. For the same reason every
//! access takes `&self`: the clock domains of a device and the HAL's host calls reach blocks
//! from several threads at once (docs/simulator.md §8.1). Accesses to distinct bytes are
//! independent; two unsynchronised accesses to the same bytes are a race of the program being
//! simulated, as they would be on the device (vm-memory's guest-memory model). This is the only
//! module of `memory` that contains `unsafe` code.

use core::ptr::{self, NonNull};

/// Blocks at least this large are anonymous `MAP_NORESERVE` mappings (where supported).
pub(crate) const MMAP_THRESHOLD: usize = 256 << 10;

/// A bounds check of a block access failed (an internal inconsistency: callers check first).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OutOfBounds;

/// The host could not provide the memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockAllocFailed;

/// How a block was obtained, so that it is released the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// `std::alloc::alloc_zeroed` with `Layout(len, 1)`.
    Heap,
    /// An anonymous private mapping (`mmap`).
    #[cfg_attr(
        not(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        )),
        allow(dead_code)
    )]
    Mapped,
}

/// A zero-initialised, never-moving block of host memory backing one allocation.
#[derive(Debug)]
pub(crate) struct Block {
    ptr: NonNull<u8>,
    len: usize,
    origin: Origin,
}

// SAFETY: a `Block` exclusively owns its heap block (nothing else frees it), and it holds no
// thread-affine state; moving it to another thread moves that ownership.
unsafe impl Send for Block {}
// SAFETY: through `&Block` the simulator only reads the block (`read`, the source of
// `copy_from`); every write takes `&mut Block`. Host code writing through a `Hal::map` mapping
// concurrently with device accesses is excluded by the `# Safety` contract of `Hal::map`.
unsafe impl Sync for Block {}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod os {
    //! The two libc calls the mapped path needs; std already links libc. Constants are the
    //! generic Linux values shared by x86-64 and aarch64.
    use core::ffi::{c_int, c_void};

    pub(super) const PROT_READ: c_int = 0x1;
    pub(super) const PROT_WRITE: c_int = 0x2;
    pub(super) const MAP_PRIVATE: c_int = 0x02;
    pub(super) const MAP_ANONYMOUS: c_int = 0x20;
    pub(super) const MAP_NORESERVE: c_int = 0x4000;
    pub(super) const MADV_DONTNEED: c_int = 4;

    extern "C" {
        pub(super) fn mmap(
            addr: *mut c_void,
            len: usize,
            prot: c_int,
            flags: c_int,
            fd: c_int,
            offset: i64,
        ) -> *mut c_void;
        pub(super) fn munmap(addr: *mut c_void, len: usize) -> c_int;
        pub(super) fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
    }

    /// Drops every page of the mapping `p, len` made by [`map_zeroed`]: the next access of a
    /// page sees zeros again (private anonymous memory), and the pages' memory is released.
    /// Returns whether the kernel did it.
    ///
    /// # Safety
    ///
    /// `p, len` came from `map_zeroed(len)`, and no reference to its bytes is live.
    pub(super) unsafe fn discard(p: core::ptr::NonNull<u8>, len: usize) -> bool {
        // SAFETY: per this function's contract the range is exactly one live private anonymous
        // mapping we own with no borrow of its bytes; MADV_DONTNEED only replaces its pages by
        // zero-fill-on-demand ones.
        unsafe { madvise(p.as_ptr().cast::<c_void>(), len, MADV_DONTNEED) == 0 }
    }

    /// Bytes of the mapping `p, len` (page-aligned start) backed by memory this process owns
    /// alone: pages present in `/proc/self/pagemap` with the "exclusively mapped" bit (56) set.
    /// A page that was only read maps the kernel's shared zero page, which is present but not
    /// exclusive, so it does not count. `None` if pagemap cannot be read.
    pub(super) fn committed_bytes(p: core::ptr::NonNull<u8>, len: usize) -> Option<u64> {
        use std::io::{Read, Seek, SeekFrom};
        const PAGE: usize = 4096;
        const PRESENT: u64 = 1 << 63;
        const EXCLUSIVE: u64 = 1 << 56;
        let first = p.as_ptr() as usize / PAGE;
        let pages = len.div_ceil(PAGE);
        let mut f = std::fs::File::open("/proc/self/pagemap").ok()?;
        f.seek(SeekFrom::Start(first as u64 * 8)).ok()?;
        let mut buf = [0u8; 8 * 512];
        let mut left = pages;
        let mut committed = 0u64;
        while left > 0 {
            let n = left.min(512);
            f.read_exact(&mut buf[..n * 8]).ok()?;
            for e in buf[..n * 8].chunks_exact(8) {
                let v = u64::from_le_bytes(e.try_into().expect("8 bytes"));
                if v & PRESENT != 0 && v & EXCLUSIVE != 0 {
                    committed += PAGE as u64;
                }
            }
            left -= n;
        }
        Some(committed)
    }

    /// Maps `len` zeroed bytes, or returns `None`.
    pub(super) fn map_zeroed(len: usize) -> Option<core::ptr::NonNull<u8>> {
        // SAFETY: an anonymous private mapping at a kernel-chosen address touches no existing
        // memory; failure is reported as MAP_FAILED (-1), which is checked.
        let p = unsafe {
            mmap(
                core::ptr::null_mut(),
                len,
                PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p as isize == -1 {
            return None;
        }
        core::ptr::NonNull::new(p.cast::<u8>())
    }

    /// Unmaps a mapping made by [`map_zeroed`].
    ///
    /// # Safety
    ///
    /// `p, len` came from `map_zeroed(len)` and are not used afterwards.
    pub(super) unsafe fn unmap(p: core::ptr::NonNull<u8>, len: usize) {
        // SAFETY: per this function's contract the range is exactly one live mapping we own.
        // A failure (impossible for a valid mapping) would only leak address space.
        unsafe {
            munmap(p.as_ptr().cast::<c_void>(), len);
        }
    }
}

impl Block {
    /// A zero-filled block of `len` bytes (`len > 0`), committed lazily.
    pub(crate) fn zeroed(len: usize) -> Result<Block, BlockAllocFailed> {
        if len == 0 {
            return Err(BlockAllocFailed);
        }
        #[cfg(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        if len >= MMAP_THRESHOLD {
            return Block::mapped(len);
        }
        let layout = std::alloc::Layout::from_size_align(len, 1).map_err(|_| BlockAllocFailed)?;
        // SAFETY: `layout` has a non-zero size (checked above). Alignment 1 keeps the system
        // allocator on its `calloc` path, which does not touch fresh pages.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        NonNull::new(p)
            .map(|ptr| Block {
                ptr,
                len,
                origin: Origin::Heap,
            })
            .ok_or(BlockAllocFailed)
    }

    /// A zero-filled block of `len` bytes (`len > 0`) that is an anonymous mapping whatever its
    /// size (where supported), so that its pages can be counted and discarded. Elsewhere it is
    /// a heap block, as [`Block::zeroed`] gives.
    fn mapped(len: usize) -> Result<Block, BlockAllocFailed> {
        #[cfg(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        if len > 0 {
            return os::map_zeroed(len)
                .map(|ptr| Block {
                    ptr,
                    len,
                    origin: Origin::Mapped,
                })
                .ok_or(BlockAllocFailed);
        }
        Block::zeroed(len)
    }

    /// The block's first byte. Stable for the block's whole life.
    pub(crate) fn ptr(&self) -> NonNull<u8> {
        self.ptr
    }

    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Checks that `[offset, offset + len)` lies inside the block.
    #[inline]
    fn check(&self, offset: usize, len: usize) -> Result<(), OutOfBounds> {
        match offset.checked_add(len) {
            Some(end) if end <= self.len => Ok(()),
            _ => Err(OutOfBounds),
        }
    }

    /// Copies `dst.len()` bytes starting at `offset` into `dst`.
    #[inline]
    pub(crate) fn read(&self, offset: usize, dst: &mut [u8]) -> Result<(), OutOfBounds> {
        self.check(offset, dst.len())?;
        // SAFETY: the source range is inside the live block (checked); `dst` is a distinct Rust
        // buffer (it cannot alias the block: no reference to block bytes is ever created).
        unsafe {
            ptr::copy_nonoverlapping(self.ptr.as_ptr().add(offset), dst.as_mut_ptr(), dst.len());
        }
        Ok(())
    }

    /// Copies `src` into the block at `offset`.
    #[inline]
    pub(crate) fn write(&self, offset: usize, src: &[u8]) -> Result<(), OutOfBounds> {
        self.check(offset, src.len())?;
        // SAFETY: the destination range is inside the live block (checked); `src` is a distinct
        // Rust buffer, so the ranges do not overlap.
        unsafe {
            ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.as_ptr().add(offset), src.len());
        }
        Ok(())
    }

    /// Sets `len` bytes at `offset` to `value`.
    pub(crate) fn fill(&self, offset: usize, value: u8, len: usize) -> Result<(), OutOfBounds> {
        self.check(offset, len)?;
        // SAFETY: the range is inside the live block (checked).
        unsafe {
            ptr::write_bytes(self.ptr.as_ptr().add(offset), value, len);
        }
        Ok(())
    }

    /// Moves `len` bytes from `src` to `dst` inside this block (memmove: ranges may overlap).
    pub(crate) fn copy_within(
        &self,
        src: usize,
        dst: usize,
        len: usize,
    ) -> Result<(), OutOfBounds> {
        self.check(src, len)?;
        self.check(dst, len)?;
        let base = self.ptr.as_ptr();
        // SAFETY: both ranges are inside the live block (checked); `ptr::copy` allows overlap.
        unsafe {
            ptr::copy(base.add(src), base.add(dst), len);
        }
        Ok(())
    }

    /// Copies `len` bytes at `src_off` of another block `src` to `dst_off` of this one.
    pub(crate) fn copy_from(
        &self,
        dst_off: usize,
        src: &Block,
        src_off: usize,
        len: usize,
    ) -> Result<(), OutOfBounds> {
        src.check(src_off, len)?;
        self.check(dst_off, len)?;
        // SAFETY: both ranges are inside live blocks (checked). Callers pass two distinct
        // blocks, and distinct blocks are distinct host allocations, so the ranges cannot
        // overlap.
        unsafe {
            ptr::copy_nonoverlapping(
                src.ptr.as_ptr().add(src_off),
                self.ptr.as_ptr().add(dst_off),
                len,
            );
        }
        Ok(())
    }
}

/// A zero-initialised buffer whose pages are materialised on first write: on Linux an anonymous
/// private mapping, so an untouched page costs nothing, a page that is only read maps the
/// kernel's shared zero page (still no memory of ours), and [`ZeroPages::clear`] hands every page
/// back. Unlike a [`Block`] it is never host-mapped: it is owned by Rust code alone, which gets
/// plain slices of it (the compute engines work on `&[u8]` / `&mut [u8]`).
pub(crate) struct ZeroPages {
    block: Block,
}

impl ZeroPages {
    /// `len` zeroed bytes (`len > 0`); creating them commits no page.
    ///
    /// # Panics
    ///
    /// If the host cannot reserve the address space (as `vec!` would on allocation failure).
    pub(crate) fn new(len: usize) -> ZeroPages {
        let block =
            Block::mapped(len).unwrap_or_else(|_| std::alloc::handle_alloc_error(layout_of(len)));
        ZeroPages { block }
    }

    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.block.len
    }

    /// The bytes.
    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: the block is live for `&self`'s lifetime, `len` bytes long and initialised
        // (zero-filled at creation). A `ZeroPages` is never handed to host code (no `Hal::map`
        // of it exists), so the only accesses are through this value, and the borrow checker
        // orders them (`&self` here, `&mut self` for writes).
        unsafe { core::slice::from_raw_parts(self.block.ptr.as_ptr(), self.block.len) }
    }

    /// The bytes, mutably.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`; `&mut self` makes this the only live borrow.
        unsafe { core::slice::from_raw_parts_mut(self.block.ptr.as_ptr(), self.block.len) }
    }

    /// Sets every byte back to zero and releases the pages (a mapped buffer drops them; the
    /// heap fallback zeroes in place).
    pub(crate) fn clear(&mut self) {
        #[cfg(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        if self.block.origin == Origin::Mapped {
            // SAFETY: the block is exactly one mapping of ours, and `&mut self` excludes any
            // borrow of its bytes.
            if unsafe { os::discard(self.block.ptr, self.block.len) } {
                return;
            }
        }
        let len = self.block.len;
        let _ = self.block.fill(0, 0, len);
    }

    /// Bytes of host memory committed to this buffer (pages written since creation or the last
    /// [`ZeroPages::clear`]), where the host can tell (Linux); `None` elsewhere.
    pub(crate) fn committed_bytes(&self) -> Option<u64> {
        #[cfg(all(
            target_os = "linux",
            any(target_arch = "x86_64", target_arch = "aarch64")
        ))]
        if self.block.origin == Origin::Mapped {
            return os::committed_bytes(self.block.ptr, self.block.len);
        }
        None
    }
}

fn layout_of(len: usize) -> std::alloc::Layout {
    std::alloc::Layout::from_size_align(len.max(1), 1).unwrap_or(std::alloc::Layout::new::<u8>())
}

impl core::fmt::Debug for ZeroPages {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ZeroPages")
            .field("len", &self.block.len)
            .finish()
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        match self.origin {
            Origin::Heap => {
                if let Ok(layout) = std::alloc::Layout::from_size_align(self.len, 1) {
                    // SAFETY: the block was obtained from `alloc_zeroed` with exactly this
                    // layout and is released once, here.
                    unsafe { std::alloc::dealloc(self.ptr.as_ptr(), layout) }
                }
            }
            Origin::Mapped => {
                #[cfg(all(
                    target_os = "linux",
                    any(target_arch = "x86_64", target_arch = "aarch64")
                ))]
                // SAFETY: the block was mapped by `os::map_zeroed(self.len)` and is unmapped once,
                // here; nothing uses the pointer afterwards.
                unsafe {
                    os::unmap(self.ptr, self.len)
                }
            }
        }
    }
}
