//! The execute path's hot spots, on the simulator:
//!
//! - `async_submit`: the cost of one `execute_async` call alone (goal < 1 µs). The executions
//!   are waited for in batches outside the timed region (`iter_custom`). Two HALs:
//!   - `sim`: the simulator itself. A submit's HAL calls (descriptor and request copies, one
//!     completion-count read per core, the doorbell) run in the simulator (copies on its
//!     memory, the read and the doorbell under the core's clock-domain lock), each
//!     state-changing call also waking sleeping waits; the worker's `wait` is held back during
//!     the timed region so it does not run the device (and hold that lock) while the submits
//!     are timed.
//!   - `noop`: the same runtime, but copies and doorbells are only recorded (a `memcpy` into a
//!     preallocated log under an uncontended mutex) and replayed into the simulator after the
//!     timed region; `semaphore_read` still reads the simulator. This is the runtime's share.
//! - `sync_round_trip`: one sync `execute` (bind, stage, doorbell, simulate, harvest) of the
//!   smallest zoo model, `transpose` (x: f32[64, 32], 8 KiB in and out), and of `add`
//!   (a, b: f32[128, 512], 256 KiB each; out 256 KiB) — goal < 10 µs.
//! - `mlp2`: executions per second of `mlp2` (trn1), sync, and async with 8 in flight.
//! - `two_cores`: two `mlp2` models on cores 0 and 1 of one trn1 device, executed one after the
//!   other from one thread, and in parallel from two threads (goal: about 2× faster).
//! - `lnc2_threads`: the LNC=2 model `lnc2_add` (trn2, two cores), its executions driven from
//!   one host thread, and from two threads at once.
//! - `host_over_sim`: per executable zoo model, host time of one sync execution over the
//!   simulated device time of that execution (a warm execution's cycles at the sequencer
//!   clock; goal ≤ 3×).
//!   Next to each, the physical floor, the host time no exact simulator can go below: the
//!   execution's PE multiply-accumulates
//!   ([`ExecProfile::pe_macs`](nrt_emu::sim::profile::ExecProfile::pe_macs), summed over the
//!   device's cores) at the host's own f32 sgemm rate (the simulator's matmul crate, measured
//!   once on a full PE tile), plus the bytes its DMA moved
//!   ([`ExecProfile::dma_bytes`](nrt_emu::sim::profile::ExecProfile::dma_bytes)) at the
//!   host's memcpy rate (measured on 1 MiB copies): the device's HBM and DMA rings move
//!   hundreds of GB/s, the host copies tens.
//! - `current_neffs`: one sync execution of each current-compiler NEFF (the folder
//!   `$NRT_EMU_CURRENT_NEFFS`, else `../shared/current-neffs`; skipped with a printed line
//!   without it) on the trn2 simulator, with its floor (as `host_over_sim`'s) printed next to
//!   it (goal: within 2× of the floor). Inputs are seeded (`nrt_emu::sim::values::
//!   seeded_input`), except integer ones, the MoE's expert ids, which get eight distinct ids.
//!
//! Each group ends with a `summary:` line measured directly, so the figures are in the output,
//! not only in criterion's report.

use std::collections::VecDeque;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use nrt_emu::hal::hal::WaitCondition;
use nrt_emu::hal::{Hal, HalResult, MemHandle, NcIndex, SemaphoreId, Target};
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::exec::worker::ExecRequest;
use nrt_emu::runtime::tensor::{Placement, TensorSet};
use nrt_emu::runtime::{ModelId, Runtime};
use nrt_emu::sim::{Sim, SimConfig};
use nrt_fixtures::{zoo, ZooModel, GOLDEN_SEED};

#[path = "support/mod.rs"]
mod support;

const WAIT: Duration = Duration::from_secs(30);
/// Submits timed back to back before the batch is waited for (≤ 64: the request slots).
const BATCH: u64 = 32;

// ---------------------------------------------------------------------------------------------
// A HAL over the simulator that can hold back waits and record copies and doorbells.
// ---------------------------------------------------------------------------------------------

/// Largest copy the record mode keeps (descriptors are 16 bytes, exec requests 56).
const MAX_RECORDED_COPY: usize = 256;

