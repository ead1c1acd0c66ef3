/* dispatch_internal.h - private state of hsa-dispatch (not installed, not for other folders). */
#ifndef HSAD_DISPATCH_INTERNAL_H
#define HSAD_DISPATCH_INTERNAL_H

#include <hsa/amd_hsa_queue.h>
#include <hsa/amd_hsa_signal.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <pthread.h>
#include <stdatomic.h>

#include "hsa-dispatch/aql_ring.h"
#include "hsa-dispatch/backend.h"
#include "hsa-dispatch/hsad.h"
#include "hsa-dispatch/hsad_rocr.h"
#include "hsa-dispatch/hsad_submit.h"
#include "hsa-dispatch/monitor_common.h"

/* Everything declared below is the library's own: hidden from libhsad.so's dynamic symbol
 * table, so calls to it are direct (no PLT, no GOT load) in the shared library too. */
#pragma GCC visibility push(hidden)

#define HSAD_SHARED_QUEUES 2
#define HSAD_MAX_DEVICES 16
#define HSAD_MAX_CPUS 16

/* The largest kernarg segment the library builds, in bytes: the size of the per-thread image
 * (dq_built_t.image) and of the spare kernarg blocks past a ring's end. */
#define DQ_KERNARG_SEGMENT_MAX HSAD_KERNARG_SEGMENT_MAX

struct hsad_device {
  const hsad_backend_ops_t *ops;        /* NULL: AMD (this file's); else the device's backend */
  void *backend_device;                 /* the backend's handle of it (ops != NULL) */
  hsad_runtime_t *runtime;
  hsa_agent_t agent;
  hsad_device_info_t info;
  uint64_t grid_max_size;               /* HSA_AGENT_INFO_GRID_MAX_SIZE: work-items in a whole
                                           grid (UINT64_MAX when the agent gives none) */
  hsa_amd_memory_pool_t kernarg_pool;   /* nearest CPU's kernarg pool */
  hsa_amd_memory_pool_t fine_pool;      /* nearest CPU's fine-grained pool */
  bool has_kernarg_pool, has_fine_pool;
  pthread_mutex_t lock;                 /* shared queues, the kernarg block cache */
  /* hsad_submit_kernarg_alloc's cache of freed blocks: class c holds blocks of 4096 << c bytes
   * (at most DQ_KARG_KEEP each), so writers that allocate and free per object (a graph exec)
   * do not call ROCr's pool allocator each time; dropped at close (hsa_shut_down frees them) */
  void *karg_cache[9][8];
  uint8_t karg_cached[9];
  hsad_queue_t *shared[HSAD_SHARED_QUEUES];
  _Atomic uint32_t shared_rr;
};

struct hsad_runtime {
  pthread_mutex_t lock;                 /* its reference count: runtime.c (runtime_refs.h) */
  uint32_t device_count, cpu_count;
  hsad_device_t devices[HSAD_MAX_DEVICES];
  hsa_agent_t cpu_agents[HSAD_MAX_CPUS];
  hsad_cpu_info_t cpus[HSAD_MAX_CPUS];
  uint64_t timestamp_hz;                /* HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY */
  bool amd_up;                          /* ROCr initialised (hsa_init succeeded) */
  uint32_t amd_device_count;            /* devices[0 .. amd_device_count) are AMD agents */
  hsad_queue_t *queues;                 /* live queues (list under lock) */
  hsad_program_t *programs;             /* live programs (list under lock) */
};

/* One entry of a queue's epoch log: written under the epoch lock before the packet is
 * published (seqlock: k is 0 while id changes), read when `retired` advances. */
typedef struct dq_epoch_entry {
  _Atomic uint64_t k;
  _Atomic uint64_t id;
} dq_epoch_entry_t;

