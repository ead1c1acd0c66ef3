/* test_memory_async.c - copies and fills ordered by completions: copies after dispatches,
 * dispatches after copies, zero-byte copies in order with their dependencies, fills, several
 * dependencies at once (some reached, some running), hsad_queue_barrier_signals with only a
 * decrement, the refusal rows of the completion form. A "gate" is a completion on a queue held by a barrier
 * waiting for an HSA signal the test opens: nothing after it can run before the test says so,
 * so every "not yet" below is exact, not timed. */
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

/* A completion on q reached only once the returned signal is set to 0. */
static hsa_signal_t gate(hsad_queue_t *q, hsad_completion_t *out) {
  *(void **)&sg.create = dlsym(RTLD_DEFAULT, "hsa_signal_create");
  *(void **)&sg.destroy = dlsym(RTLD_DEFAULT, "hsa_signal_destroy");
  *(void **)&sg.store = dlsym(RTLD_DEFAULT, "hsa_signal_store_screlease");
  cr_assert(sg.create && sg.destroy && sg.store);
  hsa_signal_t s;
  cr_assert_eq(sg.create(1, 0, NULL, &s), HSA_STATUS_SUCCESS);
  TH_OK(hsad_queue_barrier_signals(q, NULL, 0, &s, 1, (hsa_signal_t){0}, th_in(TH_SEC), out));
  cr_assert_not(hsad_completion_done(out));
  return s;
}

/* fill kernel -> device buffer, then a D2H copy (pageable, pipelined) that depends on it, and a
 * zero-byte copy behind the same gate: nothing before the gate opens, exact bytes after. */
Test(memory_async, copy_after_dispatch, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *prog = th_start(&e, "fill", 5, "fill", &k, &q);
  const uint32_t n = 300000; /* 1.2 MB: pipelined by default */
  uint32_t *dev = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, n * 4, NULL, 0, (void **)&dev));
  memset(dev, 0, n * 4);
  uint32_t *host = malloc(n * 4);
  for (uint32_t i = 0; i < n; i++) host[i] = 7;
  hsad_completion_t g, kc, cc, zc;
  hsa_signal_t gs = gate(q, &g);
  uint32_t value = 0xfeed0000u;
  hsad_karg_t args[3] = {HSAD_KARG_PTR(dev), HSAD_KARG_VAL(value), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {n}, .block = {256}, .args = args, .arg_count = 3};
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), &kc, NULL)); /* after the gate */
  hsad_copy_options_t o = {.staging_max = 65536, .pin_threshold = 64 << 20, .chunk_size = 262144,
                           .chunk_buffers = 2};
  TH_OK(hsad_memcpy_async(e.dev, host, dev, n * 4, &kc, 1, &o, th_in(TH_SEC), &cc));
  TH_OK(hsad_memcpy_async(e.dev, NULL, NULL, 0, &g, 1, NULL, th_in(TH_SEC), &zc));
  cr_assert_not(hsad_completion_done(&kc));
  cr_assert_not(hsad_completion_done(&cc));
  cr_assert_not(hsad_completion_done(&zc), "a zero-byte copy waits for its dependency");
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(host[i], 7u, "host[%u] written early", i);
  sg.store(gs, 0);
  TH_OK(hsad_completion_wait(&cc, th_in(20 * TH_SEC)));
  TH_OK(hsad_completion_wait(&zc, th_in(20 * TH_SEC)));
  cr_assert(hsad_completion_done(&kc));
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(host[i], value, "host[%u] = 0x%x", i, host[i]);
  hsad_host_pool_t *pool;
  TH_OK(hsad_host_pool_get(e.dev, &pool));
  hsad_host_pool_stats_t st;
  TH_OK(hsad_host_pool_stats(pool, &st));
  cr_assert_eq(st.bytes_in_use, 0, "staging back before the completion");
  sg.destroy(gs);
  TH_OK(hsad_mem_free(dev));
  free(host);
  th_finish(&e, q, prog);
}

/* an H2D copy (pageable, staged) held by a gate, a dispatch ordered after the copy by a
 * barrier on the dispatch queue: the kernel sees the copied bytes */
