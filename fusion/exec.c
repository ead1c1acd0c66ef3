/* exec.c - instantiating graphs into execs (packet layout, epoch points), moving an exec to
 * another queue, updating nodes in place (hsad_fusion.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusion/fusion_internal.h"

/* This thread's kernarg image of the node being checked (instantiate, update, set_queue; never
 * held across calls). */
static _Thread_local uint8_t fu_image[HSAD_KERNARG_SEGMENT_MAX];

const int64_t fu_never_below = INT64_MIN;

void hsad_graph_exec_destroy(hsad_graph_exec_t *e) {
  if (!e) return;
  if (fu_exec_ops(e)) {
    fu_exec_ops(e)->destroy(e);
    return;
  }
  /* The kernarg memory may be read by a launch still in flight: wait for the exec's last run on
   * each queue (10 s at most; a faulted queue counts as done), and keep the memory of a queue
   * whose run did not complete rather than free what a packet may still read. */
  bool *busy = e->last && e->qs ? calloc(e->nq, sizeof *busy) : NULL;
  for (uint32_t i = 0; busy && i < e->nq; i++)
    busy[i] = !fu_run_done(&e->qs[i], &e->last[i]) &&
              hsad_completion_wait(&e->last[i], hsad_now_ns() + 10000000000ull) != HSAD_OK &&
              !fu_run_done(&e->qs[i], &e->last[i]);
  for (uint32_t i = 0; e->qs && i < e->nq; i++) {
    for (uint32_t j = 0; j < e->qs[i].n; j++) {
      free(e->qs[i].pkts[j].image);
      free(e->qs[i].pkts[j].argd);
    }
    free(e->qs[i].pkts);
    free(e->qs[i].points);
    free(e->qs[i].values);
    if (!busy || !busy[i])
      hsad_submit_kernarg_free(hsad_queue_device(e->qs[i].q), e->qs[i].kmem, e->qs[i].kmem_bytes);
  }
  free(busy);
  free(e->qs);
  free(e->order);
  free(e->dep_off);
  free(e->dep_ids);
  free(e->launches);
  if (e->arg_mem)
    for (uint32_t i = 0; i < e->nn; i++) free(e->arg_mem[i]);
  free(e->arg_mem);
  free(e->done);
  free(e->last);
  free(e->node_q);
  free(e->node_pkt);
  free(e->node_point);
  free(e->node_fast);
  for (uint32_t i = 0; e->node_hold && i < e->nn; i++)
    hsad_submit_kernel_release(e->node_k[i], e->node_hold[i]);
  free(e->node_hold);
  free(e->node_k);
  free(e->node_op);
  free(e->names);
  for (uint32_t i = 0; i < e->nblits; i++) hsad_program_destroy(e->blits[i].program);
  free(e->blits);
  for (uint32_t i = 0; i < e->nold_kmem; i++)
    hsad_submit_kernarg_free(e->old_kmem[i].device, e->old_kmem[i].mem, e->old_kmem[i].bytes);
  free(e->old_kmem);
  free(e);
}

uint32_t hsad_graph_exec_queue_count(const hsad_graph_exec_t *e) {
  FU_BACKEND_EXEC(e, queue_count(e));
  return e ? e->nq : 0;
}
uint32_t hsad_graph_exec_packet_count(const hsad_graph_exec_t *e, uint32_t i) {
  return e && !fu_exec_ops(e) && i < e->nq ? e->qs[i].n : 0;
}
hsad_queue_t *hsad_graph_exec_queue(const hsad_graph_exec_t *e, uint32_t i) {
  FU_BACKEND_EXEC(e, queue(e, i));
  return e && i < e->nq ? e->qs[i].q : NULL;
}

uint32_t hsad_graph_exec_point_count(const hsad_graph_exec_t *e, uint32_t i) {
  return e && !fu_exec_ops(e) && i < e->nq ? e->qs[i].npoints : 0;
}

hsad_status_t hsad_graph_exec_point(const hsad_graph_exec_t *e, uint32_t qi, uint32_t point,
                                    uint32_t *out_packet_index) {
  if (fu_exec_ops(e)) return fu_backend_no_packets(e, "hsad_graph_exec_point");
  if (!e || !out_packet_index || qi >= e->nq || point >= e->qs[qi].npoints)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_exec_point: queue %u point %u out of "
                     "range", qi, point);
  *out_packet_index = e->qs[qi].points[point];
  return HSAD_OK;
}

hsad_status_t hsad_graph_exec_packet(const hsad_graph_exec_t *e, uint32_t qi, uint32_t i,
                                     uint8_t out[64], int32_t *out_node) {
  if (fu_exec_ops(e)) return fu_backend_no_packets(e, "hsad_graph_exec_packet");
  if (!e || !out || qi >= e->nq || i >= e->qs[qi].n)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_exec_packet: queue %u packet %u out "
                     "of range", qi, i);
  const fu_pkt_t *p = &e->qs[qi].pkts[i];
  memcpy(out, p->body, 64);
  memcpy(out, &p->word, 4);
  if (out_node) *out_node = p->node;
  return HSAD_OK;
}

/* Names the nodes of one cycle among the nodes not ordered by Kahn's algorithm. */
static hsad_status_t cycle_error(const hsad_graph_t *g, const uint32_t *indeg) {
  uint32_t n = g->n, start = 0;
  while (indeg[start] == 0) start++;
  uint32_t *seen = calloc(n, sizeof *seen);
  if (!seen) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "graph: cycle report");
  /* walk predecessors still unordered until a node repeats */
  uint32_t x = start, step = 1;
  while (!seen[x]) {
    seen[x] = step++;
    const fu_node_t *nd = &g->nodes[x];
    uint32_t nx = x;
    for (uint32_t i = 0; i < nd->ndeps; i++)
      if (indeg[nd->deps[i]]) { nx = nd->deps[i]; break; }
    x = nx;
  }
  /* x is on the cycle: list it in edge direction (producer -> consumer) */
  uint32_t len = 0, y = x;
  uint32_t *cyc = malloc(n * sizeof *cyc);
  if (!cyc) {
    free(seen);
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "graph: cycle report");
  }
  do {
    cyc[len++] = y;
    const fu_node_t *nd = &g->nodes[y];
    for (uint32_t i = 0; i < nd->ndeps; i++)
      if (indeg[nd->deps[i]] && seen[nd->deps[i]]) { y = nd->deps[i]; break; }
  } while (y != x && len < n);
  char msg[1024];
  int o = snprintf(msg, sizeof msg, "cycle:");
  /* cyc[] runs against the edges; print along them, starting at the lowest node id */
  uint32_t m = 0;
  for (uint32_t i = 1; i < len; i++) if (cyc[i] < cyc[m]) m = i;
  for (uint32_t j = 0; j < len && o < (int)sizeof msg; j++)
    o += snprintf(msg + o, sizeof msg - o, " %s ->", g->nodes[cyc[(m + len - j) % len]].name);
  if (o < (int)sizeof msg) snprintf(msg + o, sizeof msg - o, " %s", g->nodes[cyc[m]].name);
  free(seen);
  free(cyc);
  return hsad_fail(HSAD_ERR_GRAPH, "%s", msg);
}

