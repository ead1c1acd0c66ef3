/* launch.c - launching execs: the fused submission, launch dependencies, cancelling, the
 * rollback to sequential submission (hsad_fusion.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusion/fusion_internal.h"

/* Copies packet p's body (bytes 4..63) and kernarg image into slot `id` with its launch-time
 * fields: the kernarg address, a barrier-value packet's producer point, the completion signal
 * (the epoch signal of an epoch point, a kernel's timestamp signal on a profiling queue). */
static inline void write_pkt(const hsad_graph_exec_t *e, const fu_queue_t *fq, const fu_pkt_t *p,
                             uint64_t id, uint64_t epoch_signal) {
  hsad_queue_t *q = fq->q;
  uint8_t *slot = hsad_submit_slot(q, id);
  memcpy(slot + 4, p->body + 4, 60);
  uint64_t completion = p->epoch ? epoch_signal : 0;
  if (p->kind == FU_KERNEL) {
    void *ka = hsad_submit_kernarg(q, id);
    if (p->ksize) memcpy(ka, p->image, p->ksize);
    ((hsa_kernel_dispatch_packet_t *)slot)->kernarg_address = ka;
    if (fq->profiling) completion = hsad_submit_timestamp_signal(q, id);
  } else if (p->kind == FU_BARRIER_VALUE) {
    const fu_queue_t *pq = &e->qs[p->wait_queue];
    hsa_amd_barrier_value_packet_t *bv = (hsa_amd_barrier_value_packet_t *)slot;
    bv->signal.handle = hsad_submit_epoch_signal(pq->q);
    bv->value = HSAD_EPOCH_BASE - (int64_t)(pq->first_epoch + p->wait_point) + 1;
  }
  memcpy(slot + 56, &completion, 8);
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
    const fu_queue_t *fq = &e->qs[qi];
    hsad_queue_t *q = fq->q;
    for (uint32_t d = e->dep_off[id]; d < e->dep_off[id + 1]; d++) {
      uint32_t p = e->dep_ids[d];
      if (e->node_q[p] == qi) continue;
      hsad_status_t s = hsad_completion_wait(&e->done[p], deadline_ns);
      if (s) return s;
    }
    const fu_pkt_t *p = &fq->pkts[e->node_pkt[id]];
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
    uint64_t esig = hsad_submit_epoch_signal(q);
    fu_pkt_t node = *p;
    node.epoch = m == 1 && own;
    write_pkt(e, fq, &node, pid, esig);
    /* the last packet is the epoch packet: the node itself, its last padding packet, or a
     * barrier-AND after a profiled kernel */
    for (uint32_t j = total - 1; j > 0; j--) {
      fu_pkt_t pad = j < m ? p[j] : (fu_pkt_t){.kind = FU_BARRIER_AND};
      pad.epoch = j == total - 1;
      pad.node = -1;
      write_pkt(e, fq, &pad, pid + j, esig);
      hsad_submit_publish(q, pid + j, pad_header(j == total - 1));
    }
    hsad_submit_publish(q, pid, p->word | (1u << HSA_PACKET_HEADER_BARRIER));
    hsad_submit_doorbell(q, pid + total - 1);
    if (mon && p->kind == FU_KERNEL) {
      hsad_submit_monitor_close(&mark);
      monitor_pkt(q, p, pid, &mark);
    }
    e->done[id] = (hsad_completion_t){.queue = q, .epoch = k, .packet_id = pid + total - 1};
    e->last[qi] = e->done[id];
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
    uint64_t esig = hsad_submit_epoch_signal(fq->q);
    for (uint32_t i = total; i-- > 0;) {
      bool point = i >= fq->pre && fq->pkts[i - fq->pre].epoch;
      fu_pkt_t nop = {.kind = FU_BARRIER_AND, .epoch = point};
      write_pkt(e, fq, &nop, fq->first_id + i, esig);
    }
    for (uint32_t i = total; i-- > 0;) {
      bool point = i >= fq->pre && fq->pkts[i - fq->pre].epoch;
      hsad_submit_publish(fq->q, fq->first_id + i, point ? barrier_header(true) : pad_header(false));
    }
    hsad_submit_doorbell(fq->q, fq->first_id + total - 1);
  }
}

