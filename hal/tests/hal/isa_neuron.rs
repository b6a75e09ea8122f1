//! The Neuron encoding: records of every opcode round-trip (decode → encode), the decoder is
//! total and canonical, its model mapping gives each operand its role, and records with values
//! the encoding is not known to use are rejected naming the opcode, byte and field.

use nrt_hal::isa::neuron::{
    check_pe_pair, decode_any, ActFunc, Decoded, DmaAddr, DmaAddrKind, Encoding, NeuronAlu,
    NeuronAp, NeuronError, NeuronInstr, NeuronOpcode, PeTail, Sync, SyncWait,
};
use nrt_hal::isa::{
    AluOp, DmaPattern, Instruction, MatmulPass, Opcode, QueueSetName, Record, ScalarOperand,
    TensorOperand,
};
use nrt_hal::{Dtype, SemaphoreId};
use proptest::prelude::*;

/// One record of each opcode (the crate's samples).
fn samples() -> Vec<Record> {
    nrt_hal::isa::neuron::samples()
        .into_iter()
        .map(|s| s.1)
        .collect()
}

/// The real sample's DVE record 2 (vector add, trn2), byte for byte: the last sample.
fn sample_add() -> [u8; 64] {
    let s = samples();
    let r = s.last().expect("samples");
    assert_eq!(r.opcode(), 0x41);
    r.0
}

#[test]
fn every_opcode_has_a_sample_and_each_round_trips() {
    let s = samples();
    for op in NeuronOpcode::ALL {
        assert!(
            s.iter().any(|r| r.opcode() == op.byte()),
            "no sample of {op:?}"
        );
    }
    for r in s {
        let n = NeuronInstr::decode(&r).unwrap_or_else(|e| panic!("{}: {e}", r.to_hex()));
        assert_eq!(n.encode().unwrap(), r, "{n:?}");
        assert!(!n.render(&Default::default()).is_empty());
    }
}

