/* nv_queue.c - NVIDIA queues (CUDA streams), dispatch, completions and cross-queue barriers.
 *
 * Timeline: a completion is (queue, k), k an epoch numbered under the queue's lock in stream
 * order. Numbering enqueues nothing: epoch k is pending until one of these marks it at its
 * point of the stream (all under the lock, so marks follow the numbers):
 *   - sealed: before anything else is enqueued on the stream (a dispatch, a wait, a copy), a
 *     pending epoch gets cuEventRecord of the queue's event slot k % NV_SEAL_EVENTS
 *     (nv_queue_seal; 0.19 us of host time on the H200);
 *   - written: a host waiter of a pending epoch enqueues cuStreamWriteValue64 of k to a 64-bit
 *     counter in pinned host memory mapped for the device (cuMemHostAlloc PORTABLE |
 *     DEVICEMAP; default flags: the write follows a memory barrier, so the work's writes are
 *     visible first), then spins on the word (1.23 us of host time on the H200: every stream
 *     memory operation costs that much there, so it is only paid when a host waits).
 * A host waiter of a sealed epoch asks its event (cuEventQuery); a slot re-recorded for a later
 * epoch only makes the wait longer, never wrong (later work of a stream never waits for the
 * host). Waits spin for the queue's spin_ns (and, on the copy queue, until the copies' expected
 * end), then sleep in slices of 20 us .. 1 ms, at most 1/16 of the time waited so far, asking
 * cuStreamQuery whether the stream failed; a failure that poisons the context faults the device
 * (nv_device_fault) and every waiter of every queue of it returns HSAD_ERR_QUEUE_ERROR.
 * Another queue orders itself after epoch k with cuStreamWaitEvent on k's event (0.17 us), or
 * cuStreamWaitValue64 (GEQ) on the counter when k was written; an epoch already reached adds
 * nothing. Measured side by side on the H200 (README, "NVIDIA GPUs"): this made a cross-queue
 * dependency faster than cuEventRecord + cuStreamWaitEvent, where writing every epoch was not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "nvidia/nv_internal.h"

#define NV_LIKELY(x) __builtin_expect(!!(x), 1)
#define NV_UNLIKELY(x) __builtin_expect(!!(x), 0)

static inline nv_queue_t *nvq(const hsad_queue_t *q) { return (nv_queue_t *)(uintptr_t)q; }

hsad_status_t nv_queue_fail(const nv_queue_t *q) {
  int e = atomic_load_explicit(&((nv_queue_t *)q)->error, memory_order_acquire);
  return hsad_fail(e ? (hsad_status_t)e : HSAD_ERR_QUEUE_ERROR, "%s", q->error_msg);
}

/* Profiling: the event ring and the calibration event (nv_internal.h). */
static void nv_prof_free(nv_queue_t *q) {
  for (uint32_t i = 0; q->prof_ev && i < 2 * NV_PROF_SLOTS; i++)
    if (q->prof_ev[i]) nv_cu.event_destroy(q->prof_ev[i]);
  if (q->prof_ev0) nv_cu.event_destroy(q->prof_ev0);
  free(q->prof_ev);
  free((void *)q->prof_id);
  free(q->prof_epoch);
}

static hsad_status_t nv_prof_init(nv_queue_t *q) {
  q->prof_ev = calloc(2 * NV_PROF_SLOTS, sizeof *q->prof_ev);
  q->prof_id = malloc(NV_PROF_SLOTS * sizeof *q->prof_id);
  q->prof_epoch = calloc(NV_PROF_SLOTS, sizeof *q->prof_epoch);
  if (!q->prof_ev || !q->prof_id || !q->prof_epoch)
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_queue_create: profiling events");
  for (uint32_t i = 0; i < NV_PROF_SLOTS; i++) atomic_init(&q->prof_id[i], UINT64_MAX);
  nv_result_t r = nv_cu.event_create(&q->prof_ev0, 0);
  for (uint32_t i = 0; !r && i < 2 * NV_PROF_SLOTS; i++) r = nv_cu.event_create(&q->prof_ev[i], 0);
  /* the anchor: the host's clock once prof_ev0 is reached, read late by at most the
   * record + synchronize window; a window over 100 us (a loaded host: the synchronize's wake-up)
   * is retried, 8 times at most, so device times do not read milliseconds late */
  uint64_t t0 = 0, t1 = 0;
  for (int i = 0; !r && (i == 0 || (t1 - t0 > 100000 && i < 8)); i++) {
    t0 = hsad_now_ns();
    r = nv_cu.event_record(q->prof_ev0, q->stream);
    if (!r) r = nv_cu.event_synchronize(q->prof_ev0);
    t1 = hsad_now_ns();
  }
  if (r)
    return nv_fail(q->dev, r, "hsad_queue_create: profiling events (cuEventCreate, cuEventRecord, "
                   "cuEventSynchronize) on device %u", q->dev->info.index);
  q->prof_t0_ns = t1;
  q->profiling = true;
  return HSAD_OK;
}

hsad_status_t nv_queue_make(nv_dev_t *dev, const hsad_queue_options_t *o, bool shared,
                            nv_queue_t **out) {
  hsad_status_t s = nv_ctx_enter(dev);
  if (s) return s;
  nv_queue_t *q = calloc(1, sizeof *q);
  if (!q) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_queue_create: device %u", dev->info.index);
  atomic_init(&q->capturing, HSAD_GATE_BACKEND);
  q->ops = &nv_backend_ops;
  q->uid = hsad_backend_next_uid();
  q->dev = dev;
  q->generation = atomic_load_explicit(&dev->generation, memory_order_acquire);
  q->shared = shared;
  q->spin_ns = o && o->spin_ns ? o->spin_ns : 50000;
  pthread_mutex_init(&q->lock, NULL);
  nv_result_t r = nv_cu.stream_create(&q->stream, NV_STREAM_NON_BLOCKING);
  if (r != NV_SUCCESS) {
    free(q);
    return nv_fail(dev, r, "hsad_queue_create: cuStreamCreate on device %u", dev->info.index);
  }
  void *host = NULL;
  r = nv_cu.mem_host_alloc(&host, 64, NV_MEMHOSTALLOC_PORTABLE | NV_MEMHOSTALLOC_DEVICEMAP);
  if (r == NV_SUCCESS) {
    memset(host, 0, 64);
    r = nv_cu.mem_host_get_device_pointer(&q->epoch_dev, host, 0);
    if (r != NV_SUCCESS) nv_cu.mem_free_host(host);
  }
  if (r != NV_SUCCESS) {
    nv_cu.stream_destroy(q->stream);
    free(q);
    return nv_fail(dev, r, "hsad_queue_create: the epoch counter (cuMemHostAlloc + "
                   "cuMemHostGetDevicePointer, 64 bytes) on device %u", dev->info.index);
  }
  q->epoch_host = host;
  if (o && o->profiling && (s = nv_prof_init(q)) != HSAD_OK) {
    nv_prof_free(q);
    nv_cu.stream_destroy(q->stream);
    nv_cu.mem_free_host(host);
    free(q);
    return s;
  }
  pthread_mutex_lock(&dev->lock);
  q->next = dev->queues;
  dev->queues = q;
  pthread_mutex_unlock(&dev->lock);
  *out = q;
  return HSAD_OK;
}