// Inline buffers keep recording allocation-free inside the timed region.
#[allow(clippy::large_enum_variant)]
enum Op {
    Copy {
        handle: MemHandle,
        offset: u64,
        len: usize,
        data: [u8; MAX_RECORDED_COPY],
    },
    Increment {
        nc: NcIndex,
        sem: SemaphoreId,
        amount: u32,
    },
}

struct BenchHal {
    inner: Arc<Sim>,
    /// While true, `wait` blocks before reaching the simulator.
    held: Mutex<bool>,
    released: Condvar,
    /// While true, `copy_to_device` and `semaphore_increment` are recorded, not performed.
    recording: AtomicBool,
    log: Mutex<Vec<Op>>,
}

impl BenchHal {
    fn new(target: Target) -> Arc<Self> {
        Arc::new(BenchHal {
            inner: Arc::new(Sim::new(SimConfig::new(target))),
            held: Mutex::new(false),
            released: Condvar::new(),
            recording: AtomicBool::new(false),
            log: Mutex::new(Vec::with_capacity(1 << 16)),
        })
    }

    /// Holds back (`true`) or lets through (`false`) every `wait`.
    fn hold(&self, on: bool) {
        *self.held.lock().unwrap() = on;
        if !on {
            self.released.notify_all();
        }
    }

    fn record(&self, on: bool) {
        self.recording.store(on, Ordering::SeqCst);
    }

    /// Performs every recorded call on the simulator, in order.
    fn replay(&self) {
        let mut log = self.log.lock().unwrap();
        for op in log.drain(..) {
            match op {
                Op::Copy {
                    handle,
                    offset,
                    len,
                    data,
                } => self
                    .inner
                    .copy_to_device(handle, offset, &data[..len])
                    .unwrap(),
                Op::Increment { nc, sem, amount } => {
                    self.inner.semaphore_increment(nc, sem, amount).unwrap()
                }
            }
        }
    }
}

impl nrt_emu::hal::HalLayer for BenchHal {
    type Inner = Sim;
    fn inner(&self) -> &Sim {
        &self.inner
    }
    fn copy_to_device(&self, handle: MemHandle, offset: u64, src: &[u8]) -> HalResult<()> {
        if self.recording.load(Ordering::Relaxed) {
            assert!(src.len() <= MAX_RECORDED_COPY, "a {}-byte copy", src.len());
            let mut data = [0u8; MAX_RECORDED_COPY];
            data[..src.len()].copy_from_slice(src);
            self.log.lock().unwrap().push(Op::Copy {
                handle,
                offset,
                len: src.len(),
                data,
            });
            return Ok(());
        }
        self.inner.copy_to_device(handle, offset, src)
    }
    fn semaphore_increment(&self, nc: NcIndex, sem: SemaphoreId, amount: u32) -> HalResult<()> {
        if self.recording.load(Ordering::Relaxed) {
            self.log
                .lock()
                .unwrap()
                .push(Op::Increment { nc, sem, amount });
            return Ok(());
        }
        self.inner.semaphore_increment(nc, sem, amount)
    }
    fn wait(&self, cond: &WaitCondition, timeout: Duration) -> HalResult<()> {
        {
            let mut held = self.held.lock().unwrap();
            while *held {
                held = self.released.wait(held).unwrap();
            }
        }
        self.inner.wait(cond, timeout)
    }
}

// ---------------------------------------------------------------------------------------------
// Set-up.
// ---------------------------------------------------------------------------------------------

struct Loaded {
    rt: Arc<Runtime>,
    id: ModelId,
    ins: TensorSet,
    outs: TensorSet,
    inputs: Vec<Vec<u8>>,
}

/// Loads `m` on a fresh runtime over `hal`, with device tensors holding golden inputs.
fn load(hal: Arc<dyn Hal>, m: &ZooModel, async_max_inflight: u32) -> Loaded {
    let cfg = RuntimeConfig {
        async_max_inflight,
        ..RuntimeConfig::default()
    };
    load_on(&Arc::new(Runtime::new(hal, cfg).unwrap()), m)
}

