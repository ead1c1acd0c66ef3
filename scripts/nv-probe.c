/* nv-probe: the driver's view of a cubin's kernels, the reference for tests/data/nvidia/
 * (scripts/nv-testdata.sh runs it on a machine with an NVIDIA GPU; never built by make).
 * Prints per kernel: attributes, cuFuncGetParamInfo, and
 * cuOccupancyMaxActiveBlocksPerMultiprocessor per block size (32..1024) and dynamic shared size.
 * libcuda is loaded with dlopen, as the library does. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#define SYMS(X) X(cuInit) X(cuDeviceGet) X(cuCtxCreate) X(cuModuleLoad) \
  X(cuModuleGetFunctionCount) X(cuModuleEnumerateFunctions) X(cuFuncGetName) \
  X(cuFuncGetAttribute) X(cuFuncGetParamInfo) X(cuOccupancyMaxActiveBlocksPerMultiprocessor) \
  X(cuFuncSetAttribute) X(cuDeviceGetAttribute) X(cuModuleGetFunction)
#define DECL(n) static __typeof__(&n) p_##n;
SYMS(DECL)

#define CK(call) do { CUresult r_ = (call); if (r_ != CUDA_SUCCESS) { \
  fprintf(stderr, "%s: %d\n", #call, (int)r_); exit(1); } } while (0)

int main(int argc, char **argv) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib || argc != 2) { fprintf(stderr, "usage: nv-probe FILE.cubin (needs libcuda.so.1)\n"); return 2; }
#define LOAD(n) p_##n = (__typeof__(&n))dlsym(lib, #n);
  SYMS(LOAD)
  p_cuCtxCreate = (__typeof__(&cuCtxCreate))dlsym(lib, "cuCtxCreate_v2");
  CUdevice dev; CUcontext ctx; CUmodule mod;
  CK(p_cuInit(0)); CK(p_cuDeviceGet(&dev, 0));
  CK(p_cuCtxCreate(&ctx, NULL, 0, dev));
  CK(p_cuModuleLoad(&mod, argv[1]));
  int major, minor, smem_optin, smem_sm;
  CK(p_cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CK(p_cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  CK(p_cuDeviceGetAttribute(&smem_optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev));
  CK(p_cuDeviceGetAttribute(&smem_sm, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, dev));
  printf("device sm_%d%d shared_optin %d shared_per_sm %d\n", major, minor, smem_optin, smem_sm);
  unsigned count;
  CK(p_cuModuleGetFunctionCount(&count, mod));
  CUfunction *fns = calloc(count, sizeof *fns);
  CK(p_cuModuleEnumerateFunctions(fns, count, mod));
  for (unsigned k = 0; k < count; k++) {
    const char *name;
    CK(p_cuFuncGetName(&name, fns[k]));
    CK(p_cuModuleGetFunction(&fns[k], mod, name)); /* loaded (lazy loading leaves them not) */
    int regs, shared, local, cnst, maxt;
    CK(p_cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fns[k]));
    CK(p_cuFuncGetAttribute(&shared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, fns[k]));
    CK(p_cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, fns[k]));
    CK(p_cuFuncGetAttribute(&cnst, CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, fns[k]));
    CK(p_cuFuncGetAttribute(&maxt, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fns[k]));
    printf("kernel %s regs %d shared %d local %d const %d max_threads %d\n", name, regs, shared,
           local, cnst, maxt);
    for (size_t i = 0;; i++) {
      size_t off, size;
      if (p_cuFuncGetParamInfo(fns[k], i, &off, &size) != CUDA_SUCCESS) break;
      printf("param %zu offset %zu size %zu\n", i, off, size);
    }
    CK(p_cuFuncSetAttribute(fns[k], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                            smem_optin - shared));
    static const int dyn[] = {0, 4096, 16384, 49152, 100000};
    for (int d = 0; d < 5; d++)
      for (int b = 32; b <= maxt; b += 32) {
        int blocks;
        CUresult r = p_cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, fns[k], b, (size_t)dyn[d]);
        if (r == CUDA_SUCCESS) printf("occupancy block %d dynamic_shared %d blocks %d\n", b, dyn[d], blocks);
        else printf("occupancy block %d dynamic_shared %d error %d\n", b, dyn[d], (int)r);
      }
  }
  return 0;
}
