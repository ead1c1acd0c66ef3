/* queue_submit.h - a queue's submits over its ring (aql_ring.h): reservations that wait, the
 * epoch lock, timestamp signals, padding (internal).
 *
 * Contract (hsad_queue.h steps 3, 6, 7, 9; the ring's own rules are in aql_ring.h):
 *  - An epoch packet is reserved and numbered under q->epoch_lock (epoch numbers follow ring
 *    order); its log entry is written before the lock is dropped, i.e. before publication.
 *  - Backpressure: a full ring is waited out until the caller's deadline; a ring full of
 *    packets with no epoch packet after them gets one (a barrier-AND), so `retired` advances.
 * Thread safety: all functions are multi-producer safe.
 */
#ifndef HSAD_QUEUE_SUBMIT_H
#define HSAD_QUEUE_SUBMIT_H

#include <sched.h>
#include <string.h>

#include "hsa-dispatch/dispatch_internal.h"

#pragma GCC visibility push(hidden) /* library-internal (dispatch_internal.h) */

static inline void dq_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* The kernel dispatch header of hsad_launch_t.flags (the policy is hsad_aql.h's). */
static inline uint16_t dq_dispatch_header(uint32_t flags) {
  return hsad_aql_kernel_header_of_flags(flags);
}

/* A queue's ring arithmetic (aql_ring.h) under the names the submit paths use. */
static inline uint32_t dq_span(const hsad_queue_t *q, uint32_t ksize) {
  return dq_ring_span(&q->ring, ksize);
}
static inline uint8_t *dq_slot(const hsad_queue_t *q, uint64_t id) {
  return dq_ring_slot(&q->ring, id);
}
static inline bool dq_try_reserve(hsad_queue_t *q, uint32_t n, bool kernarg, uint64_t *out_id) {
  return dq_ring_try_reserve(&q->ring, n, kernarg, out_id);
}

/* The slow path of a reservation: the ring is full. Advances `retired`, adds an epoch packet
 * when none covers the packets in flight, then waits a little (spinning first, then blocked
 * on the epoch signal). Returns HSAD_OK to retry, or the sticky error / HSAD_ERR_TIMEOUT. */
hsad_status_t dq_reserve_wait(hsad_queue_t *q, uint32_t n, bool kernarg, uint64_t deadline,
                              uint32_t *spins);

/* Reserves n ids for a run using kernarg blocks (the completion bound), waiting until the
 * deadline. The hot path of every dispatch. */
static inline hsad_status_t dq_reserve(hsad_queue_t *q, uint32_t n, uint64_t deadline,
                                       uint64_t *out_id) {
  uint32_t spins = 0;
  while (DQ_UNLIKELY(!dq_try_reserve(q, n, true, out_id))) {
    hsad_status_t s = dq_reserve_wait(q, n, true, deadline, &spins);
    if (s) return s;
  }
  return HSAD_OK;
}

/* Reserves n ids whose last packet is an epoch packet and numbers it: *out_id = first id,
 * *out_epoch = the epoch number. kernarg as for dq_try_reserve. Waits until the deadline. */
hsad_status_t dq_reserve_epoch(hsad_queue_t *q, uint32_t n, bool kernarg, uint64_t deadline,
                               uint64_t *out_id, uint64_t *out_epoch);
/* As dq_reserve_epoch (kernarg blocks: bound by `retired`), numbering `count` epoch packets:
 * *out_first_epoch is the first one's number, the others follow in ring order, the last is the
 * run's last packet (only it is logged for reclaim). */
hsad_status_t dq_reserve_epochs(hsad_queue_t *q, uint32_t n, uint32_t count, uint64_t deadline,
                                uint64_t *out_id, uint64_t *out_first_epoch);
/* Checks completion `index` of a dependency list: an epoch never issued on its queue
 * (HSAD_ERR_INVALID_ARGUMENT), a source queue that faulted before reaching it or was closed
 * (its sticky error). Empty completions pass. */
hsad_status_t dq_dep_check(const hsad_completion_t *c, uint32_t index);

/* Arms slot `id`'s timestamp signal on a profiling queue; returns its handle. */
static inline uint64_t dq_ts_arm(hsad_queue_t *q, uint64_t id) {
  uint64_t slot = id & q->ring.mask;
  amd_signal_t *s = (amd_signal_t *)(uintptr_t)q->ts_signals[slot].handle;
  __atomic_store_n(&s->value, 1, __ATOMIC_RELAXED);
  atomic_store_explicit(&q->ts_ids[slot], id, memory_order_relaxed);
  return q->ts_signals[slot].handle;
}

/* Fills a barrier-AND at `id` (headers stay INVALID); returns the word to publish. */
static inline uint32_t dq_fill_barrier_and(hsad_queue_t *q, uint64_t id, const uint64_t deps[5],
                                           uint64_t completion) {
  return hsad_aql_barrier_fill((hsa_barrier_and_packet_t *)dq_slot(q, id), deps, completion,
                               hsad_aql_barrier_and_header(true));
}

/* Fills and publishes the padding of the dispatch at `id` that takes `slots` slots,
 * last-to-first: ids id + 1 .. id + slots - 1; with carries_epoch, the last one is a
 * barrier-AND (BARRIER bit) that carries the epoch signal instead. Called before the
 * dispatch's own header is published. */
static inline void dq_publish_padding(hsad_queue_t *q, uint64_t id, uint32_t slots,
                                      bool carries_epoch) {
  for (uint64_t j = id + slots - 1; j > id; j--) {
    bool is_epoch = carries_epoch && j == id + slots - 1;
    hsad_aql_publish(dq_slot(q, j),
                     hsad_aql_barrier_fill((hsa_barrier_and_packet_t *)dq_slot(q, j), NULL,
                                           is_epoch ? q->epoch_signal.handle : 0,
                                           hsad_aql_pad_header(is_epoch)));
  }
}

/* Writes the kernarg image into slot `id`'s block and the body at `id` (header INVALID);
 * returns the word to publish. A body whose kernarg address is set (a prepared launch's
 * resident segment) keeps it: ksize is then 0 and nothing is copied. */
static inline uint32_t dq_fill_dispatch(hsad_queue_t *q, uint64_t id, const hsad_aql_dispatch_t *d,
                                        const uint8_t *image, uint32_t ksize, uint16_t header,
                                        uint64_t signal) {
  uint8_t *ka = d->kernarg_address ? (uint8_t *)d->kernarg_address
                                   : dq_ring_kernarg_claim(&q->ring, id, dq_span(q, ksize));
  if (ksize) memcpy(ka, image, ksize);
  hsa_kernel_dispatch_packet_t *pkt = (hsa_kernel_dispatch_packet_t *)dq_slot(q, id);
  uint32_t word = hsad_aql_dispatch_fill(pkt, d, header);
  pkt->kernarg_address = ka;
  pkt->completion_signal.handle = signal;
  return word;
}

#pragma GCC visibility pop

#endif
