//! The determinism gate and the address-independence proof.
//!
//! - **Determinism:** every zoo model is run 20 times on fresh simulators — 12 runs one after
//!   another on one thread, then 8 runs on 8 threads at once, each with its own simulator,
//!   recorder and runtime — and every run must give the same document (all three phase traces,
//!   results and output digests) byte for byte.
//! - **Address independence:** shifting the simulator's allocation base
//!   (`MemoryConfig::alloc_base_offset`) moves every allocation's physical address, and no
//!   trace changes.

use std::thread;

use nrt_conformance::{run_sim, RunOptions};
use nrt_fixtures::zoo;
use nrt_hal::Target;

const SEQUENTIAL_RUNS: usize = 12;
const THREADS: usize = 8;

fn document(neff: &[u8], opts: &RunOptions) -> String {
    run_sim(neff, opts).expect("a conformance run").document()
}

fn gate(name: &str, target: Target) {
    let m = zoo::build(name, target).expect("a zoo model");
    let opts = RunOptions::default();
    let first = document(&m.neff, &opts);
    for run in 1..SEQUENTIAL_RUNS {
        let again = document(&m.neff, &opts);
        if let Some(d) = nrt_conformance::first_difference(&first, &again, 3) {
            panic!("{}: sequential run {run} differs from run 0: {d}", m.id());
        }
    }
    let concurrent: Vec<String> = thread::scope(|s| {
        let handles: Vec<_> = (0..THREADS)
            .map(|_| s.spawn(|| document(&m.neff, &opts)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a run thread"))
            .collect()
    });
    assert_eq!(SEQUENTIAL_RUNS + concurrent.len(), 20);
    for (i, doc) in concurrent.iter().enumerate() {
        if let Some(d) = nrt_conformance::first_difference(&first, doc, 3) {
            panic!(
                "{}: thread {i} of {THREADS} differs from the single-thread run: {d}",
                m.id()
            );
        }
    }
}

macro_rules! determinism_gate {
    ($($test:ident: $name:literal on $target:ident;)*) => {
        $(
            #[test]
            fn $test() {
                gate($name, Target::$target);
            }
        )*

        #[test]
        fn the_gate_covers_every_zoo_model() {
            let covered: Vec<String> = vec![$(format!("{}.{}", $name, Target::$target.name())),*];
            let all: Vec<String> = zoo::all().iter().map(|m| m.id()).collect();
            assert_eq!(covered, all);
        }
    };
}

determinism_gate! {
    deterministic_add_trn1: "add" on Trn1;
    deterministic_add_trn2: "add" on Trn2;
    deterministic_matmul_bias_relu_trn1: "matmul_bias_relu" on Trn1;
    deterministic_matmul_bias_relu_trn2: "matmul_bias_relu" on Trn2;
    deterministic_mlp2_trn1: "mlp2" on Trn1;
    deterministic_mlp2_trn2: "mlp2" on Trn2;
    deterministic_transpose_trn1: "transpose" on Trn1;
    deterministic_transpose_trn2: "transpose" on Trn2;
    deterministic_reduce_trn1: "reduce" on Trn1;
    deterministic_reduce_trn2: "reduce" on Trn2;
    deterministic_lnc2_add_trn2: "lnc2_add" on Trn2;
    deterministic_many_queues_trn1: "many_queues" on Trn1;
    deterministic_many_queues_trn2: "many_queues" on Trn2;
    deterministic_pseudo_trn1: "pseudo" on Trn1;
    deterministic_pseudo_trn2: "pseudo" on Trn2;
    deterministic_real_like_trn1: "real_like" on Trn1;
    deterministic_real_like_trn2: "real_like" on Trn2;
    deterministic_neuron_add_trn1: "neuron_add" on Trn1;
    deterministic_neuron_add_trn2: "neuron_add" on Trn2;
    deterministic_neuron_matmul_bias_act_trn1: "neuron_matmul_bias_act" on Trn1;
    deterministic_neuron_matmul_bias_act_trn2: "neuron_matmul_bias_act" on Trn2;
    deterministic_neuron_conv_pool_trn1: "neuron_conv_pool" on Trn1;
    deterministic_neuron_conv_pool_trn2: "neuron_conv_pool" on Trn2;
    deterministic_neuron_transpose_trn1: "neuron_transpose" on Trn1;
    deterministic_neuron_transpose_trn2: "neuron_transpose" on Trn2;
    deterministic_neuron_gather_trn1: "neuron_gather" on Trn1;
    deterministic_neuron_gather_trn2: "neuron_gather" on Trn2;
}

/// 8 threads each running a *different* model at the same time give the same documents as
/// running them one by one.
#[test]
fn different_models_on_eight_threads_match_single_thread_runs() {
    let models: Vec<_> = zoo::all().into_iter().take(THREADS).collect();
    let opts = RunOptions::default();
    let alone: Vec<String> = models.iter().map(|m| document(&m.neff, &opts)).collect();
    let together: Vec<String> = thread::scope(|s| {
        let handles: Vec<_> = models
            .iter()
            .map(|m| s.spawn(|| document(&m.neff, &opts)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a run thread"))
            .collect()
    });
    for ((m, a), t) in models.iter().zip(&alone).zip(&together) {
        assert!(
            a == t,
            "{}: {:?}",
            m.id(),
            nrt_conformance::first_difference(a, t, 3)
        );
    }
}

/// Shifting the allocation base changes every physical address and no trace.
#[test]
fn traces_do_not_depend_on_physical_addresses() {
    const SHIFT: u64 = 0x10_0000;
    for m in zoo::all() {
        let base = run_sim(&m.neff, &RunOptions::default()).unwrap();
        let shifted = run_sim(
            &m.neff,
            &RunOptions {
                alloc_base_offset: SHIFT,
                ..RunOptions::default()
            },
        )
        .unwrap();
        // Physical addresses moved: every allocation the two runs hold, by exactly the shift.
        assert_eq!(
            base.allocations.len(),
            shifted.allocations.len(),
            "{}",
            m.id()
        );
        assert!(!base.allocations.is_empty());
        for (a, b) in base.allocations.iter().zip(&shifted.allocations) {
            assert_eq!(
                (a.nc, a.id, a.size, a.category),
                (b.nc, b.id, b.size, b.category)
            );
            assert_eq!(
                b.pa.raw(),
                a.pa.raw() + SHIFT,
                "{} {}#{}",
                m.id(),
                a.nc,
                a.id
            );
        }
        // The traces did not.
        let (d0, d1) = (base.document(), shifted.document());
        assert!(
            d0 == d1,
            "{}: {:?}",
            m.id(),
            nrt_conformance::first_difference(&d0, &d1, 3)
        );
        assert!(!d0.contains("?0x"), "{}", m.id());
    }
}
