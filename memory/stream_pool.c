/* stream_pool.c - stream-ordered device allocation (hsad_memory.h, "stream-ordered device
 * allocation"): blocks freed at a point of a queue's completion timeline and reused by rules
 * 1-4 without a host wait.
 *
 * A pool is a list of blocks under one mutex: allocated ones (registered, kind
 * HSAD_MEM_STREAM) and cached ones (still registered, marked freed: lookups answer FREED as for
 * a tombstone, and a reuse flips the mark instead of inserting; each with the point of its
 * queue's timeline that its free named, hsad_submit_point, and a sequence number giving the
 * order of frees). Searches are linear over the pool's blocks: a runtime's per-step
 * allocations are tens of blocks.
 */
#include <stdlib.h>
#include <string.h>

#include "memory/mem_internal.h"
#include "memory/mem_registry.h"

typedef struct sp_block {
  uintptr_t ptr;
  uint64_t bytes;            /* class bytes */
  bool cached;
  hsad_completion_t free_point;
  uint64_t free_end;         /* packets of the freeing queue below this id precede the free */
  bool pending;              /* free_point's epoch not issued yet (hsad_submit_point) */
  bool ordered;              /* a barrier packet (no work) lies at free_end - 1 or later */
  uint64_t free_seq;         /* order of frees (oldest first for releases) */
} sp_block_t;

struct hsad_mem_pool {
  hsad_device_t *device;
  uint32_t dev;
  uint64_t generation;
  pthread_mutex_t lock;
  sp_block_t *blocks;
  size_t n, cap;
  uint64_t seq;
  hsad_mem_pool_stats_t st;  /* reserved/used/cached and the counters */
};

static hsad_status_t sp_ready(hsad_mem_pool_t *pool, const char *what) {
  if (!pool) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: pool is NULL", what);
  hsad_status_t s = mem_ready(pool->device, what);
  if (s) return s;
  if (pool->generation != atomic_load_explicit(&mem_st.generation, memory_order_acquire))
    return hsad_fail(HSAD_ERR_CLOSED, "%s: the pool belongs to a runtime that was closed",
                     what);
  return HSAD_OK;
}

hsad_status_t hsad_mem_pool_create(hsad_device_t *device, hsad_mem_pool_t **out_pool) {
  static const char what[] = "hsad_mem_pool_create";
  if (!out_pool) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: out_pool is NULL", what);
  hsad_status_t s = mem_ready(device, what);
  if (s) return s;
  uint32_t di = mem_device_index(device);
  if (!mem_st.has_gpu_coarse[di])
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "%s: device %u has no coarse-grained pool", what, di);
  hsad_mem_pool_t *p = calloc(1, sizeof *p);
  if (!p) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: %zu bytes", what, sizeof *p);
  p->device = device;
  p->dev = di;
  p->generation = atomic_load_explicit(&mem_st.generation, memory_order_acquire);
  pthread_mutex_init(&p->lock, NULL);
  *out_pool = p;
  return HSAD_OK;
}

/* Returns block i (cached, reached) to ROCr and drops it from the list and the registry,
 * leaving a tombstone (lock held). */
static void sp_release(hsad_mem_pool_t *pool, size_t i) {
  sp_block_t *b = &pool->blocks[i];
  mem_registry_remove(b->ptr, true, NULL);
  mem_rocr.hsa_amd_memory_pool_free((void *)b->ptr);
  pool->st.cached_bytes -= b->bytes;
  pool->st.cached_blocks--;
  pool->st.reserved_bytes -= b->bytes;
  pool->st.rocr_releases++;
  pool->blocks[i] = pool->blocks[--pool->n];
}

/* Releases reached cached blocks but the one at `spare` (0: none), oldest free first, while
 * more than keep bytes are cached (lock held); returns the bytes released. */
static uint64_t sp_trim(hsad_mem_pool_t *pool, uint64_t keep, uintptr_t spare) {
  uint64_t released = 0;
  while (pool->st.cached_bytes > keep) {
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < pool->n; i++) {
      sp_block_t *b = &pool->blocks[i];
      if (b->cached && b->ptr != spare && (best == SIZE_MAX || b->free_seq < pool->blocks[best].free_seq) &&
          hsad_completion_done(&b->free_point))
        best = i;
    }
    if (best == SIZE_MAX) break; /* the rest is pending */
    released += pool->blocks[best].bytes;
    sp_release(pool, best);
  }
  return released;
}

/* Issues block b's pending free point (its queue's next epoch: one barrier-AND there unless
 * an epoch was issued since the free), so it can be waited on (lock held). */
static hsad_status_t sp_issue(hsad_mem_pool_t *pool, sp_block_t *b, uint64_t deadline_ns) {
  if (!b->pending) return HSAD_OK;
  hsad_submit_point_t pt = {.completion = b->free_point, .pending = true};
  bool packet = false;
  hsad_status_t s = hsad_submit_point_issue(&pt, deadline_ns, &packet);
  if (packet) pool->st.packets++;
  if (!s) b->pending = false;
  return s;
}

