/* hsad_submit.h - raw ring access for modules that write packets themselves (fusion/).
 *
 * Internal-but-exported: a caller that uses it takes over steps 4-7 of the submit contract in
 * hsad_queue.h (kernarg copy, body, publish, doorbell) for a run of slots it reserved here.
 * The ring rules of hsa-dispatch still hold:
 *   - hsad_submit_reserve takes n consecutive packet ids at once, only while
 *     write + n - retired <= size (the packets that last used these slots and their kernarg
 *     blocks COMPLETED), waiting for room until the deadline; nothing is reserved on failure.
 *   - With epoch_last, the LAST packet of the run is numbered as the queue's next epoch under
 *     the epoch lock (epoch numbers follow ring order). The caller must give that packet the
 *     BARRIER bit and the epoch signal (hsad_submit_epoch_signal) as its completion signal,
 *     or the timeline breaks: *out_epoch then behaves as hsad_completion_t{queue, epoch}.
 *   - Every reserved slot must be filled and published (a hole stalls the packet processor):
 *     bodies first with the header INVALID, then headers last-to-first (the first one last),
 *     then one doorbell store with the LAST id (hsad_submit_doorbell).
 * Thread safety: multi-producer safe, as hsad_kernel_dispatch.
 */
#ifndef HSAD_SUBMIT_H
#define HSAD_SUBMIT_H

#include "hsa-dispatch/hsad.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs every check of hsad_kernel_dispatch (steps 1-2, without the sticky-error check) on
 * (queue, kernel, launch): fills *out_body (kernarg address and completion signal 0) and
 * writes the kernarg segment (kernel's kernarg_segment_size bytes, at most
 * HSAD_KERNARG_SEGMENT_MAX) into out_image. Errors as hsad_kernel_dispatch. */
hsad_status_t hsad_submit_check(const hsad_queue_t *queue, const hsad_device_kernel_t *kernel,
                                const hsad_launch_t *launch, hsad_aql_dispatch_t *out_body,
                                uint8_t *out_image);

/* Reserves n packet ids (see above). Errors: the queue's sticky error, HSAD_ERR_INVALID_ARGUMENT
 * (n 0 or above the ring size), HSAD_ERR_TIMEOUT (deadline passed; nothing reserved). */
hsad_status_t hsad_submit_reserve(hsad_queue_t *queue, uint32_t n, bool epoch_last,
                                  uint64_t deadline_ns, uint64_t *out_first_id,
                                  uint64_t *out_epoch);

/* Reserves n packet ids of which epoch_count are epoch packets: they are numbered as the
 * queue's next epoch_count epochs, *out_first_epoch being the first's number; the caller places
 * them in the run in that order, the last one being the run's last packet (first + n - 1).
 * Each must get the BARRIER bit and the epoch signal as its completion signal; epoch j then
 * behaves as hsad_completion_t{queue, *out_first_epoch + j}, a point a barrier-value packet on
 * another queue can wait for (several points per run: consumers wait for exactly their
 * producer, not the whole run). Slots and kernarg blocks of the run are reclaimed when its last
 * epoch completed. Cost: O(1) whatever epoch_count. Errors as hsad_submit_reserve, and
 * HSAD_ERR_INVALID_ARGUMENT for epoch_count 0 or above n. */
hsad_status_t hsad_submit_reserve_epochs(hsad_queue_t *queue, uint32_t n, uint32_t epoch_count,
                                         uint64_t deadline_ns, uint64_t *out_first_id,
                                         uint64_t *out_first_epoch);

/* Checks dependency `index` (a completion to wait for, hsad_queue_barrier's rule): an epoch
 * never issued on its queue is HSAD_ERR_INVALID_ARGUMENT, a source queue that faulted before
 * reaching it (or was closed) its sticky error; an empty completion passes. */
hsad_status_t hsad_submit_dep_check(const hsad_completion_t *completion, uint32_t index);

