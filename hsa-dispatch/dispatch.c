/* dispatch.c - the dispatch path (hsad_queue.h steps 2-8): the per-thread launch cache,
 * single dispatches, prepared launches and batches. The ring rules are in aql_ring.h, the
 * checks in launch_check.c, completions in timeline.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsa-dispatch/aql_ring.h"

/* Kernel dispatch headers indexed by flags & 3 (HSAD_LAUNCH_NO_BARRIER, _FENCE_AGENT). */
static const uint16_t dispatch_headers[4] = {
    HSAD_AQL_HEADER(HSA_PACKET_TYPE_KERNEL_DISPATCH, 1, HSA_FENCE_SCOPE_SYSTEM, HSA_FENCE_SCOPE_SYSTEM),
    HSAD_AQL_HEADER(HSA_PACKET_TYPE_KERNEL_DISPATCH, 0, HSA_FENCE_SCOPE_SYSTEM, HSA_FENCE_SCOPE_SYSTEM),
    HSAD_AQL_HEADER(HSA_PACKET_TYPE_KERNEL_DISPATCH, 1, HSA_FENCE_SCOPE_AGENT, HSA_FENCE_SCOPE_AGENT),
    HSAD_AQL_HEADER(HSA_PACKET_TYPE_KERNEL_DISPATCH, 0, HSA_FENCE_SCOPE_AGENT, HSA_FENCE_SCOPE_AGENT),
};

static inline uint16_t dispatch_header(uint32_t flags) { return dispatch_headers[flags & 3]; }

/* Per-thread cache of the last launch: the kernarg segment hsad_kernarg_build produced and the
 * checked packet body. A launch with the same queue, kernel, geometry and argument values
 * reuses both (one copy of the kernarg bytes into the slot's block) instead of re-checking the
 * geometry and re-writing every hidden argument. Keys are unique ids, never pointers, so a
 * freed and reallocated queue or kernel cannot alias an old entry. Only successful launches are
 * cached, so a hit needs no check. */
#define DQ_KC_ARGS 16
#define DQ_KC_VAL 16
typedef struct dq_kcache {
  uint64_t quid, kuid;
  uint32_t geom[7];               /* launch dims, grid[3], block[3] as given */
  uint32_t nargs;
  hsad_karg_t args[DQ_KC_ARGS];
  uint8_t vals[DQ_KC_ARGS][DQ_KC_VAL];
  dq_built_t b;                   /* checked body and kernarg image */
} dq_kcache_t;
static _Thread_local dq_kcache_t dq_kc;

_Static_assert(offsetof(hsad_launch_t, grid) == 4 && offsetof(hsad_launch_t, block) == 16,
               "launch geometry is 7 consecutive uint32_t");

static inline bool kcache_hit(const dq_kcache_t *c, const hsad_queue_t *q,
                              const hsad_device_kernel_t *k, const hsad_launch_t *l) {
  uint64_t a[3], b[3];
  uint32_t a3, b3;
  memcpy(a, &l->dims, 24);
  memcpy(&a3, &l->block[2], 4);
  memcpy(b, c->geom, 24);
  memcpy(&b3, &c->geom[6], 4);
  /* kuid is 0 while the entry is invalid (uids start at 1) */
  if ((c->kuid != k->uid) | (c->quid != q->uid) | (c->nargs != l->arg_count) |
      (((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a3 ^ b3)) != 0))
    return false;
  for (uint32_t i = 0; i < c->nargs; i++) {
    const hsad_karg_t *x = &l->args[i], *y = &c->args[i];
    if (x->tag != y->tag) return false;
    if (x->tag == HSAD_KARG_BYTES) {
      if (x->size != y->size || !x->bytes) return false;
      if (x->size == 4) {
        uint32_t u, v;
        memcpy(&u, x->bytes, 4);
        memcpy(&v, c->vals[i], 4);
        if (u != v) return false;
      } else if (x->size == 8) {
        uint64_t u, v;
        memcpy(&u, x->bytes, 8);
        memcpy(&v, c->vals[i], 8);
        if (u != v) return false;
      } else if (memcmp(x->bytes, c->vals[i], x->size)) {
        return false;
      }
    } else if (x->tag == HSAD_KARG_POINTER) {
      if (x->pointer != y->pointer) return false;
    } else if (x->lds_bytes != y->lds_bytes) {
      return false;
    }
  }
  return true;
}

