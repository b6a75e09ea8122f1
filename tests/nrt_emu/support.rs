//! Helpers shared by the modules of this test binary: device tensors for one execution of a zoo
//! model, reading and checking its outputs against the model's reference, each core's memory
//! accounting, and running the `nrt-emu` binary.

use std::path::Path;
use std::process::Command;

use nrt_emu::hal::hal::CoreMemUsage;
use nrt_emu::hal::{Hal, NcIndex};

use nrt_emu::runtime::tensor::{Placement, TensorSet};
use nrt_emu::runtime::Runtime;
use nrt_fixtures::ZooModel;

/// Device tensors for one execution of `m` on logical core `vnc`: the inputs holding `inputs`,
/// and outputs filled with 0xFF bytes (NaN in every float dtype) so an unwritten byte shows.
pub fn device_io(
    rt: &Runtime,
    m: &ZooModel,
    vnc: u32,
    inputs: &[Vec<u8>],
) -> (TensorSet, TensorSet) {
    io_tensors(rt, m, vnc, inputs, Placement::Device, Placement::Device)
}

/// [`device_io`] with the inputs and the outputs placed as given.
pub fn io_tensors(
    rt: &Runtime,
    m: &ZooModel,
    vnc: u32,
    inputs: &[Vec<u8>],
    in_place: Placement,
    out_place: Placement,
) -> (TensorSet, TensorSet) {
    let (ins, outs) = m.tensor_sets(rt, vnc, in_place, out_place).unwrap();
    for (s, d) in m.inputs.iter().zip(inputs) {
        ins.get(&s.name).unwrap().write(0, d).unwrap();
    }
    for (_, t) in outs.iter() {
        t.memset(0, 0xFF, t.size()).unwrap();
    }
    (ins, outs)
}

/// The bytes of `m`'s outputs in `outs`, in the model's output order.
pub fn read_outputs(m: &ZooModel, outs: &TensorSet) -> Vec<Vec<u8>> {
    m.outputs
        .iter()
        .map(|s| outs.get(&s.name).unwrap().to_vec().unwrap())
        .collect()
}

/// Panics unless `outs` holds `m`'s reference outputs for `inputs` (within its tolerance).
pub fn check_outputs(m: &ZooModel, inputs: &[Vec<u8>], outs: &TensorSet) {
    m.check_outputs(inputs, &read_outputs(m, outs))
        .unwrap_or_else(|e| panic!("{}.{}: {e}", m.name, m.target));
}

/// Memory accounted to each core of the device behind `hal`, in core order.
pub fn core_usage(hal: &dyn Hal) -> Vec<CoreMemUsage> {
    let cores = hal.device_info().expect("device_info").nc_count;
    (0..cores).map(|n| usage_of(hal, n)).collect()
}

/// [`core_usage`] of a device with exactly `N` cores, without a heap allocation (for the
/// leak checks, which count the heap).
pub fn core_usage_array<const N: usize>(hal: &dyn Hal) -> [CoreMemUsage; N] {
    assert_eq!(hal.device_info().expect("device_info").nc_count as usize, N);
    std::array::from_fn(|n| usage_of(hal, n as u32))
}

/// Bytes of device memory and allocations in use, summed over every core.
pub fn device_bytes_and_allocations(hal: &dyn Hal) -> (u64, u64) {
    core_usage(hal).iter().fold((0, 0), |(d, a), u| {
        (d + u.device_bytes(), a + u.allocations)
    })
}

fn usage_of(hal: &dyn Hal, nc: u32) -> CoreMemUsage {
    hal.memory_usage(NcIndex(nc)).expect("memory_usage")
}

/// What a run of the `nrt-emu` binary did.
#[derive(Debug)]
pub struct CliRun {
    /// It exited with status 0.
    pub ok: bool,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

/// What the environment of the test process may carry that would change which backend a run
/// uses: the runs start without them unless their `env` sets them.
const BACKEND_ENV: [&str; 4] = [
    "NRT_EMU_BACKEND",
    "LD_PRELOAD",
    "NRT_EMU_SHIM_LOG",
    "NRT_EMU_SHIM_TARGET",
];

/// Runs the `nrt-emu` binary cargo built for these tests with `args`, in `dir` (or here), with
/// the [`BACKEND_ENV`] variables unset unless `env` sets them.
pub fn nrt_emu_in(dir: Option<&Path>, env: &[(&str, &str)], args: &[&str]) -> CliRun {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nrt-emu"));
    cmd.args(args);
    for k in BACKEND_ENV {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    if let Some(d) = dir {
        cmd.current_dir(d);
    }
    let out = cmd
        .output()
        .expect("the nrt-emu binary built by cargo runs");
    CliRun {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// [`nrt_emu_in`] here, with the environment as it is.
pub fn nrt_emu(args: &[&str]) -> CliRun {
    nrt_emu_in(None, &[], args)
}

/// [`nrt_emu`] with `file` (a path) as its last argument.
pub fn nrt_emu_on(args: &[&str], file: &Path) -> CliRun {
    let file = file.to_str().expect("test paths are UTF-8");
    nrt_emu(&[args, &[file]].concat())
}

impl CliRun {
    /// Panics with both streams unless the run exited with status 0; returns the run.
    pub fn success(self, what: &str) -> Self {
        assert!(
            self.ok,
            "nrt-emu {what} failed:\n{}\n{}",
            self.stdout, self.stderr
        );
        self
    }
}
