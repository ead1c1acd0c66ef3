/* nv_cuda.h - the subset of the CUDA driver API the NVIDIA backend uses, declared here and
 * loaded from libcuda.so.1 with dlopen (never linked), so libhsad builds and runs where no CUDA
 * is installed (CI, AMD machines). The model: LLVM offload's dynamic_cuda and IREE's CUDA
 * dynamic symbol table.
 *
 * Every declaration mirrors cuda.h of CUDA 12.4+ (checked against CUDA 13.0): the handle types
 * share cuda.h's struct tags, so a function pointer type here is compatible with cuda.h's
 * prototype exactly when the signature matches. tests/test_nv_decls.c compiles this header next
 * to the real cuda.h (where one is installed: here and on the device machine) and asserts every
 * enum value, typedef size and prototype below; it reports itself skipped without cuda.h.
 *
 * Symbol names are the versioned ones cuda.h's macros select (cuMemAlloc -> cuMemAlloc_v2,
 * cuStreamWriteValue64 -> cuStreamWriteValue64_v2): dlsym needs the real export. The default
 * (legacy) stream semantics are used: no _ptsz / _ptds variants.
 *
 * Thread safety: nv_cuda_load() is idempotent and serialised by a once-flag; the table is
 * read-only after it returned HSAD_OK. */
#ifndef HSAD_NV_CUDA_H
#define HSAD_NV_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "common/hsad_status.h"

/* cuda.h: enum cudaError_enum (all values non-negative: GCC gives it unsigned int). */
typedef unsigned int nv_result_t;
typedef int nv_device_t;                        /* CUdevice (CUdevice_v1: int) */
typedef unsigned long long nv_deviceptr_t;      /* CUdeviceptr (CUdeviceptr_v2, 64-bit hosts) */
typedef struct CUctx_st *nv_context_t;          /* CUcontext */
typedef struct CUmod_st *nv_module_t;           /* CUmodule */
typedef struct CUfunc_st *nv_function_t;        /* CUfunction */
typedef struct CUstream_st *nv_stream_t;        /* CUstream */
typedef struct CUevent_st *nv_event_t;          /* CUevent */
typedef struct CUgraph_st *nv_graph_t;          /* CUgraph */
typedef struct CUgraphNode_st *nv_graph_node_t; /* CUgraphNode */
typedef struct CUgraphExec_st *nv_graph_exec_t; /* CUgraphExec */
typedef unsigned int nv_device_attribute_t;     /* CUdevice_attribute */
typedef unsigned int nv_function_attribute_t;   /* CUfunction_attribute */
typedef unsigned int nv_jit_option_t;           /* CUjit_option */

