//! Tests of the engines' compute (`nrt_sim::compute`): dtype conversion, ALU ops, activation
//! functions, instruction semantics, errors and the cost model. References are plain f64 loops
//! written here; every instruction goes through encode → decode before it executes.

use nrt_hal::isa::{
    AccessPattern, ActivationFunc, AluOp, Dim, Instruction, IotaDim, IotaPattern, MemSpace,
    ReduceCmd, ScalarOperand, ShortOperand,
};
use nrt_hal::{Dtype, EngineKind, Target};
use nrt_sim::compute::{
    self, convert, ComputeError, ComputeOutcome, EngineCycles, EngineState, OnChipView,
};
use proptest::prelude::*;

const PSUM_PB: usize = 16 * 1024;
/// A small SBUF partition for tests that do not need the real size.
const SMALL_PB: usize = 16 * 1024;

fn trn1_sbuf_pb() -> usize {
    Target::Trn1.spec().sbuf.partition_bytes as usize
}

/// One core's on-chip memory plus one engine state per engine.
struct Core {
    sbuf: Vec<u8>,
    sbuf_pb: usize,
    psum: Vec<u8>,
    states: [EngineState; 5],
}

impl Core {
    fn new(sbuf_pb: usize) -> Self {
        Core {
            sbuf: vec![0; 128 * sbuf_pb],
            sbuf_pb,
            psum: vec![0; 128 * PSUM_PB],
            states: std::array::from_fn(|_| EngineState::new()),
        }
    }

    fn small() -> Self {
        Self::new(SMALL_PB)
    }

    /// Round-trips `instr` through its record, then executes it on `engine`.
    fn run(
        &mut self,
        engine: EngineKind,
        instr: Instruction,
    ) -> Result<ComputeOutcome, ComputeError> {
        let instr = rt(instr);
        let mut view = OnChipView {
            sbuf: &mut self.sbuf,
            sbuf_partition_bytes: self.sbuf_pb,
            psum: &mut self.psum,
            psum_partition_bytes: PSUM_PB,
        };
        compute::execute(&instr, engine, &mut view, &mut self.states[engine.index()])
    }

    fn ok(&mut self, engine: EngineKind, instr: Instruction) -> ComputeOutcome {
        match self.run(engine, instr.clone()) {
            Ok(o) => o,
            Err(e) => panic!("{instr:?} on {engine}: {e}"),
        }
    }

    fn bytes_mut(&mut self, space: MemSpace, p: u32, offset: u32, len: usize) -> &mut [u8] {
        let (mem, pb) = match space {
            MemSpace::Sbuf => (&mut self.sbuf, self.sbuf_pb),
            MemSpace::Psum => (&mut self.psum, PSUM_PB),
        };
        let at = p as usize * pb + offset as usize;
        &mut mem[at..at + len]
    }

    fn bytes(&self, space: MemSpace, p: u32, offset: u32, len: usize) -> &[u8] {
        let (mem, pb) = match space {
            MemSpace::Sbuf => (&self.sbuf, self.sbuf_pb),
            MemSpace::Psum => (&self.psum, PSUM_PB),
        };
        let at = p as usize * pb + offset as usize;
        &mem[at..at + len]
    }

    /// Stores `vals` contiguously as `dtype` in partition `p` from `offset`.
    fn put(&mut self, space: MemSpace, p: u32, offset: u32, dtype: Dtype, vals: &[f32]) {
        let size = dtype.size();
        let b = self.bytes_mut(space, p, offset, size * vals.len());
        for (chunk, &v) in b.chunks_exact_mut(size).zip(vals) {
            chunk.copy_from_slice(&convert::encode(dtype, v).to_le_bytes()[..size]);
        }
    }

    fn get(&self, space: MemSpace, p: u32, offset: u32, dtype: Dtype, n: usize) -> Vec<f32> {
        let size = dtype.size();
        self.bytes(space, p, offset, size * n)
            .chunks_exact(size)
            .map(|c| convert::read_f32(dtype, c).unwrap())
            .collect()
    }

    /// Stores integers (two's complement, truncated to the dtype's width).
    fn put_int(&mut self, space: MemSpace, p: u32, offset: u32, dtype: Dtype, vals: &[i64]) {
        let size = dtype.size();
        let b = self.bytes_mut(space, p, offset, size * vals.len());
        for (chunk, &v) in b.chunks_exact_mut(size).zip(vals) {
            chunk.copy_from_slice(&v.to_le_bytes()[..size]);
        }
    }

    /// Reads integers, sign-extending signed dtypes.
    fn get_int(&self, space: MemSpace, p: u32, offset: u32, dtype: Dtype, n: usize) -> Vec<i128> {
        let size = dtype.size();
        let signed = matches!(dtype, Dtype::I8 | Dtype::I16 | Dtype::I32 | Dtype::I64);
        self.bytes(space, p, offset, size * n)
            .chunks_exact(size)
            .map(|c| {
                let mut b = [0u8; 8];
                b[..size].copy_from_slice(c);
                let raw = u64::from_le_bytes(b);
                if signed {
                    let shift = 64 - 8 * size as u32;
                    i128::from(((raw << shift) as i64) >> shift)
                } else {
                    i128::from(raw)
                }
            })
            .collect()
    }
}

/// Encodes and decodes an instruction, checking the record survives unchanged.
fn rt(instr: Instruction) -> Instruction {
    let rec = instr.encode().expect("test instructions encode");
    let back = Instruction::decode(&rec).expect("encoded records decode");
    assert_eq!(
        back.encode()
            .expect("decoded instructions encode")
            .as_bytes(),
        rec.as_bytes()
    );
    back
}

use nrt_hal::testkit::ops::{dims, short as so, tile};

/// The pattern of `parts` partitions from `start`, with free dims from `(step, count)` pairs.
fn ap(
    space: MemSpace,
    start: u32,
    parts: u32,
    offset: u32,
    dtype: Dtype,
    pairs: &[(i16, u16)],
) -> AccessPattern {
    nrt_hal::testkit::ops::ap(space, start, parts, offset, dtype, &dims(pairs))
}

use MemSpace::{Psum, Sbuf};

/// Deterministic pseudo-random values in [-1, 1).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
}

/// erf by composite Simpson integration of 2/√π·e^(−t²) (independent of the crate's series).
fn erf_ref(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x.abs() > 6.0 {
        return x.signum();
    }
    let n = 4000;
    let h = x / n as f64;
    let f = |t: f64| (-t * t).exp();
    let mut s = f(0.0) + f(x);
    for i in 1..n {
        let w = if i % 2 == 1 { 4.0 } else { 2.0 };
        s += w * f(i as f64 * h);
    }
    s * h / 3.0 * 2.0 / std::f64::consts::PI.sqrt()
}

/// erfc for `z > 0` by Simpson integration of the tail, 2/√π·∫_z^(z+8) e^(−t²) dt, which keeps
/// its relative accuracy where `1 − erf` would cancel.
fn erfc_ref(z: f64) -> f64 {
    let n = 8000;
    let h = 8.0 / n as f64;
    let f = |t: f64| (-t * t).exp();
    let mut s = f(z) + f(z + 8.0);
    for i in 1..n {
        let w = if i % 2 == 1 { 4.0 } else { 2.0 };
        s += w * f(z + i as f64 * h);
    }
    s * h / 3.0 * 2.0 / std::f64::consts::PI.sqrt()
}

fn gelu_ref(x: f64) -> f64 {
    let z = x / std::f64::consts::SQRT_2;
    if x < 0.0 {
        0.5 * x * erfc_ref(-z)
    } else {
        0.5 * x * (1.0 + erf_ref(z))
    }
}

/// `got` matches `want` within `rel`·|want| + `abs` (NaN matches NaN, infinities match exactly).
fn close(got: f32, want: f64, rel: f64, abs: f64) -> bool {
    if want.is_nan() {
        return got.is_nan();
    }
    if want.is_infinite() {
        return f64::from(got) == want;
    }
    let g = f64::from(got);
    g.is_finite() && (g - want).abs() <= rel * want.abs() + abs
}

// ---------------------------------------------------------------------------------------------
// A small MLP layer: matmul over two K-chunks, bias and activation into bf16.

#[test]
fn matmul_bias_activation_matches_f64_reference() {
    let (k, m, n) = (256usize, 64usize, 96usize);
    let mut core = Core::new(trn1_sbuf_pb());
    let mut rng = Lcg(7);
    let q = |v: f32| convert::quantize(Dtype::Bf16, v);
    // x: K × N (moving), w: K × M (stationary), both bf16; bias: M f32.
    let x: Vec<Vec<f32>> = (0..k)
        .map(|_| (0..n).map(|_| q(rng.next())).collect())
        .collect();
    let w: Vec<Vec<f32>> = (0..k)
        .map(|_| (0..m).map(|_| q(rng.next())).collect())
        .collect();
    let bias: Vec<f32> = (0..m).map(|_| rng.next()).collect();
    const X_OFF: u32 = 0;
    const W_OFF: u32 = 4096;
    const B_OFF: u32 = 8192;
    const RELU_OFF: u32 = 12288;
    const GELU_OFF: u32 = 16384;
    for c in 0..2 {
        for kk in 0..128 {
            let row = c * 128 + kk;
            let p = kk as u32;
            core.put(Sbuf, p, X_OFF + (c * n * 2) as u32, Dtype::Bf16, &x[row]);
            core.put(Sbuf, p, W_OFF + (c * m * 2) as u32, Dtype::Bf16, &w[row]);
        }
    }
    for (mm, &b) in bias.iter().enumerate() {
        core.put(Sbuf, mm as u32, B_OFF, Dtype::F32, &[b]);
    }
    let dst = tile(Psum, 0, m as u32, 0, Dtype::F32, n as u16);
    for c in 0..2u32 {
        let ld = core.ok(
            EngineKind::Pe,
            Instruction::MatmulLoadStationary {
                reversed: false,
                pass: nrt_hal::isa::MatmulPass::Single,
                stationary: tile(
                    Sbuf,
                    0,
                    128,
                    W_OFF + c * m as u32 * 2,
                    Dtype::Bf16,
                    m as u16,
                ),
            },
        );
        assert_eq!(ld.elements, 0);
        let mm = core.ok(
            EngineKind::Pe,
            Instruction::MatmulMoving {
                dst,
                moving: tile(
                    Sbuf,
                    0,
                    128,
                    X_OFF + c * n as u32 * 2,
                    Dtype::Bf16,
                    n as u16,
                ),
                accumulate: c == 1,
            },
        );
        assert_eq!(mm.elements, (m * n) as u64);
        assert!(!mm.produced_nan);
    }
    assert_eq!(
        core.states[EngineKind::Pe.index()].stationary_shape(),
        Some((128, m as u32))
    );
    for (func, off) in [
        (ActivationFunc::Relu, RELU_OFF),
        (ActivationFunc::Gelu, GELU_OFF),
    ] {
        let o = core.ok(
            EngineKind::Act,
            Instruction::Activation {
                func,
                out: tile(Sbuf, 0, m as u32, off, Dtype::Bf16, n as u16),
                input: dst,
                scale: ScalarOperand::Imm(1.0),
                bias: Some(ScalarOperand::Vector(so(Sbuf, 0, B_OFF, Dtype::F32))),
                reduce: ReduceCmd::Idle,
            },
        );
        assert_eq!(o.elements, (m * n) as u64);
    }
    let mut checked = 0;
    for mm in 0..m {
        let relu = core.get(Sbuf, mm as u32, RELU_OFF, Dtype::Bf16, n);
        let gelu = core.get(Sbuf, mm as u32, GELU_OFF, Dtype::Bf16, n);
        for nn in 0..n {
            let h: f64 = (0..k)
                .map(|kk| f64::from(w[kk][mm]) * f64::from(x[kk][nn]))
                .sum::<f64>()
                + f64::from(bias[mm]);
            // bf16 keeps 8 significant bits: half an ulp is 2^-9 relative; allow 2^-8 plus the
            // f32 accumulation error.
            assert!(
                close(relu[nn], h.max(0.0), 1.0 / 256.0, 1e-5),
                "relu[{mm}][{nn}] = {} want {}",
                relu[nn],
                h.max(0.0)
            );
            assert!(
                close(gelu[nn], gelu_ref(h), 1.0 / 256.0, 1e-5),
                "gelu[{mm}][{nn}] = {} want {}",
                gelu[nn],
                gelu_ref(h)
            );
            checked += 1;
        }
    }
    assert_eq!(checked, m * n);
}

