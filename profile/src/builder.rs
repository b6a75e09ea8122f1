//! The builder the simulator fills: instructions, DMA packets and semaphore updates with
//! their times in ns; [`ProfileBuilder::finish`] turns them into a [`Profile`] with every
//! derived key computed by neuron-profile's rules (docs/profile.md §4, §5).
//!
//! ```
//! use nrt_hal::EngineKind;
//! use nrt_profile::{Instr, Packet, ProfileBuilder, QueueType};
//!
//! let mut b = ProfileBuilder::new();
//! b.instruction(Instr::new(EngineKind::Pe, 66, "MATMUL", "acc_flags=3", 100.0, 180.0));
//! b.instruction(Instr::new(EngineKind::Act, 66, "EVENT_SEMAPHORE", "S[2]>=1", 0.0, 150.0));
//! b.dma_packet(Packet::new(QueueType::Static, 0, 3, 4096, 20.0, 90.0));
//! b.semaphore_update("2", 1, 95.0);
//! let profile = b.finish().unwrap();
//! let s = profile.summary().unwrap();
//! assert_eq!(s.tensor_engine_instruction_count, 1);
//! assert!((s.tensor_engine_active_time - 80e-9).abs() < 1e-15);
//! assert_eq!(s.scalar_engine_active_time, 0.0); // waits are not busy time
//! assert!(profile.metadata().unwrap().is_simulation);
//! ```

use std::collections::BTreeMap;

use nrt_hal::EngineKind;

use crate::error::ProfileError;
use crate::model::{
    engine_names, DmaPacket, Instruction, Metadata, ModelInfo, NeffHeader, Profile, QueueType,
    SemaphoreUpdate, Summary,
};
use crate::summary::{cycles, InstrSpan, PacketSpan, Spans};

/// The subgraph name of the first physical core.
pub const SG00: &str = "sg00";

/// One executed instruction for the builder: its JSON record (engine, pc, opcode, operands
/// and any optional counters) and its exact start and end, ns from the execution start.
#[derive(Debug, Clone, PartialEq)]
pub struct Instr {
    /// The record; `timestamp`, `duration`, `id`, `label` and the subgraph path are set by
    /// [`ProfileBuilder::finish`].
    pub record: Instruction,
    /// Start, ns.
    pub start_ns: f64,
    /// End, ns.
    pub end_ns: f64,
}

impl Instr {
    /// An instruction of `engine` at `pc` in subgraph `sg00`.
    pub fn new(
        engine: EngineKind,
        pc: u64,
        opcode: &str,
        operands: &str,
        start_ns: f64,
        end_ns: f64,
    ) -> Instr {
        Instr {
            record: Instruction {
                subgroup: engine_names::subgroup(engine).into(),
                pc,
                opcode: opcode.into(),
                operands: operands.into(),
                subgraph: SG00.into(),
                crc_in: 65535,
                crc_out: 65535,
                ..Instruction::default()
            },
            start_ns,
            end_ns,
        }
    }

    /// In subgraph `name` (`sg01` for the second core of a logical core).
    pub fn subgraph(mut self, name: &str) -> Instr {
        self.record.subgraph = name.into();
        self
    }

    /// Sets any other field of the record (counters, compiler names, …).
    pub fn with(mut self, f: impl FnOnce(&mut Instruction)) -> Instr {
        f(&mut self.record);
        self
    }
}

/// One DMA packet for the builder.
#[derive(Debug, Clone, PartialEq)]
pub struct Packet {
    /// `sg00`, `sg01`.
    pub subgraph: String,
    /// The queue kind.
    pub queue_type: QueueType,
    /// Queue-set index (`dma_queue`; 14 for the runtime's own queues on the device).
    pub queue_set: u32,
    /// Queue within the set, 0–15 (`dma_engine` = 64 + queue).
    pub queue: u32,
    /// Bytes written.
    pub write_size: u64,
    /// Bytes read (equal to `write_size` unless set).
    pub read_size: Option<u64>,
    /// HBM bytes this packet read and wrote, added to the summary's `hbm_*_bytes`.
    pub hbm_bytes: (u64, u64),
    /// Start, ns.
    pub start_ns: f64,
    /// Data written, ns.
    pub end_ns: f64,
}

