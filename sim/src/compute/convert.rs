//! Storage dtype ⇄ f32 conversion for every [`Dtype`] (docs/isa.md §4: "engines
//! compute in fp32"; casts on read and write are free).
//!
//! | dtype | → f32 | f32 → |
//! |---|---|---|
//! | `f32`, `f32r` | exact | exact (`f32r` is stored as binary32) |
//! | `bf16`, `f16` | exact | round to nearest even (`half`); overflow → ±inf; NaN → NaN |
//! | `fp8e4` (e4m3) | exact | RNE, saturate to ±448, ±inf → ±448, NaN → NaN (`S.1111.111`) |
//! | `fp8e5` (e5m2) | exact | RNE, IEEE: overflow (≥ 61440) → ±inf, NaN → NaN (`S.11111.11`) |
//! | `fp8e3` (e3m4) | exact | RNE, saturate to ±30, ±inf → ±30, NaN → NaN (`S.111.1111`) |
//! | integers | exact up to 2²⁴, else RNE | RNE, saturate to the type's range, NaN → 0 |
//!
//! The fp8 formats:
//!
//! - **e4m3** is NKI's `float8_e4m3`, the OCP "fn" variant: bias 7, no infinities, one NaN
//!   mantissa per sign (`0x7F`, `0xFF`), largest finite `0x7E` = 448, smallest subnormal
//!   `0x01` = 2⁻⁹.
//! - **e5m2** is IEEE-like: bias 15, exponent field 31 holds ±inf (mantissa 0) and NaN,
//!   largest finite `0x7B` = 57344, smallest subnormal 2⁻¹⁶.
//! - **e3m4** — *our choice*, the public record gives only the name: "fn"-style like e4m3, bias
//!   3, no infinities, NaN = `S.111.1111`, largest finite `0x7E` = 30, smallest normal 2⁻²,
//!   smallest subnormal `0x01` = 2⁻⁶.
//!
//! The encoder writes NaN as `sign | 0x7F` for every fp8 format. 64-bit integers convert to f32
//! with one correct rounding (Rust's `as`), and f32 → integer conversions go through
//! `round_ties_even` and Rust's saturating `as` casts, which send NaN to 0.
//!
//! Two further "lanes" keep integer data exact where f32 would round it (see the compute module
//! docs): an `i64` lane for integer → integer conversions (`u64` values above `i64::MAX` read
//! as `i64::MAX`, which saturates every narrower destination correctly; same-dtype copies move
//! the bits), and a 32-bit *pattern* lane for the
//! bit-vector ALU ops ([`to_bits_lane`], [`from_bits_lane`]).

use std::sync::OnceLock;

use half::{bf16, f16};
use nrt_hal::Dtype;

/// An fp8 format: exponent and mantissa widths, bias, and whether it has IEEE infinities.
#[derive(Debug, Clone, Copy)]
struct Fp8Format {
    man_bits: u32,
    bias: i32,
    /// IEEE-like (e5m2): the all-ones exponent holds inf/NaN. Otherwise "fn": only
    /// `S.1…1.1…1` is NaN, no infinities, saturating.
    ieee: bool,
    /// All-ones exponent field value.
    exp_max_field: i32,
}

const E4M3: Fp8Format = Fp8Format {
    man_bits: 3,
    bias: 7,
    ieee: false,
    exp_max_field: 15,
};
const E5M2: Fp8Format = Fp8Format {
    man_bits: 2,
    bias: 15,
    ieee: true,
    exp_max_field: 31,
};
const E3M4: Fp8Format = Fp8Format {
    man_bits: 4,
    bias: 3,
    ieee: false,
    exp_max_field: 7,
};

/// 2^k as f64 for k in the normal range (−1022..=1023).
fn pow2(k: i32) -> f64 {
    f64::from_bits(((k + 1023) as u64) << 52)
}

impl Fp8Format {
    /// Code of the largest finite magnitude.
    const fn max_code(self) -> u32 {
        if self.ieee {
            ((self.exp_max_field as u32) << self.man_bits) - 1
        } else {
            0x7E
        }
    }

