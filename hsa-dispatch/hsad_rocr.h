/* hsad_rocr.h - the ROCr (HSA runtime) entry points libhsad and hsad use, loaded at run time.
 *
 * libhsad does not link libhsa-runtime64: ROCr's library constructors cost ~13 ms at every
 * process start (a clock calibration), which commands that need no GPU (hsad inspect, compile)
 * should not pay. hsad_rocr_load() dlopens ROCr on first use, choosing the thunk first:
 *  - HSAD_DEVICE=hw, or /dev/kfd present and HSAD_DEVICE unset: the system's libhsakmt (a GPU);
 *  - otherwise (no /dev/kfd, or HSAD_DEVICE=emu): kfd-emu's libhsakmt.so.1 is loaded by soname
 *    before ROCr, so ROCr runs on the emulated GPU. It is looked for in HSAD_KFD_EMU_DIR, then
 *    beside the library or executable holding libhsad (DIR/hsad/kfd-emu, DIR/../lib/hsad/kfd-emu).
 * A process that already has ROCr loaded (linked with -lhsa-runtime64) keeps it and its thunk.
 *
 * Calls go through the table: hsad_rocr.hsa_init(). Thread-safe: hsad_rocr_load may be called
 * from any thread, any number of times; the table is filled once and never changes after.
 */
#ifndef HSAD_ROCR_H
#define HSAD_ROCR_H

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stddef.h>

#include "common/hsad_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HSAD_ROCR_FUNCS(X) \
  X(hsa_agent_get_info) \
  X(hsa_agent_iterate_isas) \
  X(hsa_amd_agent_iterate_memory_pools) \
  X(hsa_amd_agent_memory_pool_get_info) \
  X(hsa_amd_agents_allow_access) \
  X(hsa_amd_memory_pool_allocate) \
  X(hsa_amd_memory_pool_free) \
  X(hsa_amd_memory_pool_get_info) \
  X(hsa_amd_profiling_get_dispatch_time) \
  X(hsa_amd_signal_create) \
  X(hsa_amd_signal_wait_any) \
  X(hsa_amd_profiling_set_profiler_enabled) \
  X(hsa_code_object_reader_create_from_memory) \
  X(hsa_code_object_reader_destroy) \
  X(hsa_executable_create_alt) \
  X(hsa_executable_destroy) \
  X(hsa_executable_freeze) \
  X(hsa_executable_get_symbol_by_name) \
  X(hsa_executable_load_agent_code_object) \
  X(hsa_executable_symbol_get_info) \
  X(hsa_init) \
  X(hsa_isa_get_info_alt) \
  X(hsa_iterate_agents) \
  X(hsa_queue_add_write_index_screlease) \
  X(hsa_queue_create) \
  X(hsa_queue_destroy) \
  X(hsa_queue_load_read_index_scacquire) \
  X(hsa_queue_load_write_index_scacquire) \
  X(hsa_shut_down) \
  X(hsa_signal_create) \
  X(hsa_signal_destroy) \
  X(hsa_signal_store_relaxed) \
  X(hsa_signal_store_screlease) \
  X(hsa_signal_wait_scacquire) \
  X(hsa_status_string) \
  X(hsa_system_get_info)


typedef struct hsad_rocr {
/* C++: the qualified name keeps each member from changing the meaning of the ROCr function it
 * is declared after ([basic.scope.class]); decltype is C++11's spelling of __typeof__. */
#ifdef __cplusplus
#define HSAD_ROCR_MEMBER(f) decltype(::f) *f;
#else
#define HSAD_ROCR_MEMBER(f) __typeof__(f) *f;
#endif
  HSAD_ROCR_FUNCS(HSAD_ROCR_MEMBER)
#undef HSAD_ROCR_MEMBER
} hsad_rocr_t;

/* Filled by hsad_rocr_load(); all members NULL before it succeeded. */
extern hsad_rocr_t hsad_rocr;

/* Loads ROCr (and kfd-emu when selected, see above) once. Returns HSAD_OK, or
 * HSAD_ERR_NO_DEVICE when HSAD_DEVICE=hw without /dev/kfd, HSAD_DEVICE has another value, or
 * neither ROCr nor kfd-emu can be loaded (message names the path and dlerror). Later calls
 * return the first result. */
hsad_status_t hsad_rocr_load(void);

/* True when the loaded thunk is kfd-emu (valid after hsad_rocr_load succeeded). */
int hsad_rocr_is_emulated(void);

/* The directory this process loaded kfd-emu's libhsakmt.so.1 from, or NULL when it did not
 * (a GPU, or ROCr was already loaded). A child process that links ROCr itself (a HIP program)
 * runs on the same emulated GPU with this directory first on its LD_LIBRARY_PATH. */
const char *hsad_rocr_emu_dir(void);

/* When the loaded thunk is kfd-emu and the last load of its configuration refused it (a bad
 * KFD_EMU_* value or an unknown KFD_EMU_* variable: hsa_init then fails), copies kfd-emu's
 * reason, as it printed it on stderr without "kfd-emu: ", into buf (as snprintf: truncated,
 * NUL-terminated when size > 0) and returns 1; otherwise returns 0 with buf "" (a GPU, no
 * refusal, or a kfd-emu without kfd_emu_config_error, hsad_emu_abi.h). Asks the
 * kfd-emu handle hsad_rocr_load opened (dlsym). Thread-safe. */
int hsad_rocr_emu_config_error(char *buf, size_t size);

/* How kfd-emu executes the kernel whose descriptor is at kernel_object: kfd_emu_kernel_mode's
 * answer (hsad_emu_abi.h: KFD_EMU_KERNEL_SOURCE, _TWIN, _NONE, _BUILD_FAILED,
 * _UNKNOWN) with its line in buf (as snprintf), or HSAD_EMU_MODE_NOT_EMULATED with buf ""
 * when the thunk is no kfd-emu (or one without the query). May build the kernel's source with
 * POCL (cached) on the calling thread. Thread-safe. */
#define HSAD_EMU_MODE_NOT_EMULATED (-100)
int hsad_rocr_emu_kernel_mode(uint64_t kernel_object, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* HSAD_ROCR_H */
