//! The ACT engine's activation functions ([`ActivationFunc`], docs/isa.md §3, §4).
//!
//! Every function takes and returns f32; all except the exact ones (`identity`, `relu`,
//! `abs`, `sign`) are evaluated in f64 and rounded once to f32, so results are within about
//! one f32 ulp of the true value. The hardware's valid input ranges (docs/isa.md §4: `log` on
//! [2⁻⁶⁴, 2⁶⁴], `sin` on [−π, π] without range reduction, …) are not modelled: we compute the
//! mathematical function everywhere, with IEEE results outside its domain (`log(−1)` = NaN,
//! `log(0)` = −inf, `rsqrt(0)` = inf).
//!
//! | function | definition |
//! |---|---|
//! | `identity` | `x` |
//! | `relu` | `max(x, 0)`; NaN stays NaN; `relu(−0) = 0` |
//! | `gelu` | `x·Φ(x) = ½x·(1 + erf(x/√2))` (exact, via [`erf`]/[`erfc`]) |
//! | `gelu_apprx_tanh` | `½x·(1 + tanh(√(2/π)·(x + 0.044715x³)))` |
//! | `gelu_apprx_sigmoid` | `x·sigmoid(1.702x)` |
//! | `silu` | `x·sigmoid(x)` |
//! | `sigmoid` | `1 / (1 + e⁻ˣ)` (evaluated without overflow) |
//! | `tanh`, `exp`, `sqrt`, `log`, `sin`, `arctan` | the f64 library functions |
//! | `square` | `x²` |
//! | `rsqrt`, `reciprocal` | `1/√x`, `1/x` |
//! | `softplus` | `ln(1 + eˣ) = max(x, 0) + ln1p(e^−|x|)` |
//! | `abs` | `|x|` |
//! | `sign` | `1`, `−1`, `0` for ±0, NaN for NaN |
//! | `erf` | [`erf`] |
//! | `mish` | `x·tanh(softplus(x))` |
//!
//! [`erf`] and [`erfc`] are our own f64 implementations (no `libm` dependency): the
//! positive-term Taylor series `erf(x) = 2/√π·e^(−x²)·Σ 2ⁿx^(2n+1)/(1·3···(2n+1))` for
//! `|x| < 2`, and the Laplace continued fraction for `erfc` (modified Lentz) above; both are
//! accurate to a few f64 ulps relative, far below f32 resolution.

use nrt_hal::isa::ActivationFunc;

/// `1/√π`.
const FRAC_1_SQRT_PI: f64 = 0.564_189_583_547_756_3;
/// `√(2/π)`.
const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;

/// `2/√π·e^(−x²)·Σ 2ⁿx^(2n+1)/(2n+1)!!`, for `0 ≤ x < 2` (all terms positive, no cancellation).
fn erf_series(x: f64) -> f64 {
    let x2 = x * x;
    let mut term = x;
    let mut sum = x;
    let mut n = 0.0;
    for _ in 0..200 {
        n += 1.0;
        term *= 2.0 * x2 / (2.0 * n + 1.0);
        sum += term;
        if term <= sum * 1e-17 {
            break;
        }
    }
    2.0 * FRAC_1_SQRT_PI * (-x2).exp() * sum
}

/// `erfc(x)` for `x ≥ 2` by the continued fraction
/// `e^(−x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …))))`.
fn erfc_cf(x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    if x > 27.0 {
        // e^(−x²) underflows; erfc(27) ≈ 2e−319.
        return 0.0;
    }
    let mut f = x;
    let mut c = f;
    let mut d = 0.0;
    let mut n = 0.0;
    for _ in 0..1000 {
        n += 1.0;
        let a = n * 0.5;
        d = x + a * d;
        if d == 0.0 {
            d = TINY;
        }
        c = x + a / c;
        if c == 0.0 {
            c = TINY;
        }
        d = 1.0 / d;
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    (-x * x).exp() * FRAC_1_SQRT_PI / f
}

/// The error function in f64 (see the module docs for the method). `erf(±inf) = ±1`,
/// `erf(NaN) = NaN`, odd in `x` (including `erf(−0) = −0`).
pub fn erf(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    let r = if a < 2.0 {
        erf_series(a)
    } else {
        1.0 - erfc_cf(a)
    };
    r.copysign(x)
}

/// The complementary error function `1 − erf(x)` in f64, accurate in relative terms for large
/// positive `x` (where `1 − erf(x)` would cancel).
pub fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    if x < 0.0 {
        return 1.0 + erf(-x);
    }
    if x < 2.0 {
        1.0 - erf_series(x)
    } else {
        erfc_cf(x)
    }
}

