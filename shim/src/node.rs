//! The device nodes and the sysfs tree as the file system shows them: `stat`, `lstat`,
//! `fstatat`, `statx`, `access`, `faccessat`, `readlink`, `readlinkat` and the extended
//! attribute queries (`getxattr`, `lgetxattr`, `listxattr`, `llistxattr`: none exist, as `ls -l`
//! asks) of `/dev/neuron<N>`
//! report a character device (mode `crw-rw-rw-`, major [`device::NODE_MAJOR`], minor N) for each
//! configured node and `ENOENT` beyond them, so `test -e /dev/neuron0`, `ls -l` and
//! `Path::exists` see what `open` will find; paths of the sysfs tree get what [`crate::vfs`]
//! answers (directories, attribute files, the class links). A path relative to a directory
//! descriptor of `/dev` or of the tree is resolved against it ([`crate::dirs`]). Every other
//! path goes to libc. (`fstat` of an open device descriptor reports the placeholder behind it, a
//! character device too.)

use std::ffi::{c_char, c_int, c_uint};

use crate::device;
use crate::real::{self, set_errno};
use crate::vfs::{self, Found};

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
        st.st_ino = device::node_inode(index);
        st.st_rdev = libc::makedev(device::NODE_MAJOR, index);
        st.st_blksize = 4096;
    }
    0
}

fn missing(e: c_int) -> c_int {
    set_errno(e);
    -1
}

/// `stat`-like answer for a path the shim owns.
fn answer(found: Found, st: *mut libc::stat) -> c_int {
    match found {
        Found::Device(Ok(index)) => fill_stat(index, st),
        Found::Sys(Ok((canon, node))) => vfs::fill_stat(&canon, &node, st),
        Found::Device(Err(e)) | Found::Sys(Err(e)) => missing(e),
    }
}

