/* copy.c - checked copies and fills on HSA signals: direct DMA, and pageable host memory
 * staged through pool blocks, pipelined in chunks, or pinned in place.
 *
 * Progress after the call returns is driven by ROCr's asynchronous event thread
 * (hsa_amd_signal_async_handler on the chunk signals, hsa_amd_async_function to stage the
 * first buffers of a pipeline). A handler only copies host bytes, returns pool blocks and
 * submits the next chunk; its last action is the decrement of the copy's completion signal,
 * after which it never touches the operation again (the caller may reuse everything then).
 *
 * A buffer's handler is registered before its DMA is submitted, so a DMA is never in flight
 * unwatched: if ROCr then refuses the DMA, the buffer's signal is set to 0 and the handler
 * that fires retires the buffer (a later chunk: the copy stops there and its failure is kept
 * for the waiter, see "failures" below) or only acknowledges (the first submission: the call
 * waits for that acknowledgement, frees everything itself and returns the error).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hsa/amd_hsa_signal.h>

#include "memory/mem_internal.h"
#include "memory/mem_registry.h"

/* The value of a signal, loaded with acquire ordering by this library itself (not through
 * ROCr): it pairs with the packet processor's release decrement after the DMA wrote the
 * bytes, so what the handler reads next is ordered after the DMA (and ThreadSanitizer, which
 * does not see inside ROCr, sees the pairing). */
static hsa_signal_value_t sig_acquire(hsa_signal_t s) {
  amd_signal_t *a = (amd_signal_t *)(uintptr_t)s.handle;
  return atomic_load_explicit((_Atomic int64_t *)&a->value, memory_order_acquire);
}

/* Decrements through ROCr (which wakes sleeping waiters) after a release RMW on the value, so
 * every write of this thread before it is ordered before a waiter's acquire load of 0. */
static void sig_release_sub(hsa_signal_t s, hsa_signal_value_t n) {
  amd_signal_t *a = (amd_signal_t *)(uintptr_t)s.handle;
  atomic_fetch_add_explicit((_Atomic int64_t *)&a->value, 0, memory_order_release);
  mem_rocr.hsa_signal_subtract_screlease(s, n);
}

/* ---- internal signals: reused, never destroyed while the runtime is open -------------- */

static pthread_mutex_t sig_lock = PTHREAD_MUTEX_INITIALIZER;
static hsa_signal_t *sig_free;
static size_t sig_n, sig_cap;
static uint64_t sig_gen;

void mem_copy_close(void) {
  pthread_mutex_lock(&sig_lock);
  if (sig_gen && mem_rocr.hsa_signal_destroy)
    for (size_t i = 0; i < sig_n; i++) mem_rocr.hsa_signal_destroy(sig_free[i]);
  sig_n = 0;
  sig_gen = 0;
  pthread_mutex_unlock(&sig_lock);
}

hsad_status_t mem_signal_take(hsa_signal_value_t value, hsa_signal_t *out) {
  pthread_mutex_lock(&sig_lock);
  uint64_t gen = atomic_load_explicit(&mem_st.generation, memory_order_acquire);
  if (sig_gen != gen) { /* signals of an earlier runtime died with it */
    sig_n = 0;
    sig_gen = gen;
  }
  if (sig_n) {
    *out = sig_free[--sig_n];
    pthread_mutex_unlock(&sig_lock);
    mem_rocr.hsa_signal_store_screlease(*out, value);
    return HSAD_OK;
  }
  pthread_mutex_unlock(&sig_lock);
  hsa_status_t st = mem_rocr.hsa_signal_create(value, 0, NULL, out);
  if (st != HSA_STATUS_SUCCESS) return mem_hsa_fail(st, "memory: hsa_signal_create");
  return HSAD_OK;
}

void mem_signal_give(hsa_signal_t s) {
  pthread_mutex_lock(&sig_lock);
  if (sig_gen == atomic_load_explicit(&mem_st.generation, memory_order_acquire)) {
    if (sig_n == sig_cap) {
      size_t cap = sig_cap ? sig_cap * 2 : 64;
      hsa_signal_t *n = realloc(sig_free, cap * sizeof *n);
      if (!n) {
        pthread_mutex_unlock(&sig_lock);
        mem_rocr.hsa_signal_destroy(s);
        return;
      }
      sig_free = n, sig_cap = cap;
    }
    sig_free[sig_n++] = s;
  }
  pthread_mutex_unlock(&sig_lock);
}

/* ---- sides of a copy -------------------------------------------------------------------- */


hsad_status_t mem_side_classify(const char *what, const char *role, const void *ptr,
                                   size_t size, mem_side_t *out) {
  memset(out, 0, sizeof *out);
  out->p = out->gpu_p = (uint8_t *)ptr;
  if ((uintptr_t)ptr > UINTPTR_MAX - size)
    return hsad_fail(HSAD_ERR_RANGE, "%s: the %s %p + %zu bytes wraps the address space", what,
                     role, ptr, size);
  mem_entry_t e;
  uintptr_t tb = 0;
  size_t tsz = 0;
  int f = mem_registry_find((uintptr_t)ptr, &e, &tb, &tsz);
  if (f == MEM_FIND_LIVE) {
    size_t len = e.req_size;
    if (e.kind == HSAD_MEM_POOLED) {
      mem_block_t *b = &e.pool->blocks[e.block];
      if (atomic_load_explicit(&b->state, memory_order_acquire) != MEM_BLOCK_IN_USE)
        return hsad_fail(HSAD_ERR_FREED, "%s: the %s %p lies in a pool block that was freed "
                         "(%zu bytes at %p)", what, role, ptr, e.size, (void *)e.base);
      len = (size_t)atomic_load_explicit(&b->req_size, memory_order_relaxed);
    }
    size_t off = (uintptr_t)ptr - e.base;
    if (size > len - off)
      return hsad_fail(HSAD_ERR_RANGE, "%s: the %s %p + %zu bytes runs %zu bytes past the end "
                       "of %s memory at %p (%zu bytes)", what, role, ptr, size,
                       size - (len - off), hsad_mem_kind_name(e.kind), (void *)e.base, len);
    out->kind = e.kind;
    out->kind_name = hsad_mem_kind_name(e.kind);
    out->base = e.base;
    out->checked_access = true;
    out->access_mask = e.access_mask;
    if (e.kind == HSAD_MEM_DEVICE || e.kind == HSAD_MEM_STREAM) {
      out->device_mem = true;
      out->owner = mem_device_index(e.device);
    }
    if (e.kind == HSAD_MEM_REGISTERED) out->gpu_p = (uint8_t *)e.device_ptr + off;
    return HSAD_OK;
  }
  if (f == MEM_FIND_FREED)
    return hsad_fail(HSAD_ERR_FREED, "%s: the %s %p lies in %s memory that was freed (%zu bytes "
                     "at %p)", what, role, ptr, hsad_mem_kind_name(e.kind), tsz, (void *)tb);
  /* not ours: memory ROCr knows (allocated or locked elsewhere), or pageable */
  hsa_amd_pointer_info_t pi;
  memset(&pi, 0, sizeof pi);
  pi.size = sizeof pi;
  if (mem_rocr.hsa_amd_pointer_info(ptr, &pi, NULL, NULL, NULL) == HSA_STATUS_SUCCESS &&
      (pi.type == HSA_EXT_POINTER_TYPE_HSA || pi.type == HSA_EXT_POINTER_TYPE_LOCKED)) {
    uintptr_t hb = (uintptr_t)pi.hostBaseAddress;
    size_t off = (uintptr_t)ptr - hb;
    if (hb && (uintptr_t)ptr >= hb && size > pi.sizeInBytes - off)
      return hsad_fail(HSAD_ERR_RANGE, "%s: the %s %p + %zu bytes runs %zu bytes past the end "
                       "of a ROCr allocation at %p (%zu bytes)", what, role, ptr, size,
                       size - (pi.sizeInBytes - off), (void *)hb, pi.sizeInBytes);
    out->kind_name = "ROCr";
    out->base = hb;
    for (uint32_t i = 0; i < mem_st.device_count; i++)
      if (mem_st.gpu_agents[i].handle == pi.agentOwner.handle) {
        out->device_mem = true;
        out->owner = i;
      }
    if (pi.type == HSA_EXT_POINTER_TYPE_LOCKED && pi.agentBaseAddress)
      out->gpu_p = (uint8_t *)pi.agentBaseAddress + off;
    return HSAD_OK;
  }
  out->pageable = true;
  out->kind_name = "pageable";
  return HSAD_OK;
}

