/* test_kernels.c - every kernel of kernels/ dispatched with plain ROCr calls (no hsa-dispatch
 * code) on the first GPU agent (kfd-emu when run by scripts/run-tests.sh), and ROCr's own blit
 * kernels through hsa_amd_memory_async_copy / hsa_amd_memory_fill; results asserted exactly.
 *
 * The code object is TEST_KERNDIR/<name>-<agent ISA>-v<N>.hsaco. Kernarg blocks are zeroed to
 * .kernarg_segment_size (so code object v4's hidden global offsets are 0); v5 blocks also get the
 * implicit arguments a v5 kernel reads (block counts, group sizes, remainders, grid dims). */
#include <criterion/criterion.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef TEST_KERNDIR
#define TEST_KERNDIR "build/kernels"
#endif

#define TK_DEADLINE_MS 20000u

/* ---------------------------------------------------------------- ROCr plumbing */

typedef struct tk {
  hsa_agent_t gpu, cpu;
  char isa[64]; /* agent name, e.g. "gfx90a" */
  hsa_amd_memory_pool_t kernarg_pool, fine_pool, vram_pool;
  hsa_queue_t *queue;
  hsa_signal_t done;
} tk_t;

typedef struct tk_kernel {
  hsa_code_object_reader_t reader;
  hsa_executable_t exec;
  uint64_t object;
  uint32_t kernarg_size, group_size, private_size;
  int cov;
} tk_kernel_t;

static tk_t T;
static volatile hsa_status_t tk_queue_error = HSA_STATUS_SUCCESS;

static hsa_status_t tk_find_agent(hsa_agent_t a, void *data) {
  (void)data;
  hsa_device_type_t t;
  hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t);
  if (t == HSA_DEVICE_TYPE_GPU && T.gpu.handle == 0) T.gpu = a;
  if (t == HSA_DEVICE_TYPE_CPU && T.cpu.handle == 0) T.cpu = a;
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t tk_find_cpu_pool(hsa_amd_memory_pool_t p, void *data) {
  (void)data;
  hsa_amd_segment_t seg;
  uint32_t flags = 0;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg);
  if (seg != HSA_AMD_SEGMENT_GLOBAL) return HSA_STATUS_SUCCESS;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
  if (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) T.kernarg_pool = p;
  else if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) && !T.fine_pool.handle)
    T.fine_pool = p;
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t tk_find_gpu_pool(hsa_amd_memory_pool_t p, void *data) {
  (void)data;
  hsa_amd_segment_t seg;
  hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg);
  if (seg == HSA_AMD_SEGMENT_GLOBAL && !T.vram_pool.handle) T.vram_pool = p;
  return HSA_STATUS_SUCCESS;
}

static void tk_queue_cb(hsa_status_t status, hsa_queue_t *q, void *data) {
  (void)q;
  (void)data;
  tk_queue_error = status;
}

static void tk_setup(void) {
  memset(&T, 0, sizeof T);
  cr_assert_eq(hsa_init(), HSA_STATUS_SUCCESS, "hsa_init");
  hsa_iterate_agents(tk_find_agent, NULL);
  cr_assert(T.gpu.handle && T.cpu.handle, "a GPU and a CPU agent");
  cr_assert_eq(hsa_agent_get_info(T.gpu, HSA_AGENT_INFO_NAME, T.isa), HSA_STATUS_SUCCESS);
  hsa_amd_agent_iterate_memory_pools(T.cpu, tk_find_cpu_pool, NULL);
  hsa_amd_agent_iterate_memory_pools(T.gpu, tk_find_gpu_pool, NULL);
  cr_assert(T.kernarg_pool.handle && T.fine_pool.handle && T.vram_pool.handle, "pools");
  cr_assert_eq(hsa_queue_create(T.gpu, 64, HSA_QUEUE_TYPE_SINGLE, tk_queue_cb, NULL, UINT32_MAX,
                                UINT32_MAX, &T.queue),
               HSA_STATUS_SUCCESS, "hsa_queue_create");
  cr_assert_eq(hsa_signal_create(1, 0, NULL, &T.done), HSA_STATUS_SUCCESS);
}

static void tk_teardown(void) {
  if (T.done.handle) hsa_signal_destroy(T.done);
  if (T.queue) hsa_queue_destroy(T.queue);
  hsa_shut_down();
}

