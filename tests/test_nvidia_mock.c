/* test_nvidia_mock.c - tests/test_nvidia.c against tools/cuda-mock's libcuda.so.1 (a host-only
 * stand-in: streams run in order by host threads, the test kernels as host twins, device memory
 * = host memory, the context poisoned by `fault`), so the backend's logic runs where there is
 * no NVIDIA GPU. The mock needs no cubin: any file stands in for one. */
#include <stdlib.h>

#ifndef NV_MOCK_LIB
#define NV_MOCK_LIB "build/lib/hsad/cuda-mock/libcuda.so.1"
#endif
#undef NV_CUBIN
#define NV_CUBIN NV_MOCK_LIB /* cuModuleLoadData of the mock takes any image */
/* every module of the mock has its kernels: nv_kernels.cu's 10, nv_run.cu's scale<float>,
 * nv_variants.cu's heavy and the budget model's relaxed */
#define NV_KERNEL_COUNT 13u

__attribute__((constructor)) static void use_the_mock(void) { setenv("HSAD_LIBCUDA", NV_MOCK_LIB, 1); }

#include "test_nvidia.c"
