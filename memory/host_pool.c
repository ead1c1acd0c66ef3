/* host_pool.c - pinned host pools, one per NUMA node (CPU agent), with lock-free size classes.
 *
 * Memory ordering: a class stack's head is CAS'ed acq_rel (push releases the block's `next`
 * and the holder's writes to the block; pop acquires them); the ABA tag (upper 32 bits) makes a
 * pop that read a stale `next` fail its CAS. A block's state moves IN_USE -> FREEING -> CACHED
 * (free) and CACHED -> IN_USE (pop: the popper owns it, no CAS needed) with release stores, so a
 * second free of the same pointer fails the IN_USE CAS and reports FREED. Counters are relaxed
 * atomics: each is exact once no call is in progress. The hash (base -> descriptor) is written
 * only under the pool's mutex and read without it: an entry is removed only for a block that is
 * not in use, so a lookup for a block someone holds never races with its removal.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsa-dispatch/backend.h"
#include "memory/mem_internal.h"
#include "memory/mem_registry.h"

_Static_assert(offsetof(struct hsad_host_pool, ops) == offsetof(hsad_object_head_t, ops),
               "a ROCr pool begins with hsad_object_head_t, as the backends' pools do");

/* The table of a pool of another vendor's backend (nvidia/nv_pool.c: hsad_host_pool_get on its
 * device), which serves every call on it as in the build without AMD (its checks, messages and
 * counters); NULL for ROCr's pools and NULL. One load and a branch before ROCr's path. */
static inline const hsad_backend_ops_t *pool_foreign(const hsad_host_pool_t *pool) {
  return pool ? hsad_object_ops(pool) : NULL;
}

#define NONE UINT32_MAX
enum { MEM_BLOCK_FREEING = 3 };

static uint32_t hash_of(uintptr_t p) {
  return (uint32_t)(((p >> 12) * 0x9E3779B97F4A7C15ull) >> 40) % MEM_POOL_HASH;
}

static uint32_t hash_find(hsad_host_pool_t *pool, uintptr_t p) {
  uint32_t h = hash_of(p);
  for (uint32_t k = 0; k < MEM_POOL_HASH; k++) {
    uint32_t v = atomic_load_explicit(&pool->hash[(h + k) % MEM_POOL_HASH], memory_order_acquire);
    if (v == 0) return NONE;
    if (v != MEM_HASH_TOMB &&
        atomic_load_explicit(&pool->blocks[v - 1].ptr, memory_order_relaxed) == p)
      return v - 1;
  }
  return NONE;
}

static void hash_insert(hsad_host_pool_t *pool, uintptr_t p, uint32_t idx) { /* lock held */
  uint32_t h = hash_of(p);
  for (uint32_t k = 0; k < MEM_POOL_HASH; k++) {
    _Atomic uint32_t *slot = &pool->hash[(h + k) % MEM_POOL_HASH];
    uint32_t v = atomic_load_explicit(slot, memory_order_relaxed);
    if (v == 0 || v == MEM_HASH_TOMB) {
      atomic_store_explicit(slot, idx + 1, memory_order_release);
      return;
    }
  }
  /* unreachable: the table has twice as many slots as descriptors */
}

static void hash_remove(hsad_host_pool_t *pool, uintptr_t p, uint32_t idx) { /* lock held */
  uint32_t h = hash_of(p);
  for (uint32_t k = 0; k < MEM_POOL_HASH; k++) {
    _Atomic uint32_t *slot = &pool->hash[(h + k) % MEM_POOL_HASH];
    uint32_t v = atomic_load_explicit(slot, memory_order_relaxed);
    if (v == 0) return;
    if (v == idx + 1) {
      atomic_store_explicit(slot, MEM_HASH_TOMB, memory_order_release);
      return;
    }
  }
}

