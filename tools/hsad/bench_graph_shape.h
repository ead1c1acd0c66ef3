/* bench_graph_shape.h - the graphs of `hsad bench graph`, shared by hsad (C) and hsad-bench-hip
 * (HIP C++) so that both sides run and check the same nodes and edges.
 *
 * Every node is one order_record dispatch (kernels/order_record.cl; in HIP the same kernel as
 * hsad_bench_order_record): slots[node] = atomic_inc(counter), the ticket of the node. A launch
 * starts from counter = 0 and every slot = BG_NO_TICKET; afterwards every node must hold a
 * distinct ticket below the node count and every edge from -> to must see
 * ticket(from) < ticket(to). An edge whose consumer ran first is a violated edge: the path
 * ordered less than the graph asks (kfd-emu runs a run of dispatches without the BARRIER bit
 * last-first, so a missing order shows). Shapes (nodes are numbered in a topological order,
 * every dependency is an earlier node):
 *   chain10  10 nodes on lane 0, node i depends on node i - 1
 *   chain100 100 nodes the same way (per extra node on one queue: (chain100 - chain10) / 90)
 *   dag100   100 nodes on lanes 0 and 1 (a pseudo-random bit per node, node 0 on lane 0);
 *            node i > 0 depends on 1 .. min(i, 12) distinct nodes among the 24 before it
 *            (xorshift32, fixed seed BG_DAG_SEED): deterministic, 595 edges
 *   diamond  A (lane 0) -> C (lane 1) -> D (lane 0), and A -> B (lane 0) -> D: B runs parallel
 *            to C
 * Header-only (static inline), C11 and C++11; no allocation.
 */
#ifndef HSAD_BENCH_GRAPH_SHAPE_H
#define HSAD_BENCH_GRAPH_SHAPE_H

#include <stdint.h>
#include <string.h>

#define BG_MAX_NODES 100
#define BG_MAX_DEPS 12
#define BG_NSHAPES 4
#define BG_DAG_SEED 0x5eed1717u
#define BG_NO_TICKET 0xffffffffu

typedef struct bg_shape {
  const char *name;                       /* "chain10", "dag100", "diamond", "chain100" */
  uint32_t nodes, edges, lanes;
  uint8_t lane[BG_MAX_NODES];             /* 0 or 1 */
  uint8_t ndeps[BG_MAX_NODES];
  uint8_t dep[BG_MAX_NODES][BG_MAX_DEPS]; /* earlier nodes */
} bg_shape_t;

static const char *const bg_shape_names[BG_NSHAPES] = {"chain10", "dag100", "diamond",
                                                       "chain100"};

static inline uint32_t bg_xorshift(uint32_t *s) {
  uint32_t x = *s;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return *s = x;
}

static inline void bg_edge(bg_shape_t *s, uint32_t from, uint32_t to) {
  s->dep[to][s->ndeps[to]++] = (uint8_t)from;
  s->edges++;
}

/* Fills *out with shape `name`; 0, or -1 for an unknown name. */
static inline int bg_shape_build(const char *name, bg_shape_t *out) {
  memset(out, 0, sizeof *out);
  if (!strcmp(name, "chain10") || !strcmp(name, "chain100")) {
    out->nodes = name[5] == '1' && name[6] == '0' && name[7] == '0' ? 100 : 10;
    out->name = bg_shape_names[out->nodes == 100 ? 3 : 0];
    out->lanes = 1;
    for (uint32_t i = 1; i < out->nodes; i++) bg_edge(out, i - 1, i);
    return 0;
  }
  if (!strcmp(name, "diamond")) { /* A 0, B 1, C 2, D 3 */
    out->name = bg_shape_names[2];
    out->nodes = 4;
    out->lanes = 2;
    out->lane[2] = 1;
    bg_edge(out, 0, 1);
    bg_edge(out, 0, 2);
    bg_edge(out, 1, 3);
    bg_edge(out, 2, 3);
    return 0;
  }
  if (strcmp(name, "dag100")) return -1;
  out->name = bg_shape_names[1];
  out->nodes = 100;
  out->lanes = 2;
  uint32_t rng = BG_DAG_SEED;
  for (uint32_t i = 1; i < 100; i++) {
    out->lane[i] = (uint8_t)((bg_xorshift(&rng) >> 7) & 1u);
    uint32_t window = i < 24 ? i : 24, most = i < BG_MAX_DEPS ? i : BG_MAX_DEPS;
    uint32_t want = 1 + bg_xorshift(&rng) % most;
    while (out->ndeps[i] < want) {
      uint32_t from = i - 1 - bg_xorshift(&rng) % window, seen = 0;
      for (uint32_t d = 0; d < out->ndeps[i]; d++) seen |= out->dep[i][d] == from;
      if (!seen) bg_edge(out, from, i);
    }
  }
  return 0;
}

/* Checks one launch's tickets: returns the violated edges (an edge whose consumer took its
 * ticket first, or with an end that never ran) plus the nodes that did not run exactly once
 * (no ticket, a ticket out of range or taken twice, or counter != nodes). 0: as the graph asks. */
static inline uint32_t bg_check(const bg_shape_t *s, const uint32_t *slots, uint32_t counter) {
  uint32_t bad = 0;
  uint8_t taken[BG_MAX_NODES];
  memset(taken, 0, sizeof taken);
  for (uint32_t i = 0; i < s->nodes; i++) {
    if (slots[i] >= s->nodes || taken[slots[i]]) bad++;
    else taken[slots[i]] = 1;
  }
  if (counter != s->nodes && !bad) bad++;
  for (uint32_t to = 0; to < s->nodes; to++)
    for (uint32_t d = 0; d < s->ndeps[to]; d++) {
      uint32_t from = s->dep[to][d];
      if (slots[from] == BG_NO_TICKET || slots[to] == BG_NO_TICKET || slots[to] < slots[from])
        bad++;
    }
  return bad;
}

/* A node has a consumer on the other lane (the per-dispatch paths record an event for it). */
static inline int bg_cross_consumed(const bg_shape_t *s, uint32_t node) {
  for (uint32_t to = node + 1; to < s->nodes; to++)
    for (uint32_t d = 0; d < s->ndeps[to]; d++)
      if (s->dep[to][d] == node && s->lane[to] != s->lane[node]) return 1;
  return 0;
}

#endif /* HSAD_BENCH_GRAPH_SHAPE_H */
