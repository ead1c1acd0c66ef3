/* graph.c - recording, instantiating, launching and updating kernel graphs (hsad_fusion.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusion/fusion_internal.h"
#include "hsa-dispatch/hsad_submit.h"

/* What a node does. Copy and fill nodes are dispatches of the library's kernels (blit.c),
 * resolved on the device of their lane's queue at instantiate. */
enum { FU_OP_KERNEL, FU_OP_BARRIER, FU_OP_COPY, FU_OP_FILL };

typedef struct fu_node {
  char name[HSAD_GRAPH_NAME_MAX];
  uint32_t lane;
  uint8_t op;
  const hsad_device_kernel_t *kernel;  /* FU_OP_KERNEL only */
  hsad_launch_t launch;                /* args point into args/vals below */
  hsad_karg_t *args;
  uint8_t *vals;
  uint32_t *deps;
  uint32_t ndeps, capdeps;
} fu_node_t;

struct hsad_graph {
  uint32_t flags;
  fu_node_t *nodes;
  uint32_t n, cap;
  int64_t lane_last[HSAD_GRAPH_MAX_LANES];  /* capture: last node of each lane, -1 none */
  uint32_t *names;                /* open addressing by name hash: node index + 1, 0 empty */
  uint32_t names_cap;             /* a power of two, at most half full (0: none yet) */
};

/* FNV-1a of a node name. */
static uint32_t name_hash(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++) h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

/* The node named `nm`, or -1: one probe sequence, so a graph of n nodes records in O(n). */
static int64_t name_find(const hsad_graph_t *g, const char *nm) {
  if (!g->names_cap) return -1;
  for (uint32_t i = name_hash(nm) & (g->names_cap - 1);; i = (i + 1) & (g->names_cap - 1)) {
    uint32_t e = g->names[i];
    if (!e) return -1;
    if (!strcmp(g->nodes[e - 1].name, nm)) return e - 1;
  }
}

/* Makes room for one more name (rehashing at half full). False: out of memory. */
static bool name_reserve(hsad_graph_t *g) {
  if (2 * (g->n + 1) <= g->names_cap) return true;
  uint32_t cap = g->names_cap ? 2 * g->names_cap : 32;
  uint32_t *t = calloc(cap, sizeof *t);
  if (!t) return false;
  for (uint32_t k = 0; k < g->n; k++) {
    uint32_t i = name_hash(g->nodes[k].name) & (cap - 1);
    while (t[i]) i = (i + 1) & (cap - 1);
    t[i] = k + 1;
  }
  free(g->names);
  g->names = t;
  g->names_cap = cap;
  return true;
}

static void name_insert(hsad_graph_t *g, uint32_t node) {
  uint32_t i = name_hash(g->nodes[node].name) & (g->names_cap - 1);
  while (g->names[i]) i = (i + 1) & (g->names_cap - 1);
  g->names[i] = node + 1;
}

hsad_status_t hsad_graph_create(uint32_t flags, hsad_graph_t **out) {
  if (!out || (flags & ~(uint32_t)HSAD_GRAPH_CAPTURE))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_create: NULL out_graph or unknown "
                     "flags 0x%x", flags);
  hsad_graph_t *g = calloc(1, sizeof *g);
  if (!g) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_graph_create: %zu bytes", sizeof *g);
  g->flags = flags;
  for (uint32_t i = 0; i < HSAD_GRAPH_MAX_LANES; i++) g->lane_last[i] = -1;
  *out = g;
  return HSAD_OK;
}

void hsad_graph_destroy(hsad_graph_t *g) {
  if (!g) return;
  for (uint32_t i = 0; i < g->n; i++) {
    free(g->nodes[i].args);
    free(g->nodes[i].vals);
    free(g->nodes[i].deps);
  }
  free(g->nodes);
  free(g->names);
  free(g);
}

static hsad_status_t node_dep(fu_node_t *x, uint32_t from) {
  for (uint32_t i = 0; i < x->ndeps; i++)
    if (x->deps[i] == from) return HSAD_OK;
  if (x->ndeps == x->capdeps) {
    uint32_t c = x->capdeps ? 2 * x->capdeps : 4;
    uint32_t *d = realloc(x->deps, c * sizeof *d);
    if (!d) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "graph node %s: %u dependencies", x->name, c);
    x->deps = d;
    x->capdeps = c;
  }
  x->deps[x->ndeps++] = from;
  return HSAD_OK;
}

