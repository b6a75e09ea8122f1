//! Manifest parsing over documents shaped exactly like real compiler output
//! (docs/neff.md §5–§8): field extraction, the LNC=2 quirk, precise errors naming
//! file and key, unknown keys ignored, and `.npy` constants.

use std::collections::BTreeMap;

use nrt_hal::{Dtype, EngineKind};
use nrt_runtime::kbin::{DmaOp, QueueSetKind};
use nrt_runtime::manifest::{
    join_member, member_dir, parse_def_json, parse_engine_json, parse_kelf_json, parse_neff_json,
    parse_npy, resolve_member, tensor_bytes, MemberSource, VarType,
};
use nrt_runtime::NrtStatus;
use serde_json::{json, Value};

/// The trn1 vector-add `neff.json` with a float16 `b_vec`.
fn neff_json_trn1_value() -> Value {
    crate::support::vector_add_neff_json("float16")
}

/// [`neff_json_trn1_value`] as text.
fn neff_json_trn1_text() -> String {
    neff_json_trn1_value().to_string()
}

const NEFF_JSON_LNC2: &str = r#"{
  "nodes": [
    {"op": "null", "name": "input0", "inputs": [], "output_names": ["input0"], "is_param": "0"},
    {"op": "tvm_op", "name": "sg_coreV10",
     "attrs": {"func_name": "__kelf", "flatten_data": "0", "num_inputs": "1",
               "num_outputs": "2", "kelf": "kelf-0.json"},
     "inputs": [[0, 0, 0]], "output_names": ["output0", "output0"]}
  ],
  "arg_nodes": [0],
  "heads": [[1, 0, 0], [1, 1, 0]],
  "node_row_ptr": [0, 1, 3],
  "attrs": {
    "shape": ["list_shape", [[4, 256], [4, 8], [4, 8]]],
    "storage_id": ["list_int", [0, 1, 2]],
    "dltype": ["list_str", ["bfloat16", "float32", "float32"]]
  },
  "metadata": {"signatures": {"default": {
    "inputs": {"input0": {"id": 0, "dtype": "bfloat16", "shape": [4, 256]}},
    "outputs": {}}}}
}"#;

const KELF_JSON: &str = r#"{ "graphs": [ {"definition": "sg00/def.json", "name": "sg00"},
                                          {"definition": "sg01/def.json", "name": "sg01"} ],
                             "version": "0.5", "target": "cayman" }"#;

fn def_json_trn2() -> Value {
    json!({
      "var": {
        "SB": {"type": "state-buffer", "var_id": 0},
        "input0": {"ops": [], "size": 2048, "type": "input", "var_id": 1},
        "output0": {"ops": [], "size": 128, "type": "output", "var_id": 2},
        "w": {"type": "file", "file_name": "value_sg0000_w_CRSM.npy", "size": 32768,
              "alignment": 32768, "fabric_path": "main", "ops": [], "var_id": 3},
        "spill": {"type": "virtual", "backing_variable_off": 65536, "size": 4096,
                  "ops": [], "var_id": 4},
        "scratch": {"type": "tmp-buf", "size": 100, "var_id": 5},
        "ptr": {"type": "pointer", "size": 8, "referenced_var_id": 3, "var_id": 6},
        "tbl": {"type": "dge-table", "size": 64, "list": [1, 2, 3], "var_id": 7}
      },
      "dma_queue": {
        "qSPIO0": {"type": "in", "num_queues": 16, "owner": "sp", "fabric_path": "main",
                   "semaphore_set": [8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23]},
        "qPoolIO0": {"type": "in", "num_queues": 16, "owner": "pool", "fabric_path": "main",
                     "semaphore_set": [24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39]},
        "qSPSpillReload0": {"type": "data", "semaphore": 40, "queue_instances": ["a", "b"]}
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
      "neff_features": ["neff_feature_vnc"],
      "runtime_event_count": 12,
      "runtime_semaphore_count": 3,
      "runtime_statebuffer_reservation": [
        {"type": "evtaccel", "base_partition": 0, "partitions": 128, "offset": 229368, "size": 8}
      ],
      "#rank_world_size": 0,
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
        {"id": 1, "queue": "qSPIO0", "semaphore": 8, "#comment": "I-7-0-block-1",
         "desc": [{"op": "cast", "from": "SB", "from_off": 0, "from_sizes": [1776, 128],
                   "from_steps": [1, 262144], "to": "out", "to_off": 0,
                   "to_sizes": [888, 128], "to_steps": [1, 888],
                   "from_dtype": "float32", "to_dtype": "float16"},
                  {"from": "w", "from_sizes": [256, 128, 1, 1],
                   "from_steps": [1, 256, 32768, 32768], "to": "SB", "to_off": 1024,
                   "to_sizes": [256, 128, 1, 1], "to_steps": [1, 262144, 1, 1],
                   "from_dtype": "float16", "to_dtype": "float16",
                   "transpose_op": "WZXY", "transpose_shape": [1, 1, 128, 128],
                   "transpose_element_size": 2, "num_tiling_dimensions": 2}]},
        {"id": 0, "queue": "qSPSpillReload0", "instance_name": "qSPSpillReload0_1",
         "semaphore": 40, "event": 3,
         "desc": [{"op": "fma", "from": "x", "to": "y", "from_sizes": [4], "from_steps": [1],
                   "to_sizes": [4], "to_steps": [1], "scale": 0.5, "scale_dtype": "float32"},
                  {"op": "max", "from": "x", "to": "y", "from_sizes": [4], "from_steps": [1],
                   "to_sizes": [4], "to_steps": [1], "constant": -1, "constant_dtype": "int32"}]}
      ]
    })
}

