/* 48 KiB of LDS per workgroup: one workgroup per CU, so no register budget gives 8 waves per
 * SIMD (tests/test_dispatch_cli.c: hsad run --variants with a budget the compiler cannot meet). */
kernel void lds48k(global float *o) {
  local float t[12288];
  t[get_local_id(0)] = o[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  o[get_local_id(0)] = t[12287 - get_local_id(0)];
}
