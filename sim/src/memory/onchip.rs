//! On-chip memory of one NeuronCore: the state buffer (SBUF) and the matmul accumulator (PSUM).
//!
//! Implements the on-chip half of docs/simulator.md §2 *Memory*, with the geometry of the target tables
//! (`TargetSpec::sbuf`, `TargetSpec::psum`; docs/isa.md §2.2, docs/neff.md §8.2):
//!
//! - SBUF: `partitions × partition_bytes` (128 × 192 KiB on trn1, 128 × 224 KiB on trn2), one
//!   contiguous buffer, partition `p` at byte `p * partition_bytes`.
//! - PSUM: `partitions × partition_bytes` (128 × 16 KiB), laid out the same way.
//!
//! Both are zero-initialised and materialised page by page on first write (docs/simulator.md
//! §2.4): each is a `backing::ZeroPages`, an anonymous mapping on Linux, so creating a core's
//! on-chip memory commits nothing, a read of an untouched page sees zeros without committing it,
//! and a reset hands every page back. Eight trn2 cores' 28 MiB SBUFs cost nothing until used
//! ([`OnChip::committed_bytes`] tells what they cost). They are not host-mapped, so the compute
//! engines get plain slices ([`OnChip::sbuf_mut`] …).
//!
//! DMA addresses SBUF through a window with a 256 KiB stride per partition, wider than the
//! physical partition. The DMA accessors here take a partition and an offset inside it and fault
//! with [`MemFault::OutOfWindow`] when the access runs past the physical partition size (or
//! [`MemFault::NoSuchPartition`] for a partition the core lacks); nothing wraps into the next
//! partition.

use core::fmt;
use core::ops::Range;

use nrt_hal::target::{PsumGeometry, SbufGeometry};
use nrt_hal::Target;

use super::backing::ZeroPages;
use super::MemFault;

/// Which on-chip memory of a core.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OnChipSpace {
    /// The state buffer.
    Sbuf,
    /// The matmul accumulator memory.
    Psum,
}

impl fmt::Display for OnChipSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OnChipSpace::Sbuf => "SBUF",
            OnChipSpace::Psum => "PSUM",
        })
    }
}

/// A byte of on-chip memory: space, partition, and offset inside the partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OnChipAddr {
    /// SBUF or PSUM.
    pub space: OnChipSpace,
    /// Partition index (0..128).
    pub partition: u32,
    /// Byte offset inside the partition.
    pub offset: u32,
}

impl OnChipAddr {
    /// Byte `offset` of `partition` of `space`.
    pub const fn new(space: OnChipSpace, partition: u32, offset: u32) -> Self {
        OnChipAddr {
            space,
            partition,
            offset,
        }
    }

    /// Byte `offset` of SBUF partition `partition`.
    pub const fn sbuf(partition: u32, offset: u32) -> Self {
        OnChipAddr {
            space: OnChipSpace::Sbuf,
            partition,
            offset,
        }
    }

    /// Byte `offset` of PSUM partition `partition`.
    pub const fn psum(partition: u32, offset: u32) -> Self {
        OnChipAddr {
            space: OnChipSpace::Psum,
            partition,
            offset,
        }
    }
}

/// The SBUF and PSUM of one core.
#[derive(Debug)]
pub struct OnChip {
    sbuf: ZeroPages,
    psum: ZeroPages,
    sbuf_geometry: SbufGeometry,
    psum_geometry: PsumGeometry,
}

/// A zeroed buffer of `len` bytes whose pages are committed on first write.
fn zeroed(len: u64) -> ZeroPages {
    ZeroPages::new(len as usize)
}

fn psum_bytes(g: &PsumGeometry) -> u64 {
    u64::from(g.partitions) * u64::from(g.partition_bytes)
}

impl OnChip {
    /// Zeroed SBUF and PSUM with the geometry of `target`; no page is committed yet.
    pub fn new(target: Target) -> Self {
        let spec = target.spec();
        OnChip {
            sbuf: zeroed(spec.sbuf.total_bytes()),
            psum: zeroed(psum_bytes(&spec.psum)),
            sbuf_geometry: spec.sbuf,
            psum_geometry: spec.psum,
        }
    }

    /// The whole SBUF: partition `p` at bytes `p * partition_bytes ..`.
    pub fn sbuf(&self) -> &[u8] {
        self.sbuf.as_slice()
    }

    /// The whole SBUF, mutably.
    pub fn sbuf_mut(&mut self) -> &mut [u8] {
        self.sbuf.as_mut_slice()
    }

    /// The whole PSUM: partition `p` at bytes `p * partition_bytes ..`.
    pub fn psum(&self) -> &[u8] {
        self.psum.as_slice()
    }

    /// The whole PSUM, mutably.
    pub fn psum_mut(&mut self) -> &mut [u8] {
        self.psum.as_mut_slice()
    }

    /// SBUF and PSUM at once, both mutably (for instructions that read one and write the other).
    pub fn split_mut(&mut self) -> (&mut [u8], &mut [u8]) {
        (self.sbuf.as_mut_slice(), self.psum.as_mut_slice())
    }

    /// Host bytes committed to this core's SBUF and PSUM: the pages written since creation or
    /// the last [`OnChip::reset`] (pages only read are not committed). `None` where the host
    /// cannot tell (anything but Linux).
    pub fn committed_bytes(&self) -> Option<u64> {
        Some(self.sbuf.committed_bytes()? + self.psum.committed_bytes()?)
    }

