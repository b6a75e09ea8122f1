//! Load stage S4 (docs/runtime.md §2.6): stand up one subgraph on one physical core — the
//! per-core model record [`CoreModel`] (its type is [`crate::model`]'s). Everything it
//! allocates is recorded in the record, and [`CoreModel::release`] (or the error edge of
//! [`stage_core`]) frees exactly that.
//!
//! # Memory plan
//!
//! | var / object | where | category |
//! |---|---|---|
//! | `state-buffer` | the core's SBUF window (`Target::sbuf_addr`), nothing allocated | — |
//! | `input`, `output` | the caller's tensors, bound per execution | — |
//! | `file` constants | one region, each var at its alignment (≥ 64 B), data copied in | `CONSTANTS_DEVICE` |
//! | `tmp-buf`, `pointer` | one private region | `SCRATCHPAD_NONSHARED_DEVICE` |
//! | `dge-table` | nothing: its entries name vars, which the var slots hold | — |
//! | var slots of engine-issued DMAs (`crate::model::dge`), when the streams issue any | one allocation: the slot table and the per-execution IO images | `MISC_DEVICE` |
//! | `virtual` | the core's shared scratchpad at `backing_variable_off` (docs/neff.md §7.2) | `SCRATCHPAD_DEVICE` |
//! | engine instruction blocks | one region, the five translated streams back to back | `CODE_DEVICE` |
//! | DMA rings | one allocation per ring (a ring starts at its chunk, docs/driver.md §4.4) | `DMA_RINGS_DEVICE` |
//! | runtime words (the `1` that semaphore-increment descriptors copy) | one page | `MISC_DEVICE` |
//!
//! # DMA rings
//!
//! Each queue set gets `num_queues` hardware queues from the core's pool. A set is triggered by
//! one engine; its ring holds, in the order of that engine's `0xC1` triggers, each triggered
//! block's pairs — split across the set's queues in contiguous chunks — and after each chunk a
//! 4-byte pair that increments the block's semaphore on this core. Rings hold one execution's
//! descriptors in one pass (ring id 1); the execute path rewinds them per execution through the
//! queue reset register. A queue whose pairs touch an `input` or `output` var is *dynamic*: its
//! pairs stay var-relative here and are resolved against the caller's tensors at bind time.

use std::collections::{BTreeMap, BTreeSet};

use nrt_hal::abi::MemAllocCategory;
use nrt_hal::hal::{AllocRequest, MemLocation, RingSpec};
use nrt_hal::isa::{Instruction, Opcode, RECORD_SIZE};
use nrt_hal::target::SemWindow;
use nrt_hal::udma::RingGeometry;
use nrt_hal::{
    DeviceAddr, DmaEngine, EngineKind, Hal, MemHandle, NcIndex, QueueId, QueueRef, SemaphoreId,
    Target,
};

use super::dma::lower_block;
use super::translate::{translate, TriggerPlan};
use crate::error::{Error, Result};
use crate::exec::REQ_SLOTS;
use crate::kbin::{Kbin, VarKind};
use crate::model::core_model::{CoreModel, CoreResources, IoVar};
use crate::model::dge::{DgeSlots, SLOT};
use crate::model::pair::{Loc, PairTemplate};
use crate::model::queue::{io_vars, write_ring, HwQueue};
use crate::model::template::SubmitTemplate;

struct Staging<'a> {
    hal: &'a dyn Hal,
    res: &'a dyn CoreResources,
    nc: NcIndex,
    model: CoreModel,
    taken_queues: Vec<(u32, u32)>,
    scratchpad: bool,
}

