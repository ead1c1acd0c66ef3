/* mem_internal.h - private state of memory/ (not installed, not for other folders). */
#ifndef HSAD_MEM_INTERNAL_H
#define HSAD_MEM_INTERNAL_H

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <pthread.h>
#include <stdatomic.h>

#include "memory/hsad_memory.h"
#include "hsa-dispatch/hsad_submit.h"

#define MEM_MAX_DEVICES 16
#define MEM_MAX_CPUS 16

/* ROCr entry points memory/ uses, resolved with dlsym from the ROCr library hsa-dispatch
 * loaded (dlopen RTLD_NOLOAD: memory/ never loads ROCr itself). */
#define MEM_ROCR_FUNCS(X) \
  X(hsa_agent_get_info) \
  X(hsa_iterate_agents) \
  X(hsa_amd_agent_iterate_memory_pools) \
  X(hsa_amd_memory_pool_get_info) \
  X(hsa_amd_memory_pool_allocate) \
  X(hsa_amd_memory_pool_free) \
  X(hsa_amd_agents_allow_access) \
  X(hsa_amd_memory_lock_to_pool) \
  X(hsa_amd_memory_unlock) \
  X(hsa_amd_memory_async_copy) \
  X(hsa_amd_memory_async_copy_rect) \
  X(hsa_amd_pointer_info) \
  X(hsa_amd_async_function) \
  X(hsa_amd_signal_async_handler) \
  X(hsa_signal_create) \
  X(hsa_signal_destroy) \
  X(hsa_signal_load_scacquire) \
  X(hsa_signal_store_screlease) \
  X(hsa_signal_subtract_screlease) \
  X(hsa_signal_wait_scacquire) \
  X(hsa_status_string)

typedef struct mem_rocr {
#define MEM_ROCR_MEMBER(f) __typeof__(f) *f;
  MEM_ROCR_FUNCS(MEM_ROCR_MEMBER)
#undef MEM_ROCR_MEMBER
} mem_rocr_t;

extern mem_rocr_t mem_rocr;

/* One pool block descriptor (index into hsad_host_pool.blocks). */
typedef struct mem_block {
  _Atomic uintptr_t ptr;        /* base, 0 while the descriptor is unused */
  _Atomic uint64_t req_size;    /* bytes asked for by the current holder */
  _Atomic uint32_t next;        /* class stack link: index + 1, 0 = end */
  _Atomic uint32_t state;       /* MEM_BLOCK_* */
  uint32_t cls;                 /* size class, HSAD_HOST_POOL_CLASSES = oversize */
  uint64_t bytes;               /* class bytes (oversize: rounded request) */
  int32_t page_node;            /* host node of the first page at allocation, -1 unknown */
} mem_block_t;

enum { MEM_BLOCK_UNUSED = 0, MEM_BLOCK_CACHED = 1, MEM_BLOCK_IN_USE = 2 };

#define MEM_POOL_HASH (2 * HSAD_HOST_POOL_MAX_BLOCKS)
#define MEM_HASH_TOMB UINT32_MAX

struct hsad_host_pool {
  /* hsad_object_head_t (hsa-dispatch/backend.h): NULL here (calloc); a pool of another
   * vendor's backend (nvidia/nv_pool.c) names its table, and host_pool.c forwards to it */
  const struct hsad_backend_ops *ops;
  uint64_t uid;
  uint32_t cpu_index;           /* CPU agent index */
  uint32_t numa_node;
  uint64_t generation;          /* runtime generation it belongs to */
  hsa_amd_memory_pool_t rocr_pool;
  /* class stacks: (tag << 32) | (index + 1); 0 index = empty. One cache line each. */
  struct {
    _Alignas(64) _Atomic uint64_t head;
  } stacks[HSAD_HOST_POOL_CLASSES];
  _Alignas(64) _Atomic uint64_t bytes_in_use, blocks_in_use, bytes_cached, blocks_cached;
  _Alignas(64) _Atomic uint64_t hits, misses, trims, max_cached;
  pthread_mutex_t lock;         /* misses, trims, descriptor allocation, hash inserts/removes */
  uint32_t free_desc[HSAD_HOST_POOL_MAX_BLOCKS]; /* stack of unused descriptor indices (lock) */
  uint32_t free_desc_count;
  _Atomic uint32_t hash[MEM_POOL_HASH];          /* ptr -> index + 1 (0 empty, TOMB removed) */
  mem_block_t blocks[HSAD_HOST_POOL_MAX_BLOCKS];
};

