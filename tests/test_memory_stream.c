/* test_memory_stream.c - stream-ordered device allocation (issue 21): a freed block reused by
 * a later allocation on the same queue with no host wait, a chain alloc -> kernel -> free ->
 * alloc -> kernel with exact results, reuse once a free point was reached, a cross-queue reuse
 * that waits for the free point on the device, the release threshold and trim, exact counters,
 * bad input. A "gate" holds a queue at a barrier waiting for an HSA signal the test opens, so
 * every "not yet" is exact, not timed. */
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

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

static struct {
  hsa_status_t (*create)(hsa_signal_value_t, uint32_t, const hsa_agent_t *, hsa_signal_t *);
  hsa_status_t (*destroy)(hsa_signal_t);
  void (*store)(hsa_signal_t, hsa_signal_value_t);
} sg;

/* A barrier on q that holds everything after it until the returned signal is set to 0. */
static hsa_signal_t gate(hsad_queue_t *q) {
  *(void **)&sg.create = dlsym(RTLD_DEFAULT, "hsa_signal_create");
  *(void **)&sg.destroy = dlsym(RTLD_DEFAULT, "hsa_signal_destroy");
  *(void **)&sg.store = dlsym(RTLD_DEFAULT, "hsa_signal_store_screlease");
  cr_assert(sg.create && sg.destroy && sg.store);
  hsa_signal_t s;
  hsad_completion_t c;
  cr_assert_eq(sg.create(1, 0, NULL, &s), HSA_STATUS_SUCCESS);
  DQ_OK(hsad_queue_barrier_signals(q, NULL, 0, &s, 1, (hsa_signal_t){0}, dq_in(DQ_SEC), &c));
  cr_assert_not(hsad_completion_done(&c));
  return s;
}

static void fill(hsad_queue_t *q, const hsad_device_kernel_t *k, uint32_t *p, uint32_t value,
                 uint32_t n, hsad_completion_t *out) {
  hsad_karg_t args[3] = {HSAD_KARG_PTR(p), HSAD_KARG_VAL(value), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {n}, .block = {64}, .args = args, .arg_count = 3};
  DQ_OK(hsad_kernel_dispatch(q, k, &l, dq_in(DQ_SEC), out, NULL));
}

static void check_stats(hsad_mem_pool_t *pool, const hsad_mem_pool_stats_t *want) {
  hsad_mem_pool_stats_t st;
  DQ_OK(hsad_mem_pool_stats(pool, &st));
#define F(f) cr_assert_eq(st.f, want->f, #f " %llu, want %llu", (unsigned long long)st.f, \
                          (unsigned long long)want->f)
  F(reserved_bytes); F(used_bytes); F(cached_bytes); F(reserved_high); F(used_high);
  F(used_blocks); F(cached_blocks); F(allocs); F(reuse_reached); F(reuse_same_queue);
  F(reuse_cross_queue); F(rocr_allocs); F(rocr_releases); F(release_threshold);
#undef F
}

/* alloc -> fill 0xa1 -> copy out -> free -> alloc -> fill 0xb2 -> copy out -> free, all on one
 * gated queue: the second allocation gets the first block back (rule 2) while nothing has run,
 * and after the gate opens both copies hold their kernel's values exactly. */
