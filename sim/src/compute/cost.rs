//! The engine timing model: how long one instruction holds its engine ([`engine_timing`], in
//! cycles of the engine's clock; [`timing`], in device cycles) and the conversion to the
//! device time base ([`to_device_cycles`]). Implements the engine part of docs/simulator.md §7
//! "Timing": the figures are fitted to the instruction durations of the device traces of the
//! development NEFFs (docs/simulator.md §7.2 gives each one's measurement).
//!
//! An instruction has three figures:
//!
//! - **issue**: from its issue to the earliest issue of the engine's next instruction;
//! - **latency**: from its issue to its completion, when its semaphore update lands (the
//!   duration a profile shows); engines pipeline, so latency exceeds issue;
//! - **stream** (PE only): how long its moving operand occupies the array's input, which the
//!   next matmul waits for.
//!
//! | instruction | engine | issue | latency | stream |
//! |---|---|---|---|---|
//! | `matmul.mm` (N moving columns, b = 2 for a 4-byte moving dtype, else 1) | PE | 4 | 396 + N·b | max(N·b, 64) + 8 |
//! | `matmul.ld` (M stationary columns) | PE | 4 | 192 + M·2 (4-byte), 192 + M·5/16 (else) | — |
//! | `transpose` | PE | 4 | 396 + P | max(P, 64) + 8 |
//! | `act` (and ACT's `tensor_scalar`) | ACT, POOL | 210 + E | 330 + E | — |
//! | `tensor_copy` and other element-wise | ACT, POOL | 117 + E | 192 + E | — |
//! | element-wise, reduce, transpose | DVE | 67 + ⌈E / r⌉ | 149 + ⌈E / r⌉ | — |
//! | `memset`, `iota` | DVE | 72 + ⌈E / 4⌉ | 72 + ⌈E / 4⌉ | — |
//! | header, `write`, semaphore, event, `end`, `nop` | any | `sync_instruction_cycles` (device cycles) | same | — |
//! | pseudo-instructions | any | 0 | 0 | — |
//!
//! `E` is the output elements per partition (the input's for a reduce, max(P, F) for a DVE
//! transpose). DVE rates `r`, elements per partition per cycle: 2 for a copy whose operands
//! are all 2-byte, 8/5 for `tensor_scalar` from SBUF, 7/10 for `tensor_scalar` from PSUM, 1
//! otherwise; on trn1 (NeuronCore-v2, no measurement) 1 throughout.
//!
//! Records of the Neuron encoding decode into the same instructions and are charged by the
//! same table, except the records whose cost is their own ([`neuron_fixed`]: the table load,
//! DRAIN, SET_ORDERING_MODE, EVENT_SEMAPHORE, NOP, the register instructions).
//!
//! All arithmetic saturates, so a timing exists for any instruction, however malformed.
//! [`to_device_cycles`] converts engine cycles to the device time base, the SP (sequencer)
//! clock `target.spec().clocks.sp`, rounding up: `⌈cycles · f_sp / f_engine⌉`.

use nrt_hal::isa::{AccessPattern, Instruction, MemSpace};
use nrt_hal::{EngineKind, Target};

/// Cycles of an engine's own clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EngineCycles(pub u64);