Test(memory_async, dispatch_after_copy, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *prog = th_start(&e, "vector_add", 5, "vector_add", &k, &q);
  hsad_queue_t *gq = th_queue(&e, 64);
  const uint32_t n = 5000;
  float *a = NULL, *b = NULL, *c = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, n * 4, NULL, 0, (void **)&a));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, n * 4, NULL, 0, (void **)&b));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, n * 4, NULL, 0, (void **)&c));
  float *src = malloc(n * 4);
  for (uint32_t i = 0; i < n; i++) {
    src[i] = (float)i;
    a[i] = -1.0f;
    b[i] = 0.5f;
    c[i] = 0.0f;
  }
  hsad_completion_t g, cc, dc;
  hsa_signal_t gs = gate(gq, &g); /* on another queue: a cross-queue dependency */
  TH_OK(hsad_memcpy_async(e.dev, a, src, n * 4, &g, 1, NULL, th_in(TH_SEC), &cc));
  TH_OK(hsad_queue_barrier(q, &cc, 1, th_in(TH_SEC), NULL));
  hsad_karg_t args[4] = {HSAD_KARG_PTR(a), HSAD_KARG_PTR(b), HSAD_KARG_PTR(c), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {n}, .block = {64}, .args = args, .arg_count = 4};
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), &dc, NULL));
  cr_assert_not(hsad_completion_done(&cc));
  cr_assert_not(hsad_completion_done(&dc));
  for (uint32_t i = 0; i < n; i++) {
    cr_assert_eq(a[i], -1.0f);
    cr_assert_eq(c[i], 0.0f);
  }
  sg.store(gs, 0);
  TH_OK(hsad_completion_wait(&dc, th_in(20 * TH_SEC)));
  cr_assert(hsad_completion_done(&cc));
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(c[i], (float)i + 0.5f, "c[%u] = %f", i, c[i]);
  /* a fill after the dispatch, then a copy after the fill: a chain of completions */
  hsad_completion_t fc, c2;
  TH_OK(hsad_memset_async(e.dev, (uint8_t *)c + 2, 0xab, 1, 7, &dc, 1, th_in(TH_SEC), &fc));
  uint8_t out[16];
  memset(out, 0, sizeof out);
  TH_OK(hsad_memcpy_async(e.dev, out, c, 16, &fc, 1, NULL, th_in(TH_SEC), &c2));
  TH_OK(hsad_completion_wait(&c2, th_in(20 * TH_SEC)));
  float f0 = 0.5f;
  cr_assert_eq(memcmp(out, &f0, 2), 0);
  for (int i = 2; i < 9; i++) cr_assert_eq(out[i], 0xab);
  float f2 = 2.5f;
  cr_assert_eq(memcmp(out + 9, (uint8_t *)&f2 + 1, 3), 0);
  sg.destroy(gs);
  TH_OK(hsad_mem_free(a));
  TH_OK(hsad_mem_free(b));
  TH_OK(hsad_mem_free(c));
  free(src);
  hsad_queue_destroy(gq);
  th_finish(&e, q, prog);
}

