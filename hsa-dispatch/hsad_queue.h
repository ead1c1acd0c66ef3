/* hsad_queue.h - hardware queues, kernel dispatch, batches, barriers and completion timelines.
 *
 * Both vendors (hsad_vendor.h): what follows describes AMD's queues, where the library writes
 * AQL packets itself. On an NVIDIA device (nvidia/, README "NVIDIA GPUs") the same calls take
 * the same types: a queue is a CUDA stream (size, kernarg blocks and scratch options do not
 * apply; hsad_queue_size is 0; profiling brackets each dispatch that has a completion with a
 * cuEventRecord pair, read by hsad_completion_times, issue 22); hsad_kernel_dispatch runs the checks of step 1 with the
 * same codes and messages over cuFuncGetParamInfo's layout, launches ceil(grid / block) blocks
 * (dynamic shared memory: one HSAD_KARG_LDS_BYTES after the parameters) and never waits
 * (deadline_ns unused); a completion is an epoch of the stream's counter in host-mapped
 * memory (cuStreamWriteValue64), with the same meaning: a value, nothing to release, waited
 * from any thread, a fault reaches every waiter; hsad_queue_barrier on another NVIDIA queue is
 * cuStreamWaitValue64, on an AMD completion a host wait (and the reverse). AMD-only calls
 * (HSA signals, prepared launches, device times, monitoring, capture) answer
 * HSAD_ERR_UNSUPPORTED for an NVIDIA queue.
 *
 * hsad_queue_t is one ROCr AQL queue (hsa_queue_create, HSA_QUEUE_TYPE_MULTI) into whose ring
 * the library writes packets itself. The submit contract, step by step (each step is a place
 * a bug would break it; tests/mutation/ keeps one deliberate bug per step):
 *   1. check: the queue's sticky error, the launch geometry and resources against the kernel's
 *      metadata and the device (no queue state touched);
 *   2. build: the kernarg segment (codeobj's hsad_kernarg_build) into a 64-byte aligned
 *      per-thread image. The calling thread keeps its last checked launch (queue, kernel,
 *      geometry, argument signature or values, kernarg bytes, packet body): a launch that
 *      matches it skips 1-2 except the sticky-error check (keys are unique ids, never
 *      pointers; the queue's key is 0 while it has a sticky error, captures or takes the
 *      general path, so the key compare is that check; "The argument path" below);
 *   3. reserve: packet ids with a compare-and-swap on write_dispatch_id, only while
 *      write + n - retired <= size, where `retired` is the queue's completion bound (every
 *      packet id below it COMPLETED, see "timeline"). Not the read index: the packet processor
 *      may advance read_dispatch_id once it launched a packet, before the kernel finished (HSA
 *      1.2 system architecture 2.8.3; ROCR-Runtime #105). A full ring is waited out until the
 *      caller's deadline (then HSAD_ERR_TIMEOUT with nothing reserved: no hole for the CP);
 *   4. kernarg copy: the image (on a launch-cache hit its declared bytes, "The argument
 *      path" below) goes into the kernarg block bound to the packet's slot
 *      (kernargs + (id % size) x kernarg_block_size, in the device's kernarg pool): the
 *      reservation proved that the packet which last used the block (id - size) completed.
 *      A kernarg segment larger than one block spans m = ceil(segment / block) blocks: the
 *      dispatch reserves m consecutive slots, takes the first and fills the other m - 1 with
 *      padding barrier-AND packets (no dependencies, BARRIER bit clear: they complete at once
 *      and hold nothing back), so the blocks it writes belong to slots it owns; a block run
 *      that passes the ring's end continues into m - 1 spare blocks past the last one (never
 *      bound to a slot), so a segment is always contiguous. The next kernarg-using reservation
 *      that covers block id + j (a dispatch at id + j + size or later; barrier packets, which
 *      are reserved by the read index, write no kernarg block) waits until `retired` passed
 *      id + j, i.e. until the dispatch at id, ahead of its padding, completed. A span needs m
 *      free slots at once: on a busy shared queue, single-slot producers may take slots as
 *      they free and keep it waiting until its deadline (TIMEOUT); a queue of its own whose
 *      kernarg_block_size holds the segment avoids both the padding and the wait;
 *   5. body: the 64-byte packet is filled while its header is INVALID;
 *   6. publish: `header | setup << 16` with one 32-bit release store; a batch publishes its
 *      headers last-to-first so the first packet becomes valid last;
 *   7. doorbell: the packet id (a batch: its LAST id; the first id hung HIP graphs,
 *      rocm-systems PR #3040) is stored into the 64-bit doorbell; then the write index is
 *      read, and while it shows a later id reserved the highest reserved id is stored, so
 *      the doorbell ends at the highest id any producer published (aql_ring.h says why; a
 *      doorbell above a packet still being written is allowed: the packet processor waits
 *      for its header);
 *   8. completion: only where the caller asked for one (see "timeline");
 *   9. reclaim: `retired` advances from the timeline, so slots and kernarg blocks are reused
 *      on completion only;
 *  10. errors: ROCr's queue error callback makes the error sticky and releases every waiter.
 * Steps 3-7 make no allocation, no system call and no ROCr call.
 *
 * The argument path (issue 23). An argument travels one way: the caller's hsad_karg_t (the
 * CLI binds its strings into them, tools/hsad cli_args.c), then a plan, checked once, cold,
 * then an emplace, hot and short. The plan is steps 1-2 on a miss: every check with its
 * message (launch_check.c), the kernarg image built from the kernel's metadata, the packet's
 * bytes 4..63, the header word per launch flag, the bytes to copy, and the key kept by the
 * calling thread (launch_cache.h): the queue and kernel uids, the argument count and the
 * launch flags, the geometry, then either the arguments' signature or their values. A launch of at most 4 explicit
 * arguments, each a POINTER in an 8-byte slot or 4 BYTES (typed or not), laid out naturally
 * (each at the previous one's end aligned to its size: what OpenCL and HIP compilers emit), is
 * entered by signature: a hit checks each argument's tag and type (a POINTER: {POINTER, 0}; 4
 * BYTES: the tag, type and size the plan checked, and `bytes` not NULL) but not its value, and
 * writes the values into the image at their offsets, so a launch that changes only its buffers
 * or counts is a hit (a value does not enter any check: a pointer fills its 8-byte slot, 4
 * bytes are copied as they are; the hidden arguments depend on the kernel, the queue and the
 * geometry only). Any other launch (SCALAR or LDS values, other sizes, more arguments, a
 * 4-byte pointer slot, whose value must fit) is entered by value: each argument's compared
 * bytes (tag and type; a pointer's value; LDS bytes; BYTES size, then its value). A launch that
 * differs from the entry's in anything its key holds (another type, size or tag, NULL bytes or
 * args) takes the general path, whose check reports it with its own message. The emplace is
 * what a hit costs: the key compared (the queue, its sticky error, capture and mode, and the
 * kernel as one 8-byte compare of the kernel's hot id xor'ed with the queue's hot key, exact by
 * construction: dispatch_internal.h DQ_HOT_KEY; count and flags as one 8-byte compare, the
 * geometry as two 16-byte differences tested at once; a signature, through its case's address
 * kept in the entry, as one compare per argument and a value write; values as one masked
 * 16-byte compare per argument,
 * then each BYTES value), one try at the reservation (a full ring, a lost race, a completion, a
 * monitored or profiling queue, a span over one block take the general path, which waits and
 * pads), the image's declared bytes into the slot's block (up to the end of the kernel's last
 * declared argument, explicit or hidden, rounded up to 16: code object v5's 256-byte hidden
 * block is mostly beyond it; vector_add copies 112 of 288 bytes; the rest of the block is left
 * as it was, no argument occupies it) - or, when the slot's block already holds this entry's
 * image (its kernarg stamp is the entry's: the hot path copied it there a lap of the ring
 * ago and no other writer touched the block since, aql_ring.h), only the image's first 32
 * bytes, the explicit arguments - the cached bytes 4..63 with the block's address, the
 * header word, the doorbell. The only dimension check on a hit is the key's equality: the
 * geometry was checked when the plan was made. A prepared launch (hsad_launch_prepare) is the
 * plan kept by the caller with its kernarg segment resident: written once into kernarg memory
 * of its own, which every packet of the launch points at, so a submit copies no argument; the
 * segment is immutable (a prepared launch cannot change) and outlives hsad_launch_destroy until
 * the queue retired every packet reserved before it (then reused; at the latest freed with the
 * queue), so packets in flight read the values they were submitted with.
 *
 * Timeline (the completion model). Each queue owns one HSA signal, its epoch signal, created
 * at EPOCH_BASE (2^62). A packet that carries a completion ("an epoch packet") has the
 * BARRIER bit set and the epoch signal as its completion signal, so the CP decrements it by
 * one when that packet and, by the barrier bit, every earlier packet of the queue completed.
 * Epoch packets therefore complete in ring order, and the k-th one completed exactly when the
 * signal value is <= EPOCH_BASE - k. A completion is the value (queue, k): copyable, never
 * recycled, so it can be waited on by any number of threads and device-side waiters at any
 * time (no pool to run dry; cf. the 256-signal pool this replaces, whose recycled signals hung
 * cross-queue barriers). Fire-and-forget dispatches carry no signal (no host-visible
 * completion, no interrupt): their slots are reclaimed when a later epoch packet completed; a
 * producer that finds the ring full with no epoch packet in flight adds one (a barrier-AND
 * with no dependencies), so reclaim always makes progress. A dispatch with
 * HSAD_LAUNCH_NO_BARRIER, or on a profiling queue, that asks for a completion is followed by
 * such a barrier-AND carrying the epoch (one more packet) instead of losing its overlap.
 * Epoch numbers follow ring order: an epoch packet is reserved and numbered under a per-queue
 * spinlock held for a handful of instructions (never while waiting for room).
 *
 * Memory ordering: write_dispatch_id CAS seq_cst (the winner owns the slot); `retired` (and
 * its reserve_end) load acquire (pairs with the release that published it, after the epoch
 * signal's acquire load showed the completion); packet body plain stores, then the header
 * release store; doorbell store release, then a seq_cst fence and a seq_cst load of the write
 * index.
 *
 * Thread safety: every dispatch, barrier and wait call is multi-producer safe on one queue.
 * Create/destroy are not concurrent with use of the same queue. Each dispatching thread keeps
 * about 26 KiB of thread-local state (the last launch with its kernarg image, see step 2; one
 * more image for batches and fusion/, each HSAD_KERNARG_SEGMENT_MAX bytes).
 *
 * Errors of the queue: ROCr's queue error callback stores the HSA status in the queue
 * (sticky), remembers how many epochs had completed, and stores 0 into the epoch signal so
 * every host and device waiter wakes at once (cf. rocm-systems PR #11858: a suspended queue
 * must not leave waiters asleep). Waits on a completion the queue did not reach return
 * HSAD_ERR_QUEUE_ERROR; device-side waiters on other queues are released (their queue goes
 * on; check the source queue's error). A faulted queue can be destroyed and a new one created.
 */