static hsad_status_t node_fail(hsad_status_t s, const char *name) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", hsad_last_error());
  return hsad_fail(s, "node %s: %s", name, msg);
}

static fu_pkt_t *push_pkt(fu_queue_t *fq, uint32_t *cap) {
  if (fq->n == *cap) {
    uint32_t c = *cap ? 2 * *cap : 16;
    fu_pkt_t *p = aligned_alloc(64, c * sizeof *p);
    if (!p) return NULL;
    if (fq->n) memcpy(p, fq->pkts, fq->n * sizeof *p);
    free(fq->pkts);
    fq->pkts = p;
    *cap = c;
  }
  fu_pkt_t *p = &fq->pkts[fq->n++];
  memset(p, 0, sizeof *p);
  p->node = -1;
  return p;
}

/* The copy/fill kernels on `device`, loaded into the exec on first use. */
static hsad_status_t exec_blit(hsad_graph_exec_t *e, hsad_device_t *device, const fu_blit_t **out) {
  for (uint32_t i = 0; i < e->nblits; i++)
    if (e->blits[i].device == device) return *out = &e->blits[i], HSAD_OK;
  fu_blit_t *b = realloc(e->blits, (e->nblits + 1) * sizeof *b);
  if (!b) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "graph: copy/fill kernels");
  e->blits = b;
  hsad_status_t s = fu_blit_load(device, &b[e->nblits]);
  if (s) return s;
  *out = &b[e->nblits++];
  return HSAD_OK;
}

/* Makes the queue's last packet an epoch point (BARRIER bit; the epoch signal as completion
 * signal). A producer's point (`producer`: a node with a consumer on another queue) is the node
 * itself: a kernel or barrier node gets the BARRIER bit (it then starts when every earlier
 * packet of its queue completed, where a barrier-AND after it would hold every later packet
 * until it and those completed: the same drain, one packet less per producer, no copy of it per
 * launch); the last padding packet of a spanning kernel carries it. The run's last point (the
 * completion) is the last node when it has the BARRIER bit, else a barrier-AND after it, which
 * keeps the last nodes' overlap with each other. A kernel on a profiling queue carries its
 * timestamp signal: a barrier-AND carries the epoch. The point completes when every earlier
 * packet of the run did, so later same-queue dependencies on them are implied (*last_bar). */
static hsad_status_t add_point(fu_queue_t *fq, uint32_t *cap, int32_t *last_bar, bool producer) {
  fu_pkt_t *lp = &fq->pkts[fq->n - 1];
  bool bar = (lp->word >> HSA_PACKET_HEADER_BARRIER) & 1;
  bool node = lp->kind == FU_KERNEL ? !fq->profiling : lp->kind == FU_BARRIER_AND && !lp->pad;
  if (lp->pad) {
    lp->word = pad_header(true);
  } else if (node && (bar || producer || fq->n == 1)) {
    lp->word |= 1u << HSA_PACKET_HEADER_BARRIER; /* a producer, or the run's first packet: it
                                                    has the stream-order bit anyway */
  } else {
    lp = push_pkt(fq, cap);
    if (!lp) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "graph: epoch packet");
    lp->kind = FU_BARRIER_AND;
    lp->word = hsad_aql_barrier_fill((hsa_barrier_and_packet_t *)lp->body, NULL, 0,
                                     barrier_header(true));
  }
  uint32_t *pts = realloc(fq->points, (fq->npoints + 1) * sizeof *pts);
  if (!pts) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "graph: %u epoch points", fq->npoints + 1);
  fq->points = pts;
  lp->epoch = true;
  pts[fq->npoints++] = fq->n - 1;
  *last_bar = (int32_t)(fq->n - 1);
  return HSAD_OK;
}

void fu_seal(const hsad_graph_exec_t *e, const fu_queue_t *fq, fu_pkt_t *p) {
  const uint32_t invalid = HSA_PACKET_TYPE_INVALID << HSA_PACKET_HEADER_TYPE;
  memcpy(p->body, &invalid, 4);
  uint64_t completion = p->epoch ? fq->ring.epoch_signal : 0;
  p->fix &= FU_FIX_COPY;
  if (p->kind == FU_KERNEL) {
    hsa_kernel_dispatch_packet_t *k = (hsa_kernel_dispatch_packet_t *)p->body;
    k->kernarg_address = (p->fix & FU_FIX_COPY) ? NULL : p->karg[p->cur];
    p->epoch_value = fq->ring.epoch_value;
    p->below = (p->fix & FU_FIX_COPY) ? &fu_never_below : &fq->done_below;
    if (fq->profiling) p->fix |= FU_FIX_STAMP; /* never an epoch point (add_point) */
  } else if (p->kind == FU_BARRIER_VALUE) {
    hsa_amd_barrier_value_packet_t *bv = (hsa_amd_barrier_value_packet_t *)p->body;
    bv->signal.handle = e->qs[p->wait_queue].ring.epoch_signal;
    p->wait_value = &e->qs[p->wait_queue].point_value;
    p->fix |= FU_FIX_VALUE;
  }
  memcpy(p->body + 56, &completion, 8);
}

/* Bytes of one prepublished version of a kernarg segment of ksize bytes. */
static size_t karg_stride(uint32_t ksize) { return ksize > 64 ? (ksize + 63) & ~(size_t)63 : 64; }

/* Allocates queue qi's kernarg memory on its device (two versions per kernel packet) and
 * prepublishes each image in both; fills the packets' karg, cur, slots and argd (what a
 * same-shape update compares, from the stored launch). The old memory, if any, is the
 * caller's. */