macro_rules! stat_like {
    ($(#[$doc:meta])* $name:ident, $real:ident, ($($arg:ident: $ty:ty),*), $dirfd:expr, $path:ident, $buf:ident, $follow:expr) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As the libc function.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> c_int {
            // SAFETY: the libc function's contract: a NUL-terminated path.
            match unsafe { vfs::lookup($dirfd, $path, $follow) } {
                Some(found) => answer(found, $buf),
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
    stat, stat, (path: *const c_char, buf: *mut libc::stat), libc::AT_FDCWD, path, buf, true
);
stat_like!(
    /// Interposed `stat64` (the same structure on 64-bit targets).
    stat64, stat64, (path: *const c_char, buf: *mut libc::stat), libc::AT_FDCWD, path, buf, true
);
stat_like!(
    /// Interposed `lstat`.
    lstat, lstat, (path: *const c_char, buf: *mut libc::stat), libc::AT_FDCWD, path, buf, false
);
stat_like!(
    /// Interposed `lstat64`.
    lstat64, lstat64, (path: *const c_char, buf: *mut libc::stat), libc::AT_FDCWD, path, buf, false
);
stat_like!(
    /// Interposed `fstatat`.
    fstatat, fstatat, (dirfd: c_int, path: *const c_char, buf: *mut libc::stat, flags: c_int),
    dirfd, path, buf, flags & libc::AT_SYMLINK_NOFOLLOW == 0
);
stat_like!(
    /// Interposed `fstatat64`.
    fstatat64, fstatat64, (dirfd: c_int, path: *const c_char, buf: *mut libc::stat, flags: c_int),
    dirfd, path, buf, flags & libc::AT_SYMLINK_NOFOLLOW == 0
);

macro_rules! fstat_like {
    ($(#[$doc:meta])* $name:ident, $real:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As `fstat(2)`.
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, buf: *mut libc::stat) -> c_int {
            if let Some(canon) = crate::dirs::dir_path(fd).filter(|p| nrt_kabi::sysfs::Layout::owns(p)) {
                if let Some((canon, node)) = device::layout().and_then(|l| l.resolve(&canon, true).ok()) {
                    return vfs::fill_stat(&canon, &node, buf);
                }
            }
            match real::$real() {
                // SAFETY: forwarded unchanged.
                Some(f) => unsafe { f(fd, buf) },
                None => missing(libc::ENOSYS),
            }
        }
    };
}

fstat_like!(
    /// Interposed `fstat`: a directory descriptor of the sysfs tree reports its directory (so a
    /// walker comparing device and inode numbers, like `find`, finds the ones `stat` gave).
    fstat, fstat
);
fstat_like!(
    /// Interposed `fstat64`.
    fstat64, fstat64
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
    let follow = flags & libc::AT_SYMLINK_NOFOLLOW == 0;
    // SAFETY: statx's contract: a NUL-terminated path.
    match unsafe { vfs::lookup(dirfd, path, follow) } {
        Some(Found::Device(Ok(index))) => {
            if buf.is_null() {
                return missing(libc::EFAULT);
            }
            // SAFETY: non-null and valid for a `struct statx` by the contract; all-zero is valid.
            unsafe {
                std::ptr::write_bytes(buf, 0, 1);
                let b = &mut *buf;
                b.stx_mask =
                    libc::STATX_TYPE | libc::STATX_MODE | libc::STATX_NLINK | libc::STATX_INO;
                b.stx_mode = (libc::S_IFCHR | 0o666) as u16;
                b.stx_nlink = 1;
                b.stx_ino = device::node_inode(index);
                b.stx_blksize = 4096;
                b.stx_rdev_major = device::NODE_MAJOR;
                b.stx_rdev_minor = index;
            }
            0
        }
        Some(Found::Sys(Ok((canon, node)))) => vfs::fill_statx(&canon, &node, buf),
        Some(Found::Device(Err(e))) | Some(Found::Sys(Err(e))) => missing(e),
        None => match real::statx() {
            // SAFETY: forwarded unchanged.
            Some(f) => unsafe { f(dirfd, path, flags, mask, buf) },
            None => missing(libc::ENOSYS),
        },
    }
}

/// `access` of a path the shim owns: a device node is readable and writable, not executable;
/// the sysfs tree as [`vfs::access`] says.
fn access_answer(found: Found, mode: c_int) -> c_int {
    match found {
        Found::Device(Ok(_)) => {
            if mode & libc::X_OK != 0 {
                missing(libc::EACCES)
            } else {
                0
            }
        }
        Found::Sys(Ok((_, node))) => vfs::access(&node, mode),
        Found::Device(Err(e)) | Found::Sys(Err(e)) => missing(e),
    }
}

/// Interposed `access`.
///
/// # Safety
///
/// As `access(2)`.
#[no_mangle]
pub unsafe extern "C" fn access(path: *const c_char, mode: c_int) -> c_int {
    // SAFETY: access's contract: a NUL-terminated path.
    match unsafe { vfs::lookup(libc::AT_FDCWD, path, true) } {
        Some(found) => access_answer(found, mode),
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
    let follow = flags & libc::AT_SYMLINK_NOFOLLOW == 0;
    // SAFETY: faccessat's contract: a NUL-terminated path.
    match unsafe { vfs::lookup(dirfd, path, follow) } {
        Some(found) => access_answer(found, mode),
        None => match real::faccessat() {
            // SAFETY: forwarded unchanged.
            Some(f) => unsafe { f(dirfd, path, mode, flags) },
            None => missing(libc::ENOSYS),
        },
    }
}

/// `readlink` of a path the shim owns: the class links' targets; anything else is not a link.
fn readlink_answer(found: Found, buf: *mut c_char, size: usize) -> isize {
    match found {
        Found::Sys(Ok((_, node))) => vfs::readlink(&node, buf, size),
        Found::Device(Ok(_)) => missing(libc::EINVAL) as isize,
        Found::Device(Err(e)) | Found::Sys(Err(e)) => missing(e) as isize,
    }
}

/// Interposed `readlink`.
///
/// # Safety
///
/// As `readlink(2)`.
#[no_mangle]
pub unsafe extern "C" fn readlink(path: *const c_char, buf: *mut c_char, size: usize) -> isize {
    // SAFETY: readlink's contract: a NUL-terminated path.
    match unsafe { vfs::lookup(libc::AT_FDCWD, path, false) } {
        Some(found) => readlink_answer(found, buf, size),
        None => match real::readlink() {
            // SAFETY: forwarded unchanged.
            Some(f) => unsafe { f(path, buf, size) },
            None => missing(libc::ENOSYS) as isize,
        },
    }
}

/// Interposed `readlinkat`.
///
/// # Safety
///
/// As `readlinkat(2)`.
#[no_mangle]
pub unsafe extern "C" fn readlinkat(
    dirfd: c_int,
    path: *const c_char,
    buf: *mut c_char,
    size: usize,
) -> isize {
    // SAFETY: readlinkat's contract: a NUL-terminated path.
    match unsafe { vfs::lookup(dirfd, path, false) } {
        Some(found) => readlink_answer(found, buf, size),
        None => match real::readlinkat() {
            // SAFETY: forwarded unchanged.
            Some(f) => unsafe { f(dirfd, path, buf, size) },
            None => missing(libc::ENOSYS) as isize,
        },
    }
}

macro_rules! getxattr_like {
    ($(#[$doc:meta])* $name:ident, $real:ident, $follow:expr) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As `getxattr(2)`.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            path: *const c_char,
            name: *const c_char,
            value: *mut libc::c_void,
            size: usize,
        ) -> isize {
            // SAFETY: getxattr's contract: a NUL-terminated path.
            match unsafe { vfs::lookup(libc::AT_FDCWD, path, $follow) } {
                Some(Found::Device(Ok(_))) | Some(Found::Sys(Ok(_))) => {
                    missing(libc::ENODATA) as isize
                }
                Some(Found::Device(Err(e))) | Some(Found::Sys(Err(e))) => missing(e) as isize,
                None => match real::$real() {
                    // SAFETY: forwarded unchanged.
                    Some(f) => unsafe { f(path, name, value, size) },
                    None => missing(libc::ENOSYS) as isize,
                },
            }
        }
    };
}

getxattr_like!(
    /// Interposed `getxattr`: the shim's paths have no extended attributes.
    getxattr, getxattr, true
);
getxattr_like!(
    /// Interposed `lgetxattr`.
    lgetxattr, lgetxattr, false
);

macro_rules! listxattr_like {
    ($(#[$doc:meta])* $name:ident, $real:ident, $follow:expr) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As `listxattr(2)`.
        #[no_mangle]
        pub unsafe extern "C" fn $name(path: *const c_char, list: *mut c_char, size: usize) -> isize {
            // SAFETY: listxattr's contract: a NUL-terminated path.
            match unsafe { vfs::lookup(libc::AT_FDCWD, path, $follow) } {
                Some(Found::Device(Ok(_))) | Some(Found::Sys(Ok(_))) => 0,
                Some(Found::Device(Err(e))) | Some(Found::Sys(Err(e))) => missing(e) as isize,
                None => match real::$real() {
                    // SAFETY: forwarded unchanged.
                    Some(f) => unsafe { f(path, list, size) },
                    None => missing(libc::ENOSYS) as isize,
                },
            }
        }
    };
}

listxattr_like!(
    /// Interposed `listxattr`: the shim's paths have no extended attributes.
    listxattr, listxattr, true
);
listxattr_like!(
    /// Interposed `llistxattr`.
    llistxattr, llistxattr, false
);
