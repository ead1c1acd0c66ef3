/* test_nvidia.c - the NVIDIA backend end to end (issue 19), through the public API only:
 * devices with their vendor, programs from a cubin, kernels with cuFuncGetParamInfo's layout,
 * dispatch with the argument checks and messages of AMD, epoch completions, cross-queue
 * barriers, faults that reach every waiter, device memory and byte-exact copies.
 *
 * Without an NVIDIA GPU (CI, AMD machines) every test reports itself skipped with the reason
 * (the driver's absence as nv_cuda_load says it, or no cubin because nvcc was absent at build
 * time): counted, not hidden. Criterion runs each test in its own process, so the fault test
 * poisons no other test's CUDA context. */
#ifndef NV_KERNEL_COUNT
#define NV_KERNEL_COUNT 11u /* the kernels of nv_kernels.cu */
#endif
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hsa-dispatch/hsad.h"
#include "memory/hsad_memory.h"
#include "nvcodeobj/hsad_nv_codeobj.h" /* hsad_nv_compile_options_t, NVRTC */

#ifndef NV_CUBIN
#define NV_CUBIN "build/tests/nvidia/nv_kernels-sm_90.cubin"
#endif
#define SEC 1000000000ull

/* nvidia/nv_cuda.h: why the driver could not be loaded (for the skip message). */
hsad_status_t nv_cuda_load(void);

#define OK(expr)                                                                            \
  do {                                                                                      \
    hsad_status_t s_ = (expr);                                                              \
    cr_assert_eq(s_, HSAD_OK, "%s -> %s: %s", #expr, hsad_status_name(s_), hsad_last_error()); \
  } while (0)

#define ERR_IS(expr, status, ...)                                                           \
  do {                                                                                      \
    hsad_status_t s_ = (expr);                                                              \
    char want_[1024];                                                                       \
    snprintf(want_, sizeof want_, __VA_ARGS__);                                             \
    cr_assert_eq(s_, status, "%s -> %s (want %s): %s", #expr, hsad_status_name(s_),         \
                 hsad_status_name(status), hsad_last_error());                              \
    cr_assert_str_eq(hsad_last_error(), want_, "%s: message\n  got  '%s'\n  want '%s'",     \
                     #expr, hsad_last_error(), want_);                                      \
  } while (0)

/* A hung GPU wait fails its test (45 s) instead of the whole run. */
TestSuite(nvidia, .timeout = 45);

typedef struct {
  hsad_runtime_t *rt;
  hsad_device_t *dev;
  hsad_program_t *prog;
} nv_env_t;

/* Opens the runtime and loads the cubin on the first NVIDIA device, or skips the test. */
/* A crash inside a test prints its backtrace (frames as binary(+offset): addr2line -e BINARY
 * turns them into lines) before the default action, so an H200 run that has no debugger still
 * says where. */
static void nv_crash_trace(int sig) {
  void *frames[64];
  int n = backtrace(frames, 64);
  static const char head[] = "test_nvidia: fatal signal, backtrace:\n";
  if (write(2, head, sizeof head - 1) < 0) { /* nothing to do */ }
  backtrace_symbols_fd(frames, n, 2);
  signal(sig, SIG_DFL);
  raise(sig);
}

static void nv_env(nv_env_t *e) {
  signal(SIGSEGV, nv_crash_trace);
  signal(SIGBUS, nv_crash_trace);
  signal(SIGABRT, nv_crash_trace);
  memset(e, 0, sizeof *e);
  if (access(NV_CUBIN, R_OK) != 0)
    cr_skip_test("no NVIDIA test kernels (%s): nvcc was absent when this was built", NV_CUBIN);
  if (nv_cuda_load() != HSAD_OK) cr_skip_test("no NVIDIA GPU here: %s", hsad_last_error());
  hsad_status_t s = hsad_runtime_open(&e->rt);
  if (s) cr_skip_test("no NVIDIA GPU here: hsad_runtime_open: %s", hsad_last_error());
  for (uint32_t i = 0; i < hsad_device_count(e->rt) && !e->dev; i++) {
    hsad_device_t *d;
    OK(hsad_device_get(e->rt, i, &d));
    if (hsad_device_info(d)->vendor == HSAD_VENDOR_NVIDIA) e->dev = d;
  }
  if (!e->dev) {
    hsad_runtime_close(e->rt);
    cr_skip_test("no NVIDIA GPU here: the driver loaded and reports no device");
  }
  OK(hsad_program_load_file(e->dev, NV_CUBIN, &e->prog));
}

static void nv_env_close(nv_env_t *e) {
  hsad_program_destroy(e->prog);
  OK(hsad_runtime_close(e->rt));
}

static const hsad_device_kernel_t *kernel(nv_env_t *e, const char *name) {
  const hsad_device_kernel_t *k;
  OK(hsad_program_kernel(e->prog, name, &k));
  return k;
}

static hsad_launch_t launch1(uint32_t grid, uint32_t block, const hsad_karg_t *args, uint32_t n) {
  return (hsad_launch_t){.dims = 1, .grid = {grid, 1, 1}, .block = {block, 1, 1}, .args = args,
                         .arg_count = n};
}

static void *dev_alloc(nv_env_t *e, size_t size) {
  void *p;
  OK(hsad_mem_alloc(e->dev, HSAD_MEM_DEVICE, size, NULL, 0, &p));
  return p;
}

Test(nvidia, device_info) {
  nv_env_t e;
  nv_env(&e);
  const hsad_device_info_t *i = hsad_device_info(e.dev);
  cr_log_info("device %u: %s %s, %u SMs, cc %u.%u, %llu bytes, NUMA node %d, PCI %s, driver %s, "
              "CUDA %d", i->index, i->product_name, i->name, i->compute_units, i->cc_major,
              i->cc_minor, (unsigned long long)i->local_memory_bytes, i->numa_node, i->pci_bus_id,
              i->driver_version, i->cuda_version);
  cr_expect_eq(i->vendor, HSAD_VENDOR_NVIDIA);
  char name[16];
  snprintf(name, sizeof name, "sm_%u%u", i->cc_major, i->cc_minor);
  cr_expect_str_eq(i->name, name);
  cr_expect_gt(i->cc_major, 0u);
  cr_expect_gt(i->compute_units, 0u);
  cr_expect_eq(i->wavefront_size, 32u);
  cr_expect_eq(i->max_workgroup_size, 1024u);
  cr_expect_gt(i->local_memory_bytes, 1ull << 30);
  cr_expect_geq(i->cuda_version, 12040);
  cr_expect_neq(i->pci_bus_id[0], '\0');
  cr_expect_eq(hsad_program_kernel_count(e.prog), NV_KERNEL_COUNT);
  cr_expect_eq(hsad_program_device(e.prog), e.dev);
  cr_expect_null(hsad_program_codeobj(e.prog)); /* no AMD code object */
  nv_env_close(&e);
}

Test(nvidia, saxpy_exact) {
  nv_env_t e;
  nv_env(&e);
  enum { N = (1 << 20) + 3 }; /* a partial last block of 256 */
  float *hx = malloc(N * 4), *hy = malloc(N * 4), *out = malloc(N * 4);
  for (uint32_t i = 0; i < N; i++) hx[i] = (float)i, hy[i] = 1.0f;
  float *x = dev_alloc(&e, N * 4), *y = dev_alloc(&e, N * 4);
  hsad_completion_t c[2], done;
  OK(hsad_memcpy_async(e.dev, x, hx, N * 4, NULL, 0, NULL, HSAD_DEADLINE_NEVER, &c[0]));
  OK(hsad_memcpy_async(e.dev, y, hy, N * 4, NULL, 0, NULL, HSAD_DEADLINE_NEVER, &c[1]));
  hsad_queue_t *q;
  OK(hsad_queue_create(e.dev, NULL, &q));
  OK(hsad_queue_barrier(q, c, 2, HSAD_DEADLINE_NEVER, NULL));
  float a = 2.5f;
  uint32_t n = N;
  hsad_karg_t args[] = {HSAD_KARG_VAL(a), HSAD_KARG_PTR(x), HSAD_KARG_PTR(y), HSAD_KARG_VAL(n)};
  hsad_launch_t l = launch1(N, 256, args, 4);
  OK(hsad_kernel_dispatch(q, kernel(&e, "saxpy"), &l, HSAD_DEADLINE_NEVER, &done, NULL));
  OK(hsad_memcpy_async(e.dev, out, y, N * 4, &done, 1, NULL, HSAD_DEADLINE_NEVER, &c[0]));
  OK(hsad_completion_wait(&c[0], hsad_now_ns() + 10 * SEC));
  for (uint32_t i = 0; i < N; i++)
    cr_assert_eq(out[i], 2.5f * (float)i + 1.0f, "y[%u] = %.1f, want %.1f", i, out[i],
                 2.5f * (float)i + 1.0f);
  hsad_queue_destroy(q);
  OK(hsad_mem_free(x));
  OK(hsad_mem_free(y));
  free(hx), free(hy), free(out);
  nv_env_close(&e);
}

struct mixed { char c; short s; int i; double d; char t[3]; };
typedef struct { float x, y, z, w; } __attribute__((aligned(16))) f4_t;

Test(nvidia, byval_structs) {
  nv_env_t e;
  nv_env(&e);
  const hsad_device_kernel_t *k = kernel(&e, "byval");
  /* cuFuncGetParamInfo: offsets 0, 8, 32, 48, 56, 64; sizes 1, 24, 16, 8, 8, 8 */
  cr_expect_eq(hsad_device_kernel_desc(k)->kernarg_segment_size, 72u);
  long long *out = dev_alloc(&e, 12 * 8), host[12];
  char c = -7;
  struct mixed m = {.c = 3, .s = -1234, .i = 123456789, .d = 2.125, .t = {1, 2, 3}};
  f4_t v = {1.5f, -2.5f, 3.5f, 4.5f};
  double d = -8.25;
  unsigned long long u = 0xfedcba9876543210ull;
  hsad_karg_t args[] = {HSAD_KARG_VAL(c), HSAD_KARG_VAL(m), HSAD_KARG_VAL(v), HSAD_KARG_VAL(d),
                        HSAD_KARG_VAL(u), HSAD_KARG_PTR(out)};
  hsad_launch_t l = launch1(32, 32, args, 6);
  hsad_queue_t *q;
  OK(hsad_device_queue(e.dev, &q));
  hsad_completion_t done;
  OK(hsad_kernel_dispatch(q, k, &l, HSAD_DEADLINE_NEVER, &done, NULL));
  OK(hsad_completion_wait(&done, hsad_now_ns() + 10 * SEC));
  OK(hsad_memcpy(e.dev, host, out, sizeof host, NULL, hsad_now_ns() + 10 * SEC));
  long long want[12] = {-7, 3, -1234, 123456789, 2125, 10203, 15, -25, 35, 45, -8250,
                        (long long)0xfedcba9876543210ull};
  for (int i = 0; i < 12; i++) cr_expect_eq(host[i], want[i], "out[%d] = %lld, want %lld", i, host[i], want[i]);
  OK(hsad_mem_free(out));
  nv_env_close(&e);
}

Test(nvidia, argument_and_geometry_checks) {
  nv_env_t e;
  nv_env(&e);
  const hsad_device_kernel_t *k = kernel(&e, "saxpy");
  hsad_queue_t *q;
  OK(hsad_device_queue(e.dev, &q));
  float a = 1;
  double wide = 1;
  uint32_t n = 1;
  hsad_karg_t args[] = {HSAD_KARG_VAL(a), HSAD_KARG_PTR(NULL), HSAD_KARG_PTR(NULL), HSAD_KARG_VAL(n)};
  hsad_launch_t l = launch1(1, 1, args, 3);
  ERR_IS(hsad_kernel_dispatch(q, k, &l, 0, NULL, NULL), HSAD_ERR_ARG_COUNT,
         "%s: kernel 'saxpy' takes 4 explicit arguments, got 3", NV_CUBIN);
  args[0] = HSAD_KARG_VAL(wide);
  l.arg_count = 4;
  ERR_IS(hsad_kernel_dispatch(q, k, &l, 0, NULL, NULL), HSAD_ERR_ARG_SIZE,
         "%s: kernel 'saxpy': argument 0 has .size 4, value has 8 bytes", NV_CUBIN);
  args[0] = HSAD_KARG_VAL(a);
  args[3] = HSAD_KARG_LDS_BYTES(64);
  ERR_IS(hsad_kernel_dispatch(q, k, &l, 0, NULL, NULL), HSAD_ERR_ARG_KIND,
         "%s: kernel 'saxpy': argument 3 is a 4-byte parameter; dynamic shared memory is one "
         "HSAD_KARG_LDS_BYTES(n) after the kernel's 4 parameters", NV_CUBIN);
  args[3] = HSAD_KARG_VAL(n);
  l.block[0] = 2048;
  ERR_IS(hsad_kernel_dispatch(q, k, &l, 0, NULL, NULL), HSAD_ERR_WORKGROUP,
         "kernel saxpy: block[0]=2048 exceeds device %u's maximum 1024 "
         "(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)", hsad_device_info(e.dev)->index);
  l.block[0] = 1;
  l.dims = 0;
  ERR_IS(hsad_kernel_dispatch(q, k, &l, 0, NULL, NULL), HSAD_ERR_GRID,
         "kernel saxpy: dims 0, must be 1..3");
  l.dims = 1;
  l.grid[1] = 5;
  ERR_IS(hsad_kernel_dispatch(q, k, &l, 0, NULL, NULL), HSAD_ERR_GRID,
         "kernel saxpy: dimension 1 unused (dims 1) but grid[1]=5 block[1]=1; use 0 or 1");
  const hsad_device_kernel_t *nope;
  cr_expect_eq(hsad_program_kernel(e.prog, "nope", &nope), HSAD_ERR_KERNEL_NOT_FOUND);
  char want[512];
  snprintf(want, sizeof want, "%s: no kernel 'nope' (%u kernels: ", NV_CUBIN, NV_KERNEL_COUNT);
  cr_expect(!strncmp(hsad_last_error(), want, strlen(want)), "%s", hsad_last_error());
  nv_env_close(&e);
}

/* A launch of all zeros (dims, grid, block, arg_count, flags: what the AMD dispatch hot path
 * compares with its thread's entry) of an NVIDIA kernel on an NVIDIA queue, from a thread that
 * has no AMD launch-cache entry (an NVIDIA kernel's hot_id and an NVIDIA queue's hot key are 0):
 * the NVIDIA backend's refusal, never the AMD hot path (whose empty entry has no case to go
 * to). */
Test(nvidia, zero_launch_takes_the_backend) {
  nv_env_t e;
  nv_env(&e);
  const hsad_device_kernel_t *k = kernel(&e, "saxpy");
  hsad_queue_t *q;
  OK(hsad_device_queue(e.dev, &q));
  hsad_launch_t zero;
  memset(&zero, 0, sizeof zero);
  ERR_IS(hsad_kernel_dispatch(q, k, &zero, 0, NULL, NULL), HSAD_ERR_ARG_COUNT,
         "%s: kernel 'saxpy' takes 4 explicit arguments, got 0", NV_CUBIN);
  nv_env_close(&e);
}

Test(nvidia, dynamic_shared_memory) {
  nv_env_t e;
  nv_env(&e);
  const hsad_device_kernel_t *k = kernel(&e, "dyn_reverse");
  enum { B = 256, BLOCKS = 64, N = B * BLOCKS };
  int *data = dev_alloc(&e, N * 4), host[N];
  hsad_queue_t *q;
  OK(hsad_queue_create(e.dev, NULL, &q));
  /* 1 KiB (the block's ints), then 96 KiB: above the 48 KiB default (cuFuncSetAttribute) */
  uint32_t sizes[2] = {B * 4, 96 * 1024};
  for (int r = 0; r < 2; r++) {
    for (int i = 0; i < N; i++) host[i] = i;
    OK(hsad_memcpy(e.dev, data, host, sizeof host, NULL, hsad_now_ns() + 10 * SEC));
    uint32_t words = sizes[r] / 4;
    hsad_karg_t args[] = {HSAD_KARG_PTR(data), HSAD_KARG_VAL(words), HSAD_KARG_LDS_BYTES(sizes[r])};
    hsad_launch_t l = launch1(N, B, args, 3);
    OK(hsad_queue_wait_idle(q, HSAD_DEADLINE_NEVER));
    OK(hsad_kernel_dispatch(q, k, &l, HSAD_DEADLINE_NEVER, NULL, NULL));
    OK(hsad_queue_wait_idle(q, hsad_now_ns() + 10 * SEC));
    OK(hsad_memcpy(e.dev, host, data, sizeof host, NULL, hsad_now_ns() + 10 * SEC));
    for (int b = 0; b < BLOCKS; b++)
      for (int t = 0; t < B; t++)
        cr_assert_eq(host[b * B + t], b * B + (B - 1 - t), "%u bytes: data[%d] = %d, want %d",
                     sizes[r], b * B + t, host[b * B + t], b * B + (B - 1 - t));
  }
  uint32_t words = 1;
  uint32_t too_much = hsad_device_info(e.dev)->lds_bytes + 4;
  hsad_karg_t args[] = {HSAD_KARG_PTR(data), HSAD_KARG_VAL(words), HSAD_KARG_LDS_BYTES(too_much)};
  hsad_launch_t l = launch1(B, B, args, 3);
  ERR_IS(hsad_kernel_dispatch(q, k, &l, 0, NULL, NULL), HSAD_ERR_LDS_LIMIT,
         "kernel dyn_reverse: group segment of %u bytes (0 fixed + %u dynamic) exceeds device "
         "%u's LDS of %u bytes per workgroup", too_much, too_much,
         hsad_device_info(e.dev)->index, too_much - 4);
  hsad_queue_destroy(q);
  OK(hsad_mem_free(data));
  nv_env_close(&e);
}

typedef struct {
  hsad_queue_t *q;
  const hsad_device_kernel_t *k;
  unsigned long long *counter;
  uint32_t count;
  hsad_status_t status;
  char msg[512];
} producer_t;

static void *produce(void *arg) {
  producer_t *p = arg;
  hsad_karg_t args[] = {HSAD_KARG_PTR(p->counter)};
  hsad_launch_t l = launch1(32, 32, args, 1);
  for (uint32_t i = 0; i < p->count; i++) {
    hsad_status_t s = hsad_kernel_dispatch(p->q, p->k, &l, HSAD_DEADLINE_NEVER, NULL, NULL);
    if (s) {
      p->status = s;
      snprintf(p->msg, sizeof p->msg, "%s", hsad_last_error());
      break;
    }
  }
  return NULL;
}

Test(nvidia, four_threads_100k_dispatches_one_stream, .timeout = 120) {
  nv_env_t e;
  nv_env(&e);
  unsigned long long *counter = dev_alloc(&e, 8), zero = 0, got = 0;
  OK(hsad_memcpy(e.dev, counter, &zero, 8, NULL, hsad_now_ns() + 10 * SEC));
  hsad_queue_t *q;
  OK(hsad_queue_create(e.dev, NULL, &q));
  producer_t p[4];
  pthread_t t[4];
  uint64_t t0 = hsad_now_ns();
  for (int i = 0; i < 4; i++) {
    p[i] = (producer_t){.q = q, .k = kernel(&e, "add_one"), .counter = counter, .count = 100000};
    pthread_create(&t[i], NULL, produce, &p[i]);
  }
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  uint64_t t1 = hsad_now_ns();
  for (int i = 0; i < 4; i++) cr_assert_eq(p[i].status, HSAD_OK, "producer %d: %s", i, p[i].msg);
  OK(hsad_queue_wait_idle(q, hsad_now_ns() + 60 * SEC));
  OK(hsad_memcpy(e.dev, &got, counter, 8, NULL, hsad_now_ns() + 10 * SEC));
  cr_log_info("400000 dispatches from 4 threads in %.3f s (%.0f ns per dispatch)",
              (t1 - t0) / 1e9, (double)(t1 - t0) / 400000.0);
  cr_assert_eq(got, 400000ull, "counter %llu, want 400000", got);
  hsad_queue_destroy(q);
  OK(hsad_mem_free(counter));
  nv_env_close(&e);
}

Test(nvidia, cross_queue_barriers) {
  nv_env_t e;
  nv_env(&e);
  hsad_queue_t *q1, *q2;
  OK(hsad_queue_create(e.dev, NULL, &q1));
  OK(hsad_queue_create(e.dev, NULL, &q2));
  int *cell = dev_alloc(&e, 4), *dst = dev_alloc(&e, 64 * 4), host[64];
  const hsad_device_kernel_t *delay = kernel(&e, "delay_store"), *copy = kernel(&e, "copy_one");
  hsad_completion_t copied = {0}; /* ping-pong: q1's next store waits for q2's copy too */
  for (int r = 0; r < 64; r++) {
    int value = 1000 + r;
    unsigned long long ns = 2000000; /* 2 ms on the GPU before the store */
    int *slot = dst + r;
    hsad_karg_t a1[] = {HSAD_KARG_PTR(cell), HSAD_KARG_VAL(value), HSAD_KARG_VAL(ns)};
    hsad_karg_t a2[] = {HSAD_KARG_PTR(slot), HSAD_KARG_PTR(cell)};
    hsad_launch_t l1 = launch1(1, 1, a1, 3), l2 = launch1(1, 1, a2, 2);
    hsad_completion_t stored;
    OK(hsad_queue_barrier(q1, &copied, 1, HSAD_DEADLINE_NEVER, NULL));
    OK(hsad_kernel_dispatch(q1, delay, &l1, HSAD_DEADLINE_NEVER, &stored, NULL));
    OK(hsad_queue_barrier(q2, &stored, 1, HSAD_DEADLINE_NEVER, NULL)); /* cuStreamWaitEvent */
    OK(hsad_kernel_dispatch(q2, copy, &l2, HSAD_DEADLINE_NEVER, &copied, NULL));
  }
  hsad_completion_t end;
  OK(hsad_queue_flush(q2, HSAD_DEADLINE_NEVER, &end));
  OK(hsad_completion_wait(&end, hsad_now_ns() + 30 * SEC));
  OK(hsad_memcpy(e.dev, host, dst, sizeof host, NULL, hsad_now_ns() + 10 * SEC));
  for (int r = 0; r < 64; r++) cr_expect_eq(host[r], 1000 + r, "round %d: %d, want %d", r, host[r], 1000 + r);
  hsad_queue_destroy(q1);
  hsad_queue_destroy(q2);
  OK(hsad_mem_free(cell));
  OK(hsad_mem_free(dst));
  nv_env_close(&e);
}

typedef struct {
  hsad_completion_t c;
  hsad_status_t status;
  char msg[1024];
} waiter_t;

static void *wait_one(void *arg) {
  waiter_t *w = arg;
  w->status = hsad_completion_wait(&w->c, hsad_now_ns() + 30 * SEC);
  snprintf(w->msg, sizeof w->msg, "%s", hsad_last_error());
  return NULL;
}

Test(nvidia, illegal_address_reaches_every_waiter, .timeout = 60) {
  nv_env_t e;
  nv_env(&e);
  hsad_queue_t *q, *other, *shared;
  OK(hsad_queue_create(e.dev, NULL, &q));
  OK(hsad_queue_create(e.dev, NULL, &other));
  OK(hsad_device_queue(e.dev, &shared));
  int *cell = dev_alloc(&e, 4);
  unsigned long long ns = 200000000; /* 200 ms: the other queue is busy when the fault hits */
  int value = 1;
  hsad_karg_t a1[] = {HSAD_KARG_PTR(cell), HSAD_KARG_VAL(value), HSAD_KARG_VAL(ns)};
  hsad_karg_t a2[] = {HSAD_KARG_PTR(cell)};
  hsad_launch_t l1 = launch1(1, 1, a1, 3), l2 = launch1(1, 1, a2, 1);
  waiter_t w[4];
  OK(hsad_kernel_dispatch(other, kernel(&e, "delay_store"), &l1, HSAD_DEADLINE_NEVER, &w[3].c, NULL));
  /* the fault waits 50 ms behind a delay on its own queue, so its completion is issued before
   * the context is poisoned (a later call may report the fault itself) */
  unsigned long long ns50 = 50000000;
  hsad_karg_t a0[] = {HSAD_KARG_PTR(cell), HSAD_KARG_VAL(value), HSAD_KARG_VAL(ns50)};
  hsad_launch_t l0 = launch1(1, 1, a0, 3);
  OK(hsad_kernel_dispatch(q, kernel(&e, "delay_store"), &l0, HSAD_DEADLINE_NEVER, NULL, NULL));
  OK(hsad_kernel_dispatch(q, kernel(&e, "fault"), &l2, HSAD_DEADLINE_NEVER, &w[0].c, NULL));
  w[1].c = w[2].c = w[0].c;
  pthread_t t[4];
  for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, wait_one, &w[i]);
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 4; i++) {
    cr_log_info("waiter %d: %s: %s", i, hsad_status_name(w[i].status), w[i].msg);
    cr_expect_eq(w[i].status, HSAD_ERR_QUEUE_ERROR, "waiter %d: %s", i, w[i].msg);
    cr_expect(strstr(w[i].msg, "faulted: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access "
                              "was encountered)") != NULL, "waiter %d: %s", i, w[i].msg);
    cr_expect(strstr(w[i].msg, "its CUDA context is lost with every queue, program and "
                              "allocation made in it; destroy it and create a new queue") != NULL,
              "waiter %d: %s", i, w[i].msg);
  }
  cr_expect_eq(hsad_queue_error(q), HSAD_ERR_QUEUE_ERROR);
  cr_expect_eq(hsad_queue_error(shared), HSAD_ERR_QUEUE_ERROR);
  cr_expect(strstr(hsad_last_error(), "a shared queue: hsad_device_queue hands out its "
                                      "replacement") != NULL, "%s", hsad_last_error());
  hsad_completion_t again;
  cr_expect_eq(hsad_kernel_dispatch(q, kernel(&e, "fault"), &l2, 0, &again, NULL), HSAD_ERR_QUEUE_ERROR);
  /* CUDA's sticky errors survive cuDevicePrimaryCtxReset (seen on the H200, driver 580): the
   * device is unusable in this process, and every call on it says so and why */
  hsad_queue_destroy(q);
  hsad_queue_destroy(other);
  hsad_queue_t *fresh = NULL, *shared2 = NULL;
  static const char tail[] = "; the CUDA driver keeps the error after cuDevicePrimaryCtxReset "
                             "(cuDevicePrimaryCtxRetain answers CUDA_ERROR_ILLEGAL_ADDRESS (an "
                             "illegal memory access was encountered)): restart the process to "
                             "use the device again (CUDA's sticky errors)";
  cr_expect_eq(hsad_queue_create(e.dev, NULL, &fresh), HSAD_ERR_QUEUE_ERROR);
  const char *m = hsad_last_error();
  cr_expect(strlen(m) > sizeof tail && !strcmp(m + strlen(m) - (sizeof tail - 1), tail), "%s", m);
  char head[192];
  snprintf(head, sizeof head, "device %u (%s, sm_90) faulted: CUDA_ERROR_ILLEGAL_ADDRESS",
           hsad_device_info(e.dev)->index, hsad_device_info(e.dev)->product_name);
  cr_expect(!strncmp(m, head, strlen(head)), "%s\nwant it to start with %s", m, head);
  cr_expect_null(fresh);
  cr_expect_eq(hsad_device_queue(e.dev, &shared2), HSAD_ERR_QUEUE_ERROR);
  cr_expect_eq(hsad_queue_create(e.dev, NULL, &fresh), HSAD_ERR_QUEUE_ERROR, "again: the same");
  hsad_program_destroy(e.prog);
  e.prog = NULL;
  nv_env_close(&e);
}

