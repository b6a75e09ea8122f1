/* Every implemented function of the nrt-emu libnrt on its success and error paths, against one
 * model (argv[1]: a zoo NEFF whose inputs and outputs are f32). Prints one line per failed
 * check and exits 1 if any failed. */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nrt/nrt.h"
#include "nrt/nrt_async.h"
#include "nrt/nrt_experimental.h"
#include "nrt/nrt_profile.h"
#include "nrt/nrt_status.h"
#include "nrt/nrt_sys_trace.h"
#include "nrt/nrt_version.h"

static int failures = 0, checks = 0;
#define CHECK(cond) do { checks++; if (!(cond)) { printf("FAILED line %d: %s\n", __LINE__, #cond); failures++; } } while (0)
#define ST(call, want) do { NRT_STATUS s_ = (call); checks++; if (s_ != (want)) { printf("FAILED line %d: %s = %s(%d), want %s\n", __LINE__, #call, nrt_get_status_as_str(s_), s_, #want); failures++; } } while (0)

static void *slurp(const char *p, size_t *n) {
    FILE *f = fopen(p, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END); *n = (size_t)ftell(f); rewind(f);
    void *b = malloc(*n);
    if (fread(b, 1, *n, f) != *n) { fclose(f); free(b); return NULL; }
    fclose(f);
    return b;
}

static int async_calls = 0;
static void on_exec(void *params, uint32_t model_id, uint32_t vnc, uint64_t job_id, NRT_STATUS status) {
    (void)model_id; (void)vnc; (void)job_id; (void)status;
    *(int *)params += 1;
    async_calls++;
}