/* Memory both the host and the GPU can read and write (fine-grained system memory). */
static void *tk_alloc(size_t size) {
  void *p = NULL;
  cr_assert_eq(hsa_amd_memory_pool_allocate(T.fine_pool, size, 0, &p), HSA_STATUS_SUCCESS);
  cr_assert_eq(hsa_amd_agents_allow_access(1, &T.gpu, NULL, p), HSA_STATUS_SUCCESS);
  return p;
}

static void *tk_alloc_vram(size_t size) {
  void *p = NULL;
  cr_assert_eq(hsa_amd_memory_pool_allocate(T.vram_pool, size, 0, &p), HSA_STATUS_SUCCESS);
  return p;
}

static void tk_kernel_load(const char *file, const char *name, int cov, tk_kernel_t *k) {
  char path[512], sym[128];
  snprintf(path, sizeof path, "%s/%s-%s-v%d.hsaco", TEST_KERNDIR, file, T.isa, cov);
  FILE *f = fopen(path, "rb");
  cr_assert(f != NULL, "open %s", path);
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc(size);
  cr_assert(buf && fread(buf, 1, size, f) == (size_t)size, "read %s", path);
  fclose(f);
  memset(k, 0, sizeof *k);
  k->cov = cov;
  cr_assert_eq(hsa_code_object_reader_create_from_memory(buf, size, &k->reader),
               HSA_STATUS_SUCCESS, "reader for %s", path);
  cr_assert_eq(hsa_executable_create_alt(HSA_PROFILE_FULL, HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
                                         NULL, &k->exec),
               HSA_STATUS_SUCCESS);
  cr_assert_eq(hsa_executable_load_agent_code_object(k->exec, T.gpu, k->reader, NULL, NULL),
               HSA_STATUS_SUCCESS, "load %s", path);
  cr_assert_eq(hsa_executable_freeze(k->exec, NULL), HSA_STATUS_SUCCESS, "freeze %s", path);
  free(buf); /* ROCr copied the code object at load time */
  snprintf(sym, sizeof sym, "%s.kd", name);
  hsa_executable_symbol_t s;
  cr_assert_eq(hsa_executable_get_symbol_by_name(k->exec, sym, &T.gpu, &s), HSA_STATUS_SUCCESS,
               "symbol %s in %s", sym, path);
  hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT, &k->object);
  hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE,
                                 &k->kernarg_size);
  hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE,
                                 &k->group_size);
  hsa_executable_symbol_get_info(s, HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE,
                                 &k->private_size);
}

static void tk_kernel_unload(tk_kernel_t *k) {
  hsa_executable_destroy(k->exec);
  hsa_code_object_reader_destroy(k->reader);
}

/* A zeroed kernarg block of the kernel's .kernarg_segment_size (at least 16 bytes). */
static uint8_t *tk_kernarg(const tk_kernel_t *k) {
  void *p = NULL;
  size_t size = k->kernarg_size < 16 ? 16 : k->kernarg_size;
  cr_assert_eq(hsa_amd_memory_pool_allocate(T.kernarg_pool, size, 0, &p), HSA_STATUS_SUCCESS);
  cr_assert_eq(hsa_amd_agents_allow_access(1, &T.gpu, NULL, p), HSA_STATUS_SUCCESS);
  memset(p, 0, size);
  return p;
}

static void tk_put(uint8_t *ka, uint32_t off, const void *v, size_t size) {
  memcpy(ka + off, v, size);
}

/* Code object v5 implicit arguments, at `off` (explicit arguments' end rounded up to 8):
 * hidden_block_count_{x,y,z} u32 @0, hidden_group_size_{x,y,z} u16 @12, hidden_remainder_{x,y,z}
 * u16 @18, hidden_grid_dims u16 @64 (AMDGPU code object v5 ABI, as in the kernels' metadata). */
static void tk_put_v5_implicit(uint8_t *ka, uint32_t off, uint32_t dims, const uint32_t grid[3],
                               const uint32_t wg[3]) {
  for (int d = 0; d < 3; d++) {
    uint32_t count = grid[d] / wg[d];
    uint16_t size = (uint16_t)wg[d], rem = (uint16_t)(grid[d] % wg[d]);
    tk_put(ka, off + 4 * d, &count, 4);
    tk_put(ka, off + 12 + 2 * d, &size, 2);
    tk_put(ka, off + 18 + 2 * d, &rem, 2);
  }
  uint16_t gd = (uint16_t)dims;
  tk_put(ka, off + 64, &gd, 2);
}