fn err_msg<T: std::fmt::Debug>(r: nrt_runtime::Result<T>) -> String {
    let e = r.expect_err("parse should fail");
    assert_eq!(e.status, NrtStatus::Invalid, "{e}");
    e.message
}

fn bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).unwrap()
}

// ---------------------------------------------------------------------------------------------
// neff.json

#[test]
fn neff_json_trn1() {
    let n = parse_neff_json("neff.json", neff_json_trn1_text().as_bytes()).unwrap();
    assert_eq!(n.nodes.len(), 3);
    assert_eq!(n.nodes[2].attrs.func_name.as_deref(), Some("__kelf"));
    assert_eq!(n.nodes[2].attrs.num_inputs, Some(2));
    assert_eq!(n.nodes[2].attrs.num_outputs, Some(1));
    assert_eq!(n.nodes[2].inputs[1].node, 1);
    assert_eq!(n.arg_nodes, [0, 1]);
    assert_eq!(n.heads.len(), 1);
    assert_eq!(n.shapes.len(), 3);
    assert_eq!(n.dltypes, ["float32", "float16", "float32"]);
    assert_eq!(
        n.signature_inputs["b_vec"].dtype.as_deref(),
        Some("float16")
    );
    assert_eq!(
        n.signature_inputs["a_vec"].shape.as_deref(),
        Some(&[128, 1000][..])
    );
    assert_eq!(n.signature_inputs["b_vec"].id, Some(1));

    let io = n.io("neff.json").unwrap();
    assert_eq!(io.kelf_node, 2);
    assert_eq!(io.kelf_file, "kelf-0.json");
    assert_eq!(io.inputs.len(), 2);
    assert_eq!(io.inputs[0].name, "a_vec");
    assert_eq!(io.inputs[0].dtype, Dtype::F32);
    assert_eq!(io.inputs[0].size, 512000);
    assert_eq!(io.inputs[1].name, "b_vec");
    assert_eq!(io.inputs[1].dtype, Dtype::F16);
    assert_eq!(io.inputs[1].size, 256000);
    assert_eq!(io.outputs.len(), 1);
    assert_eq!(io.outputs[0].name, "out");
    assert_eq!(io.outputs[0].shape, [128, 1000]);
}

#[test]
fn neff_json_lnc2_duplicate_output() {
    let n = parse_neff_json("neff.json", NEFF_JSON_LNC2.as_bytes()).unwrap();
    assert_eq!(n.heads.len(), 2);
    let io = n.io("neff.json").unwrap();
    assert_eq!(io.inputs.len(), 1);
    assert_eq!(io.inputs[0].dtype, Dtype::Bf16);
    assert_eq!(io.inputs[0].size, 2048);
    let names: Vec<_> = io.outputs.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["output0"], "listed twice, kept once");
    assert_eq!(io.outputs[0].dtype, Dtype::F32);
    assert_eq!(io.outputs[0].shape, [4, 8]);
    assert_eq!(io.outputs[0].size, 128);
}

