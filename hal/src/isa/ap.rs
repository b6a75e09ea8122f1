//! Access patterns: how an instruction names a tile of SBUF or PSUM.
//!
//! An access pattern (AP) selects a contiguous range of partitions and, inside every selected
//! partition, the same free-dimension pattern of up to four `[step, count]` pairs (NKI style,
//! docs/isa.md §2.3 "access rules"). Steps are in *elements*, so a step of 1 on a
//! bf16 tile advances 2 bytes.
//!
//! # Encoding
//!
//! The *AP word* (u32, little-endian):
//!
//! | bits | field |
//! |---|---|
//! | 0..=17 | byte offset within each partition (0..=0x3FFFF; SBUF partitions are ≤ 224 KiB, PSUM 16 KiB) |
//! | 18..=19 | memory space: 0 SBUF, 1 PSUM; 2 and 3 are invalid |
//! | 20..=24 | dtype: the `nrt_dtype_t` code of [`Dtype`] (1..=15; 0 and 16..=31 invalid) |
//! | 25..=31 | start partition (0..=127) |
//!
//! A full AP is 22 bytes:
//!
//! | bytes | field |
//! |---|---|
//! | 0..4 | AP word |
//! | 4 | partition count, 1..=128; `start + count` must be ≤ 128 |
//! | 5 | number of free dimensions `ndims`, 1..=4 |
//! | 6..22 | 4 × `{ i16 step (elements), u16 count }`, outermost dimension first |
//!
//! Every used dimension has `count ≥ 1`. Dimensions `ndims..4` are unused and must be encoded as
//! step 0, count 1; the decoder rejects anything else, so every pattern has exactly one
//! encoding.
//!
//! A *short operand* ([`ShortOperand`], 4 bytes) is the AP word alone. It names the start of
//! a second operand that borrows its shape from the instruction's main operand: its own start
//! partition, the main operand's partition *count*, and — for `tensor_tensor`'s `in1` — the
//! main operand's free pattern ([`ShortOperand::with_shape_of`]), or — for `[P, 1]` vectors
//! (activation bias/scale, `tensor_scalar` operands) — one element per partition
//! ([`ShortOperand::as_vector`]).
//!
//! # Element order
//!
//! Dimensions are listed outermost first, like NKI's `[[step, num], …]`: the *last* pair is the
//! innermost and varies fastest. Element `(i0, i1, …)` of a partition sits at byte
//! `offset + size_of(dtype) · Σ stepₖ · iₖ` of that partition. [`AccessPattern::element_offsets`]
//! yields those byte offsets in this row-major order; every engine reads and writes tiles in it,
//! so two operands with equal element counts correspond element by element.

use core::fmt;
use core::ops::Range;

use crate::dtype::Dtype;

use super::ops::MemSpace;

/// Number of partitions of SBUF and PSUM.
pub const PARTITIONS: u32 = 128;

/// Why an access pattern (or short operand, or iota pattern) is not valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ApError {
    /// The byte offset does not fit in 18 bits.
    #[error("byte offset {0:#x} does not fit the 18-bit offset field (max 0x3ffff)")]
    OffsetTooLarge(u32),
    /// Memory-space code 2 or 3.
    #[error("memory space code {0} is invalid (0 = SBUF, 1 = PSUM)")]
    BadMemSpace(u8),
    /// The 5-bit dtype field is not an `nrt_dtype_t` code.
    #[error("dtype code {0} is not an nrt_dtype_t value (1..=15)")]
    BadDtype(u8),
    /// Start partition above 127.
    #[error("start partition {0} is out of range (0..=127)")]
    BadStartPartition(u32),
    /// Partition count 0 or above 128.
    #[error("partition count {0} is out of range (1..=128)")]
    BadPartitionCount(u32),
    /// The selected partitions run past partition 127.
    #[error("partitions {start}..{end} run past the {PARTITIONS} partitions", end = *start + *count)]
    PartitionOverflow {
        /// First partition.
        start: u32,
        /// Number of partitions.
        count: u32,
    },
    /// `ndims` is 0 or above 4.
    #[error("{0} free dimensions (must be 1..=4)")]
    BadNdims(usize),
    /// A used dimension has count 0.
    #[error("free dimension {dim} has count 0")]
    ZeroCount {
        /// Index of the dimension (0 = outermost).
        dim: usize,
    },
    /// An unused dimension is not encoded as `[0, 1]`.
    #[error("unused free dimension {dim} is [{step},{count}]; it must be encoded as [0,1]")]
    NonCanonicalUnusedDim {
        /// Index of the dimension.
        dim: usize,
        /// Encoded step.
        step: i32,
        /// Encoded count.
        count: u16,
    },
    /// The pattern reaches outside its partition.
    #[error(
        "the pattern touches bytes {lo}..{hi} of each partition, outside 0..{partition_bytes}"
    )]
    OutOfPartition {
        /// Lowest byte touched.
        lo: i64,
        /// One past the highest byte touched.
        hi: i64,
        /// Partition size checked against.
        partition_bytes: u32,
    },
}

