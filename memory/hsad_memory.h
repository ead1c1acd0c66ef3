/* hsad_memory.h - memory: device and host allocations, registration of caller memory, pinned
 * host pools per NUMA node, NUMA queries.
 *
 * Built on hsa-dispatch (hsad.h): every call takes devices of the open runtime. ROCr's memory
 * entry points (hsa_amd_memory_pool_allocate / _free, hsa_amd_agents_allow_access,
 * hsa_amd_memory_lock_to_pool / hsa_amd_memory_unlock) are resolved from the ROCr library
 * hsa-dispatch loaded.
 *
 * Allocations (hsad_mem_alloc, hsad_mem_register, and hsad_buffer_alloc of hsa-dispatch/hsad.h,
 * a zeroed HSAD_MEM_HOST_FINE hsad_mem_alloc: one allocator family, issue 21) are kept in a
 * process-wide registry: every
 * allocation knows its base, size, kind, owning device, NUMA node and the devices granted
 * access (hsad_mem_info answers for any address inside it). The registry is what lets the
 * library refuse bad input without touching memory: freeing twice, freeing an address it did
 * not hand out or an interior address, unregistering what was allocated. The last 1024 freed
 * ranges are remembered so that a second free says "already freed" rather than "unknown".
 *
 * Pinned host pools (hsad_host_pool_t): one per CPU agent, i.e. per NUMA node (KFD reports one
 * CPU node per NUMA node), shared by every GPU whose nearest CPU agent it is. Blocks come from
 * the CPU agent's fine-grained pool, are granted to every GPU of the runtime, and are recycled
 * through power-of-two size classes (4 KiB .. 256 MiB; larger requests are allocated and
 * released directly). Each class is a lock-free LIFO (Treiber stack of block indices with a
 * 32-bit ABA tag in one 64-bit word): a hit (alloc of a cached block) and a free that keeps the
 * block take no lock at all; only a miss (ROCr allocation) and a trim take the pool's mutex.
 * The cache is bounded (max_cached_bytes): a free that would exceed it releases the block to
 * ROCr instead (counted as a trim).
 *
 * Thread safety: every call is thread-safe. Registry lookups take a process-wide read lock;
 * alloc/free of non-pool memory take its write lock. Closing the runtime (last
 * hsad_runtime_close) destroys every ROCr allocation: free everything first; after a reopen the
 * registry and the pools start empty (entries of the earlier runtime are dropped, not freed).
 *
 * Rule sources: "ROCr" = ROCR-Runtime 5.2.x (hsa_ext_amd.h); NUMA queries are libnuma's
 * (numa(3): numa_move_pages with NULL nodes reports the node of each page).
 */
#ifndef HSAD_MEMORY_H
#define HSAD_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hsa-dispatch/hsad.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What an allocation is. */
typedef enum hsad_mem_kind {
  HSAD_MEM_DEVICE = 1,      /* the GPU's coarse-grained (device-local) global pool */
  HSAD_MEM_HOST_FINE = 2,   /* fine-grained system memory of the GPU's nearest CPU agent */
  HSAD_MEM_HOST_COARSE = 3, /* coarse-grained system memory of the GPU's nearest CPU agent */
  HSAD_MEM_REGISTERED = 4,  /* caller memory pinned in place (hsad_mem_register) */
  HSAD_MEM_POOLED = 5,      /* a block of a pinned host pool (hsad_host_pool_alloc) */
  HSAD_MEM_STREAM = 6,      /* device memory of a stream-ordered pool (hsad_mem_alloc_async) */
} hsad_mem_kind_t;

/* Static name of a kind ("device", "host-fine", "host-coarse", "registered", "pooled",
 * "stream-ordered"). */
const char *hsad_mem_kind_name(hsad_mem_kind_t kind);

enum { HSAD_MEM_MAX_ACCESS = 16 }; /* devices one call can grant access to */

/* Facts of one allocation, as recorded when it was made. */
typedef struct hsad_mem_info {
  void *base;               /* first byte the caller got (registered: the caller's pointer) */
  void *device_ptr;         /* address the GPUs use for base (registered: ROCr's agent pointer;
                               otherwise equal to base) */
  size_t size;              /* bytes requested (pool blocks: the request, not the class size) */
  size_t capacity;          /* bytes reserved (pool blocks: the class size; otherwise size) */
  hsad_mem_kind_t kind;
  hsad_device_t *device;    /* the device it was made for (pool blocks: NULL, the pool is shared) */
  int32_t numa_node;        /* host memory: the NUMA node (CPU agent's HSA_AGENT_INFO_NODE) of
                               the pool it came from; registered memory: the node of its first
                               page; device memory: -1 */
  int32_t page_node;        /* host memory: the host NUMA node holding the first page now
                               (libnuma numa_move_pages query), -1 when not resident / device
                               memory */
  uint32_t access_mask;     /* bit i set: device index i may access it */
} hsad_mem_info_t;

/* Allocates `size` bytes of `kind` (DEVICE, HOST_FINE or HOST_COARSE) for `device`:
 *   DEVICE: from the device's coarse-grained global pool (hsa_amd_memory_pool_allocate);
 *           the device has access; `access` lists peer devices also granted access;
 *   HOST_FINE / HOST_COARSE: from the fine- / coarse-grained global pool of the CPU agent
 *           nearest the device (hsad_device_info_t.nearest_cpu, its NUMA node); the device and
 *           the `access` devices are granted access (hsa_amd_agents_allow_access).
 * The memory is not zeroed. Alignment: at least 4096 bytes. Free with hsad_mem_free.
 * access may be NULL when access_count is 0; duplicates and the device itself are allowed.
 * Errors (nothing allocated):
 *   HSAD_ERR_INVALID_ARGUMENT  NULL device/out_ptr, access NULL with access_count > 0, a kind
 *                              that is not one of the three, a device or access entry that is
 *                              not a device of the open runtime ("device 0x... is not a device
 *                              of the open hsa-dispatch runtime"), access_count above
 *                              HSAD_MEM_MAX_ACCESS, size 0;
 *   HSAD_ERR_RANGE             size plus the pool's allocation granule overflows size_t;
 *   HSAD_ERR_OUT_OF_MEMORY     size above the pool's size, or ROCr out of resources;
 *   HSAD_ERR_UNSUPPORTED       the device (or its nearest CPU) has no such pool;
 *   HSAD_ERR_CLOSED, HSAD_ERR_HSA. Thread-safe. */
hsad_status_t hsad_mem_alloc(hsad_device_t *device, hsad_mem_kind_t kind, size_t size,
                             hsad_device_t *const *access, uint32_t access_count,
                             void **out_ptr);

