/* test_memory_pageable.c - when a pageable source of an asynchronous copy may be written again
 * (issue 21): by default as soon as the call returned (CUDA's rule), at every size and through
 * every strategy; with HSAD_COPY_SOURCE_DEFERRED only once the completion was reached.
 *
 * kfd-emu's CP stalls 30 ms before every packet (KFD_EMU_CP_STALL_MS=30), so ROCr's blit kernel
 * runs long after the call returned: a copy that reads the source late sees the bytes the test
 * writes right after the call. */
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

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

/* byte i of pattern `seed`: two seeds agree at about 1 byte in 256, so a copy that read the
 * source late matches the call-time pattern at far fewer than n bytes */
static uint8_t pat(uint32_t seed, size_t i) { return (uint8_t)((i * 7 + i / 251) * seed + seed); }

static void fill_pat(uint8_t *p, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; i++) p[i] = pat(seed, i);
}

/* bytes of p equal to pattern seed */
static size_t count_pat(const uint8_t *p, size_t n, uint32_t seed) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) k += p[i] == pat(seed, i);
  return k;
}

static void open_stalled(th_env_t *e) {
  setenv("KFD_EMU_CP_STALL_MS", "30", 1);
  th_open(e);
}

/* ROCr signal calls, from the ROCr library libhsad loaded (RTLD_GLOBAL). */
static struct {
  hsa_status_t (*create)(hsa_signal_value_t, uint32_t, const hsa_agent_t *, hsa_signal_t *);
  hsa_status_t (*destroy)(hsa_signal_t);
  hsa_signal_value_t (*load)(hsa_signal_t);
  void (*store)(hsa_signal_t, hsa_signal_value_t);
  hsa_signal_value_t (*wait)(hsa_signal_t, hsa_signal_condition_t, hsa_signal_value_t, uint64_t,
                             hsa_wait_state_t);
} sg;

static hsa_signal_t sig_new(void) {
  *(void **)&sg.create = dlsym(RTLD_DEFAULT, "hsa_signal_create");
  *(void **)&sg.destroy = dlsym(RTLD_DEFAULT, "hsa_signal_destroy");
  *(void **)&sg.load = dlsym(RTLD_DEFAULT, "hsa_signal_load_scacquire");
  *(void **)&sg.store = dlsym(RTLD_DEFAULT, "hsa_signal_store_screlease");
  *(void **)&sg.wait = dlsym(RTLD_DEFAULT, "hsa_signal_wait_scacquire");
  cr_assert(sg.create && sg.destroy && sg.load && sg.store && sg.wait);
  hsa_signal_t s;
  cr_assert_eq(sg.create(1, 0, NULL, &s), HSA_STATUS_SUCCESS);
  return s;
}

/* Waits (deadline 20 s) until the signal is 0. */
static void sig_wait0(hsa_signal_t s) {
  uint64_t end = th_in(20 * TH_SEC);
  while (sg.load(s) != 0) {
    cr_assert_lt(hsad_now_ns(), end, "signal still %ld at the deadline", (long)sg.load(s));
    sg.wait(s, HSA_SIGNAL_CONDITION_EQ, 0, 10000000, HSA_WAIT_STATE_BLOCKED);
  }
}

static uint64_t pool_taken(hsad_device_t *dev, uint64_t *in_use) {
  hsad_host_pool_t *pool = NULL;
  hsad_host_pool_stats_t st;
  TH_OK(hsad_host_pool_get(dev, &pool));
  TH_OK(hsad_host_pool_stats(pool, &st));
  if (in_use) *in_use = st.bytes_in_use;
  return st.hits + st.misses;
}

static const size_t sizes[] = {4 * KIB, 64 * KIB, 1 * MIB, 8 * MIB};

/* At 4 KiB (staged), 64 KiB (the default pin threshold), 1 MiB and 8 MiB (pinned in place
 * before issue 21: "0 of 1048576" bytes of the call-time value arrived): the source is
 * rewritten right after the call returned, before the stalled CP ran the blit; every
 * destination byte holds the value at call time. Completion form (hsad_memcpy_async) and
 * signal form (strategy never pinned, staging blocks: one, then a block per 2 MiB chunk, back
 * in the pool once the completion was reached). */
