//! `def.json` (docs/neff.md §7): one subgraph's vars, DMA queue sets, engines and runtime
//! reservations.

use nrt_hal::EngineKind;
use serde_json::Value;

use super::json::{parse_root, string_list, with_path, Obj};
use crate::error::Result;
use crate::kbin::{QueueSetKind, SbReservation};

crate::kbin::spelled_enum! {
    /// def.json `var.*.type` (docs/neff.md §7.2).
    pub enum VarType {
        StateBuffer = "state-buffer", Input = "input", Output = "output", File = "file",
        TmpBuf = "tmp-buf", Virtual = "virtual", Pointer = "pointer", DgeTable = "dge-table",
    }
}

/// One def.json `var` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct VarDef {
    /// Its key in `var`.
    pub name: String,
    /// `type`.
    pub var_type: VarType,
    /// `var_id`.
    pub var_id: u32,
    /// `size` (required for every type but `state-buffer` and `dge-table`).
    pub size: Option<u64>,
    /// `alignment` (default 0).
    pub alignment: u64,
    /// `fabric_path` (`main` when absent).
    pub fabric_path: Option<String>,
    /// `file_name` (required for `file`), as written (relative to the def.json directory).
    pub file_name: Option<String>,
    /// `backing_variable_off` (required for `virtual`).
    pub backing_variable_off: Option<u64>,
    /// `referenced_var_id` (required for `pointer`).
    pub referenced_var_id: Option<u32>,
    /// `list` (required for `dge-table`): the var ids the table's entries name, in entry order.
    pub list: Option<Vec<u32>>,
}

/// One def.json `dma_queue` entry (a queue set).
#[derive(Debug, Clone, PartialEq)]
pub struct QueueDef {
    /// Its key in `dma_queue`.
    pub name: String,
    /// `type`.
    pub kind: QueueSetKind,
    /// `num_queues` (default 1).
    pub num_queues: u64,
    /// `owner` (engine key), as written.
    pub owner: Option<String>,
    /// `semaphore_set`.
    pub semaphore_set: Vec<u32>,
    /// `semaphore`.
    pub semaphore: Option<u32>,
    /// `fabric_path`.
    pub fabric_path: Option<String>,
    /// `queue_instances`, opaque.
    pub queue_instances: Vec<Value>,
    /// `dynamic_dma` (software-generated queues): the SBUF scratch its descriptors are written
    /// into, `(SB_scratch_partition_offset, SB_scratch_partition_size)`.
    pub dynamic_dma: Option<(u32, u32)>,
}

/// One engine named by def.json: its JSON and binary members, already joined to the def.json
/// directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineRef {
    /// The engine.
    pub engine: EngineKind,
    /// `<key>`: the engine JSON, as written.
    pub json: Option<String>,
    /// `<key>_instr`: the instruction binary, as written.
    pub instr: Option<String>,
}

/// `def.json`: one subgraph's definition (docs/neff.md §7).
#[derive(Debug, Clone, PartialEq)]
pub struct DefJson {
    /// `var`, sorted by name.
    pub vars: Vec<VarDef>,
    /// `dma_queue`, sorted by name.
    pub dma_queues: Vec<QueueDef>,
    /// Engines named by `pe`/`act`/`pool`/`dve`/`sp` (or their `_instr` keys), in exec order
    /// PE, ACT, POOL, DVE, SP.
    pub engines: Vec<EngineRef>,
    /// `runtime_statebuffer_reservation` (None when absent).
    pub sb_reservations: Option<Vec<SbReservation>>,
    /// `neff_features`.
    pub neff_features: Vec<String>,
    /// `cc_streams.num_streams` (0 when absent).
    pub cc_streams: u32,
    /// `runtime_event_count` (0 when absent).
    pub runtime_event_count: u32,
    /// `runtime_semaphore_count` (0 when absent).
    pub runtime_semaphore_count: u32,
}

