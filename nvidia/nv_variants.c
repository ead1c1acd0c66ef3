/* nv_variants.c - variant sets of NVIDIA kernels (hsa-dispatch/hsad_variants.h, issue 22): the
 * builds of one CUDA source under register budgets (NVRTC to PTX once, the driver's JIT once per
 * budget: cuModuleLoadDataEx with CU_JIT_MAX_REGISTERS, or CU_JIT_MAX_THREADS_PER_BLOCK and
 * CU_JIT_MIN_CTA_PER_SM, __launch_bounds__'s two values, so the source is never edited), the
 * checks that several kernels form one set, and the metadata rule per block size from the
 * driver's attributes and occupancy calculator. The set itself, its cache, the dispatch and the
 * measured mode are hsa-dispatch/variants.c's, shared with AMD. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsa-dispatch/hsad_variants.h"
#include "nvcodeobj/hsad_nv_codeobj.h"
#include "nvidia/nv_internal.h"

bool nv_queue_profiling(const hsad_queue_t *queue) {
  return ((const nv_queue_t *)queue)->profiling;
}

hsad_status_t nv_variant_check(const hsad_device_kernel_t *const *kernels, uint32_t count,
                               hsad_device_t **out_device) {
  const nv_kernel_t *k0 = (const nv_kernel_t *)kernels[0];
  const char *name = k0->desc.name;
  for (uint32_t i = 1; i < count; i++) {
    const nv_kernel_t *k = (const nv_kernel_t *)kernels[i];
    if (k->program->dev != k0->program->dev)
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "variant %u of kernel '%s' is on device %u, "
                       "variant 0 on device %u", i, name, k->program->dev->info.index,
                       k0->program->dev->info.index);
    if (strcmp(k->desc.name, name))
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "variant %u is kernel '%s', variant 0 is '%s'",
                       i, k->desc.name, name);
    if (k->param_count != k0->param_count)
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "kernel '%s': variant %u has %u parameters, "
                       "variant 0 has %u", name, i, k->param_count, k0->param_count);
    for (uint32_t a = 0; a < k->param_count; a++)
      if (k->param_size[a] != k0->param_size[a] || k->param_offset[a] != k0->param_offset[a])
        return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "kernel '%s': parameter %u of variant %u is "
                         "%u bytes at offset %u, of variant 0 %u bytes at offset %u", name, a, i,
                         k->param_size[a], k->param_offset[a], k0->param_size[a],
                         k0->param_offset[a]);
  }
  *out_device = k0->program->dev->pub;
  return HSAD_OK;
}

/* Variant i's figures at (block, dynamic); *out_allowed false when it does not allow them. */
static hsad_status_t nv_variant_figures(const nv_kernel_t *k, uint32_t i, uint32_t block,
                                        uint32_t dynamic, hsad_variant_choice_t *out,
                                        bool *out_allowed) {
  *out_allowed = false;
  if (block == 0 || block > k->desc.max_flat_workgroup_size) return HSAD_OK;
  int blocks = 0;
  nv_result_t r = nv_cu.occupancy_max_active_blocks(&blocks, k->fn, (int)block, dynamic);
  if (r != NV_SUCCESS)
    return nv_fail(k->program->dev, r, "%s: kernel %s: cuOccupancyMaxActiveBlocksPerMultiprocessor"
                   "(block %u, %u dynamic shared bytes)", k->program->label, k->desc.name, block,
                   dynamic);
  if (blocks <= 0) return HSAD_OK;
  uint32_t warps = (block + 31) / 32;
  *out = (hsad_variant_choice_t){.index = i, .waves_per_simd = (uint32_t)blocks * warps / 4,
                                 .scratch_per_work_item = k->desc.private_segment_fixed_size,
                                 .regs = k->registers, .blocks_per_sm = (uint32_t)blocks};
  *out_allowed = true;
  return HSAD_OK;
}

/* The rule (hsad_variants.h): the least local bytes, then the most blocks per SM, then the
 * fewest registers, then the lower index. */
static bool nv_variant_better(const hsad_variant_choice_t *v, const hsad_variant_choice_t *best) {
  if (v->scratch_per_work_item != best->scratch_per_work_item)
    return v->scratch_per_work_item < best->scratch_per_work_item;
  if (v->blocks_per_sm != best->blocks_per_sm) return v->blocks_per_sm > best->blocks_per_sm;
  return v->regs < best->regs;
}