    /// Code of +inf (IEEE formats only).
    const fn inf_code(self) -> u32 {
        (self.exp_max_field as u32) << self.man_bits
    }

    fn decode(self, code: u8) -> f32 {
        let negative = code & 0x80 != 0;
        let mag = u32::from(code & 0x7F);
        let man_mask = (1u32 << self.man_bits) - 1;
        let e = (mag >> self.man_bits) as i32;
        let man = mag & man_mask;
        let v = if e == self.exp_max_field && self.ieee {
            if man == 0 {
                f32::INFINITY
            } else {
                f32::NAN
            }
        } else if e == self.exp_max_field && man == man_mask {
            f32::NAN
        } else if e == 0 {
            (f64::from(man) * pow2(1 - self.bias - self.man_bits as i32)) as f32
        } else {
            (f64::from(man | (1 << self.man_bits)) * pow2(e - self.bias - self.man_bits as i32))
                as f32
        };
        if negative {
            -v
        } else {
            v
        }
    }

    fn encode(self, v: f32) -> u8 {
        let bits = v.to_bits();
        let sign = ((bits >> 24) & 0x80) as u8;
        if v.is_nan() {
            return sign | 0x7F;
        }
        let overflow = sign
            | if self.ieee {
                self.inf_code() as u8
            } else {
                self.max_code() as u8
            };
        if v.is_infinite() {
            return overflow;
        }
        let a = f64::from(v.abs());
        let biased = ((bits >> 23) & 0xFF) as i32;
        // floor(log2 |v|) for normal f32; f32 subnormals are far below every fp8 subnormal.
        let e = if biased == 0 { -127 } else { biased - 127 };
        let emin = 1 - self.bias;
        let emax = self.exp_max_field - self.bias; // exponent of the all-ones field
        if e > emax {
            return overflow;
        }
        let m = self.man_bits as i32;
        let code = if e < emin {
            // Subnormal: multiples of 2^(emin - m); n may round up to the smallest normal,
            // whose code is exactly n.
            (a * pow2(m - emin)).round_ties_even() as u32
        } else {
            // n in [2^m, 2^(m+1)]; a carry into the exponent field is the right encoding.
            let n = (a * pow2(m - e)).round_ties_even() as u32;
            (((e + self.bias) as u32) << m) + n - (1 << m)
        };
        let limit = if self.ieee {
            self.inf_code()
        } else {
            self.max_code()
        };
        if code > limit || (self.ieee && code == limit) {
            return overflow;
        }
        sign | code as u8
    }
}

