//! One execution of a loaded model as neuron-profile's JSON schema (docs/profile.md §5): the
//! device's instruction-level record of each core ([`ExecTrace`], from a backend that traces)
//! put together with what only the runtime knows — which NEFF record each executed
//! instruction came from (the patch tables of translation), the profiler's text of that record
//! (its names and the device addresses of its vars), which queue set each DMA queue serves and
//! how the profiler classes it — into an [`nrt_profile::Profile`].
//!
//! | profile | from |
//! |---|---|
//! | `instruction[]` | each traced instruction: a stream record is mapped back to its NEFF record (records a trigger or a DMA_DIRECT2D grew into are one instruction again), named and rendered from that record (`NeuronInstr::render`, platform records as the disassembler prints them); `pc` = the record index plus the engine's runtime offset the trace states; the runtime's own instructions as the trace names them |
//! | `dma[]` | each traced packet: a queue's by the queue set the model gave it (`dma_queue` = the set's index in the subgraph, `dma_engine` = 64 + the queue's place in the set), an engine-issued DMA's by the queue set owning its semaphore; queues the runtime keeps for itself are queue set 14 (`instruction`) |
//! | `semaphore_update[]` | each traced update: the number, or `S[n] (queue)` for a queue set's semaphore; the runtime's barrier semaphore as the device numbers it (2) |
//! | `summary[0]`, `active_time[]`, `model_info[]` | derived by `nrt_profile`'s rules over the profiled window (the first core's), both cores counted |
//! | `neff_header[0]` | the NEFF's header and features |
//!
//! Times are ns from the earliest launch of the model's cores (one time base: the cores of a
//! logical core share a clock).

use std::collections::BTreeMap;

use nrt_hal::isa::neuron::{decode_any, Decoded, Encoding, Names, NeuronInstr};
use nrt_hal::profile::{DmaSource, ExecTrace, Origin, RuntimePc};
use nrt_hal::target::reserved;
use nrt_hal::{DeviceAddr, QueueRef, Target};
use nrt_profile::{Instr, NeffHeader, Packet, Profile, ProfileBuilder, QueueType};

use crate::error::{Error, Result};
use crate::kbin::Kbin;
use crate::model::core_model::CoreModel;
use crate::model::LoadedModel;

/// The queue set the device gives the runtime's own queues.
pub const RUNTIME_QUEUE_SET: u32 = 14;

/// The number the device gives the runtime's barrier semaphore (the simulator keeps it in
/// [`reserved::SPARE`]).
pub const RUNTIME_BARRIER_SEMAPHORE: u32 = 2;

/// What a profile of one execution is made from.
#[derive(Debug)]
pub struct ExecutionRecord<'a> {
    /// The model.
    pub model: &'a LoadedModel,
    /// Per subgraph (the model's physical cores, in order), the device's trace of the
    /// execution.
    pub traces: &'a [ExecTrace],
    /// The device address of each input and output tensor bound, by name.
    pub io: &'a BTreeMap<String, DeviceAddr>,
    /// The generation it ran on.
    pub target: Target,
    /// `summary[0]` keys the caller knows (versions, instance type); the derived ones are
    /// computed.
    pub base: nrt_profile::Summary,
}

/// The profiler's class of a queue set, by its name (docs/profile.md §3.4).
pub fn queue_type(set: &str) -> QueueType {
    if set.ends_with("DynamicHW") {
        QueueType::HardwareDynamic
    } else if set.ends_with("Dynamic") {
        QueueType::SoftwareDynamic
    } else {
        QueueType::Static
    }
}

/// Per core: what a traced queue or semaphore belongs to.
struct Queues {
    /// Hardware queue → (queue-set index, place in the set, class).
    by_queue: BTreeMap<QueueRef, (u32, u32, QueueType)>,
    /// Semaphore → (queue-set index, class).
    by_semaphore: BTreeMap<u32, (u32, QueueType)>,
}

impl Queues {
    fn of(kbin: &Kbin, core: &CoreModel) -> Queues {
        let index: BTreeMap<&str, u32> = kbin
            .queue_sets
            .keys()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i as u32))
            .collect();
        let mut by_queue = BTreeMap::new();
        let mut place: BTreeMap<&str, u32> = BTreeMap::new();
        for q in &core.queues {
            let Some(&set) = index.get(q.set.as_str()) else {
                continue;
            };
            let p = place.entry(q.set.as_str()).or_insert(0);
            by_queue.insert(q.queue, (set, *p, queue_type(&q.set)));
            *p += 1;
        }
        let mut by_semaphore = BTreeMap::new();
        for (name, qs) in &kbin.queue_sets {
            for &s in &qs.semaphores {
                by_semaphore.insert(s, (index[name.as_str()], queue_type(name)));
            }
        }
        Queues {
            by_queue,
            by_semaphore,
        }
    }
}

