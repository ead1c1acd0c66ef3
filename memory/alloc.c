/* alloc.c - device / host allocations, registration of caller memory, and the registry that
 * knows every range the library handed out. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "memory/mem_internal.h"
#include "memory/mem_registry.h"

/* ---- registry: entries sorted by base, under a process-wide rwlock --------------------- */

#define MEM_TOMBS 1024

static pthread_rwlock_t reg_lock = PTHREAD_RWLOCK_INITIALIZER;
static mem_entry_t *reg;          /* sorted by base, no overlaps */
static size_t reg_n, reg_cap;
static struct { uintptr_t base; size_t size; hsad_mem_kind_t kind; } tombs[MEM_TOMBS];
static size_t tomb_next, tomb_n;  /* ring of the last MEM_TOMBS frees */

/* First index whose base is > addr (lock held). */
static size_t upper(uintptr_t addr) {
  size_t lo = 0, hi = reg_n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (reg[mid].base <= addr) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Index of the entry containing addr, or SIZE_MAX (lock held). */
static size_t containing(uintptr_t addr) {
  size_t i = upper(addr);
  if (i == 0) return SIZE_MAX;
  const mem_entry_t *e = &reg[i - 1];
  return addr - e->base < (e->size ? e->size : 1) ? i - 1 : SIZE_MAX;
}

void mem_registry_reset(void) {
  pthread_rwlock_wrlock(&reg_lock);
  free(reg);
  reg = NULL;
  reg_n = reg_cap = 0;
  tomb_next = tomb_n = 0;
  pthread_rwlock_unlock(&reg_lock);
}

hsad_status_t mem_registry_insert(const mem_entry_t *e, mem_entry_t *out_conflict) {
  pthread_rwlock_wrlock(&reg_lock);
  size_t i = upper(e->base);
  bool clash = (i > 0 && reg[i - 1].base + reg[i - 1].size > e->base) ||
               (i < reg_n && e->base + e->size > reg[i].base);
  if (clash) {
    if (out_conflict) *out_conflict = (i > 0 && reg[i - 1].base + reg[i - 1].size > e->base)
                                          ? reg[i - 1] : reg[i];
    pthread_rwlock_unlock(&reg_lock);
    return HSAD_ERR_OVERLAP;
  }
  if (reg_n == reg_cap) {
    size_t cap = reg_cap ? reg_cap * 2 : 64;
    mem_entry_t *r = realloc(reg, cap * sizeof *r);
    if (!r) {
      pthread_rwlock_unlock(&reg_lock);
      return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "memory registry: cannot grow to %zu entries", cap);
    }
    reg = r, reg_cap = cap;
  }
  memmove(&reg[i + 1], &reg[i], (reg_n - i) * sizeof *reg);
  reg[i] = *e;
  reg_n++;
  /* a range handed out again is no longer "freed" */
  for (size_t t = 0; t < tomb_n; t++)
    if (tombs[t].base < e->base + e->size && e->base < tombs[t].base + tombs[t].size)
      tombs[t].size = 0;
  pthread_rwlock_unlock(&reg_lock);
  return HSAD_OK;
}

bool mem_registry_set_freed(uintptr_t base, bool freed, size_t req_size) {
  pthread_rwlock_wrlock(&reg_lock);
  size_t i = upper(base);
  bool found = i > 0 && reg[i - 1].base == base;
  if (found) {
    reg[i - 1].freed = freed;
    reg[i - 1].req_size = req_size;
  }
  pthread_rwlock_unlock(&reg_lock);
  return found;
}

bool mem_registry_remove(uintptr_t base, bool tomb, mem_entry_t *out) {
  pthread_rwlock_wrlock(&reg_lock);
  size_t i = upper(base);
  bool found = i > 0 && reg[i - 1].base == base;
  if (found) {
    if (out) *out = reg[i - 1];
    if (tomb) {
      tombs[tomb_next].base = reg[i - 1].base;
      tombs[tomb_next].size = reg[i - 1].size;
      tombs[tomb_next].kind = reg[i - 1].kind;
      tomb_next = (tomb_next + 1) % MEM_TOMBS;
      if (tomb_n < MEM_TOMBS) tomb_n++;
    }
    memmove(&reg[i - 1], &reg[i], (reg_n - i) * sizeof *reg);
    reg_n--;
  }
  pthread_rwlock_unlock(&reg_lock);
  return found;
}

