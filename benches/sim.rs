//! Simulator speed, side by side with the physical limit of the same host in the same run.
//!
//! - `dma_64mib`: a 64 MiB HBM → HBM copy through 1024 descriptor pairs of 64 KiB, next to a
//!   plain `memcpy` of the same bytes (goal: at least half of memcpy's bandwidth);
//! - `dma_4byte`: 65,520 four-byte descriptor pairs (goal: ≥ 10 M descriptors/s);
//! - `device_cycles`: simulated device cycles per host second on a DMA-bound and on a
//!   compute-bound program.
//!
//! Each group ends with a line `ratio: …` / `rate: …` computed from a direct timing of the same
//! operations, so the comparison is in the output, not only in criterion's report.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use nrt_emu::hal::isa::Instruction;
use nrt_emu::hal::udma::M2mCopy;
use nrt_emu::hal::{Dtype, EngineKind, Hal, NcIndex, Target};
use nrt_emu::sim::testkit::{Dev, Exec, Queue};

const NC0: NcIndex = NcIndex(0);
const MIB64: u64 = 64 << 20;

/// A device with a 64 MiB copy staged on one queue, ready to start.
fn staged_64mib() -> (Dev, Queue, u32) {
    let dev = Dev::new(Target::Trn1);
    let mut q = Queue::at(&dev, 0, 1, 0, 1024);
    let src = dev.alloc(NC0, MIB64);
    let dst = dev.alloc(NC0, MIB64);
    // Touch both buffers so page faults are not part of the measurement (as for memcpy).
    dev.sim.memset(src, 0, 0x5a, MIB64).unwrap();
    dev.sim.memset(dst, 0, 0, MIB64).unwrap();
    let n = q.push(&dev, M2mCopy::new(dev.pa(src), dev.pa(dst), MIB64));
    (dev, q, n)
}

/// A device with `n` 4-byte copies staged on one queue.
fn staged_4byte(n: u32) -> (Dev, Queue, u32) {
    let dev = Dev::new(Target::Trn1);
    let count = (n + 16).next_multiple_of(16);
    let mut q = Queue::at(&dev, 0, 1, 0, count);
    let buf = dev.alloc(NC0, 8 << 20);
    dev.sim.memset(buf, 0, 1, 8 << 20).unwrap();
    let base = dev.pa(buf);
    let mut pushed = 0;
    for i in 0..n as u64 {
        let s = base.checked_add((i * 8) % (4 << 20)).unwrap();
        let d = base.checked_add((4 << 20) + (i * 8) % (4 << 20)).unwrap();
        pushed += q.push(&dev, M2mCopy::new(s, d, 4));
    }
    (dev, q, pushed)
}

fn run(dev: &Dev, q: &Queue, n: u32) -> u64 {
    q.start(dev, n);
    dev.sim.run_until_idle()
}

fn dma_64mib(c: &mut Criterion) {
    let mut g = c.benchmark_group("dma_64mib");
    g.throughput(Throughput::Bytes(MIB64));
    g.sample_size(10);
    g.bench_function("sim_descriptors", |b| {
        b.iter_batched(
            staged_64mib,
            |(dev, q, n)| (run(&dev, &q, n), dev, q),
            BatchSize::PerIteration,
        )
    });
    let src = vec![0x5au8; MIB64 as usize];
    let mut dst = vec![0u8; MIB64 as usize];
    g.bench_function("memcpy", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&dst);
        })
    });
    g.finish();
    // Direct side-by-side timing for the ratio line.
    let mut sim_t = Duration::MAX;
    let mut cpy_t = Duration::MAX;
    for _ in 0..5 {
        let (dev, q, n) = staged_64mib();
        let t = Instant::now();
        run(&dev, &q, n);
        sim_t = sim_t.min(t.elapsed());
        let t = Instant::now();
        dst.copy_from_slice(black_box(&src));
        black_box(&dst);
        cpy_t = cpy_t.min(t.elapsed());
    }
    let gib = |d: Duration| MIB64 as f64 / d.as_secs_f64() / (1u64 << 30) as f64;
    println!(
        "dma_64mib ratio: simulator {:.2} GiB/s vs memcpy {:.2} GiB/s = {:.2} of memcpy",
        gib(sim_t),
        gib(cpy_t),
        cpy_t.as_secs_f64() / sim_t.as_secs_f64()
    );
}

