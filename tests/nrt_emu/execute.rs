//! The platform's main job end to end: load every zoo model on the simulator, execute it, and
//! compare its outputs with the model's independent f64 reference (trn1 and trn2).

use std::sync::Arc;
use std::time::Duration;

use nrt_emu::hal::{Hal, Target};
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::tensor::{Placement, TensorSet};
use nrt_emu::runtime::{ModelId, NrtStatus, Runtime};
use nrt_emu::sim::{FaultPlan, Sim, SimConfig};
use nrt_fixtures::{zoo, ZooModel, GOLDEN_SEED};

struct Bench {
    sim: Arc<Sim>,
    rt: Runtime,
}

fn bench(target: Target, cfg: RuntimeConfig, faults: FaultPlan) -> Bench {
    let sim = Arc::new(Sim::new(SimConfig::new(target).with_faults(faults)));
    let rt = Runtime::new(sim.clone() as Arc<dyn Hal>, cfg).unwrap();
    Bench { sim, rt }
}

/// Allocates device tensors for `m`'s IO on the model's vcore, writes `inputs`.
fn sets(
    b: &Bench,
    id: ModelId,
    m: &ZooModel,
    inputs: &[Vec<u8>],
    placement: Placement,
) -> (TensorSet, TensorSet) {
    let vnc = b.rt.model(id).unwrap().vnc;
    let mut ins = TensorSet::new();
    for (spec, data) in m.inputs.iter().zip(inputs) {
        let t =
            b.rt.tensor_allocate(placement, vnc, spec.size() as u64, &spec.name)
                .unwrap();
        t.write(0, data).unwrap();
        ins.add(&spec.name, t);
    }
    let mut outs = TensorSet::new();
    for spec in &m.outputs {
        let t =
            b.rt.tensor_allocate(placement, vnc, spec.size() as u64, &spec.name)
                .unwrap();
        outs.add(&spec.name, t);
    }
    (ins, outs)
}

fn outputs(m: &ZooModel, outs: &TensorSet) -> Vec<Vec<u8>> {
    m.outputs
        .iter()
        .map(|s| outs.get(&s.name).unwrap().to_vec().unwrap())
        .collect()
}

#[test]
fn every_zoo_model_computes_its_reference_on_trn1_and_trn2() {
    for m in zoo::all().into_iter().filter(|m| m.executable) {
        let b = bench(m.target, RuntimeConfig::default(), FaultPlan::none());
        let id = b.rt.load(&m.neff, -1).unwrap();
        let inputs = m.generate_inputs(GOLDEN_SEED);
        let (ins, outs) = sets(&b, id, &m, &inputs, Placement::Device);
        let report =
            b.rt.execute(id, &ins, &outs)
                .unwrap_or_else(|e| panic!("{}.{}: {e}", m.name, m.target));
        assert!(report.cycles.iter().all(|c| *c > 0));
        let got = outputs(&m, &outs);
        m.check_outputs(&inputs, &got)
            .unwrap_or_else(|e| panic!("{}.{}: {e}", m.name, m.target));
        // A second execution (the skip-config path) gives the same bytes, faster.
        outs.iter()
            .for_each(|(_, t)| t.memset(0, 0, t.size()).unwrap());
        let again = b.rt.execute(id, &ins, &outs).unwrap();
        assert_eq!(outputs(&m, &outs), got, "{}.{}", m.name, m.target);
        for (a, b) in again.cycles.iter().zip(&report.cycles) {
            assert!(
                a < b,
                "{}.{}: second run {a} cycles !< first {b}",
                m.name,
                m.target
            );
        }
        drop((ins, outs));
        b.rt.unload(id).unwrap();
    }
}

#[test]
fn host_tensors_are_staged_in_sync_mode_and_refused_in_async_mode() {
    let m = zoo::build("add", Target::Trn1).unwrap();
    let b = bench(Target::Trn1, RuntimeConfig::default(), FaultPlan::none());
    let id = b.rt.load(&m.neff, 0).unwrap();
    let inputs = m.generate_inputs(7);
    let (ins, outs) = sets(&b, id, &m, &inputs, Placement::Virtual);
    b.rt.execute(id, &ins, &outs).unwrap();
    m.check_outputs(&inputs, &outputs(&m, &outs)).unwrap();
    let e = b.rt.execute_async(id, &ins, &outs).unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid);
    assert_eq!(
        e.message,
        "Async exec mode only supports device allocated tensors"
    );
}

#[test]
fn two_runs_are_byte_identical_in_outputs_and_cycles() {
    let m = zoo::build("mlp2", Target::Trn2).unwrap();
    let run = || {
        let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn2).with_timeline()));
        let rt = Runtime::new(sim.clone() as Arc<dyn Hal>, RuntimeConfig::default()).unwrap();
        let b = Bench { sim, rt };
        let id = b.rt.load(&m.neff, -1).unwrap();
        let inputs = m.generate_inputs(GOLDEN_SEED);
        let (ins, outs) = sets(&b, id, &m, &inputs, Placement::Device);
        let r1 = b.rt.execute(id, &ins, &outs).unwrap();
        let r2 = b.rt.execute(id, &ins, &outs).unwrap();
        (
            outputs(&m, &outs),
            r1.cycles,
            r2.cycles,
            b.sim.timeline_json(),
        )
    };
    assert_eq!(run(), run());
}

