/* Second translation unit for the multi-bundle .hip_fatbin fixture (hip_multi.so): each HIP
 * source contributes its own offload bundle to the shared library's .hip_fatbin section. */
struct dim3 { unsigned x, y, z; };
extern "C" int hipLaunchKernel(const void *f, dim3 g, dim3 b, void **args, unsigned long shm,
                               void *stream);
__attribute__((global)) void offset(int *x, int k) {
  x[__builtin_amdgcn_workitem_id_x()] += k;
}