#ifndef HSAD_QUEUE_H
#define HSAD_QUEUE_H

#include "codeobj/hsad_codeobj.h"
#include "common/hsad_status.h"
#include "hsa-dispatch/hsad_vendor.h"
#ifndef HSAD_NO_AMD
#include "hsa-dispatch/hsad_aql.h"
#endif

/* Declared (and documented) in hsad.h, which includes this header; repeated here so that this
 * header compiles on its own too. */
typedef struct hsad_device hsad_device_t;
typedef struct hsad_device_kernel hsad_device_kernel_t;

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hsad_queue hsad_queue_t;

/* A point on a queue's completion timeline (see "Timeline" above). A plain value: copy it,
 * keep it, wait on it from any thread, any number of times; there is nothing to release.
 * Valid while its queue exists. A zero-initialised completion (queue NULL) is already done. */
typedef struct hsad_completion {
  hsad_queue_t *queue;   /* queue whose epoch signal counts it; NULL: empty, always done */
  uint64_t epoch;        /* 1-based epoch number on that queue (0: nothing to wait for) */
  uint64_t packet_id;    /* the packet it covers: the dispatch itself (its profiling
                            timestamps), or the last packet of a batch / barrier */
} hsad_completion_t;

/* The largest kernarg segment (explicit and hidden arguments, .kernarg_segment_size) any
 * queue dispatches, in bytes: CUDA's and HIP's 4 KiB of kernel parameters plus the hidden
 * arguments of code object v5 (256 bytes), with room to spare. Larger segments are
 * HSAD_ERR_RESOURCE_EXHAUSTED at dispatch. */
