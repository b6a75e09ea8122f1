//! The execution timeline: spans of device activity (engine instructions, DMA batches,
//! semaphore waits, whole executions) in device cycles, exportable as Chrome / Perfetto trace
//! JSON with one track per engine and per DMA queue.
//!
//! Spans are appended in event-processing order, which is deterministic, so two runs of the
//! same calls give byte-identical exports.

use std::collections::BTreeMap;

use nrt_hal::{EngineKind, NcIndex, QueueRef, Target};

/// Which track a span belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Track {
    /// A core's sequencer (whole executions).
    Sequencer(NcIndex),
    /// One compute engine of a core.
    Engine(NcIndex, EngineKind),
    /// One DMA queue.
    DmaQueue(QueueRef),
}

impl Track {
    fn core(&self) -> NcIndex {
        match *self {
            Track::Sequencer(nc) | Track::Engine(nc, _) => nc,
            Track::DmaQueue(q) => q.nc,
        }
    }

    fn name(&self) -> String {
        match *self {
            Track::Sequencer(_) => "sequencer".to_string(),
            Track::Engine(_, e) => e.name().to_string(),
            Track::DmaQueue(q) => format!("dma {}.{}", q.engine, q.queue),
        }
    }
}

/// One span of activity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// Where it happened.
    pub track: Track,
    /// What it was (an instruction mnemonic, `dma x N`, `wait sem5`, `exec #3`).
    pub name: String,
    /// Start, device cycles.
    pub start: u64,
    /// End, device cycles (≥ start).
    pub end: u64,
}

/// The recorded timeline.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    spans: Vec<Span>,
    limit: usize,
    dropped: u64,
    enabled: bool,
}

impl Timeline {
    /// A timeline that records up to `limit` spans when `enabled`.
    pub fn new(enabled: bool, limit: usize) -> Self {
        Timeline {
            spans: Vec::new(),
            limit,
            dropped: 0,
            enabled,
        }
    }

    /// Whether spans are being recorded.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Starts or stops recording (spans already recorded are kept).
    pub fn set_enabled(&mut self, enabled: bool) {
        self.enabled = enabled;
    }

    /// Records a span (no-op when disabled; counted as dropped past the limit). The name is
    /// made only when the span is kept, so a disabled timeline costs the event loop nothing.
    pub fn record<N: Into<String>>(
        &mut self,
        track: Track,
        name: impl FnOnce() -> N,
        start: u64,
        end: u64,
    ) {
        if !self.enabled {
            return;
        }
        if self.spans.len() >= self.limit {
            self.dropped += 1;
            return;
        }
        self.spans.push(Span {
            track,
            name: name().into(),
            start,
            end: end.max(start),
        });
    }

    /// The spans recorded so far, in recording order.
    pub fn spans(&self) -> &[Span] {
        &self.spans
    }

    /// Spans that did not fit under the limit.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// One timeline of several, each recorded by its own clock domain: their spans one
    /// domain after the other, in the order given (each domain's in recording order), so the
    /// result does not depend on how host threads interleaved the domains. The limit applies
    /// per domain; the dropped counts add up.
    pub fn merged<'a>(parts: impl IntoIterator<Item = &'a Timeline>) -> Timeline {
        let mut t = Timeline::new(false, 0);
        for p in parts {
            t.spans.extend_from_slice(&p.spans);
            t.limit += p.limit;
            t.dropped += p.dropped;
            t.enabled |= p.enabled;
        }
        t
    }

    /// Forgets every span.
    pub fn clear(&mut self) {
        self.spans.clear();
        self.dropped = 0;
    }

    /// Chrome trace-event JSON (readable by Perfetto and `chrome://tracing`): one process per
    /// core, one thread (track) per sequencer, engine and DMA queue, complete (`"X"`) events with
    /// timestamps in microseconds of device time at the target's sequencer clock.
    pub fn to_chrome_json(&self, target: Target) -> String {
        let hz = target.spec().clocks.sp as f64;
        let us = |cycles: u64| cycles as f64 * 1e6 / hz;
        // Stable track ids: sorted by track.
        let mut tids: BTreeMap<Track, usize> = BTreeMap::new();
        for s in &self.spans {
            let n = tids.len();
            tids.entry(s.track).or_insert(n);
        }
        let mut ordered: Vec<(Track, usize)> = tids.keys().copied().zip(0..).collect();
        ordered.sort();
        let tid_of: BTreeMap<Track, usize> = ordered.iter().copied().collect();
        let mut events = Vec::with_capacity(self.spans.len() + ordered.len() * 2);
        let mut cores: Vec<NcIndex> = ordered.iter().map(|(t, _)| t.core()).collect();
        cores.dedup();
        for nc in cores {
            events.push(serde_json::json!({
                "ph": "M", "name": "process_name", "pid": nc.0,
                "args": {"name": format!("{} {}", target.name(), nc)}
            }));
        }
        for (track, tid) in &ordered {
            events.push(serde_json::json!({
                "ph": "M", "name": "thread_name", "pid": track.core().0, "tid": tid,
                "args": {"name": track.name()}
            }));
        }
        for s in &self.spans {
            events.push(serde_json::json!({
                "ph": "X", "name": s.name, "pid": s.track.core().0, "tid": tid_of[&s.track],
                "ts": us(s.start), "dur": us(s.end - s.start),
                "args": {"start_cycle": s.start, "end_cycle": s.end}
            }));
        }
        serde_json::json!({
            "traceEvents": events,
            "displayTimeUnit": "ns",
            "otherData": {"target": target.name(), "dropped_spans": self.dropped},
        })
        .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrt_hal::{DmaEngine, QueueId};

    #[test]
    fn chrome_json_has_tracks_and_spans() {
        let mut t = Timeline::new(true, 2);
        let q = QueueRef::new(NcIndex(0), DmaEngine(1), QueueId(2));
        t.record(
            Track::Engine(NcIndex(0), EngineKind::Pe),
            || "matmul.mm",
            10,
            20,
        );
        t.record(Track::DmaQueue(q), || "dma x3", 0, 1400);
        t.record(Track::DmaQueue(q), || "dropped", 0, 1);
        assert_eq!(t.dropped(), 1);
        let v: serde_json::Value = serde_json::from_str(&t.to_chrome_json(Target::Trn1)).unwrap();
        let ev = v["traceEvents"].as_array().unwrap();
        let spans: Vec<_> = ev.iter().filter(|e| e["ph"] == "X").collect();
        assert_eq!(spans.len(), 2);
        // 1400 cycles at 1.4 GHz = 1 µs.
        assert_eq!(spans[1]["dur"], 1.0);
        let names: Vec<_> = ev
            .iter()
            .filter(|e| e["name"] == "thread_name")
            .map(|e| e["args"]["name"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(names, ["PE", "dma e1.q2"]);
        assert!(Timeline::new(false, 10).spans().is_empty());
    }
}
