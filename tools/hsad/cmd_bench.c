/* cmd_bench.c - `hsad bench dispatch`: submit cost of hsa-dispatch vs the textbook ROCr path vs
 * HIP's hipLaunchKernelGGL, on the same device and the same empty kernel.
 *
 * Timing: COUNT submits per path (default 100,000) into a queue large enough to hold them all
 * (so no path waits for ring space), in blocks of 1,000 timed with CLOCK_MONOTONIC; ns per submit
 * of a block = block time / 1,000; reported as min / median / max over the blocks. The queue is
 * drained (waited idle) between paths. The CP thread of kfd-emu runs concurrently.
 *
 * Instructions: each path is re-run under `valgrind --tool=callgrind --toggle-collect=FN` with
 * FN the per-submit function (hsad_kernel_dispatch; hsad_prepared_dispatch for a launch prepared
 * once (hsad_launch_prepare); bench_rocr_submit, the textbook sequence;
 * bench_hip_submit, one hipLaunchKernelGGL, for HIP), so only instructions inside one submit are counted; the total over
 * the run divided by the submit count is instructions per submit (deterministic).
 *
 * HIP: measured by build/bin/hsad-bench-hip (hipcc) next to this executable when present;
 * otherwise reported as absent with the reason.
 */
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hsa-dispatch/hsad.h"
#include "hsa-dispatch/hsad_rocr.h"
#include "tools/hsad/hsad_cli.h"

#define BLOCK 1000
#define NPATHS 4 /* hsad, rocr-textbook, hip, hsad-prepared */

static const char empty_src[] = "kernel void empty(void) {}\n";

static void usage(FILE *f) {
  fprintf(f,
    "usage: hsad bench [dispatch] [--json] [--count N] [--callgrind-count N] [--no-callgrind]\n"
    "                             [--device N]\n"
    "\n"
    "Submits N (default 100000) dispatches of an empty kernel (compiled with comgr) through\n"
    "(a) hsa-dispatch (hsad_kernel_dispatch; and hsad-prepared: hsad_prepared_dispatch of a\n"
    "launch checked and built once by hsad_launch_prepare), (b) the textbook ROCr sequence (add_write_index,\n"
    "fill, 32-bit header store, doorbell signal store) and (c) HIP's hipLaunchKernelGGL\n"
    "(hsad-bench-hip, built with hipcc), and reports median ns per submit and, under\n"
    "valgrind --tool=callgrind, instructions per submit (default 20000 submits), with ratios.\n"
    "Both counts are multiples of 1000 (submits are timed in blocks of 1000). On kfd-emu the\n"
    "figures are host-side costs, not GPU performance.\n");
}

typedef struct result {
  const char *path;
  bool ok;
  char note[PATH_MAX + 256];
  double ns_min, ns_median, ns_max;
  double instr; /* < 0: not measured */
  bool chain_ok;
  double chain_min, chain_median, chain_max; /* us: 10 dependent dispatches + wait */
} result_t;

#define CHAIN 10
static bool g_only; /* --only: the callgrind run counts submits only, no chain */
#define CHAIN_RUNS 200

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void stats(double *v, uint32_t n, result_t *r) {
  qsort(v, n, sizeof *v, cmp_d);
  r->ns_min = v[0];
  r->ns_median = v[n / 2];
  r->ns_max = v[n - 1];
}

/* ---- the textbook ROCr sequence ------------------------------------------------------- */

typedef struct rocr_ctx {
  hsa_queue_t *q;
  hsa_signal_t signal; /* completion of the next packet (0: none) */
  uint64_t kernel_object;
  void *kernarg;
  uint32_t group, priv;
} rocr_ctx_t;

__attribute__((noinline)) void bench_rocr_submit(rocr_ctx_t *c) {
  hsa_queue_t *q = c->q;
  uint64_t id = hsad_rocr.hsa_queue_add_write_index_screlease(q, 1);
  while (id - hsad_rocr.hsa_queue_load_read_index_scacquire(q) >= q->size) {
  }
  hsa_kernel_dispatch_packet_t *p = (hsa_kernel_dispatch_packet_t *)q->base_address + (id & (q->size - 1));
  p->workgroup_size_x = 1;
  p->workgroup_size_y = 1;
  p->workgroup_size_z = 1;
  p->reserved0 = 0;
  p->grid_size_x = 1;
  p->grid_size_y = 1;
  p->grid_size_z = 1;
  p->private_segment_size = c->priv;
  p->group_segment_size = c->group;
  p->kernel_object = c->kernel_object;
  p->kernarg_address = c->kernarg;
  p->reserved2 = 0;
  p->completion_signal = c->signal;
  uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                    (1 << HSA_PACKET_HEADER_BARRIER) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
  __atomic_store_n((uint32_t *)p, header | (1u << 16), __ATOMIC_RELEASE);
  hsad_rocr.hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)id);
}