/// Loads `m` on the next free core of `rt`, with device tensors holding golden inputs.
fn load_on(rt: &Arc<Runtime>, m: &ZooModel) -> Loaded {
    let rt = Arc::clone(rt);
    let id = rt.load(&m.neff, -1).unwrap();
    let vnc = rt.model(id).unwrap().vnc;
    let inputs = m.generate_inputs(GOLDEN_SEED);
    let (ins, outs) = m
        .tensor_sets(&rt, vnc, Placement::Device, Placement::Device)
        .unwrap();
    for (spec, data) in m.inputs.iter().zip(&inputs) {
        ins.get(&spec.name).unwrap().write(0, data).unwrap();
    }
    Loaded {
        rt,
        id,
        ins,
        outs,
        inputs,
    }
}

impl Loaded {
    /// Checks the outputs against the model's reference (after a run, outside any timing).
    fn check(&self, m: &ZooModel) {
        let got: Vec<Vec<u8>> = m
            .outputs
            .iter()
            .map(|s| self.outs.get(&s.name).unwrap().to_vec().unwrap())
            .collect();
        m.check_outputs(&self.inputs, &got)
            .unwrap_or_else(|e| panic!("{}.{}: {e}", m.name, m.target));
    }

    fn submit(&self) -> ExecRequest {
        self.rt
            .execute_async(self.id, &self.ins, &self.outs)
            .unwrap()
    }

    fn wait(&self, req: ExecRequest) {
        self.rt.wait(req, WAIT).unwrap();
    }

    fn execute(&self) {
        self.rt.execute(self.id, &self.ins, &self.outs).unwrap();
    }

    /// One execution; its device cycles (the slowest core's).
    fn execute_cycles(&self) -> u64 {
        let r = self.rt.execute(self.id, &self.ins, &self.outs).unwrap();
        r.cycles.into_iter().max().unwrap_or(0)
    }
}

// ---------------------------------------------------------------------------------------------
// async_submit
// ---------------------------------------------------------------------------------------------

/// A warm async runtime with `name` (trn1) over a [`BenchHal`].
fn async_setup(name: &str) -> (Arc<BenchHal>, Loaded, ZooModel) {
    let m = zoo::build(name, Target::Trn1).unwrap();
    let hal = BenchHal::new(Target::Trn1);
    let l = load(hal.clone() as Arc<dyn Hal>, &m, 64);
    for _ in 0..16 {
        let r = l.submit();
        l.wait(r);
    }
    l.check(&m);
    (hal, l, m)
}

/// Pairs of the model's dynamic queues (the stage scans them on every submit).
fn dynamic_pairs(l: &Loaded) -> usize {
    let model = l.rt.model(l.id).unwrap();
    let cores = model.cores.lock().unwrap();
    cores
        .iter()
        .flatten()
        .flat_map(|c| &c.queues)
        .filter(|q| q.dynamic)
        .map(|q| q.pairs.len())
        .sum()
}

/// Times `iters` submits (in batches of [`BATCH`]); waits happen outside the timed region.
fn timed_submits(
    hal: &BenchHal,
    l: &Loaded,
    reqs: &mut Vec<ExecRequest>,
    iters: u64,
    noop: bool,
) -> Duration {
    let mut total = Duration::ZERO;
    let mut done = 0;
    while done < iters {
        let n = BATCH.min(iters - done);
        hal.hold(true);
        hal.record(noop);
        let t = Instant::now();
        for _ in 0..n {
            reqs.push(black_box(l.submit()));
        }
        total += t.elapsed();
        hal.record(false);
        hal.replay();
        hal.hold(false);
        for r in reqs.drain(..) {
            l.wait(r);
        }
        done += n;
    }
    total
}

