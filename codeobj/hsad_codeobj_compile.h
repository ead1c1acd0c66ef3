/* hsad_codeobj_compile.h - compilation through comgr (OpenCL C, carried source, register-budget
 * variants) and variant selection.
 *
 * Part of codeobj/'s public interface: include codeobj/hsad_codeobj.h (the umbrella,
 * with the objects, ownership, thread-safety and error rules that hold for every part)
 * or this header alone. */
#ifndef HSAD_CODEOBJ_COMPILE_H
#define HSAD_CODEOBJ_COMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hsad_status.h"
#include "codeobj/hsad_codeobj_load.h"
#include "codeobj/hsad_codeobj_occupancy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* Compilation through comgr                                                                  */

/* A register budget (issue 9, variants): launch bounds the library sets on every kernel of a
 * source, the source unchanged. clang derives its register limits from them (HIP's
 * __launch_bounds__(T, M) means the same: flat_work_group_size(1, T) + waves_per_eu(M)).
 * OpenCL: every `__kernel`/`kernel` gains __attribute__((amdgpu_flat_work_group_size(1, N),
 * amdgpu_waves_per_eu(W))) through -D definitions of those keywords; HIP: `__global__` is
 * redefined the same way after hip/hip_runtime.h (a header passed with -include), so HIP kernels
 * must be declared with __global__. A zero field is not set. */
typedef struct hsad_variant_budget {
  uint32_t max_workgroup_size;  /* work-items, 1..1024: amdgpu_flat_work_group_size(1, N) */
  uint32_t min_waves_per_eu;    /* waves per SIMD, 1..the processor's maximum:
                                   amdgpu_waves_per_eu(W) */
} hsad_variant_budget_t;

typedef struct hsad_compile_options {
  const char *target;           /* target ID, "gfx90a" or "gfx90a:xnack-" (required) */
  int opt_level;                /* 0..3 */
  const char *const *defines;   /* "NAME" or "NAME=VALUE", define_count of them */
  uint32_t define_count;
  const char *const *include_dirs; /* extra -I directories */
  uint32_t include_dir_count;
  uint32_t code_object_version; /* 4 or 5; 0: comgr's default */
  hsad_variant_budget_t budget; /* {0, 0}: none */
} hsad_compile_options_t;

/* The source an OpenCL C code object carries (issue 20): hsad_codeobj_compile appends to a
 * ".cl" source a program-scope constant HSAD_CL_SOURCE_SYMBOL (protected visibility, kept with
 * __attribute__((used)), so it is in the dynamic symbol table and in a loaded segment) whose
 * bytes are HSAD_CL_SOURCE_MAGIC, the -D build options on one line, the source made
 * self-contained by hsad_cl_source_expand (its includes inlined: no -I is carried), and a NUL. kfd-emu finds it from a dispatch's kernel_object and runs the
 * kernel from that source through POCL. kernels/carry_source.py does the same for make. */
#define HSAD_CL_SOURCE_SYMBOL "__hsad_cl_source"
#define HSAD_CL_SOURCE_MAGIC "HSADCL1\n"

/* A self-contained copy of an OpenCL C source (issue 20): every `#include "F"` found next to
 * the including file (source_name's folder for the source itself) or in include_dirs (in
 * order), and every `#include <F>` found in include_dirs, is replaced by F's text, recursively,
 * between `#line 1 "PATH"` and `#line N "PARENT"` directives (so diagnostics keep their files
 * and lines); an include found nowhere (a compiler header such as opencl-c.h) stays as it is.
 * Textual: a file included twice is inlined twice (its include guards still work; #pragma
 * once does not). *out_text (malloc'd, caller frees; NUL-terminated) and *out_size (bytes,
 * without the NUL). Used for the source a code object carries and by `hsad run --source`.
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL), HSAD_ERR_IO (an include that exists cannot be
 * read: names it and the line including it), HSAD_ERR_COMPILE (nested deeper than 16: names
 * the file and line), HSAD_ERR_OUT_OF_MEMORY. Thread-safe. */
hsad_status_t hsad_cl_source_expand(const char *source, size_t size, const char *source_name,
                                    const char *const *include_dirs, uint32_t include_dir_count,
                                    char **out_text, size_t *out_size);

/* Compiles OpenCL C (".cl", as OpenCL C 2.0) or HIP (".hip") source to a code object with
 * comgr (COMPILE_SOURCE_WITH_DEVICE_LIBS_TO_BC, CODEGEN_BC_TO_RELOCATABLE,
 * LINK_RELOCATABLE_TO_EXECUTABLE). comgr (libamd_comgr.so.2) is loaded with dlopen on the first
 * call, so programs that never compile do not pay for loading libLLVM. clang's resource include
 * folder (found at build time) is passed with -I, and -Xclang -finclude-default-header for
 * OpenCL. `source_name` is the name diagnostics show ("dir/k.cl:3:5: error: ..."; comgr's
 * temporary path is rewritten back to it). On success *out_data (malloc'd, caller frees) holds
 * the ELF and *out_size its bytes. *out_log (malloc'd, may be NULL, caller frees; out_log itself
 * may be NULL) gets the compiler's diagnostics on success (warnings) and failure.
 * HIP: compiled with the system HIP headers (Debian libamdhip64-dev); Debian's comgr 2.4 links
 * no device libraries for HIP, so hip/ocml/ockl/oclc_*.bc from rocm-device-libs (folder found at
 * build time) are linked into the bitcode with -mlink-builtin-bitcode, as clang's HIP driver
 * does (wave64 on gfx9, wave32 on gfx10+).
 * With a budget, every kernel of the result is checked against it: .max_flat_workgroup_size
 * must equal max_workgroup_size (else the budget did not reach the kernel: HSAD_ERR_COMPILE
 * naming it), a .reqd_workgroup_size above it is a conflict (HSAD_ERR_COMPILE naming the kernel
 * and both sizes), and the registers must allow min_waves_per_eu waves per SIMD (one-wave
 * workgroups, hsad_kernel_occupancy's model; HSAD_ERR_COMPILE "cannot meet" with the counts).
 * Errors: HSAD_ERR_INVALID_ARGUMENT (a NULL pointer: "hsad_codeobj_compile: NULL source_name"
 * naming the first, opts->target included; -O outside 0..3, bad target ID, a budget field out
 * of range),
 * HSAD_ERR_CODE_OBJECT_VERSION (code_object_version not 0, 4 or 5), HSAD_ERR_UNSUPPORTED
 * (file name not .cl/.hip, comgr cannot be loaded, or a HIP device library for the processor
 * is absent), HSAD_ERR_COMPILE (compile, codegen or
 * link failed; the message names the step and target and holds the first 900 bytes of the
 * diagnostics, *out_log all of them), HSAD_ERR_OUT_OF_MEMORY. Thread-safe (comgr is; the
 * one-time load uses pthread_once). */
