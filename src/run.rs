//! `nrt-emu run`: load a NEFF, bind its inputs (from `.npy` files or seeded data), execute it
//! one or more times (sync, or async with N in flight), and report its outputs, cycles and host
//! wall time — the runtime's main job from the command line.
//!
//! Every failure is a runtime [`Error`], so the message names its NRT status
//! (`NRT_INVALID(2): …`), whether it came from the runtime or from this command's own checks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use nrt_emu::hal::driver::{device_path, DriverHal, RealSyscalls};
use nrt_emu::hal::{Dtype, Hal, Target};
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::manifest::{parse_kelf_json, parse_neff_json, parse_npy};
use nrt_emu::runtime::neff::{Neff, ParseOptions};
use nrt_emu::runtime::tensor::{Placement, TensorInfo, TensorSet, TensorUsage};
use nrt_emu::runtime::{Error, NrtStatus, Result, Runtime};
use nrt_emu::sim::{Sim, SimConfig};
use sha2::{Digest, Sha256};

use crate::TargetArg;

/// The environment variable that picks the backend when `--backend` is not given.
pub const BACKEND_ENV: &str = "NRT_EMU_BACKEND";

/// The device backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// The simulated device.
    Sim,
    /// The Linux kernel driver (`/dev/neuronN`).
    Driver,
}

/// Arguments of `nrt-emu run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The NEFF file.
    pub file: PathBuf,
    /// The device backend [default: $NRT_EMU_BACKEND, else sim].
    #[arg(long, value_enum)]
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
    /// Write the simulator's timeline as Chrome/Perfetto trace JSON.
    #[arg(long, value_name = "FILE.json")]
    pub trace: Option<PathBuf>,
    /// Seed of the generated input data (floats uniform in [-1, 1); signed integers in [-8, 8],
    /// unsigned in [0, 16]).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

fn failure(msg: impl Into<String>) -> Error {
    Error::new(NrtStatus::Failure, msg)
}

/// The backend `--backend` or `$NRT_EMU_BACKEND` selects (sim when neither does).
fn backend(flag: Option<Backend>) -> Result<Backend> {
    if let Some(b) = flag {
        return Ok(b);
    }
    match std::env::var(BACKEND_ENV) {
        Ok(v) if v.trim().is_empty() => Ok(Backend::Sim),
        Ok(v) => Backend::from_str(v.trim(), true).map_err(|_| {
            Error::invalid(format!(
                "{BACKEND_ENV}={v:?} names no backend (expected sim or driver)"
            ))
        }),
        Err(_) => Ok(Backend::Sim),
    }
}

/// The target the NEFF's kelf file names (`*`, any generation, → trn1).
fn neff_target(bytes: &[u8]) -> Result<Target> {
    let neff = Neff::parse(bytes, &ParseOptions::default())?;
    let neff_json = neff
        .member("neff.json")
        .ok_or_else(|| Error::invalid("neff.json is missing"))?;
    let io = parse_neff_json("neff.json", neff_json)?.io("neff.json")?;
    let kelf = parse_kelf_json(
        &io.kelf_file,
        neff.member(&io.kelf_file)
            .ok_or_else(|| Error::invalid(format!("{} is missing", io.kelf_file)))?,
    )?;
    if kelf.target == "*" {
        return Ok(Target::Trn1);
    }
    Target::from_neff_target(&kelf.target).ok_or_else(|| {
        Error::invalid(format!(
            "{} names target {:?}, which this build does not simulate; pass --target",
            io.kelf_file, kelf.target
        ))
    })
}

/// The numpy type string (without byte order) a tensor of `dtype` is exchanged as.
fn npy_kind(dtype: Dtype) -> &'static str {
    match dtype {
        Dtype::F32 | Dtype::F32r => "f4",
        Dtype::F16 => "f2",
        Dtype::Bf16 | Dtype::U16 => "u2",
        Dtype::Fp8E3 | Dtype::Fp8E4 | Dtype::Fp8E5 | Dtype::U8 => "u1",
        Dtype::I8 => "i1",
        Dtype::I16 => "i2",
        Dtype::I32 => "i4",
        Dtype::U32 => "u4",
        Dtype::I64 => "i8",
        Dtype::U64 => "u8",
    }
}

