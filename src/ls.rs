//! `nrt-emu ls` — and the same binary run as `neuron-ls` (`nrt-emu install --tools` links it so):
//! the emulated Neuron devices as AWS's `neuron-ls` shows them (docs/driver.md §13.4): its
//! table, `--wide` / `--show-all-procs` with the processes using each device, `--topology`,
//! and `-j` / `--json` / `--json-output` with the JSON of `neuron-ls -j` (`neuron_device`,
//! `bdf`, `cpu_affinity`, `numa_node`, `connected_to`, `nc_count`, `logical_neuroncore_config`
//! on trn2, `memory_size`, `neuroncore_ids`, `neuron_processes`).
//!
//! Which devices:
//!
//! * in a process under the device shim, the ones the shim serves, read back as `neuron-ls`
//!   reads a device host: the `/dev/neuron<N>` nodes listed in `/dev`, each one's
//!   `core_count`, `info/architecture/device_name` and `connected_devices` from sysfs;
//! * otherwise the devices nrt-emu emulates for this environment: `NRT_EMU_SHIM_DEVICES`
//!   (default 1) devices of the generation `--target`, else `NRT_EMU_SHIM_TARGET`, else
//!   `NRT_EMU_TARGET`, else `NEURON_PLATFORM_TARGET_OVERRIDE`, else trn2 (libnrt's default).
//!
//! Cores are logical cores on trn2 (`NEURON_LOGICAL_NC_CONFIG`, else
//! `NEURON_RT_VIRTUAL_CORE_SIZE`, else 2 physical cores each), physical on trn1. The processes
//! are those that hold a device of this set open under the shim, from the counters every such
//! process publishes ([`nrt_kabi::registry`]); as in `neuron-ls`, only those running a Neuron
//! runtime (a libnrt is loaded: its version is known) unless `--show-all-procs`.

use std::io::Write;
use std::process::ExitCode;

use clap::{Args, Parser};
use nrt_emu::hal::Target;
use nrt_kabi::registry::Registry;
use nrt_kabi::sysfs::{self, Layout};
use serde::Serialize;

/// The options of `neuron-ls`.
#[derive(Debug, Args)]
pub struct LsArgs {
    /// Print the JSON `neuron-ls -j` prints.
    #[arg(short = 'j', long = "json", visible_alias = "json-output")]
    pub json: bool,
    /// Show the processes using each device, with the whole command line.
    #[arg(short, long)]
    pub wide: bool,
    /// Show every process using a device, not only those running a Neuron runtime.
    #[arg(short = 'a', long)]
    pub show_all_procs: bool,
    /// Show how the devices are connected.
    #[arg(short, long)]
    pub topology: bool,
    /// The generation of the emulated devices (not under the device shim, which says).
    #[arg(long, value_parser = parse_target)]
    pub target: Option<Target>,
}

/// `neuron-ls` as its own command (the binary run under that name).
#[derive(Debug, Parser)]
#[command(
    name = "neuron-ls",
    version = crate::version_line(),
    about = "List the Neuron devices (nrt-emu's emulated devices, shown as AWS's neuron-ls shows them)"
)]
struct NeuronLs {
    #[command(flatten)]
    args: LsArgs,
}

fn parse_target(s: &str) -> Result<Target, String> {
    Target::from_name(&s.to_ascii_lowercase())
        .ok_or_else(|| format!("{s:?} is not a target (trn1 or trn2)"))
}

/// When this binary runs as `neuron-ls` (its file name, as `install --tools` links it): runs
/// it and returns the exit code.
pub fn run_as_neuron_ls() -> Option<ExitCode> {
    let argv0 = std::env::args_os().next()?;
    let name = std::path::Path::new(&argv0).file_name()?;
    if name != "neuron-ls" {
        return None;
    }
    let cli = NeuronLs::parse();
    Some(match command(&cli.args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("neuron-ls: {msg}");
            ExitCode::FAILURE
        }
    })
}

/// One process using a device.
#[derive(Debug, Clone, Serialize)]
pub struct Process {
    /// Process id.
    pub pid: u32,
    /// Its command line.
    pub command: String,
    /// The Neuron runtime version it runs (`NA` when it runs none).
    pub neuron_runtime_version: String,
}

/// One device as `neuron-ls -j` shows it (field order as there).
#[derive(Debug, Clone, Serialize)]
pub struct Device {
    /// Index.
    pub neuron_device: u32,
    /// PCI address.
    pub bdf: String,
    /// CPUs of the device's NUMA node.
    pub cpu_affinity: String,
    /// NUMA node (`-1`: none).
    pub numa_node: String,
    /// Connected devices (`null` for none).
    pub connected_to: Option<Vec<u32>>,
    /// NeuronCores (logical on trn2).
    pub nc_count: u32,
    /// Physical cores per logical core (trn2 only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub logical_neuroncore_config: Option<u32>,
    /// Device memory in bytes.
    pub memory_size: u64,
    /// The (logical) core ids `NEURON_RT_VISIBLE_CORES` uses for this device's cores.
    pub neuroncore_ids: Vec<u32>,
    /// The processes using it.
    pub neuron_processes: Vec<Process>,
}

