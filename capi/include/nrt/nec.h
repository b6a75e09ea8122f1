/*
 * nrt/nec.h - Neuron collectives internals (nrt-emu).
 *
 * ABI-identical to the published header for what a client can use: every enum (tags and
 * values), the constants, the three structs the exported nec_* functions take, and the nec_*
 * prototypes. Unlike the published header it declares nec_pod_type_t once (the published one
 * declares it three times and compiles neither as C nor as C++).
 *
 * The other collectives structs (struct enc_comm, struct enc_channel, ...) describe the state
 * of libnccom's proxy threads; nrt-emu has no collectives fabric, so they are declared here as
 * incomplete types (pointers to them stay valid C), see docs/c-api.md.
 *
 * nrt-emu has no collectives library (libnccom): every nec_* call logs one ERROR line saying so
 * and returns its error value: NRT_FAILURE (NRT_STATUS), -1 (int), 0 (size_t), false (bool);
 * the void ones do nothing else.
 */
#ifndef NRT_NEC_H
#define NRT_NEC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "nrt/nrt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NEC_MAX_CHANNELS 32
#define NEC_MAX_NR_CHANNEL_CHUNKS 32
#define NEC_MAX_FOLD_N 16
#define NEC_MAX_COMM_N 12
#define NEC_MAX_NET_BUFFERS 24
#define NEC_CACHE_LINE_SIZE 128
#define NEC_NET_CONNECTOR_RANK (-1)
#define NEC_NET_MLA_DEV (-1)
#define NEC_POD_MLA_DEV (-2)
#define NEC_UNKNOWN_RANK (-3)
#define NEC_UNKNOWN_MLA_DEV (-3)
#define NEC_HIER_CC_PIPELINE_STAGE_N 3
#define NCCL_NET_NEURON_MAX_REQUESTS 128
#define NEC_MAX_STREAM_N 4
#define NEC_KANGARING_MAX_NUM_RANKS 256
#define KANGARING_NUM_SENG_PER_DEV 4
#define KANGARING_NUM_TPB_PER_DEV 8
#define KANGARING_MAX_SECONDARIES 3
#define ENC_MESH_MAX_NUM_EVENTS 64
#define ENC_MAX_OP_TYPES 13
#define ENC_MAX_MESH_SUBTYPES 20
#define ENC_MESH_MAX_NUM_DEVICES 128
#define ENC_PROXY_HISTOGRAM_OUTPUT_PATH_LENGTH_MAX 128
#ifndef KiB
#define KiB (1024ull)
#endif
#ifndef MiB
#define MiB (1024ull * KiB)
#endif
#ifndef GiB
#define GiB (1024ull * MiB)
#endif

typedef uint64_t dma_addr_t;

typedef enum feature_bitmap_bit_index {
    BIT_INDEX_TEST_FEATURE = 0,
    BIT_INDEX_MULTICORE_FEATURE = 1,
    BIT_INDEX_COUNT = 2
} feature_bitmap_bit_index_t;

typedef enum ofi_comm_type {
    NET_SEND_COMM = 0,
    NET_RECV_COMM = 1,
    NET_RECV_LISTEN_COMM = 2,
    LOCAL_RECV_COMM = 3,
    LOCAL_SEND_COMM = 4
} ofi_comm_type_t;

enum enc_comm_type {
    H_COMM_INTRA_ID = 0,
    H_COMM_INTER_ID = 1,
    H_COMM_MAX_ID = 2
};

typedef enum nec_pod_type {
    NEC_POD_TYPE_NONE = 0,
    NEC_POD_TYPE_P2P = 1,
    NEC_POD_TYPE_SWITCH = 2,
    NEC_POD_TYPE_INVALID = 3
} nec_pod_type_t;

typedef enum enc_pattern {
    ENC_PATTERN_RING = 0,
    ENC_PATTERN_MESH = 1,
    ENC_PATTERN_INVALID = 2
} enc_pattern_t;

typedef enum enc_net_connectivity {
    ENC_CONNECTIVITY_MESH = 0,
    ENC_CONNECTIVITY_RDH = 1,
    ENC_CONNECTIVITY_DEFAULT = 2
} enc_net_connectivity_t;