#define HSAD_KERNARG_SEGMENT_MAX 8192

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
  uint32_t kernarg_block_size;   /* kernarg bytes per packet slot, a multiple of 64 up to
                                    HSAD_KERNARG_SEGMENT_MAX; 0: 512. A kernel whose kernarg
                                    segment is larger still runs: it takes ceil(segment /
                                    block) slots (step 4 above) */
  uint32_t spin_ns;              /* waits spin this long (ns) before blocking; 0: 50000, enough
                                    for a short dependent chain (launch + sync is ~17 us on
                                    bare metal, FBGEMM #6219) without burning a core longer */
} hsad_queue_options_t;

/* Creates a dedicated hardware queue on `device`. options NULL: all defaults.
 * Errors: HSAD_ERR_INVALID_ARGUMENT (size not a power of two or outside
 * [queue_min_size, queue_max_size], kernarg_block_size not a multiple of 64 or above
 * HSAD_KERNARG_SEGMENT_MAX), HSAD_ERR_SCRATCH_LIMIT
 * (private_segment_size above the device limit), HSAD_ERR_CLOSED,
 * HSAD_ERR_HSA (hsa_queue_create or the kernarg allocation failed), HSAD_ERR_OUT_OF_MEMORY. */
hsad_status_t hsad_queue_create(hsad_device_t *device, const hsad_queue_options_t *options,
                                hsad_queue_t **out_queue);

