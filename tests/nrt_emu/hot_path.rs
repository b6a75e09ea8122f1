//! The async submit is a hot path: once warm (caches, rings, worker threads, result maps and
//! heap capacities exist), one `execute_async` call
//!
//! - makes no heap allocation on the submitting thread (a counting global allocator that counts
//!   per thread proves it), and
//! - talks to the device only through memory copies plus exactly one doorbell
//!   (`semaphore_increment`) per core of the model, with no device read at all while fewer
//!   executions are in flight than the core has request slots (the completion count is tracked,
//!   not read per submit), and at most one copy per ring written plus the request (a counting
//!   HAL decorator proves it),
//!
//! while every execution still computes the model's reference.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use nrt_emu::hal::{Hal, Target};
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::tensor::{Placement, TensorSet};
use nrt_emu::runtime::{ModelId, Runtime};
use nrt_emu::sim::{Sim, SimConfig};
use nrt_fixtures::{zoo, ZooModel, GOLDEN_SEED};

/// Allocations made by the current thread so far (the binary's counting allocator).
fn allocations() -> u64 {
    crate::alloc_count::thread_allocations()
}

// ---------------------------------------------------------------------------------------------
// A HAL decorator that counts calls per method.
// ---------------------------------------------------------------------------------------------

/// Every `Hal` method, in trait order.
const METHODS: [&str; 22] = nrt_emu::hal::hal::HAL_METHODS;

fn method_index(name: &str) -> usize {
    METHODS
        .iter()
        .position(|m| *m == name)
        .expect("a Hal method")
}

thread_local! {
    /// Whether calls from this thread go to the decorator's "recorded" counters.
    static RECORDING: Cell<bool> = const { Cell::new(false) };
}

/// Counts calls per method on every thread (`all`) and, separately, on threads that are
/// recording (`recorded`: the submitting thread inside the measured window).
struct CountingHal {
    inner: Arc<dyn Hal>,
    all: [AtomicU64; METHODS.len()],
    recorded: [AtomicU64; METHODS.len()],
}

impl CountingHal {
    fn new(inner: Arc<dyn Hal>) -> Self {
        CountingHal {
            inner,
            all: std::array::from_fn(|_| AtomicU64::new(0)),
            recorded: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    fn hit(&self, method: &str) {
        let i = method_index(method);
        self.all[i].fetch_add(1, Ordering::Relaxed);
        if RECORDING.with(Cell::get) {
            self.recorded[i].fetch_add(1, Ordering::Relaxed);
        }
    }

    fn snapshot(counters: &[AtomicU64; METHODS.len()]) -> [u64; METHODS.len()] {
        std::array::from_fn(|i| counters[i].load(Ordering::SeqCst))
    }

    /// Runs `f` with this thread's calls recorded; returns its value and the calls it made.
    fn record<T>(&self, f: impl FnOnce() -> T) -> (T, Calls) {
        let before = Self::snapshot(&self.recorded);
        RECORDING.with(|r| r.set(true));
        let v = f();
        RECORDING.with(|r| r.set(false));
        let after = Self::snapshot(&self.recorded);
        (v, Calls(std::array::from_fn(|i| after[i] - before[i])))
    }
}

/// Calls per method (indexed like [`METHODS`]).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Calls([u64; METHODS.len()]);

impl Calls {
    fn get(&self, method: &str) -> u64 {
        self.0[method_index(method)]
    }

    fn nonzero(&self) -> Vec<(&'static str, u64)> {
        METHODS
            .iter()
            .zip(self.0)
            .filter(|(_, n)| *n > 0)
            .map(|(m, n)| (*m, n))
            .collect()
    }
}

impl std::fmt::Debug for Calls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.nonzero()).finish()
    }
}

impl nrt_emu::hal::HalLayer for CountingHal {
    type Inner = dyn Hal;
    fn inner(&self) -> &Self::Inner {
        &*self.inner
    }
    fn on_call(&self, method: &'static str) {
        self.hit(method);
    }
}