/* Cache miss: checks and builds the launch into the cache and, when every value fits,
 * remembers the key. Errors as hsad_kernel_dispatch documents. */
static hsad_status_t launch_build(const hsad_queue_t *q, const hsad_device_kernel_t *k,
                                  const hsad_launch_t *l) {
  dq_kcache_t *c = &dq_kc;
  c->kuid = 0; /* invalid until the key is complete */
  hsad_status_t s = dq_launch_check(q, k, l, &c->b);
  if (s) return s;
  if (l->arg_count > DQ_KC_ARGS) return HSAD_OK; /* built, not cached */
  for (uint32_t i = 0; i < l->arg_count; i++) {
    c->args[i] = l->args[i];
    if (l->args[i].tag == HSAD_KARG_BYTES) {
      if (l->args[i].size > DQ_KC_VAL) return HSAD_OK;
      memcpy(c->vals[i], l->args[i].bytes, l->args[i].size);
    }
  }
  memcpy(c->geom, &l->dims, sizeof c->geom);
  c->quid = q->uid;
  c->nargs = l->arg_count;
  c->kuid = k->uid;
  return HSAD_OK;
}

/* Writes the kernarg image into slot `id`'s block and the body at `id` (header INVALID);
 * returns the word to publish. */
static inline uint32_t fill_dispatch(hsad_queue_t *q, uint64_t id, const hsad_aql_dispatch_t *d,
                                     const uint8_t *image, uint32_t ksize, uint16_t header,
                                     uint64_t signal) {
  uint8_t *ka = q->kernargs + (id & q->mask) * q->kernarg_block;
  if (ksize) memcpy(ka, image, ksize);
  hsa_kernel_dispatch_packet_t *pkt = (hsa_kernel_dispatch_packet_t *)dq_slot(q, id);
  uint32_t word = hsad_aql_dispatch_fill(pkt, d, header);
  pkt->kernarg_address = ka;
  pkt->completion_signal.handle = signal;
  return word;
}

/* A dispatch with a completion, or one whose kernarg segment spans m > 1 blocks (padding
 * after it, hsad_queue.h step 4). The epoch packet is the dispatch itself when it has the
 * BARRIER bit, no timestamp signal and no padding; else the last padding packet; else a
 * barrier-AND after the dispatch. */
static __attribute__((noinline)) hsad_status_t
submit_slow(hsad_queue_t *q, const hsad_aql_dispatch_t *d, const uint8_t *image, uint32_t ksize,
            uint16_t header, uint64_t deadline_ns, hsad_completion_t *out_completion,
            uint64_t *out_packet_id) {
  uint32_t m = dq_span(q, ksize);
  bool want = out_completion != NULL;
  bool own = want && m == 1 && (header & (1u << HSA_PACKET_HEADER_BARRIER)) && !q->ts_signals;
  uint32_t n = m + (want && m == 1 && !own);
  uint64_t id, k = 0;
  hsad_status_t s = want ? dq_reserve_epoch(q, n, true, deadline_ns, &id, &k)
                         : dq_reserve(q, n, deadline_ns, &id);
  if (DQ_UNLIKELY(s)) return s;
  uint64_t sig = own ? q->epoch_signal.handle : q->ts_signals ? dq_ts_arm(q, id) : 0;
  uint32_t word = fill_dispatch(q, id, d, image, ksize, header, sig);
  dq_publish_padding(q, id, n, want && !own);
  hsad_aql_publish(dq_slot(q, id), word); /* the first packet's header last */
  dq_ring_doorbell(q, id + n - 1);
  if (want) *out_completion = (hsad_completion_t){.queue = q, .epoch = k, .packet_id = id};
  if (out_packet_id) *out_packet_id = id;
  return HSAD_OK;
}

