/* test_codeobj_variants.c - one unchanged source compiled through comgr into variants whose
 * register budgets (launch bounds set by the library) show in their metadata, the choice of a
 * variant per workgroup size from that metadata, and bad budgets (issue 9, "Variants and
 * selection"; the cached per-dispatch selection is hsa-dispatch's). */
#include "test_codeobj_util.h"

static char *read_src(const char *name, size_t *out_size) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", CO_SRCDIR, name);
  return co_test_read(path, out_size);
}

static const hsad_kernel_info_t *info_of(hsad_codeobj_t *co, const char *k) {
  return hsad_kernel_info(co_test_kernel(co, k));
}

/* pressure.cl on gfx906 (256 VGPRs per SIMD lane, granule 4): as written, hog keeps 114 VGPRs;
 * at least 8 waves per SIMD leave 256 / 8 = 32; a 1024-work-item maximum means 16 waves per
 * workgroup, 4 per SIMD: 64 VGPRs; 5 waves: 51 -> 48. */
Test(codeobj_variants, budgets_show_in_metadata_and_selection, .timeout = 120) {
  size_t n;
  char *src = read_src("pressure.cl", &n);
  hsad_compile_options_t o = {.target = "gfx906", .opt_level = 2, .code_object_version = 5};
  hsad_variant_budget_t b[4] = {{0, 0}, {256, 8}, {1024, 0}, {1024, 5}};
  hsad_codeobj_t *v[4];
  char *log = NULL;
  hsad_status_t st = hsad_codeobj_compile_variants(src, n, "pressure.cl", &o, b, 4, v, &log);
  cr_assert_eq(st, HSAD_OK, "%s", hsad_last_error());
  free(log);
  cr_assert_str_eq(hsad_codeobj_info(v[1])->name, "pressure.cl[variant 1: wg<=256 waves>=8]");
  const hsad_kernel_info_t *h[4];
  for (int i = 0; i < 4; i++) h[i] = info_of(v[i], "hog");
  cr_assert_eq(h[0]->max_flat_workgroup_size, 256); /* OpenCL's default */
  cr_assert_eq(h[0]->vgpr_count, 114);
  cr_assert_eq(h[0]->vgpr_spill_count, 0);
  cr_assert_eq(h[1]->max_flat_workgroup_size, 256);
  cr_assert_eq(h[1]->vgpr_count, 32);
  cr_assert_eq(h[1]->vgpr_spill_count, 218);
  cr_assert_eq(h[2]->max_flat_workgroup_size, 1024);
  cr_assert_eq(h[2]->vgpr_count, 64);
  cr_assert_eq(h[2]->vgpr_spill_count, 150);
  cr_assert_eq(h[3]->max_flat_workgroup_size, 1024);
  cr_assert_leq(h[3]->vgpr_count, 48);
  cr_assert_gt(h[3]->vgpr_spill_count, 150);
  /* light needs 2 VGPRs under every budget; its maximum workgroup size follows the budget */
  cr_assert_eq(info_of(v[2], "light")->max_flat_workgroup_size, 1024);
  cr_assert_eq(info_of(v[2], "light")->vgpr_spill_count, 0);

  const hsad_kernel_t *k[4];
  for (int i = 0; i < 4; i++) k[i] = co_test_kernel(v[i], "hog");
  hsad_variant_choice_t c;
  /* 64 and 256: variant 0 is the only one without spills (2 waves per SIMD) */
  cr_assert_eq(hsad_kernel_variant_select(k, 4, NULL, 64, 0, &c), HSAD_OK, "%s",
               hsad_last_error());
  cr_assert_eq(c.index, 0);
  cr_assert_eq(c.reason, HSAD_VARIANT_NO_SPILL);
  cr_assert_eq(c.waves_per_simd, 2);
  cr_assert_eq(c.candidates, 4);
  cr_assert_eq(hsad_kernel_variant_select(k, 4, NULL, 256, 0, &c), HSAD_OK);
  cr_assert_eq(c.index, 0);
  cr_assert_eq(c.regs, 114);
  /* 1024: only variants 2 and 3 allow it, both spill: the least spilling, variant 2 */
  cr_assert_eq(hsad_kernel_variant_select(k, 4, NULL, 1024, 0, &c), HSAD_OK);
  cr_assert_eq(c.index, 2);
  cr_assert_eq(c.reason, HSAD_VARIANT_LEAST_SPILL);
  cr_assert_eq(c.spills, 150);
  cr_assert_eq(c.waves_per_simd, 4);
  cr_assert_eq(c.candidates, 2);
  /* without variant 0, spilling variants compete at 256: fewest spills wins (2: 150) */
  cr_assert_eq(hsad_kernel_variant_select(k + 1, 3, NULL, 256, 0, &c), HSAD_OK);
  cr_assert_eq(c.index, 1);
  cr_assert_eq(c.spills, 150);
  /* no variant allows 2048 */
  cr_assert_eq(hsad_kernel_variant_select(k, 4, NULL, 2048, 0, &c), HSAD_ERR_WORKGROUP);
  cr_assert_str_eq(hsad_last_error(),
                   "pressure.cl[variant 0: wg<=0 waves>=0]: kernel 'hog': no variant allows "
                   "workgroup size 2048 (variants allow up to 256, 256, 1024, 1024)");
  for (int i = 0; i < 4; i++) hsad_codeobj_destroy(v[i]);
  free(src);
}

/* Ties go to fewer VGPRs: the light kernel needs 2 VGPRs everywhere, so the first variant. A
 * variant without spills but with more scratch loses to one with less. */
