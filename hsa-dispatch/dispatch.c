/* dispatch.c - the dispatch path, top to bottom (hsad_queue.h steps 2-8): hsad_kernel_dispatch
 * and hsad_prepared_dispatch down to the ring. The launch cache is launch_cache.h, the checks
 * launch_check.c, batches batch.c, the capture gate gate.c, the ring aql_ring.h (its submit
 * helpers queue_submit.h), completions timeline.c. */
#include <stdlib.h>
#include <string.h>

#include "hsa-dispatch/launch_cache.h"
#include "hsa-dispatch/queue_submit.h"

/* A dispatch with a completion, or one whose kernarg segment spans m > 1 blocks (padding
 * after it, hsad_queue.h step 4). The epoch packet is the dispatch itself when it has the
 * BARRIER bit, no timestamp signal and no padding; else the last padding packet; else a
 * barrier-AND after the dispatch. */
static __attribute__((noinline)) hsad_status_t
submit_slow(hsad_queue_t *q, const hsad_aql_dispatch_t *d, const uint8_t *image, uint32_t ksize,
            uint16_t header, uint64_t deadline_ns, hsad_completion_t *out_completion,
            uint64_t *out_packet_id) {
  uint32_t span = dq_span(q, ksize);
  bool wants_completion = out_completion != NULL;
  bool carries_epoch = wants_completion && span == 1 &&
                       (header & (1u << HSA_PACKET_HEADER_BARRIER)) && !q->ts_signals;
  uint32_t slots = span + (wants_completion && span == 1 && !carries_epoch);
  uint64_t id, epoch = 0;
  hsad_status_t s = wants_completion
                        ? dq_reserve_epoch(q, slots, true, deadline_ns, &id, &epoch)
                        : dq_reserve(q, slots, deadline_ns, &id);
  if (DQ_UNLIKELY(s)) return s;
  uint64_t sig = carries_epoch ? q->epoch_signal.handle : q->ts_signals ? dq_ts_arm(q, id) : 0;
  uint32_t word = dq_fill_dispatch(q, id, d, image, ksize, header, sig);
  dq_publish_padding(q, id, slots, wants_completion && !carries_epoch);
  hsad_aql_publish(dq_slot(q, id), word); /* the first packet's header last */
  dq_ring_commit(&q->ring, id, slots);
  if (wants_completion)
    *out_completion = (hsad_completion_t){.queue = q, .epoch = epoch, .packet_id = id};
  if (out_packet_id) *out_packet_id = id;
  return HSAD_OK;
}

/* Steps 3-7 of a dispatch whose body and kernarg image are built: the hot path shared by
 * hsad_kernel_dispatch and hsad_prepared_dispatch. */