fn table(cell: &'static OnceLock<[f32; 256]>, f: Fp8Format) -> &'static [f32; 256] {
    cell.get_or_init(|| {
        let mut t = [0f32; 256];
        for (code, slot) in t.iter_mut().enumerate() {
            *slot = f.decode(code as u8);
        }
        t
    })
}

static E4M3_TABLE: OnceLock<[f32; 256]> = OnceLock::new();
static E5M2_TABLE: OnceLock<[f32; 256]> = OnceLock::new();
static E3M4_TABLE: OnceLock<[f32; 256]> = OnceLock::new();

/// Decodes an fp8 e4m3 ("fn") code.
pub fn fp8_e4m3_to_f32(code: u8) -> f32 {
    table(&E4M3_TABLE, E4M3)[usize::from(code)]
}

/// Encodes f32 as fp8 e4m3 ("fn"): round to nearest even, saturate to ±448, NaN → `sign|0x7F`.
pub fn f32_to_fp8_e4m3(v: f32) -> u8 {
    E4M3.encode(v)
}

/// Decodes an fp8 e5m2 code.
pub fn fp8_e5m2_to_f32(code: u8) -> f32 {
    table(&E5M2_TABLE, E5M2)[usize::from(code)]
}

/// Encodes f32 as fp8 e5m2: round to nearest even, overflow → ±inf, NaN → `sign|0x7F`.
pub fn f32_to_fp8_e5m2(v: f32) -> u8 {
    E5M2.encode(v)
}

/// Decodes an fp8 e3m4 ("fn", our choice) code.
pub fn fp8_e3m4_to_f32(code: u8) -> f32 {
    table(&E3M4_TABLE, E3M4)[usize::from(code)]
}

/// Encodes f32 as fp8 e3m4 ("fn", our choice): round to nearest even, saturate to ±30,
/// NaN → `sign|0x7F`.
pub fn f32_to_fp8_e3m4(v: f32) -> u8 {
    E3M4.encode(v)
}

/// One storage element type: how it loads into and stores from each lane.
///
/// `load_*` read the first `SIZE` bytes of `b`, `store_*` write them; callers guarantee
/// `b.len() >= SIZE`.
pub(crate) trait Elem {
    /// Bytes per element.
    const SIZE: usize;
    /// Value → f32 (see the module table).
    fn load_f32(b: &[u8]) -> f32;
    /// f32 → storage (see the module table).
    fn store_f32(v: f32, b: &mut [u8]);
    /// [`Elem::load_f32`] of each of the consecutive elements in `src` into `dst` (as many
    /// as `dst` holds; `src` holds at least `SIZE · dst.len()` bytes). One slice loop, which
    /// the compiler can vectorise where the element conversion has no branches.
    #[inline]
    fn load_f32_run(src: &[u8], dst: &mut [f32]) {
        for (d, c) in dst.iter_mut().zip(src.chunks_exact(Self::SIZE)) {
            *d = Self::load_f32(c);
        }
    }
    /// [`Elem::store_f32`] of each of `src` into the consecutive elements of `dst` (as many
    /// as `src` holds; `dst` holds at least `SIZE · src.len()` bytes).
    #[inline]
    fn store_f32_run(src: &[f32], dst: &mut [u8]) {
        for (c, &v) in dst.chunks_exact_mut(Self::SIZE).zip(src) {
            Self::store_f32(v, c);
        }
    }
    /// Integer types: the exact value. Floats: the f32 value rounded to an integer.
    fn load_int(b: &[u8]) -> i64 {
        // Saturating cast; NaN → 0.
        Self::load_f32(b).round_ties_even() as i64
    }
    /// Integer types: the value saturated to the type's range. Floats: through f32.
    fn store_int(v: i64, b: &mut [u8]) {
        Self::store_f32(v as f32, b)
    }
    /// The 32-bit pattern the bit-vector ops see (see [`to_bits_lane`]).
    fn load_bits(b: &[u8]) -> u32 {
        // Saturating cast; NaN → 0.
        Self::load_f32(b).round_ties_even() as i32 as u32
    }
    /// Stores a 32-bit pattern (see [`from_bits_lane`]). Floats: the pattern's i32 value.
    fn store_bits(v: u32, b: &mut [u8]) {
        Self::store_f32(v as i32 as f32, b)
    }
}

#[inline]
fn rd<const N: usize>(b: &[u8]) -> [u8; N] {
    let mut a = [0u8; N];
    a.copy_from_slice(&b[..N]);
    a
}

/// binary32 (`f32`, `f32r`).
pub(crate) struct F32E;
impl Elem for F32E {
    const SIZE: usize = 4;
    #[inline]
    fn load_f32(b: &[u8]) -> f32 {
        f32::from_le_bytes(rd(b))
    }
    #[inline]
    fn store_f32(v: f32, b: &mut [u8]) {
        b[..4].copy_from_slice(&v.to_le_bytes());
    }
}

/// bfloat16.
pub(crate) struct Bf16E;
impl Elem for Bf16E {
    const SIZE: usize = 2;
    #[inline]
    fn load_f32(b: &[u8]) -> f32 {
        f32::from_bits(u32::from(u16::from_le_bytes(rd(b))) << 16)
    }
    #[inline]
    fn store_f32(v: f32, b: &mut [u8]) {
        b[..2].copy_from_slice(&bf16::from_f32(v).to_bits().to_le_bytes());
    }
    /// Without branches, so the loop vectorises (`half`'s per-element conversion branches on
    /// NaN and on the rounding bits: 7% of `mlp2`'s host time). Same bits as
    /// [`Bf16E::store_f32`] (tested on every sign, exponent and leading mantissa bits, with the
    /// rounding-relevant low halves).
    #[inline]
    fn store_f32_run(src: &[f32], dst: &mut [u8]) {
        for (c, &v) in dst.chunks_exact_mut(2).zip(src) {
            c.copy_from_slice(&f32_to_bf16_bits(v).to_le_bytes());
        }
    }
}

/// f32 → bf16 bits, round to nearest even, a NaN keeping its high payload with the quiet bit
/// set (what `half::bf16::from_f32` gives), computed without branches.
#[inline]
fn f32_to_bf16_bits(v: f32) -> u16 {
    let x = v.to_bits();
    let nan = (x & 0x7FFF_FFFF) > 0x7F80_0000;
    // Add just under half an ulp of bf16, plus one when the kept part is odd (ties to even).
    let rounded = x.wrapping_add(0x7FFF + ((x >> 16) & 1)) >> 16;
    let quiet = (x >> 16) | 0x0040;
    (if nan { quiet } else { rounded }) as u16
}

/// binary16 bits → f32, exactly as `half::f16::to_f32` (every binary16 value is exact in f32;
/// a NaN keeps its payload and gets the quiet bit). Plain integer code that inlines into the
/// gather loops (`half` dispatches at run time to an out-of-line F16C routine per element, 9%
/// of a conv model's host time), and without branches: the three cases are computed and one
/// is selected, so runs of elements vectorise (with branches, the per-element loop was 27% of
/// `neuron_conv_pool`'s host time).
#[inline]
fn f16_bits_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    // Exponent and mantissa, 0..=0x7FFF.
    let em = u32::from(h & 0x7FFF);
    // Normal: rebias the exponent (15 → 127).
    let normal = (em << 13) + (112 << 23);
    // Zero or subnormal: man · 2⁻²⁴, exact in f32 (man < 2¹⁰).
    let small = (em as i32 as f32 * (1.0 / 16_777_216.0)).to_bits();
    // Infinity, or NaN (mantissa not zero) with the quiet bit set.
    let quiet = if em > 0x7C00 { 0x0040_0000 } else { 0 };
    let special = (em << 13) | 0x7F80_0000 | quiet;
    let mag = if em < 0x0400 {
        small
    } else if em >= 0x7C00 {
        special
    } else {
        normal
    };
    f32::from_bits(sign | mag)
}

