// user_twin.c - the host twin of poly (tests/data/cli/user_twin.cl), written as a user would:
// only the installed kfd_emu_twin.h, built with
//   cc -shared -fPIC -I<prefix>/include user_twin.c -o libmytwins.so
// and given to kfd-emu with KFD_EMU_TWINS=$PWD/libmytwins.so.
#include <hsad/tools/kfd-emu/kfd_emu_twin.h>

KFD_EMU_TWIN(poly) {
  float *y;
  const float *x;
  float a;
  uint32_t n;
  if (kfd_emu_arg(d, 0, &y, sizeof y) || kfd_emu_arg(d, 1, &x, sizeof x) ||
      kfd_emu_arg(d, 2, &a, sizeof a) || kfd_emu_arg(d, 3, &n, sizeof n))
    return 1;
  uint32_t lo = wg->base[0], hi = lo + wg->size[0];
  if (hi > n) hi = n;
  if (lo >= hi) return 0;
  /* every byte this workgroup touches must be GPU-reachable (a wave would fault otherwise) */
  if (!d->gpu_accessible(y + lo, (uint64_t)(hi - lo) * 4) ||
      !d->gpu_accessible(x + lo, (uint64_t)(hi - lo) * 4))
    return 1;
  for (uint32_t i = lo; i < hi; i++) y[i] = a * x[i] * x[i] + 1.0f;
  return 0;
}
