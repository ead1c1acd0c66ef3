/* hsad_queue.h - hardware queues, kernel dispatch, batches and completions.
 *
 * hsad_queue_t is one ROCr AQL queue (hsa_queue_create, HSA_QUEUE_TYPE_MULTI) into whose ring
 * the library writes packets itself:
 *   1. check the queue's sticky error, the launch geometry and resources against the kernel's
 *      metadata and the device (no queue state touched);
 *   2. build the kernarg segment with codeobj's hsad_kernarg_build into a 64-byte aligned
 *      per-thread block (validation happens here, before anything is reserved). The calling
 *      thread keeps its last checked launch (queue, kernel, geometry, argument values, the
 *      kernarg bytes and the packet body): an identical launch skips steps 1-2 except the
 *      sticky-error check and reuses the bytes (keys are unique ids, never pointers);
 *   3. take a completion signal from the device's bounded pool if the caller asked for one;
 *   4. reserve packet ids with a compare-and-swap on write_dispatch_id only while
 *      write - read < size (backing off while the ring is full, until the caller's deadline:
 *      then HSAD_ERR_TIMEOUT and nothing was reserved, so no hole is ever left for the CP);
 *   5. copy the kernarg segment into the kernarg block bound to the packet slot (a per-queue
 *      ring of size x kernarg_block_size bytes in the device's kernarg pool: block i belongs to
 *      packet slot i, so it is reclaimed exactly when the packet that last used it completed;
 *      the reservation in step 4 proves it: id - size < read_dispatch_id);
 *   6. fill the 64-byte body with the header INVALID, publish `header | setup << 16` with one
 *      32-bit release store, and store the packet id into the doorbell.
 * Steps 3-6 make no allocation, no system call and no ROCr call (the device's signal pool is
 * created with its first queue): the doorbell is stored
 * directly (64-bit AQL doorbell, ROCr AqlQueue::StoreRelaxed for doorbell type 2) and kept
 * monotonic across producers (a software "highest rung" and a re-check, so a late, lower store
 * of one producer never hides a higher packet id another producer rang).
 *
 * Memory ordering: write_dispatch_id CAS acq_rel (the winner owns the slot); read_dispatch_id
 * load acquire (pairs with the CP's release after it is done with the slot and its kernargs);
 * packet body plain stores, then the header release store; doorbell store release; the
 * rung re-check uses a seq_cst fence between the doorbell store and the rung load.
 *
 * Thread safety: every dispatch call is multi-producer safe on one queue without a lock.
 * Create/destroy are not concurrent with use of the same queue. Each dispatching thread keeps
 * about 5 KiB of thread-local state (the last launch, see step 2).
 *
 * Errors of the queue: ROCr's queue error callback stores the HSA status in the queue (sticky).
 * The next dispatch and every wait on that queue return HSAD_ERR_QUEUE_ERROR with the status
 * and message; the callback also completes the queue's outstanding pool signals with -1 so no
 * waiter sleeps past the error (cf. rocm-systems PR #11858). A faulted queue can be destroyed
 * and a new one created.
 */
#ifndef HSAD_QUEUE_H
#define HSAD_QUEUE_H

#include "hsa-dispatch/hsad_aql.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hsad_queue hsad_queue_t;
typedef struct hsad_completion hsad_completion_t;

