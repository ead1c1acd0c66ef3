/* copy_async.c - copies and fills ordered by completions (hsa-dispatch's queue timelines).
 *
 * Each device gets one copy queue (hsad_queue_create, 256 packets) that carries the copies'
 * completions. A copy with dependencies is bridged both ways with
 * hsad_queue_barrier_signals on that queue:
 *   1. deps -> a barrier that decrements `dep_sig` (value 1) once every dependency completed;
 *      the DMA (ROCr's blits) waits for dep_sig == 0;
 *   2. a barrier waiting for `done_sig` == 0 carries the caller's completion;
 *   3. the engine (copy.c) starts, decrementing done_sig when the bytes are at the destination
 *      (staging blocks back, pinned ranges unpinned).
 * 1 and 2 are submitted before anything moves, so a refused reservation leaves nothing in
 * flight; if the engine then refuses, done_sig is set to 0 so the queue is not held. The two
 * signals are reused once the completion was reached (checked on later calls, oldest first:
 * one queue's completions are reached in order). A copy on the copy queue occupies it until
 * its bytes arrived; dispatch queues are never held by a copy.
 */
#include <stdlib.h>
#include <string.h>

#include "hsa-dispatch/hsad_submit.h"
#include "memory/mem_internal.h"

typedef struct pending {
  hsad_completion_t done;          /* reached: both signals are free */
  hsa_signal_t dep_sig, done_sig;  /* 0 handle: none */
} pending_t;

static pthread_mutex_t async_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(hsad_queue_t *) copy_q[MEM_MAX_DEVICES];
static pending_t *pend;
static size_t pend_head, pend_n, pend_cap;  /* ring */
static uint64_t pend_gen;

/* Copy queues of a closed runtime: ROCr's side is gone with it, the host memory is freed by
 * hsad_queue_destroy, which takes the runtime's lock and so cannot run in the close hook:
 * later (next use of memory/, or at exit). */
static hsad_queue_t *dead_q[4 * MEM_MAX_DEVICES];
static uint32_t dead_n;

void mem_async_reap(void) { /* no memory/ or runtime lock held */
  pthread_mutex_lock(&async_lock);
  uint32_t n = dead_n;
  hsad_queue_t *q[4 * MEM_MAX_DEVICES];
  memcpy(q, dead_q, n * sizeof q[0]);
  dead_n = 0;
  pthread_mutex_unlock(&async_lock);
  for (uint32_t i = 0; i < n; i++) hsad_queue_destroy(q[i]);
  mem_blit_reap();
}

void mem_async_close(void) { /* mem_st.lock held, under the runtime's lock */
  static bool at_exit;
  if (!at_exit) at_exit = atexit(mem_async_reap) == 0;
  pthread_mutex_lock(&async_lock);
  for (uint32_t i = 0; i < MEM_MAX_DEVICES; i++) {
    hsad_queue_t *q = atomic_exchange(&copy_q[i], NULL);
    if (q && dead_n < 4 * MEM_MAX_DEVICES) dead_q[dead_n++] = q;
  }
  for (size_t k = 0; k < pend_n; k++) {
    pending_t *p = &pend[(pend_head + k) % pend_cap];
    if (p->dep_sig.handle) mem_signal_give(p->dep_sig);
    if (p->done_sig.handle) mem_signal_give(p->done_sig);
  }
  pend_head = pend_n = 0;
  pthread_mutex_unlock(&async_lock);
  mem_blit_close();
}

/* Returns the signals of completions already reached (oldest first). */
static void reclaim(void) {
  pthread_mutex_lock(&async_lock);
  uint64_t gen = atomic_load_explicit(&mem_st.generation, memory_order_acquire);
  if (pend_gen != gen) {
    pend_head = pend_n = 0;
    pend_gen = gen;
  }
  while (pend_n && hsad_completion_done(&pend[pend_head].done)) {
    pending_t *p = &pend[pend_head];
    if (p->dep_sig.handle) mem_signal_give(p->dep_sig);
    if (p->done_sig.handle) mem_signal_give(p->done_sig);
    pend_head = (pend_head + 1) % pend_cap;
    pend_n--;
  }
  pthread_mutex_unlock(&async_lock);
}

static void track(const hsad_completion_t *done, hsa_signal_t dep_sig, hsa_signal_t done_sig) {
  pthread_mutex_lock(&async_lock);
  if (pend_n == pend_cap) {
    size_t cap = pend_cap ? pend_cap * 2 : 64;
    pending_t *n = malloc(cap * sizeof *n);
    if (!n) { /* cannot track: the signals are leaked, never reused while in use */
      pthread_mutex_unlock(&async_lock);
      return;
    }
    for (size_t k = 0; k < pend_n; k++) n[k] = pend[(pend_head + k) % pend_cap];
    free(pend);
    pend = n, pend_cap = cap, pend_head = 0;
  }
  pend[(pend_head + pend_n) % pend_cap] = (pending_t){*done, dep_sig, done_sig};
  pend_n++;
  pthread_mutex_unlock(&async_lock);
}