/// IEEE binary16.
pub(crate) struct F16E;
impl Elem for F16E {
    const SIZE: usize = 2;
    #[inline]
    fn load_f32(b: &[u8]) -> f32 {
        f16_bits_to_f32(u16::from_le_bytes(rd(b)))
    }
    #[inline]
    fn store_f32(v: f32, b: &mut [u8]) {
        b[..2].copy_from_slice(&f16::from_f32(v).to_bits().to_le_bytes());
    }
    /// A run converts eight elements per F16C instruction where the host has it (one feature
    /// check per run; the per-element loop was a quarter of `neuron_conv_pool`'s host time),
    /// else element by element. Same bits as [`F16E::load_f32`] for every pattern (tested
    /// exhaustively).
    #[inline]
    fn load_f32_run(src: &[u8], dst: &mut [f32]) {
        let src = &src[..2 * dst.len()];
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("f16c") {
            // SAFETY: the host has F16C (and so AVX), checked just above.
            unsafe { f16_run_f16c(src, dst) };
            return;
        }
        for (d, c) in dst.iter_mut().zip(src.chunks_exact(2)) {
            *d = Self::load_f32(c);
        }
    }
    /// A run converts eight elements per F16C instruction where the host has it, else element
    /// by element; same bits as [`F16E::store_f32`] (which takes `half`'s F16C path per element
    /// on such a host; tested as for bf16).
    #[inline]
    fn store_f32_run(src: &[f32], dst: &mut [u8]) {
        let dst = &mut dst[..2 * src.len()];
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("f16c") {
            // SAFETY: the host has F16C (and so AVX), checked just above.
            unsafe { f16_store_run_f16c(src, dst) };
            return;
        }
        for (c, &v) in dst.chunks_exact_mut(2).zip(src) {
            Self::store_f32(v, c);
        }
    }
}

