//! Current NEFFs broken the ways the issue lists each fail cleanly, naming what is wrong: a
//! truncated DGE table at load, a corrupted field of a new instruction and an unknown
//! activation function at execution (`NRT_EXEC_COMPLETED_WITH_ERR` naming subgraph, engine,
//! instruction and value), and an expert id outside the MoE's experts at execution (the DMA
//! error status, naming the DMA and its tensors), activation table files missing or a table load
//! selecting a set the NEFF does not ship (at load) — and afterwards the same runtime runs the good
//! NEFF with device memory back where it was.

use std::sync::Arc;

use nrt_emu::hal::{Hal, Target};
use nrt_emu::runtime::config::RuntimeConfig;
use nrt_emu::runtime::tensor::{Placement, TensorSet};
use nrt_emu::runtime::{Error, NrtStatus, Runtime};
use nrt_emu::sim::{Sim, SimConfig};
use nrt_fixtures::container::{rehash, Unpacked};

use super::{attention_inputs, moe_inputs, read, ATTENTION, MATMUL, MOE};
use crate::support::device_bytes_and_allocations;

/// `neff` with member `path` passed through `edit`, repacked with a good hash.
fn edit_member(neff: &[u8], path: &str, edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut u = Unpacked::from_neff(neff).unwrap();
    edit(&mut u.member_mut(path).unwrap_or_else(|| panic!("{path}")).data);
    let mut bytes = u.pack();
    rehash(&mut bytes);
    bytes
}

/// `neff` with the first record of `stream` whose opcode is `opcode` (and that `pick` accepts)
/// passed through `edit`; returns the NEFF and the record's index.
fn edit_record(
    neff: &[u8],
    stream: &str,
    opcode: u8,
    pick: impl Fn(&[u8]) -> bool,
    edit: impl FnOnce(&mut [u8]),
) -> (Vec<u8>, usize) {
    let mut at = None;
    let neff = edit_member(neff, stream, |bin| {
        let i = bin
            .chunks(64)
            .position(|r| r[0] == opcode && pick(r))
            .unwrap_or_else(|| panic!("{stream}: no {opcode:#04x} record"));
        edit(&mut bin[i * 64..(i + 1) * 64]);
        at = Some(i);
    });
    (neff, at.unwrap())
}

fn runtime() -> (Arc<Sim>, Runtime) {
    let sim = Arc::new(Sim::new(SimConfig::new(Target::Trn2)));
    let rt = Runtime::new(sim.clone() as Arc<dyn Hal>, RuntimeConfig::default()).unwrap();
    (sim, rt)
}

/// Loads `neff`, executes it once with `inputs` and returns the load's or the execution's
/// result, unloading what was loaded.
fn load_and_execute(rt: &Runtime, neff: &[u8], inputs: &super::Inputs) -> Result<(), Error> {
    let id = rt.load(neff, -1)?;
    let model = rt.model(id).unwrap();
    let mut ins = TensorSet::new();
    let mut outs = TensorSet::new();
    for (set, tensors, input) in [
        (&mut ins, &model.parsed.model.inputs, true),
        (&mut outs, &model.parsed.model.outputs, false),
    ] {
        for t in tensors {
            if set.get(&t.name).is_some() {
                continue;
            }
            let d = rt
                .tensor_allocate(Placement::Device, model.vnc, t.size, &t.name)
                .unwrap();
            if input {
                d.write(
                    0,
                    &inputs(&t.name, t.dtype, t.size as usize / t.dtype.size()),
                )
                .unwrap();
            }
            set.add(&t.name, d);
        }
    }
    drop(model);
    let r = rt.execute(id, &ins, &outs);
    drop((ins, outs));
    rt.unload(id).unwrap();
    r.map(drop)
}

fn assert_names(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "{p:?} missing from: {msg}");
    }
}

/// Runs `broken` on a fresh runtime, expecting `status` and a message naming each of `names`;
/// then the good NEFF runs on the same runtime and device memory is back where it started.
fn fails_cleanly(
    good: &[u8],
    broken: &[u8],
    inputs: &super::Inputs,
    status: NrtStatus,
    names: &[&str],
) {
    fails_cleanly_with(good, (broken, inputs), inputs, status, names)
}

/// [`fails_cleanly`] with the broken run's own inputs.
fn fails_cleanly_with(
    good: &[u8],
    (broken, broken_inputs): (&[u8], &super::Inputs),
    inputs: &super::Inputs,
    status: NrtStatus,
    names: &[&str],
) {
    let (sim, rt) = runtime();
    // Warm-up: the runtime keeps per-core resources from the first execution on.
    load_and_execute(&rt, good, inputs).unwrap();
    let before = device_bytes_and_allocations(&*sim);
    let e = load_and_execute(&rt, broken, broken_inputs).unwrap_err();
    assert_eq!(e.status, status, "{e}");
    assert_eq!(
        device_bytes_and_allocations(&*sim),
        before,
        "device memory after: {e}"
    );
    load_and_execute(&rt, good, inputs).unwrap();
    assert_eq!(device_bytes_and_allocations(&*sim), before);
    println!("current-neff bad input: {e}");
    assert_names(&e.message, names);
}

/// The matmul NEFF with its `DGETable0` list passed through `edit`.
fn edit_dge_table(good: &[u8], edit: impl FnOnce(&mut serde_json::Value)) -> Vec<u8> {
    edit_member(good, "sg00/def.json", |def| {
        let mut v: serde_json::Value = serde_json::from_slice(def).unwrap();
        edit(&mut v["var"]["DGETable0"]["list"]);
        *def = serde_json::to_vec(&v).unwrap();
    })
}

