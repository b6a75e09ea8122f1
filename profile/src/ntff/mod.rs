//! The NTFF reader: a device trace (`.ntff`, format versions 5 and 6) read into its
//! subgraphs, engine streams, executed instructions, DMA packets and events
//! ([`NtffTrace`]), the calibration figures of its NEFF region ([`Calibration`]), and the
//! neuron-profile view of the same run ([`NtffTrace::to_profile`]). The facts this relies on
//! and where they come from: docs/profile.md §3.
//!
//! Every offset, length and count the file states is checked before it is used: a truncated
//! or corrupted trace is an [`NtffError`] naming the structure at fault, never a panic.

mod proto;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::Path;

use nrt_hal::EngineKind;

use crate::error::{NtffError, ProfileError};
use crate::model::{
    engine_names, DmaPacket, Instruction, Metadata, ModelInfo, NeffHeader, Profile, QueueType,
    SemaphoreUpdate, Summary,
};
use crate::summary::{cycles, union_len, InstrSpan, PacketSpan, Spans};
use proto::Message;

/// Offset of the protobuf message (docs/profile.md §3.1).
const MESSAGE_AT: usize = 0x80;
/// Bytes of one trace record.
const RECORD: usize = 16;
/// Bytes of one engine instruction record in a stream blob.
const INSTR_BYTES: usize = 64;
/// The queue set of the runtime's own DMA queues.
pub const RUNTIME_QUEUE_SET: u8 = 14;

/// Opcode byte → the name neuron-profile prints (docs/profile.md §3.3).
pub fn opcode_name(op: u8) -> Option<&'static str> {
    Some(match op {
        0x01 => "LDWEIGHTS",
        0x02 => "MATMUL",
        0x21 => "ACTIVATE",
        0x23 => "ACT_TABLE_LOAD",
        0x42 => "TENSOR_REDUCE",
        0x43 => "TENSOR_SCALAR",
        0x46 => "COPY",
        0x47 => "CAST",
        0x48 => "RECIPROCAL",
        0xA0 => "EVENT_SEMAPHORE",
        0xA2 => "DRAIN",
        0xA4 => "NOP",
        0xA5 => "WRITE",
        0xA6 => "NOTIFY",
        0xA9 => "COMPARE_BRANCH",
        0xAA => "TENSOR_LOAD",
        0xB0 => "EVENT_SEMAPHORE_RANGE_CLEAR",
        0xB1 => "SET_ORDERING_MODE",
        0xB8 => "DMA_DIRECT2D",
        _ => return None,
    })
}

/// The profile name of an opcode byte: its neuron-profile name, else `0xNN`.
pub fn opcode_label(op: Option<u8>) -> String {
    match op {
        Some(o) => opcode_name(o).map_or_else(|| format!("0x{o:02X}"), str::to_string),
        None => "UNKNOWN".to_string(),
    }
}

/// Which part of an engine's stream an executed instruction belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Region {
    /// Outside the stored stream: the runtime's init program.
    Init,
    /// The runtime's instructions before the NEFF's.
    Preamble,
    /// The NEFF's own instructions (for segmented layouts: any segment between body and
    /// postamble).
    Neff,
    /// The runtime's instructions after the NEFF's.
    Postamble,
}

/// Where the NEFF's records sit in a runtime-built stream (record indices; docs/profile.md
/// §3.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Index of the NEFF's record 0 (after the preamble).
    pub neff_first: u64,
    /// Index of the NEFF's record 2 (the body start).
    pub body_start: u64,
    /// Index of the first postamble record.
    pub postamble_start: u64,
    /// Postamble records.
    pub postamble_len: u64,
    /// Segment entries between body and postamble (version 6, dynamic DMA).
    pub extra_segments: usize,
}

impl Layout {
    /// The region of the stream record `index`.
    pub fn region(&self, index: u64) -> Region {
        if index == self.neff_first || (self.body_start..self.postamble_start).contains(&index) {
            Region::Neff
        } else if index >= self.postamble_start {
            Region::Postamble
        } else {
            Region::Preamble
        }
    }
}

/// One engine's instruction stream as the runtime built it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stream {
    /// The engine.
    pub engine: EngineKind,
    /// Device address of record 0.
    pub address: u64,
    /// The records, 64 bytes each.
    pub blob: Vec<u8>,
    /// Where the NEFF's records are, if the trace says.
    pub layout: Option<Layout>,
}

impl Stream {
    /// The 21-bit PC of record 0.
    pub fn base_pc(&self) -> u32 {
        ((self.address >> 6) & 0x1F_FFFF) as u32
    }