#[test]
fn matmul_accumulate_false_overwrites_and_true_adds() {
    let mut core = Core::small();
    // stationary [K=2, M=2] = [[1, 2], [3, 4]]; moving [K=2, N=3].
    core.put(Sbuf, 0, 0, Dtype::F32, &[1.0, 2.0]);
    core.put(Sbuf, 1, 0, Dtype::F32, &[3.0, 4.0]);
    core.put(Sbuf, 0, 64, Dtype::F32, &[1.0, 0.0, 2.0]);
    core.put(Sbuf, 1, 64, Dtype::F32, &[0.0, 1.0, -1.0]);
    core.put(Psum, 0, 0, Dtype::F32, &[100.0, 100.0, 100.0]);
    core.put(Psum, 1, 0, Dtype::F32, &[100.0, 100.0, 100.0]);
    core.ok(
        EngineKind::Pe,
        Instruction::MatmulLoadStationary {
            reversed: false,
            pass: nrt_hal::isa::MatmulPass::Single,
            stationary: tile(Sbuf, 0, 2, 0, Dtype::F32, 2),
        },
    );
    let mm = |acc| Instruction::MatmulMoving {
        dst: tile(Psum, 0, 2, 0, Dtype::F32, 3),
        moving: tile(Sbuf, 0, 2, 64, Dtype::F32, 3),
        accumulate: acc,
    };
    // dst[m][n] = Σ_k st[k][m]·mv[k][n]: row 0 = [1, 3, 2-3], row 1 = [2, 4, 4-4].
    let o = core.ok(EngineKind::Pe, mm(false));
    assert_eq!(o.pe_macs, 2 * 2 * 3, "K · M · N multiply-accumulates");
    assert_eq!(core.get(Psum, 0, 0, Dtype::F32, 3), [1.0, 3.0, -1.0]);
    assert_eq!(core.get(Psum, 1, 0, Dtype::F32, 3), [2.0, 4.0, 0.0]);
    core.ok(EngineKind::Pe, mm(true));
    assert_eq!(core.get(Psum, 0, 0, Dtype::F32, 3), [2.0, 6.0, -2.0]);
    assert_eq!(core.get(Psum, 1, 0, Dtype::F32, 3), [4.0, 8.0, 0.0]);
}

#[test]
fn pe_macs_count_the_products_a_matmul_forms() {
    use nrt_hal::isa::MatmulPass;
    let mut core = Core::small();
    core.put(Sbuf, 0, 0, Dtype::F16, &[1.0; 3]);
    core.put(Sbuf, 0, 64, Dtype::F16, &[1.0; 5]);
    let ld = |pass| Instruction::MatmulLoadStationary {
        reversed: false,
        pass,
        stationary: tile(Sbuf, 0, 4, 0, Dtype::F16, 3),
    };
    let mm = Instruction::MatmulMoving {
        dst: tile(Psum, 0, 3, 0, Dtype::F32, 5),
        moving: tile(Sbuf, 0, 4, 64, Dtype::F16, 5),
        accumulate: false,
    };
    assert_eq!(core.ok(EngineKind::Pe, ld(MatmulPass::First)).pe_macs, 0);
    assert_eq!(core.ok(EngineKind::Pe, mm.clone()).pe_macs, 4 * 3 * 5);
    // The second pass repeats the operands but computes nothing.
    assert_eq!(core.ok(EngineKind::Pe, ld(MatmulPass::Second)).pe_macs, 0);
    assert_eq!(core.ok(EngineKind::Pe, mm).pe_macs, 0);
    let transpose = Instruction::Transpose {
        out: tile(Psum, 0, 5, 0, Dtype::F32, 4),
        input: tile(Sbuf, 0, 4, 64, Dtype::F16, 5),
    };
    assert_eq!(core.ok(EngineKind::Pe, transpose).pe_macs, 0);
}

// ---------------------------------------------------------------------------------------------
// ALU ops.

const GRID: [f32; 12] = [
    -3.5, -2.0, -1.0, -0.5, 0.0, 0.25, 1.0, 1.5, 2.0, 3.0, 7.0, 0.1,
];

fn alu_ref(op: AluOp, a: f64, b: f64) -> f64 {
    let t = |c: bool| if c { 1.0 } else { 0.0 };
    match op {
        AluOp::Bypass => a,
        AluOp::Add => a + b,
        AluOp::Subtract => a - b,
        AluOp::Multiply => a * b,
        AluOp::Max => a.max(b),
        AluOp::Min => a.min(b),
        AluOp::Divide => a / b,
        AluOp::Mod => {
            if b == 0.0 {
                f64::NAN
            } else {
                a - b * (a / b).floor()
            }
        }
        AluOp::Pow => a.powf(b),
        AluOp::AbsMax => a.abs().max(b.abs()),
        AluOp::AbsMin => a.abs().min(b.abs()),
        AluOp::Average => (a + b) / 2.0,
        AluOp::IsEqual => t(a == b),
        AluOp::NotEqual => t(a != b),
        AluOp::IsGe => t(a >= b),
        AluOp::IsGt => t(a > b),
        AluOp::IsLe => t(a <= b),
        AluOp::IsLt => t(a < b),
        AluOp::LogicalAnd => t(a != 0.0 && b != 0.0),
        AluOp::LogicalOr => t(a != 0.0 || b != 0.0),
        AluOp::LogicalXor => t((a != 0.0) != (b != 0.0)),
        AluOp::Abs => a.abs(),
        AluOp::Square => a * a,
        AluOp::Relu => a.max(0.0),
        AluOp::Rsqrt => 1.0 / a.sqrt(),
        AluOp::Reciprocal => 1.0 / a,
        _ => unreachable!("bit-vector ops are tested on integers"),
    }
}

#[test]
fn every_arithmetic_alu_op_matches_f64_on_a_grid() {
    let g = GRID.len() as u32;
    let mut tested = 0;
    for &op in AluOp::ALL.iter().filter(|op| !op.is_bitvec()) {
        for engine in [EngineKind::Dve, EngineKind::Pool] {
            let mut core = Core::small();
            // in0[p][j] = GRID[p], in1[p][j] = GRID[j] (in1 in PSUM on POOL).
            let in1_space = if engine == EngineKind::Pool {
                Psum
            } else {
                Sbuf
            };
            for p in 0..g {
                core.put(Sbuf, p, 0, Dtype::F32, &[GRID[p as usize]; GRID.len()]);
                core.put(in1_space, p, 256, Dtype::F32, &GRID);
            }
            let o = core.ok(
                engine,
                Instruction::TensorTensor {
                    op,
                    out: tile(Sbuf, 0, g, 512, Dtype::F32, g as u16),
                    in0: tile(Sbuf, 0, g, 0, Dtype::F32, g as u16),
                    in1: so(in1_space, 0, 256, Dtype::F32).into(),
                },
            );
            assert_eq!(o.elements, u64::from(g * g));
            let mut any_nan = false;
            for (p, &a) in GRID.iter().enumerate() {
                let got = core.get(Sbuf, p as u32, 512, Dtype::F32, GRID.len());
                for (&v, &b) in got.iter().zip(&GRID) {
                    let want = alu_ref(op, f64::from(a), f64::from(b));
                    any_nan |= want.is_nan();
                    assert!(
                        close(v, want, 2e-7, 0.0),
                        "{op}({a}, {b}) = {v}, want {want}"
                    );
                    let direct = compute::alu::alu(op, a, b);
                    assert!(v.to_bits() == direct.to_bits() || (v.is_nan() && direct.is_nan()));
                    tested += 1;
                }
            }
            assert_eq!(o.produced_nan, any_nan, "{op}");
        }
    }
    assert!(tested > 26 * 144);
}

const INTS: [i32; 10] = [0, 1, -1, 5, 0x1234_5678, i32::MIN, 31, 32, 3, -8];

fn bits_ref(op: AluOp, a: i32, b: i32) -> i32 {
    let sh = b as u32;
    match op {
        AluOp::BitwiseNot => !a,
        AluOp::BitwiseAnd => a & b,
        AluOp::BitwiseOr => a | b,
        AluOp::BitwiseXor => a ^ b,
        AluOp::ArithShiftLeft | AluOp::LogicalShiftLeft => {
            if sh >= 32 {
                0
            } else {
                ((a as u32) << sh) as i32
            }
        }
        AluOp::ArithShiftRight => {
            if sh >= 32 {
                if a < 0 {
                    -1
                } else {
                    0
                }
            } else {
                a >> sh
            }
        }
        AluOp::LogicalShiftRight => {
            if sh >= 32 {
                0
            } else {
                ((a as u32) >> sh) as i32
            }
        }
        _ => unreachable!(),
    }
}

