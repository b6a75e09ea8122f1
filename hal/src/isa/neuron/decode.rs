//! Decoding Neuron records (layouts in the [module docs](super)).
//!
//! Each opcode's decoder reads and checks the fields that carry meaning; then the record is
//! re-encoded and compared byte for byte, so every byte the layout fixes (zeros and constants
//! such as LoadStationary's byte 39 = `0x80`) is checked in one place, and a difference is
//! reported with the field's name.

use crate::addr::SemaphoreId;
use crate::dtype::Dtype;
use crate::isa::ap::{AccessPattern, Dim, ShortOperand};
use crate::isa::codec::{Record, LENGTH_BYTE, RECORD_SIZE};
use crate::isa::instr::{Instruction, TensorOperand};
use crate::isa::ops::ScalarOperand;
use crate::isa::ops::{ActivationFunc, AluOp, MatmulPass, MemSpace, QueueSetName, ReduceCmd};

use super::{
    ActForm, Detail, NeuronError, NeuronInstr, NeuronOpcode, PeTail, Sync, SyncRule, SyncWait,
    UPDATE_INC, WAIT_GE,
};

/// Bit 25 of an address word: the operand is in PSUM.
pub(super) const PSUM_BIT: u32 = 1 << 25;
/// Offset bits of an SBUF address word.
pub(super) const SBUF_OFFSET_MASK: u32 = (1 << 18) - 1;
/// Offset bits of a PSUM address word.
pub(super) const PSUM_OFFSET_MASK: u32 = (1 << 14) - 1;
/// LoadStationary / MultiplyMoving byte 39.
pub(super) const PE_BYTE39: u8 = 0x80;
/// The partitions of a matmul result (the PE array's M, 128 in every known record).
pub(super) const PE_M: u32 = 128;

/// The record with its opcode, and typed readers that report the failing byte.
struct Fields<'a> {
    b: &'a [u8; RECORD_SIZE],
    op: u8,
}