static hsad_status_t prepublish(hsad_graph_exec_t *e, uint32_t qi) {
  fu_queue_t *fq = &e->qs[qi];
  size_t bytes = 0;
  for (uint32_t i = 0; i < fq->n; i++)
    if (fq->pkts[i].kind == FU_KERNEL) bytes += 2 * karg_stride(fq->pkts[i].ksize);
  fq->kmem = NULL;
  fq->kmem_bytes = 0;
  fq->ncopy = 0; /* no packet in ring-copy mode below */
  if (!fq->values) { /* the packets and the exec's queues never change after instantiate */
    uint32_t nv = 0;
    for (uint32_t i = 1; i < fq->n; i++) nv += fq->pkts[i].kind == FU_BARRIER_VALUE;
    if (!(fq->values = calloc(nv ? nv : 1, sizeof *fq->values)))
      return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "graph: %u barrier-value packets", nv);
    for (uint32_t i = 1; i < fq->n; i++)
      if (fq->pkts[i].kind == FU_BARRIER_VALUE)
        fq->values[fq->nvalues++] =
            (fu_value_t){.index = i, .wait_point = fq->pkts[i].wait_point,
                         .wait_value = &e->qs[fq->pkts[i].wait_queue].point_value};
  }
  if (!bytes) return HSAD_OK;
  void *mem;
  hsad_status_t s = hsad_submit_kernarg_alloc(hsad_queue_device(fq->q), bytes, &mem);
  if (s) return s;
  fq->kmem = mem;
  fq->kmem_bytes = bytes;
  uint8_t *at = mem;
  for (uint32_t i = 0; i < fq->n; i++) {
    fu_pkt_t *p = &fq->pkts[i];
    if (p->kind != FU_KERNEL) continue;
    size_t stride = karg_stride(p->ksize);
    p->karg[0] = at;
    p->karg[1] = at + stride;
    at += 2 * stride;
    if (p->ksize) {
      memcpy(p->karg[0], p->image, p->ksize);
      memcpy(p->karg[1], p->image, p->ksize);
    }
    p->cur = 0;
    p->prev = (hsad_completion_t){0};
    p->fix &= (uint8_t)~FU_FIX_COPY;
    p->queue_index = qi;
    p->fq = fq;
    p->last = &e->last[qi];
    const hsad_kernarg_plan_t *plan =
        hsad_kernel_kernarg_plan(hsad_device_kernel_desc(e->node_k[p->node])->codeobj_kernel);
    p->slots = plan->explicit_args;
    p->ptr8 = true;
    for (uint32_t a = 0; a < plan->explicit_count; a++)
      if (p->slots[a].size != 8 && p->slots[a].kind == HSAD_VK_GLOBAL_BUFFER) p->ptr8 = false;
    const hsad_launch_t *kl = &e->launches[p->node];
    if (!p->argd && kl->arg_count && !(p->argd = calloc(kl->arg_count, sizeof *p->argd)))
      return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "node %s: %u arguments", e->names[p->node],
                       kl->arg_count);
    bool fast = p->ptr8 && e->node_op[p->node] == FU_OP_KERNEL, sig_ok = true;
    uint32_t val4 = 0;
    for (uint32_t a = 0; a < kl->arg_count; a++) {
      const hsad_karg_t *x = &kl->args[a];
      fu_argd_t *d = &p->argd[a];
      uint32_t tag_type; /* tag and type, the hsad_karg_t's first word */
      memcpy(&tag_type, x, 4);
      bool value = x->tag == HSAD_KARG_BYTES || x->tag == HSAD_KARG_SCALAR;
      *d = (fu_argd_t){.offset = p->slots[a].offset, .tag = (uint8_t)x->tag,
                       .size = (uint16_t)(value ? x->size : x->tag == HSAD_KARG_POINTER ? 8 : 0),
                       .key = tag_type, .mask = UINT32_MAX};
      if (x->tag == HSAD_KARG_POINTER) {
        d->put = FU_PUT_PTR8;
        d->nonnull = 1;
      } else if (value && (x->size == 8 || x->size == 4)) {
        /* a SCALAR holds its value where a pointer does: 8 bytes are written as one */
        bool inline_value = x->tag == HSAD_KARG_SCALAR;
        d->put = x->size == 8 ? (inline_value ? FU_PUT_PTR8 : FU_PUT_VAL8)
                              : (inline_value ? FU_PUT_IN4 : FU_PUT_VAL4);
        d->nonnull = inline_value;
        d->key |= (uint64_t)x->size << 32;
        d->mask = UINT64_MAX;
      }
      fast = fast && d->put != FU_PUT_NONE;
      if (d->put == FU_PUT_VAL4) val4 |= 1u << a;
      else if (d->put != FU_PUT_PTR8 || x->tag != HSAD_KARG_POINTER) sig_ok = false;
    }
    p->sig = sig_ok && kl->arg_count >= 1 && kl->arg_count <= 4 ? FU_SIG(kl->arg_count, val4) : 0;
    p->launch = kl;
    e->node_fast[p->node] = fast ? p : NULL;
  }
  return HSAD_OK;
}