static inline __attribute__((always_inline)) hsad_status_t
submit_plain(hsad_queue_t *q, const hsad_aql_dispatch_t *d, const uint8_t *image, uint32_t ksize,
             uint16_t header, uint64_t deadline_ns, hsad_completion_t *out_completion,
             uint64_t *out_packet_id) {
  if (DQ_UNLIKELY((out_completion != NULL) | (ksize > q->ring.kernarg_block)))
    return submit_slow(q, d, image, ksize, header, deadline_ns, out_completion, out_packet_id);
  uint64_t id;
  hsad_status_t s = dq_reserve(q, 1, deadline_ns, &id);
  if (DQ_UNLIKELY(s)) return s;
  /* Slot `id` and its kernarg block are ours: the packet that used them before (id - size)
   * completed, since id - size < retired. */
  uint64_t sig = DQ_UNLIKELY(q->ts_signals != NULL) ? dq_ts_arm(q, id) : 0;
  hsad_aql_publish(dq_slot(q, id), dq_fill_dispatch(q, id, d, image, ksize, header, sig));
  dq_ring_doorbell(&q->ring, id);
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

/* A dispatch with a NULL argument or that found the gate closed: the sticky error, else the
 * capture's recorder. */
static __attribute__((noinline, cold)) hsad_status_t
dispatch_gated(hsad_queue_t *q, const hsad_device_kernel_t *k, const hsad_launch_t *l,
               uint64_t deadline_ns, hsad_completion_t *out_completion, uint64_t *out_packet_id) {
  if (!q || !k || !l) /* cold: the gate sent a NULL argument here */
    return HSAD_NULL_ARGS("hsad_kernel_dispatch", {q, "queue"}, {k, "kernel"}, {l, "launch"});
  /* a queue of another backend: its gate keeps HSAD_GATE_BACKEND, so it always comes here */
  if (q->ops) return q->ops->kernel_dispatch(q, k, l, deadline_ns, out_completion, out_packet_id);
  if (atomic_load_explicit(&q->error, memory_order_acquire)) return dq_queue_fail(q);
  const hsad_submit_capture_ops_t *ops = dq_capture_ops(q);
  if (ops) return ops->kernel(q, k, l, deadline_ns, out_completion, out_packet_id);
  /* the capture ended since the gate was read: an ordinary dispatch */
  return hsad_kernel_dispatch(q, k, l, deadline_ns, out_completion, out_packet_id);
}

/* Everything but the hot path's case: a closed gate (the sticky error, a capture, a queue of
 * another backend: dispatch_gated), a cache miss, a completion, a monitored or profiling
 * queue, a segment over one kernarg block, a full ring or a lost reservation race. */
static __attribute__((noinline)) hsad_status_t
dispatch_general(hsad_queue_t *q, const hsad_device_kernel_t *k, const hsad_launch_t *l,
                 uint64_t deadline_ns, hsad_completion_t *out_completion, uint64_t *out_packet_id) {
  if (DQ_UNLIKELY(dq_gate(q)))
    return dispatch_gated(q, k, l, deadline_ns, out_completion, out_packet_id);
  const dq_built_t *built = dq_launch_cache_lookup(q, k, l);
  /* a hit on an entry made before hsad_kernel_dispatch published its cases (a prepared launch
   * the process's first) is made again, with its case, so the next launch can be a hot hit:
   * every caller of this function published them (or reached it past an entry's case) */
  if (DQ_UNLIKELY(built == NULL) || DQ_UNLIKELY(dq_launch_cache_mine->hot_case == NULL)) {
    hsad_status_t s = dq_launch_cache_fill(q, k, l, &built);
    if (DQ_UNLIKELY(s)) return s;
  }
  return submit_built(q, &built->d, built->image, k->desc.kernarg_segment_size,
                      dq_dispatch_header(l->flags), deadline_ns, out_completion, out_packet_id);
}

/* The end of a hot-path submit whose slot `id` is reserved and whose kernarg block `ka` is
 * written: the cached packet's bytes 4..63 with the block's address, the header word last,
 * the packet id, the doorbell. */
static inline __attribute__((always_inline)) hsad_status_t
dispatch_publish(hsad_queue_t *q, uint64_t *out_packet_id, const dq_launch_cache_t *c,
                 uint64_t id, uint8_t *slot, uint8_t *ka) {
  memcpy(slot + 4, c->packet + 4, 4); /* 4..39 as 4 + 32 bytes: aligned moves from slot + 8 */
  memcpy(slot + 8, c->packet + 8, 32);
  memcpy(slot + 40, &ka, 8);
  memcpy(slot + 48, c->packet + 48, 16);
  hsad_aql_publish(slot, c->hot_word);
  if (out_packet_id) *out_packet_id = id;
  return (hsad_status_t)dq_ring_doorbell_fast(&q->ring, id);
}

/* The hot path of a value-keyed entry (launch_cache.h, sig 0): its arguments compared, one try
 * at the reservation (else dispatch_general, which waits), the image's declared bytes
 * (k->kernarg_copy) into the slot's kernarg block, dispatch_publish. */
static __attribute__((noinline)) hsad_status_t
dispatch_keyed(hsad_queue_t *q, const hsad_device_kernel_t *k, const hsad_launch_t *l,
               uint64_t deadline_ns, uint64_t *out_packet_id, const dq_launch_cache_t *c) {
  uint64_t id;
  if (DQ_UNLIKELY(!dq_launch_cache_args_same(c, l, c->fast_count)) ||
      DQ_UNLIKELY(!dq_ring_try_reserve_one(&q->ring, &id)))
    return dispatch_general(q, k, l, deadline_ns, NULL, out_packet_id);
  /* slot `id` and its kernarg block are ours: their last packet (id - size) completed */
  uint8_t *ka = dq_ring_kernarg(&q->ring, id);
  dq_copy16(ka, c->built.image, c->copy16);
  q->ring.kernarg_slots[id & q->ring.mask].stamp = c->stamp; /* the whole image (aql_ring.h) */
  return dispatch_publish(q, out_packet_id, c, id, dq_ring_slot(&q->ring, id), ka);
}

const void *const *dq_hot_cases;

/* The signature entries' labels in hsad_kernel_dispatch, in DQ_SIG_INDEX order (index + 1). */
#define DQ_SIG_LABEL_(n, m) &&sig_##n##_##m
#define DQ_SIG_LABELS2_(n, m0, m1) DQ_SIG_LABEL_(n, m0), DQ_SIG_LABEL_(n, m1)
/* A signature entry's case: its arguments' checks and values (dq_launch_cache_put_sig with
 * constant n and val4), then the submit; an argument that differs takes the general path. */
#define DQ_HOT_SIG_(n, m)                                                                     \
  sig_##n##_##m : if (DQ_UNLIKELY(!dq_launch_cache_put_sig(c, x, n, m))) goto general_hit;    \
  goto submit;

/* The hot path (hsad_queue.h, "The argument path"): a launch that hits the thread's entry
 * (the plan checked once: kernel and queue as one hot key, DQ_HOT_KEY, which is 0 for a
 * queue whose gate is closed or that takes the general path; argument count and flags;
 * geometry; then a signature entry's argument tags, types and sizes with its values written
 * into the image, through its case's address kept in the entry; a value-keyed entry's argument
 * values are dispatch_keyed's), no completion, a free slot at the first try; then the image
 * into the slot's kernarg block (its first 32 bytes when the block holds the entry's image:
 * the slot's kernarg stamp, aql_ring.h; else the declared bytes, k->kernarg_copy) and
 * dispatch_publish. Anything else takes dispatch_general, which checks the gate, waits, checks
 * and reports. Compiled for SSE4.1 (DQ_HOT_TARGET: hsad_runtime_open refuses a CPU without). */
__attribute__((optimize("no-crossjumping"))) DQ_HOT_TARGET hsad_status_t
hsad_kernel_dispatch(hsad_queue_t *q, const hsad_device_kernel_t *k, const hsad_launch_t *l,
                     uint64_t deadline_ns, hsad_completion_t *out_completion,
                     uint64_t *out_packet_id) {
  /* NULL arguments: the cold path; the sticky error, a capture or a queue of another backend
   * make q->hot_uid 0, which no entry has (dq_launch_cache_hot): dispatch_general's gate */
  if (DQ_UNLIKELY(!q)) goto gated;
  if (DQ_UNLIKELY(!k)) goto gated;
  if (DQ_UNLIKELY(!l)) goto gated;
  if (DQ_UNLIKELY(out_completion != NULL)) goto general_completion;
  dq_launch_cache_t *c = dq_launch_cache_mine; /* never NULL (launch_cache.h) */
  if (DQ_UNLIKELY(!dq_launch_cache_hot(c, q, k, l))) goto general;
  static const void *const sig_case[32] = {
      &&keyed,                 DQ_SIG_LABEL_(0, 0),     DQ_SIG_LABELS2_(1, 0, 1),
      DQ_SIG_LABELS2_(2, 0, 1), DQ_SIG_LABELS2_(2, 2, 3), DQ_SIG_LABELS2_(3, 0, 1),
      DQ_SIG_LABELS2_(3, 2, 3), DQ_SIG_LABELS2_(3, 4, 5), DQ_SIG_LABELS2_(3, 6, 7),
      DQ_SIG_LABELS2_(4, 0, 1), DQ_SIG_LABELS2_(4, 2, 3), DQ_SIG_LABELS2_(4, 4, 5),
      DQ_SIG_LABELS2_(4, 6, 7), DQ_SIG_LABELS2_(4, 8, 9), DQ_SIG_LABELS2_(4, 10, 11),
      DQ_SIG_LABELS2_(4, 12, 13), DQ_SIG_LABELS2_(4, 14, 15)};
  const hsad_karg_t *x = l->args;
  goto *c->hot_case; /* sig_case[c->sig], set when the entry was made (launch_cache.h) */
  DQ_HOT_SIG_(0, 0)
  DQ_HOT_SIG_(1, 0) DQ_HOT_SIG_(1, 1)
  DQ_HOT_SIG_(2, 0) DQ_HOT_SIG_(2, 1) DQ_HOT_SIG_(2, 2) DQ_HOT_SIG_(2, 3)
  DQ_HOT_SIG_(3, 0) DQ_HOT_SIG_(3, 1) DQ_HOT_SIG_(3, 2) DQ_HOT_SIG_(3, 3)
  DQ_HOT_SIG_(3, 4) DQ_HOT_SIG_(3, 5) DQ_HOT_SIG_(3, 6) DQ_HOT_SIG_(3, 7)
  DQ_HOT_SIG_(4, 0) DQ_HOT_SIG_(4, 1) DQ_HOT_SIG_(4, 2) DQ_HOT_SIG_(4, 3)
  DQ_HOT_SIG_(4, 4) DQ_HOT_SIG_(4, 5) DQ_HOT_SIG_(4, 6) DQ_HOT_SIG_(4, 7)
  DQ_HOT_SIG_(4, 8) DQ_HOT_SIG_(4, 9) DQ_HOT_SIG_(4, 10) DQ_HOT_SIG_(4, 11)
  DQ_HOT_SIG_(4, 12) DQ_HOT_SIG_(4, 13) DQ_HOT_SIG_(4, 14) DQ_HOT_SIG_(4, 15)
keyed:
  return dispatch_keyed(q, c->kernel, l, deadline_ns, out_packet_id, c); /* k: past the key */
gated:
  return dispatch_gated(q, k, l, deadline_ns, out_completion, out_packet_id);
general_completion: /* a miss may make an entry: its case's address from the table (written
                      once: not a store per miss into a line every thread reads) */
  if (DQ_UNLIKELY(!__atomic_load_n(&dq_hot_cases, __ATOMIC_RELAXED)))
    __atomic_store_n(&dq_hot_cases, sig_case, __ATOMIC_RELAXED);
  return dispatch_general(q, k, l, deadline_ns, out_completion, out_packet_id);
general:
  if (DQ_UNLIKELY(!__atomic_load_n(&dq_hot_cases, __ATOMIC_RELAXED)))
    __atomic_store_n(&dq_hot_cases, sig_case, __ATOMIC_RELAXED);
  return dispatch_general(q, k, l, deadline_ns, NULL, out_packet_id);
general_hit: /* past the key: the entry's kernel is k (uids are unique), k itself not kept */
  return dispatch_general(q, c->kernel, l, deadline_ns, NULL, out_packet_id);
submit:;
  uint64_t id;
  if (DQ_UNLIKELY(!dq_ring_try_reserve_one(&q->ring, &id))) goto general_hit;
  /* slot `id` and its kernarg block are ours: their last packet (id - size) completed; the
   * block holds this entry's image when the slot's stamp is the entry's (aql_ring.h): then
   * only the explicit arguments are copied */
  uint64_t at = (id & q->ring.mask) * sizeof(dq_ring_kernarg_slot_t); /* 16: 1/4 of a slot */
  dq_ring_kernarg_slot_t *ks = (dq_ring_kernarg_slot_t *)((uint8_t *)q->ring.kernarg_slots + at);
  uint8_t *ka = ks->block;
  if (DQ_LIKELY(ks->stamp == c->stamp)) {
    dq_copy16(ka, c->built.image, DQ_RING_STAMP_BYTES / 16);
  } else {
    dq_copy16(ka, c->built.image, c->copy16);
    ks->stamp = c->stamp;
  }
  return dispatch_publish(q, out_packet_id, c, id, q->ring.packets + at * 4, ka);
}
#undef DQ_HOT_SIG_
#undef DQ_SIG_LABELS2_
#undef DQ_SIG_LABEL_

struct hsad_prepared_launch {
  hsad_queue_t *queue;
  const hsad_device_kernel_t *kernel; /* held (hsad_submit_kernel_hold): its program outlives it */
  uint64_t hold;                   /* the hold's token */
  uint32_t word;           /* the packet's first word: header | setup << 16 */
  uint16_t header;
  uint32_t kernarg_bytes;  /* the resident segment's size (the kernel's kernarg_segment_size) */
  void *kernarg;           /* the resident segment, written once (NULL: no kernarg segment) */
  hsad_aql_dispatch_t d;   /* body; kernarg_address = kernarg, completion signal 0 */
  struct hsad_prepared_launch *retiring_next; /* destroyed, on queue->resident_retiring */
  uint64_t retiring_bound; /* the write index at destroy: packets below it may read kernarg */
  _Alignas(64) uint8_t packet[64]; /* bytes 4..63 of its packet without a completion */
};

hsad_status_t hsad_launch_prepare(hsad_queue_t *q, const hsad_device_kernel_t *k,
                                  const hsad_launch_t *l, hsad_prepared_launch_t **out) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_launch_prepare", {q, "queue"}, {k, "kernel"},
                                   {l, "launch"}, {out, "out_prepared"});
  if (ns) return ns;
  if (q->ops)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_launch_prepare: queue is a %s stream: prepared "
                     "launches are AMD only for now (use hsad_kernel_dispatch)", q->ops->name);
  if (atomic_load_explicit(&q->error, memory_order_relaxed)) return dq_queue_fail(q);
  dq_resident_reclaim(q, false);
  const dq_built_t *built;
  hsad_status_t s = dq_launch_cache_fill(q, k, l, &built); /* every check; the thread's image */
  if (s) return s;
  uint32_t ksize = k->desc.kernarg_segment_size;
  hsad_prepared_launch_t *p = aligned_alloc(64, (sizeof *p + 63) & ~(size_t)63);
  if (!p)
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_launch_prepare: kernel %s: %zu bytes",
                     k->desc.name, sizeof *p);
  memset(p, 0, sizeof *p);
  if (ksize) {
    s = hsad_submit_kernarg_alloc(q->device, ksize, &p->kernarg);
    if (s) {
      free(p);
      return s;
    }
    memcpy(p->kernarg, built->image, ksize);
  }
  p->queue = q;
  p->kernarg_bytes = ksize;
  p->d = built->d;
  p->d.kernarg_address = p->kernarg;
  p->header = dq_dispatch_header(l->flags);
  p->word = hsad_aql_dispatch_fill((hsa_kernel_dispatch_packet_t *)p->packet, &p->d, p->header);
  p->kernel = k;
  p->hold = hsad_submit_kernel_hold(k);
  *out = p;
  return HSAD_OK;
}