impl Fields<'_> {
    fn err(
        &self,
        offset: usize,
        field: &'static str,
        value: u64,
        why: &'static str,
    ) -> NeuronError {
        NeuronError::Field {
            opcode: self.op,
            offset,
            field,
            value,
            why,
        }
    }
    fn u16(&self, at: usize) -> u16 {
        u16::from_le_bytes([self.b[at], self.b[at + 1]])
    }
    fn i16(&self, at: usize) -> i16 {
        self.u16(at) as i16
    }
    fn u32(&self, at: usize) -> u32 {
        u32::from_le_bytes([self.b[at], self.b[at + 1], self.b[at + 2], self.b[at + 3]])
    }

    fn dtype(
        &self,
        at: usize,
        code: u8,
        field: &'static str,
        allowed: &[Dtype],
    ) -> Result<Dtype, NeuronError> {
        Dtype::from_code(code)
            .filter(|d| allowed.contains(d))
            .ok_or_else(|| {
                self.err(
                    at,
                    field,
                    u64::from(code),
                    "not a dtype code this opcode is known to use",
                )
            })
    }

    fn partitions(&self, at: usize) -> Result<u32, NeuronError> {
        let p = self.b[at];
        if p == 0 || p > 128 {
            return Err(self.err(at, "partitions", u64::from(p), "must be 1..=128"));
        }
        Ok(u32::from(p))
    }

    fn flag(&self, at: usize, field: &'static str) -> Result<bool, NeuronError> {
        match self.b[at] {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(self.err(at, field, u64::from(v), "must be 0 or 1")),
        }
    }

    /// The address word at `at`: memory and byte offset inside each partition.
    fn address(&self, at: usize, field: &'static str) -> Result<(MemSpace, u32), NeuronError> {
        let w = self.u32(at);
        let (space, mask) = if w & PSUM_BIT != 0 {
            (MemSpace::Psum, PSUM_OFFSET_MASK)
        } else {
            (MemSpace::Sbuf, SBUF_OFFSET_MASK)
        };
        if w & !(mask | PSUM_BIT) != 0 {
            return Err(self.err(
                at,
                field,
                u64::from(w),
                "address bits outside the offset and the PSUM bit are set (a start partition or other field whose encoding is unknown)",
            ));
        }
        Ok((space, w & mask))
    }

    /// An AP of `ndims` dims at `at`, from partition 0, in `space` if given.
    fn ap(
        &self,
        at: usize,
        ndims: usize,
        dtype: Dtype,
        partitions: u32,
        space: Option<MemSpace>,
        field: &'static str,
    ) -> Result<AccessPattern, NeuronError> {
        let (s, offset) = self.address(at, field)?;
        if let Some(want) = space {
            if s != want {
                return Err(self.err(
                    at,
                    field,
                    u64::from(self.u32(at)),
                    match want {
                        MemSpace::Sbuf => "this operand must be in SBUF",
                        MemSpace::Psum => "this operand must be in PSUM",
                    },
                ));
            }
        }
        let mut dims = Vec::with_capacity(ndims);
        for i in 0..ndims {
            let step = self.i16(at + 4 + 2 * i);
            let num_at = at + 4 + 2 * ndims + 2 * i;
            let count = self.u16(num_at);
            if count == 0 {
                return Err(self.err(
                    num_at,
                    "access-pattern num",
                    0,
                    "every dimension has num ≥ 1",
                ));
            }
            dims.push(Dim::new(step, count));
        }
        // The model lists dims outermost first; the record innermost first.
        dims.reverse();
        let base = ShortOperand::new(s, 0, offset, dtype)
            .map_err(|_| self.err(at, field, u64::from(offset), "offset out of range"))?;
        AccessPattern::new(base, partitions, &dims)
            .map_err(|_| self.err(at, field, u64::from(partitions), "invalid access pattern"))
    }

    fn sync(&self, rule: SyncRule) -> Result<Sync, NeuronError> {
        let b = self.b;
        let wait = match b[4] {
            0 => None,
            WAIT_GE if rule.wait => Some(SyncWait {
                sem: SemaphoreId(u32::from(b[5])),
                value: self.u32(8),
            }),
            WAIT_GE => {
                return Err(self.err(
                    4,
                    "wait mode",
                    u64::from(WAIT_GE),
                    "this opcode never waits",
                ))
            }
            v => {
                return Err(self.err(
                    4,
                    "wait mode",
                    u64::from(v),
                    "only 0x00 (none) and 0x05 (until semaphore ≥ value) are known",
                ))
            }
        };
        if rule.wait_required && wait.is_none() {
            return Err(self.err(4, "wait mode", 0, "this opcode always waits"));
        }
        let signal = match b[6] {
            0 => None,
            UPDATE_INC if rule.update => Some(SemaphoreId(u32::from(b[7]))),
            UPDATE_INC => {
                return Err(self.err(
                    6,
                    "update mode",
                    u64::from(UPDATE_INC),
                    "this opcode never updates a semaphore",
                ))
            }
            v => {
                return Err(self.err(
                    6,
                    "update mode",
                    u64::from(v),
                    "only 0x00 (none) and 0x13 (+1 on completion) are known",
                ))
            }
        };
        Ok(Sync {
            waits: [wait, None],
            signal,
        })
    }

    fn alu(&self, at: usize) -> Result<AluOp, NeuronError> {
        match self.b[at] {
            0x04 => Ok(AluOp::Add),
            0x08 => Ok(AluOp::Max),
            v => Err(self.err(
                at,
                "ALU op",
                u64::from(v),
                "only 0x04 (add) and 0x08 (max) are known",
            )),
        }
    }

    fn counts_equal(&self, what: &[(&str, &AccessPattern)]) -> Result<(), NeuronError> {
        let n = what[0].1.elements_per_partition();
        if what.iter().all(|(_, a)| a.elements_per_partition() == n) {
            return Ok(());
        }
        let list: Vec<String> = what
            .iter()
            .map(|(name, a)| format!("{name} {}", a.elements_per_partition()))
            .collect();
        Err(NeuronError::Operands {
            opcode: self.op,
            what: format!(
                "operands have different element counts per partition ({})",
                list.join(", ")
            ),
        })
    }
}

