//! The ALU ops of the vector, scalar and GpSimd engines ([`AluOp`], docs/isa.md §4).
//!
//! Arithmetic ops compute on f32 operands and give an f32 result; where the op is not one IEEE
//! operation (`pow`, `rsqrt`, `average`) it is computed in f64 and rounded once to f32.
//!
//! | op | result |
//! |---|---|
//! | `bypass` | `a` |
//! | `add`, `subtract`, `multiply`, `divide` | IEEE f32 (division by zero → ±inf or NaN) |
//! | `max`, `min` | NaN if either operand is NaN; `max(+0, −0) = +0`, `min(+0, −0) = −0` |
//! | `mod` | floored modulo, the result has the sign of `b` (numpy `mod`); `b = 0` → NaN |
//! | `pow` | `a^b` (f64 `powf`, rounded); negative `a` with non-integer `b` → NaN |
//! | `abs_max`, `abs_min` | `max(|a|, |b|)`, `min(|a|, |b|)`, NaN-propagating |
//! | `average` | `(a + b) / 2`, rounded once (no intermediate overflow) |
//! | comparisons | `1.0` if the IEEE comparison holds, else `0.0` (NaN: only `not_equal` holds) |
//! | `logical_and/or/xor` | on `a != 0`, `b != 0` (NaN counts as non-zero) → `1.0`/`0.0` |
//! | `abs`, `square`, `relu`, `rsqrt`, `reciprocal` | unary on `a`; `relu(NaN) = NaN`, `relu(−0) = 0` |
//!
//! **Bit-vector ops** (`bitwise_not/and/or/xor`, shifts) act on 32-bit patterns
//! ([`alu_bits`]). The engines feed them the patterns of
//! [`to_bits_lane`](super::convert::to_bits_lane) (integer data exactly, float data as its value
//! rounded to i32) and store results with [`from_bits_lane`](super::convert::from_bits_lane).
//! Shifts take the amount `b` as an unsigned 32-bit number: amounts ≥ 32 (including negative
//! ones) shift everything out — 0, or the sign fill for `arith_shift_right`. Arithmetic and
//! logical left shifts are the same operation.

use nrt_hal::isa::AluOp;

#[inline]
fn b2f(b: bool) -> f32 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// NaN-propagating maximum with `max(+0, −0) = +0`. The conditions combine with `|` and `&`,
/// not `||` and `&&`: two selects instead of branches that data decides (a fold over random
/// values mispredicts half of them), and a loop of them vectorises.
#[inline]
pub(crate) fn fmax(a: f32, b: f32) -> f32 {
    let pick_a = (a > b) | ((a == b) & b.is_sign_negative());
    let r = if pick_a { a } else { b };
    if a.is_nan() | b.is_nan() {
        f32::NAN
    } else {
        r
    }
}

/// NaN-propagating minimum with `min(+0, −0) = −0` (branch-free as [`fmax`]).
#[inline]
pub(crate) fn fmin(a: f32, b: f32) -> f32 {
    let pick_a = (a < b) | ((a == b) & a.is_sign_negative());
    let r = if pick_a { a } else { b };
    if a.is_nan() | b.is_nan() {
        f32::NAN
    } else {
        r
    }
}

/// Floored modulo (sign of the divisor).
#[inline]
fn fmod_floor(a: f32, b: f32) -> f32 {
    let r = a % b;
    if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
        r + b
    } else {
        r
    }
}

/// The i32 pattern of an f32 operand for the bit-vector ops: rounded to nearest even,
/// saturated, NaN → 0.
#[inline]
pub(crate) fn f32_to_pattern(v: f32) -> u32 {
    (v.round_ties_even() as i32) as u32
}

/// Applies `op` to f32 operands (see the module table). Unary ops ignore `b`. Bit-vector ops
/// convert both operands with round-to-nearest-even to i32 patterns, apply [`alu_bits`] and
/// return the result pattern's i32 value as f32.
pub fn alu(op: AluOp, a: f32, b: f32) -> f32 {
    alu_inline(op, a, b)
}