impl Staging<'_> {
    fn alloc(
        &mut self,
        size: u64,
        align: u64,
        category: MemAllocCategory,
        what: &str,
    ) -> Result<(MemHandle, DeviceAddr)> {
        let target = self.hal.device_info()?.target;
        let h = self
            .hal
            .mem_alloc(&AllocRequest {
                size: size.max(1),
                align,
                location: MemLocation::Device {
                    channel: target.hbm_channel_of(self.nc),
                },
                nc: self.nc,
                category,
            })
            .map_err(|e| Error::from(e).context(format!("allocating {what} on {}", self.nc)))?;
        self.model.allocations.push(h);
        let pa = self.hal.mem_info(h)?.pa;
        Ok((h, pa))
    }

    /// Frees everything allocated so far and returns every queue taken — those already
    /// recorded in the model and those not yet (the error edge).
    fn unwind(self) {
        let mut queues = self.taken_queues;
        for q in &self.model.queues {
            let t = (q.queue.engine.0, q.queue.queue.0);
            if !queues.contains(&t) {
                queues.push(t);
            }
        }
        self.model
            .release_with(self.hal, self.res, &queues, self.scratchpad);
    }
}

fn align_up(x: u64, a: u64) -> Option<u64> {
    let a = a.max(1);
    x.checked_add(a - 1).map(|v| v / a * a)
}

/// Stages subgraph `kbin` on core `nc` (S4), relocating its streams and rings (S5).
pub fn stage_core(
    hal: &dyn Hal,
    res: &dyn CoreResources,
    target: Target,
    nc: NcIndex,
    kbin: &Kbin,
) -> Result<CoreModel> {
    let mut st = Staging {
        hal,
        res,
        nc,
        model: CoreModel::empty(nc),
        taken_queues: Vec::new(),
        scratchpad: false,
    };
    match stage_into(&mut st, target, kbin) {
        Ok(()) => Ok(st.model),
        Err(e) => {
            st.unwind();
            Err(e.context(format!("staging {} on {nc}", kbin.name)))
        }
    }
}

/// S4 then S5 for one core: the memory plan (constants, scratch vars, the scratchpad, pointer
/// vars, the runtime's words), the DMA rings of every triggered queue set, and the instruction
/// blocks, relocated and uploaded.
fn stage_into(st: &mut Staging<'_>, target: Target, kbin: &Kbin) -> Result<()> {
    plan_memory(st, target, kbin)?;
    let mut plans: [BTreeMap<usize, TriggerPlan>; 5] = Default::default();
    for (set_name, occ) in &dma_triggers(kbin) {
        stage_queue_set(st, target, kbin, set_name, occ, &mut plans)?;
    }
    // Every queue in use is now recorded in the model; `taken_queues` must not double-return.
    st.taken_queues.retain(|t| {
        !st.model
            .queues
            .iter()
            .any(|q| (q.queue.engine.0, q.queue.queue.0) == *t)
    });

    plan_dge(st, target, kbin)?;
    upload_code(st, target, kbin, &plans)?;
    st.model.submit = SubmitTemplate::new(
        target,
        &st.model.queues,
        &st.model.engine_addr,
        st.model.dge.as_ref(),
    )?;
    Ok(())
}

