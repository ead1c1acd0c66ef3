/* The work-item functions as the code object sees them, and a struct by value. For work-item
 * i of a 1-D grid: out[i] = group id * 1000000 + number of groups * 10000 + local size * 100
 * + global size + p.bias + p.scale.y (the struct's second float4 lane) + p.tag.w. */
struct params {
  int bias;
  float4 scale;
  uint4 tag;
};

kernel void geometry(global uint *out, struct params p) {
  size_t i = get_global_id(0);
  out[i] = (uint)(get_group_id(0) * 1000000 + get_num_groups(0) * 10000 + get_local_size(0) * 100
                  + get_global_size(0)) + (uint)p.bias + (uint)p.scale.y + p.tag.w;
}

/* atomics across workgroups: every work-item adds its global id + 1 to *sum */
kernel void atomic_sum(global uint *sum) { atomic_add(sum, (uint)get_global_id(0) + 1); }