/* refusals of the completion form: nothing submitted (the completion untouched) */
Test(memory_async, bad_input_rows) {
  th_env_t e;
  th_open(&e);
  uint8_t *dev = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 4096, NULL, 0, (void **)&dev));
  hsad_completion_t c = {.epoch = 12345};
  uint8_t host[64];
  MEM_ERR(hsad_memcpy_async(e.dev, dev, host, 16, NULL, 0, NULL, th_in(TH_SEC), NULL),
          HSAD_ERR_INVALID_ARGUMENT, "hsad_memcpy_async: out_completion is NULL");
  MEM_ERR(hsad_memcpy_async(e.dev, dev, host, 16, NULL, 3, NULL, th_in(TH_SEC), &c),
          HSAD_ERR_INVALID_ARGUMENT, "hsad_memcpy_async: deps is NULL with dep_count 3");
  MEM_ERR(hsad_memcpy_async(e.dev, dev + 4090, host, 16, NULL, 0, NULL, th_in(TH_SEC), &c),
          HSAD_ERR_RANGE, "hsad_memcpy_async: the destination %p + 16 bytes runs 10 bytes past "
          "the end of device memory at %p (4096 bytes)", (void *)(dev + 4090), (void *)dev);
  MEM_ERR(hsad_memcpy_async(e.dev, dev + 8, dev, 16, NULL, 0, NULL, th_in(TH_SEC), &c),
          HSAD_ERR_OVERLAP, "hsad_memcpy_async: destination %p and source %p overlap over 8 "
          "bytes (16 bytes each)", (void *)(dev + 8), (void *)dev);
  MEM_ERR(hsad_memset_async(e.dev, host, 0, 2, 8, NULL, 0, th_in(TH_SEC), &c),
          HSAD_ERR_INVALID_ARGUMENT, "hsad_memset_async: destination %p is pageable host "
          "memory: fill it with memset, or register it (hsad_mem_register)", (void *)host);
  cr_assert_eq(c.epoch, 12345u);
  cr_assert_null(c.queue);
  TH_OK(hsad_mem_free(dev));
  MEM_ERR(hsad_memcpy_async(e.dev, dev, host, 16, NULL, 0, NULL, th_in(TH_SEC), &c),
          HSAD_ERR_FREED, "hsad_memcpy_async: the destination %p lies in device memory that was "
          "freed (4096 bytes at %p)", (void *)dev, (void *)dev);
  /* a zero-byte copy without dependencies is reached at once */
  TH_OK(hsad_memcpy_async(e.dev, NULL, NULL, 0, NULL, 0, NULL, th_in(TH_SEC), &c));
  TH_OK(hsad_completion_wait(&c, th_in(5 * TH_SEC)));
  TH_OK(hsad_runtime_close(e.rt));
}

/* Waits (deadline 20 s) until the signal's value is `want`; returns the value last seen. */
static hsa_signal_value_t sig_wait_value(hsa_signal_t s, hsa_signal_value_t want) {
  hsa_signal_value_t (*load)(hsa_signal_t) = NULL;
  *(void **)&load = dlsym(RTLD_DEFAULT, "hsa_signal_load_scacquire");
  cr_assert_not_null(load);
  uint64_t end = th_in(20 * TH_SEC);
  hsa_signal_value_t v;
  while ((v = load(s)) != want && hsad_now_ns() < end) usleep(1000);
  return v;
}

/* A copy and a fill after several dependencies at once: a completion already reached, kernels
 * still running on two queues (kfd-emu delays every fill dispatch by 300 ms), and an empty
 * completion. Neither may start before every kernel it depends on completed: the copy reads
 * what the kernel writes, the fill writes what a kernel writes too, so starting early would
 * leave other bytes (exact checks, not timed; while a kernel is still running the copy's
 * destination must be untouched). */
