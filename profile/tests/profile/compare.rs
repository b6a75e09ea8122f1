//! The comparison: a profile compared with itself is all matched with zero differences (for
//! the device exports, a trace's profile and a built one); the alignment is pinned on
//! crafted pairs (the runtime's instructions around the program, one inserted instruction,
//! one changed opcode); the JSON report has exactly its keys; and a trace compared with the
//! export of the same run matches opcode for opcode.

use nrt_hal::EngineKind;
use nrt_profile::{compare, json, Instr, Method, NtffTrace, Profile, ProfileBuilder};

use crate::shared;

fn assert_self_match(p: &Profile, what: &str) {
    let c = compare(p, p);
    let f = c.figures;
    assert_eq!(f.instructions_total, p.instruction.len() as u64, "{what}");
    assert_eq!(f.opcode_match, f.instructions_total, "{what}");
    assert_eq!(f.operands_match, f.instructions_total, "{what}");
    assert!(
        c.largest_differences.is_empty(),
        "{what}: {:?}",
        c.largest_differences
    );
    assert!(c.is_exact(), "{what}");
    assert_eq!(f.total_time_us.sim, f.total_time_us.device, "{what}");
    for a in [
        f.engines.pe,
        f.engines.act,
        f.engines.dve,
        f.engines.pool,
        f.engines.sp,
        f.engines.dma,
    ] {
        assert_eq!(a.sim_active_us, a.device_active_us, "{what}");
    }
    for a in &c.alignments {
        assert!(
            a.device_only.is_empty() && a.sim_only.is_empty(),
            "{what}: {a:?}"
        );
        assert_eq!(a.paired, a.sim_count, "{what}");
    }
    assert!(c.to_text().contains(&format!(
        "same opcode {n} of {n}, same operands {n} of {n}",
        n = f.instructions_total
    )));
}

#[test]
fn device_exports_and_traces_match_themselves() {
    let Some(dir) = shared::current_profiles() else {
        return;
    };
    for j in shared::files(&dir, ".profile.json") {
        let p = json::read_file(&j).unwrap();
        assert_self_match(&p, &j.display().to_string());
    }
    for t in shared::files(&dir, ".ntff") {
        let p = NtffTrace::read_file(&t).unwrap().to_profile();
        assert_self_match(&p, &t.display().to_string());
    }
}

#[test]
fn a_trace_matches_the_export_of_the_same_run() {
    let Some(dir) = shared::current_profiles() else {
        return;
    };
    for j in shared::files(&dir, ".profile.json") {
        let t = j.to_string_lossy().replace(".profile.json", ".ntff");
        let ours = NtffTrace::read_file(std::path::Path::new(&t))
            .unwrap()
            .to_profile();
        let dev = json::read_file(&j).unwrap();
        let c = compare(&ours, &dev);
        let f = c.figures;
        println!("{}\n{}", j.display(), c.to_text());
        assert_eq!(f.instructions_total, dev.instruction.len() as u64);
        assert_eq!(f.opcode_match, f.instructions_total);
        // The trace reader does not render operands: only the export's blank ones match.
        let blank = dev
            .instruction
            .iter()
            .filter(|i| i.operands.trim().is_empty())
            .count();
        assert_eq!(f.operands_match, blank as u64);
        assert!(c.largest_differences.is_empty());
        assert!((f.total_time_us.sim - f.total_time_us.device).abs() < 1e-9);
        assert!(c.alignments.iter().all(|a| a.method == Method::PcOffset(0)));
    }
}

/// One engine's program: (opcode, operands, duration ns).
fn program() -> Vec<(&'static str, String, f64)> {
    let ops = [
        "LDWEIGHTS",
        "MATMUL",
        "EVENT_SEMAPHORE",
        "MATMUL",
        "DRAIN",
        "LDWEIGHTS",
    ];
    (0..30)
        .map(|k| (ops[k % ops.len()], format!("acc={k}"), 10.0 + k as f64))
        .collect()
}

/// A profile of `prog` on the PE with pcs from `first_pc`, after `pre` runtime instructions
/// and followed by `post` ones; `insert` puts an extra instruction before program index k.
fn profile(
    prog: &[(&str, String, f64)],
    pre: usize,
    post: usize,
    insert: Option<usize>,
) -> Profile {
    let mut b = ProfileBuilder::new();
    let mut t = 0.0;
    let mut pc = 0;
    let mut push = |b: &mut ProfileBuilder, op: &str, operands: &str, dur: f64| {
        b.instruction(Instr::new(EngineKind::Pe, pc, op, operands, t, t + dur));
        t += dur + 1.0;
        pc += 1;
    };
    for _ in 0..pre {
        push(&mut b, "NOTIFY", "runtime", 5.0);
    }
    for (k, (op, operands, dur)) in prog.iter().enumerate() {
        if insert == Some(k) {
            push(&mut b, "TENSOR_LOAD", "inserted", 7.0);
        }
        push(&mut b, op, operands, *dur);
    }
    for _ in 0..post {
        push(&mut b, "COMPARE_BRANCH", "runtime", 5.0);
    }
    b.finish().unwrap()
}

