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
  TH_OK(hsad_queue_barrier_signals(q, NULL, 0, &s, 1, (hsa_signal_t){0}, th_in(TH_SEC), &c));
  cr_assert_not(hsad_completion_done(&c));
  return s;
}

static void fill(hsad_queue_t *q, const hsad_device_kernel_t *k, uint32_t *p, uint32_t value,
                 uint32_t n, hsad_completion_t *out) {
  hsad_karg_t args[3] = {HSAD_KARG_PTR(p), HSAD_KARG_VAL(value), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {n}, .block = {64}, .args = args, .arg_count = 3};
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), out, NULL));
}

static void check_stats(hsad_mem_pool_t *pool, const hsad_mem_pool_stats_t *want) {
  hsad_mem_pool_stats_t st;
  TH_OK(hsad_mem_pool_stats(pool, &st));
#define F(f) cr_assert_eq(st.f, want->f, #f " %llu, want %llu", (unsigned long long)st.f, \
                          (unsigned long long)want->f)
  F(reserved_bytes); F(used_bytes); F(cached_bytes); F(reserved_high); F(used_high);
  F(used_blocks); F(cached_blocks); F(allocs); F(reuse_reached); F(reuse_same_queue);
  F(reuse_cross_queue); F(rocr_allocs); F(rocr_releases); F(release_threshold); F(packets);
#undef F
}

/* alloc -> fill 0xa1 -> copy out -> free -> alloc -> fill 0xb2 -> copy out -> free, all on one
 * gated queue: the second allocation gets the first block back (rule 2) while nothing has run,
 * and after the gate opens both copies hold their kernel's values exactly. */
Test(memory_stream, same_queue_reuse_without_host_wait, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *prog = th_start(&e, "fill", 5, "fill", &k, &q);
  hsad_mem_pool_t *pool = NULL;
  TH_OK(hsad_mem_pool_create(e.dev, &pool));
  const uint32_t n = 1000; /* 4000 bytes: class 4096 */
  uint32_t *h1 = malloc(n * 4), *h2 = malloc(n * 4);
  memset(h1, 0, n * 4);
  memset(h2, 0, n * 4);
  hsa_signal_t gs = gate(q);
  uint32_t *a = NULL, *b = NULL;
  hsad_completion_t k1, c1, k2, c2;
  TH_OK(hsad_mem_alloc_async(pool, q, n * 4, th_in(TH_SEC), (void **)&a));
  hsad_mem_info_t info;
  TH_OK(hsad_mem_info(a + 10, &info));
  cr_assert_eq(info.kind, HSAD_MEM_STREAM);
  cr_assert_str_eq(hsad_mem_kind_name(info.kind), "stream-ordered");
  cr_assert_eq(info.base, (void *)a);
  cr_assert_eq(info.size, n * 4);
  fill(q, k, a, 0xa1a1a1a1u, n, &k1);
  TH_OK(hsad_memcpy_async(e.dev, h1, a, n * 4, &k1, 1, NULL, th_in(TH_SEC), &c1));
  TH_OK(hsad_queue_barrier(q, &c1, 1, th_in(TH_SEC), NULL)); /* the copy's use, before the free */
  TH_OK(hsad_mem_free_async(q, a, th_in(TH_SEC)));
  MEM_ERR(hsad_mem_info(a, &info), HSAD_ERR_FREED, "hsad_mem_info: %p is in stream-ordered "
          "memory that was freed (4096 bytes at %p)", (void *)a, (void *)a);
  TH_OK(hsad_mem_alloc_async(pool, q, n * 4 - 100, th_in(TH_SEC), (void **)&b));
  cr_assert_eq(b, a, "the freed block, reused");
  cr_assert_not(hsad_completion_done(&k1), "no host wait: the first kernel has not run");
  fill(q, k, b, 0xb2b2b2b2u, n - 25, &k2);
  TH_OK(hsad_memcpy_async(e.dev, h2, b, (n - 25) * 4, &k2, 1, NULL, th_in(TH_SEC), &c2));
  TH_OK(hsad_queue_barrier(q, &c2, 1, th_in(TH_SEC), NULL));
  TH_OK(hsad_mem_free_async(q, b, th_in(TH_SEC)));
  check_stats(pool, &(hsad_mem_pool_stats_t){.reserved_bytes = 4096, .cached_bytes = 4096,
                                             .reserved_high = 4096, .used_high = 4096,
                                             .cached_blocks = 1, .allocs = 2,
                                             .reuse_same_queue = 1, .rocr_allocs = 1});
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(h1[i], 0u, "h1[%u] written early", i);
  sg.store(gs, 0);
  TH_OK(hsad_queue_wait_idle(q, th_in(20 * TH_SEC)));
  TH_OK(hsad_completion_wait(&c2, th_in(20 * TH_SEC)));
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(h1[i], 0xa1a1a1a1u, "h1[%u] = 0x%x", i, h1[i]);
  for (uint32_t i = 0; i < n - 25; i++)
    cr_assert_eq(h2[i], 0xb2b2b2b2u, "h2[%u] = 0x%x", i, h2[i]);
  for (uint32_t i = n - 25; i < n; i++) cr_assert_eq(h2[i], 0u);
  TH_OK(hsad_mem_pool_destroy(pool, th_in(20 * TH_SEC)));
  sg.destroy(gs);
  free(h1);
  free(h2);
  th_finish(&e, q, prog);
}