/// [`alu`], always inlined: with a constant `op` (as [`with_alu!`] gives it) the match folds
/// away and a loop over elements computes one operation.
#[inline(always)]
pub(crate) fn alu_inline(op: AluOp, a: f32, b: f32) -> f32 {
    // The bit-vector set is `AluOp::is_bitvec`'s, spelled there once.
    if op.is_bitvec() {
        return alu_bits(op, f32_to_pattern(a), f32_to_pattern(b)) as i32 as f32;
    }
    match op {
        AluOp::Bypass => a,
        AluOp::Add => a + b,
        AluOp::Subtract => a - b,
        AluOp::Multiply => a * b,
        AluOp::Max => fmax(a, b),
        AluOp::Min => fmin(a, b),
        AluOp::Divide => a / b,
        AluOp::Mod => fmod_floor(a, b),
        AluOp::Pow => f64::from(a).powf(f64::from(b)) as f32,
        AluOp::AbsMax => fmax(a.abs(), b.abs()),
        AluOp::AbsMin => fmin(a.abs(), b.abs()),
        AluOp::Average => ((f64::from(a) + f64::from(b)) * 0.5) as f32,
        AluOp::IsEqual => b2f(a == b),
        AluOp::NotEqual => b2f(a != b),
        AluOp::IsGe => b2f(a >= b),
        AluOp::IsGt => b2f(a > b),
        AluOp::IsLe => b2f(a <= b),
        AluOp::IsLt => b2f(a < b),
        AluOp::LogicalAnd => b2f(a != 0.0 && b != 0.0),
        AluOp::LogicalOr => b2f(a != 0.0 || b != 0.0),
        AluOp::LogicalXor => b2f((a != 0.0) != (b != 0.0)),
        AluOp::Abs => a.abs(),
        AluOp::Square => a * a,
        AluOp::Relu => {
            if (a > 0.0) | a.is_nan() {
                a
            } else {
                0.0
            }
        }
        AluOp::Rsqrt => (1.0 / f64::from(a).sqrt()) as f32,
        AluOp::Reciprocal => 1.0 / a,
        // The bit-vector ops, returned above.
        _ => a,
    }
}

/// Applies `op` to 32-bit patterns. Bit-vector ops act on the bits (see the module docs for
/// shift amounts); `bypass` returns `a`; any other op reads the patterns as i32 values, applies
/// [`alu`] and converts the result back (round to nearest even, saturating, NaN → 0).
pub fn alu_bits(op: AluOp, a: u32, b: u32) -> u32 {
    match op {
        AluOp::Bypass => a,
        AluOp::BitwiseNot => !a,
        AluOp::BitwiseAnd => a & b,
        AluOp::BitwiseOr => a | b,
        AluOp::BitwiseXor => a ^ b,
        AluOp::ArithShiftLeft | AluOp::LogicalShiftLeft => a.checked_shl(b).unwrap_or(0),
        AluOp::ArithShiftRight => ((a as i32) >> b.min(31)) as u32,
        AluOp::LogicalShiftRight => a.checked_shr(b).unwrap_or(0),
        _ => f32_to_pattern(alu(op, a as i32 as f32, b as i32 as f32)),
    }
}

/// Runs `$body` with `$f` bound to a closure `|a: f32, b: f32| -> f32` computing `$op`, the op
/// a constant in each arm: a loop in `$body` then compiles to one operation per element
/// instead of a call to [`alu`] per element (which was 42% of the host time of models whose
/// vector work is `tensor_scalar` or `tensor_reduce`). The results are [`alu`]'s, bit for bit
/// (a NaN result is a NaN; Rust does not fix NaN payloads).
macro_rules! with_alu {
    ($op:expr, $f:ident => $body:expr) => {
        $crate::compute::alu::with_alu!(@arms $op, $f, $body, [
            Bypass Add Subtract Multiply Max Min Divide Mod Pow AbsMax AbsMin Average IsEqual
            NotEqual IsGe IsGt IsLe IsLt LogicalAnd LogicalOr LogicalXor BitwiseNot BitwiseAnd
            BitwiseOr BitwiseXor ArithShiftLeft ArithShiftRight LogicalShiftLeft
            LogicalShiftRight Abs Square Relu Rsqrt Reciprocal
        ])
    };
    (@arms $op:expr, $f:ident, $body:expr, [$($v:ident)*]) => {
        match $op {
            $(
                nrt_hal::isa::AluOp::$v => {
                    let $f = |a: f32, b: f32| {
                        $crate::compute::alu::alu_inline(nrt_hal::isa::AluOp::$v, a, b)
                    };
                    $body
                }
            )*
        }
    };
}
pub(crate) use with_alu;
