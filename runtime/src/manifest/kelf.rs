//! `kelf-N.json` (docs/neff.md §6): the subgraph list and the generation the NEFF targets.

use super::json::{parse_root, Obj};
use crate::error::Result;

/// One `graphs[]` entry of `kelf-N.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphRef {
    /// `definition`: the subgraph's `def.json` member (`sg00/def.json`).
    pub definition: String,
    /// `name` (`sg00`).
    pub name: String,
}

/// `kelf-N.json`: the subgraph list (docs/neff.md §6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KelfJson {
    /// `graphs`.
    pub graphs: Vec<GraphRef>,
    /// `version` (`"0.5"`).
    pub version: String,
    /// `target`: `sunda`, `cayman`, `*` …
    pub target: String,
}

/// Parses `kelf-N.json`.
pub fn parse_kelf_json(file: &str, bytes: &[u8]) -> Result<KelfJson> {
    let root = parse_root(file, bytes)?;
    let o = Obj::root(file, &root);
    let graphs = o.req("graphs", |a| {
        a.each(|g| {
            let g = g.obj()?;
            Ok(GraphRef {
                definition: g.req_str("definition")?,
                name: g.req_str("name")?,
            })
        })
    })?;
    Ok(KelfJson {
        graphs,
        version: o.req_str("version")?,
        target: o.req_str("target")?,
    })
}
