/* test_memory_copy.c - memory/ copies and fills on HSA signals: byte-exact 64 MiB round trips
 * with misaligned offsets, each pageable strategy at its thresholds, dependencies, zero-byte
 * copies, peer copies between 2 emulated GPUs, fills, and every bad-input row. */
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include "memory/hsad_memory.h"
/* mem_rocr, memory/'s table of ROCr entry points: the fault tests below replace two of its
 * entries with wrappers that refuse chosen calls (an injection that exists only in this test) */
#include "memory/mem_internal.h"
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

#define MIB ((size_t)1 << 20)

/* ROCr signal calls, from the ROCr library libhsad loaded (RTLD_GLOBAL). */
static struct {
  hsa_status_t (*create)(hsa_signal_value_t, uint32_t, const hsa_agent_t *, hsa_signal_t *);
  hsa_status_t (*destroy)(hsa_signal_t);
  hsa_signal_value_t (*load)(hsa_signal_t);
  void (*store)(hsa_signal_t, hsa_signal_value_t);
  hsa_signal_value_t (*wait)(hsa_signal_t, hsa_signal_condition_t, hsa_signal_value_t, uint64_t,
                             hsa_wait_state_t);
} sg;

static void sig_init(void) {
  *(void **)&sg.create = dlsym(RTLD_DEFAULT, "hsa_signal_create");
  *(void **)&sg.destroy = dlsym(RTLD_DEFAULT, "hsa_signal_destroy");
  *(void **)&sg.load = dlsym(RTLD_DEFAULT, "hsa_signal_load_scacquire");
  *(void **)&sg.store = dlsym(RTLD_DEFAULT, "hsa_signal_store_screlease");
  *(void **)&sg.wait = dlsym(RTLD_DEFAULT, "hsa_signal_wait_scacquire");
  cr_assert(sg.create && sg.destroy && sg.load && sg.store && sg.wait);
}

static hsa_signal_t sig_new(hsa_signal_value_t v) {
  hsa_signal_t s;
  cr_assert_eq(sg.create(v, 0, NULL, &s), HSA_STATUS_SUCCESS);
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

static void fill_lcg(uint8_t *p, size_t n, uint32_t seed) {
  uint32_t x = seed;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    p[i] = (uint8_t)(x >> 24);
  }
}

/* Index of the first differing byte, or SIZE_MAX. */
static size_t first_diff(const uint8_t *a, const uint8_t *b, size_t n) {
  if (!memcmp(a, b, n)) return SIZE_MAX;
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return i;
  return SIZE_MAX;
}

static void pool_stats(hsad_device_t *dev, hsad_host_pool_stats_t *st) {
  hsad_host_pool_t *pool = NULL;
  TH_OK(hsad_host_pool_get(dev, &pool));
  TH_OK(hsad_host_pool_stats(pool, st));
}

/* 64 MiB - 7 bytes: pageable -> device (offset 3) -> device (offset 1, D2D) -> pinned host
 * (offset 5) -> pageable (offset 11), and pinned -> device -> pageable, all byte-exact with the
 * bytes around each destination untouched. */
Test(memory_copy, round_trip_64mib_misaligned, .timeout = 120) {
  th_env_t e;
  th_open(&e);
  const size_t n = 64 * MIB - 7;
  uint8_t *src = malloc(n + 64), *back = malloc(n + 64);
  cr_assert(src && back);
  fill_lcg(src, n + 64, 17);
  memset(back, 0xee, n + 64);
  uint8_t *d1 = NULL, *d2 = NULL, *h = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, n + 16, NULL, 0, (void **)&d1));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, n + 16, NULL, 0, (void **)&d2));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_FINE, n + 16, NULL, 0, (void **)&h));
  memset(d1, 0xaa, n + 16); /* kfd-emu: device memory is host memory, so the guards are visible */
  memset(d2, 0xbb, n + 16);
  memset(h, 0xcc, n + 16);
  uint64_t dl = th_in(60 * TH_SEC);
  TH_OK(hsad_memcpy(e.dev, d1 + 3, src + 9, n, NULL, dl));       /* H2D, pageable: pinned */
  TH_OK(hsad_memcpy(e.dev, d2 + 1, d1 + 3, n, NULL, dl));        /* D2D */
  TH_OK(hsad_memcpy(e.dev, h + 5, d2 + 1, n, NULL, dl));         /* D2H, pinned host */
  TH_OK(hsad_memcpy(e.dev, back + 11, h + 5, n, NULL, dl));      /* H2H to pageable: pinned */
  size_t at = first_diff(back + 11, src + 9, n);
  cr_assert_eq(at, SIZE_MAX, "byte %zu differs", at);
  for (int i = 0; i < 3; i++) cr_assert_eq(d1[i], 0xaa);
  for (int i = 0; i < 13; i++) cr_assert_eq(d1[3 + n + i], 0xaa);
  cr_assert_eq(d2[0], 0xbb);
  for (int i = 0; i < 15; i++) cr_assert_eq(d2[1 + n + i], 0xbb);
  for (int i = 0; i < 5; i++) cr_assert_eq(h[i], 0xcc);
  for (int i = 0; i < 11; i++) cr_assert_eq(h[5 + n + i], 0xcc);
  for (int i = 0; i < 11; i++) cr_assert_eq(back[i], 0xee);
  for (int i = 0; i < 53; i++) cr_assert_eq(back[11 + n + i], 0xee);
  /* device -> pageable through a pipeline, forced, misaligned by 2 */
  hsad_copy_options_t o = {.force = HSAD_COPY_PIPELINED};
  memset(back, 0xee, n + 64);
  TH_OK(hsad_memcpy(e.dev, back + 2, d1 + 3, n, &o, dl));
  at = first_diff(back + 2, src + 9, n);
  cr_assert_eq(at, SIZE_MAX, "pipelined D2H: byte %zu differs", at);
  cr_assert_eq(back[1], 0xee);
  cr_assert_eq(back[2 + n], 0xee);
  hsad_host_pool_stats_t st;
  pool_stats(e.dev, &st);
  cr_assert_eq(st.bytes_in_use, 0, "staging blocks went back");
  TH_OK(hsad_mem_free(d1));
  TH_OK(hsad_mem_free(d2));
  TH_OK(hsad_mem_free(h));
  free(src);
  free(back);
  TH_OK(hsad_runtime_close(e.rt));
}

/* Each strategy at its boundaries (threshold - 1, threshold, threshold + 1), in both
 * directions: the strategy reported, the pool blocks it took, the bytes. */