/* Steps 3-7 of a dispatch whose body and kernarg image are built: the hot path shared by
 * hsad_kernel_dispatch and hsad_prepared_dispatch. */
static inline __attribute__((always_inline)) hsad_status_t
submit_plain(hsad_queue_t *q, const hsad_aql_dispatch_t *d, const uint8_t *image, uint32_t ksize,
             uint16_t header, uint64_t deadline_ns, hsad_completion_t *out_completion,
             uint64_t *out_packet_id) {
  if (DQ_UNLIKELY((out_completion != NULL) | (ksize > q->kernarg_block)))
    return submit_slow(q, d, image, ksize, header, deadline_ns, out_completion, out_packet_id);
  uint64_t id;
  hsad_status_t s = dq_reserve(q, 1, deadline_ns, &id);
  if (DQ_UNLIKELY(s)) return s;
  /* Slot `id` and its kernarg block are ours: the packet that used them before (id - size)
   * completed, since id - size < retired. */
  uint64_t sig = DQ_UNLIKELY(q->ts_signals != NULL) ? dq_ts_arm(q, id) : 0;
  hsad_aql_publish(dq_slot(q, id), fill_dispatch(q, id, d, image, ksize, header, sig));
  dq_ring_doorbell(q, id);
  if (out_packet_id) *out_packet_id = id;
  return HSAD_OK;
}

/* Monitoring on (monitor.c): the same submit between two marks, then one record. */
static __attribute__((noinline)) hsad_status_t
submit_monitored(hsad_queue_t *q, const hsad_aql_dispatch_t *d, const uint8_t *image,
                 uint32_t ksize, uint16_t header, uint64_t deadline_ns,
                 hsad_completion_t *out_completion, uint64_t *out_packet_id) {
  dq_mon_mark_t mark;
  dq_monitor_begin(q, &mark);
  uint64_t id;
  hsad_status_t s = submit_plain(q, d, image, ksize, header, deadline_ns, out_completion, &id);
  if (s) return s;
  dq_monitor_close(&mark);
  dq_monitor_end(q, d, id, &mark);
  if (out_packet_id) *out_packet_id = id;
  return HSAD_OK;
}

static inline __attribute__((always_inline)) hsad_status_t
submit_built(hsad_queue_t *q, const hsad_aql_dispatch_t *d, const uint8_t *image, uint32_t ksize,
             uint16_t header, uint64_t deadline_ns, hsad_completion_t *out_completion,
             uint64_t *out_packet_id) {
  if (DQ_UNLIKELY(q->monitor))
    return submit_monitored(q, d, image, ksize, header, deadline_ns, out_completion, out_packet_id);
  return submit_plain(q, d, image, ksize, header, deadline_ns, out_completion, out_packet_id);
}

/* ---- the gate: the sticky error or a capture (hsad_submit.h "capture") ------------------- */

hsad_status_t dq_gate_fail(const hsad_queue_t *q, const char *who) {
  if (q->ops) return dq_amd_only(who, "the queue");
  if (atomic_load_explicit(&q->error, memory_order_acquire)) return dq_queue_fail(q);
  if (!atomic_load_explicit(&((hsad_queue_t *)q)->capturing, memory_order_acquire))
    return HSAD_OK; /* the capture ended since the gate was read */
  return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: queue %llu is capturing "
                   "(hsad_queue_capture_begin): a capture records hsad_kernel_dispatch and "
                   "hsad_queue_barrier only; end it first (hsad_queue_capture_end)", who,
                   (unsigned long long)q->hsa->id);
}

/* A dispatch with a NULL argument or that found the gate closed: the sticky error, else the
 * capture's recorder. */