    /// Records in the blob.
    pub fn len(&self) -> u64 {
        (self.blob.len() / INSTR_BYTES) as u64
    }

    /// Whether the blob is empty.
    pub fn is_empty(&self) -> bool {
        self.blob.len() < INSTR_BYTES
    }

    /// The record index of a traced PC, if it lies in the blob.
    pub fn index_of(&self, pc: u32) -> Option<u64> {
        let i = u64::from(pc.wrapping_sub(self.base_pc()) & 0x1F_FFFF);
        (i < self.len()).then_some(i)
    }

    /// The opcode byte of record `index`.
    pub fn opcode(&self, index: u64) -> Option<u8> {
        let at = usize::try_from(index).ok()?.checked_mul(INSTR_BYTES)?;
        self.blob.get(at).copied()
    }
}

/// A DMA hardware queue of a subgraph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueInfo {
    /// Hardware queue id (64–79 on the first core).
    pub hw_queue: u64,
    /// Queue-set index (14: the runtime's).
    pub queue_set: u64,
    /// Kind (3 IO, 2 spill/data; 0 unknown).
    pub kind: u64,
    /// Queue-set name (`qPoolIO0`, `qSPDynamicHW`, …).
    pub name: String,
}

/// One executed instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracedInstruction {
    /// The engine.
    pub engine: EngineKind,
    /// The traced 21-bit PC.
    pub pc: u32,
    /// Its record index in the engine's stored stream, if it lies there.
    pub index: Option<u64>,
    /// The record's opcode byte, if it lies in the stream.
    pub opcode: Option<u8>,
    /// The stream region.
    pub region: Region,
    /// Start, ps (the trace's time base).
    pub start_ps: u64,
    /// End, ps (`None`: no end record, e.g. the final wait).
    pub end_ps: Option<u64>,
}

/// One DMA packet (three records: start, data written, completion).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracedPacket {
    /// Queue-set index.
    pub queue_set: u8,
    /// Queue within the set (hardware queue − 64).
    pub queue: u8,
    /// Start, ps.
    pub start_ps: u64,
    /// Data written, ps (`None`: no such record).
    pub write_ps: Option<u64>,
    /// Completion, ps.
    pub done_ps: Option<u64>,
    /// The size field: bytes in bits 3–23, flags in bits 0–2 (4: last packet of a block).
    pub size_field: u32,
    /// The 16-bit tag (`crc`).
    pub crc: u16,
}

impl TracedPacket {
    /// Bytes written.
    pub fn bytes(&self) -> u64 {
        u64::from(self.size_field & !7)
    }

    /// Whether this packet ends a DMA block (flag 4).
    pub fn ends_block(&self) -> bool {
        self.size_field & 4 != 0
    }

    /// `write_size` as neuron-profile reports it: the bytes, or 4 for a semaphore-only write.
    pub fn write_size(&self) -> u64 {
        if self.bytes() == 0 && self.ends_block() {
            4
        } else {
            self.bytes()
        }
    }
}

/// One event record (semaphore or notification update).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TracedEvent {
    /// Semaphore id (byte 0).
    pub id: u8,
    /// Whether byte 1 marks a semaphore operation.
    pub semaphore: bool,
    /// Operation type (byte 2: 0xF3 increment, 0xF9 set, …).
    pub kind: u8,
    /// Source (1–5 engines, 6 DMA).
    pub source: u8,
    /// Value after the update.
    pub value: u32,
    /// Time, ps.
    pub time_ps: u64,
}

/// One subgraph (physical core) of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subgraph {
    /// `sg00`, `sg01`.
    pub name: String,
    /// Core id (field 3).
    pub core: u64,
    /// Its total time, ps (for `sg00`: the summary's `total_time`).
    pub total_time_ps: u64,
    /// The engine streams.
    pub streams: Vec<Stream>,
    /// The DMA queues.
    pub queues: Vec<QueueInfo>,
    /// Executed instructions, in trace order.
    pub instructions: Vec<TracedInstruction>,
    /// DMA packets, in start order per queue.
    pub packets: Vec<TracedPacket>,
    /// Events.
    pub events: Vec<TracedEvent>,
    /// Instruction records that were not decoded: other record kinds, an engine outside
    /// 1–5, or an end with no start.
    pub skipped_records: u64,
}

impl Subgraph {
    /// The stream of engine `e`.
    pub fn stream(&self, e: EngineKind) -> Option<&Stream> {
        self.streams.iter().find(|s| s.engine == e)
    }

