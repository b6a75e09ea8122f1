//! The numeric helpers the reference tests share: seeded uniform inputs from the platform's one
//! generator, the storage dtypes (rounding, bytes, values) and the tolerance check.

use half::{bf16, f16};
use nrt_fixtures::rng::SplitMix64;

/// `n` values `lo + (hi − lo)·u`, u uniform in [0, 1) with 24 random bits
/// ([`SplitMix64::unit_f64`]).
pub fn uniform(seed: u64, n: usize, lo: f64, hi: f64) -> Vec<f64> {
    let mut r = SplitMix64::new(seed);
    (0..n).map(|_| lo + (hi - lo) * r.unit_f64()).collect()
}

/// A storage dtype of the tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16.
    Bf16,
}

impl Ty {
    /// `v` as stored (rounded to nearest even).
    pub fn round(self, v: f64) -> f64 {
        match self {
            Ty::F32 => v as f32 as f64,
            Ty::F16 => f16::from_f64(v).to_f64(),
            Ty::Bf16 => bf16::from_f64(v).to_f64(),
        }
    }

    /// Little-endian bytes of `vals`.
    pub fn bytes(self, vals: &[f64]) -> Vec<u8> {
        let mut out = Vec::with_capacity(vals.len() * 4);
        for &v in vals {
            match self {
                Ty::F32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
                Ty::F16 => out.extend_from_slice(&f16::from_f64(v).to_le_bytes()),
                Ty::Bf16 => out.extend_from_slice(&bf16::from_f64(v).to_le_bytes()),
            }
        }
        out
    }

    /// Values of little-endian bytes.
    pub fn values(self, b: &[u8]) -> Vec<f64> {
        match self {
            Ty::F32 => b
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
                .collect(),
            Ty::F16 => b
                .chunks_exact(2)
                .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f64())
                .collect(),
            Ty::Bf16 => b
                .chunks_exact(2)
                .map(|c| bf16::from_le_bytes([c[0], c[1]]).to_f64())
                .collect(),
        }
    }
}

/// The largest `|got − want|` and `|want|` over `pairs`, after checking each against
/// `|got − want| ≤ atol + rtol·|want|`; panics naming the first element outside.
pub fn check_close(
    what: &str,
    pairs: impl Iterator<Item = (usize, f64, f64)>,
    rtol: f64,
    atol: f64,
) -> (f64, f64) {
    let (mut max_err, mut max_ref) = (0.0f64, 0.0f64);
    for (i, got, want) in pairs {
        let err = (got - want).abs();
        assert!(
            err <= atol + rtol * want.abs(),
            "{what}: element {i}: got {got}, reference {want} (|err| {err} > {atol} + {rtol}·|ref|)"
        );
        max_err = max_err.max(err);
        max_ref = max_ref.max(want.abs());
    }
    (max_err, max_ref)
}