/* Constants: (our name, cuda.h's name, value). X-macro so the check test asserts each one. */
#define NV_CUDA_CONSTANTS(X)                                                                   \
  X(NV_SUCCESS, CUDA_SUCCESS, 0)                                                               \
  X(NV_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE, 1)                                       \
  X(NV_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY, 2)                                       \
  X(NV_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_INITIALIZED, 3)                                   \
  X(NV_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE, 100)                                             \
  X(NV_ERROR_INVALID_IMAGE, CUDA_ERROR_INVALID_IMAGE, 200)                                     \
  X(NV_ERROR_NO_BINARY_FOR_GPU, CUDA_ERROR_NO_BINARY_FOR_GPU, 209)                             \
  X(NV_ERROR_NOT_FOUND, CUDA_ERROR_NOT_FOUND, 500)                                             \
  X(NV_ERROR_NOT_READY, CUDA_ERROR_NOT_READY, 600)                                             \
  X(NV_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_ILLEGAL_ADDRESS, 700)                                 \
  X(NV_ERROR_LAUNCH_FAILED, CUDA_ERROR_LAUNCH_FAILED, 719)                                     \
  X(NV_DEV_MAX_THREADS_PER_BLOCK, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1)                \
  X(NV_DEV_MAX_BLOCK_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 2)                            \
  X(NV_DEV_MAX_BLOCK_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 3)                            \
  X(NV_DEV_MAX_BLOCK_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 4)                            \
  X(NV_DEV_MAX_GRID_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 5)                              \
  X(NV_DEV_MAX_GRID_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 6)                              \
  X(NV_DEV_MAX_GRID_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 7)                              \
  X(NV_DEV_MAX_SHARED_MEMORY_PER_BLOCK, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 8)    \
  X(NV_DEV_WARP_SIZE, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 10)                                       \
  X(NV_DEV_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 16)                 \
  X(NV_DEV_CAN_MAP_HOST_MEMORY, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 19)                   \
  X(NV_DEV_MAX_THREADS_PER_MULTIPROCESSOR, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, \
    39)                                                                                        \
  X(NV_DEV_UNIFIED_ADDRESSING, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 41)                     \
  X(NV_DEV_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 75)         \
  X(NV_DEV_COMPUTE_CAPABILITY_MINOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 76)         \
  X(NV_DEV_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 97) \
  X(NV_DEV_CAN_USE_64_BIT_STREAM_MEM_OPS, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 122) \
  X(NV_FUNC_MAX_THREADS_PER_BLOCK, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0)                 \
  X(NV_FUNC_SHARED_SIZE_BYTES, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, 1)                         \
  X(NV_FUNC_LOCAL_SIZE_BYTES, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, 3)                           \
  X(NV_FUNC_NUM_REGS, CU_FUNC_ATTRIBUTE_NUM_REGS, 4)                                           \
  X(NV_FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 8) \
  X(NV_MEMHOSTALLOC_PORTABLE, CU_MEMHOSTALLOC_PORTABLE, 1)                                     \
  X(NV_MEMHOSTALLOC_DEVICEMAP, CU_MEMHOSTALLOC_DEVICEMAP, 2)                                   \
  X(NV_MEMHOSTREGISTER_PORTABLE, CU_MEMHOSTREGISTER_PORTABLE, 1)                               \
  X(NV_MEMHOSTREGISTER_DEVICEMAP, CU_MEMHOSTREGISTER_DEVICEMAP, 2)                             \
  X(NV_EVENT_DISABLE_TIMING, CU_EVENT_DISABLE_TIMING, 2)                                       \
  X(NV_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING, 1)                                         \
  X(NV_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, 2)                     \
  X(NV_MEMORYTYPE_HOST, CU_MEMORYTYPE_HOST, 1)                                                 \
  X(NV_MEMORYTYPE_DEVICE, CU_MEMORYTYPE_DEVICE, 2)                                             \
  X(NV_STREAM_WAIT_VALUE_GEQ, CU_STREAM_WAIT_VALUE_GEQ, 0)                                     \
  X(NV_STREAM_WRITE_VALUE_DEFAULT, CU_STREAM_WRITE_VALUE_DEFAULT, 0)                           \
  X(NV_LAUNCH_PARAM_END, CU_LAUNCH_PARAM_END_AS_INT, 0)                                        \
  X(NV_LAUNCH_PARAM_BUFFER_POINTER, CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT, 1)                  \
  X(NV_LAUNCH_PARAM_BUFFER_SIZE, CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT, 2)                      \
  X(NV_MEMORYTYPE_UNIFIED, CU_MEMORYTYPE_UNIFIED, 4)                                           \
  X(NV_ERROR_NOT_SUPPORTED, CUDA_ERROR_NOT_SUPPORTED, 801)                                     \
  X(NV_JIT_MAX_REGISTERS, CU_JIT_MAX_REGISTERS, 0)                                             \
  X(NV_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER, 5)                                       \
  X(NV_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, 6)                 \
  X(NV_JIT_MIN_CTA_PER_SM, CU_JIT_MIN_CTA_PER_SM, 31)                                          \
  X(NV_JIT_MAX_THREADS_PER_BLOCK, CU_JIT_MAX_THREADS_PER_BLOCK, 32)

