//! The injectable syscall layer under [`super::DriverHal`]: `open`, `close`, `ioctl`, `mmap`,
//! `munmap` on a device node, as the trait [`Syscalls`], and [`RealSyscalls`], its
//! implementation over the Linux system calls (through nix).
//!
//! Another implementation answers the same calls in-process (`nrt_kabi::EmulatedDriver`), so
//! the driver backend itself runs against the simulator, byte for byte the same ioctl traffic
//! it sends to `/dev/neuronN`.
//!
//! # Return convention of [`Syscalls::ioctl`]
//!
//! Exactly what `ioctl(2)` gives user space (docs/driver.md §2.3): `Err(errno)` when the driver
//! returned a negative errno (`ioctl()` returned -1 and set `errno`; a literal `-1` from the
//! driver therefore shows up as `EPERM`); `Ok(n)` for any non-negative return, **including
//! positive values** — the driver returns the raw result of `copy_to_user` (a count of bytes not
//! copied) on many paths, and positive `EINVAL` (22) from `MEM_GET_EXTENDED_INFO` with a bad
//! handle. This layer passes them through; the backend decides what they mean.

use std::os::fd::{BorrowedFd, RawFd};
use std::ptr::NonNull;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::mman::{MapFlags, ProtFlags};
use nix::sys::stat::Mode;

/// The system calls the driver backend makes. See the module docs for the return convention.
pub trait Syscalls: Send + Sync {
    /// Opens a device node (`/dev/neuron<N>`), returning a file descriptor.
    fn open(&self, path: &str, flags: OFlag) -> Result<RawFd, Errno>;

    /// Closes a file descriptor returned by [`Syscalls::open`]. Callers pass only descriptors
    /// they opened through this layer and no longer use.
    fn close(&self, fd: RawFd) -> Result<(), Errno>;

    /// `ioctl(fd, request, arg)`: the driver copies the argument struct of `request` from `arg`
    /// (its true size, [`crate::abi::Ioctl::arg_size`], not the size encoded in `request`),
    /// follows the user pointers inside it, and may write results back into it or through those
    /// pointers. Returns the driver's non-negative result unchanged (module docs).
    ///
    /// # Safety
    ///
    /// `arg` is null or points to memory valid for reads and writes of the argument struct of
    /// `request` (its [`arg_size`](crate::abi::Ioctl::arg_size) bytes). Every user pointer inside
    /// that struct is null or valid for the access the ABI (docs/driver.md §3) implies for the
    /// sizes in the struct: reads of a buffer copied to the device, writes of a buffer or of an
    /// out-value the driver fills. None of these regions is accessed by anything else during the
    /// call.
    unsafe fn ioctl(&self, fd: RawFd, request: u32, arg: *mut u8) -> Result<i32, Errno>;

    /// Maps `len` bytes of the device at mmap `offset` (a device-visible physical address, ABI
    /// docs/driver.md §7) shared and read-write into the process.
    ///
    /// # Safety
    ///
    /// The returned memory aliases device memory that the device reads and writes
    /// asynchronously; the caller follows the `# Safety` contract of [`crate::Hal::map`] for every
    /// access through it, and unmaps it with [`Syscalls::munmap`] on the same layer.
    unsafe fn mmap(&self, fd: RawFd, len: usize, offset: u64) -> Result<NonNull<u8>, Errno>;

    /// Unmaps a mapping made by [`Syscalls::mmap`].
    ///
    /// # Safety
    ///
    /// `ptr` and `len` are exactly those of one earlier successful [`Syscalls::mmap`] on this
    /// layer that was not yet unmapped, and no reference into the mapping is used afterwards.
    unsafe fn munmap(&self, ptr: NonNull<u8>, len: usize) -> Result<(), Errno>;
}

/// [`Syscalls`] over the real Linux system calls (nix / libc).
#[derive(Debug, Clone, Copy, Default)]
pub struct RealSyscalls;

impl Syscalls for RealSyscalls {
    fn open(&self, path: &str, flags: OFlag) -> Result<RawFd, Errno> {
        use std::os::fd::IntoRawFd;
        let fd = nix::fcntl::open(path, flags, Mode::empty())?;
        Ok(fd.into_raw_fd())
    }

    fn close(&self, fd: RawFd) -> Result<(), Errno> {
        // SAFETY: close(2) takes a plain integer and touches no memory of ours; the trait contract
        // has callers pass only descriptors they opened here and no longer use, so no other owner
        // of the descriptor is affected.
        let r = unsafe { nix::libc::close(fd) };
        Errno::result(r).map(drop)
    }

    unsafe fn ioctl(&self, fd: RawFd, request: u32, arg: *mut u8) -> Result<i32, Errno> {
        // `request` is the exact 32-bit number (hazard 1); `ioctl_num_type` is `c_ulong` on glibc
        // and `c_int` on musl, and the cast keeps the bit pattern either way.
        let request = request as nix::sys::ioctl::ioctl_num_type;
        // SAFETY: forwarded from this function's contract: `arg` is null or valid for the
        // argument struct of `request`, and the pointers inside it are valid for what the driver
        // does with them. The kernel validates every user address itself in any case.
        let r = unsafe { nix::libc::ioctl(fd, request, arg.cast::<nix::libc::c_void>()) };
        // -1 with errno is failure; anything else (0 or a positive driver status) passes through.
        Errno::result(r)
    }

    unsafe fn mmap(&self, fd: RawFd, len: usize, offset: u64) -> Result<NonNull<u8>, Errno> {
        let len = core::num::NonZeroUsize::new(len).ok_or(Errno::EINVAL)?;
        let offset = nix::libc::off_t::try_from(offset).map_err(|_| Errno::EINVAL)?;
        // SAFETY: the descriptor stays open for the duration of this call: the caller holds it
        // (it came from `open` and is not closed concurrently by the backend, which closes it only
        // on drop).
        let fd = unsafe { BorrowedFd::borrow_raw(fd) };
        // SAFETY: a fresh shared mapping at an address the kernel chooses (`addr` = None) cannot
        // overlap existing Rust allocations; how the caller uses the memory is governed by this
        // function's `# Safety` contract.
        let p = unsafe {
            nix::sys::mman::mmap(
                None,
                len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                fd,
                offset,
            )
        }?;
        Ok(p.cast())
    }

    unsafe fn munmap(&self, ptr: NonNull<u8>, len: usize) -> Result<(), Errno> {
        // SAFETY: per this function's contract `ptr`/`len` describe exactly one live mapping made
        // by `mmap` above, and nothing references it any more.
        unsafe { nix::sys::mman::munmap(ptr.cast(), len) }
    }
}
