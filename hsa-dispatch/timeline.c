/* timeline.c - a queue's completion timeline: the epoch signal, reclaim (`retired`), epoch
 * packets, barriers, flush and every wait. The model is documented in hsad_queue.h
 * ("Timeline"); the ring in aql_ring.h, the reservations that wait in queue_submit.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hsa-dispatch/hsad_submit.h"
#include "hsa-dispatch/queue_submit.h"

/* Epoch k is reached when the epoch signal's value is < threshold(k). */
static inline int64_t epoch_threshold(uint64_t k) { return HSAD_EPOCH_BASE - (int64_t)k + 1; }

/* ---- set-up ------------------------------------------------------------------------------- */

hsad_status_t dq_timeline_init(hsad_queue_t *q) {
  hsa_status_t st = hsad_rocr.hsa_signal_create(HSAD_EPOCH_BASE, 0, NULL, &q->epoch_signal);
  if (st != HSA_STATUS_SUCCESS)
    return dq_hsa_fail(st, "hsa_signal_create (epoch signal of a queue on device %u)",
                       q->device->info.index);
  q->epoch_value = &((amd_signal_t *)(uintptr_t)q->epoch_signal.handle)->value;
  q->epochs = calloc(2 * (size_t)q->ring.size, sizeof *q->epochs);
  if (!q->epochs) {
    dq_timeline_fini(q);
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "epoch log of %u entries", 2 * q->ring.size);
  }
  pthread_mutex_init(&q->retire_lock, NULL);
  if (!q->profiling) return HSAD_OK;
  q->ts_signals = calloc(q->ring.size, sizeof *q->ts_signals);
  q->ts_ids = calloc(q->ring.size, sizeof *q->ts_ids);
  if (!q->ts_signals || !q->ts_ids) {
    dq_timeline_fini(q);
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "profiling signals for %u slots", q->ring.size);
  }
  for (uint32_t i = 0; i < q->ring.size; i++) {
    /* GPU-only: no KFD event per slot (a finite resource); nobody blocks on these. */
    st = hsad_rocr.hsa_amd_signal_create(0, 0, NULL, HSA_AMD_SIGNAL_AMD_GPU_ONLY,
                                         &q->ts_signals[i]);
    if (st != HSA_STATUS_SUCCESS) {
      q->ts_signals[i].handle = 0;
      dq_timeline_fini(q);
      return dq_hsa_fail(st, "hsa_amd_signal_create (profiling signal %u of %u)", i, q->ring.size);
    }
    atomic_init(&q->ts_ids[i], UINT64_MAX);
  }
  return HSAD_OK;
}

void dq_timeline_fini(hsad_queue_t *q) {
  if (q->epoch_signal.handle) hsad_rocr.hsa_signal_destroy(q->epoch_signal);
  q->epoch_signal.handle = 0;
  for (uint32_t i = 0; q->ts_signals && i < q->ring.size; i++)
    if (q->ts_signals[i].handle) hsad_rocr.hsa_signal_destroy(q->ts_signals[i]);
  free(q->ts_signals);
  free(q->ts_ids);
  free(q->epochs);
  q->ts_signals = NULL;
  q->ts_ids = NULL;
  q->epochs = NULL;
}

void dq_timeline_fault(hsad_queue_t *q) {
  int64_t v = __atomic_load_n(q->epoch_value, __ATOMIC_ACQUIRE);
  uint64_t reached = v > 0 && v <= HSAD_EPOCH_BASE ? (uint64_t)(HSAD_EPOCH_BASE - v) : 0;
  atomic_store_explicit(&q->error_epoch, reached, memory_order_relaxed);
}

/* ---- reclaim ------------------------------------------------------------------------------ */

