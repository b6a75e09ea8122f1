//! Deriving `summary[0]`, `active_time[]` and `model_info[]` from instruction and packet
//! intervals, by the rules neuron-profile 2.28 applies (docs/profile.md §4).
//!
//! Every derivation works on exact intervals in picoseconds relative to the window start
//! (`Spans`); the builder and the NTFF reader have them. [`summarize`] recomputes a summary
//! from a profile's own `instruction[]` and `dma[]`, whose times are floored nanoseconds, so
//! its times can be short by up to a nanosecond per interval.

use std::collections::BTreeMap;

use nrt_hal::EngineKind;

use crate::model::{
    engine_names, ActiveTime, Instruction, ModelInfo, Profile, QueueType, Summary, HBM_BANDWIDTH,
};

/// PE peak rate the utilisation keys use, flops/s: 128 × 128 MACs at 2.4 GHz, 2 flops each.
/// `mfu`/`hfu` divide by twice this (docs/profile.md §4.2).
pub const PE_PEAK_FLOPS: f64 = 128.0 * 128.0 * 2.4e9 * 2.0;

/// One instruction's exact interval.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InstrSpan<'a> {
    /// Its record (engine, opcode and counters are read from it).
    pub rec: &'a Instruction,
    /// Start, ps from the window start.
    pub start_ps: u64,
    /// End, ps from the window start.
    pub end_ps: u64,
}

/// One DMA packet's exact interval.
#[derive(Debug, Clone)]
pub(crate) struct PacketSpan<'a> {
    /// Its subgraph.
    pub subgraph: &'a str,
    /// Its queue kind (`None`: not one of the four; counted in the totals only).
    pub kind: Option<QueueType>,
    /// Write-side bytes.
    pub bytes: u64,
    /// Start, ps from the window start.
    pub start_ps: u64,
    /// Data written, ps from the window start.
    pub end_ps: u64,
}

/// Everything kept in the window of one run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Spans<'a> {
    /// Window length, ps.
    pub window_ps: u64,
    /// Kept instructions.
    pub instrs: Vec<InstrSpan<'a>>,
    /// Kept DMA packets.
    pub packets: Vec<PacketSpan<'a>>,
    /// Kept events per subgraph.
    pub events: BTreeMap<String, u64>,
    /// HBM bytes (read, written) moved by DMA that no instruction accounts for.
    pub dma_hbm_bytes: (u64, u64),
}

/// Total length of the union of `[start, end)` intervals.
pub fn union_len(mut iv: Vec<(u64, u64)>) -> u64 {
    sat_sum(merge(&mut iv).iter().map(|&(s, e)| e - s))
}

/// Sum that saturates instead of overflowing (hostile input cannot make it panic).
fn sat_sum(it: impl Iterator<Item = u64>) -> u64 {
    it.fold(0u64, u64::saturating_add)
}

/// Σ(end − start).
fn lengths(iv: &[(u64, u64)]) -> u64 {
    sat_sum(iv.iter().map(|&(a, b)| b.saturating_sub(a)))
}