/* Frees what hsad_mem_alloc, hsad_buffer_alloc or hsad_host_pool_alloc returned (pool blocks go
 * back to their pool); hsad_buffer_free is the same call under its own name. NULL is a no-op.
 * Nothing reaches ROCr unless ptr is a live allocation's base. Errors (nothing freed, nothing
 * changed; the message names ptr):
 *   HSAD_ERR_FREED          ptr was freed already (one of the last 1024 frees, or a pool block
 *                           now cached);
 *   HSAD_ERR_NOT_ALLOCATED  ptr is no allocation's base: unknown to the library, or inside an
 *                           allocation (the message gives its base and offset);
 *   HSAD_ERR_INVALID_ARGUMENT  ptr is registered caller memory (use hsad_mem_unregister);
 *   HSAD_ERR_IN_USE         a synchronous copy or fill that timed out still uses it (the
 *                           message names it; hsad_mem_wait_pending);
 *   HSAD_ERR_HSA. Thread-safe. */
hsad_status_t hsad_mem_free(void *ptr);

/* Pins `size` bytes of caller memory at `ptr` (any alignment; pageable memory from malloc,
 * mmap, the stack of a live thread) for `device` and the `access` devices
 * (hsa_amd_memory_lock_to_pool with the fine-grained pool of the device's nearest CPU agent),
 * and records it like an allocation (kind REGISTERED). *out_device_ptr (may be NULL) gets the
 * address the GPUs use. The caller keeps ownership of the memory and must not free it before
 * hsad_mem_unregister. Errors: as hsad_mem_alloc for device/access/size, HSAD_ERR_RANGE
 * (ptr + size wraps), HSAD_ERR_OVERLAP (the range overlaps an allocation or registration the
 * library holds: the message names it), HSAD_ERR_HSA (ROCr refused to pin). Thread-safe. */
hsad_status_t hsad_mem_register(hsad_device_t *device, void *ptr, size_t size,
                                hsad_device_t *const *access, uint32_t access_count,
                                void **out_device_ptr);

/* Unpins memory hsad_mem_register pinned (hsa_amd_memory_unlock); ptr must be the registered
 * base. Errors: HSAD_ERR_FREED (unregistered already), HSAD_ERR_NOT_ALLOCATED (not a
 * registered base), HSAD_ERR_INVALID_ARGUMENT (NULL, or an allocation: use hsad_mem_free),
 * HSAD_ERR_IN_USE (as hsad_mem_free), HSAD_ERR_HSA. Thread-safe. */
hsad_status_t hsad_mem_unregister(void *ptr);

/* Facts of the allocation, registration or pool block containing `ptr` (any address inside it;
 * hsad_buffer_alloc memory reads as kind HSAD_MEM_HOST_FINE, access_mask its device's bit).
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL), HSAD_ERR_FREED (inside a range freed recently),
 * HSAD_ERR_NOT_ALLOCATED (no allocation holds it: e.g. pageable malloc memory). Thread-safe. */
hsad_status_t hsad_mem_info(const void *ptr, hsad_mem_info_t *out_info);

#ifndef HSAD_NO_AMD /* the AMD backend only: the NVIDIA-only build has no hsad_mem_grant */
/* Grants `device` access to the whole allocation holding `ptr` (any address inside it), after
 * the fact: peer access that hsad_mem_alloc's `access` list did not give (CUDA:
 * cuMemSetAccess / cudaDeviceEnablePeerAccess; ROCr: hsa_amd_agents_allow_access). ROCr maps
 * an allocation to exactly the agents of the last call, so the call passes every device
 * granted so far plus `device` (ROCr 5.2.3 MemoryRegion::AllowAccess), on the allocation's base
 * (ROCr finds allocations by base only). Afterwards hsad_mem_info's access_mask has the device's
 * bit, copies whose blit runs on it are no longer HSAD_ERR_NO_ACCESS, and its kernels may read
 * and write the memory. Idempotent: a device granted already (its own device memory, a host
 * pool block, which every GPU may reach) returns HSAD_OK with no ROCr call. Access cannot be
 * taken back (free the allocation). Kinds: device, host-fine, host-coarse, stream-ordered
 * blocks (the grant lasts while the block is allocated from ROCr, across reuse).
 * Errors (nothing changed):
 *   HSAD_ERR_INVALID_ARGUMENT  ptr NULL ("hsad_mem_grant: ptr is NULL"), device NULL or not a
 *                              device of the open runtime;
 *   HSAD_ERR_NOT_ALLOCATED     "hsad_mem_grant: 0x... is no allocation of the library
 *                              (hsad_mem_alloc, hsad_mem_alloc_async, hsad_host_pool_alloc)";
 *   HSAD_ERR_FREED             ptr lies in memory freed recently (or a cached pool block): the
 *                              message gives the freed range;
 *   HSAD_ERR_UNSUPPORTED       registered memory (ROCr takes the agents of locked memory at
 *                              lock time only: unregister, register again with the device);
 *   HSAD_ERR_HSA               ROCr refused (the message names the call, kind, base, size).
 * Thread-safe (grants are serialised by one mutex; not concurrent with freeing the same
 * allocation). */
hsad_status_t hsad_mem_grant(void *ptr, hsad_device_t *device);
#endif

/* ---- NUMA (libnuma) ---------------------------------------------------------------------- */

/* Host NUMA nodes configured (numa_num_configured_nodes; 1 without NUMA support). */
uint32_t hsad_numa_node_count(void);
/* Host NUMA node of the CPU the calling thread runs on now (numa_node_of_cpu(sched_getcpu())),
 * 0 without NUMA support. */
uint32_t hsad_numa_current_node(void);
/* Host NUMA node holding the page of `ptr` (numa_move_pages with NULL nodes: a query, nothing
 * moves). Errors: HSAD_ERR_INVALID_ARGUMENT (NULL), HSAD_ERR_NUMA (the page is not resident,
 * or the query failed: the message has the errno). */
hsad_status_t hsad_numa_page_node(const void *ptr, int32_t *out_node);

/* ---- pinned host pools ------------------------------------------------------------------- */

typedef struct hsad_host_pool hsad_host_pool_t;

enum {
  HSAD_HOST_POOL_MIN_CLASS = 4096,          /* bytes of the smallest size class */
  HSAD_HOST_POOL_CLASSES = 17,              /* 4 KiB .. 256 MiB, powers of two */
  HSAD_HOST_POOL_MAX_BLOCKS = 4096,         /* blocks (in use + cached) one pool tracks */
};
/* Largest pooled block: larger requests bypass the cache. */
#define HSAD_HOST_POOL_MAX_CLASS ((size_t)HSAD_HOST_POOL_MIN_CLASS << (HSAD_HOST_POOL_CLASSES - 1))
/* Default bound of the cached bytes of one pool. */
#define HSAD_HOST_POOL_DEFAULT_MAX_CACHED ((uint64_t)512 << 20)