#[test]
fn neff_json_errors() {
    let mut v = neff_json_trn1_value();
    v["nodes"][2]["attrs"]["func_name"] = json!("tvmgen_default");
    let n = parse_neff_json("neff.json", &bytes(&v)).unwrap();
    let m = err_msg(n.io("neff.json"));
    assert!(
        m.contains("neff.json") && m.contains("no __kelf node"),
        "{m}"
    );

    let mut v = neff_json_trn1_value();
    v["nodes"][2]["attrs"]
        .as_object_mut()
        .unwrap()
        .remove("kelf");
    let n = parse_neff_json("neff.json", &bytes(&v)).unwrap();
    assert_eq!(
        err_msg(n.io("neff.json")),
        "neff.json: nodes[2].attrs.kelf: missing"
    );

    let mut v = neff_json_trn1_value();
    v["attrs"]["dltype"][1][1] = json!("complex64");
    let n = parse_neff_json("neff.json", &bytes(&v)).unwrap();
    let m = err_msg(n.io("neff.json"));
    assert!(
        m.contains("attrs.dltype[1]") && m.contains("complex64"),
        "{m}"
    );

    let mut v = neff_json_trn1_value();
    v["attrs"]["shape"][1] = json!([[128, 1000]]);
    let n = parse_neff_json("neff.json", &bytes(&v)).unwrap();
    let m = err_msg(n.io("neff.json"));
    assert!(m.contains("attrs.shape") && m.contains("b_vec"), "{m}");

    let mut v = neff_json_trn1_value();
    v["nodes"][2]["attrs"]["num_inputs"] = json!("3");
    let n = parse_neff_json("neff.json", &bytes(&v)).unwrap();
    assert!(err_msg(n.io("neff.json")).contains("num_inputs is 3"));

    let mut v = neff_json_trn1_value();
    v["nodes"][2]["inputs"][0] = json!([9, 0, 0]);
    let n = parse_neff_json("neff.json", &bytes(&v)).unwrap();
    assert!(err_msg(n.io("neff.json")).contains("nodes[2].inputs[0]: node 9"));

    // Oversized shapes are rejected, not overflowed.
    let mut v = neff_json_trn1_value();
    v["attrs"]["shape"][1][0] = json!([u64::MAX, u64::MAX]);
    let n = parse_neff_json("neff.json", &bytes(&v)).unwrap();
    assert!(err_msg(n.io("neff.json")).contains("exceeds"));

    let m = err_msg(parse_neff_json("neff.json", b"{\"nodes\": [}"));
    assert!(m.starts_with("neff.json: malformed JSON"), "{m}");
    let m = err_msg(parse_neff_json("neff.json", b"[1, 2]"));
    assert!(m.contains("top level"), "{m}");
}

// ---------------------------------------------------------------------------------------------
// kelf-N.json

#[test]
fn kelf_json() {
    let k = parse_kelf_json("kelf-0.json", KELF_JSON.as_bytes()).unwrap();
    assert_eq!(k.graphs.len(), 2);
    assert_eq!(k.graphs[1].definition, "sg01/def.json");
    assert_eq!(k.graphs[1].name, "sg01");
    assert_eq!(k.version, "0.5");
    assert_eq!(k.target, "cayman");
}

// ---------------------------------------------------------------------------------------------
// def.json

#[test]
fn def_json_trn2_shape() {
    let d = parse_def_json("sg00/def.json", &bytes(&def_json_trn2())).unwrap();
    assert_eq!(d.vars.len(), 8);
    let var = |n: &str| d.vars.iter().find(|v| v.name == n).unwrap();
    assert_eq!(var("SB").var_type, VarType::StateBuffer);
    assert_eq!(var("SB").size, None);
    assert_eq!(var("input0").var_type, VarType::Input);
    assert_eq!(var("input0").size, Some(2048));
    let w = var("w");
    assert_eq!(w.var_type, VarType::File);
    assert_eq!(w.file_name.as_deref(), Some("value_sg0000_w_CRSM.npy"));
    assert_eq!(w.alignment, 32768);
    assert_eq!(w.fabric_path.as_deref(), Some("main"));
    assert_eq!(var("spill").backing_variable_off, Some(65536));
    assert_eq!(var("scratch").var_type, VarType::TmpBuf);
    assert_eq!(var("scratch").alignment, 0);
    assert_eq!(var("ptr").referenced_var_id, Some(3));
    assert_eq!(var("tbl").var_type, VarType::DgeTable);
    assert_eq!(var("tbl").list.as_ref().map(Vec::len), Some(3));

    assert_eq!(d.dma_queues.len(), 3);
    let q = |n: &str| d.dma_queues.iter().find(|q| q.name == n).unwrap();
    assert_eq!(q("qSPIO0").kind, QueueSetKind::In);
    assert_eq!(q("qSPIO0").num_queues, 16);
    assert_eq!(q("qSPIO0").owner.as_deref(), Some("sp"));
    assert_eq!(q("qSPIO0").semaphore_set, (8..24).collect::<Vec<u32>>());
    assert_eq!(q("qPoolIO0").owner.as_deref(), Some("pool"));
    let spill = q("qSPSpillReload0");
    assert_eq!(spill.kind, QueueSetKind::Data);
    assert_eq!(spill.num_queues, 1, "default");
    assert_eq!(spill.semaphore, Some(40));
    assert_eq!(spill.queue_instances.len(), 2);

    let engines: Vec<_> = d.engines.iter().map(|e| e.engine).collect();
    assert_eq!(
        engines,
        [
            EngineKind::Pe,
            EngineKind::Act,
            EngineKind::Pool,
            EngineKind::Dve,
            EngineKind::Sp
        ]
    );
    assert_eq!(d.engines[1].json.as_deref(), Some("Activation.json"));
    assert_eq!(d.engines[1].instr.as_deref(), Some("Activation.bin"));

    let r = d.sb_reservations.as_ref().unwrap();
    assert_eq!(r.len(), 1);
    assert_eq!(
        (
            r[0].kind.as_str(),
            r[0].base_partition,
            r[0].partitions,
            r[0].offset,
            r[0].size
        ),
        ("evtaccel", 0, 128, 229368, 8)
    );
    assert_eq!(d.neff_features, ["neff_feature_vnc"]);
    assert_eq!(d.cc_streams, 0);
    assert_eq!(d.runtime_event_count, 12);
    assert_eq!(d.runtime_semaphore_count, 3);
}

