//! The development set of current-compiler NEFFs (`../shared/current-neffs/`, or the folder
//! named by `NRT_EMU_CURRENT_NEFFS`): compiler 2.23 output with DGE tables, engine-issued DMAs,
//! the new instructions, bf16 and activation functions (docs/neuron-isa.md §13). Without the
//! folder every test prints a skip line and passes.

#[path = "current_neffs/bad_input.rs"]
mod bad_input;
#[path = "current_neffs/disasm_profile.rs"]
mod disasm_profile;
#[path = "current_neffs/reading.rs"]
mod reading;
#[path = "current_neffs/reference.rs"]
mod reference;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use nrt_emu::floor::HostRates;
use nrt_emu::hal::{Dtype, Target};
use reference::{check_close, uniform, Ty};

use crate::support::{run_neff, Run};

/// The four attention kernels AWS's profiler recorded.
const ATTENTION: [&str; 4] = [
    "allenkchau+trainium-kernel-fusion--fused_bf16_s512",
    "allenkchau+trainium-kernel-fusion--baseline_bf16_s512",
    "allenkchau+trainium-kernel-fusion--fused_fp32_s512",
    "allenkchau+trainium-kernel-fusion--baseline_fp32_s512",
];

fn folder() -> Option<PathBuf> {
    let dir = std::env::var_os("NRT_EMU_CURRENT_NEFFS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/current-neffs")
        });
    dir.is_dir().then_some(dir)
}

/// A file of the folder, or `None` after printing a skip line.
fn read(rel: &str) -> Option<Vec<u8>> {
    let Some(dir) = folder() else {
        println!("SKIP current-neffs: folder not found (set NRT_EMU_CURRENT_NEFFS or put it at ../shared/current-neffs)");
        return None;
    };
    let path = dir.join(rel);
    match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(e) => {
            println!("SKIP {rel}: {}: {e}", path.display());
            None
        }
    }
}

#[test]
fn disassembly_of_every_attention_record_matches_the_device_profile() {
    for name in ATTENTION {
        let (Some(neff), Some(prof)) = (
            read(&format!("{name}.neff")),
            read(&format!("profiles/{name}.profile.json")),
        ) else {
            continue;
        };
        let profile: serde_json::Value = serde_json::from_slice(&prof).unwrap();
        let o = disasm_profile::compare(&neff, &profile);
        println!(
            "{name}: {} records compared, pc offsets {:?}, {} opcode and {} operand differences",
            o.compared,
            o.offsets,
            o.opcode_diffs.len(),
            o.operand_diffs.len()
        );
        for d in o.opcode_diffs.iter().chain(&o.operand_diffs) {
            println!("  {d}");
        }
        assert!(o.compared > 0);
        assert!(
            o.opcode_diffs.is_empty() && o.operand_diffs.is_empty(),
            "{name}: see the differences above"
        );
    }
}

const MATMUL: &str = "aws-neuron+nkipy--matmul_small";
const MOE: &str = "KevGomes1403+nki-moe-megakernel--moe_tkg_v6b";
const ATTN_TKG: &str = "KevGomes1403+nki-moe-megakernel--attn_tkg_v6";

/// Inputs of a NEFF, by name: (input name, dtype, element count) → bytes.
type Inputs = dyn Fn(&str, Dtype, usize) -> Vec<u8> + Send + Sync;

fn ty(d: Dtype) -> Ty {
    match d {
        Dtype::F32 => Ty::F32,
        Dtype::F16 => Ty::F16,
        Dtype::Bf16 => Ty::Bf16,
        other => panic!("unexpected dtype {other}"),
    }
}

/// Input `name`'s values: seeded per name, `lo..hi`, rounded to `d`.
fn values(name: &str, d: Dtype, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    let seed = name
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    let t = ty(d);
    uniform(seed, n, lo, hi)
        .into_iter()
        .map(|v| t.round(v))
        .collect()
}

fn attention_inputs(name: &str, d: Dtype, n: usize) -> Vec<u8> {
    ty(d).bytes(&values(name, d, n, 0.0, 1.0))
}

/// The MoE's expert ids: eight distinct ones, the first and the last expert among them.
const EXPERTS: [i32; 8] = [0, 127, 5, 64, 33, 99, 12, 80];

fn moe_inputs(name: &str, d: Dtype, n: usize) -> Vec<u8> {
    match name {
        "input1" => EXPERTS.iter().flat_map(|e| e.to_le_bytes()).collect(),
        "input0" => ty(d).bytes(&values(name, d, n, 0.0, 1.0)),
        "input4" => ty(d).bytes(&values(name, d, n, -1.0, 1.0)),
        // The expert weights: small, so that sums of 2048 products stay near 1.
        _ => ty(d).bytes(&values(name, d, n, -0.05, 0.05)),
    }
}