/// [`F16E::store_f32_run`] with F16C: `src.len()` elements into `dst` (exactly twice as many
/// bytes), eight per `vcvtps2ph` rounding to nearest even, the tail element by element.
///
/// # Safety
///
/// The host must support F16C and AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn f16_store_run_f16c(src: &[f32], dst: &mut [u8]) {
    use std::arch::x86_64::{__m128i, _mm256_cvtps_ph, _mm256_loadu_ps, _mm_storeu_si128};
    assert_eq!(dst.len(), 2 * src.len());
    let mut s8 = src.chunks_exact(8);
    let mut d8 = dst.chunks_exact_mut(16);
    for (s, d) in (&mut s8).zip(&mut d8) {
        // SAFETY: `s` holds 8 f32s and `d` 16 bytes (the chunks are exact); both accesses are
        // unaligned ones.
        unsafe {
            let h = _mm256_cvtps_ph::<0>(_mm256_loadu_ps(s.as_ptr()));
            _mm_storeu_si128(d.as_mut_ptr().cast::<__m128i>(), h);
        }
    }
    for (&v, c) in s8
        .remainder()
        .iter()
        .zip(d8.into_remainder().chunks_exact_mut(2))
    {
        F16E::store_f32(v, c);
    }
}

/// [`F16E::load_f32_run`] with F16C: `dst.len()` elements from `src` (exactly twice as many
/// bytes), eight per `vcvtph2ps`, the tail element by element.
///
/// # Safety
///
/// The host must support F16C and AVX.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx,f16c")]
unsafe fn f16_run_f16c(src: &[u8], dst: &mut [f32]) {
    use std::arch::x86_64::{__m128i, _mm256_cvtph_ps, _mm256_storeu_ps, _mm_loadu_si128};
    assert_eq!(src.len(), 2 * dst.len());
    let mut d8 = dst.chunks_exact_mut(8);
    let mut s8 = src.chunks_exact(16);
    for (d, s) in (&mut d8).zip(&mut s8) {
        // SAFETY: `s` holds 16 bytes and `d` 8 f32s (the chunks are exact); both accesses are
        // unaligned ones.
        unsafe {
            let h = _mm_loadu_si128(s.as_ptr().cast::<__m128i>());
            _mm256_storeu_ps(d.as_mut_ptr(), _mm256_cvtph_ps(h));
        }
    }
    for (d, c) in d8
        .into_remainder()
        .iter_mut()
        .zip(s8.remainder().chunks_exact(2))
    {
        *d = f16_bits_to_f32(u16::from_le_bytes([c[0], c[1]]));
    }
}

macro_rules! fp8_elem {
    ($name:ident, $doc:literal, $dec:ident, $enc:ident) => {
        #[doc = $doc]
        pub(crate) struct $name;
        impl Elem for $name {
            const SIZE: usize = 1;
            #[inline]
            fn load_f32(b: &[u8]) -> f32 {
                $dec(b[0])
            }
            #[inline]
            fn store_f32(v: f32, b: &mut [u8]) {
                b[0] = $enc(v);
            }
        }
    };
}

fp8_elem!(Fp8E4E, "fp8 e4m3.", fp8_e4m3_to_f32, f32_to_fp8_e4m3);
fp8_elem!(Fp8E5E, "fp8 e5m2.", fp8_e5m2_to_f32, f32_to_fp8_e5m2);
fp8_elem!(Fp8E3E, "fp8 e3m4.", fp8_e3m4_to_f32, f32_to_fp8_e3m4);