#[test]
fn bitvec_ops_act_exactly_on_int32_patterns() {
    let g = INTS.len() as u32;
    let row: Vec<i64> = INTS.iter().map(|&v| i64::from(v)).collect();
    for &op in AluOp::ALL.iter().filter(|op| op.is_bitvec()) {
        let mut core = Core::small();
        for p in 0..g {
            core.put_int(
                Sbuf,
                p,
                0,
                Dtype::I32,
                &[i64::from(INTS[p as usize]); INTS.len()],
            );
            core.put_int(Sbuf, p, 256, Dtype::I32, &row);
        }
        let o = core.ok(
            EngineKind::Pool,
            Instruction::TensorTensor {
                op,
                out: tile(Sbuf, 0, g, 512, Dtype::I32, g as u16),
                in0: tile(Sbuf, 0, g, 0, Dtype::I32, g as u16),
                in1: so(Sbuf, 0, 256, Dtype::I32).into(),
            },
        );
        assert!(!o.produced_nan);
        for (p, &a) in INTS.iter().enumerate() {
            let got = core.get_int(Sbuf, p as u32, 512, Dtype::I32, INTS.len());
            for (&v, &b) in got.iter().zip(&INTS) {
                assert_eq!(v, i128::from(bits_ref(op, a, b)), "{op}({a}, {b})");
            }
        }
    }
    // Narrow outputs take the low bits of the pattern; float outputs its i32 value.
    let mut core = Core::small();
    core.put_int(Sbuf, 0, 0, Dtype::U8, &[0, 200, 0x0F]);
    core.ok(
        EngineKind::Dve,
        Instruction::TensorScalar {
            out: tile(Sbuf, 0, 1, 64, Dtype::U8, 3),
            input: tile(Sbuf, 0, 1, 0, Dtype::U8, 3),
            op0: AluOp::BitwiseNot,
            operand0: ScalarOperand::Imm(0.0),
            reverse0: false,
            op1: AluOp::LogicalShiftLeft,
            operand1: ScalarOperand::Imm(1.0),
            reverse1: false,
        },
    );
    // !0 << 1 = 0xFFFF_FFFE → 0xFE; !200 << 1 = ...0x6E → 0x6E; !0x0F << 1 → 0xE0.
    assert_eq!(core.get_int(Sbuf, 0, 64, Dtype::U8, 3), [0xFE, 0x6E, 0xE0]);
}

// ---------------------------------------------------------------------------------------------
// Activation functions.

fn act_ref(func: ActivationFunc, x: f64) -> f64 {
    let sigmoid = |v: f64| 1.0 / (1.0 + (-v).exp());
    let softplus = |v: f64| if v > 30.0 { v } else { v.exp().ln_1p() };
    match func {
        ActivationFunc::Identity => x,
        ActivationFunc::Relu => x.max(0.0),
        ActivationFunc::Gelu => gelu_ref(x),
        ActivationFunc::GeluApproxTanh => {
            let c = (2.0 / std::f64::consts::PI).sqrt();
            0.5 * x * (1.0 + (c * (x + 0.044715 * x.powi(3))).tanh())
        }
        ActivationFunc::GeluApproxSigmoid => x * sigmoid(1.702 * x),
        ActivationFunc::Silu => x * sigmoid(x),
        ActivationFunc::Sigmoid => sigmoid(x),
        ActivationFunc::Tanh => x.tanh(),
        ActivationFunc::Exp => x.exp(),
        ActivationFunc::Square => x * x,
        ActivationFunc::Rsqrt => 1.0 / x.sqrt(),
        ActivationFunc::Reciprocal => 1.0 / x,
        ActivationFunc::Sqrt => x.sqrt(),
        ActivationFunc::Log => x.ln(),
        ActivationFunc::Softplus => softplus(x),
        ActivationFunc::Abs => x.abs(),
        ActivationFunc::Sign => {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                0.0
            }
        }
        ActivationFunc::Erf => erf_ref(x),
        ActivationFunc::Mish => x * softplus(x).tanh(),
        ActivationFunc::Sin => x.sin(),
        ActivationFunc::Arctan => x.atan(),
    }
}

#[test]
fn every_activation_function_matches_f64_on_a_grid() {
    // -6 … 6 in steps of 0.25, plus a few awkward points.
    let mut xs: Vec<f32> = (-24..=24).map(|i| i as f32 * 0.25).collect();
    xs.extend([1e-3, -1e-3, 0.1, -0.7, 9.5, -9.5, 20.0]);
    let n = xs.len() as u16;
    for &func in ActivationFunc::ALL {
        let mut core = Core::small();
        core.put(Sbuf, 3, 0, Dtype::F32, &xs);
        let o = core.ok(
            EngineKind::Act,
            Instruction::Activation {
                func,
                out: tile(Sbuf, 3, 1, 1024, Dtype::F32, n),
                input: tile(Sbuf, 3, 1, 0, Dtype::F32, n),
                scale: ScalarOperand::Imm(1.0),
                bias: None,
                reduce: ReduceCmd::Idle,
            },
        );
        let got = core.get(Sbuf, 3, 1024, Dtype::F32, xs.len());
        let mut any_nan = false;
        for (&x, &g) in xs.iter().zip(&got) {
            let want = act_ref(func, f64::from(x));
            any_nan |= want.is_nan();
            // One f32 rounding of an f64 result is 6e-8 relative; allow a few ulps.
            assert!(
                close(g, want, 4e-7, 1e-30),
                "{func}({x}) = {g}, want {want}"
            );
        }
        assert_eq!(o.produced_nan, any_nan, "{func}");
    }
}

#[test]
fn activation_applies_vector_scale_and_bias_per_partition() {
    let mut core = Core::small();
    for p in 0..4u32 {
        core.put(Sbuf, p, 0, Dtype::F32, &[1.0, 2.0, 3.0]);
        core.put(Sbuf, 10 + p, 64, Dtype::F32, &[p as f32 + 1.0]); // scale
        core.put(Sbuf, 20 + p, 128, Dtype::Bf16, &[-(p as f32)]); // bias
    }
    core.ok(
        EngineKind::Act,
        Instruction::Activation {
            func: ActivationFunc::Identity,
            out: tile(Sbuf, 0, 4, 256, Dtype::F32, 3),
            input: tile(Sbuf, 0, 4, 0, Dtype::F32, 3),
            scale: ScalarOperand::Vector(so(Sbuf, 10, 64, Dtype::F32)),
            bias: Some(ScalarOperand::Vector(so(Sbuf, 20, 128, Dtype::Bf16))),
            reduce: ReduceCmd::Idle,
        },
    );
    for p in 0..4u32 {
        let s = p as f32 + 1.0;
        let b = -(p as f32);
        assert_eq!(
            core.get(Sbuf, p, 256, Dtype::F32, 3),
            [s + b, 2.0 * s + b, 3.0 * s + b]
        );
    }
}

#[test]
fn act_accumulators_follow_the_reduce_commands() {
    let mut core = Core::small();
    for p in 0..4u32 {
        core.put(Sbuf, p, 0, Dtype::F32, &[1.0, 2.0, p as f32]);
    }
    let act = |reduce, start: u32| Instruction::Activation {
        func: ActivationFunc::Identity,
        out: tile(Sbuf, start, 2, 512, Dtype::F32, 3),
        input: tile(Sbuf, start, 2, 0, Dtype::F32, 3),
        scale: ScalarOperand::Imm(1.0),
        bias: None,
        reduce,
    };
    let acc = |core: &Core| core.states[EngineKind::Act.index()].accumulators()[..4].to_vec();
    core.ok(EngineKind::Act, act(ReduceCmd::ResetReduce, 0));
    assert_eq!(acc(&core), [3.0, 4.0, 0.0, 0.0]);
    core.ok(EngineKind::Act, act(ReduceCmd::Reduce, 1));
    assert_eq!(acc(&core), [3.0, 8.0, 5.0, 0.0]);
    core.ok(EngineKind::Act, act(ReduceCmd::Idle, 0));
    assert_eq!(acc(&core), [3.0, 8.0, 5.0, 0.0]);
    core.ok(EngineKind::Act, act(ReduceCmd::LoadReduce, 2));
    assert_eq!(acc(&core), [3.0, 8.0, 5.0, 6.0]);
    core.ok(EngineKind::Act, act(ReduceCmd::Reset, 2));
    assert_eq!(acc(&core), [0.0; 4]);
}

// ---------------------------------------------------------------------------------------------
// tensor_scalar, tensor_reduce, transpose, iota, memset, copies.

#[test]
fn tensor_scalar_reverse_flags_swap_operands() {
    let xs = [0.0f32, 1.0, 2.5, -4.0, 5.0];
    let vec_vals = [2.0f32, -1.0, 0.5];
    for engine in [EngineKind::Act, EngineKind::Dve, EngineKind::Pool] {
        for (reverse0, reverse1) in [(false, false), (true, false), (false, true), (true, true)] {
            let mut core = Core::small();
            for p in 0..3u32 {
                core.put(Sbuf, p, 0, Dtype::F32, &xs);
                core.put(Sbuf, 40 + p, 100, Dtype::F32, &[vec_vals[p as usize]]);
            }
            core.ok(
                engine,
                Instruction::TensorScalar {
                    out: tile(Sbuf, 0, 3, 200, Dtype::F32, xs.len() as u16),
                    input: tile(Sbuf, 0, 3, 0, Dtype::F32, xs.len() as u16),
                    op0: AluOp::Subtract,
                    operand0: ScalarOperand::Imm(3.0),
                    reverse0,
                    op1: AluOp::Divide,
                    operand1: ScalarOperand::Vector(so(Sbuf, 40, 100, Dtype::F32)),
                    reverse1,
                },
            );
            for (p, &vv) in vec_vals.iter().enumerate() {
                let got = core.get(Sbuf, p as u32, 200, Dtype::F32, xs.len());
                for (&x, &g) in xs.iter().zip(&got) {
                    let x = f64::from(x);
                    let v = f64::from(vv);
                    let s0 = if reverse0 { 3.0 - x } else { x - 3.0 };
                    let want = if reverse1 { v / s0 } else { s0 / v };
                    assert!(
                        close(g, want, 1e-7, 0.0),
                        "{engine} rev=({reverse0},{reverse1}) x={x}: {g} vs {want}"
                    );
                }
            }
        }
    }
}