int mem_registry_find(uintptr_t addr, mem_entry_t *out, uintptr_t *out_tomb_base,
                      size_t *out_tomb_size) {
  pthread_rwlock_rdlock(&reg_lock);
  size_t i = containing(addr);
  int r = MEM_FIND_NONE;
  if (i != SIZE_MAX && !reg[i].freed) {
    *out = reg[i];
    r = MEM_FIND_LIVE;
  } else if (i != SIZE_MAX) { /* a cached stream-ordered block: freed, as a tombstone says */
    if (out_tomb_base) *out_tomb_base = reg[i].base;
    if (out_tomb_size) *out_tomb_size = reg[i].size;
    out->kind = reg[i].kind;
    r = MEM_FIND_FREED;
  } else {
    /* newest first */
    for (size_t k = 0; k < tomb_n; k++) {
      size_t t = (tomb_next + MEM_TOMBS - 1 - k) % MEM_TOMBS;
      if (tombs[t].size && addr - tombs[t].base < tombs[t].size) {
        if (out_tomb_base) *out_tomb_base = tombs[t].base;
        if (out_tomb_size) *out_tomb_size = tombs[t].size;
        out->kind = tombs[t].kind;
        r = MEM_FIND_FREED;
        break;
      }
    }
  }
  pthread_rwlock_unlock(&reg_lock);
  return r;
}

/* ---- allocation ------------------------------------------------------------------------ */

const char *hsad_mem_kind_name(hsad_mem_kind_t kind) {
  switch (kind) {
  case HSAD_MEM_DEVICE: return "device";
  case HSAD_MEM_HOST_FINE: return "host-fine";
  case HSAD_MEM_HOST_COARSE: return "host-coarse";
  case HSAD_MEM_REGISTERED: return "registered";
  case HSAD_MEM_POOLED: return "pooled";
  case HSAD_MEM_STREAM: return "stream-ordered";
  }
  return "unknown";
}

