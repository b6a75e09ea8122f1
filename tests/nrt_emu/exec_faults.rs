//! Faults during execution surface as the documented statuses; a poisoned execution unit
//! answers 101 until the model is reloaded; the lifecycle guards answer 13 and 14.

use std::sync::Arc;
use std::time::Duration;

use nrt_emu::hal::{EngineKind, Hal, NcIndex, Target};
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::nrt::{status_as_str, Nrt};
use nrt_emu::runtime::tensor::{Placement, TensorSet};
use nrt_emu::runtime::{ModelId, NrtStatus, Runtime};
use nrt_emu::sim::{FaultPlan, Sim, SimConfig};
use nrt_fixtures::{zoo, ZooModel, GOLDEN_SEED};

fn setup(
    name: &str,
    target: Target,
    faults: FaultPlan,
    cfg: RuntimeConfig,
) -> (Arc<Sim>, Runtime, ZooModel, ModelId) {
    let m = zoo::build(name, target).unwrap();
    let sim = Arc::new(Sim::new(SimConfig::new(target).with_faults(faults)));
    let rt = Runtime::new(sim.clone() as Arc<dyn Hal>, cfg).unwrap();
    let id = rt.load(&m.neff, 0).unwrap();
    (sim, rt, m, id)
}

fn io(rt: &Runtime, m: &ZooModel, inputs: &[Vec<u8>]) -> (TensorSet, TensorSet) {
    let mut ins = TensorSet::new();
    for (s, d) in m.inputs.iter().zip(inputs) {
        let t = rt
            .tensor_allocate(Placement::Device, 0, s.size() as u64, &s.name)
            .unwrap();
        t.write(0, d).unwrap();
        ins.add(&s.name, t);
    }
    let mut outs = TensorSet::new();
    for s in &m.outputs {
        outs.add(
            &s.name,
            rt.tensor_allocate(Placement::Device, 0, s.size() as u64, &s.name)
                .unwrap(),
        );
    }
    (ins, outs)
}

fn short_timeout() -> RuntimeConfig {
    RuntimeConfig {
        exec_timeout: Duration::from_millis(300),
        ..RuntimeConfig::default()
    }
}

#[test]
fn a_hung_engine_times_out_and_poisons_the_unit_until_reload() {
    let plan = FaultPlan {
        hung_engines: vec![(NcIndex(0), EngineKind::Dve)],
        ..FaultPlan::default()
    };
    let (sim, rt, m, id) = setup("add", Target::Trn1, plan, short_timeout());
    let inputs = m.generate_inputs(GOLDEN_SEED);
    let (ins, outs) = io(&rt, &m, &inputs);
    let e = rt.execute(id, &ins, &outs).unwrap_err();
    assert_eq!(e.status, NrtStatus::Timeout, "{e}");
    assert!(e.message.contains("NEURON_RT_EXEC_TIMEOUT"), "{e}");
    assert!(rt.is_poisoned(0));
    for _ in 0..3 {
        let e = rt.execute(id, &ins, &outs).unwrap_err();
        assert_eq!(e.status, NrtStatus::ExecUnitUnrecoverable, "{e}");
    }
    let _ = sim;
}

#[test]
fn a_dma_abort_is_1203_and_the_unit_recovers_after_a_reload() {
    let (_sim, rt, m, id) = setup(
        "add",
        Target::Trn1,
        FaultPlan {
            // The first model queue of core 0 (the pool hands out the lowest first).
            abort_queues: vec![nrt_emu::hal::QueueRef::new(
                NcIndex(0),
                nrt_emu::hal::DmaEngine(0),
                nrt_emu::hal::QueueId(0),
            )],
            ..FaultPlan::default()
        },
        RuntimeConfig::default(),
    );
    let inputs = m.generate_inputs(GOLDEN_SEED);
    let (ins, outs) = io(&rt, &m, &inputs);
    let e = rt.execute(id, &ins, &outs).unwrap_err();
    assert_eq!(e.status, NrtStatus::ExecHwErrDmaAbort, "{e}");
    assert!(e.message.contains("aborted"), "{e}");
    assert_eq!(
        rt.execute(id, &ins, &outs).unwrap_err().status,
        NrtStatus::ExecUnitUnrecoverable
    );
    // Reload: the logical core is reset and the unit cleared.
    rt.unload(id).unwrap();
    let id = rt.load(&m.neff, 0).unwrap();
    assert!(!rt.is_poisoned(0));
    rt.execute(id, &ins, &outs).unwrap();
    let got: Vec<Vec<u8>> = m
        .outputs
        .iter()
        .map(|s| outs.get(&s.name).unwrap().to_vec().unwrap())
        .collect();
    m.check_outputs(&inputs, &got).unwrap();
}

