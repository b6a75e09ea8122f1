//! Property tests of the instruction encoding: every opcode round-trips, the decoder is total,
//! and the decoder accepts only canonical encodings.

use nrt_hal::isa::{
    AccessPattern, ActivationFunc, AluOp, DmaEnd, DmaPattern, Instruction, IotaDim, IotaPattern,
    MarkerLabel, Opcode, QueueSetName, Record, ReduceCmd, ScalarOperand, SemCmp, SemOp,
    ShortOperand, RECORD_SIZE,
};
use nrt_hal::{DeviceAddr, EventId, SemaphoreId};
use proptest::prelude::*;
use proptest::sample::select;

use nrt_hal::testkit::strategies as st;

fn arb_short() -> impl Strategy<Value = ShortOperand> {
    st::short(0..=ShortOperand::MAX_OFFSET)
}

fn arb_ap() -> impl Strategy<Value = AccessPattern> {
    arb_ap_with_counts(1..=u16::MAX)
}

fn arb_ap_with_counts(
    counts: core::ops::RangeInclusive<u16>,
) -> impl Strategy<Value = AccessPattern> {
    st::ap(arb_short(), i16::MIN..=i16::MAX, counts)
}

fn arb_scalar() -> impl Strategy<Value = ScalarOperand> {
    // Every bit pattern, NaN payloads included: the encoding must preserve them.
    st::scalar(st::f32_bits(), arb_short())
}

fn arb_sem() -> impl Strategy<Value = SemaphoreId> {
    (0u32..=0xFFFF).prop_map(SemaphoreId)
}

fn arb_event() -> impl Strategy<Value = EventId> {
    (0u32..=0xFFFF).prop_map(EventId)
}

fn arb_alu() -> impl Strategy<Value = AluOp> {
    st::alu()
}

fn arb_iota_pattern() -> impl Strategy<Value = IotaPattern> {
    prop::collection::vec((any::<i32>(), 1u16..=u16::MAX), 1..=4).prop_map(|dims| {
        let dims: Vec<IotaDim> = dims.into_iter().map(|(s, c)| IotaDim::new(s, c)).collect();
        IotaPattern::new(&dims).expect("generated in range")
    })
}