hsad_status_t hsad_graph_launch_after(hsad_graph_exec_t *e, uint32_t flags,
                                      const hsad_completion_t *deps, uint32_t dep_count,
                                      uint64_t deadline_ns, hsad_completion_t *out,
                                      hsad_graph_rollback_t *out_reason) {
  if (!e || (!deps && dep_count))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_launch: NULL exec, or NULL deps with "
                     "a count of %u", dep_count);
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
    hsad_status_t s = hsad_submit_reserve_epochs(fq->q, fq->pre + fq->n, fq->points, fq->npoints,
                                                 fq->pre, deadline_ns, &fq->first_id,
                                                 &fq->first_epoch);
    if (s) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", hsad_last_error());
      cancel_runs(e, qi);
      return hsad_fail(s, "graph launch, queue %u of %u: %s%s", qi, e->nq, msg,
                       qi ? "; the runs reserved on the queues before it were cancelled (no-op "
                            "packets): nothing of the graph ran" : "");
    }
  }
  for (uint32_t qi = 0; qi < e->nq; qi++) {
    fu_queue_t *fq = &e->qs[qi];
    hsad_queue_t *q = fq->q;
    hsad_submit_mark_t mark;
    bool mon = hsad_submit_monitored(q);
    if (mon) hsad_submit_monitor_begin(q, &mark);
    uint64_t esig = hsad_submit_epoch_signal(q);
    uint64_t first = fq->first_id + fq->pre;
    uint32_t pre = 0;
    for (uint32_t j = 0; pre < fq->pre; j++) {
      if (ordered && dl.wait[j].queue == q) continue;
      hsa_signal_t sig;
      hsa_signal_value_t lt;
      (void)hsad_completion_signal(&dl.wait[j], &sig, &lt); /* checked by collect_deps */
      hsad_aql_barrier_value_fill((hsa_amd_barrier_value_packet_t *)hsad_submit_slot(q, fq->first_id + pre),
                                  sig.handle, lt, -1, HSA_SIGNAL_CONDITION_LT, 0, 0);
      pre++;
    }
    for (uint32_t i = 0; i < fq->n; i++) write_pkt(e, fq, &fq->pkts[i], first + i, esig);
    for (uint32_t i = fq->n; i-- > 1;) hsad_submit_publish(q, first + i, fq->pkts[i].word);
    /* stream order: the first packet published has the BARRIER bit (ordered), else none */
    const uint32_t value_word =
        HSAD_AQL_HEADER(HSA_PACKET_TYPE_VENDOR_SPECIFIC, 0, HSA_FENCE_SCOPE_SYSTEM,
                        HSA_FENCE_SCOPE_SYSTEM) |
        ((uint32_t)HSA_AMD_PACKET_TYPE_BARRIER_VALUE << 16);
    hsad_submit_publish(q, first, fq->pkts[0].word & ~(ordered ? 0u : fq->unordered_clear));
    for (uint32_t i = fq->pre; i-- > 0;)
      hsad_submit_publish(q, fq->first_id + i,
                          value_word | (i == 0 && ordered ? 1u << HSA_PACKET_HEADER_BARRIER : 0u));
    hsad_submit_doorbell(q, first + fq->n - 1);
    if (mon) hsad_submit_monitor_close(&mark); /* one submit interval per queue's run */
    for (uint32_t i = 0; mon && i < fq->n; i++)
      if (fq->pkts[i].kind == FU_KERNEL) monitor_pkt(q, &fq->pkts[i], first + i, &mark);
    e->last[qi] = (hsad_completion_t){.queue = q, .epoch = fq->first_epoch + fq->npoints - 1,
                                      .packet_id = first + fq->n - 1};
    if (out) out[qi] = e->last[qi];
  }
  e->counters[HSAD_GRAPH_ROLLBACK_NONE]++;
  return HSAD_OK;
}

hsad_status_t hsad_graph_launch(hsad_graph_exec_t *e, uint32_t flags, uint64_t deadline_ns,
                                hsad_completion_t *out, hsad_graph_rollback_t *out_reason) {
  return hsad_graph_launch_after(e, flags, NULL, 0, deadline_ns, out, out_reason);
}

const char *hsad_graph_rollback_name(hsad_graph_rollback_t r) {
  switch (r) {
  case HSAD_GRAPH_ROLLBACK_NONE: return "fused";
  case HSAD_GRAPH_ROLLBACK_REQUESTED: return "sequential requested";
  case HSAD_GRAPH_ROLLBACK_RING_SIZE: return "ring too small";
  case HSAD_GRAPH_ROLLBACK_RING_FULL: return "ring full until the deadline";
  case HSAD_GRAPH_ROLLBACK_QUEUE_CYCLE: return "cross-queue edges both ways";
  default: return "unknown";
  }
}

void hsad_graph_exec_counters(const hsad_graph_exec_t *e,
                              uint64_t out_counts[HSAD_GRAPH_ROLLBACK_COUNT]) {
  for (uint32_t i = 0; i < HSAD_GRAPH_ROLLBACK_COUNT; i++) out_counts[i] = e ? e->counters[i] : 0;
}

