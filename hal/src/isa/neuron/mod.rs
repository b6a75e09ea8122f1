//! The Neuron engine encoding: the 64-byte records real compiler NEFFs carry, decoded into the
//! same [`Instruction`] model as the platform's own encoding (docs/neuron-isa.md).
//!
//! # Two encodings, one model
//!
//! A record's encoding is told by its opcode byte. The Neuron opcodes ([`NeuronOpcode`]:
//! `0x01 0x02 0x21 0x23 0x41 0x42 0x46 0x47 0x49 0xA0 0xA4 0xCC`) and the platform's own
//! (`0xD0..=0xFF`) are disjoint; `0xB1` (stream header) and `0xC1` (pseudo DMA trigger) mean
//! the same in both. [`decode_any`] therefore decodes any record of either encoding into a
//! [`Decoded`]: the shared [`Instruction`] plus the [`Sync`] block the Neuron encoding attaches
//! to an instruction. The engine executor, cost model and disassembler see only that.
//!
//! A Neuron record decodes into a [`NeuronInstr`]:
//!
//! - `sync`: the sync block (bytes 4–11, plus the second wait slot of `0xA0`): up to two waits
//!   "until semaphore ≥ value" that must hold before the instruction executes, and an
//!   optional "+1 to a semaphore" applied when it completes;
//! - `instr`: the semantics, in the shared model (`0xA0`/`0xA4`/`0xCC`/`0x23` are
//!   [`Instruction::Nop`] with their waits in `sync`);
//! - `detail`: the record's fields whose meaning is not established ([`Detail`]): constant or
//!   few-valued bytes that must be re-encoded as they were. The executor never reads them.
//!
//! [`NeuronInstr::encode`] writes the record back; decode ∘ encode is the identity on every
//! record the decoder accepts.
//!
//! # Record layouts (byte offsets, little-endian)
//!
//! Framing: byte 0 opcode, byte 1 `0x10`, bytes 2–3 zero. Sync block: byte 4 wait mode
//! (`0x00` none, `0x05` wait until semaphore ≥ value), byte 5 wait semaphore, byte 6 update
//! mode (`0x00` none, `0x13` +1 on completion), byte 7 update semaphore, bytes 8–11 u32 wait
//! value. Unused halves are zero.
//!
//! Access patterns (APs): a 3-D AP is 16 bytes (u32 address word; i16 step[0..3]; u16
//! num[0..3]), a 4-D AP 20 bytes (u32; i16 step[0..4]; u16 num[0..4]); index 0 is innermost and
//! steps count elements. Address word: bit 25 set = PSUM (offset in bits 0–13), clear = SBUF
//! (offset in bits 0–17); every other bit must be zero (a start partition other than 0 has no
//! known encoding). In the model an AP is an [`AccessPattern`] from partition 0 with the
//! opcode's partition count and dtype, and its dims listed outermost first (reversed).
//!
//! | opcode | model | operand bytes |
//! |---|---|---|
//! | `0x01` LoadStationary (PE) | `MatmulLoadStationary`, `reversed` | 16–31 stationary 3-D (SBUF); 32 dtype; 33 pass (fp16 0, fp32 1 or 2); 34 transpose mode; 38 K; 39 `0x80`; 44–47 [`PeTail`] |
//! | `0x02` MultiplyMoving (PE) | `MatmulMoving` | 16–31 moving 3-D (SBUF); 32 dtype; 33 mode byte; 34 transpose mode; 38 K; 39 `0x80`; 43 flags (bit 0 start = overwrite, bit 1 last); 44–45 `0F 0F`; 46 `0x10`/`0x00`; 48–63 out 3-D (PSUM) |
//! | `0x21` ACTIVATE (ACT) | `Activation` identity | 12 function selector, 15 flag (form A 0/0, form B 1/1); 16–31 in 3-D; 32 in dtype (low nibble) and bias dtype (high); 33 out dtype; 34 P; 35 bias flag (`0x01` bias vector, `0x80` none); 36–39 f32 scale (1.0); 40–43 bias address word; 48–63 out 3-D |
//! | `0x41` TensorTensor (DVE) | `TensorTensor` with a full `in1` | 12 in0 dtype (low nibble), in1 dtype (high); 13 out dtype; 14 ALU op; 15 P; 16–31 in0; 32–47 in1; 48–63 out (3-D) |
//! | `0x42` TensorReduce (DVE) | `TensorReduce` | 12–31 in 4-D; 32 in dtype; 33 out dtype (= in); 34 P; 36 ALU op; 37 reduced innermost dims + 1 (2 or 3); 44–63 out 4-D |
//! | `0x46` copy / `0x47` converting copy (ACT, DVE) | `TensorCopy` | 12–31 in 4-D; 32 in dtype; 33 out dtype (equal for `0x46`, different floats for `0x47`); 34 P; 44–63 out 4-D |
//! | `0x49` memset (DVE) | `Memset` 0.0 | 28–31 u32 element count (= out's per partition); 32 dtype; 34 P; 44–63 out 4-D |
//! | `0xA0` wait | `Nop` | sync wait 1; 32 second wait mode, 33 semaphore, 36–37 u16 value |
//! | `0xA4` final wait | `Nop` | sync wait only |
//! | `0xC1` DMA trigger | `PseudoDmaTrigger` | optional sync wait; 12–43 queue-set name, NUL-padded; 48–51 u32 block id |
//! | `0xB1`, `0xCC`, `0x23` | `StreamHeader`, `Nop`, `Nop` | none (bytes 2–63 zero) |
//!
//! Dtype codes are `nrt_dtype_t` values: `0x07` fp16, `0x08` int32 (raw copies only), `0x0A`
//! fp32. ALU codes: `0x04` add, `0x08` max. Which opcode may use which half of the sync block
//! is fixed per opcode (see [`NeuronOpcode::sync_rule`]).
//!
//! # Strictness
//!
//! The decoder accepts exactly the values this encoding is known to use; any other value of any
//! field is a [`NeuronError`] naming the opcode, the byte offset, the field and the value —
//! never a guess. Semantics it does not check (operand bounds against the target's memories,
//! matmul pairing across records) are checked by the executor and by [`check_pe_pair`].