static void stack_push(hsad_host_pool_t *pool, uint32_t cls, uint32_t idx) {
  _Atomic uint64_t *head = &pool->stacks[cls].head;
  uint64_t old = atomic_load_explicit(head, memory_order_relaxed), nw;
  do {
    atomic_store_explicit(&pool->blocks[idx].next, (uint32_t)old, memory_order_relaxed);
    nw = ((old >> 32) + 1) << 32 | (uint64_t)(idx + 1);
  } while (!atomic_compare_exchange_weak_explicit(head, &old, nw, memory_order_acq_rel,
                                                  memory_order_relaxed));
}

static uint32_t stack_pop(hsad_host_pool_t *pool, uint32_t cls) {
  _Atomic uint64_t *head = &pool->stacks[cls].head;
  uint64_t old = atomic_load_explicit(head, memory_order_acquire), nw;
  do {
    uint32_t top = (uint32_t)old;
    if (!top) return NONE;
    uint32_t next = atomic_load_explicit(&pool->blocks[top - 1].next, memory_order_relaxed);
    nw = ((old >> 32) + 1) << 32 | next;
  } while (!atomic_compare_exchange_weak_explicit(head, &old, nw, memory_order_acq_rel,
                                                  memory_order_acquire));
  return (uint32_t)old - 1;
}

/* Size class of `size` bytes: *out_bytes = class bytes; HSAD_HOST_POOL_CLASSES = oversize. */
static uint32_t class_of(size_t size, uint64_t *out_bytes) {
  if (size > HSAD_HOST_POOL_MAX_CLASS) {
    *out_bytes = ((uint64_t)size + 4095) & ~(uint64_t)4095;
    return HSAD_HOST_POOL_CLASSES;
  }
  uint32_t c = 0;
  uint64_t b = HSAD_HOST_POOL_MIN_CLASS;
  while (b < size) b <<= 1, c++;
  *out_bytes = b;
  return c;
}

static hsad_status_t pool_check(const hsad_host_pool_t *pool, const char *what) {
  if (!pool) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: pool is NULL", what);
  if (!mem_current() || pool->generation !=
                            atomic_load_explicit(&mem_st.generation, memory_order_acquire))
    return hsad_fail(HSAD_ERR_CLOSED, "%s: the pool's runtime was closed", what);
  return HSAD_OK;
}

/* ---- pools ------------------------------------------------------------------------------ */

void mem_pools_reset(bool release_cached) { /* mem_st.lock held */
  for (uint32_t c = 0; c < MEM_MAX_CPUS; c++) {
    hsad_host_pool_t *p = atomic_exchange_explicit(&mem_st.pools[c], NULL, memory_order_acq_rel);
    if (p) {
      if (release_cached)
        for (uint32_t cls = 0; cls < HSAD_HOST_POOL_CLASSES; cls++)
          for (uint32_t idx; (idx = stack_pop(p, cls)) != NONE;)
            mem_rocr.hsa_amd_memory_pool_free(
                (void *)atomic_load_explicit(&p->blocks[idx].ptr, memory_order_relaxed));
      pthread_mutex_destroy(&p->lock);
      free(p);
    }
  }
}

