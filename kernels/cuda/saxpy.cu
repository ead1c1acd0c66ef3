// saxpy: y = a * x + y over n elements (hsa-dispatch's NVIDIA test kernel; kernels/saxpy.cl's twin).
extern "C" __global__ void saxpy(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

// A C++ kernel: its symbol is mangled (_Z5scaleIfEvPT_S0_i) and its name is read as such.
template <typename T> __global__ void scale(T *data, T factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}
template __global__ void scale<float>(float *, float, int);
