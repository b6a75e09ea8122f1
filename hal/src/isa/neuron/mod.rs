//! The Neuron engine encoding: the 64-byte records real compiler NEFFs carry (compilers 2.18 to
//! 2.23), as one table of definitions (docs/neuron-isa.md).
//!
//! # Two encodings
//!
//! A record's encoding is told by its opcode byte: the Neuron opcodes ([`NeuronOpcode`]) and the
//! platform's own ([`Opcode`](crate::isa::Opcode)) are disjoint except `0xB1` (stream header /
//! DRAIN) and `0xC1` (DMA trigger), which mean the same in both — a test holds the two tables
//! to that. [`decode_any`] decodes a record of either encoding into a [`Decoded`]; a stream the
//! loader knows to be Neuron-encoded ([`is_neuron_stream`]) is decoded with
//! [`NeuronInstr::decode`] throughout, `0xB1` and `0xC1` included.
//!
//! # What a record decodes to
//!
//! [`NeuronInstr`] (generated from [`table`](self) rows by
//! [`instruction_set!`](crate::isa::layout)) holds each field as the record writes it: access
//! patterns keep their raw address word ([`NeuronAp`]), DMA addresses their kind and index
//! ([`DmaAddr`]), codes their enumeration ([`NeuronAlu`], [`ActFunc`]). Decoding accepts exactly
//! the values the encoding is known to use — any other value of any field is a [`NeuronError`]
//! naming the opcode, the byte offset, the field and the value, never a guess. What a record
//! *does* is the simulator's: its Neuron dispatcher has one semantic function per variant.
//!
//! Every record that can wait or signal has a `sync` field ([`Sync`], bytes 4–11: byte 4 wait
//! mode `0x05` = until semaphore ≥ value, byte 5 its semaphore, bytes 8–11 the value; byte 6
//! `0x13` = +1 to semaphore byte 7 on completion; `0xA0` adds a second wait at bytes 32, 33 and
//! 36–37); [`NeuronInstr::sync`] reads it for any record.
//!
//! # Text
//!
//! [`NeuronInstr::write_text`] renders a record as AWS's profiler renders its operands, given the
//! [`Names`] of the NEFF it comes from (docs/neuron-isa.md §14); [`NeuronInstr::render`] returns
//! it as a string.

mod operand;
mod samples;
mod slots;
mod table;
mod text;

use crate::addr::SemaphoreId;

use super::codec::{DecodeError, Record};
use super::instr::Instruction;
use super::layout::LayoutError;

pub use operand::{
    dtype_name, ActFunc, DmaAddr, DmaAddrKind, DmaPattern, NeuronAlu, NeuronAp, PARTITION_SHIFT,
    PARTITION_STRIDE, PSUM_BIT,
};
pub use samples::samples;
pub use table::{NeuronInstr, NeuronOpcode};
pub use text::Names;

/// Registers per engine (the numbers a register field may hold).
pub const REGISTERS: u32 = 256;

/// Wait mode byte: wait until the semaphore is ≥ the value.
pub const WAIT_GE: u8 = 0x05;
/// Update mode byte: add 1 to the semaphore when the instruction completes.
pub const UPDATE_INC: u8 = 0x13;

/// One wait: the instruction may start once `semaphore ≥ value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SyncWait {
    /// The semaphore (one byte in the record).
    pub sem: SemaphoreId,
    /// The value it must reach (u32 in the first slot, u16 in `0xA0`'s second slot).
    pub value: u32,
}

/// The synchronisation attached to one instruction: waits that must hold before it executes,
/// and a semaphore that gains 1 when it completes. Platform records carry none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Sync {
    /// Up to two waits (the second slot exists only in `0xA0`).
    pub waits: [Option<SyncWait>; 2],
    /// Semaphore incremented by 1 on completion.
    pub signal: Option<SemaphoreId>,
}

impl Sync {
    /// No waits, no signal.
    pub const NONE: Sync = Sync {
        waits: [None, None],
        signal: None,
    };