typedef enum enc_topology_mode {
    ENC_TOPO_NULL = 0,
    ENC_TOPO_4_DEVS_IN_ROW = 1,
    ENC_TOPO_4_DEVS_IN_COLUMN = 2
} enc_topology_mode_t;

enum SEngine {
    S0 = 0,
    S1 = 1,
    S2 = 2,
    S3 = 3,
    SENGS_PER_DIE = 2,
    SENGS_PER_MLA = 4
};

typedef enum metaring_type {
    RING = 0,
    KANGARING = 1,
    SINGLE_CYCLE_RING = 2,
    RDH = 3,
    INVALID_METARING = 4
} metaring_type_t;

typedef enum enc_alg_mesh_type {
    ENC_ALG_FULL_MESH = 0,
    ENC_ALG_GROUPED_MESH = 1,
    ENC_ALG_MESH_TRN2 = 2,
    ENC_ALG_MESH_SWITCH = 3,
    ENC_ALG_MESH_INVALID = 4
} enc_alg_mesh_type_t;

typedef enum net_addr_mark {
    NET_TRANSFER = 0,
    NET_OP_COMPLETE = 1,
    EXEC_COMPLETE = 2
} net_addr_mark_t;

typedef enum enc_mesh_event_type {
    EVT_SYNC = 0,
    EVT_GLOBAL_HNDSHK = 1,
    EVT_LOCAL_HNDSHK = 2,
    EVT_INTER_GRP_BRDCST = 3,
    EVT_FUNCTION_BARRIER_FIRST_COLL = 4,
    EVT_FUNCTION_BARRIER_LAST_COLL = 5,
    EVT_REDUCE_LOCAL_HNDSHK = 6,
    EVT_INTRA_GRP_BRDCST = 7,
    ENC_COMMON_NUM_EVENT_TYPE = 8,
    ENC_MESH_NUM_EVENT_START = 8,
    EVT_REDUCE_COPY = 8,
    EVT_REDUCE_COPY_2 = 9,
    EVT_REDUCE_WRITE = 10,
    EVT_INTER_GRP_BRDCST_2 = 11,
    EVT_LOCAL_AND_POD_GRP_BRDCST = 12,
    EVT_LOCAL_AND_POD_GRP_BRDCST_2 = 13,
    ENC_MESH_NUM_EVENT_TYPE = 14,
    ENC_A2A_NUM_EVENT_START = 14,
    EVT_LOCAL_HNDSHK_1 = 14,
    EVT_LOCAL_HNDSHK_2 = 15,
    EVT_GLOBAL_HNDSHK_1 = 16,
    EVT_INTER_GRP_BRDCST_1 = 17,
    EVT_INTRA_GRP_BRDCST_1 = 18,
    EVT_2DEV_BRDCST = 19,
    EVT_2DEV_HNDSHK = 20,
    EVT_COPY_FROM_HOST = 21,
    ENC_A2A_NUM_EVENT_TYPE = 22,
    ENC_RDH_NUM_EVENT_START = 22,
    EVT_RH_STEP_0 = 22,
    EVT_RH_STEP_1 = 23,
    EVT_RH_STEP_2 = 24,
    EVT_RH_STEP_3 = 25,
    EVT_RH_STEP_4 = 26,
    EVT_RH_STEP_5 = 27,
    EVT_RH_STEP_6 = 28,
    EVT_RH_STEP_7 = 29,
    EVT_RH_STEP_8 = 30,
    EVT_RH_STEP_9 = 31,
    EVT_RDH_LOCAL_HANDSHAKE = 31,
    EVT_RDH_AXES_HANDSHAKE = 32,
    EVT_RD_STEP_0 = 33,
    EVT_RD_STEP_1 = 34,
    EVT_RD_STEP_2 = 35,
    EVT_RD_STEP_3 = 36,
    EVT_RD_STEP_4 = 37,
    EVT_RD_STEP_5 = 38,
    EVT_RD_STEP_6 = 39,
    EVT_RDH_AXES_HANDSHAKE_2 = 40,
    EVT_1DEV_RDH_STEP_1 = 41,
    EVT_1DEV_RDH_STEP_2 = 42,
    EVT_1DEV_RD_STEP_1 = 43,
    EVT_1DEV_RD_STEP_2 = 44,
    EVT_1DEV_RH_STEP_1 = 45,
    EVT_2DEV_RD_STEP_0 = 46,
    EVT_2DEV_RD_STEP_1 = 47,
    EVT_2DEV_RD_STEP_2 = 48,
    EVT_2DEV_RD_STEP_3 = 49,
    EVT_2DEV_RD_STEP_4 = 50,
    EVT_RDH_LOCAL_PEER_HANDSHAKE = 51,
    ENC_RDH_NUM_EVENT_TYPE = 52
} enc_mesh_event_type_t;