/* Counters of one pool. Every field is exact once no call on the pool is in progress. */
typedef struct hsad_host_pool_stats {
  uint32_t numa_node;       /* the CPU agent's node */
  uint64_t bytes_in_use;    /* class bytes of blocks handed out and not freed */
  uint64_t blocks_in_use;
  uint64_t bytes_cached;    /* class bytes of freed blocks kept for reuse */
  uint64_t blocks_cached;
  uint64_t hits;            /* allocations served from the cache */
  uint64_t misses;          /* allocations that went to ROCr */
  uint64_t trims;           /* blocks released to ROCr from the cache or instead of caching
                               them (cache full); oversize blocks released on free are not
                               counted */
  uint64_t max_cached_bytes;
} hsad_host_pool_stats_t;

/* The pool of the NUMA node nearest `device` (created on first use, shared by every device
 * with the same nearest CPU agent; owned by the library, valid until the runtime closes).
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL, foreign device), HSAD_ERR_UNSUPPORTED (no nearest
 * CPU agent with a fine-grained pool), HSAD_ERR_CLOSED, HSAD_ERR_OUT_OF_MEMORY. Thread-safe. */
hsad_status_t hsad_host_pool_get(hsad_device_t *device, hsad_host_pool_t **out_pool);

/* The pool of the CPU agent on NUMA node `numa_node` (HSA_AGENT_INFO_NODE). Errors:
 * HSAD_ERR_NUMA (no CPU agent on that node: the message lists the nodes), others as above. */
hsad_status_t hsad_host_pool_get_node(hsad_runtime_t *runtime, uint32_t numa_node,
                                      hsad_host_pool_t **out_pool);

/* A block of at least `size` bytes (the next power of two >= 4096), pinned, accessible by every
 * GPU of the runtime, page-aligned, contents undefined. Hit: pops the class's lock-free stack
 * (no lock, no system call). Miss: allocates from ROCr under the pool's mutex, grants access,
 * and places it (the first page is touched on the pool's node). Free with hsad_host_pool_free
 * (or hsad_mem_free). Errors: HSAD_ERR_INVALID_ARGUMENT (NULL, size 0), HSAD_ERR_RANGE (size
 * rounds past size_t), HSAD_ERR_RESOURCE_EXHAUSTED (HSAD_HOST_POOL_MAX_BLOCKS blocks tracked),
 * HSAD_ERR_OUT_OF_MEMORY, HSAD_ERR_CLOSED, HSAD_ERR_HSA. Thread-safe. */
hsad_status_t hsad_host_pool_alloc(hsad_host_pool_t *pool, size_t size, void **out_ptr);

/* Returns a block to its pool: cached when the cache stays within max_cached_bytes, else
 * released to ROCr (a trim). Errors (nothing changed): HSAD_ERR_INVALID_ARGUMENT (NULL pool),
 * HSAD_ERR_FREED (the block is cached: freed twice), HSAD_ERR_NOT_ALLOCATED (no block of this
 * pool starts at ptr), HSAD_ERR_IN_USE (as hsad_mem_free); while a timed-out synchronous copy
 * or fill is pending, the free also checks it under a mutex. Thread-safe; otherwise a free
 * that caches takes no lock. */
hsad_status_t hsad_host_pool_free(hsad_host_pool_t *pool, void *ptr);

/* Releases cached blocks to ROCr, largest class first, until at most keep_bytes stay cached.
 * *out_released_bytes (may be NULL): class bytes released. Thread-safe (takes the pool's mutex;
 * allocations and frees go on meanwhile). */
hsad_status_t hsad_host_pool_trim(hsad_host_pool_t *pool, uint64_t keep_bytes,
                                  uint64_t *out_released_bytes);

/* Sets the bound of cached bytes (trims down to it at once). Thread-safe. */
hsad_status_t hsad_host_pool_set_max_cached(hsad_host_pool_t *pool, uint64_t max_cached_bytes);

/* Counters (see hsad_host_pool_stats_t). Errors: HSAD_ERR_INVALID_ARGUMENT. Thread-safe. */
hsad_status_t hsad_host_pool_stats(const hsad_host_pool_t *pool, hsad_host_pool_stats_t *out_stats);

/* ---- stream-ordered device allocation -------------------------------------------------------
 *
 * As cudaMallocAsync / cudaFreeAsync with a memory pool (CUDA runtime API, "Stream Ordered
 * Memory Allocator"; HIP's hipMallocAsync): device memory is allocated and freed in the order
 * of a queue's completion timeline (hsad_queue.h, "Timeline"), so a runtime can allocate and
 * free per step without a device synchronisation.
 *
 * hsad_mem_free_async(queue, ptr) records the block's "free point": the point of the queue's
 * completion timeline covering every packet submitted on it so far, named without a packet of
 * its own (hsad_submit.h, hsad_submit_point): the queue's last epoch when its last packet
 * carries one (a dispatch or barrier asked for a completion, hsad_queue_flush), otherwise the
 * queue's NEXT epoch, "pending" until someone issues it (any later completion asked for on the
 * queue: the first epoch packet after the free covers it, AQL's BARRIER bit). The block is
 * cached in its pool (never returned to ROCr while its free point may be pending). A later
 * hsad_mem_alloc_async(pool, q, bytes) of the same size class takes a cached block, in this
 * order of preference:
 *   1. one whose free point was reached (any queue): nothing can use it any more;
 *   2. one freed on q itself: stream order. Nothing is submitted when a barrier packet (no work
 *      of its own) lies between the free and q's next packet (the free named a barrier's epoch,
 *      or one came since): every later packet, HSAD_LAUNCH_NO_BARRIER ones too, starts only
 *      after the free point. Otherwise (the free followed a dispatch) one barrier-AND without
 *      an epoch is submitted on q first, since a NO_BARRIER dispatch could overlap that last
 *      dispatch; the next reuses of blocks freed before it submit nothing;
 *   3. one freed on another queue whose free point is pending: the free point is issued when
 *      nobody did (one barrier-AND epoch packet on the freeing queue) and a barrier on q waiting
 *      for it is submitted (hsad_queue_barrier; CUDA's
 *      cudaMemPoolReuseAllowInternalDependencies), then the block is reused;
 *   4. otherwise a new block from the device's coarse-grained pool (hsa_amd_memory_pool_allocate).
 * So an alloc + free pair on one queue submits no packet at all when the queue's last packet
 * carries an epoch (or a barrier came after the last dispatch); the pool's counter `packets`
 * counts every packet its calls submitted. A queue whose timeline cannot be read so (another
 * vendor's, a capturing one) gets one barrier-AND per free, as before; a faulted queue answers
 * its sticky error. The host never waits in either call (except for ring room, bounded by
 * deadline_ns).
 * The caller's part of the contract (as CUDA's): work on other queues that uses the block must
 * be ordered before the free (e.g. hsad_queue_barrier on the freeing queue), and the pointer is
 * used only by work ordered after the allocation on its queue (or after a completion of it).
 * Destroy a pool before the queues its blocks were freed on (free points name them).
 *
 * Size classes: powers of two from 4096 bytes; a request takes a block of its class, rounded
 * up (hsad_mem_info: size = the request, capacity = the class). Blocks are registered (kind
 * HSAD_MEM_STREAM) while allocated: copies check them like device memory, hsad_mem_info knows
 * them, hsad_mem_free refuses them (use hsad_mem_free_async); a cached block answers
 * HSAD_ERR_FREED to every call.
 *
 * Release threshold (cudaMemPoolAttrReleaseThreshold): the cached bytes a pool keeps. After
 * every hsad_mem_free_async, cached blocks whose free point was reached are returned to ROCr,
 * oldest free first, while the cached bytes exceed the threshold (blocks still pending stay,
 * and go at a later free or hsad_mem_pool_trim; a pending epoch is reached once issued and
 * completed, e.g. after hsad_queue_wait_idle). The block a free just cached is never released
 * by that free's own pass, reached or not: it stays at least until the next free, threshold
 * change or trim (as CUDA keeps a freed block until a synchronisation). Default 0, as CUDA's: only blocks still
 * pending at the time of a free are kept, which is what the reuse of rules 2 and 3 needs.
 *
 * Thread safety: every call is thread-safe (one mutex per pool; the queue calls are
 * multi-producer safe). A pool belongs to its runtime: after hsad_runtime_close every call on it
 * answers HSAD_ERR_CLOSED (destroy it before closing). */

