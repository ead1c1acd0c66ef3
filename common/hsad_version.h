/* hsad_version.h - the version of hsa-dispatch these headers belong to.
 *
 * HSAD_VERSION_MAJOR changes with incompatible API or ABI changes, MINOR with additions,
 * PATCH with fixes. hsad_version() returns the version of the library actually linked or
 * loaded, encoded as HSAD_VERSION_ENCODE(major, minor, patch), so a program can compare the
 * two: hsad_version() >= HSAD_VERSION. The Makefile takes the pkg-config version (hsad.pc)
 * from these macros. Thread-safe, never fails.
 *
 * 0.3: kernarg segments up to HSAD_KERNARG_SEGMENT_MAX run on every queue (hsad_queue.h step
 * 4); a packet writer using hsad_submit.h must give a kernel dispatch
 * hsad_submit_kernarg_span() slots (0.2 refused segments above one kernarg block). Also
 * hsad_variant_set_stats, hsad_submit_monitor_close, hsad_codeobj_is_hip/_entry_id,
 * hsad_kernel_codeobj, hsad_mem_wait_pending and HSAD_ERR_IN_USE (a timed-out synchronous copy
 * keeps its memory), hsad_mem_result / hsad_mem_signal_result (a copy or fill that ROCr
 * stopped after the call returned), kfd_emu_config_error (tools/kfd-emu/kfd_emu.h),
 * hsad_codeobj_symtab_find. */
#ifndef HSAD_VERSION_H
#define HSAD_VERSION_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HSAD_VERSION_MAJOR 0
#define HSAD_VERSION_MINOR 3
#define HSAD_VERSION_PATCH 0

/* major << 16 | minor << 8 | patch (each part 0..255) */
#define HSAD_VERSION_ENCODE(major, minor, patch) \
  ((uint32_t)(major) << 16 | (uint32_t)(minor) << 8 | (uint32_t)(patch))
#define HSAD_VERSION \
  HSAD_VERSION_ENCODE(HSAD_VERSION_MAJOR, HSAD_VERSION_MINOR, HSAD_VERSION_PATCH)

/* The linked library's version, HSAD_VERSION_ENCODE(major, minor, patch). */
uint32_t hsad_version(void);

/* The same as a static string, "0.3.0". */
const char *hsad_version_string(void);

#ifdef __cplusplus
}
#endif
#endif /* HSAD_VERSION_H */