/* A block freed on q1 whose free point was reached is reused on q2 (rule 1), and a block freed
 * on a gated q1 is reused on q2 with a barrier (rule 3): q2's kernel writing it cannot run
 * before the gate opens, then it does, with exact values. */
Test(memory_stream, cross_queue_reuse_waits_for_the_free_point, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q1;
  hsad_program_t *prog = th_start(&e, "fill", 5, "fill", &k, &q1);
  hsad_queue_t *q2 = th_queue(&e, 64);
  hsad_mem_pool_t *pool = NULL;
  TH_OK(hsad_mem_pool_create(e.dev, &pool));
  const uint32_t n = 5000; /* 20000 bytes: class 32768 */
  uint32_t *a = NULL, *b = NULL;
  hsad_completion_t kc;
  TH_OK(hsad_mem_alloc_async(pool, q1, n * 4, th_in(TH_SEC), (void **)&a));
  TH_OK(hsad_mem_free_async(q1, a, th_in(TH_SEC)));
  TH_OK(hsad_queue_wait_idle(q1, th_in(20 * TH_SEC)));
  TH_OK(hsad_mem_alloc_async(pool, q2, n * 4, th_in(TH_SEC), (void **)&b));
  cr_assert_eq(b, a);
  /* rule 3 */
  hsa_signal_t gs = gate(q1);
  fill(q1, k, b, 1u, n, &kc);
  TH_OK(hsad_mem_free_async(q1, b, th_in(TH_SEC)));
  uint32_t *c = NULL;
  TH_OK(hsad_mem_alloc_async(pool, q2, n * 4, th_in(TH_SEC), (void **)&c));
  cr_assert_eq(c, a);
  hsad_completion_t k2;
  fill(q2, k, c, 0xc3c3c3c3u, n, &k2);
  usleep(50000);
  cr_assert_not(hsad_completion_done(&k2), "q2's kernel waits for q1's free point");
  cr_assert_not(hsad_completion_done(&kc));
  check_stats(pool, &(hsad_mem_pool_stats_t){.reserved_bytes = 32768, .used_bytes = 32768,
                                             .reserved_high = 32768, .used_high = 32768,
                                             .used_blocks = 1, .allocs = 3, .reuse_reached = 1,
                                             .reuse_cross_queue = 1, .rocr_allocs = 1,
                                             .packets = 1});
  sg.store(gs, 0);
  TH_OK(hsad_completion_wait(&k2, th_in(20 * TH_SEC)));
  cr_assert(hsad_completion_done(&kc));
  uint32_t *h = malloc(n * 4);
  TH_OK(hsad_memcpy(e.dev, h, c, n * 4, NULL, th_in(20 * TH_SEC)));
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(h[i], 0xc3c3c3c3u, "h[%u] = 0x%x", i, h[i]);
  MEM_ERR(hsad_mem_pool_destroy(pool, th_in(TH_SEC)), HSAD_ERR_IN_USE,
          "hsad_mem_pool_destroy: 1 blocks (32768 bytes) still allocated: free them with "
          "hsad_mem_free_async first (nothing changed)");
  TH_OK(hsad_mem_free_async(q2, c, th_in(TH_SEC)));
  TH_OK(hsad_mem_pool_destroy(pool, th_in(20 * TH_SEC)));
  sg.destroy(gs);
  free(h);
  hsad_queue_destroy(q2);
  th_finish(&e, q1, prog);
}