typedef struct hsad_mem_pool hsad_mem_pool_t;

/* Counters of a stream-ordered pool; exact once no call on the pool is in progress. Bytes are
 * class bytes. */
typedef struct hsad_mem_pool_stats {
  uint64_t reserved_bytes;      /* held from ROCr: used + cached */
  uint64_t used_bytes;          /* handed out by hsad_mem_alloc_async and not freed */
  uint64_t cached_bytes;        /* freed (hsad_mem_free_async), kept for reuse */
  uint64_t reserved_high;       /* high-water mark of reserved_bytes (cudaMemPoolAttrReservedMemHigh) */
  uint64_t used_high;           /* high-water mark of used_bytes (cudaMemPoolAttrUsedMemHigh) */
  uint64_t used_blocks, cached_blocks;
  uint64_t allocs;              /* successful hsad_mem_alloc_async calls */
  uint64_t reuse_reached;       /* allocations served by rule 1 (free point reached) */
  uint64_t reuse_same_queue;    /* rule 2 (freed on the allocating queue, pending) */
  uint64_t reuse_cross_queue;   /* rule 3 (a barrier on the allocating queue was submitted) */
  uint64_t rocr_allocs;         /* rule 4: blocks allocated from ROCr */
  uint64_t rocr_releases;       /* blocks returned to ROCr (threshold, trim) */
  uint64_t packets;             /* barrier packets the pool's calls submitted (see above) */
  uint64_t release_threshold;
} hsad_mem_pool_stats_t;

/* Creates a stream-ordered pool of `device`'s coarse-grained memory (empty: blocks are
 * allocated on demand), release threshold 0. Errors: HSAD_ERR_INVALID_ARGUMENT (NULL
 * device/out_pool, a device not of the open runtime), HSAD_ERR_UNSUPPORTED (no coarse-grained
 * pool), HSAD_ERR_OUT_OF_MEMORY, HSAD_ERR_CLOSED. Thread-safe. */
hsad_status_t hsad_mem_pool_create(hsad_device_t *device, hsad_mem_pool_t **out_pool);

/* Destroys the pool: issues the free points still pending (one barrier-AND epoch packet on a
 * freeing queue that issued no epoch since) and waits (until deadline_ns) for every free
 * point of its cached blocks, then returns every block to ROCr. Errors (nothing changed, the pool stays usable):
 * HSAD_ERR_INVALID_ARGUMENT (NULL), HSAD_ERR_IN_USE (blocks still allocated: "N blocks (B
 * bytes) still allocated: free them with hsad_mem_free_async first"), HSAD_ERR_TIMEOUT (a free
 * point not reached by the deadline). After hsad_runtime_close: frees the host bookkeeping
 * only (ROCr's memory went with the runtime), HSAD_OK. Not concurrent with other calls on the
 * same pool. */
hsad_status_t hsad_mem_pool_destroy(hsad_mem_pool_t *pool, uint64_t deadline_ns);

/* Allocates `bytes` of device memory ordered on `queue` (rules 1-4 above): *out_ptr may be used
 * by work submitted on `queue` after this call (and by work ordered after that). deadline_ns
 * bounds the wait for ring room of the packets rules 2 and 3 may submit. Errors (nothing allocated, the pool as it
 * was): HSAD_ERR_INVALID_ARGUMENT (NULL pool/queue/out_ptr, bytes 0, a queue of another
 * runtime's device), HSAD_ERR_RANGE (bytes rounded up to a power of two overflows),
 * HSAD_ERR_OUT_OF_MEMORY (ROCr out of resources, or bytes above the device's pool),
 * HSAD_ERR_TIMEOUT / the queue's sticky error (rule 2's or 3's packets), HSAD_ERR_CLOSED,
 * HSAD_ERR_HSA. Thread-safe. */
hsad_status_t hsad_mem_alloc_async(hsad_mem_pool_t *pool, hsad_queue_t *queue, size_t bytes,
                                   uint64_t deadline_ns, void **out_ptr);

/* Frees a block hsad_mem_alloc_async returned, ordered on `queue`: the block may be reused
 * once everything submitted on `queue` before this call completed (the free point, named with
 * no packet of its own; a queue of another vendor or a capturing one gets one barrier-AND:
 * see above). Errors (nothing changed): HSAD_ERR_INVALID_ARGUMENT (NULL queue or
 * ptr, or ptr is not a stream-ordered block: "... is device memory of 4096 bytes, not a
 * stream-ordered block: use hsad_mem_free"), HSAD_ERR_FREED (freed already),
 * HSAD_ERR_NOT_ALLOCATED (unknown, or an interior address), HSAD_ERR_TIMEOUT / the queue's
 * sticky error (a faulted queue; the barrier could not be submitted), HSAD_ERR_CLOSED.
 * Thread-safe. */
hsad_status_t hsad_mem_free_async(hsad_queue_t *queue, void *ptr, uint64_t deadline_ns);

/* Sets the release threshold (bytes of cached blocks kept; see above) and releases at once the
 * reached blocks above it. Errors: HSAD_ERR_INVALID_ARGUMENT (NULL), HSAD_ERR_CLOSED. */
hsad_status_t hsad_mem_pool_set_release_threshold(hsad_mem_pool_t *pool, uint64_t bytes);

/* Returns cached blocks whose free point was reached to ROCr, oldest free first, until at most
 * keep_bytes stay cached (cudaMemPoolTrimTo); pending ones stay. *out_released (may be NULL):
 * class bytes released. Errors: HSAD_ERR_INVALID_ARGUMENT (NULL), HSAD_ERR_CLOSED. */
