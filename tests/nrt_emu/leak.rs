//! Leak gate (issue #8, part 5): load → execute → unload cycles leave nothing behind.
//!
//! One cycle loads several zoo models (trn1: add, matmul_bias_relu, many_queues), executes
//! each synchronously and asynchronously (checking its outputs against the model's reference),
//! unloads them, and attempts loads of malformed NEFFs from `fixtures/malformed/` that fail in
//! parsing, in the KBIN build and in staging (S4, after device memory was allocated). After
//! [`WARMUP`] cycles (first-use state: the per-core execution rings and notification queue, the
//! async worker thread, the TNC cache slot, hash-map capacities) the test takes a baseline of
//!
//! - host heap: live bytes and live allocations, counted by a global allocator over every
//!   thread (the binary's counting allocator, `alloc_count`; the test runs alone in a child
//!   process so that no other test's allocations are counted), and
//! - device memory: each core's accounting (bytes per category, live allocations),
//!
//! then requires the same numbers, device and host heap, after 10 more cycles and after 30
//! more (equality): a leak of even one allocation fails it.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use nrt_emu::hal::hal::CoreMemUsage;
use nrt_emu::hal::{Hal, Target};
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::tensor::Placement;
use nrt_emu::runtime::{NrtStatus, Runtime};
use nrt_emu::sim::{Sim, SimConfig};
use nrt_fixtures::{fixtures_dir, zoo, ZooModel};

/// Cores of a trn1 device.
const CORES: usize = 2;

/// One checkpoint. Nothing in it lives on the heap: the snapshots are kept alive while later
/// ones are taken, so a heap-backed field (the device numbers used to be a `Vec` of two
/// 168-byte `CoreMemUsage`s) would count every earlier checkpoint's storage — one 336-byte
/// allocation per checkpoint — against the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Snapshot {
    heap_bytes: i64,
    heap_allocs: i64,
    device: [CoreMemUsage; CORES],
}

fn snapshot(sim: &Sim) -> Snapshot {
    assert_eq!(Target::Trn1.spec().nc_count as usize, CORES);
    let device = crate::support::core_usage_array::<CORES>(sim);
    let (heap_bytes, heap_allocs) = crate::alloc_count::live_heap();
    Snapshot {
        heap_bytes,
        heap_allocs,
        device,
    }
}

/// Malformed NEFFs failing at each stage: parse (S1), build (S2/S3), staging (S4, after
/// allocations were made and must be rolled back).
const MALFORMED: [&str; 4] = [
    "gzip_crc_mismatch.neff",
    "def_var_id_duplicate.neff",
    "dma_unknown_var.neff",
    "load_queue_set_two_engines.neff",
];

struct Fixture {
    models: Vec<ZooModel>,
    inputs: Vec<Vec<Vec<u8>>>,
    malformed: Vec<(String, Vec<u8>)>,
}

fn cycle(rt: &Runtime, f: &Fixture) {
    for (i, (m, inputs)) in f.models.iter().zip(&f.inputs).enumerate() {
        let vnc = (i % 2) as u32;
        let id = rt.load(&m.neff, vnc as i32).unwrap();
        // Sync, with device tensors and with host tensors (staged through device copies).
        let (ins, outs) = support::device_io(rt, m, vnc, inputs);
        rt.execute(id, &ins, &outs).unwrap();
        support::check_outputs(m, inputs, &outs);
        let (hins, houts) =
            support::io_tensors(rt, m, vnc, inputs, Placement::Virtual, Placement::Host);
        rt.execute(id, &hins, &houts).unwrap();
        support::check_outputs(m, inputs, &houts);
        // Async: two in flight, one waited, one polled to completion.
        let (ins2, outs2) = support::device_io(rt, m, vnc, inputs);
        let a = rt.execute_async(id, &ins, &outs).unwrap();
        let b = rt.execute_async(id, &ins2, &outs2).unwrap();
        rt.wait(a, Duration::from_secs(30)).unwrap();
        let r = loop {
            if let Some(r) = rt.poll(b) {
                break r;
            }
            std::thread::yield_now();
        };
        r.unwrap();
        support::check_outputs(m, inputs, &outs2);
        rt.unload(id).unwrap();
    }
    for (name, bytes) in &f.malformed {
        let e = rt.load(bytes, 0).unwrap_err();
        assert!(
            matches!(e.status, NrtStatus::Invalid),
            "{name}: {e} (expected NRT_INVALID)"
        );
    }
}

#[test]
fn load_execute_unload_cycles_do_not_grow_host_or_device_memory() {
    // The process-wide heap count must see this test alone.
    if !crate::alloc_count::run_alone(
        "leak::load_execute_unload_cycles_do_not_grow_host_or_device_memory",
    ) {
        return;
    }
    let f = Fixture {
        models: ["add", "matmul_bias_relu", "many_queues"]
            .iter()
            .map(|n| zoo::build(n, Target::Trn1).unwrap())
            .collect(),
        inputs: Vec::new(),
        malformed: MALFORMED
            .iter()
            .map(|n| {
                let p = fixtures_dir().join("malformed").join(n);
                (n.to_string(), std::fs::read(&p).unwrap())
            })
            .collect(),
    };
    let f = Fixture {
        inputs: f.models.iter().map(|m| m.generate_inputs(0x1EAC)).collect(),
        ..f
    };
    let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn1)));
    // Async mode off: `execute` stages host tensors; `execute_async` still runs (limit 1).
    let rt = Runtime::new(sim.clone() as Arc<dyn Hal>, RuntimeConfig::default()).unwrap();
    const WARMUP: usize = 3;
    for _ in 0..WARMUP {
        cycle(&rt, &f);
    }
    let base = snapshot(&sim);
    for _ in 0..10 {
        cycle(&rt, &f);
    }
    let after10 = snapshot(&sim);
    for _ in 0..20 {
        cycle(&rt, &f);
    }
    let after30 = snapshot(&sim);
    eprintln!("leak gate: baseline {base:?}\n  after 10 cycles {after10:?}\n  after 30 cycles {after30:?}");
    // Device memory: exactly the baseline.
    assert_eq!(
        after10.device, base.device,
        "device, 10 cycles after the baseline"
    );
    assert_eq!(
        after30.device, base.device,
        "device, 30 cycles after the baseline"
    );
    // Host heap: exactly the baseline too. (It used to allow two allocations of slack: the
    // 336 bytes per checkpoint were the earlier snapshots' own `Vec`s; see `Snapshot`.)
    for (label, s) in [("10", &after10), ("30", &after30)] {
        assert_eq!(
            (s.heap_allocs, s.heap_bytes),
            (base.heap_allocs, base.heap_bytes),
            "host heap (live allocations, live bytes) {label} cycles after the baseline"
        );
    }
    // The gate measures something: the models' memory is visible while loaded.
    let id = rt.load(&f.models[0].neff, 0).unwrap();
    assert_ne!(snapshot(&sim).device, base.device);
    rt.unload(id).unwrap();
    assert_eq!(snapshot(&sim).device, base.device);
}
