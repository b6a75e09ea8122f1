//! `build_model`: the KBIN build over NEFF members shaped like real compiler output
//! (docs/neff.md §5–§9), each load gate, and the per-subgraph validation.

use std::collections::BTreeMap;

use nrt_hal::isa::{Instruction, QueueSetName, Record, RECORD_SIZE};
use nrt_hal::{Dtype, EngineKind, Target};
use nrt_runtime::kbin::build::{build_model, BuildOptions};
use nrt_runtime::kbin::{DmaOp, KelfModel, KelfTarget, QueueSetKind, VarKind};
use nrt_runtime::{NrtStatus, Result};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// Fixture: a trn1 vector add (+ a constant, a cast and a transpose) and a trn2 LNC=2 model.

const ROW: u64 = 4000; // 1000 fp32 per partition row
const IO_BYTES: u64 = 128 * ROW;

fn f16_npy(shape: &[u64], vals: &[u16]) -> Vec<u8> {
    use npyz::WriterBuilder;
    let mut buf = Vec::new();
    let mut w = npyz::WriteOptions::<u16>::new()
        .default_dtype()
        .shape(shape)
        .writer(&mut buf)
        .begin_nd()
        .unwrap();
    w.extend(vals.iter().copied()).unwrap();
    w.finish().unwrap();
    // npyz (without its `half` feature) writes u16; relabel the dtype as float16.
    let pos = buf.windows(5).position(|w| w == b"'<u2'").unwrap();
    buf[pos + 2] = b'f';
    buf
}

fn weights() -> Vec<u16> {
    (0..128 * 128)
        .map(|i| half::f16::from_f32((i % 97) as f32 * 0.25).to_bits())
        .collect()
}

fn rec(op: u8, fill: &[(usize, u8)]) -> Record {
    let mut r = Record::new(op);
    for &(i, b) in fill {
        r.0[i] = b;
    }
    r
}

fn trigger(queue: &str, block: u32) -> Record {
    Instruction::PseudoDmaTrigger {
        queue: QueueSetName::new(queue).unwrap(),
        block_id: block,
    }
    .encode()
    .unwrap()
}

fn write_var(var_id: u32, offset: u64) -> Record {
    Instruction::PseudoWriteVar {
        var_id,
        offset,
        value: 7,
    }
    .encode()
    .unwrap()
}

fn bin(records: &[Record]) -> Vec<u8> {
    let mut out = Record::new(0xB1).0.to_vec();
    for r in records {
        out.extend_from_slice(&r.0);
    }
    out
}

struct Fixture {
    json: BTreeMap<String, Value>,
    raw: BTreeMap<String, Vec<u8>>,
}

impl Fixture {
    fn members(&self) -> BTreeMap<String, Vec<u8>> {
        let mut m = self.raw.clone();
        for (k, v) in &self.json {
            m.insert(k.clone(), serde_json::to_vec_pretty(v).unwrap());
        }
        m
    }

    fn build_with(
        &self,
        version: (u64, u64),
        lnc: u32,
        target: Target,
        cores: u32,
        legacy: bool,
    ) -> Result<KelfModel> {
        build_model(
            &self.members(),
            version,
            lnc,
            &BuildOptions {
                target,
                available_cores: cores,
                allow_legacy_neff: legacy,
                any_generation: false,
            },
        )
    }

    fn j(&mut self, member: &str) -> &mut Value {
        self.json.get_mut(member).unwrap()
    }

    /// The first desc of SP.json `dma[block]`.
    fn sp_desc(&mut self, block: usize) -> &mut Value {
        &mut self.j("sg00/SP.json")["dma"][block]["desc"][0]
    }
}

fn def_json_trn1() -> Value {
    json!({
      "var": {
        "SB": {"type": "state-buffer", "var_id": 0},
        "a_vec": {"ops": [], "size": IO_BYTES, "type": "input", "var_id": 1},
        "b_vec": {"ops": [], "size": IO_BYTES, "type": "input", "var_id": 2},
        "out": {"ops": [], "size": IO_BYTES, "type": "output", "var_id": 3},
        "w": {"type": "file", "file_name": "value_sg0000_w_CRSM.npy", "size": 32768,
              "alignment": 32768, "fabric_path": "main", "ops": [], "var_id": 4},
        "tmp": {"type": "tmp-buf", "size": 256000, "ops": [], "var_id": 5},
        "scratch": {"type": "virtual", "backing_variable_off": 4096, "size": 8192,
                    "ops": [], "var_id": 6}
      },
      "dma_queue": {
        "qSPIO0": {"type": "in", "num_queues": 16, "owner": "sp", "fabric_path": "main",
                   "semaphore_set": [8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23]},
        "qPoolIO0": {"type": "in", "num_queues": 16, "owner": "pool", "fabric_path": "main",
                     "semaphore_set": [24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39]},
        "qSPSpillReload0": {"type": "data", "num_queues": 16, "owner": "sp",
                            "fabric_path": "main", "semaphore_set": [40]}
      },
      "pe": "PE.json", "pe_instr": "PE.bin",
      "act": "Activation.json", "act_instr": "Activation.bin",
      "dve": "DVE.json", "dve_instr": "DVE.bin",
      "pool": "Pool.json", "pool_instr": "Pool.bin",
      "sp": "SP.json", "sp_instr": "SP.bin",
      "pe_dbg": ["debug_info_backend_PE.dbg"], "pe_asm_dbg": ["debug_info_asm_PE.dbg"],
      "dma_dbg": ["debug_info_backend_DMA.dbg"],
      "cc_streams": {"num_streams": 0},
      "debug_info": {},
      "neff_features": [],
      "runtime_event_count": 12,
      "runtime_semaphore_count": 3,
      "version": "0.6",
      "name": "definition"
    })
}

