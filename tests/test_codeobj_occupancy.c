/* test_codeobj_occupancy.c - occupancy per limiter with hand-computed expectations from the
 * tables in codeobj/occupancy.c (LLVM AMDGPUBaseInfo values), and the register-pressure report. */
#include "test_codeobj_util.h"

static hsad_occupancy_t occ(const hsad_kernel_t *k, uint32_t wg, uint32_t dyn) {
  hsad_occupancy_t o;
  hsad_status_t st = hsad_kernel_occupancy(k, NULL, wg, dyn, &o);
  cr_assert_eq(st, HSAD_OK, "%s", hsad_last_error());
  return o;
}

Test(codeobj_occupancy, tables) {
  const hsad_gfx_limits_t *l = hsad_gfx_limits_find("gfx90a:xnack-");
  cr_assert(l);
  cr_assert_str_eq(l->processor, "gfx90a");
  cr_assert_eq(l->max_waves_per_simd, 8);
  cr_assert_eq(l->vgprs_per_simd, 512);
  cr_assert_eq(l->vgpr_granule, 8);
  cr_assert(l->unified_agpr);
  l = hsad_gfx_limits_find("amdgcn-amd-amdhsa--gfx906");
  cr_assert_eq(l->max_waves_per_simd, 10);
  cr_assert_eq(l->vgprs_per_simd, 256);
  cr_assert_eq(l->sgprs_per_simd, 800);
  l = hsad_gfx_limits_find("gfx1030");
  cr_assert_eq(l->max_waves_per_simd, 16);
  cr_assert_eq(l->vgpr_granule_w32, 16);
  cr_assert_eq(l->vgprs_per_simd_w32, 1024);
  l = hsad_gfx_limits_find("gfx1100");
  cr_assert_eq(l->vgpr_granule_w32, 24);
  cr_assert_eq(l->vgprs_per_simd_w32, 1536);
  for (const char *const *p = (const char *const[]){"gfx908", "gfx940", "gfx941", "gfx942", NULL};
       *p; p++)
    cr_assert(hsad_gfx_limits_find(*p), "%s", *p);
  cr_assert_null(hsad_gfx_limits_find("gfx803"));
  cr_assert_null(hsad_gfx_limits_find("bogus:"));
  cr_assert_str_eq(hsad_occ_limiter_name(HSAD_OCC_LDS), "lds");
}

Test(codeobj_occupancy, wave_slots_and_workgroup_slots) {
  hsad_codeobj_t *co = co_test_load(FIX("kernels-gfx90a-v5.hsaco"));
  /* vadd: 8 VGPRs, 10 SGPRs, wave64, 256 work-items = 4 waves: 8 waves/SIMD (gfx90a max) */
  hsad_occupancy_t o = occ(co_test_kernel(co, "vadd"), 256, 0);
  cr_assert_eq(o.waves_per_workgroup, 4);
  cr_assert_eq(o.workgroups_per_cu, 8);
  cr_assert_eq(o.waves_per_cu, 32);
  cr_assert_eq(o.waves_per_simd, 8);
  cr_assert_eq(o.limiter, HSAD_OCC_WAVE_SLOTS);
  cr_assert_eq(o.vgprs_allocated, 8);
  cr_assert_not(o.wgp_mode);
  hsad_codeobj_destroy(co);

  co = co_test_load(FIX("kernels-gfx906-v4.hsaco"));
  /* fixed_lds at 128 work-items (2 waves): 10*4/2 = 20 by waves, but 16 barriers per CU */
  o = occ(co_test_kernel(co, "fixed_lds"), 128, 0);
  cr_assert_eq(o.workgroups_per_cu, 16);
  cr_assert_eq(o.waves_per_cu, 32);
  cr_assert_eq(o.waves_per_simd, 8);
  cr_assert_eq(o.limiter, HSAD_OCC_WORKGROUPS);
  cr_assert_eq(o.lds_per_workgroup, 512);
  /* single-wave workgroups use no barrier: 40 of them */
  o = occ(co_test_kernel(co, "fixed_lds"), 64, 0);
  cr_assert_eq(o.workgroups_per_cu, 40);
  cr_assert_eq(o.waves_per_simd, 10);
  cr_assert_eq(o.limiter, HSAD_OCC_WAVE_SLOTS);
  /* LDS: 512 fixed + 16000 dynamic = 16512 -> 16896 (512-byte granule); 65536 / 16896 = 3 */
  o = occ(co_test_kernel(co, "fixed_lds"), 128, 16000);
  cr_assert_eq(o.lds_per_workgroup, 16896);
  cr_assert_eq(o.workgroups_per_cu, 3);
  cr_assert_eq(o.waves_per_cu, 6);
  cr_assert_eq(o.waves_per_simd, 2);
  cr_assert_eq(o.limiter, HSAD_OCC_LDS);
  hsad_codeobj_destroy(co);
}

