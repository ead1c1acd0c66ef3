/* bench_graph.c - suite `graph`: a kernel graph launched whole vs node by node, hsad vs HIP.
 *
 * Graphs (bench_graph_shape.h, config = the graph's name): chain10 (10 nodes on one queue),
 * dag100 (100 nodes on two queues, fan-in up to 12, fixed seed), diamond (A on queue 0 -> C on
 * queue 1 -> D on queue 0, and B on queue 0 parallel to C). Every node is an order_record
 * dispatch, so every launch of every path is checked: each node ran once, and each edge's
 * producer took its ticket before its consumer (violated_edges; a path with one is reported
 * WRONG and left out of the ratios: it ordered less than the graph asks).
 *
 * Paths, per graph, interleaved per round (order rotated):
 *   hsad-graph     hsad_graph_launch of an exec instantiated once (lanes -> two queues)
 *   hsad-dispatch  hsad_kernel_dispatch per node, a hsad_queue_barrier before a node with
 *                  dependencies on the other queue (bench_graph_submit_nodes)
 *   hip-graph      hipGraphLaunch of a hipGraphExec instantiated once (hsad-bench-hip)
 *   hip-stream     hipLaunchKernelGGL per node on two streams, hipEventRecord after a node with
 *                  a consumer on the other stream, hipStreamWaitEvent before that consumer
 * Per round and path: L = max(3, --count / 200) launches, each from reset buffers: launch_ns
 * (the launch call or calls), launch_wait_ns (launch until the host saw every queue's
 * completion), medians over the L launches; violated_edges summed over them, checked_launches
 * = L; instantiate_us (graph paths: one instantiate, timed, per round).
 *
 * Instructions (callgrind, deterministic): one child per side (hsad bench --child graph,
 * hsad-bench-hip --callgrind-graph) collects inside the launch call only (hsad_graph_launch,
 * bench_graph_submit_nodes, bench_hip_graph_launch, bench_hip_stream_launch), the update of one
 * node (hsad_graph_exec_update, bench_hip_graph_update: hipGraphExecKernelNodeSetParams) and
 * one instantiate, one CALLGRIND_DUMP_STATS_AT part each: launch_instructions,
 * launch_allocations (malloc/calloc/realloc calls inside the call), update_instructions,
 * update_allocations per call over N = max(2, --callgrind-count / 500) calls;
 * instructions_per_extra_node on dag100 rows = (dag100 - chain10 launch instructions) / 90,
 * on chain100 rows (chain100 - chain10) / 90 (one more node on the same queue).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include "fusion/hsad_fusion.h"
#include "tools/hsad/bench_graph_shape.h"
#include "tools/hsad/bench_paths.h"

static const char *const paths[] = {"hsad-graph", "hsad-dispatch", "hip-graph", "hip-stream"};
#define NP 4
enum { P_GRAPH, P_DISPATCH, P_HIP_GRAPH, P_HIP_STREAM };
#define CG_FNS "hsad_graph_launch,bench_graph_submit_nodes,hsad_graph_exec_update,hsad_graph_instantiate"
#define HIP_CG_FNS \
  "bench_hip_graph_launch,bench_hip_stream_launch,bench_hip_graph_update,bench_hip_graph_instantiate"

/* One graph on the hsad side: its shape, node launches, buffers, graph and exec. */
typedef struct gshape {
  bg_shape_t shape;
  uint32_t index[BG_MAX_NODES];
  hsad_karg_t args[BG_MAX_NODES][3];
  hsad_launch_t launch[BG_MAX_NODES];
  bool wants_completion[BG_MAX_NODES]; /* a consumer on the other queue, or last of its queue */
  uint32_t *counter, *slots;
  hsad_graph_t *graph;
  hsad_graph_exec_t *exec;
} gshape_t;

