//! The export table: every function of the headers, bound to symbol version `NRT_2.0.0`.
//!
//! Each C entry point is an ordinary Rust `extern "C"` function (so Rust callers — the fuzz
//! target, the benchmark — call exactly the code a C program reaches). The exported symbol is a
//! two-instruction stub, defined here in assembly, that tail-jumps to it; a `.symver` directive
//! in the same assembly names the stub `<function>@@NRT_2.0.0`, the default version of the
//! function. The stub's own name is global only so the assembler can version it; rustc's
//! version script makes it local, so the dynamic symbol table holds exactly the versioned names
//! (`capi/nrt.map` defines the version node, see build.rs).
//!
//! This is the one list of exported names: `tests/capi/exports.rs` checks it against the
//! declarations in `include/` and against `nm -D` of the built library.

/// Declares the versioned export stubs for `$name => $path` pairs and the list of names.
macro_rules! exports {
    ($($name:ident => $path:path),* $(,)?) => {
        /// Every exported function name, in table order.
        pub const EXPORTED: &[&str] = &[$(stringify!($name)),*];
        $(
            #[cfg(target_arch = "x86_64")]
            core::arch::global_asm!(
                concat!(".pushsection .text.nrt_export.", stringify!($name), ",\"ax\",@progbits"),
                ".p2align 4",
                concat!(".globl nrt_export_stub_", stringify!($name)),
                concat!(".type nrt_export_stub_", stringify!($name), ",@function"),
                concat!("nrt_export_stub_", stringify!($name), ":"),
                "jmp {f}",
                concat!(".size nrt_export_stub_", stringify!($name), ", .-nrt_export_stub_", stringify!($name)),
                concat!(".symver nrt_export_stub_", stringify!($name), ", ", stringify!($name), "@@NRT_2.0.0"),
                ".popsection",
                f = sym $path,
            );
            #[cfg(target_arch = "aarch64")]
            core::arch::global_asm!(
                concat!(".pushsection .text.nrt_export.", stringify!($name), ",\"ax\",%progbits"),
                ".p2align 4",
                concat!(".globl nrt_export_stub_", stringify!($name)),
                concat!(".type nrt_export_stub_", stringify!($name), ",%function"),
                concat!("nrt_export_stub_", stringify!($name), ":"),
                "b {f}",
                concat!(".size nrt_export_stub_", stringify!($name), ", .-nrt_export_stub_", stringify!($name)),
                concat!(".symver nrt_export_stub_", stringify!($name), ", ", stringify!($name), "@@NRT_2.0.0"),
                ".popsection",
                f = sym $path,
            );
        )*
    };
}

use crate::api;

