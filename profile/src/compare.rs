//! Comparing two profiles — a simulated one and a device one, each from JSON or a trace
//! (docs/profile.md §6): instructions aligned per subgraph and engine, then opcode and
//! operand agreement, total and active times side by side, and the instructions whose
//! durations differ most.
//!
//! Alignment, per (subgraph, engine), over the instructions in execution order:
//!
//! 1. **By pc offset.** The runtime runs its own instructions before and after a NEFF's, so
//!    a simulated pc and the device's pc of the same instruction differ by a constant per
//!    engine. Offsets are voted for by equal opcodes (the first 64 simulated instructions
//!    against every device instruction), the best few are scored over all instructions, and
//!    the best one pairs each simulated instruction with the device's execution of pc +
//!    offset (the k-th execution with the k-th, for loops).
//! 2. **By sequence alignment**, when some simulated instruction finds no device
//!    instruction of its opcode at pc + offset (counts or order differ): a longest common
//!    subsequence of the opcode sequences (Myers' O(ND) algorithm); between two matches,
//!    leftover instructions of both sides are paired in order as mismatches.
//!
//! The alignment with more equal opcodes wins. Device instructions left unpaired are the
//! runtime's (or ones the simulator does not model); they are reported by opcode.

use std::collections::{BTreeMap, HashMap};

use nrt_hal::EngineKind;
use serde::Serialize;

use crate::model::{engine_names, Instruction, Profile, Summary};
use crate::summary::summarize;

/// How one engine's instructions were aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Device pc = simulated pc + this offset.
    PcOffset(i64),
    /// Longest common subsequence of the opcode sequences.
    Sequence,
    /// One side has no instructions.
    Nothing,
}

/// The alignment of one (subgraph, engine).
#[derive(Debug, Clone, PartialEq)]
pub struct EngineAlignment {
    /// `sg00`, `sg01`.
    pub subgraph: String,
    /// The engine.
    pub engine: EngineKind,
    /// How the instructions were paired.
    pub method: Method,
    /// Simulated instructions.
    pub sim_count: u64,
    /// Device instructions.
    pub device_count: u64,
    /// Simulated instructions paired with a device instruction.
    pub paired: u64,
    /// Pairs with the same opcode.
    pub opcode_match: u64,
    /// Pairs with the same operands text (whitespace-normalised).
    pub operands_match: u64,
    /// Device instructions with no simulated partner, by opcode.
    pub device_only: BTreeMap<String, u64>,
    /// Simulated instructions with no device partner, by opcode.
    pub sim_only: BTreeMap<String, u64>,
}

/// One aligned pair whose durations differ.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationDiff {
    /// The subgraph.
    pub subgraph: String,
    /// The engine.
    pub engine: EngineKind,
    /// Simulated pc.
    pub sim_pc: u64,
    /// Device pc.
    pub device_pc: u64,
    /// Simulated opcode.
    pub sim_opcode: String,
    /// Device opcode.
    pub device_opcode: String,
    /// Simulated duration, ns.
    pub sim_ns: u64,
    /// Device duration, ns.
    pub device_ns: u64,
}

impl DurationDiff {
    /// Simulated minus device duration, ns.
    pub fn delta_ns(&self) -> i64 {
        let d = i128::from(self.sim_ns) - i128::from(self.device_ns);
        d.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }
}

/// A figure of both runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct SimDevice {
    /// Simulated.
    pub sim: f64,
    /// Device.
    pub device: f64,
}

/// An active time of both runs, µs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ActiveUs {
    /// Simulated, µs.
    pub sim_active_us: f64,
    /// Device, µs.
    pub device_active_us: f64,
}

/// The active times of the JSON report: per engine (`pe`, `act`, `dve`, `pool`, `sp`) and
/// DMA.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EngineTimes {
    /// Tensor engine.
    pub pe: ActiveUs,
    /// Scalar engine.
    pub act: ActiveUs,
    /// Vector engine.
    pub dve: ActiveUs,
    /// GpSimd engine.
    pub pool: ActiveUs,
    /// Sync engine.
    pub sp: ActiveUs,
    /// DMA.
    pub dma: ActiveUs,
}

