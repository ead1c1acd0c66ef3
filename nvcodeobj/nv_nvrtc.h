/* nv_nvrtc.h - the declared subset of the NVRTC API that nvrtc.c loads with dlopen (not
 * installed). Signatures as the NVRTC API reference gives them; tests/test_nv_codeobj.c checks
 * them against nvrtc.h where CUDA is installed. */
#ifndef HSAD_NV_NVRTC_H
#define HSAD_NV_NVRTC_H

#include <stddef.h>

typedef int nv_nvrtcResult;                 /* nvrtcResult; NVRTC_SUCCESS = 0 */
typedef struct _nvrtcProgram *nv_nvrtcProgram;

#define NV_NVRTC_SYMBOLS(X)                                                                       \
  X(nvrtcVersion, nv_nvrtcResult, (int *major, int *minor))                                      \
  X(nvrtcGetErrorString, const char *, (nv_nvrtcResult result))                                   \
  X(nvrtcCreateProgram, nv_nvrtcResult,                                                           \
    (nv_nvrtcProgram * prog, const char *src, const char *name, int numHeaders,                   \
     const char *const *headers, const char *const *includeNames))                                \
  X(nvrtcDestroyProgram, nv_nvrtcResult, (nv_nvrtcProgram * prog))                                \
  X(nvrtcCompileProgram, nv_nvrtcResult,                                                          \
    (nv_nvrtcProgram prog, int numOptions, const char *const *options))                           \
  X(nvrtcGetProgramLogSize, nv_nvrtcResult, (nv_nvrtcProgram prog, size_t *logSizeRet))          \
  X(nvrtcGetProgramLog, nv_nvrtcResult, (nv_nvrtcProgram prog, char *log))                        \
  X(nvrtcGetCUBINSize, nv_nvrtcResult, (nv_nvrtcProgram prog, size_t *cubinSizeRet))             \
  X(nvrtcGetCUBIN, nv_nvrtcResult, (nv_nvrtcProgram prog, char *cubin))                          \
  X(nvrtcGetPTXSize, nv_nvrtcResult, (nv_nvrtcProgram prog, size_t *ptxSizeRet))                 \
  X(nvrtcGetPTX, nv_nvrtcResult, (nv_nvrtcProgram prog, char *ptx))

#define NV_NVRTC_TYPEDEF(name, ret, args) typedef ret(*nv_##name##_fn) args;
NV_NVRTC_SYMBOLS(NV_NVRTC_TYPEDEF)
#undef NV_NVRTC_TYPEDEF

#endif
