/* test_memory_tsan.c - plain program (Criterion does not start under ThreadSanitizer):
 * 4 threads x N rounds (default 100; argv[1]) each allocating device memory and pool blocks,
 * copying pageable -> device -> pool block -> pageable through every strategy (staged,
 * pipelined, pinned, direct; the direct one with a completion on the shared copy queue),
 * filling, checking every byte and freeing, all at once on one GPU.
 * Afterwards the pool's counters must add up (nothing in use, hits + misses = allocations).
 * Exit 0 on success, 1 with the reason on stderr. Built and run by `make memory-tsan`. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory/hsad_memory.h"

#define CK(expr)                                                                            \
  do {                                                                                      \
    hsad_status_t s_ = (expr);                                                              \
    if (s_) {                                                                               \
      fprintf(stderr, "%s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #expr,                   \
              hsad_status_name(s_), hsad_last_error());                                     \
      return (void *)1;                                                                     \
    }                                                                                       \
  } while (0)

static hsad_device_t *dev;
static hsad_host_pool_t *pool;
static uint32_t rounds;
static _Atomic uint64_t pool_allocs;

static void *worker(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  uint64_t deadline = hsad_now_ns() + 600000000000ull;
  hsad_copy_options_t o = {.staging_max = 8192, .pin_threshold = 96 * 1024,
                           .chunk_size = 16384, .chunk_buffers = 2};
  const size_t sizes[4] = {5000, 40000 + id, 100000 + 3 * id, 1};
  for (uint32_t r = 0; r < rounds; r++) {
    size_t n = sizes[(r + id) % 4];
    uint8_t *src = malloc(n + 8), *back = malloc(n + 8);
    if (!src || !back) return (void *)1;
    for (size_t i = 0; i < n + 8; i++) src[i] = (uint8_t)(i * 31 + r + id);
    memset(back, 0, n + 8);
    void *d = NULL, *blk = NULL;
    CK(hsad_mem_alloc(dev, HSAD_MEM_DEVICE, n + 8, NULL, 0, &d));
    CK(hsad_host_pool_alloc(pool, n + 8, &blk));
    atomic_fetch_add_explicit(&pool_allocs, 1, memory_order_relaxed);
    CK(hsad_memcpy(dev, (uint8_t *)d + 1, src + 2, n, &o, deadline)); /* pageable -> device */
    hsad_completion_t c;                                               /* direct D2H, async */
    CK(hsad_memcpy_async(dev, blk, (uint8_t *)d + 1, n, NULL, 0, &o, deadline, &c));
    CK(hsad_completion_wait(&c, deadline));
    CK(hsad_memcpy(dev, back + 3, blk, n, &o, deadline));             /* -> pageable */
    if (memcmp(back + 3, src + 2, n)) {
      fprintf(stderr, "thread %lu round %u: %zu bytes differ\n", (unsigned long)id, r, n);
      return (void *)1;
    }
    CK(hsad_memset(dev, d, 0x5a, 1, n + 8, deadline));
    if (((uint8_t *)d)[n + 7] != 0x5a) {
      fprintf(stderr, "thread %lu round %u: fill missing\n", (unsigned long)id, r);
      return (void *)1;
    }
    CK(hsad_host_pool_free(pool, blk));
    CK(hsad_mem_free(d));
    free(src);
    free(back);
  }
  return NULL;
}

int main(int argc, char **argv) {
  rounds = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 100;
  hsad_runtime_t *rt;
  if (hsad_runtime_open(&rt) || hsad_device_get(rt, 0, &dev) || hsad_host_pool_get(dev, &pool)) {
    fprintf(stderr, "setup: %s\n", hsad_last_error());
    return 1;
  }
  pthread_t t[4];
  for (uintptr_t i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, (void *)i);
  int failed = 0;
  for (int i = 0; i < 4; i++) {
    void *r = NULL;
    pthread_join(t[i], &r);
    failed |= r != NULL;
  }
  if (failed) return 1;
  hsad_host_pool_stats_t s;
  hsad_host_pool_stats(pool, &s);
  /* the test's own blocks plus the copies' staging blocks: all back, none in use */
  if (s.bytes_in_use || s.blocks_in_use || s.hits + s.misses < pool_allocs ||
      s.blocks_cached + s.trims != s.misses) {
    fprintf(stderr, "pool counters: in use %llu (%llu blocks), hits %llu, misses %llu, cached "
            "%llu blocks, trims %llu, test allocations %llu\n",
            (unsigned long long)s.bytes_in_use, (unsigned long long)s.blocks_in_use,
            (unsigned long long)s.hits, (unsigned long long)s.misses,
            (unsigned long long)s.blocks_cached, (unsigned long long)s.trims,
            (unsigned long long)pool_allocs);
    return 1;
  }
  printf("memory-tsan: 4 threads x %u rounds: ok (pool hits %llu, misses %llu)\n", rounds,
         (unsigned long long)s.hits, (unsigned long long)s.misses);
  hsad_runtime_close(rt);
  return 0;
}
