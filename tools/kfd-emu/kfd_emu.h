/* kfd_emu.h - what kfd-emu's libhsakmt.so.1 exports besides the thunk (hsaKmt*) and the twin
 * interface (kfd_emu_twin.h): a query for why it refused its configuration.
 *
 * kfd-emu reads its KFD_EMU_* variables (README.md, kfd-emu) when ROCr's hsa_init opens it
 * (hsaKmtOpenKFD). A bad value, or a KFD_EMU_* variable it does not know, is refused: it prints
 * the reason on stderr ("kfd-emu: KFD_EMU_GPUS=0: expected an integer in [1, 8]"), the open
 * fails and hsa_init returns an error status that does not say why. A program that loaded
 * kfd-emu itself (libhsad does, hsa-dispatch/rocr.c) can then ask for the reason:
 *
 *   void *emu = dlopen("libhsakmt.so.1", RTLD_NOW | RTLD_NOLOAD);
 *   kfd_emu_config_error_fn f = (kfd_emu_config_error_fn)dlsym(emu, "kfd_emu_config_error");
 *   char why[1024];
 *   if (f && f(why, sizeof why)) ... why is the line kfd-emu printed, without "kfd-emu: "
 *
 * Symbols have C linkage and the HSAKMT_1 version of the rest of the library.
 */
#ifndef KFD_EMU_H
#define KFD_EMU_H

#include <stddef.h>

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

#ifdef __cplusplus
}
#endif

#endif /* KFD_EMU_H */
