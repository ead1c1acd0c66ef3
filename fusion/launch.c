/* launch.c - launching execs: the fused submission, launch dependencies, cancelling, the
 * rollback to sequential submission (hsad_fusion.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusion/fusion_internal.h"

/* Launch-time fields of packet p in `slot` (fu_pkt_t.fix): a barrier-value packet's threshold
 * for this launch's producer point, a profiled kernel's timestamp signal, a kernel in ring-copy
 * mode: its image into the slot's kernarg block, or, once both prepublished versions are free,
 * back to them (the launch that ends the mode writes the version in use). */
static __attribute__((noinline)) void fix_pkt(const hsad_graph_exec_t *e, fu_queue_t *fq,
                                              fu_pkt_t *p, uint8_t *slot, uint64_t id) {
  if (p->fix & FU_FIX_VALUE)
    ((hsa_amd_barrier_value_packet_t *)slot)->value =
        e->qs[p->wait_queue].point_value - (int64_t)p->wait_point;
  if (p->fix & FU_FIX_STAMP) {
    uint64_t ts = hsad_submit_timestamp_signal(fq->q, id);
    memcpy(slot + 56, &ts, 8);
  }
  if (p->fix & FU_FIX_COPY) {
    hsa_kernel_dispatch_packet_t *k = (hsa_kernel_dispatch_packet_t *)slot;
    if (fu_run_done(fq, &p->copy_until)) {
      if (p->ksize) memcpy(p->karg[p->cur], p->image, p->ksize);
      fu_copy_mode(fq, p, false);
      p->prev = (hsad_completion_t){0};
      ((hsa_kernel_dispatch_packet_t *)p->body)->kernarg_address = p->karg[p->cur];
      k->kernarg_address = p->karg[p->cur];
    } else {
      /* the stamps of every block the segment covers, its padding slots' too, up to the
       * ring's last slot (past it the spare blocks, which no slot has): hsad_submit_ring_t */
      uint64_t slot = id & fq->ring.mask;
      for (uint64_t j = slot; j < slot + p->span && j <= fq->ring.mask; j++)
        fq->ring.kernarg_slots[j].stamp = 0;
      uint8_t *ka = fq->ring.kernargs + slot * fq->ring.kernarg_block;
      if (p->ksize) memcpy(ka, p->image, p->ksize);
      k->kernarg_address = ka;
    }
  }
}

/* Bytes 4..63 of a packet, both sides 64-byte aligned (AQL slots; fu_pkt_t bodies): 4 + 8
 * bytes, then three 16-byte moves. Bytes 0..3 (header | setup) are only ever stored whole and
 * atomically (hsad_aql_publish): the packet processor may read a slot's header at any time
 * (kfd-emu polls the slot past its doorbell), so a plain store of the body's INVALID header
 * over the slot's (INVALID too) would be a data race with it (ThreadSanitizer). */
typedef long long fu_v16 __attribute__((vector_size(16)));
static inline void copy60(uint8_t *dst, const uint8_t *src) {
  const fu_v16 *s = (const fu_v16 *)__builtin_assume_aligned(src, 64);
  fu_v16 *d = (fu_v16 *)__builtin_assume_aligned(dst, 64);
  memcpy(dst + 4, src + 4, 4);
  memcpy(dst + 8, src + 8, 8);
  fu_v16 b = s[1], c = s[2], x = s[3];
  d[1] = b, d[2] = c, d[3] = x;
}

/* Writes packet p into `slot` (packet `id`), header INVALID: its precomputed bytes 4..63, then
 * the launch-time fields if any (a barrier-value's threshold inline, the rest in fix_pkt). */
static inline void put_pkt(const hsad_graph_exec_t *e, fu_queue_t *fq, fu_pkt_t *p,
                           uint8_t *slot, uint64_t id) {
  copy60(slot, p->body);
  if (__builtin_expect(p->fix != 0, 0)) {
    if (p->fix == FU_FIX_VALUE)
      ((hsa_amd_barrier_value_packet_t *)slot)->value = *p->wait_value - (int64_t)p->wait_point;
    else
      fix_pkt(e, fq, p, slot, id);
  }
}