hsad_status_t mem_side_access(const char *what, const char *role, const mem_side_t *s,
                                 uint32_t bd) {
  if (s->pageable || !s->checked_access) return HSAD_OK;
  if (s->device_mem && s->owner == bd) return HSAD_OK;
  if (s->access_mask & (1u << bd)) return HSAD_OK;
  return hsad_fail(HSAD_ERR_NO_ACCESS, "%s: device %u runs the blit and cannot reach the %s "
                   "%p (%s memory at %p, granted to device mask 0x%x): add device %u to its "
                   "access list", what, bd, role, (void *)s->p, s->kind_name, (void *)s->base,
                   s->access_mask, bd);
}

/* ---- options ----------------------------------------------------------------------------- */

const char *hsad_copy_strategy_name(hsad_copy_strategy_t s) {
  switch (s) {
  case HSAD_COPY_DIRECT: return "direct";
  case HSAD_COPY_STAGED: return "staged";
  case HSAD_COPY_PIPELINED: return "pipelined";
  case HSAD_COPY_PINNED: return "pinned";
  }
  return "unknown";
}

static hsad_copy_options_t opts_resolve(const hsad_copy_options_t *o) {
  hsad_copy_options_t r = o ? *o : (hsad_copy_options_t){0};
  if (!r.staging_max) r.staging_max = HSAD_COPY_DEFAULT_STAGING_MAX;
  if (!r.pin_threshold) r.pin_threshold = HSAD_COPY_DEFAULT_PIN_THRESHOLD;
  if (!r.chunk_size) r.chunk_size = HSAD_COPY_DEFAULT_CHUNK;
  if (!r.chunk_buffers) r.chunk_buffers = HSAD_COPY_DEFAULT_BUFFERS;
  return r;
}

static hsad_status_t opts_check(const char *what, const hsad_copy_options_t *o) {
  if (o->pin_threshold <= o->staging_max)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: options: pin_threshold %zu must be above "
                     "staging_max %zu", what, o->pin_threshold, o->staging_max);
  if (o->chunk_size % 4096 || o->chunk_size > HSAD_HOST_POOL_MAX_CLASS)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: options: chunk_size %zu must be a multiple "
                     "of 4096 up to %zu", what, o->chunk_size, (size_t)HSAD_HOST_POOL_MAX_CLASS);
  if (o->chunk_buffers < 2 || o->chunk_buffers > HSAD_COPY_MAX_BUFFERS)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: options: chunk_buffers %u must be 2..%u",
                     what, o->chunk_buffers, (unsigned)HSAD_COPY_MAX_BUFFERS);
  if (o->force > HSAD_COPY_PINNED)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: options: force %u is no strategy", what,
                     o->force);
  if (o->flags & ~(uint32_t)HSAD_COPY_SOURCE_DEFERRED)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: options: flags 0x%x has unknown bits 0x%x "
                     "(known: HSAD_COPY_SOURCE_DEFERRED 0x%x)", what, o->flags,
                     o->flags & ~(uint32_t)HSAD_COPY_SOURCE_DEFERRED,
                     (unsigned)HSAD_COPY_SOURCE_DEFERRED);
  return HSAD_OK;
}

hsad_copy_strategy_t hsad_copy_strategy_for(const hsad_copy_options_t *options, size_t size) {
  hsad_copy_options_t o = opts_resolve(options);
  if (o.force) return (hsad_copy_strategy_t)o.force;
  if (size <= o.staging_max) return HSAD_COPY_STAGED;
  if (size >= o.pin_threshold) return HSAD_COPY_PINNED;
  return HSAD_COPY_PIPELINED;
}

/* ---- operations in flight ------------------------------------------------------------------ */

typedef struct mem_op {
  bool to_device;                  /* pageable source (host -> GPU) vs pageable destination */
  uint8_t *dst, *src;              /* GPU-side addresses for the DMA; host side: the user's */
  uint8_t *host;                   /* the pageable user range */
  size_t size, chunk;
  size_t nchunks;
  uint32_t nbuf;
  hsa_agent_t dst_agent, src_agent;
  hsa_signal_t finish;             /* decremented once at the very end */
  hsad_host_pool_t *pool;
  void *buf[HSAD_COPY_MAX_BUFFERS];
  hsa_signal_t bsig[HSAD_COPY_MAX_BUFFERS];
  size_t cur[HSAD_COPY_MAX_BUFFERS]; /* chunk each buffer carries now */
  _Atomic uint32_t bufs_left;
  uint32_t ndeps;
  hsa_signal_t deps[HSAD_COPY_MAX_DEPS];
  void *pinned;                    /* PINNED: the locked user pointer */
  bool sync;                       /* driven by the calling thread (no handlers) */
  bool fill;                       /* a fill's pieces (messages say "filled") */
  const char *what;                /* the public call, for the failure message */
  mem_report_t report;             /* the key its failure is kept under */
  /* Per buffer: MEM_BUF_REFUSED once ROCr refused the DMA submitted on it (its handler, or
   * the synchronous driver, then retires it), MEM_BUF_ABORTED when the first submission was
   * refused and the caller waits for the handler's acknowledgement (abort_ack). Written before
   * the release store of the buffer's signal to 0 that lets the handler run. */
  _Atomic uint8_t bstate[HSAD_COPY_MAX_BUFFERS];
  _Atomic uint32_t abort_ack;      /* 1: the aborted handler ran and left the op (release) */
  /* The first refusal (stop set once, acq_rel: whoever sets it writes the three fields below;
   * they are read by op_finish after the last buffer retired, ordered by bufs_left's acq_rel) */
  _Atomic bool stop;               /* a refusal was recorded (release: the fields below are set) */
  _Atomic bool claimed;            /* the first refusal claimed the record */
  hsa_status_t refused_status;
  size_t refused_chunk;
  const char *refused_call;        /* the ROCr call that refused */
  _Atomic size_t bytes_done;       /* bytes whose DMA completed (relaxed; read after the last
                                      retire) */
} mem_op_t;

enum { MEM_BUF_RUNNING = 0, MEM_BUF_REFUSED = 1, MEM_BUF_ABORTED = 2 };

/* ---- failures after the call returned ----------------------------------------------------
 * A copy or fill whose later chunk or piece ROCr refused stops there; it still reaches its
 * completion (decremented once: waiters wake and bridged queues go on), and the reason is kept
 * here under the key its waiter holds (mem_report_t), read by hsad_mem_signal_result /
 * hsad_mem_result and taken by the synchronous forms. The last MEM_FAIL_KEEP failures are
 * kept (a ring under fail_lock; fail_count, relaxed, lets a new op skip the lock when none is
 * kept); a new op under the same key forgets the old record; records of an earlier runtime
 * generation are never returned. */
enum { MEM_FAIL_KEEP = 64 };
typedef struct mem_fail {
  uint64_t gen;
  mem_report_t key;
  char msg[512];
} mem_fail_t;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static mem_fail_t fails[MEM_FAIL_KEEP];
static uint32_t fail_next;
static _Atomic uint32_t fail_count;

static mem_fail_t *fail_find(mem_report_t key) { /* fail_lock held */
  uint64_t gen = atomic_load_explicit(&mem_st.generation, memory_order_acquire);
  for (uint32_t i = 0; i < MEM_FAIL_KEEP; i++)
    if (fails[i].gen == gen && fails[i].key.queue == key.queue && fails[i].key.id == key.id)
      return &fails[i];
  return NULL;
}

static void fail_drop(mem_fail_t *f) { /* fail_lock held */
  f->gen = 0;
  atomic_fetch_sub_explicit(&fail_count, 1, memory_order_relaxed);
}

static mem_report_t report_key(hsa_signal_t completion, const mem_report_t *report) {
  return report ? *report : (mem_report_t){NULL, completion.handle};
}

