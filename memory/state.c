/* state.c - memory/'s view of the runtime: ROCr entry points, agents, pools, NUMA queries. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "memory/mem_internal.h"

mem_rocr_t mem_rocr;
mem_state_t mem_st = {.lock = PTHREAD_MUTEX_INITIALIZER};

static hsad_status_t rocr_resolve(void) {
  if (mem_rocr.hsa_status_string) return HSAD_OK;
  void *h = dlopen("libhsa-runtime64.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!h)
    return hsad_fail(HSAD_ERR_CLOSED, "memory: ROCr (libhsa-runtime64.so.1) is not loaded: open "
                     "the runtime first (hsad_runtime_open)");
  mem_rocr_t t;
#define MEM_ROCR_SYM(f)                                                                     \
  *(void **)&t.f = dlsym(h, #f);                                                            \
  if (!t.f) {                                                                               \
    dlclose(h);                                                                             \
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "memory: ROCr has no %s", #f);                 \
  }
  MEM_ROCR_FUNCS(MEM_ROCR_SYM)
#undef MEM_ROCR_SYM
  dlclose(h); /* hsa-dispatch keeps its own reference: the library stays loaded */
  mem_rocr = t; /* under mem_st.lock; readers come after mem_ready */
  return HSAD_OK;
}

hsad_status_t mem_hsa_fail(hsa_status_t st, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  const char *s = NULL;
  if (!mem_rocr.hsa_status_string || mem_rocr.hsa_status_string(st, &s) != HSA_STATUS_SUCCESS ||
      !s)
    s = "unknown status";
  return hsad_fail(HSAD_ERR_HSA, "%s: HSA status 0x%x (%s)", what, (unsigned)st, s);
}

typedef struct pool_scan {
  hsa_amd_memory_pool_t fine, coarse;
  bool has_fine, has_coarse;
  uint64_t fine_size, coarse_size, fine_granule, coarse_granule;
} pool_scan_t;

static hsa_status_t scan_pool(hsa_amd_memory_pool_t p, void *data) {
  pool_scan_t *s = data;
  hsa_amd_segment_t seg;
  uint32_t flags = 0;
  bool alloc = false;
  size_t size = 0, granule = 0;
  if (mem_rocr.hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg) ||
      seg != HSA_AMD_SEGMENT_GLOBAL)
    return HSA_STATUS_SUCCESS;
  mem_rocr.hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
  mem_rocr.hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
  mem_rocr.hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SIZE, &size);
  mem_rocr.hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE, &granule);
  if (!alloc) return HSA_STATUS_SUCCESS;
  if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) && !s->has_fine) {
    s->fine = p, s->has_fine = true, s->fine_size = size, s->fine_granule = granule;
  } else if ((flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED) && !s->has_coarse) {
    s->coarse = p, s->has_coarse = true, s->coarse_size = size, s->coarse_granule = granule;
  }
  return HSA_STATUS_SUCCESS;
}

static hsa_status_t collect_cpu(hsa_agent_t a, void *data) {
  (void)data;
  hsa_device_type_t t;
  if (mem_rocr.hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t) || t != HSA_DEVICE_TYPE_CPU)
    return HSA_STATUS_SUCCESS;
  if (mem_st.cpu_count >= MEM_MAX_CPUS) return HSA_STATUS_SUCCESS;
  uint32_t i = mem_st.cpu_count++;
  mem_st.cpu_agents[i] = a;
  mem_rocr.hsa_agent_get_info(a, HSA_AGENT_INFO_NODE, &mem_st.cpu_node[i]);
  pool_scan_t s = {0};
  mem_rocr.hsa_amd_agent_iterate_memory_pools(a, scan_pool, &s);
  mem_st.cpu_fine[i] = s.fine, mem_st.has_cpu_fine[i] = s.has_fine;
  mem_st.cpu_coarse[i] = s.coarse, mem_st.has_cpu_coarse[i] = s.has_coarse;
  mem_st.cpu_fine_size[i] = s.fine_size, mem_st.cpu_coarse_size[i] = s.coarse_size;
  mem_st.cpu_fine_granule[i] = s.fine_granule ? s.fine_granule : 4096;
  mem_st.cpu_coarse_granule[i] = s.coarse_granule ? s.coarse_granule : 4096;
  return HSA_STATUS_SUCCESS;
}

