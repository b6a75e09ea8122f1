//! The PE array's product on whole tiles (gathered into f32 buffers, or — for fp32 moving
//! operands laid out in rows — read from SBUF in place into a host buffer that the caller adds
//! into PSUM), through the `matrixmultiply` crate's single-threaded f32 kernel (deterministic
//! for a given host CPU: the crate picks one kernel by the CPU's features and packs and sums in
//! a fixed order; for `k ≤ 128` every output element is one sum over `k`, whatever `n` or the
//! column block it falls in, so adding the old PSUM value afterwards rounds exactly as the
//! kernel's own `β = 1` does).
//!
//! Narrow products (a few moving columns: the matrix-vector products of token generation) skip
//! the crate: for `N < 8` its 8 × 8 micro-kernel computes mostly padding, after packing the
//! whole stationary operand. [`direct`] forms them with its own loop, bit for bit as the
//! crate's FMA kernel would (the rule and its conditions are in that module).

/// `out[m × n] = sᵀ · x` (or, with `accumulate`, `out += sᵀ · x`: the product summed over
/// `k`, then added to the old value) where `s` is row-major `k × m` (the stationary operand,
/// one row per partition) and `x` row-major `k × n` (the moving operand). `out` must hold
/// `m · n` values. The kernel sums all of `k ≤ 128` in one pass (its depth block is larger),
/// so the old value is added once, after the sum.
pub(super) fn stationary_t_times_moving(
    s: &[f32],
    x: &[f32],
    out: &mut [f32],
    k: usize,
    m: usize,
    n: usize,
    accumulate: bool,
) {
    assert!(s.len() >= k * m && x.len() >= k * n && out.len() >= m * n);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            out[..m * n].fill(0.0);
        }
        return;
    }
    if direct::product(s, x, out, (k, m, n), accumulate) {
        return;
    }
    let (m_i, n_i) = (m as isize, n as isize);
    // SAFETY: the assert above guarantees every element the strides address is in bounds:
    // A = sᵀ is m × k with element (i, j) at s[j·m + i] (row stride 1, column stride m),
    // B = x is k × n at x[j·n + l], C = out is m × n at out[i·n + l]; `out` is exclusively
    // borrowed and does not alias the inputs.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            s.as_ptr(),
            1,
            m_i,
            x.as_ptr(),
            n_i,
            1,
            if accumulate { 1.0 } else { 0.0 },
            out.as_mut_ptr(),
            n_i,
            1,
        );
    }
}

/// An fp32 matrix stored in on-chip memory bytes: element `(row, col)` at byte
/// `first + 4·(row · row_stride + col)` of `bytes` (little-endian).
pub(super) struct OnChipF32 {
    /// Byte index of element (0, 0).
    pub first: usize,
    /// Elements between consecutive rows (a partition's size in f32).
    pub row_stride: usize,
}

impl OnChipF32 {
    /// Whether a `rows × cols` matrix fits `bytes` and is 4-byte aligned there.
    pub(super) fn fits(&self, bytes: &[u8], rows: usize, cols: usize) -> bool {
        let aligned = (bytes.as_ptr() as usize + self.first).is_multiple_of(4);
        let end = rows
            .checked_sub(1)
            .and_then(|r| r.checked_mul(self.row_stride))
            .and_then(|e| e.checked_add(cols))
            .and_then(|e| e.checked_mul(4))
            .and_then(|e| e.checked_add(self.first));
        aligned && end.is_some_and(|e| e <= bytes.len())
    }
}

/// `c = sᵀ · b` with `b` (`k × n`, fp32) read in place from `b_bytes` and `c` written to the
/// f32 slice `c`: row `i` at `c[i · c_stride ..][.. n]` (the same kernel and summation order as
/// [`stationary_t_times_moving`]). The caller adds the result into PSUM itself, so the kernel's
/// stores go to a contiguous host buffer instead of rows a PSUM partition (16 KiB) apart, which
/// all fall in the same cache sets. Returns `false`, touching nothing, when `b` does not fit
/// its bytes or is not 4-byte aligned, or `c` is too short.
#[allow(clippy::too_many_arguments)]
pub(super) fn stationary_t_times_onchip_into(
    s: &[f32],
    k: usize,
    m: usize,
    n: usize,
    b_bytes: &[u8],
    b: &OnChipF32,
    c: &mut [f32],
    c_stride: usize,
) -> bool {
    if cfg!(target_endian = "big") || k == 0 || m == 0 || n == 0 || s.len() < k * m {
        return false;
    }
    let c_end = (m - 1).checked_mul(c_stride).and_then(|e| e.checked_add(n));
    if !b.fits(b_bytes, k, n) || n > c_stride || c_end.is_none_or(|e| e > c.len()) {
        return false;
    }
    // SAFETY: `fits` checked that every element (row < k, col < n) of `b` is inside `b_bytes`
    // and 4-byte aligned, so the f32 pointer addresses valid, aligned f32s (any bit pattern is
    // an f32; the host is little-endian like the stored data). Every element (i < m, l < n) of
    // `c` is at `i · c_stride + l < c_end ≤ c.len()`, and rows do not overlap (`n ≤
    // c_stride`). `c` is borrowed exclusively and is neither `b_bytes` nor `s`, so nothing
    // aliases the output.
    unsafe {
        let bp = b_bytes.as_ptr().add(b.first) as *const f32;
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            s.as_ptr(),
            1,
            m as isize,
            bp,
            b.row_stride as isize,
            1,
            0.0,
            c.as_mut_ptr(),
            c_stride as isize,
            1,
        );
    }
    true
}