/// The var slots the subgraph's engine-issued DMAs address (`crate::model::dge`), when its
/// streams issue any: one slot per var but the state buffer and DGE tables, the IO vars' first;
/// the other slots written now (device address and size), the IO slots per execution.
fn plan_dge(st: &mut Staging<'_>, target: Target, kbin: &Kbin) -> Result<()> {
    let issues_dma = kbin.encoding == nrt_hal::isa::neuron::Encoding::Neuron
        && kbin.engines.iter().any(|e| {
            e.records
                .iter()
                .any(|r| r.opcode() == nrt_hal::isa::neuron::NeuronOpcode::DmaDirect2d.byte())
        });
    if !issues_dma {
        return Ok(());
    }
    let mut io = Vec::new();
    let mut other = Vec::new();
    let mut sb = None;
    let mut list = Vec::new();
    for v in kbin.vars.values() {
        match &v.kind {
            VarKind::StateBuffer => {
                let base = target
                    .sbuf_addr(st.nc, 0, 0)
                    .ok_or_else(|| Error::failure(format!("{} has no SBUF window", st.nc)))?;
                sb = Some((v.var_id, base));
            }
            VarKind::DgeTable { list: l } => list.clone_from(l),
            VarKind::Input | VarKind::Output => io.push((v.var_id, v.size)),
            _ => other.push(v.var_id),
        }
    }
    if io.len() > crate::model::dge::MAX_IO {
        return Err(Error::invalid(format!(
            "{} IO vars are addressed by engine-issued DMAs; at most {} supported",
            io.len(),
            crate::model::dge::MAX_IO
        )));
    }
    let slot_of: BTreeMap<u32, u32> = io
        .iter()
        .map(|&(v, _)| v)
        .chain(other.iter().copied())
        .enumerate()
        .map(|(i, v)| (v, i as u32))
        .collect();
    let bytes = DgeSlots::bytes(slot_of.len() as u64, io.len() as u64, REQ_SLOTS);
    let (mem, pa) = st.alloc(bytes, 64, MemAllocCategory::MiscDevice, "DMA var slots")?;
    let mut table = vec![0u8; (slot_of.len() as u64 * SLOT) as usize];
    for &var in &other {
        let (Some(&at), Some(&addr)) = (slot_of.get(&var), st.model.var_pa.get(&var)) else {
            continue;
        };
        let at = at as usize * SLOT as usize;
        table[at..at + 8].copy_from_slice(&addr.raw().to_le_bytes());
        table[at + 8..at + 16].copy_from_slice(&kbin.vars[&var].size.to_le_bytes());
    }
    st.hal.copy_to_device(mem, 0, &table)?;
    st.model.dge = Some(DgeSlots {
        mem,
        pa,
        slot_of,
        io,
        list,
        sb,
    });
    Ok(())
}

/// The memory plan: places every var, allocates and fills the constant and scratch regions,
/// binds virtual vars to the scratchpad, writes pointer vars, and allocates the runtime's
/// words (the `1` every semaphore-increment descriptor copies).
fn plan_memory(st: &mut Staging<'_>, target: Target, kbin: &Kbin) -> Result<()> {
    let nc = st.nc;
    let mut const_off = 0u64;
    let mut const_align = 64u64;
    let mut tmp_off = 0u64;
    let mut tmp_align = 64u64;
    let mut placed_const = Vec::new();
    let mut placed_tmp = Vec::new();
    let overflow = || Error::invalid("memory plan overflows 64 bits");
    for v in kbin.vars.values() {
        let align = v.alignment.max(64);
        match &v.kind {
            VarKind::File { .. } => {
                const_off = align_up(const_off, align).ok_or_else(overflow)?;
                placed_const.push((v.var_id, const_off));
                const_off = const_off.checked_add(v.size).ok_or_else(overflow)?;
                const_align = const_align.max(align);
            }
            VarKind::DgeTable { .. } => {}
            VarKind::TmpBuf | VarKind::Pointer { .. } => {
                tmp_off = align_up(tmp_off, align).ok_or_else(overflow)?;
                placed_tmp.push((v.var_id, tmp_off));
                tmp_off = tmp_off.checked_add(v.size.max(8)).ok_or_else(overflow)?;
                tmp_align = tmp_align.max(align);
            }
            VarKind::StateBuffer => {
                let sb = target
                    .sbuf_addr(nc, 0, 0)
                    .ok_or_else(|| Error::failure(format!("{nc} has no SBUF window")))?;
                st.model.var_pa.insert(v.var_id, sb);
            }
            VarKind::Input | VarKind::Output => {
                st.model.io_vars.insert(
                    v.var_id,
                    IoVar {
                        name: v.name.clone(),
                        is_input: matches!(v.kind, VarKind::Input),
                        size: v.size,
                    },
                );
            }
            VarKind::Virtual { .. } => {}
        }
    }
    let big_align = |a: u64| if a > 4096 { a } else { 0 };
    if const_off > 0 {
        let (h, pa) = st.alloc(
            const_off,
            big_align(const_align),
            MemAllocCategory::ConstantsDevice,
            "constants",
        )?;
        for &(id, off) in &placed_const {
            let v = &kbin.vars[&id];
            if let VarKind::File { data, .. } = &v.kind {
                st.hal.copy_to_device(h, off, data)?;
            }
            st.model.var_pa.insert(id, DeviceAddr::new(pa.raw() + off));
        }
    }
    if tmp_off > 0 {
        let (_, pa) = st.alloc(
            tmp_off,
            big_align(tmp_align),
            MemAllocCategory::ScratchpadNonsharedDevice,
            "scratch vars",
        )?;
        for &(id, off) in &placed_tmp {
            st.model.var_pa.insert(id, DeviceAddr::new(pa.raw() + off));
        }
    }
    let need = kbin.scratchpad_need();
    if need > 0 {
        let base = st.res.acquire_scratchpad(nc, need)?;
        st.scratchpad = true;
        st.model.scratchpad_need = need;
        for v in kbin.vars.values() {
            if let VarKind::Virtual { backing_offset } = v.kind {
                st.model.var_pa.insert(
                    v.var_id,
                    base.checked_add(backing_offset)
                        .map_err(|e| Error::invalid(e.to_string()))?,
                );
            }
        }
    }
    // Pointer vars hold the address of the var they reference (when it is the model's own).
    for v in kbin.vars.values() {
        if let VarKind::Pointer { referenced_var_id } = v.kind {
            if let (Some(&at), Some(&pa)) = (
                st.model.var_pa.get(&v.var_id),
                st.model.var_pa.get(&referenced_var_id),
            ) {
                write_u64(st, at, pa.raw())?;
            }
        }
    }
    let (misc, misc_pa) = st.alloc(4096, 0, MemAllocCategory::MiscDevice, "runtime words")?;
    st.hal.copy_to_device(misc, 0, &1u32.to_le_bytes())?;
    st.model.one_word = misc_pa;

    Ok(())
}

