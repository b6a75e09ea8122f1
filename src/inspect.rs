//! `nrt-emu inspect`: what a NEFF contains — header, target, subgraphs, members, IO tensors,
//! vars, queue sets, DMA blocks and instructions per engine — as text or one JSON object.
//! It runs load stages S1–S3 only (no device).

use nrt_emu::hal::isa::neuron::{decode_any, Decoded, Encoding, NeuronInstr};
use nrt_emu::hal::Target;
use nrt_emu::runtime::kbin::build::{build_model, BuildOptions};
use nrt_emu::runtime::kbin::{KelfModel, VarKind};
use nrt_emu::runtime::manifest::top_manifests;
use nrt_emu::runtime::neff::{Neff, ParseOptions};
use nrt_emu::runtime::Result;
use serde_json::{json, Value};

/// The KBIN build of `neff` against `target`'s tables, for reading only: legacy NEFFs and
/// generations this platform does not model are accepted, every core of the target available.
fn read_model(neff: &Neff, target: Target) -> Result<KelfModel> {
    let h = &neff.header;
    build_model(
        neff,
        (h.neff_version_major, h.neff_version_minor),
        h.lnc_size,
        &BuildOptions {
            target,
            available_cores: target.spec().nc_count,
            allow_legacy_neff: true,
            any_generation: true,
        },
    )
}

/// Everything `inspect` reports, as JSON.
pub fn inspect(bytes: &[u8], target_override: Option<Target>) -> Result<Value> {
    let verified = Neff::parse(
        bytes,
        &ParseOptions {
            verify_hash: true,
            ..ParseOptions::default()
        },
    );
    let (neff, hash_ok) = match verified {
        Ok(n) => (n, true),
        Err(e) if e.message.contains("hash") => {
            (Neff::parse(bytes, &ParseOptions::default())?, false)
        }
        Err(e) => return Err(e),
    };
    let h = &neff.header;
    let top = top_manifests(&neff)?;
    let (io, kelf) = (&top.io, &top.kelf);
    // `*` and names this build does not know are described as trn1; a known generation this
    // platform does not model (trn3 `mariana`) is read against trn2's tables.
    let generation = nrt_emu::hal::target::generation_of(&kelf.target);
    let modelled = Target::from_neff_target(&kelf.target).is_some() || kelf.target == "*";
    let target = target_override
        .or_else(|| top.target().ok().flatten())
        .unwrap_or(if generation.is_some() {
            Target::Trn2
        } else {
            Target::Trn1
        });
    let model = read_model(&neff, target)?;
    let algo = match h.pkg_version {
        1 => "sha256",
        2 => "md5",
        _ => "unknown",
    };
    Ok(json!({
        "header": {
            "pkg_version": h.pkg_version,
            "neff_version": format!("{}.{}", h.neff_version_major, h.neff_version_minor),
            "data_size": h.data_size,
            "num_tpb": h.num_tpb,
            "requested_tpb_count": h.requested_tpb_count,
            "uuid": h.uuid_string(),
            "name": h.name,
            "feature_bits": format!("{:#x}", h.feature_bits),
            "lnc_size": h.lnc_size,
            "hash_algorithm": algo,
            "hash": h.hash_hex(),
            "hash_verifies": hash_ok,
        },
        "target": kelf.target,
        "generation": generation,
        "modelled": modelled,
        "kelf": {"file": io.kelf_file, "version": kelf.version},
        "members": neff.members().map(|(n, b)| json!({"name": n, "bytes": b.len()})).collect::<Vec<_>>(),
        "inputs": io_json(&model, true),
        "outputs": io_json(&model, false),
        "subgraphs": model.subgraphs.iter().map(subgraph_json).collect::<Vec<_>>(),
    }))
}

fn io_json(model: &KelfModel, inputs: bool) -> Vec<Value> {
    let list = if inputs {
        &model.inputs
    } else {
        &model.outputs
    };
    list.iter()
        .map(|t| json!({"name": t.name, "dtype": t.dtype.neff_name(), "shape": t.shape, "bytes": t.size}))
        .collect()
}