#[test]
fn the_two_encodings_share_only_the_header_and_the_trigger() {
    for op in NeuronOpcode::ALL {
        let shared = Opcode::from_byte(op.byte()).is_some();
        assert_eq!(shared, matches!(op.byte(), 0xB1 | 0xC1), "{op:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn a_changed_byte_decodes_canonically_or_is_rejected(
        which in 0usize..22, at in 1usize..64, v in any::<u8>()
    ) {
        let mut r = samples()[which];
        r.0[at] = v;
        if let Ok(d) = NeuronInstr::decode(&r) {
            prop_assert_eq!(d.encode().unwrap(), r);
            let _ = d.model();
            let _ = d.render(&Default::default());
        }
    }

    #[test]
    fn decoding_is_total(bytes in prop::collection::vec(any::<u8>(), 64)) {
        let mut b = [0u8; 64];
        b.copy_from_slice(&bytes);
        let ops = NeuronOpcode::ALL;
        let op = ops[usize::from(bytes[0]) % ops.len()];
        b[0] = op.byte();
        b[1] = op.length_byte();
        if let Ok(n) = NeuronInstr::decode(&Record(b)) {
            prop_assert_eq!(n.encode().unwrap(), Record(b));
            let _ = n.model();
        }
        let _ = decode_any(&Record(b));
    }
}

#[test]
fn the_sample_tensor_tensor_decodes_to_an_fp32_add() {
    let n = NeuronInstr::decode(&Record(sample_add())).unwrap();
    assert_eq!(
        n.sync(),
        Sync {
            waits: [
                Some(SyncWait {
                    sem: SemaphoreId(9),
                    value: 16
                }),
                None
            ],
            signal: Some(SemaphoreId(6)),
        }
    );
    assert!(matches!(
        n,
        NeuronInstr::TensorTensor {
            op: NeuronAlu::Add,
            channels: 128,
            ..
        }
    ));
    let Some(Ok(Instruction::TensorTensor { op, out, in0, in1 })) = n.model() else {
        panic!("{:?}", n.model())
    };
    assert_eq!(op, AluOp::Add);
    assert_eq!(
        (in0.offset(), in0.partitions(), in0.elements_per_partition()),
        (213_368, 128, 1000)
    );
    let TensorOperand::Pattern(in1) = in1 else {
        panic!("{in1:?}")
    };
    assert_eq!(in1.offset(), 225_368);
    assert_eq!(out.offset(), 0);
    assert_eq!(in0.dtype(), Dtype::F32);
    assert_eq!(n.encode().unwrap(), Record(sample_add()));
    assert!(matches!(
        decode_any(&Record(sample_add())),
        Ok(Decoded::Neuron(_))
    ));
    assert_eq!(
        decode_any(&Record(sample_add())).unwrap().encoding(),
        Encoding::Neuron
    );
    let text = nrt_hal::isa::disassemble_record(&Record(sample_add()));
    assert!(
        text.starts_with("TENSOR_TENSOR S[9]>=16 S[6]++@complete op=ADD"),
        "{text}"
    );
}

fn field_error(bytes: [u8; 64]) -> (usize, String) {
    match NeuronInstr::decode(&Record(bytes)) {
        Err(e @ NeuronError::Field { offset, .. }) => (offset, e.to_string()),
        other => panic!("expected a field error, got {other:?}"),
    }
}

#[test]
fn unknown_values_name_the_opcode_byte_and_field() {
    let mut b = sample_add();
    b[14] = 0x05;
    let (at, msg) = field_error(b);
    assert_eq!(at, 14);
    assert!(
        msg.contains("0x41") && msg.contains("ALU op") && msg.contains("0x5"),
        "{msg}"
    );

    let mut b = sample_add();
    b[15] = 0;
    let (at, msg) = field_error(b);
    assert_eq!(at, 15);
    assert!(msg.contains("partitions"), "{msg}");
    b[15] = 129;
    assert_eq!(field_error(b).0, 15);

    // SBUF address bits 18–24 are the start partition; bits above are not guessed, nor is a
    // start partition of PSUM.
    let mut b = sample_add();
    b[19] |= 0x04;
    let (at, msg) = field_error(b);
    assert_eq!(at, 16);
    assert!(msg.contains("above 24"), "{msg}");
    let mut b = sample_add();
    b[48..52].copy_from_slice(&(0x0200_0000u32 | 1 << 18).to_le_bytes());
    let (at, msg) = field_error(b);
    assert_eq!(at, 48);
    assert!(msg.contains("PSUM"), "{msg}");

    let mut b = sample_add();
    b[12] = 0xA0; // in0 dtype code 0: not a dtype
    assert_eq!(field_error(b).0, 12);

    let mut b = sample_add();
    b[4] = 0x03;
    assert!(field_error(b).1.contains("wait mode"));

    let mut b = sample_add();
    b[6] = 0x12;
    assert!(field_error(b).1.contains("update mode"));

    let e = NeuronInstr::decode(&Record({
        let mut r = [0u8; 64];
        r[0] = 0x44;
        r[1] = 0x10;
        r
    }))
    .unwrap_err();
    assert_eq!(e, NeuronError::UnsupportedOpcode(0x44));
}

#[test]
fn memset_fill_bytes_and_pe_constants_are_checked() {
    let memset = samples()[9];
    let n = NeuronInstr::decode(&memset).unwrap();
    let NeuronInstr::Memset { count, .. } = n else {
        panic!("{n:?}")
    };
    assert_eq!(count, 1);
    // A bf16 ones tile: the fill value is the dtype's bit pattern.
    let mut b = memset.0;
    b[32] = Dtype::Bf16.code();
    b[40..44].copy_from_slice(&[0x80, 0x3f, 0, 0]);
    let Some(Ok(Instruction::Memset { value, .. })) =
        NeuronInstr::decode(&Record(b)).unwrap().model()
    else {
        panic!()
    };
    assert_eq!(value, 1.0);
    b[42] = 1; // above a bf16's 16 bits
    let (at, msg) = field_error(b);
    assert_eq!(at, 40);
    assert!(msg.contains("fill value"), "{msg}");
    let mut b = memset.0;
    b[28] = 2;
    assert_eq!(field_error(b).0, 28);

    let ld = fp16_load_weights();
    let mut b = ld.encode().unwrap().0;
    assert_eq!(b[39], 0x80);
    b[39] = 0; // M is a column count, 1..=128
    assert_eq!(field_error(b).0, 39);
    b[39] = 0x40; // and it equals the stationary operand's elements
    assert!(matches!(
        NeuronInstr::decode(&Record(b)),
        Err(NeuronError::Operands { .. })
    ));
    let mut b = ld.encode().unwrap().0;
    b[46] = 1;
    assert_eq!(field_error(b).0, 44);
    let mut b = ld.encode().unwrap().0;
    b[33] = 1; // fp16 has no pass 1
    assert_eq!(field_error(b).0, 33);
}

/// A single-pass fp16 LDWEIGHTS of a 128 × 128 tile at SBUF 0x2fe, its columns walked
/// backwards (the form real NEFFs use).
fn fp16_load_weights() -> NeuronInstr {
    NeuronInstr::LoadWeights {
        sync: Sync::NONE,
        src: NeuronAp {
            addr: 0x2fe,
            steps: [-1, 0, 0],
            nums: [128, 1, 1],
        },
        dtype: Dtype::F16,
        fp32_mode: 0,
        transpose: false,
        k: 128,
        m: 0x80,
        tail: PeTail::Trn2,
    }
}

#[test]
fn load_weights_reverses_its_columns_and_sets_the_pass() {
    let Some(Ok(Instruction::MatmulLoadStationary {
        stationary,
        reversed,
        pass,
    })) = fp16_load_weights().model()
    else {
        panic!()
    };
    assert!(reversed);
    assert_eq!(pass, MatmulPass::Single);
    assert_eq!((stationary.offset(), stationary.partitions()), (0x2fe, 128));
    assert_eq!(stationary.elements_per_partition(), 128);
}

#[test]
fn multiply_moving_must_follow_its_load_stationary() {
    let ld = fp16_load_weights().encode().unwrap();
    let mm = NeuronInstr::Matmul {
        sync: Sync {
            waits: [None, None],
            signal: Some(SemaphoreId(5)),
        },
        src: NeuronAp::contiguous(0, 64),
        dtype: Dtype::F16,
        fp32_mode: 0,
        transpose: false,
        k: 128,
        m: 0x80,
        acc_flags: 1,
        tail: 0x0F0F,
        byte46: 0,
        dst: NeuronAp::contiguous(0x0200_0000, 64),
    }
    .encode()
    .unwrap();
    check_pe_pair(Some(&ld), &mm).unwrap();
    // A MATMUL may follow a MATMUL that keeps the stationary operand (compiler 2.23).
    check_pe_pair(Some(&mm), &mm).unwrap();
    let e = check_pe_pair(Some(&Record(sample_add())), &mm).unwrap_err();
    assert!(e.to_string().contains("not preceded"), "{e}");
    let mut other = ld;
    other.0[34] = 1;
    let e = check_pe_pair(Some(&other), &mm).unwrap_err();
    assert!(e.to_string().contains("transpose mode"), "{e}");
}

#[test]
fn new_operand_forms_map_onto_the_model() {
    // ACTIVATE EXP reading its bias per partition.
    let n = NeuronInstr::decode(&samples()[2]).unwrap();
    let NeuronInstr::Activate { func, .. } = n else {
        panic!()
    };
    assert_eq!(func, ActFunc::Exp);
    let Some(Ok(Instruction::Activation { bias, scale, .. })) = n.model() else {
        panic!()
    };
    assert!(matches!(bias, Some(ScalarOperand::Vector(b)) if b.offset() == 0x6010));
    assert_eq!(scale, ScalarOperand::Imm(1.0));
    // TENSOR_SCALAR: a pointer operand is a per-partition vector, BYPASS ends the chain.
    let Some(Ok(Instruction::TensorScalar {
        op0, operand0, op1, ..
    })) = NeuronInstr::decode(&samples()[5]).unwrap().model()
    else {
        panic!()
    };
    assert_eq!((op0, op1), (AluOp::Multiply, AluOp::Bypass));
    assert!(matches!(operand0, ScalarOperand::Vector(v) if v.offset() == 0x8040));
    // A start partition in bits 18–24.
    let mut b = samples()[6].0;
    b[44..48].copy_from_slice(&(0x4170u32 | 64 << 18).to_le_bytes());
    b[34] = 64;
    let Some(Ok(Instruction::TensorCopy { out, .. })) =
        NeuronInstr::decode(&Record(b)).unwrap().model()
    else {
        panic!()
    };
    assert_eq!((out.start_partition(), out.offset()), (64, 0x4170));
    // DMA_DIRECT2D has semantics of its own.
    let d = NeuronInstr::decode(&samples()[19]).unwrap();
    assert!(d.model().is_none());
    let NeuronInstr::DmaDirect2d {
        src, src_pattern, ..
    } = d
    else {
        panic!()
    };
    assert_eq!(
        src,
        DmaAddr {
            offset: 0,
            index: 0,
            kind: DmaAddrKind::Table
        }
    );
    assert_eq!(
        src_pattern,
        DmaPattern {
            steps: [2048, 1],
            nums: [128, 1]
        }
    );
    // The trigger keeps its queue-set name.
    let t = NeuronInstr::decode(&samples()[16]).unwrap();
    assert!(matches!(
        t.model(),
        Some(Ok(Instruction::PseudoDmaTrigger { queue, block_id: 0 })) if queue == QueueSetName::new("qPoolIO0").unwrap()
    ));
}