    /// The queue type of queue set `qs` (docs/profile.md §3.4).
    pub fn queue_type(&self, qs: u8) -> QueueType {
        if qs == RUNTIME_QUEUE_SET {
            return QueueType::Instruction;
        }
        match self.queues.iter().find(|q| q.queue_set == u64::from(qs)) {
            Some(q) if q.name.ends_with("DynamicHW") => QueueType::HardwareDynamic,
            Some(q) if q.name.ends_with("Dynamic") => QueueType::SoftwareDynamic,
            _ => QueueType::Static,
        }
    }

    /// The packets grouped into DMA blocks per (queue set, queue): each block ends at a
    /// packet with flag 4 (a trailing unfinished block is a block too).
    fn blocks(&self) -> Vec<Vec<&TracedPacket>> {
        let mut per: BTreeMap<(u8, u8), Vec<Vec<&TracedPacket>>> = BTreeMap::new();
        for p in &self.packets {
            let blocks = per.entry((p.queue_set, p.queue)).or_default();
            match blocks.last_mut() {
                Some(b) if !b.last().is_some_and(|l| l.ends_block()) => b.push(p),
                _ => blocks.push(vec![p]),
            }
        }
        per.into_values().flatten().collect()
    }
}

/// The profiled window (ps, the trace's time base).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Start.
    pub start_ps: u64,
    /// End.
    pub end_ps: u64,
    /// Whether the trace states it (version 6); else derived (docs/profile.md §3.5).
    pub stated: bool,
}

impl Window {
    fn holds(&self, s: u64, e: u64) -> bool {
        self.start_ps <= s && e <= self.end_ps
    }
}

/// A decoded NTFF trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NtffTrace {
    /// Format version (byte 0): 5 or 6.
    pub version: u8,
    /// The NEFF's file name (field 1).
    pub neff_name: String,
    /// Instance type (field 9).
    pub instance_type: String,
    /// Runtime version, `2.30.51 (faafe)` (field 8).
    pub runtime_version: String,
    /// Driver version (field 11).
    pub driver_version: String,
    /// Collectives version (field 12).
    pub collectives_version: String,
    /// The profiled window.
    pub window: Window,
    /// The subgraphs, `sg00` first.
    pub subgraphs: Vec<Subgraph>,
}

/// Per-engine figures of the calibration table (docs/profile.md §3.6).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EngineCalibration {
    /// Instructions traced (start records), runtime's included.
    pub n_all: u64,
    /// Instructions of the NEFF region traced.
    pub n_neff: u64,
    /// Σ(end − start) of NEFF-region instructions, ns.
    pub busy_ns: f64,
    /// The same without EVENT_SEMAPHORE (0xA0) and NOP (0xA4) waits, ns.
    pub nowait_ns: f64,
}

/// The calibration figures of `sg00` (docs/profile.md §3.6).
#[derive(Debug, Clone, PartialEq)]
pub struct Calibration {
    /// The run's total time, ns (`sg00` field 14).
    pub total_time_ns: f64,
    /// First NEFF instruction start → last NEFF instruction end, all engines, ns.
    pub neff_span_ns: f64,
    /// Per engine, indexed by [`EngineKind::index`].
    pub engines: [EngineCalibration; 5],
    /// DMA packets of the NEFF's queue sets (not 14).
    pub dma_data_packets: u64,
    /// Their write-side bytes.
    pub dma_data_bytes: u64,
    /// DMA blocks of the NEFF's queue sets: per queue set the most blocks any queue has.
    pub dma_data_blocks: u64,
    /// Union of the data packets' [start, written] intervals, ns.
    pub dma_data_active_ns: f64,
    /// The summary's `dma_active_time`, ns: version 5 by neuron-profile 2.25's rule, version
    /// 6 by 2.28's (docs/profile.md §3.6).
    pub dma_active_ns: f64,
}

fn truncated(what: &str, start: usize, end: u64, len: usize) -> NtffError {
    NtffError::Truncated {
        what: what.to_string(),
        start: start as u64,
        end,
        len: len as u64,
    }
}

fn invalid(what: impl Into<String>, problem: impl Into<String>) -> NtffError {
    NtffError::Invalid {
        what: what.into(),
        problem: problem.into(),
    }
}

fn version_text(m: Option<Message>) -> Result<String, NtffError> {
    let Some(m) = m else {
        return Ok(String::new());
    };
    let hash = m.text(5)?;
    Ok(format!(
        "{}.{}.{} ({})",
        m.uint_or0(1)?,
        m.uint_or0(2)?,
        m.uint_or0(3)?,
        hash.get(..5).unwrap_or(&hash)
    ))
}

/// A section of the data area: (type, byte range in the area).
type Section = (u64, std::ops::Range<usize>);

