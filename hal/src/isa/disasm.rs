//! The disassembler: one text line per record.
//!
//! Syntax, by example (operands print as in [`AccessPattern`]'s `Display`:
//! `space[p<start>:<end> +<byte offset> <dtype> [step,count]…]`, short operands as
//! `space[p<start> +<offset> <dtype>]`):
//!
//! ```text
//! header
//! pseudo.dma_trigger qSyncIO0 block=3
//! write [0x2000001000] <- 0x5
//! sem.wait sem3 >= 4                 sem.signal sem3 += 1
//! event.set evt2 = 1                 event.wait evt2 == 1
//! matmul.ld sbuf[p0:128 +0x0 bf16 [1,128]]
//! matmul.mm psum[p0:128 +0x0 f32 [1,512]] <- sbuf[p0:128 +0x200 bf16 [1,512]] acc
//! act.gelu <out> <- <in> scale=1.0 bias=sbuf[p0 +0x40 f32] reduce=reset_reduce
//! tensor_tensor.add <out> <- <in0>, <in1>
//! tensor_scalar <out> <- (<in> multiply 2.0) add sbuf[p0 +0x0 f32]    (reversed: (2.0 subtract <in>))
//! tensor_copy <out> <- <in>          transpose <out> <- <in>
//! tensor_reduce.max <out> <- <in> axes=1 neg
//! memset <out> <- 0.0                iota <out> <- 5 + 2*p + [1,512]
//! pseudo.write_var [var3+0x40] <- 0x1
//! pseudo.barrier sem5 count=4        pseudo.marker 7 "layer 0"
//! .raw 0x41 <128 hex digits>  ; <decode error>
//! ```
//!
//! `acc`, `neg` and `reduce=` appear only when set. Immediates print with Rust's `{:?}` for
//! `f32` (`1.0`, `-0.5`, `NaN`). A record that does not decode — an unknown opcode such as a real
//! NEFF's `0x41`, or a malformed record — prints as `.raw` with its bytes and the reason, so a
//! disassembly never fails.

use core::fmt;

use super::ap::AccessPattern;
use super::codec::{hex, Record, RECORD_SIZE};
use super::instr::Instruction;
use super::instr::TensorOperand;
use super::neuron::{decode_any, Encoding, NeuronOpcode, Sync};
use super::ops::{MatmulPass, ReduceCmd, ScalarOperand};

impl fmt::Display for ScalarOperand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalarOperand::Imm(v) => write!(f, "{v:?}"),
            ScalarOperand::Vector(s) => write!(f, "{s}"),
        }
    }
}

fn io(f: &mut fmt::Formatter<'_>, out: &AccessPattern, input: &AccessPattern) -> fmt::Result {
    write!(f, " {out} <- {input}")
}

