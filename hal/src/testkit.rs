//! Helpers for the tests and fixtures that build instructions, behind the `test-utils` feature
//! (as `nrt_sim::testkit` is): the operand builders every instruction test needs ([`ops`]) and
//! the proptest strategies the encoding, simulator and fuzz tests share ([`strategies`]). One
//! home, so a change of an operand's constructor or of its valid ranges is made once.
//!
//! The builders panic on operands outside the encoding's ranges: they are for literal operands
//! in tests and zoo programs, where such an operand is a bug in the test.

/// Operand builders: short operands and access patterns from literal fields.
pub mod ops {
    use crate::isa::{AccessPattern, Dim, MemSpace, ShortOperand};
    use crate::Dtype;

    /// The short operand at byte `offset` of partition `start` in `space`.
    pub fn short(space: MemSpace, start: u32, offset: u32, dtype: Dtype) -> ShortOperand {
        ShortOperand::new(space, start, offset, dtype)
            .unwrap_or_else(|e| panic!("short operand {space} p{start} +{offset:#x}: {e}"))
    }

    /// `parts` partitions from `start` of `space`, from byte `offset`, with the free dims
    /// `dims` (outermost first).
    pub fn ap(
        space: MemSpace,
        start: u32,
        parts: u32,
        offset: u32,
        dtype: Dtype,
        dims: &[Dim],
    ) -> AccessPattern {
        AccessPattern::new(short(space, start, offset, dtype), parts, dims).unwrap_or_else(|e| {
            panic!("access pattern {space} p{start}:{parts} +{offset:#x} {dims:?}: {e}")
        })
    }

    /// `n` contiguous elements in each of `parts` partitions from `start` of `space`.
    pub fn tile(
        space: MemSpace,
        start: u32,
        parts: u32,
        offset: u32,
        dtype: Dtype,
        n: u16,
    ) -> AccessPattern {
        ap(space, start, parts, offset, dtype, &[Dim::new(1, n)])
    }

    /// [`tile`] in SBUF.
    pub fn sbuf(start: u32, parts: u32, offset: u32, dtype: Dtype, n: u16) -> AccessPattern {
        tile(MemSpace::Sbuf, start, parts, offset, dtype, n)
    }

    /// [`tile`] in PSUM.
    pub fn psum(start: u32, parts: u32, offset: u32, dtype: Dtype, n: u16) -> AccessPattern {
        tile(MemSpace::Psum, start, parts, offset, dtype, n)
    }

    /// Free dims from `(step, count)` pairs, outermost first.
    pub fn dims(pairs: &[(i16, u16)]) -> Vec<Dim> {
        pairs.iter().map(|&(s, c)| Dim::new(s, c)).collect()
    }
}

/// Proptest strategies for the instruction model's fields, parameterised by the ranges each
/// test wants (the encoding tests want every value, the simulator tests operands that mostly
/// fit in on-chip memory).
pub mod strategies {
    use core::ops::RangeInclusive;

    use proptest::prelude::*;
    use proptest::sample::select;

    use crate::isa::{AccessPattern, AluOp, Dim, MemSpace, ScalarOperand, ShortOperand};
    use crate::Dtype;

    /// Every dtype.
    pub fn dtype() -> impl Strategy<Value = Dtype> {
        select(Dtype::ALL.to_vec())
    }

    /// SBUF or PSUM.
    pub fn space() -> impl Strategy<Value = MemSpace> {
        select(MemSpace::ALL)
    }

    /// Every ALU op.
    pub fn alu() -> impl Strategy<Value = AluOp> {
        select(AluOp::ALL)
    }

    /// Every f32 bit pattern, NaN payloads included.
    pub fn f32_bits() -> impl Strategy<Value = f32> {
        any::<u32>().prop_map(f32::from_bits)
    }

    /// Short operands in either memory, any start partition and dtype, byte offsets from
    /// `offsets`.
    pub fn short(offsets: RangeInclusive<u32>) -> impl Strategy<Value = ShortOperand> {
        (space(), 0u32..128, offsets, dtype()).prop_map(|(space, start, offset, dtype)| {
            ShortOperand::new(space, start, offset, dtype).expect("generated in range")
        })
    }

    /// Access patterns on a base from `base`, over 1 to all partitions left after its start,
    /// with 1 to 4 free dims of steps from `steps` and counts from `counts`.
    pub fn ap(
        base: impl Strategy<Value = ShortOperand>,
        steps: RangeInclusive<i16>,
        counts: RangeInclusive<u16>,
    ) -> impl Strategy<Value = AccessPattern> {
        base.prop_flat_map(move |base| {
            let max_parts = 128 - base.start_partition();
            (
                Just(base),
                1..=max_parts,
                prop::collection::vec((steps.clone(), counts.clone()), 1..=4),
            )
                .prop_map(|(base, parts, dims)| {
                    let dims: Vec<Dim> = dims.into_iter().map(|(s, c)| Dim::new(s, c)).collect();
                    AccessPattern::new(base, parts, &dims).expect("generated in range")
                })
        })
    }

    /// A scalar operand: an immediate from `imm` or a vector at a short operand from `vector`.
    pub fn scalar(
        imm: impl Strategy<Value = f32>,
        vector: impl Strategy<Value = ShortOperand>,
    ) -> impl Strategy<Value = ScalarOperand> {
        prop_oneof![
            imm.prop_map(ScalarOperand::Imm),
            vector.prop_map(ScalarOperand::Vector),
        ]
    }
}
