// Register pressure: 96 values live across four rounds. `pressure` takes the registers it needs;
// `pressure_bounded` is the same body under __launch_bounds__(256, 4), which caps it at 64
// registers per thread (65536 / (256 * 4)) and spills the rest to local memory.
#define LIVE 96

__device__ __forceinline__ float pressure_body(const float *in, int n) {
  float v[LIVE];
  int t = blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int i = 0; i < LIVE; i++) v[i] = in[t + i * n];
#pragma unroll
  for (int round = 0; round < 4; round++) {
#pragma unroll
    for (int i = 0; i < LIVE; i++) v[i] = v[i] * v[(i + 1) % LIVE] + v[(i + 7) % LIVE];
  }
  float acc = 0.0f;
#pragma unroll
  for (int i = 0; i < LIVE; i++) acc += v[i] * (float)(i + 1);
  return acc;
}

extern "C" __global__ void pressure(const float *in, float *out, int n) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = pressure_body(in, n);
}

extern "C" __global__ void __launch_bounds__(256, 4) pressure_bounded(const float *in, float *out,
                                                                     int n) {
  out[blockIdx.x * blockDim.x + threadIdx.x] = pressure_body(in, n);
}
