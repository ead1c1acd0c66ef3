/* test_nvidia_run.c - `hsad run` on an NVIDIA device (issue 19), end to end through the hsad
 * binary: a CUDA source compiled with NVRTC for the device's sm (-D and -I passed on), a cubin,
 * a fatbin and a PTX file (nvcc's, of tests/data/nvidia/nv_kernels.cu), the --arg checks against
 * the cubin's parameter sizes and a C++ kernel's mangled types, dynamic shared memory, --repeat
 * as an in-order chain, --json, and exact outputs (every element of the out= files).
 *
 * The NVIDIA device is the first with "vendor": "nvidia" in `hsad info --json` (after the AMD
 * ones where there are). Without one this binary skips every test, saying why; its twin
 * test_nvidia_run_mock runs it against tools/cuda-mock (HSAD_LIBCUDA), where the kernels run as
 * host twins: there a missing device is a failure. Files nvcc did not make (no nvcc at build
 * time) skip their tests with the reason. */
#define _GNU_SOURCE /* asprintf */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef HSAD_BIN
#define HSAD_BIN "build/bin/hsad"
#endif
#ifndef NV_DATADIR
#define NV_DATADIR "tests/data/nvidia"
#endif
#ifndef NV_CUBIN
#define NV_CUBIN "build/tests/nvidia/nv_kernels-sm_90.cubin"
#endif
#ifndef NV_FATBIN
#define NV_FATBIN "build/tests/nvidia/nv_kernels.fatbin"
#endif
#ifndef NV_PTX
#define NV_PTX "build/tests/nvidia/nv_kernels.ptx"
#endif

#ifdef NV_MOCK_LIB
__attribute__((constructor)) static void use_the_mock(void) {
  setenv("HSAD_LIBCUDA", NV_MOCK_LIB, 1);
}
#endif

#define SRC NV_DATADIR "/nv_run.cu"
#define SRCOPTS "-DHSAD_RUN_TEST -I" NV_DATADIR "/include"

TestSuite(nvidia_run, .timeout = 120);

/* Runs `cmd` with sh; *out and *err (malloc'd) get stdout and stderr. Returns the exit code. */
static int sh(const char *cmd, char **out, char **err) {
  char errf[] = "/tmp/hsad-nvrun-XXXXXX";
  int fd = mkstemp(errf);
  cr_assert_geq(fd, 0);
  close(fd);
  char *full = NULL;
  cr_assert_geq(asprintf(&full, "%s 2>%s", cmd, errf), 0);
  FILE *p = popen(full, "r");
  cr_assert_not_null(p);
  size_t cap = 1 << 16, n = 0;
  char *b = malloc(cap);
  for (size_t r; (r = fread(b + n, 1, cap - n - 1, p)) > 0;) {
    n += r;
    if (cap - n < 4096) b = realloc(b, cap *= 2);
  }
  b[n] = '\0';
  int st = pclose(p);
  FILE *f = fopen(errf, "r");
  size_t en = 0;
  char *e = calloc(1, 1 << 16);
  if (f) {
    en = fread(e, 1, (1 << 16) - 1, f);
    fclose(f);
  }
  e[en] = '\0';
  unlink(errf);
  free(full);
  *out = b;
  if (err) *err = e;
  else free(e);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The index of the first NVIDIA device and its sm name ("sm_90"), or skips the test. */
static unsigned nv_device(char sm[16]) {
  char *o, *e;
  int rc = sh(HSAD_BIN " info --json", &o, &e);
#ifndef NV_MOCK_LIB
  if (rc == 1 && strstr(o, "HSAD_ERR_NO_DEVICE")) cr_skip_test("no GPU: %s", o);
#endif
  cr_assert_eq(rc, 0, "hsad info --json: exit %d: %s%s", rc, o, e);
  json_object *j = json_tokener_parse(o), *gpus;
  cr_assert_not_null(j, "not JSON: %s", o);
  cr_assert(json_object_object_get_ex(j, "gpus", &gpus));
  for (size_t i = 0; i < json_object_array_length(gpus); i++) {
    json_object *g = json_object_array_get_idx(gpus, i), *v;
    if (json_object_object_get_ex(g, "vendor", &v) &&
        !strcmp(json_object_get_string(v), "nvidia")) {
      unsigned idx = (unsigned)json_object_get_int(json_object_object_get(g, "index"));
      snprintf(sm, 16, "%s", json_object_get_string(json_object_object_get(g, "name")));
      json_object_put(j);
      free(o);
      free(e);
      return idx;
    }
  }
  json_object_put(j);
#ifdef NV_MOCK_LIB
  cr_assert_fail("no NVIDIA device with the mock (%s): %s", NV_MOCK_LIB, o);
#else
  cr_skip_test("no NVIDIA GPU (hsad info --json lists none)");
#endif
  return 0;
}

/* hsad run --device N ARGS: the exit code, stdout and stderr. */
static int run(char **out, char **err, const char *fmt, ...) {
  char sm[16];
  unsigned d = nv_device(sm);
  char args[4096], cmd[4400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, HSAD_BIN " run --device %u %s", d, args);
  return sh(cmd, out, err);
}

static void *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s", path);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  void *b = malloc(*n + 1);
  cr_assert_eq(fread(b, 1, *n, f), *n);
  fclose(f);
  return b;
}

