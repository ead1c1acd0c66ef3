/* bench_main.c - `hsad bench`: options, the suite registry, signals, progress, output.
 * The framework is described in bench.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include "hsa-dispatch/hsad.h"
#include "hsa-dispatch/hsad_rocr.h"
#include "tools/hsad/bench.h"
#include "tools/hsad/hsad_cli.h"

/* ---- the suite registry ---------------------------------------------------------------------
 * To add a suite (graph, copy, pool, ...):
 *   1. write tools/hsad/bench_NAME.c with `int bench_suite_NAME(bench_ctx_t *ctx,
 *      bench_suite_result_t *out)` and declare it in bench.h; add the file to
 *      tools/hsad/module.mk (HSAD_TOOL_SRCS);
 *   2. in it: set out->title, out->params, out->plot_metric (and out->plot_xname when rows have
 *      a configuration axis); for round = 0 .. ctx->rounds-1, measure every path once (rotate
 *      the order by the round), bench_row_add(out, path, config, xname, x) then
 *      bench_sample(row, "metric_name", "unit", value) once per round; a path that cannot run
 *      gets bench_row_absent(row, "why"); check bench_stopped() between measurements and
 *      return early (what was sampled is printed); call bench_progress() per path so the user
 *      sees where it is; add bench_ratio(out, "a", "b", config, "metric") after the rounds;
 *   3. HIP equivalents go into hsad-bench-hip (bench_hip.hip) as one more coprocess command,
 *      called with bench_child_cmd(ctx, bench_hip(ctx, ...), "cmd args", reply, n);
 *   4. add a line to `suites` below (the order is the order of `all`) and, for the test,
 *      a case in tests/test_bench.c listing the suite's paths and metrics.
 * Table, --json, --csv and --plot need nothing more: they print every row, metric and ratio.
 * Return 0, or -1 when the suite could not run at all (its rows say why). */
static const struct {
  const char *name;
  bench_suite_fn fn;
  const char *summary;
} suites[] = {
    {"dispatch", bench_suite_dispatch, "submit cost per path; callgrind instructions per submit"},
    {"roundtrip", bench_suite_roundtrip, "launch + wait of one empty kernel, split by timestamps"},
    {"producers", bench_suite_producers, "1-8 threads into one queue / a queue each"},
    {"barrier", bench_suite_barrier, "barrier fan-in 1..20, cross-queue dependency"},
    {"copy", bench_suite_copy, "host -> device copies 4 KiB..256 MiB: pinned, pageable strategies, HIP"},
    {"pool", bench_suite_pool, "pinned alloc+free 4 KiB/1 MiB/64 MiB: pool vs ROCr vs hipHostMalloc; stream-ordered vs hipMallocAsync"},
    {"graph", bench_suite_graph, "chain10/dag100/diamond: graph launch vs per-dispatch, HIP graph vs streams"},
};
#define NSUITES (sizeof suites / sizeof suites[0])

volatile sig_atomic_t bench_stop;

static void on_signal(int sig) {
  bench_stop = sig;
  bench_children_kill_all(SIGTERM); /* they are in their own groups: the tty's ^C missed them */
}

void bench_progress(const bench_ctx_t *ctx, const char *suite, const char *path, const char *fmt,
                    ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  fprintf(stderr, "hsad bench: [%6.1f s] %-9s %-14s %s\n",
          (double)(hsad_now_ns() - ctx->t0_ns) / 1e9, suite, path, what);
}

