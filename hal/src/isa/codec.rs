//! The 64-byte record, the encoder, the decoder and the stream helpers.
//!
//! The decoder is total: any 64 bytes give an [`Instruction`] or a [`DecodeError`], never a
//! panic. It accepts exactly one encoding per instruction (except for `0xC1`, see the
//! [module docs](super)): after decoding the fields it re-encodes the instruction and reports
//! the first byte that differs as [`DecodeError::ReservedNonZero`], so a byte the layout does
//! not use must be zero.

use core::fmt;

use crate::addr::{DeviceAddr, EventId, SemaphoreId};

use super::ap::{AccessPattern, ApError, IotaDim, IotaPattern, ShortOperand};
use super::instr::{is_real_neff_opcode, Instruction, Opcode, TensorOperand};
use super::ops::{
    ActivationFunc, AluOp, MarkerLabel, MatmulPass, NameError, QueueSetName, ReduceCmd,
    ScalarOperand, SemCmp, SemOp,
};

/// Size of one instruction record in bytes.
pub const RECORD_SIZE: usize = 64;

/// Byte 1 of every record: the length in dwords (16 × 4 = 64), as in real NEFFs.
pub const LENGTH_BYTE: u8 = 0x10;

// Byte offsets of the compute layout (module docs, "Compute records").
const AP0: usize = 8;
const AP1: usize = 30;
const SHORT: usize = 52;
const IMM0: usize = 56;
const IMM1: usize = 60;
// 0xC1 fields.
const QUEUE_NAME: usize = 12;
const BLOCK_ID: usize = 48;
// 0xF2 label field.
const LABEL: usize = 8;
// Iota pattern fields.
const IOTA_STEPS: usize = 30;
const IOTA_COUNTS: usize = 46;

/// One raw 64-byte instruction record.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Record(pub [u8; RECORD_SIZE]);

impl Record {
    /// A record with `opcode` in byte 0, [`LENGTH_BYTE`] in byte 1 and zeros elsewhere.
    pub const fn new(opcode: u8) -> Record {
        let mut b = [0u8; RECORD_SIZE];
        b[0] = opcode;
        b[1] = LENGTH_BYTE;
        Record(b)
    }

    /// The record at the start of `bytes`, if there are at least 64 bytes.
    pub fn from_slice(bytes: &[u8]) -> Option<Record> {
        bytes
            .get(..RECORD_SIZE)
            .and_then(|b| b.try_into().ok())
            .map(Record)
    }

    /// Byte 0.
    pub const fn opcode(&self) -> u8 {
        self.0[0]
    }

    /// Byte 1 (always `0x10` in a valid record).
    pub const fn length_byte(&self) -> u8 {
        self.0[1]
    }

    /// The raw bytes.
    pub const fn as_bytes(&self) -> &[u8; RECORD_SIZE] {
        &self.0
    }

    /// Decodes the record; same as [`Instruction::decode`].
    pub fn decode(&self) -> Result<Instruction, DecodeError> {
        Instruction::decode(self)
    }

    /// The 64 bytes as 128 lower-case hex digits.
    pub fn to_hex(&self) -> String {
        hex(&self.0)
    }
}

impl fmt::Debug for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Record({})", self.to_hex())
    }
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unknown_opcode_message(op: u8) -> String {
    if is_real_neff_opcode(op) {
        format!("unsupported opcode {op:#04x}: a real Neuron instruction this platform does not implement")
    } else {
        format!("unknown opcode {op:#04x}: neither a platform opcode nor one seen in real NEFFs")
    }
}