Test(memory_stream, same_queue_reuse_without_host_wait, .timeout = 60) {
  dq_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *prog = dq_start(&e, "fill", 5, "fill", &k, &q);
  hsad_mem_pool_t *pool = NULL;
  DQ_OK(hsad_mem_pool_create(e.dev, &pool));
  const uint32_t n = 1000; /* 4000 bytes: class 4096 */
  uint32_t *h1 = malloc(n * 4), *h2 = malloc(n * 4);
  memset(h1, 0, n * 4);
  memset(h2, 0, n * 4);
  hsa_signal_t gs = gate(q);
  uint32_t *a = NULL, *b = NULL;
  hsad_completion_t k1, c1, k2, c2;
  DQ_OK(hsad_mem_alloc_async(pool, q, n * 4, dq_in(DQ_SEC), (void **)&a));
  hsad_mem_info_t info;
  DQ_OK(hsad_mem_info(a + 10, &info));
  cr_assert_eq(info.kind, HSAD_MEM_STREAM);
  cr_assert_str_eq(hsad_mem_kind_name(info.kind), "stream-ordered");
  cr_assert_eq(info.base, (void *)a);
  cr_assert_eq(info.size, n * 4);
  fill(q, k, a, 0xa1a1a1a1u, n, &k1);
  DQ_OK(hsad_memcpy_async(e.dev, h1, a, n * 4, &k1, 1, NULL, dq_in(DQ_SEC), &c1));
  DQ_OK(hsad_queue_barrier(q, &c1, 1, dq_in(DQ_SEC), NULL)); /* the copy's use, before the free */
  DQ_OK(hsad_mem_free_async(q, a, dq_in(DQ_SEC)));
  MEM_ERR(hsad_mem_info(a, &info), HSAD_ERR_FREED, "hsad_mem_info: %p is in stream-ordered "
          "memory that was freed (4096 bytes at %p)", (void *)a, (void *)a);
  DQ_OK(hsad_mem_alloc_async(pool, q, n * 4 - 100, dq_in(DQ_SEC), (void **)&b));
  cr_assert_eq(b, a, "the freed block, reused");
  cr_assert_not(hsad_completion_done(&k1), "no host wait: the first kernel has not run");
  fill(q, k, b, 0xb2b2b2b2u, n - 25, &k2);
  DQ_OK(hsad_memcpy_async(e.dev, h2, b, (n - 25) * 4, &k2, 1, NULL, dq_in(DQ_SEC), &c2));
  DQ_OK(hsad_queue_barrier(q, &c2, 1, dq_in(DQ_SEC), NULL));
  DQ_OK(hsad_mem_free_async(q, b, dq_in(DQ_SEC)));
  check_stats(pool, &(hsad_mem_pool_stats_t){.reserved_bytes = 4096, .cached_bytes = 4096,
                                             .reserved_high = 4096, .used_high = 4096,
                                             .cached_blocks = 1, .allocs = 2,
                                             .reuse_same_queue = 1, .rocr_allocs = 1});
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(h1[i], 0u, "h1[%u] written early", i);
  sg.store(gs, 0);
  DQ_OK(hsad_queue_wait_idle(q, dq_in(20 * DQ_SEC)));
  DQ_OK(hsad_completion_wait(&c2, dq_in(20 * DQ_SEC)));
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(h1[i], 0xa1a1a1a1u, "h1[%u] = 0x%x", i, h1[i]);
  for (uint32_t i = 0; i < n - 25; i++)
    cr_assert_eq(h2[i], 0xb2b2b2b2u, "h2[%u] = 0x%x", i, h2[i]);
  for (uint32_t i = n - 25; i < n; i++) cr_assert_eq(h2[i], 0u);
  DQ_OK(hsad_mem_pool_destroy(pool, dq_in(20 * DQ_SEC)));
  sg.destroy(gs);
  free(h1);
  free(h2);
  dq_finish(&e, q, prog);
}

/* A block freed on q1 whose free point was reached is reused on q2 (rule 1), and a block freed
 * on a gated q1 is reused on q2 with a barrier (rule 3): q2's kernel writing it cannot run
 * before the gate opens, then it does, with exact values. */