impl Packet {
    /// A packet of `bytes` on queue `queue` of queue set `queue_set`, in `sg00`.
    pub fn new(
        queue_type: QueueType,
        queue_set: u32,
        queue: u32,
        bytes: u64,
        start_ns: f64,
        end_ns: f64,
    ) -> Packet {
        Packet {
            subgraph: SG00.into(),
            queue_type,
            queue_set,
            queue,
            write_size: bytes,
            read_size: None,
            hbm_bytes: (0, 0),
            start_ns,
            end_ns,
        }
    }

    /// In subgraph `name`.
    pub fn subgraph(mut self, name: &str) -> Packet {
        self.subgraph = name.into();
        self
    }

    /// Counts `read` and `written` HBM bytes for this packet.
    pub fn hbm(mut self, read: u64, written: u64) -> Packet {
        self.hbm_bytes = (read, written);
        self
    }
}

/// Collects one execution's records and builds its [`Profile`].
#[derive(Debug, Clone, Default)]
pub struct ProfileBuilder {
    /// `neff_header[0]`, copied as given.
    pub neff_header: NeffHeader,
    /// The summary keys the builder does not derive (versions, instance type, NEFF sizes,
    /// `nc_idx`, …); the derived ones are overwritten by [`ProfileBuilder::finish`].
    pub base: Summary,
    /// `metadata[0]`; `is_simulation`, the time stamps and the counts are set by `finish`.
    pub metadata: Metadata,
    instrs: Vec<Instr>,
    packets: Vec<Packet>,
    sems: Vec<(SemaphoreUpdate, f64)>,
    other_events: Vec<(String, f64)>,
    window: Option<(f64, f64)>,
}

fn ps(ns: f64) -> u64 {
    (ns * 1000.0).round() as u64
}

fn check_time(what: &dyn Fn() -> String, start: f64, end: f64) -> Result<(), ProfileError> {
    let bad = |why: String| Err(ProfileError::Builder(format!("{}: {why}", what())));
    if !start.is_finite() || !end.is_finite() {
        return bad(format!("time is not finite (start {start}, end {end})"));
    }
    if start < 0.0 {
        return bad(format!("start {start} ns is negative"));
    }
    if end < start {
        return bad(format!("end {end} ns is before start {start} ns"));
    }
    if end > 1.8e13 {
        return bad(format!("end {end} ns is beyond the picosecond range"));
    }
    Ok(())
}

/// RFC 3339 text of `ns` after the Unix epoch, as Go prints it (fraction without trailing
/// zeros). Runs are shorter than a day.
pub(crate) fn rfc3339(ns: u64) -> String {
    let secs = ns / 1_000_000_000;
    let frac = ns % 1_000_000_000;
    let (h, m, s) = (secs / 3600 % 24, secs / 60 % 60, secs % 60);
    let mut t = format!("1970-01-01T{h:02}:{m:02}:{s:02}");
    if frac != 0 {
        let f = format!("{frac:09}");
        t.push('.');
        t.push_str(f.trim_end_matches('0'));
    }
    t.push('Z');
    t
}

impl ProfileBuilder {
    /// An empty builder (`sg00`, no records).
    pub fn new() -> ProfileBuilder {
        ProfileBuilder {
            base: Summary {
                profiler_version: concat!("nrt-emu ", env!("CARGO_PKG_VERSION")).into(),
                ..Summary::default()
            },
            ..ProfileBuilder::default()
        }
    }

    /// Adds an executed instruction.
    pub fn instruction(&mut self, i: Instr) -> &mut Self {
        self.instrs.push(i);
        self
    }

    /// Adds a DMA packet.
    pub fn dma_packet(&mut self, p: Packet) -> &mut Self {
        self.packets.push(p);
        self
    }