uint64_t dq_retire(hsad_queue_t *q) {
  uint64_t have = atomic_load_explicit(&q->retired_epoch, memory_order_acquire);
  if (DQ_UNLIKELY(atomic_load_explicit(&q->error, memory_order_acquire)))
    return atomic_load_explicit(&q->ring.retired, memory_order_acquire);
  int64_t v = __atomic_load_n(q->epoch_value, __ATOMIC_ACQUIRE);
  uint64_t c = (uint64_t)(HSAD_EPOCH_BASE - v);
  if (v <= 0 || c <= have) return atomic_load_explicit(&q->ring.retired, memory_order_acquire);
  pthread_mutex_lock(&q->retire_lock);
  if (c > atomic_load_explicit(&q->retired_epoch, memory_order_relaxed)) {
    dq_epoch_entry_t *e = &q->epochs[c % (2 * (uint64_t)q->ring.size)];
    uint64_t k1 = atomic_load_explicit(&e->k, memory_order_acquire);
    uint64_t id = atomic_load_explicit(&e->id, memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    uint64_t k2 = atomic_load_explicit(&e->k, memory_order_relaxed);
    /* The issue rule (k - retired_epoch < 2 x size) keeps entry c intact until it is read;
     * the seqlock check is the proof. */
    if (k1 == c && k2 == c) {
      dq_ring_retire(&q->ring, id + 1);
      atomic_store_explicit(&q->retired_epoch, c, memory_order_release);
    }
  }
  pthread_mutex_unlock(&q->retire_lock);
  return atomic_load_explicit(&q->ring.retired, memory_order_acquire);
}

/* ---- epoch packets ------------------------------------------------------------------------ */

static inline void epoch_lock(hsad_queue_t *q) {
  uint32_t spins = 0;
  while (atomic_exchange_explicit(&q->epoch_lock, 1, memory_order_acquire)) {
    while (atomic_load_explicit(&q->epoch_lock, memory_order_relaxed)) {
      if (++spins < 64) dq_cpu_relax();
      else sched_yield(); /* the holder may have been preempted (2-core hosts) */
    }
  }
}

static inline void epoch_unlock(hsad_queue_t *q) {
  atomic_store_explicit(&q->epoch_lock, 0, memory_order_release);
}

/* Under the epoch lock: reserve n ids (no waiting) and number `count` epoch packets among
 * them as the queue's next epochs (the last one is the run's last packet, id + n - 1; the
 * others are the caller's, in ring order). Only the last one enters the epoch log (epoch ->
 * packet id, which reclaim reads): reclaim advances at run ends, and a run reserves in O(1)
 * whatever its number of epoch points. */
static bool try_reserve_epochs(hsad_queue_t *q, uint32_t n, bool kernarg, uint32_t count,
                               uint64_t *out_id, uint64_t *out_epoch) {
  uint64_t k = atomic_load_explicit(&q->epoch_issued, memory_order_relaxed) + 1;
  uint64_t last = k + count - 1;
  /* the epoch log holds 2 x size entries; never overwrite one not yet consumed */
  if (last - atomic_load_explicit(&q->retired_epoch, memory_order_acquire) >= 2 * (uint64_t)q->ring.size)
    return false;
  uint64_t id;
  if (!dq_try_reserve(q, n, kernarg, &id)) return false;
  dq_epoch_entry_t *e = &q->epochs[last & (2 * (uint64_t)q->ring.size - 1)]; /* size: a power of 2 */
  atomic_store_explicit(&e->k, 0, memory_order_relaxed);
  atomic_thread_fence(memory_order_release);
  atomic_store_explicit(&e->id, id + n - 1, memory_order_relaxed);
  atomic_store_explicit(&e->k, last, memory_order_release);
  atomic_store_explicit(&q->epoch_issued, last, memory_order_release);
  atomic_store_explicit(&q->epoch_end, id + n, memory_order_release);
  *out_id = id;
  *out_epoch = k;
  return true;
}

static bool try_reserve_epoch(hsad_queue_t *q, uint32_t n, bool kernarg, uint64_t *out_id,
                              uint64_t *out_epoch) {
  return try_reserve_epochs(q, n, kernarg, 1, out_id, out_epoch);
}

hsad_status_t dq_reserve_epochs(hsad_queue_t *q, uint32_t n, uint32_t count, uint64_t deadline,
                                uint64_t *out_id, uint64_t *out_first_epoch) {
  uint32_t spins = 0;
  for (;;) {
    epoch_lock(q);
    bool ok = try_reserve_epochs(q, n, true, count, out_id, out_first_epoch);
    epoch_unlock(q);
    if (DQ_LIKELY(ok)) return HSAD_OK;
    hsad_status_t s = dq_reserve_wait(q, n, true, deadline, &spins);
    if (s) return s;
  }
}

hsad_status_t dq_reserve_epoch(hsad_queue_t *q, uint32_t n, bool kernarg, uint64_t deadline,
                               uint64_t *out_id, uint64_t *out_epoch) {
  uint32_t spins = 0;
  for (;;) {
    epoch_lock(q);
    bool ok = try_reserve_epoch(q, n, kernarg, out_id, out_epoch);
    epoch_unlock(q);
    if (DQ_LIKELY(ok)) return HSAD_OK;
    hsad_status_t s = dq_reserve_wait(q, n, kernarg, deadline, &spins);
    if (s) return s;
  }
}

/* Records a barrier packet (BARRIER bit, no work) reserved at end - 1: order_end only grows. */
static void note_order(hsad_queue_t *q, uint64_t end) {
  uint64_t cur = atomic_load_explicit(&q->order_end, memory_order_relaxed);
  while (cur < end && !atomic_compare_exchange_weak_explicit(&q->order_end, &cur, end,
                                                             memory_order_release,
                                                             memory_order_relaxed)) {
  }
}

/* One barrier-AND epoch packet covering everything reserved before it, if none does and the
 * ring has a free slot now (no waiting). */
static void checkpoint(hsad_queue_t *q) {
  uint64_t id, epoch;
  epoch_lock(q);
  uint64_t w = __atomic_load_n(&q->amd->write_dispatch_id, __ATOMIC_ACQUIRE);
  bool ok = atomic_load_explicit(&q->epoch_end, memory_order_relaxed) < w &&
            try_reserve_epoch(q, 1, false, &id, &epoch);
  epoch_unlock(q);
  if (!ok) return;
  note_order(q, id + 1);
  hsad_aql_publish(dq_slot(q, id), dq_fill_barrier_and(q, id, NULL, q->epoch_signal.handle));
  dq_ring_doorbell(&q->ring, id);
}

hsad_status_t dq_reserve_wait(hsad_queue_t *q, uint32_t n, bool kernarg, uint64_t deadline,
                              uint32_t *spins) {
  if (atomic_load_explicit(&q->error, memory_order_acquire)) return dq_queue_fail(q);
  if (n > q->ring.size)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%u packets can never fit queue %llu's %u "
                     "slots", n, (unsigned long long)q->hsa->id, q->ring.size);
  uint64_t r = dq_retire(q);
  uint64_t w = __atomic_load_n(&q->amd->write_dispatch_id, __ATOMIC_ACQUIRE);
  uint64_t bound = kernarg ? r : __atomic_load_n(&q->amd->read_dispatch_id, __ATOMIC_ACQUIRE);
  if (++*spins < 8 && w + n - bound <= q->ring.size) return HSAD_OK; /* room appeared: retry now */
  if (atomic_load_explicit(&q->epoch_end, memory_order_acquire) < w) checkpoint(q);
  uint64_t now = hsad_now_ns();
  if (deadline == 0 || now >= deadline) {
    uint64_t rd = __atomic_load_n(&q->amd->read_dispatch_id, __ATOMIC_ACQUIRE);
    return hsad_fail(HSAD_ERR_TIMEOUT, "queue %llu on device %u is full (%u packets; %llu not "
                     "yet completed, %llu not yet launched; %u requested) and the deadline "
                     "passed; nothing was submitted", (unsigned long long)q->hsa->id,
                     q->device->info.index, q->ring.size, (unsigned long long)(w - r),
                     (unsigned long long)(w - rd), n);
  }
  if (*spins < 64) {
    if ((*spins & 15) == 0) sched_yield();
    else dq_cpu_relax();
    return HSAD_OK;
  }
  /* Sleep with back-off (20 us doubling to 1.28 ms), never past the deadline. Not
   * hsa_signal_wait on the epoch signal: ROCr spins ~200 us in every such wait before it
   * blocks, and producers spinning there starve the packet processor they wait for
   * (measured: 4 producers on 2 cores held kfd-emu's CP to ~60 packets/s). */
  uint32_t shift = *spins - 64 < 6 ? *spins - 64 : 6;
  uint64_t nap = 20000ull << shift;
  if (nap > deadline - now) nap = deadline - now;
  struct timespec ts = {0, (long)nap};
  nanosleep(&ts, NULL);
  return HSAD_OK;
}

