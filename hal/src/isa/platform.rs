//! The platform's own encoding as one table: every [`Instruction`] with its opcode, engines,
//! field slots and disassembly (layouts in the [`isa`](super) module docs; the mechanism in
//! [`layout`](super::layout)).

mod slots;

use core::fmt;

use crate::addr::{DeviceAddr, EventId, SemaphoreId};
use crate::dtype::Dtype;

use super::dma::{DmaEnd, DmaPattern};

use super::ap::{AccessPattern, IotaPattern, ScalarOperand};
use super::codec::{DecodeError, EncodeError, Record};
use super::instr::TensorOperand;
use super::layout::LayoutError;
use super::ops::{
    ActivationFunc, AluOp, MarkerLabel, MatmulPass, QueueSetName, ReduceCmd, SemCmp, SemOp,
};
use slots::{
    Ap, Bias, Bit, Bool32, Borrowed, Chunks, Code, DtypeCode, End, Id16, Iota, Label, Le,
    OneToFour, QueueName, ReduceOp, Scalar,
};

// Byte offsets of the compute layout (module docs of `isa`, "Compute records").
const AP0: usize = 8;
const AP1: usize = 30;
const SHORT: usize = 52;
const IMM0: usize = 56;
const IMM1: usize = 60;

/// ` <out> <- <in>`.
fn io(f: &mut dyn fmt::Write, out: &AccessPattern, input: &AccessPattern) -> fmt::Result {
    write!(f, " {out} <- {input}")
}

