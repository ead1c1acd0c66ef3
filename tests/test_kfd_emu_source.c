/* test_kfd_emu_source.c - issue 20: kfd-emu runs a kernel from its own OpenCL C source (POCL),
 * through `hsad run`, with exact values computed here: a user's `saxpy` whose body is
 * y = a*x - y (19, not the built-in twin's 21), a 2-D transpose with __local tiles and barriers
 * (static and dynamic LDS, partial workgroups at both edges), a struct by value and the
 * work-item functions of a partial last workgroup, atomics across workgroups, and a source POCL
 * rejects (an hsad error with the build log). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef TEST_HSAD
#define TEST_HSAD "build/bin/hsad"
#endif
#ifndef TEST_DATA
#define TEST_DATA "tests/data/pocl"
#endif

/* Runs hsad run ARGS --json; returns its stdout (malloc'd) and exit status. */
static char *ts_run(const char *args, int *out_rc) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s run %s --json 2>/dev/null", TEST_HSAD, args);
  FILE *p = popen(cmd, "r");
  cr_assert(p, "popen %s", cmd);
  char *text = calloc(1, 1 << 16);
  size_t n = fread(text, 1, (1 << 16) - 1, p);
  text[n] = 0;
  *out_rc = WEXITSTATUS(pclose(p));
  return text;
}

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
