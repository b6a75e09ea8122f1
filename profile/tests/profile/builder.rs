//! The builder: a simulated run's records become a profile whose JSON has the device
//! records' keys and number types (checked against a device export when one is present),
//! reads back unchanged, marks itself a simulation, and whose summary follows the rules
//! (busy time without EVENT_SEMAPHORE, unions, DMA by queue kind, window keeping).

use nrt_hal::EngineKind;
use nrt_profile::{compare, json, Instr, Packet, Profile, ProfileBuilder, QueueType};
use serde_json::Value;

use crate::shared;

fn run() -> Profile {
    let mut b = ProfileBuilder::new();
    b.base.compiler_version = "2.23.6484.0+3b612583".into();
    b.base.instance_type = "trn2.3xlarge".into();
    b.neff_header.network_name = "fused.neff".into();
    // PE: a wait, then two overlapping matmul phases.
    b.instruction(Instr::new(
        EngineKind::Pe,
        66,
        "EVENT_SEMAPHORE",
        "S[2]>=1",
        0.0,
        100.0,
    ));
    b.instruction(
        Instr::new(EngineKind::Pe, 67, "LDWEIGHTS", "", 100.0, 130.5).with(|r| {
            r.instruction_type = "REGULAR".into();
            r.sbuf_read_bytes = Some(2048);
        }),
    );
    b.instruction(
        Instr::new(EngineKind::Pe, 68, "MATMUL", "acc_flags=3", 120.0, 200.0).with(|r| {
            r.instruction_type = "TRANSPOSE".into();
            r.elements = Some(1 << 20);
            r.psum_write_bytes = Some(512);
        }),
    );
    b.instruction(Instr::new(
        EngineKind::Act,
        66,
        "ACTIVATE",
        "EXP",
        150.0,
        250.0,
    ));
    b.instruction(Instr::new(EngineKind::Sp, 49, "DMA_DIRECT2D", "", 10.0, 20.0).subgraph("sg01"));
    // DMA: static, software- and hardware-dynamic packets.
    b.dma_packet(Packet::new(QueueType::Static, 0, 3, 4096, 20.0, 90.0).hbm(4096, 0));
    b.dma_packet(Packet::new(QueueType::Static, 0, 3, 4096, 80.0, 140.0).hbm(4096, 0));
    b.dma_packet(Packet::new(
        QueueType::SoftwareDynamic,
        1,
        0,
        2048,
        300.0,
        310.0,
    ));
    b.dma_packet(Packet::new(QueueType::HardwareDynamic, 2, 5, 256, 305.0, 320.0).hbm(0, 256));
    b.semaphore_update("2", 1, 95.0);
    b.semaphore_update_in("sg01", "S[24] (qSyncDynamicHW)", 16, 30.0);
    b.event("sg00", 5.0);
    b.finish().unwrap()
}

#[test]
fn summary_follows_the_rules() {
    let p = run();
    let s = p.summary().unwrap();
    let close = |a: f64, b: f64| (a - b).abs() < 1e-15;
    assert!(close(s.total_time, 320e-9));
    assert_eq!(s.neuroncore_cycle_count, 384);
    assert_eq!(s.tensor_engine_instruction_count, 3);
    // Busy: 30.5 + 80 (the wait left out); active: the union 100..200.
    assert!(close(s.tensor_engine_instruction_time, 110.5e-9));
    assert!(close(s.tensor_engine_active_time, 100e-9));
    assert!(close(s.tensor_engine_active_time_percent, 100.0 / 320.0));
    assert_eq!(s.sync_engine_instruction_count, 1);
    // DMA: union 20..140 + 300..320 = 140 ns; packet time 70 + 60 + 10 + 15.
    assert!(close(s.dma_active_time, 140e-9));
    assert!(close(s.dma_packet_time, 155e-9));
    assert_eq!(s.dma_active_cycles, 168);
    assert_eq!((s.static_dma_packet_count, s.static_dma_size), (2, 8192));
    assert!(close(s.static_dma_active_time, 120e-9));
    assert_eq!(s.software_dynamic_dma_packet_count, 1);
    assert_eq!(s.hardware_dynamic_dma_size, 256);
    // The two dynamic kinds' fractions add up (10 + 15 ns), they are not united.
    assert!(close(s.dynamic_dma_active_time_percent, 25.0 / 140.0));
    // Everything busy: 20..250 and 300..320 (sg01's SP at 10..20 touches 20).
    assert!(close(s.total_active_time, 260e-9));
    assert_eq!(s.event_count, 3);
    assert_eq!(s.trace_count, 5 + 4 + 3);
    assert_eq!((s.hbm_read_bytes, s.hbm_write_bytes), (8192, 256));
    assert_eq!((s.hardware_flops, s.transpose_flops), (2 << 20, 2 << 20));
    assert_eq!(s.matmul_instruction_count, 1);
    assert_eq!(s.activate_instruction_count, 1);
    assert_eq!((s.sbuf_read_bytes, s.psum_write_bytes), (2048, 512));
    assert_eq!(s.compiler_version, "2.23.6484.0+3b612583");
    assert!(s.profiler_version.starts_with("nrt-emu "));
    // active_time[]: PE merged into one interval; ACT one; sg01 SP one.
    let pe: Vec<_> = p
        .active_time
        .iter()
        .filter(|a| a.engine == "tensor")
        .map(|a| (a.start_ts, a.end_ts, a.duration_ns))
        .collect();
    assert_eq!(pe, [(100, 200, 100)]);
    assert_eq!(p.active_time.len(), 3);
    // model_info per subgraph.
    assert_eq!(p.model_info.len(), 2);
    assert_eq!(p.model_info[0].tensor_engine_instruction_count, 3);
    assert_eq!(p.model_info[1].sync_engine_instruction_count, 1);
    assert_eq!(p.model_info[1].trace_count, 2);
    let m = p.metadata().unwrap();
    assert!(m.is_simulation);
    assert_eq!((m.last_hw_timestamp, m.num_subgraphs), (320, 2));
    // Records: floored ns, numbered, labelled; packets numbered per queue.
    let mm = p.instruction.iter().find(|i| i.opcode == "MATMUL").unwrap();
    assert_eq!(
        (mm.timestamp, mm.duration, mm.label.as_str()),
        (120, 80, "TensorMatrix")
    );
    let ld = p
        .instruction
        .iter()
        .find(|i| i.opcode == "LDWEIGHTS")
        .unwrap();
    assert_eq!((ld.duration, ld.label.as_str()), (30, "Tensor"));
    let q3: Vec<_> = p
        .dma
        .iter()
        .filter(|d| d.dma_engine == "67")
        .map(|d| d.packet_idx)
        .collect();
    assert_eq!(q3, [0, 1]);
    assert_eq!(p.dma[0].subgroup, "Q0-E67");
    assert!((p.dma[0].transfer_rate - 4096.0 / 70e-9).abs() < 1e4);
}

