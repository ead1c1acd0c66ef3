/* descriptor.c - decode the 64-byte kernel descriptor and cross-check it against the note.
 * Source: AMDGPUUsage "Kernel Descriptor" tables (compute_pgm_rsrc1/2/3 for GFX6-GFX12,
 * kernel_code_properties) and LLVM's llvm/Support/AMDHSAKernelDescriptor.h bit positions.
 * Granules (GRANULATED_WORKITEM_VGPR_COUNT): GFX6-9 (not 90A) 4 VGPRs; GFX90A/GFX940 8 (the
 * unified VGPR+AGPR file); GFX10+ wave64 4, wave32 8. GRANULATED_WAVEFRONT_SGPR_COUNT: GFX6-8
 * 8 SGPRs, encoded (n/8)-1; GFX9 16 SGPRs, encoded 2*((n/16)-1); GFX10+ reserved (0). */
#include "codeobj/codeobj_internal.h"

#include <stdlib.h>
#include <string.h>

static uint32_t co_bits(uint32_t v, unsigned shift, unsigned width) {
  return (v >> shift) & ((1u << width) - 1u);
}

uint32_t co_gfx_major(const char *p) {
  if (strncmp(p, "gfx", 3)) return 0;
  size_t tail = strlen(p + 3);
  /* gfx + major + minor(1 char) + stepping(1 char): gfx90a -> 9, gfx1030 -> 10, gfx1100 -> 11 */
  if (tail < 3) return 0;
  char buf[8] = {0};
  size_t mlen = tail - 2;
  if (mlen >= sizeof buf) return 0;
  memcpy(buf, p + 3, mlen);
  return (uint32_t)strtoul(buf, NULL, 10);
}

bool co_is_unified_agpr(const char *p) {
  return !strcmp(p, "gfx90a") || !strcmp(p, "gfx940") || !strcmp(p, "gfx941") ||
         !strcmp(p, "gfx942") || !strcmp(p, "gfx950");
}

void co_kd_decode(const hsad_kernel_descriptor_t *kd, const hsad_target_id_t *target,
                  hsad_kd_fields_t *f) {
  memset(f, 0, sizeof *f);
  uint32_t r1 = kd->compute_pgm_rsrc1, r2 = kd->compute_pgm_rsrc2, r3 = kd->compute_pgm_rsrc3;
  uint32_t major = co_gfx_major(target->processor);
  bool unified = co_is_unified_agpr(target->processor);
  uint16_t props = kd->kernel_code_properties;
  f->wavefront_size32 = co_bits(props, 10, 1);

  f->granulated_vgpr_count = co_bits(r1, 0, 6);
  f->granulated_sgpr_count = co_bits(r1, 6, 4);
  uint32_t vgran = unified ? 8 : (major >= 10 && f->wavefront_size32) ? 8 : 4;
  f->vgpr_alloc = (f->granulated_vgpr_count + 1) * vgran;
  if (major >= 10) f->sgpr_alloc = 0;
  else if (major == 9) f->sgpr_alloc = (f->granulated_sgpr_count / 2 + 1) * 16;
  else f->sgpr_alloc = (f->granulated_sgpr_count + 1) * 8;
  f->priority = co_bits(r1, 10, 2);
  f->float_round_mode_32 = co_bits(r1, 12, 2);
  f->float_round_mode_16_64 = co_bits(r1, 14, 2);
  f->float_denorm_mode_32 = co_bits(r1, 16, 2);
  f->float_denorm_mode_16_64 = co_bits(r1, 18, 2);
  f->priv = co_bits(r1, 20, 1);
  f->dx10_clamp = co_bits(r1, 21, 1);
  f->debug_mode = co_bits(r1, 22, 1);
  f->ieee_mode = co_bits(r1, 23, 1);
  f->bulky = co_bits(r1, 24, 1);
  f->cdbg_user = co_bits(r1, 25, 1);
  f->fp16_ovfl = co_bits(r1, 26, 1);
  f->wgp_mode = co_bits(r1, 29, 1);
  f->mem_ordered = co_bits(r1, 30, 1);
  f->fwd_progress = co_bits(r1, 31, 1);

  f->enable_private_segment = co_bits(r2, 0, 1);
  f->user_sgpr_count = co_bits(r2, 1, 5);
  f->enable_trap_handler = co_bits(r2, 6, 1);
  f->workgroup_id_x = co_bits(r2, 7, 1);
  f->workgroup_id_y = co_bits(r2, 8, 1);
  f->workgroup_id_z = co_bits(r2, 9, 1);
  f->workgroup_info = co_bits(r2, 10, 1);
  f->vgpr_workitem_id = co_bits(r2, 11, 2);
  f->granulated_lds_size = co_bits(r2, 15, 9);
  f->exceptions = co_bits(r2, 24, 7);

  if (unified) {
    f->accum_offset = (co_bits(r3, 0, 6) + 1) * 4;
    f->tg_split = co_bits(r3, 16, 1);
  } else if (major >= 10) {
    f->shared_vgpr_count = co_bits(r3, 0, 4);
    f->inst_pref_size = co_bits(r3, 4, 6);
    f->trap_on_start = co_bits(r3, 10, 1);
    f->trap_on_end = co_bits(r3, 11, 1);
    f->image_op = co_bits(r3, 31, 1);
  }

  f->private_segment_buffer = co_bits(props, 0, 1);
  f->dispatch_ptr = co_bits(props, 1, 1);
  f->queue_ptr = co_bits(props, 2, 1);
  f->kernarg_segment_ptr = co_bits(props, 3, 1);
  f->dispatch_id = co_bits(props, 4, 1);
  f->flat_scratch_init = co_bits(props, 5, 1);
  f->private_segment_size = co_bits(props, 6, 1);
  f->uses_dynamic_stack = co_bits(props, 11, 1);
  f->kernarg_preload_length = co_bits(kd->kernarg_preload, 0, 7);
  f->kernarg_preload_offset = co_bits(kd->kernarg_preload, 7, 9);
}

