/* test_memory_pool.c - pinned host pools: size classes, reuse, bounded cache, trim, exact
 * statistics, bad input, 4 threads at once. */
#include <pthread.h>
#include <stdlib.h>

#include "memory/hsad_memory.h"
#include "tests/test_dispatch_util.h"

#define MEM_ERR(expr, status, ...)                                                          \
  do {                                                                                      \
    char want_[1024];                                                                       \
    snprintf(want_, sizeof want_, __VA_ARGS__);                                             \
    hsad_status_t s_ = (expr);                                                              \
    cr_assert_eq(s_, status, "%s -> %s (want %s): %s", #expr, hsad_status_name(s_),         \
                 hsad_status_name(status), hsad_last_error());                              \
    cr_assert_str_eq(hsad_last_error(), want_);                                             \
  } while (0)

/* Asserts every counter of the pool. */
static void stats_are(hsad_host_pool_t *pool, uint64_t in_use, uint64_t blocks_in_use,
                      uint64_t cached, uint64_t blocks_cached, uint64_t hits, uint64_t misses,
                      uint64_t trims) {
  hsad_host_pool_stats_t s;
  TH_OK(hsad_host_pool_stats(pool, &s));
  cr_assert_eq(s.bytes_in_use, in_use, "bytes_in_use %llu want %llu",
               (unsigned long long)s.bytes_in_use, (unsigned long long)in_use);
  cr_assert_eq(s.blocks_in_use, blocks_in_use);
  cr_assert_eq(s.bytes_cached, cached, "bytes_cached %llu want %llu",
               (unsigned long long)s.bytes_cached, (unsigned long long)cached);
  cr_assert_eq(s.blocks_cached, blocks_cached);
  cr_assert_eq(s.hits, hits, "hits %llu want %llu", (unsigned long long)s.hits,
               (unsigned long long)hits);
  cr_assert_eq(s.misses, misses, "misses %llu want %llu", (unsigned long long)s.misses,
               (unsigned long long)misses);
  cr_assert_eq(s.trims, trims, "trims %llu want %llu", (unsigned long long)s.trims,
               (unsigned long long)trims);
}

