//! The execute path (docs/runtime.md §3.2–§4.3, docs/exec.md): bind → stage → doorbell → complete.
//!
//! # Per core (created at a core's first execution)
//!
//! [`CoreExec`] owns the core's hardware exec queue and IO queue ([`ring::HostRing`]), a page of
//! runtime words and 64 request slots, the skip-config cache, and the notification-queue reader.
//! The core's [`ticket::ComputeReqLock`] (the `compute_req_lock`) guards it and issues the
//! core's dense execution indices: a logical core's executions take the lock of its first core,
//! then stage every core of the vcore in order (lockstep, docs/runtime.md §4.3), see
//! [`ticket::stage_lockstep`].
//!
//! # One execution
//!
//! 1. **Bind** — the caller's sets are checked against the model's contract (names, sizes,
//!    logical core); per core, every model queue gets rewind descriptors and every *dynamic*
//!    queue (one touching an input or output var) gets its ring resolved against the caller's
//!    tensors ([`dynring`], PA-keyed LRU) plus base/length register writes: the IO-queue swap
//!    descriptors, appended to the core's IO queue.
//! 2. **Stage** — per core, the 52-byte `device_exec_request_t` (engine instruction-block
//!    addresses; `reload_seq_config` / `load_act_dve_tables` diffed against what the core ran
//!    last, when the optimisation is on) and its `cc_dma_increment` trailer go to a request
//!    slot, and four pairs go to the hardware exec queue: request copy (56 B), request-load
//!    event poke, and the IO queue's RX and TX tail increments, the last marked end-of-block.
//!    The vcore's ticket is the first core's dense `compute_idx`.
//!
//!    What is the same for every execution of a model on a core — the IO pairs' register
//!    addresses, the request bytes for each flag combination, the trigger pairs' destinations —
//!    is precomputed ([`crate::model::template`]); the stage patches only the resolved rings' addresses, the
//!    slot and the ring-id phase, and writes each ring's new pairs with one copy. It reads the
//!    core's completion count only when the value it last read would refuse the execution.
//! 3. **Doorbell** — after every core is staged: one `INFERENCE_START` increment per core.
//! 4. **Complete** — wait for each core's `COMPLETION` semaphore to reach the ticket (bounded by
//!    `NEURON_RT_EXEC_TIMEOUT`), harvest the core's notification queue, map its entries to a
//!    status (see [`status_of`]).
//!
//! # Files
//!
//! | module | owns |
//! |---|---|
//! | this one | the per-core execution state [`CoreExec`] (its stage, notification harvest), [`status_of`], the set check |
//! | [`run`] | the entry points the runtime calls with a looked-up model: sync execute with host staging, async submit, recovery of a poisoned logical core |
//! | [`worker`] | [`worker::ExecShared`]: submit through the execution unit, completion, the async workers, wait and poll |
//! | [`dynring`] | resolving a dynamic queue's rings for the caller's tensors (the cache itself is [`crate::model::ring_cache`]) |
//! | [`ring`] | the host-written exec and IO rings and the trigger pairs' destinations |
//! | [`ticket`], [`handoff`] | the `compute_req_lock` ticket and the async completion hand-off (model-checked with loom) |
//!
//! A loaded model's types come from [`crate::model`]; nothing here imports [`crate::runtime`].
//!
//! Collectives: a model whose subgraphs declare `cc_streams.num_streams > 0` would need the
//! model-switch chain of docs/exec.md §3; this platform has no collectives fabric, so such models
//! are refused at execution with `NRT_INVALID`.

pub mod dynring;
pub mod handoff;
pub mod ring;
pub mod run;
pub mod ticket;
pub mod worker;

use std::collections::BTreeMap;