/* Destroys a queue made by hsad_queue_create (the caller ensures no other thread uses it and
 * no packet is waited on). NULL and the device's shared queues are ignored. It does not wait
 * for the queue's packets first: ROCr's hsa_queue_destroy makes the KFD preempt the queue
 * (queue_preemption_timeout_ms), dropping the dispatch in flight and every later packet;
 * kfd-emu does the same at its preemption points (hsad_runtime_close in hsad.h says where,
 * and its limit: a workgroup already running on a host thread). To let the packets finish
 * first, bounded: hsad_queue_destroy_deadline. */
void hsad_queue_destroy(hsad_queue_t *queue);

/* Teardown with a deadline (issue 21): waits until every packet reserved on the queue so far
 * completed (hsad_queue_wait_idle: a flush barrier-AND, then the completion wait; never the
 * read index), then destroys the queue as hsad_queue_destroy does (nothing is running, so
 * hsa_queue_destroy returns at once). A queue that faulted, or whose runtime was closed,
 * runs nothing more and is destroyed at once. NULL: HSAD_OK.
 * On HSAD_ERR_TIMEOUT the queue is NOT destroyed: it stays live and usable, unchanged but for
 * the flush's barrier-AND packet (which orders nothing new: every later packet would wait for
 * the earlier ones anyway), and its packets still run. The caller may call again with a later
 * deadline, or, for a kernel that never ends, abort it: hsad_queue_destroy (or
 * hsad_runtime_close) preempts the queue and drops its work, as hardware does.
 * Errors: HSAD_ERR_TIMEOUT "hsad_queue_destroy_deadline: queue ID on device N: packets A to B
 * had not completed by the deadline; the oldest, packet P, a dispatch of kernel 'NAME'. Not
 * destroyed: ..." (the kernel part when a packet in A..B dispatches a kernel of a live
 * program); HSAD_ERR_INVALID_ARGUMENT (a shared queue of hsad_device_queue: the runtime owns
 * it; a capturing queue). The caller ensures no other thread submits to the queue meanwhile.
 * NVIDIA queues: the same wait, then the backend's destroy. */