static hsad_status_t add_node(const char *fn, hsad_graph_t *g, const char *name, uint32_t lane,
                              uint8_t op, const hsad_device_kernel_t *k, const hsad_launch_t *l,
                              const uint32_t *deps, uint32_t ndeps, uint32_t *out) {
  if (!g || (!deps && ndeps) || lane >= HSAD_GRAPH_MAX_LANES)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_add: NULL graph, NULL deps with a "
                     "count, or lane %u not below %u", lane, (unsigned)HSAD_GRAPH_MAX_LANES);
  for (uint32_t i = 0; i < ndeps; i++)
    if (deps[i] >= g->n)
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_add: dependency %u is node %u, "
                       "not recorded yet (%u nodes)", i, deps[i], g->n);
  /* names are unique (as stored: truncated, or the default node<id>), so messages name one node */
  char nm[HSAD_GRAPH_NAME_MAX];
  if (name) snprintf(nm, sizeof nm, "%s", name);
  else snprintf(nm, sizeof nm, "node%u", g->n);
  int64_t same = name_find(g, nm);
  if (same >= 0) {
    uint32_t i = (uint32_t)same;
    if (name && strlen(name) >= sizeof nm)
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: node name '%s' (truncated to %u bytes: "
                       "'%s') is the name of node %u; node names are unique", fn, name,
                       (unsigned)sizeof nm - 1, nm, i);
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: node name '%s'%s is the name of node %u; "
                     "node names are unique", fn, nm, name ? "" : " (the default for a NULL "
                     "name)", i);
  }
  if (!name_reserve(g)) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_graph_add: %u names", g->n);
  if (g->n == g->cap) {
    uint32_t c = g->cap ? 2 * g->cap : 16;
    fu_node_t *nn = realloc(g->nodes, c * sizeof *nn);
    if (!nn) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_graph_add: %u nodes", c);
    g->nodes = nn;
    g->cap = c;
  }
  fu_node_t *x = &g->nodes[g->n];
  memset(x, 0, sizeof *x);
  memcpy(x->name, nm, sizeof nm);
  x->lane = lane;
  x->op = op;
  x->kernel = k;
  if (l) {
    x->launch = *l;
    x->launch.flags &= HSAD_LAUNCH_FENCE_AGENT;
    size_t vb = 0;
    for (uint32_t i = 0; i < l->arg_count; i++)
      if (l->args[i].tag == HSAD_KARG_BYTES && l->args[i].bytes) vb += l->args[i].size;
    x->args = l->arg_count ? malloc(l->arg_count * sizeof *x->args) : NULL;
    x->vals = vb ? malloc(vb) : NULL;
    if ((l->arg_count && !x->args) || (vb && !x->vals)) {
      free(x->args);
      free(x->vals);
      return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_graph_add: node %s arguments", x->name);
    }
    vb = 0;
    for (uint32_t i = 0; i < l->arg_count; i++) {
      x->args[i] = l->args[i];
      if (l->args[i].tag == HSAD_KARG_BYTES && l->args[i].bytes) {
        memcpy(x->vals + vb, l->args[i].bytes, l->args[i].size);
        x->args[i].bytes = x->vals + vb;
        vb += l->args[i].size;
      }
    }
    x->launch.args = x->args;
  }
  hsad_status_t s = HSAD_OK;
  for (uint32_t i = 0; i < ndeps && !s; i++) s = node_dep(x, deps[i]);
  if (!s && (g->flags & HSAD_GRAPH_CAPTURE) && g->lane_last[lane] >= 0)
    s = node_dep(x, (uint32_t)g->lane_last[lane]);
  if (s) {
    free(x->args);
    free(x->vals);
    free(x->deps);
    return s;
  }
  g->lane_last[lane] = g->n;
  if (out) *out = g->n;
  g->n++;
  name_insert(g, g->n - 1);
  return HSAD_OK;
}

