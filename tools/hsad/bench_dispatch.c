/* bench_dispatch.c - suite `dispatch`: submit cost of one empty-kernel dispatch per path.
 *
 * Per round and path: COUNT submits (--count, default 10000) into a queue that holds them all
 * (no path waits for ring space), timed as a whole with CLOCK_MONOTONIC: ns_per_submit = time /
 * COUNT; then the queue is drained (untimed). Paths: hsad (hsad_kernel_dispatch: checks, or the
 * calling thread's cache of its last launch), hsad-prepared (hsad_prepared_dispatch of a launch
 * checked and built once), rocr-textbook (bench_rocr_submit), hip (hipLaunchKernelGGL in
 * hsad-bench-hip), hsad-variants (hsad_variant_dispatch on a set of two builds of the kernel
 * whose choice for the launch's workgroup size is cached: the set's lookup on top of the hsad
 * path). The kfd-emu CP thread runs the packets concurrently.
 *
 * Instructions: each path is re-run once under valgrind --tool=callgrind (bench_callgrind):
 * instrumentation only around the measured loop, collection only inside the per-submit
 * function (hsad_kernel_dispatch, hsad_prepared_dispatch, bench_rocr_submit, bench_hip_submit,
 * hsad_variant_dispatch, callees included);
 * instructions_per_submit = collected Ir / --callgrind-count (deterministic, one sample).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include "tools/hsad/bench_paths.h"

static const char *const paths[] = {"hsad", "hsad-prepared", "rocr-textbook", "hip",
                                    "hsad-variants"};
#define NP 5
#define P_VARIANTS 4

typedef struct dstate {
  hsad_queue_t *q;
  hsad_prepared_launch_t *pl;
  hsad_variant_set_t *vs;
  bench_rocr_q_t rq;
  bool ok[NP];
} dstate_t;

static int hsad_loop(hsad_queue_t *q, const hsad_device_kernel_t *k,
                     const hsad_prepared_launch_t *pl, hsad_variant_set_t *vs, uint32_t count) {
  hsad_status_t s = HSAD_OK;
  if (vs)
    for (uint32_t i = 0; i < count && !s; i++)
      s = hsad_variant_dispatch(q, vs, &bench_launch, HSAD_DEADLINE_NEVER, NULL, NULL);
  else if (pl)
    for (uint32_t i = 0; i < count && !s; i++) s = hsad_prepared_dispatch(pl, HSAD_DEADLINE_NEVER, NULL, NULL);
  else
    for (uint32_t i = 0; i < count && !s; i++)
      s = hsad_kernel_dispatch(q, k, &bench_launch, HSAD_DEADLINE_NEVER, NULL, NULL);
  return s ? -1 : 0;
}

/* One measurement of path p: ns per submit, or < 0 with the row marked absent. */
static double measure(bench_ctx_t *ctx, dstate_t *st, int p, bench_row_t *row) {
  char note[BENCH_NOTE_MAX];
  uint64_t t0 = hsad_now_ns();
  double ns = -1;
  if (p == 0 || p == 1 || p == P_VARIANTS) {
    if (hsad_loop(st->q, ctx->k, p == 1 ? st->pl : NULL, p == P_VARIANTS ? st->vs : NULL,
                  ctx->count)) {
      bench_row_absent(row, "%s", hsad_last_error());
      st->ok[p] = false;
      return -1;
    }
    ns = (double)(hsad_now_ns() - t0) / ctx->count;
    if (bench_hsad_drain(ctx, st->q, note, sizeof note)) {
      bench_row_absent(row, "%s", note);
      st->ok[p] = false;
      return -1;
    }
  } else if (p == 2) {
    for (uint32_t i = 0; i < ctx->count; i++) bench_rocr_submit(&st->rq);
    ns = (double)(hsad_now_ns() - t0) / ctx->count;
    if (bench_rocr_drain(ctx, &st->rq)) {
      bench_row_absent(row, "queue not drained within %u s", ctx->timeout_s);
      st->ok[p] = false;
      return -1;
    }
  } else {
    bench_child_t *hip = bench_hip(ctx, note, sizeof note);
    char cmd[64], reply[BENCH_NOTE_MAX];
    snprintf(cmd, sizeof cmd, "dispatch %u", ctx->count);
    if (!hip || bench_child_cmd(ctx, hip, cmd, reply, sizeof reply) ||
        sscanf(reply, "%lf", &ns) != 1) {
      bench_row_absent(row, "%s", hip ? reply : note);
      st->ok[p] = false;
      return -1;
    }
  }
  return ns;
}

/* The hsad queue with its prepared launch and variant set, and the ROCr queue; a path whose
 * setup failed has its row's note and ok[p] false. */