/// The 4-byte AP word: memory space, dtype, start partition and byte offset, without a shape.
/// Used alone as a short operand.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ShortOperand {
    space: MemSpace,
    start_partition: u8,
    offset: u32,
    dtype: Dtype,
}

impl ShortOperand {
    /// Largest encodable byte offset (18 bits).
    pub const MAX_OFFSET: u32 = (1 << 18) - 1;

    /// A short operand starting at `offset` bytes into partition `start_partition`.
    pub fn new(
        space: MemSpace,
        start_partition: u32,
        offset: u32,
        dtype: Dtype,
    ) -> Result<Self, ApError> {
        if offset > Self::MAX_OFFSET {
            return Err(ApError::OffsetTooLarge(offset));
        }
        if start_partition >= PARTITIONS {
            return Err(ApError::BadStartPartition(start_partition));
        }
        Ok(ShortOperand {
            space,
            start_partition: start_partition as u8,
            offset,
            dtype,
        })
    }

    /// [`ShortOperand::new`] in SBUF.
    pub fn sbuf(start_partition: u32, offset: u32, dtype: Dtype) -> Result<Self, ApError> {
        Self::new(MemSpace::Sbuf, start_partition, offset, dtype)
    }

    /// [`ShortOperand::new`] in PSUM.
    pub fn psum(start_partition: u32, offset: u32, dtype: Dtype) -> Result<Self, ApError> {
        Self::new(MemSpace::Psum, start_partition, offset, dtype)
    }

    /// The memory addressed.
    pub const fn space(&self) -> MemSpace {
        self.space
    }

    /// First partition.
    pub const fn start_partition(&self) -> u32 {
        self.start_partition as u32
    }

    /// Byte offset within each partition.
    pub const fn offset(&self) -> u32 {
        self.offset
    }

    /// Element type.
    pub const fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// The encoded AP word.
    pub const fn to_word(&self) -> u32 {
        self.offset
            | (self.space.code() as u32) << 18
            | (self.dtype.code() as u32) << 20
            | (self.start_partition as u32) << 25
    }

    /// Decodes an AP word.
    pub fn from_word(word: u32) -> Result<Self, ApError> {
        let space_code = ((word >> 18) & 0x3) as u8;
        let space = MemSpace::from_code(space_code).ok_or(ApError::BadMemSpace(space_code))?;
        let dtype_code = ((word >> 20) & 0x1F) as u8;
        let dtype = Dtype::from_code(dtype_code).ok_or(ApError::BadDtype(dtype_code))?;
        Ok(ShortOperand {
            space,
            start_partition: (word >> 25) as u8,
            offset: word & Self::MAX_OFFSET,
            dtype,
        })
    }

    /// The full pattern of `tensor_tensor`'s `in1`: this operand's space, start, offset and
    /// dtype with `main`'s partition count and free pattern (steps stay in elements).
    pub fn with_shape_of(&self, main: &AccessPattern) -> Result<AccessPattern, ApError> {
        AccessPattern::new(*self, main.partitions(), main.dims())
    }

    /// The `[partitions, 1]` vector this operand names: one element per partition at the
    /// operand's offset.
    pub fn as_vector(&self, partitions: u32) -> Result<AccessPattern, ApError> {
        AccessPattern::new(*self, partitions, &[Dim::new(1, 1)])
    }
}

/// One free dimension of an access pattern: `count` elements `step` elements apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dim {
    /// Distance between consecutive indices, in elements (may be negative or zero).
    pub step: i16,
    /// Number of indices, ≥ 1 for a used dimension.
    pub count: u16,
}

impl Dim {
    /// The encoding of an unused dimension.
    pub const UNUSED: Dim = Dim { step: 0, count: 1 };

    /// A dimension of `count` elements `step` apart.
    pub const fn new(step: i16, count: u16) -> Self {
        Dim { step, count }
    }
}

/// A validated access pattern: partitions `start..start + partitions` of SBUF or PSUM, the
/// same free pattern in each. See the [module docs](self) for the encoding and element order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AccessPattern {
    base: ShortOperand,
    partitions: u8,
    ndims: u8,
    dims: [Dim; 4],
}

