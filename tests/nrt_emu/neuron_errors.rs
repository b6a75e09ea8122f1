//! A Neuron-encoded NEFF whose records break what the encoding establishes fails its
//! execution with `NRT_EXEC_COMPLETED_WITH_ERR` and a message naming the subgraph, engine,
//! record index, opcode and field, with the record's bytes — and nothing outside the device is
//! touched: the next execution of a good model on the same runtime still works. A program that
//! can never finish is reported as a deadlock naming each stuck engine's wait.

use std::sync::Arc;

use nrt_emu::hal::isa::neuron::NeuronOpcode;
use nrt_emu::hal::isa::Record;
use nrt_emu::hal::{EngineKind, Hal, Target};
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::{NrtStatus, Runtime};
use nrt_emu::sim::{Sim, SimConfig};
use nrt_fixtures::{zoo, ZooModel, GOLDEN_SEED};

use crate::support;

/// `neuron_add` on trn1 with its DVE `0x41` record passed through `edit`: the model, the
/// broken NEFF, the record's index and its bytes in hex.
fn broken_add(edit: impl Fn(&mut [u8; 64])) -> (ZooModel, Vec<u8>, usize, String) {
    let m = zoo::build("neuron_add", Target::Trn1).unwrap();
    let mut p = m.program.clone();
    let records = &mut p.subgraphs[0].engine_mut(EngineKind::Dve).records;
    let at = records
        .iter()
        .position(|r| r.opcode() == NeuronOpcode::TensorTensor.byte())
        .unwrap();
    let mut bytes = records[at].0;
    edit(&mut bytes);
    records[at] = Record(bytes);
    let neff = p.to_neff();
    (m, neff, at, Record(bytes).to_hex())
}

/// A runtime on trn1 whose engines run their programs alone (no runtime instructions around
/// them, which would let the SP go first): a broken record fails before the SP, which has
/// nothing to wait for in the broken NEFF (it loads as the platform encoding, without the
/// waits of the Neuron encoding's triggers), runs past the end of its stream.
fn runtime() -> Runtime {
    let mut cfg = SimConfig::new(Target::Trn1);
    cfg.timing.runtime = None;
    let sim = Arc::new(Sim::new(cfg));
    Runtime::new(sim as Arc<dyn Hal>, RuntimeConfig::default()).unwrap()
}

/// Loads and executes `neff` (the add model's IO) and returns the error message.
fn failure(rt: &Runtime, m: &ZooModel, neff: &[u8]) -> String {
    let id = rt.load(neff, 0).unwrap();
    let inputs = m.generate_inputs(GOLDEN_SEED);
    let (ins, outs) = support::device_io(rt, m, 0, &inputs);
    let e = rt.execute(id, &ins, &outs).unwrap_err();
    assert_eq!(e.status, NrtStatus::ExecCompletedWithErr, "{e}");
    drop((ins, outs));
    rt.unload(id).unwrap();
    e.message
}

/// A good execution on the same runtime afterwards still computes its reference.
fn still_works(rt: &Runtime) {
    let m = zoo::build("neuron_add", Target::Trn1).unwrap();
    let id = rt.load(&m.neff, 0).unwrap();
    let inputs = m.generate_inputs(3);
    let (ins, outs) = support::device_io(rt, &m, 0, &inputs);
    rt.execute(id, &ins, &outs).unwrap();
    support::check_outputs(&m, &inputs, &outs);
}

fn assert_names(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "{p:?} missing from: {msg}");
    }
}

#[test]
fn an_unknown_opcode_names_engine_record_and_bytes() {
    let rt = runtime();
    let (m, neff, at, hex) = broken_add(|b| b[0] = 0x44);
    let msg = failure(&rt, &m, &neff);
    assert_names(
        &msg,
        &[
            "subgraph sg00",
            "engine DVE",
            &format!("NEFF instruction {at} "),
            "opcode 0x44",
            "unknown opcode 0x44",
            &hex,
        ],
    );
    still_works(&rt);
}

