/* nv_pool.c - pinned host pools of the NVIDIA backend: hsad_host_pool_* (memory/hsad_memory.h)
 * in a build without AMD (make BACKENDS=nvidia), through the backend table.
 *
 * One pool per NUMA node (the device's node from sysfs; node -1 when unknown), created on first
 * use, owned by the backend until the runtime closes. Blocks are powers of two from 4 KiB to
 * 256 MiB (HSAD_HOST_POOL_MIN_CLASS .. MAX_CLASS), each its own anonymous mapping bound to the
 * node (mbind MPOL_BIND: the pages land there when cuMemHostRegister faults them in) and
 * registered with the driver (cuMemHostRegister PORTABLE | DEVICEMAP: pinned for every context,
 * mapped for the GPU at the same address under unified addressing). This is numa_alloc_onnode's
 * recipe without linking libnuma. Larger requests get a block of their own (page-rounded),
 * released on free. Freed blocks are cached per class while the cache stays within
 * max_cached_bytes (default HSAD_HOST_POOL_DEFAULT_MAX_CACHED), else released (a trim).
 *
 * A hit (a cached block of the class) costs the pool's lock and a list pop: no system call and
 * no driver call. The lock is one atomic exchange to take and a release store to give back
 * (pthread_mutex_lock + unlock cost 21.6 ns a pair on the H200's host, the exchange and store
 * 9.8 ns, and an alloc + free takes the lock twice); nothing slow runs under it (making and
 * releasing blocks happen outside), and a waiter spins briefly, then yields. Blocks are found on free through an open-addressing table keyed by address
 * (HSAD_HOST_POOL_MAX_BLOCKS blocks tracked, twice as many slots, linear probing with
 * backward-shift deletion). Registration uses the context of the device the pool was created
 * for; a block registered in a context that was reset since (a lost device) is only unmapped. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "memory/hsad_memory.h"
#include "nvidia/nv_internal.h"

#define NV_POOL_SLOTS (2 * HSAD_HOST_POOL_MAX_BLOCKS)
#define NV_POOL_MAX_NODES 64
#define NV_MPOL_BIND 2 /* linux/mempolicy.h */

typedef struct nv_block {
  void *ptr;
  size_t bytes;      /* mapped and registered bytes (the class, or the oversize block's) */
  int cls;           /* 0..HSAD_HOST_POOL_CLASSES-1, -1 oversize */
  bool cached;
  uint64_t generation;
  struct nv_block *next; /* the class's cache list */
} nv_block_t;

struct hsad_host_pool {
  const hsad_backend_ops_t *ops; /* hsad_object_head_t */
  uint64_t uid;
  int32_t node;
  nv_dev_t *dev;
  _Atomic uint32_t lock; /* pool_lock / pool_unlock */
  nv_block_t *cache[HSAD_HOST_POOL_CLASSES];
  nv_block_t *slot[NV_POOL_SLOTS];
  uint32_t tracked;
  hsad_host_pool_stats_t st;
};

static pthread_mutex_t nv_pools_lock = PTHREAD_MUTEX_INITIALIZER;

static inline void pool_lock(const hsad_host_pool_t *cp) {
  hsad_host_pool_t *p = (hsad_host_pool_t *)cp;
  for (uint32_t n = 0; atomic_exchange_explicit(&p->lock, 1, memory_order_acquire);)
    while (atomic_load_explicit(&p->lock, memory_order_relaxed)) {
      if (++n < 128) __builtin_ia32_pause();
      else sched_yield(); /* the holder was preempted: let it run */
    }
}
static inline void pool_unlock(const hsad_host_pool_t *cp) {
  atomic_store_explicit(&((hsad_host_pool_t *)cp)->lock, 0, memory_order_release);
}
static hsad_host_pool_t *nv_pools[NV_MAX_DEVICES + 1]; /* one per distinct node */
static uint32_t nv_pool_count;

static uint32_t slot_of(const void *p) {
  uint64_t k = (uint64_t)(uintptr_t)p >> 12;
  return (uint32_t)((k * 0x9E3779B97F4A7C15ull) >> 40) % NV_POOL_SLOTS;
}

/* The slot holding ptr's block, or -1. (lock held) */
static int tab_find(const hsad_host_pool_t *p, const void *ptr) {
  for (uint32_t i = slot_of(ptr), n = 0; n < NV_POOL_SLOTS; i = (i + 1) % NV_POOL_SLOTS, n++) {
    if (!p->slot[i]) return -1;
    if (p->slot[i]->ptr == ptr) return (int)i;
  }
  return -1;
}