fn async_submit(c: &mut Criterion) {
    let (hal, l, m) = async_setup("add");
    let mut reqs = Vec::with_capacity(BATCH as usize);
    let mut g = c.benchmark_group("async_submit");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(5));
    for (name, noop) in [("add_sim", false), ("add_noop", true)] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| timed_submits(&hal, &l, &mut reqs, iters, noop))
        });
    }
    g.finish();
    l.check(&m);
    drop((hal, l));
    // Direct figures: the median of 25 runs of 8 batches, for `add` and the smaller `transpose`.
    let mut parts = Vec::new();
    for name in ["add", "transpose"] {
        let (hal, l, m) = async_setup(name);
        let mut ns = |noop: bool| {
            let mut runs: Vec<f64> = (0..25)
                .map(|_| {
                    let n = 8 * BATCH;
                    timed_submits(&hal, &l, &mut reqs, n, noop).as_nanos() as f64 / n as f64
                })
                .collect();
            runs.sort_by(f64::total_cmp);
            runs[runs.len() / 2]
        };
        let sim = ns(false);
        let noop = ns(true);
        l.check(&m);
        parts.push(format!(
            "{name}.trn1 ({} dynamic-queue pairs) {sim:.0} ns with the simulator HAL, {noop:.0} ns with the no-op HAL",
            dynamic_pairs(&l)
        ));
    }
    println!(
        "async_submit summary: execute_async per submit: {}; goal < 1000 ns",
        parts.join("; ")
    );
}

// ---------------------------------------------------------------------------------------------
// sync_round_trip
// ---------------------------------------------------------------------------------------------

fn sync_loaded(name: &str) -> (Loaded, ZooModel, Arc<Sim>) {
    let m = zoo::build(name, Target::Trn1).unwrap();
    let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn1)));
    let l = load(sim.clone() as Arc<dyn Hal>, &m, 0);
    for _ in 0..4 {
        l.execute();
    }
    l.check(&m);
    (l, m, sim)
}

fn sync_round_trip(c: &mut Criterion) {
    let models = ["transpose", "add"].map(sync_loaded);
    let mut g = c.benchmark_group("sync_round_trip");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(5));
    for (l, m, _) in &models {
        g.bench_function(m.name, |b| b.iter(|| l.execute()));
    }
    g.finish();
    let mut parts = Vec::new();
    for (l, m, sim) in &models {
        let n = 2000;
        let mut best = Duration::MAX;
        let mut cycles = 0;
        for _ in 0..5 {
            let c0 = sim.now();
            let t = Instant::now();
            for _ in 0..n {
                l.execute();
            }
            best = best.min(t.elapsed());
            cycles = (sim.now() - c0) / n;
        }
        l.check(m);
        let bytes: usize = m.inputs.iter().chain(&m.outputs).map(|s| s.size()).sum();
        parts.push(format!(
            "{}.trn1 ({} KiB of IO, {} device cycles) {:.1} µs",
            m.name,
            bytes >> 10,
            cycles,
            best.as_secs_f64() * 1e6 / n as f64
        ));
    }
    println!(
        "sync_round_trip summary: execute per round trip: {}; goal < 10 µs",
        parts.join(", ")
    );
}

// ---------------------------------------------------------------------------------------------
// mlp2
// ---------------------------------------------------------------------------------------------

/// `iters` executions with up to `depth` in flight, timed from the first submit to the last
/// completion.
fn pipelined(l: &Loaded, q: &mut VecDeque<ExecRequest>, iters: u64, depth: usize) -> Duration {
    let t = Instant::now();
    for _ in 0..iters {
        if q.len() >= depth {
            l.wait(q.pop_front().unwrap());
        }
        q.push_back(l.submit());
    }
    while let Some(r) = q.pop_front() {
        l.wait(r);
    }
    t.elapsed()
}

fn mlp2(c: &mut Criterion) {
    let (sync, m, _) = sync_loaded("mlp2");
    let asy = {
        let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn1)));
        let l = load(sim as Arc<dyn Hal>, &m, 8);
        let mut q = VecDeque::with_capacity(16);
        pipelined(&l, &mut q, 32, 8);
        l.check(&m);
        l
    };
    let mut q = VecDeque::with_capacity(16);
    let mut g = c.benchmark_group("mlp2_trn1");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(5));
    g.bench_function("sync", |b| b.iter(|| sync.execute()));
    g.bench_function("async_8_in_flight", |b| {
        b.iter_custom(|iters| pipelined(&asy, &mut q, iters, 8))
    });
    g.finish();
    let n = 1000;
    let mut sync_t = Duration::MAX;
    let mut async_t = Duration::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..n {
            sync.execute();
        }
        sync_t = sync_t.min(t.elapsed());
        async_t = async_t.min(pipelined(&asy, &mut q, n, 8));
    }
    sync.check(&m);
    asy.check(&m);
    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    println!(
        "mlp2 summary: mlp2.trn1 {:.0} executions/s sync ({:.1} µs each), {:.0} executions/s async with 8 in flight ({:.1} µs each)",
        rate(sync_t),
        sync_t.as_secs_f64() * 1e6 / n as f64,
        rate(async_t),
        async_t.as_secs_f64() * 1e6 / n as f64,
    );
}