fn subgraph_json(k: &nrt_emu::runtime::kbin::Kbin) -> Value {
    let vars: Vec<Value> = k
        .vars
        .values()
        .map(|v| {
            let kind = match &v.kind {
                VarKind::StateBuffer => "state-buffer".to_string(),
                VarKind::Input => "input".into(),
                VarKind::Output => "output".into(),
                VarKind::File { file_name, .. } => format!("file ({file_name})"),
                VarKind::TmpBuf => "tmp-buf".into(),
                VarKind::Virtual { backing_offset } => format!("virtual (+{backing_offset:#x})"),
                VarKind::Pointer { referenced_var_id } => {
                    format!("pointer (-> {referenced_var_id})")
                }
                VarKind::DgeTable { list } => format!("dge-table {list:?}"),
            };
            json!({"var_id": v.var_id, "name": v.name, "type": kind, "size": v.size})
        })
        .collect();
    let queues: Vec<Value> = k
        .queue_sets
        .values()
        .map(|q| {
            let blocks: usize = k
                .engines
                .iter()
                .map(|e| e.dma_blocks.iter().filter(|b| b.queue == q.name).count())
                .sum();
            let descs: usize = k
                .engines
                .iter()
                .flat_map(|e| e.dma_blocks.iter().filter(|b| b.queue == q.name))
                .map(|b| b.descs.len())
                .sum();
            json!({"name": q.name, "type": format!("{:?}", q.kind).to_lowercase(), "num_queues": q.num_queues,
                   "owner": q.owner.map(|o| o.def_key()), "dma_blocks": blocks, "descs": descs})
        })
        .collect();
    let engines: Vec<Value> = k
        .engines
        .iter()
        .map(|e| {
            // Records by name, in either encoding; a record neither decodes is not executable.
            let mut by_name: std::collections::BTreeMap<&str, usize> = Default::default();
            let mut unknown = 0;
            for r in &e.records {
                let decoded = match k.encoding {
                    Encoding::Neuron => NeuronInstr::decode(r).map(Decoded::Neuron).map_err(|_| ()),
                    Encoding::Platform => decode_any(r).map_err(|_| ()),
                };
                let name = match decoded {
                    Ok(Decoded::Neuron(n)) => n.opcode().name(),
                    Ok(Decoded::Platform(i)) => i.opcode().mnemonic(),
                    Err(()) => {
                        unknown += 1;
                        continue;
                    }
                };
                *by_name.entry(name).or_default() += 1;
            }
            json!({"engine": e.engine.name(), "bin": e.bin_member, "instructions": e.records.len(),
                   "unknown_opcodes": unknown, "dma_blocks": e.dma_blocks.len(), "by_name": by_name})
        })
        .collect();
    json!({"name": k.name, "definition": k.def_member, "encoding": format!("{:?}", k.encoding).to_lowercase(),
           "vars": vars, "queue_sets": queues,
           "engines": engines, "features": k.features, "sb_reservations": k.sb_reservations.len()})
}

