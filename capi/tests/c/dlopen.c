/* Loads the library the way libfabric and frameworks do: dlopen("libnrt.so.1"), then resolves
 * entry points unversioned (dlsym) and at NRT_2.0.0 (dlvsym). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "nrt/nrt.h"
#include "nrt/nrt_version.h"

int main(void) {
    void *h = dlopen("libnrt.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
    NRT_STATUS (*get_version)(nrt_version_t *, size_t) = (NRT_STATUS (*)(nrt_version_t *, size_t))dlvsym(h, "nrt_get_version", "NRT_2.0.0");
    NRT_STATUS (*init)(nrt_framework_type_t, const char *, const char *) = (NRT_STATUS (*)(nrt_framework_type_t, const char *, const char *))dlsym(h, "nrt_init");
    void (*close_)(void) = (void (*)(void))dlsym(h, "nrt_close");
    const char *(*str)(NRT_STATUS) = (const char *(*)(NRT_STATUS))dlvsym(h, "nrt_get_status_as_str", "NRT_2.0.0");
    if (!get_version || !init || !close_ || !str) { printf("dlsym: %s\n", dlerror()); return 1; }
    if (dlvsym(h, "nrt_init", "NRT_1.0.0") != NULL) { printf("nrt_init resolved at a version it does not have\n"); return 1; }
    nrt_version_t v;
    memset(&v, 0, sizeof v);
    if (get_version(&v, sizeof v) != NRT_SUCCESS || strstr(v.rt_detail, "nrt-emu") == NULL) { printf("version\n"); return 1; }
    if (init(NRT_FRAMEWORK_TYPE_NO_FW, "", "") != NRT_SUCCESS) { printf("init\n"); return 1; }
    close_();
    if (strcmp(str(NRT_TIMEOUT), "NRT_TIMEOUT") != 0) { printf("status str\n"); return 1; }
    dlclose(h);
    printf("dlopen ok: %s\n", v.rt_detail);
    return 0;
}