const FLOATS: &[Dtype] = &[Dtype::F16, Dtype::F32];
const COPY_TYPES: &[Dtype] = &[Dtype::F16, Dtype::I32, Dtype::F32];

impl NeuronInstr {
    /// Decodes one Neuron record, strictly (see the [module docs](super)).
    pub fn decode(record: &Record) -> Result<NeuronInstr, NeuronError> {
        let b = &record.0;
        let opcode = NeuronOpcode::from_byte(b[0]).ok_or(NeuronError::UnsupportedOpcode(b[0]))?;
        let f = Fields { b, op: b[0] };
        if b[1] != LENGTH_BYTE {
            return Err(f.err(1, "length byte", u64::from(b[1]), "always 0x10"));
        }
        let mut sync = f.sync(opcode.sync_rule())?;
        let (instr, detail) = match opcode {
            NeuronOpcode::StreamHeader => (Instruction::StreamHeader, Detail::None),
            NeuronOpcode::Preamble | NeuronOpcode::ActTableLoad | NeuronOpcode::FinalWait => {
                (Instruction::Nop, Detail::None)
            }
            NeuronOpcode::Wait => {
                sync.waits[1] = second_wait(&f)?;
                (Instruction::Nop, Detail::None)
            }
            NeuronOpcode::DmaTrigger => (dma_trigger(&f)?, Detail::None),
            NeuronOpcode::LoadStationary => load_stationary(&f)?,
            NeuronOpcode::MultiplyMoving => multiply_moving(&f)?,
            NeuronOpcode::Activate => activate(&f)?,
            NeuronOpcode::TensorTensor => (tensor_tensor(&f)?, Detail::None),
            NeuronOpcode::TensorReduce => (tensor_reduce(&f)?, Detail::None),
            NeuronOpcode::Copy | NeuronOpcode::ConvertCopy => (copy(&f, opcode)?, Detail::None),
            NeuronOpcode::Memset => (memset(&f)?, Detail::None),
        };
        let n = NeuronInstr {
            opcode,
            sync,
            instr,
            detail,
        };
        let canonical = n.encode()?;
        if let Some(at) = (0..RECORD_SIZE).find(|&i| canonical.0[i] != b[i]) {
            let (field, why) = fixed_field(opcode, at);
            return Err(NeuronError::Field {
                opcode: b[0],
                offset: at,
                field,
                value: u64::from(b[at]),
                why,
            });
        }
        Ok(n)
    }
}

/// Name and rule of a byte the layout fixes, for the error message.
fn fixed_field(op: NeuronOpcode, at: usize) -> (&'static str, &'static str) {
    use NeuronOpcode::*;
    match (op, at) {
        (_, 2..=3) => ("framing", "always zero"),
        (_, 4..=11) => ("sync block", "unused half of the sync block must be zero"),
        (LoadStationary | MultiplyMoving, 39) => ("byte 39 (possibly M)", "only 0x80 is known"),
        (LoadStationary, 44..=47) => (
            "PE tail",
            "only 0F 0F 00 00, 0F 0F 02 00, 0F 0F 0F 00 are known",
        ),
        (MultiplyMoving, 44..=45) => ("PE tail", "only 0F 0F is known"),
        (Memset, 35..=43) => (
            "fill value",
            "the encoding of a non-zero fill value is unknown",
        ),
        (Activate, 12 | 15 | 35) => (
            "activation form",
            "only the two known forms (selector/flag/bias flag 0/0/0x01 and 1/1/0x80) are accepted",
        ),
        (Activate, 40..=43) => ("bias address", "form without bias has address 0"),
        (DmaTrigger, 12..=43) => ("queue-set name", "NUL-padded after the name"),
        _ => ("reserved", "documented as zero"),
    }
}

