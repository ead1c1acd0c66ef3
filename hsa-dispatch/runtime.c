/* runtime.c - the reference-counted ROCr runtime, agent discovery and host buffers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hsa-dispatch/dispatch_internal.h"
#include "hsa-dispatch/runtime_refs.h"

hsad_runtime_t hsad_rt = {.lock = PTHREAD_MUTEX_INITIALIZER};
static hsad_rt_refs_t rt_refs; /* opens, close hooks (under hsad_rt.lock; runtime_refs.h) */
static _Atomic uint64_t rt_generation; /* +1 at every hsa_init (first reference) */
uint64_t dq_next_uid(void) { return hsad_backend_next_uid(); }

hsad_status_t dq_amd_only(const char *who, const char *what) {
  return hsad_fail(HSAD_ERR_UNSUPPORTED, "%s: %s belongs to another vendor's backend; this call "
                   "is AMD only (ROCr: AQL packets, HSA signals, agents)", who, what);
}

uint64_t hsad_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

hsad_status_t dq_hsa_fail(hsa_status_t st, const char *fmt, ...) {
  char what[768]; /* hsa_init's holds kfd-emu's reason (up to 639 bytes) */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  const char *s = NULL;
  if (hsad_rocr.hsa_status_string(st, &s) != HSA_STATUS_SUCCESS || !s) s = "unknown status";
  return hsad_fail(HSAD_ERR_HSA, "%s: HSA status 0x%x (%s)", what, (unsigned)st, s);
}

bool dq_is_open(void) { return hsad_rt_refs_open(&rt_refs); }

hsad_status_t dq_check_open(void) {
  if (dq_is_open()) return HSAD_OK;
  return hsad_fail(HSAD_ERR_CLOSED, "hsa-dispatch runtime is closed (call hsad_runtime_open)");
}

/* ---- discovery ------------------------------------------------------------------------ */

typedef struct {
  hsa_agent_t agents[HSAD_MAX_DEVICES + HSAD_MAX_CPUS];
  hsa_device_type_t types[HSAD_MAX_DEVICES + HSAD_MAX_CPUS];
  uint32_t n;
} agent_list_t;

static hsa_status_t collect_agent(hsa_agent_t a, void *data) {
  agent_list_t *l = data;
  hsa_device_type_t t;
  if (hsad_rocr.hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t) != HSA_STATUS_SUCCESS) return HSA_STATUS_SUCCESS;
  if (l->n < sizeof l->agents / sizeof l->agents[0]) {
    l->agents[l->n] = a;
    l->types[l->n++] = t;
  }
  return HSA_STATUS_SUCCESS;
}

typedef struct {
  hsa_amd_memory_pool_t pools[HSAD_MAX_POOLS];
  hsad_pool_info_t info[HSAD_MAX_POOLS];
  uint32_t n;
} pool_list_t;

static hsa_status_t collect_pool(hsa_amd_memory_pool_t p, void *data) {
  pool_list_t *l = data;
  if (l->n >= HSAD_MAX_POOLS) return HSA_STATUS_SUCCESS;
  hsad_pool_info_t *i = &l->info[l->n];
  memset(i, 0, sizeof *i);
  hsa_amd_segment_t seg;
  hsad_rocr.hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg);
  i->segment = seg;
  size_t size = 0, gran = 0;
  hsad_rocr.hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SIZE, &size);
  i->size = size;
  hsad_rocr.hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &i->alloc_allowed);
  if (i->alloc_allowed)
    hsad_rocr.hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE, &gran);
  i->alloc_granule = gran;
  switch (seg) {
  case HSA_AMD_SEGMENT_GLOBAL: {
    uint32_t f = 0;
    hsad_rocr.hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &f);
    i->global_flags = f;
    i->kind = (f & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) ? "kernarg"
              : (f & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) ? "fine-grained"
                                                                   : "coarse-grained";
    break;
  }
  case HSA_AMD_SEGMENT_READONLY: i->kind = "readonly"; break;
  case HSA_AMD_SEGMENT_PRIVATE: i->kind = "private"; break;
  case HSA_AMD_SEGMENT_GROUP: i->kind = "group"; break;
  default: i->kind = "unknown"; break;
  }
  l->pools[l->n++] = p;
  return HSA_STATUS_SUCCESS;
}

