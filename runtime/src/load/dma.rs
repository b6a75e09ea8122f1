//! DMA descriptor lowering: a NEFF `desc` (two byte access patterns over vars) becomes UDMA
//! copy pairs, and a DMA block becomes the pairs of its hardware queues.
//!
//! Addresses start *relative* — a var and an offset ([`Loc::Var`]) — and are made absolute by
//! [`PairTemplate::resolve`] once the var's physical address is known: at load for the model's
//! own vars, at bind time for the caller's input and output tensors (docs/runtime.md §2.7 "relative →
//! absolute DMA buf_ptr"). The pair type itself belongs to the loaded model ([`crate::model::pair`]).
//!
//! A side's pattern is `sizes`/`steps` innermost first: the innermost size is a byte count of
//! contiguous memory, outer sizes are repeat counts with byte steps (docs/neff.md
//! §8.2). Both sides are walked as streams of contiguous runs and zipped into pieces of at most
//! 64 KiB, so a desc's bytes land in order however the two patterns are shaped.

use nrt_hal::udma::MAX_DESC_BYTES;

use crate::error::{Error, Result};
use crate::kbin::{DmaBlock, DmaDesc, DmaOp, DmaSide};
use crate::model::pair::{Loc, PairTemplate};

/// Contiguous runs `(offset, len)` of one side, in pattern order.
fn runs(side: &DmaSide) -> Result<Vec<(u64, u64)>> {
    let bad = |m: &str| Error::invalid(format!("DMA access pattern on var {}: {m}", side.var_id));
    if side.sizes.is_empty() || side.sizes.len() != side.steps.len() || side.sizes.len() > 4 {
        return Err(bad("needs 1 to 4 sizes with as many steps"));
    }
    let inner = side.sizes[0];
    let outer = &side.sizes[1..];
    let steps = &side.steps[1..];
    let count: u64 = outer
        .iter()
        .try_fold(1u64, |a, &n| a.checked_mul(n))
        .ok_or_else(|| bad("element count overflows"))?;
    if count > 1 << 24 {
        return Err(bad("more than 2^24 runs"));
    }
    let mut out = Vec::with_capacity(count as usize);
    let mut idx = vec![0u64; outer.len()];
    for _ in 0..count {
        let mut off = side.offset as i128;
        for (i, &n) in idx.iter().enumerate() {
            off += n as i128 * steps[i] as i128;
        }
        if off < 0 || off > u64::MAX as i128 {
            return Err(bad("pattern reaches a negative offset"));
        }
        if inner > 0 {
            out.push((off as u64, inner));
        }
        for (i, n) in idx.iter_mut().enumerate() {
            *n += 1;
            if *n < outer[i] {
                break;
            }
            *n = 0;
        }
    }
    Ok(out)
}

/// The copy pairs of one desc (only `copy`, and `cast` between same-size dtypes, move bytes
/// unchanged; other ops are not DMA-expressible here and return `None`).
pub fn lower_desc(d: &DmaDesc) -> Result<Option<Vec<PairTemplate>>> {
    let moves_bytes = match d.op {
        DmaOp::Copy => true,
        DmaOp::Cast => d.from.dtype == d.to.dtype,
        _ => false,
    };
    if d.op == DmaOp::Cast && !moves_bytes {
        return lower_cast(d).map(Some);
    }
    if !moves_bytes {
        return Ok(None);
    }
    let src = runs(&d.from)?;
    let dst = runs(&d.to)?;
    let total = |r: &[(u64, u64)]| r.iter().map(|x| x.1).sum::<u64>();
    if total(&src) != total(&dst) {
        return Err(Error::invalid(format!(
            "DMA desc moves {} bytes from var {} but {} bytes to var {}",
            total(&src),
            d.from.var_id,
            total(&dst),
            d.to.var_id
        )));
    }
    let mut out = Vec::new();
    let (mut si, mut di) = (0usize, 0usize);
    let (mut s_used, mut d_used) = (0u64, 0u64);
    while si < src.len() && di < dst.len() {
        let (s_off, s_len) = src[si];
        let (d_off, d_len) = dst[di];
        let n = (s_len - s_used).min(d_len - d_used).min(MAX_DESC_BYTES);
        out.push(PairTemplate {
            src: Loc::Var {
                var_id: d.from.var_id,
                offset: s_off + s_used,
            },
            dst: Loc::Var {
                var_id: d.to.var_id,
                offset: d_off + d_used,
            },
            len: n as u32,
            convert: None,
        });
        s_used += n;
        d_used += n;
        if s_used == s_len {
            si += 1;
            s_used = 0;
        }
        if d_used == d_len {
            di += 1;
            d_used = 0;
        }
    }
    Ok(Some(out))
}

