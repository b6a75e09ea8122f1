//! The model against neuron-profile 2.28's JSON exports of four device runs: each reads into
//! the model; written back, it is the same JSON — key for key, value for value, number type
//! for number type — on every array the model holds; and the summary recomputed from the
//! file's own `instruction[]` and `dma[]` by the rules of docs/profile.md §4 reproduces its
//! `summary[0]` within the rounding of those records' floored nanoseconds.

use std::path::PathBuf;

use nrt_profile::{json, summarize, Profile, Summary};
use serde_json::Value;

use crate::shared;

fn exports() -> Vec<PathBuf> {
    let Some(dir) = shared::current_profiles() else {
        return Vec::new();
    };
    let v = shared::files(&dir, ".profile.json");
    if v.is_empty() {
        println!("SKIP: no *.profile.json in {}", dir.display());
    }
    v
}

/// Whether two JSON values are equal with the same JSON types (an integer is not a float).
fn same(a: &Value, b: &Value, at: &str, diffs: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let kx: Vec<&String> = x.keys().collect();
            let ky: Vec<&String> = y.keys().collect();
            if kx != ky {
                diffs.push(format!("{at}: keys {kx:?} vs {ky:?}"));
                return;
            }
            for (k, v) in x {
                same(v, &y[k], &format!("{at}.{k}"), diffs);
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            if x.len() != y.len() {
                diffs.push(format!("{at}: {} vs {} elements", x.len(), y.len()));
                return;
            }
            for (n, (p, q)) in x.iter().zip(y).enumerate() {
                same(p, q, &format!("{at}[{n}]"), diffs);
            }
        }
        (Value::Number(p), Value::Number(q)) => {
            if p.is_f64() != q.is_f64() || p.as_f64() != q.as_f64() {
                diffs.push(format!("{at}: {p} vs {q}"));
            }
        }
        _ => {
            if a != b {
                diffs.push(format!("{at}: {a} vs {b}"));
            }
        }
    }
}

#[test]
fn device_exports_round_trip_key_for_key() {
    for path in exports() {
        let text = std::fs::read_to_string(&path).unwrap();
        let device: Value = serde_json::from_str(&text).unwrap();
        let profile = json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!profile.instruction.is_empty() && profile.summary().is_some());
        let written = json::to_string(&profile);
        let ours: Value = serde_json::from_str(&written).unwrap();
        let mut diffs = Vec::new();
        for s in Profile::SECTIONS {
            same(&device[s], &ours[s], s, &mut diffs);
        }
        // Only the model's arrays are written.
        let keys: Vec<&String> = ours.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), Profile::SECTIONS.len(), "{keys:?}");
        assert!(
            diffs.is_empty(),
            "{}: {} differences, first: {:#?}",
            path.display(),
            diffs.len(),
            &diffs[..diffs.len().min(10)]
        );
        // And it reads back into the same model.
        assert_eq!(json::from_str(&written).unwrap(), profile);
    }
}

/// A time key of the summary with the number of floored intervals behind it.
fn time_keys(s: &Summary, p: &Profile) -> Vec<(&'static str, f64, u64)> {
    let n = |sub: &str| {
        p.instruction
            .iter()
            .filter(|i| i.subgroup == sub && !i.is_wait())
            .count() as u64
    };
    let packets = p.dma.len() as u64;
    let by_kind = |k: &str| p.dma.iter().filter(|d| d.queue_type == k).count() as u64;
    vec![
        (
            "tensor_engine_instruction_time",
            s.tensor_engine_instruction_time,
            n("Tensor"),
        ),
        (
            "tensor_engine_active_time",
            s.tensor_engine_active_time,
            n("Tensor"),
        ),
        (
            "scalar_engine_instruction_time",
            s.scalar_engine_instruction_time,
            n("Scalar"),
        ),
        (
            "scalar_engine_active_time",
            s.scalar_engine_active_time,
            n("Scalar"),
        ),
        (
            "gpsimd_engine_instruction_time",
            s.gpsimd_engine_instruction_time,
            n("GpSimd"),
        ),
        (
            "gpsimd_engine_active_time",
            s.gpsimd_engine_active_time,
            n("GpSimd"),
        ),
        (
            "vector_engine_instruction_time",
            s.vector_engine_instruction_time,
            n("Vector"),
        ),
        (
            "vector_engine_active_time",
            s.vector_engine_active_time,
            n("Vector"),
        ),
        (
            "sync_engine_instruction_time",
            s.sync_engine_instruction_time,
            n("Sync"),
        ),
        (
            "sync_engine_active_time",
            s.sync_engine_active_time,
            n("Sync"),
        ),
        ("dma_packet_time", s.dma_packet_time, packets),
        ("dma_active_time", s.dma_active_time, packets),
        (
            "total_active_time",
            s.total_active_time,
            packets + p.instruction.len() as u64,
        ),
        ("total_time", s.total_time, 1),
        (
            "static_dma_active_time",
            s.static_dma_active_time,
            by_kind("instruction") + by_kind("static"),
        ),
        (
            "software_dynamic_dma_active_time",
            s.software_dynamic_dma_active_time,
            by_kind("software_dynamic"),
        ),
        (
            "hardware_dynamic_dma_active_time",
            s.hardware_dynamic_dma_active_time,
            by_kind("hardware_dynamic"),
        ),
        ("activate_instruction_time", s.activate_instruction_time, 4),
    ]
}

