//! The `nrt-emu` command line.

mod conform;
mod inspect;
mod install;
mod ls;
mod profile;
mod run;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Parser, Subcommand, ValueEnum};
use nrt_emu::backend::Backend;
use nrt_emu::hal::target::{Direction, MmioReg};
use nrt_emu::hal::{isa, DeviceAddr, DmaEngine, NcIndex, QueueId, QueueRef, Target};

/// Emulates the AWS Neuron runtime on a simulated Neuron device.
#[derive(Parser)]
#[command(name = "nrt-emu", version = version_line(), about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum TargetArg {
    Trn1,
    Trn2,
}

impl From<TargetArg> for Target {
    fn from(t: TargetArg) -> Target {
        match t {
            TargetArg::Trn1 => Target::Trn1,
            TargetArg::Trn2 => Target::Trn2,
        }
    }
}

/// `--backend sim|driver`: the platform's one [`Backend`] as a command-line value.
fn backend_arg() -> impl TypedValueParser<Value = Backend> {
    PossibleValuesParser::new(Backend::ALL.map(Backend::name))
        .map(|name| Backend::parse(&name).expect("one of the possible values"))
}

#[derive(Subcommand)]
enum Command {
    /// Load a NEFF, execute it on the device and report its outputs (name, dtype, shape,
    /// checksum), cycles per core and host wall time.
    Run(run::RunArgs),
    /// Execute a NEFF once on the simulator and print a summary with a device profile's keys
    /// and units (total_time, per-engine active times and instruction counts, DMA and HBM
    /// traffic, …).
    Profile(profile::ProfileArgs),
    /// Print a device generation's tables: cores, engines, HBM, SBUF/PSUM, MMIO map, clocks.
    Target {
        /// The generation.
        #[arg(long, value_enum, default_value = "trn1")]
        target: TargetArg,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Disassemble a NEFF (every engine stream of every subgraph) or one engine instruction
    /// stream (a NEFF `<Engine>.bin` member).
    Disasm {
        /// The instruction binary (64-byte records), or a whole NEFF: every engine stream of
        /// every subgraph, Neuron records named and rendered as AWS's profiler does.
        file: PathBuf,
    },
    /// Describe a NEFF: header, target, subgraphs, members, IO tensors, vars, queue sets, DMA
    /// blocks and instructions per engine.
    Inspect {
        /// The NEFF file.
        file: PathBuf,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        /// Build for this generation instead of the one the NEFF names.
        #[arg(long, value_enum)]
        target: Option<TargetArg>,
    },
    /// Record a NEFF's device-facing trace (load, then two executions with seeded inputs):
    /// every descriptor, doorbell, semaphore and event operation, with symbolic addresses.
    /// Prints it, or compares it with a snapshot (exit 1 on a difference).
    Conform {
        /// The NEFF file.
        file: PathBuf,
        /// The device to record on [default: $NRT_EMU_BACKEND, else sim].
        #[arg(long, value_parser = backend_arg())]
        backend: Option<Backend>,
        /// Run on this generation instead of the one the NEFF names.
        #[arg(long, value_enum)]
        target: Option<TargetArg>,
        /// A snapshot document to compare the trace with (or to write, with --update).
        #[arg(long)]
        snapshot: Option<PathBuf>,
        /// Write the trace to --snapshot instead of comparing.
        #[arg(long, requires = "snapshot")]
        update: bool,
        /// Seed of the generated inputs (hex with 0x, or decimal).
        #[arg(long, default_value = "0x5eed0001", value_parser = parse_seed)]
        seed: u64,
    },
    /// Install the drop-in libnrt (libnrt.so.1, the libnrt.so link and the nrt/ndl headers) the
    /// way the aws-neuronx-runtime-lib package lays it out, from the build this binary is part
    /// of (`cargo build --release --workspace`).
    Install(install::InstallArgs),
    /// List the emulated Neuron devices as AWS's neuron-ls does: its table, or with --json the
    /// JSON of `neuron-ls -j` (also installed as bin/neuron-ls by `install --tools`).
    Ls(ls::LsArgs),
    /// Name the register or on-chip memory a device address falls in.
    Mmio {
        /// The address (hex with 0x, or decimal).
        addr: String,
        /// The generation.
        #[arg(long, value_enum, default_value = "trn1")]
        target: TargetArg,
    },
}

/// `--version`: nrt-emu's version and the libnrt API level its library implements.
pub(crate) fn version_line() -> &'static str {
    static V: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    V.get_or_init(|| {
        format!(
            "{} (libnrt API {})",
            env!("CARGO_PKG_VERSION"),
            nrt_emu::hal::version::nrt_api_version_string()
        )
    })
}

