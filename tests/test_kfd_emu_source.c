/* test_kfd_emu_source.c - issue 20: kfd-emu runs a kernel from its own OpenCL C source (POCL),
 * through `hsad run`, with exact values computed here: a user's `saxpy` whose body is
 * y = a*x - y (19, not the built-in twin's 21), a 2-D transpose with __local tiles and barriers
 * (static and dynamic LDS, partial workgroups at both edges), a struct by value and the
 * work-item functions of a partial last workgroup, atomics across workgroups, and a source POCL
 * rejects (an hsad error with the build log). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#ifndef TEST_HSAD
#define TEST_HSAD "build/bin/hsad"
#endif
#ifndef TEST_DATA
#define TEST_DATA "tests/data/pocl"
#endif
#ifndef TEST_FOREIGN
#define TEST_FOREIGN "build/tests/data/foreign_scale-gfx90a.hsaco"
#endif
#ifndef TEST_KERNDIR
#define TEST_KERNDIR "build/kernels"
#endif

/* Runs ENV hsad run ARGS --json; returns its stdout (malloc'd) and exit status. */
static char *ts_run_env(const char *env, const char *args, int *out_rc) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "%s %s run %s --json 2>/dev/null", env, TEST_HSAD, args);
  FILE *p = popen(cmd, "r");
  cr_assert(p, "popen %s", cmd);
  char *text = calloc(1, 1 << 16);
  size_t n = fread(text, 1, (1 << 16) - 1, p);
  text[n] = 0;
  *out_rc = WEXITSTATUS(pclose(p));
  return text;
}

static char *ts_run(const char *args, int *out_rc) { return ts_run_env("", args, out_rc); }

static void ts_read(const char *path, void *out, size_t bytes) {
  FILE *f = fopen(path, "rb");
  cr_assert(f, "%s", path);
  cr_assert_eq(fread(out, 1, bytes, f), bytes);
  fclose(f);
}

Test(kfd_emu_source, own_saxpy_runs_its_source_not_the_twin) {
  int rc;
  char *o = ts_run(TEST_DATA "/own_saxpy.cl saxpy --grid 4 --block 4 --arg f32:2 "
                   "--arg buf:f32:4:const=10 --arg buf:f32:4:const=1:out=/tmp/ts_saxpy.bin "
                   "--arg u32:4", &rc);
  cr_assert_eq(rc, 0, "%s", o);
  float y[4];
  ts_read("/tmp/ts_saxpy.bin", y, sizeof y);
  for (int i = 0; i < 4; i++) cr_assert_eq(y[i], 2.0f * 10.0f - 1.0f, "y[%d] = %g", i, y[i]);
  cr_assert(!strstr(o, "host twin"), "%s", o);
  free(o);
}

static void ts_transpose(const char *kernel, const char *extra) {
  enum { ROWS = 24, COLS = 40 };
  char args[512];
  snprintf(args, sizeof args, TEST_DATA "/transpose.cl %s --grid %d,%d --block 16,16 "
           "--arg buf:f32:%d:iota --arg buf:f32:%d:out=/tmp/ts_%s.bin --arg u32:%d --arg u32:%d%s",
           kernel, COLS, ROWS, ROWS * COLS, ROWS * COLS, kernel, ROWS, COLS, extra);
  int rc;
  char *o = ts_run(args, &rc);
  cr_assert_eq(rc, 0, "%s", o);
  free(o);
  static float out[ROWS * COLS];
  char path[64];
  snprintf(path, sizeof path, "/tmp/ts_%s.bin", kernel);
  ts_read(path, out, sizeof out);
  for (int y = 0; y < ROWS; y++)
    for (int x = 0; x < COLS; x++)
      cr_assert_eq(out[x * ROWS + y], (float)(y * COLS + x), "out[%d][%d]", x, y);
}

Test(kfd_emu_source, transpose_local_tiles_partial_workgroups) { ts_transpose("transpose", ""); }
Test(kfd_emu_source, transpose_dynamic_lds) { ts_transpose("transpose_dyn", " --arg lds:1088"); }

