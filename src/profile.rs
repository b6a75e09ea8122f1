//! `nrt-emu profile`: execute a NEFF once on the simulator, recording it instruction by
//! instruction, and report it the way AWS's profiler reports a device run (docs/profile.md):
//!
//! - by default, the summary (`summary[0]` of neuron-profile's JSON: times in seconds, sizes in
//!   bytes), as `key value` lines or, with `--json`, one JSON object;
//! - with `--format json`, the whole profile in neuron-profile's JSON schema
//!   (`instruction[]`, `dma[]`, `active_time[]`, `semaphore_update[]`, `summary[0]`,
//!   `model_info[]`, `neff_header[0]`, `metadata[0]` with `is_simulation` true), to `--output`
//!   or standard output;
//! - with `--compare DEVICE.profile.json|DEVICE.ntff`, the simulated profile held against a
//!   device one (`nrt_profile::compare`): instructions with the same opcode and operands, total
//!   and active times side by side, the alignment per engine, the largest duration
//!   differences; with `--json` the comparison's JSON object.
//!
//! The summary adds to the profiler's keys three of its own: `dma_transfer_count` (the DMA
//! blocks the program's triggers started, neuron-profile 2.25's count, which 2.28 writes as 0),
//! `dma_transfer_total_bytes` (bytes DMA wrote into memory) and `target`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use nrt_emu::backend::{Backend, RuntimeVersion, Settings};
use nrt_emu::hal::Target;
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::tensor::{Placement, TensorSet, TensorUsage};
use nrt_emu::runtime::{Error, Result, Runtime};
use nrt_emu::sim::values::seeded_input;
use nrt_profile::{Profile, Summary};
use serde_json::{json, Map, Value};

use crate::run::{check_input_names, input_files, input_from_npy, neff_target};
use crate::TargetArg;

/// What `nrt-emu profile` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// The summary keys.
    Summary,
    /// The whole profile in neuron-profile's JSON schema.
    Json,
}

/// Arguments of `nrt-emu profile`.
#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// The NEFF file.
    pub file: PathBuf,
    /// What to write: the summary, or the profile as neuron-profile's JSON.
    #[arg(long, value_enum, default_value = "summary")]
    pub format: Format,
    /// Write the output to this file instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Hold the simulated profile against a device one: neuron-profile's JSON export or the
    /// device's trace (.ntff).
    #[arg(long, value_name = "DEVICE.profile.json|DEVICE.ntff")]
    pub compare: Option<PathBuf>,
    /// Print the summary (or, with --compare, the comparison) as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// The device generation [default: the one the NEFF names].
    #[arg(long, value_enum)]
    pub target: Option<TargetArg>,
    /// Bind input NAME to a .npy file (as `nrt-emu run`); others get seeded data.
    #[arg(long = "input", value_name = "NAME=FILE.npy")]
    pub inputs: Vec<String>,
    /// Seed of the generated input data (as `nrt-emu run`).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The Neuron runtime whose instructions the device runs around the program [default:
    /// 2.30].
    #[arg(long, value_name = "2.27|2.30", value_parser = parse_runtime)]
    pub runtime: Option<RuntimeVersion>,
    /// Also write the device timeline as Chrome/Perfetto trace JSON.
    #[arg(long, value_name = "FILE.json")]
    pub trace: Option<PathBuf>,
}

fn parse_runtime(s: &str) -> std::result::Result<RuntimeVersion, String> {
    RuntimeVersion::parse(s)
        .ok_or_else(|| format!("{s:?}: the runtimes modelled are 2.27 and 2.30"))
}

fn io_error(what: &std::path::Path, e: impl std::fmt::Display) -> Error {
    Error::failure(format!("{}: {e}", what.display()))
}

