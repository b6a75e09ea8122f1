//! The checks a test suite makes before it runs device tests, answered for the emulated devices
//! (docs/driver.md §13, docs/c-api.md §8.3):
//!
//! * `nrt-emu ls --json` (and `-j`, `--json-output`) prints the JSON of `neuron-ls -j` with its
//!   documented fields, on trn1 and trn2 with one and two devices, the same under the device
//!   shim (where it reads the shim's `/dev` and sysfs) as without; its table has neuron-ls's
//!   columns;
//! * `nrt-emu install --tools` adds `bin/neuron-ls`, which behaves as `nrt-emu ls`; without
//!   `--tools` nothing named like AWS's tools is installed, and AWS's own `neuron-ls` is kept
//!   unless `--force`;
//! * `nrt-emu --version` names nrt-emu's version and the libnrt API level;
//! * under the shim, the sysfs values a shell script reads move as a model loads and executes
//!   (memory in use, executions, flops) and memory returns to its baseline after the unload;
//! * a Python suite gated the way torch-neuronx's conftest gates device tests
//!   (`device_gate/test_device_gate.py`: `/dev/neuron0` exists and `neuron-ls -j` lists a device)
//!   runs its device tests under the shim with `neuron-ls` installed, and skips them without.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use nrt_emu::hal::driver::{DriverHal, RealSyscalls};
use nrt_emu::hal::Target;
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::Runtime;
use nrt_fixtures::{artifact::describe, zoo, GOLDEN_SEED};

const ROLE: &str = "NRT_EMU_DEVICE_CHECKS_ROLE";

/// Variables that choose the devices or the backend: every run here starts without them.
const DEVICE_ENV: [&str; 9] = [
    "LD_PRELOAD",
    "NRT_EMU_BACKEND",
    "NRT_EMU_TARGET",
    "NEURON_PLATFORM_TARGET_OVERRIDE",
    "NRT_EMU_SHIM_TARGET",
    "NRT_EMU_SHIM_DEVICES",
    "NRT_EMU_SHIM_LOG",
    "NEURON_LOGICAL_NC_CONFIG",
    "NEURON_RT_VIRTUAL_CORE_SIZE",
];

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nrt-emu-devchecks-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn shim() -> PathBuf {
    nrt_fixtures::artifact::built("nrt-emu-shim", "libnrt_emu_shim.so")
}

/// `program args` with a clean device environment, counters published in `state`, and `env`.
fn run(program: &Path, args: &[&str], state: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(program);
    cmd.args(args).env("NRT_EMU_SHIM_STATE_DIR", state);
    for k in DEVICE_ENV {
        cmd.env_remove(k);
    }
    cmd.envs(env.iter().copied());
    cmd.output()
        .unwrap_or_else(|e| panic!("{}: {e}", program.display()))
}

fn nrt_emu() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_nrt-emu"))
}

/// The keys of `neuron-ls -j`'s device objects, in its order (docs/driver.md §13.4).
const KEYS: [&str; 10] = [
    "neuron_device",
    "bdf",
    "cpu_affinity",
    "numa_node",
    "connected_to",
    "nc_count",
    "logical_neuroncore_config",
    "memory_size",
    "neuroncore_ids",
    "neuron_processes",
];

