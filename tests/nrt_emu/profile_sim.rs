//! `nrt-emu profile`'s neuron-profile JSON of a simulated execution (docs/profile.md §7) and
//! its comparison with the device's profiles of the development NEFFs: the JSON has the
//! export's keys and compares with itself without a difference; the four attention kernels'
//! simulated instructions all find a device instruction of the same opcode; and per NEFF with a
//! device trace or profile the simulated `total_time` is within 25% of the device's
//! (docs/simulator.md §7.7; the 10% goal and the engines' active times are printed, not
//! asserted). The development NEFFs are read from `../shared/current-neffs` and
//! `../shared/real-neffs` (or `NRT_EMU_CURRENT_NEFFS`, `NRT_EMU_REAL_NEFFS`); without them those
//! tests print a skip line and pass.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::nrt_emu_on;

/// A fixture NEFF of the Neuron encoding, present in every checkout.
fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/neffs/neuron_add.trn2.neff")
}

/// A fresh scratch directory.
fn scratch(what: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nrt-emu-profile-sim-{what}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn folder(var: &str, default: &str) -> Option<PathBuf> {
    let dir = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(default));
    dir.is_dir().then_some(dir)
}

/// One development NEFF with a device trace or profile.
struct Development {
    name: &'static str,
    /// `true`: `../shared/current-neffs`; `false`: `../shared/real-neffs`.
    current: bool,
    /// The runtime its device run used.
    runtime: &'static str,
}

const fn dev(name: &'static str, current: bool) -> Development {
    Development {
        name,
        current,
        runtime: if current { "2.30" } else { "2.27" },
    }
}

/// The four attention kernels with AWS's JSON export.
const ATTENTION: [&str; 4] = [
    "allenkchau+trainium-kernel-fusion--fused_bf16_s512",
    "allenkchau+trainium-kernel-fusion--baseline_bf16_s512",
    "allenkchau+trainium-kernel-fusion--fused_fp32_s512",
    "allenkchau+trainium-kernel-fusion--baseline_fp32_s512",
];

/// Every development NEFF with a device trace or profile (the fit set first, then the NEFFs
/// held out of the fit, docs/simulator.md §7.7).
const DEVELOPMENT: [Development; 15] = [
    dev("allenkchau+trainium-kernel-fusion--fused_bf16_s512", true),
    dev(
        "allenkchau+trainium-kernel-fusion--baseline_bf16_s512",
        true,
    ),
    dev("KevGomes1403+nki-moe-megakernel--moe_tkg_v6b", true),
    dev("KevGomes1403+nki-moe-megakernel--attn_tkg_v6", true),
    dev("chenhzhu+asst4-trainium2--part1_stream_256k_fd1k", false),
    dev("chenhzhu+asst4-trainium2--part1_transpose_1024", false),
    dev(
        "chenhzhu+asst4-trainium2--part2_profile_final_float16",
        false,
    ),
    dev(
        "chenhzhu+asst4-trainium2--part2_profile_final_float16_smaller",
        false,
    ),
    dev(
        "chenhzhu+asst4-trainium2--part2_profile_final_float32_smaller",
        false,
    ),
    // Held out.
    dev("allenkchau+trainium-kernel-fusion--fused_fp32_s512", true),
    dev(
        "allenkchau+trainium-kernel-fusion--baseline_fp32_s512",
        true,
    ),
    dev("chenhzhu+asst4-trainium2--part1_stream_256k_fd2k", false),
    dev(
        "chenhzhu+asst4-trainium2--part2_profile_final_pool_float16",
        false,
    ),
    dev(
        "chenhzhu+asst4-trainium2--part2_profile_final_pool_float16_smaller",
        false,
    ),
    dev(
        "chenhzhu+asst4-trainium2--part2_profile_final_pool_float32_smaller",
        false,
    ),
];

/// The NEFF and device profile of `d`, or `None` after printing a skip line.
fn files(d: &Development) -> Option<(PathBuf, PathBuf)> {
    let (var, default) = if d.current {
        ("NRT_EMU_CURRENT_NEFFS", "../shared/current-neffs")
    } else {
        ("NRT_EMU_REAL_NEFFS", "../shared/real-neffs")
    };
    let Some(dir) = folder(var, default) else {
        println!(
            "SKIP {}: folder not found (set {var} or put it at {default})",
            d.name
        );
        return None;
    };
    let neff = dir.join(format!("{}.neff", d.name));
    let json = dir.join(format!("profiles/{}.profile.json", d.name));
    let trace = dir.join(format!("profiles/{}.ntff", d.name));
    let device = if json.is_file() { json } else { trace };
    if !neff.is_file() || !device.is_file() {
        println!(
            "SKIP {}: {} or {} missing",
            d.name,
            neff.display(),
            device.display()
        );
        return None;
    }
    Some((neff, device))
}

