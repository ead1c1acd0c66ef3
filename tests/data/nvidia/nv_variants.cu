// nv_variants.cu - a kernel heavy in registers for NVIDIA variant sets (issue 22,
// tests/test_nvidia.c variants_*, hsad run --variants): each thread keeps 87 running words
// live across its loop (as a register-tiled kernel keeps its tile), 103 registers as
// written; a register budget below that spills them to local memory. Integer arithmetic, so
// every output is exact and the host replays it (tools/cuda-mock's twin computes the same).
extern "C" __global__ void heavy(const unsigned *__restrict__ x, unsigned *__restrict__ y,
                                 unsigned n, unsigned k) {
  unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= n) return;
  unsigned acc[87];
#pragma unroll
  for (int j = 0; j < 87; ++j) acc[j] = t * (j + 1);
  for (unsigned i = 0; i < k; ++i) {
    unsigned v = x[(t + i) % n];
#pragma unroll
    for (int j = 0; j < 87; ++j) acc[j] = acc[j] * 0x9E3779B1u + (v ^ j);
  }
  unsigned sum = 0;
#pragma unroll
  for (int j = 0; j < 87; ++j) sum ^= acc[j] + j;
  y[t] = sum;
}
