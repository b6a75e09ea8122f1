//! The explicit async API (`nrta_*`, docs/c-api.md §5.5) on the runtime's execution units.
//!
//! Each visible core has a TENSOR_READ, a TENSOR_WRITE and a TENSOR_OP unit (queues 0 and 1
//! each) and a COMPUTE unit (queue 0). A tensor unit is a runtime [`ExecutionUnit`] of its own:
//! its funnel refuses work once the unit failed (`NRT_EXEC_UNIT_UNRECOVERABLE`) or its ring is
//! full (`NRT_QUEUE_FULL`), and issues the sequence numbers; the copy itself runs in the
//! scheduling call, so the request is complete when the call returns. The COMPUTE unit is the
//! runtime's own execution unit of the core, fed by [`Runtime::try_execute_async_counted`]
//! (which refuses instead of waiting: `NRT_QUEUE_FULL`, `NRT_EXEC_UNIT_UNRECOVERABLE`), whose
//! async worker completes the execution; finished compute requests are harvested in order when
//! someone asks about them ([`AsyncUnits::harvest`]).
//!
//! Public sequence ids: unit id `core << 8 | queue << 4 | type` in the high 16 bits, and the
//! unit's ring position + 1 in the low 48 (so sequence number 0 means "none yet"). A request's
//! failure is appended to the [`ErrorTracker`] given with it, as `{seq_id, status}`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::log::Log;
use super::trace::SysTrace;
use crate::error::{Error, Result};
use crate::exec::worker::ExecRequest;
use crate::exec::ExecReport;
use crate::model::ModelId;
use crate::runtime::Runtime;
use crate::status::NrtStatus;
use crate::tensor::TensorSet;
use crate::xu::{seq_index, ExecutionUnit, SlotState, SEQ_INDEX_MASK};

/// `NRTA_XU_TENSOR_READ`.
pub const TENSOR_READ: u32 = 0;
/// `NRTA_XU_TENSOR_WRITE`.
pub const TENSOR_WRITE: u32 = 1;
/// `NRTA_XU_TENSOR_OP`.
pub const TENSOR_OP: u32 = 2;
/// `NRTA_XU_COMPUTE`.
pub const COMPUTE: u32 = 3;
/// Ring slots of a tensor unit.
const TENSOR_UNIT_CAPACITY: u32 = 64;

fn queues(ty: u32) -> Result<u32> {
    match ty {
        TENSOR_READ | TENSOR_WRITE | TENSOR_OP => Ok(2),
        COMPUTE => Ok(1),
        4 => Err(Error::failure("the COLLECTIVES execution unit needs a collectives fabric, which this platform does not have")),
        _ => Err(Error::invalid(format!("execution unit type {ty} is not an nrta_xu_t"))),
    }
}

/// The unit id of (visible core `lnc`, type `ty`, `queue`), checked.
pub fn unit_id(lnc: u32, ty: u32, queue: i32) -> Result<u16> {
    let n = queues(ty)?;
    if queue < 0 || queue as u32 >= n {
        return Err(Error::invalid(format!(
            "queue {queue}: execution unit type {ty} has {n} queue(s)"
        )));
    }
    if lnc > 0xFF {
        return Err(Error::invalid(format!(
            "core {lnc} is beyond the sequence-id space"
        )));
    }
    Ok(((lnc << 8) | ((queue as u32) << 4) | ty) as u16)
}

/// The public sequence id of ring position `index` of unit `id`.
pub fn public_seq(id: u16, index: u64) -> u64 {
    (u64::from(id) << 48) | ((index + 1) & SEQ_INDEX_MASK)
}

/// Where the failures of the requests given it are recorded (`nrta_error_tracker_t`): one
/// visible core's.
#[derive(Debug)]
pub struct ErrorTracker {
    lnc: u32,
    errors: Mutex<Vec<(u64, NrtStatus)>>,
}

impl ErrorTracker {
    /// An empty tracker of visible core `lnc`.
    pub fn new(lnc: u32) -> ErrorTracker {
        ErrorTracker {
            lnc,
            errors: Mutex::new(Vec::new()),
        }
    }

    /// The visible core it belongs to.
    pub fn lnc(&self) -> u32 {
        self.lnc
    }

    /// Every failure recorded so far: (public sequence id, status), in order.
    pub fn errors(&self) -> Vec<(u64, NrtStatus)> {
        lock(&self.errors).clone()
    }

    fn push(&self, seq: u64, status: NrtStatus) {
        lock(&self.errors).push((seq, status));
    }
}