static __attribute__((noinline, cold)) hsad_status_t
dispatch_gated(hsad_queue_t *q, const hsad_device_kernel_t *k, const hsad_launch_t *l,
               uint64_t deadline_ns, hsad_completion_t *out_completion, uint64_t *out_packet_id) {
  if (!q || !k || !l)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_kernel_dispatch: NULL queue, kernel or launch");
  /* a queue of another backend: its gate keeps HSAD_GATE_BACKEND, so it always comes here */
  if (q->ops) return q->ops->kernel_dispatch(q, k, l, deadline_ns, out_completion, out_packet_id);
  if (atomic_load_explicit(&q->error, memory_order_acquire)) return dq_queue_fail(q);
  const hsad_submit_capture_ops_t *ops = dq_capture_ops(q);
  if (ops) return ops->kernel(q, k, l, deadline_ns, out_completion, out_packet_id);
  /* the capture ended since the gate was read: an ordinary dispatch */
  return hsad_kernel_dispatch(q, k, l, deadline_ns, out_completion, out_packet_id);
}

hsad_status_t hsad_submit_capture_start(hsad_queue_t *q, const hsad_submit_capture_ops_t *ops,
                                        void *ctx) {
  if (!q || !ops || !ctx)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_submit_capture_start: NULL argument");
  if (q->ops)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "the queue is a %s stream: stream capture is AMD "
                     "only for now; record NVIDIA graphs with hsad_graph_add_*", q->ops->name);
  if (atomic_load_explicit(&q->error, memory_order_acquire)) return dq_queue_fail(q);
  if (q->shared)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "queue %llu is a shared queue of device %u "
                     "(hsad_device_queue): its other users' submits would be captured; capture "
                     "on a queue of your own (hsad_queue_create)",
                     (unsigned long long)q->hsa->id, q->device->info.index);
  if (atomic_load_explicit(&q->capturing, memory_order_relaxed))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "queue %llu is already capturing",
                     (unsigned long long)q->hsa->id);
  q->capture_ctx = ctx;
  atomic_store_explicit(&q->capture_ops, ops, memory_order_release);
  atomic_store_explicit(&q->capturing, 1, memory_order_release);
  return HSAD_OK;
}

void *hsad_submit_capture_stop(hsad_queue_t *q) {
  if (!q || q->ops || !atomic_load_explicit(&q->capturing, memory_order_relaxed)) return NULL;
  atomic_store_explicit(&q->capturing, 0, memory_order_release);
  atomic_store_explicit(&q->capture_ops, NULL, memory_order_release);
  void *ctx = q->capture_ctx;
  q->capture_ctx = NULL;
  return ctx;
}

void *hsad_submit_capture_ctx(const hsad_queue_t *q) {
  return q && !q->ops && atomic_load_explicit(&((hsad_queue_t *)q)->capturing, memory_order_acquire)
             ? q->capture_ctx
             : NULL;
}

hsad_status_t hsad_kernel_dispatch(hsad_queue_t *q, const hsad_device_kernel_t *k,
                                   const hsad_launch_t *l, uint64_t deadline_ns,
                                   hsad_completion_t *out_completion, uint64_t *out_packet_id) {
  /* NULL arguments, the sticky error and a capture: one cold path (the gate word holds the
   * error and the capture flag: one load and branch for both) */
  if (DQ_UNLIKELY(!q || !k || !l || dq_gate(q)))
    return dispatch_gated(q, k, l, deadline_ns, out_completion, out_packet_id);
  dq_kcache_t *kc = &dq_kc;
  if (DQ_UNLIKELY(!kcache_hit(kc, q, k, l))) {
    hsad_status_t s = launch_build(q, k, l);
    if (DQ_UNLIKELY(s)) return s;
  }
  return submit_built(q, &kc->b.d, kc->b.image, k->desc.kernarg_segment_size,
                      dispatch_header(l->flags), deadline_ns, out_completion, out_packet_id);
}

struct hsad_prepared_launch {
  hsad_queue_t *queue;
  hsad_aql_dispatch_t d; /* body without kernarg address and completion signal */
  uint16_t header;
  uint32_t ksize;
  _Alignas(64) uint8_t image[]; /* ksize bytes of kernarg segment */
};