/* Milliseconds of CLOCK_MONOTONIC since t0. */
static long tk_ms_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Reserves a slot (waiting while the ring is full, with a deadline), writes the packet body
 * with an INVALID header, publishes header | setup << 16 with one release store and rings the
 * doorbell with the packet's index. */
static void tk_submit(const void *packet64) {
  uint64_t idx = hsa_queue_add_write_index_scacq_screl(T.queue, 1);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (idx - hsa_queue_load_read_index_scacquire(T.queue) >= T.queue->size)
    cr_assert(tk_ms_since(&t0) < TK_DEADLINE_MS, "queue stayed full");
  uint8_t *slot = (uint8_t *)T.queue->base_address + (idx % T.queue->size) * 64;
  memcpy(slot + 4, (const uint8_t *)packet64 + 4, 60);
  uint32_t word;
  memcpy(&word, packet64, 4);
  __atomic_store_n((uint32_t *)slot, word, __ATOMIC_RELEASE);
  hsa_signal_store_screlease(T.queue->doorbell_signal, (hsa_signal_value_t)idx);
}

static bool tk_wait_zero(hsa_signal_t s, uint32_t ms) {
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    if (hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_EQ, 0, 10 * 1000 * 1000,
                                  HSA_WAIT_STATE_BLOCKED) == 0)
      return true;
    if (tk_ms_since(&t0) >= ms) return false;
  }
}