/* The bodies of packets [p, end) into consecutive slots from `slot`, bytes 4..63 (the slots'
 * headers stay INVALID: copy60): the first pass of put_run_plain. 32-byte moves where the CPU
 * has AVX2 (an ifunc picks the clone once), else 16-byte ones. */
typedef long long fu_v32 __attribute__((vector_size(32)));
#if defined(__SANITIZE_THREAD__) /* the ifunc's resolver, instrumented, would run at relocation,
                                    before ThreadSanitizer's runtime is up: one clone there */
#define FU_CLONES
#else
#define FU_CLONES target_clones("avx2", "default")
#endif
__attribute__((noinline, FU_CLONES)) static void
put_bodies(const fu_pkt_t *p, const fu_pkt_t *end, uint8_t *slot) {
  size_t count = (size_t)(end - p);
  _Pragma("GCC unroll 4") for (size_t i = 0; i < count; i++) {
    const uint8_t *src = __builtin_assume_aligned(p[i].body, 64);
    uint8_t *dst = __builtin_assume_aligned(slot + (i << 6), 64);
    memcpy(dst + 4, src + 4, 4);
    memcpy(dst + 8, src + 8, 8);
    fu_v16 a = *(const fu_v16 *)(src + 16);
    fu_v32 b = *(const fu_v32 *)(src + 32);
    *(fu_v16 *)(dst + 16) = a;
    *(fu_v32 *)(dst + 32) = b;
  }
}

/* Publishes the headers of packets [lo, hi) in consecutive slots from slot_lo, last to first. */
static inline void put_headers(const fu_pkt_t *lo, const fu_pkt_t *hi, uint8_t *slot_lo) {
  _Pragma("GCC unroll 4") for (size_t i = (size_t)(hi - lo); i-- > 0;)
    hsad_aql_publish(slot_lo + (i << 6), lo[i].word);
}

/* Packets 1..n-1 of fq's run (packet 0 in slot0; `wrap`: the packet in the ring's slot 0, n
 * when the run does not wrap) when only barrier-value packets have launch-time fields (no
 * ring-copy mode, no timestamps): every body, then the barrier-values' thresholds, then the
 * headers last to first - no header is valid before every body of the run is complete. */
static void put_run_plain(fu_queue_t *fq, uint8_t *slot0, uint32_t wrap) {
  fu_pkt_t *const pkts = fq->pkts;
  uint8_t *const ring = fq->ring.packets;
  const uint32_t n = fq->n;
  put_bodies(pkts + 1, pkts + wrap, slot0 + 64);
  if (wrap < n) put_bodies(pkts + wrap, pkts + n, ring);
  const uint64_t pos = (uint64_t)(slot0 - ring) >> 6, mask = fq->ring.mask;
  for (const fu_value_t *v = fq->values, *end = v + fq->nvalues; v != end; v++)
    ((hsa_amd_barrier_value_packet_t *)(ring + (((pos + v->index) & mask) << 6)))->value =
        *v->wait_value - v->wait_point;
  if (wrap < n) put_headers(pkts + wrap, pkts + n, ring);
  put_headers(pkts + 1, pkts + wrap, slot0 + 64);
}

/* Packets [lo, hi) of a run into consecutive slots (packet lo in slot_lo, its id id_lo), last to
 * first, each body before its header: a packet becomes valid only after every later one of the
 * span is complete. No ring arithmetic per packet (the caller splits a run where it wraps). */
static inline void put_span(const hsad_graph_exec_t *e, fu_queue_t *fq, fu_pkt_t *lo,
                            fu_pkt_t *hi, uint8_t *slot_lo, uint64_t id_lo) {
  uint8_t *slot = slot_lo + ((size_t)(hi - lo) << 6);
  for (fu_pkt_t *p = hi; p != lo;) {
    p--;
    slot -= 64;
    put_pkt(e, fq, p, slot, id_lo + (uint64_t)(p - lo));
    hsad_aql_publish(slot, p->word);
  }
}