exports! {
    // nrt_status.h, nrt_version.h
    nrt_get_status_as_str => api::lifecycle::nrt_get_status_as_str,
    nrt_get_version => api::lifecycle::nrt_get_version,
    // nrt.h: lifecycle, counts
    nrt_init => api::lifecycle::nrt_init,
    nrt_close => api::lifecycle::nrt_close,
    nrt_get_instance_info => api::lifecycle::nrt_get_instance_info,
    nrt_get_total_vnc_count => api::lifecycle::nrt_get_total_vnc_count,
    nrt_get_total_nc_count => api::lifecycle::nrt_get_total_nc_count,
    nrt_get_visible_vnc_count => api::lifecycle::nrt_get_visible_vnc_count,
    nrt_get_visible_nc_count => api::lifecycle::nrt_get_visible_nc_count,
    // nrt.h: models
    nrt_load => api::model::nrt_load,
    nrt_load_collectives => api::model::nrt_load_collectives,
    nrt_unload => api::model::nrt_unload,
    nrt_get_model_vnc_count => api::model::nrt_get_model_vnc_count,
    nrt_get_model_nc_count => api::model::nrt_get_model_nc_count,
    // nrt.h: tensor sets
    nrt_allocate_tensor_set => api::set::nrt_allocate_tensor_set,
    nrt_destroy_tensor_set => api::set::nrt_destroy_tensor_set,
    nrt_add_tensor_to_tensor_set => api::set::nrt_add_tensor_to_tensor_set,
    nrt_get_tensor_from_tensor_set => api::set::nrt_get_tensor_from_tensor_set,
    // nrt.h: execution
    nrt_execute => api::exec::nrt_execute,
    nrt_execute_repeat => api::exec::nrt_execute_repeat,
    // nrt.h: tensors
    nrt_tensor_allocate => api::tensor::nrt_tensor_allocate,
    nrt_tensor_free => api::tensor::nrt_tensor_free,
    nrt_tensor_read => api::tensor::nrt_tensor_read,
    nrt_tensor_write => api::tensor::nrt_tensor_write,
    nrt_tensor_read_batch => api::tensor::nrt_tensor_read_batch,
    nrt_tensor_write_batch => api::tensor::nrt_tensor_write_batch,
    nrt_tensor_copy => api::tensor::nrt_tensor_copy,
    nrt_tensor_get_size => api::tensor::nrt_tensor_get_size,
    nrt_tensor_memset => api::tensor::nrt_tensor_memset,
    nrt_tensor_allocate_empty => api::tensor::nrt_tensor_allocate_empty,
    nrt_tensor_attach_buffer => api::tensor::nrt_tensor_attach_buffer,
    nrt_tensor_allocate_slice => api::tensor::nrt_tensor_allocate_slice,
    nrt_tensor_get_va => api::tensor::nrt_tensor_get_va,
    nrt_tensor_get_device_allocation_info => api::tensor::nrt_tensor_get_device_allocation_info,
    nrt_tensor_check_output_completion => api::tensor::nrt_tensor_check_output_completion,
    nrt_tensor_reset_output_completion => api::tensor::nrt_tensor_reset_output_completion,
    // nrt.h: collectives, device and memory
    nrt_build_global_comm => api::device::nrt_build_global_comm,
    nrt_cc_global_comm_init => api::device::nrt_cc_global_comm_init,
    nrt_get_vnc_memory_stats => api::device::nrt_get_vnc_memory_stats,
    nrt_get_hbm_mmap_va => api::device::nrt_get_hbm_mmap_va,
    nrt_get_dmabuf_fd => api::device::nrt_get_dmabuf_fd,
    nrt_host_device_id_get => api::device::nrt_host_device_id_get,
    nrt_host_device_id_rid_map_get => api::device::nrt_host_device_id_rid_map_get,
    nrt_get_attached_efa_bdf => api::device::nrt_get_attached_efa_bdf,
    // nrt_experimental.h
    nrt_get_model_tensor_info => api::model::nrt_get_model_tensor_info,
    nrt_free_model_tensor_info => api::model::nrt_free_model_tensor_info,
    nrt_get_model_instance_count => api::model::nrt_get_model_instance_count,
    nrt_get_model_info => api::model::nrt_get_model_info,
    nrt_register_async_exec_callback => api::exec::nrt_register_async_exec_callback,
    nrt_async_drain_queued_execs => api::exec::nrt_async_drain_queued_execs,
    nrt_trace_start => api::trace::nrt_trace_start,
    nrt_trace_stop => api::trace::nrt_trace_stop,
    nrt_barrier => api::device::nrt_barrier,
    nrt_all_gather => api::device::nrt_all_gather,
    nrt_get_libnccl_net => api::device::nrt_get_libnccl_net,
    nrt_set_pool_eng_ucode => api::device::nrt_set_pool_eng_ucode,
    nrt_memcpy_to_device => api::device::nrt_memcpy_to_device,
    // nrt_async.h
    nrta_tensor_write => api::nrta::nrta_tensor_write,
    nrta_tensor_read => api::nrta::nrta_tensor_read,
    nrta_tensor_copy => api::nrta::nrta_tensor_copy,
    nrta_execute_schedule => api::nrta::nrta_execute_schedule,
    nrta_cc_prepare => api::nrta::nrta_cc_prepare,
    nrta_cc_schedule => api::nrta::nrta_cc_schedule,
    nrta_is_completed => api::nrta::nrta_is_completed,
    nrta_get_sequence => api::nrta::nrta_get_sequence,
    nrta_get_completion_handle => api::nrta::nrta_get_completion_handle,
    nrta_error_tracker_create => api::nrta::nrta_error_tracker_create,
    nrta_error_tracker_destroy => api::nrta::nrta_error_tracker_destroy,
    nrta_error_tracker_get_list => api::nrta::nrta_error_tracker_get_list,
    // nrt_profile.h
    nrt_profile_start => api::profile::nrt_profile_start,
    nrt_profile_stop => api::profile::nrt_profile_stop,
    nrt_profile_continuous_options_allocate => api::profile::nrt_profile_continuous_options_allocate,
    nrt_profile_continuous_options_free => api::profile::nrt_profile_continuous_options_free,
    nrt_profile_continuous_options_set_output_dir => api::profile::nrt_profile_continuous_options_set_output_dir,
    nrt_profile_continuous_start => api::profile::nrt_profile_continuous_start,
    nrt_profile_continuous_save => api::profile::nrt_profile_continuous_save,
    nrt_profile_continuous_stop => api::profile::nrt_profile_continuous_stop,
    nrt_inspect_begin => api::profile::nrt_inspect_begin,
    nrt_inspect_stop => api::profile::nrt_inspect_stop,
    nrt_inspect_config_allocate => api::profile::nrt_inspect_config_allocate,
    nrt_inspect_config_set_defaults => api::profile::nrt_inspect_config_set_defaults,
    nrt_inspect_config_free => api::profile::nrt_inspect_config_free,
    nrt_inspect_config_set_session_id => api::profile::nrt_inspect_config_set_session_id,
    nrt_inspect_config_set_output_dir => api::profile::nrt_inspect_config_set_output_dir,
    nrt_inspect_config_set_sys_trace_max_events_per_nc => api::profile::nrt_inspect_config_set_sys_trace_max_events_per_nc,
    nrt_inspect_config_set_capture_enabled_for_nc => api::profile::nrt_inspect_config_set_capture_enabled_for_nc,
    nrt_inspect_config_set_capture_enabled_for_event_type_string => api::profile::nrt_inspect_config_set_capture_enabled_for_event_type_string,
    nrt_inspect_config_set_enable_inspect => api::profile::nrt_inspect_config_set_enable_inspect,
    nrt_inspect_config_set_enable_inspect_on_fail => api::profile::nrt_inspect_config_set_enable_inspect_on_fail,
    nrt_inspect_begin_with_options => api::profile::nrt_inspect_begin_with_options,
    nrt_inspect_config_get_all_activity_types => api::profile::nrt_inspect_config_get_all_activity_types,
    nrt_inspect_config_get_enabled_activity_types => api::profile::nrt_inspect_config_get_enabled_activity_types,
    nrt_inspect_config_free_activity_types => api::profile::nrt_inspect_config_free_activity_types,
    nrt_inspect_config_set_activity => api::profile::nrt_inspect_config_set_activity,
    // nrt_sys_trace.h
    nrt_sys_trace_config_allocate => api::trace::nrt_sys_trace_config_allocate,
    nrt_sys_trace_config_set_defaults => api::trace::nrt_sys_trace_config_set_defaults,
    nrt_sys_trace_config_free => api::trace::nrt_sys_trace_config_free,
    nrt_sys_trace_config_set_max_events_per_nc => api::trace::nrt_sys_trace_config_set_max_events_per_nc,
    nrt_sys_trace_config_set_capture_enabled_for_nc => api::trace::nrt_sys_trace_config_set_capture_enabled_for_nc,
    nrt_sys_trace_config_set_capture_enabled_for_event_type => api::trace::nrt_sys_trace_config_set_capture_enabled_for_event_type,
    nrt_sys_trace_get_event_types => api::trace::nrt_sys_trace_get_event_types,
    nrt_sys_trace_free_event_types => api::trace::nrt_sys_trace_free_event_types,
    nrt_sys_trace_config_get_enabled_event_types => api::trace::nrt_sys_trace_config_get_enabled_event_types,
    nrt_sys_trace_start => api::trace::nrt_sys_trace_start,
    nrt_sys_trace_stop => api::trace::nrt_sys_trace_stop,
    nrt_sys_trace_fetch_options_allocate => api::trace::nrt_sys_trace_fetch_options_allocate,
    nrt_sys_trace_fetch_options_set_defaults => api::trace::nrt_sys_trace_fetch_options_set_defaults,
    nrt_sys_trace_fetch_options_free => api::trace::nrt_sys_trace_fetch_options_free,
    nrt_sys_trace_fetch_options_set_max_events_per_nc => api::trace::nrt_sys_trace_fetch_options_set_max_events_per_nc,
    nrt_sys_trace_fetch_options_set_nc_idx => api::trace::nrt_sys_trace_fetch_options_set_nc_idx,
    nrt_sys_trace_fetch_events => api::trace::nrt_sys_trace_fetch_events,
    nrt_sys_trace_buffer_free => api::trace::nrt_sys_trace_buffer_free,
    // nec.h, nrt_async_sendrecv.h, ndebug_stream.h (facilities this platform lacks)
    nec_inc_semaphore => api::absent::nec_inc_semaphore,
    nec_get_dynamic_send_size_bytes => api::absent::nec_get_dynamic_send_size_bytes,
    nec_get_dynamic_send_offset_bytes => api::absent::nec_get_dynamic_send_offset_bytes,
    nec_get_dynamic_recv_offset_bytes => api::absent::nec_get_dynamic_recv_offset_bytes,
    nec_set_recv_size_bytes => api::absent::nec_set_recv_size_bytes,
    nec_get_device_count => api::absent::nec_get_device_count,
    nec_get_device_pci_bdf => api::absent::nec_get_device_pci_bdf,
    nec_get_virtual_core_size => api::absent::nec_get_virtual_core_size,
    nec_get_version_info => api::absent::nec_get_version_info,
    nec_build_port_and_rid_map => api::absent::nec_build_port_and_rid_map,
    nec_is_mla_available => api::absent::nec_is_mla_available,
    nec_mla_idx_to_rid => api::absent::nec_mla_idx_to_rid,
    nec_rid_to_mla_idx => api::absent::nec_rid_to_mla_idx,
    nec_get_peer_mla_idx => api::absent::nec_get_peer_mla_idx,
    nec_get_p2p_pod_peer_node => api::absent::nec_get_p2p_pod_peer_node,
    nec_pod_node_can_access_peer_node => api::absent::nec_pod_node_can_access_peer_node,
    nec_ndl_printk => api::absent::nec_ndl_printk,
    nrt_async_sendrecv_get_max_num_communicators_per_lnc => api::absent::nrt_async_sendrecv_get_max_num_communicators_per_lnc,
    nrt_async_sendrecv_get_max_num_pending_request => api::absent::nrt_async_sendrecv_get_max_num_pending_request,
    nrt_async_sendrecv_init => api::absent::nrt_async_sendrecv_init,
    nrt_async_sendrecv_close => api::absent::nrt_async_sendrecv_close,
    nrt_async_sendrecv_connect => api::absent::nrt_async_sendrecv_connect,
    nrt_async_sendrecv_accept => api::absent::nrt_async_sendrecv_accept,
    nrt_async_sendrecv_test_comm => api::absent::nrt_async_sendrecv_test_comm,
    nrt_async_sendrecv_send_tensor => api::absent::nrt_async_sendrecv_send_tensor,
    nrt_async_sendrecv_recv_tensor => api::absent::nrt_async_sendrecv_recv_tensor,
    nrt_async_sendrecv_test_request => api::absent::nrt_async_sendrecv_test_request,
    nrt_async_sendrecv_flush => api::absent::nrt_async_sendrecv_flush,
    nrt_debug_client_connect => api::absent::nrt_debug_client_connect,
    nrt_debug_client_connect_close => api::absent::nrt_debug_client_connect_close,
    nrt_debug_client_read_one_event => api::absent::nrt_debug_client_read_one_event,
}