struct hsad_queue {
  /* The head every backend's queue shares (backend.h): the gate, i.e. the sticky error and
   * the capture flag in one 64-bit word, so the dispatch path tests both with the one load and
   * branch it had for the error alone (dq_gated); a queue of another backend keeps
   * HSAD_GATE_BACKEND in it, so the same branch diverts it too. Every other reader reads
   * `error` alone: capturing is not an error (hsad_queue_error stays OK). `capturing` is 1
   * while fusion/capture.c records the queue's submits (stored release after capture_ops /
   * capture_ctx). Read-mostly: written on a fault, at capture begin/end. */
  HSAD_QUEUE_HEAD;
  /* hot, read-mostly */
  hsa_queue_t *hsa;
  amd_queue_t *amd;
  dq_ring_t ring;                       /* slots, kernarg blocks, indices, doorbell (aql_ring.h):
                                           its `retired` and `rung` sit on their own lines */
  hsad_device_t *device;
  uint32_t dynamic_stack;
  uint32_t spin_ns;
  bool profiling;
  bool shared;
  uint64_t uid;                         /* unique for the process lifetime: kernarg cache key */
  uint32_t max_private;                 /* device max_private_per_work_item */
  uint32_t lds_bytes;                   /* device LDS per workgroup */
  uint64_t queue_ptr;                   /* hidden_queue_ptr */
  uint32_t private_base_hi, shared_base_hi;
  hsad_kernarg_runtime_t karg_rt;       /* hidden values of this queue */
  hsa_signal_t epoch_signal;            /* the timeline (hsad_queue.h, "Timeline") */
  volatile int64_t *epoch_value;        /* its amd_signal_t value, read directly */
  dq_epoch_entry_t *epochs;             /* 2 x size entries: epoch k -> its packet id */
  hsa_signal_t *ts_signals;             /* profiling: one timestamp signal per slot */
  _Atomic uint64_t *ts_ids;             /* profiling: packet id whose times slot i holds */
  struct dq_monitor *monitor;           /* NULL: monitoring off (monitor.c) */
  bool general;                         /* monitor, ts_signals or no direct doorbell: every
                                           submit takes the general path (dq_queue_general) */
  hsad_submit_result_fn result_hook;    /* hsad_submit_set_result_hook; NULL: none */
  void *result_ctx;
  /* written by producers / waiters / the error callback */
  _Alignas(64) _Atomic uint64_t retired_epoch; /* the epoch ring.retired was derived from */
  pthread_mutex_t retire_lock;          /* serialises advancing retired (slow path only) */
  _Alignas(64) _Atomic uint32_t epoch_lock; /* reserving + numbering an epoch packet */
  _Atomic uint64_t epoch_issued;        /* epoch packets reserved (the last epoch number) */
  _Atomic uint64_t epoch_end;           /* id + 1 of the last epoch packet (0: none) */
  _Atomic uint64_t order_end;           /* id + 1 of the latest barrier packet with the BARRIER
                                           bit (no work in it; 0: none): hsad_submit_point */
  _Alignas(64) const hsad_submit_capture_ops_t *_Atomic capture_ops; /* the recorder; NULL: not capturing */
  void *capture_ctx;                    /* its state; written and read under its lock only */
  _Atomic uint64_t error_epoch;         /* epochs completed when the queue faulted */
  int hsa_status;                       /* the callback's status */
  char error_msg[256];
  /* resident kernarg segments of destroyed prepared launches (dispatch.c), freed once every
   * packet that may read them completed: under retire_lock */
  struct hsad_prepared_launch *resident_retiring;
  hsad_queue_t *next;                   /* runtime's live list */
};

/* The dispatch hot path's key (one 64-bit compare for the queue, its gate and mode, and the
 * kernel): bit 63, a queue uid below 2^31 in bits 32..62, a kernel's hot_id (its uid, below
 * 2^32, hsad_kernel_head_t) in bits 0..31. A queue's hot key (HSAD_QUEUE_HEAD hot_uid) is
 * DQ_HOT_KEY(uid, 0) or 0, a launch-cache entry's DQ_HOT_KEY(quid, hot_id) (both nonzero) or
 * DQ_HOT_NONE, and the hot path compares k->hot_id ^ q->hot_uid with the entry's. Exact: the
 * bit ranges are disjoint, so the two are equal only when the queue's hot key is nonzero (bit
 * 63) and both uids are the entry's; a kernel or queue whose uid is too large (after 2^31 or
 * 2^32 objects) has 0 there and never takes the hot path (the general path serves it).
 * DQ_HOT_NONE, the key of an entry that must not take the hot path (none yet, one being
 * filled, one the hot path cannot submit, dq_launch_cache_none), is no value of k->hot_id ^
 * q->hot_uid: those are below 2^32 (a queue's hot key 0) or have bit 63 set; it is 2^32. Not 0,
 * which a kernel whose hot_id is 0 (another backend's, or a uid too large) on a queue whose
 * hot key is 0 (gate closed, general, another backend's) would match. */
#define DQ_HOT_KEY(quid, kid) ((UINT64_C(1) << 63) | (uint64_t)(quid) << 32 | (uint64_t)(kid))
#define DQ_HOT_NONE (UINT64_C(1) << 32)
#define DQ_HOT_QUEUE_UIDS (UINT64_C(1) << 31)  /* queue uids below this have a hot key */
#define DQ_HOT_KERNEL_UIDS (UINT64_C(1) << 32) /* kernel uids below this have a hot_id */

/* Recomputes q->hot_uid (HSAD_QUEUE_HEAD): DQ_HOT_KEY(uid, 0) while the gate is open and the
 * queue is not general (and its uid is below DQ_HOT_QUEUE_UIDS), else 0. A writer that closes
 * the gate stores it first, then 0 into hot_uid; one that opens it (a capture's end) calls
 * this after. Both sides seq_cst, so when the gate closes while this runs, whichever comes
 * second in that order leaves 0: this function re-reads the gate after its store. Cold. */