/// Why 64 bytes are not a valid instruction record.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// Byte 0 is not an implemented opcode (real NEFF opcodes other than `0xB1`/`0xC1` land
    /// here, reported as unsupported).
    #[error("{}", unknown_opcode_message(*.0))]
    UnknownOpcode(u8),
    /// Byte 1 is not `0x10`.
    #[error("length byte (byte 1) is {0:#04x}, expected 0x10 (16 dwords)")]
    BadLengthByte(u8),
    /// A byte the layout does not use is not zero.
    #[error("reserved byte {offset} is {value:#04x}, must be zero")]
    ReservedNonZero {
        /// Byte offset in the record.
        offset: usize,
        /// The byte found.
        value: u8,
    },
    /// Undefined bits are set in a flags byte.
    #[error("undefined flag bits {bits:#04x} set in byte {offset}")]
    ReservedFlagBits {
        /// Byte offset in the record.
        offset: usize,
        /// The undefined bits that are set.
        bits: u8,
    },
    /// An enumeration byte holds no known code.
    #[error("{field} code {value} at byte {offset} is not defined")]
    BadEnum {
        /// Which field.
        field: &'static str,
        /// Byte offset in the record.
        offset: usize,
        /// The code found.
        value: u8,
    },
    /// A numeric field is outside its allowed range.
    #[error("{field} = {value} at byte {offset} is out of range ({range})")]
    FieldOutOfRange {
        /// Which field.
        field: &'static str,
        /// Byte offset in the record.
        offset: usize,
        /// The value found.
        value: u64,
        /// The allowed range.
        range: &'static str,
    },
    /// `tensor_reduce` with an op that is not a legal reduction.
    #[error("{0} is not a legal tensor_reduce op")]
    IllegalReduction(AluOp),
    /// An access pattern or short operand is malformed.
    #[error("access pattern at byte {offset}: {reason}")]
    BadAccessPattern {
        /// Byte offset of the pattern in the record.
        offset: usize,
        /// What is wrong.
        reason: ApError,
    },
    /// The iota value pattern is malformed.
    #[error("iota value pattern: {0}")]
    BadIotaPattern(ApError),
    /// The `0xC1` queue-set name is malformed.
    #[error("DMA trigger queue-set name (bytes 12..48): {0}")]
    BadQueueName(NameError),
    /// The `0xF2` label is malformed.
    #[error("marker label (bytes 8..48): {0}")]
    BadLabel(NameError),
}

/// Why an [`Instruction`] cannot be encoded (a field does not fit its encoding).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// A field is outside its encodable range.
    #[error("{field} = {value} does not fit the encoding ({range})")]
    FieldOutOfRange {
        /// Which field.
        field: &'static str,
        /// The value.
        value: u64,
        /// The encodable range.
        range: &'static str,
    },
    /// `tensor_reduce` with an op that is not a legal reduction.
    #[error("{0} is not a legal tensor_reduce op")]
    IllegalReduction(AluOp),
    /// The instruction uses a form this encoding has no slot for.
    #[error("not encodable in the platform's encoding: {what}")]
    NotEncodable {
        /// The form.
        what: &'static str,
    },
}

/// An instruction stream could not be split or decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// The stream is not a whole number of records.
    #[error("instruction stream is {len} bytes, not a multiple of the {RECORD_SIZE}-byte record")]
    Length {
        /// Stream length in bytes.
        len: usize,
    },
    /// A record failed to decode.
    #[error("record {index} (byte {offset:#x}): {source}", offset = *index * RECORD_SIZE)]
    Record {
        /// Index of the record in the stream.
        index: usize,
        /// What is wrong with it.
        source: DecodeError,
    },
}

/// An instruction of a stream could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("instruction {index}: {source}")]
pub struct EncodeStreamError {
    /// Index of the instruction.
    pub index: usize,
    /// What is wrong with it.
    pub source: EncodeError,
}

/// The records of a stream; see [`records`].
#[derive(Debug, Clone)]
pub struct Records<'a>(core::slice::ChunksExact<'a, u8>);