/// Where each engine's pseudo DMA triggers are: queue-set name → (engine, instruction index,
/// DMA block id), in program order.
fn dma_triggers(kbin: &Kbin) -> BTreeMap<String, Vec<(EngineKind, usize, u32)>> {
    let mut triggers: BTreeMap<String, Vec<(EngineKind, usize, u32)>> = BTreeMap::new();
    for prog in &kbin.engines {
        for (ip, rec) in prog.records.iter().enumerate() {
            if Opcode::from_byte(rec.opcode()) != Some(Opcode::PseudoDmaTrigger) {
                continue;
            }
            if let Ok(Instruction::PseudoDmaTrigger { queue, block_id }) = Instruction::decode(rec)
            {
                triggers
                    .entry(queue.as_str().to_string())
                    .or_default()
                    .push((prog.engine, ip, block_id));
            }
        }
    }
    triggers
}

/// One queue set: takes its hardware queues, lowers the DMA blocks its triggers name into
/// descriptor pairs spread over those queues (recording each trigger's plan in `plans`), then
/// builds and initialises the rings.
fn stage_queue_set(
    st: &mut Staging<'_>,
    target: Target,
    kbin: &Kbin,
    set_name: &String,
    occ: &[(EngineKind, usize, u32)],
    plans: &mut [BTreeMap<usize, TriggerPlan>; 5],
) -> Result<()> {
    let nc = st.nc;
    let engines: BTreeSet<EngineKind> = occ.iter().map(|o| o.0).collect();
    if engines.len() > 1 {
        return Err(Error::invalid(format!(
            "queue set {set_name} is triggered by more than one engine ({engines:?}); this platform needs one owner per set"
        )));
    }
    // A real compiler triggers each block exactly once (docs/neuron-isa.md "DMA kinds").
    if kbin.encoding == nrt_hal::isa::neuron::Encoding::Neuron {
        let mut seen = BTreeSet::new();
        if let Some(&(e, ip, id)) = occ.iter().find(|o| !seen.insert(o.2)) {
            return Err(Error::invalid(format!(
                "{e} instruction {ip} triggers block {id} of {set_name} a second time"
            )));
        }
    }
    let set = kbin.queue_sets.get(set_name).ok_or_else(|| {
        Error::invalid(format!(
            "trigger names queue set {set_name}, which def.json does not declare"
        ))
    })?;
    let n = set.num_queues as usize;
    let taken = st.res.take_queues(nc, n)?;
    st.taken_queues.extend(&taken);
    let hw: Vec<QueueRef> = taken
        .iter()
        .map(|&(e, q)| QueueRef::new(nc, DmaEngine(e), QueueId(q)))
        .collect();
    let mut pairs: Vec<Vec<PairTemplate>> = vec![Vec::new(); n];
    for &(engine, ip, block_id) in occ {
        let prog = kbin
            .engine(engine)
            .expect("triggers come from present engines");
        let block = prog
            .dma_blocks
            .iter()
            .find(|b| b.id == block_id && b.queue == *set_name)
            .ok_or_else(|| Error::invalid(format!("{}: trigger at instruction {ip} names block {block_id} of {set_name}, which does not exist", prog.json_member)))?;
        let lowered = match lower_block(block)? {
            Ok(p) => p,
            Err(op) => {
                st.model.unsupported_triggers.push((
                    engine,
                    ip as u32,
                    format!("DMA block {block_id} of {set_name} uses op {op:?}, which this platform cannot move"),
                ));
                continue;
            }
        };
        check_sb_reservations(kbin, &lowered)
            .map_err(|e| e.context(format!("DMA block {block_id} of {set_name}")))?;
        let mut plan = Vec::with_capacity(n);
        for (h, q) in hw.iter().enumerate() {
            let lo = lowered.len() * h / n;
            let hi = lowered.len() * (h + 1) / n;
            let mut count = (hi - lo) as u32;
            pairs[h].extend_from_slice(&lowered[lo..hi]);
            if let Some(s) = block.semaphore {
                let inc = target
                    .semaphore_addr(nc, SemaphoreId(s), SemWindow::Increment)
                    .ok_or_else(|| {
                        Error::invalid(format!(
                            "block {block_id} of {set_name}: semaphore {s} out of range"
                        ))
                    })?;
                pairs[h].push(PairTemplate {
                    src: Loc::Abs(st.model.one_word),
                    dst: Loc::Abs(inc),
                    len: 4,
                    convert: None,
                });
                count += 1;
            }
            plan.push((*q, count));
        }
        plans[engine.index()].insert(ip, plan);
    }
    init_rings(st, kbin, set_name, &hw, pairs)
}

