/* bench_pool.c - suite `pool`: alloc + free of pinned host memory of 4 KiB, 1 MiB and 64 MiB.
 *
 * Paths:
 *   pool            hsad_host_pool_alloc + hsad_host_pool_free on the device's NUMA node pool,
 *                   warm (one alloc+free before the timing: every timed alloc is a hit);
 *   pool-4threads   4 threads at once, each doing the same on the same pool (ns per
 *                   alloc+free pair per thread: flat when nothing serialises them);
 *   hsa-pool        hsa_amd_memory_pool_allocate + hsa_amd_memory_pool_free on the fine-grained
 *                   pool of the device's nearest CPU agent (what every pool miss costs);
 *   hip             hipHostMalloc + hipHostFree (hsad-bench-hip);
 *   stream          device memory, stream-ordered: hsad_mem_alloc_async + hsad_mem_free_async
 *                   on one queue of a hsad_mem_pool_t (reuse once warm: no host wait; a free
 *                   names the queue's timeline with no packet of its own, and nothing else
 *                   runs on the queue, so the pair submits no packet; release threshold
 *                   UINT64_MAX), then one wait for the queue;
 *   hip-stream      hipMalloc + hipFree (the note names the API): HIP 5.2.3 declares
 *                   hipMallocAsync, but on kfd-emu its first call never returned.
 * Instructions (valgrind --tool=callgrind, unless --no-callgrind), 4 KiB only, per pair, counted
 * inside the two calls of the calling thread (deterministic for hsad): `stream` (as timed: the
 * free names the queue's timeline with no packet), `stream-dispatch` (row `stream`, config
 * `after-dispatch`: each free follows an empty-kernel dispatch with a completion, so each reuse
 * submits rule 2's barrier-AND; the dispatch is not counted) and `hip-stream` (hipMalloc +
 * hipFree in hsad-bench-hip --callgrind-devmalloc: HIP's host work, its wait in hipFree
 * included).
 * Per round, size and path: N pairs (pool: --count; the others: --count / 50, at most 200,
 * and 20 for 64 MiB); the sample is the mean ns per pair. Ratios hip / pool and
 * hsa-pool / pool per size (target: >= 100x once warm).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include "hsa-dispatch/hsad_rocr.h"
#include "memory/hsad_memory.h"
#include "tools/hsad/bench_paths.h"
#include "tools/hsad/bench_threads.h"

static const char *const paths[] = {"pool", "pool-4threads", "hsa-pool", "hip", "stream",
                                    "hip-stream"};
#define NP 6
#define NSZ 3
static const size_t sizes[NSZ] = {4096, (size_t)1 << 20, (size_t)64 << 20};

/* One alloc + free pair of `size` bytes on `pool`; nonzero: either failed. */
static int pool_pair(hsad_host_pool_t *pool, size_t size) {
  void *p;
  return hsad_host_pool_alloc(pool, size, &p) || hsad_host_pool_free(pool, p);
}

/* What each thread of `pool` / `pool-4threads` does (bench_threads: one warm-up pair untimed,
 * then n pairs timed). */
typedef struct pool_job {
  hsad_host_pool_t *pool;
  size_t size;
} pool_job_t;
static int pool_warm(void *ctx, uint32_t t) {
  const pool_job_t *j = ctx;
  (void)t;
  return pool_pair(j->pool, j->size);
}
static int pool_pairs(void *ctx, uint32_t t, uint32_t n) {
  const pool_job_t *j = ctx;
  (void)t;
  for (uint32_t i = 0; i < n; i++)
    if (pool_pair(j->pool, j->size)) return 1;
  return 0;
}

/* `threads` threads (1: the calling thread) doing n pairs each; the row's sample is the mean
 * over the threads of ns per pair. */
static int run_pool(hsad_host_pool_t *pool, size_t size, uint32_t n, uint32_t threads,
                    bench_row_t *row) {
  pool_job_t pj = {.pool = pool, .size = size};
  const bench_threads_job_t job = {.prepare = pool_warm, .run = pool_pairs, .ctx = &pj,
                                   .one_inline = true};
  double ns, wall;
  int rc = bench_threads_measure(&job, threads, n, &ns, &wall);
  if (rc) {
    bench_row_absent(row, "%s", rc == BENCH_THREADS_NOT_STARTED ? "pthread_create failed"
                                                                 : hsad_last_error());
    return -1;
  }
  bench_sample(row, "ns_per_alloc_free", "ns", ns);
  return 0;
}