/* saxpy over 2^20 + 3 floats (a partial last block of 256), from the source: every y exact. */
Test(nvidia_run, saxpy_source_exact) {
  char sm[16], *o, *e, line[256];
  nv_device(sm);
  const unsigned n = (1u << 20) + 3;
  char yf[] = "/tmp/hsad-nvrun-y-XXXXXX";
  close(mkstemp(yf));
  int rc = run(&o, &e, SRC " saxpy " SRCOPTS " --grid %u --block 256 --arg f32:2.5 "
               "--arg buf:f32:%u:iota --arg buf:f32:%u:const=1:out=%s --arg u32:%u", n, n, n, yf,
               n);
  cr_assert_eq(rc, 0, "exit %d: %s%s", rc, o, e);
  snprintf(line, sizeof line, "compiled " SRC " with NVRTC for %s in ", sm);
  cr_expect(strstr(o, line), "no '%s' in:\n%s", line, o);
  cr_expect(strstr(o, "kernel saxpy: "), "%s", o);
  cr_expect(strstr(o, "dispatch: 1D grid 1048579x1x1, block 256x1x1, 1 time(s) in order; "
                      "4097x1x1 blocks per launch\n"), "%s", o);
  /* 2.5 i + 1 is exact in f32 for i < 2^21; the sum (in double) too */
  cr_expect(strstr(o, "arg 2 (f32 x 1048579): sum 1.37439714e+12, min 1, max 2621446, first: 1 "
                      "3.5 6 8.5 11 13.5 16 18.5\n"), "%s", o);
  cr_expect(strstr(e, "hsad run: warning: kernel 'saxpy': 2 scalar argument(s) checked by size "
                      "only (an unmangled name, e.g. extern \"C\", carries no parameter types, "
                      "and CUDA code objects keep sizes only)\n"), "%s", e);
  size_t bytes;
  float *y = slurp(yf, &bytes);
  cr_assert_eq(bytes, (size_t)n * 4);
  unsigned bad = 0;
  for (unsigned i = 0; i < n; i++) bad += y[i] != 2.5f * (float)i + 1.0f;
  cr_expect_eq(bad, 0u, "%u of %u elements differ (y[%u] = %g)", bad, n, n - 1, y[n - 1]);
  free(y);
  unlink(yf);
  free(o);
  free(e);
}

/* --json: the device, the kernel's parameter sizes, the buffer's exact sum and first values. */
Test(nvidia_run, saxpy_json) {
  char sm[16], *o, *e;
  unsigned d = nv_device(sm);
  int rc = run(&o, &e, SRC " saxpy " SRCOPTS " --grid 1000 --block 256 --arg f32:2.5 "
               "--arg buf:f32:1000:iota --arg buf:f32:1000:const=1:out --arg u32:1000 --json");
  cr_assert_eq(rc, 0, "exit %d: %s%s", rc, o, e);
  cr_expect_str_eq(e, "", "--json writes nothing on stderr: %s", e);
  json_object *j = json_tokener_parse(o), *v;
  cr_assert_not_null(j, "not JSON: %s", o);
  json_object *dev = json_object_object_get(j, "device"), *k = json_object_object_get(j, "kernel");
  cr_expect_eq(json_object_get_int(json_object_object_get(dev, "index")), (int)d);
  cr_expect_str_eq(json_object_get_string(json_object_object_get(dev, "vendor")), "nvidia");
  cr_expect_str_eq(json_object_get_string(json_object_object_get(dev, "name")), sm);
  cr_expect_str_eq(json_object_get_string(json_object_object_get(k, "name")), "saxpy");
  cr_expect_str_eq(json_object_to_json_string(json_object_object_get(k, "param_sizes")),
                   "[ 4, 8, 8, 4 ]");
  cr_expect_eq(json_object_get_int(json_object_object_get(k, "param_bytes")), 28);
  cr_expect_str_eq(json_object_get_string(json_object_object_get(
                       json_object_object_get(j, "compile"), "target")), sm);
  json_object *b = json_object_array_get_idx(json_object_object_get(j, "buffers"), 1);
  cr_assert_not_null(b, "%s", o);
  cr_expect_eq(json_object_get_int(json_object_object_get(b, "arg")), 2);
  cr_expect_str_eq(json_object_to_json_string(json_object_object_get(b, "sum")), "1249750");
  cr_expect_str_eq(json_object_to_json_string(json_object_object_get(b, "first")),
                   "[ 1, 3.5, 6, 8.5, 11, 13.5, 16, 18.5 ]");
  cr_assert(json_object_object_get_ex(j, "warnings", &v));
  cr_expect_eq(json_object_array_length(v), 1u, "%s", o);
  json_object_put(j);
  free(o);
  free(e);
}

/* A by-value struct as hex: bytes at cuFuncGetParamInfo's offsets; every field back exactly. */
Test(nvidia_run, byval_struct) {
  char *o, *e;
  char tf[] = "/tmp/hsad-nvrun-t-XXXXXX";
  close(mkstemp(tf));
  /* struct mixed {char c = 7; short s = 300; int i = -5; double d = 1.25; char t[3] = 1,2,3} */
  int rc = run(&o, &e, SRC " byval " SRCOPTS " --grid 1 --arg i8:-3 "
               "--arg hex:07002c01fbffffff000000000000f43f0102030000000000 --arg f32:1.5,2,-3,4 "
               "--arg f64:0.125 --arg u64:123456789012 --arg buf:i64:12:out:txt=%s", tf);
  cr_assert_eq(rc, 0, "exit %d: %s%s", rc, o, e);
  cr_expect(strstr(o, "arg 5 (i64 x 12): sum 123456800934, min -30, max 123456789012, first: -3 "
                      "7 300 -5 1250 10203 15 20\n"), "%s", o);
  size_t n;
  char *t = slurp(tf, &n);
  t[n] = '\0';
  cr_expect_str_eq(t, "-3\n7\n300\n-5\n1250\n10203\n15\n20\n-30\n40\n125\n123456789012\n");
  free(t);
  unlink(tf);
  free(o);
  free(e);
}