Test(memory_pageable, source_reusable_when_the_call_returns, .timeout = 60) {
  th_env_t e;
  open_stalled(&e);
  static const hsad_copy_strategy_t want[] = {HSAD_COPY_STAGED, HSAD_COPY_PIPELINED,
                                              HSAD_COPY_PIPELINED, HSAD_COPY_PIPELINED};
  static const uint64_t blocks[] = {1, 1, 1, 4};
  uint8_t *dev = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 8 * MIB + 64, NULL, 0, (void **)&dev));
  uint8_t *src = malloc(8 * MIB);
  cr_assert_not_null(src);
  hsa_signal_t done = sig_new();
  for (size_t r = 0; r < 4; r++) {
    size_t n = sizes[r];
    /* completion form */
    memset(dev, 0, 8 * MIB + 64);
    fill_pat(src, n, 1);
    hsad_completion_t c;
    TH_OK(hsad_memcpy_async(e.dev, dev + 1, src, n, NULL, 0, NULL, th_in(10 * TH_SEC), &c));
    fill_pat(src, n, 2); /* the caller reuses its buffer at once */
    cr_assert_eq(hsad_completion_done(&c), false, "%zu bytes: the CP stall is in effect", n);
    TH_OK(hsad_completion_wait(&c, th_in(20 * TH_SEC)));
    size_t k = count_pat(dev + 1, n, 1);
    cr_assert_eq(k, n, "hsad_memcpy_async %zu bytes: %zu of %zu bytes of the value at call time",
                 n, k, n);
    cr_assert_eq(dev[0], 0);
    cr_assert_eq(dev[1 + n], 0);
    /* signal form */
    memset(dev, 0, 8 * MIB + 64);
    fill_pat(src, n, 3);
    uint64_t in_use = 0, before = pool_taken(e.dev, NULL);
    hsad_copy_strategy_t got = 99;
    sg.store(done, 1);
    TH_OK(hsad_memcpy_async_signals(e.dev, dev, src, n, NULL, 0, done, NULL, &got));
    fill_pat(src, n, 4);
    cr_assert_eq(sg.load(done), 1, "%zu bytes: the CP stall is in effect", n);
    cr_assert_eq(got, want[r], "%zu bytes: %s", n, hsad_copy_strategy_name(got));
    sig_wait0(done);
    cr_assert_eq(pool_taken(e.dev, &in_use) - before, blocks[r], "%zu bytes: staging blocks", n);
    cr_assert_eq(in_use, 0, "%zu bytes: staging blocks back before the completion", n);
    k = count_pat(dev, n, 3);
    cr_assert_eq(k, n, "signals %zu bytes: %zu of %zu bytes of the value at call time", n, k, n);
    cr_assert_eq(dev[n], 0);
  }
  sg.destroy(done);
  free(src);
  TH_OK(hsad_mem_free(dev));
  TH_OK(hsad_runtime_close(e.rt));
}

/* A pipeline larger than HSAD_COPY_MAX_BUFFERS chunks stages every byte too: 40 chunks of 4 KiB
 * asked, 8 blocks of 20 KiB taken; behind a closed dependency (nothing can move until the test
 * opens it, long after the source was rewritten). */
Test(memory_pageable, long_pipeline_behind_a_dependency, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  const size_t n = 160 * KIB;
  hsad_copy_options_t o = {.staging_max = 4096, .pin_threshold = 1 * MIB, .chunk_size = 4096,
                           .chunk_buffers = 2};
  uint8_t *dev = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, n, NULL, 0, (void **)&dev));
  memset(dev, 0, n);
  uint8_t *src = malloc(n);
  cr_assert_not_null(src);
  fill_pat(src, n, 5);
  hsa_signal_t gate = sig_new(), done = sig_new();
  uint64_t in_use = 0, before = pool_taken(e.dev, NULL);
  hsad_copy_strategy_t got = 99;
  TH_OK(hsad_memcpy_async_signals(e.dev, dev, src, n, &gate, 1, done, &o, &got));
  fill_pat(src, n, 6);
  cr_assert_eq(got, HSAD_COPY_PIPELINED);
  cr_assert_eq(pool_taken(e.dev, &in_use) - before, 8);
  cr_assert_eq(in_use, 8 * 32 * KIB, "8 blocks of 20 KiB (class 32 KiB) held");
  usleep(20000);
  cr_assert_eq(sg.load(done), 1, "the gate is closed");
  for (size_t i = 0; i < n; i++) cr_assert_eq(dev[i], 0, "nothing moved: dev[%zu]", i);
  sg.store(gate, 0);
  sig_wait0(done);
  size_t k = count_pat(dev, n, 5);
  cr_assert_eq(k, n, "%zu of %zu bytes of the value at call time", k, n);
  pool_taken(e.dev, &in_use);
  cr_assert_eq(in_use, 0);
  sg.destroy(gate);
  sg.destroy(done);
  free(src);
  TH_OK(hsad_mem_free(dev));
  TH_OK(hsad_runtime_close(e.rt));
}