static void wait_drained(hsa_queue_t *q) {
  uint64_t deadline = hsad_now_ns() + 120000000000ull;
  while (hsad_rocr.hsa_queue_load_read_index_scacquire(q) < hsad_rocr.hsa_queue_load_write_index_scacquire(q) &&
         hsad_now_ns() < deadline)
    usleep(100);
}

/* ---- one path in this process ----------------------------------------------------------- */

typedef struct env {
  hsad_runtime_t *rt;
  hsad_device_t *dev;
  hsad_program_t *prog;
  const hsad_device_kernel_t *k;
  uint32_t qsize;
} env_t;

static int open_env(env_t *e, uint32_t devi, uint32_t count) {
  hsad_status_t s = hsad_runtime_open(&e->rt);
  if (!s) s = hsad_device_get(e->rt, devi, &e->dev);
  void *elf = NULL;
  size_t n = 0;
  char *log = NULL;
  if (!s) {
    hsad_compile_options_t o = {.target = hsad_device_info(e->dev)->isa_name, .opt_level = 2,
                                .code_object_version = 5};
    s = hsad_codeobj_compile(empty_src, sizeof empty_src - 1, "empty.cl", &o, &elf, &n, &log);
  }
  if (!s) s = hsad_program_load_memory(e->dev, elf, n, "empty.cl", &e->prog);
  free(elf);
  free(log);
  if (!s) s = hsad_program_kernel(e->prog, "empty", &e->k);
  if (s) {
    fprintf(stderr, "hsad bench: %s: %s\n", hsad_status_name(s), hsad_last_error());
    return -1;
  }
  uint32_t qs = 64, max = hsad_device_info(e->dev)->queue_max_size;
  while (qs < count && qs < max) qs *= 2;
  e->qsize = qs;
  return 0;
}

/* One submit of the hsad paths: hsad_kernel_dispatch (checks, or its per-thread cache of the
 * last launch, every time), or hsad_prepared_dispatch of a launch prepared once. */
static hsad_status_t hsad_submit(hsad_queue_t *q, const env_t *e, const hsad_launch_t *l,
                                 const hsad_prepared_launch_t *pl, hsad_completion_t **c) {
  return pl ? hsad_prepared_dispatch(pl, HSAD_DEADLINE_NEVER, c, NULL)
            : hsad_kernel_dispatch(q, e->k, l, HSAD_DEADLINE_NEVER, c, NULL);
}

static int run_hsad(env_t *e, uint32_t count, bool prepared, result_t *r) {
  hsad_queue_t *q;
  hsad_prepared_launch_t *pl = NULL;
  hsad_launch_t l = {.dims = 1, .grid = {1}, .block = {1}};
  hsad_status_t s = hsad_queue_create(e->dev, &(hsad_queue_options_t){.size = e->qsize}, &q);
  if (!s && prepared) s = hsad_launch_prepare(q, e->k, &l, &pl);
  if (s) {
    snprintf(r->note, sizeof r->note, "%s", hsad_last_error());
    return -1;
  }
  uint32_t blocks = count / BLOCK;
  double *v = calloc(blocks ? blocks : 1, sizeof *v);
  for (uint32_t b = 0; b < blocks && !s; b++) {
    uint64_t t0 = hsad_now_ns();
    for (uint32_t i = 0; i < BLOCK && !s; i++) s = hsad_submit(q, e, &l, pl, NULL);
    v[b] = (double)(hsad_now_ns() - t0) / BLOCK;
  }
  if (!s) s = hsad_queue_wait_idle(q, hsad_now_ns() + 120000000000ull);
  if (s) snprintf(r->note, sizeof r->note, "%s", hsad_last_error());
  else if (blocks) stats(v, blocks, r);
  /* a chain of CHAIN dispatches (barrier bit) with one completion on the last, then wait */
  double ch[CHAIN_RUNS];
  uint32_t runs = 0;
  for (; runs < CHAIN_RUNS && !s && !g_only; runs++) {
    uint64_t t0 = hsad_now_ns();
    hsad_completion_t *c = NULL;
    for (int i = 0; i < CHAIN && !s; i++) s = hsad_submit(q, e, &l, pl, i == CHAIN - 1 ? &c : NULL);
    if (!s) s = hsad_completion_wait(c, hsad_now_ns() + 10000000000ull);
    hsad_completion_release(c);
    ch[runs] = (double)(hsad_now_ns() - t0) / 1e3;
  }
  if (!s && runs) {
    qsort(ch, runs, sizeof *ch, cmp_d);
    r->chain_ok = true;
    r->chain_min = ch[0];
    r->chain_median = ch[runs / 2];
    r->chain_max = ch[runs - 1];
  }
  free(v);
  hsad_launch_destroy(pl);
  hsad_queue_destroy(q);
  return s ? -1 : 0;
}