void nv_queue_free(nv_queue_t *q) {
  nv_dev_t *dev = q->dev;
  if (q->monitor) nv_monitor_disable((hsad_queue_t *)q);
  if (dev) {
    pthread_mutex_lock(&dev->lock);
    for (nv_queue_t **p = &dev->queues; *p; p = &(*p)->next)
      if (*p == q) {
        *p = q->next;
        break;
      }
    pthread_mutex_unlock(&dev->lock);
    bool same = atomic_load_explicit(&dev->generation, memory_order_acquire) == q->generation;
    if (same && nv_ctx_enter(dev) == HSAD_OK) {
      if (!atomic_load_explicit(&q->error, memory_order_acquire))
        nv_cu.stream_synchronize(q->stream); /* its work may still write the counter */
      /* its graphs completed: the queues they covered need not wait for it any more */
      pthread_mutex_lock(&dev->lock);
      for (nv_queue_t *o = dev->queues; o; o = o->next) {
        nv_queue_t *src = q;
        atomic_compare_exchange_strong(&o->join_src, &src, NULL);
      }
      pthread_mutex_unlock(&dev->lock);
      nv_cu.stream_destroy(q->stream);
      nv_cu.mem_free_host((void *)q->epoch_host);
      for (uint32_t i = 0; i < NV_SEAL_EVENTS; i++)
        if (q->seal_ev[i]) nv_cu.event_destroy(q->seal_ev[i]);
      nv_prof_free(q);
    }
  }
  pthread_mutex_destroy(&q->lock);
  free(q);
}

/* A queue on a lost device resets its context first (every object of the old one is gone). */
static hsad_status_t nv_dev_ready(nv_dev_t *dev) {
  if (NV_LIKELY(!atomic_load_explicit(&dev->lost, memory_order_acquire))) return HSAD_OK;
  pthread_mutex_lock(&dev->lock);
  hsad_status_t s = atomic_load_explicit(&dev->lost, memory_order_relaxed) ? nv_device_recover(dev)
                                                                           : HSAD_OK;
  pthread_mutex_unlock(&dev->lock);
  return s;
}

hsad_status_t nv_queue_create(hsad_device_t *device, void *impl, const hsad_queue_options_t *o,
                              hsad_queue_t **out) {
  (void)device;
  nv_dev_t *dev = impl;
  hsad_status_t s = nv_dev_ready(dev);
  if (s) return s;
  nv_queue_t *q;
  s = nv_queue_make(dev, o, false, &q);
  if (s) return s;
  *out = (hsad_queue_t *)q;
  return HSAD_OK;
}

hsad_status_t nv_device_queue(hsad_device_t *device, void *impl, hsad_queue_t **out) {
  (void)device;
  nv_dev_t *dev = impl;
  hsad_status_t s = nv_dev_ready(dev);
  if (s) return s;
  pthread_mutex_lock(&dev->lock);
  hsad_queue_t *q = dev->shared;
  if (q && atomic_load_explicit(&nvq(q)->error, memory_order_acquire)) q = NULL; /* replace */
  pthread_mutex_unlock(&dev->lock);
  if (q) {
    *out = q;
    return HSAD_OK;
  }
  nv_queue_t *nq;
  s = nv_queue_make(dev, NULL, true, &nq);
  if (s) return s;
  pthread_mutex_lock(&dev->lock);
  if (dev->shared && !atomic_load_explicit(&nvq(dev->shared)->error, memory_order_acquire)) {
    q = dev->shared; /* another thread made it first */
  } else {
    dev->shared = (hsad_queue_t *)nq; /* a faulted predecessor stays listed until close */
    q = dev->shared;
    nq = NULL;
  }
  pthread_mutex_unlock(&dev->lock);
  if (nq) nv_queue_free(nq);
  *out = q;
  return HSAD_OK;
}

void nv_queue_destroy(hsad_queue_t *queue) {
  nv_queue_t *q = nvq(queue);
  if (q->shared) return; /* owned by the device */
  nv_queue_free(q);
}

hsad_device_t *nv_queue_device(const hsad_queue_t *queue) {
  return nvq(queue)->dev ? nvq(queue)->dev->pub : NULL;
}

uint32_t nv_queue_size(const hsad_queue_t *queue) {
  (void)queue;
  return 0; /* a stream has no ring */
}

hsad_status_t nv_queue_error(const hsad_queue_t *queue) {
  const nv_queue_t *q = nvq(queue);
  if (atomic_load_explicit(&((nv_queue_t *)q)->error, memory_order_acquire)) return nv_queue_fail(q);
  return HSAD_OK;
}

/* ---- timeline ------------------------------------------------------------------------- */

/* Marks pending epoch `issued` with its event slot at the stream's current end. (lock held) */
static nv_result_t nv_seal_locked(nv_queue_t *q) {
  uint64_t k = atomic_load_explicit(&q->issued, memory_order_relaxed);
  uint32_t i = (uint32_t)(k % NV_SEAL_EVENTS);
  nv_result_t r = NV_SUCCESS;
  if (!q->seal_ev[i]) r = nv_cu.event_create(&q->seal_ev[i], NV_EVENT_DISABLE_TIMING);
  if (r == NV_SUCCESS) r = nv_cu.event_record(q->seal_ev[i], q->stream);
  if (r != NV_SUCCESS) return r;
  q->seal_epoch[i] = k;
  atomic_store_explicit(&q->covered, k, memory_order_release);
  return NV_SUCCESS;
}

