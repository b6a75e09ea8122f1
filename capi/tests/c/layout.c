/* Layout and enum values of the nrt-emu headers against the published ABI (sizes, offsets and
 * values as tabled in docs/c-api.md). Compiled as C11 and as C++17; exits 1 on a mismatch. */
#include <stddef.h>
#include <stdio.h>

#include "nrt/nrt.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_profile.h"
#include "nrt/nrt_status.h"
#include "nrt/nrt_sys_trace.h"
#include "nrt/nrt_version.h"
#include "nrt/nrt_async_sendrecv.h"
#include "nrt/ndebug_stream.h"
#include "nrt/nec.h"

static int failures = 0;
#define EQ(expr, want)                                                                         \
    do {                                                                                       \
        unsigned long long got_ = (unsigned long long)(expr);                                  \
        if (got_ != (unsigned long long)(want)) {                                              \
            printf("MISMATCH %s = %llu, want %llu\n", #expr, got_, (unsigned long long)(want)); \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

int main(void) {
    /* structs: size, then every field's offset */
    EQ(sizeof(nrt_instance_info_t), 32);
    EQ(offsetof(nrt_instance_info_t, family), 0);
    EQ(offsetof(nrt_instance_info_t, size), 4);
    EQ(offsetof(nrt_instance_info_t, arch_name), 8);
    EQ(offsetof(nrt_instance_info_t, device_revision), 24);
    EQ(sizeof(nrt_tensor_batch_op_t), 24);
    EQ(offsetof(nrt_tensor_batch_op_t, offset), 0);
    EQ(offsetof(nrt_tensor_batch_op_t, size), 8);
    EQ(offsetof(nrt_tensor_batch_op_t, buffer), 16);
    EQ(sizeof(nrt_tensor_batch_t), 24);
    EQ(offsetof(nrt_tensor_batch_t, tensor), 0);
    EQ(offsetof(nrt_tensor_batch_t, ops), 8);
    EQ(offsetof(nrt_tensor_batch_t, num_ops), 16);
    EQ(sizeof(nrt_tensor_device_allocation_info_t), 24);
    EQ(offsetof(nrt_tensor_device_allocation_info_t, physical_address), 0);
    EQ(offsetof(nrt_tensor_device_allocation_info_t, size), 8);
    EQ(offsetof(nrt_tensor_device_allocation_info_t, hbm_index), 16);
    EQ(sizeof(nrt_vnc_memory_stats_t), 16);
    EQ(offsetof(nrt_vnc_memory_stats_t, bytes_used), 0);
    EQ(offsetof(nrt_vnc_memory_stats_t, bytes_limit), 8);
    EQ(sizeof(nrt_cc_comm_t), 32);
    EQ(offsetof(nrt_cc_comm_t, replica_group), 0);
    EQ(offsetof(nrt_cc_comm_t, rank), 8);
    EQ(offsetof(nrt_cc_comm_t, rank_n), 12);
    EQ(offsetof(nrt_cc_comm_t, ctx_device_id), 16);
    EQ(offsetof(nrt_cc_comm_t, ctx_device_count), 20);
    EQ(offsetof(nrt_cc_comm_t, vnc), 24);
    EQ(sizeof(nrt_tensor_list_t), 16);
    EQ(offsetof(nrt_tensor_list_t, tensors), 0);
    EQ(offsetof(nrt_tensor_list_t, num_tensors), 8);
    EQ(sizeof(nrt_version_t), 224);
    EQ(offsetof(nrt_version_t, rt_major), 0);
    EQ(offsetof(nrt_version_t, rt_minor), 8);
    EQ(offsetof(nrt_version_t, rt_patch), 16);
    EQ(offsetof(nrt_version_t, rt_maintenance), 24);
    EQ(offsetof(nrt_version_t, rt_detail), 32);
    EQ(offsetof(nrt_version_t, git_hash), 160);
    EQ(sizeof(nrt_tensor_info_t), 296);
    EQ(offsetof(nrt_tensor_info_t, name), 0);
    EQ(offsetof(nrt_tensor_info_t, usage), 256);
    EQ(offsetof(nrt_tensor_info_t, size), 264);
    EQ(offsetof(nrt_tensor_info_t, dtype), 272);
    EQ(offsetof(nrt_tensor_info_t, shape), 280);
    EQ(offsetof(nrt_tensor_info_t, ndim), 288);
    EQ(sizeof(nrt_tensor_info_array_t), 8);
    EQ(offsetof(nrt_tensor_info_array_t, tensor_count), 0);
    EQ(offsetof(nrt_tensor_info_array_t, tensor_array), 8);
    EQ(sizeof(nrt_ucode_img), 16);
    EQ(offsetof(nrt_ucode_img, bin), 0);
    EQ(offsetof(nrt_ucode_img, size), 8);
    EQ(sizeof(nrt_ucode_info), 32);
    EQ(offsetof(nrt_ucode_info, iram), 0);
    EQ(offsetof(nrt_ucode_info, dram), 16);
    EQ(sizeof(nrt_model_info_t), 4);
    EQ(offsetof(nrt_model_info_t, vnc), 0);
    EQ(sizeof(nrta_error_t), 16);
    EQ(offsetof(nrta_error_t, seq_id), 0);
    EQ(offsetof(nrta_error_t, error_code), 8);
    EQ(sizeof(nrta_seq_t), 8);
    EQ(sizeof(nrta_xu_id_t), 2);
    EQ(sizeof(NRT_STATUS), 4);
    EQ(sizeof(nrt_dtype_t), 4);
    EQ(sizeof(NRT_ASYNC_EXEC_STATUS_CALLBACK), 8);

    /* NRT_STATUS */
    EQ(NRT_SUCCESS, 0); EQ(NRT_FAILURE, 1); EQ(NRT_INVALID, 2); EQ(NRT_INVALID_HANDLE, 3);
    EQ(NRT_RESOURCE, 4); EQ(NRT_TIMEOUT, 5); EQ(NRT_HW_ERROR, 6); EQ(NRT_QUEUE_FULL, 7);
    EQ(NRT_LOAD_NOT_ENOUGH_NC, 9); EQ(NRT_UNSUPPORTED_NEFF_VERSION, 10); EQ(NRT_FAIL_HOST_MEM_ALLOC, 11);
    EQ(NRT_UNINITIALIZED, 13); EQ(NRT_CLOSED, 14); EQ(NRT_QUEUE_EMPTY, 15);
    EQ(NRT_EXEC_UNIT_UNRECOVERABLE, 101); EQ(NRT_EXEC_BAD_INPUT, 1002);
    EQ(NRT_EXEC_COMPLETED_WITH_NUM_ERR, 1003); EQ(NRT_EXEC_COMPLETED_WITH_ERR, 1004);
    EQ(NRT_EXEC_NC_BUSY, 1005); EQ(NRT_EXEC_OOB, 1006); EQ(NRT_COLL_PENDING, 1100);
    EQ(NRT_EXEC_HW_ERR_COLLECTIVES, 1200); EQ(NRT_EXEC_HW_ERR_HBM_UE, 1201); EQ(NRT_EXEC_HW_ERR_NC_UE, 1202);
    EQ(NRT_EXEC_HW_ERR_DMA_ABORT, 1203); EQ(NRT_EXEC_SW_NQ_OVERFLOW, 1204);
    EQ(NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE, 1205); EQ(NRT_NETWORK_PROXY_FAILURE, 1206);
    /* nrt.h */
    EQ(NRT_FRAMEWORK_TYPE_INVALID, 0); EQ(NRT_FRAMEWORK_TYPE_NO_FW, 1); EQ(NRT_FRAMEWORK_TYPE_TENSORFLOW, 2);
    EQ(NRT_FRAMEWORK_TYPE_PYTORCH, 3); EQ(NRT_FRAMEWORK_TYPE_MXNET, 4); EQ(NRT_FRAMEWORK_TYPE_PRECHECK, 5);
    EQ(NRT_TENSOR_PLACEMENT_DEVICE, 0); EQ(NRT_TENSOR_PLACEMENT_HOST, 1); EQ(NRT_TENSOR_PLACEMENT_VIRTUAL, 2);
    EQ(NRT_INSTANCE_UNKNOWN, 0); EQ(NRT_INSTANCE_INF1, 1); EQ(NRT_INSTANCE_TRN1, 2); EQ(NRT_INSTANCE_TRN1N, 3);
    EQ(NRT_INSTANCE_INF2, 4); EQ(NRT_INSTANCE_TRN2, 5); EQ(NRT_INSTANCE_TRN2N, 6); EQ(NRT_INSTANCE_INF2E, 7);
    EQ(NRT_INSTANCE_TRN2P, 8); EQ(NRT_INSTANCE_TRN2U, 9); EQ(NRT_INSTANCE_TRN2E, 10); EQ(NRT_INSTANCE_TRN2EU, 11);
    EQ(NRT_INSTANCE_TRN2AC, 12); EQ(NRT_INSTANCE_TRN2UAC, 13); EQ(NRT_INSTANCE_TRN3, 14); EQ(NRT_INSTANCE_TRN3PDS98, 15);
    EQ(NRT_INSTANCE_SIZE_1XL, 0); EQ(NRT_INSTANCE_SIZE_2XL, 1); EQ(NRT_INSTANCE_SIZE_4XL, 2); EQ(NRT_INSTANCE_SIZE_6XL, 3);
    EQ(NRT_INSTANCE_SIZE_8XL, 4); EQ(NRT_INSTANCE_SIZE_24XL, 5); EQ(NRT_INSTANCE_SIZE_32XL, 6); EQ(NRT_INSTANCE_SIZE_48XL, 7);
    EQ(NRT_INSTANCE_SIZE_3XL, 8); EQ(NRT_INSTANCE_SIZE_UNKNOWN, 9); EQ(NRT_INSTANCE_SIZE_NUM, 9);
    EQ(NRT_OP_ADD, 0); EQ(NRT_OP_FMA, 1); EQ(NRT_OP_MAX, 2); EQ(NRT_OP_MIN, 3); EQ(NRT_OP_INVALID, 15);
    EQ(NRT_CC_ALLGATHER, 0); EQ(NRT_CC_ALLREDUCE, 1); EQ(NRT_CC_REDUCESCATTER, 2);
    EQ(NRT_DTYPE_UNKNOWN, 0); EQ(NRT_DTYPE_INVALID, 0); EQ(NRT_DTYPE_UINT64, 1); EQ(NRT_DTYPE_INT8, 2);
    EQ(NRT_DTYPE_UINT8, 3); EQ(NRT_DTYPE_INT16, 4); EQ(NRT_DTYPE_UINT16, 5); EQ(NRT_DTYPE_BFLOAT16, 6);
    EQ(NRT_DTYPE_FLOAT16, 7); EQ(NRT_DTYPE_INT32, 8); EQ(NRT_DTYPE_UINT32, 9); EQ(NRT_DTYPE_FLOAT32, 10);
    EQ(NRT_DTYPE_FP32R, 11); EQ(NRT_DTYPE_INT64, 12); EQ(NRT_DTYPE_FP8_E3, 13); EQ(NRT_DTYPE_FP8_E4, 14);
    EQ(NRT_DTYPE_FP8_E5, 15);
    /* nrt_experimental.h, nrt_async.h, nrt_version.h */
    EQ(NRT_TENSOR_USAGE_INPUT, 0); EQ(NRT_TENSOR_USAGE_OUTPUT, 1); EQ(NRT_TENSOR_NAME_MAX, 256);
    EQ(NRTA_XU_TENSOR_READ, 0); EQ(NRTA_XU_TENSOR_WRITE, 1); EQ(NRTA_XU_TENSOR_OP, 2); EQ(NRTA_XU_COMPUTE, 3);
    EQ(NRTA_XU_COLLECTIVES, 4); EQ(NRTA_XU_TYPE_NUM, 5);
    EQ(NRTA_SEQ_NUM_MAX, 0xFFFFFFFFFFFFull); EQ(NRTA_SEQ_NUM_MASK, 0xFFFFFFFFFFFFull);
    EQ(NRTA_SEQ_GET_SEQ_NUM(0x0123456789ABCDEFull), 0x456789ABCDEFull);
    EQ(NRTA_SEQ_GET_XU_ID(0x0123456789ABCDEFull), 0x0123);
    EQ(RT_VERSION_DETAIL_LEN, 128); EQ(GIT_HASH_LEN, 64);
    EQ(NRT_MAJOR_VERSION, 2); EQ(NRT_MINOR_VERSION, 0);

    /* ndebug_stream.h */
    EQ(sizeof(ndebug_stream_event_header_t), 64);
    EQ(offsetof(ndebug_stream_event_header_t, data_size), 0);
    EQ(offsetof(ndebug_stream_event_header_t, type), 8);
    EQ(offsetof(ndebug_stream_event_header_t, reserved), 12);
    EQ(sizeof(ndebug_stream_payload_debug_tensor_read_t), 1024);
    EQ(offsetof(ndebug_stream_payload_debug_tensor_read_t, prefix), 0);
    EQ(offsetof(ndebug_stream_payload_debug_tensor_read_t, logical_nc_id), 512);
    EQ(offsetof(ndebug_stream_payload_debug_tensor_read_t, pipe), 516);
    EQ(offsetof(ndebug_stream_payload_debug_tensor_read_t, tensor_dtype), 520);
    EQ(offsetof(ndebug_stream_payload_debug_tensor_read_t, tensor_shape), 536);
    EQ(offsetof(ndebug_stream_payload_debug_tensor_read_t, tensor_data_size), 600);
    EQ(offsetof(ndebug_stream_payload_debug_tensor_read_t, reserved0), 608);
    EQ(offsetof(ndebug_stream_payload_debug_tensor_read_t, tensor_data), 1024);
    EQ(NDEBUG_STREAM_EVENT_TYPE_INVALID, 0); EQ(NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ, 1);
    EQ(sizeof(ndebug_stream_event_type_t), 4);
    /* nec.h: the structs the nec_* functions take, every enum, the constants */
    EQ(sizeof(nec_version_info_t), 56);
    EQ(offsetof(nec_version_info_t, major), 0);
    EQ(offsetof(nec_version_info_t, minor), 8);
    EQ(offsetof(nec_version_info_t, patch), 16);
    EQ(offsetof(nec_version_info_t, maintenance), 24);
    EQ(offsetof(nec_version_info_t, git_hash), 32);
    EQ(offsetof(nec_version_info_t, compatibility_version), 48);
    EQ(offsetof(nec_version_info_t, future_fields), 56);
    EQ(sizeof(enc_host_mem_t), 32);
    EQ(offsetof(enc_host_mem_t, mem_handle), 0);
    EQ(offsetof(enc_host_mem_t, va), 8);
    EQ(offsetof(enc_host_mem_t, pa), 16);
    EQ(offsetof(enc_host_mem_t, size), 24);
    EQ(sizeof(enc_host_mem_shared_t), 40);
    EQ(offsetof(enc_host_mem_shared_t, mem), 0);
    EQ(offsetof(enc_host_mem_shared_t, refcnt), 32);
    EQ(sizeof(dma_addr_t), 8);
    EQ(sizeof(nec_pod_type_t), 4);
    EQ(BIT_INDEX_TEST_FEATURE, 0); EQ(BIT_INDEX_MULTICORE_FEATURE, 1); EQ(BIT_INDEX_COUNT, 2);
    EQ(NET_SEND_COMM, 0); EQ(NET_RECV_COMM, 1); EQ(NET_RECV_LISTEN_COMM, 2); EQ(LOCAL_RECV_COMM, 3);
    EQ(LOCAL_SEND_COMM, 4);
    EQ(H_COMM_INTRA_ID, 0); EQ(H_COMM_INTER_ID, 1); EQ(H_COMM_MAX_ID, 2);
    EQ(NEC_POD_TYPE_NONE, 0); EQ(NEC_POD_TYPE_P2P, 1); EQ(NEC_POD_TYPE_SWITCH, 2); EQ(NEC_POD_TYPE_INVALID, 3);
    EQ(ENC_PATTERN_RING, 0); EQ(ENC_PATTERN_MESH, 1); EQ(ENC_PATTERN_INVALID, 2);
    EQ(ENC_CONNECTIVITY_MESH, 0); EQ(ENC_CONNECTIVITY_RDH, 1); EQ(ENC_CONNECTIVITY_DEFAULT, 2);
    EQ(ENC_TOPO_NULL, 0); EQ(ENC_TOPO_4_DEVS_IN_ROW, 1); EQ(ENC_TOPO_4_DEVS_IN_COLUMN, 2);
    EQ(S0, 0); EQ(S1, 1); EQ(S2, 2); EQ(S3, 3); EQ(SENGS_PER_DIE, 2); EQ(SENGS_PER_MLA, 4);
    EQ(RING, 0); EQ(KANGARING, 1); EQ(SINGLE_CYCLE_RING, 2); EQ(RDH, 3); EQ(INVALID_METARING, 4);
    EQ(ENC_ALG_FULL_MESH, 0); EQ(ENC_ALG_GROUPED_MESH, 1); EQ(ENC_ALG_MESH_TRN2, 2); EQ(ENC_ALG_MESH_SWITCH, 3);
    EQ(ENC_ALG_MESH_INVALID, 4);
    EQ(NET_TRANSFER, 0); EQ(NET_OP_COMPLETE, 1); EQ(EXEC_COMPLETE, 2);
    EQ(EVT_SYNC, 0); EQ(EVT_INTRA_GRP_BRDCST, 7); EQ(ENC_COMMON_NUM_EVENT_TYPE, 8); EQ(ENC_MESH_NUM_EVENT_START, 8);
    EQ(EVT_REDUCE_COPY, 8); EQ(EVT_LOCAL_AND_POD_GRP_BRDCST_2, 13); EQ(ENC_MESH_NUM_EVENT_TYPE, 14);
    EQ(ENC_A2A_NUM_EVENT_START, 14); EQ(EVT_LOCAL_HNDSHK_1, 14); EQ(EVT_COPY_FROM_HOST, 21);
    EQ(ENC_A2A_NUM_EVENT_TYPE, 22); EQ(ENC_RDH_NUM_EVENT_START, 22); EQ(EVT_RH_STEP_0, 22); EQ(EVT_RH_STEP_9, 31);
    EQ(EVT_RDH_LOCAL_HANDSHAKE, 31); EQ(EVT_RDH_AXES_HANDSHAKE, 32); EQ(EVT_RD_STEP_0, 33); EQ(EVT_RD_STEP_6, 39);
    EQ(EVT_RDH_AXES_HANDSHAKE_2, 40); EQ(EVT_1DEV_RDH_STEP_1, 41); EQ(EVT_1DEV_RDH_STEP_2, 42);
    EQ(EVT_1DEV_RD_STEP_1, 43); EQ(EVT_1DEV_RD_STEP_2, 44); EQ(EVT_1DEV_RH_STEP_1, 45); EQ(EVT_2DEV_RD_STEP_0, 46);
    EQ(EVT_2DEV_RD_STEP_4, 50); EQ(EVT_RDH_LOCAL_PEER_HANDSHAKE, 51); EQ(ENC_RDH_NUM_EVENT_TYPE, 52);
    EQ(NEC_MAX_CHANNELS, 32); EQ(NEC_MAX_NR_CHANNEL_CHUNKS, 32); EQ(NEC_MAX_FOLD_N, 16); EQ(NEC_MAX_COMM_N, 12);
    EQ(NEC_MAX_NET_BUFFERS, 24); EQ(NEC_CACHE_LINE_SIZE, 128); EQ(NEC_NET_CONNECTOR_RANK + 10, 9);
    EQ(NEC_NET_MLA_DEV + 10, 9); EQ(NEC_POD_MLA_DEV + 10, 8); EQ(NEC_UNKNOWN_RANK + 10, 7);
    EQ(NEC_UNKNOWN_MLA_DEV + 10, 7); EQ(NEC_HIER_CC_PIPELINE_STAGE_N, 3); EQ(NCCL_NET_NEURON_MAX_REQUESTS, 128);
    EQ(NEC_MAX_STREAM_N, 4); EQ(NEC_KANGARING_MAX_NUM_RANKS, 256); EQ(KANGARING_NUM_SENG_PER_DEV, 4);
    EQ(KANGARING_NUM_TPB_PER_DEV, 8); EQ(KANGARING_MAX_SECONDARIES, 3); EQ(ENC_MESH_MAX_NUM_EVENTS, 64);
    EQ(ENC_MAX_OP_TYPES, 13); EQ(ENC_MAX_MESH_SUBTYPES, 20); EQ(ENC_MESH_MAX_NUM_DEVICES, 128);
    EQ(ENC_PROXY_HISTOGRAM_OUTPUT_PATH_LENGTH_MAX, 128); EQ(KiB, 1024); EQ(MiB, 1048576); EQ(GiB, 1073741824);

    if (failures) {
        printf("%d mismatches\n", failures);
        return 1;
    }
    printf("layout ok\n");
    return 0;
}