Test(nvidia, copies_byte_exact) {
  nv_env_t e;
  nv_env(&e);
  static const size_t sizes[] = {1, 3, 4096 + 5, (16u << 20) + 3};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    size_t n = sizes[s];
    uint8_t *src = malloc(n), *back = malloc(n), *pinned, *pinned_back;
    for (size_t i = 0; i < n; i++) src[i] = (uint8_t)(i * 131 + s * 7 + 1);
    memset(back, 0, n);
    OK(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_FINE, n, NULL, 0, (void **)&pinned));
    OK(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_COARSE, n, NULL, 0, (void **)&pinned_back));
    memset(pinned_back, 0, n);
    uint8_t *d1 = dev_alloc(&e, n), *d2 = dev_alloc(&e, n);
    hsad_completion_t c1, c2, c3, c4;
    /* pageable H2D, D2D, D2H to pinned, pinned -> pageable through the device: a chain of
     * dependencies, each copy after the one before */
    OK(hsad_memcpy_async(e.dev, d1, src, n, NULL, 0, NULL, HSAD_DEADLINE_NEVER, &c1));
    OK(hsad_memcpy_async(e.dev, d2, d1, n, &c1, 1, NULL, HSAD_DEADLINE_NEVER, &c2));
    OK(hsad_memcpy_async(e.dev, pinned, d2, n, &c2, 1, NULL, HSAD_DEADLINE_NEVER, &c3));
    OK(hsad_completion_wait(&c3, hsad_now_ns() + 30 * SEC));
    cr_assert(!memcmp(pinned, src, n), "%zu bytes: H2D -> D2D -> D2H differs", n);
    OK(hsad_memcpy_async(e.dev, d1, pinned, n, NULL, 0, NULL, HSAD_DEADLINE_NEVER, &c4));
    OK(hsad_memcpy_async(e.dev, pinned_back, d1, n, &c4, 1, NULL, HSAD_DEADLINE_NEVER, &c1));
    OK(hsad_memcpy_async(e.dev, back, pinned_back, n, &c1, 1, NULL, HSAD_DEADLINE_NEVER, &c2));
    OK(hsad_completion_wait(&c2, hsad_now_ns() + 30 * SEC));
    cr_assert(!memcmp(back, src, n), "%zu bytes: pinned round trip differs", n);
    OK(hsad_mem_free(d1));
    OK(hsad_mem_free(d2));
    OK(hsad_mem_free(pinned));
    OK(hsad_mem_free(pinned_back));
    free(src), free(back);
  }
  cr_expect_eq(hsad_mem_free((void *)0x1000), HSAD_ERR_NOT_ALLOCATED, "%s", hsad_last_error());
  nv_env_close(&e);
}

/* What tells a staged copy: against the mock, that it passed no pageable pointer to the driver
 * (tools/cuda-mock counts those: cuda_mock_pageable_copies, minus: a direct copy lowers the mark
 * by exactly 1); on a GPU, in either build, that it took blocks of the device's pool
 * (hsad_host_pool_stats: nvidia/nv_pool.c's pool serves NVIDIA devices in both builds). */
static long staging_mark(hsad_device_t *dev) {
#ifdef NV_MOCK_LIB
  (void)dev;
  void *lib = dlopen(NV_MOCK_LIB, RTLD_NOW | RTLD_NOLOAD);
  long (*count)(void) = lib ? (long (*)(void))dlsym(lib, "cuda_mock_pageable_copies") : NULL;
  cr_assert_not_null(count, "the mock's cuda_mock_pageable_copies");
  return -count(); /* staged: no pageable copy, the mark stays */
#else
  hsad_host_pool_t *pool;
  hsad_host_pool_stats_t st;
  OK(hsad_host_pool_get(dev, &pool));
  OK(hsad_host_pool_stats(pool, &st));
  return (long)(st.hits + st.misses); /* staged: the mark grows */
#endif
}

static bool staging_seen(long before, long after) {
#ifdef NV_MOCK_LIB
  return after == before;
#else
  return after > before;
#endif
}

/* Copies with a pageable host side (nvidia/nv_memory.c): every strategy, forced, moves every
 * byte both ways at sizes around the 256 KiB chunk; by default host -> device copies up to
 * 64 KiB and device -> host copies up to 1 MiB are staged through the pool, larger ones are
 * not (the H200's measured thresholds); a strategy out of range is refused. */
Test(nvidia, copies_pageable_strategies, .timeout = 90) {
  nv_env_t e;
  nv_env(&e);
  static const size_t sizes[] = {1, 4096 + 5, (256u << 10) + 3, (1u << 20) + 7, (3u << 20) + 1};
  static const char *const names[] = {"default", "direct", "staged", "pipelined", "pinned"};
  size_t max = 4u << 20; /* the largest of sizes[] and picks[] */
  uint8_t *src = malloc(max), *back = malloc(max), *dev = dev_alloc(&e, max);
  for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++)
    for (uint32_t f = 0; f <= HSAD_COPY_PINNED + 1; f++) {
      size_t n = sizes[z];
      /* DIRECT is 0 (force 0 means by size): thresholds that put every size above 1 there */
      hsad_copy_options_t o = {.force = f > 1 ? f - 1 : 0, .staging_max = 1,
                               .pin_threshold = SIZE_MAX};
      for (size_t i = 0; i < n; i++) src[i] = (uint8_t)(i * 29 + z * 11 + f * 3 + 1);
      memset(back, 0, n);
      hsad_completion_t c1, c2;
      OK(hsad_memcpy_async(e.dev, dev, src, n, NULL, 0, f ? &o : NULL, HSAD_DEADLINE_NEVER, &c1));
      OK(hsad_memcpy_async(e.dev, back, dev, n, &c1, 1, f ? &o : NULL, HSAD_DEADLINE_NEVER, &c2));
      OK(hsad_completion_wait(&c2, hsad_now_ns() + 30 * SEC));
      size_t bad = 0;
      while (bad < n && back[bad] == src[bad]) bad++;
      cr_expect_eq(bad, n, "%s, %zu bytes: byte %zu came back 0x%02x, sent 0x%02x",
                   names[f], n, bad, bad < n ? back[bad] : 0,
                   bad < n ? src[bad] : 0);
    }
  /* (with AMD built, memory/copy_async.c serves hsad_memcpy_async and hands NVIDIA copies
   * over with their options: copies_forced_strategy_honoured tells the strategies apart) */
  static const struct { size_t n; int h2d; int staged; } picks[] = {
      {4u << 10, 1, 1}, {64u << 10, 1, 1}, {(64u << 10) + 1, 1, 0}, {4u << 20, 1, 0},
      {1u << 20, 0, 1}, {(1u << 20) + 1, 0, 0}, {4u << 20, 0, 0}};
  for (size_t i = 0; i < sizeof picks / sizeof picks[0]; i++) {
    long before = staging_mark(e.dev);
    hsad_completion_t c;
    OK(hsad_memcpy_async(e.dev, picks[i].h2d ? (void *)dev : back, picks[i].h2d ? (void *)src : dev,
                         picks[i].n, NULL, 0, NULL, HSAD_DEADLINE_NEVER, &c));
    OK(hsad_completion_wait(&c, hsad_now_ns() + 30 * SEC));
    bool staged = staging_seen(before, staging_mark(e.dev));
    cr_expect_eq(staged, picks[i].staged, "%s %zu bytes: staged %d, want %d",
                 picks[i].h2d ? "H2D" : "D2H", picks[i].n, staged, picks[i].staged);
  }
  hsad_copy_options_t bad = {.force = 7};
  hsad_completion_t c;
  ERR_IS(hsad_memcpy_async(e.dev, dev, src, 64, NULL, 0, &bad, HSAD_DEADLINE_NEVER, &c),
         HSAD_ERR_INVALID_ARGUMENT, "hsad_memcpy_async: options->force 7 is not an "
         "hsad_copy_strategy_t (0..3)");
  OK(hsad_mem_free(dev));
  free(src), free(back);
  nv_env_close(&e);
}

/* The caller's hsad_copy_options_t reaches the NVIDIA backend through hsad_memcpy and
 * hsad_memcpy_async in both builds (with AMD: memory/copy.c and copy_async.c hand them over):
 * each copy below is forced or given thresholds that pick the strategy its default would not
 * (H2D 4 KiB and D2H 64 KiB are staged by default, 4 MiB both ways is not); every byte arrives;
 * a strategy out of range is refused with the backend's message by both calls. */
