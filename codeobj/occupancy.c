/* occupancy.c - per-processor register/LDS/wave-slot tables, occupancy and register pressure.
 *
 * Every number below comes from LLVM's AMDGPU backend (llvm/lib/Target/AMDGPU/Utils/
 * AMDGPUBaseInfo.cpp, namespace IsaInfo, LLVM 17-19), which is what the compiler itself uses to
 * decide occupancy, cross-checked with the AMD ISA manuals:
 *   getMaxWavesPerEU:     10 (GFX9 except 90A-class), 8 (GFX90A, GFX940/941/942),
 *                         20 (GFX10.1), 16 (GFX10.3, GFX11)
 *   getEUsPerCU:          4 SIMDs per CU (GFX9; GFX10+ in WGP mode), 2 (GFX10+ in CU mode)
 *   getTotalNumVGPRs:     256 (GFX9), 512 (GFX90A-class unified VGPR+AGPR file),
 *                         GFX10+: 512 wave64 / 1024 wave32, GFX11 1.5x-VGPR parts
 *                         (gfx1100, gfx1101, gfx1151): 768 / 1536
 *   getVGPRAllocGranule:  4 (GFX9), 8 (GFX90A-class), GFX10.1 4/8, GFX10.3 8/16,
 *                         GFX11 1.5x parts 12/24 (wave64 / wave32)
 *   getTotalNumSGPRs:     800 (GFX8+); getOccupancyWithNumSGPRs (GFX8/9): <=80 SGPRs 10 waves,
 *                         <=88 9, <=100 8, else 7; GFX10+: SGPRs never limit
 *   getLocalMemorySize:   65536 bytes per CU (doubled per WGP in WGP mode on GFX10+)
 *   getMaxWorkGroupsPerCU: min(waves per CU / waves per workgroup, 16 barriers; 32 in WGP mode);
 *                         single-wave workgroups use no barrier: waves per CU
 *   LDS granule:          AMDGPUUsage compute_pgm_rsrc2 GRANULATED_LDS_SIZE, GFX7-GFX11:
 *                         128 dwords = 512 bytes
 * ISA manuals agreeing: "AMD Instinct MI200 (CDNA2) ISA" s.2 (4 SIMDs per CU, 512 VGPRs incl.
 * AGPRs, 8 waves per SIMD), "Vega 7nm (GFX906) ISA" s.2 (10 waves per SIMD, 256 VGPRs, 800
 * SGPRs, 64 KiB LDS), "RDNA2 ISA" s.2 (WGP of 2 CUs, 128 KiB LDS per WGP, 16 waves per SIMD32).
 */
#include "codeobj/codeobj_internal.h"

#include <stdio.h>
#include <string.h>

static const hsad_gfx_limits_t co_limits[] = {
    /* processor, simd/cu, waves/simd, vgprs w64, gran w64, gran w32, vgprs w32, max vgprs/wave,
       sgprs/simd, sgpr granule, lds/cu, lds granule, wg/cu, unified_agpr */
    {"gfx906", 4, 10, 256, 4, 0, 0, 256, 800, 16, 65536, 512, 16, false},
    {"gfx908", 4, 10, 256, 4, 0, 0, 256, 800, 16, 65536, 512, 16, false},
    {"gfx90a", 4, 8, 512, 8, 0, 0, 512, 800, 16, 65536, 512, 16, true},
    {"gfx940", 4, 8, 512, 8, 0, 0, 512, 800, 16, 65536, 512, 16, true},
    {"gfx941", 4, 8, 512, 8, 0, 0, 512, 800, 16, 65536, 512, 16, true},
    {"gfx942", 4, 8, 512, 8, 0, 0, 512, 800, 16, 65536, 512, 16, true},
    {"gfx1030", 2, 16, 512, 8, 16, 1024, 256, 0, 0, 65536, 512, 16, false},
    {"gfx1100", 2, 16, 768, 12, 24, 1536, 256, 0, 0, 65536, 512, 16, false},
};

const hsad_gfx_limits_t *hsad_gfx_limits_find(const char *processor) {
  if (!processor) return NULL;
  hsad_target_id_t id;
  if (hsad_target_id_parse(processor, &id) != HSAD_OK) {
    hsad_clear_error();
    return NULL;
  }
  for (size_t i = 0; i < sizeof co_limits / sizeof co_limits[0]; i++)
    if (!strcmp(co_limits[i].processor, id.processor)) return &co_limits[i];
  return NULL;
}

