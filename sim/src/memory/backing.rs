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
//! check, so host writes through the mapping are not aliasing violations. This is the only module
//! of `memory` that contains `unsafe` code.

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
            return os::map_zeroed(len)
                .map(|ptr| Block {
                    ptr,
                    len,
                    origin: Origin::Mapped,
                })
                .ok_or(BlockAllocFailed);
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
    pub(crate) fn write(&mut self, offset: usize, src: &[u8]) -> Result<(), OutOfBounds> {
        self.check(offset, src.len())?;
        // SAFETY: the destination range is inside the live block (checked); `src` is a distinct
        // Rust buffer, so the ranges do not overlap.
        unsafe {
            ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.as_ptr().add(offset), src.len());
        }
        Ok(())
    }

    /// Sets `len` bytes at `offset` to `value`.
    pub(crate) fn fill(&mut self, offset: usize, value: u8, len: usize) -> Result<(), OutOfBounds> {
        self.check(offset, len)?;
        // SAFETY: the range is inside the live block (checked).
        unsafe {
            ptr::write_bytes(self.ptr.as_ptr().add(offset), value, len);
        }
        Ok(())
    }

    /// Moves `len` bytes from `src` to `dst` inside this block (memmove: ranges may overlap).
    pub(crate) fn copy_within(
        &mut self,
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
        &mut self,
        dst_off: usize,
        src: &Block,
        src_off: usize,
        len: usize,
    ) -> Result<(), OutOfBounds> {
        src.check(src_off, len)?;
        self.check(dst_off, len)?;
        // SAFETY: both ranges are inside live blocks (checked). `src` and `self` are distinct
        // blocks (one borrowed shared, one exclusively), and distinct blocks are distinct heap
        // allocations, so the ranges cannot overlap.
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