fn main() -> ExitCode {
    // Output piped into `head` and the like ends the process quietly when the reader goes away,
    // as command-line tools do, instead of failing a `print!`.
    // SAFETY: restoring SIGPIPE's default disposition before any thread exists has no other
    // effect on this process.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    if let Some(code) = ls::run_as_neuron_ls() {
        return code;
    }
    let cli = Cli::parse();
    if let Command::Conform {
        file,
        backend,
        target,
        snapshot,
        update,
        seed,
    } = cli.command
    {
        let backend = match Backend::from_flag_or_env(backend, &|v| std::env::var(v).ok()) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("nrt-emu conform: {}", e.message);
                return ExitCode::from(2);
            }
        };
        let args = conform::ConformArgs {
            file,
            backend,
            target: target.map(Target::from),
            snapshot,
            update,
            seed,
        };
        return match conform::conform(&args, &mut std::io::stdout().lock()) {
            Ok(outcome) => outcome.exit_code(),
            Err(msg) => {
                eprintln!("nrt-emu conform: {msg}");
                ExitCode::from(2)
            }
        };
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("nrt-emu: {msg}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<(), String> {
    match cli.command {
        Command::Run(args) => run::command(args).map_err(|e| e.to_string()),
        Command::Profile(args) => profile::command(args).map_err(|e| e.to_string()),
        Command::Target { target, json } => {
            let t = Target::from(target);
            if json {
                println!("{}", target_json(t));
            } else {
                print!("{}", target_text(t));
            }
            Ok(())
        }
        Command::Install(args) => install::command(&args),
        Command::Ls(args) => ls::command(&args),
        Command::Disasm { file } => {
            let bytes = read_input(&file)?;
            if nrt_emu::runtime::neff::looks_like_neff(&bytes) {
                let text =
                    inspect::disasm_neff(&bytes).map_err(|e| format!("{}: {e}", file.display()))?;
                print!("{text}");
                return Ok(());
            }
            if bytes.len() % isa::RECORD_SIZE != 0 {
                return Err(format!(
                    "{}: {} bytes is not a whole number of {}-byte instruction records",
                    file.display(),
                    bytes.len(),
                    isa::RECORD_SIZE
                ));
            }
            print!("{}", isa::disassemble(&bytes));
            Ok(())
        }
        Command::Inspect { file, json, target } => {
            let bytes = read_input(&file)?;
            let v = inspect::inspect(&bytes, target.map(Target::from))
                .map_err(|e| format!("{}: {e}", file.display()))?;
            if json {
                println!("{v}");
            } else {
                print!("{}", inspect::render(&v));
            }
            Ok(())
        }
        Command::Conform { .. } => unreachable!("handled in main"),
        Command::Mmio { addr, target } => {
            let raw = parse_u64(&addr).ok_or_else(|| format!("not an address: {addr}"))?;
            let t = Target::from(target);
            let a = DeviceAddr::new(raw);
            let what = match t.decode_mmio(a) {
                Some(reg) => reg.to_string(),
                None => match (t.hbm_channel_at(a), t.is_host_addr(a)) {
                    (Some(ch), _) => format!(
                        "hbm[ch{ch}+{:#x}]",
                        raw - t.spec().hbm[ch as usize].base.raw()
                    ),
                    (None, true) => format!("host[+{:#x}]", raw - t.spec().host_window_base.raw()),
                    (None, false) => return Err(format!("{a} is not mapped on {t}")),
                },
            };
            println!("{what}");
            Ok(())
        }
    }
}

/// A file given on the command line, read through the runtime's bounded reader (regular files
/// under `NRT_EMU_MAX_NEFF_FILE_BYTES` only).
pub(crate) fn read_input(path: &std::path::Path) -> Result<Vec<u8>, String> {
    let max = nrt_emu::runtime::config::RuntimeConfig::from_env().max_neff_file;
    nrt_emu::runtime::neff::read_file(path, max).map_err(|e| e.to_string())
}

fn parse_seed(s: &str) -> Result<u64, String> {
    parse_u64(s).ok_or_else(|| format!("not a number: {s}"))
}