hsad_status_t hsad_mem_pool_trim(hsad_mem_pool_t *pool, uint64_t keep_bytes,
                                 uint64_t *out_released);

/* Counters (hsad_mem_pool_stats_t). Errors: HSAD_ERR_INVALID_ARGUMENT (NULL). Thread-safe. */
hsad_status_t hsad_mem_pool_stats(hsad_mem_pool_t *pool, hsad_mem_pool_stats_t *out_stats);

/* ---- copies and fills ---------------------------------------------------------------------
 *
 * Every copy is checked against the allocations it touches before anything is submitted; a
 * check that fails returns its error with nothing submitted, the destination untouched and
 * the pools as they were:
 *   HSAD_ERR_INVALID_ARGUMENT  NULL device/dst/src (size > 0), a foreign device, dep_count
 *                              above HSAD_COPY_MAX_DEPS, deps NULL with dep_count > 0, bad
 *                              options, both sides pageable (nothing for a GPU to copy);
 *   HSAD_ERR_RANGE             dst/src + size wraps, or runs past the end of the allocation it
 *                              starts in (the message gives the allocation and the excess);
 *   HSAD_ERR_OVERLAP           [dst, dst+size) and [src, src+size) overlap;
 *   HSAD_ERR_FREED             a side lies in memory freed (or a pool block cached);
 *   HSAD_ERR_NO_ACCESS         the GPU that runs the blit (ROCr: the source's GPU if the source
 *                              is device memory, else the destination's, else `device`) was not
 *                              granted the other side's allocation.
 * Memory a side may be in: anything hsad_mem_alloc / hsad_mem_register / hsad_host_pool_alloc
 * returned, memory ROCr knows from elsewhere (hsa_amd_pointer_info: allocated or locked), or
 * pageable host memory (anything else). A pageable side goes through a strategy chosen by size
 * (hsad_copy_options_t): STAGED (one pool block of the device's NUMA node: host memcpy and one
 * DMA), PIPELINED (pool blocks of chunk_size bytes: the host memcpy of one chunk overlaps the
 * DMA of the others) or PINNED (the user range pinned in place with
 * hsa_amd_memory_lock_to_pool, unpinned when the DMA completed). Staging blocks are returned
 * to the pool before the copy's completion is signalled.
 *
 * When a pageable SOURCE may be written again (the rule of CUDA's cudaMemcpyAsync and HIP's
 * hipMemcpyAsync for pageable memory: "the pageable buffer has been copied to staging memory"
 * when the call returns):
 *   - by default, as soon as the call returned, at every size and under every strategy: the
 *     whole source is copied into pinned staging blocks before the call returns (STAGED: one
 *     block; PIPELINED: a block per chunk, at most HSAD_COPY_MAX_BUFFERS chunks, each at least
 *     chunk_size bytes, the DMA of each chunk submitted as soon as it is staged so the DMAs
 *     overlap the host memcpy of the next ones). The size thresholds choose how (a size at or
 *     above pin_threshold is PIPELINED, never pinned in place), not when the source is free.
 *     Cost: the copy holds `size` bytes of pool blocks until its DMAs completed, and the call
 *     takes the host memcpy of the whole source (README, "Memory", measured figures);
 *   - with HSAD_COPY_SOURCE_DEFERRED in options->flags (opt-in, zero-copy): the source is read
 *     by the DMA after the call returned (PINNED in place from pin_threshold; a PIPELINED copy
 *     stages its later chunks on ROCr's event thread as buffers come back, chunk_buffers
 *     blocks). The caller must neither write nor free nor unregister the source until the
 *     copy's completion was reached (hsad_completion_done / _wait on out_completion; the signal
 *     forms: `completion` decremented); a write before that may or may not reach dst.
 * The synchronous forms (hsad_memcpy) return once the bytes are at dst, so their source is free
 * then under either rule; they use the deferred strategies (no full staging). A pageable
 * DESTINATION is written until the completion is reached under both rules.
 *
 * Refusals after the call returned: ROCr may refuse the DMA of a later chunk of a pipeline
 * (or a later 1 MiB piece of a fill). The copy then stops: nothing more is submitted, the
 * chunks in flight complete, the pools get their blocks back, and the completion is reached
 * as always (decremented once, so waiters and queues bridged to it go on), with the failure
 * kept for its waiter: hsad_mem_signal_result (signal forms) or hsad_mem_result (completion
 * forms) then returns HSAD_ERR_HSA, "<call>: hsa_amd_memory_async_copy refused chunk C of N
 * (L bytes at offset O): HSA status 0x.. (...); the copy stopped there: M of S bytes were not
 * copied" ("piece", "fill", "filled" for fills). The synchronous forms return that error
 * themselves. Every DMA is watched from before it is submitted (its handler is armed first),
 * so a refused handler (hsa_amd_signal_async_handler) never leaves a DMA in flight unwatched.
 */

/* How a pageable side is moved. */
typedef enum hsad_copy_strategy {
  HSAD_COPY_DIRECT = 0,     /* no pageable side: one hsa_amd_memory_async_copy */
  HSAD_COPY_STAGED = 1,
  HSAD_COPY_PIPELINED = 2,
  HSAD_COPY_PINNED = 3,
} hsad_copy_strategy_t;

/* Static name: "direct", "staged", "pipelined", "pinned". */
const char *hsad_copy_strategy_name(hsad_copy_strategy_t strategy);

/* Options of copies with a pageable side; zero fields take the defaults below. */
typedef struct hsad_copy_options {
  size_t staging_max;       /* bytes: a pageable copy of at most this size is STAGED */
  size_t pin_threshold;     /* bytes: a pageable copy of at least this size is PINNED; between
                               the two it is PIPELINED (pin_threshold > staging_max) */
  size_t chunk_size;        /* bytes per pipeline chunk (a multiple of 4096) */
  uint32_t chunk_buffers;   /* staging blocks in flight, 2..8 */
  uint32_t force;           /* 0: by size; else an hsad_copy_strategy_t (benchmarks);
                               HSAD_COPY_PINNED with a pageable source of an asynchronous copy
                               needs HSAD_COPY_SOURCE_DEFERRED (else HSAD_ERR_INVALID_ARGUMENT) */
  uint32_t flags;           /* HSAD_COPY_SOURCE_DEFERRED or 0; other bits:
                               HSAD_ERR_INVALID_ARGUMENT */
} hsad_copy_options_t;

/* options->flags: the caller accepts that a pageable source is read after the asynchronous
 * call returned, until the copy's completion is reached (see "When a pageable SOURCE may be
 * written again" above); the copy then uses pin_threshold and chunk_buffers as given. */
#define HSAD_COPY_SOURCE_DEFERRED 1u