use nrt_hal::abi::NqType;
use nrt_hal::exec_request::REQUEST_BUFFER_SIZE;
use nrt_hal::hal::{AllocRequest, MemLocation, NotificationQueue, NqRequest};
use nrt_hal::notify::{Notification, NqError, NqReader, NQ_ENTRY_SIZE};
use nrt_hal::target::reserved;
use nrt_hal::{DeviceAddr, Hal, MemHandle, NcIndex, QueueRef, Target};

use crate::error::{Error, Result};
use crate::model::core_model::CoreModel;
use crate::model::queue::IO_QUEUE;
use crate::model::ring_cache::{Cache, MAX_KEY};
use crate::model::LoadedModel;
use crate::status::NrtStatus;
use crate::tensor::TensorSet;
use ring::{HostRing, PairCtrl, TriggerAddrs};

/// Descriptors in each core's hardware exec queue (4 per execution).
pub const EXEC_RING: u32 = 1024;
/// Descriptors in each core's IO queue.
pub const IO_RING: u32 = 65536;
pub use crate::model::template::REQ_SLOTS;
/// Bytes of each core's notification queue (2048 entries).
pub const NQ_BYTES: u32 = 64 << 10;
/// Most IO-queue swap pairs one execution may stage on one core.
pub const MAX_SWAP_PAIRS: u32 = IO_RING / REQ_SLOTS as u32;

const WORD_RESET: u64 = 0;
const WORD_ONE: u64 = 4;
const SLOTS_AT: u64 = 0x100;
const SLOT_BYTES: u64 = 64;

/// What one finished execution reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecReport {
    /// The vcore's ticket (its first core's execution index).
    pub compute_idx: u64,
    /// The execution unit's sequence id.
    pub seq_id: u64,
    /// Device cycles from start to completion, per core of the model.
    pub cycles: Vec<u64>,
}

/// The checked `len_ctrl` words of the pairs a stage appends (see [`PairCtrl`]).
#[derive(Debug, Clone, Copy)]
struct StageCtrl {
    word: PairCtrl,
    request: PairCtrl,
    word_end: PairCtrl,
}

impl StageCtrl {
    fn new() -> Result<StageCtrl> {
        Ok(StageCtrl {
            word: PairCtrl::new(4, false)?,
            request: PairCtrl::new(REQUEST_BUFFER_SIZE as u32, false)?,
            word_end: PairCtrl::new(4, true)?,
        })
    }
}

/// Per-core execution state (the core's [`ticket::ComputeReqLock`] guards it and issues its
/// execution indices).
#[derive(Debug)]
pub struct CoreExec {
    nc: NcIndex,
    exec_ring: HostRing,
    io_ring: HostRing,
    page: MemHandle,
    page_pa: DeviceAddr,
    triggers: TriggerAddrs,
    /// The length and flags of the pairs every execution appends: 4-byte word copies, the
    /// request copy, and the end-of-block TX tail increment.
    ctrl: StageCtrl,
    /// The core's `COMPLETION` count as last read: a lower bound of the executions retired
    /// (the count only grows until the core is reset, which replaces this state). Re-read only
    /// when a decision needs a fresher value (see [`CoreExec::stage`]).
    completed_seen: u64,
    last_config: Option<([u8; 32], [u8; 32])>,
    nq: NotificationQueue,
    shadow: Vec<u8>,
    reader: NqReader,
    pending: BTreeMap<u64, Vec<Notification>>,
    lost: u64,
    corrupt: u64,
    /// The first execution a hardware fault hit on this core since the core was set up (after
    /// its reset): see [`CoreExec::take`].
    faulted_at: Option<u64>,
}

