//! The engines' compute: executing one compute instruction (`0xE0..=0xE9`) against a core's
//! on-chip memory, the numerics behind it, and each instruction's cost in engine cycles.
//!
//! This module implements docs/simulator.md §5 "Sequencer and engines" (the compute half: what a PE, ACT,
//! DVE or POOL instruction does to SBUF/PSUM), "Numbers" and the engine part of "Timing",
//! following the NKI instruction semantics of docs/isa.md §3 and the
//! encoding of [`nrt_hal::isa`]. It does not fetch instructions, wait on semaphores or own
//! memory: the device core builds an [`OnChipView`] over its SBUF and PSUM, keeps one
//! [`EngineState`] per engine, calls [`execute`] and charges [`cost()`].
//!
//! - [`convert`] — storage dtype ⇄ f32 for every `Dtype` (fp8 formats, RNE,
//!   saturation);
//! - [`alu`] — the `AluOp`s;
//! - [`activation`] — the `ActivationFunc`s, with our own
//!   `erf`;
//! - [`execute`] — instruction semantics;
//! - [`mod@cost`] — the timing model and its constants ([`cost()`], [`to_device_cycles`]).
//!
//! # Numbers
//!
//! Engines compute in **f32** (docs/isa.md §4): every operand element is converted to f32 when
//! read and rounded to the destination dtype when written ([`convert`]). Two exceptions keep
//! integer data exact where an f32 round trip would lose bits above 2²⁴:
//!
//! - **integer → integer** `tensor_copy` and `transpose` copy the bits when both dtypes are
//!   the same and otherwise carry exact integer values (then saturate to the destination
//!   type), and `iota` writes its int32 values straight to integer destinations (float
//!   destinations get the value rounded to f32, then to their dtype);
//! - **bit-vector ops** (`bitwise_*`, shifts) in `tensor_tensor`, `tensor_scalar` and
//!   `tensor_reduce` work on 32-bit patterns: integer elements give the low 32 bits of their
//!   value, float elements and f32 immediates their value rounded to i32; results are stored
//!   sign- or zero-extended and truncated to integer destinations, or as their i32 value to
//!   float destinations ([`convert::to_bits_lane`], [`convert::from_bits_lane`]).
//!
//! # Operands and element order
//!
//! Every access pattern is checked with
//! [`AccessPattern::check_bounds`](nrt_hal::isa::AccessPattern::check_bounds) against its
//! memory's partition size, and its partitions against the view's length. An operand may have
//! at most [`MAX_FREE_ELEMENTS`] elements per partition (the hardware's vector free size is
//! 64K elements, docs/isa.md §2.2). Elements of two operands correspond in the order of
//! [`element_offsets`](nrt_hal::isa::AccessPattern::element_offsets) (row-major, last
//! `[step, count]` innermost) within each partition, partition by partition. `[P, 1]` vector
//! operands give partition `i` of the main operand the value at their own partition
//! `start + i`.
//!
//! **All inputs are read before any output is written**, so in-place and overlapping tiles
//! are well defined: the result is as if the inputs had been copied first. If an output
//! pattern names the same byte twice (a zero step), the later element in element order wins.
//! (The element-wise instructions stream row-contiguous operands a chunk of a partition at a
//! time only where that cannot be told apart: each input is the output element for element or
//! shares no byte with it.)
//!
//! # Semantics (docs/isa.md §3)
//!
//! - `matmul.ld` snapshots `stationary` (`K` partitions × `M` elements, a float dtype) into
//!   the [`EngineState`] as f32. `matmul.mm` computes `dst[m, n] = Σₖ stationary[k, m] ·
//!   moving[k, n]` with `K` = moving partitions (must equal the stationary's, else
//!   [`ComputeError::KMismatch`]), `M` = dst partitions, `N` = moving elements per partition.
//!   Products and sums are f32, summed in the fixed order `k = 0, 1, …, K−1` starting from
//!   zero (deterministic, like the hardware's fp32 accumulation); with `accumulate` the sum is
//!   then added to the value read from `dst`, otherwise it overwrites it. The result is
//!   written in `dst`'s dtype (any float dtype). The stationary operand stays loaded until
//!   the next `matmul.ld`.
//! - `act`: `out = f(in · scale + bias)` per element, as an f32 multiply then an f32 add (not
//!   fused; no add when there is no bias). The reduce command drives ACT's 128 per-partition
//!   accumulators, indexed by the physical partition of `out`, summing each output row's f32
//!   results (before the cast to `out`'s dtype) in element order: `idle` leaves them,
//!   `reset` zeroes all 128, `reduce` adds each row sum to its accumulator, `reset_reduce`
//!   zeroes all 128 then adds, `load_reduce` overwrites the accumulators of the partitions
//!   this instruction writes with their row sums and leaves the others (our reading of
//!   "load the accumulators from this instruction's outputs").
//!   [`EngineState::accumulators`] exposes them.
//! - `tensor_tensor`: `out = op(in0, in1)`, `in1` with `in0`'s shape; both in PSUM is
//!   [`ComputeError::BothInputsInPsum`].
//! - `tensor_scalar`: `out = (in op0 s0) op1 s1`; a reversed stage computes `s op x` (a
//!   unary op in a reversed stage therefore applies to the operand). Operands are f32
//!   immediates or `[P, 1]` vectors.
//! - `tensor_copy`: element-wise cast.
//! - `tensor_reduce`: a left fold over the trailing `axes` free dims in element order
//!   (`((x₀ op x₁) op x₂) …`), then negation if flagged; one output element per combination
//!   of the kept dims, in row-major order.
//! - `memset`: the f32 value cast to `out`'s dtype.
//! - `iota`: the int32 value `offset + channel_multiplier · p + Σ stepᵢ · indexᵢ` (wrapping),
//!   where `p` is the partition's index *within* `out` (0-based), cast to `out`'s dtype.
//! - `transpose`: `out[f, p] = input[p, f]`. On PE (matmul with identity) `input` must be in
//!   SBUF and `out` in PSUM (docs/isa.md §2.2: TensorE only writes PSUM); on DVE any memories. A PE
//!   transpose does not disturb the loaded stationary operand.
//!
//! Matmul operands must have float dtypes ([`ComputeError::UnsupportedDtype`]).
//!
//! # Errors
//!
//! [`execute`] never panics. It checks, in order: that the instruction is a compute
//! instruction, that the engine may run it, the PSUM rule of `tensor_tensor`,
//! [`Instruction::check_operands`](nrt_hal::isa::Instruction::check_operands), then per
//! operand its bounds, element count and dtype, then the matmul state. An instruction that
//! fails writes nothing and leaves the [`EngineState`] unchanged.

