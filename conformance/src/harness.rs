//! Running a model under the recorder: load, then two executions with seeded inputs, one trace
//! per phase, plus the results and output digests of each execution.
//!
//! The phases are what the issue snapshots:
//!
//! | phase | HAL calls it covers |
//! |---|---|
//! | [`Phase::Load`] | `Runtime::new` and `Runtime::load` |
//! | [`Phase::Exec1`] | allocating the IO tensors, writing the inputs, the first `execute` (which also sets up the core's exec and IO queues), reading the outputs |
//! | [`Phase::Exec2`] | zeroing the outputs, the second `execute` — the skip-config path (`reload_seq_config=0`) — and reading the outputs |
//!
//! Inputs come from [`seeded_inputs`], the platform's one seeded generator
//! ([`nrt_sim::values::seeded_input`]: SplitMix64 per tensor name, values `k/128`), so a run with [`DEFAULT_SEED`] feeds a zoo model exactly its
//! golden inputs, and `nrt-emu conform` on a NEFF file reproduces the committed snapshots.

use std::sync::Arc;

use nrt_hal::{Hal, Target};
use nrt_runtime::config::RuntimeConfig;
use nrt_runtime::tensor::{Placement, TensorInfo, TensorSet, TensorUsage};
use nrt_runtime::Runtime;
use nrt_sim::{Sim, SimConfig};

use crate::recorder::{AllocRecord, Recorder};
use crate::render::fnv1a64;
use crate::trace::Trace;

/// The seed of the zoo's golden inputs (`nrt_fixtures::GOLDEN_SEED`).
pub const DEFAULT_SEED: u64 = 0x5EED_0001;

/// A phase of a conformance run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Runtime creation and model load.
    Load,
    /// The first execution (full configuration).
    Exec1,
    /// The second execution (the skip-config path).
    Exec2,
}

impl Phase {
    /// Every phase, in run order.
    pub const ALL: [Phase; 3] = [Phase::Load, Phase::Exec1, Phase::Exec2];

    /// `load`, `exec1`, `exec2`.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Load => "load",
            Phase::Exec1 => "exec1",
            Phase::Exec2 => "exec2",
        }
    }
}

/// How to run a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOptions {
    /// The generation to simulate; `None` = the one the NEFF names.
    pub target: Option<Target>,
    /// Seed of the inputs.
    pub seed: u64,
    /// The simulator's allocation base offset (`MemoryConfig::alloc_base_offset`): shifts
    /// every physical address, and must change nothing in a trace.
    pub alloc_base_offset: u64,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            target: None,
            seed: DEFAULT_SEED,
            alloc_base_offset: 0,
        }
    }
}

/// One phase's record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseRecord {
    /// The phase.
    pub phase: Phase,
    /// Its canonical trace.
    pub trace: Trace,
    /// `ok`, or `err <status>` of the runtime call the phase is about.
    pub result: String,
    /// Output tensors after an execution (name, bytes), in the model's output order.
    pub outputs: Vec<(String, Vec<u8>)>,
}

impl PhaseRecord {
    /// The snapshot text: the trace, then `host result …` and one `host output <name> len=…
    /// fnv1a64=…` line per output.
    pub fn text(&self) -> String {
        let mut s = self.trace.text();
        s.push_str(&format!("host result {}\n", self.result));
        for (name, bytes) in &self.outputs {
            s.push_str(&format!(
                "host output {name} len={:#x} fnv1a64={:#018x}\n",
                bytes.len(),
                fnv1a64(bytes)
            ));
        }
        s
    }
}

/// A whole conformance run.
#[derive(Debug)]
pub struct Conformance {
    /// The generation it ran on.
    pub target: Target,
    /// The phases that ran (load alone if the load failed).
    pub phases: Vec<PhaseRecord>,
    /// The live allocations after the last phase (before unload), with their physical
    /// addresses — for checking that physical addresses changed while traces did not.
    pub allocations: Vec<AllocRecord>,
    /// The recorder.
    pub recorder: Arc<Recorder>,
}

impl Conformance {
    /// The record of `phase`, if it ran.
    pub fn phase(&self, phase: Phase) -> Option<&PhaseRecord> {
        self.phases.iter().find(|p| p.phase == phase)
    }

    /// The whole run as one text: `## <phase>` then the phase text, for each phase. This is
    /// what `nrt-emu conform` prints and compares.
    pub fn document(&self) -> String {
        let mut s = String::new();
        for p in &self.phases {
            s.push_str(&format!("## {}\n", p.phase.name()));
            s.push_str(&p.text());
        }
        s
    }
}

