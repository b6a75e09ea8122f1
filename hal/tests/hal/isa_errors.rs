//! Exact byte positions and the decoder's rejection of malformed records.

use nrt_hal::isa::{
    decode_stream, encode_stream, records, AccessPattern, ApError, DecodeError, Dim, EncodeError,
    Instruction, NameError, QueueSetName, Record, ScalarOperand, ShortOperand, StreamError,
    REAL_NEFF_OPCODES, RECORD_SIZE,
};
use nrt_hal::{DeviceAddr, Dtype, EventId, SemaphoreId};

use nrt_hal::testkit::ops::sbuf as ap;

fn copy_record() -> Record {
    Instruction::TensorCopy {
        out: ap(100, 28, 0x40, Dtype::F32, 16),
        input: ap(0, 28, 0, Dtype::Bf16, 16),
    }
    .encode()
    .unwrap()
}

fn decode(r: &Record) -> Result<Instruction, DecodeError> {
    Instruction::decode(r)
}

#[test]
fn dma_trigger_bytes_are_pinned() {
    // Built by hand: opcode 0xC1, length 0x10, name at byte 12, block id (LE u32) at 48.
    let mut b = [0u8; 64];
    b[0] = 0xC1;
    b[1] = 0x10;
    b[12..20].copy_from_slice(b"qSyncIO0");
    b[48..52].copy_from_slice(&0x0102_0304u32.to_le_bytes());
    let instr = decode(&Record(b)).unwrap();
    assert_eq!(
        instr,
        Instruction::PseudoDmaTrigger {
            queue: QueueSetName::new("qSyncIO0").unwrap(),
            block_id: 0x0102_0304,
        }
    );
    assert_eq!(instr.encode().unwrap().0, b);
    assert_eq!(b[48], 0x04, "little-endian block id");

    // A 36-byte name fills the field with no terminator.
    let long = "q".repeat(36);
    let rec = Instruction::PseudoDmaTrigger {
        queue: QueueSetName::new(&long).unwrap(),
        block_id: 9,
    }
    .encode()
    .unwrap();
    assert_eq!(&rec.0[12..48], long.as_bytes());
    assert_eq!(rec.0[48], 9);
    assert_eq!(
        QueueSetName::new(&"q".repeat(37)),
        Err(NameError::TooLong { len: 37, max: 36 })
    );
}

#[test]
fn dma_trigger_ignores_unknown_bytes_of_the_real_record() {
    let mut b = Instruction::PseudoDmaTrigger {
        queue: QueueSetName::new("qPoolIO").unwrap(),
        block_id: 3,
    }
    .encode()
    .unwrap()
    .0;
    b[5] = 0x77; // before the name
    b[12 + 8] = b'x'; // after the NUL terminator
    b[60] = 0xAB; // after the block id
    let instr = decode(&Record(b)).unwrap();
    assert_eq!(
        instr,
        Instruction::PseudoDmaTrigger {
            queue: QueueSetName::new("qPoolIO").unwrap(),
            block_id: 3,
        }
    );
}

#[test]
fn dma_trigger_rejects_bad_names() {
    let mut b = Record::new(0xC1).0;
    assert_eq!(
        decode(&Record(b)),
        Err(DecodeError::BadQueueName(NameError::Empty))
    );
    b[12..16].copy_from_slice(b"ab\x80c");
    assert_eq!(
        decode(&Record(b)),
        Err(DecodeError::BadQueueName(NameError::BadChar {
            pos: 2,
            byte: 0x80
        }))
    );
    b[12..16].copy_from_slice(b"a bc");
    assert!(matches!(
        decode(&Record(b)),
        Err(DecodeError::BadQueueName(NameError::BadChar {
            pos: 1,
            byte: b' '
        }))
    ));
}

#[test]
fn write_bytes_are_pinned() {
    let mut b = [0u8; 64];
    b[0] = 0xD0;
    b[1] = 0x10;
    b[8..16].copy_from_slice(&0x0000_0020_0000_1000u64.to_le_bytes());
    b[16..20].copy_from_slice(&0xDEAD_BEEFu32.to_le_bytes());
    let w = Instruction::Write {
        addr: DeviceAddr::new(0x0000_0020_0000_1000),
        value: 0xDEAD_BEEF,
    };
    assert_eq!(w.encode().unwrap().0, b);
    assert_eq!(decode(&Record(b)).unwrap(), w);
}