/* A C++ kernel named by its plain name; its mangled types checked; --repeat 3 as a chain. */
Test(nvidia_run, cxx_kernel_types_and_repeat) {
  char *o, *e;
  int rc = run(&o, &e, SRC " scale " SRCOPTS " --grid 100 --arg buf:f32:100:iota:out "
               "--arg f32:3 --arg u32:100 --repeat 3");
  cr_assert_eq(rc, 0, "exit %d: %s%s", rc, o, e);
  cr_expect(strstr(o, "kernel _Z5scaleIfEvPT_S0_j: "), "%s", o);
  /* 27 i: in order, three times */
  cr_expect(strstr(o, "arg 0 (f32 x 100): sum 133650, min 0, max 2673, first: 0 27 54 81 108 "
                      "135 162 189\n"), "%s", o);
  cr_expect_str_eq(e, "", "a C++ kernel's scalars are typed: no warning: %s", e);
  free(o);
  free(e);
  rc = run(&o, &e, SRC " scale " SRCOPTS " --grid 100 --arg buf:f32:100 --arg u32:3 "
           "--arg u32:100");
  cr_expect_eq(rc, 1);
  cr_expect_str_eq(e, "hsad run: --arg u32:3: argument 1 of kernel '_Z5scaleIfEvPT_S0_j' is a "
                      "float: give f32:VALUE\n");
  free(o);
  free(e);
  rc = run(&o, &e, SRC " scale " SRCOPTS " --grid 100 --arg buf:i32:100 --arg f32:3 "
           "--arg u32:100");
  cr_expect_eq(rc, 1);
  cr_expect_str_eq(e, "hsad run: --arg buf:i32:100: argument 0 of kernel '_Z5scaleIfEvPT_S0_j' "
                      "is a float* (4-byte floating-point elements): give buf:f32:COUNT[:INIT], "
                      "not buf:i32\n");
  free(o);
  free(e);
  rc = run(&o, &e, SRC " scale " SRCOPTS " --grid 100 --arg f32:1 --arg f32:3 --arg u32:100");
  cr_expect_eq(rc, 1);
  cr_expect_str_eq(e, "hsad run: --arg f32:1: argument 0 of kernel '_Z5scaleIfEvPT_S0_j' is a "
                      "float*: give buf:TYPE:COUNT[:INIT]\n");
  free(o);
  free(e);
}

/* lds:BYTES last: the dynamic shared memory of extern __shared__. */
Test(nvidia_run, dynamic_shared_memory) {
  char *o, *e;
  int rc = run(&o, &e, SRC " dyn_reverse " SRCOPTS " --grid 8 --block 4 "
               "--arg buf:i32:8:iota:out --arg u32:4 --arg lds:16");
  cr_assert_eq(rc, 0, "exit %d: %s%s", rc, o, e);
  cr_expect(strstr(o, "shared 0 B static + 16 dynamic"), "%s", o);
  cr_expect(strstr(o, "arg 0 (i32 x 8): sum 28, min 0, max 7, first: 3 2 1 0 7 6 5 4\n"), "%s",
            o);
  free(o);
  free(e);
  rc = run(&o, &e, SRC " dyn_reverse " SRCOPTS " --grid 8 --block 4 --arg buf:i32:8 "
           "--arg lds:16 --arg u32:4");
  cr_expect_eq(rc, 1);
  cr_expect_str_eq(e, "hsad run: --arg lds:16: argument 1 of kernel 'dyn_reverse': lds:BYTES "
                      "(dynamic shared memory, extern __shared__) is not a parameter; give it "
                      "after the parameters\n");
  free(o);
  free(e);
}

/* The argument checks: count, sizes, a buffer for a 4-byte parameter; nothing runs. */
Test(nvidia_run, argument_messages) {
  char *o, *e;
  int rc = run(&o, &e, SRC " saxpy " SRCOPTS " --grid 100 --arg f32:1 --arg buf:f32:100 "
               "--arg u32:100");
  cr_expect_eq(rc, 1);
  cr_expect_str_eq(e, "hsad run: kernel 'saxpy' takes 4 parameter(s) (4 bytes, 8 bytes, 8 bytes, "
                      "4 bytes), got 3 --arg (lds:BYTES, its dynamic shared memory, not "
                      "counted)\n");
  free(o);
  free(e);
  rc = run(&o, &e, SRC " saxpy " SRCOPTS " --grid 100 --arg buf:f32:1 --arg buf:f32:100 "
           "--arg buf:f32:100 --arg u32:100");
  cr_expect_eq(rc, 1);
  cr_expect_str_eq(e, "hsad run: --arg buf:f32:1: argument 0 of kernel 'saxpy' is a 4-byte "
                      "parameter: a buffer is passed as an 8-byte pointer; give its value "
                      "(TYPE:VALUE, hex:BYTES or bin:FILE)\n");
  free(o);
  free(e);
  rc = run(&o, &e, SRC " byval " SRCOPTS " --grid 1 --arg i8:1 --arg hex:0700 "
           "--arg f32:1,2,3,4 --arg f64:1 --arg u64:1 --arg buf:i64:12 --json");
  cr_expect_eq(rc, 1);
  cr_expect(strstr(o, "\"status\": \"HSAD_ERR_ARG_KIND\", \"exit_code\": 1, \"message\": \"--arg "
                      "hex:0700: argument 1 of kernel 'byval' is 24 bytes, got 2 bytes\""), "%s",
            o);
  free(o);
  free(e);
  rc = run(&o, &e, SRC " nope " SRCOPTS " --grid 1");
  cr_expect_eq(rc, 1);
  cr_expect(strstr(e, "hsad run: HSAD_ERR_KERNEL_NOT_FOUND: " SRC ": no kernel named 'nope'; it "
                      "has "), "%s", e);
  cr_expect(strstr(e, "_Z5scaleIfEvPT_S0_j (void scale<float>(float*, float, unsigned int))"),
            "%s", e);
  free(o);
  free(e);
}

