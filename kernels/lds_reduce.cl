/* lds_reduce / lds_reduce_dyn: per-workgroup partial sums through the group segment (LDS).
 *
 * Each work-item stores v = (gid < n ? in[gid] : 0.0f) at tmp[lid]; then, for s = 128, 64, ..., 1
 * (a barrier before each step), work-item lid adds tmp[lid + s] into tmp[lid] when lid < s and
 * lid + s < the workgroup's size. Work-item 0 then writes partial[group id] = tmp[0]. The order of
 * the float additions is fixed by this tree, so results are exact and reproducible for any
 * workgroup size up to 256 work-items (partial workgroups included); larger workgroups are not
 * supported (the tree would ignore elements 256 and up).
 *
 * lds_reduce uses a static __local float[256] (.group_segment_fixed_size 1024);
 * lds_reduce_dyn takes its LDS from a dynamic `__local float *` argument, which needs at least
 * workgroup size * 4 bytes of dynamic group segment.
 */
#define LDS_REDUCE_MAX 256

static void lds_reduce_body(global const float *in, global float *partial, uint n,
                            local float *tmp) {
  uint lid = get_local_id(0);
  uint lsz = get_local_size(0);
  size_t gid = get_global_id(0);
  tmp[lid] = gid < n ? in[gid] : 0.0f;
  for (uint s = LDS_REDUCE_MAX / 2; s > 0; s >>= 1) {
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid < s && lid + s < lsz) tmp[lid] += tmp[lid + s];
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  if (lid == 0) partial[get_group_id(0)] = tmp[0];
}

kernel void lds_reduce(global const float *in, global float *partial, uint n) {
  local float tmp[LDS_REDUCE_MAX];
  lds_reduce_body(in, partial, n, tmp);
}

kernel void lds_reduce_dyn(global const float *in, global float *partial, uint n,
                           local float *tmp) {
  lds_reduce_body(in, partial, n, tmp);
}