/* ---- barriers and flush ------------------------------------------------------------------- */

/* Checks a completion used as a dependency. */
hsad_status_t dq_dep_check(const hsad_completion_t *c, uint32_t i) {
  hsad_queue_t *d = c->queue;
  if (!d || !c->epoch) return HSAD_OK;
  if (c->epoch > atomic_load_explicit(&d->epoch_issued, memory_order_acquire))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "dependency %u: epoch %llu was never issued on "
                     "queue %llu (last epoch %llu)", i, (unsigned long long)c->epoch,
                     (unsigned long long)d->hsa->id,
                     (unsigned long long)atomic_load(&d->epoch_issued));
  int e = atomic_load_explicit(&d->error, memory_order_acquire);
  if (e && (e == HSAD_ERR_CLOSED || c->epoch > atomic_load(&d->error_epoch)))
    return dq_queue_fail(d);
  return HSAD_OK;
}

/* Dependencies on queues of another backend: the AMD packet processor cannot wait for them,
 * so the host does (until deadline_ns), and the barrier gets the others. *out_deps is deps, or
 * a malloc'd copy with those entries emptied (the caller frees it when it differs). */
static hsad_status_t foreign_deps(const hsad_completion_t *deps, uint32_t n, uint64_t deadline_ns,
                                  const hsad_completion_t **out_deps) {
  *out_deps = deps;
  hsad_completion_t *copy = NULL;
  for (uint32_t i = 0; i < n; i++) {
    if (!DQ_FOREIGN(deps[i].queue)) continue;
    hsad_status_t s = hsad_completion_wait(&deps[i], deadline_ns);
    if (!s && !copy && !(copy = malloc(n * sizeof *copy)))
      s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_queue_barrier: %u dependencies", n);
    if (s) {
      free(copy);
      return s;
    }
    if (*out_deps == deps) memcpy(copy, deps, n * sizeof *copy);
    *out_deps = copy;
    copy[i] = (hsad_completion_t){0};
  }
  return HSAD_OK;
}