/* Marks pending epoch `issued` by writing it to the counter. (lock held) */
static nv_result_t nv_write_locked(nv_queue_t *q) {
  uint64_t k = atomic_load_explicit(&q->issued, memory_order_relaxed);
  nv_result_t r = nv_cu.stream_write_value64(q->stream, q->epoch_dev, k,
                                             NV_STREAM_WRITE_VALUE_DEFAULT);
  if (r != NV_SUCCESS) return r;
  q->written = k;
  atomic_store_explicit(&q->covered, k, memory_order_release);
  return NV_SUCCESS;
}

static hsad_status_t nv_mark_fail(nv_queue_t *q, nv_result_t r, bool write) {
  return nv_fail(q->dev, r, "queue %llu: %s (epoch %llu)", (unsigned long long)q->uid,
                 write ? "cuStreamWriteValue64" : "cuEventRecord",
                 (unsigned long long)atomic_load_explicit(&q->issued, memory_order_relaxed));
}

hsad_status_t nv_queue_seal(nv_queue_t *q) {
  pthread_mutex_lock(&q->lock);
  nv_result_t r = NV_SUCCESS;
  if (atomic_load_explicit(&q->issued, memory_order_relaxed) >
      atomic_load_explicit(&q->covered, memory_order_relaxed))
    r = nv_seal_locked(q);
  pthread_mutex_unlock(&q->lock);
  return r == NV_SUCCESS ? HSAD_OK : nv_mark_fail(q, r, false);
}

hsad_status_t nv_queue_epoch(nv_queue_t *q, hsad_completion_t *out_completion) {
  pthread_mutex_lock(&q->lock);
  nv_result_t r = NV_SUCCESS;
  uint64_t k = atomic_load_explicit(&q->issued, memory_order_relaxed);
  if (k && !atomic_load_explicit(&q->since_epoch, memory_order_relaxed)) {
    /* nothing enqueued since epoch k: it covers the same work */
  } else {
    /* a pending epoch whose seal raced with an unlocked enqueue is marked before the next */
    if (k > atomic_load_explicit(&q->covered, memory_order_relaxed)) r = nv_seal_locked(q);
    if (r == NV_SUCCESS) {
      k++;
      atomic_store_explicit(&q->issued, k, memory_order_release);
      atomic_store_explicit(&q->since_epoch, 0, memory_order_relaxed);
    }
  }
  pthread_mutex_unlock(&q->lock);
  if (r != NV_SUCCESS) return nv_mark_fail(q, r, false);
  *out_completion = (hsad_completion_t){.queue = (hsad_queue_t *)q, .epoch = k, .packet_id = k};
  return HSAD_OK;
}

static inline uint64_t nv_epoch_reached(const nv_queue_t *q) {
  uint64_t v = *q->epoch_host;
  uint64_t e = atomic_load_explicit(&((nv_queue_t *)q)->seen, memory_order_acquire);
  atomic_thread_fence(memory_order_acquire); /* the work's results after the counter */
  return v > e ? v : e;
}

static void nv_seen(nv_queue_t *q, uint64_t k) {
  uint64_t e = atomic_load_explicit(&q->seen, memory_order_relaxed);
  while (e < k && !atomic_compare_exchange_weak_explicit(&q->seen, &e, k, memory_order_release,
                                                          memory_order_relaxed)) {
  }
}

/* What a host waiter of epoch k watches: the counter (a pending epoch is written now), or the
 * event of k's slot (*ev). */
static hsad_status_t nv_watch(nv_queue_t *q, uint64_t k, nv_event_t *ev, uint64_t *ev_epoch) {
  *ev = NULL;
  pthread_mutex_lock(&q->lock);
  nv_result_t r = NV_SUCCESS;
  if (k > atomic_load_explicit(&q->covered, memory_order_relaxed)) {
    if (nv_ctx_enter(q->dev) == HSAD_OK) r = nv_write_locked(q);
  } else if (k > q->written) {
    uint32_t i = (uint32_t)(k % NV_SEAL_EVENTS);
    *ev = q->seal_ev[i];
    *ev_epoch = q->seal_epoch[i];
  }
  pthread_mutex_unlock(&q->lock);
  return r == NV_SUCCESS ? HSAD_OK : nv_mark_fail(q, r, true);
}

/* Epoch k reached? One look (the counter, or the event's state: a poisoning error faults the
 * device). */
static bool nv_look(nv_queue_t *q, uint64_t k, nv_event_t ev, uint64_t ev_epoch) {
  if (nv_epoch_reached(q) >= k) return true;
  if (!ev) return false;
  nv_result_t r = nv_cu.event_query(ev);
  if (r == NV_SUCCESS) {
    nv_seen(q, ev_epoch);
    return true;
  }
  if (r != NV_ERROR_NOT_READY && nv_error_is_fatal(r)) {
    char where[96];
    snprintf(where, sizeof where, "cuEventQuery of queue %llu", (unsigned long long)q->uid);
    nv_device_fault(q->dev, r, where);
  }
  return false;
}

bool nv_completion_done(const hsad_completion_t *c) {
  nv_queue_t *q = nvq(c->queue);
  if (nv_epoch_reached(q) >= c->epoch ||
      atomic_load_explicit(&q->error, memory_order_acquire) != 0)
    return true;
  if (c->epoch > atomic_load_explicit(&q->issued, memory_order_acquire) ||
      nv_ctx_enter(q->dev) != HSAD_OK)
    return false;
  nv_event_t ev;
  uint64_t ev_epoch = 0;
  if (nv_watch(q, c->epoch, &ev, &ev_epoch) != HSAD_OK)
    return atomic_load_explicit(&q->error, memory_order_acquire) != 0;
  return nv_look(q, c->epoch, ev, ev_epoch) ||
         atomic_load_explicit(&q->error, memory_order_acquire) != 0;
}

static uint64_t nv_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The stream's state, asked while sleeping: a poisoning error faults the device. */
static void nv_queue_probe(nv_queue_t *q) {
  nv_dev_t *dev = q->dev;
  if (!dev || nv_ctx_enter(dev) != HSAD_OK) return;
  nv_result_t r = nv_cu.stream_query(q->stream);
  if (r == NV_SUCCESS || r == NV_ERROR_NOT_READY) return;
  if (nv_error_is_fatal(r)) {
    char where[96];
    snprintf(where, sizeof where, "cuStreamQuery of queue %llu", (unsigned long long)q->uid);
    nv_device_fault(dev, r, where);
  }
}

