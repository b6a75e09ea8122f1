//! The functions the shim exports: the fixed-arity halves of the variadic entry points (called by
//! `src/variadic.c`) and the non-variadic libc functions it interposes directly. Each one decides
//! whether the call concerns an emulated device node (crate docs) and either answers it from
//! [`nrt_kabi::EmulatedDriver`] or forwards it, arguments unchanged, to the real function.
//!
//! # Safety
//!
//! These are the C library's functions with the C library's contracts: a caller passes what
//! `open(2)`, `ioctl(2)`, `mmap(2)` … require (valid NUL-terminated paths, argument pointers
//! valid for the request, mappings it owns). The shim adds no requirement of its own.

use std::ffi::{c_char, c_int, c_ulong, c_void, CStr};
use std::ptr::NonNull;
use std::sync::Arc;

use nrt_hal::abi::Ioctl;
use nrt_hal::driver::{OFlag, Syscalls};

use crate::device::{self, DeviceFile};
use crate::files::{self, Unmap};
use crate::real::{self, set_errno, Mode};
use crate::vfs::{self, Found};

/// Which open function the program called, so a forwarded call reaches the same real one
/// (numbers as passed by `src/variadic.c` and the `__open*_2` wrappers below).
#[derive(Clone, Copy)]
enum OpenVariant {
    Open,
    Open64,
    Openat,
    Openat64,
    Open2,
    Open64_2,
    Openat2,
    Openat64_2,
}

impl OpenVariant {
    fn from_raw(v: c_int) -> Option<OpenVariant> {
        use OpenVariant::*;
        [
            Open, Open64, Openat, Openat64, Open2, Open64_2, Openat2, Openat64_2,
        ]
        .get(usize::try_from(v).ok()?)
        .copied()
    }
}

/// Fails the current call with `errno` = `e`: -1, like libc.
fn fail(e: c_int) -> c_int {
    set_errno(e);
    -1
}

/// Fixed-arity `open`/`open64`/`openat`/`openat64`/`__open*_2`.
///
/// # Safety
///
/// As `openat(2)`; `variant` is one of the numbers `src/variadic.c` passes.
#[no_mangle]
pub unsafe extern "C" fn nrt_emu_shim_openat(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mode: Mode,
    variant: c_int,
) -> c_int {
    // SAFETY: the function's contract: a NUL-terminated path.
    match unsafe { vfs::lookup(dirfd, path, flags & libc::O_NOFOLLOW == 0) } {
        Some(Found::Device(Ok(index))) => return open_device(index, flags),
        Some(Found::Device(Err(e))) => {
            if e == libc::ENODEV {
                // Reports the configuration error (once).
                let _ = device::driver();
            }
            return fail(e);
        }
        Some(Found::Sys(Ok((canon, node)))) => return vfs::open(&canon, &node, flags),
        Some(Found::Sys(Err(e))) => {
            // Nothing can be created in sysfs.
            let e = if e == libc::ENOENT && flags & libc::O_CREAT != 0 {
                libc::EACCES
            } else {
                e
            };
            return fail(e);
        }
        None => {}
    }
    let Some(variant) = OpenVariant::from_raw(variant) else {
        return fail(libc::EINVAL);
    };
    use OpenVariant::*;
    // SAFETY: forwarding the caller's arguments unchanged to the function it called.
    let r = unsafe {
        match variant {
            Open => real::open().map(|f| f(path, flags, mode)),
            Open64 => real::open64().map(|f| f(path, flags, mode)),
            Openat => real::openat().map(|f| f(dirfd, path, flags, mode)),
            Openat64 => real::openat64().map(|f| f(dirfd, path, flags, mode)),
            Open2 => real::open_2().map(|f| f(path, flags)),
            Open64_2 => real::open64_2().map(|f| f(path, flags)),
            Openat2 => real::openat_2().map(|f| f(dirfd, path, flags)),
            Openat64_2 => real::openat64_2().map(|f| f(dirfd, path, flags)),
        }
    };
    let fd = r.unwrap_or_else(|| fail(libc::ENOSYS));
    if fd >= 0 {
        // SAFETY: a non-null path is NUL-terminated (the open succeeded).
        crate::dirs::note_open(fd, unsafe { CStr::from_ptr(path) }.to_bytes(), flags);
    }
    fd
}

