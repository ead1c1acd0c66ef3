/* bench_roundtrip.c - suite `roundtrip`: launch + wait of one empty kernel, split by the
 * packet's profiling timestamps.
 *
 * Per round and path: N = max(20, --count / 50) round trips; the round's sample of each metric
 * is the median over them. For one round trip: t0 before the submit call, t1 after it (the
 * doorbell was rung before t1), start/end the dispatch's profiling timestamps (ROCr's system
 * domain, mapped to CLOCK_MONOTONIC with an offset calibrated per round from
 * hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP)), t2 when the wait returned:
 *   total_us             t2 - t0
 *   submit_us            t1 - t0 (host submit)
 *   doorbell_to_start_us start - t1
 *   start_to_end_us      end - start
 *   end_to_wake_us       t2 - end (completion signal to the waiter running again)
 * Paths: hsad (hsad_kernel_dispatch with a completion, hsad's wait: spin, then block),
 * rocr-textbook (a completion signal, hsa_signal_wait_scacquire BLOCKED,
 * hsa_amd_profiling_get_dispatch_time), hip (hipLaunchKernelGGL + hipStreamSynchronize: total
 * and submit only; HIP has no per-launch timestamps on this path).
 */
#include <stdio.h>
#include <string.h>

#include "hsa-dispatch/hsad_rocr.h"
#include "tools/hsad/bench_paths.h"

static const char *const paths[] = {"hsad", "rocr-textbook", "hip"};
#define NP 3
#define NMET 5
static const char *const mets[NMET] = {"total_us", "submit_us", "doorbell_to_start_us",
                                       "start_to_end_us", "end_to_wake_us"};

typedef struct rstate {
  hsad_queue_t *q;
  bench_rocr_q_t rq;
  hsa_signal_t sig;
  uint64_t freq;
  bool ok[NP];
} rstate_t;

static void add_round(bench_row_t *row, double v[NMET][1024], uint32_t n, uint32_t nmet) {
  for (uint32_t m = 0; m < nmet; m++) bench_sample(row, mets[m], "us", bench_median(v[m], n));
}

static double (*vals)[1024];

/* Round i's metrics (mets[], us) from the host times t0 (before the submit), t1 (after it),
 * t2 (completion seen) and the device's start/end on the host clock (ns). */
static void put_metrics(double vals[NMET][1024], uint32_t i, uint64_t t0, uint64_t t1,
                        uint64_t t2, double start, double end) {
  vals[0][i] = (double)(t2 - t0) / 1e3;
  vals[1][i] = (double)(t1 - t0) / 1e3;
  vals[2][i] = (start - (double)t1) / 1e3;
  vals[3][i] = (end - start) / 1e3;
  vals[4][i] = ((double)t2 - end) / 1e3;
}

static int round_hsad(bench_ctx_t *ctx, rstate_t *st, uint32_t n, bench_row_t *row) {
  double off = bench_sys_offset_ns();
  for (uint32_t i = 0; i < n && !bench_stopped(); i++) {
    bench_compl_t c = {0};
    uint64_t t0 = hsad_now_ns();
    hsad_status_t s = hsad_kernel_dispatch(st->q, ctx->k, &bench_launch, HSAD_DEADLINE_NEVER, &c, NULL);
    uint64_t t1 = hsad_now_ns();
    if (!s) s = bench_compl_wait(ctx, c);
    uint64_t t2 = hsad_now_ns(), a = 0, b = 0;
    if (!s) s = bench_compl_times(c, &a, &b);
    bench_compl_release(c);
    if (s) {
      bench_row_absent(row, "%s", hsad_last_error());
      return -1;
    }
    double start = (double)a - off, end = (double)b - off;
    put_metrics(vals, i, t0, t1, t2, start, end);
  }
  if (!bench_stopped()) add_round(row, vals, n, NMET);
  return 0;
}

