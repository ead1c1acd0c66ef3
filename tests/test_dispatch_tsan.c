/* test_dispatch_tsan.c - plain program (Criterion does not start under ThreadSanitizer):
 * 4 producer threads x N dispatches (default 100,000; argv[1]) of the counting kernel into one
 * 64-slot queue: two through hsad_kernel_dispatch (the hot path; 1 and 64 work-items: other
 * hidden arguments, so each thread's launch-cache entry stamps blocks the other's hits must
 * not trust, aql_ring.h), one as N / 4 batches of 4 (their claims clear the stamps), one
 * through a prepared launch; every 1000th dispatch with a completion the producer waits on
 * (timeline epochs and waits under contention). A 5th thread submits struct_1k, whose
 * 1296-byte kernarg segment spans 3 kernarg blocks (3 slots, hsad_queue.h step 4), N / 500
 * times with a completion, each result checked exactly (a span's kernargs overwritten by a
 * racing producer would show); a 6th launches a graph of struct_1k N / 500 times, its node
 * updated before each launch (launches in flight: ring-copy mode, its segment into its slots'
 * blocks, fusion/launch.c), each run's results checked at the end. Checks the count is exact
 * and the write index is the packets submitted. Exit 0 on success, 1 with the reason on
 * stderr. Built and run by `make dispatch-tsan`. */
#include <hsa/amd_hsa_queue.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "fusion/hsad_fusion.h"
#include "hsa-dispatch/hsad.h"

#ifndef TEST_KERNDIR
#define TEST_KERNDIR "build/kernels"
#endif

typedef struct {
  hsad_queue_t *q;
  const hsad_device_kernel_t *k;
  uint32_t *counter, count;
  int mode; /* 0, 1: hsad_kernel_dispatch on 1 / 64 work-items; 2: batches of 4; 3: prepared */
  int failed;
} prod_t;

static void *produce(void *arg) {
  prod_t *p = arg;
  uint32_t one = 1, wide = p->mode == 1 ? 64 : 1;
  hsad_karg_t args[2] = {HSAD_KARG_PTR(p->counter), HSAD_KARG_VAL(one)};
  hsad_launch_t l = {.dims = 1, .grid = {wide}, .block = {wide}, .args = args, .arg_count = 2,
                     .flags = HSAD_LAUNCH_NO_BARRIER};
  uint64_t deadline = hsad_now_ns() + 600000000000ull;
  hsad_dispatch_desc_t items[4] = {{p->k, l}, {p->k, l}, {p->k, l}, {p->k, l}};
  hsad_prepared_launch_t *pl = NULL;
  if (p->mode == 3 && hsad_launch_prepare(p->q, p->k, &l, &pl)) {
    fprintf(stderr, "prepare: %s\n", hsad_last_error());
    p->failed = 1;
    return NULL;
  }
  uint32_t step = p->mode == 2 ? 4 : 1;
  for (uint32_t i = 0; i < p->count; i += step) {
    hsad_completion_t c;
    bool wait = i % 1000 >= 1000 - step;
    hsad_completion_t *cp = wait ? &c : NULL;
    hsad_status_t s = p->mode == 2   ? hsad_queue_dispatch_batch(p->q, items, 4, deadline, cp, NULL)
                      : p->mode == 3 ? hsad_prepared_dispatch(pl, deadline, cp, NULL)
                                     : hsad_kernel_dispatch(p->q, p->k, &l, deadline, cp, NULL);
    if (!s && wait) s = hsad_completion_wait(&c, deadline);
    if (s) {
      fprintf(stderr, "dispatch %u: %s: %s\n", i, hsad_status_name(s), hsad_last_error());
      p->failed = 1;
      break;
    }
  }
  hsad_launch_destroy(pl);
  return NULL;
}

/* struct_1k(out, blob v[256], n): out[i] = v[i % 256] + i, 64 work-items, v new each time. */
typedef struct {
  hsad_queue_t *q;
  const hsad_device_kernel_t *k;
  uint32_t *out, count;
  int failed;
} span_t;