/* Queue creation options; zero-initialise and set what you need. */
typedef struct hsad_queue_options {
  uint32_t size;                 /* packets, a power of two within the device's queue limits;
                                    0: 1024 (clamped to the device's limits) */
  bool profiling;                /* record start/end of each dispatch that has a completion
                                    (hsa_amd_profiling_set_profiler_enabled) */
  uint32_t private_segment_size; /* scratch bytes per work-item reserved at creation, so no
                                    dispatch up to this size pays for scratch growth; 0: ROCr's
                                    default; must be <= the device's max_private_per_work_item.
                                    ROCr reserves it for every wave slot of the device (bytes x
                                    64 lanes x scratch slots per CU x CUs) and binds at most
                                    146800640 bytes to a queue (AcquireQueueScratch): larger
                                    values fail with HSAD_ERR_HSA; kernels needing more than the
                                    reservation still run (ROCr grows scratch on demand) */
  uint32_t dynamic_stack_size;   /* private bytes per work-item given to kernels with
                                    .uses_dynamic_stack; 0: 16384 (llvm offload's default) */
  uint32_t kernarg_block_size;   /* kernarg bytes per packet slot, a multiple of 64; 0: 512 */
  uint32_t spin_ns;              /* waits spin this long (ns) before blocking; 0: 50000, enough
                                    for a short dependent chain (launch + sync is ~17 us on
                                    bare metal, FBGEMM #6219) without burning a core longer */
} hsad_queue_options_t;

/* Creates a dedicated hardware queue on `device`. options NULL: all defaults.
 * Errors: HSAD_ERR_INVALID_ARGUMENT (size not a power of two or outside
 * [queue_min_size, queue_max_size], kernarg_block_size not a multiple of 64),
 * HSAD_ERR_SCRATCH_LIMIT (private_segment_size above the device limit), HSAD_ERR_CLOSED,
 * HSAD_ERR_HSA (hsa_queue_create or the kernarg allocation failed), HSAD_ERR_OUT_OF_MEMORY. */
hsad_status_t hsad_queue_create(hsad_device_t *device, const hsad_queue_options_t *options,
                                hsad_queue_t **out_queue);

/* Destroys a queue made by hsad_queue_create (the caller ensures no other thread uses it and
 * no packet is waited on). NULL and the device's shared queues are ignored. */
void hsad_queue_destroy(hsad_queue_t *queue);

/* One of the device's shared hardware queues (default options), handed out round-robin: many
 * users share a few hardware queues instead of oversubscribing the runlist (legacy-rocm-build
 * #2705). There are min(2, queues_max) of them, created on first use and owned by the device
 * (never destroy them). A shared queue that reported an error is replaced by a new one for
 * later callers. Thread-safe. Errors: HSAD_ERR_CLOSED, those of hsad_queue_create. */
hsad_status_t hsad_device_queue(hsad_device_t *device, hsad_queue_t **out_queue);

hsad_device_t *hsad_queue_device(const hsad_queue_t *queue);
/* The ROCr queue (read-only use: ring base, size, ids). */
hsa_queue_t *hsad_queue_hsa(const hsad_queue_t *queue);
/* Packets the ring holds. */
uint32_t hsad_queue_size(const hsad_queue_t *queue);

/* The sticky error: HSAD_OK, or HSAD_ERR_QUEUE_ERROR (the ROCr callback's status and message
 * are in hsad_last_error()) or HSAD_ERR_CLOSED (the runtime was closed). */
hsad_status_t hsad_queue_error(const hsad_queue_t *queue);

/* ---- dispatch -------------------------------------------------------------------------- */

enum {
  HSAD_LAUNCH_NO_BARRIER = 1u << 0,   /* clear the packet's BARRIER bit (default: set, so
                                         packets of a queue run in order) */
  HSAD_LAUNCH_FENCE_AGENT = 1u << 1,  /* acquire/release fences at agent scope instead of
                                         system scope (HSA 1.2, 2.9.1) */
};

/* One kernel dispatch. */
typedef struct hsad_launch {
  uint32_t dims;               /* 1..3 */
  uint32_t grid[3];            /* grid size in work-items per dimension; dimensions >= dims
                                  must be 0 or 1 (written as 1) */
  uint32_t block[3];           /* workgroup size in work-items, same rule */
  const hsad_karg_t *args;     /* explicit arguments in .args order (hidden ones are written
                                  by the library from the dispatch and the queue) */
  uint32_t arg_count;
  uint32_t flags;              /* HSAD_LAUNCH_* */
} hsad_launch_t;

