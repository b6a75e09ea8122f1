//! The instructions the Neuron runtime runs on every engine around a program, as the device
//! shows them (docs/simulator.md §7.6): before the program a preamble (the request's
//! TENSOR_LOADs, COMPARE_BRANCH, NOTIFY, DRAINs and barriers across the core's five engines
//! on a semaphore of the runtime), after it a postamble (DRAIN, barriers, the semaphore range
//! clear, NOTIFY). They set the floor of every execution's time (about 13 µs before the
//! program starts, 1.7 µs after it ends) and most of a small program's engine active time.
//!
//! Each engine runs its steps in order, each one `gap` ns after the end of the one before and
//! lasting `cost` ns, with these kinds:
//!
//! | kind | the step |
//! |---|---|
//! | `Fixed` | takes `cost` |
//! | `Drain` | waits until every instruction the engine issued has completed, then takes `cost` |
//! | `Until(t)` | ends no earlier than `t` ns after launch (what it waits for is not modelled: the other core of the pair) |
//! | `Barrier(wait, then)` | EVENT_SEMAPHORE on the runtime's barrier semaphore: waits until it equals `wait`, takes `cost`, then increments it or sets it to 0 — the chain PE → ACT → Pool → DVE → SP → DVE → Pool → ACT → PE the device runs |
//!
//! and a step may start no earlier than `not_before` ns after launch (an engine's first step:
//! its instructions arrive by DMA). The tables are measured: per step the median over the
//! device traces of its duration and of the gap before it, the barrier hop as the shortest
//! EVENT_SEMAPHORE of the engine (`Barrier` and `Until` costs), and per version the steps
//! every trace of that version shows inside the profiled window. Runtime 2.27 comes from six
//! of the nine version-5 traces of the older NEFFs, runtime 2.30 from four of the six
//! version-6 traces of the current ones (the others are held out of every fit,
//! docs/simulator.md §7.7); the text is the profiler's where an export shows it (2.30), else
//! ours in the same form.
//!
//! The measured tables are data, one step per line, in `sim/data/runtime-<version>.txt` (the
//! file's header gives the columns); they are compiled in and parsed once, on first use, and
//! the test below parses both and checks that every engine of a core joins the same barriers.

use std::sync::OnceLock;

use nrt_hal::profile::RuntimePc::{self, After, At};

/// Which runtime's wrapper the device runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RuntimeVersion {
    /// libnrt 2.27 (the runtime of the version-5 traces).
    V2_27,
    /// libnrt 2.30 (the runtime of the version-6 traces), the default.
    V2_30,
}

impl RuntimeVersion {
    /// Every version modelled.
    pub const ALL: [RuntimeVersion; 2] = [RuntimeVersion::V2_27, RuntimeVersion::V2_30];

    /// `2.27`, `2.30`.
    pub fn name(self) -> &'static str {
        match self {
            RuntimeVersion::V2_27 => "2.27",
            RuntimeVersion::V2_30 => "2.30",
        }
    }

    /// The version named `2.27` or `2.30` (a patch level after them is accepted).
    pub fn parse(s: &str) -> Option<RuntimeVersion> {
        let mut it = s.split('.');
        match (it.next(), it.next()) {
            (Some("2"), Some("27")) => Some(RuntimeVersion::V2_27),
            (Some("2"), Some("30")) => Some(RuntimeVersion::V2_30),
            _ => None,
        }
    }

    /// The measured table of this version, parsed on first use.
    pub(crate) fn table(self) -> &'static Version {
        static TABLES: OnceLock<[Version; 2]> = OnceLock::new();
        let tables = TABLES.get_or_init(|| {
            [
                Version::parse(include_str!("../data/runtime-2.27.txt"))
                    .unwrap_or_else(|e| panic!("sim/data/runtime-2.27.txt: {e}")),
                Version::parse(include_str!("../data/runtime-2.30.txt"))
                    .unwrap_or_else(|e| panic!("sim/data/runtime-2.30.txt: {e}")),
            ]
        });
        &tables[self as usize]
    }
}

impl std::fmt::Display for RuntimeVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One runtime version's wrapper: per role (the first core of a logical core, the second) and
/// engine (exec-request order), and the runtime's own DMAs (its instruction fetch) per role.
#[derive(Debug, Default)]
pub(crate) struct Version {
    pub roles: [[Engine; 5]; 2],
    pub dma: [Vec<RuntimeDma>; 2],
}