static uint16_t tk_header(hsa_packet_type_t type, bool barrier) {
  return (uint16_t)((type << HSA_PACKET_HEADER_TYPE) | ((barrier ? 1 : 0) << HSA_PACKET_HEADER_BARRIER) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
}

/* A 1-dimensional kernel dispatch packet of k with the BARRIER bit: grid_x work-items in
 * workgroups of wg_x, no completion signal, private and group segment sizes 0. */
static hsa_kernel_dispatch_packet_t tk_packet_1d(const tk_kernel_t *k, void *ka, uint32_t grid_x,
                                                 uint32_t wg_x) {
  hsa_kernel_dispatch_packet_t p;
  memset(&p, 0, sizeof p);
  p.header = tk_header(HSA_PACKET_TYPE_KERNEL_DISPATCH, true);
  p.setup = 1;
  p.workgroup_size_x = (uint16_t)wg_x;
  p.workgroup_size_y = p.workgroup_size_z = 1;
  p.grid_size_x = grid_x;
  p.grid_size_y = p.grid_size_z = 1;
  p.kernel_object = k->object;
  p.kernarg_address = ka;
  return p;
}

/* Arms T.done (value 1) as p's completion signal and submits p; does not wait. */
static void tk_submit_signalled(hsa_kernel_dispatch_packet_t *p) {
  p->completion_signal = T.done;
  hsa_signal_store_relaxed(T.done, 1);
  tk_submit(p);
}

/* Dispatches k with `ka` and waits (deadline) for completion through T.done. `dyn_lds` bytes of
 * dynamic group segment are added to the kernel's fixed group segment size. */
static void tk_dispatch_dyn(const tk_kernel_t *k, void *ka, uint32_t dims, const uint32_t grid[3],
                            const uint32_t wg[3], uint32_t dyn_lds) {
  hsa_kernel_dispatch_packet_t p;
  memset(&p, 0, sizeof p);
  p.header = tk_header(HSA_PACKET_TYPE_KERNEL_DISPATCH, true);
  p.setup = (uint16_t)(dims << HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS);
  p.workgroup_size_x = (uint16_t)wg[0];
  p.workgroup_size_y = (uint16_t)wg[1];
  p.workgroup_size_z = (uint16_t)wg[2];
  p.grid_size_x = grid[0];
  p.grid_size_y = grid[1];
  p.grid_size_z = grid[2];
  p.private_segment_size = k->private_size;
  p.group_segment_size = k->group_size + dyn_lds;
  p.kernel_object = k->object;
  p.kernarg_address = ka;
  tk_submit_signalled(&p);
  cr_assert(tk_wait_zero(T.done, TK_DEADLINE_MS), "dispatch did not complete within %u ms",
            TK_DEADLINE_MS);
  cr_assert_eq(tk_queue_error, HSA_STATUS_SUCCESS, "queue error 0x%x", tk_queue_error);
}

static void tk_dispatch(const tk_kernel_t *k, void *ka, uint32_t grid_x, uint32_t wg_x) {
  const uint32_t grid[3] = {grid_x, 1, 1}, wg[3] = {wg_x, 1, 1};
  tk_dispatch_dyn(k, ka, 1, grid, wg, 0);
}

TestSuite(kernels, .init = tk_setup, .fini = tk_teardown, .timeout = 120);

/* ---------------------------------------------------------------- kernels */

/* vector_add, n = 1000 with a grid of exactly 1000 work-items in workgroups of 256: the last
 * workgroup is partial (232). Elements past n stay untouched. */
static void tk_vector_add(int cov) {
  tk_kernel_t k;
  tk_kernel_load("vector_add", "vector_add", cov, &k);
  const uint32_t n = 1000, cap = 1024;
  float *a = tk_alloc(cap * 4), *b = tk_alloc(cap * 4), *c = tk_alloc(cap * 4);
  for (uint32_t i = 0; i < cap; i++) a[i] = (float)i * 1.5f, b[i] = 1.0f / (float)(i + 1), c[i] = -7.0f;
  uint8_t *ka = tk_kernarg(&k);
  tk_put(ka, 0, &a, 8);
  tk_put(ka, 8, &b, 8);
  tk_put(ka, 16, &c, 8);
  tk_put(ka, 24, &n, 4);
  const uint32_t grid[3] = {n, 1, 1}, wg[3] = {256, 1, 1};
  if (cov == 5) tk_put_v5_implicit(ka, 32, 1, grid, wg);
  tk_dispatch_dyn(&k, ka, 1, grid, wg, 0);
  for (uint32_t i = 0; i < cap; i++) {
    float want = i < n ? a[i] + b[i] : -7.0f;
    cr_assert_eq(c[i], want, "c[%u] = %a, want %a", i, c[i], want);
  }
  tk_kernel_unload(&k);
}

Test(kernels, vector_add_v4_partial_workgroup) { tk_vector_add(4); }
Test(kernels, vector_add_v5_partial_workgroup) { tk_vector_add(5); }

Test(kernels, saxpy_exact_fma) {
  tk_kernel_t k;
  tk_kernel_load("saxpy", "saxpy", 4, &k);
  const uint32_t n = 777;
  const float alpha = 3.14159274f;
  float *x = tk_alloc(n * 4), *y = tk_alloc(n * 4), *y0 = malloc(n * 4);
  for (uint32_t i = 0; i < n; i++) x[i] = 1.0f / (float)(i + 3), y[i] = y0[i] = (float)i - 0.1f;
  uint8_t *ka = tk_kernarg(&k);
  tk_put(ka, 0, &alpha, 4);
  tk_put(ka, 8, &x, 8);
  tk_put(ka, 16, &y, 8);
  tk_put(ka, 24, &n, 4);
  tk_dispatch(&k, ka, 800, 64);
  for (uint32_t i = 0; i < n; i++) {
    float want = fmaf(alpha, x[i], y0[i]);
    cr_assert_eq(y[i], want, "y[%u] = %a, want %a", i, y[i], want);
  }
  free(y0);
  tk_kernel_unload(&k);
}

Test(kernels, fill_stops_at_n) {
  tk_kernel_t k;
  tk_kernel_load("fill", "fill", 4, &k);
  const uint32_t n = 1001, value = 0xC0FFEE11u;
  uint32_t *dst = tk_alloc(1100 * 4);
  for (uint32_t i = 0; i < 1100; i++) dst[i] = 0x5A5A5A5Au;
  uint8_t *ka = tk_kernarg(&k);
  tk_put(ka, 0, &dst, 8);
  tk_put(ka, 8, &value, 4);
  tk_put(ka, 12, &n, 4);
  tk_dispatch(&k, ka, 1100, 100);
  for (uint32_t i = 0; i < 1100; i++)
    cr_assert_eq(dst[i], i < n ? value : 0x5A5A5A5Au, "dst[%u] = 0x%x", i, dst[i]);
  tk_kernel_unload(&k);
}

Test(kernels, empty_completes) {
  tk_kernel_t k;
  tk_kernel_load("empty", "empty", 4, &k);
  uint8_t *ka = tk_kernarg(&k);
  for (int i = 0; i < 10; i++) tk_dispatch(&k, ka, 1 + i * 97, 64);
  tk_kernel_unload(&k);
}

/* A kernarg block of order_record(counter, slots, idx). */
static uint8_t *tk_order_record_args(const tk_kernel_t *k, uint32_t *counter, uint32_t *slots,
                                     const uint32_t *idx) {
  uint8_t *ka = tk_kernarg(k);
  tk_put(ka, 0, &counter, 8);
  tk_put(ka, 8, &slots, 8);
  tk_put(ka, 16, idx, 4);
  return ka;
}

/* Three order_record dispatches in one queue with the BARRIER bit: tickets 0, 1, 2 in order,
 * then a barrier-AND packet whose dep_signal is completed by the host gates a fourth. */
Test(kernels, order_record_tickets_in_queue_order) {
  tk_kernel_t k;
  tk_kernel_load("order_record", "order_record", 4, &k);
  uint32_t *counter = tk_alloc(4), *slots = tk_alloc(16 * 4);
  *counter = 0;
  for (int i = 0; i < 16; i++) slots[i] = 0xFFFFFFFFu;
  const uint32_t order[3] = {2, 0, 1};
  for (int i = 0; i < 3; i++)
    tk_dispatch(&k, tk_order_record_args(&k, counter, slots, &order[i]), 256, 64);
  cr_assert_eq(slots[2], 0u);
  cr_assert_eq(slots[0], 1u);
  cr_assert_eq(slots[1], 2u);
  cr_assert_eq(*counter, 3u);

  hsa_signal_t gate;
  cr_assert_eq(hsa_signal_create(1, 0, NULL, &gate), HSA_STATUS_SUCCESS);
  hsa_barrier_and_packet_t b;
  memset(&b, 0, sizeof b);
  b.header = tk_header(HSA_PACKET_TYPE_BARRIER_AND, true);
  b.dep_signal[3] = gate; /* the others are zero handles: satisfied */
  tk_submit(&b);
  const uint32_t idx = 7;
  uint8_t *ka = tk_order_record_args(&k, counter, slots, &idx);
  hsa_kernel_dispatch_packet_t p = tk_packet_1d(&k, ka, 64, 64);
  tk_submit_signalled(&p);
  cr_assert_eq(tk_wait_zero(T.done, 100), false, "dispatch ran before its barrier-AND gate");
  cr_assert_eq(slots[7], 0xFFFFFFFFu);
  hsa_signal_store_screlease(gate, 0);
  cr_assert(tk_wait_zero(T.done, TK_DEADLINE_MS));
  cr_assert_eq(slots[7], 3u);
  hsa_signal_destroy(gate);
  tk_kernel_unload(&k);
}

Test(kernels, count_dispatch_once_per_dispatch) {
  tk_kernel_t k;
  tk_kernel_load("count_dispatch", "count_dispatch", 4, &k);
  uint32_t *counter = tk_alloc(4);
  *counter = 5;
  uint8_t *ka = tk_kernarg(&k);
  const uint32_t value = 3;
  tk_put(ka, 0, &counter, 8);
  tk_put(ka, 8, &value, 4);
  /* 50 packets, one completion wait at the end: the BARRIER bit orders them. */
  hsa_kernel_dispatch_packet_t p = tk_packet_1d(&k, ka, 1000, 64);
  for (int i = 0; i < 49; i++) tk_submit(&p);
  tk_submit_signalled(&p);
  cr_assert(tk_wait_zero(T.done, TK_DEADLINE_MS));
  cr_assert_eq(*counter, 5u + 50u * 3u);
  tk_kernel_unload(&k);
}

/* Host model of kernels/lds_reduce.cl for one workgroup. */
static float tk_lds_reduce_model(const float *in, uint32_t n, uint32_t base, uint32_t lsz) {
  float tmp[256];
  for (uint32_t l = 0; l < lsz; l++) tmp[l] = base + l < n ? in[base + l] : 0.0f;
  for (uint32_t s = 128; s > 0; s >>= 1)
    for (uint32_t l = 0; l < s && l + s < lsz; l++) tmp[l] += tmp[l + s];
  return tmp[0];
}

static void tk_lds_reduce(bool dyn, uint32_t wg_x) {
  tk_kernel_t k;
  tk_kernel_load("lds_reduce", dyn ? "lds_reduce_dyn" : "lds_reduce", 4, &k);
  cr_assert_eq(k.group_size, dyn ? 0u : 1024u, ".group_segment_fixed_size");
  const uint32_t n = 1000, grid = 1000;
  uint32_t groups = (grid + wg_x - 1) / wg_x;
  float *in = tk_alloc(n * 4), *partial = tk_alloc(groups * 4);
  for (uint32_t i = 0; i < n; i++) in[i] = 1.0f / (float)(i + 1) + (float)(i % 7);
  for (uint32_t g = 0; g < groups; g++) partial[g] = NAN;
  uint8_t *ka = tk_kernarg(&k);
  tk_put(ka, 0, &in, 8);
  tk_put(ka, 8, &partial, 8);
  tk_put(ka, 16, &n, 4);
  const uint32_t g3[3] = {grid, 1, 1}, w3[3] = {wg_x, 1, 1};
  if (dyn) {
    const uint32_t lds_offset = 0; /* dynamic LDS starts after the (zero) fixed size */
    tk_put(ka, 20, &lds_offset, 4);
  }
  tk_dispatch_dyn(&k, ka, 1, g3, w3, dyn ? wg_x * 4 : 0);
  for (uint32_t g = 0; g < groups; g++) {
    uint32_t base = g * wg_x, lsz = grid - base < wg_x ? grid - base : wg_x;
    float want = tk_lds_reduce_model(in, n, base, lsz);
    cr_assert_eq(partial[g], want, "partial[%u] = %a, want %a", g, partial[g], want);
  }
  tk_kernel_unload(&k);
}

Test(kernels, lds_reduce_static_partial_workgroup) { tk_lds_reduce(false, 256); }
Test(kernels, lds_reduce_static_wg96) { tk_lds_reduce(false, 96); }
Test(kernels, lds_reduce_dynamic_lds) { tk_lds_reduce(true, 128); }

static uint32_t tk_big_private_model(uint32_t s) {
  uint32_t p[1024], j = s & 1023, acc = 0;
  for (uint32_t k = 0; k < 1024; k++) p[k] = s ^ (k * 2654435761u);
  for (uint32_t k = 0; k < 1024; k++) acc += p[j], j = (j * 5 + 1) & 1023;
  return acc;
}

Test(kernels, big_private_uses_scratch) {
  tk_kernel_t k;
  tk_kernel_load("big_private", "big_private", 4, &k);
  cr_assert_geq(k.private_size, 4096u, ".private_segment_fixed_size = %u", k.private_size);
  const uint32_t n = 300;
  uint32_t *in = tk_alloc(n * 4), *out = tk_alloc(n * 4);
  for (uint32_t i = 0; i < n; i++) in[i] = i * 2654435761u + 12345u, out[i] = 0;
  uint8_t *ka = tk_kernarg(&k);
  tk_put(ka, 0, &in, 8);
  tk_put(ka, 8, &out, 8);
  tk_put(ka, 16, &n, 4);
  tk_dispatch(&k, ka, n, 64);
  for (uint32_t i = 0; i < n; i++)
    cr_assert_eq(out[i], tk_big_private_model(in[i]), "out[%u] = 0x%x", i, out[i]);
  tk_kernel_unload(&k);
}

/* A twin reads arguments at the metadata's offsets: a NULL buffer the kernel dereferences is a
 * queue error (memory aperture violation), reported through the queue's error callback. */
Test(kernels, null_buffer_is_queue_error) {
  tk_kernel_t k;
  tk_kernel_load("fill", "fill", 4, &k);
  uint8_t *ka = tk_kernarg(&k);
  const uint32_t n = 64, value = 1;
  tk_put(ka, 8, &value, 4);
  tk_put(ka, 12, &n, 4);
  hsa_kernel_dispatch_packet_t p = tk_packet_1d(&k, ka, 64, 64);
  tk_submit_signalled(&p);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (tk_queue_error == HSA_STATUS_SUCCESS) {
    cr_assert(tk_ms_since(&t0) < TK_DEADLINE_MS, "no queue error within the deadline");
    struct timespec nap = {0, 1000000};
    nanosleep(&nap, NULL);
  }
  cr_assert_eq(tk_queue_error, HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION, "queue error 0x%x",
               tk_queue_error);
}

/* ---------------------------------------------------------------- ROCr's blit kernels */

static void tk_pattern(uint8_t *p, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)((i * 131u + seed * 7u + (i >> 9)) ^ seed);
}