/// The full `descr` of an output file: little-endian, `|` for one-byte types.
fn npy_descr(dtype: Dtype) -> String {
    let order = if dtype.size() == 1 { '|' } else { '<' };
    format!("{order}{}", npy_kind(dtype))
}

/// Whether a file's type string (any byte order; data is little-endian after parsing) is what
/// `dtype` is exchanged as. `U8` also takes numpy `bool`.
fn npy_matches(dtype: Dtype, descr: &str) -> bool {
    let Ok(ty) = descr.parse::<npyz::TypeStr>() else {
        return false;
    };
    let kind = format!("{}{}", ty.type_char().to_str(), ty.size_field());
    kind == npy_kind(dtype) || (dtype == Dtype::U8 && kind == "b1")
}

/// An `.npy` file holding `data` (little-endian, C order) as `descr` with `shape`.
pub fn npy_bytes(descr: &str, shape: &[u64], data: &[u8]) -> Vec<u8> {
    let dims = match shape {
        [d] => format!("({d},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {dims}, }}");
    // Magic (6) + version (2) + length; the header ends in '\n' and the data starts 64-aligned.
    let (version, len_bytes) = if header.len() + 1 + 10 <= usize::from(u16::MAX) {
        (1u8, 2usize)
    } else {
        (2u8, 4usize)
    };
    let prefix = 8 + len_bytes;
    let pad = (64 - (prefix + header.len() + 1) % 64) % 64;
    header.extend(std::iter::repeat_n(' ', pad));
    header.push('\n');
    let mut out = Vec::with_capacity(prefix + header.len() + data.len());
    out.extend_from_slice(b"\x93NUMPY");
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
    }
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

/// splitmix64: a small, seedable, deterministic generator.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// Seeded data for one input: each tensor's stream depends on the seed and its name only, so
/// giving some inputs as files does not change the others.
pub fn seeded_input(seed: u64, name: &str, dtype: Dtype, size: usize) -> Vec<u8> {
    // FNV-1a of the name, mixed into the seed.
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let mut rng = SplitMix(seed ^ h);
    let es = dtype.size();
    let mut out = vec![0u8; size];
    for e in out.chunks_exact_mut(es) {
        let x = rng.next();
        if dtype.is_float() {
            // 24 random bits → uniform in [-1, 1).
            let v = (x >> 40) as f32 / (1u32 << 23) as f32 - 1.0;
            match dtype {
                Dtype::F32 | Dtype::F32r => e.copy_from_slice(&v.to_le_bytes()),
                Dtype::Bf16 => e.copy_from_slice(&half::bf16::from_f32(v).to_le_bytes()),
                Dtype::F16 => e.copy_from_slice(&half::f16::from_f32(v).to_le_bytes()),
                _ => {
                    nrt_emu::sim::compute::convert::write_f32(dtype, v, e);
                }
            }
        } else {
            let signed = matches!(dtype, Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::I64);
            let v: i64 = if signed {
                (x % 17) as i64 - 8
            } else {
                (x % 17) as i64
            };
            e.copy_from_slice(&v.to_le_bytes()[..es]);
        }
    }
    out
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
fn input_files(specs: &[String]) -> Result<BTreeMap<String, PathBuf>> {
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
fn input_from_npy(info: &TensorInfo, file: &Path) -> Result<Vec<u8>> {
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
            npy_descr(info.dtype)
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
    let backend = backend(args.backend)?;
    let shown = args.file.display().to_string();
    let neff =
        nrt_emu::runtime::neff::read_file(&args.file, RuntimeConfig::from_env().max_neff_file)?;
    let target = match args.target {
        Some(t) => Target::from(t),
        None => neff_target(&neff).map_err(|e| e.context(&shown))?,
    };
    let files = input_files(&args.inputs)?;

    let (hal, sim): (Arc<dyn Hal>, Option<Arc<Sim>>) = match backend {
        Backend::Sim => {
            let mut sim_cfg = SimConfig::new(target);
            if args.trace.is_some() {
                sim_cfg = sim_cfg.with_timeline();
            }
            let sim = Arc::new(Sim::new(sim_cfg));
            (sim.clone(), Some(sim))
        }
        Backend::Driver => {
            if args.trace.is_some() {
                return Err(Error::invalid(
                    "--trace writes the simulator's timeline; it needs --backend sim",
                ));
            }
            let path = device_path(0);
            let hal = DriverHal::open(0, Arc::new(RealSyscalls)).map_err(|e| {
                failure(format!(
                    "the driver backend cannot open {path}: {e} (is this a Trainium/Inferentia \
                     host with the Neuron driver loaded? without a device, use --backend sim)"
                ))
            })?;
            let device = hal.device_info()?.target;
            if device != target {
                return Err(Error::invalid(format!(
                    "the NEFF is for {target}, but {path} is a {device}"
                )));
            }
            (Arc::new(hal), None)
        }
    };
    let mut cfg = RuntimeConfig::from_env();
    if let Some(n) = args.async_inflight {
        cfg.async_max_inflight = n;
    }
    let rt = Runtime::new(hal, cfg)?;
    let result = run_model(&rt, sim.as_deref(), &neff, &shown, target, &files, &args);
    rt.close();
    result
}

fn run_model(
    rt: &Runtime,
    sim: Option<&Sim>,
    neff: &[u8],
    shown: &str,
    target: Target,
    files: &BTreeMap<String, PathBuf>,
    args: &RunArgs,
) -> Result<()> {
    let id = rt.load(neff, -1)?;
    let model = rt.model(id)?;
    let info = rt.model_tensor_info(id)?;
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
    let cores: Vec<String> = model.tpbs.iter().map(|nc| format!("nc{}", nc.0)).collect();
    println!(
        "model: {shown} ({}, target {target}, logical core {}, cores {})",
        model.name,
        model.vnc,
        cores.join(" ")
    );

    let mut ins = TensorSet::new();
    let mut outs = TensorSet::new();
    for t in &info {
        let dev = rt.tensor_allocate(Placement::Device, model.vnc, t.size, &t.name)?;
        match t.usage {
            TensorUsage::Input => {
                let (data, from) = match files.get(&t.name) {
                    Some(f) => (input_from_npy(t, f)?, f.display().to_string()),
                    None => (
                        seeded_input(args.seed, &t.name, t.dtype, t.size as usize),
                        format!("seeded (seed {})", args.seed),
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

    let start = Instant::now();
    let report = match args.async_inflight {
        None => {
            let mut last = None;
            for _ in 0..args.iterations {
                last = Some(rt.execute(id, &ins, &outs)?);
            }
            last
        }
        Some(n) => {
            let mut reqs = Vec::with_capacity(args.iterations as usize);
            for _ in 0..args.iterations {
                reqs.push(rt.execute_async(id, &ins, &outs)?);
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
    let wall = start.elapsed();
    let report = report.ok_or_else(|| failure("no execution ran"))?;

    if let Some(dir) = &args.output_dir {
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
        if let Some(dir) = &args.output_dir {
            let path = dir.join(output_file_name(&t.name));
            let descr = npy_descr(t.dtype);
            std::fs::write(&path, npy_bytes(&descr, &output_shape(t), &data))
                .map_err(|e| failure(format!("cannot write {}: {e}", path.display())))?;
            line.push_str(&format!(" -> {} ({descr})", path.display()));
        }
        println!("{line}");
    }
    let cycles: Vec<String> = report
        .cycles
        .iter()
        .enumerate()
        .map(|(i, c)| match model.tpbs.get(i) {
            Some(nc) => format!("nc{} {c}", nc.0),
            None => c.to_string(),
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
    if let (Some(path), Some(sim)) = (&args.trace, sim) {
        std::fs::write(path, sim.timeline_json())
            .map_err(|e| failure(format!("cannot write {}: {e}", path.display())))?;
        println!("trace: {}", path.display());
    }
    drop((ins, outs));
    rt.unload(id)
}

fn ms(d: Duration) -> String {
    format!("{:.3} ms", d.as_secs_f64() * 1e3)
}