/* Forgets the record of an earlier op under the same key (a new op starts under it). */
static void mem_fail_forget(mem_report_t key) {
  if (!atomic_load_explicit(&fail_count, memory_order_relaxed)) return;
  pthread_mutex_lock(&fail_lock);
  mem_fail_t *f = fail_find(key);
  if (f) fail_drop(f);
  pthread_mutex_unlock(&fail_lock);
}

/* Keeps the failure of a stopped op (op_finish, before the completion is decremented). */
void mem_fail_keep(mem_report_t key, const char *msg) {
  pthread_mutex_lock(&fail_lock);
  mem_fail_t *f = fail_find(key);
  if (!f) {
    f = &fails[fail_next];
    fail_next = (fail_next + 1) % MEM_FAIL_KEEP;
    if (f->gen) fail_drop(f); /* the oldest goes */
    atomic_fetch_add_explicit(&fail_count, 1, memory_order_relaxed);
  }
  f->gen = atomic_load_explicit(&mem_st.generation, memory_order_acquire);
  f->key = key;
  snprintf(f->msg, sizeof f->msg, "%s", msg);
  pthread_mutex_unlock(&fail_lock);
}

static void mem_fail_record(const mem_op_t *op) {
  size_t done = atomic_load_explicit(&op->bytes_done, memory_order_relaxed);
  size_t c = op->refused_chunk, len = op->size - c * op->chunk < op->chunk
                                          ? op->size - c * op->chunk : op->chunk;
  const char *hs = NULL;
  if (!mem_rocr.hsa_status_string ||
      mem_rocr.hsa_status_string(op->refused_status, &hs) != HSA_STATUS_SUCCESS || !hs)
    hs = "unknown status";
  char msg[sizeof fails[0].msg];
  snprintf(msg, sizeof msg, "%s: %s refused %s %zu of %zu (%zu bytes at offset %zu): HSA "
           "status 0x%x (%s); the %s stopped there: %zu of %zu bytes were not %s", op->what,
           op->refused_call, op->fill ? "piece" : "chunk", c, op->nchunks, len, c * op->chunk,
           (unsigned)op->refused_status, hs, op->fill ? "fill" : "copy", op->size - done,
           op->size, op->fill ? "filled" : "copied");
  mem_fail_keep(op->report, msg);
}

/* Copies the kept message into msg (and forgets the record when take); false: none kept. */
static bool fail_copy(mem_report_t key, bool take, char *msg, size_t n) {
  if (!atomic_load_explicit(&fail_count, memory_order_relaxed)) return false;
  pthread_mutex_lock(&fail_lock);
  mem_fail_t *f = fail_find(key);
  if (f) {
    snprintf(msg, n, "%s", f->msg);
    if (take) fail_drop(f);
  }
  pthread_mutex_unlock(&fail_lock);
  return f != NULL;
}

/* HSAD_ERR_HSA with the kept message (and the record forgotten when take), or HSAD_OK. */
static hsad_status_t fail_get(mem_report_t key, bool take) {
  char msg[sizeof fails[0].msg];
  if (!fail_copy(key, take, msg, sizeof msg)) return HSAD_OK;
  return hsad_fail(HSAD_ERR_HSA, "%s", msg);
}

static hsad_status_t mem_fail_take(hsa_signal_t completion, const mem_report_t *report) {
  return fail_get(report_key(completion, report), true);
}

hsad_status_t hsad_mem_signal_result(hsa_signal_t completion) {
  if (!completion.handle)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_mem_signal_result: completion signal is 0");
  return fail_get((mem_report_t){NULL, completion.handle}, false);
}

hsad_status_t hsad_mem_result(const hsad_completion_t *completion) {
  if (!completion)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_mem_result: completion is NULL");
  if (!completion->queue) return HSAD_OK;
  return fail_get((mem_report_t){completion->queue, completion->epoch}, false);
}

/* Records the first refusal; later ones only stop the op too. */
static void op_refused(mem_op_t *op, const char *call, hsa_status_t st, size_t chunk) {
  bool was = false;
  if (atomic_compare_exchange_strong_explicit(&op->claimed, &was, true, memory_order_acq_rel,
                                              memory_order_acquire)) {
    op->refused_call = call;
    op->refused_status = st;
    op->refused_chunk = chunk;
    /* release: whoever sees stop sees which chunk was refused (chunk_step copies the ones
     * before it) */
    atomic_store_explicit(&op->stop, true, memory_order_release);
  }
}

static void op_finish(mem_op_t *op) {
  for (uint32_t b = 0; b < op->nbuf; b++) {
    if (op->buf[b]) hsad_host_pool_free(op->pool, op->buf[b]);
    if (op->bsig[b].handle) mem_signal_give(op->bsig[b]);
  }
  if (op->pinned) mem_rocr.hsa_amd_memory_unlock(op->pinned);
  if (atomic_load_explicit(&op->stop, memory_order_acquire)) mem_fail_record(op);
  hsa_signal_t fin = op->finish;
  free(op);
  sig_release_sub(fin, 1); /* last: the op is gone */
}

static size_t chunk_len(const mem_op_t *op, size_t c) {
  size_t off = c * op->chunk;
  return op->size - off < op->chunk ? op->size - off : op->chunk;
}

/* Submits the DMA of chunk c through buffer b (host side staged already for to_device); its
 * signal is at 1 already (and watched, for an asynchronous op). */
static hsa_status_t chunk_dma(mem_op_t *op, uint32_t b, size_t c, bool with_deps) {
  size_t off = c * op->chunk, len = chunk_len(op, c);
  void *d = op->to_device ? (void *)(op->dst + off) : op->buf[b];
  const void *s = op->to_device ? op->buf[b] : (const void *)(op->src + off);
  return mem_rocr.hsa_amd_memory_async_copy(d, op->dst_agent, s, op->src_agent, len,
                                            with_deps ? op->ndeps : 0,
                                            with_deps && op->ndeps ? op->deps : NULL, op->bsig[b]);
}

/* ROCr refused the DMA of buffer b after its handler was armed (or, synchronous, before the
 * driver waits on it): the buffer retires when its signal, set to 0 here, is seen. */
static void buf_refused(mem_op_t *op, uint32_t b, hsa_status_t st, size_t c) {
  op_refused(op, "hsa_amd_memory_async_copy", st, c);
  atomic_store_explicit(&op->bstate[b], MEM_BUF_REFUSED, memory_order_relaxed);
  sig_release_sub(op->bsig[b], 1); /* release: the state is seen by whoever sees 0 */
}

static bool chunk_done(hsa_signal_value_t v, void *arg);

/* Waits (10 s at most) until the handler of an aborted first submission acknowledged; false:
 * it did not, and the op must be leaked (the handler may still read it). */
static bool abort_wait(mem_op_t *op) {
  uint64_t end = hsad_now_ns() + 10000000000ull;
  while (!atomic_load_explicit(&op->abort_ack, memory_order_acquire)) {
    if (hsad_now_ns() >= end) return false;
    sched_yield();
  }
  return true;
}

/* Starts buffer b on its first chunk (b): stage (to_device), arm the handler (asynchronous),
 * DMA. HSA_STATUS_SUCCESS also when ROCr refused the DMA of a buffer b > 0 (it is marked
 * refused and retires through its handler); otherwise nothing is in flight on buffer b: the
 * handler could not be armed, or (b == 0) the DMA was refused and the handler, if any, has
 * acknowledged: the caller frees the op. */
static hsa_status_t buf_start(mem_op_t *op, uint32_t b) {
  op->cur[b] = b;
  if (op->to_device) memcpy(op->buf[b], op->host + b * op->chunk, chunk_len(op, b));
  mem_rocr.hsa_signal_store_screlease(op->bsig[b], 1);
  hsa_status_t st;
  if (!op->sync) {
    /* the buffer index is encoded in the handler argument: op pointer + b (b < 8, op
     * 8-aligned) */
    st = mem_rocr.hsa_amd_signal_async_handler(op->bsig[b], HSA_SIGNAL_CONDITION_EQ, 0,
                                               chunk_done, (void *)((uintptr_t)op | b));
    if (st != HSA_STATUS_SUCCESS) {
      op->cur[b] = SIZE_MAX;
      if (b) op_refused(op, "hsa_amd_signal_async_handler", st, b);
      return st;
    }
  }
  st = chunk_dma(op, b, b, true);
  if (st == HSA_STATUS_SUCCESS) return st;
  if (b) {
    buf_refused(op, b, st, b);
    return HSA_STATUS_SUCCESS;
  }
  op->cur[0] = SIZE_MAX;
  if (!op->sync) { /* the armed handler only acknowledges */
    atomic_store_explicit(&op->bstate[0], MEM_BUF_ABORTED, memory_order_relaxed);
    sig_release_sub(op->bsig[0], 1);
    if (!abort_wait(op)) op->nbuf = 0; /* tells the caller to leak it */
  }
  return st;
}

