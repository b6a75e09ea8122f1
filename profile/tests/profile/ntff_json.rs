//! The trace reader against neuron-profile 2.28's own decoding of the same runs (the four
//! device runs whose trace and JSON export are both in the shared folder): applying the
//! rules of docs/profile.md §4 to the trace gives the export's instructions (engine, pc,
//! opcode, start, duration), DMA packets (queue, engine, index, queue type, sizes, tag,
//! times), semaphore updates, `active_time[]`, `model_info[]` counts and summary keys — the
//! times to the picosecond.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use nrt_profile::{json, NtffTrace, Profile, Summary};

use crate::shared;

/// (trace, export) pairs.
fn pairs() -> Vec<(PathBuf, PathBuf)> {
    let Some(dir) = shared::current_profiles() else {
        return Vec::new();
    };
    shared::files(&dir, ".profile.json")
        .into_iter()
        .map(|j| {
            let t = PathBuf::from(j.to_string_lossy().replace(".profile.json", ".ntff"));
            (t, j)
        })
        .filter(|(t, _)| t.is_file())
        .collect()
}

fn load(t: &Path, j: &Path) -> (Profile, Profile) {
    let trace = NtffTrace::read_file(t).unwrap_or_else(|e| panic!("{e}"));
    (trace.to_profile(), json::read_file(j).unwrap())
}

#[test]
fn instructions_match_the_export_record_for_record() {
    for (t, j) in pairs() {
        let (ours, dev) = load(&t, &j);
        let key = |i: &nrt_profile::Instruction| {
            (i.subgraph.clone(), i.subgroup.clone(), i.pc, i.timestamp)
        };
        let mut theirs: BTreeMap<_, _> = dev.instruction.iter().map(|i| (key(i), i)).collect();
        assert_eq!(theirs.len(), dev.instruction.len(), "keys are unique");
        let mut bad = Vec::new();
        let mut matched = 0;
        for i in &ours.instruction {
            match theirs.remove(&key(i)) {
                Some(d) => {
                    matched += 1;
                    if (&i.opcode, i.duration, &i.label) != (&d.opcode, d.duration, &d.label) {
                        bad.push(format!(
                            "{:?}: ours {} {} ns {}, export {} {} ns {}",
                            key(i),
                            i.opcode,
                            i.duration,
                            i.label,
                            d.opcode,
                            d.duration,
                            d.label
                        ));
                    }
                }
                None => bad.push(format!("{:?} {}: only in the trace", key(i), i.opcode)),
            }
        }
        bad.extend(theirs.keys().map(|k| format!("{k:?}: only in the export")));
        println!(
            "{}: instructions export {} / matched {matched} / trace {}",
            j.display(),
            dev.instruction.len(),
            ours.instruction.len()
        );
        assert!(bad.is_empty(), "{}:\n{}", t.display(), bad.join("\n"));
    }
}

#[test]
fn dma_packets_and_semaphore_updates_match_the_export() {
    for (t, j) in pairs() {
        let (ours, dev) = load(&t, &j);
        let key = |p: &nrt_profile::DmaPacket| {
            (
                p.subgraph.clone(),
                p.dma_queue.clone(),
                p.dma_engine.clone(),
                p.packet_idx,
            )
        };
        let theirs: BTreeMap<_, _> = dev.dma.iter().map(|p| (key(p), p)).collect();
        assert_eq!(ours.dma.len(), dev.dma.len(), "{}", t.display());
        for p in &ours.dma {
            let d = theirs
                .get(&key(p))
                .unwrap_or_else(|| panic!("{:?} only in the trace", key(p)));
            let fields = |p: &nrt_profile::DmaPacket| {
                (
                    p.timestamp,
                    p.duration,
                    p.write_size,
                    p.transfer_size,
                    p.queue_type.clone(),
                    p.subgroup.clone(),
                    p.crc,
                )
            };
            assert_eq!(fields(p), fields(d), "{}: packet {:?}", t.display(), key(p));
            // The rate is a 32-bit float over the exact duration.
            assert!(
                (p.transfer_rate - d.transfer_rate).abs() <= 1e-6 * d.transfer_rate.abs(),
                "{:?}: rate {} vs {}",
                key(p),
                p.transfer_rate,
                d.transfer_rate
            );
        }
        // Semaphore updates: same times and values; the id is the semaphore number, which
        // the export writes as `S[n] (queue name)` for a DMA queue's semaphore.
        let norm = |u: &nrt_profile::SemaphoreUpdate| {
            let id =
                u.id.strip_prefix("S[")
                    .and_then(|r| r.split(']').next())
                    .unwrap_or(&u.id)
                    .to_string();
            (u.subgraph.clone(), u.timestamp, u.value, id)
        };
        let mut a: Vec<_> = ours.semaphore_update.iter().map(norm).collect();
        let mut b: Vec<_> = dev.semaphore_update.iter().map(norm).collect();
        a.sort();
        b.sort();
        assert_eq!(a.len(), b.len(), "{}", t.display());
        let diff: Vec<_> = a.iter().zip(&b).filter(|(x, y)| x != y).take(5).collect();
        assert!(
            a == b,
            "{}: semaphore updates differ: {diff:?}",
            t.display()
        );
        // active_time[] is derived from exact times too. (The export's order of engines
        // varies from file to file.)
        let sorted = |v: &[nrt_profile::ActiveTime]| {
            let mut v = v.to_vec();
            v.sort_by(|a, b| {
                (&a.subgraph, &a.engine, a.start_ts).cmp(&(&b.subgraph, &b.engine, b.start_ts))
            });
            v
        };
        let (oa, da) = (sorted(&ours.active_time), sorted(&dev.active_time));
        let diff: Vec<_> = oa.iter().zip(&da).filter(|(a, b)| a != b).take(4).collect();
        assert!(
            ours.active_time.len() == dev.active_time.len() && diff.is_empty(),
            "{}: active_time: {} vs {} entries, first differences {diff:?}",
            t.display(),
            ours.active_time.len(),
            dev.active_time.len()
        );
    }
}