static int run_rocr(env_t *e, uint32_t count, result_t *r) {
  const hsad_device_kernel_desc_t *kd = hsad_device_kernel_desc(e->k);
  hsa_agent_t agent = hsad_device_agent(e->dev);
  rocr_ctx_t c = {.kernel_object = kd->kernel_object, .group = kd->group_segment_fixed_size,
                  .priv = kd->private_segment_fixed_size};
  hsa_status_t st = hsad_rocr.hsa_queue_create(agent, e->qsize, HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX,
                                     UINT32_MAX, &c.q);
  if (st != HSA_STATUS_SUCCESS) {
    snprintf(r->note, sizeof r->note, "hsa_queue_create failed: 0x%x", (unsigned)st);
    return -1;
  }
  /* the kernarg segment (hidden arguments of the empty kernel) is built once, as a textbook
   * loop would reuse it */
  uint32_t ksize = kd->kernarg_segment_size ? kd->kernarg_segment_size : 64;
  hsad_status_t s = hsad_buffer_alloc(e->dev, (ksize + 63) & ~63u, &c.kernarg);
  hsad_dispatch_dims_t dd = {.grid_size = {1, 1, 1}, .workgroup_size = {1, 1, 1}, .dims = 1};
  hsad_kernarg_runtime_t krt = {.queue_ptr = (uint64_t)(uintptr_t)c.q};
  uint32_t group = 0;
  if (!s) s = hsad_kernarg_build(kd->codeobj_kernel, NULL, 0, &dd, &krt, c.kernarg, ksize, &group);
  if (s) {
    snprintf(r->note, sizeof r->note, "%s", hsad_last_error());
    hsad_rocr.hsa_queue_destroy(c.q);
    return -1;
  }
  uint32_t blocks = count / BLOCK;
  double *v = calloc(blocks ? blocks : 1, sizeof *v);
  for (uint32_t b = 0; b < blocks; b++) {
    uint64_t t0 = hsad_now_ns();
    for (uint32_t i = 0; i < BLOCK; i++) bench_rocr_submit(&c);
    v[b] = (double)(hsad_now_ns() - t0) / BLOCK;
  }
  wait_drained(c.q);
  if (blocks) stats(v, blocks, r);
  /* the chain: CHAIN packets, a signal on the last, hsa_signal_wait_scacquire */
  hsa_signal_t sig;
  if (!g_only && hsad_rocr.hsa_signal_create(1, 0, NULL, &sig) == HSA_STATUS_SUCCESS) {
    double ch[CHAIN_RUNS];
    for (uint32_t run = 0; run < CHAIN_RUNS; run++) {
      uint64_t t0 = hsad_now_ns();
      hsad_rocr.hsa_signal_store_relaxed(sig, 1);
      for (int i = 0; i < CHAIN - 1; i++) bench_rocr_submit(&c);
      c.signal = sig;
      bench_rocr_submit(&c);
      c.signal.handle = 0;
      while (hsad_rocr.hsa_signal_wait_scacquire(sig, HSA_SIGNAL_CONDITION_LT, 1, UINT64_MAX,
                                       HSA_WAIT_STATE_BLOCKED) >= 1) {
      }
      ch[run] = (double)(hsad_now_ns() - t0) / 1e3;
    }
    qsort(ch, CHAIN_RUNS, sizeof *ch, cmp_d);
    r->chain_ok = true;
    r->chain_min = ch[0];
    r->chain_median = ch[CHAIN_RUNS / 2];
    r->chain_max = ch[CHAIN_RUNS - 1];
    hsad_rocr.hsa_signal_destroy(sig);
  }
  free(v);
  hsad_rocr.hsa_queue_destroy(c.q);
  hsad_buffer_free(c.kernarg);
  return 0;
}