static void dispatch_open(bench_ctx_t *ctx, dstate_t *st, bench_row_t **rows) {
  char note[BENCH_NOTE_MAX];
  uint32_t qs = bench_queue_size(ctx, ctx->count);
  st->q = bench_hsad_queue(ctx, qs, false, note, sizeof note);
  if (!st->q) {
    bench_row_absent(rows[0], "%s", note);
    bench_row_absent(rows[1], "%s", note);
    bench_row_absent(rows[P_VARIANTS], "%s", note);
    st->ok[0] = st->ok[1] = st->ok[P_VARIANTS] = false;
  } else {
    if (hsad_launch_prepare(st->q, ctx->k, &bench_launch, &st->pl)) {
      bench_row_absent(rows[1], "hsad_launch_prepare: %s", hsad_last_error());
      st->ok[1] = false;
    }
    const hsad_device_kernel_t *two[2] = {ctx->k, ctx->k};
    if (hsad_variant_set_create(two, 2, &st->vs)) {
      bench_row_absent(rows[P_VARIANTS], "hsad_variant_set_create: %s", hsad_last_error());
      st->ok[P_VARIANTS] = false;
    }
  }
  if (bench_rocr_open(ctx, qs, false, &st->rq, note, sizeof note)) {
    bench_row_absent(rows[2], "%s", note);
    st->ok[2] = false;
  }
}

static void dispatch_close(dstate_t *st) {
  hsad_launch_destroy(st->pl);
  hsad_variant_set_destroy(st->vs);
  hsad_queue_destroy(st->q);
  if (st->rq.q) bench_rocr_close(&st->rq);
}

/* The function each path's callgrind child counts */
static const char *const dispatch_fns[NP] = {"hsad_kernel_dispatch", "hsad_prepared_dispatch",
                                             "bench_rocr_submit", "bench_hip_submit",
                                             "hsad_variant_dispatch"};

/* Instructions per submit of path p, in a callgrind child; HIP's child (p 3) is only started
 * (*hip_running), dispatch_callgrind waits for it. */
static void dispatch_callgrind_path(bench_ctx_t *ctx, bench_row_t **rows, int p,
                                    bench_cg_job_t *hip_job, bool *hip_running) {
#ifdef __SANITIZE_ADDRESS__
  /* valgrind cannot run an AddressSanitizer executable, nor HIP over this build's kfd-emu */
  snprintf(rows[p]->note, sizeof rows[p]->note,
           "callgrind: not run (this hsad is built with AddressSanitizer)");
  return;
#endif
  char cnt[16], dv[16], co[64], note[BENCH_NOTE_MAX];
  snprintf(cnt, sizeof cnt, "%u", ctx->cg_count);
  snprintf(dv, sizeof dv, "%u", ctx->devi);
  snprintf(co, sizeof co, "/proc/self/fd/%d", ctx->elf_fd);
  char *av_hsad[] = {ctx->self, "bench", "--child", (char *)paths[p], "--count", cnt,
                     "--device", dv, "--code-object", co, NULL};
  char *av_hip[] = {ctx->hip_exe, "--callgrind", cnt, NULL};
  bench_progress(ctx, "dispatch", paths[p], "callgrind, %u submits%s", ctx->cg_count,
                 p == 3 ? " (in the background)" : "");
  double ir = 0;
  int rc;
  if (p == 3) {
    rc = bench_callgrind_start(ctx, av_hip, dispatch_fns[p], hip_job, note, sizeof note);
    *hip_running = rc == 0;
    if (*hip_running) return;
  } else if (ctx->elf_fd < 0) {
    bench_row_absent(rows[p], "callgrind: no code object to hand to the child");
    return;
  } else {
    rc = bench_callgrind(ctx, av_hsad, dispatch_fns[p], &ir, note, sizeof note);
  }
  if (rc == 0) bench_sample(rows[p], "instructions_per_submit", "instructions", ir / ctx->cg_count);
  else if (!bench_stopped()) /* the timing stays; the note says why the count is missing */
    snprintf(rows[p]->note, sizeof rows[p]->note, "%s", note);
}

/* instructions per submit, one callgrind child per path: the HIP child (the slow one: HIP's
 * start-up under valgrind) runs alongside the others, two at a time on two cores */
static void dispatch_callgrind(bench_ctx_t *ctx, const dstate_t *st, bench_row_t **rows) {
  bench_cg_job_t hip_job;
  bool hip_running = false;
  static const int order[NP] = {3, 0, 1, 2, P_VARIANTS};
  for (int o = 0; o < NP && ctx->callgrind && !bench_stopped(); o++)
    if (st->ok[order[o]]) dispatch_callgrind_path(ctx, rows, order[o], &hip_job, &hip_running);
  if (hip_running) {
    double ir = 0;
    char note[BENCH_NOTE_MAX];
    bench_progress(ctx, "dispatch", "hip", "callgrind: waiting for it");
    if (bench_callgrind_finish(ctx, &hip_job, &ir, note, sizeof note) == 0)
      bench_sample(rows[3], "instructions_per_submit", "instructions", ir / ctx->cg_count);
    else if (!bench_stopped())
      snprintf(rows[3]->note, sizeof rows[3]->note, "%s", note);
  }
}