fn ps(s: f64) -> i64 {
    (s * 1e12).round() as i64
}

/// The summary keys docs/profile.md §4 derives from a trace, as (name, ours, export) with
/// times in ps.
fn keys(a: &Summary, b: &Summary) -> Vec<(&'static str, i64, i64)> {
    macro_rules! k {
        ($($f:ident),*; $($t:ident),*) => {
            vec![
                $((stringify!($f), a.$f as i64, b.$f as i64),)*
                $((stringify!($t), ps(a.$t), ps(b.$t)),)*
            ]
        };
    }
    k!(
        neuroncore_cycle_count, event_count, trace_count, dma_active_cycles,
        tensor_engine_instruction_count, scalar_engine_instruction_count,
        gpsimd_engine_instruction_count, vector_engine_instruction_count,
        sync_engine_instruction_count, static_dma_packet_count, static_dma_size,
        software_dynamic_dma_packet_count, software_dynamic_dma_size,
        hardware_dynamic_dma_packet_count, hardware_dynamic_dma_size;
        total_time, total_active_time, dma_packet_time, dma_active_time,
        tensor_engine_instruction_time, tensor_engine_active_time,
        scalar_engine_instruction_time, scalar_engine_active_time,
        gpsimd_engine_instruction_time, gpsimd_engine_active_time,
        vector_engine_instruction_time, vector_engine_active_time,
        sync_engine_instruction_time, sync_engine_active_time,
        static_dma_active_time, software_dynamic_dma_active_time,
        hardware_dynamic_dma_active_time, dma_transfer_time
    )
}

#[test]
fn summary_and_model_info_match_the_export_to_the_picosecond() {
    for (t, j) in pairs() {
        let (ours, dev) = load(&t, &j);
        let (a, b) = (ours.summary().unwrap(), dev.summary().unwrap());
        let mut bad: Vec<String> = keys(a, b)
            .into_iter()
            .filter(|(_, x, y)| x != y)
            .map(|(k, x, y)| format!("{k}: trace {x}, export {y}"))
            .collect();
        let fractions = [
            (
                "total_active_time_percent",
                a.total_active_time_percent,
                b.total_active_time_percent,
            ),
            (
                "dma_active_time_percent",
                a.dma_active_time_percent,
                b.dma_active_time_percent,
            ),
            (
                "tensor_engine_active_time_percent",
                a.tensor_engine_active_time_percent,
                b.tensor_engine_active_time_percent,
            ),
            (
                "sync_engine_active_time_percent",
                a.sync_engine_active_time_percent,
                b.sync_engine_active_time_percent,
            ),
            (
                "static_dma_active_time_percent",
                a.static_dma_active_time_percent,
                b.static_dma_active_time_percent,
            ),
            (
                "dynamic_dma_active_time_percent",
                a.dynamic_dma_active_time_percent,
                b.dynamic_dma_active_time_percent,
            ),
            (
                "dynamic_dma_size_percent",
                a.dynamic_dma_size_percent,
                b.dynamic_dma_size_percent,
            ),
            (
                "hardware_dynamic_dma_packet_percent",
                a.hardware_dynamic_dma_packet_percent,
                b.hardware_dynamic_dma_packet_percent,
            ),
        ];
        for (k, x, y) in fractions {
            if (x - y).abs() > 1e-12 * y.abs().max(1e-300) {
                bad.push(format!("{k}: trace {x}, export {y}"));
            }
        }
        for m in &dev.model_info {
            let o = ours
                .model_info
                .iter()
                .find(|o| o.sg_name == m.sg_name)
                .unwrap_or_else(|| panic!("no model_info for {}", m.sg_name));
            let c = |x: &nrt_profile::ModelInfo| {
                (
                    x.nc_idx,
                    x.event_count,
                    x.trace_count,
                    x.tensor_engine_instruction_count,
                    x.scalar_engine_instruction_count,
                    x.gpsimd_engine_instruction_count,
                    x.vector_engine_instruction_count,
                    x.sync_engine_instruction_count,
                )
            };
            if c(o) != c(m) {
                bad.push(format!(
                    "model_info {}: trace {:?}, export {:?}",
                    m.sg_name,
                    c(o),
                    c(m)
                ));
            }
        }
        assert!(bad.is_empty(), "{}:\n{}", t.display(), bad.join("\n"));
        let md = (ours.metadata().unwrap(), dev.metadata().unwrap());
        assert_eq!(md.0.last_hw_timestamp, md.1.last_hw_timestamp);
        assert_eq!(md.0.last_ts, md.1.last_ts);
        assert_eq!(md.0.ntff_version, md.1.ntff_version);
        assert_eq!(
            (
                &a.runtime_version,
                &a.driver_version,
                &a.collectives_version,
                &a.instance_type
            ),
            (
                &b.runtime_version,
                &b.driver_version,
                &b.collectives_version,
                &b.instance_type
            )
        );
        assert_eq!(
            ours.neff_header().unwrap().network_name,
            dev.neff_header().unwrap().network_name
        );
    }
}
