//! The explicit async API (`nrta_*`) on the runtime's execution units.
//!
//! Each visible core has a TENSOR_READ, a TENSOR_WRITE and a TENSOR_OP unit (queues 0 and 1
//! each) and a COMPUTE unit (queue 0). A tensor unit is a runtime [`ExecutionUnit`] of its own:
//! its funnel refuses work once the unit failed (`NRT_EXEC_UNIT_UNRECOVERABLE`) or its ring is
//! full (`NRT_QUEUE_FULL`), and issues the sequence numbers; the copy itself runs in the
//! scheduling call, so the request is complete when the call returns. The COMPUTE unit is the
//! runtime's own execution unit of the core, fed by [`Runtime::try_execute_async_counted`]
//! (which refuses instead of waiting: `NRT_QUEUE_FULL`, `NRT_EXEC_UNIT_UNRECOVERABLE`), whose async
//! worker completes the execution; this module harvests those completions in order when it is
//! asked about them.
//!
//! Public sequence ids: unit id `core << 8 | queue << 4 | type` in the high 16 bits, and the
//! unit's ring position + 1 in the low 48 (so sequence number 0 means "none yet"). A request's
//! failure is appended to the error tracker given with it, as `{seq_id, status}`.

use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::{Arc, Mutex};

use nrt_runtime::exec::worker::ExecRequest;
use nrt_runtime::tensor::Tensor;
use nrt_runtime::xu::{seq_index, ExecutionUnit, SlotState, SEQ_INDEX_MASK};
use nrt_runtime::{Error, NrtStatus, Result, Runtime};

use crate::guard;
use crate::handles::{Kind, Table};
use crate::ptr;
use crate::session::{self, Session};
use crate::types::{NrtStatusC, NrtaError, NrtaSeq};

const TENSOR_READ: u32 = 0;
const TENSOR_WRITE: u32 = 1;
const TENSOR_OP: u32 = 2;
const COMPUTE: u32 = 3;
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