/// The devices and how they were found.
#[derive(Debug, Clone)]
pub struct Inventory {
    /// The generation.
    pub target: Target,
    /// Physical cores per logical core shown (trn2), or `None` (trn1).
    pub lnc: Option<u32>,
    /// The devices.
    pub devices: Vec<Device>,
    /// Read back from the device shim's `/dev` and sysfs.
    pub from_shim: bool,
}

/// Whether this process runs under the device shim (its entry points are loaded).
fn under_shim() -> bool {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name only looks a symbol up.
    !unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"nrt_emu_shim_openat".as_ptr()) }.is_null()
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

fn env_target(name: &str) -> Result<Option<Target>, String> {
    env(name)
        .map(|v| parse_target(v.trim()).map_err(|e| format!("{name}: {e}")))
        .transpose()
}

/// The generation and device count the environment names when not under the shim.
fn configured(args: &LsArgs) -> Result<(Target, u32), String> {
    let mut target = args.target;
    for var in [
        "NRT_EMU_SHIM_TARGET",
        "NRT_EMU_TARGET",
        "NEURON_PLATFORM_TARGET_OVERRIDE",
    ] {
        if target.is_none() {
            target = env_target(var)?;
        }
    }
    let count = match env("NRT_EMU_SHIM_DEVICES") {
        None => 1,
        Some(v) => v
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|n| (1..=16).contains(n))
            .ok_or_else(|| format!("NRT_EMU_SHIM_DEVICES={v:?} is not a device count in 1..=16"))?,
    };
    Ok((target.unwrap_or(Target::Trn2), count))
}

/// Physical cores per logical core on trn2 (`None` on trn1).
fn logical_config(target: Target) -> Result<Option<u32>, String> {
    if target == Target::Trn1 {
        return Ok(None);
    }
    for var in ["NEURON_LOGICAL_NC_CONFIG", "NEURON_RT_VIRTUAL_CORE_SIZE"] {
        if let Some(v) = env(var) {
            return match v.trim() {
                "1" => Ok(Some(1)),
                "2" => Ok(Some(2)),
                _ => Err(format!("{var}={v:?} is not 1 or 2")),
            };
        }
    }
    Ok(Some(2))
}

fn read_sysfs(dev: u32, rel: &str) -> Result<String, String> {
    let p = format!("{}/neuron{dev}/{rel}", sysfs::DEVICES_DIR);
    std::fs::read_to_string(&p).map_err(|e| format!("cannot read {p}: {e}"))
}

/// What `neuron-ls` learns of one device before the processes: physical cores and the
/// connected devices.
type Facts = (u32, Vec<u32>);

/// The devices the shim serves in this process, read as `neuron-ls` reads a host: the nodes in
/// `/dev`, then sysfs.
fn from_shim() -> Result<(Target, Vec<Facts>), String> {
    let mut nodes: Vec<u32> = std::fs::read_dir("/dev")
        .map_err(|e| format!("cannot list /dev: {e}"))?
        .flatten()
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("neuron")?
                .parse::<u32>()
                .ok()
        })
        .collect();
    nodes.sort_unstable();
    let mut target = None;
    let mut out = Vec::new();
    for d in nodes {
        let name = read_sysfs(d, "info/architecture/device_name")?;
        let t = match name.trim() {
            "Trainium1" => Target::Trn1,
            "Trainium2" => Target::Trn2,
            other => return Err(format!("neuron{d}: device {other:?} is not emulated")),
        };
        if target.is_some_and(|x| x != t) {
            return Err(format!("neuron{d} is a {t}, the others are not"));
        }
        target = Some(t);
        let cores: u32 = read_sysfs(d, "core_count")?
            .trim()
            .parse()
            .map_err(|_| format!("neuron{d}: bad core_count"))?;
        let connected = read_sysfs(d, "connected_devices")?
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect();
        out.push((cores, connected));
    }
    Ok((target.unwrap_or(Target::Trn2), out))
}

