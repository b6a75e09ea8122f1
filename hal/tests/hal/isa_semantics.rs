//! Opcode classification, engine placement, pseudo-instruction lowering, operand rules and
//! the helpers the simulator uses.

use nrt_hal::isa::{
    is_real_neff_opcode, AccessPattern, ActivationFunc, AluOp, ApError, Dim, Instruction, IotaDim,
    IotaPattern, LowerError, Lowered, MarkerLabel, MemSpace, Opcode, OperandError, QueueSetName,
    ReduceCmd, ScalarOperand, SemCmp, SemOp, ShortOperand, REAL_NEFF_OPCODES,
};
use nrt_hal::{AddrOverflow, DeviceAddr, Dtype, EngineKind, SemaphoreId};

use nrt_hal::isa::MemSpace::Sbuf;
use nrt_hal::testkit::ops::{ap, sbuf};

/// `n` f32 elements in each of `parts` partitions from the start of PSUM.
fn psum(parts: u32, n: u16) -> AccessPattern {
    nrt_hal::testkit::ops::psum(0, parts, 0, Dtype::F32, n)
}

/// One instance of each opcode.
fn one_of_each() -> Vec<Instruction> {
    let a = sbuf(0, 4, 0, Dtype::F32, 8);
    let v = ShortOperand::sbuf(0, 0x100, Dtype::F32).unwrap();
    vec![
        Instruction::StreamHeader,
        Instruction::PseudoDmaTrigger {
            queue: QueueSetName::new("q0").unwrap(),
            block_id: 0,
        },
        Instruction::Write {
            addr: DeviceAddr::new(8),
            value: 1,
        },
        Instruction::SemWait {
            sem: SemaphoreId(0),
            cmp: SemCmp::Ge,
            value: 1,
        },
        Instruction::SemSignal {
            sem: SemaphoreId(0),
            op: SemOp::Inc,
            value: 1,
        },
        Instruction::EventSet {
            event: nrt_hal::EventId(0),
            value: true,
        },
        Instruction::EventWait {
            event: nrt_hal::EventId(0),
            value: true,
        },
        Instruction::End,
        Instruction::Nop,
        Instruction::MatmulLoadStationary {
            stationary: a,
            reversed: false,
            pass: nrt_hal::isa::MatmulPass::Single,
        },
        Instruction::MatmulMoving {
            dst: psum(4, 8),
            moving: a,
            accumulate: false,
        },
        Instruction::Activation {
            func: ActivationFunc::Exp,
            out: a,
            input: a,
            scale: ScalarOperand::Imm(1.0),
            bias: None,
            reduce: ReduceCmd::Idle,
        },
        Instruction::TensorTensor {
            op: AluOp::Add,
            out: a,
            in0: a,
            in1: v.into(),
        },
        Instruction::TensorScalar {
            out: a,
            input: a,
            op0: AluOp::Add,
            operand0: ScalarOperand::Imm(1.0),
            reverse0: false,
            op1: AluOp::Bypass,
            operand1: ScalarOperand::Imm(0.0),
            reverse1: false,
        },
        Instruction::TensorCopy { out: a, input: a },
        Instruction::TensorReduce {
            op: AluOp::Add,
            out: sbuf(0, 4, 0, Dtype::F32, 1),
            input: a,
            axes: 1,
            negate: false,
        },
        Instruction::Memset { out: a, value: 0.0 },
        Instruction::Iota {
            out: a,
            offset: 0,
            channel_multiplier: 8,
            pattern: IotaPattern::new(&[IotaDim::new(1, 8)]).unwrap(),
        },
        Instruction::Transpose {
            out: sbuf(0, 8, 0, Dtype::F32, 4),
            input: a,
        },
        Instruction::DmaDirect {
            sem: SemaphoreId(8),
            increment: 16,
            src_dtype: Dtype::F32,
            dst_dtype: Dtype::Bf16,
            src: nrt_hal::isa::DmaEnd::Slot {
                slot: nrt_hal::DeviceAddr::new(0x1000),
                offset: 0x40,
            },
            dst: nrt_hal::isa::DmaEnd::Absolute(nrt_hal::DeviceAddr::new(0x2000)),
            src_pattern: nrt_hal::isa::DmaPattern {
                steps: [512, 0],
                nums: [128, 1],
            },
            dst_pattern: nrt_hal::isa::DmaPattern {
                steps: [1 << 18, 0],
                nums: [128, 1],
            },
            src_elem_size: 512,
            dst_elem_size: 256,
        },
        Instruction::PseudoWriteVar {
            var_id: 1,
            offset: 0,
            value: 0,
        },
        Instruction::PseudoBarrier {
            sem: SemaphoreId(1),
            count: 2,
        },
        Instruction::PseudoMarker {
            id: 0,
            label: MarkerLabel::default(),
        },
    ]
}