hsad_status_t hsad_graph_add_kernel(hsad_graph_t *g, const char *name, uint32_t lane,
                                    const hsad_device_kernel_t *k, const hsad_launch_t *l,
                                    const uint32_t *deps, uint32_t ndeps, uint32_t *out) {
  if (!k || !l)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_add_kernel: NULL kernel or launch");
  if (l->arg_count && !l->args)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_add_kernel: NULL args with count %u",
                     l->arg_count);
  return add_node("hsad_graph_add_kernel", g, name, lane, FU_OP_KERNEL, k, l, deps, ndeps, out);
}

hsad_status_t hsad_graph_add_barrier(hsad_graph_t *g, const char *name, uint32_t lane,
                                     const uint32_t *deps, uint32_t ndeps, uint32_t *out) {
  return add_node("hsad_graph_add_barrier", g, name, lane, FU_OP_BARRIER, NULL, NULL, deps, ndeps,
                  out);
}

/* The launch of a copy node (args: dst, src, bytes) or a fill node (dst, pattern, width,
 * bytes); values point into v. */
typedef struct fu_blit_args {
  hsad_karg_t args[4];
  uint64_t bytes;
  uint32_t pattern, width;
} fu_blit_args_t;

static hsad_launch_t blit_launch(fu_blit_args_t *v, bool fill, void *dst, const void *src) {
  uint32_t block, items = fu_blit_items(v->bytes, &block);
  v->args[0] = (hsad_karg_t)HSAD_KARG_PTR(dst);
  if (fill) {
    v->args[1] = (hsad_karg_t)HSAD_KARG_VAL(v->pattern);
    v->args[2] = (hsad_karg_t)HSAD_KARG_VAL(v->width);
    v->args[3] = (hsad_karg_t)HSAD_KARG_VAL(v->bytes);
  } else {
    v->args[1] = (hsad_karg_t)HSAD_KARG_PTR(src);
    v->args[2] = (hsad_karg_t)HSAD_KARG_VAL(v->bytes);
  }
  return (hsad_launch_t){.dims = 1, .grid = {items, 1, 1}, .block = {block, 1, 1},
                         .args = v->args, .arg_count = fill ? 4 : 3};
}

/* Checks a copy's operands (memcpy semantics: no overlap). */
static hsad_status_t copy_check(const char *fn, const void *dst, const void *src, size_t size) {
  if (!dst || !src || !size)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: NULL dst or src, or size 0 (dst %p, src %p, "
                     "%zu bytes)", fn, dst, src, size);
  if (size > FU_BLIT_MAX_BYTES)
    return hsad_fail(HSAD_ERR_RANGE, "%s: %zu bytes; a copy node moves at most %llu (16 bytes "
                     "per work-item, 2^32 - 1 work-items)", fn, size, FU_BLIT_MAX_BYTES);
  uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
  if (d < s + size && s < d + size)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: dst %p and src %p overlap over %zu bytes; "
                     "copy nodes have memcpy semantics", fn, dst, src, size);
  return HSAD_OK;
}

/* Checks a fill's operands; *out_bytes = count x width. */
static hsad_status_t fill_check(const char *fn, const void *dst, uint32_t pattern, uint32_t width,
                                size_t count, uint64_t *out_bytes) {
  if (!dst || !count || (width != 1 && width != 2 && width != 4))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: NULL dst, count 0 or width %u (1, 2 or 4 "
                     "bytes)", fn, width);
  if (width < 4 && pattern >> (8 * width))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: pattern 0x%x does not fit in %u byte%s",
                     fn, pattern, width, width == 1 ? "" : "s");
  if (count > FU_BLIT_MAX_BYTES / width)
    return hsad_fail(HSAD_ERR_RANGE, "%s: %zu elements of %u bytes; a fill node writes at most "
                     "%llu bytes (16 bytes per work-item, 2^32 - 1 work-items)", fn, count, width,
                     FU_BLIT_MAX_BYTES);
  *out_bytes = (uint64_t)count * width;
  return HSAD_OK;
}

hsad_status_t hsad_graph_add_copy(hsad_graph_t *g, const char *name, uint32_t lane, void *dst,
                                  const void *src, size_t size, const uint32_t *deps,
                                  uint32_t ndeps, uint32_t *out) {
  hsad_status_t s = copy_check("hsad_graph_add_copy", dst, src, size);
  if (s) return s;
  fu_blit_args_t v = {.bytes = size};
  hsad_launch_t l = blit_launch(&v, false, dst, src);
  return add_node("hsad_graph_add_copy", g, name, lane, FU_OP_COPY, NULL, &l, deps, ndeps, out);
}