Test(nvidia, copies_forced_strategy_honoured, .timeout = 60) {
  nv_env_t e;
  nv_env(&e);
  size_t max = 4u << 20;
  uint8_t *src = malloc(max), *back = malloc(max), *dev = dev_alloc(&e, max);
  const hsad_copy_options_t direct = {.staging_max = 1, .pin_threshold = SIZE_MAX};
  const hsad_copy_options_t staged = {.force = HSAD_COPY_STAGED};
  const hsad_copy_options_t pipelined = {.force = HSAD_COPY_PIPELINED};
  static const char *const calls[] = {"hsad_memcpy", "hsad_memcpy_async"};
  const struct { size_t n; const hsad_copy_options_t *o; bool staged; const char *what; } cs[] = {
      {4u << 10, &direct, false, "H2D 4 KiB, staging_max 1"},
      {4u << 20, &staged, true, "H2D 4 MiB, force STAGED"},
      {4u << 20, &pipelined, true, "D2H 4 MiB, force PIPELINED"},
      {64u << 10, &direct, false, "D2H 64 KiB, staging_max 1"}};
  for (uint32_t call = 0; call < 2; call++)
    for (uint32_t i = 0; i < 4; i++) {
      bool h2d = i < 2;
      size_t n = cs[i].n;
      for (size_t k = 0; k < n; k++) src[k] = (uint8_t)(k * 13 + i * 5 + call + 1);
      memset(back, 0, n);
      if (!h2d) OK(hsad_memcpy(e.dev, dev, src, n, NULL, HSAD_DEADLINE_NEVER)); /* fill dev */
      long before = staging_mark(e.dev);
      void *dst = h2d ? (void *)dev : back;
      const void *from = h2d ? (const void *)src : dev;
      if (call == 0) {
        OK(hsad_memcpy(e.dev, dst, from, n, cs[i].o, hsad_now_ns() + 30 * SEC));
      } else {
        hsad_completion_t c;
        OK(hsad_memcpy_async(e.dev, dst, from, n, NULL, 0, cs[i].o, HSAD_DEADLINE_NEVER, &c));
        OK(hsad_completion_wait(&c, hsad_now_ns() + 30 * SEC));
      }
      long after = staging_mark(e.dev);
#ifdef NV_MOCK_LIB
      cr_expect_eq(before - after, cs[i].staged ? 0 : 1, "%s, %s: %ld pageable copies, want %d",
                   calls[call], cs[i].what, before - after, cs[i].staged ? 0 : 1);
#endif
      cr_expect_eq(staging_seen(before, after), cs[i].staged, "%s, %s: staged %d, want %d",
                   calls[call], cs[i].what, staging_seen(before, after), cs[i].staged);
      if (h2d) OK(hsad_memcpy(e.dev, back, dev, n, NULL, HSAD_DEADLINE_NEVER));
      cr_expect(!memcmp(src, back, n), "%s, %s: the bytes differ", calls[call], cs[i].what);
    }
  hsad_copy_options_t bad = {.force = 7};
  ERR_IS(hsad_memcpy(e.dev, dev, src, 64, &bad, HSAD_DEADLINE_NEVER), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_memcpy_async: options->force 7 is not an hsad_copy_strategy_t (0..3)");
  OK(hsad_mem_free(dev));
  free(src), free(back);
  nv_env_close(&e);
}

/* The pinned host pool of the device's NUMA node (nvidia/nv_pool.c, in both builds: with AMD,
 * memory/host_pool.c hands the NVIDIA device's pool and every call on it to the backend):
 * classes, hits and misses counted exactly, a GPU kernel writing a pool block, copies from and
 * to pool blocks byte-exact, the free's refusals with their messages, trims. */
Test(nvidia, host_pool) {
  nv_env_t e;
  nv_env(&e);
  hsad_host_pool_t *pool, *again;
  OK(hsad_host_pool_get(e.dev, &pool));
  OK(hsad_host_pool_get(e.dev, &again));
  cr_expect_eq(pool, again, "one pool per NUMA node");
  OK(hsad_host_pool_set_max_cached(pool, 64ull << 20));
  hsad_host_pool_stats_t st;
  OK(hsad_host_pool_stats(pool, &st));
  int32_t node = hsad_device_info(e.dev)->numa_node;
  cr_expect_eq(st.numa_node, node < 0 ? UINT32_MAX : (uint32_t)node);
  uint64_t hits0 = st.hits, misses0 = st.misses;
  /* 1 byte and 4096 share the 4 KiB class; 4097 is 8 KiB; 300 MiB is above the classes */
  void *a, *b, *c, *big;
  OK(hsad_host_pool_alloc(pool, 1, &a));
  OK(hsad_host_pool_alloc(pool, 4097, &b));
  OK(hsad_host_pool_alloc(pool, (size_t)300 << 20, &big));
  cr_expect_eq((uintptr_t)a % 4096, 0u, "page-aligned");
  OK(hsad_host_pool_stats(pool, &st));
  cr_expect_eq(st.misses - misses0, 3u);
  cr_expect_eq(st.blocks_in_use, 3u);
  cr_expect_eq(st.bytes_in_use, 4096u + 8192u + (300ull << 20));
  OK(hsad_host_pool_free(pool, a));
  OK(hsad_host_pool_alloc(pool, 4096, &c));
  cr_expect_eq(c, a, "the cached 4 KiB block comes back");
  OK(hsad_host_pool_stats(pool, &st));
  cr_expect_eq(st.hits - hits0, 1u);
  /* the GPU writes into a pool block (pinned, mapped at the same address) */
  unsigned long long *counter = c;
  *counter = 41;
  hsad_queue_t *q;
  OK(hsad_queue_create(e.dev, NULL, &q));
  hsad_karg_t ka[] = {HSAD_KARG_PTR(counter)};
  hsad_launch_t l = launch1(1, 1, ka, 1);
  hsad_completion_t done;
  OK(hsad_kernel_dispatch(q, kernel(&e, "add_one"), &l, HSAD_DEADLINE_NEVER, &done, NULL));
  OK(hsad_completion_wait(&done, hsad_now_ns() + 10 * SEC));
  cr_expect_eq(__atomic_load_n(counter, __ATOMIC_SEQ_CST), 42u);
  /* pool -> device -> pool, byte-exact */
  uint8_t *src = b, *back;
  OK(hsad_host_pool_alloc(pool, 8192, (void **)&back));
  for (int i = 0; i < 8192; i++) src[i] = (uint8_t)(i * 7 + 3), back[i] = 0;
  void *d = dev_alloc(&e, 8192);
  hsad_completion_t c1, c2;
  OK(hsad_memcpy_async(e.dev, d, src, 8192, NULL, 0, NULL, HSAD_DEADLINE_NEVER, &c1));
  OK(hsad_memcpy_async(e.dev, back, d, 8192, &c1, 1, NULL, HSAD_DEADLINE_NEVER, &c2));
  OK(hsad_completion_wait(&c2, hsad_now_ns() + 10 * SEC));
  cr_expect(!memcmp(src, back, 8192), "pool -> device -> pool differs");
  /* refusals */
  ERR_IS(hsad_host_pool_free(pool, (char *)c + 64), HSAD_ERR_NOT_ALLOCATED,
         "hsad_host_pool_free: no block of node %d's pool starts at %p", node, (char *)c + 64);
  OK(hsad_host_pool_free(pool, c));
  ERR_IS(hsad_host_pool_free(pool, c), HSAD_ERR_FREED,
         "hsad_host_pool_free: %p is cached in node %d's pool already (freed twice)", c, node);
  ERR_IS(hsad_host_pool_alloc(pool, 0, &c), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_host_pool_alloc: size is 0");
  ERR_IS(hsad_host_pool_alloc(pool, 64, NULL), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_host_pool_alloc: out_ptr is NULL");
  OK(hsad_mem_free(back)); /* hsad_mem_free takes pool blocks too */
  OK(hsad_host_pool_free(pool, b));
  OK(hsad_host_pool_free(pool, big)); /* oversize: released, not cached */
  OK(hsad_host_pool_stats(pool, &st));
  cr_expect_eq(st.blocks_in_use, 0u);
  cr_expect_eq(st.bytes_cached, 4096u + 2 * 8192u); /* c, b and back */
  uint64_t released = 0;
  OK(hsad_host_pool_trim(pool, 0, &released));
  cr_expect_eq(released, 4096u + 2 * 8192u);
  OK(hsad_host_pool_stats(pool, &st));
  cr_expect_eq(st.bytes_cached, 0u);
  cr_expect_eq(st.blocks_cached, 0u);
  OK(hsad_mem_free(d));
  hsad_queue_destroy(q);
  nv_env_close(&e);
}

#ifndef HSAD_NO_AMD
#ifndef TEST_KERNDIR
#define TEST_KERNDIR "build/kernels"
#endif
/* Both vendors in one runtime (kfd-emu's gfx90a first, then the NVIDIA device): enumeration
 * with the vendor, each kernel refused on the other vendor's queue with its message, and an
 * NVIDIA queue ordered after an AMD completion (waited on the host: no GPU waits across). */
Test(nvidia, both_vendors_one_runtime) {
  nv_env_t e;
  nv_env(&e);
  hsad_device_t *amd = NULL;
  for (uint32_t i = 0; i < hsad_device_count(e.rt) && !amd; i++) {
    hsad_device_t *d;
    OK(hsad_device_get(e.rt, i, &d));
    if (hsad_device_info(d)->vendor == HSAD_VENDOR_AMD) amd = d;
  }
  if (!amd) {
    nv_env_close(&e);
    cr_skip_test("no AMD device next to the NVIDIA one (run under kfd-emu for both)");
  }
  cr_expect_lt(hsad_device_info(amd)->index, hsad_device_info(e.dev)->index, "AMD agents first");
  cr_expect_eq(hsad_device_agent(e.dev).handle, 0u);
  hsad_program_t *ap;
  OK(hsad_program_load_file(amd, TEST_KERNDIR "/saxpy-gfx90a-v5.hsaco", &ap));
  const hsad_device_kernel_t *ak, *nk = kernel(&e, "saxpy");
  OK(hsad_program_kernel(ap, "saxpy", &ak));
  hsad_queue_t *aq, *nq;
  OK(hsad_device_queue(amd, &aq));
  OK(hsad_queue_create(e.dev, NULL, &nq));
  cr_expect_null(hsad_queue_hsa(nq));
  hsad_launch_t l = launch1(1, 1, NULL, 0);
  ERR_IS(hsad_kernel_dispatch(nq, ak, &l, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT,
         "kernel saxpy is loaded on an AMD device, the queue is on device %u (NVIDIA)",
         hsad_device_info(e.dev)->index);
  ERR_IS(hsad_kernel_dispatch(aq, nk, &l, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT,
         "kernel saxpy is loaded on a nvidia device, the queue is on device %u (AMD)",
         hsad_device_info(amd)->index);
  hsad_completion_t ac, nc;
  OK(hsad_queue_flush(aq, HSAD_DEADLINE_NEVER, &ac));
  OK(hsad_queue_barrier(nq, &ac, 1, hsad_now_ns() + 10 * SEC, &nc));
  OK(hsad_completion_wait(&nc, hsad_now_ns() + 10 * SEC));
  OK(hsad_queue_barrier(aq, &nc, 1, hsad_now_ns() + 10 * SEC, &ac)); /* and back */
  OK(hsad_completion_wait(&ac, hsad_now_ns() + 10 * SEC));
  hsad_completion_t both[2] = {ac, nc};
  OK(hsad_completion_wait_all(both, 2, hsad_now_ns() + 10 * SEC));
  uint32_t which = 9;
  OK(hsad_completion_wait_any(both, 2, hsad_now_ns() + 10 * SEC, &which));
  cr_expect_lt(which, 2u);
  hsad_queue_destroy(nq);
  hsad_program_destroy(ap);
  nv_env_close(&e);
}
#endif

/* ---- graphs as CUDA graphs (issue 22; fusion/hsad_fusion.h, nvidia/nv_graph.c) ----------- */

#include "fusion/hsad_fusion.h"

/* x = x * mul + add, and dst = dst * 31 + src (mod 2^32), as nv_kernels.cu's affine and mix */
static void host_affine(uint32_t *x, uint32_t n, uint32_t mul, uint32_t add) {
  for (uint32_t i = 0; i < n; i++) x[i] = x[i] * mul + add;
}
static void host_mix(uint32_t *d, const uint32_t *s, uint32_t n) {
  for (uint32_t i = 0; i < n; i++) d[i] = d[i] * 31u + s[i];
}

typedef struct {
  uint32_t mul, add, n;
  hsad_karg_t args[4];
  hsad_launch_t l;
} affine_t;

static hsad_launch_t *affine_launch(affine_t *a, uint32_t *x, uint32_t mul, uint32_t add, uint32_t n) {
  a->mul = mul, a->add = add, a->n = n;
  a->args[0] = (hsad_karg_t)HSAD_KARG_PTR(x);
  a->args[1] = (hsad_karg_t)HSAD_KARG_VAL(a->mul);
  a->args[2] = (hsad_karg_t)HSAD_KARG_VAL(a->add);
  a->args[3] = (hsad_karg_t)HSAD_KARG_VAL(a->n);
  a->l = launch1(n, 256, a->args, 4);
  return &a->l;
}

/* Issue 21 on NVIDIA: typed values (C's literal forms: typed bytes) and SCALAR values (the
 * value inside the hsad_karg_t, C++'s literal forms) are accepted as bytes of their size, by a
 * dispatch and by graph updates: the fast path (same tags and types: a SCALAR's 4 bytes written
 * from the value itself) and the general path (another type); x equals the host's replay. A
 * SCALAR without a type is refused. */
Test(nvidia, typed_and_scalar_values, .timeout = 60) {
  nv_env_t e;
  nv_env(&e);
  enum { N = 1000 };
  uint32_t *x, hx[N];
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&x));
  for (uint32_t i = 0; i < N; i++) x[i] = hx[i] = i;
  const hsad_device_kernel_t *kaff = kernel(&e, "affine");
  hsad_queue_t *q;
  OK(hsad_queue_create(e.dev, NULL, &q));
  hsad_karg_t args[4] = {HSAD_KARG_PTR(x), HSAD_KARG_U32(3),
                         {.tag = HSAD_KARG_SCALAR, .type = HSAD_KARG_TYPE_U32, .size = 4,
                          .scalar = 1},
                         HSAD_KARG_U32(N)};
  hsad_launch_t l = launch1(N, 256, args, 4);
  hsad_completion_t done;
  OK(hsad_kernel_dispatch(q, kaff, &l, HSAD_DEADLINE_NEVER, &done, NULL));
  OK(hsad_completion_wait(&done, hsad_now_ns() + 10 * SEC));
  host_affine(hx, N, 3, 1);
  hsad_graph_t *g;
  OK(hsad_graph_create(0, &g));
  uint32_t na;
  OK(hsad_graph_add_kernel(g, "A", 0, kaff, &l, NULL, 0, &na));
  hsad_graph_exec_t *ex;
  OK(hsad_graph_instantiate(g, &q, 1, &ex));
  hsad_graph_destroy(g);
  uint32_t mul = 5;
  struct {
    hsad_karg_t mul, add;
    uint32_t m, a;
  } ups[3] = {
      {HSAD_KARG_U32(7), {.tag = HSAD_KARG_SCALAR, .type = HSAD_KARG_TYPE_U32, .size = 4,
                          .scalar = 2}, 7, 2}, /* same tags and types: the fast path */
      {{.tag = HSAD_KARG_BYTES, .size = 4, .bytes = &mul},
       {.tag = HSAD_KARG_SCALAR, .type = HSAD_KARG_TYPE_I32, .size = 4, .scalar = 4}, 5, 4},
      {HSAD_KARG_U32(3), {.tag = HSAD_KARG_SCALAR, .type = HSAD_KARG_TYPE_I32, .size = 4,
                          .scalar = 9}, 3, 9}};
  for (int u = 0; u < 3; u++) {
    args[1] = ups[u].mul;
    args[2] = ups[u].add;
    OK(hsad_graph_exec_update(ex, na, &l));
    OK(hsad_graph_launch(ex, 0, HSAD_DEADLINE_NEVER, &done, NULL));
    OK(hsad_completion_wait(&done, hsad_now_ns() + 10 * SEC));
    host_affine(hx, N, ups[u].m, ups[u].a);
    for (uint32_t i = 0; i < N; i++)
      cr_assert_eq(x[i], hx[i], "update %d: x[%u] = %u, want %u", u, i, x[i], hx[i]);
  }
  args[2] = (hsad_karg_t){.tag = HSAD_KARG_SCALAR, .size = 4, .scalar = 1};
  ERR_IS(hsad_kernel_dispatch(q, kaff, &l, HSAD_DEADLINE_NEVER, NULL, NULL), HSAD_ERR_ARG_KIND,
         "%s: kernel 'affine': argument 2: type 0 is not a 4-byte hsad_karg_type_t",
         NV_CUBIN);
  hsad_graph_exec_destroy(ex);
  hsad_queue_destroy(q);
  hsad_buffer_free(x);
  nv_env_close(&e);
}

/* A C++ kernel's by-value parameter types come from its mangled name (scale<float>(float *,
 * float, unsigned)): a typed value of the other class is refused on dispatch, on graph
 * instantiate and on a graph update, with AMD's message form; integers of either signedness pass for each
 * other; an untyped value of the right size passes (sizes only, as before); the results of the
 * accepted launches exact. */
Test(nvidia, cxx_kernel_types_checked, .timeout = 60) {
  nv_env_t e;
  nv_env(&e);
  enum { N = 300 };
  float *x, hx[N];
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&x));
  for (uint32_t i = 0; i < N; i++) x[i] = hx[i] = (float)i;
  const hsad_device_kernel_t *k = kernel(&e, "_Z5scaleIfEvPT_S0_j");
  hsad_queue_t *q;
  OK(hsad_queue_create(e.dev, NULL, &q));
  float f = 2.0f;
  int32_t n_signed = N;
  uint32_t n_bytes = N;
  hsad_karg_t args[3] = {HSAD_KARG_PTR(x), HSAD_KARG_VAL(f), HSAD_KARG_VAL(n_signed)};
  hsad_launch_t l = launch1(N, 128, args, 3);
  hsad_completion_t done;
  OK(hsad_kernel_dispatch(q, k, &l, HSAD_DEADLINE_NEVER, &done, NULL)); /* i32 for unsigned */
  OK(hsad_completion_wait(&done, hsad_now_ns() + 10 * SEC));
  for (uint32_t i = 0; i < N; i++) hx[i] *= 2.0f;
  args[1] = (hsad_karg_t)HSAD_KARG_I32(3);
  ERR_IS(hsad_kernel_dispatch(q, k, &l, HSAD_DEADLINE_NEVER, NULL, NULL), HSAD_ERR_ARG_KIND,
         "%s: kernel '_Z5scaleIfEvPT_S0_j': argument 1 is float (floating-point), the value "
         "given is i32 (integer)", NV_CUBIN);
  args[1] = (hsad_karg_t)HSAD_KARG_VAL(f);
  args[2] = (hsad_karg_t)HSAD_KARG_F32(1.0f);
  ERR_IS(hsad_kernel_dispatch(q, k, &l, HSAD_DEADLINE_NEVER, NULL, NULL), HSAD_ERR_ARG_KIND,
         "%s: kernel '_Z5scaleIfEvPT_S0_j': argument 2 is unsigned int (integer), the value "
         "given is f32 (floating-point)", NV_CUBIN);
  hsad_graph_t *g;
  hsad_graph_exec_t *ex;
  uint32_t node;
  OK(hsad_graph_create(0, &g)); /* recorded as given, checked at instantiate */
  OK(hsad_graph_add_kernel(g, "S", 0, k, &l, NULL, 0, NULL));
  ERR_IS(hsad_graph_instantiate(g, &q, 1, &ex), HSAD_ERR_ARG_KIND,
         "node S: %s: kernel '_Z5scaleIfEvPT_S0_j': argument 2 is unsigned int (integer), the value "
         "given is f32 (floating-point)", NV_CUBIN);
  hsad_graph_destroy(g);
  OK(hsad_graph_create(0, &g));
  args[2] = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .size = 4, .bytes = &n_bytes}; /* untyped */
  OK(hsad_graph_add_kernel(g, "S", 0, k, &l, NULL, 0, &node));
  OK(hsad_graph_instantiate(g, &q, 1, &ex));
  hsad_graph_destroy(g);
  f = 3.0f; /* read at update */
  args[1] = (hsad_karg_t)HSAD_KARG_VAL(f);
  OK(hsad_graph_exec_update(ex, node, &l));
  OK(hsad_graph_launch(ex, 0, HSAD_DEADLINE_NEVER, &done, NULL));
  OK(hsad_completion_wait(&done, hsad_now_ns() + 10 * SEC));
  for (uint32_t i = 0; i < N; i++) hx[i] *= 3.0f;
  args[1] = (hsad_karg_t)HSAD_KARG_U32(5);
  ERR_IS(hsad_graph_exec_update(ex, node, &l), HSAD_ERR_ARG_KIND,
         "node S: %s: kernel '_Z5scaleIfEvPT_S0_j': argument 1 is float (floating-point), the value "
         "given is u32 (integer)", NV_CUBIN);
  OK(hsad_graph_launch(ex, 0, HSAD_DEADLINE_NEVER, &done, NULL)); /* the node as it was */
  OK(hsad_completion_wait(&done, hsad_now_ns() + 10 * SEC));
  for (uint32_t i = 0; i < N; i++) hx[i] *= 3.0f;
  for (uint32_t i = 0; i < N; i++)
    cr_assert_eq(x[i], hx[i], "x[%u] = %g, want %g", i, (double)x[i], (double)hx[i]);
  hsad_graph_exec_destroy(ex);
  hsad_queue_destroy(q);
  hsad_buffer_free(x);
  nv_env_close(&e);
}

/* A chain A -> B -> C on one queue (A: x = 3x + 1, B: x = 5x + 2, C: y = 31y + x), launched
 * 1,000 times back to back with no wait between; node A is updated to x = 7x + 3 after launch
 * 500 while launches are in flight; then updated again and launched once sequentially. Every element of x and y after the last launch equals the
 * host's replay of the 1,000 launches in order (each y folds in every intermediate x, so a
 * launch out of order, lost, or seeing the update early or late changes it). */
