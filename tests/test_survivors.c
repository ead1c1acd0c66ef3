/* test_survivors.c - tests written for survivors of `make mutation-sample` (issue 18): each test
 * names the mutants it kills (tests/mutation-sample/REPORT.md lists them by number, file:line
 * and change). Expected values come from outside the code under test: whole messages as the
 * headers document them, bytes counted by glibc's allocator (mallinfo2), results computed here.
 *
 * Heap balance: a library object created and destroyed returns every byte it took from the
 * heap. After warm-up rounds (ROCr and kfd-emu keep pools and vectors that grow for the first
 * few dozen queues, then stay: measured 0 bytes per queue round after 64), SURV_ROUNDS more
 * rounds must leave glibc's in-use byte count (mallinfo2().uordblks) within a tolerance per
 * round below the smallest leak the test is for. */
#include "tests/test_dispatch_util.h"

#include <malloc.h>
#include <stdint.h>

#include "hsa-dispatch/hsad_monitor.h"

#define SURV_ROUNDS 16

static size_t surv_heap_in_use(void) { return mallinfo2().uordblks; }

/* Runs `round` `warmup` times, then SURV_ROUNDS times, and asserts the heap in use grew by less
 * than `tolerance` bytes per measured round. */
#define SURV_HEAP_BALANCED(what, warmup, tolerance, round)                                    \
  do {                                                                                        \
    for (int w_ = 0; w_ < (warmup); w_++) round;                                              \
    size_t before_ = surv_heap_in_use();                                                      \
    for (int r_ = 0; r_ < SURV_ROUNDS; r_++) round;                                           \
    long long grown_ = (long long)surv_heap_in_use() - (long long)before_;                    \
    cr_assert_lt(grown_, (long long)(tolerance) * SURV_ROUNDS,                                \
                 "%s: the heap in use grew by %lld bytes in %d rounds (%lld per round; "      \
                 "tolerance %d)", what, grown_, SURV_ROUNDS, grown_ / SURV_ROUNDS,            \
                 (int)(tolerance));                                                           \
  } while (0)

static void surv_queue_round(dq_env_t *e, bool profiling, bool monitor) {
  hsad_queue_t *q = NULL;
  DQ_OK(hsad_queue_create(e->dev, &(hsad_queue_options_t){.size = 64, .profiling = profiling}, &q));
  if (monitor) DQ_OK(hsad_queue_monitor_enable(q, NULL));
  hsad_queue_destroy(q);
}

/* hsad_queue_destroy frees the queue's timeline (epoch array, timestamp signals: mutant 24's
 * dq_timeline_fini) and its monitor (mutant 22's dq_monitor_fini), with and without profiling
 * and monitoring. */
Test(heap, queue_destroy_returns_every_byte, .timeout = 120) {
  dq_env_t e;
  dq_open(&e);
  SURV_HEAP_BALANCED("plain queue", 64, 16, surv_queue_round(&e, false, false));
  SURV_HEAP_BALANCED("profiling queue", 64, 16, surv_queue_round(&e, true, false));
  SURV_HEAP_BALANCED("monitored profiling queue", 64, 16, surv_queue_round(&e, true, true));
  DQ_OK(hsad_runtime_close(e.rt));
}

static void surv_runtime_round(bool leave_queue) {
  dq_env_t e;
  dq_open(&e);
  hsad_queue_t *q = NULL;
  DQ_OK(hsad_queue_create(e.dev, &(hsad_queue_options_t){.size = 64, .profiling = true}, &q));
  if (!leave_queue) hsad_queue_destroy(q);
  DQ_OK(hsad_runtime_close(e.rt)); /* the last close destroys a queue left open ... */
  if (leave_queue) hsad_queue_destroy(q); /* ... and the handle's memory goes now */
}

/* The last hsad_runtime_close destroys the queues left open with everything they hold (mutant
 * 24: their timelines, 2 KiB of epochs and 64 timestamp signals for a 64-packet profiling
 * queue). ROCr's hsa_init / hsa_shut_down keep about 22 bytes per cycle: 256 bytes per round
 * tolerated. */
Test(heap, runtime_close_frees_open_queues, .timeout = 120) {
  SURV_HEAP_BALANCED("runtime with its queue destroyed", 16, 256, surv_runtime_round(false));
  SURV_HEAP_BALANCED("runtime with a queue left open", 16, 256, surv_runtime_round(true));
}