#define NV_CUDA_ENUM_(name, cuda_name, value) name = value,
enum { NV_CUDA_CONSTANTS(NV_CUDA_ENUM_) };
#undef NV_CUDA_ENUM_

/* Functions: (member, exported symbol, return, parameters). */
#define NV_CUDA_FUNCTIONS(X)                                                                   \
  X(init, cuInit, nv_result_t, (unsigned int flags))                                           \
  X(driver_get_version, cuDriverGetVersion, nv_result_t, (int *version))                       \
  X(get_error_name, cuGetErrorName, nv_result_t, (nv_result_t error, const char **str))        \
  X(get_error_string, cuGetErrorString, nv_result_t, (nv_result_t error, const char **str))    \
  X(device_get_count, cuDeviceGetCount, nv_result_t, (int *count))                             \
  X(device_get, cuDeviceGet, nv_result_t, (nv_device_t *device, int ordinal))                  \
  X(device_get_name, cuDeviceGetName, nv_result_t, (char *name, int len, nv_device_t dev))     \
  X(device_get_attribute, cuDeviceGetAttribute, nv_result_t,                                   \
    (int *value, nv_device_attribute_t attrib, nv_device_t dev))                               \
  X(device_total_mem, cuDeviceTotalMem_v2, nv_result_t, (size_t *bytes, nv_device_t dev))      \
  X(device_get_pci_bus_id, cuDeviceGetPCIBusId, nv_result_t,                                   \
    (char *bus_id, int len, nv_device_t dev))                                                  \
  X(primary_ctx_retain, cuDevicePrimaryCtxRetain, nv_result_t,                                 \
    (nv_context_t *ctx, nv_device_t dev))                                                      \
  X(primary_ctx_release, cuDevicePrimaryCtxRelease_v2, nv_result_t, (nv_device_t dev))         \
  X(primary_ctx_reset, cuDevicePrimaryCtxReset_v2, nv_result_t, (nv_device_t dev))             \
  X(ctx_set_current, cuCtxSetCurrent, nv_result_t, (nv_context_t ctx))                         \
  X(module_load_data, cuModuleLoadData, nv_result_t, (nv_module_t *module, const void *image)) \
  X(module_load_data_ex, cuModuleLoadDataEx, nv_result_t,                                      \
    (nv_module_t *module, const void *image, unsigned int count, nv_jit_option_t *options,     \
     void **values))                                                                           \
  X(module_unload, cuModuleUnload, nv_result_t, (nv_module_t module))                          \
  X(module_get_function, cuModuleGetFunction, nv_result_t,                                     \
    (nv_function_t *func, nv_module_t module, const char *name))                               \
  X(module_get_function_count, cuModuleGetFunctionCount, nv_result_t,                          \
    (unsigned int *count, nv_module_t module))                                                 \
  X(module_enumerate_functions, cuModuleEnumerateFunctions, nv_result_t,                       \
    (nv_function_t *funcs, unsigned int count, nv_module_t module))                            \
  X(func_get_name, cuFuncGetName, nv_result_t, (const char **name, nv_function_t func))        \
  X(func_get_param_info, cuFuncGetParamInfo, nv_result_t,                                      \
    (nv_function_t func, size_t index, size_t *offset, size_t *size))                          \
  X(func_load, cuFuncLoad, nv_result_t, (nv_function_t func))                                  \
  X(func_get_attribute, cuFuncGetAttribute, nv_result_t,                                       \
    (int *value, nv_function_attribute_t attrib, nv_function_t func))                          \
  X(occupancy_max_active_blocks, cuOccupancyMaxActiveBlocksPerMultiprocessor, nv_result_t,     \
    (int *blocks, nv_function_t func, int block_size, size_t dynamic_shared_bytes))            \
  X(func_set_attribute, cuFuncSetAttribute, nv_result_t,                                       \
    (nv_function_t func, nv_function_attribute_t attrib, int value))                           \
  X(stream_create, cuStreamCreate, nv_result_t, (nv_stream_t *stream, unsigned int flags))     \
  X(stream_destroy, cuStreamDestroy_v2, nv_result_t, (nv_stream_t stream))                     \
  X(stream_query, cuStreamQuery, nv_result_t, (nv_stream_t stream))                            \
  X(stream_synchronize, cuStreamSynchronize, nv_result_t, (nv_stream_t stream))                \
  X(launch_kernel, cuLaunchKernel, nv_result_t,                                                \
    (nv_function_t f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,      \
     unsigned int by, unsigned int bz, unsigned int shared_bytes, nv_stream_t stream,          \
     void **params, void **extra))                                                             \
  X(stream_write_value64, cuStreamWriteValue64_v2, nv_result_t,                                \
    (nv_stream_t stream, nv_deviceptr_t addr, uint64_t value, unsigned int flags))             \
  X(stream_wait_value64, cuStreamWaitValue64_v2, nv_result_t,                                  \
    (nv_stream_t stream, nv_deviceptr_t addr, uint64_t value, unsigned int flags))             \
  X(mem_alloc, cuMemAlloc_v2, nv_result_t, (nv_deviceptr_t *ptr, size_t bytes))                \
  X(mem_free, cuMemFree_v2, nv_result_t, (nv_deviceptr_t ptr))                                 \
  X(mem_host_alloc, cuMemHostAlloc, nv_result_t, (void **ptr, size_t bytes, unsigned int flags)) \
  X(mem_free_host, cuMemFreeHost, nv_result_t, (void *ptr))                                    \
  X(mem_host_get_device_pointer, cuMemHostGetDevicePointer_v2, nv_result_t,                    \
    (nv_deviceptr_t *dptr, void *host, unsigned int flags))                                    \
  X(memcpy_async, cuMemcpyAsync, nv_result_t,                                                  \
    (nv_deviceptr_t dst, nv_deviceptr_t src, size_t bytes, nv_stream_t stream))                \
  X(memset_d8_async, cuMemsetD8Async, nv_result_t,                                             \
    (nv_deviceptr_t dst, unsigned char value, size_t count, nv_stream_t stream))              \
  X(mem_host_register, cuMemHostRegister_v2, nv_result_t,                                      \
    (void *ptr, size_t bytes, unsigned int flags))                                             \
  X(mem_host_unregister, cuMemHostUnregister, nv_result_t, (void *ptr))                        \
  X(memcpy_htod_async, cuMemcpyHtoDAsync_v2, nv_result_t,                                      \
    (nv_deviceptr_t dst, const void *src, size_t bytes, nv_stream_t stream))                  \
  X(memcpy_dtoh_async, cuMemcpyDtoHAsync_v2, nv_result_t,                                      \
    (void *dst, nv_deviceptr_t src, size_t bytes, nv_stream_t stream))                        \
  X(event_create, cuEventCreate, nv_result_t, (nv_event_t *event, unsigned int flags))         \
  X(event_record, cuEventRecord, nv_result_t, (nv_event_t event, nv_stream_t stream))          \
  X(event_destroy, cuEventDestroy_v2, nv_result_t, (nv_event_t event))                         \
  X(event_query, cuEventQuery, nv_result_t, (nv_event_t event))                                \
  X(event_synchronize, cuEventSynchronize, nv_result_t, (nv_event_t event))                    \
  X(pointer_get_attribute, cuPointerGetAttribute, nv_result_t,                                 \
    (void *data, unsigned int attribute, nv_deviceptr_t ptr))                                  \
  X(stream_wait_event, cuStreamWaitEvent, nv_result_t,                                         \
    (nv_stream_t stream, nv_event_t event, unsigned int flags))                               \
  X(event_elapsed_time, cuEventElapsedTime_v2, nv_result_t,                                    \
    (float *ms, nv_event_t start, nv_event_t end))                                            \
  X(memset_d16_async, cuMemsetD16Async, nv_result_t,                                           \
    (nv_deviceptr_t dst, unsigned short value, size_t count, nv_stream_t stream))             \
  X(memset_d32_async, cuMemsetD32Async, nv_result_t,                                           \
    (nv_deviceptr_t dst, unsigned int value, size_t count, nv_stream_t stream))               \
  X(graph_create, cuGraphCreate, nv_result_t, (nv_graph_t *graph, unsigned int flags))         \
  X(graph_destroy, cuGraphDestroy, nv_result_t, (nv_graph_t graph))                            \
  X(graph_add_empty_node, cuGraphAddEmptyNode, nv_result_t,                                    \
    (nv_graph_node_t *node, nv_graph_t graph, const nv_graph_node_t *deps, size_t ndeps))     \
  X(graph_instantiate, cuGraphInstantiateWithFlags, nv_result_t,                               \
    (nv_graph_exec_t *exec, nv_graph_t graph, unsigned long long flags))                      \
  X(graph_launch, cuGraphLaunch, nv_result_t, (nv_graph_exec_t exec, nv_stream_t stream))      \
  X(graph_exec_destroy, cuGraphExecDestroy, nv_result_t, (nv_graph_exec_t exec))