/* Four 4 KiB blocks freed behind a gate stay cached under threshold 0 (pending); once reached,
 * a threshold of 8 KiB releases the two oldest, trim(0) the rest; a free beyond the threshold
 * with its free point reached is released at the next free. */
Test(memory_stream, release_threshold_and_trim, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  hsad_queue_t *q = th_queue(&e, 64);
  hsad_mem_pool_t *pool = NULL;
  TH_OK(hsad_mem_pool_create(e.dev, &pool));
  hsa_signal_t gs = gate(q);
  void *p[4];
  for (int i = 0; i < 4; i++) TH_OK(hsad_mem_alloc_async(pool, q, 4096, th_in(TH_SEC), &p[i]));
  for (int i = 0; i < 4; i++) TH_OK(hsad_mem_free_async(q, p[i], th_in(TH_SEC)));
  hsad_mem_pool_stats_t want = {.reserved_bytes = 16384, .cached_bytes = 16384,
                                .reserved_high = 16384, .used_high = 16384, .cached_blocks = 4,
                                .allocs = 4, .rocr_allocs = 4};
  check_stats(pool, &want);
  sg.store(gs, 0);
  TH_OK(hsad_queue_wait_idle(q, th_in(20 * TH_SEC)));
  TH_OK(hsad_mem_pool_set_release_threshold(pool, 8192));
  want.reserved_bytes = want.cached_bytes = 8192;
  want.cached_blocks = 2;
  want.rocr_releases = 2;
  want.release_threshold = 8192;
  check_stats(pool, &want);
  /* the two newest frees stay: allocating twice reuses p[2] and p[3] (rule 1, oldest first) */
  void *x = NULL, *y = NULL;
  TH_OK(hsad_mem_alloc_async(pool, q, 100, th_in(TH_SEC), &x));
  TH_OK(hsad_mem_alloc_async(pool, q, 100, th_in(TH_SEC), &y));
  cr_assert_eq(x, p[2]);
  cr_assert_eq(y, p[3]);
  TH_OK(hsad_mem_free_async(q, x, th_in(TH_SEC)));
  TH_OK(hsad_mem_free_async(q, y, th_in(TH_SEC)));
  TH_OK(hsad_queue_wait_idle(q, th_in(20 * TH_SEC)));
  uint64_t released = 1;
  TH_OK(hsad_mem_pool_trim(pool, 4096, &released));
  cr_assert_eq(released, 4096);
  TH_OK(hsad_mem_pool_trim(pool, 0, &released));
  cr_assert_eq(released, 4096);
  want = (hsad_mem_pool_stats_t){.reserved_high = 16384, .used_high = 16384, .allocs = 6,
                                 .reuse_reached = 2, .rocr_allocs = 4, .rocr_releases = 4,
                                 .release_threshold = 8192};
  check_stats(pool, &want);
  TH_OK(hsad_mem_pool_destroy(pool, th_in(20 * TH_SEC)));
  sg.destroy(gs);
  hsad_queue_destroy(q);
  TH_OK(hsad_runtime_close(e.rt));
}