/* dst_gpu / src_gpu: which side is VRAM (its agent is the GPU, otherwise the CPU). */
static void tk_async_copy(void *dst, bool dst_gpu, const void *src, bool src_gpu, size_t size) {
  hsa_signal_store_relaxed(T.done, 1);
  cr_assert_eq(hsa_amd_memory_async_copy(dst, dst_gpu ? T.gpu : T.cpu, src,
                                         src_gpu ? T.gpu : T.cpu, size, 0, NULL, T.done),
               HSA_STATUS_SUCCESS);
  cr_assert(tk_wait_zero(T.done, TK_DEADLINE_MS), "async copy of %zu bytes timed out", size);
}

/* Host -> VRAM -> host round trips of assorted sizes and offsets: equal offsets modulo 4 use
 * CopyAligned (4 phases), different ones CopyMisaligned. Bytes around the copy stay untouched. */
Test(kernels, rocr_blit_copy_aligned_and_misaligned_byte_exact) {
  const size_t cap = (4u << 20) + 64;
  uint8_t *h_src = tk_alloc(cap), *h_dst = tk_alloc(cap), *dev = tk_alloc_vram(cap);
  const size_t sizes[] = {1, 3, 4, 63, 255, 4096 + 7, 65536, (1u << 20) + 13, 4u << 20};
  const size_t offs[][3] = {{0, 0, 0}, {1, 1, 1}, {3, 2, 1}, {0, 5, 3}, {2, 0, 6}};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
    for (size_t oi = 0; oi < sizeof offs / sizeof offs[0]; oi++) {
      size_t n = sizes[si], so = offs[oi][0], dvo = offs[oi][1], d2o = offs[oi][2];
      if (n + 8 > cap) n = cap - 8;
      tk_pattern(h_src, cap, (uint32_t)(si * 10 + oi));
      memset(h_dst, 0xEE, cap);
      tk_async_copy(dev + dvo, true, h_src + so, false, n);
      tk_async_copy(h_dst + d2o, false, dev + dvo, true, n);
      cr_assert(memcmp(h_dst + d2o, h_src + so, n) == 0, "size %zu offsets %zu/%zu/%zu differ", n,
                so, dvo, d2o);
      for (size_t i = 0; i < d2o; i++) cr_assert_eq(h_dst[i], 0xEE, "byte before copy written");
      for (size_t i = d2o + n; i < d2o + n + 8 && i < cap; i++)
        cr_assert_eq(h_dst[i], 0xEE, "byte %zu after copy written", i - d2o - n);
    }
}