/// The generation a NEFF names (`kelf-N.json` `target`), if it parses and names one.
pub fn neff_target(neff: &[u8]) -> Option<Target> {
    nrt_runtime::neff::target_of(neff).ok().flatten()
}

/// One input's bytes: [`nrt_sim::values::seeded_input`] for the tensor's name, dtype and size
/// (the generator of the zoo's golden inputs and of `nrt-emu run --seed`).
pub fn seeded_input(info: &TensorInfo, seed: u64) -> Vec<u8> {
    nrt_sim::values::seeded_input(seed, &info.name, info.dtype, info.size as usize)
}

/// The inputs of a model with IO signature `infos` (inputs and outputs; outputs are skipped).
pub fn seeded_inputs(infos: &[TensorInfo], seed: u64) -> Vec<(String, Vec<u8>)> {
    infos
        .iter()
        .filter(|i| i.usage == TensorUsage::Input)
        .map(|i| (i.name.clone(), seeded_input(i, seed)))
        .collect()
}

/// Runs `neff` on a fresh simulator (configured by `opts`) under a recorder.
pub fn run_sim(neff: &[u8], opts: &RunOptions) -> Result<Conformance, String> {
    let target = opts
        .target
        .or_else(|| neff_target(neff))
        .ok_or("the NEFF names no known target; pass one")?;
    let mut cfg = SimConfig::new(target);
    cfg.memory.alloc_base_offset = opts.alloc_base_offset;
    run_on(Arc::new(Sim::new(cfg)), neff, opts, &|h| h)
}

fn status(r: &nrt_runtime::Error) -> String {
    format!("err {}", r.status)
}

/// Runs `neff` on `device` under a recorder. `above` wraps the recorder before the runtime
/// sees it (identity normally; a test uses it to alter what the runtime writes, as a changed
/// runtime would).
pub fn run_on(
    device: Arc<dyn Hal>,
    neff: &[u8],
    opts: &RunOptions,
    above: &dyn Fn(Arc<dyn Hal>) -> Arc<dyn Hal>,
) -> Result<Conformance, String> {
    let recorder = Arc::new(Recorder::new(device).map_err(|e| e.to_string())?);
    let target = recorder.target();
    let hal = above(recorder.clone() as Arc<dyn Hal>);
    let rt = Runtime::new(hal, RuntimeConfig::default()).map_err(|e| e.to_string())?;
    let mut phases = Vec::new();
    let loaded = rt.load(neff, -1);
    phases.push(PhaseRecord {
        phase: Phase::Load,
        trace: recorder.take(),
        result: match &loaded {
            Ok(_) => "ok".into(),
            Err(e) => status(e),
        },
        outputs: Vec::new(),
    });
    let Ok(id) = loaded else {
        return Ok(Conformance {
            target,
            phases,
            allocations: recorder.allocations(),
            recorder,
        });
    };
    let infos = rt.model_tensor_info(id).map_err(|e| e.to_string())?;
    let vnc = rt.model(id).map_err(|e| e.to_string())?.vnc;
    let mut ins = TensorSet::new();
    let mut outs = TensorSet::new();
    let inputs = seeded_inputs(&infos, opts.seed);
    for info in &infos {
        let t = rt
            .tensor_allocate(Placement::Device, vnc, info.size, &info.name)
            .map_err(|e| e.to_string())?;
        match info.usage {
            TensorUsage::Input => {
                let data = inputs
                    .iter()
                    .find(|(n, _)| *n == info.name)
                    .map(|(_, d)| d.as_slice())
                    .unwrap_or_default();
                t.write(0, data).map_err(|e| e.to_string())?;
                ins.add(&info.name, t);
            }
            TensorUsage::Output => outs.add(&info.name, t),
        }
    }
    for phase in [Phase::Exec1, Phase::Exec2] {
        if phase == Phase::Exec2 {
            for (_, t) in outs.iter() {
                t.memset(0, 0, t.size()).map_err(|e| e.to_string())?;
            }
        }
        let r = rt.execute(id, &ins, &outs);
        let mut outputs = Vec::new();
        if r.is_ok() {
            for info in infos.iter().filter(|i| i.usage == TensorUsage::Output) {
                let t = outs.get(&info.name).expect("allocated above");
                outputs.push((info.name.clone(), t.to_vec().map_err(|e| e.to_string())?));
            }
        }
        phases.push(PhaseRecord {
            phase,
            trace: recorder.take(),
            result: match &r {
                Ok(_) => "ok".into(),
                Err(e) => status(e),
            },
            outputs,
        });
    }
    let allocations = recorder.allocations();
    drop((ins, outs));
    rt.unload(id).map_err(|e| e.to_string())?;
    let _ = recorder.take();
    Ok(Conformance {
        target,
        phases,
        allocations,
        recorder,
    })
}