// ---------------------------------------------------------------------------------------------
// Shared set-up.
// ---------------------------------------------------------------------------------------------

const WAIT: Duration = Duration::from_secs(30);
const WARM_UP: usize = 10;
const MEASURED: usize = 16;

fn async_cfg(inflight: u32) -> RuntimeConfig {
    RuntimeConfig {
        async_max_inflight: inflight,
        ..RuntimeConfig::default()
    }
}

/// Device tensors for `m`'s inputs and outputs on logical core `vnc`.
fn device_sets(rt: &Runtime, vnc: u32, m: &ZooModel) -> (TensorSet, TensorSet) {
    m.tensor_sets(rt, vnc, Placement::Device, Placement::Device)
        .unwrap()
}

/// Writes fresh inputs for `seed` and clears the outputs (outside any measured window).
fn prepare(m: &ZooModel, ins: &TensorSet, outs: &TensorSet, seed: u64) -> Vec<Vec<u8>> {
    let inputs = m.generate_inputs(seed);
    for (spec, data) in m.inputs.iter().zip(&inputs) {
        ins.get(&spec.name).unwrap().write(0, data).unwrap();
    }
    for (_, t) in outs.iter() {
        t.memset(0, 0, t.size()).unwrap();
    }
    inputs
}

/// What the user reads back, checked against the model's reference.
fn check(m: &ZooModel, inputs: &[Vec<u8>], outs: &TensorSet, what: &str) {
    let got: Vec<Vec<u8>> = m
        .outputs
        .iter()
        .map(|s| outs.get(&s.name).unwrap().to_vec().unwrap())
        .collect();
    m.check_outputs(inputs, &got)
        .unwrap_or_else(|e| panic!("{}.{} {what}: {e}", m.name, m.target));
}

/// Loads `m` and runs `WARM_UP` async submit + wait round trips, each checked.
fn warm(rt: &Runtime, m: &ZooModel) -> (ModelId, TensorSet, TensorSet) {
    let id = rt.load(&m.neff, -1).unwrap();
    let vnc = rt.model(id).unwrap().vnc;
    let (ins, outs) = device_sets(rt, vnc, m);
    for i in 0..WARM_UP {
        let inputs = prepare(m, &ins, &outs, GOLDEN_SEED + i as u64);
        let req = rt.execute_async(id, &ins, &outs).unwrap();
        rt.wait(req, WAIT).unwrap();
        check(m, &inputs, &outs, "warm-up");
    }
    (id, ins, outs)
}

// ---------------------------------------------------------------------------------------------
// Tests.
// ---------------------------------------------------------------------------------------------

#[test]
fn the_counting_allocator_sees_this_threads_allocations_only() {
    let before = allocations();
    let v = std::hint::black_box(vec![1u8; 100]);
    assert_eq!(allocations() - before, 1);
    drop(v);
    let before = allocations();
    let child = std::thread::spawn(|| {
        let before = allocations();
        let boxes: Vec<Box<u64>> = (0..1000)
            .map(|i| std::hint::black_box(Box::new(i)))
            .collect();
        drop(boxes);
        allocations() - before
    })
    .join()
    .unwrap();
    let here = allocations() - before;
    assert_eq!(child, 1001, "the child counts its own allocations");
    assert!(
        here < 100,
        "the child's allocations leaked into the parent's count: {here}"
    );
}

