//! The engine JSON files (`PE.json`, `Activation.json`, …; docs/neff.md §8): each engine's DMA
//! blocks and their descriptors as written.

use nrt_hal::Dtype;

use super::json::{bytes_list, dtype_of, parse_root, At, Obj};
use crate::error::Result;
use crate::kbin::DmaOp;

/// The transpose parameters of a descriptor carrying `transpose_op` (docs/neff.md §8.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransposeDef {
    /// `transpose_op`: a 4-letter axis permutation such as `WZXY` (absent for `op: transpose`
    /// descriptors that give only a shape).
    pub op: Option<String>,
    /// `transpose_shape` (4 dims).
    pub shape: Vec<u64>,
    /// `transpose_element_size` in bytes.
    pub element_size: Option<u64>,
}

/// One `desc` of a DMA block, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct DescDef {
    /// `op` (default `copy`; `transpose` when only `transpose_op` is given).
    pub op: DmaOp,
    /// `from`: source var name (absent only for CCE descriptors using `from_arr`).
    pub from: Option<String>,
    /// `to`: destination var name.
    pub to: String,
    /// `from_off` (default 0).
    pub from_off: u64,
    /// `to_off` (default 0).
    pub to_off: u64,
    /// `from_sizes`, innermost first.
    pub from_sizes: Vec<u64>,
    /// `to_sizes`, innermost first.
    pub to_sizes: Vec<u64>,
    /// `from_steps` in bytes, innermost first.
    pub from_steps: Vec<i64>,
    /// `to_steps` in bytes, innermost first.
    pub to_steps: Vec<i64>,
    /// `from_dtype` (default `uint8`).
    pub from_dtype: Dtype,
    /// `to_dtype` (default `uint8`).
    pub to_dtype: Dtype,
    /// `num_tiling_dimensions` (occasionally absent).
    pub num_tiling_dimensions: Option<u32>,
    /// Transpose parameters, when `transpose_op` or `transpose_shape` is present.
    pub transpose: Option<TransposeDef>,
    /// `scale` (fma).
    pub scale: Option<f64>,
    /// `scale_dtype`.
    pub scale_dtype: Option<Dtype>,
    /// `constant` (min/max).
    pub constant: Option<f64>,
    /// `constant_dtype`.
    pub constant_dtype: Option<Dtype>,
    /// Whether the descriptor names its sources with `from_arr` (CCE), unsupported here.
    pub has_from_arr: bool,
}

/// One `dma[]` block of an engine JSON, as written.
#[derive(Debug, Clone, PartialEq)]
pub struct DmaBlockDef {
    /// `id`.
    pub id: u32,
    /// `instance_name` if given, else `queue`.
    pub queue: String,
    /// `semaphore`.
    pub semaphore: Option<u32>,
    /// `event`.
    pub event: Option<u32>,
    /// `#comment` (BIR instruction name).
    pub comment: Option<String>,
    /// `desc`.
    pub descs: Vec<DescDef>,
}

/// An engine JSON file (`PE.json`, `Activation.json`, …; docs/neff.md §8).
#[derive(Debug, Clone, PartialEq)]
pub struct EngineJson {
    /// `name`.
    pub name: Option<String>,
    /// `instr`: the binary, as written.
    pub instr: Option<String>,
    /// `dma`.
    pub dma: Vec<DmaBlockDef>,
    /// `act_info` (Activation.json): the catalogue of activation table sets.
    pub act_info: Option<String>,
    /// `activation_function_sets` (Activation.json): the sets this subgraph ships, in the
    /// order `ACT_TABLE_LOAD`'s `table_sel` counts them.
    pub activation_function_sets: Vec<String>,
}

/// One `act_func_sets[]` entry of `act_info.json`: a table set and its three files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActFuncSet {
    /// `name` (`exp_and_others`, `silu_and_others`, …).
    pub name: String,
    /// `profile_json`, `bkt_bin`, `ctrl_bin`: the set's files, relative to the subgraph.
    pub files: [String; 3],
}