typedef struct gstate {
  hsad_queue_t *q[2];
  gshape_t g[BG_NSHAPES];
  bool ok[NP];
  char why[NP][BENCH_NOTE_MAX];
  uint64_t bad[BG_NSHAPES][NP], bad_launches[BG_NSHAPES][NP], launches[BG_NSHAPES][NP];
  double t_launch[1024], t_wait[1024];
} gstate_t;

/* calls per callgrind figure: --callgrind-count / 500, at least 2 */
static uint32_t cg_calls(uint32_t cg_count) { return cg_count / 500 < 2 ? 2 : cg_count / 500; }

static uint64_t deadline(const bench_ctx_t *ctx) {
  return hsad_now_ns() + ctx->timeout_s * 1000000000ull;
}

/* hsad-dispatch: every node on its own, in node order (topological), a barrier on the
 * consumer's queue before a node with producers on the other queue. done[lane]: the
 * completion of each queue's last node. */
__attribute__((noinline)) hsad_status_t bench_graph_submit_nodes(const bench_ctx_t *ctx,
                                                                  hsad_queue_t *const q[2],
                                                                  const gshape_t *g,
                                                                  uint64_t deadline_ns,
                                                                  hsad_completion_t done[2]) {
  hsad_completion_t c[BG_MAX_NODES], cross[BG_MAX_DEPS];
  hsad_status_t s = HSAD_OK;
  const bg_shape_t *sh = &g->shape;
  for (uint32_t i = 0; i < sh->nodes && !s; i++) {
    uint32_t lane = sh->lane[i], n = 0;
    for (uint32_t d = 0; d < sh->ndeps[i]; d++)
      if (sh->lane[sh->dep[i][d]] != lane) cross[n++] = c[sh->dep[i][d]];
    if (n) s = hsad_queue_barrier(q[lane], cross, n, deadline_ns, NULL);
    if (!s)
      s = hsad_kernel_dispatch(q[lane], ctx->k_order, &g->launch[i], deadline_ns,
                               g->wants_completion[i] ? &c[i] : NULL, NULL);
    if (!s && g->wants_completion[i]) done[lane] = c[i];
  }
  return s;
}

static void reset(gshape_t *g) {
  *g->counter = 0;
  memset(g->slots, 0xff, BG_MAX_NODES * sizeof *g->slots);
}

/* Builds shape `name`'s launches, buffers and graph, and instantiates it; note on failure. */
static int gshape_open(bench_ctx_t *ctx, gstate_t *st, gshape_t *g, const char *name, char *note,
                       size_t n) {
  bg_shape_build(name, &g->shape);
  const bg_shape_t *sh = &g->shape;
  hsad_status_t s = hsad_buffer_alloc(ctx->dev, 64, (void **)&g->counter);
  if (!s) s = hsad_buffer_alloc(ctx->dev, BG_MAX_NODES * sizeof(uint32_t), (void **)&g->slots);
  if (!s) s = hsad_graph_create(0, &g->graph);
  for (uint32_t i = 0; i < sh->nodes && !s; i++) {
    g->index[i] = i;
    g->args[i][0] = HSAD_KARG_PTR(g->counter);
    g->args[i][1] = HSAD_KARG_PTR(g->slots);
    g->args[i][2] = HSAD_KARG_VAL(g->index[i]);
    g->launch[i] = (hsad_launch_t){.dims = 1, .grid = {1, 1, 1}, .block = {1, 1, 1},
                                   .args = g->args[i], .arg_count = 3};
    bool last = true;
    for (uint32_t j = i + 1; j < sh->nodes; j++) last &= sh->lane[j] != sh->lane[i];
    g->wants_completion[i] = last || bg_cross_consumed(sh, i);
    uint32_t deps[BG_MAX_DEPS], id;
    for (uint32_t d = 0; d < sh->ndeps[i]; d++) deps[d] = sh->dep[i][d];
    char nm[16];
    snprintf(nm, sizeof nm, "n%u", i);
    s = hsad_graph_add_kernel(g->graph, nm, sh->lane[i], ctx->k_order, &g->launch[i], deps,
                              sh->ndeps[i], &id);
  }
  if (!s) s = hsad_graph_instantiate(g->graph, st->q, sh->lanes, &g->exec);
  if (s) {
    snprintf(note, n, "%s: %s", name, hsad_last_error());
    return -1;
  }
  return 0;
}