/* What only AMD has is refused with what serves the NVIDIA device; sources need their options. */
Test(nvidia_run, amd_only_options_refused) {
  char sm[16], *o, *e, want[512];
  unsigned d = nv_device(sm);
  int rc = run(&o, &e, NV_DATADIR "/nv_run.cl saxpy --grid 8");
  cr_expect_eq(rc, 1);
  cr_expect(strstr(e, "/nv_run.cl: device "), "%s", e);
  cr_expect(strstr(e, "is an NVIDIA GPU: give a CUDA source (.cu) or a .cubin, .fatbin or .ptx "
                      "file (OpenCL C, HIP and code objects are AMD's)\n"), "%s", e);
  free(o);
  free(e);
  (void)d;
  (void)want;
  rc = run(&o, &e, "x.ptx saxpy --grid 8 --variants auto");
  cr_expect_eq(rc, 2);
  cr_expect(!strncmp(e, "hsad run: --variants needs a source (.cu): register budgets are set "
                        "when the driver compiles its PTX, x.ptx is compiled already\n",
                     strlen("hsad run: --variants needs a source (.cu): register budgets are set "
                            "when the driver compiles its PTX, x.ptx is compiled already\n")),
            "%s", e);
  free(o);
  free(e);
  rc = run(&o, &e, NV_DATADIR "/nv_variants.cu heavy --grid 8 --variants 0:0,x9");
  cr_expect_eq(rc, 2);
  cr_expect(!strncmp(e, "hsad run: --variants 0:0,x9: entry 1 'x9': expected rN (at most N "
                        "registers per thread) or T:B (at most T threads per block, at least B "
                        "blocks per SM: __launch_bounds__(T, B); 0 = not set, 0:0 = as written)\n",
                     200), "%s", e);
  free(o);
  free(e);
  rc = run(&o, &e, NV_DATADIR "/nv_variants.cu heavy --grid 8 --variants 0:0,r16 "
           "--arg buf:u32:8 --arg buf:u32:8 --arg u32:8 --arg u32:1");
  cr_expect_eq(rc, 1);
  cr_expect_str_eq(e, "hsad run: HSAD_ERR_INVALID_ARGUMENT: hsad_nv_program_compile_variants: "
                      "variant 1: a budget of 16 registers per thread is outside 24..255 (ptxas "
                      "raises a cap below 24 to 24)\n");
  free(o);
  free(e);
  rc = run(&o, &e, SRC " saxpy --grid 8");
  cr_expect_eq(rc, 1);
  cr_expect(strstr(e, "hsad run: HSAD_ERR_COMPILE: " SRC ": nvrtcCompileProgram (") &&
            strstr(e, "hsad run did not pass -DHSAD_RUN_TEST"), "%s", e);
  free(o);
  free(e);
}

/* nvcc's cubin, fatbin (cubin + PTX) and PTX of nv_kernels.cu: the same saxpy, exact. */
static void saxpy_file(const char *path) {
  if (access(path, R_OK)) cr_skip_test("%s was not built (no nvcc at build time)", path);
  char *o, *e;
  int rc = run(&o, &e, "%s saxpy --grid 1000 --block 128 --arg f32:2.5 --arg buf:f32:1000:iota "
               "--arg buf:f32:1000:const=1:out --arg u32:1000", path);
  cr_assert_eq(rc, 0, "exit %d: %s%s", rc, o, e);
  cr_expect(!strstr(o, "compiled "), "%s", o);
  cr_expect(strstr(o, "arg 2 (f32 x 1000): sum 1249750, min 1, max 2498.5, first: 1 3.5 6 8.5 11 "
                      "13.5 16 18.5\n"), "%s", o);
  free(o);
  free(e);
  rc = run(&o, &e, "%s saxpy -DX --grid 8", path);
  cr_expect_eq(rc, 2);
  char want[512];
  snprintf(want, sizeof want, "hsad run: -D, -I and -O apply to a source (.cu); %s is compiled "
           "already\n", path);
  cr_expect_str_eq(e, want);
  free(o);
  free(e);
}

Test(nvidia_run, cubin_file) { saxpy_file(NV_CUBIN); }
Test(nvidia_run, fatbin_file) { saxpy_file(NV_FATBIN); }
Test(nvidia_run, ptx_file) { saxpy_file(NV_PTX); }

/* hsad graph on the NVIDIA device (issue 22): examples/nv-fork-join.json (a .cu source through
 * NVRTC, a fill, four saxpy nodes forked to lane 1 and joined on lane 0, a copy back on lane 1)
 * as one CUDA graph; the checks hold after the first launch; then its argument messages. */