fn section(
    m: &Message,
    area_len: usize,
    area_at: usize,
    file_len: usize,
) -> Result<Option<Section>, NtffError> {
    let kind = m.uint_or0(1)?;
    let off = m.uint_or0(5)?;
    let size = m.uint_or0(6)?;
    if size == 0 {
        return Ok(None);
    }
    let end = off.saturating_add(size);
    if end > area_len as u64 {
        return Err(truncated(
            &format!("trace section (type {kind})"),
            area_at.saturating_add(off.min(usize::MAX as u64) as usize),
            (area_at as u64).saturating_add(end),
            file_len,
        ));
    }
    if size % RECORD as u64 != 0 {
        return Err(invalid(
            format!("trace section (type {kind})"),
            format!("size {size} is not a multiple of {RECORD}"),
        ));
    }
    Ok(Some((kind, off as usize..end as usize)))
}

fn u64_at(r: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(
        r[at..at + 8]
            .try_into()
            .expect("8 bytes of a 16-byte record"),
    )
}

impl NtffTrace {
    /// Reads a trace file; errors name the file.
    pub fn read_file(path: &Path) -> Result<NtffTrace, ProfileError> {
        let bytes = std::fs::read(path).map_err(|source| ProfileError::Io {
            path: path.display().to_string(),
            source,
        })?;
        NtffTrace::parse(&bytes).map_err(|e| ProfileError::from(e).in_file(path))
    }

    /// Decodes a trace.
    pub fn parse(b: &[u8]) -> Result<NtffTrace, NtffError> {
        let len = b.len();
        if len < MESSAGE_AT {
            return Err(truncated("header", 0, MESSAGE_AT as u64, len));
        }
        let version = b[0];
        if version != 5 && version != 6 {
            return Err(NtffError::Version(version));
        }
        let msg_len = usize::from(b[1]) | usize::from(b[2]) << 8 | usize::from(b[3]) << 16;
        let area_at = MESSAGE_AT + msg_len;
        if area_at > len {
            return Err(truncated(
                "protobuf message",
                MESSAGE_AT,
                area_at as u64,
                len,
            ));
        }
        let top = Message::parse(&b[MESSAGE_AT..area_at], MESSAGE_AT as u64, "top level")?;
        let area = &b[area_at..];

        let sgs = top
            .message(4, "field 4")?
            .ok_or_else(|| NtffError::Missing("the subgraph list (field 4)".into()))?
            .message(4, "field 4.4")?
            .ok_or_else(|| NtffError::Missing("the subgraph list (field 4.4)".into()))?
            .messages(1, "subgraph")?;
        if sgs.is_empty() {
            return Err(NtffError::Missing("subgraphs (field 4.4.1)".into()));
        }
        // Version 6 keeps one section table for all subgraphs, keyed by core id.
        let v6_sections = if version == 6 {
            top.messages(16, "section table entry")?
        } else {
            Vec::new()
        };

        let mut subgraphs = Vec::with_capacity(sgs.len());
        for sg in &sgs {
            let name = sg.text(1)?;
            let core = sg.uint_or0(3)?;
            let total_time_ps = sg.uint(14)?.ok_or_else(|| {
                NtffError::Missing(format!("total time of subgraph {name:?} (field 14)"))
            })?;
            // Streams.
            let mut streams = Vec::new();
            for s in sg.messages(4, "engine stream")? {
                let e = s.uint_or0(1)?;
                let engine = usize::try_from(e)
                    .ok()
                    .and_then(EngineKind::from_index)
                    .ok_or_else(|| invalid(format!("{name} stream engine"), format!("{e}")))?;
                let blob = if version == 5 {
                    s.bytes(3)?.unwrap_or_default().to_vec()
                } else {
                    let off = s.uint_or0(7)?;
                    let size = s.uint_or0(8)?;
                    let end = off.saturating_add(size);
                    if end > area.len() as u64 {
                        return Err(truncated(
                            &format!("{name} {engine:?} stream"),
                            area_at.saturating_add(off.min(len as u64) as usize),
                            (area_at as u64).saturating_add(end),
                            len,
                        ));
                    }
                    area[off as usize..end as usize].to_vec()
                };
                if blob.len() % INSTR_BYTES != 0 {
                    return Err(invalid(
                        format!("{name} {engine:?} stream"),
                        format!("{} bytes is not a whole number of records", blob.len()),
                    ));
                }
                streams.push(Stream {
                    engine,
                    address: s.uint_or0(2)?,
                    blob,
                    layout: None,
                });
            }
            for l in sg.messages(5, "stream layout")? {
                let e = l.uint_or0(1)?;
                let entries = l.messages(2, "stream layout entry")?;
                if entries.len() < 2 {
                    continue;
                }
                let last = &entries[entries.len() - 1];
                let layout = Layout {
                    neff_first: entries[0].uint_or0(2)?,
                    body_start: entries[1].uint_or0(1)? / INSTR_BYTES as u64,
                    postamble_start: last.uint_or0(1)? / INSTR_BYTES as u64,
                    postamble_len: last.uint_or0(2)?,
                    extra_segments: entries.len().saturating_sub(3),
                };
                if let Some(s) = streams.iter_mut().find(|s| s.engine.index() as u64 == e) {
                    s.layout = Some(layout);
                }
            }
            let mut queues = Vec::new();
            for q in sg.messages(7, "DMA queue")? {
                queues.push(QueueInfo {
                    hw_queue: q.uint_or0(1)?,
                    queue_set: q.uint_or0(2)?,
                    kind: q.uint_or0(3)?,
                    name: q.text(4)?,
                });
            }
            // Sections.
            let table = if version == 5 {
                sg.messages(6, "section table entry")?
            } else {
                let mut t = Vec::new();
                for s in &v6_sections {
                    if s.uint_or0(7)? == core && s.uint_or0(3)? != 2 {
                        t.push(s.clone());
                    }
                }
                t
            };
            let mut sub = Subgraph {
                name,
                core,
                total_time_ps,
                streams,
                queues,
                instructions: Vec::new(),
                packets: Vec::new(),
                events: Vec::new(),
                skipped_records: 0,
            };
            for entry in &table {
                let Some((kind, range)) = section(entry, area.len(), area_at, len)? else {
                    continue;
                };
                let records = area[range].chunks_exact(RECORD);
                match kind {
                    0 => decode_instructions(&mut sub, records),
                    1 => decode_events(&mut sub, records),
                    4 => decode_packets(&mut sub, records),
                    _ => {}
                }
            }
            subgraphs.push(sub);
        }

        let window = if version == 6 {
            let w = top
                .message(15, "profiled window")?
                .ok_or_else(|| NtffError::Missing("the profiled window (field 15)".into()))?;
            let start_ps = w
                .uint(2)?
                .ok_or_else(|| NtffError::Missing("window start (field 15.2)".into()))?;
            let end_ps = w
                .uint(3)?
                .ok_or_else(|| NtffError::Missing("window end (field 15.3)".into()))?;
            if end_ps < start_ps {
                return Err(invalid(
                    "profiled window",
                    format!("end {end_ps} before start {start_ps}"),
                ));
            }
            Window {
                start_ps,
                end_ps,
                stated: true,
            }
        } else {
            derive_window(&subgraphs[0])
        };

        Ok(NtffTrace {
            version,
            neff_name: top.text(1)?,
            instance_type: top.text(9)?,
            runtime_version: version_text(top.message(8, "runtime version")?)?,
            driver_version: version_text(top.message(11, "driver version")?)?,
            collectives_version: version_text(top.message(12, "collectives version")?)?,
            window,
            subgraphs,
        })
    }