/* hsad_submit_result_fn of the copy queues: a copy or fill that stopped after its call
 * returned (hsad_mem_result) fails hsad_completion_wait on its completion. */
static hsad_status_t copy_result(void *ctx, const hsad_completion_t *c) {
  (void)ctx;
  return hsad_mem_result(c);
}

static hsad_status_t copy_queue(hsad_device_t *device, hsad_queue_t **out) {
  uint32_t i = mem_device_index(device);
  hsad_queue_t *q = atomic_load_explicit(&copy_q[i], memory_order_acquire);
  if (q) {
    *out = q;
    return HSAD_OK;
  }
  /* created outside every memory/ lock (queue creation takes the runtime's lock) */
  hsad_status_t s = hsad_queue_create(device, &(hsad_queue_options_t){.size = 256}, &q);
  if (s) return s;
  hsad_submit_set_result_hook(q, copy_result, NULL); /* failed copies reach their waiters */
  hsad_queue_t *expect = NULL;
  if (!atomic_compare_exchange_strong_explicit(&copy_q[i], &expect, q, memory_order_acq_rel,
                                               memory_order_acquire)) {
    hsad_queue_destroy(q); /* another thread won */
    q = expect;
  }
  *out = q;
  return HSAD_OK;
}

static hsad_status_t check_common(const char *what, const hsad_completion_t *deps,
                                  uint32_t dep_count, hsad_completion_t *out) {
  if (!out) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: out_completion is NULL", what);
  if (dep_count > HSAD_COPY_MAX_DEPS)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: dep_count %u is above %u", what, dep_count,
                     (unsigned)HSAD_COPY_MAX_DEPS);
  if (dep_count && !deps)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: deps is NULL with dep_count %u", what,
                     dep_count);
  return HSAD_OK;
}

/* The common part: bridges (1, 2), then `start` (3). kind 0: copy, 1: fill, 2: 2-D/3-D box. */
typedef struct job {
  const char *what;
  hsad_device_t *device;
  void *dst;
  const void *src;
  size_t size;
  const hsad_copy_options_t *options;
  uint32_t pattern, width;
  size_t count;
  const mem_rect_t *rect;
  int kind;
} job_t;

/* A failure after the call returned is kept under the caller's completion (hsad_mem_result). */
static hsad_status_t job_start(const job_t *j, hsa_signal_t *dep, uint32_t ndep,
                               hsa_signal_t done, const hsad_completion_t *out) {
  mem_report_t report = {out->queue, out->epoch};
  if (j->kind == 2)
    return mem_rect_start(j->what, j->device, j->rect, dep, ndep, done, false, &report);
  if (j->kind == 0)
    return mem_copy_start(j->what, j->device, j->dst, j->src, j->size, dep, ndep, done,
                          j->options, NULL, 0, false, &report);
  return mem_fill_start(j->what, j->device, j->dst, j->pattern, j->width, j->count, dep, ndep,
                        done, false, &report);
}

static hsad_status_t job_run(const job_t *j, const hsad_completion_t *deps, uint32_t dep_count,
                             uint64_t deadline_ns, hsad_completion_t *out) {
  hsad_queue_t *q = NULL;
  hsad_status_t s = copy_queue(j->device, &q);
  if (s) return s;
  reclaim();
  /* dependencies already reached need no packet */
  uint32_t open = 0;
  for (uint32_t i = 0; i < dep_count; i++)
    if (!hsad_completion_done(&deps[i])) open++;
  if (j->size == 0) /* nothing to move: the barrier orders it after its dependencies */
    return hsad_queue_barrier(q, deps, open ? dep_count : 0, deadline_ns, out);
  hsa_signal_t dep_sig = {0}, done_sig = {0};
  if ((s = mem_signal_take(1, &done_sig))) return s;
  if (open && (s = mem_signal_take(1, &dep_sig))) {
    mem_signal_give(done_sig);
    return s;
  }
  hsad_completion_t dep_done = {0};
  if (open) {
    s = hsad_queue_barrier_signals(q, deps, dep_count, NULL, 0, dep_sig, deadline_ns, &dep_done);
    if (s) {
      mem_signal_give(dep_sig);
      mem_signal_give(done_sig);
      return s;
    }
  }
  s = hsad_queue_barrier_signals(q, NULL, 0, &done_sig, 1, (hsa_signal_t){0}, deadline_ns, out);
  if (s) {
    hsad_status_t keep = s;
    char msg[1024];
    strncpy(msg, hsad_last_error(), sizeof msg - 1);
    msg[sizeof msg - 1] = '\0';
    if (open) track(&dep_done, dep_sig, (hsa_signal_t){0}); /* decremented later: keep it */
    mem_signal_give(done_sig);
    return hsad_fail(keep, "%s", msg);
  }
  s = job_start(j, open ? &dep_sig : NULL, open ? 1 : 0, done_sig, out);
  if (s) {
    /* nothing moved: release the barrier that waits for it, keep the message */
    mem_rocr.hsa_signal_store_screlease(done_sig, 0);
    track(out, dep_sig, done_sig);
    *out = (hsad_completion_t){0};
    return s;
  }
  track(out, dep_sig, done_sig);
  return HSAD_OK;
}