fn parse_u64(s: &str) -> Option<u64> {
    let s = s.replace('_', "");
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

fn target_text(t: Target) -> String {
    use std::fmt::Write;
    let s = t.spec();
    let mut o = String::new();
    let nc0 = NcIndex(0);
    let _ = writeln!(
        o,
        "{} ({}, NEFF target `{}`, driver arch v{})",
        s.name, s.core_version, s.neff_target, s.arch
    );
    let _ = writeln!(
        o,
        "cores: {}  dma engines/core: {}  queues/engine: {}",
        s.nc_count, s.dma_engines_per_core, s.queues_per_engine
    );
    let _ = writeln!(
        o,
        "semaphores/core: {}  events/core: {}",
        s.semaphores_per_core, s.events_per_core
    );
    for (i, ch) in s.hbm.iter().enumerate() {
        let _ = writeln!(o, "hbm ch{i}: base {}  size {} GiB", ch.base, ch.size >> 30);
    }
    let _ = writeln!(
        o,
        "host window: {} ({} GiB)",
        s.host_window_base,
        s.host_window_size >> 30
    );
    let _ = writeln!(
        o,
        "sbuf: {} partitions x {} KiB (DMA stride {} KiB)",
        s.sbuf.partitions,
        s.sbuf.partition_bytes >> 10,
        s.sbuf.partition_stride >> 10
    );
    let _ = writeln!(
        o,
        "psum: {} partitions x {} KiB ({} banks x {} KiB)",
        s.psum.partitions,
        s.psum.partition_bytes >> 10,
        s.psum.banks,
        s.psum.bank_bytes >> 10
    );
    let c = s.clocks;
    let _ = writeln!(
        o,
        "clocks MHz: pe {} act {} pool {} dve {} sp {}",
        c.pe / 1_000_000,
        c.act / 1_000_000,
        c.pool / 1_000_000,
        c.dve / 1_000_000,
        c.sp / 1_000_000
    );
    let _ = writeln!(
        o,
        "bandwidth: dma engine {:.1} GiB/s, hbm {:.0} GB/s per device",
        s.dma_engine_bandwidth as f64 / (1u64 << 30) as f64,
        s.hbm_bandwidth as f64 / 1e9
    );
    let _ = writeln!(o, "nc0 mmio:");
    for (name, addr) in [
        ("tpb base", t.tpb_base(nc0)),
        ("sbuf p0", t.sbuf_addr(nc0, 0, 0)),
        ("psum p0", t.psum_addr(nc0, 0, 0)),
        ("sequencer", t.seq_addr(nc0, 0)),
        ("event 0", t.event_addr(nc0, nrt_emu::hal::EventId(0))),
        (
            "semaphore 0 (read)",
            t.semaphore_addr(
                nc0,
                nrt_emu::hal::SemaphoreId(0),
                nrt_emu::hal::target::SemWindow::Read,
            ),
        ),
        ("dma e0 regs", t.dma_engine_base(nc0, DmaEngine(0))),
        (
            "tail_inc e0.q0.tx",
            t.tail_inc_addr(QueueRef::new(nc0, DmaEngine(0), QueueId(0)), Direction::Tx),
        ),
        (
            "tail_inc e0.q0.rx",
            t.tail_inc_addr(QueueRef::new(nc0, DmaEngine(0), QueueId(0)), Direction::Rx),
        ),
    ] {
        if let Some(a) = addr {
            let reg = t
                .decode_mmio(a)
                .map(|r: MmioReg| r.to_string())
                .unwrap_or_default();
            let _ = writeln!(o, "  {name:<20} {a:<18} {reg}");
        }
    }
    o
}

fn target_json(t: Target) -> serde_json::Value {
    let s = t.spec();
    let c = s.clocks;
    serde_json::json!({
        "name": s.name,
        "neff_target": s.neff_target,
        "core_version": s.core_version,
        "arch": s.arch,
        "nc_count": s.nc_count,
        "dma_engines_per_core": s.dma_engines_per_core,
        "queues_per_engine": s.queues_per_engine,
        "semaphores_per_core": s.semaphores_per_core,
        "events_per_core": s.events_per_core,
        "hbm": s.hbm.iter().map(|ch| serde_json::json!({"base": ch.base.raw(), "size": ch.size})).collect::<Vec<_>>(),
        "host_window": {"base": s.host_window_base.raw(), "size": s.host_window_size},
        "sbuf": {"partitions": s.sbuf.partitions, "partition_bytes": s.sbuf.partition_bytes, "partition_stride": s.sbuf.partition_stride},
        "psum": {"partitions": s.psum.partitions, "partition_bytes": s.psum.partition_bytes, "banks": s.psum.banks, "bank_bytes": s.psum.bank_bytes},
        "tpb_bases": s.tpb_bases,
        "clocks_hz": {"pe": c.pe, "act": c.act, "pool": c.pool, "dve": c.dve, "sp": c.sp},
        "dma_engine_bandwidth": s.dma_engine_bandwidth,
        "hbm_bandwidth": s.hbm_bandwidth,
        "abi_version_range": [s.abi_version_range.0, s.abi_version_range.1],
    })
}
