//! The simulator's host time for one full-size real conv NEFF
//! (`chenhzhu+asst4-trainium2--part2_profile_final_float32`: conv2d 256→256 channels, 3×3, on
//! 224×224, fp32 — 29 GMAC as 3 996 PE matmuls of 128×128 by 128×444, each issued as an fp32
//! pass-1/pass-2 pair), next to the same arithmetic as plain single-threaded `sgemm` calls of
//! the same shapes (`matrixmultiply`, the crate the simulator's PE uses). Goal: within 2×.
//!
//! The NEFF is read from `NRT_EMU_REAL_NEFFS` or `../shared/real-neffs`; without it the bench
//! prints a skip line. It ends with a `summary:` line measured directly.

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use nrt_emu::hal::{Hal, Target};
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::tensor::TensorSet;
use nrt_emu::runtime::{ModelId, Runtime};
use nrt_emu::sim::{Sim, SimConfig};

#[path = "support/mod.rs"]
mod support;

const NEFF: &str = "chenhzhu+asst4-trainium2--part2_profile_final_float32";
/// PE matmuls of the conv: 111 two-row tiles × 2 output-channel tiles × (9 taps × 2 input
/// tiles).
const MATMULS: usize = 111 * 2 * 18;
const K: usize = 128;
const M: usize = 128;
const N: usize = 444;

fn neff() -> Option<Vec<u8>> {
    let dir = std::env::var_os("NRT_EMU_REAL_NEFFS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/real-neffs"));
    std::fs::read(dir.join(format!("{NEFF}.neff"))).ok()
}

struct Loaded {
    rt: Runtime,
    id: ModelId,
    ins: TensorSet,
    outs: TensorSet,
}

fn load(bytes: &[u8]) -> Loaded {
    let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn2)));
    let rt = Runtime::new(sim as Arc<dyn Hal>, RuntimeConfig::default()).unwrap();
    let id = rt.load(bytes, -1).unwrap();
    let (ins, outs) = support::bind_io(&rt, id, |t| {
        (0..t.size / 4)
            .flat_map(|i| ((i % 1000) as f32 / 1000.0).to_le_bytes())
            .collect()
    });
    Loaded { rt, id, ins, outs }
}

/// The conv's arithmetic alone: `MATMULS` products `out[M×N] = sᵀ·x` with `s: K×M`, `x: K×N`.
fn sgemm_all(s: &[f32], x: &[f32], out: &mut [f32]) {
    for _ in 0..MATMULS {
        // SAFETY: the buffers hold K·M, K·N and M·N elements, matching the shapes and strides
        // (sᵀ: row stride 1, column stride M; x and out row-major), and `out` is exclusive.
        unsafe {
            matrixmultiply::sgemm(
                M,
                K,
                N,
                1.0,
                s.as_ptr(),
                1,
                M as isize,
                x.as_ptr(),
                N as isize,
                1,
                0.0,
                out.as_mut_ptr(),
                N as isize,
                1,
            );
        }
        black_box(&*out);
    }
}

fn bench(c: &mut Criterion) {
    let Some(bytes) = neff() else {
        println!("SKIP real_conv: {NEFF}.neff not found (set NRT_EMU_REAL_NEFFS or put it at ../shared/real-neffs)");
        return;
    };
    let l = load(&bytes);
    let s = vec![0.5f32; K * M];
    let x = vec![0.25f32; K * N];
    let mut out = vec![0.0f32; M * N];
    let mut g = c.benchmark_group("real_conv");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("simulator: final_float32 (224x224)", |b| {
        b.iter(|| l.rt.execute(l.id, &l.ins, &l.outs).unwrap())
    });
    g.bench_function("sgemm: 3996 x (128x128 by 128x444)", |b| {
        b.iter(|| sgemm_all(&s, &x, &mut out))
    });
    g.finish();
    let time = |f: &mut dyn FnMut()| {
        let t = Instant::now();
        for _ in 0..3 {
            f();
        }
        t.elapsed() / 3
    };
    let sim = time(&mut || {
        l.rt.execute(l.id, &l.ins, &l.outs).unwrap();
    });
    let blas = time(&mut || sgemm_all(&s, &x, &mut out));
    println!(
        "summary: simulator {:.3} s per execution of {NEFF}, sgemm of the same shapes {:.3} s, ratio {:.2}x (goal <= 2x)",
        sim.as_secs_f64(),
        blas.as_secs_f64(),
        sim.as_secs_f64() / blas.as_secs_f64()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