#[test]
fn sync_and_pseudo_bytes_are_pinned() {
    let r = Instruction::SemWait {
        sem: SemaphoreId(0x1234),
        cmp: nrt_hal::isa::SemCmp::Ne,
        value: -2,
    }
    .encode()
    .unwrap();
    assert_eq!(
        &r.0[..12],
        &[0xD1, 0x10, 0x34, 0x12, 5, 0, 0, 0, 0xFE, 0xFF, 0xFF, 0xFF]
    );
    let r = Instruction::PseudoWriteVar {
        var_id: 7,
        offset: 0x100,
        value: 1,
    }
    .encode()
    .unwrap();
    assert_eq!(r.0[0], 0xF0);
    assert_eq!(&r.0[4..8], &7u32.to_le_bytes());
    assert_eq!(&r.0[8..16], &0x100u64.to_le_bytes());
    assert_eq!(&r.0[16..20], &1u32.to_le_bytes());
    let r = Instruction::PseudoBarrier {
        sem: SemaphoreId(9),
        count: 4,
    }
    .encode()
    .unwrap();
    assert_eq!(&r.0[..12], &[0xF1, 0x10, 9, 0, 0, 0, 0, 0, 4, 0, 0, 0]);
}

#[test]
fn access_pattern_bytes_are_pinned() {
    let r = copy_record();
    // AP0 (out) at 8: word = offset 0x40 | SBUF << 18 | f32 (0xA) << 20 | start 100 << 25.
    let word = 0x40u32 | 0xA << 20 | 100 << 25;
    assert_eq!(&r.0[8..12], &word.to_le_bytes());
    assert_eq!(r.0[12], 28, "partition count");
    assert_eq!(r.0[13], 1, "ndims");
    assert_eq!(&r.0[14..18], &[1, 0, 16, 0], "dim 0 = [1,16]");
    assert_eq!(
        &r.0[18..30],
        &[0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0],
        "unused [0,1]"
    );
    // AP1 (in) at 30: bf16 (6).
    assert_eq!(&r.0[30..34], &(6u32 << 20).to_le_bytes());
}

#[test]
fn unknown_and_real_opcodes_are_reported() {
    for &op in &REAL_NEFF_OPCODES {
        if op == 0xB1 || op == 0xC1 {
            continue;
        }
        let err = decode(&Record::new(op)).unwrap_err();
        assert_eq!(err, DecodeError::UnknownOpcode(op));
        assert!(err.to_string().contains("unsupported"), "{err}");
        assert!(err.to_string().contains("real Neuron instruction"), "{err}");
    }
    let err = decode(&Record::new(0x07)).unwrap_err();
    assert_eq!(err, DecodeError::UnknownOpcode(0x07));
    assert!(err.to_string().starts_with("unknown opcode 0x07"), "{err}");
    assert_eq!(
        decode(&Record::new(0xFF)),
        Err(DecodeError::UnknownOpcode(0xFF))
    );
}

#[test]
fn length_byte_must_be_0x10() {
    let mut r = Instruction::End.encode().unwrap();
    r.0[1] = 0x11;
    assert_eq!(decode(&r), Err(DecodeError::BadLengthByte(0x11)));
    let mut r = copy_record();
    r.0[1] = 0;
    assert_eq!(decode(&r), Err(DecodeError::BadLengthByte(0)));
}

#[test]
fn reserved_bytes_must_be_zero() {
    let cases: Vec<(Record, usize)> = vec![
        (Instruction::End.encode().unwrap(), 63),
        (Instruction::StreamHeader.encode().unwrap(), 2),
        (
            Instruction::Write {
                addr: DeviceAddr::new(4),
                value: 0,
            }
            .encode()
            .unwrap(),
            20,
        ),
        (
            Instruction::EventSet {
                event: EventId(1),
                value: true,
            }
            .encode()
            .unwrap(),
            5,
        ),
        (copy_record(), 52),
        (copy_record(), 2),
        (copy_record(), 63),
        (
            Instruction::PseudoMarker {
                id: 1,
                label: nrt_hal::isa::MarkerLabel::new("ab").unwrap(),
            }
            .encode()
            .unwrap(),
            11, // after the label's NUL terminator
        ),
    ];
    for (mut r, at) in cases {
        r.0[at] = 0x5A;
        assert_eq!(
            decode(&r),
            Err(DecodeError::ReservedNonZero {
                offset: at,
                value: 0x5A
            }),
            "opcode {:#x} byte {at}",
            r.0[0]
        );
    }
    let mut r = copy_record();
    r.0[3] = 0x80;
    assert_eq!(
        decode(&r),
        Err(DecodeError::ReservedFlagBits {
            offset: 3,
            bits: 0x80
        })
    );
}