Test(kfd_emu_source, struct_by_value_and_partial_last_workgroup_geometry) {
  /* struct params { int bias; float4 scale; uint4 tag; }: bias 7, scale.y 3, tag.w 5 */
  int rc;
  char *o = ts_run(TEST_DATA "/geometry.cl geometry --grid 10 --block 4 "
                   "--arg buf:u32:10:out=/tmp/ts_geo.bin --arg hex:07000000"
                   "000000000000000000000000" "0000000000004040" "0000000000000000"
                   "000000000000000000000000" "05000000", &rc);
  cr_assert_eq(rc, 0, "%s", o);
  free(o);
  uint32_t out[10];
  ts_read("/tmp/ts_geo.bin", out, sizeof out);
  for (uint32_t i = 0; i < 10; i++) {
    uint32_t group = i / 4, local = group == 2 ? 2 : 4;
    cr_assert_eq(out[i], group * 1000000 + 3 * 10000 + local * 100 + 10 + 7 + 3 + 5, "out[%u] = %u",
                 i, out[i]);
  }
}

Test(kfd_emu_source, atomics_across_workgroups) {
  int rc;
  char *o = ts_run(TEST_DATA "/geometry.cl atomic_sum --grid 100 --block 16 "
                   "--arg buf:u32:1:out=/tmp/ts_sum.bin", &rc);
  cr_assert_eq(rc, 0, "%s", o);
  free(o);
  uint32_t sum;
  ts_read("/tmp/ts_sum.bin", &sum, 4);
  cr_assert_eq(sum, 100 * 101 / 2);
}

Test(kfd_emu_source, source_pocl_rejects_is_an_error_with_the_log) {
  int rc;
  char *o = ts_run(TEST_DATA "/pocl_rejects.cl amd_only --grid 1 --arg buf:u32:1:out", &rc);
  cr_assert_neq(rc, 0);
  cr_assert(strstr(o, "\"HSAD_ERR_COMPILE\"") && strstr(o, "POCL cannot build") &&
            strstr(o, "__builtin_amdgcn_workitem_id_x"), "%s", o);
  free(o);
}

/* ---- twins against sources (issue 20) -------------------------------------------------------
 * The hand twins of kernels/ (kernels/twins.c) stay as a cross-check: every OpenCL kernel there
 * that has one runs both ways on the same inputs, from its code object's carried source through
 * POCL (the default) and through its twin (KFD_EMU_KERNEL_MODE=twin), and the result arrays must
 * be equal byte for byte and equal to values computed here. */
typedef struct tw_case {
  const char *file, *kernel, *args; /* args: "%s" where the output buffer's file goes */
  size_t bytes;                     /* of the output buffer */
  void (*expect)(const void *out);
} tw_case_t;

static void tw_vector_add(const void *o) {
  const float *c = o;
  for (int i = 0; i < 1000; i++) cr_assert_eq(c[i], (float)i + 0.5f, "c[%d] = %g", i, c[i]);
}
static void tw_saxpy(const void *o) {
  const float *y = o;
  for (int i = 0; i < 1000; i++) cr_assert_eq(y[i], fmaf(2.5f, (float)i, 1.0f), "y[%d]", i);
}
static void tw_fill(const void *o) {
  const uint32_t *d = o;
  for (uint32_t i = 0; i < 100; i++) cr_assert_eq(d[i], i < 90 ? 9u : 0u, "dst[%u]", i);
}
static void tw_lds_reduce(const void *o) {
  /* partial[g] = in[256g] + ... + in[min(256g + 255, 999)], in = iota: integer sums, exact */
  const float *p = o;
  for (uint32_t g = 0; g < 4; g++) {
    uint32_t lo = 256 * g, hi = g == 3 ? 999 : 256 * g + 255;
    cr_assert_eq(p[g], (float)((lo + hi) * (hi - lo + 1) / 2), "partial[%u] = %g", g, p[g]);
  }
}
static void tw_big_private(const void *o) {
  const uint32_t *out = o;
  for (uint32_t s = 0; s < 64; s++) { /* kernels/big_private.cl's walk, in = iota */
    uint32_t pr[1024], j = s & 1023, acc = 0;
    for (uint32_t k = 0; k < 1024; k++) pr[k] = s ^ (k * 2654435761u);
    for (uint32_t k = 0; k < 1024; k++) acc += pr[j], j = (j * 5 + 1) & 1023;
    cr_assert_eq(out[s], acc, "out[%u]", s);
  }
}
static void tw_count_dispatch(const void *o) { cr_assert_eq(*(const uint32_t *)o, 5u); }
static void tw_order_record(const void *o) {
  const uint32_t *slots = o; /* counter starts at 7: slot 2 gets the ticket 7 */
  for (uint32_t i = 0; i < 4; i++) cr_assert_eq(slots[i], i == 2 ? 7u : 0u, "slots[%u]", i);
}
static void tw_struct_1k(const void *o) {
  const uint32_t *out = o;
  for (uint32_t i = 0; i < 300; i++) cr_assert_eq(out[i], 1 + i, "out[%u]", i);
}
static void tw_struct_4k(const void *o) {
  const uint32_t *out = o;
  for (uint32_t i = 0; i < 300; i++) cr_assert_eq(out[i], 2 + i, "out[%u]", i);
}
static void tw_scale4(const void *o) {
  const float *y = o;
  for (int i = 0; i < 32; i++) cr_assert_eq(y[i], (float)i * (float)(i % 4 + 1), "y[%d]", i);
}
static void tw_args72(const void *o) {
  const uint64_t *out = o;
  for (uint64_t i = 0; i < 72; i++) cr_assert_eq(out[i], i * 1000003u + 7, "out[%lu]", i);
}