/// Instructions with arbitrary valid fields for one opcode. The `match` is exhaustive, so a
/// new opcode cannot be added without a generator. Longer than the ~120-line guideline on
/// purpose: it is that table, one arm per opcode.
fn arb_instruction_for(op: Opcode) -> BoxedStrategy<Instruction> {
    use Instruction as I;
    match op {
        Opcode::StreamHeader => Just(I::StreamHeader).boxed(),
        Opcode::End => Just(I::End).boxed(),
        Opcode::Nop => Just(I::Nop).boxed(),
        Opcode::PseudoDmaTrigger => ("[!-~]{1,36}", any::<u32>())
            .prop_map(|(q, block_id)| I::PseudoDmaTrigger {
                queue: QueueSetName::new(&q).expect("regex yields valid names"),
                block_id,
            })
            .boxed(),
        Opcode::Write => (any::<u64>(), any::<u32>())
            .prop_map(|(a, value)| I::Write {
                addr: DeviceAddr::new(a),
                value,
            })
            .boxed(),
        Opcode::SemWait => (arb_sem(), select(SemCmp::ALL), any::<i32>())
            .prop_map(|(sem, cmp, value)| I::SemWait { sem, cmp, value })
            .boxed(),
        Opcode::SemSignal => (arb_sem(), select(SemOp::ALL), any::<i32>())
            .prop_map(|(sem, op, value)| I::SemSignal { sem, op, value })
            .boxed(),
        Opcode::EventSet => (arb_event(), any::<bool>())
            .prop_map(|(event, value)| I::EventSet { event, value })
            .boxed(),
        Opcode::EventWait => (arb_event(), any::<bool>())
            .prop_map(|(event, value)| I::EventWait { event, value })
            .boxed(),
        Opcode::DmaDirect => {
            let end = prop_oneof![
                any::<u64>().prop_map(|a| DmaEnd::Absolute(DeviceAddr::new(a))),
                (any::<u64>(), any::<u32>()).prop_map(|(a, offset)| DmaEnd::Slot {
                    slot: DeviceAddr::new(a),
                    offset
                }),
                (any::<u64>(), any::<u8>()).prop_map(|(a, register)| DmaEnd::SlotRegister {
                    slot: DeviceAddr::new(a),
                    register
                }),
            ];
            let pattern = (any::<[i32; 2]>(), [1u16..=u16::MAX, 1u16..=u16::MAX])
                .prop_map(|(steps, nums)| DmaPattern { steps, nums });
            let dtype = select(nrt_hal::Dtype::ALL.to_vec());
            (
                (arb_sem(), any::<u8>(), dtype.clone(), dtype),
                (end.clone(), end, pattern.clone(), pattern),
                (any::<u16>(), any::<u16>()),
            )
                .prop_map(
                    |(
                        (sem, increment, src_dtype, dst_dtype),
                        (src, dst, src_pattern, dst_pattern),
                        (src_elem_size, dst_elem_size),
                    )| I::DmaDirect {
                        sem,
                        increment,
                        src_dtype,
                        dst_dtype,
                        src,
                        dst,
                        src_pattern,
                        dst_pattern,
                        src_elem_size,
                        dst_elem_size,
                    },
                )
                .boxed()
        }
        Opcode::MatmulLoadStationary => (
            arb_ap(),
            any::<bool>(),
            prop::sample::select(nrt_hal::isa::MatmulPass::ALL),
        )
            .prop_map(|(stationary, reversed, pass)| I::MatmulLoadStationary {
                stationary,
                reversed,
                pass,
            })
            .boxed(),
        Opcode::MatmulMoving => (arb_ap(), arb_ap(), any::<bool>())
            .prop_map(|(dst, moving, accumulate)| I::MatmulMoving {
                dst,
                moving,
                accumulate,
            })
            .boxed(),
        Opcode::Activation => (
            select(ActivationFunc::ALL),
            arb_ap(),
            arb_ap(),
            arb_scalar(),
            prop::option::of(arb_scalar()),
            select(ReduceCmd::ALL),
        )
            .prop_map(|(func, out, input, scale, bias, reduce)| I::Activation {
                func,
                out,
                input,
                scale,
                bias,
                reduce,
            })
            .boxed(),
        Opcode::TensorTensor => (arb_alu(), arb_ap(), arb_ap(), arb_short())
            .prop_map(|(op, out, in0, in1)| I::TensorTensor {
                op,
                out,
                in0,
                in1: in1.into(),
            })
            .boxed(),
        Opcode::TensorScalar => (
            (arb_ap(), arb_ap()),
            (arb_alu(), arb_scalar(), any::<bool>()),
            (arb_alu(), arb_scalar(), any::<bool>()),
        )
            .prop_map(
                |((out, input), (op0, operand0, reverse0), (op1, operand1, reverse1))| {
                    I::TensorScalar {
                        out,
                        input,
                        op0,
                        operand0,
                        reverse0,
                        op1,
                        operand1,
                        reverse1,
                    }
                },
            )
            .boxed(),
        Opcode::TensorCopy => (arb_ap(), arb_ap())
            .prop_map(|(out, input)| I::TensorCopy { out, input })
            .boxed(),
        Opcode::TensorReduce => (
            select(
                AluOp::ALL
                    .iter()
                    .copied()
                    .filter(|o| o.is_legal_reduction())
                    .collect::<Vec<_>>(),
            ),
            arb_ap(),
            arb_ap(),
            1u8..=4,
            any::<bool>(),
        )
            .prop_map(|(op, out, input, axes, negate)| I::TensorReduce {
                op,
                out,
                input,
                axes,
                negate,
            })
            .boxed(),
        Opcode::Memset => (arb_ap(), st::f32_bits())
            .prop_map(|(out, value)| I::Memset { out, value })
            .boxed(),
        Opcode::Iota => (arb_ap(), any::<i32>(), any::<i32>(), arb_iota_pattern())
            .prop_map(|(out, offset, channel_multiplier, pattern)| I::Iota {
                out,
                offset,
                channel_multiplier,
                pattern,
            })
            .boxed(),
        Opcode::Transpose => (arb_ap(), arb_ap())
            .prop_map(|(out, input)| I::Transpose { out, input })
            .boxed(),
        Opcode::PseudoWriteVar => (any::<u32>(), any::<u64>(), any::<u32>())
            .prop_map(|(var_id, offset, value)| I::PseudoWriteVar {
                var_id,
                offset,
                value,
            })
            .boxed(),
        Opcode::PseudoBarrier => (arb_sem(), any::<i32>())
            .prop_map(|(sem, count)| I::PseudoBarrier { sem, count })
            .boxed(),
        Opcode::PseudoMarker => (any::<u32>(), "[ -~]{0,40}")
            .prop_map(|(id, l)| I::PseudoMarker {
                id,
                label: MarkerLabel::new(&l).expect("regex yields valid labels"),
            })
            .boxed(),
    }
}