static int graph(char **out, char **err, const char *fmt, ...) {
  char sm[16];
  unsigned d = nv_device(sm);
  char args[4096], cmd[4400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, HSAD_BIN " graph --device %u %s", d, args);
  return sh(cmd, out, err);
}

#define NV_EXAMPLE NV_DATADIR "/../../../examples/nv-fork-join.json"

Test(nvidia_run, graph_fork_join_example) {
  char *o, *e;
  int rc = graph(&o, &e, NV_EXAMPLE " --launches 20");
  cr_assert_eq(rc, 0, "exit %d: %s%s", rc, o, e);
  cr_expect(strstr(o, "-fork-join.json: 6 nodes on 2 queue(s), 20 launch(es), path: fused\n"
                      "  one CUDA graph launched on queue 0's stream (cuGraphLaunch); the other "
                      "queues joined after it\n"), "%s", o);
  cr_expect(strstr(o, "  check y: 4 elements OK\n  check w: 4 elements OK\n  check out: 5 "
                      "elements OK\n"), "%s", o);
  free(o);
  free(e);
  rc = graph(&o, &e, NV_EXAMPLE " --sequential --json");
  cr_assert_eq(rc, 0, "exit %d: %s%s", rc, o, e);
  cr_expect(strstr(o, "\"nodes\": 6, \"queues\": 2, \"launches\": 1, \"path\": \"sequential "
                      "requested\", \"fused\": false, \"paths\": { \"sequential requested\": 1 }, "
                      "\"cuda_graph\": true, \"queue_packets\": [ ]"), "%s", o);
  free(o);
  free(e);
}

Test(nvidia_run, graph_argument_messages) {
  char *o, *e, path[] = "/tmp/hsad-nvgraph-XXXXXX.json";
  int fd = mkstemps(path, 5);
  FILE *f = fdopen(fd, "w");
  fprintf(f, "{\"kernels\": {\"s\": {\"source\": \"%s/../../../examples/nv_saxpy.cu\", \"kernel\": "
             "\"saxpy\"}}, \"buffers\": {\"x\": {\"type\": \"f32\", \"count\": 4}},\n"
             "\"nodes\": [{\"name\": \"A\", \"kernel\": \"s\", \"grid\": [4], \"block\": [4], "
             "\"args\": [{\"f64\": 2}, \"x\", \"x\", {\"u32\": 4}]}]}\n", NV_DATADIR);
  fclose(f);
  int rc = graph(&o, &e, "%s", path);
  cr_expect_eq(rc, 1, "exit %d: %s%s", rc, o, e);
  cr_expect(strstr(e, "hsad graph: node A: argument 0 of kernel 'saxpy' is 4 bytes, got 8 (1 x "
                      "f64)\n"), "%s", e);
  free(o);
  free(e);
  unlink(path);
}

/* --trace on NVIDIA (issue 22): a profiling stream, the records drained every 64 dispatches
 * (the stream keeps 256 timed), the trace as on AMD: 600 dispatch slices (every one with its
 * device times) on the track "COMPUTE Agent [<node>] QUEUE [0] GPU" of process "GPU <d> <sm>",
 * 600 submit slices on "THREAD 0 (<pid>)", a flow arrow each, durations >= 0. */
Test(nvidia_run, trace_600_dispatches) {
  char sm[16], *o, *e, want[256];
  unsigned d = nv_device(sm);
  char tf[] = "/tmp/hsad-nvrun-trace-XXXXXX";
  close(mkstemp(tf));
  int rc = run(&o, &e, SRC " saxpy " SRCOPTS " --grid 1000 --block 128 --arg f32:2.5 "
               "--arg buf:f32:1000:iota --arg buf:f32:1000:const=1 --arg u32:1000 --repeat 600 "
               "--trace %s", tf);
  cr_assert_eq(rc, 0, "exit %d: %s%s", rc, o, e);
  snprintf(want, sizeof want, "\ntrace: %s\n", tf);
  cr_expect(strstr(o, want), "no '%s' in:\n%s", want, o);
  json_object *root = json_object_from_file(tf), *ev;
  unlink(tf);
  cr_assert_not_null(root, "the trace does not parse");
  cr_assert(json_object_object_get_ex(root, "traceEvents", &ev));
  unsigned slices = 0, submits = 0, flows = 0, gpu_named = 0, track_named = 0, thread_named = 0;
  snprintf(want, sizeof want, "GPU %u %s", d, sm);
  for (size_t i = 0; i < json_object_array_length(ev); i++) {
    json_object *x = json_object_array_get_idx(ev, i);
    const char *ph = json_object_get_string(json_object_object_get(x, "ph"));
    const char *name = json_object_get_string(json_object_object_get(x, "name"));
    if (!strcmp(ph, "M")) {
      const char *v =
          json_object_get_string(json_object_object_get(json_object_object_get(x, "args"), "name"));
      gpu_named += !strcmp(v, want);
      track_named += !strncmp(v, "COMPUTE Agent [", 15) && strstr(v, "] QUEUE [0] GPU") &&
                     !strcmp(strstr(v, "] QUEUE [0] GPU"), "] QUEUE [0] GPU");
      thread_named += !strncmp(v, "THREAD 0 (", 10);
    } else if (!strcmp(ph, "X")) {
      cr_expect_geq(json_object_get_double(json_object_object_get(x, "dur")), 0.0);
      slices += !strcmp(name, "saxpy");
      submits += !strcmp(name, "submit saxpy");
    } else if (!strcmp(ph, "f")) {
      flows++;
    }
  }
  cr_expect_eq(gpu_named, 1u);
  cr_expect_eq(track_named, 1u);
  cr_expect_eq(thread_named, 1u);
  cr_expect_eq(slices, 600u);
  cr_expect_eq(submits, 600u);
  cr_expect_eq(flows, 600u);
  json_object_put(root);
  free(o);
  free(e);
}