/// The union of intervals as disjoint sorted intervals; touching intervals merge.
fn merge(iv: &mut [(u64, u64)]) -> Vec<(u64, u64)> {
    iv.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for &(s, e) in iv.iter() {
        let e = e.max(s);
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

fn secs(ps: u64) -> f64 {
    ps as f64 / 1e12
}

fn frac(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        0.0
    }
}

/// floor(ns × 1.2) of a time in ps, exactly.
pub(crate) fn cycles(ps: u64) -> u64 {
    (u128::from(ps) * 12 / 10_000) as u64
}

impl Spans<'_> {
    fn engine_spans(&self, e: EngineKind) -> impl Iterator<Item = &InstrSpan<'_>> {
        self.instrs
            .iter()
            .filter(move |s| s.rec.engine() == Some(e))
    }

    /// `summary[0]`: the derived keys computed, the others copied from `base`.
    pub fn summary(&self, base: &Summary) -> Summary {
        let mut s = base.clone();
        let total = self.window_ps;
        let total_s = secs(total);
        s.total_time = total_s;
        s.neuroncore_cycle_count = cycles(total);

        let mut counts = [0u64; 5];
        let mut busy = [0f64; 5];
        let mut active = [0f64; 5];
        for e in EngineKind::ALL {
            let spans: Vec<&InstrSpan> = self.engine_spans(e).collect();
            counts[e.index()] = spans.len() as u64;
            let work: Vec<(u64, u64)> = spans
                .iter()
                .filter(|sp| !sp.rec.is_wait())
                .map(|sp| (sp.start_ps, sp.end_ps))
                .collect();
            busy[e.index()] = secs(lengths(&work));
            active[e.index()] = secs(union_len(work));
        }
        macro_rules! engine_keys {
            ($e:expr, $count:ident, $time:ident, $active:ident, $pct:ident) => {
                s.$count = counts[$e.index()];
                s.$time = busy[$e.index()];
                s.$active = active[$e.index()];
                s.$pct = frac(active[$e.index()], total_s);
            };
        }
        engine_keys!(
            EngineKind::Pe,
            tensor_engine_instruction_count,
            tensor_engine_instruction_time,
            tensor_engine_active_time,
            tensor_engine_active_time_percent
        );
        engine_keys!(
            EngineKind::Act,
            scalar_engine_instruction_count,
            scalar_engine_instruction_time,
            scalar_engine_active_time,
            scalar_engine_active_time_percent
        );
        engine_keys!(
            EngineKind::Pool,
            gpsimd_engine_instruction_count,
            gpsimd_engine_instruction_time,
            gpsimd_engine_active_time,
            gpsimd_engine_active_time_percent
        );
        engine_keys!(
            EngineKind::Dve,
            vector_engine_instruction_count,
            vector_engine_instruction_time,
            vector_engine_active_time,
            vector_engine_active_time_percent
        );
        engine_keys!(
            EngineKind::Sp,
            sync_engine_instruction_count,
            sync_engine_instruction_time,
            sync_engine_active_time,
            sync_engine_active_time_percent
        );

        // DMA.
        let iv = |f: &dyn Fn(&PacketSpan) -> bool| -> Vec<(u64, u64)> {
            self.packets
                .iter()
                .filter(|p| f(p))
                .map(|p| (p.start_ps, p.end_ps))
                .collect()
        };
        let all = iv(&|_| true);
        let n_all = self.packets.len() as u64;
        let bytes_all = sat_sum(self.packets.iter().map(|p| p.bytes));
        s.dma_packet_time = secs(lengths(&all));
        let dma_active = union_len(all);
        s.dma_active_time = secs(dma_active);
        s.dma_active_cycles = cycles(dma_active);
        s.dma_active_time_percent = frac(s.dma_active_time, total_s);
        s.dma_transfer_time = 0.0;
        s.dma_transfer_average_bytes = 0.0;
        let class = |k: Option<QueueType>| match k {
            Some(q) if q.is_static() => 0,
            Some(QueueType::SoftwareDynamic) => 1,
            Some(QueueType::HardwareDynamic) => 2,
            _ => 3,
        };
        let mut n = [0u64; 3];
        let mut b = [0u64; 3];
        let mut act = [0f64; 3];
        for (c, slot) in act.iter_mut().enumerate() {
            *slot = secs(union_len(iv(&|p| class(p.kind) == c)));
        }
        for p in &self.packets {
            let c = class(p.kind);
            if c < 3 {
                n[c] += 1;
                b[c] = b[c].saturating_add(p.bytes);
            }
        }
        let nf = n_all as f64;
        let bf = bytes_all as f64;
        let da = s.dma_active_time;
        s.static_dma_packet_count = n[0];
        s.static_dma_size = b[0];
        s.static_dma_active_time = act[0];
        s.static_dma_active_time_percent = frac(act[0], da);
        s.static_dma_packet_percent = frac(n[0] as f64, nf);
        s.static_dma_size_percent = frac(b[0] as f64, bf);
        s.software_dynamic_dma_packet_count = n[1];
        s.software_dynamic_dma_size = b[1];
        s.software_dynamic_dma_active_time = act[1];
        s.software_dynamic_dma_active_time_percent = frac(act[1], da);
        s.software_dynamic_dma_packet_percent = frac(n[1] as f64, nf);
        s.software_dynamic_dma_size_percent = frac(b[1] as f64, bf);
        s.hardware_dynamic_dma_packet_count = n[2];
        s.hardware_dynamic_dma_size = b[2];
        s.hardware_dynamic_dma_active_time = act[2];
        s.hardware_dynamic_dma_active_time_percent = frac(act[2], da);
        s.hardware_dynamic_dma_packet_percent = frac(n[2] as f64, nf);
        s.hardware_dynamic_dma_size_percent = frac(b[2] as f64, bf);
        // The sum of the two kinds' fractions, not their union's (docs/profile.md §4.2).
        s.dynamic_dma_active_time_percent = frac(act[1] + act[2], da);
        s.dynamic_dma_packet_percent = frac((n[1] + n[2]) as f64, nf);
        s.dynamic_dma_size_percent = frac((b[1] + b[2]) as f64, bf);

        // Everything busy.
        let mut busy_all: Vec<(u64, u64)> = self
            .instrs
            .iter()
            .filter(|sp| sp.rec.engine().is_some() && !sp.rec.is_wait())
            .map(|sp| (sp.start_ps, sp.end_ps))
            .collect();
        busy_all.extend(iv(&|_| true));
        s.total_active_time = secs(union_len(busy_all));
        s.total_active_time_percent = frac(s.total_active_time, total_s);

        // Counts.
        let events: u64 = self.events.values().sum();
        s.event_count = events;
        s.trace_count = (self.instrs.len() as u64)
            .saturating_add(n_all)
            .saturating_add(events);

        // Per-instruction counters.
        let sum = |f: &dyn Fn(&Instruction) -> Option<u64>| -> u64 {
            sat_sum(self.instrs.iter().filter_map(|sp| f(sp.rec)))
        };
        s.sbuf_read_bytes = sum(&|r| r.sbuf_read_bytes);
        s.sbuf_write_bytes = sum(&|r| r.sbuf_write_bytes);
        s.psum_read_bytes = sum(&|r| r.psum_read_bytes);
        s.psum_write_bytes = sum(&|r| r.psum_write_bytes);
        s.psum_read_sbuf_write_bytes = sum(&|r| r.psum_read_sbuf_write_bytes);
        s.psum_read_sbuf_write_count = sum(&|r| r.is_psum_read_sbuf_write.map(u64::from));
        s.hbm_read_bytes = sum(&|r| r.hbm_read_bytes).saturating_add(self.dma_hbm_bytes.0);
        s.hbm_write_bytes = sum(&|r| r.hbm_write_bytes).saturating_add(self.dma_hbm_bytes.1);
        let is = |op: &'static str| move |r: &Instruction| r.opcode == op;
        s.matmul_instruction_count = sum(&|r| is("MATMUL")(r).then_some(1));
        s.activate_instruction_count = sum(&|r| is("ACTIVATE")(r).then_some(1));
        s.activate_instruction_time = secs(sat_sum(
            self.instrs
                .iter()
                .filter(|sp| sp.rec.opcode == "ACTIVATE")
                .map(|sp| sp.end_ps.saturating_sub(sp.start_ps)),
        ));
        s.hardware_flops =
            2u64.saturating_mul(sum(&|r| if is("MATMUL")(r) { r.elements } else { None }));
        s.transpose_flops = 2u64.saturating_mul(sum(&|r| {
            if is("MATMUL")(r) && r.instruction_type == "TRANSPOSE" {
                r.elements
            } else {
                None
            }
        }));

        // Utilisation (docs/profile.md §4.2).
        let regular = s.hardware_flops.saturating_sub(s.transpose_flops) as f64;
        let hbm = s.hbm_read_bytes as f64 + s.hbm_write_bytes as f64;
        s.mfu_estimated_percent = frac(regular, 2.0 * PE_PEAK_FLOPS * total_s);
        s.mfu_inst_estimated_percent = s.mfu_estimated_percent;
        s.hfu_estimated_percent = frac(s.hardware_flops as f64, 2.0 * PE_PEAK_FLOPS * total_s);
        s.mbu_estimated_percent = frac(hbm, HBM_BANDWIDTH * total_s);
        s.mbu_min_read_util_percent = frac(
            s.inputs_and_weights_size_bytes as f64,
            HBM_BANDWIDTH * total_s,
        );
        s.mm_arithmetic_intensity = frac(regular, hbm);
        s.peak_flops_bandwidth_ratio = PE_PEAK_FLOPS / HBM_BANDWIDTH;
        s.mfu_max_achievable_estimated_percent = if hbm > 0.0 {
            (s.mm_arithmetic_intensity / (2.0 * s.peak_flops_bandwidth_ratio)).min(1.0)
        } else {
            0.0
        };
        s.mfu_inst_max_achievable_estimated_percent = s.mfu_max_achievable_estimated_percent;
        s
    }

    /// `active_time[]`: per subgraph (in name order) and engine (PE, ACT, DVE, Pool, SP; the
    /// device files' order of engines varies), the merged busy intervals of the
    /// non-EVENT_SEMAPHORE instructions, floored to ns.
    pub fn active_time(&self) -> Vec<ActiveTime> {
        const ORDER: [EngineKind; 5] = [
            EngineKind::Pe,
            EngineKind::Act,
            EngineKind::Dve,
            EngineKind::Pool,
            EngineKind::Sp,
        ];
        let mut out = Vec::new();
        for (pcore, sg) in self.subgraphs().iter().enumerate() {
            for e in ORDER {
                let mut iv: Vec<(u64, u64)> = self
                    .engine_spans(e)
                    .filter(|sp| sp.rec.subgraph == *sg && !sp.rec.is_wait())
                    .map(|sp| (sp.start_ps, sp.end_ps))
                    .collect();
                for (s, t) in merge(&mut iv) {
                    out.push(ActiveTime {
                        duration_ns: (t - s) / 1000,
                        end_ts: t / 1000,
                        engine: engine_names::summary_prefix(e).into(),
                        pcore_idx: pcore as u64,
                        start_ts: s / 1000,
                        subgraph: sg.clone(),
                    });
                }
            }
        }
        out
    }

    /// The subgraph names of instructions, packets and events, sorted.
    fn subgraphs(&self) -> Vec<String> {
        let mut v: Vec<String> = Vec::new();
        let names = self
            .instrs
            .iter()
            .map(|s| s.rec.subgraph.as_str())
            .chain(self.packets.iter().map(|p| p.subgraph))
            .chain(self.events.keys().map(String::as_str));
        for n in names {
            if !v.iter().any(|x| x == n) {
                v.push(n.to_string());
            }
        }
        v.sort();
        v
    }

    /// `model_info[]`: per subgraph, the kept counts. `base` gives each subgraph's
    /// non-derived keys (`nc_idx`, `dma_queue_count`, cycles) where known.
    pub fn model_info(&self, base: &[ModelInfo]) -> Vec<ModelInfo> {
        self.subgraphs()
            .into_iter()
            .map(|sg| {
                let mut m = base
                    .iter()
                    .find(|m| m.sg_name == sg)
                    .cloned()
                    .unwrap_or_default();
                let count = |e: EngineKind| {
                    self.engine_spans(e)
                        .filter(|sp| sp.rec.subgraph == sg)
                        .count() as u64
                };
                m.tensor_engine_instruction_count = count(EngineKind::Pe);
                m.scalar_engine_instruction_count = count(EngineKind::Act);
                m.gpsimd_engine_instruction_count = count(EngineKind::Pool);
                m.vector_engine_instruction_count = count(EngineKind::Dve);
                m.sync_engine_instruction_count = count(EngineKind::Sp);
                let instrs = self
                    .instrs
                    .iter()
                    .filter(|sp| sp.rec.subgraph == sg)
                    .count() as u64;
                let packets = self.packets.iter().filter(|p| p.subgraph == sg).count() as u64;
                m.event_count = self.events.get(&sg).copied().unwrap_or(0);
                m.trace_count = instrs + packets + m.event_count;
                m.sg_name = sg;
                m
            })
            .collect()
    }
}