macro_rules! int_elem {
    ($name:ident, $t:ty, $doc:literal) => {
        #[doc = $doc]
        pub(crate) struct $name;
        impl Elem for $name {
            const SIZE: usize = core::mem::size_of::<$t>();
            #[inline]
            fn load_f32(b: &[u8]) -> f32 {
                <$t>::from_le_bytes(rd(b)) as f32
            }
            #[inline]
            fn store_f32(v: f32, b: &mut [u8]) {
                // Saturating cast; NaN → 0.
                let x = v.round_ties_even() as $t;
                b[..Self::SIZE].copy_from_slice(&x.to_le_bytes());
            }
            #[inline]
            fn load_int(b: &[u8]) -> i64 {
                // Exact, except u64 above i64::MAX, which saturates.
                i128::from(<$t>::from_le_bytes(rd(b))).min(i128::from(i64::MAX)) as i64
            }
            #[inline]
            fn store_int(v: i64, b: &mut [u8]) {
                let x = i128::from(v).clamp(<$t>::MIN.into(), <$t>::MAX.into()) as $t;
                b[..Self::SIZE].copy_from_slice(&x.to_le_bytes());
            }
            #[inline]
            fn load_bits(b: &[u8]) -> u32 {
                // Low 32 bits of the (sign- or zero-extended) value.
                i128::from(<$t>::from_le_bytes(rd(b))) as u32
            }
            #[inline]
            fn store_bits(v: u32, b: &mut [u8]) {
                // Signed types sign-extend the 32-bit pattern, unsigned zero-extend; then the
                // low bytes are stored (truncation for 8/16-bit types).
                let wide: i128 = if <$t>::MIN == 0 {
                    i128::from(v)
                } else {
                    i128::from(v as i32)
                };
                let x = wide as $t;
                b[..Self::SIZE].copy_from_slice(&x.to_le_bytes());
            }
        }
    };
}

int_elem!(I8E, i8, "int8.");
int_elem!(U8E, u8, "uint8.");
int_elem!(I16E, i16, "int16.");
int_elem!(U16E, u16, "uint16.");
int_elem!(I32E, i32, "int32.");
int_elem!(U32E, u32, "uint32.");
int_elem!(I64E, i64, "int64.");
int_elem!(U64E, u64, "uint64.");

/// Runs `$body` with `$T` bound to the [`Elem`] type of `$dtype`.
macro_rules! with_elem {
    ($dtype:expr, $T:ident => $body:expr) => {{
        use $crate::compute::convert::*;
        match $dtype {
            nrt_hal::Dtype::F32 | nrt_hal::Dtype::F32r => {
                type $T = F32E;
                $body
            }
            nrt_hal::Dtype::Bf16 => {
                type $T = Bf16E;
                $body
            }
            nrt_hal::Dtype::F16 => {
                type $T = F16E;
                $body
            }
            nrt_hal::Dtype::Fp8E4 => {
                type $T = Fp8E4E;
                $body
            }
            nrt_hal::Dtype::Fp8E5 => {
                type $T = Fp8E5E;
                $body
            }
            nrt_hal::Dtype::Fp8E3 => {
                type $T = Fp8E3E;
                $body
            }
            nrt_hal::Dtype::I8 => {
                type $T = I8E;
                $body
            }
            nrt_hal::Dtype::U8 => {
                type $T = U8E;
                $body
            }
            nrt_hal::Dtype::I16 => {
                type $T = I16E;
                $body
            }
            nrt_hal::Dtype::U16 => {
                type $T = U16E;
                $body
            }
            nrt_hal::Dtype::I32 => {
                type $T = I32E;
                $body
            }
            nrt_hal::Dtype::U32 => {
                type $T = U32E;
                $body
            }
            nrt_hal::Dtype::I64 => {
                type $T = I64E;
                $body
            }
            nrt_hal::Dtype::U64 => {
                type $T = U64E;
                $body
            }
        }
    }};
}
pub(crate) use with_elem;

/// Reads one element of `dtype` from the start of `bytes` as f32; `None` if `bytes` is shorter
/// than the element.
pub fn read_f32(dtype: Dtype, bytes: &[u8]) -> Option<f32> {
    if bytes.len() < dtype.size() {
        return None;
    }
    Some(with_elem!(dtype, T => T::load_f32(bytes)))
}

/// Writes `v` as one element of `dtype` at the start of `bytes` (see the module table for the
/// rounding); `None` (and nothing written) if `bytes` is shorter than the element.
pub fn write_f32(dtype: Dtype, v: f32, bytes: &mut [u8]) -> Option<()> {
    if bytes.len() < dtype.size() {
        return None;
    }
    with_elem!(dtype, T => T::store_f32(v, bytes));
    Some(())
}

