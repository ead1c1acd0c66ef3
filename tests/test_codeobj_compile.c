/* test_codeobj_compile.c - OpenCL C through comgr: the object loads with the expected metadata,
 * -D and -O reach the compiler, compiler errors come back as HSAD_ERR_COMPILE with
 * FILE:LINE:COL diagnostics naming the caller's file, and bad options fail early. */
#include "test_codeobj_util.h"

static const char vadd_src[] =
    "__kernel void vadd(__global const float *a, __global float *c, int n) {\n"
    "  size_t i = get_global_id(0);\n"
    "  if (i < n) c[i] = a[i] * SCALE + sqrt(a[i]);\n"
    "}\n";

Test(codeobj_compile, opencl_v5_loads) {
  const char *defs[] = {"SCALE=3.0f"};
  hsad_compile_options_t o = {.target = "gfx90a:xnack-", .opt_level = 2, .defines = defs,
                              .define_count = 1, .code_object_version = 5};
  void *obj = NULL;
  size_t size = 0;
  char *log = NULL;
  hsad_status_t st =
      hsad_codeobj_compile(vadd_src, sizeof vadd_src - 1, "src/vadd.cl", &o, &obj, &size, &log);
  cr_assert_eq(st, HSAD_OK, "%s", hsad_last_error());
  cr_assert_gt(size, 1000);
  free(log);
  hsad_codeobj_t *co = NULL;
  cr_assert_eq(hsad_codeobj_load_memory(obj, size, "vadd.hsaco", &co), HSAD_OK, "%s",
               hsad_last_error());
  free(obj);
  const hsad_codeobj_info_t *ci = hsad_codeobj_info(co);
  cr_assert_eq(ci->code_object_version, 5);
  cr_assert_str_eq(ci->target, "amdgcn-amd-amdhsa--gfx90a:xnack-");
  cr_assert_eq(ci->target_id.xnack, HSAD_FEATURE_OFF);
  const hsad_kernel_t *k = co_test_kernel(co, "vadd");
  const hsad_kernel_info_t *ki = hsad_kernel_info(k);
  cr_assert_str_eq(ki->language, "OpenCL C");
  cr_assert_eq(ki->language_version[0], 2);
  cr_assert_eq(ki->language_version[1], 0);
  cr_assert_geq(ki->arg_count, 3);
  cr_assert_eq(ki->args[0].offset, 0);
  cr_assert_eq(ki->args[0].size, 8);
  cr_assert_eq(ki->args[0].value_kind, HSAD_VK_GLOBAL_BUFFER);
  cr_assert_eq(ki->args[0].address_space, HSAD_AS_GLOBAL);
  cr_assert(ki->args[0].is_const);
  cr_assert_eq(ki->args[2].offset, 16);
  cr_assert_eq(ki->args[2].value_kind, HSAD_VK_BY_VALUE);
  cr_assert_str_eq(ki->args[2].type_name, "int");
  cr_assert_eq(hsad_kernel_kernarg_plan(k)->explicit_count, 3);
  cr_assert_eq(ki->kd_mismatch, 0);
  hsad_codeobj_destroy(co);
}

Test(codeobj_compile, diagnostics_name_the_file) {
  static const char bad[] = "__kernel void k(__global int *o) {\n"
                            "  o[0] = undefined_thing;\n"
                            "}\n";
  hsad_compile_options_t o = {.target = "gfx906", .opt_level = 0};
  void *obj = (void *)1;
  size_t size = 1;
  char *log = NULL;
  hsad_status_t st = hsad_codeobj_compile(bad, sizeof bad - 1, "dir/bad.cl", &o, &obj, &size,
                                          &log);
  cr_assert_eq(st, HSAD_ERR_COMPILE);
  cr_assert_null(obj);
  cr_assert_eq(size, 0);
  cr_assert(log);
  cr_assert(strstr(log, "dir/bad.cl:2:10: error: use of undeclared identifier 'undefined_thing'"),
            "%s", log);
  cr_assert(strstr(hsad_last_error(), "dir/bad.cl: compile source with device libraries for "
                                      "amdgcn-amd-amdhsa--gfx906 failed:\n"),
            "%s", hsad_last_error());
  cr_assert(strstr(hsad_last_error(), "dir/bad.cl:2:10: error:"), "%s", hsad_last_error());
  free(log);
}