/* ---- HIP: a separate hipcc-built program ----------------------------------------------- */

static int exe_dir(char *out, size_t n) {
  char exe[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) return -1;
  exe[len] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash) return -1;
  *slash = '\0';
  snprintf(out, n, "%s", exe);
  return 0;
}

/* hsad-bench-hip links ROCr itself: put the kfd-emu directory this process uses first on
 * LD_LIBRARY_PATH, so it (and callgrind running it) sees the same emulated GPU. */
static void export_emu_dir(void) {
  const char *emu = hsad_rocr_emu_dir(), *old = getenv("LD_LIBRARY_PATH");
  if (!emu) return;
  char path[2 * PATH_MAX];
  snprintf(path, sizeof path, "%s%s%s", emu, old && *old ? ":" : "", old ? old : "");
  setenv("LD_LIBRARY_PATH", path, 1);
}

/* Runs `cmd` and parses "ns min median max" from its last line. */
static int run_hip(uint32_t count, result_t *r) {
  char dir[PATH_MAX], exe[PATH_MAX + 32], cmd[2 * PATH_MAX];
  export_emu_dir();
  if (exe_dir(dir, sizeof dir)) return -1;
  snprintf(exe, sizeof exe, "%s/hsad-bench-hip", dir);
  if (access(exe, X_OK) != 0) {
    snprintf(r->note, sizeof r->note, "HIP path absent: %s not found (built with hipcc; "
             "in the source tree: make build/bin/hsad-bench-hip)", exe);
    return -1;
  }
  snprintf(cmd, sizeof cmd, "'%s' %u", exe, count);
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  char line[256];
  int ok = 0;
  while (fgets(line, sizeof line, p))
    if (sscanf(line, "ns %lf %lf %lf", &r->ns_min, &r->ns_median, &r->ns_max) == 3) ok = 1;
    else if (sscanf(line, "chain_us %lf %lf %lf", &r->chain_min, &r->chain_median,
                    &r->chain_max) == 3)
      r->chain_ok = true;
  int st = pclose(p);
  if (!ok || st != 0) {
    snprintf(r->note, sizeof r->note, "hsad-bench-hip failed (exit status %d)", st);
    return -1;
  }
  return 0;
}

/* ---- callgrind ---------------------------------------------------------------------------- */

/* Runs `argv` under callgrind collecting only inside `fn`; returns the total Ir or -1. */
static double callgrind_ir(char *const *argv, const char *fn) {
  char out[] = "/tmp/hsad-bench-cg-XXXXXX";
  int fd = mkstemp(out);
  if (fd < 0) return -1;
  close(fd);
  char opt_out[64], opt_fn[128];
  snprintf(opt_out, sizeof opt_out, "--callgrind-out-file=%s", out);
  snprintf(opt_fn, sizeof opt_fn, "--toggle-collect=%s", fn);
  const char *vg[32] = {"valgrind", "--tool=callgrind", "--quiet", opt_out, opt_fn};
  int n = 5;
  for (int i = 0; argv[i] && n < 31; i++) vg[n++] = argv[i];
  vg[n] = NULL;
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      dup2(devnull, 1);
      dup2(devnull, 2);
    }
    execvp("valgrind", (char *const *)vg);
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
    unlink(out);
    return -1;
  }
  FILE *f = fopen(out, "r");
  double ir = -1;
  char line[512];
  while (f && fgets(line, sizeof line, f)) {
    double v;
    if (sscanf(line, "totals: %lf", &v) == 1 || sscanf(line, "summary: %lf", &v) == 1) ir = v;
  }
  if (f) fclose(f);
  unlink(out);
  return ir;
}

/* ---- the command ------------------------------------------------------------------------- */

#define COUNT_MAX 1000000000u
#define EMU_NOTE "kfd-emu: kernels ran as host twins; timings are host-side costs, not GPU performance"

/* A submit count: an integer from BLOCK to COUNT_MAX, a multiple of BLOCK (submits are timed in
 * blocks of BLOCK). */
static int parse_count(const char *opt, const char *v, uint32_t *out) {
  const char *p = v;
  while (*p == ' ' || *p == '\t') p++;
  char *end;
  errno = 0;
  unsigned long long x = *p >= '0' && *p <= '9' ? strtoull(p, &end, 10) : 0;
  if (*p < '0' || *p > '9' || *end || errno || x < BLOCK || x > COUNT_MAX || x % BLOCK) {
    fprintf(stderr, "hsad bench dispatch: %s %s: expected a multiple of %u from %u to %u "
            "(submits are timed in blocks of %u)\n", opt, v, BLOCK, BLOCK, COUNT_MAX, BLOCK);
    return -1;
  }
  *out = (uint32_t)x;
  return 0;
}