mod decode;
mod encode;

use crate::addr::SemaphoreId;
use crate::dtype::Dtype;

use super::codec::{DecodeError, Record};
use super::instr::Instruction;

pub use decode::check_pe_pair;

/// The opcodes of the Neuron encoding (byte 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum NeuronOpcode {
    /// `0x01` LoadStationary (PE).
    LoadStationary = 0x01,
    /// `0x02` MultiplyMoving (PE).
    MultiplyMoving = 0x02,
    /// `0x21` ACTIVATE (ACT).
    Activate = 0x21,
    /// `0x23` activation-table load (ACT): no effect on data.
    ActTableLoad = 0x23,
    /// `0x41` TensorTensor (DVE).
    TensorTensor = 0x41,
    /// `0x42` TensorReduce (DVE).
    TensorReduce = 0x42,
    /// `0x46` tensor copy, same dtype (ACT, DVE).
    Copy = 0x46,
    /// `0x47` tensor copy with conversion (ACT).
    ConvertCopy = 0x47,
    /// `0x49` memset to zero (DVE).
    Memset = 0x49,
    /// `0xA0` wait (two wait slots).
    Wait = 0xA0,
    /// `0xA4` final wait.
    FinalWait = 0xA4,
    /// `0xB1` stream header.
    StreamHeader = 0xB1,
    /// `0xC1` DMA trigger (a pseudo-instruction the runtime rewrites).
    DmaTrigger = 0xC1,
    /// `0xCC` second record of every trn2 stream: no effect.
    Preamble = 0xCC,
}

/// Which halves of the sync block an opcode may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncRule {
    /// The wait half (bytes 4, 5, 8–11) may be set.
    pub wait: bool,
    /// The wait is required (`0xA0`, `0xA4`).
    pub wait_required: bool,
    /// The update half (bytes 6–7) may be set.
    pub update: bool,
}

impl NeuronOpcode {
    /// Every opcode, in code order.
    pub const ALL: [NeuronOpcode; 14] = [
        NeuronOpcode::LoadStationary,
        NeuronOpcode::MultiplyMoving,
        NeuronOpcode::Activate,
        NeuronOpcode::ActTableLoad,
        NeuronOpcode::TensorTensor,
        NeuronOpcode::TensorReduce,
        NeuronOpcode::Copy,
        NeuronOpcode::ConvertCopy,
        NeuronOpcode::Memset,
        NeuronOpcode::Wait,
        NeuronOpcode::FinalWait,
        NeuronOpcode::StreamHeader,
        NeuronOpcode::DmaTrigger,
        NeuronOpcode::Preamble,
    ];

    /// The opcode with byte `b`.
    pub fn from_byte(b: u8) -> Option<NeuronOpcode> {
        Self::ALL.into_iter().find(|o| *o as u8 == b)
    }

    /// Byte 0.
    pub const fn byte(self) -> u8 {
        self as u8
    }