impl CoreExec {
    /// Sets up core `nc` for execution: its exec and IO queues, words, request slots and
    /// notification queue.
    pub fn new(hal: &dyn Hal, nc: NcIndex) -> Result<CoreExec> {
        let target = hal.device_info()?.target;
        let page = hal.mem_alloc(&AllocRequest {
            size: SLOTS_AT + REQ_SLOTS * SLOT_BYTES,
            align: 0,
            location: MemLocation::Device {
                channel: target.hbm_channel_of(nc),
            },
            nc,
            category: nrt_hal::abi::MemAllocCategory::MiscDevice,
        })?;
        let done = || -> Result<CoreExec> {
            let page_pa = hal.mem_info(page)?.pa;
            let triggers = TriggerAddrs::new(target, nc)?;
            let ctrl = StageCtrl::new()?;
            let mut w = [0u8; 8];
            w[0..4].copy_from_slice(&nrt_hal::target::udma_regs::Q_SW_CTRL_RESET.to_le_bytes());
            w[4..8].copy_from_slice(&1u32.to_le_bytes());
            hal.copy_to_device(page, 0, &w)?;
            let exec_ring = HostRing::new(
                hal,
                QueueRef::new(nc, reserved::HW_EXEC_ENGINE, reserved::HW_EXEC_QUEUE),
                EXEC_RING,
                4,
            )?;
            let io_ring = match HostRing::new(
                hal,
                QueueRef::new(nc, reserved::HW_EXEC_ENGINE, IO_QUEUE),
                IO_RING,
                MAX_SWAP_PAIRS,
            ) {
                Ok(r) => r,
                Err(e) => {
                    exec_ring.release(hal);
                    return Err(e);
                }
            };
            let nq = match hal.notification_init(&NqRequest {
                nc,
                nq_type: NqType::Notify,
                engine_index: 0,
                size: NQ_BYTES,
                location: MemLocation::Host,
            }) {
                Ok(q) => q,
                Err(e) => {
                    exec_ring.release(hal);
                    io_ring.release(hal);
                    return Err(e.into());
                }
            };
            let reader =
                NqReader::new(nq.size as usize).map_err(|e| Error::failure(e.to_string()))?;
            Ok(CoreExec {
                nc,
                exec_ring,
                io_ring,
                page,
                page_pa,
                triggers,
                ctrl,
                completed_seen: 0,
                last_config: None,
                shadow: vec![0; nq.size as usize],
                nq,
                reader,
                pending: BTreeMap::new(),
                lost: 0,
                corrupt: 0,
                faulted_at: None,
            })
        };
        done().inspect_err(|_| {
            let _ = hal.mem_free(page);
        })
    }

    /// Frees what [`CoreExec::new`] allocated. The notification queue is the device's (freed by a
    /// core reset), so it is left alone.
    pub fn release(self, hal: &dyn Hal) {
        self.exec_ring.release(hal);
        self.io_ring.release(hal);
        let _ = hal.mem_free(self.page);
    }

    fn word(&self, off: u64) -> DeviceAddr {
        DeviceAddr::new(self.page_pa.raw() + off)
    }

    /// The core's retired-execution count, read from its `COMPLETION` semaphore.
    fn read_completed(&mut self, hal: &dyn Hal) -> Result<u64> {
        let c = hal.semaphore_read(self.nc, reserved::COMPLETION)?.max(0) as u64;
        self.completed_seen = self.completed_seen.max(c);
        Ok(self.completed_seen)
    }