Test(memory_copy, strategies_at_thresholds, .timeout = 120) {
  th_env_t e;
  th_open(&e);
  sig_init();
  const size_t smax = 64 * 1024, pin = 512 * 1024, chunk = 16 * 1024;
  hsad_copy_options_t o = {.staging_max = smax, .pin_threshold = pin, .chunk_size = chunk,
                           .chunk_buffers = 2};
  /* want / blocks: by size (a pageable destination); h2d_*: a pageable source is staged whole
   * (issue 21): a block per chunk, at most 8 chunks (pin - 1: 8 of 64 KiB; pin + 1: 8 of
   * 68 KiB), never pinned */
  struct {
    size_t size;
    hsad_copy_strategy_t want;
    uint64_t blocks;
    hsad_copy_strategy_t h2d_want;
    uint64_t h2d_blocks;
  } rows[] = {
      {smax - 1, HSAD_COPY_STAGED, 1, HSAD_COPY_STAGED, 1},
      {smax, HSAD_COPY_STAGED, 1, HSAD_COPY_STAGED, 1},
      {smax + 1, HSAD_COPY_PIPELINED, 2, HSAD_COPY_PIPELINED, 5},
      {pin - 1, HSAD_COPY_PIPELINED, 2, HSAD_COPY_PIPELINED, 8},
      {pin, HSAD_COPY_PINNED, 0, HSAD_COPY_PIPELINED, 8},
      {pin + 1, HSAD_COPY_PINNED, 0, HSAD_COPY_PIPELINED, 8},
  };
  uint8_t *dev = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, pin + 64, NULL, 0, (void **)&dev));
  uint8_t *host = malloc(pin + 64), *back = malloc(pin + 64);
  cr_assert(host && back);
  hsa_signal_t done = sig_new(1);
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    size_t n = rows[r].size;
    cr_assert_eq(hsad_copy_strategy_for(&o, n), rows[r].want);
    fill_lcg(host, pin + 64, (uint32_t)r + 1);
    memset(dev, 0x11, pin + 64);
    hsad_host_pool_stats_t before, after;
    pool_stats(e.dev, &before);
    hsad_copy_strategy_t got = 99;
    sg.store(done, 1);
    TH_OK(hsad_memcpy_async_signals(e.dev, dev + 1, host + 3, n, NULL, 0, done, &o, &got));
    cr_assert_eq(got, rows[r].h2d_want, "H2D %zu bytes: %s, want %s", n,
                 hsad_copy_strategy_name(got), hsad_copy_strategy_name(rows[r].h2d_want));
    sig_wait0(done);
    pool_stats(e.dev, &after);
    cr_assert_eq((after.hits + after.misses) - (before.hits + before.misses), rows[r].h2d_blocks,
                 "H2D %zu bytes: %llu staging blocks", n,
                 (unsigned long long)((after.hits + after.misses) - (before.hits + before.misses)));
    cr_assert_eq(after.bytes_in_use, 0, "H2D %zu: staging returned before completion", n);
    cr_assert_eq(first_diff(dev + 1, host + 3, n), SIZE_MAX, "H2D %zu bytes differ", n);
    cr_assert_eq(dev[0], 0x11);
    cr_assert_eq(dev[1 + n], 0x11);

    memset(back, 0x22, pin + 64);
    pool_stats(e.dev, &before);
    sg.store(done, 1);
    TH_OK(hsad_memcpy_async_signals(e.dev, back + 5, dev + 1, n, NULL, 0, done, &o, &got));
    cr_assert_eq(got, rows[r].want);
    sig_wait0(done);
    pool_stats(e.dev, &after);
    cr_assert_eq((after.hits + after.misses) - (before.hits + before.misses), rows[r].blocks);
    cr_assert_eq(after.bytes_in_use, 0);
    cr_assert_eq(first_diff(back + 5, host + 3, n), SIZE_MAX, "D2H %zu bytes differ", n);
    cr_assert_eq(back[4], 0x22);
    cr_assert_eq(back[5 + n], 0x22);
  }
  /* the default thresholds */
  cr_assert_eq(hsad_copy_strategy_for(NULL, HSAD_COPY_DEFAULT_STAGING_MAX), HSAD_COPY_STAGED);
  cr_assert_eq(hsad_copy_strategy_for(NULL, HSAD_COPY_DEFAULT_STAGING_MAX + 1),
               HSAD_COPY_PIPELINED);
  cr_assert_eq(hsad_copy_strategy_for(NULL, HSAD_COPY_DEFAULT_PIN_THRESHOLD - 1),
               HSAD_COPY_PIPELINED);
  cr_assert_eq(hsad_copy_strategy_for(NULL, HSAD_COPY_DEFAULT_PIN_THRESHOLD), HSAD_COPY_PINNED);
  sg.destroy(done);
  TH_OK(hsad_mem_free(dev));
  free(host);
  free(back);
  TH_OK(hsad_runtime_close(e.rt));
}

/* A copy waits for its dependency signal; a zero-byte copy completes in order with its
 * dependencies (plain ROCr never signals it). */
Test(memory_copy, dependencies_and_zero_bytes, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  sig_init();
  uint8_t *dev = NULL, *host = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 256 * 1024, NULL, 0, (void **)&dev));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_FINE, 256 * 1024, NULL, 0, (void **)&host));
  memset(dev, 0, 256 * 1024);
  fill_lcg(host, 256 * 1024, 5);
  uint8_t *pageable = malloc(256 * 1024);
  fill_lcg(pageable, 256 * 1024, 6);
  hsa_signal_t gate = sig_new(1), gate2 = sig_new(1), done = sig_new(1), zero = sig_new(1);
  hsa_signal_t deps[2] = {gate, gate2};
  /* direct copy and a pipelined one, both behind two gates */
  TH_OK(hsad_memcpy_async_signals(e.dev, dev, host, 128 * 1024, deps, 2, done, NULL, NULL));
  hsad_copy_options_t o = {.staging_max = 4096, .pin_threshold = 1 << 20, .chunk_size = 8192,
                           .chunk_buffers = 3};
  hsa_signal_t done2 = sig_new(1);
  hsad_copy_strategy_t strat;
  TH_OK(hsad_memcpy_async_signals(e.dev, dev + 128 * 1024, pageable, 128 * 1024, deps, 2, done2,
                                  &o, &strat));
  cr_assert_eq(strat, HSAD_COPY_PIPELINED);
  TH_OK(hsad_memcpy_async_signals(e.dev, NULL, NULL, 0, deps, 2, zero, NULL, &strat));
  cr_assert_eq(strat, HSAD_COPY_DIRECT);
  /* nothing can have run: the gates are closed */
  cr_assert_eq(sg.load(done), 1);
  cr_assert_eq(sg.load(done2), 1);
  cr_assert_eq(sg.load(zero), 1);
  sg.store(gate, 0);
  cr_assert_eq(sg.load(zero), 1, "one gate is still closed");
  for (int i = 0; i < 256 * 1024; i++) cr_assert_eq(dev[i], 0);
  sg.store(gate2, 0);
  sig_wait0(done);
  sig_wait0(done2);
  sig_wait0(zero);
  cr_assert_eq(first_diff(dev, host, 128 * 1024), SIZE_MAX);
  cr_assert_eq(first_diff(dev + 128 * 1024, pageable, 128 * 1024), SIZE_MAX);
  /* zero bytes without dependencies: done at once; sync zero-byte copy succeeds */
  sg.store(zero, 1);
  TH_OK(hsad_memcpy_async_signals(e.dev, dev, host, 0, NULL, 0, zero, NULL, NULL));
  cr_assert_eq(sg.load(zero), 0);
  TH_OK(hsad_memcpy(e.dev, NULL, NULL, 0, NULL, th_in(TH_SEC)));
  hsa_signal_t all[] = {gate, gate2, done, done2, zero};
  for (int i = 0; i < 5; i++) sg.destroy(all[i]);
  TH_OK(hsad_mem_free(dev));
  TH_OK(hsad_mem_free(host));
  free(pageable);
  TH_OK(hsad_runtime_close(e.rt));
}

/* Fills of 8/16/32-bit patterns at misaligned addresses and odd counts, asynchronous and
 * synchronous (pattern copies from a pool block); the bytes around stay. */