pub mod activation;
pub mod alu;
pub mod convert;
pub mod cost;
mod exec;
mod gemm;

use nrt_hal::isa::{AccessPattern, AluOp, ApError, MatmulPass, MemSpace, OperandError};
use nrt_hal::{Dtype, EngineKind};

pub use cost::{cost, timing, to_device_cycles, EngineCycles, EngineTiming, InstrTiming};
pub use exec::{affine_select, execute};

/// Largest number of elements per partition an operand may have (the hardware's vector free
/// size limit, docs/isa.md §2.2: 64K elements).
pub const MAX_FREE_ELEMENTS: u64 = 65_536;

/// Number of ACT accumulator registers (one per partition lane).
pub const ACT_ACCUMULATORS: usize = 128;

/// A core's on-chip memories as the engines see them. Partition `p` of SBUF starts at byte
/// `p · sbuf_partition_bytes` of `sbuf`, likewise for PSUM. The slices may hold fewer than 128
/// partitions; an operand reaching past the end is [`ComputeError::OutOfBounds`].
#[derive(Debug)]
pub struct OnChipView<'a> {
    /// SBUF bytes, partition-major.
    pub sbuf: &'a mut [u8],
    /// Bytes per SBUF partition (the target's `sbuf.partition_bytes`).
    pub sbuf_partition_bytes: usize,
    /// PSUM bytes, partition-major.
    pub psum: &'a mut [u8],
    /// Bytes per PSUM partition (16 KiB).
    pub psum_partition_bytes: usize,
}

/// The stationary matmul operand loaded into the PE array.
#[derive(Debug, Clone, PartialEq)]
struct Stationary {
    k: u32,
    m: u32,
    /// Row-major `k × m` values, in column order (already un-reversed).
    data: Vec<f32>,
    /// The pass the last `matmul.ld` started.
    pass: MatmulPass,
    /// The pattern the last `matmul.ld` read.
    ap: AccessPattern,
    /// The moving and dst operands of the first pass, awaiting the second.
    first_pass: Option<(AccessPattern, AccessPattern)>,
}

impl Default for Stationary {
    fn default() -> Self {
        Stationary {
            k: 0,
            m: 0,
            data: Vec::new(),
            pass: MatmulPass::Single,
            ap: AccessPattern::contiguous(
                nrt_hal::isa::ShortOperand::sbuf(0, 0, Dtype::F32).expect("offset 0 is valid"),
                1,
                1,
            )
            .expect("a 1×1 pattern is valid"),
            first_pass: None,
        }
    }
}