/* nv_variants.cu's heavy for thread t over x = iota (as the kernel and the mock's twin). */
static uint32_t heavy_iota(uint32_t n, uint32_t k, uint32_t t) {
  uint32_t acc[87], sum = 0;
  for (uint32_t j = 0; j < 87; j++) acc[j] = t * (j + 1);
  for (uint32_t i = 0; i < k; i++)
    for (uint32_t j = 0; j < 87; j++) acc[j] = acc[j] * 0x9E3779B1u + (((t + i) % n) ^ j);
  for (uint32_t j = 0; j < 87; j++) sum ^= acc[j] + j;
  return sum;
}

/* hsad run's summary line of heavy's output over n threads, as the host computes it. */
static void heavy_line(uint32_t n, uint32_t k, char *out, size_t size) {
  unsigned long long sum = 0;
  uint32_t mn = UINT32_MAX, mx = 0, first[8];
  for (uint32_t t = 0; t < n; t++) {
    uint32_t v = heavy_iota(n, k, t);
    sum += v;
    mn = v < mn ? v : mn;
    mx = v > mx ? v : mx;
    if (t < 8) first[t] = v;
  }
  snprintf(out, size, "arg 1 (u32 x %u): sum %llu, min %u, max %u, first: %u %u %u %u %u %u %u %u\n",
           n, sum, mn, mx, first[0], first[1], first[2], first[3], first[4], first[5], first[6],
           first[7]);
}

/* hsad run --variants on NVIDIA: the 4 builds of heavy (as written, 64 and 32 registers,
 * __launch_bounds__(256, 4) as JIT options), each variant's line, the rule's choice at 1024
 * threads (the unbudgeted build and the 256-thread bound do not allow it; of 64 and 32
 * registers, 64 spills least) and the output exact; then --variants auto --json at 256: three
 * variants each timed, the fastest dispatched, the output exact. On the mock, every line exact;
 * on a GPU, the rule recomputed from the JSON's figures. */
Test(nvidia_run, variants_heavy) {
  char sm[16], *o, *e, want[512];
  unsigned d = nv_device(sm);
  (void)d;
  enum { N = 65536, K = 16 };
  const char *args = "--grid 65536 --arg buf:u32:65536:iota --arg buf:u32:65536:out "
                     "--arg u32:65536 --arg u32:16";
  heavy_line(N, K, want, sizeof want);
  int rc = run(&o, &e, NV_DATADIR "/nv_variants.cu heavy --block 1024 %s "
               "--variants 0:0,r64,r32,256:4", args);
  cr_assert_eq(rc, 0, "exit %d: %s%s", rc, o, e);
  cr_expect(strstr(o, want), "no '%s' in:\n%s", want, o);
  cr_expect(strstr(o, "variants of heavy at block size 1024 ("), "%s", o);
#ifdef NV_MOCK_LIB
  cr_expect(strstr(o, "  variant 0 (as written): 103 registers, local 0 B/thread, does not allow "
                      "1024 threads (maximum 512)\n"
                      "  variant 1 (regs<=64): 64 registers, local 156 B/thread, 1 blocks/SM\n"
                      "  variant 2 (regs<=32): 32 registers, local 284 B/thread, 2 blocks/SM\n"
                      "  variant 3 (threads<=256 blocks>=4): 64 registers, local 156 B/thread, does "
                      "not allow 1024 threads (maximum 256)\n"
                      "rule: variant 1 (least local memory per thread; 2 of 4 variants allow 1024 "
                      "threads)\nchoice: variant 1 (least local memory per thread)\n"), "%s", o);
  cr_expect(strstr(o, "kernel heavy: 64 registers, shared 0 B static + 0 dynamic, local 156 "
                      "B/thread, parameters 24 B (4), max 1024 threads/block\n"), "%s", o);
#endif
  free(o);
  free(e);
  rc = run(&o, &e, NV_DATADIR "/nv_variants.cu heavy --block 256 %s --variants auto --json",
           args);
  cr_assert_eq(rc, 0, "exit %d: %s%s", rc, o, e);
  json_object *j = json_tokener_parse(o), *v, *c;
  cr_assert_not_null(j, "not JSON: %s", o);
  cr_assert(json_object_object_get_ex(j, "variants", &v), "%s", o);
  cr_assert(json_object_object_get_ex(v, "candidates", &c));
  size_t n = json_object_array_length(c);
  cr_expect_eq(n, 3u, "%s", o);
  int fastest = -1, rule = -1;
  long long best_ns = 0, bl = 0, bb = 0, br = 0;
  for (size_t i = 0; i < n; i++) {
    json_object *x = json_object_array_get_idx(c, i);
    long long ns = json_object_get_int64(json_object_object_get(x, "device_ns"));
    long long local = json_object_get_int64(json_object_object_get(x, "local_bytes"));
    long long blocks = json_object_get_int64(json_object_object_get(x, "blocks_per_sm"));
    long long regs = json_object_get_int64(json_object_object_get(x, "registers"));
    cr_log_info("auto at 256: variant %zu (max_threads %d, min_blocks %d): %lld registers, %lld "
                "local bytes, %lld blocks per SM, %lld ns", i,
                json_object_get_int(json_object_object_get(x, "max_threads")),
                json_object_get_int(json_object_object_get(x, "min_blocks_per_sm")), regs, local,
                blocks, ns);
    cr_expect_gt(ns, 0);
    if (fastest < 0 || ns < best_ns) fastest = (int)i, best_ns = ns;
    if (rule < 0 || local < bl || (local == bl && (blocks > bb || (blocks == bb && regs < br))))
      rule = (int)i, bl = local, bb = blocks, br = regs;
  }
  cr_expect_eq(json_object_get_int(json_object_object_get(v, "choice")), fastest, "%s", o);
  cr_expect_str_eq(json_object_get_string(json_object_object_get(v, "reason")),
                   "measured fastest");
  cr_expect_eq(json_object_get_int(json_object_object_get(v, "rule_choice")), rule, "%s", o);
#ifdef NV_MOCK_LIB
  cr_expect_eq(rule, 0);
  cr_expect_str_eq(json_object_get_string(json_object_object_get(v, "rule_reason")),
                   "no local memory, most blocks per SM");
#endif
  json_object *bufs = json_object_object_get(j, "buffers"), *b1 = json_object_array_get_idx(bufs, 1);
  unsigned long long sum = 0;
  for (uint32_t t = 0; t < N; t++) sum += heavy_iota(N, K, t);
  cr_expect_eq((unsigned long long)json_object_get_uint64(json_object_object_get(b1, "sum")), sum,
               "%s", o);
  json_object_put(j);
  free(o);
  free(e);
}

