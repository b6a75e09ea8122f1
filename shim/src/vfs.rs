//! The paths the shim answers besides the device nodes: the driver's sysfs tree
//! (docs/driver.md §13.2) — `/sys/devices/virtual/neuron_device/…`, the class links under
//! `/sys/class/neuron_device/` and `/sys/module/neuron/` — laid out by [`nrt_kabi::sysfs`] and
//! read live from the emulation's counters (this process's and, through
//! [`nrt_kabi::registry`], every other process's emulating the same device set).
//!
//! This module decides whether a path (absolute, or relative to a directory descriptor of the
//! tree, [`crate::dirs`]) is one of these, and answers for it: `stat`-like metadata, `open`
//! (an attribute file is a sealed, read-only-content memfd holding what the file reads at the
//! moment of the open, as sysfs renders an attribute on read; a directory is a directory
//! descriptor whose entries [`crate::dirs`] serves), and `readlink`. Every other path returns
//! `None` and the caller forwards the call unchanged; a path without the bytes `neuron` in it
//! is rejected without allocating.
//!
//! Deviations: every file reads for anyone and none is writable (the driver's counters are
//! write-to-clear for root; here opening one for writing fails with `EACCES`); `poll`
//! notifications are not emulated; a path relative to the working directory is recognised when
//! that is `/dev` or a directory of the tree ([`crate::cwd`]); `realpath(3)`
//! resolves links through glibc-internal calls the shim cannot see, so it fails on the class
//! links (Python's `os.path.realpath` works).

use std::ffi::{c_char, c_int, CStr};

use nrt_kabi::counters::DeviceSnapshot;
use nrt_kabi::sysfs::{Layout, Lookup, Node};

use crate::device;
use crate::real::{self, set_errno};

/// What a path names.
pub enum Found {
    /// A device node `/dev/neuron<N>`: its index, or the errno a lookup fails with.
    Device(Result<u32, c_int>),
    /// A path of the sysfs tree: its canonical path and node, or the errno.
    Sys(Result<(String, Node), c_int>),
}

/// Whether `hay` contains `needle`.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// What `path` (relative to `dirfd` when it is relative) names, following a last symbolic link
/// when `follow`; `None` for a path the shim does not answer.
///
/// # Safety
///
/// `path` is null or a NUL-terminated string.
pub unsafe fn lookup(dirfd: c_int, path: *const c_char, follow: bool) -> Option<Found> {
    if path.is_null() {
        return None;
    }
    // SAFETY: the function's contract.
    let p = unsafe { CStr::from_ptr(path) }.to_bytes();
    let joined;
    let full: &[u8] = if p.first() == Some(&b'/') {
        p
    } else {
        let base = if dirfd == libc::AT_FDCWD {
            crate::cwd::get()?
        } else {
            crate::dirs::dir_path(dirfd)?
        };
        let mut j = base.into_bytes();
        if !p.is_empty() {
            j.push(b'/');
            j.extend_from_slice(p);
        }
        joined = j;
        &joined
    };
    if device::is_device_path(full) {
        return Some(Found::Device(device::node_index(full)));
    }
    // A trailing slash resolves a last symbolic link, as the kernel does.
    let follow = follow || full.last() == Some(&b'/');
    if !contains(full, b"neuron") {
        return None;
    }
    let s = std::str::from_utf8(full).ok()?;
    let normal = nrt_kabi::sysfs::components(s)?;
    let normal = format!("/{}", normal.join("/"));
    if !Layout::owns(&normal) {
        // `/dev/../dev/neuron0` and the like.
        return device::is_device_path(normal.as_bytes())
            .then(|| Found::Device(device::node_index(normal.as_bytes())));
    }
    let Some(layout) = device::layout() else {
        return Some(Found::Sys(Err(libc::ENOENT)));
    };
    Some(Found::Sys(layout.resolve(&normal, follow).map_err(
        |e| match e {
            Lookup::Missing => libc::ENOENT,
            Lookup::NotDir => libc::ENOTDIR,
            Lookup::Loop => libc::ELOOP,
        },
    )))
}

/// A stable inode number for a path of the tree (FNV-1a, never 0).
pub fn inode(canonical: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in canonical.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h | 1
}

/// Device number of the emulated sysfs (ours: minor 0x4e of the anonymous major).
fn sysfs_dev() -> libc::dev_t {
    libc::makedev(0, 0x4e)
}

/// Mode and size of a node: directories `drwxr-xr-x`, attribute files `-r--r--r--` of 4096
/// bytes (as sysfs reports them, whatever they read), links `lrwxrwxrwx` of their target's
/// length.
fn mode_size(node: &Node) -> (libc::mode_t, i64, u64) {
    match node {
        Node::Dir(_) => (libc::S_IFDIR | 0o755, 0, 2),
        Node::File(_) => (libc::S_IFREG | 0o444, 4096, 1),
        Node::Link(t) => (libc::S_IFLNK | 0o777, t.len() as i64, 1),
    }
}

/// Fills `st` for a node of the tree; -1 with `EFAULT` for a null `st`.
pub fn fill_stat(canonical: &str, node: &Node, st: *mut libc::stat) -> c_int {
    if st.is_null() {
        set_errno(libc::EFAULT);
        return -1;
    }
    let (mode, size, nlink) = mode_size(node);
    // SAFETY: `st` is non-null and, by the caller's stat(2) contract, valid for a
    // `struct stat`; all-zero is a valid `struct stat`.
    unsafe {
        std::ptr::write_bytes(st, 0, 1);
        let st = &mut *st;
        st.st_dev = sysfs_dev();
        st.st_ino = inode(canonical);
        st.st_mode = mode;
        st.st_nlink = nlink;
        st.st_size = size;
        st.st_blksize = 4096;
    }
    0
}