hsad_status_t nv_completion_wait(const hsad_completion_t *c, uint64_t deadline_ns) {
  nv_queue_t *q = nvq(c->queue);
  uint64_t k = c->epoch;
  if (k > atomic_load_explicit(&q->issued, memory_order_acquire))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_completion_wait: epoch %llu was never "
                     "issued on queue %llu (last %llu)", (unsigned long long)k,
                     (unsigned long long)q->uid,
                     (unsigned long long)atomic_load_explicit(&q->issued, memory_order_relaxed));
  if (NV_LIKELY(nv_epoch_reached(q) >= k)) return HSAD_OK;
  if (atomic_load_explicit(&q->error, memory_order_acquire)) return nv_queue_fail(q);
  hsad_status_t s = nv_ctx_enter(q->dev);
  nv_event_t ev = NULL;
  uint64_t ev_epoch = 0;
  if (s || (s = nv_watch(q, k, &ev, &ev_epoch)) != HSAD_OK) return s;
  uint64_t start = nv_now(), spin_end = start + q->spin_ns;
  uint64_t copies_end = atomic_load_explicit(&q->spin_until_ns, memory_order_relaxed);
  if (copies_end > spin_end) spin_end = copies_end; /* a copy's bytes still moving */
  for (uint32_t i = 0;; i++) {
    if (nv_look(q, k, ev, ev_epoch)) return HSAD_OK;
    if ((i & 63) == 0) {
      if (atomic_load_explicit(&q->error, memory_order_acquire)) return nv_queue_fail(q);
      uint64_t now = nv_now();
      if (now >= spin_end) break;
      if (now >= deadline_ns) goto timeout;
    }
    __builtin_ia32_pause();
  }
  for (;;) {
    if (nv_look(q, k, ev, ev_epoch)) return HSAD_OK;
    nv_queue_probe(q);
    if (atomic_load_explicit(&q->error, memory_order_acquire)) {
      if (nv_look(q, k, ev, ev_epoch)) return HSAD_OK; /* reached before the fault */
      return nv_queue_fail(q);
    }
    uint64_t now = nv_now();
    if (now >= deadline_ns) goto timeout;
    /* 20 us .. 1 ms, at most 1/16 of the wait so far: oversleeping costs at most ~6% */
    uint64_t slice = (now - start) / 16;
    slice = slice < 20000 ? 20000 : slice > 1000000 ? 1000000 : slice;
    uint64_t d = deadline_ns - now < slice ? deadline_ns - now : slice;
    struct timespec ts = {.tv_sec = (time_t)(d / 1000000000ull), .tv_nsec = (long)(d % 1000000000ull)};
    nanosleep(&ts, NULL);
  }
timeout:
  return hsad_fail(HSAD_ERR_TIMEOUT, "hsad_completion_wait: queue %llu epoch %llu not reached "
                   "by the deadline (reached %llu)", (unsigned long long)q->uid,
                   (unsigned long long)k, (unsigned long long)nv_epoch_reached(q));
}

/* ---- dispatch ------------------------------------------------------------------------- */

static _Thread_local _Alignas(16) uint8_t nv_params[NV_PARAM_BUFFER_MAX];
/* kernelParams: a pointer to each parameter's bytes in nv_params. Not the `extra` buffer form
 * (CU_LAUNCH_PARAM_BUFFER_SIZE): cuda.h leaves open whether its size must be the end of the
 * last parameter or that rounded up, and kernelParams takes each size and offset from the
 * kernel's image itself. */
static _Thread_local void *nv_param_ptrs[NV_MAX_PARAMS];

/* The same argument rules and messages as codeobj's hsad_kernarg_build, over the layout
 * cuFuncGetParamInfo gives (offset and size only: a pointer value fits any 8-byte parameter).
 * Dynamic shared memory: one HSAD_KARG_LDS after the kernel's parameters (CUDA kernels have no
 * shared-pointer parameter; extern __shared__ arrays start at the dynamic area). */
/* A typed value of the other class than parameter i's type (float for an integer parameter, or
 * the reverse), the message as AMD's hsad_kernarg_build words it, the parameter's type as the
 * demangler spells it (integers of either signedness pass for each other, as on AMD). Cold. */
static __attribute__((noinline, cold)) hsad_status_t
nv_type_mismatch(const nv_kernel_t *k, uint32_t i, hsad_karg_type_t vt) {
  char(*cxx)[HSAD_CXX_TYPE_MAX] = calloc(k->param_count + 1, sizeof *cxx);
  bool named = cxx && hsad_cxx_param_types(k->desc.name, cxx, (int)k->param_count) ==
                          (int)k->param_count;
  hsad_karg_type_t pt = (hsad_karg_type_t)k->param_type[i];
  hsad_status_t s = hsad_fail(HSAD_ERR_ARG_KIND, "%s: kernel '%s': argument %u is %s (%s), the "
                              "value given is %s (%s)", k->program->label, k->desc.name, i,
                              named ? cxx[i] : hsad_karg_type_name(pt),
                              hsad_karg_type_is_float(pt) ? "floating-point" : "integer",
                              hsad_karg_type_name(vt),
                              hsad_karg_type_is_float(vt) ? "floating-point" : "integer");
  free(cxx);
  return s;
}

