/*
 * nrt/nrt_async.h - explicit asynchronous execution on execution units (nrt-emu).
 *
 * Unlike the published header, the size check below compiles as C11 without <assert.h>.
 *
 * Execution units per visible core: TENSOR_READ, TENSOR_WRITE and TENSOR_OP (queues 0 and 1),
 * COMPUTE (queue 0). A sequence id is the unit id (high 16 bits: core << 8 | queue << 4 | type)
 * and the unit's sequence number (low 48 bits, from 1, strictly increasing).
 */
#ifndef NRT_ASYNC_H
#define NRT_ASYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nrta_xu {
    NRTA_XU_TENSOR_READ = 0,
    NRTA_XU_TENSOR_WRITE = 1,
    NRTA_XU_TENSOR_OP = 2,
    NRTA_XU_COMPUTE = 3,
    NRTA_XU_COLLECTIVES = 4,
    NRTA_XU_TYPE_NUM = 5
} nrta_xu_t;

typedef uint64_t nrta_seq_t;
typedef uint16_t nrta_xu_id_t;

#define NRTA_SEQ_NUM_MASK ((((uint64_t)1) << 48) - 1)
#define NRTA_SEQ_NUM_MAX NRTA_SEQ_NUM_MASK
#define NRTA_SEQ_GET_SEQ_NUM(s) ((s) & NRTA_SEQ_NUM_MASK)
#define NRTA_SEQ_GET_XU_ID(s) ((nrta_xu_id_t)((s) >> 48))

typedef struct nrta_error {
    nrta_seq_t seq_id;
    uint64_t error_code;        /* an NRT_STATUS */
} nrta_error_t;

#ifdef __cplusplus
static_assert(sizeof(nrta_error_t) == 16, "nrta_error_t is 16 bytes");
#else
_Static_assert(sizeof(nrta_error_t) == 16, "nrta_error_t is 16 bytes");
#endif

typedef struct nrta_error_tracker nrta_error_tracker_t;

/* Schedule calls return once the work is queued; NRT_QUEUE_FULL when the unit's queue is full,
 * NRT_EXEC_UNIT_UNRECOVERABLE once the unit has failed. err may be NULL. */
NRT_STATUS nrta_tensor_write(nrt_tensor_t *tensor, const void *buf, uint64_t offset, uint64_t size, int queue,
                             nrta_error_tracker_t *err, nrta_seq_t *req_sequence);
NRT_STATUS nrta_tensor_read(void *buf, nrt_tensor_t *tensor, uint64_t offset, uint64_t size, int queue,
                            nrta_error_tracker_t *err, nrta_seq_t *req_sequence);
NRT_STATUS nrta_tensor_copy(nrt_tensor_t *src, uint64_t src_offset, nrt_tensor_t *dst, uint64_t dst_offset,
                            uint64_t size, int queue, nrta_error_tracker_t *err, nrta_seq_t *req_sequence);
NRT_STATUS nrta_execute_schedule(nrt_model_t *model, const nrt_tensor_set_t *input, nrt_tensor_set_t *output,
                                 int queue, nrta_error_tracker_t *err, nrta_seq_t *req_sequence);

/* Collectives: NRT_FAILURE (no collectives fabric on this platform). */
NRT_STATUS nrta_cc_prepare(nrt_cc_comm_t *comm, nrt_tensor_list_t *input, nrt_tensor_list_t *output,
                           nrt_dtype_t dtype, nrt_op_type_t op, nrt_cc_op_type_t cc_op, nrt_cc_context_t **cc_ctx);
NRT_STATUS nrta_cc_schedule(nrt_cc_context_t **cc_ctx, int queue, nrta_error_tracker_t *err,
                            nrta_seq_t *req_sequence);

/* NRT_INVALID for a sequence id never issued. */
NRT_STATUS nrta_is_completed(nrta_seq_t seq, bool *is_completed);
/* The last completed sequence id of (lnc, xu, queue); sequence number 0 when none has. */
NRT_STATUS nrta_get_sequence(uint32_t lnc, nrta_xu_t xu, int queue, nrta_seq_t *seq);
/* An eventfd that is readable once seq has completed; the caller closes it. */
NRT_STATUS nrta_get_completion_handle(nrta_seq_t seq, int *fd);

NRT_STATUS nrta_error_tracker_create(uint32_t lnc_idx, nrta_error_tracker_t **error_tracker);
void nrta_error_tracker_destroy(nrta_error_tracker_t *error_tracker);
/* The tracker owns *list; it stays valid until the next call on the tracker. */
NRT_STATUS nrta_error_tracker_get_list(nrta_error_tracker_t *error_tracker, const nrta_error_t **list,
                                       size_t *error_count);

#ifdef __cplusplus
}
#endif

#endif /* NRT_ASYNC_H */