#[test]
fn async_with_eight_in_flight_matches_sync() {
    let m = zoo::build("matmul_bias_relu", Target::Trn1).unwrap();
    let inputs = m.generate_inputs(GOLDEN_SEED);
    let sync = {
        let b = bench(Target::Trn1, RuntimeConfig::default(), FaultPlan::none());
        let id = b.rt.load(&m.neff, 0).unwrap();
        let (ins, outs) = sets(&b, id, &m, &inputs, Placement::Device);
        b.rt.execute(id, &ins, &outs).unwrap();
        outputs(&m, &outs)
    };
    let cfg = RuntimeConfig {
        async_max_inflight: 8,
        ..RuntimeConfig::default()
    };
    let b = bench(Target::Trn1, cfg, FaultPlan::none());
    let id = b.rt.load(&m.neff, 0).unwrap();
    // Eight independent output sets so every execution's result can be checked.
    let mut reqs = Vec::new();
    let mut all_outs = Vec::new();
    for _ in 0..20 {
        let (ins, outs) = sets(&b, id, &m, &inputs, Placement::Device);
        reqs.push(b.rt.execute_async(id, &ins, &outs).unwrap());
        all_outs.push((ins, outs));
    }
    for (r, (_, outs)) in reqs.into_iter().zip(&all_outs) {
        b.rt.wait(r, Duration::from_secs(30)).unwrap();
        assert_eq!(outputs(&m, outs), sync);
    }
    drop(all_outs);
    b.rt.unload(id).unwrap();
    let _ = &b.sim;
}

#[test]
fn wrong_inputs_are_refused_with_clear_messages() {
    let m = zoo::build("add", Target::Trn1).unwrap();
    let b = bench(Target::Trn1, RuntimeConfig::default(), FaultPlan::none());
    let id = b.rt.load(&m.neff, 0).unwrap();
    let inputs = m.generate_inputs(1);
    let (ins, outs) = sets(&b, id, &m, &inputs, Placement::Device);
    let mut one = TensorSet::new();
    one.add("a", ins.get("a").unwrap().clone());
    let e = b.rt.execute(id, &one, &outs).unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid);
    assert_eq!(
        e.message,
        "Incorrect number of inputs, expected: 2, received: 1"
    );
    let mut bad = ins.clone();
    bad.add(
        "b",
        b.rt.tensor_allocate(Placement::Device, 0, 16, "b").unwrap(),
    );
    let e = b.rt.execute(id, &bad, &outs).unwrap_err();
    assert!(
        e.message.contains("\"b\"") && e.message.contains("expects"),
        "{e}"
    );
    let mut wrong_core = ins.clone();
    wrong_core.add(
        "a",
        b.rt.tensor_allocate(Placement::Device, 1, 128 * 512 * 4, "a")
            .unwrap(),
    );
    let e = b.rt.execute(id, &wrong_core, &outs).unwrap_err();
    assert!(e.message.contains("logical core"), "{e}");
    assert_eq!(
        b.rt.execute(ModelId(99), &ins, &outs).unwrap_err().status,
        NrtStatus::InvalidHandle
    );
}

/// The zoo transpose on the host: the f32 bytes of a [64, 32] matrix to those of its [32, 64]
/// transpose.
fn transpose_64x32(x: &[u8]) -> Vec<u8> {
    let (rows, cols) = (64, 32);
    let mut y = vec![0u8; x.len()];
    for r in 0..rows {
        for c in 0..cols {
            let (from, to) = ((r * cols + c) * 4, (c * rows + r) * 4);
            y[to..to + 4].copy_from_slice(&x[from..from + 4]);
        }
    }
    y
}

#[test]
fn execute_repeat_feeds_each_run_the_previous_outputs() {
    // transpose: x f32[64, 32] → y f32[32, 64], the same dtype and byte size, so y can feed x
    // (read again as a [64, 32] matrix).
    let m = zoo::build("transpose", Target::Trn1).unwrap();
    let b = bench(Target::Trn1, RuntimeConfig::default(), FaultPlan::none());
    let id = b.rt.load(&m.neff, 0).unwrap();
    let inputs = m.generate_inputs(11);
    let (ins, outs) = sets(&b, id, &m, &inputs, Placement::Device);
    let tensor_bytes = || {
        let u = b.sim.memory_usage(nrt_emu::hal::NcIndex(0)).unwrap();
        u.by_category[nrt_emu::hal::abi::MemAllocCategory::TensorsDevice as usize]
    };
    let before = tensor_bytes();
    let mut expect = inputs[0].clone();
    for count in 1..=3u32 {
        expect = transpose_64x32(&expect);
        b.rt.execute_repeat(id, &ins, &outs, count).unwrap();
        assert!(
            outputs(&m, &outs)[0] == expect,
            "repeat {count}: not {count} transposes of the input"
        );
    }
    assert!(
        ins.get(&m.inputs[0].name).unwrap().to_vec().unwrap() == inputs[0],
        "the caller's input is never written"
    );
    assert_eq!(tensor_bytes(), before, "the spare tensors are freed");
    let e = b.rt.execute_repeat(id, &ins, &outs, 0).unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid);
}

#[test]
fn execute_repeat_refuses_a_model_whose_outputs_cannot_feed_its_inputs() {
    let m = zoo::build("add", Target::Trn1).unwrap();
    let b = bench(Target::Trn1, RuntimeConfig::default(), FaultPlan::none());
    let id = b.rt.load(&m.neff, 0).unwrap();
    let inputs = m.generate_inputs(3);
    let (ins, outs) = sets(&b, id, &m, &inputs, Placement::Device);
    let e = b.rt.execute_repeat(id, &ins, &outs, 2).unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid);
    assert!(
        e.message.contains("2 input(s) and 1 output(s)"),
        "{}",
        e.message
    );
    // One repetition is a plain execution.
    b.rt.execute_repeat(id, &ins, &outs, 1).unwrap();
    m.check_outputs(&inputs, &outputs(&m, &outs)).unwrap();
}