/// The converting pairs of a `cast` between two dtypes (reference: the innermost size of each
/// side counts bytes of that side's own dtype, and element k of the source becomes element k
/// of the destination): both sides are walked as runs of whole elements and zipped element by
/// element into pieces of at most 64 KiB on either side.
fn lower_cast(d: &DmaDesc) -> Result<Vec<PairTemplate>> {
    let (from, to) = (d.from.dtype, d.to.dtype);
    let (ss, ds) = (from.size() as u64, to.size() as u64);
    let elems = |side: &DmaSide, size: u64| -> Result<Vec<(u64, u64)>> {
        runs(side)?
            .into_iter()
            .map(|(off, len)| {
                if len % size == 0 {
                    Ok((off, len / size))
                } else {
                    Err(Error::invalid(format!(
                        "cast desc: a run of {len} bytes on var {} is not whole {} elements",
                        side.var_id,
                        side.dtype.neff_name()
                    )))
                }
            })
            .collect()
    };
    let src = elems(&d.from, ss)?;
    let dst = elems(&d.to, ds)?;
    let total = |r: &[(u64, u64)]| r.iter().map(|x| x.1).sum::<u64>();
    if total(&src) != total(&dst) {
        return Err(Error::invalid(format!(
            "cast desc converts {} elements from var {} but {} to var {}",
            total(&src),
            d.from.var_id,
            total(&dst),
            d.to.var_id
        )));
    }
    let per = MAX_DESC_BYTES / ss.max(ds);
    let mut out = Vec::new();
    let (mut si, mut di, mut s_used, mut d_used) = (0usize, 0usize, 0u64, 0u64);
    while si < src.len() && di < dst.len() {
        let (s_off, s_n) = src[si];
        let (d_off, d_n) = dst[di];
        let n = (s_n - s_used).min(d_n - d_used).min(per);
        out.push(PairTemplate {
            src: Loc::Var {
                var_id: d.from.var_id,
                offset: s_off + s_used * ss,
            },
            dst: Loc::Var {
                var_id: d.to.var_id,
                offset: d_off + d_used * ds,
            },
            len: (n * ss) as u32,
            convert: Some((from, to)),
        });
        s_used += n;
        d_used += n;
        if s_used == s_n {
            si += 1;
            s_used = 0;
        }
        if d_used == d_n {
            di += 1;
            d_used = 0;
        }
    }
    Ok(out)
}

/// The pairs of a whole block, or the op that cannot be lowered.
pub fn lower_block(b: &DmaBlock) -> Result<std::result::Result<Vec<PairTemplate>, DmaOp>> {
    let mut out = Vec::new();
    for (k, d) in b.descs.iter().enumerate() {
        if d.op == DmaOp::Transpose {
            let params = b.desc_params.get(k).cloned().unwrap_or_default();
            out.extend(
                lower_transpose(d, &params).map_err(|e| e.context(format!("descriptor {k}")))?,
            );
            continue;
        }
        match lower_desc(d)? {
            Some(p) => out.extend(p),
            None => return Ok(Err(d.op)),
        }
    }
    Ok(Ok(out))
}