static void tab_add(hsad_host_pool_t *p, nv_block_t *b) {
  uint32_t i = slot_of(b->ptr);
  while (p->slot[i]) i = (i + 1) % NV_POOL_SLOTS;
  p->slot[i] = b;
  p->tracked++;
}

/* Removes slot i, moving later entries of its run back (no tombstones). */
static void tab_del(hsad_host_pool_t *p, uint32_t i) {
  p->slot[i] = NULL;
  p->tracked--;
  for (uint32_t j = (i + 1) % NV_POOL_SLOTS; p->slot[j]; j = (j + 1) % NV_POOL_SLOTS) {
    uint32_t h = slot_of(p->slot[j]->ptr);
    /* j's entry may move to i when i lies cyclically in [h, j) */
    bool move = i <= j ? (h <= i || h > j) : (h <= i && h > j);
    if (move) {
      p->slot[i] = p->slot[j];
      p->slot[j] = NULL;
      i = j;
    }
  }
}

_Static_assert(HSAD_HOST_POOL_MIN_CLASS == 4096, "class_of: classes start at 2^12");
static int class_of(size_t size) {
  if (size <= HSAD_HOST_POOL_MIN_CLASS) return 0;
  int k = 64 - __builtin_clzll((unsigned long long)size - 1) - 12; /* ceil(log2(size)) - 12 */
  return k < HSAD_HOST_POOL_CLASSES ? k : -1;
}

/* Unregisters and unmaps a block's memory and frees its record. */
static void block_release(hsad_host_pool_t *p, nv_block_t *b) {
  if (atomic_load_explicit(&p->dev->generation, memory_order_acquire) == b->generation &&
      nv_ctx_enter(p->dev) == HSAD_OK)
    nv_cu.mem_host_unregister(b->ptr);
  munmap(b->ptr, b->bytes);
  free(b);
}

static hsad_status_t pool_full(const hsad_host_pool_t *p) {
  return hsad_fail(HSAD_ERR_RESOURCE_EXHAUSTED, "hsad_host_pool_alloc: node %d's pool tracks "
                   "%u blocks already (HSAD_HOST_POOL_MAX_BLOCKS); free or trim some", p->node,
                   HSAD_HOST_POOL_MAX_BLOCKS);
}

/* A new block of `bytes` on the pool's node, registered with the driver (lock not held: the
 * caller adds it to the table). */
static hsad_status_t block_make(hsad_host_pool_t *p, size_t bytes, int cls, nv_block_t **out) {
  hsad_status_t s = nv_ctx_enter(p->dev);
  if (s) return s;
  nv_block_t *b = calloc(1, sizeof *b);
  if (!b) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_host_pool_alloc: block record");
  void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    free(b);
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_host_pool_alloc: mmap of %zu bytes: %s", bytes,
                     strerror(errno));
  }
  if (p->node >= 0 && p->node < NV_POOL_MAX_NODES) {
    unsigned long mask = 1ul << p->node;
    /* best effort: a kernel without NUMA support refuses it and the pages go where touched */
    (void)syscall(SYS_mbind, m, bytes, NV_MPOL_BIND, &mask, (unsigned long)NV_POOL_MAX_NODES + 1,
                  0ul);
  }
  nv_result_t r = nv_cu.mem_host_register(m, bytes, NV_MEMHOSTREGISTER_PORTABLE |
                                                        NV_MEMHOSTREGISTER_DEVICEMAP);
  if (r != NV_SUCCESS) {
    munmap(m, bytes);
    free(b);
    if (r == NV_ERROR_OUT_OF_MEMORY)
      return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_host_pool_alloc: cuMemHostRegister of %zu "
                       "bytes on node %d: out of memory", bytes, p->node);
    return nv_fail(p->dev, r, "hsad_host_pool_alloc: cuMemHostRegister of %zu bytes on node %d",
                   bytes, p->node);
  }
  *b = (nv_block_t){.ptr = m, .bytes = bytes, .cls = cls,
                    .generation = atomic_load_explicit(&p->dev->generation, memory_order_acquire)};
  *out = b;
  return HSAD_OK;
}

/* Takes cached blocks out, largest class first, while more than keep bytes are cached; they
 * are chained on *gone for block_release after the lock. (lock held) */