static hsad_status_t pool_for_cpu(uint32_t c, const char *what, hsad_host_pool_t **out) {
  hsad_host_pool_t *p = atomic_load_explicit(&mem_st.pools[c], memory_order_acquire);
  if (p) {
    *out = p;
    return HSAD_OK;
  }
  if (!mem_st.has_cpu_fine[c])
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "%s: CPU agent %u (NUMA node %u) has no fine-grained "
                     "pool", what, c, mem_st.cpu_node[c]);
  pthread_mutex_lock(&mem_st.lock);
  p = atomic_load_explicit(&mem_st.pools[c], memory_order_relaxed);
  if (!p) {
    p = calloc(1, sizeof *p);
    if (!p) {
      pthread_mutex_unlock(&mem_st.lock);
      return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: pool of NUMA node %u: %zu bytes of host "
                       "memory", what, mem_st.cpu_node[c], sizeof *p);
    }
    p->cpu_index = c;
    p->numa_node = mem_st.cpu_node[c];
    p->generation = atomic_load_explicit(&mem_st.generation, memory_order_relaxed);
    p->rocr_pool = mem_st.cpu_fine[c];
    pthread_mutex_init(&p->lock, NULL);
    for (uint32_t i = 0; i < HSAD_HOST_POOL_MAX_BLOCKS; i++)
      p->free_desc[i] = HSAD_HOST_POOL_MAX_BLOCKS - 1 - i;
    p->free_desc_count = HSAD_HOST_POOL_MAX_BLOCKS;
    atomic_store_explicit(&p->max_cached, HSAD_HOST_POOL_DEFAULT_MAX_CACHED, memory_order_relaxed);
    atomic_store_explicit(&mem_st.pools[c], p, memory_order_release);
  }
  pthread_mutex_unlock(&mem_st.lock);
  *out = p;
  return HSAD_OK;
}

hsad_status_t hsad_host_pool_get(hsad_device_t *device, hsad_host_pool_t **out_pool) {
  static const char what[] = "hsad_host_pool_get";
  if (!out_pool) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: out_pool is NULL", what);
  if (hsad_submit_device_foreign(device)) /* another vendor's device: its backend's pool */
    return hsad_submit_foreign_host_pool_get(device, out_pool);
  hsad_status_t s = mem_ready(device, what);
  if (s) return s;
  int32_t c = hsad_device_info(device)->nearest_cpu;
  if (c < 0 || (uint32_t)c >= mem_st.cpu_count)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "%s: device %u has no nearest CPU agent", what,
                     mem_device_index(device));
  return pool_for_cpu((uint32_t)c, what, out_pool);
}

hsad_status_t hsad_host_pool_get_node(hsad_runtime_t *runtime, uint32_t numa_node,
                                      hsad_host_pool_t **out_pool) {
  static const char what[] = "hsad_host_pool_get_node";
  if (!out_pool) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: out_pool is NULL", what);
  hsad_status_t s = mem_ready_runtime(runtime, what);
  if (s) return s;
  char nodes[128] = "";
  size_t len = 0;
  for (uint32_t c = 0; c < mem_st.cpu_count; c++) {
    if (mem_st.cpu_node[c] == numa_node) return pool_for_cpu(c, what, out_pool);
    len += (size_t)snprintf(nodes + len, len < sizeof nodes ? sizeof nodes - len : 0, "%s%u",
                            c ? ", " : "", mem_st.cpu_node[c]);
  }
  return hsad_fail(HSAD_ERR_NUMA, "%s: no CPU agent on NUMA node %u (CPU agents are on nodes "
                   "%s)", what, numa_node, nodes);
}

/* Releases block idx to ROCr (pool lock held; the block is FREEING or CACHED-and-popped). */
static void block_release(hsad_host_pool_t *pool, uint32_t idx) {
  mem_block_t *b = &pool->blocks[idx];
  uintptr_t p = atomic_load_explicit(&b->ptr, memory_order_relaxed);
  hash_remove(pool, p, idx);
  mem_registry_remove(p, true, NULL);
  mem_rocr.hsa_amd_memory_pool_free((void *)p);
  atomic_store_explicit(&b->ptr, 0, memory_order_relaxed);
  atomic_store_explicit(&b->state, MEM_BLOCK_UNUSED, memory_order_release);
  pool->free_desc[pool->free_desc_count++] = idx;
}