fn sp_json() -> Value {
    json!({
      "name": "SP.json",
      "instr": "SP.bin",
      "dma": [
        {"id": 0, "queue": "qSPIO0", "semaphore": 8, "#comment": "I-4-0-block-1",
         "desc": [{"from": "a_vec", "from_off": 0, "from_sizes": [4000, 128],
                   "from_steps": [1, 4000], "to": "SB", "to_off": 180608,
                   "to_sizes": [4000, 128], "to_steps": [1, 262144],
                   "from_dtype": "float32", "to_dtype": "float32",
                   "num_tiling_dimensions": 1}]},
        {"id": 1, "queue": "qSPIO0", "semaphore": 8, "#comment": "I-5-0-block-1",
         "desc": [{"op": "copy", "from": "b_vec", "from_off": 0, "from_sizes": [4000, 128],
                   "from_steps": [1, 4000], "to": "SB", "to_off": 0,
                   "to_sizes": [4000, 128], "to_steps": [1, 262144],
                   "from_dtype": "float32", "to_dtype": "float32"}]},
        {"id": 2, "queue": "qSPIO0", "semaphore": 8, "#comment": "I-9-0-block-1",
         "desc": [{"from": "SB", "from_off": 180608, "from_sizes": [4000, 128],
                   "from_steps": [1, 262144], "to": "out", "to_off": 0,
                   "to_sizes": [4000, 128], "to_steps": [1, 4000],
                   "from_dtype": "float32", "to_dtype": "float32",
                   "num_tiling_dimensions": 1}]},
        {"id": 0, "queue": "qSPSpillReload0", "semaphore": 40, "#comment": "I-10-0-block-1",
         "desc": [{"op": "cast", "from": "SB", "from_off": 180608, "from_sizes": [4000, 128],
                   "from_steps": [1, 262144], "to": "tmp", "to_off": 0,
                   "to_sizes": [2000, 128], "to_steps": [1, 2000],
                   "from_dtype": "float32", "to_dtype": "float16",
                   "num_tiling_dimensions": 1}]},
        {"id": 1, "queue": "qSPSpillReload0", "semaphore": 40, "#comment": "I-11-0-block-1",
         "desc": [{"from": "w", "from_off": 0, "from_sizes": [256, 128, 1, 1],
                   "from_steps": [1, 256, 32768, 32768], "to": "SB", "to_off": 100000,
                   "to_sizes": [256, 128, 1, 1], "to_steps": [1, 262144, 1, 1],
                   "from_dtype": "float16", "to_dtype": "float16",
                   "transpose_op": "WZXY", "transpose_shape": [1, 1, 128, 128],
                   "transpose_element_size": 2, "num_tiling_dimensions": 2}]},
        {"id": 2, "queue": "qSPSpillReload0", "semaphore": 40, "#comment": "I-12-0-block-1",
         "desc": [{"from": "tmp", "from_off": 0, "from_sizes": [4096], "from_steps": [1],
                   "to": "scratch", "to_off": 4096, "to_sizes": [4096], "to_steps": [1]}]}
      ]
    })
}

fn pool_json() -> Value {
    json!({
      "name": "Pool.json",
      "instr": "Pool.bin",
      "dma": [
        {"id": 0, "queue": "qPoolIO0", "semaphore": 24, "#comment": "I-6-0-block-1",
         "desc": [{"from": "b_vec", "from_off": 4000, "from_sizes": [4000, 127],
                   "from_steps": [1, 4000], "to": "SB", "to_off": 4000,
                   "to_sizes": [4000, 127], "to_steps": [1, 262144],
                   "from_dtype": "float32", "to_dtype": "float32"}]}
      ]
    })
}

fn trn1() -> Fixture {
    let mut json = BTreeMap::new();
    json.insert(
        "neff.json".into(),
        crate::support::vector_add_neff_json("float32"),
    );
    json.insert(
        "kelf-0.json".into(),
        json!({"graphs": [{"definition": "sg00/def.json", "name": "sg00"}],
               "version": "0.5", "target": "sunda"}),
    );
    json.insert(
        "info.json".into(),
        json!({"tool_version": "2.18", "kelp_version": "Dynamic", "name": "vadd", "num_tpb": 1}),
    );
    json.insert("sg00/def.json".into(), def_json_trn1());
    json.insert(
        "sg00/PE.json".into(),
        json!({"name": "PE.json", "instr": "PE.bin", "dma": []}),
    );
    json.insert(
        "sg00/Activation.json".into(),
        json!({"name": "Activation.json", "instr": "Activation.bin", "dma": [],
               "act_info": "act_info.json", "act_semaphore": 12,
               "activation_function_sets": ["exp_and_others"]}),
    );
    json.insert(
        "sg00/DVE.json".into(),
        json!({"name": "DVE.json", "instr": "DVE.bin", "dma": [],
               "dve_tables": [{"control_table": "default_control_table.bin",
                               "datapath_table": "default_datapath_table.bin",
                               "opcode_table": "default_opcode_table.bin"}]}),
    );
    json.insert("sg00/Pool.json".into(), pool_json());
    json.insert("sg00/SP.json".into(), sp_json());

    let mut raw = BTreeMap::new();
    raw.insert(
        "sg00/value_sg0000_w_CRSM.npy".into(),
        f16_npy(&[128, 128, 1, 1], &weights()),
    );
    // Real-NEFF-like streams: opcodes this platform does not execute must still load.
    raw.insert(
        "sg00/PE.bin".into(),
        bin(&[
            rec(0x01, &[(4, 9), (20, 0x80)]),
            rec(0x02, &[(7, 3)]),
            rec(0xA0, &[]),
        ]),
    );
    raw.insert(
        "sg00/Activation.bin".into(),
        bin(&[
            rec(0x21, &[(9, 1)]),
            rec(0x23, &[]),
            rec(0x46, &[(63, 0xFF)]),
        ]),
    );
    raw.insert(
        "sg00/DVE.bin".into(),
        bin(&[
            rec(0x41, &[(8, 0x80), (12, 0xE8), (13, 0x03)]),
            rec(0x49, &[]),
        ]),
    );
    raw.insert(
        "sg00/Pool.bin".into(),
        bin(&[trigger("qPoolIO0", 0), rec(0xA4, &[(5, 24), (8, 16)])]),
    );
    raw.insert(
        "sg00/SP.bin".into(),
        bin(&[
            trigger("qSPIO0", 0),
            trigger("qSPIO0", 1),
            rec(0xA4, &[(5, 8), (8, 32)]),
            trigger("qSPSpillReload0", 0),
            trigger("qSPSpillReload0", 1),
            trigger("qSPSpillReload0", 2),
            trigger("qSPIO0", 2),
            write_var(5, 0),
            write_var(6, 8188),
            rec(0xCC, &[]),
        ]),
    );
    // The activation table set Activation.json names, catalogued and shipped (contents opaque).
    let act_info = json!({"pwp_file_keys": ["bkt_bin", "ctrl_bin", "profile_json"],
        "act_func_sets": [{"name": "exp_and_others", "bkt_bin": "exp_and_others_bkt.bin",
            "ctrl_bin": "exp_and_others_ctrl.bin", "profile_json": "exp_and_others.json"}]});
    raw.insert(
        "sg00/act_info.json".into(),
        act_info.to_string().into_bytes(),
    );
    for f in [
        "exp_and_others.json",
        "exp_and_others_bkt.bin",
        "exp_and_others_ctrl.bin",
    ] {
        raw.insert(format!("sg00/{f}"), vec![0; 16]);
    }
    raw.insert("sg00/debug_info_asm_PE.dbg".into(), vec![0x0a, 0x03]);
    Fixture { json, raw }
}