    /// The name the disassembler and error messages use.
    pub const fn name(self) -> &'static str {
        match self {
            NeuronOpcode::LoadStationary => "load_stationary",
            NeuronOpcode::MultiplyMoving => "multiply_moving",
            NeuronOpcode::Activate => "activate",
            NeuronOpcode::ActTableLoad => "act_table_load",
            NeuronOpcode::TensorTensor => "tensor_tensor",
            NeuronOpcode::TensorReduce => "tensor_reduce",
            NeuronOpcode::Copy => "tensor_copy",
            NeuronOpcode::ConvertCopy => "tensor_copy_convert",
            NeuronOpcode::Memset => "memset",
            NeuronOpcode::Wait => "wait",
            NeuronOpcode::FinalWait => "final_wait",
            NeuronOpcode::StreamHeader => "header",
            NeuronOpcode::DmaTrigger => "dma_trigger",
            NeuronOpcode::Preamble => "preamble",
        }
    }

    /// Whether only this encoding uses the opcode (everything but `0xB1` and `0xC1`).
    pub const fn is_neuron_only(self) -> bool {
        !matches!(self, NeuronOpcode::StreamHeader | NeuronOpcode::DmaTrigger)
    }

    /// The halves of the sync block the opcode uses.
    pub const fn sync_rule(self) -> SyncRule {
        use NeuronOpcode::*;
        let (wait, wait_required, update) = match self {
            TensorTensor | TensorReduce | Copy | ConvertCopy | Memset | Activate => {
                (true, false, true)
            }
            LoadStationary => (true, false, false),
            MultiplyMoving => (false, false, true),
            Wait | FinalWait => (true, true, false),
            DmaTrigger => (true, false, false),
            StreamHeader | Preamble | ActTableLoad => (false, false, false),
        };
        SyncRule {
            wait,
            wait_required,
            update,
        }
    }
}

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

/// The two forms of `0x21` ACTIVATE real NEFFs use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActForm {
    /// Selector 0, flag 0, bias flag `0x01`: a per-partition bias vector is added.
    Bias,
    /// Selector 1, flag 1, bias flag `0x80`, address 0: no bias; `bias_dtype` is the high
    /// nibble of byte 32, kept as written.
    NoBias {
        /// The (unused) bias dtype nibble.
        bias_dtype: Dtype,
    },
}

/// Fields of a Neuron record with no established meaning, kept so the record re-encodes
/// exactly. The executor never reads them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Detail {
    /// The opcode has no such fields.
    None,
    /// `0x01` LoadStationary.
    LoadStationary {
        /// Byte 34: transpose mode (the result of the following `0x02` is in the input dtype).
        transpose: bool,
        /// Bytes 44–47.
        tail: PeTail,
    },
    /// `0x02` MultiplyMoving.
    MultiplyMoving {
        /// Byte 33 (fp16: 0; fp32: 3, or 2 on identity-moving weight transposes).
        mode: u8,
        /// Byte 34: transpose mode.
        transpose: bool,
        /// Byte 43 bit 1 ("last" of an accumulation group; no effect).
        last: bool,
        /// Byte 46 (`0x10` on trn1, `0x00` on trn2).
        byte46: u8,
    },
    /// `0x21` ACTIVATE.
    Activate(ActForm),
}

/// A decoded Neuron record: opcode, sync block, semantics in the shared model, and the
/// encoding-only fields.
#[derive(Debug, Clone, PartialEq)]
pub struct NeuronInstr {
    /// The opcode.
    pub opcode: NeuronOpcode,
    /// Waits before, signal after.
    pub sync: Sync,
    /// The semantics.
    pub instr: Instruction,
    /// Fields without established meaning.
    pub detail: Detail,
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
    /// An instruction of the model that this encoding cannot express.
    #[error("not expressible in the Neuron encoding: {0}")]
    NotEncodable(String),
}

fn opcode_name(b: u8) -> &'static str {
    NeuronOpcode::from_byte(b).map_or("?", NeuronOpcode::name)
}

/// Which encoding a record belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// The platform's own encoding (opcodes `0xB1`, `0xC1`, `0xD0..=0xFF`).
    Platform,
    /// The Neuron encoding of real compiler NEFFs.
    Neuron,
}

/// A record decoded from either encoding.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// The encoding it was decoded with.
    pub encoding: Encoding,
    /// Its sync block ([`Sync::NONE`] for platform records).
    pub sync: Sync,
    /// Its semantics.
    pub instr: Instruction,
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
    match NeuronOpcode::from_byte(b) {
        Some(o) if o.is_neuron_only() => Encoding::Neuron,
        _ => Encoding::Platform,
    }
}

/// Decodes a record of either encoding, choosing by its opcode byte ([`encoding_of`]).
pub fn decode_any(record: &Record) -> Result<Decoded, AnyDecodeError> {
    match encoding_of(record.opcode()) {
        Encoding::Neuron => {
            let n = NeuronInstr::decode(record)?;
            Ok(Decoded {
                encoding: Encoding::Neuron,
                sync: n.sync,
                instr: n.instr,
            })
        }
        Encoding::Platform => Ok(Decoded {
            encoding: Encoding::Platform,
            sync: Sync::NONE,
            instr: Instruction::decode(record)?,
        }),
    }
}

/// Whether every record of a stream belongs to the Neuron encoding's opcode set (`0xB1` and
/// `0xC1` included): the rule by which a NEFF's streams are treated as Neuron-encoded.
pub fn is_neuron_stream(records: &[Record]) -> bool {
    records
        .iter()
        .all(|r| NeuronOpcode::from_byte(r.opcode()).is_some())
}