Test(nvidia, graph_chain_updated_1000_launches, .timeout = 120) {
  nv_env_t e;
  nv_env(&e);
  enum { N = 4099, L = 1000 };
  uint32_t *x, *y, *hx = malloc(N * 4), *hy = malloc(N * 4);
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&x));
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&y));
  for (uint32_t i = 0; i < N; i++) x[i] = hx[i] = i, y[i] = hy[i] = 1000000u + i;
  const hsad_device_kernel_t *kaff = kernel(&e, "affine"), *kmix = kernel(&e, "mix");
  hsad_queue_t *q;
  OK(hsad_queue_create(e.dev, NULL, &q));
  hsad_graph_t *g;
  OK(hsad_graph_create(HSAD_GRAPH_CAPTURE, &g));
  affine_t a, b, upd;
  uint32_t n = N, na, nb, nc;
  hsad_karg_t margs[] = {HSAD_KARG_PTR(y), HSAD_KARG_PTR(x), HSAD_KARG_VAL(n)};
  hsad_launch_t lm = launch1(N, 256, margs, 3);
  OK(hsad_graph_add_kernel(g, "A", 0, kaff, affine_launch(&a, x, 3, 1, N), NULL, 0, &na));
  OK(hsad_graph_add_kernel(g, "B", 0, kaff, affine_launch(&b, x, 5, 2, N), NULL, 0, &nb));
  OK(hsad_graph_add_kernel(g, "C", 0, kmix, &lm, NULL, 0, &nc));
  cr_assert_eq(na, 0u);
  cr_assert_eq(nc, 2u);
  hsad_graph_exec_t *x0;
  OK(hsad_graph_instantiate(g, &q, 1, &x0));
  hsad_graph_destroy(g); /* the exec does not need it */
  cr_assert_eq(hsad_graph_exec_queue_count(x0), 1u);
  cr_assert_eq(hsad_graph_exec_queue(x0, 0), q);
  cr_assert_null(hsad_graph_exec_rollback_detail(x0));
  hsad_completion_t done;
  for (uint32_t i = 0; i < L; i++) {
    hsad_graph_rollback_t why = HSAD_GRAPH_ROLLBACK_COUNT;
    if (i == L / 2) OK(hsad_graph_exec_update(x0, na, affine_launch(&upd, x, 7, 3, N)));
    OK(hsad_graph_launch(x0, 0, HSAD_DEADLINE_NEVER, i == L - 1 ? &done : NULL, &why));
    cr_assert_eq(why, HSAD_GRAPH_ROLLBACK_NONE, "launch %u: %s", i, hsad_graph_rollback_name(why));
    host_affine(hx, N, i < L / 2 ? 3 : 7, i < L / 2 ? 1 : 3);
    host_affine(hx, N, 5, 2);
    host_mix(hy, hx, N);
  }
  /* one more update (the fast path's other image), then the sequential path: it launches
   * what the updates left (x = 9x + 4 for A) */
  OK(hsad_graph_exec_update(x0, na, affine_launch(&upd, x, 9, 4, N)));
  hsad_graph_rollback_t why;
  OK(hsad_graph_launch(x0, HSAD_GRAPH_SEQUENTIAL, HSAD_DEADLINE_NEVER, &done, &why));
  cr_assert_eq(why, HSAD_GRAPH_ROLLBACK_REQUESTED);
  host_affine(hx, N, 9, 4);
  host_affine(hx, N, 5, 2);
  host_mix(hy, hx, N);
  OK(hsad_completion_wait(&done, hsad_now_ns() + 60 * SEC));
  for (uint32_t i = 0; i < N; i++) {
    cr_assert_eq(x[i], hx[i], "x[%u] = %u, want %u", i, x[i], hx[i]);
    cr_assert_eq(y[i], hy[i], "y[%u] = %u, want %u", i, y[i], hy[i]);
  }
  uint64_t counts[HSAD_GRAPH_ROLLBACK_COUNT];
  hsad_graph_exec_counters(x0, counts);
  cr_expect_eq(counts[HSAD_GRAPH_ROLLBACK_NONE], (uint64_t)L);
  cr_expect_eq(counts[HSAD_GRAPH_ROLLBACK_REQUESTED], 1u);
  hsad_graph_exec_destroy(x0);
  hsad_queue_destroy(q);
  hsad_buffer_free(x);
  hsad_buffer_free(y);
  free(hx), free(hy);
  nv_env_close(&e);
}

typedef struct {
  uint32_t *a, *b, *c, *p;
  uint32_t node_c, node_fa;
  affine_t aa, ab;
  uint32_t n;
  hsad_karg_t margs[3];
} forkjoin_t;

/* fill a = 2 (lane 0), fill b = 3 (lane 1) -> A: a = 3a + 1 = 7 (lane 0), B: b = 5b + 2 = 17
 * (lane 1) -> barrier BR (lane 1, after A and B) and J: a = 31a + b = 234 (lane 0, after A and B)
 * -> copy C: c = a (lane 1, after J and BR): the fork to a second queue and the join back. */
static hsad_graph_t *forkjoin_graph(nv_env_t *e, forkjoin_t *f, uint32_t n) {
  hsad_graph_t *g;
  uint32_t fa, fb, na, nb, br, j, deps[2];
  f->n = n;
  OK(hsad_graph_create(0, &g));
  OK(hsad_graph_add_fill(g, "FA", 0, f->a, 2, 4, n, NULL, 0, &fa));
  OK(hsad_graph_add_fill(g, "FB", 1, f->b, 3, 4, n, NULL, 0, &fb));
  OK(hsad_graph_add_kernel(g, "A", 0, kernel(e, "affine"), affine_launch(&f->aa, f->a, 3, 1, n),
                           &fa, 1, &na));
  OK(hsad_graph_add_kernel(g, "B", 1, kernel(e, "affine"), affine_launch(&f->ab, f->b, 5, 2, n),
                           &fb, 1, &nb));
  deps[0] = na, deps[1] = nb;
  OK(hsad_graph_add_barrier(g, "BR", 1, deps, 2, &br));
  f->margs[0] = (hsad_karg_t)HSAD_KARG_PTR(f->a);
  f->margs[1] = (hsad_karg_t)HSAD_KARG_PTR(f->b);
  f->margs[2] = (hsad_karg_t)HSAD_KARG_VAL(f->n);
  hsad_launch_t lm = launch1(n, 256, f->margs, 3);
  OK(hsad_graph_add_kernel(g, "J", 0, kernel(e, "mix"), &lm, deps, 2, &j));
  deps[0] = j, deps[1] = br;
  OK(hsad_graph_add_copy(g, "C", 1, f->c, f->a, n * 4, deps, 2, &f->node_c));
  f->node_fa = fa;
  return g;
}

static void forkjoin_check(forkjoin_t *f, uint32_t cval) {
  for (uint32_t i = 0; i < f->n; i++) {
    cr_assert_eq(f->a[i], 234u, "a[%u] = %u", i, f->a[i]);
    cr_assert_eq(f->b[i], 17u, "b[%u] = %u", i, f->b[i]);
    cr_assert_eq(f->c[i], cval, "c[%u] = %u, want %u", i, f->c[i], cval);
  }
}

/* The fork/join over two queues, fused into one CUDA graph; stream order on both queues:
 * the launch waits for a 200 us delay_store already on queue 1 (it would otherwise land after
 * the graph's copy into c[0]), and a kernel submitted to queue 1 after the launch, with no
 * dependency, sees the graph's result (c = 2 x 234). Then the same through
 * HSAD_GRAPH_SEQUENTIAL (the rollback path), and 3 fused launches back to back. */
Test(nvidia, graph_fork_join_two_queues) {
  nv_env_t e;
  nv_env(&e);
  enum { N = 1000 };
  forkjoin_t f;
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&f.a));
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&f.b));
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&f.c));
  hsad_queue_t *qs[2];
  OK(hsad_queue_create(e.dev, NULL, &qs[0]));
  OK(hsad_queue_create(e.dev, NULL, &qs[1]));
  hsad_graph_t *g = forkjoin_graph(&e, &f, N);
  hsad_graph_exec_t *x;
  OK(hsad_graph_instantiate(g, qs, 2, &x));
  cr_assert_eq(hsad_graph_exec_queue_count(x), 2u);
  cr_assert_eq(hsad_graph_exec_queue(x, 0), qs[0]);
  cr_assert_eq(hsad_graph_exec_queue(x, 1), qs[1]);
  cr_expect_eq(hsad_graph_exec_packet_count(x, 0), 0u);
  uint8_t pkt[64];
  ERR_IS(hsad_graph_exec_packet(x, 0, 0, pkt, NULL), HSAD_ERR_UNSUPPORTED,
         "hsad_graph_exec_packet: the exec runs as a CUDA graph: it has no AQL packets or epoch "
         "points");
  for (int path = 0; path < 2; path++) {
    int value = 999;
    unsigned long long ns = 200000;
    hsad_karg_t dargs[] = {HSAD_KARG_PTR(f.c), HSAD_KARG_VAL(value), HSAD_KARG_VAL(ns)};
    hsad_launch_t ld = launch1(1, 1, dargs, 3);
    OK(hsad_kernel_dispatch(qs[1], kernel(&e, "delay_store"), &ld, HSAD_DEADLINE_NEVER, NULL, NULL));
    hsad_completion_t c[2], after;
    hsad_graph_rollback_t why;
    OK(hsad_graph_launch(x, path ? HSAD_GRAPH_SEQUENTIAL : 0, HSAD_DEADLINE_NEVER, c, &why));
    cr_assert_eq(why, path ? HSAD_GRAPH_ROLLBACK_REQUESTED : HSAD_GRAPH_ROLLBACK_NONE);
    affine_t dbl;
    OK(hsad_kernel_dispatch(qs[1], kernel(&e, "affine"), affine_launch(&dbl, f.c, 2, 0, N),
                            HSAD_DEADLINE_NEVER, &after, NULL));
    OK(hsad_completion_wait_all(c, 2, hsad_now_ns() + 10 * SEC));
    OK(hsad_completion_wait(&after, hsad_now_ns() + 10 * SEC));
    forkjoin_check(&f, 468);
  }
  hsad_completion_t c[2];
  for (int i = 0; i < 3; i++) OK(hsad_graph_launch(x, 0, HSAD_DEADLINE_NEVER, c, NULL));
  OK(hsad_completion_wait_all(c, 2, hsad_now_ns() + 10 * SEC));
  forkjoin_check(&f, 234);
  /* a copy and a fill node updated in place: C copies b now, FA fills 4 */
  OK(hsad_graph_exec_update_copy(x, f.node_c, f.c, f.b, N * 4));
  OK(hsad_graph_exec_update_fill(x, f.node_fa, f.a, 4, 4, N));
  OK(hsad_graph_launch(x, 0, HSAD_DEADLINE_NEVER, c, NULL));
  OK(hsad_completion_wait_all(c, 2, hsad_now_ns() + 10 * SEC));
  for (uint32_t i = 0; i < N; i++) {
    cr_assert_eq(f.a[i], 13u * 31u + 17u, "a[%u] = %u", i, f.a[i]); /* (3 x 4 + 1) x 31 + 17 */
    cr_assert_eq(f.c[i], 17u, "c[%u] = %u", i, f.c[i]);
  }
  uint64_t counts[HSAD_GRAPH_ROLLBACK_COUNT];
  hsad_graph_exec_counters(x, counts);
  cr_expect_eq(counts[HSAD_GRAPH_ROLLBACK_NONE], 5u);
  cr_expect_eq(counts[HSAD_GRAPH_ROLLBACK_REQUESTED], 1u);
  hsad_graph_exec_destroy(x);
  hsad_graph_destroy(g);
  hsad_queue_destroy(qs[0]);
  hsad_queue_destroy(qs[1]);
  hsad_buffer_free(f.a), hsad_buffer_free(f.b), hsad_buffer_free(f.c);
  nv_env_close(&e);
}