    /// Stages one execution of `core` (bind + stage of the module docs) as execution `index`
    /// of this core: the ticket [`ticket::ComputeReqGuard::issue`] hands out, which advances
    /// only if this succeeds.
    ///
    /// What does not change between executions comes from the model's
    /// [`SubmitTemplate`](crate::model::template::SubmitTemplate) and this core's [`TriggerAddrs`]. The completion count is
    /// read from the device only when the last value read would refuse the execution (all
    /// [`REQ_SLOTS`] request slots look taken) or would leave a full dynamic-ring cache
    /// nothing to evict; otherwise the submit makes no device read at all. (`target` is no
    /// longer needed here: the template holds every address it gave.)
    #[allow(clippy::too_many_arguments)]
    pub fn stage(
        &mut self,
        index: u64,
        hal: &dyn Hal,
        target: Target,
        core: &CoreModel,
        io_pa: &impl Fn(u32) -> Option<DeviceAddr>,
        caches: &mut [Cache],
        config: ([u8; 32], [u8; 32]),
        model_switch: bool,
        skip_config: bool,
    ) -> Result<()> {
        let _ = target;
        self.io_ring.discard();
        self.exec_ring.discard();
        if index >= self.completed_seen + REQ_SLOTS
            && index >= self.read_completed(hal)? + REQ_SLOTS
        {
            return Err(Error::new(
                NrtStatus::QueueFull,
                format!("{}: {REQ_SLOTS} executions already staged", self.nc),
            ));
        }
        // ---- bind: IO-queue swap descriptors ----
        let tpl = &core.submit;
        let needed = tpl.swaps;
        if needed > MAX_SWAP_PAIRS {
            return Err(Error::resource(format!(
                "{}: an execution needs {needed} IO-queue descriptors, at most {MAX_SWAP_PAIRS}",
                self.nc
            )));
        }
        let reset = self.word(WORD_RESET);
        let mut dyn_i = 0;
        let resolve = |v: u32| core.var_pa.get(&v).copied().or_else(|| io_pa(v));
        for (q, t) in core.queues.iter().zip(&tpl.queues) {
            if let (true, Some(regs)) = (q.dynamic, &t.regs) {
                let mut key = [0u64; MAX_KEY];
                let n = q.io_vars.len().min(MAX_KEY);
                for (k, &var) in key.iter_mut().zip(&q.io_vars) {
                    *k = io_pa(var)
                        .ok_or_else(|| Error::failure(format!("IO var {var} is not bound")))?
                        .raw();
                }
                let cache = caches
                    .get_mut(dyn_i)
                    .ok_or_else(|| Error::failure("dynamic ring cache missing"))?;
                dyn_i += 1;
                let completed = if cache.needs_eviction(&key[..n], self.completed_seen) {
                    self.read_completed(hal)?
                } else {
                    self.completed_seen
                };
                let e = dynring::get(
                    cache,
                    hal,
                    self.nc,
                    q,
                    &key[..n],
                    &resolve,
                    index,
                    completed,
                )?;
                let w = e.words_pa.raw();
                for &(dst, off) in regs {
                    self.io_ring
                        .push(DeviceAddr::new(w + off), dst, self.ctrl.word)?;
                }
            }
            for &dst in &t.rewind {
                self.io_ring.push(reset, dst, self.ctrl.word)?;
            }
        }
        // ---- bind: the IO image of the engine-issued DMAs' var slots ----
        if let (Some(d), Some((dst, len))) = (&core.dge, tpl.dge) {
            let mut image = [0u8; crate::model::dge::SLOT as usize * crate::model::dge::MAX_IO];
            let n = d.io_image(io_pa, &mut image)?;
            let at = d.staging_offset(index, REQ_SLOTS);
            hal.copy_to_device(d.mem, at, &image[..n])?;
            self.io_ring.push(
                DeviceAddr::new(d.pa.raw() + at),
                dst,
                PairCtrl::new(len, false)?,
            )?;
        }
        // ---- the request ----
        let (reload, tables) = match (skip_config, self.last_config) {
            (true, Some((f, t))) => (f != config.0, t != config.1),
            _ => (true, true),
        };
        self.last_config = Some(config);
        let slot = SLOTS_AT + (index % REQ_SLOTS) * SLOT_BYTES;
        hal.copy_to_device(self.page, slot, tpl.request(model_switch, reload, tables))?;
        // ---- the three trigger pairs ----
        let slot_pa = self.word(slot);
        let count_pa = self.word(slot + REQUEST_BUFFER_SIZE as u64);
        let (tr, c) = (self.triggers, self.ctrl);
        let one = self.word(WORD_ONE);
        self.exec_ring.push(slot_pa, tr.request, c.request)?;
        self.exec_ring.push(one, tr.load_event, c.word)?;
        self.exec_ring.push(count_pa, tr.rx_tail, c.word)?;
        self.exec_ring.push(count_pa, tr.tx_tail, c.word_end)?;
        self.io_ring.flush(hal)?;
        self.exec_ring.flush(hal)
    }