#[test]
fn tensor_reduce_add_and_max_over_one_and_two_axes_with_negate() {
    // Input per partition: dims [2][3][4] laid out with a gap (outer step 16, middle step 5):
    // element (i, j, l) at 16i + 5j + l.
    let dims: [(i16, u16); 3] = [(16, 2), (5, 3), (1, 4)];
    let mut core = Core::small();
    let mut vals = [[[0f32; 4]; 3]; 2];
    let mut rng = Lcg(3);
    for p in 0..5u32 {
        let mut mem = vec![0f32; 32];
        for (i, vi) in vals.iter_mut().enumerate() {
            for (j, vj) in vi.iter_mut().enumerate() {
                for (l, v) in vj.iter_mut().enumerate() {
                    *v = (rng.next() * 8.0).round();
                    mem[16 * i + 5 * j + l] = *v;
                }
            }
        }
        core.put(Sbuf, p, 0, Dtype::F32, &mem);
        let input = ap(Sbuf, p, 1, 0, Dtype::F32, &dims);
        // add over the last axis, negated → 6 outputs.
        core.ok(
            EngineKind::Dve,
            Instruction::TensorReduce {
                op: AluOp::Add,
                out: tile(Sbuf, p, 1, 512, Dtype::F32, 6),
                input,
                axes: 1,
                negate: true,
            },
        );
        // max over the last two axes → 2 outputs (on POOL, bf16 output).
        core.ok(
            EngineKind::Pool,
            Instruction::TensorReduce {
                op: AluOp::Max,
                out: tile(Sbuf, p, 1, 640, Dtype::Bf16, 2),
                input,
                axes: 2,
                negate: false,
            },
        );
        // add over two axes, not negated.
        core.ok(
            EngineKind::Dve,
            Instruction::TensorReduce {
                op: AluOp::Add,
                out: tile(Sbuf, p, 1, 700, Dtype::F32, 2),
                input,
                axes: 2,
                negate: false,
            },
        );
        let sums1 = core.get(Sbuf, p, 512, Dtype::F32, 6);
        let max2 = core.get(Sbuf, p, 640, Dtype::Bf16, 2);
        let sums2 = core.get(Sbuf, p, 700, Dtype::F32, 2);
        for i in 0..2 {
            let mut mx = f64::NEG_INFINITY;
            let mut s2 = 0.0;
            for j in 0..3 {
                let s: f64 = vals[i][j].iter().map(|&v| f64::from(v)).sum();
                assert_eq!(f64::from(sums1[i * 3 + j]), -s);
                s2 += s;
                for &v in &vals[i][j] {
                    mx = mx.max(f64::from(v));
                }
            }
            assert_eq!(f64::from(max2[i]), mx);
            assert_eq!(f64::from(sums2[i]), s2);
        }
    }
    // Bitwise reductions are exact on int32.
    core.put_int(
        Sbuf,
        0,
        800,
        Dtype::I32,
        &[0x0100_0001, 0x0200_0000, 0x4000_0000],
    );
    core.ok(
        EngineKind::Dve,
        Instruction::TensorReduce {
            op: AluOp::BitwiseOr,
            out: tile(Sbuf, 0, 1, 900, Dtype::I32, 1),
            input: tile(Sbuf, 0, 1, 800, Dtype::I32, 3),
            axes: 1,
            negate: false,
        },
    );
    assert_eq!(core.get_int(Sbuf, 0, 900, Dtype::I32, 1), [0x4300_0001]);
}

#[test]
fn transpose_128_by_64_on_dve_and_pe() {
    let (p, f) = (128u32, 64u16);
    let mut core = Core::small();
    let val = |pp: u32, ff: u32| (pp * 100 + ff) as f32;
    for pp in 0..p {
        let row: Vec<f32> = (0..u32::from(f)).map(|ff| val(pp, ff)).collect();
        core.put(Sbuf, pp, 0, Dtype::F32, &row);
    }
    let input = tile(Sbuf, 0, p, 0, Dtype::F32, f);
    let o = core.ok(
        EngineKind::Dve,
        Instruction::Transpose {
            out: tile(Sbuf, 0, u32::from(f), 1024, Dtype::F32, p as u16),
            input,
        },
    );
    assert_eq!(o.elements, 128 * 64);
    core.ok(
        EngineKind::Pe,
        Instruction::Transpose {
            out: tile(Psum, 0, u32::from(f), 0, Dtype::F32, p as u16),
            input,
        },
    );
    for ff in 0..u32::from(f) {
        let want: Vec<f32> = (0..p).map(|pp| val(pp, ff)).collect();
        assert_eq!(core.get(Sbuf, ff, 1024, Dtype::F32, p as usize), want);
        assert_eq!(core.get(Psum, ff, 0, Dtype::F32, p as usize), want);
    }
    // PE writes PSUM only.
    assert!(matches!(
        core.run(
            EngineKind::Pe,
            Instruction::Transpose {
                out: tile(Sbuf, 0, u32::from(f), 1024, Dtype::F32, p as u16),
                input,
            },
        ),
        Err(ComputeError::WrongSpace {
            operand: "out",
            expected: MemSpace::Psum,
            ..
        })
    ));
    // Integer transposes are exact beyond 2^24.
    core.put_int(Sbuf, 0, 4096, Dtype::I32, &[0x7FFF_FFF1, 3]);
    core.put_int(Sbuf, 1, 4096, Dtype::I32, &[-0x7FFF_FFF1, 5]);
    core.ok(
        EngineKind::Dve,
        Instruction::Transpose {
            out: tile(Sbuf, 0, 2, 4200, Dtype::I32, 2),
            input: tile(Sbuf, 0, 2, 4096, Dtype::I32, 2),
        },
    );
    assert_eq!(
        core.get_int(Sbuf, 0, 4200, Dtype::I32, 2),
        [0x7FFF_FFF1, -0x7FFF_FFF1]
    );
    assert_eq!(core.get_int(Sbuf, 1, 4200, Dtype::I32, 2), [3, 5]);
}

#[test]
fn iota_writes_the_affine_pattern_and_casts() {
    let pattern = IotaPattern::new(&[IotaDim::new(10, 2), IotaDim::new(-1, 3)]).unwrap();
    let mut core = Core::small();
    let iota = |out| Instruction::Iota {
        out,
        offset: 100,
        channel_multiplier: 7,
        pattern,
    };
    let o = core.ok(
        EngineKind::Pool,
        iota(ap(Sbuf, 4, 8, 0, Dtype::I32, &[(3, 2), (1, 3)])),
    );
    assert_eq!(o.elements, 48);
    core.ok(EngineKind::Pool, iota(tile(Sbuf, 4, 8, 64, Dtype::F32, 6)));
    core.ok(EngineKind::Pool, iota(tile(Sbuf, 4, 8, 128, Dtype::I8, 6)));
    for p in 0..8i32 {
        let base = 100 + 7 * p;
        let want: Vec<i32> = [0, -1, -2, 10, 9, 8].iter().map(|d| base + d).collect();
        let got = core.get_int(Sbuf, 4 + p as u32, 0, Dtype::I32, 6);
        assert_eq!(got, want.iter().map(|&v| i128::from(v)).collect::<Vec<_>>());
        let got_f = core.get(Sbuf, 4 + p as u32, 64, Dtype::F32, 6);
        assert_eq!(got_f, want.iter().map(|&v| v as f32).collect::<Vec<_>>());
        let got_i8 = core.get_int(Sbuf, 4 + p as u32, 128, Dtype::I8, 6);
        let sat: Vec<i128> = want.iter().map(|&v| i128::from(v.min(127))).collect();
        assert_eq!(got_i8, sat);
    }
    assert!(matches!(
        core.run(EngineKind::Dve, iota(tile(Sbuf, 0, 1, 0, Dtype::I32, 6))),
        Err(ComputeError::NotAllowedOnEngine { .. })
    ));
}

#[test]
fn memset_saturates_and_rounds_into_int8() {
    let mut core = Core::small();
    for (i, (value, want)) in [
        (300.0f32, 127i128),
        (-300.0, -128),
        (2.5, 2),
        (-2.5, -2),
        (3.5, 4),
        (127.5, 127),
        (-0.4, 0),
        (f32::NAN, 0),
        (f32::INFINITY, 127),
    ]
    .into_iter()
    .enumerate()
    {
        let out = tile(Sbuf, 2, 3, 16 * i as u32, Dtype::I8, 5);
        let o = core.ok(EngineKind::Dve, Instruction::Memset { out, value });
        assert_eq!(o.elements, 15);
        assert!(!o.produced_nan, "NaN into an integer output is 0, not NaN");
        for p in 2..5 {
            assert_eq!(
                core.get_int(Sbuf, p, 16 * i as u32, Dtype::I8, 5),
                [want; 5],
                "memset {value}"
            );
        }
    }
    let o = core.ok(
        EngineKind::Pool,
        Instruction::Memset {
            out: tile(Sbuf, 0, 1, 1024, Dtype::Bf16, 4),
            value: f32::NAN,
        },
    );
    assert!(o.produced_nan);
}

/// Copies `vals` (f32) to `dtype` with `tensor_copy` and returns the raw output codes.
fn copy_codes(vals: &[f32], dtype: Dtype) -> Vec<u64> {
    let mut core = Core::small();
    core.put(Sbuf, 0, 0, Dtype::F32, vals);
    let n = vals.len() as u16;
    core.ok(
        EngineKind::Dve,
        Instruction::TensorCopy {
            out: tile(Sbuf, 0, 1, 4096, dtype, n),
            input: tile(Sbuf, 0, 1, 0, Dtype::F32, n),
        },
    );
    let size = dtype.size();
    core.bytes(Sbuf, 0, 4096, size * vals.len())
        .chunks_exact(size)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(c);
            u64::from_le_bytes(b)
        })
        .collect()
}