/* A point of the queue's completion timeline covering every packet reserved on it so far,
 * found WITHOUT submitting a packet (memory/stream_pool.c: a stream-ordered free needs no
 * packet of its own). completion: when the queue's last packet carries an epoch (or the queue
 * has none at all: an empty completion), that epoch; otherwise the NEXT epoch number, not
 * issued yet (pending): the next epoch packet anyone reserves on the queue lies after every
 * covered packet and, by its BARRIER bit, completes after them, so it is the first epoch that
 * covers them. A pending epoch is reached only once issued: hsad_completion_done answers false
 * until then, and waits or barriers on it need hsad_submit_point_issue first (they refuse an
 * epoch never issued). end: packets with ids below it are covered. ordered: a barrier packet
 * with the BARRIER bit and no work of its own (a barrier-AND or barrier-value) was reserved at
 * id end - 1 or later, so every packet reserved after the call, HSAD_LAUNCH_NO_BARRIER
 * dispatches too, starts only after every covered packet completed (AQL launches packets in
 * order; a packet with the BARRIER bit launches once every earlier one completed). Without
 * it, a later NO_BARRIER dispatch may overlap the last covered dispatch.
 * Returns HSAD_ERR_UNSUPPORTED with no message for queues it cannot read this way (another
 * vendor's, a faulted or capturing one: use hsad_queue_barrier, which answers for those).
 * Thread-safe (the point is a snapshot of a multi-producer queue). */
typedef struct hsad_submit_point {
  hsad_completion_t completion;
  uint64_t end;
  bool pending;
  bool ordered;
} hsad_submit_point_t;
hsad_status_t hsad_submit_point(hsad_queue_t *queue, hsad_submit_point_t *out_point);
/* True when a barrier packet (BARRIER bit, no work) was reserved on the queue at id end - 1 or
 * later (see `ordered` above). Thread-safe; never blocks. */
bool hsad_submit_ordered_since(const hsad_queue_t *queue, uint64_t end);
/* Issues a pending point's epoch when nobody has yet: hsad_queue_flush on its queue (one
 * barrier-AND epoch packet, waiting for ring room until deadline_ns). *out_packet (may be
 * NULL): whether a packet was submitted. Errors as hsad_queue_flush. */
hsad_status_t hsad_submit_point_issue(const hsad_submit_point_t *point, uint64_t deadline_ns,
                                      bool *out_packet);

/* Profiling queues (hsad_queue_options_t.profiling): every kernel dispatch packet carries its
 * slot's timestamp signal as completion signal (hsad_submit_timestamp_signal arms it for
 * packet `id`: value 1, owner id; 0 on other queues), so monitoring drains get its device
 * start/end times; such packets never carry the epoch (a barrier-AND after them does). */
bool hsad_submit_profiling(const hsad_queue_t *queue);
uint64_t hsad_submit_timestamp_signal(hsad_queue_t *queue, uint64_t id);

/* The 64-byte slot of packet `id` and its kernarg block (hsad_submit_kernarg_block bytes;
 * contiguous with the blocks of the next slots, past the ring's end too, up to
 * HSAD_KERNARG_SEGMENT_MAX bytes). A kernarg segment of ksize bytes spans
 * hsad_submit_kernarg_span(queue, ksize) blocks: the caller reserves as many slots for the
 * dispatch, puts it in the first and fills the others with packets that use no kernarg block
 * (hsad_queue.h step 4: the padding). hsad_submit_kernarg is for a writer of the block: it
 * clears the slot's kernarg stamp (hsad_submit_ring_t), so the dispatch hot path copies its
 * whole image there next time; a segment that runs on into the blocks of its padding slots
 * clears theirs too (hsad_submit_kernarg of each of those ids, or their kernarg_slots). */
