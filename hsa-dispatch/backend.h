/* backend.h - the table every vendor backend fills, and the heads every public object starts
 * with (not installed; hsa-dispatch/ and the backend folders only). Needs no ROCm header.
 *
 * Design (IREE's HAL drivers, LLVM offload's plugins): the public objects (hsad_queue_t,
 * hsad_program_t, hsad_device_kernel_t) of every backend begin with a head that names their
 * backend's table; devices carry the table in the runtime's device array. AMD is the
 * front's own backend: its objects have ops == NULL and its public functions are the AMD
 * implementation itself, so the AMD dispatch path pays nothing for the choice: a queue of
 * another backend keeps HSAD_GATE_BACKEND set in its gate word, which the AMD fast path
 * already tests (the sticky error and the capture flag), and the cold path behind that branch
 * hands the call to q->ops. Every other entry point tests `ops` first (a load and a branch on a
 * path that is not per-dispatch). A build without AMD (make BACKENDS=nvidia) compiles
 * hsa-dispatch/front.c instead of the ROCr files: the same public functions, each forwarding to
 * the object's table.
 *
 * Backends: nvidia/ (CUDA driver API, libcuda.so.1 by dlopen). Tables are static const and
 * live for the process. Every function pointer must be set (a backend answers
 * HSAD_ERR_UNSUPPORTED itself for what it lacks, naming the call and the vendor). */
#ifndef HSAD_BACKEND_H
#define HSAD_BACKEND_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "hsa-dispatch/hsad.h"

struct hsad_backend_ops;
struct hsad_host_pool;       /* memory/hsad_memory.h */
struct hsad_host_pool_stats;
struct hsad_copy_options;    /* memory/hsad_memory.h */
struct hsad_graph_backend_ops; /* fusion/fu_graph.h */
struct hsad_monitor_options;   /* hsad_monitor.h (AMD builds) */
struct hsad_dispatch_record;

/* The gate word's bits in its `capturing` half (dispatch_internal.h): 1 = capturing (AMD,
 * fusion/capture.c), HSAD_GATE_BACKEND = the queue belongs to a backend table (set at creation,
 * never cleared, so every AMD submit path diverts it to its cold path). */
#define HSAD_GATE_BACKEND 2u
/* Bit 0 of `capturing` on a backend's queue: it captures (fusion/capture.c sets it through the
 * table's capture_set). The backend's queue is then "open" (no error, no capture) exactly when
 * the whole gate word equals HSAD_GATE_BACKEND_OPEN, so its dispatch path tests the sticky
 * error and the capture with one 64-bit load and compare (the load it had for the error). */
#define HSAD_GATE_CAPTURE 1u
#define HSAD_GATE_BACKEND_OPEN ((uint64_t)HSAD_GATE_BACKEND << 32)
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the gate word: `capturing` is its high half");

/* The first members of every queue object, whatever its backend: the gate (sticky error |
 * capture | backend) and the table (NULL: AMD). A macro so that `q->gate`, `q->error` keep
 * their names in every struct (C11 anonymous members). Offsets pinned: gate at 0, ops at 8,
 * hot_uid at 16 (the AMD dispatch hot path's key: one load and compare for the gate, the
 * general path and the queue's identity). */
#define HSAD_QUEUE_HEAD                                                                        \
  union {                                                                                      \
    struct {                                                                                   \
      _Atomic int error;          /* 0, or hsad_status_t (QUEUE_ERROR / CLOSED) */             \
      _Atomic uint32_t capturing; /* 1: capturing (AMD); HSAD_GATE_BACKEND: backend queue */   \
    };                                                                                         \
    _Atomic uint64_t gate;        /* error | capturing: nonzero diverts every AMD submit */    \
  };                                                                                           \
  const struct hsad_backend_ops *ops;                                                          \
  _Atomic uint64_t hot_uid /* AMD: the queue's uid while a dispatch may take the hot path   \
                              (open gate, not general), else 0 (dq_queue_hot_refresh); other \
                              backends' queues: always 0 */

typedef struct hsad_queue_head {
  HSAD_QUEUE_HEAD;
} hsad_queue_head_t;

/* The first members of programs and kernels: the table (NULL: AMD) and, for kernels, a uid
 * unique for the process (the AMD launch cache's key: a foreign kernel can never hit it). */
typedef struct hsad_object_head {
  const struct hsad_backend_ops *ops;
  uint64_t uid;
} hsad_object_head_t;