hsad_status_t hsad_host_pool_alloc(hsad_host_pool_t *pool, size_t size, void **out_ptr) {
  static const char what[] = "hsad_host_pool_alloc";
  const hsad_backend_ops_t *fo = pool_foreign(pool);
  if (__builtin_expect(fo != NULL, 0)) return fo->host_pool_alloc(pool, size, out_ptr);
  hsad_status_t s = pool_check(pool, what);
  if (s) return s;
  if (!out_ptr) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: out_ptr is NULL", what);
  if (size == 0) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: size is 0", what);
  if (size > SIZE_MAX - 4095)
    return hsad_fail(HSAD_ERR_RANGE, "%s: %zu bytes overflow when rounded to pages", what, size);
  uint64_t bytes;
  uint32_t cls = class_of(size, &bytes);
  if (cls < HSAD_HOST_POOL_CLASSES) {
    uint32_t idx = stack_pop(pool, cls);
    if (idx != NONE) { /* hit: no lock */
      mem_block_t *b = &pool->blocks[idx];
      atomic_store_explicit(&b->req_size, size, memory_order_relaxed);
      atomic_store_explicit(&b->state, MEM_BLOCK_IN_USE, memory_order_release);
      atomic_fetch_sub_explicit(&pool->bytes_cached, bytes, memory_order_relaxed);
      atomic_fetch_sub_explicit(&pool->blocks_cached, 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&pool->bytes_in_use, bytes, memory_order_relaxed);
      atomic_fetch_add_explicit(&pool->blocks_in_use, 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&pool->hits, 1, memory_order_relaxed);
      *out_ptr = (void *)atomic_load_explicit(&b->ptr, memory_order_relaxed);
      return HSAD_OK;
    }
  }
  /* miss */
  if (bytes > mem_st.cpu_fine_size[pool->cpu_index])
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: %zu bytes exceed the fine-grained pool of "
                     "NUMA node %u (%llu bytes)", what, size, pool->numa_node,
                     (unsigned long long)mem_st.cpu_fine_size[pool->cpu_index]);
  pthread_mutex_lock(&pool->lock);
  if (pool->free_desc_count == 0) {
    pthread_mutex_unlock(&pool->lock);
    return hsad_fail(HSAD_ERR_RESOURCE_EXHAUSTED, "%s: the pool of NUMA node %u tracks %u "
                     "blocks (in use + cached) already: free or trim", what, pool->numa_node,
                     (unsigned)HSAD_HOST_POOL_MAX_BLOCKS);
  }
  uint32_t idx = pool->free_desc[--pool->free_desc_count];
  void *p = NULL;
  hsa_status_t st = mem_rocr.hsa_amd_memory_pool_allocate(pool->rocr_pool, bytes, 0, &p);
  if (st == HSA_STATUS_SUCCESS && mem_st.device_count) {
    st = mem_rocr.hsa_amd_agents_allow_access(mem_st.device_count, mem_st.gpu_agents, NULL, p);
    if (st != HSA_STATUS_SUCCESS) {
      mem_rocr.hsa_amd_memory_pool_free(p);
      pool->free_desc[pool->free_desc_count++] = idx;
      pthread_mutex_unlock(&pool->lock);
      return mem_hsa_fail(st, "%s: hsa_amd_agents_allow_access(%u devices) for a %llu-byte block",
                          what, mem_st.device_count, (unsigned long long)bytes);
    }
  }
  if (st != HSA_STATUS_SUCCESS) {
    pool->free_desc[pool->free_desc_count++] = idx;
    pthread_mutex_unlock(&pool->lock);
    if (st == HSA_STATUS_ERROR_OUT_OF_RESOURCES)
      return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: %llu bytes: the fine-grained pool of NUMA "
                       "node %u is exhausted", what, (unsigned long long)bytes, pool->numa_node);
    return mem_hsa_fail(st, "%s: hsa_amd_memory_pool_allocate(%llu bytes, NUMA node %u)", what,
                        (unsigned long long)bytes, pool->numa_node);
  }
  /* first touch: the page is placed now, on the node the pool's memory is bound to */
  *(volatile char *)p = 0;
  mem_block_t *b = &pool->blocks[idx];
  b->cls = cls;
  b->bytes = bytes;
  b->page_node = mem_page_node(p);
  atomic_store_explicit(&b->req_size, size, memory_order_relaxed);
  atomic_store_explicit(&b->ptr, (uintptr_t)p, memory_order_relaxed);
  atomic_store_explicit(&b->state, MEM_BLOCK_IN_USE, memory_order_release);
  mem_entry_t e = {.base = (uintptr_t)p, .size = bytes, .req_size = size, .kind = HSAD_MEM_POOLED,
                   .device = NULL, .numa_node = (int32_t)pool->numa_node,
                   .access_mask = mem_st.device_count >= 32 ? UINT32_MAX
                                                            : (1u << mem_st.device_count) - 1,
                   .device_ptr = p, .pool = pool, .block = idx};
  s = mem_registry_insert(&e, NULL);
  if (s) {
    mem_rocr.hsa_amd_memory_pool_free(p);
    atomic_store_explicit(&b->ptr, 0, memory_order_relaxed);
    atomic_store_explicit(&b->state, MEM_BLOCK_UNUSED, memory_order_release);
    pool->free_desc[pool->free_desc_count++] = idx;
    pthread_mutex_unlock(&pool->lock);
    return s == HSAD_ERR_OVERLAP
               ? hsad_fail(HSAD_ERR_HSA, "%s: ROCr returned %p, which overlaps a live allocation",
                           what, p)
               : s;
  }
  hash_insert(pool, (uintptr_t)p, idx);
  pthread_mutex_unlock(&pool->lock);
  atomic_fetch_add_explicit(&pool->misses, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&pool->bytes_in_use, bytes, memory_order_relaxed);
  atomic_fetch_add_explicit(&pool->blocks_in_use, 1, memory_order_relaxed);
  *out_ptr = p;
  return HSAD_OK;
}

