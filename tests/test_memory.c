/* test_memory.c - memory/: device and host allocations, registration, hsad_mem_info, every
 * bad-input row with its code and full message, NUMA placement with 2 emulated CPU nodes. */
#include <numa.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "memory/hsad_memory.h"
#include "tests/test_dispatch_util.h"

/* Asserts the exact status and the exact message (printf-formatted expectation). */
#define MEM_ERR(expr, status, ...)                                                          \
  do {                                                                                      \
    char want_[1024];                                                                       \
    snprintf(want_, sizeof want_, __VA_ARGS__);                                             \
    hsad_status_t s_ = (expr);                                                              \
    cr_assert_eq(s_, status, "%s -> %s (want %s): %s", #expr, hsad_status_name(s_),         \
                 hsad_status_name(status), hsad_last_error());                              \
    cr_assert_str_eq(hsad_last_error(), want_);                                             \
  } while (0)

static uint64_t pool_granule(hsad_device_t *dev, const char *kind) {
  const hsad_device_info_t *i = hsad_device_info(dev);
  for (uint32_t k = 0; k < i->pool_count; k++)
    if (i->pools[k].segment == 0 && !strcmp(i->pools[k].kind, kind)) return i->pools[k].alloc_granule;
  cr_assert_fail("device has no %s pool", kind);
  return 0;
}

Test(memory, device_alloc_info_free) {
  th_env_t e;
  th_open(&e);
  void *p = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 1000000, NULL, 0, &p));
  cr_assert_eq((uintptr_t)p % 4096, 0);
  hsad_mem_info_t mi;
  TH_OK(hsad_mem_info((char *)p + 999999, &mi));
  cr_assert_eq(mi.base, p);
  cr_assert_eq(mi.device_ptr, p);
  cr_assert_eq(mi.size, 1000000);
  cr_assert_eq(mi.capacity, 1000000);
  cr_assert_eq(mi.kind, HSAD_MEM_DEVICE);
  cr_assert_eq(mi.device, e.dev);
  cr_assert_eq(mi.numa_node, -1);
  cr_assert_eq(mi.page_node, -1);
  cr_assert_eq(mi.access_mask, 1u);
  cr_assert_str_eq(hsad_mem_kind_name(mi.kind), "device");
  /* one past the end is not inside it */
  MEM_ERR(hsad_mem_info((char *)p + 1000000, &mi), HSAD_ERR_NOT_ALLOCATED,
          "hsad_mem_info: %p was not allocated or registered by hsad", (void *)((char *)p + 1000000));
  TH_OK(hsad_mem_free(p));
  MEM_ERR(hsad_mem_info((char *)p + 5, &mi), HSAD_ERR_FREED,
          "hsad_mem_info: %p is in device memory that was freed (1000000 bytes at %p)",
          (void *)((char *)p + 5), p);
  TH_OK(hsad_runtime_close(e.rt));
}

Test(memory, host_fine_and_coarse_on_nearest_node) {
  th_env_t e;
  th_open(&e);
  const hsad_cpu_info_t *cpu = hsad_cpu_info(e.rt, (uint32_t)hsad_device_info(e.dev)->nearest_cpu);
  cr_assert_not_null(cpu);
  hsad_mem_kind_t kinds[2] = {HSAD_MEM_HOST_FINE, HSAD_MEM_HOST_COARSE};
  for (int k = 0; k < 2; k++) {
    uint8_t *p = NULL;
    TH_OK(hsad_mem_alloc(e.dev, kinds[k], 3 * 4096 + 1, NULL, 0, (void **)&p));
    for (size_t i = 0; i < 3 * 4096 + 1; i++) p[i] = (uint8_t)(i * 7 + k);
    for (size_t i = 0; i < 3 * 4096 + 1; i++) cr_assert_eq(p[i], (uint8_t)(i * 7 + k));
    hsad_mem_info_t mi;
    TH_OK(hsad_mem_info(p + 4096, &mi));
    cr_assert_eq(mi.kind, kinds[k]);
    cr_assert_eq(mi.size, 3 * 4096 + 1);
    cr_assert_eq(mi.numa_node, (int32_t)cpu->numa_node);
    int32_t node = -2;
    TH_OK(hsad_numa_page_node(p, &node));
    cr_assert_eq(mi.page_node, node);
    cr_assert_eq(mi.access_mask, 1u);
    TH_OK(hsad_mem_free(p));
  }
  TH_OK(hsad_runtime_close(e.rt));
}

