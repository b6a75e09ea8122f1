//! The platform's engine instruction encoding: 64-byte records, encoder, decoder, disassembler
//! (docs/isa.md §1; docs/neff.md §9, docs/isa.md §3, §4).
//!
//! Real Neuron instruction encodings are not public. This module keeps the framing real NEFFs
//! show (docs/neff.md §9) and defines everything else. It is the reference for the format: the runtime's
//! loader, the NEFF writer in `fixtures` and the simulator's engines all use these types.
//!
//! # Framing
//!
//! An engine's instruction stream (`<Engine>.bin` in a NEFF) is a sequence of fixed
//! [`RECORD_SIZE`] = 64-byte records. All integers are little-endian.
//!
//! | byte | meaning |
//! |---|---|
//! | 0 | opcode |
//! | 1 | `0x10` always (16 dwords; real NEFFs never differ) — else [`DecodeError::BadLengthByte`] |
//! | 2..64 | operands, by opcode (below); every byte a layout does not name must be zero |
//!
//! The first record of every stream is `0xB1` [`Instruction::StreamHeader`].
//!
//! Real NEFFs use the opcodes of the Neuron encoding ([`neuron`], one table). The platform's
//! encoding shares two of them with their real meaning (`0xB1`, `0xC1`) and takes its own from
//! `0xD0..=0xFF` where the Neuron table has none (a test holds the two tables disjoint but for
//! those two; `event.wait` moved from `0xD4` to `0xD7` when the current compiler's
//! DMA_DIRECT2D took `0xD4`). Any other byte 0 decodes to [`DecodeError::UnknownOpcode`].
//!
//! # One definition per instruction
//!
//! Both encodings are tables of rows, one per instruction, declared with
//! [`instruction_set!`](layout) (docs/isa.md §5.8): opcode, name, engines, each field's slot
//! (offset, width, validation), cross-field checks, the shared-model meaning of a Neuron record
//! and the disassembly text. Decoding, encoding, the reserved-byte check, the engine check and
//! the disassembler all come from the row. To add an instruction:
//!
//! 1. add its row to `platform.rs` (the platform's encoding) or `neuron/table.rs` (the Neuron
//!    encoding), reusing the slot types of `platform/slots.rs` or `neuron/slots.rs` (a new
//!    kind of field is one new `Slot` impl);
//! 2. give it semantics: a Neuron row whose `model` names a shared-model instruction needs
//!    nothing more; otherwise add its arm to the simulator's dispatcher (`nrt_sim`: the
//!    platform's `engine_instruction`/`compute::execute`, or the Neuron `engine_native`), whose
//!    `match` over the generated enum names one semantic function per instruction;
//! 3. only if the device times it unlike its class (element-wise, matmul, DMA issue, sync),
//!    its figures in the simulator's cost model (`nrt_sim::compute::cost`, docs/simulator.md
//!    §7.2); otherwise its class's apply.
//!
//! # Opcodes
//!
//! | opcode | mnemonic | instruction | engines | kind |
//! |---|---|---|---|---|
//! | `0xB1` | `header` | [`Instruction::StreamHeader`] | all | real framing |
//! | `0xC1` | `pseudo.dma_trigger` | [`Instruction::PseudoDmaTrigger`] | all | real pseudo → 1 `write` (by the runtime) |
//! | `0xD0` | `write` | [`Instruction::Write`] | all | sync |
//! | `0xD1` | `sem.wait` | [`Instruction::SemWait`] | all | sync |
//! | `0xD2` | `sem.signal` | [`Instruction::SemSignal`] | all | sync |
//! | `0xD3` | `event.set` | [`Instruction::EventSet`] | all | sync |
//! | `0xD7` | `event.wait` | [`Instruction::EventWait`] | all | sync |
//! | `0xD5` | `end` | [`Instruction::End`] | all | control |
//! | `0xD6` | `nop` | [`Instruction::Nop`] | all | control |
//! | `0xE0` | `matmul.ld` | [`Instruction::MatmulLoadStationary`] (LDWEIGHTS) | PE | compute |
//! | `0xE1` | `matmul.mm` | [`Instruction::MatmulMoving`] (MATMUL) | PE | compute |
//! | `0xE2` | `act.<func>` | [`Instruction::Activation`] | ACT | compute |
//! | `0xE3` | `tensor_tensor.<op>` | [`Instruction::TensorTensor`] | DVE, POOL | compute |
//! | `0xE4` | `tensor_scalar` | [`Instruction::TensorScalar`] | ACT, DVE, POOL | compute |
//! | `0xE5` | `tensor_copy` | [`Instruction::TensorCopy`] | ACT, DVE, POOL | compute |
//! | `0xE6` | `tensor_reduce.<op>` | [`Instruction::TensorReduce`] | DVE, POOL | compute |
//! | `0xE7` | `memset` | [`Instruction::Memset`] | DVE, POOL | compute |
//! | `0xE8` | `iota` | [`Instruction::Iota`] | POOL | compute |
//! | `0xE9` | `transpose` | [`Instruction::Transpose`] | PE, DVE | compute |
//! | `0xEA` | `dma.direct` | [`Instruction::DmaDirect`] | all | DMA an engine issues (relocated Neuron `0xD4`) |
//! | `0xF0` | `pseudo.write_var` | [`Instruction::PseudoWriteVar`] | all | pseudo → 1 `write` (relocated) |
//! | `0xF1` | `pseudo.barrier` | [`Instruction::PseudoBarrier`] | all | pseudo → 2 slots |
//! | `0xF2` | `pseudo.marker` | [`Instruction::PseudoMarker`] | all | pseudo → 0 slots |
//!
//! SP runs no compute instruction. [`Instruction::allowed_on`] encodes the engine column.
//!
//! # Sync, control and pseudo records
//!
//! Byte ranges are half-open. "—" means only bytes 0 and 1 are used.
//!
//! | opcode | layout |
//! |---|---|
//! | `0xB1` header, `0xD5` end, `0xD6` nop | — |
//! | `0xC1` dma trigger | `[12..48)` queue-set name, ASCII, NUL-terminated or filling all 36 bytes, 1..=36 graphic characters (`0x21..=0x7E`); `[48..52)` u32 DMA block id |
//! | `0xD0` write | `[8..16)` u64 device address; `[16..20)` u32 value (a 4-byte store) |
//! | `0xD1` sem.wait | `[2..4)` u16 semaphore; `[4]` [`SemCmp`] (ge 0, eq 1, gt 2, le 3, lt 4, ne 5); `[8..12)` i32 value — block until `sem <cmp> value` |
//! | `0xD2` sem.signal | `[2..4)` u16 semaphore; `[4]` [`SemOp`] (inc 0, dec 1, set 2); `[8..12)` i32 value |
//! | `0xD3` event.set | `[2..4)` u16 event; `[8..12)` u32 value, 0 or 1 |
//! | `0xD7` event.wait | `[2..4)` u16 event; `[8..12)` u32 value, 0 or 1 — block until `event == value` |
//! | `0xEA` dma.direct | `[2..4)` u16 semaphore; `[4]` increment; `[5]`/`[6]` source/destination dtype; `[7]` address modes (source low nibble, destination high: 0 absolute, 1 var slot + offset, 2 var slot + register); `[8..16)`/`[16..24)` u64 source/destination address or slot; `[24..28)`/`[28..32)` u32 offset or register; `[32..44)`/`[44..56)` patterns (2 × i32 step, 2 × u16 count); `[56..58)`/`[58..60)` u16 chunk sizes |
//! | `0xF0` pseudo.write_var | `[4..8)` u32 var id; `[8..16)` u64 byte offset in the var; `[16..20)` u32 value |
//! | `0xF1` pseudo.barrier | `[2..4)` u16 semaphore; `[8..12)` i32 count |
//! | `0xF2` pseudo.marker | `[4..8)` u32 id; `[8..48)` label, 0..=40 printable ASCII characters (`0x20..=0x7E`), NUL-padded |
//!
//! **`0xC1` is decoded leniently.** It is a real opcode, and only its name and block id are
//! publicly known (docs/neff.md §9); real compilers may fill its other bytes. The decoder therefore reads
//! the name up to the first NUL and the id, and ignores bytes 2..12, the bytes after the NUL
//! and 52..64; the encoder writes zeros there. Every other opcode is decoded strictly.
//!
//! A DMA block starts when an engine stores its descriptor count into a DMA queue's
//! tail-increment register: that is a `write`. `event.set` and `write` are also how engines
//! poke events.
//!
//! # Pseudo-instructions
//!
//! Pseudo-instructions are rewritten when the runtime loads a stream and never execute
//! ([`Instruction::lower`]):
//!
//! - `0xC1 {queue, block}` → one `write {tail-increment register of the queue the runtime
//!   assigned to the queue set, descriptor count of the block}` — done by the runtime, which
//!   knows the queues ([`Lowered::DmaTrigger`]);
//! - `0xF0 {var, offset, value}` → `write {physical address of var + offset, value}`: the
//!   var-id operand relocation rewrites;
//! - `0xF1 {sem, count}` → two slots: `sem.signal {sem, inc, 1}`, `sem.wait {sem, ge, count}`;
//! - `0xF2` → no slot.
//!
//! # Compute records
//!
//! Compute records share one layout. Access patterns (APs, 22 bytes) and short operands (one
//! 4-byte AP word) are specified in [`ap`]; an AP's element order is row-major with the last
//! `[step, count]` pair innermost.
//!
//! | bytes | slot |
//! |---|---|
//! | `[2]` | op / function code |
//! | `[3]` | flags (undefined bits must be zero — else [`DecodeError::ReservedFlagBits`]) |
//! | `[4..8)` | op-specific |
//! | `[8..30)` | AP0 — the output |
//! | `[30..52)` | AP1 — the main input |
//! | `[52..56)` | short operand |
//! | `[56..60)` | imm0: f32, or a short operand when flagged |
//! | `[60..64)` | imm1: f32, or a short operand when flagged |
//!
//! | opcode | `[2]` | `[3]` flags | `[4..8)` | AP0 | AP1 | `[52..56)` | imm0 | imm1 |
//! |---|---|---|---|---|---|---|---|---|
//! | `0xE0` matmul.ld | 0 | bit0 reversed column order | `[4]` [`MatmulPass`] | 0 | stationary `[K, M]`, SBUF | 0 | 0 | 0 |
//! | `0xE1` matmul.mm | 0 | bit0 accumulate | 0 | dst `[M, N]`, PSUM | moving `[K, N]`, SBUF | 0 | 0 | 0 |
//! | `0xE2` act | [`ActivationFunc`] | bit0 scale is a vector, bit1 bias is a vector, bit2 bias is an f32 immediate | `[4]` [`ReduceCmd`] | out | in | bias (if bit1 or bit2) | scale | 0 |
//! | `0xE3` tensor_tensor | [`AluOp`] | 0 | 0 | out | in0 | in1 | 0 | 0 |
//! | `0xE4` tensor_scalar | op0 [`AluOp`] | bit0 reverse0, bit1 reverse1, bit2 operand0 is a vector, bit3 operand1 is a vector | `[4]` op1 [`AluOp`] | out | in | 0 | operand0 | operand1 |
//! | `0xE5` tensor_copy | 0 | 0 | 0 | out | in | 0 | 0 | 0 |
//! | `0xE6` tensor_reduce | [`AluOp`] (a legal reduction) | bit0 negate | `[4]` axes, 1..=4 | out | in | 0 | 0 | 0 |
//! | `0xE7` memset | 0 | 0 | 0 | out | 0 | 0 | f32 value | 0 |
//! | `0xE8` iota | pattern ndims, 1..=4 | 0 | i32 offset | out | *pattern* | *pattern* | i32 channel multiplier | 0 |
//! | `0xE9` transpose | 0 | 0 | 0 | out `[F, P]` | in `[P, F]` | 0 | 0 | 0 |
//!
//! Bytes 5..8 are zero wherever `[4]` holds a one-byte field. The iota value pattern occupies
//! `[30..46)` (4 × i32 step) and `[46..54)` (4 × u16 count), outermost first, unused dimensions
//! encoded as step 0, count 1; `[54..56)` are zero.
//!
//! Semantics (docs/isa.md §3): `matmul.mm` computes `dst = stationaryᵀ · moving` with the
//! stationary operand of the last `matmul.ld` on the same engine, overwriting PSUM or adding to
//! it; `act` computes `out = f(in · scale + bias)` in fp32; `tensor_tensor` computes
//! `op(in0, in1)`, `in1` borrowing `in0`'s partition count and free pattern; `tensor_scalar`
//! computes `(in op0 operand0) op1 operand1`, reversed stages computing `operand op x`;
//! `tensor_reduce` folds the trailing `axes` free dims, then negates if flagged; `memset` and
//! `iota` fill `out` (iota's int32 values are `offset + channel_multiplier·partition +
//! Σ stepᵢ·indexᵢ`, then cast); `transpose` maps `[P, F]` to `[F, P]`. Vector operands
//! (`[P, 1]`) take their own start partition and the main operand's partition count.
//! [`Instruction::check_operands`] checks the shape and memory rules the encoding does not.
//!
//! # Codes
//!
//! The enumerations' codes are listed on [`ActivationFunc`], [`AluOp`], [`SemCmp`], [`SemOp`],
//! [`ReduceCmd`] and [`MemSpace`] (each variant's discriminant).
//!
//! # Errors
//!
//! [`Instruction::decode`] never panics. It checks, in order: opcode, length byte, each field
//! as it is read (enum codes, flags, ranges, APs, names), and finally that every remaining byte
//! is zero ([`DecodeError::ReservedNonZero`] names the first offending byte).
//! [`Instruction::encode`] fails only when a field does not fit its slot (a semaphore or event
//! above 65535, reduce axes outside 1..=4, an illegal reduction op); everything it encodes
//! decodes back to the same instruction.

pub mod ap;
mod codec;
mod disasm;
pub mod dma;
mod instr;
pub mod layout;
pub mod neuron;
mod ops;
mod platform;

pub use ap::{
    AccessPattern, ApError, Dim, ElementOffsets, IotaDim, IotaPattern, ScalarOperand, ShortOperand,
};
pub use codec::{
    decode_stream, encode_stream, records, DecodeError, EncodeError, EncodeStreamError, Record,
    Records, StreamError, LENGTH_BYTE, RECORD_SIZE,
};
pub use disasm::{disassemble, disassemble_neuron, disassemble_record};
pub use dma::{DmaEnd, DmaPattern};
pub use instr::{
    is_real_neff_opcode, Instruction, LowerError, Lowered, Opcode, OperandError, TensorOperand,
    REAL_NEFF_OPCODES,
};
pub use ops::{
    ActivationFunc, AluOp, MarkerLabel, MatmulPass, MemSpace, NameError, QueueSetName, ReduceCmd,
    SemCmp, SemOp,
};
