/* hsad_emu_abi.h - the entry points libhsad asks of an emulated KFD thunk: the contract between
 * the library (hsa-dispatch/rocr.c, monitor.c) and kfd-emu (tools/kfd-emu), owned by the
 * library so that the dependency points from the emulator to the library, never back.
 *
 * A thunk that implements these exports them from its libhsakmt.so.1 with C linkage; libhsad
 * finds them with dlsym on the thunk it loaded (hsad_rocr_load) and treats a missing one as
 * "not emulated" (hsad_rocr.h: hsad_rocr_emu_config_error, hsad_rocr_emu_kernel_mode).
 * kfd-emu implements both (tools/kfd-emu/kfd_emu.h includes this header and describes its
 * configuration).
 */
#ifndef HSAD_EMU_ABI_H
#define HSAD_EMU_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The reason the last configuration load refused the configuration: copied into buf as
 * snprintf would (truncated to size - 1 bytes and NUL-terminated when size > 0; buf may be NULL
 * when size is 0), returning its full length. Returns 0 (buf set to "") when no load has
 * refused one, or the last load accepted it: an open that succeeds clears the reason. The
 * configuration is loaded by the first hsaKmtOpenKFD of a process (and again after every
 * matching hsaKmtCloseKFD); later opens while it is open keep what was loaded. Thread-safe:
 * serialized with hsaKmtOpenKFD. */
size_t kfd_emu_config_error(char *buf, size_t size);
typedef size_t (*kfd_emu_config_error_fn)(char *buf, size_t size);

/* How the emulator executes the kernel whose descriptor is at kernel_object (issue 20):
 *   KFD_EMU_KERNEL_SOURCE  from its OpenCL C source through POCL (the source its code object
 *                          carries, or one KFD_EMU_CL_SOURCE names); buf: where it came from;
 *   KFD_EMU_KERNEL_TWIN    through a host twin (kfd_emu_twin.h): it has no source; buf: the
 *                          line "ran host twin of 'NAME' (no source)", or with
 *                          KFD_EMU_KERNEL_MODE=twin and source "ran host twin of 'NAME'
 *                          (KFD_EMU_KERNEL_MODE=twin; it has source)";
 *   KFD_EMU_KERNEL_NONE    neither: a dispatch is a queue error; buf: the message naming the
 *                          kernel and both remedies;
 *   KFD_EMU_KERNEL_BUILD_FAILED  it has source that POCL cannot build (or without that
 *                          kernel), or it has none and a KFD_EMU_CL_SOURCE file does not build
 *                          ("KFD_EMU_CL_SOURCE: kernel NAME: POCL cannot build ..."); buf: the
 *                          reason with POCL's build log;
 *   KFD_EMU_KERNEL_UNKNOWN kernel_object is no kernel kfd-emu can find; buf: why.
 * buf is written as snprintf would. May build the source named by KFD_EMU_CL_SOURCE (POCL).
 * Thread-safe. Look it up with dlsym(RTLD_DEFAULT, "kfd_emu_kernel_mode"). */
enum {
  KFD_EMU_KERNEL_UNKNOWN = -1, KFD_EMU_KERNEL_NONE = 0, KFD_EMU_KERNEL_SOURCE = 1,
  KFD_EMU_KERNEL_TWIN = 2, KFD_EMU_KERNEL_BUILD_FAILED = 3,
};
int kfd_emu_kernel_mode(uint64_t kernel_object, char *buf, size_t size);
typedef int (*kfd_emu_kernel_mode_fn)(uint64_t kernel_object, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* HSAD_EMU_ABI_H */
