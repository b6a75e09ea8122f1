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

use super::codec::{hex, Record, RECORD_SIZE};
use super::neuron::{decode_any, Decoded, Names, NeuronInstr, Sync};

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

/// A Neuron record as a line: its profiler name, then its operands as the profiler writes them
/// (with `names` from the NEFF), trimmed.
fn neuron_line(n: &NeuronInstr, names: &Names) -> String {
    let ops = n.render(names);
    let ops = ops.trim();
    if ops.is_empty() {
        n.opcode().name().to_string()
    } else {
        format!("{} {ops}", n.opcode().name())
    }
}

fn raw_line(record: &Record, e: &dyn fmt::Display) -> String {
    format!(".raw {:#04x} {}  ; {e}", record.opcode(), record.to_hex())
}

/// One record as a line of disassembly (without index); undecodable records print as `.raw`.
/// A record of the Neuron encoding prints as the profiler names and renders it
/// (`TENSOR_TENSOR S[9]>=16 S[6]++@complete op=ADD …`); the shared opcodes `0xB1`/`0xC1` print
/// as platform records.
pub fn disassemble_record(record: &Record) -> String {
    match decode_any(record) {
        Ok(Decoded::Neuron(n)) => neuron_line(&n, &Names::new()),
        Ok(Decoded::Platform(i)) => i.to_string(),
        Err(e) => raw_line(record, &e),
    }
}

/// Disassembles a stream: one line per record, `NNNN: <instruction>` with the decimal record
/// index. Never fails: undecodable records print as `.raw`, and a trailing partial record as
/// `.tail <hex>`.
pub fn disassemble(bytes: &[u8]) -> String {
    lines(bytes, disassemble_record)
}

/// Disassembles a stream of the Neuron encoding (every record, `0xB1` and `0xC1` included, in
/// the profiler's terms), naming semaphores and vars from `names`.
pub fn disassemble_neuron(bytes: &[u8], names: &Names) -> String {
    lines(bytes, |r| match NeuronInstr::decode(r) {
        Ok(n) => neuron_line(&n, names),
        Err(e) => raw_line(r, &e),
    })
}

fn lines(bytes: &[u8], line: impl Fn(&Record) -> String) -> String {
    let mut out = String::new();
    let chunks = bytes.chunks_exact(RECORD_SIZE);
    let tail = chunks.remainder();
    let mut n = 0;
    for (i, chunk) in chunks.enumerate() {
        if let Some(r) = Record::from_slice(chunk) {
            out.push_str(&format!("{i:04}: {}\n", line(&r)));
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