hsad_status_t hsad_graph_add_fill(hsad_graph_t *g, const char *name, uint32_t lane, void *dst,
                                  uint32_t pattern, uint32_t width, size_t count,
                                  const uint32_t *deps, uint32_t ndeps, uint32_t *out) {
  fu_blit_args_t v = {.pattern = pattern, .width = width};
  hsad_status_t s = fill_check("hsad_graph_add_fill", dst, pattern, width, count, &v.bytes);
  if (s) return s;
  hsad_launch_t l = blit_launch(&v, true, dst, NULL);
  return add_node("hsad_graph_add_fill", g, name, lane, FU_OP_FILL, NULL, &l, deps, ndeps, out);
}

hsad_status_t hsad_graph_add_edge(hsad_graph_t *g, uint32_t from, uint32_t to) {
  if (!g || from >= g->n || to >= g->n)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_add_edge: node %u -> %u: the graph "
                     "has %u nodes", from, to, g ? g->n : 0);
  return node_dep(&g->nodes[to], from);
}

/* ---- exec ---------------------------------------------------------------------------------- */

enum { FU_KERNEL, FU_BARRIER_AND, FU_BARRIER_VALUE };

/* This thread's kernarg image of the node being checked (instantiate, update, set_queue; never
 * held across calls). */
static _Thread_local uint8_t fu_image[HSAD_KERNARG_SEGMENT_MAX];

typedef struct fu_pkt {
  _Alignas(64) uint8_t body[64];  /* bytes 4..63 are copied; launch-time fields patched */
  uint32_t word;                  /* header | setup << 16 */
  uint8_t kind;
  bool epoch;                     /* an epoch point: BARRIER bit, the epoch signal at launch */
  bool pad;                       /* kernarg padding after a kernel (hsad_queue.h step 4) */
  uint32_t ksize;                 /* kernel: kernarg bytes */
  uint8_t *image;                 /* kernel: kernarg image (exec-owned) */
  uint32_t wait_queue;            /* barrier-value: producer queue index */
  uint32_t wait_point;            /* barrier-value: the producer queue's epoch point index */
  int32_t node;                   /* -1: a packet of the exec's own */
  uint32_t span;                  /* kernel: slots it takes (1 + its padding packets) */
} fu_pkt_t;

typedef struct fu_queue {
  hsad_queue_t *q;
  fu_pkt_t *pkts;
  uint32_t n;
  uint32_t *points;               /* packet indices of the epoch points, increasing; the last
                                     is n - 1 (the run's completion) */
  uint32_t npoints;
  uint32_t unordered_clear;       /* bits HSAD_GRAPH_UNORDERED clears from packet 0's word: its
                                     stream-order BARRIER bit, unless it is needed there (the
                                     packet has it for a dependency or carries an epoch) */
  bool has_root;                  /* holds a node without dependencies: launch deps wait here */
  bool profiling;                 /* kernel packets carry timestamp signals, never the epoch */
  /* the current launch */
  uint32_t pre;                   /* launch-dependency packets ahead of the run */
  uint64_t first_id, first_epoch;
} fu_queue_t;

struct hsad_graph_exec {
  uint32_t nq, nn;
  uint32_t *order;                /* nodes in topological order */
  uint32_t *dep_off, *dep_ids;    /* node i's deps: dep_ids[dep_off[i] .. dep_off[i+1]) */
  hsad_launch_t *launches;        /* kernel nodes: the launch (args exec-owned), for rebinding */
  void **arg_mem;                 /* per node: its args and values (one block) */
  hsad_completion_t *done;        /* sequential path: per node */
  hsad_completion_t *last;        /* per queue: the completion of the previous launch's run */
  uint64_t counters[HSAD_GRAPH_ROLLBACK_COUNT];
  fu_queue_t *qs;                 /* in order of first use by a node in topological order */
  uint32_t *node_q, *node_pkt;    /* node -> (queue index, packet index) */
  uint32_t *node_point;           /* node -> epoch point index on its queue (UINT32_MAX: none) */
  const hsad_device_kernel_t **node_k;
  uint8_t *node_op;               /* FU_OP_* */
  char (*names)[HSAD_GRAPH_NAME_MAX];
  fu_blit_t *blits;               /* copy/fill kernels, one per device that runs such nodes */
  uint32_t nblits;
};