Test(memory_stream, cross_queue_reuse_waits_for_the_free_point, .timeout = 60) {
  dq_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q1;
  hsad_program_t *prog = dq_start(&e, "fill", 5, "fill", &k, &q1);
  hsad_queue_t *q2 = dq_queue(&e, 64);
  hsad_mem_pool_t *pool = NULL;
  DQ_OK(hsad_mem_pool_create(e.dev, &pool));
  const uint32_t n = 5000; /* 20000 bytes: class 32768 */
  uint32_t *a = NULL, *b = NULL;
  hsad_completion_t kc;
  DQ_OK(hsad_mem_alloc_async(pool, q1, n * 4, dq_in(DQ_SEC), (void **)&a));
  DQ_OK(hsad_mem_free_async(q1, a, dq_in(DQ_SEC)));
  DQ_OK(hsad_queue_wait_idle(q1, dq_in(20 * DQ_SEC)));
  DQ_OK(hsad_mem_alloc_async(pool, q2, n * 4, dq_in(DQ_SEC), (void **)&b));
  cr_assert_eq(b, a);
  /* rule 3 */
  hsa_signal_t gs = gate(q1);
  fill(q1, k, b, 1u, n, &kc);
  DQ_OK(hsad_mem_free_async(q1, b, dq_in(DQ_SEC)));
  uint32_t *c = NULL;
  DQ_OK(hsad_mem_alloc_async(pool, q2, n * 4, dq_in(DQ_SEC), (void **)&c));
  cr_assert_eq(c, a);
  hsad_completion_t k2;
  fill(q2, k, c, 0xc3c3c3c3u, n, &k2);
  usleep(50000);
  cr_assert_not(hsad_completion_done(&k2), "q2's kernel waits for q1's free point");
  cr_assert_not(hsad_completion_done(&kc));
  check_stats(pool, &(hsad_mem_pool_stats_t){.reserved_bytes = 32768, .used_bytes = 32768,
                                             .reserved_high = 32768, .used_high = 32768,
                                             .used_blocks = 1, .allocs = 3, .reuse_reached = 1,
                                             .reuse_cross_queue = 1, .rocr_allocs = 1});
  sg.store(gs, 0);
  DQ_OK(hsad_completion_wait(&k2, dq_in(20 * DQ_SEC)));
  cr_assert(hsad_completion_done(&kc));
  uint32_t *h = malloc(n * 4);
  DQ_OK(hsad_memcpy(e.dev, h, c, n * 4, NULL, dq_in(20 * DQ_SEC)));
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(h[i], 0xc3c3c3c3u, "h[%u] = 0x%x", i, h[i]);
  MEM_ERR(hsad_mem_pool_destroy(pool, dq_in(DQ_SEC)), HSAD_ERR_IN_USE,
          "hsad_mem_pool_destroy: 1 blocks (32768 bytes) still allocated: free them with "
          "hsad_mem_free_async first (nothing changed)");
  DQ_OK(hsad_mem_free_async(q2, c, dq_in(DQ_SEC)));
  DQ_OK(hsad_mem_pool_destroy(pool, dq_in(20 * DQ_SEC)));
  sg.destroy(gs);
  free(h);
  hsad_queue_destroy(q2);
  dq_finish(&e, q1, prog);
}

/* Four 4 KiB blocks freed behind a gate stay cached under threshold 0 (pending); once reached,
 * a threshold of 8 KiB releases the two oldest, trim(0) the rest; a free beyond the threshold
 * with its free point reached is released at the next free. */
Test(memory_stream, release_threshold_and_trim, .timeout = 60) {
  dq_env_t e;
  dq_open(&e);
  hsad_queue_t *q = dq_queue(&e, 64);
  hsad_mem_pool_t *pool = NULL;
  DQ_OK(hsad_mem_pool_create(e.dev, &pool));
  hsa_signal_t gs = gate(q);
  void *p[4];
  for (int i = 0; i < 4; i++) DQ_OK(hsad_mem_alloc_async(pool, q, 4096, dq_in(DQ_SEC), &p[i]));
  for (int i = 0; i < 4; i++) DQ_OK(hsad_mem_free_async(q, p[i], dq_in(DQ_SEC)));
  hsad_mem_pool_stats_t want = {.reserved_bytes = 16384, .cached_bytes = 16384,
                                .reserved_high = 16384, .used_high = 16384, .cached_blocks = 4,
                                .allocs = 4, .rocr_allocs = 4};
  check_stats(pool, &want);
  sg.store(gs, 0);
  DQ_OK(hsad_queue_wait_idle(q, dq_in(20 * DQ_SEC)));
  DQ_OK(hsad_mem_pool_set_release_threshold(pool, 8192));
  want.reserved_bytes = want.cached_bytes = 8192;
  want.cached_blocks = 2;
  want.rocr_releases = 2;
  want.release_threshold = 8192;
  check_stats(pool, &want);
  /* the two newest frees stay: allocating twice reuses p[2] and p[3] (rule 1, oldest first) */
  void *x = NULL, *y = NULL;
  DQ_OK(hsad_mem_alloc_async(pool, q, 100, dq_in(DQ_SEC), &x));
  DQ_OK(hsad_mem_alloc_async(pool, q, 100, dq_in(DQ_SEC), &y));
  cr_assert_eq(x, p[2]);
  cr_assert_eq(y, p[3]);
  DQ_OK(hsad_mem_free_async(q, x, dq_in(DQ_SEC)));
  DQ_OK(hsad_mem_free_async(q, y, dq_in(DQ_SEC)));
  DQ_OK(hsad_queue_wait_idle(q, dq_in(20 * DQ_SEC)));
  uint64_t released = 1;
  DQ_OK(hsad_mem_pool_trim(pool, 4096, &released));
  cr_assert_eq(released, 4096);
  DQ_OK(hsad_mem_pool_trim(pool, 0, &released));
  cr_assert_eq(released, 4096);
  want = (hsad_mem_pool_stats_t){.reserved_high = 16384, .used_high = 16384, .allocs = 6,
                                 .reuse_reached = 2, .rocr_allocs = 4, .rocr_releases = 4,
                                 .release_threshold = 8192};
  check_stats(pool, &want);
  DQ_OK(hsad_mem_pool_destroy(pool, dq_in(20 * DQ_SEC)));
  sg.destroy(gs);
  hsad_queue_destroy(q);
  DQ_OK(hsad_runtime_close(e.rt));
}