static void usage(FILE *f) {
  fprintf(f,
    "usage: hsad bench [SUITE...] [--rounds N] [--count N] [--callgrind-count N]\n"
    "                  [--no-callgrind] [--device N] [--timeout S] [--json | --csv] [--plot DIR]\n"
    "\n"
    "Queue microbenchmarks of an empty kernel on one device, each path side by side:\n"
    "hsad (hsad_kernel_dispatch), hsad-prepared (hsad_prepared_dispatch), rocr-textbook (the\n"
    "plain ROCr sequence) and hip (hsad-bench-hip, built with hipcc, where HIP has an\n"
    "equivalent); dispatch also hsad-variants (hsad_variant_dispatch, cached choice); graph:\n"
    "hsad-graph (hsad_graph_launch), hsad-dispatch (a dispatch per node), hip-graph\n"
    "(hipGraphLaunch) and hip-stream (a launch per node), every launch's results checked.\n"
    "Suites (default: all):\n");
  for (size_t i = 0; i < NSUITES; i++) fprintf(f, "  %-10s %s\n", suites[i].name, suites[i].summary);
  fprintf(f,
    "\n"
    "Each figure is measured in N rounds (--rounds, default 7; paths interleaved in every round)\n"
    "and printed as min / median / max over the rounds; ratios are taken per round. --count:\n"
    "submits per path per round (default 10000; the other suites scale from it).\n"
    "Instruction counts (valgrind --tool=callgrind, --callgrind-count submits, default 10000)\n"
    "are deterministic. Every child (HIP, valgrind) is stopped after --timeout seconds without\n"
    "an answer (default 60). SIGINT/SIGTERM print what was measured so far.\n"
    "--json: one object (schema \"hsad-bench/1\", see tools/hsad/bench_report.c); --csv: one\n"
    "line per figure; --plot DIR: one PNG per suite (gnuplot). On kfd-emu the figures are\n"
    "host-side costs, not GPU performance.\n");
}

/* Errors: "hsad bench: ..." on stderr, or a JSON error object on stdout with --json. */
static hsad_cli_t bench_cli = {.cmd = "bench"};

static int parse_u32(const char *opt, const char *v, uint32_t lo, uint32_t hi, uint32_t *out) {
  char *end;
  errno = 0;
  unsigned long long x = *v >= '0' && *v <= '9' ? strtoull(v, &end, 10) : 0;
  if (*v < '0' || *v > '9' || *end || errno || x < lo || x > hi) {
    hsad_cli_fail(&bench_cli, 2, "usage", "--%s %s: expected an integer from %u to %u", opt, v,
                  lo, hi);
    return -1;
  }
  *out = (uint32_t)x;
  return 0;
}

/* the empty kernel, and order_record (kernels/order_record.cl; twin in libkfd-emu-twins.so) for
 * the graph suite's checked nodes */
static const char empty_src[] =
    "kernel void empty(void) {}\n"
    "kernel void order_record(global uint *counter, global uint *slots, uint index) {\n"
    "  if (get_global_id(0) == 0 && get_global_id(1) == 0 && get_global_id(2) == 0)\n"
    "    slots[index] = atomic_inc(counter);\n"
    "}\n";

/* Opens the runtime and device and loads the empty kernel: from `co_path` (a child), or
 * compiled with comgr (kept in a memfd for the children: they skip comgr). */
