//! `nrt-emu run`: load a NEFF, bind its inputs (from `.npy` files or seeded data), execute it
//! one or more times (sync, or async with N in flight), and report its outputs, cycles and host
//! wall time — the runtime's main job from the command line.
//!
//! Every failure is a runtime [`Error`], so the message names its NRT status
//! (`NRT_INVALID(2): …`), whether it came from the runtime or from this command's own checks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Args;
use nrt_emu::backend::{Backend, Settings};
use nrt_emu::hal::{Dtype, Target};
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::exec::ExecReport;
use nrt_emu::runtime::manifest::{npy_bytes, parse_npy};
use nrt_emu::runtime::tensor::{Placement, TensorInfo, TensorSet, TensorUsage};
use nrt_emu::runtime::{Error, ModelId, NrtStatus, Result, Runtime};
use nrt_emu::sim::values::seeded_input;
use sha2::{Digest, Sha256};

use crate::TargetArg;

/// Arguments of `nrt-emu run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The NEFF file.
    pub file: PathBuf,
    /// The device backend [default: $NRT_EMU_BACKEND, else sim].
    #[arg(long, value_parser = crate::backend_arg())]
    pub backend: Option<Backend>,
    /// The device generation [default: the one the NEFF names; `*` means trn1].
    #[arg(long, value_enum)]
    pub target: Option<TargetArg>,
    /// Bind input NAME to the contents of a .npy file (dtype and shape must match the model's;
    /// bf16 tensors take `<u2` raw bits, fp8 tensors `|u1`). Inputs not given get seeded
    /// deterministic data.
    #[arg(long = "input", value_name = "NAME=FILE.npy")]
    pub inputs: Vec<String>,
    /// Write each output as NAME.npy into this directory (created if missing). bf16 outputs are
    /// written as `<u2` (their raw bits: numpy has no bfloat16), fp8 outputs as `|u1`.
    /// Without this option no file is written.
    #[arg(long, value_name = "DIR")]
    pub output_dir: Option<PathBuf>,
    /// Executions to run; the report shows the last one's cycles.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub iterations: u32,
    /// Execute asynchronously with up to N requests in flight (submit all, then wait for all).
    #[arg(long = "async", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub async_inflight: Option<u32>,
    /// Write the device timeline (the simulator's) as Chrome/Perfetto trace JSON.
    #[arg(long, value_name = "FILE.json")]
    pub trace: Option<PathBuf>,
    /// Seed of the generated input data: values k/128 in [-1, 1] per tensor name, the same data
    /// `nrt-emu conform --seed` feeds (integers round to -1, 0 or 1).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

fn failure(msg: impl Into<String>) -> Error {
    Error::new(NrtStatus::Failure, msg)
}

/// The target the NEFF's kelf file names (`*`, any generation, → trn1).
pub(crate) fn neff_target(bytes: &[u8]) -> Result<Target> {
    nrt_emu::runtime::neff::target_of(bytes)
        .map(|t| t.unwrap_or(Target::Trn1))
        .map_err(|e| Error::new(e.status, format!("{}; pass --target", e.message)))
}

/// Whether a file's type string (any byte order; data is little-endian after parsing) is what
/// `dtype` is exchanged as ([`Dtype::npy_descr`]). `U8` also takes numpy `bool`.
fn npy_matches(dtype: Dtype, descr: &str) -> bool {
    let Ok(ty) = descr.parse::<npyz::TypeStr>() else {
        return false;
    };
    let kind = format!("{}{}", ty.type_char().to_str(), ty.size_field());
    kind == dtype.npy_descr()[1..] || (dtype == Dtype::U8 && kind == "b1")
}