static void gshape_close(gshape_t *g) {
  hsad_graph_exec_destroy(g->exec);
  hsad_graph_destroy(g->graph);
  hsad_buffer_free(g->counter);
  hsad_buffer_free(g->slots);
}

/* One launch of path p (hsad-graph or hsad-dispatch) from reset buffers, waited for and
 * checked: *bad = violated edges. */
static hsad_status_t hsad_once(bench_ctx_t *ctx, gstate_t *st, gshape_t *g, int p, double *launch,
                               double *wait, uint32_t *bad) {
  hsad_completion_t done[2] = {{0}};
  uint32_t nq = p == P_GRAPH ? hsad_graph_exec_queue_count(g->exec) : 2;
  reset(g);
  uint64_t dl = deadline(ctx), t0 = hsad_now_ns();
  hsad_status_t s = p == P_GRAPH ? hsad_graph_launch(g->exec, 0, dl, done, NULL)
                                 : bench_graph_submit_nodes(ctx, st->q, g, dl, done);
  uint64_t t1 = hsad_now_ns();
  if (!s) s = hsad_completion_wait_all(done, nq, dl);
  uint64_t t2 = hsad_now_ns();
  *launch = (double)(t1 - t0);
  *wait = (double)(t2 - t0);
  *bad = bg_check(&g->shape, g->slots, *g->counter);
  return s;
}

static void measure_hsad(bench_ctx_t *ctx, gstate_t *st, uint32_t gi, int p, uint32_t reps,
                         bench_row_t *row) {
  gshape_t *g = &st->g[gi];
  uint32_t bad_total = 0, bad_launches = 0, n = 0;
  for (; n < reps && !bench_stopped(); n++) {
    uint32_t bad = 0;
    if (hsad_once(ctx, st, g, p, &st->t_launch[n], &st->t_wait[n], &bad)) {
      snprintf(st->why[p], sizeof st->why[p], "%s: %s", g->shape.name, hsad_last_error());
      st->ok[p] = false;
      bench_row_absent(row, "%s", st->why[p]);
      return;
    }
    bad_total += bad;
    bad_launches += bad != 0;
  }
  if (bench_stopped() || !n) return;
  st->bad[gi][p] += bad_total;
  st->bad_launches[gi][p] += bad_launches;
  st->launches[gi][p] += n;
  bench_sample(row, "launch_ns", "ns", bench_median(st->t_launch, n));
  bench_sample(row, "launch_wait_ns", "ns", bench_median(st->t_wait, n));
  bench_sample(row, "violated_edges", "edges", bad_total);
  bench_sample(row, "checked_launches", "launches", n);
  if (p == P_GRAPH) { /* instantiate: a fresh exec of the same graph, timed, destroyed */
    hsad_graph_exec_t *x = NULL;
    uint64_t t0 = hsad_now_ns();
    hsad_status_t s = hsad_graph_instantiate(g->graph, st->q, g->shape.lanes, &x);
    uint64_t t1 = hsad_now_ns();
    hsad_graph_exec_destroy(x);
    if (!s) bench_sample(row, "instantiate_us", "us", (double)(t1 - t0) / 1e3);
  }
}

