/* Register-pressure fixtures (issue 9, hsad inspect --pressure; no device libraries: builtins only): `hog` keeps 24 float4 values
 * live across a loop (96 VGPRs of live state), `light` almost none. The source has no register
 * attribute: codeobj/module.mk compiles it once as is and once with a low VGPR budget given on
 * the command line (-D__kernel=... adding amdgpu_num_vgpr), where hog spills. */
#define HOG_LIVE 24
/* kfd-emu runs this source through POCL (a CPU OpenCL: no amdgcn builtins), with the work-item
 * functions there; the GPU builds keep the builtins, so their registers are as before */
#ifdef __AMDGCN__
#define GROUP_X() __builtin_amdgcn_workgroup_id_x()
#define ITEM_X() __builtin_amdgcn_workitem_id_x()
#else
#define GROUP_X() ((unsigned)get_group_id(0))
#define ITEM_X() ((unsigned)get_local_id(0))
#endif

__kernel void hog(__global float4 *io, int n) {
  unsigned l = GROUP_X() * 256 + ITEM_X();
  float4 a[HOG_LIVE];
  for (int j = 0; j < HOG_LIVE; j++) a[j] = io[l + 256 * j];
  for (int i = 0; i < n; i++)
    for (int j = 0; j < HOG_LIVE; j++) a[j] = a[j] * a[(j + 1) % HOG_LIVE] + a[(j + 5) % HOG_LIVE];
  float4 s = 0;
  for (int j = 0; j < HOG_LIVE; j++) s += a[j];
  io[l] = s;
}

__kernel void light(__global float *o, float v) { o[ITEM_X()] = v; }
