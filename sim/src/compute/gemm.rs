//! The PE array's product on whole tiles, through the `matrixmultiply` crate's
//! single-threaded f32 kernel (deterministic for a given host CPU: the crate picks one kernel
//! by the CPU's features and packs and sums in a fixed order).

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
