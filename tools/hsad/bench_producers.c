/* bench_producers.c - suite `producers`: T = 1, 2, 4, 8 threads submitting empty-kernel
 * dispatches into one shared queue (queues=shared: where the reservation CAS contends) or into
 * a queue each (queues=each).
 *
 * Per round, configuration and path: --count / 2 submits in all (/ T per thread) into queues
 * that hold them all; the threads start together (a spin barrier) and each times its own
 * submits. ns_per_submit = mean over the threads of (thread time / its submits);
 * submits_per_s = all submits / (first start to last finish). Queues are drained between
 * measurements (untimed). Paths: hsad (hsad_kernel_dispatch), rocr-textbook
 * (bench_rocr_submit: add_write_index), hip (hipLaunchKernelGGL from T threads into one stream
 * or a stream each). On a 2-core machine T > 2 measures the scheduler as much as the queue.
 */
#include <stdio.h>
#include <string.h>

#include "tools/hsad/bench_paths.h"
#include "tools/hsad/bench_threads.h"

static const char *const paths[] = {"hsad", "rocr-textbook", "hip"};
#define NP 3
#define MAXT BENCH_THREADS_MAX
static const uint32_t threads_list[] = {1, 2, 4, 8};
#define NT 4

/* The producers suite's queues (one per thread, [0] the shared one) and its paths' state. */
typedef struct producers_suite {
  bench_ctx_t *ctx;
  uint32_t total; /* submits per measurement */
  hsad_queue_t *hq[MAXT];
  bench_rocr_q_t rq[MAXT];
  bool ok[NP];
  char why[NP][BENCH_NOTE_MAX]; /* why a path stopped */
} producers_suite_t;

/* The HIP child's measurement of T producers; -1 with why[2] set. */
static int producers_hip(producers_suite_t *ps, uint32_t T, bool shared, double *ns, double *rate) {
  char note[BENCH_NOTE_MAX], cmd[64], reply[BENCH_NOTE_MAX];
  bench_child_t *hip = bench_hip(ps->ctx, note, sizeof note);
  snprintf(cmd, sizeof cmd, "producers %u %u %u", T, shared ? 1 : 0, ps->total);
  if (!hip || bench_child_cmd(ps->ctx, hip, cmd, reply, sizeof reply) ||
      sscanf(reply, "%lf %lf", ns, rate) != 2) {
    snprintf(ps->why[2], sizeof ps->why[2], "%s", hip ? reply : note);
    return -1;
  }
  return 0;
}

/* What a producer thread does: path p (0 hsad, 1 ROCr) into one shared queue or a queue each. */
typedef struct producers_job {
  producers_suite_t *ps;
  int p;
  bool shared;
} producers_job_t;

/* bench_threads' run: thread t's n submits, into queue [0] when shared, else its own. */
static int producers_submit(void *ctx, uint32_t t, uint32_t n) {
  const producers_job_t *j = ctx;
  uint32_t q = j->shared ? 0 : t;
  if (j->p == 0) {
    for (uint32_t i = 0; i < n; i++)
      if (hsad_kernel_dispatch(j->ps->hq[q], j->ps->ctx->k, &bench_launch, HSAD_DEADLINE_NEVER,
                               NULL, NULL))
        return 1;
  } else {
    for (uint32_t i = 0; i < n; i++) bench_rocr_submit(&j->ps->rq[q]);
  }
  return 0;
}

/* T threads submitting total / T each on path p (0 hsad, 1 ROCr) into one shared queue or a
 * queue each, then the queues drained; -1 with why[p] set. */