/// A `transpose_op: "WZXY"` descriptor (docs/neuron-isa.md "DMA kinds"): dims 2 and 3 of
/// both sides are a loop over tiles with equal counts; a source tile is `R = from_sizes[1]`
/// rows of `C = from_sizes[0] / E` elements of `E = transpose_element_size` bytes, the
/// destination tile `C` rows (`to_steps[1]` apart) of `R·E` bytes, and destination element
/// (c, r) is source element (r, c). It becomes one copy pair per element, in destination
/// order — plain copies, so it needs no descriptor kind of its own. Any other form is refused.
fn lower_transpose(d: &DmaDesc, params: &crate::kbin::DmaParams) -> Result<Vec<PairTemplate>> {
    let bad = |m: String| Error::invalid(format!("transpose desc: {m}"));
    let t = params
        .transpose
        .as_ref()
        .ok_or_else(|| bad("no transpose parameters".into()))?;
    if t.op.as_deref() != Some("WZXY") {
        return Err(bad(format!(
            "transpose_op {:?} is not the one known form \"WZXY\"",
            t.op
        )));
    }
    if params.num_tiling_dimensions.is_some_and(|n| n != 2) {
        return Err(bad(format!(
            "num_tiling_dimensions {:?}, expected 2",
            params.num_tiling_dimensions
        )));
    }
    let e = t
        .element_size
        .filter(|&e| e == 2 || e == 4)
        .ok_or_else(|| {
            bad(format!(
                "transpose_element_size {:?} (2 or 4)",
                t.element_size
            ))
        })?;
    let (f, o) = (&d.from, &d.to);
    if f.sizes.len() != 4 || o.sizes.len() != 4 || f.steps.len() != 4 || o.steps.len() != 4 {
        return Err(bad("both sides need 4 sizes and steps".into()));
    }
    if f.sizes[2..] != o.sizes[2..] {
        return Err(bad(format!(
            "tile counts differ: from {:?}, to {:?}",
            &f.sizes[2..],
            &o.sizes[2..]
        )));
    }
    let (rows, cols) = (f.sizes[1], f.sizes[0] / e);
    if f.sizes[0] % e != 0 || o.sizes[0] != rows * e || o.sizes[1] != cols {
        return Err(bad(format!(
            "a {rows}×{cols} tile of {e}-byte elements cannot become to_sizes {:?}",
            &o.sizes[..2]
        )));
    }
    let at = |base: u64, parts: &[(u64, i64)]| -> Result<u64> {
        let off = parts
            .iter()
            .fold(base as i128, |a, &(i, s)| a + i as i128 * s as i128);
        u64::try_from(off).map_err(|_| bad("an element lies before its var".into()))
    };
    let mut out = Vec::with_capacity((rows * cols * f.sizes[2] * f.sizes[3]) as usize);
    for i3 in 0..f.sizes[3] {
        for i2 in 0..f.sizes[2] {
            for c in 0..cols {
                for r in 0..rows {
                    let src = at(
                        f.offset,
                        &[
                            (i3, f.steps[3]),
                            (i2, f.steps[2]),
                            (r, f.steps[1]),
                            (c * e, 1),
                        ],
                    )?;
                    let dst = at(
                        o.offset,
                        &[
                            (i3, o.steps[3]),
                            (i2, o.steps[2]),
                            (c, o.steps[1]),
                            (r * e, 1),
                        ],
                    )?;
                    out.push(PairTemplate {
                        src: Loc::Var {
                            var_id: f.var_id,
                            offset: src,
                        },
                        dst: Loc::Var {
                            var_id: o.var_id,
                            offset: dst,
                        },
                        len: e as u32,
                        convert: None,
                    });
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nrt_hal::{DeviceAddr, Dtype};

    fn side(var_id: u32, offset: u64, sizes: &[u64], steps: &[i64]) -> DmaSide {
        DmaSide {
            var_id,
            offset,
            sizes: sizes.to_vec(),
            steps: steps.to_vec(),
            dtype: Dtype::F32,
        }
    }

    #[test]
    fn rows_into_partitions_become_one_pair_per_row() {
        // The reference's vector-add load: 128 rows of 4000 bytes into SB partitions.
        let d = DmaDesc {
            op: DmaOp::Copy,
            from: side(1, 0, &[4000, 128], &[1, 4000]),
            to: side(0, 180_608, &[4000, 128], &[1, 262_144]),
        };
        let p = lower_desc(&d).unwrap().unwrap();
        assert_eq!(p.len(), 128);
        assert_eq!(
            p[3],
            PairTemplate {
                src: Loc::Var {
                    var_id: 1,
                    offset: 12_000
                },
                dst: Loc::Var {
                    var_id: 0,
                    offset: 180_608 + 3 * 262_144
                },
                len: 4000,
                convert: None,
            }
        );
    }

    #[test]
    fn mismatched_runs_are_zipped_and_split_at_64k() {
        let d = DmaDesc {
            op: DmaOp::Copy,
            from: side(1, 0, &[200_000], &[1]),
            to: side(2, 10, &[100_000, 2], &[1, 150_000]),
        };
        let p = lower_desc(&d).unwrap().unwrap();
        let lens: Vec<u32> = p.iter().map(|x| x.len).collect();
        assert_eq!(lens, [65536, 34464, 65536, 34464]);
        assert_eq!(
            p[2].dst,
            Loc::Var {
                var_id: 2,
                offset: 150_010
            }
        );
        assert_eq!(
            p[2].src,
            Loc::Var {
                var_id: 1,
                offset: 100_000
            }
        );
        assert_eq!(lens.iter().map(|&l| l as u64).sum::<u64>(), 200_000);
    }

    #[test]
    fn unequal_totals_and_unsupported_ops() {
        let d = DmaDesc {
            op: DmaOp::Copy,
            from: side(1, 0, &[16], &[1]),
            to: side(2, 0, &[8], &[1]),
        };
        assert!(lower_desc(&d).unwrap_err().message.contains("16 bytes"));
        let d = DmaDesc {
            op: DmaOp::Fma,
            from: side(1, 0, &[16], &[1]),
            to: side(2, 0, &[16], &[1]),
        };
        assert_eq!(lower_desc(&d).unwrap(), None);
        let neg = DmaDesc {
            op: DmaOp::Copy,
            from: side(1, 0, &[4, 2], &[1, -8]),
            to: side(2, 0, &[8], &[1]),
        };
        assert!(lower_desc(&neg).is_err());
    }

    #[test]
    fn resolve_makes_addresses_absolute() {
        let t = PairTemplate {
            src: Loc::Var {
                var_id: 4,
                offset: 0x10,
            },
            dst: Loc::Abs(DeviceAddr::new(0x2000)),
            len: 4,
            convert: None,
        };
        let c = t
            .resolve(&|v| (v == 4).then_some(DeviceAddr::new(0x1000)))
            .unwrap();
        assert_eq!((c.src.raw(), c.dst.raw(), c.len), (0x1010, 0x2000, 4));
        assert!(t.resolve(&|_| None).is_err());
        assert!(t.touches(&|v| v == 4) && !t.touches(&|v| v == 5));
    }

    #[test]
    fn a_wzxy_transpose_moves_element_c_r_to_r_c() {
        // The fp32 form real NEFFs use: two 128×64 tiles that together transpose 128×128.
        let d = DmaDesc {
            op: DmaOp::Transpose,
            from: side(1, 0, &[256, 128, 2, 1], &[1, 512, 256, 65536]),
            to: side(0, 0, &[512, 64, 2, 1], &[1, 262_144, 16_777_216, 512]),
        };
        let mut params = crate::kbin::DmaParams {
            transpose: Some(crate::kbin::DmaTranspose {
                op: Some("WZXY".into()),
                shape: vec![1, 1, 128, 64],
                element_size: Some(4),
            }),
            num_tiling_dimensions: Some(2),
            ..Default::default()
        };
        let pairs = lower_transpose(&d, &params).unwrap();
        assert_eq!(pairs.len(), 128 * 128);
        // Source row r, column j lands in partition j, element r.
        for (r, j) in [(0u64, 0u64), (5, 3), (127, 64), (17, 127)] {
            let want_src = Loc::Var {
                var_id: 1,
                offset: r * 512 + j * 4,
            };
            let want_dst = Loc::Var {
                var_id: 0,
                offset: j * 262_144 + r * 4,
            };
            assert!(
                pairs
                    .iter()
                    .any(|p| p.src == want_src && p.dst == want_dst && p.len == 4),
                "({r}, {j})"
            );
        }
        params.transpose.as_mut().unwrap().op = Some("WXYZ".into());
        let e = lower_transpose(&d, &params).unwrap_err();
        assert!(e.message.contains("WXYZ"), "{e}");
        let mut uneven = d.clone();
        uneven.to.sizes[2] = 1;
        assert!(lower_transpose(
            &uneven,
            &crate::kbin::DmaParams {
                num_tiling_dimensions: Some(2),
                ..params.clone()
            }
        )
        .is_err());
    }
}
