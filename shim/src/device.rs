//! The emulated device set: one [`EmulatedDriver`] over simulators of the configured target,
//! created at the first open of a device node and kept for the life of the process.

use std::os::fd::RawFd;
use std::sync::OnceLock;

use nrt_hal::Target;
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

fn configure() -> Result<EmulatedDriver, String> {
    let (target, count) = config().clone()?;
    let sims = (0..count)
        .map(|_| std::sync::Arc::new(Sim::new(SimConfig::new(target))))
        .collect();
    if logging() {
        eprintln!("nrt-emu-shim: {count} emulated {target} device(s) at /dev/neuron0..");
    }
    Ok(EmulatedDriver::new(sims))
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
pub const NODE_MAJOR: u32 = 240;

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