#[test]
fn casts_round_to_nearest_even_and_saturate() {
    let p2 = |e: i32| 2f32.powi(e);
    // bf16: ties to even, overflow to inf.
    assert_eq!(
        copy_codes(
            &[
                1.0 + p2(-8),
                1.0 + 3.0 * p2(-8),
                -1.0 - p2(-8),
                f32::MAX,
                65536.0
            ],
            Dtype::Bf16
        ),
        [0x3F80, 0x3F82, 0xBF80, 0x7F80, 0x4780]
    );
    // fp8 e4m3 (fn): ties to even, saturate at ±448, inf → 448, NaN → 0x7F.
    assert_eq!(
        copy_codes(
            &[
                1.0625,
                1.1875,
                448.0,
                464.0,
                1e6,
                -1e6,
                f32::INFINITY,
                f32::NAN,
                p2(-10),
                3.0 * p2(-10),
                -0.0
            ],
            Dtype::Fp8E4
        ),
        [0x38, 0x3A, 0x7E, 0x7E, 0x7E, 0xFE, 0x7E, 0x7F, 0x00, 0x02, 0x80]
    );
    // fp8 e5m2: IEEE-like, overflow to inf.
    assert_eq!(
        copy_codes(
            &[57344.0, 61440.0, 1e6, 1.125, -f32::INFINITY, p2(-17)],
            Dtype::Fp8E5
        ),
        [0x7B, 0x7C, 0x7C, 0x3C, 0xFC, 0x00]
    );
    // fp8 e3m4 (fn, our choice): saturate at ±30.
    assert_eq!(
        copy_codes(&[30.0, 31.0, 100.0, 1.03125, -1.09375], Dtype::Fp8E3),
        [0x7E, 0x7E, 0x7E, 0x30, 0xB2]
    );
    // int8: RNE then saturate, NaN → 0.
    let i8s: Vec<i8> = copy_codes(
        &[
            127.5,
            126.5,
            -128.5,
            -129.0,
            2.5,
            -0.5,
            1e10,
            f32::NAN,
            -3.7,
        ],
        Dtype::I8,
    )
    .into_iter()
    .map(|c| c as u8 as i8)
    .collect();
    assert_eq!(i8s, [127, 126, -128, -128, 2, 0, 127, 0, -4]);
    // uint16 saturates at both ends.
    assert_eq!(
        copy_codes(&[-5.0, 65535.4, 70000.0, 1.5], Dtype::U16),
        [0, 65535, 65535, 2]
    );
}

#[test]
fn fp8_codes_round_trip_exhaustively() {
    for dtype in [Dtype::Fp8E4, Dtype::Fp8E5, Dtype::Fp8E3] {
        let mut nans = 0;
        for code in 0..=255u64 {
            let v = convert::decode(dtype, code);
            if v.is_nan() {
                nans += 1;
                assert_eq!(convert::encode(dtype, v) & 0x7F, 0x7F);
            } else {
                assert_eq!(convert::encode(dtype, v), code, "{dtype} {code:#04x} = {v}");
            }
        }
        // e4m3/e3m4 ("fn"): one NaN per sign; e5m2: three NaN mantissas per sign.
        let want = if dtype == Dtype::Fp8E5 { 6 } else { 2 };
        assert_eq!(nans, want, "{dtype}");
    }
    let spot = [
        (Dtype::Fp8E4, 0x7E, 448.0),
        (Dtype::Fp8E4, 0x01, 2f32.powi(-9)),
        (Dtype::Fp8E4, 0x08, 2f32.powi(-6)),
        (Dtype::Fp8E4, 0x38, 1.0),
        (Dtype::Fp8E4, 0xC0, -2.0),
        (Dtype::Fp8E5, 0x7B, 57344.0),
        (Dtype::Fp8E5, 0x7C, f32::INFINITY),
        (Dtype::Fp8E5, 0x01, 2f32.powi(-16)),
        (Dtype::Fp8E5, 0x3C, 1.0),
        (Dtype::Fp8E3, 0x7E, 30.0),
        (Dtype::Fp8E3, 0x01, 2f32.powi(-6)),
        (Dtype::Fp8E3, 0x30, 1.0),
    ];
    for (dtype, code, want) in spot {
        assert_eq!(convert::decode(dtype, code), want, "{dtype} {code:#04x}");
    }
    assert!(convert::decode(Dtype::Fp8E4, 0x7F).is_nan());
    assert!(convert::decode(Dtype::Fp8E3, 0xFF).is_nan());
    assert!(convert::decode(Dtype::Fp8E5, 0x7D).is_nan());
}

#[test]
fn integer_copies_are_exact_and_saturate() {
    let mut core = Core::small();
    core.put_int(
        Sbuf,
        0,
        0,
        Dtype::I32,
        &[0x7FFF_FFF1, -0x7FFF_FFF1, 300, -3],
    );
    core.put_int(Sbuf, 0, 64, Dtype::U64, &[-1, 5]); // u64::MAX, 5
    let copy = |out, input| Instruction::TensorCopy { out, input };
    // (engine, out, input): each integer copy of the inputs above.
    for (engine, out, input) in [
        (
            EngineKind::Act,
            tile(Sbuf, 0, 1, 128, Dtype::I32, 4),
            tile(Sbuf, 0, 1, 0, Dtype::I32, 4),
        ),
        (
            EngineKind::Dve,
            tile(Sbuf, 0, 1, 256, Dtype::I8, 4),
            tile(Sbuf, 0, 1, 0, Dtype::I32, 4),
        ),
        (
            EngineKind::Pool,
            tile(Sbuf, 0, 1, 320, Dtype::U64, 2),
            tile(Sbuf, 0, 1, 64, Dtype::U64, 2),
        ),
        (
            EngineKind::Pool,
            tile(Sbuf, 0, 1, 384, Dtype::U8, 4),
            tile(Sbuf, 0, 1, 0, Dtype::I32, 4),
        ),
        (
            EngineKind::Dve,
            tile(Sbuf, 0, 1, 448, Dtype::F32, 4),
            tile(Sbuf, 0, 1, 0, Dtype::I32, 4),
        ),
    ] {
        core.ok(engine, copy(out, input));
    }
    assert_eq!(
        core.get_int(Sbuf, 0, 128, Dtype::I32, 4),
        [0x7FFF_FFF1, -0x7FFF_FFF1, 300, -3]
    );
    assert_eq!(
        core.get_int(Sbuf, 0, 256, Dtype::I8, 4),
        [127, -128, 127, -3]
    );
    assert_eq!(
        core.get_int(Sbuf, 0, 320, Dtype::U64, 2),
        [i128::from(u64::MAX), 5]
    );
    assert_eq!(core.get_int(Sbuf, 0, 384, Dtype::U8, 4), [255, 0, 255, 0]);
    // u64 above i64::MAX saturates narrower or signed destinations.
    core.ok(
        EngineKind::Dve,
        copy(
            tile(Sbuf, 0, 1, 512, Dtype::I64, 2),
            tile(Sbuf, 0, 1, 64, Dtype::U64, 2),
        ),
    );
    core.ok(
        EngineKind::Dve,
        copy(
            tile(Sbuf, 0, 1, 576, Dtype::U32, 2),
            tile(Sbuf, 0, 1, 64, Dtype::U64, 2),
        ),
    );
    assert_eq!(
        core.get_int(Sbuf, 0, 512, Dtype::I64, 2),
        [i128::from(i64::MAX), 5]
    );
    assert_eq!(
        core.get_int(Sbuf, 0, 576, Dtype::U32, 2),
        [i128::from(u32::MAX), 5]
    );
    assert_eq!(
        core.get(Sbuf, 0, 448, Dtype::F32, 4),
        [2147483648.0, -2147483648.0, 300.0, -3.0]
    );
}

#[test]
fn overlapping_operands_read_all_inputs_before_writing() {
    let mut core = Core::small();
    core.put(Sbuf, 0, 0, Dtype::F32, &[1.0, 2.0, 3.0, 4.0, 5.0]);
    // out = in0 shifted by one element: out[i] = in0[i] + in1[i] with out at +4 bytes.
    core.ok(
        EngineKind::Dve,
        Instruction::TensorTensor {
            op: AluOp::Add,
            out: tile(Sbuf, 0, 1, 4, Dtype::F32, 4),
            in0: tile(Sbuf, 0, 1, 0, Dtype::F32, 4),
            in1: so(Sbuf, 0, 0, Dtype::F32).into(),
        },
    );
    assert_eq!(
        core.get(Sbuf, 0, 0, Dtype::F32, 5),
        [1.0, 2.0, 4.0, 6.0, 8.0]
    );
    // Reversed in place: out has a negative step over the same bytes.
    core.put(Sbuf, 1, 0, Dtype::Bf16, &[1.0, 2.0, 3.0]);
    core.ok(
        EngineKind::Act,
        Instruction::TensorCopy {
            out: ap(Sbuf, 1, 1, 4, Dtype::Bf16, &[(-1, 3)]),
            input: tile(Sbuf, 1, 1, 0, Dtype::Bf16, 3),
        },
    );
    assert_eq!(core.get(Sbuf, 1, 0, Dtype::Bf16, 3), [3.0, 2.0, 1.0]);
}

#[test]
fn fp32_rows_in_place_and_across_partitions_match_the_whole_tile_order() {
    // 300 elements per partition: more than one of the row path's chunks.
    let (n, parts) = (300usize, 3u32);
    let mut lcg = Lcg(7);
    let mut core = Core::small();
    let mut a: Vec<Vec<f32>> = Vec::new();
    let mut b: Vec<Vec<f32>> = Vec::new();
    for p in 0..parts + 1 {
        a.push((0..n).map(|_| lcg.next()).collect());
        b.push((0..n).map(|_| lcg.next()).collect());
        core.put(Sbuf, p, 0, Dtype::F32, &a[p as usize]);
        core.put(Psum, p, 0, Dtype::F32, &b[p as usize]);
    }
    let tt = |op, out_start, out_offset| Instruction::TensorTensor {
        op,
        out: tile(Sbuf, out_start, parts, out_offset, Dtype::F32, n as u16),
        in0: tile(Sbuf, 0, parts, 0, Dtype::F32, n as u16),
        in1: so(Psum, 0, 0, Dtype::F32).into(),
    };
    // In place (out is in0): out[p][i] = a[p][i] - b[p][i].
    core.ok(EngineKind::Dve, tt(AluOp::Subtract, 0, 0));
    for p in 0..parts as usize {
        let want: Vec<f32> = a[p].iter().zip(&b[p]).map(|(x, y)| x - y).collect();
        assert_eq!(
            core.get(Sbuf, p as u32, 0, Dtype::F32, n),
            want,
            "partition {p}"
        );
        a[p] = want;
    }
    // Out one partition down from in0: every input is read before any output is written, so
    // partition p + 1 gets a[p] · b[p], not a value computed from an already written row.
    core.ok(EngineKind::Dve, tt(AluOp::Multiply, 1, 0));
    for p in 0..parts as usize {
        let want: Vec<f32> = a[p].iter().zip(&b[p]).map(|(x, y)| x * y).collect();
        assert_eq!(
            core.get(Sbuf, p as u32 + 1, 0, Dtype::F32, n),
            want,
            "partition {}",
            p + 1
        );
    }
    // Half a row over in0 in the same partitions.
    let before: Vec<Vec<f32>> = (0..parts)
        .map(|p| core.get(Sbuf, p, 0, Dtype::F32, n))
        .collect();
    core.ok(EngineKind::Dve, tt(AluOp::Max, 0, 2 * n as u32));
    for p in 0..parts as usize {
        let want: Vec<f32> = before[p]
            .iter()
            .zip(&b[p])
            .map(|(x, y)| compute::alu::alu(AluOp::Max, *x, *y))
            .collect();
        assert_eq!(core.get(Sbuf, p as u32, 2 * n as u32, Dtype::F32, n), want);
    }
    // A NaN written through the fp32 rows is reported.
    core.put(Psum, 0, 0, Dtype::F32, &[0.0]);
    core.put(Sbuf, 0, 0, Dtype::F32, &[0.0]);
    assert!(
        core.ok(EngineKind::Dve, tt(AluOp::Divide, 0, 4 * n as u32))
            .produced_nan
    );
    assert!(
        !core
            .ok(EngineKind::Dve, tt(AluOp::Add, 0, 4 * n as u32))
            .produced_nan
    );
}