/* Structures the driver reads, mirrored field by field (cuda.h's CUlaunchAttribute_st and
 * CUlaunchConfig_st; tests/test_nv_decls.c pins every size and offset against cuda.h). */
typedef struct nv_launch_attribute {
  unsigned int id;            /* CUlaunchAttributeID */
  char pad[4];                /* 8 - sizeof(CUlaunchAttributeID) */
  union {
    char pad[64];             /* CUlaunchAttributeValue: 64 bytes */
    int cooperative;
    unsigned long long align8; /* the union holds 8-byte members (pointers, sizes) */
  } value;
} nv_launch_attribute_t;

typedef struct nv_launch_config {
  unsigned int grid_dim_x, grid_dim_y, grid_dim_z;     /* blocks */
  unsigned int block_dim_x, block_dim_y, block_dim_z;  /* threads */
  unsigned int shared_mem_bytes;                       /* dynamic shared memory per block */
  nv_stream_t stream;
  nv_launch_attribute_t *attrs;
  unsigned int num_attrs;
} nv_launch_config_t;

/* cuda.h's CUDA_KERNEL_NODE_PARAMS (_v2 since CUDA 12.0): a graph's kernel node. */
typedef struct nv_kernel_node_params {
  nv_function_t func;
  unsigned int grid_dim_x, grid_dim_y, grid_dim_z;     /* blocks */
  unsigned int block_dim_x, block_dim_y, block_dim_z;  /* threads */
  unsigned int shared_mem_bytes;                       /* dynamic shared memory per block */
  void **kernel_params;                                /* a pointer to each parameter */
  void **extra;
  void *kern;                                          /* CUkernel (unused: func is set) */
  nv_context_t ctx;                                    /* ignored when func is set */
} nv_kernel_node_params_t;