/// The JSON report: exactly the keys docs/profile.md §6.2 lists.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ComparisonJson {
    /// Simulated instructions compared.
    pub instructions_total: u64,
    /// Of those, paired with a device instruction of the same opcode.
    pub opcode_match: u64,
    /// Of those, paired with a device instruction of the same operands text.
    pub operands_match: u64,
    /// `total_time` of both, µs.
    pub total_time_us: SimDevice,
    /// Active times of both, µs.
    pub engines: EngineTimes,
}

/// A comparison of a simulated profile with a device one.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Per (subgraph, engine).
    pub alignments: Vec<EngineAlignment>,
    /// The aligned pairs whose durations differ most (at most ten, largest first).
    pub largest_differences: Vec<DurationDiff>,
    /// The headline figures.
    pub figures: ComparisonJson,
}

/// How many pairs [`Comparison::largest_differences`] keeps.
pub const TOP_DIFFERENCES: usize = 10;

fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Instructions of one (subgraph, engine) in execution order, with their occurrence number
/// (the k-th execution of that pc).
fn ordered<'a>(v: &[&'a Instruction]) -> Vec<(&'a Instruction, u64)> {
    let mut v: Vec<&Instruction> = v.to_vec();
    v.sort_by_key(|i| (i.timestamp, i.pc));
    let mut seen: HashMap<u64, u64> = HashMap::new();
    v.into_iter()
        .map(|i| {
            let k = seen.entry(i.pc).or_insert(0);
            *k += 1;
            (i, *k - 1)
        })
        .collect()
}

/// Pairs (sim index, device index).
type Pairs = Vec<(usize, usize)>;

fn by_offset(s: &[(&Instruction, u64)], d: &[(&Instruction, u64)]) -> Option<(i64, Pairs)> {
    let at: HashMap<(u64, u64), usize> = d
        .iter()
        .enumerate()
        .map(|(j, (i, k))| ((i.pc, *k), j))
        .collect();
    let mut by_op: HashMap<&str, Vec<u64>> = HashMap::new();
    for (i, _) in d {
        by_op.entry(i.opcode.as_str()).or_default().push(i.pc);
    }
    let mut votes: HashMap<i128, u64> = HashMap::new();
    for (i, _) in s.iter().take(64) {
        for &pc in by_op.get(i.opcode.as_str()).into_iter().flatten() {
            *votes.entry(i128::from(pc) - i128::from(i.pc)).or_insert(0) += 1;
        }
    }
    let mut cand: Vec<(u64, i128)> = votes.into_iter().map(|(o, n)| (n, o)).collect();
    cand.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then(a.1.abs().cmp(&b.1.abs()))
            .then(a.1.cmp(&b.1))
    });
    let score = |off: i128| -> (u64, Pairs) {
        let mut pairs = Vec::new();
        let mut same = 0;
        for (n, (i, k)) in s.iter().enumerate() {
            let Ok(pc) = u64::try_from(i128::from(i.pc) + off) else {
                continue;
            };
            if let Some(&j) = at.get(&(pc, *k)) {
                pairs.push((n, j));
                same += u64::from(d[j].0.opcode == i.opcode);
            }
        }
        (same, pairs)
    };
    cand.into_iter()
        .take(8)
        .map(|(_, off)| {
            let (same, pairs) = score(off);
            (same, off, pairs)
        })
        .max_by(|a, b| a.0.cmp(&b.0).then(b.1.abs().cmp(&a.1.abs())))
        .map(|(_, off, pairs)| {
            let off = off.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
            (off, pairs)
        })
}

/// The most edit steps the sequence alignment explores before it gives up (its memory grows
/// with the square of this: 16 MiB at the limit).
const MAX_EDITS: usize = 2048;