static void *produce_spans(void *arg) {
  span_t *p = arg;
  static uint32_t v[256];
  uint32_t n = 64;
  hsad_karg_t args[3] = {HSAD_KARG_PTR(p->out), {.tag = HSAD_KARG_BYTES, .size = 1024, .bytes = v},
                         HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {64}, .block = {64}, .args = args, .arg_count = 3};
  uint64_t deadline = hsad_now_ns() + 600000000000ull;
  for (uint32_t r = 0; r < p->count; r++) {
    for (uint32_t j = 0; j < 256; j++) v[j] = r * 1000u + j;
    hsad_completion_t c;
    hsad_status_t s = hsad_kernel_dispatch(p->q, p->k, &l, deadline, &c, NULL);
    if (!s) s = hsad_completion_wait(&c, deadline);
    if (s) {
      fprintf(stderr, "span dispatch %u: %s: %s\n", r, hsad_status_name(s), hsad_last_error());
      p->failed = 1;
      return NULL;
    }
    for (uint32_t i = 0; i < n; i++)
      if (p->out[i] != r * 1000u + i % 256 + i) {
        fprintf(stderr, "span dispatch %u: out[%u] = %u, want %u\n", r, i, p->out[i],
                r * 1000u + i % 256 + i);
        p->failed = 1;
        return NULL;
      }
  }
  return NULL;
}

/* A graph of struct_1k launched `count` times, its node updated before each launch without
 * waiting (ring-copy mode while launches are in flight): run r writes out[64 r + i] =
 * r x 1000 + 7 + i % 256 + i (its own blob), checked once the last run completed. */
static void *produce_graph(void *arg) {
  span_t *p = arg;
  static uint32_t v[2][256];
  uint32_t n = 64;
  hsad_karg_t args[3] = {HSAD_KARG_PTR(p->out), {.tag = HSAD_KARG_BYTES, .size = 1024,
                         .bytes = v[0]}, HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {64}, .block = {64}, .args = args, .arg_count = 3};
  for (uint32_t j = 0; j < 256; j++) v[0][j] = 7 + j;
  hsad_graph_t *g;
  hsad_graph_exec_t *x = NULL;
  uint32_t node;
  hsad_status_t s = hsad_graph_create(0, &g);
  if (!s) s = hsad_graph_add_kernel(g, "S", 0, p->k, &l, NULL, 0, &node);
  if (!s) s = hsad_graph_instantiate(g, &p->q, 1, &x);
  hsad_graph_destroy(g);
  hsad_completion_t c = {0};
  uint64_t deadline = hsad_now_ns() + 600000000000ull;
  for (uint32_t r = 0; r < p->count && !s; r++) {
    if (r) {
      uint32_t *blob = v[r & 1]; /* the update copies it (hsad_graph_exec_update) */
      for (uint32_t j = 0; j < 256; j++) blob[j] = r * 1000u + 7 + j;
      args[0] = (hsad_karg_t)HSAD_KARG_PTR(p->out + 64 * r);
      args[1].bytes = blob;
      s = hsad_graph_exec_update(x, node, &l);
    }
    if (!s) s = hsad_graph_launch(x, 0, deadline, &c, NULL);
  }
  if (!s) s = hsad_completion_wait(&c, deadline);
  if (s) {
    fprintf(stderr, "graph: %s: %s\n", hsad_status_name(s), hsad_last_error());
    p->failed = 1;
  }
  for (uint32_t r = 0; r < p->count && !p->failed; r++)
    for (uint32_t i = 0; i < n; i++)
      if (p->out[64 * r + i] != r * 1000u + 7 + i % 256 + i) {
        fprintf(stderr, "graph run %u: out[%u] = %u, want %u\n", r, i, p->out[64 * r + i],
                r * 1000u + 7 + i % 256 + i);
        p->failed = 1;
        break;
      }
  hsad_graph_exec_destroy(x);
  return NULL;
}