/// The text form of [`inspect`]'s JSON.
pub fn render(v: &Value) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let h = &v["header"];
    let _ = writeln!(
        o,
        "NEFF {} ({})",
        h["name"].as_str().unwrap_or(""),
        h["uuid"].as_str().unwrap_or("")
    );
    let _ = writeln!(
        o,
        "  pkg_version {}  neff_version {}  num_tpb {}  lnc_size {}  feature_bits {}",
        h["pkg_version"],
        h["neff_version"].as_str().unwrap_or(""),
        h["num_tpb"],
        h["lnc_size"],
        h["feature_bits"].as_str().unwrap_or("")
    );
    let _ = writeln!(
        o,
        "  hash {} {} ({})",
        h["hash_algorithm"].as_str().unwrap_or(""),
        h["hash"].as_str().unwrap_or(""),
        if h["hash_verifies"] == true {
            "verifies"
        } else {
            "DOES NOT VERIFY"
        }
    );
    let generation = match (v["generation"].as_str(), v["modelled"].as_bool()) {
        (Some(g), Some(false)) => format!(" ({g}: not modelled, read only)"),
        (Some(g), _) => format!(" ({g})"),
        _ => String::new(),
    };
    let _ = writeln!(
        o,
        "target {}{generation}  kelf {} v{}",
        v["target"].as_str().unwrap_or(""),
        v["kelf"]["file"].as_str().unwrap_or(""),
        v["kelf"]["version"].as_str().unwrap_or("")
    );
    for (label, key) in [("input", "inputs"), ("output", "outputs")] {
        for t in v[key].as_array().into_iter().flatten() {
            let _ = writeln!(
                o,
                "{label:<6} {} {} {} ({} bytes)",
                t["name"].as_str().unwrap_or(""),
                t["dtype"].as_str().unwrap_or(""),
                t["shape"],
                t["bytes"]
            );
        }
    }
    for sg in v["subgraphs"].as_array().into_iter().flatten() {
        let _ = writeln!(
            o,
            "subgraph {} ({}, {} encoding)",
            sg["name"].as_str().unwrap_or(""),
            sg["definition"].as_str().unwrap_or(""),
            sg["encoding"].as_str().unwrap_or("")
        );
        for var in sg["vars"].as_array().into_iter().flatten() {
            let _ = writeln!(
                o,
                "  var {:>3} {:<24} {:<28} {} bytes",
                var["var_id"],
                var["name"].as_str().unwrap_or(""),
                var["type"].as_str().unwrap_or(""),
                var["size"]
            );
        }
        for q in sg["queue_sets"].as_array().into_iter().flatten() {
            let _ = writeln!(
                o,
                "  queue set {} type {} x{} owner {} : {} DMA blocks, {} descs",
                q["name"].as_str().unwrap_or(""),
                q["type"].as_str().unwrap_or(""),
                q["num_queues"],
                q["owner"].as_str().unwrap_or("-"),
                q["dma_blocks"],
                q["descs"]
            );
        }
        for e in sg["engines"].as_array().into_iter().flatten() {
            let names: Vec<String> = e["by_name"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, v)| format!("{k} {v}"))
                .collect();
            let _ = writeln!(
                o,
                "  engine {:<4} {} instructions ({} not executable here), {} DMA blocks: {}",
                e["engine"].as_str().unwrap_or(""),
                e["instructions"],
                e["unknown_opcodes"],
                e["dma_blocks"],
                names.join(", ")
            );
        }
    }
    let n = v["members"].as_array().map_or(0, Vec::len);
    let _ = writeln!(o, "members ({n}):");
    for m in v["members"].as_array().into_iter().flatten() {
        let _ = writeln!(
            o,
            "  {:>10}  {}",
            m["bytes"],
            m["name"].as_str().unwrap_or("")
        );
    }
    o
}

/// `nrt-emu disasm` of a whole NEFF: every engine stream of every subgraph, Neuron-encoded
/// streams in the profiler's terms with the subgraph's semaphore and var names
/// (docs/neuron-isa.md §14), NEFFs of a generation this platform does not model included.
pub fn disasm_neff(bytes: &[u8]) -> Result<String> {
    use std::fmt::Write;
    let neff = Neff::parse(bytes, &ParseOptions::default())?;
    let h = &neff.header;
    let top = top_manifests(&neff)?;
    let kelf_target = top.kelf.target.clone();
    let target = top.target().ok().flatten().unwrap_or(Target::Trn2);
    let model = read_model(&neff, target)?;
    let mut o = String::new();
    let gen = nrt_emu::hal::target::generation_of(&kelf_target).unwrap_or("?");
    let _ = writeln!(o, "; NEFF {} target {kelf_target} ({gen})", h.name);
    for k in &model.subgraphs {
        let names = k.names();
        for p in &k.engines {
            let bytes: Vec<u8> = p.records.iter().flat_map(|r| r.0).collect();
            let _ = writeln!(
                o,
                "; {} {} ({} records)",
                k.name,
                p.bin_member,
                p.records.len()
            );
            o.push_str(&match k.encoding {
                Encoding::Neuron => nrt_emu::hal::isa::disassemble_neuron(&bytes, &names),
                Encoding::Platform => nrt_emu::hal::isa::disassemble(&bytes),
            });
        }
    }
    Ok(o)
}
