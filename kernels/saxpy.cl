/* saxpy: y[i] = fma(a, x[i], y[i]) for every global id i < n. The fused multiply-add is spelled
 * out so the result does not depend on the compiler's contraction choice (the twin uses fmaf). */
kernel void saxpy(float a, global const float *x, global float *y, uint n) {
  size_t i = get_global_id(0);
  if (i < n) y[i] = fma(a, x[i], y[i]);
}
