//! The entry points of facilities this platform does not have: the collectives internals
//! (`nrt/nec.h`), point-to-point send/receive between workers (`nrt/nrt_async_sendrecv.h`) and
//! the per-core debug stream (`nrt/ndebug_stream.h`), docs/c-api.md §8.
//!
//! Each call first checks its pointer arguments (a NULL one is `NRT_INVALID` naming it, like
//! every other entry point), then refuses with one ERROR line saying why the facility is
//! missing and its error value: `NRT_FAILURE` for an `NRT_STATUS`, -1 for an `int`, 0 for a
//! `size_t`, `false` for a `bool`; a `void` function only logs.

use std::ffi::{c_char, c_int, c_void};

use nrt_runtime::{Error, NrtStatus, Result};

use crate::guard;
use crate::types::NrtStatusC;

/// Why `nec_*` calls fail.
pub const NO_NEC: &str = "the collectives library (libnccom) is not available: nrt-emu is one simulated device with no collectives fabric";
/// Why `nrt_async_sendrecv_*` calls fail.
pub const NO_SENDRECV: &str =
    "send/receive between workers needs a network (EFA); nrt-emu is one simulated device with none";
/// Why the debug stream is refused.
pub const NO_DEBUG_STREAM: &str = "no debug stream: the simulator has no debug tensor-read instruction, so no core emits debug-stream events";

/// `NRT_INVALID` for the first NULL pointer in `args`, else `NRT_FAILURE` with `why`.
fn refusal(args: &[(*const c_void, &str)], why: &str) -> Error {
    match args.iter().find(|(p, _)| p.is_null()) {
        Some((_, name)) => crate::ptr::null(name),
        None => Error::failure(why),
    }
}

fn status(function: &'static str, args: &[(*const c_void, &str)], why: &str) -> NrtStatusC {
    guard::status(function, || Err(refusal(args, why)))
}

fn value<T>(function: &'static str, fallback: T, args: &[(*const c_void, &str)], why: &str) -> T {
    guard::value(function, fallback, || -> Result<T> {
        Err(refusal(args, why))
    })
}

fn c<T>(p: *const T) -> *const c_void {
    p.cast()
}

// ---- nrt/nec.h ----

/// `nec_inc_semaphore`.
pub extern "C" fn nec_inc_semaphore(sem_inc_addr: *mut u32, _val: u32) {
    value(
        "nec_inc_semaphore",
        (),
        &[(c(sem_inc_addr), "sem_inc_addr")],
        NO_NEC,
    )
}

/// `nec_get_dynamic_send_size_bytes`: 0.
pub extern "C" fn nec_get_dynamic_send_size_bytes(
    dyn_input: *mut c_void,
    _data_type_sz: usize,
    _dst_rank: c_int,
    _rank_n: c_int,
) -> usize {
    value(
        "nec_get_dynamic_send_size_bytes",
        0,
        &[(c(dyn_input), "dyn_input")],
        NO_NEC,
    )
}

/// `nec_get_dynamic_send_offset_bytes`: 0.
pub extern "C" fn nec_get_dynamic_send_offset_bytes(
    dyn_input: *mut c_void,
    _data_type_sz: usize,
    _dst_rank: c_int,
    _rank_n: c_int,
) -> usize {
    value(
        "nec_get_dynamic_send_offset_bytes",
        0,
        &[(c(dyn_input), "dyn_input")],
        NO_NEC,
    )
}

/// `nec_get_dynamic_recv_offset_bytes`: 0.
pub extern "C" fn nec_get_dynamic_recv_offset_bytes(
    dyn_input: *mut c_void,
    _data_type_sz: usize,
    _src_rank: c_int,
    _rank_n: c_int,
) -> usize {
    value(
        "nec_get_dynamic_recv_offset_bytes",
        0,
        &[(c(dyn_input), "dyn_input")],
        NO_NEC,
    )
}

/// `nec_set_recv_size_bytes`.
pub extern "C" fn nec_set_recv_size_bytes(
    dyn_input: *mut c_void,
    _recv_size_bytes: usize,
    _data_type_sz: usize,
    _src_rank: c_int,
    _rank_n: c_int,
) {
    value(
        "nec_set_recv_size_bytes",
        (),
        &[(c(dyn_input), "dyn_input")],
        NO_NEC,
    )
}

/// `nec_get_device_count`: -1.
pub extern "C" fn nec_get_device_count(
    available_devices_array: *mut c_int,
    _array_size: u32,
) -> c_int {
    value(
        "nec_get_device_count",
        -1,
        &[(c(available_devices_array), "available_devices_array")],
        NO_NEC,
    )
}

/// `nec_get_device_pci_bdf`: -1.
pub extern "C" fn nec_get_device_pci_bdf(
    _neuron_dev: c_int,
    domain: *mut u32,
    bus_num: *mut u32,
    pci_slot: *mut u8,
    dev_func: *mut u8,
) -> c_int {
    value(
        "nec_get_device_pci_bdf",
        -1,
        &[
            (c(domain), "domain"),
            (c(bus_num), "bus_num"),
            (c(pci_slot), "pci_slot"),
            (c(dev_func), "dev_func"),
        ],
        NO_NEC,
    )
}