/* hsa_amd_memory_fill (ROCr's Fill kernel) of count dwords in VRAM at a 4-aligned offset,
 * read back with a copy: exact, and nothing outside [off, off + count) written. */
Test(kernels, rocr_blit_fill_exact) {
  const size_t cap = (2u << 20) + 64;
  uint32_t *dev = tk_alloc_vram(cap), *host = tk_alloc(cap);
  const size_t counts[] = {1, 5, 1023, 4096 + 3, 100000, (2u << 20) / 4 - 4};
  for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++) {
    size_t count = counts[ci], off = ci % 3;
    uint32_t value = 0x01020304u * (uint32_t)(ci + 1);
    cr_assert_eq(hsa_amd_memory_fill(dev, 0xABABABABu, cap / 4), HSA_STATUS_SUCCESS);
    cr_assert_eq(hsa_amd_memory_fill(dev + off, value, count), HSA_STATUS_SUCCESS);
    memset(host, 0, cap);
    tk_async_copy(host, false, dev, true, cap);
    for (size_t i = 0; i < cap / 4; i++) {
      uint32_t want = i >= off && i < off + count ? value : 0xABABABABu;
      if (host[i] != want)
        cr_assert_fail("count %zu: word %zu = 0x%x, want 0x%x", count, i, host[i], want);
    }
  }
}
