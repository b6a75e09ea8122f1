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
        self.table().name
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

    pub(crate) fn table(self) -> &'static Version {
        match self {
            RuntimeVersion::V2_27 => &V2_27,
            RuntimeVersion::V2_30 => &V2_30,
        }
    }
}

impl std::fmt::Display for RuntimeVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One runtime version's wrapper: per role (the first core of a logical core, the second) and
/// engine (exec-request order), and the runtime's own DMAs (its instruction fetch) per role.
#[derive(Debug)]
pub(crate) struct Version {
    pub name: &'static str,
    pub roles: [[Engine; 5]; 2],
    pub dma: [&'static [RuntimeDma]; 2],
}

/// One DMA packet of the runtime's around a program: on the runtime's queue `queue`, `bytes`,
/// from `start` ns after launch for `duration` ns. They move nothing the simulation needs (the
/// engines' first steps wait for them through `not_before`); they are what a profile shows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RuntimeDma {
    pub queue: u32,
    pub bytes: u64,
    pub start: u32,
    pub duration: u32,
}

const fn d(queue: u32, bytes: u64, start: u32, duration: u32) -> RuntimeDma {
    RuntimeDma {
        queue,
        bytes,
        start,
        duration,
    }
}

/// Runtime 2.30's instruction fetch inside the profiled window, medians of the fit set's
/// version-6 traces: the first core fetches a 16 KiB block, writes two words (8 and 4 bytes),
/// fetches four 16 KiB blocks and four 1 KiB blocks; the second core fetches two rounds of
/// four 16 KiB blocks around a 4-byte write.
const V2_30_DMA_FIRST: &[RuntimeDma] = &[
    d(4, 16384, 143, 1825),
    d(5, 8, 2356, 7),
    d(5, 4, 2384, 9),
    d(1, 16384, 4060, 1712),
    d(2, 16384, 4150, 1712),
    d(3, 16384, 4300, 1712),
    d(4, 16384, 4530, 1712),
    d(4, 1024, 11130, 44),
    d(2, 1024, 11200, 44),
    d(1, 1024, 11213, 44),
    d(3, 1024, 11230, 44),
];
const V2_30_DMA_SECOND: &[RuntimeDma] = &[
    d(17, 16384, 1100, 1918),
    d(18, 16384, 1200, 1918),
    d(20, 16384, 1346, 1918),
    d(19, 16384, 1500, 1918),
    d(21, 4, 3379, 7),
    d(17, 16384, 4800, 1769),
    d(18, 16384, 5300, 1769),
    d(20, 16384, 5571, 1769),
    d(19, 16384, 5650, 1769),
];

/// One engine's wrapper.
#[derive(Debug)]
pub(crate) struct Engine {
    /// The profiler's pc of the program's first record.
    pub program_pc: u32,
    /// Before the program.
    pub pre: &'static [Step],
    /// After it.
    pub post: &'static [Step],
}

/// One runtime instruction.
#[derive(Debug, Clone, Copy)]
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

use Kind::{Barrier, Drain, Fixed, Until};

#[allow(clippy::too_many_arguments)]
const fn s(
    opcode: &'static str,
    operands: &'static str,
    pc: RuntimePc,
    gap: u32,
    cost: u32,
    not_before: u32,
    kind: Kind,
) -> Step {
    Step {
        opcode,
        operands,
        pc,
        gap,
        cost,
        not_before,
        kind,
    }
}