/// The logistic function, without overflow for large `|x|`.
fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

/// `ln(1 + eˣ)` without overflow.
fn softplus(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    x.max(0.0) + (-x.abs()).exp().ln_1p()
}

/// Exact GELU: `½x(1 + erf(x/√2))`, using `erfc` for negative `x` so that the far negative
/// tail keeps its relative accuracy.
fn gelu(x: f64) -> f64 {
    let z = x * core::f64::consts::FRAC_1_SQRT_2;
    if x >= 0.0 {
        0.5 * x * (1.0 + erf(z))
    } else {
        0.5 * x * erfc(-z)
    }
}

/// Applies activation function `func` to `x` (see the module table).
pub fn activate(func: ActivationFunc, x: f32) -> f32 {
    let d = f64::from(x);
    let r = match func {
        ActivationFunc::Identity => return x,
        ActivationFunc::Relu => {
            return if x > 0.0 || x.is_nan() { x } else { 0.0 };
        }
        ActivationFunc::Abs => return x.abs(),
        ActivationFunc::Sign => {
            return if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else if x.is_nan() {
                x
            } else {
                0.0
            };
        }
        ActivationFunc::Gelu => gelu(d),
        ActivationFunc::GeluApproxTanh => {
            0.5 * d * (1.0 + (SQRT_2_OVER_PI * (d + 0.044715 * d * d * d)).tanh())
        }
        ActivationFunc::GeluApproxSigmoid => d * sigmoid(1.702 * d),
        ActivationFunc::Silu => d * sigmoid(d),
        ActivationFunc::Sigmoid => sigmoid(d),
        ActivationFunc::Tanh => d.tanh(),
        ActivationFunc::Exp => d.exp(),
        ActivationFunc::Square => d * d,
        ActivationFunc::Rsqrt => 1.0 / d.sqrt(),
        ActivationFunc::Reciprocal => 1.0 / d,
        ActivationFunc::Sqrt => d.sqrt(),
        ActivationFunc::Log => d.ln(),
        ActivationFunc::Softplus => softplus(d),
        ActivationFunc::Erf => erf(d),
        ActivationFunc::Mish => d * softplus(d).tanh(),
        ActivationFunc::Sin => d.sin(),
        ActivationFunc::Arctan => d.atan(),
    };
    r as f32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_known_values() {
        let cases = [
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (2.0, 0.995_322_265_018_952_7),
            (3.0, 0.999_977_909_503_001_4),
        ];
        for (x, want) in cases {
            let got = erf(x);
            assert!((got - want).abs() < 1e-15, "erf({x}) = {got}, want {want}");
        }
        let erfc_cases = [
            (2.0, 0.004_677_734_981_047_266),
            (3.0, 2.209_049_699_858_544e-5),
            (5.0, 1.537_459_794_428_035e-12),
            (10.0, 2.088_487_583_762_545e-45),
        ];
        for (x, want) in erfc_cases {
            let got = erfc(x);
            assert!(
                ((got - want) / want).abs() < 1e-13,
                "erfc({x}) = {got}, want {want}"
            );
        }
        // The two methods agree where they meet.
        let (s2, c2) = (erf_series(2.0), 1.0 - erfc_cf(2.0));
        assert!((s2 - c2).abs() < 1e-15, "{s2} vs {c2}");
        assert_eq!(erf(f64::INFINITY), 1.0);
        assert_eq!(erf(-f64::INFINITY), -1.0);
    }
}