Test(memory_async, several_dependencies_some_pending, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "300000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "fill", 1);
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *prog = th_start(&e, "fill", 5, "fill", &k, &q);
  hsad_queue_t *q2 = th_queue(&e, 64);
  const uint32_t n = 4096;
  uint32_t *a = NULL, *b = NULL, *c = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, n * 4, NULL, 0, (void **)&a));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, n * 4, NULL, 0, (void **)&b));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, n * 4, NULL, 0, (void **)&c));
  memset(a, 0, n * 4);
  memset(b, 0, n * 4);
  memset(c, 0, n * 4);
  uint32_t value;
  hsad_karg_t args[3] = {HSAD_KARG_PTR(c), HSAD_KARG_VAL(value), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {n}, .block = {256}, .args = args, .arg_count = 3};
  hsad_completion_t reached, ka, kb, none = {0};
  value = 3; /* c = 3 on q2, waited for: a reached dependency */
  TH_OK(hsad_kernel_dispatch(q2, k, &l, th_in(TH_SEC), &reached, NULL));
  TH_OK(hsad_completion_wait(&reached, th_in(20 * TH_SEC)));
  value = 0xa5a5a5a5u; /* a on q, then b on q2: both pending */
  args[0] = (hsad_karg_t)HSAD_KARG_PTR(a);
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), &ka, NULL));
  value = 2;
  args[0] = (hsad_karg_t)HSAD_KARG_PTR(b);
  TH_OK(hsad_kernel_dispatch(q2, k, &l, th_in(TH_SEC), &kb, NULL));
  uint32_t *out = malloc(n * 4);
  cr_assert_not_null(out);
  memset(out, 0xff, n * 4);
  hsad_completion_t deps[4] = {reached, ka, kb, none}, cc, fc;
  TH_OK(hsad_memcpy_async(e.dev, out, a, n * 4, deps, 4, NULL, th_in(TH_SEC), &cc));
  /* the fill of b depends on b's kernel (and the others): it must land after it */
  TH_OK(hsad_memset_async(e.dev, b, 0x77, 1, n * 4, deps, 4, th_in(TH_SEC), &fc));
  if (!hsad_completion_done(&ka)) {
    cr_assert_not(hsad_completion_done(&cc), "the copy completed before its dependency");
    for (uint32_t i = 0; i < n; i++) cr_assert_eq(out[i], 0xffffffffu, "out[%u] written", i);
  }
  TH_OK(hsad_completion_wait(&cc, th_in(20 * TH_SEC)));
  cr_assert(hsad_completion_done(&ka) && hsad_completion_done(&kb));
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(out[i], 0xa5a5a5a5u, "out[%u] = 0x%x", i, out[i]);
  TH_OK(hsad_completion_wait(&fc, th_in(20 * TH_SEC)));
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(b[i], 0x77777777u, "b[%u] = 0x%x", i, b[i]);
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(c[i], 3u);
  TH_OK(hsad_mem_result(&cc));
  TH_OK(hsad_mem_result(&fc));
  /* a pageable copy (pipelined) behind a kernel still running, and one more reached dep */
  value = 0x5a5a5a5au;
  args[0] = (hsad_karg_t)HSAD_KARG_PTR(a);
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), &ka, NULL));
  hsad_copy_options_t o = {.force = HSAD_COPY_PIPELINED, .chunk_size = 4096, .chunk_buffers = 2};
  hsad_completion_t deps2[3] = {kb, ka, reached};
  TH_OK(hsad_memcpy_async(e.dev, out, a, n * 4, deps2, 3, &o, th_in(TH_SEC), &cc));
  TH_OK(hsad_completion_wait(&cc, th_in(20 * TH_SEC)));
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(out[i], 0x5a5a5a5au, "out[%u] = 0x%x", i, out[i]);
  free(out);
  TH_OK(hsad_mem_free(a));
  TH_OK(hsad_mem_free(b));
  TH_OK(hsad_mem_free(c));
  hsad_queue_destroy(q2);
  th_finish(&e, q, prog);
}

/* hsad_queue_barrier_signals with only a decrement (no dependency, no signal to wait for, no
 * completion) still submits the barrier that carries it: the signal goes from 3 to exactly 2;
 * with a completion as well, to 1 once the completion is reached. */
Test(memory_async, barrier_signals_decrement_only, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  hsad_queue_t *q = th_queue(&e, 64);
  hsa_signal_t d;
  hsa_status_t (*create)(hsa_signal_value_t, uint32_t, const hsa_agent_t *, hsa_signal_t *);
  hsa_status_t (*destroy)(hsa_signal_t);
  *(void **)&create = dlsym(RTLD_DEFAULT, "hsa_signal_create");
  *(void **)&destroy = dlsym(RTLD_DEFAULT, "hsa_signal_destroy");
  cr_assert(create && destroy);
  cr_assert_eq(create(3, 0, NULL, &d), HSA_STATUS_SUCCESS);
  TH_OK(hsad_queue_barrier_signals(q, NULL, 0, NULL, 0, d, th_in(TH_SEC), NULL));
  cr_assert_eq(sig_wait_value(d, 2), 2);
  hsad_completion_t c;
  TH_OK(hsad_queue_barrier_signals(q, NULL, 0, NULL, 0, d, th_in(TH_SEC), &c));
  TH_OK(hsad_completion_wait(&c, th_in(20 * TH_SEC)));
  cr_assert_eq(sig_wait_value(d, 1), 1);
  usleep(20000);
  cr_assert_eq(sig_wait_value(d, 1), 1, "decremented once per call");
  destroy(d);
  hsad_queue_destroy(q);
  TH_OK(hsad_runtime_close(e.rt));
}
