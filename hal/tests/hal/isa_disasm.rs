//! The disassembler's output for a sample stream, pinned.

use nrt_hal::isa::{
    disassemble, encode_stream, ActivationFunc, AluOp, Dim, Instruction, IotaDim, IotaPattern,
    MarkerLabel, QueueSetName, ReduceCmd, ScalarOperand, SemCmp, SemOp, ShortOperand,
};
use nrt_hal::{DeviceAddr, Dtype, EventId, SemaphoreId};

use nrt_hal::isa::MemSpace::{Psum, Sbuf};
use nrt_hal::testkit::ops::ap;

/// A stream with one instruction of every opcode (longer than the ~120-line guideline on
/// purpose: it is that listing).
fn sample_stream() -> Vec<u8> {
    let row = |n| [Dim::new(1, n)];
    let mut bytes = encode_stream(&[
        Instruction::StreamHeader,
        Instruction::PseudoDmaTrigger {
            queue: QueueSetName::new("qSyncIO0").unwrap(),
            block_id: 3,
        },
        Instruction::MatmulLoadStationary {
            reversed: false,
            pass: nrt_hal::isa::MatmulPass::Single,
            stationary: ap(Sbuf, 0, 128, 0, Dtype::Bf16, &row(128)),
        },
        Instruction::MatmulMoving {
            dst: ap(Psum, 0, 128, 0, Dtype::F32, &row(512)),
            moving: ap(Sbuf, 0, 128, 0x200, Dtype::Bf16, &row(512)),
            accumulate: true,
        },
        Instruction::Activation {
            func: ActivationFunc::Gelu,
            out: ap(
                Sbuf,
                0,
                128,
                0x600,
                Dtype::Bf16,
                &[Dim::new(256, 2), Dim::new(1, 256)],
            ),
            input: ap(Psum, 0, 128, 0, Dtype::F32, &row(512)),
            scale: ScalarOperand::Imm(0.5),
            bias: Some(ScalarOperand::Vector(
                ShortOperand::sbuf(0, 0x40, Dtype::F32).unwrap(),
            )),
            reduce: ReduceCmd::ResetReduce,
        },
        Instruction::TensorScalar {
            out: ap(Sbuf, 64, 32, 0x1000, Dtype::F32, &row(16)),
            input: ap(Sbuf, 64, 32, 0x800, Dtype::F32, &row(16)),
            op0: AluOp::Subtract,
            operand0: ScalarOperand::Imm(1.0),
            reverse0: true,
            op1: AluOp::Multiply,
            operand1: ScalarOperand::Vector(ShortOperand::sbuf(64, 0x40, Dtype::F32).unwrap()),
            reverse1: false,
        },
        Instruction::Iota {
            out: ap(Sbuf, 0, 4, 0, Dtype::I32, &row(8)),
            offset: 5,
            channel_multiplier: -8,
            pattern: IotaPattern::new(&[IotaDim::new(1, 8)]).unwrap(),
        },
        Instruction::TensorTensor {
            op: AluOp::Add,
            out: ap(Sbuf, 0, 128, 0, Dtype::F32, &row(1000)),
            in0: ap(Sbuf, 0, 128, 0x1000, Dtype::F32, &row(1000)),
            in1: ShortOperand::psum(0, 0, Dtype::Bf16).unwrap().into(),
        },
        Instruction::TensorCopy {
            out: ap(Sbuf, 0, 2, 0, Dtype::Bf16, &row(4)),
            input: ap(Sbuf, 2, 2, 0, Dtype::F32, &[Dim::new(-1, 4)]),
        },
        Instruction::TensorReduce {
            op: AluOp::Max,
            out: ap(Sbuf, 0, 8, 0, Dtype::F32, &row(1)),
            input: ap(Sbuf, 0, 8, 0x10, Dtype::F32, &row(64)),
            axes: 1,
            negate: true,
        },
        Instruction::Memset {
            out: ap(Psum, 127, 1, 0x3ffc, Dtype::F32, &row(1)),
            value: -0.0,
        },
        Instruction::Transpose {
            out: ap(Sbuf, 0, 32, 0, Dtype::F32, &row(16)),
            input: ap(Sbuf, 0, 16, 0x100, Dtype::F32, &row(32)),
        },
        Instruction::Nop,
        Instruction::EventWait {
            event: EventId(2),
            value: false,
        },
        Instruction::SemWait {
            sem: SemaphoreId(3),
            cmp: SemCmp::Ge,
            value: 4,
        },
        Instruction::SemSignal {
            sem: SemaphoreId(3),
            op: SemOp::Dec,
            value: 4,
        },
        Instruction::EventSet {
            event: EventId(2),
            value: true,
        },
        Instruction::Write {
            addr: DeviceAddr::new(0x20_0000_1000),
            value: 5,
        },
        Instruction::PseudoWriteVar {
            var_id: 3,
            offset: 0x40,
            value: 1,
        },
        Instruction::PseudoBarrier {
            sem: SemaphoreId(5),
            count: 4,
        },
        Instruction::PseudoMarker {
            id: 7,
            label: MarkerLabel::new("layer 0").unwrap(),
        },
        Instruction::End,
    ])
    .unwrap();
    // A malformed Neuron TensorTensor record (opcode 0x41): byte 4 is no known wait mode.
    let mut real = [0u8; 64];
    real[0] = 0x41;
    real[1] = 0x10;
    real[4] = 0xE8;
    real[5] = 0x03;
    bytes.extend_from_slice(&real);
    bytes
}