/// One of the runtime's DMA packets inside the profiled window (ns after launch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RuntimeDma {
    pub queue: u32,
    pub bytes: u64,
    pub start: u32,
    pub duration: u32,
}

/// One engine's wrapper.
#[derive(Debug, Default)]
pub(crate) struct Engine {
    /// The profiler's pc of the program's first record.
    pub program_pc: u32,
    /// Before the program.
    pub pre: Vec<Step>,
    /// After it.
    pub post: Vec<Step>,
}

/// One runtime instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Step {
    pub opcode: &'static str,
    pub operands: &'static str,
    pub pc: RuntimePc,
    /// ns after the previous instruction's end.
    pub gap: u32,
    /// ns it takes (after any wait).
    pub cost: u32,
    /// Earliest start, ns after launch (0: none).
    pub not_before: u32,
    pub kind: Kind,
}

/// What a step waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Fixed,
    Drain,
    Until(u32),
    Barrier(Option<i32>, Then),
}

/// A barrier step's semaphore update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Then {
    Inc,
    Zero,
}

/// The engines of a role in exec-request order, as the tables name them.
const ENGINES: [&str; 5] = ["Tensor", "Scalar", "GpSimd", "Vector", "Sync"];

impl Version {
    /// Parses a table (the format of the file's header); an error names the line.
    fn parse(text: &'static str) -> Result<Version, String> {
        let mut v = Version::default();
        let mut at: Option<(usize, usize)> = None;
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_end();
            if line.is_empty() || line.starts_with('#') || line.starts_with("runtime ") {
                continue;
            }
            let err = |what: &str| format!("line {}: {what}: {line}", n + 1);
            let mut words = line.split_whitespace();
            match words.next() {
                Some("engine") => {
                    let role = role(words.next()).ok_or_else(|| err("role"))?;
                    let engine = words
                        .next()
                        .and_then(|e| ENGINES.iter().position(|&x| x == e))
                        .ok_or_else(|| err("engine"))?;
                    let pc = words
                        .next()
                        .and_then(|w| w.strip_prefix("program_pc="))
                        .and_then(|p| p.parse().ok())
                        .ok_or_else(|| err("program_pc"))?;
                    v.roles[role][engine].program_pc = pc;
                    at = Some((role, engine));
                }
                Some("dma") => {
                    let role = role(words.next()).ok_or_else(|| err("role"))?;
                    let mut num = || words.next().and_then(|w| w.parse::<u64>().ok());
                    let (Some(queue), Some(bytes), Some(start), Some(duration)) =
                        (num(), num(), num(), num())
                    else {
                        return Err(err("dma queue bytes start duration"));
                    };
                    v.dma[role].push(RuntimeDma {
                        queue: u32::try_from(queue).map_err(|_| err("queue"))?,
                        bytes,
                        start: u32::try_from(start).map_err(|_| err("start"))?,
                        duration: u32::try_from(duration).map_err(|_| err("duration"))?,
                    });
                }
                Some(part @ ("pre" | "post")) => {
                    let (role, engine) = at.ok_or_else(|| err("a step before its engine"))?;
                    let step =
                        parse_step(line[part.len()..].trim_start()).ok_or_else(|| err("step"))?;
                    let e = &mut v.roles[role][engine];
                    if part == "pre" {
                        &mut e.pre
                    } else {
                        &mut e.post
                    }
                    .push(step);
                }
                _ => return Err(err("unknown line")),
            }
        }
        Ok(v)
    }
}

fn role(word: Option<&str>) -> Option<usize> {
    match word? {
        "first" => Some(0),
        "second" => Some(1),
        _ => None,
    }
}