/* The first members of every backend's kernel: the object head, then the kernel's half of
 * the AMD dispatch hot path's key (dispatch_internal.h, DQ_HOT_KEY): an AMD kernel's uid when
 * it is below 2^32, else 0; always 0 for another backend's kernel (it never hits). The hot
 * path reads it from any kernel it is handed, so every backend's kernel has it here. */
typedef struct hsad_kernel_head {
  const struct hsad_backend_ops *ops;
  uint64_t uid;
  uint64_t hot_id;
} hsad_kernel_head_t;

static inline const struct hsad_backend_ops *hsad_queue_ops(const hsad_queue_t *q) {
  return ((const hsad_queue_head_t *)(const void *)q)->ops;
}
static inline const struct hsad_backend_ops *hsad_object_ops(const void *object) {
  return ((const hsad_object_head_t *)object)->ops;
}

/* Next process-unique id (queues, kernels): never 0. Thread-safe (relaxed counter). */
uint64_t hsad_backend_next_uid(void);
/* Tests only: the next id is `next` (the uids past 2^32 where a kernel has no hot_id,
 * dispatch_internal.h DQ_HOT_KEY, without making 2^32 objects first). Not thread-safe. */
void hsad_backend_uid_skip(uint64_t next);

/* One backend. `device` arguments are the public devices the front placed; `impl` is what
 * the backend's device_discover returned for it. */
