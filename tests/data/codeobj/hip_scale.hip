/* Fixture for offload bundles and .hip_fatbin host objects (built with -nogpuinc: no HIP headers).
 * The host compilation needs a hipLaunchKernel declaration to emit the launch stub. */
struct dim3 { unsigned x, y, z; };
extern "C" int hipLaunchKernel(const void *f, dim3 g, dim3 b, void **args, unsigned long shm,
                               void *stream);
__attribute__((global)) void scale(float *x, float a, int n) {
  int i = __builtin_amdgcn_workgroup_id_x() * __builtin_amdgcn_workgroup_size_x() +
          __builtin_amdgcn_workitem_id_x();
  if (i < n) x[i] *= a;
}