void hsad_graph_exec_destroy(hsad_graph_exec_t *e) {
  if (!e) return;
  for (uint32_t i = 0; e->qs && i < e->nq; i++) {
    for (uint32_t j = 0; j < e->qs[i].n; j++) free(e->qs[i].pkts[j].image);
    free(e->qs[i].pkts);
    free(e->qs[i].points);
  }
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
  free(e->node_k);
  free(e->node_op);
  free(e->names);
  for (uint32_t i = 0; i < e->nblits; i++) hsad_program_destroy(e->blits[i].program);
  free(e->blits);
  free(e);
}

uint32_t hsad_graph_exec_queue_count(const hsad_graph_exec_t *e) { return e ? e->nq : 0; }
uint32_t hsad_graph_exec_packet_count(const hsad_graph_exec_t *e, uint32_t i) {
  return e && i < e->nq ? e->qs[i].n : 0;
}
hsad_queue_t *hsad_graph_exec_queue(const hsad_graph_exec_t *e, uint32_t i) {
  return e && i < e->nq ? e->qs[i].q : NULL;
}

uint32_t hsad_graph_exec_point_count(const hsad_graph_exec_t *e, uint32_t i) {
  return e && i < e->nq ? e->qs[i].npoints : 0;
}

hsad_status_t hsad_graph_exec_point(const hsad_graph_exec_t *e, uint32_t qi, uint32_t point,
                                    uint32_t *out_packet_index) {
  if (!e || !out_packet_index || qi >= e->nq || point >= e->qs[qi].npoints)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_exec_point: queue %u point %u out of "
                     "range", qi, point);
  *out_packet_index = e->qs[qi].points[point];
  return HSAD_OK;
}

