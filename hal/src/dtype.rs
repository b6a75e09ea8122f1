//! Storage data types.
//!
//! One enum serves the public API (`nrt_dtype_t`, docs/c-api.md §3.2), the NEFF
//! manifests (`neff.json` `dltype`, engine-JSON `from_dtype`/`to_dtype`, docs/neff.md §5 and §8.2) and the
//! instruction encoding's access patterns (5-bit dtype field, see [`crate::isa`]). The numeric
//! value of each variant is its `nrt_dtype_t` code, so the three never need a translation table.

use core::fmt;

/// A tensor element type. Discriminants are the `nrt_dtype_t` values of `nrt.h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Dtype {
    /// 64-bit unsigned integer (`NRT_DTYPE_UINT64` = 1).
    U64 = 1,
    /// 8-bit signed integer (2).
    I8 = 2,
    /// 8-bit unsigned integer (3); also NKI `bool`.
    U8 = 3,
    /// 16-bit signed integer (4).
    I16 = 4,
    /// 16-bit unsigned integer (5).
    U16 = 5,
    /// bfloat16 (6).
    Bf16 = 6,
    /// IEEE binary16 (7).
    F16 = 7,
    /// 32-bit signed integer (8).
    I32 = 8,
    /// 32-bit unsigned integer (9).
    U32 = 9,
    /// IEEE binary32 (0xA).
    F32 = 0xA,
    /// fp32 "round" variant (`FP32R`, 0xB); stored as binary32.
    F32r = 0xB,
    /// 64-bit signed integer (0xC).
    I64 = 0xC,
    /// fp8 with 3 exponent bits, e3m4 (0xD).
    Fp8E3 = 0xD,
    /// fp8 e4m3 (0xE), the NKI `float8_e4m3`.
    Fp8E4 = 0xE,
    /// fp8 e5m2 (0xF), the NKI `float8_e5m2`.
    Fp8E5 = 0xF,
}

impl Dtype {
    /// Every dtype, in code order.
    pub const ALL: [Dtype; 15] = [
        Dtype::U64,
        Dtype::I8,
        Dtype::U8,
        Dtype::I16,
        Dtype::U16,
        Dtype::Bf16,
        Dtype::F16,
        Dtype::I32,
        Dtype::U32,
        Dtype::F32,
        Dtype::F32r,
        Dtype::I64,
        Dtype::Fp8E3,
        Dtype::Fp8E4,
        Dtype::Fp8E5,
    ];

    /// The `nrt_dtype_t` code.
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The dtype with `nrt_dtype_t` code `code`.
    pub fn from_code(code: u8) -> Option<Dtype> {
        Self::ALL.into_iter().find(|d| d.code() == code)
    }

    /// Bytes per element.
    pub const fn size(self) -> usize {
        match self {
            Dtype::I8 | Dtype::U8 | Dtype::Fp8E3 | Dtype::Fp8E4 | Dtype::Fp8E5 => 1,
            Dtype::I16 | Dtype::U16 | Dtype::Bf16 | Dtype::F16 => 2,
            Dtype::I32 | Dtype::U32 | Dtype::F32 | Dtype::F32r => 4,
            Dtype::U64 | Dtype::I64 => 8,
        }
    }

    /// Whether the type is a floating-point format.
    pub const fn is_float(self) -> bool {
        matches!(
            self,
            Dtype::Bf16
                | Dtype::F16
                | Dtype::F32
                | Dtype::F32r
                | Dtype::Fp8E3
                | Dtype::Fp8E4
                | Dtype::Fp8E5
        )
    }

