// nv_saxpy.cu - the kernel of examples/nv-fork-join.json (hsad graph on an NVIDIA device:
// compiled with NVRTC for the device's sm). extern "C": a plain name.
extern "C" __global__ void saxpy(float a, const float *x, float *y, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
