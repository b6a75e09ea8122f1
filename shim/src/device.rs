//! The emulated device set: one [`EmulatedDriver`] over simulators of the configured target,
//! created at the first open of a device node and kept for the life of the process, its
//! counters published for other processes ([`nrt_kabi::registry`]) when the state directory
//! allows; and the configuration every other part of the shim reads (target, device count,
//! the sysfs [`Layout`]).

use std::os::fd::RawFd;
use std::sync::OnceLock;

use nrt_hal::Target;
use nrt_kabi::registry::{Publication, Registry};
use nrt_kabi::sysfs::Layout;
use nrt_kabi::EmulatedDriver;
use nrt_sim::{Sim, SimConfig};

/// Most device nodes `NRT_EMU_SHIM_DEVICES` may ask for.
pub const MAX_DEVICES: usize = 16;

/// The emulation, or why it could not be configured (reported once, then `ENODEV` on every
/// open).
static DRIVER: OnceLock<Result<EmulatedDriver, String>> = OnceLock::new();

/// The emulation, creating it on first use from the environment (module docs of the crate).
pub fn driver() -> Result<&'static EmulatedDriver, libc::c_int> {
    let mut fresh = false;
    let d = DRIVER.get_or_init(|| {
        fresh = true;
        configure()
    });
    match d {
        Ok(d) => Ok(d),
        Err(msg) => {
            if fresh {
                eprintln!("nrt-emu-shim: {msg}; opening a Neuron device fails with ENODEV");
            }
            Err(libc::ENODEV)
        }
    }
}

/// The emulation if it was already created (descriptors and mappings can only exist then).
pub fn existing() -> Option<&'static EmulatedDriver> {
    DRIVER.get().and_then(|d| d.as_ref().ok())
}

/// The configuration from the environment: target and device count.
fn config() -> &'static Result<(Target, usize), String> {
    static CONFIG: OnceLock<Result<(Target, usize), String>> = OnceLock::new();
    CONFIG.get_or_init(|| {
        let target = match std::env::var("NRT_EMU_SHIM_TARGET") {
            Err(_) => Target::Trn1,
            Ok(s) => Target::from_name(&s).ok_or_else(|| {
                format!("NRT_EMU_SHIM_TARGET={s:?} is not a target (trn1 or trn2)")
            })?,
        };
        let count = match std::env::var("NRT_EMU_SHIM_DEVICES") {
            Err(_) => 1,
            Ok(s) => s
                .parse::<usize>()
                .ok()
                .filter(|n| (1..=MAX_DEVICES).contains(n))
                .ok_or_else(|| {
                    format!("NRT_EMU_SHIM_DEVICES={s:?} is not a device count in 1..={MAX_DEVICES}")
                })?,
        };
        Ok((target, count))
    })
}

/// The device set's sysfs layout, if the configuration is valid.
pub fn layout() -> Option<Layout> {
    let (target, count) = *config().as_ref().ok()?;
    Some(Layout {
        target,
        devices: count as u32,
    })
}

/// Where the counters of every process emulating this device set are published
/// (`NRT_EMU_SHIM_STATE_DIR`), if anywhere.
pub fn registry() -> Option<&'static Registry> {
    static REGISTRY: OnceLock<Option<Registry>> = OnceLock::new();
    REGISTRY
        .get_or_init(|| layout().and_then(Registry::from_env))
        .as_ref()
}

/// This process's publication, once its devices exist and if publishing worked.
static PUBLICATION: OnceLock<Publication> = OnceLock::new();

fn configure() -> Result<EmulatedDriver, String> {
    let (target, count) = config().clone()?;
    let sims = (0..count)
        .map(|_| std::sync::Arc::new(Sim::new(SimConfig::new(target))))
        .collect();
    if logging() {
        eprintln!("nrt-emu-shim: {count} emulated {target} device(s) at /dev/neuron0..");
    }
    // Publish the counters if the state directory allows; otherwise only this process sees
    // them (reported once, the devices work either way).
    if let Some(reg) = registry() {
        match reg.publish() {
            Ok(p) => {
                let counters = p.counters();
                remove_at_exit(p.path());
                let _ = PUBLICATION.set(p);
                return Ok(EmulatedDriver::with_counters(sims, counters));
            }
            Err(e) => eprintln!(
                "nrt-emu-shim: cannot publish device counters in {}: {e}; other processes will not see this one's devices",
                reg.dir().display()
            ),
        }
    }
    Ok(EmulatedDriver::new(sims))
}

/// Removes the published file when the process exits normally (a reader removes it otherwise,
/// once it finds it unlocked).
fn remove_at_exit(path: &std::path::Path) {
    static PATH: OnceLock<std::ffi::CString> = OnceLock::new();
    extern "C" fn remove() {
        if let Some(p) = PATH.get() {
            // SAFETY: a NUL-terminated path.
            unsafe { libc::unlink(p.as_ptr()) };
        }
    }
    let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
        return;
    };
    if PATH.set(c).is_ok() {
        // SAFETY: registering a function without arguments that lives as long as the process
        // (the shim is never unloaded).
        unsafe { libc::atexit(remove) };
    }
}

