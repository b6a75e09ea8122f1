/*
 * nrt/nrt_experimental.h - model tensor information and experimental calls (nrt-emu).
 */
#ifndef NRT_EXPERIMENTAL_H
#define NRT_EXPERIMENTAL_H

#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"
#include "nrt/nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nrt_tensor_usage {
    NRT_TENSOR_USAGE_INPUT = 0,
    NRT_TENSOR_USAGE_OUTPUT = 1
} nrt_tensor_usage_t;

#define NRT_TENSOR_NAME_MAX 256

typedef struct nrt_tensor_info {
    char name[NRT_TENSOR_NAME_MAX];
    nrt_tensor_usage_t usage;
    size_t size;                /* bytes */
    nrt_dtype_t dtype;
    uint32_t *shape;            /* ndim entries, in the same allocation as the array */
    uint32_t ndim;
} nrt_tensor_info_t;

/* C++ has no flexible array members; GCC and Clang accept one as an extension there. */
#if defined(__cplusplus) && defined(__GNUC__)
#define NRT_FLEXIBLE_ARRAY_EXTENSION __extension__
#else
#define NRT_FLEXIBLE_ARRAY_EXTENSION
#endif

typedef struct nrt_tensor_info_array {
    uint64_t tensor_count;
    NRT_FLEXIBLE_ARRAY_EXTENSION nrt_tensor_info_t tensor_array[];
} nrt_tensor_info_array_t;

typedef void (*NRT_ASYNC_EXEC_STATUS_CALLBACK)(void *params, uint32_t model_id, uint32_t vnc, uint64_t job_id,
                                               NRT_STATUS status);

typedef struct nrt_ucode_img {
    uint8_t *bin;
    size_t size;
} nrt_ucode_img;

typedef struct nrt_ucode_info {
    nrt_ucode_img iram;
    nrt_ucode_img dram;
} nrt_ucode_info;

typedef struct nrt_model_info {
    uint32_t vnc;
} nrt_model_info_t;

/* The library allocates *tensor_info (inputs and outputs, told apart by usage); free it with
 * nrt_free_model_tensor_info. */
NRT_STATUS nrt_get_model_tensor_info(nrt_model_t *model, nrt_tensor_info_array_t **tensor_info);
NRT_STATUS nrt_free_model_tensor_info(nrt_tensor_info_array_t *tensor_info);

/* Always 1 here: a model is staged once. */
NRT_STATUS nrt_get_model_instance_count(nrt_model_t *model, uint32_t *instance_count);

/* Size in, size written out. */
NRT_STATUS nrt_get_model_info(const nrt_model_t *model, nrt_model_info_t *info, size_t info_size_in,
                              size_t *info_size_out);

/* The completion callback of nrt_execute when NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS > 0. */
NRT_STATUS nrt_register_async_exec_callback(NRT_ASYNC_EXEC_STATUS_CALLBACK callback, void *params);
NRT_STATUS nrt_async_drain_queued_execs(int32_t vnc);

/* Runtime event trace of every visible core, written as JSON by nrt_trace_stop. */
NRT_STATUS nrt_trace_start(bool trace_mem);
NRT_STATUS nrt_trace_stop(const char *filename);

/* Single-worker world only (g_device_count 1); NRT_FAILURE otherwise. */
NRT_STATUS nrt_barrier(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count);
NRT_STATUS nrt_all_gather(int32_t vnc, uint32_t g_device_id, uint32_t g_device_count, uint32_t rank_input_size,
                          void *input, void *output);

/* NULL: no NCCL network plugin on this platform (*err set, err_msg filled). */
void *nrt_get_libnccl_net(int *err, char *err_msg, size_t err_msg_size);

/* Before nrt_init only. */
NRT_STATUS nrt_set_pool_eng_ucode(const nrt_ucode_info *ucode_info);

/* dest must lie inside the mapping of a tensor (nrt_tensor_get_va). */
NRT_STATUS nrt_memcpy_to_device(void *dest, const void *src, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* NRT_EXPERIMENTAL_H */
