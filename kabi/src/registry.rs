//! Counters shared between processes (docs/driver.md §13.3). Each process under the device shim
//! emulates its own devices, but on a device host every process sees the same devices: a shell
//! reading sysfs, or `neuron-ls`, sees the memory a training process holds and the executions
//! it ran. So each process that emulates devices *publishes* their counters
//! ([`crate::counters::DeviceCounters`]) in a file of a per-user directory, mapped shared and
//! updated in place, and a reader sums what every live publisher of the same device set shows.
//!
//! ```text
//! $NRT_EMU_SHIM_STATE_DIR (default /dev/shm/nrt-emu-shim-<uid>, else $TMPDIR/…)
//! └── trn1x2/                  one directory per generation and device count
//!     └── <pid>                header (8 words) + DEVICE_WORDS words per device
//! ```
//!
//! A publisher holds an exclusive `flock` on its file through a close-on-exec descriptor, so
//! the lock goes when the process exits, crashes or `exec`s: a file a reader can lock is stale
//! and is removed. The file appears under its final name only once locked (it is written under
//! a temporary name, then renamed). Setting `NRT_EMU_SHIM_STATE_DIR` to the empty string turns
//! sharing off: each process then sees only its own devices.

use std::fs::File;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::counters::{DeviceCounters, DeviceSnapshot, DEVICE_WORDS};
use crate::sysfs::Layout;

/// The environment variable naming the directory of published counters.
pub const STATE_DIR_ENV: &str = "NRT_EMU_SHIM_STATE_DIR";

const MAGIC: u64 = u64::from_le_bytes(*b"NRTEMUC1");
/// Header words: magic, words per device, devices, pid, then 32 bytes of runtime version.
const HEADER_WORDS: usize = 8;
const VERSION_WORD: usize = 4;
const VERSION_BYTES: usize = 32;

/// The published counters of one device set ([`Layout`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registry {
    dir: PathBuf,
    devices: usize,
}

/// One live process's published devices.
#[derive(Debug, Clone)]
pub struct Publisher {
    /// Its process id.
    pub pid: u32,
    /// The libnrt version the process runs (`major.minor.patch`), when it has a libnrt loaded.
    pub runtime_version: Option<String>,
    /// Its devices' counters, by device index.
    pub devices: Vec<DeviceSnapshot>,
}

/// This process's published counters: a shared mapping kept until the process ends.
#[derive(Debug)]
pub struct Publication {
    words: &'static [AtomicU64],
    devices: usize,
    path: PathBuf,
}

impl Registry {
    /// The registry the environment names for `layout`: `$NRT_EMU_SHIM_STATE_DIR` (none when
    /// it is empty), else `nrt-emu-shim-<uid>` in `/dev/shm` or, without one, in the temporary
    /// directory.
    pub fn from_env(layout: Layout) -> Option<Registry> {
        let base = match std::env::var_os(STATE_DIR_ENV) {
            Some(d) if d.is_empty() => return None,
            Some(d) => PathBuf::from(d),
            None => {
                // SAFETY: getuid cannot fail.
                let uid = unsafe { libc::getuid() };
                let shm = Path::new("/dev/shm");
                let root = if shm.is_dir() {
                    shm.to_path_buf()
                } else {
                    std::env::temp_dir()
                };
                root.join(format!("nrt-emu-shim-{uid}"))
            }
        };
        Some(Registry::at(&base, layout))
    }