/// Narrow products without the crate: the same bits as its kernel, from a plain loop.
///
/// The crate's x86 FMA kernel (`KernelFmaAvx2`, the one it picks on a host with FMA and AVX2
/// when its `avx512` feature is off, as here) computes each output element of an 8 × 8
/// micro-tile as an FMA chain over `k` in order, starting from +0 — `ab = fma(s[j, i],
/// x[j, l], ab)` for `j = 0 … k−1` — and, `k ≤ 128` being one depth block, finishes it once.
/// With `M < 8` or `N < 8` every micro-tile is partial, which the crate computes into a buffer
/// with `β = 0` (`fma(α = 1, ab, +0)`, i.e. `ab + 0`) and then stores, or adds to the old
/// value with `β = 1`: the element is `ab + 0`, or `C + (ab + 0)`.
///
/// Which operand of an FMA or add a NaN result carries is the one thing operand order could
/// change, so a product with a NaN in its result is formed again by the crate, from the old
/// values kept aside. A NaN in an input always reaches the result (every element of `s`,
/// `x` and, accumulating, `out` takes part in some output's chain, and a NaN stays NaN
/// through FMAs and adds), so checking the `m · n` results stands for scanning the
/// `k · (m + n)` inputs, which cost as much as the product itself when `n` is 1.
/// `tests::direct_product_is_the_crates_bit_for_bit` holds it against the crate.
mod direct {
    /// Narrowest side of a product the crate forms instead (its micro-tile, `MR = NR = 8`);
    /// this module takes `M` or `N` below it.
    const TILE: usize = 8;
    /// Largest `k` and `m`: the PE array's 128 rows and columns (and one depth block of the
    /// crate's kernel).
    const MAX_KM: usize = 128;
    /// Largest `n`: a PSUM bank of fp32 columns.
    const MAX_N: usize = 512;

    /// [`super::stationary_t_times_moving`] for `M < 8` or `N < 8` (`1 ≤ k, m ≤ MAX_KM`,
    /// `n ≤ MAX_N`) whose result holds no NaN, on a host where the crate uses its FMA kernel;
    /// returns `false` with `out` as it was otherwise.
    pub(super) fn product(
        s: &[f32],
        x: &[f32],
        out: &mut [f32],
        (k, m, n): (usize, usize, usize),
        accumulate: bool,
    ) -> bool {
        let narrow = m < TILE || n < TILE;
        if !narrow || k > MAX_KM || m > MAX_KM || n > MAX_N || !fma_kernel() {
            return false;
        }
        let (s, x, out) = (&s[..k * m], &x[..k * n], &mut out[..m * n]);
        // `m · n ≤ TILE · MAX_N` (one side is below TILE, the other within its bound).
        let mut old = [0f32; TILE * MAX_N];
        let old = &mut old[..m * n];
        if accumulate {
            old.copy_from_slice(out);
        }
        // SAFETY: `fma_kernel` checked that the host has FMA and AVX2.
        unsafe {
            if n < TILE {
                by_columns(s, x, out, m, n, accumulate)
            } else {
                by_rows(s, x, out, m, n, accumulate)
            }
        };
        if out.iter().any(|v| v.is_nan()) {
            if accumulate {
                out.copy_from_slice(old);
            }
            return false;
        }
        true
    }

    /// Whether the crate's sgemm runs its FMA kernel on this host (its own test, minus the
    /// AVX-512 kernel that only its `avx512` feature builds).
    fn fma_kernel() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::is_x86_feature_detected!("fma") && std::is_x86_feature_detected!("avx2")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// The element `ab` finished as the crate finishes a partial micro-tile's.
    #[inline(always)]
    fn finish(c: &mut f32, ab: f32, accumulate: bool) {
        *c = if accumulate {
            *c + (ab + 0.0)
        } else {
            ab + 0.0
        };
    }

