// HIP source for budgeted variants (issue 9): a plain __global__ kernel without launch bounds;
// hsad_codeobj_compile_variants sets them (through a header redefining __global__).
#include <hip/hip_runtime.h>

extern "C" __global__ void axpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