static hsad_status_t barrier_signals(hsad_queue_t *q, const hsad_completion_t *deps,
                                     uint32_t dep_count, const hsa_signal_t *sigs,
                                     uint32_t sig_count, hsa_signal_t decrement,
                                     uint64_t deadline_ns, hsad_completion_t *out);

hsad_status_t hsad_queue_barrier_signals(hsad_queue_t *q, const hsad_completion_t *deps,
                                         uint32_t dep_count, const hsa_signal_t *sigs,
                                         uint32_t sig_count, hsa_signal_t decrement,
                                         uint64_t deadline_ns, hsad_completion_t *out) {
  if (!q) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_barrier: NULL queue");
  if (!deps && dep_count)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_barrier: NULL deps with dep_count %u",
                     dep_count);
  if (!sigs && sig_count)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_barrier: NULL and_signals with "
                     "signal_count %u", sig_count);
  if (DQ_FOREIGN(q)) {
    if (sig_count || decrement.handle)
      return dq_amd_only("hsad_queue_barrier_signals (HSA signals)", "the queue");
    return q->ops->queue_barrier(q, deps, dep_count, deadline_ns, out);
  }
  const hsad_completion_t *own = deps;
  hsad_status_t s = foreign_deps(deps, dep_count, deadline_ns, &own);
  if (s) return s;
  s = barrier_signals(q, own, dep_count, sigs, sig_count, decrement, deadline_ns, out);
  if (own != deps) free((void *)own);
  return s;
}