void *hsad_submit_slot(hsad_queue_t *queue, uint64_t id);
void *hsad_submit_kernarg(hsad_queue_t *queue, uint64_t id);
uint32_t hsad_submit_kernarg_block(const hsad_queue_t *queue);
uint32_t hsad_submit_kernarg_span(const hsad_queue_t *queue, uint32_t ksize);
/* The queue's epoch signal handle (the completion signal of an epoch packet). */
uint64_t hsad_submit_epoch_signal(const hsad_queue_t *queue);
/* Publishes header|setup<<16 of packet `id` (32-bit release store). */
void hsad_submit_publish(hsad_queue_t *queue, uint64_t id, uint32_t header_setup);
/* Rings the doorbell with `last_id`; when later ids were reserved meanwhile it ends at the
 * highest reserved id (producers that race may store theirs out of order: aql_ring.h). */
void hsad_submit_doorbell(hsad_queue_t *queue, uint64_t last_id);

/* A queue's ring as plain values, for writers that address slots themselves in a loop (one
 * call per queue and launch instead of hsad_submit_slot / _kernarg per packet). Valid while
 * the queue exists. Slot of packet id: packets + (id & mask) x 64; its kernarg block:
 * kernargs + (id & mask) x kernarg_block. */
/* A slot's kernarg block and the dispatch hot path's stamp of the image it holds (aql_ring.h's
 * dq_ring_kernarg_slot_t). */
typedef struct hsad_submit_kernarg_slot {
  uint64_t stamp;           /* 0: none; nonzero: the block holds a launch-cache entry's image */
  void *block;              /* kernargs + slot x kernarg_block */
} hsad_submit_kernarg_slot_t;

typedef struct hsad_submit_ring {
  uint8_t *packets;         /* the ring's 64-byte slots (hsa_queue_t.base_address) */
  uint64_t mask;            /* size - 1 */
  uint8_t *kernargs;        /* the kernarg block of slot 0 */
  uint32_t kernarg_block;   /* bytes per slot */
  hsad_submit_kernarg_slot_t *kernarg_slots; /* one per slot: a writer of slot i's kernarg
                               block stores 0 into kernarg_slots[i].stamp first (the dispatch
                               hot path's record of the image the block holds, aql_ring.h) */
  uint64_t epoch_signal;    /* hsad_submit_epoch_signal */
  const volatile int64_t *epoch_value; /* its value: epoch k of the queue completed (or the
                                          queue faulted: the value is then 0) exactly when
                                          *epoch_value < HSAD_EPOCH_BASE - k + 1 */
} hsad_submit_ring_t;
void hsad_submit_ring(const hsad_queue_t *queue, hsad_submit_ring_t *out_ring);

/* A queue owner's per-completion results: after a completion of `queue` was reached,
 * hsad_completion_wait (and _wait_all / _wait_any, which use it) returns hook(ctx, completion)
 * instead of HSAD_OK, so a waiter learns that the work behind the completion failed after it
 * was submitted (memory/'s copy queue: a copy ROCr stopped part-way, hsad_mem_result). The
 * hook must not block and must set hsad_last_error for a non-OK status. Device-side waiters
 * (barrier packets) cannot be told. hook NULL removes it. Not concurrent with waits on the
 * queue (set it right after hsad_queue_create). */
typedef hsad_status_t (*hsad_submit_result_fn)(void *ctx, const hsad_completion_t *completion);
void hsad_submit_set_result_hook(hsad_queue_t *queue, hsad_submit_result_fn hook, void *ctx);

/* Holds / releases `kernel` for an object that will submit it later (a prepared launch, a graph
 * exec's kernel node, a variant set's variant): hsad_program_destroy of its program returns
 * HSAD_ERR_IN_USE while a kernel has holders (its code would be freed under the object's next
 * submission). hold returns the token release takes (the kernel's uid; 0 for another backend's
 * kernel, which is not counted). release finds the kernel among the live programs by address
 * and token before touching it, so releasing after the program was destroyed or the runtime
 * closed (the count went with it) does nothing. Thread-safe. */
