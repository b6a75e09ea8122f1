/*
 * nrt/nrt_profile.h - profiling and inspection (nrt-emu).
 *
 * On the simulator a profile is the device timeline as Chrome/Perfetto trace JSON (one track
 * per engine and DMA queue), not an NTFF file; the driver backend has no timeline and answers
 * NRT_INVALID.
 */
#ifndef NRT_PROFILE_H
#define NRT_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nrt/nrt.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct nrt_profile_continuous_options nrt_profile_continuous_options_t;
typedef struct nrt_inspect_config nrt_inspect_config_t;

/* Profiles the model's executions until nrt_profile_stop(filename) writes them. */
NRT_STATUS nrt_profile_start(nrt_model_t *model, const char *filename);
NRT_STATUS nrt_profile_stop(const char *filename);

NRT_STATUS nrt_profile_continuous_options_allocate(nrt_profile_continuous_options_t **options);
NRT_STATUS nrt_profile_continuous_options_free(nrt_profile_continuous_options_t *options);
NRT_STATUS nrt_profile_continuous_options_set_output_dir(nrt_profile_continuous_options_t *options,
                                                         const char *output_dir);
NRT_STATUS nrt_profile_continuous_start(nrt_profile_continuous_options_t *options);
/* Writes the profile of the latest model executed on vnc into the output directory. */
NRT_STATUS nrt_profile_continuous_save(uint32_t vnc, nrt_profile_continuous_options_t *options);
NRT_STATUS nrt_profile_continuous_stop(void);

/* Configured by NEURON_RT_INSPECT_ENABLE, NEURON_RT_INSPECT_OUTPUT_DIR, ... */
NRT_STATUS nrt_inspect_begin(void);
/* Writes the device timeline and the runtime events into the output directory. */
NRT_STATUS nrt_inspect_stop(void);

NRT_STATUS nrt_inspect_config_allocate(nrt_inspect_config_t **options);
NRT_STATUS nrt_inspect_config_set_defaults(nrt_inspect_config_t *options);
NRT_STATUS nrt_inspect_config_free(nrt_inspect_config_t *options);
NRT_STATUS nrt_inspect_config_set_session_id(nrt_inspect_config_t *options, int session_id);
NRT_STATUS nrt_inspect_config_set_output_dir(nrt_inspect_config_t *options, const char *output_dir);
NRT_STATUS nrt_inspect_config_set_sys_trace_max_events_per_nc(nrt_inspect_config_t *options,
                                                              uint64_t sys_trace_max_events_per_nc);
NRT_STATUS nrt_inspect_config_set_capture_enabled_for_nc(nrt_inspect_config_t *options, uint32_t nc_idx,
                                                         bool enabled);
NRT_STATUS nrt_inspect_config_set_capture_enabled_for_event_type_string(nrt_inspect_config_t *options,
                                                                        const char *event_type, bool enabled);
NRT_STATUS nrt_inspect_config_set_enable_inspect(nrt_inspect_config_t *options, bool enable_inspect);
NRT_STATUS nrt_inspect_config_set_enable_inspect_on_fail(nrt_inspect_config_t *options, bool enable_inspect_on_fail);
/* Ignores the NEURON_RT_INSPECT_* variables; NULL = defaults. */
NRT_STATUS nrt_inspect_begin_with_options(nrt_inspect_config_t *options);
/* The library allocates the array and each string; free them with
 * nrt_inspect_config_free_activity_types (or free() each string, then the array). */
NRT_STATUS nrt_inspect_config_get_all_activity_types(const char ***activity_types, size_t *count);
NRT_STATUS nrt_inspect_config_get_enabled_activity_types(nrt_inspect_config_t *options, const char ***activity_types,
                                                         size_t *count);
void nrt_inspect_config_free_activity_types(const char **activity_types, size_t count);
/* "system_profile", "device_profile", "host_memory", "cpu_util" or "all". */
NRT_STATUS nrt_inspect_config_set_activity(nrt_inspect_config_t *options, const char *activity_type, bool enabled);

#ifdef __cplusplus
}
#endif

#endif /* NRT_PROFILE_H */