hsad_status_t nv_variant_select(const hsad_device_kernel_t *const *kernels, uint32_t count,
                                uint32_t block, uint32_t dynamic, hsad_variant_choice_t *out) {
  const nv_kernel_t *k0 = (const nv_kernel_t *)kernels[0];
  hsad_status_t s = nv_ctx_enter(k0->program->dev);
  if (s) return s;
  hsad_variant_choice_t best = {0};
  uint32_t n = 0;
  char allowed[200] = "";
  size_t used = 0;
  for (uint32_t i = 0; i < count; i++) {
    const nv_kernel_t *k = (const nv_kernel_t *)kernels[i];
    int w = snprintf(allowed + used, sizeof allowed - used, "%s%u", i ? ", " : "",
                     k->desc.max_flat_workgroup_size);
    if (w > 0 && used + (size_t)w < sizeof allowed) used += (size_t)w;
    hsad_variant_choice_t c;
    bool ok;
    if ((s = nv_variant_figures(k, i, block, dynamic, &c, &ok))) return s;
    if (!ok) continue;
    if (n++ == 0 || nv_variant_better(&c, &best)) best = c;
  }
  if (n == 0)
    return hsad_fail(HSAD_ERR_WORKGROUP, "%s: kernel '%s': no variant allows block size %u with "
                     "%u bytes of dynamic shared memory (variants allow up to %s threads)",
                     k0->program->label, k0->desc.name, block, dynamic, allowed);
  best.reason = best.scratch_per_work_item ? HSAD_VARIANT_LEAST_SPILL : HSAD_VARIANT_NO_SPILL;
  best.candidates = n;
  *out = best;
  hsad_clear_error();
  return HSAD_OK;
}

/* ---- builds ---------------------------------------------------------------------------- */

/* Budget i in range, its JIT options and its label suffix. */
static hsad_status_t nv_budget_options(const hsad_nv_budget_t *b, uint32_t i, nv_jit_t *jit,
                                       char *what, size_t what_size) {
  *jit = (nv_jit_t){0};
  if (b->max_registers && (b->max_registers < HSAD_NV_MIN_REGISTERS || b->max_registers > 255))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_nv_program_compile_variants: variant %u: "
                     "a budget of %u registers per thread is outside %u..255 (ptxas raises a "
                     "cap below %u to %u)", i, b->max_registers, HSAD_NV_MIN_REGISTERS,
                     HSAD_NV_MIN_REGISTERS, HSAD_NV_MIN_REGISTERS);
  if (b->max_threads > 1024)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_nv_program_compile_variants: variant %u: "
                     "max_threads %u is above 1024 threads per block", i, b->max_threads);
  if (b->min_blocks_per_sm && (!b->max_threads || b->max_registers || b->min_blocks_per_sm > 32))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_nv_program_compile_variants: variant %u: "
                     "min_blocks_per_sm %u needs max_threads, no max_registers (the driver "
                     "ignores CU_JIT_MIN_CTA_PER_SM beside CU_JIT_MAX_REGISTERS) and at most 32",
                     i, b->min_blocks_per_sm);
  if (b->max_registers) {
    jit->option[jit->count] = NV_JIT_MAX_REGISTERS;
    jit->value[jit->count++] = b->max_registers;
    snprintf(what, what_size, "regs<=%u", b->max_registers);
  } else if (b->max_threads) {
    jit->option[jit->count] = NV_JIT_MAX_THREADS_PER_BLOCK;
    jit->value[jit->count++] = b->max_threads;
    if (b->min_blocks_per_sm) {
      jit->option[jit->count] = NV_JIT_MIN_CTA_PER_SM;
      jit->value[jit->count++] = b->min_blocks_per_sm;
    }
    snprintf(what, what_size, b->min_blocks_per_sm ? "threads<=%u blocks>=%u" : "threads<=%u",
             b->max_threads, b->min_blocks_per_sm);
  } else {
    snprintf(what, what_size, "as written");
  }
  return HSAD_OK;
}

