//! The development set of real compiler NEFFs (`../shared/real-neffs/`, or the folder named
//! by `NRT_EMU_REAL_NEFFS`) executes on its target and matches an independent float64
//! reference within the development set's tolerances; executions are deterministic across
//! runs and host threads. Without the folder every test prints a skip line and passes.
//!
//! The full-size convs (12.6M outputs of 2304 MACs each) are checked at 8192 seeded output
//! positions; their `_smaller` variants, the streams and the transpose at every element.

#[path = "real_neffs/reference.rs"]
mod reference;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use nrt_emu::hal::{Dtype, Target};

use reference::{check_close, uniform, Conv, Ty};

use crate::support::{nrt_emu_on, Run};

fn folder() -> Option<PathBuf> {
    let dir = std::env::var_os("NRT_EMU_REAL_NEFFS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/real-neffs"));
    dir.is_dir().then_some(dir)
}

/// The NEFF's bytes, or `None` after printing a skip line.
fn neff(name: &str) -> Option<Vec<u8>> {
    let Some(dir) = folder() else {
        println!("SKIP real-neffs: folder not found (set NRT_EMU_REAL_NEFFS or put it at ../shared/real-neffs)");
        return None;
    };
    let path = dir.join(format!("{name}.neff"));
    match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(e) => {
            println!("SKIP {name}: {}: {e}", path.display());
            None
        }
    }
}

/// Loads `neff` on a fresh simulator of its target and executes it `times` times with
/// `inputs` (given by input name).
fn execute(
    name: &str,
    neff: &[u8],
    inputs: &dyn Fn(&str, Dtype, usize) -> Vec<u8>,
    times: usize,
) -> Vec<Run> {
    // The development set's README: the waahm7 files are trn1 (`sunda`), the rest trn2.
    let target = if name.starts_with("waahm7") {
        Target::Trn1
    } else {
        Target::Trn2
    };
    crate::support::run_neff(target, neff, inputs, times)
}

fn report(name: &str, err: (f64, f64), run: &Run, host: std::time::Duration) {
    println!(
        "real-neff {name}: max |err| {:.3e} (÷ max |ref| {:.3e} = {:.2e}), {} cycles, host {:.1} ms",
        err.0,
        err.1,
        if err.1 > 0.0 { err.0 / err.1 } else { 0.0 },
        run.cycles[0],
        host.as_secs_f64() * 1e3
    );
}

fn ty(d: Dtype) -> Ty {
    match d {
        Dtype::F16 => Ty::F16,
        Dtype::F32 => Ty::F32,
        other => panic!("unexpected dtype {other}"),
    }
}

const STREAMS: [&str; 4] = [
    "chenhzhu+asst4-trainium2--part1_stream_256k_fd1k",
    "chenhzhu+asst4-trainium2--part1_stream_256k_fd2k",
    "waahm7+asst4-trainium--part1_stream_256k_fd1k",
    "waahm7+asst4-trainium--part1_stream_256k_fd2k",
];

fn stream_inputs(name: &str, d: Dtype, n: usize) -> Vec<u8> {
    let seed = if name == "a_vec" { 1 } else { 2 };
    ty(d).bytes(&uniform(seed, n))
}

#[test]
fn vector_adds_are_bit_exact() {
    for name in STREAMS {
        let Some(bytes) = neff(name) else { return };
        let t0 = Instant::now();
        let run = execute(name, &bytes, &stream_inputs, 1).remove(0);
        let host = t0.elapsed();
        let (a, b) = (uniform(1, 256_000), uniform(2, 256_000));
        let got = Ty::F32.values(&run.outputs[0]);
        let err = check_close(
            name,
            got.iter()
                .enumerate()
                .map(|(i, &g)| (i, g, (a[i] as f32 + b[i] as f32) as f64)),
            0.0,
            0.0,
        );
        report(name, err, &run, host);
    }
}

const TRANSPOSE: &str = "chenhzhu+asst4-trainium2--part1_transpose_1024";

#[test]
fn transpose_1024_is_bit_exact() {
    let Some(bytes) = neff(TRANSPOSE) else { return };
    let t0 = Instant::now();
    let run = execute(TRANSPOSE, &bytes, &|_, d, n| ty(d).bytes(&uniform(3, n)), 1).remove(0);
    let host = t0.elapsed();
    let a = uniform(3, 1 << 20);
    let got = Ty::F32.values(&run.outputs[0]);
    let err = check_close(
        TRANSPOSE,
        got.iter().enumerate().map(|(idx, &g)| {
            let (j, i) = (idx / 1024, idx % 1024);
            (idx, g, a[i * 1024 + j] as f32 as f64)
        }),
        0.0,
        0.0,
    );
    report(TRANSPOSE, err, &run, host);
}

