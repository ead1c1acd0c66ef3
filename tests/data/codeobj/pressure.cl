/* Register-pressure fixtures (issue 9, hsad inspect --pressure; no device libraries: builtins only): `hog` keeps 24 float4 values
 * live across a loop (96 VGPRs of live state), `light` almost none. The source has no register
 * attribute: codeobj/module.mk compiles it once as is and once with a low VGPR budget given on
 * the command line (-D__kernel=... adding amdgpu_num_vgpr), where hog spills. */
#define HOG_LIVE 24

__kernel void hog(__global float4 *io, int n) {
  unsigned l = __builtin_amdgcn_workgroup_id_x() * 256 + __builtin_amdgcn_workitem_id_x();
  float4 a[HOG_LIVE];
  for (int j = 0; j < HOG_LIVE; j++) a[j] = io[l + 256 * j];
  for (int i = 0; i < n; i++)
    for (int j = 0; j < HOG_LIVE; j++) a[j] = a[j] * a[(j + 1) % HOG_LIVE] + a[(j + 5) % HOG_LIVE];
  float4 s = 0;
  for (int j = 0; j < HOG_LIVE; j++) s += a[j];
  io[l] = s;
}

__kernel void light(__global float *o, float v) { o[__builtin_amdgcn_workitem_id_x()] = v; }