/// How a request finds its error tracker: the front end resolves its handle when asked
/// (`Ok(None)`: no tracker given).
pub type TrackerLookup<'a> = &'a dyn Fn() -> Result<Option<Arc<ErrorTracker>>>;

/// A tensor request (`nrta_tensor_read`, `_write`, `_copy`): the unit of its core it goes to,
/// its error tracker, and its name for the log and the trace.
pub struct TensorRequest<'a> {
    /// The unit type ([`TENSOR_READ`], [`TENSOR_WRITE`] or [`TENSOR_OP`]).
    pub ty: u32,
    /// The unit's queue.
    pub queue: i32,
    /// Its error tracker.
    pub tracker: TrackerLookup<'a>,
    /// Its name.
    pub what: &'a str,
}

/// A compute request (`nrta_execute_schedule`): the model, the COMPUTE unit's queue, its
/// error tracker, and how the front end gives its input and output sets when asked.
pub struct ComputeRequest<'a> {
    /// The model.
    pub model: ModelId,
    /// The unit's queue (0: the COMPUTE unit has one).
    pub queue: i32,
    /// Its error tracker.
    pub tracker: TrackerLookup<'a>,
    /// Its input and output sets.
    pub sets: &'a dyn Fn() -> Result<(TensorSet, TensorSet)>,
}

struct Pending {
    req: ExecRequest,
    model: u32,
    tracker: Option<Arc<ErrorTracker>>,
}

#[derive(Default)]
struct Compute {
    pending: BTreeMap<u16, BTreeMap<u64, Pending>>,
    last_done: BTreeMap<u16, u64>,
    issued: BTreeMap<u16, u64>,
}

/// A compute request that finished, as [`AsyncUnits::harvest`] hands it over.
#[derive(Debug)]
pub struct Finished {
    /// Its public sequence id.
    pub seq: u64,
    /// The runtime's logical core it ran on.
    pub vnc: u32,
    /// The runtime's model handle.
    pub model: u32,
    /// How it ended.
    pub result: Result<ExecReport>,
}

/// A session's explicit async units.
pub struct AsyncUnits {
    units: Mutex<BTreeMap<u16, Arc<ExecutionUnit>>>,
    compute: Mutex<Compute>,
}

impl Default for AsyncUnits {
    fn default() -> Self {
        AsyncUnits {
            units: Mutex::new(BTreeMap::new()),
            compute: Mutex::new(Compute::default()),
        }
    }
}

impl std::fmt::Debug for AsyncUnits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncUnits").finish_non_exhaustive()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The unit (visible core `lnc`, type `ty`, `queue`) a request goes to, and the tracker
/// `lookup` names, checked to belong to that core.
fn addressed(
    lnc: u32,
    ty: u32,
    queue: i32,
    lookup: TrackerLookup<'_>,
) -> Result<(u16, Option<Arc<ErrorTracker>>)> {
    let id = unit_id(lnc, ty, queue)?;
    let tracker = lookup()?;
    if let Some(t) = &tracker {
        if t.lnc != lnc {
            return Err(Error::invalid(format!(
                "the error tracker belongs to core {}, the request runs on core {lnc}",
                t.lnc
            )));
        }
    }
    Ok((id, tracker))
}

fn fail(tracker: &Option<Arc<ErrorTracker>>, seq: u64, status: NrtStatus) {
    if let Some(t) = tracker {
        t.push(seq, status);
    }
}

impl AsyncUnits {
    fn unit(&self, id: u16) -> Arc<ExecutionUnit> {
        lock(&self.units)
            .entry(id)
            .or_insert_with(|| Arc::new(ExecutionUnit::new(id, TENSOR_UNIT_CAPACITY)))
            .clone()
    }

    /// Runs tensor operation `op` as request `req` of visible core `lnc`; returns its public
    /// sequence id. A failed operation is logged and recorded on the tracker; the call itself
    /// succeeds.
    pub fn schedule_tensor(
        &self,
        (trace, log): (&SysTrace, &dyn Log),
        lnc: u32,
        req: TensorRequest<'_>,
        op: impl FnOnce() -> Result<()>,
    ) -> Result<u64> {
        let (id, tracker) = addressed(lnc, req.ty, req.queue, req.tracker)?;
        let what = req.what;
        let unit = self.unit(id);
        let mut result = Ok(());
        let sub = unit.submit(0, |_| {
            result = op();
            Ok(0)
        })?;
        let seq = public_seq(id, seq_index(sub.seq_id));
        let status = match &result {
            Ok(()) => NrtStatus::Success,
            Err(e) => {
                log.error(&format!("async {what} {seq:#x}: {e}"));
                e.status
            }
        };
        let _ = unit.complete(sub.seq_id, status);
        unit.retire();
        if status != NrtStatus::Success {
            fail(&tracker, seq, status);
        }
        trace.record_async(lnc, "async_tensor_op", seq, what);
        Ok(seq)
    }

