/* nv_internal.h - private state of the NVIDIA backend (nvidia/ only).
 *
 * Objects and ownership
 *   nv_dev_t      one CUDA device and its primary context (retained at open, released at
 *                 close). Owned by the backend's device array; lives while the runtime is open.
 *   nv_program_t  one CUmodule (cuModuleLoadData of a cubin, fatbin or PTX image) and its
 *                 kernels. Owned by the caller (hsad_program_destroy).
 *   nv_kernel_t   one CUfunction with its parameter layout (cuFuncGetParamInfo) and limits.
 *   nv_queue_t    one CUDA stream (non-blocking) with its completion timeline: numbered epochs,
 *                 each marked lazily by an event (cuEventRecord) or by a 64-bit counter in
 *                 host-mapped pinned memory that cuStreamWriteValue64 advances (nv_queue.c).
 *
 * Contexts: every driver call runs with the device's primary context current on the calling
 * thread (nv_ctx_enter: one thread-local compare when it already is).
 *
 * Faults: an illegal address (or any error that poisons a CUDA context: the driver makes it
 * sticky for the whole context) is seen by cuStreamQuery of a waiter or by the next driver
 * call. nv_device_fault then marks the device lost and gives every queue of it the sticky
 * HSAD_ERR_QUEUE_ERROR with the driver's error, so every waiter of every queue returns. The next
 * queue created on a lost device resets the primary context (cuDevicePrimaryCtxReset): objects
 * of the old context keep only their host memory (their destroy frees that alone). */
#ifndef HSAD_NVIDIA_NV_INTERNAL_H
#define HSAD_NVIDIA_NV_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>

#include "hsa-dispatch/backend.h"
#include "nvidia/nv_cuda.h"

#define NV_MAX_DEVICES 16
#define NV_MAX_PARAMS 1024       /* parameters read per kernel (CUDA allows 32764 bytes) */
#define NV_PARAM_BUFFER_MAX 32768 /* bytes of parameters (CUDA 12.1+ on Volta+: 32764) */
#define NV_SEAL_EVENTS 64         /* events per queue marking epochs (a ring, by epoch % 64) */

typedef struct nv_queue nv_queue_t;

typedef struct nv_dev {
  nv_device_t cu;
  nv_context_t ctx;
  uint32_t retains;                     /* primary-context retains to release at close */
  hsad_device_t *pub;
  hsad_device_info_t info;
  uint32_t max_shared_optin;            /* bytes per block with opt-in */
  uint32_t max_grid_blocks[3];
  pthread_mutex_t lock;                 /* queues list, shared/copy queue, context reset */
  nv_queue_t *queues;                   /* live queues (under lock) */
  hsad_queue_t *shared;                 /* hsad_device_queue's stream (under lock) */
  nv_queue_t *copyq;                    /* the copies' stream (under lock) */
  _Atomic uint64_t generation;          /* +1 at every context reset */
  _Atomic int lost;                     /* a fault poisoned the context */
  _Atomic int dead;                     /* the driver kept the error across a reset: only a
                                           new process can use the device (lost_msg says so) */
  char lost_msg[640];
} nv_dev_t;

typedef struct nv_kernel {
  const hsad_backend_ops_t *ops;        /* hsad_kernel_head_t */
  uint64_t uid;
  uint64_t hot_id;                      /* 0: never the AMD hot path's key (hsad_kernel_head_t) */
  struct nv_program *program;
  nv_function_t fn;
  hsad_device_kernel_desc_t desc;
  uint32_t param_count;
  uint32_t param_bytes;                 /* end of the last parameter */
  uint32_t *param_offset, *param_size;
  uint8_t *param_type;                  /* per parameter, the hsad_karg_type_t of a by-value
                                           scalar as the mangled name gives it (0: unknown,
                                           a pointer or aggregate); NULL for extern "C" names */
  uint32_t static_shared;               /* CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES */
  uint32_t registers;                   /* CU_FUNC_ATTRIBUTE_NUM_REGS */
  _Atomic uint32_t dynamic_shared_max;  /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
} nv_kernel_t;