fn second_wait(f: &Fields<'_>) -> Result<Option<SyncWait>, NeuronError> {
    match f.b[32] {
        0 => Ok(None),
        WAIT_GE => Ok(Some(SyncWait {
            sem: SemaphoreId(u32::from(f.b[33])),
            value: u32::from(f.u16(36)),
        })),
        v => Err(f.err(
            32,
            "second wait mode",
            u64::from(v),
            "only 0x00 and 0x05 are known",
        )),
    }
}

fn dma_trigger(f: &Fields<'_>) -> Result<Instruction, NeuronError> {
    let field = &f.b[12..44];
    let len = field.iter().position(|&c| c == 0).unwrap_or(field.len());
    let queue = QueueSetName::from_ascii(&field[..len]).map_err(|_| {
        f.err(
            12,
            "queue-set name",
            len as u64,
            "1..=32 graphic ASCII characters, NUL-padded",
        )
    })?;
    Ok(Instruction::PseudoDmaTrigger {
        queue,
        block_id: f.u32(48),
    })
}

fn load_stationary(f: &Fields<'_>) -> Result<(Instruction, Detail), NeuronError> {
    let b = f.b;
    let dtype = f.dtype(32, b[32], "dtype", FLOATS)?;
    let pass = match (dtype, b[33]) {
        (Dtype::F16, 0) => MatmulPass::Single,
        (Dtype::F32, 1) => MatmulPass::First,
        (Dtype::F32, 2) => MatmulPass::Second,
        (_, v) => {
            return Err(f.err(
                33,
                "pass number",
                u64::from(v),
                "fp16 uses pass 0, fp32 passes 1 and 2",
            ))
        }
    };
    let transpose = f.flag(34, "transpose mode")?;
    let k = f.partitions(38)?;
    let tail = PeTail::ALL
        .into_iter()
        .find(|t| t.bytes() == b[44..48])
        .ok_or_else(|| {
            f.err(
                44,
                "PE tail",
                u64::from(f.u32(44)),
                "only 0F 0F 00 00, 0F 0F 02 00, 0F 0F 0F 00 are known",
            )
        })?;
    let stationary = f.ap(16, 3, dtype, k, Some(MemSpace::Sbuf), "stationary address")?;
    Ok((
        Instruction::MatmulLoadStationary {
            stationary,
            reversed: true,
            pass,
        },
        Detail::LoadStationary { transpose, tail },
    ))
}

fn multiply_moving(f: &Fields<'_>) -> Result<(Instruction, Detail), NeuronError> {
    let b = f.b;
    let dtype = f.dtype(32, b[32], "dtype", FLOATS)?;
    let mode = b[33];
    let mode_ok = match dtype {
        Dtype::F16 => mode == 0,
        _ => mode == 2 || mode == 3,
    };
    if !mode_ok {
        return Err(f.err(
            33,
            "mode byte",
            u64::from(mode),
            "fp16 uses 0, fp32 uses 2 or 3",
        ));
    }
    let transpose = f.flag(34, "transpose mode")?;
    let k = f.partitions(38)?;
    let flags = b[43];
    if flags & !0b11 != 0 {
        return Err(f.err(
            43,
            "accumulate flags",
            u64::from(flags),
            "only bit 0 (start) and bit 1 (last) are known",
        ));
    }
    let start = flags & 1 != 0;
    if transpose && !start {
        return Err(f.err(
            43,
            "accumulate flags",
            u64::from(flags),
            "transpose mode always overwrites (start flag set)",
        ));
    }
    if b[46] != 0 && b[46] != 0x10 {
        return Err(f.err(
            46,
            "byte 46",
            u64::from(b[46]),
            "only 0x00 and 0x10 are known",
        ));
    }
    let moving = f.ap(16, 3, dtype, k, Some(MemSpace::Sbuf), "moving address")?;
    let out_dtype = if transpose { dtype } else { Dtype::F32 };
    let dst = f.ap(48, 3, out_dtype, PE_M, Some(MemSpace::Psum), "out address")?;
    f.counts_equal(&[("moving", &moving), ("out", &dst)])?;
    Ok((
        Instruction::MatmulMoving {
            dst,
            moving,
            accumulate: !start,
        },
        Detail::MultiplyMoving {
            mode,
            transpose,
            last: flags & 2 != 0,
            byte46: b[46],
        },
    ))
}