fn command_line(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| {
            b.split(|&c| c == 0)
                .filter(|a| !a.is_empty())
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default()
}

/// The devices `args` and the environment name (module docs).
pub fn inventory(args: &LsArgs) -> Result<Inventory, String> {
    let shim = under_shim();
    let (target, facts) = if shim {
        let (t, facts) = from_shim()?;
        if let Some(want) = args.target.filter(|&w| w != t && !facts.is_empty()) {
            return Err(format!(
                "the device shim serves {t} devices (NRT_EMU_SHIM_TARGET), not {want}"
            ));
        }
        (t, facts)
    } else {
        let (t, n) = configured(args)?;
        let facts = (0..n)
            .map(|i| (t.spec().nc_count, sysfs::connected_devices(n, i)))
            .collect();
        (t, facts)
    };
    let lnc = logical_config(target)?;
    let count = facts.len() as u32;
    let publishers = Registry::from_env(Layout {
        target,
        devices: count,
    })
    .map(|r| r.publishers())
    .unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let memory: u64 = target.spec().hbm.iter().map(|c| c.size).sum();
    let devices = facts
        .into_iter()
        .enumerate()
        .map(|(i, (physical, connected))| {
            let i = i as u32;
            let nc = physical / lnc.unwrap_or(1);
            let neuron_processes = publishers
                .iter()
                .filter(|p| p.devices.get(i as usize).is_some_and(|d| d.attached() > 0))
                .filter(|p| args.show_all_procs || p.runtime_version.is_some())
                .map(|p| Process {
                    pid: p.pid,
                    command: command_line(p.pid),
                    neuron_runtime_version: p
                        .runtime_version
                        .clone()
                        .unwrap_or_else(|| "NA".into()),
                })
                .collect();
            Device {
                neuron_device: i,
                bdf: sysfs::pci_bdf(i),
                cpu_affinity: format!("0-{}", cpus - 1),
                numa_node: "-1".into(),
                connected_to: (!connected.is_empty()).then_some(connected),
                nc_count: nc,
                logical_neuroncore_config: lnc,
                memory_size: memory,
                neuroncore_ids: (i * nc..(i + 1) * nc).collect(),
                neuron_processes,
            }
        })
        .collect();
    Ok(Inventory {
        target,
        lnc,
        devices,
        from_shim: shim,
    })
}

/// `neuron-ls -j`: the devices as a JSON array, four-space indented, without a trailing
/// newline (as the tool prints it).
pub fn json(inv: &Inventory) -> String {
    let mut out = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut out, fmt);
    inv.devices
        .serialize(&mut ser)
        .expect("plain data serialises");
    String::from_utf8(out).expect("serde_json writes UTF-8")
}

