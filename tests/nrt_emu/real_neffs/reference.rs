//! Independent float64 references for the development-set NEFFs, written from what each file
//! computes (the development set's README), not from simulator code: inputs, vector add,
//! transpose, conv2d + bias, 2×2 max-pool, and the comparison with a tolerance.

/// Seeded uniform [0, 1) values from the platform's one generator (`SplitMix64::unit_f64`
/// from `seed`: 24 random bits each), so every value is exact in fp32 and — after rounding —
/// representable in fp16.
pub fn uniform(seed: u64, n: usize) -> Vec<f64> {
    crate::numeric::uniform(seed, n, 0.0, 1.0)
}

pub use crate::numeric::{check_close, Ty};

/// Shapes of a conv2d: X[1, c, h, w], W[k, c, 3, 3], bias[k]; valid 3×3, stride 1.
#[derive(Debug, Clone, Copy)]
pub struct Conv {
    /// Input channels.
    pub c: usize,
    /// Output channels.
    pub k: usize,
    /// Input height.
    pub h: usize,
    /// Input width.
    pub w: usize,
}

impl Conv {
    /// Output height.
    pub fn oh(&self) -> usize {
        self.h - 2
    }
    /// Output width.
    pub fn ow(&self) -> usize {
        self.w - 2
    }

    /// conv[k, y, x] + bias[k] in float64.
    pub fn at(&self, x: &[f64], wt: &[f64], bias: &[f64], k: usize, y: usize, xx: usize) -> f64 {
        let mut acc = 0.0;
        for c in 0..self.c {
            for r in 0..3 {
                let xrow = &x[(c * self.h + y + r) * self.w + xx..][..3];
                let wrow = &wt[((k * self.c + c) * 3 + r) * 3..][..3];
                acc += xrow[0] * wrow[0] + xrow[1] * wrow[1] + xrow[2] * wrow[2];
            }
        }
        acc + bias[k]
    }

    /// The 2×2, stride-2 max-pool of the biased conv at pooled position (k, i, j).
    pub fn pooled_at(
        &self,
        x: &[f64],
        wt: &[f64],
        bias: &[f64],
        k: usize,
        i: usize,
        j: usize,
    ) -> f64 {
        let mut m = f64::NEG_INFINITY;
        for a in 0..2 {
            for b in 0..2 {
                m = m.max(self.at(x, wt, bias, k, 2 * i + a, 2 * j + b));
            }
        }
        m
    }
}

#[test]
fn uniform_keeps_the_inputs_the_references_were_checked_with() {
    // The first values of the seeds the tests use, as the development-set runs drew them.
    let top = |seed, n| {
        uniform(seed, n)
            .iter()
            .map(|v| (v * (1u64 << 24) as f64) as u64)
            .collect::<Vec<_>>()
    };
    assert_eq!(top(1, 4), [9_505_325, 12_512_141, 16_290_722, 7_455_110]);
    assert_eq!(top(0x5EED, 2), [651_773, 5_583_476]);
}
