//! The `.npy` constants (docs/neff.md §10): the checked reader (byte-swapping big-endian and
//! reordering Fortran-order files), the in-place range of plain data, and the platform's one
//! `.npy` writer.

use nrt_hal::Dtype;

use super::json::MAX_BYTES;
use crate::error::{Error, Result};

/// A decoded `.npy` constant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NpyConstant {
    /// The numpy type string (`<f2`, `|i1` …).
    pub descr: String,
    /// Shape.
    pub shape: Vec<u64>,
    /// Element bytes, little-endian, in C (row-major) order.
    pub data: Vec<u8>,
}

/// Finds `'shape': (…)` in an npy header and checks that its element count cannot overflow
/// (npyz multiplies the dims unchecked).
fn npy_shape_precheck(bytes: &[u8]) -> std::result::Result<(), String> {
    // Magic (6) + version (2) + header length (2 for v1, 4 for v2/v3).
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err("not an npy file (bad magic)".into());
    }
    let (len, start) = match bytes[6] {
        1 => (
            usize::from(u16::from_le_bytes([bytes[8], bytes[9]])),
            10usize,
        ),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(format!("unsupported npy version {v}")),
    };
    let header = bytes
        .get(start..start.saturating_add(len))
        .ok_or("truncated npy header")?;
    let text = String::from_utf8_lossy(header);
    let Some(at) = text.find("'shape'") else {
        return Ok(()); // let npyz report it
    };
    let rest = &text[at..];
    let (Some(open), Some(close)) = (rest.find('('), rest.find(')')) else {
        return Ok(());
    };
    if close < open {
        return Ok(());
    }
    let mut count: u128 = 1;
    for part in rest[open + 1..close].split(',') {
        let p = part.trim();
        if p.is_empty() {
            continue;
        }
        let d: u128 = p
            .trim_end_matches('L')
            .parse()
            .map_err(|_| format!("bad shape dimension {p:?}"))?;
        count = count.saturating_mul(d);
        if count > u128::from(MAX_BYTES) {
            return Err(format!(
                "shape {} has too many elements",
                &rest[open..=close]
            ));
        }
    }
    Ok(())
}

/// A checked `.npy` file: its element type and header, and the element bytes as stored.
struct NpyParts<'a> {
    ty: npyz::TypeStr,
    item: usize,
    shape: Vec<u64>,
    order: npyz::Order,
    data: &'a [u8],
}

impl NpyParts<'_> {
    /// Whether the stored bytes already are little-endian elements in C order.
    fn is_plain(&self) -> bool {
        (self.ty.endianness() != npyz::Endianness::Big || self.item == 1)
            && (self.order != npyz::Order::Fortran || self.shape.len() <= 1)
    }
}

fn npy_parts<'a>(file: &str, bytes: &'a [u8]) -> Result<NpyParts<'a>> {
    let bad = |what: String| Error::invalid(format!("{file}: {what}"));
    npy_shape_precheck(bytes).map_err(bad)?;
    let mut rest = bytes;
    let header =
        npyz::NpyHeader::from_reader(&mut rest).map_err(|e| bad(format!("bad npy header: {e}")))?;
    let ty = match header.dtype() {
        npyz::DType::Plain(t) => t,
        other => return Err(bad(format!("unsupported npy dtype {}", other.descr()))),
    };
    let item = ty
        .num_bytes()
        .filter(|&n| n > 0)
        .ok_or_else(|| bad(format!("unsupported npy dtype {ty}")))?;
    let shape = header.shape().to_vec();
    let count = shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| bad("npy element count overflows".into()))?;
    let nbytes = count
        .checked_mul(item as u64)
        .filter(|&n| n <= MAX_BYTES)
        .ok_or_else(|| {
            bad(format!(
                "npy data of shape {shape:?} exceeds {MAX_BYTES} bytes"
            ))
        })?;
    let nbytes = usize::try_from(nbytes).map_err(|_| bad("npy data too large".into()))?;
    if rest.len() < nbytes {
        return Err(bad(format!(
            "npy data is {} bytes, shape {shape:?} × {item} bytes needs {nbytes}",
            rest.len()
        )));
    }
    Ok(NpyParts {
        order: header.order(),
        ty,
        item,
        shape,
        data: &rest[..nbytes],
    })
}

/// Decodes a `.npy` file (`file` names it in error messages): the element bytes,
/// little-endian, in C order. Big-endian files are byte-swapped and Fortran-order files
/// reordered; structured dtypes are rejected.
pub fn parse_npy(file: &str, bytes: &[u8]) -> Result<NpyConstant> {
    let p = npy_parts(file, bytes)?;
    let mut data = p.data.to_vec();
    if p.ty.endianness() == npyz::Endianness::Big && p.item > 1 {
        for e in data.chunks_exact_mut(p.item) {
            e.reverse();
        }
    }
    if p.order == npyz::Order::Fortran && p.shape.len() > 1 {
        data = fortran_to_c(&data, &p.shape, p.item);
    }
    Ok(NpyConstant {
        descr: p.ty.to_string(),
        shape: p.shape,
        data,
    })
}