/* Defaults: the crossovers `hsad bench copy` measured (5 rounds, medians, a path "wins" a size
 * when it is 5% faster; README, "Measured") on kfd-emu gfx90a: staged is as fast as anything up
 * to 16 KiB, pinning in place wins from 64 KiB at every larger size. kfd-emu pins for free (no
 * page pinning cost), so on a real GPU pinning is dearer: re-run `hsad bench copy` there and
 * pass the thresholds it reports (CLR pins above 1 MiB; 64 KiB cost 15% on MI300A,
 * rocm-systems PR #11176). */
#define HSAD_COPY_DEFAULT_STAGING_MAX ((size_t)16 << 10)
#define HSAD_COPY_DEFAULT_PIN_THRESHOLD ((size_t)64 << 10)
#define HSAD_COPY_DEFAULT_CHUNK ((size_t)2 << 20)
#define HSAD_COPY_DEFAULT_BUFFERS 3u
enum { HSAD_COPY_MAX_DEPS = 64, HSAD_COPY_MAX_BUFFERS = 8 };

/* The strategy a copy of `size` bytes with a pageable side gets under `options` (NULL:
 * defaults): STAGED when size <= staging_max, PINNED when size >= pin_threshold, else
 * PIPELINED (or options->force). An asynchronous copy from a pageable source without
 * HSAD_COPY_SOURCE_DEFERRED replaces PINNED with PIPELINED (its out_strategy says so). */
hsad_copy_strategy_t hsad_copy_strategy_for(const hsad_copy_options_t *options, size_t size);

/* Asynchronous copy ordered after `deps` (completions of dispatches, barriers, copies or
 * graphs, on any queue of any device; empty and reached ones are satisfied), returning
 * *out_completion, a point on the timeline of the device's copy queue that is reached once the
 * bytes are at dst (staging blocks back in the pool, pinned ranges unpinned). Order work after
 * it with hsad_queue_barrier(queue, out_completion, 1, ...) or pass it to the next copy.
 * How it is done (see copy_async.c): the dependencies and the copy's own HSA completion
 * signal are bridged with hsad_queue_barrier_signals on a copy queue the library creates per
 * device (256 packets), so dispatch queues are never held by a copy. A zero-byte copy is one
 * barrier: it completes in order with its dependencies. deadline_ns bounds the wait for room
 * in the copy queue. Every check of hsad_memcpy_async_signals runs first (same codes and
 * messages, named "hsad_memcpy_async"): a refused copy submits nothing. Errors also:
 * HSAD_ERR_INVALID_ARGUMENT (out_completion NULL, deps NULL with dep_count > 0, dep_count above
 * HSAD_COPY_MAX_DEPS), those of hsad_queue_create / hsad_queue_barrier_signals (queue error,
 * HSAD_ERR_TIMEOUT: nothing submitted). Returns once a pageable source is staged whole (with
 * HSAD_COPY_SOURCE_DEFERRED: once the first chunk is staged or the range pinned). A copy that
 * stopped after the call returned (a later chunk ROCr refused: see "Refusals after the call
 * returned") tells its waiters: hsad_completion_wait / _wait_all / _wait_any on
 * *out_completion return its HSAD_ERR_HSA and message once it was reached (the copy queue's
 * result hook, hsad_submit.h), as does hsad_mem_result(out_completion); work that waits on it
 * on the device (a barrier, a graph's launch dependency) cannot be told and runs. Thread-safe. */
hsad_status_t hsad_memcpy_async(hsad_device_t *device, void *dst, const void *src, size_t size,
                                const hsad_completion_t *deps, uint32_t dep_count,
                                const hsad_copy_options_t *options, uint64_t deadline_ns,
                                hsad_completion_t *out_completion);

/* Asynchronous fill ordered after `deps`, as hsad_memcpy_async (checks and pattern as
 * hsad_memset_async_signals, messages named "hsad_memset_async"). Thread-safe. */
hsad_status_t hsad_memset_async(hsad_device_t *device, void *dst, uint32_t pattern,
                                uint32_t width, size_t count, const hsad_completion_t *deps,
                                uint32_t dep_count, uint64_t deadline_ns,
                                hsad_completion_t *out_completion);

#ifndef HSAD_NO_AMD /* the AMD backend only (memory/copy_rect.c): the NVIDIA backend has no
                        pitched copies yet */
