/* bench_threads.h - T threads started together, each timing its own share of a measurement:
 * the producers suites' harness, shared by `hsad bench producers` (tools/hsad/bench_producers.c)
 * and hsad-bench-nvidia's (tests/bench_nvidia_producers.h), and the pool suite's threads
 * (bench_pool.c). Header only (static functions):
 * it needs pthreads and hsad_now_ns alone, so the NVIDIA bench, which builds without the AMD
 * side, includes it as it is.
 *
 * Each thread runs the job's `prepare` (untimed; NULL: none), waits on a spin barrier that the
 * caller releases once every thread is created, then times `run` over its n operations. */
#ifndef HSAD_BENCH_THREADS_H
#define HSAD_BENCH_THREADS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "hsa-dispatch/hsad.h"

enum { BENCH_THREADS_MAX = 8 };

/* What each thread does; `t` is the thread's index (0..T-1). Nonzero: a failure (the thread
 * stops; prepare's failure skips run). Called on the measuring threads concurrently. */
typedef struct bench_threads_job {
  int (*prepare)(void *ctx, uint32_t t);
  int (*run)(void *ctx, uint32_t t, uint32_t n);
  void *ctx;
  bool one_inline; /* T = 1 runs on the calling thread (no thread created) */
} bench_threads_job_t;

typedef struct bench_thread_ {
  const bench_threads_job_t *job;
  uint32_t t, n;
  volatile int *go;
  double ns;
  int err;
  pthread_t th;
} bench_thread_t_;

static void *bench_thread_main_(void *arg) {
  bench_thread_t_ *w = arg;
  if (w->job->prepare && w->job->prepare(w->job->ctx, w->t)) w->err = 1;
  while (!__atomic_load_n(w->go, __ATOMIC_ACQUIRE)) {
  }
  uint64_t t0 = hsad_now_ns();
  if (!w->err && w->job->run(w->job->ctx, w->t, w->n)) w->err = 1;
  w->ns = (double)(hsad_now_ns() - t0) / w->n;
  return NULL;
}

/* Results of bench_threads_measure. */
enum { BENCH_THREADS_OK = 0, BENCH_THREADS_FAILED = 1, BENCH_THREADS_NOT_STARTED = 2 };

/* One measurement: T threads (1..BENCH_THREADS_MAX) of `job`, n operations each, released
 * together. *ns: the mean over the threads of (thread time / n), ns per operation; *wall_ns: ns
 * from the release to the last thread's end (T x n operations in all). Returns
 * BENCH_THREADS_NOT_STARTED when a pthread_create failed (the threads started are joined;
 * *ns and *wall_ns still set), else BENCH_THREADS_FAILED when a thread's prepare or run did,
 * else BENCH_THREADS_OK. */
static inline int bench_threads_measure(const bench_threads_job_t *job, uint32_t T, uint32_t n,
                                        double *ns, double *wall_ns) {
  bench_thread_t_ w[BENCH_THREADS_MAX];
  volatile int go = 0;
  uint32_t started = 0;
  if (T == 1 && job->one_inline) {
    w[0] = (bench_thread_t_){.job = job, .n = n, .go = &go};
    go = 1;
    bench_thread_main_(&w[0]);
    *ns = w[0].ns;
    *wall_ns = w[0].ns * n; /* its run alone: the prepare is before the release */
    return w[0].err ? BENCH_THREADS_FAILED : BENCH_THREADS_OK;
  }
  for (uint32_t t = 0; t < T; t++) {
    w[t] = (bench_thread_t_){.job = job, .t = t, .n = n, .go = &go};
    if (pthread_create(&w[t].th, NULL, bench_thread_main_, &w[t])) break;
    started++;
  }
  uint64_t t0 = hsad_now_ns();
  __atomic_store_n(&go, 1, __ATOMIC_RELEASE);
  int err = 0;
  *ns = 0;
  for (uint32_t t = 0; t < started; t++) {
    pthread_join(w[t].th, NULL);
    *ns += w[t].ns / T;
    err |= w[t].err;
  }
  *wall_ns = (double)(hsad_now_ns() - t0);
  return started < T ? BENCH_THREADS_NOT_STARTED : err ? BENCH_THREADS_FAILED : BENCH_THREADS_OK;
}

#endif
