//! The argument checks every backend makes before it touches the device, and the evaluation of
//! a [`WaitCondition`]: one rule each, shared by the simulator, the driver backend and the
//! kernel-ABI emulation's callers, so a core, semaphore, event or queue index is refused with
//! the same [`HalError::InvalidArgument`] message whichever backend answers.
//!
//! The runtime validates its own input first (the HAL's rule, [`crate::hal`]); these checks are
//! the backends' guard against a caller bug, and against the driver's own gaps (it does not
//! validate an event's core, and accepts event index 256: docs/driver.md "hazards").

use crate::hal::{HalError, HalResult, NqRequest, RingSpec, WaitCondition};
use crate::udma::RingGeometry;
use crate::{EventId, MemHandle, NcIndex, QueueRef, SemaphoreId, Target};

/// `InvalidArgument` from `op` for `reason`.
pub fn invalid(op: &'static str, reason: impl Into<String>) -> HalError {
    HalError::InvalidArgument {
        op,
        reason: reason.into(),
    }
}

/// `nc` is a core of `target`.
pub fn core(target: Target, op: &'static str, nc: NcIndex) -> HalResult<()> {
    if target.has_core(nc) {
        Ok(())
    } else {
        Err(invalid(op, format!("{nc} is not a core of this {target}")))
    }
}

/// `sem` is a semaphore of core `nc`.
pub fn semaphore(target: Target, op: &'static str, nc: NcIndex, sem: SemaphoreId) -> HalResult<()> {
    core(target, op, nc)?;
    if sem.0 < target.spec().semaphores_per_core {
        Ok(())
    } else {
        Err(invalid(op, format!("semaphore {} out of range", sem.0)))
    }
}

/// `event` is an event of core `nc`.
pub fn event(target: Target, op: &'static str, nc: NcIndex, event: EventId) -> HalResult<()> {
    core(target, op, nc)?;
    if event.0 < target.spec().events_per_core {
        Ok(())
    } else {
        Err(invalid(op, format!("event {} out of range", event.0)))
    }
}

/// `q` names a DMA queue of one of `target`'s cores.
pub fn queue(target: Target, op: &'static str, q: QueueRef) -> HalResult<()> {
    core(target, op, q.nc)?;
    let s = target.spec();
    if q.engine.0 >= s.dma_engines_per_core || q.queue.0 >= s.queues_per_engine {
        return Err(invalid(op, format!("queue {q} out of range")));
    }
    Ok(())
}

/// The geometry of a queue's TX and RX rings, refused as the udma rules say
/// ([`RingGeometry::new`]; docs/driver.md "UDMA rings").
pub fn rings(op: &'static str, tx: RingSpec, rx: RingSpec) -> HalResult<[RingGeometry; 2]> {
    let geom = |name: &str, spec: RingSpec| {
        RingGeometry::new(spec.count).map_err(|e| invalid(op, format!("{name} ring: {e}")))
    };
    Ok([geom("tx", tx)?, geom("rx", rx)?])
}

/// A copy start makes at least one RX descriptor available (the driver hits a kernel `BUG_ON`
/// on zero).
pub fn copy_start(op: &'static str, rx_count: u32) -> HalResult<()> {
    if rx_count == 0 {
        return Err(invalid(op, "rx_desc_count must be non-zero"));
    }
    Ok(())
}

/// A notification-queue request names a core, an index below
/// [`crate::abi::MAX_NQ_ENGINE`], and a power-of-two size that holds at least one entry.
pub fn notification(target: Target, op: &'static str, req: &NqRequest) -> HalResult<()> {
    core(target, op, req.nc)?;
    if req.engine_index >= crate::abi::MAX_NQ_ENGINE {
        return Err(invalid(
            op,
            format!("engine_index {} out of range", req.engine_index),
        ));
    }
    if !req.size.is_power_of_two() || (req.size as usize) < crate::notify::NQ_ENTRY_SIZE {
        return Err(invalid(
            op,
            format!(
                "size {} is not a power of two of at least {} bytes",
                req.size,
                crate::notify::NQ_ENTRY_SIZE
            ),
        ));
    }
    Ok(())
}

/// A wait condition names a semaphore of the device, or a 4-byte aligned word.
pub fn wait(target: Target, cond: &WaitCondition) -> HalResult<()> {
    const OP: &str = "wait";
    match *cond {
        WaitCondition::Semaphore { nc, sem, .. } => semaphore(target, OP, nc, sem),
        WaitCondition::Memory32 { offset, .. } if offset % 4 != 0 => Err(invalid(
            OP,
            format!("offset {offset:#x} is not 4-byte aligned"),
        )),
        WaitCondition::Memory32 { .. } => Ok(()),
    }
}

/// What a [`WaitCondition`] observes, for the backend to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Semaphore `sem` of core `nc`.
    Semaphore {
        /// Core.
        nc: NcIndex,
        /// Semaphore.
        sem: SemaphoreId,
    },
    /// The little-endian u32 at byte `offset` of allocation `handle`.
    Word {
        /// The allocation.
        handle: MemHandle,
        /// Byte offset.
        offset: u64,
    },
}

impl WaitCondition {
    /// What the condition observes.
    pub fn probe(&self) -> Probe {
        match *self {
            WaitCondition::Semaphore { nc, sem, .. } => Probe::Semaphore { nc, sem },
            WaitCondition::Memory32 { handle, offset, .. } => Probe::Word { handle, offset },
        }
    }

    /// Whether the condition holds, given `read`, which returns the observed value (a semaphore
    /// as its 32 bits, a memory word as it is). A semaphore compares signed, a memory word
    /// unsigned ([`crate::isa::SemCmp::holds`], [`crate::isa::SemCmp::holds_u32`]).
    pub fn holds(&self, read: impl FnOnce(Probe) -> HalResult<u32>) -> HalResult<bool> {
        let observed = read(self.probe())?;
        Ok(match *self {
            WaitCondition::Semaphore { cmp, value, .. } => cmp.holds(observed as i32, value),
            WaitCondition::Memory32 { cmp, value, .. } => cmp.holds_u32(observed, value),
        })
    }
}
