//! The KBIN build (load stages S2/S3, docs/runtime.md §2.4–§2.5): walk the manifest chain `neff.json` →
//! `__kelf` node → `attrs.kelf` → `graphs[]` → `sgNN/def.json` → engine JSON + `.bin`, and lower
//! each subgraph into a validated [`Kbin`]. No HAL call is made; the result is everything
//! staging needs.
//!
//! # Gates, in order
//!
//! | check | status |
//! |---|---|
//! | NEFF major version > 2 | [`NrtStatus::UnsupportedNeffVersion`] ("NEFF version mismatch …") |
//! | `neff.json` missing/malformed, no `__kelf` node | [`NrtStatus::Invalid`] |
//! | kelf `target` unknown, or a generation other than the device's ("arch incompatible"; a `sunda` NEFF may run on trn2 with `allow_legacy_neff`) | [`NrtStatus::Invalid`] |
//! | `graphs[]` empty, neither 1 nor the LNC size | [`NrtStatus::Invalid`] |
//! | more graphs than available cores ("Insufficient number of NeuronCores") | [`NrtStatus::Invalid`] |
//! | `cayman` def.json without `runtime_statebuffer_reservation` (unless legacy NEFFs are allowed) | [`NrtStatus::Invalid`] |
//! | any per-subgraph check below | [`NrtStatus::Invalid`] |
//!
//! # Per-subgraph checks
//!
//! * **vars**: unique `var_id`s; at most one `state-buffer`; `input`/`output` vars named after a
//!   `neff.json` tensor of the same direction, with its byte size; `file` data loaded (`.npy`
//!   decoded to little-endian element bytes, anything else raw) and exactly `size` long;
//!   `pointer` vars reference an existing var.
//! * **queue sets**: `num_queues` in 1..=16; `owner`, if given, an engine key; a
//!   `dynamic_dma` SB scratch inside a partition.
//! * **state-buffer reservations**: inside 128 partitions and the physical partition size.
//! * **engines** (present ones, in exec order PE, ACT, POOL, DVE, SP): the `.bin` is a
//!   non-empty whole number of 64-byte records, every byte 1 is `0x10`, record 0 is the `0xB1`
//!   header. Compute opcodes are *not* decoded (real NEFFs carry opcodes this platform does
//!   not execute and must still load); only `0xC1` DMA triggers (must name a declared queue
//!   set and a block of the same engine's JSON) and `0xF0` `pseudo.write_var` (must name an
//!   HBM, non-IO var — `file`, `tmp-buf`, `virtual`, `pointer` — with `offset + 4 ≤ size`) are.
//! * **DMA blocks**: queue declared in def.json; `(queue, id)` unique within the engine;
//!   descriptors name existing vars; 1..=4 dims with as many steps as sizes, no zero size;
//!   `from` and `to` cover the same bytes (`copy`, `transpose`) or the same element count in
//!   their dtypes (`cast`, `fma`, `add`, `min`, `max`); every access pattern stays inside its
//!   var — for HBM vars every byte touched is in `[0, size)`, for the state buffer every byte
//!   is inside 128 partitions × 256 KiB (offset `o` is partition `o / 262144`, byte
//!   `o % 262144`) and below the device's physical partition size. Negative steps are allowed
//!   when the pattern stays inside.
//!
//! Every number is bounded by [`MAX_BYTES`] and all arithmetic is checked, so no input can make
//! the build overflow or panic.

use std::collections::{BTreeMap, BTreeSet};

use nrt_hal::isa::neuron::Encoding;
use nrt_hal::isa::{Instruction, Record, LENGTH_BYTE, RECORD_SIZE};
use nrt_hal::{EngineKind, Target};

use crate::error::{Error, Result};
use crate::kbin::{
    stream_encoding, DmaBlock, DmaDesc, DmaOp, DmaParams, DmaSide, DmaTranspose, EngineProgram,
    IoTensor, Kbin, KelfModel, KelfTarget, QueueSet, SbReservation, SharedBytes, Var, VarKind,
};
use crate::manifest::{
    self, member_dir, resolve_member, DefJson, DescDef, DmaBlockDef, IoDecl, MemberSource, VarDef,
    VarType, MAX_BYTES,
};
use crate::status::NrtStatus;

/// Highest NEFF major version this runtime loads.
pub const MAX_NEFF_MAJOR: u64 = 2;

/// Most hardware queues a queue set may ask for.
pub const MAX_QUEUES_PER_SET: u64 = 16;

/// Opcode of the stream header record.
const OP_HEADER: u8 = 0xB1;
/// Opcode of the pseudo DMA trigger.
const OP_DMA_TRIGGER: u8 = 0xC1;
/// Opcode of `pseudo.write_var`.
const OP_WRITE_VAR: u8 = 0xF0;

/// Budget of outer access-pattern points the exact state-buffer check enumerates when the
/// constant-time check cannot decide.
const SB_ENUMERATION_LIMIT: u64 = 1 << 20;

/// What the build is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BuildOptions {
    /// The device generation the model will run on.
    pub target: Target,
    /// Physical NeuronCores available to the model (its logical core's size).
    pub available_cores: u32,
    /// `NEURON_RT_ALLOW_LEGACY_NEFF`: a `sunda` (trn1) NEFF may load on trn2, and a `cayman`
    /// def.json may omit `runtime_statebuffer_reservation`.
    pub allow_legacy_neff: bool,
    /// Reading only (`inspect`, `disasm`): a NEFF of a known generation this platform does not
    /// model is built against `target`'s tables instead of refused.
    pub any_generation: bool,
}