/// Parses `act_info.json`: its `act_func_sets` (docs/neff.md §10).
pub fn parse_act_info(file: &str, bytes: &[u8]) -> Result<Vec<ActFuncSet>> {
    let root = parse_root(file, bytes)?;
    Obj::root(file, &root).req("act_func_sets", |a| {
        a.each(|s| {
            let s = s.obj()?;
            Ok(ActFuncSet {
                name: s.req_str("name")?,
                files: [
                    s.req_str("profile_json")?,
                    s.req_str("bkt_bin")?,
                    s.req_str("ctrl_bin")?,
                ],
            })
        })
    })
}

fn parse_desc(a: At<'_>) -> Result<DescDef> {
    let d = a.obj()?;
    let transpose_op = d.opt_str("transpose_op")?;
    let transpose_shape = d.opt("transpose_shape", bytes_list)?;
    let transpose_element_size = d.opt_bytes("transpose_element_size")?;
    let op = match d.opt("op", |a| {
        let s = a.str()?;
        DmaOp::from_name(s).ok_or_else(|| a.err(format_args!("unknown DMA op {s:?}")))
    })? {
        Some(op) => op,
        None if transpose_op.is_some() => DmaOp::Transpose,
        None => DmaOp::Copy,
    };
    let transpose = if transpose_op.is_some() || transpose_shape.is_some() {
        Some(TransposeDef {
            op: transpose_op,
            shape: transpose_shape.unwrap_or_default(),
            element_size: transpose_element_size,
        })
    } else {
        None
    };
    let steps = |key: &str| d.req(key, |a| a.each(|e| e.i64()));
    Ok(DescDef {
        op,
        from: d.opt_str("from")?,
        to: d.req_str("to")?,
        from_off: d.opt_bytes("from_off")?.unwrap_or(0),
        to_off: d.opt_bytes("to_off")?.unwrap_or(0),
        from_sizes: d.req("from_sizes", bytes_list)?,
        to_sizes: d.req("to_sizes", bytes_list)?,
        from_steps: steps("from_steps")?,
        to_steps: steps("to_steps")?,
        from_dtype: d.opt("from_dtype", dtype_of)?.unwrap_or(Dtype::U8),
        to_dtype: d.opt("to_dtype", dtype_of)?.unwrap_or(Dtype::U8),
        num_tiling_dimensions: d.opt_u32("num_tiling_dimensions")?,
        transpose,
        scale: d.opt("scale", |a| a.f64())?,
        scale_dtype: d.opt("scale_dtype", dtype_of)?,
        constant: d.opt("constant", |a| a.f64())?,
        constant_dtype: d.opt("constant_dtype", dtype_of)?,
        has_from_arr: d.map.contains_key("from_arr"),
    })
}

/// Parses an engine JSON file.
pub fn parse_engine_json(file: &str, bytes: &[u8]) -> Result<EngineJson> {
    let root = parse_root(file, bytes)?;
    let o = Obj::root(file, &root);
    let dma = o
        .opt("dma", |a| {
            a.each(|b| {
                let b = b.obj()?;
                let queue = match b.opt_str("instance_name")? {
                    Some(q) => q,
                    None => b.req_str("queue")?,
                };
                Ok(DmaBlockDef {
                    id: b.req("id", |a| a.u32())?,
                    queue,
                    semaphore: b.opt_u32("semaphore")?,
                    event: b.opt_u32("event")?,
                    comment: b.opt_str("#comment")?,
                    descs: b.req("desc", |a| a.each(parse_desc))?,
                })
            })
        })?
        .unwrap_or_default();
    Ok(EngineJson {
        name: o.opt_str("name")?,
        instr: o.opt_str("instr")?,
        dma,
        act_info: o.opt_str("act_info")?,
        activation_function_sets: o
            .opt("activation_function_sets", |a| {
                a.each(|s| s.str().map(str::to_string))
            })?
            .unwrap_or_default(),
    })
}