fn unit_id(lnc: u32, ty: u32, queue: c_int) -> Result<u16> {
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

fn public_seq(id: u16, index: u64) -> u64 {
    (u64::from(id) << 48) | ((index + 1) & SEQ_INDEX_MASK)
}

struct Pending {
    req: ExecRequest,
    model: u32,
    tracker: usize,
}

#[derive(Default)]
struct Compute {
    pending: BTreeMap<u16, BTreeMap<u64, Pending>>,
    last_done: BTreeMap<u16, u64>,
    issued: BTreeMap<u16, u64>,
}

/// `nrta_error_tracker_t`.
struct Tracker {
    lnc: u32,
    errors: Vec<NrtaError>,
    snapshot: Vec<NrtaError>,
}

/// A session's async state.
pub struct AsyncState {
    units: Mutex<BTreeMap<u16, Arc<ExecutionUnit>>>,
    compute: Mutex<Compute>,
    trackers: Table<Tracker>,
}

impl Default for AsyncState {
    fn default() -> Self {
        AsyncState {
            units: Mutex::new(BTreeMap::new()),
            compute: Mutex::new(Compute::default()),
            trackers: Table::new(Kind::ErrorTracker),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl AsyncState {
    fn unit(&self, id: u16) -> Arc<ExecutionUnit> {
        lock(&self.units)
            .entry(id)
            .or_insert_with(|| Arc::new(ExecutionUnit::new(id, TENSOR_UNIT_CAPACITY)))
            .clone()
    }

    fn check_tracker(&self, tracker: usize, lnc: u32) -> Result<()> {
        if tracker == 0 {
            return Ok(());
        }
        let t = self.trackers.with(tracker, "err", |t| t.lnc)?;
        if t != lnc {
            return Err(Error::invalid(format!(
                "the error tracker belongs to core {t}, the request runs on core {lnc}"
            )));
        }
        Ok(())
    }

    fn fail(&self, tracker: usize, seq: u64, status: NrtStatus) {
        if tracker != 0 {
            let _ = self.trackers.with(tracker, "err", |t| {
                t.errors.push(NrtaError {
                    seq_id: seq,
                    error_code: u64::from(status.code()),
                })
            });
        }
    }

    /// Collects finished compute requests, in order per unit.
    fn harvest(&self, rt: &Runtime, s: &Session) {
        let mut c = lock(&self.compute);
        let Compute {
            pending, last_done, ..
        } = &mut *c;
        for (id, list) in pending.iter_mut() {
            while let Some((&idx, p)) = list.first_key_value() {
                let Some(r) = rt.poll(p.req) else { break };
                s.trace.record_exec(s.visible_index(p.req.vnc), p.model, &r);
                if let Err(e) = &r {
                    crate::log::error(&format!(
                        "async execution {:#x}: {}",
                        public_seq(*id, idx),
                        e
                    ));
                    self.fail(p.tracker, public_seq(*id, idx), e.status);
                    crate::api::profile::execution_failed(s, s.visible_index(p.req.vnc), e);
                }
                last_done.insert(*id, idx + 1);
                list.remove(&idx);
            }
        }
    }

    /// Whether public sequence id `seq` has completed (`NRT_INVALID` if never issued).
    fn completed(&self, rt: &Runtime, s: &Session, seq: u64) -> Result<bool> {
        let id = (seq >> 48) as u16;
        let n = seq & SEQ_INDEX_MASK;
        let unknown = || Error::invalid(format!("sequence id {seq:#x} was never issued"));
        let ty = u32::from(id & 0xF);
        if n == 0 {
            return Err(unknown());
        }
        if ty == COMPUTE {
            self.harvest(rt, s);
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
}

/// Runs a tensor operation as request of unit (`lnc`, `ty`, `queue`).
fn schedule_tensor(
    s: &Session,
    lnc_abs: u32,
    ty: u32,
    queue: c_int,
    tracker: usize,
    what: &str,
    op: impl FnOnce() -> Result<()>,
) -> Result<u64> {
    let lnc = s.visible_index(lnc_abs);
    let id = unit_id(lnc, ty, queue)?;
    s.nrta.check_tracker(tracker, lnc)?;
    let unit = s.nrta.unit(id);
    let mut result = Ok(());
    let sub = unit.submit(0, |_| {
        result = op();
        Ok(0)
    })?;
    let seq = public_seq(id, seq_index(sub.seq_id));
    let status = match &result {
        Ok(()) => NrtStatus::Success,
        Err(e) => {
            crate::log::error(&format!("async {what} {seq:#x}: {e}"));
            e.status
        }
    };
    let _ = unit.complete(sub.seq_id, status);
    unit.retire();
    if status != NrtStatus::Success {
        s.nrta.fail(tracker, seq, status);
    }
    s.trace.record_async(lnc, "async_tensor_op", seq, what);
    Ok(seq)
}

/// # Safety
///
/// `req_sequence` is NULL or writable.
#[allow(clippy::too_many_arguments)]
unsafe fn tensor_request(
    function: &'static str,
    (tensor, arg): (*mut c_void, &str),
    other: Option<(*mut c_void, &str)>,
    ty: u32,
    queue: c_int,
    err: *mut c_void,
    req_sequence: *mut NrtaSeq,
    op: impl FnOnce(&Tensor, Option<Tensor>) -> Result<()>,
) -> NrtStatusC {
    guard::status(function, || {
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(req_sequence, "req_sequence")? };
        session::with(|_, s| {
            let t = s.tensor(tensor as usize, arg)?;
            let o = other.map(|(p, a)| s.tensor(p as usize, a)).transpose()?;
            *out = schedule_tensor(s, t.vnc(), ty, queue, err as usize, function, || op(&t, o))?;
            Ok(())
        })
    })
}

/// `nrta_tensor_write`.
///
/// # Safety
///
/// `buf` points at `size` readable bytes; `req_sequence` is NULL or writable.
pub unsafe extern "C" fn nrta_tensor_write(
    tensor: *mut c_void,
    buf: *const c_void,
    offset: u64,
    size: u64,
    queue: c_int,
    err: *mut c_void,
    req_sequence: *mut NrtaSeq,
) -> NrtStatusC {
    if buf.is_null() && size > 0 {
        return guard::status("nrta_tensor_write", || Err(ptr::null("buf")));
    }
    // SAFETY: the caller's contract covers `buf` and `req_sequence`.
    unsafe {
        tensor_request(
            "nrta_tensor_write",
            (tensor, "tensor"),
            None,
            TENSOR_WRITE,
            queue,
            err,
            req_sequence,
            |t, _| t.write(offset, ptr::bytes(buf, size as usize, "buf")?),
        )
    }
}

/// `nrta_tensor_read`.
///
/// # Safety
///
/// `buf` points at `size` writable bytes; `req_sequence` is NULL or writable.
pub unsafe extern "C" fn nrta_tensor_read(
    buf: *mut c_void,
    tensor: *mut c_void,
    offset: u64,
    size: u64,
    queue: c_int,
    err: *mut c_void,
    req_sequence: *mut NrtaSeq,
) -> NrtStatusC {
    if buf.is_null() && size > 0 {
        return guard::status("nrta_tensor_read", || Err(ptr::null("buf")));
    }
    // SAFETY: the caller's contract covers `buf` and `req_sequence`.
    unsafe {
        tensor_request(
            "nrta_tensor_read",
            (tensor, "tensor"),
            None,
            TENSOR_READ,
            queue,
            err,
            req_sequence,
            |t, _| t.read(offset, ptr::bytes_mut(buf, size as usize, "buf")?),
        )
    }
}

/// `nrta_tensor_copy`: both tensors on the same core.
///
/// # Safety
///
/// `req_sequence` is NULL or writable.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn nrta_tensor_copy(
    src: *mut c_void,
    src_offset: u64,
    dst: *mut c_void,
    dst_offset: u64,
    size: u64,
    queue: c_int,
    err: *mut c_void,
    req_sequence: *mut NrtaSeq,
) -> NrtStatusC {
    // SAFETY: the caller's contract covers `req_sequence`.
    unsafe {
        tensor_request(
            "nrta_tensor_copy",
            (src, "src"),
            Some((dst, "dst")),
            TENSOR_OP,
            queue,
            err,
            req_sequence,
            |t, d| match d {
                Some(d) => Tensor::copy(t, src_offset, &d, dst_offset, size),
                None => Err(ptr::null("dst")),
            },
        )
    }
}

/// `nrta_execute_schedule`: `queue` must be 0; device tensors only. Never waits: while the
/// core's COMPUTE unit holds `NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS` unfinished requests
/// (when set; else the unit's ring capacity) the call is `NRT_QUEUE_FULL`, and once an
/// execution on the unit failed fatally (a timeout or a hardware fault poisons it) every later
/// call is `NRT_EXEC_UNIT_UNRECOVERABLE` until the core is reset (docs/c-api.md §5.5).
///
/// # Safety
///
/// `req_sequence` is NULL or writable.
pub unsafe extern "C" fn nrta_execute_schedule(
    model: *mut c_void,
    input: *const c_void,
    output: *mut c_void,
    queue: c_int,
    err: *mut c_void,
    req_sequence: *mut NrtaSeq,
) -> NrtStatusC {
    guard::status("nrta_execute_schedule", || {
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(req_sequence, "req_sequence")? };
        session::with(|rt, s| {
            let m = s.model(model as usize, "model")?;
            let lnc = s.visible_index(m.vnc);
            let id = unit_id(lnc, COMPUTE, queue)?;
            s.nrta.check_tracker(err as usize, lnc)?;
            let ins = s.tensor_set(input as usize, "input")?;
            let outs = s.tensor_set(output as usize, "output")?;
            let req = rt.try_execute_async_counted(m.id, &ins, &outs)?;
            let idx = seq_index(req.seq_id);
            let seq = public_seq(id, idx);
            let mut c = lock(&s.nrta.compute);
            c.pending.entry(id).or_default().insert(
                idx,
                Pending {
                    req,
                    model: m.id.0,
                    tracker: err as usize,
                },
            );
            let issued = c.issued.entry(id).or_default();
            *issued = (*issued).max(idx + 1);
            drop(c);
            s.trace
                .record_async(lnc, "async_exec_schedule", seq, "execute");
            *out = seq;
            Ok(())
        })
    })
}

const NO_CC: &str = "collectives need a collectives fabric between workers; this platform is one simulated device and has none";

/// The first NULL among `args` as `NRT_INVALID` naming it, else `NRT_FAILURE` (no collectives).
fn no_cc(args: &[(bool, &str)]) -> Result<()> {
    match args.iter().find(|(null, _)| *null) {
        Some((_, name)) => Err(ptr::null(name)),
        None => Err(Error::failure(NO_CC)),
    }
}

/// `nrta_cc_prepare`: `NRT_FAILURE` (no collectives fabric).
pub extern "C" fn nrta_cc_prepare(
    comm: *mut c_void,
    input: *mut c_void,
    output: *mut c_void,
    _dtype: u32,
    _op: u32,
    _cc_op: u32,
    cc_ctx: *mut *mut c_void,
) -> NrtStatusC {
    guard::status("nrta_cc_prepare", || {
        no_cc(&[
            (comm.is_null(), "comm"),
            (input.is_null(), "input"),
            (output.is_null(), "output"),
            (cc_ctx.is_null(), "cc_ctx"),
        ])
    })
}

/// `nrta_cc_schedule`: `NRT_FAILURE` (no collectives fabric; `err` may be NULL).
pub extern "C" fn nrta_cc_schedule(
    cc_ctx: *mut *mut c_void,
    _queue: c_int,
    _err: *mut c_void,
    req_sequence: *mut NrtaSeq,
) -> NrtStatusC {
    guard::status("nrta_cc_schedule", || {
        no_cc(&[
            (cc_ctx.is_null(), "cc_ctx"),
            (req_sequence.is_null(), "req_sequence"),
        ])
    })
}

/// `nrta_is_completed`.
///
/// # Safety
///
/// `is_completed` is NULL or writable.
pub unsafe extern "C" fn nrta_is_completed(seq: NrtaSeq, is_completed: *mut bool) -> NrtStatusC {
    guard::status("nrta_is_completed", || {
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(is_completed, "is_completed")? };
        *out = session::with(|rt, s| s.nrta.completed(rt, s, seq))?;
        Ok(())
    })
}

/// `nrta_get_sequence`: the last completed request of (`lnc`, `xu`, `queue`).
///
/// # Safety
///
/// `seq` is NULL or writable.
pub unsafe extern "C" fn nrta_get_sequence(
    lnc: u32,
    xu: u32,
    queue: c_int,
    seq: *mut NrtaSeq,
) -> NrtStatusC {
    guard::status("nrta_get_sequence", || {
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(seq, "seq")? };
        session::with(|rt, s| {
            s.vnc(lnc.into())?;
            let id = unit_id(lnc, xu, queue)?;
            let done = if xu == COMPUTE {
                s.nrta.harvest(rt, s);
                lock(&s.nrta.compute)
                    .last_done
                    .get(&id)
                    .copied()
                    .unwrap_or(0)
            } else {
                let unit = lock(&s.nrta.units).get(&id).cloned();
                unit.and_then(|u| u.last_completed())
                    .map_or(0, |q| seq_index(q) + 1)
            };
            *out = (u64::from(id) << 48) | done;
            Ok(())
        })
    })
}

/// `nrta_get_completion_handle`: an eventfd that becomes readable once `seq` completed.
///
/// # Safety
///
/// `fd` is NULL or writable.
pub unsafe extern "C" fn nrta_get_completion_handle(seq: NrtaSeq, fd: *mut c_int) -> NrtStatusC {
    guard::status("nrta_get_completion_handle", || {
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(fd, "fd")? };
        let done = session::with(|rt, s| s.nrta.completed(rt, s, seq))?;
        // SAFETY: eventfd has no memory preconditions; the result is checked.
        let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if efd < 0 {
            return Err(Error::resource(format!(
                "eventfd: {}",
                std::io::Error::last_os_error()
            )));
        }
        let signal = move || {
            let one = 1u64.to_ne_bytes();
            // SAFETY: writes 8 bytes from a live buffer to the eventfd (closed only by the
            // caller, after it saw the completion).
            unsafe { libc::write(efd, one.as_ptr().cast(), 8) };
        };
        if done {
            signal();
        } else {
            std::thread::spawn(move || loop {
                std::thread::sleep(std::time::Duration::from_micros(200));
                match session::with(|rt, s| s.nrta.completed(rt, s, seq)) {
                    Ok(false) => continue,
                    // Completed, or the session ended: either way nothing more will happen.
                    _ => return signal(),
                }
            });
        }
        *out = efd;
        Ok(())
    })
}