enum { STEP_NEXT, STEP_RETIRED, STEP_FINISHED };

/* Buffer b's DMA completed (or was refused): drain it (from device), then refill it with its
 * next chunk, or retire it (refused, stopped, or no chunk left; the last buffer retired
 * finishes the op, which is then gone). */
static int chunk_step(mem_op_t *op, uint32_t b) {
  (void)sig_acquire(op->bsig[b]);
  size_t c = op->cur[b];
  if (atomic_load_explicit(&op->bstate[b], memory_order_relaxed) != MEM_BUF_REFUSED) {
    if (!op->to_device) memcpy(op->host + c * op->chunk, op->buf[b], chunk_len(op, c));
    atomic_fetch_add_explicit(&op->bytes_done, chunk_len(op, c), memory_order_relaxed);
    size_t next = c + op->nbuf;
    /* a refusal stops the chunks after the refused one; those before it are still copied, so
     * every byte below the refused chunk arrives whatever the buffers' timing */
    if (next < op->nchunks && (!atomic_load_explicit(&op->stop, memory_order_acquire) ||
                               next < op->refused_chunk)) {
      op->cur[b] = next;
      if (op->to_device) memcpy(op->buf[b], op->host + next * op->chunk, chunk_len(op, next));
      mem_rocr.hsa_signal_store_screlease(op->bsig[b], 1);
      hsa_status_t st = chunk_dma(op, b, next, false);
      if (st == HSA_STATUS_SUCCESS) return STEP_NEXT;
      /* ROCr refused a later chunk: the copy stops; the handler (watching again) or the
       * driver sees the buffer at 0, refused, and retires it */
      buf_refused(op, b, st, next);
      return STEP_NEXT;
    }
  }
  op->cur[b] = SIZE_MAX; /* retired */
  if (atomic_fetch_sub_explicit(&op->bufs_left, 1, memory_order_acq_rel) == 1) {
    op_finish(op);
    return STEP_FINISHED;
  }
  return STEP_RETIRED;
}

/* A completion handler's first step (chunks, pinned copies, fills): true when buffer b was
 * aborted, which is then acknowledged (the op must not be touched after: its starter frees
 * it). */
static bool buf_aborted(mem_op_t *op, uint32_t b) {
  if (atomic_load_explicit(&op->bstate[b], memory_order_acquire) != MEM_BUF_ABORTED) return false;
  atomic_store_explicit(&op->abort_ack, 1, memory_order_release); /* last touch of op */
  return true;
}

static bool chunk_done(hsa_signal_value_t v, void *arg) {
  (void)v;
  mem_op_t *op = (mem_op_t *)((uintptr_t)arg & ~(uintptr_t)7);
  uint32_t b = (uint32_t)((uintptr_t)arg & 7);
  if (buf_aborted(op, b)) return false;
  return chunk_step(op, b) == STEP_NEXT; /* true: watch the refilled buffer again */
}

/* Waits until the signal is 0: spins (yielding: the packet processor may need this core) for
 * up to 20 us, then blocks in ROCr in slices of at most 10 ms until deadline_ns. */
static bool sig_wait_zero(hsa_signal_t sig, uint64_t deadline_ns) {
  uint64_t spin_until = hsad_now_ns() + 20000;
  while (sig_acquire(sig) != 0) {
    uint64_t now = hsad_now_ns();
    if (now >= deadline_ns) return false;
    if (now < spin_until) {
      sched_yield();
      continue;
    }
    uint64_t slice = deadline_ns - now < 10000000ull ? deadline_ns - now : 10000000ull;
    mem_rocr.hsa_signal_wait_scacquire(sig, HSA_SIGNAL_CONDITION_EQ, 0, slice,
                                       HSA_WAIT_STATE_BLOCKED);
  }
  return true;
}

static bool pinned_done(hsa_signal_value_t v, void *arg);

/* Drives buffer b of an op on the calling thread until it retired, however long its DMAs
 * take (ROCr refused to watch it); returns the last step. The op stays alive meanwhile: it
 * finishes only once b retired. */
static int buf_drive_all(mem_op_t *op, uint32_t b, hsa_signal_t sig) {
  for (;;) {
    sig_wait_zero(sig, UINT64_MAX);
    int r = chunk_step(op, b);
    if (r != STEP_NEXT) return r;
  }
}

/* Drives a synchronous op on the calling thread: chunks complete in submission order (ROCr's
 * blit queue), chunk c on buffer c % nbuf. At the deadline the buffers still in flight are
 * handed to ROCr's event thread (the copy completes in the background) and false is returned.
 * A buffer ROCr refuses to watch then is driven here to its end, past the deadline (never
 * left in flight unwatched); true when no buffer was handed over (the op is done). */
static bool op_drive(mem_op_t *op, uint64_t deadline_ns) {
  if (op->pinned) {
    if (!sig_wait_zero(op->bsig[0], deadline_ns)) {
      if (mem_rocr.hsa_amd_signal_async_handler(op->bsig[0], HSA_SIGNAL_CONDITION_EQ, 0,
                                                pinned_done, op) == HSA_STATUS_SUCCESS)
        return false;
      sig_wait_zero(op->bsig[0], UINT64_MAX); /* cannot be watched: waited for here */
    }
    op_finish(op);
    return true;
  }
  for (size_t c = 0;; c++) {
    uint32_t b = (uint32_t)(c % op->nbuf);
    if (op->cur[b] == SIZE_MAX) continue; /* retired early (a refusal stopped the copy) */
    if (!sig_wait_zero(op->bsig[b], deadline_ns)) {
      /* buffers still active carry chunks >= c: watch them all from now on */
      uint32_t nbuf = op->nbuf, active[HSAD_COPY_MAX_BUFFERS], na = 0;
      for (uint32_t k = 0; k < nbuf; k++)
        if (op->cur[k] != SIZE_MAX) active[na++] = k;
      hsa_signal_t sigs[HSAD_COPY_MAX_BUFFERS];
      for (uint32_t k = 0; k < na; k++) sigs[k] = op->bsig[active[k]];
      op->sync = false;
      uint32_t orphans[HSAD_COPY_MAX_BUFFERS], no = 0;
      bool handed = false;
      for (uint32_t k = 0; k < na; k++) {
        if (mem_rocr.hsa_amd_signal_async_handler(sigs[k], HSA_SIGNAL_CONDITION_EQ, 0,
                                                  chunk_done,
                                                  (void *)((uintptr_t)op | active[k])) ==
            HSA_STATUS_SUCCESS)
          handed = true;
        else
          orphans[no++] = k;
      }
      /* an orphan keeps the op alive until it retired; after the last one retired, op may be
       * gone (handled buffers finish it elsewhere) */
      int r = STEP_RETIRED;
      for (uint32_t k = 0; k < no; k++) r = buf_drive_all(op, active[orphans[k]], sigs[orphans[k]]);
      return !handed && r == STEP_FINISHED;
    }
    int r = chunk_step(op, b);
    if (r == STEP_FINISHED) return true;
  }
}

/* Stages buffers 1..nbuf-1 of a pipeline on ROCr's event thread. */
static void pipeline_rest(void *arg) {
  mem_op_t *op = arg;
  /* once every buffer started, the op may finish (and be gone) on another thread: nbuf is
   * read before */
  uint32_t nbuf = op->nbuf, started = 1;
  while (started < nbuf &&
         (!atomic_load_explicit(&op->stop, memory_order_acquire) || started < op->refused_chunk) &&
         buf_start(op, started) == HSA_STATUS_SUCCESS)
    started++;
  /* buffers that could not start (or whose first chunk follows a refused one) retire at once */
  uint32_t missing = nbuf - started;
  if (missing &&
      atomic_fetch_sub_explicit(&op->bufs_left, missing, memory_order_acq_rel) == missing)
    op_finish(op);
}