    /// The calibration figures of `sg00` (docs/profile.md §3.6).
    pub fn calibration(&self) -> Calibration {
        let sg = &self.subgraphs[0];
        let mut engines = [EngineCalibration::default(); 5];
        let (mut first, mut last) = (u64::MAX, 0u64);
        for i in &sg.instructions {
            let c = &mut engines[i.engine.index()];
            c.n_all += 1;
            if i.region != Region::Neff {
                continue;
            }
            c.n_neff += 1;
            if let Some(end) = i.end_ps {
                let d = end.saturating_sub(i.start_ps) as f64 / 1000.0;
                c.busy_ns += d;
                if !matches!(i.opcode, Some(0xA0 | 0xA4)) {
                    c.nowait_ns += d;
                }
                first = first.min(i.start_ps);
                last = last.max(end);
            }
        }
        // Data packets: every one of the NEFF's queue sets (version 5); those kept in the
        // window (version 6).
        let kept = self.kept_packets(sg);
        let data: Vec<&TracedPacket> = if self.version == 5 {
            sg.packets
                .iter()
                .filter(|p| p.queue_set != RUNTIME_QUEUE_SET && p.write_ps.is_some())
                .collect()
        } else {
            kept.iter()
                .copied()
                .filter(|p| p.queue_set != RUNTIME_QUEUE_SET)
                .collect()
        };
        let mut blocks: BTreeMap<u8, BTreeMap<u8, u64>> = BTreeMap::new();
        for p in data.iter().filter(|p| p.ends_block()) {
            *blocks
                .entry(p.queue_set)
                .or_default()
                .entry(p.queue)
                .or_default() += 1;
        }
        let span = |ps: &[&TracedPacket]| {
            union_len(
                ps.iter()
                    .filter_map(|p| Some((p.start_ps, p.write_ps?)))
                    .collect(),
            ) as f64
                / 1000.0
        };
        let summary_packets: Vec<&TracedPacket> = if self.version == 5 {
            // neuron-profile 2.25: the NEFF's queue sets plus the runtime queue 5's
            // semaphore-only packets, no window.
            sg.packets
                .iter()
                .filter(|p| p.queue_set != RUNTIME_QUEUE_SET || (p.queue == 5 && p.size_field == 4))
                .collect()
        } else {
            self.subgraphs
                .iter()
                .flat_map(|s| self.kept_packets(s))
                .collect()
        };
        Calibration {
            total_time_ns: sg.total_time_ps as f64 / 1000.0,
            neff_span_ns: if last >= first {
                (last - first) as f64 / 1000.0
            } else {
                0.0
            },
            engines,
            dma_data_packets: data.len() as u64,
            dma_data_bytes: data.iter().map(|p| p.bytes()).sum(),
            dma_data_blocks: blocks
                .values()
                .map(|q| q.values().copied().max().unwrap_or(0))
                .sum(),
            dma_data_active_ns: span(&data),
            dma_active_ns: span(&summary_packets),
        }
    }