const EXPECTED: &str = "\
0000: header
0001: pseudo.dma_trigger qSyncIO0 block=3
0002: matmul.ld sbuf[p0:128 +0x0 bf16 [1,128]]
0003: matmul.mm psum[p0:128 +0x0 f32 [1,512]] <- sbuf[p0:128 +0x200 bf16 [1,512]] acc
0004: act.gelu sbuf[p0:128 +0x600 bf16 [256,2][1,256]] <- psum[p0:128 +0x0 f32 [1,512]] scale=0.5 bias=sbuf[p0 +0x40 f32] reduce=reset_reduce
0005: tensor_scalar sbuf[p64:96 +0x1000 f32 [1,16]] <- (1.0 subtract sbuf[p64:96 +0x800 f32 [1,16]]) multiply sbuf[p64 +0x40 f32]
0006: iota sbuf[p0:4 +0x0 i32 [1,8]] <- 5 + -8*p + [1,8]
0007: tensor_tensor.add sbuf[p0:128 +0x0 f32 [1,1000]] <- sbuf[p0:128 +0x1000 f32 [1,1000]], psum[p0 +0x0 bf16]
0008: tensor_copy sbuf[p0:2 +0x0 bf16 [1,4]] <- sbuf[p2:4 +0x0 f32 [-1,4]]
0009: tensor_reduce.max sbuf[p0:8 +0x0 f32 [1,1]] <- sbuf[p0:8 +0x10 f32 [1,64]] axes=1 neg
0010: memset psum[p127:128 +0x3ffc f32 [1,1]] <- -0.0
0011: transpose sbuf[p0:32 +0x0 f32 [1,16]] <- sbuf[p0:16 +0x100 f32 [1,32]]
0012: nop
0013: event.wait evt2 == 0
0014: sem.wait sem3 >= 4
0015: sem.signal sem3 -= 4
0016: event.set evt2 = 1
0017: write [0x2000001000] <- 0x5
0018: pseudo.write_var [var3+0x40] <- 0x1
0019: pseudo.barrier sem5 count=4
0020: pseudo.marker 7 \"layer 0\"
0021: end
0022: .raw 0x41 41100000e80300000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000  ; opcode 0x41 (TENSOR_TENSOR): byte 4 (wait mode) = 0xe8: only 0x00 (none) and 0x05 (until semaphore ≥ value) are known
";

#[test]
fn sample_stream_disassembles_as_pinned() {
    let got = disassemble(&sample_stream());
    assert_eq!(got, EXPECTED, "\n--- got ---\n{got}");
}

#[test]
fn malformed_records_and_partial_tails_render_raw() {
    let mut bytes = encode_stream(&[Instruction::End]).unwrap();
    bytes[63] = 1; // reserved byte of `end`
    bytes.extend_from_slice(&[0xD6, 0x10, 0]);
    let got = disassemble(&bytes);
    let lines: Vec<&str> = got.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with("0000: .raw 0xd5 d510"), "{got}");
    assert!(
        lines[0].ends_with("01  ; reserved byte 63 is 0x01, must be zero"),
        "{got}"
    );
    assert_eq!(
        lines[1],
        "0001: .tail d61000  ; 3 trailing bytes, not a whole 64-byte record"
    );
    assert_eq!(disassemble(&[]), "");
}