hsad_status_t hsad_graph_instantiate(const hsad_graph_t *g, hsad_queue_t *const *lq,
                                     uint32_t lane_count, hsad_graph_exec_t **out) {
  hsad_status_t s0 = fu_instantiate_args_check(g, lq, out);
  if (s0) return s0;
  uint32_t n = g->n;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t lane = g->nodes[i].lane;
    if (lane >= lane_count || !lq[lane])
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "node %s: lane %u has no queue (%u lanes "
                       "given)", g->nodes[i].name, lane, lane_count);
  }
  if (fu_graph_foreign(g, lq)) return fu_backend_instantiate(g, lq, lane_count, out);
  hsad_status_t s = HSAD_OK;
  hsad_graph_exec_t *e = calloc(1, sizeof *e);
  uint32_t *indeg = calloc(n, sizeof *indeg), *order = malloc(n * sizeof *order);
  uint32_t *level = calloc(n, sizeof *level), *pos = malloc(n * sizeof *pos);
  uint32_t *qcap = NULL;
  int32_t *qof = malloc(HSAD_GRAPH_MAX_LANES * sizeof *qof);
  uint8_t *need_point = NULL;
  uint32_t *waited = NULL, *want = NULL;
  int32_t *last_bar = NULL;
  if (!e || !indeg || !order || !level || !pos || !qof) {
    s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_graph_instantiate: %u nodes", n);
    goto done;
  }
  e->nn = n;
  /* Topological order, level by level (Kahn; a node's level is 1 + its deepest dependency),
   * lower node id first within a level: independent nodes sit together. */
  for (uint32_t i = 0; i < n; i++) indeg[i] = g->nodes[i].ndeps;
  uint32_t done_n = 0;
  for (uint32_t lv = 0; done_n < n; lv++) {
    uint32_t start = done_n;
    for (uint32_t i = 0; i < n; i++)
      if (indeg[i] == 0 && level[i] == lv) order[done_n++] = i, indeg[i] = UINT32_MAX;
    if (done_n == start) break;
    for (uint32_t i = 0; i < n; i++) {
      if (indeg[i] == UINT32_MAX || indeg[i] == 0) continue;
      for (uint32_t d = 0; d < g->nodes[i].ndeps; d++) {
        uint32_t p = g->nodes[i].deps[d];
        bool now = false;
        for (uint32_t j = start; j < done_n; j++) now |= order[j] == p;
        if (now) indeg[i]--;
      }
      if (indeg[i] == 0) level[i] = lv + 1;
    }
  }
  if (done_n < n) {
    for (uint32_t i = 0; i < n; i++) if (indeg[i] == UINT32_MAX) indeg[i] = 0;
    s = cycle_error(g, indeg);
    goto done;
  }
  /* Queues in order of first use. */
  for (uint32_t i = 0; i < HSAD_GRAPH_MAX_LANES; i++) qof[i] = -1;
  e->qs = calloc(n, sizeof *e->qs);
  qcap = calloc(n, sizeof *qcap);
  e->node_q = malloc(n * sizeof *e->node_q);
  e->node_pkt = malloc(n * sizeof *e->node_pkt);
  e->node_point = malloc(n * sizeof *e->node_point);
  e->node_k = calloc(n, sizeof *e->node_k);
  e->node_op = calloc(n, sizeof *e->node_op);
  e->names = malloc(n * sizeof *e->names);
  need_point = calloc(n, 1);
  if (!e->qs || !qcap || !e->node_q || !e->node_pkt || !e->node_point || !e->node_k || !e->node_op ||
      !e->names || !need_point) {
    s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_graph_instantiate: %u nodes", n);
    goto done;
  }
  for (uint32_t oi = 0; oi < n; oi++) {
    const fu_node_t *x = &g->nodes[order[oi]];
    if (qof[x->lane] >= 0) continue;
    uint32_t qi = 0;
    while (qi < e->nq && e->qs[qi].q != lq[x->lane]) qi++;
    if (qi == e->nq) {
      e->qs[e->nq].q = lq[x->lane];
      e->qs[e->nq++].profiling = hsad_submit_profiling(lq[x->lane]);
    }
    qof[x->lane] = (int32_t)qi;
  }
  uint32_t nq = e->nq;
  /* A node with a consumer on another queue gets an epoch point right after it: the consumer's
   * barrier-value packet waits for exactly that point, not for the producer queue's run. */
  for (uint32_t i = 0; i < n; i++) {
    e->node_point[i] = UINT32_MAX;
    for (uint32_t d = 0; d < g->nodes[i].ndeps; d++) {
      uint32_t p = g->nodes[i].deps[d];
      if (qof[g->nodes[p].lane] != qof[g->nodes[i].lane]) need_point[p] = 1;
    }
  }
  waited = calloc((size_t)nq * nq, sizeof *waited); /* [c * nq + p]: point + 1 c waits for */
  want = calloc(nq, sizeof *want);                  /* per queue: point + 1 a node needs */
  last_bar = malloc(nq * sizeof *last_bar);
  if (!waited || !want || !last_bar) {
    s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_graph_instantiate: %u queues", nq);
    goto done;
  }
  for (uint32_t i = 0; i < nq; i++) last_bar[i] = -1;
  uint8_t *const image = fu_image;
  for (uint32_t oi = 0; oi < n && !s; oi++) {
    uint32_t id = order[oi];
    const fu_node_t *x = &g->nodes[id];
    uint32_t qi = (uint32_t)qof[x->lane];
    fu_queue_t *fq = &e->qs[qi];
    fq->has_root |= x->ndeps == 0;
    /* one barrier-value per producer queue, on the latest point among x's producers there
     * (the points of a queue complete in order), unless an earlier wait of this queue on that
     * queue already covers it */
    bool need_bar = false;
    for (uint32_t d = 0; d < x->ndeps; d++) {
      uint32_t p = x->deps[d];
      uint32_t pq = (uint32_t)qof[g->nodes[p].lane];
      if (pq == qi) {
        if ((int32_t)pos[p] >= last_bar[qi]) need_bar = true;
        continue;
      }
      uint32_t point = e->node_point[p]; /* laid out already: p comes first in the order */
      if (want[pq] < point + 1) want[pq] = point + 1;
    }
    for (uint32_t pq = 0; pq < nq && !s; pq++) {
      if (want[pq] <= waited[qi * nq + pq]) {
        want[pq] = 0;
        continue;
      }
      waited[qi * nq + pq] = want[pq];
      fu_pkt_t *bv = push_pkt(fq, &qcap[qi]);
      if (!bv) { s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "node %s", x->name); break; }
      bv->kind = FU_BARRIER_VALUE;
      bv->wait_queue = pq;
      bv->wait_point = want[pq] - 1;
      want[pq] = 0;
      bv->word = hsad_aql_barrier_value_fill(
          (hsa_amd_barrier_value_packet_t *)bv->body, 0, 0, -1, HSA_SIGNAL_CONDITION_LT, 0,
          hsad_aql_barrier_value_header(false));
    }
    if (s) break;
    fu_pkt_t *pk = push_pkt(fq, &qcap[qi]);
    if (!pk) { s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "node %s", x->name); break; }
    pos[id] = fq->n - 1;
    if (need_bar) last_bar[qi] = (int32_t)pos[id];
    pk->node = (int32_t)id;
    e->node_q[id] = qi;
    e->node_pkt[id] = pos[id];
    const hsad_device_kernel_t *kern = x->kernel;
    if (x->op == FU_OP_COPY || x->op == FU_OP_FILL) {
      const fu_blit_t *b = NULL;
      s = exec_blit(e, hsad_queue_device(fq->q), &b);
      if (s) { s = node_fail(s, x->name); break; }
      kern = x->op == FU_OP_COPY ? b->copy : b->fill;
    }
    e->node_k[id] = kern;
    e->node_op[id] = x->op;
    memcpy(e->names[id], x->name, HSAD_GRAPH_NAME_MAX);
    if (x->op == FU_OP_BARRIER) {
      pk->kind = FU_BARRIER_AND;
      pk->word = hsad_aql_barrier_fill((hsa_barrier_and_packet_t *)pk->body, NULL, 0,
                                       barrier_header(need_bar));
    } else {
      hsad_aql_dispatch_t d;
      s = hsad_submit_check(fq->q, kern, &x->launch, &d, image);
      if (s) { s = node_fail(s, x->name); break; }
      pk->kind = FU_KERNEL;
      pk->ksize = hsad_device_kernel_desc(kern)->kernarg_segment_size;
      pk->image = pk->ksize ? malloc(pk->ksize) : NULL;
      if (pk->ksize && !pk->image) { s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "node %s", x->name); break; }
      if (pk->ksize) memcpy(pk->image, image, pk->ksize);
      pk->word = hsad_aql_dispatch_fill((hsa_kernel_dispatch_packet_t *)pk->body, &d,
                                        kernel_header(x->launch.flags, need_bar));
      pk->span = hsad_submit_kernarg_span(fq->q, pk->ksize);
      /* a kernarg segment spanning m blocks: m - 1 padding packets own the blocks after it */
      for (uint32_t j = 1, m = pk->span; j < m && !s; j++) {
        fu_pkt_t *pad = push_pkt(fq, &qcap[qi]);
        if (!pad) { s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "node %s", x->name); break; }
        pad->kind = FU_BARRIER_AND;
        pad->pad = true;
        pad->word = hsad_aql_barrier_fill((hsa_barrier_and_packet_t *)pad->body, NULL, 0,
                                          pad_header(false));
      }
      if (s) break;
    }
    if (need_point[id]) {
      s = add_point(fq, &qcap[qi], &last_bar[qi], true);
      if (s) break;
      e->node_point[id] = fq->npoints - 1;
    }
  }
  if (s) goto done;
  /* Each queue's last packet is an epoch point: the completion of its run. Its first packet
   * gets the BARRIER bit: the run starts when everything earlier on the queue completed
   * (stream order; HSAD_GRAPH_UNORDERED publishes it without). */
  for (uint32_t qi = 0; qi < nq && !s; qi++) {
    fu_queue_t *fq = &e->qs[qi];
    if (!fq->pkts[fq->n - 1].epoch) s = add_point(fq, &qcap[qi], &last_bar[qi], false);
    fq->unordered_clear = (fq->pkts[0].word & (1u << HSA_PACKET_HEADER_BARRIER)) ? 0u
                          : 1u << HSA_PACKET_HEADER_BARRIER;
    fq->pkts[0].word |= 1u << HSA_PACKET_HEADER_BARRIER;
  }
  if (s) goto done;
  /* What the sequential path and rebinding need: the order, the deps, the launches. */
  {
    uint32_t total = 0;
    for (uint32_t i = 0; i < n; i++) total += g->nodes[i].ndeps;
    e->order = malloc(n * sizeof *e->order);
    e->dep_off = malloc((n + 1) * sizeof *e->dep_off);
    e->dep_ids = malloc((total ? total : 1) * sizeof *e->dep_ids);
    e->launches = calloc(n, sizeof *e->launches);
    e->arg_mem = calloc(n, sizeof *e->arg_mem);
    e->done = calloc(n, sizeof *e->done);
    e->last = calloc(nq, sizeof *e->last);
    if (!e->order || !e->dep_off || !e->dep_ids || !e->launches || !e->arg_mem ||
        !e->done || !e->last) {
      s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_graph_instantiate: %u nodes", n);
      goto done;
    }
    memcpy(e->order, order, n * sizeof *order);
    total = 0;
    for (uint32_t i = 0; i < n; i++) {
      const fu_node_t *x = &g->nodes[i];
      e->dep_off[i] = total;
      if (x->ndeps) memcpy(e->dep_ids + total, x->deps, x->ndeps * sizeof *x->deps);
      total += x->ndeps;
      if (x->op == FU_OP_BARRIER) continue;
      e->launches[i] = x->launch;
      size_t vb = 0;
      for (uint32_t a = 0; a < x->launch.arg_count; a++)
        if (x->args[a].tag == HSAD_KARG_BYTES && x->args[a].bytes) vb += x->args[a].size;
      size_t ab = x->launch.arg_count * sizeof(hsad_karg_t);
      if (!ab) continue;
      uint8_t *m = malloc(ab + vb);
      if (!m) {
        s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "node %s: arguments", x->name);
        goto done;
      }
      e->arg_mem[i] = m;
      hsad_karg_t *args = (hsad_karg_t *)m;
      uint8_t *v = m + ab;
      for (uint32_t a = 0; a < x->launch.arg_count; a++) {
        args[a] = x->args[a];
        if (args[a].tag == HSAD_KARG_BYTES && args[a].bytes) {
          memcpy(v, args[a].bytes, args[a].size);
          args[a].bytes = v;
          v += args[a].size;
        }
      }
      e->launches[i].args = args;
    }
    e->dep_off[n] = total;
  }
  /* Kernarg segments prepublished, bodies sealed: a launch copies 64 bytes per packet. */
  if (!s && !(e->node_fast = calloc(n, sizeof *e->node_fast)))
    s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_graph_instantiate: %u nodes", n);
  for (uint32_t qi = 0; qi < nq && !s; qi++) {
    s = prepublish(e, qi);
    hsad_submit_ring(e->qs[qi].q, &e->qs[qi].ring);
    fu_last_set(e, qi, (hsad_completion_t){0});
  }
  for (uint32_t qi = 0; qi < nq && !s; qi++)
    for (uint32_t i = 0; i < e->qs[qi].n; i++) fu_seal(e, &e->qs[qi], &e->qs[qi].pkts[i]);