    /// The packets of `sg` kept in the window: whole blocks whose first packet starts in it
    /// and whose last packet's data is written in it (docs/profile.md §4.1).
    fn kept_packets<'a>(&self, sg: &'a Subgraph) -> Vec<&'a TracedPacket> {
        let w = self.window;
        sg.blocks()
            .into_iter()
            .filter(|b| {
                let first = b[0].start_ps;
                b.iter().all(|p| p.write_ps.is_some())
                    && b.iter()
                        .filter_map(|p| p.write_ps)
                        .max()
                        .is_some_and(|end| w.holds(first, end))
            })
            .flatten()
            .collect()
    }

    /// The run as neuron-profile 2.28 presents it: what lies in the profiled window, with
    /// its summary (docs/profile.md §4).
    pub fn to_profile(&self) -> Profile {
        let w = self.window;
        let rel = |t: u64| t - w.start_ps;
        // Instructions.
        let mut kept: Vec<(Instruction, u64, u64)> = Vec::new();
        for sg in &self.subgraphs {
            for i in &sg.instructions {
                let Some(end) = i.end_ps else { continue };
                if !w.holds(i.start_ps, end) {
                    continue;
                }
                let opcode = opcode_label(i.opcode);
                let subgroup = engine_names::subgroup(i.engine);
                let label = if i.engine == EngineKind::Pe && opcode == "MATMUL" {
                    "TensorMatrix"
                } else {
                    subgroup
                };
                kept.push((
                    Instruction {
                        crc_in: 65535,
                        crc_out: 65535,
                        duration: (end - i.start_ps) / 1000,
                        fully_qualified_subgraph: format!("/{}", sg.name),
                        label: label.into(),
                        opcode,
                        pc: i.index.unwrap_or(u64::from(i.pc)),
                        subgraph: sg.name.clone(),
                        subgroup: subgroup.into(),
                        timestamp: rel(i.start_ps) / 1000,
                        ..Instruction::default()
                    },
                    rel(i.start_ps),
                    rel(end),
                ));
            }
        }
        kept.sort_by(|a, b| (&a.0.subgraph, a.1, a.0.pc).cmp(&(&b.0.subgraph, b.1, b.0.pc)));
        for (n, k) in kept.iter_mut().enumerate() {
            k.0.id = n as u64 + 1;
        }
        let instruction: Vec<Instruction> = kept.iter().map(|k| k.0.clone()).collect();

        // DMA packets.
        let mut dma = Vec::new();
        let mut spans_pk: Vec<(usize, Option<QueueType>, u64, u64, u64)> = Vec::new();
        for (si, sg) in self.subgraphs.iter().enumerate() {
            let mut per: BTreeMap<(u8, u8), u64> = BTreeMap::new();
            let mut pk = self.kept_packets(sg);
            pk.sort_by_key(|p| (p.queue_set, p.queue, p.start_ps));
            for p in pk {
                let write = p.write_ps.expect("kept packets have a write record");
                let idx = per.entry((p.queue_set, p.queue)).or_insert(0);
                let engine = 64 + u64::from(p.queue);
                let qt = sg.queue_type(p.queue_set);
                let dur = write.saturating_sub(p.start_ps);
                let size = p.write_size();
                dma.push(DmaPacket {
                    aggregated: "no".into(),
                    crc: u64::from(p.crc),
                    dest: vec!["unknown".into()],
                    dma_engine: engine.to_string(),
                    dma_queue: p.queue_set.to_string(),
                    duplicate: "no".into(),
                    duration: dur / 1000,
                    id: dma.len() as u64 + 1,
                    is_cc_dma: "no".into(),
                    op: String::new(),
                    packet_aggregation_id: 0,
                    packet_idx: *idx,
                    queue_type: qt.as_str().into(),
                    read_size: size,
                    semaphore_id: "-1".into(),
                    source: vec![vec!["unknown".into()]],
                    subgraph: sg.name.clone(),
                    subgroup: format!("Q{}-E{engine}", p.queue_set),
                    timestamp: rel(p.start_ps) / 1000,
                    transfer_rate: if dur > 0 {
                        (size as f64 * 1e12 / dur as f64) as f32
                    } else {
                        0.0
                    },
                    transfer_size: size,
                    variable: "unknown".into(),
                    write_size: size,
                });
                spans_pk.push((si, Some(qt), size, rel(p.start_ps), rel(write)));
                *idx += 1;
            }
        }

        // Events.
        let mut events: BTreeMap<String, u64> = BTreeMap::new();
        let mut semaphore_update = Vec::new();
        for sg in &self.subgraphs {
            for e in &sg.events {
                if !w.holds(e.time_ps, e.time_ps) {
                    continue;
                }
                *events.entry(sg.name.clone()).or_insert(0) += 1;
                if e.semaphore && matches!(e.kind, 0xF3 | 0xF9 | 0xF4) {
                    semaphore_update.push(SemaphoreUpdate {
                        id: e.id.to_string(),
                        subgraph: sg.name.clone(),
                        timestamp: rel(e.time_ps) / 1000,
                        value: i64::from(e.value),
                    });
                }
            }
        }
        semaphore_update
            .sort_by(|a, b| (&a.subgraph, a.timestamp).cmp(&(&b.subgraph, b.timestamp)));

        let spans = Spans {
            window_ps: w.end_ps - w.start_ps,
            instrs: instruction
                .iter()
                .zip(&kept)
                .map(|(rec, k)| InstrSpan {
                    rec,
                    start_ps: k.1,
                    end_ps: k.2,
                })
                .collect(),
            packets: spans_pk
                .iter()
                .map(|&(si, kind, bytes, s, e)| PacketSpan {
                    subgraph: &self.subgraphs[si].name,
                    kind,
                    bytes,
                    start_ps: s,
                    end_ps: e,
                })
                .collect(),
            events,
            dma_hbm_bytes: (0, 0),
        };
        let base = Summary {
            collectives_version: self.collectives_version.clone(),
            driver_version: self.driver_version.clone(),
            runtime_version: self.runtime_version.clone(),
            instance_type: self.instance_type.clone(),
            profiler_version: concat!("nrt-profile ", env!("CARGO_PKG_VERSION"), " (NTFF reader)")
                .into(),
            nc_idx: self.subgraphs[0].core,
            ..Summary::default()
        };
        let summary = spans.summary(&base);
        let info_base: Vec<ModelInfo> = self
            .subgraphs
            .iter()
            .map(|sg| ModelInfo {
                sg_name: sg.name.clone(),
                nc_idx: sg.core,
                dma_queue_count: sg.queues.len() as u64,
                neuroncore_cycle_count: cycles(sg.total_time_ps),
                ..ModelInfo::default()
            })
            .collect();
        let window_ns = (w.end_ps - w.start_ps) / 1000;
        Profile {
            active_time: spans.active_time(),
            model_info: spans.model_info(&info_base),
            instruction,
            dma,
            semaphore_update,
            neff_header: vec![NeffHeader {
                network_name: self.neff_name.clone(),
                ..NeffHeader::default()
            }],
            metadata: vec![Metadata {
                is_simulation: false,
                ntff_version: u64::from(self.version),
                last_hw_timestamp: window_ns,
                last_ts: crate::builder::rfc3339(window_ns),
                num_subgraphs: self.subgraphs.len() as u64,
                num_physical_cores: self.subgraphs.len() as u64,
                vnc_enabled: self.subgraphs.len() > 1,
                total_point_count: summary.trace_count,
                ..Metadata::default()
            }],
            summary: vec![summary],
        }
    }
}