// ---------------------------------------------------------------------------------------------
// two models on two cores, LNC=2 on 1 vs 2 threads
// ---------------------------------------------------------------------------------------------

/// `n` sync executions of each of `models`: one after the other from this thread (`parallel`
/// false), or each model from a thread of its own.
fn run_models(models: &[Loaded], n: u64, parallel: bool) -> Duration {
    let t = Instant::now();
    if parallel {
        std::thread::scope(|s| {
            for l in models {
                s.spawn(move || {
                    for _ in 0..n {
                        l.execute();
                    }
                });
            }
        });
    } else {
        for l in models {
            for _ in 0..n {
                l.execute();
            }
        }
    }
    t.elapsed()
}

/// Two `mlp2` models on cores 0 and 1 of one trn1 simulator (one runtime).
fn two_mlp2() -> (Vec<Loaded>, ZooModel) {
    let m = zoo::build("mlp2", Target::Trn1).unwrap();
    let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn1)));
    let cfg = RuntimeConfig::default();
    let rt = Arc::new(Runtime::new(sim as Arc<dyn Hal>, cfg).unwrap());
    let models: Vec<Loaded> = (0..2).map(|_| load_on(&rt, &m)).collect();
    for l in &models {
        l.execute();
        l.check(&m);
    }
    (models, m)
}

fn two_cores(c: &mut Criterion) {
    let (models, m) = two_mlp2();
    let mut g = c.benchmark_group("two_cores");
    g.throughput(Throughput::Elements(2));
    g.measurement_time(Duration::from_secs(5));
    g.bench_function("serial", |b| {
        b.iter_custom(|iters| run_models(&models, iters, false))
    });
    g.bench_function("parallel", |b| {
        b.iter_custom(|iters| run_models(&models, iters, true))
    });
    g.finish();
    let n = 500;
    let (mut serial, mut parallel) = (Duration::MAX, Duration::MAX);
    for _ in 0..5 {
        serial = serial.min(run_models(&models, n, false));
        parallel = parallel.min(run_models(&models, n, true));
    }
    for l in &models {
        l.check(&m);
    }
    println!(
        "two_cores summary: 2 × {n} mlp2.trn1 executions on cores 0 and 1: serial {:.1} ms, parallel (2 threads) {:.1} ms, speed-up {:.2}×; goal about 2×",
        serial.as_secs_f64() * 1e3,
        parallel.as_secs_f64() * 1e3,
        serial.as_secs_f64() / parallel.as_secs_f64()
    );
}

/// `n` sync executions of `l` from `threads` threads at once (`n / threads` each).
fn run_threads(l: &Loaded, n: u64, threads: u64) -> Duration {
    let t = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for _ in 0..n / threads {
                    l.execute();
                }
            });
        }
    });
    t.elapsed()
}

fn lnc2_threads(c: &mut Criterion) {
    let m = zoo::build("lnc2_add", Target::Trn2).unwrap();
    let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn2)));
    let l = load(sim as Arc<dyn Hal>, &m, 0);
    l.execute();
    l.check(&m);
    let mut g = c.benchmark_group("lnc2_threads");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(5));
    g.bench_function("one_thread", |b| b.iter(|| l.execute()));
    g.bench_function("two_threads", |b| {
        b.iter_custom(|iters| run_threads(&l, iters.next_multiple_of(2), 2))
    });
    g.finish();
    let n = 400;
    let (mut one, mut two) = (Duration::MAX, Duration::MAX);
    for _ in 0..5 {
        one = one.min(run_threads(&l, n, 1));
        two = two.min(run_threads(&l, n, 2));
    }
    l.check(&m);
    println!(
        "lnc2_threads summary: {n} lnc2_add.trn2 executions: 1 thread {:.1} µs each, 2 threads {:.1} µs each, speed-up {:.2}×",
        one.as_secs_f64() * 1e6 / n as f64,
        two.as_secs_f64() * 1e6 / n as f64,
        one.as_secs_f64() / two.as_secs_f64()
    );
}

