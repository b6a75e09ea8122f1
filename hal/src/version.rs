//! The versions nrt-emu presents to programs, kept in one place so the C API, the device shim's
//! sysfs tree and the command line agree:
//!
//! - [`NRT_API_VERSION`]: the libnrt API level the drop-in library implements — the Neuron
//!   Runtime Library release whose public headers it ships (docs/c-api.md §8.3);
//! - [`DRIVER_VERSION`]: the kernel driver release whose ABI the platform speaks and the
//!   kernel-ABI emulation mirrors (docs/driver.md §1, §10).

/// `rt_major`, `rt_minor`, `rt_patch`, `rt_maintenance` of the Neuron Runtime Library whose
/// headers nrt-emu ships: SDK 2.28.0's headers, runtime library 2.30.50.0 (docs/c-api.md §8.3).
pub const NRT_API_VERSION: [u64; 4] = [2, 30, 50, 0];

/// The `aws-neuronx-dkms` release of the driver source the ABI facts come from
/// (docs/driver.md §1, §10); what `/sys/module/neuron/version` reads under the device shim.
pub const DRIVER_VERSION: &str = "2.24.7.0";

/// [`NRT_API_VERSION`] as `major.minor.patch.maintenance`.
pub fn nrt_api_version_string() -> String {
    let [a, b, c, d] = NRT_API_VERSION;
    format!("{a}.{b}.{c}.{d}")
}
