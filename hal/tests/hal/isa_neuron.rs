//! The Neuron encoding: every opcode's every field round-trips (encode → decode and
//! decode → encode), the decoder is total, and records with values the encoding is not known
//! to use are rejected naming the opcode, byte and field.

use nrt_hal::isa::neuron::{
    check_pe_pair, decode_any, ActForm, Detail, Encoding, NeuronError, NeuronInstr, NeuronOpcode,
    PeTail, Sync, SyncWait,
};
use nrt_hal::isa::{
    AccessPattern, ActivationFunc, AluOp, Dim, Instruction, MatmulPass, MemSpace, QueueSetName,
    Record, ReduceCmd, ScalarOperand, ShortOperand, TensorOperand,
};
use nrt_hal::{Dtype, SemaphoreId};
use proptest::prelude::*;
use proptest::sample::select;

/// Counts of a pattern in record order (innermost first).
type Counts = Vec<u16>;

fn arb_counts(ndims: usize) -> impl Strategy<Value = Counts> {
    prop::collection::vec(1u16..=40, ndims)
}

/// An AP with `counts` (record order), random steps and offset, from partition 0.
fn arb_ap(
    counts: Counts,
    space: MemSpace,
    dtype: Dtype,
    parts: u32,
) -> impl Strategy<Value = AccessPattern> {
    let max = match space {
        MemSpace::Sbuf => (1u32 << 18) - 1,
        MemSpace::Psum => (1u32 << 14) - 1,
    };
    (0..=max, prop::collection::vec(any::<i16>(), counts.len())).prop_map(move |(off, steps)| {
        let mut dims: Vec<Dim> = steps
            .iter()
            .zip(&counts)
            .map(|(&s, &c)| Dim::new(s, c))
            .collect();
        dims.reverse();
        AccessPattern::new(
            ShortOperand::new(space, 0, off, dtype).unwrap(),
            parts,
            &dims,
        )
        .unwrap()
    })
}

fn arb_float() -> impl Strategy<Value = Dtype> {
    select(vec![Dtype::F16, Dtype::F32])
}

fn arb_wait() -> impl Strategy<Value = Option<SyncWait>> {
    prop::option::of((0u32..256, any::<u32>()).prop_map(|(s, v)| SyncWait {
        sem: SemaphoreId(s),
        value: v,
    }))
}

fn arb_sync(op: NeuronOpcode) -> impl Strategy<Value = Sync> {
    let rule = op.sync_rule();
    (arb_wait(), prop::option::of(0u32..256), arb_wait()).prop_map(move |(w, sig, w2)| {
        let first = if rule.wait_required {
            Some(w.unwrap_or(SyncWait {
                sem: SemaphoreId(8),
                value: 16,
            }))
        } else if rule.wait {
            w
        } else {
            None
        };
        let second = if op == NeuronOpcode::Wait {
            w2.map(|x| SyncWait {
                value: x.value & 0xFFFF,
                ..x
            })
        } else {
            None
        };
        Sync {
            waits: [first, second],
            signal: if rule.update {
                sig.map(SemaphoreId)
            } else {
                None
            },
        }
    })
}

fn simple(op: NeuronOpcode, instr: Instruction) -> BoxedStrategy<NeuronInstr> {
    arb_sync(op)
        .prop_map(move |sync| NeuronInstr {
            opcode: op,
            sync,
            instr: instr.clone(),
            detail: Detail::None,
        })
        .boxed()
}

fn with_sync(
    op: NeuronOpcode,
    body: impl Strategy<Value = (Instruction, Detail)> + 'static,
) -> BoxedStrategy<NeuronInstr> {
    (arb_sync(op), body)
        .prop_map(move |(sync, (instr, detail))| NeuronInstr {
            opcode: op,
            sync,
            instr,
            detail,
        })
        .boxed()
}