/// Checks one `neuron-ls -j` output against the documented fields for `n` devices of `target`
/// with `lnc` physical cores per logical core (trn2).
fn check_listing(raw: &str, target: Target, n: u32, lnc: u32) {
    let v: serde_json::Value = serde_json::from_str(raw).unwrap_or_else(|e| panic!("{e}: {raw}"));
    let devices = v.as_array().expect("an array of devices");
    assert_eq!(devices.len(), n as usize, "{raw}");
    let bdf = regex::Regex::new(r"^0000:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$").unwrap();
    let affinity = regex::Regex::new(r"^0-[0-9]+$").unwrap();
    let (cores, memory) = match target {
        Target::Trn1 => (2, 32u64 << 30),
        Target::Trn2 => (8 / lnc, 96u64 << 30),
    };
    for (i, d) in devices.iter().enumerate() {
        let i = i as u32;
        let keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
        let want: Vec<&str> = KEYS
            .iter()
            .copied()
            .filter(|k| target == Target::Trn2 || *k != "logical_neuroncore_config")
            .collect();
        let mut sorted = want.clone();
        sorted.sort_unstable();
        assert_eq!(keys, sorted, "device {i}: the documented fields");
        assert_eq!(d["neuron_device"], i);
        assert!(bdf.is_match(d["bdf"].as_str().unwrap()), "{}", d["bdf"]);
        assert!(affinity.is_match(d["cpu_affinity"].as_str().unwrap()));
        assert_eq!(d["numa_node"], "-1");
        match n {
            1 => assert!(
                d["connected_to"].is_null(),
                "a lone device: {}",
                d["connected_to"]
            ),
            _ => assert_eq!(d["connected_to"], serde_json::json!([1 - i])),
        }
        assert_eq!(d["nc_count"], cores);
        if target == Target::Trn2 {
            assert_eq!(d["logical_neuroncore_config"], lnc);
        }
        assert_eq!(d["memory_size"], memory);
        let ids: Vec<u32> = (i * cores..(i + 1) * cores).collect();
        assert_eq!(d["neuroncore_ids"], serde_json::json!(ids));
        assert_eq!(d["neuron_processes"], serde_json::json!([]));
    }
    // Keys appear in the tool's order, four-space indented, no trailing newline.
    let first = &raw[..raw.find('}').unwrap()];
    let positions: Vec<usize> = KEYS
        .iter()
        .filter_map(|k| first.find(&format!("\n        \"{k}\":")))
        .collect();
    assert!(
        positions.windows(2).all(|w| w[0] < w[1]),
        "key order: {first}"
    );
    assert!(
        raw.starts_with("[\n    {\n") && raw.ends_with("\n]"),
        "{raw}"
    );
}

