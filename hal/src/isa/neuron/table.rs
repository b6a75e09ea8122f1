//! The Neuron encoding as one table (docs/neuron-isa.md §6, §13): every opcode of compilers
//! 2.18–2.23 with its profiler name, engines, field slots, checks and the profiler's text.
//! Byte offsets are the record's; fields hold what the record holds (raw address words,
//! codes), and the simulator gives them their meaning.

use core::fmt::Write;

use crate::dtype::Dtype;
use crate::isa::ap::{AccessPattern, ScalarOperand, ShortOperand};
use crate::isa::instr::{Instruction, TensorOperand};
use crate::isa::ops::{AluOp, MatmulPass, QueueSetName, ReduceCmd};

use super::operand::{ActFunc, DmaAddr, DmaAddrKind, DmaPattern, NeuronAlu, NeuronAp};
use super::slots::{
    Addr, Alu, Ap, Dt, Exactly, Flag, Func, Le, OneOf, Part, Partitions, Pattern, QueueName,
    Register, SyncBlock, Tail, Words,
};
use super::text::{self, Names};
use super::{NeuronError, PeTail, Sync};

/// Dtypes the PE array multiplies.
const PE_TYPES: &[Dtype] = &[Dtype::F16, Dtype::Bf16, Dtype::F32];
/// Dtypes the vector and scalar engines compute in.
const FLOATS: &[Dtype] = &[Dtype::F16, Dtype::Bf16, Dtype::F32];
/// Dtypes a memset fills.
const MEMSET_TYPES: &[Dtype] = &[Dtype::F16, Dtype::Bf16, Dtype::F32, Dtype::I32, Dtype::U32];
/// Dtypes a same-type copy moves (the 4-byte integer moves packed fp16 pairs).
const COPY_TYPES: &[Dtype] = &[Dtype::F16, Dtype::Bf16, Dtype::I32, Dtype::F32];
/// Dtypes a `0xD4` moves or converts.
const DMA_TYPES: &[Dtype] = &[
    Dtype::F16,
    Dtype::Bf16,
    Dtype::F32,
    Dtype::I32,
    Dtype::U32,
    Dtype::I8,
    Dtype::U8,
];

fn dtype_in(opcode: u8, at: usize, d: Dtype, allowed: &[Dtype]) -> Result<(), NeuronError> {
    if allowed.contains(&d) {
        return Ok(());
    }
    Err(NeuronError::Field {
        opcode,
        offset: at,
        field: "dtype",
        value: u64::from(d.code()),
        why: "not a dtype this opcode is known to use",
    })
}

fn counts_equal(opcode: u8, what: &[(&str, u64)]) -> Result<(), NeuronError> {
    if what.iter().all(|(_, n)| *n == what[0].1) {
        return Ok(());
    }
    let list: Vec<String> = what.iter().map(|(n, c)| format!("{n} {c}")).collect();
    Err(NeuronError::Operands {
        opcode,
        what: format!(
            "operands have different element counts per partition ({})",
            list.join(", ")
        ),
    })
}

/// `ap` in the shared model, or an operand error naming the opcode and operand.
fn pattern<const N: usize>(
    opcode: u8,
    what: &str,
    ap: &NeuronAp<N>,
    dtype: Dtype,
    partitions: u8,
) -> Result<AccessPattern, NeuronError> {
    ap.pattern(dtype, u32::from(partitions))
        .map_err(|e| NeuronError::Operands {
            opcode,
            what: format!("{what}: {e}"),
        })
}

/// A per-partition operand at an SBUF address word, in the shared model.
fn short(opcode: u8, what: &str, word: u32, dtype: Dtype) -> Result<ShortOperand, NeuronError> {
    let ap = NeuronAp::<1> {
        addr: word,
        steps: [1],
        nums: [1],
    };
    super::operand::check_address_word(word)
        .and_then(|()| {
            ShortOperand::new(ap.space(), ap.start_partition(), ap.offset(), dtype)
                .map_err(|_| "offset out of range")
        })
        .map_err(|why| NeuronError::Operands {
            opcode,
            what: format!("{what} {word:#x}: {why}"),
        })
}

fn bad(opcode: u8, at: usize, field: &'static str, value: u64, why: &'static str) -> NeuronError {
    NeuronError::Field {
        opcode,
        offset: at,
        field,
        value,
        why,
    }
}

/// The profiler's name of an fp32 pass mode (`0x01` byte 33, `0x02` byte 33).
fn fp32_mode_name(m: u8) -> &'static str {
    match m {
        1 => "LOW",
        2 => "HIGH",
        _ => "LOW_HIGH",
    }
}

fn enabled(b: bool) -> &'static str {
    if b {
        "ENABLED"
    } else {
        "DISABLED"
    }
}

