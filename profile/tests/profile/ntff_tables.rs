//! The trace reader against the calibration tables of the shared NTFF notes (their section 7 for
//! the nine version-5 traces, section 8.5 for the six version-6 ones): the figures it reads from
//! each trace equal the table's — total time, NEFF span, per engine the instructions traced,
//! the NEFF's instructions and their busy times, the DMA data packets, bytes, blocks and
//! active time; and for version 6, the neuron-profile figures (per-engine counts, instruction
//! and active times, DMA by queue kind, events, trace count). Run with `--nocapture` to see
//! the measured figures.

use nrt_hal::EngineKind;
use nrt_profile::{NtffTrace, Profile};

use crate::shared::{self, numbers, table_after};

/// Absolute tolerance on a table figure printed with `decimals` decimals.
fn tol(decimals: u32) -> f64 {
    0.5 * 10f64.powi(-(decimals as i32)) + 1e-9
}

fn close(what: &str, got: f64, want: f64, decimals: u32) -> Option<String> {
    ((got - want).abs() > tol(decimals)).then(|| format!("{what}: read {got}, table {want}"))
}

fn decimals(cell: &str) -> u32 {
    cell.split('.').nth(1).map_or(0, |f| {
        f.chars().take_while(char::is_ascii_digit).count() as u32
    })
}

/// Checks one row of a section-7 / section-8.5 first-table layout starting at column `c0` (the total
/// time); returns the mismatches.
fn check_calibration(t: &NtffTrace, row: &[String], c0: usize) -> Vec<String> {
    let c = t.calibration();
    let mut bad = Vec::new();
    bad.extend(close(
        "total_time",
        c.total_time_ns,
        numbers(&row[c0])[0],
        decimals(&row[c0]),
    ));
    bad.extend(close(
        "NEFF span",
        c.neff_span_ns,
        numbers(&row[c0 + 1])[0],
        decimals(&row[c0 + 1]),
    ));
    for (k, e) in EngineKind::ALL.into_iter().enumerate() {
        let cell = &row[c0 + 2 + k];
        let n = numbers(cell);
        let got = c.engines[e.index()];
        if n.len() != 4 {
            bad.push(format!("{e:?}: cannot read the cell {cell:?}"));
            continue;
        }
        if got.n_all as f64 != n[0] || got.n_neff as f64 != n[1] {
            bad.push(format!(
                "{e:?} instructions: read {}/{}, table {}/{}",
                got.n_all, got.n_neff, n[0], n[1]
            ));
        }
        bad.extend(close(&format!("{e:?} busy"), got.busy_ns, n[2], 0));
        bad.extend(close(&format!("{e:?} nowait"), got.nowait_ns, n[3], 0));
    }
    let d = numbers(&row[c0 + 7]);
    let read = [
        c.dma_data_packets as f64,
        c.dma_data_bytes as f64,
        c.dma_data_blocks as f64,
    ];
    if d.len() != 3 || d[..] != read[..] {
        bad.push(format!(
            "DMA data pkts/bytes/blocks: read {read:?}, table {:?}",
            row[c0 + 7]
        ));
    }
    bad
}

fn print_calibration(name: &str, t: &NtffTrace, active: f64) {
    let c = t.calibration();
    let e: Vec<String> = EngineKind::ALL
        .iter()
        .map(|e| {
            let x = c.engines[e.index()];
            format!(
                "{}/{} {:.0}/{:.0}",
                x.n_all, x.n_neff, x.busy_ns, x.nowait_ns
            )
        })
        .collect();
    println!(
        "| {name} | v{} | {:.3} | {:.3} | {} | {} / {} / {} | {active:.3} |",
        t.version,
        c.total_time_ns,
        c.neff_span_ns,
        e.join(" | "),
        c.dma_data_packets,
        c.dma_data_bytes,
        c.dma_data_blocks
    );
}