/* The slot of packet `id` on fq's ring. */
static inline uint8_t *slot_of(const fu_queue_t *fq, uint64_t id) {
  return fq->ring.packets + ((id & fq->ring.mask) << 6);
}

/* A barrier-AND without dependencies in slot `id` (kernarg padding, a cancelled packet, the
 * epoch after a profiled kernel), header INVALID; completion: the signal it decrements. */
static inline void put_barrier(fu_queue_t *fq, uint64_t id, uint64_t completion) {
  hsad_aql_barrier_fill((hsa_barrier_and_packet_t *)slot_of(fq, id), NULL, completion, 0);
}

/* Monitoring on (hsad_monitor.h): the record of kernel packet p, submitted as `id`. */
static void monitor_pkt(hsad_queue_t *q, const fu_pkt_t *p, uint64_t id,
                        const hsad_submit_mark_t *mark) {
  hsad_submit_monitor_record(q, (const hsa_kernel_dispatch_packet_t *)p->body,
                             (uint16_t)((p->word >> (16 + HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS)) & 3),
                             id, mark);
}

/* Launch dependencies collapsed to the latest epoch per queue (epochs complete in order). */
enum { FU_MAX_DEP_QUEUES = 16 }; /* distinct queues of the caller's dependencies */
typedef struct fu_deps {
  hsad_completion_t wait[FU_MAX_DEP_QUEUES + HSAD_GRAPH_MAX_LANES]; /* + the exec's queues */
  uint32_t n;
} fu_deps_t;

/* Adds completion c to the collapsed list (the later epoch of one queue wins). */
static void deps_merge(fu_deps_t *d, const hsad_completion_t *c) {
  uint32_t j = 0;
  while (j < d->n && d->wait[j].queue != c->queue) j++;
  if (j == d->n) d->wait[d->n++] = *c;
  else if (c->epoch > d->wait[j].epoch) d->wait[j] = *c;
}

static hsad_status_t collect_deps(const hsad_completion_t *deps, uint32_t count, fu_deps_t *out) {
  out->n = 0;
  for (uint32_t i = 0; i < count; i++) {
    hsad_status_t s = hsad_submit_dep_check(&deps[i], i);
    if (s) return s;
    if (!deps[i].queue || !deps[i].epoch) continue;
    uint32_t j = 0;
    while (j < out->n && out->wait[j].queue != deps[i].queue) j++;
    if (j == FU_MAX_DEP_QUEUES)
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_launch_after: dependency %u is "
                       "on a %uth distinct queue; at most %u (join them with "
                       "hsad_queue_barrier first)", i, j + 1, (unsigned)FU_MAX_DEP_QUEUES);
    deps_merge(out, &deps[i]);
  }
  return HSAD_OK;
}

/* The rollback path: every node on its own, in topological order, as an epoch packet (BARRIER
 * bit: same-queue and stream order), the host waiting for producers on other queues; launch
 * dependencies as a barrier on each queue that holds a root node. */
