//! Determinism of executions driven from several host threads (docs/simulator.md §8, §8.1):
//! two models on two cores of one device, executed
//! from 1, 2 and 8 host threads, sync and async, and an LNC=2 model from 1 and 2 threads, give
//! the same outputs and the same per-execution cycle counts on every run. Only the order in
//! which the executions of different threads interleave may differ, so the cycle counts are
//! compared per model as the sorted list over all of its executions (each execution's count is
//! its own start to its own completion on its core).

use std::sync::Arc;
use std::time::Duration;

use nrt_emu::hal::{Hal, Target};
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::tensor::TensorSet;
use nrt_emu::runtime::{ModelId, Runtime};
use nrt_emu::sim::{Sim, SimConfig};
use nrt_fixtures::{zoo, ZooModel, GOLDEN_SEED};

use super::support::{device_io, read_outputs};

const WAIT: Duration = Duration::from_secs(60);
/// Executions of each model per run (divisible by every thread count used per model).
const EXECS: usize = 8;

/// What one model did in a run: its outputs after the last execution, and every execution's
/// per-core cycle counts, sorted.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    outputs: Vec<Vec<u8>>,
    cycles: Vec<Vec<u64>>,
}

/// A loaded model and the one pair of tensor sets every thread executes it with: what a core
/// does may depend on the addresses it is given (the runtime reprograms IO descriptors when
/// they change), so all threads use the same ones, and only the interleaving varies.
struct Loaded {
    m: ZooModel,
    id: ModelId,
    inputs: Vec<Vec<u8>>,
    ins: TensorSet,
    outs: TensorSet,
}

fn runtime(target: Target, async_max_inflight: u32) -> Runtime {
    let sim = Arc::new(Sim::new(SimConfig::new(target)));
    let cfg = RuntimeConfig {
        async_max_inflight,
        ..RuntimeConfig::default()
    };
    Runtime::new(sim as Arc<dyn Hal>, cfg).unwrap()
}

fn load(rt: &Runtime, name: &str, target: Target) -> Loaded {
    let m = zoo::build(name, target).unwrap();
    let id = rt.load(&m.neff, -1).unwrap();
    let vnc = rt.model(id).unwrap().vnc;
    let inputs = m.generate_inputs(GOLDEN_SEED);
    let (ins, outs) = device_io(rt, &m, vnc, &inputs);
    Loaded {
        m,
        id,
        inputs,
        ins,
        outs,
    }
}

/// What [`drive`] returns: each execution's per-core cycles, and the outputs.
type Driven = (Vec<Vec<u64>>, Vec<Vec<u8>>);

/// `n` executions of `l` from the calling thread, sync, or async with up to 4 in flight;
/// returns each execution's cycles and the outputs.
fn drive(rt: &Runtime, l: &Loaded, n: usize, asynchronous: bool) -> Driven {
    let (ins, outs) = (&l.ins, &l.outs);
    let mut cycles = Vec::with_capacity(n);
    if asynchronous {
        let mut q = std::collections::VecDeque::new();
        for _ in 0..n {
            if q.len() == 4 {
                cycles.push(rt.wait(q.pop_front().unwrap(), WAIT).unwrap().cycles);
            }
            q.push_back(rt.execute_async(l.id, ins, outs).unwrap());
        }
        for r in q {
            cycles.push(rt.wait(r, WAIT).unwrap().cycles);
        }
    } else {
        for _ in 0..n {
            cycles.push(rt.execute(l.id, ins, outs).unwrap().cycles);
        }
    }
    (cycles, read_outputs(&l.m, outs))
}

