/* bench_barrier.c - suite `barrier`: barrier fan-in and cross-queue dependencies.
 *
 * fan-in (x: deps = 1..20): K empty-kernel dispatches with completions on 4 producer queues
 * (round-robin), then on another queue a barrier waiting for all K (hsad: one barrier-value
 * packet per producer queue on its epoch signal; rocr-textbook: one barrier-AND packet up
 * to 5 dependencies, a tree of 5-input barrier-AND packets above 5) and one dispatch with a
 * completion, waited for. submit_us: the barrier packet(s) submitted; latency_us: from the
 * barrier submit to the waiter seeing the dependent dispatch complete. Per round, K and path:
 * max(5, --count / 1000) repetitions, the median is the round's sample.
 * HIP: K streams each launch + hipEventRecord, another stream K x hipStreamWaitEvent (submit),
 * a launch and hipStreamSynchronize (latency).
 *
 * cross-queue (config "cross-queue"): a dispatch on queue A with a completion, a barrier on
 * queue B waiting for it (the edge: edge_submit_us), a dispatch on B, wait (latency_us: first
 * submit to wake). HIP: launch on s1, hipEventRecord + hipStreamWaitEvent(s2) (the edge),
 * launch on s2, hipStreamSynchronize(s2). Per round: max(20, --count / 100) repetitions.
 * Public reference (IREE PR #24298, MI300): 0.42 us submit per cross-queue edge vs HIP's 5.23 us;
 * 4.58 vs 11.20 us end to end.
 *
 * Paths: hsad (hsad_queue_barrier), rocr-textbook (barrier-AND packets written like
 * bench_rocr_submit, hsa_signal_wait_scacquire), hip.
 */
#include <stdio.h>
#include <string.h>

#include "hsa-dispatch/hsad_rocr.h"
#include "tools/hsad/bench_paths.h"

static const char *const paths[] = {"hsad", "rocr-textbook", "hip"};
#define NP 3
#define MAXK 20
#define NDEPQ 4
#define XQ "cross-queue"

typedef struct bstate {
  hsad_queue_t *hq[NDEPQ + 1]; /* [NDEPQ]: the barrier / consumer queue */
  bench_rocr_q_t rq[NDEPQ + 1];
  hsa_signal_t dep[MAXK], lvl[4], done;
  bool ok[NP];
  char why[NP][BENCH_NOTE_MAX];
  double sub[1024], lat[1024];
} bstate_t;

/* one fan-in or cross-queue measurement of hsad: k deps (cross-queue: k = 1, dep on queue 0) */
static int hsad_once(bench_ctx_t *ctx, bstate_t *st, uint32_t k, bool xq, double *sub,
                     double *lat) {
  bench_compl_t c[MAXK] = {{0}}, cb = {0};
  hsad_status_t s = HSAD_OK;
  uint64_t t0 = hsad_now_ns(), t1 = t0, t2 = t0;
  for (uint32_t i = 0; i < k && !s; i++)
    s = hsad_kernel_dispatch(st->hq[i % NDEPQ], ctx->k, &bench_launch, HSAD_DEADLINE_NEVER, &c[i],
                             NULL);
  if (!xq) t0 = hsad_now_ns();
  t1 = hsad_now_ns();
  if (!s) s = bench_hsad_barrier(ctx, st->hq[NDEPQ], c, k, NULL);
  t2 = hsad_now_ns();
  if (!s)
    s = hsad_kernel_dispatch(st->hq[NDEPQ], ctx->k, &bench_launch, HSAD_DEADLINE_NEVER, &cb, NULL);
  if (!s) s = bench_compl_wait(ctx, cb);
  uint64_t t3 = hsad_now_ns();
  for (uint32_t i = 0; i < k; i++) bench_compl_release(c[i]);
  bench_compl_release(cb);
  if (s) {
    snprintf(st->why[0], sizeof st->why[0], "%s", hsad_last_error());
    return -1;
  }
  *sub = (double)(t2 - t1) / 1e3;
  *lat = (double)(t3 - t0) / 1e3;
  return 0;
}