hsad_status_t hsad_queue_destroy_deadline(hsad_queue_t *queue, uint64_t deadline_ns);

/* One of the device's shared hardware queues (default options), handed out round-robin: many
 * users share a few hardware queues instead of oversubscribing the runlist (legacy-rocm-build
 * #2705). There are min(2, queues_max) of them, created on first use and owned by the device
 * (never destroy them). A shared queue that reported an error is replaced by a new one for
 * later callers. Thread-safe. Errors: HSAD_ERR_CLOSED, those of hsad_queue_create. */
hsad_status_t hsad_device_queue(hsad_device_t *device, hsad_queue_t **out_queue);

hsad_device_t *hsad_queue_device(const hsad_queue_t *queue);
#ifndef HSAD_NO_AMD
/* AMD only: the ROCr queue (read-only use: ring base, size, ids); NULL for another vendor's. */
hsa_queue_t *hsad_queue_hsa(const hsad_queue_t *queue);
#endif
/* Packets the ring holds. */
uint32_t hsad_queue_size(const hsad_queue_t *queue);

/* The sticky error: HSAD_OK, or HSAD_ERR_QUEUE_ERROR (the ROCr callback's status and message
 * are in hsad_last_error(): "queue Q on device D (ISA) faulted: HSA status 0x.. (ROCr's
 * string); " then the advice, "destroy it and create a new queue", or for a shared queue "a
 * shared queue: hsad_device_queue hands out its replacement") or HSAD_ERR_CLOSED (the runtime
 * was closed). */
hsad_status_t hsad_queue_error(const hsad_queue_t *queue);

/* ---- dispatch -------------------------------------------------------------------------- */

enum {
  HSAD_LAUNCH_NO_BARRIER = 1u << 0,   /* clear the packet's BARRIER bit (default: set, so
                                         packets of a queue run in order) */
  HSAD_LAUNCH_FENCE_AGENT = 1u << 1,  /* acquire/release fences at agent scope instead of
                                         system scope (HSA 1.2, 2.9.1) */
};
/* hsad_aql_kernel_header_of_flags indexes its table with these two bits. */
HSAD_STATIC_ASSERT(HSAD_LAUNCH_NO_BARRIER == 1 && HSAD_LAUNCH_FENCE_AGENT == 2,
                   "launch flag bits of the kernel dispatch header table (hsad_aql.h)");

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

/* Checks and submits one kernel dispatch (steps 1-7 above). out_completion NULL:
 * fire-and-forget (no signal on the packet). Non-NULL: the packet becomes an epoch packet
 * (BARRIER bit set) and *out_completion covers it and every earlier packet of the queue;
 * with HSAD_LAUNCH_NO_BARRIER or on a profiling queue a barrier-AND carrying the epoch
 * follows the dispatch instead (its id is packet_id + 1). A kernarg segment larger than the
 * queue's kernarg_block_size makes the dispatch take m slots (step 4); with a completion the
 * last padding packet carries the epoch (BARRIER bit set). out_packet_id (may be NULL): the
 * dispatch's packet id. deadline_ns: CLOCK_MONOTONIC ns (hsad_now_ns) until which a full ring
 * is waited out; 0 = do not wait.
 * Checks (in this order, each with its own code and a message giving the numbers):
 *   HSAD_ERR_QUEUE_ERROR / HSAD_ERR_CLOSED   the queue's sticky error;
 *   HSAD_ERR_INVALID_ARGUMENT  NULL queue/kernel/launch, kernel of another device;
 *   HSAD_ERR_GRID       dims not 1..3, a grid size 0, a dimension above
 *                       HSA_AGENT_INFO_GRID_MAX_DIM, an unused dimension not 1, or the whole
 *                       grid's work-items (grid[0] x grid[1] x grid[2]) above
 *                       HSA_AGENT_INFO_GRID_MAX_SIZE (HSA runtime spec 2.3.1; ROCr: UINT32_MAX);
 *   HSAD_ERR_WORKGROUP  a workgroup size 0, above the device's per-dimension maximum, a flat
 *                       size above .max_flat_workgroup_size (or the device's), or different
 *                       from .reqd_workgroup_size when the kernel declares one;
 *   HSAD_ERR_ARG_COUNT / HSAD_ERR_ARG_SIZE / HSAD_ERR_ARG_KIND / HSAD_ERR_ARG_VALUE  from
 *                       hsad_kernarg_build (names the argument; ARG_KIND also for a typed
 *                       value of the wrong kind, a float for an integer parameter or the
 *                       reverse: hsad_codeobj_kernarg.h's type check, run on a launch-cache
 *                       miss; a hit needs the same tag and type as the entry);
 *   HSAD_ERR_RESOURCE_EXHAUSTED  kernarg segment above HSAD_KERNARG_SEGMENT_MAX, or one
 *                       spanning more kernarg blocks (slots) than the ring has;
 *   HSAD_ERR_LDS_LIMIT  group segment (fixed + dynamic LDS) above the device's LDS;
 *   HSAD_ERR_SCRATCH_LIMIT  private segment (fixed, or the queue's dynamic_stack_size for
 *                       .uses_dynamic_stack) x wavefront size above HSAD_MAX_WAVE_SCRATCH;
 *   HSAD_ERR_TIMEOUT    the ring stayed full (of packets not yet completed) until the
 *                       deadline; nothing of this call was reserved. While it waited, the
 *                       queue may have added one epoch barrier-AND (an empty packet, so that
 *                       fire-and-forget work can be reclaimed: "Timeline" above), so the
 *                       write index can move by one.
 * Thread-safe (multi-producer); fire-and-forget submits take no lock. */
