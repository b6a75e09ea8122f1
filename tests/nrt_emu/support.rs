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

/// One execution's outputs (model order) and cycles per core.
#[derive(Debug)]
pub struct Run {
    /// Each output's bytes, in the model's output order.
    pub outputs: Vec<Vec<u8>>,
    /// Device cycles per core.
    pub cycles: Vec<u64>,
    /// PE multiply-accumulates and DMA bytes of the execution, over every core.
    pub work: (u64, u64),
    /// Host time of the `execute` call (not compared: it is the host's, not the device's).
    pub host: std::time::Duration,
}

impl PartialEq for Run {
    fn eq(&self, o: &Run) -> bool {
        (&self.outputs, &self.cycles, self.work) == (&o.outputs, &o.cycles, o.work)
    }
}

impl Eq for Run {}

/// Loads `neff` on a fresh simulator of `target` and executes it `times` times with `inputs`
/// (given by input name, dtype and element count).
pub fn run_neff(
    target: nrt_emu::hal::Target,
    neff: &[u8],
    inputs: &dyn Fn(&str, nrt_emu::hal::Dtype, usize) -> Vec<u8>,
    times: usize,
) -> Vec<Run> {
    use std::sync::Arc;
    let sim = Arc::new(nrt_emu::sim::Sim::new(nrt_emu::sim::SimConfig::new(target)));
    let hal: Arc<dyn Hal> = sim;
    let rt = Runtime::new(
        hal.clone(),
        nrt_emu::runtime::config::RuntimeConfig::default(),
    )
    .unwrap();
    let id = rt.load(neff, -1).unwrap();
    let model = rt.model(id).unwrap();
    let mut ins = TensorSet::new();
    for t in &model.parsed.model.inputs {
        let n = t.size as usize / t.dtype.size();
        let data = inputs(&t.name, t.dtype, n);
        let d = rt
            .tensor_allocate(Placement::Device, model.vnc, t.size, &t.name)
            .unwrap();
        d.write(0, &data).unwrap();
        ins.add(&t.name, d);
    }
    let mut outs = TensorSet::new();
    let mut names = Vec::new();
    for t in &model.parsed.model.outputs {
        if names.contains(&t.name) {
            continue;
        }
        let d = rt
            .tensor_allocate(Placement::Device, model.vnc, t.size, &t.name)
            .unwrap();
        outs.add(&t.name, d);
        names.push(t.name.clone());
    }
    (0..times)
        .map(|_| {
            for (_, t) in outs.iter() {
                t.memset(0, 0xFF, t.size()).unwrap();
            }
            let t0 = std::time::Instant::now();
            let report = rt
                .execute(id, &ins, &outs)
                .unwrap_or_else(|e| panic!("{e}"));
            let host = t0.elapsed();
            let profiler = hal.profiler().expect("the simulator profiles");
            let work = (0..target.spec().nc_count).fold((0, 0), |(m, b), nc| {
                let p = profiler.exec_profile(NcIndex(nc));
                (m + p.pe_macs, b + p.dma_bytes)
            });
            Run {
                outputs: names
                    .iter()
                    .map(|n| outs.get(n).unwrap().to_vec().unwrap())
                    .collect(),
                cycles: report.cycles,
                work,
                host,
            }
        })
        .collect()
}