static int open_ctx(bench_ctx_t *ctx, const char *co_path) {
  hsad_status_t s = hsad_runtime_open(&ctx->rt);
  if (!s) s = hsad_device_get(ctx->rt, ctx->devi, &ctx->dev);
  if (!s && hsad_device_info(ctx->dev)->vendor != HSAD_VENDOR_AMD)
    s = hsad_fail(HSAD_ERR_UNSUPPORTED, "device %u (%s) is an NVIDIA GPU: hsad bench measures "
                  "AMD paths (NVIDIA: hsad-bench-nvidia)", ctx->devi,
                  hsad_device_info(ctx->dev)->product_name);
  if (!s && co_path) s = hsad_program_load_file(ctx->dev, co_path, &ctx->prog);
  else if (!s) {
    void *elf = NULL;
    size_t n = 0;
    char *log = NULL;
    hsad_compile_options_t o = {.target = hsad_device_info(ctx->dev)->isa_name, .opt_level = 2,
                                .code_object_version = 5};
    s = hsad_codeobj_compile(empty_src, sizeof empty_src - 1, "empty.cl", &o, &elf, &n, &log);
    if (!s) s = hsad_program_load_memory(ctx->dev, elf, n, "empty.cl", &ctx->prog);
    if (!s) {
      ctx->elf_fd = memfd_create("hsad-bench-empty.hsaco", 0);
      if (ctx->elf_fd >= 0 && write(ctx->elf_fd, elf, n) != (ssize_t)n) {
        close(ctx->elf_fd);
        ctx->elf_fd = -1;
      }
    }
    free(elf);
    free(log);
  }
  if (!s) s = hsad_program_kernel(ctx->prog, "empty", &ctx->k);
  if (!s) s = hsad_program_kernel(ctx->prog, "order_record", &ctx->k_order);
  if (s) {
    hsad_cli_fail_status(&bench_cli, s);
    return -1;
  }
  snprintf(ctx->isa, sizeof ctx->isa, "%.63s", hsad_device_info(ctx->dev)->isa_name);
  ctx->emulated = hsad_rocr_is_emulated();
  return 0;
}

/* The callgrind child: `hsad bench --child PATH --count N --code-object F`. */
int bench_dispatch_child(bench_ctx_t *ctx, const char *path);
/* `hsad bench --child graph --count N --code-object F`: the graph suite's callgrind parts. */
int bench_graph_child(bench_ctx_t *ctx);

enum { O_JSON = 256, O_CSV, O_PLOT, O_ROUNDS, O_COUNT, O_CGCOUNT, O_NOCG, O_DEVICE, O_TIMEOUT,
       O_CHILD, O_CO };
static const struct option bench_opts[] = {
    {"json", no_argument, NULL, O_JSON},           {"csv", no_argument, NULL, O_CSV},
    {"plot", required_argument, NULL, O_PLOT},     {"rounds", required_argument, NULL, O_ROUNDS},
    {"count", required_argument, NULL, O_COUNT},   {"callgrind-count", required_argument, NULL, O_CGCOUNT},
    {"no-callgrind", no_argument, NULL, O_NOCG},   {"device", required_argument, NULL, O_DEVICE},
    {"timeout", required_argument, NULL, O_TIMEOUT}, {"child", required_argument, NULL, O_CHILD},
    {"code-object", required_argument, NULL, O_CO}, {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};

/* What the command line asks of hsad bench beyond bench_ctx_t's settings. */
typedef struct bench_cmd {
  bool json, csv;
  const char *plot, *child, *co;
  bool want[NSUITES]; /* the suites to run */
} bench_cmd_t;

/* One option getopt_long returned (c) with its value v: 0, HSAD_CLI_DONE or the exit code. */
static int bench_option(bench_ctx_t *ctx, bench_cmd_t *b, int c, const char *v, char **argv) {
  switch (c) {
  case O_JSON: b->json = true; return 0;
  case O_CSV: b->csv = true; return 0;
  case O_PLOT: b->plot = v; return 0;
  case O_ROUNDS: return parse_u32("rounds", v, 1, BENCH_MAX_ROUNDS, &ctx->rounds) ? 2 : 0;
  case O_COUNT: return parse_u32("count", v, 100, 100000000, &ctx->count) ? 2 : 0;
  case O_CGCOUNT: return parse_u32("callgrind-count", v, 100, 10000000, &ctx->cg_count) ? 2 : 0;
  case O_NOCG: ctx->callgrind = false; return 0;
  case O_DEVICE: return parse_u32("device", v, 0, 63, &ctx->devi) ? 2 : 0;
  case O_TIMEOUT: return parse_u32("timeout", v, 1, 3600, &ctx->timeout_s) ? 2 : 0;
  case O_CHILD: b->child = v; return 0;
  case O_CO: b->co = v; return 0;
  case 'h': usage(stdout); return HSAD_CLI_DONE;
  default: return hsad_cli_getopt_fail(&bench_cli, c, argv);
  }
}

/* The suites named (non-option arguments), in registry order; none named: all. */
static int bench_select_suites(bench_cmd_t *b, int argc, char **argv) {
  bool any = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] == '-') {
      for (size_t k = 0; k < sizeof bench_opts / sizeof bench_opts[0] - 1; k++)
        if (!strcmp(a + 2, bench_opts[k].name) && bench_opts[k].has_arg == required_argument) i++;
      continue;
    }
    size_t k = 0;
    if (!strcmp(a, "all")) {
      for (; k < NSUITES; k++) b->want[k] = true;
      any = true;
      continue;
    }
    for (; k < NSUITES; k++)
      if (!strcmp(a, suites[k].name)) break;
    if (k == NSUITES)
      return hsad_cli_fail(&bench_cli, 2, "usage", "unknown suite '%s' (this build has: "
                           "dispatch, roundtrip, producers, barrier, copy, pool, graph, all)", a);
    b->want[k] = any = true;
  }
  if (!any)
    for (size_t k = 0; k < NSUITES; k++) b->want[k] = true;
  return 0;
}

