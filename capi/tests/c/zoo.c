/* Runs a NEFF through the C API the way a framework does: tensor info, one device tensor per
 * input/output, inputs from INDIR/<name>.bin, `iterations` executions, outputs written to
 * OUTDIR/<name>.bin.   usage: zoo NEFF INDIR OUTDIR ITERATIONS */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"

static void *slurp(const char *p, size_t *n) {
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END); *n = (size_t)ftell(f); rewind(f);
    void *b = malloc(*n ? *n : 1);
    size_t r = fread(b, 1, *n, f);
    fclose(f);
    if (r != *n) { free(b); return NULL; }
    return b;
}

static int callbacks = 0;
static void on_exec(void *p, uint32_t m, uint32_t v, uint64_t j, NRT_STATUS s) {
    (void)p; (void)m; (void)v; (void)j;
    if (s == NRT_SUCCESS) callbacks++;
}

#define TRY(call) do { NRT_STATUS s_ = (call); if (s_ != NRT_SUCCESS) { fprintf(stderr, "%s: %s\n", #call, nrt_get_status_as_str(s_)); return 1; } } while (0)

int main(int argc, char **argv) {
    if (argc != 5) { fprintf(stderr, "usage: zoo NEFF INDIR OUTDIR ITERATIONS\n"); return 2; }
    size_t size = 0;
    void *neff = slurp(argv[1], &size);
    if (!neff) { fprintf(stderr, "cannot read %s\n", argv[1]); return 1; }
    TRY(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    TRY(nrt_register_async_exec_callback(on_exec, NULL));
    nrt_model_t *model = NULL;
    TRY(nrt_load(neff, size, -1, -1, &model));
    nrt_tensor_info_array_t *info = NULL;
    TRY(nrt_get_model_tensor_info(model, &info));
    nrt_tensor_set_t *in = NULL, *out = NULL;
    TRY(nrt_allocate_tensor_set(&in));
    TRY(nrt_allocate_tensor_set(&out));
    nrt_tensor_t **tensors = calloc(info->tensor_count, sizeof *tensors);
    char path[4096];
    for (uint64_t i = 0; i < info->tensor_count; i++) {
        nrt_tensor_info_t *t = &info->tensor_array[i];
        TRY(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, t->size, t->name, &tensors[i]));
        if (t->usage == NRT_TENSOR_USAGE_INPUT) {
            snprintf(path, sizeof path, "%s/%s.bin", argv[2], t->name);
            size_t n = 0;
            void *data = slurp(path, &n);
            if (!data || n != t->size) { fprintf(stderr, "%s: missing or %zu bytes, want %zu\n", path, n, t->size); return 1; }
            TRY(nrt_tensor_write(tensors[i], data, 0, n));
            free(data);
            TRY(nrt_add_tensor_to_tensor_set(in, t->name, tensors[i]));
        } else {
            TRY(nrt_add_tensor_to_tensor_set(out, t->name, tensors[i]));
        }
    }
    int iterations = atoi(argv[4]);
    for (int k = 0; k < iterations; k++) TRY(nrt_execute(model, in, out));
    nrt_model_info_t mi;
    size_t mi_size = 0;
    TRY(nrt_get_model_info(model, &mi, sizeof mi, &mi_size));
    TRY(nrt_async_drain_queued_execs((int32_t)mi.vnc)); /* legacy async mode: wait for the queue */
    for (uint64_t i = 0; i < info->tensor_count; i++) {
        nrt_tensor_info_t *t = &info->tensor_array[i];
        if (t->usage != NRT_TENSOR_USAGE_OUTPUT) continue;
        void *data = malloc(t->size);
        TRY(nrt_tensor_read(tensors[i], data, 0, t->size));
        snprintf(path, sizeof path, "%s/%s.bin", argv[3], t->name);
        FILE *f = fopen(path, "wb");
        if (!f || fwrite(data, 1, t->size, f) != t->size) { fprintf(stderr, "cannot write %s\n", path); return 1; }
        fclose(f);
        free(data);
        printf("output %s %zu bytes\n", t->name, t->size);
    }
    for (uint64_t i = 0; i < info->tensor_count; i++) nrt_tensor_free(&tensors[i]);
    nrt_destroy_tensor_set(&in);
    nrt_destroy_tensor_set(&out);
    TRY(nrt_free_model_tensor_info(info));
    TRY(nrt_unload(model));
    nrt_close();
    printf("callbacks %d\n", callbacks);
    free(tensors);
    free(neff);
    return 0;
}