int bench_suite_dispatch(bench_ctx_t *ctx, bench_suite_result_t *out) {
  snprintf(out->title, sizeof out->title,
           "dispatch submit cost: one empty-kernel dispatch per submit, no completion");
  snprintf(out->params, sizeof out->params, "rounds=%u count=%u callgrind_count=%u", ctx->rounds,
           ctx->count, ctx->callgrind ? ctx->cg_count : 0);
  out->plot_metric = "ns_per_submit";
  dstate_t st = {0};
  bench_row_t *rows[NP];
  for (int p = 0; p < NP; p++) {
    rows[p] = bench_row_add(out, paths[p], "", NULL, 0);
    st.ok[p] = true;
  }
  dispatch_open(ctx, &st, rows);
  for (uint32_t r = 0; r < ctx->rounds && !bench_stopped(); r++) {
    for (int i = 0; i < NP && !bench_stopped(); i++) {
      int p = (int)((i + r) % NP); /* rotate the order per round */
      if (!st.ok[p]) continue;
      double ns = measure(ctx, &st, p, rows[p]);
      if (ns >= 0 && !bench_stopped()) bench_sample(rows[p], "ns_per_submit", "ns", ns);
    }
    bench_progress(ctx, "dispatch", "all paths", "round %u/%u", r + 1, ctx->rounds);
  }
  dispatch_close(&st);
  dispatch_callgrind(ctx, &st, rows);
  bench_ratio(out, "hsad", "rocr-textbook", "", 0, "ns_per_submit");
  bench_ratio(out, "hsad-prepared", "rocr-textbook", "", 0, "ns_per_submit");
  bench_ratio(out, "hsad", "hip", "", 0, "ns_per_submit");
  bench_ratio(out, "hsad", "rocr-textbook", "", 0, "instructions_per_submit");
  bench_ratio(out, "hsad-prepared", "rocr-textbook", "", 0, "instructions_per_submit");
  bench_ratio(out, "hsad", "hip", "", 0, "instructions_per_submit");
  return st.ok[0] || st.ok[1] || st.ok[2] ? 0 : -1;
}

/* `hsad bench --child PATH`: COUNT submits of PATH with callgrind instrumentation around them
 * only, then exit without tearing ROCr down (hsa_shut_down waits, spinning, for ROCr's event
 * thread: under valgrind that alone cost up to 2e9 instructions). */
int bench_dispatch_child(bench_ctx_t *ctx, const char *path) {
  char note[BENCH_NOTE_MAX];
  uint32_t qs = bench_queue_size(ctx, ctx->count);
  hsad_queue_t *q = NULL;
  hsad_prepared_launch_t *pl = NULL;
  hsad_variant_set_t *vs = NULL;
  bench_rocr_q_t rq;
  int rc = 0;
  setvbuf(stdout, NULL, _IOLBF, 0);
  bool variants = !strcmp(path, "hsad-variants");
  if (!strcmp(path, "hsad") || !strcmp(path, "hsad-prepared") || variants) {
    q = bench_hsad_queue(ctx, qs, false, note, sizeof note);
    if (q && !strcmp(path, "hsad-prepared") && hsad_launch_prepare(q, ctx->k, &bench_launch, &pl))
      snprintf(note, sizeof note, "%s", hsad_last_error());
    const hsad_device_kernel_t *two[2] = {ctx->k, ctx->k};
    if (q && variants && hsad_variant_set_create(two, 2, &vs))
      snprintf(note, sizeof note, "%s", hsad_last_error());
    /* warm: the set's choice cache and the thread's launch cache, as in the timed loop */
    if (vs && hsad_loop(q, ctx->k, NULL, vs, 1)) {
      snprintf(note, sizeof note, "%s", hsad_last_error());
      vs = NULL;
    }
    if (!q || (!pl && !strcmp(path, "hsad-prepared")) || (!vs && variants)) {
      printf("@bench err %s\n", note);
      fflush(stdout);
      _exit(1);
    }
    printf("@bench stage measure\n");
    CALLGRIND_START_INSTRUMENTATION;
    rc = hsad_loop(q, ctx->k, pl, vs, ctx->count);
    CALLGRIND_STOP_INSTRUMENTATION;
    if (!rc) rc = bench_hsad_drain(ctx, q, note, sizeof note);
  } else if (!strcmp(path, "rocr-textbook")) {
    if (bench_rocr_open(ctx, qs, false, &rq, note, sizeof note)) {
      printf("@bench err %s\n", note);
      fflush(stdout);
      _exit(1);
    }
    printf("@bench stage measure\n");
    CALLGRIND_START_INSTRUMENTATION;
    for (uint32_t i = 0; i < ctx->count; i++) bench_rocr_submit(&rq);
    CALLGRIND_STOP_INSTRUMENTATION;
    rc = bench_rocr_drain(ctx, &rq);
  } else {
    printf("@bench err unknown path '%s'\n", path);
    rc = -1;
  }
  printf(rc ? "@bench err %s\n" : "@bench done\n", hsad_last_error());
  fflush(stdout);
  _exit(rc ? 1 : 0);
}