#[test]
fn ls_json_has_the_documented_fields_on_trn1_and_trn2_with_one_and_two_devices() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let state = scratch("ls");
    for (target, n) in [
        (Target::Trn1, 1),
        (Target::Trn1, 2),
        (Target::Trn2, 1),
        (Target::Trn2, 2),
    ] {
        let count = n.to_string();
        let name = target.to_string();
        let env = [("NRT_EMU_SHIM_DEVICES", count.as_str())];
        let o = run(
            nrt_emu(),
            &["ls", "--json", "--target", &name],
            &state,
            &env,
        );
        assert!(o.status.success(), "{}", describe(&o));
        let raw = String::from_utf8(o.stdout).unwrap();
        check_listing(&raw, target, n, 2);
        // The flag's other spellings, and the generation from the shim's variable.
        for flag in ["-j", "--json-output"] {
            let env = [
                ("NRT_EMU_SHIM_DEVICES", count.as_str()),
                ("NRT_EMU_SHIM_TARGET", name.as_str()),
            ];
            let o = run(nrt_emu(), &["ls", flag], &state, &env);
            assert_eq!(
                String::from_utf8_lossy(&o.stdout),
                raw,
                "{flag}: {}",
                describe(&o)
            );
        }
    }
    // Without any variable: libnrt's default generation, one device; NRT_EMU_TARGET chooses
    // too; the logical core size follows NEURON_LOGICAL_NC_CONFIG.
    let o = run(nrt_emu(), &["ls", "-j"], &state, &[]);
    check_listing(&String::from_utf8_lossy(&o.stdout), Target::Trn2, 1, 2);
    let o = run(
        nrt_emu(),
        &["ls", "-j"],
        &state,
        &[("NRT_EMU_TARGET", "trn1")],
    );
    check_listing(&String::from_utf8_lossy(&o.stdout), Target::Trn1, 1, 1);
    let o = run(
        nrt_emu(),
        &["ls", "-j"],
        &state,
        &[("NEURON_LOGICAL_NC_CONFIG", "1")],
    );
    check_listing(&String::from_utf8_lossy(&o.stdout), Target::Trn2, 1, 1);
    let o = run(
        nrt_emu(),
        &["ls"],
        &state,
        &[("NRT_EMU_SHIM_DEVICES", "99")],
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("NRT_EMU_SHIM_DEVICES"));

    // Under the shim it reads the shim's /dev and sysfs, and prints the same.
    let so = shim();
    for (target, n) in [("trn1", "1"), ("trn2", "2")] {
        let env = [("NRT_EMU_SHIM_DEVICES", n), ("NRT_EMU_SHIM_TARGET", target)];
        let plain = run(nrt_emu(), &["ls", "-j"], &state, &env);
        let mut env = env.to_vec();
        env.push(("LD_PRELOAD", so.to_str().unwrap()));
        let shimmed = run(nrt_emu(), &["ls", "-j"], &state, &env);
        assert!(shimmed.status.success(), "{}", describe(&shimmed));
        assert_eq!(shimmed.stdout, plain.stdout, "{target} x{n}");
        let table = run(nrt_emu(), &["ls"], &state, &env);
        assert!(
            String::from_utf8_lossy(&table.stdout).contains("device shim"),
            "{}",
            describe(&table)
        );
    }
    let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn ls_prints_neuron_ls_tables() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let state = scratch("table");
    let env = [
        ("NRT_EMU_SHIM_DEVICES", "2"),
        ("NRT_EMU_SHIM_TARGET", "trn2"),
    ];
    let o = run(nrt_emu(), &["ls"], &state, &env);
    let t = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", describe(&o));
    assert!(t.contains("logical-neuroncore-config: 2\n"), "{t}");
    for want in [
        "| NEURON | NEURON |  NEURON  | NEURON | CONNECTED |     PCI      |",
        "| DEVICE | CORES  | CORE IDS | MEMORY |  DEVICES  |     BDF      |",
        "| 0      | 4      | 0-3      | 96 GB  | 1         | 0000:10:00.0 |",
        "| 1      | 4      | 4-7      | 96 GB  | 0         | 0000:11:00.0 |",
    ] {
        assert!(t.contains(want), "{want:?} not in\n{t}");
    }
    let o = run(nrt_emu(), &["ls", "--show-all-procs"], &state, &env);
    let t = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(t.contains("| PID |") && t.contains("| NA  |"), "{t}");
    let o = run(nrt_emu(), &["ls", "--topology"], &state, &env);
    let t = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(t.contains("Neuron Device Topology\n[ 0 ]◄––►[ 1 ]"), "{t}");
    let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn install_tools_adds_neuron_ls_and_nothing_named_like_aws_tools_otherwise() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    nrt_fixtures::artifact::built("nrt-capi", "libnrt.so");
    let state = scratch("install-state");
    let prefix = scratch("install");
    let p = prefix.to_str().unwrap();
    let o = run(nrt_emu(), &["install", "--prefix", p], &state, &[]);
    assert!(o.status.success(), "{}", describe(&o));
    assert!(!prefix.join("bin").exists(), "no tools without --tools");
    let o = run(
        nrt_emu(),
        &["install", "--prefix", p, "--tools"],
        &state,
        &[],
    );
    assert!(o.status.success(), "{}", describe(&o));
    let ls = prefix.join("bin/neuron-ls");
    assert_eq!(std::fs::read_link(&ls).unwrap(), Path::new("nrt-emu"));
    let names: Vec<String> = std::fs::read_dir(prefix.join("bin"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    // Run by that name, it is `nrt-emu ls`, with neuron-ls's flags.
    let env = [
        ("NRT_EMU_SHIM_DEVICES", "2"),
        ("NRT_EMU_SHIM_TARGET", "trn1"),
    ];
    let direct = run(nrt_emu(), &["ls", "-j"], &state, &env);
    let by_name = run(&ls, &["-j"], &state, &env);
    assert!(by_name.status.success(), "{}", describe(&by_name));
    assert_eq!(by_name.stdout, direct.stdout);
    let help = run(&ls, &["--help"], &state, &[]);
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(
        help.contains("neuron-ls") && help.contains("--json-output"),
        "{help}"
    );
    // Found on PATH, as a suite runs it.
    let path = format!(
        "{}:{}",
        prefix.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = run(
        Path::new("sh"),
        &["-c", "neuron-ls -j"],
        &state,
        &[("PATH", path.as_str())],
    );
    check_listing(&String::from_utf8_lossy(&o.stdout), Target::Trn2, 1, 2);
    // AWS's neuron-ls is not replaced without --force.
    std::fs::remove_file(&ls).unwrap();
    std::fs::write(&ls, "#!/bin/sh\necho aws\n").unwrap();
    let o = run(
        nrt_emu(),
        &["install", "--prefix", p, "--tools"],
        &state,
        &[],
    );
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--force"),
        "{}",
        describe(&o)
    );
    assert_eq!(
        std::fs::read_to_string(&ls).unwrap(),
        "#!/bin/sh\necho aws\n"
    );
    let o = run(
        nrt_emu(),
        &["install", "--prefix", p, "--tools", "--force"],
        &state,
        &[],
    );
    assert!(o.status.success(), "{}", describe(&o));
    assert_eq!(std::fs::read_link(&ls).unwrap(), Path::new("nrt-emu"));
    let _ = std::fs::remove_dir_all(&prefix);
    let _ = std::fs::remove_dir_all(&state);
}

#[test]
fn version_names_nrt_emu_and_the_libnrt_api_level() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let state = scratch("version");
    let o = run(nrt_emu(), &["--version"], &state, &[]);
    assert!(o.status.success());
    let [a, b, c, d] = nrt_emu::hal::version::NRT_API_VERSION;
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        format!(
            "nrt-emu {} (libnrt API {a}.{b}.{c}.{d})\n",
            env!("CARGO_PKG_VERSION")
        )
    );
    assert_eq!((a, b), (2, 30));
    let _ = std::fs::remove_dir_all(&state);
}

