/* test_nv_decls.c - nvidia/nv_cuda.h against the real cuda.h (issue 19): every constant's
 * value, every handle typedef's size, every function pointer type against cuda.h's prototype
 * of the exported symbol. The checks are compile-time (_Static_assert): where cuda.h is
 * installed (the build passes -DNV_HAVE_CUDA_H and its include folder) a mismatch fails the
 * build of this test; the test itself then records how many declarations were checked.
 * Without cuda.h it reports itself skipped, with the reason. */
#include <criterion/criterion.h>
#include <stddef.h>

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

/* the structures, field by field */
#define SAME_FIELD_(ours, theirs, a, b)                                                       \
  _Static_assert(offsetof(ours, a) == offsetof(theirs, b) &&                                  \
                     sizeof(((ours *)0)->a) == sizeof(((theirs *)0)->b),                      \
                 #theirs "." #b " differs")
_Static_assert(sizeof(nv_launch_attribute_t) == sizeof(CUlaunchAttribute), "CUlaunchAttribute");
_Static_assert(_Alignof(nv_launch_attribute_t) == _Alignof(CUlaunchAttribute), "its alignment");
SAME_FIELD_(nv_launch_attribute_t, CUlaunchAttribute, id, id);
SAME_FIELD_(nv_launch_attribute_t, CUlaunchAttribute, pad, pad);
SAME_FIELD_(nv_launch_attribute_t, CUlaunchAttribute, value, value);
SAME_FIELD_(nv_launch_attribute_t, CUlaunchAttribute, value.cooperative, value.cooperative);
_Static_assert(sizeof(nv_launch_config_t) == sizeof(CUlaunchConfig), "CUlaunchConfig");
_Static_assert(_Alignof(nv_launch_config_t) == _Alignof(CUlaunchConfig), "its alignment");
SAME_FIELD_(nv_launch_config_t, CUlaunchConfig, grid_dim_x, gridDimX);
SAME_FIELD_(nv_launch_config_t, CUlaunchConfig, grid_dim_y, gridDimY);
SAME_FIELD_(nv_launch_config_t, CUlaunchConfig, grid_dim_z, gridDimZ);
SAME_FIELD_(nv_launch_config_t, CUlaunchConfig, block_dim_x, blockDimX);
SAME_FIELD_(nv_launch_config_t, CUlaunchConfig, block_dim_y, blockDimY);
SAME_FIELD_(nv_launch_config_t, CUlaunchConfig, block_dim_z, blockDimZ);
SAME_FIELD_(nv_launch_config_t, CUlaunchConfig, shared_mem_bytes, sharedMemBytes);
SAME_FIELD_(nv_launch_config_t, CUlaunchConfig, stream, hStream);
SAME_FIELD_(nv_launch_config_t, CUlaunchConfig, attrs, attrs);
SAME_FIELD_(nv_launch_config_t, CUlaunchConfig, num_attrs, numAttrs);
_Static_assert(__builtin_types_compatible_p(__typeof__(((nv_launch_config_t *)0)->stream),
                                            __typeof__(((CUlaunchConfig *)0)->hStream)), "hStream");
_Static_assert(sizeof(((CUlaunchAttribute *)0)->id) == sizeof(unsigned int), "CUlaunchAttributeID");
/* prototypes with cuda.h's structure types in place of ours */
typedef CUresult (*cuda_cuLaunchKernelEx_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuLaunchKernelEx), cuda_cuLaunchKernelEx_fn),
               "cuLaunchKernelEx: cuda.h's prototype changed");
_Static_assert(__builtin_types_compatible_p(
                   nv_cuLaunchKernelEx_fn,
                   nv_result_t (*)(const nv_launch_config_t *, nv_function_t, void **, void **)),
               "cuLaunchKernelEx: nv_cuda.h's declaration");