static uint64_t widx(hsad_queue_t *q) {
  return __atomic_load_n(&((const amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id,
                         __ATOMIC_ACQUIRE);
}

static void vadd(hsad_queue_t *q, const hsad_device_kernel_t *k, const void *a, const void *b,
                 void *c, uint32_t n) {
  hsad_karg_t args[4] = {HSAD_KARG_PTR(a), HSAD_KARG_PTR(b), HSAD_KARG_PTR(c), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {n}, .block = {64}, .args = args, .arg_count = 4};
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), NULL, NULL));
}

/* A free with no packet of its own after a dispatch (issue 21): on gated q1, fill(block = 1.0f)
 * and vector_add(block + block -> out) run fire-and-forget, so the free names q1's NEXT epoch
 * (pending) and writes no packet. An allocation on q2 gets the block, issues that epoch (one
 * barrier-AND on q1) and waits for it (one barrier on q2): q2's fill of the block does not
 * complete while q1 is gated (exact TIMEOUT), and once the gate opens q1's sums are exactly
 * 2.0f (q2 did not overwrite the block under them) and the block holds q2's value. */
Test(memory_stream, free_without_packet_after_dispatch_orders_cross_queue, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *kf, *kv;
  hsad_queue_t *q1;
  hsad_program_t *prog = th_start(&e, "fill", 5, "fill", &kf, &q1);
  hsad_program_t *pv = th_load(&e, "vector_add", 5, "vector_add", &kv);
  hsad_queue_t *q2 = th_queue(&e, 64);
  hsad_mem_pool_t *pool = NULL;
  TH_OK(hsad_mem_pool_create(e.dev, &pool));
  const uint32_t n = 3000; /* 12000 bytes: class 16384 */
  float *out = th_alloc(&e, n * 4);
  memset(out, 0, n * 4);
  hsa_signal_t gs = gate(q1);
  uint32_t *blk = NULL, *c = NULL;
  TH_OK(hsad_mem_alloc_async(pool, q1, n * 4, th_in(TH_SEC), (void **)&blk));
  fill(q1, kf, blk, 0x3f800000u, n, NULL); /* 1.0f */
  vadd(q1, kv, blk, blk, out, n);
  uint64_t w1 = widx(q1), w2 = widx(q2);
  cr_assert_eq(w1, 3, "gate, fill, vector_add");
  TH_OK(hsad_mem_free_async(q1, blk, th_in(TH_SEC)));
  cr_assert_eq(widx(q1), w1, "the free wrote no packet");
  TH_OK(hsad_mem_alloc_async(pool, q2, n * 4, th_in(TH_SEC), (void **)&c));
  cr_assert_eq(c, blk);
  cr_assert_eq(widx(q1), w1 + 1, "q1's pending epoch issued: one barrier-AND");
  cr_assert_eq(widx(q2), w2 + 1, "q2 waits for it: one barrier");
  hsad_completion_t k2;
  fill(q2, kf, c, 0xc3c3c3c3u, n, &k2);
  TH_ERR_IS(hsad_completion_wait(&k2, th_in(300000000)), HSAD_ERR_TIMEOUT,
            "completion (epoch 1, packet %llu) on queue %llu (device 0) not reached at the "
            "deadline (0 epochs completed)", (unsigned long long)k2.packet_id,
            (unsigned long long)hsad_queue_hsa(q2)->id);
  check_stats(pool, &(hsad_mem_pool_stats_t){.reserved_bytes = 16384, .used_bytes = 16384,
                                             .reserved_high = 16384, .used_high = 16384,
                                             .used_blocks = 1, .allocs = 2,
                                             .reuse_cross_queue = 1, .rocr_allocs = 1,
                                             .packets = 2});
  sg.store(gs, 0);
  TH_OK(hsad_completion_wait(&k2, th_in(20 * TH_SEC)));
  TH_OK(hsad_queue_wait_idle(q1, th_in(20 * TH_SEC)));
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(out[i], 2.0f, "out[%u] = %a", i, out[i]);
  uint32_t *h = malloc(n * 4);
  TH_OK(hsad_memcpy(e.dev, h, c, n * 4, NULL, th_in(20 * TH_SEC)));
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(h[i], 0xc3c3c3c3u, "h[%u] = 0x%x", i, h[i]);
  TH_OK(hsad_mem_free_async(q2, c, th_in(TH_SEC)));
  TH_OK(hsad_mem_pool_destroy(pool, th_in(20 * TH_SEC)));
  sg.destroy(gs);
  free(h);
  TH_OK(hsad_buffer_free(out));
  hsad_queue_destroy(q2);
  hsad_program_destroy(pv);
  th_finish(&e, q1, prog);
}