typedef struct hsad_backend_ops {
  const char *name;                         /* "nvidia" */
  hsad_vendor_t vendor;
  /* Discovers the backend's devices at the runtime's first open: *out_count devices (0 with
   * HSAD_OK when the vendor's driver is absent: *out_why says why, for messages). */
  hsad_status_t (*open)(uint32_t *out_count, char *out_why, size_t why_size);
  /* Device i's facts, as the front's device `index` (`device`), and its handle. */
  void (*device_describe)(uint32_t i, uint32_t index, hsad_device_t *device,
                          hsad_device_info_t *out_info, void **out_impl);
  void (*close)(void);                      /* the last hsad_runtime_close */

  hsad_status_t (*program_load)(hsad_device_t *device, void *impl, const void *data,
                                size_t size, const char *label, hsad_program_t **out);
  void (*program_destroy)(hsad_program_t *program);
  hsad_device_t *(*program_device)(const hsad_program_t *program);
  uint32_t (*program_kernel_count)(const hsad_program_t *program);
  hsad_status_t (*program_kernel)(const hsad_program_t *program, const char *name,
                                  const hsad_device_kernel_t **out);
  const hsad_device_kernel_t *(*program_kernel_at)(const hsad_program_t *program, uint32_t i);
  const hsad_device_kernel_desc_t *(*kernel_desc)(const hsad_device_kernel_t *kernel);

  hsad_status_t (*queue_create)(hsad_device_t *device, void *impl,
                                const hsad_queue_options_t *options, hsad_queue_t **out);
  hsad_status_t (*device_queue)(hsad_device_t *device, void *impl, hsad_queue_t **out);
  void (*queue_destroy)(hsad_queue_t *queue);
  hsad_device_t *(*queue_device)(const hsad_queue_t *queue);
  uint32_t (*queue_size)(const hsad_queue_t *queue);
  hsad_status_t (*queue_error)(const hsad_queue_t *queue);
  hsad_status_t (*kernel_dispatch)(hsad_queue_t *queue, const hsad_device_kernel_t *kernel,
                                   const hsad_launch_t *launch, uint64_t deadline_ns,
                                   hsad_completion_t *out_completion, uint64_t *out_packet_id);
  hsad_status_t (*queue_barrier)(hsad_queue_t *queue, const hsad_completion_t *deps,
                                 uint32_t dep_count, uint64_t deadline_ns,
                                 hsad_completion_t *out_completion);
  hsad_status_t (*queue_flush)(hsad_queue_t *queue, uint64_t deadline_ns,
                               hsad_completion_t *out_completion);
  hsad_status_t (*completion_wait)(const hsad_completion_t *completion, uint64_t deadline_ns);
  bool (*completion_done)(const hsad_completion_t *completion);
  /* hsad_completion_times of a completion of the backend's queue (arguments checked) */
  hsad_status_t (*completion_times)(const hsad_completion_t *completion, uint64_t *out_start_ns,
                                    uint64_t *out_end_ns);

  hsad_status_t (*buffer_alloc)(hsad_device_t *device, void *impl, size_t size, void **out);
  /* true when the backend owned ptr (and freed it) */
  bool (*buffer_free)(void *ptr);
  hsad_status_t (*mem_alloc)(hsad_device_t *device, void *impl, uint32_t kind, size_t size,
                             void **out);
  /* HSAD_ERR_NOT_ALLOCATED (no message set) when ptr is none of the backend's */
  hsad_status_t (*mem_free)(void *ptr);
  /* options: NULL or the caller's (a pageable side's strategy and thresholds) */
  hsad_status_t (*memcpy_async)(hsad_device_t *device, void *impl, void *dst, const void *src,
                                size_t size, const hsad_completion_t *deps, uint32_t dep_count,
                                const struct hsad_copy_options *options, uint64_t deadline_ns,
                                hsad_completion_t *out_completion);

  /* Pinned host pools (hsad_host_pool_*, memory/hsad_memory.h: the build without AMD forwards
   * them here). A pool object begins with hsad_object_head_t (its backend's table). */
  hsad_status_t (*host_pool_get)(hsad_device_t *device, void *impl, struct hsad_host_pool **out);
  hsad_status_t (*host_pool_get_node)(uint32_t numa_node, struct hsad_host_pool **out);
  hsad_status_t (*host_pool_alloc)(struct hsad_host_pool *pool, size_t size, void **out);
  hsad_status_t (*host_pool_free)(struct hsad_host_pool *pool, void *ptr);
  hsad_status_t (*host_pool_trim)(struct hsad_host_pool *pool, uint64_t keep_bytes,
                                  uint64_t *out_released_bytes);
  hsad_status_t (*host_pool_set_max_cached)(struct hsad_host_pool *pool, uint64_t max_cached);
  hsad_status_t (*host_pool_stats)(const struct hsad_host_pool *pool,
                                   struct hsad_host_pool_stats *out_stats);

  /* Monitoring (hsad_monitor.h) of the backend's queues: hsad_queue_monitor_enable / _disable /
   * _drain forward here (arguments checked as far as the front can); NULL: HSAD_ERR_UNSUPPORTED.
   * queue_trace_id: the queue's number in traces (hsad_trace_add: its track). */
  hsad_status_t (*monitor_enable)(hsad_queue_t *queue, const struct hsad_monitor_options *options);
  void (*monitor_disable)(hsad_queue_t *queue);
  hsad_status_t (*monitor_drain)(hsad_queue_t *queue, struct hsad_dispatch_record *out_records,
                                 uint32_t capacity, uint32_t *out_count, uint64_t *out_dropped);
  uint64_t (*queue_trace_id)(const hsad_queue_t *queue);

  /* Variant sets (hsad_variants.h) of the backend's kernels; NULL: HSAD_ERR_UNSUPPORTED.
   * variant_check: kernels[0..count) (count 1..HSAD_VARIANT_MAX, all of this backend) can form
   * one set (one device, one name, one parameter layout; the message names the variant and the
   * field); *out_device: their device. variant_select: the backend's metadata rule at `block`
   * threads and `dynamic` shared bytes (HSAD_ERR_WORKGROUP when no variant allows it).
   * queue_profiling: whether the queue times its dispatches (hsad_completion_times). */
  hsad_status_t (*variant_check)(const hsad_device_kernel_t *const *kernels, uint32_t count,
                                 hsad_device_t **out_device);
  hsad_status_t (*variant_select)(const hsad_device_kernel_t *const *kernels, uint32_t count,
                                  uint32_t block, uint32_t dynamic,
                                  hsad_variant_choice_t *out_choice);
  bool (*queue_profiling)(const hsad_queue_t *queue);

  /* Stream capture (fusion/hsad_fusion.h "capture"): on sets HSAD_GATE_CAPTURE in the queue's
   * gate after the checks of hsad_queue_capture_begin that depend on the backend (the sticky
   * error; a shared queue: "queue Q is a shared queue of device D (hsad_device_queue): ...");
   * off clears it (never fails). Called under fusion/capture.c's lock. While the bit is set,
   * the backend's kernel_dispatch runs every check of an uncaptured call, then hands the launch
   * to hsad_backend_capture_kernel instead of its stream; queue_barrier hands the barrier to
   * hsad_backend_capture_barrier; queue_flush and graph launches on the queue are refused
   * (hsad_backend_capture_refuse). */
  hsad_status_t (*capture_set)(hsad_queue_t *queue, bool on);

  /* Graphs (fusion/hsad_fusion.h) as the backend runs them (fusion/fu_graph.h); NULL: none
   * (hsad_graph_instantiate then answers HSAD_ERR_UNSUPPORTED). */
  const struct hsad_graph_backend_ops *graph;
} hsad_backend_ops_t;

/* The backends compiled in (NULL-terminated), in enumeration order after AMD. */
extern const hsad_backend_ops_t *const hsad_backends[];