static hsad_status_t launch_sequential(hsad_graph_exec_t *e, const fu_deps_t *deps,
                                       uint64_t deadline_ns, hsad_completion_t *out) {
  for (uint32_t qi = 0; deps->n && qi < e->nq; qi++) {
    if (!e->qs[qi].has_root) continue;
    hsad_status_t s = hsad_queue_barrier(e->qs[qi].q, deps->wait, deps->n, deadline_ns, NULL);
    if (s) return s;
  }
  for (uint32_t oi = 0; oi < e->nn; oi++) {
    uint32_t id = e->order[oi];
    uint32_t qi = e->node_q[id];
    fu_queue_t *fq = &e->qs[qi];
    hsad_queue_t *q = fq->q;
    for (uint32_t d = e->dep_off[id]; d < e->dep_off[id + 1]; d++) {
      uint32_t p = e->dep_ids[d];
      if (e->node_q[p] == qi) continue;
      hsad_status_t s = hsad_completion_wait(&e->done[p], deadline_ns);
      if (s) return s;
    }
    fu_pkt_t *p = &fq->pkts[e->node_pkt[id]];
    uint32_t m = p->kind == FU_KERNEL ? p->span : 1; /* with its kernarg padding */
    /* a profiling queue's kernel carries its timestamp signal: a barrier-AND carries the epoch */
    bool own = !(p->kind == FU_KERNEL && fq->profiling && m == 1);
    uint32_t total = m + !own;
    uint64_t pid, k;
    hsad_submit_mark_t mark;
    bool mon = hsad_submit_monitored(q);
    if (mon) hsad_submit_monitor_begin(q, &mark);
    hsad_status_t s = hsad_submit_reserve(q, total, true, deadline_ns, &pid, &k);
    if (s) return s;
    uint64_t esig = fq->ring.epoch_signal;
    /* the node's body with the epoch (or none); its padding and the barrier-AND after a
     * profiled kernel are plain barrier-ANDs, the last one carrying the epoch */
    uint8_t *slot = slot_of(fq, pid);
    put_pkt(e, fq, p, slot, pid);
    if (!(p->fix & FU_FIX_STAMP)) {
      uint64_t comp = total == 1 ? esig : 0;
      memcpy(slot + 56, &comp, 8);
    }
    for (uint32_t j = total - 1; j > 0; j--) {
      put_barrier(fq, pid + j, j == total - 1 ? esig : 0);
      hsad_submit_publish(q, pid + j, pad_header(j == total - 1));
    }
    hsad_submit_publish(q, pid, p->word | (1u << HSA_PACKET_HEADER_BARRIER));
    hsad_submit_doorbell(q, pid + total - 1);
    if (mon && p->kind == FU_KERNEL) {
      hsad_submit_monitor_close(&mark);
      monitor_pkt(q, p, pid, &mark);
    }
    e->done[id] = (hsad_completion_t){.queue = q, .epoch = k, .packet_id = pid + total - 1};
    fu_last_set(e, qi, e->done[id]);
    if (out) out[qi] = e->done[id];
  }
  return HSAD_OK;
}

static hsad_status_t rollback(hsad_graph_exec_t *e, uint32_t flags, hsad_graph_rollback_t why,
                              const fu_deps_t *deps, uint64_t deadline_ns, hsad_completion_t *out,
                              hsad_graph_rollback_t *out_reason, const char *detail) {
  if (flags & HSAD_GRAPH_NO_ROLLBACK)
    return hsad_fail(HSAD_ERR_RESOURCE_EXHAUSTED, "graph launch cannot be fused (%s: %s) and rollback is forbidden",
                     hsad_graph_rollback_name(why), detail);
  e->counters[why]++;
  if (out_reason) *out_reason = why;
  return launch_sequential(e, deps, deadline_ns, out);
}

/* Queues [0, count) were reserved for a launch that cannot go on: their slots become no-op
 * barrier-ANDs (no dependencies, no BARRIER bit) except the epoch points, which keep the
 * BARRIER bit and the epoch signal so the queue's timeline stays whole. Nothing of the graph
 * runs; the rings have no hole. */
static void cancel_runs(hsad_graph_exec_t *e, uint32_t count) {
  for (uint32_t qi = 0; qi < count; qi++) {
    fu_queue_t *fq = &e->qs[qi];
    uint32_t total = fq->pre + fq->n;
    for (uint32_t i = total; i-- > 0;) {
      bool point = i >= fq->pre && fq->pkts[i - fq->pre].epoch;
      put_barrier(fq, fq->first_id + i, point ? fq->ring.epoch_signal : 0);
      hsad_submit_publish(fq->q, fq->first_id + i, point ? barrier_header(true) : pad_header(false));
    }
    hsad_submit_doorbell(fq->q, fq->first_id + total - 1);
  }
}