static hsad_status_t barrier_signals(hsad_queue_t *q, const hsad_completion_t *deps,
                                     uint32_t dep_count, const hsa_signal_t *sigs,
                                     uint32_t sig_count, hsa_signal_t decrement,
                                     uint64_t deadline_ns, hsad_completion_t *out) {
  if (DQ_UNLIKELY(dq_gate(q))) { /* the sticky error, or a capture records the barrier */
    const hsad_submit_capture_ops_t *ops = dq_capture_ops(q);
    if (atomic_load_explicit(&q->error, memory_order_acquire) || !ops || sig_count ||
        decrement.handle) {
      hsad_status_t s = dq_gate_fail(q, "hsad_queue_barrier_signals (HSA signals)");
      if (s) return s;
    } else {
      return ops->barrier(q, deps, dep_count, deadline_ns, out);
    }
  }
  /* Cross-queue deps collapse to the latest epoch per queue (epochs complete in order). */
  enum { LOCAL = 16 };
  hsad_completion_t local[LOCAL], *wait = local;
  if (dep_count > LOCAL && !(wait = malloc(dep_count * sizeof *wait)))
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_queue_barrier: %u dependencies", dep_count);
  uint32_t nv = 0;
  hsad_status_t s = HSAD_OK;
  for (uint32_t i = 0; i < dep_count && !s; i++) {
    s = dq_dep_check(&deps[i], i);
    if (s || !deps[i].queue || !deps[i].epoch || deps[i].queue == q) continue;
    uint32_t j = 0;
    while (j < nv && wait[j].queue != deps[i].queue) j++;
    if (j == nv) wait[nv++] = deps[i];
    else if (deps[i].epoch > wait[j].epoch) wait[j] = deps[i];
  }
  uint32_t na = (sig_count + 4) / 5;
  uint32_t n = nv + na;
  bool carry_dec = decrement.handle != 0;
  if (n == 0) n = 1; /* one barrier-AND: the ordering point the caller asked for, and it
                        carries the decrement or the epoch */
  bool decrement_before_epoch = carry_dec && out; /* decrement and epoch: two packets */
  if (decrement_before_epoch) n++;
  if (!s && n > q->ring.size)
    s = hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "barrier of %u packets (%u queues waited on, %u "
                  "signals) exceeds queue %llu's %u slots", n, nv, sig_count,
                  (unsigned long long)q->hsa->id, q->ring.size);
  if (s) {
    if (wait != local) free(wait);
    return s;
  }
  uint64_t first = 0, epoch = 0;
  s = out ? dq_reserve_epoch(q, n, false, deadline_ns, &first, &epoch) : HSAD_OK;
  if (!out) {
    uint32_t spins = 0;
    while (!s && !dq_try_reserve(q, n, false, &first))
      s = dq_reserve_wait(q, n, false, deadline_ns, &spins);
  }
  if (!s) note_order(q, first + n); /* every packet has the BARRIER bit, none has work */
  if (s) {
    if (wait != local) free(wait);
    return s;
  }
  /* Packets first..first+nv-1 are barrier-value packets, the rest barrier-AND; the packet
   * before the last carries `decrement` when the last carries the epoch. */
  uint64_t last = first + n - 1;
  for (uint32_t p = 0; p < n; p++) {
    uint64_t id = first + p;
    uint64_t comp = id == last ? (out ? q->epoch_signal.handle : decrement.handle)
                    : decrement_before_epoch && id == last - 1 ? decrement.handle
                                              : 0;
    if (p < nv) {
      hsad_aql_barrier_value_fill((hsa_amd_barrier_value_packet_t *)dq_slot(q, id),
                                  wait[p].queue->epoch_signal.handle,
                                  epoch_threshold(wait[p].epoch), -1, HSA_SIGNAL_CONDITION_LT,
                                  comp, hsad_aql_barrier_value_header(true));
      continue;
    }
    uint64_t dep[5] = {0};
    for (uint32_t i = 0, a = p - nv; i < 5 && a * 5 + i < sig_count; i++)
      dep[i] = sigs[a * 5 + i].handle;
    dq_fill_barrier_and(q, id, dep, comp);
  }
  const uint32_t value_word = hsad_aql_barrier_value_word(true);
  for (uint32_t p = n; p-- > 0;)
    hsad_aql_publish(dq_slot(q, first + p),
                     p < nv ? value_word : hsad_aql_barrier_and_header(true));
  dq_ring_doorbell(&q->ring, last);
  if (wait != local) free(wait);
  if (out) *out = (hsad_completion_t){.queue = q, .epoch = epoch, .packet_id = last};
  return HSAD_OK;
}

hsad_status_t hsad_queue_barrier(hsad_queue_t *q, const hsad_completion_t *deps,
                                 uint32_t dep_count, uint64_t deadline_ns,
                                 hsad_completion_t *out) {
  return hsad_queue_barrier_signals(q, deps, dep_count, NULL, 0, (hsa_signal_t){0},
                                    deadline_ns, out);
}

hsad_status_t hsad_queue_flush(hsad_queue_t *q, uint64_t deadline_ns, hsad_completion_t *out) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_queue_flush", {q, "queue"}, {out, "out_completion"});
  if (ns) return ns;
  if (DQ_FOREIGN(q)) return q->ops->queue_flush(q, deadline_ns, out);
  if (dq_gate(q)) {
    hsad_status_t s = dq_gate_fail(q, "hsad_queue_flush");
    if (s) return s;
  }
  epoch_lock(q);
  uint64_t w = __atomic_load_n(&q->amd->write_dispatch_id, __ATOMIC_ACQUIRE);
  bool covered = atomic_load_explicit(&q->epoch_end, memory_order_relaxed) == w;
  uint64_t k = atomic_load_explicit(&q->epoch_issued, memory_order_relaxed);
  epoch_unlock(q);
  if (covered) {
    *out = (hsad_completion_t){.queue = k ? q : NULL, .epoch = k, .packet_id = w ? w - 1 : 0};
    return HSAD_OK;
  }
  return hsad_queue_barrier(q, NULL, 0, deadline_ns, out);
}