/// The names a subgraph's records are rendered with: its semaphores and vars, with the device
/// address of every var this execution used.
fn names(kbin: &Kbin, core: &CoreModel, io: &BTreeMap<String, DeviceAddr>) -> Names {
    let mut n = kbin.names();
    for (&id, pa) in &core.var_pa {
        if let Ok(id) = u8::try_from(id) {
            n.place_var(id, pa.raw());
        }
    }
    for (&id, v) in &core.io_vars {
        if let (Ok(id), Some(pa)) = (u8::try_from(id), io.get(&v.name)) {
            n.place_var(id, pa.raw());
        }
    }
    n
}

/// The profiler's opcode name and operands text of a NEFF record of encoding `encoding`.
fn text(record: &nrt_hal::isa::Record, encoding: Encoding, names: &Names) -> (String, String) {
    if encoding == Encoding::Neuron {
        if let Ok(n) = NeuronInstr::decode(record) {
            // The runtime rewrites a DMA trigger into a WRITE of the queues' tail increments
            // (docs/profile.md §3.3): the device shows that.
            let name = if record.opcode() == 0xC1 {
                "WRITE"
            } else {
                n.opcode().name()
            };
            return (name.to_string(), n.render(names));
        }
    }
    match decode_any(record) {
        Ok(Decoded::Neuron(n)) => (n.opcode().name().to_string(), n.render(names)),
        Ok(Decoded::Platform(i)) => {
            let mnemonic = i.opcode().mnemonic();
            let full = i.to_string();
            let operands = full
                .strip_prefix(mnemonic)
                .unwrap_or(&full)
                .trim()
                .to_string();
            (mnemonic.to_string(), operands)
        }
        Err(_) => (format!("0x{:02X}", record.opcode()), String::new()),
    }
}

/// The text of a runtime instruction at `pc`: a branch back to the runtime's block at pc `t`,
/// written `label_id={back:t}` in the simulator's table, gets the profiler's label (the
/// distance in bytes, negative, as a u32).
fn runtime_operands(text: &str, pc: u64) -> String {
    let Some(at) = text.find("{back:") else {
        return text.to_string();
    };
    let rest = &text[at + 6..];
    let Some(end) = rest.find('}') else {
        return text.to_string();
    };
    let target: u64 = rest[..end].parse().unwrap_or(pc);
    let label = (pc.saturating_sub(target) * 64).wrapping_neg() as u32;
    format!("{}{label}{}", &text[..at], &rest[end + 1..])
}

fn neff_header(model: &LoadedModel) -> NeffHeader {
    let h = &model.parsed.neff.header;
    let features = model
        .parsed
        .model
        .subgraphs
        .first()
        .map(|k| k.features.join(", "))
        .unwrap_or_default();
    NeffHeader {
        build_version: String::from_utf8_lossy(&h.build_version)
            .trim_end_matches('\0')
            .to_string(),
        data_size: h.data_size.to_string(),
        enabled_features: features,
        hash: h.hash_hex(),
        header_size: h.header_size.to_string(),
        major_version: h.neff_version_major.to_string(),
        minor_version: h.neff_version_minor.to_string(),
        network_name: h.name.clone(),
        number_of_logical_neuroncores: h.num_tpb.max(1).to_string(),
        number_of_neuroncores_per_lnc: h.lnc_size.max(1).to_string(),
        package_version: h.pkg_version.to_string(),
        uuid: h.uuid_string().replace('-', ""),
    }
}