/// `OPCODE "operands" at:PC|after:N gap cost not_before kind`.
fn parse_step(s: &'static str) -> Option<Step> {
    let (opcode, rest) = s.split_once(char::is_whitespace)?;
    let rest = rest.trim_start().strip_prefix('"')?;
    let (operands, rest) = rest.split_once('"')?;
    let mut words = rest.split_whitespace();
    let pc = match words.next()?.split_once(':')? {
        ("at", n) => At(n.parse().ok()?),
        ("after", n) => After(n.parse().ok()?),
        _ => return None,
    };
    let mut num = || words.next()?.parse::<u32>().ok();
    let (gap, cost, not_before) = (num()?, num()?, num()?);
    let kind = match words.next()? {
        "fixed" => Kind::Fixed,
        "drain" => Kind::Drain,
        k => match (k.strip_prefix("until="), k.strip_prefix("barrier")) {
            (Some(t), _) => Kind::Until(t.parse().ok()?),
            (_, Some(b)) => {
                let (wait, then) = b.split_once('/')?;
                let wait = match wait {
                    "" => None,
                    w => Some(w.strip_prefix(':')?.parse().ok()?),
                };
                let then = match then {
                    "inc" => Then::Inc,
                    "zero" => Then::Zero,
                    _ => return None,
                };
                Kind::Barrier(wait, then)
            }
            _ => return None,
        },
    };
    if words.next().is_some() {
        return None;
    }
    Some(Step {
        opcode,
        operands,
        pc,
        gap,
        cost,
        not_before,
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both tables parse, every engine of both roles has steps, and every engine of a role
    /// takes part in the same barrier rounds (else a core deadlocks).
    #[test]
    fn every_engine_of_a_role_runs_the_same_barrier_rounds() {
        for v in RuntimeVersion::ALL {
            for (r, role) in v.table().roles.iter().enumerate() {
                assert!(role.iter().all(|e| !e.pre.is_empty() && e.program_pc > 0));
                let parts: [fn(&Engine) -> &[Step]; 2] = [|e| &e.pre, |e| &e.post];
                for part in parts {
                    let rounds: Vec<usize> = role
                        .iter()
                        .enumerate()
                        .map(|(i, e)| {
                            let waits = part(e)
                                .iter()
                                .filter(|s| matches!(s.kind, Kind::Barrier(Some(_), _)))
                                .count();
                            // PE and SP wait once per round, ACT, Pool and DVE twice.
                            if i == 0 || i == 4 {
                                waits
                            } else {
                                waits / 2
                            }
                        })
                        .collect();
                    assert!(
                        rounds.windows(2).all(|w| w[0] == w[1]),
                        "{v} role {r}: {rounds:?}"
                    );
                }
            }
        }
        assert!(RuntimeVersion::V2_27.table().dma.iter().all(Vec::is_empty));
        assert!(RuntimeVersion::V2_30
            .table()
            .dma
            .iter()
            .all(|d| !d.is_empty()));
    }

    #[test]
    fn a_step_line_parses_field_by_field() {
        let s = parse_step(r#"EVENT_SEMAPHORE " setter=0 $S[2]==8 $S[2]=0@complete " after:2 63 52 7 barrier:8/zero"#).unwrap();
        assert_eq!(s.opcode, "EVENT_SEMAPHORE");
        assert_eq!(s.operands, " setter=0 $S[2]==8 $S[2]=0@complete ");
        assert_eq!(s.pc, After(2));
        assert_eq!((s.gap, s.cost, s.not_before), (63, 52, 7));
        assert_eq!(s.kind, Kind::Barrier(Some(8), Then::Zero));
        let s = parse_step(r#"NOP "" at:47 1 2 3 until=12738"#).unwrap();
        assert_eq!((s.operands, s.pc, s.kind), ("", At(47), Kind::Until(12738)));
        for bad in [
            r#"NOP "" at:47 1 2 3"#,
            r#"NOP "" at:47 1 2 3 fixed extra"#,
            r#"NOP "" here:47 1 2 3 fixed"#,
            r#"NOP "x at:47 1 2 3 fixed"#,
            r#"NOP "" at:47 1 2 3 barrier:x/inc"#,
        ] {
            assert_eq!(parse_step(bad), None, "{bad}");
        }
        let e = Version::parse("pre NOP \"\" at:1 0 0 0 fixed").unwrap_err();
        assert!(
            e.contains("line 1") && e.contains("before its engine"),
            "{e}"
        );
    }

    #[test]
    fn versions_parse() {
        assert_eq!(RuntimeVersion::parse("2.30"), Some(RuntimeVersion::V2_30));
        assert_eq!(
            RuntimeVersion::parse("2.27.23"),
            Some(RuntimeVersion::V2_27)
        );
        assert_eq!(RuntimeVersion::parse("2.29"), None);
    }
}