const char *hsad_occ_limiter_name(hsad_occ_limiter_t l) {
  switch (l) {
  case HSAD_OCC_WAVE_SLOTS: return "waves";
  case HSAD_OCC_VGPR: return "vgpr";
  case HSAD_OCC_SGPR: return "sgpr";
  case HSAD_OCC_LDS: return "lds";
  case HSAD_OCC_WORKGROUPS: return "workgroups";
  }
  return "?";
}

static uint32_t co_align(uint32_t v, uint32_t a) { return a ? (v + a - 1) / a * a : v; }
static uint32_t co_min(uint32_t a, uint32_t b) { return a < b ? a : b; }

/* LLVM getOccupancyWithNumSGPRs for GFX8/GFX9. */
static uint32_t co_sgpr_waves(uint32_t sgprs) {
  if (sgprs <= 80) return 10;
  if (sgprs <= 88) return 9;
  if (sgprs <= 100) return 8;
  return 7;
}

/* VGPRs per work-item the occupancy model counts: arch VGPRs, plus AGPRs after accum_offset
 * (VGPRs rounded to 4) on the unified gfx90a/gfx940 file; the larger of the two separate,
 * same-size files on gfx908. */
static uint32_t co_regs(const hsad_kernel_info_t *ki, const hsad_gfx_limits_t *lim) {
  if (lim->unified_agpr && ki->agpr_count) return co_align(ki->vgpr_count, 4) + ki->agpr_count;
  return ki->agpr_count > ki->vgpr_count ? ki->agpr_count : ki->vgpr_count;
}

/* The occupancy model with `regs` VGPRs per work-item (co_regs, or a what-if count). */
static hsad_status_t co_occupancy(const hsad_kernel_t *kernel, const hsad_gfx_limits_t *lim,
                                  uint32_t workgroup_size, uint32_t dynamic_lds, uint32_t regs,
                                  hsad_occupancy_t *out);

hsad_status_t hsad_kernel_occupancy(const hsad_kernel_t *kernel, const hsad_gfx_limits_t *lim,
                                    uint32_t workgroup_size, uint32_t dynamic_lds,
                                    hsad_occupancy_t *out) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_kernel_occupancy", {kernel, "kernel"},
                                   {out, "out_occupancy"});
  if (ns) return ns;
  if (!lim) lim = hsad_gfx_limits_find(kernel->owner->info.target_id.processor);
  return co_occupancy(kernel, lim, workgroup_size, dynamic_lds,
                      lim ? co_regs(&kernel->info, lim) : 0, out);
}