/// A conv NEFF: name, spatial size, pooled, element type.
struct ConvNeff {
    name: &'static str,
    hw: (usize, usize),
    pool: bool,
    ty: Ty,
}

const fn conv(name: &'static str, hw: (usize, usize), pool: bool, ty: Ty) -> ConvNeff {
    ConvNeff { name, hw, pool, ty }
}

const SMALL: (usize, usize) = (32, 16);
const FULL: (usize, usize) = (224, 224);

const SMALLER_CONVS: [ConvNeff; 4] = [
    conv(
        "chenhzhu+asst4-trainium2--part2_profile_final_float16_smaller",
        SMALL,
        false,
        Ty::F16,
    ),
    conv(
        "chenhzhu+asst4-trainium2--part2_profile_final_float32_smaller",
        SMALL,
        false,
        Ty::F32,
    ),
    conv(
        "chenhzhu+asst4-trainium2--part2_profile_final_pool_float16_smaller",
        SMALL,
        true,
        Ty::F16,
    ),
    conv(
        "chenhzhu+asst4-trainium2--part2_profile_final_pool_float32_smaller",
        SMALL,
        true,
        Ty::F32,
    ),
];

const FULL_CONVS: [ConvNeff; 5] = [
    conv(
        "chenhzhu+asst4-trainium2--part2_profile_final_float16",
        FULL,
        false,
        Ty::F16,
    ),
    conv(
        "chenhzhu+asst4-trainium2--part2_profile_final_float32",
        FULL,
        false,
        Ty::F32,
    ),
    conv(
        "chenhzhu+asst4-trainium2--part2_profile_final_pool_float16",
        FULL,
        true,
        Ty::F16,
    ),
    conv(
        "chenhzhu+asst4-trainium2--part2_profile_final_pool_float32",
        FULL,
        true,
        Ty::F32,
    ),
    conv(
        "waahm7+asst4-trainium--part2_file_pool_1_float16",
        FULL,
        false,
        Ty::F16,
    ),
];

fn conv_seed(name: &str) -> u64 {
    match name {
        "X" => 4,
        "W" => 5,
        _ => 6,
    }
}

/// Runs a conv NEFF and checks it against the float64 conv (+ max-pool) at every output
/// (`samples` = None) or at that many seeded positions.
fn check_conv(c: &ConvNeff, samples: Option<usize>) {
    let Some(bytes) = neff(c.name) else { return };
    let g = Conv {
        c: 256,
        k: 256,
        h: c.hw.0,
        w: c.hw.1,
    };
    let inputs = |name: &str, d: Dtype, n: usize| ty(d).bytes(&uniform(conv_seed(name), n));
    let t0 = Instant::now();
    let run = execute(c.name, &bytes, &inputs, 1).remove(0);
    let host = t0.elapsed();
    let load = |name: &str, n: usize| -> Vec<f64> {
        uniform(conv_seed(name), n)
            .into_iter()
            .map(|v| c.ty.round(v))
            .collect()
    };
    let x = load("X", g.c * g.h * g.w);
    let wt = load("W", g.k * g.c * 9);
    let bias = load("bias", g.k);
    let (oh, ow) = if c.pool {
        (g.oh() / 2, g.ow() / 2)
    } else {
        (g.oh(), g.ow())
    };
    let got = c.ty.values(&run.outputs[0]);
    assert_eq!(got.len(), g.k * oh * ow, "{}: output size", c.name);
    let want = |idx: usize| {
        let (k, y, xx) = (idx / (oh * ow), idx / ow % oh, idx % ow);
        if c.pool {
            g.pooled_at(&x, &wt, &bias, k, y, xx)
        } else {
            g.at(&x, &wt, &bias, k, y, xx)
        }
    };
    let (rtol, atol) = match c.ty {
        Ty::F32 => (1e-5, 1e-5),
        Ty::F16 => (2e-3, 1e-3),
        Ty::Bf16 => panic!("the older set holds no bf16 tensor"),
    };
    let positions: Vec<usize> = match samples {
        None => (0..got.len()).collect(),
        Some(s) => uniform(7, s)
            .into_iter()
            .map(|u| (u * got.len() as f64) as usize)
            .collect(),
    };
    let err = check_close(
        c.name,
        positions.iter().map(|&i| (i, got[i], want(i))),
        rtol,
        atol,
    );
    report(c.name, err, &run, host);
}