/* Rebuilds mem_st for the runtime's current generation (mem_st.lock held). */
static hsad_status_t state_refresh(hsad_runtime_t *rt, uint64_t gen) {
  hsad_status_t s = rocr_resolve();
  if (s) return s;
  mem_registry_reset();
  mem_pools_reset(false);
  mem_st.runtime = rt;
  mem_st.device_count = 0;
  mem_st.cpu_count = 0;
  uint32_t n = hsad_device_count(rt);
  for (uint32_t i = 0; i < n && i < MEM_MAX_DEVICES; i++) {
    hsad_device_t *d = NULL;
    if (hsad_device_get(rt, i, &d)) return HSAD_ERR_CLOSED;
    mem_st.devices[i] = d;
    mem_st.device_count = i + 1;
    if (hsad_submit_device_foreign(d)) continue; /* its backend keeps its memory */
    mem_st.gpu_agents[i] = hsad_device_agent(d);
    pool_scan_t ps = {0};
    mem_rocr.hsa_amd_agent_iterate_memory_pools(mem_st.gpu_agents[i], scan_pool, &ps);
    mem_st.gpu_coarse[i] = ps.coarse, mem_st.has_gpu_coarse[i] = ps.has_coarse;
    mem_st.gpu_coarse_size[i] = ps.coarse_size;
    mem_st.gpu_coarse_granule[i] = ps.coarse_granule ? ps.coarse_granule : 4096;
    mem_st.device_count = i + 1;
  }
  hsa_status_t st = mem_rocr.hsa_iterate_agents(collect_cpu, NULL);
  if (st != HSA_STATUS_SUCCESS) return mem_hsa_fail(st, "memory: hsa_iterate_agents");
  atomic_store_explicit(&mem_st.generation, gen, memory_order_release);
  return HSAD_OK;
}

/* The last hsad_runtime_close: give back what ROCr is about to lose (runtime lock held; ROCr
 * still up). Copies still in flight then are the caller's error (documented). */
static void mem_on_close(void *arg) {
  (void)arg;
  pthread_mutex_lock(&mem_st.lock);
  mem_async_close(); /* gives its signals back to the free list ... */
  mem_copy_close();  /* ... which is destroyed here */
  atomic_store_explicit(&mem_st.generation, 0, memory_order_release);
  mem_pools_reset(true);
  mem_registry_reset();
  pthread_mutex_unlock(&mem_st.lock);
}

hsad_status_t mem_ready_runtime(hsad_runtime_t *runtime, const char *what) {
  uint64_t gen = hsad_runtime_generation(runtime);
  if (!runtime) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: runtime is NULL", what);
  if (gen == 0)
    return hsad_fail(HSAD_ERR_CLOSED, "%s: the hsa-dispatch runtime is closed (call "
                     "hsad_runtime_open)", what);
  /* acquire: pairs with the release in state_refresh, so the fields it wrote are visible */
  if (atomic_load_explicit(&mem_st.generation, memory_order_acquire) == gen) return HSAD_OK;
  mem_async_reap(); /* copy queues of an earlier generation */
  /* outside mem_st.lock: the hook runs under the runtime's lock and takes mem_st.lock */
  static _Atomic int hooked;
  if (!atomic_load_explicit(&hooked, memory_order_acquire)) {
    hsad_status_t hs = hsad_runtime_on_close(runtime, mem_on_close, NULL);
    if (hs) return hs;
    atomic_store_explicit(&hooked, 1, memory_order_release);
  }
  pthread_mutex_lock(&mem_st.lock);
  hsad_status_t s = HSAD_OK;
  if (atomic_load_explicit(&mem_st.generation, memory_order_relaxed) != gen)
    s = state_refresh(runtime, gen);
  pthread_mutex_unlock(&mem_st.lock);
  return s;
}