typedef struct fine_find { hsa_amd_memory_pool_t pool; bool found; } fine_find_t;
static hsa_status_t find_fine(hsa_amd_memory_pool_t p, void *data) {
  fine_find_t *f = data;
  uint32_t flags = 0;
  hsa_amd_segment_t seg;
  bool alloc = false;
  hsad_rocr.hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg);
  hsad_rocr.hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
  hsad_rocr.hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
  if (!f->found && seg == HSA_AMD_SEGMENT_GLOBAL && alloc &&
      (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED)) {
    f->pool = p;
    f->found = true;
  }
  return HSA_STATUS_SUCCESS;
}
typedef struct cpu_find { uint32_t node; hsa_agent_t agent; bool found; } cpu_find_t;
static hsa_status_t find_cpu(hsa_agent_t a, void *data) {
  cpu_find_t *c = data;
  hsa_device_type_t t;
  uint32_t node = 0;
  hsad_rocr.hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t);
  hsad_rocr.hsa_agent_get_info(a, HSA_AGENT_INFO_NODE, &node);
  if (t == HSA_DEVICE_TYPE_CPU && node == c->node && !c->found) {
    c->agent = a;
    c->found = true;
  }
  return HSA_STATUS_SUCCESS;
}

static int run_hsa(hsa_amd_memory_pool_t pool, size_t size, uint32_t n, bench_row_t *row) {
  uint64_t t0 = hsad_now_ns();
  for (uint32_t i = 0; i < n; i++) {
    void *p = NULL;
    if (hsad_rocr.hsa_amd_memory_pool_allocate(pool, size, 0, &p) != HSA_STATUS_SUCCESS) {
      bench_row_absent(row, "hsa_amd_memory_pool_allocate(%zu bytes) failed", size);
      return -1;
    }
    hsad_rocr.hsa_amd_memory_pool_free(p);
  }
  bench_sample(row, "ns_per_alloc_free", "ns", (double)(hsad_now_ns() - t0) / n);
  return 0;
}

static int run_hip(bench_ctx_t *ctx, size_t size, uint32_t n, bench_row_t *row) {
  char note[BENCH_NOTE_MAX], cmd[96], reply[BENCH_NOTE_MAX];
  bench_child_t *hip = bench_hip(ctx, note, sizeof note);
  double ns;
  snprintf(cmd, sizeof cmd, "hostmalloc %zu %u", size, n);
  if (!hip || bench_child_cmd(ctx, hip, cmd, reply, sizeof reply) ||
      sscanf(reply, "%lf", &ns) != 1) {
    bench_row_absent(row, "%s", hip ? reply : note);
    return -1;
  }
  bench_sample(row, "ns_per_alloc_free", "ns", ns);
  return 0;
}

static int run_stream(bench_ctx_t *ctx, hsad_mem_pool_t *pool, hsad_queue_t *q, size_t size,
                      uint32_t n, bench_row_t *row) {
  uint64_t dl = hsad_now_ns() + ctx->timeout_s * 1000000000ull;
  void *p = NULL;
  hsad_status_t s = HSAD_OK;
  uint64_t t0 = hsad_now_ns();
  for (uint32_t i = 0; i < n && !s; i++) {
    s = hsad_mem_alloc_async(pool, q, size, dl, &p);
    if (!s) s = hsad_mem_free_async(q, p, dl);
  }
  if (!s) s = hsad_queue_wait_idle(q, dl);
  if (s) {
    bench_row_absent(row, "%s", hsad_last_error());
    return -1;
  }
  bench_sample(row, "ns_per_alloc_free", "ns", (double)(hsad_now_ns() - t0) / n);
  return 0;
}

static int run_hip_stream(bench_ctx_t *ctx, size_t size, uint32_t n, bench_row_t *row) {
  char note[BENCH_NOTE_MAX], cmd[96], reply[BENCH_NOTE_MAX], api[32] = "";
  bench_child_t *hip = bench_hip(ctx, note, sizeof note);
  double ns;
  snprintf(cmd, sizeof cmd, "devmalloc %zu %u", size, n);
  if (!hip || bench_child_cmd(ctx, hip, cmd, reply, sizeof reply) ||
      sscanf(reply, "%lf %31s", &ns, api) < 1) {
    bench_row_absent(row, "%s", hip ? reply : note);
    return -1;
  }
  snprintf(row->note, sizeof row->note, "%s", api);
  bench_sample(row, "ns_per_alloc_free", "ns", ns);
  return 0;
}