fn dma_4byte(c: &mut Criterion) {
    const N: u32 = 65_520;
    let mut g = c.benchmark_group("dma_4byte");
    g.throughput(Throughput::Elements(N as u64));
    g.sample_size(10);
    g.bench_function("sim_descriptors", |b| {
        b.iter_batched(
            || staged_4byte(N),
            |(dev, q, n)| (run(&dev, &q, n), dev, q),
            BatchSize::PerIteration,
        )
    });
    g.finish();
    let mut best = Duration::MAX;
    for _ in 0..5 {
        let (dev, q, n) = staged_4byte(N);
        let t = Instant::now();
        run(&dev, &q, n);
        best = best.min(t.elapsed());
    }
    println!(
        "dma_4byte rate: {:.1} M descriptors/s",
        N as f64 / best.as_secs_f64() / 1e6
    );
}

/// A PE program of `reps` 128×128×512 fp32 matmuls into PSUM.
fn compute_program(dev: &Dev, reps: usize) -> nrt_emu::hal::DeviceAddr {
    let ap = |off: u32, n: u16| nrt_emu::hal::testkit::ops::sbuf(0, 128, off, Dtype::F32, n);
    let psum = nrt_emu::hal::testkit::ops::psum(0, 128, 0, Dtype::F32, 512);
    let mut p = vec![
        Instruction::StreamHeader,
        Instruction::MatmulLoadStationary {
            reversed: false,
            pass: nrt_hal::isa::MatmulPass::Single,
            stationary: ap(0, 128),
        },
    ];
    for _ in 0..reps {
        p.push(Instruction::MatmulMoving {
            dst: psum,
            moving: ap(0x1000, 512),
            accumulate: true,
        });
    }
    p.push(Instruction::End);
    dev.program(NC0, &p)
}

fn device_cycles(c: &mut Criterion) {
    let mut g = c.benchmark_group("device_cycles");
    g.sample_size(10);
    // DMA-bound: the 64 MiB copy.
    g.bench_function("dma_bound", |b| {
        b.iter_batched(
            staged_64mib,
            |(dev, q, n)| (run(&dev, &q, n), dev, q),
            BatchSize::PerIteration,
        )
    });
    // Compute-bound: one execution of 16 matmuls.
    let setup = || {
        let dev = Dev::new(Target::Trn1);
        let exec = Exec::new(&dev, NC0);
        let prog = compute_program(&dev, 16);
        (dev, exec, prog)
    };
    g.bench_function("compute_bound", |b| {
        b.iter_batched(
            setup,
            |(dev, mut exec, prog)| {
                exec.submit(&dev, &[(EngineKind::Pe, prog)], true, true, &[]);
                (exec.wait(&dev), dev, exec)
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
    let (dev, q, n) = staged_64mib();
    let t = Instant::now();
    let cycles = run(&dev, &q, n);
    let dma = cycles as f64 / t.elapsed().as_secs_f64();
    let (dev, mut exec, prog) = setup();
    let t0 = dev.sim.now();
    let t = Instant::now();
    exec.submit(&dev, &[(EngineKind::Pe, prog)], true, true, &[]);
    exec.wait(&dev);
    let compute = (dev.sim.now() - t0) as f64 / t.elapsed().as_secs_f64();
    println!(
        "device_cycles rate: dma-bound {:.3e} cycles/s ({} cycles), compute-bound {:.3e} cycles/s ({} cycles)",
        dma,
        cycles,
        compute,
        dev.sim.now() - t0
    );
}

criterion_group!(benches, dma_64mib, dma_4byte, device_cycles);
criterion_main!(benches);
