//! The submit template of a model on a core ([`SubmitTemplate`]): everything the stage of one
//! execution writes that does not change from one execution of the model on that core to the
//! next, computed once when the model is staged on the core (docs/exec.md §2, §3.2, §3.3), so
//! that a submit only patches what does change — the destination register of every IO-queue
//! pair in stage order (the swap descriptors of each dynamic queue, the rewind pairs of every
//! queue), and the request buffer with its trailer for each of the eight combinations of the
//! request's flags. Per execution the stage only resolves the dynamic queues' rings (the
//! source of their swap pairs) and picks the request variant.
//!
//! The descriptors built from a template are byte-identical to those built without one: the
//! template holds the same addresses the stage used to compute per execution.

use nrt_hal::exec_request::{DeviceExecRequest, RequestBuffer, REQUEST_BUFFER_SIZE};
use nrt_hal::target::{Direction, QueueReg};
use nrt_hal::{DeviceAddr, EngineKind, QueueRef, Target};

use super::dge::DgeSlots;
use super::queue::HwQueue;
use super::ring_cache::words;
use crate::error::{Error, Result};

/// Request slots per core: the most executions a core may have staged and not yet started
/// (also the number of IO images a model's var slots keep, `crate::model::dge`).
pub const REQ_SLOTS: u64 = 64;

/// Bytes of a request slot's contents: the request buffer and its 4-byte trailer (the IO pair
/// count, docs/exec.md §2.4).
pub const SLOT_CONTENT: usize = REQUEST_BUFFER_SIZE + 4;

/// The IO-queue pairs of one model queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueSwaps {
    /// For a dynamic queue: the six ring registers (TX base low, high, length; RX base low,
    /// high, length), each with the offset of its value in the resolved ring's word page.
    pub regs: Option<[(DeviceAddr, u64); 6]>,
    /// The RX then TX software-control registers the rewind pairs store the reset value into.
    pub rewind: [DeviceAddr; 2],
}

/// What every execution of one model on one core stages the same way.
#[derive(Debug, Clone)]
pub struct SubmitTemplate {
    /// Per model queue, in the model's queue order.
    pub queues: Vec<QueueSwaps>,
    /// IO-queue pairs of one execution (the request's trailer).
    pub swaps: u32,
    /// The request slot's contents for each flag combination (see [`SubmitTemplate::request`]).
    requests: [[u8; SLOT_CONTENT]; 8],
    /// The IO-queue pair that copies an execution's IO image into the var slots
    /// (`crate::model::dge`): its destination and length in bytes.
    pub dge: Option<(DeviceAddr, u32)>,
}

impl Default for SubmitTemplate {
    /// The template of a model with no queues and no engines (before staging fills it in).
    fn default() -> Self {
        SubmitTemplate {
            queues: Vec::new(),
            swaps: 0,
            requests: [[0; SLOT_CONTENT]; 8],
            dge: None,
        }
    }
}

fn reg_addr(target: Target, q: QueueRef, dir: Direction, reg: QueueReg) -> Result<DeviceAddr> {
    target
        .queue_reg_addr(q, dir, reg)
        .ok_or_else(|| Error::failure(format!("no ring registers for {q}")))
}

impl SubmitTemplate {
    /// The template of a model whose queues on the core are `queues` and whose engines'
    /// instruction blocks are at `engine_addr`.
    pub fn new(
        target: Target,
        queues: &[HwQueue],
        engine_addr: &[Option<DeviceAddr>; 5],
        dge: Option<&DgeSlots>,
    ) -> Result<SubmitTemplate> {
        let mut out = Vec::with_capacity(queues.len());
        let mut swaps = 0u32;
        for q in queues {
            let regs = if q.dynamic {
                let mut regs = [(DeviceAddr::new(0), 0u64); 6];
                let mut i = 0;
                for (dir, lo, hi) in [
                    (Direction::Tx, words::TX_BASE_LO, words::TX_BASE_HI),
                    (Direction::Rx, words::RX_BASE_LO, words::RX_BASE_HI),
                ] {
                    for (reg, off) in [
                        (QueueReg::BaseLow, lo),
                        (QueueReg::BaseHigh, hi),
                        (QueueReg::Length, words::LEN),
                    ] {
                        regs[i] = (reg_addr(target, q.queue, dir, reg)?, off);
                        i += 1;
                    }
                }
                swaps += 6;
                Some(regs)
            } else {
                None
            };
            let rewind = [
                reg_addr(target, q.queue, Direction::Rx, QueueReg::SwCtrl)?,
                reg_addr(target, q.queue, Direction::Tx, QueueReg::SwCtrl)?,
            ];
            swaps += 2;
            out.push(QueueSwaps { regs, rewind });
        }
        let dge = match dge {
            Some(d) if !d.io.is_empty() => {
                let len = d.io.len() as u32 * super::dge::SLOT as u32;
                swaps += 1;
                Some((d.pa, len))
            }
            _ => None,
        };
        let mut requests = [[0u8; SLOT_CONTENT]; 8];
        for (flags, slot) in requests.iter_mut().enumerate() {
            let mut req = DeviceExecRequest::new(flags & 1 != 0, flags & 2 != 0, flags & 4 != 0);
            for e in EngineKind::ALL {
                if let Some(a) = engine_addr[e.index()] {
                    req.set_engine_address(e, a);
                }
            }
            let buf = RequestBuffer {
                request: req,
                cc_dma_increment: 0,
            };
            slot[..REQUEST_BUFFER_SIZE].copy_from_slice(&buf.to_bytes());
            slot[REQUEST_BUFFER_SIZE..].copy_from_slice(&swaps.to_le_bytes());
        }
        Ok(SubmitTemplate {
            queues: out,
            swaps,
            requests,
            dge,
        })
    }

    /// The request slot's contents for the flags `model_switch`, `reload_seq_config` and
    /// `load_act_dve_tables` (docs/exec.md §2.3), with the trailer.
    pub fn request(&self, model_switch: bool, reload: bool, tables: bool) -> &[u8; SLOT_CONTENT] {
        &self.requests
            [usize::from(model_switch) | usize::from(reload) << 1 | usize::from(tables) << 2]
    }
}