done:
  free(indeg); free(order); free(level); free(pos); free(qcap); free(qof);
  free(need_point); free(waited); free(want); free(last_bar);
  if (!s && !(e->node_hold = calloc(n, sizeof *e->node_hold)))
    s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_graph_instantiate: %u nodes", n);
  if (s) {
    hsad_graph_exec_destroy(e);
    return s;
  }
  /* the caller's kernels (not the exec's own copy / fill kernels) are held: their programs
   * outlive the exec (hsad_program_destroy refuses until it is destroyed) */
  for (uint32_t i = 0; i < n; i++)
    if (e->node_op[i] == FU_OP_KERNEL) e->node_hold[i] = hsad_submit_kernel_hold(e->node_k[i]);
  *out = e;
  return HSAD_OK;
}

/* The node's kernarg segment as the latest update left it: the image in ring-copy mode, else
 * the version in use. */
static inline const uint8_t *latest(const fu_pkt_t *p) {
  return (p->fix & FU_FIX_COPY) ? p->image : p->karg[p->cur];
}

/* The stored launch's argument values from the latest segment (updates of the same shape write
 * only the segment). */
static void launch_from_latest(hsad_launch_t *kl, const fu_pkt_t *p) {
  hsad_karg_t *ka = (hsad_karg_t *)kl->args;
  const uint8_t *seg = latest(p);
  for (uint32_t a = 0; a < kl->arg_count; a++)
    if (ka[a].tag == HSAD_KARG_BYTES)
      memcpy((void *)ka[a].bytes, seg + p->slots[a].offset, ka[a].size);
    else if (ka[a].tag == HSAD_KARG_SCALAR)
      memcpy(&ka[a].scalar, seg + p->slots[a].offset, ka[a].size);
    else if (ka[a].tag == HSAD_KARG_POINTER)
      memcpy(&ka[a].pointer, seg + p->slots[a].offset, 8);
}