fn build_trn1(f: &Fixture) -> Result<KelfModel> {
    f.build_with((1, 0), 1, Target::Trn1, 2, false)
}

fn sb_res() -> Value {
    json!([{"type": "evtaccel", "base_partition": 0, "partitions": 128,
            "offset": 229368, "size": 8}])
}

fn trn2_lnc2() -> Fixture {
    let mut json = BTreeMap::new();
    json.insert(
        "neff.json".into(),
        json!({
          "nodes": [
            {"op": "null", "name": "x", "inputs": [], "output_names": ["x"], "is_param": "0"},
            {"op": "tvm_op", "name": "sg_coreV10",
             "attrs": {"func_name": "__kelf", "flatten_data": "0", "num_inputs": "1",
                       "num_outputs": "2", "kelf": "kelf-0.json"},
             "inputs": [[0, 0, 0]], "output_names": ["out", "out"]}
          ],
          "arg_nodes": [0],
          "heads": [[1, 0, 0], [1, 1, 0]],
          "node_row_ptr": [0, 1, 3],
          "attrs": {
            "shape": ["list_shape", [[128, 512], [128, 512], [128, 512]]],
            "storage_id": ["list_int", [0, 1, 2]],
            "dltype": ["list_str", ["bfloat16", "bfloat16", "bfloat16"]]
          },
          "metadata": {"signatures": {"default": {
            "inputs": {"x": {"id": 0, "dtype": "bfloat16", "shape": [128, 512]}},
            "outputs": {}}}}
        }),
    );
    json.insert(
        "kelf-0.json".into(),
        json!({"graphs": [{"definition": "sg00/def.json", "name": "sg00"},
                          {"definition": "sg01/def.json", "name": "sg01"}],
               "version": "0.5", "target": "cayman"}),
    );
    let mut raw = BTreeMap::new();
    for sg in ["sg00", "sg01"] {
        let queues = if sg == "sg00" {
            json!({"qSPIO0": {"type": "in", "num_queues": 16, "owner": "sp",
                              "fabric_path": "main", "semaphore_set": [8, 9, 10, 11, 12, 13,
                              14, 15, 16, 17, 18, 19, 20, 21, 22, 23]}})
        } else {
            json!({})
        };
        json.insert(
            format!("{sg}/def.json"),
            json!({
              "var": {
                "SB": {"type": "state-buffer", "var_id": 0},
                "x": {"ops": [], "size": 131072, "type": "input", "var_id": 1},
                "out": {"ops": [], "size": 131072, "type": "output", "var_id": 2}
              },
              "dma_queue": queues,
              "sp": "SP.json", "sp_instr": "SP.bin",
              "dve": "DVE.json", "dve_instr": "DVE.bin",
              "cc_streams": {"num_streams": 0},
              "debug_info": {},
              "neff_features": ["neff_feature_vnc"],
              "runtime_event_count": 12,
              "runtime_semaphore_count": 3,
              "runtime_statebuffer_reservation": sb_res(),
              "#rank_world_size": 0,
              "version": "0.6",
              "name": "definition"
            }),
        );
        let dma = if sg == "sg00" {
            // 1 KiB per partition at the top of the 224 KiB partition (beyond trn1's 192 KiB).
            json!([{"id": 0, "queue": "qSPIO0", "semaphore": 8, "#comment": "I-1-0-block-1",
                    "desc": [{"from": "x", "from_off": 0, "from_sizes": [1024, 128],
                              "from_steps": [1, 1024], "to": "SB", "to_off": 220000,
                              "to_sizes": [1024, 128], "to_steps": [1, 262144],
                              "from_dtype": "bfloat16", "to_dtype": "bfloat16"}]}])
        } else {
            json!([])
        };
        json.insert(
            format!("{sg}/SP.json"),
            json!({"name": "SP.json", "instr": "SP.bin", "dma": dma}),
        );
        json.insert(
            format!("{sg}/DVE.json"),
            json!({"name": "DVE.json", "instr": "DVE.bin", "dma": [],
                   "dve_tables": [{"control_fast_table": "default_control_fast_table.bin",
                                   "control_slow_table": "default_control_slow_table.bin",
                                   "datapath_table": "default_datapath_table.bin",
                                   "opcode_table": "default_opcode_table.bin"}]}),
        );
        let sp = if sg == "sg00" {
            bin(&[trigger("qSPIO0", 0), rec(0xCC, &[])])
        } else {
            bin(&[rec(0xCC, &[])])
        };
        raw.insert(format!("{sg}/SP.bin"), sp);
        raw.insert(format!("{sg}/DVE.bin"), bin(&[rec(0x41, &[(3, 1)])]));
    }
    Fixture { json, raw }
}

fn build_trn2(f: &Fixture) -> Result<KelfModel> {
    f.build_with((2, 0), 2, Target::Trn2, 2, false)
}

#[track_caller]
fn invalid(r: Result<KelfModel>, needles: &[&str]) -> String {
    let e = r.expect_err("build should fail");
    assert_eq!(e.status, NrtStatus::Invalid, "{e}");
    for n in needles {
        assert!(e.message.contains(n), "{n:?} not in {:?}", e.message);
    }
    e.message
}

// ---------------------------------------------------------------------------------------------
// Successful builds.