#[test]
fn opcode_classification() {
    assert_eq!(
        REAL_NEFF_OPCODES,
        [0x01, 0x02, 0x21, 0x23, 0x41, 0x42, 0x46, 0x47, 0x49, 0xA0, 0xA4, 0xB1, 0xC1, 0xCC]
    );
    for &op in Opcode::ALL {
        assert_eq!(Opcode::from_byte(op.byte()), Some(op));
        assert_eq!(op.is_real_neff(), is_real_neff_opcode(op.byte()), "{op:?}");
        assert_eq!(op.is_ours(), !op.is_real_neff(), "{op:?}");
        if op.is_ours() {
            assert!(op.byte() >= 0xD0, "{op:?}");
        }
    }
    let implemented_real: Vec<u8> = REAL_NEFF_OPCODES
        .iter()
        .copied()
        .filter(|&b| Opcode::from_byte(b).is_some())
        .collect();
    assert_eq!(implemented_real, [0xB1, 0xC1]);
    let pseudo: Vec<u8> = Opcode::ALL
        .iter()
        .filter(|o| o.is_pseudo())
        .map(|o| o.byte())
        .collect();
    assert_eq!(pseudo, [0xC1, 0xF0, 0xF1, 0xF2]);
    let compute = Opcode::ALL.iter().filter(|o| o.is_compute()).count();
    assert_eq!(compute, 10);
    let each = one_of_each();
    let ops: Vec<Opcode> = each.iter().map(Instruction::opcode).collect();
    assert_eq!(ops, Opcode::ALL);
}

#[test]
fn engine_placement() {
    use EngineKind::*;
    let allowed = |i: &Instruction| -> Vec<EngineKind> {
        EngineKind::ALL
            .into_iter()
            .filter(|&e| i.allowed_on(e))
            .collect()
    };
    for i in one_of_each() {
        let expected: &[EngineKind] = match i.opcode() {
            Opcode::MatmulLoadStationary | Opcode::MatmulMoving => &[Pe],
            Opcode::Transpose => &[Pe, Dve],
            Opcode::Activation => &[Act],
            Opcode::TensorScalar | Opcode::TensorCopy => &[Act, Pool, Dve],
            Opcode::TensorTensor | Opcode::TensorReduce | Opcode::Memset => &[Pool, Dve],
            Opcode::Iota => &[Pool],
            _ => &[Pe, Act, Pool, Dve, Sp],
        };
        assert_eq!(allowed(&i), expected, "{i}");
        if i.opcode().is_compute() {
            assert!(!i.allowed_on(Sp), "{i}");
        }
    }
}