static hsad_status_t nv_pack(const nv_kernel_t *k, const hsad_launch_t *l, uint32_t *out_dynamic) {
  const char *file = k->program->label, *kname = k->desc.name;
  uint32_t n = l->arg_count;
  bool lds = n == k->param_count + 1 && l->args && l->args[n - 1].tag == HSAD_KARG_LDS;
  *out_dynamic = lds ? l->args[n - 1].lds_bytes : 0;
  if (n - lds != k->param_count)
    return hsad_fail(HSAD_ERR_ARG_COUNT, "%s: kernel '%s' takes %u explicit arguments, got %u",
                     file, kname, k->param_count, n);
  if (n && !l->args)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: kernel '%s': args NULL with arg_count %u",
                     file, kname, n);
  if (k->param_bytes) memset(nv_params, 0, k->param_bytes);
  for (uint32_t i = 0; i < k->param_count; i++) {
    const hsad_karg_t *v = &l->args[i];
    uint32_t size = k->param_size[i];
    uint8_t *dst = nv_params + k->param_offset[i];
    switch (v->tag) {
    case HSAD_KARG_BYTES:
    case HSAD_KARG_SCALAR:
      if (v->size != size)
        return hsad_fail(HSAD_ERR_ARG_SIZE, "%s: kernel '%s': argument %u has .size %u, value has "
                         "%u bytes", file, kname, i, size, v->size);
      if ((v->type || v->tag == HSAD_KARG_SCALAR) &&
          (!hsad_karg_type_name((hsad_karg_type_t)v->type) ||
           hsad_karg_type_size((hsad_karg_type_t)v->type) != size))
        return hsad_fail(HSAD_ERR_ARG_KIND, "%s: kernel '%s': argument %u: type %u is not a "
                         "%u-byte hsad_karg_type_t", file, kname, i, (unsigned)v->type, size);
      if (NV_UNLIKELY(v->type && k->param_type && k->param_type[i] &&
                      hsad_karg_type_is_float((hsad_karg_type_t)k->param_type[i]) !=
                          hsad_karg_type_is_float((hsad_karg_type_t)v->type)))
        return nv_type_mismatch(k, i, (hsad_karg_type_t)v->type);
      if (v->tag == HSAD_KARG_SCALAR) {
        memcpy(dst, &v->scalar, size);
        break;
      }
      if (size) {
        if (!v->bytes)
          return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: kernel '%s': argument %u: NULL bytes",
                           file, kname, i);
        memcpy(dst, v->bytes, size);
      }
      break;
    case HSAD_KARG_POINTER:
      if (size != 8)
        return hsad_fail(HSAD_ERR_ARG_SIZE, "%s: kernel '%s': argument %u has .size %u, a pointer "
                         "needs 8", file, kname, i, size);
      memcpy(dst, &v->pointer, 8);
      break;
    case HSAD_KARG_LDS:
      return hsad_fail(HSAD_ERR_ARG_KIND, "%s: kernel '%s': argument %u is a %u-byte parameter; "
                       "dynamic shared memory is one HSAD_KARG_LDS_BYTES(n) after the kernel's "
                       "%u parameters", file, kname, i, size, k->param_count);
    default:
      return hsad_fail(HSAD_ERR_ARG_KIND, "%s: kernel '%s': argument %u: unknown tag %d", file,
                       kname, i, (int)v->tag);
    }
  }
  return HSAD_OK;
}

/* Geometry and shared memory (launch_check.c's checks, CUDA's limits). grid[] counts
 * work-items as on AMD; the launch has ceil(grid / block) blocks per dimension (CUDA has no
 * partial blocks: kernels bound-check, as HIP kernels do). */
static hsad_status_t nv_geometry(const nv_queue_t *q, nv_kernel_t *k, const hsad_launch_t *l,
                                 uint32_t dynamic, uint32_t blocks[3], uint32_t block[3]) {
  const nv_dev_t *dev = q->dev;
  const hsad_device_info_t *di = &dev->info;
  const char *name = k->desc.name;
  uint32_t dims = l->dims;
  if (NV_UNLIKELY(dims < 1 || dims > 3))
    return hsad_fail(HSAD_ERR_GRID, "kernel %s: dims %u, must be 1..3", name, dims);
  uint32_t flat = 1;
  for (uint32_t i = 0; i < 3; i++) {
    uint32_t g = l->grid[i], b = l->block[i];
    if (i >= dims) {
      hsad_status_t s = hsad_launch_unused_dim_check(name, i, dims, g, b);
      if (NV_UNLIKELY(s)) return s;
      g = b = 1;
    }
    if (NV_UNLIKELY(g == 0))
      return hsad_fail(HSAD_ERR_GRID, "kernel %s: grid[%u] is 0 work-items", name, i);
    if (NV_UNLIKELY(b == 0))
      return hsad_fail(HSAD_ERR_WORKGROUP, "kernel %s: block[%u] is 0 work-items", name, i);
    if (NV_UNLIKELY(b > di->max_workgroup_dim[i]))
      return hsad_fail(HSAD_ERR_WORKGROUP, "kernel %s: block[%u]=%u exceeds device %u's maximum "
                       "%u (CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_%c)", name, i, b, di->index,
                       di->max_workgroup_dim[i], "XYZ"[i]);
    uint32_t nb = g / b + (g % b != 0);
    if (NV_UNLIKELY(nb > dev->max_grid_blocks[i]))
      return hsad_fail(HSAD_ERR_GRID, "kernel %s: grid[%u]=%u is %u blocks of %u, above device "
                       "%u's maximum %u (CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_%c)", name, i, g, nb, b,
                       di->index, dev->max_grid_blocks[i], "XYZ"[i]);
    blocks[i] = nb;
    block[i] = b;
    flat *= b;
  }
  if (NV_UNLIKELY(flat > k->desc.max_flat_workgroup_size))
    return hsad_fail(HSAD_ERR_WORKGROUP, "kernel %s: workgroup of %u work-items exceeds its "
                     "maximum %u (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK; device %u maximum %u)",
                     name, flat, k->desc.max_flat_workgroup_size, di->index,
                     di->max_workgroup_size);
  uint64_t group = (uint64_t)k->static_shared + dynamic;
  if (NV_UNLIKELY(group > di->lds_bytes))
    return hsad_fail(HSAD_ERR_LDS_LIMIT, "kernel %s: group segment of %llu bytes (%u fixed + %u "
                     "dynamic) exceeds device %u's LDS of %u bytes per workgroup", name,
                     (unsigned long long)group, k->static_shared, dynamic, di->index, di->lds_bytes);
  if (NV_UNLIKELY(dynamic > atomic_load_explicit(&k->dynamic_shared_max, memory_order_relaxed))) {
    /* above the 48 KiB default: opt in for this function (once per size increase) */
    nv_result_t r = nv_cu.func_set_attribute(k->fn, NV_FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                             (int)dynamic);
    if (r != NV_SUCCESS)
      return nv_fail(q->dev, r, "kernel %s: cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, %u)",
                     name, dynamic);
    atomic_store_explicit(&k->dynamic_shared_max, dynamic, memory_order_relaxed);
  }
  return HSAD_OK;
}

hsad_status_t nv_launch_prepare(nv_queue_t *q, const hsad_device_kernel_t *kernel,
                                const hsad_launch_t *l, nv_prepared_t *out) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_kernel_dispatch", {kernel, "kernel"}, {l, "launch"});
  if (ns) return ns;
  if (hsad_object_ops(kernel) != &nv_backend_ops)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "kernel %s is loaded on an AMD device, the queue "
                     "is on device %u (NVIDIA)", hsad_device_kernel_desc(kernel)->name,
                     q->dev->info.index);
  nv_kernel_t *k = (nv_kernel_t *)(uintptr_t)kernel;
  if (k->program->dev != q->dev)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "kernel %s is loaded on device %u, the queue is on "
                     "device %u", k->desc.name, k->program->dev->info.index, q->dev->info.index);
  hsad_status_t s = nv_ctx_enter(q->dev);
  if (!s) s = nv_pack(k, l, &out->dynamic);
  if (!s) s = nv_geometry(q, k, l, out->dynamic, out->blocks, out->block);
  if (s) return s;
  out->k = k;
  out->params = nv_params;
  return HSAD_OK;
}

