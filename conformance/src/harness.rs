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
//! Inputs come from [`seeded_inputs`], which reproduces the zoo's generator (SplitMix64 per
//! tensor name, values `k/128`), so a run with [`DEFAULT_SEED`] feeds a zoo model exactly its
//! golden inputs, and `nrt-emu conform` on a NEFF file reproduces the committed snapshots.

use std::sync::Arc;

use nrt_hal::{Dtype, Hal, Target};
use nrt_runtime::config::RuntimeConfig;
use nrt_runtime::manifest::{parse_kelf_json, parse_neff_json};
use nrt_runtime::neff::{Neff, ParseOptions};
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
    let n = Neff::parse(neff, &ParseOptions::default()).ok()?;
    let io = parse_neff_json("neff.json", n.member("neff.json")?)
        .ok()?
        .io("neff.json")
        .ok()?;
    let kelf = parse_kelf_json(&io.kelf_file, n.member(&io.kelf_file)?).ok()?;
    Target::from_neff_target(&kelf.target)
}

/// SplitMix64 (the zoo's generator, `nrt_fixtures::rng`).
struct SplitMix64(u64);

impl SplitMix64 {
    fn for_stream(seed: u64, label: &str) -> Self {
        let mut h = seed ^ 0x9E37_79B9_7F4A_7C15;
        for b in label.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3);
        }
        SplitMix64(h)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// `k / 128`, `k` uniform in `-128..=128`: exact in every float format down to bf16.
    fn unit_q(&mut self) -> f32 {
        let k = (self.next_u64() % 257) as i32 - 128;
        k as f32 / 128.0
    }
}

/// One input's bytes: `size / dtype size` values from the stream named after the tensor,
/// stored as its dtype (fp8 tensors, which the zoo does not have, get zeros).
pub fn seeded_input(info: &TensorInfo, seed: u64) -> Vec<u8> {
    let n = (info.size / info.dtype.size() as u64) as usize;
    let mut rng = SplitMix64::for_stream(seed, &info.name);
    let mut out = Vec::with_capacity(info.size as usize);
    for _ in 0..n {
        let v = f64::from(rng.unit_q());
        match info.dtype {
            Dtype::F32 | Dtype::F32r => out.extend_from_slice(&(v as f32).to_le_bytes()),
            Dtype::Bf16 => out.extend_from_slice(&half::bf16::from_f64(v).to_bits().to_le_bytes()),
            Dtype::F16 => out.extend_from_slice(&half::f16::from_f64(v).to_bits().to_le_bytes()),
            Dtype::U32 => out.extend_from_slice(&(v.round() as u32).to_le_bytes()),
            Dtype::I32 => out.extend_from_slice(&(v.round() as i32).to_le_bytes()),
            Dtype::U16 => out.extend_from_slice(&(v.round() as u16).to_le_bytes()),
            Dtype::I16 => out.extend_from_slice(&(v.round() as i16).to_le_bytes()),
            Dtype::U8 => out.push(v.round() as u8),
            Dtype::I8 => out.push(v.round() as i8 as u8),
            Dtype::U64 => out.extend_from_slice(&(v.round() as u64).to_le_bytes()),
            Dtype::I64 => out.extend_from_slice(&(v.round() as i64).to_le_bytes()),
            Dtype::Fp8E3 | Dtype::Fp8E4 | Dtype::Fp8E5 => out.push(0),
        }
    }
    out.resize(info.size as usize, 0);
    out
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
