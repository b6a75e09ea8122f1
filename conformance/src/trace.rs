//! The canonical trace: events, their canonical order, the text form and the first-difference
//! report.
//!
//! An [`Event`] is one line of text tagged with the core it concerns, the [`Stream`] it belongs
//! to on that core, and its sequence number within that stream. A [`Trace`] holds events in
//! canonical order — sorted by (core, stream, sequence) — so the interleaving of threads that
//! work on different cores or different streams cannot change the text. Only the order *within*
//! one stream is taken from the order of the calls, which is deterministic as long as one stream
//! is driven by one thread at a time (see the crate docs).
//!
//! Text form: one event per line, `<core> <stream> <text>`, for example
//!
//! ```text
//! nc0 mem alloc #3 misc_device ch0 size=0x1000
//! nc0 q e0.q13 tx[5] len=56 id=1 FIRST|LAST meta=m2m src=#3+0x140
//! nc0 doorbell +1
//! ```

use core::fmt;

/// Which core an event concerns; device-wide events sort after every core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Core {
    /// NeuronCore `n`.
    Nc(u32),
    /// The whole device (a wait for every core to go idle).
    Device,
}

impl fmt::Display for Core {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Core::Nc(n) => write!(f, "nc{n}"),
            Core::Device => f.write_str("dev"),
        }
    }
}

/// The stream of a core an event belongs to. The variant order is the canonical order of
/// streams within a core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Stream {
    /// Allocations, frees, copies in and out, memsets and mappings of the core's memory.
    Mem,
    /// Instruction blocks staged into code memory, disassembled.
    Code,
    /// Notification-queue setup.
    Nq,
    /// One DMA queue: its initialisation, the descriptors it is asked to consume, tail
    /// increments, rewinds and re-points.
    Queue {
        /// The engine, local to the core.
        engine: u32,
        /// The queue within the engine.
        queue: u32,
    },
    /// Semaphore reads, writes, increments and decrements (not the doorbell).
    Sem,
    /// Event sets and reads.
    Evt,
    /// Doorbells: increments of the `INFERENCE_START` semaphore.
    Doorbell,
    /// Waits.
    Wait,
    /// Core resets.
    Reset,
}

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stream::Mem => f.write_str("mem"),
            Stream::Code => f.write_str("code"),
            Stream::Nq => f.write_str("nq"),
            Stream::Queue { engine, queue } => write!(f, "q e{engine}.q{queue}"),
            Stream::Sem => f.write_str("sem"),
            Stream::Evt => f.write_str("evt"),
            Stream::Doorbell => f.write_str("doorbell"),
            Stream::Wait => f.write_str("wait"),
            Stream::Reset => f.write_str("reset"),
        }
    }
}

/// One line of a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The core concerned.
    pub core: Core,
    /// The stream within the core.
    pub stream: Stream,
    /// Position within the (core, stream) pair, in call order.
    pub seq: u64,
    /// The rendered event, symbolic throughout.
    pub text: String,
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.core, self.stream, self.text)
    }
}

/// Events in canonical order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Trace {
    events: Vec<Event>,
}

impl Trace {
    /// Sorts `events` into canonical order (core, stream, sequence).
    pub fn new(mut events: Vec<Event>) -> Trace {
        events.sort_by_key(|e| (e.core, e.stream, e.seq));
        Trace { events }
    }

    /// The events, in canonical order.
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// Number of events.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether there are no events.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// The text form: one event per line, each line ending in `\n`.
    pub fn text(&self) -> String {
        let mut s = String::new();
        for e in &self.events {
            s.push_str(&e.to_string());
            s.push('\n');
        }
        s
    }
}

/// Where two texts first differ, as a report: the line number, up to `context` equal lines
/// before it, and up to `context + 1` lines of each side from that point (`-` expected,
/// `+` actual). `None` when the texts are equal line for line.
pub fn first_difference(expected: &str, actual: &str, context: usize) -> Option<String> {
    let e: Vec<&str> = expected.lines().collect();
    let a: Vec<&str> = actual.lines().collect();
    let at = (0..e.len().max(a.len())).find(|&i| e.get(i) != a.get(i))?;
    let mut out = format!(
        "first difference at line {} (expected {} lines, got {}):\n",
        at + 1,
        e.len(),
        a.len()
    );
    for (i, line) in e
        .iter()
        .enumerate()
        .take(at)
        .skip(at.saturating_sub(context))
    {
        out.push_str(&format!("  {:>6}  {line}\n", i + 1));
    }
    for (mark, side) in [('-', &e), ('+', &a)] {
        let end = (at + context + 1).min(side.len());
        if at >= side.len() {
            out.push_str(&format!("{mark} {:>6}  <end of text>\n", at + 1));
        }
        for (i, line) in side.iter().enumerate().take(end).skip(at) {
            out.push_str(&format!("{mark} {:>6}  {line}\n", i + 1));
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(core: Core, stream: Stream, seq: u64, text: &str) -> Event {
        Event {
            core,
            stream,
            seq,
            text: text.to_string(),
        }
    }

    #[test]
    fn canonical_order_ignores_arrival_order() {
        let a = ev(Core::Nc(1), Stream::Mem, 0, "alloc #1");
        let b = ev(
            Core::Nc(0),
            Stream::Queue {
                engine: 10,
                queue: 0,
            },
            0,
            "x",
        );
        let c = ev(
            Core::Nc(0),
            Stream::Queue {
                engine: 2,
                queue: 3,
            },
            1,
            "y",
        );
        let d = ev(
            Core::Nc(0),
            Stream::Queue {
                engine: 2,
                queue: 3,
            },
            0,
            "z",
        );
        let e = ev(Core::Device, Stream::Wait, 0, "idle");
        let t1 = Trace::new(vec![a.clone(), b.clone(), c.clone(), d.clone(), e.clone()]);
        let t2 = Trace::new(vec![e, c, a, d, b]);
        assert_eq!(t1, t2);
        assert_eq!(
            t1.text(),
            "nc0 q e2.q3 z\nnc0 q e2.q3 y\nnc0 q e10.q0 x\nnc1 mem alloc #1\ndev wait idle\n"
        );
    }

    #[test]
    fn first_difference_reports_line_and_context() {
        let e = "a\nb\nc\nd\ne\nf\n";
        let a = "a\nb\nc\nX\ne\nf\n";
        let r = first_difference(e, a, 2).unwrap();
        assert!(r.starts_with("first difference at line 4 (expected 6 lines, got 6)"));
        assert!(r.contains("       2  b\n"));
        assert!(r.contains("       3  c\n"));
        assert!(!r.contains("       1  a\n"));
        assert!(r.contains("-      4  d\n"));
        assert!(r.contains("+      4  X\n"));
        assert!(r.contains("+      6  f\n"));
        assert_eq!(first_difference(e, e, 3), None);
        let short = first_difference("a\nb\n", "a\n", 3).unwrap();
        assert!(short.contains("+      2  <end of text>"), "{short}");
    }
}