impl AccessPattern {
    /// Encoded size in bytes.
    pub const ENCODED_LEN: usize = 22;
    /// Maximum number of free dimensions.
    pub const MAX_DIMS: usize = 4;

    /// An access pattern of `partitions` partitions from `base`'s start partition, with the
    /// free pattern `dims` (outermost first).
    pub fn new(base: ShortOperand, partitions: u32, dims: &[Dim]) -> Result<Self, ApError> {
        if partitions == 0 || partitions > PARTITIONS {
            return Err(ApError::BadPartitionCount(partitions));
        }
        let start = base.start_partition();
        if start + partitions > PARTITIONS {
            return Err(ApError::PartitionOverflow {
                start,
                count: partitions,
            });
        }
        if dims.is_empty() || dims.len() > Self::MAX_DIMS {
            return Err(ApError::BadNdims(dims.len()));
        }
        if let Some(dim) = dims.iter().position(|d| d.count == 0) {
            return Err(ApError::ZeroCount { dim });
        }
        let mut all = [Dim::UNUSED; 4];
        all[..dims.len()].copy_from_slice(dims);
        Ok(AccessPattern {
            base,
            partitions: partitions as u8,
            ndims: dims.len() as u8,
            dims: all,
        })
    }

    /// `partitions` partitions of `n` consecutive elements each (`[[1, n]]`).
    pub fn contiguous(base: ShortOperand, partitions: u32, n: u16) -> Result<Self, ApError> {
        Self::new(base, partitions, &[Dim::new(1, n)])
    }

    /// The same pattern with different free dimensions.
    pub fn with_dims(&self, dims: &[Dim]) -> Result<Self, ApError> {
        Self::new(self.base, self.partitions(), dims)
    }

    /// The AP word part: space, start partition, offset, dtype.
    pub const fn base(&self) -> ShortOperand {
        self.base
    }

    /// The memory addressed.
    pub const fn space(&self) -> MemSpace {
        self.base.space
    }

    /// Element type.
    pub const fn dtype(&self) -> Dtype {
        self.base.dtype
    }

    /// Byte offset of element 0 within each partition.
    pub const fn offset(&self) -> u32 {
        self.base.offset
    }

    /// First partition.
    pub const fn start_partition(&self) -> u32 {
        self.base.start_partition as u32
    }

    /// Number of partitions.
    pub const fn partitions(&self) -> u32 {
        self.partitions as u32
    }

    /// The selected partitions.
    pub const fn partition_range(&self) -> Range<u32> {
        self.start_partition()..self.start_partition() + self.partitions()
    }

    /// The used free dimensions, outermost first.
    pub fn dims(&self) -> &[Dim] {
        &self.dims[..self.ndims as usize]
    }

    /// Elements per partition: the product of the counts.
    pub fn elements_per_partition(&self) -> u64 {
        self.dims().iter().map(|d| u64::from(d.count)).product()
    }

    /// Elements over all partitions.
    pub fn total_elements(&self) -> u64 {
        self.elements_per_partition() * u64::from(self.partitions)
    }

    /// Bytes touched in each partition, as a half-open range `lo..hi` relative to the
    /// partition's start (`lo` can be negative for a malformed pattern; see
    /// [`Self::check_bounds`]).
    pub fn byte_extent(&self) -> Range<i64> {
        let size = self.dtype().size() as i64;
        let (mut lo, mut hi) = (0i64, 0i64);
        for d in self.dims() {
            let reach = i64::from(d.step) * (i64::from(d.count) - 1);
            if reach < 0 {
                lo += reach;
            } else {
                hi += reach;
            }
        }
        let base = i64::from(self.offset());
        base + lo * size..base + hi * size + size
    }

    /// Bytes spanned in each partition, from the lowest byte touched to the highest.
    pub fn bytes_spanned(&self) -> u64 {
        let r = self.byte_extent();
        (r.end - r.start) as u64
    }

    /// Checks the pattern stays inside a partition of `partition_bytes` bytes (for example
    /// [`MemSpace::PSUM_PARTITION_BYTES`] or the target's SBUF partition size). After this
    /// succeeds every offset [`Self::element_offsets`] yields is in
    /// `0..=partition_bytes - dtype size`.
    pub fn check_bounds(&self, partition_bytes: u32) -> Result<(), ApError> {
        let r = self.byte_extent();
        if r.start < 0 || r.end > i64::from(partition_bytes) {
            return Err(ApError::OutOfPartition {
                lo: r.start,
                hi: r.end,
                partition_bytes,
            });
        }
        Ok(())
    }