fn attn_tkg_inputs(name: &str, d: Dtype, n: usize) -> Vec<u8> {
    if d == Dtype::I32 {
        return vec![0; n * 4]; // the position, never read
    }
    let (lo, hi) = match name {
        "input1" | "input2" => (-1.0, 1.0),              // sin, cos
        "input3" | "input4" => (-1.0, 1.0),              // the caches
        "input5" | "input6" => (0.9, 1.1),               // RMSNorm weights
        "input7" | "input8" | "input9" => (-0.04, 0.04), // projections
        _ => (-1.0, 1.0),                                // hidden
    };
    ty(d).bytes(&values(name, d, n, lo, hi))
}

/// Runs `name` twice on trn2 and prints the second (warm) execution's host time next to its
/// floor; returns the first.
fn execute(name: &str, neff: &[u8], inputs: &Inputs) -> Run {
    let mut runs = run_neff(Target::Trn2, neff, inputs, 2);
    report_speed(name, &runs[1], runs[1].host);
    runs.remove(0)
}

fn report_speed(name: &str, run: &Run, host: Duration) {
    let rates = HostRates::measure();
    let floor = rates.floor_secs(run.work.0, run.work.1);
    println!(
        "current-neff {name}: {} cycles ({:.1} µs) on nc0; host {:.2} ms per execution vs floor \
         {:.3} ms ({} PE MACs at {:.1} GMAC/s + {} DMA bytes at {:.1} GB/s)",
        run.cycles[0],
        nrt_emu::sim::device_time_us(Target::Trn2, run.cycles[0]),
        host.as_secs_f64() * 1e3,
        floor * 1e3,
        run.work.0,
        rates.sgemm_macs_per_sec / 1e9,
        run.work.1,
        rates.memcpy_bytes_per_sec / 1e9
    );
}

/// Checks `got` against `want` element by element within `share` of the largest `|want|`, and
/// reports the errors.
fn check_within_share_of_max(name: &str, got: &[f64], want: &[f64], share: f64) {
    let max = want.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let pairs = got.iter().zip(want).enumerate();
    let err = check_close(name, pairs.map(|(i, (&g, &w))| (i, g, w)), 0.0, share * max);
    report(name, err);
}

fn report(name: &str, err: (f64, f64)) {
    println!(
        "current-neff {name}: max |err| {:.3e} (÷ max |ref| {:.3e} = {:.2e})",
        err.0,
        err.1,
        err.0 / err.1.max(f64::MIN_POSITIVE)
    );
}

/// The seven NEFFs with their inputs.
fn inputs_of(name: &str) -> &'static Inputs {
    match name {
        MOE => &moe_inputs,
        ATTN_TKG => &attn_tkg_inputs,
        _ => &attention_inputs,
    }
}

#[test]
fn attention_kernels_compute_softmax_attention() {
    for name in ATTENTION {
        let Some(neff) = read(&format!("{name}.neff")) else {
            return;
        };
        let run = execute(name, &neff, &attention_inputs);
        let d = if name.contains("bf16") {
            Dtype::Bf16
        } else {
            Dtype::F32
        };
        let n = 128 * 512;
        let (q, k, v) = (
            values("q_ref", d, n, 0.0, 1.0),
            values("k_ref", d, n, 0.0, 1.0),
            values("v_ref", d, n, 0.0, 1.0),
        );
        let want = reference::attention(&q, &k, &v, 128, 512);
        let got = ty(d).values(&run.outputs[0]);
        // fp32: every step is fp32 (softmax sums of 512, products of 128 and 512 terms): a
        // few hundred fp32 ulps of the result at most. bf16: the kernel rounds P to bf16
        // before P·Vᵀ and the output to bf16 (8 significant bits): two bf16 roundings.
        let (rtol, atol) = if d == Dtype::F32 {
            (2e-5, 2e-6)
        } else {
            (8e-3, 4e-3)
        };
        let err = check_close(
            name,
            got.iter()
                .copied()
                .zip(want)
                .enumerate()
                .map(|(i, (g, w))| (i, g, w)),
            rtol,
            atol,
        );
        report(name, err);
    }
}

#[test]
fn nkipy_matmul_splits_the_output_over_both_cores() {
    let Some(neff) = read(&format!("{MATMUL}.neff")) else {
        return;
    };
    let run = execute(MATMUL, &neff, &attention_inputs);
    let x = values("x", Dtype::F16, 128 * 256, 0.0, 1.0);
    let y = values("y", Dtype::F16, 256 * 128, 0.0, 1.0);
    let want = reference::matmul(&x, &y, 128, 256, 128);
    let got = Ty::F16.values(&run.outputs[0]);
    // fp32 accumulation of exact fp16 products, one rounding to fp16 (half an ulp: 2^-11).
    let err = check_close(
        MATMUL,
        got.iter()
            .copied()
            .zip(want)
            .enumerate()
            .map(|(i, (g, w))| (i, g, w)),
        1e-3,
        1e-3,
    );
    report(MATMUL, err);
    // Both physical cores ran a program of the same size (each computes half the columns); the
    // runtime's instructions around it differ by the core's role in the pair (docs/simulator.md
    // §7.6), so their times agree within a tenth, not to the cycle.
    assert_eq!(run.cycles.len(), 2);
    let (a, b) = (run.cycles[0] as f64, run.cycles[1] as f64);
    assert!((a - b).abs() <= 0.1 * a.max(b), "{:?}", run.cycles);
}