/// Parses a `def.json`.
pub fn parse_def_json(file: &str, bytes: &[u8]) -> Result<DefJson> {
    let root = parse_root(file, bytes)?;
    let o = Obj::root(file, &root);

    let mut vars = Vec::new();
    for (name, at, path) in o.req_obj("var")?.entries() {
        vars.push(with_path(at, &path, |a| {
            let v = a.obj()?;
            let var_type = v.req("type", |a| {
                let s = a.str()?;
                VarType::from_name(s).ok_or_else(|| a.err(format_args!("unknown var type {s:?}")))
            })?;
            let size = match var_type {
                VarType::StateBuffer => v.opt_bytes("size")?,
                // A DGE table lists vars; it has no storage of its own.
                VarType::DgeTable => None,
                _ => Some(v.req("size", |a| a.bytes())?),
            };
            let list = v.opt("list", |a| a.each(|e| e.u32()))?;
            if var_type == VarType::DgeTable && list.is_none() {
                return Err(v.err("list", "missing"));
            }
            let file_name = v.opt_str("file_name")?;
            if var_type == VarType::File && file_name.is_none() {
                return Err(v.err("file_name", "missing"));
            }
            let backing_variable_off = v.opt_bytes("backing_variable_off")?;
            if var_type == VarType::Virtual && backing_variable_off.is_none() {
                return Err(v.err("backing_variable_off", "missing"));
            }
            let referenced_var_id = v.opt_u32("referenced_var_id")?;
            if var_type == VarType::Pointer && referenced_var_id.is_none() {
                return Err(v.err("referenced_var_id", "missing"));
            }
            // `ops` is a list in every real file; check its type, ignore its contents.
            v.opt("ops", |a| a.arr().map(|_| ()))?;
            Ok(VarDef {
                name: name.clone(),
                var_type,
                var_id: v.req("var_id", |a| a.u32())?,
                size,
                alignment: v.opt_bytes("alignment")?.unwrap_or(0),
                fabric_path: v.opt_str("fabric_path")?,
                file_name,
                backing_variable_off,
                referenced_var_id,
                list,
            })
        })?);
    }

    let mut dma_queues = Vec::new();
    if let Some(q) = o.opt_obj("dma_queue")? {
        for (name, at, path) in q.entries() {
            dma_queues.push(with_path(at, &path, |a| {
                let q = a.obj()?;
                Ok(QueueDef {
                    name: name.clone(),
                    kind: q.req("type", |a| {
                        let s = a.str()?;
                        QueueSetKind::from_name(s)
                            .ok_or_else(|| a.err(format_args!("unknown queue-set type {s:?}")))
                    })?,
                    num_queues: q.opt("num_queues", |a| a.u64())?.unwrap_or(1),
                    owner: q.opt_str("owner")?,
                    semaphore_set: q
                        .opt("semaphore_set", |a| a.each(|e| e.u32()))?
                        .unwrap_or_default(),
                    semaphore: q.opt_u32("semaphore")?,
                    fabric_path: q.opt_str("fabric_path")?,
                    queue_instances: q
                        .opt("queue_instances", |a| a.arr().map(<[Value]>::to_vec))?
                        .unwrap_or_default(),
                    dynamic_dma: q.opt("dynamic_dma", |a| {
                        let d = a.obj()?;
                        Ok((
                            d.req("SB_scratch_partition_offset", |a| a.u32())?,
                            d.req("SB_scratch_partition_size", |a| a.u32())?,
                        ))
                    })?,
                })
            })?);
        }
    }

    let mut engines = Vec::new();
    for e in EngineKind::ALL {
        let key = e.def_key();
        let json = o.opt_str(key)?;
        let instr = o.opt_str(&format!("{key}_instr"))?;
        if json.is_some() || instr.is_some() {
            engines.push(EngineRef {
                engine: e,
                json,
                instr,
            });
        }
    }

    let sb_reservations = o.opt("runtime_statebuffer_reservation", |a| {
        a.each(|r| {
            let r = r.obj()?;
            Ok(SbReservation {
                kind: r.req_str("type")?,
                base_partition: r.req("base_partition", |a| a.u32())?,
                partitions: r.req("partitions", |a| a.u32())?,
                offset: r.req("offset", |a| a.u32())?,
                size: r.req("size", |a| a.u32())?,
            })
        })
    })?;

    let cc_streams = match o.opt_obj("cc_streams")? {
        Some(c) => c.opt_u32("num_streams")?.unwrap_or(0),
        None => 0,
    };

    Ok(DefJson {
        vars,
        dma_queues,
        engines,
        sb_reservations,
        neff_features: o.opt("neff_features", string_list)?.unwrap_or_default(),
        cc_streams,
        runtime_event_count: o.opt_u32("runtime_event_count")?.unwrap_or(0),
        runtime_semaphore_count: o.opt_u32("runtime_semaphore_count")?.unwrap_or(0),
    })
}
