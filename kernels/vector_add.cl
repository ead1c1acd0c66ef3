/* vector_add: c[i] = a[i] + b[i] for every global id i < n (1-D; extra work-items do nothing). */
kernel void vector_add(global const float *a, global const float *b, global float *c, uint n) {
  size_t i = get_global_id(0);
  if (i < n) c[i] = a[i] + b[i];
}