/* cuda.h's CUDA_MEMCPY3D (_v2): a graph's copy node (the backend uses 1-D copies between
 * unified addresses: memory types CU_MEMORYTYPE_UNIFIED, Height = Depth = 1). */
typedef struct nv_memcpy3d {
  size_t src_x_bytes, src_y, src_z, src_lod;
  unsigned int src_memory_type;                        /* CUmemorytype */
  const void *src_host;
  nv_deviceptr_t src_device;
  void *src_array;                                     /* CUarray */
  void *reserved0;
  size_t src_pitch, src_height;
  size_t dst_x_bytes, dst_y, dst_z, dst_lod;
  unsigned int dst_memory_type;
  void *dst_host;
  nv_deviceptr_t dst_device;
  void *dst_array;
  void *reserved1;
  size_t dst_pitch, dst_height;
  size_t width_bytes, height, depth;
} nv_memcpy3d_t;

/* cuda.h's CUDA_MEMSET_NODE_PARAMS: a graph's fill node (element size 1, 2 or 4). */
typedef struct nv_memset_node_params {
  nv_deviceptr_t dst;
  size_t pitch;                                        /* unused when height is 1 */
  unsigned int value;
  unsigned int element_size;
  size_t width;                                        /* elements */
  size_t height;
} nv_memset_node_params_t;