hsad_status_t hsad_launch_prepare(hsad_queue_t *q, const hsad_device_kernel_t *k,
                                  const hsad_launch_t *l, hsad_prepared_launch_t **out) {
  if (!q || !k || !l || !out)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_launch_prepare: NULL queue, kernel, launch "
                     "or out_prepared");
  if (q->ops)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_launch_prepare: queue is a %s stream: prepared "
                     "launches are AMD only for now (use hsad_kernel_dispatch)", q->ops->name);
  if (atomic_load_explicit(&q->error, memory_order_relaxed)) return dq_queue_fail(q);
  hsad_status_t s = launch_build(q, k, l); /* every check; fills this thread's image */
  if (s) return s;
  uint32_t ksize = k->desc.kernarg_segment_size;
  hsad_prepared_launch_t *p = aligned_alloc(64, (sizeof *p + ksize + 63) & ~(size_t)63);
  if (!p)
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_launch_prepare: kernel %s: %zu bytes",
                     k->desc.name, sizeof *p + ksize);
  p->queue = q;
  p->d = dq_kc.b.d;
  p->header = dispatch_header(l->flags);
  p->ksize = ksize;
  memcpy(p->image, dq_kc.b.image, ksize);
  *out = p;
  return HSAD_OK;
}

hsad_status_t hsad_prepared_dispatch(const hsad_prepared_launch_t *p, uint64_t deadline_ns,
                                     hsad_completion_t *out_completion,
                                     uint64_t *out_packet_id) {
  if (DQ_UNLIKELY(!p))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_prepared_dispatch: NULL prepared launch");
  hsad_queue_t *q = p->queue;
  if (DQ_UNLIKELY(dq_gate(q))) {
    hsad_status_t s = dq_gate_fail(q, "hsad_prepared_dispatch");
    if (s) return s;
  }
  return submit_built(q, &p->d, p->image, p->ksize, p->header, deadline_ns, out_completion,
                      out_packet_id);
}

void hsad_launch_destroy(hsad_prepared_launch_t *p) { free(p); }

/* Slots of batch entry i: its dispatch and its padding (hsad_queue.h step 4). */
static inline uint32_t batch_span(const hsad_queue_t *q, const hsad_dispatch_desc_t *it) {
  return dq_span(q, it->kernel->desc.kernarg_segment_size);
}

/* A batch on another backend's queue: its dispatches one by one, the completion on the last
 * (a stream runs them in order). Entries are not all checked before the first runs. */
static hsad_status_t batch_foreign(hsad_queue_t *q, const hsad_dispatch_desc_t *items,
                                   uint32_t count, uint64_t deadline_ns,
                                   hsad_completion_t *out_completion, uint64_t *out_first) {
  for (uint32_t i = 0; i < count; i++) {
    uint64_t id = 0;
    hsad_status_t s = q->ops->kernel_dispatch(q, items[i].kernel, &items[i].launch, deadline_ns,
                                              i == count - 1 ? out_completion : NULL, &id);
    if (s) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", hsad_last_error());
      return hsad_fail(s, "batch entry %u: %s", i, msg);
    }
    if (i == 0 && out_first) *out_first = id;
  }
  return HSAD_OK;
}