Test(memory_pool, reuse_classes_and_stats) {
  th_env_t e;
  th_open(&e);
  hsad_host_pool_t *pool = NULL;
  TH_OK(hsad_host_pool_get(e.dev, &pool));
  stats_are(pool, 0, 0, 0, 0, 0, 0, 0);
  hsad_host_pool_stats_t st;
  TH_OK(hsad_host_pool_stats(pool, &st));
  cr_assert_eq(st.max_cached_bytes, HSAD_HOST_POOL_DEFAULT_MAX_CACHED);
  cr_assert_eq(st.numa_node, hsad_cpu_info(e.rt, 0)->numa_node);

  void *a = NULL, *b = NULL, *c = NULL;
  TH_OK(hsad_host_pool_alloc(pool, 1, &a));          /* class 4096 */
  TH_OK(hsad_host_pool_alloc(pool, 4097, &b));       /* class 8192 */
  TH_OK(hsad_host_pool_alloc(pool, 1 << 20, &c));    /* class 1 MiB exactly */
  cr_assert_eq((uintptr_t)a % 4096, 0);
  stats_are(pool, 4096 + 8192 + (1 << 20), 3, 0, 0, 0, 3, 0);
  memset(c, 0xab, 1 << 20); /* pinned, writable */
  hsad_mem_info_t mi;
  TH_OK(hsad_mem_info((char *)b + 8191, &mi));
  cr_assert_eq(mi.base, b);
  cr_assert_eq(mi.size, 4097);
  cr_assert_eq(mi.capacity, 8192);
  cr_assert_eq(mi.kind, HSAD_MEM_POOLED);
  cr_assert_null(mi.device);

  TH_OK(hsad_host_pool_free(pool, b));
  stats_are(pool, 4096 + (1 << 20), 2, 8192, 1, 0, 3, 0);
  MEM_ERR(hsad_mem_info(b, &mi), HSAD_ERR_FREED,
          "hsad_mem_info: %p is in a pool block that was freed (8192 bytes at %p, cached by the "
          "pool of NUMA node 0)", b, b);
  /* the same class comes back: the very block (LIFO), a hit */
  void *b2 = NULL;
  TH_OK(hsad_host_pool_alloc(pool, 5000, &b2));
  cr_assert_eq(b2, b);
  stats_are(pool, 4096 + 8192 + (1 << 20), 3, 0, 0, 1, 3, 0);
  TH_OK(hsad_mem_info(b2, &mi));
  cr_assert_eq(mi.size, 5000);
  /* another class misses even with a cached block elsewhere */
  TH_OK(hsad_mem_free(a)); /* hsad_mem_free routes pool blocks to their pool */
  void *d = NULL;
  TH_OK(hsad_host_pool_alloc(pool, 8192, &d));
  cr_assert_neq(d, a);
  stats_are(pool, 8192 + 8192 + (1 << 20), 3, 4096, 1, 1, 4, 0);
  TH_OK(hsad_host_pool_free(pool, b2));
  TH_OK(hsad_host_pool_free(pool, c));
  TH_OK(hsad_host_pool_free(pool, d));
  stats_are(pool, 0, 0, 4096 + 8192 + 8192 + (1 << 20), 4, 1, 4, 0);

  /* trim to 10000 bytes: largest classes first (1 MiB, then both 8 KiB blocks), 4 KiB stays */
  uint64_t released = 0;
  TH_OK(hsad_host_pool_trim(pool, 10000, &released));
  cr_assert_eq(released, (1 << 20) + 2 * 8192);
  stats_are(pool, 0, 0, 4096, 1, 1, 4, 3);
  TH_OK(hsad_host_pool_trim(pool, 0, &released));
  cr_assert_eq(released, 4096);
  stats_are(pool, 0, 0, 0, 0, 1, 4, 4);
  MEM_ERR(hsad_mem_info(c, &mi), HSAD_ERR_FREED,
          "hsad_mem_info: %p is in pooled memory that was freed (%d bytes at %p)", c, 1 << 20, c);
  TH_OK(hsad_runtime_close(e.rt));
}

Test(memory_pool, bounded_cache_and_oversize) {
  th_env_t e;
  th_open(&e);
  hsad_host_pool_t *pool = NULL;
  TH_OK(hsad_host_pool_get(e.dev, &pool));
  TH_OK(hsad_host_pool_set_max_cached(pool, 3 * 65536));
  void *blk[5];
  for (int i = 0; i < 5; i++) TH_OK(hsad_host_pool_alloc(pool, 65536, &blk[i]));
  stats_are(pool, 5 * 65536, 5, 0, 0, 0, 5, 0);
  for (int i = 0; i < 5; i++) TH_OK(hsad_host_pool_free(pool, blk[i]));
  /* three fit the bound, two are released instead of cached */
  stats_are(pool, 0, 0, 3 * 65536, 3, 0, 5, 2);
  /* lowering the bound trims at once */
  TH_OK(hsad_host_pool_set_max_cached(pool, 65536));
  stats_are(pool, 0, 0, 65536, 1, 0, 5, 4);
  /* a block above the largest class is allocated and released directly, never cached */
  size_t big = HSAD_HOST_POOL_MAX_CLASS + 1;
  TH_OK(hsad_host_pool_set_max_cached(pool, UINT64_MAX));
  void *o = NULL;
  TH_OK(hsad_host_pool_alloc(pool, big, &o));
  uint64_t big_bytes = (big + 4095) & ~(size_t)4095;
  stats_are(pool, big_bytes, 1, 65536, 1, 0, 6, 4);
  hsad_mem_info_t mi;
  TH_OK(hsad_mem_info(o, &mi));
  cr_assert_eq(mi.capacity, big_bytes);
  TH_OK(hsad_host_pool_free(pool, o));
  stats_are(pool, 0, 0, 65536, 1, 0, 6, 4);
  MEM_ERR(hsad_mem_free(o), HSAD_ERR_FREED,
          "hsad_mem_free: %p was already freed (pooled memory of %llu bytes at %p)", o,
          (unsigned long long)big_bytes, o);
  TH_OK(hsad_runtime_close(e.rt));
}