typedef struct {
  char names[HSAD_MAX_ISAS][HSAD_ISA_NAME_MAX];
  uint32_t n;
} isa_list_t;

static hsa_status_t collect_isa(hsa_isa_t isa, void *data) {
  isa_list_t *l = data;
  if (l->n >= HSAD_MAX_ISAS) return HSA_STATUS_SUCCESS;
  uint32_t len = 0;
  if (hsad_rocr.hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME_LENGTH, &len) != HSA_STATUS_SUCCESS) return HSA_STATUS_SUCCESS;
  char buf[256] = {0};
  if (len >= sizeof buf) len = sizeof buf - 1;
  hsad_rocr.hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME, buf);
  buf[len] = '\0';
  snprintf(l->names[l->n++], HSAD_ISA_NAME_MAX, "%s", buf);
  return HSA_STATUS_SUCCESS;
}

static void agent_string(hsa_agent_t a, int attr, char *out, size_t n) {
  char buf[256] = {0};
  if (hsad_rocr.hsa_agent_get_info(a, (hsa_agent_info_t)attr, buf) != HSA_STATUS_SUCCESS) buf[0] = '\0';
  buf[sizeof buf - 1] = '\0';
  snprintf(out, n, "%s", buf);
}

/* The global pool of a CPU agent used as the target of link queries. */
static bool cpu_link_pool(hsa_agent_t cpu, hsa_amd_memory_pool_t *out) {
  pool_list_t pl = {.n = 0};
  hsad_rocr.hsa_amd_agent_iterate_memory_pools(cpu, collect_pool, &pl);
  for (uint32_t i = 0; i < pl.n; i++)
    if (pl.info[i].segment == HSA_AMD_SEGMENT_GLOBAL) {
      *out = pl.pools[i];
      return true;
    }
  return false;
}