#[test]
fn bad_access_patterns_are_rejected() {
    let set_word = |r: &mut Record, at: usize, f: &dyn Fn(u32) -> u32| {
        let w = nrt_hal::le::u32_at(&r.0, at);
        r.0[at..at + 4].copy_from_slice(&f(w).to_le_bytes());
    };
    let bad = |offset, reason| Err(DecodeError::BadAccessPattern { offset, reason });

    // dtype code 0 and 16 in the 5-bit field.
    let mut r = copy_record();
    set_word(&mut r, 8, &|w| w & !(0x1F << 20));
    assert_eq!(decode(&r), bad(8, ApError::BadDtype(0)));
    let mut r = copy_record();
    set_word(&mut r, 30, &|w| (w & !(0x1F << 20)) | 16 << 20);
    assert_eq!(decode(&r), bad(30, ApError::BadDtype(16)));

    // memory space 2.
    let mut r = copy_record();
    set_word(&mut r, 8, &|w| w | 2 << 18);
    assert_eq!(decode(&r), bad(8, ApError::BadMemSpace(2)));

    // start 100 + 29 partitions > 128.
    let mut r = copy_record();
    r.0[12] = 29;
    assert_eq!(
        decode(&r),
        bad(
            8,
            ApError::PartitionOverflow {
                start: 100,
                count: 29
            }
        )
    );
    r.0[12] = 0;
    assert_eq!(decode(&r), bad(8, ApError::BadPartitionCount(0)));

    // ndims 0 and 5.
    let mut r = copy_record();
    r.0[13] = 0;
    assert_eq!(decode(&r), bad(8, ApError::BadNdims(0)));
    r.0[13] = 5;
    assert_eq!(decode(&r), bad(8, ApError::BadNdims(5)));

    // an unused dimension not encoded as [0,1].
    let mut r = copy_record();
    r.0[24..26].copy_from_slice(&2u16.to_le_bytes()); // dim 2 count (dims at 14, 18, 22)
    assert_eq!(
        decode(&r),
        bad(
            8,
            ApError::NonCanonicalUnusedDim {
                dim: 2,
                step: 0,
                count: 2
            }
        )
    );

    // a used dimension with count 0.
    let mut r = copy_record();
    r.0[16..18].copy_from_slice(&0u16.to_le_bytes());
    assert_eq!(decode(&r), bad(8, ApError::ZeroCount { dim: 0 }));

    // a short operand (tensor_tensor in1 at 52) with a bad dtype.
    let mut r = Instruction::TensorTensor {
        op: nrt_hal::isa::AluOp::Add,
        out: ap(0, 4, 0, Dtype::F32, 8),
        in0: ap(0, 4, 0x100, Dtype::F32, 8),
        in1: ShortOperand::sbuf(0, 0x200, Dtype::F32).unwrap().into(),
    }
    .encode()
    .unwrap();
    set_word(&mut r, 52, &|w| w | 0x1F << 20);
    assert_eq!(decode(&r), bad(52, ApError::BadDtype(31)));

    // constructors refuse what the decoder refuses.
    let base = ShortOperand::sbuf(120, 0, Dtype::F32).unwrap();
    assert_eq!(
        AccessPattern::contiguous(base, 9, 1),
        Err(ApError::PartitionOverflow {
            start: 120,
            count: 9
        })
    );
    assert_eq!(
        ShortOperand::sbuf(128, 0, Dtype::F32),
        Err(ApError::BadStartPartition(128))
    );
    assert_eq!(
        ShortOperand::psum(0, 1 << 18, Dtype::F32),
        Err(ApError::OffsetTooLarge(1 << 18))
    );
    assert_eq!(
        AccessPattern::new(base, 1, &[Dim::new(1, 1); 5]),
        Err(ApError::BadNdims(5))
    );
}