#[test]
fn a_warm_async_submit_allocates_nothing_on_the_submitting_thread() {
    let m = zoo::build("add", Target::Trn1).unwrap();
    let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn1)));
    let rt = Runtime::new(sim as Arc<dyn Hal>, async_cfg(4)).unwrap();
    // The counter does see the runtime: a cold submit builds the core's rings, the dynamic
    // ring cache entry and the async worker.
    let cold = {
        let id = rt.load(&m.neff, -1).unwrap();
        let (ins, outs) = device_sets(&rt, 0, &m);
        let inputs = prepare(&m, &ins, &outs, GOLDEN_SEED);
        let before = allocations();
        let req = rt.execute_async(id, &ins, &outs);
        let cold = allocations() - before;
        rt.wait(req.unwrap(), WAIT).unwrap();
        check(&m, &inputs, &outs, "cold");
        drop((ins, outs));
        rt.unload(id).unwrap();
        cold
    };
    assert!(cold > 0, "a cold submit allocates (rings, cache, worker)");
    let (id, ins, outs) = warm(&rt, &m);
    let mut counts = Vec::with_capacity(MEASURED);
    for i in 0..MEASURED {
        let inputs = prepare(&m, &ins, &outs, 1000 + i as u64);
        let before = allocations();
        let req = rt.execute_async(id, &ins, &outs);
        let after = allocations();
        counts.push(after - before);
        let report = rt.wait(req.unwrap(), WAIT).unwrap();
        assert_eq!(report.cycles.len(), 1);
        assert!(report.cycles[0] > 0);
        check(&m, &inputs, &outs, "measured");
    }
    println!(
        "add.trn1, async_max_inflight 4: allocations of the submitting thread in execute_async: cold {cold}, warm {counts:?}"
    );
    assert!(
        counts.iter().all(|n| *n == 0),
        "a warm execute_async allocated on the submitting thread: {counts:?}"
    );
    rt.unload(id).unwrap();
}

/// Submits `m` once after warm-up and checks the submitting thread's HAL calls.
fn doorbell_once(name: &str, target: Target, cores: usize) {
    let m = zoo::build(name, target).unwrap();
    let sim = Arc::new(Sim::new(SimConfig::new(target)));
    let hal = Arc::new(CountingHal::new(sim as Arc<dyn Hal>));
    let rt = Runtime::new(hal.clone() as Arc<dyn Hal>, async_cfg(4)).unwrap();
    let (id, ins, outs) = warm(&rt, &m);
    let model = rt.model(id).unwrap();
    assert_eq!(model.tpbs.len(), cores);
    let shape: Vec<(usize, usize, usize)> = model
        .cores
        .lock()
        .unwrap()
        .as_ref()
        .unwrap()
        .iter()
        .map(|c| {
            let dynamic = c.queues.iter().filter(|q| q.dynamic);
            (
                c.queues.len(),
                dynamic.clone().count(),
                dynamic.map(|q| q.pairs.len()).sum(),
            )
        })
        .collect();
    println!("{name}.{target}: per core (queues, dynamic queues, pairs of the dynamic queues): {shape:?}");
    drop(model);
    let mut first: Option<Calls> = None;
    for i in 0..4 {
        let inputs = prepare(&m, &ins, &outs, 2000 + i);
        let all_before = CountingHal::snapshot(&hal.all);
        let (req, calls) = hal.record(|| rt.execute_async(id, &ins, &outs));
        let report = rt.wait(req.unwrap(), WAIT).unwrap();
        let all_after = CountingHal::snapshot(&hal.all);
        let whole = Calls(std::array::from_fn(|i| all_after[i] - all_before[i]));
        assert_eq!(report.cycles.len(), cores);
        check(&m, &inputs, &outs, "measured");
        if i == 0 {
            println!(
                "{name}.{target}: HAL calls of one warm execute_async on the submitting thread: {calls:?}"
            );
            println!(
                "{name}.{target}: HAL calls of the whole execution (submit + async completion on the worker): {whole:?}"
            );
        }
        assert_eq!(
            calls.get("semaphore_increment"),
            cores as u64,
            "one doorbell per core: {calls:?}"
        );
        assert_eq!(calls.get("dma_queue_copy_start"), 0, "{calls:?}");
        assert_eq!(whole.get("dma_queue_copy_start"), 0, "{whole:?}");
        for (method, n) in calls.nonzero() {
            assert!(
                matches!(method, "semaphore_increment" | "copy_to_device"),
                "the submit called {method} {n} times: {calls:?}"
            );
        }
        // Per core: the request slot, the IO queue's TX and RX rings, the exec queue's TX and RX
        // rings — one copy each, or two for a ring whose append wraps.
        let copies = calls.get("copy_to_device");
        assert!(
            (5 * cores as u64..=9 * cores as u64).contains(&copies),
            "{copies} copies for {cores} cores: {calls:?}"
        );
        // Every warm submit of the same sets makes the same calls.
        match first {
            None => first = Some(calls),
            Some(f) => assert_eq!(calls, f, "submit {i} differs from the first"),
        }
    }
    rt.unload(id).unwrap();
}

