//! NULL in every pointer argument of every exported function.
//!
//! [`TABLE`] has one entry per exported function (checked against the export table, so a new
//! function without an entry fails) listing its pointer parameters in header order (checked
//! against the prototypes in the headers, so a parameter cannot be left out). Each function is
//! called once per pointer parameter with that one NULL and every other argument valid, in one
//! session; the call must not crash and must answer as its entry says:
//!
//! * [`Null`]: the call is refused with `NRT_INVALID` (or, for a function that returns no
//!   status, its error value) and exactly one log line, naming the argument;
//! * [`Ok`]: NULL is documented as allowed here (an optional name, an optional out-parameter,
//!   "NULL = defaults", freeing NULL) and no line calls it NULL.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{c_char, c_void};

use nrt::api::{absent, device, exec, lifecycle, model, nrta, profile, set, tensor, trace};

/// What NULL in a parameter must do.
#[derive(Debug, Clone, Copy)]
enum Expect {
    /// Refused: this return value (`NRT_INVALID` = 2 for a status) and one line naming it.
    Null(i64),
    /// Allowed.
    Ok,
}
use Expect::{Null, Ok};

const INVALID: i64 = 2;
const N: Expect = Null(INVALID);
/// A `void` function: nothing returned, one line.
const V: Expect = Null(0);

/// Valid arguments for every call.
struct Fx {
    neff: Vec<u8>,
    model: *mut c_void,
    tensor: *mut c_void,
    empty: *mut c_void,
    set_in: *mut c_void,
    set_out: *mut c_void,
    tracker: *mut c_void,
    inspect: *mut c_void,
    continuous: *mut c_void,
    trace_cfg: *mut c_void,
    fetch: *mut c_void,
    va: *mut c_void,
    dir: std::path::PathBuf,
}

/// A fresh zeroed, 8-aligned, writable block (512 bytes) for an out-parameter; leaked (the
/// library may keep writing handles into it only during the call).
fn out<T>() -> *mut T {
    Box::into_raw(Box::new([0u64; 64])).cast()
}

/// `p`, or NULL when `param` is the one being tested.
fn p<T>(null: &str, param: &str, p: *mut T) -> *mut T {
    if null == param {
        std::ptr::null_mut()
    } else {
        p
    }
}

/// A const pointer, or NULL when `param` is the one being tested.
fn c<T>(null: &str, param: &str, p: *const T) -> *const T {
    if null == param {
        std::ptr::null()
    } else {
        p
    }
}

/// A string argument.
fn s(null: &str, param: &str, v: &'static std::ffi::CStr) -> *const c_char {
    c(null, param, v.as_ptr())
}

unsafe extern "C" fn callback(_: *mut c_void, _: u32, _: u32, _: u64, _: u32) {}

type Call = fn(&Fx, &str) -> i64;