/// Runtime 2.27: measured on the version-5 device traces of the fit set (docs/simulator.md §7.6).
pub(crate) const V2_27: Version = Version {
    name: "2.27",
    roles: [
        [
            // first core, Tensor
            Engine {
                program_pc: 61,
                pre: &[
                    s("COMPARE_BRANCH", " cmp_op=EQ dtype=int32 cmp0=$R[0] cmp1=0 ", At(21), 0, 189, 78, Fixed),
                    s("NOTIFY", " hint=2 notification=EXPLICIT  trace=START ", At(45), 79, 8, 0, Fixed),
                    s("WRITE", "", At(46), 81, 84, 0, Fixed),
                    s("NOP", "", At(47), 7827, 26, 8346, Fixed),
                    s("DRAIN", "", At(48), 78, 15, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0  $S[2]+=1@complete", At(49), 78, 68, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==8 $S[2]=0@complete", At(50), 141, 54, 0, Barrier(Some(8), Then::Zero)),
                    s("DRAIN", "", At(51), 74, 12, 0, Drain),
                    s("DRAIN", "", At(52), 78, 12, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0  $S[2]+=1@complete", At(53), 78, 54, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==8 $S[2]=0@complete", At(54), 74, 54, 0, Barrier(Some(8), Then::Zero)),
                    s("DRAIN", "", At(55), 74, 12, 0, Drain),
                    s("WRITE", "", At(56), 81, 206, 0, Fixed),
                    s("EVENT_SEMAPHORE", "setter=0 $S[1]>=1 $S[1]--@complete", At(57), 318, 54, 0, Until(12746)),
                    s("DRAIN", "", At(58), 75, 12, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0  $S[2]+=1@complete", At(59), 78, 54, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==8 $S[2]=0@complete", At(60), 74, 54, 0, Barrier(Some(8), Then::Zero)),
                ],
                post: &[
                    s("DRAIN", "", After(0), 0, 12, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0  $S[2]+=1@complete", After(1), 65, 54, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==8 $S[2]=0@complete", After(2), 62, 54, 0, Barrier(Some(8), Then::Zero)),
                    s("DRAIN", "", After(3), 62, 12, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO ", After(4), 65, 380, 0, Fixed),
                    s("DRAIN", "", After(5), 123, 12, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0  $S[2]+=1@complete", After(6), 65, 54, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==8 $S[2]=0@complete", After(7), 62, 54, 0, Barrier(Some(8), Then::Zero)),
                    s("DRAIN", "", After(8), 62, 12, 0, Drain),
                ],
            },
            // first core, Scalar
            Engine {
                program_pc: 58,
                pre: &[
                    s("NOTIFY", " hint=2 notification=EXPLICIT  trace=START ", At(40), 0, 4, 254, Fixed),
                    s("DRAIN", "", At(41), 64, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==1 $S[2]++@complete", At(42), 64, 40, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==7 $S[2]++@complete", At(43), 99, 40, 0, Barrier(Some(7), Then::Inc)),
                    s("DRAIN", "", At(44), 62, 8, 0, Drain),
                    s("DRAIN", "", At(45), 68, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==1 $S[2]++@complete", At(46), 68, 40, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==7 $S[2]++@complete", At(47), 62, 40, 0, Barrier(Some(7), Then::Inc)),
                    s("DRAIN", "", At(48), 62, 8, 0, Drain),
                    s("DRAIN", "", At(49), 68, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==1 $S[2]++@complete", At(50), 68, 40, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==7 $S[2]++@complete", At(51), 62, 40, 0, Barrier(Some(7), Then::Inc)),
                ],
                post: &[
                    s("DRAIN", "", At(54), 0, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==1 $S[2]++@complete", At(55), 62, 40, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==7 $S[2]++@complete", At(56), 50, 40, 0, Barrier(Some(7), Then::Inc)),
                    s("DRAIN", "", At(57), 50, 8, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO ", After(4), 56, 281, 0, Fixed),
                    s("DRAIN", "", After(5), 56, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==1 $S[2]++@complete", After(6), 56, 40, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==7 $S[2]++@complete", After(7), 50, 40, 0, Barrier(Some(7), Then::Inc)),
                    s("DRAIN", "", After(8), 50, 8, 0, Drain),
                ],
            },
            // first core, GpSimd
            Engine {
                program_pc: 68,
                pre: &[
                    s("NOTIFY", " hint=2 notification=EXPLICIT  trace=START ", At(56), 0, 11, 195, Fixed),
                    s("DRAIN", "", At(57), 48, 33, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==2 $S[2]++@complete", At(58), 48, 55, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==6 $S[2]++@complete", At(59), 42, 55, 0, Barrier(Some(6), Then::Inc)),
                    s("DRAIN", "", At(60), 46, 28, 0, Drain),
                    s("DRAIN", "", At(61), 44, 28, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==2 $S[2]++@complete", At(62), 48, 55, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==6 $S[2]++@complete", At(63), 42, 55, 0, Barrier(Some(6), Then::Inc)),
                    s("DRAIN", "", At(64), 46, 28, 0, Drain),
                    s("DRAIN", "", At(65), 44, 27, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==2 $S[2]++@complete", At(66), 48, 55, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==6 $S[2]++@complete", At(67), 42, 55, 0, Barrier(Some(6), Then::Inc)),
                ],
                post: &[
                    s("DRAIN", "", After(0), 0, 38, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==2 $S[2]++@complete", After(1), 39, 55, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==6 $S[2]++@complete", After(2), 34, 55, 0, Barrier(Some(6), Then::Inc)),
                    s("DRAIN", "", After(3), 38, 28, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO ", After(4), 38, 296, 0, Fixed),
                    s("DRAIN", "", After(5), 43, 28, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==2 $S[2]++@complete", After(6), 39, 55, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==6 $S[2]++@complete", After(7), 34, 55, 0, Barrier(Some(6), Then::Inc)),
                    s("DRAIN", "", After(8), 38, 27, 0, Drain),
                ],
            },
            // first core, Vector
            Engine {
                program_pc: 58,
                pre: &[
                    s("NOTIFY", " hint=2 notification=EXPLICIT  trace=START ", At(46), 0, 14, 250, Fixed),
                    s("DRAIN", "", At(47), 59, 21, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==3 $S[2]++@complete", At(48), 58, 53, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==5 $S[2]++@complete", At(49), 53, 53, 0, Barrier(Some(5), Then::Inc)),
                    s("DRAIN", "", At(50), 57, 14, 0, Drain),
                    s("DRAIN", "", At(51), 55, 14, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==3 $S[2]++@complete", At(52), 58, 53, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==5 $S[2]++@complete", At(53), 53, 53, 0, Barrier(Some(5), Then::Inc)),
                    s("DRAIN", "", At(54), 57, 14, 0, Drain),
                    s("DRAIN", "", At(55), 55, 14, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==3 $S[2]++@complete", At(56), 58, 53, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==5 $S[2]++@complete", At(57), 53, 53, 0, Barrier(Some(5), Then::Inc)),
                ],
                post: &[
                    s("DRAIN", "", After(0), 0, 14, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==3 $S[2]++@complete", After(1), 54, 53, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==5 $S[2]++@complete", After(2), 43, 53, 0, Barrier(Some(5), Then::Inc)),
                    s("DRAIN", "", After(3), 53, 14, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO ", After(4), 48, 323, 0, Fixed),
                    s("DRAIN", "", After(5), 49, 14, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==3 $S[2]++@complete", After(6), 48, 53, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==5 $S[2]++@complete", After(7), 43, 53, 0, Barrier(Some(5), Then::Inc)),
                    s("DRAIN", "", After(8), 47, 14, 0, Drain),
                    s("NOTIFY", " hint=3 notification=EXPLICIT  trace=START ", After(9), 48, 14, 0, Fixed),
                ],
            },
            // first core, Sync
            Engine {
                program_pc: 71,
                pre: &[
                    s("NOTIFY", " hint=2 notification=EXPLICIT  trace=START ", At(48), 0, 5, 63, Fixed),
                    s("DRAIN", "", At(49), 72, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==4 $S[2]++@complete", At(50), 56, 475, 0, Barrier(Some(4), Then::Inc)),
                    s("DRAIN", "", At(51), 42, 8, 0, Drain),
                    s("DRAIN", "", At(52), 64, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==4 $S[2]++@complete", At(53), 56, 475, 0, Barrier(Some(4), Then::Inc)),
                    s("DRAIN", "", At(54), 42, 8, 0, Drain),
                    s("DRAIN", "", At(55), 64, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==4 $S[2]++@complete", At(56), 56, 475, 0, Barrier(Some(4), Then::Inc)),
                ],
                post: &[
                    s("DRAIN", "", At(63), 0, 123, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==4 $S[2]++@complete", At(64), 42, 475, 0, Barrier(Some(4), Then::Inc)),
                    s("DRAIN", "", At(65), 34, 7, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO ", At(66), 41, 111, 0, Fixed),
                    s("DRAIN", "", At(67), 34, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==4 $S[2]++@complete", At(68), 42, 475, 0, Barrier(Some(4), Then::Inc)),
                    s("DRAIN", "", At(69), 34, 8, 0, Drain),
                    s("WRITE", "", At(70), 41, 58, 0, Fixed),
                ],
            },
        ],
        [
            // second core, Tensor
            Engine {
                program_pc: 61,
                pre: &[
                    s("EVENT_SEMAPHORE", "setter=0  $S[2]+=1@complete", At(13), 78, 68, 207, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==8 $S[2]=0@complete", At(14), 75, 6, 0, Barrier(Some(8), Then::Zero)),
                    s("DRAIN", "", At(15), 74, 12, 0, Drain),
                    s("DRAIN", "", At(16), 78, 12, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0  $S[2]+=1@complete", At(17), 78, 54, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==8 $S[2]=0@complete", At(18), 74, 6, 0, Barrier(Some(8), Then::Zero)),
                    s("DRAIN", "", At(19), 74, 12, 0, Drain),
                    s("NOTIFY", " hint=2 notification=EXPLICIT  trace=START ", At(20), 78, 8, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=EQ dtype=int32 cmp0=$R[0] cmp1=0 ", At(21), 78, 189, 0, Fixed),
                    s("NOTIFY", " hint=2 notification=EXPLICIT  trace=START ", At(45), 79, 8, 0, Fixed),
                    s("WRITE", "", At(46), 81, 84, 0, Fixed),
                    s("NOP", "", At(47), 2070, 26, 10817, Fixed),
                    s("DRAIN", "", At(48), 78, 15, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0  $S[2]+=1@complete", At(49), 78, 68, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==8 $S[2]=0@complete", At(50), 112, 6, 0, Barrier(Some(8), Then::Zero)),
                    s("DRAIN", "", At(51), 74, 12, 0, Drain),
                    s("DRAIN", "", At(52), 78, 12, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0  $S[2]+=1@complete", At(53), 78, 54, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==8 $S[2]=0@complete", At(54), 74, 6, 0, Barrier(Some(8), Then::Zero)),
                    s("DRAIN", "", At(55), 74, 12, 0, Drain),
                    s("WRITE", "", At(56), 81, 206, 0, Fixed),
                    s("EVENT_SEMAPHORE", "setter=0 $S[1]>=1 $S[1]--@complete", At(57), 412, 6, 0, Until(12954)),
                    s("DRAIN", "", At(58), 75, 12, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0  $S[2]+=1@complete", At(59), 78, 54, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==8 $S[2]=0@complete", At(60), 74, 6, 0, Barrier(Some(8), Then::Zero)),
                ],
                post: &[
                    s("DRAIN", "", After(0), 0, 12, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0  $S[2]+=1@complete", After(1), 779, 6, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==8 $S[2]=0@complete", After(2), 14, 6, 0, Barrier(Some(8), Then::Zero)),
                    s("DRAIN", "", After(3), 94, 12, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO ", After(4), 65, 375, 0, Fixed),
                    s("DRAIN", "", After(5), 123, 12, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0  $S[2]+=1@complete", After(6), 65, 54, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==8 $S[2]=0@complete", After(7), 62, 6, 0, Barrier(Some(8), Then::Zero)),
                    s("DRAIN", "", After(8), 62, 12, 0, Drain),
                    s("NOTIFY", " hint=3 notification=EXPLICIT  trace=START ", After(9), 65, 8, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=ALWAYS debugHint=2", After(10), 65, 168, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(22), 90, 43, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(23), 100, 38, 0, Fixed),
                ],
            },
            // second core, Scalar
            Engine {
                program_pc: 52,
                pre: &[
                    s("DRAIN", "", At(12), 0, 39, 1693, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==1 $S[2]++@complete", At(13), 64, 5, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==7 $S[2]++@complete", At(14), 62, 5, 0, Barrier(Some(7), Then::Inc)),
                    s("DRAIN", "", At(15), 62, 12, 0, Drain),
                    s("WRITE", "", At(16), 65, 121, 0, Fixed),
                    s("DRAIN", "", At(17), 297, 19, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==1 $S[2]++@complete", At(18), 64, 5, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==7 $S[2]++@complete", At(19), 62, 5, 0, Barrier(Some(7), Then::Inc)),
                    s("DRAIN", "", At(20), 62, 12, 0, Drain),
                    s("NOTIFY", " hint=2 notification=EXPLICIT  trace=START ", At(21), 64, 4, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=EQ dtype=int32 cmp0=$R[0] cmp1=0 ", At(22), 64, 189, 0, Fixed),
                    s("NOTIFY", " hint=2 notification=EXPLICIT  trace=START ", At(40), 68, 4, 0, Fixed),
                    s("DRAIN", "", At(41), 64, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==1 $S[2]++@complete", At(42), 68, 5, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==7 $S[2]++@complete", At(43), 62, 5, 0, Barrier(Some(7), Then::Inc)),
                    s("DRAIN", "", At(44), 99, 8, 0, Drain),
                    s("DRAIN", "", At(45), 68, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==1 $S[2]++@complete", At(46), 68, 5, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==7 $S[2]++@complete", At(47), 62, 5, 0, Barrier(Some(7), Then::Inc)),
                    s("DRAIN", "", At(48), 62, 8, 0, Drain),
                    s("DRAIN", "", At(49), 68, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==1 $S[2]++@complete", At(50), 68, 5, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==7 $S[2]++@complete", At(51), 62, 5, 0, Barrier(Some(7), Then::Inc)),
                ],
                post: &[
                    s("DRAIN", "", After(0), 0, 14, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==1 $S[2]++@complete", After(1), 14, 5, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==7 $S[2]++@complete", After(2), 18, 5, 0, Barrier(Some(7), Then::Inc)),
                    s("DRAIN", "", After(3), 50, 8, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO ", After(4), 56, 272, 0, Fixed),
                    s("DRAIN", "", After(5), 56, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==1 $S[2]++@complete", After(6), 89, 5, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==7 $S[2]++@complete", After(7), 50, 5, 0, Barrier(Some(7), Then::Inc)),
                    s("DRAIN", "", After(8), 50, 8, 0, Drain),
                    s("NOTIFY", " hint=3 notification=EXPLICIT  trace=START ", After(9), 56, 4, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=ALWAYS debugHint=2", After(10), 52, 168, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(23), 78, 41, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(24), 88, 35, 0, Fixed),
                ],
            },
            // second core, GpSimd
            Engine {
                program_pc: 55,
                pre: &[
                    s("DRAIN", "", At(14), 0, 30, 3474, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==2 $S[2]++@complete", At(15), 53, 62, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==6 $S[2]++@complete", At(16), 46, 62, 0, Barrier(Some(6), Then::Inc)),
                    s("DRAIN", "", At(17), 46, 33, 0, Drain),
                    s("WRITE", "", At(18), 48, 116, 0, Fixed),
                    s("DRAIN", "", At(19), 290, 38, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==2 $S[2]++@complete", At(20), 48, 62, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==6 $S[2]++@complete", At(21), 42, 62, 0, Barrier(Some(6), Then::Inc)),
                    s("DRAIN", "", At(22), 46, 33, 0, Drain),
                    s("NOTIFY", " hint=2 notification=EXPLICIT  trace=START ", At(23), 47, 11, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=EQ dtype=int32 cmp0=$R[0] cmp1=0 ", At(24), 47, 66, 0, Fixed),
                    s("NOTIFY", " hint=2 notification=EXPLICIT  trace=START ", At(43), 188, 11, 0, Fixed),
                    s("DRAIN", "", At(44), 48, 33, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==2 $S[2]++@complete", At(45), 48, 62, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==6 $S[2]++@complete", At(46), 42, 62, 0, Barrier(Some(6), Then::Inc)),
                    s("DRAIN", "", At(47), 46, 28, 0, Drain),
                    s("DRAIN", "", At(48), 44, 27, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==2 $S[2]++@complete", At(49), 48, 62, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==6 $S[2]++@complete", At(50), 42, 62, 0, Barrier(Some(6), Then::Inc)),
                    s("DRAIN", "", At(51), 46, 28, 0, Drain),
                    s("DRAIN", "", At(52), 44, 28, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==2 $S[2]++@complete", At(53), 48, 62, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==6 $S[2]++@complete", At(54), 42, 62, 0, Barrier(Some(6), Then::Inc)),
                ],
                post: &[
                    s("DRAIN", "", After(0), 0, 28, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==2 $S[2]++@complete", After(1), 39, 62, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==6 $S[2]++@complete", After(2), 572, 62, 0, Barrier(Some(6), Then::Inc)),
                    s("DRAIN", "", After(3), 38, 28, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO ", After(4), 38, 298, 0, Fixed),
                    s("DRAIN", "", After(5), 43, 28, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==2 $S[2]++@complete", After(6), 39, 62, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==6 $S[2]++@complete", After(7), 34, 62, 0, Barrier(Some(6), Then::Inc)),
                    s("DRAIN", "", After(8), 38, 28, 0, Drain),
                    s("NOTIFY", " hint=3 notification=EXPLICIT  trace=START ", After(9), 38, 11, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=ALWAYS debugHint=2", After(10), 38, 55, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(25), 172, 42, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(26), 57, 38, 0, Fixed),
                ],
            },
            // second core, Vector
            Engine {
                program_pc: 58,
                pre: &[
                    s("DRAIN", "", At(17), 0, 17, 5266, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==3 $S[2]++@complete", At(18), 58, 54, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==5 $S[2]++@complete", At(19), 53, 54, 0, Barrier(Some(5), Then::Inc)),
                    s("DRAIN", "", At(20), 57, 21, 0, Drain),
                    s("WRITE", "", At(21), 59, 145, 0, Fixed),
                    s("NOP", "", At(22), 301, 31, 0, Fixed),
                    s("DRAIN", "", At(23), 59, 17, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==3 $S[2]++@complete", At(24), 58, 54, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==5 $S[2]++@complete", At(25), 53, 54, 0, Barrier(Some(5), Then::Inc)),
                    s("DRAIN", "", At(26), 57, 21, 0, Drain),
                    s("NOTIFY", " hint=2 notification=EXPLICIT  trace=START ", At(27), 58, 18, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=EQ dtype=int32 cmp0=$R[0] cmp1=0 ", At(28), 59, 81, 0, Fixed),
                    s("NOTIFY", " hint=2 notification=EXPLICIT  trace=START ", At(46), 248, 14, 0, Fixed),
                    s("DRAIN", "", At(47), 59, 21, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==3 $S[2]++@complete", At(48), 58, 54, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==5 $S[2]++@complete", At(49), 53, 54, 0, Barrier(Some(5), Then::Inc)),
                    s("DRAIN", "", At(50), 57, 14, 0, Drain),
                    s("DRAIN", "", At(51), 55, 14, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==3 $S[2]++@complete", At(52), 58, 54, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==5 $S[2]++@complete", At(53), 53, 54, 0, Barrier(Some(5), Then::Inc)),
                    s("DRAIN", "", At(54), 57, 14, 0, Drain),
                    s("DRAIN", "", At(55), 55, 14, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==3 $S[2]++@complete", At(56), 58, 54, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==5 $S[2]++@complete", At(57), 53, 54, 0, Barrier(Some(5), Then::Inc)),
                ],
                post: &[
                    s("DRAIN", "", After(0), 0, 14, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==3 $S[2]++@complete", After(1), 54, 54, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==5 $S[2]++@complete", After(2), 43, 54, 0, Barrier(Some(5), Then::Inc)),
                    s("DRAIN", "", After(3), 47, 14, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO ", After(4), 48, 324, 0, Fixed),
                    s("DRAIN", "", After(5), 49, 14, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==3 $S[2]++@complete", After(6), 48, 54, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==5 $S[2]++@complete", After(7), 43, 54, 0, Barrier(Some(5), Then::Inc)),
                    s("DRAIN", "", After(8), 47, 14, 0, Drain),
                    s("NOTIFY", " hint=3 notification=EXPLICIT  trace=START ", After(9), 48, 14, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=ALWAYS debugHint=2", After(10), 49, 69, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(29), 216, 54, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(30), 69, 45, 0, Fixed),
                ],
            },
            // second core, Sync
            Engine {
                program_pc: 44,
                pre: &[
                    s("DRAIN", "", At(11), 0, 20, 6798, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==4 $S[2]++@complete", At(12), 56, 14, 0, Barrier(Some(4), Then::Inc)),
                    s("DRAIN", "", At(13), 43, 13, 0, Drain),
                    s("DRAIN", "", At(14), 64, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==4 $S[2]++@complete", At(15), 56, 14, 0, Barrier(Some(4), Then::Inc)),
                    s("DRAIN", "", At(16), 42, 8, 0, Drain),
                    s("NOTIFY", " hint=2 notification=EXPLICIT  trace=START ", At(17), 55, 8, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=EQ dtype=int32 cmp0=$R[0] cmp1=0 ", At(18), 45, 64, 0, Fixed),
                    s("NOTIFY", " hint=2 notification=EXPLICIT  trace=START ", At(35), 195, 5, 0, Fixed),
                    s("DRAIN", "", At(36), 72, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==4 $S[2]++@complete", At(37), 56, 14, 0, Barrier(Some(4), Then::Inc)),
                    s("DRAIN", "", At(38), 42, 8, 0, Drain),
                    s("DRAIN", "", At(39), 64, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==4 $S[2]++@complete", At(40), 56, 14, 0, Barrier(Some(4), Then::Inc)),
                    s("DRAIN", "", At(41), 482, 731, 0, Drain),
                    s("DRAIN", "", At(42), 14, 738, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==4 $S[2]++@complete", At(43), 730, 14, 0, Barrier(Some(4), Then::Inc)),
                ],
                post: &[
                    s("DRAIN", "", After(0), 0, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==4 $S[2]++@complete", After(1), 42, 14, 0, Barrier(Some(4), Then::Inc)),
                    s("DRAIN", "", After(2), 39, 8, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO ", After(3), 41, 116, 0, Fixed),
                    s("DRAIN", "", After(4), 34, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", "setter=0 $S[2]==4 $S[2]++@complete", After(5), 42, 14, 0, Barrier(Some(4), Then::Inc)),
                    s("DRAIN", "", After(6), 34, 7, 0, Drain),
                    s("NOTIFY", " hint=3 notification=EXPLICIT  trace=START ", After(7), 42, 8, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=ALWAYS debugHint=2", After(8), 37, 58, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(19), 216, 18, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(20), 88, 12, 0, Fixed),
                ],
            },
        ],
    ],
    dma: [&[], &[]],
};

/// Runtime 2.30: measured on the version-6 device traces of the fit set (docs/simulator.md §7.6).
pub(crate) const V2_30: Version = Version {
    name: "2.30",
    roles: [
        [
            // first core, Tensor
            Engine {
                program_pc: 66,
                pre: &[
                    s("WRITE", " data=0x2,0x2 size=4,4 dst=0x80100252f038,0x80100250f038 ", At(50), 0, 70, 84, Fixed),
                    s("NOP", "$E[4]==1- cycle=1 ", At(51), 2813, 22, 2967, Fixed),
                    s("DRAIN", " ", At(52), 79, 19, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0  $S[2]+=1@complete ", At(53), 79, 67, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==8 $S[2]=0@complete ", At(54), 76, 52, 0, Barrier(Some(8), Then::Zero)),
                    s("DRAIN", " ", At(55), 152, 12, 0, Drain),
                    s("TENSOR_LOAD", " addr=uint32@0x8005c0365000[1,0][2,1] data=$R[130],$R[131] ", At(56), 84, 1241, 0, Fixed),
                    s("DRAIN", " ", At(57), 439, 12, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0  $S[2]+=1@complete ", At(58), 79, 52, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==8 $S[2]=0@complete ", At(59), 76, 52, 0, Barrier(Some(8), Then::Zero)),
                    s("DRAIN", " ", At(60), 76, 12, 0, Drain),
                    s("WRITE", " data=0x1 size=4 dst=0x803802701804 ", At(61), 80, 231, 0, Fixed),
                    s("EVENT_SEMAPHORE", " setter=0 $S[1]>=1 $S[1]--@complete ", At(62), 315, 52, 0, Until(12738)),
                    s("DRAIN", " ", At(63), 76, 12, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0  $S[2]+=1@complete ", At(64), 79, 56, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==8 $S[2]=0@complete ", At(65), 77, 52, 0, Barrier(Some(8), Then::Zero)),
                ],
                post: &[
                    s("DRAIN", " ", After(0), 0, 253, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0  $S[2]+=1@complete ", After(1), 72, 52, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==8 $S[2]=0@complete ", After(2), 63, 52, 0, Barrier(Some(8), Then::Zero)),
                    s("DRAIN", " ", After(3), 63, 18, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO first=3 last=53 ", After(4), 67, 375, 0, Fixed),
                    s("DRAIN", " ", After(5), 123, 12, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0  $S[2]+=1@complete ", After(6), 67, 52, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==8 $S[2]=0@complete ", After(7), 63, 52, 0, Barrier(Some(8), Then::Zero)),
                    s("DRAIN", " ", After(8), 63, 12, 0, Drain),
                ],
            },
            // first core, Scalar
            Engine {
                program_pc: 66,
                pre: &[
                    s("TENSOR_LOAD", " addr=uint32@0x8005c035e000[0,0][1,1] data=$R[0] ", At(37), 0, 481, 3840, Fixed),
                    s("DRAIN", " ", At(38), 66, 8, 0, Drain),
                    s("COMPARE_BRANCH", " cmp_op=EQ dtype=int32 cmp0=$R[0] cmp1=0 label_id=896 ", At(39), 68, 237, 0, Fixed),
                    s("NOTIFY", "  hint=2 notification=EXPLICIT  trace=START ", At(53), 66, 4, 0, Fixed),
                    s("DRAIN", " ", At(54), 64, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==1 $S[2]++@complete ", At(55), 68, 40, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==7 $S[2]++@complete ", At(56), 62, 40, 0, Barrier(Some(7), Then::Inc)),
                    s("DRAIN", " ", At(57), 62, 8, 0, Drain),
                    s("TENSOR_LOAD", " addr=uint32@0x8005c0365000[1,0][2,1] data=$R[130],$R[131] ", At(58), 68, 1016, 0, Fixed),
                    s("DRAIN", " ", At(59), 203, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==1 $S[2]++@complete ", At(60), 68, 40, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==7 $S[2]++@complete ", At(61), 62, 40, 0, Barrier(Some(7), Then::Inc)),
                    s("DRAIN", " ", At(62), 62, 8, 0, Drain),
                    s("DRAIN", " ", At(63), 68, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==1 $S[2]++@complete ", At(64), 68, 40, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==7 $S[2]++@complete ", At(65), 133, 40, 0, Barrier(Some(7), Then::Inc)),
                ],
                post: &[
                    s("DRAIN", " ", After(0), 0, 296, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==1 $S[2]++@complete ", After(1), 58, 40, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==7 $S[2]++@complete ", After(2), 50, 40, 0, Barrier(Some(7), Then::Inc)),
                    s("DRAIN", " ", After(3), 50, 13, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO first=54 last=104 ", After(4), 56, 274, 0, Fixed),
                    s("DRAIN", " ", After(5), 56, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==1 $S[2]++@complete ", After(6), 56, 40, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==7 $S[2]++@complete ", After(7), 50, 40, 0, Barrier(Some(7), Then::Inc)),
                    s("DRAIN", " ", After(8), 50, 8, 0, Drain),
                    s("NOTIFY", "  hint=3 notification=EXPLICIT  trace=START ", After(9), 56, 4, 0, Fixed),
                ],
            },
            // first core, GpSimd
            Engine {
                program_pc: 61,
                pre: &[
                    s("TENSOR_LOAD", " addr=uint32@0x8005c035e000[0,0][1,1] data=$R[0] ", At(30), 0, 682, 5986, Fixed),
                    s("DRAIN", " ", At(31), 48, 29, 0, Drain),
                    s("COMPARE_BRANCH", " cmp_op=EQ dtype=int32 cmp0=$R[0] cmp1=0 label_id=1024 ", At(32), 48, 128, 0, Fixed),
                    s("NOTIFY", "  hint=2 notification=EXPLICIT  trace=START ", At(48), 212, 21, 0, Fixed),
                    s("DRAIN", " ", At(49), 47, 29, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==2 $S[2]++@complete ", At(50), 48, 46, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==6 $S[2]++@complete ", At(51), 42, 46, 0, Barrier(Some(6), Then::Inc)),
                    s("DRAIN", " ", At(52), 45, 29, 0, Drain),
                    s("TENSOR_LOAD", " addr=uint32@0x8005c0365000[1,0][2,1] data=$R[130],$R[131] ", At(53), 47, 1022, 0, Fixed),
                    s("DRAIN", " ", At(54), 194, 29, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==2 $S[2]++@complete ", At(55), 48, 46, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==6 $S[2]++@complete ", At(56), 42, 46, 0, Barrier(Some(6), Then::Inc)),
                    s("DRAIN", " ", At(57), 45, 29, 0, Drain),
                    s("DRAIN", " ", At(58), 44, 29, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==2 $S[2]++@complete ", At(59), 48, 46, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==6 $S[2]++@complete ", At(60), 42, 46, 0, Barrier(Some(6), Then::Inc)),
                ],
                post: &[
                    s("DRAIN", " ", After(0), 0, 25, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==2 $S[2]++@complete ", After(1), 39, 46, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==6 $S[2]++@complete ", After(2), 34, 46, 0, Barrier(Some(6), Then::Inc)),
                    s("DRAIN", " ", After(3), 37, 29, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO first=105 last=155 ", After(4), 39, 288, 0, Fixed),
                    s("DRAIN", " ", After(5), 42, 29, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==2 $S[2]++@complete ", After(6), 39, 46, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==6 $S[2]++@complete ", After(7), 34, 46, 0, Barrier(Some(6), Then::Inc)),
                    s("DRAIN", " ", After(8), 37, 29, 0, Drain),
                    s("NOTIFY", "  hint=3 notification=EXPLICIT  trace=START ", After(9), 39, 11, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=ALWAYS label_id={back:27} debugHint=2", After(10), 39, 71, 0, Fixed),
                ],
            },
            // first core, Vector
            Engine {
                program_pc: 66,
                pre: &[
                    s("TENSOR_LOAD", " addr=uint32@0x8005c035e000[0,0][1,1] data=$R[0] ", At(37), 0, 757, 4065, Fixed),
                    s("DRAIN", " ", At(38), 60, 14, 0, Drain),
                    s("COMPARE_BRANCH", " cmp_op=EQ dtype=int32 cmp0=$R[0] cmp1=0 label_id=896 ", At(39), 59, 152, 0, Fixed),
                    s("NOTIFY", "  hint=2 notification=EXPLICIT  trace=START ", At(53), 255, 14, 0, Fixed),
                    s("DRAIN", " ", At(54), 58, 17, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==3 $S[2]++@complete ", At(55), 60, 53, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==5 $S[2]++@complete ", At(56), 53, 53, 0, Barrier(Some(5), Then::Inc)),
                    s("DRAIN", " ", At(57), 56, 14, 0, Drain),
                    s("TENSOR_LOAD", " addr=uint32@0x8005c0365000[1,0][2,1] data=$R[130],$R[131] ", At(58), 59, 1070, 0, Fixed),
                    s("DRAIN", " ", At(59), 192, 14, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==3 $S[2]++@complete ", At(60), 64, 53, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==5 $S[2]++@complete ", At(61), 53, 53, 0, Barrier(Some(5), Then::Inc)),
                    s("DRAIN", " ", At(62), 56, 14, 0, Drain),
                    s("DRAIN", " ", At(63), 55, 14, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==3 $S[2]++@complete ", At(64), 59, 53, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==5 $S[2]++@complete ", At(65), 53, 53, 0, Barrier(Some(5), Then::Inc)),
                ],
                post: &[
                    s("DRAIN", " ", After(0), 0, 248, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==3 $S[2]++@complete ", After(1), 55, 53, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==5 $S[2]++@complete ", After(2), 43, 53, 0, Barrier(Some(5), Then::Inc)),
                    s("DRAIN", " ", After(3), 53, 20, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO first=156 last=206 ", After(4), 49, 310, 0, Fixed),
                    s("DRAIN", " ", After(5), 48, 14, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==3 $S[2]++@complete ", After(6), 49, 53, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==5 $S[2]++@complete ", After(7), 43, 53, 0, Barrier(Some(5), Then::Inc)),
                    s("DRAIN", " ", After(8), 46, 14, 0, Drain),
                    s("NOTIFY", "  hint=3 notification=EXPLICIT  trace=START ", After(9), 49, 14, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=ALWAYS label_id={back:34} debugHint=2", After(10), 49, 69, 0, Fixed),
                ],
            },
            // first core, Sync
            Engine {
                program_pc: 49,
                pre: &[
                    s("TENSOR_LOAD", " addr=uint32@0x8005c035e000[0,0][1,1] data=$R[0] ", At(24), 0, 646, 7980, Fixed),
                    s("DRAIN", " ", At(25), 58, 8, 0, Drain),
                    s("COMPARE_BRANCH", " cmp_op=EQ dtype=int32 cmp0=$R[0] cmp1=0 label_id=832 ", At(26), 67, 123, 0, Fixed),
                    s("NOTIFY", "  hint=2 notification=EXPLICIT  trace=START ", At(39), 214, 10, 0, Fixed),
                    s("DRAIN", " ", At(40), 69, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==4 $S[2]++@complete ", At(41), 55, 30, 0, Barrier(Some(4), Then::Inc)),
                    s("DRAIN", " ", At(42), 42, 8, 0, Drain),
                    s("TENSOR_LOAD", " addr=uint32@0x8005c0365000[1,0][2,1] data=$R[130],$R[131] ", At(43), 53, 971, 0, Fixed),
                    s("DRAIN", " ", At(44), 184, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==4 $S[2]++@complete ", At(45), 55, 30, 0, Barrier(Some(4), Then::Inc)),
                    s("DRAIN", " ", At(46), 42, 8, 0, Drain),
                    s("DRAIN", " ", At(47), 64, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==4 $S[2]++@complete ", At(48), 55, 30, 0, Barrier(Some(4), Then::Inc)),
                ],
                post: &[
                    s("DRAIN", " ", After(0), 0, 374, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==4 $S[2]++@complete ", After(1), 47, 30, 0, Barrier(Some(4), Then::Inc)),
                    s("DRAIN", " ", After(2), 39, 8, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO first=207 last=255 ", After(3), 40, 99, 0, Fixed),
                    s("DRAIN", " ", After(4), 34, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==4 $S[2]++@complete ", After(5), 42, 30, 0, Barrier(Some(4), Then::Inc)),
                    s("DRAIN", " ", After(6), 34, 8, 0, Drain),
                    s("NOTIFY", "  hint=3 notification=EXPLICIT  trace=START ", After(7), 40, 10, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=ALWAYS label_id={back:21} debugHint=2", After(8), 37, 55, 0, Fixed),
                ],
            },
        ],
        [
            // second core, Tensor
            Engine {
                program_pc: 65,
                pre: &[
                    s("NOP", "$E[3]+@complete cycle=1 ", At(33), 79, 13, 125, Fixed),
                    s("TENSOR_LOAD", " addr=uint32@0x8005c035f000[0,0][1,1] data=$R[0] ", At(34), 79, 638, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=EQ dtype=int32 cmp0=$R[0] cmp1=0 label_id=896 ", At(35), 83, 233, 0, Fixed),
                    s("NOTIFY", "  hint=2 notification=EXPLICIT  trace=START ", At(49), 81, 8, 0, Fixed),
                    s("WRITE", " data=0x1,0x1 size=4,4 dst=0x80100352f038,0x80100350f038 ", At(50), 80, 75, 0, Fixed),
                    s("NOP", "$E[4]==1- cycle=1 ", At(51), 2090, 22, 3583, Fixed),
                    s("DRAIN", " ", At(52), 79, 19, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0  $S[2]+=1@complete ", At(53), 79, 68, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==8 $S[2]=0@complete ", At(54), 76, 52, 0, Barrier(Some(8), Then::Zero)),
                    s("DRAIN", " ", At(55), 147, 12, 0, Drain),
                    s("DRAIN", " ", At(56), 79, 12, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0  $S[2]+=1@complete ", At(57), 79, 52, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==8 $S[2]=0@complete ", At(58), 76, 52, 0, Barrier(Some(8), Then::Zero)),
                    s("DRAIN", " ", At(59), 76, 12, 0, Drain),
                    s("WRITE", " data=0x1 size=4 dst=0x802802701804 ", At(60), 80, 226, 0, Fixed),
                    s("EVENT_SEMAPHORE", " setter=0 $S[1]>=1 $S[1]--@complete ", At(61), 302, 52, 0, Until(12691)),
                    s("DRAIN", " ", At(62), 76, 12, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0  $S[2]+=1@complete ", At(63), 79, 52, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==8 $S[2]=0@complete ", At(64), 76, 52, 0, Barrier(Some(8), Then::Zero)),
                ],
                post: &[
                    s("DRAIN", " ", After(0), 0, 12, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0  $S[2]+=1@complete ", After(1), 72, 52, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==8 $S[2]=0@complete ", After(2), 63, 52, 0, Barrier(Some(8), Then::Zero)),
                    s("DRAIN", " ", After(3), 63, 12, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO first=3 last=53 ", After(4), 124, 373, 0, Fixed),
                    s("DRAIN", " ", After(5), 123, 12, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0  $S[2]+=1@complete ", After(6), 67, 52, 0, Barrier(None, Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==8 $S[2]=0@complete ", After(7), 63, 52, 0, Barrier(Some(8), Then::Zero)),
                    s("DRAIN", " ", After(8), 63, 12, 0, Drain),
                    s("NOTIFY", "  hint=3 notification=EXPLICIT  trace=START ", After(9), 67, 8, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=ALWAYS label_id={back:24} debugHint=2", After(10), 67, 186, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(24), 92, 38, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(25), 102, 38, 0, Fixed),
                ],
            },
            // second core, Scalar
            Engine {
                program_pc: 55,
                pre: &[
                    s("TENSOR_LOAD", " addr=uint32@0x8005c035f000[0,0][1,1] data=$R[0] ", At(27), 0, 618, 4437, Fixed),
                    s("DRAIN", " ", At(28), 66, 8, 0, Drain),
                    s("COMPARE_BRANCH", " cmp_op=EQ dtype=int32 cmp0=$R[0] cmp1=0 label_id=896 ", At(29), 68, 222, 0, Fixed),
                    s("NOTIFY", "  hint=2 notification=EXPLICIT  trace=START ", At(43), 66, 4, 0, Fixed),
                    s("DRAIN", " ", At(44), 64, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==1 $S[2]++@complete ", At(45), 68, 40, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==7 $S[2]++@complete ", At(46), 62, 40, 0, Barrier(Some(7), Then::Inc)),
                    s("DRAIN", " ", At(47), 62, 8, 0, Drain),
                    s("DRAIN", " ", At(48), 68, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==1 $S[2]++@complete ", At(49), 68, 40, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==7 $S[2]++@complete ", At(50), 62, 40, 0, Barrier(Some(7), Then::Inc)),
                    s("DRAIN", " ", At(51), 62, 8, 0, Drain),
                    s("DRAIN", " ", At(52), 68, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==1 $S[2]++@complete ", At(53), 68, 40, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==7 $S[2]++@complete ", At(54), 62, 40, 0, Barrier(Some(7), Then::Inc)),
                ],
                post: &[
                    s("DRAIN", " ", After(0), 0, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==1 $S[2]++@complete ", After(1), 61, 40, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==7 $S[2]++@complete ", After(2), 50, 40, 0, Barrier(Some(7), Then::Inc)),
                    s("DRAIN", " ", After(3), 50, 8, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO first=54 last=104 ", After(4), 56, 256, 0, Fixed),
                    s("DRAIN", " ", After(5), 56, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==1 $S[2]++@complete ", After(6), 56, 40, 0, Barrier(Some(1), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==7 $S[2]++@complete ", After(7), 50, 40, 0, Barrier(Some(7), Then::Inc)),
                    s("DRAIN", " ", After(8), 50, 8, 0, Drain),
                    s("NOTIFY", "  hint=3 notification=EXPLICIT  trace=START ", After(9), 56, 4, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=ALWAYS label_id={back:24} debugHint=2", After(10), 52, 172, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(24), 77, 40, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(25), 88, 35, 0, Fixed),
                ],
            },
            // second core, GpSimd
            Engine {
                program_pc: 60,
                pre: &[
                    s("TENSOR_LOAD", " addr=uint32@0x8005c035f000[0,0][1,1] data=$R[0] ", At(30), 0, 644, 5131, Fixed),
                    s("DRAIN", " ", At(31), 48, 29, 0, Drain),
                    s("COMPARE_BRANCH", " cmp_op=EQ dtype=int32 cmp0=$R[0] cmp1=0 label_id=1024 ", At(32), 48, 124, 0, Fixed),
                    s("NOTIFY", "  hint=2 notification=EXPLICIT  trace=START ", At(48), 207, 16, 0, Fixed),
                    s("DRAIN", " ", At(49), 47, 29, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==2 $S[2]++@complete ", At(50), 48, 46, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==6 $S[2]++@complete ", At(51), 42, 46, 0, Barrier(Some(6), Then::Inc)),
                    s("DRAIN", " ", At(52), 45, 29, 0, Drain),
                    s("DRAIN", " ", At(53), 44, 29, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==2 $S[2]++@complete ", At(54), 48, 46, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==6 $S[2]++@complete ", At(55), 42, 46, 0, Barrier(Some(6), Then::Inc)),
                    s("DRAIN", " ", At(56), 45, 29, 0, Drain),
                    s("DRAIN", " ", At(57), 44, 29, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==2 $S[2]++@complete ", At(58), 48, 46, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==6 $S[2]++@complete ", At(59), 42, 46, 0, Barrier(Some(6), Then::Inc)),
                ],
                post: &[
                    s("DRAIN", " ", After(0), 0, 25, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==2 $S[2]++@complete ", After(1), 44, 46, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==6 $S[2]++@complete ", After(2), 34, 46, 0, Barrier(Some(6), Then::Inc)),
                    s("DRAIN", " ", After(3), 37, 29, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO first=105 last=155 ", After(4), 39, 281, 0, Fixed),
                    s("DRAIN", " ", After(5), 38, 29, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==2 $S[2]++@complete ", After(6), 39, 46, 0, Barrier(Some(2), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==6 $S[2]++@complete ", After(7), 34, 46, 0, Barrier(Some(6), Then::Inc)),
                    s("DRAIN", " ", After(8), 37, 29, 0, Drain),
                    s("NOTIFY", "  hint=3 notification=EXPLICIT  trace=START ", After(9), 39, 11, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=ALWAYS label_id={back:27} debugHint=2", After(10), 39, 55, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(27), 187, 39, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(28), 57, 38, 0, Fixed),
                ],
            },
            // second core, Vector
            Engine {
                program_pc: 65,
                pre: &[
                    s("TENSOR_LOAD", " addr=uint32@0x8005c035f000[0,0][1,1] data=$R[0] ", At(37), 0, 686, 5387, Fixed),
                    s("DRAIN", " ", At(38), 60, 14, 0, Drain),
                    s("COMPARE_BRANCH", " cmp_op=EQ dtype=int32 cmp0=$R[0] cmp1=0 label_id=896 ", At(39), 59, 141, 0, Fixed),
                    s("NOTIFY", "  hint=2 notification=EXPLICIT  trace=START ", At(53), 244, 14, 0, Fixed),
                    s("DRAIN", " ", At(54), 58, 14, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==3 $S[2]++@complete ", At(55), 59, 54, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==5 $S[2]++@complete ", At(56), 53, 54, 0, Barrier(Some(5), Then::Inc)),
                    s("DRAIN", " ", At(57), 56, 14, 0, Drain),
                    s("DRAIN", " ", At(58), 55, 14, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==3 $S[2]++@complete ", At(59), 59, 54, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==5 $S[2]++@complete ", At(60), 53, 54, 0, Barrier(Some(5), Then::Inc)),
                    s("DRAIN", " ", At(61), 56, 14, 0, Drain),
                    s("DRAIN", " ", At(62), 55, 14, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==3 $S[2]++@complete ", At(63), 59, 54, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==5 $S[2]++@complete ", At(64), 53, 54, 0, Barrier(Some(5), Then::Inc)),
                ],
                post: &[
                    s("DRAIN", " ", After(0), 0, 14, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==3 $S[2]++@complete ", After(1), 55, 54, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==5 $S[2]++@complete ", After(2), 43, 54, 0, Barrier(Some(5), Then::Inc)),
                    s("DRAIN", " ", After(3), 46, 14, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO first=156 last=206 ", After(4), 49, 306, 0, Fixed),
                    s("DRAIN", " ", After(5), 48, 14, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==3 $S[2]++@complete ", After(6), 49, 54, 0, Barrier(Some(3), Then::Inc)),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==5 $S[2]++@complete ", After(7), 43, 54, 0, Barrier(Some(5), Then::Inc)),
                    s("DRAIN", " ", After(8), 46, 14, 0, Drain),
                    s("NOTIFY", "  hint=3 notification=EXPLICIT  trace=START ", After(9), 49, 14, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=ALWAYS label_id={back:34} debugHint=2", After(10), 49, 69, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(34), 234, 50, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(35), 69, 45, 0, Fixed),
                ],
            },
            // second core, Sync
            Engine {
                program_pc: 48,
                pre: &[
                    s("TENSOR_LOAD", " addr=uint32@0x8005c035f000[0,0][1,1] data=$R[0] ", At(24), 0, 630, 5192, Fixed),
                    s("DRAIN", " ", At(25), 52, 8, 0, Drain),
                    s("COMPARE_BRANCH", " cmp_op=EQ dtype=int32 cmp0=$R[0] cmp1=0 label_id=832 ", At(26), 67, 104, 0, Fixed),
                    s("NOTIFY", "  hint=2 notification=EXPLICIT  trace=START ", At(39), 204, 5, 0, Fixed),
                    s("DRAIN", " ", At(40), 69, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==4 $S[2]++@complete ", At(41), 55, 119, 0, Barrier(Some(4), Then::Inc)),
                    s("DRAIN", " ", At(42), 42, 8, 0, Drain),
                    s("DRAIN", " ", At(43), 64, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==4 $S[2]++@complete ", At(44), 55, 119, 0, Barrier(Some(4), Then::Inc)),
                    s("DRAIN", " ", At(45), 67, 14, 0, Drain),
                    s("DRAIN", " ", At(46), 365, 5, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==4 $S[2]++@complete ", At(47), 14, 119, 0, Barrier(Some(4), Then::Inc)),
                ],
                post: &[
                    s("DRAIN", " ", After(0), 0, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==4 $S[2]++@complete ", After(1), 47, 119, 0, Barrier(Some(4), Then::Inc)),
                    s("DRAIN", " ", After(2), 39, 8, 0, Drain),
                    s("EVENT_SEMAPHORE_RANGE_CLEAR", " mode=SEMAPHORE_ZERO first=207 last=255 ", After(3), 40, 99, 0, Fixed),
                    s("DRAIN", " ", After(4), 34, 8, 0, Drain),
                    s("EVENT_SEMAPHORE", " setter=0 $S[2]==4 $S[2]++@complete ", After(5), 42, 119, 0, Barrier(Some(4), Then::Inc)),
                    s("DRAIN", " ", After(6), 34, 8, 0, Drain),
                    s("NOTIFY", "  hint=3 notification=EXPLICIT  trace=START ", After(7), 40, 10, 0, Fixed),
                    s("COMPARE_BRANCH", " cmp_op=ALWAYS label_id={back:21} debugHint=2", After(8), 37, 58, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(21), 215, 13, 0, Fixed),
                    s("SET_ORDERING_MODE", " ordering_mode=strict ", At(22), 93, 13, 0, Fixed),
                ],
            },
        ],
    ],
    dma: [V2_30_DMA_FIRST, V2_30_DMA_SECOND],
};


#[cfg(test)]
mod tests {
    use super::*;

    /// Every engine of a role takes part in the same barrier rounds (else a core deadlocks).
    #[test]
    fn every_engine_of_a_role_runs_the_same_barrier_rounds() {
        for v in RuntimeVersion::ALL {
            for (r, role) in v.table().roles.iter().enumerate() {
                for part in [|e: &Engine| e.pre, |e: &Engine| e.post] {
                    let rounds: Vec<usize> = role
                        .iter()
                        .enumerate()
                        .map(|(i, e)| {
                            let waits = part(e)
                                .iter()
                                .filter(|s| matches!(s.kind, Barrier(Some(_), _)))
                                .count();
                            // PE and SP wait once per round, ACT, Pool and DVE twice.
                            if i == 0 || i == 4 {
                                waits
                            } else {
                                waits / 2
                            }
                        })
                        .collect();
                    assert!(rounds.windows(2).all(|w| w[0] == w[1]), "{v} role {r}: {rounds:?}");
                }
            }
        }
    }

    #[test]
    fn versions_parse() {
        assert_eq!(RuntimeVersion::parse("2.30"), Some(RuntimeVersion::V2_30));
        assert_eq!(RuntimeVersion::parse("2.27.23"), Some(RuntimeVersion::V2_27));
        assert_eq!(RuntimeVersion::parse("2.29"), None);
    }
}