static bool pinned_done(hsa_signal_value_t v, void *arg) {
  (void)v;
  mem_op_t *op = arg;
  (void)sig_acquire(op->bsig[0]);
  if (buf_aborted(op, 0)) return false;
  atomic_store_explicit(&op->bytes_done, op->size, memory_order_relaxed);
  op_finish(op);
  return false;
}

/* Waits for deps (value 0) and then decrements `completion`, for zero-byte copies. */
typedef struct mem_after { uint32_t i, n; hsa_signal_t deps[HSAD_COPY_MAX_DEPS]; hsa_signal_t fin; } mem_after_t;
static bool after_dep(hsa_signal_value_t v, void *arg) {
  (void)v;
  mem_after_t *a = arg;
  (void)sig_acquire(a->deps[a->i]);
  while (++a->i < a->n)
    if (mem_rocr.hsa_amd_signal_async_handler(a->deps[a->i], HSA_SIGNAL_CONDITION_EQ, 0,
                                              after_dep, a) == HSA_STATUS_SUCCESS)
      return false;
  hsa_signal_t fin = a->fin;
  free(a);
  sig_release_sub(fin, 1);
  return false;
}

static hsad_status_t after_deps(const hsa_signal_t *deps, uint32_t n, hsa_signal_t completion) {
  if (n == 0) {
    sig_release_sub(completion, 1);
    return HSAD_OK;
  }
  mem_after_t *a = calloc(1, sizeof *a);
  if (!a) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "memory: zero-byte copy bookkeeping");
  a->n = n;
  a->i = 0;
  memcpy(a->deps, deps, n * sizeof *deps);
  a->fin = completion;
  hsa_status_t st = mem_rocr.hsa_amd_signal_async_handler(deps[0], HSA_SIGNAL_CONDITION_EQ, 0,
                                                          after_dep, a);
  if (st != HSA_STATUS_SUCCESS) {
    free(a);
    return mem_hsa_fail(st, "memory: hsa_amd_signal_async_handler");
  }
  return HSAD_OK;
}

/* ---- the copy ------------------------------------------------------------------------------ */

hsa_agent_t mem_cpu_agent_of(hsad_device_t *device) {
  int32_t c = hsad_device_info(device)->nearest_cpu;
  return mem_st.cpu_agents[c < 0 ? 0 : c];
}

static hsad_status_t check_deps(const char *what, const hsa_signal_t *deps, uint32_t n) {
  if (n > HSAD_COPY_MAX_DEPS)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: dep_count %u is above %u", what, n,
                     (unsigned)HSAD_COPY_MAX_DEPS);
  if (n && !deps)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: deps is NULL with dep_count %u", what, n);
  return HSAD_OK;
}