/// Builds the model: parses every manifest of the NEFF in `src` and lowers each subgraph into
/// a validated [`Kbin`]. `neff_version` is the header's (major, minor), `lnc_size` its LNC size
/// (0 is taken as 1). See the [module docs](self) for every check.
pub fn build_model(
    src: &impl MemberSource,
    neff_version: (u64, u64),
    lnc_size: u32,
    opts: &BuildOptions,
) -> Result<KelfModel> {
    let (major, minor) = neff_version;
    if major > MAX_NEFF_MAJOR {
        return Err(Error::new(
            NrtStatus::UnsupportedNeffVersion,
            format!(
                "NEFF version mismatch supported: 0.x-{MAX_NEFF_MAJOR}.x received: {major}.{minor}"
            ),
        ));
    }

    // neff.json (legacy name kelp.json) → the __kelf node and the IO tensors → kelf-N.json.
    let manifest::TopManifests {
        neff_file,
        neff: _,
        io,
        kelf_path,
        kelf,
    } = manifest::top_manifests(src)?;

    let target = target_gate(&kelf_path, &kelf.target, opts)?;

    // Graph count.
    let graphs = kelf.graphs.len();
    let lnc = lnc_size.max(1) as usize;
    if graphs == 0 {
        return Err(Error::invalid(format!("{kelf_path}: graphs: empty")));
    }
    if graphs != 1 && graphs != lnc {
        let allowed = if lnc == 1 {
            "1".to_string()
        } else {
            format!("1 or {lnc}")
        };
        return Err(Error::invalid(format!(
            "{kelf_path}: graphs: {graphs} subgraphs, but the NEFF's logical core size is {lnc} \
             (the subgraph count must be {allowed})"
        )));
    }
    if graphs > opts.available_cores as usize {
        return Err(Error::invalid(format!(
            "Insufficient number of NeuronCores, required {graphs}, available {}: failed to \
             stage graph {kelf_path}",
            opts.available_cores
        )));
    }

    let require_sb_res = target == KelfTarget::Gen(Target::Trn2) && !opts.allow_legacy_neff;

    let mut inputs: Vec<IoTensor> = io.inputs.iter().map(io_tensor).collect();
    let mut outputs: Vec<IoTensor> = io.outputs.iter().map(io_tensor).collect();

    let kelf_dir = member_dir(&kelf_path).to_string();
    let mut subgraphs = Vec::with_capacity(graphs);
    for (i, g) in kelf.graphs.iter().enumerate() {
        let (def_path, def_bytes) =
            resolve_member(src, &kelf_dir, &g.definition).ok_or_else(|| {
                Error::invalid(format!(
                    "{kelf_path}: graphs[{i}].definition names {:?}, which is not in the NEFF",
                    g.definition
                ))
            })?;
        let def = manifest::parse_def_json(&def_path, def_bytes)?;
        let ctx = SubgraphCtx {
            src,
            index: i,
            name: &g.name,
            def_path: &def_path,
            opts,
            require_sb_res,
        };
        subgraphs.push(ctx.build(&def, &mut inputs, &mut outputs)?);
    }

    // The NEFF's encoding, one for all its streams.
    let encoding = stream_encoding(subgraphs.iter().flat_map(|k: &Kbin| &k.engines));
    for k in &mut subgraphs {
        k.encoding = encoding;
        if encoding == Encoding::Neuron {
            check_dma_direct(k)?;
        }
    }

    for (t, what) in inputs
        .iter()
        .map(|t| (t, "input"))
        .chain(outputs.iter().map(|t| (t, "output")))
    {
        if t.var_ids.is_empty() {
            return Err(Error::invalid(format!(
                "{neff_file}: model {what} {:?} has no `{what}` var in any subgraph def.json",
                t.name
            )));
        }
    }

    Ok(KelfModel {
        kelf_name: kelf_path,
        version: kelf.version,
        target,
        inputs,
        outputs,
        subgraphs,
    })
}

fn io_tensor(d: &IoDecl) -> IoTensor {
    IoTensor {
        name: d.name.clone(),
        dtype: d.dtype,
        shape: d.shape.clone(),
        size: d.size,
        var_ids: Vec::new(),
    }
}

/// The kelf `target` gate.
fn target_gate(kelf_path: &str, target: &str, opts: &BuildOptions) -> Result<KelfTarget> {
    if target == "*" {
        return Ok(KelfTarget::Any);
    }
    let Some(t) = Target::from_neff_target(target) else {
        if let Some(g) = nrt_hal::target::generation_of(target) {
            if opts.any_generation {
                return Ok(KelfTarget::Any);
            }
            return Err(Error::invalid(format!(
                "{kelf_path}: target {target:?} is the {g} generation, which nrt-emu does not \
                 model (it runs \"sunda\" (trn1) and \"cayman\" (trn2) NEFFs)"
            )));
        }
        return Err(Error::invalid(format!(
            "{kelf_path}: target: unknown or unsupported target {target:?} (this runtime \
             supports \"sunda\" (trn1), \"cayman\" (trn2) and \"*\")"
        )));
    };
    let legacy_ok = opts.allow_legacy_neff && t == Target::Trn1 && opts.target == Target::Trn2;
    if t != opts.target && !legacy_ok {
        return Err(Error::invalid(format!(
            "{kelf_path}: arch incompatible: NEFF compiled for {target:?} ({}), device is {} \
             ({:?})",
            t.name(),
            opts.target.name(),
            opts.target.spec().neff_target
        )));
    }
    Ok(KelfTarget::Gen(t))
}