typedef struct nv_program {
  const hsad_backend_ops_t *ops;        /* hsad_object_head_t */
  uint64_t uid;
  nv_dev_t *dev;
  uint64_t generation;                  /* the context generation it was loaded in */
  nv_module_t module;
  char label[256];
  uint32_t kernel_count;
  nv_kernel_t *kernels;
} nv_program_t;

struct nv_queue {
  HSAD_QUEUE_HEAD;
  uint64_t uid;
  nv_dev_t *dev;
  uint64_t generation;
  nv_stream_t stream;
  volatile uint64_t *epoch_host;        /* host-mapped; the GPU writes epoch k when reached */
  nv_deviceptr_t epoch_dev;             /* its device address (cuMemHostGetDevicePointer) */
  uint32_t spin_ns;
  bool shared;
  pthread_mutex_t lock;                 /* numbers, seals and writes epochs in stream order */
  _Atomic uint64_t issued;              /* last epoch numbered */
  _Atomic uint64_t covered;             /* last epoch marked in the stream (sealed or written);
                                           issued > covered: issued is pending (nothing was
                                           enqueued after its point yet) */
  uint64_t written;                     /* last epoch cuStreamWriteValue64 enqueued (lock) */
  _Atomic uint64_t seen;                /* highest epoch a waiter saw reached via its event */
  _Atomic uint64_t spin_until_ns;       /* copies: their expected end; waits spin until then */
  nv_event_t seal_ev[NV_SEAL_EVENTS];   /* created on first use (lock) */
  uint64_t seal_epoch[NV_SEAL_EVENTS];  /* the epoch each event was last recorded for (lock) */
  _Atomic uint64_t launches;            /* dispatches submitted (packet ids) */
  _Atomic uint64_t since_epoch;         /* submits after the last epoch (flush) */
  char error_msg[768];
  nv_queue_t *next;
  /* A CUDA graph launched on another queue's stream covers this queue too (nv_graph.c): before
   * its next work this queue waits for that queue's epoch after the launch (nv_queue_settle).
   * Set by the launch, taken (exchanged to NULL) by the next submit here. */
  _Atomic(nv_queue_t *) join_src;
  /* Device times (hsad_queue_options_t.profiling): each dispatch with a completion is bracketed
   * by cuEventRecord of a start and an end event of slot id % NV_PROF_SLOTS (under lock, so
   * the pair brackets that launch alone); prof_id[slot] is the dispatch id it timed. Absolute
   * ns: prof_t0_ns is the host's CLOCK_MONOTONIC when prof_ev0 (recorded at creation, then
   * synchronized) had been reached; a time is prof_t0_ns + cuEventElapsedTime(prof_ev0, ev). */
  bool profiling;
  nv_event_t *prof_ev;                  /* 2 x NV_PROF_SLOTS: start, end of slot i at 2i, 2i + 1 */
  _Atomic uint64_t *prof_id;
  uint64_t *prof_epoch;                 /* the epoch of the completion that slot's dispatch got */
  nv_event_t prof_ev0;
  uint64_t prof_t0_ns;
  /* Monitoring (nv_monitor.c): NULL off. Set and cleared only while no dispatch runs on the
   * queue (hsad_queue_monitor_enable's rule). */
  struct nv_monitor *monitor;
};
#define NV_PROF_SLOTS 256u

extern const hsad_backend_ops_t nv_backend_ops;
extern nv_dev_t nv_devs[NV_MAX_DEVICES];
extern uint32_t nv_dev_count;

/* Makes dev's primary context current on this thread (cached per thread). */
hsad_status_t nv_ctx_enter(nv_dev_t *dev);
/* HSAD_ERR_DRIVER "what: CUDA_ERROR_... (string)" (or QUEUE_ERROR after nv_device_fault when
 * r poisons the context). */
