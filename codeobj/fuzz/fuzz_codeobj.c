/* fuzz_codeobj.c - libFuzzer target over the container reader (ELF / offload bundle / host
 * .hip_fatbin), the code object loader and metadata decoder, and everything that consumes a
 * loaded kernel (kernarg plan and builder, occupancy, pressure). Built and run by `make fuzz`
 * (clang-15 -fsanitize=fuzzer,address,undefined); any crash, sanitizer report or leak is a
 * finding. The seed corpus is the real code objects the build makes (codeobj fixtures and
 * kernels/). */
#include "codeobj/hsad_codeobj.h"

#include <stdlib.h>
#include <string.h>

static void exercise_kernel(const hsad_kernel_t *k) {
  const hsad_kernel_info_t *ki = hsad_kernel_info(k);
  const hsad_kernarg_plan_t *p = hsad_kernel_kernarg_plan(k);
  if (!ki || !p) abort();
  /* every offset the plan gives must lie inside the segment (the loader checked the note) */
  for (uint32_t i = 0; i < p->explicit_count; i++)
    if ((uint64_t)p->explicit_args[i].offset + p->explicit_args[i].size > p->segment_size) abort();
  for (uint32_t i = 0; i < p->hidden_count; i++)
    if ((uint64_t)p->hidden_args[i].offset + p->hidden_args[i].size > p->segment_size) abort();
  static const uint8_t zeros[4096];
  hsad_karg_t args[64];
  uint32_t n = p->explicit_count < 64 ? p->explicit_count : 64;
  for (uint32_t i = 0; i < n; i++) {
    const hsad_kernarg_slot_t *s = &p->explicit_args[i];
    if (s->kind == HSAD_VK_DYNAMIC_SHARED_POINTER)
      args[i] = (hsad_karg_t){.tag = HSAD_KARG_LDS, .lds_bytes = 64};
    else
      args[i] = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .size = s->size,
                              .bytes = s->size <= sizeof zeros ? zeros : NULL};
  }
  size_t need = p->segment_size ? p->segment_size : 1;
  void *buf = aligned_alloc(64, (need + 63) & ~(size_t)63);
  if (!buf) return;
  hsad_dispatch_dims_t d = {.grid_size = {1000, 3, 1}, .workgroup_size = {64, 2, 1}, .dims = 2};
  hsad_kernarg_runtime_t rt = {.queue_ptr = 0x1000, .heap_v1 = 0x2000};
  uint32_t group = 0;
  (void)hsad_kernarg_build(k, args, n, &d, &rt, buf, p->segment_size, &group);
  free(buf);
  hsad_occupancy_t occ;
  uint32_t wg = ki->max_flat_workgroup_size < 256 ? ki->max_flat_workgroup_size : 256;
  hsad_status_t st = hsad_kernel_occupancy(k, NULL, wg ? wg : 1, 0, &occ);
  hsad_pressure_report_t pr;
  (void)hsad_kernel_pressure(k, st == HSAD_OK ? &occ : NULL, 2, &pr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hsad_codeobj_t *co = NULL;
  if (hsad_codeobj_load_memory(data, size, "fuzz", &co) == HSAD_OK) hsad_codeobj_destroy(co);
  hsad_codeobj_container_t *c = NULL;
  if (hsad_codeobj_container_open_memory(data, size, "fuzz", &c) != HSAD_OK) return 0;
  size_t idx;
  (void)hsad_codeobj_container_select(c, "gfx90a:xnack-", &idx);
  size_t entries = hsad_codeobj_container_entry_count(c);
  for (size_t i = 0; i < entries && i < 16; i++) {
    if (hsad_codeobj_load_entry(c, i, &co) != HSAD_OK) continue;
    const hsad_codeobj_info_t *ci = hsad_codeobj_info(co);
    for (uint32_t k = 0; k < ci->kernel_count; k++) {
      const hsad_kernel_t *kern = hsad_codeobj_kernel_at(co, k);
      const hsad_kernel_info_t *ki = hsad_kernel_info(kern);
      const hsad_kernel_t *found = NULL;
      if (hsad_codeobj_kernel_find(co, ki->name, &found) != HSAD_OK) abort();
      if (hsad_codeobj_kernel_find(co, ki->symbol, &found) != HSAD_OK) abort();
      exercise_kernel(kern);
    }
    hsad_codeobj_destroy(co);
  }
  hsad_codeobj_container_destroy(c);
  return 0;
}