#[test]
fn pseudo_lowering() {
    let vars = |id: u32| (id == 3).then_some(DeviceAddr::new(0x4000_0000));
    let wv = Instruction::PseudoWriteVar {
        var_id: 3,
        offset: 0x40,
        value: 7,
    };
    assert_eq!(
        wv.lower(vars),
        Ok(Lowered::Replaced(vec![Instruction::Write {
            addr: DeviceAddr::new(0x4000_0040),
            value: 7
        }]))
    );
    let missing = Instruction::PseudoWriteVar {
        var_id: 4,
        offset: 0,
        value: 0,
    };
    assert_eq!(missing.lower(vars), Err(LowerError::UnknownVar(4)));
    let overflow = Instruction::PseudoWriteVar {
        var_id: 3,
        offset: u64::MAX,
        value: 0,
    };
    assert_eq!(
        overflow.lower(vars),
        Err(LowerError::Overflow(AddrOverflow {
            base: DeviceAddr::new(0x4000_0000),
            offset: u64::MAX
        }))
    );

    let barrier = Instruction::PseudoBarrier {
        sem: SemaphoreId(9),
        count: 5,
    };
    assert_eq!(
        barrier.lower(vars),
        Ok(Lowered::Replaced(vec![
            Instruction::SemSignal {
                sem: SemaphoreId(9),
                op: SemOp::Inc,
                value: 1
            },
            Instruction::SemWait {
                sem: SemaphoreId(9),
                cmp: SemCmp::Ge,
                value: 5
            },
        ]))
    );

    let marker = Instruction::PseudoMarker {
        id: 1,
        label: MarkerLabel::new("x").unwrap(),
    };
    assert_eq!(marker.lower(vars), Ok(Lowered::Replaced(vec![])));

    let q = QueueSetName::new("qAct0").unwrap();
    let trig = Instruction::PseudoDmaTrigger {
        queue: q.clone(),
        block_id: 12,
    };
    assert_eq!(
        trig.lower(vars),
        Ok(Lowered::DmaTrigger {
            queue: &q,
            block_id: 12
        })
    );

    // Every instruction's slot count agrees with its lowering; only pseudos change.
    let all_vars = |_| Some(DeviceAddr::new(0x1000));
    for i in one_of_each() {
        let slots = match i.lower(all_vars).unwrap() {
            Lowered::Unchanged => {
                assert!(!i.is_pseudo(), "{i}");
                1
            }
            Lowered::Replaced(v) => {
                assert!(i.is_pseudo(), "{i}");
                assert!(v.iter().all(|x| !x.is_pseudo()));
                v.len()
            }
            Lowered::DmaTrigger { .. } => 1,
        };
        assert_eq!(i.slots_after_lowering(), slots, "{i}");
    }
}

#[test]
fn operand_rules_accept_one_of_each_opcode() {
    for i in one_of_each() {
        assert_eq!(i.check_operands(), Ok(()), "{i}");
    }
}

/// A bf16 tile of all 128 partitions × 128 elements at the start of SBUF.
fn full_tile() -> AccessPattern {
    sbuf(0, 128, 0, Dtype::Bf16, 128)
}

#[test]
fn matmul_operand_rules() {
    let a = full_tile();
    // matmul: dst must be PSUM, moving SBUF, N ≤ 512, M ≤ 128.
    let mm = Instruction::MatmulMoving {
        dst: sbuf(0, 128, 0, Dtype::F32, 128),
        moving: a,
        accumulate: false,
    };
    assert!(matches!(
        mm.check_operands(),
        Err(OperandError::WrongSpace {
            operand: "dst",
            expected: MemSpace::Psum,
            ..
        })
    ));
    let wide = Instruction::MatmulMoving {
        dst: psum(128, 513),
        moving: sbuf(0, 128, 0, Dtype::Bf16, 513),
        accumulate: true,
    };
    let err = wide.check_operands().unwrap_err();
    assert_eq!(
        err.to_string(),
        "matmul.mm: moving has N = 513 elements (max 512)"
    );
    let ld = Instruction::MatmulLoadStationary {
        reversed: false,
        pass: nrt_hal::isa::MatmulPass::Single,
        stationary: sbuf(0, 128, 0, Dtype::Bf16, 129),
    };
    assert!(ld.check_operands().is_err());
}