#[test]
fn alignment_by_pc_offset_skips_the_runtime_instructions() {
    let prog = program();
    let sim = profile(&prog, 0, 0, None);
    let dev = profile(&prog, 5, 3, None);
    let c = compare(&sim, &dev);
    let a = &c.alignments[0];
    assert_eq!(a.method, Method::PcOffset(5));
    assert_eq!((a.sim_count, a.device_count, a.paired), (30, 38, 30));
    assert_eq!(c.figures.opcode_match, 30);
    assert_eq!(c.figures.operands_match, 30);
    assert!(c.largest_differences.is_empty());
    assert_eq!(a.device_only.get("NOTIFY"), Some(&5));
    assert_eq!(a.device_only.get("COMPARE_BRANCH"), Some(&3));
    assert!(c.to_text().contains("pc offset +5"));
}

#[test]
fn alignment_pins_one_inserted_instruction() {
    let prog = program();
    let sim = profile(&prog, 0, 0, None);
    let dev = profile(&prog, 5, 3, Some(17));
    let c = compare(&sim, &dev);
    let a = &c.alignments[0];
    // The pc offset breaks after the insertion, so the sequence alignment is used.
    assert_eq!(a.method, Method::Sequence);
    assert_eq!((a.sim_count, a.device_count, a.paired), (30, 39, 30));
    assert_eq!(c.figures.opcode_match, 30);
    // Same operands and durations: each simulated instruction is paired with its own
    // device instruction, not a neighbour.
    assert_eq!(c.figures.operands_match, 30);
    assert!(
        c.largest_differences.is_empty(),
        "{:?}",
        c.largest_differences
    );
    assert_eq!(a.device_only.get("TENSOR_LOAD"), Some(&1));
    assert_eq!(a.device_only.values().sum::<u64>(), 9);
    assert!(a.sim_only.is_empty());

    // The other way round: the simulator runs one instruction the device does not.
    let c = compare(&dev, &sim);
    let a = &c.alignments[0];
    assert_eq!((a.sim_count, a.paired), (39, 30));
    assert_eq!(a.sim_only.get("TENSOR_LOAD"), Some(&1));
}

#[test]
fn a_changed_opcode_is_a_mismatched_pair_and_durations_are_ranked() {
    let prog = program();
    let mut other = prog.clone();
    other[4].0 = "NOP";
    other[9].2 += 100.0;
    other[20].2 += 40.0;
    let sim = profile(&prog, 0, 0, None);
    let dev = profile(&other, 5, 3, None);
    let c = compare(&sim, &dev);
    assert_eq!(c.alignments[0].method, Method::PcOffset(5));
    assert_eq!(c.figures.opcode_match, 29);
    assert_eq!(c.figures.operands_match, 30);
    let d = &c.largest_differences;
    assert_eq!(d.len(), 2);
    assert_eq!(
        (d[0].sim_pc, d[0].device_pc, d[0].delta_ns()),
        (9, 14, -100)
    );
    assert_eq!((d[1].sim_pc, d[1].delta_ns()), (20, -40));
    let text = c.to_text();
    assert!(text.contains("same opcode 29 of 30"), "{text}");
    assert!(text.contains("largest duration differences"), "{text}");
}

#[test]
fn json_report_has_exactly_its_keys() {
    let prog = program();
    let c = compare(&profile(&prog, 0, 0, None), &profile(&prog, 5, 3, None));
    let v = c.to_json();
    let keys = |v: &serde_json::Value| -> Vec<String> {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(
        keys(&v),
        [
            "engines",
            "instructions_total",
            "opcode_match",
            "operands_match",
            "total_time_us"
        ]
    );
    assert_eq!(keys(&v["total_time_us"]), ["device", "sim"]);
    assert_eq!(
        keys(&v["engines"]),
        ["act", "dma", "dve", "pe", "pool", "sp"]
    );
    for e in ["act", "dma", "dve", "pe", "pool", "sp"] {
        assert_eq!(
            keys(&v["engines"][e]),
            ["device_active_us", "sim_active_us"]
        );
    }
    assert_eq!(v["instructions_total"], 30);
    assert_eq!(v["opcode_match"], 30);
    assert!(
        v["total_time_us"]["device"].as_f64().unwrap()
            > v["total_time_us"]["sim"].as_f64().unwrap()
    );
}

#[test]
fn empty_sides_compare_without_pairs() {
    let prog = program();
    let p = profile(&prog, 0, 0, None);
    let empty = ProfileBuilder::new().finish().unwrap();
    let c = compare(&p, &empty);
    assert_eq!(c.figures.instructions_total, 30);
    assert_eq!(c.figures.opcode_match, 0);
    assert_eq!(c.alignments[0].method, Method::Nothing);
    let c = compare(&empty, &p);
    assert_eq!(c.figures.instructions_total, 0);
    assert_eq!(c.alignments[0].device_only.values().sum::<u64>(), 30);
    assert!(compare(&Profile::default(), &Profile::default()).is_exact());
}