#define CK(x) do { hsad_status_t s_ = (x); if (s_) { fprintf(stderr, "%s: %s: %s\n", #x, \
  hsad_status_name(s_), hsad_last_error()); return 1; } } while (0)

int main(int argc, char **argv) {
  uint32_t per = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 100000;
  per -= per % 4; /* batches of 4 */
  uint32_t spans = per / 500 ? per / 500 : 1;
  hsad_runtime_t *rt;
  hsad_device_t *dev;
  hsad_program_t *prog, *pbig;
  const hsad_device_kernel_t *k, *ks;
  hsad_queue_t *q;
  uint32_t *counter, *out, *gout;
  CK(hsad_runtime_open(&rt));
  CK(hsad_device_get(rt, 0, &dev));
  CK(hsad_program_load_file(dev, TEST_KERNDIR "/count_dispatch-gfx90a-v5.hsaco", &prog));
  CK(hsad_program_kernel(prog, "count_dispatch", &k));
  CK(hsad_program_load_file(dev, TEST_KERNDIR "/big_args-gfx90a-v5.hsaco", &pbig));
  CK(hsad_program_kernel(pbig, "struct_1k", &ks));
  CK(hsad_queue_create(dev, &(hsad_queue_options_t){.size = 64}, &q));
  CK(hsad_buffer_alloc(dev, 4, (void **)&counter));
  CK(hsad_buffer_alloc(dev, 64 * 4, (void **)&out));
  CK(hsad_buffer_alloc(dev, (size_t)spans * 64 * 4, (void **)&gout));
  prod_t p[4];
  pthread_t t[6];
  for (int i = 0; i < 4; i++) {
    p[i] = (prod_t){.q = q, .k = k, .counter = counter, .count = per, .mode = i};
    pthread_create(&t[i], NULL, produce, &p[i]);
  }
  span_t sp = {.q = q, .k = ks, .out = out, .count = spans};
  pthread_create(&t[4], NULL, produce_spans, &sp);
  span_t gp = {.q = q, .k = ks, .out = gout, .count = spans};
  pthread_create(&t[5], NULL, produce_graph, &gp);
  for (int i = 0; i < 6; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 4; i++)
    if (p[i].failed) return 1;
  if (sp.failed || gp.failed) return 1;
  CK(hsad_queue_wait_idle(q, hsad_now_ns() + 60000000000ull));
  const amd_queue_t *aq = (const amd_queue_t *)hsad_queue_hsa(q);
  uint32_t got = __atomic_load_n(counter, __ATOMIC_ACQUIRE);
  /* packets: every count dispatch, a barrier-AND after each hsad_kernel_dispatch with a
   * completion (NO_BARRIER), 3 per span (the last padding carries its epoch) and per graph
   * launch, checkpoints and wait_idle's flush (the rest: at least 0) */
  uint64_t least = 4ull * per + 2ull * (per / 1000) + 6ull * spans;
  if (got != 4 * per || aq->write_dispatch_id < least ||
      aq->read_dispatch_id != aq->write_dispatch_id) {
    fprintf(stderr, "count %u (want %u), write %llu (at least %llu), read %llu\n", got, 4 * per,
            (unsigned long long)aq->write_dispatch_id, (unsigned long long)least,
            (unsigned long long)aq->read_dispatch_id);
    return 1;
  }
  unsigned long long written = aq->write_dispatch_id;
  hsad_buffer_free(counter);
  hsad_buffer_free(out);
  hsad_buffer_free(gout);
  hsad_queue_destroy(q);
  hsad_program_destroy(prog);
  hsad_program_destroy(pbig);
  CK(hsad_runtime_close(rt));
  printf("test_dispatch_tsan: 4 x %u dispatches (hot path x 2, batches, prepared), %u 3-slot "
         "kernarg spans and %u graph launches (ring-copy) into one 64-slot queue: count and "
         "every span's and run's result exact (write index %llu)\n", per, spans, spans, written);
  return 0;
}