/// `nec_get_virtual_core_size`: `NRT_FAILURE`.
pub extern "C" fn nec_get_virtual_core_size(virtual_core_size: *mut u32) -> NrtStatusC {
    status(
        "nec_get_virtual_core_size",
        &[(c(virtual_core_size), "virtual_core_size")],
        NO_NEC,
    )
}

/// `nec_get_version_info`: `NRT_FAILURE`.
pub extern "C" fn nec_get_version_info(version_info: *mut c_void) -> NrtStatusC {
    status(
        "nec_get_version_info",
        &[(c(version_info), "version_info")],
        NO_NEC,
    )
}

/// `nec_build_port_and_rid_map`: `NRT_FAILURE`.
pub extern "C" fn nec_build_port_and_rid_map(
    _local_nec_dev_id: c_int,
    mla_indexes: *mut c_int,
    host_device_ids: *mut c_int,
    _count: c_int,
) -> NrtStatusC {
    status(
        "nec_build_port_and_rid_map",
        &[
            (c(mla_indexes), "mla_indexes"),
            (c(host_device_ids), "host_device_ids"),
        ],
        NO_NEC,
    )
}

/// `nec_is_mla_available`: false.
pub extern "C" fn nec_is_mla_available(_local_nec_dev_id: c_int, _mla_idx: c_int) -> bool {
    value("nec_is_mla_available", false, &[], NO_NEC)
}

/// `nec_mla_idx_to_rid`: -1.
pub extern "C" fn nec_mla_idx_to_rid(_local_nec_dev_id: c_int, _mla_idx: c_int) -> c_int {
    value("nec_mla_idx_to_rid", -1, &[], NO_NEC)
}

/// `nec_rid_to_mla_idx`: -1.
pub extern "C" fn nec_rid_to_mla_idx(_local_nec_dev_id: c_int, _rid: c_int) -> c_int {
    value("nec_rid_to_mla_idx", -1, &[], NO_NEC)
}

/// `nec_get_peer_mla_idx`: -1.
pub extern "C" fn nec_get_peer_mla_idx(
    _local_nec_dev_id: c_int,
    _mla_idx: c_int,
    _port: c_int,
) -> c_int {
    value("nec_get_peer_mla_idx", -1, &[], NO_NEC)
}

/// `nec_get_p2p_pod_peer_node`: -1.
pub extern "C" fn nec_get_p2p_pod_peer_node(
    _nec_dev_id: u32,
    _node: c_int,
    _port_distance: u32,
    peer_node: *mut c_int,
) -> c_int {
    value(
        "nec_get_p2p_pod_peer_node",
        -1,
        &[(c(peer_node), "peer_node")],
        NO_NEC,
    )
}

/// `nec_pod_node_can_access_peer_node`: `NRT_FAILURE`.
pub extern "C" fn nec_pod_node_can_access_peer_node(
    _pod_type: u32,
    _local_rid: u32,
    _local_node_id: u32,
    _remote_rid: u32,
    _remote_node_id: u32,
    can_access_peer: *mut c_int,
) -> NrtStatusC {
    status(
        "nec_pod_node_can_access_peer_node",
        &[(c(can_access_peer), "can_access_peer")],
        NO_NEC,
    )
}

/// `nec_ndl_printk`.
pub extern "C" fn nec_ndl_printk(str_: *mut c_char, _size: u32, _action: u32) {
    value("nec_ndl_printk", (), &[(c(str_), "str")], NO_NEC)
}

// ---- nrt/nrt_async_sendrecv.h ----

/// `nrt_async_sendrecv_get_max_num_communicators_per_lnc`: `NRT_FAILURE`.
pub extern "C" fn nrt_async_sendrecv_get_max_num_communicators_per_lnc(
    num: *mut c_int,
) -> NrtStatusC {
    status(
        "nrt_async_sendrecv_get_max_num_communicators_per_lnc",
        &[(c(num), "num")],
        NO_SENDRECV,
    )
}

/// `nrt_async_sendrecv_get_max_num_pending_request`: `NRT_FAILURE`.
pub extern "C" fn nrt_async_sendrecv_get_max_num_pending_request(num: *mut c_int) -> NrtStatusC {
    status(
        "nrt_async_sendrecv_get_max_num_pending_request",
        &[(c(num), "num")],
        NO_SENDRECV,
    )
}

/// `nrt_async_sendrecv_init`: `NRT_FAILURE`.
pub extern "C" fn nrt_async_sendrecv_init(_lnc: c_int) -> NrtStatusC {
    status("nrt_async_sendrecv_init", &[], NO_SENDRECV)
}