fn activate(f: &Fields<'_>) -> Result<(Instruction, Detail), NeuronError> {
    let b = f.b;
    let in_dtype = f.dtype(32, b[32] & 0xF, "in dtype (byte 32 low nibble)", FLOATS)?;
    let bias_dtype = f.dtype(32, b[32] >> 4, "bias dtype (byte 32 high nibble)", FLOATS)?;
    let out_dtype = f.dtype(33, b[33], "out dtype", FLOATS)?;
    let p = f.partitions(34)?;
    let form = match b[12] {
        0 => ActForm::Bias,
        1 => ActForm::NoBias { bias_dtype },
        v => {
            return Err(f.err(
                12,
                "function selector",
                u64::from(v),
                "only the identity forms 0 and 1 are known",
            ))
        }
    };
    let scale = f32::from_bits(f.u32(36));
    if scale != 1.0 {
        return Err(f.err(36, "scale", u64::from(f.u32(36)), "only scale 1.0 is known"));
    }
    let bias =
        match form {
            ActForm::Bias => {
                let (space, off) = f.address(40, "bias address")?;
                if space != MemSpace::Sbuf {
                    return Err(f.err(
                        40,
                        "bias address",
                        u64::from(f.u32(40)),
                        "the bias vector is in SBUF",
                    ));
                }
                Some(ShortOperand::sbuf(0, off, bias_dtype).map_err(|_| {
                    f.err(40, "bias address", u64::from(off), "offset out of range")
                })?)
            }
            ActForm::NoBias { .. } => None,
        };
    let input = f.ap(16, 3, in_dtype, p, None, "in address")?;
    let out = f.ap(48, 3, out_dtype, p, None, "out address")?;
    f.counts_equal(&[("in", &input), ("out", &out)])?;
    Ok((
        Instruction::Activation {
            func: ActivationFunc::Identity,
            out,
            input,
            scale: ScalarOperand::Imm(scale),
            bias,
            reduce: ReduceCmd::Idle,
        },
        Detail::Activate(form),
    ))
}

fn tensor_tensor(f: &Fields<'_>) -> Result<Instruction, NeuronError> {
    let b = f.b;
    let d0 = f.dtype(12, b[12] & 0xF, "in0 dtype (byte 12 low nibble)", FLOATS)?;
    let d1 = f.dtype(12, b[12] >> 4, "in1 dtype (byte 12 high nibble)", FLOATS)?;
    let dout = f.dtype(13, b[13], "out dtype", FLOATS)?;
    let op = f.alu(14)?;
    let p = f.partitions(15)?;
    let in0 = f.ap(16, 3, d0, p, None, "in0 address")?;
    let in1 = f.ap(32, 3, d1, p, None, "in1 address")?;
    let out = f.ap(48, 3, dout, p, None, "out address")?;
    f.counts_equal(&[("in0", &in0), ("in1", &in1), ("out", &out)])?;
    Ok(Instruction::TensorTensor {
        op,
        out,
        in0,
        in1: TensorOperand::Pattern(in1),
    })
}

