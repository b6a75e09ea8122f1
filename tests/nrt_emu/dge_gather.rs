//! The engine-issued-DMA path end to end on a NEFF CI always has: the zoo's `neuron_gather`
//! (a gather by ids the device reads at run time, written as the 2.23 compiler writes the MoE
//! kernel's expert selection: `0xD4` DMA_DIRECT2D in its three address forms, the `dge-table`
//! var, `TENSOR_LOAD` and `REGISTER_ALU` feeding a register-addressed source).
//!
//! - Any order of valid ids gathers the right blocks on the simulator (trn1 and trn2).
//! - An id outside the table — past its end, or negative — ends the execution with
//!   `NRT_EXEC_HW_ERR_DMA_ABORT` naming the DMA_DIRECT2D, its NEFF instruction and its source
//!   `table`; nothing is written outside the tensors (the output stays as it was, and so do the
//!   guard bytes around every IO tensor, each a slice of a larger allocation), device memory is
//!   back where it was after unload, and the same runtime then runs the model correctly.
//! - Register arithmetic is modulo 2³², as the model documents: an id 2¹⁸ away from a valid
//!   one reads that valid block (no bounds check can see it).
//! - Outputs and cycle counts repeat on a fresh device.

use std::sync::Arc;

use nrt_emu::hal::{Hal, Target};
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::tensor::{Placement, Tensor, TensorSet};
use nrt_emu::runtime::{Error, NrtStatus, Runtime};
use nrt_emu::sim::{Sim, SimConfig};
use nrt_fixtures::{zoo, ZooModel, GOLDEN_SEED};

use crate::support::device_bytes_and_allocations;

/// Bytes of guard before and after every IO tensor: one block of the table, so that the
/// block just past the table lies inside the table's allocation — only a check against the
/// tensor, not the allocation, refuses it.
const GUARD: u64 = 16 * 1024;
/// What the guards hold.
const GUARD_BYTE: u8 = 0xA5;
/// What the output holds before an execution.
const UNWRITTEN: u8 = 0xFF;

fn model(target: Target) -> ZooModel {
    zoo::build("neuron_gather", target).expect("neuron_gather is generated for both targets")
}

fn runtime(target: Target) -> (Arc<Sim>, Runtime) {
    let sim = Arc::new(Sim::new(SimConfig::new(target)));
    let rt = Runtime::new(sim.clone() as Arc<dyn Hal>, RuntimeConfig::default()).unwrap();
    (sim, rt)
}

/// The golden table with `ids`.
fn inputs(m: &ZooModel, ids: &[i32]) -> Vec<Vec<u8>> {
    let mut v = m.generate_inputs(GOLDEN_SEED);
    v[1] = ids.iter().flat_map(|i| i.to_le_bytes()).collect();
    v
}

/// What one load → execute → unload left behind.
struct Run {
    result: Result<Vec<u64>, Error>,
    /// The output tensor's bytes after the execution.
    out: Vec<u8>,
    /// Every IO tensor's whole allocation after the execution, and what it held before.
    arenas: Vec<(String, Vec<u8>, Vec<u8>)>,
}

/// Loads `m` on `rt`, binds each IO tensor as a slice of an allocation with `GUARD` bytes of
/// `GUARD_BYTE` either side (inputs holding `inputs`, the output `UNWRITTEN`), executes once,
/// reads everything back, frees the tensors and unloads.
fn run(rt: &Runtime, m: &ZooModel, inputs: &[Vec<u8>]) -> Run {
    let id = rt.load(&m.neff, -1).unwrap();
    let vnc = rt.model(id).unwrap().vnc;
    let mut arenas: Vec<(String, Tensor, Vec<u8>)> = Vec::new();
    let mut bind = |set: &mut TensorSet, name: &str, contents: Vec<u8>| {
        let size = contents.len() as u64;
        let arena = rt
            .tensor_allocate(Placement::Device, vnc, GUARD + size + GUARD, name)
            .unwrap();
        arena.memset(0, GUARD_BYTE, arena.size()).unwrap();
        let t = arena.slice(GUARD, size, name).unwrap();
        t.write(0, &contents).unwrap();
        set.add(name, t);
        let before = arena.to_vec().unwrap();
        arenas.push((name.to_string(), arena, before));
    };
    let (mut ins, mut outs) = (TensorSet::new(), TensorSet::new());
    for (spec, data) in m.inputs.iter().zip(inputs) {
        bind(&mut ins, &spec.name, data.clone());
    }
    for spec in &m.outputs {
        bind(&mut outs, &spec.name, vec![UNWRITTEN; spec.size()]);
    }
    let result = rt.execute(id, &ins, &outs).map(|r| r.cycles);
    let out = outs.get("out").unwrap().to_vec().unwrap();
    let arenas = arenas
        .into_iter()
        .map(|(name, arena, before)| (name, arena.to_vec().unwrap(), before))
        .collect();
    drop((ins, outs));
    rt.unload(id).unwrap();
    Run {
        result,
        out,
        arenas,
    }
}

