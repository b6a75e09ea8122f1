//! `nrt-emu profile`: execute a NEFF once on the simulator and print a summary of what the
//! device did, with the keys and units of a device profile's summary (neuron-profile's
//! `summary-text`/`summary-json`: times in seconds, sizes in bytes), so the simulator's
//! numbers can be put next to a device profile of the same NEFF.
//!
//! | key | meaning here |
//! |---|---|
//! | `total_time` | the execution's simulated time on the model's first core |
//! | `total_active_time` | time during which at least one engine executes an instruction |
//! | `dma_active_time` / `dma_active_cycles` | time during which at least one DMA queue moves a descriptor pair |
//! | `dma_transfer_time` | DMA busy time summed over queues (exceeds `total_time` when queues overlap) |
//! | `<engine>_engine_active_time` | the engine's busy time (`tensor` PE, `vector` DVE, `scalar` ACT, `gpsimd` POOL, `sync` SP) |
//! | `<engine>_engine_instruction_count` | instructions the engine executed (the platform's own inserted records — DMA queue writes, the closing `end` — included) |
//! | `matmul_instruction_count` | PE multiply instructions |
//! | `hbm_read_bytes` / `hbm_write_bytes` | bytes DMA read from / wrote to device (and host) memory |
//! | `sbuf_read_bytes` / `sbuf_write_bytes` | bytes DMA read from / wrote to SBUF and PSUM |
//! | `dma_transfer_count` | DMA blocks the program triggered |
//! | `dma_transfer_total_bytes` | bytes DMA wrote into memory (register stores excluded) |
//! | `neuroncore_cycle_count` | the execution's device cycles |

use std::path::PathBuf;

use clap::Args;
use nrt_emu::backend::{Backend, Settings};
use nrt_emu::hal::profile::ExecProfile;
use nrt_emu::hal::Target;
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::tensor::{Placement, TensorSet, TensorUsage};
use nrt_emu::runtime::{Error, Result, Runtime};
use serde_json::{json, Map, Value};

use crate::run::neff_target;
use crate::TargetArg;
use nrt_emu::sim::values::seeded_input;

/// Arguments of `nrt-emu profile`.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// The NEFF file.
    pub file: PathBuf,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// The device generation [default: the one the NEFF names].
    #[arg(long, value_enum)]
    pub target: Option<TargetArg>,
    /// Seed of the generated input data (as `nrt-emu run`).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// Runs the command.
pub fn command(args: ProfileArgs) -> Result<()> {
    let neff = std::fs::read(&args.file)
        .map_err(|e| Error::invalid(format!("cannot read {}: {e}", args.file.display())))?;
    let (target, from) = match args.target {
        Some(t) => (Target::from(t), "--target"),
        None => (neff_target(&neff)?, "the NEFF"),
    };
    let device = nrt_emu::backend::open(&Settings::new(Backend::Sim).with_target(target, from))?;
    let rt = Runtime::new(device.hal.clone(), RuntimeConfig::default())?;
    let id = rt.load(&neff, -1)?;
    let model = rt.model(id)?;
    let mut ins = TensorSet::new();
    let mut outs = TensorSet::new();
    for t in rt.model_tensor_info(id)? {
        let dev = rt.tensor_allocate(Placement::Device, model.vnc, t.size, &t.name)?;
        match t.usage {
            TensorUsage::Input => {
                dev.write(
                    0,
                    &seeded_input(args.seed, &t.name, t.dtype, t.size as usize),
                )?;
                ins.add(&t.name, dev);
            }
            TensorUsage::Output => outs.add(&t.name, dev),
        }
    }
    let report = rt.execute(id, &ins, &outs)?;
    let nc = model.tpbs[0];
    let triggers = model.parsed.model.subgraphs.first().map_or(0, |k| {
        k.engines
            .iter()
            .flat_map(|p| &p.records)
            .filter(|r| r.opcode() == 0xC1)
            .count()
    });
    let profiler = device
        .profiler()
        .ok_or_else(|| Error::invalid("the simulator offers no profile"))?;
    let summary = summary(
        target,
        report.cycles[0],
        triggers as u64,
        &profiler.exec_profile(nc),
    );
    if args.json {
        let m: Map<String, Value> = summary.into_iter().collect();
        println!("{}", Value::Object(m));
    } else {
        for (k, v) in &summary {
            match v {
                Value::String(s) => println!("{k} {s}"),
                other => println!("{k} {other}"),
            }
        }
    }
    drop((ins, outs));
    rt.unload(id)
}

/// The summary's keys in order, with their values.
fn summary(target: Target, cycles: u64, transfers: u64, p: &ExecProfile) -> Vec<(String, Value)> {
    let hz = target.spec().clocks.sp as f64;
    let secs = |c: u64| json!(c as f64 / hz);
    let mut m = Vec::new();
    let mut put = |k: &str, v: Value| m.push((k.to_string(), v));
    put("total_time", secs(cycles));
    put("total_active_time", secs(p.engines_busy.cycles));
    put("dma_transfer_time", secs(p.dma_queue_cycles));
    put("dma_active_time", secs(p.dma_busy.cycles));
    // Engines in exec-request order: PE, ACT, POOL, DVE, SP.
    let names = ["tensor", "scalar", "gpsimd", "vector", "sync"];
    for (i, n) in names.iter().enumerate() {
        put(&format!("{n}_engine_active_time"), secs(p.engine_active[i]));
    }
    for (i, n) in names.iter().enumerate() {
        put(
            &format!("{n}_engine_instruction_count"),
            json!(p.engine_instructions[i]),
        );
    }
    put("matmul_instruction_count", json!(p.matmul_instructions));
    put("hbm_read_bytes", json!(p.hbm_read_bytes));
    put("hbm_write_bytes", json!(p.hbm_write_bytes));
    put("sbuf_read_bytes", json!(p.sbuf_read_bytes));
    put("sbuf_write_bytes", json!(p.sbuf_write_bytes));
    put("dma_transfer_count", json!(transfers));
    put("dma_transfer_total_bytes", json!(p.dma_bytes));
    put("neuroncore_cycle_count", json!(cycles));
    put("dma_active_cycles", json!(p.dma_busy.cycles));
    put("target", json!(target.to_string()));
    m
}