#[test]
fn an_hbm_uncorrectable_error_is_1201() {
    let (sim, rt, m, id) = setup(
        "add",
        Target::Trn1,
        FaultPlan::none(),
        RuntimeConfig::default(),
    );
    let inputs = m.generate_inputs(GOLDEN_SEED);
    let (ins, outs) = io(&rt, &m, &inputs);
    let a = ins.get("a").unwrap().device_addr().unwrap();
    sim.inject_hbm_uncorrectable(a.checked_add(100).unwrap());
    let e = rt.execute(id, &ins, &outs).unwrap_err();
    assert_eq!(e.status, NrtStatus::ExecHwErrHbmUe, "{e}");
    assert!(e.message.contains("uncorrectable"), "{e}");
}

#[test]
fn nan_outputs_are_1003_and_still_delivered() {
    let (_sim, rt, m, id) = setup(
        "add",
        Target::Trn1,
        FaultPlan::none(),
        RuntimeConfig::default(),
    );
    let mut inputs = m.generate_inputs(GOLDEN_SEED);
    inputs[0][0..4].copy_from_slice(&f32::NAN.to_le_bytes());
    let (ins, outs) = io(&rt, &m, &inputs);
    let e = rt.execute(id, &ins, &outs).unwrap_err();
    assert_eq!(e.status, NrtStatus::ExecCompletedWithNumErr, "{e}");
    let out = outs.get("out").unwrap().to_vec().unwrap();
    assert!(f32::from_le_bytes(out[0..4].try_into().unwrap()).is_nan());
    // The rest of the output is right, and the next execution is fine.
    inputs[0][0..4].copy_from_slice(&1.0f32.to_le_bytes());
    ins.get("a").unwrap().write(0, &inputs[0]).unwrap();
    rt.execute(id, &ins, &outs).unwrap();
}

#[test]
fn an_instruction_the_platform_cannot_run_is_1004_naming_it_and_leaves_the_core_clean() {
    let (_sim, rt, m, id) = setup(
        "real_like",
        Target::Trn1,
        FaultPlan::none(),
        RuntimeConfig::default(),
    );
    let inputs: Vec<Vec<u8>> = m.inputs.iter().map(|s| vec![0u8; s.size()]).collect();
    let (ins, outs) = io(&rt, &m, &inputs);
    let e = rt.execute(id, &ins, &outs).unwrap_err();
    assert_eq!(e.status, NrtStatus::ExecCompletedWithErr, "{e}");
    assert!(e.message.contains("opcode 0x"), "{e}");
    assert!(e.message.contains("NEFF instruction"), "{e}");
    // Not a hardware fault: the unit is not poisoned.
    assert!(!rt.is_poisoned(0));
    // The DMAs the faulted execution had kicked ended before it completed: after an unload,
    // another model on the core executes right the first time (they used to run during its
    // execution, into the freed rings: a DMA abort).
    rt.unload(id).unwrap();
    let next = zoo::build("reduce", Target::Trn1).unwrap();
    let id = rt.load(&next.neff, 0).unwrap();
    let inputs = next.generate_inputs(GOLDEN_SEED);
    let (ins, outs) = crate::support::device_io(&rt, &next, 0, &inputs);
    rt.execute(id, &ins, &outs).unwrap();
    crate::support::check_outputs(&next, &inputs, &outs);
}

#[test]
fn a_corrupted_completion_entry_is_reported() {
    let (_sim, rt, m, id) = setup(
        "add",
        Target::Trn1,
        FaultPlan {
            corrupt_completions: vec![1],
            ..FaultPlan::default()
        },
        short_timeout(),
    );
    let inputs = m.generate_inputs(GOLDEN_SEED);
    let (ins, outs) = io(&rt, &m, &inputs);
    let e = rt.execute(id, &ins, &outs).unwrap_err();
    assert_eq!(e.status, NrtStatus::ExecSwNqOverflow, "{e}");
}

#[test]
fn lifecycle_guards_answer_13_and_14() {
    let nrt = Nrt::new();
    let e = nrt.with(|rt| rt.load(&[], 0)).unwrap_err();
    assert_eq!(e.status.code(), 13);
    assert_eq!(nrt.close().unwrap_err().status, NrtStatus::Uninitialized);
    let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn1)));
    nrt.init(sim.clone(), RuntimeConfig::default()).unwrap();
    assert_eq!(
        nrt.init(sim.clone(), RuntimeConfig::default())
            .unwrap_err()
            .status,
        NrtStatus::Failure
    );
    let m = zoo::build("add", Target::Trn1).unwrap();
    let id = nrt.with(|rt| rt.load(&m.neff, 0)).unwrap();
    nrt.close().unwrap();
    let e = nrt.with(|rt| rt.unload(id)).unwrap_err();
    assert_eq!(e.status.code(), 14);
    assert_eq!(e.to_string(), "NRT_CLOSED(14): called after nrt_close");
    assert_eq!(status_as_str(1203), "NRT_EXEC_HW_ERR_DMA_ABORT");
    assert_eq!(status_as_str(8), "NRT_UNKNOWN_STATUS");
}