/// The value of an element given as its raw little-endian bits (the low `dtype.size()` bytes
/// of `raw`; higher bytes are ignored).
pub fn decode(dtype: Dtype, raw: u64) -> f32 {
    let b = raw.to_le_bytes();
    with_elem!(dtype, T => T::load_f32(&b))
}

/// The raw little-endian bits (in the low `dtype.size()` bytes, higher bytes zero) of `v`
/// stored as `dtype`.
pub fn encode(dtype: Dtype, v: f32) -> u64 {
    let mut b = [0u8; 8];
    with_elem!(dtype, T => T::store_f32(v, &mut b));
    u64::from_le_bytes(b)
}

/// Rounds `v` through `dtype` and back: the value an engine would read after writing `v`.
pub fn quantize(dtype: Dtype, v: f32) -> f32 {
    decode(dtype, encode(dtype, v))
}

/// The 32-bit pattern the bit-vector ALU ops see for an element given as raw bits: integer
/// types give the low 32 bits of their (sign- or zero-extended) value; float types give their
/// value rounded to nearest even and saturated to i32, as a two's-complement pattern.
pub fn to_bits_lane(dtype: Dtype, raw: u64) -> u32 {
    let b = raw.to_le_bytes();
    with_elem!(dtype, T => T::load_bits(&b))
}

/// Stores a bit-vector result pattern as `dtype`, returning the raw bits: integer types take
/// the pattern sign-extended (signed types) or zero-extended (unsigned types) and truncated to
/// their width; float types take the pattern's i32 value, rounded like any f32 store.
pub fn from_bits_lane(dtype: Dtype, pattern: u32) -> u64 {
    let mut b = [0u8; 8];
    with_elem!(dtype, T => T::store_bits(pattern, &mut b));
    u64::from_le_bytes(b)
}

