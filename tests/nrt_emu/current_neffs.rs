//! The development set of current-compiler NEFFs (`../shared/current-neffs/`, or the folder
//! named by `NRT_EMU_CURRENT_NEFFS`): compiler 2.23 output with DGE tables, engine-issued DMAs,
//! the new instructions, bf16 and activation functions (docs/neuron-isa.md §13). Without the
//! folder every test prints a skip line and passes.

#[path = "current_neffs/disasm_profile.rs"]
mod disasm_profile;

use std::path::PathBuf;

/// The four attention kernels AWS's profiler recorded.
const ATTENTION: [&str; 4] = [
    "allenkchau+trainium-kernel-fusion--fused_bf16_s512",
    "allenkchau+trainium-kernel-fusion--baseline_bf16_s512",
    "allenkchau+trainium-kernel-fusion--fused_fp32_s512",
    "allenkchau+trainium-kernel-fusion--baseline_fp32_s512",
];

fn folder() -> Option<PathBuf> {
    let dir = std::env::var_os("NRT_EMU_CURRENT_NEFFS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/current-neffs")
        });
    dir.is_dir().then_some(dir)
}

/// A file of the folder, or `None` after printing a skip line.
fn read(rel: &str) -> Option<Vec<u8>> {
    let Some(dir) = folder() else {
        println!("SKIP current-neffs: folder not found (set NRT_EMU_CURRENT_NEFFS or put it at ../shared/current-neffs)");
        return None;
    };
    let path = dir.join(rel);
    match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(e) => {
            println!("SKIP {rel}: {}: {e}", path.display());
            None
        }
    }
}

#[test]
fn disassembly_of_every_attention_record_matches_the_device_profile() {
    for name in ATTENTION {
        let (Some(neff), Some(prof)) = (
            read(&format!("{name}.neff")),
            read(&format!("profiles/{name}.profile.json")),
        ) else {
            continue;
        };
        let profile: serde_json::Value = serde_json::from_slice(&prof).unwrap();
        let o = disasm_profile::compare(&neff, &profile);
        println!(
            "{name}: {} records compared, pc offsets {:?}, {} opcode and {} operand differences",
            o.compared,
            o.offsets,
            o.opcode_diffs.len(),
            o.operand_diffs.len()
        );
        for d in o.opcode_diffs.iter().chain(&o.operand_diffs) {
            println!("  {d}");
        }
        assert!(o.compared > 0);
        assert!(
            o.opcode_diffs.is_empty() && o.operand_diffs.is_empty(),
            "{name}: see the differences above"
        );
    }
}