static int rocr_once(bench_ctx_t *ctx, bstate_t *st, uint32_t k, bool xq, double *sub,
                     double *lat) {
  const hsa_signal_t none = {0};
  uint64_t t0 = hsad_now_ns();
  for (uint32_t i = 0; i < k; i++) {
    hsad_rocr.hsa_signal_store_relaxed(st->dep[i], 1);
    st->rq[i % NDEPQ].signal = st->dep[i];
    bench_rocr_submit(&st->rq[i % NDEPQ]);
    st->rq[i % NDEPQ].signal = none;
  }
  if (!xq) t0 = hsad_now_ns();
  uint64_t t1 = hsad_now_ns();
  bench_rocr_q_t *b = &st->rq[NDEPQ];
  hsa_signal_t d[5];
  if (k <= 5) {
    for (uint32_t i = 0; i < 5; i++) d[i] = i < k ? st->dep[i] : none;
    bench_rocr_barrier(b, d, none);
  } else { /* a tree: a barrier per 5 dependencies, each with a signal, then one over those */
    uint32_t m = 0;
    for (uint32_t i = 0; i < k; i += 5, m++) {
      for (uint32_t j = 0; j < 5; j++) d[j] = i + j < k ? st->dep[i + j] : none;
      hsad_rocr.hsa_signal_store_relaxed(st->lvl[m], 1);
      bench_rocr_barrier(b, d, st->lvl[m]);
    }
    for (uint32_t j = 0; j < 5; j++) d[j] = j < m ? st->lvl[j] : none;
    bench_rocr_barrier(b, d, none);
  }
  uint64_t t2 = hsad_now_ns();
  hsad_rocr.hsa_signal_store_relaxed(st->done, 1);
  b->signal = st->done;
  bench_rocr_submit(b);
  b->signal = none;
  int w = bench_rocr_wait(ctx, st->done);
  uint64_t t3 = hsad_now_ns();
  if (w) {
    snprintf(st->why[1], sizeof st->why[1], "completion not seen within %u s", ctx->timeout_s);
    return -1;
  }
  *sub = (double)(t2 - t1) / 1e3;
  *lat = (double)(t3 - t0) / 1e3;
  return 0;
}

static void measure(bench_ctx_t *ctx, bstate_t *st, int p, uint32_t k, bool xq, uint32_t reps,
                    bench_row_t *row) {
  double sub = 0, lat = 0;
  const char *sname = xq ? "edge_submit_us" : "submit_us";
  if (p == 2) {
    char note[BENCH_NOTE_MAX], cmd[64], reply[BENCH_NOTE_MAX];
    bench_child_t *hip = bench_hip(ctx, note, sizeof note);
    if (xq) snprintf(cmd, sizeof cmd, "crossq %u", reps);
    else snprintf(cmd, sizeof cmd, "fanin %u %u", k, reps);
    if (!hip || bench_child_cmd(ctx, hip, cmd, reply, sizeof reply) ||
        sscanf(reply, "%lf %lf", &sub, &lat) != 2) {
      snprintf(st->why[p], sizeof st->why[p], "%s", hip ? reply : note);
      st->ok[p] = false;
      bench_row_absent(row, "%s", st->why[p]);
      return;
    }
  } else {
    uint32_t n = 0;
    for (; n < reps && !bench_stopped(); n++) {
      int rc = p == 0 ? hsad_once(ctx, st, k, xq, &st->sub[n], &st->lat[n])
                      : rocr_once(ctx, st, k, xq, &st->sub[n], &st->lat[n]);
      if (rc) {
        st->ok[p] = false;
        bench_row_absent(row, "%s", st->why[p]);
        return;
      }
    }
    if (bench_stopped()) return;
    sub = bench_median(st->sub, n);
    lat = bench_median(st->lat, n);
  }
  bench_sample(row, sname, "us", sub);
  bench_sample(row, "latency_us", "us", lat);
}