Test(codeobj_compile, defines_reach_the_compiler) {
  /* without SCALE the source does not compile */
  hsad_compile_options_t o = {.target = "gfx1030", .opt_level = 3};
  void *obj = NULL;
  size_t size = 0;
  hsad_status_t st = hsad_codeobj_compile(vadd_src, sizeof vadd_src - 1, "v.cl", &o, &obj, &size,
                                          NULL);
  cr_assert_eq(st, HSAD_ERR_COMPILE);
  cr_assert(strstr(hsad_last_error(), "v.cl:3:28: error: use of undeclared identifier 'SCALE'"),
            "%s", hsad_last_error());
}

Test(codeobj_compile, bad_options) {
  void *obj;
  size_t size;
  hsad_compile_options_t o = {.target = "gfx90a", .opt_level = 5};
  cr_assert_eq(hsad_codeobj_compile("x", 1, "a.cl", &o, &obj, &size, NULL),
               HSAD_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(hsad_last_error(), "a.cl: -O5: optimization level must be 0..3");
  o.opt_level = 1;
  cr_assert_eq(hsad_codeobj_compile("x", 1, "a.f90", &o, &obj, &size, NULL),
               HSAD_ERR_UNSUPPORTED);
  cr_assert_str_eq(hsad_last_error(),
                   "a.f90: unknown source language (expected a .cl or .hip file name)");
  o.code_object_version = 3;
  cr_assert_eq(hsad_codeobj_compile("x", 1, "a.cl", &o, &obj, &size, NULL),
               HSAD_ERR_CODE_OBJECT_VERSION);
  cr_assert_str_eq(hsad_last_error(), "a.cl: code object version 3 requested: supported are 4 "
                                      "and 5");
  o.code_object_version = 0;
  o.target = "gfx90a:xnack";
  cr_assert_eq(hsad_codeobj_compile("x", 1, "a.cl", &o, &obj, &size, NULL),
               HSAD_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(hsad_last_error(),
                   "target ID 'gfx90a:xnack': feature 'xnack' needs a '+' or '-' suffix");
  cr_assert_eq(hsad_codeobj_compile(NULL, 1, "a.cl", &o, &obj, &size, NULL),
               HSAD_ERR_INVALID_ARGUMENT);
}

/* HIP through comgr with Debian's HIP headers; the device libraries are linked explicitly
 * (comgr 2.4 links none for HIP), so threadIdx (ockl) resolves. */
Test(codeobj_compile, hip_kernel) {
  static const char src[] = "#include <hip/hip_runtime.h>\n"
                            "__global__ void add_one(float *x) { x[threadIdx.x] += 1.0f; }\n";
  hsad_compile_options_t o = {.target = "gfx1030", .opt_level = 2, .code_object_version = 5};
  void *obj = NULL;
  size_t size = 0;
  char *log = NULL;
  hsad_status_t st = hsad_codeobj_compile(src, sizeof src - 1, "k.hip", &o, &obj, &size, &log);
  cr_assert_eq(st, HSAD_OK, "%s\n%s", hsad_last_error(), log ? log : "");
  free(log);
  hsad_codeobj_t *co = NULL;
  cr_assert_eq(hsad_codeobj_load_memory(obj, size, "k.hsaco", &co), HSAD_OK, "%s",
               hsad_last_error());
  free(obj);
  cr_assert_eq(hsad_codeobj_info(co)->code_object_version, 5);
  const hsad_kernel_info_t *ki = hsad_kernel_info(co_test_kernel(co, "_Z7add_onePf"));
  cr_assert_eq(ki->wavefront_size, 32);
  cr_assert_eq(ki->max_flat_workgroup_size, 1024);
  cr_assert_eq(ki->args[0].value_kind, HSAD_VK_GLOBAL_BUFFER);
  hsad_codeobj_destroy(co);
  /* a real processor Debian 12's comgr 2.4 predates (and has no device libraries for) */
  o.target = "gfx1100";
  st = hsad_codeobj_compile(src, sizeof src - 1, "k.hip", &o, &obj, &size, NULL);
  cr_assert_eq(st, HSAD_ERR_UNSUPPORTED);
  cr_assert_str_eq(hsad_last_error(), "k.hip: this comgr cannot compile for gfx1100 (a newer "
                   "ROCm's can); it compiles for gfx600, gfx601, gfx602, gfx700, gfx701, gfx702, "
                   "gfx703, gfx704, gfx705, gfx801, gfx802, gfx803, gfx805, gfx810, gfx900, "
                   "gfx902, gfx904, gfx906, gfx908, gfx909, gfx90a, gfx90c, gfx1010, gfx1011, "
                   "gfx1012, gfx1013, gfx1030, gfx1031, gfx1032, gfx1033, gfx1034, gfx1035, "
                   "gfx1036");
}
