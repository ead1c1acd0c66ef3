// hip-vector-add: c = a + b on the first HIP device, checked on the host. Exit 0 on an exact
// result, 1 on a mismatch or any HIP error (reason on stderr).
//
// The kernel is extern "C" so its symbol (and the kfd-emu twin, kfd_emu_twin_hip_vector_add)
// has a plain name. n is deliberately not a multiple of the 256-work-item workgroup, so the last
// workgroup is partial.
#include <hip/hip_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" __global__ void hip_vector_add(const float *a, const float *b, float *c,
                                          unsigned int n) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

#define CHECK(call)                                                                         \
  do {                                                                                      \
    hipError_t err_ = (call);                                                               \
    if (err_ != hipSuccess) {                                                               \
      fprintf(stderr, "hip-vector-add: %s failed: %s\n", #call, hipGetErrorString(err_));  \
      return 1;                                                                             \
    }                                                                                       \
  } while (0)

int main(void) {
  const unsigned int n = 1000003;
  const unsigned int block = 256;
  size_t bytes = (size_t)n * sizeof(float);
  float *a = (float *)malloc(bytes), *b = (float *)malloc(bytes), *c = (float *)malloc(bytes);
  if (!a || !b || !c) {
    fprintf(stderr, "hip-vector-add: out of host memory\n");
    return 1;
  }
  for (unsigned int i = 0; i < n; i++) {
    a[i] = (float)i * 0.5f;
    b[i] = (float)(n - i) * 0.25f;
  }
  memset(c, 0xff, bytes);
  float *da, *db, *dc;
  CHECK(hipMalloc((void **)&da, bytes));
  CHECK(hipMalloc((void **)&db, bytes));
  CHECK(hipMalloc((void **)&dc, bytes));
  CHECK(hipMemcpy(da, a, bytes, hipMemcpyHostToDevice));
  CHECK(hipMemcpy(db, b, bytes, hipMemcpyHostToDevice));
  CHECK(hipMemset(dc, 0, bytes));
  hipLaunchKernelGGL(hip_vector_add, dim3((n + block - 1) / block), dim3(block), 0, 0,
                     (const float *)da, (const float *)db, dc, n);
  CHECK(hipGetLastError());
  CHECK(hipDeviceSynchronize());
  CHECK(hipMemcpy(c, dc, bytes, hipMemcpyDeviceToHost));
  unsigned int bad = 0;
  for (unsigned int i = 0; i < n; i++) {
    if (c[i] != a[i] + b[i]) {
      if (bad < 5) fprintf(stderr, "hip-vector-add: c[%u] = %g, expected %g\n", i, c[i], a[i] + b[i]);
      bad++;
    }
  }
  CHECK(hipFree(da));
  CHECK(hipFree(db));
  CHECK(hipFree(dc));
  free(a);
  free(b);
  free(c);
  if (bad) {
    fprintf(stderr, "hip-vector-add: %u of %u elements wrong\n", bad, n);
    return 1;
  }
  printf("hip-vector-add: %u elements correct\n", n);
  return 0;
}
