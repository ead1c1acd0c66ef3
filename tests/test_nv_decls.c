/* test_nv_decls.c - nvidia/nv_cuda.h against the real cuda.h (issue 19): every constant's
 * value, every handle typedef's size, every function pointer type against cuda.h's prototype
 * of the exported symbol. The checks are compile-time (_Static_assert): where cuda.h is
 * installed (the build passes -DNV_HAVE_CUDA_H and its include folder) a mismatch fails the
 * build of this test; the test itself then records how many declarations were checked.
 * Without cuda.h it reports itself skipped, with the reason. */
#include <criterion/criterion.h>

#include "nvidia/nv_cuda.h"

#ifdef NV_HAVE_CUDA_H
#include <cuda.h>

#define CHECK_CONST_(name, cuda_name, value)                                                  \
  _Static_assert((long long)(name) == (long long)(cuda_name), #name " != " #cuda_name);       \
  _Static_assert((long long)(cuda_name) == (long long)(value), #cuda_name " changed value");
NV_CUDA_CONSTANTS(CHECK_CONST_)

#define CHECK_FN_(member, symbol, ret, params)                                                \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&symbol), nv_##symbol##_fn),         \
                 #symbol ": nv_cuda.h's declaration differs from cuda.h's prototype");
NV_CUDA_FUNCTIONS(CHECK_FN_)

_Static_assert(sizeof(nv_deviceptr_t) == sizeof(CUdeviceptr), "CUdeviceptr size");
_Static_assert(__builtin_types_compatible_p(nv_deviceptr_t, CUdeviceptr), "CUdeviceptr type");
_Static_assert(__builtin_types_compatible_p(nv_device_t, CUdevice), "CUdevice type");
_Static_assert(__builtin_types_compatible_p(nv_context_t, CUcontext), "CUcontext type");
_Static_assert(__builtin_types_compatible_p(nv_stream_t, CUstream), "CUstream type");
_Static_assert(__builtin_types_compatible_p(nv_result_t, CUresult), "CUresult type");
_Static_assert(sizeof(nv_device_attribute_t) == sizeof(CUdevice_attribute), "attribute size");
_Static_assert(sizeof(nv_function_attribute_t) == sizeof(CUfunction_attribute), "attr size");
_Static_assert(CUDA_VERSION >= 12040, "the backend's declarations need CUDA 12.4+ headers");

#define COUNT_(...) +1
Test(nv_decls, match_cuda_h) {
  int constants = 0 NV_CUDA_CONSTANTS(COUNT_), functions = 0 NV_CUDA_FUNCTIONS(COUNT_);
  cr_log_info("nv_cuda.h matches cuda.h of CUDA %d.%d: %d constants, %d functions", 
              CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10, constants, functions);
  cr_expect_eq(constants, 41);
  cr_expect_eq(functions, 37);
}
#else
Test(nv_decls, match_cuda_h) {
  cr_skip_test("no cuda.h at build time (CUDA_INC): the driver API declarations of "
               "nvidia/nv_cuda.h were not checked");
}
#endif
