/* Fixture kernels for tests/test_codeobj_*.c. Built without device libraries (-nogpulib), so
 * only clang builtins are used. Each kernel exercises one metadata feature. */

/* global buffers, const, a by_value int; v5 hidden block counts etc. */
__kernel void vadd(__global const float *a, __global const float *b, __global float *c, int n) {
  int i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() +
          __builtin_amdgcn_workitem_id_x();
  if (i < n) c[i] = a[i] + b[i];
}

/* two dynamic LDS pointers with different pointee alignment, mixed by_value sizes */
__kernel void lds2(__global int *o, __local int *t, char c, __local double *d, float4 v) {
  unsigned l = __builtin_amdgcn_workitem_id_x();
  t[l] = c + (int)v.x;
  d[l] = v.y;
  __builtin_amdgcn_s_barrier();
  o[l] = t[0] + (int)d[1];
}

/* reqd_work_group_size and a fixed __local array (group_segment_fixed_size > 0) */
__kernel __attribute__((reqd_work_group_size(64, 2, 1)))
void fixed_lds(__global int *o, long k, short s, uchar u) {
  __local int buf[128];
  unsigned l = __builtin_amdgcn_workitem_id_x();
  buf[l] = (int)k + s + u;
  __builtin_amdgcn_s_barrier();
  o[l] = buf[127 - l];
}

/* a private array indexed dynamically: private_segment_fixed_size > 0 (scratch) */
__kernel void scratch(__global int *o, int n) {
  volatile int tmp[64];
  for (int i = 0; i < 64; i++) tmp[i] = i * n;
  o[__builtin_amdgcn_workitem_id_x()] = tmp[(n + __builtin_amdgcn_workitem_id_x()) & 63];
}

/* a kernel with no arguments at all */
__kernel void noargs(void) {}

/* __constant pointer, restrict, volatile qualifiers, a struct by value */
typedef struct { int a; float b; long c; } pod_t;
__kernel void quals(__constant int *restrict c, volatile __global int *v, pod_t p) {
  v[0] = c[0] + p.a + (int)p.b + (int)p.c;
}

/* reads the whole implicit-argument block, so the compiler declares every hidden argument it
 * knows (v4: global offsets, hidden_none, multigrid, ...; v5: block counts ... queue_ptr) */
__kernel void implicit(__global ulong *o, uint n) {
  __constant ulong *p = (__constant ulong *)__builtin_amdgcn_implicitarg_ptr();
  for (uint i = 0; i < n && i < 32; i++) o[i] = p[i];
}

/* too few VGPRs allowed for its live values: the compiler spills (vgpr_spill_count > 0) */
__kernel __attribute__((amdgpu_num_vgpr(16)))
void spill(__global float4 *io, int n) {
  unsigned l = __builtin_amdgcn_workitem_id_x();
  float4 a0 = io[l], a1 = io[l + 64], a2 = io[l + 128], a3 = io[l + 192], a4 = io[l + 256],
         a5 = io[l + 320], a6 = io[l + 384], a7 = io[l + 448];
  for (int i = 0; i < n; i++) {
    a0 = a0 * a1 + a2; a1 = a1 * a2 + a3; a2 = a2 * a3 + a4; a3 = a3 * a4 + a5;
    a4 = a4 * a5 + a6; a5 = a5 * a6 + a7; a6 = a6 * a7 + a0; a7 = a7 * a0 + a1;
  }
  io[l] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