/// The index, in the Pool stream of `m`, of its `k`-th register-addressed DMA_DIRECT2D.
fn gather_record(m: &ZooModel, k: usize) -> usize {
    use nrt_emu::hal::isa::neuron::{DmaAddrKind, NeuronInstr};
    let pool = &m.program.subgraphs[0]
        .engine(nrt_emu::hal::EngineKind::Pool)
        .records;
    pool.iter()
        .enumerate()
        .filter(|(_, r)| {
            matches!(NeuronInstr::decode(r), Ok(NeuronInstr::DmaDirect2d { src, .. })
                if src.kind == DmaAddrKind::TableRegister)
        })
        .nth(k)
        .expect("a gather per id")
        .0
}

#[test]
fn any_order_of_valid_ids_gathers_the_right_blocks_on_the_device() {
    for target in Target::ALL {
        let m = model(target);
        let (_sim, rt) = runtime(target);
        for ids in [[1, -1, 0, 1, -1], [-1, -1, -1, -1, -1], [0, 1, -1, 0, 1]] {
            let inputs = inputs(&m, &ids);
            let r = run(&rt, &m, &inputs);
            r.result
                .unwrap_or_else(|e| panic!("{}: {ids:?}: {e}", m.id()));
            m.check_outputs(&inputs, &[r.out])
                .unwrap_or_else(|e| panic!("{ids:?}: {e}"));
        }
    }
}

#[test]
fn an_id_outside_the_table_is_a_dma_abort_that_writes_nothing() {
    for target in Target::ALL {
        let m = model(target);
        let (sim, rt) = runtime(target);
        let golden = m.generate_inputs(GOLDEN_SEED);
        // Warm-up: the runtime keeps per-core resources from the first execution on.
        let good = run(&rt, &m, &golden);
        good.result.unwrap();
        m.check_outputs(&golden, &[good.out]).unwrap();
        let before = device_bytes_and_allocations(&*sim);
        // The third id is bad: the gathers before it have been issued, the store has not.
        let at = gather_record(&m, 2);
        // Past the end (the first block after the table, and far), before the start (a
        // negative id is a huge unsigned register value).
        for bad in [2, 1000, -2, -1000] {
            let inputs = inputs(&m, &[0, 1, bad, -1, 0]);
            let r = run(&rt, &m, &inputs);
            let e = r
                .result
                .expect_err(&format!("{}: id {bad} executed", m.id()));
            assert_eq!(e.status, NrtStatus::ExecHwErrDmaAbort, "{}: {e}", m.id());
            for part in [
                "subgraph sg00",
                "DMA_DIRECT2D",
                &format!("NEFF instruction {at} of sg00/Pool.bin"),
                "src_table_offset_reg=$R[31] src_table_index=0",
                "source table, destination SB",
                "outside the tensor",
            ] {
                assert!(
                    e.message.contains(part),
                    "{}: {part:?} missing: {e}",
                    m.id()
                );
            }
            // Nothing written: the output as it was, every guard and every input intact.
            assert!(
                r.out.iter().all(|&b| b == UNWRITTEN),
                "{}: id {bad}: the output was written",
                m.id()
            );
            for (name, after, was) in &r.arenas {
                assert!(
                    after == was,
                    "{}: id {bad}: {name}'s allocation changed",
                    m.id()
                );
            }
            assert_eq!(
                device_bytes_and_allocations(&*sim),
                before,
                "{}: device memory after id {bad}: {e}",
                m.id()
            );
            println!("{}: id {bad}: {e}", m.id());
        }
        // The same runtime runs the model correctly afterwards.
        let again = run(&rt, &m, &golden);
        again.result.unwrap();
        m.check_outputs(&golden, &[again.out]).unwrap();
        assert_eq!(device_bytes_and_allocations(&*sim), before);
    }
}

#[test]
fn register_arithmetic_wraps_so_an_id_two_to_the_eighteen_away_aliases() {
    let m = model(Target::Trn2);
    let (_sim, rt) = runtime(Target::Trn2);
    let base = inputs(&m, &[0, 1, -1, 0, 1]);
    let want = run(&rt, &m, &base);
    want.result.unwrap();
    // (id + 1) · 2¹⁴ bytes, modulo 2³²: id + 2¹⁸ reads the same block.
    let far = inputs(&m, &[1 << 18, 1, -1 - (1 << 18), 0, 1]);
    let got = run(&rt, &m, &far);
    got.result.unwrap();
    assert!(got.out == want.out);
}

#[test]
fn outputs_and_cycles_repeat_on_a_fresh_device() {
    for target in Target::ALL {
        let m = model(target);
        let golden = m.generate_inputs(GOLDEN_SEED);
        let runs: Vec<Run> = (0..2)
            .map(|_| run(&runtime(target).1, &m, &golden))
            .collect();
        let cycles: Vec<Vec<u64>> = runs
            .iter()
            .map(|r| r.result.as_ref().unwrap().clone())
            .collect();
        assert_eq!(cycles[0], cycles[1], "{}", m.id());
        assert!(runs[0].out == runs[1].out, "{}", m.id());
        m.check_outputs(&golden, &[runs[0].out.clone()]).unwrap();
        println!("{}: {:?} cycles", m.id(), cycles[0]);
    }
}