/// PE: cycles from a matmul's issue to its result in PSUM, beyond its moving columns.
pub const PE_MATMUL_LATENCY: u64 = 396;
/// PE: the least a matmul occupies the array's moving stream.
pub const PE_STREAM_MIN: u64 = 64;
/// PE: stream cycles a matmul adds to its moving columns.
pub const PE_STREAM_EXTRA: u64 = 8;
/// PE: cycles from an LDWEIGHTS's issue to its weights in the array, beyond its columns.
pub const PE_LOAD_LATENCY: u64 = 192;
/// PE: issue cycles of LDWEIGHTS and MATMUL (the next instruction issues this soon).
pub const PE_ISSUE: u64 = 4;
/// ACT, POOL: issue and latency of `act` beyond its elements.
pub const ACT_ISSUE: u64 = 210;
/// See [`ACT_ISSUE`].
pub const ACT_LATENCY: u64 = 330;
/// ACT, POOL: issue and latency of a copy and other element-wise instructions.
pub const ACT_COPY_ISSUE: u64 = 117;
/// See [`ACT_COPY_ISSUE`].
pub const ACT_COPY_LATENCY: u64 = 192;
/// DVE: issue and latency beyond the streaming.
pub const DVE_ISSUE: u64 = 67;
/// See [`DVE_ISSUE`].
pub const DVE_LATENCY: u64 = 149;
/// DVE: issue and latency of `memset`/`iota` beyond the streaming (4 elements a cycle).
pub const DVE_FILL: u64 = 72;

/// How long one instruction holds its engine, in cycles of the engine's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EngineTiming {
    /// Issue cycles.
    pub issue: u64,
    /// Latency cycles.
    pub latency: u64,
    /// PE moving-stream cycles (0 elsewhere).
    pub stream: u64,
}

impl EngineTiming {
    const fn both(issue: u64, latency: u64) -> EngineTiming {
        EngineTiming {
            issue,
            latency,
            stream: 0,
        }
    }
}

/// How long one instruction holds its engine, in device cycles (docs/simulator.md §7.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct InstrTiming {
    /// From its issue to the earliest issue of the engine's next instruction.
    pub issue: u64,
    /// From its issue to its completion, when its semaphore update lands.
    pub latency: u64,
    /// PE: how long its moving operand occupies the array's input stream (the next matmul
    /// issues no earlier); 0 for every other instruction.
    pub stream: u64,
}

impl InstrTiming {
    /// An instruction that holds its engine for `cycles` and completes when it lets go.
    pub const fn fixed(cycles: u64) -> InstrTiming {
        InstrTiming {
            issue: cycles,
            latency: cycles,
            stream: 0,
        }
    }

    /// `t` (engine cycles of `engine`) in device cycles.
    pub fn of(t: EngineTiming, engine: EngineKind, target: Target) -> InstrTiming {
        let d = |c| to_device_cycles(EngineCycles(c), engine, target);
        InstrTiming {
            issue: d(t.issue),
            latency: d(t.latency),
            stream: d(t.stream),
        }
    }
}

/// Whether the moving operand is 4 bytes wide (an fp32 matmul streams half as fast).
fn wide(ap: &AccessPattern) -> u64 {
    if ap.dtype().size() >= 4 {
        2
    } else {
        1
    }
}

/// DVE cycles to stream `e` elements per partition of `instr` on `target`.
fn dve_stream(instr: &Instruction, e: u64, target: Target) -> u64 {
    if target == Target::Trn1 {
        return e;
    }
    let narrow = |aps: &[&AccessPattern]| aps.iter().all(|a| a.dtype().size() <= 2);
    match instr {
        Instruction::TensorCopy { out, input } if narrow(&[out, input]) => e.div_ceil(2),
        Instruction::TensorScalar { input, .. } if input.space() == MemSpace::Psum => {
            (e * 10).div_ceil(7)
        }
        Instruction::TensorScalar { .. } => (e * 5).div_ceil(8),
        _ => e,
    }
}