uint32_t co_kd_cross_check(const hsad_kernel_info_t *ki, const hsad_target_id_t *target) {
  const hsad_kernel_descriptor_t *kd = &ki->descriptor;
  const hsad_kd_fields_t *f = &ki->kd;
  uint32_t m = 0;
  uint32_t major = co_gfx_major(target->processor);
  if (kd->group_segment_fixed_size != ki->group_segment_fixed_size)
    m |= HSAD_KD_MISMATCH_GROUP_SEGMENT;
  if (kd->private_segment_fixed_size != ki->private_segment_fixed_size)
    m |= HSAD_KD_MISMATCH_PRIVATE_SEGMENT;
  if (kd->kernarg_size != 0 && kd->kernarg_size != ki->kernarg_segment_size)
    m |= HSAD_KD_MISMATCH_KERNARG_SIZE;
  uint32_t vgprs = ki->vgpr_count;
  if (co_is_unified_agpr(target->processor) && ki->agpr_count)
    vgprs = ((ki->vgpr_count + 3u) & ~3u) + ki->agpr_count;
  else if (ki->agpr_count > vgprs)
    vgprs = ki->agpr_count; /* gfx908: separate AGPR file, allocated like VGPRs */
  if (vgprs > f->vgpr_alloc) m |= HSAD_KD_MISMATCH_VGPR;
  if (major && major < 10 && ki->sgpr_count > f->sgpr_alloc) m |= HSAD_KD_MISMATCH_SGPR;
  if (major >= 10 ? (f->wavefront_size32 != (ki->wavefront_size == 32))
                  : (ki->wavefront_size != 64 || f->wavefront_size32))
    m |= HSAD_KD_MISMATCH_WAVE_SIZE;
  if (f->uses_dynamic_stack && (ki->present & HSAD_KI_HAS_USES_DYNAMIC_STACK) &&
      !ki->uses_dynamic_stack)
    m |= HSAD_KD_MISMATCH_DYNAMIC_STACK;
  return m;
}