#[test]
fn bad_enums_and_ranges_are_rejected() {
    let mut r = Instruction::SemWait {
        sem: SemaphoreId(1),
        cmp: nrt_hal::isa::SemCmp::Ge,
        value: 1,
    }
    .encode()
    .unwrap();
    r.0[4] = 6;
    let err = decode(&r).unwrap_err();
    assert_eq!(
        err,
        DecodeError::BadEnum {
            field: "semaphore compare",
            offset: 4,
            value: 6
        }
    );
    assert_eq!(
        err.to_string(),
        "semaphore compare code 6 at byte 4 is not defined"
    );

    let mut r = Instruction::SemSignal {
        sem: SemaphoreId(1),
        op: nrt_hal::isa::SemOp::Inc,
        value: 1,
    }
    .encode()
    .unwrap();
    r.0[4] = 3;
    assert!(matches!(
        decode(&r),
        Err(DecodeError::BadEnum {
            field: "semaphore op",
            value: 3,
            ..
        })
    ));

    let act = Instruction::Activation {
        func: nrt_hal::isa::ActivationFunc::Relu,
        out: ap(0, 4, 0, Dtype::F32, 8),
        input: ap(0, 4, 0x100, Dtype::F32, 8),
        scale: ScalarOperand::Imm(1.0),
        bias: None,
        reduce: nrt_hal::isa::ReduceCmd::Idle,
    };
    let mut r = act.encode().unwrap();
    r.0[2] = 200;
    assert!(matches!(
        decode(&r),
        Err(DecodeError::BadEnum {
            field: "activation function",
            offset: 2,
            value: 200
        })
    ));
    let mut r = act.encode().unwrap();
    r.0[4] = 5;
    assert!(matches!(
        decode(&r),
        Err(DecodeError::BadEnum {
            field: "reduce command",
            ..
        })
    ));

    let mut r = Instruction::EventWait {
        event: EventId(3),
        value: false,
    }
    .encode()
    .unwrap();
    r.0[8] = 2;
    assert!(matches!(
        decode(&r),
        Err(DecodeError::FieldOutOfRange {
            field: "event value",
            offset: 8,
            value: 2,
            ..
        })
    ));

    let reduce = Instruction::TensorReduce {
        op: nrt_hal::isa::AluOp::Max,
        out: ap(0, 4, 0, Dtype::F32, 1),
        input: ap(0, 4, 0x100, Dtype::F32, 8),
        axes: 1,
        negate: false,
    };
    let mut r = reduce.encode().unwrap();
    r.0[2] = nrt_hal::isa::AluOp::Divide.code();
    assert_eq!(
        decode(&r),
        Err(DecodeError::IllegalReduction(nrt_hal::isa::AluOp::Divide))
    );
    let mut r = reduce.encode().unwrap();
    r.0[4] = 0;
    assert!(matches!(
        decode(&r),
        Err(DecodeError::FieldOutOfRange {
            field: "tensor_reduce axes",
            ..
        })
    ));
    let mut r = reduce.encode().unwrap();
    r.0[2] = 99;
    assert!(matches!(
        decode(&r),
        Err(DecodeError::BadEnum {
            field: "ALU op",
            value: 99,
            ..
        })
    ));
}

#[test]
fn encoder_rejects_fields_that_do_not_fit() {
    let e = Instruction::SemWait {
        sem: SemaphoreId(0x1_0000),
        cmp: nrt_hal::isa::SemCmp::Ge,
        value: 0,
    }
    .encode()
    .unwrap_err();
    assert!(matches!(
        e,
        EncodeError::FieldOutOfRange {
            field: "semaphore",
            value: 0x1_0000,
            ..
        }
    ));
    let e = Instruction::TensorReduce {
        op: nrt_hal::isa::AluOp::Pow,
        out: ap(0, 1, 0, Dtype::F32, 1),
        input: ap(0, 1, 0, Dtype::F32, 1),
        axes: 1,
        negate: false,
    }
    .encode()
    .unwrap_err();
    assert_eq!(e, EncodeError::IllegalReduction(nrt_hal::isa::AluOp::Pow));
    let e = encode_stream(&[
        Instruction::StreamHeader,
        Instruction::EventSet {
            event: EventId(70_000),
            value: true,
        },
    ])
    .unwrap_err();
    assert_eq!(e.index, 1);
    assert!(
        e.to_string().starts_with("instruction 1: event = 70000"),
        "{e}"
    );
}

#[test]
fn streams_split_on_64_byte_boundaries() {
    let bytes = encode_stream(&[
        Instruction::StreamHeader,
        Instruction::Nop,
        Instruction::End,
    ])
    .unwrap();
    assert_eq!(bytes.len(), 3 * RECORD_SIZE);
    assert_eq!(
        decode_stream(&bytes).unwrap(),
        [
            Instruction::StreamHeader,
            Instruction::Nop,
            Instruction::End
        ]
    );
    assert_eq!(records(&bytes).unwrap().len(), 3);

    assert_eq!(
        decode_stream(&bytes[..100]),
        Err(StreamError::Length { len: 100 })
    );
    assert!(records(&bytes[..1]).is_err());

    let mut bad = bytes.clone();
    bad[2 * RECORD_SIZE] = 0x41;
    let err = decode_stream(&bad).unwrap_err();
    assert_eq!(
        err,
        StreamError::Record {
            index: 2,
            source: DecodeError::UnknownOpcode(0x41)
        }
    );
    assert!(err
        .to_string()
        .starts_with("record 2 (byte 0x80): unsupported opcode 0x41"));
    // The splitter still yields the undecodable record.
    let raw: Vec<Record> = records(&bad).unwrap().collect();
    assert_eq!(raw[2].opcode(), 0x41);
}