static int bench_parse_options(bench_ctx_t *ctx, bench_cmd_t *b, int argc, char **argv) {
  optind = 1;
  opterr = 0;
  int c, rc;
  while ((c = getopt_long(argc, argv, "+:h", bench_opts, NULL)) != -1 || optind < argc) {
    if (c == -1) { /* a suite name between options: take it, go on */
      optind++;
      continue;
    }
    if ((rc = bench_option(ctx, b, c, optarg, argv))) return rc;
  }
  if (b->json && b->csv)
    return hsad_cli_fail(&bench_cli, 2, "usage", "--json and --csv exclude each other");
  if ((rc = bench_select_suites(b, argc, argv))) return rc;
  if (b->plot) {
    struct stat st;
    if (stat(b->plot, &st) != 0 && mkdir(b->plot, 0777) != 0)
      return hsad_cli_fail(&bench_cli, 2, "error", "--plot %s: cannot create the directory: %s",
                           b->plot, strerror(errno));
    /* an existing file: refused before any suite runs (gnuplot cannot open DIR/suite.png and
     * writes the PNG to stdout instead) */
    if (stat(b->plot, &st) == 0 && !S_ISDIR(st.st_mode))
      return hsad_cli_fail(&bench_cli, 2, "error", "--plot %s: not a directory (--plot DIR "
                           "writes one PNG per suite into DIR)", b->plot);
  }
  return 0;
}

/* This program's path, hsad-bench-hip's beside it (or HSAD_BENCH_HIP), and the kfd-emu this
 * process uses on LD_LIBRARY_PATH for it (it links ROCr itself). */
static void bench_find_helpers(bench_ctx_t *ctx) {
  ssize_t len = readlink("/proc/self/exe", ctx->self, sizeof ctx->self - 1);
  if (len > 0) ctx->self[len] = '\0';
  const char *hip = getenv("HSAD_BENCH_HIP"); /* another HIP program (tests: an absent one) */
  if (hip) snprintf(ctx->hip_exe, sizeof ctx->hip_exe, "%.4095s", hip);
  else {
    char dir[4096];
    snprintf(dir, sizeof dir, "%.4095s", ctx->self);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    snprintf(ctx->hip_exe, sizeof ctx->hip_exe, "%.4000s/hsad-bench-hip", dir);
  }
  const char *emu = hsad_rocr_emu_dir(), *old = getenv("LD_LIBRARY_PATH");
  if (emu) {
    char p[2 * 4096];
    snprintf(p, sizeof p, "%s%s%s", emu, old && *old ? ":" : "", old ? old : "");
    setenv("LD_LIBRARY_PATH", p, 1);
  }
}

/* The suites asked for, in order, until a signal stops them: res[0..*nres). 1 when one
 * failed. */
