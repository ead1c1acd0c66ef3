/* comgr (AMDGPU) builds this; POCL (the host CPU) cannot: an AMDGPU-only builtin. */
kernel void amd_only(global uint *out) { out[0] = __builtin_amdgcn_workitem_id_x(); }