/* A prepared submit that is not the hot path's case: the gate, a completion, a monitored or
 * profiling queue, a full ring or a lost race. Its packet reads the resident segment too (no
 * copy: ksize 0, so it takes one slot whatever the segment's size). */
static __attribute__((noinline)) hsad_status_t
prepared_general(const hsad_prepared_launch_t *p, uint64_t deadline_ns,
                 hsad_completion_t *out_completion, uint64_t *out_packet_id) {
  hsad_queue_t *q = p->queue;
  if (DQ_UNLIKELY(dq_gate(q))) {
    hsad_status_t s = dq_gate_fail(q, "hsad_prepared_dispatch");
    if (s) return s;
  }
  return submit_built(q, &p->d, NULL, 0, p->header, deadline_ns, out_completion, out_packet_id);
}

hsad_status_t hsad_prepared_dispatch(const hsad_prepared_launch_t *p, uint64_t deadline_ns,
                                     hsad_completion_t *out_completion,
                                     uint64_t *out_packet_id) {
  if (DQ_UNLIKELY(!p))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_prepared_dispatch: NULL prepared launch");
  hsad_queue_t *q = p->queue;
  uint64_t id;
  /* hot_uid 0: the gate closed (error, capture) or a general queue */
  if (DQ_UNLIKELY(((uintptr_t)out_completion |
                   (atomic_load_explicit(&q->hot_uid, memory_order_relaxed) == 0)) != 0) ||
      DQ_UNLIKELY(!dq_ring_try_reserve_one(&q->ring, &id)))
    return prepared_general(p, deadline_ns, out_completion, out_packet_id);
  uint8_t *slot = dq_ring_slot(&q->ring, id);
  memcpy(slot + 4, p->packet + 4, 60); /* the kernarg address is the resident segment's */
  if (DQ_UNLIKELY(p->kernarg == NULL)) { /* no segment: the slot's block, as for a dispatch */
    uint8_t *ka = dq_ring_kernarg(&q->ring, id);
    memcpy(slot + 40, &ka, 8);
  }
  hsad_aql_publish(slot, p->word);
  if (out_packet_id) *out_packet_id = id;
  return (hsad_status_t)dq_ring_doorbell_fast(&q->ring, id);
}