    /// Few columns: per column, the `m` FMA chains side by side (one vector FMA per row of
    /// the stationary operand).
    #[cfg_attr(target_arch = "x86_64", target_feature(enable = "fma,avx2"))]
    unsafe fn by_columns(
        s: &[f32],
        x: &[f32],
        out: &mut [f32],
        m: usize,
        n: usize,
        accumulate: bool,
    ) {
        let mut ab = [0f32; MAX_KM];
        let ab = &mut ab[..m];
        for l in 0..n {
            ab.fill(0.0);
            for (row, xs) in s.chunks_exact(m).zip(x.chunks_exact(n)) {
                let xv = xs[l];
                for (a, &sv) in ab.iter_mut().zip(row) {
                    *a = sv.mul_add(xv, *a);
                }
            }
            for (i, &v) in ab.iter().enumerate() {
                finish(&mut out[i * n + l], v, accumulate);
            }
        }
    }

    /// Few rows: per output row, the `n` FMA chains side by side (one vector FMA per row of
    /// the moving operand).
    #[cfg_attr(target_arch = "x86_64", target_feature(enable = "fma,avx2"))]
    unsafe fn by_rows(s: &[f32], x: &[f32], out: &mut [f32], m: usize, n: usize, accumulate: bool) {
        let mut ab = [0f32; MAX_N];
        let ab = &mut ab[..n];
        for (i, row_out) in out.chunks_exact_mut(n).enumerate() {
            ab.fill(0.0);
            for (ss, xs) in s.chunks_exact(m).zip(x.chunks_exact(n)) {
                let sv = ss[i];
                for (a, &xv) in ab.iter_mut().zip(xs) {
                    *a = sv.mul_add(xv, *a);
                }
            }
            for (c, &v) in row_out.iter_mut().zip(ab.iter()) {
                finish(c, v, accumulate);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `stationary_t_times_moving` on `s`, `x` and old values `c` (shape `(k, m, n)`) gives
    /// the bits the crate's sgemm gives with its operand layout.
    fn check(s: &[f32], x: &[f32], c: &[f32], (k, m, n): (usize, usize, usize), accumulate: bool) {
        let (mut got, mut want) = (c.to_vec(), c.to_vec());
        stationary_t_times_moving(s, x, &mut got, k, m, n, accumulate);
        let beta = if accumulate { 1.0 } else { 0.0 };
        // SAFETY: as in `stationary_t_times_moving` (the callers size the slices).
        unsafe {
            matrixmultiply::sgemm(
                m,
                k,
                n,
                1.0,
                s.as_ptr(),
                1,
                m as isize,
                x.as_ptr(),
                n as isize,
                1,
                beta,
                want.as_mut_ptr(),
                n as isize,
                1,
            );
        }
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(
            bits(&got),
            bits(&want),
            "k {k} m {m} n {n} acc {accumulate}"
        );
    }

    #[test]
    fn direct_product_is_the_crates_bit_for_bit() {
        let mut rng = crate::rng::SplitMix64::new(27);
        // Values with zeros of both signs, infinities, tiny and huge magnitudes, and NaNs with
        // payloads of both signs (the results that hold one are the crate's own).
        let special = [
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            1e-40,
            -1e-40,
            3e38,
            -3e38,
            f32::from_bits(0x7fc0_1234),
            f32::from_bits(0xffc0_4321),
        ];
        let mut value = |p_special: u64| {
            let r = rng.next_u64();
            if r % 100 < p_special {
                special[(r >> 8) as usize % special.len()]
            } else {
                ((r >> 11) as f64 / (1u64 << 53) as f64 * 4.0 - 2.0) as f32
            }
        };
        let mut cases = 0;
        for (k, m, ns) in [
            (1, 1, 1..=9),
            (128, 128, 1..=9),
            (127, 125, 1..=9),
            (3, 8, 1..=9),
            (64, 9, 1..=9),
            (128, 1, 1..=9),
            (128, 3, 126..=130),
            (128, 7, 511..=513),
        ] {
            for n in ns.clone() {
                for p_special in [0, 1, 5, 50] {
                    for accumulate in [false, true] {
                        let s: Vec<f32> = (0..k * m).map(|_| value(p_special)).collect();
                        let x: Vec<f32> = (0..k * n).map(|_| value(p_special)).collect();
                        let c: Vec<f32> = (0..m * n).map(|_| value(p_special)).collect();
                        check(&s, &x, &c, (k, m, n), accumulate);
                        cases += 1;
                    }
                }
            }
        }
        // Sums that underflow to -0 (products of -1e-30 and 1e-30) meeting -0 old values:
        // `-0 + (-0 + 0)` is +0 where `-0 + -0` would be -0.
        let shapes = [
            (false, (4, 12, 3)),
            (true, (4, 12, 3)),
            (false, (4, 3, 12)),
            (true, (4, 3, 12)),
        ];
        for (accumulate, (k, m, n)) in shapes {
            let s = vec![-1e-30f32; k * m];
            let x = vec![1e-30f32; k * n];
            check(&s, &x, &vec![-0.0f32; m * n], (k, m, n), accumulate);
        }
        assert!(cases > 0);
    }
}