// ---------------------------------------------------------------------------------------------
// host time over simulated time
// ---------------------------------------------------------------------------------------------

fn host_over_sim(c: &mut Criterion) {
    let mut seen = Vec::new();
    let models: Vec<ZooModel> = zoo::all()
        .into_iter()
        .filter(|m| m.executable)
        .filter(|m| {
            // Each model once, on its first target.
            let first = !seen.contains(&m.name);
            seen.push(m.name);
            first
        })
        .collect();
    let loaded: Vec<(Loaded, Duration, Arc<Sim>)> = models
        .iter()
        .map(|m| {
            let sim = Arc::new(Sim::new(SimConfig::new(m.target)));
            let l = load(Arc::clone(&sim) as Arc<dyn Hal>, m, 0);
            // The device time of a warm execution, as the timed ones are: the first execution
            // of a load also reloads the sequencer config and the ACT/DVE tables (8000 more
            // cycles on trn1; later ones skip what the core already ran).
            let mut cycles = 0;
            for _ in 0..4 {
                cycles = l.execute_cycles();
            }
            l.check(m);
            let hz = m.target.spec().clocks.sp as f64;
            (l, Duration::from_secs_f64(cycles as f64 / hz), sim)
        })
        .collect();
    let mut g = c.benchmark_group("host_over_sim");
    g.throughput(Throughput::Elements(1));
    g.measurement_time(Duration::from_secs(2));
    for ((l, _, _), m) in loaded.iter().zip(&models) {
        g.bench_function(m.id(), |b| b.iter(|| l.execute()));
    }
    g.finish();
    let host_rate = nrt_emu::floor::host_sgemm_macs_per_sec();
    let copy_rate = nrt_emu::floor::host_memcpy_bytes_per_sec();
    let mut parts = Vec::new();
    let mut worst = 0f64;
    let mut worst_floor = 0f64;
    for ((l, device, sim), m) in loaded.iter().zip(&models) {
        let n = 200;
        let mut best = Duration::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            for _ in 0..n {
                l.execute();
            }
            best = best.min(t.elapsed() / n);
        }
        l.check(m);
        // The last execution's profile (reset when an execution begins), over every core.
        let profiles = (0..m.target.spec().nc_count).map(|nc| sim.exec_profile(NcIndex(nc)));
        let (pe_macs, dma_bytes) = profiles.fold((0u64, 0u64), |(macs, bytes), p| {
            (macs + p.pe_macs, bytes + p.dma_bytes)
        });
        let floor = pe_macs as f64 / host_rate + dma_bytes as f64 / copy_rate;
        let ratio = best.as_secs_f64() / device.as_secs_f64();
        let floor_ratio = floor / device.as_secs_f64();
        worst = worst.max(ratio);
        worst_floor = worst_floor.max(floor_ratio);
        let floor_note = format!(
            " (floor {:.1} µs: {:.2} M PE MACs, {} KiB DMA)",
            floor * 1e6,
            pe_macs as f64 / 1e6,
            dma_bytes >> 10
        );
        parts.push(format!(
            "{} {:.1} µs host{floor_note} / {:.1} µs device = {:.1}× (floor {:.1}×)",
            m.id(),
            best.as_secs_f64() * 1e6,
            device.as_secs_f64() * 1e6,
            ratio,
            floor_ratio
        ));
    }
    println!(
        "host_over_sim summary: host time per sync execution over simulated time: {}; worst {:.1}×; goal ≤ 3×; \
         floor = PE MACs at the host's f32 sgemm rate ({:.1} GMAC/s) + DMA bytes at its memcpy rate ({:.1} GB/s), worst floor {:.1}×",
        parts.join(", "),
        worst,
        host_rate / 1e9,
        copy_rate / 1e9,
        worst_floor
    );
}

// ---------------------------------------------------------------------------------------------
// current-compiler NEFFs against their floor
// ---------------------------------------------------------------------------------------------

/// Expert ids for an integer input (the MoE's; the attention kernel's position is never read).
const EXPERT_IDS: [i32; 8] = [0, 127, 5, 64, 33, 99, 12, 80];

