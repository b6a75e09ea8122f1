//! One definition per instruction: the [`Slot`] trait and the [`instruction_set!`] macro from
//! which each encoding's instruction enum, opcode enum, decoder, encoder, checks and text
//! follow (docs/isa.md §5.8).
//!
//! An encoding is a table. Each row defines one instruction:
//!
//! ```text
//! /// doc
//! Variant = 0xE5, "mnemonic", [Act, Dve, Pool], flags 0b0 {
//!     /// field doc
//!     field: FieldType = slot_expression,
//!     …
//! } check { /* cross-field rules over the fields, optional */ }
//!   model { /* the instruction in the shared model, optional */ }
//!   text |ctx, f, name| { /* write the disassembly */ }
//! ```
//!
//! - the opcode byte, its name (the platform's mnemonic, the profiler's name for the Neuron
//!   encoding) and the engines that may run it;
//! - `length` (optional): byte 1 when it is not the usual `0x10`;
//! - `flags` (optional): the defined bits of byte 3 when that byte is a flags byte; any other
//!   bit set is a reserved-flag error, reported before any field is read;
//! - `lenient` (optional): only the declared fields are checked, the rest of the record is
//!   ignored (the real `0xC1`, whose other bytes real compilers fill);
//! - the fields, in decode order: a name, a Rust type and a *slot* — a value implementing
//!   [`Slot`] that says where the field sits (offset, width, flag bits) and how it is read,
//!   validated and written;
//! - `text`: how the instruction disassembles, given the encoding's naming context;
//! - `check` (optional): rules that span several fields, run after the fields decode;
//! - `model` (optional): the instruction in the encoding's model type — for the Neuron
//!   encoding, the platform [`Instruction`](crate::isa::Instruction) that does the same, which
//!   is how its operands' roles (input, output, dtype, partitions) are stated; a row without
//!   one has semantics of its own in the simulator.
//!
//! From the table the macro generates the instruction enum (one struct variant per row, unit
//! variants for rows without fields), the opcode enum, `decode` (opcode, length byte, flags,
//! every slot in order, `check`, then a re-encode that must reproduce the record: a byte no
//! slot accounts for must be zero, and the error names the slot covering the first differing
//! byte), `encode`, `write_text` and the per-opcode engine set. Nothing about an instruction is
//! written twice.
//!
//! # Adding an instruction
//!
//! 1. add its row to the encoding's table (`platform.rs` or `neuron/table.rs`), with a slot per
//!    field — existing slot types cover fixed-width integers, enumerations, access patterns
//!    and the sync block; a new kind of field is one new [`Slot`] impl;
//! 2. give it a semantic function in the simulator's dispatcher for that encoding
//!    (`nrt_sim`'s `compute::execute` for the platform encoding, its `neuron` module for the
//!    Neuron encoding): the dispatch is a `match` over the generated enum, so the build fails
//!    until the new variant has one.
//!
//! Decode, encode, the reserved-byte check, the disassembly and the engine check follow from
//! the row.

use core::ops::Range;

use super::codec::Record;

/// Where a field of type `T` sits in a record, and how it is read, checked and written.
///
/// A slot is a small value (an offset, a flag bit, a field name) built in the table row. Reading
/// validates: it returns the encoding's decode error naming the byte and the rule. Writing
/// fails only when the value does not fit.
pub trait Slot<T> {
    /// The encoding's decode error.
    type DecodeError;
    /// The encoding's encode error.
    type EncodeError;
    /// Reads and validates the field.
    fn read(&self, r: &Record) -> Result<T, Self::DecodeError>;
    /// Writes the field.
    fn write(&self, r: &mut Record, v: &T) -> Result<(), Self::EncodeError>;
    /// The bytes the field occupies (for naming a byte in an error).
    fn span(&self) -> Range<usize>;
}

/// Bytes `at..at + N` of a record (the slots' reader).
pub(crate) fn get<const N: usize>(r: &Record, at: usize) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&r.0[at..at + N]);
    a
}

/// Writes `bytes` at `at` (the slots' writer).
pub(crate) fn put(r: &mut Record, at: usize, bytes: &[u8]) {
    r.0[at..at + bytes.len()].copy_from_slice(bytes);
}

/// Implements [`Slot`] of each listed integer or float type for an encoding's raw
/// little-endian slot (`struct $slot(pub usize)`, the field's offset; any value accepted), with
/// the encoding's error types.
macro_rules! le_slots {
    ($slot:ident, $derr:ty, $eerr:ty; $($t:ty),*) => {$(
        impl $crate::isa::layout::Slot<$t> for $slot {
            type DecodeError = $derr;
            type EncodeError = $eerr;
            fn read(&self, r: &$crate::isa::codec::Record) -> Result<$t, $derr> {
                Ok(<$t>::from_le_bytes($crate::isa::layout::get(r, self.0)))
            }
            fn write(&self, r: &mut $crate::isa::codec::Record, v: &$t) -> Result<(), $eerr> {
                $crate::isa::layout::put(r, self.0, &v.to_le_bytes());
                Ok(())
            }
            fn span(&self) -> core::ops::Range<usize> {
                self.0..self.0 + core::mem::size_of::<$t>()
            }
        }
    )*};
}
pub(crate) use le_slots;