uint64_t hsad_submit_kernel_hold(const hsad_device_kernel_t *kernel);
void hsad_submit_kernel_release(const hsad_device_kernel_t *kernel, uint64_t token);

/* Kernarg memory a writer owns (e.g. a graph exec's prepublished kernarg segments, written
 * once and read by every launch): `size` bytes from the kernarg pool the device's queues use
 * (host memory the device reads; ROCr's kernarg pool of the nearest CPU agent), the device
 * granted access, the first `size` bytes zeroed, 4096-byte aligned. Blocks up to 1 MiB come
 * from a per-device cache of freed ones (8 per power-of-two class from 4 KiB), so an object
 * made and destroyed in a loop does not call ROCr's allocator each time. Free with
 * hsad_submit_kernarg_free(device, ptr, size) with the same device and size, once no packet
 * reading it is in flight (NULL ptr is a no-op). Errors: HSAD_ERR_INVALID_ARGUMENT (NULL, size
 * 0), HSAD_ERR_UNSUPPORTED (no kernarg pool), HSAD_ERR_HSA. Thread-safe. */
hsad_status_t hsad_submit_kernarg_alloc(hsad_device_t *device, size_t size, void **out_ptr);
void hsad_submit_kernarg_free(hsad_device_t *device, void *ptr, size_t size);

/* Monitoring (hsad_monitor.h) of kernel dispatch packets written through this header, so a
 * fused launch leaves the records hsad_kernel_dispatch would: when hsad_submit_monitored(q)
 * (one load; false while monitoring is off), take a mark before reserving, close it after the
 * doorbell (hsad_submit_monitor_close), then record each kernel dispatch packet with its body
 * and id. Every record made with one mark carries the same host submit interval, from the mark
 * to its close (one submission, one interval: the intervals of one thread never overlap, which
 * a trace's thread track needs). The rest is as for hsad_kernel_dispatch (kernel found by
 * kernel_object, occupancy at the packet's workgroup and group segment sizes, device times
 * filled by a drain on a profiling queue). Never blocks (a full ring drops the record and
 * counts it). Thread-safe as hsad_kernel_dispatch; a mark belongs to the thread that took it. */
typedef struct hsad_submit_mark {
  uint64_t t0;       /* hsad_now_ns at the mark */
  uint64_t scratch;  /* the queue's scratch bytes at the mark */
  uint32_t lane;     /* the queue's scratch bytes per wave64 lane at the mark */
  uint64_t t1;       /* hsad_now_ns at hsad_submit_monitor_close; 0 before */
} hsad_submit_mark_t;
bool hsad_submit_monitored(const hsad_queue_t *queue);
void hsad_submit_monitor_begin(hsad_queue_t *queue, hsad_submit_mark_t *out_mark);
/* Ends the submission's host interval (t1 = hsad_now_ns()). */
void hsad_submit_monitor_close(hsad_submit_mark_t *mark);
/* `packet`: bytes 4..63 of a kernel dispatch packet as written (its header/setup word is not
 * read: dims = its setup dimensions); `id`: its packet id. A mark not closed yet ends at this
 * call. */
void hsad_submit_monitor_record(hsad_queue_t *queue, const hsa_kernel_dispatch_packet_t *packet,
                                uint16_t dims, uint64_t id, const hsad_submit_mark_t *mark);

/* ---- capture (fusion/capture.c) ------------------------------------------------------ */
/* While a queue captures, hsad_kernel_dispatch and hsad_queue_barrier on it call these
 * instead of writing packets (the queue's sticky error still comes first); the other submit
 * calls are refused ("WHO: queue Q is capturing ..."). The recorder serialises the calls
 * itself (any thread may submit to a capturing queue). A call that finds the capture ended
 * under the recorder's lock (it raced with the end) submits as if it had not captured. */
