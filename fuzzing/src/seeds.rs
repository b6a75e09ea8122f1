//! Seed inputs of every target, generated rather than committed: the model zoo
//! (`fixtures/neffs/`) and the malformed corpus (`fixtures/malformed/`) for the NEFF targets,
//! the engine instruction streams (`*.bin` members) of the zoo and one record of every Neuron
//! opcode ([`nrt_hal::isa::neuron::samples`]) for `isa_decode`, and the
//! hand-made programs of [`crate::dma::seeds`] and [`crate::kabi::seeds`].
//!
//! `nrt-fuzz-seeds <dir>` writes them to `<dir>/<target>/` for libFuzzer; `tests/fuzz/replay.rs` runs
//! them through the targets directly.

use std::path::PathBuf;

use nrt_runtime::neff::{Neff, ParseOptions};

fn neff_files(sub: &str) -> Vec<(String, Vec<u8>)> {
    let dir = crate::fixtures_dir().join(sub);
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "neff"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|p| {
            let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            let name = p.file_name().expect("file name").to_string_lossy();
            (format!("{sub}-{name}"), bytes)
        })
        .collect()
}

/// The zoo and the malformed corpus, as files and (the zoo) as members-mode inputs
/// ([`crate::neff::neff_from_members`]).
pub fn neffs() -> Vec<(String, Vec<u8>)> {
    let zoo = neff_files("neffs");
    let mut v = zoo.clone();
    v.extend(neff_files("malformed"));
    for (name, bytes) in &zoo {
        let neff = Neff::parse(bytes, &ParseOptions::default())
            .unwrap_or_else(|e| panic!("zoo NEFF {name} parses: {e}"));
        v.push((format!("members-{name}"), crate::neff::members_input(&neff)));
    }
    v
}

/// Every `.bin` member (engine instruction stream) of the zoo, deduplicated.
pub fn instruction_streams() -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    for (name, bytes) in neff_files("neffs") {
        let neff = Neff::parse(&bytes, &ParseOptions::default())
            .unwrap_or_else(|e| panic!("zoo NEFF {name} parses: {e}"));
        for (member, data) in neff.members() {
            if member.ends_with(".bin") && !out.iter().any(|(_, d)| d == data) {
                let m = member.replace('/', "_");
                out.push((format!("{name}-{m}"), data.to_vec()));
            }
        }
    }
    // One record of every Neuron opcode, in the forms the current compiler writes (its DGE
    // instructions included), so mutations start inside each opcode's field checks.
    let samples: Vec<u8> = nrt_hal::isa::neuron::samples()
        .iter()
        .flat_map(|s| s.1 .0)
        .collect();
    out.push(("neuron-samples".to_string(), samples));
    out
}

/// The seeds of target `name` (empty for an unknown name).
pub fn seeds(name: &str) -> Vec<(String, Vec<u8>)> {
    match name {
        "neff_parse" | "neff_load" => neffs(),
        "isa_decode" => instruction_streams(),
        "sim_dma" => crate::dma::seeds(),
        "kabi" => crate::kabi::seeds(),
        "capi" => crate::capi::seeds(),
        _ => Vec::new(),
    }
}