static char tw_args72_spec[2048];
static tw_case_t tw_cases[] = {
    {"vector_add", "vector_add", "--grid 1000 --block 256 --arg buf:f32:1000:iota "
     "--arg buf:f32:1000:const=0.5 --arg buf:f32:1000:out=%s --arg u32:1000", 4000, tw_vector_add},
    {"saxpy", "saxpy", "--grid 1000 --block 256 --arg f32:2.5 --arg buf:f32:1000:iota "
     "--arg buf:f32:1000:const=1:out=%s --arg u32:1000", 4000, tw_saxpy},
    {"fill", "fill", "--grid 100 --block 32 --arg buf:u32:100:out=%s --arg u32:9 --arg u32:90",
     400, tw_fill},
    {"lds_reduce", "lds_reduce", "--grid 1000 --block 256 --arg buf:f32:1000:iota "
     "--arg buf:f32:4:out=%s --arg u32:1000", 16, tw_lds_reduce},
    {"lds_reduce", "lds_reduce_dyn", "--grid 1000 --block 256 --arg buf:f32:1000:iota "
     "--arg buf:f32:4:out=%s --arg u32:1000 --arg lds:1024", 16, tw_lds_reduce},
    {"big_private", "big_private", "--grid 64 --arg buf:u32:64:iota --arg buf:u32:64:out=%s "
     "--arg u32:64", 256, tw_big_private},
    {"count_dispatch", "count_dispatch", "--grid 64 --arg buf:u32:1:out=%s --arg u32:5", 4,
     tw_count_dispatch},
    {"order_record", "order_record", "--grid 1 --arg buf:u32:1:const=7 --arg buf:u32:4:out=%s "
     "--arg u32:2", 16, tw_order_record},
    {"big_args", "struct_1k", "--grid 300 --arg buf:u32:300:out=%s --arg hex:01000000*256 "
     "--arg u32:300", 1200, tw_struct_1k},
    {"big_args", "struct_4k", "--grid 300 --arg buf:u32:300:out=%s --arg hex:02000000*1024 "
     "--arg u32:300", 1200, tw_struct_4k},
    {"big_args", "scale4", "--grid 8 --arg buf:f32:32:iota:out=%s --arg f32:1,2,3,4 "
     "--arg u32:8", 128, tw_scale4},
    {"big_args", "args72", tw_args72_spec, 576, tw_args72},
};

/* parameters by index: a test runs in a process of its own, where the cases' pointers differ */
static int tw_index[sizeof tw_cases / sizeof tw_cases[0]];
ParameterizedTestParameters(kfd_emu_source, twin_equals_source) {
  for (int i = 0; i < (int)(sizeof tw_index / sizeof tw_index[0]); i++) tw_index[i] = i;
  return cr_make_param_array(int, tw_index, sizeof tw_index / sizeof tw_index[0]);
}

/* Runs the case in one mode; the output buffer's bytes into out (size c->bytes). */
static void tw_run(const tw_case_t *c, bool twin, void *out) {
  char path[128], spec[2048], args[4096];
  snprintf(path, sizeof path, "/tmp/tw_%d_%s_%s.bin", (int)getpid(), c->kernel,
           twin ? "twin" : "source");
  snprintf(spec, sizeof spec, c->args, path);
  snprintf(args, sizeof args, "%s/%s-gfx90a-v5.hsaco %s %s", TEST_KERNDIR, c->file, c->kernel,
           spec);
  int rc;
  char *o = ts_run_env(twin ? "KFD_EMU_KERNEL_MODE=twin" : "", args, &rc);
  cr_assert_eq(rc, 0, "%s", o);
  char said[256];
  snprintf(said, sizeof said, "\"ran host twin of '%s' (KFD_EMU_KERNEL_MODE=twin; it has "
           "source)\"", c->kernel);
  if (twin) cr_assert(strstr(o, said), "%s", o);
  else cr_assert(!strstr(o, "host twin"), "%s", o);
  free(o);
  ts_read(path, out, c->bytes);
  unlink(path);
}