#[test]
fn version5_traces_match_the_notes_section_7() {
    let (Some(dir), Some(notes)) = (shared::real_profiles(), shared::ntff_notes()) else {
        return;
    };
    let rows = table_after(&notes, "## 7.", 0);
    assert_eq!(rows.len(), 9, "the section-7 table lists the nine traces");
    let mut failures = Vec::new();
    for row in &rows {
        let path = shared::trace_for(&dir, &row[0]);
        let t = match NtffTrace::read_file(&path) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{}: {e}", row[0]));
                continue;
            }
        };
        assert_eq!(t.version, 5, "{}", row[0]);
        let c = t.calibration();
        print_calibration(&row[0], &t, c.dma_active_ns);
        let mut bad = check_calibration(&t, row, 1);
        // The table's DMA active time is the summary's dma_active_time (neuron-profile
        // 2.25's rule: the NEFF's queue sets plus the runtime's semaphore-only packets).
        bad.extend(close("DMA active", c.dma_active_ns, numbers(&row[9])[0], 3));
        failures.extend(bad.into_iter().map(|b| format!("{}: {b}", row[0])));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn version6_traces_match_the_notes_section_8_5() {
    let (Some(dir), Some(notes)) = (shared::current_profiles(), shared::ntff_notes()) else {
        return;
    };
    let rows = table_after(&notes, "### 8.5", 0);
    let totals = table_after(&notes, "### 8.5", 1);
    assert_eq!(rows.len(), 6, "the section-8.5 table lists the six traces");
    assert_eq!(
        totals.len(),
        6,
        "the section-8.5 totals table lists the six traces"
    );
    let mut failures = Vec::new();
    for row in &rows {
        let path = shared::trace_for(&dir, &row[0]);
        let t = match NtffTrace::read_file(&path) {
            Ok(t) => t,
            Err(e) => {
                failures.push(format!("{}: {e}", row[0]));
                continue;
            }
        };
        assert_eq!(t.version, 6, "{}", row[0]);
        let c = t.calibration();
        print_calibration(&row[0], &t, c.dma_data_active_ns);
        let mut bad = check_calibration(&t, row, 2);
        bad.extend(close(
            "DMA data active",
            c.dma_data_active_ns,
            numbers(&row[10])[0],
            3,
        ));
        let total = totals
            .iter()
            .find(|r| r[0].starts_with(row[0].as_str()))
            .expect("the totals table has the same traces");
        bad.extend(check_profile_totals(&t.to_profile(), total));
        failures.extend(bad.into_iter().map(|b| format!("{}: {b}", row[0])));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The section-8.5 second table: neuron-profile's figures over both subgraphs in the window.
fn check_profile_totals(p: &Profile, row: &[String]) -> Vec<String> {
    let s = p.summary().expect("a trace's profile has a summary");
    let ns = |secs: f64| secs * 1e9;
    let mut bad = Vec::new();
    bad.extend(close(
        "total_active",
        ns(s.total_active_time),
        numbers(&row[1])[0],
        3,
    ));
    let engines = [
        (
            s.tensor_engine_instruction_count,
            s.tensor_engine_instruction_time,
            s.tensor_engine_active_time,
        ),
        (
            s.scalar_engine_instruction_count,
            s.scalar_engine_instruction_time,
            s.scalar_engine_active_time,
        ),
        (
            s.gpsimd_engine_instruction_count,
            s.gpsimd_engine_instruction_time,
            s.gpsimd_engine_active_time,
        ),
        (
            s.vector_engine_instruction_count,
            s.vector_engine_instruction_time,
            s.vector_engine_active_time,
        ),
        (
            s.sync_engine_instruction_count,
            s.sync_engine_instruction_time,
            s.sync_engine_active_time,
        ),
    ];
    for (k, (n, time, active)) in engines.into_iter().enumerate() {
        let w = numbers(&row[2 + k]);
        if n as f64 != w[0] {
            bad.push(format!(
                "engine column {k}: {n} instructions, table {}",
                w[0]
            ));
        }
        bad.extend(close(
            &format!("engine column {k} instruction time"),
            ns(time),
            w[1],
            0,
        ));
        bad.extend(close(
            &format!("engine column {k} active time"),
            ns(active),
            w[2],
            0,
        ));
    }
    let sg00 = |qt: &str| {
        let v: Vec<_> = p
            .dma
            .iter()
            .filter(|d| d.subgraph == "sg00" && d.queue_type == qt)
            .collect();
        (
            v.len() as f64,
            v.iter().map(|d| d.write_size).sum::<u64>() as f64,
        )
    };
    let (sn, sb) = sg00("static");
    let w = numbers(&row[7]);
    if (sn, sb) != (w[0], w[1]) {
        bad.push(format!(
            "static sg00: {sn} pkts / {sb} B, table {:?}",
            row[7]
        ));
    }
    for (col, n, bytes, active) in [
        (
            8,
            s.software_dynamic_dma_packet_count,
            s.software_dynamic_dma_size,
            s.software_dynamic_dma_active_time,
        ),
        (
            9,
            s.hardware_dynamic_dma_packet_count,
            s.hardware_dynamic_dma_size,
            s.hardware_dynamic_dma_active_time,
        ),
    ] {
        let w = numbers(&row[col]);
        if (n as f64, bytes as f64) != (w[0], w[1]) {
            bad.push(format!(
                "DMA column {col}: {n} pkts / {bytes} B, table {:?}",
                row[col]
            ));
        }
        bad.extend(close(
            &format!("DMA column {col} active"),
            ns(active),
            w[2],
            0,
        ));
    }
    let (rn, rb) = sg00("instruction");
    let w = numbers(&row[10]);
    if (rn, rb) != (w[0], w[1]) {
        bad.push(format!(
            "runtime sg00: {rn} pkts / {rb} B, table {:?}",
            row[10]
        ));
    }
    bad.extend(close(
        "DMA active",
        ns(s.dma_active_time),
        numbers(&row[11])[0],
        3,
    ));
    if s.event_count as f64 != numbers(&row[12])[0] {
        bad.push(format!("events: {}, table {}", s.event_count, row[12]));
    }
    if s.trace_count as f64 != numbers(&row[13])[0] {
        bad.push(format!("trace_count: {}, table {}", s.trace_count, row[13]));
    }
    bad
}

/// The version-5 profiles (by the window of docs/profile.md §3.5) against the neuron-profile
/// 2.25 summaries the notes quote in their section 6 for three of the runs: `total_time`, the
/// static packet count and `dma_active_time` are equal; the per-engine instruction counts,
/// whose 2.25 rule is not known, are within 2.
#[test]
fn version5_profiles_against_the_quoted_summaries() {
    let (Some(dir), Some(notes)) = (shared::real_profiles(), shared::ntff_notes()) else {
        return;
    };
    let rows = table_after(&notes, "## 6.", 0);
    let row = |key: &str| -> Vec<String> {
        rows.iter()
            .find(|r| r[0].starts_with(key))
            .unwrap_or_else(|| panic!("section 6 has no row {key:?}"))
            .clone()
    };
    let total = row("total_time");
    let packets = row("static_dma_packet_count");
    let active = row("dma_active_time (s)");
    let counts = row("PE/ACT/POOL/DVE/SP instruction_count");
    for (k, name) in [
        "part1_stream_256k_fd1k",
        "part1_stream_256k_fd2k",
        "part1_transpose_1024",
    ]
    .into_iter()
    .enumerate()
    {
        let col = 1 + 2 * k;
        let p = NtffTrace::read_file(&shared::trace_for(&dir, name))
            .unwrap()
            .to_profile();
        let s = p.summary().unwrap();
        let f = |c: &str| c.parse::<f64>().unwrap();
        let ps = |x: f64| (x * 1e12).round() as i64;
        assert_eq!(ps(s.total_time), ps(f(&total[col])), "{name} total_time");
        assert_eq!(
            s.static_dma_packet_count as f64,
            f(&packets[col]),
            "{name} packets"
        );
        assert_eq!(
            ps(s.dma_active_time),
            ps(f(&active[col])),
            "{name} dma_active_time"
        );
        let want = numbers(&counts[col]);
        let got = [
            s.tensor_engine_instruction_count,
            s.scalar_engine_instruction_count,
            s.gpsimd_engine_instruction_count,
            s.vector_engine_instruction_count,
            s.sync_engine_instruction_count,
        ];
        println!("{name}: instruction counts {got:?}, 2.25 summary {want:?}");
        for (g, w) in got.iter().zip(&want) {
            assert!(
                (*g as f64 - w).abs() <= 2.0,
                "{name}: counts {got:?} vs {want:?}"
            );
        }
    }
}
