/* bench_nvidia_producers.h - hsad-bench-nvidia's producers suite (issue 22: the first issue's
 * producers suite of `hsad bench`, tools/hsad/bench_producers.c, on NVIDIA), included by
 * bench_nvidia.c after its report helpers. T = 1, 2, 4, 8 threads submit empty-kernel
 * launches (256 threads, no completion) into one shared queue (queues=shared: where the
 * queue's submit path contends) or a queue each (queues=each):
 *   hsad            hsad_kernel_dispatch into hsad queues (streams);
 *   cuLaunchKernel  the same CUfunction from T threads into one shared stream or a stream each
 *                   (each thread makes the primary context current first, untimed).
 * Per round, configuration and path: COUNT / 2 launches in all (COUNT / 2 / T per thread);
 * the threads start together (a spin barrier) and each times its own launches; the queues and
 * streams are drained between measurements (untimed). Rows: "PATH queues=CFG" / "T<n>":
 * ns per submit (the mean over the threads of thread time / its launches), and
 * "PATH queues=CFG wall" / "T<n>": ns of wall time per launch, all threads together (first
 * start to last finish over every launch: 1e9 / it = launches per second). Checked: every
 * launch returned success. The threads and their timing are hsad bench's
 * (tools/hsad/bench_threads.h). On the H200's 16 cores T = 8 measures the driver's locks, not
 * the scheduler. */
#include "tools/hsad/bench_threads.h"

enum { PB_MAXT = BENCH_THREADS_MAX, PB_NT = 4 };
static const uint32_t pb_threads[PB_NT] = {1, 2, 4, 8};

/* What a producer thread does: path raw (0 hsad, 1 cuLaunchKernel) into one shared queue or
 * stream ([0]) or its own. */
typedef struct pb_job {
  int raw, shared;
  hsad_queue_t *const *hq;
  const nv_stream_t *st;
  const hsad_device_kernel_t *k;
  nv_function_t fn;
  nv_context_t ctx;
} pb_job_t;

/* bench_threads' prepare: cuLaunchKernel's threads make the primary context current. */
static int pb_prepare(void *arg, uint32_t t) {
  const pb_job_t *j = arg;
  (void)t;
  return j->raw && nv_cu.ctx_set_current(j->ctx);
}

/* bench_threads' run: thread t's n launches (256 threads, no completion). */
static int pb_submit(void *arg, uint32_t t, uint32_t n) {
  const pb_job_t *j = arg;
  hsad_launch_t l = {.dims = 1, .grid = {256, 1, 1}, .block = {256, 1, 1}};
  uint32_t q = j->shared ? 0 : t;
  for (uint32_t i = 0; i < n; i++)
    if (j->raw ? nv_cu.launch_kernel(j->fn, 1, 1, 1, 256, 1, 1, 0, j->st[q], NULL, NULL) != 0
               : hsad_kernel_dispatch(j->hq[q], j->k, &l, HSAD_DEADLINE_NEVER, NULL, NULL) != 0)
      return 1;
  return 0;
}

/* One measurement: T threads of path raw, shared or not; *ns per submit, *wall ns per launch. */
static int pb_measure(hsad_queue_t *const *hq, const nv_stream_t *st, const hsad_device_kernel_t *k,
                      nv_function_t fn, nv_context_t ctx, int raw, uint32_t T, int shared,
                      uint32_t total, double *ns, double *wall) {
  pb_job_t pj = {.raw = raw, .shared = shared, .hq = hq, .st = st, .k = k, .fn = fn, .ctx = ctx};
  const bench_threads_job_t job = {.prepare = pb_prepare, .run = pb_submit, .ctx = &pj};
  int rc = bench_threads_measure(&job, T, total / T, ns, wall);
  *wall /= (double)(total / T * T);
  int err = rc != BENCH_THREADS_OK;
  for (uint32_t t = 0; t < (shared ? 1 : T) && !err; t++)
    err = raw ? nv_cu.stream_synchronize(st[t]) != 0
              : hsad_queue_wait_idle(hq[t], hsad_now_ns() + 60000000000ull) != HSAD_OK;
  if (err)
    fprintf(stderr, "hsad-bench-nvidia: producers: %s, %u thread(s), queues=%s: %s\n",
            raw ? "cuLaunchKernel" : "hsad", T, shared ? "shared" : "each",
            rc == BENCH_THREADS_NOT_STARTED ? "pthread_create failed"
            : raw ? "a cuLaunchKernel or cuStreamSynchronize failed" : hsad_last_error());
  return err;
}

static int suite_producers(hsad_device_t *dev, const hsad_device_kernel_t *k, nv_function_t fn,
                           int rounds, int count, double ratio[2][PB_NT]) {
  uint32_t total = (uint32_t)count / 2 - (uint32_t)count / 2 % 8;
  if (total < 8) total = 8;
  hsad_queue_t *hq[PB_MAXT];
  nv_stream_t st[PB_MAXT];
  nv_context_t ctx;
  nv_device_t cd;
  DRV(nv_cu.device_get(&cd, (int)hsad_device_info(dev)->vendor_index));
  DRV(nv_cu.primary_ctx_retain(&ctx, cd));
  for (int t = 0; t < PB_MAXT; t++) {
    HS("hsad_queue_create", hsad_queue_create(dev, NULL, &hq[t]));
    DRV(nv_cu.stream_create(&st[t], NV_STREAM_NON_BLOCKING));
  }
  static double v[2][2][PB_NT][2][MAXR]; /* [raw][shared][T][ns, wall][round] */
  for (int r = 0; r < rounds; r++)
    for (int c = 0; c < 2 * PB_NT; c++)
      for (int i = 0; i < 2; i++) {
        int raw = (i + r) % 2, shared = c < PB_NT;
        uint32_t T = pb_threads[c % PB_NT];
        if (pb_measure(hq, st, k, fn, ctx, raw, T, shared, total, &v[raw][shared][c % PB_NT][0][r],
                       &v[raw][shared][c % PB_NT][1][r]))
          return 1;
      }
  printf("producers check: %u launches per measurement, every one succeeded\n", total);
  for (int shared = 1; shared >= 0; shared--)
    for (int t = 0; t < PB_NT; t++) {
      char kname[8], path[48];
      snprintf(kname, sizeof kname, "T%u", pb_threads[t]);
      double m[2][2];
      for (int raw = 0; raw < 2; raw++)
        for (int x = 0; x < 2; x++) {
          snprintf(path, sizeof path, "%s queues=%s%s", raw ? "cuLaunchKernel" : "hsad",
                   shared ? "shared" : "each", x ? " wall" : "");
          m[raw][x] = report("producers", path, kname, v[raw][shared][t][x], rounds);
        }
      ratio[shared][t] = m[0][0] / m[1][0];
    }
  for (int t = 0; t < PB_MAXT; t++) {
    hsad_queue_destroy(hq[t]);
    nv_cu.stream_destroy(st[t]);
  }
  nv_cu.primary_ctx_release(cd);
  return 0;
}