hsad_status_t mem_copy_start(const char *what, hsad_device_t *device, void *dst,
                             const void *src, size_t size, const hsa_signal_t *deps,
                             uint32_t dep_count, hsa_signal_t completion,
                             const hsad_copy_options_t *options,
                             hsad_copy_strategy_t *out_strategy, uint64_t sync_deadline_ns,
                             bool check_only, const mem_report_t *report) {
  hsad_status_t s = mem_ready(device, what);
  if (s) return s;
  if ((s = check_deps(what, deps, dep_count))) return s;
  if (!completion.handle)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: completion signal is 0", what);
  hsad_copy_options_t o = opts_resolve(options);
  if ((s = opts_check(what, &o))) return s;
  if (!check_only) mem_fail_forget(report_key(completion, report));
  if (size == 0) {
    if (out_strategy) *out_strategy = HSAD_COPY_DIRECT;
    return check_only ? HSAD_OK : after_deps(deps, dep_count, completion);
  }
  if (!dst || !src)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", what, !dst ? "dst" : "src");
  mem_side_t d, sr;
  if ((s = mem_side_classify(what, "destination", dst, size, &d))) return s;
  if ((s = mem_side_classify(what, "source", src, size, &sr))) return s;
  uintptr_t a = (uintptr_t)dst, b = (uintptr_t)src;
  if (a < b + size && b < a + size)
    return hsad_fail(HSAD_ERR_OVERLAP, "%s: destination %p and source %p overlap over %zu bytes "
                     "(%zu bytes each)", what, dst, src,
                     (a < b ? a + size - b : b + size - a), size);
  if (d.pageable && sr.pageable)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: destination %p and source %p are both "
                     "pageable host memory: nothing for a GPU to copy (use memcpy)", what, dst, src);
  uint32_t dev = mem_device_index(device);
  uint32_t bd = sr.device_mem ? sr.owner : d.device_mem ? d.owner : dev;
  if ((s = mem_side_access(what, "destination", &d, bd))) return s;
  if ((s = mem_side_access(what, "source", &sr, bd))) return s;

  hsa_agent_t cpu = mem_cpu_agent_of(device);
  hsa_agent_t dst_agent = d.device_mem ? mem_st.gpu_agents[d.owner] : cpu;
  hsa_agent_t src_agent = sr.device_mem ? mem_st.gpu_agents[sr.owner]
                                        : (d.device_mem ? cpu : mem_st.gpu_agents[bd]);
  /* CUDA's rule for a pageable source: reusable once the call returned. Unless the caller
   * accepted the deferred read (HSAD_COPY_SOURCE_DEFERRED) or the call waits for the copy
   * itself (synchronous forms), every byte of the source is staged before the call returns:
   * never pinned in place, and a pipeline gets a staging block for every chunk. */
  bool stage_all = sr.pageable && !(o.flags & HSAD_COPY_SOURCE_DEFERRED) && !sync_deadline_ns;
  hsad_copy_strategy_t strat = d.pageable || sr.pageable ? hsad_copy_strategy_for(&o, size)
                                                         : HSAD_COPY_DIRECT;
  if (stage_all && strat == HSAD_COPY_PINNED) {
    if (o.force == HSAD_COPY_PINNED)
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: options: force pinned reads the pageable "
                       "source %p after the call returns: set HSAD_COPY_SOURCE_DEFERRED in flags "
                       "to accept that contract", what, src);
    strat = HSAD_COPY_PIPELINED;
  }
  if (check_only) {
    if (out_strategy) *out_strategy = strat;
    return HSAD_OK;
  }
  if (!d.pageable && !sr.pageable) {
    if (out_strategy) *out_strategy = HSAD_COPY_DIRECT;
    hsa_status_t st = mem_rocr.hsa_amd_memory_async_copy(d.gpu_p, dst_agent, sr.gpu_p, src_agent,
                                                         size, dep_count,
                                                         dep_count ? deps : NULL, completion);
    if (st != HSA_STATUS_SUCCESS)
      return mem_hsa_fail(st, "%s: hsa_amd_memory_async_copy(%p <- %p, %zu bytes)", what, dst,
                          src, size);
    return HSAD_OK;
  }

  /* a pageable side: the other side is what the GPU reaches; the staging blocks and pinned
   * ranges stand in for the pageable one */
  hsad_host_pool_t *pool = NULL;
  if (strat != HSAD_COPY_PINNED && (s = hsad_host_pool_get(device, &pool))) return s;
  mem_op_t *op = calloc(1, sizeof *op);
  if (!op) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: %zu bytes of bookkeeping", what, sizeof *op);
  op->to_device = sr.pageable;
  op->host = sr.pageable ? sr.p : d.p;
  op->dst = d.gpu_p;
  op->src = sr.gpu_p;
  op->size = size;
  op->finish = completion;
  op->pool = pool;
  op->ndeps = dep_count;
  op->sync = sync_deadline_ns != 0;
  op->what = what;
  op->report = report_key(completion, report);
  if (dep_count) memcpy(op->deps, deps, dep_count * sizeof *deps);
  /* the pageable side is host memory of the device's nearest CPU once staged or pinned */
  op->dst_agent = d.pageable ? cpu : dst_agent;
  op->src_agent = sr.pageable ? (d.device_mem ? cpu : mem_st.gpu_agents[bd]) : src_agent;
  if (out_strategy) *out_strategy = strat;

  if (strat == HSAD_COPY_PINNED) {
    void *agent_ptr = NULL;
    int32_t c = hsad_device_info(device)->nearest_cpu;
    hsa_status_t st = mem_rocr.hsa_amd_memory_lock_to_pool(
        op->host, size, &mem_st.gpu_agents[bd], 1, mem_st.cpu_fine[c < 0 ? 0 : c], 0, &agent_ptr);
    if (st != HSA_STATUS_SUCCESS) {
      void *host = op->host;
      free(op);
      return mem_hsa_fail(st, "%s: hsa_amd_memory_lock_to_pool(%p, %zu bytes)", what, host, size);
    }
    op->pinned = op->host;
    if ((s = mem_signal_take(1, &op->bsig[0]))) {
      mem_rocr.hsa_amd_memory_unlock(op->pinned);
      free(op);
      return s;
    }
    op->nbuf = 1;
    void *dd = op->to_device ? (void *)op->dst : agent_ptr;
    const void *ss = op->to_device ? agent_ptr : (const void *)op->src;
    /* asynchronous: the handler is armed before the DMA exists, so a DMA is never in flight
     * unwatched (a refused handler leaves nothing to undo) */
    if (!op->sync) {
      st = mem_rocr.hsa_amd_signal_async_handler(op->bsig[0], HSA_SIGNAL_CONDITION_EQ, 0,
                                                 pinned_done, op);
      if (st != HSA_STATUS_SUCCESS) {
        mem_signal_give(op->bsig[0]);
        mem_rocr.hsa_amd_memory_unlock(op->pinned);
        free(op);
        return mem_hsa_fail(st, "%s: hsa_amd_signal_async_handler(pinned copy %p <- %p, %zu "
                            "bytes; nothing submitted)", what, dst, src, size);
      }
    }
    /* ROCr refuses a non-NULL dep array with a zero count (INVALID_ARGUMENT) */
    st = mem_rocr.hsa_amd_memory_async_copy(dd, op->dst_agent, ss, op->src_agent, size,
                                            dep_count, dep_count ? op->deps : NULL, op->bsig[0]);
    if (st != HSA_STATUS_SUCCESS) {
      bool freeable = true;
      if (!op->sync) { /* release the armed handler; it only acknowledges */
        atomic_store_explicit(&op->bstate[0], MEM_BUF_ABORTED, memory_order_relaxed);
        sig_release_sub(op->bsig[0], 1);
        freeable = abort_wait(op);
      }
      if (freeable) {
        mem_signal_give(op->bsig[0]);
        mem_rocr.hsa_amd_memory_unlock(op->pinned);
        free(op);
      }
      return mem_hsa_fail(st, "%s: hsa_amd_memory_async_copy(%p <- %p, %zu bytes, pinned)",
                          what, dst, src, size);
    }
    if (op->sync && !op_drive(op, sync_deadline_ns))
      return hsad_fail(HSAD_ERR_TIMEOUT, "%s: %zu bytes (pinned in place) not copied by the "
                       "deadline: the copy goes on in the background", what, size);
    return HSAD_OK;
  }

  op->chunk = strat == HSAD_COPY_STAGED ? size : o.chunk_size;
  /* staging the whole source: at most HSAD_COPY_MAX_BUFFERS chunks (larger ones if needed),
   * one block each */
  if (stage_all && strat == HSAD_COPY_PIPELINED &&
      size / HSAD_COPY_MAX_BUFFERS >= op->chunk) {
    size_t per = (size + HSAD_COPY_MAX_BUFFERS - 1) / HSAD_COPY_MAX_BUFFERS;
    op->chunk = (per + 4095) & ~(size_t)4095;
  }
  op->nchunks = (size + op->chunk - 1) / op->chunk;
  op->nbuf = strat == HSAD_COPY_STAGED ? 1 : stage_all ? (uint32_t)op->nchunks : o.chunk_buffers;
  if (op->nbuf > op->nchunks) op->nbuf = (uint32_t)op->nchunks;
  /* every staging block and signal is taken before anything is submitted */
  for (uint32_t i = 0; i < op->nbuf; i++) {
    if (!s) s = hsad_host_pool_alloc(pool, op->chunk, &op->buf[i]);
    if (!s) s = mem_signal_take(1, &op->bsig[i]);
  }
  if (s) {
    hsad_status_t keep = s;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", hsad_last_error());
    for (uint32_t i = 0; i < op->nbuf; i++) {
      if (op->buf[i]) hsad_host_pool_free(pool, op->buf[i]);
      if (op->bsig[i].handle) mem_signal_give(op->bsig[i]);
    }
    free(op);
    return hsad_fail(keep, "%s", msg);
  }
  atomic_store_explicit(&op->bufs_left, op->nbuf, memory_order_relaxed);
  /* the first buffer on the caller's thread (the only wait the caller pays), the others on
   * ROCr's event thread */
  /* with one buffer an asynchronous op may be gone once buf_start returned */
  uint32_t nbuf = op->nbuf;
  size_t nchunks = op->nchunks;
  bool sync = op->sync;
  hsa_status_t st = buf_start(op, 0);
  if (st != HSA_STATUS_SUCCESS) {
    bool dma_refused = sync || op->bstate[0] == MEM_BUF_ABORTED;
    if (op->nbuf) { /* 0: the aborted handler never acknowledged: the op is left to it */
      for (uint32_t i = 0; i < op->nbuf; i++) {
        hsad_host_pool_free(pool, op->buf[i]);
        mem_signal_give(op->bsig[i]);
      }
      free(op);
    }
    if (!dma_refused)
      return mem_hsa_fail(st, "%s: hsa_amd_signal_async_handler(first of %zu chunk(s) %p <- "
                          "%p; nothing submitted)", what, nchunks, dst, src);
    return mem_hsa_fail(st, "%s: hsa_amd_memory_async_copy(%p <- %p, first of %zu chunk(s))",
                        what, dst, src, nchunks);
  }
  if (sync) {
    /* every buffer started here, then driven here: no event-thread hop on the way */
    if (nbuf > 1) pipeline_rest(op);
    if (!op_drive(op, sync_deadline_ns))
      return hsad_fail(HSAD_ERR_TIMEOUT, "%s: %zu bytes not copied by the deadline: the copy "
                       "goes on in the background", what, size);
    return mem_fail_take(completion, report);
  }
  if (nbuf > 1) {
    /* staging the whole source: every chunk is copied out of it here, before returning */
    st = stage_all ? HSA_STATUS_ERROR : mem_rocr.hsa_amd_async_function(pipeline_rest, op);
    if (st != HSA_STATUS_SUCCESS) pipeline_rest(op); /* stage them here instead */
  }
  return HSAD_OK;
}

hsad_status_t hsad_memcpy_async_signals(hsad_device_t *device, void *dst, const void *src,
                                        size_t size, const hsa_signal_t *deps, uint32_t dep_count,
                                        hsa_signal_t completion,
                                        const hsad_copy_options_t *options,
                                        hsad_copy_strategy_t *out_strategy) {
  return mem_copy_start("hsad_memcpy_async_signals", device, dst, src, size, deps, dep_count,
                        completion, options, out_strategy, 0, false, NULL);
}

/* ---- fills ------------------------------------------------------------------------------- */

static bool fill_done(hsa_signal_value_t v, void *arg) {
  (void)v;
  mem_op_t *op = arg;
  (void)sig_acquire(op->bsig[0]);
  if (buf_aborted(op, 0)) return false;
  op_finish(op);
  return false;
}