Test(memory_pool, bad_input) {
  th_env_t e;
  th_open(&e);
  hsad_host_pool_t *pool = NULL;
  TH_OK(hsad_host_pool_get(e.dev, &pool));
  void *p = (void *)0x1;
  MEM_ERR(hsad_host_pool_alloc(NULL, 64, &p), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_host_pool_alloc: pool is NULL");
  MEM_ERR(hsad_host_pool_alloc(pool, 0, &p), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_host_pool_alloc: size is 0");
  MEM_ERR(hsad_host_pool_alloc(pool, SIZE_MAX - 100, &p), HSAD_ERR_RANGE,
          "hsad_host_pool_alloc: %zu bytes overflow when rounded to pages", (size_t)SIZE_MAX - 100);
  MEM_ERR(hsad_host_pool_alloc(pool, 64, NULL), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_host_pool_alloc: out_ptr is NULL");
  cr_assert_eq(p, (void *)0x1);
  MEM_ERR(hsad_host_pool_get(NULL, &pool), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_host_pool_get: device is NULL");

  uint8_t *a = NULL;
  TH_OK(hsad_host_pool_alloc(pool, 100, (void **)&a));
  memset(a, 7, 100);
  MEM_ERR(hsad_host_pool_free(pool, a + 64), HSAD_ERR_NOT_ALLOCATED,
          "hsad_host_pool_free: no block of the pool of NUMA node 0 starts at %p", (void *)(a + 64));
  int local;
  MEM_ERR(hsad_host_pool_free(pool, &local), HSAD_ERR_NOT_ALLOCATED,
          "hsad_host_pool_free: no block of the pool of NUMA node 0 starts at %p", (void *)&local);
  MEM_ERR(hsad_mem_free(a + 64), HSAD_ERR_NOT_ALLOCATED,
          "hsad_mem_free: %p is inside pooled memory at %p (offset 64, 4096 bytes): pass the base "
          "address", (void *)(a + 64), (void *)a);
  stats_are(pool, 4096, 1, 0, 0, 0, 1, 0); /* nothing changed */
  for (int i = 0; i < 100; i++) cr_assert_eq(a[i], 7);
  TH_OK(hsad_host_pool_free(pool, a));
  MEM_ERR(hsad_host_pool_free(pool, a), HSAD_ERR_FREED,
          "hsad_host_pool_free: %p was already freed (a 4096-byte block cached by the pool of "
          "NUMA node 0)", (void *)a);
  MEM_ERR(hsad_mem_free(a), HSAD_ERR_FREED,
          "hsad_host_pool_free: %p was already freed (a 4096-byte block cached by the pool of "
          "NUMA node 0)", (void *)a);
  stats_are(pool, 0, 0, 4096, 1, 0, 1, 0);
  TH_OK(hsad_runtime_close(e.rt));
}

Test(memory_pool, block_limit) {
  th_env_t e;
  th_open(&e);
  hsad_host_pool_t *pool = NULL;
  TH_OK(hsad_host_pool_get(e.dev, &pool));
  static void *blk[HSAD_HOST_POOL_MAX_BLOCKS];
  for (int i = 0; i < HSAD_HOST_POOL_MAX_BLOCKS; i++) TH_OK(hsad_host_pool_alloc(pool, 4096, &blk[i]));
  void *p = NULL;
  MEM_ERR(hsad_host_pool_alloc(pool, 4096 * 2, &p), HSAD_ERR_RESOURCE_EXHAUSTED,
          "hsad_host_pool_alloc: the pool of NUMA node 0 tracks 4096 blocks (in use + cached) "
          "already: free or trim");
  stats_are(pool, 4096ull * HSAD_HOST_POOL_MAX_BLOCKS, HSAD_HOST_POOL_MAX_BLOCKS, 0, 0, 0,
            HSAD_HOST_POOL_MAX_BLOCKS, 0);
  TH_OK(hsad_host_pool_free(pool, blk[0]));
  TH_OK(hsad_host_pool_trim(pool, 0, NULL));
  TH_OK(hsad_host_pool_alloc(pool, 4096 * 2, &p)); /* the released descriptor is reused */
  TH_OK(hsad_host_pool_free(pool, p));
  for (int i = 1; i < HSAD_HOST_POOL_MAX_BLOCKS; i++) TH_OK(hsad_host_pool_free(pool, blk[i]));
  TH_OK(hsad_runtime_close(e.rt));
}

/* 4 threads allocate (mixed classes), write, check and free concurrently; afterwards every
 * counter adds up: hits + misses = allocations, nothing in use, cached blocks = misses - trims. */
#define MT_THREADS 4
#define MT_ROUNDS 2000
static hsad_host_pool_t *mt_pool;
static _Atomic uint64_t mt_allocs;
static void *mt_worker(void *arg) {
  uintptr_t id = (uintptr_t)arg;
  uint32_t x = (uint32_t)id * 2654435761u + 1;
  void *held[4] = {0};
  size_t held_sz[4] = {0};
  for (int r = 0; r < MT_ROUNDS; r++) {
    x = x * 1103515245u + 12345u;
    int slot = (int)(x >> 16) % 4;
    if (held[slot]) {
      uint8_t *p = held[slot];
      for (size_t i = 0; i < held_sz[slot]; i += 511)
        if (p[i] != (uint8_t)(id + i)) return (void *)1;
      if (hsad_host_pool_free(mt_pool, held[slot])) return (void *)2;
      held[slot] = NULL;
    } else {
      size_t sz = (size_t)4096 << ((x >> 8) % 5); /* 4 KiB .. 64 KiB */
      if (hsad_host_pool_alloc(mt_pool, sz, &held[slot])) return (void *)3;
      held_sz[slot] = sz;
      mt_allocs++;
      uint8_t *p = held[slot];
      for (size_t i = 0; i < sz; i += 511) p[i] = (uint8_t)(id + i);
    }
  }
  for (int s = 0; s < 4; s++)
    if (held[s] && hsad_host_pool_free(mt_pool, held[s])) return (void *)2;
  return NULL;
}

Test(memory_pool, four_threads) {
  th_env_t e;
  th_open(&e);
  TH_OK(hsad_host_pool_get(e.dev, &mt_pool));
  pthread_t t[MT_THREADS];
  for (uintptr_t i = 0; i < MT_THREADS; i++)
    cr_assert_eq(pthread_create(&t[i], NULL, mt_worker, (void *)i), 0);
  for (int i = 0; i < MT_THREADS; i++) {
    void *r = NULL;
    pthread_join(t[i], &r);
    cr_assert_null(r, "thread %d failed (%p): %s", i, r, hsad_last_error());
  }
  hsad_host_pool_stats_t s;
  TH_OK(hsad_host_pool_stats(mt_pool, &s));
  cr_assert_eq(s.bytes_in_use, 0);
  cr_assert_eq(s.blocks_in_use, 0);
  cr_assert_eq(s.trims, 0);
  cr_assert_eq(s.blocks_cached, s.misses, "every block allocated is cached now");
  cr_assert_gt(s.hits, 0);
  /* a block is only ever created when none of its class was cached: at most 16 (4 threads x 4
   * slots) per class, 5 classes */
  cr_assert_leq(s.misses, MT_THREADS * 4 * 5);
  cr_assert_eq(s.hits + s.misses, mt_allocs);
  uint64_t cached = 0;
  TH_OK(hsad_host_pool_trim(mt_pool, 0, &cached));
  cr_assert_eq(cached, s.bytes_cached);
  TH_OK(hsad_runtime_close(e.rt));
}