    /// Whether the block does nothing.
    pub fn is_none(&self) -> bool {
        *self == Sync::NONE
    }
}

/// LoadStationary bytes 44–47: one of the three values real NEFFs use (meaning unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PeTail {
    /// `0F 0F 00 00` (trn2).
    Trn2,
    /// `0F 0F 02 00` (trn1 fp32).
    Trn1F32,
    /// `0F 0F 0F 00` (trn1 fp16).
    Trn1F16,
}

impl PeTail {
    /// Every value.
    pub const ALL: [PeTail; 3] = [PeTail::Trn2, PeTail::Trn1F32, PeTail::Trn1F16];

    /// The four bytes.
    pub const fn bytes(self) -> [u8; 4] {
        match self {
            PeTail::Trn2 => [0x0F, 0x0F, 0x00, 0x00],
            PeTail::Trn1F32 => [0x0F, 0x0F, 0x02, 0x00],
            PeTail::Trn1F16 => [0x0F, 0x0F, 0x0F, 0x00],
        }
    }
}

/// Why a Neuron record is rejected (decoding), or cannot be written (encoding).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NeuronError {
    /// Byte 0 is not a Neuron opcode.
    #[error("unsupported opcode {0:#04x}")]
    UnsupportedOpcode(u8),
    /// A field holds a value the encoding is not known to use.
    #[error("opcode {opcode:#04x} ({name}): byte {offset} ({field}) = {value:#x}: {why}", name = opcode_name(*opcode))]
    Field {
        /// The opcode.
        opcode: u8,
        /// Byte offset of the field in the record.
        offset: usize,
        /// The field.
        field: &'static str,
        /// The value found.
        value: u64,
        /// What is known about the field.
        why: &'static str,
    },
    /// Operands disagree (element counts, partitions, pairing with the previous record).
    #[error("opcode {opcode:#04x} ({name}): {what}", name = opcode_name(*opcode))]
    Operands {
        /// The opcode.
        opcode: u8,
        /// The rule broken, with the values found.
        what: String,
    },
    /// A field value this encoding cannot hold.
    #[error("not expressible in the Neuron encoding: {0}")]
    NotEncodable(String),
}

fn opcode_name(b: u8) -> &'static str {
    NeuronOpcode::from_byte(b).map_or("?", NeuronOpcode::name)
}

impl LayoutError for NeuronError {
    fn unknown_opcode(byte: u8) -> Self {
        NeuronError::UnsupportedOpcode(byte)
    }
    fn bad_length_byte(opcode: u8, byte: u8) -> Self {
        let why = if NeuronOpcode::from_byte(opcode).is_some_and(|o| o.length_byte() == 0) {
            "always 0x00 for this opcode"
        } else {
            "always 0x10"
        };
        NeuronError::Field {
            opcode,
            offset: 1,
            field: "length byte",
            value: u64::from(byte),
            why,
        }
    }
    fn reserved_flag_bits(opcode: u8, offset: usize, bits: u8) -> Self {
        NeuronError::Field {
            opcode,
            offset,
            field: "flags",
            value: u64::from(bits),
            why: "undefined flag bits are set",
        }
    }
    fn reserved_byte(opcode: u8, offset: usize, value: u8, field: Option<&'static str>) -> Self {
        let (field, why) = match (field, offset) {
            (Some(f), _) => (f, "the field's unused bytes must be zero"),
            (None, 2..=3) => ("framing", "always zero"),
            (None, 4..=11) => ("sync block", "unused half of the sync block must be zero"),
            (None, _) => ("reserved", "documented as zero"),
        };
        NeuronError::Field {
            opcode,
            offset,
            field,
            value: u64::from(value),
            why,
        }
    }
}

impl NeuronInstr {
    /// The record's sync block ([`Sync::NONE`] for opcodes without one).
    pub fn sync(&self) -> Sync {
        self.field::<Sync>("sync").copied().unwrap_or(Sync::NONE)
    }