static void discover_gpu(hsad_device_t *d, hsa_agent_t a, uint32_t index) {
  hsad_device_info_t *i = &d->info;
  memset(d, 0, sizeof *d);
  pthread_mutex_init(&d->lock, NULL);
  d->runtime = &hsad_rt;
  d->agent = a;
  i->index = index;
  agent_string(a, HSA_AGENT_INFO_NAME, i->name, sizeof i->name);
  agent_string(a, HSA_AMD_AGENT_INFO_PRODUCT_NAME, i->product_name, sizeof i->product_name);
  hsad_rocr.hsa_agent_get_info(a, HSA_AGENT_INFO_NODE, &i->node);
  isa_list_t il = {.n = 0};
  hsad_rocr.hsa_agent_iterate_isas(a, collect_isa, &il);
  i->isa_count = il.n;
  memcpy(i->isa_names, il.names, sizeof il.names);
  const char *first = il.n ? il.names[0] : i->name;
  const char *dash = strstr(first, "--");
  snprintf(i->isa_name, sizeof i->isa_name, "%s", dash ? dash + 2 : first);
  hsad_rocr.hsa_agent_get_info(a, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT, &i->compute_units);
  hsad_rocr.hsa_agent_get_info(a, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU, &i->simds_per_cu);
  hsad_rocr.hsa_agent_get_info(a, (hsa_agent_info_t)HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU, &i->max_waves_per_cu);
  hsad_rocr.hsa_agent_get_info(a, HSA_AGENT_INFO_WAVEFRONT_SIZE, &i->wavefront_size);
  hsad_rocr.hsa_agent_get_info(a, HSA_AGENT_INFO_WORKGROUP_MAX_SIZE, &i->max_workgroup_size);
  hsad_rocr.hsa_agent_get_info(a, HSA_AGENT_INFO_WORKGROUP_MAX_DIM, i->max_workgroup_dim);
  hsa_dim3_t g = {0, 0, 0};
  hsad_rocr.hsa_agent_get_info(a, HSA_AGENT_INFO_GRID_MAX_DIM, &g);
  i->max_grid_dim[0] = g.x;
  i->max_grid_dim[1] = g.y;
  i->max_grid_dim[2] = g.z;
  uint32_t grid_max = 0; /* HSA 1.2 runtime spec 2.3.1: uint32_t, work-items in a grid */
  hsad_rocr.hsa_agent_get_info(a, HSA_AGENT_INFO_GRID_MAX_SIZE, &grid_max);
  d->grid_max_size = grid_max ? grid_max : UINT64_MAX;
  hsad_rocr.hsa_agent_get_info(a, HSA_AGENT_INFO_QUEUE_MIN_SIZE, &i->queue_min_size);
  hsad_rocr.hsa_agent_get_info(a, HSA_AGENT_INFO_QUEUE_MAX_SIZE, &i->queue_max_size);
  hsad_rocr.hsa_agent_get_info(a, HSA_AGENT_INFO_QUEUES_MAX, &i->queues_max);
  if (!i->wavefront_size) i->wavefront_size = 64;
  i->max_wave_scratch = HSAD_MAX_WAVE_SCRATCH;
  i->max_private_per_work_item = HSAD_MAX_WAVE_SCRATCH / i->wavefront_size;
  pool_list_t pl = {.n = 0};
  hsad_rocr.hsa_amd_agent_iterate_memory_pools(a, collect_pool, &pl);
  i->pool_count = pl.n;
  memcpy(i->pools, pl.info, sizeof pl.info);
  for (uint32_t k = 0; k < pl.n; k++) {
    if (pl.info[k].segment == HSA_AMD_SEGMENT_GROUP) i->lds_bytes = (uint32_t)pl.info[k].size;
    if (pl.info[k].segment == HSA_AMD_SEGMENT_GLOBAL && !i->local_memory_bytes &&
        !(pl.info[k].global_flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED))
      i->local_memory_bytes = pl.info[k].size;
  }
  if (!i->lds_bytes) i->lds_bytes = 65536;
  i->vendor = HSAD_VENDOR_AMD;
  i->vendor_index = index;
  i->numa_node = -1;
}

/* Nearest CPU agent of a GPU: smallest link NUMA distance, then fewest hops, then index. */
static void pick_nearest_cpu(hsad_device_t *d) {
  hsad_device_info_t *i = &d->info;
  i->nearest_cpu = -1;
  uint64_t best = UINT64_MAX;
  for (uint32_t c = 0; c < hsad_rt.cpu_count; c++) {
    hsa_amd_memory_pool_t pool;
    if (!cpu_link_pool(hsad_rt.cpu_agents[c], &pool)) continue;
    hsa_amd_memory_pool_access_t acc = HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED;
    hsad_rocr.hsa_amd_agent_memory_pool_get_info(d->agent, pool, HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS, &acc);
    if (acc == HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED) continue;
    uint32_t hops = 0;
    hsad_rocr.hsa_amd_agent_memory_pool_get_info(d->agent, pool, HSA_AMD_AGENT_MEMORY_POOL_INFO_NUM_LINK_HOPS,
                                       &hops);
    uint32_t dist = 0;
    if (hops > 0 && hops <= 8) {
      hsa_amd_memory_pool_link_info_t li[8];
      memset(li, 0, sizeof li);
      if (hsad_rocr.hsa_amd_agent_memory_pool_get_info(d->agent, pool,
                                             HSA_AMD_AGENT_MEMORY_POOL_INFO_LINK_INFO,
                                             li) == HSA_STATUS_SUCCESS)
        for (uint32_t h = 0; h < hops; h++) dist += li[h].numa_distance;
    }
    uint64_t key = ((uint64_t)dist << 40) | ((uint64_t)hops << 20) | c;
    if (key < best) {
      best = key;
      i->nearest_cpu = (int32_t)c;
      i->nearest_cpu_numa_distance = dist;
      i->nearest_cpu_hops = hops;
    }
  }
  if (i->nearest_cpu < 0) return;
  pool_list_t pl = {.n = 0};
  hsad_rocr.hsa_amd_agent_iterate_memory_pools(hsad_rt.cpu_agents[i->nearest_cpu], collect_pool, &pl);
  for (uint32_t k = 0; k < pl.n; k++) {
    if (pl.info[k].segment != HSA_AMD_SEGMENT_GLOBAL || !pl.info[k].alloc_allowed) continue;
    uint32_t f = pl.info[k].global_flags;
    if ((f & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) && !d->has_kernarg_pool) {
      d->kernarg_pool = pl.pools[k];
      d->has_kernarg_pool = true;
    }
    if ((f & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) && !d->has_fine_pool) {
      d->fine_pool = pl.pools[k];
      d->has_fine_pool = true;
    }
  }
  if (!d->has_kernarg_pool && d->has_fine_pool) {
    d->kernarg_pool = d->fine_pool;
    d->has_kernarg_pool = true;
  }
}