#[test]
fn elementwise_operand_rules() {
    let a = full_tile();
    // elementwise shapes must agree.
    let copy = Instruction::TensorCopy {
        out: sbuf(0, 64, 0, Dtype::F32, 128),
        input: a,
    };
    assert!(matches!(
        copy.check_operands(),
        Err(OperandError::Shape { .. })
    ));
    // a [P,1] vector operand that runs past partition 127.
    let ts = Instruction::TensorScalar {
        out: a,
        input: a,
        op0: AluOp::Multiply,
        operand0: ScalarOperand::Vector(ShortOperand::sbuf(1, 0, Dtype::F32).unwrap()),
        reverse0: false,
        op1: AluOp::Bypass,
        operand1: ScalarOperand::Imm(0.0),
        reverse1: false,
    };
    assert!(matches!(
        ts.check_operands(),
        Err(OperandError::Pattern {
            operand: "operand0",
            source: ApError::PartitionOverflow {
                start: 1,
                count: 128
            },
            ..
        })
    ));
    let mixed = Instruction::TensorScalar {
        out: a,
        input: a,
        op0: AluOp::BitwiseAnd,
        operand0: ScalarOperand::Imm(1.0),
        reverse0: false,
        op1: AluOp::Add,
        operand1: ScalarOperand::Imm(1.0),
        reverse1: false,
    };
    assert_eq!(
        mixed.check_operands(),
        Err(OperandError::MixedOpKinds {
            op0: AluOp::BitwiseAnd,
            op1: AluOp::Add
        })
    );
    // tensor_tensor inputs may not both be in PSUM.
    let tt = Instruction::TensorTensor {
        op: AluOp::Add,
        out: a,
        in0: nrt_hal::testkit::ops::psum(0, 128, 0, Dtype::Bf16, 128),
        in1: ShortOperand::psum(0, 0x400, Dtype::Bf16).unwrap().into(),
    };
    assert!(tt.check_operands().is_err());
}

#[test]
fn reduce_transpose_and_iota_operand_rules() {
    // reduce: output is the kept dims.
    let input = ap(
        Sbuf,
        0,
        4,
        0,
        Dtype::F32,
        &[Dim::new(16, 3), Dim::new(1, 16)],
    );
    let reduce = |out, axes| Instruction::TensorReduce {
        op: AluOp::Max,
        out,
        input,
        axes,
        negate: false,
    };
    assert_eq!(
        reduce(sbuf(0, 4, 0x100, Dtype::F32, 3), 1).check_operands(),
        Ok(())
    );
    assert_eq!(
        reduce(sbuf(0, 4, 0x100, Dtype::F32, 1), 2).check_operands(),
        Ok(())
    );
    assert!(reduce(sbuf(0, 4, 0x100, Dtype::F32, 1), 1)
        .check_operands()
        .is_err());
    assert!(reduce(sbuf(0, 4, 0x100, Dtype::F32, 1), 3)
        .check_operands()
        .is_err());
    // transpose [P, F] → [F, P].
    let tr = |out| Instruction::Transpose {
        out,
        input: sbuf(0, 16, 0, Dtype::F32, 32),
    };
    assert_eq!(tr(sbuf(0, 32, 0, Dtype::F32, 16)).check_operands(), Ok(()));
    assert!(tr(sbuf(0, 16, 0, Dtype::F32, 32)).check_operands().is_err());
    // iota pattern size must match.
    let iota = Instruction::Iota {
        out: sbuf(0, 4, 0, Dtype::F32, 8),
        offset: 0,
        channel_multiplier: 0,
        pattern: IotaPattern::new(&[IotaDim::new(1, 7)]).unwrap(),
    };
    assert!(iota.check_operands().is_err());
}