/* Bad input: every message, and a failed update leaves the node as it was. */
Test(nvidia, graph_errors) {
  nv_env_t e;
  nv_env(&e);
  uint32_t *x;
  OK(hsad_buffer_alloc(e.dev, 64 * 4, (void **)&x));
  hsad_queue_t *q;
  OK(hsad_queue_create(e.dev, NULL, &q));
  hsad_graph_t *g;
  OK(hsad_graph_create(0, &g));
  affine_t a;
  uint32_t na, nf, nb;
  OK(hsad_graph_add_fill(g, "F", 0, x, 1, 4, 64, NULL, 0, &nf));
  OK(hsad_graph_add_kernel(g, "A", 0, kernel(&e, "affine"), affine_launch(&a, x, 3, 1, 64), &nf,
                           1, &na));
  OK(hsad_graph_add_barrier(g, "B", 0, &na, 1, &nb));
  OK(hsad_graph_add_edge(g, nb, nf)); /* F -> A -> B -> F */
  hsad_graph_exec_t *ex;
  ERR_IS(hsad_graph_instantiate(g, &q, 1, &ex), HSAD_ERR_GRAPH, "cycle: F -> A -> B -> F");
  hsad_graph_destroy(g);
  OK(hsad_graph_create(0, &g));
  OK(hsad_graph_add_fill(g, "F", 0, x, 1, 4, 64, NULL, 0, &nf));
  affine_t bad;
  affine_launch(&bad, x, 3, 1, 64);
  bad.l.arg_count = 3;
  ERR_IS(hsad_graph_add_kernel(g, "F", 0, kernel(&e, "affine"), &bad.l, NULL, 0, NULL),
         HSAD_ERR_INVALID_ARGUMENT,
         "hsad_graph_add_kernel: node name 'F' is the name of node 0; node names are unique");
  OK(hsad_graph_add_kernel(g, "BAD", 0, kernel(&e, "affine"), &bad.l, &nf, 1, NULL));
  ERR_IS(hsad_graph_instantiate(g, &q, 1, &ex), HSAD_ERR_ARG_COUNT,
         "node BAD: %s: kernel 'affine' takes 4 explicit arguments, got 3", NV_CUBIN);
  hsad_graph_destroy(g);
  OK(hsad_graph_create(0, &g));
  OK(hsad_graph_add_fill(g, "F", 0, x, 1, 4, 64, NULL, 0, &nf));
  OK(hsad_graph_add_kernel(g, "A", 0, kernel(&e, "affine"), affine_launch(&a, x, 3, 1, 64), &nf,
                           1, &na));
  OK(hsad_graph_instantiate(g, &q, 1, &ex));
  ERR_IS(hsad_graph_exec_update(ex, na, &bad.l), HSAD_ERR_ARG_COUNT,
         "node A: %s: kernel 'affine' takes 4 explicit arguments, got 3", NV_CUBIN);
  ERR_IS(hsad_graph_exec_update(ex, nf, &a.l), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_graph_exec_update: node F is a fill node, not a kernel node");
  ERR_IS(hsad_graph_exec_update(ex, 7, &a.l), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_graph_exec_update: node 7 is not a node of the exec (2 nodes)");
  ERR_IS(hsad_graph_exec_update_copy(ex, na, x, x + 32, 16), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_graph_exec_update_copy: node A is a kernel node, not a copy node");
  ERR_IS(hsad_graph_exec_update_fill(ex, nf, x, 0x1ff, 1, 8), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_graph_exec_update_fill: pattern 0x1ff does not fit in 1 byte");
  ERR_IS(hsad_graph_launch(ex, 1u << 7, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_graph_launch: unknown flags 0x80");
  ERR_IS(hsad_graph_launch_after(ex, 0, NULL, 2, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_graph_launch: NULL deps with a count of 2");
  ERR_IS(hsad_graph_exec_set_queue(ex, 0, NULL), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_graph_exec_set_queue: NULL queue");
  hsad_completion_t c;
  OK(hsad_graph_launch(ex, 0, HSAD_DEADLINE_NEVER, &c, NULL)); /* A unchanged: 3 x 1 + 1 */
  OK(hsad_completion_wait(&c, hsad_now_ns() + 10 * SEC));
  for (int i = 0; i < 64; i++) cr_assert_eq(x[i], 4u, "x[%d] = %u", i, x[i]);
  hsad_graph_exec_destroy(ex);
  hsad_graph_destroy(g);
  hsad_queue_destroy(q);
  hsad_buffer_free(x);
  nv_env_close(&e);
}

/* ---- stream capture (issue 22: hsad_fusion.h "capture" on NVIDIA queues) --------------- */

/* The queue's number in messages and its last issued epoch, read from the one message that
 * states both (a wait on an epoch far beyond: "epoch E was never issued on queue Q (last K)"). */
static unsigned long long nv_qid(hsad_queue_t *q, unsigned long long *out_last) {
  hsad_completion_t c = {.queue = q, .epoch = 1ull << 40};
  cr_assert_eq(hsad_completion_wait(&c, 0), HSAD_ERR_INVALID_ARGUMENT);
  unsigned long long id = 0, last = 0;
  cr_assert_eq(sscanf(hsad_last_error(), "hsad_completion_wait: epoch 1099511627776 was never "
                      "issued on queue %llu (last %llu)", &id, &last), 2, "%s", hsad_last_error());
  if (out_last) *out_last = last;
  return id;
}

/* The epoch of node `node` of the `capture`-th capture of the process (each test is a process
 * of its own: the first capture is 1). */
static uint64_t cap_epoch(uint32_t capture, uint32_t node) {
  return HSAD_CAPTURE_EPOCH_BASE + ((uint64_t)capture << 32) + node;
}

/* Checks a captured call's completion: {q, cap_epoch(capture, node), node}. */
static void cap_check(const hsad_completion_t *c, hsad_queue_t *q, uint32_t capture, uint32_t node) {
  cr_assert_eq(c->queue, q);
  cr_assert_eq(c->epoch, cap_epoch(capture, node), "epoch 0x%llx, want node %u of capture %u",
               (unsigned long long)c->epoch, node, capture);
  cr_assert_eq(c->packet_id, node);
}

/* A chain A (x = 3x + 1), B (x = 5x + 2), C (y = 31y + x) captured on one queue: the calls
 * return the nodes' completions and packet ids, nothing reaches the stream (x and y unchanged,
 * the queue's epoch unchanged: no launch since the flush before begin), the captured
 * completions are never issued; the graph instantiates and launches 5 times back to back, and
 * x and y equal the host's replay of 5 chains in order. After end the queue dispatches again. */
Test(nvidia, capture_chain_replayed) {
  nv_env_t e;
  nv_env(&e);
  enum { N = 4099, L = 5 };
  uint32_t *x, *y, *hx = malloc(N * 4), *hy = malloc(N * 4);
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&x));
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&y));
  for (uint32_t i = 0; i < N; i++) x[i] = hx[i] = i, y[i] = hy[i] = 1000000u + i;
  const hsad_device_kernel_t *kaff = kernel(&e, "affine"), *kmix = kernel(&e, "mix");
  hsad_queue_t *q;
  OK(hsad_queue_create(e.dev, NULL, &q));
  hsad_completion_t before, after, c[3];
  OK(hsad_queue_flush(q, HSAD_DEADLINE_NEVER, &before));
  unsigned long long last, qn = nv_qid(q, &last);
  cr_assert_eq(last, before.epoch);
  hsad_graph_t *g, *got = NULL;
  OK(hsad_graph_create(0, &g));
  cr_assert(!hsad_queue_capturing(q));
  OK(hsad_queue_capture_begin(q, g, 0));
  cr_assert(hsad_queue_capturing(q));
  affine_t a, b;
  uint32_t n = N;
  hsad_karg_t margs[] = {HSAD_KARG_PTR(y), HSAD_KARG_PTR(x), HSAD_KARG_VAL(n)};
  hsad_launch_t lm = launch1(N, 256, margs, 3);
  uint64_t ids[3] = {99, 99, 99};
  OK(hsad_kernel_dispatch(q, kaff, affine_launch(&a, x, 3, 1, N), HSAD_DEADLINE_NEVER, &c[0],
                          &ids[0]));
  OK(hsad_kernel_dispatch(q, kaff, affine_launch(&b, x, 5, 2, N), HSAD_DEADLINE_NEVER, &c[1],
                          &ids[1]));
  OK(hsad_kernel_dispatch(q, kmix, &lm, HSAD_DEADLINE_NEVER, &c[2], &ids[2]));
  for (uint32_t i = 0; i < 3; i++) {
    cap_check(&c[i], q, 1, i);
    cr_assert_eq(ids[i], i);
    cr_assert(!hsad_completion_done(&c[i]));
  }
  a.mul = 1000, b.mul = 1000; /* the launches' values were copied at the calls */
  ERR_IS(hsad_completion_wait(&c[2], hsad_now_ns() + SEC), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_completion_wait: epoch %llu was never issued on queue %llu (last %llu)",
         (unsigned long long)cap_epoch(1, 2), qn, last);
  OK(hsad_queue_capture_end(q, &got));
  cr_assert_eq(got, g);
  cr_assert(!hsad_queue_capturing(q));
  OK(hsad_queue_flush(q, HSAD_DEADLINE_NEVER, &after));
  cr_assert_eq(after.epoch, before.epoch, "a captured call reached the stream (epoch %llu -> "
               "%llu)", (unsigned long long)before.epoch, (unsigned long long)after.epoch);
  OK(hsad_queue_wait_idle(q, hsad_now_ns() + 10 * SEC));
  for (uint32_t i = 0; i < N; i++) {
    cr_assert_eq(x[i], i, "x[%u] = %u: a captured kernel ran", i, x[i]);
    cr_assert_eq(y[i], 1000000u + i, "y[%u] = %u: a captured kernel ran", i, y[i]);
  }
  hsad_graph_exec_t *ex;
  OK(hsad_graph_instantiate(g, &q, 1, &ex));
  hsad_graph_destroy(g);
  hsad_completion_t done;
  for (uint32_t i = 0; i < L; i++) {
    hsad_graph_rollback_t why = HSAD_GRAPH_ROLLBACK_COUNT;
    OK(hsad_graph_launch(ex, 0, HSAD_DEADLINE_NEVER, &done, &why));
    cr_assert_eq(why, HSAD_GRAPH_ROLLBACK_NONE, "launch %u: %s", i, hsad_graph_rollback_name(why));
    host_affine(hx, N, 3, 1);
    host_affine(hx, N, 5, 2);
    host_mix(hy, hx, N);
  }
  OK(hsad_completion_wait(&done, hsad_now_ns() + 30 * SEC));
  for (uint32_t i = 0; i < N; i++) {
    cr_assert_eq(x[i], hx[i], "x[%u] = %u, want %u", i, x[i], hx[i]);
    cr_assert_eq(y[i], hy[i], "y[%u] = %u, want %u", i, y[i], hy[i]);
  }
  /* uncaptured again: a real epoch, the kernel runs */
  OK(hsad_kernel_dispatch(q, kaff, affine_launch(&a, x, 2, 0, N), HSAD_DEADLINE_NEVER, &done, NULL));
  cr_assert_lt(done.epoch, HSAD_CAPTURE_EPOCH_BASE);
  OK(hsad_completion_wait(&done, hsad_now_ns() + 10 * SEC));
  host_affine(hx, N, 2, 0);
  for (uint32_t i = 0; i < N; i++) cr_assert_eq(x[i], hx[i], "x[%u] = %u, want %u", i, x[i], hx[i]);
  hsad_graph_exec_destroy(ex);
  hsad_queue_destroy(q);
  hsad_buffer_free(x), hsad_buffer_free(y);
  free(hx), free(hy);
  nv_env_close(&e);
}

typedef struct {
  uint32_t *a, *b, *c, n;
  affine_t fa, fc;
  hsad_karg_t mb[3], md[3];
  hsad_launch_t lb, ld;
} capjoin_t;

/* Captures, on queue 0 (lane 0) and queue 1 (lane 1) into g: q0: A (a = 3a + 1); q1: barrier
 * on A (the fork), B (b = 31b + a); q0: C (c = 7c + 3), barrier on B (the join), D
 * (c = 31c + b). Nodes: A 0, fork 1, B 2, C 3, join 4, D 5 (checked). */
static void capjoin_record(nv_env_t *e, capjoin_t *f, hsad_queue_t *const qs[2], hsad_graph_t *g,
                           uint32_t capture) {
  hsad_completion_t ca, cf, cb, cc, cj, cd;
  OK(hsad_queue_capture_begin(qs[0], g, 0));
  OK(hsad_queue_capture_begin(qs[1], g, 1));
  OK(hsad_kernel_dispatch(qs[0], kernel(e, "affine"), affine_launch(&f->fa, f->a, 3, 1, f->n),
                          HSAD_DEADLINE_NEVER, &ca, NULL));
  OK(hsad_queue_barrier(qs[1], &ca, 1, HSAD_DEADLINE_NEVER, &cf));
  f->mb[0] = (hsad_karg_t)HSAD_KARG_PTR(f->b);
  f->mb[1] = (hsad_karg_t)HSAD_KARG_PTR(f->a);
  f->mb[2] = (hsad_karg_t)HSAD_KARG_VAL(f->n);
  f->lb = launch1(f->n, 256, f->mb, 3);
  OK(hsad_kernel_dispatch(qs[1], kernel(e, "mix"), &f->lb, HSAD_DEADLINE_NEVER, &cb, NULL));
  OK(hsad_kernel_dispatch(qs[0], kernel(e, "affine"), affine_launch(&f->fc, f->c, 7, 3, f->n),
                          HSAD_DEADLINE_NEVER, &cc, NULL));
  hsad_completion_t deps[2] = {{0}, cb}; /* an empty completion is satisfied */
  OK(hsad_queue_barrier(qs[0], deps, 2, HSAD_DEADLINE_NEVER, &cj));
  f->md[0] = (hsad_karg_t)HSAD_KARG_PTR(f->c);
  f->md[1] = (hsad_karg_t)HSAD_KARG_PTR(f->b);
  f->md[2] = (hsad_karg_t)HSAD_KARG_VAL(f->n);
  f->ld = launch1(f->n, 256, f->md, 3);
  OK(hsad_kernel_dispatch(qs[0], kernel(e, "mix"), &f->ld, HSAD_DEADLINE_NEVER, &cd, NULL));
  hsad_graph_t *g0 = NULL, *g1 = NULL;
  OK(hsad_queue_capture_end(qs[1], &g1));
  OK(hsad_queue_capture_end(qs[0], &g0));
  cr_assert_eq(g0, g);
  cr_assert_eq(g1, g);
  cap_check(&ca, qs[0], 2 * capture - 1, 0);
  cap_check(&cf, qs[1], 2 * capture, 1);
  cap_check(&cb, qs[1], 2 * capture, 2);
  cap_check(&cc, qs[0], 2 * capture - 1, 3);
  cap_check(&cj, qs[0], 2 * capture - 1, 4);
  cap_check(&cd, qs[0], 2 * capture - 1, 5);
}

/* Fork/join captured across two queues with barriers, instantiated on both (one CUDA graph)
 * and launched 3 times: a, b, c equal the host's replay. The edges the barriers recorded,
 * shown by cycles: in a second capture an edge D -> B closes B -> join -> D (the join's
 * cross-queue edge), in a third an edge B -> A closes A -> fork -> B (the fork's). */
Test(nvidia, capture_fork_join_two_queues) {
  nv_env_t e;
  nv_env(&e);
  enum { N = 1000, L = 3 };
  capjoin_t f = {.n = N};
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&f.a));
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&f.b));
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&f.c));
  uint32_t ha[N], hb[N], hc[N];
  for (uint32_t i = 0; i < N; i++) f.a[i] = ha[i] = i, f.b[i] = hb[i] = 2 * i, f.c[i] = hc[i] = 7;
  hsad_queue_t *qs[2];
  OK(hsad_queue_create(e.dev, NULL, &qs[0]));
  OK(hsad_queue_create(e.dev, NULL, &qs[1]));
  hsad_graph_t *g;
  OK(hsad_graph_create(0, &g));
  capjoin_record(&e, &f, qs, g, 1);
  OK(hsad_queue_wait_idle(qs[0], hsad_now_ns() + 10 * SEC));
  OK(hsad_queue_wait_idle(qs[1], hsad_now_ns() + 10 * SEC));
  for (uint32_t i = 0; i < N; i++) cr_assert_eq(f.a[i], i, "a[%u] = %u: a captured kernel ran", i, f.a[i]);
  hsad_graph_exec_t *ex;
  OK(hsad_graph_instantiate(g, qs, 2, &ex));
  hsad_graph_destroy(g);
  hsad_completion_t c[2];
  for (uint32_t l = 0; l < L; l++) {
    hsad_graph_rollback_t why = HSAD_GRAPH_ROLLBACK_COUNT;
    OK(hsad_graph_launch(ex, 0, HSAD_DEADLINE_NEVER, c, &why));
    cr_assert_eq(why, HSAD_GRAPH_ROLLBACK_NONE);
    host_affine(ha, N, 3, 1);
    host_mix(hb, ha, N);
    host_affine(hc, N, 7, 3);
    host_mix(hc, hb, N);
  }
  OK(hsad_completion_wait_all(c, 2, hsad_now_ns() + 10 * SEC));
  for (uint32_t i = 0; i < N; i++) {
    cr_assert_eq(f.a[i], ha[i], "a[%u] = %u, want %u", i, f.a[i], ha[i]);
    cr_assert_eq(f.b[i], hb[i], "b[%u] = %u, want %u", i, f.b[i], hb[i]);
    cr_assert_eq(f.c[i], hc[i], "c[%u] = %u, want %u", i, f.c[i], hc[i]);
  }
  hsad_graph_exec_destroy(ex);
  OK(hsad_graph_create(0, &g));
  capjoin_record(&e, &f, qs, g, 2);
  OK(hsad_graph_add_edge(g, 5, 2));
  ERR_IS(hsad_graph_instantiate(g, qs, 2, &ex), HSAD_ERR_GRAPH,
         "cycle: node2 -> node4 -> node5 -> node2");
  hsad_graph_destroy(g);
  OK(hsad_graph_create(0, &g));
  capjoin_record(&e, &f, qs, g, 3);
  OK(hsad_graph_add_edge(g, 2, 0));
  ERR_IS(hsad_graph_instantiate(g, qs, 2, &ex), HSAD_ERR_GRAPH,
         "cycle: node0 -> node1 -> node2 -> node0");
  hsad_graph_destroy(g);
  hsad_queue_destroy(qs[0]);
  hsad_queue_destroy(qs[1]);
  hsad_buffer_free(f.a), hsad_buffer_free(f.b), hsad_buffer_free(f.c);
  nv_env_close(&e);
}

#define CAPTURING(who, qn)                                                                     \
  who ": queue %llu is capturing (hsad_queue_capture_begin): a capture records "               \
      "hsad_kernel_dispatch and hsad_queue_barrier only; end it first (hsad_queue_capture_end)", \
      (qn)

/* Every refusal on a capturing NVIDIA queue, with its code and message; a failed captured
 * dispatch records nothing (the next node is 0); begin's checks; barrier dependencies that a
 * graph cannot wait for; a captured completion outside the capture. */