/// sha256 of `data`, first 16 hex digits.
pub fn checksum(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn shape_str(shape: &[u64]) -> String {
    format!(
        "[{}]",
        shape
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The file name an output is written to: its name with path-hostile characters replaced.
fn output_file_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let clean = if clean.trim_matches('.').is_empty() {
        "_".to_string()
    } else {
        clean
    };
    format!("{clean}.npy")
}

/// Parses the `--input NAME=FILE` options.
pub(crate) fn input_files(specs: &[String]) -> Result<BTreeMap<String, PathBuf>> {
    let mut map = BTreeMap::new();
    for s in specs {
        let (name, file) = s
            .split_once('=')
            .filter(|(n, f)| !n.is_empty() && !f.is_empty())
            .ok_or_else(|| Error::invalid(format!("--input {s:?}: expected NAME=FILE.npy")))?;
        if map.insert(name.to_string(), PathBuf::from(file)).is_some() {
            return Err(Error::invalid(format!("--input {name:?} is given twice")));
        }
    }
    Ok(map)
}

/// The bytes of input `info` from `file`, checked against the model's dtype and shape.
pub(crate) fn input_from_npy(info: &TensorInfo, file: &Path) -> Result<Vec<u8>> {
    let shown = file.display().to_string();
    let max = RuntimeConfig::from_env().max_neff_file;
    let bytes = nrt_emu::runtime::neff::read_file(file, max)
        .map_err(|e| e.context(format!("input {:?}", info.name)))?;
    let npy = parse_npy(&shown, &bytes).map_err(|e| e.context(format!("input {:?}", info.name)))?;
    if !npy_matches(info.dtype, &npy.descr) {
        return Err(Error::invalid(format!(
            "input {:?}: {shown} has dtype {}, the model expects {} ({})",
            info.name,
            npy.descr,
            info.dtype,
            info.dtype.npy_descr()
        )));
    }
    if npy.shape != info.shape {
        return Err(Error::invalid(format!(
            "input {:?}: {shown} has shape {}, the model expects {}",
            info.name,
            shape_str(&npy.shape),
            shape_str(&info.shape)
        )));
    }
    if npy.data.len() as u64 != info.size {
        return Err(Error::invalid(format!(
            "input {:?}: {shown} holds {} bytes, the model expects {}",
            info.name,
            npy.data.len(),
            info.size
        )));
    }
    Ok(npy.data)
}

/// The shape an output is written with: the model's, unless it disagrees with the byte size.
fn output_shape(info: &TensorInfo) -> Vec<u64> {
    let elems = info.size / info.dtype.size() as u64;
    if info.shape.iter().product::<u64>() == elems {
        info.shape.clone()
    } else {
        vec![elems]
    }
}

/// Runs `nrt-emu run`.
pub fn command(args: RunArgs) -> Result<()> {
    let backend = Backend::from_flag_or_env(args.backend, &|v| std::env::var(v).ok())?;
    let shown = args.file.display().to_string();
    let neff =
        nrt_emu::runtime::neff::read_file(&args.file, RuntimeConfig::from_env().max_neff_file)?;
    let target = match args.target {
        Some(t) => Target::from(t),
        None => neff_target(&neff).map_err(|e| e.context(&shown))?,
    };
    let files = input_files(&args.inputs)?;

    let from = if args.target.is_some() {
        "--target"
    } else {
        "the NEFF"
    };
    let device = nrt_emu::backend::open(
        &Settings::new(backend)
            .with_target(target, from)
            .with_timeline(args.trace.is_some())
            .with_sim_hint("use --backend sim"),
    )?;
    if args.trace.is_some() && device.profiler().is_none() {
        return Err(Error::invalid(format!(
            "--trace writes the device timeline, which the {backend} backend does not record; it needs --backend sim"
        )));
    }
    let mut cfg = RuntimeConfig::from_env();
    if let Some(n) = args.async_inflight {
        cfg.async_max_inflight = n;
    }
    let rt = Runtime::new(device.hal, cfg)?;
    let result = run_model(&rt, &neff, &shown, target, &files, &args);
    rt.close();
    result
}

fn run_model(
    rt: &Runtime,
    neff: &[u8],
    shown: &str,
    target: Target,
    files: &BTreeMap<String, PathBuf>,
    args: &RunArgs,
) -> Result<()> {
    let id = rt.load(neff, -1)?;
    let model = rt.model(id)?;
    let info = rt.model_tensor_info(id)?;
    check_input_names(&info, files)?;
    let cores: Vec<String> = model.tpbs.iter().map(|nc| format!("nc{}", nc.0)).collect();
    println!(
        "model: {shown} ({}, target {target}, logical core {}, cores {})",
        model.name,
        model.vnc,
        cores.join(" ")
    );
    let (ins, outs) = bind_io(rt, model.vnc, &info, files, args.seed)?;

    let start = Instant::now();
    let report = execute(rt, id, &ins, &outs, args)?;
    let wall = start.elapsed();
    report_outputs(&info, &outs, args.output_dir.as_deref())?;
    // Cycles and the simulated device time they take (cycles of the target's SP clock).
    let cycles: Vec<String> = report
        .cycles
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let us = nrt_sim::device_time_us(target, c);
            match model.tpbs.get(i) {
                Some(nc) => format!("nc{} {c} ({us:.3} µs)", nc.0),
                None => format!("{c} ({us:.3} µs)"),
            }
        })
        .collect();
    println!("cycles per iteration: {}", cycles.join(", "));
    match args.async_inflight {
        None => println!("iterations: {} (sync)", args.iterations),
        Some(n) => println!("iterations: {} (async, {n} in flight)", args.iterations),
    }
    println!(
        "host wall time: {} total, {} per iteration",
        ms(wall),
        ms(wall / args.iterations)
    );
    if let (Some(path), Some(profiler)) = (&args.trace, rt.hal().profiler()) {
        std::fs::write(path, profiler.timeline_json())
            .map_err(|e| failure(format!("cannot write {}: {e}", path.display())))?;
        println!("trace: {}", path.display());
    }
    drop((ins, outs));
    rt.unload(id)
}