static void measure_hip(bench_ctx_t *ctx, gstate_t *st, uint32_t gi, int p, uint32_t reps,
                        bench_row_t *row) {
  char note[BENCH_NOTE_MAX], cmd[96], reply[BENCH_NOTE_MAX];
  double launch, wait, inst;
  unsigned bad, bad_launches, n;
  bench_child_t *hip = bench_hip(ctx, note, sizeof note);
  snprintf(cmd, sizeof cmd, "graph %s %s %u", st->g[gi].shape.name,
           p == P_HIP_GRAPH ? "graph" : "stream", reps);
  if (!hip || bench_child_cmd(ctx, hip, cmd, reply, sizeof reply) ||
      sscanf(reply, "%lf %lf %u %u %u %lf", &launch, &wait, &bad, &bad_launches, &n, &inst) != 6) {
    snprintf(st->why[p], sizeof st->why[p], "%s", hip ? reply : note);
    st->ok[p] = false;
    bench_row_absent(row, "%s", st->why[p]);
    return;
  }
  st->bad[gi][p] += bad;
  st->bad_launches[gi][p] += bad_launches;
  st->launches[gi][p] += n;
  bench_sample(row, "launch_ns", "ns", launch);
  bench_sample(row, "launch_wait_ns", "ns", wait);
  bench_sample(row, "violated_edges", "edges", bad);
  bench_sample(row, "checked_launches", "launches", n);
  if (p == P_HIP_GRAPH) bench_sample(row, "instantiate_us", "us", inst);
}

/* The callgrind parts of one side into the rows: "<graph> launch|dispatch|update|instantiate". */
static void take_parts(bench_suite_result_t *out, const bench_cg_job_t *job, bool hip,
                       uint32_t calls) {
  for (uint32_t gi = 0; gi < BG_NSHAPES; gi++) {
    const char *gname = bg_shape_names[gi];
    static const char *const what[] = {"launch", "dispatch", "update", "instantiate"};
    for (int w = 0; w < 4; w++) {
      char label[64];
      snprintf(label, sizeof label, "%s %s", gname, what[w]);
      const bench_cg_part_t *part = bench_cg_part(job, label);
      int p = (hip ? P_HIP_GRAPH : P_GRAPH) + (w == 1);
      bench_row_t *row = bench_row_find(out, paths[p], gname, 0);
      if (!part || !row) continue;
      if (w <= 1) {
        bench_sample(row, "launch_instructions", "instructions", part->ir / calls);
        bench_sample(row, "launch_allocations", "allocations", part->allocs / calls);
      } else if (w == 2) {
        bench_sample(row, "update_instructions", "instructions", part->ir / calls);
        bench_sample(row, "update_allocations", "allocations", part->allocs / calls);
      } else {
        bench_sample(row, "instantiate_instructions", "instructions", part->ir);
      }
    }
  }
  /* per extra node: dag100 (two queues, cross-queue edges) and chain100 (one queue) against
   * chain10, all launched whole (or node by node) */
  for (int p = hip ? P_HIP_GRAPH : P_GRAPH; p <= (hip ? P_HIP_STREAM : P_DISPATCH); p++)
    for (int big = 0; big < 2; big++) {
      bench_row_t *a = bench_row_find(out, paths[p], "chain10", 0),
                  *b = bench_row_find(out, paths[p], big ? "chain100" : "dag100", 0);
      bench_metric_t *ma = a ? bench_metric(a, "launch_instructions") : NULL,
                     *mb = b ? bench_metric(b, "launch_instructions") : NULL;
      if (ma && mb && ma->n && mb->n)
        bench_sample(b, "instructions_per_extra_node", "instructions", (mb->v[0] - ma->v[0]) / 90);
    }
}

/* The callgrind figures' note (why they are missing) on every shape's row of paths p0..p1. */
static void note_paths(bench_suite_result_t *out, int p0, int p1, const char *note) {
  for (int p = p0; p <= p1; p++)
    for (uint32_t gi = 0; gi < BG_NSHAPES; gi++)
      snprintf(bench_row_find(out, paths[p], bg_shape_names[gi], 0)->note, BENCH_NOTE_MAX, "%s",
               note);
}