int main(int argc, char **argv) {
    if (argc < 3) { printf("usage: api NEFF SCRATCH_DIR\n"); return 2; }
    size_t size = 0;
    void *neff = slurp(argv[1], &size);
    CHECK(neff != NULL);
    char path[4096];

    /* ---- before nrt_init ---- */
    nrt_model_t *model = NULL;
    ST(nrt_load(neff, size, -1, -1, &model), NRT_UNINITIALIZED);
    nrt_tensor_t *t = NULL;
    ST(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, "t", &t), NRT_UNINITIALIZED);
    uint32_t total = 0, visible = 0;
    ST(nrt_get_total_vnc_count(&total), NRT_SUCCESS);
    ST(nrt_get_total_nc_count(&total), NRT_SUCCESS);
    ST(nrt_get_visible_vnc_count(&visible), NRT_SUCCESS);
    ST(nrt_get_visible_nc_count(&visible), NRT_SUCCESS);
    CHECK(total >= 1 && visible >= 1 && visible <= total);
    ST(nrt_get_total_vnc_count(NULL), NRT_INVALID);
    nrt_version_t ver;
    ST(nrt_get_version(&ver, sizeof ver), NRT_SUCCESS);
    CHECK(strstr(ver.rt_detail, "nrt-emu") != NULL);
    ST(nrt_get_version(NULL, sizeof ver), NRT_INVALID);
    uint8_t iram[4] = {1, 2, 3, 4};
    nrt_ucode_info uc = {{iram, sizeof iram}, {iram, sizeof iram}};
    ST(nrt_set_pool_eng_ucode(&uc), NRT_SUCCESS);
    ST(nrt_set_pool_eng_ucode(NULL), NRT_INVALID);
    CHECK(strcmp(nrt_get_status_as_str(NRT_EXEC_OOB), "NRT_EXEC_OOB") == 0);
    CHECK(strcmp(nrt_get_status_as_str((NRT_STATUS)8), "NRT_UNKNOWN_STATUS") == 0);
    nrt_close(); /* before init: logged, nothing happens */

    /* ---- init ---- */
    ST(nrt_init(NRT_FRAMEWORK_TYPE_INVALID, "", ""), NRT_INVALID);
    ST(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_SUCCESS);
    ST(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_FAILURE);
    ST(nrt_set_pool_eng_ucode(&uc), NRT_INVALID);
    nrt_instance_info_t ii;
    memset(&ii, 0, sizeof ii);
    ST(nrt_get_instance_info(&ii, sizeof ii), NRT_SUCCESS);
    CHECK(ii.family == NRT_INSTANCE_TRN1 || ii.family == NRT_INSTANCE_TRN2);
    CHECK(strncmp(ii.arch_name, "trn", 3) == 0);
    ST(nrt_get_instance_info(NULL, sizeof ii), NRT_INVALID);
    ST(nrt_get_visible_vnc_count(&visible), NRT_SUCCESS);

    /* ---- load ---- */
    ST(nrt_load(NULL, size, -1, -1, &model), NRT_INVALID);
    ST(nrt_load(neff, size, -1, -1, NULL), NRT_INVALID);
    ST(nrt_load(neff, 0, -1, -1, &model), NRT_INVALID);
    ST(nrt_load(neff, 100, -1, -1, &model), NRT_INVALID);
    ST(nrt_load(neff, size, (int32_t)visible, -1, &model), NRT_INVALID);
    ST(nrt_load(neff, size, 0, 3, &model), NRT_INVALID);
    ST(nrt_load_collectives(neff, size, 0, -1, 0, 2, &model), NRT_FAILURE);
    ST(nrt_load(neff, size, -1, -1, &model), NRT_SUCCESS);
    uint32_t n = 0;
    ST(nrt_get_model_vnc_count(model, &n), NRT_SUCCESS);
    CHECK(n == 1);
    ST(nrt_get_model_nc_count(model, &n), NRT_SUCCESS);
    ST(nrt_get_model_instance_count(model, &n), NRT_SUCCESS);
    CHECK(n == 1);
    nrt_model_info_t mi = {99};
    size_t written = 0;
    ST(nrt_get_model_info(model, &mi, sizeof mi, &written), NRT_SUCCESS);
    CHECK(mi.vnc == 0 && written == sizeof mi);
    ST(nrt_get_model_info(model, NULL, sizeof mi, &written), NRT_INVALID);

    /* ---- tensor info ---- */
    nrt_tensor_info_array_t *info = NULL;
    ST(nrt_get_model_tensor_info(model, NULL), NRT_INVALID);
    ST(nrt_get_model_tensor_info(NULL, &info), NRT_INVALID);
    ST(nrt_get_model_tensor_info(model, &info), NRT_SUCCESS);
    CHECK(info != NULL && info->tensor_count >= 2);

    /* ---- tensor sets and tensors per model IO ---- */
    nrt_tensor_set_t *in = NULL, *out = NULL;
    ST(nrt_allocate_tensor_set(&in), NRT_SUCCESS);
    ST(nrt_allocate_tensor_set(&out), NRT_SUCCESS);
    ST(nrt_allocate_tensor_set(NULL), NRT_INVALID);
    nrt_tensor_t *io[16] = {0};
    size_t first_out = 0, out_size = 0;
    for (uint64_t i = 0; i < info->tensor_count && i < 16; i++) {
        nrt_tensor_info_t *ti = &info->tensor_array[i];
        CHECK(ti->dtype == NRT_DTYPE_FLOAT32 && ti->ndim >= 1 && ti->shape != NULL);
        ST(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, ti->size, ti->name, &io[i]), NRT_SUCCESS);
        CHECK(nrt_tensor_get_size(io[i]) == ti->size);
        if (ti->usage == NRT_TENSOR_USAGE_INPUT) {
            float *v = (float *)malloc(ti->size);
            for (size_t k = 0; k < ti->size / 4; k++) v[k] = (float)(k % 7) * 0.25f;
            ST(nrt_tensor_write(io[i], v, 0, ti->size), NRT_SUCCESS);
            free(v);
            ST(nrt_add_tensor_to_tensor_set(in, ti->name, io[i]), NRT_SUCCESS);
        } else {
            if (!first_out) { first_out = i; out_size = ti->size; }
            ST(nrt_add_tensor_to_tensor_set(out, ti->name, io[i]), NRT_SUCCESS);
        }
    }
    nrt_tensor_t *got = NULL;
    ST(nrt_get_tensor_from_tensor_set(in, info->tensor_array[0].name, &got), NRT_SUCCESS);
    CHECK(got == io[0]);
    got = (nrt_tensor_t *)0x1;
    ST(nrt_get_tensor_from_tensor_set(in, "no such tensor", &got), NRT_FAILURE);
    CHECK(got == (nrt_tensor_t *)0x1);
    ST(nrt_add_tensor_to_tensor_set(in, NULL, io[0]), NRT_INVALID);
    ST(nrt_add_tensor_to_tensor_set(NULL, "x", io[0]), NRT_INVALID);
    char longname[400];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    ST(nrt_add_tensor_to_tensor_set(in, longname, io[0]), NRT_INVALID);
    ST(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 64, longname, &t), NRT_INVALID);

    /* ---- execute ---- */
    ST(nrt_execute(model, in, out), NRT_SUCCESS);
    ST(nrt_execute_repeat(model, in, out, 1), NRT_SUCCESS);
    /* add has 2 inputs and 1 output: its outputs cannot feed its inputs */
    ST(nrt_execute_repeat(model, in, out, 2), NRT_INVALID);
    ST(nrt_execute_repeat(model, in, out, 0), NRT_INVALID);
    ST(nrt_execute(NULL, in, out), NRT_INVALID);
    ST(nrt_execute(model, NULL, out), NRT_INVALID);
    ST(nrt_execute(model, out, out), NRT_INVALID); /* unknown tensor names */
    ST(nrt_tensor_check_output_completion(io[first_out], 1000000, 2), NRT_SUCCESS);
    ST(nrt_tensor_check_output_completion(io[first_out], 1000, 3), NRT_TIMEOUT);
    ST(nrt_tensor_reset_output_completion(io[first_out]), NRT_SUCCESS);
    ST(nrt_tensor_check_output_completion(io[first_out], 0, 1), NRT_TIMEOUT);
    ST(nrt_tensor_check_output_completion(NULL, 0, 1), NRT_INVALID);
    float *result = (float *)malloc(out_size);
    ST(nrt_tensor_read(io[first_out], result, 0, out_size), NRT_SUCCESS);

    /* wrong sizes: an input of the wrong size in a fresh set */
    nrt_tensor_set_t *bad = NULL;
    ST(nrt_allocate_tensor_set(&bad), NRT_SUCCESS);
    nrt_tensor_t *small = NULL;
    ST(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 4, "small", &small), NRT_SUCCESS);
    for (uint64_t i = 0; i < info->tensor_count; i++)
        if (info->tensor_array[i].usage == NRT_TENSOR_USAGE_INPUT)
            ST(nrt_add_tensor_to_tensor_set(bad, info->tensor_array[i].name, small), NRT_SUCCESS);
    ST(nrt_execute(model, bad, out), NRT_INVALID);
    /* a tensor of another core */
    if (visible > 1) {
        nrt_tensor_t *other = NULL;
        ST(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 1, info->tensor_array[0].size, "other", &other), NRT_SUCCESS);
        nrt_tensor_set_t *cross = NULL;
        ST(nrt_allocate_tensor_set(&cross), NRT_SUCCESS);
        for (uint64_t i = 0; i < info->tensor_count; i++)
            if (info->tensor_array[i].usage == NRT_TENSOR_USAGE_INPUT)
                ST(nrt_add_tensor_to_tensor_set(cross, info->tensor_array[i].name, i == 0 ? other : io[i]), NRT_SUCCESS);
        ST(nrt_execute(model, cross, out), NRT_INVALID);
        ST(nrt_tensor_copy(io[0], 0, other, 0, 16), NRT_INVALID);
        nrt_destroy_tensor_set(&cross);
        nrt_tensor_free(&other);
    }
    /* a tensor freed while still in a set */
    nrt_tensor_free(&small);
    CHECK(small == NULL);
    ST(nrt_execute(model, bad, out), NRT_INVALID);
    nrt_destroy_tensor_set(&bad);
    CHECK(bad == NULL);
    nrt_destroy_tensor_set(&bad); /* NULL: logged */

    /* ---- tensor operations ---- */
    nrt_tensor_t *d = NULL, *h = NULL, *v = NULL, *e = NULL, *sl = NULL;
    ST(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 256, "d", &d), NRT_SUCCESS);
    ST(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, -1, 256, "h", &h), NRT_SUCCESS);
    ST(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_VIRTUAL, -1, 256, NULL, &v), NRT_SUCCESS);
    ST(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_HOST, -1, 8u << 20, "big", &t), NRT_RESOURCE);
    ST(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, -1, 256, "d", &t), NRT_INVALID);
    ST(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 0, "zero", &t), NRT_INVALID);
    ST(nrt_tensor_allocate((nrt_tensor_placement_t)7, 0, 16, "p", &t), NRT_INVALID);
    ST(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 16, "p", NULL), NRT_INVALID);
    uint8_t buf[256], back[256];
    for (int i = 0; i < 256; i++) buf[i] = (uint8_t)i;
    ST(nrt_tensor_write(d, buf, 0, 256), NRT_SUCCESS);
    ST(nrt_tensor_write(d, buf, 1, 256), NRT_INVALID);
    ST(nrt_tensor_write(d, NULL, 0, 16), NRT_INVALID);
    ST(nrt_tensor_read(d, back, 200, 100), NRT_INVALID);
    ST(nrt_tensor_read(d, back, (size_t)-1, 2), NRT_INVALID);
    ST(nrt_tensor_copy(d, 0, h, 0, 256), NRT_SUCCESS);
    ST(nrt_tensor_copy(h, 0, v, 0, 256), NRT_SUCCESS);
    ST(nrt_tensor_read(v, back, 0, 256), NRT_SUCCESS);
    CHECK(memcmp(buf, back, 256) == 0);
    ST(nrt_tensor_copy(d, 128, v, 0, 256), NRT_INVALID);
    ST(nrt_tensor_memset(v, 16, 0x1AB, 8), NRT_SUCCESS);
    ST(nrt_tensor_read(v, back, 16, 8), NRT_SUCCESS);
    CHECK(back[0] == 0xAB && back[7] == 0xAB);
    ST(nrt_tensor_memset(v, 250, 0, 8), NRT_INVALID);
    /* batches */
    uint8_t b1[8], b2[8];
    nrt_tensor_batch_op_t ops[2] = {{8, 8, b1}, {100, 8, b2}};
    nrt_tensor_batch_t batch = {d, ops, 2};
    ST(nrt_tensor_read_batch(&batch, 1, false), NRT_SUCCESS);
    CHECK(b1[0] == 8 && b2[7] == 107);
    memset(b1, 0xEE, 8);
    ST(nrt_tensor_write_batch(&batch, 1, true), NRT_SUCCESS);
    ST(nrt_tensor_read(d, back, 8, 1), NRT_SUCCESS);
    CHECK(back[0] == 0xEE);
    nrt_tensor_batch_op_t oob[1] = {{250, 8, b1}};
    nrt_tensor_batch_t batch_oob = {d, oob, 1};
    ST(nrt_tensor_read_batch(&batch_oob, 1, false), NRT_INVALID);
    ST(nrt_tensor_read_batch(NULL, 1, false), NRT_INVALID);
    nrt_tensor_batch_t batch_null = {d, NULL, 1};
    ST(nrt_tensor_write_batch(&batch_null, 1, false), NRT_INVALID);
    /* slices */
    ST(nrt_tensor_allocate_slice(d, 64, 32, "slice", &sl), NRT_SUCCESS);
    CHECK(nrt_tensor_get_size(sl) == 32);
    ST(nrt_tensor_read(sl, back, 0, 32), NRT_SUCCESS);
    CHECK(back[0] == 64 && back[31] == 95);
    ST(nrt_tensor_allocate_slice(d, 250, 32, "slice2", &t), NRT_INVALID);
    nrt_tensor_device_allocation_info_t ai, as;
    ST(nrt_tensor_get_device_allocation_info(d, &ai), NRT_SUCCESS);
    ST(nrt_tensor_get_device_allocation_info(sl, &as), NRT_SUCCESS);
    CHECK(as.physical_address == ai.physical_address + 64 && ai.size >= 256);
    ST(nrt_tensor_get_device_allocation_info(v, &ai), NRT_INVALID);
    ST(nrt_tensor_get_device_allocation_info(d, NULL), NRT_INVALID);
    /* virtual address and memcpy_to_device */
    uint8_t *va = (uint8_t *)nrt_tensor_get_va(d);
    CHECK(va != NULL && va[1] == 1);
    CHECK(nrt_tensor_get_va(NULL) == NULL);
    uint8_t seven[4] = {7, 7, 7, 7};
    ST(nrt_memcpy_to_device(va + 32, seven, 4), NRT_SUCCESS);
    ST(nrt_tensor_read(d, back, 32, 4), NRT_SUCCESS);
    CHECK(back[0] == 7 && back[3] == 7);
    ST(nrt_memcpy_to_device(seven, seven, 4), NRT_INVALID);
    /* empty + attach */
    ST(nrt_tensor_allocate_empty("empty", &e), NRT_SUCCESS);
    ST(nrt_tensor_read(e, back, 0, 1), NRT_INVALID);
    uint8_t mine[64] = {0};
    ST(nrt_tensor_attach_buffer(e, mine, sizeof mine), NRT_SUCCESS);
    ST(nrt_tensor_attach_buffer(e, NULL, 8), NRT_INVALID);
    ST(nrt_tensor_write(e, buf, 0, 64), NRT_SUCCESS);
    CHECK(mine[63] == 63);
    CHECK(nrt_tensor_get_va(e) == mine);
    /* freed twice, used after free, wrong kind */
    nrt_tensor_t *copy = v;
    nrt_tensor_free(&v);
    CHECK(v == NULL);
    nrt_tensor_free(&copy); /* freed twice: logged */
    ST(nrt_tensor_read(copy, back, 0, 1), NRT_INVALID);
    CHECK(nrt_tensor_get_size(copy) == 0);
    ST(nrt_tensor_read((nrt_tensor_t *)model, back, 0, 1), NRT_INVALID);
    ST(nrt_unload((nrt_model_t *)d), NRT_INVALID);
    nrt_tensor_free(NULL);

    /* ---- memory statistics ---- */
    nrt_vnc_memory_stats_t ms;
    written = 0;
    ST(nrt_get_vnc_memory_stats(0, &ms, sizeof ms, &written), NRT_SUCCESS);
    CHECK(ms.bytes_used > 0 && ms.bytes_limit > ms.bytes_used && written == sizeof ms);
    size_t used_before = ms.bytes_used;
    nrt_tensor_t *mb = NULL;
    ST(nrt_tensor_allocate(NRT_TENSOR_PLACEMENT_DEVICE, 0, 1 << 20, "mb", &mb), NRT_SUCCESS);
    ST(nrt_get_vnc_memory_stats(0, &ms, sizeof ms, &written), NRT_SUCCESS);
    CHECK(ms.bytes_used >= used_before + (1 << 20));
    nrt_tensor_free(&mb);
    ST(nrt_get_vnc_memory_stats(0, &ms, sizeof ms, &written), NRT_SUCCESS);
    CHECK(ms.bytes_used == used_before);
    ST(nrt_get_vnc_memory_stats(visible, &ms, sizeof ms, &written), NRT_INVALID);
    ST(nrt_get_vnc_memory_stats(0, NULL, sizeof ms, &written), NRT_INVALID);

    /* ---- async (nrta) ---- */
    nrta_error_tracker_t *tracker = NULL;
    ST(nrta_error_tracker_create(0, &tracker), NRT_SUCCESS);
    ST(nrta_error_tracker_create(visible, &tracker), NRT_INVALID);
    nrta_seq_t s1 = 0, s2 = 0, s3 = 0, s4 = 0, last = 0;
    ST(nrta_tensor_write(d, buf, 0, 16, 0, tracker, &s1), NRT_SUCCESS);
    ST(nrta_tensor_read(back, d, 0, 16, 1, tracker, &s2), NRT_SUCCESS);
    ST(nrta_tensor_copy(d, 0, d, 128, 16, 0, tracker, &s3), NRT_SUCCESS);
    ST(nrta_tensor_write(d, buf, 250, 16, 0, tracker, &s4), NRT_SUCCESS); /* fails on the unit */
    nrta_seq_t unset = 0;
    ST(nrta_tensor_write(d, buf, 0, 16, 5, tracker, &unset), NRT_INVALID);
    CHECK(unset == 0);
    ST(nrta_tensor_write(d, buf, 0, 16, 0, tracker, NULL), NRT_INVALID);
    CHECK(NRTA_SEQ_GET_SEQ_NUM(s1) == 1 && NRTA_SEQ_GET_XU_ID(s1) == NRTA_XU_TENSOR_WRITE);
    CHECK(memcmp(back, buf, 16) == 0);
    bool done = false;
    ST(nrta_is_completed(s1, &done), NRT_SUCCESS);
    CHECK(done);
    ST(nrta_is_completed(s1 + 100, &done), NRT_INVALID);
    ST(nrta_get_sequence(0, NRTA_XU_TENSOR_WRITE, 0, &last), NRT_SUCCESS);
    CHECK(NRTA_SEQ_GET_SEQ_NUM(last) == 2);
    ST(nrta_get_sequence(0, NRTA_XU_COLLECTIVES, 0, &last), NRT_FAILURE);
    nrta_seq_t es = 0;
    ST(nrta_execute_schedule(model, in, out, 0, tracker, &es), NRT_SUCCESS);
    ST(nrta_execute_schedule(model, in, out, 1, tracker, &es), NRT_INVALID);
    int fd = -1;
    ST(nrta_get_completion_handle(es, &fd), NRT_SUCCESS);
    struct pollfd pfd = {fd, POLLIN, 0};
    CHECK(poll(&pfd, 1, 30000) == 1);
    close(fd);
    ST(nrta_is_completed(es, &done), NRT_SUCCESS);
    CHECK(done);
    ST(nrta_get_sequence(0, NRTA_XU_COMPUTE, 0, &last), NRT_SUCCESS);
    CHECK(last == es);
    const nrta_error_t *errs = NULL;
    size_t nerr = 0;
    ST(nrta_error_tracker_get_list(tracker, &errs, &nerr), NRT_SUCCESS);
    CHECK(nerr == 1 && errs[0].error_code == NRT_INVALID && errs[0].seq_id == s4 && NRTA_SEQ_GET_SEQ_NUM(s4) == 2);
    nrt_cc_comm_t comm = {0};
    nrt_tensor_list_t tl = {io, 1};
    nrt_cc_context_t *cc = NULL;
    ST(nrta_cc_prepare(&comm, &tl, &tl, NRT_DTYPE_FLOAT32, NRT_OP_ADD, NRT_CC_ALLREDUCE, &cc), NRT_FAILURE);
    ST(nrta_cc_prepare(NULL, &tl, &tl, NRT_DTYPE_FLOAT32, NRT_OP_ADD, NRT_CC_ALLREDUCE, &cc), NRT_INVALID);
    ST(nrta_cc_schedule(&cc, 0, NULL, &es), NRT_FAILURE);
    ST(nrta_cc_schedule(NULL, 0, NULL, &es), NRT_INVALID);
    nrta_error_tracker_destroy(tracker);
    ST(nrta_error_tracker_get_list(tracker, &errs, &nerr), NRT_INVALID);

    /* ---- legacy callback (registered; called when NEURON_RT_ASYNC_EXEC_MAX_INFLIGHT_REQUESTS > 0) ---- */
    int calls = 0;
    ST(nrt_register_async_exec_callback(on_exec, &calls), NRT_SUCCESS);
    ST(nrt_async_drain_queued_execs(0), NRT_SUCCESS);
    ST(nrt_async_drain_queued_execs((int32_t)visible), NRT_INVALID);

    /* ---- profiling and traces ---- */
    snprintf(path, sizeof path, "%s/profile.json", argv[2]);
    ST(nrt_profile_start(model, path), NRT_SUCCESS);
    ST(nrt_execute(model, in, out), NRT_SUCCESS);
    ST(nrt_profile_stop("/elsewhere.json"), NRT_INVALID);
    ST(nrt_profile_stop(path), NRT_SUCCESS);
    ST(nrt_profile_stop(path), NRT_INVALID);
    size_t plen = 0;
    void *prof = slurp(path, &plen);
    CHECK(prof != NULL && plen > 100 && strstr((char *)prof, "traceEvents") != NULL);
    free(prof);
    nrt_profile_continuous_options_t *co = NULL;
    ST(nrt_profile_continuous_options_allocate(&co), NRT_SUCCESS);
    ST(nrt_profile_continuous_options_set_output_dir(co, argv[2]), NRT_SUCCESS);
    ST(nrt_profile_continuous_options_set_output_dir(co, ""), NRT_INVALID);
    ST(nrt_profile_continuous_start(co), NRT_SUCCESS);
    ST(nrt_execute(model, in, out), NRT_SUCCESS);
    ST(nrt_profile_continuous_save(0, co), NRT_SUCCESS);
    ST(nrt_profile_continuous_stop(), NRT_SUCCESS);
    ST(nrt_profile_continuous_stop(), NRT_INVALID);
    ST(nrt_profile_continuous_options_free(co), NRT_SUCCESS);
    ST(nrt_profile_continuous_options_free(co), NRT_INVALID);

    nrt_inspect_config_t *ic = NULL;
    ST(nrt_inspect_config_allocate(&ic), NRT_SUCCESS);
    ST(nrt_inspect_config_set_defaults(ic), NRT_SUCCESS);
    ST(nrt_inspect_config_set_session_id(ic, 7), NRT_SUCCESS);
    ST(nrt_inspect_config_set_output_dir(ic, argv[2]), NRT_SUCCESS);
    ST(nrt_inspect_config_set_output_dir(ic, ""), NRT_INVALID);
    ST(nrt_inspect_config_set_sys_trace_max_events_per_nc(ic, 1000), NRT_SUCCESS);
    ST(nrt_inspect_config_set_capture_enabled_for_nc(ic, 0, true), NRT_SUCCESS);
    ST(nrt_inspect_config_set_capture_enabled_for_event_type_string(ic, "nc_exec", true), NRT_SUCCESS);
    ST(nrt_inspect_config_set_capture_enabled_for_event_type_string(ic, "bogus", true), NRT_INVALID);
    ST(nrt_inspect_config_set_activity(ic, "cpu_util", false), NRT_SUCCESS);
    ST(nrt_inspect_config_set_activity(ic, "bogus", true), NRT_INVALID);
    const char **acts = NULL;
    size_t nacts = 0;
    ST(nrt_inspect_config_get_all_activity_types(&acts, &nacts), NRT_SUCCESS);
    CHECK(nacts == 4);
    nrt_inspect_config_free_activity_types(acts, nacts);
    ST(nrt_inspect_config_get_enabled_activity_types(ic, &acts, &nacts), NRT_SUCCESS);
    CHECK(nacts == 3);
    nrt_inspect_config_free_activity_types(acts, nacts);
    ST(nrt_inspect_config_set_enable_inspect(ic, true), NRT_SUCCESS);
    ST(nrt_inspect_config_set_enable_inspect_on_fail(ic, false), NRT_SUCCESS);
    ST(nrt_inspect_begin_with_options(ic), NRT_SUCCESS);
    ST(nrt_inspect_begin_with_options(ic), NRT_INVALID);
    ST(nrt_execute(model, in, out), NRT_SUCCESS);
    ST(nrt_inspect_stop(), NRT_SUCCESS);
    ST(nrt_inspect_stop(), NRT_INVALID);
    snprintf(path, sizeof path, "%s/session_7/system_profile.json", argv[2]);
    prof = slurp(path, &plen);
    CHECK(prof != NULL && strstr((char *)prof, "nc_exec") != NULL);
    free(prof);
    snprintf(path, sizeof path, "%s/session_7/device_profile.json", argv[2]);
    prof = slurp(path, &plen);
    CHECK(prof != NULL && strstr((char *)prof, "traceEvents") != NULL);
    free(prof);
    ST(nrt_inspect_config_free(ic), NRT_SUCCESS);
    ST(nrt_inspect_config_free(ic), NRT_INVALID);

    nrt_sys_trace_config_t *tc = NULL;
    ST(nrt_sys_trace_config_allocate(&tc), NRT_SUCCESS);
    nrt_sys_trace_config_set_defaults(tc);
    nrt_sys_trace_config_set_max_events_per_nc(tc, 2);
    nrt_sys_trace_config_set_capture_enabled_for_nc(tc, 1, false);
    ST(nrt_sys_trace_config_set_capture_enabled_for_event_type(tc, "model_load", false), NRT_SUCCESS);
    ST(nrt_sys_trace_config_set_capture_enabled_for_event_type(tc, "nope", false), NRT_INVALID);
    const char **types = NULL;
    size_t ntypes = 0;
    ST(nrt_sys_trace_get_event_types(&types, &ntypes), NRT_SUCCESS);
    CHECK(ntypes == 5);
    nrt_sys_trace_free_event_types(types, ntypes);
    ST(nrt_sys_trace_config_get_enabled_event_types(tc, &types, &ntypes), NRT_SUCCESS);
    CHECK(ntypes == 4);
    for (size_t i = 0; i < ntypes; i++) free((void *)types[i]);
    free((void *)types);
    ST(nrt_sys_trace_start(tc), NRT_SUCCESS);
    for (int i = 0; i < 3; i++) ST(nrt_execute(model, in, out), NRT_SUCCESS);
    nrt_sys_trace_fetch_options_t *fo = NULL;
    ST(nrt_sys_trace_fetch_options_allocate(&fo), NRT_SUCCESS);
    nrt_sys_trace_fetch_options_set_defaults(fo);
    nrt_sys_trace_fetch_options_set_nc_idx(fo, 0);
    nrt_sys_trace_fetch_options_set_max_events_per_nc(fo, 10);
    char *json = NULL;
    size_t jlen = 0;
    ST(nrt_sys_trace_fetch_events(&json, &jlen, fo), NRT_SUCCESS);
    CHECK(json != NULL && jlen == strlen(json) && strstr(json, "\"dropped_events\":1") != NULL);
    CHECK(strstr(json, "\"device_cycles\":[") != NULL && strstr(json, "\"device_ns\":[") != NULL);
    char *again = json;
    ST(nrt_sys_trace_fetch_events(&again, &jlen, fo), NRT_INVALID);
    nrt_sys_trace_buffer_free(json);
    nrt_sys_trace_buffer_free(json); /* freed twice: logged */
    json = NULL;
    ST(nrt_sys_trace_fetch_events(&json, &jlen, NULL), NRT_SUCCESS);
    CHECK(strstr(json, "nc_exec") == NULL); /* consumed */
    nrt_sys_trace_buffer_free(json);
    nrt_sys_trace_fetch_options_free(fo);
    ST(nrt_sys_trace_stop(), NRT_SUCCESS);
    ST(nrt_sys_trace_stop(), NRT_INVALID);
    nrt_sys_trace_config_free(tc);
    ST(nrt_trace_start(false), NRT_SUCCESS);
    ST(nrt_execute(model, in, out), NRT_SUCCESS);
    snprintf(path, sizeof path, "%s/trace.json", argv[2]);
    ST(nrt_trace_stop(path), NRT_SUCCESS);
    prof = slurp(path, &plen);
    CHECK(prof != NULL && strstr((char *)prof, "nc_exec") != NULL);
    free(prof);

    /* ---- devices and collectives ---- */
    uint32_t hid = 9, count = 4, map[4] = {9, 9, 9, 9};
    ST(nrt_host_device_id_get(0, &hid), NRT_SUCCESS);
    CHECK(hid == 0);
    ST(nrt_host_device_id_get(3, &hid), NRT_INVALID);
    ST(nrt_host_device_id_rid_map_get(&count, map), NRT_SUCCESS);
    CHECK(count == 1 && map[0] == 0);
    void *hva = NULL;
    size_t hsz = 0;
    int dfd = -1;
    char bdf[64];
    size_t blen = sizeof bdf;
    ST(nrt_get_hbm_mmap_va(0, 0, &hva, &hsz), NRT_INVALID);
    ST(nrt_get_dmabuf_fd(0, 16, &dfd), NRT_INVALID);
    ST(nrt_get_attached_efa_bdf(va, bdf, &blen), NRT_FAILURE);
    ST(nrt_build_global_comm(0, 0, 1), NRT_SUCCESS);
    ST(nrt_build_global_comm(0, 0, 2), NRT_FAILURE);
    ST(nrt_cc_global_comm_init(0, 0, 1), NRT_SUCCESS);
    ST(nrt_barrier(0, 0, 1), NRT_SUCCESS);
    ST(nrt_barrier(0, 1, 4), NRT_FAILURE);
    uint8_t gi[8] = {1, 2, 3, 4, 5, 6, 7, 8}, go[8] = {0};
    ST(nrt_all_gather(0, 0, 1, 8, gi, go), NRT_SUCCESS);
    CHECK(memcmp(gi, go, 8) == 0);
    ST(nrt_all_gather(0, 0, 2, 8, gi, go), NRT_FAILURE);
    int nerr2 = 0;
    char msg[128];
    CHECK(nrt_get_libnccl_net(&nerr2, msg, sizeof msg) == NULL && nerr2 != 0 && strlen(msg) > 0);

    /* ---- unload, close with a model and tensors still there ---- */
    ST(nrt_free_model_tensor_info(info), NRT_SUCCESS);
    ST(nrt_free_model_tensor_info(info), NRT_INVALID);
    nrt_model_t *second = NULL;
    ST(nrt_load(neff, size, 0, -1, &second), NRT_SUCCESS);
    ST(nrt_unload(model), NRT_SUCCESS);
    ST(nrt_unload(model), NRT_INVALID);
    ST(nrt_execute(model, in, out), NRT_INVALID);
    nrt_close(); /* `second`, the IO tensors, d, h, e, sl are released here */
    ST(nrt_unload(second), NRT_CLOSED);
    ST(nrt_tensor_read(d, back, 0, 1), NRT_CLOSED);
    ST(nrt_init(NRT_FRAMEWORK_TYPE_NO_FW, "", ""), NRT_CLOSED);
    ST(nrt_get_visible_vnc_count(&visible), NRT_SUCCESS);
    nrt_destroy_tensor_set(&in);
    nrt_destroy_tensor_set(&out);
    free(result);
    free(neff);
    printf("%d checks, %d failed (callbacks %d)\n", checks, failures, async_calls);
    return failures ? 1 : 0;
}