#[test]
fn built_profile_round_trips_and_compares_with_itself() {
    let p = run();
    let text = json::to_string(&p);
    let back = json::from_str(&text).unwrap();
    let (a, b) = (format!("{back:#?}"), format!("{p:#?}"));
    let diff: Vec<_> = a
        .lines()
        .zip(b.lines())
        .filter(|(x, y)| x != y)
        .take(5)
        .collect();
    assert!(diff.is_empty(), "{diff:?}");
    assert_eq!(back, p);
    assert_eq!(json::to_string(&back), text, "the writer is deterministic");
    assert!(compare(&p, &back).is_exact());
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["metadata"][0]["is_simulation"], true);
    // Go's number forms: an integral float has no fraction, a tiny one an exponent.
    assert!(text.contains(r#""total_time":3.2e-7,"#), "{text}");
    assert!(text.contains(r#""tensor_engine_active_time_percent":0.3125,"#));
    assert!(text.contains(r#""dma_transfer_time":0,"#));
}

/// The keys of each kind of record, and each key's JSON type (string, bool, array, integer,
/// float — integral floats count as integers, as Go writes them).
fn shape(v: &Value) -> std::collections::BTreeMap<String, &'static str> {
    v.as_object()
        .unwrap()
        .iter()
        .map(|(k, x)| {
            let t = match x {
                Value::String(_) => "string",
                Value::Bool(_) => "bool",
                Value::Array(_) => "array",
                Value::Number(n) if n.is_f64() => "float",
                Value::Number(_) => "integer",
                _ => "other",
            };
            (k.clone(), t)
        })
        .collect()
}

#[test]
fn built_records_have_the_device_records_keys_and_types() {
    let Some(dir) = shared::current_profiles() else {
        return;
    };
    let Some(export) = shared::files(&dir, ".profile.json").into_iter().next() else {
        println!("SKIP: no device export in {}", dir.display());
        return;
    };
    let dev: Value = serde_json::from_str(&std::fs::read_to_string(&export).unwrap()).unwrap();
    let ours: Value = serde_json::from_str(&json::to_string(&run())).unwrap();
    for section in Profile::SECTIONS {
        // A device record with no optional keys is the reference for instructions.
        let pick = |v: &Value| -> Value {
            let arr = v[section].as_array().unwrap();
            arr.iter()
                .min_by_key(|r| r.as_object().unwrap().len())
                .unwrap()
                .clone()
        };
        let (d, o) = (shape(&pick(&dev)), shape(&pick(&ours)));
        let dk: Vec<&String> = d.keys().collect();
        let ok: Vec<&String> = o.keys().collect();
        assert_eq!(ok, dk, "{section}: keys");
        for (k, t) in &d {
            // A float the device happened to write as an integer (an integral value) may be
            // a fraction in ours, and the reverse.
            let numeric = |x: &str| x == "integer" || x == "float";
            assert!(
                o[k] == *t || (numeric(o[k]) && numeric(t)),
                "{section}.{k}: ours {}, device {t}",
                o[k]
            );
        }
    }
}