/// Opens emulated device node `index`: a placeholder descriptor for the number, the emulation's
/// descriptor for the file.
fn open_device(index: u32, flags: c_int) -> c_int {
    let driver = match device::driver() {
        Ok(d) => d,
        Err(e) => return fail(e),
    };
    let path = format!("/dev/neuron{index}");
    let emu_fd = match driver.open(&path, OFlag::from_bits_truncate(flags)) {
        Ok(fd) => fd,
        Err(e) => return fail(e as c_int),
    };
    let fd = real::open_placeholder(flags & libc::O_CLOEXEC != 0);
    let file = Arc::new(DeviceFile { emu_fd });
    if fd < 0 {
        let e = std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EMFILE);
        drop(file);
        return fail(e);
    }
    drop(files::insert(fd, file));
    device::note_runtime_version();
    if device::logging() {
        eprintln!("nrt-emu-shim: open({path:?}, {flags:#x}) = {fd}");
    }
    fd
}

/// Interposed `__open_2` (glibc's fortified `open` without a mode).
///
/// # Safety
///
/// As `open(2)`.
#[no_mangle]
pub unsafe extern "C" fn __open_2(path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { nrt_emu_shim_openat(libc::AT_FDCWD, path, flags, 0, 4) }
}

/// Interposed `__open64_2`.
///
/// # Safety
///
/// As `open(2)`.
#[no_mangle]
pub unsafe extern "C" fn __open64_2(path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { nrt_emu_shim_openat(libc::AT_FDCWD, path, flags, 0, 5) }
}

/// Interposed `__openat_2`.
///
/// # Safety
///
/// As `openat(2)`.
#[no_mangle]
pub unsafe extern "C" fn __openat_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { nrt_emu_shim_openat(dirfd, path, flags, 0, 6) }
}

/// Interposed `__openat64_2`.
///
/// # Safety
///
/// As `openat(2)`.
#[no_mangle]
pub unsafe extern "C" fn __openat64_2(dirfd: c_int, path: *const c_char, flags: c_int) -> c_int {
    // SAFETY: forwarded contract.
    unsafe { nrt_emu_shim_openat(dirfd, path, flags, 0, 7) }
}

/// Interposed `close`.
///
/// # Safety
///
/// As `close(2)`.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    crate::dirs::forget_fd(fd);
    let ours = files::remove(fd);
    let r = real::close_fd(fd);
    // The emulation's descriptor closes (if this was the last reference) after the table lock
    // is released; the placeholder is already closed.
    drop(ours);
    r
}

/// Interposed `dup`.
///
/// # Safety
///
/// As `dup(2)`.
#[no_mangle]
pub unsafe extern "C" fn dup(fd: c_int) -> c_int {
    let Some(f) = real::dup() else {
        return fail(libc::ENOSYS);
    };
    // SAFETY: plain integers.
    let r = unsafe { f(fd) };
    share(fd, r);
    r
}

/// Interposed `dup2`.
///
/// # Safety
///
/// As `dup2(2)`.
#[no_mangle]
pub unsafe extern "C" fn dup2(old: c_int, new: c_int) -> c_int {
    let Some(f) = real::dup2() else {
        return fail(libc::ENOSYS);
    };
    // SAFETY: plain integers.
    let r = unsafe { f(old, new) };
    if r >= 0 && old != new {
        share(old, r);
    }
    r
}

/// Interposed `dup3`.
///
/// # Safety
///
/// As `dup3(2)`.
#[no_mangle]
pub unsafe extern "C" fn dup3(old: c_int, new: c_int, flags: c_int) -> c_int {
    let Some(f) = real::dup3() else {
        return fail(libc::ENOSYS);
    };
    // SAFETY: plain integers.
    let r = unsafe { f(old, new, flags) };
    share(old, r);
    r
}