static uint64_t trim_locked(hsad_host_pool_t *p, uint64_t keep, nv_block_t **gone) {
  uint64_t released = 0;
  for (int k = HSAD_HOST_POOL_CLASSES - 1; k >= 0 && p->st.bytes_cached > keep; k--)
    while (p->cache[k] && p->st.bytes_cached > keep) {
      nv_block_t *b = p->cache[k];
      p->cache[k] = b->next;
      int i = tab_find(p, b->ptr);
      if (i >= 0) tab_del(p, (uint32_t)i);
      p->st.bytes_cached -= b->bytes;
      p->st.blocks_cached--;
      p->st.trims++;
      released += b->bytes;
      b->next = *gone;
      *gone = b;
    }
  return released;
}

static void release_all(hsad_host_pool_t *p, nv_block_t *b) {
  while (b) {
    nv_block_t *next = b->next;
    block_release(p, b);
    b = next;
  }
}

static hsad_host_pool_t *pool_make(nv_dev_t *dev, int32_t node) {
  hsad_host_pool_t *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->ops = &nv_backend_ops;
  p->uid = hsad_backend_next_uid();
  p->node = node;
  p->dev = dev;
  p->st.numa_node = node < 0 ? UINT32_MAX : (uint32_t)node;
  p->st.max_cached_bytes = HSAD_HOST_POOL_DEFAULT_MAX_CACHED;
  return p;
}

/* The pool of `node` (made with dev's context when new). */
static hsad_status_t pool_for(nv_dev_t *dev, int32_t node, hsad_host_pool_t **out) {
  pthread_mutex_lock(&nv_pools_lock);
  hsad_host_pool_t *p = NULL;
  for (uint32_t i = 0; i < nv_pool_count && !p; i++)
    if (nv_pools[i]->node == node) p = nv_pools[i];
  if (!p && nv_pool_count < sizeof nv_pools / sizeof nv_pools[0] && (p = pool_make(dev, node)))
    nv_pools[nv_pool_count++] = p;
  pthread_mutex_unlock(&nv_pools_lock);
  if (!p)
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_host_pool_get: pool of node %d (%u pools)",
                     node, nv_pool_count);
  *out = p;
  return HSAD_OK;
}

hsad_status_t nv_host_pool_get(hsad_device_t *device, void *impl, hsad_host_pool_t **out) {
  (void)device;
  nv_dev_t *dev = impl;
  return pool_for(dev, dev->info.numa_node, out);
}

hsad_status_t nv_host_pool_get_node(uint32_t node, hsad_host_pool_t **out) {
  char path[64];
  snprintf(path, sizeof path, "/sys/devices/system/node/node%u", node);
  if (node >= NV_POOL_MAX_NODES || access(path, F_OK)) {
    char nodes[256] = "";
    size_t k = 0;
    for (uint32_t i = 0; i < NV_POOL_MAX_NODES && k + 8 < sizeof nodes; i++) {
      snprintf(path, sizeof path, "/sys/devices/system/node/node%u", i);
      if (!access(path, F_OK)) k += (size_t)snprintf(nodes + k, sizeof nodes - k, "%s%u",
                                                     k ? ", " : "", i);
    }
    return hsad_fail(HSAD_ERR_NUMA, "hsad_host_pool_get_node: no NUMA node %u (this machine has "
                     "%s)", node, k ? nodes : "none in /sys/devices/system/node");
  }
  if (!nv_dev_count)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_host_pool_get_node: no NVIDIA device to "
                     "register pinned memory with");
  return pool_for(&nv_devs[0], (int32_t)node, out);
}

hsad_status_t nv_host_pool_alloc(hsad_host_pool_t *p, size_t size, void **out) {
  /* one cause per message, worded as memory/host_pool.c's */
  static const char what[] = "hsad_host_pool_alloc";
  if (!p) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: pool is NULL", what);
  if (!out) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: out_ptr is NULL", what);
  if (!size) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: size is 0", what);
  int cls = class_of(size);
  size_t bytes;
  if (cls >= 0) {
    bytes = (size_t)HSAD_HOST_POOL_MIN_CLASS << cls;
  } else {
    size_t page = 4096;
    if (size > SIZE_MAX - page)
      return hsad_fail(HSAD_ERR_RANGE, "hsad_host_pool_alloc: %zu bytes round past size_t", size);
    bytes = (size + page - 1) & ~(page - 1);
  }
  pool_lock(p);
  nv_block_t *b = cls >= 0 ? p->cache[cls] : NULL;
  if (b) { /* a hit */
    p->cache[cls] = b->next;
    b->cached = false;
    p->st.bytes_cached -= bytes;
    p->st.blocks_cached--;
    p->st.hits++;
    p->st.bytes_in_use += bytes;
    p->st.blocks_in_use++;
    pool_unlock(p);
    *out = b->ptr;
    return HSAD_OK;
  }
  bool full = p->tracked >= HSAD_HOST_POOL_MAX_BLOCKS;
  pool_unlock(p);
  if (full) return pool_full(p);
  hsad_status_t s = block_make(p, bytes, cls, &b); /* outside the lock: mmap, mbind, register */
  if (s) return s;
  pool_lock(p);
  full = p->tracked >= HSAD_HOST_POOL_MAX_BLOCKS; /* others added blocks meanwhile */
  if (!full) {
    tab_add(p, b);
    p->st.misses++;
    p->st.bytes_in_use += bytes;
    p->st.blocks_in_use++;
  }
  pool_unlock(p);
  if (full) {
    block_release(p, b);
    return pool_full(p);
  }
  *out = b->ptr;
  return HSAD_OK;
}

