//! A relocatable copy pair: one UDMA copy whose sides may still name a var and an offset
//! ([`Loc::Var`]) rather than an address. Lowering a DMA block (`crate::load::dma`) produces
//! them; a loaded model's hardware queues keep them ([`super::queue::HwQueue`]); they are made
//! absolute by [`PairTemplate::resolve`] once the var's physical address is known — at load for
//! the model's own vars, at bind time for the caller's input and output tensors
//! (docs/runtime.md §2.7 "relative → absolute DMA buf_ptr").

use nrt_hal::udma::{ConvertCopy, CopyPair, M2mCopy, RingIdSource};
use nrt_hal::{DeviceAddr, Dtype};

use crate::error::{Error, Result};

/// Where one side of a pair points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loc {
    /// `offset` bytes into var `var_id` (relative; resolved later).
    Var {
        /// The var.
        var_id: u32,
        /// Byte offset into it.
        offset: u64,
    },
    /// An absolute device address (the runtime's own words and registers).
    Abs(DeviceAddr),
}

/// One copy pair before relocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairTemplate {
    /// Source.
    pub src: Loc,
    /// Destination.
    pub dst: Loc,
    /// Bytes read from the source, 1..=65536.
    pub len: u32,
    /// For a converting copy (a `cast` between dtypes), the (source, destination) dtypes:
    /// the pair becomes this platform's converting descriptor (`nrt_hal::udma` "Converting
    /// copies") and writes `len / size(from) · size(to)` bytes.
    pub convert: Option<(Dtype, Dtype)>,
}

impl PairTemplate {
    /// Bytes written at the destination.
    pub fn dst_len(&self) -> u64 {
        match self.convert {
            None => u64::from(self.len),
            Some((from, to)) => u64::from(self.len) / from.size() as u64 * to.size() as u64,
        }
    }

    /// The descriptor pairs with both sides absolute, given a var resolver (`None` = not
    /// resolvable now), taking ring ids from `ids`.
    pub fn build(
        &self,
        var_pa: &impl Fn(u32) -> Option<DeviceAddr>,
        ids: impl RingIdSource,
    ) -> Result<Vec<CopyPair>> {
        let copy = self.resolve(var_pa)?;
        let pairs = match self.convert {
            None => copy.build(ids),
            Some((from, to)) => ConvertCopy {
                src: copy.src,
                dst: copy.dst,
                elements: copy.len / from.size() as u64,
                from,
                to,
            }
            .build(ids),
        };
        pairs.map_err(|e| Error::invalid(e.to_string()))
    }

    /// The copy with both sides absolute, given a var resolver (`None` = not resolvable now).
    pub fn resolve(&self, var_pa: &impl Fn(u32) -> Option<DeviceAddr>) -> Result<M2mCopy> {
        let abs = |l: Loc| -> Result<DeviceAddr> {
            match l {
                Loc::Abs(a) => Ok(a),
                Loc::Var { var_id, offset } => var_pa(var_id)
                    .ok_or_else(|| Error::failure(format!("var {var_id} has no address yet")))?
                    .checked_add(offset)
                    .map_err(|e| Error::invalid(e.to_string())),
            }
        };
        Ok(M2mCopy::new(
            abs(self.src)?,
            abs(self.dst)?,
            self.len as u64,
        ))
    }

    /// Whether either side refers to one of `vars`.
    pub fn touches(&self, vars: &impl Fn(u32) -> bool) -> bool {
        [self.src, self.dst]
            .iter()
            .any(|l| matches!(*l, Loc::Var { var_id, .. } if vars(var_id)))
    }
}