/* Runs both callgrind children (HIP in the background: its start-up under valgrind is slow). */
static void count_instructions(bench_ctx_t *ctx, gstate_t *st, bench_suite_result_t *out) {
  char note[BENCH_NOTE_MAX], cnt[16], cgc[16], dv[16], co[64];
  uint32_t calls = cg_calls(ctx->cg_count);
  snprintf(cnt, sizeof cnt, "%u", calls);
  snprintf(cgc, sizeof cgc, "%u", ctx->cg_count); /* the child takes --count as the parent */
  snprintf(dv, sizeof dv, "%u", ctx->devi);
  snprintf(co, sizeof co, "/proc/self/fd/%d", ctx->elf_fd);
  static bench_cg_job_t hip_job, job;
  bool hip_running = false;
  if (st->ok[P_HIP_GRAPH] || st->ok[P_HIP_STREAM]) {
    char *av_hip[] = {ctx->hip_exe, "--callgrind-graph", cnt, NULL};
    bench_progress(ctx, "graph", "hip", "callgrind, %u calls per figure (in the background)",
                   calls);
    hip_running = !bench_callgrind_start(ctx, av_hip, HIP_CG_FNS, &hip_job, note, sizeof note);
    if (!hip_running)
      note_paths(out, P_HIP_GRAPH, P_HIP_STREAM, note);
  }
  if ((st->ok[P_GRAPH] || st->ok[P_DISPATCH]) && ctx->elf_fd >= 0 && !bench_stopped()) {
    char *av[] = {ctx->self, "bench", "--child", "graph", "--count", cgc, "--device", dv,
                  "--code-object", co, NULL};
    bench_progress(ctx, "graph", "hsad", "callgrind, %u calls per figure", calls);
    if (!bench_callgrind_start(ctx, av, CG_FNS, &job, note, sizeof note) &&
        !bench_callgrind_finish(ctx, &job, &(double){0}, note, sizeof note))
      take_parts(out, &job, false, calls);
    else if (!bench_stopped())
      note_paths(out, P_GRAPH, P_DISPATCH, note);
  }
  if (hip_running) {
    bench_progress(ctx, "graph", "hip", "callgrind: waiting for it");
    if (!bench_callgrind_finish(ctx, &hip_job, &(double){0}, note, sizeof note))
      take_parts(out, &hip_job, true, calls);
    else if (!bench_stopped())
      note_paths(out, P_HIP_GRAPH, P_HIP_STREAM, note);
  }
}

/* After the rounds: what the checks found, and how hsad_graph_launch ran. */
static void annotate(gstate_t *st, bench_suite_result_t *out) {
  for (uint32_t gi = 0; gi < BG_NSHAPES; gi++)
    for (int p = 0; p < NP; p++) {
      bench_row_t *row = bench_row_find(out, paths[p], bg_shape_names[gi], 0);
      if (!row || !st->launches[gi][p]) continue;
      row->checked = true;
      if (st->bad[gi][p])
        bench_row_wrong(row, "ordering: %llu violated edges in %llu of %llu launches (%u edges "
                        "each): this path orders less than the graph asks",
                        (unsigned long long)st->bad[gi][p],
                        (unsigned long long)st->bad_launches[gi][p],
                        (unsigned long long)st->launches[gi][p], st->g[gi].shape.edges);
    }
  for (uint32_t gi = 0; gi < BG_NSHAPES; gi++) {
    bench_row_t *row = bench_row_find(out, paths[P_GRAPH], bg_shape_names[gi], 0);
    if (!st->g[gi].exec || !row || row->wrong || row->note[0]) continue;
    uint64_t cnt[HSAD_GRAPH_ROLLBACK_COUNT];
    hsad_graph_exec_counters(st->g[gi].exec, cnt);
    for (int r = 1; r < HSAD_GRAPH_ROLLBACK_COUNT; r++)
      if (cnt[r])
        snprintf(row->note, sizeof row->note, "%llu of %llu launches ran sequentially (%s)",
                 (unsigned long long)cnt[r], (unsigned long long)(cnt[0] + cnt[r]),
                 hsad_graph_rollback_name((hsad_graph_rollback_t)r));
  }
}