/* Reads a whole file into malloc'd memory (the caller frees). Errors: HSAD_ERR_IO (names the
 * path and errno's text), HSAD_ERR_OUT_OF_MEMORY. */
hsad_status_t hsad_backend_read_file(const char *path, void **out_data, size_t *out_size);

/* A batch on a backend's queue without batches of its own: its dispatches one by one through
 * the queue's table, the completion on the last (a stream runs them in order); entries are not
 * all checked before the first runs. A failure: "batch entry I: <the entry's message>". */
hsad_status_t hsad_backend_batch_one_by_one(hsad_queue_t *q, const hsad_dispatch_desc_t *items,
                                            uint32_t count, uint64_t deadline_ns,
                                            hsad_completion_t *out_completion,
                                            uint64_t *out_first_packet_id);

/* Batch entry i's failure, both builds' batches (here and hsa-dispatch/batch.c): status s with
 * "batch entry I: <the entry's own message (hsad_last_error)>". Returns s. */
hsad_status_t hsad_batch_entry_fail(hsad_status_t s, uint32_t i);

/* ---- public calls whose checks and backend forwarding both builds share (the AMD build's
 * hsa-dispatch/batch.c and monitor.c, the NVIDIA-only build's front.c): one text each. ---- */

/* hsad_queue_dispatch_batch's arguments: HSAD_ERR_INVALID_ARGUMENT for a NULL queue, NULL
 * items or a count of 0, each its own message (nothing is checked beyond). */
static inline hsad_status_t hsad_batch_args_check(const hsad_queue_t *q,
                                                  const hsad_dispatch_desc_t *items,
                                                  uint32_t count) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_queue_dispatch_batch", {q, "queue"}, {items, "items"});
  if (!s && !count)
    s = hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_dispatch_batch: count 0");
  return s;
}

/* A launch's dimension i that its `dims` leave unused (i >= dims), both backends' launch checks
 * (hsa-dispatch/launch_check.c, nvidia/nv_queue.c): grid[i] (g) and block[i] (b) must be 0 or
 * 1 (hsad_queue.h). HSAD_ERR_GRID, or HSAD_ERR_WORKGROUP when only the block is above 1. */
/* A launch's geometry (hsad_launch_t bytes 0..27: dims, grid[3], block[3]) as the fast paths
 * keep it to compare later launches with (AMD's launch cache, NVIDIA's graph update): lo holds
 * bytes 0..15, hi bytes 12..27, each 16-byte aligned, so a compare is two aligned 16-byte
 * compares and one mask test. */
_Static_assert(offsetof(hsad_launch_t, grid) == 4 && offsetof(hsad_launch_t, block) == 16 &&
                   offsetof(hsad_launch_t, args) >= 28,
               "launch geometry is 7 consecutive uint32_t, bytes 0..27");
typedef struct hsad_launch_geometry {
  _Alignas(16) uint8_t lo[16];
  _Alignas(16) uint8_t hi[16];
} hsad_launch_geometry_t;

static inline void hsad_launch_geometry_store(hsad_launch_geometry_t *g, const hsad_launch_t *l) {
  memcpy(g->lo, &l->dims, 16);
  memcpy(g->hi, (const uint8_t *)&l->dims + 12, 16);
}

/* g's dims, grid[3], block[3] as the 7 words of hsad_launch_t. */
static inline void hsad_launch_geometry_words(const hsad_launch_geometry_t *g, uint32_t out[7]) {
  memcpy(out, g->lo, 16);
  memcpy(out + 4, g->hi + 4, 12);
}

/* Whether l's geometry is g's. */
static inline __attribute__((always_inline)) bool
hsad_launch_geometry_same(const hsad_launch_geometry_t *g, const hsad_launch_t *l) {
  const uint8_t *b = (const uint8_t *)&l->dims;
#ifdef __SSE2__
  __m128i eq = _mm_and_si128(
      _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)b), _mm_load_si128((const __m128i *)g->lo)),
      _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(b + 12)),
                     _mm_load_si128((const __m128i *)g->hi)));
  return _mm_movemask_epi8(eq) == 0xffff;
#else
  return !memcmp(b, g->lo, 16) && !memcmp(b + 12, g->hi, 16);
#endif
}

static inline hsad_status_t hsad_launch_unused_dim_check(const char *kernel, uint32_t i,
                                                         uint32_t dims, uint32_t g, uint32_t b) {
  if (__builtin_expect(g > 1 || b > 1, 0))
    return hsad_fail(g > 1 ? HSAD_ERR_GRID : HSAD_ERR_WORKGROUP, "kernel %s: dimension %u "
                     "unused (dims %u) but grid[%u]=%u block[%u]=%u; use 0 or 1", kernel, i, dims,
                     i, g, i, b);
  return HSAD_OK;
}