Test(memory_copy, fills, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  sig_init();
  const size_t n = 3 * MIB + 4096;
  uint8_t *dev = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, n, NULL, 0, (void **)&dev));
  struct { uint32_t width, pattern; size_t off, count; } rows[] = {
      {1, 0x5a, 1, 3 * MIB + 5},   {2, 0xbeef, 3, (3 * MIB) / 2 + 1},
      {4, 0x01020304, 2, 3 * MIB / 4 + 3}, {4, 0xcafef00d, 0, 1000},
  };
  hsa_signal_t done = sig_new(1);
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    memset(dev, 0x77, n);
    sg.store(done, 1);
    uint32_t w = rows[r].width;
    TH_OK(hsad_memset_async_signals(e.dev, dev + rows[r].off, rows[r].pattern, w, rows[r].count,
                                    NULL, 0, done));
    sig_wait0(done);
    for (size_t i = 0; i < rows[r].off; i++) cr_assert_eq(dev[i], 0x77);
    uint8_t pat[4];
    memcpy(pat, &rows[r].pattern, 4);
    size_t bytes = rows[r].count * w;
    for (size_t i = 0; i < bytes; i++)
      cr_assert_eq(dev[rows[r].off + i], pat[i % w], "row %zu byte %zu: 0x%02x want 0x%02x", r, i,
                   dev[rows[r].off + i], pat[i % w]);
    cr_assert_eq(dev[rows[r].off + bytes], 0x77);
  }
  /* synchronous, aligned, 16-bit pattern */
  memset(dev, 0x77, n);
  TH_OK(hsad_memset(e.dev, dev + 4, 0x1234, 2, MIB, th_in(20 * TH_SEC)));
  for (size_t i = 0; i < 2 * MIB; i += 2) {
    cr_assert_eq(dev[4 + i], 0x34);
    cr_assert_eq(dev[4 + i + 1], 0x12);
  }
  cr_assert_eq(dev[3], 0x77);
  cr_assert_eq(dev[4 + 2 * MIB], 0x77);
  /* synchronous, misaligned 8-bit: the pattern-copy path and a wait */
  TH_OK(hsad_memset(e.dev, dev + 1, 0xa5, 1, 7, th_in(20 * TH_SEC)));
  for (int i = 1; i < 8; i++) cr_assert_eq(dev[i], 0xa5);
  cr_assert_eq(dev[8], 0x34);
  /* bad input */
  uint8_t stack[16];
  MEM_ERR(hsad_memset(e.dev, dev, 1, 3, 4, th_in(TH_SEC)), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_memset: width 3 is not 1, 2 or 4");
  MEM_ERR(hsad_memset(e.dev, stack, 1, 1, 16, th_in(TH_SEC)), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_memset: destination %p is pageable host memory: fill it with memset, or "
          "register it (hsad_mem_register)", (void *)stack);
  MEM_ERR(hsad_memset(e.dev, dev + n - 2, 1, 4, 1, th_in(TH_SEC)), HSAD_ERR_RANGE,
          "hsad_memset: the destination %p + 4 bytes runs 2 bytes past the end of device memory "
          "at %p (%zu bytes)", (void *)(dev + n - 2), (void *)dev, n);
  MEM_ERR(hsad_memset_async_signals(e.dev, dev, 1, 4, SIZE_MAX / 2, NULL, 0, done),
          HSAD_ERR_RANGE, "hsad_memset_async_signals: %zu elements of 4 bytes overflow size_t",
          SIZE_MAX / 2);
  sg.destroy(done);
  TH_OK(hsad_mem_free(dev));
  TH_OK(hsad_runtime_close(e.rt));
}

/* Every bad-input row: its code and full message; nothing submitted, the destination and the
 * pools as they were. */
Test(memory_copy, bad_input_rows, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  sig_init();
  uint8_t *dev = NULL, *host = NULL, *gone = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 8192, NULL, 0, (void **)&dev));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_FINE, 8192, NULL, 0, (void **)&host));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 4096, NULL, 0, (void **)&gone));
  TH_OK(hsad_mem_free(gone));
  memset(dev, 0x3c, 8192);
  fill_lcg(host, 8192, 9);
  uint8_t pageable[100];
  hsa_signal_t done = sig_new(1), none = {0};
  hsad_host_pool_stats_t before, after;
  pool_stats(e.dev, &before);
  const char *w = "hsad_memcpy_async_signals";
  int foreign_dev = 0;
  hsa_signal_t many[65] = {{0}};
  hsad_copy_options_t bad1 = {.staging_max = 1 << 20, .pin_threshold = 1 << 20};
  hsad_copy_options_t bad2 = {.chunk_size = 5000};
  hsad_copy_options_t bad3 = {.chunk_buffers = 1};
  hsad_copy_options_t bad4 = {.force = 7};

  MEM_ERR(hsad_memcpy_async_signals(NULL, dev, host, 16, NULL, 0, done, NULL, NULL),
          HSAD_ERR_INVALID_ARGUMENT, "%s: device is NULL", w);
  MEM_ERR(hsad_memcpy_async_signals((hsad_device_t *)&foreign_dev, dev, host, 16, NULL, 0, done,
                                    NULL, NULL),
          HSAD_ERR_INVALID_ARGUMENT,
          "%s: device %p is not a device of the open hsa-dispatch runtime", w, (void *)&foreign_dev);
  MEM_ERR(hsad_memcpy_async_signals(e.dev, dev, host, 16, many, 65, done, NULL, NULL),
          HSAD_ERR_INVALID_ARGUMENT, "%s: dep_count 65 is above 64", w);
  MEM_ERR(hsad_memcpy_async_signals(e.dev, dev, host, 16, NULL, 2, done, NULL, NULL),
          HSAD_ERR_INVALID_ARGUMENT, "%s: deps is NULL with dep_count 2", w);
  MEM_ERR(hsad_memcpy_async_signals(e.dev, dev, host, 16, NULL, 0, none, NULL, NULL),
          HSAD_ERR_INVALID_ARGUMENT, "%s: completion signal is 0", w);
  MEM_ERR(hsad_memcpy_async_signals(e.dev, dev, host, 16, NULL, 0, done, &bad1, NULL),
          HSAD_ERR_INVALID_ARGUMENT,
          "%s: options: pin_threshold 1048576 must be above staging_max 1048576", w);
  MEM_ERR(hsad_memcpy_async_signals(e.dev, dev, host, 16, NULL, 0, done, &bad2, NULL),
          HSAD_ERR_INVALID_ARGUMENT,
          "%s: options: chunk_size 5000 must be a multiple of 4096 up to 268435456", w);
  MEM_ERR(hsad_memcpy_async_signals(e.dev, dev, host, 16, NULL, 0, done, &bad3, NULL),
          HSAD_ERR_INVALID_ARGUMENT, "%s: options: chunk_buffers 1 must be 2..8", w);
  MEM_ERR(hsad_memcpy_async_signals(e.dev, dev, host, 16, NULL, 0, done, &bad4, NULL),
          HSAD_ERR_INVALID_ARGUMENT, "%s: options: force 7 is no strategy", w);
  MEM_ERR(hsad_memcpy_async_signals(e.dev, NULL, host, 16, NULL, 0, done, NULL, NULL),
          HSAD_ERR_INVALID_ARGUMENT, "%s: dst is NULL", w);
  MEM_ERR(hsad_memcpy_async_signals(e.dev, dev, NULL, 16, NULL, 0, done, NULL, NULL),
          HSAD_ERR_INVALID_ARGUMENT, "%s: src is NULL", w);
  /* past the end of the destination / source allocation */
  MEM_ERR(hsad_memcpy_async_signals(e.dev, dev + 8000, host, 200, NULL, 0, done, NULL, NULL),
          HSAD_ERR_RANGE, "%s: the destination %p + 200 bytes runs 8 bytes past the end of "
          "device memory at %p (8192 bytes)", w, (void *)(dev + 8000), (void *)dev);
  MEM_ERR(hsad_memcpy_async_signals(e.dev, dev, host + 1, 8192, NULL, 0, done, NULL, NULL),
          HSAD_ERR_RANGE, "%s: the source %p + 8192 bytes runs 1 bytes past the end of "
          "host-fine memory at %p (8192 bytes)", w, (void *)(host + 1), (void *)host);
  MEM_ERR(hsad_memcpy_async_signals(e.dev, dev, (void *)(UINTPTR_MAX - 10), 16, NULL, 0, done,
                                    NULL, NULL),
          HSAD_ERR_RANGE, "%s: the source %p + 16 bytes wraps the address space", w,
          (void *)(UINTPTR_MAX - 10));
  /* overlap inside one allocation */
  MEM_ERR(hsad_memcpy_async_signals(e.dev, dev + 100, dev, 200, NULL, 0, done, NULL, NULL),
          HSAD_ERR_OVERLAP, "%s: destination %p and source %p overlap over 100 bytes (200 bytes "
          "each)", w, (void *)(dev + 100), (void *)dev);
  /* freed memory */
  MEM_ERR(hsad_memcpy_async_signals(e.dev, gone + 8, host, 16, NULL, 0, done, NULL, NULL),
          HSAD_ERR_FREED, "%s: the destination %p lies in device memory that was freed (4096 "
          "bytes at %p)", w, (void *)(gone + 8), (void *)gone);
  /* both pageable */
  uint8_t other[100];
  MEM_ERR(hsad_memcpy_async_signals(e.dev, pageable, other, 100, NULL, 0, done, NULL, NULL),
          HSAD_ERR_INVALID_ARGUMENT, "%s: destination %p and source %p are both pageable host "
          "memory: nothing for a GPU to copy (use memcpy)", w, (void *)pageable, (void *)other);
  /* the sync form names itself */
  MEM_ERR(hsad_memcpy(e.dev, dev + 8190, host, 4, NULL, th_in(TH_SEC)), HSAD_ERR_RANGE,
          "hsad_memcpy: the destination %p + 4 bytes runs 2 bytes past the end of device memory "
          "at %p (8192 bytes)", (void *)(dev + 8190), (void *)dev);
  /* nothing was submitted: the signal, the destination and the pools are as they were */
  cr_assert_eq(sg.load(done), 1);
  for (int i = 0; i < 8192; i++) cr_assert_eq(dev[i], 0x3c);
  pool_stats(e.dev, &after);
  cr_assert_eq(memcmp(&before, &after, sizeof before), 0);
  /* a pool block freed into the cache is freed memory for copies */
  hsad_host_pool_t *pool = NULL;
  TH_OK(hsad_host_pool_get(e.dev, &pool));
  void *blk = NULL;
  TH_OK(hsad_host_pool_alloc(pool, 100, &blk));
  TH_OK(hsad_host_pool_free(pool, blk));
  MEM_ERR(hsad_memcpy_async_signals(e.dev, dev, blk, 16, NULL, 0, done, NULL, NULL),
          HSAD_ERR_FREED, "%s: the source %p lies in a pool block that was freed (4096 bytes at "
          "%p)", w, blk, blk);
  sg.destroy(done);
  TH_OK(hsad_mem_free(dev));
  TH_OK(hsad_mem_free(host));
  TH_OK(hsad_runtime_close(e.rt));
}