#[test]
fn smaller_convs_match_the_float64_reference() {
    for c in &SMALLER_CONVS {
        check_conv(c, None);
    }
}

#[test]
fn full_size_convs_match_the_float64_reference() {
    for c in &FULL_CONVS {
        check_conv(c, Some(8192));
    }
}

#[test]
fn real_neffs_are_deterministic_across_runs_and_host_threads() {
    let names: Vec<&str> = STREAMS
        .iter()
        .copied()
        .chain([TRANSPOSE])
        .chain(SMALLER_CONVS.iter().map(|c| c.name))
        .collect();
    let inputs = |name: &str, d: Dtype, n: usize| ty(d).bytes(&uniform(conv_seed(name) + 10, n));
    for name in names {
        let Some(bytes) = neff(name) else { return };
        let runs = execute(name, &bytes, &inputs, 2);
        assert_eq!(runs[0].outputs, runs[1].outputs, "{name}: two runs differ");
        let single = &runs[0];
        let bytes = Arc::new(bytes);
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let b = bytes.clone();
                std::thread::spawn(move || execute(name, &b, &inputs, 1).remove(0))
            })
            .collect();
        for t in threads {
            let r = t.join().unwrap();
            assert_eq!(
                r.outputs, single.outputs,
                "{name}: outputs differ across host threads"
            );
            assert_eq!(
                r.cycles, single.cycles,
                "{name}: cycles differ across host threads"
            );
        }
    }
}

#[test]
fn run_prints_device_time_and_profile_prints_the_summary_keys() {
    let name = STREAMS[0];
    if neff(name).is_none() {
        return;
    }
    let path = folder().unwrap().join(format!("{name}.neff"));
    let run = nrt_emu_on(&["run"], &path).success("run");
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("cycles per iteration: nc0 "))
        .unwrap();
    let us: f64 = line
        .split('(')
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // The device-measured profile of this NEFF: total_time 26.417 µs (within 25%).
    assert!((us / 26.417 - 1.0).abs() < 0.25, "{line}");
    let out = nrt_emu_on(&["profile", "--json"], &path).success("profile");
    let v: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    for key in [
        "total_time",
        "total_active_time",
        "dma_transfer_time",
        "tensor_engine_active_time",
        "vector_engine_active_time",
        "scalar_engine_active_time",
        "gpsimd_engine_active_time",
        "sync_engine_active_time",
        "vector_engine_instruction_count",
        "hbm_read_bytes",
        "hbm_write_bytes",
        "dma_transfer_count",
    ] {
        assert!(v.get(key).is_some(), "{key} missing: {v}");
    }
    // What the device profile of this NEFF reports, the simulator reproduces exactly.
    assert_eq!(v["dma_transfer_count"], 6);
    assert_eq!(v["hbm_write_bytes"], 1_024_000);
    assert_eq!(v["dma_transfer_total_bytes"], 3_072_000);
    // The profile's total is its window — the engines' launch to the end of the runtime's
    // last instruction, as the device's profiled window — which `run`'s doorbell-to-completion
    // time contains, with the sequencer's block and start phases (about 2 µs) besides.
    let total = v["total_time"].as_f64().unwrap() * 1e6;
    assert!(total <= us && us - total < 3.0, "{total} vs {us} µs");
    assert!((total / 26.417 - 1.0).abs() < 0.25, "{total} µs");
}

#[test]
fn disasm_and_inspect_name_real_instructions_and_operands() {
    let Some(bytes) = neff(TRANSPOSE) else { return };
    let neff = nrt_emu::runtime::neff::Neff::parse(&bytes, &Default::default()).unwrap();
    let pe = nrt_emu::hal::isa::disassemble(neff.member("sg00/PE.bin").unwrap());
    // The profiler's names and operand syntax.
    assert!(
        pe.contains("0003: LDWEIGHTS S[8]>=16 fp32_mode=LOW transpose_mode=ENABLED src=fp32@0x"),
        "{pe}"
    );
    assert!(
        pe.contains("0004: MATMUL S[5]++@complete acc_flags=3 fp32_mode=LOW_HIGH"),
        "{pe}"
    );
    assert!(!pe.contains(".raw"), "every record decodes: {pe}");
    let path = folder().unwrap().join(format!("{TRANSPOSE}.neff"));
    let text = nrt_emu_on(&["inspect"], &path).stdout;
    assert!(text.contains("neuron encoding"), "{text}");
    assert!(text.contains("LDWEIGHTS 64, MATMUL 64"), "{text}");
    assert!(text.contains("(0 not executable here)"), "{text}");
}