/// Fills `buf` for a node of the tree; -1 with `EFAULT` for a null `buf`.
pub fn fill_statx(canonical: &str, node: &Node, buf: *mut libc::statx) -> c_int {
    if buf.is_null() {
        set_errno(libc::EFAULT);
        return -1;
    }
    let (mode, size, nlink) = mode_size(node);
    // SAFETY: non-null and valid for a `struct statx` by the contract; all-zero is valid.
    unsafe {
        std::ptr::write_bytes(buf, 0, 1);
        let b = &mut *buf;
        b.stx_mask = libc::STATX_TYPE
            | libc::STATX_MODE
            | libc::STATX_NLINK
            | libc::STATX_INO
            | libc::STATX_SIZE
            | libc::STATX_UID
            | libc::STATX_GID;
        b.stx_mode = mode as u16;
        b.stx_nlink = nlink as u32;
        b.stx_ino = inode(canonical);
        b.stx_size = size as u64;
        b.stx_blksize = 4096;
        b.stx_dev_major = libc::major(sysfs_dev());
        b.stx_dev_minor = libc::minor(sysfs_dev());
    }
    0
}

/// `access(2)` of a node: read (and search, for a directory) is granted, write never.
pub fn access(node: &Node, mode: c_int) -> c_int {
    let denied =
        mode & libc::W_OK != 0 || (mode & libc::X_OK != 0 && matches!(node, Node::File(_)));
    if denied {
        set_errno(libc::EACCES);
        -1
    } else {
        0
    }
}

/// Device `index`'s counters as this process sees them: every live publisher's summed (this
/// process's own included), plus this process's own when it could not publish them.
pub fn snapshot(index: u32) -> DeviceSnapshot {
    let mut s = device::registry()
        .map(|r| r.sum(index as usize))
        .unwrap_or_default();
    if !device::published() {
        if let Some(c) = device::existing().and_then(|d| d.counters(index as usize)) {
            s.add(&c.snapshot());
        }
    }
    s
}

/// What attribute file `node` reads now.
pub fn render(node: &Node) -> Option<String> {
    let Node::File(attr) = node else {
        return None;
    };
    let layout = device::layout()?;
    Some(layout.render(attr, snapshot))
}

/// Opens a node of the tree for `flags` (`open(2)`'s), returning a descriptor or -1 with errno.
pub fn open(canonical: &str, node: &Node, flags: c_int) -> c_int {
    let cloexec = flags & libc::O_CLOEXEC != 0;
    let write = flags & libc::O_ACCMODE != libc::O_RDONLY && flags & libc::O_PATH == 0;
    let fail = |e| {
        set_errno(e);
        -1
    };
    match node {
        Node::Link(_) => fail(libc::ELOOP),
        Node::Dir(_) if write => fail(libc::EISDIR),
        Node::Dir(_) => crate::dirs::open_virtual_dir(canonical, cloexec),
        Node::File(_) if flags & libc::O_DIRECTORY != 0 => fail(libc::ENOTDIR),
        Node::File(_) if write || flags & libc::O_TRUNC != 0 => fail(libc::EACCES),
        Node::File(_) => match render(node) {
            Some(text) => memfd_with(text.as_bytes(), cloexec),
            None => fail(libc::ENOENT),
        },
    }
}

/// A memfd holding `content`, at offset 0, sealed against any change.
fn memfd_with(content: &[u8], cloexec: bool) -> c_int {
    let flags = libc::MFD_ALLOW_SEALING | if cloexec { libc::MFD_CLOEXEC } else { 0 };
    // SAFETY: a NUL-terminated name and valid flags.
    let fd = unsafe { libc::memfd_create(c"neuron-sysfs".as_ptr(), flags) };
    if fd < 0 {
        return -1;
    }
    let mut rest = content;
    while !rest.is_empty() {
        // SAFETY: `fd` is this function's; the buffer is valid for its length.
        let n = unsafe { libc::write(fd, rest.as_ptr().cast(), rest.len()) };
        if n <= 0 {
            let e = std::io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EIO);
            real::close_fd(fd);
            set_errno(e);
            return -1;
        }
        rest = &rest[n as usize..];
    }
    // SAFETY: plain descriptor calls on `fd`.
    unsafe {
        libc::lseek(fd, 0, libc::SEEK_SET);
        if let Some(f) = real::fcntl() {
            f(
                fd,
                libc::F_ADD_SEALS,
                (libc::F_SEAL_WRITE | libc::F_SEAL_GROW | libc::F_SEAL_SHRINK | libc::F_SEAL_SEAL)
                    as usize as *mut libc::c_void,
            );
        }
    }
    fd
}

/// `readlink(2)` of a node: the link's target (not NUL-terminated, truncated to `size`).
pub fn readlink(node: &Node, buf: *mut c_char, size: usize) -> isize {
    let Node::Link(target) = node else {
        set_errno(libc::EINVAL);
        return -1;
    };
    if buf.is_null() {
        set_errno(libc::EFAULT);
        return -1;
    }
    let n = target.len().min(size);
    // SAFETY: `buf` holds `size >= n` writable bytes (readlink's contract).
    unsafe { std::ptr::copy_nonoverlapping(target.as_ptr(), buf.cast::<u8>(), n) };
    n as isize
}