    /// Reads every new notification into the pending table.
    fn harvest(&mut self, hal: &dyn Hal) -> Result<()> {
        loop {
            let slot = self.reader.head() as usize * NQ_ENTRY_SIZE;
            hal.copy_from_device(
                self.nq.handle,
                slot as u64,
                &mut self.shadow[slot..slot + NQ_ENTRY_SIZE],
            )?;
            match self.reader.poll(&self.shadow) {
                Ok(Some(n)) => {
                    let idx = n.compute_idx().unwrap_or(u64::MAX);
                    let entries = self.pending.entry(idx).or_default();
                    let hw_fault = match n {
                        Notification::DmaError { .. } | Notification::HbmUncorrectable { .. } => {
                            true
                        }
                        // A faulted completion whose cause is not an instruction error or a
                        // deadlock (its DMA or HBM error entry may have been lost or
                        // unreadable).
                        Notification::Completion { faulted: true, .. } => {
                            !entries.iter().any(|e| {
                                matches!(
                                    e,
                                    Notification::ExecError { .. }
                                        | Notification::Deadlock { .. }
                                        | Notification::DgeError { .. }
                                )
                            })
                        }
                        _ => false,
                    };
                    if hw_fault {
                        self.faulted_at = Some(self.faulted_at.map_or(idx, |k| k.min(idx)));
                    }
                    entries.push(n);
                }
                Ok(None) => return Ok(()),
                Err(NqError::Overflow { lost }) => self.lost += lost as u64,
                Err(_) => self.corrupt += 1,
            }
        }
    }

    /// The notifications of execution `index`, once its completion entry has been read.
    ///
    /// # Executions behind a hardware fault
    ///
    /// A DMA abort or an HBM error stops the faulted execution at once (the sequencer completes
    /// it as faulted), but DMA transfers it had already started on its other queues keep
    /// running: they still write its tensors and SBUF and increment its semaphores — which the
    /// next execution on the core, started right after the faulted one, shares. That execution
    /// can then retire "successfully" with outputs partly unwritten or computed from stale
    /// data. The execution unit is poisoned when the fault is reported, but executions staged
    /// before that still run. So once a hardware fault was seen on this core for execution
    /// `k`, every later execution `index > k` fails with `NRT_EXEC_UNIT_UNRECOVERABLE` (101)
    /// until the core is reset (recovery replaces this state). Harvesting is in queue order, so
    /// `k`'s error entries are always read before `index`'s completion.
    ///
    /// An instruction error (`NRT_EXEC_COMPLETED_WITH_ERR`) does not mark the core: it is not
    /// treated as a hardware fault and does not poison the unit.
    pub fn take(&mut self, hal: &dyn Hal, index: u64) -> Result<Option<Vec<Notification>>> {
        self.harvest(hal)?;
        let done = self.pending.get(&index).is_some_and(|v| {
            v.iter()
                .any(|n| matches!(n, Notification::Completion { .. }))
        });
        if done {
            let entries = self.pending.remove(&index);
            if let Some(k) = self.faulted_at.filter(|&k| k < index) {
                return Err(Error::new(
                    NrtStatus::ExecUnitUnrecoverable,
                    format!(
                        "{}: execution {index} ran after execution {k} hit a hardware fault on this core, before the core was reset; its outputs are undefined",
                        self.nc
                    ),
                ));
            }
            return Ok(entries);
        }
        if self.lost > 0 || self.corrupt > 0 {
            let (lost, corrupt) = (self.lost, self.corrupt);
            self.lost = 0;
            self.corrupt = 0;
            return Err(Error::new(
                NrtStatus::ExecSwNqOverflow,
                format!(
                    "{}: notification queue lost {lost} entries and held {corrupt} unreadable ones; the completion of execution {index} is among them",
                    self.nc
                ),
            ));
        }
        Ok(None)
    }
}