hsad_status_t hsad_queue_dispatch_batch(hsad_queue_t *q, const hsad_dispatch_desc_t *items,
                                        uint32_t count, uint64_t deadline_ns,
                                        hsad_completion_t *out_completion,
                                        uint64_t *out_first_packet_id) {
  if (!q || !items || !count)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_dispatch_batch: NULL queue/items or "
                     "count 0");
  if (q->ops) return batch_foreign(q, items, count, deadline_ns, out_completion, out_first_packet_id);
  if (dq_gate(q)) {
    hsad_status_t s = dq_gate_fail(q, "hsad_queue_dispatch_batch");
    if (s) return s;
  }
  if (count > q->size)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "batch of %u packets exceeds the queue's %u "
                     "slots", count, q->size);
  dq_built_t *const bp = &dq_scratch;
  /* Pass 1: validate everything before anything is reserved; count the slots. */
  uint32_t slots = 0;
  for (uint32_t i = 0; i < count; i++) {
    hsad_status_t s = items[i].kernel ? dq_launch_check(q, items[i].kernel, &items[i].launch, bp)
                                      : hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "NULL kernel");
    if (s) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", hsad_last_error());
      return hsad_fail(s, "batch entry %u: %s", i, msg);
    }
    slots += batch_span(q, &items[i]);
  }
  /* The completion rides on the last dispatch when it has the BARRIER bit, no timestamp
   * signal and no padding; else on the last entry's last padding packet; else on a
   * barrier-AND after it. */
  uint32_t last_m = batch_span(q, &items[count - 1]);
  bool own = out_completion && last_m == 1 &&
             !(items[count - 1].launch.flags & HSAD_LAUNCH_NO_BARRIER) && !q->ts_signals;
  bool extra = out_completion && last_m == 1 && !own;
  uint32_t n = slots + extra;
  if (n > q->size)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "batch of %u packets (%u dispatches + %u "
                     "kernarg padding + %u completion barrier) exceeds the queue's %u slots", n,
                     count, slots - count, (uint32_t)extra, q->size);
  uint64_t first = 0, k = 0;
  dq_mon_mark_t mark;
  if (DQ_UNLIKELY(q->monitor)) dq_monitor_begin(q, &mark);
  hsad_status_t s = out_completion ? dq_reserve_epoch(q, n, true, deadline_ns, &first, &k)
                                   : dq_reserve(q, n, deadline_ns, &first);
  if (s) return s;
  /* Pass 2: build kernargs and fill every dispatch body; headers stay INVALID. The inputs were
   * validated in pass 1 and are the caller's const data: the build cannot fail now. */
  for (uint32_t i = 0, at = 0; i < count; at += batch_span(q, &items[i]), i++) {
    uint64_t id = first + at;
    (void)dq_launch_check(q, items[i].kernel, &items[i].launch, bp);
    uint64_t sig = own && i == count - 1 ? q->epoch_signal.handle
                   : q->ts_signals       ? dq_ts_arm(q, id)
                                         : 0;
    (void)fill_dispatch(q, id, &bp->d, bp->image, items[i].kernel->desc.kernarg_segment_size,
                        dispatch_header(items[i].launch.flags), sig);
  }
  /* Pass 3: publish last-to-first (each entry's padding before it; the last entry's run ends
   * with the epoch packet unless the dispatch carries it), so the first packet becomes valid
   * last. */
  for (uint32_t i = count, at = slots; i-- > 0;) {
    uint32_t m = batch_span(q, &items[i]);
    at -= m;
    bool last = i == count - 1;
    dq_publish_padding(q, first + at, m + (last && extra), last && out_completion && !own);
    uint32_t dims = items[i].launch.dims;
    hsad_aql_publish(dq_slot(q, first + at),
                     dispatch_header(items[i].launch.flags) |
                         (dims << (16 + HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS)));
  }
  dq_ring_doorbell(q, first + n - 1);
  /* Monitoring on: one record per entry, after the doorbell (pass 4 rebuilds each body; the
   * ring slots may already be reused) */
  if (DQ_UNLIKELY(q->monitor)) {
    dq_monitor_close(&mark); /* one submit interval for the whole batch */
    for (uint32_t i = 0, at = 0; i < count; at += batch_span(q, &items[i]), i++) {
      (void)dq_launch_check(q, items[i].kernel, &items[i].launch, bp);
      dq_monitor_end(q, &bp->d, first + at, &mark);
    }
  }
  if (out_completion)
    *out_completion = (hsad_completion_t){.queue = q, .epoch = k, .packet_id = first + n - 1};
  if (out_first_packet_id) *out_first_packet_id = first;
  return HSAD_OK;
}