ParameterizedTest(int *index, kfd_emu_source, twin_equals_source, .timeout = 120) {
  const tw_case_t *c = &tw_cases[*index];
  if (c->args == tw_args72_spec) { /* 72 ulongs: a_i = i * 1000003 + 7 */
    int n = snprintf(tw_args72_spec, sizeof tw_args72_spec, "--grid 1 --arg buf:u64:72:out=%%s");
    for (uint64_t i = 0; i < 72; i++)
      n += snprintf(tw_args72_spec + n, sizeof tw_args72_spec - (size_t)n, " --arg u64:%lu",
                    i * 1000003u + 7);
  }
  void *src = calloc(1, c->bytes), *twin = calloc(1, c->bytes);
  tw_run(c, false, src);
  tw_run(c, true, twin);
  c->expect(src);
  c->expect(twin);
  cr_assert(!memcmp(src, twin, c->bytes), "%s: source and twin results differ", c->kernel);
  free(src);
  free(twin);
}

/* ---- hsad run --source and -I (issue 20) ---------------------------------------------------- */

/* scale3's result: y = iota * 2 + 3 (tests/data/pocl/foreign_scale.cl with inc/scale_op.h) */
static void ts_scale3_check(const char *path) {
  float y[8];
  ts_read(path, y, sizeof y);
  unlink(path);
  for (int i = 0; i < 8; i++) cr_assert_eq(y[i], (float)i * 2.0f + 3.0f, "y[%d] = %g", i, y[i]);
}
#define TS_SCALE3_ARGS "scale3 --grid 8 --arg buf:f32:8:iota:out=/tmp/ts_scale3.bin --arg f32:2 " \
  "--arg u32:8"

/* a code object from elsewhere (no carried source), its source given with --source; the source's
 * include comes from -I, its nested include from next to that: made self-contained for POCL */
Test(kfd_emu_source, source_option_with_include_folder_runs_foreign_code_object) {
  int rc;
  char *o = ts_run(TEST_FOREIGN " " TS_SCALE3_ARGS " --source " TEST_DATA "/foreign_scale.cl -I "
                   TEST_DATA "/inc", &rc);
  cr_assert_eq(rc, 0, "%s", o);
  cr_assert(strstr(o, "\"warnings\": [ ]"), "%s", o);
  free(o);
  ts_scale3_check("/tmp/ts_scale3.bin");
}

/* hsad run FILE.cl -I DIR: the carried source has its includes inlined, so kfd-emu builds it */
Test(kfd_emu_source, compiled_source_with_include_folder_carries_its_includes) {
  int rc;
  char *o = ts_run(TEST_DATA "/foreign_scale.cl " TS_SCALE3_ARGS " -I " TEST_DATA "/inc", &rc);
  cr_assert_eq(rc, 0, "%s", o);
  free(o);
  ts_scale3_check("/tmp/ts_scale3.bin");
}

/* without -I the given source does not build under POCL: hsad run's error has POCL's log */
Test(kfd_emu_source, source_option_without_its_include_folder_is_a_build_error) {
  int rc;
  char *o = ts_run(TEST_FOREIGN " " TS_SCALE3_ARGS " --source " TEST_DATA "/foreign_scale.cl",
                   &rc);
  cr_assert_eq(rc, 1, "%s", o);
  cr_assert(strstr(o, "\"status\": \"HSAD_ERR_COMPILE\""), "%s", o);
  cr_assert(strstr(o, "\"message\": \"HSAD_ERR_COMPILE: " TEST_FOREIGN ": kfd-emu: "
                   "KFD_EMU_CL_SOURCE: kernel scale3: POCL cannot build its source (error -11, "
                   "options ''): "), "%s", o);
  cr_assert(strstr(o, "'scale_op.h' file not found"), "%s", o);
  free(o);
}