/// Whether this process's counters are published (so a registry sum already holds them).
pub fn published() -> bool {
    PUBLICATION.get().is_some()
}

/// The inode number `stat` and `readdir` report for `/dev/neuron<index>` (ours).
pub fn node_inode(index: u32) -> u64 {
    0x4E00_0000 + u64::from(index)
}

/// Records, once, the version of the libnrt this process has loaded (found by its SONAME, so
/// also when it was loaded privately, as `ctypes` does), for `neuron-ls`'s process list.
pub fn note_runtime_version() {
    static DONE: OnceLock<()> = OnceLock::new();
    let Some(p) = PUBLICATION.get() else {
        return;
    };
    DONE.get_or_init(|| {
        if let Some(v) = loaded_libnrt_version() {
            p.set_runtime_version(&v);
        }
    });
}

/// `major.minor.patch` from the `nrt_get_version` of an already loaded `libnrt.so.1`.
fn loaded_libnrt_version() -> Option<String> {
    #[repr(C)]
    struct Version {
        numbers: [u64; 4],
        detail: [u8; 128],
        hash: [u8; 64],
    }
    type GetVersion = unsafe extern "C" fn(*mut Version, usize) -> libc::c_int;
    // SAFETY: RTLD_NOLOAD only looks up a library already loaded (nothing is loaded or run);
    // the handle is released below.
    let h = unsafe { libc::dlopen(c"libnrt.so.1".as_ptr(), libc::RTLD_LAZY | libc::RTLD_NOLOAD) };
    if h.is_null() {
        return None;
    }
    // SAFETY: a valid handle and a NUL-terminated name.
    let f = unsafe { libc::dlsym(h, c"nrt_get_version".as_ptr()) };
    let out = (!f.is_null()).then(|| {
        // SAFETY: libnrt's `nrt_get_version` has this C prototype (nrt/nrt_version.h).
        let f: GetVersion = unsafe { std::mem::transmute::<*mut libc::c_void, GetVersion>(f) };
        let mut v = Version {
            numbers: [0; 4],
            detail: [0; 128],
            hash: [0; 64],
        };
        // SAFETY: `v` is a writable `nrt_version_t` of the size passed.
        (unsafe { f(&mut v, std::mem::size_of::<Version>()) } == 0)
            .then(|| format!("{}.{}.{}", v.numbers[0], v.numbers[1], v.numbers[2]))
    });
    // SAFETY: the handle from dlopen above, closed once.
    unsafe { libc::dlclose(h) };
    out.flatten()
}

/// Whether the device node `path` (one [`is_device_path`] accepts) exists: its index if so,
/// else the errno a lookup of it fails with (`ENOENT`; `ENODEV` when the shim's configuration
/// is invalid).
pub fn node_index(path: &[u8]) -> Result<u32, libc::c_int> {
    let count = config().as_ref().map_err(|_| libc::ENODEV)?.1;
    let index = std::str::from_utf8(&path[b"/dev/neuron".len()..])
        .ok()
        .and_then(|n| n.parse::<u32>().ok())
        .ok_or(libc::ENOENT)?;
    if (index as usize) < count {
        Ok(index)
    } else {
        Err(libc::ENOENT)
    }
}

/// Major number of the emulated device nodes (the driver's is assigned at load time; this one is
/// from the range Linux reserves for local/experimental use).
pub const NODE_MAJOR: u32 = nrt_kabi::sysfs::NODE_MAJOR;

/// Whether `NRT_EMU_SHIM_LOG` asks for a line per answered call.
pub fn logging() -> bool {
    static LOG: OnceLock<bool> = OnceLock::new();
    *LOG.get_or_init(|| std::env::var_os("NRT_EMU_SHIM_LOG").is_some_and(|v| v != "0"))
}

/// Whether `path` names a Neuron device node (`/dev/neuron<N>`, N without leading zeros); the
/// shim answers all of them, emulated or `ENOENT`.
pub fn is_device_path(path: &[u8]) -> bool {
    let Some(n) = path.strip_prefix(b"/dev/neuron") else {
        return false;
    };
    !n.is_empty()
        && n.len() <= 3
        && n.iter().all(u8::is_ascii_digit)
        && (n.len() == 1 || n[0] != b'0')
}

/// An open file of an emulated device node, shared by every descriptor `dup`ed from the one
/// `open` returned; dropping the last reference closes the emulation's descriptor.
#[derive(Debug)]
pub struct DeviceFile {
    pub emu_fd: RawFd,
}

impl Drop for DeviceFile {
    fn drop(&mut self) {
        if let Some(d) = existing() {
            use nrt_hal::driver::Syscalls;
            // Nothing to report an error to: the descriptor is gone either way, as with close(2)
            // on the last reference to an open file.
            let _ = d.close(self.emu_fd);
        }
    }
}