hsad_status_t hsad_graph_exec_packet(const hsad_graph_exec_t *e, uint32_t qi, uint32_t i,
                                     uint8_t out[64], int32_t *out_node) {
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

static uint16_t kernel_header(uint32_t flags, bool barrier) {
  uint32_t scope = (flags & HSAD_LAUNCH_FENCE_AGENT) ? HSA_FENCE_SCOPE_AGENT : HSA_FENCE_SCOPE_SYSTEM;
  return HSAD_AQL_HEADER(HSA_PACKET_TYPE_KERNEL_DISPATCH, barrier ? 1u : 0u, scope, scope);
}
/* Kernarg padding: no dependencies, no BARRIER bit and no fences (orders nothing); as a
 * queue's epoch packet, a plain barrier-AND (BARRIER bit, system fences). */
static uint16_t pad_header(bool epoch) {
  return epoch ? HSAD_AQL_HEADER(HSA_PACKET_TYPE_BARRIER_AND, 1, HSA_FENCE_SCOPE_SYSTEM,
                                 HSA_FENCE_SCOPE_SYSTEM)
               : HSAD_AQL_HEADER(HSA_PACKET_TYPE_BARRIER_AND, 0, HSA_FENCE_SCOPE_NONE,
                                 HSA_FENCE_SCOPE_NONE);
}
static uint16_t barrier_header(bool barrier) {
  return HSAD_AQL_HEADER(HSA_PACKET_TYPE_BARRIER_AND, barrier ? 1u : 0u, HSA_FENCE_SCOPE_SYSTEM,
                         HSA_FENCE_SCOPE_SYSTEM);
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

/* Makes the queue's last packet an epoch point (BARRIER bit; the epoch signal at launch): a
 * kernel packet that has the BARRIER bit (not on a profiling queue, whose kernel packets carry
 * timestamp signals), a barrier node that has it, the run's first kernel packet (it gets the
 * BARRIER bit, which stream order gives it anyway), or the last padding packet of a spanning
 * kernel; else a barrier-AND follows (keeping the node's overlap with independent nodes). It completes when every earlier packet of the run did,
 * so later same-queue dependencies on earlier packets are implied (*last_bar). */
static hsad_status_t add_point(fu_queue_t *fq, uint32_t *cap, int32_t *last_bar) {
  fu_pkt_t *lp = &fq->pkts[fq->n - 1];
  bool bar = (lp->word >> HSA_PACKET_HEADER_BARRIER) & 1;
  if (lp->pad) {
    lp->word = pad_header(true);
  } else if (fq->n == 1 && lp->kind == FU_KERNEL && !fq->profiling) {
    lp->word |= 1u << HSA_PACKET_HEADER_BARRIER; /* the run's first packet: it has the stream-
                                                    order bit anyway (and keeps it unordered) */
  } else if (!bar || lp->kind == FU_BARRIER_VALUE || (lp->kind == FU_KERNEL && fq->profiling)) {
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

hsad_status_t hsad_graph_instantiate(const hsad_graph_t *g, hsad_queue_t *const *lq,
                                     uint32_t lane_count, hsad_graph_exec_t **out) {
  if (!g || !lq || !out || g->n == 0)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_instantiate: NULL argument or empty "
                     "graph");
  uint32_t n = g->n;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t lane = g->nodes[i].lane;
    if (lane >= lane_count || !lq[lane])
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "node %s: lane %u has no queue (%u lanes "
                       "given)", g->nodes[i].name, lane, lane_count);
  }
  hsad_status_t s = HSAD_OK;
  hsad_graph_exec_t *e = calloc(1, sizeof *e);
  uint32_t *indeg = calloc(n, sizeof *indeg), *order = malloc(n * sizeof *order);
  uint32_t *level = calloc(n, sizeof *level), *pos = malloc(n * sizeof *pos);
  uint32_t *qcap = NULL;
  int32_t *qof = malloc(HSAD_GRAPH_MAX_LANES * sizeof *qof);
  uint8_t *need_point = NULL;
  uint32_t *waited = NULL;
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
  last_bar = malloc(nq * sizeof *last_bar);
  if (!waited || !last_bar) {
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
    /* one barrier-value per producer point not already implied by an earlier wait of this
     * queue on the same producer queue (its points complete in order) */
    bool need_bar = false;
    for (uint32_t d = 0; d < x->ndeps && !s; d++) {
      uint32_t p = x->deps[d];
      uint32_t pq = (uint32_t)qof[g->nodes[p].lane];
      if (pq == qi) {
        if ((int32_t)pos[p] >= last_bar[qi]) need_bar = true;
        continue;
      }
      uint32_t point = e->node_point[p]; /* laid out already: p comes first in the order */
      if (waited[qi * nq + pq] > point) continue;
      waited[qi * nq + pq] = point + 1;
      fu_pkt_t *bv = push_pkt(fq, &qcap[qi]);
      if (!bv) { s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "node %s", x->name); break; }
      bv->kind = FU_BARRIER_VALUE;
      bv->wait_queue = pq;
      bv->wait_point = point;
      bv->word = hsad_aql_barrier_value_fill(
          (hsa_amd_barrier_value_packet_t *)bv->body, 0, 0, -1, HSA_SIGNAL_CONDITION_LT, 0,
          HSAD_AQL_HEADER(HSA_PACKET_TYPE_VENDOR_SPECIFIC, 0, HSA_FENCE_SCOPE_SYSTEM,
                          HSA_FENCE_SCOPE_SYSTEM));
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
      s = add_point(fq, &qcap[qi], &last_bar[qi]);
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
    if (!fq->pkts[fq->n - 1].epoch) s = add_point(fq, &qcap[qi], &last_bar[qi]);
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
done:
  free(indeg); free(order); free(level); free(pos); free(qcap); free(qof);
  free(need_point); free(waited); free(last_bar);
  if (s) {
    hsad_graph_exec_destroy(e);
    return s;
  }
  *out = e;
  return HSAD_OK;
}

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

hsad_status_t hsad_graph_exec_set_queue(hsad_graph_exec_t *e, uint32_t qi, hsad_queue_t *q) {
  if (!e || !q || qi >= e->nq)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_exec_set_queue: NULL, or queue "
                     "index %u not below %u", qi, e ? e->nq : 0);
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
  uint8_t *const image = fu_image;
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
  fq->q = q;
  return HSAD_OK;
}

static const char *const fu_op_name[] = {"kernel", "barrier", "copy", "fill"};

/* Node `node` of `op` (hsad_graph_exec_update*), or the error naming what it is. */
static hsad_status_t update_target(const char *fn, const hsad_graph_exec_t *e, uint32_t node,
                                   uint8_t op) {
  if (!e || node >= e->nn)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: NULL, or node %u is not a node of the exec "
                     "(%u nodes)", fn, node, e ? e->nn : 0);
  if (e->node_op[node] != op)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: node %s is a %s node, not a %s node", fn,
                     e->names[node], fu_op_name[e->node_op[node]], fu_op_name[op]);
  return HSAD_OK;
}

