//! `libnrt_emu_shim.so`: an `LD_PRELOAD` device shim, in the manner of Mesa's drm-shim. Loaded
//! into any program, it makes `/dev/neuron0` appear and answers the program's `open`, `close`,
//! `ioctl`, `mmap`, `munmap`, `dup*`, `fcntl`, `stat*` and `access` on that node from the simulator, through the
//! same kernel-ABI emulation the in-process tests use ([`nrt_kabi::EmulatedDriver`]). It also
//! shows what a device host shows around the nodes (docs/driver.md §13): listings of `/dev`
//! contain them, and the driver's sysfs tree describes the devices with counters kept live from
//! the simulators — of this process and of every other process emulating the same devices. Every
//! other call goes to the real libc function (`dlsym(RTLD_NEXT, …)`), so the program's ordinary
//! file, pipe and memory-mapping I/O is untouched.
//!
//! | module | owns |
//! |---|---|
//! | [`entry`] | `open*`, `close`, `dup*`, `fcntl`, `ioctl`, `mmap`, `munmap`, `fopen*`: device descriptors and sysfs files |
//! | [`node`] | `stat*`, `fstat*`, `access`, `faccessat`, `readlink*`, `*xattr` of the nodes and the tree |
//! | [`dirs`] | directory streams and descriptors: `opendir`, `fdopendir`, `readdir*`, `closedir`, `rewinddir`, `scandir*`, `glob*` |
//! | [`cwd`] | `chdir`, `fchdir`, `getcwd`: a working directory in `/dev` or in the tree |
//! | `vfs` | which paths are the tree's, their metadata, and opening them |
//! | `device` | the configuration, the emulated devices, their published counters |
//! | `files` | the table of device descriptors and mappings |
//! | `real` | the real libc functions |
//! | [`trampoline`] | the variadic entry points' exported names |
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
//! * `NRT_EMU_SHIM_LOG=1` — one line on stderr per call the shim answers;
//! * `NRT_EMU_SHIM_STATE_DIR=DIR` — where processes publish their devices' counters for each
//!   other (default `/dev/shm/nrt-emu-shim-<uid>`; empty: each process sees only its own,
//!   [`nrt_kabi::registry`]).
//!
//! # What is and is not intercepted
//!
//! * Paths of the form `/dev/neuron<N>` (absolute, as the driver backend opens them) belong to the
//!   shim: an index beyond the configured count gives `ENOENT`, so a real device on the machine
//!   is hidden, never mixed in. `stat`, `statx` and `access` of the nodes report character
//!   devices ([`node`]), so `test -e /dev/neuron0` and `Path::exists` agree with `open`. Listing
//!   `/dev` shows exactly the configured nodes ([`dirs`]).
//! * Paths under `/sys/devices/virtual/neuron_device/`, `/sys/class/neuron_device/` and
//!   `/sys/module/neuron/` are the sysfs tree of the emulated devices (`vfs`): directories,
//!   read-only attribute files whose content is rendered when they are opened, the class links;
//!   listings of `/sys/devices/virtual`, `/sys/class` and `/sys/module` gain their entry. A
//!   real Neuron driver's tree is hidden, as its devices are.
//! * A descriptor of an emulated node is a real descriptor of `/dev/null` (so its number is
//!   reserved by the kernel and can never collide with a real file) mapped, in the shim's table,
//!   to a descriptor of the emulation. `dup`, `dup2`, `dup3` and `fcntl(F_DUPFD[_CLOEXEC])` share
//!   that open file, like the kernel; the emulation's descriptor is closed with the last one.
//!   Other `fcntl` commands act on the placeholder (`F_GETFD`/`F_SETFD` behave as expected).
//! * `mmap` of an emulated node needs `MAP_SHARED` and no `MAP_FIXED` (`EINVAL` otherwise), and
//!   returns the simulator's backing store of the allocation; `munmap` must unmap a whole such
//!   mapping.
//! * glibc's stdio (`fopen`) of a device node and anything that enters the kernel without going
//!   through the exported libc symbols (raw `syscall(2)`, `getdents64`, glibc-internal calls) is
//!   not seen; the driver backend, like the Neuron runtime, uses `open`/`ioctl`/`mmap`
//!   directly, and `fopen` of a sysfs file is answered. glibc's `glob` and `scandir` list
//!   through internal calls, so the shim interposes them too ([`dirs`]).
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
//! deadlock. A call on a path without `neuron` in it, or on a descriptor or directory stream
//! the shim does not own, takes no lock and allocates nothing before it is forwarded (an
//! atomic count of the shim's entries says whether a table can hold it), so a program that
//! touches no Neuron path — a signal handler included — runs as without the shim.

#![warn(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod cwd;
mod device;
pub mod dirs;
pub mod entry;
mod files;
pub mod node;
mod real;
pub mod trampoline;
mod vfs;