Test(nvidia, capture_refusals) {
  nv_env_t e;
  nv_env(&e);
  enum { N = 64 };
  uint32_t *x;
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&x));
  for (uint32_t i = 0; i < N; i++) x[i] = i;
  const hsad_device_kernel_t *kaff = kernel(&e, "affine");
  hsad_queue_t *q, *q2, *sq, *both[2];
  OK(hsad_queue_create(e.dev, NULL, &q));
  OK(hsad_queue_create(e.dev, NULL, &q2));
  OK(hsad_device_queue(e.dev, &sq));
  unsigned long long qn = nv_qid(q, NULL), q2n = nv_qid(q2, NULL), sqn = nv_qid(sq, NULL);
  affine_t a, bad;
  hsad_completion_t real, c, c2;
  OK(hsad_kernel_dispatch(q2, kaff, affine_launch(&a, x, 1, 0, N), HSAD_DEADLINE_NEVER, &real, NULL));
  hsad_graph_t *g, *g2, *gone;
  OK(hsad_graph_create(0, &g));
  OK(hsad_graph_create(0, &g2));
  OK(hsad_graph_add_kernel(g2, "K", 0, kaff, affine_launch(&a, x, 1, 0, N), NULL, 0, NULL));
  both[0] = q2, both[1] = q;
  hsad_graph_exec_t *ex;
  OK(hsad_graph_add_kernel(g2, "K1", 1, kaff, affine_launch(&a, x, 1, 0, N), NULL, 0, NULL));
  OK(hsad_graph_instantiate(g2, both, 2, &ex)); /* q2 and q */
  /* begin's checks */
  ERR_IS(hsad_queue_capture_begin(NULL, g, 0), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_queue_capture_begin: NULL queue");
  ERR_IS(hsad_queue_capture_begin(q, NULL, 0), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_queue_capture_begin: NULL graph");
  ERR_IS(hsad_queue_capture_begin(q, g, 64), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_queue_capture_begin: lane 64 not below 64");
  ERR_IS(hsad_queue_capture_begin(sq, g, 0), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_queue_capture_begin: queue %llu is a shared queue of device %u "
         "(hsad_device_queue): its other users' submits would be captured; capture on a queue "
         "of your own (hsad_queue_create)", sqn, hsad_device_info(e.dev)->index);
  cr_assert(!hsad_queue_capturing(sq));
  ERR_IS(hsad_queue_capture_end(q, NULL), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_queue_capture_end: queue %llu is not capturing", qn);
  OK(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.capacity = 8}));
  OK(hsad_queue_capture_begin(q, g, 0));
  ERR_IS(hsad_queue_capture_begin(q, g, 1), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_queue_capture_begin: queue %llu is already capturing (lane 0); end that capture "
         "first (hsad_queue_capture_end)", qn);
  ERR_IS(hsad_queue_capture_begin(q2, g, 0), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_queue_capture_begin: lane 0 of the graph is being captured on queue %llu; give "
         "each queue its own lane", qn);
  /* failed captured dispatches: the uncaptured call's codes and messages, nothing recorded */
  affine_launch(&bad, x, 3, 1, N);
  bad.l.arg_count = 3;
  ERR_IS(hsad_kernel_dispatch(q, kaff, &bad.l, HSAD_DEADLINE_NEVER, &c, NULL), HSAD_ERR_ARG_COUNT,
         "%s: kernel 'affine' takes 4 explicit arguments, got 3", NV_CUBIN);
  ERR_IS(hsad_kernel_dispatch(q, NULL, &bad.l, HSAD_DEADLINE_NEVER, &c, NULL),
         HSAD_ERR_INVALID_ARGUMENT, "hsad_kernel_dispatch: NULL kernel");
  ERR_IS(hsad_kernel_dispatch(q, kaff, NULL, HSAD_DEADLINE_NEVER, &c, NULL),
         HSAD_ERR_INVALID_ARGUMENT, "hsad_kernel_dispatch: NULL launch");
  bad.l.arg_count = 4;
  bad.l.block[0] = 2048; /* over the device's 1024 threads per block */
  hsad_status_t want = hsad_kernel_dispatch(q2, kaff, &bad.l, HSAD_DEADLINE_NEVER, &c, NULL);
  cr_assert_neq(want, HSAD_OK);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", hsad_last_error());
  ERR_IS(hsad_kernel_dispatch(q, kaff, &bad.l, HSAD_DEADLINE_NEVER, &c, NULL), want, "%s", msg);
  uint64_t id = 99;
  OK(hsad_kernel_dispatch(q, kaff, affine_launch(&a, x, 3, 1, N), HSAD_DEADLINE_NEVER, &c, &id));
  cr_assert_eq(id, 0u, "a failed captured dispatch recorded a node");
  cap_check(&c, q, 1, 0);
  /* the calls a capture does not record */
  hsad_completion_t out;
  ERR_IS(hsad_queue_flush(q, HSAD_DEADLINE_NEVER, &out), HSAD_ERR_INVALID_ARGUMENT,
         CAPTURING("hsad_queue_flush", qn));
  ERR_IS(hsad_queue_wait_idle(q, HSAD_DEADLINE_NEVER), HSAD_ERR_INVALID_ARGUMENT,
         CAPTURING("hsad_queue_wait_idle", qn));
  ERR_IS(hsad_queue_destroy_deadline(q, HSAD_DEADLINE_NEVER), HSAD_ERR_INVALID_ARGUMENT,
         CAPTURING("hsad_queue_wait_idle", qn)); /* not destroyed: used below */
  hsad_dispatch_desc_t item = {.kernel = kaff, .launch = a.l};
  ERR_IS(hsad_queue_dispatch_batch(q, &item, 1, HSAD_DEADLINE_NEVER, &out, NULL),
         HSAD_ERR_INVALID_ARGUMENT, CAPTURING("hsad_queue_dispatch_batch", qn));
  ERR_IS(hsad_graph_launch(ex, 0, HSAD_DEADLINE_NEVER, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT,
         CAPTURING("hsad_graph_launch: queue 1 of 2", qn));
  ERR_IS(hsad_graph_launch(ex, HSAD_GRAPH_SEQUENTIAL, HSAD_DEADLINE_NEVER, NULL, NULL),
         HSAD_ERR_INVALID_ARGUMENT, CAPTURING("hsad_graph_launch: queue 1 of 2", qn));
  /* barrier dependencies */
  ERR_IS(hsad_queue_barrier(q, &real, 1, HSAD_DEADLINE_NEVER, &out), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_queue_barrier: queue %llu is capturing: dependency 0 is work submitted outside "
         "the capture (epoch %llu of queue %llu), which a graph cannot wait for: wait for it "
         "before hsad_queue_capture_begin, or pass it to hsad_graph_launch_after", qn,
         (unsigned long long)real.epoch, q2n);
  OK(hsad_queue_capture_begin(q2, g2, 0));
  OK(hsad_kernel_dispatch(q2, kaff, affine_launch(&a, x, 3, 1, N), HSAD_DEADLINE_NEVER, &c2, NULL));
  cap_check(&c2, q2, 2, 2); /* g2 held K and K1 */
  hsad_completion_t deps[2] = {c, c2};
  ERR_IS(hsad_queue_barrier(q, deps, 2, HSAD_DEADLINE_NEVER, &out), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_queue_barrier: queue %llu is capturing: dependency 1 is node 2 of another graph "
         "(captured on queue %llu); a barrier joins captures into the same graph only", qn, q2n);
  OK(hsad_queue_capture_end(q2, &gone));
  cr_assert_eq(gone, g2);
  ERR_IS(hsad_queue_barrier(q, deps, 2, HSAD_DEADLINE_NEVER, &out), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_queue_barrier: queue %llu is capturing: dependency 1 is node 2 of a capture on "
         "queue %llu that has ended", qn, q2n);
  OK(hsad_queue_barrier(q, deps, 1, HSAD_DEADLINE_NEVER, &out)); /* its own node: node 1 */
  cap_check(&out, q, 1, 1);
  /* a captured completion outside its capture */
  ERR_IS(hsad_queue_barrier(q2, &c, 1, HSAD_DEADLINE_NEVER, &out), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_queue_barrier: dependency 0: epoch %llu was never issued on queue %llu",
         (unsigned long long)cap_epoch(1, 0), qn);
  OK(hsad_queue_capture_end(q, &gone));
  cr_assert_eq(gone, g);
  hsad_dispatch_record_t rec[2];
  uint32_t got = 9;
  OK(hsad_queue_monitor_drain(q, rec, 2, &got, NULL));
  cr_assert_eq(got, 0u, "a captured dispatch left %u monitor records", got);
  /* after end: flush, batch and the exec's launch work again (nothing ran while capturing) */
  OK(hsad_queue_wait_idle(q2, hsad_now_ns() + 10 * SEC));
  for (uint32_t i = 0; i < N; i++) cr_assert_eq(x[i], i, "x[%u] = %u", i, x[i]);
  OK(hsad_queue_dispatch_batch(q, &item, 1, HSAD_DEADLINE_NEVER, &out, NULL)); /* x = 3x + 1 */
  OK(hsad_completion_wait(&out, hsad_now_ns() + 10 * SEC));
  OK(hsad_queue_monitor_drain(q, rec, 2, &got, NULL));
  cr_assert_eq(got, 1u);
  cr_assert_str_eq(rec[0].kernel, "affine");
  OK(hsad_graph_launch(ex, 0, HSAD_DEADLINE_NEVER, NULL, NULL)); /* x unchanged: 1x + 0 twice */
  OK(hsad_queue_wait_idle(q, hsad_now_ns() + 10 * SEC));
  OK(hsad_queue_wait_idle(q2, hsad_now_ns() + 10 * SEC));
  for (uint32_t i = 0; i < N; i++) cr_assert_eq(x[i], 3 * i + 1, "x[%u] = %u", i, x[i]);
  hsad_graph_exec_destroy(ex);
  hsad_graph_destroy(g);
  hsad_graph_destroy(g2);
  hsad_queue_destroy(q);
  hsad_queue_destroy(q2);
  hsad_buffer_free(x);
  nv_env_close(&e);
}

/* A copy node whose source is pageable (malloc) memory: the driver may refuse it in a CUDA
 * graph (then every launch rolls back, HSAD_GRAPH_ROLLBACK_DRIVER with the driver's error as
 * the detail, and HSAD_GRAPH_NO_ROLLBACK fails) or take it; the copied bytes are exact either
 * way. The mock is told to refuse copy nodes (CUDA_MOCK_REFUSE_MEMCPY_NODE), so CI checks the
 * rollback's messages exactly. */
Test(nvidia, graph_copy_pageable_rollback) {
  nv_env_t e;
  nv_env(&e);
  enum { N = 4096 };
  uint8_t *src = malloc(N), *dst;
  for (int i = 0; i < N; i++) src[i] = (uint8_t)(i * 7 + 1);
  OK(hsad_buffer_alloc(e.dev, N, (void **)&dst));
#ifdef NV_MOCK_LIB
  setenv("CUDA_MOCK_REFUSE_MEMCPY_NODE", "1", 1);
#endif
  hsad_queue_t *q;
  OK(hsad_queue_create(e.dev, NULL, &q));
  hsad_graph_t *g;
  OK(hsad_graph_create(0, &g));
  OK(hsad_graph_add_copy(g, "C", 0, dst, src, N, NULL, 0, NULL));
  hsad_graph_exec_t *x;
  OK(hsad_graph_instantiate(g, &q, 1, &x));
  const char *why = hsad_graph_exec_rollback_detail(x);
  cr_log_info("copy node from pageable memory: %s", why ? why : "fused (the driver took it)");
#ifdef NV_MOCK_LIB
  cr_assert_str_eq(why, "node C: cuGraphAddMemcpyNode: CUDA_ERROR_NOT_SUPPORTED (operation not "
                        "supported)");
  ERR_IS(hsad_graph_launch(x, HSAD_GRAPH_NO_ROLLBACK, 0, NULL, NULL), HSAD_ERR_RESOURCE_EXHAUSTED,
         "hsad_graph_launch: not fused (driver refused the graph: %s) and HSAD_GRAPH_NO_ROLLBACK "
         "given", why);
#endif
  hsad_completion_t c;
  hsad_graph_rollback_t r;
  OK(hsad_graph_launch(x, 0, HSAD_DEADLINE_NEVER, &c, &r));
  cr_assert_eq(r, why ? HSAD_GRAPH_ROLLBACK_DRIVER : HSAD_GRAPH_ROLLBACK_NONE);
  OK(hsad_completion_wait(&c, hsad_now_ns() + 10 * SEC));
  cr_assert_eq(memcmp(dst, src, N), 0);
  uint64_t counts[HSAD_GRAPH_ROLLBACK_COUNT];
  hsad_graph_exec_counters(x, counts);
  cr_expect_eq(counts[why ? HSAD_GRAPH_ROLLBACK_DRIVER : HSAD_GRAPH_ROLLBACK_NONE], 1u);
  hsad_graph_exec_destroy(x);
  hsad_graph_destroy(g);
  hsad_queue_destroy(q);
  hsad_buffer_free(dst);
  free(src);
  nv_env_close(&e);
}

/* Device times on NVIDIA (issue 22): a profiling queue brackets each dispatch that has a
 * completion with cuEventRecord pairs; hsad_completion_times gives its start and end in ns of
 * CLOCK_MONOTONIC (calibrated at queue creation). A 200 us delay_store takes at least 200 us
 * of device time and the next dispatch starts after it ended; the errors of AMD's
 * hsad_completion_times, word for word. */
Test(nvidia, completion_times_profiling) {
  nv_env_t e;
  nv_env(&e);
  hsad_queue_options_t o = {.profiling = true};
  hsad_queue_t *q, *plain;
  OK(hsad_queue_create(e.dev, &o, &q));
  OK(hsad_queue_create(e.dev, NULL, &plain));
  int *p;
  OK(hsad_buffer_alloc(e.dev, 64, (void **)&p));
  int value = 5;
  unsigned long long ns = 200000, *counter = (unsigned long long *)(p + 8);
  hsad_karg_t dargs[] = {HSAD_KARG_PTR(p), HSAD_KARG_VAL(value), HSAD_KARG_VAL(ns)};
  hsad_karg_t aargs[] = {HSAD_KARG_PTR(counter)};
  hsad_launch_t ld = launch1(1, 1, dargs, 3), la = launch1(1, 1, aargs, 1);
  uint64_t t_before = hsad_now_ns();
  hsad_completion_t c1, c2, cb, c3;
  OK(hsad_kernel_dispatch(q, kernel(&e, "delay_store"), &ld, HSAD_DEADLINE_NEVER, &c1, NULL));
  OK(hsad_kernel_dispatch(q, kernel(&e, "add_one"), &la, HSAD_DEADLINE_NEVER, NULL, NULL));
  OK(hsad_kernel_dispatch(q, kernel(&e, "add_one"), &la, HSAD_DEADLINE_NEVER, &c2, NULL));
  cr_expect_eq(c1.packet_id, 0u);
  cr_expect_eq(c2.packet_id, 2u); /* the dispatch ids: the second had no completion, no times */
  ERR_IS(hsad_completion_times(&c2, &(uint64_t){0}, &(uint64_t){0}), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_completion_times: packet 2 has not completed");
  OK(hsad_completion_wait(&c2, hsad_now_ns() + 10 * SEC));
  uint64_t s1, e1, s2, e2;
  OK(hsad_completion_times(&c1, &s1, &e1));
  OK(hsad_completion_times(&c2, &s2, &e2));
  cr_log_info("delay_store 200 us: device %llu ns (start %llu ns after the host's first call); "
              "add_one %llu ns, %llu ns after it", (unsigned long long)(e1 - s1),
              (unsigned long long)(s1 - t_before), (unsigned long long)(e2 - s2),
              (unsigned long long)(s2 - e1));
  cr_expect_geq(e1 - s1, 199000u, "delay_store took %llu ns", (unsigned long long)(e1 - s1));
  cr_expect_lt(e1 - s1, 100000000u);
  cr_expect_geq(s2 + 1000, e1, "add_one started %lld ns before delay_store ended",
                (long long)(e1 - s2));
  cr_expect_geq(e2, s2);
  cr_expect_geq(s1 + 5000, t_before, "start %llu before the host's call at %llu",
                (unsigned long long)s1, (unsigned long long)t_before);
  cr_expect_leq(e2, hsad_now_ns() + 5000);
  cr_expect_eq(*counter, 2u);
  OK(hsad_queue_barrier(q, NULL, 0, HSAD_DEADLINE_NEVER, &cb));
  OK(hsad_completion_wait(&cb, hsad_now_ns() + 10 * SEC));
  /* an earlier epoch's completion (the first dispatch's) dressed as the second's: completed, but
   * not the epoch the slot's times belong to (a barrier with nothing after c2 would return c2's
   * own epoch: epochs are lazy, nvidia/nv_queue.c) */
  cb = (hsad_completion_t){.queue = c2.queue, .epoch = c1.epoch, .packet_id = c2.packet_id};
  ERR_IS(hsad_completion_times(&cb, &s1, &e1), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_completion_times: packet %llu is not a kernel dispatch with a completion, or its "
         "slot was reused (times are kept for 256 dispatches)", (unsigned long long)cb.packet_id);
  OK(hsad_kernel_dispatch(plain, kernel(&e, "add_one"), &la, HSAD_DEADLINE_NEVER, &c3, NULL));
  OK(hsad_completion_wait(&c3, hsad_now_ns() + 10 * SEC));
  ERR_IS(hsad_completion_times(&c3, &s1, &e1), HSAD_ERR_UNSUPPORTED,
         "hsad_completion_times: the queue was created without profiling "
         "(hsad_queue_options_t.profiling)");
  ERR_IS(hsad_completion_times(&c3, NULL, &e1), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_completion_times: NULL out_start_ns");
  ERR_IS(hsad_completion_times(&c3, &s1, NULL), HSAD_ERR_INVALID_ARGUMENT,
         "hsad_completion_times: NULL out_end_ns");
  hsad_queue_destroy(q);
  hsad_queue_destroy(plain);
  hsad_buffer_free(p);
  nv_env_close(&e);
}

#include <json-c/json.h>

/* Monitoring on NVIDIA (issue 22): records, alerts, the trace. */
typedef struct {
  int n;
  hsad_alert_reason_t reason[8];
  char kernel[8][64], message[8][512];
  uint64_t value[8], threshold[8], packet_id[8];
} nv_alerts_t;

static void nv_alert(const hsad_monitor_alert_t *a, void *user) {
  nv_alerts_t *v = user;
  if (v->n == 8) return;
  v->reason[v->n] = a->reason;
  snprintf(v->kernel[v->n], sizeof v->kernel[0], "%s", a->kernel);
  snprintf(v->message[v->n], sizeof v->message[0], "%s", a->message);
  v->value[v->n] = a->value;
  v->threshold[v->n] = a->threshold;
  v->packet_id[v->n] = a->packet_id;
  v->n++;
}

/* The trace event named `name` with phase `ph` (NULL when absent). */
static json_object *nv_trace_event(json_object *events, const char *name, const char *ph) {
  for (size_t i = 0; i < json_object_array_length(events); i++) {
    json_object *ev = json_object_array_get_idx(events, i), *v;
    if (json_object_object_get_ex(ev, "name", &v) && !strcmp(json_object_get_string(v), name) &&
        json_object_object_get_ex(ev, "ph", &v) && !strcmp(json_object_get_string(v), ph))
      return ev;
  }
  return NULL;
}

/* The "M" event naming a process or thread `value` (its "args"."name"). */
static json_object *nv_trace_meta(json_object *events, const char *what, const char *value) {
  for (size_t i = 0; i < json_object_array_length(events); i++) {
    json_object *ev = json_object_array_get_idx(events, i), *v, *args, *an;
    if (json_object_object_get_ex(ev, "name", &v) && !strcmp(json_object_get_string(v), what) &&
        json_object_object_get_ex(ev, "args", &args) &&
        json_object_object_get_ex(args, "name", &an) && !strcmp(json_object_get_string(an), value))
      return ev;
  }
  return NULL;
}

static int64_t nv_json_int(json_object *o, const char *key) {
  json_object *v;
  cr_assert(json_object_object_get_ex(o, key, &v), "no \"%s\" in %s", key,
            json_object_to_json_string(o));
  return json_object_get_int64(v);
}

/* A monitored profiling queue: one record per dispatch (with or without a completion) with the
 * kernel's registers, local and shared bytes and occupancy from the CUDA attributes, device times
 * from the event pair; spill (local bytes) and low-occupancy alerts once per kernel, named as on
 * AMD; the Perfetto trace's tracks and slices parsed back. On the mock, exact values: add_one 32
 * registers, 100% (32 blocks of 64 per SM, 64 warps); mix 128 registers, 304 local bytes, 2
 * blocks of 256 per SM: 25%. */
Test(nvidia, monitor_records_alerts_trace) {
  nv_env_t e;
  nv_env(&e);
  bool mock = !strcmp(hsad_device_info(e.dev)->product_name, "hsad cuda-mock");
  hsad_monitor_alerts_reset();
  hsad_queue_t *q, *plain;
  OK(hsad_queue_create(e.dev, &(hsad_queue_options_t){.profiling = true}, &q));
  OK(hsad_queue_create(e.dev, NULL, &plain));
  ERR_IS(hsad_queue_monitor_drain(q, NULL, 0, &(uint32_t){0}, NULL), HSAD_ERR_UNSUPPORTED,
         "hsad_queue_monitor_drain: monitoring is not enabled on the queue "
         "(hsad_queue_monitor_enable, hsad_monitor_enable_process)");
  ERR_IS(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.capacity = 3}),
         HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_monitor_enable: capacity 3 records: must be a "
         "power of two up to 16777216");
  nv_alerts_t al = {0};
  hsad_monitor_options_t mo = {.capacity = 4, .alert = nv_alert, .alert_user = &al};
  OK(hsad_queue_monitor_enable(q, &mo));
  OK(hsad_queue_monitor_enable(plain, &mo));
  unsigned *buf; /* host-mapped: the host zeroes it (device memory would fault here) */
  OK(hsad_buffer_alloc(e.dev, 2048 * sizeof(unsigned), (void **)&buf));
  memset(buf, 0, 2048 * sizeof(unsigned));
  unsigned long long *counter = (unsigned long long *)(buf + 2040);
  unsigned n = 1024;
  hsad_karg_t aargs[] = {HSAD_KARG_PTR(counter)};
  hsad_karg_t margs[] = {HSAD_KARG_PTR(buf), HSAD_KARG_PTR(buf + 1024), HSAD_KARG_VAL(n)};
  hsad_launch_t la = launch1(64, 64, aargs, 1), lm = launch1(1024, 256, margs, 3);
  const hsad_device_kernel_t *kadd = kernel(&e, "add_one"), *kmix = kernel(&e, "mix");
  uint64_t t_before = hsad_now_ns();
  hsad_completion_t c;
  OK(hsad_kernel_dispatch(q, kadd, &la, HSAD_DEADLINE_NEVER, NULL, NULL));
  OK(hsad_kernel_dispatch(q, kmix, &lm, HSAD_DEADLINE_NEVER, NULL, NULL));
  OK(hsad_kernel_dispatch(q, kmix, &lm, HSAD_DEADLINE_NEVER, &c, NULL));
  OK(hsad_completion_wait(&c, hsad_now_ns() + 10 * SEC));
  hsad_dispatch_record_t r[8];
  uint32_t got = 0;
  uint64_t dropped = 9;
  OK(hsad_queue_monitor_drain(q, r, 8, &got, &dropped));
  cr_assert_eq(got, 3u);
  cr_expect_eq(dropped, 0u);
  static const char *names[3] = {"add_one", "mix", "mix"};
  for (uint32_t i = 0; i < 3; i++) {
    const hsad_launch_t *l = i ? &lm : &la;
    const hsad_device_kernel_t *k = i ? kmix : kadd;
    cr_expect_eq(r[i].queue, q);
    cr_expect_eq(r[i].packet_id, i);
    cr_expect_str_eq(r[i].kernel, names[i]);
    cr_expect_eq(r[i].kernel_object, hsad_device_kernel_desc(k)->kernel_object);
    cr_expect_eq(r[i].dims, 1);
    cr_expect_eq(r[i].workgroup[0], l->block[0]);
    cr_expect_eq(r[i].workgroup[1], 1);
    cr_expect_eq(r[i].grid[0], l->grid[0]);
    cr_expect_eq(r[i].grid[2], 1u);
    cr_expect_eq(r[i].private_segment_size, hsad_device_kernel_desc(k)->private_segment_fixed_size);
    cr_expect_eq(r[i].group_segment_size, hsad_device_kernel_desc(k)->group_segment_fixed_size);
    cr_expect_eq(r[i].agpr_count + r[i].sgpr_count + r[i].vgpr_spill_count, 0u);
    cr_expect_eq(r[i].execution, HSAD_EXECUTION_DEVICE);
    cr_expect_eq(r[i].thread_id, (uint32_t)getpid());
    cr_expect(r[i].device_times, "record %u has no device times", i);
    cr_expect_geq(r[i].submit_start_ns, t_before);
    cr_expect_geq(r[i].submit_end_ns, r[i].submit_start_ns);
    cr_expect_geq(r[i].end_ns, r[i].start_ns);
    cr_expect_geq(r[i].start_ns + 5000, r[i].submit_start_ns);
    if (i) cr_expect_geq(r[i].start_ns + 1000, r[i - 1].end_ns);
    cr_expect_gt(r[i].vgpr_count, 0u);
    cr_expect_leq(r[i].vgpr_count, 255u);
    cr_expect_gt(r[i].occupancy_percent, 0u);
    cr_expect_leq(r[i].occupancy_percent, 100u);
  }
  if (mock) {
    cr_expect_eq(r[0].vgpr_count, 32u);
    cr_expect_eq(r[0].occupancy_percent, 100u);
    cr_expect_eq(r[0].waves_per_simd, 64u); /* resident warps per SM */
    cr_expect_eq(r[1].vgpr_count, 128u);
    cr_expect_eq(r[1].private_segment_size, 304u);
    cr_expect_eq(r[1].occupancy_percent, 25u);
    cr_expect_eq(r[1].waves_per_simd, 16u);
    cr_assert_eq(al.n, 2, "%d alerts", al.n);
    cr_expect_eq(al.reason[0], HSAD_ALERT_SPILL_RATIO);
    cr_expect_str_eq(hsad_alert_reason_name(al.reason[0]), "spill-ratio");
    cr_expect_str_eq(al.kernel[0], "mix");
    cr_expect_eq(al.packet_id[0], 1u);
    cr_expect_eq(al.value[0], 304u);
    cr_expect_eq(al.threshold[0], 0u);
    cr_expect_str_eq(al.message[0], "kernel mix: 304 bytes of local memory per thread (spilled "
                     "registers or a stack; CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES) with 128 registers");
    cr_expect_eq(al.reason[1], HSAD_ALERT_LOW_OCCUPANCY);
    cr_expect_str_eq(hsad_alert_reason_name(al.reason[1]), "low-occupancy");
    cr_expect_eq(al.value[1], 25u);
    cr_expect_eq(al.threshold[1], 50u);
    cr_expect_str_eq(al.message[1], "kernel mix at block size 256: 512 resident threads per SM (2 "
                     "blocks), 25% of the SM's 2048, below the 50% threshold (128 registers, 0 "
                     "bytes shared per block)");
  } else {
    for (int i = 0; i < al.n; i++) cr_log_info("alert %s: %s", hsad_alert_reason_name(al.reason[i]),
                                               al.message[i]);
  }
  /* a plain queue: records without device times; alerts were raised once for the process */
  int before = al.n;
  OK(hsad_kernel_dispatch(plain, kmix, &lm, HSAD_DEADLINE_NEVER, &c, NULL));
  OK(hsad_completion_wait(&c, hsad_now_ns() + 10 * SEC));
  OK(hsad_queue_monitor_drain(plain, r + 3, 1, &got, NULL));
  cr_assert_eq(got, 1u);
  cr_expect_str_eq(r[3].kernel, "mix");
  cr_expect(!r[3].device_times);
  cr_expect_eq(r[3].start_ns + r[3].end_ns, 0u);
  cr_expect_eq(al.n, before);
  /* a full ring drops and counts: 6 dispatches into 4 cells */
  for (int i = 0; i < 5; i++)
    OK(hsad_kernel_dispatch(q, kadd, &la, HSAD_DEADLINE_NEVER, NULL, NULL));
  OK(hsad_kernel_dispatch(q, kadd, &la, HSAD_DEADLINE_NEVER, &c, NULL));
  OK(hsad_completion_wait(&c, hsad_now_ns() + 10 * SEC));
  hsad_dispatch_record_t more[8];
  OK(hsad_queue_monitor_drain(q, more, 8, &got, &dropped));
  cr_expect_eq(got, 4u);
  cr_expect_eq(dropped, 2u);
  cr_expect_eq(more[0].packet_id, 3u);
  cr_expect_eq(more[3].packet_id, 6u);
  cr_expect_eq(*counter, 7u); /* add_one: one per dispatch */
  /* the trace: the first three records and the plain queue's */
  hsad_trace_t *t;
  OK(hsad_trace_create(&t));
  OK(hsad_trace_add(t, r, 4));
  char path[] = "/tmp/hsad-nv-trace-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  OK(hsad_trace_write(t, path));
  hsad_trace_destroy(t);
  json_object *root = json_object_from_file(path), *events;
  unlink(path);
  cr_assert(root, "the trace does not parse");
  cr_assert(json_object_object_get_ex(root, "traceEvents", &events));
  const hsad_device_info_t *di = hsad_device_info(e.dev);
  char name[128];
  snprintf(name, sizeof name, "GPU %u %s", di->index, di->name);
  json_object *gpu = nv_trace_meta(events, "process_name", name);
  cr_assert(gpu, "no process %s", name);
  int64_t gpid = nv_json_int(gpu, "pid");
  cr_expect_eq(gpid, (1 << 30) + (int64_t)di->index);
  /* one queue track: the plain queue's record has no device times, so no slice */
  snprintf(name, sizeof name, "COMPUTE Agent [%u] QUEUE [0] GPU", di->node);
  json_object *track = nv_trace_meta(events, "thread_name", name);
  cr_assert(track, "no track %s", name);
  cr_expect_eq(nv_json_int(track, "pid"), gpid);
  int64_t qtid = nv_json_int(track, "tid");
  snprintf(name, sizeof name, "COMPUTE Agent [%u] QUEUE [1] GPU", di->node);
  cr_expect(!nv_trace_meta(events, "thread_name", name));
  snprintf(name, sizeof name, "THREAD 0 (%d)", getpid());
  cr_assert(nv_trace_meta(events, "thread_name", name), "no track %s", name);
  int slices = 0;
  for (size_t i = 0; i < json_object_array_length(events); i++) {
    json_object *ev = json_object_array_get_idx(events, i), *v;
    json_object_object_get_ex(ev, "ph", &v);
    if (strcmp(json_object_get_string(v), "X")) continue;
    json_object_object_get_ex(ev, "dur", &v);
    cr_expect_geq(json_object_get_double(v), 0.0);
    json_object_object_get_ex(ev, "cat", &v);
    if (strcmp(json_object_get_string(v), "dispatch")) continue;
    slices++;
    cr_expect_eq(nv_json_int(ev, "pid"), gpid);
    cr_expect_eq(nv_json_int(ev, "tid"), qtid);
  }
  cr_expect_eq(slices, 3);
  json_object *add = nv_trace_event(events, "add_one", "X"), *args;
  cr_assert(add);
  cr_assert(json_object_object_get_ex(add, "args", &args));
  cr_expect_eq(nv_json_int(args, "vgpr_count"), r[0].vgpr_count);
  cr_expect_eq(nv_json_int(args, "end_ns") - nv_json_int(args, "start_ns"),
               (int64_t)(r[0].end_ns - r[0].start_ns));
  cr_expect(nv_trace_event(events, "submit add_one", "X"));
  cr_expect(nv_trace_event(events, "submit mix", "X"));
  json_object_put(root);
  hsad_queue_monitor_disable(q);
  ERR_IS(hsad_queue_monitor_drain(q, r, 8, &got, NULL), HSAD_ERR_UNSUPPORTED,
         "hsad_queue_monitor_drain: monitoring is not enabled on the queue "
         "(hsad_queue_monitor_enable, hsad_monitor_enable_process)");
  /* hsad_monitor_enable_process: NVIDIA queues created afterwards are monitored too */
  OK(hsad_monitor_enable_process(&mo));
  hsad_queue_t *later;
  OK(hsad_queue_create(e.dev, NULL, &later));
  hsad_monitor_disable_process();
  OK(hsad_kernel_dispatch(later, kadd, &la, HSAD_DEADLINE_NEVER, &c, NULL));
  OK(hsad_completion_wait(&c, hsad_now_ns() + 10 * SEC));
  OK(hsad_queue_monitor_drain(later, r, 8, &got, NULL));
  cr_expect_eq(got, 1u);
  cr_expect_str_eq(r[0].kernel, "add_one");
  hsad_queue_destroy(later);
  hsad_queue_destroy(plain); /* still monitored: freed with the queue */
  hsad_queue_destroy(q);
  hsad_buffer_free(buf);
  nv_env_close(&e);
}

/* ---- variant sets (issue 22: spill-aware variants) --------------------------------------- */

#ifndef NV_DATADIR
#define NV_DATADIR "tests/data/nvidia"
#endif

/* nv_variants.cu's heavy for thread t (87 words through k steps of x). */
static uint32_t host_heavy(const uint32_t *x, uint32_t n, uint32_t k, uint32_t t) {
  uint32_t acc[87], sum = 0;
  for (uint32_t j = 0; j < 87; j++) acc[j] = t * (j + 1);
  for (uint32_t i = 0; i < k; i++) {
    uint32_t v = x[(t + i) % n];
    for (uint32_t j = 0; j < 87; j++) acc[j] = acc[j] * 0x9E3779B1u + (v ^ j);
  }
  for (uint32_t j = 0; j < 87; j++) sum ^= acc[j] + j;
  return sum;
}

/* The budgets of the variants tests: as written, 64 and 32 registers, __launch_bounds__(256, 4)
 * as JIT options. */
static const hsad_nv_budget_t nv_vbudgets[4] = {{0, 0, 0}, {64, 0, 0}, {32, 0, 0}, {0, 256, 4}};

/* nv_variants.cu built once per budget (skips without NVRTC). */
static void nv_variants_build(nv_env_t *e, hsad_program_t **progs) {
  char why[512];
  if (!hsad_nv_nvrtc_available(why, sizeof why)) cr_skip_test("no NVRTC here: %s", why);
  FILE *f = fopen(NV_DATADIR "/nv_variants.cu", "rb");
  cr_assert_not_null(f, NV_DATADIR "/nv_variants.cu");
  static char src[8192];
  size_t n = fread(src, 1, sizeof src - 1, f);
  fclose(f);
  src[n] = '\0';
  OK(hsad_nv_program_compile_variants(e->dev, src, "nv_variants.cu",
                                      &(hsad_nv_compile_options_t){0}, nv_vbudgets, 4, progs,
                                      NULL));
}

/* The rule of hsad_variants.h over the candidates' own figures: least local bytes, most blocks
 * per SM, fewest registers, lowest index (for the GPU, whose register counts are its own). */
static uint32_t expected_choice(hsad_variant_set_t *set, uint32_t block, uint32_t *out_n) {
  uint32_t best = UINT32_MAX;
  hsad_variant_choice_t b = {0}, c;
  *out_n = 0;
  for (uint32_t i = 0; i < hsad_variant_set_count(set); i++) {
    if (hsad_variant_set_candidate(set, i, block, 0, &c) != HSAD_OK) continue;
    (*out_n)++;
    bool better = best == UINT32_MAX || c.scratch_per_work_item < b.scratch_per_work_item ||
                  (c.scratch_per_work_item == b.scratch_per_work_item &&
                   (c.blocks_per_sm > b.blocks_per_sm ||
                    (c.blocks_per_sm == b.blocks_per_sm && c.regs < b.regs)));
    if (better) best = i, b = c;
  }
  return best;
}

static void check_choice(hsad_variant_set_t *set, uint32_t block, uint32_t index,
                         hsad_variant_reason_t reason, uint32_t candidates, uint32_t blocks,
                         uint32_t regs, uint32_t local) {
  hsad_variant_choice_t c;
  bool cached = true;
  OK(hsad_variant_set_select(set, block, 0, &c, &cached));
  cr_expect(!cached, "block %u: the first choice is not cached", block);
  cr_expect_eq(c.index, index, "block %u: variant %u chosen, want %u", block, c.index, index);
  cr_expect_eq(c.reason, reason, "block %u: reason %d", block, c.reason);
  cr_expect_eq(c.candidates, candidates, "block %u: %u candidates", block, c.candidates);
  cr_expect_eq(c.blocks_per_sm, blocks, "block %u: %u blocks per SM", block, c.blocks_per_sm);
  cr_expect_eq(c.regs, regs, "block %u: %u registers", block, c.regs);
  cr_expect_eq(c.scratch_per_work_item, local, "block %u: %u local bytes", block,
               c.scratch_per_work_item);
  cr_expect_eq(c.waves_per_simd, blocks * ((block + 31) / 32) / 4);
  OK(hsad_variant_set_select(set, block, 0, &c, &cached));
  cr_expect(cached, "block %u: the second choice is the cached one", block);
  cr_expect_eq(c.index, index);
}

/* Runs heavy with variant `v` (UINT32_MAX: through the set) at `block` over n threads, and
 * checks every output word against the host. */
static void run_heavy(hsad_queue_t *q, hsad_variant_set_t *set, uint32_t v, uint32_t block,
                      const uint32_t *x, uint32_t *y, const uint32_t *want, uint32_t n,
                      uint32_t k) {
  memset(y, 0, n * 4);
  hsad_karg_t args[] = {HSAD_KARG_PTR(x), HSAD_KARG_PTR(y), HSAD_KARG_VAL(n), HSAD_KARG_VAL(k)};
  hsad_launch_t l = launch1(n, block, args, 4);
  hsad_completion_t c;
  if (v == UINT32_MAX) OK(hsad_variant_dispatch(q, set, &l, hsad_now_ns() + 10 * SEC, &c, NULL));
  else OK(hsad_kernel_dispatch(q, hsad_variant_set_kernel(set, v), &l, hsad_now_ns() + 10 * SEC,
                               &c, NULL));
  OK(hsad_completion_wait(&c, hsad_now_ns() + 30 * SEC));
  uint32_t bad = 0;
  for (uint32_t i = 0; i < n; i++)
    if (y[i] != want[i] && bad++ < 3)
      cr_log_error("variant %d block %u: y[%u] = %u, want %u", (int)v, block, i, y[i], want[i]);
  cr_expect_eq(bad, 0, "variant %d at block %u: %u of %u words wrong", (int)v, block, bad, n);
}

/* Variants selected per block size: nv_variants.cu's heavy built as written, at 64 and 32
 * registers and with __launch_bounds__(256, 4) as JIT options; the rule's choice at 256 and 1024
 * threads, the cache (a hit, per block size), every variant's output exact, the set's dispatch,
 * and measured mode (the fastest by device time replaces the metadata choice). On the mock,
 * exact figures (its JIT model: heavy 103 registers, 4 local bytes per register cut; relaxed
 * spills only below 56): heavy at 256 keeps the unbudgeted variant (2 blocks, no local memory)
 * against 4 and 8 blocks that spill, at 1024 only 64 and 32 registers allow the block, and 64
 * spills least; relaxed at 256 and 1024 takes 64 registers (4 blocks, no spill) over 32 (8
 * blocks, 96 local bytes). On a GPU: the rule recomputed from each variant's own figures. */
Test(nvidia, variants_selected_per_block_size) {
  nv_env_t e;
  nv_env(&e);
  bool mock = !strcmp(hsad_device_info(e.dev)->product_name, "hsad cuda-mock");
  hsad_program_t *progs[4];
  nv_variants_build(&e, progs);
  hsad_variant_set_t *set;
  OK(hsad_variant_set_from_programs(progs, 4, "heavy", &set));
  cr_expect_eq(hsad_variant_set_count(set), 4);
  for (uint32_t i = 0; i < 4; i++) {
    hsad_variant_choice_t c;
    hsad_status_t s = hsad_variant_set_candidate(set, i, 256, 0, &c);
    cr_log_info("heavy variant %u (budget %u regs, %u threads, %u blocks): %s: %u registers, %u "
                "local bytes, %u blocks of 256 per SM, max %u threads/block", i,
                nv_vbudgets[i].max_registers, nv_vbudgets[i].max_threads,
                nv_vbudgets[i].min_blocks_per_sm, s ? hsad_last_error() : "allows 256", c.regs,
                c.scratch_per_work_item, s ? 0 : c.blocks_per_sm,
                hsad_device_kernel_desc(hsad_variant_set_kernel(set, i))->max_flat_workgroup_size);
    OK(s);
    cr_expect_eq(c.index, i);
  }
  if (mock) {
    check_choice(set, 256, 0, HSAD_VARIANT_NO_SPILL, 4, 2, 103, 0);
    check_choice(set, 1024, 1, HSAD_VARIANT_LEAST_SPILL, 2, 1, 64, 156);
    hsad_variant_choice_t c;
    OK(hsad_variant_set_candidate(set, 2, 256, 0, &c));
    cr_expect(c.regs == 32 && c.scratch_per_work_item == 284 && c.blocks_per_sm == 8);
    OK(hsad_variant_set_candidate(set, 3, 256, 0, &c));
    cr_expect(c.regs == 64 && c.scratch_per_work_item == 156 && c.blocks_per_sm == 4);
    hsad_variant_set_t *rs;
    OK(hsad_variant_set_from_programs(progs, 4, "relaxed", &rs));
    check_choice(rs, 256, 1, HSAD_VARIANT_NO_SPILL, 4, 4, 64, 0);
    check_choice(rs, 1024, 1, HSAD_VARIANT_NO_SPILL, 2, 1, 64, 0);
    hsad_variant_set_stats_t st;
    OK(hsad_variant_set_stats(rs, &st));
    cr_expect_eq(st.rule_runs, 2);
    cr_expect_eq(st.cached_keys, 2);
    hsad_variant_set_destroy(rs);
  } else {
    for (uint32_t block = 256; block <= 1024; block *= 4) {
      uint32_t n, want = expected_choice(set, block, &n);
      hsad_variant_choice_t c;
      OK(hsad_variant_set_select(set, block, 0, &c, NULL));
      cr_log_info("heavy at %u threads: variant %u (%s, %u blocks per SM; %u of 4 allow it)",
                  block, c.index, c.scratch_per_work_item ? "least local memory" : "no local "
                  "memory", c.blocks_per_sm, c.candidates);
      cr_expect_eq(c.index, want, "block %u: variant %u, the rule over the figures says %u",
                   block, c.index, want);
      cr_expect_eq(c.candidates, n);
      bool cached = false;
      OK(hsad_variant_set_select(set, block, 0, &c, &cached));
      cr_expect(cached && c.index == want, "block %u: the cached choice", block);
    }
    /* the budgets held on the GPU's own JIT */
    hsad_variant_choice_t c;
    OK(hsad_variant_set_candidate(set, 1, 256, 0, &c));
    cr_expect_leq(c.regs, 64);
    OK(hsad_variant_set_candidate(set, 2, 256, 0, &c));
    cr_expect_leq(c.regs, 32);
    OK(hsad_variant_set_candidate(set, 3, 256, 0, &c));
    cr_expect_geq(c.blocks_per_sm, 4);
  }
  /* outputs: every variant at 256, the set at 256 and 1024 */
  enum { N = 65536, K = 16 };
  uint32_t *x, *y, *hx = malloc(N * 4), *want = malloc(N * 4);
  /* host-mapped: the host writes x and reads y (device memory would fault here) */
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&x));
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&y));
  for (uint32_t i = 0; i < N; i++) hx[i] = i * 2654435761u ^ 0x5bd1e995u;
  memcpy(x, hx, N * 4); /* pinned and mapped for the GPU: written in place */
  for (uint32_t i = 0; i < N; i++) want[i] = host_heavy(hx, N, K, i);
  hsad_queue_t *q;
  OK(hsad_queue_create(e.dev, &(hsad_queue_options_t){.profiling = true}, &q));
  for (uint32_t v = 0; v < 4; v++) run_heavy(q, set, v, 256, x, y, want, N, K);
  run_heavy(q, set, UINT32_MAX, 256, x, y, want, N, K);
  run_heavy(q, set, UINT32_MAX, 1024, x, y, want, N, K);
  /* measured mode at 256: each allowed variant timed, the fastest cached */
  uint32_t nv = N, kv = K;
  hsad_karg_t args[] = {HSAD_KARG_PTR(x), HSAD_KARG_PTR(y), HSAD_KARG_VAL(nv), HSAD_KARG_VAL(kv)};
  hsad_launch_t l = launch1(N, 256, args, 4);
  hsad_variant_tuning_t t;
  OK(hsad_variant_set_autotune(set, q, &l, hsad_now_ns() + 30 * SEC, &t));
  cr_expect_eq(t.count, 4);
  cr_expect_eq(t.timed, 4);
  uint32_t fastest = 0;
  for (uint32_t i = 0; i < 4; i++) {
    cr_log_info("heavy at 256 threads, variant %u: %llu ns", i, (unsigned long long)t.ns[i]);
    cr_expect_neq(t.ns[i], UINT64_MAX);
    if (t.ns[i] < t.ns[fastest]) fastest = i;
  }
  cr_log_info("measured fastest at 256: variant %u (%u blocks per SM)", t.choice.index,
              t.choice.blocks_per_sm);
  cr_expect_eq(t.choice.index, fastest);
  cr_expect_eq(t.choice.reason, HSAD_VARIANT_MEASURED);
  hsad_variant_choice_t c;
  bool cached = false;
  OK(hsad_variant_set_select(set, 256, 0, &c, &cached));
  cr_expect(cached && c.index == fastest && c.reason == HSAD_VARIANT_MEASURED);
  run_heavy(q, set, UINT32_MAX, 256, x, y, want, N, K);
  hsad_queue_destroy(q);
  free(hx);
  free(want);
  OK(hsad_buffer_free(x));
  OK(hsad_buffer_free(y));
  hsad_variant_set_destroy(set);
  for (uint32_t i = 0; i < 4; i++) hsad_program_destroy(progs[i]);
  nv_env_close(&e);
}