typedef struct hsad_submit_capture_ops {
  hsad_status_t (*kernel)(hsad_queue_t *queue, const hsad_device_kernel_t *kernel,
                          const hsad_launch_t *launch, uint64_t deadline_ns,
                          hsad_completion_t *out_completion, uint64_t *out_packet_id);
  hsad_status_t (*barrier)(hsad_queue_t *queue, const hsad_completion_t *deps,
                           uint32_t dep_count, uint64_t deadline_ns,
                           hsad_completion_t *out_completion);
} hsad_submit_capture_ops_t;

/* Diverts the queue's submits to ops (a table that lives as long as the process) with ctx as
 * the recorder's state (hsad_submit_capture_ctx): ctx is stored first, then ops and the flag
 * (release). Not concurrent with itself or hsad_submit_capture_stop on the queue (the
 * recorder's lock). Errors: HSAD_ERR_INVALID_ARGUMENT (NULL; a shared queue of
 * hsad_device_queue: other users' submits would be captured; already capturing), the sticky
 * error; HSAD_ERR_UNSUPPORTED for another backend's queue ("hsad_submit_capture_start: the
 * queue belongs to another vendor's backend; this call is AMD only (...)": these are AQL-level
 * hooks; hsad_queue_capture_begin captures such a queue through its backend's table). */
hsad_status_t hsad_submit_capture_start(hsad_queue_t *queue, const hsad_submit_capture_ops_t *ops,
                                        void *ctx);
/* Ends the diversion (flag cleared first, release); returns the ctx given to start, NULL when
 * the queue was not capturing. Submits after it write packets again. */
void *hsad_submit_capture_stop(hsad_queue_t *queue);
/* The ctx of a capturing queue, NULL otherwise (read under the recorder's lock). */
void *hsad_submit_capture_ctx(const hsad_queue_t *queue);

/* ---- devices of other vendors (memory/ hands their memory calls over here) ------------- */

/* True for a device served by another backend (hsad_device_info(d)->vendor != AMD). */
bool hsad_submit_device_foreign(const hsad_device_t *device);
/* The backend's allocation of `kind` (1 device, 2/3 pinned host memory mapped for the device)
 * and free (HSAD_ERR_NOT_ALLOCATED with no message when no backend holds ptr), and an
 * asynchronous copy ordered after deps on the backend's copy stream. */
hsad_status_t hsad_submit_foreign_mem_alloc(hsad_device_t *device, uint32_t kind, size_t size,
                                            void **out_ptr);
hsad_status_t hsad_submit_foreign_mem_free(void *ptr);
/* The backend's hsad_buffer_alloc: zeroed host memory the device can reach, which the
 * backend records (hsad_mem_free / hsad_buffer_free find it by pointer). */
hsad_status_t hsad_submit_foreign_buffer_alloc(hsad_device_t *device, size_t size,
                                               void **out_ptr);
/* options: NULL or the caller's hsad_copy_options_t (memory/hsad_memory.h), handed to the
 * backend as given (its strategy, thresholds and checks, as in the build without AMD). */
struct hsad_copy_options;
hsad_status_t hsad_submit_foreign_memcpy_async(hsad_device_t *device, void *dst, const void *src,
                                               size_t size, const hsad_completion_t *deps,
                                               uint32_t dep_count,
                                               const struct hsad_copy_options *options,
                                               uint64_t deadline_ns,
                                               hsad_completion_t *out_completion);
/* The backend's pinned host pool of the device's node (hsad_host_pool_get on a device of
 * another vendor: nvidia/nv_pool.c). Every pool begins with hsad_object_head_t (backend.h;
 * ROCr's pools with a NULL table), so memory/host_pool.c hands every later call on a pool of
 * another vendor to the table its head names. */
struct hsad_host_pool;
hsad_status_t hsad_submit_foreign_host_pool_get(hsad_device_t *device,
                                                struct hsad_host_pool **out_pool);

#ifdef __cplusplus
}
#endif
#endif /* HSAD_SUBMIT_H */
