/* fill: dst[i] = value for every global id i < n. */
kernel void fill(global uint *dst, uint value, uint n) {
  size_t i = get_global_id(0);
  if (i < n) dst[i] = value;
}