/// Builds the profile of one execution.
pub fn build(rec: &ExecutionRecord<'_>) -> Result<Profile> {
    let model = rec.model;
    let kbins = &model.parsed.model.subgraphs;
    let cores = model.cores.lock().unwrap_or_else(|p| p.into_inner());
    let cores = cores
        .as_ref()
        .ok_or_else(|| Error::invalid("the model is being unloaded"))?;
    if rec.traces.len() != cores.len() || rec.traces.is_empty() {
        return Err(Error::invalid(format!(
            "a profile of this model needs a trace of each of its {} cores ({} given)",
            cores.len(),
            rec.traces.len()
        )));
    }
    let first = &rec.traces[0];
    if first.clock_hz == 0 || first.window.1 <= first.window.0 {
        return Err(Error::invalid(
            "no traced execution: tracing must be on before the model executes",
        ));
    }
    let hz = first.clock_hz as f64;
    let origin = rec.traces.iter().map(|t| t.window.0).min().unwrap_or(0);
    let ns = |c: u64| c.saturating_sub(origin) as f64 * 1e9 / hz;

    let mut b = ProfileBuilder::new();
    b.neff_header = neff_header(model);
    b.base = nrt_profile::Summary {
        profiler_version: b.base.profiler_version.clone(),
        nc_idx: u64::from(model.tpbs[0].0),
        ..rec.base.clone()
    };
    b.metadata.pe_num_rows = 128;
    b.metadata.pe_num_cols = 128;
    let spec = rec.target.spec();
    b.metadata.pe_clock_freq = spec.clocks.pe as f64 / 1e9;
    b.metadata.pe_clock_others = spec.clocks.sp as f64 / 1e9;
    b.window(ns(first.window.0), ns(first.window.1));

    for (i, ((kbin, core), trace)) in kbins.iter().zip(cores).zip(rec.traces).enumerate() {
        let sg = format!("sg{i:02}");
        let names = names(kbin, core, rec.io);
        let queues = Queues::of(kbin, core);
        // Instructions: stream records mapped back to NEFF records, consecutive slots of one
        // record merged.
        let mut open: [Option<(u32, Instr)>; 5] = Default::default();
        let mut out: Vec<Instr> = Vec::with_capacity(trace.instructions.len());
        for t in &trace.instructions {
            let e = t.engine.index();
            let base = u64::from(trace.program_pc[e]);
            let records = kbin.engine(t.engine).map_or(&[][..], |p| &p.records[..]);
            let (start, end) = (ns(t.start), ns(t.end));
            match t.origin {
                Origin::Stream { index } => {
                    let neff_ip = core.patches[e].device_to_neff(index);
                    let Some(record) = records.get(neff_ip as usize) else {
                        continue; // the End the runtime appends
                    };
                    if let Some((ip, instr)) = open[e].as_mut() {
                        if *ip == neff_ip {
                            instr.end_ns = instr.end_ns.max(end);
                            continue;
                        }
                    }
                    let (opcode, operands) = text(record, kbin.encoding, &names);
                    let instr = Instr::new(
                        t.engine,
                        base + u64::from(neff_ip),
                        &opcode,
                        &operands,
                        start,
                        end,
                    )
                    .subgraph(&sg);
                    if let Some((_, done)) = open[e].replace((neff_ip, instr)) {
                        out.push(done);
                    }
                }
                Origin::Runtime(r) => {
                    if let Some((_, done)) = open[e].take() {
                        out.push(done);
                    }
                    let pc = match r.pc {
                        RuntimePc::At(pc) => u64::from(pc),
                        RuntimePc::After(k) => base + records.len() as u64 + u64::from(k),
                    };
                    let operands = runtime_operands(r.operands, pc);
                    out.push(
                        Instr::new(t.engine, pc, r.opcode, &operands, start, end).subgraph(&sg),
                    );
                }
            }
        }
        out.extend(open.into_iter().flatten().map(|(_, i)| i));
        for i in out {
            b.instruction(i);
        }
        for d in &trace.dma {
            let (set, queue, kind) = match d.source {
                DmaSource::Runtime { queue } => (RUNTIME_QUEUE_SET, queue, QueueType::Instruction),
                DmaSource::Queue(q) => match queues.by_queue.get(&q) {
                    Some(&(set, place, kind)) => (set, place, kind),
                    None => (RUNTIME_QUEUE_SET, q.queue.0, QueueType::Instruction),
                },
                DmaSource::Engine {
                    semaphore, lane, ..
                } => match queues.by_semaphore.get(&semaphore) {
                    Some(&(set, kind)) => (set, lane, kind),
                    None => (RUNTIME_QUEUE_SET, lane, QueueType::Instruction),
                },
            };
            b.dma_packet(
                Packet::new(kind, set, queue, d.bytes, ns(d.start), ns(d.end))
                    .hbm(d.hbm.0, d.hbm.1)
                    .subgraph(&sg),
            );
        }
        for s in &trace.semaphores {
            let id = if s.id == reserved::SPARE.0 {
                RUNTIME_BARRIER_SEMAPHORE.to_string()
            } else {
                match names.semaphore(s.id) {
                    Some(n) if queues.by_semaphore.contains_key(&s.id) => {
                        format!("S[{}] ({n})", s.id)
                    }
                    _ => s.id.to_string(),
                }
            };
            b.semaphore_update_in(&sg, &id, i64::from(s.value), ns(s.time));
        }
    }
    b.finish()
        .map_err(|e| Error::failure(format!("building the profile: {e}")))
}