/* Every kernel of build i within its budget (registers; the blocks of max_threads). */
static hsad_status_t nv_budget_met(const nv_program_t *p, const hsad_nv_budget_t *b, uint32_t i) {
  for (uint32_t j = 0; j < p->kernel_count; j++) {
    const nv_kernel_t *k = &p->kernels[j];
    if (b->max_registers && k->registers > b->max_registers)
      return hsad_fail(HSAD_ERR_COMPILE, "%s: kernel '%s': cannot meet variant %u's budget of "
                       "%u registers per thread: the JIT used %u (its own __launch_bounds__ or "
                       "__maxnreg__ win)", p->label, k->desc.name, i, b->max_registers,
                       k->registers);
    if (!b->max_threads) continue;
    if (k->desc.max_flat_workgroup_size < b->max_threads)
      return hsad_fail(HSAD_ERR_COMPILE, "%s: kernel '%s': cannot meet variant %u's budget of "
                       "%u threads per block: it allows %u (%u registers)", p->label,
                       k->desc.name, i, b->max_threads, k->desc.max_flat_workgroup_size,
                       k->registers);
    int blocks = 0;
    nv_result_t r = nv_cu.occupancy_max_active_blocks(&blocks, k->fn, (int)b->max_threads, 0);
    if (r != NV_SUCCESS)
      return nv_fail(p->dev, r, "%s: kernel %s: cuOccupancyMaxActiveBlocksPerMultiprocessor",
                     p->label, k->desc.name);
    if ((uint32_t)blocks < b->min_blocks_per_sm)
      return hsad_fail(HSAD_ERR_COMPILE, "%s: kernel '%s': cannot meet variant %u's budget of "
                       "%u blocks of %u threads per SM: %d fit (%u registers, %u local bytes)",
                       p->label, k->desc.name, i, b->min_blocks_per_sm, b->max_threads, blocks,
                       k->registers, k->desc.private_segment_fixed_size);
  }
  return HSAD_OK;
}

static nv_dev_t *nv_dev_of(const hsad_device_t *device) {
  for (uint32_t i = 0; device && i < nv_dev_count; i++)
    if (nv_devs[i].pub == device) return &nv_devs[i];
  return NULL;
}

/* Loads the PTX once per budget (out[] NULL on entry); on failure every program made is
 * destroyed. */
static hsad_status_t nv_load_variants(nv_dev_t *dev, const char *ptx, size_t size,
                                      const char *name, const hsad_nv_budget_t *budgets,
                                      uint32_t count, hsad_program_t **out) {
  hsad_status_t s = HSAD_OK;
  for (uint32_t i = 0; i < count && !s; i++) {
    nv_jit_t jit;
    char what[64], label[320];
    s = nv_budget_options(&budgets[i], i, &jit, what, sizeof what);
    snprintf(label, sizeof label, "%s[variant %u: %s]", name, i, what);
    if (!s) s = nv_program_load_jit(dev, ptx, size, label, &jit, &out[i]);
    if (!s) s = nv_budget_met((const nv_program_t *)out[i], &budgets[i], i);
  }
  if (!s) return HSAD_OK;
  for (uint32_t i = 0; i < count; i++) {
    if (out[i]) hsad_program_destroy(out[i]);
    out[i] = NULL;
  }
  return s;
}

hsad_status_t hsad_nv_program_compile_variants(hsad_device_t *device, const char *source,
                                               const char *source_name,
                                               const struct hsad_nv_compile_options *opts,
                                               const hsad_nv_budget_t *budgets, uint32_t count,
                                               hsad_program_t **out_programs, char **out_log) {
  if (out_log) *out_log = NULL;
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_nv_program_compile_variants", {device, "device"},
                                   {source, "source"}, {source_name, "source_name"},
                                   {opts, "opts"}, {budgets, "budgets"},
                                   {out_programs, "out_programs"});
  if (ns) return ns;
  if (count == 0 || count > HSAD_VARIANT_MAX)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_nv_program_compile_variants: %u variants "
                     "(1..%u)", count, HSAD_VARIANT_MAX);
  nv_dev_t *dev = nv_dev_of(device);
  if (!dev) { /* only a device of the open runtime is read (a foreign pointer is not) */
    const hsad_device_info_t *di = hsad_device_runtime(device) ? hsad_device_info(device) : NULL;
    if (di)
      return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_nv_program_compile_variants: device %u (%s) "
                       "is not an NVIDIA device", di->index, di->name);
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_nv_program_compile_variants: the device is "
                     "not a device of the open runtime");
  }
  for (uint32_t i = 0; i < count; i++) { /* every budget checked before compiling */
    nv_jit_t jit;
    char what[64];
    hsad_status_t s = nv_budget_options(&budgets[i], i, &jit, what, sizeof what);
    if (s) return s;
  }
  hsad_nv_compile_options_t o = *opts;
  if (!o.target) o.target = dev->info.isa_name;
  char *ptx = NULL;
  size_t size = 0;
  hsad_status_t s = hsad_nv_compile_ptx(source, source_name, &o, &ptx, &size, out_log);
  if (s) return s;
  for (uint32_t i = 0; i < count; i++) out_programs[i] = NULL;
  s = nv_load_variants(dev, ptx, size, source_name, budgets, count, out_programs);
  free(ptx);
  if (s && out_log) {
    free(*out_log);
    *out_log = NULL;
  }
  return s;
}