#[test]
fn a_partition_count_out_of_range_names_the_field() {
    let rt = runtime();
    for bad in [0u8, 129] {
        let (m, neff, at, _) = broken_add(|b| b[15] = bad);
        let msg = failure(&rt, &m, &neff);
        assert_names(
            &msg,
            &[
                "engine DVE",
                &format!("NEFF instruction {at} "),
                "opcode 0x41",
                "byte 15 (partitions)",
                &format!("{bad:#x}"),
            ],
        );
    }
    still_works(&rt);
}

#[test]
fn an_access_pattern_outside_sbuf_is_refused_before_any_access() {
    let rt = runtime();
    // The out AP (bytes 48–63) starts 4 bytes before the end of a trn1 SBUF partition
    // (192 KiB) and writes 512 f32.
    let (m, neff, at, _) =
        broken_add(|b| b[48..52].copy_from_slice(&(196_608u32 - 4).to_le_bytes()));
    let msg = failure(&rt, &m, &neff);
    assert_names(
        &msg,
        &[
            "engine DVE",
            &format!("NEFF instruction {at} "),
            "OutOfBounds",
            "operand out",
            "outside 0..196608",
        ],
    );
    still_works(&rt);
}

#[test]
fn a_wait_that_can_never_hold_is_a_deadlock_naming_each_engine() {
    let rt = runtime();
    // DVE waits for 99 completions of SP's queue set, which only ever reaches 2; POOL then
    // waits for DVE forever.
    let (m, neff, at, _) = broken_add(|b| b[8..12].copy_from_slice(&99u32.to_le_bytes()));
    let msg = failure(&rt, &m, &neff);
    assert_names(
        &msg,
        &[
            "deadlock",
            &format!("engine DVE at NEFF instruction {at} (opcode 0x41) waits for sem8 >= 99, which holds 2"),
            "engine POOL at NEFF instruction 1 (opcode 0xc1) waits for sem6 >= 1, which holds 0",
        ],
    );
    still_works(&rt);
}

#[test]
fn a_block_triggered_twice_is_refused_at_load() {
    let m = zoo::build("neuron_add", Target::Trn1).unwrap();
    let mut p = m.program.clone();
    let records = &mut p.subgraphs[0].engine_mut(EngineKind::Sp).records;
    let at = records
        .iter()
        .position(|r| r.opcode() == NeuronOpcode::DmaTrigger.byte())
        .unwrap();
    let again = records[at];
    records.insert(at + 1, again);
    let rt = runtime();
    let e = rt.load(&p.to_neff(), 0).unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid, "{e}");
    assert!(e.message.contains("a second time"), "{e}");
    still_works(&rt);
}

#[test]
fn a_staging_failure_after_the_queues_were_taken_returns_them() {
    // neuron_add with a DMA_DIRECT2D whose completion adds nothing (byte 14) appended to its
    // Pool stream: the load fails relocating the stream, after the queue sets its triggers use
    // took their hardware queues. Each failure must return them: more failures than the core
    // has queues for, and the good model still loads.
    let m = zoo::build("neuron_add", Target::Trn1).unwrap();
    let mut p = m.program.clone();
    let (_, mut dma) = nrt_emu::hal::isa::neuron::samples()
        .into_iter()
        .find(|s| s.1.opcode() == NeuronOpcode::DmaDirect2d.byte())
        .unwrap();
    dma.0[14] = 0;
    p.subgraphs[0]
        .engine_mut(EngineKind::Pool)
        .records
        .push(dma);
    let neff = p.to_neff();
    // (The broken NEFF keeps the good one's UUID: it is loaded first, so the runtime's
    // parsed-NEFF cache cannot hand back the good one.)
    let rt = runtime();
    let fail = || {
        let e = rt.load(&neff, 0).unwrap_err();
        assert_eq!(e.status, NrtStatus::Invalid, "{e}");
        assert!(e.message.contains("sem_increment"), "{e}");
    };
    fail();
    let before = support::device_bytes_and_allocations(&**rt.hal());
    // Every (engine, queue) of a core is 16 × 14 queues.
    for _ in 0..250 {
        fail();
    }
    assert_eq!(support::device_bytes_and_allocations(&**rt.hal()), before);
    still_works(&rt);
}