    /// The numpy `descr` a tensor of this type is exchanged as in `.npy` files
    /// (little-endian; `|` for one-byte types). bfloat16 and the fp8 formats have no numpy type:
    /// they travel as unsigned integers of their width, i.e. their bit patterns.
    pub const fn npy_descr(self) -> &'static str {
        match self {
            Dtype::F32 | Dtype::F32r => "<f4",
            Dtype::F16 => "<f2",
            Dtype::Bf16 | Dtype::U16 => "<u2",
            Dtype::I16 => "<i2",
            Dtype::I32 => "<i4",
            Dtype::U32 => "<u4",
            Dtype::I64 => "<i8",
            Dtype::U64 => "<u8",
            Dtype::I8 => "|i1",
            Dtype::U8 | Dtype::Fp8E3 | Dtype::Fp8E4 | Dtype::Fp8E5 => "|u1",
        }
    }

    /// The name used in NEFF manifests: `neff.json` `dltype` and the engine-JSON DMA
    /// `from_dtype`/`to_dtype` (docs/neff.md §8.2: float8e3/e4/e5, float16, float32, float32r,
    /// bfloat16, (u)int8/16/32/64).
    pub const fn neff_name(self) -> &'static str {
        match self {
            Dtype::U64 => "uint64",
            Dtype::I8 => "int8",
            Dtype::U8 => "uint8",
            Dtype::I16 => "int16",
            Dtype::U16 => "uint16",
            Dtype::Bf16 => "bfloat16",
            Dtype::F16 => "float16",
            Dtype::I32 => "int32",
            Dtype::U32 => "uint32",
            Dtype::F32 => "float32",
            Dtype::F32r => "float32r",
            Dtype::I64 => "int64",
            Dtype::Fp8E3 => "float8e3",
            Dtype::Fp8E4 => "float8e4",
            Dtype::Fp8E5 => "float8e5",
        }
    }

    /// Parses a manifest dtype name. Accepts the NEFF spellings and the NKI/numpy-style aliases
    /// (`float8_e4m3`, `float8_e5m2`, `bf16`, `fp32`, `fp16`, `bool`).
    pub fn from_neff_name(name: &str) -> Option<Dtype> {
        if let Some(d) = Self::ALL.into_iter().find(|d| d.neff_name() == name) {
            return Some(d);
        }
        Some(match name {
            "float8_e3m4" => Dtype::Fp8E3,
            "float8_e4m3" | "float8_e4m3fn" => Dtype::Fp8E4,
            "float8_e5m2" => Dtype::Fp8E5,
            "bf16" => Dtype::Bf16,
            "fp16" | "half" => Dtype::F16,
            "fp32" | "float" => Dtype::F32,
            "bool" => Dtype::U8,
            _ => return None,
        })
    }

    /// Short name for disassembly and traces.
    pub const fn short_name(self) -> &'static str {
        match self {
            Dtype::U64 => "u64",
            Dtype::I8 => "i8",
            Dtype::U8 => "u8",
            Dtype::I16 => "i16",
            Dtype::U16 => "u16",
            Dtype::Bf16 => "bf16",
            Dtype::F16 => "f16",
            Dtype::I32 => "i32",
            Dtype::U32 => "u32",
            Dtype::F32 => "f32",
            Dtype::F32r => "f32r",
            Dtype::I64 => "i64",
            Dtype::Fp8E3 => "fp8e3",
            Dtype::Fp8E4 => "fp8e4",
            Dtype::Fp8E5 => "fp8e5",
        }
    }

    /// Parses a [`Dtype::short_name`].
    pub fn from_short_name(name: &str) -> Option<Dtype> {
        Self::ALL.into_iter().find(|d| d.short_name() == name)
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.short_name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_nrt_dtype_values() {
        // nrt.h nrt_dtype_t, docs/c-api.md §3.2.
        assert_eq!(Dtype::U64.code(), 1);
        assert_eq!(Dtype::Bf16.code(), 6);
        assert_eq!(Dtype::F16.code(), 7);
        assert_eq!(Dtype::F32.code(), 0xA);
        assert_eq!(Dtype::Fp8E5.code(), 0xF);
        for d in Dtype::ALL {
            assert_eq!(Dtype::from_code(d.code()), Some(d));
            assert_eq!(Dtype::from_neff_name(d.neff_name()), Some(d));
            assert_eq!(Dtype::from_short_name(d.short_name()), Some(d));
        }
        assert_eq!(Dtype::from_code(0), None);
        assert_eq!(Dtype::from_code(16), None);
    }

    #[test]
    fn sizes() {
        assert_eq!(Dtype::F32.size(), 4);
        assert_eq!(Dtype::Bf16.size(), 2);
        assert_eq!(Dtype::Fp8E4.size(), 1);
        assert_eq!(Dtype::I64.size(), 8);
        assert_eq!(Dtype::from_neff_name("float8_e4m3"), Some(Dtype::Fp8E4));
        assert_eq!(Dtype::from_neff_name("complex64"), None);
    }
}