#[test]
fn streamed_activation_scalar_and_copy_rows_match_element_by_element() {
    // 300 fp32 elements per partition (more than one streamed chunk), 3 partitions, a scale
    // vector and a bias vector.
    let (n, parts) = (300usize, 3u32);
    let mut lcg = Lcg(11);
    let mut core = Core::small();
    let xs: Vec<Vec<f32>> = (0..parts)
        .map(|_| (0..n).map(|_| lcg.next() * 4.0).collect())
        .collect();
    let (scale, bias) = ([0.5f32, -2.0, 3.0], [0.25f32, -1.0, 0.0]);
    for p in 0..parts {
        core.put(Sbuf, p, 0, Dtype::F32, &xs[p as usize]);
        core.put(Sbuf, 50 + p, 0, Dtype::F32, &[scale[p as usize]]);
        core.put(Sbuf, 60 + p, 0, Dtype::F32, &[bias[p as usize]]);
    }
    let bf16 = |v: f32| half::bf16::from_f32(v).to_f32();
    // Activation, fp32 in, bf16 out (disjoint).
    core.ok(
        EngineKind::Act,
        Instruction::Activation {
            func: ActivationFunc::Tanh,
            out: tile(Sbuf, 0, parts, 4096, Dtype::Bf16, n as u16),
            input: tile(Sbuf, 0, parts, 0, Dtype::F32, n as u16),
            scale: ScalarOperand::Vector(so(Sbuf, 50, 0, Dtype::F32)),
            bias: Some(ScalarOperand::Vector(so(Sbuf, 60, 0, Dtype::F32))),
            reduce: ReduceCmd::Idle,
        },
    );
    for p in 0..parts as usize {
        let want: Vec<f32> = xs[p]
            .iter()
            .map(|&x| {
                let a = compute::activation::activate(ActivationFunc::Tanh, x * scale[p] + bias[p]);
                bf16(a)
            })
            .collect();
        assert_eq!(
            core.get(Sbuf, p as u32, 4096, Dtype::Bf16, n),
            want,
            "act p{p}"
        );
    }
    // tensor_scalar in place: x = max(c_p, x · 1.5).
    core.ok(
        EngineKind::Dve,
        Instruction::TensorScalar {
            out: tile(Sbuf, 0, parts, 0, Dtype::F32, n as u16),
            input: tile(Sbuf, 0, parts, 0, Dtype::F32, n as u16),
            op0: AluOp::Multiply,
            operand0: ScalarOperand::Imm(1.5),
            reverse0: false,
            op1: AluOp::Max,
            operand1: ScalarOperand::Vector(so(Sbuf, 60, 0, Dtype::F32)),
            reverse1: true,
        },
    );
    let scaled: Vec<Vec<f32>> = (0..parts as usize)
        .map(|p| {
            xs[p]
                .iter()
                .map(|&x| compute::alu::alu(AluOp::Max, bias[p], x * 1.5))
                .collect()
        })
        .collect();
    for (p, want) in scaled.iter().enumerate() {
        assert_eq!(
            &core.get(Sbuf, p as u32, 0, Dtype::F32, n),
            want,
            "scalar p{p}"
        );
    }
    // A copy of the bf16 activations to fp32 over the same bytes (same first byte, larger
    // elements): not element for element, so every input is read before the first output is
    // written, though the outputs run ahead of the inputs.
    let act: Vec<Vec<f32>> = (0..parts)
        .map(|p| core.get(Sbuf, p, 4096, Dtype::Bf16, n))
        .collect();
    core.ok(
        EngineKind::Act,
        Instruction::TensorCopy {
            out: tile(Sbuf, 0, parts, 4096, Dtype::F32, n as u16),
            input: tile(Sbuf, 0, parts, 4096, Dtype::Bf16, n as u16),
        },
    );
    for (p, want) in act.iter().enumerate() {
        assert_eq!(
            &core.get(Sbuf, p as u32, 4096, Dtype::F32, n),
            want,
            "copy p{p}"
        );
    }
}

#[test]
fn nan_results_are_reported() {
    let mut core = Core::small();
    core.put(Sbuf, 0, 0, Dtype::F32, &[1.0, 2.0, -1.0]);
    let log = |n, dtype| Instruction::Activation {
        func: ActivationFunc::Log,
        out: tile(Sbuf, 0, 1, 64, dtype, n),
        input: tile(Sbuf, 0, 1, 0, Dtype::F32, n),
        scale: ScalarOperand::Imm(1.0),
        bias: None,
        reduce: ReduceCmd::Idle,
    };
    assert!(!core.ok(EngineKind::Act, log(2, Dtype::F32)).produced_nan);
    assert!(core.ok(EngineKind::Act, log(3, Dtype::F32)).produced_nan);
    assert!(core.get(Sbuf, 0, 64, Dtype::F32, 3)[2].is_nan());
    assert!(core.ok(EngineKind::Act, log(3, Dtype::Fp8E4)).produced_nan);
    assert_eq!(
        core.bytes(Sbuf, 0, 66, 1)[0] & 0x7F,
        0x7F,
        "fp8 NaN is S.1111.111"
    );
    // An integer output cannot hold NaN.
    assert!(!core.ok(EngineKind::Act, log(3, Dtype::I16)).produced_nan);
    // 0/0 on DVE.
    core.put(Sbuf, 1, 0, Dtype::F32, &[0.0]);
    let o = core.ok(
        EngineKind::Dve,
        Instruction::TensorTensor {
            op: AluOp::Divide,
            out: tile(Sbuf, 1, 1, 64, Dtype::Bf16, 1),
            in0: tile(Sbuf, 1, 1, 0, Dtype::F32, 1),
            in1: so(Sbuf, 1, 0, Dtype::F32).into(),
        },
    );
    assert!(o.produced_nan);
}

// ---------------------------------------------------------------------------------------------
// Errors.

#[test]
fn matmul_without_stationary_or_with_k_mismatch_fails() {
    let mut core = Core::small();
    let mm = |k| Instruction::MatmulMoving {
        dst: tile(Psum, 0, 16, 0, Dtype::F32, 8),
        moving: tile(Sbuf, 0, k, 0, Dtype::Bf16, 8),
        accumulate: false,
    };
    assert_eq!(
        core.run(EngineKind::Pe, mm(128)),
        Err(ComputeError::NoStationary)
    );
    core.put(Sbuf, 0, 0, Dtype::Bf16, &[1.0; 8]);
    core.ok(
        EngineKind::Pe,
        Instruction::MatmulLoadStationary {
            reversed: false,
            pass: nrt_hal::isa::MatmulPass::Single,
            stationary: tile(Sbuf, 0, 64, 1024, Dtype::Bf16, 16),
        },
    );
    core.put(Psum, 0, 0, Dtype::F32, &[42.0]);
    assert_eq!(
        core.run(EngineKind::Pe, mm(128)),
        Err(ComputeError::KMismatch {
            stationary: 64,
            moving: 128
        })
    );
    assert_eq!(
        core.get(Psum, 0, 0, Dtype::F32, 1),
        [42.0],
        "nothing written"
    );
    core.ok(EngineKind::Pe, mm(64));
    // dst partitions must equal M.
    assert!(matches!(
        core.run(
            EngineKind::Pe,
            Instruction::MatmulMoving {
                dst: tile(Psum, 0, 8, 0, Dtype::F32, 8),
                moving: tile(Sbuf, 0, 64, 0, Dtype::Bf16, 8),
                accumulate: false,
            }
        ),
        Err(ComputeError::ShapeMismatch { .. })
    ));
    // Integer matmul operands are not supported.
    assert!(matches!(
        core.run(
            EngineKind::Pe,
            Instruction::MatmulLoadStationary {
                reversed: false,
                pass: nrt_hal::isa::MatmulPass::Single,
                stationary: tile(Sbuf, 0, 64, 1024, Dtype::I8, 16),
            }
        ),
        Err(ComputeError::UnsupportedDtype {
            dtype: Dtype::I8,
            ..
        })
    ));
    assert_eq!(
        core.states[EngineKind::Pe.index()].stationary_shape(),
        Some((64, 16)),
        "a failed load leaves the stationary operand"
    );
}

#[test]
fn access_patterns_beyond_the_partition_are_out_of_bounds() {
    let pb = trn1_sbuf_pb();
    assert_eq!(pb, 192 * 1024);
    let mut core = Core::new(pb);
    let copy = |input| Instruction::TensorCopy {
        out: tile(Sbuf, 0, 4, 0, Dtype::F32, 4),
        input,
    };
    // The last 16 bytes of each partition are fine; one more element is not.
    core.ok(
        EngineKind::Dve,
        copy(tile(Sbuf, 0, 4, pb as u32 - 16, Dtype::F32, 4)),
    );
    for input in [
        tile(Sbuf, 0, 4, pb as u32 - 12, Dtype::F32, 4),
        tile(Sbuf, 0, 4, pb as u32, Dtype::F32, 4),
        ap(Sbuf, 0, 4, 4, Dtype::F32, &[(-2, 4)]),
    ] {
        assert!(matches!(
            core.run(EngineKind::Dve, copy(input)),
            Err(ComputeError::OutOfBounds {
                operand: "input",
                ..
            })
        ));
    }
    // PSUM partitions are 16 KiB.
    assert!(matches!(
        core.run(
            EngineKind::Dve,
            Instruction::Memset {
                out: tile(Psum, 0, 1, 16 * 1024 - 4, Dtype::F32, 2),
                value: 1.0,
            }
        ),
        Err(ComputeError::OutOfBounds { operand: "out", .. })
    ));
    // A view holding fewer partitions than the pattern names.
    let mut sbuf = vec![0u8; 4 * 1024];
    let mut psum = vec![0u8; 4 * 1024];
    let mut view = OnChipView {
        sbuf: &mut sbuf,
        sbuf_partition_bytes: 1024,
        psum: &mut psum,
        psum_partition_bytes: 1024,
    };
    let r = compute::execute(
        &rt(Instruction::Memset {
            out: tile(Sbuf, 2, 4, 0, Dtype::F32, 2),
            value: 1.0,
        }),
        EngineKind::Pool,
        &mut view,
        &mut EngineState::new(),
    );
    assert!(matches!(r, Err(ComputeError::OutOfBounds { .. })));
    // More than 64K elements per partition.
    let huge = ap(Sbuf, 0, 1, 0, Dtype::F32, &[(0, 300), (0, 300)]);
    assert!(matches!(
        core.run(
            EngineKind::Dve,
            Instruction::Memset {
                out: huge,
                value: 0.0
            }
        ),
        Err(ComputeError::TooManyElements {
            elements: 90000,
            ..
        })
    ));
}