/// After a successful duplication of `old` into `new`: `new` now refers to what `old` does —
/// our device file, or a real file (forgetting a device file `new` may have referred to).
fn share(old: c_int, new: c_int) {
    if new < 0 {
        return;
    }
    crate::dirs::share_fd(old, new);
    let replaced = match files::lookup(old) {
        Some(file) => files::insert(new, file),
        None => files::remove(new),
    };
    drop(replaced);
}

/// Fixed-arity `fcntl`/`fcntl64`: forwarded to the real function (on the placeholder, for a
/// device descriptor); a duplication of a device descriptor shares its device file.
///
/// # Safety
///
/// As `fcntl(2)`; `variant` is 0 (`fcntl`) or 1 (`fcntl64`).
#[no_mangle]
pub unsafe extern "C" fn nrt_emu_shim_fcntl(
    fd: c_int,
    cmd: c_int,
    arg: *mut c_void,
    variant: c_int,
) -> c_int {
    let f = if variant == 1 {
        real::fcntl64()
    } else {
        real::fcntl()
    };
    let Some(f) = f else {
        return fail(libc::ENOSYS);
    };
    // SAFETY: forwarded unchanged; the pointer-sized argument is what glibc's wrapper passes on.
    let r = unsafe { f(fd, cmd, arg) };
    if cmd == libc::F_DUPFD || cmd == libc::F_DUPFD_CLOEXEC {
        share(fd, r);
    }
    r
}

/// Fixed-arity `ioctl`: a device descriptor's request goes to the emulation (the request number
/// truncated to 32 bits, as the kernel's `ioctl` system call takes it), anything else to libc.
///
/// # Safety
///
/// As `ioctl(2)`: `arg` is valid for what `request` does with it.
#[no_mangle]
pub unsafe extern "C" fn nrt_emu_shim_ioctl(
    fd: c_int,
    request: c_ulong,
    arg: *mut c_void,
) -> c_int {
    let Some(file) = files::lookup(fd) else {
        return match real::ioctl() {
            // SAFETY: forwarded unchanged.
            Some(f) => unsafe { f(fd, request, arg) },
            None => fail(libc::ENOSYS),
        };
    };
    let Some(driver) = device::existing() else {
        return fail(libc::EBADF);
    };
    let request = request as u32;
    // SAFETY: the caller's ioctl(2) contract is the emulation's `Syscalls::ioctl` contract.
    let r = unsafe { driver.ioctl(file.emu_fd, request, arg.cast()) };
    if device::logging() {
        let name = Ioctl::from_request(request).map_or("unknown", |c| c.name());
        eprintln!("nrt-emu-shim: ioctl({fd}, {name} {request:#010x}) = {r:?}");
    }
    match r {
        Ok(n) => n,
        Err(e) => fail(e as c_int),
    }
}

/// Interposed `mmap`.
///
/// # Safety
///
/// As `mmap(2)`.
#[no_mangle]
pub unsafe extern "C" fn mmap(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: libc::off_t,
) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { map(addr, len, prot, flags, fd, offset, false) }
}

/// Interposed `mmap64` (the same function on 64-bit targets).
///
/// # Safety
///
/// As `mmap(2)`.
#[no_mangle]
pub unsafe extern "C" fn mmap64(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: libc::off_t,
) -> *mut c_void {
    // SAFETY: forwarded contract.
    unsafe { map(addr, len, prot, flags, fd, offset, true) }
}