    /// Adds a semaphore update in `sg00`: semaphore `id` reached `value` at `time_ns`.
    pub fn semaphore_update(&mut self, id: &str, value: i64, time_ns: f64) -> &mut Self {
        self.semaphore_update_in(SG00, id, value, time_ns)
    }

    /// Adds a semaphore update in subgraph `subgraph`.
    pub fn semaphore_update_in(
        &mut self,
        subgraph: &str,
        id: &str,
        value: i64,
        time_ns: f64,
    ) -> &mut Self {
        self.sems.push((
            SemaphoreUpdate {
                id: id.into(),
                subgraph: subgraph.into(),
                timestamp: 0,
                value,
            },
            time_ns,
        ));
        self
    }

    /// Counts an event that is not a semaphore update (a notification) at `time_ns`: it
    /// enters `event_count` and `trace_count` but no array.
    pub fn event(&mut self, subgraph: &str, time_ns: f64) -> &mut Self {
        self.other_events.push((subgraph.into(), time_ns));
        self
    }

    /// Sets the profiled window (default: from 0 to the latest end of any record).
    pub fn window(&mut self, start_ns: f64, end_ns: f64) -> &mut Self {
        self.window = Some((start_ns, end_ns));
        self
    }

    /// Builds the profile: checks every record's times, keeps what lies in the window (the
    /// rules of docs/profile.md §4.1), orders the arrays, floors times to ns and derives
    /// `summary[0]`, `active_time[]` and `model_info[]`.
    pub fn finish(&self) -> Result<Profile, ProfileError> {
        for (k, i) in self.instrs.iter().enumerate() {
            let r = &i.record;
            check_time(
                &|| format!("instruction {k} ({} pc {} {})", r.subgroup, r.pc, r.opcode),
                i.start_ns,
                i.end_ns,
            )?;
            if r.engine().is_none() {
                return Err(ProfileError::Builder(format!(
                    "instruction {k}: subgroup {:?} is not an engine",
                    r.subgroup
                )));
            }
        }
        for (k, p) in self.packets.iter().enumerate() {
            check_time(
                &|| {
                    format!(
                        "DMA packet {k} (queue set {} queue {})",
                        p.queue_set, p.queue
                    )
                },
                p.start_ns,
                p.end_ns,
            )?;
        }
        for (k, (u, t)) in self.sems.iter().enumerate() {
            check_time(&|| format!("semaphore update {k} ({})", u.id), *t, *t)?;
        }
        for (k, (_, t)) in self.other_events.iter().enumerate() {
            check_time(&|| format!("event {k}"), *t, *t)?;
        }
        let (ws, we) = match self.window {
            Some((s, e)) => {
                check_time(&|| "window".to_string(), s, e)?;
                (ps(s), ps(e))
            }
            None => {
                let end = self
                    .instrs
                    .iter()
                    .map(|i| ps(i.end_ns))
                    .chain(self.packets.iter().map(|p| ps(p.end_ns)))
                    .chain(self.sems.iter().map(|(_, t)| ps(*t)))
                    .chain(self.other_events.iter().map(|(_, t)| ps(*t)))
                    .max()
                    .unwrap_or(0);
                (0, end)
            }
        };
        let inside = |s: u64, e: u64| ws <= s && e <= we;

        // Instructions.
        let mut kept: Vec<(Instruction, u64, u64)> = self
            .instrs
            .iter()
            .filter_map(|i| {
                let (s, e) = (ps(i.start_ns), ps(i.end_ns));
                inside(s, e).then(|| (i.record.clone(), s - ws, e - ws))
            })
            .collect();
        kept.sort_by(|a, b| {
            (
                &a.0.subgraph,
                a.1,
                a.0.engine().map(EngineKind::index),
                a.0.pc,
            )
                .cmp(&(
                    &b.0.subgraph,
                    b.1,
                    b.0.engine().map(EngineKind::index),
                    b.0.pc,
                ))
        });
        for (n, (r, s, e)) in kept.iter_mut().enumerate() {
            r.id = n as u64 + 1;
            r.timestamp = *s / 1000;
            r.duration = (*e - *s) / 1000;
            r.fully_qualified_subgraph = format!("/{}", r.subgraph);
            r.label = if r.engine() == Some(EngineKind::Pe) && r.opcode == "MATMUL" {
                "TensorMatrix".into()
            } else {
                r.subgroup.clone()
            };
        }
        let instruction: Vec<Instruction> = kept.iter().map(|(r, _, _)| r.clone()).collect();

        // DMA packets: per queue in start order, numbered within the queue.
        let mut pk: Vec<(&Packet, u64, u64)> = self
            .packets
            .iter()
            .filter_map(|p| {
                let (s, e) = (ps(p.start_ns), ps(p.end_ns));
                inside(s, e).then(|| (p, s - ws, e - ws))
            })
            .collect();
        pk.sort_by(|a, b| {
            (&a.0.subgraph, a.0.queue_set, a.0.queue, a.1).cmp(&(
                &b.0.subgraph,
                b.0.queue_set,
                b.0.queue,
                b.1,
            ))
        });
        let mut idx: BTreeMap<(&str, u32, u32), u64> = BTreeMap::new();
        let mut dma = Vec::with_capacity(pk.len());
        for (n, (p, s, e)) in pk.iter().enumerate() {
            let slot = idx
                .entry((p.subgraph.as_str(), p.queue_set, p.queue))
                .or_insert(0);
            let engine = 64 + u64::from(p.queue);
            let dur_ps = e - s;
            let rate = if dur_ps > 0 {
                (p.write_size as f64 * 1e12 / dur_ps as f64) as f32
            } else {
                0.0
            };
            dma.push(DmaPacket {
                aggregated: "no".into(),
                crc: 0,
                dest: vec!["unknown".into()],
                dma_engine: engine.to_string(),
                dma_queue: p.queue_set.to_string(),
                duplicate: "no".into(),
                duration: dur_ps / 1000,
                id: n as u64 + 1,
                is_cc_dma: "no".into(),
                op: String::new(),
                packet_aggregation_id: 0,
                packet_idx: *slot,
                queue_type: p.queue_type.as_str().into(),
                read_size: p.read_size.unwrap_or(p.write_size),
                semaphore_id: "-1".into(),
                source: vec![vec!["unknown".into()]],
                subgraph: p.subgraph.clone(),
                subgroup: format!("Q{}-E{engine}", p.queue_set),
                timestamp: s / 1000,
                transfer_rate: rate,
                transfer_size: p.write_size,
                variable: "unknown".into(),
                write_size: p.write_size,
            });
            *slot += 1;
        }

        // Events.
        let mut events: BTreeMap<String, u64> = BTreeMap::new();
        let mut semaphore_update: Vec<SemaphoreUpdate> = Vec::new();
        for (u, t) in &self.sems {
            let t = ps(*t);
            if inside(t, t) {
                *events.entry(u.subgraph.clone()).or_insert(0) += 1;
                semaphore_update.push(SemaphoreUpdate {
                    timestamp: (t - ws) / 1000,
                    ..u.clone()
                });
            }
        }
        semaphore_update
            .sort_by(|a, b| (&a.subgraph, a.timestamp).cmp(&(&b.subgraph, b.timestamp)));
        for (sg, t) in &self.other_events {
            let t = ps(*t);
            if inside(t, t) {
                *events.entry(sg.clone()).or_insert(0) += 1;
            }
        }

        // Derived arrays.
        let spans = Spans {
            window_ps: we - ws,
            instrs: instruction
                .iter()
                .zip(&kept)
                .map(|(rec, (_, s, e))| InstrSpan {
                    rec,
                    start_ps: *s,
                    end_ps: *e,
                })
                .collect(),
            packets: pk
                .iter()
                .map(|(p, s, e)| PacketSpan {
                    subgraph: &p.subgraph,
                    kind: Some(p.queue_type),
                    bytes: p.write_size,
                    start_ps: *s,
                    end_ps: *e,
                })
                .collect(),
            events,
            dma_hbm_bytes: pk.iter().fold((0, 0), |acc, (p, _, _)| {
                (
                    acc.0.saturating_add(p.hbm_bytes.0),
                    acc.1.saturating_add(p.hbm_bytes.1),
                )
            }),
        };
        let summary = spans.summary(&self.base);
        let queues_of = |sg: &str| {
            let mut q: Vec<(u32, u32)> = pk
                .iter()
                .filter(|(p, _, _)| p.subgraph == sg)
                .map(|(p, _, _)| (p.queue_set, p.queue))
                .collect();
            q.sort_unstable();
            q.dedup();
            q.len() as u64
        };
        let base_info: Vec<ModelInfo> = spans
            .model_info(&[])
            .into_iter()
            .enumerate()
            .map(|(n, m)| ModelInfo {
                nc_idx: summary.nc_idx + n as u64,
                nd_idx: summary.nd_idx,
                neuroncore_cycle_count: cycles(we - ws),
                dma_queue_count: queues_of(&m.sg_name),
                ..m
            })
            .collect();
        let model_info = spans.model_info(&base_info);
        let window_ns = (we - ws) / 1000;
        let metadata = Metadata {
            is_simulation: true,
            first_hw_timestamp: 0,
            first_ts: rfc3339(0),
            last_hw_timestamp: window_ns,
            last_ts: rfc3339(window_ns),
            num_subgraphs: model_info.len().max(1) as u64,
            num_physical_cores: model_info.len().max(1) as u64,
            vnc_enabled: model_info.len() > 1,
            total_point_count: summary.trace_count,
            ntff_version: 0,
            ..self.metadata.clone()
        };
        Ok(Profile {
            active_time: spans.active_time(),
            instruction,
            dma,
            semaphore_update,
            summary: vec![summary],
            model_info,
            neff_header: vec![self.neff_header.clone()],
            metadata: vec![metadata],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_like_go() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(38_091), "1970-01-01T00:00:00.000038091Z");
        assert_eq!(rfc3339(1_500_000_000), "1970-01-01T00:00:01.5Z");
    }

    #[test]
    fn bad_times_are_errors_naming_the_record() {
        let mut b = ProfileBuilder::new();
        b.instruction(Instr::new(EngineKind::Dve, 7, "COPY", "", 10.0, 5.0));
        let e = b.finish().unwrap_err().to_string();
        assert!(e.contains("instruction 0 (Vector pc 7 COPY)"), "{e}");
        assert!(e.contains("before start"), "{e}");

        let mut b = ProfileBuilder::new();
        b.dma_packet(Packet::new(QueueType::Static, 0, 1, 64, f64::NAN, 5.0));
        let e = b.finish().unwrap_err().to_string();
        assert!(
            e.contains("DMA packet 0") && e.contains("not finite"),
            "{e}"
        );

        let mut b = ProfileBuilder::new();
        b.instruction(
            Instr::new(EngineKind::Sp, 0, "NOP", "", 0.0, 1.0).with(|r| {
                r.subgroup = "Collectives".into();
            }),
        );
        let e = b.finish().unwrap_err().to_string();
        assert!(e.contains("not an engine"), "{e}");
    }

    #[test]
    fn records_outside_the_window_are_dropped() {
        let mut b = ProfileBuilder::new();
        b.instruction(Instr::new(EngineKind::Pe, 1, "MATMUL", "", 10.0, 20.0));
        b.instruction(Instr::new(EngineKind::Pe, 2, "MATMUL", "", 95.0, 120.0));
        b.window(5.0, 100.0);
        let p = b.finish().unwrap();
        assert_eq!(p.instruction.len(), 1);
        assert_eq!(p.instruction[0].timestamp, 5);
        assert_eq!(p.instruction[0].label, "TensorMatrix");
        assert_eq!(p.summary().unwrap().total_time, 95e-9);
    }
}