static int round_rocr(bench_ctx_t *ctx, rstate_t *st, uint32_t n, bench_row_t *row) {
  double off = bench_sys_offset_ns(), scale = 1e9 / (double)st->freq;
  for (uint32_t i = 0; i < n && !bench_stopped(); i++) {
    hsad_rocr.hsa_signal_store_relaxed(st->sig, 1);
    st->rq.signal = st->sig;
    uint64_t t0 = hsad_now_ns();
    bench_rocr_submit(&st->rq);
    uint64_t t1 = hsad_now_ns();
    int w = bench_rocr_wait(ctx, st->sig);
    uint64_t t2 = hsad_now_ns();
    st->rq.signal.handle = 0;
    hsa_amd_profiling_dispatch_time_t t;
    if (w || hsad_rocr.hsa_amd_profiling_get_dispatch_time(hsad_device_agent(ctx->dev), st->sig,
                                                           &t) != HSA_STATUS_SUCCESS) {
      bench_row_absent(row, w ? "completion signal not seen within %u s"
                              : "hsa_amd_profiling_get_dispatch_time failed", ctx->timeout_s);
      return -1;
    }
    double start = (double)t.start * scale - off, end = (double)t.end * scale - off;
    put_metrics(vals, i, t0, t1, t2, start, end);
  }
  if (!bench_stopped()) add_round(row, vals, n, NMET);
  return 0;
}

static int round_hip(bench_ctx_t *ctx, uint32_t n, bench_row_t *row) {
  char note[BENCH_NOTE_MAX], cmd[64], reply[BENCH_NOTE_MAX];
  bench_child_t *hip = bench_hip(ctx, note, sizeof note);
  double tot, sub;
  snprintf(cmd, sizeof cmd, "roundtrip %u", n);
  if (!hip || bench_child_cmd(ctx, hip, cmd, reply, sizeof reply) ||
      sscanf(reply, "%lf %lf", &tot, &sub) != 2) {
    bench_row_absent(row, "%s", hip ? reply : note);
    return -1;
  }
  bench_sample(row, "total_us", "us", tot);
  bench_sample(row, "submit_us", "us", sub);
  return 0;
}

int bench_suite_roundtrip(bench_ctx_t *ctx, bench_suite_result_t *out) {
  uint32_t n = ctx->count / 50;
  if (n < 20) n = 20;
  if (n > 1024) n = 1024;
  snprintf(out->title, sizeof out->title,
           "launch + wait of one empty kernel, split by profiling timestamps");
  snprintf(out->params, sizeof out->params, "rounds=%u round_trips_per_round=%u (medians)",
           ctx->rounds, n);
  out->plot_metric = "total_us";
  static double v[NMET][1024];
  vals = v;
  rstate_t st = {.ok = {true, true, true}};
  char note[BENCH_NOTE_MAX];
  bench_row_t *rows[NP];
  for (int p = 0; p < NP; p++) rows[p] = bench_row_add(out, paths[p], "", NULL, 0);
  st.q = bench_hsad_queue(ctx, 64, true, note, sizeof note);
  if (!st.q) {
    bench_row_absent(rows[0], "%s", note);
    st.ok[0] = false;
  }
  hsad_rocr.hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &st.freq);
  if (bench_rocr_open(ctx, 64, true, &st.rq, note, sizeof note)) {
    bench_row_absent(rows[1], "%s", note);
    st.ok[1] = false;
  } else if (hsad_rocr.hsa_signal_create(1, 0, NULL, &st.sig) != HSA_STATUS_SUCCESS || !st.freq) {
    bench_row_absent(rows[1], "hsa_signal_create or the timestamp frequency failed");
    st.ok[1] = false;
  }
  for (uint32_t r = 0; r < ctx->rounds && !bench_stopped(); r++) {
    for (int i = 0; i < NP && !bench_stopped(); i++) {
      int p = (int)((i + r) % NP);
      if (!st.ok[p]) continue;
      int rc = p == 0 ? round_hsad(ctx, &st, n, rows[p])
               : p == 1 ? round_rocr(ctx, &st, n, rows[p])
                        : round_hip(ctx, n, rows[p]);
      if (rc) st.ok[p] = false;
    }
    bench_progress(ctx, "roundtrip", "all paths", "round %u/%u", r + 1, ctx->rounds);
  }
  hsad_queue_destroy(st.q);
  if (st.sig.handle) hsad_rocr.hsa_signal_destroy(st.sig);
  if (st.rq.q) bench_rocr_close(&st.rq);
  for (int m = 0; m < NMET; m++) {
    bench_ratio(out, "hsad", "rocr-textbook", "", 0, mets[m]);
    if (m < 2) bench_ratio(out, "hsad", "hip", "", 0, mets[m]);
  }
  return st.ok[0] || st.ok[1] ? 0 : -1;
}