hsad_status_t nv_host_pool_free(hsad_host_pool_t *p, void *ptr) {
  if (!p) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_host_pool_free: NULL pool");
  pool_lock(p);
  int i = tab_find(p, ptr);
  if (i < 0 || p->slot[i]->cached) {
    pool_unlock(p);
    if (i < 0)
      return hsad_fail(HSAD_ERR_NOT_ALLOCATED, "hsad_host_pool_free: no block of node %d's pool "
                       "starts at %p", p->node, ptr);
    return hsad_fail(HSAD_ERR_FREED, "hsad_host_pool_free: %p is cached in node %d's pool "
                     "already (freed twice)", ptr, p->node);
  }
  nv_block_t *b = p->slot[i];
  p->st.bytes_in_use -= b->bytes;
  p->st.blocks_in_use--;
  if (b->cls >= 0 && p->st.bytes_cached + b->bytes <= p->st.max_cached_bytes) {
    b->cached = true;
    b->next = p->cache[b->cls];
    p->cache[b->cls] = b;
    p->st.bytes_cached += b->bytes;
    p->st.blocks_cached++;
    b = NULL;
  } else {
    tab_del(p, (uint32_t)i);
    if (b->cls >= 0) p->st.trims++;
  }
  pool_unlock(p);
  if (b) block_release(p, b); /* outside the lock: the driver's unregister takes its time */
  return HSAD_OK;
}

/* hsad_mem_free of a pool block: HSAD_ERR_NOT_ALLOCATED (no message) when no pool has it. */
hsad_status_t nv_host_pool_free_any(void *ptr) {
  pthread_mutex_lock(&nv_pools_lock);
  uint32_t n = nv_pool_count;
  pthread_mutex_unlock(&nv_pools_lock);
  for (uint32_t k = 0; k < n; k++) {
    hsad_host_pool_t *p = nv_pools[k];
    pool_lock(p);
    int i = tab_find(p, ptr);
    pool_unlock(p);
    if (i >= 0) return nv_host_pool_free(p, ptr);
  }
  return HSAD_ERR_NOT_ALLOCATED;
}

hsad_status_t nv_host_pool_trim(hsad_host_pool_t *p, uint64_t keep, uint64_t *out_released) {
  if (!p) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_host_pool_trim: NULL pool");
  nv_block_t *gone = NULL;
  pool_lock(p);
  uint64_t r = trim_locked(p, keep, &gone);
  pool_unlock(p);
  release_all(p, gone);
  if (out_released) *out_released = r;
  return HSAD_OK;
}

hsad_status_t nv_host_pool_set_max_cached(hsad_host_pool_t *p, uint64_t max_cached) {
  if (!p) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_host_pool_set_max_cached: NULL pool");
  nv_block_t *gone = NULL;
  pool_lock(p);
  p->st.max_cached_bytes = max_cached;
  trim_locked(p, max_cached, &gone);
  pool_unlock(p);
  release_all(p, gone);
  return HSAD_OK;
}

hsad_status_t nv_host_pool_stats(const hsad_host_pool_t *p, hsad_host_pool_stats_t *out) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_host_pool_stats", {p, "pool"}, {out, "out_stats"});
  if (ns) return ns;
  pool_lock(p);
  *out = p->st;
  pool_unlock(p);
  return HSAD_OK;
}

/* The runtime's close: every block released (in use or cached), every pool freed. */
void nv_host_pools_close(void) {
  pthread_mutex_lock(&nv_pools_lock);
  for (uint32_t k = 0; k < nv_pool_count; k++) {
    hsad_host_pool_t *p = nv_pools[k];
    for (uint32_t i = 0; i < NV_POOL_SLOTS; i++)
      if (p->slot[i]) block_release(p, p->slot[i]);
    free(p);
  }
  nv_pool_count = 0;
  pthread_mutex_unlock(&nv_pools_lock);
}