hsad_status_t hsad_kernel_dispatch(hsad_queue_t *queue, const hsad_device_kernel_t *kernel,
                                   const hsad_launch_t *launch, uint64_t deadline_ns,
                                   hsad_completion_t *out_completion, uint64_t *out_packet_id);

/* A launch checked and built once (packet body, header, kernarg segment) for repeated
 * submission on one queue: what a runtime records once and replays. Its kernarg segment is
 * resident: written once at prepare time into kernarg memory the launch owns (the device's
 * kernarg pool, hsad_submit_kernarg_alloc), and every packet of the launch points at it (see
 * "The argument path" above). Opaque; owned by the caller, created by hsad_launch_prepare and
 * freed by hsad_launch_destroy, which must happen before its queue is destroyed. Immutable
 * after creation: any number of threads may submit it at once. */
typedef struct hsad_prepared_launch hsad_prepared_launch_t;

/* Runs every check of hsad_kernel_dispatch on (queue, kernel, launch) and writes the kernarg
 * segment once into the launch's resident kernarg memory (launch->args are copied; pointers
 * they hold must stay valid for the GPU). Also frees the segments of destroyed launches whose
 * packets all completed. The launch holds the kernel: hsad_program_destroy of its program is
 * HSAD_ERR_IN_USE until hsad_launch_destroy. Errors: as hsad_kernel_dispatch (except TIMEOUT),
 * HSAD_ERR_OUT_OF_MEMORY, those of hsad_submit_kernarg_alloc (the segment). Thread-safe. */
hsad_status_t hsad_launch_prepare(hsad_queue_t *queue, const hsad_device_kernel_t *kernel,
                                  const hsad_launch_t *launch,
                                  hsad_prepared_launch_t **out_prepared);

/* Submits a prepared launch on its queue: reserve one slot (the segment is not in the ring,
 * so a segment above kernarg_block_size takes no padding), waiting for room until
 * deadline_ns, fill the body with the resident segment's address (nothing is copied; a
 * kernel without kernarg segment gets its slot's block, as hsad_kernel_dispatch gives it),
 * publish the header, ring the doorbell. No argument checks, no kernarg build. out_completion
 * / out_packet_id as in hsad_kernel_dispatch. Errors: HSAD_ERR_INVALID_ARGUMENT (NULL), the
 * queue's sticky error, HSAD_ERR_TIMEOUT (nothing reserved). Thread-safe (multi-producer). */