/// Longest common subsequence of `a` and `b` by Myers' O(ND) algorithm: the matched index
/// pairs, or `None` beyond [`MAX_EDITS`] edits.
fn lcs(a: &[&str], b: &[&str]) -> Option<Pairs> {
    let (n, m) = (a.len() as i64, b.len() as i64);
    let max = (n + m).min(MAX_EDITS as i64);
    let off = max + 1;
    let mut v = vec![0i64; (2 * max + 3) as usize];
    let mut trace: Vec<Vec<i32>> = Vec::new();
    let mut found = None;
    'outer: for dd in 0..=max {
        // Indices fit in i32: a side longer than that is not aligned (see `by_sequence`).
        trace.push(
            v[(off - dd) as usize..=(off + dd) as usize]
                .iter()
                .map(|&x| x as i32)
                .collect(),
        );
        let mut k = -dd;
        while k <= dd {
            let idx = (off + k) as usize;
            let mut x = if k == -dd || (k != dd && v[idx - 1] < v[idx + 1]) {
                v[idx + 1]
            } else {
                v[idx - 1] + 1
            };
            let mut y = x - k;
            while x < n && y < m && a[x as usize] == b[y as usize] {
                x += 1;
                y += 1;
            }
            v[idx] = x;
            if x >= n && y >= m {
                found = Some(dd);
                break 'outer;
            }
            k += 2;
        }
    }
    let dmax = found?;
    // Backtrack through the saved diagonals (trace[d] holds V before step d, for k in -d..=d).
    let get = |d: i64, k: i64| -> i64 {
        let row = &trace[d as usize];
        // row covers k in -d..=d of the V before step d: index k + d.
        i64::from(row[(k + d) as usize])
    };
    let mut pairs = Vec::new();
    let (mut x, mut y) = (n, m);
    for d in (1..=dmax).rev() {
        let k = x - y;
        let prev_k = if k == -d || (k != d && get(d, k - 1) < get(d, k + 1)) {
            k + 1
        } else {
            k - 1
        };
        let prev_x = get(d, prev_k);
        let prev_y = prev_x - prev_k;
        while x > prev_x && y > prev_y {
            x -= 1;
            y -= 1;
            pairs.push((x as usize, y as usize));
        }
        x = prev_x;
        y = prev_y;
    }
    while x > 0 && y > 0 {
        x -= 1;
        y -= 1;
        pairs.push((x as usize, y as usize));
    }
    pairs.reverse();
    Some(pairs)
}

/// The LCS matches plus, in each gap between matches, the leftovers of both sides paired in
/// order (the leading gap pairs toward its end, where the program begins).
fn by_sequence(s: &[(&Instruction, u64)], d: &[(&Instruction, u64)]) -> Option<Pairs> {
    if s.len() > i32::MAX as usize / 2 || d.len() > i32::MAX as usize / 2 {
        return None;
    }
    let a: Vec<&str> = s.iter().map(|(i, _)| i.opcode.as_str()).collect();
    let b: Vec<&str> = d.iter().map(|(i, _)| i.opcode.as_str()).collect();
    let matches = lcs(&a, &b)?;
    let mut out = Vec::new();
    let (mut pi, mut pj) = (0usize, 0usize);
    let mut first = true;
    for &(i, j) in matches.iter().chain(std::iter::once(&(a.len(), b.len()))) {
        let (gi, gj) = (i - pi, j - pj);
        let n = gi.min(gj);
        if first {
            for t in 0..n {
                out.push((i - n + t, j - n + t));
            }
        } else {
            for t in 0..n {
                out.push((pi + t, pj + t));
            }
        }
        first = false;
        if i < a.len() {
            out.push((i, j));
        }
        pi = i + 1;
        pj = j + 1;
    }
    out.sort_unstable();
    Some(out)
}

fn group(p: &Profile) -> BTreeMap<(String, usize), Vec<&Instruction>> {
    let mut g: BTreeMap<(String, usize), Vec<&Instruction>> = BTreeMap::new();
    for i in &p.instruction {
        if let Some(e) = i.engine() {
            g.entry((i.subgraph.clone(), e.index()))
                .or_default()
                .push(i);
        }
    }
    g
}

