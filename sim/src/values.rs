//! Host-side tensor data: values stored as a [`Dtype`] and read back as `f64`, and the seeded
//! inputs every tool shares (`nrt-emu run --seed`, `nrt-emu conform --seed`, the zoo's golden
//! inputs), so the same seed gives the same bytes everywhere.
//!
//! This is the one table of how a host value becomes element bytes: floats round to nearest
//! even (binary32, `half`'s bf16 and f16, and the fp8 formats of [`crate::compute::convert`]);
//! integers round half away from zero and saturate, and read back exactly (a `u32` above 2²⁴
//! keeps every bit, which f32 would not). The fp8 formats (`FP8_E3/E4/E5`, codes 0xD–0xF) are
//! storage types of real values — NKI's `float8_e4m3` and `float8_e5m2` among them
//! (docs/isa.md "dtypes") — so a seeded fp8 input holds the generator's values rounded to the
//! format, not zeros.

use nrt_hal::Dtype;

use crate::compute::convert::{
    f32_to_fp8_e3m4, f32_to_fp8_e4m3, f32_to_fp8_e5m2, fp8_e3m4_to_f32, fp8_e4m3_to_f32,
    fp8_e5m2_to_f32,
};
use crate::rng::SplitMix64;

/// `values` stored as `dtype`, little-endian, one element each.
pub fn encode(dtype: Dtype, values: &[f64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * dtype.size());
    for &v in values {
        match dtype {
            Dtype::F32 | Dtype::F32r => out.extend_from_slice(&(v as f32).to_le_bytes()),
            Dtype::Bf16 => out.extend_from_slice(&half::bf16::from_f64(v).to_bits().to_le_bytes()),
            Dtype::F16 => out.extend_from_slice(&half::f16::from_f64(v).to_bits().to_le_bytes()),
            Dtype::U32 => out.extend_from_slice(&(v.round() as u32).to_le_bytes()),
            Dtype::I32 => out.extend_from_slice(&(v.round() as i32).to_le_bytes()),
            Dtype::U16 => out.extend_from_slice(&(v.round() as u16).to_le_bytes()),
            Dtype::I16 => out.extend_from_slice(&(v.round() as i16).to_le_bytes()),
            Dtype::U8 => out.push(v.round() as u8),
            Dtype::I8 => out.push(v.round() as i8 as u8),
            Dtype::U64 => out.extend_from_slice(&(v.round() as u64).to_le_bytes()),
            Dtype::I64 => out.extend_from_slice(&(v.round() as i64).to_le_bytes()),
            Dtype::Fp8E3 => out.push(f32_to_fp8_e3m4(v as f32)),
            Dtype::Fp8E4 => out.push(f32_to_fp8_e4m3(v as f32)),
            Dtype::Fp8E5 => out.push(f32_to_fp8_e5m2(v as f32)),
        }
    }
    out
}

/// Little-endian `dtype` elements as `f64` (a trailing partial element is ignored).
pub fn decode(dtype: Dtype, bytes: &[u8]) -> Vec<f64> {
    let n = dtype.size();
    bytes
        .chunks_exact(n)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..n].copy_from_slice(c);
            let w = u64::from_le_bytes(b);
            match dtype {
                Dtype::F32 | Dtype::F32r => f64::from(f32::from_bits(w as u32)),
                Dtype::Bf16 => half::bf16::from_bits(w as u16).to_f64(),
                Dtype::F16 => half::f16::from_bits(w as u16).to_f64(),
                Dtype::U32 => f64::from(w as u32),
                Dtype::I32 => f64::from(w as u32 as i32),
                Dtype::U16 => f64::from(w as u16),
                Dtype::I16 => f64::from(w as u16 as i16),
                Dtype::U8 => f64::from(w as u8),
                Dtype::I8 => f64::from(w as u8 as i8),
                Dtype::U64 => w as f64,
                Dtype::I64 => w as i64 as f64,
                Dtype::Fp8E3 => f64::from(fp8_e3m4_to_f32(w as u8)),
                Dtype::Fp8E4 => f64::from(fp8_e4m3_to_f32(w as u8)),
                Dtype::Fp8E5 => f64::from(fp8_e5m2_to_f32(w as u8)),
            }
        })
        .collect()
}

/// The seeded input named `name`: `size / dtype.size()` values `k/128` (`k` uniform in
/// −128..=128, [`SplitMix64::unit_q`]) from the stream of `name` under `seed`
/// ([`SplitMix64::for_stream`]), stored as `dtype`, zero-padded to `size` bytes. Each tensor's
/// data depends on the seed and its own name only, so giving some inputs from files does not
/// change the others.
pub fn seeded_input(seed: u64, name: &str, dtype: Dtype, size: usize) -> Vec<u8> {
    let values = SplitMix64::for_stream(seed, name).fill(size / dtype.size(), 1.0);
    let mut out = encode(
        dtype,
        &values.iter().map(|&v| f64::from(v)).collect::<Vec<_>>(),
    );
    out.resize(size, 0);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_round_trips_the_seeded_values() {
        for d in Dtype::ALL {
            // A partial element at the end is zero padding.
            let size = 64 * d.size() + d.size() - 1;
            let bytes = seeded_input(7, "x", d, size);
            assert_eq!(bytes.len(), size);
            if d.size() > 1 {
                assert_eq!(bytes.last(), Some(&0), "{d:?}: padding");
            }
            let want = SplitMix64::for_stream(7, "x").fill(64, 1.0);
            for (got, w) in decode(d, &bytes).iter().zip(&want) {
                let unsigned = matches!(d, Dtype::U8 | Dtype::U16 | Dtype::U32 | Dtype::U64);
                // Unsigned integers saturate negative values to 0.
                let w = if unsigned {
                    f64::from(*w).max(0.0)
                } else {
                    f64::from(*w)
                };
                let tol = if d.is_float() { 0.07 } else { 0.5 };
                assert!((got - w).abs() <= tol, "{d:?}: {got} for {w}");
            }
        }
    }

    #[test]
    fn wide_integers_read_back_exactly() {
        let v = [f64::from(0x5EED_00A5u32), 4_000_000_000.0];
        assert_eq!(decode(Dtype::U32, &encode(Dtype::U32, &v)), v);
    }
}