unsafe fn map(
    addr: *mut c_void,
    len: usize,
    prot: c_int,
    flags: c_int,
    fd: c_int,
    offset: libc::off_t,
    is64: bool,
) -> *mut c_void {
    let file = if flags & libc::MAP_ANONYMOUS != 0 {
        None
    } else {
        files::lookup(fd)
    };
    let Some(file) = file else {
        let f = if is64 { real::mmap64() } else { real::mmap() };
        return match f {
            // SAFETY: forwarded unchanged.
            Some(f) => unsafe { f(addr, len, prot, flags, fd, offset) },
            None => {
                set_errno(libc::ENOSYS);
                libc::MAP_FAILED
            }
        };
    };
    let refuse = |e| {
        set_errno(e);
        libc::MAP_FAILED
    };
    if flags & libc::MAP_SHARED == 0 || flags & libc::MAP_FIXED != 0 {
        return refuse(libc::EINVAL);
    }
    let (Ok(offset), Some(driver)) = (u64::try_from(offset), device::existing()) else {
        return refuse(libc::EINVAL);
    };
    // SAFETY: the caller's mmap(2) contract: it uses the shared device memory as such.
    let r = unsafe { driver.mmap(file.emu_fd, len, offset) };
    if device::logging() {
        eprintln!("nrt-emu-shim: mmap({fd}, {len:#x}, offset {offset:#x}) = {r:?}");
    }
    match r {
        Ok(p) => {
            files::insert_map(p.as_ptr() as usize, len);
            p.as_ptr().cast()
        }
        Err(e) => refuse(e as c_int),
    }
}

/// Interposed `munmap`.
///
/// # Safety
///
/// As `munmap(2)`.
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: usize) -> c_int {
    match files::remove_map(addr as usize, len) {
        Unmap::Real => match real::munmap() {
            // SAFETY: forwarded unchanged.
            Some(f) => unsafe { f(addr, len) },
            None => fail(libc::ENOSYS),
        },
        Unmap::Partial => fail(libc::EINVAL),
        Unmap::Emulated => {
            let (Some(driver), Some(p)) = (device::existing(), NonNull::new(addr.cast::<u8>()))
            else {
                return fail(libc::EINVAL);
            };
            // SAFETY: exactly one live mapping the emulation made (the table said so).
            match unsafe { driver.munmap(p, len) } {
                Ok(()) => 0,
                Err(e) => fail(e as c_int),
            }
        }
    }
}

macro_rules! fopen_like {
    ($(#[$doc:meta])* $name:ident, $real:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As `fopen(3)`.
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, mode: *const c_char) -> *mut libc::FILE {
            // SAFETY: fopen's contract: a NUL-terminated path.
            if let Some(Found::Sys(r)) = unsafe { vfs::lookup(libc::AT_FDCWD, path, true) } {
                // SAFETY: fopen's contract: a NUL-terminated mode.
                let m = if mode.is_null() { &[][..] } else { unsafe { CStr::from_ptr(mode) }.to_bytes() };
                let read_only = m.first() == Some(&b'r') && !m.contains(&b'+');
                let (canon, node) = match r {
                    Ok(found) if read_only => found,
                    Ok(_) => {
                        set_errno(libc::EACCES);
                        return std::ptr::null_mut();
                    }
                    Err(e) => {
                        set_errno(e);
                        return std::ptr::null_mut();
                    }
                };
                let cloexec = if m.contains(&b'e') { libc::O_CLOEXEC } else { 0 };
                let fd = vfs::open(&canon, &node, libc::O_RDONLY | cloexec);
                if fd < 0 {
                    return std::ptr::null_mut();
                }
                // SAFETY: a descriptor this function owns, handed to the stream.
                let f = unsafe { libc::fdopen(fd, c"r".as_ptr()) };
                if f.is_null() {
                    real::close_fd(fd);
                }
                return f;
            }
            match real::$real() {
                // SAFETY: forwarded unchanged.
                Some(f) => unsafe { f(path, mode) },
                None => {
                    set_errno(libc::ENOSYS);
                    std::ptr::null_mut()
                }
            }
        }
    };
}

fopen_like!(
    /// Interposed `fopen`: a file of the sysfs tree opens read-only through the shim (glibc's
    /// `fopen` opens through an internal call the shim does not see); anything else, device
    /// nodes included, goes to libc.
    fopen, fopen
);
fopen_like!(
    /// Interposed `fopen64`.
    fopen64, fopen64
);