/// `(function, [(pointer parameter, expectation)], call)`.
type Entry = (&'static str, &'static [(&'static str, Expect)], Call);

fn path(fx: &Fx, name: &str) -> &'static std::ffi::CStr {
    let s = std::ffi::CString::new(fx.dir.join(name).to_str().unwrap()).unwrap();
    Box::leak(s.into_boxed_c_str())
}

// SAFETY (for every call below): each pointer is NULL, a handle of this library, or a fresh
// writable block from `out` (512 bytes, enough for every out-parameter), and buffers passed
// with a size hold at least that many bytes.
#[rustfmt::skip]
const TABLE: &[Entry] = &[
    // nrt.h, nrt_status.h, nrt_version.h: lifecycle
    ("nrt_init", &[("fw_version", Ok), ("fal_version", Ok)], |_, n| unsafe {
        lifecycle::nrt_close();
        lifecycle::reset_for_tests();
        lifecycle::nrt_init(1, s(n, "fw_version", c""), s(n, "fal_version", c"")) as i64
    }),
    ("nrt_close", &[], |_, _| 0),
    ("nrt_get_status_as_str", &[], |_, _| 0),
    ("nrt_get_version", &[("ver", N)], |_, n| unsafe { lifecycle::nrt_get_version(p(n, "ver", out()), 224) as i64 }),
    ("nrt_get_instance_info", &[("info", N)], |_, n| unsafe { lifecycle::nrt_get_instance_info(p(n, "info", out()), 32) as i64 }),
    ("nrt_get_total_vnc_count", &[("vnc_count", N)], |_, n| unsafe { lifecycle::nrt_get_total_vnc_count(p(n, "vnc_count", out())) as i64 }),
    ("nrt_get_total_nc_count", &[("vnc_count", N)], |_, n| unsafe { lifecycle::nrt_get_total_nc_count(p(n, "vnc_count", out())) as i64 }),
    ("nrt_get_visible_vnc_count", &[("vnc_count", N)], |_, n| unsafe { lifecycle::nrt_get_visible_vnc_count(p(n, "vnc_count", out())) as i64 }),
    ("nrt_get_visible_nc_count", &[("vnc_count", N)], |_, n| unsafe { lifecycle::nrt_get_visible_nc_count(p(n, "vnc_count", out())) as i64 }),
    // models
    ("nrt_load", &[("neff_bytes", N), ("model", N)], |f, n| unsafe {
        model::nrt_load(c(n, "neff_bytes", f.neff.as_ptr().cast()), f.neff.len(), -1, -1, p(n, "model", out())) as i64
    }),
    ("nrt_load_collectives", &[("neff_bytes", N), ("model", N)], |f, n| unsafe {
        model::nrt_load_collectives(c(n, "neff_bytes", f.neff.as_ptr().cast()), f.neff.len(), -1, -1, 0, 1, p(n, "model", out())) as i64
    }),
    ("nrt_unload", &[("model", N)], |f, n| model::nrt_unload(p(n, "model", f.model)) as i64),
    ("nrt_get_model_vnc_count", &[("model", N), ("vnc_count", N)], |f, n| unsafe {
        model::nrt_get_model_vnc_count(c(n, "model", f.model), p(n, "vnc_count", out())) as i64
    }),
    ("nrt_get_model_nc_count", &[("model", N), ("vnc_count", N)], |f, n| unsafe {
        model::nrt_get_model_nc_count(c(n, "model", f.model), p(n, "vnc_count", out())) as i64
    }),
    ("nrt_get_model_instance_count", &[("model", N), ("instance_count", N)], |f, n| unsafe {
        model::nrt_get_model_instance_count(p(n, "model", f.model), p(n, "instance_count", out())) as i64
    }),
    ("nrt_get_model_info", &[("model", N), ("info", N), ("info_size_out", Ok)], |f, n| unsafe {
        model::nrt_get_model_info(c(n, "model", f.model), p(n, "info", out()), 4, p(n, "info_size_out", out())) as i64
    }),
    ("nrt_get_model_tensor_info", &[("model", N), ("tensor_info", N)], |f, n| unsafe {
        model::nrt_get_model_tensor_info(p(n, "model", f.model), p(n, "tensor_info", out())) as i64
    }),
    ("nrt_free_model_tensor_info", &[("tensor_info", N)], |_, n| unsafe {
        model::nrt_free_model_tensor_info(p(n, "tensor_info", out())) as i64
    }),
    // tensor sets
    ("nrt_allocate_tensor_set", &[("result", N)], |_, n| unsafe { set::nrt_allocate_tensor_set(p(n, "result", out())) as i64 }),
    ("nrt_destroy_tensor_set", &[("tensor_set", V)], |_, n| unsafe {
        set::nrt_destroy_tensor_set(p(n, "tensor_set", out()));
        0
    }),
    ("nrt_add_tensor_to_tensor_set", &[("tensor_set", N), ("tensor_name", N), ("tensor", N)], |f, n| unsafe {
        set::nrt_add_tensor_to_tensor_set(p(n, "tensor_set", f.set_out), s(n, "tensor_name", c"extra"), p(n, "tensor", f.tensor)) as i64
    }),
    ("nrt_get_tensor_from_tensor_set", &[("tensor_set", N), ("tensor_name", N), ("tensor", N)], |f, n| unsafe {
        set::nrt_get_tensor_from_tensor_set(p(n, "tensor_set", f.set_in), s(n, "tensor_name", c"a"), p(n, "tensor", out())) as i64
    }),
    // execution
    ("nrt_execute", &[("model", N), ("input_set", N), ("output_set", N)], |f, n| {
        exec::nrt_execute(p(n, "model", f.model), c(n, "input_set", f.set_in), p(n, "output_set", f.set_out)) as i64
    }),
    ("nrt_execute_repeat", &[("model", N), ("input_set", N), ("output_set", N)], |f, n| {
        exec::nrt_execute_repeat(p(n, "model", f.model), c(n, "input_set", f.set_in), p(n, "output_set", f.set_out), 2) as i64
    }),
    ("nrt_register_async_exec_callback", &[("callback", Ok), ("params", Ok)], |f, n| {
        let cb: nrt::types::AsyncExecCallback = if n == "callback" { None } else { Some(callback) };
        exec::nrt_register_async_exec_callback(cb, p(n, "params", f.va)) as i64
    }),
    ("nrt_async_drain_queued_execs", &[], |_, _| 0),
    // tensors
    ("nrt_tensor_allocate", &[("name", Ok), ("tensor", N)], |_, n| unsafe {
        tensor::nrt_tensor_allocate(0, 0, 64, s(n, "name", c"t"), p(n, "tensor", out())) as i64
    }),
    ("nrt_tensor_free", &[("tensor", V)], |_, n| unsafe {
        tensor::nrt_tensor_free(p(n, "tensor", out()));
        0
    }),
    ("nrt_tensor_read", &[("tensor", N), ("buf", N)], |f, n| unsafe {
        tensor::nrt_tensor_read(c(n, "tensor", f.tensor), p(n, "buf", out()), 0, 16) as i64
    }),
    ("nrt_tensor_write", &[("tensor", N), ("buf", N)], |f, n| unsafe {
        tensor::nrt_tensor_write(p(n, "tensor", f.tensor), c(n, "buf", out::<c_void>()), 0, 16) as i64
    }),
    ("nrt_tensor_read_batch", &[("batches", N)], |_, n| unsafe {
        tensor::nrt_tensor_read_batch(c(n, "batches", out()), 1, false) as i64
    }),
    ("nrt_tensor_write_batch", &[("batches", N)], |_, n| unsafe {
        tensor::nrt_tensor_write_batch(c(n, "batches", out()), 1, false) as i64
    }),
    ("nrt_tensor_copy", &[("src", N), ("dst", N)], |f, n| {
        tensor::nrt_tensor_copy(c(n, "src", f.tensor), 0, p(n, "dst", f.tensor), 128, 16) as i64
    }),
    ("nrt_tensor_get_size", &[("tensor", Null(0))], |f, n| { tensor::nrt_tensor_get_size(c(n, "tensor", f.tensor)) as i64 }),
    ("nrt_tensor_memset", &[("tensor", N)], |f, n| { tensor::nrt_tensor_memset(p(n, "tensor", f.tensor), 0, 0, 16) as i64 }),
    ("nrt_tensor_allocate_empty", &[("name", Ok), ("tensor", N)], |_, n| unsafe {
        tensor::nrt_tensor_allocate_empty(s(n, "name", c"e"), p(n, "tensor", out())) as i64
    }),
    ("nrt_tensor_attach_buffer", &[("tensor", N), ("buffer", N)], |f, n| unsafe {
        tensor::nrt_tensor_attach_buffer(p(n, "tensor", f.empty), p(n, "buffer", out()), 64) as i64
    }),
    ("nrt_tensor_allocate_slice", &[("tensor_source", N), ("name", Ok), ("tensor_slice", N)], |f, n| unsafe {
        tensor::nrt_tensor_allocate_slice(c(n, "tensor_source", f.tensor), 0, 16, s(n, "name", c"sl"), p(n, "tensor_slice", out())) as i64
    }),
    ("nrt_tensor_get_va", &[("tensor", Null(0))], |f, n| { tensor::nrt_tensor_get_va(c(n, "tensor", f.tensor)) as i64 }),
    ("nrt_tensor_get_device_allocation_info", &[("tensor", N), ("alloc_info", N)], |f, n| unsafe {
        tensor::nrt_tensor_get_device_allocation_info(c(n, "tensor", f.tensor), p(n, "alloc_info", out())) as i64
    }),
    ("nrt_tensor_check_output_completion", &[("output_tensor", N)], |f, n| {
        tensor::nrt_tensor_check_output_completion(c(n, "output_tensor", f.tensor), 0, 0) as i64
    }),
    ("nrt_tensor_reset_output_completion", &[("output_tensor", N)], |f, n| {
        tensor::nrt_tensor_reset_output_completion(p(n, "output_tensor", f.tensor)) as i64
    }),
    // collectives, device and memory
    ("nrt_build_global_comm", &[], |_, _| 0),
    ("nrt_cc_global_comm_init", &[], |_, _| 0),
    ("nrt_barrier", &[], |_, _| 0),
    ("nrt_all_gather", &[("input", N), ("output", N)], |_, n| unsafe {
        device::nrt_all_gather(0, 0, 1, 8, p(n, "input", out()), p(n, "output", out())) as i64
    }),
    ("nrt_get_libnccl_net", &[("err", Ok), ("err_msg", Ok)], |_, n| unsafe {
        device::nrt_get_libnccl_net(p(n, "err", out()), p(n, "err_msg", out()), 64) as i64
    }),
    ("nrt_get_vnc_memory_stats", &[("stats", N), ("stats_size_out", Ok)], |_, n| unsafe {
        device::nrt_get_vnc_memory_stats(0, p(n, "stats", out()), 16, p(n, "stats_size_out", out())) as i64
    }),
    ("nrt_get_hbm_mmap_va", &[("addr", N), ("size", N)], |_, n| {
        device::nrt_get_hbm_mmap_va(0, 0, p(n, "addr", out()), p(n, "size", out())) as i64
    }),
    ("nrt_get_dmabuf_fd", &[("fd", N)], |_, n| device::nrt_get_dmabuf_fd(0, 16, p(n, "fd", out())) as i64),
    ("nrt_host_device_id_get", &[("host_device_id", N)], |_, n| unsafe {
        device::nrt_host_device_id_get(0, p(n, "host_device_id", out())) as i64
    }),
    ("nrt_host_device_id_rid_map_get", &[("count", N), ("host_did_to_rid_map", N)], |_, n| unsafe {
        let count = out::<u32>();
        *count = 4;
        device::nrt_host_device_id_rid_map_get(p(n, "count", count), p(n, "host_did_to_rid_map", out())) as i64
    }),
    ("nrt_get_attached_efa_bdf", &[("va", N), ("efa_bdf", N), ("len", N)], |f, n| unsafe {
        let len = out::<usize>();
        *len = 64;
        device::nrt_get_attached_efa_bdf(c(n, "va", f.va), p(n, "efa_bdf", out()), p(n, "len", len)) as i64
    }),
    ("nrt_set_pool_eng_ucode", &[("ucode_info", N)], |_, n| unsafe {
        device::nrt_set_pool_eng_ucode(c(n, "ucode_info", out())) as i64
    }),
    ("nrt_memcpy_to_device", &[("dest", N), ("src", N)], |f, n| unsafe {
        device::nrt_memcpy_to_device(p(n, "dest", f.va), c(n, "src", out::<c_void>()), 4) as i64
    }),
    // nrt_experimental.h: traces
    ("nrt_trace_start", &[], |_, _| 0),
    ("nrt_trace_stop", &[("filename", N)], |f, n| unsafe {
        trace::nrt_trace_stop(s(n, "filename", path(f, "trace.json"))) as i64
    }),
    // nrt_async.h
    ("nrta_tensor_write", &[("tensor", N), ("buf", N), ("err", Ok), ("req_sequence", N)], |f, n| unsafe {
        nrta::nrta_tensor_write(p(n, "tensor", f.tensor), c(n, "buf", out::<c_void>()), 0, 16, 0, p(n, "err", f.tracker), p(n, "req_sequence", out())) as i64
    }),
    ("nrta_tensor_read", &[("buf", N), ("tensor", N), ("err", Ok), ("req_sequence", N)], |f, n| unsafe {
        nrta::nrta_tensor_read(p(n, "buf", out()), p(n, "tensor", f.tensor), 0, 16, 0, p(n, "err", f.tracker), p(n, "req_sequence", out())) as i64
    }),
    ("nrta_tensor_copy", &[("src", N), ("dst", N), ("err", Ok), ("req_sequence", N)], |f, n| unsafe {
        nrta::nrta_tensor_copy(p(n, "src", f.tensor), 0, p(n, "dst", f.tensor), 128, 16, 0, p(n, "err", f.tracker), p(n, "req_sequence", out())) as i64
    }),
    ("nrta_execute_schedule", &[("model", N), ("input", N), ("output", N), ("err", Ok), ("req_sequence", N)], |f, n| unsafe {
        nrta::nrta_execute_schedule(p(n, "model", f.model), c(n, "input", f.set_in), p(n, "output", f.set_out), 0, p(n, "err", f.tracker), p(n, "req_sequence", out())) as i64
    }),
    ("nrta_cc_prepare", &[("comm", N), ("input", N), ("output", N), ("cc_ctx", N)], |_, n| {
        nrta::nrta_cc_prepare(p(n, "comm", out()), p(n, "input", out()), p(n, "output", out()), 10, 0, 1, p(n, "cc_ctx", out())) as i64
    }),
    ("nrta_cc_schedule", &[("cc_ctx", N), ("err", Ok), ("req_sequence", N)], |f, n| {
        nrta::nrta_cc_schedule(p(n, "cc_ctx", out()), 0, p(n, "err", f.tracker), p(n, "req_sequence", out())) as i64
    }),
    ("nrta_is_completed", &[("is_completed", N)], |_, n| unsafe {
        nrta::nrta_is_completed(1 << 48 | 1, p(n, "is_completed", out())) as i64
    }),
    ("nrta_get_sequence", &[("seq", N)], |_, n| unsafe { nrta::nrta_get_sequence(0, 1, 0, p(n, "seq", out())) as i64 }),
    ("nrta_get_completion_handle", &[("fd", N)], |_, n| unsafe {
        nrta::nrta_get_completion_handle(1 << 48 | 1, p(n, "fd", out())) as i64
    }),
    ("nrta_error_tracker_create", &[("error_tracker", N)], |_, n| unsafe {
        nrta::nrta_error_tracker_create(0, p(n, "error_tracker", out())) as i64
    }),
    ("nrta_error_tracker_destroy", &[("error_tracker", V)], |_, n| {
        nrta::nrta_error_tracker_destroy(p(n, "error_tracker", out()));
        0
    }),
    ("nrta_error_tracker_get_list", &[("error_tracker", N), ("list", N), ("error_count", N)], |f, n| unsafe {
        nrta::nrta_error_tracker_get_list(p(n, "error_tracker", f.tracker), p(n, "list", out()), p(n, "error_count", out())) as i64
    }),
    // nrt_profile.h
    ("nrt_profile_start", &[("model", N), ("filename", N)], |f, n| unsafe {
        profile::nrt_profile_start(p(n, "model", f.model), s(n, "filename", path(f, "profile.json"))) as i64
    }),
    ("nrt_profile_stop", &[("filename", N)], |f, n| unsafe {
        profile::nrt_profile_stop(s(n, "filename", path(f, "profile.json"))) as i64
    }),
    ("nrt_profile_continuous_options_allocate", &[("options", N)], |_, n| unsafe {
        profile::nrt_profile_continuous_options_allocate(p(n, "options", out())) as i64
    }),
    ("nrt_profile_continuous_options_free", &[("options", N)], |_, n| {
        profile::nrt_profile_continuous_options_free(p(n, "options", out())) as i64
    }),
    ("nrt_profile_continuous_options_set_output_dir", &[("options", N), ("output_dir", N)], |f, n| unsafe {
        profile::nrt_profile_continuous_options_set_output_dir(p(n, "options", f.continuous), s(n, "output_dir", path(f, "cont"))) as i64
    }),
    ("nrt_profile_continuous_start", &[("options", N)], |_, n| profile::nrt_profile_continuous_start(p(n, "options", out())) as i64),
    ("nrt_profile_continuous_save", &[("options", N)], |_, n| profile::nrt_profile_continuous_save(0, p(n, "options", out())) as i64),
    ("nrt_profile_continuous_stop", &[], |_, _| 0),
    ("nrt_inspect_begin", &[], |_, _| 0),
    ("nrt_inspect_stop", &[], |_, _| 0),
    ("nrt_inspect_config_allocate", &[("options", N)], |_, n| unsafe { profile::nrt_inspect_config_allocate(p(n, "options", out())) as i64 }),
    ("nrt_inspect_config_set_defaults", &[("options", N)], |_, n| profile::nrt_inspect_config_set_defaults(p(n, "options", out())) as i64),
    ("nrt_inspect_config_free", &[("options", N)], |_, n| profile::nrt_inspect_config_free(p(n, "options", out())) as i64),
    ("nrt_inspect_config_set_session_id", &[("options", N)], |_, n| profile::nrt_inspect_config_set_session_id(p(n, "options", out()), 3) as i64),
    ("nrt_inspect_config_set_output_dir", &[("options", N), ("output_dir", N)], |f, n| unsafe {
        profile::nrt_inspect_config_set_output_dir(p(n, "options", f.inspect), s(n, "output_dir", path(f, "inspect"))) as i64
    }),
    ("nrt_inspect_config_set_sys_trace_max_events_per_nc", &[("options", N)], |_, n| {
        profile::nrt_inspect_config_set_sys_trace_max_events_per_nc(p(n, "options", out()), 10) as i64
    }),
    ("nrt_inspect_config_set_capture_enabled_for_nc", &[("options", N)], |_, n| {
        profile::nrt_inspect_config_set_capture_enabled_for_nc(p(n, "options", out()), 0, true) as i64
    }),
    ("nrt_inspect_config_set_capture_enabled_for_event_type_string", &[("options", N), ("event_type", N)], |f, n| unsafe {
        profile::nrt_inspect_config_set_capture_enabled_for_event_type_string(p(n, "options", f.inspect), s(n, "event_type", c"nc_exec"), true) as i64
    }),
    ("nrt_inspect_config_set_enable_inspect", &[("options", N)], |_, n| {
        profile::nrt_inspect_config_set_enable_inspect(p(n, "options", out()), true) as i64
    }),
    ("nrt_inspect_config_set_enable_inspect_on_fail", &[("options", N)], |_, n| {
        profile::nrt_inspect_config_set_enable_inspect_on_fail(p(n, "options", out()), true) as i64
    }),
    ("nrt_inspect_begin_with_options", &[("options", Ok)], |_, n| {
        profile::nrt_inspect_begin_with_options(p(n, "options", out())) as i64
    }),
    ("nrt_inspect_config_get_all_activity_types", &[("activity_types", N), ("count", N)], |_, n| unsafe {
        profile::nrt_inspect_config_get_all_activity_types(p(n, "activity_types", out()), p(n, "count", out())) as i64
    }),
    ("nrt_inspect_config_get_enabled_activity_types", &[("options", N), ("activity_types", N), ("count", N)], |f, n| unsafe {
        profile::nrt_inspect_config_get_enabled_activity_types(p(n, "options", f.inspect), p(n, "activity_types", out()), p(n, "count", out())) as i64
    }),
    ("nrt_inspect_config_free_activity_types", &[("activity_types", Ok)], |_, n| unsafe {
        profile::nrt_inspect_config_free_activity_types(c(n, "activity_types", std::ptr::null()), 0);
        0
    }),
    ("nrt_inspect_config_set_activity", &[("options", N), ("activity_type", N)], |f, n| unsafe {
        profile::nrt_inspect_config_set_activity(p(n, "options", f.inspect), s(n, "activity_type", c"cpu_util"), true) as i64
    }),
    // nrt_sys_trace.h
    ("nrt_sys_trace_config_allocate", &[("options", N)], |_, n| unsafe { trace::nrt_sys_trace_config_allocate(p(n, "options", out())) as i64 }),
    ("nrt_sys_trace_config_set_defaults", &[("options", V)], |_, n| {
        trace::nrt_sys_trace_config_set_defaults(p(n, "options", out()));
        0
    }),
    ("nrt_sys_trace_config_free", &[("options", V)], |_, n| {
        trace::nrt_sys_trace_config_free(p(n, "options", out()));
        0
    }),
    ("nrt_sys_trace_config_set_max_events_per_nc", &[("options", V)], |_, n| {
        trace::nrt_sys_trace_config_set_max_events_per_nc(p(n, "options", out()), 5);
        0
    }),
    ("nrt_sys_trace_config_set_capture_enabled_for_nc", &[("options", V)], |_, n| {
        trace::nrt_sys_trace_config_set_capture_enabled_for_nc(p(n, "options", out()), 0, true);
        0
    }),
    ("nrt_sys_trace_config_set_capture_enabled_for_event_type", &[("options", N), ("event_type", N)], |f, n| unsafe {
        trace::nrt_sys_trace_config_set_capture_enabled_for_event_type(p(n, "options", f.trace_cfg), s(n, "event_type", c"nc_exec"), true) as i64
    }),
    ("nrt_sys_trace_get_event_types", &[("event_types", N), ("count", N)], |_, n| unsafe {
        trace::nrt_sys_trace_get_event_types(p(n, "event_types", out()), p(n, "count", out())) as i64
    }),
    ("nrt_sys_trace_free_event_types", &[("event_types", Ok)], |_, n| unsafe {
        trace::nrt_sys_trace_free_event_types(c(n, "event_types", std::ptr::null()), 0);
        0
    }),
    ("nrt_sys_trace_config_get_enabled_event_types", &[("options", N), ("event_types", N), ("count", N)], |f, n| unsafe {
        trace::nrt_sys_trace_config_get_enabled_event_types(p(n, "options", f.trace_cfg), p(n, "event_types", out()), p(n, "count", out())) as i64
    }),
    ("nrt_sys_trace_start", &[("options", Ok)], |_, n| trace::nrt_sys_trace_start(p(n, "options", out())) as i64),
    ("nrt_sys_trace_stop", &[], |_, _| 0),
    ("nrt_sys_trace_fetch_options_allocate", &[("options", N)], |_, n| unsafe {
        trace::nrt_sys_trace_fetch_options_allocate(p(n, "options", out())) as i64
    }),
    ("nrt_sys_trace_fetch_options_set_defaults", &[("options", V)], |_, n| {
        trace::nrt_sys_trace_fetch_options_set_defaults(p(n, "options", out()));
        0
    }),
    ("nrt_sys_trace_fetch_options_free", &[("options", V)], |_, n| {
        trace::nrt_sys_trace_fetch_options_free(p(n, "options", out()));
        0
    }),
    ("nrt_sys_trace_fetch_options_set_max_events_per_nc", &[("options", V)], |_, n| {
        trace::nrt_sys_trace_fetch_options_set_max_events_per_nc(p(n, "options", out()), 5);
        0
    }),
    ("nrt_sys_trace_fetch_options_set_nc_idx", &[("options", V)], |_, n| {
        trace::nrt_sys_trace_fetch_options_set_nc_idx(p(n, "options", out()), 0);
        0
    }),
    ("nrt_sys_trace_fetch_events", &[("buffer", N), ("written_size", N), ("options", Ok)], |f, n| unsafe {
        trace::nrt_sys_trace_fetch_events(p(n, "buffer", out()), p(n, "written_size", out()), c(n, "options", f.fetch)) as i64
    }),
    ("nrt_sys_trace_buffer_free", &[("buffer", V)], |_, n| unsafe {
        trace::nrt_sys_trace_buffer_free(p(n, "buffer", out()));
        0
    }),
    // nec.h
    ("nec_inc_semaphore", &[("sem_inc_addr", V)], |_, n| {
        absent::nec_inc_semaphore(p(n, "sem_inc_addr", out()), 1);
        0
    }),
    ("nec_get_dynamic_send_size_bytes", &[("dyn_input", Null(0))], |_, n| absent::nec_get_dynamic_send_size_bytes(p(n, "dyn_input", out()), 4, 0, 1) as i64),
    ("nec_get_dynamic_send_offset_bytes", &[("dyn_input", Null(0))], |_, n| absent::nec_get_dynamic_send_offset_bytes(p(n, "dyn_input", out()), 4, 0, 1) as i64),
    ("nec_get_dynamic_recv_offset_bytes", &[("dyn_input", Null(0))], |_, n| absent::nec_get_dynamic_recv_offset_bytes(p(n, "dyn_input", out()), 4, 0, 1) as i64),
    ("nec_set_recv_size_bytes", &[("dyn_input", V)], |_, n| {
        absent::nec_set_recv_size_bytes(p(n, "dyn_input", out()), 4, 4, 0, 1);
        0
    }),
    ("nec_get_device_count", &[("available_devices_array", Null(-1))], |_, n| {
        absent::nec_get_device_count(p(n, "available_devices_array", out()), 4) as i64
    }),
    ("nec_get_device_pci_bdf", &[("domain", Null(-1)), ("bus_num", Null(-1)), ("pci_slot", Null(-1)), ("dev_func", Null(-1))], |_, n| {
        absent::nec_get_device_pci_bdf(0, p(n, "domain", out()), p(n, "bus_num", out()), p(n, "pci_slot", out()), p(n, "dev_func", out())) as i64
    }),
    ("nec_get_virtual_core_size", &[("virtual_core_size", N)], |_, n| absent::nec_get_virtual_core_size(p(n, "virtual_core_size", out())) as i64),
    ("nec_get_version_info", &[("version_info", N)], |_, n| absent::nec_get_version_info(p(n, "version_info", out())) as i64),
    ("nec_build_port_and_rid_map", &[("mla_indexes", N), ("host_device_ids", N)], |_, n| {
        absent::nec_build_port_and_rid_map(0, p(n, "mla_indexes", out()), p(n, "host_device_ids", out()), 1) as i64
    }),
    ("nec_is_mla_available", &[], |_, _| 0),
    ("nec_mla_idx_to_rid", &[], |_, _| 0),
    ("nec_rid_to_mla_idx", &[], |_, _| 0),
    ("nec_get_peer_mla_idx", &[], |_, _| 0),
    ("nec_get_p2p_pod_peer_node", &[("peer_node", Null(-1))], |_, n| absent::nec_get_p2p_pod_peer_node(0, 0, 1, p(n, "peer_node", out())) as i64),
    ("nec_pod_node_can_access_peer_node", &[("can_access_peer", N)], |_, n| {
        absent::nec_pod_node_can_access_peer_node(0, 0, 0, 0, 0, p(n, "can_access_peer", out())) as i64
    }),
    ("nec_ndl_printk", &[("str", V)], |_, n| {
        absent::nec_ndl_printk(p(n, "str", out()), 8, 0);
        0
    }),
    // nrt_async_sendrecv.h
    ("nrt_async_sendrecv_get_max_num_communicators_per_lnc", &[("num", N)], |_, n| {
        absent::nrt_async_sendrecv_get_max_num_communicators_per_lnc(p(n, "num", out())) as i64
    }),
    ("nrt_async_sendrecv_get_max_num_pending_request", &[("num", N)], |_, n| {
        absent::nrt_async_sendrecv_get_max_num_pending_request(p(n, "num", out())) as i64
    }),
    ("nrt_async_sendrecv_init", &[], |_, _| 0),
    ("nrt_async_sendrecv_close", &[], |_, _| 0),
    ("nrt_async_sendrecv_connect", &[("peer_ip", N), ("send_comm", N)], |_, n| {
        absent::nrt_async_sendrecv_connect(s(n, "peer_ip", c"10.0.0.1"), 0, 0, p(n, "send_comm", out())) as i64
    }),
    ("nrt_async_sendrecv_accept", &[("peer_ip", N), ("recv_comm", N)], |_, n| {
        absent::nrt_async_sendrecv_accept(s(n, "peer_ip", c"10.0.0.1"), 0, 0, p(n, "recv_comm", out())) as i64
    }),
    ("nrt_async_sendrecv_test_comm", &[("comm", N), ("done", N)], |_, n| {
        absent::nrt_async_sendrecv_test_comm(p(n, "comm", out()), p(n, "done", out())) as i64
    }),
    ("nrt_async_sendrecv_send_tensor", &[("tensor", N), ("send_comm", N), ("request", N)], |f, n| {
        absent::nrt_async_sendrecv_send_tensor(p(n, "tensor", f.tensor), 0, 16, p(n, "send_comm", out()), p(n, "request", out())) as i64
    }),
    ("nrt_async_sendrecv_recv_tensor", &[("tensor", N), ("recv_comm", N), ("request", N)], |f, n| {
        absent::nrt_async_sendrecv_recv_tensor(p(n, "tensor", f.tensor), 0, 16, p(n, "recv_comm", out()), p(n, "request", out())) as i64
    }),
    ("nrt_async_sendrecv_test_request", &[("request", N), ("done", N), ("size", N)], |_, n| {
        absent::nrt_async_sendrecv_test_request(p(n, "request", out()), p(n, "done", out()), p(n, "size", out())) as i64
    }),
    ("nrt_async_sendrecv_flush", &[], |_, _| 0),
    // ndebug_stream.h
    ("nrt_debug_client_connect", &[("stream_fd", N)], |_, n| absent::nrt_debug_client_connect(0, p(n, "stream_fd", out())) as i64),
    ("nrt_debug_client_connect_close", &[], |_, _| 0),
    ("nrt_debug_client_read_one_event", &[("header", N), ("payload", N)], |_, n| {
        absent::nrt_debug_client_read_one_event(3, p(n, "header", out()), p(n, "payload", out())) as i64
    }),
];

fn handle() -> *mut c_void {
    std::ptr::null_mut()
}

fn setup() -> Fx {
    let dir = crate::support::scratch("nulls");
    let neff = std::fs::read(crate::support::neff("add.trn2.neff")).unwrap();
    let mut fx = Fx {
        neff,
        model: handle(),
        tensor: handle(),
        empty: handle(),
        set_in: handle(),
        set_out: handle(),
        tracker: handle(),
        inspect: handle(),
        continuous: handle(),
        trace_cfg: handle(),
        fetch: handle(),
        va: handle(),
        dir,
    };
    // SAFETY: every pointer is a live local or the fixture's field.
    unsafe {
        assert_eq!(
            model::nrt_load(fx.neff.as_ptr().cast(), fx.neff.len(), 0, -1, &mut fx.model),
            0
        );
        assert_eq!(
            tensor::nrt_tensor_allocate(0, 0, 256, c"t".as_ptr(), &mut fx.tensor),
            0
        );
        assert_eq!(
            tensor::nrt_tensor_allocate_empty(c"e".as_ptr(), &mut fx.empty),
            0
        );
        fx.va = tensor::nrt_tensor_get_va(fx.tensor);
        assert!(!fx.va.is_null());
        assert_eq!(set::nrt_allocate_tensor_set(&mut fx.set_in), 0);
        assert_eq!(set::nrt_allocate_tensor_set(&mut fx.set_out), 0);
        for (name, set_) in [("a", fx.set_in), ("b", fx.set_in), ("out", fx.set_out)] {
            let mut t = handle();
            let cname = std::ffi::CString::new(name).unwrap();
            assert_eq!(
                tensor::nrt_tensor_allocate(0, 0, 128 * 512 * 4, cname.as_ptr(), &mut t),
                0
            );
            assert_eq!(
                set::nrt_add_tensor_to_tensor_set(set_, cname.as_ptr(), t),
                0
            );
        }
        assert_eq!(nrta::nrta_error_tracker_create(0, &mut fx.tracker), 0);
        assert_eq!(profile::nrt_inspect_config_allocate(&mut fx.inspect), 0);
        assert_eq!(
            profile::nrt_profile_continuous_options_allocate(&mut fx.continuous),
            0
        );
        assert_eq!(trace::nrt_sys_trace_config_allocate(&mut fx.trace_cfg), 0);
        assert_eq!(
            trace::nrt_sys_trace_fetch_options_allocate(&mut fx.fetch),
            0
        );
    }
    fx
}

#[test]
fn the_table_covers_every_export_and_every_pointer_parameter() {
    let names: Vec<&str> = TABLE.iter().map(|e| e.0).collect();
    let set_: BTreeSet<&str> = names.iter().copied().collect();
    assert_eq!(set_.len(), names.len(), "a function is listed twice");
    let exported: BTreeSet<&str> = nrt::export::EXPORTED.iter().copied().collect();
    assert_eq!(
        set_, exported,
        "the table must list exactly the exported functions"
    );
    let declared = crate::exports::pointer_params();
    let table: BTreeMap<String, Vec<String>> = TABLE
        .iter()
        .map(|(n, ps, _)| (n.to_string(), ps.iter().map(|p| p.0.to_string()).collect()))
        .collect();
    for (name, ptrs) in &declared {
        assert_eq!(
            table.get(name),
            Some(ptrs),
            "{name}: the table's pointer parameters differ from the header's"
        );
    }
}

#[test]
fn null_in_every_pointer_argument_is_refused_naming_it() {
    let _g = crate::inprocess::SERIAL
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let mut failures = Vec::new();
    let mut calls = 0;
    let mut check = |fx: &Fx, (name, params, call): &Entry| {
        for (param, expect) in params.iter() {
            calls += 1;
            let (ret, lines) = nrt::log::capture(|| call(fx, param));
            let quoted = format!("`{param}`");
            let naming = lines.iter().filter(|l| l.contains(&quoted)).count();
            let ok = match expect {
                Null(want) => ret == *want && lines.len() == 1 && naming == 1,
                Ok => !lines
                    .iter()
                    .any(|l| l.contains(&quoted) && l.contains("NULL")),
            };
            if !ok {
                failures.push(format!(
                    "{name}({param} = NULL): returned {ret}, expected {expect:?}; lines: {lines:#?}"
                ));
            }
        }
    };
    lifecycle::reset_for_tests();
    let dummy = Fx {
        neff: Vec::new(),
        model: handle(),
        tensor: handle(),
        empty: handle(),
        set_in: handle(),
        set_out: handle(),
        tracker: handle(),
        inspect: handle(),
        continuous: handle(),
        trace_cfg: handle(),
        fetch: handle(),
        va: handle(),
        dir: std::env::temp_dir(),
    };
    // nrt_init first (it restarts the session); then every other function in one session.
    for e in TABLE.iter().filter(|e| e.0 == "nrt_init") {
        check(&dummy, e);
    }
    let fx = setup();
    for e in TABLE.iter().filter(|e| e.0 != "nrt_init") {
        check(&fx, e);
    }
    exec::nrt_register_async_exec_callback(None, std::ptr::null_mut());
    lifecycle::nrt_close();
    lifecycle::reset_for_tests();
    assert!(calls > 150, "{calls} calls");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