hsad_status_t hsad_prepared_dispatch(const hsad_prepared_launch_t *prepared, uint64_t deadline_ns,
                                     hsad_completion_t *out_completion, uint64_t *out_packet_id);

/* Frees a prepared launch (NULL is a no-op); not concurrent with submits of it. Packets
 * already submitted are unaffected: its resident segment is kept until the queue retired every
 * packet reserved so far (freed by a later hsad_launch_prepare / hsad_launch_destroy on the
 * queue, or with the queue). */
void hsad_launch_destroy(hsad_prepared_launch_t *prepared);

/* One entry of a batch. */
typedef struct hsad_dispatch_desc {
  const hsad_device_kernel_t *kernel;
  hsad_launch_t launch;
} hsad_dispatch_desc_t;

/* Submits `count` dispatches as one contiguous run of packets: all are checked and their
 * kernargs validated first; then the slots are reserved at once, every body filled with
 * INVALID headers, headers published last-to-first with the FIRST packet's header last, and
 * the doorbell rung once with the LAST packet id (rocm-systems PR #3040). out_completion (may
 * be NULL) covers the whole batch (the last packet carries the epoch, or a barrier-AND after
 * it, as for hsad_kernel_dispatch). An entry whose kernarg segment spans m kernarg blocks
 * takes m slots (its padding follows it). out_first_packet_id may be NULL. Errors: as
 * hsad_kernel_dispatch (the message names the failing entry), HSAD_ERR_INVALID_ARGUMENT
 * (count 0, or the packets (dispatches, padding, the completion's barrier) above the queue
 * size). Thread-safe. */
hsad_status_t hsad_queue_dispatch_batch(hsad_queue_t *queue, const hsad_dispatch_desc_t *items,
                                        uint32_t count, uint64_t deadline_ns,
                                        hsad_completion_t *out_completion,
                                        uint64_t *out_first_packet_id);

/* Orders the queue after `deps` (any number, any queues and devices; empty completions are
 * satisfied): deps on this queue need no packet (the barrier bit orders them); deps on other
 * queues collapse to the latest epoch per queue, each waited on by one AMD barrier-value
 * packet (HSA_AMD_PACKET_TYPE_BARRIER_VALUE: epoch signal < EPOCH_BASE - k + 1), every packet
 * with the BARRIER bit. With no cross-queue dep, one barrier-AND (BARRIER bit, system-scope
 * fences), also when there are no deps and no out_completion: an explicit ordering point,
 * after which packets submitted with HSAD_LAUNCH_NO_BARRIER still start only when everything
 * before it completed (HSA 1.2 system architecture 2.9.8). out_completion (may be NULL)
 * covers the barrier and everything before it on this queue. Errors: the queue's sticky
 * error, HSAD_ERR_INVALID_ARGUMENT (NULL queue, deps NULL with dep_count > 0, more distinct
 * queues than the ring holds), HSAD_ERR_TIMEOUT (nothing reserved). Thread-safe. */
hsad_status_t hsad_queue_barrier(hsad_queue_t *queue, const hsad_completion_t *deps,
                                 uint32_t dep_count, uint64_t deadline_ns,
                                 hsad_completion_t *out_completion);

#ifndef HSAD_NO_AMD
/* As hsad_queue_barrier, and also waits for raw HSA signals to reach 0 (barrier-AND packets,
 * 5 dep_signals each; e.g. the completion signal of hsa_amd_memory_async_copy), and decrements
 * `decrement` (handle 0: none) when all of it is satisfied (the last packet carries it; with
 * out_completion too, a barrier-AND carrying the epoch follows). For bridging ROCr's
 * signal-based APIs to timelines. Errors as hsad_queue_barrier. Thread-safe. */
hsad_status_t hsad_queue_barrier_signals(hsad_queue_t *queue, const hsad_completion_t *deps,
                                         uint32_t dep_count, const hsa_signal_t *and_signals,
                                         uint32_t signal_count, hsa_signal_t decrement,
                                         uint64_t deadline_ns, hsad_completion_t *out_completion);
#endif