#[test]
fn summary_recomputed_from_the_records_reproduces_the_device_summary() {
    for path in exports() {
        let p = json::read_file(&path).unwrap();
        let device = p.summary().unwrap().clone();
        let ours = summarize(&p);
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let mut bad = Vec::new();
        // Counts and bytes: exact.
        let counts = [
            (
                "tensor_engine_instruction_count",
                ours.tensor_engine_instruction_count,
                device.tensor_engine_instruction_count,
            ),
            (
                "scalar_engine_instruction_count",
                ours.scalar_engine_instruction_count,
                device.scalar_engine_instruction_count,
            ),
            (
                "gpsimd_engine_instruction_count",
                ours.gpsimd_engine_instruction_count,
                device.gpsimd_engine_instruction_count,
            ),
            (
                "vector_engine_instruction_count",
                ours.vector_engine_instruction_count,
                device.vector_engine_instruction_count,
            ),
            (
                "sync_engine_instruction_count",
                ours.sync_engine_instruction_count,
                device.sync_engine_instruction_count,
            ),
            (
                "static_dma_packet_count",
                ours.static_dma_packet_count,
                device.static_dma_packet_count,
            ),
            (
                "software_dynamic_dma_packet_count",
                ours.software_dynamic_dma_packet_count,
                device.software_dynamic_dma_packet_count,
            ),
            (
                "hardware_dynamic_dma_packet_count",
                ours.hardware_dynamic_dma_packet_count,
                device.hardware_dynamic_dma_packet_count,
            ),
            (
                "static_dma_size",
                ours.static_dma_size,
                device.static_dma_size,
            ),
            (
                "software_dynamic_dma_size",
                ours.software_dynamic_dma_size,
                device.software_dynamic_dma_size,
            ),
            (
                "hardware_dynamic_dma_size",
                ours.hardware_dynamic_dma_size,
                device.hardware_dynamic_dma_size,
            ),
            (
                "matmul_instruction_count",
                ours.matmul_instruction_count,
                device.matmul_instruction_count,
            ),
            (
                "activate_instruction_count",
                ours.activate_instruction_count,
                device.activate_instruction_count,
            ),
            (
                "sbuf_read_bytes",
                ours.sbuf_read_bytes,
                device.sbuf_read_bytes,
            ),
            (
                "sbuf_write_bytes",
                ours.sbuf_write_bytes,
                device.sbuf_write_bytes,
            ),
            (
                "psum_read_bytes",
                ours.psum_read_bytes,
                device.psum_read_bytes,
            ),
            (
                "psum_write_bytes",
                ours.psum_write_bytes,
                device.psum_write_bytes,
            ),
            (
                "psum_read_sbuf_write_bytes",
                ours.psum_read_sbuf_write_bytes,
                device.psum_read_sbuf_write_bytes,
            ),
            (
                "psum_read_sbuf_write_count",
                ours.psum_read_sbuf_write_count,
                device.psum_read_sbuf_write_count,
            ),
            ("hbm_read_bytes", ours.hbm_read_bytes, device.hbm_read_bytes),
            (
                "hbm_write_bytes",
                ours.hbm_write_bytes,
                device.hbm_write_bytes,
            ),
            ("hardware_flops", ours.hardware_flops, device.hardware_flops),
            (
                "transpose_flops",
                ours.transpose_flops,
                device.transpose_flops,
            ),
        ];
        for (k, a, b) in counts {
            if a != b {
                bad.push(format!("{k}: recomputed {a}, device {b}"));
            }
        }
        // Times: each floored interval can lose up to 2 ns (start and duration floored).
        for ((k, a, n), (_, b, _)) in time_keys(&ours, &p).into_iter().zip(time_keys(&device, &p)) {
            let slack = 2e-9 * n as f64 + 1e-12;
            println!(
                "{name} {k}: recomputed {:.3} ns, device {:.3} ns",
                a * 1e9,
                b * 1e9
            );
            if (a - b).abs() > slack {
                bad.push(format!(
                    "{k}: recomputed {a}, device {b} (allowed ±{slack})"
                ));
            }
        }
        // Cycle counts follow the times.
        let cyc = |a: u64, b: u64, slack: u64| a.abs_diff(b) <= slack;
        if !cyc(
            ours.neuroncore_cycle_count,
            device.neuroncore_cycle_count,
            2,
        ) {
            bad.push(format!(
                "neuroncore_cycle_count {} vs {}",
                ours.neuroncore_cycle_count, device.neuroncore_cycle_count
            ));
        }
        if !cyc(
            ours.dma_active_cycles,
            device.dma_active_cycles,
            3 * p.dma.len() as u64,
        ) {
            bad.push(format!(
                "dma_active_cycles {} vs {}",
                ours.dma_active_cycles, device.dma_active_cycles
            ));
        }
        // Fractions: relative 1 %, the rounding of the times above.
        let fractions = [
            (
                "tensor_engine_active_time_percent",
                ours.tensor_engine_active_time_percent,
                device.tensor_engine_active_time_percent,
            ),
            (
                "dma_active_time_percent",
                ours.dma_active_time_percent,
                device.dma_active_time_percent,
            ),
            (
                "total_active_time_percent",
                ours.total_active_time_percent,
                device.total_active_time_percent,
            ),
            (
                "static_dma_packet_percent",
                ours.static_dma_packet_percent,
                device.static_dma_packet_percent,
            ),
            (
                "software_dynamic_dma_size_percent",
                ours.software_dynamic_dma_size_percent,
                device.software_dynamic_dma_size_percent,
            ),
            (
                "dynamic_dma_packet_percent",
                ours.dynamic_dma_packet_percent,
                device.dynamic_dma_packet_percent,
            ),
            (
                "dynamic_dma_active_time_percent",
                ours.dynamic_dma_active_time_percent,
                device.dynamic_dma_active_time_percent,
            ),
            (
                "mfu_estimated_percent",
                ours.mfu_estimated_percent,
                device.mfu_estimated_percent,
            ),
            (
                "hfu_estimated_percent",
                ours.hfu_estimated_percent,
                device.hfu_estimated_percent,
            ),
            (
                "mbu_estimated_percent",
                ours.mbu_estimated_percent,
                device.mbu_estimated_percent,
            ),
            (
                "mbu_min_read_util_percent",
                ours.mbu_min_read_util_percent,
                device.mbu_min_read_util_percent,
            ),
            (
                "mm_arithmetic_intensity",
                ours.mm_arithmetic_intensity,
                device.mm_arithmetic_intensity,
            ),
            (
                "mfu_max_achievable_estimated_percent",
                ours.mfu_max_achievable_estimated_percent,
                device.mfu_max_achievable_estimated_percent,
            ),
            (
                "peak_flops_bandwidth_ratio",
                ours.peak_flops_bandwidth_ratio,
                device.peak_flops_bandwidth_ratio,
            ),
        ];
        for (k, a, b) in fractions {
            if (a - b).abs() > 0.01 * b.abs() + 1e-12 {
                bad.push(format!("{k}: recomputed {a}, device {b}"));
            }
        }
        assert!(bad.is_empty(), "{name}:\n{}", bad.join("\n"));
    }
}

#[test]
fn unknown_keys_are_tolerated_and_wrong_types_named() {
    let p = json::from_str(
        r#"{"instruction":[{"pc":3,"opcode":"NOP","subgroup":"Sync","future_key":[1,{"a":2}]}],
            "something_new":{"x":1},"summary":[{"total_time":0.5,"new_metric":7}]}"#,
    )
    .unwrap();
    assert_eq!(p.instruction[0].pc, 3);
    assert_eq!(p.summary().unwrap().total_time, 0.5);
    let e = json::from_str(r#"{"instruction":[{"pc":"three"}]}"#).unwrap_err();
    assert!(e.to_string().contains("invalid type"), "{e}");
    let e = json::from_str(r#"{"summary":[{"total_time":"#).unwrap_err();
    assert!(e.to_string().contains("profile JSON"), "{e}");
    let e = json::read_file(std::path::Path::new("/nonexistent/x.json")).unwrap_err();
    assert!(e.to_string().contains("/nonexistent/x.json"), "{e}");
}
