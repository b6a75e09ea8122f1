//! The 64-byte record, the encoder, the decoder and the stream helpers.
//!
//! The decoder is total: any 64 bytes give an [`Instruction`] or a [`DecodeError`], never a
//! panic. It accepts exactly one encoding per instruction (except for `0xC1`, see the
//! [module docs](super)): after decoding the fields it re-encodes the instruction and reports
//! the first byte that differs as [`DecodeError::ReservedNonZero`], so a byte the layout does
//! not use must be zero.

use core::fmt;

use super::ap::ApError;
use super::instr::{is_real_neff_opcode, Instruction};
use super::ops::{AluOp, NameError};

/// Size of one instruction record in bytes.
pub const RECORD_SIZE: usize = 64;

/// Byte 1 of every record: the length in dwords (16 × 4 = 64), as in real NEFFs.
pub const LENGTH_BYTE: u8 = 0x10;

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