static uint32_t g_vgprs, g_sgprs, g_agprs;
static int set_regs(const char *path, const msgpack_object *o, msgpack_packer *pk, void *ctx) {
  (void)o, (void)ctx;
  if (g_agprs && !strcmp(path, "amdhsa.kernels/0/.agpr_count")) {
    msgpack_pack_uint32(pk, g_agprs);
    return 1;
  }
  if (g_vgprs && !strcmp(path, "amdhsa.kernels/0/.vgpr_count")) {
    msgpack_pack_uint32(pk, g_vgprs);
    return 1;
  }
  if (g_sgprs && !strcmp(path, "amdhsa.kernels/0/.sgpr_count")) {
    msgpack_pack_uint32(pk, g_sgprs);
    return 1;
  }
  return 0;
}

static hsad_codeobj_t *with_regs(const char *file, uint32_t vgprs, uint32_t sgprs) {
  g_vgprs = vgprs;
  g_sgprs = sgprs;
  co_test_editor_t ed = {set_regs, NULL, NULL};
  size_t size;
  void *img = co_test_rewrite(file, &ed, &size);
  hsad_codeobj_t *co = NULL;
  cr_assert_eq(hsad_codeobj_load_memory(img, size, "regs.hsaco", &co), HSAD_OK, "%s",
               hsad_last_error());
  free(img);
  return co;
}

Test(codeobj_occupancy, vgpr_and_sgpr_limits) {
  /* gfx906, 128 VGPRs: 256 / 128 = 2 waves per SIMD; 4-wave workgroups: 2 per CU */
  hsad_codeobj_t *co = with_regs(FIX("kernels-gfx906-v4.hsaco"), 128, 0);
  hsad_occupancy_t o = occ(hsad_codeobj_kernel_at(co, 0), 256, 0);
  cr_assert_eq(o.vgprs_allocated, 128);
  cr_assert_eq(o.workgroups_per_cu, 2);
  cr_assert_eq(o.waves_per_simd, 2);
  cr_assert_eq(o.limiter, HSAD_OCC_VGPR);
  /* 129 VGPRs round to 132: 256 / 132 = 1 */
  hsad_codeobj_destroy(co);
  co = with_regs(FIX("kernels-gfx906-v4.hsaco"), 129, 0);
  o = occ(hsad_codeobj_kernel_at(co, 0), 64, 0);
  cr_assert_eq(o.vgprs_allocated, 132);
  cr_assert_eq(o.waves_per_simd, 1);
  cr_assert_eq(o.limiter, HSAD_OCC_VGPR);
  hsad_codeobj_destroy(co);
  /* gfx906, 96 SGPRs: LLVM's GFX9 table gives 8 waves (<= 100) */
  co = with_regs(FIX("kernels-gfx906-v4.hsaco"), 0, 96);
  o = occ(hsad_codeobj_kernel_at(co, 0), 64, 0);
  cr_assert_eq(o.workgroups_per_cu, 32);
  cr_assert_eq(o.waves_per_simd, 8);
  cr_assert_eq(o.limiter, HSAD_OCC_SGPR);
  hsad_codeobj_destroy(co);
  /* gfx1030 ignores SGPRs; wave32 VGPR granule 16 of 1024: 100 VGPRs -> 112 -> 9 waves */
  co = with_regs(FIX("kernels-gfx1030-v5.hsaco"), 100, 100);
  o = occ(hsad_codeobj_kernel_at(co, 0), 32, 0);
  cr_assert_eq(o.vgprs_allocated, 112);
  cr_assert_eq(o.waves_per_simd, 9);
  cr_assert_eq(o.limiter, HSAD_OCC_VGPR);
  cr_assert(o.wgp_mode, "gfx10 code objects default to WGP mode: per-WGP figures");
  hsad_codeobj_destroy(co);
  /* gfx90a: 62 VGPRs (accum_offset rounds to 64) + 64 AGPRs share the file: 128 of 512 ->
   * 4 waves per SIMD; 4-wave workgroups: 4 per CU */
  g_agprs = 64;
  co = with_regs(FIX("kernels-gfx90a-v5.hsaco"), 62, 0);
  g_agprs = 0;
  o = occ(hsad_codeobj_kernel_at(co, 0), 256, 0);
  cr_assert_eq(o.vgprs_allocated, 128);
  cr_assert_eq(o.workgroups_per_cu, 4);
  cr_assert_eq(o.waves_per_simd, 4);
  cr_assert_eq(o.limiter, HSAD_OCC_VGPR);
  hsad_codeobj_destroy(co);
}

