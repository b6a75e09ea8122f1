//! The driver's sysfs tree for a set of emulated devices (docs/driver.md §13.2): which paths
//! exist under `/sys/devices/virtual/neuron_device/`, `/sys/class/neuron_device/` and
//! `/sys/module/neuron/`, whether each is a directory, an attribute file or a symbolic link, and
//! what an attribute reads — fixed facts of the device (core count, architecture, device name,
//! connected devices, driver version, and — ours, the driver has none — the libnrt API level of
//! nrt-emu's runtime) or a live counter ([`crate::counters`]).
//!
//! Nothing here touches the file system: the device shim answers `stat`, `open`, `readdir` and
//! `readlink` of these paths from [`Layout::resolve`] and [`Layout::render`], and the
//! `nrt-emu ls` command reads the same facts ([`connected_devices`], [`pci_bdf`]).
//!
//! The layout is that of the driver source of docs/driver.md §1 (`neuron_cdev.c`,
//! `neuron_sysfs_metrics.c`, `v2/`, `v3/neuron_dhal_*.c`), as the Neuron sysfs user guide
//! describes it; the per-file formats are the driver's `show` functions' (`core_count` has no
//! trailing newline, as there).

use nrt_hal::Target;

use crate::counters::{
    CoreCounter, DeviceSnapshot, DEVICE_MEM_CATEGORIES, HOST_MEM_CATEGORIES, OTHER_INFO, STATUS,
};

/// The devices' directory (`device_create` with no parent puts them under `virtual/`).
pub const DEVICES_DIR: &str = "/sys/devices/virtual/neuron_device";
/// The class directory: one symbolic link per device.
pub const CLASS_DIR: &str = "/sys/class/neuron_device";
/// The module's directory (its `version` is the driver release).
pub const MODULE_DIR: &str = "/sys/module/neuron";

/// Directories that exist on any Linux host whose listings gain one entry of this tree:
/// (directory, entry).
pub const AUGMENTED: [(&str, &str); 3] = [
    ("/sys/devices/virtual", "neuron_device"),
    ("/sys/class", "neuron_device"),
    ("/sys/module", "neuron"),
];

/// Major number of the emulated device nodes (the driver's is assigned when it loads; this one
/// is from the range Linux reserves for local and experimental use).
pub const NODE_MAJOR: u32 = 240;

/// `neuronN/stats/hardware/`'s ECC counters.
const HARDWARE: [&str; 3] = [
    "mem_ecc_repairable_uncorrected",
    "mem_ecc_uncorrected",
    "sram_ecc_uncorrected",
];

/// What a directory entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A directory.
    Dir,
    /// An attribute file.
    File,
    /// A symbolic link.
    Link,
}

/// Which of a counter's values a file shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// `total`.
    Total,
    /// `present`.
    Present,
    /// `peak`.
    Peak,
}

impl Field {
    fn parse(name: &str) -> Option<Field> {
        match name {
            "total" => Some(Field::Total),
            "present" => Some(Field::Present),
            "peak" => Some(Field::Peak),
            _ => None,
        }
    }
}

/// An attribute file's content source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attr {
    /// Fixed text.
    Text(String),
    /// A counter of core `core` of device `device`.
    Core {
        /// Device index.
        device: u32,
        /// Core of the device.
        core: u32,
        /// Which counter.
        counter: CoreCounter,
        /// Which value.
        field: Field,
    },
    /// A host-memory category of device `device` (index into [`HOST_MEM_CATEGORIES`]).
    Host {
        /// Device index.
        device: u32,
        /// Category.
        category: usize,
        /// Which value.
        field: Field,
    },
}

impl Attr {
    /// The device whose counters the file shows, if it shows a counter.
    pub fn device(&self) -> Option<u32> {
        match self {
            Attr::Text(_) => None,
            Attr::Core { device, .. } | Attr::Host { device, .. } => Some(*device),
        }
    }
}

