/* slow_twin.c - a twin of kernels/empty.cl (KFD_EMU_TWINS, with KFD_EMU_KERNEL_MODE=twin) whose
 * every workgroup sleeps 2 s: a workgroup already running on kfd-emu's CP thread, which
 * hsaKmtDestroyQueue cannot preempt (public::runtime_close_abandons_unpreemptible_workgroup in
 * tests/test_dispatch_public.c). */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "tools/kfd-emu/kfd_emu_twin.h"

KFD_EMU_TWIN(empty) {
  (void)d;
  (void)wg;
  nanosleep(&(struct timespec){2, 0}, NULL);
  return 0;
}