/* Two emulated GPUs: a peer copy GPU0 -> GPU1 (64 MiB, misaligned), the refusal when the
 * destination was not granted to the GPU that runs the blit. */
Test(memory_copy, peer_two_gpus, .timeout = 120) {
  setenv("KFD_EMU_GPUS", "2", 1);
  th_env_t e;
  th_open(&e);
  hsad_device_t *g1 = NULL;
  TH_OK(hsad_device_get(e.rt, 1, &g1));
  const size_t n = 64 * MIB - 3;
  uint8_t *a = NULL, *b = NULL, *c = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, n + 8, NULL, 0, (void **)&a));
  TH_OK(hsad_mem_alloc(g1, HSAD_MEM_DEVICE, n + 8, &e.dev, 1, (void **)&b)); /* GPU0 may write */
  TH_OK(hsad_mem_alloc(g1, HSAD_MEM_DEVICE, 4096, NULL, 0, (void **)&c));    /* not granted */
  uint8_t *src = malloc(n + 8);
  fill_lcg(src, n + 8, 77);
  uint64_t dl = th_in(60 * TH_SEC);
  TH_OK(hsad_memcpy(e.dev, a + 1, src, n, NULL, dl));
  memset(b, 0x99, n + 8);
  TH_OK(hsad_memcpy(e.dev, b + 2, a + 1, n, NULL, dl)); /* P2P: GPU0's blit writes GPU1 memory */
  cr_assert_eq(first_diff(b + 2, src, n), SIZE_MAX);
  cr_assert_eq(b[1], 0x99);
  cr_assert_eq(b[2 + n], 0x99);
  /* and back through GPU1 into pageable memory */
  uint8_t *back = malloc(n);
  TH_OK(hsad_memcpy(g1, back, b + 2, n, NULL, dl));
  cr_assert_eq(first_diff(back, src, n), SIZE_MAX);
  MEM_ERR(hsad_memcpy(e.dev, c, a, 4096, NULL, dl), HSAD_ERR_NO_ACCESS,
          "hsad_memcpy: device 0 runs the blit and cannot reach the destination %p (device memory "
          "at %p, granted to device mask 0x2): add device 0 to its access list", (void *)c,
          (void *)c);
  TH_OK(hsad_mem_free(a));
  TH_OK(hsad_mem_free(b));
  TH_OK(hsad_mem_free(c));
  free(src);
  free(back);
  TH_OK(hsad_runtime_close(e.rt));
}

/* A synchronous copy that times out (kfd-emu delays ROCr's CopyAligned blit kernel by 300 ms)
 * goes on in the background and is kept: freeing its destination (device memory) or source
 * (host memory) is HSAD_ERR_IN_USE naming the copy and nothing changes; hsad_mem_wait_pending
 * with a passed deadline is TIMEOUT counting it, with 20 s it returns once it finished; the
 * bytes are then exact and every free works. The same for registered caller memory as the
 * destination (hsad_mem_unregister) and for pageable malloc'd memory as the source (pinned in
 * place: the copy call itself drives it and times out). */