/* The point of hsad_submit.h: read under the epoch lock, so `covered` and the epoch number
 * belong to one instant of the ring (epoch numbers follow ring order: the next epoch packet
 * reserved lies after every packet below w). */
hsad_status_t hsad_submit_point(hsad_queue_t *q, hsad_submit_point_t *out) {
  if (!q || !out || DQ_FOREIGN(q) || dq_gate(q)) return HSAD_ERR_UNSUPPORTED;
  epoch_lock(q);
  uint64_t w = __atomic_load_n(&q->amd->write_dispatch_id, __ATOMIC_ACQUIRE);
  bool covered = atomic_load_explicit(&q->epoch_end, memory_order_relaxed) == w;
  uint64_t k = atomic_load_explicit(&q->epoch_issued, memory_order_relaxed);
  epoch_unlock(q);
  uint64_t ord = atomic_load_explicit(&q->order_end, memory_order_acquire);
  if (!covered) k++; /* w > epoch_end >= 0: at least one packet, so k >= 1 */
  *out = (hsad_submit_point_t){.completion = {.queue = k ? q : NULL, .epoch = k,
                                              .packet_id = w ? w - 1 : 0},
                               .end = w, .pending = !covered, .ordered = ord >= w};
  return HSAD_OK;
}

bool hsad_submit_ordered_since(const hsad_queue_t *q, uint64_t end) {
  return atomic_load_explicit(&((hsad_queue_t *)q)->order_end, memory_order_acquire) >= end;
}

hsad_status_t hsad_submit_point_issue(const hsad_submit_point_t *pt, uint64_t deadline_ns,
                                      bool *out_packet) {
  bool packet = false;
  hsad_queue_t *q = pt->completion.queue;
  hsad_status_t s = HSAD_OK;
  uint64_t before = q ? atomic_load_explicit(&q->epoch_issued, memory_order_acquire) : 0;
  if (pt->pending && before < pt->completion.epoch) {
    hsad_completion_t c;
    s = hsad_queue_flush(q, deadline_ns, &c);
    packet = !s && c.epoch > before;
  }
  if (out_packet) *out_packet = packet;
  return s;
}

hsad_status_t hsad_queue_wait_idle(hsad_queue_t *q, uint64_t deadline_ns) {
  if (!q) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_wait_idle: NULL queue");
  if (dq_gate(q)) { /* a backend's queue: refused while it captures, else its flush */
    hsad_status_t s = q->ops ? hsad_backend_capture_refuse(q, "hsad_queue_wait_idle")
                             : dq_gate_fail(q, "hsad_queue_wait_idle");
    if (s) return s;
  }
  hsad_completion_t c;
  hsad_status_t s = hsad_queue_flush(q, deadline_ns, &c);
  return s ? s : hsad_completion_wait(&c, deadline_ns);
}

/* ---- waits -------------------------------------------------------------------------------- */

/* 1: reached, 0: not yet, or a failure status (negative: -status) of the queue. */
static inline int reached(const hsad_completion_t *c) {
  hsad_queue_t *q = c->queue;
  int e = atomic_load_explicit(&q->error, memory_order_acquire);
  if (DQ_UNLIKELY(e)) {
    if (e != HSAD_ERR_CLOSED && c->epoch <= atomic_load(&q->error_epoch)) return 1;
    return -e;
  }
  return __atomic_load_n(q->epoch_value, __ATOMIC_ACQUIRE) < epoch_threshold(c->epoch);
}

static hsad_status_t check_completion(const hsad_completion_t *c, const char *who) {
  if (!c) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: NULL completion", who);
  if (c->queue && c->epoch > atomic_load_explicit(&c->queue->epoch_issued, memory_order_acquire))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: epoch %llu was never issued on queue %llu "
                     "(last epoch %llu)", who, (unsigned long long)c->epoch,
                     (unsigned long long)c->queue->hsa->id,
                     (unsigned long long)atomic_load(&c->queue->epoch_issued));
  return HSAD_OK;
}