static int producers_threads(producers_suite_t *ps, int p, uint32_t T, bool shared, double *ns,
                             double *rate) {
  bench_ctx_t *ctx = ps->ctx;
  char note[BENCH_NOTE_MAX];
  producers_job_t pj = {.ps = ps, .p = p, .shared = shared};
  const bench_threads_job_t job = {.run = producers_submit, .ctx = &pj};
  double wall;
  int rc = bench_threads_measure(&job, T, ps->total / T, ns, &wall);
  *rate = (double)(ps->total / T * T) / (wall / 1e9);
  int err = rc != BENCH_THREADS_OK;
  for (uint32_t t = 0; t < (shared ? 1 : T) && !err; t++)
    err = p == 0 ? bench_hsad_drain(ctx, ps->hq[t], note, sizeof note)
                 : bench_rocr_drain(ctx, &ps->rq[t]);
  if (err) {
    snprintf(ps->why[p], sizeof ps->why[p], "%s",
             rc == BENCH_THREADS_NOT_STARTED ? "pthread_create failed"
             : p == 0                        ? hsad_last_error()
                                             : "queue not drained in time");
    return -1;
  }
  return 0;
}

/* One measurement of path p with T threads into row; a failed path stops (its why). */
static void producers_measure(producers_suite_t *ps, int p, uint32_t T, bool shared,
                              bench_row_t *row) {
  if (!ps->ok[p]) {
    bench_row_absent(row, "%s", ps->why[p]);
    return;
  }
  double ns = 0, rate = 0;
  if (p == 2 ? producers_hip(ps, T, shared, &ns, &rate)
             : producers_threads(ps, p, T, shared, &ns, &rate)) {
    bench_row_absent(row, "%s", ps->why[p]);
    ps->ok[p] = false;
    return;
  }
  bench_sample(row, "ns_per_submit", "ns", ns);
  bench_sample(row, "submits_per_s", "submits_per_s", rate);
}

int bench_suite_producers(bench_ctx_t *ctx, bench_suite_result_t *out) {
  producers_suite_t ps = {.ctx = ctx, .ok = {true, true, true}};
  ps.total = ctx->count / 2 - ctx->count / 2 % 8; /* 8 configurations x 3 paths */
  if (ps.total < 8) ps.total = 8;
  snprintf(out->title, sizeof out->title,
           "T threads submitting into one shared queue or a queue each (empty kernel, no "
           "completion)");
  snprintf(out->params, sizeof out->params, "rounds=%u submits_per_measurement=%u", ctx->rounds,
           ps.total);
  out->plot_metric = "ns_per_submit";
  out->plot_xname = "threads";
  uint32_t qs = bench_queue_size(ctx, ps.total);
  for (int t = 0; t < MAXT; t++) {
    if (ps.ok[0] && !(ps.hq[t] = bench_hsad_queue(ctx, qs, false, ps.why[0], sizeof ps.why[0])))
      ps.ok[0] = false;
    if (ps.ok[1] && bench_rocr_open(ctx, qs, false, &ps.rq[t], ps.why[1], sizeof ps.why[1]))
      ps.ok[1] = false;
  }
  for (uint32_t r = 0; r < ctx->rounds && !bench_stopped(); r++) {
    for (int c = 0; c < 2 * NT && !bench_stopped(); c++) {
      uint32_t T = threads_list[c % NT];
      bool shared = c < NT;
      const char *cfg = shared ? "queues=shared" : "queues=each";
      for (int i = 0; i < NP && !bench_stopped(); i++) {
        int p = (int)((i + r) % NP);
        producers_measure(&ps, p, T, shared, bench_row_add(out, paths[p], cfg, "threads", T));
      }
    }
    bench_progress(ctx, "producers", "all paths", "round %u/%u", r + 1, ctx->rounds);
  }
  for (int t = 0; t < MAXT; t++) {
    hsad_queue_destroy(ps.hq[t]);
    if (ps.rq[t].q) bench_rocr_close(&ps.rq[t]);
  }
  for (int c = 0; c < 2 * NT; c++) {
    const char *cfg = c < NT ? "queues=shared" : "queues=each";
    bench_ratio(out, "hsad", "rocr-textbook", cfg, threads_list[c % NT], "ns_per_submit");
    bench_ratio(out, "hsad", "hip", cfg, threads_list[c % NT], "ns_per_submit");
  }
  return ps.ok[0] || ps.ok[1] ? 0 : -1;
}