/// Writes a `.npy` of `int32` values.
fn npy_i32(path: &Path, shape: &[u64], values: &[i32]) {
    let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
    let shape = if dims.len() == 1 {
        format!("({},)", dims[0])
    } else {
        format!("({})", dims.join(", "))
    };
    let mut header = format!("{{'descr': '<i4', 'fortran_order': False, 'shape': {shape}, }}");
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut b = b"\x93NUMPY\x01\x00".to_vec();
    b.extend_from_slice(&(header.len() as u16).to_le_bytes());
    b.extend_from_slice(header.as_bytes());
    for v in values {
        b.extend_from_slice(&v.to_le_bytes());
    }
    std::fs::write(path, b).unwrap();
}

/// The extra arguments a development NEFF needs: its runtime, and the inputs its kernel is
/// written for (the MoE kernel's expert ids must be distinct and within its 128 experts).
fn extra_args(d: &Development, dir: &Path) -> Vec<String> {
    let mut a = vec!["--runtime".to_string(), d.runtime.to_string()];
    if d.name.ends_with("moe_tkg_v6b") {
        let ids = dir.join("expert_ids.npy");
        npy_i32(&ids, &[1, 8], &[3, 17, 42, 64, 77, 90, 101, 120]);
        a.push("--input".into());
        a.push(format!("input1={}", ids.display()));
    }
    a
}

