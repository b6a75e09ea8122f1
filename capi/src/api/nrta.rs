//! The explicit async API's C entry points (`nrta_*`): tensor, model and set handles, error
//! trackers as handles, the completion eventfd. The execution units themselves — sequence ids,
//! the tensor units' funnels, the COMPUTE unit on the runtime's execution unit, errors recorded
//! on trackers — are the runtime session's ([`nrt_runtime::nrt::nrta`]).

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use nrt_runtime::nrt::nrta::{ComputeRequest, TensorRequest, TENSOR_OP, TENSOR_READ, TENSOR_WRITE};
use nrt_runtime::tensor::Tensor;
use nrt_runtime::{Error, Result};

use crate::guard;
use crate::ptr;
use crate::session::{self, Tracker};
use crate::types::{NrtStatusC, NrtaError, NrtaSeq};

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
            let req = TensorRequest {
                ty,
                queue,
                tracker: &|| s.tracker(err as usize, "err"),
                what: function,
            };
            *out = s.nrt.schedule_tensor(t.vnc(), req, || op(&t, o))?;
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
            let req = ComputeRequest {
                model: m.id,
                queue,
                tracker: &|| s.tracker(err as usize, "err"),
                sets: &|| {
                    Ok((
                        s.tensor_set(input as usize, "input")?,
                        s.tensor_set(output as usize, "output")?,
                    ))
                },
            };
            *out = s.nrt.schedule_execute(rt, m.vnc, req)?;
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
        *out = session::with(|rt, s| s.nrt.is_completed(rt, seq))?;
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
        *out = session::with(|rt, s| s.nrt.last_sequence(rt, lnc, xu, queue))?;
        Ok(())
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
        let mut efd = -1;
        session::with(|rt, s| {
            s.nrt.when_completed(rt, seq, || {
                // SAFETY: eventfd has no memory preconditions; the result is checked.
                let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
                if fd < 0 {
                    return Err(Error::resource(format!(
                        "eventfd: {}",
                        std::io::Error::last_os_error()
                    )));
                }
                efd = fd;
                Ok(Box::new(move || {
                    let one = 1u64.to_ne_bytes();
                    // SAFETY: writes 8 bytes from a live buffer to the eventfd (closed only by
                    // the caller, after it saw the completion).
                    unsafe { libc::write(fd, one.as_ptr().cast(), 8) };
                }))
            })
        })?;
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
            let tracker = Arc::new(s.nrt.error_tracker(lnc_idx)?);
            *out = s.trackers.insert(Tracker {
                tracker,
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
            s.trackers
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
            s.nrt.collect_finished(rt);
            s.trackers
                .with(error_tracker as usize, "error_tracker", |t| {
                    t.snapshot = t
                        .tracker
                        .errors()
                        .iter()
                        .map(|&(seq_id, status)| NrtaError {
                            seq_id,
                            error_code: u64::from(status.code()),
                        })
                        .collect();
                    *list = t.snapshot.as_ptr();
                    *count = t.snapshot.len();
                })
        })
    })
}
