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
 * launch returned success. On the H200's 16 cores T = 8 measures the driver's locks, not the
 * scheduler. */
#include <pthread.h>

enum { PB_MAXT = 8, PB_NT = 4 };
static const uint32_t pb_threads[PB_NT] = {1, 2, 4, 8};

typedef struct pb_worker {
  int raw;                        /* 0: hsad, 1: cuLaunchKernel */
  hsad_queue_t *q;
  const hsad_device_kernel_t *k;
  nv_stream_t stream;
  nv_function_t fn;
  nv_context_t ctx;
  uint32_t n;
  volatile int *go;
  double ns;
  int err;
  pthread_t th;
} pb_worker_t;

static void *pb_work(void *arg) {
  pb_worker_t *w = arg;
  hsad_launch_t l = {.dims = 1, .grid = {256, 1, 1}, .block = {256, 1, 1}};
  if (w->raw && nv_cu.ctx_set_current(w->ctx)) w->err = 1;
  while (!__atomic_load_n(w->go, __ATOMIC_ACQUIRE)) {
  }
  uint64_t t0 = hsad_now_ns();
  for (uint32_t i = 0; i < w->n && !w->err; i++)
    w->err = w->raw ? nv_cu.launch_kernel(w->fn, 1, 1, 1, 256, 1, 1, 0, w->stream, NULL, NULL) != 0
                    : hsad_kernel_dispatch(w->q, w->k, &l, HSAD_DEADLINE_NEVER, NULL, NULL) != 0;
  w->ns = (double)(hsad_now_ns() - t0) / w->n;
  return NULL;
}

/* One measurement: T threads of path raw, shared or not; *ns per submit, *wall ns per launch. */
static int pb_measure(hsad_queue_t *const *hq, const nv_stream_t *st, const hsad_device_kernel_t *k,
                      nv_function_t fn, nv_context_t ctx, int raw, uint32_t T, int shared,
                      uint32_t total, double *ns, double *wall) {
  pb_worker_t w[PB_MAXT];
  volatile int go = 0;
  uint32_t started = 0;
  for (uint32_t t = 0; t < T; t++) {
    w[t] = (pb_worker_t){.raw = raw, .q = hq[shared ? 0 : t], .k = k,
                         .stream = st[shared ? 0 : t], .fn = fn, .ctx = ctx, .n = total / T,
                         .go = &go};
    if (pthread_create(&w[t].th, NULL, pb_work, &w[t])) break;
    started++;
  }
  uint64_t t0 = hsad_now_ns();
  __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
  int err = started < T;
  *ns = 0;
  for (uint32_t t = 0; t < started; t++) {
    pthread_join(w[t].th, NULL);
    *ns += w[t].ns / T;
    err |= w[t].err;
  }
  *wall = (double)(hsad_now_ns() - t0) / (double)(total / T * T);
  for (uint32_t t = 0; t < (shared ? 1 : T) && !err; t++)
    err = raw ? nv_cu.stream_synchronize(st[t]) != 0
              : hsad_queue_wait_idle(hq[t], hsad_now_ns() + 60000000000ull) != HSAD_OK;
  if (err)
    fprintf(stderr, "hsad-bench-nvidia: producers: %s, %u thread(s), queues=%s: %s\n",
            raw ? "cuLaunchKernel" : "hsad", T, shared ? "shared" : "each",
            started < T ? "pthread_create failed"
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
