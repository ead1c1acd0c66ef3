/* hsad_codeobj_occupancy.h - occupancy and register pressure: per-processor limits, waves per SIMD
 * and what limits them.
 *
 * Part of codeobj/'s public interface: include codeobj/hsad_codeobj.h (the umbrella,
 * with the objects, ownership, thread-safety and error rules that hold for every part)
 * or this header alone. */
#ifndef HSAD_CODEOBJ_OCCUPANCY_H
#define HSAD_CODEOBJ_OCCUPANCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hsad_status.h"
#include "codeobj/hsad_codeobj_load.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* Occupancy and register pressure                                                            */

/* Per-processor limits (codeobj/occupancy.c cites the source of every value). */
typedef struct hsad_gfx_limits {
  const char *processor;        /* "gfx90a" */
  uint32_t simd_per_cu;         /* SIMDs per CU (per WGP-half on gfx10+: CU mode) */
  uint32_t max_waves_per_simd;  /* wave slots per SIMD */
  uint32_t vgprs_per_simd;      /* VGPRs per lane available to one SIMD (wave64 units; on
                                   gfx90a/gfx940 the unified VGPR+AGPR file) */
  uint32_t vgpr_granule;        /* allocation granule (registers), wave64 */
  uint32_t vgpr_granule_w32;    /* allocation granule for wave32 (gfx10+), else 0 */
  uint32_t vgprs_per_simd_w32;  /* VGPRs per lane for wave32 (gfx10+), else 0 */
  uint32_t max_vgprs_per_wave;  /* addressable VGPRs per wave (incl. AGPRs when unified) */
  uint32_t sgprs_per_simd;      /* 0 = SGPRs do not limit occupancy (gfx10+) */
  uint32_t sgpr_granule;
  uint32_t lds_per_cu;          /* bytes of LDS a workgroup's CU (or WGP) can hold */
  uint32_t lds_granule;         /* allocation granule, bytes */
  uint32_t max_workgroups_per_cu; /* workgroup slots per CU */
  bool unified_agpr;            /* gfx90a/gfx940: AGPRs share the VGPR file */
} hsad_gfx_limits_t;

/* Table entry for a processor ("gfx90a", "gfx90a:xnack-" or a full target). NULL if unknown. */
const hsad_gfx_limits_t *hsad_gfx_limits_find(const char *processor);

typedef enum hsad_occ_limiter {
  HSAD_OCC_WAVE_SLOTS = 0, HSAD_OCC_VGPR, HSAD_OCC_SGPR, HSAD_OCC_LDS, HSAD_OCC_WORKGROUPS,
} hsad_occ_limiter_t;
const char *hsad_occ_limiter_name(hsad_occ_limiter_t l); /* "waves", "vgpr", "sgpr", ... */

typedef struct hsad_occupancy {
  uint32_t waves_per_simd;      /* resident waves of this kernel per SIMD */
  uint32_t waves_per_cu;        /* per CU, or per WGP (2 CUs) when wgp_mode */
  uint32_t workgroups_per_cu;   /* per CU, or per WGP (2 CUs) when wgp_mode */
  bool wgp_mode;                /* gfx10+ kernel in WGP mode: a workgroup's waves may use both
                                   CUs of a work-group processor (AMDGPUUsage, WGP_MODE) */
  uint32_t waves_per_workgroup;
  hsad_occ_limiter_t limiter;   /* the resource that bounds it */
  uint32_t vgprs_allocated;     /* per work-item after granule rounding */
  uint32_t lds_per_workgroup;   /* bytes after granule rounding */
} hsad_occupancy_t;

/* Occupancy of `kernel` at `workgroup_size` work-items (flat) with `dynamic_lds` extra LDS
 * bytes, on `limits` (NULL: the table of the code object's processor). Model (LLVM's
 * AMDGPUBaseInfo IsaInfo, which the compiler uses): waves per workgroup = ceil(size / wave
 * size); per SIMD the VGPR bound is total / align(VGPRs (+ AGPRs, after accum_offset, on the
 * unified gfx90a/gfx940 file), granule), the SGPR bound LLVM's GFX8/9 table; per CU the
 * workgroup bound is the minimum of wave slots, those register bounds times SIMDs, LDS per CU /
 * align(LDS, 512), and 16 barriers (single-wave workgroups need none). On gfx10+ a kernel in WGP
 * mode (.workgroup_processor_mode or the descriptor's WGP_MODE) gets a WGP: 4 SIMDs, twice the
 * LDS and 32 barriers. The limiter is the bound that is strictly below the wave slots (the
 * first of vgpr, sgpr, lds, workgroups on ties). waves_per_simd = ceil(waves per CU / SIMDs).
 * Errors: HSAD_ERR_UNSUPPORTED (no table for the processor), HSAD_ERR_WORKGROUP (size 0 or
 * above .max_flat_workgroup_size), HSAD_ERR_LDS_LIMIT (LDS above lds_per_cu),
 * HSAD_ERR_INVALID_ARGUMENT. */