/* graph node parameters (CUDA_KERNEL_NODE_PARAMS_v2, CUDA_MEMCPY3D_v2, CUDA_MEMSET_NODE_PARAMS) */
#define SAME_STRUCT_(ours, theirs)                                                            \
  _Static_assert(sizeof(ours) == sizeof(theirs) && _Alignof(ours) == _Alignof(theirs), #theirs)
SAME_STRUCT_(nv_kernel_node_params_t, CUDA_KERNEL_NODE_PARAMS);
SAME_FIELD_(nv_kernel_node_params_t, CUDA_KERNEL_NODE_PARAMS, func, func);
SAME_FIELD_(nv_kernel_node_params_t, CUDA_KERNEL_NODE_PARAMS, grid_dim_x, gridDimX);
SAME_FIELD_(nv_kernel_node_params_t, CUDA_KERNEL_NODE_PARAMS, grid_dim_y, gridDimY);
SAME_FIELD_(nv_kernel_node_params_t, CUDA_KERNEL_NODE_PARAMS, grid_dim_z, gridDimZ);
SAME_FIELD_(nv_kernel_node_params_t, CUDA_KERNEL_NODE_PARAMS, block_dim_x, blockDimX);
SAME_FIELD_(nv_kernel_node_params_t, CUDA_KERNEL_NODE_PARAMS, block_dim_y, blockDimY);
SAME_FIELD_(nv_kernel_node_params_t, CUDA_KERNEL_NODE_PARAMS, block_dim_z, blockDimZ);
SAME_FIELD_(nv_kernel_node_params_t, CUDA_KERNEL_NODE_PARAMS, shared_mem_bytes, sharedMemBytes);
SAME_FIELD_(nv_kernel_node_params_t, CUDA_KERNEL_NODE_PARAMS, kernel_params, kernelParams);
SAME_FIELD_(nv_kernel_node_params_t, CUDA_KERNEL_NODE_PARAMS, extra, extra);
SAME_FIELD_(nv_kernel_node_params_t, CUDA_KERNEL_NODE_PARAMS, kern, kern);
SAME_FIELD_(nv_kernel_node_params_t, CUDA_KERNEL_NODE_PARAMS, ctx, ctx);
SAME_STRUCT_(nv_memcpy3d_t, CUDA_MEMCPY3D);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, src_x_bytes, srcXInBytes);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, src_memory_type, srcMemoryType);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, src_host, srcHost);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, src_device, srcDevice);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, src_array, srcArray);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, reserved0, reserved0);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, src_pitch, srcPitch);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, src_height, srcHeight);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, dst_x_bytes, dstXInBytes);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, dst_memory_type, dstMemoryType);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, dst_host, dstHost);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, dst_device, dstDevice);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, dst_array, dstArray);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, reserved1, reserved1);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, dst_pitch, dstPitch);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, dst_height, dstHeight);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, width_bytes, WidthInBytes);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, height, Height);
SAME_FIELD_(nv_memcpy3d_t, CUDA_MEMCPY3D, depth, Depth);
_Static_assert(sizeof(((CUDA_MEMCPY3D *)0)->srcMemoryType) == sizeof(unsigned int), "CUmemorytype");
SAME_STRUCT_(nv_memset_node_params_t, CUDA_MEMSET_NODE_PARAMS);
SAME_FIELD_(nv_memset_node_params_t, CUDA_MEMSET_NODE_PARAMS, dst, dst);
SAME_FIELD_(nv_memset_node_params_t, CUDA_MEMSET_NODE_PARAMS, pitch, pitch);
SAME_FIELD_(nv_memset_node_params_t, CUDA_MEMSET_NODE_PARAMS, value, value);
SAME_FIELD_(nv_memset_node_params_t, CUDA_MEMSET_NODE_PARAMS, element_size, elementSize);
SAME_FIELD_(nv_memset_node_params_t, CUDA_MEMSET_NODE_PARAMS, width, width);
SAME_FIELD_(nv_memset_node_params_t, CUDA_MEMSET_NODE_PARAMS, height, height);
/* their prototypes, with cuda.h's structures in place of ours */
#define SAME_PROTO_(symbol, cuda_params, our_params)                                          \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&symbol), CUresult(*) cuda_params),  \
                 #symbol ": cuda.h's prototype changed");                                     \
  _Static_assert(__builtin_types_compatible_p(nv_##symbol##_fn, nv_result_t(*) our_params),   \
                 #symbol ": nv_cuda.h's declaration")
SAME_PROTO_(cuGraphAddKernelNode_v2,
            (CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_KERNEL_NODE_PARAMS *),
            (nv_graph_node_t *, nv_graph_t, const nv_graph_node_t *, size_t,
             const nv_kernel_node_params_t *));
SAME_PROTO_(cuGraphAddMemcpyNode,
            (CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_MEMCPY3D *, CUcontext),
            (nv_graph_node_t *, nv_graph_t, const nv_graph_node_t *, size_t, const nv_memcpy3d_t *,
             nv_context_t));
SAME_PROTO_(cuGraphAddMemsetNode,
            (CUgraphNode *, CUgraph, const CUgraphNode *, size_t, const CUDA_MEMSET_NODE_PARAMS *,
             CUcontext),
            (nv_graph_node_t *, nv_graph_t, const nv_graph_node_t *, size_t,
             const nv_memset_node_params_t *, nv_context_t));
SAME_PROTO_(cuGraphExecKernelNodeSetParams_v2,
            (CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *),
            (nv_graph_exec_t, nv_graph_node_t, const nv_kernel_node_params_t *));
SAME_PROTO_(cuGraphExecMemcpyNodeSetParams,
            (CUgraphExec, CUgraphNode, const CUDA_MEMCPY3D *, CUcontext),
            (nv_graph_exec_t, nv_graph_node_t, const nv_memcpy3d_t *, nv_context_t));
SAME_PROTO_(cuGraphExecMemsetNodeSetParams,
            (CUgraphExec, CUgraphNode, const CUDA_MEMSET_NODE_PARAMS *, CUcontext),
            (nv_graph_exec_t, nv_graph_node_t, const nv_memset_node_params_t *, nv_context_t));
_Static_assert(__builtin_types_compatible_p(nv_graph_t, CUgraph), "CUgraph type");
_Static_assert(__builtin_types_compatible_p(nv_graph_node_t, CUgraphNode), "CUgraphNode type");
_Static_assert(__builtin_types_compatible_p(nv_graph_exec_t, CUgraphExec), "CUgraphExec type");

_Static_assert(sizeof(nv_deviceptr_t) == sizeof(CUdeviceptr), "CUdeviceptr size");
_Static_assert(__builtin_types_compatible_p(nv_deviceptr_t, CUdeviceptr), "CUdeviceptr type");
_Static_assert(__builtin_types_compatible_p(nv_device_t, CUdevice), "CUdevice type");
_Static_assert(__builtin_types_compatible_p(nv_context_t, CUcontext), "CUcontext type");
_Static_assert(__builtin_types_compatible_p(nv_stream_t, CUstream), "CUstream type");
_Static_assert(__builtin_types_compatible_p(nv_event_t, CUevent), "CUevent type");
_Static_assert(__builtin_types_compatible_p(nv_result_t, CUresult), "CUresult type");
_Static_assert(sizeof(nv_device_attribute_t) == sizeof(CUdevice_attribute), "attribute size");
_Static_assert(sizeof(nv_function_attribute_t) == sizeof(CUfunction_attribute), "attr size");
_Static_assert(__builtin_types_compatible_p(nv_jit_option_t *, CUjit_option *), "CUjit_option");
_Static_assert(CUDA_VERSION >= 12040, "the backend's declarations need CUDA 12.4+ headers");

#define COUNT_(...) +1
Test(nv_decls, match_cuda_h) {
  int constants = 0 NV_CUDA_CONSTANTS(COUNT_), functions = 0 NV_CUDA_FUNCTIONS(COUNT_)
      NV_CUDA_STRUCT_FUNCTIONS(COUNT_);
  cr_log_info("nv_cuda.h matches cuda.h of CUDA %d.%d: %d constants, %d functions, 2 structures "
              "(13 fields), 3 graph node structures (38 fields)", CUDA_VERSION / 1000,
              CUDA_VERSION % 1000 / 10, constants, functions);
  cr_expect_eq(constants, 54);
  cr_expect_eq(functions, 67);
}
#else
Test(nv_decls, match_cuda_h) {
  cr_skip_test("no cuda.h at build time (CUDA_INC): the driver API declarations of "
               "nvidia/nv_cuda.h were not checked");
}
#endif
