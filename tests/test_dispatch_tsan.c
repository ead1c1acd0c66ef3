/* test_dispatch_tsan.c - plain program (Criterion does not start under ThreadSanitizer):
 * 4 producer threads x N dispatches (default 100,000; argv[1]) of the counting kernel into one
 * 64-slot queue, every 1000th with a completion the producer waits on (signal pool and waits
 * under contention). Checks the count is exact and every reserved slot was consumed.
 * Exit 0 on success, 1 with the reason on stderr. Built and run by `make dispatch-tsan`. */
#include <hsa/amd_hsa_queue.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "hsa-dispatch/hsad.h"

#ifndef TEST_KERNDIR
#define TEST_KERNDIR "build/kernels"
#endif

typedef struct {
  hsad_queue_t *q;
  const hsad_device_kernel_t *k;
  uint32_t *counter, count;
  int failed;
} prod_t;

static void *produce(void *arg) {
  prod_t *p = arg;
  uint32_t one = 1;
  hsad_karg_t args[2] = {HSAD_KARG_PTR(p->counter), HSAD_KARG_VAL(one)};
  hsad_launch_t l = {.dims = 1, .grid = {1}, .block = {1}, .args = args, .arg_count = 2,
                     .flags = HSAD_LAUNCH_NO_BARRIER};
  uint64_t deadline = hsad_now_ns() + 600000000000ull;
  for (uint32_t i = 0; i < p->count; i++) {
    hsad_completion_t c;
    hsad_status_t s = hsad_kernel_dispatch(p->q, p->k, &l, deadline, i % 1000 == 999 ? &c : NULL, NULL);
    if (!s && c) {
      s = hsad_completion_wait(&c, deadline);
    }
    if (s) {
      fprintf(stderr, "dispatch %u: %s: %s\n", i, hsad_status_name(s), hsad_last_error());
      p->failed = 1;
      return NULL;
    }
  }
  return NULL;
}

#define CK(x) do { hsad_status_t s_ = (x); if (s_) { fprintf(stderr, "%s: %s: %s\n", #x, \
  hsad_status_name(s_), hsad_last_error()); return 1; } } while (0)

int main(int argc, char **argv) {
  uint32_t per = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 100000;
  hsad_runtime_t *rt;
  hsad_device_t *dev;
  hsad_program_t *prog;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  uint32_t *counter;
  CK(hsad_runtime_open(&rt));
  CK(hsad_device_get(rt, 0, &dev));
  CK(hsad_program_load_file(dev, TEST_KERNDIR "/count_dispatch-gfx90a-v5.hsaco", &prog));
  CK(hsad_program_kernel(prog, "count_dispatch", &k));
  CK(hsad_queue_create(dev, &(hsad_queue_options_t){.size = 64}, &q));
  CK(hsad_buffer_alloc(dev, 4, (void **)&counter));
  prod_t p[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    p[i] = (prod_t){.q = q, .k = k, .counter = counter, .count = per};
    pthread_create(&t[i], NULL, produce, &p[i]);
  }
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 4; i++)
    if (p[i].failed) return 1;
  CK(hsad_queue_wait_idle(q, hsad_now_ns() + 60000000000ull));
  const amd_queue_t *aq = (const amd_queue_t *)hsad_queue_hsa(q);
  uint32_t got = __atomic_load_n(counter, __ATOMIC_ACQUIRE);
  if (got != 4 * per || aq->write_dispatch_id != 4ull * per || aq->read_dispatch_id != 4ull * per) {
    fprintf(stderr, "count %u (want %u), write %llu, read %llu\n", got, 4 * per,
            (unsigned long long)aq->write_dispatch_id, (unsigned long long)aq->read_dispatch_id);
    return 1;
  }
  hsad_buffer_free(counter);
  hsad_queue_destroy(q);
  hsad_program_destroy(prog);
  CK(hsad_runtime_close(rt));
  printf("test_dispatch_tsan: 4 x %u dispatches into one 64-slot queue: count exact\n", per);
  return 0;
}