    /// `nrta_execute_schedule`: compute request `req` on visible core `lnc`. Never waits (see
    /// [`Runtime::try_execute_async_counted`]); returns the public sequence id.
    pub fn schedule_execute(
        &self,
        (rt, trace): (&Runtime, &SysTrace),
        lnc: u32,
        req: ComputeRequest<'_>,
    ) -> Result<u64> {
        let (id, tracker) = addressed(lnc, COMPUTE, req.queue, req.tracker)?;
        let model = req.model;
        let (ins, outs) = (req.sets)()?;
        let req = rt.try_execute_async_counted(model, &ins, &outs)?;
        let idx = seq_index(req.seq_id);
        let seq = public_seq(id, idx);
        let mut c = lock(&self.compute);
        c.pending.entry(id).or_default().insert(
            idx,
            Pending {
                req,
                model: model.0,
                tracker,
            },
        );
        let issued = c.issued.entry(id).or_default();
        *issued = (*issued).max(idx + 1);
        drop(c);
        trace.record_async(lnc, "async_exec_schedule", seq, "execute");
        Ok(seq)
    }

    /// Collects the finished compute requests, in order per unit: each failure is recorded on
    /// its tracker, and every finished request is handed to `done` (under the harvest's lock,
    /// so they arrive in order).
    pub fn harvest(&self, rt: &Runtime, done: &mut dyn FnMut(Finished)) {
        let mut c = lock(&self.compute);
        let Compute {
            pending, last_done, ..
        } = &mut *c;
        for (id, list) in pending.iter_mut() {
            while let Some((&idx, p)) = list.first_key_value() {
                let Some(r) = rt.poll(p.req) else { break };
                let seq = public_seq(*id, idx);
                if let Err(e) = &r {
                    fail(&p.tracker, seq, e.status);
                }
                done(Finished {
                    seq,
                    vnc: p.req.vnc,
                    model: p.model,
                    result: r,
                });
                last_done.insert(*id, idx + 1);
                list.remove(&idx);
            }
        }
    }

    /// Whether public sequence id `seq` has completed (`NRT_INVALID` if never issued); a
    /// compute request's completion is known after `harvest` ran.
    pub fn completed(&self, seq: u64, harvest: impl FnOnce()) -> Result<bool> {
        let id = (seq >> 48) as u16;
        let n = seq & SEQ_INDEX_MASK;
        let unknown = || Error::invalid(format!("sequence id {seq:#x} was never issued"));
        let ty = u32::from(id & 0xF);
        if n == 0 {
            return Err(unknown());
        }
        if ty == COMPUTE {
            harvest();
            let c = lock(&self.compute);
            if n > c.issued.get(&id).copied().unwrap_or(0) {
                return Err(unknown());
            }
            return Ok(!c.pending.get(&id).is_some_and(|p| p.contains_key(&(n - 1))));
        }
        let unit = lock(&self.units).get(&id).cloned().ok_or_else(unknown)?;
        match unit.status_of((u64::from(id) << 48) | (n - 1)) {
            Some(SlotState::Pending) => Ok(false),
            Some(_) => Ok(true),
            None => Err(unknown()),
        }
    }

    /// `nrta_get_sequence`: the public sequence id of the last completed request of unit
    /// (visible core `lnc`, type `xu`, `queue`) — sequence number 0 when none; a compute unit's
    /// is known after `harvest` ran.
    pub fn last_sequence(
        &self,
        lnc: u32,
        xu: u32,
        queue: i32,
        harvest: impl FnOnce(),
    ) -> Result<u64> {
        let id = unit_id(lnc, xu, queue)?;
        let done = if xu == COMPUTE {
            harvest();
            lock(&self.compute).last_done.get(&id).copied().unwrap_or(0)
        } else {
            let unit = lock(&self.units).get(&id).cloned();
            unit.and_then(|u| u.last_completed())
                .map_or(0, |q| seq_index(q) + 1)
        };
        Ok((u64::from(id) << 48) | done)
    }
}