/// The status and message an execution's notifications amount to (our mapping; the hardware's
/// own error notification format is not public):
///
/// | entry | status |
/// |---|---|
/// | `HbmUncorrectable` | `NRT_EXEC_HW_ERR_HBM_UE` (1201) |
/// | `DmaError` | `NRT_EXEC_HW_ERR_DMA_ABORT` (1203) |
/// | `DgeError` (a DMA an instruction issued reaches outside its tensor; refused before it moves anything, so the core stays usable) | `NRT_EXEC_HW_ERR_DMA_ABORT` (1203) |
/// | `ExecError` (unknown opcode, malformed or out-of-bounds instruction) | `NRT_EXEC_COMPLETED_WITH_ERR` (1004): the device detected it while executing, so this is an execution result rather than an invalid request |
/// | `Deadlock` (engines waiting on semaphores nothing can change) | `NRT_EXEC_COMPLETED_WITH_ERR`; the message lists every stuck engine |
/// | `NanProduced` | `NRT_EXEC_COMPLETED_WITH_NUM_ERR` (1003) |
/// | a faulted completion with no other entry | `NRT_EXEC_COMPLETED_WITH_ERR` |
///
/// The most severe wins, in the table's order. `describe` turns an `ExecError`'s device
/// instruction index into the NEFF's.
pub fn status_of(
    entries: &[Notification],
    describe: &impl Fn(&Notification) -> String,
) -> Option<Error> {
    let rank = |n: &Notification| match n {
        Notification::HbmUncorrectable { .. } => Some((0, NrtStatus::ExecHwErrHbmUe)),
        Notification::DmaError { .. } | Notification::DgeError { .. } => {
            Some((1, NrtStatus::ExecHwErrDmaAbort))
        }
        Notification::ExecError { .. } | Notification::Deadlock { .. } => {
            Some((2, NrtStatus::ExecCompletedWithErr))
        }
        Notification::NanProduced { .. } => Some((3, NrtStatus::ExecCompletedWithNumErr)),
        Notification::Completion { faulted: true, .. } => {
            Some((4, NrtStatus::ExecCompletedWithErr))
        }
        _ => None,
    };
    entries
        .iter()
        .filter_map(|n| rank(n).map(|r| (r, n)))
        .min_by_key(|(r, _)| r.0)
        .map(|((_, status), n)| {
            if matches!(n, Notification::Deadlock { .. }) {
                let all: Vec<String> = entries
                    .iter()
                    .filter(|e| matches!(e, Notification::Deadlock { .. }))
                    .map(describe)
                    .collect();
                Error::new(status, format!("deadlock: {}", all.join("; ")))
            } else {
                Error::new(status, describe(n))
            }
        })
}

/// Checks the caller's sets and that every tensor can be bound.
pub(crate) fn validate_sets(
    model: &LoadedModel,
    inputs: &TensorSet,
    outputs: &TensorSet,
) -> Result<()> {
    let m = &model.parsed.model;
    if inputs.len() != m.inputs.len() {
        return Err(Error::invalid(format!(
            "Incorrect number of inputs, expected: {}, received: {}",
            m.inputs.len(),
            inputs.len()
        )));
    }
    let (ins_distinct, outs_distinct) = model.exec.distinct_names;
    crate::tensor::check_set("input", inputs, &m.inputs, ins_distinct, model.vnc)?;
    crate::tensor::check_set("output", outputs, &m.outputs, outs_distinct, model.vnc)?;
    if m.subgraphs.iter().any(|k| k.cc_streams > 0) {
        return Err(Error::invalid(
            "the model declares collectives streams (cc_streams); this platform has no collectives fabric",
        ));
    }
    Ok(())
}
