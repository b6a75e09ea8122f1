/*
 * nrt/nrt_version.h - runtime version query (nrt-emu).
 *
 * Unlike the published header, this one includes what it uses, so it compiles on its own.
 */
#ifndef NRT_VERSION_H
#define NRT_VERSION_H

#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RT_VERSION_DETAIL_LEN 128
#define GIT_HASH_LEN 64

typedef struct nrt_version {
    uint64_t rt_major;
    uint64_t rt_minor;
    uint64_t rt_patch;
    uint64_t rt_maintenance;
    char rt_detail[RT_VERSION_DETAIL_LEN];
    char git_hash[GIT_HASH_LEN];
} nrt_version_t;

/* Fills at most `size` bytes of *ver (pass sizeof(nrt_version_t)). May be called before
 * nrt_init. */
NRT_STATUS nrt_get_version(nrt_version_t *ver, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* NRT_VERSION_H */