fn arb_load_stationary() -> BoxedStrategy<NeuronInstr> {
    let body = (
        arb_float(),
        1u32..=128,
        arb_counts(3),
        any::<bool>(),
        select(PeTail::ALL.to_vec()),
        any::<bool>(),
    )
        .prop_flat_map(|(dt, k, counts, transpose, tail, second)| {
            let pass = match (dt, second) {
                (Dtype::F16, _) => MatmulPass::Single,
                (_, false) => MatmulPass::First,
                (_, true) => MatmulPass::Second,
            };
            arb_ap(counts, MemSpace::Sbuf, dt, k).prop_map(move |stationary| {
                (
                    Instruction::MatmulLoadStationary {
                        stationary,
                        reversed: true,
                        pass,
                    },
                    Detail::LoadStationary { transpose, tail },
                )
            })
        });
    with_sync(NeuronOpcode::LoadStationary, body)
}

fn arb_multiply_moving() -> BoxedStrategy<NeuronInstr> {
    let body = (
        arb_float(),
        1u32..=128,
        arb_counts(3),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_flat_map(|(dt, k, counts, transpose, acc, last, mode2, trn1)| {
            let out_dt = if transpose { dt } else { Dtype::F32 };
            let accumulate = acc && !transpose;
            let mode = match dt {
                Dtype::F16 => 0,
                _ if mode2 => 2,
                _ => 3,
            };
            (
                arb_ap(counts.clone(), MemSpace::Sbuf, dt, k),
                arb_ap(counts, MemSpace::Psum, out_dt, 128),
            )
                .prop_map(move |(moving, dst)| {
                    (
                        Instruction::MatmulMoving {
                            dst,
                            moving,
                            accumulate,
                        },
                        Detail::MultiplyMoving {
                            mode,
                            transpose,
                            last,
                            byte46: if trn1 { 0x10 } else { 0 },
                        },
                    )
                })
        });
    with_sync(NeuronOpcode::MultiplyMoving, body)
}

fn arb_activate() -> BoxedStrategy<NeuronInstr> {
    let body = (
        arb_float(),
        arb_float(),
        arb_float(),
        1u32..=128,
        arb_counts(3),
        any::<bool>(),
        0u32..(1 << 18),
        nrt_hal::testkit::strategies::space(),
        nrt_hal::testkit::strategies::space(),
    )
        .prop_flat_map(|(din, dout, dbias, p, counts, has_bias, boff, sin, sout)| {
            (
                arb_ap(counts.clone(), sin, din, p),
                arb_ap(counts, sout, dout, p),
            )
                .prop_map(move |(input, out)| {
                    let (bias, form) = if has_bias {
                        (
                            Some(ShortOperand::sbuf(0, boff, dbias).unwrap()),
                            ActForm::Bias,
                        )
                    } else {
                        (None, ActForm::NoBias { bias_dtype: dbias })
                    };
                    (
                        Instruction::Activation {
                            func: ActivationFunc::Identity,
                            out,
                            input,
                            scale: ScalarOperand::Imm(1.0),
                            bias,
                            reduce: ReduceCmd::Idle,
                        },
                        Detail::Activate(form),
                    )
                })
        });
    with_sync(NeuronOpcode::Activate, body)
}

fn arb_tensor_tensor() -> BoxedStrategy<NeuronInstr> {
    let body = (
        arb_float(),
        arb_float(),
        arb_float(),
        1u32..=128,
        arb_counts(3),
        select(vec![AluOp::Add, AluOp::Max]),
        nrt_hal::testkit::strategies::space(),
        nrt_hal::testkit::strategies::space(),
        nrt_hal::testkit::strategies::space(),
    )
        .prop_flat_map(|(d0, d1, dout, p, counts, op, s0, s1, so)| {
            (
                arb_ap(counts.clone(), s0, d0, p),
                arb_ap(counts.clone(), s1, d1, p),
                arb_ap(counts, so, dout, p),
            )
                .prop_map(move |(in0, in1, out)| {
                    (
                        Instruction::TensorTensor {
                            op,
                            out,
                            in0,
                            in1: TensorOperand::Pattern(in1),
                        },
                        Detail::None,
                    )
                })
        });
    with_sync(NeuronOpcode::TensorTensor, body)
}

fn arb_tensor_reduce() -> BoxedStrategy<NeuronInstr> {
    let body = (
        arb_float(),
        1u32..=128,
        arb_counts(4),
        1u8..=2,
        select(vec![AluOp::Add, AluOp::Max]),
        nrt_hal::testkit::strategies::space(),
        nrt_hal::testkit::strategies::space(),
    )
        .prop_flat_map(|(dt, p, mut counts, axes, op, si, so)| {
            counts[0] = counts[0].max(2);
            let kept: u16 = counts[usize::from(axes)..].iter().product::<u16>().max(1);
            (
                arb_ap(counts, si, dt, p),
                arb_ap(vec![kept, 1, 1, 1], so, dt, p),
            )
                .prop_map(move |(input, out)| {
                    (
                        Instruction::TensorReduce {
                            op,
                            out,
                            input,
                            axes,
                            negate: false,
                        },
                        Detail::None,
                    )
                })
        });
    with_sync(NeuronOpcode::TensorReduce, body)
}

fn arb_copy() -> BoxedStrategy<NeuronInstr> {
    let types = vec![
        (Dtype::F16, Dtype::F16),
        (Dtype::F32, Dtype::F32),
        (Dtype::I32, Dtype::I32),
        (Dtype::F32, Dtype::F16),
        (Dtype::F16, Dtype::F32),
    ];
    let body = (
        select(types),
        1u32..=128,
        arb_counts(4),
        nrt_hal::testkit::strategies::space(),
        nrt_hal::testkit::strategies::space(),
    )
        .prop_flat_map(|((din, dout), p, counts, si, so)| {
            (
                arb_ap(counts.clone(), si, din, p),
                arb_ap(counts, so, dout, p),
            )
                .prop_map(|(input, out)| (Instruction::TensorCopy { out, input }, Detail::None))
        });
    (arb_sync(NeuronOpcode::Copy), body)
        .prop_map(|(sync, (instr, detail))| {
            let opcode = match &instr {
                Instruction::TensorCopy { out, input } if out.dtype() == input.dtype() => {
                    NeuronOpcode::Copy
                }
                _ => NeuronOpcode::ConvertCopy,
            };
            NeuronInstr {
                opcode,
                sync,
                instr,
                detail,
            }
        })
        .boxed()
}

fn arb_memset() -> BoxedStrategy<NeuronInstr> {
    let body = (
        arb_float(),
        1u32..=128,
        arb_counts(4),
        nrt_hal::testkit::strategies::space(),
    )
        .prop_flat_map(|(dt, p, counts, s)| {
            arb_ap(counts, s, dt, p)
                .prop_map(|out| (Instruction::Memset { out, value: 0.0 }, Detail::None))
        });
    with_sync(NeuronOpcode::Memset, body)
}

fn arb_trigger() -> BoxedStrategy<NeuronInstr> {
    ("[A-Za-z0-9_]{1,32}", any::<u32>())
        .prop_flat_map(|(name, id)| {
            simple(
                NeuronOpcode::DmaTrigger,
                Instruction::PseudoDmaTrigger {
                    queue: QueueSetName::new(&name).unwrap(),
                    block_id: id,
                },
            )
        })
        .boxed()
}

fn arb_instr() -> BoxedStrategy<NeuronInstr> {
    prop_oneof![
        simple(NeuronOpcode::StreamHeader, Instruction::StreamHeader),
        simple(NeuronOpcode::Preamble, Instruction::Nop),
        simple(NeuronOpcode::ActTableLoad, Instruction::Nop),
        simple(NeuronOpcode::Wait, Instruction::Nop),
        simple(NeuronOpcode::FinalWait, Instruction::Nop),
        arb_trigger(),
        arb_load_stationary(),
        arb_multiply_moving(),
        arb_activate(),
        arb_tensor_tensor(),
        arb_tensor_reduce(),
        arb_copy(),
        arb_memset(),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn every_field_round_trips(n in arb_instr()) {
        let rec = n.encode().unwrap();
        let back = NeuronInstr::decode(&rec).unwrap();
        prop_assert_eq!(&back, &n);
        prop_assert_eq!(back.encode().unwrap(), rec);
        let any = decode_any(&rec).unwrap();
        prop_assert_eq!(any.encoding == Encoding::Neuron, n.opcode.is_neuron_only());
    }

    #[test]
    fn a_changed_byte_decodes_canonically_or_is_rejected(
        n in arb_instr(), at in 1usize..64, v in any::<u8>()
    ) {
        let mut rec = n.encode().unwrap();
        rec.0[at] = v;
        if let Ok(d) = NeuronInstr::decode(&rec) {
            prop_assert_eq!(d.encode().unwrap(), rec);
        }
    }

    #[test]
    fn decoding_is_total(bytes in prop::collection::vec(any::<u8>(), 64)) {
        let mut b = [0u8; 64];
        b.copy_from_slice(&bytes);
        b[0] = *[0x01u8, 0x02, 0x21, 0x23, 0x41, 0x42, 0x46, 0x47, 0x49, 0xA0, 0xA4, 0xB1, 0xC1, 0xCC]
            .get(usize::from(bytes[0]) % 14)
            .unwrap();
        b[1] = 0x10;
        let _ = NeuronInstr::decode(&Record(b));
        let _ = decode_any(&Record(b));
    }
}

/// The real sample's DVE record 2 (vector add, trn2), byte for byte.
const SAMPLE_ADD: [u8; 64] = [
    0x41, 0x10, 0x00, 0x00, 0x05, 0x09, 0x13, 0x06, 0x10, 0x00, 0x00, 0x00, 0xAA, 0x0A, 0x04, 0x80,
    0x78, 0x41, 0x03, 0x00, 0x01, 0x00, 0x01, 0x00, 0x01, 0x00, 0xE8, 0x03, 0x01, 0x00, 0x01, 0x00,
    0x58, 0x70, 0x03, 0x00, 0x01, 0x00, 0x01, 0x00, 0x01, 0x00, 0xE8, 0x03, 0x01, 0x00, 0x01, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x01, 0x00, 0xE8, 0x03, 0x01, 0x00, 0x01, 0x00,
];

#[test]
fn the_sample_tensor_tensor_decodes_to_an_fp32_add() {
    let n = NeuronInstr::decode(&Record(SAMPLE_ADD)).unwrap();
    assert_eq!(
        n.sync,
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
    let Instruction::TensorTensor { op, out, in0, in1 } = &n.instr else {
        panic!("{:?}", n.instr)
    };
    assert_eq!(*op, AluOp::Add);
    assert_eq!(
        (in0.offset(), in0.partitions(), in0.elements_per_partition()),
        (213_368, 128, 1000)
    );
    assert_eq!(in1.resolve(in0).unwrap().offset(), 225_368);
    assert_eq!(out.offset(), 0);
    assert_eq!(in0.dtype(), Dtype::F32);
    assert_eq!(n.encode().unwrap(), Record(SAMPLE_ADD));
    let text = nrt_hal::isa::disassemble_record(&Record(SAMPLE_ADD));
    assert!(
        text.contains("tensor_tensor.add") && text.contains("wait sem9>=16 signal sem6"),
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
    let mut b = SAMPLE_ADD;
    b[14] = 0x05;
    let (at, msg) = field_error(b);
    assert_eq!(at, 14);
    assert!(
        msg.contains("0x41") && msg.contains("ALU op") && msg.contains("0x5"),
        "{msg}"
    );

    let mut b = SAMPLE_ADD;
    b[15] = 0;
    let (at, msg) = field_error(b);
    assert_eq!(at, 15);
    assert!(msg.contains("partitions"), "{msg}");
    b[15] = 129;
    assert_eq!(field_error(b).0, 15);

    // A bit in 18..=24 of an address word (a start partition?) is not guessed.
    let mut b = SAMPLE_ADD;
    b[18] |= 0x04;
    let (at, msg) = field_error(b);
    assert_eq!(at, 16);
    assert!(msg.contains("start partition"), "{msg}");

    let mut b = SAMPLE_ADD;
    b[12] = 0xA6; // bf16 in0: not a code the reference establishes
    assert_eq!(field_error(b).0, 12);

    let mut b = SAMPLE_ADD;
    b[4] = 0x03;
    assert!(field_error(b).1.contains("wait mode"));

    let mut b = SAMPLE_ADD;
    b[6] = 0x12;
    assert!(field_error(b).1.contains("update mode"));

    let e = NeuronInstr::decode(&Record({
        let mut r = [0u8; 64];
        r[0] = 0x43;
        r[1] = 0x10;
        r
    }))
    .unwrap_err();
    assert_eq!(e, NeuronError::UnsupportedOpcode(0x43));
}

#[test]
fn memset_fill_bytes_and_pe_constants_are_checked() {
    let out = AccessPattern::new(
        ShortOperand::psum(0, 0, Dtype::F32).unwrap(),
        128,
        &[
            Dim::new(1, 1),
            Dim::new(1, 1),
            Dim::new(1, 1),
            Dim::new(1, 444),
        ],
    )
    .unwrap();
    let m = NeuronInstr {
        opcode: NeuronOpcode::Memset,
        sync: Sync::NONE,
        instr: Instruction::Memset { out, value: 0.0 },
        detail: Detail::None,
    };
    let mut b = m.encode().unwrap().0;
    assert_eq!(u32::from_le_bytes([b[28], b[29], b[30], b[31]]), 444);
    b[40] = 1;
    let (at, msg) = field_error(b);
    assert_eq!(at, 40);
    assert!(msg.contains("fill value"), "{msg}");

    let ld = fp16_load_stationary();
    let mut b = ld.encode().unwrap().0;
    assert_eq!(b[39], 0x80);
    b[39] = 0x40;
    assert_eq!(field_error(b).0, 39);
    let mut b = ld.encode().unwrap().0;
    b[46] = 1;
    assert_eq!(field_error(b).0, 44);
    let mut b = ld.encode().unwrap().0;
    b[33] = 1; // fp16 has no pass 1
    assert_eq!(field_error(b).0, 33);
}

/// A single-pass fp16 LoadStationary of a 128 × 128 tile at SBUF 0x200, its columns walked
/// backwards (the form real NEFFs use).
fn fp16_load_stationary() -> NeuronInstr {
    NeuronInstr {
        opcode: NeuronOpcode::LoadStationary,
        sync: Sync::NONE,
        instr: Instruction::MatmulLoadStationary {
            stationary: nrt_hal::testkit::ops::ap(
                MemSpace::Sbuf,
                0,
                128,
                0x200,
                Dtype::F16,
                &[Dim::new(0, 1), Dim::new(0, 1), Dim::new(-1, 128)],
            ),
            reversed: true,
            pass: MatmulPass::Single,
        },
        detail: Detail::LoadStationary {
            transpose: false,
            tail: PeTail::Trn2,
        },
    }
}

#[test]
fn multiply_moving_must_follow_its_load_stationary() {
    let ld = fp16_load_stationary().encode().unwrap();
    let mv_ap = AccessPattern::new(
        ShortOperand::sbuf(0, 0, Dtype::F16).unwrap(),
        128,
        &[Dim::new(0, 1), Dim::new(0, 1), Dim::new(1, 64)],
    )
    .unwrap();
    let dst = AccessPattern::new(
        ShortOperand::psum(0, 0, Dtype::F32).unwrap(),
        128,
        &[Dim::new(0, 1), Dim::new(0, 1), Dim::new(1, 64)],
    )
    .unwrap();
    let mm = NeuronInstr {
        opcode: NeuronOpcode::MultiplyMoving,
        sync: Sync {
            waits: [None, None],
            signal: Some(SemaphoreId(5)),
        },
        instr: Instruction::MatmulMoving {
            dst,
            moving: mv_ap,
            accumulate: false,
        },
        detail: Detail::MultiplyMoving {
            mode: 0,
            transpose: false,
            last: false,
            byte46: 0,
        },
    }
    .encode()
    .unwrap();
    check_pe_pair(Some(&ld), &mm).unwrap();
    let e = check_pe_pair(Some(&mm), &mm).unwrap_err();
    assert!(e.to_string().contains("not preceded"), "{e}");
    let mut other = ld;
    other.0[34] = 1;
    let e = check_pe_pair(Some(&other), &mm).unwrap_err();
    assert!(e.to_string().contains("transpose mode"), "{e}");
}