hsad_status_t hsad_graph_exec_set_queue(hsad_graph_exec_t *e, uint32_t qi, hsad_queue_t *q) {
  FU_BACKEND_EXEC(e, set_queue(e, qi, q));
  if (!e || !q)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_exec_set_queue: NULL %s",
                     e ? "queue" : "exec");
  if (qi >= e->nq)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_exec_set_queue: queue index %u not "
                     "below the exec's %u queues", qi, e->nq);
  if (hsad_queue_device(q) != hsad_queue_device(e->qs[qi].q))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_exec_set_queue: the new queue is "
                     "on another device than queue %u", qi);
  for (uint32_t j = 0; j < e->nq; j++)
    if (j != qi && e->qs[j].q == q)
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_exec_set_queue: the new queue is "
                       "already the exec's queue %u", j);
  fu_queue_t *fq = &e->qs[qi];
  if (hsad_submit_profiling(q) != fq->profiling)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_exec_set_queue: the new queue is %sa "
                     "profiling queue and queue %u is %s (where epoch packets go is laid out at "
                     "instantiate); instantiate the graph on it instead",
                     fq->profiling ? "not " : "", qi, fq->profiling ? "one" : "not");
  /* Stream order across the move: the exec's later runs on the new queue, and its roots on the
   * other queues (which wait for e->last[qi], reset below), come after its runs on the old
   * queue. A faulted queue counts as done (fu_run_done). */
  if (!fu_run_done(fq, &e->last[qi]) &&
      hsad_completion_wait(&e->last[qi], hsad_now_ns() + 10000000000ull) != HSAD_OK &&
      !fu_run_done(fq, &e->last[qi]))
    return hsad_fail(HSAD_ERR_TIMEOUT, "hsad_graph_exec_set_queue: the exec's last run on queue "
                     "%u (epoch %llu) did not complete within 10 s; nothing changed", qi,
                     (unsigned long long)e->last[qi].epoch);
  uint8_t *const image = fu_image;
  for (uint32_t i = 0; i < fq->n; i++) /* updates of the same shape wrote the segments only */
    if (fq->pkts[i].kind == FU_KERNEL) launch_from_latest(&e->launches[fq->pkts[i].node], &fq->pkts[i]);
  /* check all first, then patch: on error nothing changed */
  for (int pass = 0; pass < 2; pass++)
    for (uint32_t i = 0; i < fq->n; i++) {
      fu_pkt_t *p = &fq->pkts[i];
      if (p->kind != FU_KERNEL) continue;
      hsad_aql_dispatch_t d;
      hsad_status_t s = hsad_submit_check(q, e->node_k[p->node], &e->launches[p->node], &d, image);
      if (s) return node_fail(s, e->names[p->node]);
      uint32_t m = hsad_submit_kernarg_span(q, p->ksize);
      if (m != p->span)
        return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_exec_set_queue: node %s: its "
                         "kernarg segment of %u bytes takes %u slots on the new queue (%u-byte "
                         "kernarg blocks), %u on queue %u; instantiate the graph on it instead",
                         e->names[p->node], p->ksize, m, hsad_submit_kernarg_block(q), p->span,
                         qi);
      if (pass == 0) continue;
      p->word = hsad_aql_dispatch_fill((hsa_kernel_dispatch_packet_t *)p->body, &d,
                                       (uint16_t)(p->word & 0xffff));
      if (p->ksize) memcpy(p->image, image, p->ksize);
    }
  /* New kernarg memory for the rebuilt images: packets of earlier launches may still read the
   * old one on the old queue (kept until the exec is destroyed; the exec no longer waits on
   * the old queue, which may be destroyed). */
  struct fu_old_kmem *old = realloc(e->old_kmem, (e->nold_kmem + 1) * sizeof *old);
  if (!old) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_graph_exec_set_queue: queue %u", qi);
  e->old_kmem = old;
  struct fu_old_kmem was = {hsad_queue_device(fq->q), fq->kmem, fq->kmem_bytes};
  hsad_queue_t *from = fq->q;
  fq->q = q;
  hsad_status_t s = prepublish(e, qi);
  if (s) {
    fq->kmem = was.mem;
    fq->kmem_bytes = was.bytes;
    fq->q = from;
    return s; /* the images are rebuilt for q but fq keeps the old memory: set_queue again */
  }
  if (was.mem) e->old_kmem[e->nold_kmem++] = was;
  hsad_submit_ring(q, &fq->ring);
  fu_last_set(e, qi, (hsad_completion_t){0});
  for (uint32_t j = 0; j < e->nq; j++)
    for (uint32_t i = 0; i < e->qs[j].n; i++) fu_seal(e, &e->qs[j], &e->qs[j].pkts[i]);
  return HSAD_OK;
}

static const char *const fu_op_name[] = {"kernel", "barrier", "copy", "fill"};

/* Node `node` of `op` (hsad_graph_exec_update*), or the error naming what it is. */
static hsad_status_t update_target(const char *fn, const hsad_graph_exec_t *e, uint32_t node,
                                   uint8_t op) {
  hsad_status_t s = HSAD_NULL_ARGS(fn, {e, "exec"});
  if (s) return s;
  if (node >= e->nn)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: node %u is not a node of the exec (%u "
                     "nodes)", fn, node, e->nn);
  if (e->node_op[node] != op)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: node %s is a %s node, not a %s node", fn,
                     e->names[node], fu_op_name[e->node_op[node]], fu_op_name[op]);
  return HSAD_OK;
}

static hsad_status_t update_node(hsad_graph_exec_t *e, uint32_t node,
                                        const hsad_launch_t *l);