/* ---- 2-D and 3-D (pitched) copies -----------------------------------------------------------
 *
 * As hipMemcpy2DAsync / hipMemcpy3DAsync (cudaMemcpy2DAsync / cudaMemcpy3DAsync): one box of
 * `width` bytes x `height` rows x `depth` slices. Units: width, pitches and slice pitches in
 * BYTES; height in rows; depth in slices. Row y of slice z of a side starts at
 * ptr + z * slice_pitch + y * pitch; to copy a sub-box of a larger array, point ptr at its first
 * byte (e.g. base + z0 * slice_pitch + y0 * pitch + x0 * element size). Legal geometry, each
 * side: pitch >= width (any value, any alignment: no multiple of 4 or of an element is needed);
 * when depth > 1, slice_pitch >= pitch * height (when depth is 1 the slice pitch is not read).
 * A side's footprint is its bytes from row 0 of slice 0 to the end of the last row:
 * (depth - 1) * slice_pitch + (height - 1) * pitch + width.
 *
 * How (memory/copy_rect.c): ROCr's SDMA rectangle copy, hsa_amd_memory_async_copy_rect (one
 * call), when ROCr 5.2.3 takes it: one side at least is device memory, both pointers and pitches
 * (and slice pitches when depth > 1) are multiples of 4 bytes, width/height/depth fit 32 bits,
 * and the GPU has an SDMA engine (ROCr's HSA_STATUS_ERROR_OUT_OF_RESOURCES without one is
 * remembered per device: asked once per runtime). Otherwise, when the box needs at least
 * HSAD_COPY_RECT_BLIT_MIN_DMAS row DMAs (below), one dispatch of the library's copy kernel
 * (kernels/copy_rect.cl, compiled with comgr for the GPU's processor on first use, about 0.2 s
 * once per process, and run on a queue of its own per device; any alignment); else, and where
 * the kernel cannot be had (no comgr), one hsa_amd_memory_async_copy per row (rows that lie back
 * to back on both sides, width == both pitches, are merged into one DMA per slice, or one for
 * the box when both slice pitches are width * height too). kfd-emu has no SDMA queues, so there
 * a box goes to the kernel (run from its OpenCL C source through POCL) or by rows. The GPU that
 * runs it is chosen as for hsad_memcpy_async (the source's GPU if the source is device memory,
 * else the destination's). The kernel waits for `deps` on its own queue and the completion is
 * reached after it completed: stream order as for every path (hsad_copy_rect_stats says which
 * path a box took).
 *
 * A pageable side (memory the GPU cannot reach: malloc'd, not registered) is staged: the box's
 * rows are packed back to back in pinned pool blocks of the device's NUMA node, so the
 * device side of each staging chunk is one piece (one DMA, one SDMA rectangle or one kernel
 * dispatch) instead of a DMA per row. Chunks: the whole box up to HSAD_COPY_DEFAULT_STAGING_MAX
 * bytes, else at most HSAD_COPY_MAX_BUFFERS chunks of at least HSAD_COPY_DEFAULT_CHUNK bytes
 * (whole slices, or row groups of one slice). The rule of hsad_memcpy_async without
 * HSAD_COPY_SOURCE_DEFERRED (these calls take no options: there is no deferred form): a
 * pageable SOURCE may be rewritten or freed as soon as the call returned (every chunk is packed
 * before it returns, each chunk's piece submitted as soon as it is packed); a pageable
 * DESTINATION is written (each chunk unpacked into its rows by ROCr's event thread as its piece
 * completes; bytes between and around the rows never) until the completion is reached, and
 * must not be read, written or freed before. The pool holds width * height * depth bytes until
 * then. Both sides pageable: HSAD_ERR_INVALID_ARGUMENT.
 *
 * Checks, in this order, before anything is submitted (a refused box submits nothing and
 * changes nothing); messages are exact ("<call>" is hsad_memcpy_2d_async or _3d_async):
 *   HSAD_ERR_INVALID_ARGUMENT  device NULL/foreign, out_completion NULL, deps NULL with
 *                              dep_count > 0, dep_count above HSAD_COPY_MAX_DEPS (as
 *                              hsad_memcpy_async); 3-D: "<call>: dst is NULL" (src, extent);
 *   (zero extent)              width, height or depth 0: no further check, nothing is copied,
 *                              and the completion is reached after the dependencies (as a
 *                              zero-byte hsad_memcpy_async; CUDA treats a zero extent as a no-op)
 *   HSAD_ERR_INVALID_ARGUMENT  "<call>: the destination pointer is NULL" (source);
 *                              "<call>: the destination pitch P is smaller than the width W
 *                              bytes (its rows would overlap)" (source: first checked after the
 *                              destination);
 *                              "<call>: the destination slice pitch S is smaller than pitch P x
 *                              height H = N bytes (its slices would overlap)" (depth > 1);
 *   HSAD_ERR_RANGE             "<call>: the destination pitch P x height H overflows size_t";
 *                              "<call>: the destination box (W x H x D bytes, pitch P, slice
 *                              pitch S) spans more than size_t"; a footprint that wraps the
 *                              address space or runs past the end of the allocation it starts
 *                              in (hsad_memcpy_async's messages, with the footprint's size);
 *   HSAD_ERR_FREED             a footprint starts in freed memory (hsad_memcpy_async's message);
 *   HSAD_ERR_INVALID_ARGUMENT  "<call>: the destination 0x... and the source 0x... are both
 *                              pageable host memory: nothing for a GPU to copy (copy the rows
 *                              with memcpy)";
 *   HSAD_ERR_OVERLAP           "<call>: destination row Y of slice Z (0x...) and source row Y'
 *                              of slice Z' (0x...) overlap": the first destination row sharing
 *                              a byte with a source row; boxes that interleave without sharing
 *                              a byte (e.g. two column blocks of one image) are legal (ROCr:
 *                              "src and dst rects must not overlap");
 *   HSAD_ERR_NO_ACCESS         the GPU that runs it was not granted one side (hsad_mem_grant).
 * After the checks: HSAD_ERR_HSA when ROCr refuses the rectangle copy with another status, or
 * the first row DMA (nothing in flight); HSAD_ERR_OUT_OF_MEMORY / HSAD_ERR_RESOURCE_EXHAUSTED
 * (staging blocks for a pageable side: nothing submitted); a later row refused stops the copy there: the rows in
 * flight finish, the completion is reached, and hsad_mem_result / hsad_completion_wait on it
 * return HSAD_ERR_HSA "<call>: hsa_amd_memory_async_copy refused row run K of N (W bytes at
 * destination 0x...): HSA status 0x.. (...); the copy stopped there: M of T bytes were not
 * copied". Dependencies, the completion and deadline_ns are as hsad_memcpy_async's (the copy
 * queue of `device`). Thread-safe. */

/* Row DMAs from which a box the SDMA rectangle copy does not take goes to the copy kernel
 * instead (one dispatch of kernels/copy_rect.cl): measured on kfd-emu (README, "Memory",
 * 2-D/3-D copies). The environment variable HSAD_RECT_BLIT_MIN_DMAS overrides it at each call
 * (a decimal count; 0: never the kernel). */
#define HSAD_COPY_RECT_BLIT_MIN_DMAS 4u

/* Boxes started by each path since the process started (every runtime generation): sdma
 * (hsa_amd_memory_async_copy_rect took it), rows (one DMA per run of rows), blit (the copy
 * kernel); a box with a pageable side counts once in staged and once per staging chunk in
 * the path that moved the chunk. Relaxed counters: exact once the calls returned. */
typedef struct hsad_copy_rect_stats {
  uint64_t sdma, rows, blit, staged;
} hsad_copy_rect_stats_t;

/* Reads the counters. Errors: HSAD_ERR_INVALID_ARGUMENT (NULL). Thread-safe. */
hsad_status_t hsad_copy_rect_stats(hsad_copy_rect_stats_t *out);

/* One side of a 3-D copy. */
typedef struct hsad_pitched_ptr {
  void *ptr;            /* first byte of the box on this side (row 0 of slice 0); the source's
                           is only read */
  size_t pitch;         /* bytes from the start of one row to the next (>= width) */
  size_t slice_pitch;   /* bytes from the start of one slice to the next (>= pitch * height
                           when depth > 1; not read when depth is 1) */
} hsad_pitched_ptr_t;

/* The box of a 3-D copy. */
typedef struct hsad_extent {
  size_t width;         /* bytes of each row */
  size_t height;        /* rows of each slice */
  size_t depth;         /* slices */
} hsad_extent_t;

/* 2-D copy: `height` rows of `width` bytes from src (rows src_pitch bytes apart) to dst (rows
 * dst_pitch bytes apart), after `deps`; *out_completion is reached once every byte is at dst.
 * As hipMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind, stream). See above for
 * the rules, the path and every error. */
hsad_status_t hsad_memcpy_2d_async(hsad_device_t *device, void *dst, size_t dst_pitch,
                                   const void *src, size_t src_pitch, size_t width,
                                   size_t height, const hsad_completion_t *deps,
                                   uint32_t dep_count, uint64_t deadline_ns,
                                   hsad_completion_t *out_completion);

/* 3-D copy of the box `extent` from src to dst (each side with its pitch and slice pitch), as
 * hipMemcpy3DAsync with pitched pointers whose positions are folded into ptr. dst, src and
 * extent are read during the call only. See above. */