int bench_suite_graph(bench_ctx_t *ctx, bench_suite_result_t *out) {
  uint32_t reps = ctx->count / 200 < 3 ? 3 : ctx->count / 200;
  if (reps > 1024) reps = 1024;
  snprintf(out->title, sizeof out->title,
           "graph launch vs per-dispatch submission, hsad vs HIP: chain10, chain100, dag100 (fan-in <= 12, "
           "2 queues), diamond; every launch checked");
  snprintf(out->params, sizeof out->params, "rounds=%u launches=%u callgrind_calls=%u (medians)",
           ctx->rounds, reps, ctx->callgrind ? cg_calls(ctx->cg_count) : 0);
  out->plot_metric = "launch_ns";
  out->plot_logy = true;
  static gstate_t st_s;
  gstate_t *st = &st_s;
  memset(st, 0, sizeof *st);
  for (int p = 0; p < NP; p++) st->ok[p] = true;
  for (uint32_t gi = 0; gi < BG_NSHAPES; gi++)
    for (int p = 0; p < NP; p++) bench_row_add(out, paths[p], bg_shape_names[gi], NULL, 0);
  for (int i = 0; i < 2 && st->ok[0]; i++)
    if (!(st->q[i] = bench_hsad_queue(ctx, 1024, false, st->why[0], sizeof st->why[0])))
      st->ok[0] = false;
  for (uint32_t gi = 0; gi < BG_NSHAPES && st->ok[0]; gi++)
    if (gshape_open(ctx, st, &st->g[gi], bg_shape_names[gi], st->why[0], sizeof st->why[0]))
      st->ok[0] = false;
  if (!st->ok[0]) {
    st->ok[1] = false;
    memcpy(st->why[1], st->why[0], sizeof st->why[1]);
  }
  for (uint32_t r = 0; r < ctx->rounds && !bench_stopped(); r++) {
    for (uint32_t gi = 0; gi < BG_NSHAPES && !bench_stopped(); gi++)
      for (int i = 0; i < NP && !bench_stopped(); i++) {
        int p = (int)((i + r + gi) % NP);
        bench_row_t *row = bench_row_find(out, paths[p], bg_shape_names[gi], 0);
        if (!st->ok[p]) bench_row_absent(row, "%s", st->why[p]);
        else if (p <= P_DISPATCH) measure_hsad(ctx, st, gi, p, reps, row);
        else measure_hip(ctx, st, gi, p, reps, row);
      }
    bench_progress(ctx, "graph", "all paths", "round %u/%u", r + 1, ctx->rounds);
  }
  annotate(st, out);
#ifdef __SANITIZE_ADDRESS__ /* valgrind cannot run an AddressSanitizer executable */
  for (uint32_t i = 0; i < out->nrows && ctx->callgrind; i++)
    if (!out->rows[i].note[0])
      snprintf(out->rows[i].note, sizeof out->rows[i].note,
               "callgrind: not run (this hsad is built with AddressSanitizer)");
#else
  if (ctx->callgrind && !bench_stopped()) count_instructions(ctx, st, out);
#endif
  for (uint32_t gi = 0; gi < BG_NSHAPES; gi++) gshape_close(&st->g[gi]);
  for (int i = 0; i < 2; i++) hsad_queue_destroy(st->q[i]);
  for (uint32_t gi = 0; gi < BG_NSHAPES; gi++) {
    const char *c = bg_shape_names[gi];
    bench_ratio(out, "hsad-graph", "hip-graph", c, 0, "launch_instructions");
    bench_ratio(out, "hsad-graph", "hip-graph", c, 0, "launch_ns");
    bench_ratio(out, "hsad-graph", "hip-graph", c, 0, "launch_wait_ns");
    bench_ratio(out, "hsad-graph", "hsad-dispatch", c, 0, "launch_wait_ns");
    bench_ratio(out, "hsad-graph", "hip-graph", c, 0, "update_instructions");
  }
  bench_ratio(out, "hsad-graph", "hip-graph", "dag100", 0, "instructions_per_extra_node");
  bench_ratio(out, "hsad-graph", "hip-graph", "chain100", 0, "instructions_per_extra_node");
  return st->ok[P_GRAPH] || st->ok[P_DISPATCH] ? 0 : -1;
}