/// The window of a version-5 trace, which does not state it (docs/profile.md §3.5): from the
/// end of the PE instruction just before the PE's first COMPARE_BRANCH for `sg00`'s total
/// time; without such an instruction, the `total_time` that ends at the last PE end.
fn derive_window(sg: &Subgraph) -> Window {
    let total = sg.total_time_ps;
    let pe: Vec<&TracedInstruction> = sg
        .instructions
        .iter()
        .filter(|i| i.engine == EngineKind::Pe)
        .collect();
    let mut order: Vec<&TracedInstruction> = pe.clone();
    order.sort_by_key(|i| i.start_ps);
    let start = order
        .iter()
        .position(|i| i.opcode == Some(0xA9))
        .and_then(|k| k.checked_sub(1))
        .and_then(|k| order[k].end_ps)
        .unwrap_or_else(|| {
            let last = pe.iter().filter_map(|i| i.end_ps).max().unwrap_or(total);
            last.saturating_sub(total)
        });
    Window {
        start_ps: start,
        end_ps: start.saturating_add(total),
        stated: false,
    }
}

fn decode_instructions<'a>(sg: &mut Subgraph, records: impl Iterator<Item = &'a [u8]>) {
    let mut open: HashMap<(EngineKind, u32), usize> = HashMap::new();
    for r in records {
        let kind = r[3] & 3;
        let engine = usize::from((r[3] >> 2) & 0x1F)
            .checked_sub(1)
            .and_then(EngineKind::from_index);
        let (Some(engine), 0 | 1) = (engine, kind) else {
            sg.skipped_records += 1;
            continue;
        };
        let pc = u32::from(r[0]) | u32::from(r[1]) << 8 | u32::from(r[2] & 0x1F) << 16;
        let ts = u64_at(r, 8);
        if kind == 0 {
            let stream = sg.stream(engine);
            let index = stream.and_then(|s| s.index_of(pc));
            let opcode = index.and_then(|i| stream.and_then(|s| s.opcode(i)));
            let region = match (index, stream.and_then(|s| s.layout)) {
                (None, _) => Region::Init,
                (Some(i), Some(l)) => l.region(i),
                (Some(_), None) => Region::Preamble,
            };
            open.insert((engine, pc), sg.instructions.len());
            sg.instructions.push(TracedInstruction {
                engine,
                pc,
                index,
                opcode,
                region,
                start_ps: ts,
                end_ps: None,
            });
        } else {
            match open.remove(&(engine, pc)) {
                Some(k) => sg.instructions[k].end_ps = Some(ts.max(sg.instructions[k].start_ps)),
                None => sg.skipped_records += 1,
            }
        }
    }
}

