//! Reading current NEFFs with the tools: `nrt-emu disasm FILE.neff` names every record of every
//! engine stream (no `.raw` line) and agrees with `inspect`'s counts, and a NEFF for the trn3
//! generation (`mariana`, here a current NEFF repacked with that kelf target) is inspected and
//! disassembled, while `run` and the runtime's load refuse it naming the generation.

use std::path::PathBuf;

use nrt_fixtures::container::{rehash, Unpacked};

use super::{read, ATTENTION, ATTN_TKG, MATMUL, MOE};
use crate::support::nrt_emu_on;

/// The seven NEFFs of the set.
fn all() -> impl Iterator<Item = &'static str> {
    ATTENTION.into_iter().chain([MATMUL, MOE, ATTN_TKG])
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("nrt-emu-current-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `(records, .raw lines)` per stream header line `; sgNN <member> (N records)`.
fn streams(disasm: &str) -> Vec<(String, usize, usize)> {
    let mut out: Vec<(String, usize, usize)> = Vec::new();
    for line in disasm.lines() {
        if let Some(rest) = line.strip_prefix("; sg") {
            let (head, n) = rest.rsplit_once(" (").expect("a stream header");
            let n = n.trim_end_matches(" records)").parse().unwrap();
            out.push((format!("sg{head}"), n, 0));
        } else if !line.starts_with(';') {
            let s = out.last_mut().expect("records follow a stream header");
            if line.contains(".raw") {
                s.2 += 1;
            }
        }
    }
    out
}

#[test]
fn disasm_of_every_current_neff_decodes_every_record() {
    for name in all() {
        let Some(_) = read(&format!("{name}.neff")) else {
            return;
        };
        let path = super::folder().unwrap().join(format!("{name}.neff"));
        let d = nrt_emu_on(&["disasm"], &path).success("disasm");
        let first = d.stdout.lines().next().unwrap_or_default();
        assert!(first.contains("target cayman (trn2)"), "{name}: {first}");
        let s = streams(&d.stdout);
        assert!(!s.is_empty(), "{name}: no streams");
        let raw: usize = s.iter().map(|x| x.2).sum();
        assert_eq!(raw, 0, "{name}: {raw} records did not decode");
        // Each stream's record lines are as many as its header says.
        let lines = d.stdout.lines().filter(|l| !l.starts_with(';')).count();
        assert_eq!(lines, s.iter().map(|x| x.1).sum::<usize>(), "{name}");

        // inspect counts the same records per subgraph.
        let j = nrt_emu_on(&["inspect", "--json"], &path).success("inspect");
        let v: serde_json::Value = serde_json::from_str(&j.stdout).unwrap();
        assert_eq!(v["generation"], "trn2");
        assert_eq!(v["modelled"], true);
        let inspected: u64 = v["subgraphs"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|sg| sg["engines"].as_array().unwrap())
            .map(|e| e["instructions"].as_u64().unwrap())
            .sum();
        assert_eq!(inspected as usize, lines, "{name}: inspect vs disasm");
        println!(
            "current-neff {name}: disasm {lines} records in {} streams",
            s.len()
        );
    }
}

/// `neff` with its kelf target renamed and its hash recomputed.
fn retarget(neff: &[u8], target: &str) -> Vec<u8> {
    let mut u = Unpacked::from_neff(neff).unwrap();
    let m = u.member_mut("kelf-0.json").expect("kelf-0.json");
    let mut kelf: serde_json::Value = serde_json::from_slice(&m.data).unwrap();
    kelf["target"] = target.into();
    m.data = serde_json::to_vec_pretty(&kelf).unwrap();
    let mut bytes = u.pack();
    rehash(&mut bytes);
    bytes
}

#[test]
fn a_trn3_neff_is_read_but_not_run() {
    let Some(neff) = read(&format!("{MATMUL}.neff")) else {
        return;
    };
    let trn3 = retarget(&neff, "mariana");
    let dir = scratch("trn3");
    let path = dir.join("matmul_small.trn3.neff");
    std::fs::write(&path, &trn3).unwrap();

    let text = nrt_emu_on(&["inspect"], &path).success("inspect");
    assert!(
        text.stdout
            .contains("target mariana (trn3: not modelled, read only)"),
        "{}",
        text.stdout
    );
    let j = nrt_emu_on(&["inspect", "--json"], &path).success("inspect --json");
    let v: serde_json::Value = serde_json::from_str(&j.stdout).unwrap();
    assert_eq!(
        (v["generation"].as_str(), v["modelled"].as_bool()),
        (Some("trn3"), Some(false))
    );

    let d = nrt_emu_on(&["disasm"], &path).success("disasm");
    assert!(d.stdout.starts_with("; NEFF "), "{}", d.stdout);
    assert!(d
        .stdout
        .lines()
        .next()
        .unwrap()
        .ends_with("target mariana (trn3)"));
    assert!(d.stdout.contains("MATMUL") && !d.stdout.contains(".raw"));

    let r = nrt_emu_on(&["run"], &path);
    assert!(!r.ok, "run of a trn3 NEFF succeeded:\n{}", r.stdout);
    assert!(
        r.stderr.contains("mariana") && r.stderr.contains("trn3"),
        "{}",
        r.stderr
    );

    // The runtime refuses it too, naming the generation, on either modelled target.
    for target in [nrt_emu::hal::Target::Trn1, nrt_emu::hal::Target::Trn2] {
        let sim = nrt_emu::sim::Sim::new(nrt_emu::sim::SimConfig::new(target));
        let rt =
            nrt_emu::runtime::Runtime::new(std::sync::Arc::new(sim), Default::default()).unwrap();
        let e = rt.load(&trn3, -1).unwrap_err();
        assert_eq!(e.status, nrt_emu::runtime::NrtStatus::Invalid, "{e}");
        assert!(e.message.contains("trn3"), "{target}: {e}");
    }
    std::fs::remove_dir_all(dir).unwrap();
}
