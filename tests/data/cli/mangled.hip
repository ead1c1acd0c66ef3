// mangled.hip - C++ (mangled) HIP kernels without host twins, for hsad run's kernel lookup by
// demangled name, KERNEL_NOT_FOUND's list and KFD_EMU_NO_TWIN=noop (tests/test_dispatch_cli.c).
#include <hip/hip_runtime.h>

__global__ void scale(float *x, float a, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

__global__ void scale(double *x, double a, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

__global__ void shift(int *x, int d, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += d;
}
