/* test_nv_codeobj.c - nvcodeobj (no GPU, no CUDA): cubins, fatbins and PTX of kernels/cuda/NAME.cu
 * built on an H200 by scripts/nv-testdata.sh, against cuobjdump's and the driver's output kept
 * beside them (tests/data/nvidia/). NVRTC and the CUDA header checks skip, with the reason, where
 * CUDA is not installed. */
#define _GNU_SOURCE /* memmem */
#include "nvcodeobj/hsad_nv_codeobj.h"

#include <criterion/criterion.h>
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HSAD_TEST_CUDA_INCLUDE
#include <fatbinary_section.h>
#include <nvrtc.h>
#include "nvcodeobj/nv_nvrtc.h"
#endif

#define NVDATA NV_DATADIR "/"

static hsad_nv_program_t *open_ok(const char *name) {
  char path[512];
  snprintf(path, sizeof path, NVDATA "%s", name);
  hsad_nv_program_t *p = NULL;
  hsad_status_t st = hsad_nv_program_open_file(path, &p);
  cr_assert_eq(st, HSAD_OK, "%s: %s", name, hsad_last_error());
  return p;
}

static char *slurp(const char *path, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  cr_assert(f, "%s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  b[n] = 0;
  fclose(f);
  *out_size = (size_t)n;
  return b;
}

static const hsad_nv_kernel_info_t *kernel(const hsad_nv_entry_t *e, const char *name) {
  const hsad_nv_kernel_info_t *k = NULL;
  cr_assert_eq(hsad_nv_entry_find_kernel(e, name, &k), HSAD_OK, "%s", hsad_last_error());
  return k;
}

Test(nv_cubin, byval_parameters_as_the_driver_gives_them) {
  hsad_nv_program_t *p = open_ok("byval.sm_90.cubin");
  cr_assert_eq(hsad_nv_program_kind(p), HSAD_NV_FILE_CUBIN);
  const hsad_nv_entry_t *e = hsad_nv_program_entry(p, 0);
  cr_assert_str_eq(e->arch, "sm_90");
  cr_assert_eq(e->kernel_count, 2);
  cr_assert_str_eq(e->kernels[0].name, "noargs"); /* .text section order, as cuobjdump */
  const hsad_nv_kernel_info_t *k = kernel(e, "byval");
  static const uint32_t off[] = {0, 8, 32, 48, 56, 64}, size[] = {1, 24, 16, 8, 8, 8};
  cr_assert_eq(k->param_count, 6);
  for (int i = 0; i < 6; i++) {
    cr_assert_eq(k->params[i].index, (uint32_t)i);
    cr_assert_eq(k->params[i].offset, off[i], "param %d offset %u", i, k->params[i].offset);
    cr_assert_eq(k->params[i].size, size[i], "param %d size %u", i, k->params[i].size);
  }
  cr_assert_eq(k->param_bytes, 72);
  cr_assert_eq(k->param_cbank_offset, 528);
  cr_assert_eq(k->registers, 14);
  cr_assert_eq(k->const_bank0_bytes, 600);
  cr_assert_eq(k->max_threads, 1024);
  cr_assert_eq(kernel(e, "noargs")->param_count, 0);
  hsad_nv_program_destroy(p);
}

/* Every kernel of every cubin: REG / STACK / SHARED / LOCAL / CONSTANT[0] equal what
 * cuobjdump --dump-resource-usage printed. */
static void check_resource_usage(const char *cubin) {
  hsad_nv_program_t *p = open_ok(cubin);
  const hsad_nv_entry_t *e = hsad_nv_program_entry(p, 0);
  char path[512];
  snprintf(path, sizeof path, NVDATA "%s.resource-usage.txt", cubin);
  size_t n;
  char *ref = slurp(path, &n), *save = NULL, name[256] = "";
  unsigned seen = 0;
  for (char *line = strtok_r(ref, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    if (sscanf(line, " Function %255[^:]:", name) == 1) continue;
    unsigned reg, stack, shared, local, c0;
    if (sscanf(line, " REG:%u STACK:%u SHARED:%u LOCAL:%u CONSTANT[0]:%u", &reg, &stack, &shared,
               &local, &c0) != 5)
      continue;
    const hsad_nv_kernel_info_t *k = kernel(e, name);
    cr_assert_eq(k->registers, reg, "%s %s REG", cubin, name);
    cr_assert_eq(k->stack_bytes, stack, "%s %s STACK", cubin, name);
    cr_assert_eq(k->shared_section_bytes, shared, "%s %s SHARED", cubin, name);
    cr_assert_eq(k->local_section_bytes, local, "%s %s LOCAL", cubin, name);
    cr_assert_eq(k->const_bank0_bytes, c0, "%s %s CONSTANT[0]", cubin, name);
    seen++;
  }
  cr_assert_eq(seen, e->kernel_count, "%s: %u kernels in cuobjdump's list, %u read", cubin, seen,
               e->kernel_count);
  free(ref);
  hsad_nv_program_destroy(p);
}

Test(nv_cubin, resource_usage_equals_cuobjdump) {
  check_resource_usage("saxpy.sm_90.cubin");
  check_resource_usage("byval.sm_90.cubin");
  check_resource_usage("shared.sm_90.cubin");
  check_resource_usage("pressure.sm_90.cubin");
  check_resource_usage("pressure.sm_80.cubin"); /* registers from sh_info there */
}

/* Every line of the driver's view (nv-probe on the H200): attributes, cuFuncGetParamInfo and
 * cuOccupancyMaxActiveBlocksPerMultiprocessor at every block size and dynamic shared size. */
static unsigned check_driver(const char *cubin) {
  hsad_nv_program_t *p = open_ok(cubin);
  const hsad_nv_entry_t *e = hsad_nv_program_entry(p, 0);
  hsad_nv_sm_limits_t lim;
  cr_assert_eq(hsad_nv_sm_limits_get(90, &lim), HSAD_OK);
  char path[512];
  snprintf(path, sizeof path, NVDATA "%s.driver.txt", cubin);
  size_t n;
  char *ref = slurp(path, &n), *save = NULL, name[256];
  const hsad_nv_kernel_info_t *k = NULL;
  unsigned checks = 0;
  for (char *line = strtok_r(ref, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
    unsigned a, b, c, d, f, g;
    unsigned sopt, ssm;
    if (sscanf(line, "device sm_%*u shared_optin %u shared_per_sm %u", &sopt, &ssm) == 2) {
      cr_assert_eq(lim.max_shared_per_block, sopt);
      cr_assert_eq(lim.shared_per_sm, ssm);
    } else if (sscanf(line, "kernel %255s regs %u shared %u local %u const %u max_threads %u",
                      name, &a, &b, &c, &d, &f) == 6) {
      k = kernel(e, name);
      cr_assert_eq(k->registers, a, "%s regs", name);
      cr_assert_eq(k->static_shared_bytes, b, "%s shared", name);
      cr_assert_eq(k->local_bytes, c, "%s local", name);
      cr_assert_eq(hsad_nv_kernel_max_threads(k, &lim), f, "%s max threads", name);
    } else if (sscanf(line, "param %u offset %u size %u", &a, &b, &c) == 3) {
      cr_assert_lt(a, k->param_count, "%s param %u", k->name, a);
      cr_assert_eq(k->params[a].offset, b, "%s param %u offset", k->name, a);
      cr_assert_eq(k->params[a].size, c, "%s param %u size", k->name, a);
    } else if (sscanf(line, "occupancy block %u dynamic_shared %u blocks %u", &a, &b, &g) == 3) {
      hsad_nv_occupancy_t o;
      cr_assert_eq(hsad_nv_occupancy_at(k, &lim, a, b, &o), HSAD_OK);
      cr_assert_eq(o.blocks_per_sm, g, "%s block %u dynamic shared %u: model %u (%s), driver %u",
                   k->name, a, b, o.blocks_per_sm, hsad_nv_limiter_name(o.limiter), g);
    } else {
      continue;
    }
    checks++;
  }
  free(ref);
  hsad_nv_program_destroy(p);
  return checks;
}

Test(nv_occupancy, equals_the_driver_calculator_at_every_block_size) {
  unsigned checks = check_driver("saxpy.sm_90.cubin") + check_driver("byval.sm_90.cubin") +
                    check_driver("shared.sm_90.cubin") + check_driver("pressure.sm_90.cubin");
  cr_assert_eq(checks, 1117, "%u lines checked", checks); /* every line of the four files */
}

Test(nv_occupancy, notes_figures_103_and_64_registers) {
  hsad_nv_sm_limits_t lim;
  cr_assert_eq(hsad_nv_sm_limits_get(90, &lim), HSAD_OK);
  hsad_nv_kernel_info_t k = {.name = "pressure", .registers = 103, .max_threads = 1024};
  hsad_nv_occupancy_t o;
  cr_assert_eq(hsad_nv_occupancy_at(&k, &lim, 256, 0, &o), HSAD_OK);
  cr_assert_eq(o.registers_per_warp, 3328);
  cr_assert_eq(o.blocks_per_sm, 2);
  cr_assert_eq(o.limiter, HSAD_NV_LIMIT_REGISTERS);
  cr_assert_eq(o.occupancy_pct, 25);
  k.registers = 64;
  k.max_threads = 256;
  cr_assert_eq(hsad_nv_occupancy_at(&k, &lim, 256, 0, &o), HSAD_OK);
  cr_assert_eq(o.blocks_per_sm, 4);
  cr_assert_eq(o.limiter, HSAD_NV_LIMIT_REGISTERS);
  cr_assert_eq(hsad_nv_occupancy_at(&k, &lim, 512, 0, &o), HSAD_OK);
  cr_assert_not(o.fits);
  cr_assert_str_eq(o.why_not, "block size above the kernel's or the SM's max threads per block");
  cr_assert_eq(hsad_nv_sm_limits_get(75, &lim), HSAD_ERR_UNSUPPORTED);
  cr_assert_str_eq(hsad_last_error(),
                   "sm_75: no occupancy limits for it; known: sm_80, sm_86, sm_89, sm_90");
}

Test(nv_fatbin, entries_as_cuobjdump_lists_them) {
  static const char *const files[] = {"byval.fatbin", "byval.compressed.fatbin"};
  for (int f = 0; f < 2; f++) {
    hsad_nv_program_t *p = open_ok(files[f]);
    cr_assert_eq(hsad_nv_program_kind(p), HSAD_NV_FILE_FATBIN);
    cr_assert_eq(hsad_nv_program_entry_count(p), 3);
    static const char *const arch[] = {"sm_80", "sm_90", "compute_90"};
    for (size_t i = 0; i < 3; i++) {
      const hsad_nv_entry_t *e = hsad_nv_program_entry(p, i);
      cr_assert_str_eq(e->arch, arch[i]);
      cr_assert_eq(e->compressed, f == 1);
      cr_assert_null(e->unsupported);
      cr_assert_eq(e->kernel_count, 2);
    }
    const hsad_nv_entry_t *sm90 = hsad_nv_program_entry(p, 1);
    cr_assert_eq(sm90->uncompressed_size, 5632); /* the byval.sm_90.cubin built alone */
    cr_assert_eq(kernel(sm90, "byval")->params[1].size, 24);
    cr_assert_eq(kernel(hsad_nv_program_entry(p, 0), "byval")->const_bank0_bytes, 424);
    cr_assert_str_eq(hsad_nv_program_entry(p, 2)->ptx_version, "9.0");
    size_t pick;
    cr_assert_eq(hsad_nv_program_select(p, 90, &pick), HSAD_OK);
    cr_assert_eq(pick, 1);
    cr_assert_eq(hsad_nv_program_select(p, 86, &pick), HSAD_OK);
    cr_assert_eq(pick, 0);
    cr_assert_eq(hsad_nv_program_select(p, 100, &pick), HSAD_OK); /* PTX, JIT */
    cr_assert_eq(pick, 2);
    cr_assert_eq(hsad_nv_program_select(p, 75, &pick), HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND);
    hsad_nv_program_destroy(p);
  }
}

Test(nv_ptx, lists_entries_and_target) {
  hsad_nv_program_t *p = open_ok("saxpy.ptx");
  cr_assert_eq(hsad_nv_program_kind(p), HSAD_NV_FILE_PTX);
  const hsad_nv_entry_t *e = hsad_nv_program_entry(p, 0);
  cr_assert_str_eq(e->ptx_version, "9.0");
  cr_assert_str_eq(e->ptx_target, "sm_90");
  cr_assert_str_eq(e->arch, "compute_90");
  cr_assert_eq(e->kernel_count, 2);
  cr_assert_str_eq(e->kernels[0].name, "saxpy");
  cr_assert_str_eq(e->kernels[1].name, "_Z5scaleIfEvPT_S0_i");
  hsad_nv_program_destroy(p);
}

/* ---- bad input: exact messages, and no crash on any truncation or corruption ---- */

static hsad_status_t open_bytes(const void *d, size_t n, const char *label) {
  hsad_nv_program_t *p = NULL;
  hsad_status_t st = hsad_nv_program_open_memory(d, n, label, &p);
  hsad_nv_program_destroy(p);
  return st;
}

Test(nv_errors, exact_messages) {
  size_t n;
  char *b = slurp(NVDATA "byval.sm_90.cubin", &n);
  cr_assert_eq(open_bytes(b, 40, "k.cubin"), HSAD_ERR_TRUNCATED);
  cr_assert_str_eq(hsad_last_error(), "k.cubin: truncated: 40 bytes, shorter than the 64-byte ELF64 header");
  cr_assert_eq(open_bytes(b, 4000, "k.cubin"), HSAD_ERR_TRUNCATED);
  cr_assert_str_eq(hsad_last_error(), "k.cubin: truncated: section header table (offset 4200, 18 x "
                   "64 bytes) runs past the end of the 4000-byte file");
  char *w = malloc(n);
  memcpy(w, b, n);
  w[18] = 62; /* e_machine EM_X86_64 */
  cr_assert_eq(open_bytes(w, n, "k.cubin"), HSAD_ERR_BAD_ELF);
  cr_assert_str_eq(hsad_last_error(), "k.cubin: e_machine 62, expected EM_CUDA (190): not a cubin");
  memcpy(w, b, n);
  char *sec = memmem(w, n, ".nv.info.byval", 14);
  cr_assert(sec);
  sec[5] = 'X'; /* .nv.iXfo.byval: the kernel's records are gone */
  cr_assert_eq(open_bytes(w, n, "k.cubin"), HSAD_ERR_BAD_ELF);
  cr_assert_str_eq(hsad_last_error(), "k.cubin: kernel byval has no .nv.info.byval section "
                   "(SHT_CUDA_INFO): its parameter layout is unknown");
  cr_assert_eq(open_bytes("hello", 5, "k.bin"), HSAD_ERR_NOT_ELF);
  cr_assert_str_eq(hsad_last_error(), "k.bin: not a cubin (no \\177ELF magic), a fatbin (magic "
                   "0xba55ed50) or PTX text (first directive .version) in its 5 bytes");
  free(w);
  free(b);
  b = slurp(NVDATA "byval.fatbin", &n);
  cr_assert_eq(open_bytes(b, 100, "k.fatbin"), HSAD_ERR_TRUNCATED);
  cr_assert_str_eq(hsad_last_error(), "k.fatbin: truncated: fatbin container 0 at offset 0: header "
                   "16 + 12152 bytes of entries run past the end of the 100-byte file");
  free(b);
  cr_assert_eq(hsad_nv_program_open_file(NVDATA "absent.cubin", &(hsad_nv_program_t *){NULL}),
               HSAD_ERR_IO);
  cr_assert_str_eq(hsad_last_error(), NVDATA "absent.cubin: cannot open: No such file or directory");
}

/* Every prefix and 2000 seeded corruptions of each file: a status, never a crash. */
Test(nv_errors, truncated_and_corrupted_copies_never_crash) {
  static const char *const files[] = {"byval.sm_90.cubin", "shared.sm_90.cubin", "byval.fatbin",
                                      "byval.compressed.fatbin", "saxpy.ptx"};
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (size_t f = 0; f < 5; f++) {
    char path[512];
    snprintf(path, sizeof path, NVDATA "%s", files[f]);
    size_t n;
    char *b = slurp(path, &n), *w = malloc(n);
    /* what must be there: a cubin's section header table, a fatbin's whole container */
    size_t needed = n;
    if (f < 2) {
      Elf64_Ehdr eh;
      memcpy(&eh, b, sizeof eh);
      needed = eh.e_shoff + eh.e_shnum * 64u;
    }
    for (size_t len = 1; len < n; len += 7) {
      hsad_status_t st = open_bytes(b, len, files[f]);
      if (f < 4 && len < needed) cr_assert_neq(st, HSAD_OK, "%s cut at %zu opened", files[f], len);
    }
    for (int round = 0; round < 2000; round++) {
      memcpy(w, b, n);
      for (int flips = 0; flips < 4; flips++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        w[(seed >> 33) % n] ^= (char)(1u << ((seed >> 20) & 7));
      }
      (void)open_bytes(w, n, files[f]);
    }
    free(w);
    free(b);
  }
}

/* ---- constants and the NVRTC table against CUDA's headers, where they are ---- */

Test(nv_headers, constants_match_cuda_headers) {
  cr_assert_eq(HSAD_NV_EM_CUDA, EM_CUDA); /* glibc's elf.h */
#ifdef HSAD_TEST_CUDA_INCLUDE
  cr_assert_str_eq(FATBIN_DATA_SECTION_NAME, ".nv_fatbin");
#define NV_SAME(name, ret, args)                                                                  \
  cr_assert(__builtin_types_compatible_p(__typeof__(&name), ret(*) args) ||                       \
                sizeof(nv_##name##_fn) == sizeof(&name),                                          \
            #name);
  NV_NVRTC_SYMBOLS(NV_SAME)
  cr_assert_eq(sizeof(nvrtcResult), sizeof(nv_nvrtcResult));
  cr_assert_eq(NVRTC_SUCCESS, 0);
#else
  cr_skip_test("no CUDA headers at build time (/usr/local/cuda/include): only EM_CUDA checked");
#endif
}

/* ---- NVRTC ---- */

Test(nv_nvrtc, compiles_saxpy_to_a_cubin) {
  char why[768];
  if (!hsad_nv_nvrtc_available(why, sizeof why)) cr_skip_test("NVRTC not loadable: %s", why);
  size_t n;
  char *src = slurp(NV_KERNDIR "/saxpy.cu", &n);
  const char *defs[] = {"UNUSED_FLAG=1"};
  hsad_nv_compile_options_t o = {.target = "sm_90", .defines = defs, .define_count = 1};
  void *cubin = NULL;
  size_t size = 0;
  char *log = NULL;
  cr_assert_eq(hsad_nv_compile(src, "saxpy.cu", &o, &cubin, &size, &log), HSAD_OK, "%s",
               hsad_last_error());
  hsad_nv_program_t *p = NULL;
  cr_assert_eq(hsad_nv_program_open_memory(cubin, size, "nvrtc", &p), HSAD_OK, "%s",
               hsad_last_error());
  const hsad_nv_entry_t *e = hsad_nv_program_entry(p, 0);
  cr_assert_str_eq(e->arch, "sm_90");
  const hsad_nv_kernel_info_t *k = kernel(e, "saxpy");
  cr_assert_eq(k->param_count, 4);
  cr_assert_eq(k->params[2].offset, 8);
  cr_assert_eq(k->params[3].size, 8);
  hsad_nv_program_destroy(p);
  free(cubin);
  free(log);
  /* a compile error comes back with NVRTC's log */
  cr_assert_eq(hsad_nv_compile("__global__ void k() { nope; }", "bad.cu", &o, &cubin, &size, NULL),
               HSAD_ERR_COMPILE);
  cr_assert(strstr(hsad_last_error(), "bad.cu: nvrtcCompileProgram (sm_90): NVRTC_ERROR_COMPILATION\n"),
            "%s", hsad_last_error());
  cr_assert(strstr(hsad_last_error(), "identifier \"nope\" is undefined"), "%s", hsad_last_error());
  o.target = "compute_90";
  cr_assert_eq(hsad_nv_compile(src, "saxpy.cu", &o, &cubin, &size, NULL), HSAD_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(hsad_last_error(),
                   "saxpy.cu: target 'compute_90' is not a real architecture sm_NN (e.g. sm_90, sm_90a)");
  free(src);
}

/* ---- hsad inspect: exact output against the committed references (run in tests/data/nvidia) */
Test(nv_cli, inspect_outputs_equal_the_references) {
  static const char *const runs[] = {
      "pressure.sm_90.cubin --pressure --kernel pressure_bounded", "byval.fatbin",
      "byval.compressed.fatbin --json", "saxpy.ptx", "shared.sm_90.cubin --json --pressure --block 256"};
  for (size_t i = 0; i < 5; i++) {
    char cmd[1024], ref[512];
    snprintf(cmd, sizeof cmd, "cd " NV_DATADIR " && " NV_HSAD " inspect %s", runs[i]);
    snprintf(ref, sizeof ref, NVDATA "inspect.");
    size_t at = strlen(ref);
    for (const char *c = runs[i]; *c && at < sizeof ref - 5; c++)
      if (*c != '-') ref[at++] = *c == ' ' ? '_' : *c;
    memcpy(ref + at, ".txt", 5);
    size_t n;
    char *want = slurp(ref, &n), got[65536];
    FILE *p = popen(cmd, "r");
    size_t m = fread(got, 1, sizeof got - 1, p);
    got[m] = 0;
    cr_assert_eq(pclose(p), 0, "%s", cmd);
    cr_assert_str_eq(got, want, "%s", cmd);
    free(want);
  }
}