/// A path of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A directory and its entries (without `.` and `..`).
    Dir(Vec<(String, Kind)>),
    /// An attribute file.
    File(Attr),
    /// A symbolic link and its target, as `readlink` returns it (relative, as sysfs makes them).
    Link(String),
}

/// Why a path does not resolve (an `errno`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lookup {
    /// No such entry (`ENOENT`).
    Missing,
    /// A component before the last is a file (`ENOTDIR`).
    NotDir,
    /// Too many symbolic links (`ELOOP`).
    Loop,
}

/// The tree of `devices` emulated devices of generation `target`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The generation.
    pub target: Target,
    /// Number of devices (`/dev/neuron0` … `/dev/neuron<devices-1>`).
    pub devices: u32,
}

/// The devices device `index` of `devices` is connected to, as `connected_devices` lists them
/// and `neuron-ls` shows them: **ours** — the emulated devices form a ring (each one linked to
/// the one before and the one after it), a lone device is connected to none.
pub fn connected_devices(devices: u32, index: u32) -> Vec<u32> {
    if devices < 2 || index >= devices {
        return Vec::new();
    }
    let prev = (index + devices - 1) % devices;
    let next = (index + 1) % devices;
    if prev == next {
        vec![next]
    } else {
        vec![prev, next]
    }
}

/// The PCI address `neuron-ls` shows for device `index` (**ours**: an emulated device has
/// none; one bus per device, as on trn2 hosts).
pub fn pci_bdf(index: u32) -> String {
    format!("0000:{:02x}:00.0", 0x10 + index)
}

/// `info/serial_number` of device `index` (**ours**: "NRTEMU" and the index, in the driver's
/// 16-hex-digit format).
pub fn serial_number(index: u32) -> u64 {
    0x4E52_5445_4D55_0000 | u64::from(index)
}

/// The driver's name suffixes for a generation: (`arch_type` version, `instance_type`,
/// `device_name`) — `v2/`, `v3/neuron_dhal_*.c`.
pub fn arch_names(target: Target) -> (&'static str, &'static str, &'static str) {
    match target {
        Target::Trn1 => ("v2", "Trn1", "Trainium1"),
        Target::Trn2 => ("v3", "Trn2", "Trainium2"),
    }
}

/// `path` split into components, `.` and empty ones dropped and `..` applied (lexically: the
/// only links in the tree are resolved by [`Layout::resolve`]). `None` for a relative path.
pub fn components(path: &str) -> Option<Vec<&str>> {
    if !path.starts_with('/') {
        return None;
    }
    let mut out: Vec<&str> = Vec::new();
    for c in path.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    Some(out)
}

fn join(parts: &[&str]) -> String {
    let mut s = String::new();
    for p in parts {
        s.push('/');
        s.push_str(p);
    }
    if s.is_empty() {
        s.push('/');
    }
    s
}

fn dir(entries: impl IntoIterator<Item = (String, Kind)>) -> Option<Node> {
    Some(Node::Dir(entries.into_iter().collect()))
}

fn files<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<Node> {
    dir(names.into_iter().map(|n| (n.to_string(), Kind::File)))
}

fn subdirs<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<Node> {
    dir(names.into_iter().map(|n| (n.to_string(), Kind::Dir)))
}

fn text(s: impl Into<String>) -> Option<Node> {
    Some(Node::File(Attr::Text(s.into())))
}

/// `neuron<N>` → N (no leading zeros), below `limit`.
fn numbered(name: &str, prefix: &str, limit: u32) -> Option<u32> {
    let n = name.strip_prefix(prefix)?;
    if n.is_empty() || (n.len() > 1 && n.starts_with('0')) || !n.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    n.parse().ok().filter(|&i| i < limit)
}

impl Layout {
    /// Cores per device (`core_count`).
    pub fn cores(&self) -> u32 {
        self.target.spec().nc_count
    }