void dq_resident_reclaim(hsad_queue_t *q, bool all) {
  /* read without the lock (relaxed): a hint, rechecked under it */
  if (!__atomic_load_n(&q->resident_retiring, __ATOMIC_RELAXED)) return;
  uint64_t retired = all ? UINT64_MAX : dq_retire(q);
  hsad_prepared_launch_t *done = NULL;
  pthread_mutex_lock(&q->retire_lock);
  for (hsad_prepared_launch_t **at = &q->resident_retiring; *at;) {
    hsad_prepared_launch_t *p = *at;
    if (p->retiring_bound <= retired) {
      __atomic_store_n(at, p->retiring_next, __ATOMIC_RELAXED);
      p->retiring_next = done;
      done = p;
    } else {
      at = &p->retiring_next;
    }
  }
  pthread_mutex_unlock(&q->retire_lock);
  while (done) {
    hsad_prepared_launch_t *p = done;
    done = p->retiring_next;
    hsad_submit_kernarg_free(q->device, p->kernarg, p->kernarg_bytes);
    free(p);
  }
}

void dq_resident_drop(hsad_queue_t *q) {
  for (hsad_prepared_launch_t *p = q->resident_retiring, *next; p; p = next) {
    next = p->retiring_next;
    free(p);
  }
  q->resident_retiring = NULL;
}

void hsad_launch_destroy(hsad_prepared_launch_t *p) {
  if (!p) return;
  hsad_submit_kernel_release(p->kernel, p->hold);
  hsad_queue_t *q = p->queue;
  /* the runtime's close released kernarg memory (hsa_shut_down) and the queue's packets (a
   * queue it closed stays CLOSED, also once the runtime is opened again) */
  if (!p->kernarg || !dq_is_open() ||
      atomic_load_explicit(&q->error, memory_order_acquire) == HSAD_ERR_CLOSED) {
    free(p);
    return;
  }
  /* packets already submitted may still read the segment: it is freed once every packet
   * reserved so far completed (dq_resident_reclaim; at the latest with the queue) */
  p->retiring_bound = atomic_load_explicit(q->ring.write_index, memory_order_acquire);
  pthread_mutex_lock(&q->retire_lock);
  p->retiring_next = q->resident_retiring;
  __atomic_store_n(&q->resident_retiring, p, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&q->retire_lock);
  dq_resident_reclaim(q, false);
}
