/* graph.c - recording graphs (hsad_fusion.h): nodes, names, edges. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusion/fu_graph.h"
#include "hsa-dispatch/backend.h"

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
  if (!out) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_create: NULL out_graph");
  if (flags & ~(uint32_t)HSAD_GRAPH_CAPTURE)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_create: unknown flags 0x%x (known: "
                     "HSAD_GRAPH_CAPTURE)", flags & ~(uint32_t)HSAD_GRAPH_CAPTURE);
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
  if (!g) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: NULL graph", fn);
  if (!deps && ndeps)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: NULL deps with a count of %u", fn, ndeps);
  if (lane >= HSAD_GRAPH_MAX_LANES)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: lane %u not below %u", fn, lane,
                     (unsigned)HSAD_GRAPH_MAX_LANES);
  for (uint32_t i = 0; i < ndeps; i++)
    if (deps[i] >= g->n)
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: dependency %u is node %u, not recorded "
                       "yet (%u nodes)", fn, i, deps[i], g->n);
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
  hsad_status_t s = HSAD_NULL_ARGS("hsad_graph_add_kernel", {k, "kernel"}, {l, "launch"});
  if (s) return s;
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

hsad_launch_t fu_blit_launch(fu_blit_args_t *v, bool fill, void *dst, const void *src) {
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
hsad_status_t fu_instantiate_args_check(const hsad_graph_t *g, hsad_queue_t *const *lane_queues,
                                        hsad_graph_exec_t **out) {
  const char *what = !g ? "NULL graph" : !lane_queues ? "NULL lane_queues" : !out ? "NULL out_exec"
                     : g->n == 0 ? "the graph has no nodes (nothing to run)" : NULL;
  return what ? hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_instantiate: %s", what) : HSAD_OK;
}

hsad_status_t fu_copy_check(const char *fn, const void *dst, const void *src, size_t size) {
  hsad_status_t ns = HSAD_NULL_ARGS(fn, {dst, "dst"}, {src, "src"});
  if (ns) return ns;
  if (!size) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: size 0", fn);
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
hsad_status_t fu_fill_check(const char *fn, const void *dst, uint32_t pattern, uint32_t width,
                                size_t count, uint64_t *out_bytes) {
  hsad_status_t ns = HSAD_NULL_ARGS(fn, {dst, "dst"});
  if (ns) return ns;
  if (!count) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: count 0", fn);
  if (width != 1 && width != 2 && width != 4)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: width %u (1, 2 or 4 bytes)", fn, width);
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
  hsad_status_t s = fu_copy_check("hsad_graph_add_copy", dst, src, size);
  if (s) return s;
  fu_blit_args_t v = {.bytes = size};
  hsad_launch_t l = fu_blit_launch(&v, false, dst, src);
  return add_node("hsad_graph_add_copy", g, name, lane, FU_OP_COPY, NULL, &l, deps, ndeps, out);
}

hsad_status_t hsad_graph_add_fill(hsad_graph_t *g, const char *name, uint32_t lane, void *dst,
                                  uint32_t pattern, uint32_t width, size_t count,
                                  const uint32_t *deps, uint32_t ndeps, uint32_t *out) {
  fu_blit_args_t v = {.pattern = pattern, .width = width};
  hsad_status_t s = fu_fill_check("hsad_graph_add_fill", dst, pattern, width, count, &v.bytes);
  if (s) return s;
  hsad_launch_t l = fu_blit_launch(&v, true, dst, NULL);
  return add_node("hsad_graph_add_fill", g, name, lane, FU_OP_FILL, NULL, &l, deps, ndeps, out);
}

hsad_status_t hsad_graph_add_edge(hsad_graph_t *g, uint32_t from, uint32_t to) {
  if (!g || from >= g->n || to >= g->n)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_add_edge: node %u -> %u: the graph "
                     "has %u nodes", from, to, g ? g->n : 0);
  return node_dep(&g->nodes[to], from);
}


uint32_t fu_blit_items(uint64_t bytes, uint32_t *out_block) {
  uint64_t items = (bytes + 15) / 16;
  *out_block = items < 256 ? (uint32_t)items : 256;
  return (uint32_t)items;
}

const char *hsad_graph_rollback_name(hsad_graph_rollback_t r) {
  switch (r) {
  case HSAD_GRAPH_ROLLBACK_NONE: return "fused";
  case HSAD_GRAPH_ROLLBACK_REQUESTED: return "sequential requested";
  case HSAD_GRAPH_ROLLBACK_RING_SIZE: return "ring too small";
  case HSAD_GRAPH_ROLLBACK_RING_FULL: return "ring full until the deadline";
  case HSAD_GRAPH_ROLLBACK_QUEUE_CYCLE: return "cross-queue edges both ways";
  case HSAD_GRAPH_ROLLBACK_DRIVER: return "driver refused the graph";
  default: return "unknown";
  }
}

/* ---- backends other than AMD (fu_graph.h) ---- */

bool fu_graph_foreign(const hsad_graph_t *g, hsad_queue_t *const *lq) {
  for (uint32_t i = 0; i < g->n; i++)
    if (hsad_queue_ops(lq[g->nodes[i].lane])) return true;
  return false;
}

hsad_status_t fu_backend_instantiate(const hsad_graph_t *g, hsad_queue_t *const *lq,
                                     uint32_t lane_count, hsad_graph_exec_t **out) {
  (void)lane_count;
  const hsad_backend_ops_t *b = hsad_queue_ops(lq[g->nodes[0].lane]);
  for (uint32_t i = 1; i < g->n; i++)
    if (hsad_queue_ops(lq[g->nodes[i].lane]) != b)
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_instantiate: node %s's lane %u is "
                       "a queue of %s, node %s's lane %u one of %s; a graph's queues are of one "
                       "vendor", g->nodes[0].name, g->nodes[0].lane, b ? b->name : "amd",
                       g->nodes[i].name, g->nodes[i].lane,
                       hsad_queue_ops(lq[g->nodes[i].lane]) ? hsad_queue_ops(lq[g->nodes[i].lane])->name
                                                            : "amd");
  if (!b || !b->graph)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_graph_instantiate: graphs are not supported on "
                     "%s queues", b ? b->name : "amd");
  return b->graph->instantiate(g, lq, lane_count, out);
}

hsad_status_t fu_backend_no_packets(const hsad_graph_exec_t *e, const char *who) {
  return hsad_fail(HSAD_ERR_UNSUPPORTED, "%s: the exec runs as a %s: it has no AQL packets or "
                   "epoch points", who, fu_exec_ops(e)->name);
}

const char *hsad_graph_exec_rollback_detail(const hsad_graph_exec_t *e) {
  const hsad_graph_backend_ops_t *o = fu_exec_ops(e);
  return o ? o->rollback_detail(e) : NULL;
}