/* HSAD_COPY_SOURCE_DEFERRED: zero-copy, read after the call returned. Its contract: the source
 * may be written again once the completion was reached. At 1 MiB and 8 MiB (pinned in place,
 * no staging block) a write after the completion leaves the destination with the call-time
 * values, and the read really is deferred: a write right after the call (breaking the
 * contract, for the test only) is what arrives, byte for byte, under the 30 ms CP stall. */
Test(memory_pageable, deferred_flag_contract, .timeout = 60) {
  th_env_t e;
  open_stalled(&e);
  hsad_copy_options_t o = {.flags = HSAD_COPY_SOURCE_DEFERRED};
  uint8_t *dev = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 8 * MIB, NULL, 0, (void **)&dev));
  uint8_t *src = malloc(8 * MIB);
  cr_assert_not_null(src);
  hsa_signal_t done = sig_new();
  for (size_t r = 2; r < 4; r++) {
    size_t n = sizes[r];
    /* kept: written only after the completion */
    memset(dev, 0, 8 * MIB);
    fill_pat(src, n, 7);
    hsad_completion_t c;
    TH_OK(hsad_memcpy_async(e.dev, dev, src, n, NULL, 0, &o, th_in(10 * TH_SEC), &c));
    TH_OK(hsad_completion_wait(&c, th_in(20 * TH_SEC)));
    fill_pat(src, n, 8);
    cr_assert_eq(count_pat(dev, n, 7), n, "%zu bytes, contract kept", n);
    /* broken: the late read sees the new bytes */
    memset(dev, 0, 8 * MIB);
    fill_pat(src, n, 9);
    uint64_t before = pool_taken(e.dev, NULL);
    hsad_copy_strategy_t got = 99;
    sg.store(done, 1);
    /* the copy waits for `gate`, opened only after the rewrite: the late read is certain
     * however late this thread runs (a stall alone lost the race at load 16) */
    hsa_signal_t gate = sig_new();
    TH_OK(hsad_memcpy_async_signals(e.dev, dev, src, n, &gate, 1, done, &o, &got));
    fill_pat(src, n, 10);
    sg.store(gate, 0);
    cr_assert_eq(got, HSAD_COPY_PINNED);
    sig_wait0(done);
    cr_assert_eq(pool_taken(e.dev, NULL) - before, 0, "zero-copy: no staging block");
    size_t k = count_pat(dev, n, 10);
    cr_assert_eq(k, n, "%zu bytes: %zu of %zu bytes written after the call arrived", n, k, n);
    sg.destroy(gate);
  }
  sg.destroy(done);
  free(src);
  TH_OK(hsad_mem_free(dev));
  TH_OK(hsad_runtime_close(e.rt));
}

/* Bad options: unknown flag bits; forcing pinned on a pageable source without the flag. Both
 * refused before anything is submitted. */
Test(memory_pageable, bad_options) {
  th_env_t e;
  th_open(&e);
  uint8_t *dev = NULL, src[4096];
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 4096, NULL, 0, (void **)&dev));
  hsad_copy_options_t bad = {.flags = 6};
  hsad_completion_t c = {0};
  MEM_ERR(hsad_memcpy_async(e.dev, dev, src, 4096, NULL, 0, &bad, th_in(TH_SEC), &c),
          HSAD_ERR_INVALID_ARGUMENT, "hsad_memcpy_async: options: flags 0x6 has unknown bits "
          "0x6 (known: HSAD_COPY_SOURCE_DEFERRED 0x1)");
  hsad_copy_options_t pin = {.force = HSAD_COPY_PINNED};
  MEM_ERR(hsad_memcpy_async(e.dev, dev, src, 4096, NULL, 0, &pin, th_in(TH_SEC), &c),
          HSAD_ERR_INVALID_ARGUMENT, "hsad_memcpy_async: options: force pinned reads the "
          "pageable source %p after the call returns: set HSAD_COPY_SOURCE_DEFERRED in flags to "
          "accept that contract", (void *)src);
  /* the same force is fine for a pageable destination and for the synchronous form */
  memset(src, 3, sizeof src);
  TH_OK(hsad_memcpy(e.dev, dev, src, 4096, &pin, th_in(10 * TH_SEC)));
  memset(src, 0, sizeof src);
  TH_OK(hsad_memcpy_async(e.dev, src, dev, 4096, NULL, 0, &pin, th_in(TH_SEC), &c));
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  for (int i = 0; i < 4096; i++) cr_assert_eq(src[i], 3);
  TH_OK(hsad_mem_free(dev));
  TH_OK(hsad_runtime_close(e.rt));
}