#[test]
fn def_json_empty_queue_object_and_optional_keys() {
    // sg01 of a trn2 LNC=2 NEFF: `dma_queue: {}`; trn1: no reservation key.
    let d = parse_def_json(
        "sg01/def.json",
        &bytes(&json!({"var": {}, "dma_queue": {}, "sp": "SP.json", "sp_instr": "SP.bin"})),
    )
    .unwrap();
    assert!(d.dma_queues.is_empty());
    assert!(d.sb_reservations.is_none());
    assert_eq!(d.engines.len(), 1);
    assert_eq!((d.runtime_event_count, d.cc_streams), (0, 0));
}

/// Removes the key at `path` (object keys and array indices) from a JSON value.
fn remove_at(v: &mut Value, path: &[&str]) {
    let (last, parents) = path.split_last().unwrap();
    let mut cur = v;
    for p in parents {
        cur = match p.parse::<usize>() {
            Ok(i) => &mut cur[i],
            Err(_) => &mut cur[*p],
        };
    }
    cur.as_object_mut().unwrap().remove(*last).expect(last);
}

#[test]
fn def_json_missing_required_keys_name_file_and_key() {
    let cases: &[(&[&str], &str)] = &[
        (&["var"], "sg00/def.json: var: missing"),
        (
            &["var", "input0", "var_id"],
            "sg00/def.json: var.input0.var_id: missing",
        ),
        (
            &["var", "input0", "type"],
            "sg00/def.json: var.input0.type: missing",
        ),
        (
            &["var", "input0", "size"],
            "sg00/def.json: var.input0.size: missing",
        ),
        (
            &["var", "w", "file_name"],
            "sg00/def.json: var.w.file_name: missing",
        ),
        (
            &["var", "spill", "backing_variable_off"],
            "sg00/def.json: var.spill.backing_variable_off: missing",
        ),
        (
            &["var", "ptr", "referenced_var_id"],
            "sg00/def.json: var.ptr.referenced_var_id: missing",
        ),
        (
            &["dma_queue", "qSPIO0", "type"],
            "sg00/def.json: dma_queue.qSPIO0.type: missing",
        ),
        (
            &["runtime_statebuffer_reservation", "0", "offset"],
            "sg00/def.json: runtime_statebuffer_reservation[0].offset: missing",
        ),
        (
            &["runtime_statebuffer_reservation", "0", "type"],
            "sg00/def.json: runtime_statebuffer_reservation[0].type: missing",
        ),
    ];
    for (path, want) in cases {
        let mut v = def_json_trn2();
        remove_at(&mut v, path);
        assert_eq!(
            err_msg(parse_def_json("sg00/def.json", &bytes(&v))),
            *want,
            "{path:?}"
        );
    }
}

