//! The shim's table of what belongs to the emulation: descriptors (placeholder descriptor
//! number → shared [`DeviceFile`]) and mappings ((address, length) → count of `mmap`s). One
//! mutex guards it, held only for lookups and edits — never across a call into the emulation
//! or libc, which may re-enter the shim. A counter of live entries lets every intercepted call
//! of a process that never touched a device skip the lock.

use std::collections::BTreeMap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::device::DeviceFile;

#[derive(Default)]
struct Table {
    fds: BTreeMap<RawFd, Arc<DeviceFile>>,
    maps: BTreeMap<(usize, usize), usize>,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    fds: BTreeMap::new(),
    maps: BTreeMap::new(),
});

/// Descriptors plus mappings in [`TABLE`]; 0 means nothing can be ours.
static LIVE: AtomicUsize = AtomicUsize::new(0);

fn table() -> MutexGuard<'static, Table> {
    // A panic cannot leave the maps half-edited (every edit is one insert or remove).
    TABLE.lock().unwrap_or_else(|e| e.into_inner())
}

fn recount(t: &Table) {
    LIVE.store(t.fds.len() + t.maps.len(), Ordering::Release);
}

/// The device file behind descriptor `fd`, if it is one of ours.
pub fn lookup(fd: RawFd) -> Option<Arc<DeviceFile>> {
    if fd < 0 || LIVE.load(Ordering::Acquire) == 0 {
        return None;
    }
    table().fds.get(&fd).cloned()
}

/// Records `fd` as a descriptor of `file`. Returns what `fd` referred to before, which the
/// caller drops after this returns (dropping may close the emulation's descriptor).
#[must_use]
pub fn insert(fd: RawFd, file: Arc<DeviceFile>) -> Option<Arc<DeviceFile>> {
    let mut t = table();
    let old = t.fds.insert(fd, file);
    recount(&t);
    old
}

/// Forgets descriptor `fd`, returning its device file for the caller to drop (module docs).
#[must_use]
pub fn remove(fd: RawFd) -> Option<Arc<DeviceFile>> {
    if fd < 0 || LIVE.load(Ordering::Acquire) == 0 {
        return None;
    }
    let mut t = table();
    let old = t.fds.remove(&fd);
    recount(&t);
    old
}

/// Records one more mapping of the emulation at `addr`, `len` bytes.
pub fn insert_map(addr: usize, len: usize) {
    let mut t = table();
    *t.maps.entry((addr, len)).or_insert(0) += 1;
    recount(&t);
}

/// What an `munmap(addr, len)` refers to.
pub enum Unmap {
    /// Not ours: the real `munmap`.
    Real,
    /// Exactly one of our mappings, now forgotten: the emulation's `munmap`.
    Emulated,
    /// Part of one of our mappings, or more than one: refused with `EINVAL`.
    Partial,
}

/// Classifies `munmap(addr, len)` and, if it is exactly one of our mappings, forgets it.
pub fn remove_map(addr: usize, len: usize) -> Unmap {
    if LIVE.load(Ordering::Acquire) == 0 {
        return Unmap::Real;
    }
    let mut t = table();
    if let Some(n) = t.maps.get_mut(&(addr, len)) {
        *n -= 1;
        if *n == 0 {
            t.maps.remove(&(addr, len));
        }
        recount(&t);
        return Unmap::Emulated;
    }
    let end = addr.saturating_add(len);
    let overlaps = t
        .maps
        .keys()
        .any(|&(a, l)| a < end && addr < a.saturating_add(l));
    if overlaps {
        Unmap::Partial
    } else {
        Unmap::Real
    }
}