/* hsad_mem_alloc's body; `what` names the public call in messages. */
static hsad_status_t mem_alloc_named(const char *what, hsad_device_t *device,
                                     hsad_mem_kind_t kind, size_t size,
                                     hsad_device_t *const *access, uint32_t access_count,
                                     void **out_ptr) {
  if (!out_ptr) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: out_ptr is NULL", what);
  if (hsad_submit_device_foreign(device)) /* another vendor's device: its backend's memory */
    return hsad_submit_foreign_mem_alloc(device, (uint32_t)kind, size, out_ptr);
  hsad_status_t s = mem_ready(device, what);
  if (s) return s;
  if (kind != HSAD_MEM_DEVICE && kind != HSAD_MEM_HOST_FINE && kind != HSAD_MEM_HOST_COARSE)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: kind %d is not HSAD_MEM_DEVICE, "
                     "HSAD_MEM_HOST_FINE or HSAD_MEM_HOST_COARSE", what, (int)kind);
  if (size == 0) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: size is 0", what);
  hsa_agent_t agents[HSAD_MEM_MAX_ACCESS + 1];
  uint32_t nag = 0, mask = 0;
  s = mem_access_agents(what, device, access, access_count, agents, &nag, &mask);
  if (s) return s;
  uint32_t di = mem_device_index(device);
  const hsad_device_info_t *info = hsad_device_info(device);
  hsa_amd_memory_pool_t pool;
  uint64_t pool_size, granule;
  int32_t node = -1;
  const char *pool_name;
  if (kind == HSAD_MEM_DEVICE) {
    if (!mem_st.has_gpu_coarse[di])
      return hsad_fail(HSAD_ERR_UNSUPPORTED, "%s: device %u has no coarse-grained pool", what, di);
    pool = mem_st.gpu_coarse[di], pool_size = mem_st.gpu_coarse_size[di];
    granule = mem_st.gpu_coarse_granule[di];
    pool_name = "coarse-grained device pool";
  } else {
    int32_t c = info->nearest_cpu;
    bool fine = kind == HSAD_MEM_HOST_FINE;
    if (c < 0 || (uint32_t)c >= mem_st.cpu_count ||
        !(fine ? mem_st.has_cpu_fine[c] : mem_st.has_cpu_coarse[c]))
      return hsad_fail(HSAD_ERR_UNSUPPORTED, "%s: device %u has no nearest CPU agent with a %s "
                       "pool", what, di, fine ? "fine-grained" : "coarse-grained");
    pool = fine ? mem_st.cpu_fine[c] : mem_st.cpu_coarse[c];
    pool_size = fine ? mem_st.cpu_fine_size[c] : mem_st.cpu_coarse_size[c];
    granule = fine ? mem_st.cpu_fine_granule[c] : mem_st.cpu_coarse_granule[c];
    node = (int32_t)mem_st.cpu_node[c];
    pool_name = fine ? "fine-grained host pool" : "coarse-grained host pool";
  }
  if (size > SIZE_MAX - granule)
    return hsad_fail(HSAD_ERR_RANGE, "%s: %zu bytes overflow when rounded to the %s's "
                     "allocation granule (%llu bytes)", what, size, pool_name,
                     (unsigned long long)granule);
  if (size > pool_size)
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: %zu bytes exceed the %s of device %u "
                     "(%llu bytes)", what, size, pool_name, di, (unsigned long long)pool_size);
  void *p = NULL;
  hsa_status_t st = mem_rocr.hsa_amd_memory_pool_allocate(pool, size, 0, &p);
  if (st == HSA_STATUS_ERROR_OUT_OF_RESOURCES)
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: %zu bytes: the %s of device %u is exhausted",
                     what, size, pool_name, di);
  if (st != HSA_STATUS_SUCCESS)
    return mem_hsa_fail(st, "%s: hsa_amd_memory_pool_allocate(%zu bytes, %s of device %u)",
                        what, size, pool_name, di);
  /* device memory: its own device has access already; grant the peers */
  uint32_t first = kind == HSAD_MEM_DEVICE ? 1 : 0;
  if (nag > first) {
    st = mem_rocr.hsa_amd_agents_allow_access(nag - first, agents + first, NULL, p);
    if (st != HSA_STATUS_SUCCESS) {
      mem_rocr.hsa_amd_memory_pool_free(p);
      return mem_hsa_fail(st, "%s: hsa_amd_agents_allow_access(%u devices) for %zu bytes", what,
                          nag - first, size);
    }
  }
  mem_entry_t e = {.base = (uintptr_t)p, .size = size, .req_size = size, .kind = kind,
                   .device = device, .numa_node = node, .access_mask = mask, .device_ptr = p};
  s = mem_registry_insert(&e, NULL);
  if (s) {
    mem_rocr.hsa_amd_memory_pool_free(p);
    if (s == HSAD_ERR_OVERLAP)
      s = hsad_fail(HSAD_ERR_HSA, "%s: ROCr returned %p, which overlaps a live allocation",
                    what, p);
    return s;
  }
  *out_ptr = p;
  return HSAD_OK;
}

hsad_status_t hsad_mem_alloc(hsad_device_t *device, hsad_mem_kind_t kind, size_t size,
                             hsad_device_t *const *access, uint32_t access_count,
                             void **out_ptr) {
  return mem_alloc_named("hsad_mem_alloc", device, kind, size, access, access_count, out_ptr);
}