hsad_status_t mem_ready(hsad_device_t *device, const char *what) {
  if (!device) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: device is NULL", what);
  hsad_runtime_t *rt = hsad_device_runtime(device);
  if (!rt)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: device %p is not a device of the open "
                     "hsa-dispatch runtime", what, (void *)device);
  return mem_ready_runtime(rt, what);
}

bool mem_current(void) {
  uint64_t g = atomic_load_explicit(&mem_st.generation, memory_order_acquire);
  return g != 0 && g == hsad_runtime_generation(mem_st.runtime);
}

uint32_t mem_device_index(const hsad_device_t *device) {
  for (uint32_t i = 0; i < mem_st.device_count; i++)
    if (mem_st.devices[i] == device) return i;
  return UINT32_MAX;
}

hsad_status_t mem_access_agents(const char *what, hsad_device_t *device,
                                hsad_device_t *const *access, uint32_t access_count,
                                hsa_agent_t *agents, uint32_t *out_n, uint32_t *out_mask) {
  if (access_count && !access)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: access is NULL with access_count %u", what,
                     access_count);
  if (access_count > HSAD_MEM_MAX_ACCESS)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: access_count %u is above %u", what,
                     access_count, (unsigned)HSAD_MEM_MAX_ACCESS);
  uint32_t n = 0, mask = 0;
  for (uint32_t i = 0; i <= access_count; i++) {
    hsad_device_t *d = i == 0 ? device : access[i - 1];
    if (i == 0 && !d) continue;
    uint32_t k = d ? mem_device_index(d) : UINT32_MAX;
    if (k == UINT32_MAX || hsad_device_runtime(d) != mem_st.runtime)
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: access[%u] (%p) is not a device of the "
                       "open hsa-dispatch runtime", what, i - 1, (void *)d);
    if (mask & (1u << k)) continue;
    mask |= 1u << k;
    agents[n++] = mem_st.gpu_agents[k];
  }
  *out_n = n;
  *out_mask = mask;
  return HSAD_OK;
}

/* ---- NUMA ---------------------------------------------------------------------------- */

static bool numa_ok(void) {
  static int ok = -1; /* benign race: every thread computes the same value */
  int v = __atomic_load_n(&ok, __ATOMIC_RELAXED);
  if (v < 0) {
    v = numa_available() >= 0;
    __atomic_store_n(&ok, v, __ATOMIC_RELAXED);
  }
  return v;
}

uint32_t hsad_numa_node_count(void) {
  if (!numa_ok()) return 1;
  int n = numa_num_configured_nodes();
  return n > 0 ? (uint32_t)n : 1;
}

uint32_t hsad_numa_current_node(void) {
  if (!numa_ok()) return 0;
  int cpu = sched_getcpu();
  int node = cpu >= 0 ? numa_node_of_cpu(cpu) : -1;
  return node >= 0 ? (uint32_t)node : 0;
}

int32_t mem_page_node(const void *p) {
  if (!p || !numa_ok()) return -1;
  void *page = (void *)((uintptr_t)p & ~(uintptr_t)4095);
  int status = -1;
  if (numa_move_pages(0, 1, &page, NULL, &status, 0) != 0) return -1;
  return status >= 0 ? status : -1;
}

hsad_status_t hsad_numa_page_node(const void *ptr, int32_t *out_node) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_numa_page_node", {ptr, "ptr"}, {out_node, "out_node"});
  if (s) return s;
  if (!numa_ok())
    return hsad_fail(HSAD_ERR_NUMA, "hsad_numa_page_node: the host has no NUMA support "
                     "(numa_available() < 0)");
  void *page = (void *)((uintptr_t)ptr & ~(uintptr_t)4095);
  int status = 0;
  if (numa_move_pages(0, 1, &page, NULL, &status, 0) != 0)
    return hsad_fail(HSAD_ERR_NUMA, "hsad_numa_page_node(%p): numa_move_pages failed: %s", ptr,
                     strerror(errno));
  if (status < 0)
    return hsad_fail(HSAD_ERR_NUMA, "hsad_numa_page_node(%p): page not resident (%s)", ptr,
                     strerror(-status));
  *out_node = status;
  return HSAD_OK;
}