crate::instruction_set! {
    /// One decoded instruction of the platform encoding (the shared instruction model; records of
    /// the Neuron encoding that have a platform counterpart map onto it). See the
    /// [module docs](super) for each variant's record layout.
    pub enum Instruction;
    /// The opcodes this platform implements (byte 0 of a record).
    opcodes Opcode;
    context ();
    model ();
    errors DecodeError, EncodeError;

    /// `0xB1` (real): first record of every engine stream; all other bytes zero.
    StreamHeader = 0xB1, "header", [Pe, Act, Pool, Dve, Sp]
        text |cx, f, mn| { f.write_str(mn) }

    /// `0xC1` (real, pseudo): trigger DMA block `block_id` of queue set `queue`; the runtime
    /// rewrites it into a [`Opcode::Write`] to the assigned hardware queue's tail-increment
    /// register. Decoded leniently (docs/isa.md §1).
    PseudoDmaTrigger = 0xC1, "pseudo.dma_trigger", [Pe, Act, Pool, Dve, Sp]; lenient {
        /// Queue-set name (a `def.json` `dma_queue` key).
        queue: QueueSetName = QueueName(12),
        /// The engine JSON `dma[]` block id.
        block_id: u32 = Le(48),
    } text |cx, f, mn| { write!(f, "{mn} {queue} block={block_id}") }

    /// `0xD0`: store the 4-byte `value` at `addr`.
    Write = 0xD0, "write", [Pe, Act, Pool, Dve, Sp] {
        /// Destination device address.
        addr: DeviceAddr = Le(8),
        /// Value stored.
        value: u32 = Le(16),
    } text |cx, f, mn| { write!(f, "{mn} [{addr}] <- {value:#x}") }

    /// `0xD1`: block until `sem <cmp> value`.
    SemWait = 0xD1, "sem.wait", [Pe, Act, Pool, Dve, Sp] {
        /// Semaphore (encoded as u16).
        sem: SemaphoreId = Id16(2, "semaphore"),
        /// Comparison.
        cmp: SemCmp = Code(4, "semaphore compare"),
        /// Operand.
        value: i32 = Le(8),
    } text |cx, f, mn| { write!(f, "{mn} {sem} {} {value}", cmp.symbol()) }

    /// `0xD2`: `sem <op>= value`.
    SemSignal = 0xD2, "sem.signal", [Pe, Act, Pool, Dve, Sp] {
        /// Semaphore (encoded as u16).
        sem: SemaphoreId = Id16(2, "semaphore"),
        /// Operation.
        op: SemOp = Code(4, "semaphore op"),
        /// Operand.
        value: i32 = Le(8),
    } text |cx, f, mn| { write!(f, "{mn} {sem} {} {value}", op.symbol()) }

    /// `0xD3`: set `event` to `value` (encoded as u32 0 or 1).
    EventSet = 0xD3, "event.set", [Pe, Act, Pool, Dve, Sp] {
        /// Event (encoded as u16).
        event: EventId = Id16(2, "event"),
        /// New value.
        value: bool = Bool32(8, "event value"),
    } text |cx, f, mn| { write!(f, "{mn} {event} = {}", u8::from(*value)) }

    /// `0xD7`: block until `event == value` (was `0xD4`, which the Neuron encoding now uses).
    EventWait = 0xD7, "event.wait", [Pe, Act, Pool, Dve, Sp] {
        /// Event (encoded as u16).
        event: EventId = Id16(2, "event"),
        /// Awaited value.
        value: bool = Bool32(8, "event value"),
    } text |cx, f, mn| { write!(f, "{mn} {event} == {}", u8::from(*value)) }

    /// `0xD5`: end of block; the engine retires.
    End = 0xD5, "end", [Pe, Act, Pool, Dve, Sp]
        text |cx, f, mn| { f.write_str(mn) }

    /// `0xD6`: no operation.
    Nop = 0xD6, "nop", [Pe, Act, Pool, Dve, Sp]
        text |cx, f, mn| { f.write_str(mn) }

    /// `0xE0`: LDWEIGHTS — load `stationary` (`[K partitions, M elements]`, SBUF) into the PE
    /// array.
    MatmulLoadStationary = 0xE0, "matmul.ld", [Pe], flags 0b1 {
        /// The stationary operand, `K ≤ 128` partitions by `M ≤ 128` elements.
        stationary: AccessPattern = Ap(AP1),
        /// Column order: `false` — column `m` of the stationary matrix is the pattern's
        /// element `m`; `true` — it is element `M − 1 − m` (the pattern walks the columns
        /// backwards, as the Neuron encoding's LoadStationary does).
        reversed: bool = Bit(3, 0),
        /// Which pass of a multi-pass matmul this load starts (see [`MatmulPass`]).
        pass: MatmulPass = Code(4, "matmul pass"),
    } text |cx, f, mn| {
        write!(f, "{mn} {stationary}")?;
        if *reversed {
            f.write_str(" rev")?;
        }
        if *pass != MatmulPass::Single {
            write!(f, " pass={pass}")?;
        }
        Ok(())
    }

    /// `0xE1`: MATMUL — `dst[M, N] (+)= stationaryᵀ · moving[K, N]`.
    MatmulMoving = 0xE1, "matmul.mm", [Pe], flags 0b1 {
        /// PSUM destination: `M` partitions by `N` elements.
        dst: AccessPattern = Ap(AP0),
        /// SBUF moving operand: `K` partitions by `N ≤ 512` elements.
        moving: AccessPattern = Ap(AP1),
        /// `false` overwrites the PSUM tile, `true` adds to it.
        accumulate: bool = Bit(3, 0),
    } text |cx, f, mn| {
        f.write_str(mn)?;
        io(f, dst, moving)?;
        if *accumulate {
            f.write_str(" acc")?;
        }
        Ok(())
    }

    /// `0xE2`: ACTIVATE — `out = func(input · scale + bias)`.
    Activation = 0xE2, "act", [Act], flags 0b111 {
        /// The function.
        func: ActivationFunc = Code(2, "activation function"),
        /// Output tile.
        out: AccessPattern = Ap(AP0),
        /// Input tile.
        input: AccessPattern = Ap(AP1),
        /// Immediate or `[P, 1]` vector scale.
        scale: ScalarOperand = Scalar { at: IMM0, vector: Bit(3, 0) },
        /// Optional bias: a `[P, 1]` vector (flag bit 1) or an f32 immediate (flag bit 2).
        bias: Option<ScalarOperand> = Bias { at: SHORT, vector: Bit(3, 1), imm: Bit(3, 2) },
        /// Accumulate-reduce command.
        reduce: ReduceCmd = Code(4, "reduce command"),
    } text |cx, f, mn| {
        write!(f, "{mn}.{func}")?;
        io(f, out, input)?;
        write!(f, " scale={scale}")?;
        if let Some(b) = bias {
            write!(f, " bias={b}")?;
        }
        if *reduce != ReduceCmd::Idle {
            write!(f, " reduce={reduce}")?;
        }
        Ok(())
    }

    /// `0xE3`: `out = op(in0, in1)`; `in1` borrows `in0`'s partition count and free pattern.
    TensorTensor = 0xE3, "tensor_tensor", [Pool, Dve], flags 0b0 {
        /// The ALU op.
        op: AluOp = Code(2, "ALU op"),
        /// Output tile.
        out: AccessPattern = Ap(AP0),
        /// First input.
        in0: AccessPattern = Ap(AP1),
        /// Second input: a short operand borrowing `in0`'s shape (the platform's encoding) or
        /// a full pattern with `in0`'s partitions and element count (the Neuron encoding).
        in1: TensorOperand = Borrowed(SHORT),
    } text |cx, f, mn| {
        write!(f, "{mn}.{op}")?;
        io(f, out, in0)?;
        match in1 {
            TensorOperand::Borrowed(s) => write!(f, ", {s}"),
            TensorOperand::Pattern(p) => write!(f, ", {p}"),
        }
    }

    /// `0xE4`: `out = (input op0 operand0) op1 operand1`; with `reverseN` the operands of
    /// stage N are swapped (`operandN opN x`).
    TensorScalar = 0xE4, "tensor_scalar", [Act, Pool, Dve], flags 0b1111 {
        /// Output tile.
        out: AccessPattern = Ap(AP0),
        /// Input tile.
        input: AccessPattern = Ap(AP1),
        /// First op.
        op0: AluOp = Code(2, "ALU op0"),
        /// First operand.
        operand0: ScalarOperand = Scalar { at: IMM0, vector: Bit(3, 2) },
        /// Swap the first stage's operands.
        reverse0: bool = Bit(3, 0),
        /// Second op ([`AluOp::Bypass`] for a single-stage instruction).
        op1: AluOp = Code(4, "ALU op1"),
        /// Second operand.
        operand1: ScalarOperand = Scalar { at: IMM1, vector: Bit(3, 3) },
        /// Swap the second stage's operands.
        reverse1: bool = Bit(3, 1),
    } text |cx, f, mn| {
        let stage0 = if *reverse0 {
            format!("({operand0} {op0} {input})")
        } else {
            format!("({input} {op0} {operand0})")
        };
        if *reverse1 {
            write!(f, "{mn} {out} <- {operand1} {op1} {stage0}")
        } else {
            write!(f, "{mn} {out} <- {stage0} {op1} {operand1}")
        }
    }

    /// `0xE5`: `out = input` with dtype cast.
    TensorCopy = 0xE5, "tensor_copy", [Act, Pool, Dve], flags 0b0 {
        /// Output tile.
        out: AccessPattern = Ap(AP0),
        /// Input tile.
        input: AccessPattern = Ap(AP1),
    } text |cx, f, mn| {
        f.write_str(mn)?;
        io(f, out, input)
    }

    /// `0xE6`: reduce the trailing `axes` free dims of `input` with `op` (then negate).
    TensorReduce = 0xE6, "tensor_reduce", [Pool, Dve], flags 0b1 {
        /// A legal reduction op ([`AluOp::is_legal_reduction`]).
        op: AluOp = ReduceOp(2),
        /// Output tile.
        out: AccessPattern = Ap(AP0),
        /// Input tile.
        input: AccessPattern = Ap(AP1),
        /// Number of trailing free dims reduced, 1..=4.
        axes: u8 = OneToFour(4, "tensor_reduce axes"),
        /// Negate the result.
        negate: bool = Bit(3, 0),
    } text |cx, f, mn| {
        write!(f, "{mn}.{op}")?;
        io(f, out, input)?;
        write!(f, " axes={axes}")?;
        if *negate {
            f.write_str(" neg")?;
        }
        Ok(())
    }

    /// `0xE7`: `out = value` cast to `out`'s dtype.
    Memset = 0xE7, "memset", [Pool, Dve], flags 0b0 {
        /// Output tile.
        out: AccessPattern = Ap(AP0),
        /// The value.
        value: f32 = Le(IMM0),
    } text |cx, f, mn| { write!(f, "{mn} {out} <- {value:?}") }

    /// `0xE8`: `out = offset + channel_multiplier·partition + Σ stepᵢ·indexᵢ`, then cast.
    Iota = 0xE8, "iota", [Pool], flags 0b0 {
        /// Output tile.
        out: AccessPattern = Ap(AP0),
        /// Constant term.
        offset: i32 = Le(4),
        /// Per-partition term.
        channel_multiplier: i32 = Le(IMM0),
        /// Value pattern; its element count should equal `out`'s per partition.
        pattern: IotaPattern = Iota { ndims: 2, steps: 30, counts: 46 },
    } text |cx, f, mn| {
        write!(f, "{mn} {out} <- {offset} + {channel_multiplier}*p + {pattern}")
    }

    /// `0xE9`: `out[F, P] = input[P, F]ᵀ`.
    Transpose = 0xE9, "transpose", [Pe, Dve], flags 0b0 {
        /// Output: `F` partitions by `P` elements.
        out: AccessPattern = Ap(AP0),
        /// Input: `P ≤ 128` partitions by `F ≤ 128` elements.
        input: AccessPattern = Ap(AP1),
    } text |cx, f, mn| {
        f.write_str(mn)?;
        io(f, out, input)
    }

    /// `0xEA`: a DMA the engine issues itself: `src_pattern.chunks()` chunks of
    /// `src_elem_size` bytes move from `src` to `dst` (converted to `dst_dtype` when the dtypes
    /// differ); when the last has landed, `sem` gains `increment`. The engine goes on at once.
    /// What the runtime relocates a Neuron `0xD4` into (docs/isa.md §5.9).
    DmaDirect = 0xEA, "dma.direct", [Pe, Act, Pool, Dve, Sp] {
        /// Semaphore completion increments (encoded as u16).
        sem: SemaphoreId = Id16(2, "semaphore"),
        /// What completion adds.
        increment: u8 = Le(4),
        /// Source dtype.
        src_dtype: Dtype = DtypeCode(5, "source dtype"),
        /// Destination dtype.
        dst_dtype: Dtype = DtypeCode(6, "destination dtype"),
        /// Source base.
        src: DmaEnd = End { modes: 7, shift: 0, addr: 8, offset: 24 },
        /// Destination base.
        dst: DmaEnd = End { modes: 7, shift: 4, addr: 16, offset: 28 },
        /// Source chunks.
        src_pattern: DmaPattern = Chunks { steps: 32, nums: 40 },
        /// Destination chunks.
        dst_pattern: DmaPattern = Chunks { steps: 44, nums: 52 },
        /// Bytes of one source chunk.
        src_elem_size: u16 = Le(56),
        /// Bytes of one destination chunk.
        dst_elem_size: u16 = Le(58),
    } text |cx, f, mn| {
        write!(
            f,
            "{mn} {dst} {dst_pattern}x{dst_elem_size} {dst_dtype} <- {src} {src_pattern}x{src_elem_size} {src_dtype}; {sem} += {increment}"
        )
    }

    /// `0xF0` (pseudo): store `value` at `var + offset`; relocation turns it into `Write`.
    PseudoWriteVar = 0xF0, "pseudo.write_var", [Pe, Act, Pool, Dve, Sp] {
        /// The variable (def.json `var`) whose physical address relocation substitutes.
        var_id: u32 = Le(4),
        /// Byte offset within the variable.
        offset: u64 = Le(8),
        /// Value stored.
        value: u32 = Le(16),
    } text |cx, f, mn| { write!(f, "{mn} [var{var_id}+{offset:#x}] <- {value:#x}") }

    /// `0xF1` (pseudo): signal `sem` then wait until it reaches `count`.
    PseudoBarrier = 0xF1, "pseudo.barrier", [Pe, Act, Pool, Dve, Sp] {
        /// Barrier semaphore (encoded as u16).
        sem: SemaphoreId = Id16(2, "semaphore"),
        /// Number of participants.
        count: i32 = Le(8),
    } text |cx, f, mn| { write!(f, "{mn} {sem} count={count}") }

    /// `0xF2` (pseudo): a marker for tools; occupies no slot after load.
    PseudoMarker = 0xF2, "pseudo.marker", [Pe, Act, Pool, Dve, Sp] {
        /// Marker id.
        id: u32 = Le(4),
        /// Label.
        label: MarkerLabel = Label(8),
    } text |cx, f, mn| { write!(f, "{mn} {id} {:?}", label.as_str()) }
}

impl LayoutError for DecodeError {
    fn unknown_opcode(byte: u8) -> Self {
        DecodeError::UnknownOpcode(byte)
    }
    fn bad_length_byte(_opcode: u8, byte: u8) -> Self {
        DecodeError::BadLengthByte(byte)
    }
    fn reserved_flag_bits(_opcode: u8, offset: usize, bits: u8) -> Self {
        DecodeError::ReservedFlagBits { offset, bits }
    }
    fn reserved_byte(_opcode: u8, offset: usize, value: u8, _field: Option<&'static str>) -> Self {
        DecodeError::ReservedNonZero { offset, value }
    }
}

impl Instruction {
    /// Encodes the instruction into its record; fails only when a field does not fit its slot.
    pub fn encode(&self) -> Result<Record, EncodeError> {
        self.encode_fields()
    }
}

impl fmt::Display for Instruction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_text(&(), f)
    }
}

impl fmt::Display for ScalarOperand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalarOperand::Imm(v) => write!(f, "{v:?}"),
            ScalarOperand::Vector(s) => write!(f, "{s}"),
        }
    }
}
