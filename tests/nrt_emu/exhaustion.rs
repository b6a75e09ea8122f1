//! Resource exhaustion (issue #8, part 4): each limit of the runtime gives a clear error with
//! the right status and a full rollback, or backpressure where the API promises it.
//!
//! | limit | where | expected |
//! |---|---|---|
//! | device memory (a core's HBM slice) | `Runtime::load` staging | `NRT_RESOURCE` naming the allocation; accounting back to its value before the failed load; models loaded earlier still execute correctly |
//! | hardware DMA queues (222 per core) | `CoreResources::take_queues` | `NRT_RESOURCE` "… free DMA queues, N needed"; queues and memory rolled back |
//! | async in-flight limit (`NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS`, capped at the 64 request slots) | `execute_async` | blocks until a slot frees; never `NRT_QUEUE_FULL` — also for a setting above 64 |
//!
//! Notification-queue space is not a separate limit: a core's queue holds 2048 entries, and at
//! most 64 executions (the request slots) can be outstanding, so it cannot be lapped by
//! completions; a corrupted entry is `NRT_EXEC_SW_NQ_OVERFLOW` (`exec_faults`).

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use nrt_emu::hal::hal::CoreMemUsage;
use nrt_emu::hal::{Hal, Target};
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::tensor::{Placement, Tensor};
use nrt_emu::runtime::{ModelId, NrtStatus, Runtime};
use nrt_emu::sim::{Sim, SimConfig};
use nrt_fixtures::zoo;

fn usage(sim: &Sim) -> Vec<CoreMemUsage> {
    support::core_usage(sim)
}

#[test]
fn loading_past_device_memory_is_nrt_resource_with_full_rollback() {
    let m = zoo::build("mlp2", Target::Trn1).unwrap();
    let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn1)));
    let rt = Runtime::new(sim.clone() as Arc<dyn Hal>, RuntimeConfig::default()).unwrap();
    let inputs = m.generate_inputs(3);
    let first = rt.load(&m.neff, 0).unwrap();
    let (ins, outs) = support::device_io(&rt, &m, 0, &inputs);
    rt.execute(first, &ins, &outs).unwrap();
    support::check_outputs(&m, &inputs, &outs);
    // Fill core 0's memory with large tensors until one no longer fits, then keep halving.
    let mut filler: Vec<Tensor> = Vec::new();
    let mut size = 1u64 << 33;
    while size >= 4096 {
        match rt.tensor_allocate(Placement::Device, 0, size, "filler") {
            Ok(t) => filler.push(t),
            Err(e) => {
                assert_eq!(e.status, NrtStatus::Resource, "{e}");
                size /= 2;
            }
        }
    }
    // Device memory is full: a load fails cleanly, and leaves nothing behind.
    let before = usage(&sim);
    let mut loaded: Vec<ModelId> = Vec::new();
    let e = loop {
        match rt.load(&m.neff, 0) {
            Ok(id) => loaded.push(id),
            Err(e) => break e,
        }
        assert!(loaded.len() < 100, "memory never ran out");
    };
    assert!(loaded.is_empty(), "a model fitted in full memory");
    assert_eq!(e.status, NrtStatus::Resource, "{e}");
    assert!(
        e.message.contains("out of memory") || e.message.contains("memory"),
        "the message names the allocation: {e}"
    );
    assert_eq!(
        usage(&sim),
        before,
        "a failed load rolls back every allocation"
    );
    // The same for an LNC-agnostic second model kind.
    let other = zoo::build("many_queues", Target::Trn1).unwrap();
    assert_eq!(
        rt.load(&other.neff, 0).unwrap_err().status,
        NrtStatus::Resource
    );
    assert_eq!(usage(&sim), before);
    // The model loaded before still executes correctly.
    outs.iter()
        .for_each(|(_, t)| t.memset(0, 0xFF, t.size()).unwrap());
    rt.execute(first, &ins, &outs).unwrap();
    support::check_outputs(&m, &inputs, &outs);
    // Freeing memory makes the load succeed again.
    drop(filler);
    let id = rt.load(&m.neff, 0).unwrap();
    rt.unload(id).unwrap();
    rt.unload(first).unwrap();
}

#[test]
fn running_out_of_dma_queues_is_nrt_resource_with_rollback() {
    let m = zoo::build("many_queues", Target::Trn1).unwrap();
    let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn1)));
    let rt = Runtime::new(sim.clone() as Arc<dyn Hal>, RuntimeConfig::default()).unwrap();
    let start = usage(&sim);
    let mut ids = Vec::new();
    let e = loop {
        match rt.load(&m.neff, 0) {
            Ok(id) => ids.push(id),
            Err(e) => break e,
        }
        assert!(ids.len() < 500, "queues never ran out");
    };
    assert_eq!(e.status, NrtStatus::Resource, "{e}");
    assert!(e.message.contains("free DMA queues"), "{e}");
    eprintln!("{} many_queues models fit on one core: {e}", ids.len());
    let full = usage(&sim);
    // Rollback: another failing load changes nothing; the other core is unaffected.
    assert_eq!(rt.load(&m.neff, 0).unwrap_err().status, NrtStatus::Resource);
    assert_eq!(usage(&sim), full);
    let other = rt.load(&m.neff, 1).unwrap();
    // Loaded models still run correctly, and unloading returns the queues.
    let inputs = m.generate_inputs(5);
    let (ins, outs) = support::device_io(&rt, &m, 0, &inputs);
    rt.execute(ids[ids.len() - 1], &ins, &outs).unwrap();
    support::check_outputs(&m, &inputs, &outs);
    let last = ids.pop().unwrap();
    rt.unload(last).unwrap();
    let again = rt.load(&m.neff, 0).unwrap();
    drop((ins, outs));
    for id in ids.into_iter().chain([again, other]) {
        rt.unload(id).unwrap();
    }
    let end = usage(&sim);
    // Only the per-core execution state of core 0 (created by the execution) remains.
    assert_eq!(end[1], start[1]);
}

#[test]
fn the_async_in_flight_limit_is_backpressure_not_failure() {
    let m = zoo::build("add", Target::Trn1).unwrap();
    let inputs = m.generate_inputs(9);
    // 4: the limit is reached often; 200: above the 64 request slots (used to be QUEUE_FULL).
    for limit in [4u32, 200] {
        let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn1)));
        let cfg = RuntimeConfig {
            async_max_inflight: limit,
            ..RuntimeConfig::default()
        };
        let rt = Runtime::new(sim.clone() as Arc<dyn Hal>, cfg).unwrap();
        let id = rt.load(&m.neff, 0).unwrap();
        let n = 150;
        let all: Vec<_> = (0..n)
            .map(|_| support::device_io(&rt, &m, 0, &inputs))
            .collect();
        // Two submitting threads racing for the slots.
        let reqs: Vec<_> = std::thread::scope(|s| {
            let hs: Vec<_> = all
                .chunks(n / 2)
                .map(|chunk| {
                    let rt = &rt;
                    s.spawn(move || {
                        chunk
                            .iter()
                            .map(|(i, o)| {
                                rt.execute_async(id, i, o).unwrap_or_else(|e| {
                                    panic!("limit {limit}: submit failed instead of waiting: {e}")
                                })
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(reqs.len(), n);
        for r in reqs {
            rt.wait(r, Duration::from_secs(30)).unwrap();
        }
        for (_, outs) in &all {
            support::check_outputs(&m, &inputs, outs);
        }
        drop(all);
        rt.unload(id).unwrap();
    }
}