/// A table in `neuron-ls`'s style: a border, centred two-line headers, left-aligned cells, and
/// a border after each group of rows.
struct Table {
    heads: Vec<[&'static str; 2]>,
    groups: Vec<Vec<Vec<String>>>,
}

impl Table {
    fn render(&self) -> String {
        let widths: Vec<usize> = (0..self.heads.len())
            .map(|c| {
                let head = self.heads[c].iter().map(|h| h.chars().count()).max();
                let cells = self
                    .groups
                    .iter()
                    .flatten()
                    .map(|r| r[c].chars().count())
                    .max();
                head.max(cells).unwrap_or(0) + 2
            })
            .collect();
        let border: String = widths.iter().fold("+".to_string(), |mut s, w| {
            s.push_str(&"-".repeat(*w));
            s.push('+');
            s
        });
        let mut o = format!("{border}\n");
        for line in 0..2 {
            o.push('|');
            for (h, w) in self.heads.iter().zip(&widths) {
                let t = h[line];
                let n = t.chars().count();
                let left = (w - n) / 2;
                o.push_str(&format!(
                    "{}{t}{}|",
                    " ".repeat(left),
                    " ".repeat(w - n - left)
                ));
            }
            o.push('\n');
        }
        o.push_str(&border);
        o.push('\n');
        // A border after every group once one has several rows, else only at the end.
        let separate = self.groups.iter().any(|g| g.len() > 1);
        for g in &self.groups {
            for row in g {
                o.push('|');
                for (cell, w) in row.iter().zip(&widths) {
                    o.push_str(&format!(" {cell:<0$}|", w - 1));
                }
                o.push('\n');
            }
            if separate {
                o.push_str(&border);
                o.push('\n');
            }
        }
        if !separate {
            o.push_str(&border);
            o.push('\n');
        }
        o
    }
}

fn gb(bytes: u64) -> String {
    format!("{} GB", bytes >> 30)
}

fn list(v: &Option<Vec<u32>>) -> String {
    v.as_ref()
        .map(|v| v.iter().map(u32::to_string).collect::<Vec<_>>().join(", "))
        .unwrap_or_default()
}

fn short_bdf(bdf: &str) -> &str {
    bdf.strip_prefix("0000:").unwrap_or(bdf)
}

fn ids(d: &Device) -> String {
    match (d.neuroncore_ids.first(), d.neuroncore_ids.last()) {
        (Some(a), Some(b)) if a != b => format!("{a}-{b}"),
        (Some(a), _) => a.to_string(),
        _ => String::new(),
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let keep: String = s.chars().take(max - 3).collect();
        format!("{keep}...")
    }
}

/// The header lines: what kind of host this is (ours: the emulator names itself).
fn header(inv: &Inventory) -> String {
    let mut o = format!(
        "instance-type: {} (emulated by nrt-emu{})\ninstance-id: none\n",
        inv.target,
        if inv.from_shim { ", device shim" } else { "" }
    );
    if let Some(l) = inv.lnc {
        o.push_str(&format!("logical-neuroncore-config: {l}\n"));
    }
    o
}

/// The columns every table of devices starts with (neuron-ls's).
const DEVICE_HEADS: [[&str; 2]; 5] = [
    ["NEURON", "DEVICE"],
    ["NEURON", "CORES"],
    ["NEURON", "MEMORY"],
    ["CONNECTED", "DEVICES"],
    ["PCI", "BDF"],
];

/// `neuron-ls`'s table (default), with the processes (`--wide`, `--show-all-procs`), or with
/// the topology (`--topology`).
pub fn text(inv: &Inventory, args: &LsArgs) -> String {
    let mut o = header(inv);
    if args.wide || args.show_all_procs {
        let width = if args.wide { 80 } else { 40 };
        let groups = inv
            .devices
            .iter()
            .map(|d| {
                let lead = vec![
                    d.neuron_device.to_string(),
                    d.nc_count.to_string(),
                    gb(d.memory_size),
                    list(&d.connected_to),
                    short_bdf(&d.bdf).to_string(),
                ];
                if d.neuron_processes.is_empty() {
                    let mut r = lead;
                    r.extend(["NA".to_string(), "NA".into(), "NA".into()]);
                    return vec![r];
                }
                d.neuron_processes
                    .iter()
                    .enumerate()
                    .map(|(k, p)| {
                        let mut r = if k == 0 {
                            lead.clone()
                        } else {
                            vec![String::new(); 5]
                        };
                        r.extend([
                            p.pid.to_string(),
                            truncate(&p.command, width),
                            p.neuron_runtime_version.clone(),
                        ]);
                        r
                    })
                    .collect()
            })
            .collect();
        let t = Table {
            heads: [
                DEVICE_HEADS.as_slice(),
                &[["PID", ""], ["COMMAND", ""], ["RUNTIME", "VERSION"]],
            ]
            .concat(),
            groups,
        };
        o.push_str(&t.render());
        return o;
    }
    if args.topology {
        let t = Table {
            heads: DEVICE_HEADS.to_vec(),
            groups: inv
                .devices
                .iter()
                .map(|d| {
                    vec![vec![
                        d.neuron_device.to_string(),
                        d.nc_count.to_string(),
                        gb(d.memory_size),
                        list(&d.connected_to),
                        short_bdf(&d.bdf).to_string(),
                    ]]
                })
                .collect(),
        };
        o.push_str(&t.render());
        o.push_str("\n\nNeuron Device Topology\n");
        let n = inv.devices.len();
        let ring: Vec<String> = (0..n).map(|i| format!("[{i:^3}]")).collect();
        let line = ring.join("◄––►");
        if n > 2 {
            o.push_str(&format!(
                "*––►{line}◄––*\n\nLegend:\n\n        *––► = Wrap-around link\n"
            ));
        } else {
            o.push_str(&format!("{line}\n"));
        }
        return o;
    }
    let t = Table {
        heads: vec![
            ["NEURON", "DEVICE"],
            ["NEURON", "CORES"],
            ["NEURON", "CORE IDS"],
            ["NEURON", "MEMORY"],
            ["CONNECTED", "DEVICES"],
            ["PCI", "BDF"],
            ["CPU", "AFFINITY"],
            ["NUMA", "NODE"],
        ],
        groups: vec![inv
            .devices
            .iter()
            .map(|d| {
                vec![
                    d.neuron_device.to_string(),
                    d.nc_count.to_string(),
                    ids(d),
                    gb(d.memory_size),
                    list(&d.connected_to),
                    d.bdf.clone(),
                    d.cpu_affinity.clone(),
                    d.numa_node.clone(),
                ]
            })
            .collect()],
    };
    o.push_str(&t.render());
    o
}

/// Runs `nrt-emu ls` / `neuron-ls`.
pub fn command(args: &LsArgs) -> Result<(), String> {
    let inv = inventory(args)?;
    let out = if args.json {
        json(&inv)
    } else {
        text(&inv, args)
    };
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| format!("cannot write the listing: {e}"))
}
