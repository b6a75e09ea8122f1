/* nrt_get_version from C: the libnrt API level (docs/c-api.md §8.3), before nrt_init, and a
 * call with a size shorter than the struct, which must fill only that prefix. Prints
 * "version <major>.<minor>.<patch>.<maintenance> | <rt_detail> | <git_hash>". */
#include "nrt/nrt.h"
#include "nrt/nrt_version.h"

#include <stdio.h>
#include <string.h>

int main(void) {
    nrt_version_t v;
    memset(&v, 0xAB, sizeof v);
    if (nrt_get_version(&v, sizeof v) != NRT_SUCCESS) {
        printf("nrt_get_version failed\n");
        return 1;
    }
    /* Only the four numbers: the strings must stay untouched. */
    nrt_version_t head;
    memset(&head, 0xAB, sizeof head);
    if (nrt_get_version(&head, 32) != NRT_SUCCESS) {
        printf("short nrt_get_version failed\n");
        return 1;
    }
    if (head.rt_major != v.rt_major || head.rt_maintenance != v.rt_maintenance ||
        (unsigned char)head.rt_detail[0] != 0xAB) {
        printf("short call wrote past its size\n");
        return 1;
    }
    printf("version %llu.%llu.%llu.%llu | %s | %s\n", (unsigned long long)v.rt_major,
           (unsigned long long)v.rt_minor, (unsigned long long)v.rt_patch,
           (unsigned long long)v.rt_maintenance, v.rt_detail, v.git_hash);
    return 0;
}