Test(codeobj_occupancy, errors) {
  hsad_codeobj_t *co = co_test_load(FIX("kernels-gfx90a-v5.hsaco"));
  const hsad_kernel_t *k = co_test_kernel(co, "fixed_lds");
  hsad_occupancy_t o;
  cr_assert_eq(hsad_kernel_occupancy(k, NULL, 0, 0, &o), HSAD_ERR_WORKGROUP);
  cr_assert(strstr(hsad_last_error(), "kernel 'fixed_lds': workgroup size 0 outside 1..128 "
                                      "(.max_flat_workgroup_size)"),
            "%s", hsad_last_error());
  cr_assert_eq(hsad_kernel_occupancy(k, NULL, 129, 0, &o), HSAD_ERR_WORKGROUP);
  cr_assert_eq(hsad_kernel_occupancy(k, NULL, 64, 65536, &o), HSAD_ERR_LDS_LIMIT);
  cr_assert(strstr(hsad_last_error(), "kernel 'fixed_lds': 512 + 65536 bytes of LDS exceed the "
                                      "65536 bytes of a CU"),
            "%s", hsad_last_error());
  cr_assert_eq(hsad_kernel_occupancy(NULL, NULL, 64, 0, &o), HSAD_ERR_INVALID_ARGUMENT);
  hsad_codeobj_destroy(co);
}

Test(codeobj_occupancy, pressure_report) {
  hsad_codeobj_t *co = co_test_load(FIX("kernels-gfx90a-v5.hsaco"));
  const hsad_kernel_t *k = co_test_kernel(co, "scratch");
  hsad_occupancy_t o = occ(k, 256, 0);
  hsad_pressure_report_t r;
  cr_assert_eq(hsad_kernel_pressure(k, &o, 2, &r), HSAD_OK);
  cr_assert_eq(r.scratch_per_work_item, 260);
  cr_assert_eq(r.scratch_per_wave, 260 * 64);
  cr_assert_not(r.spills);
  cr_assert_not(r.low_occupancy);
  cr_assert_not(r.flagged);
  cr_assert_eq(hsad_kernel_pressure(k, &o, 9, &r), HSAD_OK); /* floor above gfx90a's 8 */
  cr_assert(r.low_occupancy);
  cr_assert(r.flagged);
  k = co_test_kernel(co, "spill");
  const hsad_kernel_info_t *ki = hsad_kernel_info(k);
  cr_assert_gt(ki->vgpr_spill_count, 0);
  cr_assert_eq(hsad_kernel_pressure(k, NULL, 2, &r), HSAD_OK);
  cr_assert(r.spills);
  cr_assert(r.flagged);
  cr_assert_eq(r.vgpr_spill_count, ki->vgpr_spill_count);
  cr_assert_eq(r.scratch_per_wave, (uint64_t)ki->private_segment_fixed_size * 64);
  hsad_codeobj_destroy(co);
}