impl Iterator for Records<'_> {
    type Item = Record;

    fn next(&mut self) -> Option<Record> {
        self.0.next().and_then(Record::from_slice)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl ExactSizeIterator for Records<'_> {}

/// Splits a stream into records without decoding them (a loader keeps undecodable records,
/// such as a real NEFF's compute instructions, to fail only when they are executed).
pub fn records(bytes: &[u8]) -> Result<Records<'_>, StreamError> {
    if !bytes.len().is_multiple_of(RECORD_SIZE) {
        return Err(StreamError::Length { len: bytes.len() });
    }
    Ok(Records(bytes.chunks_exact(RECORD_SIZE)))
}

/// Decodes a whole stream, failing on the first bad record.
pub fn decode_stream(bytes: &[u8]) -> Result<Vec<Instruction>, StreamError> {
    records(bytes)?
        .enumerate()
        .map(|(index, r)| {
            Instruction::decode(&r).map_err(|source| StreamError::Record { index, source })
        })
        .collect()
}

/// Encodes instructions back to back (the caller puts the [`Instruction::StreamHeader`]
/// first).
pub fn encode_stream(instructions: &[Instruction]) -> Result<Vec<u8>, EncodeStreamError> {
    let mut out = Vec::with_capacity(instructions.len() * RECORD_SIZE);
    for (index, i) in instructions.iter().enumerate() {
        let r = i
            .encode()
            .map_err(|source| EncodeStreamError { index, source })?;
        out.extend_from_slice(&r.0);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Encoding.

fn put(b: &mut [u8; RECORD_SIZE], at: usize, bytes: &[u8]) {
    b[at..at + bytes.len()].copy_from_slice(bytes);
}

fn put_scalar(b: &mut [u8; RECORD_SIZE], at: usize, s: &ScalarOperand) {
    match s {
        ScalarOperand::Imm(v) => put(b, at, &v.to_bits().to_le_bytes()),
        ScalarOperand::Vector(v) => put(b, at, &v.to_word().to_le_bytes()),
    }
}

fn fits_u16(field: &'static str, value: u32) -> Result<(), EncodeError> {
    if value > u32::from(u16::MAX) {
        return Err(EncodeError::FieldOutOfRange {
            field,
            value: u64::from(value),
            range: "0..=65535",
        });
    }
    Ok(())
}

impl Instruction {
    /// Encodes the instruction into its record.
    pub fn encode(&self) -> Result<Record, EncodeError> {
        match self {
            Instruction::SemWait { sem, .. }
            | Instruction::SemSignal { sem, .. }
            | Instruction::PseudoBarrier { sem, .. } => fits_u16("semaphore", sem.0)?,
            Instruction::EventSet { event, .. } | Instruction::EventWait { event, .. } => {
                fits_u16("event", event.0)?
            }
            Instruction::TensorReduce { op, axes, .. } => {
                if !(1..=4).contains(axes) {
                    return Err(EncodeError::FieldOutOfRange {
                        field: "tensor_reduce axes",
                        value: u64::from(*axes),
                        range: "1..=4",
                    });
                }
                if !op.is_legal_reduction() {
                    return Err(EncodeError::IllegalReduction(*op));
                }
            }
            Instruction::TensorTensor {
                in1: TensorOperand::Pattern(_),
                ..
            } => {
                return Err(EncodeError::NotEncodable {
                    what: "tensor_tensor with a full in1 pattern (the platform's in1 is a short operand borrowing in0's shape)",
                })
            }
            _ => {}
        }
        Ok(self.encode_unchecked())
    }

    /// Encodes without range checks; callers guarantee every field fits (the encoder after
    /// its checks, the decoder for values it just read).
    ///
    /// Longer than the ~120-line guideline on purpose: it is the encoding's table, one arm per
    /// opcode writing that opcode's fields, the mirror of [`Instruction::decode`].
    fn encode_unchecked(&self) -> Record {
        let mut r = Record::new(self.opcode().byte());
        let b = &mut r.0;
        match self {
            Instruction::StreamHeader | Instruction::End | Instruction::Nop => {}
            Instruction::PseudoDmaTrigger { queue, block_id } => {
                put(b, QUEUE_NAME, queue.as_str().as_bytes());
                put(b, BLOCK_ID, &block_id.to_le_bytes());
            }
            Instruction::Write { addr, value } => {
                put(b, 8, &addr.raw().to_le_bytes());
                put(b, 16, &value.to_le_bytes());
            }
            Instruction::SemWait { sem, cmp, value } => {
                put(b, 2, &(sem.0 as u16).to_le_bytes());
                b[4] = cmp.code();
                put(b, 8, &value.to_le_bytes());
            }
            Instruction::SemSignal { sem, op, value } => {
                put(b, 2, &(sem.0 as u16).to_le_bytes());
                b[4] = op.code();
                put(b, 8, &value.to_le_bytes());
            }
            Instruction::EventSet { event, value } | Instruction::EventWait { event, value } => {
                put(b, 2, &(event.0 as u16).to_le_bytes());
                put(b, 8, &u32::from(*value).to_le_bytes());
            }
            Instruction::MatmulLoadStationary {
                stationary,
                reversed,
                pass,
            } => {
                b[3] = u8::from(*reversed);
                b[4] = pass.code();
                put(b, AP1, &stationary.encode());
            }
            Instruction::MatmulMoving {
                dst,
                moving,
                accumulate,
            } => {
                b[3] = u8::from(*accumulate);
                put(b, AP0, &dst.encode());
                put(b, AP1, &moving.encode());
            }
            Instruction::Activation {
                func,
                out,
                input,
                scale,
                bias,
                reduce,
            } => {
                b[2] = func.code();
                b[3] = u8::from(scale.is_vector()) | u8::from(bias.is_some()) << 1;
                b[4] = reduce.code();
                put(b, AP0, &out.encode());
                put(b, AP1, &input.encode());
                if let Some(bias) = bias {
                    put(b, SHORT, &bias.to_word().to_le_bytes());
                }
                put_scalar(b, IMM0, scale);
            }
            Instruction::TensorTensor { op, out, in0, in1 } => {
                b[2] = op.code();
                put(b, AP0, &out.encode());
                put(b, AP1, &in0.encode());
                // `encode` rejects a full in1 pattern; its word is the closest the slot holds.
                let word = match in1 {
                    TensorOperand::Borrowed(s) => s.to_word(),
                    TensorOperand::Pattern(p) => p.base().to_word(),
                };
                put(b, SHORT, &word.to_le_bytes());
            }
            Instruction::TensorScalar {
                out,
                input,
                op0,
                operand0,
                reverse0,
                op1,
                operand1,
                reverse1,
            } => {
                b[2] = op0.code();
                b[3] = u8::from(*reverse0)
                    | u8::from(*reverse1) << 1
                    | u8::from(operand0.is_vector()) << 2
                    | u8::from(operand1.is_vector()) << 3;
                b[4] = op1.code();
                put(b, AP0, &out.encode());
                put(b, AP1, &input.encode());
                put_scalar(b, IMM0, operand0);
                put_scalar(b, IMM1, operand1);
            }
            Instruction::TensorCopy { out, input } | Instruction::Transpose { out, input } => {
                put(b, AP0, &out.encode());
                put(b, AP1, &input.encode());
            }
            Instruction::TensorReduce {
                op,
                out,
                input,
                axes,
                negate,
            } => {
                b[2] = op.code();
                b[3] = u8::from(*negate);
                b[4] = *axes;
                put(b, AP0, &out.encode());
                put(b, AP1, &input.encode());
            }
            Instruction::Memset { out, value } => {
                put(b, AP0, &out.encode());
                put(b, IMM0, &value.to_bits().to_le_bytes());
            }
            Instruction::Iota {
                out,
                offset,
                channel_multiplier,
                pattern,
            } => {
                b[2] = pattern.dims().len() as u8;
                put(b, 4, &offset.to_le_bytes());
                put(b, AP0, &out.encode());
                let mut dims = [IotaDim::UNUSED; 4];
                dims[..pattern.dims().len()].copy_from_slice(pattern.dims());
                for (i, d) in dims.iter().enumerate() {
                    put(b, IOTA_STEPS + 4 * i, &d.step.to_le_bytes());
                    put(b, IOTA_COUNTS + 2 * i, &d.count.to_le_bytes());
                }
                put(b, IMM0, &channel_multiplier.to_le_bytes());
            }
            Instruction::PseudoWriteVar {
                var_id,
                offset,
                value,
            } => {
                put(b, 4, &var_id.to_le_bytes());
                put(b, 8, &offset.to_le_bytes());
                put(b, 16, &value.to_le_bytes());
            }
            Instruction::PseudoBarrier { sem, count } => {
                put(b, 2, &(sem.0 as u16).to_le_bytes());
                put(b, 8, &count.to_le_bytes());
            }
            Instruction::PseudoMarker { id, label } => {
                put(b, 4, &id.to_le_bytes());
                put(b, LABEL, label.as_str().as_bytes());
            }
        }
        r
    }
}

// ---------------------------------------------------------------------------------------------
// Decoding.

struct Reader<'a>(&'a [u8; RECORD_SIZE]);

impl Reader<'_> {
    fn u16(&self, at: usize) -> u16 {
        u16::from_le_bytes([self.0[at], self.0[at + 1]])
    }
    fn u32(&self, at: usize) -> u32 {
        u32::from_le_bytes([self.0[at], self.0[at + 1], self.0[at + 2], self.0[at + 3]])
    }
    fn i32(&self, at: usize) -> i32 {
        self.u32(at) as i32
    }
    fn f32(&self, at: usize) -> f32 {
        f32::from_bits(self.u32(at))
    }
    fn u64(&self, at: usize) -> u64 {
        u64::from(self.u32(at)) | u64::from(self.u32(at + 4)) << 32
    }
    fn flags(&self, defined: u8) -> Result<u8, DecodeError> {
        let f = self.0[3];
        if f & !defined != 0 {
            return Err(DecodeError::ReservedFlagBits {
                offset: 3,
                bits: f & !defined,
            });
        }
        Ok(f)
    }
    fn code<T>(
        &self,
        at: usize,
        field: &'static str,
        from: fn(u8) -> Option<T>,
    ) -> Result<T, DecodeError> {
        from(self.0[at]).ok_or(DecodeError::BadEnum {
            field,
            offset: at,
            value: self.0[at],
        })
    }
    fn ap(&self, at: usize) -> Result<AccessPattern, DecodeError> {
        let mut b = [0u8; AccessPattern::ENCODED_LEN];
        b.copy_from_slice(&self.0[at..at + AccessPattern::ENCODED_LEN]);
        AccessPattern::decode(&b)
            .map_err(|reason| DecodeError::BadAccessPattern { offset: at, reason })
    }
    fn short(&self, at: usize) -> Result<ShortOperand, DecodeError> {
        ShortOperand::from_word(self.u32(at))
            .map_err(|reason| DecodeError::BadAccessPattern { offset: at, reason })
    }
    fn scalar(&self, at: usize, vector: bool) -> Result<ScalarOperand, DecodeError> {
        Ok(if vector {
            ScalarOperand::Vector(self.short(at)?)
        } else {
            ScalarOperand::Imm(self.f32(at))
        })
    }
    fn bool32(&self, at: usize, field: &'static str) -> Result<bool, DecodeError> {
        match self.u32(at) {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(DecodeError::FieldOutOfRange {
                field,
                offset: at,
                value: u64::from(v),
                range: "0 or 1",
            }),
        }
    }
    /// The bytes from `at` up to the first NUL or `at + max`.
    fn text(&self, at: usize, max: usize) -> &[u8] {
        let field = &self.0[at..at + max];
        let len = field.iter().position(|&c| c == 0).unwrap_or(max);
        &field[..len]
    }
}