fn summary_of(p: &Profile) -> Summary {
    p.summary().cloned().unwrap_or_else(|| summarize(p))
}

/// Compares a simulated profile with a device profile.
pub fn compare(sim: &Profile, device: &Profile) -> Comparison {
    let gs = group(sim);
    let gd = group(device);
    let mut keys: Vec<(String, usize)> = gs.keys().chain(gd.keys()).cloned().collect();
    keys.sort();
    keys.dedup();
    let mut alignments = Vec::new();
    let mut diffs: Vec<DurationDiff> = Vec::new();
    for key in keys {
        let engine = EngineKind::from_index(key.1).expect("grouped by a valid engine index");
        let s = ordered(gs.get(&key).map_or(&[][..], Vec::as_slice));
        let d = ordered(gd.get(&key).map_or(&[][..], Vec::as_slice));
        let same = |pairs: &Pairs| {
            pairs
                .iter()
                .filter(|&&(i, j)| s[i].0.opcode == d[j].0.opcode)
                .count()
        };
        let (method, pairs) = if s.is_empty() || d.is_empty() {
            (Method::Nothing, Vec::new())
        } else {
            let offset = by_offset(&s, &d);
            let complete = offset
                .as_ref()
                .is_some_and(|(_, p)| p.len() == s.len() && same(p) == s.len());
            match offset {
                Some((off, p)) if complete => (Method::PcOffset(off), p),
                offset => {
                    let seq = by_sequence(&s, &d);
                    match (offset, seq) {
                        (Some((off, p)), Some(q)) if same(&p) >= same(&q) => {
                            (Method::PcOffset(off), p)
                        }
                        (_, Some(q)) => (Method::Sequence, q),
                        (Some((off, p)), None) => (Method::PcOffset(off), p),
                        (None, None) => (Method::Nothing, Vec::new()),
                    }
                }
            }
        };
        let mut sim_used = vec![false; s.len()];
        let mut dev_used = vec![false; d.len()];
        let mut a = EngineAlignment {
            subgraph: key.0.clone(),
            engine,
            method,
            sim_count: s.len() as u64,
            device_count: d.len() as u64,
            paired: pairs.len() as u64,
            opcode_match: 0,
            operands_match: 0,
            device_only: BTreeMap::new(),
            sim_only: BTreeMap::new(),
        };
        for &(i, j) in &pairs {
            sim_used[i] = true;
            dev_used[j] = true;
            let (si, di) = (s[i].0, d[j].0);
            a.opcode_match += u64::from(si.opcode == di.opcode);
            a.operands_match += u64::from(norm(&si.operands) == norm(&di.operands));
            if si.duration != di.duration {
                diffs.push(DurationDiff {
                    subgraph: key.0.clone(),
                    engine,
                    sim_pc: si.pc,
                    device_pc: di.pc,
                    sim_opcode: si.opcode.clone(),
                    device_opcode: di.opcode.clone(),
                    sim_ns: si.duration,
                    device_ns: di.duration,
                });
            }
        }
        for (used, side, out) in [
            (&sim_used, &s, &mut a.sim_only),
            (&dev_used, &d, &mut a.device_only),
        ] {
            for (u, (i, _)) in used.iter().zip(side.iter()) {
                if !u {
                    *out.entry(i.opcode.clone()).or_insert(0) += 1;
                }
            }
        }
        alignments.push(a);
    }
    diffs.sort_by(|a, b| {
        b.delta_ns()
            .unsigned_abs()
            .cmp(&a.delta_ns().unsigned_abs())
            .then_with(|| {
                (&a.subgraph, a.engine.index(), a.sim_pc).cmp(&(
                    &b.subgraph,
                    b.engine.index(),
                    b.sim_pc,
                ))
            })
    });
    diffs.truncate(TOP_DIFFERENCES);

    let (ss, sd) = (summary_of(sim), summary_of(device));
    let us = |s: f64| s * 1e6;
    let pair = |a: f64, b: f64| ActiveUs {
        sim_active_us: us(a),
        device_active_us: us(b),
    };
    let figures = ComparisonJson {
        instructions_total: alignments.iter().map(|a| a.sim_count).sum(),
        opcode_match: alignments.iter().map(|a| a.opcode_match).sum(),
        operands_match: alignments.iter().map(|a| a.operands_match).sum(),
        total_time_us: SimDevice {
            sim: us(ss.total_time),
            device: us(sd.total_time),
        },
        engines: EngineTimes {
            pe: pair(ss.tensor_engine_active_time, sd.tensor_engine_active_time),
            act: pair(ss.scalar_engine_active_time, sd.scalar_engine_active_time),
            dve: pair(ss.vector_engine_active_time, sd.vector_engine_active_time),
            pool: pair(ss.gpsimd_engine_active_time, sd.gpsimd_engine_active_time),
            sp: pair(ss.sync_engine_active_time, sd.sync_engine_active_time),
            dma: pair(ss.dma_active_time, sd.dma_active_time),
        },
    };
    Comparison {
        alignments,
        largest_differences: diffs,
        figures,
    }
}