hsad_status_t hsad_graph_exec_update_copy(hsad_graph_exec_t *e, uint32_t node, void *dst,
                                          const void *src, size_t size) {
  FU_BACKEND_EXEC(e, update_copy(e, node, dst, src, size));
  hsad_status_t s = update_target("hsad_graph_exec_update_copy", e, node, FU_OP_COPY);
  if (!s) s = fu_copy_check("hsad_graph_exec_update_copy", dst, src, size);
  if (s) return s;
  fu_blit_args_t v = {.bytes = size};
  hsad_launch_t l = fu_blit_launch(&v, false, dst, src);
  return update_node(e, node, &l);
}

hsad_status_t hsad_graph_exec_update_fill(hsad_graph_exec_t *e, uint32_t node, void *dst,
                                          uint32_t pattern, uint32_t width, size_t count) {
  FU_BACKEND_EXEC(e, update_fill(e, node, dst, pattern, width, count));
  fu_blit_args_t v = {.pattern = pattern, .width = width};
  hsad_status_t s = update_target("hsad_graph_exec_update_fill", e, node, FU_OP_FILL);
  if (!s) s = fu_fill_check("hsad_graph_exec_update_fill", dst, pattern, width, count, &v.bytes);
  if (s) return s;
  hsad_launch_t l = fu_blit_launch(&v, true, dst, NULL);
  return update_node(e, node, &l);
}

/* True when launch l has the stored launch kl's shape: geometry, fence flag, argument tags and
 * sizes (p->argd), LDS sizes, pointers in 8-byte slots. Then only argument values change: the
 * kernarg segment differs from the latest one in the explicit arguments' bytes alone (hidden
 * arguments follow the geometry), and every check of hsad_kernel_dispatch passed before. */
static inline bool same_shape(const hsad_launch_t *kl, const hsad_launch_t *l, const fu_pkt_t *p) {
  if (memcmp(&l->dims, &kl->dims, 7 * sizeof(uint32_t)) || l->arg_count != kl->arg_count ||
      (l->flags & HSAD_LAUNCH_FENCE_AGENT) != kl->flags || !p->ptr8 || (l->arg_count && !l->args))
    return false;
  for (uint32_t a = 0; a < l->arg_count; a++) {
    const hsad_karg_t *x = &l->args[a];
    const fu_argd_t *d = &p->argd[a];
    uint32_t tag_type;
    memcpy(&tag_type, x, 4);
    if (tag_type != (uint32_t)d->key) return false; /* tag and type */
    if (x->tag == HSAD_KARG_BYTES ? x->size != d->size || !x->bytes
        : x->tag == HSAD_KARG_SCALAR ? x->size != d->size
                                     : x->tag == HSAD_KARG_LDS && x->lds_bytes != kl->args[a].lds_bytes)
      return false;
  }
  return true;
}

/* Writes launch l's explicit argument values (same shape) into segment seg. */
static inline void put_values(uint8_t *seg, const hsad_launch_t *l, const fu_argd_t *argd) {
  for (uint32_t a = 0; a < l->arg_count; a++) {
    const hsad_karg_t *x = &l->args[a];
    uint8_t *at = seg + argd[a].offset;
    if (x->tag == HSAD_KARG_POINTER) memcpy(at, &x->pointer, 8);
    else if (x->tag == HSAD_KARG_SCALAR) memcpy(at, &x->scalar, x->size);
    else if (x->tag != HSAD_KARG_BYTES) continue;
    else if (x->size == 4) memcpy(at, x->bytes, 4);
    else if (x->size == 8) memcpy(at, x->bytes, 8);
    else memcpy(at, x->bytes, x->size);
  }
}

/* Where an update's segment goes (update_node), and writes it there: into the version in use
 * when every run of the exec on the queue completed; else into the other version once the run
 * that last read it completed (the body then points at it); else into the image, in ring-copy
 * mode (launches copy it into their ring slot's kernarg block until both versions are free
 * again). `full`: the whole new segment (else NULL: l's explicit argument values over the
 * latest segment). */
static __attribute__((noinline)) void update_place(hsad_graph_exec_t *e, uint32_t qi,
                                                   fu_pkt_t *p, const hsad_launch_t *l,
                                                   const uint8_t *full) {
  fu_queue_t *fq = &e->qs[qi];
  uint8_t *to;
  const uint8_t *from = full ? full : latest(p);
  if (p->fix & FU_FIX_COPY) {
    to = p->image;
    if (fu_run_done(fq, &p->copy_until)) { /* both versions free again */
      fu_copy_mode(fq, p, false);
      p->prev = (hsad_completion_t){0};
      to = p->karg[p->cur];
    }
  } else if (fu_run_done(fq, &e->last[qi])) {
    to = p->karg[p->cur];
  } else if (fu_run_done(fq, &p->prev)) {
    p->cur ^= 1;
    p->prev = e->last[qi];
    to = p->karg[p->cur];
  } else {
    fu_copy_mode(fq, p, true);
    p->copy_until = e->last[qi];
    to = p->image;
  }
  if (to != from && p->ksize) memcpy(to, from, p->ksize);
  if (!full) put_values(to, l, p->argd);
  fu_seal(e, fq, p); /* the body's kernarg address follows cur (none in ring-copy mode) */
}

/* An update whose shape differs: every check of hsad_kernel_dispatch, then the whole segment
 * and the body's geometry. */
static __attribute__((noinline)) hsad_status_t update_slow(hsad_graph_exec_t *e, uint32_t node,
                                                           const hsad_launch_t *l) {
  uint32_t qi = e->node_q[node];
  fu_queue_t *fq = &e->qs[qi];
  fu_pkt_t *p = &fq->pkts[e->node_pkt[node]];
  hsad_launch_t *kl = &e->launches[node];
  hsad_aql_dispatch_t d;
  hsad_status_t s = hsad_submit_check(fq->q, e->node_k[node], l, &d, fu_image);
  if (s) return node_fail(s, e->names[node]);
  uint16_t header = (uint16_t)(p->word & 0xffff);
  p->word = hsad_aql_dispatch_fill((hsa_kernel_dispatch_packet_t *)p->body, &d, header);
  memcpy(&kl->dims, &l->dims, 7 * sizeof(uint32_t));
  hsad_karg_t *ka = (hsad_karg_t *)kl->args;
  for (uint32_t a = 0; a < kl->arg_count; a++)
    if (ka[a].tag == HSAD_KARG_LDS) ka[a].lds_bytes = l->args[a].lds_bytes;
  update_place(e, qi, p, l, fu_image);
  launch_from_latest(kl, p);
  return HSAD_OK;
}

