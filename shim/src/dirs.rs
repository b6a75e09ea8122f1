//! Directory listings (docs/driver.md §13.1, §13.2): a program that lists `/dev` — with
//! `opendir`/`readdir`/`readdir64`, `scandir`, `glob`, or anything built on them (`ls`, a shell's
//! `*`, Python's `os.listdir`, `os.scandir` and `glob`) — sees `neuron0` … `neuron<N-1>`, and one
//! that lists `/sys/class`, `/sys/devices/virtual` or `/sys/module` sees `neuron_device` or
//! `neuron`; the directories of the sysfs tree list their entries.
//!
//! Two kinds of directory stream are ours, each recorded by its `DIR *` in a table:
//!
//! * an *augmented* real directory (one of the four above, recognised by device and inode
//!   number, however it was named or opened): the real entries come first, without any real
//!   entry of the same name as ours (a real Neuron device is hidden, as by the device nodes),
//!   then ours;
//! * a directory of the tree: a real directory stream over a private empty directory (created
//!   and removed once per process, kept open), whose entries, `.` and `..` included, are all
//!   ours. Its descriptor is a real directory descriptor, so `fstat`, `fchdir` and `openat`
//!   relative to it fail harmlessly where they are not answered here.
//!
//! Directory *descriptors* of both kinds are recorded with their path too, so that `openat`,
//! `fstatat`, `statx`, `faccessat` and `readlinkat` relative to them reach the right node
//! ([`dir_path`]). `dup`s share the record; `close` and `closedir` drop it.
//!
//! Every stream and descriptor the shim does not own goes to libc untouched; with no table
//! entry, each interposed call costs one atomic load. Each table's lock is held only to look up
//! or edit it, never across a call into libc. `glob` is given the shim's own directory
//! functions through `GLOB_ALTDIRFUNC` (glibc's `glob` and `scandir` list through internal
//! calls the shim cannot see) only for a pattern under `/dev` or `/sys`, or a relative one from
//! a working directory there; `scandir` is answered here only for a directory above.
//! `readdir_r`, `scandirat`, `nftw` and raw `getdents64` are not covered.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

use nrt_kabi::sysfs::{Kind, Node, AUGMENTED};

use crate::device;
use crate::real::{self, set_errno};
use crate::vfs::{self, Found};