/// The errors the generated decoder raises itself, built by the encoding's error type.
pub trait LayoutError {
    /// Byte 0 is no opcode of the encoding.
    fn unknown_opcode(byte: u8) -> Self;
    /// Byte 1 is not `0x10`.
    fn bad_length_byte(opcode: u8, byte: u8) -> Self;
    /// Undefined bits of the flags byte (byte 3) are set.
    fn reserved_flag_bits(opcode: u8, offset: usize, bits: u8) -> Self;
    /// Byte `offset` differs from what the decoded fields re-encode to: a reserved byte that is
    /// not zero, or a constant that differs. `field` names the slot covering the byte, if any.
    fn reserved_byte(opcode: u8, offset: usize, value: u8, field: Option<&'static str>) -> Self;
}

/// Declares an encoding's instruction table; see the [module docs](self).
#[macro_export]
#[doc(hidden)]
macro_rules! instruction_set {
    (
        $(#[$edoc:meta])*
        $vis:vis enum $Instr:ident;
        $(#[$odoc:meta])*
        opcodes $Op:ident;
        context $Ctx:ty;
        model $Model:ty;
        errors $DErr:ty, $EErr:ty;
        $(
            $(#[$doc:meta])*
            $Var:ident = $code:literal, $name:literal, [$($eng:ident),*]
                $(, flags $flags:literal)? $(, length $len:literal)? $(; $lenient:ident)?
            $({
                $( $(#[$fdoc:meta])* $field:ident : $Fty:ty = $slot:expr ),* $(,)?
            })?
            $(check $check:block)?
            $(model $model:block)?
            text |$cx:ident, $f:ident, $mn:ident| $text:block
        )+
    ) => {
        $(#[$edoc])*
        #[derive(Debug, Clone, PartialEq)]
        $vis enum $Instr {
            $(
                $(#[$doc])*
                $Var $({ $( $(#[$fdoc])* $field: $Fty, )* })?,
            )+
        }

        $(#[$odoc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(u8)]
        $vis enum $Op {
            $( $(#[$doc])* $Var = $code, )+
        }

        impl $Op {
            /// Every opcode, in table order.
            pub const ALL: &'static [$Op] = &[ $( $Op::$Var, )+ ];

            /// The opcode with byte `byte`, if the table has one.
            pub const fn from_byte(byte: u8) -> Option<$Op> {
                match byte {
                    $( $code => Some($Op::$Var), )+
                    _ => None,
                }
            }

            /// Byte 0 of its records.
            pub const fn byte(self) -> u8 {
                self as u8
            }

            /// Its name in disassembly and error messages.
            pub const fn name(self) -> &'static str {
                match self {
                    $( $Op::$Var => $name, )+
                }
            }

            /// The engines that may run it.
            pub const fn engines(self) -> &'static [$crate::EngineKind] {
                match self {
                    $( $Op::$Var => &[ $( $crate::EngineKind::$eng, )* ], )+
                }
            }

            /// Whether engine `engine` may run it.
            pub fn runs_on(self, engine: $crate::EngineKind) -> bool {
                self.engines().contains(&engine)
            }

            /// The defined bits of byte 3 when it is a flags byte.
            const fn flag_bits(self) -> Option<u8> {
                match self {
                    $( $Op::$Var => $crate::instruction_set!(@opt $($flags)?), )+
                }
            }

            /// Byte 1 of its records (the length in dwords, `0x10`, unless the row says otherwise).
            pub const fn length_byte(self) -> u8 {
                match self {
                    $( $Op::$Var => $crate::instruction_set!(@len $($len)?), )+
                }
            }

            /// Whether only the declared fields are checked.
            const fn is_lenient(self) -> bool {
                match self {
                    $( $Op::$Var => $crate::instruction_set!(@flag $($lenient)?), )+
                }
            }
        }

        impl $Instr {
            /// Its opcode.
            pub const fn opcode(&self) -> $Op {
                match self {
                    $( $Instr::$Var { .. } => $Op::$Var, )+
                }
            }

            /// Decodes one record, strictly: every field through its slot, the cross-field
            /// rules, then every byte no field accounts for must be zero. Never panics.
            pub fn decode(record: &$crate::isa::Record) -> Result<$Instr, $DErr> {
                use $crate::isa::layout::{LayoutError, Slot};
                let b = &record.0;
                let op = $Op::from_byte(b[0])
                    .ok_or_else(|| <$DErr as LayoutError>::unknown_opcode(b[0]))?;
                if b[1] != op.length_byte() {
                    return Err(<$DErr as LayoutError>::bad_length_byte(b[0], b[1]));
                }
                if let Some(defined) = op.flag_bits() {
                    if b[3] & !defined != 0 {
                        return Err(<$DErr as LayoutError>::reserved_flag_bits(
                            b[0], 3, b[3] & !defined,
                        ));
                    }
                }
                let instr = match op {
                    $(
                        $Op::$Var => $Instr::$Var $({
                            $( $field: <_ as Slot<$Fty>>::read(&$slot, record)?, )*
                        })?,
                    )+
                };
                instr.check()?;
                if !op.is_lenient() {
                    let canonical = instr.encode_fields().ok();
                    let differs = |i: usize| canonical.map_or(true, |c| c.0[i] != b[i]);
                    if let Some(at) = (0..$crate::isa::RECORD_SIZE).find(|&i| differs(i)) {
                        let field = instr.field_at(at);
                        return Err(<$DErr as LayoutError>::reserved_byte(b[0], at, b[at], field));
                    }
                }
                Ok(instr)
            }

            /// Writes every field into a fresh record of the opcode.
            pub(crate) fn encode_fields(&self) -> Result<$crate::isa::Record, $EErr> {
                #[allow(unused_imports)]
                use $crate::isa::layout::Slot;
                let mut r = $crate::isa::Record::new(self.opcode().byte());
                r.0[1] = self.opcode().length_byte();
                match self {
                    $(
                        $Instr::$Var $({ $( $field, )* })? => {
                            $( $( <_ as Slot<$Fty>>::write(&$slot, &mut r, $field)?; )* )?
                        }
                    )+
                }
                Ok(r)
            }

            /// The name of the field whose slot covers byte `at`, if any.
            fn field_at(&self, at: usize) -> Option<&'static str> {
                #[allow(unused_imports)]
                use $crate::isa::layout::Slot;
                match self {
                    $(
                        $Instr::$Var { .. } => {
                            $( $(
                                if <_ as Slot<$Fty>>::span(&$slot).contains(&at) {
                                    return Some(stringify!($field));
                                }
                            )* )?
                            let _ = at;
                            None
                        }
                    )+
                }
            }

            /// The field called `name`, if the instruction has one of type `T` (for fields every
            /// row of an encoding shares, such as the Neuron sync block).
            pub fn field<T: 'static>(&self, name: &str) -> Option<&T> {
                match self {
                    $(
                        #[allow(unused_variables)]
                        $Instr::$Var $({ $( $field, )* })? => {
                            $( $(
                                if name == stringify!($field) {
                                    return ($field as &dyn core::any::Any).downcast_ref::<T>();
                                }
                            )* )?
                            None
                        }
                    )+
                }
            }

            /// The field called `name`, mutably, if the instruction has one of type `T`.
            pub fn field_mut<T: 'static>(&mut self, name: &str) -> Option<&mut T> {
                match self {
                    $(
                        #[allow(unused_variables)]
                        $Instr::$Var $({ $( $field, )* })? => {
                            $( $(
                                if name == stringify!($field) {
                                    return ($field as &mut dyn core::any::Any).downcast_mut::<T>();
                                }
                            )* )?
                            None
                        }
                    )+
                }
            }

            /// What the instruction means in the shared model (its row's `model`: the roles of
            /// its operands), or `None` when its row has no counterpart there and the simulator
            /// gives it semantics of its own.
            // The closure lets `?` in a row's block return from the row's mapping only.
            #[allow(unreachable_code, clippy::redundant_closure_call)]
            pub fn model(&self) -> Option<Result<$Model, $DErr>> {
                match self {
                    $(
                        #[allow(unused_variables)]
                        $Instr::$Var $({ $( $field, )* })? => {
                            $( return Some((|| -> Result<$Model, $DErr> { $model })()); )?
                            None
                        }
                    )+
                }
            }

            /// The cross-field rules of the instruction's row.
            #[allow(unreachable_code)]
            fn check(&self) -> Result<(), $DErr> {
                match self {
                    $(
                        #[allow(unused_variables)]
                        $Instr::$Var $({ $( $field, )* })? => {
                            $( return $check; )?
                            Ok(())
                        }
                    )+
                }
            }

            /// Writes the instruction's text (its row's `text`) with naming context `cx`.
            pub fn write_text(
                &self,
                context: &$Ctx,
                out: &mut dyn core::fmt::Write,
            ) -> core::fmt::Result {
                match self {
                    $(
                        #[allow(unused_variables)]
                        $Instr::$Var $({ $( $field, )* })? => {
                            let $cx = context;
                            let $f = &mut *out;
                            let $mn: &'static str = $name;
                            $text
                        }
                    )+
                }
            }
        }
    };
    (@len) => { $crate::isa::LENGTH_BYTE };
    (@len $v:literal) => { $v };
    (@opt) => { None };
    (@opt $v:literal) => { Some($v) };
    (@flag) => { false };
    (@flag lenient) => { true };
}