/* `hsad bench --child stream|stream-dispatch --count N --code-object F`: N warm 4 KiB
 * alloc + free pairs between CALLGRIND_START/STOP_INSTRUMENTATION (see the header). */
int bench_pool_child(bench_ctx_t *ctx, const char *path) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  bool disp = !strcmp(path, "stream-dispatch");
  uint32_t n = ctx->count > 4000 ? 4000 : ctx->count;
  uint64_t dl = hsad_now_ns() + ctx->timeout_s * 1000000000ull;
  hsad_mem_pool_t *pool = NULL;
  hsad_queue_t *q = NULL;
  hsad_completion_t c;
  void *p = NULL;
  /* 3 packets a pair at most: the ring never fills, so no call waits for room */
  hsad_status_t s = disp || !strcmp(path, "stream") ? HSAD_OK : HSAD_ERR_INVALID_ARGUMENT;
  if (!s) s = hsad_mem_pool_create(ctx->dev, &pool);
  if (!s) s = hsad_mem_pool_set_release_threshold(pool, UINT64_MAX);
  if (!s) s = hsad_queue_create(ctx->dev, &(hsad_queue_options_t){.size = 16384}, &q);
  if (!s) s = hsad_mem_alloc_async(pool, q, 4096, dl, &p);
  if (!s) s = hsad_mem_free_async(q, p, dl);
  if (s) {
    printf("@bench err %s: %s\n", path, s == HSAD_ERR_INVALID_ARGUMENT && !pool ? "unknown path"
                                                                       : hsad_last_error());
    fflush(stdout);
    _exit(1);
  }
  printf("@bench stage measure\n");
  CALLGRIND_START_INSTRUMENTATION; /* collected inside the two calls only (the dispatch not) */
  for (uint32_t i = 0; i < n && !s; i++) {
    s = hsad_mem_alloc_async(pool, q, 4096, dl, &p);
    if (!s && disp) s = hsad_kernel_dispatch(q, ctx->k, &bench_launch, dl, &c, NULL);
    if (!s) s = hsad_mem_free_async(q, p, dl);
  }
  CALLGRIND_STOP_INSTRUMENTATION;
  if (!s) s = hsad_queue_wait_idle(q, dl);
  printf(s ? "@bench err %s\n" : "@bench done\n", hsad_last_error());
  fflush(stdout);
  _exit(s ? 1 : 0);
}

/* Instructions per 4 KiB pair (see the header): the HIP child in the background while the
 * hsad children run. */
static void pool_callgrind(bench_ctx_t *ctx, bench_row_t *stream, bench_row_t *after,
                           bench_row_t *hip) {
#ifdef __SANITIZE_ADDRESS__
  snprintf(stream->note, sizeof stream->note, "callgrind: not run (AddressSanitizer build)");
  return;
#endif
  uint32_t n = ctx->cg_count > 4000 ? 4000 : ctx->cg_count;
  char cnt[16], dv[16], co[64], note[BENCH_NOTE_MAX];
  snprintf(cnt, sizeof cnt, "%u", n);
  snprintf(dv, sizeof dv, "%u", ctx->devi);
  snprintf(co, sizeof co, "/proc/self/fd/%d", ctx->elf_fd);
  char *av_hip[] = {ctx->hip_exe, "--callgrind-devmalloc", cnt, NULL};
  bench_cg_job_t hip_job;
  bool hip_running = false;
  double ir = 0;
  if (hip && ctx->hip_exe[0]) {
    bench_progress(ctx, "pool", "hip-stream", "callgrind, %u pairs (in the background)", n);
    hip_running = bench_callgrind_start(ctx, av_hip, "hipMalloc,hipFree", &hip_job, note,
                                        sizeof note) == 0;
    if (!hip_running) snprintf(hip->note, sizeof hip->note, "%s", note);
  }
  bench_row_t *rows[2] = {stream, after};
  const char *paths_cg[2] = {"stream", "stream-dispatch"};
  for (int i = 0; i < 2 && ctx->elf_fd >= 0 && !bench_stopped(); i++) {
    char *av[] = {ctx->self, "bench", "--child", (char *)paths_cg[i], "--count", cnt, "--device",
                  dv, "--code-object", co, NULL};
    bench_progress(ctx, "pool", paths_cg[i], "callgrind, %u pairs", n);
    if (bench_callgrind(ctx, av, "hsad_mem_alloc_async,hsad_mem_free_async", &ir, note,
                        sizeof note) == 0)
      bench_sample(rows[i], "instructions_per_pair", "instructions", ir / n);
    else if (!bench_stopped())
      snprintf(rows[i]->note, sizeof rows[i]->note, "%s", note);
  }
  if (hip_running) {
    bench_progress(ctx, "pool", "hip-stream", "callgrind: waiting for it");
    if (bench_callgrind_finish(ctx, &hip_job, &ir, note, sizeof note) == 0)
      bench_sample(hip, "instructions_per_pair", "instructions", ir / n);
    else if (!bench_stopped())
      snprintf(hip->note, sizeof hip->note, "%s", note);
  }
}