    /// Bytes of SBUF and PSUM this core has (committed or not).
    pub fn total_bytes(&self) -> u64 {
        (self.sbuf.len() + self.psum.len()) as u64
    }

    /// Number of partitions of `space`.
    pub fn partitions(&self, space: OnChipSpace) -> u32 {
        match space {
            OnChipSpace::Sbuf => self.sbuf_geometry.partitions,
            OnChipSpace::Psum => self.psum_geometry.partitions,
        }
    }

    /// Physical bytes per partition of `space`.
    pub fn partition_bytes(&self, space: OnChipSpace) -> u64 {
        u64::from(match space {
            OnChipSpace::Sbuf => self.sbuf_geometry.partition_bytes,
            OnChipSpace::Psum => self.psum_geometry.partition_bytes,
        })
    }

    /// Zeroes both memories (core reset). Their pages are released and recommitted lazily.
    pub fn reset(&mut self) {
        self.sbuf.clear();
        self.psum.clear();
    }

    /// The byte range of `len` bytes at `at` inside its space's buffer.
    fn range(&self, at: OnChipAddr, len: u64) -> Result<Range<usize>, MemFault> {
        let partitions = self.partitions(at.space);
        if at.partition >= partitions {
            return Err(MemFault::NoSuchPartition {
                space: at.space,
                partition: at.partition,
                partitions,
            });
        }
        let limit = self.partition_bytes(at.space);
        let offset = u64::from(at.offset);
        match offset.checked_add(len) {
            Some(end) if end <= limit => {
                let base = u64::from(at.partition) * limit;
                Ok((base + offset) as usize..(base + end) as usize)
            }
            _ => Err(self.fault(at, len)),
        }
    }

    /// The [`MemFault::OutOfWindow`] of an access of `len` bytes at `at`.
    fn fault(&self, at: OnChipAddr, len: u64) -> MemFault {
        MemFault::OutOfWindow {
            space: at.space,
            partition: at.partition,
            offset: at.offset,
            len,
            limit: self.partition_bytes(at.space),
        }
    }

    fn space(&self, space: OnChipSpace) -> &[u8] {
        match space {
            OnChipSpace::Sbuf => self.sbuf.as_slice(),
            OnChipSpace::Psum => self.psum.as_slice(),
        }
    }

    fn space_mut(&mut self, space: OnChipSpace) -> &mut [u8] {
        match space {
            OnChipSpace::Sbuf => self.sbuf.as_mut_slice(),
            OnChipSpace::Psum => self.psum.as_mut_slice(),
        }
    }

    /// The `len` bytes at byte `offset` of `partition` of `space`, inside that partition.
    pub fn slice(
        &self,
        space: OnChipSpace,
        partition: u32,
        offset: u32,
        len: u64,
    ) -> Result<&[u8], MemFault> {
        let at = OnChipAddr::new(space, partition, offset);
        let r = self.range(at, len)?;
        self.space(space).get(r).ok_or_else(|| self.fault(at, len))
    }

    /// The `len` bytes at byte `offset` of `partition` of `space`, mutably.
    pub fn slice_mut(
        &mut self,
        space: OnChipSpace,
        partition: u32,
        offset: u32,
        len: u64,
    ) -> Result<&mut [u8], MemFault> {
        let at = OnChipAddr::new(space, partition, offset);
        let r = self.range(at, len)?;
        let fault = self.fault(at, len);
        self.space_mut(space).get_mut(r).ok_or(fault)
    }

    /// Copies `dst.len()` bytes at byte `offset` of `partition` of `space` into `dst`.
    pub fn read(
        &self,
        space: OnChipSpace,
        partition: u32,
        offset: u32,
        dst: &mut [u8],
    ) -> Result<(), MemFault> {
        dst.copy_from_slice(self.slice(space, partition, offset, dst.len() as u64)?);
        Ok(())
    }

    /// Copies `src` to byte `offset` of `partition` of `space`.
    pub fn write(
        &mut self,
        space: OnChipSpace,
        partition: u32,
        offset: u32,
        src: &[u8],
    ) -> Result<(), MemFault> {
        self.slice_mut(space, partition, offset, src.len() as u64)?
            .copy_from_slice(src);
        Ok(())
    }

    /// Sets `len` bytes at byte `offset` of `partition` of `space` to `value`.
    pub fn fill(
        &mut self,
        space: OnChipSpace,
        partition: u32,
        offset: u32,
        value: u8,
        len: u64,
    ) -> Result<(), MemFault> {
        self.slice_mut(space, partition, offset, len)?.fill(value);
        Ok(())
    }

    /// Copies `len` bytes from `src` to `dst` on this core (memmove semantics when both lie in
    /// the same space).
    pub fn copy(&mut self, src: OnChipAddr, dst: OnChipAddr, len: u64) -> Result<(), MemFault> {
        let rs = self.range(src, len)?;
        let rd = self.range(dst, len)?;
        let fault = self.fault(dst, len);
        if src.space == dst.space {
            self.space_mut(src.space).copy_within(rs, rd.start);
        } else {
            let (s, d) = match src.space {
                OnChipSpace::Sbuf => (self.sbuf.as_slice(), self.psum.as_mut_slice()),
                OnChipSpace::Psum => (self.psum.as_slice(), self.sbuf.as_mut_slice()),
            };
            match (s.get(rs), d.get_mut(rd)) {
                (Some(s), Some(d)) => d.copy_from_slice(s),
                _ => return Err(fault),
            }
        }
        Ok(())
    }
}