/// Recomputes `summary[0]` from a profile's own `instruction[]`, `dma[]` and
/// `semaphore_update[]` (their floored-ns times taken as exact), by the rules of
/// docs/profile.md §4. The window is `metadata[0]`'s `last_hw_timestamp −
/// first_hw_timestamp`, or else the latest end of an instruction or packet. Keys that are not
/// derived are copied from the profile's own `summary[0]` (defaults if it has none).
///
/// `event_count` (and so `trace_count`) counts the semaphore updates only: a device profile's
/// events also include notification records that its JSON does not list.
pub fn summarize(profile: &Profile) -> Summary {
    let spans = spans_of(profile);
    spans.summary(&profile.summary().cloned().unwrap_or_default())
}

/// The spans of a profile's JSON records (docs/profile.md §4.3).
pub(crate) fn spans_of(profile: &Profile) -> Spans<'_> {
    let ns = |t: u64| t.saturating_mul(1000);
    let instrs: Vec<InstrSpan> = profile
        .instruction
        .iter()
        .map(|r| InstrSpan {
            rec: r,
            start_ps: ns(r.timestamp),
            end_ps: ns(r.timestamp.saturating_add(r.duration)),
        })
        .collect();
    let packets: Vec<PacketSpan> = profile
        .dma
        .iter()
        .map(|p| PacketSpan {
            subgraph: &p.subgraph,
            kind: p.queue_kind(),
            bytes: p.write_size,
            start_ps: ns(p.timestamp),
            end_ps: ns(p.timestamp.saturating_add(p.duration)),
        })
        .collect();
    let mut events = BTreeMap::new();
    for u in &profile.semaphore_update {
        *events.entry(u.subgraph.clone()).or_insert(0) += 1;
    }
    let window_ps = match profile.metadata() {
        Some(m) if m.last_hw_timestamp > m.first_hw_timestamp => {
            ns(m.last_hw_timestamp - m.first_hw_timestamp)
        }
        _ => instrs
            .iter()
            .map(|s| s.end_ps)
            .chain(packets.iter().map(|p| p.end_ps))
            .max()
            .unwrap_or(0),
    };
    Spans {
        window_ps,
        instrs,
        packets,
        events,
        dma_hbm_bytes: (0, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_merges_overlaps_and_touching() {
        assert_eq!(union_len(vec![]), 0);
        assert_eq!(union_len(vec![(0, 10), (5, 15), (20, 30)]), 25);
        assert_eq!(union_len(vec![(20, 30), (0, 10), (10, 12)]), 22);
        assert_eq!(union_len(vec![(0, 100), (10, 20)]), 100);
    }

    #[test]
    fn cycles_floor_at_1_2_per_ns() {
        assert_eq!(cycles(38_091_607), 45_709);
        assert_eq!(cycles(26_416_626), 31_699);
        assert_eq!(cycles(0), 0);
        assert_eq!(
            cycles(u64::MAX),
            (u128::from(u64::MAX) * 12 / 10_000) as u64
        );
    }
}