/// Allocates, fills (unless they carry IO addresses, which execution binds) and initialises
/// the TX and RX rings of the set's hardware queues `hw`, one per entry of `pairs`.
fn init_rings(
    st: &mut Staging<'_>,
    kbin: &Kbin,
    set_name: &String,
    hw: &[QueueRef],
    mut pairs: Vec<Vec<PairTemplate>>,
) -> Result<()> {
    let is_io = |v: u32| st_io(kbin, v);
    for (h, q) in hw.iter().enumerate() {
        let p = std::mem::take(&mut pairs[h]);
        let ring_len = (p.len() as u32)
            .next_multiple_of(16)
            .max(RingGeometry::MIN_DESCS);
        let geom = RingGeometry::new(ring_len)
            .map_err(|e| Error::invalid(format!("queue set {set_name}: {e}")))?;
        let bytes = geom.byte_size();
        let tx = st.alloc(bytes, 0, MemAllocCategory::DmaRingsDevice, "a TX ring")?;
        let rx = st.alloc(bytes, 0, MemAllocCategory::DmaRingsDevice, "an RX ring")?;
        let dynamic = p.iter().any(|t| t.touches(&is_io));
        let mut hq = HwQueue {
            set: set_name.clone(),
            queue: *q,
            tx,
            rx,
            ring_len,
            pairs: p,
            dynamic,
            io_vars: Vec::new(),
        };
        hq.io_vars = io_vars(&hq, &is_io);
        if !dynamic {
            let var_pa = &st.model.var_pa;
            write_ring(st.hal, &hq, &|v| var_pa.get(&v).copied())?;
        }
        st.hal.dma_queue_init(
            *q,
            RingSpec {
                handle: hq.tx.0,
                count: ring_len,
            },
            RingSpec {
                handle: hq.rx.0,
                count: ring_len,
            },
        )?;
        st.model.queues.push(hq);
    }
    Ok(())
}