/// The timing of `instr` on `engine` of `target`, in cycles of the engine's clock (see the
/// module table). Non-compute instructions are not charged here (their cost is a device-level
/// constant); they give zero.
pub fn engine_timing(instr: &Instruction, engine: EngineKind, target: Target) -> EngineTiming {
    let add = |a: u64, b: u64| a.saturating_add(b);
    match instr {
        Instruction::MatmulLoadStationary { stationary, .. } => {
            let m = stationary.elements_per_partition();
            let cols = if wide(stationary) == 2 {
                m.saturating_mul(2)
            } else {
                (m * 5).div_ceil(16)
            };
            EngineTiming::both(PE_ISSUE, add(PE_LOAD_LATENCY, cols))
        }
        Instruction::MatmulMoving { moving, .. } => {
            let n = moving.elements_per_partition().saturating_mul(wide(moving));
            EngineTiming {
                issue: PE_ISSUE,
                latency: add(PE_MATMUL_LATENCY, n),
                stream: add(n.max(PE_STREAM_MIN), PE_STREAM_EXTRA),
            }
        }
        Instruction::Transpose { out, input } => {
            if engine == EngineKind::Pe {
                let p = u64::from(input.partitions());
                EngineTiming {
                    issue: PE_ISSUE,
                    latency: add(PE_MATMUL_LATENCY, p),
                    stream: add(p.max(PE_STREAM_MIN), PE_STREAM_EXTRA),
                }
            } else {
                let e = u64::from(input.partitions()).max(input.elements_per_partition());
                elementwise(instr, engine, target, e, out)
            }
        }
        Instruction::Activation { out, .. } => {
            let e = out.elements_per_partition();
            match engine {
                EngineKind::Dve => elementwise(instr, engine, target, e, out),
                _ => EngineTiming::both(add(ACT_ISSUE, e), add(ACT_LATENCY, e)),
            }
        }
        Instruction::TensorScalar { out, .. }
        | Instruction::TensorCopy { out, .. }
        | Instruction::TensorTensor { out, .. } => {
            elementwise(instr, engine, target, out.elements_per_partition(), out)
        }
        Instruction::TensorReduce { out, input, .. } => {
            elementwise(instr, engine, target, input.elements_per_partition(), out)
        }
        Instruction::Memset { out, .. } | Instruction::Iota { out, .. } => {
            let e = out.elements_per_partition();
            match engine {
                EngineKind::Dve => {
                    let c = add(DVE_FILL, e.div_ceil(4));
                    EngineTiming::both(c, c)
                }
                _ => EngineTiming::both(add(ACT_COPY_ISSUE, e), add(ACT_COPY_LATENCY, e)),
            }
        }
        _ => EngineTiming::default(),
    }
}

/// An element-wise instruction of `e` elements per partition.
fn elementwise(
    instr: &Instruction,
    engine: EngineKind,
    target: Target,
    e: u64,
    _out: &AccessPattern,
) -> EngineTiming {
    match engine {
        EngineKind::Dve => {
            let s = dve_stream(instr, e, target);
            EngineTiming::both(DVE_ISSUE.saturating_add(s), DVE_LATENCY.saturating_add(s))
        }
        _ => EngineTiming::both(
            ACT_COPY_ISSUE.saturating_add(e),
            ACT_COPY_LATENCY.saturating_add(e),
        ),
    }
}

/// Cycles of `engine`'s own clock that `instr` occupies it until it completes (its latency)
/// on `target`. Semaphore waits and DMA time are not included: the scheduler adds them.
pub fn cost(instr: &Instruction, engine: EngineKind, target: Target) -> EngineCycles {
    EngineCycles(engine_timing(instr, engine, target).latency)
}

/// The timing of `instr` on `engine` of `target`, in device cycles.
pub fn timing(instr: &Instruction, engine: EngineKind, target: Target) -> InstrTiming {
    InstrTiming::of(engine_timing(instr, engine, target), engine, target)
}