/* A completion covering every packet reserved on the queue so far: the last epoch when no
 * packet followed it, otherwise a new barrier-AND epoch packet. Errors: the queue's sticky
 * error, HSAD_ERR_INVALID_ARGUMENT, HSAD_ERR_TIMEOUT. Thread-safe. */
hsad_status_t hsad_queue_flush(hsad_queue_t *queue, uint64_t deadline_ns,
                               hsad_completion_t *out_completion);

/* Waits until every packet reserved on the queue so far COMPLETED (hsad_queue_flush, then
 * hsad_completion_wait; never the read index alone, which may pass a running kernel).
 * Errors: HSAD_ERR_QUEUE_ERROR, HSAD_ERR_CLOSED, HSAD_ERR_TIMEOUT. Thread-safe. */
hsad_status_t hsad_queue_wait_idle(hsad_queue_t *queue, uint64_t deadline_ns);

/* ---- completions ----------------------------------------------------------------------- */

/* Waits until the completion's epoch was reached: spins the queue's spin_ns reading the
 * epoch signal, then blocks in hsa_signal_wait_scacquire in slices (<= 10 ms, so a queue
 * error and the deadline are seen). Errors: HSAD_ERR_TIMEOUT (deadline passed; wait again
 * later), HSAD_ERR_QUEUE_ERROR (the queue faulted before reaching the epoch), HSAD_ERR_CLOSED,
 * HSAD_ERR_INVALID_ARGUMENT (NULL, or an epoch the queue never issued). Thread-safe. */
hsad_status_t hsad_completion_wait(const hsad_completion_t *completion, uint64_t deadline_ns);

/* Waits for all `count` completions (one deadline for all). Errors as hsad_completion_wait;
 * the message names the index that failed. */
hsad_status_t hsad_completion_wait_all(const hsad_completion_t *completions, uint32_t count,
                                       uint64_t deadline_ns);

/* Waits until any one of `count` completions is reached (or its queue faulted);
 * *out_index = the first such index. Blocks in hsa_amd_signal_wait_any over the distinct
 * epoch signals. Errors as hsad_completion_wait (count 0 is INVALID_ARGUMENT). */
hsad_status_t hsad_completion_wait_any(const hsad_completion_t *completions, uint32_t count,
                                       uint64_t deadline_ns, uint32_t *out_index);

/* True once waiting would not block: the epoch was reached, or its queue faulted or closed
 * (hsad_completion_wait then says which). Never blocks. */
bool hsad_completion_done(const hsad_completion_t *completion);

/* Start and end of the dispatch `completion->packet_id` in ns of the system timestamp domain
 * (hsa_amd_profiling_get_dispatch_time, scaled by HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY). On a
 * profiling queue every dispatch carries its slot's timestamp signal; the times stay readable
 * until the slot is reused (size packets later). Errors: HSAD_ERR_UNSUPPORTED (queue created
 * without profiling), HSAD_ERR_INVALID_ARGUMENT (not completed yet, or the slot was reused:
 * the message says which), HSAD_ERR_HSA. */
hsad_status_t hsad_completion_times(const hsad_completion_t *completion, uint64_t *out_start_ns,
                                    uint64_t *out_end_ns);

#ifndef HSAD_NO_AMD
/* The HSA signal and condition of a completion, for device-side waiters outside this library
 * (an AMD barrier-value packet) and hsa_signal_wait_*: reached when the signal's value is
 * < *out_lt_value (HSA_SIGNAL_CONDITION_LT). Valid while the queue exists. Errors:
 * HSAD_ERR_INVALID_ARGUMENT, one cause each: "hsad_completion_signal: NULL completion" (or
 * NULL out_signal, NULL out_lt_value), "hsad_completion_signal: an empty completion (it has no
 * signal)". */
hsad_status_t hsad_completion_signal(const hsad_completion_t *completion,
                                     hsa_signal_t *out_signal, hsa_signal_value_t *out_lt_value);
#endif

/* The epoch signal's initial value: epoch k is reached when the value is <= HSAD_EPOCH_BASE - k. */
#define HSAD_EPOCH_BASE ((int64_t)1 << 62)

#ifdef __cplusplus
}
#endif
#endif /* HSAD_QUEUE_H */
