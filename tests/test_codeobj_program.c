/* test_codeobj_program.c - fat binaries with several translation units loaded as one program
 * (issue 10): every bundle's entry for the device goes into one hsa_executable, kernels are
 * found across all of them (a second-unit kernel runs through its twin, defined here, with an
 * exact result), and the same kernel in two units is an error naming both. Runs on
 * kfd-emu (gfx90a), where a GPU address is the host address of the same bytes. */
#include "test_codeobj_util.h"

#include "hsa-dispatch/hsad.h"
#include "tools/kfd-emu/kfd_emu_twin.h"

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

/* The twin of hip_second.hip's offset(int *x, int k): x[threadIdx.x] += k, i.e. work-item
 * l of EVERY workgroup adds k to x[l]. Found by kfd-emu in this executable (-rdynamic). */
KFD_EMU_TWIN(_Z6offsetPii) {
  int32_t *x, k;
  if (kfd_emu_arg(d, 0, &x, sizeof x) || kfd_emu_arg(d, 1, &k, sizeof k)) return 1;
  if (!d->gpu_accessible(x, (uint64_t)wg->size[0] * 4)) return 1;
  for (uint32_t l = 0; l < wg->size[0]; l++) x[l] += k;
  return 0;
}

/* A kernel of the second translation unit runs: offset over 4 workgroups of 64 (and a partial
 * fifth of 16) adds 5 k to x[0..15], 4 k to x[16..63] and leaves the rest. */
Test(codeobj_program, second_unit_kernel_runs) {
  env_t e;
  env_open(&e);
  hsad_program_t *p = NULL;
  cr_assert_eq(hsad_program_load_file(e.dev, FIX("hip_multi.so"), &p), HSAD_OK, "%s",
               hsad_last_error());
  const hsad_device_kernel_t *k = NULL;
  cr_assert_eq(hsad_program_kernel(p, "_Z6offsetPii", &k), HSAD_OK, "%s", hsad_last_error());
  int32_t *x = NULL;
  cr_assert_eq(hsad_buffer_alloc(e.dev, 300 * sizeof *x, (void **)&x), HSAD_OK);
  for (int i = 0; i < 300; i++) x[i] = 1000 + i;
  int32_t add = 7;
  hsad_karg_t args[2] = {HSAD_KARG_PTR(x), HSAD_KARG_VAL(add)};
  hsad_launch_t l = {.dims = 1, .grid = {272}, .block = {64}, .args = args, .arg_count = 2};
  hsad_queue_t *q = NULL;
  cr_assert_eq(hsad_device_queue(e.dev, &q), HSAD_OK);
  hsad_completion_t done;
  cr_assert_eq(hsad_kernel_dispatch(q, k, &l, hsad_now_ns() + 1000000000, &done, NULL), HSAD_OK,
               "%s", hsad_last_error());
  cr_assert_eq(hsad_completion_wait(&done, hsad_now_ns() + 5000000000), HSAD_OK, "%s",
               hsad_last_error());
  for (int i = 0; i < 300; i++) {
    int32_t want = 1000 + i + (i < 16 ? 5 * 7 : i < 64 ? 4 * 7 : 0);
    cr_assert_eq(x[i], want, "x[%d] = %d, want %d", i, x[i], want);
  }
  /* the first unit's kernel is there too, with its own descriptor */
  expect_kernel(p, "_Z5scalePffi");
  hsad_buffer_free(x);
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