#[test]
fn a_warm_async_submit_rings_one_doorbell_per_core_and_only_copies_otherwise_add_trn1() {
    doorbell_once("add", Target::Trn1, 1);
}

#[test]
fn a_warm_async_submit_rings_one_doorbell_per_core_and_only_copies_otherwise_lnc2_add_trn2() {
    doorbell_once("lnc2_add", Target::Trn2, 2);
}

/// Pipelined submits (up to `async_max_inflight` in flight, the caller blocking in the
/// backpressure gate) allocate nothing either. Regression: the async queue's `pending` deque can
/// hold one entry more than the in-flight limit (an execution is retired in the execution unit
/// just before the worker pops it, so a released submitter may push first); it is reserved for
/// that, and this test caught the deque growing when it was not.
#[test]
fn pipelined_async_submits_allocate_nothing_on_the_submitting_thread() {
    let m = zoo::build("add", Target::Trn1).unwrap();
    let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn1)));
    let rt = Runtime::new(sim as Arc<dyn Hal>, async_cfg(4)).unwrap();
    let (id, ins, outs) = warm(&rt, &m);
    let mut reqs = std::collections::VecDeque::with_capacity(8);
    let mut allocating = Vec::with_capacity(64);
    for i in 0..5_000 {
        if reqs.len() >= 6 {
            rt.wait(reqs.pop_front().unwrap(), WAIT).unwrap();
        }
        let before = allocations();
        let req = rt.execute_async(id, &ins, &outs);
        let n = allocations() - before;
        if n > 0 && allocating.len() < allocating.capacity() {
            allocating.push((i, n));
        }
        reqs.push_back(req.unwrap());
    }
    while let Some(r) = reqs.pop_front() {
        rt.wait(r, WAIT).unwrap();
    }
    assert!(
        allocating.is_empty(),
        "(submit index, allocations): {allocating:?}"
    );
}

/// The submit tracks the core's completion count instead of reading it each time: over many
/// pipelined submits it reads the count only when the last value read says every request slot
/// may be taken (about once per 64 − in-flight submits), and every execution still runs right.
#[test]
fn pipelined_submits_read_the_completion_count_only_when_the_request_slots_look_full() {
    let m = zoo::build("add", Target::Trn1).unwrap();
    let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn1)));
    let hal = Arc::new(CountingHal::new(sim as Arc<dyn Hal>));
    let rt = Runtime::new(hal.clone() as Arc<dyn Hal>, async_cfg(4)).unwrap();
    let (id, ins, outs) = warm(&rt, &m);
    let inputs = prepare(&m, &ins, &outs, 3000);
    let n = 2000u64;
    let mut reqs = std::collections::VecDeque::with_capacity(8);
    let (_, calls) = hal.record(|| {
        for _ in 0..n {
            if reqs.len() >= 4 {
                rt.wait(reqs.pop_front().unwrap(), WAIT).unwrap();
            }
            reqs.push_back(rt.execute_async(id, &ins, &outs).unwrap());
        }
        while let Some(r) = reqs.pop_front() {
            rt.wait(r, WAIT).unwrap();
        }
    });
    check(&m, &inputs, &outs, "after the pipelined submits");
    let reads = calls.get("semaphore_read");
    println!("add.trn1: {n} pipelined submits, 4 in flight: {reads} completion-count reads");
    assert!(
        reads >= 1,
        "the request-slot check never refreshed: {calls:?}"
    );
    assert!(reads <= n / 32, "{reads} reads in {n} submits: {calls:?}");
    assert_eq!(calls.get("semaphore_increment"), n, "{calls:?}");
    rt.unload(id).unwrap();
}
