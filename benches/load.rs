//! Loading a NEFF that carries 256 MiB of weights to READY on the simulator, side by side with
//! the floor of the same work — gunzip the payload, MD5 it, copy the weights once, one after the
//! other on one thread — in the same run. The load checks the hash (`NEURON_RT_VALIDATE_HASH`
//! on), so both do the same work; the runtime overlaps the hash with the inflate on a second
//! thread and inflates straight into the member buffers. Goal (issue 15): load ≤ 1.0 × the
//! floor, stretch 0.8 ×. The closing `ratio:` line is measured directly, with the load without
//! the hash check next to it.

use std::hint::black_box;
use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use md5::{Digest, Md5};
use nrt_emu::hal::{Dtype, EngineKind, Hal, Target};
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::Runtime;
use nrt_emu::sim::{Sim, SimConfig};
use nrt_fixtures::compiler::{IoDecl, NeffModel, SubgraphBuilder};

const WEIGHTS: usize = 256 << 20;

/// A one-core model whose only large member is a 256 MiB fp32 constant.
fn big_neff() -> Vec<u8> {
    let x = IoDecl::new("x", Dtype::F32, &[128, 4]);
    let y = IoDecl::new("y", Dtype::F32, &[128, 4]);
    let mut g = SubgraphBuilder::new(0);
    g.input(&x);
    g.output(&y);
    // Incompressible-ish data, like real weights.
    let mut s = 0x1234_5678u32;
    let data: Vec<u8> = (0..WEIGHTS)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s >> 3) as u8
        })
        .collect();
    g.constant("w", Dtype::F32, &[WEIGHTS / 4 / 1024, 1024], data);
    for e in EngineKind::ALL {
        g.push(e, nrt_emu::hal::isa::Instruction::End);
    }
    NeffModel::new(
        "big_weights",
        Target::Trn1,
        vec![x],
        vec![y],
        vec![g.finish()],
    )
    .to_neff()
}

fn load_once(neff: &[u8], validate_hash: bool) -> (Arc<Sim>, Runtime) {
    let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn1)));
    let cfg = RuntimeConfig {
        validate_hash,
        ..RuntimeConfig::default()
    };
    let rt = Runtime::new(sim.clone() as Arc<dyn Hal>, cfg).unwrap();
    rt.load(neff, 0).unwrap();
    (sim, rt)
}

/// The floor: inflate the payload, MD5 it, copy the weights once.
fn floor(neff: &[u8], dst: &mut [u8]) {
    let payload = &neff[1024..];
    let mut out = Vec::with_capacity(WEIGHTS + (1 << 20));
    flate2::read::GzDecoder::new(payload)
        .read_to_end(&mut out)
        .unwrap();
    black_box(Md5::digest(payload));
    dst.copy_from_slice(&out[out.len() - WEIGHTS - 1024..out.len() - 1024]);
    black_box(&dst);
}

fn bench(c: &mut Criterion) {
    let neff = big_neff();
    let mut dst = vec![0u8; WEIGHTS];
    let mut g = c.benchmark_group("load_256mib");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.throughput(Throughput::Bytes(WEIGHTS as u64));
    g.bench_function("runtime_load_to_ready", |b| {
        b.iter_batched(|| (), |_| load_once(&neff, true), BatchSize::PerIteration)
    });
    g.bench_function("gunzip_hash_copy", |b| b.iter(|| floor(&neff, &mut dst)));
    g.finish();
    let mut load = Duration::MAX;
    let mut unhashed = Duration::MAX;
    let mut base = Duration::MAX;
    for _ in 0..3 {
        for (hash, best) in [(true, &mut load), (false, &mut unhashed)] {
            let t = Instant::now();
            let kept = load_once(&neff, hash);
            *best = (*best).min(t.elapsed());
            drop(kept);
        }
        let t = Instant::now();
        floor(&neff, &mut dst);
        base = base.min(t.elapsed());
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "load_256mib ratio: load to READY with the hash check {:.0} ms vs serial gunzip+MD5+copy {:.0} ms = {:.2}x (goal <= 1.0x, stretch 0.8x); without the hash check {:.0} ms = {:.2}x",
        ms(load),
        ms(base),
        load.as_secs_f64() / base.as_secs_f64(),
        ms(unhashed),
        unhashed.as_secs_f64() / base.as_secs_f64()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