/// `nrt-emu profile NEFF --compare DEVICE --json` with `extra`: the comparison object.
fn compare(neff: &Path, device: &Path, extra: &[String]) -> Value {
    let mut args: Vec<&str> = vec!["profile"];
    args.extend(extra.iter().map(String::as_str));
    args.extend(["--compare", device.to_str().unwrap(), "--json"]);
    let out = nrt_emu_on(&args, neff).success("profile --compare");
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// Keys every element of the export's arrays has (docs/profile.md §2.1) that a simulated
/// profile fills.
const INSTRUCTION_KEYS: [&str; 12] = [
    "subgroup",
    "label",
    "pc",
    "opcode",
    "operands",
    "timestamp",
    "duration",
    "subgraph",
    "fully_qualified_subgraph",
    "id",
    "crc_in",
    "crc_out",
];
const DMA_KEYS: [&str; 14] = [
    "dma_queue",
    "dma_engine",
    "subgroup",
    "queue_type",
    "packet_idx",
    "timestamp",
    "duration",
    "write_size",
    "read_size",
    "transfer_size",
    "transfer_rate",
    "subgraph",
    "id",
    "semaphore_id",
];
const SUMMARY_KEYS: [&str; 16] = [
    "total_time",
    "total_active_time",
    "neuroncore_cycle_count",
    "tensor_engine_active_time",
    "scalar_engine_active_time",
    "vector_engine_active_time",
    "gpsimd_engine_active_time",
    "sync_engine_active_time",
    "tensor_engine_instruction_count",
    "sync_engine_instruction_count",
    "dma_active_time",
    "dma_packet_time",
    "static_dma_packet_count",
    "software_dynamic_dma_packet_count",
    "hardware_dynamic_dma_packet_count",
    "trace_count",
];

#[test]
fn the_simulated_profile_has_the_exports_keys_and_compares_with_itself_exactly() {
    let dir = scratch("json");
    let json = dir.join("sim.profile.json");
    nrt_emu_on(
        &[
            "profile",
            "--format",
            "json",
            "--output",
            json.to_str().unwrap(),
        ],
        &fixture(),
    )
    .success("profile --format json");
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    for array in nrt_profile::Profile::SECTIONS {
        let a = v[array]
            .as_array()
            .unwrap_or_else(|| panic!("{array} missing"));
        assert!(!a.is_empty(), "{array} is empty");
    }
    for i in v["instruction"].as_array().unwrap() {
        for k in INSTRUCTION_KEYS {
            assert!(i.get(k).is_some(), "instruction without {k}: {i}");
        }
    }
    for d in v["dma"].as_array().unwrap() {
        for k in DMA_KEYS {
            assert!(d.get(k).is_some(), "dma packet without {k}: {d}");
        }
    }
    let s = &v["summary"][0];
    for k in SUMMARY_KEYS {
        assert!(s.get(k).is_some(), "summary without {k}");
    }
    assert_eq!(v["metadata"][0]["is_simulation"], true);
    assert!(s["total_time"].as_f64().unwrap() > 0.0);
    // Every engine's instructions: the runtime's around the program are among them.
    let opcodes: Vec<&str> = v["instruction"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["opcode"].as_str().unwrap())
        .collect();
    for op in [
        "TENSOR_LOAD",
        "COMPARE_BRANCH",
        "NOTIFY",
        "DRAIN",
        "EVENT_SEMAPHORE",
        "TENSOR_TENSOR",
    ] {
        assert!(opcodes.contains(&op), "no {op} in {opcodes:?}");
    }
    // The same execution again, compared with the first: matched throughout, no difference.
    let c = compare(&fixture(), &json, &[]);
    let n = c["instructions_total"].as_u64().unwrap();
    assert!(n > 0);
    assert_eq!(c["opcode_match"], n, "{c}");
    assert_eq!(c["operands_match"], n, "{c}");
    assert_eq!(
        c["total_time_us"]["sim"], c["total_time_us"]["device"],
        "{c}"
    );
    let text = nrt_emu_on(
        &["profile", "--compare", json.to_str().unwrap()],
        &fixture(),
    )
    .success("profile --compare")
    .stdout;
    assert!(
        text.contains(&format!("same opcode {n} of {n}, same operands {n} of {n}")),
        "{text}"
    );
    assert!(
        text.contains("every aligned pair takes the same time"),
        "{text}"
    );
    // Where a device export is at hand, the simulated records carry each of its keys.
    let attention = DEVELOPMENT.iter().find(|d| d.name == ATTENTION[0]);
    if let Some((neff, device)) = attention.and_then(files) {
        let out = dir.join("attention.profile.json");
        nrt_emu_on(
            &[
                "profile",
                "--format",
                "json",
                "--output",
                out.to_str().unwrap(),
            ],
            &neff,
        )
        .success("profile --format json");
        let sim: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        let dev: Value = serde_json::from_slice(&std::fs::read(&device).unwrap()).unwrap();
        for array in [
            "instruction",
            "dma",
            "active_time",
            "semaphore_update",
            "model_info",
        ] {
            let ours = sim[array][0].as_object().unwrap();
            for (k, _) in dev[array][0].as_object().unwrap() {
                let optional = matches!(k.as_str(), "predecessors" | "elements")
                    || k.contains("_bytes")
                    || k.starts_with("compiler_")
                    || k == "is_psum_read_sbuf_write";
                assert!(optional || ours.contains_key(k), "{array}[] lacks {k}");
            }
        }
        let (ss, ds) = (
            sim["summary"][0].as_object().unwrap(),
            dev["summary"][0].as_object().unwrap(),
        );
        let missing: Vec<&String> = ds.keys().filter(|k| !ss.contains_key(*k)).collect();
        assert!(missing.is_empty(), "summary lacks {missing:?}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn every_attention_instruction_finds_the_device_opcode_at_its_pc() {
    let dir = scratch("attention");
    for name in ATTENTION {
        let d = DEVELOPMENT.iter().find(|d| d.name == name).unwrap();
        let Some((neff, device)) = files(d) else {
            continue;
        };
        let c = compare(&neff, &device, &extra_args(d, &dir));
        let n = c["instructions_total"].as_u64().unwrap();
        println!(
            "{name}: same opcode {} of {n}, same operands {} of {n}; total {:.2} µs vs {:.2} µs",
            c["opcode_match"],
            c["operands_match"],
            c["total_time_us"]["sim"],
            c["total_time_us"]["device"]
        );
        assert!(n > 400, "{c}");
        assert_eq!(c["opcode_match"], n, "{name}: {c}");
        // The text report lists the alignment per engine and the largest differences.
        let text = nrt_emu_on(
            &[
                "profile",
                "--runtime",
                "2.30",
                "--compare",
                device.to_str().unwrap(),
            ],
            &neff,
        )
        .success("profile --compare")
        .stdout;
        assert!(
            text.contains("sg00 Tensor") && text.contains("pc offset +0"),
            "{text}"
        );
        assert!(text.contains("largest duration differences"), "{text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn simulated_times_hold_against_every_device_trace() {
    let dir = scratch("timing");
    let mut rows = Vec::new();
    for d in &DEVELOPMENT {
        let Some((neff, device)) = files(d) else {
            continue;
        };
        let c = compare(&neff, &device, &extra_args(d, &dir));
        let (sim, dev) = (
            c["total_time_us"]["sim"].as_f64().unwrap(),
            c["total_time_us"]["device"].as_f64().unwrap(),
        );
        let mut line = format!(
            "{:<66} total {sim:>9.2} / {dev:>9.2} µs = {:.2}",
            d.name,
            sim / dev
        );
        let mut engines_within = true;
        for e in ["pe", "act", "dve", "pool", "sp", "dma"] {
            let (s, v) = (
                c["engines"][e]["sim_active_us"].as_f64().unwrap(),
                c["engines"][e]["device_active_us"].as_f64().unwrap(),
            );
            let r = if v > 0.0 { s / v } else { 0.0 };
            if e != "dma" && (r - 1.0).abs() > 0.2 {
                engines_within = false;
            }
            line.push_str(&format!(" | {e} {s:.1}/{v:.1} {r:.2}"));
        }
        let goal = (sim / dev - 1.0).abs() <= 0.10;
        line.push_str(&format!(
            " | total goal (10%) {}, engines goal (20%) {}",
            if goal { "met" } else { "missed" },
            if engines_within { "met" } else { "missed" }
        ));
        println!("{line}");
        rows.push((d.name, sim / dev));
    }
    for (name, ratio) in &rows {
        assert!(
            (ratio - 1.0).abs() <= 0.25,
            "{name}: simulated total_time is {ratio:.2} of the device's (more than 25% off)"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