hsad_status_t hsad_host_pool_free(hsad_host_pool_t *pool, void *ptr) {
  static const char what[] = "hsad_host_pool_free";
  const hsad_backend_ops_t *fo = pool_foreign(pool);
  if (__builtin_expect(fo != NULL, 0)) return fo->host_pool_free(pool, ptr);
  hsad_status_t s = pool_check(pool, what);
  if (s) return s;
  if (!ptr) return HSAD_OK;
  uint32_t idx = hash_find(pool, (uintptr_t)ptr);
  if (idx == NONE)
    return hsad_fail(HSAD_ERR_NOT_ALLOCATED, "%s: no block of the pool of NUMA node %u starts "
                     "at %p", what, pool->numa_node, ptr);
  mem_block_t *b = &pool->blocks[idx];
  if (__builtin_expect(mem_pending_any(), 0)) {
    char desc[96];
    snprintf(desc, sizeof desc, "a %llu-byte block of the pool of NUMA node %u at %p",
             (unsigned long long)b->bytes, pool->numa_node, ptr);
    s = mem_pending_check(what, desc, (uintptr_t)ptr, b->bytes);
    if (s) return s;
  }
  uint32_t expect = MEM_BLOCK_IN_USE;
  if (!atomic_compare_exchange_strong_explicit(&b->state, &expect, MEM_BLOCK_FREEING,
                                               memory_order_acq_rel, memory_order_acquire))
    return hsad_fail(HSAD_ERR_FREED, "%s: %p was already freed (a %llu-byte block cached by the "
                     "pool of NUMA node %u)", what, ptr, (unsigned long long)b->bytes,
                     pool->numa_node);
  uint64_t bytes = b->bytes;
  atomic_fetch_sub_explicit(&pool->bytes_in_use, bytes, memory_order_relaxed);
  atomic_fetch_sub_explicit(&pool->blocks_in_use, 1, memory_order_relaxed);
  if (b->cls < HSAD_HOST_POOL_CLASSES) {
    uint64_t max = atomic_load_explicit(&pool->max_cached, memory_order_relaxed);
    uint64_t now = atomic_fetch_add_explicit(&pool->bytes_cached, bytes, memory_order_relaxed);
    if (now + bytes <= max) { /* cache it: no lock */
      atomic_fetch_add_explicit(&pool->blocks_cached, 1, memory_order_relaxed);
      atomic_store_explicit(&b->state, MEM_BLOCK_CACHED, memory_order_release);
      stack_push(pool, b->cls, idx);
      return HSAD_OK;
    }
    atomic_fetch_sub_explicit(&pool->bytes_cached, bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&pool->trims, 1, memory_order_relaxed);
  }
  pthread_mutex_lock(&pool->lock);
  block_release(pool, idx);
  pthread_mutex_unlock(&pool->lock);
  return HSAD_OK;
}