/* A dispatch with a completion on a profiling queue: start event, launch, end event and the
 * epoch under the queue's lock (the events bracket this launch alone); the completion's
 * packet_id is the dispatch id (the slot hsad_completion_times reads). exec: a CUDA graph
 * launched (cuGraphLaunch) in place of the kernel (nv_graph.c's monitored launches); params:
 * the kernel's parameter pointers. */
__attribute__((noinline)) hsad_status_t
nv_dispatch_timed(nv_queue_t *q, nv_kernel_t *k, const uint32_t blocks[3], const uint32_t block[3],
                  uint32_t dynamic, void **params, nv_graph_exec_t exec,
                  hsad_completion_t *out_completion, uint64_t *out_packet_id) {
  pthread_mutex_lock(&q->lock);
  uint64_t id = atomic_load_explicit(&q->launches, memory_order_relaxed);
  uint32_t slot = (uint32_t)(id % NV_PROF_SLOTS);
  atomic_store_explicit(&q->prof_id[slot], UINT64_MAX, memory_order_release); /* being reused */
  const char *what = "cuEventRecord (start)";
  nv_result_t r = nv_cu.event_record(q->prof_ev[2 * slot], q->stream);
  if (!r && exec) {
    what = "cuGraphLaunch";
    r = nv_cu.graph_launch(exec, q->stream);
  } else if (!r) {
    what = "cuLaunchKernel";
    r = nv_cu.launch_kernel(k->fn, blocks[0], blocks[1], blocks[2], block[0], block[1], block[2],
                            dynamic, q->stream, params, NULL);
  }
  if (!r) {
    atomic_store_explicit(&q->launches, id + 1, memory_order_relaxed);
    what = "cuEventRecord (end)";
    r = nv_cu.event_record(q->prof_ev[2 * slot + 1], q->stream);
  }
  uint64_t e = atomic_load_explicit(&q->issued, memory_order_relaxed) + 1;
  if (!r) {
    what = "cuStreamWriteValue64";
    r = nv_cu.stream_write_value64(q->stream, q->epoch_dev, e, NV_STREAM_WRITE_VALUE_DEFAULT);
  }
  if (!r) {
    atomic_store_explicit(&q->issued, e, memory_order_release);
    atomic_store_explicit(&q->since_epoch, 0, memory_order_relaxed);
    q->prof_epoch[slot] = e;
    atomic_store_explicit(&q->prof_id[slot], id, memory_order_release);
  }
  pthread_mutex_unlock(&q->lock);
  if (r)
    return nv_fail(q->dev, r, "%s%s: %s on profiling queue %llu", exec ? "" : "kernel ",
                   exec ? "hsad_graph_launch" : k->desc.name, what, (unsigned long long)q->uid);
  *out_completion = (hsad_completion_t){.queue = (hsad_queue_t *)q, .epoch = e, .packet_id = id};
  if (out_packet_id) *out_packet_id = id;
  return HSAD_OK;
}

hsad_status_t nv_completion_times(const hsad_completion_t *c, uint64_t *out_start_ns,
                                  uint64_t *out_end_ns) {
  nv_queue_t *q = nvq(c->queue);
  if (!q->profiling)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_completion_times: the queue was created without "
                     "profiling (hsad_queue_options_t.profiling)");
  if (!nv_completion_done(c) || atomic_load_explicit(&q->error, memory_order_acquire))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_completion_times: packet %llu has not "
                     "completed", (unsigned long long)c->packet_id);
  uint32_t slot = (uint32_t)(c->packet_id % NV_PROF_SLOTS);
  /* (a barrier's or flush's completion has packet_id = its epoch: the epoch tells them apart) */
  if (atomic_load_explicit(&q->prof_id[slot], memory_order_acquire) != c->packet_id ||
      q->prof_epoch[slot] != c->epoch)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_completion_times: packet %llu is not a "
                     "kernel dispatch with a completion, or its slot was reused (times are kept "
                     "for %u dispatches)", (unsigned long long)c->packet_id, NV_PROF_SLOTS);
  hsad_status_t s = nv_ctx_enter(q->dev);
  if (s) return s;
  float ms[2];
  nv_result_t r = nv_cu.event_elapsed_time(&ms[0], q->prof_ev0, q->prof_ev[2 * slot]);
  if (!r) r = nv_cu.event_elapsed_time(&ms[1], q->prof_ev0, q->prof_ev[2 * slot + 1]);
  if (r) return nv_fail(q->dev, r, "hsad_completion_times: cuEventElapsedTime");
  if (atomic_load_explicit(&q->prof_id[slot], memory_order_acquire) != c->packet_id)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_completion_times: packet %llu's slot was "
                     "reused while reading (times are kept for %u dispatches)",
                     (unsigned long long)c->packet_id, NV_PROF_SLOTS);
  *out_start_ns = q->prof_t0_ns + (uint64_t)((double)ms[0] * 1e6);
  *out_end_ns = q->prof_t0_ns + (uint64_t)((double)ms[1] * 1e6);
  return HSAD_OK;
}

/* ---- capture (fusion/capture.c records; backend.h "stream capture") ---------------------- */

hsad_status_t nv_gate_fail(const nv_queue_t *q, const char *who) {
  if (atomic_load_explicit(&((nv_queue_t *)(uintptr_t)q)->error, memory_order_acquire))
    return nv_queue_fail(q);
  return hsad_backend_capture_refuse((const hsad_queue_t *)q, who);
}

hsad_status_t nv_queue_capture_set(hsad_queue_t *queue, bool on) {
  nv_queue_t *q = nvq(queue);
  if (!on) {
    atomic_fetch_and_explicit(&q->capturing, ~HSAD_GATE_CAPTURE, memory_order_release);
    return HSAD_OK;
  }
  if (atomic_load_explicit(&q->error, memory_order_acquire)) return nv_queue_fail(q);
  if (q->shared)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "queue %llu is a shared queue of device %u "
                     "(hsad_device_queue): its other users' submits would be captured; capture "
                     "on a queue of your own (hsad_queue_create)", (unsigned long long)q->uid,
                     q->dev->info.index);
  atomic_fetch_or_explicit(&q->capturing, HSAD_GATE_CAPTURE, memory_order_release);
  return HSAD_OK;
}