/// Runs `EXECS` executions of each model from `threads` host threads in all (spread evenly over
/// the models; with one thread, the models' executions alternate).
fn run(models: &[(&str, Target)], threads: usize, async_max_inflight: u32) -> Vec<Outcome> {
    let target = models[0].1;
    let rt = runtime(target, async_max_inflight);
    let loaded: Vec<Loaded> = models.iter().map(|&(n, t)| load(&rt, n, t)).collect();
    let asynchronous = async_max_inflight > 0;
    let mut results: Vec<Driven> = loaded.iter().map(|_| (Vec::new(), Vec::new())).collect();
    if threads == 1 {
        for _ in 0..EXECS {
            for (l, r) in loaded.iter().zip(&mut results) {
                let (c, o) = drive(&rt, l, 1, asynchronous);
                r.0.extend(c);
                r.1 = o;
            }
        }
    } else {
        let per_model = threads / loaded.len();
        assert!(per_model >= 1 && EXECS.is_multiple_of(per_model));
        let done: Vec<Vec<Driven>> = std::thread::scope(|s| {
            let handles: Vec<Vec<_>> = loaded
                .iter()
                .map(|l| {
                    (0..per_model)
                        .map(|_| {
                            let rt = &rt;
                            s.spawn(move || drive(rt, l, EXECS / per_model, asynchronous))
                        })
                        .collect()
                })
                .collect();
            handles
                .into_iter()
                .map(|hs| hs.into_iter().map(|h| h.join().unwrap()).collect())
                .collect()
        });
        for (per_thread, r) in done.into_iter().zip(&mut results) {
            for (c, o) in per_thread {
                r.0.extend(c);
                if !r.1.is_empty() {
                    assert_eq!(r.1, o, "threads of one model produced different outputs");
                }
                r.1 = o;
            }
        }
    }
    loaded
        .iter()
        .zip(results)
        .map(|(l, (mut cycles, outputs))| {
            l.m.check_outputs(&l.inputs, &outputs)
                .unwrap_or_else(|e| panic!("{}: {e}", l.m.id()));
            assert_eq!(cycles.len(), EXECS);
            assert!(cycles.iter().all(|c| c.iter().all(|&x| x > 0)));
            cycles.sort();
            Outcome { outputs, cycles }
        })
        .collect()
}

const TWO_CORES: [(&str, Target); 2] = [("mlp2", Target::Trn1), ("add", Target::Trn1)];

/// Panics unless the two runs agree, naming what differs (cycles first; outputs without
/// dumping them).
fn same(a: &[Outcome], b: &[Outcome], what: &str) {
    assert_eq!(a.len(), b.len());
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert_eq!(x.cycles, y.cycles, "{what}: model {i}: cycles differ");
        assert!(x.outputs == y.outputs, "{what}: model {i}: outputs differ");
    }
}

#[test]
fn two_cores_from_one_two_and_eight_threads_agree() {
    let one = run(&TWO_CORES, 1, 0);
    same(&one, &run(&TWO_CORES, 1, 0), "a repeated single-thread run");
    for threads in [2, 8] {
        for round in 0..2 {
            let what = format!("{threads} threads, round {round}");
            same(&one, &run(&TWO_CORES, threads, 0), &what);
        }
    }
}

#[test]
fn two_cores_async_match_sync() {
    let sync = run(&TWO_CORES, 1, 0);
    for threads in [1, 2, 8] {
        let what = format!("async, {threads} threads");
        same(&sync, &run(&TWO_CORES, threads, 8), &what);
    }
}

#[test]
fn lnc2_model_from_one_and_two_threads_agree() {
    let lnc2 = [("lnc2_add", Target::Trn2)];
    let one = run(&lnc2, 1, 0);
    assert!(one[0].cycles.iter().all(|c| c.len() == 2), "two cores each");
    same(&one, &run(&lnc2, 1, 0), "a repeated single-thread run");
    for round in 0..3 {
        same(
            &one,
            &run(&lnc2, 2, 0),
            &format!("2 threads, round {round}"),
        );
        same(
            &one,
            &run(&lnc2, 2, 8),
            &format!("2 threads async, round {round}"),
        );
    }
}
