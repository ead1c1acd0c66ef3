// mangled_twins.c - host twins of tests/data/cli/mangled.hip's kernels, by their mangled
// symbols, for hsad graph's C++ kernel names (tests/test_fusion.c, fusion_cli::cxx_kernel_names;
// given to kfd-emu with KFD_EMU_TWINS). Each checks the range it touches as a wave would.
#include "tools/kfd-emu/kfd_emu_twin.h"

/* [lo, hi) of this workgroup below n */
static int range(const kfd_emu_workgroup_t *wg, uint32_t n, uint32_t *lo, uint32_t *hi) {
  *lo = wg->base[0];
  *hi = *lo + wg->size[0];
  if (*hi > n) *hi = n;
  return *lo < *hi;
}

KFD_EMU_TWIN(_Z5scalePffj) { /* scale(float *x, float a, unsigned n) */
  float *x, a;
  uint32_t n, lo, hi;
  if (kfd_emu_arg(d, 0, &x, sizeof x) || kfd_emu_arg(d, 1, &a, sizeof a) ||
      kfd_emu_arg(d, 2, &n, sizeof n))
    return 1;
  if (!range(wg, n, &lo, &hi)) return 0;
  if (!d->gpu_accessible(x + lo, (uint64_t)(hi - lo) * sizeof *x)) return 1;
  for (uint32_t i = lo; i < hi; i++) x[i] *= a;
  return 0;
}

KFD_EMU_TWIN(_Z5scalePddj) { /* scale(double *x, double a, unsigned n) */
  double *x, a;
  uint32_t n, lo, hi;
  if (kfd_emu_arg(d, 0, &x, sizeof x) || kfd_emu_arg(d, 1, &a, sizeof a) ||
      kfd_emu_arg(d, 2, &n, sizeof n))
    return 1;
  if (!range(wg, n, &lo, &hi)) return 0;
  if (!d->gpu_accessible(x + lo, (uint64_t)(hi - lo) * sizeof *x)) return 1;
  for (uint32_t i = lo; i < hi; i++) x[i] *= a;
  return 0;
}

KFD_EMU_TWIN(_Z5shiftPiij) { /* shift(int *x, int d, unsigned n) */
  int32_t *x, v;
  uint32_t n, lo, hi;
  if (kfd_emu_arg(d, 0, &x, sizeof x) || kfd_emu_arg(d, 1, &v, sizeof v) ||
      kfd_emu_arg(d, 2, &n, sizeof n))
    return 1;
  if (!range(wg, n, &lo, &hi)) return 0;
  if (!d->gpu_accessible(x + lo, (uint64_t)(hi - lo) * sizeof *x)) return 1;
  for (uint32_t i = lo; i < hi; i++) x[i] += v;
  return 0;
}