#[test]
fn def_json_wrong_types_name_file_and_key() {
    let cases: &[(&str, Value, &str)] = &[
        (
            "/var/input0/var_id",
            json!("1"),
            "sg00/def.json: var.input0.var_id: expected unsigned integer, got string",
        ),
        (
            "/var/input0/var_id",
            json!(-1),
            "sg00/def.json: var.input0.var_id: expected unsigned integer, got -1",
        ),
        (
            "/var/input0/var_id",
            json!(1u64 << 33),
            "sg00/def.json: var.input0.var_id: 8589934592 does not fit in 32 bits",
        ),
        (
            "/var/input0/type",
            json!("hbm"),
            "sg00/def.json: var.input0.type: unknown var type \"hbm\"",
        ),
        ("/var", json!([]), "sg00/def.json: var: expected object, got array"),
        (
            "/dma_queue/qSPIO0/semaphore_set/3",
            json!("x"),
            "sg00/def.json: dma_queue.qSPIO0.semaphore_set[3]: expected unsigned integer, got string",
        ),
        (
            "/dma_queue/qSPIO0/type",
            json!("sideways"),
            "sg00/def.json: dma_queue.qSPIO0.type: unknown queue-set type \"sideways\"",
        ),
        (
            "/pe_instr",
            json!(5),
            "sg00/def.json: pe_instr: expected string, got integer",
        ),
        (
            "/neff_features",
            json!("neff_feature_vnc"),
            "sg00/def.json: neff_features: expected array, got string",
        ),
        (
            "/cc_streams/num_streams",
            json!(1.5),
            "sg00/def.json: cc_streams.num_streams: expected unsigned integer, got 1.5",
        ),
    ];
    for (ptr, val, want) in cases {
        let mut v = def_json_trn2();
        *v.pointer_mut(ptr).unwrap() = val.clone();
        assert_eq!(
            err_msg(parse_def_json("sg00/def.json", &bytes(&v))),
            *want,
            "{ptr}"
        );
    }
}

/// Adds an unknown key to every object in `v`.
fn sprinkle_unknown_keys(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for (_, c) in m.iter_mut() {
                sprinkle_unknown_keys(c);
            }
            m.insert("zz_unknown".into(), json!({"nested": [1, "two", null]}));
            m.insert("#debug".into(), json!("I-1-2"));
        }
        Value::Array(a) => a.iter_mut().for_each(sprinkle_unknown_keys),
        _ => {}
    }
}

#[test]
fn unknown_keys_are_ignored() {
    // Only objects whose keys are fields (not names) get extra keys.
    let clean = parse_def_json("d", &bytes(&def_json_trn2())).unwrap();
    let mut v = def_json_trn2();
    for (_, var) in v["var"].as_object_mut().unwrap() {
        sprinkle_unknown_keys(var);
    }
    for (_, q) in v["dma_queue"].as_object_mut().unwrap() {
        sprinkle_unknown_keys(q);
    }
    sprinkle_unknown_keys(&mut v["runtime_statebuffer_reservation"]);
    sprinkle_unknown_keys(&mut v["cc_streams"]);
    v["ucode_lib"] = json!({"x": 1});
    v["replica_groups"] = json!([[0, 1]]);
    assert_eq!(parse_def_json("d", &bytes(&v)).unwrap(), clean);

    let clean = parse_engine_json("e", &bytes(&sp_json())).unwrap();
    let mut v = sp_json();
    sprinkle_unknown_keys(&mut v);
    assert_eq!(parse_engine_json("e", &bytes(&v)).unwrap(), clean);

    let clean = parse_neff_json("n", neff_json_trn1_text().as_bytes()).unwrap();
    let mut v = neff_json_trn1_value();
    for n in v["nodes"].as_array_mut().unwrap() {
        sprinkle_unknown_keys(n);
    }
    v["zz"] = json!(1);
    v["attrs"]["zz"] = json!(["list_int", [1]]);
    assert_eq!(parse_neff_json("n", &bytes(&v)).unwrap(), clean);

    let clean = parse_kelf_json("k", KELF_JSON.as_bytes()).unwrap();
    let mut v: Value = serde_json::from_str(KELF_JSON).unwrap();
    sprinkle_unknown_keys(&mut v);
    assert_eq!(parse_kelf_json("k", &bytes(&v)).unwrap(), clean);
}