Test(memory, register_unregister) {
  th_env_t e;
  th_open(&e);
  size_t len = 64 * 1024;
  uint8_t *buf = malloc(len + 100);
  cr_assert_not_null(buf);
  for (size_t i = 0; i < len + 100; i++) buf[i] = (uint8_t)i;
  uint8_t *p = buf + 37; /* unaligned on purpose */
  void *dptr = NULL;
  TH_OK(hsad_mem_register(e.dev, p, len, NULL, 0, &dptr));
  cr_assert_not_null(dptr);
  hsad_mem_info_t mi;
  TH_OK(hsad_mem_info(p + len - 1, &mi));
  cr_assert_eq(mi.base, p);
  cr_assert_eq(mi.device_ptr, dptr);
  cr_assert_eq(mi.size, len);
  cr_assert_eq(mi.kind, HSAD_MEM_REGISTERED);
  cr_assert_eq(mi.device, e.dev);
  /* overlapping registrations are refused before ROCr pins anything */
  MEM_ERR(hsad_mem_register(e.dev, p + len - 1, 16, NULL, 0, NULL), HSAD_ERR_OVERLAP,
          "hsad_mem_register: %p + 16 bytes overlaps registered memory at %p (%zu bytes)",
          (void *)(p + len - 1), (void *)p, len);
  MEM_ERR(hsad_mem_free(p), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_free: %p is registered caller memory (%zu bytes): use hsad_mem_unregister",
          (void *)p, len);
  MEM_ERR(hsad_mem_unregister(p + 1), HSAD_ERR_NOT_ALLOCATED,
          "hsad_mem_unregister: %p is inside registered memory at %p (offset 1, %zu bytes): "
          "pass the base address", (void *)(p + 1), (void *)p, len);
  TH_OK(hsad_mem_unregister(p));
  MEM_ERR(hsad_mem_unregister(p), HSAD_ERR_FREED,
          "hsad_mem_unregister: %p was already unregistered (%zu bytes at %p)", (void *)p, len,
          (void *)p);
  /* the caller's bytes are untouched */
  for (size_t i = 0; i < len + 100; i++) cr_assert_eq(buf[i], (uint8_t)i);
  /* registering again after unregistering works */
  TH_OK(hsad_mem_register(e.dev, p, len, NULL, 0, NULL));
  TH_OK(hsad_mem_unregister(p));
  free(buf);
  TH_OK(hsad_runtime_close(e.rt));
}