    /// The registry for `layout` under `base`.
    pub fn at(base: &Path, layout: Layout) -> Registry {
        Registry {
            dir: base.join(format!("{}x{}", layout.target, layout.devices)),
            devices: layout.devices as usize,
        }
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Publishes this process's counters: a new file, locked, mapped and named after the
    /// process. The mapping lives until the process ends.
    pub fn publish(&self) -> std::io::Result<Publication> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let pid = std::process::id();
        let tmp = self.dir.join(format!(".{pid}.tmp"));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC)
            .open(&tmp)?;
        let words = HEADER_WORDS + self.devices * DEVICE_WORDS;
        file.set_len((words * 8) as u64)?;
        // SAFETY: a descriptor this function owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: a fresh shared mapping of the whole file, which was sized above.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                words * 8,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the mapping is page-aligned, `words` words long, never unmapped (the
        // descriptor and the mapping are kept for the life of the process), and accessed only
        // atomically, here and by readers in other processes (which read the file).
        let words: &'static [AtomicU64] =
            unsafe { std::slice::from_raw_parts(p.cast::<AtomicU64>(), words) };
        for (i, v) in [
            MAGIC,
            DEVICE_WORDS as u64,
            self.devices as u64,
            u64::from(pid),
        ]
        .into_iter()
        .enumerate()
        {
            words[i].store(v, Ordering::Relaxed);
        }
        let path = self.dir.join(pid.to_string());
        std::fs::rename(&tmp, &path)?;
        // The lock lives as long as this descriptor: the process's lifetime (close-on-exec).
        std::mem::forget(file);
        Ok(Publication {
            words,
            devices: self.devices,
            path,
        })
    }

    /// Every live publisher of this device set (this process included, if it publishes);
    /// stale files are removed on the way.
    pub fn publishers(&self) -> Vec<Publisher> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(pid) = std::str::from_utf8(name.as_bytes())
                .ok()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            if let Some(p) = self.read(&e.path(), pid) {
                out.push(p);
            }
        }
        out.sort_by_key(|p| p.pid);
        out
    }

    /// The publisher in `path`, if its process still holds the file.
    fn read(&self, path: &Path, pid: u32) -> Option<Publisher> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f: File = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(path)
            .ok()?;
        // SAFETY: a descriptor this function owns.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0 {
            // Nobody holds it: its process is gone.
            let _ = std::fs::remove_file(path);
            return None;
        }
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).ok()?;
        let words: Vec<u64> = bytes
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8-byte chunk")))
            .collect();
        let header = words.get(..HEADER_WORDS)?;
        if header[0] != MAGIC
            || header[1] != DEVICE_WORDS as u64
            || header[2] != self.devices as u64
            || words.len() != HEADER_WORDS + self.devices * DEVICE_WORDS
        {
            return None;
        }
        let version: Vec<u8> = header[VERSION_WORD..]
            .iter()
            .flat_map(|w| w.to_le_bytes())
            .take_while(|&b| b != 0)
            .collect();
        let devices = words[HEADER_WORDS..]
            .chunks_exact(DEVICE_WORDS)
            .filter_map(DeviceSnapshot::from_words)
            .collect();
        Some(Publisher {
            pid,
            runtime_version: String::from_utf8(version).ok().filter(|v| !v.is_empty()),
            devices,
        })
    }

    /// Device `index`'s counters summed over every live publisher.
    pub fn sum(&self, index: usize) -> DeviceSnapshot {
        let mut s = DeviceSnapshot::default();
        for p in self.publishers() {
            if let Some(d) = p.devices.get(index) {
                s.add(d);
            }
        }
        s
    }
}

impl Publication {
    /// The published devices' counters, for [`crate::EmulatedDriver::with_counters`].
    pub fn counters(&self) -> &'static [DeviceCounters] {
        let data = &self.words[HEADER_WORDS..];
        // SAFETY: `data` is `devices · DEVICE_WORDS` atomics of the mapping, which lives for
        // the rest of the process and is accessed only atomically.
        unsafe { DeviceCounters::from_raw(data.as_ptr() as *mut u64, self.devices) }
    }

    /// The published file (which the publisher may remove when it exits; a reader removes it
    /// once the process is gone otherwise).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records the version of the libnrt this process runs (at most 31 bytes kept).
    pub fn set_runtime_version(&self, version: &str) {
        let mut bytes = [0u8; VERSION_BYTES];
        let n = version.len().min(VERSION_BYTES - 1);
        bytes[..n].copy_from_slice(&version.as_bytes()[..n]);
        for (i, chunk) in bytes.chunks_exact(8).enumerate() {
            let w = u64::from_le_bytes(chunk.try_into().expect("8-byte chunk"));
            self.words[VERSION_WORD + i].store(w, Ordering::Relaxed);
        }
    }
}