fn tensor_reduce(f: &Fields<'_>) -> Result<Instruction, NeuronError> {
    let b = f.b;
    let din = f.dtype(32, b[32], "in dtype", FLOATS)?;
    if b[33] != b[32] {
        return Err(f.err(33, "out dtype", u64::from(b[33]), "equals the in dtype"));
    }
    let p = f.partitions(34)?;
    let op = f.alu(36)?;
    let axes = match b[37] {
        2 | 3 => b[37] - 1,
        v => {
            return Err(f.err(
                37,
                "reduced dims + 1",
                u64::from(v),
                "only 2 and 3 are known",
            ))
        }
    };
    let input = f.ap(12, 4, din, p, None, "in address")?;
    let out = f.ap(44, 4, din, p, None, "out address")?;
    let dims = input.dims();
    let group: u64 = dims[dims.len() - usize::from(axes)..]
        .iter()
        .map(|d| u64::from(d.count))
        .product();
    let (n_in, n_out) = (input.elements_per_partition(), out.elements_per_partition());
    if group < 2 || n_out.checked_mul(group) != Some(n_in) {
        return Err(NeuronError::Operands {
            opcode: f.op,
            what: format!(
                "reducing the {axes} innermost dims groups {group} elements, but in has {n_in} and out {n_out} per partition"
            ),
        });
    }
    Ok(Instruction::TensorReduce {
        op,
        out,
        input,
        axes,
        negate: false,
    })
}

fn copy(f: &Fields<'_>, opcode: NeuronOpcode) -> Result<Instruction, NeuronError> {
    let b = f.b;
    let (din, dout) = if opcode == NeuronOpcode::Copy {
        let d = f.dtype(32, b[32], "in dtype", COPY_TYPES)?;
        if b[33] != b[32] {
            return Err(f.err(
                33,
                "out dtype",
                u64::from(b[33]),
                "0x46 copies without conversion: equals the in dtype",
            ));
        }
        (d, d)
    } else {
        let din = f.dtype(32, b[32], "in dtype", FLOATS)?;
        let dout = f.dtype(33, b[33], "out dtype", FLOATS)?;
        if din == dout {
            return Err(f.err(
                33,
                "out dtype",
                u64::from(b[33]),
                "0x47 converts: differs from the in dtype",
            ));
        }
        (din, dout)
    };
    let p = f.partitions(34)?;
    let input = f.ap(12, 4, din, p, None, "in address")?;
    let out = f.ap(44, 4, dout, p, None, "out address")?;
    f.counts_equal(&[("in", &input), ("out", &out)])?;
    Ok(Instruction::TensorCopy { out, input })
}

fn memset(f: &Fields<'_>) -> Result<Instruction, NeuronError> {
    let b = f.b;
    let dtype = f.dtype(32, b[32], "dtype", FLOATS)?;
    let p = f.partitions(34)?;
    let out = f.ap(44, 4, dtype, p, None, "out address")?;
    let count = f.u32(28);
    if u64::from(count) != out.elements_per_partition() {
        return Err(f.err(
            28,
            "element count",
            u64::from(count),
            "equals the out pattern's elements per partition",
        ));
    }
    Ok(Instruction::Memset { out, value: 0.0 })
}

/// Checks that a `0x02` MultiplyMoving record follows a `0x01` LoadStationary with the same
/// dtype (byte 32), transpose mode (byte 34) and K (byte 38); other records pass. `prev` is the
/// record before `cur` in the same stream.
pub fn check_pe_pair(prev: Option<&Record>, cur: &Record) -> Result<(), NeuronError> {
    if cur.opcode() != NeuronOpcode::MultiplyMoving.byte() {
        return Ok(());
    }
    let op = cur.opcode();
    let Some(prev) = prev.filter(|p| p.opcode() == NeuronOpcode::LoadStationary.byte()) else {
        return Err(NeuronError::Operands {
            opcode: op,
            what: "not preceded by a 0x01 LoadStationary".into(),
        });
    };
    for (at, field) in [(32, "dtype"), (34, "transpose mode"), (38, "K")] {
        if prev.0[at] != cur.0[at] {
            return Err(NeuronError::Operands {
                opcode: op,
                what: format!(
                    "{field} (byte {at}) is {:#x} but the preceding LoadStationary has {:#x}",
                    cur.0[at], prev.0[at]
                ),
            });
        }
    }
    Ok(())
}