/// Reusable per-instruction buffers, named by role (kept to avoid allocating on every
/// instruction). An instruction family uses the ones it needs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scratch {
    /// Element offsets of the main input tile.
    pub(crate) offs_in: Vec<usize>,
    /// Element offsets of the second input tile.
    pub(crate) offs_in1: Vec<usize>,
    /// Element offsets of the output tile.
    pub(crate) offs_out: Vec<usize>,
    /// Element offsets of the first `[P, 1]` vector operand.
    pub(crate) offs_vec0: Vec<usize>,
    /// Element offsets of the second `[P, 1]` vector operand.
    pub(crate) offs_vec1: Vec<usize>,
    /// f32 values of the main input.
    pub(crate) input: Vec<f32>,
    /// f32 values of the second input (or the first vector operand).
    pub(crate) input1: Vec<f32>,
    /// f32 values of an auxiliary operand (old PSUM values, bias, second vector operand).
    pub(crate) aux: Vec<f32>,
    /// f32 results.
    pub(crate) result: Vec<f32>,
    /// Exact integer values read.
    pub(crate) ints_in: Vec<i64>,
    /// Exact integer values written.
    pub(crate) ints_out: Vec<i64>,
    /// Raw element bits read (same-dtype integer moves).
    pub(crate) raw_in: Vec<u64>,
    /// Raw element bits written.
    pub(crate) raw_out: Vec<u64>,
    /// 32-bit patterns of the main input (bit-vector ops).
    pub(crate) bits_in: Vec<u32>,
    /// 32-bit patterns of the second input or first operand.
    pub(crate) bits_in1: Vec<u32>,
    /// 32-bit patterns of results or the second operand.
    pub(crate) bits_out: Vec<u32>,
}

/// An engine's architectural state between instructions: PE's loaded stationary matrix and
/// ACT's 128 accumulator registers, plus scratch buffers reused across instructions. The
/// device core keeps one per engine (each engine uses only its own part).
#[derive(Debug, Clone)]
pub struct EngineState {
    stationary: Option<Stationary>,
    accumulators: [f32; ACT_ACCUMULATORS],
    pub(crate) scratch: Scratch,
}

impl Default for EngineState {
    fn default() -> Self {
        Self::new()
    }
}

impl EngineState {
    /// Power-on state: nothing loaded, accumulators zero.
    pub fn new() -> Self {
        EngineState {
            stationary: None,
            accumulators: [0.0; ACT_ACCUMULATORS],
            scratch: Scratch::default(),
        }
    }

    /// Shape `(K, M)` of the loaded stationary operand, if any.
    pub fn stationary_shape(&self) -> Option<(u32, u32)> {
        self.stationary.as_ref().map(|s| (s.k, s.m))
    }

    /// The loaded stationary operand as f32, row-major `K × M`, if any.
    pub fn stationary(&self) -> Option<&[f32]> {
        self.stationary.as_ref().map(|s| s.data.as_slice())
    }

    /// Forgets the stationary operand (a later `matmul.mm` fails with
    /// [`ComputeError::NoStationary`]).
    pub fn clear_stationary(&mut self) {
        self.stationary = None;
    }

    /// ACT's accumulator registers, indexed by partition.
    pub fn accumulators(&self) -> &[f32; ACT_ACCUMULATORS] {
        &self.accumulators
    }

    /// Returns to the power-on state (keeps the scratch buffers' capacity).
    pub fn reset(&mut self) {
        self.stationary = None;
        self.accumulators = [0.0; ACT_ACCUMULATORS];
    }
}

/// What an executed instruction did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ComputeOutcome {
    /// Elements written to SBUF/PSUM (0 for `matmul.ld`).
    pub elements: u64,
    /// Whether any NaN was written to a float output.
    pub produced_nan: bool,
    /// Multiply-accumulates the PE array computed: `K · M · N` for a `matmul.mm` that forms
    /// its product (single or first pass; a second pass computes nothing), 0 for every other
    /// instruction (a PE transpose is a copy, not arithmetic the simulator must do).
    pub pe_macs: u64,
}

