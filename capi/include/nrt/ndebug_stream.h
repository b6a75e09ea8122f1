/*
 * nrt/ndebug_stream.h - the per-core debug stream (events of debug tensor-read instructions)
 * (nrt-emu).
 *
 * The simulator has no debug tensor-read instruction, so no core ever has a debug stream:
 * nrt_debug_client_connect logs one ERROR line saying so and returns NRT_FAILURE, and the two
 * calls on a stream fd refuse every fd (there is none to pass them).
 */
#ifndef NDEBUG_STREAM_H
#define NDEBUG_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nrt/nrt_status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ndebug_stream_event_type {
    NDEBUG_STREAM_EVENT_TYPE_INVALID = 0,
    NDEBUG_STREAM_EVENT_TYPE_DEBUG_TENSOR_READ = 1
} ndebug_stream_event_type_t;

typedef struct ndebug_stream_event_header {
    uint64_t data_size;         /* payload bytes */
    uint32_t type;              /* an ndebug_stream_event_type_t */
    char reserved[52];
} ndebug_stream_event_header_t;

/* C++ has no flexible array members; GCC and Clang accept one as an extension there. */
#if defined(__cplusplus) && defined(__GNUC__)
#define NDEBUG_FLEXIBLE_ARRAY_EXTENSION __extension__
#else
#define NDEBUG_FLEXIBLE_ARRAY_EXTENSION
#endif

typedef struct ndebug_stream_payload_debug_tensor_read {
    char prefix[512];
    uint32_t logical_nc_id;
    uint32_t pipe;
    char tensor_dtype[16];
    uint64_t tensor_shape[8];
    uint64_t tensor_data_size;
    char reserved0[416];
    NDEBUG_FLEXIBLE_ARRAY_EXTENSION char tensor_data[];
} ndebug_stream_payload_debug_tensor_read_t;

NRT_STATUS nrt_debug_client_connect(int logical_nc_idx, int *stream_fd);
void nrt_debug_client_connect_close(int stream_fd);
/* The caller frees *payload. */
NRT_STATUS nrt_debug_client_read_one_event(int stream_fd, ndebug_stream_event_header_t *header, void **payload);

#ifdef __cplusplus
}
#endif

#endif /* NDEBUG_STREAM_H */