Test(memory_copy, timed_out_sync_copy_is_kept, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "300000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "CopyAligned", 1);
  th_env_t e;
  th_open(&e);
  const size_t n = 1 * MIB;
  uint8_t *src = NULL, *dst = NULL, *other = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_FINE, n, NULL, 0, (void **)&src));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, n, NULL, 0, (void **)&dst));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, n, NULL, 0, (void **)&other));
  fill_lcg(src, n, 5);
  memset(dst, 0, n);
  uint64_t t0 = hsad_now_ns();
  MEM_ERR(hsad_memcpy(e.dev, dst, src, n, NULL, t0 + 20000000ull), HSAD_ERR_TIMEOUT,
          "hsad_memcpy: %zu bytes not copied by the deadline: the copy goes on in the background "
          "(hsad_mem_wait_pending waits for it; freeing its memory is refused until then)", n);
  MEM_ERR(hsad_mem_free(dst), HSAD_ERR_IN_USE,
          "hsad_mem_free: device memory of %zu bytes at %p overlaps the destination (%zu bytes at "
          "%p) of a hsad_memcpy on device 0 that timed out and has not finished: wait for it "
          "with hsad_mem_wait_pending (nothing changed)", n, (void *)dst, n, (void *)dst);
  MEM_ERR(hsad_mem_free(src), HSAD_ERR_IN_USE,
          "hsad_mem_free: host-fine memory of %zu bytes at %p overlaps the source (%zu bytes at "
          "%p) of a hsad_memcpy on device 0 that timed out and has not finished: wait for it "
          "with hsad_mem_wait_pending (nothing changed)", n, (void *)src, n, (void *)src);
  hsad_mem_info_t mi;
  TH_OK(hsad_mem_info(dst, &mi)); /* still allocated */
  TH_OK(hsad_mem_free(other));    /* memory no copy uses frees as always */
  MEM_ERR(hsad_mem_wait_pending(e.dev, hsad_now_ns()), HSAD_ERR_TIMEOUT,
          "hsad_mem_wait_pending: 1 timed-out synchronous copies or fills of device 0 still in "
          "flight at the deadline");
  TH_OK(hsad_mem_wait_pending(e.dev, th_in(20 * TH_SEC)));
  cr_assert(hsad_now_ns() - t0 >= 300000000ull, "the copy took the 300 ms delay");
  size_t at = first_diff(dst, src, n);
  cr_assert_eq(at, SIZE_MAX, "byte %zu differs", at);
  TH_OK(hsad_mem_wait_pending(NULL, hsad_now_ns())); /* none left: no wait */
  /* registered caller memory as the destination */
  uint8_t *reg = aligned_alloc(4096, n);
  cr_assert_not_null(reg);
  memset(reg, 0, n);
  TH_OK(hsad_mem_register(e.dev, reg, n, NULL, 0, NULL));
  MEM_ERR(hsad_memcpy(e.dev, reg, src, n, NULL, hsad_now_ns() + 20000000ull), HSAD_ERR_TIMEOUT,
          "hsad_memcpy: %zu bytes not copied by the deadline: the copy goes on in the background "
          "(hsad_mem_wait_pending waits for it; freeing its memory is refused until then)", n);
  MEM_ERR(hsad_mem_unregister(reg), HSAD_ERR_IN_USE,
          "hsad_mem_unregister: registered memory of %zu bytes at %p overlaps the destination "
          "(%zu bytes at %p) of a hsad_memcpy on device 0 that timed out and has not finished: "
          "wait for it with hsad_mem_wait_pending (nothing changed)", n, (void *)reg, n,
          (void *)reg);
  TH_OK(hsad_mem_wait_pending(NULL, th_in(20 * TH_SEC)));
  at = first_diff(reg, src, n);
  cr_assert_eq(at, SIZE_MAX, "registered: byte %zu differs", at);
  TH_OK(hsad_mem_unregister(reg));
  free(reg);
  /* pageable caller memory as the source: pinned in place and driven inside the copy call,
   * which times out there; kept all the same */
  uint8_t *pg = malloc(n);
  cr_assert_not_null(pg);
  fill_lcg(pg, n, 9);
  MEM_ERR(hsad_memcpy(e.dev, dst, pg, n, NULL, hsad_now_ns() + 20000000ull), HSAD_ERR_TIMEOUT,
          "hsad_memcpy: %zu bytes not copied by the deadline: the copy goes on in the background "
          "(hsad_mem_wait_pending waits for it; freeing its memory is refused until then)", n);
  MEM_ERR(hsad_mem_free(dst), HSAD_ERR_IN_USE,
          "hsad_mem_free: device memory of %zu bytes at %p overlaps the destination (%zu bytes at "
          "%p) of a hsad_memcpy on device 0 that timed out and has not finished: wait for it "
          "with hsad_mem_wait_pending (nothing changed)", n, (void *)dst, n, (void *)dst);
  MEM_ERR(hsad_mem_wait_pending(e.dev, hsad_now_ns()), HSAD_ERR_TIMEOUT,
          "hsad_mem_wait_pending: 1 timed-out synchronous copies or fills of device 0 still in "
          "flight at the deadline");
  TH_OK(hsad_mem_wait_pending(e.dev, th_in(20 * TH_SEC)));
  at = first_diff(dst, pg, n);
  cr_assert_eq(at, SIZE_MAX, "pageable: byte %zu differs", at);
  free(pg);
  TH_OK(hsad_mem_free(dst));
  TH_OK(hsad_mem_free(src));
  TH_OK(hsad_runtime_close(e.rt));
}

/* ---- refusals injected into memory/'s ROCr calls --------------------------------------------
 * inj_copy refuses the hsa_amd_memory_async_copy whose destination is inj.refuse_dst (or the
 * n-th call when refuse_dst is NULL); inj_handler refuses the n-th hsa_amd_signal_async_handler
 * call and every later one; both with HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008), as ROCr out of queue slots or
 * events would. Installed into mem_rocr once memory/ resolved it (after its first call). */
static struct {
  __typeof__(hsa_amd_memory_async_copy) *copy;
  __typeof__(hsa_amd_signal_async_handler) *handler;
  _Atomic uint32_t copies, handlers;
  void *refuse_dst;
  uint32_t refuse_copy, refuse_handler; /* 1-based call to refuse; 0: none */
} inj;

static hsa_status_t inj_copy(void *dst, hsa_agent_t dst_agent, const void *src,
                             hsa_agent_t src_agent, size_t size, uint32_t num_dep_signals,
                             const hsa_signal_t *dep_signals, hsa_signal_t completion_signal) {
  uint32_t n = atomic_fetch_add(&inj.copies, 1) + 1;
  if (inj.refuse_dst ? dst == inj.refuse_dst : n == inj.refuse_copy)
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  return inj.copy(dst, dst_agent, src, src_agent, size, num_dep_signals, dep_signals,
                  completion_signal);
}

static hsa_status_t inj_handler(hsa_signal_t signal, hsa_signal_condition_t cond,
                                hsa_signal_value_t value, hsa_amd_signal_handler handler,
                                void *arg) {
  uint32_t n = atomic_fetch_add(&inj.handlers, 1) + 1;
  if (inj.refuse_handler && n >= inj.refuse_handler) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  return inj.handler(signal, cond, value, handler, arg);
}

static void inj_arm(void *refuse_dst, uint32_t refuse_copy, uint32_t refuse_handler) {
  cr_assert_not_null(mem_rocr.hsa_amd_memory_async_copy, "memory/ has not resolved ROCr yet");
  if (!inj.copy) {
    inj.copy = mem_rocr.hsa_amd_memory_async_copy;
    inj.handler = mem_rocr.hsa_amd_signal_async_handler;
    mem_rocr.hsa_amd_memory_async_copy = inj_copy;
    mem_rocr.hsa_amd_signal_async_handler = inj_handler;
  }
  atomic_store(&inj.copies, 0);
  atomic_store(&inj.handlers, 0);
  inj.refuse_dst = refuse_dst;
  inj.refuse_copy = refuse_copy;
  inj.refuse_handler = refuse_handler;
}

/* ROCr's text for HSA_STATUS_ERROR_OUT_OF_RESOURCES. */
static const char *oor_string(void) {
  hsa_status_t (*str)(hsa_status_t, const char **) = NULL;
  *(void **)&str = dlsym(RTLD_DEFAULT, "hsa_status_string");
  const char *text = NULL;
  cr_assert(str && str(HSA_STATUS_ERROR_OUT_OF_RESOURCES, &text) == HSA_STATUS_SUCCESS && text);
  return text;
}

