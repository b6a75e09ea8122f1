//! The device nodes as the file system shows them: `stat`, `lstat`, `fstatat`, `statx`,
//! `access` and `faccessat` of `/dev/neuron<N>` report a character device (mode `crw-rw-rw-`,
//! major [`device::NODE_MAJOR`], minor N) for each configured node and `ENOENT` beyond them, so
//! `test -e /dev/neuron0`, `ls -l` and `Path::exists` see what `open` will find. Every other path
//! goes to libc. (`fstat` of an open device descriptor reports the placeholder behind it, a
//! character device too.)

use std::ffi::{c_char, c_int, c_uint, CStr};

use crate::device;
use crate::real::{self, set_errno};

/// The emulated node `path` names, if it is a device path: `Some(Ok(index))` when it exists,
/// `Some(Err(errno))` when it does not, `None` for any other path.
///
/// # Safety
///
/// `path` is null or a NUL-terminated string.
unsafe fn node(path: *const c_char) -> Option<Result<u32, c_int>> {
    if path.is_null() {
        return None;
    }
    // SAFETY: the function's contract.
    let p = unsafe { CStr::from_ptr(path) }.to_bytes();
    device::is_device_path(p).then(|| device::node_index(p))
}

fn fill_stat(index: u32, st: *mut libc::stat) -> c_int {
    if st.is_null() {
        set_errno(libc::EFAULT);
        return -1;
    }
    // SAFETY: `st` is non-null and, by the caller's stat(2) contract, valid for a `struct stat`;
    // all-zero is a valid `struct stat`.
    unsafe {
        std::ptr::write_bytes(st, 0, 1);
        let st = &mut *st;
        st.st_mode = libc::S_IFCHR | 0o666;
        st.st_nlink = 1;
        st.st_rdev = libc::makedev(device::NODE_MAJOR, index);
        st.st_blksize = 4096;
    }
    0
}

fn missing(e: c_int) -> c_int {
    set_errno(e);
    -1
}

macro_rules! stat_like {
    ($(#[$doc:meta])* $name:ident, $real:ident, ($($arg:ident: $ty:ty),*), $path:ident, $buf:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As the libc function.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            // SAFETY: the libc function's contract: a NUL-terminated path.
            match unsafe { node($path) } {
                Some(Ok(index)) => fill_stat(index, $buf),
                Some(Err(e)) => missing(e),
                None => match real::$real() {
                    // SAFETY: forwarded unchanged.
                    Some(f) => unsafe { f($($arg),*) },
                    None => missing(libc::ENOSYS),
                },
            }
        }
    };
}

stat_like!(
    /// Interposed `stat`.
    stat, stat, (path: *const c_char, buf: *mut libc::stat), path, buf
);
stat_like!(
    /// Interposed `stat64` (the same structure on 64-bit targets).
    stat64, stat64, (path: *const c_char, buf: *mut libc::stat), path, buf
);
stat_like!(
    /// Interposed `lstat`.
    lstat, lstat, (path: *const c_char, buf: *mut libc::stat), path, buf
);
stat_like!(
    /// Interposed `lstat64`.
    lstat64, lstat64, (path: *const c_char, buf: *mut libc::stat), path, buf
);
stat_like!(
    /// Interposed `fstatat`.
    fstatat, fstatat, (dirfd: c_int, path: *const c_char, buf: *mut libc::stat, flags: c_int), path, buf
);
stat_like!(
    /// Interposed `fstatat64`.
    fstatat64, fstatat64, (dirfd: c_int, path: *const c_char, buf: *mut libc::stat, flags: c_int), path, buf
);

/// Interposed `statx`.
///
/// # Safety
///
/// As `statx(2)`.
#[no_mangle]
pub unsafe extern "C" fn statx(
    dirfd: c_int,
    path: *const c_char,
    flags: c_int,
    mask: c_uint,
    buf: *mut libc::statx,
) -> c_int {
    // SAFETY: statx's contract: a NUL-terminated path.
    match unsafe { node(path) } {
        Some(Ok(index)) => {
            if buf.is_null() {
                return missing(libc::EFAULT);
            }
            // SAFETY: non-null and valid for a `struct statx` by the contract; all-zero is valid.
            unsafe {
                std::ptr::write_bytes(buf, 0, 1);
                let b = &mut *buf;
                b.stx_mask = libc::STATX_TYPE | libc::STATX_MODE | libc::STATX_NLINK;
                b.stx_mode = (libc::S_IFCHR | 0o666) as u16;
                b.stx_nlink = 1;
                b.stx_blksize = 4096;
                b.stx_rdev_major = device::NODE_MAJOR;
                b.stx_rdev_minor = index;
            }
            0
        }
        Some(Err(e)) => missing(e),
        None => match real::statx() {
            // SAFETY: forwarded unchanged.
            Some(f) => unsafe { f(dirfd, path, flags, mask, buf) },
            None => missing(libc::ENOSYS),
        },
    }
}

/// Interposed `access`: an existing node is readable and writable.
///
/// # Safety
///
/// As `access(2)`.
#[no_mangle]
pub unsafe extern "C" fn access(path: *const c_char, mode: c_int) -> c_int {
    // SAFETY: access's contract: a NUL-terminated path.
    match unsafe { node(path) } {
        Some(Ok(_)) => access_mode(mode),
        Some(Err(e)) => missing(e),
        None => match real::access() {
            // SAFETY: forwarded unchanged.
            Some(f) => unsafe { f(path, mode) },
            None => missing(libc::ENOSYS),
        },
    }
}

/// Interposed `faccessat`.
///
/// # Safety
///
/// As `faccessat(2)`.
#[no_mangle]
pub unsafe extern "C" fn faccessat(
    dirfd: c_int,
    path: *const c_char,
    mode: c_int,
    flags: c_int,
) -> c_int {
    // SAFETY: faccessat's contract: a NUL-terminated path.
    match unsafe { node(path) } {
        Some(Ok(_)) => access_mode(mode),
        Some(Err(e)) => missing(e),
        None => match real::faccessat() {
            // SAFETY: forwarded unchanged.
            Some(f) => unsafe { f(dirfd, path, mode, flags) },
            None => missing(libc::ENOSYS),
        },
    }
}

/// `access` of an existing node: read and write are granted, execute is not.
fn access_mode(mode: c_int) -> c_int {
    if mode & libc::X_OK != 0 {
        missing(libc::EACCES)
    } else {
        0
    }
}
