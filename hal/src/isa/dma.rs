//! Engine-issued DMA operands (docs/isa.md §5.9): the two-dimensional chunk pattern both
//! encodings use, and the address forms of the platform's `dma.direct` after the runtime has
//! relocated a Neuron `0xD4`.

use core::fmt;

use crate::addr::DeviceAddr;

/// A DMA access pattern: two dims of (step in bytes, count), innermost first; each element of
/// the pattern is one chunk of the instruction's element size. Chunk `(i0, i1)` starts at
/// `base + i0·steps[0] + i1·steps[1]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DmaPattern {
    /// Steps in bytes, innermost first.
    pub steps: [i32; 2],
    /// Counts, innermost first (each ≥ 1).
    pub nums: [u16; 2],
}

impl DmaPattern {
    /// Reads a pattern laid out as two i32 steps at byte `steps` and two u16 counts at byte
    /// `nums` (innermost first), as both encodings write it; a zero count is refused with its
    /// byte offset.
    pub(crate) fn read_at(r: &super::Record, steps: usize, nums: usize) -> Result<Self, usize> {
        let mut p = DmaPattern {
            steps: [0; 2],
            nums: [0; 2],
        };
        for i in 0..2 {
            p.steps[i] = i32::from_le_bytes(super::layout::get(r, steps + 4 * i));
            let at = nums + 2 * i;
            p.nums[i] = u16::from_le_bytes(super::layout::get(r, at));
            if p.nums[i] == 0 {
                return Err(at);
            }
        }
        Ok(p)
    }

    /// Writes the pattern where [`DmaPattern::read_at`] reads it.
    pub(crate) fn write_at(&self, r: &mut super::Record, steps: usize, nums: usize) {
        for i in 0..2 {
            super::layout::put(r, steps + 4 * i, &self.steps[i].to_le_bytes());
            super::layout::put(r, nums + 2 * i, &self.nums[i].to_le_bytes());
        }
    }

    /// Chunks moved.
    pub fn chunks(&self) -> u64 {
        u64::from(self.nums[0]) * u64::from(self.nums[1])
    }

    /// The byte offsets, relative to the base, of every chunk in order (`i0` fastest).
    pub fn offsets(&self) -> impl Iterator<Item = i64> + '_ {
        let [s0, s1] = self.steps.map(i64::from);
        (0..i64::from(self.nums[1]))
            .flat_map(move |i1| (0..i64::from(self.nums[0])).map(move |i0| i0 * s0 + i1 * s1))
    }

    /// The lowest offset touched and one past the highest, for chunks of `elem` bytes.
    pub fn extent(&self, elem: u64) -> (i64, i64) {
        let mut lo = 0i64;
        let mut hi = 0i64;
        for (s, n) in self.steps.iter().zip(self.nums) {
            let span = i64::from(*s) * (i64::from(n) - 1);
            if span < 0 {
                lo += span;
            } else {
                hi += span;
            }
        }
        (lo, hi + elem as i64)
    }
}

impl fmt::Display for DmaPattern {
    /// `[step0,step1][num0,num1]`, the profiler's form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{},{}][{},{}]",
            self.steps[0], self.steps[1], self.nums[0], self.nums[1]
        )
    }
}

/// One side of a `dma.direct`: where its base comes from.
///
/// A *slot* is 16 bytes of device memory the runtime fills with a var's device address (u64)
/// and size in bytes (u64): the engine reads it when the instruction executes, so a slot can be
/// rebound for each execution (inputs and outputs), and every chunk is checked against the
/// var's size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DmaEnd {
    /// A fixed device address (on-chip memory windows: the bounds are the memory's).
    Absolute(DeviceAddr),
    /// The var in slot `slot`, plus `offset` bytes.
    Slot {
        /// The slot's device address.
        slot: DeviceAddr,
        /// Byte offset into the var.
        offset: u32,
    },
    /// The var in slot `slot`, plus the value of the engine's register `register`.
    SlotRegister {
        /// The slot's device address.
        slot: DeviceAddr,
        /// The register holding the byte offset.
        register: u8,
    },
}

impl DmaEnd {
    /// Bytes of a slot: the var's device address and its size, both u64.
    pub const SLOT_BYTES: u64 = 16;
}

impl fmt::Display for DmaEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DmaEnd::Absolute(a) => write!(f, "[{a}]"),
            DmaEnd::Slot { slot, offset } => write!(f, "[slot {slot}]+{offset:#x}"),
            DmaEnd::SlotRegister { slot, register } => write!(f, "[slot {slot}]+r{register}"),
        }
    }
}