bool hsad_completion_done(const hsad_completion_t *c) {
  if (c && c->epoch && DQ_FOREIGN(c->queue)) return c->queue->ops->completion_done(c);
  return !c || !c->queue || !c->epoch || reached(c) != 0;
}

/* One step of a waiter that spins for spin_ns from start, then blocks: 0 after a spin step
 * (yielding every 16th: the completion's producer - kfd-emu's CP, an oversubscribed host - may
 * need this core), else how long to block, in timestamp ticks: slices of at most 10 ms, so the
 * deadline (now < deadline_ns) and queue errors are seen. */
static uint64_t wait_step(uint64_t start, uint64_t now, uint64_t spin_ns, uint64_t deadline_ns,
                          uint32_t *polls) {
  if (now - start < spin_ns) {
    if ((++*polls & 15) == 0) sched_yield();
    else dq_cpu_relax();
    return 0;
  }
  uint64_t slice = deadline_ns - now;
  if (slice > 10000000ull) slice = 10000000ull;
  return (uint64_t)((double)slice * (double)hsad_rt.timestamp_hz / 1e9) + 1;
}

hsad_status_t hsad_completion_wait(const hsad_completion_t *c, uint64_t deadline_ns) {
  if (c && c->epoch && DQ_FOREIGN(c->queue)) return c->queue->ops->completion_wait(c, deadline_ns);
  hsad_status_t s = check_completion(c, "hsad_completion_wait");
  if (s || !c->queue || !c->epoch) return s;
  hsad_queue_t *q = c->queue;
  int64_t thr = epoch_threshold(c->epoch);
  uint64_t start = hsad_now_ns();
  uint32_t polls = 0;
  int r;
  while ((r = reached(c)) == 0) {
    uint64_t now = hsad_now_ns();
    if (now >= deadline_ns)
      return hsad_fail(HSAD_ERR_TIMEOUT, "completion (epoch %llu, packet %llu) on queue %llu "
                       "(device %u) not reached at the deadline (%llu epochs completed)",
                       (unsigned long long)c->epoch, (unsigned long long)c->packet_id,
                       (unsigned long long)q->hsa->id, q->device->info.index,
                       (unsigned long long)(HSAD_EPOCH_BASE -
                                            __atomic_load_n(q->epoch_value, __ATOMIC_ACQUIRE)));
    uint64_t ticks = wait_step(start, now, q->spin_ns, deadline_ns, &polls);
    if (!ticks) continue;
    hsad_rocr.hsa_signal_wait_scacquire(q->epoch_signal, HSA_SIGNAL_CONDITION_LT, thr, ticks,
                                        HSA_WAIT_STATE_BLOCKED);
  }
  if (r <= 0) return dq_queue_fail(q);
  /* a queue whose owner keeps per-completion results (memory/'s copy queue: a copy stopped
   * after it was submitted) reports them to every waiter */
  return DQ_UNLIKELY(q->result_hook != NULL) ? q->result_hook(q->result_ctx, c) : HSAD_OK;
}

hsad_status_t hsad_completion_wait_all(const hsad_completion_t *cs, uint32_t n,
                                       uint64_t deadline_ns) {
  if (!cs && n)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_completion_wait_all: NULL completions");
  for (uint32_t i = 0; i < n; i++) {
    hsad_status_t s = hsad_completion_wait(&cs[i], deadline_ns);
    if (s) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", hsad_last_error());
      return hsad_fail(s, "completion %u of %u: %s", i, n, msg);
    }
  }
  return HSAD_OK;
}