/* Bad input: each refused with its code and whole message, nothing changed. */
Test(memory_stream, bad_input_rows, .timeout = 60) {
  dq_env_t e;
  dq_open(&e);
  hsad_queue_t *q = dq_queue(&e, 64);
  hsad_mem_pool_t *pool = NULL;
  void *p = NULL, *d = NULL;
  DQ_OK(hsad_mem_pool_create(e.dev, &pool));
  MEM_ERR(hsad_mem_pool_create(e.dev, NULL), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_pool_create: out_pool is NULL");
  MEM_ERR(hsad_mem_alloc_async(NULL, q, 1, 0, &p), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_alloc_async: pool is NULL");
  MEM_ERR(hsad_mem_alloc_async(pool, NULL, 1, 0, &p), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_alloc_async: queue is NULL");
  MEM_ERR(hsad_mem_alloc_async(pool, q, 0, 0, &p), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_alloc_async: bytes is 0");
  MEM_ERR(hsad_mem_alloc_async(pool, q, SIZE_MAX, 0, &p), HSAD_ERR_RANGE,
          "hsad_mem_alloc_async: %zu bytes overflow when rounded up to a power of two",
          (size_t)SIZE_MAX);
  DQ_OK(hsad_mem_alloc_async(pool, q, 10000, dq_in(DQ_SEC), &p));
  MEM_ERR(hsad_mem_free(p), HSAD_ERR_INVALID_ARGUMENT, "hsad_mem_free: %p is a block of a "
          "stream-ordered pool (10000 bytes): use hsad_mem_free_async", p);
  MEM_ERR(hsad_mem_free_async(q, (uint8_t *)p + 8, dq_in(DQ_SEC)), HSAD_ERR_NOT_ALLOCATED,
          "hsad_mem_free_async: %p is inside stream-ordered memory at %p (offset 8, 10000 "
          "bytes): pass the base address", (void *)((uint8_t *)p + 8), p);
  DQ_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 4096, NULL, 0, &d));
  MEM_ERR(hsad_mem_free_async(q, d, dq_in(DQ_SEC)), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_free_async: %p is device memory of 4096 bytes, not a stream-ordered block: "
          "use hsad_mem_free", d);
  int local;
  MEM_ERR(hsad_mem_free_async(q, &local, dq_in(DQ_SEC)), HSAD_ERR_NOT_ALLOCATED,
          "hsad_mem_free_async: %p was not allocated by hsad", (void *)&local);
  MEM_ERR(hsad_mem_free_async(NULL, p, dq_in(DQ_SEC)), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_free_async: queue is NULL");
  DQ_OK(hsad_mem_free_async(q, p, dq_in(DQ_SEC)));
  MEM_ERR(hsad_mem_free_async(q, p, dq_in(DQ_SEC)), HSAD_ERR_FREED,
          "hsad_mem_free_async: %p was already freed (stream-ordered memory of 16384 bytes at "
          "%p)", p, p);
  MEM_ERR(hsad_mem_pool_stats(pool, NULL), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_pool_stats: out_stats is NULL");
  DQ_OK(hsad_mem_free(d));
  DQ_OK(hsad_mem_pool_destroy(pool, dq_in(20 * DQ_SEC)));
  hsad_queue_destroy(q);
  DQ_OK(hsad_runtime_close(e.rt));
}