/* The variants' errors, each message exact: budgets out of range (below ptxas' 24 registers,
 * blocks without threads, blocks beside registers), a device that is not one, a block no
 * variant allows, a set mixing kernels, a queue without profiling for measured mode. */
Test(nvidia, variants_errors) {
  nv_env_t e;
  nv_env(&e);
  hsad_program_t *progs[4];
  const char *src = "extern \"C\" __global__ void k(int *p) { *p = 1; }";
  hsad_nv_compile_options_t o = {0};
  ERR_IS(hsad_nv_program_compile_variants(e.dev, src, "k.cu", &o,
                                          &(hsad_nv_budget_t){16, 0, 0}, 1, progs, NULL),
         HSAD_ERR_INVALID_ARGUMENT, "hsad_nv_program_compile_variants: variant 0: a budget of "
         "16 registers per thread is outside 24..255 (ptxas raises a cap below 24 to 24)");
  hsad_nv_budget_t two[2] = {{0, 0, 0}, {0, 0, 2}};
  ERR_IS(hsad_nv_program_compile_variants(e.dev, src, "k.cu", &o, two, 2, progs, NULL),
         HSAD_ERR_INVALID_ARGUMENT, "hsad_nv_program_compile_variants: variant 1: "
         "min_blocks_per_sm 2 needs max_threads, no max_registers (the driver ignores "
         "CU_JIT_MIN_CTA_PER_SM beside CU_JIT_MAX_REGISTERS) and at most 32");
  two[1] = (hsad_nv_budget_t){64, 256, 2};
  ERR_IS(hsad_nv_program_compile_variants(e.dev, src, "k.cu", &o, two, 2, progs, NULL),
         HSAD_ERR_INVALID_ARGUMENT, "hsad_nv_program_compile_variants: variant 1: "
         "min_blocks_per_sm 2 needs max_threads, no max_registers (the driver ignores "
         "CU_JIT_MIN_CTA_PER_SM beside CU_JIT_MAX_REGISTERS) and at most 32");
  two[1] = (hsad_nv_budget_t){0, 2048, 0};
  ERR_IS(hsad_nv_program_compile_variants(e.dev, src, "k.cu", &o, two, 2, progs, NULL),
         HSAD_ERR_INVALID_ARGUMENT, "hsad_nv_program_compile_variants: variant 1: max_threads "
         "2048 is above 1024 threads per block");
  int not_a_device;
  ERR_IS(hsad_nv_program_compile_variants((hsad_device_t *)&not_a_device, src, "k.cu", &o,
                                          nv_vbudgets, 1, progs, NULL),
         HSAD_ERR_UNSUPPORTED, "hsad_nv_program_compile_variants: the device is not a device of "
         "the open runtime");
  ERR_IS(hsad_nv_program_compile_variants(e.dev, src, "k.cu", &o, nv_vbudgets, 0, progs, NULL),
         HSAD_ERR_INVALID_ARGUMENT, "hsad_nv_program_compile_variants: 0 variants (1..16)");
  ERR_IS(hsad_nv_program_compile_variants(e.dev, src, "k.cu", &o, NULL, 1, progs, NULL),
         HSAD_ERR_INVALID_ARGUMENT, "hsad_nv_program_compile_variants: NULL budgets");
  nv_variants_build(&e, progs);
  hsad_variant_set_t *set;
  OK(hsad_variant_set_from_programs(progs, 4, "heavy", &set));
  hsad_variant_choice_t c;
  char want[512];
  snprintf(want, sizeof want, "nv_variants.cu[variant 0: as written]: kernel 'heavy': no variant "
           "allows block size 2048 with 0 bytes of dynamic shared memory (variants allow up to "
           "%u, %u, %u, %u threads)",
           hsad_device_kernel_desc(hsad_variant_set_kernel(set, 0))->max_flat_workgroup_size,
           hsad_device_kernel_desc(hsad_variant_set_kernel(set, 1))->max_flat_workgroup_size,
           hsad_device_kernel_desc(hsad_variant_set_kernel(set, 2))->max_flat_workgroup_size,
           hsad_device_kernel_desc(hsad_variant_set_kernel(set, 3))->max_flat_workgroup_size);
  ERR_IS(hsad_variant_set_select(set, 2048, 0, &c, NULL), HSAD_ERR_WORKGROUP, "%s", want);
  const hsad_device_kernel_t *mixed[2] = {hsad_variant_set_kernel(set, 0), kernel(&e, "saxpy")};
  hsad_variant_set_t *bad = NULL;
  ERR_IS(hsad_variant_set_create(mixed, 2, &bad), HSAD_ERR_INVALID_ARGUMENT,
         "variant 1 is kernel 'saxpy', variant 0 is 'heavy'");
  hsad_queue_t *plain;
  OK(hsad_queue_create(e.dev, NULL, &plain));
  uint32_t zero = 0;
  hsad_karg_t args[] = {HSAD_KARG_PTR(NULL), HSAD_KARG_PTR(NULL), HSAD_KARG_VAL(zero),
                        HSAD_KARG_VAL(zero)};
  hsad_launch_t l = launch1(256, 256, args, 4);
  ERR_IS(hsad_variant_set_autotune(set, plain, &l, hsad_now_ns() + SEC, NULL),
         HSAD_ERR_UNSUPPORTED, "hsad_variant_set_autotune: kernel 'heavy': the queue was created "
         "without profiling (hsad_queue_options_t.profiling): no device times to compare");
  hsad_queue_destroy(plain);
  hsad_variant_set_destroy(set);
  for (uint32_t i = 0; i < 4; i++) hsad_program_destroy(progs[i]);
  nv_env_close(&e);
}

