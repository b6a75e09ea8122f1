//! A NEFF's top-level manifests found together: `neff.json` (or `kelp.json`), the IO signature
//! of its `__kelf` node and the `kelf-N.json` that node names (docs/neff.md §5, §6).

use nrt_hal::Target;

use super::kelf::{parse_kelf_json, KelfJson};
use super::member::{resolve_member, MemberSource};
use super::neff_json::{parse_neff_json, NeffIo, NeffJson};
use crate::error::{Error, Result};

/// A NEFF's top-level manifests: `neff.json` (or its legacy name `kelp.json`), the IO signature
/// of its `__kelf` node, and the `kelf-N.json` that node names. The one lookup the loader and
/// every tool (`inspect`, `run`, the conformance harness) make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopManifests {
    /// The member holding the graph (`neff.json` or `kelp.json`).
    pub neff_file: &'static str,
    /// Its parsed contents.
    pub neff: NeffJson,
    /// The `__kelf` node's IO signature.
    pub io: NeffIo,
    /// The member path of the kelf manifest.
    pub kelf_path: String,
    /// Its parsed contents.
    pub kelf: KelfJson,
}

/// Finds and parses the top-level manifests of the NEFF whose members `src` holds.
pub fn top_manifests(src: &impl MemberSource) -> Result<TopManifests> {
    let (neff_file, neff_bytes) = ["neff.json", "kelp.json"]
        .into_iter()
        .find_map(|f| src.member(f).map(|b| (f, b)))
        .ok_or_else(|| Error::invalid("neff.json is missing"))?;
    let neff = parse_neff_json(neff_file, neff_bytes)?;
    let io = neff.io(neff_file)?;
    let (kelf_path, kelf_bytes) = resolve_member(src, "", &io.kelf_file).ok_or_else(|| {
        Error::invalid(format!(
            "{neff_file}: nodes[{}].attrs.kelf names {:?}, which is not in the NEFF",
            io.kelf_node, io.kelf_file
        ))
    })?;
    let kelf = parse_kelf_json(&kelf_path, kelf_bytes)?;
    Ok(TopManifests {
        neff_file,
        neff,
        io,
        kelf_path,
        kelf,
    })
}

impl TopManifests {
    /// The generation the kelf manifest names (`target`: `sunda` trn1, `cayman` trn2), `None`
    /// for `*` (any generation); a name this build does not know is an error naming it.
    pub fn target(&self) -> Result<Option<Target>> {
        let t = &self.kelf.target;
        if t == "*" {
            return Ok(None);
        }
        Target::from_neff_target(t).map(Some).ok_or_else(|| {
            Error::invalid(match nrt_hal::target::generation_of(t) {
                Some(g) => format!(
                    "{} names target {t:?}: the {g} generation, which nrt-emu does not model \
                     (it runs trn1 and trn2 NEFFs; inspect and disasm still read this one)",
                    self.kelf_path
                ),
                None => format!(
                    "{} names target {t:?}, which this build does not simulate",
                    self.kelf_path
                ),
            })
        })
    }
}