    /// Whether the normalised absolute `path` is this tree's: one of its three roots or below
    /// one (every such path is answered from here, existing or not).
    pub fn owns(path: &str) -> bool {
        [DEVICES_DIR, CLASS_DIR, MODULE_DIR].iter().any(|root| {
            path.strip_prefix(root)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    }

    /// The node at `path` (absolute; `.`, `..` and repeated slashes allowed), following
    /// symbolic links before the last component, and the last one too when `follow` — as
    /// `stat` (follow) and `lstat` (not) do. Returns the node and its canonical path.
    pub fn resolve(&self, path: &str, follow: bool) -> Result<(String, Node), Lookup> {
        let mut parts: Vec<String> = components(path)
            .ok_or(Lookup::Missing)?
            .into_iter()
            .map(str::to_string)
            .collect();
        let mut links = 0;
        'restart: loop {
            for i in 1..=parts.len() {
                let prefix: Vec<&str> = parts[..i].iter().map(String::as_str).collect();
                let last = i == parts.len();
                let Some(node) = self.node(&prefix) else {
                    // Outside the tree (a parent like `/sys`) or missing.
                    if Self::owns(&join(&prefix)) || last {
                        return Err(Lookup::Missing);
                    }
                    continue;
                };
                match node {
                    Node::Link(target) if !last || follow => {
                        links += 1;
                        if links > 8 {
                            return Err(Lookup::Loop);
                        }
                        let mut base = join(&prefix[..i - 1]);
                        base.push('/');
                        base.push_str(&target);
                        let mut resolved: Vec<String> = components(&base)
                            .unwrap_or_default()
                            .into_iter()
                            .map(str::to_string)
                            .collect();
                        resolved.extend(parts[i..].iter().cloned());
                        parts = resolved;
                        continue 'restart;
                    }
                    Node::File(_) if !last => return Err(Lookup::NotDir),
                    node if last => {
                        let p: Vec<&str> = parts.iter().map(String::as_str).collect();
                        return Ok((join(&p), node));
                    }
                    _ => {}
                }
            }
            return Err(Lookup::Missing);
        }
    }

    /// The node at canonical components `p` (no link followed), `None` if there is none or
    /// `p` is outside the tree.
    fn node(&self, p: &[&str]) -> Option<Node> {
        let n = self.devices;
        match p {
            ["sys", "devices", "virtual", "neuron_device"] => {
                dir((0..n).map(|i| (format!("neuron{i}"), Kind::Dir)))
            }
            ["sys", "class", "neuron_device"] => {
                dir((0..n).map(|i| (format!("neuron{i}"), Kind::Link)))
            }
            ["sys", "class", "neuron_device", name] => {
                let i = numbered(name, "neuron", n)?;
                Some(Node::Link(format!(
                    "../../devices/virtual/neuron_device/neuron{i}"
                )))
            }
            ["sys", "module", "neuron"] => files(["initstate", "version"]),
            ["sys", "module", "neuron", "version"] => {
                text(format!("{}\n", nrt_hal::version::DRIVER_VERSION))
            }
            ["sys", "module", "neuron", "initstate"] => text("live\n"),
            ["sys", "devices", "virtual", "neuron_device", name, rest @ ..] => {
                let i = numbered(name, "neuron", n)?;
                self.device_node(i, rest)
            }
            _ => None,
        }
    }

    /// The node at `rest` below `neuron<d>/`.
    fn device_node(&self, d: u32, rest: &[&str]) -> Option<Node> {
        let (ver, instance, device_name) = arch_names(self.target);
        let cores = self.cores();
        match rest {
            [] => {
                let mut e: Vec<(String, Kind)> =
                    ["connected_devices", "core_count", "dev", "reset", "uevent"]
                        .iter()
                        .map(|f| (f.to_string(), Kind::File))
                        .collect();
                e.push(("info".into(), Kind::Dir));
                e.extend((0..cores).map(|c| (format!("neuron_core{c}"), Kind::Dir)));
                e.push(("stats".into(), Kind::Dir));
                e.push(("subsystem".into(), Kind::Link));
                dir(e)
            }
            ["dev"] => text(format!("{NODE_MAJOR}:{d}\n")),
            ["uevent"] => text(format!(
                "MAJOR={NODE_MAJOR}\nMINOR={d}\nDEVNAME=neuron{d}\n"
            )),
            // device_state: 1 = READY.
            ["reset"] => text("1\n"),
            ["core_count"] => text(cores.to_string()),
            ["connected_devices"] => {
                let list: Vec<String> = connected_devices(self.devices, d)
                    .iter()
                    .map(u32::to_string)
                    .collect();
                text(format!("{}\n", list.join(", ")))
            }
            ["subsystem"] => Some(Node::Link("../../../../class/neuron_device".into())),
            ["info"] => dir([
                ("architecture".to_string(), Kind::Dir),
                ("notify_delay".to_string(), Kind::File),
                ("runtime_version".to_string(), Kind::File),
                ("serial_number".to_string(), Kind::File),
            ]),
            // Ours: the driver's tree has no runtime version; this is the libnrt API level of
            // the runtime nrt-emu provides for these devices (what its nrt_get_version says).
            ["info", "runtime_version"] => {
                text(format!("{}\n", nrt_hal::version::nrt_api_version_string()))
            }
            // Notifications off (-1), the driver's default.
            ["info", "notify_delay"] => text("-1\n"),
            ["info", "serial_number"] => text(format!("{:016x}\n", serial_number(d))),
            ["info", "architecture"] => files(["arch_type", "device_name", "instance_type"]),
            ["info", "architecture", "arch_type"] => text(format!("ND{ver}\n")),
            ["info", "architecture", "instance_type"] => text(format!("{instance}\n")),
            ["info", "architecture", "device_name"] => text(format!("{device_name}\n")),
            ["stats"] => subdirs(["hardware", "memory_usage", "power"]),
            ["stats", "hardware"] => files(HARDWARE),
            // No ECC event happens on the emulated device (an injected HBM fault is reported
            // through the execution's notification, not counted here).
            ["stats", "hardware", name] if HARDWARE.contains(name) => text("0\n"),
            ["stats", "power"] => files(["utilization"]),
            // No power sampling: the driver's "no samples" status (ours: timestamp and
            // percentages 0).
            ["stats", "power", "utilization"] => text("POWER_STATUS_NO_DATA,0,0.00,0.00,0.00\n"),
            ["stats", "memory_usage"] => subdirs(["host_mem"]),
            ["stats", "memory_usage", "host_mem"] => {
                subdirs(HOST_MEM_CATEGORIES.iter().map(|(n, _)| *n))
            }
            ["stats", "memory_usage", "host_mem", cat] => {
                HOST_MEM_CATEGORIES.iter().position(|(n, _)| n == cat)?;
                files(["peak", "present", "total"])
            }
            ["stats", "memory_usage", "host_mem", cat, field] => {
                let category = HOST_MEM_CATEGORIES.iter().position(|(n, _)| n == cat)?;
                Some(Node::File(Attr::Host {
                    device: d,
                    category,
                    field: Field::parse(field)?,
                }))
            }
            [core, rest @ ..] => {
                let c = numbered(core, "neuron_core", cores)?;
                self.core_node(d, c, ver, rest)
            }
        }
    }

    /// The node at `rest` below `neuron<d>/neuron_core<c>/`.
    fn core_node(&self, d: u32, c: u32, ver: &str, rest: &[&str]) -> Option<Node> {
        let counter = |counter: CoreCounter, field: &str| {
            Some(Node::File(Attr::Core {
                device: d,
                core: c,
                counter,
                field: Field::parse(field)?,
            }))
        };
        match rest {
            [] => subdirs(["info", "stats"]),
            ["info"] => subdirs(["architecture"]),
            ["info", "architecture"] => files(["arch_type"]),
            ["info", "architecture", "arch_type"] => text(format!("NC{ver}\n")),
            ["stats"] => subdirs(["memory_usage", "other_info", "status"]),
            ["stats", "status"] => subdirs(STATUS),
            ["stats", "status", name] => {
                CoreCounter::status(name)?;
                files(["present", "total"])
            }
            ["stats", "status", name, field] if *field != "peak" => {
                counter(CoreCounter::status(name)?, field)
            }
            ["stats", "other_info"] => subdirs(OTHER_INFO),
            ["stats", "other_info", name] => {
                CoreCounter::other(name)?;
                files(["present", "total"])
            }
            ["stats", "other_info", name, field] if *field != "peak" => {
                counter(CoreCounter::other(name)?, field)
            }
            ["stats", "memory_usage"] => subdirs(["device_mem", "host_mem"]),
            ["stats", "memory_usage", "host_mem"] => files(["peak", "present", "total"]),
            ["stats", "memory_usage", "host_mem", field] => counter(CoreCounter::HostMem, field),
            ["stats", "memory_usage", "device_mem"] => {
                let mut e: Vec<(String, Kind)> = DEVICE_MEM_CATEGORIES
                    .iter()
                    .map(|(n, _)| (n.to_string(), Kind::Dir))
                    .collect();
                e.extend(["peak", "present", "total"].map(|f| (f.to_string(), Kind::File)));
                dir(e)
            }
            ["stats", "memory_usage", "device_mem", name] => match Field::parse(name) {
                Some(_) => counter(CoreCounter::DeviceMem, name),
                None => {
                    DEVICE_MEM_CATEGORIES.iter().position(|(n, _)| n == name)?;
                    files(["peak", "present", "total"])
                }
            },
            ["stats", "memory_usage", "device_mem", name, field] => {
                let i = DEVICE_MEM_CATEGORIES.iter().position(|(n, _)| n == name)?;
                counter(CoreCounter::DeviceCategory(i), field)
            }
            _ => None,
        }
    }

    /// What attribute `attr` reads; `snapshot(device)` gives the counters of a device (the
    /// caller's, or several processes' summed).
    pub fn render(&self, attr: &Attr, snapshot: impl FnOnce(u32) -> DeviceSnapshot) -> String {
        let pick = |v: crate::counters::CounterValue, f: Field| match f {
            Field::Total => v.total,
            Field::Present => v.present,
            Field::Peak => v.peak,
        };
        match attr {
            Attr::Text(s) => s.clone(),
            Attr::Core {
                device,
                core,
                counter,
                field,
            } => {
                let s = snapshot(*device);
                format!("{}\n", pick(s.core(*core as usize, *counter), *field))
            }
            Attr::Host {
                device,
                category,
                field,
            } => {
                let s = snapshot(*device);
                format!("{}\n", pick(s.host(*category), *field))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trn1x2() -> Layout {
        Layout {
            target: Target::Trn1,
            devices: 2,
        }
    }

    fn read(l: &Layout, path: &str) -> String {
        match l.resolve(path, true) {
            Ok((_, Node::File(a))) => l.render(&a, |_| DeviceSnapshot::default()),
            other => panic!("{path}: {other:?}"),
        }
    }

    #[test]
    fn fixed_attributes_describe_the_device() {
        let l = trn1x2();
        let d = "/sys/devices/virtual/neuron_device/neuron1";
        assert_eq!(read(&l, &format!("{d}/core_count")), "2");
        assert_eq!(read(&l, &format!("{d}/connected_devices")), "0\n");
        assert_eq!(read(&l, &format!("{d}/dev")), "240:1\n");
        assert_eq!(
            read(&l, &format!("{d}/info/architecture/arch_type")),
            "NDv2\n"
        );
        assert_eq!(
            read(&l, &format!("{d}/info/architecture/device_name")),
            "Trainium1\n"
        );
        assert_eq!(
            read(&l, &format!("{d}/neuron_core1/info/architecture/arch_type")),
            "NCv2\n"
        );
        assert_eq!(read(&l, "/sys/module/neuron/version"), "2.24.7.0\n");
        assert_eq!(
            read(&l, &format!("{d}/info/runtime_version")),
            "2.30.50.0\n"
        );
        let t2 = Layout {
            target: Target::Trn2,
            devices: 1,
        };
        let d0 = "/sys/devices/virtual/neuron_device/neuron0";
        assert_eq!(read(&t2, &format!("{d0}/core_count")), "8");
        assert_eq!(read(&t2, &format!("{d0}/connected_devices")), "\n");
        assert_eq!(
            read(&t2, &format!("{d0}/info/architecture/instance_type")),
            "Trn2\n"
        );
        assert!(t2
            .resolve(&format!("{d0}/neuron_core7/stats"), true)
            .is_ok());
        assert_eq!(
            t2.resolve(&format!("{d0}/neuron_core8"), true),
            Err(Lookup::Missing)
        );
    }

    #[test]
    fn links_resolve_like_the_kernel_shows_them() {
        let l = trn1x2();
        let (canon, node) = l
            .resolve("/sys/class/neuron_device/neuron0", false)
            .unwrap();
        assert_eq!(canon, "/sys/class/neuron_device/neuron0");
        assert_eq!(
            node,
            Node::Link("../../devices/virtual/neuron_device/neuron0".into())
        );
        let (canon, node) = l
            .resolve(
                "/sys/class/neuron_device/neuron0//./info/../core_count",
                true,
            )
            .unwrap();
        assert_eq!(
            canon,
            "/sys/devices/virtual/neuron_device/neuron0/core_count"
        );
        assert!(matches!(node, Node::File(_)));
        let (canon, _) = l
            .resolve(
                "/sys/devices/virtual/neuron_device/neuron1/subsystem/neuron0",
                true,
            )
            .unwrap();
        assert_eq!(canon, "/sys/devices/virtual/neuron_device/neuron0");
        assert_eq!(
            l.resolve("/sys/class/neuron_device/neuron2", true),
            Err(Lookup::Missing)
        );
        assert_eq!(
            l.resolve("/sys/module/neuron/version/x", true),
            Err(Lookup::NotDir)
        );
        assert_eq!(l.resolve("/sys/module/neuronx", true), Err(Lookup::Missing));
        assert!(Layout::owns("/sys/module/neuron"));
        assert!(!Layout::owns("/sys/module/neuronx"));
        assert!(!Layout::owns("/sys/class"));
    }

    #[test]
    fn every_listed_entry_resolves_to_its_kind() {
        for l in [
            trn1x2(),
            Layout {
                target: Target::Trn2,
                devices: 1,
            },
        ] {
            let mut todo = vec![
                DEVICES_DIR.to_string(),
                CLASS_DIR.to_string(),
                MODULE_DIR.to_string(),
            ];
            let mut files = 0;
            while let Some(p) = todo.pop() {
                let Ok((_, Node::Dir(entries))) = l.resolve(&p, false) else {
                    panic!("{p} is not a directory");
                };
                for (name, kind) in entries {
                    let child = format!("{p}/{name}");
                    let (_, node) = l.resolve(&child, false).unwrap_or_else(|e| {
                        panic!("{child}: {e:?}");
                    });
                    match (kind, node) {
                        (Kind::Dir, Node::Dir(_)) => {
                            if !p.starts_with(CLASS_DIR) {
                                todo.push(child)
                            }
                        }
                        (Kind::File, Node::File(a)) => {
                            files += 1;
                            let s = l.render(&a, |_| DeviceSnapshot::default());
                            assert!(!s.is_empty() || child.ends_with("connected_devices"));
                        }
                        (Kind::Link, Node::Link(_)) => {}
                        (k, n) => panic!("{child}: listed as {k:?}, is {n:?}"),
                    }
                }
            }
            assert!(files > 100 * l.devices as usize, "{files} files");
        }
    }

    #[test]
    fn the_ring_of_connected_devices() {
        assert_eq!(connected_devices(1, 0), Vec::<u32>::new());
        assert_eq!(connected_devices(2, 0), vec![1]);
        assert_eq!(connected_devices(4, 0), vec![3, 1]);
        assert_eq!(connected_devices(4, 3), vec![2, 0]);
        assert_eq!(pci_bdf(1), "0000:11:00.0");
    }
}