hsad_status_t hsad_host_pool_trim(hsad_host_pool_t *pool, uint64_t keep_bytes,
                                  uint64_t *out_released_bytes) {
  static const char what[] = "hsad_host_pool_trim";
  const hsad_backend_ops_t *fo = pool_foreign(pool);
  if (fo) return fo->host_pool_trim(pool, keep_bytes, out_released_bytes);
  hsad_status_t s = pool_check(pool, what);
  if (s) return s;
  uint64_t released = 0;
  pthread_mutex_lock(&pool->lock);
  for (int cls = HSAD_HOST_POOL_CLASSES - 1; cls >= 0; cls--) {
    while (atomic_load_explicit(&pool->bytes_cached, memory_order_relaxed) > keep_bytes) {
      uint32_t idx = stack_pop(pool, (uint32_t)cls);
      if (idx == NONE) break;
      uint64_t bytes = pool->blocks[idx].bytes;
      atomic_fetch_sub_explicit(&pool->bytes_cached, bytes, memory_order_relaxed);
      atomic_fetch_sub_explicit(&pool->blocks_cached, 1, memory_order_relaxed);
      atomic_fetch_add_explicit(&pool->trims, 1, memory_order_relaxed);
      block_release(pool, idx);
      released += bytes;
    }
  }
  pthread_mutex_unlock(&pool->lock);
  if (out_released_bytes) *out_released_bytes = released;
  return HSAD_OK;
}

hsad_status_t hsad_host_pool_set_max_cached(hsad_host_pool_t *pool, uint64_t max_cached_bytes) {
  const hsad_backend_ops_t *fo = pool_foreign(pool);
  if (fo) return fo->host_pool_set_max_cached(pool, max_cached_bytes);
  hsad_status_t s = pool_check(pool, "hsad_host_pool_set_max_cached");
  if (s) return s;
  atomic_store_explicit(&pool->max_cached, max_cached_bytes, memory_order_relaxed);
  return hsad_host_pool_trim(pool, max_cached_bytes, NULL);
}

hsad_status_t hsad_host_pool_stats(const hsad_host_pool_t *pool, hsad_host_pool_stats_t *out) {
  const hsad_backend_ops_t *fo = pool_foreign(pool);
  if (fo) return fo->host_pool_stats(pool, out);
  hsad_status_t s = HSAD_NULL_ARGS("hsad_host_pool_stats", {pool, "pool"}, {out, "out_stats"});
  if (s) return s;
  hsad_host_pool_t *p = (hsad_host_pool_t *)pool; /* counters are atomics: loads only */
  out->numa_node = p->numa_node;
  out->bytes_in_use = atomic_load_explicit(&p->bytes_in_use, memory_order_relaxed);
  out->blocks_in_use = atomic_load_explicit(&p->blocks_in_use, memory_order_relaxed);
  out->bytes_cached = atomic_load_explicit(&p->bytes_cached, memory_order_relaxed);
  out->blocks_cached = atomic_load_explicit(&p->blocks_cached, memory_order_relaxed);
  out->hits = atomic_load_explicit(&p->hits, memory_order_relaxed);
  out->misses = atomic_load_explicit(&p->misses, memory_order_relaxed);
  out->trims = atomic_load_explicit(&p->trims, memory_order_relaxed);
  out->max_cached_bytes = atomic_load_explicit(&p->max_cached, memory_order_relaxed);
  return HSAD_OK;
}