/// Runs the command.
pub fn command(args: ProfileArgs) -> Result<()> {
    let neff =
        nrt_emu::runtime::neff::read_file(&args.file, RuntimeConfig::from_env().max_neff_file)?;
    let shown = args.file.display().to_string();
    let (target, from) = match args.target {
        Some(t) => (Target::from(t), "--target"),
        None => (
            neff_target(&neff).map_err(|e| e.context(&shown))?,
            "the NEFF",
        ),
    };
    let files = input_files(&args.inputs)?;
    // Read the device profile first: a bad file fails before the simulation runs.
    let device_profile = match &args.compare {
        Some(p) => Some(
            nrt_profile::read_profile(p).map_err(|e| Error::invalid(format!("--compare: {e}")))?,
        ),
        None => None,
    };
    let device = nrt_emu::backend::open(
        &Settings::new(Backend::Sim)
            .with_target(target, from)
            .with_timeline(args.trace.is_some())
            .with_runtime(args.runtime),
    )?;
    let profiler = device
        .profiler()
        .ok_or_else(|| Error::invalid("the simulator offers no profile"))?;
    profiler.set_tracing(true);
    let rt = Runtime::new(device.hal.clone(), RuntimeConfig::default())?;
    let result = (|| -> Result<(Profile, u64, u64)> {
        let id = rt.load(&neff, -1)?;
        let model = rt.model(id)?;
        let info = rt.model_tensor_info(id)?;
        check_input_names(&info, &files)?;
        let mut ins = TensorSet::new();
        let mut outs = TensorSet::new();
        for t in &info {
            let dev = rt.tensor_allocate(Placement::Device, model.vnc, t.size, &t.name)?;
            match t.usage {
                TensorUsage::Input => {
                    let data = match files.get(&t.name) {
                        Some(f) => input_from_npy(t, f)?,
                        None => seeded_input(args.seed, &t.name, t.dtype, t.size as usize),
                    };
                    dev.write(0, &data)?;
                    ins.add(&t.name, dev);
                }
                TensorUsage::Output => outs.add(&t.name, dev),
            }
        }
        rt.execute(id, &ins, &outs)?;
        let base = Summary {
            runtime_version: format!(
                "{} (simulated by nrt-emu {})",
                args.runtime.unwrap_or(RuntimeVersion::V2_30),
                env!("CARGO_PKG_VERSION")
            ),
            instance_type: match target {
                Target::Trn1 => "trn1.2xlarge",
                Target::Trn2 => "trn2.3xlarge",
            }
            .into(),
            ..Summary::default()
        };
        let profile = rt.execution_profile(id, &ins, &outs, base)?;
        let triggers = model.parsed.model.subgraphs.first().map_or(0, |k| {
            k.engines
                .iter()
                .flat_map(|p| &p.records)
                .filter(|r| r.opcode() == 0xC1)
                .count()
        }) as u64;
        let counters = profiler.exec_profile(model.tpbs[0]);
        drop((ins, outs));
        rt.unload(id)?;
        Ok((profile, triggers, counters.dma_bytes))
    })();
    rt.close();
    let (profile, triggers, dma_bytes) = result?;
    if let Some(path) = &args.trace {
        std::fs::write(path, profiler.timeline_json()).map_err(|e| io_error(path, e))?;
    }

    let text = match (&device_profile, args.format) {
        (Some(dev), _) => {
            let c = nrt_profile::compare(&profile, dev);
            if args.format == Format::Json {
                // The profile goes to --output; the comparison to standard output.
                write_profile(&profile, args.output.as_ref())?;
                print_comparison(&c, args.json);
                return Ok(());
            }
            comparison_text(&c, args.json)
        }
        (None, Format::Json) => return write_profile(&profile, args.output.as_ref()),
        (None, Format::Summary) => summary_text(&profile, target, triggers, dma_bytes, args.json),
    };
    match &args.output {
        Some(path) => std::fs::write(path, text).map_err(|e| io_error(path, e)),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

fn write_profile(profile: &Profile, output: Option<&PathBuf>) -> Result<()> {
    match output {
        Some(path) => {
            nrt_profile::json::write_file(profile, path).map_err(|e| Error::failure(e.to_string()))
        }
        None => {
            println!("{}", nrt_profile::json::to_string(profile));
            Ok(())
        }
    }
}

fn comparison_text(c: &nrt_profile::Comparison, json: bool) -> String {
    if json {
        format!("{}\n", c.to_json())
    } else {
        c.to_text()
    }
}

fn print_comparison(c: &nrt_profile::Comparison, json: bool) {
    print!("{}", comparison_text(c, json));
}

/// The summary's keys in the profile's order, with the command's own three added.
fn summary_text(p: &Profile, target: Target, transfers: u64, dma_bytes: u64, json: bool) -> String {
    let summary = p.summary().cloned().unwrap_or_default();
    let mut m: Map<String, Value> = match serde_json::to_value(&summary) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    };
    m.insert("dma_transfer_count".into(), json!(transfers));
    m.insert("dma_transfer_total_bytes".into(), json!(dma_bytes));
    m.insert("target".into(), json!(target.to_string()));
    if json {
        return format!("{}\n", Value::Object(m));
    }
    let sorted: BTreeMap<&String, &Value> = m.iter().collect();
    let mut t = String::new();
    for (k, v) in sorted {
        match v {
            Value::String(s) => t.push_str(&format!("{k} {s}\n")),
            other => t.push_str(&format!("{k} {other}\n")),
        }
    }
    t
}