/* Checks and submits one kernel dispatch (steps 1-6 above). With out_completion non-NULL a
 * pool signal is attached and returned (wait on it, then release it); NULL: fire-and-forget,
 * no signal. out_packet_id (may be NULL): the packet id used. deadline_ns: CLOCK_MONOTONIC ns
 * (hsad_now_ns) until which a full ring is waited out; 0 = do not wait.
 * Checks (in this order, each with its own code and a message giving the numbers):
 *   HSAD_ERR_QUEUE_ERROR / HSAD_ERR_CLOSED   the queue's sticky error;
 *   HSAD_ERR_INVALID_ARGUMENT  NULL queue/kernel/launch, kernel of another device;
 *   HSAD_ERR_GRID       dims not 1..3, a grid size 0, or an unused dimension not 1;
 *   HSAD_ERR_WORKGROUP  a workgroup size 0, above the device's per-dimension maximum, a flat
 *                       size above .max_flat_workgroup_size (or the device's), or different
 *                       from .reqd_workgroup_size when the kernel declares one;
 *   HSAD_ERR_ARG_COUNT / HSAD_ERR_ARG_SIZE / HSAD_ERR_ARG_KIND / HSAD_ERR_ARG_VALUE  from
 *                       hsad_kernarg_build (names the argument);
 *   HSAD_ERR_RESOURCE_EXHAUSTED  kernarg segment larger than the queue's kernarg_block_size,
 *                       or the signal pool is empty;
 *   HSAD_ERR_LDS_LIMIT  group segment (fixed + dynamic LDS) above the device's LDS;
 *   HSAD_ERR_SCRATCH_LIMIT  private segment (fixed, or the queue's dynamic_stack_size for
 *                       .uses_dynamic_stack) x wavefront size above HSAD_MAX_WAVE_SCRATCH;
 *   HSAD_ERR_TIMEOUT    the ring stayed full until the deadline (nothing reserved).
 * Thread-safe (multi-producer) without a lock. */
hsad_status_t hsad_kernel_dispatch(hsad_queue_t *queue, const hsad_device_kernel_t *kernel,
                                   const hsad_launch_t *launch, uint64_t deadline_ns,
                                   hsad_completion_t **out_completion, uint64_t *out_packet_id);

/* A launch checked and built once (packet body, header, kernarg image) for repeated
 * submission on one queue: what a runtime records once and replays. Opaque; owned by the
 * caller, created by hsad_launch_prepare and freed by hsad_launch_destroy, which must happen
 * before its queue is destroyed. Immutable after creation: any number of threads may submit it
 * at once. */
typedef struct hsad_prepared_launch hsad_prepared_launch_t;

/* Runs every check of hsad_kernel_dispatch on (queue, kernel, launch) and builds the kernarg
 * image (launch->args are copied; pointers they hold must stay valid for the GPU). Errors: as
 * hsad_kernel_dispatch (except TIMEOUT), HSAD_ERR_OUT_OF_MEMORY. Thread-safe. */
hsad_status_t hsad_launch_prepare(hsad_queue_t *queue, const hsad_device_kernel_t *kernel,
                                  const hsad_launch_t *launch,
                                  hsad_prepared_launch_t **out_prepared);

/* Submits a prepared launch on its queue: reserve a slot (waiting for room until deadline_ns),
 * copy the kernarg image into the slot's kernarg block, fill the body, publish the header,
 * ring the doorbell. No argument checks, no kernarg build: the per-submit work is what the
 * textbook ROCr sequence does plus the kernarg copy. out_completion / out_packet_id as in
 * hsad_kernel_dispatch. Errors: HSAD_ERR_INVALID_ARGUMENT (NULL), the queue's sticky error,
 * HSAD_ERR_RESOURCE_EXHAUSTED (signal pool empty), HSAD_ERR_TIMEOUT (nothing reserved).
 * Thread-safe (multi-producer) without a lock. */
hsad_status_t hsad_prepared_dispatch(const hsad_prepared_launch_t *prepared, uint64_t deadline_ns,
                                     hsad_completion_t **out_completion,
                                     uint64_t *out_packet_id);