#[test]
fn engine_and_operand_rules_are_enforced() {
    let mut core = Core::small();
    let tt = Instruction::TensorTensor {
        op: AluOp::Add,
        out: tile(Sbuf, 0, 2, 0, Dtype::F32, 4),
        in0: tile(Psum, 0, 2, 0, Dtype::F32, 4),
        in1: so(Psum, 0, 64, Dtype::F32).into(),
    };
    assert_eq!(
        core.run(EngineKind::Dve, tt.clone()),
        Err(ComputeError::BothInputsInPsum)
    );
    let copy = Instruction::TensorCopy {
        out: tile(Sbuf, 0, 2, 0, Dtype::F32, 4),
        input: tile(Sbuf, 0, 2, 64, Dtype::F32, 4),
    };
    assert_eq!(
        core.run(EngineKind::Sp, copy.clone()),
        Err(ComputeError::NotAllowedOnEngine {
            engine: EngineKind::Sp,
            opcode: "tensor_copy"
        })
    );
    assert!(matches!(
        core.run(EngineKind::Pe, copy),
        Err(ComputeError::NotAllowedOnEngine { .. })
    ));
    assert!(matches!(
        core.run(
            EngineKind::Dve,
            Instruction::Activation {
                func: ActivationFunc::Exp,
                out: tile(Sbuf, 0, 2, 0, Dtype::F32, 4),
                input: tile(Sbuf, 0, 2, 64, Dtype::F32, 4),
                scale: ScalarOperand::Imm(1.0),
                bias: None,
                reduce: ReduceCmd::Idle,
            }
        ),
        Err(ComputeError::NotAllowedOnEngine { .. })
    ));
    assert_eq!(
        core.run(EngineKind::Act, Instruction::Nop),
        Err(ComputeError::NotCompute { opcode: "nop" })
    );
    assert!(matches!(
        core.run(
            EngineKind::Dve,
            Instruction::TensorCopy {
                out: tile(Sbuf, 0, 2, 0, Dtype::F32, 4),
                input: tile(Sbuf, 0, 2, 64, Dtype::F32, 5),
            }
        ),
        Err(ComputeError::ShapeMismatch { .. })
    ));
    assert!(matches!(
        core.run(
            EngineKind::Dve,
            Instruction::TensorScalar {
                out: tile(Sbuf, 0, 2, 0, Dtype::I32, 4),
                input: tile(Sbuf, 0, 2, 64, Dtype::I32, 4),
                op0: AluOp::BitwiseAnd,
                operand0: ScalarOperand::Imm(1.0),
                reverse0: false,
                op1: AluOp::Add,
                operand1: ScalarOperand::Imm(1.0),
                reverse1: false,
            }
        ),
        Err(ComputeError::MixedOpKinds { .. })
    ));
}

// ---------------------------------------------------------------------------------------------
// Cost model.

#[test]
fn matmul_cost_grows_by_one_pe_cycle_per_moving_column() {
    let mm = |n| Instruction::MatmulMoving {
        dst: tile(Psum, 0, 128, 0, Dtype::F32, n),
        moving: tile(Sbuf, 0, 128, 0, Dtype::Bf16, n),
        accumulate: false,
    };
    for target in Target::ALL {
        let c512 = compute::cost(&mm(512), EngineKind::Pe, target);
        let c128 = compute::cost(&mm(128), EngineKind::Pe, target);
        assert_eq!(c512.0 - c128.0, 384, "{target:?}");
        let ld = compute::cost(
            &Instruction::MatmulLoadStationary {
                reversed: false,
                pass: nrt_hal::isa::MatmulPass::Single,
                stationary: tile(Sbuf, 0, 128, 0, Dtype::Bf16, 128),
            },
            EngineKind::Pe,
            target,
        );
        assert!(ld.0 >= 128);
    }
    // trn1: PE 2.8 GHz, SP 1.4 GHz.
    assert_eq!(
        compute::to_device_cycles(EngineCycles(384), EngineKind::Pe, Target::Trn1),
        192
    );
}

#[test]
fn device_cycle_conversion_rounds_up() {
    // trn1: PE 2.8 GHz, DVE 1.12 GHz, ACT = SP = 1.4 GHz.
    let t = Target::Trn1;
    assert_eq!(
        compute::to_device_cycles(EngineCycles(3), EngineKind::Pe, t),
        2
    );
    assert_eq!(
        compute::to_device_cycles(EngineCycles(4), EngineKind::Pe, t),
        2
    );
    assert_eq!(
        compute::to_device_cycles(EngineCycles(1), EngineKind::Dve, t),
        2
    );
    assert_eq!(
        compute::to_device_cycles(EngineCycles(4), EngineKind::Dve, t),
        5
    );
    assert_eq!(
        compute::to_device_cycles(EngineCycles(77), EngineKind::Act, t),
        77
    );
    assert_eq!(
        compute::to_device_cycles(EngineCycles(0), EngineKind::Pool, t),
        0
    );
    // trn2: DVE 0.96 GHz, SP 1.2 GHz: 4 cycles → 5.
    assert_eq!(
        compute::to_device_cycles(EngineCycles(4), EngineKind::Dve, Target::Trn2),
        5
    );
    assert_eq!(
        compute::to_device_cycles(EngineCycles(u64::MAX), EngineKind::Dve, Target::Trn2),
        u64::MAX
    );
}

#[test]
fn elementwise_cost_follows_engine_rates() {
    let copy = |dtype, n| Instruction::TensorCopy {
        out: tile(Sbuf, 0, 128, 0, dtype, n),
        input: tile(Sbuf, 0, 128, 0, dtype, n),
    };
    let c = |i: &Instruction, e, t| compute::cost(i, e, t).0;
    // (dtype, engine, target, cycles of 1024 elements per partition beyond the cost of one):
    // ACT, Pool and trn1 DVE stream one element per partition per cycle; trn2 DVE copies
    // two 2-byte elements per cycle and one fp32 (the rates fitted to the device profiles,
    // docs/simulator.md §7.2). Each engine has its own fixed cost, measured from one element.
    for (dtype, engine, target, cycles) in [
        (Dtype::F32, EngineKind::Act, Target::Trn1, 1024),
        (Dtype::F32, EngineKind::Dve, Target::Trn1, 1024),
        (Dtype::Bf16, EngineKind::Dve, Target::Trn2, 512),
        (Dtype::F32, EngineKind::Dve, Target::Trn2, 1024),
        (Dtype::F32, EngineKind::Pool, Target::Trn2, 1024),
    ] {
        let base = c(&copy(dtype, 1), engine, target) - 1;
        assert_eq!(
            c(&copy(dtype, 1024), engine, target),
            base + cycles,
            "{dtype} on {engine} of {target}"
        );
    }
    // Costs are total, even for pseudo-instructions.
    assert_eq!(
        c(
            &Instruction::PseudoBarrier {
                sem: nrt_hal::SemaphoreId(1),
                count: 2
            },
            EngineKind::Sp,
            Target::Trn1
        ),
        0
    );
}

// ---------------------------------------------------------------------------------------------
// Robustness: arbitrary instructions never panic, and a failed one writes nothing.

use nrt_hal::testkit::strategies as st;

/// Operands that mostly fit in on-chip memory: offsets below 6000 bytes.
fn arb_short() -> impl Strategy<Value = ShortOperand> {
    st::short(0..=5999)
}

/// Small patterns (steps −8..=8, counts 1..=12), so that most instructions reach execution.
fn arb_ap() -> impl Strategy<Value = AccessPattern> {
    st::ap(arb_short(), -8..=8, 1..=12)
}

fn arb_scalar() -> impl Strategy<Value = ScalarOperand> {
    st::scalar(any::<f32>(), arb_short())
}

/// A partition count and free pattern shared by several operands.
fn arb_shape() -> impl Strategy<Value = (u32, Vec<Dim>)> {
    (
        1u32..=128,
        proptest::collection::vec((-8i16..=8, 1u16..=12), 1..=4),
    )
        .prop_map(|(parts, dims)| {
            (
                parts,
                dims.into_iter().map(|(s, c)| Dim::new(s, c)).collect(),
            )
        })
}

/// `shape` placed at `base` (partition count clipped to fit).
fn place(base: ShortOperand, shape: &(u32, Vec<Dim>)) -> AccessPattern {
    let parts = shape.0.min(128 - base.start_partition()).max(1);
    AccessPattern::new(base, parts, &shape.1).unwrap()
}