static hsad_status_t discover(void) {
  agent_list_t al = {.n = 0};
  hsa_status_t st = hsad_rocr.hsa_iterate_agents(collect_agent, &al);
  if (st != HSA_STATUS_SUCCESS) return dq_hsa_fail(st, "hsa_iterate_agents");
  hsad_rt.device_count = hsad_rt.cpu_count = 0;
  for (uint32_t k = 0; k < al.n; k++) {
    if (al.types[k] != HSA_DEVICE_TYPE_CPU || hsad_rt.cpu_count >= HSAD_MAX_CPUS) continue;
    uint32_t c = hsad_rt.cpu_count++;
    hsad_cpu_info_t *ci = &hsad_rt.cpus[c];
    memset(ci, 0, sizeof *ci);
    hsad_rt.cpu_agents[c] = al.agents[k];
    ci->index = c;
    hsad_rocr.hsa_agent_get_info(al.agents[k], HSA_AGENT_INFO_NODE, &ci->numa_node);
    agent_string(al.agents[k], HSA_AGENT_INFO_NAME, ci->name, sizeof ci->name);
    hsad_rocr.hsa_agent_get_info(al.agents[k], (hsa_agent_info_t)HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT,
                       &ci->compute_units);
    pool_list_t pl = {.n = 0};
    hsad_rocr.hsa_amd_agent_iterate_memory_pools(al.agents[k], collect_pool, &pl);
    ci->pool_count = pl.n;
    memcpy(ci->pools, pl.info, sizeof pl.info);
  }
  for (uint32_t k = 0; k < al.n; k++) {
    if (al.types[k] != HSA_DEVICE_TYPE_GPU || hsad_rt.device_count >= HSAD_MAX_DEVICES) continue;
    uint32_t g = hsad_rt.device_count++;
    discover_gpu(&hsad_rt.devices[g], al.agents[k], g);
    pick_nearest_cpu(&hsad_rt.devices[g]);
    hsad_device_info_t *gi = &hsad_rt.devices[g].info;
    if (gi->nearest_cpu >= 0) gi->numa_node = (int32_t)hsad_rt.cpus[gi->nearest_cpu].numa_node;
  }
  uint64_t hz = 0;
  hsad_rocr.hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &hz);
  hsad_rt.timestamp_hz = hz ? hz : 1000000000ull;
  return HSAD_OK;
}

/* The AMD backend: ROCr loaded, hsa_init, agents discovered. A failure is kept (status and
 * message) rather than returned: another backend may still serve devices. */