    /// Byte offsets within each partition of every element, in element order (last
    /// dimension innermost).
    pub fn element_offsets(&self) -> ElementOffsets {
        ElementOffsets {
            dims: self.dims,
            ndims: self.ndims as usize,
            size: self.dtype().size() as i64,
            index: [0; 4],
            next: Some(i64::from(self.offset())),
            remaining: self.elements_per_partition(),
        }
    }

    /// The 22-byte encoding.
    pub fn encode(&self) -> [u8; 22] {
        let mut b = [0u8; 22];
        b[0..4].copy_from_slice(&self.base.to_word().to_le_bytes());
        b[4] = self.partitions;
        b[5] = self.ndims;
        for (i, d) in self.dims.iter().enumerate() {
            let at = 6 + 4 * i;
            b[at..at + 2].copy_from_slice(&d.step.to_le_bytes());
            b[at + 2..at + 4].copy_from_slice(&d.count.to_le_bytes());
        }
        b
    }

    /// Decodes 22 bytes, rejecting every non-canonical encoding.
    pub fn decode(b: &[u8; 22]) -> Result<Self, ApError> {
        let base = ShortOperand::from_word(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))?;
        let ndims = b[5] as usize;
        if ndims == 0 || ndims > Self::MAX_DIMS {
            return Err(ApError::BadNdims(ndims));
        }
        let mut dims = [Dim::UNUSED; 4];
        for (i, d) in dims.iter_mut().enumerate() {
            let at = 6 + 4 * i;
            *d = Dim::new(
                i16::from_le_bytes([b[at], b[at + 1]]),
                u16::from_le_bytes([b[at + 2], b[at + 3]]),
            );
            if i >= ndims && *d != Dim::UNUSED {
                return Err(ApError::NonCanonicalUnusedDim {
                    dim: i,
                    step: i32::from(d.step),
                    count: d.count,
                });
            }
        }
        Self::new(base, u32::from(b[4]), &dims[..ndims])
    }
}

/// Iterator over the byte offsets of an access pattern's elements within one partition; see
/// [`AccessPattern::element_offsets`].
#[derive(Debug, Clone)]
pub struct ElementOffsets {
    dims: [Dim; 4],
    ndims: usize,
    size: i64,
    index: [u16; 4],
    next: Option<i64>,
    remaining: u64,
}

impl Iterator for ElementOffsets {
    type Item = i64;

    fn next(&mut self) -> Option<i64> {
        let current = self.next?;
        self.remaining -= 1;
        // Advance the odometer: the last dimension is innermost.
        let mut following = None;
        let mut off = current;
        for k in (0..self.ndims).rev() {
            let d = self.dims[k];
            let step = i64::from(d.step) * self.size;
            if self.index[k] + 1 < d.count {
                self.index[k] += 1;
                following = Some(off + step);
                break;
            }
            off -= step * (i64::from(d.count) - 1);
            self.index[k] = 0;
        }
        self.next = following;
        Some(current)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match usize::try_from(self.remaining) {
            Ok(n) => (n, Some(n)),
            Err(_) => (usize::MAX, None),
        }
    }
}

/// One dimension of an iota value pattern: `count` indices whose value advances by `step`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IotaDim {
    /// Value increment per index.
    pub step: i32,
    /// Number of indices, ≥ 1.
    pub count: u16,
}

impl IotaDim {
    /// The encoding of an unused dimension.
    pub const UNUSED: IotaDim = IotaDim { step: 0, count: 1 };

    /// A dimension of `count` indices, value step `step`.
    pub const fn new(step: i32, count: u16) -> Self {
        IotaDim { step, count }
    }
}

/// The value pattern of `iota` (docs/isa.md §3): 1..=4 `[step, count]` pairs, outermost
/// first. Element `(i0, …)` of partition `p` gets the int32 value
/// `offset + channel_multiplier·p + Σ stepₖ·iₖ` (wrapping), then is cast to the output dtype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IotaPattern {
    ndims: u8,
    dims: [IotaDim; 4],
}

impl IotaPattern {
    /// A value pattern of 1..=4 dimensions, each with count ≥ 1.
    pub fn new(dims: &[IotaDim]) -> Result<Self, ApError> {
        if dims.is_empty() || dims.len() > 4 {
            return Err(ApError::BadNdims(dims.len()));
        }
        if let Some(dim) = dims.iter().position(|d| d.count == 0) {
            return Err(ApError::ZeroCount { dim });
        }
        let mut all = [IotaDim::UNUSED; 4];
        all[..dims.len()].copy_from_slice(dims);
        Ok(IotaPattern {
            ndims: dims.len() as u8,
            dims: all,
        })
    }

