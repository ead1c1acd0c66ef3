// Shared memory: a reduction over dynamic shared memory (size given at launch) and a transpose
// tile in static shared memory (32 x 33 floats: 4224 bytes, .nv.shared.transpose_tile).
extern "C" __global__ void reduce_dynamic(const float *in, float *out, int n) {
  extern __shared__ float partial[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  partial[threadIdx.x] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

extern "C" __global__ void __launch_bounds__(1024) transpose_tile(const float *in, float *out,
                                                                  int width) {
  __shared__ float tile[32][33];
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  tile[threadIdx.y][threadIdx.x] = in[y * width + x];
  __syncthreads();
  x = blockIdx.y * 32 + threadIdx.x;
  y = blockIdx.x * 32 + threadIdx.y;
  out[y * width + x] = tile[threadIdx.x][threadIdx.y];
}