/* A pipelined copy (6 chunks of 4096 bytes, the last 3996, 3 buffers) whose later chunk ROCr
 * refuses stops there and says so to its waiter: the synchronous form returns HSAD_ERR_HSA at
 * once (was: TIMEOUT at the deadline, "goes on in the background", kept as pending though it
 * could never finish); the signal and completion forms reach their completion and
 * hsad_mem_signal_result / hsad_mem_result return the refusal (was: indistinguishable from
 * success). The chunks before it are exact, the rest untouched, the pool blocks back. */
Test(memory_copy, refused_later_chunk_stops_and_says_so, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  sig_init();
  const size_t n = 24476;
  uint8_t *dev = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, n, NULL, 0, (void **)&dev));
  uint8_t *src = malloc(n);
  cr_assert_not_null(src);
  fill_lcg(src, n, 31);
  hsad_copy_options_t o = {.staging_max = 4096, .pin_threshold = 1 << 20, .chunk_size = 4096,
                           .chunk_buffers = 3};
  cr_assert_eq(hsad_copy_strategy_for(&o, n), HSAD_COPY_PIPELINED);
  const char *oor = oor_string();
  /* synchronous: chunk 4 refused (the 5th submission: chunks 0-2 start, 3 refills buffer 0) */
  memset(dev, 0xee, n);
  inj_arm(NULL, 5, 0);
  uint64_t t0 = hsad_now_ns();
  MEM_ERR(hsad_memcpy(e.dev, dev, src, n, &o, t0 + 3 * TH_SEC), HSAD_ERR_HSA,
          "hsad_memcpy: hsa_amd_memory_async_copy refused chunk 4 of 6 (4096 bytes at offset "
          "16384): HSA status 0x1008 (%s); the copy stopped there: 8092 of 24476 bytes were not "
          "copied", oor);
  cr_assert_lt(hsad_now_ns() - t0, 2 * TH_SEC, "returned at once, not at the deadline");
  cr_assert_eq(atomic_load(&inj.copies), 5, "nothing submitted after the refusal");
  cr_assert_eq(first_diff(dev, src, 16384), SIZE_MAX);
  for (size_t i = 16384; i < n; i++) cr_assert_eq(dev[i], 0xee, "dev[%zu] written", i);
  TH_OK(hsad_mem_wait_pending(NULL, hsad_now_ns())); /* nothing kept */
  TH_OK(hsad_mem_free(dev)); /* not in use */
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, n, NULL, 0, (void **)&dev));
  hsad_host_pool_stats_t st;
  pool_stats(e.dev, &st);
  cr_assert_eq(st.bytes_in_use, 0);
  /* signal form: the last chunk refused (chunk 5, 3996 bytes at offset 20480) */
  memset(dev, 0xee, n);
  hsa_signal_t done = sig_new(1);
  inj_arm(dev + 20480, 0, 0);
  hsad_copy_strategy_t strat;
  TH_OK(hsad_memcpy_async_signals(e.dev, dev, src, n, NULL, 0, done, &o, &strat));
  sig_wait0(done);
  MEM_ERR(hsad_mem_signal_result(done), HSAD_ERR_HSA,
          "hsad_memcpy_async_signals: hsa_amd_memory_async_copy refused chunk 5 of 6 (3996 bytes "
          "at offset 20480): HSA status 0x1008 (%s); the copy stopped there: 3996 of 24476 bytes "
          "were not copied", oor);
  MEM_ERR(hsad_mem_signal_result(done), HSAD_ERR_HSA, /* kept, not taken */
          "hsad_memcpy_async_signals: hsa_amd_memory_async_copy refused chunk 5 of 6 (3996 bytes "
          "at offset 20480): HSA status 0x1008 (%s); the copy stopped there: 3996 of 24476 bytes "
          "were not copied", oor);
  cr_assert_eq(first_diff(dev, src, 20480), SIZE_MAX);
  for (size_t i = 20480; i < n; i++) cr_assert_eq(dev[i], 0xee, "dev[%zu] written", i);
  pool_stats(e.dev, &st);
  cr_assert_eq(st.bytes_in_use, 0);
  /* the same signal for a copy that succeeds: the old record is forgotten */
  inj_arm(NULL, 0, 0);
  sg.store(done, 1);
  TH_OK(hsad_memcpy_async_signals(e.dev, dev, src, n, NULL, 0, done, &o, &strat));
  sig_wait0(done);
  TH_OK(hsad_mem_signal_result(done));
  cr_assert_eq(first_diff(dev, src, n), SIZE_MAX);
  /* completion form */
  memset(dev, 0xee, n);
  inj_arm(dev + 20480, 0, 0);
  hsad_completion_t c;
  TH_OK(hsad_memcpy_async(e.dev, dev, src, n, NULL, 0, &o, th_in(TH_SEC), &c));
  /* the waiter is told (the copy queue's result hook), as is hsad_mem_result */
  MEM_ERR(hsad_completion_wait(&c, th_in(20 * TH_SEC)), HSAD_ERR_HSA,
          "hsad_memcpy_async: hsa_amd_memory_async_copy refused chunk 5 of 6 (3996 bytes at "
          "offset 20480): HSA status 0x1008 (%s); the copy stopped there: 3996 of 24476 bytes "
          "were not copied", oor);
  MEM_ERR(hsad_completion_wait_all(&c, 1, th_in(20 * TH_SEC)), HSAD_ERR_HSA,
          "completion 0 of 1: hsad_memcpy_async: hsa_amd_memory_async_copy refused chunk 5 of 6 "
          "(3996 bytes at offset 20480): HSA status 0x1008 (%s); the copy stopped there: 3996 of "
          "24476 bytes were not copied", oor);
  MEM_ERR(hsad_mem_result(&c), HSAD_ERR_HSA,
          "hsad_memcpy_async: hsa_amd_memory_async_copy refused chunk 5 of 6 (3996 bytes at "
          "offset 20480): HSA status 0x1008 (%s); the copy stopped there: 3996 of 24476 bytes "
          "were not copied", oor);
  cr_assert_eq(first_diff(dev, src, 20480), SIZE_MAX);
  for (size_t i = 20480; i < n; i++) cr_assert_eq(dev[i], 0xee, "dev[%zu] written", i);
  inj_arm(NULL, 0, 0);
  TH_OK(hsad_memcpy_async(e.dev, dev, src, n, NULL, 0, &o, th_in(TH_SEC), &c));
  TH_OK(hsad_completion_wait(&c, th_in(20 * TH_SEC)));
  TH_OK(hsad_mem_result(&c));
  cr_assert_eq(first_diff(dev, src, n), SIZE_MAX);
  MEM_ERR(hsad_mem_result(NULL), HSAD_ERR_INVALID_ARGUMENT, "hsad_mem_result: completion is NULL");
  MEM_ERR(hsad_mem_signal_result((hsa_signal_t){0}), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_signal_result: completion signal is 0");
  /* a fill whose second 1 MiB piece is refused: the first is written, the rest untouched */
  uint8_t *big = NULL;
  const size_t fb = 2 * MIB + 100;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, fb, NULL, 0, (void **)&big));
  memset(big, 0x11, fb);
  inj_arm(NULL, 2, 0);
  sg.store(done, 1);
  TH_OK(hsad_memset_async_signals(e.dev, big, 0x5a, 1, fb, NULL, 0, done));
  sig_wait0(done);
  MEM_ERR(hsad_mem_signal_result(done), HSAD_ERR_HSA,
          "hsad_memset_async_signals: hsa_amd_memory_async_copy refused piece 1 of 3 (1048576 "
          "bytes at offset 1048576): HSA status 0x1008 (%s); the fill stopped there: 1048676 of "
          "2097252 bytes were not filled", oor);
  for (size_t i = 0; i < fb; i++)
    cr_assert_eq(big[i], i < MIB ? 0x5a : 0x11, "big[%zu] = 0x%02x", i, big[i]);
  inj_arm(NULL, 0, 0);
  TH_OK(hsad_mem_wait_pending(NULL, hsad_now_ns()));
  pool_stats(e.dev, &st);
  cr_assert_eq(st.bytes_in_use, 0);
  sg.destroy(done);
  TH_OK(hsad_mem_free(big));
  TH_OK(hsad_mem_free(dev));
  free(src);
  TH_OK(hsad_runtime_close(e.rt));
}