static hsad_status_t co_occupancy(const hsad_kernel_t *kernel, const hsad_gfx_limits_t *lim,
                                  uint32_t workgroup_size, uint32_t dynamic_lds, uint32_t regs,
                                  hsad_occupancy_t *out) {
  const hsad_kernel_info_t *ki = &kernel->info;
  const hsad_codeobj_info_t *ci = &kernel->owner->info;
  if (!lim)
    return hsad_fail(HSAD_ERR_UNSUPPORTED,
                     "%s: kernel '%s': no occupancy table for %s (known: gfx906, gfx908, gfx90a, "
                     "gfx940, gfx941, gfx942, gfx1030, gfx1100)",
                     ci->name, ki->name, ci->target_id.processor);
  if (workgroup_size == 0 || workgroup_size > ki->max_flat_workgroup_size)
    return hsad_fail(HSAD_ERR_WORKGROUP,
                     "%s: kernel '%s': workgroup size %u outside 1..%u (.max_flat_workgroup_size)",
                     ci->name, ki->name, workgroup_size, ki->max_flat_workgroup_size);
  bool wave32 = ki->wavefront_size == 32;
  bool wgp = lim->vgprs_per_simd_w32 && (ki->workgroup_processor_mode || ki->kd.wgp_mode);
  uint32_t simds = lim->simd_per_cu * (wgp ? 2 : 1);
  uint32_t lds_cu = lim->lds_per_cu * (wgp ? 2 : 1);
  uint32_t barriers = lim->max_workgroups_per_cu * (wgp ? 2 : 1);
  uint32_t max_waves = lim->max_waves_per_simd;
  uint32_t waves_per_wg = (workgroup_size + ki->wavefront_size - 1) / ki->wavefront_size;

  /* VGPRs per work-item as allocated */
  uint32_t total = wave32 && lim->vgprs_per_simd_w32 ? lim->vgprs_per_simd_w32
                                                     : lim->vgprs_per_simd;
  uint32_t gran = wave32 && lim->vgpr_granule_w32 ? lim->vgpr_granule_w32 : lim->vgpr_granule;
  uint32_t alloc = co_align(regs ? regs : 1, gran);
  uint32_t w_vgpr = co_min(total / alloc, max_waves);
  if (w_vgpr == 0) w_vgpr = 1;
  uint32_t w_sgpr = lim->sgprs_per_simd ? co_min(co_sgpr_waves(ki->sgpr_count), max_waves)
                                        : max_waves;

  uint32_t lds = ki->group_segment_fixed_size + dynamic_lds;
  if (dynamic_lds > UINT32_MAX - ki->group_segment_fixed_size || lds > lds_cu)
    return hsad_fail(HSAD_ERR_LDS_LIMIT,
                     "%s: kernel '%s': %u + %u bytes of LDS exceed the %u bytes of a %s",
                     ci->name, ki->name, ki->group_segment_fixed_size, dynamic_lds, lds_cu,
                     wgp ? "WGP" : "CU");
  uint32_t lds_alloc = co_align(lds, lim->lds_granule);

  uint32_t wg_waves = max_waves * simds / waves_per_wg;
  uint32_t wg_vgpr = w_vgpr * simds / waves_per_wg;
  uint32_t wg_sgpr = w_sgpr * simds / waves_per_wg;
  uint32_t wg_lds = lds_alloc ? lds_cu / lds_alloc : UINT32_MAX;
  uint32_t wg_slots = waves_per_wg == 1 ? max_waves * simds : co_min(max_waves * simds /
                                                                     waves_per_wg, barriers);
  /* A workgroup too large for the per-SIMD register budget still runs one at a time. */
  if (wg_vgpr == 0) wg_vgpr = 1;
  if (wg_sgpr == 0) wg_sgpr = 1;
  if (wg_waves == 0) wg_waves = 1;
  uint32_t wgs = wg_waves;
  hsad_occ_limiter_t limiter = HSAD_OCC_WAVE_SLOTS;
  struct {
    uint32_t v;
    hsad_occ_limiter_t l;
  } c[] = {{wg_vgpr, HSAD_OCC_VGPR},
           {wg_sgpr, HSAD_OCC_SGPR},
           {wg_lds, HSAD_OCC_LDS},
           {wg_slots, HSAD_OCC_WORKGROUPS}};
  for (size_t i = 0; i < sizeof c / sizeof c[0]; i++)
    if (c[i].v < wgs) {
      wgs = c[i].v;
      limiter = c[i].l;
    }
  memset(out, 0, sizeof *out);
  out->workgroups_per_cu = wgs;
  out->waves_per_workgroup = waves_per_wg;
  out->waves_per_cu = wgs * waves_per_wg;
  out->waves_per_simd = co_min((out->waves_per_cu + simds - 1) / simds, max_waves);
  out->limiter = limiter;
  out->wgp_mode = wgp;
  out->vgprs_allocated = alloc;
  out->lds_per_workgroup = lds_alloc;
  return HSAD_OK;
}

hsad_status_t hsad_kernel_pressure(const hsad_kernel_t *kernel, const hsad_occupancy_t *occ,
                                   uint32_t floor, hsad_pressure_report_t *out) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_kernel_pressure", {kernel, "kernel"},
                                   {out, "out_report"});
  if (ns) return ns;
  const hsad_kernel_info_t *ki = &kernel->info;
  memset(out, 0, sizeof *out);
  out->vgpr_spill_count = ki->vgpr_spill_count;
  out->sgpr_spill_count = ki->sgpr_spill_count;
  out->scratch_per_work_item = ki->private_segment_fixed_size;
  out->scratch_per_wave = (uint64_t)ki->private_segment_fixed_size * ki->wavefront_size;
  out->spills = ki->vgpr_spill_count || ki->sgpr_spill_count;
  out->low_occupancy = occ && occ->waves_per_simd < floor;
  out->dynamic_stack = ki->uses_dynamic_stack;
  out->flagged = out->spills || out->low_occupancy;
  return HSAD_OK;
}