/// The sysfs snapshot script: `{(core, name): value}`.
fn snapshot() -> std::collections::BTreeMap<(String, String), u64> {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nrt_emu/device_gate/sysfs_snapshot.sh");
    let o = Command::new("sh").arg(script).output().unwrap();
    assert!(o.status.success(), "{}", describe(&o));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            ((f[0].to_string(), f[1].to_string()), f[2].parse().unwrap())
        })
        .collect()
}

fn total(s: &std::collections::BTreeMap<(String, String), u64>, name: &str) -> u64 {
    s.iter()
        .filter(|((_, n), _)| n == name)
        .map(|(_, v)| v)
        .sum()
}

#[test]
fn sysfs_counters_follow_a_model_under_the_shim() {
    match std::env::var(ROLE).as_deref() {
        Ok("sysfs-model") => return sysfs_model_child(),
        Ok(_) => return,
        Err(_) => {}
    }
    let state = scratch("sysfs-model");
    let exe = std::env::current_exe().unwrap();
    let o = run(
        &exe,
        &[
            "device_checks::sysfs_counters_follow_a_model_under_the_shim",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ],
        &state,
        &[
            ("LD_PRELOAD", shim().to_str().unwrap()),
            (ROLE, "sysfs-model"),
            ("NRT_EMU_SHIM_TARGET", "trn1"),
        ],
    );
    assert!(o.status.success(), "{}", describe(&o));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("sysfs-model: all checks passed"),
        "{}",
        describe(&o)
    );
    let _ = std::fs::remove_dir_all(&state);
}