/* C++ has no flexible array members; GCC and Clang accept one as an extension there. */
#if defined(__cplusplus) && defined(__GNUC__)
#define NEC_FLEXIBLE_ARRAY_EXTENSION __extension__
#else
#define NEC_FLEXIBLE_ARRAY_EXTENSION
#endif

typedef struct nec_version_info {
    uint64_t major;
    uint64_t minor;
    uint64_t patch;
    uint64_t maintenance;
    char git_hash[16];
    uint64_t compatibility_version;
    NEC_FLEXIBLE_ARRAY_EXTENSION uint8_t future_fields[]; /* new fields go here */
} nec_version_info_t;

typedef struct enc_host_mem {
    void *mem_handle;
    void *va;
    dma_addr_t pa;
    size_t size;
} enc_host_mem_t;

typedef struct enc_host_mem_shared {
    enc_host_mem_t mem;
    int refcnt;
} enc_host_mem_shared_t;

/* libnccom proxy state: incomplete here (see the comment at the top). */
struct enc_comm;
struct enc_channel;
typedef struct enc_comm *nec_comm_t;
typedef struct enc_channel *nec_channel_t;

void nec_inc_semaphore(volatile uint32_t *sem_inc_addr, uint32_t val);
size_t nec_get_dynamic_send_size_bytes(enc_host_mem_t *dyn_input, size_t data_type_sz, int dst_rank, int rank_n);
size_t nec_get_dynamic_send_offset_bytes(enc_host_mem_t *dyn_input, size_t data_type_sz, int dst_rank, int rank_n);
size_t nec_get_dynamic_recv_offset_bytes(enc_host_mem_t *dyn_input, size_t data_type_sz, int src_rank, int rank_n);
void nec_set_recv_size_bytes(enc_host_mem_t *dyn_input, size_t recv_size_bytes, size_t data_type_sz, int src_rank,
                             int rank_n);
int nec_get_device_count(int *available_devices_array, uint32_t array_size);
int nec_get_device_pci_bdf(int neuron_dev, uint32_t *domain, uint32_t *bus_num, uint8_t *pci_slot,
                           uint8_t *dev_func);
NRT_STATUS nec_get_virtual_core_size(uint32_t *virtual_core_size);
NRT_STATUS nec_get_version_info(nec_version_info_t *version_info);
NRT_STATUS nec_build_port_and_rid_map(int local_nec_dev_id, int *mla_indexes, int *host_device_ids, int count);
bool nec_is_mla_available(int local_nec_dev_id, int mla_idx);
int nec_mla_idx_to_rid(int local_nec_dev_id, int mla_idx);
int nec_rid_to_mla_idx(int local_nec_dev_id, int rid);
int nec_get_peer_mla_idx(int local_nec_dev_id, int mla_idx, int port);
int nec_get_p2p_pod_peer_node(uint32_t nec_dev_id, int node, uint32_t port_distance, int *peer_node);
NRT_STATUS nec_pod_node_can_access_peer_node(nec_pod_type_t pod_type, uint32_t local_rid, uint32_t local_node_id,
                                             uint32_t remote_rid, uint32_t remote_node_id, int *can_access_peer);
void nec_ndl_printk(char *str, uint32_t size, uint32_t action);

#ifdef __cplusplus
}
#endif

#endif /* NRT_NEC_H */