/* Makes launch l node `node`'s launch for later launches, with no allocation; on error nothing
 * changed. Same shape (same_shape): only the explicit arguments' bytes are written over the
 * latest segment, in place when every run of the exec on the node's queue completed (the
 * common case: one load decides), else where update_place says; another shape: update_slow. */
static __attribute__((noinline)) hsad_status_t update_node(hsad_graph_exec_t *e, uint32_t node,
                                                           const hsad_launch_t *l) {
  uint32_t qi = e->node_q[node];
  fu_queue_t *fq = &e->qs[qi];
  fu_pkt_t *p = &fq->pkts[e->node_pkt[node]];
  if (__builtin_expect(!same_shape(&e->launches[node], l, p), 0)) return update_slow(e, node, l);
  if (__builtin_expect(!(p->fix & FU_FIX_COPY) && fu_run_done(fq, &e->last[qi]), 1))
    put_values(p->karg[p->cur], l, p->argd);
  else
    update_place(e, qi, p, l, NULL);
  return HSAD_OK;
}

/* hsad_graph_exec_update's error and general path: every other case goes to update_node. */
static __attribute__((noinline)) hsad_status_t update_general(hsad_graph_exec_t *e, uint32_t node,
                                                              const hsad_launch_t *l) {
  hsad_status_t s = update_target("hsad_graph_exec_update", e, node, FU_OP_KERNEL);
  if (!s && !l) s = hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_exec_update: NULL launch");
  return s ? s : update_node(e, node, l);
}

_Static_assert(offsetof(hsad_karg_t, type) == 2 && offsetof(hsad_karg_t, size) == 4,
               "hsad_graph_exec_update compares an hsad_karg_t's tag, type and size as one word");
_Static_assert(offsetof(hsad_launch_t, grid) == 4 && offsetof(hsad_launch_t, block) == 16 &&
                   offsetof(hsad_launch_t, flags) == offsetof(hsad_launch_t, arg_count) + 4,
               "hsad_graph_exec_update compares a launch's geometry and count as words");

_Static_assert(offsetof(fu_argd_t, offset) == 0 && offsetof(fu_argd_t, key) == 8,
               "fu_put_by_sig's descriptor layout");

/* The fast path's arguments (node_fast): compares each hsad_karg_t's tag and size with the
 * node's (one masked 8-byte compare; a value's bytes must not be NULL), with no branch, then
 * writes the values into seg. False, with nothing written, when one differs. Inlined with a
 * constant n, the loops unroll (hsad_graph_exec_update). */
static inline __attribute__((always_inline)) bool put_fast(uint8_t *seg, const hsad_karg_t *x,
                                                           const fu_argd_t *d, uint32_t n) {
  uint64_t diff = 0;
  _Pragma("GCC unroll 8") for (uint32_t a = 0; a < n; a++)
    diff |= ((fu_load8(&x[a]) & d[a].mask) ^ d[a].key) | (uint64_t)((x[a].pointer | d[a].nonnull) == 0);
  if (diff) return false;
  _Pragma("GCC unroll 8") for (uint32_t a = 0; a < n; a++) {
    uint8_t *at = seg + d[a].offset;
    if (d[a].put == FU_PUT_PTR8) memcpy(at, &x[a].pointer, 8);
    else if (d[a].put == FU_PUT_VAL8) memcpy(at, x[a].bytes, 8);
    else memcpy(at, d[a].put == FU_PUT_IN4 ? (const void *)&x[a].scalar : x[a].bytes, 4);
  }
  return true;
}

/* hsad_graph_exec_update's fast path for a node without a signature (fu_pkt_t.sig 0: more
 * than 4 arguments, or an 8-byte value): put_fast, out of line, else update_general. */
static __attribute__((noinline)) hsad_status_t update_fast_n(hsad_graph_exec_t *e, uint32_t node,
                                                             const hsad_launch_t *l, uint8_t *seg,
                                                             const fu_argd_t *d, uint32_t n) {
  return put_fast(seg, l->args, d, n) ? HSAD_OK : update_general(e, node, l);
}

/* hsad_graph_exec_update's path for a launch of the stored one's shape (geometry, argument
 * count and fence flag compared as four 8-byte words and one 4-byte one) whose arguments are
 * pointers and 4- or 8-byte values (node_fast): when every run of the exec on the node's queue
 * completed and the node is not in ring-copy mode (one compare: fu_pkt_t.below), the values
 * are checked and written into the version in use, by code made for the node's signature
 * (fu_put_by_sig: 1 to 4 pointers and 4-byte values) or put_fast. Anything else takes
 * update_general, which leaves the exec as it was on error. */
hsad_status_t hsad_graph_exec_update(hsad_graph_exec_t *e, uint32_t node, const hsad_launch_t *l) {
  fu_pkt_t *p;
  FU_BACKEND_EXEC(e, update(e, node, l));
  if (__builtin_expect(!e || node >= e->nn || !l || !(p = e->node_fast[node]), 0)) goto general;
  const hsad_launch_t *kl = p->launch;
  const uint8_t *lb = (const uint8_t *)l, *kb = (const uint8_t *)kl;
  uint32_t g4, k4;
  memcpy(&g4, lb + 24, 4);
  memcpy(&k4, kb + 24, 4);
  const uint64_t count_flags = UINT32_MAX | (uint64_t)HSAD_LAUNCH_FENCE_AGENT << 32;
  uint64_t diff = (fu_load8(lb) ^ fu_load8(kb)) | (fu_load8(lb + 8) ^ fu_load8(kb + 8)) |
                  (fu_load8(lb + 16) ^ fu_load8(kb + 16)) | (g4 ^ k4) |
                  ((fu_load8(&l->arg_count) & count_flags) ^ fu_load8(&kl->arg_count));
  const hsad_karg_t *x = l->args;
  const uint32_t n = kl->arg_count;
  if (diff || (n && !x) ||
      !(__atomic_load_n(p->epoch_value, __ATOMIC_ACQUIRE) < *p->below))
    goto general;
  uint8_t *seg = p->karg[p->cur];
  const fu_argd_t *d = p->argd;
  int ok = fu_put_by_sig(p->sig, seg, x, d, sizeof *d);
  if (ok < 0) return update_fast_n(e, node, l, seg, d, n);
  if (__builtin_expect(ok, 1)) return HSAD_OK;
general:
  return update_general(e, node, l);
}
