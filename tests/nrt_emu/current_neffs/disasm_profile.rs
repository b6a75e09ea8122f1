//! The disassembly of every record of the four profiled attention programs, held against
//! AWS's profiler output of their device runs (`profiles/*.profile.json`): per executed
//! instruction its opcode name and its operands text. The profile's `pc` is the record index
//! plus a per-engine offset (the runtime's own instructions run first); the offset is found by
//! matching opcode names, not assumed. Device addresses of vars (a load's, not the NEFF's) are
//! learned from the first DMA that names each var; every other DMA of that var must then agree.

use std::collections::BTreeMap;

use nrt_emu::hal::isa::neuron::{DmaAddrKind, Names, NeuronInstr};
use nrt_emu::hal::isa::records;
use nrt_emu::hal::{EngineKind, Target};
use nrt_emu::runtime::kbin::build::{build_model, BuildOptions};
use nrt_emu::runtime::kbin::Kbin;
use nrt_emu::runtime::neff::{Neff, ParseOptions};
use serde_json::Value;

/// The engine of a profile `subgroup`.
fn engine(subgroup: &str) -> Option<EngineKind> {
    Some(match subgroup {
        "Tensor" | "TensorMatrix" => EngineKind::Pe,
        "Scalar" => EngineKind::Act,
        "Vector" => EngineKind::Dve,
        "GpSimd" => EngineKind::Pool,
        "Sync" => EngineKind::Sp,
        _ => return None,
    })
}

/// `sg00` of a NEFF, built for trn2.
pub fn sg00(bytes: &[u8]) -> Kbin {
    let neff = Neff::parse(bytes, &ParseOptions::default()).unwrap();
    let h = &neff.header;
    let model = build_model(
        &neff,
        (h.neff_version_major, h.neff_version_minor),
        h.lnc_size,
        &BuildOptions {
            target: Target::Trn2,
            available_cores: 2,
            allow_legacy_neff: false,
            any_generation: false,
        },
    )
    .unwrap();
    model.subgraphs.into_iter().next().unwrap()
}

/// The hex value after `key=` in `text`.
fn hex_after(text: &str, key: &str) -> Option<u64> {
    let at = text.find(key)? + key.len();
    let s = &text[at..];
    let end = s.find(' ').unwrap_or(s.len());
    u64::from_str_radix(s[..end].trim_start_matches("0x"), 16).ok()
}

/// One profiled program's comparison: records compared, and the differences.
pub struct Outcome {
    pub compared: usize,
    pub opcode_diffs: Vec<String>,
    pub operand_diffs: Vec<String>,
    pub offsets: BTreeMap<EngineKind, i64>,
}

pub fn compare(neff: &[u8], profile: &Value) -> Outcome {
    let kbin = sg00(neff);
    let mut names: Names = kbin.names();
    // Per engine: the decoded records, and the profile's instructions of sg00.
    let mut decoded: BTreeMap<EngineKind, Vec<NeuronInstr>> = BTreeMap::new();
    for p in &kbin.engines {
        let recs = p
            .records
            .iter()
            .map(|r| NeuronInstr::decode(r).unwrap_or_else(|e| panic!("{}: {e}", p.bin_member)))
            .collect();
        decoded.insert(p.engine, recs);
    }
    let mut prof: BTreeMap<EngineKind, Vec<(i64, String, String)>> = BTreeMap::new();
    for i in profile["instruction"].as_array().unwrap() {
        if i["subgraph"] != "sg00" {
            continue;
        }
        let Some(e) = engine(i["subgroup"].as_str().unwrap()) else {
            continue;
        };
        prof.entry(e).or_default().push((
            i["pc"].as_i64().unwrap(),
            i["opcode"].as_str().unwrap().to_string(),
            i["operands"].as_str().unwrap().to_string(),
        ));
    }
    // The per-engine pc offset: the one under which the most opcode names agree.
    let mut offsets = BTreeMap::new();
    for (e, recs) in &decoded {
        let entries = prof.get(e).map(Vec::as_slice).unwrap_or_default();
        let best = (0..200)
            .max_by_key(|&off| {
                entries
                    .iter()
                    .filter(|(pc, op, _)| {
                        usize::try_from(pc - off)
                            .ok()
                            .and_then(|i| recs.get(i))
                            .is_some_and(|n| n.opcode().name() == op)
                    })
                    .count()
            })
            .unwrap();
        offsets.insert(*e, best);
    }
    // Var device addresses, learned from the first DMA naming each var.
    for (e, recs) in &decoded {
        for (pc, _, text) in prof.get(e).map(Vec::as_slice).unwrap_or_default() {
            let Some(n) = usize::try_from(pc - offsets[e])
                .ok()
                .and_then(|i| recs.get(i))
            else {
                continue;
            };
            if let NeuronInstr::DmaDirect2d { src, dst, .. } = n {
                for (side, a) in [("src", src), ("dst", dst)] {
                    if a.kind != DmaAddrKind::Immediate
                        || names.var(a.index).is_some_and(|v| v.1.is_some())
                    {
                        continue;
                    }
                    if let Some(addr) = hex_after(text, &format!("{side}_addr_imm=")) {
                        names.place_var(a.index, addr - u64::from(a.offset));
                    }
                }
            }
        }
    }
    let mut out = Outcome {
        compared: 0,
        opcode_diffs: Vec::new(),
        operand_diffs: Vec::new(),
        offsets: offsets.clone(),
    };
    for (e, recs) in &decoded {
        let entries = prof.get(e).map(Vec::as_slice).unwrap_or_default();
        let mut seen = vec![false; recs.len()];
        for (pc, op, text) in entries {
            let Some(i) = usize::try_from(pc - offsets[e])
                .ok()
                .filter(|&i| i < recs.len())
            else {
                continue; // the runtime's own instruction
            };
            seen[i] = true;
            out.compared += 1;
            let n = &recs[i];
            if n.opcode().name() != op {
                out.opcode_diffs.push(format!(
                    "{e} record {i}: profile {op}, ours {}",
                    n.opcode().name()
                ));
                continue;
            }
            let ours = n.render(&names);
            if ours != *text {
                out.operand_diffs.push(format!(
                    "{e} record {i} {op}:\n  profile {text:?}\n  ours    {ours:?}"
                ));
            }
        }
        // Every record of the program ran (no record is missing from the profile).
        for (i, s) in seen.iter().enumerate() {
            if !s {
                out.opcode_diffs.push(format!(
                    "{e} record {i} ({}) has no profile entry",
                    recs[i].opcode().name()
                ));
            }
        }
    }
    let _ = records;
    out
}