hsad_status_t hsad_memcpy_3d_async(hsad_device_t *device, const hsad_pitched_ptr_t *dst,
                                   const hsad_pitched_ptr_t *src, const hsad_extent_t *extent,
                                   const hsad_completion_t *deps, uint32_t dep_count,
                                   uint64_t deadline_ns, hsad_completion_t *out_completion);
#endif

#ifndef HSAD_NO_AMD
/* Asynchronous copy on HSA signals (for callers that use ROCr signals themselves): starts
 * once every `deps` signal is 0 (ROCr's dep_signals rule), and decrements `completion` by one
 * when the bytes are at dst (after staging blocks went back and pinned ranges were unpinned).
 * `device`: the GPU whose NUMA node's pool stages pageable data (and that runs the blit when
 * neither side is device memory). Zero bytes: no check, completion decremented once the deps
 * are 0. *out_strategy (may be NULL): what moved it. Returns once a pageable source is staged
 * whole (with HSAD_COPY_SOURCE_DEFERRED: once the first chunk is staged, or the range pinned).
 * Errors: the checks above, HSAD_ERR_HSA (ROCr refused the first submission, or refused to arm
 * the handler that watches it: nothing is in flight, the message names the
 * call), HSAD_ERR_OUT_OF_MEMORY / HSAD_ERR_RESOURCE_EXHAUSTED (staging). Once `completion`
 * was decremented, hsad_mem_signal_result(completion) says whether every byte arrived (see
 * "Refusals after the call returned"). Thread-safe. */
hsad_status_t hsad_memcpy_async_signals(hsad_device_t *device, void *dst, const void *src,
                                        size_t size, const hsa_signal_t *deps, uint32_t dep_count,
                                        hsa_signal_t completion,
                                        const hsad_copy_options_t *options,
                                        hsad_copy_strategy_t *out_strategy);

/* Fills `count` elements of `width` bytes (1, 2 or 4) at dst with `pattern` (its low width
 * bytes, host byte order), on HSA signals as hsad_memcpy_async_signals. dst must be memory
 * the GPU reaches (not pageable: HSAD_ERR_INVALID_ARGUMENT); any byte alignment. Done by
 * hsa_amd_memory_async_copy from a pool block holding the pattern (at most 1 MiB, repeated).
 * Errors: as the copy checks for dst; width not 1, 2 or 4; count * width overflows;
 * HSAD_ERR_HSA as hsad_memcpy_async_signals (a later piece refused: hsad_mem_signal_result). */
hsad_status_t hsad_memset_async_signals(hsad_device_t *device, void *dst, uint32_t pattern,
                                        uint32_t width, size_t count, const hsa_signal_t *deps,
                                        uint32_t dep_count, hsa_signal_t completion);
#endif

/* Synchronous fill without dependencies: hsad_memset_async_signals on an internal signal and
 * a wait until deadline_ns, for every alignment (not hsa_amd_memory_fill: ROCr waits inside it
 * for its Fill blit with no deadline). Errors: as hsad_memset_async_signals; HSAD_ERR_TIMEOUT
 * ("hsad_memset: not finished by the deadline (goes on in the background; ...)": the fill is
 * kept as a timed-out hsad_memcpy is); HSAD_ERR_HSA when ROCr refused a later piece (the
 * message as hsad_mem_signal_result's; the pieces before it are written, nothing is left in
 * flight). Thread-safe. */
hsad_status_t hsad_memset(hsad_device_t *device, void *dst, uint32_t pattern, uint32_t width,
                          size_t count, uint64_t deadline_ns);

/* Synchronous copy: hsad_memcpy_async_signals on an internal signal and a wait until
 * deadline_ns. Errors: as hsad_memcpy_async_signals; HSAD_ERR_HSA also when ROCr refused a
 * later chunk (the message as hsad_mem_signal_result's: the chunks before it are at dst,
 * nothing is left in flight, nothing is kept); HSAD_ERR_TIMEOUT (the copy is still in
 * flight: the library keeps it until it finished, hsad_mem_wait_pending waits for it, and
 * hsad_mem_free / hsad_mem_unregister / hsad_host_pool_free of memory it reads or writes return
 * HSAD_ERR_IN_USE until then; caller memory the library did not allocate, e.g. malloc'd, must
 * stay valid until hsad_mem_wait_pending returned HSAD_OK). A pageable copy the call drives
 * itself (staged, pipelined, pinned) is handed to ROCr's event thread at the deadline; a
 * buffer ROCr refuses to watch then (hsa_amd_signal_async_handler) is driven to its end by
 * the call, past the deadline, and if no buffer could be handed over the call returns as if
 * in time. Thread-safe. */
hsad_status_t hsad_memcpy(hsad_device_t *device, void *dst, const void *src, size_t size,
                          const hsad_copy_options_t *options, uint64_t deadline_ns);

/* Waits until every synchronous copy and fill (hsad_memcpy, hsad_memset) of `device` (NULL:
 * of every device) that returned HSAD_ERR_TIMEOUT has finished; their memory may then be freed.
 * Asynchronous copies have their own completions and are not waited for. Errors:
 * HSAD_ERR_TIMEOUT (deadline_ns passed: the message counts those still in flight),
 * HSAD_ERR_HSA (all finished, but one stopped at a chunk or piece ROCr refused: "hsad_mem_
 * wait_pending: a timed-out synchronous copy or fill finished incomplete: <its message>", once
 * per failure, " (and N more)" when several did),
 * HSAD_ERR_INVALID_ARGUMENT / HSAD_ERR_CLOSED (a device not of the open runtime). Thread-safe;
 * not concurrent with hsad_runtime_close (which ends every signal: close after it returned). */
hsad_status_t hsad_mem_wait_pending(hsad_device_t *device, uint64_t deadline_ns);

#ifndef HSAD_NO_AMD
/* Whether the copy or fill (hsad_memcpy_async_signals, hsad_memset_async_signals) that last
 * decremented `completion` wrote every byte: HSAD_OK, or HSAD_ERR_HSA with the message of the
 * refusal that stopped it (see "Refusals after the call returned"). Ask after the completion
 * was decremented (before, HSAD_OK says only that nothing failed so far). The result is kept
 * until a new copy or fill starts on the same signal; the last 64 failures are kept in all
 * (older ones answer HSAD_OK), none across a runtime close. Errors also:
 * HSAD_ERR_INVALID_ARGUMENT (completion handle 0). Thread-safe; never blocks. */
hsad_status_t hsad_mem_signal_result(hsa_signal_t completion);
#endif

/* As hsad_mem_signal_result for a completion hsad_memcpy_async / hsad_memset_async returned
 * (hsad_completion_wait on it returns the same once it was reached; an empty completion is
 * HSAD_OK).
 * Errors also: HSAD_ERR_INVALID_ARGUMENT (NULL). Thread-safe; never blocks. */
hsad_status_t hsad_mem_result(const hsad_completion_t *completion);

#ifdef __cplusplus
}
#endif
#endif /* HSAD_MEMORY_H */
