//! The PE array's product on whole tiles (gathered into f32 buffers, or — for fp32 moving
//! operands laid out in rows — read from SBUF in place into a host buffer that the caller adds
//! into PSUM), through the `matrixmultiply` crate's single-threaded f32 kernel (deterministic
//! for a given host CPU: the crate picks one kernel by the CPU's features and packs and sums in
//! a fixed order; for `k ≤ 128` every output element is one sum over `k`, whatever `n` or the
//! column block it falls in, so adding the old PSUM value afterwards rounds exactly as the
//! kernel's own `β = 1` does).

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