static hsad_status_t open_amd(char *why, size_t why_size) {
  hsad_status_t s = hsad_rocr_load();
  if (s != HSAD_OK) {
    snprintf(why, why_size, "%s", hsad_last_error());
    return s;
  }
  hsa_status_t st = hsad_rocr.hsa_init();
  if (st != HSA_STATUS_SUCCESS) {
    char emu[640];
    if (hsad_rocr_emu_config_error(emu, sizeof emu))
      s = dq_hsa_fail(st, "hsa_init on kfd-emu (kfd-emu refused its configuration: %s)", emu);
    else
      s = dq_hsa_fail(st, hsad_rocr_is_emulated()
                              ? "hsa_init on kfd-emu (a KFD_EMU_* setting it reported on "
                                "stderr is the usual cause)"
                              : "hsa_init on the system's libhsakmt (/dev/kfd)");
    snprintf(why, why_size, "%s", hsad_last_error());
    return s;
  }
  s = discover();
  if (s == HSAD_OK && hsad_rt.device_count == 0)
    s = hsad_fail(HSAD_ERR_NO_DEVICE, "no GPU agent: ROCr found %u CPU agent(s) and no GPU "
                  "(no supported AMD GPU, or run under kfd-emu)", hsad_rt.cpu_count);
  if (s != HSAD_OK) {
    snprintf(why, why_size, "%s", hsad_last_error());
    hsad_rocr.hsa_shut_down();
    hsad_rt.device_count = hsad_rt.cpu_count = 0;
    return s;
  }
  hsad_rt.amd_up = true;
  return HSAD_OK;
}

/* Devices of the other backends, after AMD's (backend.h). */
static hsad_status_t open_backends(char *why, size_t why_size) {
  why[0] = '\0';
  for (const hsad_backend_ops_t *const *b = hsad_backends; *b; b++) {
    uint32_t n = 0;
    char reason[512] = "";
    hsad_status_t s = (*b)->open(&n, reason, sizeof reason);
    if (s) return s;
    if (!n) snprintf(why, why_size, "%s", reason);
    for (uint32_t i = 0; i < n && hsad_rt.device_count < HSAD_MAX_DEVICES; i++) {
      uint32_t g = hsad_rt.device_count++;
      hsad_device_t *d = &hsad_rt.devices[g];
      memset(d, 0, sizeof *d);
      pthread_mutex_init(&d->lock, NULL);
      d->runtime = &hsad_rt;
      d->ops = *b;
      (*b)->device_describe(i, g, d, &d->info, &d->backend_device);
      d->info.index = g;
    }
  }
  return HSAD_OK;
}

static void close_backends(void) {
  for (const hsad_backend_ops_t *const *b = hsad_backends; *b; b++) (*b)->close();
}

hsad_status_t hsad_runtime_open(hsad_runtime_t **out_runtime) {
  if (!out_runtime) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_runtime_open: out_runtime is NULL");
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("sse4.1")) /* hsad_kernel_dispatch is built for it (DQ_HOT_TARGET) */
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_runtime_open: this CPU lacks SSE4.1, which "
                     "hsad_kernel_dispatch's hot path uses (every host CPU ROCm supports has it)");
#endif
  pthread_mutex_lock(&hsad_rt.lock);
  if (rt_refs.refs == 0) {
    char amd_why[1024], other_why[512];
    hsad_rt.amd_up = false;
    hsad_rt.device_count = hsad_rt.cpu_count = 0;
    hsad_status_t amd_s = open_amd(amd_why, sizeof amd_why);
    hsad_rt.amd_device_count = hsad_rt.device_count;
    hsad_status_t s = open_backends(other_why, sizeof other_why);
    if (s == HSAD_OK && hsad_rt.device_count == 0) {
      /* nothing anywhere: AMD's reason as before, another backend's when it had a driver */
      s = amd_s ? amd_s : HSAD_ERR_NO_DEVICE;
      if (other_why[0] && strncmp(other_why, "no NVIDIA driver", 16) != 0 &&
          strncmp(other_why, "NVIDIA backend disabled", 23) != 0)
        hsad_fail(s, "%s; NVIDIA: %s", amd_why, other_why);
      else
        hsad_fail(s, "%s", amd_why);
    }
    if (s != HSAD_OK) {
      close_backends();
      if (hsad_rt.amd_up) hsad_rocr.hsa_shut_down();
      hsad_rt.amd_up = false;
      hsad_rt.device_count = hsad_rt.cpu_count = 0;
      pthread_mutex_unlock(&hsad_rt.lock);
      return s;
    }
    atomic_fetch_add_explicit(&rt_generation, 1, memory_order_release);
  }
  hsad_rt_refs_take(&rt_refs);
  pthread_mutex_unlock(&hsad_rt.lock);
  *out_runtime = &hsad_rt;
  return HSAD_OK;
}