fn ratio(sim: f64, dev: f64) -> String {
    if dev > 0.0 {
        format!("{:.2}×", sim / dev)
    } else {
        "–".into()
    }
}

impl Comparison {
    /// The report as one JSON object with exactly the keys of docs/profile.md §6.2.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self.figures).expect("plain numbers serialise")
    }

    /// Whether every simulated instruction is paired with a device instruction of the same
    /// opcode and operands and no duration differs.
    pub fn is_exact(&self) -> bool {
        let f = &self.figures;
        f.opcode_match == f.instructions_total
            && f.operands_match == f.instructions_total
            && self.largest_differences.is_empty()
    }

    /// The report as text.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let f = &self.figures;
        let mut t = String::new();
        let _ = writeln!(
            t,
            "instructions: same opcode {} of {}, same operands {} of {}",
            f.opcode_match, f.instructions_total, f.operands_match, f.instructions_total
        );
        let _ = writeln!(
            t,
            "total_time: sim {:.3} µs, device {:.3} µs ({})",
            f.total_time_us.sim,
            f.total_time_us.device,
            ratio(f.total_time_us.sim, f.total_time_us.device)
        );
        let _ = writeln!(t, "active time (µs):      sim      device   ratio");
        let e = &f.engines;
        for (name, a) in [
            ("pe", e.pe),
            ("act", e.act),
            ("dve", e.dve),
            ("pool", e.pool),
            ("sp", e.sp),
            ("dma", e.dma),
        ] {
            let _ = writeln!(
                t,
                "  {name:<5} {:>12.3} {:>12.3}   {}",
                a.sim_active_us,
                a.device_active_us,
                ratio(a.sim_active_us, a.device_active_us)
            );
        }
        let _ = writeln!(t, "alignment per engine:");
        for a in &self.alignments {
            let how = match a.method {
                Method::PcOffset(o) => format!("pc offset {o:+}"),
                Method::Sequence => "sequence alignment".into(),
                Method::Nothing => "nothing to align".into(),
            };
            let _ = writeln!(
                t,
                "  {} {:<6} sim {} device {}: {how}; paired {}, same opcode {}, same operands {}",
                a.subgraph,
                engine_names::subgroup(a.engine),
                a.sim_count,
                a.device_count,
                a.paired,
                a.opcode_match,
                a.operands_match
            );
            let list = |m: &BTreeMap<String, u64>| {
                m.iter()
                    .map(|(k, v)| format!("{k}×{v}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            if !a.device_only.is_empty() {
                let _ = writeln!(
                    t,
                    "    device only (not simulated): {}",
                    list(&a.device_only)
                );
            }
            if !a.sim_only.is_empty() {
                let _ = writeln!(t, "    simulated only: {}", list(&a.sim_only));
            }
        }
        if self.largest_differences.is_empty() {
            let _ = writeln!(t, "durations: every aligned pair takes the same time");
        } else {
            let _ = writeln!(
                t,
                "largest duration differences (ns):\n  subgraph engine  sim pc  dev pc  opcode                 sim     device      delta"
            );
            for d in &self.largest_differences {
                let op = if d.sim_opcode == d.device_opcode {
                    d.sim_opcode.clone()
                } else {
                    format!("{}/{}", d.sim_opcode, d.device_opcode)
                };
                let _ = writeln!(
                    t,
                    "  {:<8} {:<7} {:>6} {:>7}  {:<20} {:>8} {:>10} {:>+10}",
                    d.subgraph,
                    engine_names::subgroup(d.engine),
                    d.sim_pc,
                    d.device_pc,
                    op,
                    d.sim_ns,
                    d.device_ns,
                    d.delta_ns()
                );
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ins(pc: u64, op: &str, t: u64) -> Instruction {
        Instruction {
            subgroup: "Vector".into(),
            subgraph: "sg00".into(),
            pc,
            opcode: op.into(),
            timestamp: t,
            duration: 5,
            ..Instruction::default()
        }
    }

    fn profile(records: Vec<Instruction>) -> Profile {
        Profile {
            instruction: records,
            ..Profile::default()
        }
    }

    #[test]
    fn one_inserted_instruction_is_left_unpaired() {
        let prog = [
            "COPY",
            "CAST",
            "COPY",
            "TENSOR_REDUCE",
            "COPY",
            "CAST",
            "RECIPROCAL",
        ];
        // Simulated: the program at pcs 0…6. Device: two runtime instructions, the program
        // at pcs 2… with a DRAIN inserted before its fourth instruction, a runtime NOTIFY.
        let sim = profile(
            prog.iter()
                .enumerate()
                .map(|(k, op)| ins(k as u64, op, 10 * k as u64))
                .collect(),
        );
        let mut dev = vec![ins(0, "NOTIFY", 0), ins(1, "TENSOR_LOAD", 10)];
        for (k, op) in prog.iter().enumerate() {
            if k == 3 {
                dev.push(ins(dev.len() as u64, "DRAIN", 10 * dev.len() as u64));
            }
            dev.push(ins(dev.len() as u64, op, 10 * dev.len() as u64));
        }
        dev.push(ins(dev.len() as u64, "NOTIFY", 10 * dev.len() as u64));
        let (s, d) = (
            sim.instruction.iter().collect::<Vec<_>>(),
            dev.iter().collect::<Vec<_>>(),
        );
        let (s, d) = (ordered(&s), ordered(&d));
        // No single offset fits every instruction...
        let (_, by_pc) = by_offset(&s, &d).unwrap();
        assert!(by_pc.iter().any(|&(i, j)| s[i].0.opcode != d[j].0.opcode));
        // ...the sequence alignment pairs each with its own device instruction.
        let pairs = by_sequence(&s, &d).unwrap();
        assert_eq!(
            pairs,
            [(0, 2), (1, 3), (2, 4), (3, 6), (4, 7), (5, 8), (6, 9)]
        );
        let c = compare(&sim, &profile(dev));
        let a = &c.alignments[0];
        assert_eq!(a.method, Method::Sequence);
        assert_eq!(
            (c.figures.instructions_total, c.figures.opcode_match),
            (7, 7)
        );
        assert_eq!(a.device_only.get("DRAIN"), Some(&1));
        assert_eq!(a.device_only.get("NOTIFY"), Some(&2));
        assert!(a.sim_only.is_empty());
    }

    #[test]
    fn lcs_of_small_sequences() {
        let a = ["A", "B", "C", "D"];
        let b = ["X", "A", "B", "Y", "C", "D", "Z"];
        assert_eq!(lcs(&a, &b).unwrap(), vec![(0, 1), (1, 2), (2, 4), (3, 5)]);
        assert_eq!(lcs(&[], &b).unwrap(), vec![]);
        assert_eq!(lcs(&a, &[]).unwrap(), vec![]);
        assert_eq!(lcs(&a, &a).unwrap(), vec![(0, 0), (1, 1), (2, 2), (3, 3)]);
        assert_eq!(lcs(&["A"], &["B"]).unwrap(), vec![]);
    }
}