/// Every `--input NAME` names an input of the model.
pub(crate) fn check_input_names(
    info: &[TensorInfo],
    files: &BTreeMap<String, PathBuf>,
) -> Result<()> {
    for name in files.keys() {
        match info.iter().find(|t| &t.name == name) {
            Some(t) if t.usage == TensorUsage::Input => {}
            Some(_) => {
                return Err(Error::invalid(format!(
                    "--input {name:?}: {name:?} is an output of the model, not an input"
                )))
            }
            None => {
                let inputs: Vec<&str> = info
                    .iter()
                    .filter(|t| t.usage == TensorUsage::Input)
                    .map(|t| t.name.as_str())
                    .collect();
                return Err(Error::invalid(format!(
                    "--input {name:?}: the model has no input {name:?} (its inputs: {})",
                    inputs.join(", ")
                )));
            }
        }
    }
    Ok(())
}

/// Device tensors for every input (filled from its file or with seeded data, and reported)
/// and every output.
fn bind_io(
    rt: &Runtime,
    vnc: u32,
    info: &[TensorInfo],
    files: &BTreeMap<String, PathBuf>,
    seed: u64,
) -> Result<(TensorSet, TensorSet)> {
    let mut ins = TensorSet::new();
    let mut outs = TensorSet::new();
    for t in info {
        let dev = rt.tensor_allocate(Placement::Device, vnc, t.size, &t.name)?;
        match t.usage {
            TensorUsage::Input => {
                let (data, from) = match files.get(&t.name) {
                    Some(f) => (input_from_npy(t, f)?, f.display().to_string()),
                    None => (
                        seeded_input(seed, &t.name, t.dtype, t.size as usize),
                        format!("seeded (seed {})", seed),
                    ),
                };
                dev.write(0, &data)?;
                println!(
                    "input {}: {} {} {from}",
                    t.name,
                    t.dtype,
                    shape_str(&t.shape)
                );
                ins.add(&t.name, dev);
            }
            TensorUsage::Output => outs.add(&t.name, dev),
        }
    }

    Ok((ins, outs))
}

/// Runs the iterations (sync, or async with the requested number in flight) and returns the
/// last one's report.
fn execute(
    rt: &Runtime,
    id: ModelId,
    ins: &TensorSet,
    outs: &TensorSet,
    args: &RunArgs,
) -> Result<ExecReport> {
    let report = match args.async_inflight {
        None => {
            let mut last = None;
            for _ in 0..args.iterations {
                last = Some(rt.execute(id, ins, outs)?);
            }
            last
        }
        Some(n) => {
            let mut reqs = Vec::with_capacity(args.iterations as usize);
            for _ in 0..args.iterations {
                reqs.push(rt.execute_async(id, ins, outs)?);
            }
            let timeout = rt.config().exec_timeout.saturating_mul(n.saturating_add(1));
            let mut last = None;
            let mut first_err = None;
            for r in reqs {
                match rt.wait(r, timeout) {
                    Ok(rep) => last = Some(rep),
                    Err(e) => {
                        first_err.get_or_insert(e);
                    }
                }
            }
            if let Some(e) = first_err {
                return Err(e);
            }
            last
        }
    };
    report.ok_or_else(|| failure("no execution ran"))
}

/// Prints each output's line (name, dtype, shape, checksum) and, with `dir`, writes it as
/// `NAME.npy` there.
fn report_outputs(info: &[TensorInfo], outs: &TensorSet, dir: Option<&Path>) -> Result<()> {
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| failure(format!("cannot create {}: {e}", dir.display())))?;
    }
    for t in info.iter().filter(|t| t.usage == TensorUsage::Output) {
        let data = outs
            .get(&t.name)
            .ok_or_else(|| failure(format!("output {:?} was not bound", t.name)))?
            .to_vec()?;
        let mut line = format!(
            "output {}: {} {} sha256 {}",
            t.name,
            t.dtype,
            shape_str(&t.shape),
            checksum(&data)
        );
        if let Some(dir) = dir {
            let path = dir.join(output_file_name(&t.name));
            let descr = t.dtype.npy_descr();
            std::fs::write(&path, npy_bytes(t.dtype, &output_shape(t), &data)?)
                .map_err(|e| failure(format!("cannot write {}: {e}", path.display())))?;
            line.push_str(&format!(" -> {} ({descr})", path.display()));
        }
        println!("{line}");
    }
    Ok(())
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}