    /// The used dimensions, outermost first.
    pub fn dims(&self) -> &[IotaDim] {
        &self.dims[..self.ndims as usize]
    }

    /// Number of values per partition (product of the counts).
    pub fn elements(&self) -> u64 {
        self.dims().iter().map(|d| u64::from(d.count)).product()
    }

    /// The int32 values for one partition, in element order, where
    /// `base = offset + channel_multiplier · partition` (wrapping).
    pub fn values(&self, base: i32) -> impl Iterator<Item = i32> + '_ {
        let n = self.elements();
        (0..n).map(move |mut linear| {
            let mut v = base;
            for d in self.dims().iter().rev() {
                let count = u64::from(d.count);
                let i = (linear % count) as i32;
                linear /= count;
                v = v.wrapping_add(d.step.wrapping_mul(i));
            }
            v
        })
    }
}

impl fmt::Display for ShortOperand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}[p{} +{:#x} {}]",
            self.space, self.start_partition, self.offset, self.dtype
        )
    }
}

impl fmt::Display for AccessPattern {
    /// `sbuf[p0:128 +0x200 bf16 [1,512]]`: space, partitions `start:end` (end exclusive), byte
    /// offset, dtype, then each `[step,count]` pair outermost first.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = self.partition_range();
        write!(
            f,
            "{}[p{}:{} +{:#x} {} ",
            self.space(),
            p.start,
            p.end,
            self.offset(),
            self.dtype()
        )?;
        for d in self.dims() {
            write!(f, "[{},{}]", d.step, d.count)?;
        }
        f.write_str("]")
    }
}

impl fmt::Display for IotaPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in self.dims() {
            write!(f, "[{},{}]", d.step, d.count)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ap(dtype: Dtype, offset: u32, dims: &[Dim]) -> AccessPattern {
        AccessPattern::new(ShortOperand::sbuf(0, offset, dtype).unwrap(), 4, dims).unwrap()
    }

    #[test]
    fn offsets_are_row_major_last_dim_innermost() {
        let a = ap(Dtype::Bf16, 0x10, &[Dim::new(8, 2), Dim::new(1, 3)]);
        let got: Vec<_> = a.element_offsets().collect();
        assert_eq!(got, [0x10, 0x12, 0x14, 0x20, 0x22, 0x24]);
        assert_eq!(a.elements_per_partition(), 6);
        assert_eq!(a.total_elements(), 24);
        assert_eq!(a.byte_extent(), 0x10..0x26);
    }

    #[test]
    fn negative_steps_extend_below_offset() {
        let a = ap(Dtype::F32, 16, &[Dim::new(-1, 3)]);
        assert_eq!(a.element_offsets().collect::<Vec<_>>(), [16, 12, 8]);
        assert_eq!(a.byte_extent(), 8..20);
        assert_eq!(a.bytes_spanned(), 12);
        assert!(a.check_bounds(20).is_ok());
        assert!(a.check_bounds(19).is_err());
        let below = ap(Dtype::F32, 4, &[Dim::new(-1, 3)]);
        assert_eq!(
            below.check_bounds(1024),
            Err(ApError::OutOfPartition {
                lo: -4,
                hi: 8,
                partition_bytes: 1024
            })
        );
    }

    #[test]
    fn iota_values() {
        let p = IotaPattern::new(&[IotaDim::new(10, 2), IotaDim::new(1, 3)]).unwrap();
        assert_eq!(
            p.values(100).collect::<Vec<_>>(),
            [100, 101, 102, 110, 111, 112]
        );
    }

    #[test]
    fn word_layout() {
        let s = ShortOperand::psum(5, 0x123, Dtype::F32).unwrap();
        assert_eq!(s.to_word(), 0x123 | 1 << 18 | 0xA << 20 | 5 << 25);
        assert_eq!(ShortOperand::from_word(s.to_word()), Ok(s));
    }
}

/// A `tensor_scalar` operand or an activation `scale`: an f32 immediate, or a `[P, 1]` vector
/// in SBUF/PSUM (one value per partition, partition count taken from the main operand).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScalarOperand {
    /// The same value for every element.
    Imm(f32),
    /// One value per partition, read at the operand's offset in each partition.
    Vector(ShortOperand),
}

impl ScalarOperand {
    /// Whether this is a vector operand.
    pub const fn is_vector(&self) -> bool {
        matches!(self, ScalarOperand::Vector(_))
    }
}