hsad_status_t hsad_codeobj_compile(const char *source, size_t source_size,
                                   const char *source_name, const hsad_compile_options_t *opts,
                                   void **out_data, size_t *out_size, char **out_log);

/* Variants (issue 9): compiles one unchanged source once per budget (opts->budget is ignored;
 * budgets[i] = {0, 0} is the source as written) and loads each result: out_variants[i] (caller
 * destroys each) is the code object of budgets[i], labelled "NAME[variant I: wg<=N waves>=W]".
 * When a budget sets max_workgroup_size, the source is first compiled without a budget, and a
 * kernel whose own attributes bound its workgroup size below the language default (OpenCL 256,
 * HIP 1024) refuses a larger budget (HSAD_ERR_COMPILE: "kernel 'k' declares a maximum workgroup
 * size of 128 (its own attributes); variant 1 asks 256"). *out_log (may be NULL): the log of
 * the last compile, malloc'd. Errors: those of hsad_codeobj_compile and
 * hsad_codeobj_load_memory; HSAD_ERR_INVALID_ARGUMENT (NULL, count 0 or above 16). On failure
 * no code object is returned. Thread-safe. */
hsad_status_t hsad_codeobj_compile_variants(const char *source, size_t source_size,
                                            const char *source_name,
                                            const hsad_compile_options_t *opts,
                                            const hsad_variant_budget_t *budgets, uint32_t count,
                                            hsad_codeobj_t **out_variants, char **out_log);

/* Why a variant was chosen. */
typedef enum hsad_variant_reason {
  HSAD_VARIANT_NO_SPILL = 0,  /* highest waves per SIMD among those without spills and without
                                 more scratch than the least of them */
  HSAD_VARIANT_LEAST_SPILL,   /* every allowed variant spills: the fewest VGPR + SGPR spills */
  HSAD_VARIANT_MEASURED,      /* timed on the device (hsad_variant_set_autotune in
                                 hsa-dispatch/hsad_variants.h): the shortest run */
} hsad_variant_reason_t;

/* "no spills, most waves", "least spilling", "measured fastest"; "?" for other values. */
const char *hsad_variant_reason_name(hsad_variant_reason_t reason);

typedef struct hsad_variant_choice {
  uint32_t index;                /* into the kernels array */
  hsad_variant_reason_t reason;
  uint32_t waves_per_simd;       /* its predicted occupancy at the workgroup size */
  uint32_t spills;               /* its .vgpr_spill_count + .sgpr_spill_count */
  uint32_t scratch_per_work_item;/* bytes */
  uint32_t regs;                 /* VGPRs counted (hsad_pressure_row_t.regs) */
  uint32_t candidates;           /* variants that allow the workgroup size */
  uint32_t blocks_per_sm;        /* NVIDIA variant sets (hsa-dispatch/hsad_variants.h): its
                                    resident blocks per SM at the block size; 0 on AMD */
} hsad_variant_choice_t;

/* Picks, among `count` variants of one kernel (the same kernel of each variant code object),
 * the one to dispatch at `workgroup_size` work-items with `dynamic_lds` extra LDS bytes, from
 * metadata alone: among variants allowing the size (.max_flat_workgroup_size, and
 * .reqd_workgroup_size when present), those without spills and without more scratch than the
 * least of them; the highest waves per SIMD (hsad_kernel_occupancy on `limits`, NULL: each
 * kernel's processor) wins, ties to fewer VGPRs, then to the lower index. When every allowed
 * variant spills: the fewest spills, ties to more waves, then fewer VGPRs, then the lower index.
 * The caller caches the answer per (kernel, workgroup size). Pure; thread-safe; O(count).
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL, count 0 or above 16), HSAD_ERR_WORKGROUP (no variant allows the
 * size: the message names the kernel, the size and each variant's maximum),
 * HSAD_ERR_UNSUPPORTED / HSAD_ERR_LDS_LIMIT as hsad_kernel_occupancy. */
hsad_status_t hsad_kernel_variant_select(const hsad_kernel_t *const *kernels, uint32_t count,
                                         const hsad_gfx_limits_t *limits,
                                         uint32_t workgroup_size, uint32_t dynamic_lds,
                                         hsad_variant_choice_t *out_choice);

#ifdef __cplusplus
}
#endif
#endif /* HSAD_CODEOBJ_COMPILE_H */
