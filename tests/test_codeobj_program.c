/* test_codeobj_program.c - fat binaries with several translation units loaded as one program
 * (issue 10): every bundle's entry for the device goes into one hsa_executable, kernels are
 * found across all of them, and the same kernel in two units is an error naming both. Runs on
 * kfd-emu (gfx90a), where a GPU address is the host address of the same bytes. */
#include "test_codeobj_util.h"

#include "hsa-dispatch/hsad.h"

typedef struct {
  hsad_runtime_t *rt;
  hsad_device_t *dev;
} env_t;

static void env_open(env_t *e) {
  cr_assert_eq(hsad_runtime_open(&e->rt), HSAD_OK, "%s", hsad_last_error());
  cr_assert_eq(hsad_device_get(e->rt, 0, &e->dev), HSAD_OK, "%s", hsad_last_error());
}

/* The kernel resolved to the descriptor bytes of the unit that defines it. */
static void expect_kernel(hsad_program_t *p, const char *name) {
  const hsad_device_kernel_t *k = NULL;
  cr_assert_eq(hsad_program_kernel(p, name, &k), HSAD_OK, "%s: %s", name, hsad_last_error());
  const hsad_device_kernel_desc_t *d = hsad_device_kernel_desc(k);
  cr_assert_str_eq(d->name, name);
  cr_assert_neq(d->kernel_object, 0);
  const hsad_kernel_info_t *ki = hsad_kernel_info(d->codeobj_kernel);
  cr_assert_str_eq(ki->name, name);
  cr_assert_eq(memcmp((const void *)(uintptr_t)d->kernel_object, &ki->descriptor, 64), 0,
               "%s: kernel_object is not its unit's descriptor", name);
}

Test(codeobj_program, every_translation_unit_loaded) {
  env_t e;
  env_open(&e);
  hsad_program_t *p = NULL;
  /* hip_multi.so: hip_scale.hip and hip_second.hip, one bundle each (gfx90a + gfx906) */
  cr_assert_eq(hsad_program_load_file(e.dev, FIX("hip_multi.so"), &p), HSAD_OK, "%s",
               hsad_last_error());
  cr_assert_eq(hsad_program_kernel_count(p), 2);
  expect_kernel(p, "_Z5scalePffi");
  expect_kernel(p, "_Z6offsetPii");
  cr_assert_str_eq(hsad_device_kernel_desc(hsad_program_kernel_at(p, 1))->name, "_Z6offsetPii");
  const hsad_device_kernel_t *k = NULL;
  cr_assert_eq(hsad_program_kernel(p, "nope", &k), HSAD_ERR_KERNEL_NOT_FOUND);
  cr_assert_str_eq(hsad_last_error(),
                   FIX("hip_multi.so") "[bundle 0: hipv4-amdgcn-amd-amdhsa--gfx90a]: no kernel "
                   "named 'nope' in its 2 translation units (2 kernels)");
  hsad_program_destroy(p);
  /* three units: CCOB v2 zlib (8 kernels), CCOB v3 zstd (1), a plain bundle (1) */
  cr_assert_eq(hsad_program_load_file(e.dev, FIX("ccob_multi.o"), &p), HSAD_OK, "%s",
               hsad_last_error());
  cr_assert_eq(hsad_program_kernel_count(p), 10);
  expect_kernel(p, "vadd");
  expect_kernel(p, "spill");
  expect_kernel(p, "_Z6offsetPii");
  expect_kernel(p, "hw_implicit24");
  cr_assert_eq(hsad_program_kernel(p, "_Z6offsetPii.kd", &k), HSAD_OK);
  cr_assert_eq(k, hsad_program_kernel_at(p, 8));
  hsad_program_destroy(p);
  cr_assert_eq(hsad_runtime_close(e.rt), HSAD_OK);
}

Test(codeobj_program, same_kernel_in_two_units) {
  env_t e;
  env_open(&e);
  hsad_program_t *p = NULL;
  cr_assert_eq(hsad_program_load_file(e.dev, FIX("hip_dup.o"), &p), HSAD_ERR_METADATA_TYPE);
  cr_assert_null(p);
  cr_assert_str_eq(hsad_last_error(),
                   "kernel '_Z5scalePffi' is defined in two translation units: "
                   FIX("hip_dup.o") "[bundle 0: hipv4-amdgcn-amd-amdhsa--gfx90a] and "
                   FIX("hip_dup.o") "[bundle 1: hipv4-amdgcn-amd-amdhsa--gfx90a]");
  cr_assert_eq(hsad_runtime_close(e.rt), HSAD_OK);
}

/* Issue 10: program load refuses a relocatable object with the codeobj words. */
Test(codeobj_program, relocatable_object_refused) {
  env_t e;
  env_open(&e);
  hsad_program_t *p = NULL;
  cr_assert_eq(hsad_program_load_file(e.dev, FIX("kernels-gfx90a.o"), &p), HSAD_ERR_UNSUPPORTED);
  cr_assert(strstr(hsad_last_error(), "kernels-gfx90a.o: relocatable object (ET_REL, e.g. from "
                                      "clang -c): kernel entry offsets are unresolved "
                                      "relocations; link it into a code object first: "
                                      "ld.lld-15 -shared OBJ.o -o OBJ.hsaco"),
            "%s", hsad_last_error());
  cr_assert_eq(hsad_runtime_close(e.rt), HSAD_OK);
}