/* The pool suite's paths, their rows and what they allocate from. */
typedef struct pool_suite {
  uint32_t n_pool, n_slow; /* pairs per sample: the pool's, the others' */
  bench_row_t *rows[NP][NSZ];
  bool ok[NP];
  hsad_mem_pool_t *spool; /* stream: the stream-ordered pool and its queue */
  hsad_queue_t *sq;
  hsad_host_pool_t *pool;
  hsad_host_pool_stats_t st0; /* the host pool's counters before the suite */
  fine_find_t ff;             /* hsa-pool: the fine-grained CPU pool */
} pool_suite_t;

/* The pools of every path; a path whose pool is missing has its rows' notes and ok[p] false. */
static void pool_open(bench_ctx_t *ctx, pool_suite_t *ps) {
  /* threshold: keep every block (as CUDA users set cudaMemPoolAttrReleaseThreshold to
   * UINT64_MAX): with 0, a free whose barrier the CP already passed is released at once */
  if (hsad_mem_pool_create(ctx->dev, &ps->spool) ||
      hsad_mem_pool_set_release_threshold(ps->spool, UINT64_MAX) ||
      hsad_queue_create(ctx->dev, NULL, &ps->sq)) {
    for (int k = 0; k < NSZ; k++) bench_row_absent(ps->rows[4][k], "%s", hsad_last_error());
    ps->ok[4] = false;
  }
  if (hsad_host_pool_get(ctx->dev, &ps->pool)) {
    for (int k = 0; k < NSZ; k++) {
      bench_row_absent(ps->rows[0][k], "%s", hsad_last_error());
      bench_row_absent(ps->rows[1][k], "%s", hsad_last_error());
    }
    ps->ok[0] = ps->ok[1] = false;
  }
  if (ps->pool) hsad_host_pool_stats(ps->pool, &ps->st0);
  const hsad_device_info_t *di = hsad_device_info(ctx->dev);
  const hsad_cpu_info_t *ci = hsad_cpu_info(ctx->rt, di->nearest_cpu < 0 ? 0 : (uint32_t)di->nearest_cpu);
  cpu_find_t cf = {.node = ci ? ci->numa_node : 0};
  hsad_rocr.hsa_iterate_agents(find_cpu, &cf);
  if (cf.found) hsad_rocr.hsa_amd_agent_iterate_memory_pools(cf.agent, find_fine, &ps->ff);
  if (!ps->ff.found) {
    for (int k = 0; k < NSZ; k++) bench_row_absent(ps->rows[2][k], "no fine-grained CPU pool found");
    ps->ok[2] = false;
  }
}

/* Round r: every size, every path still ok, in an order rotated per round. */
static void pool_round(bench_ctx_t *ctx, pool_suite_t *ps, uint32_t r) {
  for (int k = 0; k < NSZ && !bench_stopped(); k++) {
    uint32_t slow = k == 2 ? 20 : ps->n_slow;
    for (int i = 0; i < NP && !bench_stopped(); i++) {
      int p = (int)((i + r) % NP);
      if (!ps->ok[p]) continue;
      bench_row_t *row = ps->rows[p][k];
      int rc = p == 0 ? run_pool(ps->pool, sizes[k], ps->n_pool, 1, row)
             : p == 1 ? run_pool(ps->pool, sizes[k], ps->n_pool, 4, row)
             : p == 2 ? run_hsa(ps->ff.pool, sizes[k], slow, row)
             : p == 3 ? run_hip(ctx, sizes[k], slow, row)
             : p == 4 ? run_stream(ctx, ps->spool, ps->sq, sizes[k], ps->n_slow, row)
                      : run_hip_stream(ctx, sizes[k], ps->n_slow, row);
      if (rc) ps->ok[p] = false;
    }
  }
}