hsad_status_t hsad_kernel_pressure_at(const hsad_kernel_t *kernel, const hsad_gfx_limits_t *lim,
                                      uint32_t workgroup_size, uint32_t dynamic_lds,
                                      hsad_pressure_row_t *out) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_kernel_pressure_at", {kernel, "kernel"},
                                   {out, "out_row"});
  if (ns) return ns;
  const hsad_kernel_info_t *ki = &kernel->info;
  if (!lim) lim = hsad_gfx_limits_find(kernel->owner->info.target_id.processor);
  memset(out, 0, sizeof *out);
  uint32_t regs = lim ? co_regs(ki, lim) : 0;
  hsad_status_t st = co_occupancy(kernel, lim, workgroup_size, dynamic_lds, regs,
                                  &out->occupancy);
  if (st) return st;
  out->workgroup_size = workgroup_size;
  out->vgpr_count = ki->vgpr_count;
  out->agpr_count = ki->agpr_count;
  out->sgpr_count = ki->sgpr_count;
  out->vgpr_spill_count = ki->vgpr_spill_count;
  out->sgpr_spill_count = ki->sgpr_spill_count;
  out->scratch_per_work_item = ki->private_segment_fixed_size;
  out->scratch_per_wave = (uint64_t)ki->private_segment_fixed_size * ki->wavefront_size;
  out->dynamic_stack = ki->uses_dynamic_stack;
  out->lds_per_workgroup = out->occupancy.lds_per_workgroup;
  out->regs = regs;
  /* the cliff: whole granules below the allocation, nearest first */
  uint32_t gran = ki->wavefront_size == 32 && lim->vgpr_granule_w32 ? lim->vgpr_granule_w32
                                                                     : lim->vgpr_granule;
  for (uint32_t r = out->occupancy.vgprs_allocated; r > gran;) {
    r -= gran;
    hsad_occupancy_t o;
    if (co_occupancy(kernel, lim, workgroup_size, dynamic_lds, r, &o) != HSAD_OK) break;
    if (o.waves_per_simd > out->occupancy.waves_per_simd) {
      out->cliff_vgprs_fewer = regs - r;
      out->cliff_waves_per_simd = o.waves_per_simd;
      break;
    }
  }
  /* the block-size cost */
  out->work_items_per_cu = out->occupancy.workgroups_per_cu * workgroup_size;
  uint32_t best = 0, best_size = 0;
  uint32_t maxwg = ki->max_flat_workgroup_size;
  bool reqd = ki->present & HSAD_KI_HAS_REQD_WORKGROUP_SIZE;
  uint32_t reqd_size = ki->reqd_workgroup_size[0] * (ki->reqd_workgroup_size[1] ?
                       ki->reqd_workgroup_size[1] : 1) * (ki->reqd_workgroup_size[2] ?
                       ki->reqd_workgroup_size[2] : 1);
  for (uint32_t w = ki->wavefront_size;; w += ki->wavefront_size) {
    uint32_t size = reqd ? reqd_size : w < maxwg ? w : maxwg;
    hsad_occupancy_t o;
    if (co_occupancy(kernel, lim, size, dynamic_lds, regs, &o) == HSAD_OK &&
        o.workgroups_per_cu * size > best) {
      best = o.workgroups_per_cu * size;
      best_size = size;
    }
    if (reqd || size >= maxwg) break;
  }
  uint32_t here = out->work_items_per_cu;
  if (here > best || (here == best && workgroup_size < best_size)) {
    best = here;
    best_size = workgroup_size;
  }
  hsad_clear_error();
  out->best_workgroup_size = best_size;
  out->best_work_items_per_cu = best;
  out->block_cost_percent =
      best ? (uint32_t)(100ull * (best - out->work_items_per_cu) / best) : 0;
  return HSAD_OK;
}