/* Message for an address the registry does not hold as a base. */
static hsad_status_t not_a_base(const char *what, const void *ptr, int found,
                                const mem_entry_t *e, uintptr_t tb, size_t tsz) {
  if (found == MEM_FIND_FREED)
    return hsad_fail(HSAD_ERR_FREED, "%s: %p was already freed (%s memory of %zu bytes at %p)",
                     what, ptr, hsad_mem_kind_name(e->kind), tsz, (void *)tb);
  if (found == MEM_FIND_LIVE)
    return hsad_fail(HSAD_ERR_NOT_ALLOCATED, "%s: %p is inside %s memory at %p (offset %zu, "
                     "%zu bytes): pass the base address", what, ptr,
                     hsad_mem_kind_name(e->kind), (void *)e->base,
                     (size_t)((uintptr_t)ptr - e->base), e->size);
  return hsad_fail(HSAD_ERR_NOT_ALLOCATED, "%s: %p was not allocated or registered by hsad",
                   what, ptr);
}

/* hsad_mem_free's body; `what` names the public call in messages. */
static hsad_status_t mem_free_named(const char *what, void *ptr) {
  if (!ptr) return HSAD_OK;
  hsad_status_t fs = hsad_submit_foreign_mem_free(ptr);
  if (fs != HSAD_ERR_NOT_ALLOCATED) return fs;
  if (!mem_current())
    return hsad_fail(HSAD_ERR_NOT_ALLOCATED, "%s: %p was not allocated or registered by hsad "
                     "(no allocation since the runtime opened)", what, ptr);
  mem_entry_t e;
  uintptr_t tb = 0;
  size_t tsz = 0;
  int f = mem_registry_find((uintptr_t)ptr, &e, &tb, &tsz);
  if (f != MEM_FIND_LIVE || e.base != (uintptr_t)ptr) return not_a_base(what, ptr, f, &e, tb, tsz);
  if (e.kind == HSAD_MEM_POOLED) return hsad_host_pool_free(e.pool, ptr);
  if (e.kind == HSAD_MEM_REGISTERED)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: %p is registered caller memory (%zu "
                     "bytes): use hsad_mem_unregister", what, ptr, e.size);
  if (e.kind == HSAD_MEM_STREAM)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: %p is a block of a stream-ordered pool "
                     "(%zu bytes): use hsad_mem_free_async", what, ptr, e.req_size);
  if (mem_pending_any()) {
    char desc[96];
    snprintf(desc, sizeof desc, "%s memory of %zu bytes at %p", hsad_mem_kind_name(e.kind),
             e.size, ptr);
    hsad_status_t s = mem_pending_check(what, desc, e.base, e.size);
    if (s) return s;
  }
  /* remove first: a racing second free of the same pointer finds it gone (FREED) */
  if (!mem_registry_remove(e.base, true, &e))
    return hsad_fail(HSAD_ERR_FREED, "%s: %p was already freed (%s memory of %zu bytes at %p)",
                     what, ptr, hsad_mem_kind_name(e.kind), e.size, ptr);
  hsa_status_t st = mem_rocr.hsa_amd_memory_pool_free(ptr);
  if (st != HSA_STATUS_SUCCESS) return mem_hsa_fail(st, "%s: hsa_amd_memory_pool_free(%p)", what, ptr);
  return HSAD_OK;
}

hsad_status_t hsad_mem_free(void *ptr) { return mem_free_named("hsad_mem_free", ptr); }

/* ---- hsad_buffer_alloc (hsa-dispatch/hsad.h): the host-coherent form of hsad_mem_alloc ---- */

hsad_status_t hsad_buffer_alloc(hsad_device_t *device, size_t size, void **out_ptr) {
  static const char what[] = "hsad_buffer_alloc";
  hsad_status_t ns = HSAD_NULL_ARGS(what, {device, "device"}, {out_ptr, "out_ptr"});
  if (ns) return ns;
  if (!size) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: size 0", what);
  if (hsad_submit_device_foreign(device)) /* another vendor: its backend's zeroed buffer */
    return hsad_submit_foreign_buffer_alloc(device, size, out_ptr);
  void *p = NULL;
  hsad_status_t s = mem_alloc_named(what, device, HSAD_MEM_HOST_FINE, size, NULL, 0, &p);
  if (s) return s;
  memset(p, 0, size);
  *out_ptr = p;
  return HSAD_OK;
}