hsad_status_t hsad_mem_pool_destroy(hsad_mem_pool_t *pool, uint64_t deadline_ns) {
  static const char what[] = "hsad_mem_pool_destroy";
  if (!pool) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: pool is NULL", what);
  /* the device may be gone with a closed runtime: only generations are compared */
  bool live = mem_current() &&
              pool->generation == atomic_load_explicit(&mem_st.generation, memory_order_acquire);
  if (live) {
    pthread_mutex_lock(&pool->lock);
    if (pool->st.used_blocks) {
      uint64_t nb = pool->st.used_blocks, by = pool->st.used_bytes;
      pthread_mutex_unlock(&pool->lock);
      return hsad_fail(HSAD_ERR_IN_USE, "%s: %llu blocks (%llu bytes) still allocated: free "
                       "them with hsad_mem_free_async first (nothing changed)", what,
                       (unsigned long long)nb, (unsigned long long)by);
    }
    for (size_t i = 0; i < pool->n; i++) {
      hsad_status_t s = sp_issue(pool, &pool->blocks[i], deadline_ns);
      if (!s) s = hsad_completion_wait(&pool->blocks[i].free_point, deadline_ns);
      if (s == HSAD_ERR_TIMEOUT) {
        pthread_mutex_unlock(&pool->lock);
        return hsad_fail(HSAD_ERR_TIMEOUT, "%s: the free point of a block of %llu bytes was "
                         "not reached by the deadline (nothing changed)", what,
                         (unsigned long long)pool->blocks[i].bytes);
      }
    }
    sp_trim(pool, 0, 0);
    pthread_mutex_unlock(&pool->lock);
  }
  pthread_mutex_destroy(&pool->lock);
  free(pool->blocks);
  free(pool);
  return HSAD_OK;
}

/* Registers block b as allocated (lock held). */
static hsad_status_t sp_register(hsad_mem_pool_t *pool, const sp_block_t *b, size_t bytes) {
  mem_entry_t e = {.base = b->ptr, .size = b->bytes, .req_size = bytes, .kind = HSAD_MEM_STREAM,
                   .device = pool->device, .numa_node = -1, .access_mask = 1u << pool->dev,
                   .device_ptr = (void *)b->ptr, .spool = pool};
  hsad_status_t s = mem_registry_insert(&e, NULL);
  if (s == HSAD_ERR_OVERLAP)
    return hsad_fail(HSAD_ERR_HSA, "hsad_mem_alloc_async: ROCr returned %p, which overlaps a "
                     "live allocation", (void *)b->ptr);
  return s;
}

static void sp_count_use(hsad_mem_pool_t *pool, uint64_t bytes) {
  pool->st.used_bytes += bytes;
  pool->st.used_blocks++;
  pool->st.allocs++;
  if (pool->st.used_bytes > pool->st.used_high) pool->st.used_high = pool->st.used_bytes;
  if (pool->st.reserved_bytes > pool->st.reserved_high)
    pool->st.reserved_high = pool->st.reserved_bytes;
}

/* The cached block of class `cls` that rule 1, 2 or 3 picks for `queue`, and the rule
 * (lock held); SIZE_MAX: none. */
static size_t sp_pick(hsad_mem_pool_t *pool, hsad_queue_t *queue, uint64_t cls, int *rule) {
  size_t pick[3] = {SIZE_MAX, SIZE_MAX, SIZE_MAX};
  for (size_t i = 0; i < pool->n; i++) {
    sp_block_t *b = &pool->blocks[i];
    if (!b->cached || b->bytes != cls) continue;
    int r = hsad_completion_done(&b->free_point) ? 0 : b->free_point.queue == queue ? 1 : 2;
    if (pick[r] == SIZE_MAX || b->free_seq < pool->blocks[pick[r]].free_seq) pick[r] = i;
  }
  for (int r = 0; r < 3; r++)
    if (pick[r] != SIZE_MAX) {
      *rule = r + 1;
      return pick[r];
    }
  return SIZE_MAX;
}

/* What reuse by rule 2 or 3 submits on `queue` before the block is handed out (lock held).
 * Rule 2: nothing when a barrier packet (no work) lies between the free's packets and what the
 * queue runs next (the free named a barrier's epoch, or one was submitted since): every later
 * packet, HSAD_LAUNCH_NO_BARRIER ones too, starts after the free point; otherwise one
 * barrier-AND without an epoch, since the free named a dispatch's epoch (or a pending one) and a
 * NO_BARRIER dispatch could overlap that dispatch. Rule 3: the free point issued (when pending)
 * and one barrier on `queue` waiting for it. */
