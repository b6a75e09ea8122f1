//! A loaded model's hardware queues ([`HwQueue`]): the queue a queue set was given on a core,
//! its TX and RX rings and the pairs of one execution in ring order (docs/runtime.md §2.6),
//! with the writing of those pairs into the rings ([`write_ring`]) — at load for a static
//! queue, per resolution of the caller's tensors for a dynamic one — and the IO vars that make
//! a queue dynamic ([`io_vars`]).

use nrt_hal::udma::{FixedRingId, DESC_SIZE};
use nrt_hal::{DeviceAddr, Hal, MemHandle, QueueId, QueueRef};

use super::pair::{Loc, PairTemplate};
use crate::error::Result;

/// The queue of [`nrt_hal::target::reserved::HW_EXEC_ENGINE`] the runtime keeps for
/// per-execution IO descriptors — **our choice**.
pub const IO_QUEUE: QueueId = QueueId(12);

/// One hardware queue of the model.
#[derive(Debug, Clone)]
pub struct HwQueue {
    /// The queue set it serves.
    pub set: String,
    /// The hardware queue.
    pub queue: QueueRef,
    /// TX ring memory and its device address.
    pub tx: (MemHandle, DeviceAddr),
    /// RX ring memory and its device address.
    pub rx: (MemHandle, DeviceAddr),
    /// Ring length in descriptors.
    pub ring_len: u32,
    /// The pairs of one execution, in ring order (var-relative where they touch IO vars).
    pub pairs: Vec<PairTemplate>,
    /// Whether any pair touches an input or output var (resolved per execution).
    pub dynamic: bool,
    /// The distinct input/output vars the pairs touch, in first-use order (the key of the
    /// dynamic-ring cache).
    pub io_vars: Vec<u32>,
}

/// Writes a queue's resolved descriptors (ring id 1, one pass) into its TX and RX rings.
pub fn write_ring(
    hal: &dyn Hal,
    q: &HwQueue,
    var_pa: &impl Fn(u32) -> Option<DeviceAddr>,
) -> Result<()> {
    let mut tx = Vec::with_capacity(q.pairs.len() * DESC_SIZE);
    let mut rx = Vec::with_capacity(q.pairs.len() * DESC_SIZE);
    for t in &q.pairs {
        for p in t
            .build(var_pa, FixedRingId(1))
            .map_err(|e| e.context(format!("queue {}", q.queue)))?
        {
            tx.extend_from_slice(&p.tx.to_bytes());
            rx.extend_from_slice(&p.rx.to_bytes());
        }
    }
    hal.copy_to_device(q.tx.0, 0, &tx)?;
    hal.copy_to_device(q.rx.0, 0, &rx)?;
    Ok(())
}

/// The IO vars a queue's pairs reference, in first-use order, without duplicates.
pub fn io_vars(q: &HwQueue, is_io: &impl Fn(u32) -> bool) -> Vec<u32> {
    let mut out = Vec::new();
    for t in &q.pairs {
        for l in [t.src, t.dst] {
            if let Loc::Var { var_id, .. } = l {
                if is_io(var_id) && !out.contains(&var_id) {
                    out.push(var_id);
                }
            }
        }
    }
    out
}