/* hsad_queue_monitor_enable on a backend's queue (ops set): the table's monitor_enable, or
 * HSAD_ERR_UNSUPPORTED naming the backend when it has none. */
static inline hsad_status_t hsad_backend_monitor_enable(hsad_queue_t *q,
                                                        const struct hsad_monitor_options *o) {
  const hsad_backend_ops_t *ops = hsad_queue_ops(q);
  if (ops->monitor_enable) return ops->monitor_enable(q, o);
  return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_queue_monitor_enable: the queue is a %s stream: "
                   "its backend has no monitoring", ops->name);
}

/* hsad_queue_monitor_drain's arguments: HSAD_ERR_INVALID_ARGUMENT for a NULL queue or
 * out_count, or NULL out_records with a capacity, each its own message. */
static inline hsad_status_t hsad_monitor_drain_args_check(const hsad_queue_t *q,
                                                          const struct hsad_dispatch_record *out,
                                                          uint32_t capacity,
                                                          const uint32_t *out_count) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_queue_monitor_drain", {q, "queue"},
                                  {out_count, "out_count"});
  if (!s && !out && capacity)
    s = hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_monitor_drain: NULL out_records with "
                  "capacity %u", capacity);
  return s;
}

/* hsad_queue_monitor_drain on a backend's queue (arguments checked): the table's
 * monitor_drain, or HSAD_ERR_UNSUPPORTED naming the backend when it has none. */
static inline hsad_status_t hsad_backend_monitor_drain(hsad_queue_t *q,
                                                       struct hsad_dispatch_record *out_records,
                                                       uint32_t capacity, uint32_t *out_count,
                                                       uint64_t *out_dropped) {
  const hsad_backend_ops_t *ops = hsad_queue_ops(q);
  if (ops->monitor_drain)
    return ops->monitor_drain(q, out_records, capacity, out_count, out_dropped);
  return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_queue_monitor_drain: the queue is a %s stream: "
                   "its backend has no monitoring", ops->name);
}

/* ---- stream capture of a backend's queue (fusion/capture.c; hsad_fusion.h "capture") ---- */
/* True while the backend's queue captures (relaxed: a hint; capture.c decides under its lock). */
static inline bool hsad_backend_capturing(const hsad_queue_t *q) {
  return (atomic_load_explicit(&((hsad_queue_head_t *)(uintptr_t)q)->capturing,
                               memory_order_relaxed) & HSAD_GATE_CAPTURE) != 0;
}
/* Records a kernel node for a dispatch the backend checked (every check of hsad_kernel_dispatch
 * passed) on its capturing queue; *out_completion / *out_packet_id as hsad_fusion.h says. When
 * the capture ended meanwhile it is an ordinary hsad_kernel_dispatch. Thread-safe. */
hsad_status_t hsad_backend_capture_kernel(hsad_queue_t *q, const hsad_device_kernel_t *kernel,
                                          const hsad_launch_t *launch, uint64_t deadline_ns,
                                          hsad_completion_t *out_completion,
                                          uint64_t *out_packet_id);
/* Records a barrier node (deps checked as hsad_fusion.h says; deps non-NULL when dep_count > 0).
 * When the capture ended meanwhile it is an ordinary hsad_queue_barrier. Thread-safe. */
hsad_status_t hsad_backend_capture_barrier(hsad_queue_t *q, const hsad_completion_t *deps,
                                           uint32_t dep_count, uint64_t deadline_ns,
                                           hsad_completion_t *out_completion);
/* A submit call that a capture does not record, on a backend's queue: HSAD_OK when the queue
 * does not capture; else its sticky error when it has one, else HSAD_ERR_INVALID_ARGUMENT
 * "WHO: queue Q is capturing (hsad_queue_capture_begin): a capture records
 * hsad_kernel_dispatch and hsad_queue_barrier only; end it first (hsad_queue_capture_end)"
 * (Q: the queue's queue_trace_id). Cold (backend.c). */
hsad_status_t hsad_backend_capture_refuse(const hsad_queue_t *q, const char *who);

/* Generic waits over completions of any backends (backend.c): all in order; any by polling
 * hsad_completion_done with a short sleep (backends have no common blocking primitive). */
hsad_status_t hsad_backend_wait_all(const hsad_completion_t *c, uint32_t count,
                                    uint64_t deadline_ns);
hsad_status_t hsad_backend_wait_any(const hsad_completion_t *c, uint32_t count,
                                    uint64_t deadline_ns, uint32_t *out_index);

#endif