static int bench_run_suites(bench_ctx_t *ctx, const bench_cmd_t *b, bench_suite_result_t *res,
                            uint32_t *nres) {
  int rc = 0;
  for (size_t k = 0; k < NSUITES && !bench_stopped(); k++) {
    if (!b->want[k]) continue;
    bench_suite_result_t *r = &res[(*nres)++];
    memset(r, 0, sizeof *r);
    r->suite = suites[k].name;
    uint64_t t = hsad_now_ns();
    bench_progress(ctx, r->suite, "-", "start");
    if (suites[k].fn(ctx, r)) rc = 1;
    r->interrupted = bench_stopped();
    bench_suite_finish(r);
    bench_progress(ctx, r->suite, "-", "%s in %.1f s", r->interrupted ? "interrupted" : "done",
                   (double)(hsad_now_ns() - t) / 1e9);
  }
  return rc;
}

/* The results as JSON, CSV or a table, and --plot's files. 1 when one could not be made. */
static int bench_report(bench_ctx_t *ctx, const bench_cmd_t *b, bench_suite_result_t *res,
                        uint32_t nres, bool interrupted) {
  int rc = 0;
  if (b->json) {
    if (bench_report_json(ctx, res, nres, interrupted)) rc = 1;
  } else if (b->csv) {
    bench_report_csv(ctx, res, nres);
  } else {
    bench_report_table(ctx, res, nres);
  }
  fflush(stdout);
  if (b->plot && !interrupted && bench_report_plot(ctx, res, nres, b->plot)) rc = 1;
  return rc;
}

int hsad_cmd_bench(int argc, char **argv) {
  static bench_ctx_t ctx_s; /* large (paths, buffers): not on the stack */
  bench_ctx_t *ctx = &ctx_s;
  memset(ctx, 0, sizeof *ctx);
  ctx->count = 10000;
  ctx->rounds = 7;
  ctx->cg_count = 10000;
  ctx->callgrind = true;
  ctx->timeout_s = 60;
  ctx->elf_fd = -1;
  ctx->t0_ns = hsad_now_ns();
  bench_cli.json = hsad_cli_wants_json(argc, argv);
  bench_cmd_t b = {0};
  int rc = bench_parse_options(ctx, &b, argc, argv);
  if (rc) return rc == HSAD_CLI_DONE ? 0 : rc;
  /* handlers first: a ^C during the comgr compile lets it finish and remove its directory */
  struct sigaction sa = {.sa_handler = on_signal};
  sigemptyset(&sa.sa_mask);
  if (!b.child) {
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
  }
  if (open_ctx(ctx, b.co)) return 1;
  if (b.child && !strcmp(b.child, "graph")) return bench_graph_child(ctx);
  if (b.child && !strncmp(b.child, "stream", 6)) return bench_pool_child(ctx, b.child);
  if (b.child) return bench_dispatch_child(ctx, b.child);
  bench_find_helpers(ctx);
  bench_suite_result_t res[NSUITES];
  uint32_t nres = 0;
  rc = bench_run_suites(ctx, &b, res, &nres);
  bool interrupted = bench_stopped();
  if (ctx->hip_started) bench_child_stop(&ctx->hip);
  bench_children_kill_all(SIGKILL);
  if (interrupted)
    fprintf(stderr, "hsad bench: interrupted by %s: printing what was measured\n",
            bench_stop == SIGINT ? "SIGINT" : "SIGTERM");
  if (bench_report(ctx, &b, res, nres, interrupted)) rc = 1;
  for (uint32_t i = 0; i < nres; i++) bench_suite_free(&res[i]);
  hsad_program_destroy(ctx->prog);
  hsad_runtime_close(ctx->rt);
  if (ctx->elf_fd >= 0) close(ctx->elf_fd);
  if (interrupted) return 128 + (int)bench_stop;
  return rc;
}