/* The host pool's counters over the suite, in the first row's note. */
static void pool_note_counters(pool_suite_t *ps) {
  if (ps->pool && !ps->rows[0][0]->absent) {
    hsad_host_pool_stats_t st;
    hsad_host_pool_stats(ps->pool, &st);
    snprintf(ps->rows[0][0]->note, sizeof ps->rows[0][0]->note,
             "pool counters over the suite: %llu hits, %llu misses, %llu trims",
             (unsigned long long)(st.hits - ps->st0.hits),
             (unsigned long long)(st.misses - ps->st0.misses),
             (unsigned long long)(st.trims - ps->st0.trims));
  }
}

/* The stream pool released (its frees reached first) and its queue destroyed. */
static void pool_close(bench_ctx_t *ctx, pool_suite_t *ps) {
  if (ps->sq) hsad_queue_wait_idle(ps->sq, hsad_now_ns() + ctx->timeout_s * 1000000000ull);
  if (ps->spool) hsad_mem_pool_destroy(ps->spool, hsad_now_ns() + ctx->timeout_s * 1000000000ull);
  if (ps->sq) hsad_queue_destroy(ps->sq);
}

int bench_suite_pool(bench_ctx_t *ctx, bench_suite_result_t *out) {
  pool_suite_t ps = {.n_pool = ctx->count, .n_slow = ctx->count / 50,
                     .ok = {true, true, true, true, true, true}};
  if (ps.n_slow < 10) ps.n_slow = 10;
  if (ps.n_slow > 200) ps.n_slow = 200;
  snprintf(out->title, sizeof out->title,
           "pinned host alloc + free: hsad pool (1 and 4 threads) vs hsa_amd_memory_pool_allocate "
           "vs hipHostMalloc");
  snprintf(out->params, sizeof out->params,
           "rounds=%u pairs_per_sample: pool %u, others %u (64 MiB: 20) (means)", ctx->rounds,
           ps.n_pool, ps.n_slow);
  out->plot_metric = "ns_per_alloc_free";
  out->plot_xname = "bytes";
  /* add every row first: adding may move the rows (the pointers are taken afterwards) */
  for (int p = 0; p < NP; p++)
    for (int k = 0; k < NSZ; k++) bench_row_add(out, paths[p], "", "bytes", (double)sizes[k]);
  for (int p = 0; p < NP; p++)
    for (int k = 0; k < NSZ; k++) ps.rows[p][k] = bench_row_find(out, paths[p], "", (double)sizes[k]);
  pool_open(ctx, &ps);
  for (uint32_t r = 0; r < ctx->rounds && !bench_stopped(); r++) {
    pool_round(ctx, &ps, r);
    bench_progress(ctx, "pool", "all paths", "round %u/%u", r + 1, ctx->rounds);
  }
  pool_note_counters(&ps);
  if (ctx->callgrind && !bench_stopped()) {
    bench_row_t *after = bench_row_add(out, "stream", "after-dispatch", "bytes", 4096.0);
    for (int p = 0; p < NP; p++) /* adding may have moved the rows */
      for (int k = 0; k < NSZ; k++) ps.rows[p][k] = bench_row_find(out, paths[p], "", (double)sizes[k]);
    pool_callgrind(ctx, ps.rows[4][0], after, ps.rows[5][0]); /* its own child */
  }
  for (int k = 0; k < NSZ; k++) {
    bench_ratio(out, "hip", "pool", "", (double)sizes[k], "ns_per_alloc_free");
    bench_ratio(out, "hsa-pool", "pool", "", (double)sizes[k], "ns_per_alloc_free");
    bench_ratio(out, "pool-4threads", "pool", "", (double)sizes[k], "ns_per_alloc_free");
    bench_ratio(out, "hip-stream", "stream", "", (double)sizes[k], "ns_per_alloc_free");
  }
  pool_close(ctx, &ps);
  return ps.ok[0] ? 0 : -1;
}