#define TS_NO_CODE(k)                                                                         \
  "kernel " k " has neither source nor a host twin: build its code object with hsad (hsad "   \
  "compile, hsad run FILE.cl, hsad_codeobj_compile), which carries the OpenCL C source, or "  \
  "name the source in KFD_EMU_CL_SOURCE=FILE.cl (hsad run --source FILE.cl); or give a twin " \
  "kfd_emu_twin_" k " in KFD_EMU_TWINS (kfd_emu_twin.h); KFD_EMU_NO_TWIN=noop completes it "   \
  "unexecuted"

/* neither source nor twin: hsad's own message and --json error object name the kernel and both
 * remedies (not only kfd-emu's stderr) */
Test(kfd_emu_source, neither_source_nor_twin_json_error_names_both_remedies) {
  int rc;
  char *o = ts_run(TEST_FOREIGN " " TS_SCALE3_ARGS, &rc);
  cr_assert_eq(rc, 1, "%s", o);
  cr_assert_str_eq(o, "{ \"error\": { \"command\": \"run\", \"status\": \"HSAD_ERR_UNSUPPORTED\", "
                   "\"exit_code\": 1, \"message\": \"HSAD_ERR_UNSUPPORTED: " TEST_FOREIGN ": "
                   TS_NO_CODE("scale3") "\" } }\n");
  free(o);
}

/* --source naming a file without the kernel: an error naming both, not a silent twin or no-op */
Test(kfd_emu_source, source_option_without_the_kernel_is_an_error) {
  int rc;
  char *o = ts_run(TEST_FOREIGN " " TS_SCALE3_ARGS " --source " TEST_DATA "/no_scale3.cl", &rc);
  cr_assert_eq(rc, 1, "%s", o);
  cr_assert_str_eq(o, "{ \"error\": { \"command\": \"run\", \"status\": "
                   "\"HSAD_ERR_KERNEL_NOT_FOUND\", \"exit_code\": 1, \"message\": "
                   "\"HSAD_ERR_KERNEL_NOT_FOUND: --source " TEST_DATA "/no_scale3.cl has no "
                   "kernel 'scale3' (kfd-emu: " TS_NO_CODE("scale3") ")\" } }\n");
  free(o);
}

Test(kfd_emu_source, source_option_usage_errors) {
  int rc;
  char *o = ts_run(TEST_FOREIGN " " TS_SCALE3_ARGS " --source " TEST_DATA "/inc/scale_op.h", &rc);
  cr_assert_eq(rc, 2, "%s", o);
  cr_assert_str_eq(o, "{ \"error\": { \"command\": \"run\", \"status\": \"usage\", \"exit_code\": "
                   "2, \"message\": \"--source " TEST_DATA "/inc/scale_op.h: expected an "
                   "OpenCL C file (.cl)\" } }\n");
  free(o);
  o = ts_run(TEST_DATA "/own_saxpy.cl saxpy --grid 4 --source " TEST_DATA "/own_saxpy.cl", &rc);
  cr_assert_eq(rc, 2, "%s", o);
  cr_assert_str_eq(o, "{ \"error\": { \"command\": \"run\", \"status\": \"usage\", \"exit_code\": "
                   "2, \"message\": \"--source " TEST_DATA "/own_saxpy.cl: gives the source of "
                   "a code object from elsewhere; " TEST_DATA "/own_saxpy.cl is compiled here "
                   "and carries its own source\" } }\n");
  free(o);
  o = ts_run(TEST_FOREIGN " " TS_SCALE3_ARGS " --source /nonexistent/k.cl", &rc);
  cr_assert_eq(rc, 1, "%s", o);
  cr_assert_str_eq(o, "{ \"error\": { \"command\": \"run\", \"status\": \"error\", \"exit_code\": "
                   "1, \"message\": \"--source /nonexistent/k.cl: No such file or directory\" } }\n");
  free(o);
}

/* a twin run is said once per kernel, however many dispatches (--repeat 3) */
Test(kfd_emu_source, host_twin_said_once_per_kernel) {
  int rc;
  char *o = ts_run_env("KFD_EMU_KERNEL_MODE=twin", TEST_KERNDIR "/fill-gfx90a-v5.hsaco fill "
                       "--grid 4 --arg buf:u32:4:out --arg u32:9 --arg u32:4 --repeat 3", &rc);
  cr_assert_eq(rc, 0, "%s", o);
  cr_assert(strstr(o, "\"warnings\": [ \"ran host twin of 'fill' (KFD_EMU_KERNEL_MODE=twin; it "
                   "has source)\" ]"), "%s", o);
  free(o);
}