fn arb_instruction() -> impl Strategy<Value = Instruction> {
    select(Opcode::ALL).prop_flat_map(arb_instruction_for)
}

/// Mostly-zero bytes with a plausible header, so random records reach deep into the decoder.
fn arb_sparse_record() -> impl Strategy<Value = Record> {
    (
        prop_oneof![
            3 => select(Opcode::ALL).prop_map(Opcode::byte),
            1 => any::<u8>(),
        ],
        prop_oneof![4 => Just(0x10u8), 1 => any::<u8>()],
        prop::collection::vec(prop_oneof![3 => Just(0u8), 1 => any::<u8>()], 62),
    )
        .prop_map(|(op, len, rest)| {
            let mut b = [0u8; RECORD_SIZE];
            b[0] = op;
            b[1] = len;
            b[2..].copy_from_slice(&rest);
            Record(b)
        })
}

fn check_round_trip(instr: &Instruction) -> Result<(), TestCaseError> {
    let rec = instr
        .encode()
        .expect("generated instructions are encodable");
    prop_assert_eq!(rec.opcode(), instr.opcode().byte());
    prop_assert_eq!(rec.length_byte(), 0x10);
    let back = Instruction::decode(&rec).map_err(|e| TestCaseError::fail(e.to_string()))?;
    // Debug distinguishes every field (and -0.0 from 0.0); the byte comparison covers NaN
    // payloads, which `==` cannot.
    prop_assert_eq!(format!("{back:?}"), format!("{instr:?}"));
    let again = back.encode().expect("decoded instructions are encodable");
    prop_assert_eq!(again, rec);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 2048,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_instruction_round_trips(instr in arb_instruction()) {
        check_round_trip(&instr)?;
    }

    #[test]
    fn decoding_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), RECORD_SIZE)) {
        let rec = Record::from_slice(&bytes).expect("64 bytes");
        let _ = Instruction::decode(&rec);
        let _ = nrt_hal::isa::disassemble(&bytes);
    }

    /// Whatever decodes is canonical: re-encoding gives the same bytes back (except the
    /// documented leniency of the real 0xC1 record).
    #[test]
    fn accepted_records_are_canonical(rec in arb_sparse_record()) {
        if let Ok(instr) = Instruction::decode(&rec) {
            let again = instr.encode().expect("decoded instructions are encodable");
            if rec.opcode() != 0xC1 {
                prop_assert_eq!(again, rec);
            }
            prop_assert_eq!(Instruction::decode(&again).map(|i| format!("{i:?}")), Ok(format!("{instr:?}")));
        }
    }

    /// Flipping bytes of a valid record either gives an error or another canonical record.
    #[test]
    fn mutated_records_are_rejected_or_canonical(
        instr in arb_instruction(),
        flips in prop::collection::vec((2usize..RECORD_SIZE, 1u8..=255), 1..4),
    ) {
        let mut rec = instr.encode().expect("encodable");
        for (at, x) in flips {
            rec.0[at] ^= x;
        }
        if let Ok(decoded) = Instruction::decode(&rec) {
            if rec.opcode() != 0xC1 {
                prop_assert_eq!(decoded.encode().expect("encodable"), rec);
            }
        }
    }

    #[test]
    fn element_offsets_match_the_extent(ap in arb_ap_with_counts(1..=9)) {
        let offs: Vec<i64> = ap.element_offsets().collect();
        prop_assert_eq!(offs.len() as u64, ap.elements_per_partition());
        let size = ap.dtype().size() as i64;
        let lo = *offs.iter().min().expect("at least one element");
        let hi = *offs.iter().max().expect("at least one element") + size;
        prop_assert_eq!(ap.byte_extent(), lo..hi);
        prop_assert_eq!(offs[0], i64::from(ap.offset()));
        // Row-major: the last dim is innermost.
        let dims = ap.dims();
        let inner = dims[dims.len() - 1];
        if inner.count > 1 {
            prop_assert_eq!(offs[1] - offs[0], i64::from(inner.step) * size);
        }
    }
}

#[test]
fn every_opcode_byte_with_zero_operands_decodes_or_errs() {
    for op in 0..=255u8 {
        let rec = Record::new(op);
        match Instruction::decode(&rec) {
            Ok(i) => assert_eq!(i.opcode().byte(), op),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}

#[test]
fn generators_cover_every_opcode() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    for &op in Opcode::ALL {
        let tree = arb_instruction_for(op)
            .new_tree(&mut runner)
            .expect("strategy yields a value");
        assert_eq!(tree.current().opcode(), op);
    }
    assert_eq!(Opcode::ALL.len(), 23);
}