hsad_status_t nv_fail(nv_dev_t *dev, nv_result_t r, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* True for errors the driver makes sticky for the context (illegal address, launch failure,
 * misaligned address, illegal instruction, hardware stack error, ...). */
bool nv_error_is_fatal(nv_result_t r);
/* Marks dev lost and faults every queue of it with r (idempotent). */
void nv_device_fault(nv_dev_t *dev, nv_result_t r, const char *where);
/* A lost device: reset the primary context (dev->lock held). */
hsad_status_t nv_device_recover(nv_dev_t *dev);

/* nv_queue.c */
/* The queue's gate word (backend.h): HSAD_GATE_BACKEND_OPEN exactly when it has no sticky error
 * and does not capture; one load for both (acquire: the error's message follows it). */
static inline bool nv_gate_open(const nv_queue_t *q) {
  return atomic_load_explicit(&((nv_queue_t *)(uintptr_t)q)->gate, memory_order_acquire) ==
         HSAD_GATE_BACKEND_OPEN;
}
/* A call a capture does not record, on a queue whose gate is not open: its sticky error, or
 * "WHO: queue Q is capturing ..." (hsad_backend_capture_refuse), or HSAD_OK (the capture ended
 * since the gate was read). */
hsad_status_t nv_gate_fail(const nv_queue_t *q, const char *who);
hsad_status_t nv_queue_make(nv_dev_t *dev, const hsad_queue_options_t *o, bool shared,
                            nv_queue_t **out);
void nv_queue_free(nv_queue_t *q);
hsad_status_t nv_queue_fail(const nv_queue_t *q);
/* Numbers the next epoch of q (q->lock taken inside; nothing is enqueued: the epoch is pending
 * until nv_queue_seal or a waiter marks it); *out_completion covers everything enqueued before. */
hsad_status_t nv_queue_epoch(nv_queue_t *q, hsad_completion_t *out_completion);
/* Call before enqueuing anything on q's stream: marks a pending epoch with an event at the
 * stream's current end (cuEventRecord, ~0.2 us on the H200; nothing when none is pending), so
 * the epoch does not wait for the new work. */
hsad_status_t nv_queue_seal(nv_queue_t *q);
static inline hsad_status_t nv_queue_seal_fast(nv_queue_t *q) {
  if (__builtin_expect(atomic_load_explicit(&q->issued, memory_order_relaxed) ==
                           atomic_load_explicit(&q->covered, memory_order_relaxed), 1))
    return HSAD_OK;
  return nv_queue_seal(q);
}
/* The epoch covering everything enqueued on q so far (a new one only when work came after the
 * last); unlike hsad_queue_flush it leaves q's own pending join alone. */
hsad_status_t nv_queue_flush_raw(nv_queue_t *q, hsad_completion_t *out_completion);
/* Before new work on q: a pending join (join_src) becomes a wait for the source's epoch. */
hsad_status_t nv_queue_settle_slow(nv_queue_t *q);
static inline hsad_status_t nv_queue_settle(nv_queue_t *q) {
  if (__builtin_expect(!atomic_load_explicit(&q->join_src, memory_order_acquire), 1)) return HSAD_OK;
  return nv_queue_settle_slow(q);
}
/* Enqueues GPU-side waits on q for deps (other NVIDIA queues of the same device). */
hsad_status_t nv_queue_wait_deps(nv_queue_t *q, const hsad_completion_t *deps, uint32_t n,
                                 uint64_t deadline_ns, const char *who);

/* A launch checked and packed for a queue (nv_launch_prepare): the kernel, ceil(grid / block)
 * blocks, the block, the dynamic shared bytes and the parameter image (thread-local: valid
 * until the next prepare or dispatch on this thread; param_offset[i] of the kernel locates
 * parameter i in it). */
typedef struct nv_prepared {
  nv_kernel_t *k;
  uint32_t blocks[3], block[3], dynamic;
  uint8_t *params;
} nv_prepared_t;

/* Every check of hsad_kernel_dispatch on (q, kernel, launch), with its messages, and the packed
 * parameters; makes q's device context current. Nothing is submitted. */
hsad_status_t nv_launch_prepare(nv_queue_t *q, const hsad_device_kernel_t *kernel,
                                const hsad_launch_t *l, nv_prepared_t *out);

/* hsad_kernel_dispatch without monitoring (*out_dynamic: the dynamic shared bytes). */
hsad_status_t nv_dispatch_unmonitored(nv_queue_t *q, const hsad_device_kernel_t *kernel,
                                      const hsad_launch_t *l, hsad_completion_t *out_completion,
                                      uint64_t *out_packet_id, uint32_t *out_dynamic);

/* A launch bracketed by a profiling slot's cuEventRecord pair and followed by an epoch write,
 * under q->lock (q->profiling): the kernel k with params, or, exec non-NULL, that CUDA graph
 * (cuGraphLaunch); *out_completion's packet_id is the launch's id (hsad_completion_times). */
hsad_status_t nv_dispatch_timed(nv_queue_t *q, nv_kernel_t *k, const uint32_t blocks[3],
                                const uint32_t block[3], uint32_t dynamic, void **params,
                                nv_graph_exec_t exec, hsad_completion_t *out_completion,
                                uint64_t *out_packet_id);

/* nv_monitor.c (hsad_monitor.h): a monitored dispatch, the table's monitor functions */
struct hsad_monitor_options;
struct hsad_dispatch_record;
hsad_status_t nv_monitor_dispatch(nv_queue_t *q, const hsad_device_kernel_t *kernel,
                                  const hsad_launch_t *l, hsad_completion_t *out_completion,
                                  uint64_t *out_packet_id);
hsad_status_t nv_monitor_enable(hsad_queue_t *queue, const struct hsad_monitor_options *options);
void nv_monitor_disable(hsad_queue_t *queue);
hsad_status_t nv_monitor_drain(hsad_queue_t *queue, struct hsad_dispatch_record *out_records,
                               uint32_t capacity, uint32_t *out_count, uint64_t *out_dropped);
uint64_t nv_queue_trace_id(const hsad_queue_t *queue);
/* One record of kernel k launched as launch `id` of queue tq (q itself, or the queue whose
 * stream ran a CUDA graph holding the node), in q's monitor (q->monitor set): geo is the
 * launch's dims, grid[3], block[3] (work-items, as hsad_launch_t); epoch: tq's completion
 * whose profiling slot times it (0: none); t0, t1: the host submit interval. Raises the
 * kernel's alerts on first sight. Never fails (a full ring drops and counts). */
void nv_monitor_record(nv_queue_t *q, nv_queue_t *tq, const nv_kernel_t *k, const uint32_t geo[7],
                       uint32_t dynamic, uint64_t id, uint64_t epoch, uint64_t t0, uint64_t t1);

/* Options of the driver's JIT for a program load (cuModuleLoadDataEx): option[i] =
 * value[i] (unsigned int or int options only). count 0: cuModuleLoadData. */
#define NV_JIT_MAX_OPTIONS 4
typedef struct nv_jit {
  uint32_t count;
  nv_jit_option_t option[NV_JIT_MAX_OPTIONS];
  uint32_t value[NV_JIT_MAX_OPTIONS];
} nv_jit_t;

/* hsad_program_load_memory on dev with the JIT's options (a PTX image is compiled under them;
 * a JIT error's message ends with the JIT's error log). */
hsad_status_t nv_program_load_jit(nv_dev_t *dev, const void *data, size_t size,
                                  const char *label, const nv_jit_t *jit, hsad_program_t **out);

/* nv_variants.c: variant sets of NVIDIA kernels (backend.h's variant_* and queue_profiling) */
hsad_status_t nv_variant_check(const hsad_device_kernel_t *const *kernels, uint32_t count,
                               hsad_device_t **out_device);
hsad_status_t nv_variant_select(const hsad_device_kernel_t *const *kernels, uint32_t count,
                                uint32_t block, uint32_t dynamic, hsad_variant_choice_t *out);
bool nv_queue_profiling(const hsad_queue_t *queue);

/* nv_graph.c: graphs as CUDA graphs (fusion/fu_graph.h's table) */
extern const struct hsad_graph_backend_ops nv_graph_ops;
struct hsad_graph_exec;
/* nv_graph.c: a fused exec's CUgraphExec and kernel node `node` (false: rolled back, or not a
 * kernel node); for hsad-bench-nvidia's split of an update's cost. */
bool nv_graph_exec_native(const struct hsad_graph_exec *exec, uint32_t node, nv_graph_exec_t *out_exec,
                          nv_graph_node_t *out_node);

/* the table's functions, per file */
hsad_status_t nv_queue_create(hsad_device_t *, void *, const hsad_queue_options_t *,
                              hsad_queue_t **);
hsad_status_t nv_device_queue(hsad_device_t *, void *, hsad_queue_t **);
void nv_queue_destroy(hsad_queue_t *);
hsad_device_t *nv_queue_device(const hsad_queue_t *);
uint32_t nv_queue_size(const hsad_queue_t *);
hsad_status_t nv_queue_error(const hsad_queue_t *);
hsad_status_t nv_kernel_dispatch(hsad_queue_t *, const hsad_device_kernel_t *,
                                 const hsad_launch_t *, uint64_t, hsad_completion_t *,
                                 uint64_t *);
hsad_status_t nv_queue_barrier(hsad_queue_t *, const hsad_completion_t *, uint32_t, uint64_t,
                               hsad_completion_t *);
hsad_status_t nv_queue_flush(hsad_queue_t *, uint64_t, hsad_completion_t *);
hsad_status_t nv_queue_capture_set(hsad_queue_t *, bool);
hsad_status_t nv_completion_wait(const hsad_completion_t *, uint64_t);
hsad_status_t nv_completion_times(const hsad_completion_t *, uint64_t *, uint64_t *);
bool nv_completion_done(const hsad_completion_t *);
hsad_status_t nv_buffer_alloc(hsad_device_t *, void *, size_t, void **);
bool nv_buffer_free(void *);
hsad_status_t nv_mem_alloc(hsad_device_t *, void *, uint32_t, size_t, void **);
hsad_status_t nv_mem_free(void *);
struct hsad_copy_options;
hsad_status_t nv_memcpy_async(hsad_device_t *, void *, void *, const void *, size_t,
                              const hsad_completion_t *, uint32_t,
                              const struct hsad_copy_options *, uint64_t, hsad_completion_t *);
void nv_memory_close(void);

/* nv_pool.c: pinned host pools (hsad_host_pool_* of the build without AMD) */
struct hsad_host_pool;
struct hsad_host_pool_stats;
hsad_status_t nv_host_pool_get(hsad_device_t *, void *, struct hsad_host_pool **);
hsad_status_t nv_host_pool_get_node(uint32_t, struct hsad_host_pool **);
hsad_status_t nv_host_pool_alloc(struct hsad_host_pool *, size_t, void **);
hsad_status_t nv_host_pool_free(struct hsad_host_pool *, void *);
hsad_status_t nv_host_pool_trim(struct hsad_host_pool *, uint64_t, uint64_t *);
hsad_status_t nv_host_pool_set_max_cached(struct hsad_host_pool *, uint64_t);
hsad_status_t nv_host_pool_stats(const struct hsad_host_pool *, struct hsad_host_pool_stats *);
/* hsad_mem_free of a pool block; HSAD_ERR_NOT_ALLOCATED (no message) when no pool has ptr */
hsad_status_t nv_host_pool_free_any(void *ptr);
void nv_host_pools_close(void);

#endif