fn current_neffs_folder() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("NRT_EMU_CURRENT_NEFFS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/current-neffs")
        });
    dir.is_dir().then_some(dir)
}

/// A current NEFF loaded on a trn2 simulator with its inputs bound.
struct Current {
    name: String,
    sim: Arc<Sim>,
    rt: Arc<Runtime>,
    id: ModelId,
    ins: TensorSet,
    outs: TensorSet,
}

impl Current {
    fn load(path: &std::path::Path) -> Current {
        let neff = std::fs::read(path).unwrap();
        let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn2)));
        let hal: Arc<dyn Hal> = Arc::clone(&sim) as Arc<dyn Hal>;
        let rt = Arc::new(Runtime::new(hal, RuntimeConfig::default()).unwrap());
        let id = rt.load(&neff, -1).unwrap();
        let (ins, outs) = support::bind_io(&rt, id, |t| {
            if t.dtype == nrt_emu::hal::Dtype::I32 {
                let ids = EXPERT_IDS.iter().cycle().take(t.size as usize / 4);
                ids.flat_map(|e| e.to_le_bytes()).collect()
            } else {
                nrt_emu::sim::values::seeded_input(0, &t.name, t.dtype, t.size as usize)
            }
        });
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let name = name.rsplit("--").next().unwrap_or(&name).to_string();
        Current {
            name,
            sim,
            rt,
            id,
            ins,
            outs,
        }
    }

    fn execute(&self) {
        self.rt.execute(self.id, &self.ins, &self.outs).unwrap();
    }

    /// The last execution's PE MACs and DMA bytes, over both cores.
    fn work(&self) -> (u64, u64) {
        (0..Target::Trn2.spec().nc_count).fold((0, 0), |(macs, bytes), nc| {
            let p = self.sim.exec_profile(NcIndex(nc));
            (macs + p.pe_macs, bytes + p.dma_bytes)
        })
    }
}

fn current_neffs(c: &mut Criterion) {
    let Some(dir) = current_neffs_folder() else {
        println!("current_neffs summary: SKIP, folder not found (set NRT_EMU_CURRENT_NEFFS or put it at ../shared/current-neffs)");
        return;
    };
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "neff"))
        .collect();
    paths.sort();
    let loaded: Vec<Current> = paths.iter().map(|p| Current::load(p)).collect();
    for l in &loaded {
        l.execute(); // the first execution also reloads the sequencer config and tables
    }
    let mut g = c.benchmark_group("current_neffs");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(2));
    for l in &loaded {
        g.bench_function(&l.name, |b| b.iter(|| l.execute()));
    }
    g.finish();
    let rates = nrt_emu::floor::HostRates::measure();
    let mut parts = Vec::new();
    let mut worst = 0f64;
    for l in &loaded {
        let mut best = Duration::MAX;
        for _ in 0..5 {
            let t = Instant::now();
            l.execute();
            best = best.min(t.elapsed());
        }
        let (macs, bytes) = l.work();
        let floor = rates.floor_secs(macs, bytes);
        let ratio = best.as_secs_f64() / floor;
        worst = worst.max(ratio);
        parts.push(format!(
            "{} {:.2} ms host vs floor {:.2} ms = {:.1}× ({:.1} M PE MACs, {} KiB DMA)",
            l.name,
            best.as_secs_f64() * 1e3,
            floor * 1e3,
            ratio,
            macs as f64 / 1e6,
            bytes >> 10
        ));
    }
    println!(
        "current_neffs summary: host time per sync execution vs its floor: {}; worst {:.1}×; goal ≤ 2×; \
         floor = PE MACs at the host's f32 sgemm rate ({:.1} GMAC/s) + DMA bytes at its memcpy rate ({:.1} GB/s)",
        parts.join(", "),
        worst,
        rates.sgemm_macs_per_sec / 1e9,
        rates.memcpy_bytes_per_sec / 1e9
    );
}

criterion_group!(
    benches,
    async_submit,
    sync_round_trip,
    mlp2,
    two_cores,
    lnc2_threads,
    host_over_sim,
    current_neffs
);
criterion_main!(benches);
