/*
 * nrt/nrt_status.h - status codes returned by the libnrt C API (nrt-emu).
 *
 * Written for nrt-emu from the published values of the Neuron runtime's status codes; a program
 * built against this header runs against AWS's libnrt.so.1 and against nrt-emu's.
 */
#ifndef NRT_STATUS_H
#define NRT_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum nrt_status {
    NRT_SUCCESS = 0,                         /* success */
    NRT_FAILURE = 1,                         /* generic failure */
    NRT_INVALID = 2,                         /* invalid input: NEFF, tensor name or size, argument */
    NRT_INVALID_HANDLE = 3,                  /* invalid handle */
    NRT_RESOURCE = 4,                        /* a resource could not be allocated */
    NRT_TIMEOUT = 5,                         /* timed out (NEURON_RT_EXEC_TIMEOUT) */
    NRT_HW_ERROR = 6,                        /* hardware failure */
    NRT_QUEUE_FULL = 7,                      /* too many pending executions */
    NRT_LOAD_NOT_ENOUGH_NC = 9,              /* not enough NeuronCores for the NEFF */
    NRT_UNSUPPORTED_NEFF_VERSION = 10,       /* NEFF version not supported */
    NRT_FAIL_HOST_MEM_ALLOC = 11,            /* host allocation failed (legacy) */
    NRT_UNINITIALIZED = 13,                  /* called before nrt_init */
    NRT_CLOSED = 14,                         /* called after nrt_close */
    NRT_QUEUE_EMPTY = 15,                    /* the queue holds no data */
    NRT_EXEC_UNIT_UNRECOVERABLE = 101,       /* execution unit failed; a reset is needed */
    NRT_EXEC_BAD_INPUT = 1002,               /* bad input submitted to execute */
    NRT_EXEC_COMPLETED_WITH_NUM_ERR = 1003,  /* completed with numerical errors (NaN) */
    NRT_EXEC_COMPLETED_WITH_ERR = 1004,      /* completed with other errors */
    NRT_EXEC_NC_BUSY = 1005,                 /* core locked by another model or process */
    NRT_EXEC_OOB = 1006,                     /* out-of-bounds indirect copy or update */
    NRT_COLL_PENDING = 1100,                 /* collective operation still pending */
    NRT_EXEC_HW_ERR_COLLECTIVES = 1200,      /* stuck in a collective */
    NRT_EXEC_HW_ERR_HBM_UE = 1201,           /* unrepairable uncorrectable HBM error */
    NRT_EXEC_HW_ERR_NC_UE = 1202,            /* parity error in on-core memory */
    NRT_EXEC_HW_ERR_DMA_ABORT = 1203,        /* unrecoverable DMA engine error */
    NRT_EXEC_SW_NQ_OVERFLOW = 1204,          /* notification queue overflow */
    NRT_EXEC_HW_ERR_REPAIRABLE_HBM_UE = 1205, /* repairable uncorrectable HBM error */
    NRT_NETWORK_PROXY_FAILURE = 1206         /* network proxy failure */
} NRT_STATUS;

/* The printable name of a status ("NRT_INVALID"); "NRT_UNKNOWN_STATUS" for a value that is not
 * a status. The string belongs to the library. */
const char *nrt_get_status_as_str(NRT_STATUS status);

#ifdef __cplusplus
}
#endif

#endif /* NRT_STATUS_H */