/* hsad_memset's deadline bounds its wait whatever the alignment (was: an aligned fill went
 * through hsa_amd_memory_fill, which waits inside ROCr: HSAD_OK after the 300 ms every kernel
 * is delayed here, with a 20 ms deadline); the fill is kept as a timed-out hsad_memcpy is:
 * freeing its memory is refused, hsad_mem_wait_pending waits for it, then the bytes are exact. */
Test(memory_copy, memset_deadline_bounds_the_wait, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "300000", 1); /* every kernel: Fill and the copies alike */
  th_env_t e;
  th_open(&e);
  const size_t n = 65536;
  uint8_t *dev = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, n + 8, NULL, 0, (void **)&dev));
  memset(dev, 0, n + 8);
  uint64_t t0 = hsad_now_ns();
  MEM_ERR(hsad_memset(e.dev, dev, 0x5a, 1, n, t0 + 20000000ull), HSAD_ERR_TIMEOUT,
          "hsad_memset: not finished by the deadline (goes on in the background; "
          "hsad_mem_wait_pending waits for it, freeing its memory is refused until then)");
  uint64_t took = hsad_now_ns() - t0;
  cr_assert_lt(took, 200000000ull, "returned after %llu ns: the deadline was 20 ms",
               (unsigned long long)took);
  MEM_ERR(hsad_mem_free(dev), HSAD_ERR_IN_USE,
          "hsad_mem_free: device memory of %zu bytes at %p overlaps the destination (%zu bytes at "
          "%p) of a hsad_memset on device 0 that timed out and has not finished: wait for it "
          "with hsad_mem_wait_pending (nothing changed)", n + 8, (void *)dev, n, (void *)dev);
  TH_OK(hsad_mem_wait_pending(e.dev, th_in(20 * TH_SEC)));
  for (size_t i = 0; i < n + 8; i++) cr_assert_eq(dev[i], i < n ? 0x5a : 0, "dev[%zu]", i);
  /* 16-bit pattern, aligned, with time enough: done, exact */
  TH_OK(hsad_memset(e.dev, dev, 0xbeef, 2, n / 2, th_in(20 * TH_SEC)));
  for (size_t i = 0; i < n; i += 2) cr_assert(dev[i] == 0xef && dev[i + 1] == 0xbe, "at %zu", i);
  TH_OK(hsad_mem_free(dev));
  /* ROCr refuses the second 1 MiB piece: HSAD_ERR_HSA at once, the first piece written, the
   * rest untouched, nothing kept */
  const size_t fb = 2 * MIB + 100;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, fb, NULL, 0, (void **)&dev));
  memset(dev, 0x11, fb);
  inj_arm(NULL, 2, 0);
  MEM_ERR(hsad_memset(e.dev, dev, 0x5a5a5a5au, 4, fb / 4, th_in(20 * TH_SEC)), HSAD_ERR_HSA,
          "hsad_memset: hsa_amd_memory_async_copy refused piece 1 of 3 (1048576 bytes at offset "
          "1048576): HSA status 0x1008 (%s); the fill stopped there: 1048676 of 2097252 bytes "
          "were not filled", oor_string());
  inj_arm(NULL, 0, 0);
  for (size_t i = 0; i < fb; i++)
    cr_assert_eq(dev[i], i < MIB ? 0x5a : 0x11, "dev[%zu] = 0x%02x", i, dev[i]);
  TH_OK(hsad_mem_wait_pending(NULL, hsad_now_ns()));
  TH_OK(hsad_mem_free(dev));
  TH_OK(hsad_runtime_close(e.rt));
}

/* Pinned copies arm their handler before the DMA exists: a refused handler leaves nothing in
 * flight (was: the DMA was submitted, then the error path returned the signal, unlocked the
 * range and freed the op while the DMA ran, and the destination changed after the failed call).
 * Also: the DMA refused after the handler was armed (the handler is released and only
 * acknowledges), and a pipeline's first buffer; each leaves the destination, the completion
 * signal and the pools as they were, and the next copy works. */
Test(memory_copy, refused_handler_leaves_nothing_in_flight, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  sig_init();
  hsa_status_t (*pinfo)(const void *, hsa_amd_pointer_info_t *, void *(*)(size_t), uint32_t *,
                        hsa_agent_t **) = NULL;
  *(void **)&pinfo = dlsym(RTLD_DEFAULT, "hsa_amd_pointer_info");
  cr_assert_not_null(pinfo);
  const size_t n = 256 * 1024;
  uint8_t *dev = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, n, NULL, 0, (void **)&dev));
  uint8_t *src = malloc(n);
  cr_assert_not_null(src);
  fill_lcg(src, n, 41);
  const char *oor = oor_string();
  hsad_copy_options_t pin = {.force = HSAD_COPY_PINNED, .flags = HSAD_COPY_SOURCE_DEFERRED};
  hsad_copy_options_t pipe = {.force = HSAD_COPY_PIPELINED, .chunk_size = 65536};
  hsa_signal_t done = sig_new(1);
  hsad_host_pool_stats_t before, after;
  struct {
    const hsad_copy_options_t *o;
    uint32_t refuse_copy, refuse_handler;
    const char *fmt;
  } rows[] = {
      {&pin, 0, 1, "hsad_memcpy_async_signals: hsa_amd_signal_async_handler(pinned copy %p <- "
                   "%p, %zu bytes; nothing submitted): HSA status 0x1008 (%s)"},
      {&pin, 1, 0, "hsad_memcpy_async_signals: hsa_amd_memory_async_copy(%p <- %p, %zu bytes, "
                   "pinned): HSA status 0x1008 (%s)"},
      {&pipe, 0, 1, "hsad_memcpy_async_signals: hsa_amd_signal_async_handler(first of 4 "
                    "chunk(s) %p <- %p; nothing submitted): HSA status 0x1008 (%s)"},
      {&pipe, 1, 0, "hsad_memcpy_async_signals: hsa_amd_memory_async_copy(%p <- %p, first of 4 "
                    "chunk(s)): HSA status 0x1008 (%s)"},
  };
  for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
    memset(dev, 0xee, n);
    sg.store(done, 1);
    pool_stats(e.dev, &before);
    inj_arm(NULL, rows[r].refuse_copy, rows[r].refuse_handler);
    char want[512];
    if (rows[r].o == &pin)
      snprintf(want, sizeof want, rows[r].fmt, (void *)dev, (void *)src, n, oor);
    else
      snprintf(want, sizeof want, rows[r].fmt, (void *)dev, (void *)src, oor);
    MEM_ERR(hsad_memcpy_async_signals(e.dev, dev, src, n, NULL, 0, done, rows[r].o, NULL),
            HSAD_ERR_HSA, "%s", want);
    usleep(200000); /* a DMA left in flight would land by now */
    for (size_t i = 0; i < n; i++) cr_assert_eq(dev[i], 0xee, "row %zu: dev[%zu] written", r, i);
    cr_assert_eq(sg.load(done), 1, "row %zu: the completion was touched", r);
    pool_stats(e.dev, &after);
    cr_assert_eq(after.bytes_in_use, before.bytes_in_use, "row %zu: staging blocks kept", r);
    hsa_amd_pointer_info_t pi = {.size = sizeof pi};
    pinfo(src, &pi, NULL, NULL, NULL);
    cr_assert_neq(pi.type, HSA_EXT_POINTER_TYPE_LOCKED, "row %zu: the range stayed locked", r);
    /* the next copy works, decrementing the completion once */
    inj_arm(NULL, 0, 0);
    TH_OK(hsad_memcpy_async_signals(e.dev, dev, src, n, NULL, 0, done, rows[r].o, NULL));
    sig_wait0(done);
    usleep(20000);
    cr_assert_eq(sg.load(done), 0, "row %zu: decremented more than once", r);
    cr_assert_eq(first_diff(dev, src, n), SIZE_MAX, "row %zu", r);
    TH_OK(hsad_mem_signal_result(done));
  }
  sg.destroy(done);
  TH_OK(hsad_mem_free(dev));
  free(src);
  TH_OK(hsad_runtime_close(e.rt));
}

