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
 * Symbols have C linkage and the HSAKMT_1 version of the rest of the library. Their
 * declarations are libhsad's (hsa-dispatch/hsad_emu_abi.h: the library owns the contract,
 * the emulator implements it).
 */
#ifndef KFD_EMU_H
#define KFD_EMU_H

/* The entry points (kfd_emu_config_error, kfd_emu_kernel_mode and its KFD_EMU_KERNEL_* answers)
 * are the library's contract with its thunk: hsa-dispatch/hsad_emu_abi.h declares them, and
 * kfd-emu implements them. */
#include "hsa-dispatch/hsad_emu_abi.h"

#endif /* KFD_EMU_H */