static inline void dq_queue_hot_refresh(hsad_queue_t *q) {
  uint64_t hot = q->general || q->uid >= DQ_HOT_QUEUE_UIDS || atomic_load(&q->gate)
                     ? 0 : DQ_HOT_KEY(q->uid, 0);
  atomic_store(&q->hot_uid, hot);
  if (hot && atomic_load(&q->gate)) atomic_store(&q->hot_uid, 0);
}

/* Recomputes q->general and q->hot_uid after monitor, ts_signals or the doorbell changed (the
 * uid is set before the first call). */
static inline void dq_queue_general(hsad_queue_t *q) {
  q->general = q->monitor != NULL || q->ts_signals != NULL || q->ring.doorbell == NULL;
  dq_queue_hot_refresh(q);
}

struct hsad_device_kernel {
  const hsad_backend_ops_t *ops;        /* NULL (hsad_object_head_t: AMD) */
  /* read by every dispatch (precomputed at load) */
  uint64_t uid;                         /* unique for the process lifetime: kernarg cache key */
  uint64_t hot_id;                      /* uid below DQ_HOT_KERNEL_UIDS, else 0 (DQ_HOT_KEY) */
  uint32_t max_flat;                    /* min(.max_flat_workgroup_size, device maximum) */
  uint16_t max_dim[3];                  /* device HSA_AGENT_INFO_WORKGROUP_MAX_DIM */
  uint32_t max_grid[3];                 /* device HSA_AGENT_INFO_GRID_MAX_DIM (0: no limit) */
  uint64_t max_grid_items;              /* device HSA_AGENT_INFO_GRID_MAX_SIZE */
  bool has_reqd;                        /* .reqd_workgroup_size declared */
  bool dyn_stack;                       /* .uses_dynamic_stack */
  uint32_t kernarg_copy;                /* bytes of the kernarg segment the hot path copies:
                                           the end of its last declared argument (explicit
                                           or hidden), rounded up to 16, at most the segment
                                           rounded up to 16 (program.c) */
  hsad_device_kernel_desc_t desc;
  hsad_program_t *program;
  const hsad_kernarg_plan_t *plan;
  uint32_t holders;                     /* prepared launches, graph exec kernel nodes and variant
                                           sets that will submit it (hsad_submit_kernel_hold;
                                           __atomic): hsad_program_destroy refuses while > 0 */
};

struct hsad_program {
  const hsad_backend_ops_t *ops;        /* NULL (hsad_object_head_t: AMD) */
  hsad_device_t *device;
  hsad_codeobj_t *codeobj;
  hsa_code_object_reader_t reader;
  hsa_executable_t executable;
  uint32_t kernel_count;
  hsad_device_kernel_t *kernels;
  bool dead;                            /* runtime closed under it */
  hsad_program_t *next;
};

_Static_assert(offsetof(struct hsad_queue, gate) == offsetof(hsad_queue_head_t, gate) &&
                   offsetof(struct hsad_queue, ops) == offsetof(hsad_queue_head_t, ops) &&
                   offsetof(struct hsad_queue, hot_uid) == offsetof(hsad_queue_head_t, hot_uid),
               "an AMD queue begins with the backends' queue head");
_Static_assert(offsetof(struct hsad_device_kernel, ops) == offsetof(hsad_object_head_t, ops) &&
                   offsetof(struct hsad_device_kernel, uid) == offsetof(hsad_object_head_t, uid) &&
                   offsetof(struct hsad_device_kernel, hot_id) == offsetof(hsad_kernel_head_t, hot_id),
               "an AMD kernel begins with the object head");
_Static_assert(offsetof(struct hsad_program, ops) == 0, "an AMD program begins with its ops");

/* A device, queue, program or kernel of another backend (ops set): the cold paths of the
 * public functions hand it to its table. */
#define DQ_FOREIGN(obj) DQ_UNLIKELY((obj) != NULL && (obj)->ops != NULL)

/* HSAD_ERR_UNSUPPORTED "WHO: queue/device ... is an NVIDIA ...: AMD only (...)" */
hsad_status_t dq_amd_only(const char *who, const char *what);

extern hsad_runtime_t hsad_rt;
/* Next unique id for queues and kernels (kernarg cache keys never alias a freed object). */
uint64_t dq_next_uid(void);