int bench_suite_barrier(bench_ctx_t *ctx, bench_suite_result_t *out) {
  uint32_t reps = ctx->count / 1000 < 5 ? 5 : ctx->count / 1000;
  uint32_t xreps = ctx->count / 100 < 20 ? 20 : ctx->count / 100;
  if (reps > 1024) reps = 1024;
  if (xreps > 1024) xreps = 1024;
  snprintf(out->title, sizeof out->title,
           "barrier fan-in (deps=1..20 on 4 queues) and a cross-queue dependency; "
           "IREE on MI300: 0.42 us/edge submit vs HIP 5.23 us");
  snprintf(out->params, sizeof out->params, "rounds=%u fanin_reps=%u crossq_reps=%u (medians)",
           ctx->rounds, reps, xreps);
  out->plot_metric = "submit_us";
  out->plot_xname = "deps";
  static bstate_t st_s;
  bstate_t *st = &st_s;
  memset(st, 0, sizeof *st);
  for (int p = 0; p < NP; p++) st->ok[p] = true;
  for (int i = 0; i <= NDEPQ; i++) {
    if (st->ok[0] && !(st->hq[i] = bench_hsad_queue(ctx, 256, false, st->why[0], sizeof st->why[0])))
      st->ok[0] = false;
    if (st->ok[1] && bench_rocr_open(ctx, 256, false, &st->rq[i], st->why[1], sizeof st->why[1]))
      st->ok[1] = false;
  }
  for (int i = 0; i < MAXK + 5 && st->ok[1]; i++) {
    hsa_signal_t *s = i < MAXK ? &st->dep[i] : i < MAXK + 4 ? &st->lvl[i - MAXK] : &st->done;
    if (hsad_rocr.hsa_signal_create(1, 0, NULL, s) != HSA_STATUS_SUCCESS) {
      snprintf(st->why[1], sizeof st->why[1], "hsa_signal_create failed");
      st->ok[1] = false;
    }
  }
  for (uint32_t r = 0; r < ctx->rounds && !bench_stopped(); r++) {
    for (uint32_t k = 0; k <= MAXK && !bench_stopped(); k++) { /* k = 0: cross-queue */
      for (int i = 0; i < NP && !bench_stopped(); i++) {
        int p = (int)((i + r + k) % NP);
        bench_row_t *row = k ? bench_row_add(out, paths[p], "", "deps", k)
                             : bench_row_add(out, paths[p], XQ, NULL, 0);
        if (!st->ok[p]) {
          bench_row_absent(row, "%s", st->why[p]);
          continue;
        }
        measure(ctx, st, p, k ? k : 1, k == 0, k ? reps : xreps, row);
      }
    }
    bench_progress(ctx, "barrier", "all paths", "round %u/%u", r + 1, ctx->rounds);
  }
  for (int i = 0; i <= NDEPQ; i++) {
    hsad_queue_destroy(st->hq[i]);
    if (st->rq[i].q) bench_rocr_close(&st->rq[i]);
  }
  for (int i = 0; i < MAXK + 5; i++) {
    hsa_signal_t s = i < MAXK ? st->dep[i] : i < MAXK + 4 ? st->lvl[i - MAXK] : st->done;
    if (s.handle) hsad_rocr.hsa_signal_destroy(s);
  }
  bench_ratio(out, "hsad", "rocr-textbook", XQ, 0, "edge_submit_us");
  bench_ratio(out, "hsad", "hip", XQ, 0, "edge_submit_us");
  bench_ratio(out, "hsad", "hip", XQ, 0, "latency_us");
  for (uint32_t k = 1; k <= MAXK; k++) bench_ratio(out, "hsad", "hip", "", k, "submit_us");
  return st->ok[0] || st->ok[1] ? 0 : -1;
}