#[test]
fn access_pattern_helpers() {
    let ap = ap(
        Sbuf,
        8,
        16,
        0x100,
        Dtype::Bf16,
        &[Dim::new(64, 2), Dim::new(2, 3)],
    );
    assert_eq!(ap.partition_range(), 8..24);
    assert_eq!(ap.elements_per_partition(), 6);
    assert_eq!(ap.total_elements(), 96);
    assert_eq!(
        ap.element_offsets().collect::<Vec<_>>(),
        [0x100, 0x104, 0x108, 0x180, 0x184, 0x188]
    );
    assert_eq!(ap.byte_extent(), 0x100..0x18A);
    assert_eq!(ap.bytes_spanned(), 0x8A);
    assert_eq!(ap.check_bounds(0x18A), Ok(()));
    assert!(ap.check_bounds(0x189).is_err());
    // PSUM partitions are 16 KiB.
    let p = nrt_hal::testkit::ops::psum(0, 1, 0x3FFC, Dtype::F32, 2);
    assert_eq!(
        p.check_bounds(MemSpace::PSUM_PARTITION_BYTES),
        Err(ApError::OutOfPartition {
            lo: 0x3FFC,
            hi: 0x4004,
            partition_bytes: 0x4000
        })
    );
    // tensor_tensor in1 borrows the shape; [P,1] vectors one element per partition.
    let in1 = ShortOperand::psum(8, 0x40, Dtype::F32).unwrap();
    let full = in1.with_shape_of(&ap).unwrap();
    assert_eq!(full.partition_range(), 8..24);
    assert_eq!(full.dims(), ap.dims());
    assert_eq!(full.dtype(), Dtype::F32);
    let vec = in1.as_vector(16).unwrap();
    assert_eq!(vec.elements_per_partition(), 1);
    assert_eq!(vec.element_offsets().collect::<Vec<_>>(), [0x40]);
    assert!(in1.as_vector(121).is_err());
    // iota values.
    let pat = IotaPattern::new(&[IotaDim::new(100, 2), IotaDim::new(-1, 3)]).unwrap();
    assert_eq!(pat.elements(), 6);
    assert_eq!(
        pat.values(5 + 2 * 3).collect::<Vec<_>>(),
        [11, 10, 9, 111, 110, 109]
    );
}

#[test]
fn enum_helpers() {
    assert!(SemCmp::Ge.holds(4, 4) && !SemCmp::Gt.holds(4, 4));
    assert!(SemCmp::Ne.holds(3, 4) && SemCmp::Lt.holds(3, 4) && SemCmp::Le.holds(4, 4));
    assert!(SemCmp::Eq.holds(-1, -1));
    assert_eq!(SemOp::Inc.apply(1, 2), 3);
    assert_eq!(SemOp::Dec.apply(1, 2), -1);
    assert_eq!(SemOp::Set.apply(1, 9), 9);
    assert_eq!(SemOp::Inc.apply(i32::MAX, 1), i32::MIN);
    let legal: Vec<&str> = AluOp::ALL
        .iter()
        .filter(|o| o.is_legal_reduction())
        .map(|o| o.name())
        .collect();
    assert_eq!(
        legal,
        [
            "add",
            "subtract",
            "multiply",
            "max",
            "min",
            "logical_and",
            "logical_or",
            "logical_xor",
            "bitwise_and",
            "bitwise_or",
            "bitwise_xor"
        ]
    );
    for name in [
        "identity",
        "relu",
        "gelu",
        "gelu_apprx_tanh",
        "silu",
        "sigmoid",
        "tanh",
        "exp",
        "square",
        "rsqrt",
        "reciprocal",
        "sqrt",
        "log",
        "softplus",
        "abs",
        "sign",
        "erf",
    ] {
        let f = ActivationFunc::from_name(name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(ActivationFunc::from_code(f.code()), Some(f));
    }
    // Codes are dense from 0, so a decoder can reject by a single bound.
    for (i, op) in AluOp::ALL.iter().enumerate() {
        assert_eq!(usize::from(op.code()), i);
    }
    assert_eq!(AluOp::from_code(AluOp::ALL.len() as u8), None);
    assert_eq!(ReduceCmd::from_code(4), Some(ReduceCmd::LoadReduce));
    assert_eq!(MemSpace::from_code(2), None);
}