/// Instructions whose operands agree in shape, so that most of them execute. Longer than the
/// ~120-line guideline on purpose: one `prop_oneof!` arm per compute instruction.
fn arb_consistent_instr() -> impl Strategy<Value = Instruction> {
    let alu = proptest::sample::select(AluOp::ALL.to_vec());
    let func = proptest::sample::select(ActivationFunc::ALL.to_vec());
    prop_oneof![
        (arb_shape(), arb_short(), arb_short()).prop_map(|(sh, o, i)| Instruction::TensorCopy {
            out: place(o, &sh),
            input: place(i, &(sh.0.min(128 - o.start_partition()), sh.1.clone())),
        }),
        (
            arb_shape(),
            arb_short(),
            arb_short(),
            arb_short(),
            alu.clone()
        )
            .prop_map(|(sh, o, a, b, op)| {
                let sh = (sh.0.min(128 - o.start_partition()), sh.1);
                Instruction::TensorTensor {
                    op,
                    out: place(o, &sh),
                    in0: place(a, &sh),
                    in1: b.into(),
                }
            }),
        (
            arb_shape(),
            arb_short(),
            arb_short(),
            alu.clone(),
            arb_scalar(),
            alu,
            arb_scalar(),
            any::<(bool, bool)>()
        )
            .prop_map(
                |(sh, o, i, op0, operand0, op1, operand1, (reverse0, reverse1))| {
                    let sh = (sh.0.min(128 - o.start_partition()), sh.1);
                    let op1 = if op0.is_bitvec() != op1.is_bitvec() {
                        AluOp::Bypass
                    } else {
                        op1
                    };
                    Instruction::TensorScalar {
                        out: place(o, &sh),
                        input: place(i, &sh),
                        op0,
                        operand0,
                        reverse0,
                        op1,
                        operand1,
                        reverse1,
                    }
                }
            ),
        (
            arb_shape(),
            arb_short(),
            arb_short(),
            func,
            arb_scalar(),
            proptest::option::of(arb_short()),
            proptest::sample::select(ReduceCmd::ALL.to_vec())
        )
            .prop_map(|(sh, o, i, func, scale, bias, reduce)| {
                let sh = (sh.0.min(128 - o.start_partition()), sh.1);
                Instruction::Activation {
                    func,
                    out: place(o, &sh),
                    input: place(i, &sh),
                    scale,
                    bias: bias.map(ScalarOperand::Vector),
                    reduce,
                }
            }),
        (
            arb_shape(),
            arb_short(),
            arb_short(),
            1u8..=4,
            any::<bool>()
        )
            .prop_map(|(sh, o, i, axes, negate)| {
                let input = place(i, &sh);
                let axes = axes.min(sh.1.len() as u8);
                let kept: u64 = sh.1[..sh.1.len() - usize::from(axes)]
                    .iter()
                    .map(|d| u64::from(d.count))
                    .product();
                let out_base =
                    ShortOperand::new(o.space(), i.start_partition(), o.offset(), o.dtype())
                        .unwrap();
                Instruction::TensorReduce {
                    op: AluOp::Max,
                    out: AccessPattern::contiguous(out_base, input.partitions(), kept as u16)
                        .unwrap(),
                    input,
                    axes,
                    negate,
                }
            }),
        (arb_short(), arb_short(), 1u32..=128, 1u16..=128).prop_map(|(o, i, p, f)| {
            let p = p.min(128 - i.start_partition());
            let o = ShortOperand::new(
                o.space(),
                o.start_partition().min(128 - u32::from(f)),
                o.offset(),
                o.dtype(),
            )
            .unwrap();
            Instruction::Transpose {
                out: AccessPattern::contiguous(o, u32::from(f), p as u16).unwrap(),
                input: AccessPattern::contiguous(i, p, f).unwrap(),
            }
        }),
        (
            arb_short(),
            arb_short(),
            1u32..=128,
            1u32..=128,
            1u16..=512,
            any::<bool>(),
            proptest::sample::select(vec![Dtype::F32, Dtype::Bf16, Dtype::Fp8E4, Dtype::F16])
        )
            .prop_map(|(d, m, k, mm, n, accumulate, dtype)| {
                let d = so(Psum, d.start_partition(), d.offset() % 4096, Dtype::F32);
                let m = so(Sbuf, m.start_partition(), m.offset(), dtype);
                let k = k.min(128 - m.start_partition());
                let mm = mm.min(128 - d.start_partition());
                Instruction::MatmulMoving {
                    dst: AccessPattern::contiguous(d, mm, n).unwrap(),
                    moving: AccessPattern::contiguous(m, k, n).unwrap(),
                    accumulate,
                }
            }),
        (
            arb_shape(),
            arb_short(),
            any::<i32>(),
            any::<i32>(),
            proptest::collection::vec(any::<i32>(), 4)
        )
            .prop_map(|(sh, o, offset, channel_multiplier, steps)| {
                let out = place(o, &sh);
                let dims: Vec<IotaDim> =
                    sh.1.iter()
                        .zip(steps)
                        .map(|(d, s)| IotaDim::new(s, d.count))
                        .collect();
                Instruction::Iota {
                    out,
                    offset,
                    channel_multiplier,
                    pattern: IotaPattern::new(&dims).unwrap(),
                }
            }),
    ]
}

fn arb_instr() -> impl Strategy<Value = Instruction> {
    let alu = proptest::sample::select(AluOp::ALL.to_vec());
    let red = proptest::sample::select(
        AluOp::ALL
            .iter()
            .copied()
            .filter(|o| o.is_legal_reduction())
            .collect::<Vec<_>>(),
    );
    prop_oneof![
        arb_ap().prop_map(|stationary| Instruction::MatmulLoadStationary {
            stationary,
            reversed: false,
            pass: nrt_hal::isa::MatmulPass::Single
        }),
        (arb_ap(), arb_ap(), any::<bool>()).prop_map(|(dst, moving, accumulate)| {
            Instruction::MatmulMoving {
                dst,
                moving,
                accumulate,
            }
        }),
        (
            proptest::sample::select(ActivationFunc::ALL.to_vec()),
            arb_ap(),
            arb_ap(),
            arb_scalar(),
            proptest::option::of(arb_short()),
            proptest::sample::select(ReduceCmd::ALL.to_vec())
        )
            .prop_map(|(func, out, input, scale, bias, reduce)| {
                Instruction::Activation {
                    func,
                    out,
                    input,
                    scale,
                    bias: bias.map(ScalarOperand::Vector),
                    reduce,
                }
            }),
        (alu.clone(), arb_ap(), arb_ap(), arb_short()).prop_map(|(op, out, in0, in1)| {
            Instruction::TensorTensor {
                op,
                out,
                in0,
                in1: in1.into(),
            }
        }),
        (
            arb_ap(),
            arb_ap(),
            alu.clone(),
            arb_scalar(),
            any::<bool>(),
            alu,
            arb_scalar(),
            any::<bool>()
        )
            .prop_map(
                |(out, input, op0, operand0, reverse0, op1, operand1, reverse1)| {
                    Instruction::TensorScalar {
                        out,
                        input,
                        op0,
                        operand0,
                        reverse0,
                        op1,
                        operand1,
                        reverse1,
                    }
                }
            ),
        (arb_ap(), arb_ap()).prop_map(|(out, input)| Instruction::TensorCopy { out, input }),
        (red, arb_ap(), arb_ap(), 1u8..=4, any::<bool>()).prop_map(
            |(op, out, input, axes, negate)| Instruction::TensorReduce {
                op,
                out,
                input,
                axes,
                negate,
            }
        ),
        (arb_ap(), any::<f32>()).prop_map(|(out, value)| Instruction::Memset { out, value }),
        (
            arb_ap(),
            any::<i32>(),
            any::<i32>(),
            proptest::collection::vec((any::<i32>(), 1u16..=6), 1..=4)
        )
            .prop_map(|(out, offset, channel_multiplier, dims)| {
                let dims: Vec<IotaDim> =
                    dims.into_iter().map(|(s, c)| IotaDim::new(s, c)).collect();
                Instruction::Iota {
                    out,
                    offset,
                    channel_multiplier,
                    pattern: IotaPattern::new(&dims).unwrap(),
                }
            }),
        (arb_ap(), arb_ap()).prop_map(|(out, input)| Instruction::Transpose { out, input }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_instructions_never_panic(
        instr in prop_oneof![arb_instr(), arb_consistent_instr()],
        engine in proptest::sample::select(EngineKind::ALL.to_vec()),
        preload in any::<bool>(),
        fill in any::<u8>(),
    ) {
        const PB: usize = 8192;
        let mut sbuf: Vec<u8> = (0..128 * PB).map(|i| (i as u8).wrapping_mul(fill)).collect();
        let mut psum: Vec<u8> = (0..128 * PB).map(|i| (i as u8) ^ fill).collect();
        let (s0, p0) = (sbuf.clone(), psum.clone());
        let mut state = EngineState::new();
        if preload {
            state = {
                let mut view = OnChipView {
                    sbuf: &mut sbuf,
                    sbuf_partition_bytes: PB,
                    psum: &mut psum,
                    psum_partition_bytes: PB,
                };
                // Match the shape of a matmul under test so that it can execute.
                let (k, m) = match &instr {
                    Instruction::MatmulMoving { dst, moving, .. } => {
                        (moving.partitions(), dst.partitions().min(128) as u16)
                    }
                    _ => (32, 16),
                };
                let ld = Instruction::MatmulLoadStationary {
                    reversed: false,
                    pass: nrt_hal::isa::MatmulPass::Single,
                    stationary: tile(Sbuf, 0, k, 0, Dtype::Bf16, m),
                };
                compute::execute(&ld, EngineKind::Pe, &mut view, &mut state).unwrap();
                state
            };
        }
        let before = state.stationary_shape();
        let acc_before = *state.accumulators();
        let instr = rt(instr);
        let mut view = OnChipView {
            sbuf: &mut sbuf,
            sbuf_partition_bytes: PB,
            psum: &mut psum,
            psum_partition_bytes: PB,
        };
        let r = compute::execute(&instr, engine, &mut view, &mut state);
        let _ = compute::cost(&instr, engine, Target::Trn2);
        if r.is_err() {
            prop_assert!(sbuf == s0 && psum == p0, "a failed instruction wrote memory");
            prop_assert_eq!(state.stationary_shape(), before);
            prop_assert_eq!(acc_before.map(f32::to_bits), state.accumulators().map(f32::to_bits));
        }
    }

    #[test]
    fn bf16_and_fp8_stores_match_reference_rounding(bits in any::<u32>()) {
        let v = f32::from_bits(bits);
        let got = convert::encode(Dtype::Bf16, v) as u16;
        let want = half::bf16::from_f32(v);
        if v.is_nan() {
            prop_assert!(half::bf16::from_bits(got).is_nan());
        } else {
            prop_assert_eq!(got, want.to_bits());
        }
        // fp8: the result is one of the two neighbouring codes, the nearer one.
        for dtype in [Dtype::Fp8E4, Dtype::Fp8E5, Dtype::Fp8E3] {
            let code = convert::encode(dtype, v);
            let q = convert::decode(dtype, code);
            if v.is_nan() {
                prop_assert!(q.is_nan());
                continue;
            }
            prop_assert!(!q.is_nan());
            if q.is_finite() && v.is_finite() {
                // No finite code is strictly nearer to v.
                for c in 0..=255u64 {
                    let w = convert::decode(dtype, c);
                    if w.is_finite() {
                        prop_assert!(
                            (f64::from(w) - f64::from(v)).abs()
                                >= (f64::from(q) - f64::from(v)).abs(),
                            "{} {}: {} → {} but {} is nearer", dtype, v, code, q, w
                        );
                    }
                }
            }
        }
    }
}
