// foreign_scale.cl - a kernel no twin exists for, whose code object the build makes with clang
// alone (no carried source, as from elsewhere); its helper comes from an -I folder (inc/).
// tests/test_kfd_emu_source.c runs it with hsad run --source and -I: y[i] = y[i] * a + 3.
#include "scale_op.h"

kernel void scale3(global float *y, float a, uint n) {
  uint i = get_global_id(0);
  if (i < n) y[i] = scale_op(y[i], a);
}