#[test]
fn trn1_vector_add_builds() {
    let f = trn1();
    let m = build_trn1(&f).unwrap();
    assert_eq!(m.kelf_name, "kelf-0.json");
    assert_eq!(m.version, "0.5");
    assert_eq!(m.target, KelfTarget::Gen(Target::Trn1));
    let names: Vec<_> = m.inputs.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a_vec", "b_vec"]);
    assert_eq!(m.outputs.len(), 1);
    assert_eq!(m.outputs[0].name, "out");
    assert_eq!(m.outputs[0].dtype, Dtype::F32);
    assert_eq!(m.outputs[0].shape, [128, 1000]);
    assert_eq!(m.outputs[0].size, IO_BYTES);
    assert_eq!(m.inputs[0].var_ids, [(0, 1)]);
    assert_eq!(m.inputs[1].var_ids, [(0, 2)]);
    assert_eq!(m.outputs[0].var_ids, [(0, 3)]);

    let k = &m.subgraphs[0];
    assert_eq!(k.name, "sg00");
    assert_eq!(k.def_member, "sg00/def.json");
    assert_eq!(k.vars.len(), 7);
    assert_eq!(k.vars[&0].kind, VarKind::StateBuffer);
    assert_eq!(k.vars[&0].size, 0);
    match &k.vars[&4].kind {
        VarKind::File { file_name, data } => {
            assert_eq!(file_name, "sg00/value_sg0000_w_CRSM.npy");
            let want: Vec<u8> = weights().iter().flat_map(|v| v.to_le_bytes()).collect();
            assert_eq!(&data[..], &want[..]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(k.vars[&4].alignment, 32768);
    assert_eq!(
        k.vars[&6].kind,
        VarKind::Virtual {
            backing_offset: 4096
        }
    );
    assert_eq!(k.scratchpad_need(), 4096 + 8192);
    assert_eq!(k.var_by_name("tmp").unwrap().kind, VarKind::TmpBuf);

    assert_eq!(k.queue_sets.len(), 3);
    let q = &k.queue_sets["qSPIO0"];
    assert_eq!(q.kind, QueueSetKind::In);
    assert_eq!(q.num_queues, 16);
    assert_eq!(q.owner, Some(EngineKind::Sp));
    assert_eq!(q.semaphores, (8..24).collect::<Vec<u32>>());
    assert_eq!(k.queue_sets["qSPSpillReload0"].kind, QueueSetKind::Data);

    let order: Vec<_> = k.engines.iter().map(|e| e.engine).collect();
    assert_eq!(
        order,
        [
            EngineKind::Pe,
            EngineKind::Act,
            EngineKind::Pool,
            EngineKind::Dve,
            EngineKind::Sp
        ]
    );
    let sp = k.engine(EngineKind::Sp).unwrap();
    assert_eq!(sp.json_member, "sg00/SP.json");
    assert_eq!(sp.bin_member, "sg00/SP.bin");
    assert_eq!(sp.records.len(), 11);
    assert_eq!(sp.records[0].opcode(), 0xB1);
    assert_eq!(sp.dma_blocks.len(), 6);
    let b0 = &sp.dma_blocks[0];
    assert_eq!(
        (b0.queue.as_str(), b0.id, b0.semaphore),
        ("qSPIO0", 0, Some(8))
    );
    assert_eq!(b0.comment.as_deref(), Some("I-4-0-block-1"));
    assert_eq!(b0.descs[0].op, DmaOp::Copy);
    assert_eq!(b0.descs[0].from.var_id, 1);
    assert_eq!(b0.descs[0].to.var_id, 0);
    assert_eq!(b0.descs[0].to.offset, 180608);
    assert_eq!(b0.descs[0].to.steps, [1, 262144]);
    assert_eq!(b0.descs[0].from.dtype, Dtype::F32);
    assert_eq!(b0.desc_params[0].num_tiling_dimensions, Some(1));
    let cast = &sp.dma_blocks[3].descs[0];
    assert_eq!(cast.op, DmaOp::Cast);
    assert_eq!(cast.to.dtype, Dtype::F16);
    let tr = &sp.dma_blocks[4];
    assert_eq!(tr.descs[0].op, DmaOp::Transpose);
    let tp = tr.desc_params[0].transpose.as_ref().unwrap();
    assert_eq!(tp.op.as_deref(), Some("WZXY"));
    assert_eq!(tp.shape, [1, 1, 128, 128]);
    assert_eq!(tp.element_size, Some(2));
    // Defaults: op copy, dtype uint8.
    let raw_copy = &sp.dma_blocks[5].descs[0];
    assert_eq!(raw_copy.op, DmaOp::Copy);
    assert_eq!(raw_copy.from.dtype, Dtype::U8);

    assert!(k.sb_reservations.is_empty());
    assert!(k.features.is_empty());
    assert_eq!(
        (
            k.cc_streams,
            k.runtime_event_count,
            k.runtime_semaphore_count
        ),
        (0, 12, 3)
    );
}

#[test]
fn real_neff_opcodes_load_undecoded() {
    let m = build_trn1(&trn1()).unwrap();
    let k = &m.subgraphs[0];
    let ops = |e| -> Vec<u8> {
        k.engine(e)
            .unwrap()
            .records
            .iter()
            .map(|r| r.opcode())
            .collect()
    };
    assert_eq!(ops(EngineKind::Pe), [0xB1, 0x01, 0x02, 0xA0]);
    assert_eq!(ops(EngineKind::Dve), [0xB1, 0x41, 0x49]);
    assert_eq!(ops(EngineKind::Pool), [0xB1, 0xC1, 0xA4]);
    // The raw bytes are kept as they are (the 0x41 operand bytes included).
    let dve = &k.engine(EngineKind::Dve).unwrap().records[1];
    assert_eq!(dve.0[12], 0xE8);
    assert!(dve.decode().is_err(), "0x41 is not a platform opcode");
}

#[test]
fn trn2_lnc2_builds_with_deduplicated_output() {
    let f = trn2_lnc2();
    let m = build_trn2(&f).unwrap();
    assert_eq!(m.target, KelfTarget::Gen(Target::Trn2));
    assert_eq!(m.subgraphs.len(), 2);
    assert_eq!(m.outputs.len(), 1, "the LNC=2 duplicate output is removed");
    assert_eq!(m.outputs[0].name, "out");
    assert_eq!(m.outputs[0].dtype, Dtype::Bf16);
    assert_eq!(m.outputs[0].size, 131072);
    assert_eq!(m.inputs[0].var_ids, [(0, 1), (1, 1)]);
    assert_eq!(m.outputs[0].var_ids, [(0, 2), (1, 2)]);
    let k1 = &m.subgraphs[1];
    assert!(k1.queue_sets.is_empty());
    assert_eq!(k1.features, ["neff_feature_vnc"]);
    assert_eq!(k1.sb_reservations.len(), 1);
    assert_eq!(k1.sb_reservations[0].kind, "evtaccel");
    assert_eq!(k1.sb_reservations[0].offset, 229368);
    // trn2 DMA reaching past trn1's 192 KiB partition is fine on trn2.
    assert_eq!(
        m.subgraphs[0].engine(EngineKind::Sp).unwrap().dma_blocks[0].descs[0]
            .to
            .offset,
        220000
    );
}

// ---------------------------------------------------------------------------------------------
// Gates.

#[test]
fn version_gate() {
    let f = trn1();
    let e = f.build_with((3, 1), 1, Target::Trn1, 2, false).unwrap_err();
    assert_eq!(e.status, NrtStatus::UnsupportedNeffVersion);
    assert!(e.message.contains("NEFF version mismatch"), "{e}");
    assert!(e.message.contains("received: 3.1"), "{e}");
    for ok in [(0, 1), (1, 0), (2, 0), (2, 99)] {
        f.build_with(ok, 1, Target::Trn1, 2, false).unwrap();
    }
}

#[test]
fn target_gate() {
    let f = trn1();
    // sunda NEFF on trn2: arch incompatible, naming both.
    let msg = invalid(
        f.build_with((1, 0), 1, Target::Trn2, 8, false),
        &["arch incompatible", "sunda", "trn2"],
    );
    assert!(msg.contains("kelf-0.json"), "{msg}");
    // ... unless legacy NEFFs are allowed.
    let m = f.build_with((1, 0), 1, Target::Trn2, 8, true).unwrap();
    assert_eq!(m.target, KelfTarget::Gen(Target::Trn1));

    // cayman NEFF on trn1: incompatible even with legacy.
    let g = trn2_lnc2();
    invalid(
        g.build_with((2, 0), 2, Target::Trn1, 2, true),
        &["arch incompatible", "cayman", "trn1"],
    );

    // "*" loads anywhere.
    let mut any = trn1();
    any.j("kelf-0.json")["target"] = json!("*");
    for t in Target::ALL {
        let m = any.build_with((1, 0), 1, t, 8, false).unwrap();
        assert_eq!(m.target, KelfTarget::Any);
    }

    // Unknown target strings.
    for bad in ["trn1", ""] {
        let mut u = trn1();
        u.j("kelf-0.json")["target"] = json!(bad);
        invalid(build_trn1(&u), &["target", "unknown"]);
    }
    // A known generation this platform does not model is refused naming it.
    let mut trn3 = trn1();
    trn3.j("kelf-0.json")["target"] = json!("mariana");
    invalid(
        build_trn1(&trn3),
        &["\"mariana\"", "trn3 generation", "does not model"],
    );
}

#[test]
fn dynamic_queue_scratch_must_fit_a_partition() {
    let queue = |offset: u32| {
        json!({"type": "dynamic", "owner": "pool", "num_queues": 16, "fabric_path": "main",
               "semaphore_set": vec![0; 16],
               "dynamic_dma": {"SB_scratch_partition_offset": offset,
                               "SB_scratch_partition_size": 16384}})
    };
    // As the current compiler writes it: the first 16 KiB of each partition.
    let mut f = trn1();
    f.j("sg00/def.json")["dma_queue"]["qPoolDynamic"] = queue(0);
    let m = build_trn1(&f).unwrap();
    assert!(m.subgraphs[0].queue_sets.contains_key("qPoolDynamic"));
    // Past the end of trn1's 192 KiB partition.
    f.j("sg00/def.json")["dma_queue"]["qPoolDynamic"] = queue(190 << 10);
    invalid(
        build_trn1(&f),
        &[
            "dma_queue.qPoolDynamic.dynamic_dma",
            "194560..210944",
            "196608-byte partition",
        ],
    );
}

#[test]
fn activation_table_sets_must_be_shipped() {
    // A set the catalogue does not list.
    let mut f = trn1();
    f.j("sg00/Activation.json")["activation_function_sets"] = json!(["gelu_and_others"]);
    invalid(
        build_trn1(&f),
        &[
            "sg00/Activation.json",
            "\"gelu_and_others\"",
            "sg00/act_info.json",
        ],
    );
    // A listed set whose file is missing.
    let mut f = trn1();
    f.raw.remove("sg00/exp_and_others_ctrl.bin");
    invalid(
        build_trn1(&f),
        &[
            "\"exp_and_others\"",
            "exp_and_others_ctrl.bin",
            "not in the NEFF",
        ],
    );
    // Sets named without a catalogue.
    let mut f = trn1();
    f.j("sg00/Activation.json")
        .as_object_mut()
        .unwrap()
        .remove("act_info");
    invalid(
        build_trn1(&f),
        &["activation_function_sets given without act_info"],
    );
    // No sets shipped, but the stream's ACT_TABLE_LOAD selects set 0.
    let mut f = trn1();
    f.j("sg00/Activation.json")["activation_function_sets"] = json!([]);
    invalid(
        build_trn1(&f),
        &[
            "sg00/Activation.bin: instruction 2",
            "ACT_TABLE_LOAD selects table set 0",
            "ships 0 set(s)",
        ],
    );
}

#[test]
fn graph_count_gates() {
    let f = trn2_lnc2();
    // More graphs than available cores (the stage-time check returns NRT_INVALID).
    invalid(
        f.build_with((2, 0), 2, Target::Trn2, 1, false),
        &["Insufficient number of NeuronCores, required 2, available 1"],
    );
    // Graph count neither 1 nor the LNC size.
    invalid(
        f.build_with((2, 0), 4, Target::Trn2, 8, false),
        &["2 subgraphs", "logical core size is 4"],
    );
    invalid(
        f.build_with((2, 0), 1, Target::Trn2, 8, false),
        &["2 subgraphs"],
    );
    // A single graph loads under any LNC size; no graph at all does not.
    let mut one = trn1();
    one.build_with((1, 0), 2, Target::Trn1, 2, false).unwrap();
    one.j("kelf-0.json")["graphs"] = json!([]);
    invalid(build_trn1(&one), &["graphs: empty"]);
}

#[test]
fn cayman_requires_sb_reservation() {
    let mut f = trn2_lnc2();
    f.j("sg01/def.json")
        .as_object_mut()
        .unwrap()
        .remove("runtime_statebuffer_reservation");
    invalid(
        build_trn2(&f),
        &[
            "sg01/def.json",
            "runtime_statebuffer_reservation",
            "missing",
        ],
    );
    // Allowed with legacy NEFFs.
    f.build_with((2, 0), 2, Target::Trn2, 2, true).unwrap();
    // A reservation outside the partition is rejected.
    let mut g = trn2_lnc2();
    g.j("sg00/def.json")["runtime_statebuffer_reservation"][0]["offset"] = json!(229369);
    invalid(build_trn2(&g), &["runtime_statebuffer_reservation[0]"]);
}

#[test]
fn missing_manifests() {
    let f = trn1();
    let mut m = f.members();
    m.remove("neff.json");
    let e = build_model(
        &m,
        (1, 0),
        1,
        &BuildOptions {
            target: Target::Trn1,
            available_cores: 2,
            allow_legacy_neff: false,
            any_generation: false,
        },
    )
    .unwrap_err();
    assert_eq!(e.status, NrtStatus::Invalid);
    assert!(e.message.contains("neff.json is missing"), "{e}");

    let mut g = trn1();
    g.j("neff.json")["nodes"][2]["attrs"]["func_name"] = json!("__other");
    invalid(build_trn1(&g), &["no __kelf node"]);

    let mut g = trn1();
    g.j("neff.json")["nodes"][2]["attrs"]["kelf"] = json!("kelf-a.json");
    invalid(build_trn1(&g), &["kelf-a.json", "not in the NEFF"]);

    let mut g = trn1();
    g.raw.remove("sg00/SP.bin");
    invalid(build_trn1(&g), &["sg00/def.json", "sp_instr", "SP.bin"]);
}

// ---------------------------------------------------------------------------------------------
// Vars.

#[test]
fn var_checks() {
    let mut f = trn1();
    f.j("sg00/def.json")["var"]["tmp"]["var_id"] = json!(4);
    invalid(build_trn1(&f), &["duplicate var id 4"]);

    let mut f = trn1();
    f.j("sg00/def.json")["var"]["SB2"] = json!({"type": "state-buffer", "var_id": 9});
    invalid(build_trn1(&f), &["state-buffer", "only one"]);

    let mut f = trn1();
    f.j("sg00/def.json")["var"]["a_vec"]["size"] = json!(IO_BYTES - 4);
    invalid(build_trn1(&f), &["var.a_vec.size", "511996", "512000"]);

    let mut f = trn1();
    f.j("sg00/def.json")["var"]["c_vec"] =
        json!({"type": "input", "size": 16, "var_id": 20, "ops": []});
    invalid(build_trn1(&f), &["var.c_vec", "no model input"]);

    // An output var named like an input.
    let mut f = trn1();
    f.j("sg00/def.json")["var"]["a_vec"]["type"] = json!("output");
    invalid(build_trn1(&f), &["var.a_vec", "no model output"]);

    // An IO tensor without a var anywhere.
    let mut f = trn1();
    f.j("sg00/def.json")["var"]
        .as_object_mut()
        .unwrap()
        .remove("out");
    f.j("sg00/SP.json")["dma"][2]["desc"][0]["to"] = json!("tmp");
    f.j("sg00/SP.json")["dma"][2]["desc"][0]["to_steps"] = json!([1, 0]);
    f.j("sg00/SP.json")["dma"][2]["desc"][0]["to_sizes"] = json!([4000, 128]);
    invalid(build_trn1(&f), &["output \"out\"", "no `output` var"]);

    let mut f = trn1();
    f.j("sg00/def.json")["var"]["p"] =
        json!({"type": "pointer", "size": 8, "referenced_var_id": 77, "var_id": 30});
    invalid(build_trn1(&f), &["var.p.referenced_var_id", "77"]);
    let mut f = trn1();
    f.j("sg00/def.json")["var"]["p"] =
        json!({"type": "pointer", "size": 8, "referenced_var_id": 4, "var_id": 30});
    let m = build_trn1(&f).unwrap();
    assert_eq!(
        m.subgraphs[0].vars[&30].kind,
        VarKind::Pointer {
            referenced_var_id: 4
        }
    );

    let mut f = trn1();
    f.j("sg00/def.json")["var"]["tmp"]["size"] = json!(1u64 << 41);
    invalid(build_trn1(&f), &["var.tmp.size", "exceeds"]);
}

#[test]
fn file_var_data() {
    // npy data size must equal the var size.
    let mut f = trn1();
    f.j("sg00/def.json")["var"]["w"]["size"] = json!(32770);
    invalid(
        build_trn1(&f),
        &["var.w", "value_sg0000_w_CRSM.npy", "32768", "32770"],
    );
    // Missing member.
    let mut f = trn1();
    f.raw.remove("sg00/value_sg0000_w_CRSM.npy");
    invalid(build_trn1(&f), &["var.w.file_name", "not in the NEFF"]);
    // Garbage npy.
    let mut f = trn1();
    f.raw
        .insert("sg00/value_sg0000_w_CRSM.npy".into(), b"not numpy".to_vec());
    invalid(build_trn1(&f), &["var.w", "value_sg0000_w_CRSM.npy"]);
    // A non-.npy file is copied raw.
    let mut f = trn1();
    f.j("sg00/def.json")["var"]["w"]["file_name"] = json!("w.bin");
    f.raw.insert("sg00/w.bin".into(), vec![0x5A; 32768]);
    let m = build_trn1(&f).unwrap();
    match &m.subgraphs[0].vars[&4].kind {
        VarKind::File { file_name, data } => {
            assert_eq!(file_name, "sg00/w.bin");
            assert!(data.iter().all(|&b| b == 0x5A) && data.len() == 32768);
        }
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Queue sets.

#[test]
fn queue_set_checks() {
    for bad in [0, 17, 1000] {
        let mut f = trn1();
        f.j("sg00/def.json")["dma_queue"]["qSPIO0"]["num_queues"] = json!(bad);
        invalid(build_trn1(&f), &["dma_queue.qSPIO0.num_queues"]);
    }
    let mut f = trn1();
    f.j("sg00/def.json")["dma_queue"]["qSPIO0"]["owner"] = json!("gpu");
    invalid(build_trn1(&f), &["dma_queue.qSPIO0.owner", "\"gpu\""]);
    // Default num_queues is 1; a single `semaphore` is accepted.
    let mut f = trn1();
    let q = f.j("sg00/def.json")["dma_queue"]["qPoolIO0"]
        .as_object_mut()
        .unwrap();
    q.remove("num_queues");
    q.remove("semaphore_set");
    q.insert("semaphore".into(), json!(24));
    let m = build_trn1(&f).unwrap();
    let q = &m.subgraphs[0].queue_sets["qPoolIO0"];
    assert_eq!((q.num_queues, q.semaphores.clone()), (1, vec![24]));
}

// ---------------------------------------------------------------------------------------------
// DMA descriptors.

#[test]
fn dma_desc_outside_hbm_var_rejected() {
    let mut f = trn1();
    f.sp_desc(0)["from_off"] = json!(4);
    invalid(
        build_trn1(&f),
        &[
            "sg00/SP.json",
            "dma[0]",
            "desc[0]",
            "from",
            "\"a_vec\"",
            "512000",
        ],
    );
    // Exactly filling the var is fine; one byte more is not.
    let mut f = trn1();
    f.sp_desc(5)["to_off"] = json!(4096);
    build_trn1(&f).unwrap();
    f.sp_desc(5)["to_off"] = json!(4097);
    invalid(build_trn1(&f), &["dma[5]", "to", "\"scratch\""]);
}

#[test]
fn dma_desc_state_buffer_bounds() {
    // Byte overflow of the trn1 physical partition (192 KiB): 194000 + 4000 > 196608.
    let mut f = trn1();
    f.sp_desc(0)["to_off"] = json!(194000);
    invalid(
        build_trn1(&f),
        &["state buffer", "\"SB\"", "196608", "trn1"],
    );
    // The same offset is inside trn2's 224 KiB partition ("*" target).
    f.j("kelf-0.json")["target"] = json!("*");
    f.build_with((1, 0), 1, Target::Trn2, 8, false).unwrap();

    // Partition overflow: 128 rows starting at partition 1.
    let mut f = trn1();
    f.sp_desc(0)["to_off"] = json!(262144 + 180608);
    invalid(build_trn1(&f), &["state buffer", "partitions 1..=128"]);

    // Past the 128 × 256 KiB window entirely.
    let mut f = trn1();
    f.sp_desc(5)["to"] = json!("SB");
    f.sp_desc(5)["to_off"] = json!(128u64 * 262144);
    invalid(build_trn1(&f), &["state buffer"]);

    // Negative steps are fine while the pattern stays inside ...
    let mut f = trn1();
    f.sp_desc(0)["to_off"] = json!(127u64 * 262144 + 180608);
    f.sp_desc(0)["to_steps"] = json!([1, -262144]);
    f.sp_desc(0)["from_off"] = json!(127 * ROW);
    f.sp_desc(0)["from_steps"] = json!([1, -4000]);
    build_trn1(&f).unwrap();
    // ... and rejected when they leave it.
    f.sp_desc(0)["to_off"] = json!(126u64 * 262144 + 180608);
    invalid(build_trn1(&f), &["state buffer", "partitions -1..=126"]);
    let mut f = trn1();
    f.sp_desc(0)["from_steps"] = json!([1, -4000]);
    invalid(build_trn1(&f), &["from", "\"a_vec\""]);

    // A pattern whose non-partition dim crosses partitions validly (exact check).
    let mut f = trn1();
    f.sp_desc(5)["from_sizes"] = json!([1024, 4]);
    f.sp_desc(5)["from_steps"] = json!([1, 1024]);
    f.sp_desc(5)["to"] = json!("SB");
    f.sp_desc(5)["to_off"] = json!(1000);
    f.sp_desc(5)["to_sizes"] = json!([1024, 4]);
    f.sp_desc(5)["to_steps"] = json!([1, 131072]);
    build_trn1(&f).unwrap();
    // ... and one whose second row lands beyond 192 KiB.
    f.sp_desc(5)["to_off"] = json!(70000);
    invalid(build_trn1(&f), &["state buffer", "196608"]);
}

#[test]
fn dma_desc_shape_checks() {
    let mut f = trn1();
    f.sp_desc(0)["from"] = json!("nope");
    invalid(
        build_trn1(&f),
        &[
            "dma[0] (queue \"qSPIO0\", id 0)",
            "\"nope\"",
            "not declared",
        ],
    );

    let mut f = trn1();
    f.sp_desc(0)["from_sizes"] = json!([4000, 64]);
    invalid(build_trn1(&f), &["256000 bytes", "512000 bytes"]);

    let mut f = trn1();
    f.sp_desc(3)["to_sizes"] = json!([2000, 127]);
    invalid(build_trn1(&f), &["elements"]);

    let mut f = trn1();
    f.sp_desc(0)["from_sizes"] = json!([4000, 128, 1, 1, 1]);
    f.sp_desc(0)["from_steps"] = json!([1, 4000, 0, 0, 0]);
    invalid(build_trn1(&f), &["5 dims"]);

    let mut f = trn1();
    f.sp_desc(0)["from_steps"] = json!([1]);
    invalid(build_trn1(&f), &["from_steps has 1 dims"]);

    let mut f = trn1();
    f.sp_desc(0)["from_sizes"] = json!([0, 128]);
    invalid(build_trn1(&f), &["from_sizes[0] is 0"]);

    // Oversized numbers are rejected before any arithmetic.
    let mut f = trn1();
    f.sp_desc(0)["from_steps"] = json!([1, i64::MAX]);
    invalid(build_trn1(&f), &["from_steps[1]"]);
    let mut f = trn1();
    f.sp_desc(0)["from_sizes"] = json!([1u64 << 40, 1u64 << 40]);
    invalid(build_trn1(&f), &["from_sizes"]);
    let mut f = trn1();
    f.sp_desc(0)["from_off"] = json!(u64::MAX);
    invalid(build_trn1(&f), &["from_off", "exceeds"]);

    // A block on an undeclared queue set; duplicate (queue, id).
    let mut f = trn1();
    f.j("sg00/SP.json")["dma"][5]["queue"] = json!("qNope");
    invalid(build_trn1(&f), &["qNope", "not declared"]);
    let mut f = trn1();
    f.j("sg00/SP.json")["dma"][1]["id"] = json!(0);
    invalid(build_trn1(&f), &["duplicate block id 0"]);

    // CCE descriptors are not supported.
    let mut f = trn1();
    let d = f.sp_desc(0).as_object_mut().unwrap();
    d.remove("from");
    d.insert("from_arr".into(), json!(["a_vec"]));
    invalid(build_trn1(&f), &["from_arr"]);
}

#[test]
fn instance_name_takes_precedence() {
    let mut f = trn1();
    f.j("sg00/SP.json")["dma"][5]["instance_name"] = json!("qSPIO0");
    f.j("sg00/SP.json")["dma"][5]["id"] = json!(7);
    let mut m = f.members();
    let mut sp = f.raw["sg00/SP.bin"].clone();
    // Retarget the trigger of block (qSPSpillReload0, 2) — record 6 — to (qSPIO0, 7).
    sp[6 * RECORD_SIZE..7 * RECORD_SIZE].copy_from_slice(&trigger("qSPIO0", 7).0);
    m.insert("sg00/SP.bin".into(), sp);
    let km = build_model(
        &m,
        (1, 0),
        1,
        &BuildOptions {
            target: Target::Trn1,
            available_cores: 1,
            allow_legacy_neff: false,
            any_generation: false,
        },
    )
    .unwrap();
    let b = &km.subgraphs[0].engine(EngineKind::Sp).unwrap().dma_blocks[5];
    assert_eq!((b.queue.as_str(), b.id), ("qSPIO0", 7));
}

// ---------------------------------------------------------------------------------------------
// Instruction streams.

fn with_sp_bin(records: &[Record]) -> Fixture {
    let mut f = trn1();
    f.raw.insert("sg00/SP.bin".into(), bin(records));
    f
}

#[test]
fn triggers_must_name_existing_blocks() {
    invalid(
        build_trn1(&with_sp_bin(&[trigger("qSPIO0", 3)])),
        &["sg00/SP.bin", "record 1", "block 3", "sg00/SP.json"],
    );
    invalid(
        build_trn1(&with_sp_bin(&[trigger("qMissing", 0)])),
        &["sg00/SP.bin", "record 1", "\"qMissing\""],
    );
    // A block of another engine's JSON does not count.
    invalid(
        build_trn1(&with_sp_bin(&[trigger("qPoolIO0", 0)])),
        &["record 1", "no such block in sg00/SP.json"],
    );
    // A malformed 0xC1 (empty queue name) is rejected with its index.
    let mut bad = Record::new(0xC1);
    bad.0[48] = 1;
    invalid(
        build_trn1(&with_sp_bin(&[trigger("qSPIO0", 0), bad])),
        &["sg00/SP.bin", "record 2"],
    );
}

#[test]
fn write_var_checks() {
    invalid(
        build_trn1(&with_sp_bin(&[write_var(99, 0)])),
        &["record 1", "out-of-range var id 99"],
    );
    for io in [0, 1, 3] {
        invalid(
            build_trn1(&with_sp_bin(&[write_var(io, 0)])),
            &["record 1", "not an HBM non-IO var"],
        );
    }
    invalid(
        build_trn1(&with_sp_bin(&[write_var(6, 8189)])),
        &["record 1", "offset 8189"],
    );
    invalid(
        build_trn1(&with_sp_bin(&[write_var(6, u64::MAX)])),
        &["record 1"],
    );
    build_trn1(&with_sp_bin(&[write_var(4, 32764), write_var(5, 0)])).unwrap();
}

#[test]
fn bad_bin_framing() {
    let mut f = trn1();
    let mut b = f.raw["sg00/DVE.bin"].clone();
    b.push(0);
    f.raw.insert("sg00/DVE.bin".into(), b);
    invalid(
        build_trn1(&f),
        &["sg00/DVE.bin", "193 bytes", "64-byte records"],
    );

    let mut f = trn1();
    f.raw.insert("sg00/DVE.bin".into(), Vec::new());
    invalid(build_trn1(&f), &["sg00/DVE.bin", "0 bytes"]);

    let mut f = trn1();
    let mut b = f.raw["sg00/DVE.bin"].clone();
    b[64 + 1] = 0x11;
    f.raw.insert("sg00/DVE.bin".into(), b);
    invalid(build_trn1(&f), &["sg00/DVE.bin", "record 1", "0x11"]);

    let mut f = trn1();
    let mut b = f.raw["sg00/PE.bin"].clone();
    b[0] = 0x01;
    f.raw.insert("sg00/PE.bin".into(), b);
    invalid(build_trn1(&f), &["sg00/PE.bin", "record 0", "0xb1"]);
}

#[test]
fn engine_without_def_instr_uses_json_instr() {
    let mut f = trn1();
    f.j("sg00/def.json")
        .as_object_mut()
        .unwrap()
        .remove("pe_instr");
    let m = build_trn1(&f).unwrap();
    assert_eq!(
        m.subgraphs[0].engine(EngineKind::Pe).unwrap().bin_member,
        "sg00/PE.bin"
    );
    // An engine the def.json does not name is absent.
    let mut f = trn1();
    let d = f.j("sg00/def.json").as_object_mut().unwrap();
    d.remove("act");
    d.remove("act_instr");
    let m = build_trn1(&f).unwrap();
    assert!(m.subgraphs[0].engine(EngineKind::Act).is_none());
    assert_eq!(m.subgraphs[0].engines.len(), 4);
}

#[test]
fn manifest_errors_propagate_with_file_and_key() {
    let mut f = trn1();
    f.j("sg00/def.json")["var"]["a_vec"]
        .as_object_mut()
        .unwrap()
        .remove("var_id");
    invalid(
        build_trn1(&f),
        &["sg00/def.json: var.a_vec.var_id: missing"],
    );

    let mut f = trn1();
    f.j("sg00/Pool.json")["dma"][0]
        .as_object_mut()
        .unwrap()
        .remove("desc");
    invalid(build_trn1(&f), &["sg00/Pool.json: dma[0].desc: missing"]);
}

#[test]
fn arbitrary_member_bytes_never_panic() {
    // Every member replaced by junk of several shapes: always an error, never a panic.
    let base = trn1().members();
    let junk: [&[u8]; 5] = [b"", b"{", b"[]", b"{\"var\": 5}", &[0xFF; 70]];
    for name in base.keys() {
        for j in junk {
            let mut m = base.clone();
            m.insert(name.clone(), j.to_vec());
            let r = build_model(
                &m,
                (1, 0),
                1,
                &BuildOptions {
                    target: Target::Trn1,
                    available_cores: 2,
                    allow_legacy_neff: false,
                    any_generation: false,
                },
            );
            // Members nobody parses (info.json, the tables, .dbg) may still load.
            if let Err(e) = r {
                assert_eq!(e.status, NrtStatus::Invalid, "{name}: {e}");
            }
        }
    }
}