/* ---- hsad-bench-nvidia's one-run outputs (issue 22): --json, --plot, README's tables ------- */

#ifndef HSAD_SRCDIR
#define HSAD_SRCDIR "."
#endif
#ifndef NV_BENCH_BIN
#define NV_BENCH_BIN "build/bin/hsad-bench-nvidia"
#endif
#define TABLES "python3 " HSAD_SRCDIR "/scripts/nv-bench-table.py "

static int count_lines(const char *path, const char *prefix, unsigned *with_prefix) {
  size_t n;
  char *b = slurp(path, &n);
  b[n] = '\0';
  int lines = 0;
  *with_prefix = 0;
  for (char *l = b; *l; lines++) {
    *with_prefix += !strncmp(l, prefix, strlen(prefix));
    char *nl = strchr(l, '\n');
    if (!nl) break;
    l = nl + 1;
  }
  free(b);
  return lines;
}

/* scripts/nv-bench-table.py over tests/data/nvidia/bench-sample.jsonl (round figures): every
 * ratio as computed by hand: 3,300 against 3,000 ns is +10.0%; 8,800 / 8,000 = 1.100x; 4
 * threads on a queue each at 800 ns of wall per launch = 1,250,000 launches/s. */
Test(nvidia_run, bench_tables_from_json) {
  char *o, *e;
  int rc = sh(TABLES NV_DATADIR "/bench-sample.jsonl --label sample", &o, &e);
  cr_assert_eq(rc, 0, "exit %d: %s%s", rc, o, e);
  static const char *const want[] = {
      "hsad-bench-nvidia on NVIDIA H200 (sm_90), CUDA 13.0, driver 580.159.04; medians of 7 "
      "rounds (count 20000); sample:\n",
      "| submit, empty kernel | 3,300 ns | cuLaunchKernel 3,000; cuLaunchKernelEx 3,050 | +10.0% "
      "of cuLaunchKernel |\n",
      "| submit, saxpy kernel | 3,400 ns | cuLaunchKernel 3,400; cuLaunchKernelEx 3,350 | +0.0% of "
      "cuLaunchKernel |\n",
      "| launch + wait | 8,000 ns | + cuStreamSynchronize 8,800; + cuEventRecord + "
      "cuEventSynchronize 9,200 | 1.100x / 1.150x faster |\n",
      "| 8 producers, one queue | 25,600 ns per submit | cuLaunchKernel from 8 threads 25,000 | "
      "+2.4% |\n",
      "| 8 producers, a queue each | 3,200 ns per submit | cuLaunchKernel from 8 threads 4,000 | "
      "-20.0% |\n",
      "| 1 | 3,200 | 3,125 | 1.024 | 312,500 / 320,000 | 3,200 | 3,200 | 1.000 | 312,500 / "
      "312,500 |\n",
      "| 4 | 12,800 | 12,500 | 1.024 | 312,500 / 320,000 | 3,200 | 4,000 | 0.800 | 1,250,000 / "
      "1,000,000 |\n",
      "(not in this run: barrier, copy, graph, pageable, pool, timing)\n"};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    cr_expect(strstr(o, want[i]), "no line\n%sin:\n%s", want[i], o);
  cr_expect(!strstr(o, "Graphs"), "a graph table without graph rows:\n%s", o);
  free(o), free(e);
  /* a file without rows: exit 1 and why */
  char empty[] = "/tmp/hsad-nvbench-empty-XXXXXX";
  close(mkstemp(empty));
  char cmd[256];
  snprintf(cmd, sizeof cmd, TABLES "%s", empty);
  rc = sh(cmd, &o, &e);
  unlink(empty);
  cr_expect_eq(rc, 1);
  char why[160];
  snprintf(why, sizeof why, "nv-bench-table: %s holds no bench row\n", empty);
  cr_expect_str_eq(e, why);
  free(o), free(e);
}