Test(memory, bad_input_rows) {
  th_env_t e;
  th_open(&e);
  void *p = (void *)0x1;
  int not_a_device = 0;
  hsad_device_t *foreign = (hsad_device_t *)&not_a_device;
  uint64_t granule = pool_granule(e.dev, "coarse-grained");
  uint64_t vram = hsad_device_info(e.dev)->local_memory_bytes;

  MEM_ERR(hsad_mem_alloc(NULL, HSAD_MEM_DEVICE, 4096, NULL, 0, &p), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_alloc: device is NULL");
  MEM_ERR(hsad_mem_alloc(foreign, HSAD_MEM_DEVICE, 4096, NULL, 0, &p), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_alloc: device %p is not a device of the open hsa-dispatch runtime",
          (void *)foreign);
  MEM_ERR(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 4096, NULL, 0, NULL), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_alloc: out_ptr is NULL");
  MEM_ERR(hsad_mem_alloc(e.dev, (hsad_mem_kind_t)9, 4096, NULL, 0, &p), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_alloc: kind 9 is not HSAD_MEM_DEVICE, HSAD_MEM_HOST_FINE or "
          "HSAD_MEM_HOST_COARSE");
  MEM_ERR(hsad_mem_alloc(e.dev, HSAD_MEM_REGISTERED, 4096, NULL, 0, &p),
          HSAD_ERR_INVALID_ARGUMENT, "hsad_mem_alloc: kind 4 is not HSAD_MEM_DEVICE, "
          "HSAD_MEM_HOST_FINE or HSAD_MEM_HOST_COARSE");
  MEM_ERR(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 0, NULL, 0, &p), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_alloc: size is 0");
  MEM_ERR(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, SIZE_MAX, NULL, 0, &p), HSAD_ERR_RANGE,
          "hsad_mem_alloc: %zu bytes overflow when rounded to the coarse-grained device pool's "
          "allocation granule (%llu bytes)", (size_t)SIZE_MAX, (unsigned long long)granule);
  MEM_ERR(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, vram + 1, NULL, 0, &p), HSAD_ERR_OUT_OF_MEMORY,
          "hsad_mem_alloc: %llu bytes exceed the coarse-grained device pool of device 0 (%llu "
          "bytes)", (unsigned long long)(vram + 1), (unsigned long long)vram);
  MEM_ERR(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 4096, NULL, 2, &p), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_alloc: access is NULL with access_count 2");
  hsad_device_t *acc[2] = {e.dev, foreign};
  MEM_ERR(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_FINE, 4096, acc, 2, &p), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_alloc: access[1] (%p) is not a device of the open hsa-dispatch runtime",
          (void *)foreign);
  MEM_ERR(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_FINE, 4096, acc, 17, &p),
          HSAD_ERR_INVALID_ARGUMENT, "hsad_mem_alloc: access_count 17 is above 16");
  cr_assert_eq(p, (void *)0x1, "no failed call wrote *out_ptr");

  /* frees: nothing freed or corrupted by a bad one */
  uint32_t *a = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_FINE, 8192, acc, 1, (void **)&a));
  for (uint32_t i = 0; i < 2048; i++) a[i] = i * 3u;
  MEM_ERR(hsad_mem_free(a + 1), HSAD_ERR_NOT_ALLOCATED,
          "hsad_mem_free: %p is inside host-fine memory at %p (offset 4, 8192 bytes): pass the "
          "base address", (void *)(a + 1), (void *)a);
  int on_stack = 0;
  MEM_ERR(hsad_mem_free(&on_stack), HSAD_ERR_NOT_ALLOCATED,
          "hsad_mem_free: %p was not allocated or registered by hsad", (void *)&on_stack);
  MEM_ERR(hsad_mem_unregister(a), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_unregister: %p is host-fine memory hsad allocated (8192 bytes): use "
          "hsad_mem_free", (void *)a);
  hsad_mem_info_t mi;
  TH_OK(hsad_mem_info(a, &mi));
  cr_assert_eq(mi.size, 8192);
  for (uint32_t i = 0; i < 2048; i++) cr_assert_eq(a[i], i * 3u);
  TH_OK(hsad_mem_free(a));
  MEM_ERR(hsad_mem_free(a), HSAD_ERR_FREED,
          "hsad_mem_free: %p was already freed (host-fine memory of 8192 bytes at %p)", (void *)a,
          (void *)a);
  TH_OK(hsad_mem_free(NULL));

  /* registration rows */
  char buf[64];
  MEM_ERR(hsad_mem_register(e.dev, NULL, 64, NULL, 0, NULL), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_register: ptr is NULL");
  MEM_ERR(hsad_mem_register(e.dev, buf, 0, NULL, 0, NULL), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_register: size is 0");
  MEM_ERR(hsad_mem_register(e.dev, buf, SIZE_MAX, NULL, 0, NULL), HSAD_ERR_RANGE,
          "hsad_mem_register: %p + %zu bytes wraps the address space", (void *)buf,
          (size_t)SIZE_MAX);
  MEM_ERR(hsad_mem_register(foreign, buf, 64, NULL, 0, NULL), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_register: device %p is not a device of the open hsa-dispatch runtime",
          (void *)foreign);
  MEM_ERR(hsad_mem_unregister(NULL), HSAD_ERR_INVALID_ARGUMENT, "hsad_mem_unregister: ptr is NULL");
  MEM_ERR(hsad_mem_info(NULL, &mi), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_info: NULL ptr");
  TH_OK(hsad_runtime_close(e.rt));
}

Test(memory, closed_runtime) {
  th_env_t e;
  th_open(&e);
  hsad_device_t *dev = e.dev;
  TH_OK(hsad_runtime_close(e.rt));
  void *p = NULL;
  MEM_ERR(hsad_mem_alloc(dev, HSAD_MEM_DEVICE, 4096, NULL, 0, &p), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_mem_alloc: device %p is not a device of the open hsa-dispatch runtime",
          (void *)dev);
  MEM_ERR(hsad_host_pool_get_node(e.rt, 0, (hsad_host_pool_t **)&p), HSAD_ERR_CLOSED,
          "hsad_host_pool_get_node: the hsa-dispatch runtime is closed (call hsad_runtime_open)");
}

/* Issue 21: hsad_buffer_alloc is a tracked form of hsad_mem_alloc (one allocator, one
 * registry): hsad_mem_info answers for it, either free frees it, and a double, interior or
 * foreign free is an error naming the pointer that never reaches ROCr. */
Test(memory, buffer_alloc_one_registry) {
  th_env_t e;
  th_open(&e);
  const hsad_cpu_info_t *cpu = hsad_cpu_info(e.rt, (uint32_t)hsad_device_info(e.dev)->nearest_cpu);
  cr_assert_not_null(cpu);
  uint8_t *a = NULL, *b = NULL;
  TH_OK(hsad_buffer_alloc(e.dev, 10000, (void **)&a));
  cr_assert_eq((uintptr_t)a % 4096, 0);
  for (size_t i = 0; i < 10000; i++) cr_assert_eq(a[i], 0, "byte %zu is zeroed", i);
  hsad_mem_info_t mi;
  TH_OK(hsad_mem_info(a + 9999, &mi));
  cr_assert_eq(mi.base, a);
  cr_assert_eq(mi.device_ptr, a);
  cr_assert_eq(mi.size, 10000);
  cr_assert_eq(mi.capacity, 10000);
  cr_assert_eq(mi.kind, HSAD_MEM_HOST_FINE);
  cr_assert_eq(mi.device, e.dev);
  cr_assert_eq(mi.numa_node, (int32_t)cpu->numa_node);
  cr_assert_eq(mi.access_mask, 1u);
  /* an interior pointer and a foreign pointer: refused, the buffer stays live */
  MEM_ERR(hsad_buffer_free(a + 8), HSAD_ERR_NOT_ALLOCATED,
          "hsad_buffer_free: %p is inside host-fine memory at %p (offset 8, 10000 bytes): pass "
          "the base address", (void *)(a + 8), (void *)a);
  char *heap = malloc(64);
  cr_assert_not_null(heap);
  MEM_ERR(hsad_buffer_free(heap), HSAD_ERR_NOT_ALLOCATED,
          "hsad_buffer_free: %p was not allocated or registered by hsad", (void *)heap);
  MEM_ERR(hsad_mem_free(heap), HSAD_ERR_NOT_ALLOCATED,
          "hsad_mem_free: %p was not allocated or registered by hsad", (void *)heap);
  free(heap);
  TH_OK(hsad_mem_info(a, &mi));
  a[9999] = 7;
  /* hsad_buffer_alloc memory freed by hsad_mem_free; the second free of either kind is FREED */
  TH_OK(hsad_mem_free(a));
  MEM_ERR(hsad_buffer_free(a), HSAD_ERR_FREED,
          "hsad_buffer_free: %p was already freed (host-fine memory of 10000 bytes at %p)",
          (void *)a, (void *)a);
  MEM_ERR(hsad_mem_info(a + 5, &mi), HSAD_ERR_FREED,
          "hsad_mem_info: %p is in host-fine memory that was freed (10000 bytes at %p)",
          (void *)(a + 5), (void *)a);
  TH_OK(hsad_buffer_alloc(e.dev, 4096, (void **)&b));
  TH_OK(hsad_buffer_free(b));
  MEM_ERR(hsad_buffer_free(b), HSAD_ERR_FREED,
          "hsad_buffer_free: %p was already freed (host-fine memory of 4096 bytes at %p)",
          (void *)b, (void *)b);
  MEM_ERR(hsad_mem_free(b), HSAD_ERR_FREED,
          "hsad_mem_free: %p was already freed (host-fine memory of 4096 bytes at %p)",
          (void *)b, (void *)b);
  /* hsad_mem_alloc memory freed by hsad_buffer_free; NULL is a no-op */
  void *d = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 4096, NULL, 0, &d));
  TH_OK(hsad_buffer_free(d));
  MEM_ERR(hsad_mem_info(d, &mi), HSAD_ERR_FREED,
          "hsad_mem_info: %p is in device memory that was freed (4096 bytes at %p)", d, d);
  TH_OK(hsad_buffer_free(NULL));
  /* memory of a runtime since closed: ROCr released it at close; the library says so */
  TH_OK(hsad_buffer_alloc(e.dev, 64, (void **)&b));
  TH_OK(hsad_runtime_close(e.rt));
  MEM_ERR(hsad_buffer_free(b), HSAD_ERR_NOT_ALLOCATED,
          "hsad_buffer_free: %p was not allocated or registered by hsad (no allocation since "
          "the runtime opened)", (void *)b);
  MEM_ERR(hsad_buffer_alloc(e.dev, 64, (void **)&b), HSAD_ERR_INVALID_ARGUMENT,
          "hsad_buffer_alloc: device %p is not a device of the open hsa-dispatch runtime",
          (void *)e.dev);
}