/// Which real entries an augmented listing leaves out (they would duplicate ours).
#[derive(Clone, Copy)]
enum Hide {
    /// Nothing (a directory of the tree: there are no real entries).
    Nothing,
    /// `neuron<digits>` (in `/dev`).
    DeviceNodes,
    /// One name.
    Name(&'static str),
}

impl Hide {
    fn hides(self, name: &[u8]) -> bool {
        match self {
            Hide::Nothing => false,
            Hide::DeviceNodes => name
                .strip_prefix(b"neuron")
                .is_some_and(|n| !n.is_empty() && n.iter().all(u8::is_ascii_digit)),
            Hide::Name(n) => name == n.as_bytes(),
        }
    }
}

/// One synthetic entry: name, `d_type`, inode number.
type Entry = (Vec<u8>, u8, u64);

/// What the shim serves of a directory stream.
struct DirState {
    entries: Vec<Entry>,
    next: usize,
    /// No real entries (a directory of the tree).
    only_ours: bool,
    hide: Hide,
    /// The entry last returned (valid until the next `readdir` or `closedir` on the stream).
    buf: Box<libc::dirent64>,
}

struct Table<K, V> {
    map: Mutex<BTreeMap<K, V>>,
    live: AtomicUsize,
}

impl<K: Ord, V> Table<K, V> {
    const fn new() -> Self {
        Table {
            map: Mutex::new(BTreeMap::new()),
            live: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<K, V>> {
        // A panic cannot leave the map half-edited (each edit is one insert or remove).
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn empty(&self) -> bool {
        self.live.load(Ordering::Acquire) == 0
    }

    fn insert(&self, k: K, v: V) {
        let mut m = self.lock();
        m.insert(k, v);
        self.live.store(m.len(), Ordering::Release);
    }

    fn remove(&self, k: &K) -> Option<V> {
        if self.empty() {
            return None;
        }
        let mut m = self.lock();
        let v = m.remove(k);
        self.live.store(m.len(), Ordering::Release);
        v
    }
}

/// Directory streams the shim serves, by `DIR *`.
static STREAMS: Table<usize, DirState> = Table::new();
/// Directory descriptors of the tree or of an augmented directory, with their path.
static DIRFDS: Table<RawFd, String> = Table::new();

/// The path of directory descriptor `fd`, if it is one the shim recorded.
pub fn dir_path(fd: RawFd) -> Option<String> {
    if fd < 0 || DIRFDS.empty() {
        return None;
    }
    DIRFDS.lock().get(&fd).cloned()
}

/// Forgets descriptor `fd` (it was closed).
pub fn forget_fd(fd: RawFd) {
    if fd >= 0 {
        DIRFDS.remove(&fd);
    }
}

/// After `new` became a duplicate of `old`: it names the same directory, or nothing of ours.
pub fn share_fd(old: RawFd, new: RawFd) {
    if new < 0 || DIRFDS.empty() {
        return;
    }
    match dir_path(old) {
        Some(p) => DIRFDS.insert(new, p),
        None => forget_fd(new),
    }
}

/// The private empty directory behind the tree's directory descriptors (module docs).
fn hollow() -> Result<RawFd, c_int> {
    static HOLLOW: OnceLock<Result<RawFd, c_int>> = OnceLock::new();
    *HOLLOW.get_or_init(|| {
        let dir = std::env::temp_dir().join("nrt-emu-shim-dir-XXXXXX");
        let mut template = CString::new(dir.into_os_string().into_encoded_bytes())
            .map_err(|_| libc::EINVAL)?
            .into_bytes_with_nul();
        // SAFETY: a writable NUL-terminated template ending in XXXXXX.
        if unsafe { libc::mkdtemp(template.as_mut_ptr().cast()) }.is_null() {
            return Err(errno());
        }
        let f = real::openat().ok_or(libc::ENOSYS)?;
        // SAFETY: the NUL-terminated path mkdtemp filled in; no O_CREAT, so no mode.
        let fd = unsafe {
            f(
                libc::AT_FDCWD,
                template.as_ptr().cast(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        let e = errno();
        // SAFETY: the same path; the directory is empty.
        unsafe { libc::rmdir(template.as_ptr().cast()) };
        if fd < 0 {
            Err(e)
        } else {
            Ok(fd)
        }
    })
}

fn errno() -> c_int {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// A new descriptor of the tree's directory `canonical` (for `open`), or -1 with errno.
pub fn open_virtual_dir(canonical: &str, cloexec: bool) -> c_int {
    let fd = match hollow().and_then(|h| dup_of(h, cloexec)) {
        Ok(fd) => fd,
        Err(e) => {
            set_errno(e);
            return -1;
        }
    };
    DIRFDS.insert(fd, canonical.to_string());
    fd
}

fn dup_of(fd: RawFd, cloexec: bool) -> Result<RawFd, c_int> {
    let f = real::fcntl().ok_or(libc::ENOSYS)?;
    let cmd = if cloexec {
        libc::F_DUPFD_CLOEXEC
    } else {
        libc::F_DUPFD
    };
    // SAFETY: duplicating a descriptor this module owns.
    let d = unsafe { f(fd, cmd, std::ptr::null_mut::<c_void>()) };
    if d < 0 {
        Err(errno())
    } else {
        Ok(d)
    }
}

/// The four real directories whose listings gain entries: (device, inode) of each as this
/// process sees it, with its path.
fn augmentable() -> &'static [(u64, u64, &'static str)] {
    static IDS: OnceLock<Vec<(u64, u64, &'static str)>> = OnceLock::new();
    IDS.get_or_init(|| {
        let Some(stat) = real::stat() else {
            return Vec::new();
        };
        std::iter::once("/dev")
            .chain(AUGMENTED.iter().map(|(p, _)| *p))
            .filter_map(|p| {
                let c = CString::new(p).ok()?;
                // SAFETY: all-zero is a valid `struct stat`, filled by the call.
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                // SAFETY: a NUL-terminated path and a writable struct.
                (unsafe { stat(c.as_ptr(), &mut st) } == 0).then_some((st.st_dev, st.st_ino, p))
            })
            .collect()
    })
}

/// Whether `path` (as the kernel resolves it) is `/dev`.
pub fn is_dev(path: &CStr) -> bool {
    let Some(dev) = augmentable().iter().find(|(_, _, p)| *p == "/dev") else {
        return false;
    };
    let Some(stat) = real::stat() else {
        return false;
    };
    // SAFETY: all-zero is a valid `struct stat`, filled by the call.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let saved = errno_raw();
    // SAFETY: a NUL-terminated path and a writable struct.
    let ok = unsafe { stat(path.as_ptr(), &mut st) } == 0;
    set_errno(saved);
    ok && st.st_dev == dev.0 && st.st_ino == dev.1
}

/// Whether a path may name one of the augmented directories (cheap: checked before an fstat).
fn maybe_augmented(path: &[u8]) -> bool {
    path.first() != Some(&b'/')
        || path.starts_with(b"/dev")
        || path.starts_with(b"/sys")
        || path.starts_with(b"//")
}

/// After a real `open` of `path` returned `fd`: records it if it is a descriptor of an
/// augmented directory (checked only for `O_DIRECTORY` opens of a path that may be one, or
/// for the directories' own names, so ordinary opens cost nothing).
pub fn note_open(fd: RawFd, path: &[u8], flags: c_int) {
    let named = {
        let n = path.len() - path.iter().rev().take_while(|&&c| c == b'/').count();
        let p = &path[..n.max(1)];
        p == b"/dev" || AUGMENTED.iter().any(|(a, _)| a.as_bytes() == p)
    };
    if !(named || (flags & libc::O_DIRECTORY != 0 && maybe_augmented(path))) {
        return;
    }
    if let Some(p) = augmented_fd(fd) {
        DIRFDS.insert(fd, p.to_string());
    }
}

/// The augmented directory descriptor `fd` is, if any.
fn augmented_fd(fd: RawFd) -> Option<&'static str> {
    let ids = augmentable();
    if ids.is_empty() {
        return None;
    }
    let f = real::fstat()?;
    // SAFETY: all-zero is a valid `struct stat`, filled by the call.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a descriptor the caller holds and a writable struct.
    if unsafe { f(fd, &mut st) } != 0 {
        return None;
    }
    ids.iter()
        .find(|(d, i, _)| *d == st.st_dev && *i == st.st_ino)
        .map(|(_, _, p)| *p)
}

/// The entries the shim adds to augmented directory `path`, and which real ones it hides.
fn extras(path: &str) -> Option<(Vec<Entry>, Hide)> {
    let layout = device::layout()?;
    if path == "/dev" {
        let nodes = (0..layout.devices)
            .map(|i| {
                (
                    format!("neuron{i}").into_bytes(),
                    libc::DT_CHR,
                    device::node_inode(i),
                )
            })
            .collect();
        return Some((nodes, Hide::DeviceNodes));
    }
    let (_, name) = AUGMENTED.iter().find(|(p, _)| *p == path)?;
    let child = format!("{path}/{name}");
    Some((
        vec![(name.as_bytes().to_vec(), libc::DT_DIR, vfs::inode(&child))],
        Hide::Name(name),
    ))
}

/// The entries of the tree's directory `canonical`, `.` and `..` first.
fn tree_entries(canonical: &str, entries: &[(String, Kind)]) -> Vec<Entry> {
    let parent = canonical.rsplit_once('/').map_or("/", |(p, _)| p);
    let mut v = vec![
        (b".".to_vec(), libc::DT_DIR, vfs::inode(canonical)),
        (b"..".to_vec(), libc::DT_DIR, vfs::inode(parent)),
    ];
    v.extend(entries.iter().map(|(n, k)| {
        let t = match k {
            Kind::Dir => libc::DT_DIR,
            Kind::File => libc::DT_REG,
            Kind::Link => libc::DT_LNK,
        };
        (
            n.clone().into_bytes(),
            t,
            vfs::inode(&format!("{canonical}/{n}")),
        )
    }));
    v
}

fn new_state(entries: Vec<Entry>, only_ours: bool, hide: Hide) -> DirState {
    DirState {
        entries,
        next: 0,
        only_ours,
        hide,
        // SAFETY: all-zero is a valid `struct dirent64`.
        buf: Box::new(unsafe { std::mem::zeroed() }),
    }
}

/// Records a stream over the tree's directory `canonical` (whose descriptor is `fd`).
fn adopt_tree(dir: *mut libc::DIR, fd: RawFd, canonical: &str, entries: &[(String, Kind)]) {
    STREAMS.insert(
        dir as usize,
        new_state(tree_entries(canonical, entries), true, Hide::Nothing),
    );
    DIRFDS.insert(fd, canonical.to_string());
}

/// Records a real stream if it lists an augmented directory.
fn adopt_real(dir: *mut libc::DIR) {
    // SAFETY: a live stream the caller just opened.
    let fd = unsafe { libc::dirfd(dir) };
    let Some(path) = augmented_fd(fd) else {
        return;
    };
    let Some((entries, hide)) = extras(path) else {
        return;
    };
    STREAMS.insert(dir as usize, new_state(entries, false, hide));
    DIRFDS.insert(fd, path.to_string());
}

/// A stream over the tree's directory `canonical`, or null with errno.
fn open_tree(canonical: &str, entries: &[(String, Kind)]) -> *mut libc::DIR {
    let fd = open_virtual_dir(canonical, true);
    if fd < 0 {
        return std::ptr::null_mut();
    }
    let Some(f) = real::fdopendir() else {
        real::close_fd(fd);
        forget_fd(fd);
        set_errno(libc::ENOSYS);
        return std::ptr::null_mut();
    };
    // SAFETY: a directory descriptor this function owns; the stream takes it over.
    let dir = unsafe { f(fd) };
    if dir.is_null() {
        let e = errno();
        real::close_fd(fd);
        forget_fd(fd);
        set_errno(e);
        return dir;
    }
    adopt_tree(dir, fd, canonical, entries);
    dir
}

/// Interposed `opendir`.
///
/// # Safety
///
/// As `opendir(3)`.
#[no_mangle]
pub unsafe extern "C" fn opendir(path: *const c_char) -> *mut libc::DIR {
    // SAFETY: opendir's contract: a NUL-terminated path.
    match unsafe { vfs::lookup(libc::AT_FDCWD, path, true) } {
        Some(Found::Sys(Ok((canon, Node::Dir(entries))))) => return open_tree(&canon, &entries),
        Some(Found::Sys(Ok(_))) | Some(Found::Device(Ok(_))) => {
            set_errno(libc::ENOTDIR);
            return std::ptr::null_mut();
        }
        Some(Found::Sys(Err(e))) | Some(Found::Device(Err(e))) => {
            set_errno(e);
            return std::ptr::null_mut();
        }
        None => {}
    }
    let Some(f) = real::opendir() else {
        set_errno(libc::ENOSYS);
        return std::ptr::null_mut();
    };
    // SAFETY: forwarded unchanged.
    let dir = unsafe { f(path) };
    // SAFETY: a non-null path is NUL-terminated (checked by the real opendir succeeding).
    if !dir.is_null() && maybe_augmented(unsafe { CStr::from_ptr(path) }.to_bytes()) {
        adopt_real(dir);
    }
    dir
}

/// Interposed `fdopendir`.
///
/// # Safety
///
/// As `fdopendir(3)`.
#[no_mangle]
pub unsafe extern "C" fn fdopendir(fd: c_int) -> *mut libc::DIR {
    let Some(f) = real::fdopendir() else {
        set_errno(libc::ENOSYS);
        return std::ptr::null_mut();
    };
    let tree = dir_path(fd).filter(|p| nrt_kabi::sysfs::Layout::owns(p));
    // SAFETY: forwarded unchanged (a tree descriptor is a real directory descriptor).
    let dir = unsafe { f(fd) };
    if dir.is_null() {
        return dir;
    }
    match tree {
        Some(canon) => {
            let entries = device::layout()
                .and_then(|l| l.resolve(&canon, true).ok())
                .and_then(|(_, n)| match n {
                    Node::Dir(e) => Some(e),
                    _ => None,
                })
                .unwrap_or_default();
            adopt_tree(dir, fd, &canon, &entries);
        }
        None => adopt_real(dir),
    }
    dir
}

/// The next entry of a stream the shim serves, or of the real one.
unsafe fn next_entry(dir: *mut libc::DIR, real_fn: Option<real::ReaddirFn>) -> *mut libc::dirent64 {
    let Some(real_fn) = real_fn else {
        set_errno(libc::ENOSYS);
        return std::ptr::null_mut();
    };
    let key = dir as usize;
    let info = if STREAMS.empty() {
        None
    } else {
        STREAMS.lock().get(&key).map(|s| (s.only_ours, s.hide))
    };
    let Some((only_ours, hide)) = info else {
        // SAFETY: forwarded unchanged.
        return unsafe { real_fn(dir) };
    };
    if !only_ours {
        loop {
            let saved = errno_raw();
            set_errno(0);
            // SAFETY: forwarded unchanged.
            let e = unsafe { real_fn(dir) };
            if !e.is_null() {
                set_errno(saved);
                // SAFETY: a real entry: its name is NUL-terminated.
                let name = unsafe { CStr::from_ptr((*e).d_name.as_ptr()) }.to_bytes();
                if hide.hides(name) {
                    continue;
                }
                return e;
            }
            if errno_raw() != 0 {
                return e;
            }
            set_errno(saved);
            break;
        }
    }
    let mut streams = STREAMS.lock();
    let Some(s) = streams.get_mut(&key) else {
        return std::ptr::null_mut();
    };
    let Some((name, kind, ino)) = s.entries.get(s.next) else {
        return std::ptr::null_mut();
    };
    s.next += 1;
    let b = &mut *s.buf;
    b.d_ino = *ino;
    b.d_off = s.next as i64;
    b.d_type = *kind;
    let n = name.len().min(b.d_name.len() - 1);
    for (d, &c) in b.d_name.iter_mut().zip(&name[..n]) {
        *d = c as c_char;
    }
    b.d_name[n] = 0;
    let header = std::mem::offset_of!(libc::dirent64, d_name);
    b.d_reclen = ((header + n + 1).next_multiple_of(8)) as u16;
    b as *mut libc::dirent64
}

fn errno_raw() -> c_int {
    // SAFETY: `__errno_location` returns the calling thread's errno slot, always valid.
    unsafe { *libc::__errno_location() }
}

/// Interposed `readdir` (`struct dirent` and `struct dirent64` have one layout on the 64-bit
/// targets the shim builds for).
///
/// # Safety
///
/// As `readdir(3)`.
#[no_mangle]
pub unsafe extern "C" fn readdir(dir: *mut libc::DIR) -> *mut libc::dirent64 {
    // SAFETY: forwarded contract.
    unsafe { next_entry(dir, real::readdir()) }
}

/// Interposed `readdir64`.
///
/// # Safety
///
/// As `readdir64(3)`.
#[no_mangle]
pub unsafe extern "C" fn readdir64(dir: *mut libc::DIR) -> *mut libc::dirent64 {
    // SAFETY: forwarded contract.
    unsafe { next_entry(dir, real::readdir64()) }
}

/// Interposed `closedir`.
///
/// # Safety
///
/// As `closedir(3)`.
#[no_mangle]
pub unsafe extern "C" fn closedir(dir: *mut libc::DIR) -> c_int {
    if !dir.is_null() && STREAMS.remove(&(dir as usize)).is_some() {
        // SAFETY: a live stream (the caller's contract).
        forget_fd(unsafe { libc::dirfd(dir) });
    }
    match real::closedir() {
        // SAFETY: forwarded unchanged.
        Some(f) => unsafe { f(dir) },
        None => {
            set_errno(libc::ENOSYS);
            -1
        }
    }
}

/// Interposed `rewinddir`: our entries start over too.
///
/// # Safety
///
/// As `rewinddir(3)`.
#[no_mangle]
pub unsafe extern "C" fn rewinddir(dir: *mut libc::DIR) {
    if !STREAMS.empty() {
        if let Some(s) = STREAMS.lock().get_mut(&(dir as usize)) {
            s.next = 0;
        }
    }
    if let Some(f) = real::rewinddir() {
        // SAFETY: forwarded unchanged.
        unsafe { f(dir) }
    }
}

/// Whether the shim lists directory `path` itself (a directory of the tree or an augmented
/// one); `scandir` and `glob` forward everything else.
unsafe fn lists_ourselves(path: *const c_char) -> bool {
    // SAFETY: the caller's contract: a NUL-terminated path.
    if let Some(f) = unsafe { vfs::lookup(libc::AT_FDCWD, path, true) } {
        return matches!(f, Found::Sys(_));
    }
    // SAFETY: as above.
    if path.is_null() || !maybe_augmented(unsafe { CStr::from_ptr(path) }.to_bytes()) {
        return false;
    }
    let Some(stat) = real::stat() else {
        return false;
    };
    // SAFETY: all-zero is a valid `struct stat`, filled by the call.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let saved = errno_raw();
    // SAFETY: a NUL-terminated path and a writable struct.
    let ok = unsafe { stat(path, &mut st) } == 0;
    set_errno(saved);
    ok && augmentable()
        .iter()
        .any(|(d, i, _)| *d == st.st_dev && *i == st.st_ino)
}

type Filter = unsafe extern "C" fn(*const libc::dirent64) -> c_int;
type Compar = unsafe extern "C" fn(*const c_void, *const c_void) -> c_int;

/// `scandir` through the shim's own `opendir`/`readdir` (glibc's calls internal ones): the
/// entries `filter` accepts, each in its own `malloc` block, sorted with `compar`.
unsafe fn scan(
    path: *const c_char,
    namelist: *mut *mut *mut libc::dirent64,
    filter: *const c_void,
    compar: *const c_void,
) -> c_int {
    if namelist.is_null() {
        set_errno(libc::EFAULT);
        return -1;
    }
    // SAFETY: forwarded contract.
    let dir = unsafe { opendir(path) };
    if dir.is_null() {
        return -1;
    }
    let filter: Option<Filter> = (!filter.is_null())
        // SAFETY: scandir's filter has this C prototype.
        .then(|| unsafe { std::mem::transmute::<*const c_void, Filter>(filter) });
    let mut list: Vec<*mut libc::dirent64> = Vec::new();
    let size = std::mem::size_of::<libc::dirent64>();
    let free_all = |list: &[*mut libc::dirent64]| {
        for p in list {
            // SAFETY: each block came from malloc below and is freed once.
            unsafe { libc::free(p.cast()) };
        }
    };
    let failed = loop {
        set_errno(0);
        // SAFETY: `dir` is this function's open stream.
        let e = unsafe { readdir64(dir) };
        if e.is_null() {
            break errno_raw();
        }
        // SAFETY: the filter is the caller's function of this prototype.
        if filter.is_some_and(|f| unsafe { f(e) } == 0) {
            continue;
        }
        // SAFETY: plain allocation; checked for null.
        let copy = unsafe { libc::malloc(size) }.cast::<libc::dirent64>();
        if copy.is_null() {
            break libc::ENOMEM;
        }
        // SAFETY: `e` is a valid entry of `d_reclen` bytes (at most a whole struct), `copy` a
        // fresh block of a whole struct, zeroed beyond the record.
        unsafe {
            let n = usize::from((*e).d_reclen).min(size);
            std::ptr::write_bytes(copy.cast::<u8>(), 0, size);
            std::ptr::copy_nonoverlapping(e.cast::<u8>(), copy.cast::<u8>(), n);
        }
        list.push(copy);
    };
    // SAFETY: the stream opened above, closed once.
    unsafe { closedir(dir) };
    if failed != 0 {
        free_all(&list);
        set_errno(failed);
        return -1;
    }
    let bytes = list.len().max(1) * std::mem::size_of::<*mut libc::dirent64>();
    // SAFETY: plain allocation; checked for null.
    let array = unsafe { libc::malloc(bytes) }.cast::<*mut libc::dirent64>();
    if array.is_null() {
        free_all(&list);
        set_errno(libc::ENOMEM);
        return -1;
    }
    // SAFETY: `array` holds room for every pointer of `list`.
    unsafe { std::ptr::copy_nonoverlapping(list.as_ptr(), array, list.len()) };
    if !compar.is_null() && list.len() > 1 {
        // SAFETY: scandir's comparison takes two pointers to entry pointers, which is what
        // qsort passes for an array of entry pointers.
        let c = unsafe { std::mem::transmute::<*const c_void, Compar>(compar) };
        // SAFETY: `array` has `list.len()` pointer-sized elements.
        unsafe {
            libc::qsort(
                array.cast(),
                list.len(),
                std::mem::size_of::<*mut libc::dirent64>(),
                Some(c),
            )
        };
    }
    // SAFETY: `namelist` is writable (scandir's contract).
    unsafe { *namelist = array };
    list.len() as c_int
}

macro_rules! scandir_like {
    ($(#[$doc:meta])* $name:ident, $real:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As `scandir(3)`.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            path: *const c_char,
            namelist: *mut *mut *mut libc::dirent64,
            filter: *const c_void,
            compar: *const c_void,
        ) -> c_int {
            // SAFETY: scandir's contract: a NUL-terminated path.
            if unsafe { lists_ourselves(path) } {
                // SAFETY: forwarded contract.
                return unsafe { scan(path, namelist, filter, compar) };
            }
            match real::$real() {
                // SAFETY: forwarded unchanged.
                Some(f) => unsafe { f(path, namelist, filter, compar) },
                None => {
                    set_errno(libc::ENOSYS);
                    -1
                }
            }
        }
    };
}

scandir_like!(
    /// Interposed `scandir`.
    scandir, scandir
);
scandir_like!(
    /// Interposed `scandir64`.
    scandir64, scandir64
);

/// glibc's `glob_t` / `glob64_t` (one layout on 64-bit targets).
#[repr(C)]
struct GlobT {
    pathc: usize,
    pathv: *mut *mut c_char,
    offs: usize,
    flags: c_int,
    closedir: *const c_void,
    readdir: *const c_void,
    opendir: *const c_void,
    lstat: *const c_void,
    stat: *const c_void,
}

/// `GLOB_ALTDIRFUNC` (glibc).
const GLOB_ALTDIRFUNC: c_int = 1 << 9;

/// Whether `b` is an absolute path under `/dev` or `/sys` (or those directories).
fn under_dev_or_sys(b: &[u8]) -> bool {
    let n = b.iter().take_while(|&&c| c == b'/').count();
    let rest = &b[n..];
    n > 0 && (rest.starts_with(b"dev") || rest.starts_with(b"sys"))
}

/// Whether a `glob` pattern may list a directory the shim serves (module docs).
unsafe fn glob_concerns_us(pattern: *const c_char) -> bool {
    if pattern.is_null() {
        return false;
    }
    // SAFETY: glob's contract: a NUL-terminated pattern.
    let p = unsafe { CStr::from_ptr(pattern) }.to_bytes();
    if p.first() == Some(&b'/') {
        return under_dev_or_sys(p);
    }
    if let Some(cwd) = crate::cwd::get() {
        return under_dev_or_sys(cwd.as_bytes());
    }
    let Some(getcwd) = real::getcwd() else {
        return false;
    };
    let mut cwd = [0u8; 4096];
    // SAFETY: a writable buffer of the size given.
    if unsafe { getcwd(cwd.as_mut_ptr().cast(), cwd.len()) }.is_null() {
        return false;
    }
    under_dev_or_sys(&cwd)
}

macro_rules! glob_like {
    ($(#[$doc:meta])* $name:ident, $real:ident, $readdir:ident, $lstat:ident, $stat:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        ///
        /// As `glob(3)`.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            pattern: *const c_char,
            flags: c_int,
            errfunc: *const c_void,
            pglob: *mut c_void,
        ) -> c_int {
            let Some(f) = real::$real() else {
                set_errno(libc::ENOSYS);
                return libc::GLOB_ABORTED;
            };
            // SAFETY: glob's contract: a NUL-terminated pattern.
            if pglob.is_null() || flags & GLOB_ALTDIRFUNC != 0 || !unsafe { glob_concerns_us(pattern) } {
                // SAFETY: forwarded unchanged.
                return unsafe { f(pattern, flags, errfunc, pglob) };
            }
            let g = pglob.cast::<GlobT>();
            // SAFETY: `pglob` is the caller's writable glob_t (glob's contract); the fields
            // set are the ones GLOB_ALTDIRFUNC makes glob use, with the shim's functions of
            // the prototypes glob calls them with.
            unsafe {
                (*g).closedir = closedir as *const c_void;
                (*g).readdir = $readdir as *const c_void;
                (*g).opendir = opendir as *const c_void;
                (*g).lstat = crate::node::$lstat as *const c_void;
                (*g).stat = crate::node::$stat as *const c_void;
                let r = f(pattern, flags | GLOB_ALTDIRFUNC, errfunc, pglob);
                // The caller did not ask for GLOB_ALTDIRFUNC: its flags do not show it.
                (*g).flags &= !GLOB_ALTDIRFUNC;
                r
            }
        }
    };
}

glob_like!(
    /// Interposed `glob`: lists through the shim's directory functions for a pattern under
    /// `/dev` or `/sys` (module docs).
    glob, glob, readdir, lstat, stat
);
glob_like!(
    /// Interposed `glob64`.
    glob64, glob64, readdir64, lstat64, stat64
);