crate::instruction_set! {
    /// One decoded record of the Neuron encoding (docs/neuron-isa.md §6, §13): each variant holds
    /// the record's fields as written, for the simulator to give meaning to.
    pub enum NeuronInstr;
    /// The opcodes of the Neuron encoding (byte 0), named as the profiler names them.
    opcodes NeuronOpcode;
    context Names;
    model Instruction;
    errors NeuronError, NeuronError;

    /// `0x01` LDWEIGHTS (PE): load the stationary operand into the array.
    LoadWeights = 0x01, "LDWEIGHTS", [Pe] {
        /// May wait; never updates.
        sync: Sync = SyncBlock::WAIT,
        /// The stationary operand, 3-D, in SBUF.
        src: NeuronAp<3> = Ap(16, "stationary address"),
        /// Its dtype.
        dtype: Dtype = Dt(32, Part::Byte, "dtype"),
        /// fp32 pass: 1 LOW, 2 HIGH; 0 for 16-bit dtypes.
        fp32_mode: u8 = OneOf(33, "fp32 mode", &[0, 1, 2]),
        /// Transpose mode.
        transpose: bool = Flag(34, "transpose mode"),
        /// K: the partitions contracted.
        k: u8 = Partitions(38),
        /// M: the stationary operand's columns (its elements per partition), 1..=128.
        m: u8 = Partitions(39),
        /// Bytes 44–47.
        tail: PeTail = Tail(44),
    } check {
        dtype_in(0x01, 32, *dtype, PE_TYPES)?;
        if (*dtype == Dtype::F32) != (*fp32_mode != 0) {
            return Err(bad(0x01, 33, "fp32 mode", u64::from(*fp32_mode), "fp32 uses modes 1 and 2, 16-bit dtypes 0"));
        }
        if src.space() != crate::isa::MemSpace::Sbuf {
            return Err(bad(0x01, 16, "stationary address", u64::from(src.addr), "the stationary operand is in SBUF"));
        }
        counts_equal(0x01, &[("stationary", src.elements()), ("M", u64::from(*m))])
    }
    model {
        let pass = match (*dtype, *fp32_mode) {
            (Dtype::F32, 1) => MatmulPass::First,
            (Dtype::F32, _) => MatmulPass::Second,
            _ => MatmulPass::Single,
        };
        Ok(Instruction::MatmulLoadStationary {
            stationary: pattern(0x01, "stationary", src, *dtype, *k)?,
            reversed: true,
            pass,
        })
    }
    text |names, f, mn| {
        text::prefix(f, names, sync)?;
        if *fp32_mode != 0 {
            write!(f, "fp32_mode={} ", fp32_mode_name(*fp32_mode))?;
        }
        write!(f, "transpose_mode={} src=", enabled(*transpose))?;
        text::ap(f, *dtype, src)?;
        write!(f, " {k}*{m} ")
    }

    /// `0x02` MATMUL (PE): stream the moving operand through the array into PSUM.
    Matmul = 0x02, "MATMUL", [Pe] {
        /// May wait (2.23; never in 2.18/2.21) and update.
        sync: Sync = SyncBlock::BOTH,
        /// The moving operand, 3-D, in SBUF.
        src: NeuronAp<3> = Ap(16, "moving address"),
        /// Its dtype (as the LDWEIGHTS before it).
        dtype: Dtype = Dt(32, Part::Byte, "dtype"),
        /// fp32 mode: 3 LOW_HIGH (2 in trn1 weight transposes); 0 for 16-bit dtypes.
        fp32_mode: u8 = OneOf(33, "fp32 mode", &[0, 2, 3]),
        /// Transpose mode (as the LDWEIGHTS before it).
        transpose: bool = Flag(34, "transpose mode"),
        /// K (as the LDWEIGHTS before it).
        k: u8 = Partitions(38),
        /// M: the result's partitions (the stationary operand's columns), 1..=128.
        m: u8 = Partitions(39),
        /// Accumulation flags: bit 0 start (overwrite), bit 1 last.
        acc_flags: u8 = OneOf(43, "accumulate flags", &[0, 1, 2, 3]),
        /// Bytes 44–45 (`0F 0F`).
        tail: u16 = Le(44),
        /// Byte 46: `0x10` on trn1, `0x00` on trn2.
        byte46: u8 = OneOf(46, "byte 46", &[0x00, 0x10]),
        /// The PSUM destination, 3-D.
        dst: NeuronAp<3> = Ap(48, "out address"),
    } check {
        dtype_in(0x02, 32, *dtype, PE_TYPES)?;
        if (*dtype == Dtype::F32) != (*fp32_mode != 0) {
            return Err(bad(0x02, 33, "fp32 mode", u64::from(*fp32_mode), "fp32 uses modes 2 and 3, 16-bit dtypes 0"));
        }
        if *tail != 0x0F0F {
            return Err(bad(0x02, 44, "PE tail", u64::from(*tail), "only 0F 0F is known"));
        }
        if *transpose && *acc_flags & 1 == 0 {
            return Err(bad(0x02, 43, "accumulate flags", u64::from(*acc_flags), "transpose mode always overwrites (start flag set)"));
        }
        if src.space() != crate::isa::MemSpace::Sbuf {
            return Err(bad(0x02, 16, "moving address", u64::from(src.addr), "the moving operand is in SBUF"));
        }
        if dst.space() != crate::isa::MemSpace::Psum {
            return Err(bad(0x02, 48, "out address", u64::from(dst.addr), "the result is in PSUM"));
        }
        counts_equal(0x02, &[("moving", src.elements()), ("out", dst.elements())])
    }
    model {
        let out_dtype = if *transpose { *dtype } else { Dtype::F32 };
        Ok(Instruction::MatmulMoving {
            dst: pattern(0x02, "out", dst, out_dtype, *m)?,
            moving: pattern(0x02, "moving", src, *dtype, *k)?,
            accumulate: acc_flags & 1 == 0,
        })
    }
    text |names, f, mn| {
        text::prefix(f, names, sync)?;
        write!(f, "acc_flags={acc_flags} ")?;
        if *fp32_mode != 0 {
            write!(f, "fp32_mode={} ", fp32_mode_name(*fp32_mode))?;
        }
        f.write_str("src=")?;
        text::ap(f, *dtype, src)?;
        write!(f, " dst={dst} {k}*{m} ")
    }

    /// `0x21` ACTIVATE (ACT): `out = func(in · scale + bias)`.
    Activate = 0x21, "ACTIVATE", [Act] {
        /// May wait and update.
        sync: Sync = SyncBlock::BOTH,
        /// Byte 12 bit 0: the bias is an f32 immediate (bytes 40–43), not a pointer.
        bias_imm: bool = Flag(12, "bias form"),
        /// Byte 13 bit 0: the scale is a state-buffer pointer (bytes 36–39), not an f32.
        scale_ptr: bool = Flag(13, "scale form"),
        /// Byte 14: the accumulator command (only 0, idle, is known).
        acc_cmd: u8 = OneOf(14, "accumulator command", &[0]),
        /// Byte 15: 1 marks an instruction the compiler lowered from `tensor_scalar`.
        lowered: bool = Flag(15, "lowered form"),
        /// Input, 3-D.
        src: NeuronAp<3> = Ap(16, "in address"),
        /// Input dtype (byte 32, low nibble).
        in_dtype: Dtype = Dt(32, Part::Low, "in dtype"),
        /// Bias dtype (byte 32, high nibble).
        bias_dtype: Dtype = Dt(32, Part::High, "bias dtype"),
        /// Output dtype.
        out_dtype: Dtype = Dt(33, Part::Byte, "out dtype"),
        /// Partitions.
        channels: u8 = Partitions(34),
        /// The function.
        func: ActFunc = Func(35),
        /// The scale: f32 bits, or an SBUF address word.
        scale: u32 = Le(36),
        /// The bias: an SBUF address word, or f32 bits.
        bias: u32 = Le(40),
        /// An f32 immediate (always 0.0 in known NEFFs).
        imm: f32 = Le(44),
        /// Output, 3-D.
        dst: NeuronAp<3> = Ap(48, "out address"),
    } check {
        for (at, d) in [(32, *in_dtype), (32, *bias_dtype), (33, *out_dtype)] {
            dtype_in(0x21, at, d, FLOATS)?;
        }
        if *imm != 0.0 {
            return Err(bad(0x21, 44, "imm", u64::from(imm.to_bits()), "only 0.0 is known"));
        }
        counts_equal(0x21, &[("in", src.elements()), ("out", dst.elements())])
    }
    model {
        let scale = if *scale_ptr {
            ScalarOperand::Vector(short(0x21, "scale pointer", *scale, Dtype::F32)?)
        } else {
            ScalarOperand::Imm(f32::from_bits(*scale))
        };
        // An immediate bias of +0.0 is no bias (the old copy form): adding it would only
        // turn −0.0 into +0.0.
        let bias = match (*bias_imm, *bias) {
            (true, 0) => None,
            (true, b) => Some(ScalarOperand::Imm(f32::from_bits(b))),
            (false, b) => Some(ScalarOperand::Vector(short(0x21, "bias pointer", b, *bias_dtype)?)),
        };
        Ok(Instruction::Activation {
            func: func.func(),
            out: pattern(0x21, "out", dst, *out_dtype, *channels)?,
            input: pattern(0x21, "in", src, *in_dtype, *channels)?,
            scale,
            bias,
            reduce: ReduceCmd::Idle,
        })
    }
    text |names, f, mn| {
        text::prefix(f, names, sync)?;
        write!(f, "{} ", func.name())?;
        if *bias_imm {
            write!(f, "bias={:.6} ", f32::from_bits(*bias))?;
        } else {
            write!(f, "bias_ptr={}@{bias:#x} ", super::operand::dtype_name(*bias_dtype))?;
        }
        f.write_str("src=")?;
        text::ap(f, *in_dtype, src)?;
        f.write_str(" dst=")?;
        text::ap(f, *out_dtype, dst)?;
        write!(f, " channels={channels} ")?;
        if *scale_ptr {
            write!(f, "scale_ptr=fp32@{scale:#x} ")?;
        } else {
            write!(f, "scale={:.6} ", f32::from_bits(*scale))?;
        }
        write!(f, "imm={imm:.6} accumulator_cmd=IDLE")
    }

    /// `0x23` ACT_TABLE_LOAD (ACT): loads activation table set `table_sel` (an index into
    /// `Activation.json`'s `activation_function_sets`); no effect on data here (functions are
    /// computed, not interpolated from tables).
    ActTableLoad = 0x23, "ACT_TABLE_LOAD", [Act] {
        /// The table set.
        table_sel: u8 = OneOf(35, "table_sel", &[0, 1, 2, 3, 4, 5, 6, 7]),
    }
    model { Ok(Instruction::Nop) }
    text |names, f, mn| { write!(f, " table_sel={table_sel} ") }

    /// `0x41` TENSOR_TENSOR (DVE): `out = op(in0, in1)` element by element.
    TensorTensor = 0x41, "TENSOR_TENSOR", [Dve] {
        /// May wait and update.
        sync: Sync = SyncBlock::BOTH,
        /// in0 dtype (byte 12, low nibble).
        in0_dtype: Dtype = Dt(12, Part::Low, "in0 dtype"),
        /// in1 dtype (byte 12, high nibble).
        in1_dtype: Dtype = Dt(12, Part::High, "in1 dtype"),
        /// Output dtype.
        out_dtype: Dtype = Dt(13, Part::Byte, "out dtype"),
        /// The ALU op.
        op: NeuronAlu = Alu(14, "ALU op"),
        /// Partitions.
        channels: u8 = Partitions(15),
        /// First input, 3-D.
        src0: NeuronAp<3> = Ap(16, "in0 address"),
        /// Second input, 3-D.
        src1: NeuronAp<3> = Ap(32, "in1 address"),
        /// Output, 3-D.
        dst: NeuronAp<3> = Ap(48, "out address"),
    } check {
        for (at, d) in [(12, *in0_dtype), (12, *in1_dtype), (13, *out_dtype)] {
            dtype_in(0x41, at, d, FLOATS)?;
        }
        if *op == NeuronAlu::Bypass {
            return Err(bad(0x41, 14, "ALU op", 0, "bypass is not a tensor-tensor op"));
        }
        counts_equal(0x41, &[("in0", src0.elements()), ("in1", src1.elements()), ("out", dst.elements())])
    }
    model {
        Ok(Instruction::TensorTensor {
            op: op.op(),
            out: pattern(0x41, "out", dst, *out_dtype, *channels)?,
            in0: pattern(0x41, "in0", src0, *in0_dtype, *channels)?,
            in1: TensorOperand::Pattern(pattern(0x41, "in1", src1, *in1_dtype, *channels)?),
        })
    }
    text |names, f, mn| {
        text::prefix(f, names, sync)?;
        write!(f, "op={} src0=", op.name())?;
        text::ap(f, *in0_dtype, src0)?;
        f.write_str(" src1=")?;
        text::ap(f, *in1_dtype, src1)?;
        f.write_str(" dst=")?;
        text::ap(f, *out_dtype, dst)?;
        write!(f, " channels={channels} ")
    }

    /// `0x42` TENSOR_REDUCE (DVE): reduce the innermost dims of each partition.
    TensorReduce = 0x42, "TENSOR_REDUCE", [Dve] {
        /// May wait and update.
        sync: Sync = SyncBlock::BOTH,
        /// Input, 4-D.
        src: NeuronAp<4> = Ap(12, "in address"),
        /// Input dtype.
        in_dtype: Dtype = Dt(32, Part::Byte, "in dtype"),
        /// Output dtype.
        out_dtype: Dtype = Dt(33, Part::Byte, "out dtype"),
        /// Partitions.
        channels: u8 = Partitions(34),
        /// Byte 35 bit 0: negate the result.
        negated: bool = Flag(35, "negated"),
        /// The ALU op (add or max).
        op: NeuronAlu = Alu(36, "ALU op"),
        /// One more than the number of innermost dims reduced: 2 (X) or 3 (XY).
        dims: u8 = OneOf(37, "reduced dims + 1", &[2, 3]),
        /// Output, 4-D.
        dst: NeuronAp<4> = Ap(44, "out address"),
    } check {
        dtype_in(0x42, 32, *in_dtype, FLOATS)?;
        dtype_in(0x42, 33, *out_dtype, FLOATS)?;
        if !matches!(op, NeuronAlu::Add | NeuronAlu::Max) {
            return Err(bad(0x42, 36, "ALU op", u64::from(op.code()), "only add and max reductions are known"));
        }
        let axes = usize::from(*dims - 1);
        let group: u64 = src.nums[..axes].iter().map(|&n| u64::from(n)).product();
        let (n_in, n_out) = (src.elements(), dst.elements());
        if n_out.checked_mul(group) != Some(n_in) {
            return Err(NeuronError::Operands {
                opcode: 0x42,
                what: format!("reducing the {axes} innermost dims groups {group} elements, but in has {n_in} and out {n_out} per partition"),
            });
        }
        Ok(())
    }
    model {
        Ok(Instruction::TensorReduce {
            op: op.op(),
            out: pattern(0x42, "out", dst, *out_dtype, *channels)?,
            input: pattern(0x42, "in", src, *in_dtype, *channels)?,
            axes: *dims - 1,
            negate: *negated,
        })
    }
    text |names, f, mn| {
        text::prefix(f, names, sync)?;
        write!(f, "op={} dim={} ", op.name(), if *dims == 2 { "X" } else { "XY" })?;
        if *negated {
            f.write_str("negated=1 ")?;
        }
        f.write_str("src=")?;
        text::ap(f, *in_dtype, src)?;
        f.write_str(" dst=")?;
        text::ap(f, *out_dtype, dst)?;
        write!(f, " channels={channels} ")
    }

    /// `0x43` TENSOR_SCALAR (DVE): `out = op1(op0(in, imm0), imm1)`, each immediate an f32 or
    /// a per-partition value read from SBUF.
    TensorScalar = 0x43, "TENSOR_SCALAR", [Dve] {
        /// May wait and update.
        sync: Sync = SyncBlock::BOTH,
        /// Input, 3-D.
        src: NeuronAp<3> = Ap(16, "in address"),
        /// Input dtype.
        in_dtype: Dtype = Dt(32, Part::Byte, "in dtype"),
        /// Output dtype.
        out_dtype: Dtype = Dt(33, Part::Byte, "out dtype"),
        /// Partitions.
        channels: u8 = Partitions(34),
        /// Byte 35: bit k set = operand k is a pointer (`PTR`), else an immediate.
        imm_src: u8 = OneOf(35, "immediate sources", &[0, 1, 2, 3]),
        /// First op.
        op0: NeuronAlu = Alu(36, "ALU op0"),
        /// Second op.
        op1: NeuronAlu = Alu(37, "ALU op1"),
        /// First operand: f32 bits, or an SBUF address word.
        imm0: u32 = Le(40),
        /// Second operand: f32 bits, or an SBUF address word.
        imm1: u32 = Le(44),
        /// Output, 3-D.
        dst: NeuronAp<3> = Ap(48, "out address"),
    } check {
        dtype_in(0x43, 32, *in_dtype, FLOATS)?;
        dtype_in(0x43, 33, *out_dtype, FLOATS)?;
        counts_equal(0x43, &[("in", src.elements()), ("out", dst.elements())])
    }
    model {
        // A pointer operand is one fp32 per partition at that SBUF address; an immediate is f32
        // bits.
        let operand = |k: u8, v: u32| -> Result<ScalarOperand, NeuronError> {
            Ok(if imm_src & (1 << k) != 0 {
                ScalarOperand::Vector(short(0x43, "immediate pointer", v, Dtype::F32)?)
            } else {
                ScalarOperand::Imm(f32::from_bits(v))
            })
        };
        Ok(Instruction::TensorScalar {
            out: pattern(0x43, "out", dst, *out_dtype, *channels)?,
            input: pattern(0x43, "in", src, *in_dtype, *channels)?,
            op0: op0.op(),
            operand0: operand(0, *imm0)?,
            reverse0: false,
            op1: op1.op(),
            operand1: operand(1, *imm1)?,
            reverse1: false,
        })
    }
    text |names, f, mn| {
        text::prefix(f, names, sync)?;
        write!(f, "ops={},{} imm=", op0.name(), op1.name())?;
        for (k, v) in [*imm0, *imm1].into_iter().enumerate() {
            if k > 0 {
                f.write_char(',')?;
            }
            if imm_src & (1 << k) != 0 {
                write!(f, "{v:#x}")?;
            } else {
                write!(f, "{}", f32::from_bits(v))?;
            }
        }
        let src_name = |k: u8| if imm_src & (1 << k) != 0 { "PTR" } else { "INSTRUCTION" };
        write!(f, " imm_src={},{} src=", src_name(0), src_name(1))?;
        text::ap(f, *in_dtype, src)?;
        f.write_str(" dst=")?;
        text::ap(f, *out_dtype, dst)?;
        write!(f, " channels={channels} ")
    }

    /// `0x46` COPY (ACT, DVE): same-dtype copy.
    TensorCopy = 0x46, "COPY", [Act, Dve] {
        /// May wait and update.
        sync: Sync = SyncBlock::BOTH,
        /// Input, 4-D.
        src: NeuronAp<4> = Ap(12, "in address"),
        /// Input dtype.
        in_dtype: Dtype = Dt(32, Part::Byte, "in dtype"),
        /// Output dtype (equal to the input's).
        out_dtype: Dtype = Dt(33, Part::Byte, "out dtype"),
        /// Partitions.
        channels: u8 = Partitions(34),
        /// Output, 4-D.
        dst: NeuronAp<4> = Ap(44, "out address"),
    } check {
        dtype_in(0x46, 32, *in_dtype, COPY_TYPES)?;
        if out_dtype != in_dtype {
            return Err(bad(0x46, 33, "out dtype", u64::from(out_dtype.code()), "0x46 copies without conversion: equals the in dtype"));
        }
        counts_equal(0x46, &[("in", src.elements()), ("out", dst.elements())])
    }
    model {
        Ok(Instruction::TensorCopy {
            out: pattern(0x46, "out", dst, *out_dtype, *channels)?,
            input: pattern(0x46, "in", src, *in_dtype, *channels)?,
        })
    }
    text |names, f, mn| { unary(f, names, sync, src, *in_dtype, dst, *out_dtype, *channels) }

    /// `0x47` CAST (ACT, DVE): copy with conversion.
    Cast = 0x47, "CAST", [Act, Dve] {
        /// May wait and update.
        sync: Sync = SyncBlock::BOTH,
        /// Input, 4-D.
        src: NeuronAp<4> = Ap(12, "in address"),
        /// Input dtype.
        in_dtype: Dtype = Dt(32, Part::Byte, "in dtype"),
        /// Output dtype (differs from the input's).
        out_dtype: Dtype = Dt(33, Part::Byte, "out dtype"),
        /// Partitions.
        channels: u8 = Partitions(34),
        /// Output, 4-D.
        dst: NeuronAp<4> = Ap(44, "out address"),
    } check {
        dtype_in(0x47, 32, *in_dtype, FLOATS)?;
        dtype_in(0x47, 33, *out_dtype, FLOATS)?;
        if out_dtype == in_dtype {
            return Err(bad(0x47, 33, "out dtype", u64::from(out_dtype.code()), "0x47 converts: differs from the in dtype"));
        }
        counts_equal(0x47, &[("in", src.elements()), ("out", dst.elements())])
    }
    model {
        Ok(Instruction::TensorCopy {
            out: pattern(0x47, "out", dst, *out_dtype, *channels)?,
            input: pattern(0x47, "in", src, *in_dtype, *channels)?,
        })
    }
    text |names, f, mn| { unary(f, names, sync, src, *in_dtype, dst, *out_dtype, *channels) }

    /// `0x48` RECIPROCAL (DVE): `out = 1 / in`.
    Reciprocal = 0x48, "RECIPROCAL", [Dve] {
        /// May wait and update.
        sync: Sync = SyncBlock::BOTH,
        /// Input, 4-D.
        src: NeuronAp<4> = Ap(12, "in address"),
        /// Input dtype.
        in_dtype: Dtype = Dt(32, Part::Byte, "in dtype"),
        /// Output dtype.
        out_dtype: Dtype = Dt(33, Part::Byte, "out dtype"),
        /// Partitions.
        channels: u8 = Partitions(34),
        /// Output, 4-D.
        dst: NeuronAp<4> = Ap(44, "out address"),
    } check {
        dtype_in(0x48, 32, *in_dtype, FLOATS)?;
        dtype_in(0x48, 33, *out_dtype, FLOATS)?;
        counts_equal(0x48, &[("in", src.elements()), ("out", dst.elements())])
    }
    model {
        // 1 / x as the reversed first stage of a tensor_scalar.
        Ok(Instruction::TensorScalar {
            out: pattern(0x48, "out", dst, *out_dtype, *channels)?,
            input: pattern(0x48, "in", src, *in_dtype, *channels)?,
            op0: AluOp::Divide,
            operand0: ScalarOperand::Imm(1.0),
            reverse0: true,
            op1: AluOp::Bypass,
            operand1: ScalarOperand::Imm(0.0),
            reverse1: false,
        })
    }
    text |names, f, mn| { unary(f, names, sync, src, *in_dtype, dst, *out_dtype, *channels) }

    /// `0x49` MEMSET (DVE): fill with a constant given as the output dtype's bit pattern.
    Memset = 0x49, "MEMSET", [Dve] {
        /// May wait and update.
        sync: Sync = SyncBlock::BOTH,
        /// Elements per partition (equals the output pattern's).
        count: u32 = Le(28),
        /// Output dtype.
        dtype: Dtype = Dt(32, Part::Byte, "dtype"),
        /// Partitions.
        channels: u8 = Partitions(34),
        /// The fill value: the raw bits of the output dtype, in the low bytes.
        value: u32 = Le(40),
        /// Output, 4-D.
        dst: NeuronAp<4> = Ap(44, "out address"),
    } check {
        dtype_in(0x49, 32, *dtype, MEMSET_TYPES)?;
        if dtype.size() < 4 && *value >> (8 * dtype.size()) != 0 {
            return Err(bad(0x49, 40, "fill value", u64::from(*value), "bits above the output dtype's width are set"));
        }
        if u64::from(*count) != dst.elements() {
            return Err(bad(0x49, 28, "element count", u64::from(*count), "equals the out pattern's elements per partition"));
        }
        Ok(())
    }
    model {
        let v = match dtype {
            Dtype::Bf16 => f32::from_bits(*value << 16),
            Dtype::F16 => half::f16::from_bits(*value as u16).to_f32(),
            Dtype::I32 => *value as i32 as f32,
            Dtype::U32 => *value as f32,
            _ => f32::from_bits(*value),
        };
        Ok(Instruction::Memset {
            out: pattern(0x49, "out", dst, *dtype, *channels)?,
            value: v,
        })
    }
    text |names, f, mn| {
        text::prefix(f, names, sync)?;
        write!(f, "value={value:#x} dst=")?;
        text::ap(f, *dtype, dst)?;
        write!(f, " channels={channels} ")
    }

    /// `0x92` affine select (Pool): `out = (offset + mult·p + Σ stepᵢ·iᵢ ≠ 0) ? in : reg[fill]`.
    AffineSelect = 0x92, "AFFINE_SELECT", [Pool] {
        /// May wait and update.
        sync: Sync = SyncBlock::BOTH,
        /// Partitions.
        channels: u8 = Partitions(12),
        /// Input dtype (low nibble).
        in_dtype: Dtype = Dt(13, Part::Low, "in dtype"),
        /// Output dtype (high nibble).
        out_dtype: Dtype = Dt(13, Part::High, "out dtype"),
        /// The comparison (3 = not equal; the only one known).
        cmp: u8 = OneOf(14, "compare op", &[3]),
        /// The register holding the fill value (f32 bits).
        fill_reg: u8 = Le(15),
        /// The constant term.
        offset: i32 = Le(16),
        /// The value pattern: 4 steps, innermost first.
        steps: [i16; 4] = Words(20),
        /// The value pattern: 4 counts, innermost first.
        nums: [u16; 4] = Words(28),
        /// Input, 2-D.
        src: NeuronAp<2> = Ap(36, "in address"),
        /// Output, 2-D.
        dst: NeuronAp<2> = Ap(48, "out address"),
        /// The per-partition term.
        partition_mult: i32 = Le(60),
    } check {
        dtype_in(0x92, 13, *in_dtype, FLOATS)?;
        dtype_in(0x92, 13, *out_dtype, FLOATS)?;
        let n: u64 = nums.iter().map(|&n| u64::from(n)).product();
        counts_equal(0x92, &[("pattern", n), ("in", src.elements()), ("out", dst.elements())])
    }
    text |names, f, mn| {
        text::prefix(f, names, sync)?;
        write!(f, "cmp_op=NE fill=$R[{fill_reg}] offset={offset} partition_mult={partition_mult} pattern=")?;
        super::operand::list(f, steps)?;
        super::operand::list(f, nums)?;
        f.write_str(" src=")?;
        text::ap(f, *in_dtype, src)?;
        f.write_str(" dst=")?;
        text::ap(f, *out_dtype, dst)?;
        write!(f, " channels={channels} ")
    }

    /// `0xA0` EVENT_SEMAPHORE (all engines): wait for one or two semaphores.
    EventSemaphore = 0xA0, "EVENT_SEMAPHORE", [Pe, Act, Pool, Dve, Sp] {
        /// One wait (bytes 4–11), optionally a second (bytes 32, 33, 36–37).
        sync: Sync = SyncBlock::TWO_WAITS,
    }
    model { Ok(Instruction::Nop) }
    text |names, f, mn| {
        text::prefix(f, names, sync)?;
        f.write_str("setter=0   ")
    }

    /// `0xA4` NOP (with a wait).
    Nop = 0xA4, "NOP", [Pe, Act, Pool, Dve, Sp] {
        /// One wait.
        sync: Sync = SyncBlock::WAIT_ONLY,
    }
    model { Ok(Instruction::Nop) }
    text |names, f, mn| {
        text::prefix(f, names, sync)?;
        f.write_str("cycle=0 ")
    }

    /// `0xA7` register move (Pool): `reg[dst] = imm`.
    RegisterMove = 0xA7, "REGISTER_MOVE", [Pool] {
        /// Byte 12 (always 1).
        b12: u8 = OneOf(12, "byte 12", &[1]),
        /// Dtype of the register (uint32).
        dtype: u8 = OneOf(13, "register dtype", &[9]),
        /// Byte 14 (always 1).
        b14: u8 = OneOf(14, "byte 14", &[1]),
        /// The destination register.
        dst: u32 = Register(24),
        /// The value (raw 32 bits).
        imm: u32 = Le(32),
    } text |names, f, mn| { write!(f, " dst=$R[{dst}] imm={imm:#x} ") }

    /// `0xA8` register ALU (Pool): `reg[dst] = reg[src] op imm`, modulo 2³².
    RegisterAlu = 0xA8, "REGISTER_ALU", [Pool] {
        /// The op (add or multiply).
        op: NeuronAlu = Alu(12, "ALU op"),
        /// Dtype of the registers (uint32).
        dtype: u8 = OneOf(13, "register dtype", &[9]),
        /// Byte 14 (always 1).
        b14: u8 = OneOf(14, "byte 14", &[1]),
        /// The source register.
        src: u32 = Register(16),
        /// The destination register.
        dst: u32 = Register(20),
        /// The immediate.
        imm: u32 = Le(24),
    } check {
        if !matches!(op, NeuronAlu::Add | NeuronAlu::Multiply) {
            return Err(bad(0xA8, 12, "ALU op", u64::from(op.code()), "only add and multiply are known on registers"));
        }
        Ok(())
    }
    text |names, f, mn| {
        write!(f, " op={} src=$R[{src}] imm={imm} dst=$R[{dst}] ", op.name())
    }

    /// `0xB1` DRAIN (all engines): first record of every stream; no effect here.
    Drain = 0xB1, "DRAIN", [Pe, Act, Pool, Dve, Sp]
        model { Ok(Instruction::Nop) }
        text |names, f, mn| { f.write_char(' ') }

    /// `0xC1` DMA trigger (SP, Pool, ACT, DVE): start block `block_id` of a queue set (the
    /// runtime rewrites it at load).
    DmaTrigger = 0xC1, "DMA_TRIGGER", [Pe, Act, Pool, Dve, Sp] {
        /// May wait.
        sync: Sync = SyncBlock::WAIT,
        /// The queue set.
        queue: QueueSetName = QueueName(12, 32),
        /// The block id.
        block_id: u32 = Le(48),
    }
    model {
        Ok(Instruction::PseudoDmaTrigger {
            queue: queue.clone(),
            block_id: *block_id,
        })
    }
    text |names, f, mn| {
        text::prefix(f, names, sync)?;
        write!(f, "queue={queue} block={block_id} ")
    }

    /// `0xCC` SET_ORDERING_MODE (all engines): relaxed ordering; no effect here.
    SetOrderingMode = 0xCC, "SET_ORDERING_MODE", [Pe, Act, Pool, Dve, Sp]
        model { Ok(Instruction::Nop) }
        text |names, f, mn| { f.write_str(" ordering_mode=relaxed ") }

    /// `0xCE` TENSOR_LOAD (Pool): `reg[dst] = u32 at an SBUF address`.
    TensorLoad = 0xCE, "TENSOR_LOAD", [Pool] {
        /// May wait.
        sync: Sync = SyncBlock::WAIT,
        /// Dtype loaded (uint32).
        dtype: u8 = OneOf(12, "dtype", &[9]),
        /// Bytes 14–15 (always `01 01`).
        b14: u16 = Exactly(14, "bytes 14-15", 0x0101),
        /// The SBUF address word (partition in bits 18–24).
        addr: u32 = Le(20),
        /// Bytes 24–31 (always 1 and 8).
        shape: u64 = Exactly(24, "bytes 24-31", 0x0000_0008_0000_0001),
        /// The destination register.
        dst: u32 = Register(32),
    } check {
        super::operand::check_address_word(*addr)
            .map_err(|why| bad(0xCE, 20, "address", u64::from(*addr), why))?;
        if *addr & super::operand::PSUM_BIT != 0 {
            return Err(bad(0xCE, 20, "address", u64::from(*addr), "register loads read SBUF"));
        }
        Ok(())
    }
    text |names, f, mn| {
        text::prefix(f, names, sync)?;
        write!(f, "addr=uint32@{addr:#x} data=$R[{dst}] ")
    }

    /// `0xD4` DMA_DIRECT2D (SP, ACT, Pool): a DMA issued by the engine; completion adds
    /// `sem_increment` to `semaphore`.
    DmaDirect2d = 0xD4, "DMA_DIRECT2D", [Act, Pool, Sp] {
        /// May wait; completion is reported through `semaphore`, not the sync block.
        sync: Sync = SyncBlock::WAIT,
        /// Byte 12 (`src_shape_reg`, always 0).
        src_shape_reg: u8 = OneOf(12, "src_shape_reg", &[0]),
        /// The semaphore completion increments.
        semaphore: u8 = Le(13),
        /// How much completion adds (the queue's `num_queues`).
        sem_increment: u8 = Le(14),
        /// Byte 15 (`dst_shape_reg`, always 0).
        dst_shape_reg: u8 = OneOf(15, "dst_shape_reg", &[0]),
        /// Source address.
        src: DmaAddr = Addr(16),
        /// Source pattern.
        src_pattern: DmaPattern = Pattern { steps: 24, nums: 32 },
        /// Bytes of one source chunk.
        src_elem_size: u16 = Le(36),
        /// Bytes 38–39 (0; `0x00BD` with a register address).
        src_extra: u16 = Le(38),
        /// Destination address.
        dst: DmaAddr = Addr(40),
        /// Destination pattern.
        dst_pattern: DmaPattern = Pattern { steps: 48, nums: 56 },
        /// Bytes of one destination chunk.
        dst_elem_size: u16 = Le(60),
        /// Source dtype.
        src_dtype: Dtype = Dt(62, Part::Byte, "source dtype"),
        /// Destination dtype (a different one converts).
        dst_dtype: Dtype = Dt(63, Part::Byte, "destination dtype"),
    } check {
        dtype_in(0xD4, 62, *src_dtype, DMA_TYPES)?;
        dtype_in(0xD4, 63, *dst_dtype, DMA_TYPES)?;
        let extra_ok = *src_extra == 0 || (*src_extra == 0x00BD && src.kind == DmaAddrKind::TableRegister);
        if !extra_ok {
            return Err(bad(0xD4, 38, "bytes 38-39", u64::from(*src_extra), "0, or 0x00BD with a register-addressed source"));
        }
        if dst.kind == DmaAddrKind::TableRegister {
            return Err(bad(0xD4, 47, "address kind", 0x28, "register-addressed destinations are not known"));
        }
        if src_pattern.nums != dst_pattern.nums {
            return Err(NeuronError::Operands {
                opcode: 0xD4,
                what: format!("source counts {:?} differ from destination counts {:?}", src_pattern.nums, dst_pattern.nums),
            });
        }
        if *sem_increment == 0 {
            return Err(bad(0xD4, 14, "sem_increment", 0, "completion always adds the queue count"));
        }
        let (se, de) = (u64::from(*src_elem_size), u64::from(*dst_elem_size));
        let (ss, ds) = (src_dtype.size() as u64, dst_dtype.size() as u64);
        if se == 0 || se % ss != 0 || se / ss * ds != de {
            return Err(NeuronError::Operands {
                opcode: 0xD4,
                what: format!("chunk sizes {se} ({}) and {de} ({}) do not hold the same number of elements", super::operand::dtype_name(*src_dtype), super::operand::dtype_name(*dst_dtype)),
            });
        }
        Ok(())
    }
    text |names, f, mn| {
        text::prefix(f, names, sync)?;
        write!(
            f,
            "semaphore={semaphore} sem_increment={sem_increment}  src_elem_size={src_elem_size} dst_elem_size={dst_elem_size} src_pattern={src_pattern} dst_pattern={dst_pattern} "
        )?;
        text::dma_addr(f, names, "src", src)?;
        f.write_str(" src_shape_reg=0 ")?;
        text::dma_addr(f, names, "dst", dst)?;
        f.write_str(" dst_shape_reg=0 ")?;
        if src_dtype != dst_dtype {
            write!(
                f,
                "in_dtype={} out_dtype={} ",
                super::operand::dtype_name(*src_dtype),
                super::operand::dtype_name(*dst_dtype)
            )?;
        }
        f.write_str("compute_op=NONE ")
    }

    /// `0xDA` (Pool): follows every register-addressed `0xD4`; no effect on data.
    DmaMark = 0xDA, "DMA_MARK", [Pool], length 0x00 {
        /// Byte 15 (16 or 8).
        b15: u8 = OneOf(15, "byte 15", &[8, 16]),
    } text |names, f, mn| { write!(f, " value={b15} ") }
}

/// The text of the copy-like opcodes (`0x46`, `0x47`, `0x48`).
#[allow(clippy::too_many_arguments)]
fn unary(
    f: &mut dyn Write,
    names: &Names,
    sync: &Sync,
    src: &NeuronAp<4>,
    in_dtype: Dtype,
    dst: &NeuronAp<4>,
    out_dtype: Dtype,
    channels: u8,
) -> core::fmt::Result {
    text::prefix(f, names, sync)?;
    f.write_str("src=")?;
    text::ap(f, in_dtype, src)?;
    f.write_str(" dst=")?;
    text::ap(f, out_dtype, dst)?;
    write!(f, " channels={channels} ")
}