#[test]
fn other_documents_missing_keys() {
    let neff = neff_json_trn1_value();
    let kelf: Value = serde_json::from_str(KELF_JSON).unwrap();
    let neff_cases: &[(&[&str], &str)] = &[
        (&["nodes"], "neff.json: nodes: missing"),
        (&["nodes", "1", "op"], "neff.json: nodes[1].op: missing"),
        (&["nodes", "2", "name"], "neff.json: nodes[2].name: missing"),
        (&["attrs"], "neff.json: attrs: missing"),
        (&["attrs", "shape"], "neff.json: attrs.shape: missing"),
        (&["attrs", "dltype"], "neff.json: attrs.dltype: missing"),
    ];
    for (path, want) in neff_cases {
        let mut v = neff.clone();
        remove_at(&mut v, path);
        assert_eq!(err_msg(parse_neff_json("neff.json", &bytes(&v))), *want);
    }
    let kelf_cases: &[(&[&str], &str)] = &[
        (&["graphs"], "kelf-0.json: graphs: missing"),
        (&["version"], "kelf-0.json: version: missing"),
        (&["target"], "kelf-0.json: target: missing"),
        (
            &["graphs", "1", "definition"],
            "kelf-0.json: graphs[1].definition: missing",
        ),
        (
            &["graphs", "0", "name"],
            "kelf-0.json: graphs[0].name: missing",
        ),
    ];
    for (path, want) in kelf_cases {
        let mut v = kelf.clone();
        remove_at(&mut v, path);
        assert_eq!(err_msg(parse_kelf_json("kelf-0.json", &bytes(&v))), *want);
    }
    let mut v = neff.clone();
    v["attrs"]["shape"] = json!(["list_int", [[1]]]);
    assert_eq!(
        err_msg(parse_neff_json("neff.json", &bytes(&v))),
        "neff.json: attrs.shape: expected [\"list_shape\", [...]]"
    );
}

// ---------------------------------------------------------------------------------------------
// Engine JSON

#[test]
fn engine_json_real_shape() {
    let e = parse_engine_json("sg00/SP.json", &bytes(&sp_json())).unwrap();
    assert_eq!(e.name.as_deref(), Some("SP.json"));
    assert_eq!(e.instr.as_deref(), Some("SP.bin"));
    assert_eq!(e.dma.len(), 3);
    let b0 = &e.dma[0];
    assert_eq!(
        (b0.id, b0.queue.as_str(), b0.semaphore),
        (0, "qSPIO0", Some(8))
    );
    assert_eq!(b0.comment.as_deref(), Some("I-4-0-block-1"));
    let d = &b0.descs[0];
    assert_eq!(d.op, DmaOp::Copy, "default op");
    assert_eq!(d.from.as_deref(), Some("a_vec"));
    assert_eq!(d.to, "SB");
    assert_eq!((d.from_off, d.to_off), (0, 180608));
    assert_eq!(d.from_sizes, [4000, 128]);
    assert_eq!(d.to_steps, [1, 262144]);
    assert_eq!((d.from_dtype, d.to_dtype), (Dtype::F32, Dtype::F32));
    assert_eq!(d.num_tiling_dimensions, Some(1));
    assert!(d.transpose.is_none());

    let cast = &e.dma[1].descs[0];
    assert_eq!(cast.op, DmaOp::Cast);
    assert_eq!(cast.to_dtype, Dtype::F16);
    assert_eq!(cast.to_sizes, [888, 128]);
    assert!(e.dma[1].comment.is_some());

    // A transposing desc with no `op`: Transpose.
    let t = &e.dma[1].descs[1];
    assert_eq!(t.op, DmaOp::Transpose);
    assert_eq!(t.from_off, 0, "default offset");
    let tp = t.transpose.as_ref().unwrap();
    assert_eq!(tp.op.as_deref(), Some("WZXY"));
    assert_eq!(tp.shape, [1, 1, 128, 128]);
    assert_eq!(tp.element_size, Some(2));
    assert_eq!(t.num_tiling_dimensions, Some(2));

    // instance_name takes precedence over queue; event; fma/max parameters; default dtype.
    let b2 = &e.dma[2];
    assert_eq!(b2.queue, "qSPSpillReload0_1");
    assert_eq!(b2.event, Some(3));
    assert!(b2.comment.is_none());
    let fma = &b2.descs[0];
    assert_eq!(fma.op, DmaOp::Fma);
    assert_eq!((fma.scale, fma.scale_dtype), (Some(0.5), Some(Dtype::F32)));
    assert_eq!((fma.from_dtype, fma.to_dtype), (Dtype::U8, Dtype::U8));
    let max = &b2.descs[1];
    assert_eq!(max.op, DmaOp::Max);
    assert_eq!(
        (max.constant, max.constant_dtype),
        (Some(-1.0), Some(Dtype::I32))
    );

    // Engine JSONs without DMAs (PE.json, Activation.json with its extra keys).
    let act = parse_engine_json(
        "sg00/Activation.json",
        &bytes(
            &json!({"name": "Activation.json", "instr": "Activation.bin", "dma": [],
                       "act_info": "act_info.json", "act_semaphore": 12,
                       "activation_function_sets": ["exp_and_others"]}),
        ),
    )
    .unwrap();
    assert!(act.dma.is_empty());
}