/* Functions whose parameters include a structure mirrored above: their prototypes are checked
 * with cuda.h's structure types substituted (cuLaunchKernelEx: CUlaunchConfig; the graph node
 * calls: CUDA_KERNEL_NODE_PARAMS, CUDA_MEMCPY3D, CUDA_MEMSET_NODE_PARAMS). */
#define NV_CUDA_STRUCT_FUNCTIONS(X)                                                            \
  X(launch_kernel_ex, cuLaunchKernelEx, nv_result_t,                                           \
    (const nv_launch_config_t *config, nv_function_t f, void **params, void **extra))          \
  X(graph_add_kernel_node, cuGraphAddKernelNode_v2, nv_result_t,                               \
    (nv_graph_node_t *node, nv_graph_t graph, const nv_graph_node_t *deps, size_t ndeps,      \
     const nv_kernel_node_params_t *params))                                                  \
  X(graph_add_memcpy_node, cuGraphAddMemcpyNode, nv_result_t,                                  \
    (nv_graph_node_t *node, nv_graph_t graph, const nv_graph_node_t *deps, size_t ndeps,      \
     const nv_memcpy3d_t *copy, nv_context_t ctx))                                            \
  X(graph_add_memset_node, cuGraphAddMemsetNode, nv_result_t,                                  \
    (nv_graph_node_t *node, nv_graph_t graph, const nv_graph_node_t *deps, size_t ndeps,      \
     const nv_memset_node_params_t *params, nv_context_t ctx))                                \
  X(graph_exec_kernel_node_set_params, cuGraphExecKernelNodeSetParams_v2, nv_result_t,         \
    (nv_graph_exec_t exec, nv_graph_node_t node, const nv_kernel_node_params_t *params))      \
  X(graph_exec_memcpy_node_set_params, cuGraphExecMemcpyNodeSetParams, nv_result_t,            \
    (nv_graph_exec_t exec, nv_graph_node_t node, const nv_memcpy3d_t *copy, nv_context_t ctx)) \
  X(graph_exec_memset_node_set_params, cuGraphExecMemsetNodeSetParams, nv_result_t,            \
    (nv_graph_exec_t exec, nv_graph_node_t node, const nv_memset_node_params_t *params,       \
     nv_context_t ctx))

#define NV_CUDA_FN_TYPE_(member, symbol, ret, params) typedef ret(*nv_##symbol##_fn) params;
NV_CUDA_FUNCTIONS(NV_CUDA_FN_TYPE_)
NV_CUDA_STRUCT_FUNCTIONS(NV_CUDA_FN_TYPE_)
#undef NV_CUDA_FN_TYPE_

/* The loaded table. */
typedef struct nv_cuda {
#define NV_CUDA_MEMBER_(member, symbol, ret, params) nv_##symbol##_fn member;
  NV_CUDA_FUNCTIONS(NV_CUDA_MEMBER_)
  NV_CUDA_STRUCT_FUNCTIONS(NV_CUDA_MEMBER_)
#undef NV_CUDA_MEMBER_
  int driver_version;        /* cuDriverGetVersion: 13000 for CUDA 13.0 */
} nv_cuda_t;

extern nv_cuda_t nv_cu;

/* Loads libcuda.so.1 (HSAD_LIBCUDA overrides the path), resolves every symbol and calls
 * cuInit(0), once per process. Errors: HSAD_ERR_UNSUPPORTED ("no NVIDIA driver: dlopen
 * libcuda.so.1: <dlerror>", a missing symbol (driver older than CUDA 12.4), or cuInit's
 * error: the message names it). The result is remembered: later calls return it again. */
hsad_status_t nv_cuda_load(void);

/* "CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)" for r. */
const char *nv_cuda_error(nv_result_t r, char *buf, size_t size);

#endif
