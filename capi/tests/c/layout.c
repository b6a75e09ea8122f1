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

    if (failures) {
        printf("%d mismatches\n", failures);
        return 1;
    }
    printf("layout ok\n");
    return 0;
}