#[test]
fn engine_json_errors_name_file_and_key() {
    let cases: &[(&[&str], &str)] = &[
        (&["dma", "0", "id"], "sg00/SP.json: dma[0].id: missing"),
        (
            &["dma", "0", "queue"],
            "sg00/SP.json: dma[0].queue: missing",
        ),
        (&["dma", "1", "desc"], "sg00/SP.json: dma[1].desc: missing"),
        (
            &["dma", "1", "desc", "0", "to"],
            "sg00/SP.json: dma[1].desc[0].to: missing",
        ),
        (
            &["dma", "0", "desc", "0", "from_sizes"],
            "sg00/SP.json: dma[0].desc[0].from_sizes: missing",
        ),
        (
            &["dma", "0", "desc", "0", "to_steps"],
            "sg00/SP.json: dma[0].desc[0].to_steps: missing",
        ),
    ];
    for (path, want) in cases {
        let mut v = sp_json();
        remove_at(&mut v, path);
        assert_eq!(
            err_msg(parse_engine_json("sg00/SP.json", &bytes(&v))),
            *want
        );
    }
    // instance_name alone is enough.
    let mut v = sp_json();
    remove_at(&mut v, &["dma", "2", "queue"]);
    parse_engine_json("sg00/SP.json", &bytes(&v)).unwrap();

    let typed: &[(&str, Value, &str)] = &[
        (
            "/dma/1/desc/0/op",
            json!("scatter"),
            "sg00/SP.json: dma[1].desc[0].op: unknown DMA op \"scatter\"",
        ),
        (
            "/dma/0/desc/0/from_dtype",
            json!("float64"),
            "sg00/SP.json: dma[0].desc[0].from_dtype: unknown dtype \"float64\"",
        ),
        (
            "/dma/0/desc/0/to_steps/1",
            json!("262144"),
            "sg00/SP.json: dma[0].desc[0].to_steps[1]: expected integer, got string",
        ),
        (
            "/dma/0/desc/0/to_off",
            json!(-8),
            "sg00/SP.json: dma[0].desc[0].to_off: expected unsigned integer, got -8",
        ),
        (
            "/dma/0/desc/0/from_sizes/0",
            json!(1u64 << 41),
            "sg00/SP.json: dma[0].desc[0].from_sizes[0]: 2199023255552 exceeds the limit of 1099511627776",
        ),
        ("/dma", json!({}), "sg00/SP.json: dma: expected array, got object"),
    ];
    for (ptr, val, want) in typed {
        let mut v = sp_json();
        *v.pointer_mut(ptr).unwrap() = val.clone();
        assert_eq!(
            err_msg(parse_engine_json("sg00/SP.json", &bytes(&v))),
            *want,
            "{ptr}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// .npy constants

fn npy_u16(shape: &[u64], vals: &[u16], descr: &str, order: npyz::Order) -> Vec<u8> {
    use npyz::WriterBuilder;
    let mut buf = Vec::new();
    let ty: npyz::TypeStr = descr.parse().unwrap();
    let mut w = npyz::WriteOptions::<u16>::new()
        .dtype(npyz::DType::Plain(ty))
        .shape(shape)
        .order(order)
        .writer(&mut buf)
        .begin_nd()
        .unwrap();
    w.extend(vals.iter().copied()).unwrap();
    w.finish().unwrap();
    buf
}

/// Relabels a `u2` npy as `f2` (npyz without its `half` feature writes no f16).
fn as_f16(mut buf: Vec<u8>) -> Vec<u8> {
    let pos = buf.windows(3).position(|w| w == b"u2'").unwrap();
    buf[pos] = b'f';
    buf
}

#[test]
fn npy_f16_weights_to_bytes() {
    let vals: Vec<u16> = (0..128 * 128)
        .map(|i| half::f16::from_f32(i as f32 / 64.0 - 100.0).to_bits())
        .collect();
    let file = as_f16(npy_u16(&[128, 128, 1, 1], &vals, "<u2", npyz::Order::C));
    let c = parse_npy("sg00/value_sg0000_w_CRSM.npy", &file).unwrap();
    assert_eq!(c.descr, "<f2");
    assert_eq!(c.shape, [128, 128, 1, 1]);
    assert_eq!(c.data.len(), 32768);
    let want: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
    assert_eq!(c.data, want);
    assert_eq!(
        half::f16::from_bits(u16::from_le_bytes([c.data[2 * 129], c.data[2 * 129 + 1]])),
        half::f16::from_f32(129.0 / 64.0 - 100.0)
    );
}

#[test]
fn npy_big_endian_and_fortran_order() {
    // Big-endian elements come out little-endian.
    let be = as_f16(npy_u16(&[2, 2], &[1, 2, 3, 0x0102], ">u2", npyz::Order::C));
    let c = parse_npy("be.npy", &be).unwrap();
    assert_eq!(c.data, [1, 0, 2, 0, 3, 0, 2, 1]);

    // Fortran-order data is reordered to C order: logical [[1, 2, 3], [4, 5, 6]].
    let f = npy_u16(&[2, 3], &[1, 4, 2, 5, 3, 6], "<u2", npyz::Order::Fortran);
    let c = parse_npy("f.npy", &f).unwrap();
    let elems: Vec<u16> = c
        .data
        .chunks(2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .collect();
    assert_eq!(elems, [1, 2, 3, 4, 5, 6]);
}

#[test]
fn npy_errors_never_panic() {
    let good = npy_u16(&[4], &[1, 2, 3, 4], "<u2", npyz::Order::C);
    // Truncated data.
    let m = err_msg(parse_npy("w.npy", &good[..good.len() - 1]));
    assert!(m.starts_with("w.npy: ") && m.contains("needs 8"), "{m}");
    // Not numpy at all, and every truncation of the header.
    assert!(err_msg(parse_npy("w.npy", b"hello")).contains("w.npy"));
    for n in 0..good.len() - 8 {
        let _ = parse_npy("w.npy", &good[..n]);
    }
    // A shape whose element count overflows.
    let huge = raw_npy(
        "{'descr': '<u2', 'fortran_order': False, 'shape': (99999999999, 99999999999, 9), }",
        &[0; 8],
    );
    let m = err_msg(parse_npy("w.npy", &huge));
    assert!(m.contains("too many elements"), "{m}");
    // Structured dtypes are rejected.
    let rec = raw_npy(
        "{'descr': [('a', '<i4'), ('b', '<f4')], 'fortran_order': False, 'shape': (1,), }",
        &[0; 8],
    );
    let m = err_msg(parse_npy("rec.npy", &rec));
    assert!(m.contains("rec.npy: unsupported npy dtype"), "{m}");
    // The raw builder itself is sound.
    let ok = raw_npy(
        "{'descr': '<u2', 'fortran_order': False, 'shape': (4,), }",
        &[1, 0, 2, 0, 3, 0, 4, 0],
    );
    assert_eq!(
        parse_npy("ok.npy", &ok).unwrap().data,
        [1, 0, 2, 0, 3, 0, 4, 0]
    );
}

/// An npy v1.0 file with header dict `dict` (padded to 64 bytes) and raw `data`.
fn raw_npy(dict: &str, data: &[u8]) -> Vec<u8> {
    let mut header = dict.to_string();
    while !(10 + header.len() + 1).is_multiple_of(64) {
        header.push(' ');
    }
    header.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(data);
    out
}

// ---------------------------------------------------------------------------------------------
// Member paths

#[test]
fn member_paths_are_relative_to_the_manifest() {
    assert_eq!(join_member("sg00", "PE.json"), "sg00/PE.json");
    assert_eq!(join_member("", "kelf-0.json"), "kelf-0.json");
    assert_eq!(join_member("sg00/", "./PE.bin"), "sg00/PE.bin");
    assert_eq!(member_dir("sg00/def.json"), "sg00");
    assert_eq!(member_dir("neff.json"), "");

    let mut m: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    m.insert("sg00/PE.json".into(), b"a".to_vec());
    m.insert("sg01/full.bin".into(), b"b".to_vec());
    assert_eq!(m.member("sg00/PE.json"), Some(&b"a"[..]));
    let (p, b) = resolve_member(&m, "sg00", "PE.json").unwrap();
    assert_eq!((p.as_str(), b), ("sg00/PE.json", &b"a"[..]));
    // A writer that already spelled the full path still resolves.
    let (p, _) = resolve_member(&m, "sg01", "sg01/full.bin").unwrap();
    assert_eq!(p, "sg01/full.bin");
    assert!(resolve_member(&m, "sg01", "PE.json").is_none());
}

#[test]
fn tensor_bytes_is_checked() {
    assert_eq!(tensor_bytes(&[128, 1000], Dtype::F32), Some(512000));
    assert_eq!(tensor_bytes(&[], Dtype::Bf16), Some(2));
    assert_eq!(tensor_bytes(&[u64::MAX, 2], Dtype::U8), None);
    assert_eq!(tensor_bytes(&[1 << 40, 2], Dtype::U8), None);
}