/* One run of two suites with --json and --plot where there is no gnuplot (HSAD_GNUPLOT names
 * none, as on the lent H200): exit 0, the line saying so, per suite its gnuplot script and data
 * (roundtrip 3 rows; producers 2 queue layouts x 4 thread counts x 4 rows = 32), the JSON lines
 * (the meta line first, then 35 rows), and the tables rendered from them. */
Test(nvidia_run, bench_json_plot_without_gnuplot, .timeout = 240) {
  char sm[16];
  (void)nv_device(sm);
#ifdef NV_MOCK_LIB
  const char *cubin = NV_MOCK_LIB; /* the mock loads any file */
#else
  const char *cubin = NV_CUBIN;
  if (access(cubin, R_OK)) cr_skip_test("no %s: nvcc was absent at build time", cubin);
#endif
  char dir[] = "/tmp/hsad-nvbench-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char cmd[2048], want[1024], path[512], *o, *e;
  snprintf(cmd, sizeof cmd, "HSAD_GNUPLOT=/nonexistent/gnuplot " NV_BENCH_BIN " %s --suites "
           "roundtrip,producers --rounds 1 --count 64 --json %s/b.jsonl --plot %s/plots", cubin,
           dir, dir);
  int rc = sh(cmd, &o, &e);
  cr_assert_eq(rc, 0, "exit %d: %s%s", rc, o, e);
  snprintf(want, sizeof want, "plot      no gnuplot (HSAD_GNUPLOT, PATH): wrote "
           "%s/plots/{roundtrip,producers}.gp and .dat; run `gnuplot NAME.gp` in %s/plots where "
           "gnuplot is installed\n", dir, dir);
  cr_expect(strstr(o, want), "no line\n%sin:\n%s", want, o);
  cr_expect(strstr(o, "producers check: 32 launches per measurement, every one succeeded\n"), "%s", o);
  cr_expect(strstr(o, "target    producers, hsad ns per submit over cuLaunchKernel's"), "%s", o);
  unsigned hits;
  snprintf(path, sizeof path, "%s/plots/roundtrip.dat", dir);
  cr_expect_eq(count_lines(path, "\"cuLaunch+", &hits), 4);
  cr_expect_eq(hits, 2u);
  snprintf(path, sizeof path, "%s/plots/producers.dat", dir);
  cr_expect_eq(count_lines(path, "\"hsad queues=shared T", &hits), 33);
  cr_expect_eq(hits, 4u);
  snprintf(path, sizeof path, "%s/plots/producers.gp", dir);
  size_t n;
  char *gp = slurp(path, &n);
  gp[n] = '\0';
  cr_expect(strstr(gp, "set output 'producers.png'\n"), "%s", gp);
  cr_expect(strstr(gp, "plot 'producers.dat' using 0:2:xtic(1) with boxes notitle"), "%s", gp);
  free(gp);
  snprintf(path, sizeof path, "%s/plots/producers.png", dir);
  cr_expect(access(path, F_OK) != 0, "a PNG without gnuplot");
  snprintf(path, sizeof path, "%s/b.jsonl", dir);
  cr_expect_eq(count_lines(path, "{\"suite\":\"meta\",", &hits), 36);
  cr_expect_eq(hits, 1u);
  count_lines(path, "{\"suite\":\"producers\",\"path\":\"cuLaunchKernel queues=each wall\",", &hits);
  cr_expect_eq(hits, 4u);
  free(o), free(e);
  snprintf(cmd, sizeof cmd, TABLES "%s/b.jsonl", dir);
  rc = sh(cmd, &o, &e);
  cr_assert_eq(rc, 0, "exit %d: %s%s", rc, o, e);
  cr_expect(strstr(o, "Producers (ns per submit, median):\n"), "%s", o);
  cr_expect(strstr(o, "| launch + wait | "), "%s", o);
  cr_expect(strstr(o, "(not in this run: barrier, copy, dispatch, graph, pageable, pool, timing)\n"),
            "%s", o);
  free(o), free(e);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_expect_eq(system(cmd), 0);
}

/* hsad inspect in this build (issue 22: the NVIDIA-only build has it too): a fatbin's report
 * equals the committed reference byte for byte; in the build without AMD a file that is no
 * cubin, fatbin or PTX is refused naming the build (text and --json). */
Test(nvidia_run, inspect_in_this_build) {
  char *o, *e;
  int rc = sh("cd " NV_DATADIR " && " HSAD_BIN " inspect byval.fatbin", &o, &e);
  cr_assert_eq(rc, 0, "exit %d: %s%s", rc, o, e);
  size_t n;
  char *ref = slurp(NV_DATADIR "/inspect.byval.fatbin.txt", &n);
  ref[n] = '\0';
  cr_expect_str_eq(o, ref);
  free(ref), free(o), free(e);
#ifdef HSAD_NO_AMD
  rc = sh("cd " NV_DATADIR " && " HSAD_BIN " inspect nv_run.cu", &o, &e);
  cr_expect_eq(rc, 1);
  cr_expect_str_eq(e, "hsad inspect: nv_run.cu: not a cubin, fatbin or PTX file: AMD code objects "
                   "(.hsaco, offload bundles) need hsad built with the AMD backend (this one was "
                   "built with make BACKENDS=nvidia)\n");
  free(o), free(e);
  rc = sh("cd " NV_DATADIR " && " HSAD_BIN " inspect nv_run.cu --json", &o, &e);
  cr_expect_eq(rc, 1);
  cr_expect(strstr(o, "\"status\": \"HSAD_ERR_UNSUPPORTED\""), "%s", o);
  free(o), free(e);
#endif
}