#[test]
fn moe_selects_each_expert_by_the_id_it_reads() {
    let Some(neff) = read(&format!("{MOE}.neff")) else {
        return;
    };
    let run = execute(MOE, &neff, &moe_inputs);
    let (e, h, i) = (128usize, 2048usize, 256usize);
    let w = values("input0", Dtype::F32, 8, 0.0, 1.0);
    let down = values("input2", Dtype::Bf16, e * i * h, -0.05, 0.05);
    let gate_up = values("input3", Dtype::Bf16, e * h * 2 * i, -0.05, 0.05);
    let hidden = values("input4", Dtype::Bf16, h, -1.0, 1.0);
    let ids: Vec<usize> = EXPERTS.iter().map(|&x| x as usize).collect();
    let want = reference::moe(
        &w,
        &ids,
        &hidden,
        &|x, r, c| gate_up[(x * h + r) * 2 * i + c],
        &|x, r, c| down[(x * i + r) * h + c],
        (h, i),
    );
    let got = Ty::Bf16.values(&run.outputs[0]);
    // bf16 throughout (8 significant bits): the kernel rounds the gate-up product, the SiLU
    // product, each weighted expert output and the sum; each rounding is ≤ 2^-9 of its value,
    // and sums of 2048 and 256 products of mixed sign make the error relative to the largest
    // output — allow 2% of it.
    check_within_share_of_max(MOE, &got, &want, 0.02);
}

#[test]
fn kv_cache_attention_reads_its_blocks_transposed() {
    let Some(neff) = read(&format!("{ATTN_TKG}.neff")) else {
        return;
    };
    let run = execute(ATTN_TKG, &neff, &attn_tkg_inputs);
    let b = Dtype::Bf16;
    let get = |n: &str, len: usize| {
        let (lo, hi) = match n {
            "input5" | "input6" => (0.9, 1.1),
            "input7" | "input8" | "input9" => (-0.04, 0.04),
            _ => (-1.0, 1.0),
        };
        values(n, b, len, lo, hi)
    };
    let (sin, cos) = (get("input1", 128), get("input2", 128));
    let (vc, kc) = (get("input3", 4 * 640 * 128), get("input4", 4 * 640 * 128));
    let (kn, qn) = (get("input5", 128), get("input6", 128));
    let (wv, wk, wq) = (
        get("input7", 512 * 2048),
        get("input8", 512 * 2048),
        get("input9", 1024 * 2048),
    );
    let hidden = get("input10", 2048);
    let want = reference::attn_tkg(&reference::AttnTkg {
        sin: &sin,
        cos: &cos,
        v_cache: &vc,
        k_cache: &kc,
        k_norm: &kn,
        q_norm: &qn,
        wv: &wv,
        wk: &wk,
        wq: &wq,
        hidden: &hidden,
    });
    let got = Ty::Bf16.values(&run.outputs[0]);
    // bf16 inputs and output; the program keeps squares, q, exp values and the output in
    // bf16 (docs/neuron-isa.md §13): allow 2% of the largest output.
    check_within_share_of_max(ATTN_TKG, &got, &want, 0.02);
}

#[test]
fn current_neffs_are_deterministic_across_runs_and_host_threads() {
    for name in ATTENTION.into_iter().chain([MATMUL, ATTN_TKG, MOE]) {
        let Some(neff) = read(&format!("{name}.neff")) else {
            return;
        };
        let inputs = inputs_of(name);
        let runs = run_neff(Target::Trn2, &neff, inputs, 2);
        // The first execution also reloads the sequencer configuration and the ACT/DVE tables
        // (docs/simulator.md §7.4): its cycles differ from the second's, its outputs may not.
        assert_eq!(runs[0].outputs, runs[1].outputs, "{name}: two runs differ");
        // Eight host threads at once (two for the MoE, whose weights are 400 MB).
        let threads = if name == MOE { 2 } else { 8 };
        let neff = Arc::new(neff);
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                let n = neff.clone();
                std::thread::spawn(move || run_neff(Target::Trn2, &n, inputs, 1).remove(0))
            })
            .collect();
        for h in handles {
            assert_eq!(
                h.join().unwrap(),
                runs[0],
                "{name}: a host thread's run differs"
            );
        }
    }
}