Test(codeobj_variants, selection_ties_and_scratch) {
  hsad_codeobj_t *a = co_test_load(FIX("kernels-gfx906-v5.hsaco"));
  hsad_codeobj_t *p = co_test_load(FIX("pressure-gfx906.hsaco"));
  const hsad_kernel_t *k[3] = {co_test_kernel(a, "scratch"), co_test_kernel(a, "vadd"),
                               co_test_kernel(p, "light")};
  hsad_variant_choice_t c;
  /* scratch (260 bytes per work-item, no spills) vs vadd and light (none): scratch is out;
   * vadd (8 VGPRs) and light (2) both reach 10 waves: light has fewer VGPRs */
  cr_assert_eq(hsad_kernel_variant_select(k, 3, NULL, 256, 0, &c), HSAD_OK, "%s",
               hsad_last_error());
  cr_assert_eq(c.index, 2);
  cr_assert_eq(c.waves_per_simd, 10);
  cr_assert_eq(c.regs, 2);
  cr_assert_eq(c.scratch_per_work_item, 0);
  cr_assert_eq(hsad_kernel_variant_select(k, 0, NULL, 256, 0, &c), HSAD_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(hsad_last_error(), "hsad_kernel_variant_select: 0 variants (1..16)");
  cr_assert_eq(hsad_kernel_variant_select(NULL, 0, NULL, 256, 0, NULL), HSAD_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(hsad_last_error(), "hsad_kernel_variant_select: NULL kernels");
  cr_assert_eq(hsad_kernel_variant_select(k, 0, NULL, 256, 0, NULL), HSAD_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(hsad_last_error(), "hsad_kernel_variant_select: NULL out_choice");
  hsad_codeobj_destroy(a);
  hsad_codeobj_destroy(p);
}

static void expect_variant_fail(const char *src, const char *name, const char *target,
                                hsad_variant_budget_t b, hsad_status_t want, const char *msg) {
  hsad_compile_options_t o = {.target = target, .opt_level = 2, .code_object_version = 5};
  hsad_codeobj_t *v[1] = {(hsad_codeobj_t *)1};
  hsad_status_t st = hsad_codeobj_compile_variants(src, strlen(src), name, &o, &b, 1, v, NULL);
  cr_assert_eq(st, want, "%s: %s", hsad_status_name(st), hsad_last_error());
  cr_assert_null(v[0]);
  cr_assert_str_eq(hsad_last_error(), msg);
}

Test(codeobj_variants, budgets_the_compiler_cannot_meet, .timeout = 120) {
  /* the kernel's own attributes conflict with the budget */
  expect_variant_fail("__kernel __attribute__((reqd_work_group_size(512, 1, 1)))\n"
                      "void big(__global float *o) { o[0] = 1; }\n",
                      "big.cl", "gfx90a", (hsad_variant_budget_t){256, 0}, HSAD_ERR_COMPILE,
                      "big.cl: kernel 'big': its reqd_work_group_size 512x1x1 (512 work-items) "
                      "conflicts with the budget's maximum workgroup size 256");
  expect_variant_fail("__kernel __attribute__((amdgpu_flat_work_group_size(1, 128)))\n"
                      "void own(__global float *o) { o[0] = 1; }\n",
                      "own.cl", "gfx90a", (hsad_variant_budget_t){256, 0}, HSAD_ERR_COMPILE,
                      "own.cl: kernel 'own' declares a maximum workgroup size of 128 (its own "
                      "attributes); variant 0 asks 256");
  /* 48 KiB of LDS: one workgroup per CU, so 8 waves per SIMD cannot be met */
  expect_variant_fail("__kernel void lds(__global float *o) {\n"
                      "  __local float t[12288];\n"
                      "  t[get_local_id(0)] = o[0];\n"
                      "  barrier(CLK_LOCAL_MEM_FENCE);\n"
                      "  o[get_local_id(0)] = t[12287 - get_local_id(0)];\n"
                      "}\n",
                      "lds.cl", "gfx90a", (hsad_variant_budget_t){0, 8}, HSAD_ERR_COMPILE,
                      "lds.cl: kernel 'lds': the compiler cannot meet the budget of 8 waves per "
                      "SIMD: 3 VGPRs (8 allocated), 6 SGPRs and 49152 LDS bytes allow 1 (lds)");
  expect_variant_fail("__kernel void k(__global float *o) { o[0] = 1; }\n", "k.cl", "gfx90a",
                      (hsad_variant_budget_t){0, 9}, HSAD_ERR_INVALID_ARGUMENT,
                      "k.cl: budget of 9 waves per SIMD: gfx90a runs at most 8");
  expect_variant_fail("__kernel void k(__global float *o) { o[0] = 1; }\n", "k.cl", "gfx90a",
                      (hsad_variant_budget_t){2048, 0}, HSAD_ERR_INVALID_ARGUMENT,
                      "k.cl: budget maximum workgroup size 2048: must be 1..1024");
}

/* HIP: __global__ redefined after hip/hip_runtime.h; HIP's default maximum is 1024. */
Test(codeobj_variants, hip_budget, .timeout = 180) {
  size_t n;
  char *src = read_src("hip_bounds.hip", &n);
  hsad_compile_options_t o = {.target = "gfx90a", .opt_level = 2, .code_object_version = 5};
  hsad_variant_budget_t b[2] = {{0, 0}, {128, 4}};
  hsad_codeobj_t *v[2];
  cr_assert_eq(hsad_codeobj_compile_variants(src, n, "hip_bounds.hip", &o, b, 2, v, NULL),
               HSAD_OK, "%s", hsad_last_error());
  cr_assert_eq(info_of(v[0], "axpy")->max_flat_workgroup_size, 1024);
  cr_assert_eq(info_of(v[1], "axpy")->max_flat_workgroup_size, 128);
  hsad_codeobj_destroy(v[0]);
  hsad_codeobj_destroy(v[1]);
  free(src);
}