/* With 2 emulated CPU nodes and GPUs on nodes 0 and 1 (round robin), each GPU's host memory and
 * pool come from its own node. */
Test(memory, nearest_numa_node_two_nodes) {
  setenv("KFD_EMU_GPUS", "2", 1);
  setenv("KFD_EMU_CPU_NODES", "2", 1);
  th_env_t e;
  th_open(&e);
  cr_assert_eq(hsad_device_count(e.rt), 2);
  cr_assert_eq(hsad_cpu_count(e.rt), 2);
  hsad_host_pool_t *pools[2];
  for (uint32_t d = 0; d < 2; d++) {
    hsad_device_t *dev = NULL;
    TH_OK(hsad_device_get(e.rt, d, &dev));
    const hsad_device_info_t *di = hsad_device_info(dev);
    cr_assert_eq(di->nearest_cpu, (int32_t)d);
    cr_assert_eq(hsad_cpu_info(e.rt, d)->numa_node, d);
    void *p = NULL;
    TH_OK(hsad_mem_alloc(dev, HSAD_MEM_HOST_FINE, 1 << 20, NULL, 0, &p));
    memset(p, 0x5a, 1 << 20);
    hsad_mem_info_t mi;
    TH_OK(hsad_mem_info(p, &mi));
    cr_assert_eq(mi.numa_node, (int32_t)d);
    /* kfd-emu binds node d's memory to host node d when the host has it; otherwise the pages
     * stay where the kernel put them (node 0 here) */
    int32_t want = (numa_available() >= 0 && numa_max_node() >= (int)d) ? (int32_t)d : 0;
    cr_assert_eq(mi.page_node, want, "device %u: page on host node %d, want %d", d,
                 mi.page_node, want);
    TH_OK(hsad_mem_free(p));
    TH_OK(hsad_host_pool_get(dev, &pools[d]));
    hsad_host_pool_stats_t st;
    TH_OK(hsad_host_pool_stats(pools[d], &st));
    cr_assert_eq(st.numa_node, d);
    hsad_host_pool_t *again = NULL;
    TH_OK(hsad_host_pool_get_node(e.rt, d, &again));
    cr_assert_eq(again, pools[d]);
    void *b = NULL;
    TH_OK(hsad_host_pool_alloc(pools[d], 5000, &b));
    TH_OK(hsad_mem_info(b, &mi));
    cr_assert_eq(mi.kind, HSAD_MEM_POOLED);
    cr_assert_eq(mi.numa_node, (int32_t)d);
    cr_assert_eq(mi.page_node, want);
    cr_assert_eq(mi.size, 5000);
    cr_assert_eq(mi.capacity, 8192);
    cr_assert_eq(mi.access_mask, 3u);
    TH_OK(hsad_host_pool_free(pools[d], b));
  }
  cr_assert_neq(pools[0], pools[1]);
  hsad_host_pool_t *none = NULL;
  MEM_ERR(hsad_host_pool_get_node(e.rt, 7, &none), HSAD_ERR_NUMA,
          "hsad_host_pool_get_node: no CPU agent on NUMA node 7 (CPU agents are on nodes 0, 1)");
  /* a GPU's memory granted to the other GPU */
  hsad_device_t *d0 = NULL, *d1 = NULL;
  TH_OK(hsad_device_get(e.rt, 0, &d0));
  TH_OK(hsad_device_get(e.rt, 1, &d1));
  void *v = NULL;
  TH_OK(hsad_mem_alloc(d0, HSAD_MEM_DEVICE, 4096, &d1, 1, &v));
  hsad_mem_info_t mi;
  TH_OK(hsad_mem_info(v, &mi));
  cr_assert_eq(mi.access_mask, 3u);
  TH_OK(hsad_mem_free(v));
  TH_OK(hsad_runtime_close(e.rt));
}

Test(memory, numa_queries) {
  cr_assert_eq(hsad_numa_node_count(), numa_available() >= 0 ? (uint32_t)numa_num_configured_nodes() : 1u);
  cr_assert_lt(hsad_numa_current_node(), hsad_numa_node_count());
  void *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(m, MAP_FAILED);
  int32_t node = -1;
  MEM_ERR(hsad_numa_page_node(m, &node), HSAD_ERR_NUMA,
          "hsad_numa_page_node(%p): page not resident (No such file or directory)", m);
  *(volatile char *)m = 1;
  TH_OK(hsad_numa_page_node(m, &node));
  cr_assert_eq(node, (int32_t)hsad_numa_current_node());
  munmap(m, 8192);
}