/* Synchronous staged (one pool block) and pipelined copies that time out behind ROCr's
 * CopyAligned blit delayed by 300 ms are kept like pinned ones: TIMEOUT with the pending note,
 * hsad_mem_wait_pending with a passed deadline counts them, with time enough returns once the
 * bytes are exact (host -> device staged; device -> pageable pipelined: the handlers copy out
 * after the call returned), and the staging blocks are back in the pool. A refusal in the
 * background is reported once by hsad_mem_wait_pending; handlers ROCr refuses at the deadline
 * make the call drive the copy to its end (was: its buffers were left unwatched, never to
 * finish). */
Test(memory_copy, timed_out_staged_and_pipelined_copies_are_kept, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "300000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "CopyAligned", 1);
  th_env_t e;
  th_open(&e);
  const size_t sn = 8000, pn = 3 * 4096 + 100;
  uint8_t *dev = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, pn, NULL, 0, (void **)&dev));
  uint8_t *host = malloc(pn), *back = malloc(pn + 2);
  cr_assert(host && back);
  fill_lcg(host, pn, 51);
  memset(dev, 0, pn);
  hsad_copy_options_t staged = {.force = HSAD_COPY_STAGED};
  hsad_copy_options_t piped = {.force = HSAD_COPY_PIPELINED, .chunk_size = 4096,
                               .chunk_buffers = 2};
  MEM_ERR(hsad_memcpy(e.dev, dev, host, sn, &staged, hsad_now_ns() + 20000000ull),
          HSAD_ERR_TIMEOUT,
          "hsad_memcpy: %zu bytes not copied by the deadline: the copy goes on in the background "
          "(hsad_mem_wait_pending waits for it; freeing its memory is refused until then)", sn);
  MEM_ERR(hsad_mem_wait_pending(e.dev, hsad_now_ns()), HSAD_ERR_TIMEOUT,
          "hsad_mem_wait_pending: 1 timed-out synchronous copies or fills of device 0 still in "
          "flight at the deadline");
  TH_OK(hsad_mem_wait_pending(e.dev, th_in(20 * TH_SEC)));
  cr_assert_eq(first_diff(dev, host, sn), SIZE_MAX);
  for (size_t i = sn; i < pn; i++) cr_assert_eq(dev[i], 0, "dev[%zu]", i);
  /* device -> pageable, pipelined over 4 chunks on 2 buffers */
  TH_OK(hsad_memcpy(e.dev, dev, host, pn, NULL, th_in(20 * TH_SEC)));
  memset(back, 0x77, pn + 2);
  MEM_ERR(hsad_memcpy(e.dev, back + 1, dev, pn, &piped, hsad_now_ns() + 20000000ull),
          HSAD_ERR_TIMEOUT,
          "hsad_memcpy: %zu bytes not copied by the deadline: the copy goes on in the background "
          "(hsad_mem_wait_pending waits for it; freeing its memory is refused until then)", pn);
  MEM_ERR(hsad_mem_free(dev), HSAD_ERR_IN_USE,
          "hsad_mem_free: device memory of %zu bytes at %p overlaps the source (%zu bytes at "
          "%p) of a hsad_memcpy on device 0 that timed out and has not finished: wait for it "
          "with hsad_mem_wait_pending (nothing changed)", pn, (void *)dev, pn, (void *)dev);
  TH_OK(hsad_mem_wait_pending(NULL, th_in(20 * TH_SEC)));
  cr_assert_eq(first_diff(back + 1, host, pn), SIZE_MAX);
  cr_assert_eq(back[0], 0x77);
  cr_assert_eq(back[pn + 1], 0x77);
  /* host -> device, pipelined, timed out; ROCr then refuses its last chunk (100 bytes at
   * 12288) in the background: hsad_mem_wait_pending says so once, after it finished */
  memset(dev, 0, pn);
  inj_arm(dev + 12288, 0, 0);
  MEM_ERR(hsad_memcpy(e.dev, dev, host, pn, &piped, hsad_now_ns() + 20000000ull),
          HSAD_ERR_TIMEOUT,
          "hsad_memcpy: %zu bytes not copied by the deadline: the copy goes on in the background "
          "(hsad_mem_wait_pending waits for it; freeing its memory is refused until then)", pn);
  MEM_ERR(hsad_mem_wait_pending(e.dev, th_in(20 * TH_SEC)), HSAD_ERR_HSA,
          "hsad_mem_wait_pending: a timed-out synchronous copy or fill finished incomplete: "
          "hsad_memcpy: hsa_amd_memory_async_copy refused chunk 3 of 4 (100 bytes at offset "
          "12288): HSA status 0x1008 (%s); the copy stopped there: 100 of 12388 bytes were not "
          "copied", oor_string());
  TH_OK(hsad_mem_wait_pending(e.dev, hsad_now_ns())); /* said once */
  cr_assert_eq(first_diff(dev, host, 12288), SIZE_MAX);
  for (size_t i = 12288; i < pn; i++) cr_assert_eq(dev[i], 0, "dev[%zu] written", i);
  /* at the deadline ROCr refuses to watch the buffers: the call drives them to the end
   * itself, past the deadline, rather than leave DMAs unwatched: HSAD_OK, nothing kept */
  memset(dev, 0, pn);
  inj_arm(NULL, 0, 1);
  uint64_t t0 = hsad_now_ns();
  TH_OK(hsad_memcpy(e.dev, dev, host, pn, &piped, t0 + 20000000ull));
  cr_assert_geq(hsad_now_ns() - t0, 1200000000ull, "4 chunks of 300 ms each were waited for");
  cr_assert_geq(atomic_load(&inj.handlers), 1);
  cr_assert_eq(first_diff(dev, host, pn), SIZE_MAX);
  TH_OK(hsad_mem_wait_pending(NULL, hsad_now_ns()));
  inj_arm(NULL, 0, 0);
  hsad_host_pool_stats_t st;
  pool_stats(e.dev, &st);
  cr_assert_eq(st.bytes_in_use, 0, "staging blocks back");
  TH_OK(hsad_mem_free(dev));
  free(host);
  free(back);
  TH_OK(hsad_runtime_close(e.rt));
}