fn decode_events<'a>(sg: &mut Subgraph, records: impl Iterator<Item = &'a [u8]>) {
    for r in records {
        sg.events.push(TracedEvent {
            id: r[0],
            semaphore: r[1] == 1,
            kind: r[2],
            source: (r[3] >> 2) & 0xF,
            value: u32::from_le_bytes([r[4], r[5], r[6], r[7]]),
            time_ps: u64_at(r, 8),
        });
    }
}

fn decode_packets<'a>(sg: &mut Subgraph, records: impl Iterator<Item = &'a [u8]>) {
    // Per queue, the packets waiting for their data-written and completion records (FIFO).
    let mut waiting: HashMap<(u8, u8), (VecDeque<usize>, VecDeque<usize>)> = HashMap::new();
    let first = sg.packets.len();
    for r in records {
        let key = (r[4] >> 4, r[3] & 0x7F);
        let ts = u64_at(r, 8);
        let q = waiting.entry(key).or_default();
        match r[4] & 0xF {
            1 => {
                q.0.push_back(sg.packets.len());
                q.1.push_back(sg.packets.len());
                sg.packets.push(TracedPacket {
                    queue_set: key.0,
                    queue: key.1,
                    start_ps: ts,
                    write_ps: None,
                    done_ps: None,
                    size_field: 0,
                    crc: 0,
                });
            }
            5 => {
                if let Some(k) = q.0.pop_front() {
                    let p = &mut sg.packets[k];
                    p.write_ps = Some(ts.max(p.start_ps));
                    p.size_field = u32::from(r[0]) | u32::from(r[1]) << 8 | u32::from(r[2]) << 16;
                    p.crc = u16::from_le_bytes([r[6], r[7]]);
                } else {
                    sg.skipped_records += 1;
                }
            }
            6 => {
                if let Some(k) = q.1.pop_front() {
                    sg.packets[k].done_ps = Some(ts);
                } else {
                    sg.skipped_records += 1;
                }
            }
            _ => sg.skipped_records += 1,
        }
    }
    sg.packets[first..].sort_by_key(|p| (p.queue_set, p.queue, p.start_ps));
}