hsad_status_t hsad_kernel_occupancy(const hsad_kernel_t *kernel, const hsad_gfx_limits_t *limits,
                                    uint32_t workgroup_size, uint32_t dynamic_lds,
                                    hsad_occupancy_t *out_occupancy);

/* Register-pressure flags of one kernel. */
typedef struct hsad_pressure_report {
  uint32_t vgpr_spill_count, sgpr_spill_count;
  uint32_t scratch_per_work_item;  /* bytes: .private_segment_fixed_size */
  uint64_t scratch_per_wave;       /* bytes: per work-item x wavefront_size */
  bool spills;                     /* any spill */
  bool low_occupancy;              /* waves_per_simd < floor */
  bool dynamic_stack;              /* .uses_dynamic_stack */
  bool flagged;                    /* spills || low_occupancy */
} hsad_pressure_report_t;

/* Fills the report; `occupancy` may be NULL (low_occupancy false then). floor: waves per SIMD
 * below which a kernel is flagged (hsad inspect's default: 2). Never fails for valid pointers:
 * HSAD_ERR_INVALID_ARGUMENT for NULL kernel/out. */
hsad_status_t hsad_kernel_pressure(const hsad_kernel_t *kernel, const hsad_occupancy_t *occupancy,
                                   uint32_t floor, hsad_pressure_report_t *out_report);

/* One line of the register-pressure report (issue 9; hsad inspect --pressure): one kernel at
 * one workgroup size on one processor. Every figure follows hsad_kernel_occupancy's model. */
typedef struct hsad_pressure_row {
  uint32_t workgroup_size;         /* work-items (flat) */
  uint32_t vgpr_count, agpr_count, sgpr_count;  /* .vgpr_count, .agpr_count, .sgpr_count */
  uint32_t vgpr_spill_count, sgpr_spill_count;  /* .vgpr_spill_count, .sgpr_spill_count */
  uint32_t scratch_per_work_item;  /* bytes: .private_segment_fixed_size */
  uint64_t scratch_per_wave;       /* bytes: per work-item x .wavefront_size */
  bool dynamic_stack;              /* .uses_dynamic_stack: the scratch figures are a minimum */
  uint32_t lds_per_workgroup;      /* bytes allocated per workgroup: fixed + dynamic, rounded
                                      to the LDS granule */
  hsad_occupancy_t occupancy;      /* waves per SIMD, workgroups per CU (WGP), the limiter */
  uint32_t regs;                   /* VGPRs per work-item the model counts: arch VGPRs, plus
                                      AGPRs after accum_offset on gfx90a/gfx940's unified file
                                      (the larger of the two files on gfx908) */
  /* The next cliff: with cliff_vgprs_fewer fewer of `regs` (the largest count that is a whole
   * number of allocation granules and gives more waves per SIMD at this workgroup size), the
   * kernel runs cliff_waves_per_simd waves per SIMD. Both 0 when no register count would gain
   * a level (another limit binds, or the maximum is reached). */
  uint32_t cliff_vgprs_fewer;
  uint32_t cliff_waves_per_simd;
  /* The block-size cost: resident work-items per CU (WGP) here, against the best workgroup
   * size (every multiple of the wave size up to .max_flat_workgroup_size, and that maximum;
   * only .reqd_workgroup_size when the kernel has one), the smallest on ties.
   * block_cost_percent = 100 * (best - here) / best, rounded down; 0 when this size is best. */
  uint32_t work_items_per_cu;
  uint32_t best_workgroup_size;
  uint32_t best_work_items_per_cu;
  uint32_t block_cost_percent;
} hsad_pressure_row_t;

/* Fills the report line of `kernel` at `workgroup_size` work-items with `dynamic_lds` extra LDS
 * bytes, on `limits` (NULL: the code object's processor; tables for gfx906, gfx908, gfx90a,
 * gfx940/941/942, gfx1030, gfx1100). Pure computation, no allocation; thread-safe.
 * Errors: as hsad_kernel_occupancy (HSAD_ERR_UNSUPPORTED without a table, HSAD_ERR_WORKGROUP,
 * HSAD_ERR_LDS_LIMIT), HSAD_ERR_INVALID_ARGUMENT (NULL kernel/out). */
hsad_status_t hsad_kernel_pressure_at(const hsad_kernel_t *kernel, const hsad_gfx_limits_t *limits,
                                      uint32_t workgroup_size, uint32_t dynamic_lds,
                                      hsad_pressure_row_t *out_row);

#ifdef __cplusplus
}
#endif
#endif /* HSAD_CODEOBJ_OCCUPANCY_H */