hsad_status_t mem_fill_start(const char *what, hsad_device_t *device, void *dst,
                             uint32_t pattern, uint32_t width, size_t count,
                             const hsa_signal_t *deps, uint32_t dep_count,
                             hsa_signal_t completion, bool check_only,
                             const mem_report_t *report) {
  hsad_status_t s = mem_ready(device, what);
  if (s) return s;
  if ((s = check_deps(what, deps, dep_count))) return s;
  if (!completion.handle)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: completion signal is 0", what);
  if (width != 1 && width != 2 && width != 4)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: width %u is not 1, 2 or 4", what, width);
  if (count > SIZE_MAX / width)
    return hsad_fail(HSAD_ERR_RANGE, "%s: %zu elements of %u bytes overflow size_t", what, count,
                     width);
  size_t size = count * width;
  if (!check_only) mem_fail_forget(report_key(completion, report));
  if (size == 0) return check_only ? HSAD_OK : after_deps(deps, dep_count, completion);
  if (!dst) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: dst is NULL", what);
  mem_side_t d;
  if ((s = mem_side_classify(what, "destination", dst, size, &d))) return s;
  if (d.pageable)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: destination %p is pageable host memory: "
                     "fill it with memset, or register it (hsad_mem_register)", what, dst);
  uint32_t bd = d.device_mem ? d.owner : mem_device_index(device);
  if ((s = mem_side_access(what, "destination", &d, bd))) return s;
  if (check_only) return HSAD_OK;
  hsad_host_pool_t *pool = NULL;
  if ((s = hsad_host_pool_get(device, &pool))) return s;
  size_t blk = size < ((size_t)1 << 20) ? size : ((size_t)1 << 20); /* multiple of width */
  mem_op_t *op = calloc(1, sizeof *op);
  if (!op) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: bookkeeping", what);
  op->pool = pool;
  op->finish = completion;
  op->nbuf = 1;
  op->fill = true;
  op->what = what;
  op->report = report_key(completion, report);
  op->size = size;
  op->chunk = blk;
  size_t n = (size + blk - 1) / blk;
  op->nchunks = n;
  s = hsad_host_pool_alloc(pool, blk, &op->buf[0]);
  if (!s) s = mem_signal_take((hsa_signal_value_t)n, &op->bsig[0]);
  if (s) {
    hsad_status_t keep = s;
    if (op->buf[0]) hsad_host_pool_free(pool, op->buf[0]);
    free(op);
    return keep;
  }
  uint8_t *pb = op->buf[0];
  for (size_t i = 0; i < blk; i += width) memcpy(pb + i, &pattern, width); /* host order */
  /* Every piece counted, and what the loop needs copied out of the op, before the handler is
   * armed: once armed, the op is the handler's, and after the last piece it may be gone. The
   * loop touches the op again only when ROCr refuses a piece (then the signal is still above
   * 0, so the op is alive). (ThreadSanitizer sees the arming's lock inside ROCr, not the order
   * through ROCr's uninstrumented DMA submission: a store to the op in the loop read as a race
   * with the handler's free.) */
  atomic_store_explicit(&op->bytes_done, size, memory_order_relaxed);
  hsa_signal_t bsig = op->bsig[0];
  /* the handler is armed before any piece is submitted: nothing is ever in flight unwatched */
  hsa_status_t st = mem_rocr.hsa_amd_signal_async_handler(bsig, HSA_SIGNAL_CONDITION_EQ,
                                                          0, fill_done, op);
  if (st != HSA_STATUS_SUCCESS) {
    hsad_host_pool_free(pool, op->buf[0]);
    mem_signal_give(op->bsig[0]);
    free(op);
    return mem_hsa_fail(st, "%s: hsa_amd_signal_async_handler(fill of %zu bytes at %p; nothing "
                        "submitted)", what, size, dst);
  }
  hsa_agent_t dagent = d.device_mem ? mem_st.gpu_agents[d.owner] : mem_cpu_agent_of(device);
  for (size_t i = 0; i < n; i++) {
    size_t off = i * blk, len = size - off < blk ? size - off : blk;
    st = mem_rocr.hsa_amd_memory_async_copy(d.gpu_p + off, dagent, pb, mem_st.gpu_agents[bd],
                                            len, dep_count, dep_count ? deps : NULL, bsig);
    if (st == HSA_STATUS_SUCCESS) continue;
    /* refused: the signal is still >= n - i > 0, so the op is alive; the pieces before this
     * one are what will have been done */
    atomic_store_explicit(&op->bytes_done, off, memory_order_relaxed);
    if (i == 0) { /* nothing in flight: release the handler, which only acknowledges */
      atomic_store_explicit(&op->bstate[0], MEM_BUF_ABORTED, memory_order_relaxed);
      sig_release_sub(op->bsig[0], (hsa_signal_value_t)n);
      if (abort_wait(op)) {
        hsad_host_pool_free(pool, op->buf[0]);
        mem_signal_give(op->bsig[0]);
        free(op);
      }
      return mem_hsa_fail(st, "%s: hsa_amd_memory_async_copy(%p, %zu bytes of pattern)", what,
                          dst, len);
    }
    /* a later piece refused: the fill stops; the pieces in flight complete, then the op
     * finishes with the failure kept for its waiter */
    op_refused(op, "hsa_amd_memory_async_copy", st, i);
    sig_release_sub(op->bsig[0], (hsa_signal_value_t)(n - i));
    break;
  }
  return HSAD_OK;
}

hsad_status_t hsad_memset_async_signals(hsad_device_t *device, void *dst, uint32_t pattern,
                                        uint32_t width, size_t count, const hsa_signal_t *deps,
                                        uint32_t dep_count, hsa_signal_t completion) {
  return mem_fill_start("hsad_memset_async_signals", device, dst, pattern, width, count, deps,
                        dep_count, completion, false, NULL);
}

/* ---- synchronous forms ----------------------------------------------------------------- */

/* ---- synchronous copies and fills that timed out ----------------------------------------
 * A timed-out hsad_memcpy / hsad_memset goes on in the background: its signal and the ranges
 * it touches are kept here until it finished, so freeing that memory is refused
 * (HSAD_ERR_IN_USE) instead of faulting the copy, and hsad_mem_wait_pending can wait for it.
 * A list under pend_lock; pend_count (relaxed reads) lets checks skip the lock when empty. A
 * node being waited on (waiters > 0) is not reaped. Nodes of an earlier runtime generation
 * are dropped (their signals died with it). */
typedef struct mem_pending {
  hsa_signal_t sig;
  uint64_t gen;
  uint32_t device;
  uint32_t waiters;
  const char *what;                /* "hsad_memcpy" or "hsad_memset" */
  uintptr_t lo[2];                 /* destination, source (size 0: none) */
  size_t size[2];
  struct mem_pending *next;
} mem_pending_t;
static pthread_mutex_t pend_lock = PTHREAD_MUTEX_INITIALIZER;
static mem_pending_t *pend_head;
static _Atomic uint32_t pend_count;
/* The first failure (a refused later chunk or piece) of a timed-out op that finished, not yet
 * returned by hsad_mem_wait_pending (pend_lock); later ones are counted. */
static struct {
  uint64_t gen;
  uint32_t device, more;
  char msg[sizeof fails[0].msg];
} late;

/* Drops finished nodes (and those of an earlier generation), keeping a failure of theirs for
 * hsad_mem_wait_pending; pend_lock held. */
static void pending_reap(void) {
  uint64_t gen = atomic_load_explicit(&mem_st.generation, memory_order_acquire);
  for (mem_pending_t **pp = &pend_head; *pp;) {
    mem_pending_t *p = *pp;
    bool stale = p->gen != gen;
    if (p->waiters || (!stale && sig_acquire(p->sig) != 0)) {
      pp = &p->next;
      continue;
    }
    *pp = p->next;
    char msg[sizeof late.msg];
    if (!stale && fail_copy((mem_report_t){NULL, p->sig.handle}, true, msg, sizeof msg)) {
      if (late.gen != gen) {
        late.gen = gen;
        late.device = p->device;
        late.more = 0;
        memcpy(late.msg, msg, sizeof msg);
      } else {
        late.more++;
      }
    }
    if (!stale) mem_signal_give(p->sig);
    free(p);
    atomic_fetch_sub_explicit(&pend_count, 1, memory_order_relaxed);
  }
}

/* Keeps a timed-out synchronous op. Without memory for the node the op is not tracked (the
 * caller's TIMEOUT message says so) and its signal is never given back: the op still
 * decrements it. */
static bool pending_add(const char *what, const hsad_device_t *device, hsa_signal_t sig,
                        const void *dst, size_t dsize, const void *src, size_t ssize) {
  mem_pending_t *p = malloc(sizeof *p);
  if (!p) return false;
  *p = (mem_pending_t){.sig = sig, .device = mem_device_index(device), .what = what,
                       .lo = {(uintptr_t)dst, (uintptr_t)src}, .size = {dsize, ssize},
                       .gen = atomic_load_explicit(&mem_st.generation, memory_order_acquire)};
  pthread_mutex_lock(&pend_lock);
  p->next = pend_head;
  pend_head = p;
  atomic_fetch_add_explicit(&pend_count, 1, memory_order_relaxed);
  pthread_mutex_unlock(&pend_lock);
  return true;
}

