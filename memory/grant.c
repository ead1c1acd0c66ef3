/* grant.c - granting an existing allocation to another device (hsad_mem_grant), as CUDA's
 * cudaDeviceEnablePeerAccess / cuMemSetAccess do after the fact, through ROCr's
 * hsa_amd_agents_allow_access on the whole allocation the registry knows.
 *
 * ROCr 5.2.3 (amd_memory_region.cpp, MemoryRegion::AllowAccess) maps the allocation to exactly
 * the GPUs listed (plus the owner of device memory): a list replaces the earlier one. So a grant
 * passes every GPU the allocation was granted to so far plus the new one, under one mutex (two
 * grants at once would each drop the other's device). ROCr finds the allocation by its base
 * only (Runtime::AllowAccess: allocation_map_.find), so the base is what is passed whatever
 * address inside it the caller gave. */
#include "memory/mem_internal.h"
#include "memory/mem_registry.h"

static pthread_mutex_t grant_lock = PTHREAD_MUTEX_INITIALIZER;

hsad_status_t hsad_mem_grant(void *ptr, hsad_device_t *device) {
  static const char what[] = "hsad_mem_grant";
  if (!ptr) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: ptr is NULL", what);
  hsad_status_t s = mem_ready(device, what);
  if (s) return s;
  uint32_t k = mem_device_index(device);
  pthread_mutex_lock(&grant_lock);
  mem_entry_t e;
  uintptr_t tb = 0;
  size_t tsz = 0;
  int f = mem_registry_find((uintptr_t)ptr, &e, &tb, &tsz);
  if (f == MEM_FIND_FREED) {
    pthread_mutex_unlock(&grant_lock);
    return hsad_fail(HSAD_ERR_FREED, "%s: %p lies in %s memory that was freed (%zu bytes at %p)",
                     what, ptr, hsad_mem_kind_name(e.kind), tsz, (void *)tb);
  }
  if (f != MEM_FIND_LIVE) {
    pthread_mutex_unlock(&grant_lock);
    return hsad_fail(HSAD_ERR_NOT_ALLOCATED, "%s: %p is no allocation of the library "
                     "(hsad_mem_alloc, hsad_mem_alloc_async, hsad_host_pool_alloc)", what, ptr);
  }
  if (e.kind == HSAD_MEM_POOLED && e.pool &&
      atomic_load_explicit(&e.pool->blocks[e.block].state, memory_order_acquire) !=
          MEM_BLOCK_IN_USE) {
    pthread_mutex_unlock(&grant_lock);
    return hsad_fail(HSAD_ERR_FREED, "%s: %p lies in a pool block that was freed (%zu bytes at "
                     "%p)", what, ptr, e.size, (void *)e.base);
  }
  if (e.access_mask & (1u << k)) { /* granted already (pool blocks: to every GPU) */
    pthread_mutex_unlock(&grant_lock);
    return HSAD_OK;
  }
  if (e.kind == HSAD_MEM_REGISTERED) {
    pthread_mutex_unlock(&grant_lock);
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "%s: %p lies in registered memory (%zu bytes at %p): "
                     "ROCr grants locked memory only when it is locked (hsa_amd_memory_lock_to_pool"
                     "); unregister it and register it again with device %u in its access list",
                     what, ptr, e.size, (void *)e.base, k);
  }
  uint32_t mask = e.access_mask | (1u << k), n = 0;
  hsa_agent_t agents[MEM_MAX_DEVICES];
  for (uint32_t i = 0; i < mem_st.device_count && i < MEM_MAX_DEVICES; i++)
    if (mask & (1u << i)) agents[n++] = mem_st.gpu_agents[i];
  hsa_status_t st = mem_rocr.hsa_amd_agents_allow_access(n, agents, NULL, (void *)e.base);
  if (st != HSA_STATUS_SUCCESS) {
    pthread_mutex_unlock(&grant_lock);
    return mem_hsa_fail(st, "%s: hsa_amd_agents_allow_access(%u agents, %s memory at %p, %zu "
                        "bytes)", what, n, hsad_mem_kind_name(e.kind), (void *)e.base, e.size);
  }
  mem_registry_add_access(e.base, 1u << k);
  pthread_mutex_unlock(&grant_lock);
  return HSAD_OK;
}