hsad_status_t hsad_buffer_free(void *ptr) { return mem_free_named("hsad_buffer_free", ptr); }

hsad_status_t hsad_mem_register(hsad_device_t *device, void *ptr, size_t size,
                                hsad_device_t *const *access, uint32_t access_count,
                                void **out_device_ptr) {
  static const char what[] = "hsad_mem_register";
  hsad_status_t s = mem_ready(device, what);
  if (s) return s;
  if (!ptr) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: ptr is NULL", what);
  if (size == 0) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: size is 0", what);
  if ((uintptr_t)ptr > UINTPTR_MAX - size)
    return hsad_fail(HSAD_ERR_RANGE, "%s: %p + %zu bytes wraps the address space", what, ptr, size);
  hsa_agent_t agents[HSAD_MEM_MAX_ACCESS + 1];
  uint32_t nag = 0, mask = 0;
  s = mem_access_agents(what, device, access, access_count, agents, &nag, &mask);
  if (s) return s;
  int32_t c = hsad_device_info(device)->nearest_cpu;
  uint32_t di = mem_device_index(device);
  if (c < 0 || (uint32_t)c >= mem_st.cpu_count || !mem_st.has_cpu_fine[c])
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "%s: device %u has no nearest CPU agent with a "
                     "fine-grained pool", what, di);
  /* reserve the range in the registry first: an overlap is refused before ROCr pins anything */
  mem_entry_t e = {.base = (uintptr_t)ptr, .size = size, .req_size = size,
                   .kind = HSAD_MEM_REGISTERED, .device = device, .numa_node = -1,
                   .access_mask = mask, .device_ptr = NULL};
  mem_entry_t other;
  s = mem_registry_insert(&e, &other);
  if (s == HSAD_ERR_OVERLAP)
    return hsad_fail(HSAD_ERR_OVERLAP, "%s: %p + %zu bytes overlaps %s memory at %p (%zu bytes)",
                     what, ptr, size, hsad_mem_kind_name(other.kind), (void *)other.base,
                     other.size);
  if (s) return s;
  void *agent_ptr = NULL;
  hsa_status_t st = mem_rocr.hsa_amd_memory_lock_to_pool(ptr, size, agents, (int)nag,
                                                         mem_st.cpu_fine[c], 0, &agent_ptr);
  if (st != HSA_STATUS_SUCCESS) {
    mem_registry_remove(e.base, false, NULL);
    return mem_hsa_fail(st, "%s: hsa_amd_memory_lock_to_pool(%p, %zu bytes)", what, ptr, size);
  }
  mem_registry_set_device_ptr(e.base, agent_ptr, mem_page_node(ptr));
  if (out_device_ptr) *out_device_ptr = agent_ptr;
  return HSAD_OK;
}

void mem_registry_set_device_ptr(uintptr_t base, void *device_ptr, int32_t node) {
  pthread_rwlock_wrlock(&reg_lock);
  size_t i = upper(base);
  if (i > 0 && reg[i - 1].base == base) {
    reg[i - 1].device_ptr = device_ptr;
    reg[i - 1].numa_node = node;
  }
  pthread_rwlock_unlock(&reg_lock);
}

