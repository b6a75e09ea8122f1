//! Target `isa_decode`: the instruction decoder, the encoder on whatever decodes, pseudo
//! lowering, operand checks and the disassembler (`nrt_hal::isa`).
//!
//! Properties checked beyond "no panic" (the documented contract of `nrt_hal::isa`):
//! * whatever decodes is canonical — re-encoding gives the same 64 bytes back, except for the
//!   documented leniency of the real `0xC1` record, whose re-encoding must decode to the same
//!   instruction;
//! * `lower` yields as many instructions as `slots_after_lowering` says;
//! * the disassembler prints one line per record, and errors have messages;
//! * the Neuron decoder (real compilers' encoding, 2.18–2.23: `nrt_hal::isa::neuron`) is total
//!   and canonical — every record, and every record with its opcode and length bytes mapped
//!   onto a Neuron opcode so that each input reaches the opcode table's field checks, either
//!   decodes to an instruction that re-encodes to the same 64 bytes, renders, and models (or
//!   refuses to, with a message), or is refused with a message; the Neuron disassembler prints
//!   one line per record.

use nrt_hal::isa::neuron::{check_pe_pair, decode_any, Names, NeuronInstr, NeuronOpcode};
use nrt_hal::isa::{
    decode_stream, disassemble, disassemble_neuron, disassemble_record, encode_stream, records,
    Instruction, Lowered, Record, RECORD_SIZE,
};
use nrt_hal::{DeviceAddr, EngineKind};

/// `isa_decode`: the bytes as an instruction stream (the longest whole-record prefix too, so
/// inputs of any length reach the decoder).
pub fn isa_decode(data: &[u8]) {
    let whole = &data[..data.len() - data.len() % RECORD_SIZE];
    match records(data) {
        Ok(_) => assert_eq!(whole.len(), data.len()),
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    let mut decoded = Vec::new();
    let mut all_ok = true;
    for rec in records(whole).expect("a whole number of records") {
        match Instruction::decode(&rec) {
            Ok(i) => {
                check_instruction(&rec, &i);
                decoded.push(i);
            }
            Err(e) => {
                all_ok = false;
                assert!(!e.to_string().is_empty(), "decode error without a message");
            }
        }
        assert!(!disassemble_record(&rec).is_empty());
    }
    match decode_stream(whole) {
        Ok(v) => {
            assert!(all_ok, "decode_stream accepted a record decode refused");
            assert_eq!(v.len(), decoded.len());
            let bytes = encode_stream(&v).expect("decoded instructions encode");
            assert_eq!(bytes.len(), whole.len());
        }
        Err(e) => {
            assert!(
                !all_ok,
                "decode_stream refused records that all decode: {e}"
            );
        }
    }
    let text = disassemble(whole);
    assert_eq!(
        text.lines().count(),
        whole.len() / RECORD_SIZE,
        "one disassembly line per record"
    );
    let _ = disassemble(data);
    neuron(whole);
}

/// The Neuron-encoding properties over the whole records of an input.
fn neuron(whole: &[u8]) {
    let recs: Vec<Record> = records(whole).expect("a whole number of records").collect();
    let names = Names::default();
    let mut prev: Option<Record> = None;
    for rec in &recs {
        let mut mapped = *rec;
        let op = NeuronOpcode::ALL[usize::from(rec.0[0]) % NeuronOpcode::ALL.len()];
        mapped.0[0] = op.byte();
        mapped.0[1] = op.length_byte();
        for r in [rec, &mapped] {
            match NeuronInstr::decode(r) {
                Ok(n) => {
                    assert_eq!(
                        &n.encode().expect("decoded Neuron records encode"),
                        r,
                        "accepted Neuron records are canonical"
                    );
                    assert!(!n.render(&names).is_empty() || r.opcode() == 0xB1);
                    match n.model() {
                        Some(Ok(i)) => {
                            if let Err(e) = i.check_operands() {
                                assert!(!e.to_string().is_empty());
                            }
                        }
                        Some(Err(e)) => assert!(!e.to_string().is_empty()),
                        None => {}
                    }
                }
                Err(e) => assert!(!e.to_string().is_empty(), "Neuron error without a message"),
            }
            if let Err(e) = decode_any(r) {
                assert!(!e.to_string().is_empty());
            }
            if let Err(e) = check_pe_pair(prev.as_ref(), r) {
                assert!(!e.to_string().is_empty());
            }
        }
        prev = Some(mapped);
    }
    assert_eq!(
        disassemble_neuron(whole, &names).lines().count(),
        recs.len(),
        "one Neuron disassembly line per record"
    );
}

fn check_instruction(rec: &Record, i: &Instruction) {
    let again = i.encode().expect("decoded instructions are encodable");
    if rec.opcode() == 0xC1 {
        let re = Instruction::decode(&again).expect("a re-encoded 0xC1 decodes");
        assert_eq!(format!("{re:?}"), format!("{i:?}"), "0xC1 round trip");
    } else {
        assert_eq!(&again, rec, "accepted records are canonical");
    }
    assert_eq!(i.opcode().byte(), rec.opcode());
    if let Err(e) = i.check_operands() {
        assert!(!e.to_string().is_empty());
    }
    for e in EngineKind::ALL {
        let _ = i.allowed_on(e);
    }
    // Resolve var ids to addresses that depend on the id, including ones near the top of the
    // address space so that `offset` overflow is reachable; id 0 is unknown.
    let resolve = |id: u32| {
        (id != 0).then(|| DeviceAddr::new(u64::from(id).wrapping_mul(0x9E37_79B9_7F4A_7C15)))
    };
    match i.lower(resolve) {
        Ok(Lowered::Replaced(v)) => {
            assert_eq!(v.len(), i.slots_after_lowering(), "lowered slot count");
            for j in &v {
                j.encode().expect("lowered instructions are encodable");
            }
        }
        Ok(Lowered::Unchanged) | Ok(Lowered::DmaTrigger { .. }) => {
            assert_eq!(i.slots_after_lowering(), 1);
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
}
