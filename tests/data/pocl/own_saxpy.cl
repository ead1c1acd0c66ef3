/* A user's own kernel named like kernels/saxpy.cl's, with another body: y = a*x - y. kfd-emu
 * must run this source, not the built-in twin of `saxpy` (issue 20: a=2, x=10, y=1 gives 19). */
kernel void saxpy(float a, global const float *x, global float *y, uint n) {
  size_t i = get_global_id(0);
  if (i < n) y[i] = a * x[i] - y[i];
}
