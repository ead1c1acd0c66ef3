/* bench_paths.h - the submit paths the suites share: hsad, hsad-prepared and the textbook ROCr
 * sequence, on queues of their own. Completions are used only here and in the suites' waits. */
#ifndef HSAD_BENCH_PATHS_H
#define HSAD_BENCH_PATHS_H

#include <hsa/hsa.h>

#include "hsa-dispatch/hsad.h"
#include "hsa-dispatch/hsad_queue.h"
#include "tools/hsad/bench.h"

/* The textbook ROCr sequence on a queue of its own: add_write_index, wait for room, fill the
 * body, one 32-bit header store, doorbell signal store. */
typedef struct bench_rocr_q {
  hsa_queue_t *q;
  hsa_signal_t signal; /* completion of the next packet (0: none) */
  uint64_t kernel_object;
  void *kernarg;
  uint32_t group, priv;
} bench_rocr_q_t;

void bench_rocr_submit(bench_rocr_q_t *c);
/* Creates the queue (size packets; profiling on when asked) and the kernarg block. */
int bench_rocr_open(bench_ctx_t *ctx, uint32_t size, bool profiling, bench_rocr_q_t *out,
                    char *note, size_t n);
void bench_rocr_close(bench_rocr_q_t *c);
/* Waits until the read index reaches the write index (deadline: ctx->timeout_s). */
int bench_rocr_drain(bench_ctx_t *ctx, bench_rocr_q_t *c);
/* Submits a barrier-AND packet with up to 5 dep signals and a completion signal (0: none). */
void bench_rocr_barrier(bench_rocr_q_t *c, const hsa_signal_t deps[5], hsa_signal_t done);
/* Waits for signal < 1 with a deadline; 0 or -1. */
int bench_rocr_wait(bench_ctx_t *ctx, hsa_signal_t s);

/* Queue size for n packets in flight: a power of two >= n within the device's limits. */
uint32_t bench_queue_size(const bench_ctx_t *ctx, uint32_t n);
/* hsad_queue_create with a size and profiling; NULL with note on failure. */
hsad_queue_t *bench_hsad_queue(bench_ctx_t *ctx, uint32_t size, bool profiling, char *note,
                               size_t n);
int bench_hsad_drain(bench_ctx_t *ctx, hsad_queue_t *q, char *note, size_t n);

/* Completions: the only place that knows the completion API of hsad_queue.h. */
typedef hsad_completion_t bench_compl_t;
static inline hsad_status_t bench_compl_wait(bench_ctx_t *ctx, bench_compl_t c) {
  return hsad_completion_wait(&c, hsad_now_ns() + ctx->timeout_s * 1000000000ull);
}
static inline void bench_compl_release(bench_compl_t c) { (void)c; /* values: nothing to release */ }
static inline hsad_status_t bench_compl_times(bench_compl_t c, uint64_t *s, uint64_t *e) {
  return hsad_completion_times(&c, s, e);
}
/* A barrier on q waiting for n completions (hsad_queue_barrier: deps collapse to one
 * barrier-value packet per other queue), with its own completion in *out (NULL: none). */
hsad_status_t bench_hsad_barrier(bench_ctx_t *ctx, hsad_queue_t *q, const bench_compl_t *deps,
                                 uint32_t n, bench_compl_t *out);
/* host ns (CLOCK_MONOTONIC) -> ROCr system timestamp ns: add this offset */
double bench_sys_offset_ns(void);

/* 1 / 1 launch of the empty kernel (no arguments). */
extern const hsad_launch_t bench_launch;

#endif