int hsad_cmd_bench(int argc, char **argv) {
  bool json = false, cg = true;
  uint32_t count = 100000, cg_count = 20000, devi = 0;
  const char *only = NULL;
  /* `hsad bench` alone (make bench) runs the dispatch benchmark */
  int first = 1;
  if (argc >= 2 && !strcmp(argv[1], "dispatch")) first = 2;
  else if (argc >= 2 && argv[1][0] != '-') {
    fprintf(stderr, "hsad bench: unknown benchmark '%s' (this build has: dispatch)\n", argv[1]);
    usage(stderr);
    return 2;
  }
  for (int i = first; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--json")) json = true;
    else if (!strcmp(a, "--no-callgrind")) cg = false;
    else if (!strcmp(a, "--count") && v) {
      if (parse_count(a, argv[++i], &count)) return 2;
    } else if (!strcmp(a, "--callgrind-count") && v) {
      if (parse_count(a, argv[++i], &cg_count)) return 2;
    } else if (!strcmp(a, "--device") && v) {
      char *end;
      errno = 0;
      unsigned long long d = strtoull(v, &end, 10);
      if (*v < '0' || *v > '9' || *end || errno || d > UINT32_MAX) {
        fprintf(stderr, "hsad bench dispatch: --device %s: expected a device index (0, 1, ...)\n", v);
        return 2;
      }
      devi = (uint32_t)d;
      i++;
    }
    else if (!strcmp(a, "--only") && v) only = argv[++i]; /* internal: one path, for callgrind */
    else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      return 0;
    } else {
      fprintf(stderr, "hsad bench dispatch: unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  env_t e;
  if (open_env(&e, devi, count)) return 1;
  bool emu = hsad_rocr_is_emulated();
  if (only) {
    g_only = true;
    result_t r = {.path = only};
    int rc = !strcmp(only, "hsad")            ? run_hsad(&e, count, false, &r)
             : !strcmp(only, "hsad-prepared") ? run_hsad(&e, count, true, &r)
                                              : run_rocr(&e, count, &r);
    hsad_program_destroy(e.prog);
    hsad_runtime_close(e.rt);
    return rc ? 1 : 0;
  }
  result_t res[NPATHS] = {{.path = "hsad", .instr = -1}, {.path = "rocr-textbook", .instr = -1},
                          {.path = "hip", .instr = -1}, {.path = "hsad-prepared", .instr = -1}};
  res[0].ok = run_hsad(&e, count, false, &res[0]) == 0;
  res[3].ok = run_hsad(&e, count, true, &res[3]) == 0;
  res[1].ok = run_rocr(&e, count, &res[1]) == 0;
  const char *isa = hsad_device_info(e.dev)->isa_name;
  char isa_copy[HSAD_ISA_NAME_MAX];
  snprintf(isa_copy, sizeof isa_copy, "%s", isa);
  hsad_program_destroy(e.prog);
  hsad_runtime_close(e.rt);
  res[2].ok = run_hip(count, &res[2]) == 0;
  if (cg) {
    char self[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len > 0) {
      self[len] = '\0';
      char cnt[16], dv[16];
      snprintf(cnt, sizeof cnt, "%u", cg_count < BLOCK ? BLOCK : cg_count);
      snprintf(dv, sizeof dv, "%u", devi);
      const char *fns[NPATHS] = {"hsad_kernel_dispatch", "bench_rocr_submit", NULL,
                                 "hsad_prepared_dispatch"};
      const char *paths[NPATHS] = {"hsad", "rocr", NULL, "hsad-prepared"};
      for (int p = 0; p < NPATHS; p++) {
        if (!res[p].ok || !fns[p]) continue;
        char *av[] = {self, "bench", "dispatch", "--only", (char *)paths[p], "--count", cnt,
                      "--device", dv, NULL};
        double ir = callgrind_ir(av, fns[p]);
        if (ir >= 0) res[p].instr = ir / (double)(cg_count < BLOCK ? BLOCK : cg_count);
      }
      if (res[2].ok) {
        char dir[PATH_MAX], exe[PATH_MAX + 32];
        if (!exe_dir(dir, sizeof dir)) {
          snprintf(exe, sizeof exe, "%s/hsad-bench-hip", dir);
          char *av[] = {exe, cnt, NULL};
          double ir = callgrind_ir(av, "bench_hip_submit");
          if (ir >= 0) res[2].instr = ir / (double)(cg_count < BLOCK ? BLOCK : cg_count);
        }
      }
    }
  }
  if (json) {
    printf("{\"bench\": \"dispatch\", \"device\": \"%s\", \"emulated\": %s, ", isa_copy,
           emu ? "true" : "false");
    if (emu) printf("\"note\": \"%s\", ", EMU_NOTE);
    printf("\"submits\": %u, \"results\": [", count);
    bool first = true;
    for (int i = 0; i < NPATHS; i++) {
      printf("%s{\"path\": \"%s\"", first ? "" : ", ", res[i].path);
      first = false;
      if (res[i].ok)
        printf(", \"ns_per_submit\": {\"min\": %.1f, \"median\": %.1f, \"max\": %.1f}",
               res[i].ns_min, res[i].ns_median, res[i].ns_max);
      else
        printf(", \"ns_per_submit\": null, \"note\": \"%s\"", res[i].note);
      if (res[i].instr >= 0) printf(", \"instructions_per_submit\": %.1f", res[i].instr);
      else printf(", \"instructions_per_submit\": null");
      if (res[i].chain_ok)
        printf(", \"chain10_wait_us\": {\"min\": %.2f, \"median\": %.2f, \"max\": %.2f}",
               res[i].chain_min, res[i].chain_median, res[i].chain_max);
      printf("}");
    }
    printf("]");
    if (res[0].ok && res[1].ok) printf(", \"ratio_ns_hsad_over_rocr\": %.3f", res[0].ns_median / res[1].ns_median);
    if (res[0].ok && res[2].ok) printf(", \"ratio_ns_hsad_over_hip\": %.4f", res[0].ns_median / res[2].ns_median);
    if (res[0].instr > 0 && res[1].instr > 0)
      printf(", \"ratio_instr_hsad_over_rocr\": %.3f", res[0].instr / res[1].instr);
    if (res[0].instr > 0 && res[2].instr > 0)
      printf(", \"ratio_instr_hsad_over_hip\": %.4f", res[0].instr / res[2].instr);
    if (res[3].instr > 0 && res[1].instr > 0)
      printf(", \"ratio_instr_hsad_prepared_over_rocr\": %.3f", res[3].instr / res[1].instr);
    printf("}\n");
  } else {
    printf("dispatch submit cost on %s%s, %u submits of an empty kernel per path\n", isa_copy,
           emu ? " (kfd-emu)" : "", count);
    if (emu) printf("(" EMU_NOTE ")\n");
    printf("%-14s %10s %10s %10s %14s\n", "path", "min ns", "median ns", "max ns", "instr/submit");
    static const int order[NPATHS] = {0, 3, 1, 2}; /* hsad, hsad-prepared, textbook, hip */
    for (int o = 0; o < NPATHS; o++) {
      int i = order[o];
      if (!res[i].ok) {
        printf("%-14s %s\n", res[i].path, res[i].note);
        continue;
      }
      printf("%-14s %10.1f %10.1f %10.1f ", res[i].path, res[i].ns_min, res[i].ns_median,
             res[i].ns_max);
      if (res[i].instr >= 0) printf("%14.1f", res[i].instr);
      else printf("%14s", cg ? "n/a" : "-");
      if (res[i].chain_ok) printf("   chain of 10 + wait: median %.2f us", res[i].chain_median);
      printf("\n");
    }
    if (res[0].ok && res[1].ok)
      printf("hsad / rocr-textbook: %.2fx ns", res[0].ns_median / res[1].ns_median);
    if (res[0].instr > 0 && res[1].instr > 0)
      printf(", %.2fx instructions", res[0].instr / res[1].instr);
    if (res[0].ok && res[1].ok) printf("\n");
    if (res[0].ok && res[2].ok) {
      printf("hsad / hip: %.3fx ns", res[0].ns_median / res[2].ns_median);
      if (res[0].instr > 0 && res[2].instr > 0) printf(", %.3fx instructions", res[0].instr / res[2].instr);
      printf("\n");
    }
    if (res[3].ok && res[1].ok) {
      printf("hsad-prepared / rocr-textbook: %.2fx ns", res[3].ns_median / res[1].ns_median);
      if (res[3].instr > 0 && res[1].instr > 0)
        printf(", %.2fx instructions", res[3].instr / res[1].instr);
      printf("\n");
    }
  }
  return res[0].ok && res[1].ok ? 0 : 1;
}