impl Instruction {
    /// Decodes one record. Never panics; every malformed input is a [`DecodeError`].
    ///
    /// Longer than the ~120-line guideline on purpose: it is the encoding's table, one arm per
    /// opcode reading that opcode's fields, the mirror of [`Instruction::encode`].
    pub fn decode(record: &Record) -> Result<Instruction, DecodeError> {
        let b = &record.0;
        let op = Opcode::from_byte(b[0]).ok_or(DecodeError::UnknownOpcode(b[0]))?;
        if b[1] != LENGTH_BYTE {
            return Err(DecodeError::BadLengthByte(b[1]));
        }
        let r = Reader(b);
        let sem = || SemaphoreId(u32::from(r.u16(2)));
        let event = || EventId(u32::from(r.u16(2)));
        let flags_none = || r.flags(0);
        let instr = match op {
            Opcode::StreamHeader => Instruction::StreamHeader,
            Opcode::End => Instruction::End,
            Opcode::Nop => Instruction::Nop,
            Opcode::PseudoDmaTrigger => {
                let queue = QueueSetName::from_ascii(r.text(QUEUE_NAME, QueueSetName::MAX_LEN))
                    .map_err(DecodeError::BadQueueName)?;
                // 0xC1 is a real opcode whose other bytes are not publicly known: they are
                // ignored (not checked), so real compiler output decodes.
                return Ok(Instruction::PseudoDmaTrigger {
                    queue,
                    block_id: r.u32(BLOCK_ID),
                });
            }
            Opcode::Write => Instruction::Write {
                addr: DeviceAddr::new(r.u64(8)),
                value: r.u32(16),
            },
            Opcode::SemWait => Instruction::SemWait {
                sem: sem(),
                cmp: r.code(4, "semaphore compare", SemCmp::from_code)?,
                value: r.i32(8),
            },
            Opcode::SemSignal => Instruction::SemSignal {
                sem: sem(),
                op: r.code(4, "semaphore op", SemOp::from_code)?,
                value: r.i32(8),
            },
            Opcode::EventSet => Instruction::EventSet {
                event: event(),
                value: r.bool32(8, "event value")?,
            },
            Opcode::EventWait => Instruction::EventWait {
                event: event(),
                value: r.bool32(8, "event value")?,
            },
            Opcode::MatmulLoadStationary => {
                let f = r.flags(0b1)?;
                Instruction::MatmulLoadStationary {
                    stationary: r.ap(AP1)?,
                    reversed: f & 1 != 0,
                    pass: r.code(4, "matmul pass", MatmulPass::from_code)?,
                }
            }
            Opcode::MatmulMoving => {
                let f = r.flags(0b1)?;
                Instruction::MatmulMoving {
                    dst: r.ap(AP0)?,
                    moving: r.ap(AP1)?,
                    accumulate: f & 1 != 0,
                }
            }
            Opcode::Activation => {
                let f = r.flags(0b11)?;
                Instruction::Activation {
                    func: r.code(2, "activation function", ActivationFunc::from_code)?,
                    out: r.ap(AP0)?,
                    input: r.ap(AP1)?,
                    scale: r.scalar(IMM0, f & 1 != 0)?,
                    bias: if f & 2 != 0 {
                        Some(r.short(SHORT)?)
                    } else {
                        None
                    },
                    reduce: r.code(4, "reduce command", ReduceCmd::from_code)?,
                }
            }
            Opcode::TensorTensor => {
                flags_none()?;
                Instruction::TensorTensor {
                    op: r.code(2, "ALU op", AluOp::from_code)?,
                    out: r.ap(AP0)?,
                    in0: r.ap(AP1)?,
                    in1: TensorOperand::Borrowed(r.short(SHORT)?),
                }
            }
            Opcode::TensorScalar => {
                let f = r.flags(0b1111)?;
                Instruction::TensorScalar {
                    out: r.ap(AP0)?,
                    input: r.ap(AP1)?,
                    op0: r.code(2, "ALU op0", AluOp::from_code)?,
                    operand0: r.scalar(IMM0, f & 4 != 0)?,
                    reverse0: f & 1 != 0,
                    op1: r.code(4, "ALU op1", AluOp::from_code)?,
                    operand1: r.scalar(IMM1, f & 8 != 0)?,
                    reverse1: f & 2 != 0,
                }
            }
            Opcode::TensorCopy => {
                flags_none()?;
                Instruction::TensorCopy {
                    out: r.ap(AP0)?,
                    input: r.ap(AP1)?,
                }
            }
            Opcode::TensorReduce => {
                let f = r.flags(0b1)?;
                let op = r.code(2, "ALU op", AluOp::from_code)?;
                if !op.is_legal_reduction() {
                    return Err(DecodeError::IllegalReduction(op));
                }
                let axes = b[4];
                if !(1..=4).contains(&axes) {
                    return Err(DecodeError::FieldOutOfRange {
                        field: "tensor_reduce axes",
                        offset: 4,
                        value: u64::from(axes),
                        range: "1..=4",
                    });
                }
                Instruction::TensorReduce {
                    op,
                    out: r.ap(AP0)?,
                    input: r.ap(AP1)?,
                    axes,
                    negate: f & 1 != 0,
                }
            }
            Opcode::Memset => {
                flags_none()?;
                Instruction::Memset {
                    out: r.ap(AP0)?,
                    value: r.f32(IMM0),
                }
            }
            Opcode::Iota => {
                flags_none()?;
                let ndims = usize::from(b[2]);
                if !(1..=4).contains(&ndims) {
                    return Err(DecodeError::FieldOutOfRange {
                        field: "iota ndims",
                        offset: 2,
                        value: ndims as u64,
                        range: "1..=4",
                    });
                }
                let mut dims = [IotaDim::UNUSED; 4];
                for (i, d) in dims.iter_mut().enumerate() {
                    *d = IotaDim::new(r.i32(IOTA_STEPS + 4 * i), r.u16(IOTA_COUNTS + 2 * i));
                    if i >= ndims && *d != IotaDim::UNUSED {
                        return Err(DecodeError::BadIotaPattern(
                            ApError::NonCanonicalUnusedDim {
                                dim: i,
                                step: d.step,
                                count: d.count,
                            },
                        ));
                    }
                }
                Instruction::Iota {
                    out: r.ap(AP0)?,
                    offset: r.i32(4),
                    channel_multiplier: r.i32(IMM0),
                    pattern: IotaPattern::new(&dims[..ndims])
                        .map_err(DecodeError::BadIotaPattern)?,
                }
            }
            Opcode::Transpose => {
                flags_none()?;
                Instruction::Transpose {
                    out: r.ap(AP0)?,
                    input: r.ap(AP1)?,
                }
            }
            Opcode::PseudoWriteVar => Instruction::PseudoWriteVar {
                var_id: r.u32(4),
                offset: r.u64(8),
                value: r.u32(16),
            },
            Opcode::PseudoBarrier => Instruction::PseudoBarrier {
                sem: sem(),
                count: r.i32(8),
            },
            Opcode::PseudoMarker => Instruction::PseudoMarker {
                id: r.u32(4),
                label: MarkerLabel::from_ascii(r.text(LABEL, MarkerLabel::MAX_LEN))
                    .map_err(DecodeError::BadLabel)?,
            },
        };
        // Exactly one encoding per instruction: every byte the fields above did not account
        // for must be zero, which is what re-encoding produces.
        let canonical = instr.encode_unchecked();
        if let Some(offset) = (0..RECORD_SIZE).find(|&i| canonical.0[i] != b[i]) {
            return Err(DecodeError::ReservedNonZero {
                offset,
                value: b[offset],
            });
        }
        Ok(instr)
    }
}
