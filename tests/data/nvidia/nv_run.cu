// nv_run.cu - kernels of hsad run's NVIDIA tests (tests/test_nvidia_run.c, scripts/nvidia-run.sh),
// compiled by hsad run with NVRTC: -DHSAD_RUN_TEST and -I tests/data/nvidia/include must be
// given (the two #errors below prove that hsad run passes them). Names, parameters and results
// as in nv_kernels.cu (tools/cuda-mock runs those names as host twins). No system headers:
// NVRTC has none.
#ifndef HSAD_RUN_TEST
#error "hsad run did not pass -DHSAD_RUN_TEST"
#endif
#include "nv_run.h"
#ifndef HSAD_RUN_TEST
#error "nv_run.h not found: -I tests/data/nvidia/include not passed"
#endif

extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// every by-value field written back as 64-bit words: out[0..11]
extern "C" __global__ void byval(char c, struct mixed m, float4 v, double d,
                                 unsigned long long u, long long *out) {
  if (threadIdx.x || blockIdx.x) return;
  out[0] = c; out[1] = m.c; out[2] = m.s; out[3] = m.i; out[4] = (long long)(m.d * 1000.0);
  out[5] = m.t[0] * 10000 + m.t[1] * 100 + m.t[2];
  out[6] = (long long)(v.x * 10); out[7] = (long long)(v.y * 10); out[8] = (long long)(v.z * 10);
  out[9] = (long long)(v.w * 10); out[10] = (long long)(d * 1000.0); out[11] = (long long)u;
}

// each block reverses its blockDim.x ints through dynamic shared memory (lds:BYTES)
extern "C" __global__ void dyn_reverse(int *data, unsigned words) {
  extern __shared__ int buf[];
  unsigned t = threadIdx.x, base = blockIdx.x * blockDim.x;
  for (unsigned w = t; w < words; w += blockDim.x) buf[w] = (int)w;
  __syncthreads();
  buf[t] = data[base + t];
  __syncthreads();
  int extra = 0;
  if (t == 0)
    for (unsigned w = blockDim.x; w < words; w++) extra += buf[w] - (int)w; // 0 when intact
  data[base + t] = buf[blockDim.x - 1 - t] + (t == 0 ? extra : 0);
}

// a C++ kernel: mangled name _Z5scaleIfEvPT_S0_j, whose types hsad run checks (the mock has no
// twin for it: the H200 runs it)
template <typename T> __global__ void scale(T *data, T factor, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}
template __global__ void scale<float>(float *, float, unsigned);
