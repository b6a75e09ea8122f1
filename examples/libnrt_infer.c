/*
 * libnrt_infer.c - a minimal Neuron runtime program: load a NEFF, bind one device tensor per
 * model input and output, fill the inputs with a ramp, execute, and print each output's first
 * values. It uses only the public libnrt API, so the same source builds against AWS's runtime.
 *
 *   nrt-emu install --prefix /tmp/neuron
 *   cc examples/libnrt_infer.c -I/tmp/neuron/include -L/tmp/neuron/lib -lnrt -pthread -o infer
 *   LD_LIBRARY_PATH=/tmp/neuron/lib NRT_EMU_TARGET=trn1 ./infer fixtures/neffs/mlp2.trn1.neff
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nrt/nrt.h"
#include "nrt/nrt_experimental.h"

#define CHECK(call)                                                              \
    do {                                                                         \
        NRT_STATUS s_ = (call);                                                  \
        if (s_ != NRT_SUCCESS) {                                                 \
            fprintf(stderr, "%s failed: %s\n", #call, nrt_get_status_as_str(s_)); \
            exit(1);                                                             \
        }                                                                        \
    } while (0)

static void *read_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    rewind(f);
    void *buf = malloc(*size);
    if (fread(buf, 1, *size, f) != *size) {
        fprintf(stderr, "%s: short read\n", path);
        exit(1);
    }
    fclose(f);
    return buf;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL.neff\n", argv[0]);
        return 2;
    }
    size_t neff_size = 0;
    void *neff = read_file(argv[1], &neff_size);

    CHECK(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""));
    nrt_model_t *model = NULL;
    CHECK(nrt_load(neff, neff_size, -1, -1, &model));

    nrt_tensor_info_array_t *info = NULL;
    CHECK(nrt_get_model_tensor_info(model, &info));
    nrt_tensor_set_t *inputs = NULL, *outputs = NULL;
    CHECK(nrt_allocate_tensor_set(&inputs));
    CHECK(nrt_allocate_tensor_set(&outputs));
    nrt_tensor_t **tensors = calloc(info->tensor_count, sizeof *tensors);

    for (uint64_t i = 0; i < info->tensor_count; i++) {
        const nrt_tensor_info_t *t = &info->tensor_array[i];
        CHECK(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, t->size, t->name, &tensors[i]));
        if (t->usage == NRT_TENSOR_USAGE_INPUT) {
            unsigned char *data = malloc(t->size);
            if (t->dtype == NRT_DTYPE_FLOAT32) {
                for (size_t k = 0; k < t->size / sizeof(float); k++) ((float *)data)[k] = (float)(k % 16) / 16.0f;
            } else {
                memset(data, 0, t->size);
            }
            CHECK(nrt_tensor_write(tensors[i], data, 0, t->size));
            free(data);
            CHECK(nrt_add_tensor_to_tensor_set(inputs, t->name, tensors[i]));
        } else {
            CHECK(nrt_add_tensor_to_tensor_set(outputs, t->name, tensors[i]));
        }
    }

    CHECK(nrt_execute(model, inputs, outputs));

    for (uint64_t i = 0; i < info->tensor_count; i++) {
        const nrt_tensor_info_t *t = &info->tensor_array[i];
        if (t->usage != NRT_TENSOR_USAGE_OUTPUT) continue;
        printf("output %s: %zu bytes, shape [", t->name, t->size);
        for (uint32_t d = 0; d < t->ndim; d++) printf(d ? ", %u" : "%u", t->shape[d]);
        printf("]");
        if (t->dtype == NRT_DTYPE_FLOAT32 && t->size >= 4 * sizeof(float)) {
            float first[4];
            CHECK(nrt_tensor_read(tensors[i], first, 0, sizeof first));
            printf(", first values %g %g %g %g", first[0], first[1], first[2], first[3]);
        }
        printf("\n");
    }

    for (uint64_t i = 0; i < info->tensor_count; i++) nrt_tensor_free(&tensors[i]);
    free(tensors);
    nrt_destroy_tensor_set(&inputs);
    nrt_destroy_tensor_set(&outputs);
    CHECK(nrt_free_model_tensor_info(info));
    CHECK(nrt_unload(model));
    nrt_close();
    free(neff);
    return 0;
}