/* Same-queue reuse after a dispatch: the free names the dispatch's epoch with no packet, and
 * the reuse submits one barrier-AND (no epoch) so that a later HSAD_LAUNCH_NO_BARRIER dispatch
 * cannot overlap the dispatch before the free; a second free/alloc pair after that barrier
 * submits nothing, nor does a pair whose free follows a barrier. Exact packet counts, data of
 * every kernel exact after the gate opens. */
Test(memory_stream, same_queue_reuse_after_dispatch_orders_no_barrier_dispatches,
     .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *prog = th_start(&e, "fill", 5, "fill", &k, &q);
  hsad_mem_pool_t *pool = NULL;
  TH_OK(hsad_mem_pool_create(e.dev, &pool));
  const uint32_t n = 1024;
  hsa_signal_t gs = gate(q);
  uint32_t *a = NULL, *b = NULL, *c = NULL, *d = NULL;
  hsad_completion_t k1, k2;
  TH_OK(hsad_mem_alloc_async(pool, q, n * 4, th_in(TH_SEC), (void **)&a));
  fill(q, k, a, 0x11111111u, n, &k1);
  uint64_t w = widx(q);
  TH_OK(hsad_mem_free_async(q, a, th_in(TH_SEC)));
  cr_assert_eq(widx(q), w, "the free names the fill's epoch: no packet");
  TH_OK(hsad_mem_alloc_async(pool, q, n * 4, th_in(TH_SEC), (void **)&b));
  cr_assert_eq(b, a);
  cr_assert_eq(widx(q), w + 1, "one barrier-AND before the reuse");
  const hsa_barrier_and_packet_t *bp =
      (const hsa_barrier_and_packet_t *)hsad_queue_hsa(q)->base_address + (w & 63);
  cr_assert_eq(bp->header & 0xff, HSA_PACKET_TYPE_BARRIER_AND);
  cr_assert(bp->header & (1u << HSA_PACKET_HEADER_BARRIER), "BARRIER bit");
  cr_assert_eq(bp->completion_signal.handle, 0, "no epoch");
  uint32_t v2 = 0x22222222u;
  hsad_karg_t args[3] = {HSAD_KARG_PTR(b), HSAD_KARG_VAL(v2), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {n}, .block = {64}, .args = args, .arg_count = 3,
                     .flags = HSAD_LAUNCH_NO_BARRIER};
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), NULL, NULL));
  TH_OK(hsad_mem_free_async(q, b, th_in(TH_SEC)));
  w = widx(q);
  TH_OK(hsad_mem_alloc_async(pool, q, n * 4, th_in(TH_SEC), (void **)&c));
  cr_assert_eq(c, a);
  cr_assert_eq(widx(q), w + 1, "the free followed a dispatch again: one barrier-AND");
  fill(q, k, c, 0x33333333u, n, &k2);
  TH_OK(hsad_queue_barrier(q, NULL, 0, th_in(TH_SEC), NULL));
  w = widx(q);
  TH_OK(hsad_mem_free_async(q, c, th_in(TH_SEC)));
  TH_OK(hsad_mem_alloc_async(pool, q, n * 4, th_in(TH_SEC), (void **)&d));
  cr_assert_eq(d, a);
  cr_assert_eq(widx(q), w, "the free followed a barrier: neither call wrote a packet");
  check_stats(pool, &(hsad_mem_pool_stats_t){.reserved_bytes = 4096, .used_bytes = 4096,
                                             .reserved_high = 4096, .used_high = 4096,
                                             .used_blocks = 1, .allocs = 4,
                                             .reuse_same_queue = 3, .rocr_allocs = 1,
                                             .packets = 2});
  cr_assert_not(hsad_completion_done(&k1), "no host wait: nothing ran");
  sg.store(gs, 0);
  TH_OK(hsad_completion_wait(&k2, th_in(20 * TH_SEC)));
  uint32_t *h = malloc(n * 4);
  TH_OK(hsad_memcpy(e.dev, h, d, n * 4, NULL, th_in(20 * TH_SEC)));
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(h[i], 0x33333333u, "h[%u] = 0x%x", i, h[i]);
  TH_OK(hsad_mem_free_async(q, d, th_in(TH_SEC)));
  TH_OK(hsad_mem_pool_destroy(pool, th_in(20 * TH_SEC)));
  sg.destroy(gs);
  free(h);
  th_finish(&e, q, prog);
}

