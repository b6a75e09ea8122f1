//! The engine timing model: how many cycles of its own clock an engine spends on one
//! instruction ([`cost`]), and the conversion to the device time base ([`to_device_cycles`]).
//! Implements the engine part of docs/simulator.md §7 "Timing", calibrated to docs/isa.md
//! §2.2 (clocks and widths); clocks come from [`TargetSpec::clocks`](nrt_hal::target::TargetSpec).
//!
//! An instruction costs a fixed issue overhead plus its streaming time:
//!
//! | instruction | engine | cycles (engine clock) |
//! |---|---|---|
//! | `matmul.ld` | PE | `ISSUE + PE_LOAD_STATIONARY` = 64 + 128 |
//! | `matmul.mm` | PE | `ISSUE + N + PE_PIPELINE_FILL` = 64 + N + 128 |
//! | `transpose` | PE | `ISSUE + PE_LOAD_STATIONARY + P + PE_PIPELINE_FILL` (a matmul with identity, `P` input partitions) |
//! | `act`, `tensor_scalar`, `tensor_copy`, `tensor_tensor`, `memset`, `iota` | ACT, DVE, POOL | `ISSUE + ⌈E / rate⌉`, `E` = output elements per partition |
//! | `tensor_reduce` | DVE, POOL | `ISSUE + ⌈E / rate⌉`, `E` = *input* elements per partition |
//! | `transpose` | DVE | `ISSUE + ⌈max(P, F) / rate⌉` |
//! | header, `write`, semaphore, event, `end`, `nop` | any | `NON_COMPUTE` = 8 |
//! | pseudo-instructions | any | 0 (they never execute) |
//!
//! Rates, in elements per partition per cycle:
//!
//! | engine | rate | source |
//! |---|---|---|
//! | ACT | 1 | docs/isa.md §2.2: 128 lanes (one per partition) |
//! | POOL | 1 | docs/isa.md §2.2: 8 cores × 512 bit = 128 fp32 per cycle = 1 per partition (we use it for every dtype) |
//! | DVE trn1 (v2) | 1 | docs/isa.md §2.2: 128 lanes |
//! | DVE trn2 (v3) | 4 if every tile operand's dtype is ≤ 2 bytes, else 2 | docs/isa.md §2.2: "512 bf16 / 256 other per cycle" over 128 partitions (we count fp16/fp8 with bf16) |
//! | SP | 1 | SP runs no compute; a figure only so that `cost` is total |
//!
//! Constants and their sources:
//!
//! | constant | value | source |
//! |---|---|---|
//! | [`ISSUE_CYCLES`] | 64 | **our choice** — fixed per-instruction decode/issue/drain overhead, every engine |
//! | [`PE_LOAD_STATIONARY_CYCLES`] | 128 | docs/isa.md §2.2: 128×128 systolic array, weights shift in one row per cycle |
//! | [`PE_PIPELINE_FILL_CYCLES`] | 128 | docs/isa.md §2.2: the last moving column crosses 128 PEs before it leaves the array |
//! | moving columns | 1 per cycle | docs/isa.md §2.2: "2×128 in, 1×128 out" per cycle — one `[K ≤ 128]` column |
//! | [`NON_COMPUTE_CYCLES`] | 8 | **our choice** — sync/control instructions; waiting time is the scheduler's |
//!
//! Records of the Neuron encoding decode into the same instructions and are charged by the
//! same table (one cost model): a LoadStationary is a `matmul.ld`, a MultiplyMoving a
//! `matmul.mm` (pass 2 of an fp32 pair costs a full pass, as the hardware streams the moving
//! operand again), `0x41`/`0x42`/`0x46`/`0x47`/`0x49`/`0x21` are `tensor_tensor`,
//! `tensor_reduce`, `tensor_copy`, `memset` and `act`, and the wait-only records cost
//! `sync_instruction_cycles`. The device-level constants calibrated against device profiles
//! of real NEFFs (DMA descriptor overhead, execution start) are documented on
//! [`TimingConfig`](crate::TimingConfig) and in docs/simulator.md §7.5; the engine constants
//! here were left as they were, since the profiled NEFFs are DMA-bound (the transpose's
//! engine active times agree within 2×; the reasons are in that section).
//!
//! All arithmetic saturates, so `cost` is total over any instruction, however malformed.
//! [`to_device_cycles`] converts engine cycles to the device time base, the SP (sequencer)
//! clock `target.spec().clocks.sp`, rounding up: `⌈cycles · f_sp / f_engine⌉`.

