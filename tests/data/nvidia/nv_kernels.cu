// nv_kernels.cu - kernels of tests/test_nvidia.c and hsad-bench-nvidia (nvcc -cubin).
// extern "C": plain names (hsad_program_kernel looks kernels up by name).
#include <stdint.h>

struct mixed { char c; short s; int i; double d; char t[3]; }; // 24 bytes, align 8

extern "C" __global__ void empty(void) {}

extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// every by-value field written back as 64-bit words: out[0..10]
extern "C" __global__ void byval(char c, struct mixed m, float4 v, double d,
                                 unsigned long long u, long long *out) {
  if (threadIdx.x || blockIdx.x) return;
  out[0] = c; out[1] = m.c; out[2] = m.s; out[3] = m.i; out[4] = (long long)(m.d * 1000.0);
  out[5] = m.t[0] * 10000 + m.t[1] * 100 + m.t[2];
  out[6] = (long long)(v.x * 10); out[7] = (long long)(v.y * 10); out[8] = (long long)(v.z * 10);
  out[9] = (long long)(v.w * 10); out[10] = (long long)(d * 1000.0); out[11] = (long long)u;
}

// each block reverses its blockDim.x ints through dynamic shared memory; the block's
// shared words beyond blockDim.x (when given more) are filled and summed to prove the size
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

extern "C" __global__ void add_one(unsigned long long *counter) {
  if (threadIdx.x == 0 && blockIdx.x == 0) atomicAdd(counter, 1ull);
}

// waits about `ns` nanoseconds on the GPU's global timer, then stores value
extern "C" __global__ void delay_store(int *p, int value, unsigned long long ns) {
  if (threadIdx.x || blockIdx.x) return;
  unsigned long long t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
  *(volatile int *)p = value;
}

extern "C" __global__ void copy_one(int *dst, const int *src) {
  if (threadIdx.x == 0 && blockIdx.x == 0) dst[0] = *(volatile const int *)src;
}

// an illegal address: a store to an unmapped page
extern "C" __global__ void fault(int *p) {
  if (threadIdx.x == 0 && blockIdx.x == 0) *(volatile int *)((uintptr_t)p + (1ull << 46)) = 1;
}

// graphs (tests/test_nvidia_graph.c): order-dependent steps, so a result proves the order
// x[i] = x[i] * mul + add (mod 2^32)
extern "C" __global__ void affine(unsigned *x, unsigned mul, unsigned add, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = x[i] * mul + add;
}

// dst[i] = dst[i] * 31 + src[i] (mod 2^32)
extern "C" __global__ void mix(unsigned *dst, const unsigned *src, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) dst[i] = dst[i] * 31u + src[i];
}

// a C++ kernel (no extern "C"): mangled name _Z5scaleIfEvPT_S0_j, whose by-value parameter
// types the library reads from the name (test_nvidia.c cxx_kernel_types_checked)
template <typename T> __global__ void scale(T *data, T factor, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}
template __global__ void scale<float>(float *, float, unsigned);