/* Bad input: each refused with its code and whole message, nothing changed. */
Test(memory_stream, bad_input_rows, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  hsad_queue_t *q = th_queue(&e, 64);
  hsad_mem_pool_t *pool = NULL;
  void *p = NULL, *d = NULL;
  TH_OK(hsad_mem_pool_create(e.dev, &pool));
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
  TH_OK(hsad_mem_alloc_async(pool, q, 10000, th_in(TH_SEC), &p));
  MEM_ERR(hsad_mem_free(p), HSAD_ERR_INVALID_ARGUMENT, "hsad_mem_free: %p is a block of a "
          "stream-ordered pool (10000 bytes): use hsad_mem_free_async", p);
  MEM_ERR(hsad_mem_free_async(q, (uint8_t *)p + 8, th_in(TH_SEC)), HSAD_ERR_NOT_ALLOCATED,
          "hsad_mem_free_async: %p is inside stream-ordered memory at %p (offset 8, 10000 "
          "bytes): pass the base address", (void *)((uint8_t *)p + 8), p);
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 4096, NULL, 0, &d));
  MEM_ERR(hsad_mem_free_async(q, d, th_in(TH_SEC)), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_free_async: %p is device memory of 4096 bytes, not a stream-ordered block: "
          "use hsad_mem_free", d);
  int local;
  MEM_ERR(hsad_mem_free_async(q, &local, th_in(TH_SEC)), HSAD_ERR_NOT_ALLOCATED,
          "hsad_mem_free_async: %p was not allocated by hsad", (void *)&local);
  MEM_ERR(hsad_mem_free_async(NULL, p, th_in(TH_SEC)), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_free_async: queue is NULL");
  TH_OK(hsad_mem_free_async(q, p, th_in(TH_SEC)));
  MEM_ERR(hsad_mem_free_async(q, p, th_in(TH_SEC)), HSAD_ERR_FREED,
          "hsad_mem_free_async: %p was already freed (stream-ordered memory of 16384 bytes at "
          "%p)", p, p);
  MEM_ERR(hsad_mem_pool_stats(pool, NULL), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_pool_stats: out_stats is NULL");
  TH_OK(hsad_mem_free(d));
  TH_OK(hsad_mem_pool_destroy(pool, th_in(20 * TH_SEC)));
  hsad_queue_destroy(q);
  TH_OK(hsad_runtime_close(e.rt));
}