/// Converts `src` (elements of `from`, back to back) into `dst` (elements of `to`): integers
/// to integers exactly (saturating), everything else through f32 with one rounding to `to`.
/// Converts as many elements as both buffers hold.
pub fn convert_elements(from: Dtype, src: &[u8], to: Dtype, dst: &mut [u8]) {
    let n = (src.len() / from.size()).min(dst.len() / to.size());
    let (ss, ds) = (from.size(), to.size());
    if !from.is_float() && !to.is_float() {
        for i in 0..n {
            let v = with_elem!(from, T => T::load_int(&src[i * ss..]));
            with_elem!(to, T => T::store_int(v, &mut dst[i * ds..]));
        }
        return;
    }
    for i in 0..n {
        let v = with_elem!(from, T => T::load_f32(&src[i * ss..]));
        with_elem!(to, T => T::store_f32(v, &mut dst[i * ds..]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The run conversion (F16C where the host has it) against the element conversion, for
    /// every binary16 pattern, aligned and not.
    #[test]
    fn f16_runs_convert_every_pattern_as_elements_do() {
        let bytes: Vec<u8> = (0..=u16::MAX).flat_map(u16::to_le_bytes).collect();
        let mut padded = vec![0u8];
        padded.extend_from_slice(&bytes);
        for src in [&bytes[..], &padded[1..]] {
            let mut run = vec![0f32; 1 << 16];
            F16E::load_f32_run(src, &mut run);
            for (h, got) in (0..=u16::MAX).zip(&run) {
                let want = f16_bits_to_f32(h);
                assert_eq!(got.to_bits(), want.to_bits(), "pattern {h:#06x}");
            }
        }
    }

    /// Every sign, exponent and leading mantissa bits (the high half), with low halves at and
    /// around the rounding point and a spread of others.
    fn store_probes() -> Vec<f32> {
        let lows = [
            0x0000, 0x0001, 0x0FFF, 0x1000, 0x1001, 0x7FFF, 0x8000, 0x8001, 0xFFFF,
        ];
        let mut x = 0x2545_f491u32;
        (0..=u16::MAX)
            .flat_map(|hi| {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                let spread = [x >> 16, x & 0xFFFF];
                lows.into_iter()
                    .chain(spread)
                    .map(move |lo| f32::from_bits((u32::from(hi) << 16) | lo))
            })
            .collect()
    }

    fn store_run_matches_elements<T: Elem>() {
        let vals = store_probes();
        for skip in [0, 3] {
            let src = &vals[skip..];
            let mut run = vec![0u8; T::SIZE * src.len()];
            T::store_f32_run(src, &mut run);
            for (i, (&v, got)) in src.iter().zip(run.chunks_exact(T::SIZE)).enumerate() {
                let mut want = [0u8; 8];
                T::store_f32(v, &mut want);
                assert_eq!(got, &want[..T::SIZE], "value {i} {:#010x}", v.to_bits());
            }
        }
    }

    #[test]
    fn bf16_and_f16_store_runs_match_the_element_stores() {
        store_run_matches_elements::<Bf16E>();
        store_run_matches_elements::<F16E>();
        store_run_matches_elements::<F32E>();
    }

    #[test]
    fn f16_load_matches_half_for_every_pattern() {
        for h in 0..=u16::MAX {
            let want = f16::from_bits(h).to_f32().to_bits();
            assert_eq!(f16_bits_to_f32(h).to_bits(), want, "pattern {h:#06x}");
        }
    }

    #[test]
    fn f16_run_load_matches_half_for_every_pattern() {
        // The slice loop the gathers use (vectorised), over all patterns in one run.
        let src: Vec<u8> = (0..=u16::MAX).flat_map(u16::to_le_bytes).collect();
        let mut dst = vec![0f32; 1 << 16];
        F16E::load_f32_run(&src, &mut dst);
        for (h, got) in (0..=u16::MAX).zip(&dst) {
            let want = f16::from_bits(h).to_f32().to_bits();
            assert_eq!(got.to_bits(), want, "pattern {h:#06x}");
        }
    }

    #[test]
    fn fp8_spot_values() {
        assert_eq!(fp8_e4m3_to_f32(0x7E), 448.0);
        assert!(fp8_e4m3_to_f32(0x7F).is_nan());
        assert_eq!(fp8_e4m3_to_f32(0x01), 2f32.powi(-9));
        assert_eq!(fp8_e4m3_to_f32(0x08), 2f32.powi(-6));
        assert_eq!(fp8_e4m3_to_f32(0x38), 1.0);
        assert_eq!(fp8_e5m2_to_f32(0x7C), f32::INFINITY);
        assert_eq!(fp8_e5m2_to_f32(0x7B), 57344.0);
        assert_eq!(fp8_e5m2_to_f32(0x01), 2f32.powi(-16));
        assert_eq!(fp8_e3m4_to_f32(0x7E), 30.0);
        assert_eq!(fp8_e3m4_to_f32(0x01), 2f32.powi(-6));
        assert_eq!(f32_to_fp8_e4m3(1000.0), 0x7E);
        assert_eq!(f32_to_fp8_e4m3(-1000.0), 0xFE);
        assert_eq!(f32_to_fp8_e5m2(61440.0), 0x7C);
        assert_eq!(f32_to_fp8_e5m2(61439.0), 0x7B);
        // Largest subnormal rounds up into the smallest normal.
        assert_eq!(f32_to_fp8_e4m3(2f32.powi(-6) * 0.99), 0x08);
    }

    #[test]
    fn fp8_round_trip() {
        for (dec, enc) in [
            (
                fp8_e4m3_to_f32 as fn(u8) -> f32,
                f32_to_fp8_e4m3 as fn(f32) -> u8,
            ),
            (fp8_e5m2_to_f32, f32_to_fp8_e5m2),
            (fp8_e3m4_to_f32, f32_to_fp8_e3m4),
        ] {
            for code in 0..=255u8 {
                let v = dec(code);
                if v.is_nan() {
                    assert_eq!(enc(v) & 0x7F, 0x7F);
                } else {
                    assert_eq!(enc(v), code, "code {code:#x} value {v}");
                }
            }
        }
    }
}