/// Under the shim: the runtime over the driver backend on `/dev/neuron0`, a shell script
/// reading sysfs between the steps.
fn sysfs_model_child() {
    let m = zoo::all()
        .into_iter()
        .find(|m| m.name == "mlp2" && m.target == Target::Trn1)
        .expect("the mlp2 zoo model");
    let before = snapshot();
    assert_eq!(
        total(&before, "device_mem"),
        0,
        "no device memory in use yet"
    );
    let hal = Arc::new(DriverHal::open(0, Arc::new(RealSyscalls)).expect("the shim's device"));
    let rt = Runtime::new(hal, RuntimeConfig::default()).unwrap();
    let inputs = m.generate_inputs(GOLDEN_SEED);
    let cycle = |runs: usize, loaded: &dyn Fn()| {
        let id = rt.load(&m.neff, -1).unwrap();
        loaded();
        let vnc = rt.model(id).unwrap().vnc;
        let (ins, outs) = crate::support::device_io(&rt, &m, vnc, &inputs);
        for _ in 0..runs {
            rt.execute(id, &ins, &outs).unwrap();
        }
        crate::support::check_outputs(&m, &inputs, &outs);
        let executed = snapshot();
        drop((ins, outs));
        rt.unload(id).unwrap();
        executed
    };
    // The first model settles what the runtime keeps between models: the baseline.
    cycle(1, &|| {});
    let baseline = snapshot();
    let executed = cycle(3, &|| {
        let loaded = snapshot();
        assert!(total(&loaded, "device_mem") > total(&baseline, "device_mem"));
        assert!(total(&loaded, "model_code") > total(&baseline, "model_code"));
    });
    for name in ["inference_count", "success"] {
        assert_eq!(
            total(&executed, name),
            total(&baseline, name) + 3,
            "{name}: {executed:?}"
        );
    }
    assert!(total(&executed, "flop_count") > total(&baseline, "flop_count"));
    let unloaded = snapshot();
    for ((core, name), v) in &unloaded {
        if name == "device_mem" || name == "model_code" {
            assert_eq!(*v, baseline[&(core.clone(), name.clone())], "{core} {name}");
        }
    }
    assert_eq!(
        total(&unloaded, "inference_count"),
        total(&executed, "inference_count")
    );
    drop(rt);
    assert_eq!(
        total(&snapshot(), "device_mem"),
        0,
        "closing the device frees what the process held"
    );
    println!("sysfs-model: all checks passed");
}

/// Runs the gated suite with `env`; returns unittest's report (stderr) after checking it ran
/// the suite's six tests and passed.
fn gated_suite(env: &[(&str, &str)], state: &Path) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/nrt_emu/device_gate");
    let mut cmd = Command::new("python3");
    cmd.args(["-m", "unittest", "-v", "test_device_gate"])
        .current_dir(&dir)
        .env("NRT_EMU_SHIM_STATE_DIR", state)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    for k in DEVICE_ENV {
        cmd.env_remove(k);
    }
    cmd.envs(env.iter().copied());
    let o = cmd.output().unwrap();
    let report = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "{}", describe(&o));
    assert!(report.contains("Ran 6 tests"), "{report}");
    report
}

#[test]
fn a_device_gated_python_suite_runs_under_the_shim_and_skips_without() {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    if Command::new("python3").arg("--version").output().is_err() {
        println!("SKIP: no python3 on PATH (.ci/run installs one)");
        return;
    }
    nrt_fixtures::artifact::built("nrt-capi", "libnrt.so");
    let so = shim();
    let state = scratch("gate-state");
    let prefix = scratch("gate-prefix");
    let o = run(
        nrt_emu(),
        &["install", "--prefix", prefix.to_str().unwrap(), "--tools"],
        &state,
        &[],
    );
    assert!(o.status.success(), "{}", describe(&o));
    let path = format!(
        "{}:{}",
        prefix.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let lib = prefix.join("lib");
    let neff = nrt_fixtures::fixtures_dir().join("neffs/mlp2.trn1.neff");
    let common = [
        ("PATH", path.as_str()),
        ("LD_LIBRARY_PATH", lib.to_str().unwrap()),
        ("NRT_EMU_TEST_NEFF", neff.to_str().unwrap()),
    ];

    // Without the shim there is no /dev/neuron0 (neuron-ls still lists the emulated device):
    // every device test is skipped, the gate's own test runs.
    let without = gated_suite(&common, &state);
    println!("--- without the shim ---\n{without}");
    assert!(without.contains("OK (skipped=5)"), "{without}");

    // Under the shim, with the driver backend: every test runs and passes.
    let mut env = common.to_vec();
    env.extend([
        ("LD_PRELOAD", so.to_str().unwrap()),
        ("NRT_EMU_BACKEND", "driver"),
        ("NRT_EMU_SHIM_TARGET", "trn1"),
    ]);
    let with = gated_suite(&env, &state);
    println!("--- under the shim ---\n{with}");
    assert!(!with.contains("skipped"), "{with}");
    assert!(with.trim_end().ends_with("OK"), "{with}");
    let _ = std::fs::remove_dir_all(&prefix);
    let _ = std::fs::remove_dir_all(&state);
}