#[test]
fn a_dge_table_that_is_truncated_or_names_a_missing_var_is_refused_at_load() {
    let Some(good) = read(&format!("{MATMUL}.neff")) else {
        return;
    };
    let truncated = edit_dge_table(&good, |l| l.as_array_mut().unwrap().truncate(1));
    let names = ["sg00/Pool.bin: instruction 3", "entry 1 of DGETable0"];
    fails_cleanly(
        &good,
        &truncated,
        &attention_inputs,
        NrtStatus::Invalid,
        &names,
    );
    let missing = edit_dge_table(&good, |l| l[1] = 99.into());
    let names = ["sg00/def.json", "DGETable0", "99"];
    fails_cleanly(
        &good,
        &missing,
        &attention_inputs,
        NrtStatus::Invalid,
        &names,
    );
}

#[test]
fn a_corrupted_field_or_an_unknown_activation_function_ends_the_execution_naming_it() {
    // RECIPROCAL's input dtype (byte 32) set to a code no dtype has (fused fp32), and the first
    // EXP activation asking for function id 0x55 (fused bf16).
    type Pick = fn(&[u8]) -> bool;
    type Edit = fn(&mut [u8]);
    /// NEFF, stream, opcode, which record, the edit, what the message names.
    type Case = (
        &'static str,
        &'static str,
        u8,
        Pick,
        Edit,
        [&'static str; 4],
    );
    let cases: [Case; 2] = [
        (
            ATTENTION[2],
            "sg00/DVE.bin",
            0x48,
            |_| true,
            |r| r[32] = 0xEE,
            ["engine DVE", "0x48", "in dtype", "0xee"],
        ),
        (
            ATTENTION[0],
            "sg00/Activation.bin",
            0x21,
            |r| r[35] == 0x07,
            |r| r[35] = 0x55,
            ["engine ACT", "0x21", "activation function", "0x55"],
        ),
    ];
    for (name, stream, opcode, pick, edit, names) in cases {
        let Some(good) = read(&format!("{name}.neff")) else {
            return;
        };
        let (broken, at) = edit_record(&good, stream, opcode, pick, edit);
        let at = format!("instruction {at} ");
        let names: Vec<&str> = ["subgraph sg00", at.as_str()]
            .into_iter()
            .chain(names)
            .collect();
        let status = NrtStatus::ExecCompletedWithErr;
        fails_cleanly(&good, &broken, &attention_inputs, status, &names);
    }
}

#[test]
fn an_expert_id_outside_the_experts_is_a_dma_error() {
    let Some(good) = read(&format!("{MOE}.neff")) else {
        return;
    };
    for bad in [128i32, 200, -1] {
        let inputs = move |name: &str, d, n| {
            if name == "input1" {
                let mut ids: Vec<i32> = super::EXPERTS.to_vec();
                ids[3] = bad;
                return ids.iter().flat_map(|e| e.to_le_bytes()).collect();
            }
            moe_inputs(name, d, n)
        };
        fails_cleanly_with(
            &good,
            (&good, &inputs),
            &moe_inputs,
            NrtStatus::ExecHwErrDmaAbort,
            &[
                "subgraph sg00",
                "DMA_DIRECT2D",
                "source input3",
                "outside the tensor",
                "nothing was written",
            ],
        );
    }
}

#[test]
fn activation_tables_the_neff_does_not_ship_are_refused_at_load() {
    let Some(good) = read(&format!("{MOE}.neff")) else {
        return;
    };
    // A table file of the set Activation.json names, missing.
    let mut u = Unpacked::from_neff(&good).unwrap();
    u.members
        .retain(|m| m.path != "sg00/silu_and_others_bkt.bin");
    let mut missing = u.pack();
    rehash(&mut missing);
    // A table load selecting a second set, where one is shipped.
    let (beyond, at) = edit_record(&good, "sg00/Activation.bin", 0x23, |_| true, |r| r[35] = 1);
    let at = format!("sg00/Activation.bin: instruction {at}");
    for (broken, names) in [
        (
            missing,
            [
                "sg00/Activation.json",
                "silu_and_others",
                "silu_and_others_bkt.bin",
            ],
        ),
        (beyond, [at.as_str(), "table set 1", "silu_and_others"]),
    ] {
        fails_cleanly(&good, &broken, &moe_inputs, NrtStatus::Invalid, &names);
    }
}

#[test]
fn a_malformed_engine_dma_is_refused_at_load_and_returns_every_queue() {
    let Some(good) = read(&format!("{MOE}.neff")) else {
        return;
    };
    // A DMA_DIRECT2D whose completion adds nothing (byte 14): refused when the stream is
    // relocated, after the queue sets with descriptor blocks (qSPIO0, qPoolIO0) took their
    // hardware queues.
    let (broken, at) = edit_record(&good, "sg00/Pool.bin", 0xD4, |_| true, |r| r[14] = 0);
    let (sim, rt) = runtime();
    load_and_execute(&rt, &good, &moe_inputs).unwrap();
    let before = device_bytes_and_allocations(&*sim);
    // More failed loads than the core has queues for the two sets, were they kept.
    for _ in 0..12 {
        let e = load_and_execute(&rt, &broken, &moe_inputs).unwrap_err();
        assert_eq!(e.status, NrtStatus::Invalid, "{e}");
        assert_names(&e.message, &["sg00", "sem_increment"]);
        assert!(e.message.contains(&format!("{at}")), "{e}");
    }
    assert_eq!(device_bytes_and_allocations(&*sim), before);
    load_and_execute(&rt, &good, &moe_inputs).unwrap();
}
