//! Creating a simulator of each target (issue 15 goal 5: under 1 ms, and no more memory than it
//! uses). SBUF and PSUM are materialised page by page on first write (docs/simulator.md §2.4),
//! so a fresh simulator commits none of its on-chip memory (8 × 30 MiB on trn2). The closing
//! `summary:` line gives the median creation time (create + drop, measured directly) and the
//! on-chip bytes a fresh simulator has committed next to the bytes it has.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use nrt_emu::hal::Target;
use nrt_emu::sim::{Sim, SimConfig};

fn create(target: Target) -> Sim {
    Sim::new(SimConfig::new(target))
}

fn sim_creation(c: &mut Criterion) {
    let mut g = c.benchmark_group("sim_creation_per_target");
    g.measurement_time(Duration::from_secs(5));
    for target in Target::ALL {
        g.bench_function(target.name(), |b| b.iter(|| black_box(create(target))));
    }
    g.finish();
    let mut parts = Vec::new();
    for target in Target::ALL {
        let mut runs: Vec<Duration> = (0..101)
            .map(|_| {
                let t = Instant::now();
                drop(black_box(create(target)));
                t.elapsed()
            })
            .collect();
        runs.sort();
        let sim = create(target);
        let spec = target.spec();
        let onchip = u64::from(spec.nc_count)
            * (spec.sbuf.total_bytes()
                + u64::from(spec.psum.partitions) * u64::from(spec.psum.partition_bytes));
        let committed = sim
            .onchip_committed_bytes()
            .map_or("unknown".to_string(), |b| format!("{b} bytes"));
        parts.push(format!(
            "{} {:.1} µs (on-chip memory committed after creation: {committed} of {} MiB)",
            target.name(),
            runs[runs.len() / 2].as_secs_f64() * 1e6,
            onchip >> 20
        ));
    }
    println!(
        "sim_creation_per_target summary: Sim::new + drop, median of 101: {}; goal < 1000 µs",
        parts.join("; ")
    );
}

criterion_group!(benches, sim_creation);
criterion_main!(benches);