/// The instruction blocks (S5 relocation happens here): each engine's stream translated with
/// the var addresses and trigger plans, uploaded into one code allocation.
fn upload_code(
    st: &mut Staging<'_>,
    target: Target,
    kbin: &Kbin,
    plans: &[BTreeMap<usize, TriggerPlan>; 5],
) -> Result<()> {
    let var_pa = st.model.var_pa.clone();
    let mut streams = Vec::new();
    for prog in &kbin.engines {
        let (recs, patches) = translate(
            target,
            kbin.encoding,
            &prog.records,
            &plans[prog.engine.index()],
            &|v| var_pa.get(&v).copied(),
            st.model.dge.as_ref(),
        )
        .map_err(|e| e.context(&prog.bin_member))?;
        streams.push((prog.engine, recs, patches));
    }
    let total: usize = streams.iter().map(|s| s.1.len() * RECORD_SIZE).sum();
    if total > 0 {
        let (code, pa) = st.alloc(
            total as u64,
            0,
            MemAllocCategory::CodeDevice,
            "instruction blocks",
        )?;
        let mut buf = Vec::with_capacity(total);
        for (engine, recs, patches) in streams {
            st.model.engine_addr[engine.index()] =
                Some(DeviceAddr::new(pa.raw() + buf.len() as u64));
            st.model.engine_len[engine.index()] = recs.len() as u32;
            st.model.patches[engine.index()] = patches;
            for r in &recs {
                buf.extend_from_slice(r.as_bytes());
            }
        }
        st.hal.copy_to_device(code, 0, &buf)?;
    }
    Ok(())
}

/// The SBUF bytes `runtime_statebuffer_reservation` keeps for the runtime (e.g. the trn2
/// `evtaccel` words at the end of each partition) must not be touched by a model's DMA.
fn check_sb_reservations(kbin: &Kbin, pairs: &[PairTemplate]) -> Result<()> {
    const STRIDE: u64 = 256 << 10;
    let Some(sb) = kbin
        .vars
        .values()
        .find(|v| v.kind == VarKind::StateBuffer)
        .map(|v| v.var_id)
    else {
        return Ok(());
    };
    for t in pairs {
        for (loc, len) in [(t.src, u64::from(t.len)), (t.dst, t.dst_len())] {
            let Loc::Var { var_id, offset } = loc else {
                continue;
            };
            if var_id != sb {
                continue;
            }
            let (p, start) = (offset / STRIDE, offset % STRIDE);
            let end = start + len;
            for r in &kbin.sb_reservations {
                let parts = r.base_partition as u64..r.base_partition as u64 + r.partitions as u64;
                let (rs, re) = (r.offset as u64, r.offset as u64 + r.size as u64);
                if parts.contains(&p) && start < re && rs < end {
                    return Err(Error::invalid(format!(
                        "touches SB partition {p} bytes {start:#x}..{end:#x}, which runtime_statebuffer_reservation ({}) reserves at {rs:#x}..{re:#x}",
                        r.kind
                    )));
                }
            }
        }
    }
    Ok(())
}

fn st_io(kbin: &Kbin, v: u32) -> bool {
    matches!(
        kbin.vars.get(&v).map(|x| &x.kind),
        Some(VarKind::Input | VarKind::Output)
    )
}

fn write_u64(st: &Staging<'_>, at: DeviceAddr, value: u64) -> Result<()> {
    // The pointer var lives in the scratch region: find its allocation by address.
    for h in &st.model.allocations {
        let info = st.hal.mem_info(*h)?;
        if let Some(off) = at.offset_from(info.pa) {
            if off + 8 <= info.size {
                st.hal.copy_to_device(*h, off, &value.to_le_bytes())?;
                return Ok(());
            }
        }
    }
    Err(Error::failure(format!(
        "no allocation holds pointer var at {at}"
    )))
}