/* Records an HSA failure: "what: HSA_STATUS_... (string)". */
hsad_status_t dq_hsa_fail(hsa_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* HSAD_ERR_CLOSED unless the runtime is open (takes no lock: refs read atomically). */
hsad_status_t dq_check_open(void);
bool dq_is_open(void);
/* Closes every live queue and program of the runtime (runtime lock held). */
void dq_queues_close_all(void);
void dq_device_release(hsad_device_t *device);

/* Spare kernarg blocks past the ring's last one for the largest segment (aql_ring.h). */
static inline uint32_t dq_kernarg_spare(uint32_t block, uint32_t size) {
  return dq_ring_kernarg_spare(block, size, DQ_KERNARG_SEGMENT_MAX);
}

/* ---- dispatch.c ---- */
/* Frees the resident kernarg segments of q's destroyed prepared launches whose packets all
 * completed (every one when `all`: the queue is gone); cold. */
void dq_resident_reclaim(hsad_queue_t *q, bool all);
/* The runtime's close (runtime lock held): forgets them, frees their launches; the kernarg
 * memory goes with hsa_shut_down (no device lock taken under the runtime lock). */
void dq_resident_drop(hsad_queue_t *q);

/* ---- queue.c ---- */
/* HSAD_ERR_QUEUE_ERROR / HSAD_ERR_CLOSED with the queue's message (the sticky error is set). */
hsad_status_t dq_queue_fail(const hsad_queue_t *q);

/* ---- capture (dispatch.c; the recorder is fusion/capture.c, hsad_submit.h) ---- */
/* The gate word: nonzero when the queue faulted, was closed or captures (one relaxed load;
 * the cold path re-reads `error` with acquire). */
static inline uint64_t dq_gate(const hsad_queue_t *q) {
  return atomic_load_explicit(&((hsad_queue_t *)q)->gate, memory_order_relaxed);
}
/* Cold: the sticky error when there is one, else HSAD_ERR_INVALID_ARGUMENT "WHO: queue Q is
 * capturing ..." (a submit call that a capture does not record). */
hsad_status_t dq_gate_fail(const hsad_queue_t *q, const char *who);
/* The recorder of a capturing queue (acquire; pairs with hsad_submit_capture_start's release),
 * or NULL (not capturing, or the capture ended since the gate was read). */
static inline const hsad_submit_capture_ops_t *dq_capture_ops(const hsad_queue_t *q) {
  return atomic_load_explicit(&((hsad_queue_t *)q)->capture_ops, memory_order_acquire);
}

/* ---- timeline.c ---- */
/* Creates / destroys the queue's epoch signal, epoch log and (profiling) timestamp signals. */
hsad_status_t dq_timeline_init(hsad_queue_t *q);
void dq_timeline_fini(hsad_queue_t *q);
/* Advances q->ring.retired from the epoch signal; returns the new bound. Thread-safe. */
uint64_t dq_retire(hsad_queue_t *q);
/* The error callback's part: remember the reached epoch, release every waiter. */
void dq_timeline_fault(hsad_queue_t *q);

/* ---- monitor.c ---- */
/* Taken before a monitored submit: the queue's scratch and the submit start time; t1, the
 * submission's end, is set by dq_monitor_close once its doorbell rang. Every record of one
 * submission (a batch, one queue's part of a graph launch) shares t0 and t1, so the host submit
 * intervals of one thread never overlap. */
typedef struct dq_mon_mark {
  uint64_t t0, scratch;
  uint32_t lane;
  uint64_t t1;
} dq_mon_mark_t;
void dq_monitor_begin(hsad_queue_t *q, dq_mon_mark_t *mark);
static inline void dq_monitor_close(dq_mon_mark_t *mark) { mark->t1 = hsad_now_ns(); }
/* Records packet `id` (body d) in q->monitor's ring, with the closed mark's times; never waits
 * (a full ring drops it). */
void dq_monitor_end(hsad_queue_t *q, const hsad_aql_dispatch_t *d, uint64_t id,
                    const dq_mon_mark_t *mark);
/* Queue destruction: alerts of the records left, free (creation: monitor_common.h's
 * dq_monitor_queue_created). */
void dq_monitor_fini(hsad_queue_t *q);

/* ---- launch_check.c ---- */
/* The per-thread result of checking and building one launch. */
typedef struct dq_built {
  hsad_aql_dispatch_t d;          /* checked body: geometry, segments, kernel_object */
  _Alignas(64) uint8_t image[DQ_KERNARG_SEGMENT_MAX];
} dq_built_t;
/* Checks (q, k, l) as hsad_kernel_dispatch documents and builds its kernarg segment into
 * out->image (the kernel's kernarg_segment_size bytes) and the body into out->d (kernarg address and
 * completion signal left 0). Touches no queue state. */
hsad_status_t dq_launch_check(const hsad_queue_t *q, const hsad_device_kernel_t *k,
                              const hsad_launch_t *l, dq_built_t *out);
/* This thread's build of a batch entry or of hsad_submit_check (never held across calls;
 * the launch cache of dispatch.c keeps its own). */
extern _Thread_local dq_built_t dq_scratch;

#pragma GCC visibility pop

#endif