hsad_status_t hsad_graph_launch_after(hsad_graph_exec_t *e, uint32_t flags,
                                      const hsad_completion_t *deps, uint32_t dep_count,
                                      uint64_t deadline_ns, hsad_completion_t *out,
                                      hsad_graph_rollback_t *out_reason) {
  FU_BACKEND_EXEC(e, launch(e, flags, deps, dep_count, deadline_ns, out, out_reason));
  if (!e) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_launch: NULL exec");
  if (!deps && dep_count)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_launch: NULL deps with a count of %u",
                     dep_count);
  if (flags & ~(uint32_t)(HSAD_GRAPH_NO_ROLLBACK | HSAD_GRAPH_SEQUENTIAL | HSAD_GRAPH_UNORDERED))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_launch: unknown flags 0x%x",
                     flags & ~(uint32_t)(HSAD_GRAPH_NO_ROLLBACK | HSAD_GRAPH_SEQUENTIAL |
                                         HSAD_GRAPH_UNORDERED));
  if (out_reason) *out_reason = HSAD_GRAPH_ROLLBACK_NONE;
  for (uint32_t qi = 0; qi < e->nq; qi++) { /* every check before anything is reserved */
    hsad_status_t s = hsad_queue_error(e->qs[qi].q);
    if (s) return s;
  }
  fu_deps_t dl;
  if (dep_count) {
    hsad_status_t s = collect_deps(deps, dep_count, &dl);
    if (s) return s;
  } else {
    dl.n = 0;
  }
  bool ordered = !(flags & HSAD_GRAPH_UNORDERED);
  /* Stream order over the whole exec: the previous launch's runs on the other queues are
   * dependencies of this launch's roots (a node of this launch must not overwrite what a node
   * of the previous launch on another queue still reads); its own queue's run is implied by
   * the BARRIER bit. One queue: nothing to add. */
  for (uint32_t qi = 0; ordered && e->nq > 1 && qi < e->nq; qi++)
    if (e->last[qi].queue) deps_merge(&dl, &e->last[qi]);
  char detail[160];
  if (flags & HSAD_GRAPH_SEQUENTIAL)
    return rollback(e, flags, HSAD_GRAPH_ROLLBACK_REQUESTED, &dl, deadline_ns, out, out_reason,
                    "HSAD_GRAPH_SEQUENTIAL");
  for (uint32_t qi = 0; qi < e->nq; qi++) {
    fu_queue_t *fq = &e->qs[qi];
    uint32_t pre = 0;
    for (uint32_t j = 0; fq->has_root && j < dl.n; j++)
      pre += dl.wait[j].queue != fq->q || !ordered; /* same queue: stream order implies it */
    fq->pre = pre;
    uint32_t size = hsad_queue_size(fq->q);
    if (fq->n + pre > size) {
      snprintf(detail, sizeof detail, "%u packets on queue %u, its ring holds %u", fq->n + pre,
               qi, size);
      return rollback(e, flags, HSAD_GRAPH_ROLLBACK_RING_SIZE, &dl, deadline_ns, out,
                      out_reason, detail);
    }
  }
  /* Reserve every queue's run first (the epoch numbers of producer points are then known, in
   * whichever direction the cross-queue edges run), then write and publish. A full ring is
   * waited for until the deadline, as hsad_kernel_dispatch waits (a loop of launches keeps
   * the rings full: rolling back there would make the steady state slow). A timeout turns
   * the runs already reserved into no-op packets (cancel_runs): nothing of the graph runs. */
  for (uint32_t qi = 0; qi < e->nq; qi++) {
    fu_queue_t *fq = &e->qs[qi];
    hsad_status_t s = hsad_submit_reserve_epochs(fq->q, fq->pre + fq->n, fq->npoints,
                                                 deadline_ns, &fq->first_id, &fq->first_epoch);
    if (s) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", hsad_last_error());
      cancel_runs(e, qi);
      return hsad_fail(s, "graph launch, queue %u of %u: %s%s", qi, e->nq, msg,
                       qi ? "; the runs reserved on the queues before it were cancelled (no-op "
                            "packets): nothing of the graph ran" : "");
    }
  }
  for (uint32_t qi = 0; qi < e->nq; qi++)
    e->qs[qi].point_value = HSAD_EPOCH_BASE - (int64_t)e->qs[qi].first_epoch + 1;
  for (uint32_t qi = 0; qi < e->nq; qi++) {
    fu_queue_t *fq = &e->qs[qi];
    hsad_queue_t *q = fq->q;
    hsad_submit_mark_t mark;
    bool mon = hsad_submit_monitored(q);
    if (mon) hsad_submit_monitor_begin(q, &mark);
    uint64_t first = fq->first_id + fq->pre;
    /* last to first, each body before its header: the run's first packet becomes valid last;
     * packets 1..n-1 in one span, or two where the ring wraps (the later span first) */
    uint8_t *const ring = fq->ring.packets;
    const uint64_t mask = fq->ring.mask, pos = first & mask;
    fu_pkt_t *const pkts = fq->pkts;
    const uint32_t n = fq->n;
    if (__builtin_expect(!fq->ncopy && !fq->profiling, 1)) {
      put_run_plain(fq, ring + (pos << 6), pos + n <= mask + 1 ? n : (uint32_t)(mask + 1 - pos));
    } else if (pos + n <= mask + 1) {
      put_span(e, fq, pkts + 1, pkts + n, ring + ((pos + 1) << 6), first + 1);
    } else {
      const uint32_t wrap = (uint32_t)(mask + 1 - pos); /* the packet in slot 0 */
      put_span(e, fq, pkts + wrap, pkts + n, ring, first + wrap);
      put_span(e, fq, pkts + 1, pkts + wrap, ring + ((pos + 1) << 6), first + 1);
    }
    /* stream order: the run's first packet has the BARRIER bit (ordered), else only when it
     * needs it for its own sake */
    uint8_t *slot0 = ring + ((first & mask) << 6);
    put_pkt(e, fq, pkts, slot0, first);
    hsad_aql_publish(slot0, pkts[0].word & ~(ordered ? 0u : fq->unordered_clear));
    /* launch dependencies ahead of the run: one barrier-value packet per queue waited on, the
     * first carrying the stream-order bit */
    const uint32_t value_word = hsad_aql_barrier_value_word(false);
    for (uint32_t j = 0, i = fq->pre; i > 0; j++) {
      if (ordered && dl.wait[j].queue == q) continue;
      i--;
      hsa_signal_t sig;
      hsa_signal_value_t lt;
      (void)hsad_completion_signal(&dl.wait[j], &sig, &lt); /* checked by collect_deps */
      uint8_t *slot = slot_of(fq, fq->first_id + i);
      hsad_aql_barrier_value_fill((hsa_amd_barrier_value_packet_t *)slot, sig.handle, lt, -1,
                                  HSA_SIGNAL_CONDITION_LT, 0, 0);
      hsad_aql_publish(slot, value_word |
                                 (i == 0 && ordered ? 1u << HSA_PACKET_HEADER_BARRIER : 0u));
    }
    hsad_submit_doorbell(q, first + fq->n - 1);
    if (mon) hsad_submit_monitor_close(&mark); /* one submit interval per queue's run */
    for (uint32_t i = 0; mon && i < fq->n; i++)
      if (fq->pkts[i].kind == FU_KERNEL) monitor_pkt(q, &fq->pkts[i], first + i, &mark);
    fu_last_set(e, qi, (hsad_completion_t){.queue = q, .epoch = fq->first_epoch + fq->npoints - 1,
                                            .packet_id = first + fq->n - 1});
    if (out) out[qi] = e->last[qi];
  }
  e->counters[HSAD_GRAPH_ROLLBACK_NONE]++;
  return HSAD_OK;
}

hsad_status_t hsad_graph_launch(hsad_graph_exec_t *e, uint32_t flags, uint64_t deadline_ns,
                                hsad_completion_t *out, hsad_graph_rollback_t *out_reason) {
  return hsad_graph_launch_after(e, flags, NULL, 0, deadline_ns, out, out_reason);
}

void hsad_graph_exec_counters(const hsad_graph_exec_t *e,
                              uint64_t out_counts[HSAD_GRAPH_ROLLBACK_COUNT]) {
  if (fu_exec_ops(e)) {
    fu_exec_ops(e)->counters(e, out_counts);
    return;
  }
  for (uint32_t i = 0; i < HSAD_GRAPH_ROLLBACK_COUNT; i++) out_counts[i] = e ? e->counters[i] : 0;
}