hsad_status_t hsad_memcpy_async(hsad_device_t *device, void *dst, const void *src, size_t size,
                                const hsad_completion_t *deps, uint32_t dep_count,
                                const hsad_copy_options_t *options, uint64_t deadline_ns,
                                hsad_completion_t *out_completion) {
  static const char what[] = "hsad_memcpy_async";
  if (hsad_submit_device_foreign(device)) /* another vendor's device: its copy stream */
    return hsad_submit_foreign_memcpy_async(device, dst, src, size, deps, dep_count, options,
                                            deadline_ns, out_completion);
  hsad_status_t s = mem_ready(device, what);
  if (s) return s;
  if ((s = check_common(what, deps, dep_count, out_completion))) return s;
  /* every check of the copy first: nothing is submitted for a copy that would be refused */
  hsa_signal_t dummy = {1};
  if ((s = mem_copy_start(what, device, dst, src, size, NULL, 0, dummy, options, NULL, 0, true,
                          NULL)))
    return s;
  job_t j = {.what = what, .device = device, .dst = dst, .src = src, .size = size,
             .options = options, .kind = 0};
  return job_run(&j, deps, dep_count, deadline_ns, out_completion);
}

hsad_status_t hsad_memset_async(hsad_device_t *device, void *dst, uint32_t pattern,
                                uint32_t width, size_t count, const hsad_completion_t *deps,
                                uint32_t dep_count, uint64_t deadline_ns,
                                hsad_completion_t *out_completion) {
  static const char what[] = "hsad_memset_async";
  hsad_status_t s = mem_ready(device, what);
  if (s) return s;
  if ((s = check_common(what, deps, dep_count, out_completion))) return s;
  hsa_signal_t dummy = {1};
  if ((s = mem_fill_start(what, device, dst, pattern, width, count, NULL, 0, dummy, true, NULL)))
    return s;
  job_t j = {.what = what, .device = device, .dst = dst, .size = count * width,
             .pattern = pattern, .width = width, .count = count, .kind = 1};
  return job_run(&j, deps, dep_count, deadline_ns, out_completion);
}

/* The 2-D and 3-D forms: the common checks, the box's checks (nothing submitted for a box that
 * would be refused), then job_run; a zero extent is one barrier after the dependencies. */
static hsad_status_t rect_run(const char *what, hsad_device_t *device, const mem_rect_t *r,
                              const hsad_completion_t *deps, uint32_t dep_count,
                              uint64_t deadline_ns, hsad_completion_t *out_completion) {
  hsad_status_t s = mem_ready(device, what);
  if (s) return s;
  if ((s = check_common(what, deps, dep_count, out_completion))) return s;
  bool empty = !r->width || !r->height || !r->depth;
  if (!empty && (!r->dst || !r->src))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: the %s pointer is NULL", what,
                     !r->dst ? "destination" : "source");
  hsa_signal_t dummy = {1};
  if (!empty && (s = mem_rect_start(what, device, r, NULL, 0, dummy, true, NULL))) return s;
  mem_rect_t rr = *r; /* the copy kernel waits for the completions themselves */
  rr.cdeps = deps, rr.ncdeps = dep_count, rr.deadline_ns = deadline_ns;
  job_t j = {.what = what, .device = device, .rect = &rr, .kind = 2,
             .size = empty ? 0 : r->width * r->height * r->depth};
  return job_run(&j, deps, dep_count, deadline_ns, out_completion);
}

hsad_status_t hsad_memcpy_2d_async(hsad_device_t *device, void *dst, size_t dst_pitch,
                                   const void *src, size_t src_pitch, size_t width,
                                   size_t height, const hsad_completion_t *deps,
                                   uint32_t dep_count, uint64_t deadline_ns,
                                   hsad_completion_t *out_completion) {
  mem_rect_t r = {.dst = dst, .src = src, .dpitch = dst_pitch, .spitch = src_pitch,
                  .width = width, .height = height, .depth = 1};
  return rect_run("hsad_memcpy_2d_async", device, &r, deps, dep_count, deadline_ns,
                  out_completion);
}

hsad_status_t hsad_memcpy_3d_async(hsad_device_t *device, const hsad_pitched_ptr_t *dst,
                                   const hsad_pitched_ptr_t *src, const hsad_extent_t *extent,
                                   const hsad_completion_t *deps, uint32_t dep_count,
                                   uint64_t deadline_ns, hsad_completion_t *out_completion) {
  static const char what[] = "hsad_memcpy_3d_async";
  if (!dst || !src || !extent)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", what,
                     !dst ? "dst" : !src ? "src" : "extent");
  mem_rect_t r = {.dst = dst->ptr, .src = src->ptr, .dpitch = dst->pitch,
                  .dslice = dst->slice_pitch, .spitch = src->pitch, .sslice = src->slice_pitch,
                  .width = extent->width, .height = extent->height, .depth = extent->depth};
  return rect_run(what, device, &r, deps, dep_count, deadline_ns, out_completion);
}