/// `nrt_async_sendrecv_close`: `NRT_FAILURE`.
pub extern "C" fn nrt_async_sendrecv_close(_lnc: c_int) -> NrtStatusC {
    status("nrt_async_sendrecv_close", &[], NO_SENDRECV)
}

/// `nrt_async_sendrecv_connect`: `NRT_FAILURE`.
pub extern "C" fn nrt_async_sendrecv_connect(
    peer_ip: *const c_char,
    _peer_lnc: c_int,
    _lnc: c_int,
    send_comm: *mut *mut c_void,
) -> NrtStatusC {
    status(
        "nrt_async_sendrecv_connect",
        &[(c(peer_ip), "peer_ip"), (c(send_comm), "send_comm")],
        NO_SENDRECV,
    )
}

/// `nrt_async_sendrecv_accept`: `NRT_FAILURE`.
pub extern "C" fn nrt_async_sendrecv_accept(
    peer_ip: *const c_char,
    _peer_lnc: c_int,
    _lnc: c_int,
    recv_comm: *mut *mut c_void,
) -> NrtStatusC {
    status(
        "nrt_async_sendrecv_accept",
        &[(c(peer_ip), "peer_ip"), (c(recv_comm), "recv_comm")],
        NO_SENDRECV,
    )
}

/// `nrt_async_sendrecv_test_comm`: `NRT_FAILURE`.
pub extern "C" fn nrt_async_sendrecv_test_comm(comm: *mut c_void, done: *mut bool) -> NrtStatusC {
    status(
        "nrt_async_sendrecv_test_comm",
        &[(c(comm), "comm"), (c(done), "done")],
        NO_SENDRECV,
    )
}

/// `nrt_async_sendrecv_send_tensor`: `NRT_FAILURE`.
pub extern "C" fn nrt_async_sendrecv_send_tensor(
    tensor: *mut c_void,
    _offset: usize,
    _length: usize,
    send_comm: *mut c_void,
    request: *mut *mut c_void,
) -> NrtStatusC {
    status(
        "nrt_async_sendrecv_send_tensor",
        &[
            (c(tensor), "tensor"),
            (c(send_comm), "send_comm"),
            (c(request), "request"),
        ],
        NO_SENDRECV,
    )
}

/// `nrt_async_sendrecv_recv_tensor`: `NRT_FAILURE`.
pub extern "C" fn nrt_async_sendrecv_recv_tensor(
    tensor: *mut c_void,
    _offset: usize,
    _length: usize,
    recv_comm: *mut c_void,
    request: *mut *mut c_void,
) -> NrtStatusC {
    status(
        "nrt_async_sendrecv_recv_tensor",
        &[
            (c(tensor), "tensor"),
            (c(recv_comm), "recv_comm"),
            (c(request), "request"),
        ],
        NO_SENDRECV,
    )
}

/// `nrt_async_sendrecv_test_request`: `NRT_FAILURE`.
pub extern "C" fn nrt_async_sendrecv_test_request(
    request: *mut c_void,
    done: *mut bool,
    size: *mut usize,
) -> NrtStatusC {
    status(
        "nrt_async_sendrecv_test_request",
        &[
            (c(request), "request"),
            (c(done), "done"),
            (c(size), "size"),
        ],
        NO_SENDRECV,
    )
}

/// `nrt_async_sendrecv_flush`: `NRT_FAILURE`.
pub extern "C" fn nrt_async_sendrecv_flush(_lnc: c_int) -> NrtStatusC {
    status("nrt_async_sendrecv_flush", &[], NO_SENDRECV)
}

// ---- nrt/ndebug_stream.h ----

/// `nrt_debug_client_connect`: `NRT_FAILURE`.
pub extern "C" fn nrt_debug_client_connect(
    _logical_nc_idx: c_int,
    stream_fd: *mut c_int,
) -> NrtStatusC {
    status(
        "nrt_debug_client_connect",
        &[(c(stream_fd), "stream_fd")],
        NO_DEBUG_STREAM,
    )
}

/// `nrt_debug_client_connect_close`: no fd was ever handed out, so every fd is refused.
pub extern "C" fn nrt_debug_client_connect_close(stream_fd: c_int) {
    guard::void("nrt_debug_client_connect_close", || {
        Err(Error::invalid(format!(
            "fd {stream_fd} is not a debug stream: {NO_DEBUG_STREAM}"
        )))
    })
}

/// `nrt_debug_client_read_one_event`: `NRT_INVALID` (no fd was ever handed out).
pub extern "C" fn nrt_debug_client_read_one_event(
    stream_fd: c_int,
    header: *mut c_void,
    payload: *mut *mut c_void,
) -> NrtStatusC {
    guard::status("nrt_debug_client_read_one_event", || {
        if header.is_null() {
            return Err(crate::ptr::null("header"));
        }
        if payload.is_null() {
            return Err(crate::ptr::null("payload"));
        }
        Err(Error::new(
            NrtStatus::Invalid,
            format!("fd {stream_fd} is not a debug stream: {NO_DEBUG_STREAM}"),
        ))
    })
}