/* A dispatch whose gate was not open (cold): the sticky error; or, capturing, every check of
 * the uncaptured call (nv_launch_prepare: the same messages), then the node is recorded and
 * nothing reaches the stream; or the capture ended since the gate was read: a dispatch. */
static __attribute__((noinline, cold)) hsad_status_t
nv_dispatch_gated(nv_queue_t *q, const hsad_device_kernel_t *kernel, const hsad_launch_t *l,
                  hsad_completion_t *out_completion, uint64_t *out_packet_id,
                  uint32_t *out_dynamic) {
  if (atomic_load_explicit(&q->error, memory_order_acquire)) return nv_queue_fail(q);
  if (!hsad_backend_capturing((hsad_queue_t *)q))
    return nv_dispatch_unmonitored(q, kernel, l, out_completion, out_packet_id, out_dynamic);
  nv_prepared_t p;
  hsad_status_t s = nv_launch_prepare(q, kernel, l, &p);
  if (s) return s;
  *out_dynamic = p.dynamic;
  return hsad_backend_capture_kernel((hsad_queue_t *)q, kernel, l, HSAD_DEADLINE_NEVER,
                                     out_completion, out_packet_id);
}

/* hsad_kernel_dispatch with a NULL kernel or launch (cold): the message naming it. */
static __attribute__((noinline, cold)) hsad_status_t
nv_dispatch_null(const hsad_device_kernel_t *kernel, const hsad_launch_t *l) {
  return HSAD_NULL_ARGS("hsad_kernel_dispatch", {kernel, "kernel"}, {l, "launch"});
}

/* hsad_kernel_dispatch on q without monitoring; *out_dynamic: the dynamic shared bytes. */
static inline __attribute__((always_inline)) hsad_status_t
nv_dispatch_body(nv_queue_t *q, const hsad_device_kernel_t *kernel, const hsad_launch_t *l,
                 hsad_completion_t *out_completion, uint64_t *out_packet_id,
                 uint32_t *out_dynamic) {
  if (NV_UNLIKELY(!kernel || !l)) return nv_dispatch_null(kernel, l);
  /* the sticky error and a capture: one load and branch (the gate word, backend.h) */
  if (NV_UNLIKELY(!nv_gate_open(q)))
    return nv_dispatch_gated(q, kernel, l, out_completion, out_packet_id, out_dynamic);
  if (NV_UNLIKELY(atomic_load_explicit(&q->join_src, memory_order_relaxed) != NULL)) {
    hsad_status_t s = nv_queue_settle_slow(q);
    if (s) return s;
  }
  if (NV_UNLIKELY(hsad_object_ops(kernel) != &nv_backend_ops))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "kernel %s is loaded on an AMD device, the queue "
                     "is on device %u (NVIDIA)", hsad_device_kernel_desc(kernel)->name,
                     q->dev->info.index);
  nv_kernel_t *k = (nv_kernel_t *)(uintptr_t)kernel;
  if (NV_UNLIKELY(k->program->dev != q->dev))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "kernel %s is loaded on device %u, the queue is on "
                     "device %u", k->desc.name, k->program->dev->info.index, q->dev->info.index);
  hsad_status_t s = nv_ctx_enter(q->dev);
  if (NV_UNLIKELY(s)) return s;
  if (NV_UNLIKELY((s = nv_queue_seal_fast(q)) != HSAD_OK)) return s;
  uint32_t dynamic, blocks[3], block[3];
  if (NV_UNLIKELY((s = nv_pack(k, l, &dynamic)) != HSAD_OK)) return s;
  *out_dynamic = dynamic;
  if (NV_UNLIKELY((s = nv_geometry(q, k, l, dynamic, blocks, block)) != HSAD_OK)) return s;
  for (uint32_t i = 0; i < k->param_count; i++) nv_param_ptrs[i] = nv_params + k->param_offset[i];
  if (NV_UNLIKELY(q->profiling && out_completion))
    return nv_dispatch_timed(q, k, blocks, block, dynamic, k->param_count ? nv_param_ptrs : NULL,
                             NULL, out_completion, out_packet_id);
  nv_result_t r = nv_cu.launch_kernel(k->fn, blocks[0], blocks[1], blocks[2], block[0], block[1],
                                      block[2], dynamic, q->stream,
                                      k->param_count ? nv_param_ptrs : NULL, NULL);
  if (NV_UNLIKELY(r != NV_SUCCESS))
    return nv_fail(q->dev, r, "kernel %s: cuLaunchKernel on queue %llu (grid %ux%ux%u blocks of "
                   "%ux%ux%u, %u bytes dynamic shared)", k->desc.name, (unsigned long long)q->uid,
                   blocks[0], blocks[1], blocks[2], block[0], block[1], block[2], dynamic);
  uint64_t id = atomic_fetch_add_explicit(&q->launches, 1, memory_order_relaxed);
  atomic_store_explicit(&q->since_epoch, 1, memory_order_relaxed);
  if (out_completion && (s = nv_queue_epoch(q, out_completion)) != HSAD_OK) return s;
  if (out_packet_id) *out_packet_id = id;
  return HSAD_OK;
}

hsad_status_t nv_dispatch_unmonitored(nv_queue_t *q, const hsad_device_kernel_t *kernel,
                                      const hsad_launch_t *l, hsad_completion_t *out_completion,
                                      uint64_t *out_packet_id, uint32_t *out_dynamic) {
  return nv_dispatch_body(q, kernel, l, out_completion, out_packet_id, out_dynamic);
}

hsad_status_t nv_kernel_dispatch(hsad_queue_t *queue, const hsad_device_kernel_t *kernel,
                                 const hsad_launch_t *l, uint64_t deadline_ns,
                                 hsad_completion_t *out_completion, uint64_t *out_packet_id) {
  (void)deadline_ns; /* a stream has no ring to wait for */
  nv_queue_t *q = nvq(queue);
  uint32_t dynamic;
  /* monitored, unless captured (a captured dispatch is recorded, not run: no record) */
  if (NV_UNLIKELY(q->monitor != NULL) && !hsad_backend_capturing(queue))
    return nv_monitor_dispatch(q, kernel, l, out_completion, out_packet_id);
  return nv_dispatch_body(q, kernel, l, out_completion, out_packet_id, &dynamic);
}