/// Everything one subgraph's build needs.
struct SubgraphCtx<'a, S: MemberSource> {
    src: &'a S,
    index: usize,
    name: &'a str,
    def_path: &'a str,
    opts: &'a BuildOptions,
    require_sb_res: bool,
}

impl<S: MemberSource> SubgraphCtx<'_, S> {
    fn def_err(&self, what: impl std::fmt::Display) -> Error {
        Error::invalid(format!("{}: {what}", self.def_path))
    }

    fn build(
        &self,
        def: &DefJson,
        inputs: &mut [IoTensor],
        outputs: &mut [IoTensor],
    ) -> Result<Kbin> {
        let vars = self.vars(def, inputs, outputs)?;
        let queue_sets = self.queue_sets(def)?;
        let sb_reservations = self.sb_reservations(def)?;
        let names: BTreeMap<&str, u32> =
            vars.values().map(|v| (v.name.as_str(), v.var_id)).collect();
        let mut engines = Vec::with_capacity(def.engines.len());
        for e in &def.engines {
            engines.push(self.engine(e, &vars, &names, &queue_sets)?);
        }
        Ok(Kbin {
            name: self.name.to_string(),
            def_member: self.def_path.to_string(),
            vars,
            queue_sets,
            engines,
            sb_reservations,
            features: def.neff_features.clone(),
            cc_streams: def.cc_streams,
            runtime_event_count: def.runtime_event_count,
            runtime_semaphore_count: def.runtime_semaphore_count,
            encoding: Encoding::Platform,
        })
    }

    // -----------------------------------------------------------------------------------------
    // Vars.

    fn vars(
        &self,
        def: &DefJson,
        inputs: &mut [IoTensor],
        outputs: &mut [IoTensor],
    ) -> Result<BTreeMap<u32, Var>> {
        let mut vars: BTreeMap<u32, Var> = BTreeMap::new();
        let mut sb: Option<&str> = None;
        for v in &def.vars {
            if let Some(prev) = vars.get(&v.var_id) {
                return Err(self.def_err(format_args!(
                    "var.{}.var_id: duplicate var id {} (also used by var {:?})",
                    v.name, v.var_id, prev.name
                )));
            }
            let size = v.size.unwrap_or(0);
            let kind = match v.var_type {
                VarType::StateBuffer => {
                    if let Some(prev) = sb {
                        return Err(self.def_err(format_args!(
                            "var.{}: a second state-buffer var (already {prev:?}); only one is \
                             allowed",
                            v.name
                        )));
                    }
                    sb = Some(&v.name);
                    VarKind::StateBuffer
                }
                VarType::Input | VarType::Output => {
                    let input = v.var_type == VarType::Input;
                    self.bind_io(v, size, if input { inputs } else { outputs }, input)?;
                    if input {
                        VarKind::Input
                    } else {
                        VarKind::Output
                    }
                }
                VarType::File => self.file_var(v, size)?,
                VarType::TmpBuf => VarKind::TmpBuf,
                VarType::Virtual => VarKind::Virtual {
                    backing_offset: v.backing_variable_off.unwrap_or(0),
                },
                VarType::Pointer => VarKind::Pointer {
                    referenced_var_id: v.referenced_var_id.unwrap_or(0),
                },
                VarType::DgeTable => VarKind::DgeTable {
                    list: v.list.clone().unwrap_or_default(),
                },
            };
            let size = if v.var_type == VarType::StateBuffer {
                0
            } else {
                size
            };
            vars.insert(
                v.var_id,
                Var {
                    name: v.name.clone(),
                    var_id: v.var_id,
                    kind,
                    size,
                    alignment: v.alignment,
                },
            );
        }
        for v in vars.values() {
            if let VarKind::DgeTable { list } = &v.kind {
                if let Some(bad) = list.iter().find(|id| !vars.contains_key(id)) {
                    return Err(self.def_err(format_args!(
                        "var.{}.list: var id {bad} does not exist",
                        v.name
                    )));
                }
            }
            if let VarKind::Pointer { referenced_var_id } = v.kind {
                if !vars.contains_key(&referenced_var_id) {
                    return Err(self.def_err(format_args!(
                        "var.{}.referenced_var_id: var id {referenced_var_id} does not exist",
                        v.name
                    )));
                }
            }
        }
        Ok(vars)
    }

    fn bind_io(&self, v: &VarDef, size: u64, tensors: &mut [IoTensor], input: bool) -> Result<()> {
        let what = if input { "input" } else { "output" };
        let t = tensors
            .iter_mut()
            .find(|t| t.name == v.name)
            .ok_or_else(|| {
                self.def_err(format_args!(
                    "var.{}: `{what}` var names no model {what} of neff.json",
                    v.name
                ))
            })?;
        if size != t.size {
            return Err(self.def_err(format_args!(
                "var.{}.size: {size} bytes, but neff.json declares {what} {:?} as {:?} {} = {} \
                 bytes",
                v.name,
                t.name,
                t.shape,
                t.dtype.neff_name(),
                t.size
            )));
        }
        if t.var_ids.iter().any(|&(sg, _)| sg == self.index) {
            return Err(self.def_err(format_args!(
                "var.{}: {what} {:?} is bound to two vars in this subgraph",
                v.name, t.name
            )));
        }
        t.var_ids.push((self.index, v.var_id));
        Ok(())
    }

    fn file_var(&self, v: &VarDef, size: u64) -> Result<VarKind> {
        let file_name = v.file_name.as_deref().unwrap_or_default();
        let dir = member_dir(self.def_path);
        let (member, bytes) = resolve_member(self.src, dir, file_name).ok_or_else(|| {
            self.def_err(format_args!(
                "var.{}.file_name: {file_name:?} is not in the NEFF",
                v.name
            ))
        })?;
        // The member's own buffer where possible: a raw member as it is, a plain `.npy`'s
        // element window; a copy only when the source holds no shared buffer or the `.npy`
        // needs converting.
        let shared = |range: std::ops::Range<usize>| {
            self.src
                .member_shared(&member)
                .and_then(|buf| SharedBytes::window(buf, range.clone()))
                .unwrap_or_else(|| SharedBytes::from(&bytes[range]))
        };
        let data = if member.ends_with(".npy") {
            let ctx = |e: Error| e.context(format_args!("{}: var.{}", self.def_path, v.name));
            match manifest::npy_data_range(&member, bytes).map_err(ctx)? {
                Some(range) => shared(range),
                None => SharedBytes::from(manifest::parse_npy(&member, bytes).map_err(ctx)?.data),
            }
        } else {
            shared(0..bytes.len())
        };
        if data.len() as u64 != size {
            return Err(self.def_err(format_args!(
                "var.{}: {member} holds {} bytes of data, but the var size is {size}",
                v.name,
                data.len()
            )));
        }
        Ok(VarKind::File {
            file_name: member,
            data,
        })
    }

    // -----------------------------------------------------------------------------------------
    // Queue sets and SB reservations.

    fn queue_sets(&self, def: &DefJson) -> Result<BTreeMap<String, QueueSet>> {
        let mut out = BTreeMap::new();
        for q in &def.dma_queues {
            if !(1..=MAX_QUEUES_PER_SET).contains(&q.num_queues) {
                return Err(self.def_err(format_args!(
                    "dma_queue.{}.num_queues: {} is outside 1..={MAX_QUEUES_PER_SET}",
                    q.name, q.num_queues
                )));
            }
            let owner = match &q.owner {
                None => None,
                Some(o) => Some(EngineKind::from_def_key(o).ok_or_else(|| {
                    self.def_err(format_args!(
                        "dma_queue.{}.owner: {o:?} is not an engine (pe, act, pool, dve, sp)",
                        q.name
                    ))
                })?),
            };
            // Software-generated queues name the SBUF scratch their descriptors go to: it must
            // lie inside a partition (this platform generates them itself; docs/neff.md §7.3).
            if let Some((offset, size)) = q.dynamic_dma {
                let sbuf = self.opts.target.spec().sbuf;
                let end = u64::from(offset) + u64::from(size);
                if end > u64::from(sbuf.partition_bytes) {
                    return Err(self.def_err(format_args!(
                        "dma_queue.{}.dynamic_dma: SB scratch bytes {offset}..{end} exceed the \
                         {}-byte partition of {}",
                        q.name,
                        sbuf.partition_bytes,
                        self.opts.target.name()
                    )));
                }
            }
            let semaphores = if !q.semaphore_set.is_empty() {
                q.semaphore_set.clone()
            } else {
                q.semaphore.into_iter().collect()
            };
            out.insert(
                q.name.clone(),
                QueueSet {
                    name: q.name.clone(),
                    kind: q.kind,
                    num_queues: q.num_queues as u32,
                    owner,
                    semaphores,
                },
            );
        }
        Ok(out)
    }

    fn sb_reservations(&self, def: &DefJson) -> Result<Vec<SbReservation>> {
        let Some(res) = &def.sb_reservations else {
            if self.require_sb_res {
                return Err(self.def_err(
                    "runtime_statebuffer_reservation: missing (required for target \"cayman\" \
                     unless legacy NEFFs are allowed)",
                ));
            }
            return Ok(Vec::new());
        };
        let sbuf = self.opts.target.spec().sbuf;
        for (i, r) in res.iter().enumerate() {
            let parts_end = u64::from(r.base_partition) + u64::from(r.partitions);
            let bytes_end = u64::from(r.offset) + u64::from(r.size);
            if parts_end > u64::from(sbuf.partitions) {
                return Err(self.def_err(format_args!(
                    "runtime_statebuffer_reservation[{i}]: partitions {}..{parts_end} exceed the \
                     {} partitions",
                    r.base_partition, sbuf.partitions
                )));
            }
            if bytes_end > u64::from(sbuf.partition_bytes) {
                return Err(self.def_err(format_args!(
                    "runtime_statebuffer_reservation[{i}]: bytes {}..{bytes_end} exceed the \
                     {}-byte partition of {}",
                    r.offset,
                    sbuf.partition_bytes,
                    self.opts.target.name()
                )));
            }
        }
        Ok(res.clone())
    }

    // -----------------------------------------------------------------------------------------
    // Engines.

    fn engine(
        &self,
        e: &manifest::EngineRef,
        vars: &BTreeMap<u32, Var>,
        names: &BTreeMap<&str, u32>,
        queue_sets: &BTreeMap<String, QueueSet>,
    ) -> Result<EngineProgram> {
        let dir = member_dir(self.def_path);
        let key = e.engine.def_key();
        let (json_member, json) = match &e.json {
            None => (String::new(), None),
            Some(rel) => {
                let (path, bytes) = resolve_member(self.src, dir, rel).ok_or_else(|| {
                    self.def_err(format_args!("{key}: {rel:?} is not in the NEFF"))
                })?;
                let parsed = manifest::parse_engine_json(&path, bytes)?;
                self.check_act_tables(&path, &parsed)?;
                (path, Some(parsed))
            }
        };
        let instr_rel = e
            .instr
            .clone()
            .or_else(|| json.as_ref().and_then(|j| j.instr.clone()))
            .ok_or_else(|| {
                self.def_err(format_args!(
                    "{key}_instr: missing (and {} names no instr)",
                    if json_member.is_empty() {
                        "no engine JSON"
                    } else {
                        json_member.as_str()
                    }
                ))
            })?;
        let (bin_member, bin) = resolve_member(self.src, dir, &instr_rel).ok_or_else(|| {
            self.def_err(format_args!(
                "{key}_instr: {instr_rel:?} is not in the NEFF"
            ))
        })?;
        let records = split_records(&bin_member, bin)?;
        if let Some(j) = &json {
            check_table_loads(&bin_member, &json_member, j, &records)?;
        }

        let mut dma_blocks = Vec::new();
        if let Some(j) = &json {
            let mut seen = BTreeSet::new();
            for (bi, b) in j.dma.iter().enumerate() {
                let block = self.dma_block(&json_member, bi, b, vars, names, queue_sets)?;
                if !seen.insert((block.queue.clone(), block.id)) {
                    return Err(Error::invalid(format!(
                        "{json_member}: dma[{bi}]: duplicate block id {} on queue {:?}",
                        block.id, block.queue
                    )));
                }
                dma_blocks.push(block);
            }
        }

        self.check_pseudo_records(
            &bin_member,
            &json_member,
            &records,
            &dma_blocks,
            vars,
            queue_sets,
        )?;

        Ok(EngineProgram {
            engine: e.engine,
            json_member,
            bin_member,
            records,
            dma_blocks,
        })
    }

    /// The activation table sets an engine JSON names are shipped: each is listed in its
    /// `act_info` catalogue and the catalogue's three files for it are members of the
    /// subgraph (docs/neff.md §10). Their contents stay opaque.
    fn check_act_tables(&self, json_member: &str, j: &manifest::EngineJson) -> Result<()> {
        if j.activation_function_sets.is_empty() {
            return Ok(());
        }
        let dir = member_dir(self.def_path);
        let info_rel = j.act_info.as_deref().ok_or_else(|| {
            Error::invalid(format!(
                "{json_member}: activation_function_sets given without act_info"
            ))
        })?;
        let (info_path, info) = resolve_member(self.src, dir, info_rel).ok_or_else(|| {
            Error::invalid(format!(
                "{json_member}: act_info: {info_rel:?} is not in the NEFF"
            ))
        })?;
        let catalogue = manifest::parse_act_info(&info_path, info)?;
        for (i, name) in j.activation_function_sets.iter().enumerate() {
            let set = catalogue.iter().find(|s| &s.name == name).ok_or_else(|| {
                Error::invalid(format!(
                    "{json_member}: activation_function_sets[{i}] {name:?} is not a set of \
                     {info_path}"
                ))
            })?;
            for f in &set.files {
                if resolve_member(self.src, dir, f).is_none() {
                    return Err(Error::invalid(format!(
                        "{json_member}: activation table set {name:?}: {f:?} is not in the NEFF"
                    )));
                }
            }
        }
        Ok(())
    }

    fn check_pseudo_records(
        &self,
        bin_member: &str,
        json_member: &str,
        records: &[Record],
        blocks: &[DmaBlock],
        vars: &BTreeMap<u32, Var>,
        queue_sets: &BTreeMap<String, QueueSet>,
    ) -> Result<()> {
        for (i, r) in records.iter().enumerate() {
            let op = r.opcode();
            if op != OP_DMA_TRIGGER && op != OP_WRITE_VAR {
                continue;
            }
            let bad = |what: String| Error::invalid(format!("{bin_member}: record {i}: {what}"));
            let ins = r.decode().map_err(|e| bad(e.to_string()))?;
            match ins {
                Instruction::PseudoDmaTrigger { queue, block_id } => {
                    let q = queue.as_str();
                    if !queue_sets.contains_key(q) {
                        return Err(bad(format!(
                            "DMA trigger names queue set {q:?}, which {} does not declare",
                            self.def_path
                        )));
                    }
                    if !blocks.iter().any(|b| b.queue == q && b.id == block_id) {
                        return Err(bad(format!(
                            "DMA trigger (queue {q:?}, block {block_id}): no such block in {}",
                            if json_member.is_empty() {
                                "the engine (it has no engine JSON)"
                            } else {
                                json_member
                            }
                        )));
                    }
                }
                Instruction::PseudoWriteVar { var_id, offset, .. } => {
                    let v = vars.get(&var_id).ok_or_else(|| {
                        bad(format!("pseudo.write_var: out-of-range var id {var_id}"))
                    })?;
                    let hbm_non_io = matches!(
                        v.kind,
                        VarKind::File { .. }
                            | VarKind::TmpBuf
                            | VarKind::Virtual { .. }
                            | VarKind::Pointer { .. }
                    );
                    if !hbm_non_io {
                        return Err(bad(format!(
                            "pseudo.write_var: var {var_id} ({:?}) is not an HBM non-IO var \
                             (file, tmp-buf, virtual, pointer)",
                            v.name
                        )));
                    }
                    let fits = matches!(offset.checked_add(4), Some(end) if end <= v.size);
                    if !fits {
                        return Err(bad(format!(
                            "pseudo.write_var: offset {offset} + 4 is outside var {var_id} \
                             ({:?}, {} bytes)",
                            v.name, v.size
                        )));
                    }
                }
                // Only 0xC1 and 0xF0 reach here, and they decode to the two variants above.
                _ => {}
            }
        }
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // DMA blocks.

    fn dma_block(
        &self,
        json_member: &str,
        bi: usize,
        b: &DmaBlockDef,
        vars: &BTreeMap<u32, Var>,
        names: &BTreeMap<&str, u32>,
        queue_sets: &BTreeMap<String, QueueSet>,
    ) -> Result<DmaBlock> {
        let ctx = format!(
            "{json_member}: dma[{bi}] (queue {:?}, id {})",
            b.queue, b.id
        );
        if !queue_sets.contains_key(&b.queue) {
            return Err(Error::invalid(format!(
                "{ctx}: queue set {:?} is not declared in {}",
                b.queue, self.def_path
            )));
        }
        let mut descs = Vec::with_capacity(b.descs.len());
        let mut desc_params = Vec::with_capacity(b.descs.len());
        for (di, d) in b.descs.iter().enumerate() {
            let dctx = format!("{ctx} desc[{di}]");
            let (desc, params) = self.desc(&dctx, d, vars, names)?;
            descs.push(desc);
            desc_params.push(params);
        }
        Ok(DmaBlock {
            id: b.id,
            queue: b.queue.clone(),
            semaphore: b.semaphore,
            event: b.event,
            descs,
            desc_params,
            comment: b.comment.clone(),
        })
    }

    fn desc(
        &self,
        ctx: &str,
        d: &DescDef,
        vars: &BTreeMap<u32, Var>,
        names: &BTreeMap<&str, u32>,
    ) -> Result<(DmaDesc, DmaParams)> {
        let bad = |what: String| Error::invalid(format!("{ctx}: {what}"));
        let from_name = match &d.from {
            Some(f) => f,
            None if d.has_from_arr => {
                return Err(bad(
                    "from_arr (collective) descriptors are not supported".into()
                ))
            }
            None => return Err(bad("from: missing".into())),
        };
        let from = self.side(
            ctx,
            "from",
            from_name,
            d.from_off,
            &d.from_sizes,
            &d.from_steps,
            d.from_dtype,
            vars,
            names,
        )?;
        let to = self.side(
            ctx,
            "to",
            &d.to,
            d.to_off,
            &d.to_sizes,
            &d.to_steps,
            d.to_dtype,
            vars,
            names,
        )?;
        let (fb, tb) = (from.total_bytes(), to.total_bytes());
        match d.op {
            DmaOp::Copy | DmaOp::Transpose => {
                if fb != tb {
                    return Err(bad(format!(
                        "from covers {fb} bytes but to covers {tb} bytes"
                    )));
                }
            }
            DmaOp::Cast | DmaOp::Fma | DmaOp::Add | DmaOp::Min | DmaOp::Max => {
                let (fs, ts) = (from.dtype.size() as u64, to.dtype.size() as u64);
                if fb % fs != 0 || tb % ts != 0 {
                    return Err(bad(format!(
                        "from covers {fb} bytes and to {tb} bytes, not whole {} / {} elements",
                        from.dtype.neff_name(),
                        to.dtype.neff_name()
                    )));
                }
                if fb / fs != tb / ts {
                    return Err(bad(format!(
                        "from covers {} {} elements but to covers {} {} elements",
                        fb / fs,
                        from.dtype.neff_name(),
                        tb / ts,
                        to.dtype.neff_name()
                    )));
                }
            }
        }
        let desc = DmaDesc { op: d.op, from, to };
        Ok((
            desc,
            DmaParams {
                transpose: d.transpose.as_ref().map(|t| DmaTranspose {
                    op: t.op.clone(),
                    shape: t.shape.clone(),
                    element_size: t.element_size,
                }),
                scale: d.scale,
                scale_dtype: d.scale_dtype,
                constant: d.constant,
                constant_dtype: d.constant_dtype,
                num_tiling_dimensions: d.num_tiling_dimensions,
            },
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn side(
        &self,
        ctx: &str,
        which: &str,
        var_name: &str,
        offset: u64,
        sizes: &[u64],
        steps: &[i64],
        dtype: nrt_hal::Dtype,
        vars: &BTreeMap<u32, Var>,
        names: &BTreeMap<&str, u32>,
    ) -> Result<DmaSide> {
        let bad = |what: String| Error::invalid(format!("{ctx}: {which}: {what}"));
        let var_id = *names.get(var_name).ok_or_else(|| {
            bad(format!(
                "var {var_name:?} is not declared in {}",
                self.def_path
            ))
        })?;
        let var = vars
            .get(&var_id)
            .ok_or_else(|| bad(format!("var {var_name:?} has no entry")))?;
        if sizes.is_empty() || sizes.len() > 4 {
            return Err(bad(format!(
                "{which}_sizes has {} dims, must have 1..=4",
                sizes.len()
            )));
        }
        if steps.len() != sizes.len() {
            return Err(bad(format!(
                "{which}_steps has {} dims but {which}_sizes has {}",
                steps.len(),
                sizes.len()
            )));
        }
        if let Some(k) = sizes.iter().position(|&s| s == 0) {
            return Err(bad(format!("{which}_sizes[{k}] is 0")));
        }
        if let Some(k) = steps.iter().position(|&s| s.unsigned_abs() > MAX_BYTES) {
            return Err(bad(format!(
                "{which}_steps[{k}] = {} exceeds ±{MAX_BYTES}",
                steps[k]
            )));
        }
        // Bound the total so `DmaSide::total_bytes` cannot overflow later.
        sizes
            .iter()
            .try_fold(1u64, |a, &s| a.checked_mul(s))
            .filter(|&t| t <= MAX_BYTES)
            .ok_or_else(|| {
                bad(format!(
                    "{which}_sizes {sizes:?} cover more than {MAX_BYTES} bytes"
                ))
            })?;
        let pattern = Pattern {
            offset: i128::from(offset),
            sizes,
            steps,
        };
        match var.kind {
            VarKind::StateBuffer => self
                .check_sb(&pattern)
                .map_err(|why| bad(format!("state buffer {var_name:?}: {why}")))?,
            _ => {
                let (lo, hi) = pattern.span();
                if lo < 0 || hi >= i128::from(var.size) {
                    return Err(bad(format!(
                        "access pattern (offset {offset}, sizes {sizes:?}, steps {steps:?}) \
                         touches bytes {lo}..={hi}, outside var {var_name:?} of {} bytes",
                        var.size
                    )));
                }
            }
        }
        Ok(DmaSide {
            var_id,
            offset,
            sizes: sizes.to_vec(),
            steps: steps.to_vec(),
            dtype,
        })
    }

    /// Checks a state-buffer access pattern: every byte inside the 128 × 256 KiB window and
    /// below the physical partition size.
    fn check_sb(&self, p: &Pattern<'_>) -> std::result::Result<(), String> {
        let sbuf = self.opts.target.spec().sbuf;
        let stride = i128::from(sbuf.partition_stride);
        let parts = i128::from(sbuf.partitions);
        let phys = i128::from(sbuf.partition_bytes);
        let tname = self.opts.target.name();

        // Constant time: split the dims into those moving whole partitions (step a multiple
        // of the stride) and the rest. If the rest stays inside one partition's physical
        // bytes, the pattern is inside iff the partition range is.
        let (mut flo, mut fhi) = (p.offset, p.offset);
        let (mut plo, mut phi) = (0i128, 0i128);
        for (&n, &s) in p.sizes.iter().zip(p.steps) {
            let ext = (i128::from(n) - 1) * i128::from(s);
            if s != 0 && i128::from(s) % stride == 0 {
                let e = ext / stride;
                plo += e.min(0);
                phi += e.max(0);
            } else {
                flo += ext.min(0);
                fhi += ext.max(0);
            }
        }
        let k = flo.div_euclid(stride);
        if k == fhi.div_euclid(stride) && fhi.rem_euclid(stride) < phys {
            let (first, last) = (k + plo, k + phi);
            if first < 0 || last >= parts {
                return Err(format!(
                    "access pattern spans partitions {first}..={last}, outside 0..{parts}"
                ));
            }
            return Ok(());
        }

        // Exact: enumerate the outer points, checking the innermost run of each.
        let outer: u64 = p.sizes[1..]
            .iter()
            .try_fold(1u64, |a, &n| a.checked_mul(n))
            .unwrap_or(u64::MAX);
        if outer > SB_ENUMERATION_LIMIT {
            return Err(format!(
                "access pattern crosses a partition boundary ({} bytes per partition on {tname}, \
                 {stride}-byte partition stride) and is too large to verify",
                phys
            ));
        }
        let inner = (i128::from(p.sizes[0]) - 1) * i128::from(p.steps[0]);
        let dims = &p.sizes[1..];
        let mut idx = vec![0u64; dims.len()];
        loop {
            let mut base = p.offset;
            for (j, &i) in idx.iter().enumerate() {
                base += i128::from(i) * i128::from(p.steps[j + 1]);
            }
            let (lo, hi) = (base + inner.min(0), base + inner.max(0));
            let part = lo.div_euclid(stride);
            if lo < 0 || part >= parts {
                return Err(format!(
                    "byte offset {lo} is outside the {parts} × {stride}-byte state buffer"
                ));
            }
            if part != hi.div_euclid(stride) || hi.rem_euclid(stride) >= phys {
                return Err(format!(
                    "bytes {lo}..={hi} (partition {part}, byte {}) run past the {phys}-byte \
                     physical partition of {tname}",
                    lo.rem_euclid(stride)
                ));
            }
            // Next outer index (innermost of the outer dims first).
            let mut j = 0;
            loop {
                if j == dims.len() {
                    return Ok(());
                }
                idx[j] += 1;
                if idx[j] < dims[j] {
                    break;
                }
                idx[j] = 0;
                j += 1;
            }
        }
    }
}

/// A byte access pattern: `offset + Σ idx_k · steps[k]`, `idx_k < sizes[k]`.
struct Pattern<'a> {
    offset: i128,
    sizes: &'a [u64],
    steps: &'a [i64],
}

impl Pattern<'_> {
    /// Lowest and highest byte touched (all values are bounded by 2^40, so the sums fit in
    /// i128 with room to spare).
    fn span(&self) -> (i128, i128) {
        let (mut lo, mut hi) = (self.offset, self.offset);
        for (&n, &s) in self.sizes.iter().zip(self.steps) {
            let ext = (i128::from(n) - 1) * i128::from(s);
            lo += ext.min(0);
            hi += ext.max(0);
        }
        (lo, hi)
    }
}

/// Splits an engine binary into records, checking the framing real NEFFs follow.
fn split_records(member: &str, bin: &[u8]) -> Result<Vec<Record>> {
    if bin.is_empty() || !bin.len().is_multiple_of(RECORD_SIZE) {
        return Err(Error::invalid(format!(
            "{member}: {} bytes is not a non-empty whole number of {RECORD_SIZE}-byte records",
            bin.len()
        )));
    }
    let mut out = Vec::with_capacity(bin.len() / RECORD_SIZE);
    for (i, chunk) in bin.chunks_exact(RECORD_SIZE).enumerate() {
        let r = Record::from_slice(chunk)
            .ok_or_else(|| Error::invalid(format!("{member}: record {i}: short record")))?;
        // Byte 1 is the record length in dwords, 0x10, except for the opcodes whose row says
        // otherwise (the Neuron 0xDA has 0x00).
        let expected = nrt_hal::isa::neuron::NeuronOpcode::from_byte(r.opcode())
            .map_or(LENGTH_BYTE, |o| o.length_byte());
        if r.length_byte() != expected {
            return Err(Error::invalid(format!(
                "{member}: record {i}: length byte (byte 1) is {:#04x}, expected {expected:#04x}",
                r.length_byte()
            )));
        }
        if i == 0 && r.opcode() != OP_HEADER {
            return Err(Error::invalid(format!(
                "{member}: record 0: opcode {:#04x}, expected the {OP_HEADER:#04x} stream header",
                r.opcode()
            )));
        }
        out.push(r);
    }
    Ok(out)
}

/// Every engine-issued DMA (Neuron `0xD4`) of a subgraph addresses what it may reach: an
/// immediate address names a declared var other than a DGE table, a table address an entry of
/// the subgraph's `dge-table` list (docs/neff.md §7.2) — checked here so that a NEFF whose
/// table does not cover its DMAs is refused before anything is staged. A record that does not
/// decode is left to the relocation, which names its field.
fn check_dma_direct(k: &Kbin) -> Result<()> {
    use nrt_hal::isa::neuron::{DmaAddrKind, NeuronInstr, NeuronOpcode};
    let tables: Vec<(&str, &[u32])> = k
        .vars
        .values()
        .filter_map(|v| match &v.kind {
            VarKind::DgeTable { list } => Some((v.name.as_str(), list.as_slice())),
            _ => None,
        })
        .collect();
    if tables.len() > 1 {
        let names: Vec<&str> = tables.iter().map(|t| t.0).collect();
        return Err(Error::invalid(format!(
            "{}: {} dge-table vars ({}): one per subgraph is the only known form",
            k.def_member,
            tables.len(),
            names.join(", ")
        )));
    }
    for p in &k.engines {
        for (i, r) in p.records.iter().enumerate() {
            if r.opcode() != NeuronOpcode::DmaDirect2d.byte() {
                continue;
            }
            let Ok(NeuronInstr::DmaDirect2d { src, dst, .. }) = NeuronInstr::decode(r) else {
                continue;
            };
            for (side, a) in [("source", src), ("destination", dst)] {
                let bad = |what: String| {
                    Error::invalid(format!(
                        "{}: instruction {i}: DMA_DIRECT2D {side} {what}",
                        p.bin_member
                    ))
                };
                match a.kind {
                    DmaAddrKind::Immediate => match k.vars.get(&u32::from(a.index)) {
                        None => {
                            return Err(bad(format!(
                                "names var id {}, which {} does not declare",
                                a.index, k.def_member
                            )))
                        }
                        Some(v) if matches!(v.kind, VarKind::DgeTable { .. }) => {
                            return Err(bad(format!("names var {}, a DGE table", v.name)))
                        }
                        Some(_) => {}
                    },
                    DmaAddrKind::Table | DmaAddrKind::TableRegister => match tables.first() {
                        None => {
                            return Err(bad(format!(
                                "addresses DGE-table entry {}, but {} declares no dge-table var",
                                a.index, k.def_member
                            )))
                        }
                        Some((name, list)) if usize::from(a.index) >= list.len() => {
                            return Err(bad(format!(
                                "addresses entry {} of {name}, which lists {} var(s) {list:?}",
                                a.index,
                                list.len()
                            )))
                        }
                        Some(_) => {}
                    },
                }
            }
        }
    }
    Ok(())
}

/// Each Neuron `ACT_TABLE_LOAD` selects a table set the engine JSON ships: `table_sel` counts
/// `activation_function_sets` (every current NEFF's activations use only functions of the set
/// last loaded; docs/neff.md §10).
fn check_table_loads(
    bin_member: &str,
    json_member: &str,
    j: &manifest::EngineJson,
    records: &[Record],
) -> Result<()> {
    use nrt_hal::isa::neuron::{NeuronInstr, NeuronOpcode};
    for (i, r) in records.iter().enumerate() {
        if r.opcode() != NeuronOpcode::ActTableLoad.byte() {
            continue;
        }
        let Ok(NeuronInstr::ActTableLoad { table_sel, .. }) = NeuronInstr::decode(r) else {
            continue;
        };
        let sets = &j.activation_function_sets;
        if usize::from(table_sel) >= sets.len() {
            return Err(Error::invalid(format!(
                "{bin_member}: instruction {i}: ACT_TABLE_LOAD selects table set {table_sel}, \
                 but {json_member} ships {} set(s) {sets:?}",
                sets.len()
            )));
        }
    }
    Ok(())
}