/* The process-wide state: agents and ROCr pools of the open runtime generation. */
typedef struct mem_state {
  pthread_mutex_t lock;
  _Atomic uint64_t generation;  /* runtime generation the fields below describe (0: none) */
  hsad_runtime_t *runtime;
  uint32_t device_count, cpu_count;
  hsad_device_t *devices[MEM_MAX_DEVICES];
  hsa_agent_t gpu_agents[MEM_MAX_DEVICES];
  hsa_amd_memory_pool_t gpu_coarse[MEM_MAX_DEVICES];
  bool has_gpu_coarse[MEM_MAX_DEVICES];
  uint64_t gpu_coarse_size[MEM_MAX_DEVICES], gpu_coarse_granule[MEM_MAX_DEVICES];
  hsa_agent_t cpu_agents[MEM_MAX_CPUS];
  uint32_t cpu_node[MEM_MAX_CPUS];
  hsa_amd_memory_pool_t cpu_fine[MEM_MAX_CPUS], cpu_coarse[MEM_MAX_CPUS];
  bool has_cpu_fine[MEM_MAX_CPUS], has_cpu_coarse[MEM_MAX_CPUS];
  uint64_t cpu_fine_size[MEM_MAX_CPUS], cpu_coarse_size[MEM_MAX_CPUS];
  uint64_t cpu_fine_granule[MEM_MAX_CPUS], cpu_coarse_granule[MEM_MAX_CPUS];
  _Atomic(hsad_host_pool_t *) pools[MEM_MAX_CPUS];
} mem_state_t;

extern mem_state_t mem_st;

/* Validates `device` (non-NULL, of the open runtime) and makes mem_st current for the
 * runtime's generation. `what` names the call and argument for messages. */