impl fmt::Display for Instruction {
    // Longer than the ~120-line guideline on purpose: the disassembly table, one arm per
    // instruction printing its operands in encoding order.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mn = self.opcode().mnemonic();
        match self {
            Instruction::StreamHeader | Instruction::End | Instruction::Nop => f.write_str(mn),
            Instruction::PseudoDmaTrigger { queue, block_id } => {
                write!(f, "{mn} {queue} block={block_id}")
            }
            Instruction::Write { addr, value } => write!(f, "{mn} [{addr}] <- {value:#x}"),
            Instruction::SemWait { sem, cmp, value } => {
                write!(f, "{mn} {sem} {} {value}", cmp.symbol())
            }
            Instruction::SemSignal { sem, op, value } => {
                write!(f, "{mn} {sem} {} {value}", op.symbol())
            }
            Instruction::EventSet { event, value } => {
                write!(f, "{mn} {event} = {}", u8::from(*value))
            }
            Instruction::EventWait { event, value } => {
                write!(f, "{mn} {event} == {}", u8::from(*value))
            }
            Instruction::MatmulLoadStationary {
                stationary,
                reversed,
                pass,
            } => {
                write!(f, "{mn} {stationary}")?;
                if *reversed {
                    f.write_str(" rev")?;
                }
                if *pass != MatmulPass::Single {
                    write!(f, " pass={pass}")?;
                }
                Ok(())
            }
            Instruction::MatmulMoving {
                dst,
                moving,
                accumulate,
            } => {
                f.write_str(mn)?;
                io(f, dst, moving)?;
                if *accumulate {
                    f.write_str(" acc")?;
                }
                Ok(())
            }
            Instruction::Activation {
                func,
                out,
                input,
                scale,
                bias,
                reduce,
            } => {
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
            Instruction::TensorTensor { op, out, in0, in1 } => {
                write!(f, "{mn}.{op}")?;
                io(f, out, in0)?;
                match in1 {
                    TensorOperand::Borrowed(s) => write!(f, ", {s}"),
                    TensorOperand::Pattern(p) => write!(f, ", {p}"),
                }
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
            Instruction::TensorCopy { out, input } | Instruction::Transpose { out, input } => {
                f.write_str(mn)?;
                io(f, out, input)
            }
            Instruction::TensorReduce {
                op,
                out,
                input,
                axes,
                negate,
            } => {
                write!(f, "{mn}.{op}")?;
                io(f, out, input)?;
                write!(f, " axes={axes}")?;
                if *negate {
                    f.write_str(" neg")?;
                }
                Ok(())
            }
            Instruction::Memset { out, value } => write!(f, "{mn} {out} <- {value:?}"),
            Instruction::Iota {
                out,
                offset,
                channel_multiplier,
                pattern,
            } => write!(
                f,
                "{mn} {out} <- {offset} + {channel_multiplier}*p + {pattern}"
            ),
            Instruction::PseudoWriteVar {
                var_id,
                offset,
                value,
            } => write!(f, "{mn} [var{var_id}+{offset:#x}] <- {value:#x}"),
            Instruction::PseudoBarrier { sem, count } => write!(f, "{mn} {sem} count={count}"),
            Instruction::PseudoMarker { id, label } => {
                write!(f, "{mn} {id} {:?}", label.as_str())
            }
        }
    }
}

impl fmt::Display for Sync {
    /// ` wait sem9>=16 wait sem4>=2 signal sem6`, each part only when present.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for w in self.waits.iter().flatten() {
            write!(f, " wait {}>={}", w.sem, w.value)?;
        }
        if let Some(s) = self.signal {
            write!(f, " signal {s}")?;
        }
        Ok(())
    }
}

/// One record as a line of disassembly (without index); undecodable records print as `.raw`.
/// A record of the Neuron encoding prints its instruction in the shared syntax, its sync block,
/// and the Neuron opcode after `;` (e.g. `tensor_tensor.add … wait sem9>=16 signal sem6  ;
/// neuron 0x41 tensor_tensor`); the shared opcodes `0xB1`/`0xC1` print as platform records.
pub fn disassemble_record(record: &Record) -> String {
    match decode_any(record) {
        Ok(d) if d.encoding == Encoding::Neuron => {
            let name = NeuronOpcode::from_byte(record.opcode()).map_or("?", NeuronOpcode::name);
            format!(
                "{}{}  ; neuron {:#04x} {name}",
                d.instr,
                d.sync,
                record.opcode()
            )
        }
        Ok(d) => d.instr.to_string(),
        Err(e) => format!(".raw {:#04x} {}  ; {e}", record.opcode(), record.to_hex()),
    }
}

/// Disassembles a stream: one line per record, `NNNN: <instruction>` with the decimal record
/// index. Never fails: undecodable records print as `.raw`, and a trailing partial record as
/// `.tail <hex>`.
pub fn disassemble(bytes: &[u8]) -> String {
    let mut out = String::new();
    let chunks = bytes.chunks_exact(RECORD_SIZE);
    let tail = chunks.remainder();
    let mut n = 0;
    for (i, chunk) in chunks.enumerate() {
        if let Some(r) = Record::from_slice(chunk) {
            out.push_str(&format!("{i:04}: {}\n", disassemble_record(&r)));
        }
        n = i + 1;
    }
    if !tail.is_empty() {
        out.push_str(&format!(
            "{n:04}: .tail {}  ; {} trailing bytes, not a whole {RECORD_SIZE}-byte record\n",
            hex(tail),
            tail.len()
        ));
    }
    out
}