/* Frees a prepared launch (NULL is a no-op). Packets already submitted are unaffected. */
void hsad_launch_destroy(hsad_prepared_launch_t *prepared);

/* One entry of a batch. */
typedef struct hsad_dispatch_desc {
  const hsad_device_kernel_t *kernel;
  hsad_launch_t launch;
} hsad_dispatch_desc_t;

/* Submits `count` dispatches as one contiguous run of packets: all are checked and their
 * kernargs validated first; then `count` slots are reserved at once (count <= queue size),
 * every body filled with INVALID headers, headers published last-to-first with the FIRST
 * packet's header last, and the doorbell rung once with the LAST packet id (a doorbell with
 * the first id hung HIP graphs, rocm-systems PR #3040). out_completion (may be NULL) is attached
 * to the last packet only. out_first_packet_id may be NULL. Errors: as hsad_kernel_dispatch
 * (the message names the failing entry), HSAD_ERR_INVALID_ARGUMENT (count 0 or above the
 * queue size). Thread-safe. */
hsad_status_t hsad_queue_dispatch_batch(hsad_queue_t *queue, const hsad_dispatch_desc_t *items,
                                        uint32_t count, uint64_t deadline_ns,
                                        hsad_completion_t **out_completion,
                                        uint64_t *out_first_packet_id);

/* Submits a barrier-AND packet (BARRIER bit set) that waits for up to 5 completions (NULL
 * entries are satisfied) and optionally carries its own completion. Errors: as for dispatch
 * (queue error, timeout, pool empty). Thread-safe. */
hsad_status_t hsad_queue_barrier(hsad_queue_t *queue, hsad_completion_t *const deps[5],
                                 uint64_t deadline_ns, hsad_completion_t **out_completion);

/* Waits until every packet reserved on the queue so far completed (read index reaches the
 * write index seen at entry), spinning spin_ns then sleeping with back-off (<= 1 ms).
 * Errors: HSAD_ERR_QUEUE_ERROR, HSAD_ERR_CLOSED, HSAD_ERR_TIMEOUT. Thread-safe. */
hsad_status_t hsad_queue_wait_idle(hsad_queue_t *queue, uint64_t deadline_ns);

/* ---- completions (pooled HSA signals) ------------------------------------------------- */

/* Waits until the packet carrying `completion` completed: spins the queue's spin_ns reading
 * the signal value, then blocks in hsa_signal_wait_scacquire in slices (<= 10 ms, so a queue
 * error and the deadline are seen). Errors: HSAD_ERR_TIMEOUT (deadline passed; the completion
 * stays valid, wait again or release it), HSAD_ERR_QUEUE_ERROR (the queue faulted, returned
 * to every waiter on it), HSAD_ERR_CLOSED, HSAD_ERR_INVALID_ARGUMENT. Thread-safe. */
hsad_status_t hsad_completion_wait(hsad_completion_t *completion, uint64_t deadline_ns);

/* True once the packet completed (value < 1); never blocks. */
bool hsad_completion_done(const hsad_completion_t *completion);

/* Start and end of the dispatch in ns of the system timestamp domain
 * (hsa_amd_profiling_get_dispatch_time scaled by HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY).
 * Errors: HSAD_ERR_UNSUPPORTED (queue created without profiling), HSAD_ERR_INVALID_ARGUMENT
 * (not completed yet), HSAD_ERR_HSA. */
hsad_status_t hsad_completion_times(const hsad_completion_t *completion, uint64_t *out_start_ns,
                                    uint64_t *out_end_ns);

/* Returns the signal to the device's pool. A completion still in flight is parked and
 * recycled only after its packet completed. NULL ok. Thread-safe. */
void hsad_completion_release(hsad_completion_t *completion);

/* Capacity of each device's signal pool (bounded: KFD events are a finite resource). */
#define HSAD_SIGNAL_POOL_SIZE 256

#ifdef __cplusplus
}
#endif
#endif /* HSAD_QUEUE_H */