/// The cost of a Neuron record charged by its opcode rather than by what it computes, in
/// cycles of `engine`'s clock, measured on the device traces (docs/simulator.md §7.2):
///
/// | opcode | what | PE | ACT | POOL | DVE | SP |
/// |---|---|---|---|---|---|---|
/// | `0x23` ACT_TABLE_LOAD | loads an activation table set | | 1540 | | | |
/// | `0xA0` EVENT_SEMAPHORE | a wait (its wait is the scheduler's) | 126 | 48 | 24 | 23 | 24 |
/// | `0xA4` NOP | | 46 | 23 | 23 | 22 | 23 |
/// | `0xB1` DRAIN | the program's first record | 106 | 50 | 57 | 49 | 28 |
/// | `0xCC` SET_ORDERING_MODE | | 106 | 49 | 49 | 54 | 29 |
/// | `0xA7`, `0xA8` | register move, register ALU (issue 94) | | | 51 | | |
/// | `0xCE` | register load from SBUF | | | 350 | | |
pub fn neuron_fixed(opcode: u8, engine: EngineKind) -> Option<EngineTiming> {
    let per = |v: [u64; 5]| {
        let c = v[engine.index()];
        EngineTiming::both(c, c)
    };
    Some(match opcode {
        0x23 => EngineTiming::both(1540, 1540),
        0xA0 => per([126, 48, 24, 23, 24]),
        0xA4 => per([46, 23, 23, 22, 23]),
        0xB1 => per([106, 50, 57, 49, 28]),
        0xCC => per([106, 49, 49, 54, 29]),
        0xA7 | 0xA8 => EngineTiming::both(94, 51),
        0xCE => EngineTiming::both(350, 350),
        _ => return None,
    })
}

/// Device cycles from an instruction's completion to its semaphore update (10 ns on the
/// device traces).
pub const SIGNAL_DELAY: u64 = 12;

/// Device cycles from a semaphore update to the issue of an instruction of `engine` that
/// waited for it (exec-request order; 42 ns on the PE, 23 ns on ACT, POOL and DVE, 17 ns on SP
/// in the device traces).
pub const fn wake_cycles(engine: EngineKind) -> u64 {
    [50, 28, 28, 28, 20][engine.index()]
}

/// The timing of a DMA an engine issues (`dma.direct`, the Neuron DMA_DIRECT2D) of `chunks`
/// chunks, in cycles of `engine`'s clock: on SP and ACT the descriptor-generation hardware
/// takes 672 cycles whatever the size (560 ns on the device traces); on POOL software writes
/// the descriptors, 5 cycles a chunk before the engine issues again, the instruction itself
/// done after 38.
pub fn dma_direct_timing(chunks: u64, engine: EngineKind) -> EngineTiming {
    match engine {
        EngineKind::Pool => EngineTiming::both(chunks.saturating_mul(5).max(38), 38),
        _ => EngineTiming::both(672, 672),
    }
}

/// Converts cycles of `engine`'s clock into device cycles (the SP clock of `target`), rounding
/// up; saturates at `u64::MAX`.
pub fn to_device_cycles(engine_cycles: EngineCycles, engine: EngineKind, target: Target) -> u64 {
    let clocks = &target.spec().clocks;
    let f_engine = clocks.of(engine);
    if f_engine == 0 {
        return engine_cycles.0;
    }
    mul_div_ceil(engine_cycles.0, clocks.sp, f_engine)
}

/// `⌈a · b / c⌉` (`c > 0`), saturating at `u64::MAX`: the one rounding of every clock and
/// bandwidth conversion. In 64-bit arithmetic when the product fits (every instruction's and
/// descriptor's cost), else in 128-bit — a 128-bit division is a slow library call, and these
/// run once per retired instruction and per DMA pair.
#[inline]
pub fn mul_div_ceil(a: u64, b: u64, c: u64) -> u64 {
    match a.checked_mul(b) {
        Some(p) => p.div_ceil(c),
        None => u64::try_from((u128::from(a) * u128::from(b)).div_ceil(u128::from(c)))
            .unwrap_or(u64::MAX),
    }
}

/// The cycles of a streaming instruction over `elements` per partition at `rate` elements per
/// cycle on ACT or POOL (an element-wise instruction of the module table).
pub fn stream_cycles(elements: u64, rate: u64) -> EngineCycles {
    EngineCycles(ACT_COPY_LATENCY.saturating_add(elements.div_ceil(rate.max(1))))
}