static hsad_status_t update_node(hsad_graph_exec_t *e, uint32_t node, const hsad_launch_t *l);

hsad_status_t hsad_graph_exec_update(hsad_graph_exec_t *e, uint32_t node, const hsad_launch_t *l) {
  hsad_status_t s = update_target("hsad_graph_exec_update", e, node, FU_OP_KERNEL);
  if (s) return s;
  if (!l) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_exec_update: NULL launch");
  return update_node(e, node, l);
}

hsad_status_t hsad_graph_exec_update_copy(hsad_graph_exec_t *e, uint32_t node, void *dst,
                                          const void *src, size_t size) {
  hsad_status_t s = update_target("hsad_graph_exec_update_copy", e, node, FU_OP_COPY);
  if (!s) s = copy_check("hsad_graph_exec_update_copy", dst, src, size);
  if (s) return s;
  fu_blit_args_t v = {.bytes = size};
  hsad_launch_t l = blit_launch(&v, false, dst, src);
  return update_node(e, node, &l);
}

hsad_status_t hsad_graph_exec_update_fill(hsad_graph_exec_t *e, uint32_t node, void *dst,
                                          uint32_t pattern, uint32_t width, size_t count) {
  fu_blit_args_t v = {.pattern = pattern, .width = width};
  hsad_status_t s = update_target("hsad_graph_exec_update_fill", e, node, FU_OP_FILL);
  if (!s) s = fill_check("hsad_graph_exec_update_fill", dst, pattern, width, count, &v.bytes);
  if (s) return s;
  hsad_launch_t l = blit_launch(&v, true, dst, NULL);
  return update_node(e, node, &l);
}

/* Checks launch l for the node's kernel and queue, then patches its packet body and kernarg
 * image in place (no allocation; on error nothing changed). */
static hsad_status_t update_node(hsad_graph_exec_t *e, uint32_t node, const hsad_launch_t *l) {
  fu_queue_t *fq = &e->qs[e->node_q[node]];
  fu_pkt_t *p = &fq->pkts[e->node_pkt[node]];
  uint8_t *const image = fu_image;
  hsad_aql_dispatch_t d;
  hsad_status_t s = hsad_submit_check(fq->q, e->node_k[node], l, &d, image);
  if (s) return node_fail(s, e->names[node]);
  uint16_t header = (uint16_t)(p->word & 0xffff);
  p->word = hsad_aql_dispatch_fill((hsa_kernel_dispatch_packet_t *)p->body, &d, header);
  if (p->ksize) memcpy(p->image, image, p->ksize);
  /* keep the launch for hsad_graph_exec_set_queue: the checked argument list has the stored
   * one's shape (same kernel, sizes from its metadata), so values are copied in place */
  hsad_launch_t *kl = &e->launches[node];
  hsad_karg_t *ka = (hsad_karg_t *)kl->args;
  memcpy(&kl->dims, &l->dims, 7 * sizeof(uint32_t));
  for (uint32_t a = 0; a < kl->arg_count && a < l->arg_count; a++) {
    if (ka[a].tag != l->args[a].tag) continue;
    if (ka[a].tag == HSAD_KARG_BYTES && ka[a].bytes && l->args[a].size == ka[a].size)
      memcpy((void *)ka[a].bytes, l->args[a].bytes, ka[a].size);
    else if (ka[a].tag == HSAD_KARG_POINTER) ka[a].pointer = l->args[a].pointer;
    else if (ka[a].tag != HSAD_KARG_BYTES) ka[a].lds_bytes = l->args[a].lds_bytes;
  }
  return HSAD_OK;
}