/* `hsad bench --child graph --count C`: the callgrind parts of the hsad side, for every graph:
 * N = cg_calls(C) launches (hsad_graph_launch), N node-by-node submissions (bench_graph_submit_nodes), N
 * updates of the last node with its own arguments (hsad_graph_exec_update), one instantiate;
 * each waited for outside the collected calls and dumped as "<graph> launch|dispatch|update|
 * instantiate". Exits without tearing ROCr down (see bench_dispatch_child). */
int bench_graph_child(bench_ctx_t *ctx) {
  static gstate_t st_s;
  gstate_t *st = &st_s;
  char note[BENCH_NOTE_MAX] = "";
  int rc = 0;
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (int i = 0; i < 2 && !rc; i++)
    if (!(st->q[i] = bench_hsad_queue(ctx, 1024, false, note, sizeof note))) rc = -1;
  for (uint32_t gi = 0; gi < BG_NSHAPES && !rc; gi++)
    rc = gshape_open(ctx, st, &st->g[gi], bg_shape_names[gi], note, sizeof note);
  for (uint32_t gi = 0; gi < BG_NSHAPES && !rc; gi++) /* warm: both launch paths, twice */
    for (int w = 0; w < 4 && !rc; w++) {
      double a, b;
      uint32_t bad;
      if (hsad_once(ctx, st, &st->g[gi], w & 1, &a, &b, &bad) || bad) {
        snprintf(note, sizeof note, "%s: warm-up launch: %s", bg_shape_names[gi],
                 bad ? "results wrong" : hsad_last_error());
        rc = -1;
      }
    }
  if (rc) {
    printf("@bench err %s\n", note);
    fflush(stdout);
    _exit(1);
  }
  uint32_t calls = cg_calls(ctx->count);
  printf("@bench stage measure\n");
  CALLGRIND_START_INSTRUMENTATION;
  for (uint32_t gi = 0; gi < BG_NSHAPES && !rc; gi++) {
    gshape_t *g = &st->g[gi];
    char label[64];
    double a, b;
    uint32_t bad;
    for (int p = P_GRAPH; p <= P_DISPATCH && !rc; p++) {
      for (uint32_t i = 0; i < calls && !rc; i++)
        rc = hsad_once(ctx, st, g, p, &a, &b, &bad) ? -1 : 0;
      snprintf(label, sizeof label, "%s %s", g->shape.name, p == P_GRAPH ? "launch" : "dispatch");
      CALLGRIND_DUMP_STATS_AT(label);
    }
    uint32_t last = g->shape.nodes - 1;
    for (uint32_t i = 0; i < calls && !rc; i++)
      rc = hsad_graph_exec_update(g->exec, last, &g->launch[last]) ? -1 : 0;
    snprintf(label, sizeof label, "%s update", g->shape.name);
    CALLGRIND_DUMP_STATS_AT(label);
    hsad_graph_exec_t *x = NULL;
    if (!rc) rc = hsad_graph_instantiate(g->graph, st->q, g->shape.lanes, &x) ? -1 : 0;
    snprintf(label, sizeof label, "%s instantiate", g->shape.name);
    CALLGRIND_DUMP_STATS_AT(label);
    hsad_graph_exec_destroy(x);
  }
  CALLGRIND_STOP_INSTRUMENTATION;
  printf(rc ? "@bench err %s\n" : "@bench done\n", hsad_last_error());
  fflush(stdout);
  _exit(rc ? 1 : 0);
}