hsad_status_t hsad_runtime_on_close(hsad_runtime_t *runtime, void (*fn)(void *arg), void *arg) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_runtime_on_close", {runtime, "runtime"});
  if (ns) return ns;
  if (runtime != &hsad_rt)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_runtime_on_close: runtime %p is not the "
                     "hsa-dispatch runtime", (void *)runtime);
  if (!fn) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_runtime_on_close: NULL fn");
  pthread_mutex_lock(&hsad_rt.lock);
  hsad_status_t s = hsad_rt_refs_hook(&rt_refs, fn, arg);
  pthread_mutex_unlock(&hsad_rt.lock);
  return s;
}

hsad_status_t hsad_runtime_close(hsad_runtime_t *runtime) {
  if (!runtime) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_runtime_close: runtime is NULL");
  pthread_mutex_lock(&hsad_rt.lock);
  bool last;
  hsad_status_t s = hsad_rt_refs_drop(&rt_refs, &last);
  if (last) { /* the hooks have run: the queues, the devices, the backends, ROCr */
    dq_queues_close_all();
    for (uint32_t i = 0; i < hsad_rt.amd_device_count; i++) dq_device_release(&hsad_rt.devices[i]);
    close_backends();
    if (hsad_rt.amd_up) hsad_rocr.hsa_shut_down();
    hsad_rt.amd_up = false;
  }
  pthread_mutex_unlock(&hsad_rt.lock);
  return s;
}

uint32_t hsad_device_count(const hsad_runtime_t *runtime) {
  return runtime && dq_is_open() ? hsad_rt.device_count : 0;
}

uint32_t hsad_cpu_count(const hsad_runtime_t *runtime) {
  return runtime && dq_is_open() ? hsad_rt.cpu_count : 0;
}

hsad_status_t hsad_device_get(hsad_runtime_t *runtime, uint32_t index, hsad_device_t **out_device) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_device_get", {runtime, "runtime"},
                                  {out_device, "out_device"});
  if (s) return s;
  if (!dq_is_open())
    return hsad_fail(HSAD_ERR_CLOSED, "hsad_device_get: the runtime is closed");
  if (index >= hsad_rt.device_count)
    return hsad_fail(HSAD_ERR_DEVICE_INDEX, "device index %u out of range: %u GPU device(s), "
                     "valid indices 0..%u", index, hsad_rt.device_count, hsad_rt.device_count - 1);
  *out_device = &hsad_rt.devices[index];
  return HSAD_OK;
}

const hsad_device_info_t *hsad_device_info(const hsad_device_t *device) {
  return device ? &device->info : NULL;
}

hsa_agent_t hsad_device_agent(const hsad_device_t *device) {
  hsa_agent_t none = {0};
  return device && !device->ops ? device->agent : none;
}

hsad_runtime_t *hsad_device_runtime(const hsad_device_t *device) {
  uintptr_t p = (uintptr_t)device, lo = (uintptr_t)&hsad_rt.devices[0];
  if (!device || p < lo || p >= (uintptr_t)&hsad_rt.devices[HSAD_MAX_DEVICES] ||
      (p - lo) % sizeof(hsad_device_t) != 0 || !dq_is_open())
    return NULL;
  if ((p - lo) / sizeof(hsad_device_t) >= hsad_rt.device_count) return NULL;
  return &hsad_rt;
}

uint64_t hsad_runtime_generation(const hsad_runtime_t *runtime) {
  if (runtime != &hsad_rt || !dq_is_open()) return 0;
  return atomic_load_explicit(&rt_generation, memory_order_acquire);
}

const hsad_cpu_info_t *hsad_cpu_info(const hsad_runtime_t *runtime, uint32_t index) {
  if (!runtime || !dq_is_open() || index >= hsad_rt.cpu_count) return NULL;
  return &hsad_rt.cpus[index];
}

/* hsad_buffer_alloc / hsad_buffer_free: memory/alloc.c (one allocator, one registry). */