const char *hsad_variant_reason_name(hsad_variant_reason_t reason) {
  switch (reason) {
  case HSAD_VARIANT_NO_SPILL: return "no spills, most waves";
  case HSAD_VARIANT_LEAST_SPILL: return "least spilling";
  case HSAD_VARIANT_MEASURED: return "measured fastest";
  }
  return "?";
}

hsad_status_t hsad_kernel_variant_select(const hsad_kernel_t *const *kernels, uint32_t count,
                                         const hsad_gfx_limits_t *limits,
                                         uint32_t workgroup_size, uint32_t dynamic_lds,
                                         hsad_variant_choice_t *out) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_kernel_variant_select", {kernels, "kernels"},
                                   {out, "out_choice"});
  if (ns) return ns;
  if (count == 0 || count > 16)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_kernel_variant_select: %u variants (1..16)",
                     count);
  for (uint32_t i = 0; i < count; i++)
    if (!kernels[i])
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_kernel_variant_select: variant %u is "
                       "NULL", i);
  hsad_variant_choice_t c[16];
  uint32_t idx[16], n = 0;
  char allowed[200] = "";
  size_t used = 0;
  for (uint32_t i = 0; i < count && n < 16; i++) {
    const hsad_kernel_info_t *ki = &kernels[i]->info;
    const hsad_gfx_limits_t *lim = limits ? limits
                                          : hsad_gfx_limits_find(
                                                kernels[i]->owner->info.target_id.processor);
    uint32_t reqd = ki->reqd_workgroup_size[0] * ki->reqd_workgroup_size[1] *
                    ki->reqd_workgroup_size[2];
    int w = snprintf(allowed + used, sizeof allowed - used, "%s%u", i ? ", " : "",
                     (ki->present & HSAD_KI_HAS_REQD_WORKGROUP_SIZE) ? reqd
                                                                     : ki->max_flat_workgroup_size);
    if (w > 0 && used + (size_t)w < sizeof allowed) used += (size_t)w;
    if (workgroup_size == 0 || workgroup_size > ki->max_flat_workgroup_size ||
        ((ki->present & HSAD_KI_HAS_REQD_WORKGROUP_SIZE) && reqd != workgroup_size))
      continue;
    hsad_occupancy_t o;
    hsad_status_t st = co_occupancy(kernels[i], lim, workgroup_size, dynamic_lds,
                                    lim ? co_regs(ki, lim) : 0, &o);
    if (st) return st;
    c[n] = (hsad_variant_choice_t){.index = i, .waves_per_simd = o.waves_per_simd,
                                   .spills = ki->vgpr_spill_count + ki->sgpr_spill_count,
                                   .scratch_per_work_item = ki->private_segment_fixed_size,
                                   .regs = co_regs(ki, lim)};
    idx[n++] = i;
  }
  if (n == 0)
    return hsad_fail(HSAD_ERR_WORKGROUP,
                     "%s: kernel '%s': no variant allows workgroup size %u (variants allow up "
                     "to %s)",
                     kernels[0]->owner->info.name, kernels[0]->info.name, workgroup_size,
                     allowed);
  uint32_t least_scratch = UINT32_MAX;
  for (uint32_t j = 0; j < n; j++)
    if (!c[j].spills && c[j].scratch_per_work_item < least_scratch)
      least_scratch = c[j].scratch_per_work_item;
  int best = -1;
  for (uint32_t j = 0; j < n; j++) {
    const hsad_variant_choice_t *v = &c[j];
    if (least_scratch != UINT32_MAX) { /* some variant does not spill */
      if (v->spills || v->scratch_per_work_item > least_scratch) continue;
      if (best < 0 || v->waves_per_simd > c[best].waves_per_simd ||
          (v->waves_per_simd == c[best].waves_per_simd && v->regs < c[best].regs))
        best = (int)j;
    } else if (best < 0 || v->spills < c[best].spills ||
               (v->spills == c[best].spills &&
                (v->waves_per_simd > c[best].waves_per_simd ||
                 (v->waves_per_simd == c[best].waves_per_simd && v->regs < c[best].regs)))) {
      best = (int)j;
    }
  }
  *out = c[best];
  out->index = idx[best];
  out->reason = least_scratch != UINT32_MAX ? HSAD_VARIANT_NO_SPILL : HSAD_VARIANT_LEAST_SPILL;
  out->candidates = n;
  hsad_clear_error();
  return HSAD_OK;
}