/// Where in `bytes` the elements [`parse_npy`] would decode lie, when they need no conversion
/// (little-endian, C order: the common case, and a large constant's): `Some(range)`, so the
/// caller can use the stored bytes in place. `None` when [`parse_npy`] must convert them. Same
/// checks, same errors as [`parse_npy`].
pub fn npy_data_range(file: &str, bytes: &[u8]) -> Result<Option<std::ops::Range<usize>>> {
    let p = npy_parts(file, bytes)?;
    if !p.is_plain() {
        return Ok(None);
    }
    // `p.data` is a subslice of `bytes`.
    let start = p.data.as_ptr() as usize - bytes.as_ptr() as usize;
    Ok(Some(start..start + p.data.len()))
}

/// A `.npy` file (npyz's writer) holding `data` — little-endian elements of `dtype`, C order —
/// with `shape`, typed as [`Dtype::npy_descr`] says. The one `.npy` writer of the platform: the
/// zoo's constants and `nrt-emu run --output-dir` use it, [`parse_npy`] reads it back. `data`
/// must hold exactly the elements `shape` counts.
pub fn npy_bytes(dtype: Dtype, shape: &[u64], data: &[u8]) -> Result<Vec<u8>> {
    use npyz::WriterBuilder;
    fn write<T: npyz::AutoSerialize>(
        shape: &[u64],
        data: &[u8],
        elem: impl Fn(&[u8]) -> T,
    ) -> std::io::Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut w = npyz::WriteOptions::new()
            .default_dtype()
            .shape(shape)
            .writer(&mut out)
            .begin_nd()?;
        for c in data.chunks_exact(std::mem::size_of::<T>()) {
            w.push(&elem(c))?;
        }
        w.finish()?;
        Ok(out)
    }
    let arr = |c: &[u8]| -> [u8; 8] {
        let mut b = [0u8; 8];
        b[..c.len()].copy_from_slice(c);
        b
    };
    let count = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    if count.and_then(|n| n.checked_mul(dtype.size() as u64)) != Some(data.len() as u64) {
        return Err(Error::invalid(format!(
            "npy: {} bytes of {dtype} do not fill shape {shape:?}",
            data.len()
        )));
    }
    let r = match dtype {
        Dtype::F32 | Dtype::F32r => write(shape, data, |c| {
            f32::from_le_bytes(arr(c)[..4].try_into().expect("4 bytes"))
        }),
        Dtype::F16 => write(shape, data, |c| half::f16::from_le_bytes([c[0], c[1]])),
        Dtype::Bf16 | Dtype::U16 => write(shape, data, |c| u16::from_le_bytes([c[0], c[1]])),
        Dtype::I16 => write(shape, data, |c| i16::from_le_bytes([c[0], c[1]])),
        Dtype::I32 => write(shape, data, |c| {
            i32::from_le_bytes(arr(c)[..4].try_into().expect("4 bytes"))
        }),
        Dtype::U32 => write(shape, data, |c| {
            u32::from_le_bytes(arr(c)[..4].try_into().expect("4 bytes"))
        }),
        Dtype::I64 => write(shape, data, |c| i64::from_le_bytes(arr(c))),
        Dtype::U64 => write(shape, data, |c| u64::from_le_bytes(arr(c))),
        Dtype::I8 => write(shape, data, |c| c[0] as i8),
        Dtype::U8 | Dtype::Fp8E3 | Dtype::Fp8E4 | Dtype::Fp8E5 => write(shape, data, |c| c[0]),
    };
    r.map_err(|e| Error::invalid(format!("npy: {e}")))
}

/// Reorders Fortran-order element bytes into C order. `data.len()` is exactly
/// `product(shape) × item`, so every index below is in range.
fn fortran_to_c(data: &[u8], shape: &[u64], item: usize) -> Vec<u8> {
    let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    let count = data.len() / item;
    let mut out = vec![0u8; data.len()];
    let mut idx = vec![0usize; dims.len()];
    for c in 0..count {
        // Fortran offset of the current C-order index.
        let mut f = 0usize;
        let mut stride = 1usize;
        for (i, &d) in dims.iter().enumerate() {
            f += idx[i] * stride;
            stride *= d;
        }
        out[c * item..(c + 1) * item].copy_from_slice(&data[f * item..(f + 1) * item]);
        for i in (0..dims.len()).rev() {
            idx[i] += 1;
            if idx[i] < dims[i] {
                break;
            }
            idx[i] = 0;
        }
    }
    out
}
