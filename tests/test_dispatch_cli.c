/* test_dispatch_cli.c - the hsad commands of issue 4 end to end: info, run (comgr source and a
 * code object, outputs, JSON, errors) and run --help. hsad selects kfd-emu itself when there is
 * no /dev/kfd. */
#include <stdio.h>
#include <stdlib.h>

#include "tests/test_dispatch_util.h"

#ifndef HSAD_BIN
#define HSAD_BIN "build/bin/hsad"
#endif

/* Runs `cmd` (stderr merged), returns the exit status and the output (malloc'd). */
static int sh(const char *cmd, char **out) {
  char full[4096];
  snprintf(full, sizeof full, "%s 2>&1", cmd);
  FILE *p = popen(full, "r");
  cr_assert_not_null(p);
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  size_t got;
  while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
    n += got;
    if (n + 1 == cap) buf = realloc(buf, cap *= 2);
  }
  buf[n] = '\0';
  int st = pclose(p);
  *out = buf;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(dispatch_cli, info_text_and_json, .timeout = 120) {
  char *o;
  cr_assert_eq(sh(HSAD_BIN " info", &o), 0, "%s", o);
  cr_assert(strstr(o, "GPU 0: gfx90a"), "%s", o);
  cr_assert(strstr(o, "ISA amdgcn-amd-amdhsa--gfx90a"), "%s", o);
  cr_assert(strstr(o, "104 CUs x 4 SIMDs, wavefront 64"), "%s", o);
  cr_assert(strstr(o, "LDS 65536 bytes per workgroup"), "%s", o);
  cr_assert(strstr(o, "nearest CPU agent 0 (NUMA node 0)"), "%s", o);
  cr_assert(strstr(o, "CPU agent 0:") && strstr(o, "NUMA node 0"), "%s", o);
  free(o);
  cr_assert_eq(sh("KFD_EMU_GPUS=2 KFD_EMU_CPU_NODES=2 " HSAD_BIN " info --json", &o), 0, "%s", o);
  cr_assert(strstr(o, "\"numa_node\": 1"), "%s", o);
  cr_assert(strstr(o, "\"index\": 1, \"name\": \"gfx90a\""), "%s", o);
  cr_assert(strstr(o, "\"nearest_cpu\": 1, \"nearest_cpu_numa_node\": 1"), "%s", o);
  cr_assert(strstr(o, "\"lds_bytes\": 65536"), "%s", o);
  free(o);
}

Test(dispatch_cli, run_source_and_code_object, .timeout = 120) {
  char *o, cmd[2048];
  char tmp[] = "/tmp/hsad-cli-XXXXXX";
  cr_assert_not_null(mkdtemp(tmp));
  snprintf(cmd, sizeof cmd, "cd %s && %s run kernels/saxpy.cl saxpy --grid 1000 --block 128 "
           "--arg f32:2 --arg buf:f32:1000:iota --arg buf:f32:1000:const=1:out:txt=%s/y.txt "
           "--arg u32:1000 --repeat 3", HSAD_SRCDIR, HSAD_BIN, tmp);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert(strstr(o, "compiled kernels/saxpy.cl with comgr"), "%s", o);
  cr_assert(strstr(o, "dispatch: 1D grid 1000x1x1, block 128x1x1, 3 time(s) in order"), "%s", o);
  cr_assert(strstr(o, "first: 1 7 13 19 25"), "%s", o); /* 1 + 3 * 2 * i */
  free(o);
  char path[512];
  snprintf(path, sizeof path, "%s/y.txt", tmp);
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f);
  for (int i = 0; i < 1000; i++) {
    float v;
    cr_assert_eq(fscanf(f, "%f", &v), 1);
    cr_assert_eq(v, 1.0f + 6.0f * (float)i, "y[%d] = %f", i, v);
  }
  fclose(f);
  /* a code object, JSON */
  snprintf(cmd, sizeof cmd, "%s run %s/vector_add-gfx90a-v5.hsaco vector_add --grid 100 "
           "--arg buf:f32:100:iota --arg buf:f32:100:const=0.5 --arg buf:f32:100 --arg u32:100 "
           "--json", HSAD_BIN, TEST_KERNDIR);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert(strstr(o, "\"kernel\": {\"name\": \"vector_add\", \"code_object_version\": 5"), "%s", o);
  cr_assert(strstr(o, "\"first\": [0.5, 1.5, 2.5, 3.5"), "%s", o);
  free(o);
  /* errors: ISA mismatch, grid 0, unknown kernel, bad --arg */
  snprintf(cmd, sizeof cmd, "%s run %s/saxpy-gfx908-v5.hsaco saxpy --grid 4", HSAD_BIN,
           TEST_KERNDIR);
  cr_assert_eq(sh(cmd, &o), 1, "%s", o);
  cr_assert(strstr(o, "HSAD_ERR_ISA_MISMATCH") && strstr(o, "targets gfx908"), "%s", o);
  free(o);
  snprintf(cmd, sizeof cmd, "%s run %s/saxpy-gfx90a-v5.hsaco nope --grid 4", HSAD_BIN, TEST_KERNDIR);
  cr_assert_eq(sh(cmd, &o), 1, "%s", o);
  cr_assert(strstr(o, "HSAD_ERR_KERNEL_NOT_FOUND") && strstr(o, "'nope'"), "%s", o);
  free(o);
  snprintf(cmd, sizeof cmd, "%s run %s/saxpy-gfx90a-v5.hsaco saxpy --grid 4 --arg buf:q32:4",
           HSAD_BIN, TEST_KERNDIR);
  cr_assert_eq(sh(cmd, &o), 2, "%s", o);
  cr_assert(strstr(o, "--arg buf:q32:4: not a valid SPEC"), "%s", o);
  free(o);
  cr_assert_eq(sh(HSAD_BIN " run --help", &o), 0, "%s", o);
  cr_assert(strstr(o, "buf:TYPE:COUNT[:INIT][:out[=FILE]][:txt=FILE]"), "%s", o);
  cr_assert(strstr(o, "random[=SEED]"), "%s", o);
  free(o);
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  cr_assert_eq(system(cmd), 0);
}