/* variant_set_of_loaded_programs' part that runs on a GPU too: a set of saxpy from two loads
 * of the test cubin (figures are the compiler's, so the choice is checked against the
 * candidate's own), and the set's dispatch of saxpy exact. */
static void variant_set_of_loaded_programs_gpu(nv_env_t *e) {
  hsad_program_t *p1;
  OK(hsad_program_load_file(e->dev, NV_CUBIN, &p1));
  hsad_variant_set_t *set;
  OK(hsad_variant_set_from_programs((hsad_program_t *[]){e->prog, p1}, 2, "saxpy", &set));
  cr_assert_eq(hsad_variant_set_count(set), 2);
  hsad_variant_choice_t c, c0;
  OK(hsad_variant_set_select(set, 256, 0, &c, NULL));
  OK(hsad_variant_set_candidate(set, 0, 256, 0, &c0));
  cr_expect(c.index == 0 && c.candidates == 2 && c.blocks_per_sm == c0.blocks_per_sm &&
                c.regs == c0.regs && c.scratch_per_work_item == c0.scratch_per_work_item,
            "256 threads: variant %u of %u candidates, %u blocks (candidate 0: %u), %u registers "
            "(%u)", c.index, c.candidates, c.blocks_per_sm, c0.blocks_per_sm, c.regs, c0.regs);
  enum { N = 4096 };
  float *x, *y;
  OK(hsad_buffer_alloc(e->dev, N * 4, (void **)&x));
  OK(hsad_buffer_alloc(e->dev, N * 4, (void **)&y));
  for (uint32_t i = 0; i < N; i++) x[i] = (float)i, y[i] = 1.0f;
  float a = 2.5f;
  uint32_t n = N;
  hsad_karg_t args[] = {HSAD_KARG_VAL(a), HSAD_KARG_PTR(x), HSAD_KARG_PTR(y), HSAD_KARG_VAL(n)};
  hsad_launch_t l = launch1(N, 256, args, 4);
  hsad_queue_t *q;
  OK(hsad_queue_create(e->dev, NULL, &q));
  hsad_completion_t done;
  OK(hsad_variant_dispatch(q, set, &l, hsad_now_ns() + 10 * SEC, &done, NULL));
  OK(hsad_completion_wait(&done, hsad_now_ns() + 30 * SEC));
  for (uint32_t i = 0; i < N; i++)
    cr_assert_eq(y[i], 2.5f * (float)i + 1.0f, "y[%u] = %.1f", i, (double)y[i]);
  hsad_queue_destroy(q);
  hsad_buffer_free(x);
  hsad_buffer_free(y);
  hsad_variant_set_destroy(set);
  hsad_program_destroy(p1);
}

/* A variant set of NVIDIA kernels takes the NVIDIA rule (hsa-dispatch/variants.c: the set
 * keeps its kernels' backend table, hsad_variant_set_create; the AMD rule would read code
 * object metadata an NVIDIA kernel does not have), with no NVRTC: two programs loaded from one
 * image, so the two variants of heavy are alike and the rule keeps the lower index. The mock's
 * figures (heavy as written: 103 registers, no local memory; 16 warps per SM by registers,
 * 512 threads per block; 228 KiB of shared memory per SM, 1 KiB reserved per block): at 128
 * threads 4 blocks per SM, 2 with 100000 bytes of dynamic shared memory; 1024 threads allowed by
 * neither variant; the set's dispatch exact against the host. On a GPU heavy is not in the
 * cubin: variants_selected_per_block_size covers it there (with NVRTC). */
Test(nvidia, variant_set_of_loaded_programs) {
  nv_env_t e;
  nv_env(&e);
  variant_set_of_loaded_programs_gpu(&e);
  if (strcmp(hsad_device_info(e.dev)->product_name, "hsad cuda-mock")) {
    nv_env_close(&e); /* heavy is a kernel of the mock's modules only */
    return;
  }
  hsad_program_t *p1;
  OK(hsad_program_load_file(e.dev, NV_CUBIN, &p1));
  hsad_variant_set_t *set;
  OK(hsad_variant_set_from_programs((hsad_program_t *[]){e.prog, p1}, 2, "heavy", &set));
  cr_assert_eq(hsad_variant_set_count(set), 2);
  check_choice(set, 128, 0, HSAD_VARIANT_NO_SPILL, 2, 4, 103, 0);
  check_choice(set, 512, 0, HSAD_VARIANT_NO_SPILL, 2, 1, 103, 0);
  /* 100000 dynamic bytes: 233472 / (100000 + 1024) = 2 blocks per SM */
  hsad_variant_choice_t c;
  bool cached = true;
  OK(hsad_variant_set_select(set, 128, 100000, &c, &cached));
  cr_expect_not(cached);
  cr_expect(c.index == 0 && c.reason == HSAD_VARIANT_NO_SPILL && c.candidates == 2 &&
            c.blocks_per_sm == 2 && c.regs == 103 && c.scratch_per_work_item == 0 &&
            c.waves_per_simd == 2, "128 threads, 100000 dynamic bytes: variant %u (reason %d, "
            "%u candidates), %u blocks, %u registers, %u local bytes, %u waves", c.index,
            c.reason, c.candidates, c.blocks_per_sm, c.regs, c.scratch_per_work_item,
            c.waves_per_simd);
  OK(hsad_variant_set_candidate(set, 1, 256, 0, &c));
  cr_expect(c.index == 1 && c.reason == HSAD_VARIANT_NO_SPILL && c.candidates == 1 &&
            c.blocks_per_sm == 2 && c.regs == 103 && c.scratch_per_work_item == 0 &&
            c.waves_per_simd == 4, "candidate 1 at 256: %u blocks, %u registers", c.blocks_per_sm,
            c.regs);
  ERR_IS(hsad_variant_set_select(set, 1024, 0, &c, NULL), HSAD_ERR_WORKGROUP,
         "%s: kernel 'heavy': no variant allows block size 1024 with 0 bytes of dynamic shared "
         "memory (variants allow up to 512, 512 threads)", NV_CUBIN);
  hsad_variant_set_stats_t st;
  OK(hsad_variant_set_stats(set, &st));
  cr_expect_eq(st.rule_runs, 4, "rule runs: %llu", (unsigned long long)st.rule_runs);
  cr_expect_eq(st.cached_keys, 3, "cached keys: %u", st.cached_keys);
  /* the set's dispatch at 128 threads runs variant 0, every word exact */
  enum { N = 4096, K = 4 };
  uint32_t *x, *y, *want = malloc(N * 4);
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&x));
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&y));
  for (uint32_t i = 0; i < N; i++) x[i] = i * 2654435761u ^ 0x5bd1e995u;
  for (uint32_t i = 0; i < N; i++) want[i] = host_heavy(x, N, K, i);
  hsad_queue_t *q;
  OK(hsad_queue_create(e.dev, NULL, &q));
  run_heavy(q, set, UINT32_MAX, 128, x, y, want, N, K);
  hsad_queue_destroy(q);
  OK(hsad_buffer_free(x));
  OK(hsad_buffer_free(y));
  free(want);
  hsad_variant_set_destroy(set);
  hsad_program_destroy(p1);
  nv_env_close(&e);
}

/* One record's fields for a graph kernel node (mock: affine 32 registers, 100%; mix 128, 25%). */
static void nv_graph_record_is(const hsad_dispatch_record_t *r, hsad_queue_t *q, uint64_t id,
                               const char *kernel, uint32_t grid, bool mock) {
  cr_expect_eq(r->queue, q, "%s: queue", kernel);
  cr_expect_eq(r->packet_id, id, "%s: packet_id %llu, want %llu", kernel,
               (unsigned long long)r->packet_id, (unsigned long long)id);
  cr_expect_str_eq(r->kernel, kernel);
  cr_expect_eq(r->dims, 1);
  cr_expect_eq(r->grid[0], grid);
  cr_expect_eq(r->grid[1], 1u);
  cr_expect_eq(r->workgroup[0], 256);
  cr_expect_eq(r->execution, HSAD_EXECUTION_DEVICE);
  cr_expect_geq(r->submit_end_ns, r->submit_start_ns);
  if (mock) {
    bool mix = !strcmp(kernel, "mix");
    cr_expect_eq(r->vgpr_count, mix ? 128u : 32u, "%s: %u registers", kernel, r->vgpr_count);
    cr_expect_eq(r->occupancy_percent, mix ? 25u : 100u);
    cr_expect_eq(r->private_segment_size, mix ? 304u : 0u);
  }
}

/* Graph launches leave one record per kernel node in the monitor of the node's queue, as AMD's
 * fused and rolled-back launches do (issue 22). The fork/join over a profiling queue 0 and a
 * plain queue 1 (kernel nodes A and J on queue 0, B on queue 1): fused, the one cuGraphLaunch
 * on queue 0 is launch 0 there and every node's record carries it and the graph's device times
 * (the event pair around cuGraphLaunch: equal on all three records); sequential, each node is
 * its own launch (queue 0: FA 1, A 2, J 3; queue 1: FB 0, B 1, C 2) with its own times on the
 * profiling queue and none on the plain one; a fused launch with only queue 1 monitored still
 * records B (launch 4 of queue 0). Results stay exact. */
Test(nvidia, graph_monitor_records) {
  nv_env_t e;
  nv_env(&e);
  bool mock = !strcmp(hsad_device_info(e.dev)->product_name, "hsad cuda-mock");
  hsad_monitor_alerts_reset();
  enum { N = 1000 };
  forkjoin_t f;
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&f.a));
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&f.b));
  OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&f.c));
  hsad_queue_t *qs[2];
  OK(hsad_queue_create(e.dev, &(hsad_queue_options_t){.profiling = true}, &qs[0]));
  OK(hsad_queue_create(e.dev, NULL, &qs[1]));
  nv_alerts_t al = {0};
  hsad_monitor_options_t mo = {.capacity = 16, .alert = nv_alert, .alert_user = &al};
  OK(hsad_queue_monitor_enable(qs[0], &mo));
  OK(hsad_queue_monitor_enable(qs[1], &mo));
  hsad_graph_t *g = forkjoin_graph(&e, &f, N);
  hsad_graph_exec_t *x;
  OK(hsad_graph_instantiate(g, qs, 2, &x));
  hsad_completion_t c[2];
  hsad_graph_rollback_t why;
  uint64_t t_before = hsad_now_ns();
  OK(hsad_graph_launch(x, 0, HSAD_DEADLINE_NEVER, c, &why));
  cr_assert_eq(why, HSAD_GRAPH_ROLLBACK_NONE);
  OK(hsad_completion_wait_all(c, 2, hsad_now_ns() + 10 * SEC));
  uint64_t t_after = hsad_now_ns();
  forkjoin_check(&f, 234);
  hsad_dispatch_record_t r[8], r1[8];
  uint32_t got = 0, got1 = 0;
  uint64_t dropped = 9;
  OK(hsad_queue_monitor_drain(qs[0], r, 8, &got, &dropped));
  cr_assert_eq(got, 2u, "fused launch: %u records on queue 0, want 2 (A, J)", got);
  cr_expect_eq(dropped, 0u);
  OK(hsad_queue_monitor_drain(qs[1], r1, 8, &got1, NULL));
  cr_assert_eq(got1, 1u, "fused launch: %u records on queue 1, want 1 (B)", got1);
  nv_graph_record_is(&r[0], qs[0], 0, "affine", N, mock);
  nv_graph_record_is(&r[1], qs[0], 0, "mix", N, mock);
  nv_graph_record_is(&r1[0], qs[1], 0, "affine", N, mock);
  for (int i = 0; i < 3; i++) {
    const hsad_dispatch_record_t *ri = i < 2 ? &r[i] : &r1[0];
    cr_expect(ri->device_times, "fused record %d has no device times", i);
    cr_expect_eq(ri->start_ns, r[0].start_ns, "fused record %d: another start", i);
    cr_expect_eq(ri->end_ns, r[0].end_ns, "fused record %d: another end", i);
    cr_expect_eq(ri->submit_start_ns, r[0].submit_start_ns);
  }
  cr_expect_geq(r[0].submit_start_ns, t_before);
  cr_expect_geq(r[0].end_ns, r[0].start_ns);
  cr_expect_geq(r[0].start_ns + 5000, r[0].submit_start_ns);
  /* (times are anchored at the host's clock after cuEventSynchronize of the queue's first
   * event, so they may read late by that call's latency: up to tens of us on the mock) */
  cr_expect_leq(r[0].end_ns, t_after + 1000000, "end %llu, after the wait %llu",
                (unsigned long long)r[0].end_ns, (unsigned long long)t_after);
  if (mock) { /* mix's spill and occupancy alerts, once, from the graph's first launch */
    cr_assert_eq(al.n, 2, "%d alerts", al.n);
    cr_expect_eq(al.reason[0], HSAD_ALERT_SPILL_RATIO);
    cr_expect_str_eq(al.kernel[0], "mix");
    cr_expect_eq(al.reason[1], HSAD_ALERT_LOW_OCCUPANCY);
  }
  /* sequential: each kernel node its own launch */
  OK(hsad_graph_launch(x, HSAD_GRAPH_SEQUENTIAL, HSAD_DEADLINE_NEVER, c, &why));
  cr_assert_eq(why, HSAD_GRAPH_ROLLBACK_REQUESTED);
  OK(hsad_completion_wait_all(c, 2, hsad_now_ns() + 10 * SEC));
  forkjoin_check(&f, 234);
  OK(hsad_queue_monitor_drain(qs[0], r, 8, &got, NULL));
  cr_assert_eq(got, 2u, "sequential launch: %u records on queue 0, want 2", got);
  OK(hsad_queue_monitor_drain(qs[1], r1, 8, &got1, NULL));
  cr_assert_eq(got1, 1u, "sequential launch: %u records on queue 1, want 1", got1);
  nv_graph_record_is(&r[0], qs[0], 2, "affine", N, mock);
  nv_graph_record_is(&r[1], qs[0], 3, "mix", N, mock);
  nv_graph_record_is(&r1[0], qs[1], 1, "affine", N, mock);
  cr_expect(r[0].device_times && r[1].device_times, "sequential records on queue 0 untimed");
  cr_expect_geq(r[0].end_ns, r[0].start_ns);
  cr_expect_geq(r[1].start_ns + 1000, r[0].end_ns); /* J after A on queue 0's stream */
  cr_expect(!r1[0].device_times, "queue 1 does not profile");
  cr_expect_eq(r1[0].start_ns + r1[0].end_ns, 0u);
  /* only queue 1 monitored: B is still recorded (launch 4 of queue 0, timed by its pair) */
  hsad_queue_monitor_disable(qs[0]);
  OK(hsad_graph_launch(x, 0, HSAD_DEADLINE_NEVER, c, &why));
  OK(hsad_completion_wait_all(c, 2, hsad_now_ns() + 10 * SEC));
  OK(hsad_queue_monitor_drain(qs[1], r1, 8, &got1, NULL));
  cr_assert_eq(got1, 1u, "fused launch, queue 1 monitored: %u records, want 1", got1);
  nv_graph_record_is(&r1[0], qs[1], 4, "affine", N, mock);
  cr_expect(r1[0].device_times);
  forkjoin_check(&f, 234);
  cr_expect_eq(al.n, mock ? 2 : al.n);
  hsad_graph_exec_destroy(x);
  hsad_graph_destroy(g);
  hsad_queue_destroy(qs[0]);
  hsad_queue_destroy(qs[1]);
  hsad_buffer_free(f.a), hsad_buffer_free(f.b), hsad_buffer_free(f.c);
  nv_env_close(&e);
}