static hsad_status_t sp_order(hsad_mem_pool_t *pool, sp_block_t *b, hsad_queue_t *queue,
                              int rule, uint64_t deadline_ns) {
  hsad_status_t s = HSAD_OK;
  if (rule == 2 && !b->ordered && !hsad_submit_ordered_since(queue, b->free_end)) {
    if (!(s = hsad_queue_barrier(queue, NULL, 0, deadline_ns, NULL))) {
      pool->st.packets++;
      b->ordered = true;
    }
  } else if (rule == 3 && !(s = sp_issue(pool, b, deadline_ns))) {
    if (!(s = hsad_queue_barrier(queue, &b->free_point, 1, deadline_ns, NULL))) pool->st.packets++;
  }
  return s;
}

hsad_status_t hsad_mem_alloc_async(hsad_mem_pool_t *pool, hsad_queue_t *queue, size_t bytes,
                                   uint64_t deadline_ns, void **out_ptr) {
  static const char what[] = "hsad_mem_alloc_async";
  hsad_status_t s = sp_ready(pool, what);
  if (s) return s;
  if (!queue || !out_ptr)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", what,
                     !queue ? "queue" : "out_ptr");
  if (hsad_device_runtime(hsad_queue_device(queue)) != hsad_device_runtime(pool->device))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: the queue is not of the pool's runtime",
                     what);
  if (bytes == 0) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: bytes is 0", what);
  if (bytes > ((size_t)1 << 62))
    return hsad_fail(HSAD_ERR_RANGE, "%s: %zu bytes overflow when rounded up to a power of two",
                     what, bytes);
  uint64_t cls = 4096;
  while (cls < bytes) cls <<= 1;
  if (cls > mem_st.gpu_coarse_size[pool->dev])
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: %zu bytes (class %llu) exceed the "
                     "coarse-grained device pool of device %u (%llu bytes)", what, bytes,
                     (unsigned long long)cls, pool->dev,
                     (unsigned long long)mem_st.gpu_coarse_size[pool->dev]);
  pthread_mutex_lock(&pool->lock);
  int rule = 0;
  size_t i = sp_pick(pool, queue, cls, &rule);
  if (i != SIZE_MAX) {
    if ((s = sp_order(pool, &pool->blocks[i], queue, rule, deadline_ns))) {
      pthread_mutex_unlock(&pool->lock);
      return s;
    }
    sp_block_t b = pool->blocks[i];
    mem_registry_set_freed(b.ptr, false, bytes); /* registered while cached: no insert */
    pool->blocks[i].cached = false;
    pool->st.cached_bytes -= cls;
    pool->st.cached_blocks--;
    if (rule == 1) pool->st.reuse_reached++;
    else if (rule == 2) pool->st.reuse_same_queue++;
    else pool->st.reuse_cross_queue++;
    sp_count_use(pool, cls);
    pthread_mutex_unlock(&pool->lock);
    *out_ptr = (void *)b.ptr;
    return HSAD_OK;
  }
  if (pool->n == pool->cap) {
    size_t cap = pool->cap ? pool->cap * 2 : 16;
    sp_block_t *nb = realloc(pool->blocks, cap * sizeof *nb);
    if (!nb) {
      pthread_mutex_unlock(&pool->lock);
      return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: bookkeeping of %zu blocks", what, cap);
    }
    pool->blocks = nb, pool->cap = cap;
  }
  void *p = NULL;
  hsa_status_t st = mem_rocr.hsa_amd_memory_pool_allocate(mem_st.gpu_coarse[pool->dev], cls, 0, &p);
  if (st != HSA_STATUS_SUCCESS) {
    pthread_mutex_unlock(&pool->lock);
    if (st == HSA_STATUS_ERROR_OUT_OF_RESOURCES)
      return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: %zu bytes (class %llu): the coarse-grained "
                       "device pool of device %u is exhausted", what, bytes,
                       (unsigned long long)cls, pool->dev);
    return mem_hsa_fail(st, "%s: hsa_amd_memory_pool_allocate(%llu bytes, device %u)", what,
                        (unsigned long long)cls, pool->dev);
  }
  sp_block_t b = {.ptr = (uintptr_t)p, .bytes = cls};
  if ((s = sp_register(pool, &b, bytes))) {
    mem_rocr.hsa_amd_memory_pool_free(p);
    pthread_mutex_unlock(&pool->lock);
    return s;
  }
  pool->blocks[pool->n++] = b;
  pool->st.reserved_bytes += cls;
  pool->st.rocr_allocs++;
  sp_count_use(pool, cls);
  pthread_mutex_unlock(&pool->lock);
  *out_ptr = p;
  return HSAD_OK;
}