/// Why a compute instruction could not execute. Nothing is written when one is returned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ComputeError {
    /// The instruction is not a compute instruction (`0xE0..=0xE9`).
    #[error("{opcode} is not a compute instruction")]
    NotCompute {
        /// Mnemonic of the instruction.
        opcode: &'static str,
    },
    /// This engine does not run this instruction ([`nrt_hal::isa::Instruction::allowed_on`]).
    #[error("{opcode} cannot run on the {engine} engine")]
    NotAllowedOnEngine {
        /// The engine asked to run it.
        engine: EngineKind,
        /// Mnemonic of the instruction.
        opcode: &'static str,
    },
    /// An operand reaches outside its partition or past the end of its memory.
    #[error("{operand} is out of bounds: {reason}")]
    OutOfBounds {
        /// Which operand.
        operand: &'static str,
        /// What was exceeded, with the values found.
        reason: String,
    },
    /// An operand has more than [`MAX_FREE_ELEMENTS`] elements per partition.
    #[error("{operand} has {elements} elements per partition (max {max})")]
    TooManyElements {
        /// Which operand.
        operand: &'static str,
        /// Elements per partition.
        elements: u64,
        /// The limit.
        max: u64,
    },
    /// Operand shapes disagree or exceed a shape limit.
    #[error("{opcode}: shape mismatch: {what}")]
    ShapeMismatch {
        /// Mnemonic of the instruction.
        opcode: &'static str,
        /// The violated rule with the values found.
        what: String,
    },
    /// An operand is in the wrong memory.
    #[error("{opcode}: {operand} must be in {expected}")]
    WrongSpace {
        /// Mnemonic of the instruction.
        opcode: &'static str,
        /// Which operand.
        operand: &'static str,
        /// The memory it must be in.
        expected: MemSpace,
    },
    /// An operand's derived access pattern is invalid (for example a `[P, 1]` vector running
    /// past partition 127).
    #[error("{opcode}: {operand}: {source}")]
    InvalidOperand {
        /// Mnemonic of the instruction.
        opcode: &'static str,
        /// Which operand.
        operand: &'static str,
        /// The problem.
        source: ApError,
    },
    /// `tensor_scalar` mixes a bit-vector op with an arithmetic op.
    #[error("tensor_scalar: op0 {op0} and op1 {op1} must both be bit-vector or both arithmetic")]
    MixedOpKinds {
        /// First op.
        op0: AluOp,
        /// Second op.
        op1: AluOp,
    },
    /// `tensor_tensor` with both inputs in PSUM (docs/isa.md §3).
    #[error("tensor_tensor: in0 and in1 may not both be in PSUM")]
    BothInputsInPsum,
    /// The passes of a two-pass matmul disagree.
    #[error("matmul pass mismatch: {what}")]
    PassMismatch {
        /// The rule broken.
        what: String,
    },
    /// `matmul.mm` with no stationary operand loaded.
    #[error("matmul.mm: no stationary operand is loaded (matmul.ld must come first)")]
    NoStationary,
    /// `matmul.mm` whose moving operand's partition count differs from the stationary's `K`.
    #[error(
        "matmul.mm: moving has K = {moving} partitions but the stationary operand has K = {stationary}"
    )]
    KMismatch {
        /// `K` of the loaded stationary operand.
        stationary: u32,
        /// Partitions of the moving operand.
        moving: u32,
    },
    /// An operand's dtype is not supported by the instruction.
    #[error("{opcode}: {operand} has dtype {dtype}; {why}")]
    UnsupportedDtype {
        /// Mnemonic of the instruction.
        opcode: &'static str,
        /// Which operand.
        operand: &'static str,
        /// The dtype found.
        dtype: Dtype,
        /// The rule.
        why: &'static str,
    },
}

impl From<OperandError> for ComputeError {
    fn from(e: OperandError) -> Self {
        match e {
            OperandError::WrongSpace {
                opcode,
                operand,
                expected,
            } => ComputeError::WrongSpace {
                opcode,
                operand,
                expected,
            },
            OperandError::Shape { opcode, what } => ComputeError::ShapeMismatch { opcode, what },
            OperandError::Pattern {
                opcode,
                operand,
                source,
            } => ComputeError::InvalidOperand {
                opcode,
                operand,
                source,
            },
            OperandError::MixedOpKinds { op0, op1 } => ComputeError::MixedOpKinds { op0, op1 },
        }
    }
}

/// The execution fault a compute error reports: operands outside memory are out of bounds,
/// anything else is a malformed instruction.
pub fn classify(e: &ComputeError) -> nrt_hal::notify::ExecFault {
    match e {
        ComputeError::OutOfBounds { .. } => nrt_hal::notify::ExecFault::OutOfBounds,
        _ => nrt_hal::notify::ExecFault::Malformed,
    }
}