bool mem_pending_any(void) { return atomic_load_explicit(&pend_count, memory_order_relaxed) != 0; }

hsad_status_t mem_pending_check(const char *what, const char *desc, uintptr_t lo, size_t size) {
  if (!atomic_load_explicit(&pend_count, memory_order_relaxed)) return HSAD_OK;
  pthread_mutex_lock(&pend_lock);
  pending_reap();
  for (const mem_pending_t *p = pend_head; p; p = p->next)
    for (int i = 0; i < 2; i++)
      if (p->size[i] && p->lo[i] < lo + size && lo < p->lo[i] + p->size[i]) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s: %s overlaps the %s (%zu bytes at %p) of a %s on device "
                 "%u that timed out and has not finished: wait for it with "
                 "hsad_mem_wait_pending (nothing changed)", what, desc,
                 i ? "source" : "destination", p->size[i], (void *)p->lo[i], p->what, p->device);
        pthread_mutex_unlock(&pend_lock);
        return hsad_fail(HSAD_ERR_IN_USE, "%s", msg);
      }
  pthread_mutex_unlock(&pend_lock);
  return HSAD_OK;
}

hsad_status_t hsad_mem_wait_pending(hsad_device_t *device, uint64_t deadline_ns) {
  static const char what[] = "hsad_mem_wait_pending";
  uint32_t dev = UINT32_MAX;
  if (device) {
    hsad_status_t s = mem_ready(device, what);
    if (s) return s;
    dev = mem_device_index(device);
  }
  for (;;) {
    pthread_mutex_lock(&pend_lock);
    pending_reap();
    /* the first of this device's ops not finished yet (a finished one another thread still
     * waits on stays listed until that thread is done: skipped, not waited on again) */
    mem_pending_t *p = NULL;
    uint32_t left = 0;
    for (mem_pending_t *x = pend_head; x; x = x->next)
      if ((dev == UINT32_MAX || x->device == dev) && sig_acquire(x->sig) != 0) {
        left++;
        if (!p) p = x;
      }
    if (!p) {
      uint64_t gen = atomic_load_explicit(&mem_st.generation, memory_order_acquire);
      if (late.gen == gen && (dev == UINT32_MAX || late.device == dev)) {
        char msg[sizeof late.msg];
        memcpy(msg, late.msg, sizeof msg);
        uint32_t more = late.more;
        late.gen = 0;
        pthread_mutex_unlock(&pend_lock);
        if (more)
          return hsad_fail(HSAD_ERR_HSA, "%s: a timed-out synchronous copy or fill finished "
                           "incomplete: %s (and %u more)", what, msg, more);
        return hsad_fail(HSAD_ERR_HSA, "%s: a timed-out synchronous copy or fill finished "
                         "incomplete: %s", what, msg);
      }
      pthread_mutex_unlock(&pend_lock);
      return HSAD_OK;
    }
    p->waiters++;
    hsa_signal_t sig = p->sig;
    pthread_mutex_unlock(&pend_lock);
    bool done = sig_wait_zero(sig, deadline_ns);
    pthread_mutex_lock(&pend_lock);
    p->waiters--;
    pthread_mutex_unlock(&pend_lock);
    if (!done) {
      if (device)
        return hsad_fail(HSAD_ERR_TIMEOUT, "%s: %u timed-out synchronous copies or fills of "
                         "device %u still in flight at the deadline", what, left, dev);
      return hsad_fail(HSAD_ERR_TIMEOUT, "%s: %u timed-out synchronous copies or fills still in "
                       "flight at the deadline", what, left);
    }
  }
}

/* A synchronous copy or fill (hsad_memcpy, hsad_memset) on its internal signal: the call's
 * name, the device, the signal, and the bytes it writes and reads (pending_add's). */
typedef struct sync_op {
  const char *what;
  const hsad_device_t *device;
  hsa_signal_t sig;
  const void *dst;
  size_t dsize;
  const void *src;
  size_t ssize;
} sync_op_t;

/* The end of a synchronous copy or fill, s the start's status. late (the deadline passed with
 * the op in flight): the op is kept (pending_add; its signal stays with it) and the answer is
 * HSAD_ERR_TIMEOUT: head_fmt formatted, then clause[1] (kept: hsad_mem_wait_pending waits for
 * it) or clause[0] (out of host memory to track it). Else the op's own failure (none: HSAD_OK)
 * and the signal goes back. */
static hsad_status_t sync_end(const sync_op_t *op, hsad_status_t s, bool late,
                              const char *const clause[2], const char *head_fmt, ...)
    __attribute__((format(printf, 5, 6)));
static hsad_status_t sync_end(const sync_op_t *op, hsad_status_t s, bool late,
                              const char *const clause[2], const char *head_fmt, ...) {
  if (late) {
    bool kept = pending_add(op->what, op->device, op->sig, op->dst, op->dsize, op->src,
                            op->ssize);
    char head[256];
    va_list ap;
    va_start(ap, head_fmt);
    vsnprintf(head, sizeof head, head_fmt, ap);
    va_end(ap);
    return hsad_fail(HSAD_ERR_TIMEOUT, "%s%s", head, clause[kept]);
  }
  if (!s) s = mem_fail_take(op->sig, NULL);
  mem_signal_give(op->sig);
  return s;
}

hsad_status_t hsad_memcpy(hsad_device_t *device, void *dst, const void *src, size_t size,
                          const hsad_copy_options_t *options, uint64_t deadline_ns) {
  if (hsad_submit_device_foreign(device)) { /* another vendor's device: async, then wait */
    hsad_completion_t c;
    hsad_status_t fs = hsad_submit_foreign_memcpy_async(device, dst, src, size, NULL, 0,
                                                        options, deadline_ns, &c);
    return fs ? fs : hsad_completion_wait(&c, deadline_ns ? deadline_ns : HSAD_DEADLINE_NEVER);
  }
  hsad_status_t s = mem_ready(device, "hsad_memcpy");
  if (s) return s;
  hsa_signal_t sig;
  if ((s = mem_signal_take(1, &sig))) return s;
  s = mem_copy_start("hsad_memcpy", device, dst, src, size, NULL, 0, sig, options, NULL,
                     deadline_ns ? deadline_ns : 1, false, NULL);
  /* mem_copy_start's own TIMEOUT: a pinned or pipelined copy it drove here is in flight */
  static const char *const late[2] = {
      " (out of host memory to track it: keep its memory until it finished)",
      " (hsad_mem_wait_pending waits for it; freeing its memory is refused until then)"};
  const sync_op_t op = {"hsad_memcpy", device, sig, dst, size, src, size};
  return sync_end(&op, s, s == HSAD_ERR_TIMEOUT || (!s && !sig_wait_zero(sig, deadline_ns)), late,
                  "hsad_memcpy: %zu bytes not copied by the deadline: the copy goes on in the "
                  "background", size);
}

hsad_status_t hsad_memset(hsad_device_t *device, void *dst, uint32_t pattern, uint32_t width,
                          size_t count, uint64_t deadline_ns) {
  static const char what[] = "hsad_memset";
  hsad_status_t s = mem_ready(device, what);
  if (s) return s;
  /* pattern copies on an internal signal, waited for here until deadline_ns (not
   * hsa_amd_memory_fill: ROCr waits inside it for the Fill blit, with no deadline) */
  hsa_signal_t sig;
  if ((s = mem_signal_take(1, &sig))) return s;
  s = mem_fill_start(what, device, dst, pattern, width, count, NULL, 0, sig, false, NULL);
  static const char *const late[2] = {
      "; out of host memory to track it: keep its memory until it finished)",
      "; hsad_mem_wait_pending waits for it, freeing its memory is refused until then)"};
  const sync_op_t op = {what, device, sig, dst, count * width, NULL, 0};
  return sync_end(&op, s, !s && !sig_wait_zero(sig, deadline_ns), late,
                  "%s: not finished by the deadline (goes on in the background", what);
}