/* ---- barriers ------------------------------------------------------------------------- */

hsad_status_t nv_queue_wait_deps(nv_queue_t *q, const hsad_completion_t *deps, uint32_t n,
                                 uint64_t deadline_ns, const char *who) {
  if (n && !deps)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: deps NULL with dep_count %u", who, n);
  for (uint32_t i = 0; i < n; i++) {
    const hsad_completion_t *c = &deps[i];
    if (!c->queue || !c->epoch || c->queue == (hsad_queue_t *)q) continue;
    if (hsad_queue_ops(c->queue) != &nv_backend_ops) {
      /* another vendor's work: the GPU cannot wait for it; the host does */
      hsad_status_t s = hsad_completion_wait(c, deadline_ns);
      if (s) return s;
      continue;
    }
    nv_queue_t *d = nvq(c->queue);
    if (atomic_load_explicit(&d->error, memory_order_acquire)) return nv_queue_fail(d);
    if (nv_epoch_reached(d) >= c->epoch) continue;
    if (c->epoch > atomic_load_explicit(&d->issued, memory_order_acquire))
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: dependency %u: epoch %llu was never issued "
                       "on queue %llu", who, i, (unsigned long long)c->epoch,
                       (unsigned long long)d->uid);
    hsad_status_t s = nv_queue_seal_fast(q); /* q's own pending epoch does not wait for d */
    if (s) return s;
    /* under d's lock: a pending epoch of d is sealed now (nothing follows it in d's stream),
     * and its event slot is not re-recorded before q's wait captured it */
    pthread_mutex_lock(&d->lock);
    nv_result_t r = NV_SUCCESS;
    const char *call = "cuEventRecord";
    if (c->epoch > atomic_load_explicit(&d->covered, memory_order_relaxed)) {
      bool other = d->dev != q->dev; /* d's stream is in its own device's context */
      if (other && (s = nv_ctx_enter(d->dev)) == HSAD_OK) {
        r = nv_seal_locked(d);
        s = nv_ctx_enter(q->dev);
      } else if (!other) {
        r = nv_seal_locked(d);
      }
      if (s) {
        pthread_mutex_unlock(&d->lock);
        return s;
      }
    }
    if (r == NV_SUCCESS && c->epoch > d->written) {
      call = "cuStreamWaitEvent";
      r = nv_cu.stream_wait_event(q->stream, d->seal_ev[c->epoch % NV_SEAL_EVENTS], 0);
    } else if (r == NV_SUCCESS) {
      /* written to the counter: the same device's mapping, or the host address (another
       * device, unified addressing) */
      call = "cuStreamWaitValue64";
      nv_deviceptr_t addr = d->dev == q->dev ? d->epoch_dev
                                             : (nv_deviceptr_t)(uintptr_t)d->epoch_host;
      r = nv_cu.stream_wait_value64(q->stream, addr, c->epoch, NV_STREAM_WAIT_VALUE_GEQ);
    }
    pthread_mutex_unlock(&d->lock);
    if (r != NV_SUCCESS)
      return nv_fail(q->dev, r, "%s: %s (queue %llu after queue %llu epoch %llu)", who, call,
                     (unsigned long long)q->uid, (unsigned long long)d->uid,
                     (unsigned long long)c->epoch);
    atomic_store_explicit(&q->since_epoch, 1, memory_order_relaxed);
  }
  return HSAD_OK;
}

hsad_status_t nv_queue_barrier(hsad_queue_t *queue, const hsad_completion_t *deps,
                               uint32_t dep_count, uint64_t deadline_ns,
                               hsad_completion_t *out_completion) {
  nv_queue_t *q = nvq(queue);
  if (!nv_gate_open(q)) { /* the sticky error, or a capture records the barrier */
    if (atomic_load_explicit(&q->error, memory_order_acquire)) return nv_queue_fail(q);
    if (hsad_backend_capturing(queue))
      return hsad_backend_capture_barrier(queue, deps, dep_count, deadline_ns, out_completion);
  }
  hsad_status_t s = nv_ctx_enter(q->dev);
  if (!s) s = nv_queue_settle(q);
  if (s) return s;
  s = nv_queue_wait_deps(q, deps, dep_count, deadline_ns, "hsad_queue_barrier");
  if (s) return s;
  /* a stream runs in order: the barrier needs no command of its own */
  return out_completion ? nv_queue_epoch(q, out_completion) : HSAD_OK;
}

hsad_status_t nv_queue_flush(hsad_queue_t *queue, uint64_t deadline_ns,
                             hsad_completion_t *out_completion) {
  (void)deadline_ns;
  nv_queue_t *q = nvq(queue);
  if (!nv_gate_open(q)) { /* the sticky error; a capture refuses a flush */
    hsad_status_t s = nv_gate_fail(q, "hsad_queue_flush");
    if (s) return s;
  }
  hsad_status_t s = nv_queue_settle(q);
  return s ? s : nv_queue_flush_raw(q, out_completion);
}

hsad_status_t nv_queue_settle_slow(nv_queue_t *q) {
  nv_queue_t *src = atomic_exchange_explicit(&q->join_src, NULL, memory_order_acq_rel);
  if (!src) return HSAD_OK;
  hsad_completion_t c;
  hsad_status_t s = nv_ctx_enter(q->dev);
  if (!s) s = nv_queue_flush_raw(src, &c);
  if (!s) s = nv_ctx_enter(q->dev);
  return s ? s : nv_queue_wait_deps(q, &c, 1, HSAD_DEADLINE_NEVER, "queue join after a graph");
}

hsad_status_t nv_queue_flush_raw(nv_queue_t *q, hsad_completion_t *out_completion) {
  hsad_queue_t *queue = (hsad_queue_t *)q;
  if (atomic_load_explicit(&q->error, memory_order_acquire)) return nv_queue_fail(q);
  uint64_t k = atomic_load_explicit(&q->issued, memory_order_acquire);
  if (k && !atomic_load_explicit(&q->since_epoch, memory_order_relaxed)) {
    *out_completion = (hsad_completion_t){.queue = queue, .epoch = k, .packet_id = k};
    return HSAD_OK;
  }
  hsad_status_t s = nv_ctx_enter(q->dev);
  if (s) return s;
  return nv_queue_epoch(q, out_completion);
}