hsad_status_t hsad_mem_unregister(void *ptr) {
  static const char what[] = "hsad_mem_unregister";
  if (!ptr) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: ptr is NULL", what);
  if (!mem_current())
    return hsad_fail(HSAD_ERR_NOT_ALLOCATED, "%s: %p was not registered by hsad", what, ptr);
  mem_entry_t e;
  uintptr_t tb = 0;
  size_t tsz = 0;
  int f = mem_registry_find((uintptr_t)ptr, &e, &tb, &tsz);
  if (f == MEM_FIND_FREED && e.kind == HSAD_MEM_REGISTERED)
    return hsad_fail(HSAD_ERR_FREED, "%s: %p was already unregistered (%zu bytes at %p)", what,
                     ptr, tsz, (void *)tb);
  if (f != MEM_FIND_LIVE || e.base != (uintptr_t)ptr) return not_a_base(what, ptr, f, &e, tb, tsz);
  if (e.kind != HSAD_MEM_REGISTERED)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: %p is %s memory hsad allocated (%zu bytes): "
                     "use hsad_mem_free", what, ptr, hsad_mem_kind_name(e.kind), e.size);
  if (!e.device_ptr)
    return hsad_fail(HSAD_ERR_NOT_ALLOCATED, "%s: %p is still being registered", what, ptr);
  if (mem_pending_any()) {
    char desc[96];
    snprintf(desc, sizeof desc, "registered memory of %zu bytes at %p", e.size, ptr);
    hsad_status_t s = mem_pending_check(what, desc, e.base, e.size);
    if (s) return s;
  }
  if (!mem_registry_remove(e.base, true, &e))
    return hsad_fail(HSAD_ERR_FREED, "%s: %p was already unregistered", what, ptr);
  hsa_status_t st = mem_rocr.hsa_amd_memory_unlock(ptr);
  if (st != HSA_STATUS_SUCCESS) return mem_hsa_fail(st, "%s: hsa_amd_memory_unlock(%p)", what, ptr);
  return HSAD_OK;
}

hsad_status_t hsad_mem_info(const void *ptr, hsad_mem_info_t *out_info) {
  static const char what[] = "hsad_mem_info";
  hsad_status_t ns = HSAD_NULL_ARGS(what, {ptr, "ptr"}, {out_info, "out_info"});
  if (ns) return ns;
  if (!mem_current())
    return hsad_fail(HSAD_ERR_NOT_ALLOCATED, "%s: %p was not allocated or registered by hsad",
                     what, ptr);
  mem_entry_t e;
  uintptr_t tb = 0;
  size_t tsz = 0;
  int f = mem_registry_find((uintptr_t)ptr, &e, &tb, &tsz);
  if (f == MEM_FIND_LIVE && e.kind == HSAD_MEM_POOLED &&
      atomic_load_explicit(&e.pool->blocks[e.block].state, memory_order_acquire) !=
          MEM_BLOCK_IN_USE)
    return hsad_fail(HSAD_ERR_FREED, "%s: %p is in a pool block that was freed (%zu bytes at "
                     "%p, cached by the pool of NUMA node %u)", what, ptr, e.size,
                     (void *)e.base, e.pool->numa_node);
  if (f == MEM_FIND_FREED)
    return hsad_fail(HSAD_ERR_FREED, "%s: %p is in %s memory that was freed (%zu bytes at %p)",
                     what, ptr, hsad_mem_kind_name(e.kind), tsz, (void *)tb);
  if (f != MEM_FIND_LIVE)
    return hsad_fail(HSAD_ERR_NOT_ALLOCATED, "%s: %p was not allocated or registered by hsad",
                     what, ptr);
  memset(out_info, 0, sizeof *out_info);
  out_info->base = (void *)e.base;
  out_info->device_ptr = e.device_ptr;
  out_info->capacity = e.size;
  out_info->size = e.req_size;
  if (e.kind == HSAD_MEM_POOLED)
    out_info->size = (size_t)atomic_load_explicit(&e.pool->blocks[e.block].req_size,
                                                   memory_order_relaxed);
  out_info->kind = e.kind;
  out_info->device = e.device;
  out_info->numa_node = e.numa_node;
  out_info->page_node = e.kind == HSAD_MEM_DEVICE ? -1 : mem_page_node((void *)e.base);
  out_info->access_mask = e.access_mask;
  return HSAD_OK;
}

bool mem_registry_add_access(uintptr_t base, uint32_t mask) {
  pthread_rwlock_wrlock(&reg_lock);
  size_t i = upper(base);
  bool found = i > 0 && reg[i - 1].base == base;
  if (found) reg[i - 1].access_mask |= mask;
  pthread_rwlock_unlock(&reg_lock);
  return found;
}