hsad_status_t hsad_completion_wait_any(const hsad_completion_t *cs, uint32_t n,
                                       uint64_t deadline_ns, uint32_t *out_index) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_completion_wait_any", {cs, "completions"},
                                   {out_index, "out_index"});
  if (ns) return ns;
  if (!n) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_completion_wait_any: count 0");
  for (uint32_t i = 0; i < n; i++)
    if (DQ_FOREIGN(cs[i].queue)) return hsad_backend_wait_any(cs, n, deadline_ns, out_index);
  for (uint32_t i = 0; i < n; i++) {
    hsad_status_t s = check_completion(&cs[i], "hsad_completion_wait_any");
    if (s) return s;
  }
  enum { MAXQ = 64 };
  hsa_signal_t sig[MAXQ];
  hsa_signal_condition_t cond[MAXQ];
  hsa_signal_value_t val[MAXQ];
  uint64_t start = hsad_now_ns();
  uint32_t polls = 0;
  for (;;) {
    uint32_t ns = 0;
    for (uint32_t i = 0; i < n; i++) {
      if (hsad_completion_done(&cs[i])) {
        *out_index = i;
        return hsad_completion_wait(&cs[i], deadline_ns); /* OK, or the queue's error */
      }
      /* the earliest epoch of each queue is the first one it can reach */
      uint32_t j = 0;
      while (j < ns && sig[j].handle != cs[i].queue->epoch_signal.handle) j++;
      if (j == ns && ns < MAXQ) {
        sig[ns] = cs[i].queue->epoch_signal;
        cond[ns] = HSA_SIGNAL_CONDITION_LT;
        val[ns++] = epoch_threshold(cs[i].epoch);
      } else if (j < ns && epoch_threshold(cs[i].epoch) > val[j]) {
        val[j] = epoch_threshold(cs[i].epoch);
      }
    }
    uint64_t now = hsad_now_ns();
    if (now >= deadline_ns)
      return hsad_fail(HSAD_ERR_TIMEOUT, "hsad_completion_wait_any: none of %u completions "
                       "reached at the deadline", n);
    uint64_t ticks = wait_step(start, now, cs[0].queue->spin_ns, deadline_ns, &polls);
    if (!ticks) continue;
    hsa_signal_value_t sat;
    hsad_rocr.hsa_amd_signal_wait_any(ns, sig, cond, val, ticks, HSA_WAIT_STATE_BLOCKED, &sat);
  }
}

hsad_status_t hsad_completion_times(const hsad_completion_t *c, uint64_t *out_start_ns,
                                    uint64_t *out_end_ns) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_completion_times", {c, "completion"},
                                   {out_start_ns, "out_start_ns"}, {out_end_ns, "out_end_ns"});
  if (ns) return ns;
  hsad_queue_t *q = c->queue;
  if (DQ_FOREIGN(q)) return q->ops->completion_times(c, out_start_ns, out_end_ns);
  if (!q || !q->ts_signals)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_completion_times: the queue was created without "
                     "profiling (hsad_queue_options_t.profiling)");
  if (!hsad_completion_done(c) || reached(c) < 0)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_completion_times: packet %llu has not "
                     "completed", (unsigned long long)c->packet_id);
  uint64_t slot = c->packet_id & q->ring.mask;
  if (atomic_load_explicit(&q->ts_ids[slot], memory_order_acquire) != c->packet_id)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_completion_times: packet %llu is not a "
                     "kernel dispatch, or its slot was reused (times are kept for %u packets)",
                     (unsigned long long)c->packet_id, q->ring.size);
  hsa_amd_profiling_dispatch_time_t t;
  hsa_status_t st = hsad_rocr.hsa_amd_profiling_get_dispatch_time(q->device->agent,
                                                                  q->ts_signals[slot], &t);
  if (st != HSA_STATUS_SUCCESS) return dq_hsa_fail(st, "hsa_amd_profiling_get_dispatch_time");
  if (atomic_load_explicit(&q->ts_ids[slot], memory_order_acquire) != c->packet_id)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_completion_times: packet %llu's slot was "
                     "reused while reading (times are kept for %u packets)",
                     (unsigned long long)c->packet_id, q->ring.size);
  double scale = 1e9 / (double)hsad_rt.timestamp_hz;
  *out_start_ns = (uint64_t)((double)t.start * scale);
  *out_end_ns = (uint64_t)((double)t.end * scale);
  return HSAD_OK;
}

hsad_status_t hsad_completion_signal(const hsad_completion_t *c, hsa_signal_t *out_signal,
                                     hsa_signal_value_t *out_lt_value) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_completion_signal", {c, "completion"},
                                   {out_signal, "out_signal"}, {out_lt_value, "out_lt_value"});
  if (ns) return ns;
  if (!c->queue)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_completion_signal: an empty completion (it "
                     "has no signal)");
  if (DQ_FOREIGN(c->queue)) return dq_amd_only("hsad_completion_signal", "the completion's queue");
  *out_signal = c->queue->epoch_signal;
  *out_lt_value = epoch_threshold(c->epoch);
  return HSAD_OK;
}