/// `nrta_error_tracker_create`.
///
/// # Safety
///
/// `error_tracker` is NULL or writable.
pub unsafe extern "C" fn nrta_error_tracker_create(
    lnc_idx: u32,
    error_tracker: *mut *mut c_void,
) -> NrtStatusC {
    guard::status("nrta_error_tracker_create", || {
        // SAFETY: the caller's contract.
        let out = unsafe { ptr::out(error_tracker, "error_tracker")? };
        session::with(|_, s| {
            s.vnc(lnc_idx.into())?;
            *out = s.nrta.trackers.insert(Tracker {
                lnc: lnc_idx,
                errors: Vec::new(),
                snapshot: Vec::new(),
            }) as *mut c_void;
            Ok(())
        })
    })
}

/// `nrta_error_tracker_destroy`.
pub extern "C" fn nrta_error_tracker_destroy(error_tracker: *mut c_void) {
    guard::void("nrta_error_tracker_destroy", || {
        session::with(|_, s| {
            s.nrta
                .trackers
                .remove(error_tracker as usize, "error_tracker")
                .map(|_| ())
        })
    })
}

/// `nrta_error_tracker_get_list`: every error recorded so far; the array stays valid until the
/// next call on this tracker.
///
/// # Safety
///
/// `list` and `error_count` are NULL or writable.
pub unsafe extern "C" fn nrta_error_tracker_get_list(
    error_tracker: *mut c_void,
    list: *mut *const NrtaError,
    error_count: *mut usize,
) -> NrtStatusC {
    guard::status("nrta_error_tracker_get_list", || {
        // SAFETY: the caller's contract.
        let (list, count) = unsafe {
            (
                ptr::out(list, "list")?,
                ptr::out(error_count, "error_count")?,
            )
        };
        session::with(|rt, s| {
            s.nrta.harvest(rt, s);
            s.nrta
                .trackers
                .with(error_tracker as usize, "error_tracker", |t| {
                    t.snapshot = t.errors.clone();
                    *list = t.snapshot.as_ptr();
                    *count = t.snapshot.len();
                })
        })
    })
}