    /// Writes the record; fails only when a field does not fit its slot.
    pub fn encode(&self) -> Result<Record, NeuronError> {
        self.encode_fields()
    }

    /// The profiler's text of the record (its `operands` string), with `names` from the NEFF.
    pub fn render(&self, names: &Names) -> String {
        let mut s = String::new();
        // Writing into a String cannot fail.
        let _ = self.write_text(names, &mut s);
        s
    }
}

/// Which encoding a record belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// The platform's own encoding.
    Platform,
    /// The Neuron encoding of real compiler NEFFs.
    Neuron,
}

/// A record decoded from either encoding.
#[derive(Debug, Clone, PartialEq)]
pub enum Decoded {
    /// A record of the platform's encoding.
    Platform(Instruction),
    /// A record of the Neuron encoding.
    Neuron(NeuronInstr),
}

impl Decoded {
    /// Its encoding.
    pub fn encoding(&self) -> Encoding {
        match self {
            Decoded::Platform(_) => Encoding::Platform,
            Decoded::Neuron(_) => Encoding::Neuron,
        }
    }

    /// Its sync block ([`Sync::NONE`] for platform records).
    pub fn sync(&self) -> Sync {
        match self {
            Decoded::Platform(_) => Sync::NONE,
            Decoded::Neuron(n) => n.sync(),
        }
    }
}

/// A record failed to decode in its encoding.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnyDecodeError {
    /// A platform record (or an opcode neither encoding knows).
    #[error(transparent)]
    Platform(#[from] DecodeError),
    /// A Neuron record.
    #[error(transparent)]
    Neuron(#[from] NeuronError),
}

impl AnyDecodeError {
    /// Whether the opcode itself is unknown (rather than a field).
    pub fn is_unknown_opcode(&self) -> bool {
        matches!(
            self,
            AnyDecodeError::Platform(DecodeError::UnknownOpcode(_))
                | AnyDecodeError::Neuron(NeuronError::UnsupportedOpcode(_))
        )
    }
}

/// The encoding that owns opcode byte `b`: the Neuron encoding for its own opcodes, the
/// platform's for everything else (including the shared `0xB1` and `0xC1`).
pub fn encoding_of(b: u8) -> Encoding {
    if NeuronOpcode::from_byte(b).is_some() && crate::isa::Opcode::from_byte(b).is_none() {
        Encoding::Neuron
    } else {
        Encoding::Platform
    }
}

/// Decodes a record of either encoding, choosing by its opcode byte ([`encoding_of`]).
pub fn decode_any(record: &Record) -> Result<Decoded, AnyDecodeError> {
    Ok(match encoding_of(record.opcode()) {
        Encoding::Neuron => Decoded::Neuron(NeuronInstr::decode(record)?),
        Encoding::Platform => Decoded::Platform(Instruction::decode(record)?),
    })
}

/// Whether every record of a stream belongs to the Neuron encoding's opcode set (`0xB1` and
/// `0xC1` included): the rule by which a NEFF's streams are treated as Neuron-encoded.
pub fn is_neuron_stream(records: &[Record]) -> bool {
    records
        .iter()
        .all(|r| NeuronOpcode::from_byte(r.opcode()).is_some())
}

/// Checks that a `0x02` MATMUL record follows a `0x01` LDWEIGHTS — or, from compiler 2.23 on,
/// another MATMUL that keeps the same stationary operand — with the same dtype (byte 32),
/// transpose mode (byte 34) and K (byte 38); other records pass. `prev` is the record before
/// `cur` in the same stream.
pub fn check_pe_pair(prev: Option<&Record>, cur: &Record) -> Result<(), NeuronError> {
    if cur.opcode() != NeuronOpcode::Matmul.byte() {
        return Ok(());
    }
    let op = cur.opcode();
    let pe = [
        NeuronOpcode::LoadWeights.byte(),
        NeuronOpcode::Matmul.byte(),
    ];
    let Some(prev) = prev.filter(|p| pe.contains(&p.opcode())) else {
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