hsad_status_t hsad_mem_free_async(hsad_queue_t *queue, void *ptr, uint64_t deadline_ns) {
  static const char what[] = "hsad_mem_free_async";
  if (!queue || !ptr)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", what, !queue ? "queue" : "ptr");
  hsad_status_t s = mem_ready(hsad_queue_device(queue), what);
  if (s) return s;
  mem_entry_t e;
  uintptr_t tb = 0;
  size_t tsz = 0;
  int f = mem_registry_find((uintptr_t)ptr, &e, &tb, &tsz);
  if (f == MEM_FIND_FREED)
    return hsad_fail(HSAD_ERR_FREED, "%s: %p was already freed (%s memory of %zu bytes at %p)",
                     what, ptr, hsad_mem_kind_name(e.kind), tsz, (void *)tb);
  if (f == MEM_FIND_NONE)
    return hsad_fail(HSAD_ERR_NOT_ALLOCATED, "%s: %p was not allocated by hsad", what, ptr);
  if (e.base != (uintptr_t)ptr)
    return hsad_fail(HSAD_ERR_NOT_ALLOCATED, "%s: %p is inside %s memory at %p (offset %zu, "
                     "%zu bytes): pass the base address", what, ptr, hsad_mem_kind_name(e.kind),
                     (void *)e.base, (size_t)((uintptr_t)ptr - e.base), e.req_size);
  if (e.kind != HSAD_MEM_STREAM)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: %p is %s memory of %zu bytes, not a "
                     "stream-ordered block: use hsad_mem_free", what, ptr,
                     hsad_mem_kind_name(e.kind), e.req_size);
  hsad_mem_pool_t *pool = e.spool;
  pthread_mutex_lock(&pool->lock);
  size_t i = 0;
  while (i < pool->n && pool->blocks[i].ptr != (uintptr_t)ptr) i++;
  if (i == pool->n || pool->blocks[i].cached) { /* a racing free took it */
    pthread_mutex_unlock(&pool->lock);
    return hsad_fail(HSAD_ERR_FREED, "%s: %p was already freed (stream-ordered memory of %zu "
                     "bytes at %p)", what, ptr, (size_t)e.size, ptr);
  }
  /* the free point: the queue's timeline where it stands, with no packet of its own (its
   * last epoch, or the next one); a queue that cannot be read so (another vendor's, faulted,
   * capturing) gets an ordering barrier, as hsad_queue_barrier answers for it */
  hsad_submit_point_t pt;
  if (hsad_submit_point(queue, &pt)) {
    hsad_completion_t fp;
    if ((s = hsad_queue_barrier(queue, NULL, 0, deadline_ns, &fp))) {
      pthread_mutex_unlock(&pool->lock);
      return s;
    }
    pt = (hsad_submit_point_t){.completion = fp, .ordered = true};
    pool->st.packets++;
  }
  mem_registry_set_freed(e.base, true, e.req_size); /* stays registered while cached */
  sp_block_t *b = &pool->blocks[i];
  b->cached = true;
  b->free_point = pt.completion;
  b->free_end = pt.end;
  b->pending = pt.pending;
  b->ordered = pt.ordered;
  b->free_seq = ++pool->seq;
  pool->st.used_bytes -= b->bytes;
  pool->st.used_blocks--;
  pool->st.cached_bytes += b->bytes;
  pool->st.cached_blocks++;
  sp_trim(pool, pool->st.release_threshold, b->ptr); /* not the block just freed */
  pthread_mutex_unlock(&pool->lock);
  return HSAD_OK;
}

hsad_status_t hsad_mem_pool_set_release_threshold(hsad_mem_pool_t *pool, uint64_t bytes) {
  hsad_status_t s = sp_ready(pool, "hsad_mem_pool_set_release_threshold");
  if (s) return s;
  pthread_mutex_lock(&pool->lock);
  pool->st.release_threshold = bytes;
  sp_trim(pool, bytes, 0);
  pthread_mutex_unlock(&pool->lock);
  return HSAD_OK;
}

hsad_status_t hsad_mem_pool_trim(hsad_mem_pool_t *pool, uint64_t keep_bytes,
                                 uint64_t *out_released) {
  hsad_status_t s = sp_ready(pool, "hsad_mem_pool_trim");
  if (s) return s;
  pthread_mutex_lock(&pool->lock);
  uint64_t r = sp_trim(pool, keep_bytes, 0);
  pthread_mutex_unlock(&pool->lock);
  if (out_released) *out_released = r;
  return HSAD_OK;
}

hsad_status_t hsad_mem_pool_stats(hsad_mem_pool_t *pool, hsad_mem_pool_stats_t *out_stats) {
  if (!pool || !out_stats)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_mem_pool_stats: %s is NULL",
                     !pool ? "pool" : "out_stats");
  pthread_mutex_lock(&pool->lock);
  *out_stats = pool->st;
  pthread_mutex_unlock(&pool->lock);
  return HSAD_OK;
}