use nrt_hal::isa::{AccessPattern, Instruction};
use nrt_hal::{EngineKind, Target};

/// Cycles of an engine's own clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct EngineCycles(pub u64);

/// Fixed issue overhead of every compute instruction (**our choice**).
pub const ISSUE_CYCLES: u64 = 64;
/// PE: cycles to shift the stationary operand into the 128×128 array.
pub const PE_LOAD_STATIONARY_CYCLES: u64 = 128;
/// PE: cycles for the last moving column to drain out of the array.
pub const PE_PIPELINE_FILL_CYCLES: u64 = 128;
/// Cost of a non-compute instruction (header, `write`, semaphore, event, `end`, `nop`) —
/// **our choice**.
pub const NON_COMPUTE_CYCLES: u64 = 8;

/// Elements per partition per cycle of `engine` for an instruction whose tile operands are
/// `operands`.
fn rate(engine: EngineKind, target: Target, operands: &[&AccessPattern]) -> u64 {
    match (engine, target) {
        (EngineKind::Dve, Target::Trn2) => {
            if operands.iter().all(|ap| ap.dtype().size() <= 2) {
                4
            } else {
                2
            }
        }
        _ => 1,
    }
}

/// `ISSUE + ⌈elements / rate⌉`.
fn stream(elements: u64, rate: u64) -> u64 {
    ISSUE_CYCLES.saturating_add(elements.div_ceil(rate.max(1)))
}

/// The cycles of a streaming instruction over `elements` per partition at `rate` elements per
/// cycle (the element-wise row of the module table).
pub fn stream_cycles(elements: u64, rate: u64) -> EngineCycles {
    EngineCycles(stream(elements, rate))
}

/// Cycles of `engine`'s own clock that `instr` occupies it on `target` (see the module
/// tables). Semaphore waits and DMA time are not included: the scheduler adds them.
pub fn cost(instr: &Instruction, engine: EngineKind, target: Target) -> EngineCycles {
    let c = match instr {
        Instruction::MatmulLoadStationary { .. } => ISSUE_CYCLES + PE_LOAD_STATIONARY_CYCLES,
        Instruction::MatmulMoving { moving, .. } => ISSUE_CYCLES
            .saturating_add(moving.elements_per_partition())
            .saturating_add(PE_PIPELINE_FILL_CYCLES),
        Instruction::Transpose { out, input } => {
            if engine == EngineKind::Pe {
                ISSUE_CYCLES
                    + PE_LOAD_STATIONARY_CYCLES
                    + u64::from(input.partitions())
                    + PE_PIPELINE_FILL_CYCLES
            } else {
                let work = u64::from(input.partitions()).max(input.elements_per_partition());
                stream(work, rate(engine, target, &[input, out]))
            }
        }
        Instruction::Activation { out, input, .. }
        | Instruction::TensorScalar { out, input, .. }
        | Instruction::TensorCopy { out, input } => stream(
            out.elements_per_partition(),
            rate(engine, target, &[input, out]),
        ),
        Instruction::TensorTensor { out, in0, in1, .. } => {
            // in1 borrows in0's shape; only its dtype matters for the rate.
            let r = rate(engine, target, &[in0, out]);
            let r = if in1.dtype().size() > 2 { r.min(2) } else { r };
            stream(out.elements_per_partition(), r)
        }
        Instruction::TensorReduce { out, input, .. } => stream(
            input.elements_per_partition(),
            rate(engine, target, &[input, out]),
        ),
        Instruction::Memset { out, .. } | Instruction::Iota { out, .. } => {
            stream(out.elements_per_partition(), rate(engine, target, &[out]))
        }
        Instruction::DmaDirect { .. } => NON_COMPUTE_CYCLES,
        Instruction::PseudoDmaTrigger { .. }
        | Instruction::PseudoWriteVar { .. }
        | Instruction::PseudoBarrier { .. }
        | Instruction::PseudoMarker { .. } => 0,
        Instruction::StreamHeader
        | Instruction::Write { .. }
        | Instruction::SemWait { .. }
        | Instruction::SemSignal { .. }
        | Instruction::EventSet { .. }
        | Instruction::EventWait { .. }
        | Instruction::End
        | Instruction::Nop => NON_COMPUTE_CYCLES,
    };
    EngineCycles(c)
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
}

/// The timing of `instr` on `engine` of `target`, in device cycles.
pub fn timing(instr: &Instruction, engine: EngineKind, target: Target) -> InstrTiming {
    InstrTiming::fixed(to_device_cycles(cost(instr, engine, target), engine, target))
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