hsad_status_t mem_ready(hsad_device_t *device, const char *what);
/* As mem_ready for a runtime handle. */
hsad_status_t mem_ready_runtime(hsad_runtime_t *runtime, const char *what);
/* True while the runtime generation mem_st describes is the open one. */
bool mem_current(void);
/* Index of `device` in mem_st.devices (mem_ready succeeded for it). */
uint32_t mem_device_index(const hsad_device_t *device);
/* Records an HSA failure: "what: HSA status 0x.. (string)". */
hsad_status_t mem_hsa_fail(hsa_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Host NUMA node of the page holding p, or -1. */
int32_t mem_page_node(const void *p);
/* Checks an access list; fills agents (device first when non-NULL), *out_n and *out_mask. */
hsad_status_t mem_access_agents(const char *what, hsad_device_t *device,
                                hsad_device_t *const *access, uint32_t access_count,
                                hsa_agent_t *agents, uint32_t *out_n, uint32_t *out_mask);

/* Pools: drop every pool (mem_st.lock held); release_cached: give their cached blocks back to
 * ROCr first (at close, ROCr still up); otherwise the memory is gone already. */
void mem_pools_reset(bool release_cached);
/* Copies: destroy the internal signals (release: ROCr still up) (mem_st.lock held). */
void mem_copy_close(void);
/* Completion-based copies: forget the copy queues (the runtime destroys them) and the signals
 * awaiting reclaim (destroyed with the rest) (mem_st.lock held). */
void mem_async_close(void);
/* Frees the host memory of copy queues of a closed runtime (takes the runtime's lock). */
void mem_async_reap(void);
/* Looks ptr up in every pool of the current generation (no lock). Returns the pool and
 * block index of the block containing ptr, or NULL. */
hsad_host_pool_t *mem_pool_find(const void *ptr, uint32_t *out_index);
/* Internal signals (value set on take), reused while the runtime generation lasts. */
hsad_status_t mem_signal_take(hsa_signal_value_t value, hsa_signal_t *out);
void mem_signal_give(hsa_signal_t s);
/* The key a failure after the call returned is kept under (copy.c, "failures"): queue NULL:
 * the completion signal's handle (signal forms, internal signals of the synchronous forms);
 * otherwise the copy queue's completion (queue, epoch) of hsad_memcpy_async / _memset_async. */
typedef struct mem_report {
  const void *queue;
  uint64_t id;
} mem_report_t;

/* The copy and fill engines behind every public form; `what` names the public call; report:
 * the key of a later failure (NULL: the completion signal). */
hsad_status_t mem_copy_start(const char *what, hsad_device_t *device, void *dst,
                             const void *src, size_t size, const hsa_signal_t *deps,
                             uint32_t dep_count, hsa_signal_t completion,
                             const hsad_copy_options_t *options,
                             hsad_copy_strategy_t *out_strategy, uint64_t sync_deadline_ns,
                             bool check_only, const mem_report_t *report);
hsad_status_t mem_fill_start(const char *what, hsad_device_t *device, void *dst,
                             uint32_t pattern, uint32_t width, size_t count,
                             const hsa_signal_t *deps, uint32_t dep_count,
                             hsa_signal_t completion, bool check_only,
                             const mem_report_t *report);
/* One side of a copy, classified against the registry and ROCr (copy.c). */
typedef struct mem_side {
  uint8_t *p;              /* the caller's address */
  uint8_t *gpu_p;          /* the address the GPU uses (registered / locked memory) */
  bool pageable;
  bool device_mem;         /* device memory of GPU `owner` */
  bool checked_access;     /* access_mask is known */
  uint32_t owner;
  uint32_t access_mask;
  hsad_mem_kind_t kind;
  const char *kind_name;
  uintptr_t base;
} mem_side_t;

/* Classifies [ptr, ptr + size) for a copy: an allocation the library knows (checked to hold
 * the whole range: HSAD_ERR_RANGE past its end, HSAD_ERR_FREED in freed memory), memory ROCr
 * knows, or pageable. `role` ("destination", "source") names it in messages. */
hsad_status_t mem_side_classify(const char *what, const char *role, const void *ptr, size_t size,
                                mem_side_t *out);
/* HSAD_ERR_NO_ACCESS unless device index `bd` (the GPU that runs the blit) may reach side s. */
hsad_status_t mem_side_access(const char *what, const char *role, const mem_side_t *s,
                              uint32_t bd);
/* Keeps `msg` as the failure of the op under `key` (hsad_mem_result / hsad_mem_signal_result
 * report it: see copy.c, "failures after the call returned"). */
void mem_fail_keep(mem_report_t key, const char *msg);
/* The CPU agent nearest `device` (its NUMA node's; agent 0 when it has none). */
hsa_agent_t mem_cpu_agent_of(hsad_device_t *device);
/* 2-D/3-D copies (copy_rect.c): one box, byte geometry as hsad_memcpy_3d_async's. */
typedef struct mem_rect {
  uint8_t *dst;
  const uint8_t *src;
  size_t dpitch, dslice, spitch, sslice; /* bytes; slices only read when depth > 1 */
  size_t width, height, depth;           /* width in bytes, height in rows, depth in slices */
  /* the caller's dependencies as completions, for the copy kernel's queue (copy_async.c) */
  const hsad_completion_t *cdeps;
  uint32_t ncdeps;
  uint64_t deadline_ns;
} mem_rect_t;
/* Checks the box (check_only: nothing else) and starts it: ROCr's SDMA rect copy
 * (hsa_amd_memory_async_copy_rect) when it takes it, else one hsa_amd_memory_async_copy per
 * row (rows of equal pitch merged). `completion` is set to the number of DMAs before the
 * first is submitted (each decrements it once). */
hsad_status_t mem_rect_start(const char *what, hsad_device_t *device, const mem_rect_t *r,
                             const hsa_signal_t *deps, uint32_t dep_count,
                             hsa_signal_t completion, bool check_only,
                             const mem_report_t *report);
/* Boxes by path (hsad_copy_rect_stats): counted by copy_rect.c. */
enum { MEM_RECT_SDMA = 0, MEM_RECT_ROWS = 1, MEM_RECT_BLIT = 2, MEM_RECT_STAGED = 3 };
void mem_rect_count(int path);
/* The copy kernel (rect_blit.c). Rows of DMAs from which a box goes to the kernel
 * (HSAD_COPY_RECT_BLIT_MIN_DMAS, or the environment's HSAD_RECT_BLIT_MIN_DMAS; 0 there:
 * never, UINT64_MAX here). */
uint64_t mem_blit_min_dmas(void);
/* True when box g's grid fits the kernel (32-bit work-item counts). */
bool mem_blit_fits(const mem_rect_t *g);
/* Dispatches the kernel for box g (addresses the GPU uses) on device index bd's copy-kernel
 * queue after `deps`; `done` is decremented by one once the kernel completed. On an error
 * with *out_in_flight false nothing was submitted (the caller may take another path); with
 * it true the kernel runs and `done` is decremented as promised (HSAD_OK is returned). */
hsad_status_t mem_blit_rect(uint32_t bd, const mem_rect_t *g, const hsad_completion_t *deps,
                            uint32_t dep_count, hsa_signal_t done, uint64_t deadline_ns,
                            bool *out_in_flight);
/* Runtime close / later: the kernel's programs and queues (as mem_async_close / _reap). */
void mem_blit_close(void);
void mem_blit_reap(void);

/* Synchronous copies and fills that returned HSAD_ERR_TIMEOUT (copy.c): HSAD_ERR_IN_USE,
 * naming the call, when [lo, lo + size) overlaps memory one of them still reads or writes
 * (`what` and `desc` name the caller and the object for the message); HSAD_OK otherwise
 * (finished ones are reaped on the way). Lock-free while none is pending. */
hsad_status_t mem_pending_check(const char *what, const char *desc, uintptr_t lo, size_t size);
/* True while a timed-out synchronous op is kept (one relaxed load). */
bool mem_pending_any(void);

/* Registry reset on a new generation. */
void mem_registry_reset(void);

#endif
