//! `libnrt_emu_shim.so`: an `LD_PRELOAD` device shim, in the manner of Mesa's drm-shim. Loaded
//! into any program, it makes `/dev/neuron0` appear and answers the program's `open`, `close`,
//! `ioctl`, `mmap`, `munmap`, `dup*`, `fcntl`, `stat*` and `access` on that node from the simulator, through the
//! same kernel-ABI emulation the in-process tests use ([`nrt_kabi::EmulatedDriver`]). Every
//! other call goes to the real libc function (`dlsym(RTLD_NEXT, …)`), so the program's ordinary
//! file, pipe and memory-mapping I/O is untouched.
//!
//! ```sh
//! cargo build --release -p nrt-emu-shim
//! LD_PRELOAD=target/release/libnrt_emu_shim.so NRT_EMU_SHIM_TARGET=trn1 \
//!     nrt-emu run model.neff --backend driver
//! ```
//!
//! # Configuration (environment, read at the first open of a device node)
//!
//! * `NRT_EMU_SHIM_TARGET=trn1|trn2` — the device generation (default `trn1`);
//! * `NRT_EMU_SHIM_DEVICES=N` — how many device nodes, `/dev/neuron0` … `/dev/neuron<N-1>`
//!   (default 1, at most 16);
//! * `NRT_EMU_SHIM_LOG=1` — one line on stderr per call the shim answers.
//!
//! # What is and is not intercepted
//!
//! * Paths of the form `/dev/neuron<N>` (absolute, as the driver backend opens them) belong to the
//!   shim: an index beyond the configured count gives `ENOENT`, so a real device on the machine
//!   is hidden, never mixed in. `stat`, `statx` and `access` of the nodes report character
//!   devices ([`node`]), so `test -e /dev/neuron0` and `Path::exists` agree with `open`. The
//!   backend reads no sysfs file, so the shim provides none.
//! * A descriptor of an emulated node is a real descriptor of `/dev/null` (so its number is
//!   reserved by the kernel and can never collide with a real file) mapped, in the shim's table,
//!   to a descriptor of the emulation. `dup`, `dup2`, `dup3` and `fcntl(F_DUPFD[_CLOEXEC])` share
//!   that open file, like the kernel; the emulation's descriptor is closed with the last one.
//!   Other `fcntl` commands act on the placeholder (`F_GETFD`/`F_SETFD` behave as expected).
//! * `mmap` of an emulated node needs `MAP_SHARED` and no `MAP_FIXED` (`EINVAL` otherwise), and
//!   returns the simulator's backing store of the allocation; `munmap` must unmap a whole such
//!   mapping.
//! * glibc's stdio (`fopen`) and anything that enters the kernel without going through the
//!   exported libc symbols (raw `syscall(2)`, glibc-internal calls) is not seen; the driver
//!   backend, like the Neuron runtime, uses `open`/`ioctl`/`mmap` directly.
//!
//! # Soundness
//!
//! `open`, `openat`, `fcntl` and `ioctl` are C variadic functions, which stable Rust cannot
//! define; `src/variadic.c` (compiled by `cc`) implements them, reads the optional argument the
//! way glibc's wrappers do, and calls the fixed-arity Rust entry points in [`entry`]. The libc
//! names are exported by naked Rust functions that tail-jump to the C ones ([`trampoline`]
//! says why). Rust calls the
//! real variadic functions through typed variadic function pointers, which stable Rust supports.
//! The shim's own locks are never held while it calls the emulation or libc, so the emulation's
//! own allocations and mappings (which come back through these same entry points) cannot
//! deadlock.

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod device;
pub mod entry;
mod files;
pub mod node;
mod real;
pub mod trampoline;
