// hip_types.hip - a C++ (mangled) HIP kernel whose parameters cover the types hsad run reads
// from a mangled name: a pointer to a HIP vector, a vector by value, long, unsigned char and a
// pointer to const double (tests/test_dispatch_cli.c, run_cxx_argument_types). No twin.
#include <hip/hip_runtime.h>

__global__ void types(float4 *out, float4 v, long n, unsigned char c, const double *d) {
  long i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = make_float4(v.x * c, v.y, v.z, v.w + (float)d[i]);
}
