/* hsad_codeobj.h - AMDGPU code objects: loading, metadata, kernel descriptors, kernarg builder.
 *
 * The umbrella header other folders include from codeobj/. It needs no GPU and no ROCr. It
 * includes one header per concept, each usable alone (issue 23):
 *   hsad_codeobj_metadata.h   value kinds, address spaces, .args entries, kernel descriptors,
 *                             hsad_kernel_info_t
 *   hsad_codeobj_target.h     target IDs (processor, xnack/sramecc), compatibility
 *   hsad_codeobj_container.h  plain code objects, offload bundles, HIP fat binaries
 *   hsad_codeobj_load.h       loading code objects; their kernels and accessors
 *   hsad_codeobj_kernarg.h    argument values (HSAD_KARG_*), kernarg plans, hsad_kernarg_build
 *   hsad_codeobj_occupancy.h  per-processor limits, occupancy, register pressure
 *   hsad_codeobj_compile.h    comgr compilation, register-budget variants, variant selection
 * The rules below (ownership, thread safety, errors, rule sources) hold for every part.
 *
 * Objects and ownership
 *   hsad_codeobj_container_t  an input file or buffer: a plain code object (ELF), a clang
 *                             offload bundle (__CLANG_OFFLOAD_BUNDLE__) or a host ELF with a
 *                             .hip_fatbin section (many concatenated bundles). Lists the code
 *                             objects inside ("entries"). Owns a copy of the input bytes.
 *   hsad_codeobj_t            one loaded code object: its target, version and kernels. Owns a
 *                             private copy of the ELF image and every string and array reachable
 *                             from it; it does not depend on the container or the caller's buffer
 *                             after the load call returns.
 *   hsad_kernel_t             one kernel inside an hsad_codeobj_t; owned by it, valid until
 *                             hsad_codeobj_destroy(). Carries the decoded metadata
 *                             (hsad_kernel_info_t), the decoded kernel descriptor and a
 *                             precomputed kernarg plan used by hsad_kernarg_build().
 *
 * Thread safety: loading, destroying and the accessors are reentrant (no global mutable state
 * besides the per-thread error message of common/hsad_status.h and one-time initialisation
 * under pthread_once: libelf's version, comgr's dlopen). A loaded hsad_codeobj_t is immutable:
 * any number of threads may look kernels up, read their info and build kernargs concurrently
 * without locks. Destroy it only when no other thread uses it.
 *
 * Errors: every fallible call returns hsad_status_t; hsad_last_error() then holds a message that
 * starts with the file name (or the caller's label for a buffer) and says what is wrong, e.g.
 * "k.hsaco: truncated: section header table (offset 3520, 9 x 64 bytes) runs past the end of
 * the 4160-byte file".
 *
 * Rule sources: "AMDGPUUsage" below is LLVM's AMDGPU backend user guide
 * (llvm/docs/AMDGPUUsage.rst, sections "ELF Code Object", "Code Object Metadata",
 * "Kernel Descriptor", "Code Object V5 Metadata" and "Hidden/implicit kernel arguments").
 */
#ifndef HSAD_CODEOBJ_H
#define HSAD_CODEOBJ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hsad_status.h"
#include "codeobj/hsad_codeobj_metadata.h"
#include "codeobj/hsad_codeobj_target.h"
#include "codeobj/hsad_codeobj_container.h"
#include "codeobj/hsad_codeobj_load.h"
#include "codeobj/hsad_codeobj_kernarg.h"
#include "codeobj/hsad_codeobj_occupancy.h"
#include "codeobj/hsad_codeobj_compile.h"

#endif /* HSAD_CODEOBJ_H */
