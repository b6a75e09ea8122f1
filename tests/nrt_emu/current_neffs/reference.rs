//! Independent float64 references for the current-compiler NEFFs, written from what each file
//! computes (the development set's README and docs/neuron-isa.md §13), not from simulator code:
//! attention with softmax, a matmul, the Qwen3 MoE and KV-cache attention kernels. Inputs come
//! from the platform's one seeded generator.

pub use crate::numeric::{check_close, uniform, Ty};

/// `softmax(qᵀ·k, rows) · vᵀ` for q, k, v `[d, s]` row-major: the `[s, d]` result.
pub fn attention(q: &[f64], k: &[f64], v: &[f64], d: usize, s: usize) -> Vec<f64> {
    let mut out = vec![0.0; s * d];
    let mut row = vec![0.0; s];
    for i in 0..s {
        for (j, r) in row.iter_mut().enumerate() {
            *r = (0..d).map(|c| q[c * s + i] * k[c * s + j]).sum();
        }
        let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let mut sum = 0.0;
        for r in row.iter_mut() {
            *r = (*r - m).exp();
            sum += *r;
        }
        for c in 0..d {
            let acc: f64 = (0..s).map(|j| row[j] * v[c * s + j]).sum();
            out[i * d + c] = acc / sum;
        }
    }
    out
}

/// `x · y` for x `[m, k]`, y `[k, n]`.
pub fn matmul(x: &[f64], y: &[f64], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for t in 0..k {
            let a = x[i * k + t];
            for j in 0..n {
                out[i * n + j] += a * y[t * n + j];
            }
        }
    }
    out
}

fn silu(x: f64) -> f64 {
    x / (1.0 + (-x).exp())
}

/// The Qwen3 MoE token kernel for one token: `Σₖ w[k] · ((silu(g) · u) @ down[e])` with
/// `e = ids[k]` and `(g, u) = split(hidden @ gate_up[e])`. `down` is `[E, I, H]`, `gate_up`
/// `[E, H, 2I]`, both row-major, read only for the selected experts (by `at(expert, row, col)`).
pub fn moe(
    w: &[f64],
    ids: &[usize],
    hidden: &[f64],
    gate_up: &dyn Fn(usize, usize, usize) -> f64,
    down: &dyn Fn(usize, usize, usize) -> f64,
    (h, i): (usize, usize),
) -> Vec<f64> {
    let mut out = vec![0.0; h];
    for (k, &e) in ids.iter().enumerate() {
        let gu: Vec<f64> = (0..2 * i)
            .map(|c| (0..h).map(|r| hidden[r] * gate_up(e, r, c)).sum())
            .collect();
        let act: Vec<f64> = (0..i).map(|c| silu(gu[c]) * gu[i + c]).collect();
        for (col, o) in out.iter_mut().enumerate() {
            *o += w[k] * (0..i).map(|r| act[r] * down(e, r, col)).sum::<f64>();
        }
    }
    out
}

/// A row-major matrix with every 128×128 block transposed in place (what the KV-cache kernel's
/// matmuls read; docs/neuron-isa.md §13 and the development set's README).
pub fn block_t(m: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut out = m.to_vec();
    for bi in (0..rows).step_by(128) {
        for bj in (0..cols).step_by(128) {
            for r in 0..128.min(rows - bi) {
                for c in 0..128.min(cols - bj) {
                    out[(bi + r) * cols + bj + c] = m[(bi + c) * cols + bj + r];
                }
            }
        }
    }
    out
}

/// The inputs of the Qwen3 attention kernel, in the model's (block-transposed) layout.
pub struct AttnTkg<'a> {
    /// RoPE sin and cos, 128 each.
    pub sin: &'a [f64],
    /// RoPE cos.
    pub cos: &'a [f64],
    /// V and K caches, `[4, 640, 128]`.
    pub v_cache: &'a [f64],
    /// K cache.
    pub k_cache: &'a [f64],
    /// RMSNorm weights of K and Q heads, 128 each.
    pub k_norm: &'a [f64],
    /// Q-head norm weights.
    pub q_norm: &'a [f64],
    /// Wv `[512, 2048]`, Wk `[512, 2048]`, Wq `[1024, 2048]`.
    pub wv: &'a [f64],
    /// Wk.
    pub wk: &'a [f64],
    /// Wq.
    pub wq: &'a [f64],
    /// The new token's hidden state, 2048.
    pub hidden: &'a [f64],
}

/// Qwen3 attention of one new token: 8 query heads and 4 KV heads of 128 (GQA 2); Q/K/V =
/// hidden · Wᵀ; RMSNorm (eps 1e-6) per head on Q and K; RoPE (rotate-half); scores over the 640
/// cached positions and the new one, scaled by 1/√128; softmax; weighted sum of V — with every
/// 128×128 block of the weights and caches transposed, as the program reads them.
pub fn attn_tkg(a: &AttnTkg<'_>) -> Vec<f64> {
    let proj = |w: &[f64], rows: usize| -> Vec<f64> {
        let wt = block_t(w, rows, 2048);
        (0..rows)
            .map(|r| (0..2048).map(|c| a.hidden[c] * wt[r * 2048 + c]).sum())
            .collect()
    };
    let (q, k, v) = (proj(a.wq, 1024), proj(a.wk, 512), proj(a.wv, 512));
    let rms = |x: &[f64], w: &[f64]| -> Vec<f64> {
        let r = ((x.iter().map(|t| t * t).sum::<f64>() / 128.0) + 1e-6).sqrt();
        x.iter().zip(w).map(|(t, w)| t / r * w).collect()
    };
    let rope = |x: &[f64]| -> Vec<f64> {
        (0..128)
            .map(|i| {
                let rot = if i < 64 { -x[i + 64] } else { x[i - 64] };
                x[i] * a.cos[i] + rot * a.sin[i]
            })
            .collect()
    };
    let mut out = vec![0.0; 1024];
    for head in 0..8 {
        let kv = head / 2;
        let qh = rope(&rms(&q[head * 128..head * 128 + 128], a.q_norm));
        let kh = rope(&rms(&k[kv * 128..kv * 128 + 128], a.k_norm));
        let vh = &v[kv * 128..kv * 128 + 128];
        let kc = block_t(&a.k_cache[kv * 640 * 128..(kv + 1) * 640 * 128], 640, 128);
        let vc = block_t(&a.v_cache[kv * 640 * 128..(kv + 1) * 640 * 128], 640, 128);
        let mut scores: Vec<f64> = (0..640)
            .map(|p| (0..128).map(|d| kc[p * 128 + d] * qh[d]).sum::<f64>())
            .collect();
        scores.push((0..128).map(|d| kh[d] * qh[d]).sum());
        let scale = 1.0 / 128f64.sqrt();
        let m = scores
            .iter()
            .map(|s| s * scale)
            .fold(f64::NEG_INFINITY, f64::max);
        let p: Vec<f64> = scores.iter().map(|s| (s * scale - m).exp()).collect();
        let sum: f64 = p.iter().sum();
        for d in 0..128 {
            let cached: f64 = (0..640).map(|t| p[t] * vc[t * 128 + d]).sum();
            out[head * 128 + d] = (cached + p[640] * vh[d]) / sum;
        }
    }
    out
}
