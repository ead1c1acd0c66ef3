/* nv_graph.c - graphs (fusion/hsad_fusion.h) on NVIDIA devices as CUDA graphs (issue 22).
 *
 * The same hsad_graph_t records the nodes; hsad_graph_instantiate of a graph whose queues are
 * NVIDIA queues lands here (fusion/fu_graph.h's table) and builds one CUgraph holding every
 * node, in topological order: a kernel node (cuGraphAddKernelNode_v2) with the parameters
 * packed and checked as hsad_kernel_dispatch packs them, a copy node as a 1-D memcpy node
 * between unified addresses, a fill node as a memset node (element size 1, 2 or 4: the fill's
 * width), a barrier node as an empty node; each dependency is an edge of the CUgraph. It is
 * instantiated once (cuGraphInstantiateWithFlags).
 *
 * Several queues: the whole CUgraph is launched on the exec's first queue's stream (the CUDA
 * graph already runs independent branches concurrently; which queue a node was recorded on
 * does not limit it), and the other queues are joined around it so that stream order holds on
 * each of them as on AMD (a launch runs after everything submitted earlier on each queue of the
 * exec and before everything submitted later): before the launch the first stream waits
 * (cuStreamWaitValue64 on the epoch counters, nv_queue.c) for each other queue's latest work,
 * unless no kernel was submitted to it since the last join; after it, each other queue is
 * joined lazily: it records the first queue as its join source, and its next work (a
 * dispatch, barrier, flush or graph launch) first waits for the first queue's epoch after the
 * graph (nv_queue_settle). So a launch costs cuGraphLaunch and no other driver call however
 * many queues the exec has, plus one cuStreamWriteValue64 when completions are asked for: then
 * every queue's completion is that epoch of the first queue (it covers the graph, which ran
 * after each queue's earlier work). Launch dependencies (hsad_graph_launch_after) are waits of
 * the first stream.
 *
 * Updates: hsad_graph_exec_update runs hsad_kernel_dispatch's checks on the new launch (same
 * kernel, the node's queue) and calls cuGraphExecKernelNodeSetParams_v2: launches already made
 * keep their parameters (the driver copies them at each launch). Copy and fill nodes:
 * cuGraphExecMemcpyNodeSetParams / cuGraphExecMemsetNodeSetParams.
 *
 * Rollback: when the driver refuses the CUgraph (a node it cannot hold, e.g. a copy from
 * pageable memory, or an instantiate error) or the queues are on several devices, every launch
 * runs the nodes one by one in topological order on their own queues' streams
 * (HSAD_GRAPH_ROLLBACK_DRIVER; hsad_graph_exec_rollback_detail says why), cross-queue edges as
 * cuStreamWaitValue64 on the producer's epoch; HSAD_GRAPH_SEQUENTIAL takes the same path.
 * Errors that poison the context (nv_error_is_fatal) fail the call instead.
 *
 * Thread safety: as hsad_fusion.h (an exec is used by one thread at a time). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fusion/fu_graph.h"
#include "nvidia/nv_internal.h"

/* A parameter as the update fast path writes it: the first 8 bytes of the new hsad_karg_t (tag,
 * type, then size; the size ignored when any_size) must equal key; then put says how its value
 * is stored at off. 16 bytes: four parameters' descriptors fill one cache line. */
typedef struct nv_argd {
  uint32_t off;                   /* at 0 and key at 8: fu_put_by_sig reads them there */
  uint8_t put;                    /* NV_PUT_* */
  bool any_size;                  /* a pointer: tag and type compared, not the size */
  uint64_t key;
} nv_argd_t;
_Static_assert(offsetof(nv_argd_t, off) == 0 && offsetof(nv_argd_t, key) == 8 &&
                   sizeof(nv_argd_t) == 16,
               "fu_put_by_sig's descriptor layout");
/* IN4: the low 4 bytes of a SCALAR (PTR8 also writes an 8-byte SCALAR) */
enum { NV_PUT_PTR8, NV_PUT_VAL4, NV_PUT_VAL8, NV_PUT_NONE, NV_PUT_IN4 };

typedef struct nv_gnode {
  /* the update fast path's first cache line (nv_update_fast reads this line, the parameter
   * descriptors, the image it writes and kp; the driver call evicts little else) */
  _Alignas(64) hsad_launch_geometry_t key; /* the stored launch's geometry (backend.h) */
  uint32_t n;                     /* kernel: its parameter count */
  bool fast;                      /* a kernel node whose every argd put is PTR8/VAL4/VAL8/IN4,
                                     without dynamic shared memory (false: any other node) */
  uint8_t sig;                    /* FU_SIG(n, val4) when fast with 1-4 PTR8/VAL4 parameters */
  uint8_t cur;
  uint8_t op;                     /* FU_OP_* */
  uint32_t qi;                    /* the exec's queue it was recorded on */
  uint8_t *pbuf[2];               /* two parameter images (padding zero in both): pbuf[cur] is
                                     the node's, an update packs into the other and flips cur */
  /* (the first line ends here) */
  nv_graph_node_t cu;             /* its CUgraph node (NULL when rolled back) */
  void **pptr[2];                 /* param_count pointers into each */
  nv_argd_t *argd;                /* per parameter, for the fast path (n; 64-byte aligned) */
  nv_kernel_node_params_t kp;     /* the node's parameters as the driver has them */
  char name[HSAD_GRAPH_NAME_MAX];
  bool cross;                     /* a consumer on another queue (sequential: gets an epoch) */
  /* kernel: the checked launch (the sequential path's cuLaunchKernel; updates rewrite it) */
  nv_kernel_t *k;
  uint32_t blocks[3], block[3], dynamic;
  /* copy and fill */
  void *dst;
  const void *src;
  uint64_t bytes;
  uint32_t pattern, width;
  hsad_completion_t done;         /* sequential: its epoch in the current launch (cross) */
} nv_gnode_t;
_Static_assert(offsetof(nv_gnode_t, cu) == 64, "the update fast path's fields fill line one");

typedef struct nv_gexec {
  const hsad_graph_backend_ops_t *ops; /* fu_exec_head_t */
  nv_gnode_t *nodes;              /* (with exec and nn: the update fast path's line) */
  nv_graph_exec_t exec;           /* NULL: every launch sequential (why) */
  uint32_t nn, nq;
  nv_dev_t *dev;                  /* of queue 0 */
  nv_queue_t **qs;                /* in order of first use by a node in topological order */
  uint64_t *joined;               /* per queue: its launch count after the last join */
  hsad_completion_t *last;        /* per queue: the previous launch's completion there */
  uint32_t *order;                /* topological */
  uint32_t *dep_off, *dep_ids;    /* node i's dependencies: dep_ids[dep_off[i]..dep_off[i+1]) */
  nv_graph_t graph;
  uint64_t counters[HSAD_GRAPH_ROLLBACK_COUNT];
  char why[640];
} nv_gexec_t;

static const char *const nv_op_name[] = {"kernel", "barrier", "copy", "fill"};

static nv_gexec_t *nvx(const hsad_graph_exec_t *e) { return (nv_gexec_t *)(uintptr_t)e; }
static nv_queue_t *nvq(hsad_queue_t *q) { return (nv_queue_t *)(void *)q; }

/* ---- order -------------------------------------------------------------------------------- */

/* Depth-first over dependencies (producers first): order[] gets a topological order; a
 * dependency found on the current path is a cycle, reported along its edges from its lowest
 * node id ("cycle: a -> b -> a", as AMD's instantiate says it). */
static hsad_status_t nv_order(const hsad_graph_t *g, uint32_t *order) {
  uint32_t n = g->n, k = 0;
  uint8_t *mark = calloc(n, 1);        /* 0 new, 1 on the path, 2 ordered */
  uint32_t *path = malloc(n * sizeof *path), *next = calloc(n, sizeof *next);
  hsad_status_t s = HSAD_OK;
  if (!mark || !path || !next) {
    s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_graph_instantiate: %u nodes", n);
    goto out;
  }
  for (uint32_t root = 0; root < n && !s; root++) {
    if (mark[root]) continue;
    uint32_t depth = 0;
    path[depth++] = root;
    mark[root] = 1;
    while (depth && !s) {
      uint32_t x = path[depth - 1];
      const fu_node_t *nd = &g->nodes[x];
      if (next[x] == nd->ndeps) { /* every producer ordered */
        mark[x] = 2;
        order[k++] = x;
        depth--;
        continue;
      }
      uint32_t p = nd->deps[next[x]++];
      if (mark[p] == 2) continue;
      if (mark[p] == 0) {
        mark[p] = 1;
        path[depth++] = p;
        continue;
      }
      /* p is on the path: path[at..depth) runs consumer -> producer, p = path[at] */
      uint32_t at = depth - 1, low;
      while (path[at] != p) at--;
      low = at;
      for (uint32_t i = at; i < depth; i++)
        if (path[i] < path[low]) low = i;
      char msg[1024];
      int o = snprintf(msg, sizeof msg, "cycle:");
      /* along the edges (producer -> consumer) is backwards along the path, wrapping */
      uint32_t len = depth - at;
      for (uint32_t j = 0; j <= len && o < (int)sizeof msg; j++) {
        uint32_t i = at + ((low - at) + len - (j % len)) % len;
        o += snprintf(msg + o, sizeof msg - o, j < len ? " %s ->" : " %s",
                      g->nodes[path[i]].name);
      }
      s = hsad_fail(HSAD_ERR_GRAPH, "%s", msg);
    }
  }
out:
  free(mark);
  free(path);
  free(next);
  return s;
}

/* ---- building ----------------------------------------------------------------------------- */

static void nv_copy_params(nv_memcpy3d_t *c, void *dst, const void *src, size_t bytes) {
  memset(c, 0, sizeof *c);
  c->src_memory_type = c->dst_memory_type = NV_MEMORYTYPE_UNIFIED;
  c->src_device = (nv_deviceptr_t)(uintptr_t)src;
  c->dst_device = (nv_deviceptr_t)(uintptr_t)dst;
  c->width_bytes = bytes;
  c->height = c->depth = 1;
}

static void nv_fill_params(nv_memset_node_params_t *m, void *dst, uint32_t pattern,
                           uint32_t width, uint64_t bytes) {
  *m = (nv_memset_node_params_t){.dst = (nv_deviceptr_t)(uintptr_t)dst, .value = pattern,
                                 .element_size = width, .width = bytes / width, .height = 1};
}

static void nv_kernel_params(nv_kernel_node_params_t *kp, const nv_prepared_t *p, void **ptrs) {
  *kp = (nv_kernel_node_params_t){
      .func = p->k->fn, .grid_dim_x = p->blocks[0], .grid_dim_y = p->blocks[1],
      .grid_dim_z = p->blocks[2], .block_dim_x = p->block[0], .block_dim_y = p->block[1],
      .block_dim_z = p->block[2], .shared_mem_bytes = p->dynamic,
      .kernel_params = p->k->param_count ? ptrs : NULL};
}

static _Thread_local void *nv_gptrs[NV_MAX_PARAMS];

/* Points nv_gptrs at the parameters of p's image. */
static void **nv_param_ptrs(const nv_prepared_t *p) {
  for (uint32_t i = 0; i < p->k->param_count; i++) nv_gptrs[i] = p->params + p->k->param_offset[i];
  return nv_gptrs;
}

/* Stores checked launch l (packed as p) into node x: its image, geometry and parameters. */
static void nv_store(nv_gnode_t *x, const nv_prepared_t *p, const hsad_launch_t *l) {
  memcpy(x->pbuf[x->cur], p->params, p->k->param_bytes);
  memcpy(x->blocks, p->blocks, sizeof x->blocks);
  memcpy(x->block, p->block, sizeof x->block);
  x->dynamic = p->dynamic;
  hsad_launch_geometry_store(&x->key, l);
  nv_kernel_params(&x->kp, p, x->pptr[x->cur]);
  /* the fast path's plan, from the stored launch's argument tags and the parameter sizes */
  x->fast = !p->dynamic;
  uint32_t val4 = 0;
  bool sig_ok = true;
  for (uint32_t i = 0; i < p->k->param_count; i++) {
    const hsad_karg_t *a = &l->args[i];
    uint32_t size = p->k->param_size[i];
    nv_argd_t *d = &x->argd[i];
    d->off = p->k->param_offset[i];
    d->any_size = false;
    uint32_t tag_type; /* tag and type: a typed value keeps the type it was checked with */
    memcpy(&tag_type, a, 4);
    if (a->tag == HSAD_KARG_POINTER) {
      d->put = NV_PUT_PTR8, d->key = tag_type, d->any_size = true;
    } else if (a->tag == HSAD_KARG_SCALAR) { /* the value where a pointer's is */
      d->put = size == 4 ? NV_PUT_IN4 : size == 8 ? NV_PUT_PTR8 : NV_PUT_NONE;
      d->key = tag_type | (uint64_t)size << 32;
    } else {
      d->put = size == 4 ? NV_PUT_VAL4 : size == 8 ? NV_PUT_VAL8 : NV_PUT_NONE;
      d->key = tag_type | (uint64_t)size << 32;
    }
    x->fast &= d->put != NV_PUT_NONE;
    if (d->put == NV_PUT_VAL4) val4 |= 1u << i;
    else if (d->put != NV_PUT_PTR8 || a->tag != HSAD_KARG_POINTER) sig_ok = false;
  }
  uint32_t n = p->k->param_count;
  x->n = n;
  x->sig = x->fast && sig_ok && n >= 1 && n <= 4 ? FU_SIG(n, val4) : 0;
}

/* Driver errors while building: a poisoning one fails the call; any other rolls back. */
static hsad_status_t nv_refused(nv_gexec_t *e, nv_result_t r, const char *fmt, const char *a,
                                const char *b) {
  char what[256], err[192];
  snprintf(what, sizeof what, fmt, a, b);
  if (nv_error_is_fatal(r)) return nv_fail(e->dev, r, "hsad_graph_instantiate: %s", what);
  snprintf(e->why, sizeof e->why, "%s: %s", what, nv_cuda_error(r, err, sizeof err));
  return HSAD_OK;
}

/* Builds and instantiates the CUgraph; on a refusal leaves e->exec NULL and e->why set. */
static hsad_status_t nv_build(nv_gexec_t *e) {
  for (uint32_t i = 1; i < e->nq; i++)
    if (e->qs[i]->dev != e->dev) {
      snprintf(e->why, sizeof e->why, "queues on devices %u and %u: a CUDA graph runs on one "
               "device's stream", e->dev->info.index, e->qs[i]->dev->info.index);
      return HSAD_OK;
    }
  nv_result_t r = nv_cu.graph_create(&e->graph, 0);
  if (r) return nv_refused(e, r, "cuGraphCreate%s%s", "", "");
  nv_graph_node_t *deps = malloc((e->dep_off[e->nn] + 1) * sizeof *deps);
  if (!deps) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_graph_instantiate: %u edges",
                              e->dep_off[e->nn]);
  hsad_status_t s = HSAD_OK;
  for (uint32_t oi = 0; oi < e->nn && !e->why[0] && !s; oi++) {
    uint32_t i = e->order[oi], nd = 0;
    nv_gnode_t *x = &e->nodes[i];
    for (uint32_t d = e->dep_off[i]; d < e->dep_off[i + 1]; d++) deps[nd++] = e->nodes[e->dep_ids[d]].cu;
    const char *call = "cuGraphAddEmptyNode";
    if (x->op == FU_OP_KERNEL) {
      call = "cuGraphAddKernelNode";
      r = nv_cu.graph_add_kernel_node(&x->cu, e->graph, deps, nd, &x->kp);
    } else if (x->op == FU_OP_COPY) {
      nv_memcpy3d_t c;
      nv_copy_params(&c, x->dst, x->src, x->bytes);
      call = "cuGraphAddMemcpyNode";
      r = nv_cu.graph_add_memcpy_node(&x->cu, e->graph, deps, nd, &c, e->dev->ctx);
    } else if (x->op == FU_OP_FILL) {
      nv_memset_node_params_t m;
      nv_fill_params(&m, x->dst, x->pattern, x->width, x->bytes);
      call = "cuGraphAddMemsetNode";
      r = nv_cu.graph_add_memset_node(&x->cu, e->graph, deps, nd, &m, e->dev->ctx);
    } else {
      r = nv_cu.graph_add_empty_node(&x->cu, e->graph, deps, nd);
    }
    if (r) s = nv_refused(e, r, "node %s: %s", x->name, call);
  }
  free(deps);
  if (!s && !e->why[0] && (r = nv_cu.graph_instantiate(&e->exec, e->graph, 0)) != NV_SUCCESS) {
    e->exec = NULL;
    s = nv_refused(e, r, "cuGraphInstantiateWithFlags%s%s", "", "");
  }
  if (e->why[0] || s) {
    nv_cu.graph_destroy(e->graph);
    e->graph = NULL;
    for (uint32_t i = 0; i < e->nn; i++) e->nodes[i].cu = NULL;
  }
  return s;
}

static void nv_graph_destroy_exec(hsad_graph_exec_t *ge) {
  nv_gexec_t *e = nvx(ge);
  bool live = e->dev && !atomic_load_explicit(&e->dev->lost, memory_order_acquire) &&
              nv_ctx_enter(e->dev) == HSAD_OK;
  /* the driver keeps an exec alive until its launches completed */
  if (live && e->exec) nv_cu.graph_exec_destroy(e->exec);
  if (live && e->graph) nv_cu.graph_destroy(e->graph);
  for (uint32_t i = 0; e->nodes && i < e->nn; i++) {
    free(e->nodes[i].argd);
    for (int b = 0; b < 2; b++) {
      free(e->nodes[i].pbuf[b]);
      free(e->nodes[i].pptr[b]);
    }
  }
  free(e->nodes);
  free(e->qs);
  free(e->joined);
  free(e->last);
  free(e->order);
  free(e->dep_off);
  free(e->dep_ids);
  free(e);
}

static hsad_status_t nv_prefixed(const char *name, hsad_status_t s) {
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", hsad_last_error());
  return hsad_fail(s, "node %s: %s", name, msg);
}

static hsad_status_t nv_graph_instantiate(const hsad_graph_t *g, hsad_queue_t *const *lq,
                                          uint32_t lane_count, hsad_graph_exec_t **out) {
  (void)lane_count;
  uint32_t n = g->n, ndeps = 0;
  for (uint32_t i = 0; i < n; i++) ndeps += g->nodes[i].ndeps;
  nv_gexec_t *e = calloc(1, sizeof *e);
  if (!e) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_graph_instantiate: %u nodes", n);
  e->ops = &nv_graph_ops;
  e->nn = n;
  e->nodes = aligned_alloc(64, (n ? n : 1) * sizeof *e->nodes); /* (a multiple of 64) */
  if (e->nodes) memset(e->nodes, 0, (n ? n : 1) * sizeof *e->nodes);
  e->order = malloc(n * sizeof *e->order);
  e->dep_off = malloc((n + 1) * sizeof *e->dep_off);
  e->dep_ids = malloc((ndeps + 1) * sizeof *e->dep_ids);
  e->qs = calloc(n, sizeof *e->qs);
  hsad_status_t s = HSAD_OK;
  if (!e->nodes || !e->order || !e->dep_off || !e->dep_ids || !e->qs) {
    s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_graph_instantiate: %u nodes", n);
    goto fail;
  }
  if ((s = nv_order(g, e->order)) != HSAD_OK) goto fail;
  e->dep_off[0] = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (g->nodes[i].ndeps) /* (deps is NULL without any) */
      memcpy(e->dep_ids + e->dep_off[i], g->nodes[i].deps, g->nodes[i].ndeps * sizeof *e->dep_ids);
    e->dep_off[i + 1] = e->dep_off[i] + g->nodes[i].ndeps;
  }
  /* queues in order of first use, then each node checked on its queue */
  for (uint32_t oi = 0; oi < n; oi++) {
    uint32_t i = e->order[oi], qi = 0;
    nv_queue_t *q = nvq(lq[g->nodes[i].lane]);
    while (qi < e->nq && e->qs[qi] != q) qi++;
    if (qi == e->nq) e->qs[e->nq++] = q;
    e->nodes[i].qi = qi;
  }
  e->dev = e->qs[0]->dev;
  e->joined = malloc(e->nq * sizeof *e->joined);
  e->last = calloc(e->nq, sizeof *e->last);
  if (!e->joined || !e->last) {
    s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_graph_instantiate: %u queues", e->nq);
    goto fail;
  }
  for (uint32_t i = 0; i < e->nq; i++) {
    e->joined[i] = UINT64_MAX;
    if (atomic_load_explicit(&e->qs[i]->error, memory_order_acquire)) {
      s = nv_queue_fail(e->qs[i]);
      goto fail;
    }
  }
  for (uint32_t i = 0; i < n && !s; i++) {
    const fu_node_t *gn = &g->nodes[i];
    nv_gnode_t *x = &e->nodes[i];
    memcpy(x->name, gn->name, sizeof x->name);
    x->op = gn->op;
    for (uint32_t d = 0; d < gn->ndeps; d++)
      if (e->nodes[gn->deps[d]].qi != x->qi) e->nodes[gn->deps[d]].cross = true;
    if (x->op == FU_OP_KERNEL) {
      nv_prepared_t p;
      s = nv_launch_prepare(e->qs[x->qi], gn->kernel, &gn->launch, &p);
      if (s) {
        s = nv_prefixed(x->name, s);
        break;
      }
      x->k = p.k;
      size_t ab = ((p.k->param_count + 1) * sizeof *x->argd + 63) & ~(size_t)63;
      if ((x->argd = aligned_alloc(64, ab))) memset(x->argd, 0, ab);
      if (!x->argd)
        s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "node %s: %u parameters", x->name, p.k->param_count);
      for (int b = 0; b < 2 && !s; b++) {
        x->pbuf[b] = calloc(1, p.k->param_bytes + 1);
        x->pptr[b] = malloc((p.k->param_count + 1) * sizeof *x->pptr[b]);
        if (!x->pbuf[b] || !x->pptr[b])
          s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "node %s: %u parameter bytes", x->name,
                        p.k->param_bytes);
        for (uint32_t a = 0; !s && a < p.k->param_count; a++)
          x->pptr[b][a] = x->pbuf[b] + p.k->param_offset[a];
      }
      if (s) break;
      nv_store(x, &p, &gn->launch);
    } else if (x->op == FU_OP_COPY || x->op == FU_OP_FILL) {
      /* the recorded launch of the library's blit kernel holds the operands (graph.c) */
      const hsad_karg_t *a = gn->launch.args;
      x->dst = (void *)(uintptr_t)a[0].pointer;
      if (x->op == FU_OP_COPY) {
        x->src = (const void *)(uintptr_t)a[1].pointer;
        memcpy(&x->bytes, a[2].bytes, 8);
      } else {
        memcpy(&x->pattern, a[1].bytes, 4);
        memcpy(&x->width, a[2].bytes, 4);
        memcpy(&x->bytes, a[3].bytes, 8);
      }
    }
  }
  if (!s) s = nv_build(e);
  if (s) goto fail;
  *out = (hsad_graph_exec_t *)(void *)e;
  return HSAD_OK;
fail:
  nv_graph_destroy_exec((hsad_graph_exec_t *)(void *)e);
  return s;
}

/* ---- launches ----------------------------------------------------------------------------- */

/* Monitoring (hsad_monitor.h, issue 22): a launch leaves one record per kernel node in the
 * monitor of the queue the node was recorded on, as AMD's graph launches do (fused or rolled
 * back). Sequential: each node's own launch, timed by its own cuEventRecord pair on a
 * profiling queue. Fused: the one cuGraphLaunch on the first queue; every kernel node's record
 * has that launch's id and host submit interval, and on a profiling first queue the event pair
 * around the cuGraphLaunch gives every node's record the graph's device start and end (CUDA
 * times a graph's nodes only through event nodes, which the exec does not hold). */
static bool nv_graph_monitored(const nv_gexec_t *e) {
  for (uint32_t j = 0; j < e->nq; j++)
    if (e->qs[j]->monitor) return true;
  return false;
}

/* The fused launch's records: kernel nodes in topological order, launch `id` of q0. */
static void nv_graph_records(nv_gexec_t *e, nv_queue_t *q0, uint64_t id, uint64_t epoch,
                             uint64_t t0, uint64_t t1) {
  for (uint32_t oi = 0; oi < e->nn; oi++) {
    const nv_gnode_t *x = &e->nodes[e->order[oi]];
    nv_queue_t *q = e->qs[x->qi];
    if (x->op == FU_OP_KERNEL && q->monitor) {
      uint32_t geo[7];
      hsad_launch_geometry_words(&x->key, geo);
      nv_monitor_record(q, q0, x->k, geo, x->dynamic, id, epoch, t0, t1);
    }
  }
}

/* A kernel node of the sequential path on a monitored queue: launched (timed by the queue's
 * event pair when it profiles) and recorded. */
static hsad_status_t nv_seq_kernel_monitored(nv_queue_t *q, nv_gnode_t *x) {
  uint64_t t0 = hsad_now_ns(), id, epoch = 0;
  void **params = x->k->param_count ? x->pptr[x->cur] : NULL;
  if (q->profiling) {
    hsad_completion_t c;
    hsad_status_t s = nv_dispatch_timed(q, x->k, x->blocks, x->block, x->dynamic, params, NULL,
                                        &c, &id);
    if (s) return s;
    epoch = c.epoch;
  } else {
    nv_result_t r = nv_cu.launch_kernel(x->k->fn, x->blocks[0], x->blocks[1], x->blocks[2],
                                        x->block[0], x->block[1], x->block[2], x->dynamic,
                                        q->stream, params, NULL);
    if (r)
      return nv_fail(q->dev, r, "hsad_graph_launch (sequential): node %s (%s) on queue %llu",
                     x->name, nv_op_name[x->op], (unsigned long long)q->uid);
    id = atomic_fetch_add_explicit(&q->launches, 1, memory_order_relaxed);
    atomic_store_explicit(&q->since_epoch, 1, memory_order_relaxed);
  }
  uint32_t geo[7];
  hsad_launch_geometry_words(&x->key, geo);
  nv_monitor_record(q, q, x->k, geo, x->dynamic, id, epoch, t0, hsad_now_ns());
  return HSAD_OK;
}

static hsad_status_t nv_seq_node(nv_gexec_t *e, nv_gnode_t *x, uint64_t deadline_ns) {
  nv_queue_t *q = e->qs[x->qi];
  uint32_t i = (uint32_t)(x - e->nodes);
  for (uint32_t d = e->dep_off[i]; d < e->dep_off[i + 1]; d++) {
    const nv_gnode_t *p = &e->nodes[e->dep_ids[d]];
    if (p->qi == x->qi) continue; /* stream order */
    hsad_status_t s = nv_queue_wait_deps(q, &p->done, 1, deadline_ns, "hsad_graph_launch");
    if (s) return s;
  }
  hsad_status_t s = nv_queue_seal_fast(q); /* q's pending epoch does not wait for this node */
  if (s) return s;
  if (__builtin_expect(x->op == FU_OP_KERNEL && q->monitor != NULL, 0)) {
    if ((s = nv_seq_kernel_monitored(q, x)) != HSAD_OK) return s;
    return x->cross ? nv_queue_epoch(q, &x->done) : HSAD_OK;
  }
  nv_result_t r = NV_SUCCESS;
  nv_deviceptr_t dst = (nv_deviceptr_t)(uintptr_t)x->dst;
  switch (x->op) {
  case FU_OP_KERNEL:
    r = nv_cu.launch_kernel(x->k->fn, x->blocks[0], x->blocks[1], x->blocks[2], x->block[0],
                            x->block[1], x->block[2], x->dynamic, q->stream,
                            x->k->param_count ? x->pptr[x->cur] : NULL, NULL);
    break;
  case FU_OP_COPY:
    r = nv_cu.memcpy_async(dst, (nv_deviceptr_t)(uintptr_t)x->src, x->bytes, q->stream);
    break;
  case FU_OP_FILL:
    r = x->width == 1   ? nv_cu.memset_d8_async(dst, (unsigned char)x->pattern, x->bytes, q->stream)
        : x->width == 2 ? nv_cu.memset_d16_async(dst, (unsigned short)x->pattern, x->bytes / 2,
                                                 q->stream)
                        : nv_cu.memset_d32_async(dst, x->pattern, x->bytes / 4, q->stream);
    break;
  default:
    break;
  }
  if (r)
    return nv_fail(q->dev, r, "hsad_graph_launch (sequential): node %s (%s) on queue %llu",
                   x->name, nv_op_name[x->op], (unsigned long long)q->uid);
  if (x->op != FU_OP_BARRIER) {
    atomic_fetch_add_explicit(&q->launches, 1, memory_order_relaxed);
    atomic_store_explicit(&q->since_epoch, 1, memory_order_relaxed);
  }
  return x->cross ? nv_queue_epoch(q, &x->done) : HSAD_OK;
}

/* Every node on its own queue in topological order, after the previous launch on every queue
 * of the exec and after deps. */
static hsad_status_t nv_seq_launch(nv_gexec_t *e, const hsad_completion_t *deps, uint32_t ndeps,
                                   uint64_t deadline_ns, hsad_completion_t *out) {
  hsad_status_t s = HSAD_OK;
  for (uint32_t i = 0; i < e->nq && !s; i++) {
    if ((s = nv_ctx_enter(e->qs[i]->dev)) != HSAD_OK || (s = nv_queue_settle(e->qs[i])) != HSAD_OK)
      break;
    s = nv_queue_wait_deps(e->qs[i], deps, ndeps, deadline_ns, "hsad_graph_launch");
    for (uint32_t j = 0; j < e->nq && !s && e->nq > 1; j++)
      if (j != i) s = nv_queue_wait_deps(e->qs[i], &e->last[j], 1, deadline_ns, "hsad_graph_launch");
  }
  for (uint32_t oi = 0; oi < e->nn && !s; oi++) {
    nv_gnode_t *x = &e->nodes[e->order[oi]];
    if ((s = nv_ctx_enter(e->qs[x->qi]->dev)) == HSAD_OK) s = nv_seq_node(e, x, deadline_ns);
  }
  for (uint32_t i = 0; i < e->nq && !s; i++) {
    s = nv_queue_epoch(e->qs[i], &e->last[i]);
    if (!s && out) out[i] = e->last[i];
  }
  return s;
}

/* Queue i of the exec has a sticky error or captures (a launch is not recorded). Cold. */
static __attribute__((noinline, cold)) hsad_status_t nv_launch_gated(const nv_gexec_t *e,
                                                                     uint32_t i) {
  char who[64];
  snprintf(who, sizeof who, "hsad_graph_launch: queue %u of %u", i, e->nq);
  return nv_gate_fail(e->qs[i], who);
}

static hsad_status_t nv_graph_launch(hsad_graph_exec_t *ge, uint32_t flags,
                                     const hsad_completion_t *deps, uint32_t ndeps,
                                     uint64_t deadline_ns, hsad_completion_t *out,
                                     hsad_graph_rollback_t *out_reason) {
  nv_gexec_t *e = nvx(ge);
  const uint32_t known = HSAD_GRAPH_NO_ROLLBACK | HSAD_GRAPH_SEQUENTIAL | HSAD_GRAPH_UNORDERED;
  if (__builtin_expect(!deps && ndeps, 0)) /* (AMD's messages, fusion/launch.c) */
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_launch: NULL deps with a count of %u",
                     ndeps);
  if (__builtin_expect(flags & ~known, 0))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_launch: unknown flags 0x%x",
                     flags & ~known);
  for (uint32_t i = 0; i < e->nq; i++)
    if (__builtin_expect(!nv_gate_open(e->qs[i]), 0)) { /* the sticky error, or a capture */
      hsad_status_t s = nv_launch_gated(e, i);
      if (s) return s;
    }
  nv_queue_t *q0 = e->qs[0];
  hsad_status_t s = nv_ctx_enter(q0->dev);
  if (__builtin_expect(s != HSAD_OK, 0)) return s;
  if (__builtin_expect(!e->exec || (flags & HSAD_GRAPH_SEQUENTIAL), 0)) {
    hsad_graph_rollback_t why = e->exec ? HSAD_GRAPH_ROLLBACK_REQUESTED : HSAD_GRAPH_ROLLBACK_DRIVER;
    if (why == HSAD_GRAPH_ROLLBACK_DRIVER && (flags & HSAD_GRAPH_NO_ROLLBACK))
      return hsad_fail(HSAD_ERR_RESOURCE_EXHAUSTED, "hsad_graph_launch: not fused (%s: %s) and "
                       "HSAD_GRAPH_NO_ROLLBACK given", hsad_graph_rollback_name(why), e->why);
    if ((s = nv_seq_launch(e, deps, ndeps, deadline_ns, out)) != HSAD_OK) return s;
    if (out_reason) *out_reason = why;
    e->counters[why]++;
    return HSAD_OK;
  }
  if (__builtin_expect((s = nv_queue_settle(q0)) != HSAD_OK, 0)) return s;
  /* stream order: the first stream after the other queues' work since the last join (none
   * when no kernel went there since: the queue then still follows this exec's last launch) */
  for (uint32_t j = 1; j < e->nq; j++) {
    nv_queue_t *q = e->qs[j];
    if (atomic_load_explicit(&q->launches, memory_order_relaxed) == e->joined[j]) continue;
    hsad_completion_t c;
    if ((s = nv_queue_flush((hsad_queue_t *)q, deadline_ns, &c)) != HSAD_OK ||
        (s = nv_ctx_enter(q0->dev)) != HSAD_OK ||
        (s = nv_queue_wait_deps(q0, &c, 1, deadline_ns, "hsad_graph_launch")) != HSAD_OK)
      return s;
  }
  if (ndeps && (s = nv_queue_wait_deps(q0, deps, ndeps, deadline_ns, "hsad_graph_launch")) != HSAD_OK)
    return s;
  if ((s = nv_queue_seal_fast(q0)) != HSAD_OK) return s; /* nor q0's for the graph */
  bool mon = __builtin_expect(nv_graph_monitored(e), 0);
  uint64_t t0 = mon ? hsad_now_ns() : 0, id, epoch = 0;
  if (__builtin_expect(mon && q0->profiling, 0)) {
    hsad_completion_t tc;
    if ((s = nv_dispatch_timed(q0, NULL, NULL, NULL, 0, NULL, e->exec, &tc, &id)) != HSAD_OK)
      return s;
    epoch = tc.epoch;
  } else {
    nv_result_t r = nv_cu.graph_launch(e->exec, q0->stream);
    if (__builtin_expect(r != NV_SUCCESS, 0))
      return nv_fail(q0->dev, r, "hsad_graph_launch: cuGraphLaunch on queue %llu",
                     (unsigned long long)q0->uid);
    id = atomic_fetch_add_explicit(&q0->launches, 1, memory_order_relaxed);
    atomic_store_explicit(&q0->since_epoch, 1, memory_order_relaxed);
  }
  if (__builtin_expect(mon, 0)) nv_graph_records(e, q0, id, epoch, t0, hsad_now_ns());
  /* the other queues after the graph, lazily: their next work waits for it (join_src) */
  for (uint32_t j = 1; j < e->nq; j++) {
    nv_queue_t *q = e->qs[j];
    nv_queue_t *old = atomic_exchange_explicit(&q->join_src, q0, memory_order_acq_rel);
    if (__builtin_expect(old != NULL && old != q0, 0)) { /* another exec's join: settle it */
      hsad_completion_t c;
      if ((s = nv_queue_flush_raw(old, &c)) || (s = nv_ctx_enter(q->dev)) ||
          (s = nv_queue_wait_deps(q, &c, 1, deadline_ns, "hsad_graph_launch")))
        return s;
    }
    e->joined[j] = atomic_load_explicit(&q->launches, memory_order_relaxed);
  }
  if (out) { /* one epoch after the graph covers every queue's part (each joined before it) */
    if ((s = nv_queue_epoch(q0, &e->last[0])) != HSAD_OK) return s;
    for (uint32_t j = 0; j < e->nq; j++) out[j] = e->last[0];
  }
  if (out_reason) *out_reason = HSAD_GRAPH_ROLLBACK_NONE;
  e->counters[HSAD_GRAPH_ROLLBACK_NONE]++;
  return HSAD_OK;
}

/* ---- updates ------------------------------------------------------------------------------ */

static hsad_status_t nv_update_target(const char *fn, nv_gexec_t *e, uint32_t node, uint8_t op) {
  if (node >= e->nn)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: node %u is not a node of the exec (%u "
                     "nodes)", fn, node, e->nn);
  if (e->nodes[node].op != op)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: node %s is a %s node, not a %s node", fn,
                     e->nodes[node].name, nv_op_name[e->nodes[node].op], nv_op_name[op]);
  return nv_ctx_enter(e->qs[e->nodes[node].qi]->dev);
}

/* A launch of the stored one's shape (same dims, grid and block, one value per parameter, no
 * dynamic shared memory before or now): its values are packed straight into the node's other
 * image by nv_pack's rules (a pointer into an 8-byte parameter, bytes of the parameter's size),
 * handed to the driver, and the image flipped: no geometry check repeats (the geometry is the
 * checked one), nothing is allocated. False: take the general path (which also reports why). */
/* the layouts the fast path reads as words */
_Static_assert(offsetof(hsad_karg_t, size) == 4 && sizeof(hsad_karg_tag_t) == 4,
               "hsad_karg_t: tag, then size, in its first 8 bytes");
_Static_assert(offsetof(hsad_launch_t, grid) == 4 && offsetof(hsad_launch_t, block) == 16,
               "hsad_launch_t: dims, grid[3], block[3] in its first 28 bytes");

/* Parameters of a node without a signature (more than 4, or an 8-byte value) into buf (the
 * image not in use): false at the first whose tag or size differs. */
static bool nv_put_loop(uint8_t *buf, const hsad_karg_t *a, const nv_argd_t *d, uint32_t n) {
  for (uint32_t i = 0; i < n; i++, a++, d++) {
    if ((fu_load8(a) & (d->any_size ? 0xffffffffull : ~0ull)) != d->key)
      return false; /* another tag, type or size */
    if (d->put == NV_PUT_PTR8) {
      memcpy(buf + d->off, &a->pointer, 8);
    } else if (d->put == NV_PUT_IN4) {
      memcpy(buf + d->off, &a->scalar, 4);
    } else {
      if (!a->bytes) return false;
      if (d->put == NV_PUT_VAL4) memcpy(buf + d->off, a->bytes, 4);
      else memcpy(buf + d->off, a->bytes, 8);
    }
  }
  return true;
}

/* x is a fast node (a kernel node, x->fast). */
static inline bool nv_update_fast(nv_gexec_t *e, nv_gnode_t *x, const hsad_launch_t *l) {
  uint32_t n = x->n;
  const hsad_karg_t *a = l->args;
  if (!hsad_launch_geometry_same(&x->key, l) || l->arg_count != n || (n && !a)) return false;
  uint8_t *buf = x->pbuf[x->cur ^ 1];
  const nv_argd_t *d = x->argd;
  int put = fu_put_by_sig(x->sig, buf, a, d, sizeof *d);
  if (put < 0) put = nv_put_loop(buf, a, d, n);
  if (!put) return false;
  x->kp.kernel_params = n ? x->pptr[x->cur ^ 1] : NULL;
  if (nv_cu.graph_exec_kernel_node_set_params(e->exec, x->cu, &x->kp) != NV_SUCCESS) {
    x->kp.kernel_params = n ? x->pptr[x->cur] : NULL;
    return false;
  }
  x->cur ^= 1;
  return true;
}

/* Every check of hsad_kernel_dispatch, then cuGraphExecKernelNodeSetParams (out of line: the
 * fast path's caller stays a leaf-like function). */
static __attribute__((noinline)) hsad_status_t nv_update_general(nv_gexec_t *e, uint32_t node,
                                                                 const hsad_launch_t *l);

static hsad_status_t nv_graph_update(hsad_graph_exec_t *ge, uint32_t node, const hsad_launch_t *l) {
  nv_gexec_t *e = nvx(ge);
  nv_gnode_t *fx;
  /* (no context switch here: the exec names its context; a driver refusal, e.g. for want of a
   * current context, falls to the general path, which makes the device's current) */
  if (__builtin_expect(node < e->nn && l && e->exec && (fx = &e->nodes[node])->fast, 1) &&
      nv_update_fast(e, fx, l))
    return HSAD_OK;
  return nv_update_general(e, node, l);
}

static hsad_status_t nv_update_general(nv_gexec_t *e, uint32_t node, const hsad_launch_t *l) {
  hsad_status_t s = nv_update_target("hsad_graph_exec_update", e, node, FU_OP_KERNEL);
  if (__builtin_expect(s != HSAD_OK, 0)) return s;
  nv_gnode_t *x = &e->nodes[node];
  nv_prepared_t p;
  if (__builtin_expect(!l, 0))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_exec_update: node %s: NULL launch",
                     x->name);
  s = nv_launch_prepare(e->qs[x->qi], (const hsad_device_kernel_t *)(void *)x->k, l, &p);
  if (__builtin_expect(s != HSAD_OK, 0)) return nv_prefixed(x->name, s);
  if (e->exec) {
    nv_kernel_node_params_t kp;
    nv_kernel_params(&kp, &p, nv_param_ptrs(&p));
    nv_result_t r = nv_cu.graph_exec_kernel_node_set_params(e->exec, x->cu, &kp);
    if (__builtin_expect(r != NV_SUCCESS, 0))
      return nv_fail(e->dev, r, "hsad_graph_exec_update: node %s: cuGraphExecKernelNodeSetParams",
                     x->name);
  }
  nv_store(x, &p, l);
  return HSAD_OK;
}

static hsad_status_t nv_graph_update_copy(hsad_graph_exec_t *ge, uint32_t node, void *dst,
                                          const void *src, size_t size) {
  nv_gexec_t *e = nvx(ge);
  hsad_status_t s = nv_update_target("hsad_graph_exec_update_copy", e, node, FU_OP_COPY);
  if (!s) s = fu_copy_check("hsad_graph_exec_update_copy", dst, src, size);
  if (s) return s;
  nv_gnode_t *x = &e->nodes[node];
  if (e->exec) {
    nv_memcpy3d_t c;
    nv_copy_params(&c, dst, src, size);
    nv_result_t r = nv_cu.graph_exec_memcpy_node_set_params(e->exec, x->cu, &c, e->dev->ctx);
    if (r)
      return nv_fail(e->dev, r, "hsad_graph_exec_update_copy: node %s: "
                     "cuGraphExecMemcpyNodeSetParams", x->name);
  }
  x->dst = dst, x->src = src, x->bytes = size;
  return HSAD_OK;
}

static hsad_status_t nv_graph_update_fill(hsad_graph_exec_t *ge, uint32_t node, void *dst,
                                          uint32_t pattern, uint32_t width, size_t count) {
  nv_gexec_t *e = nvx(ge);
  uint64_t bytes = 0;
  hsad_status_t s = nv_update_target("hsad_graph_exec_update_fill", e, node, FU_OP_FILL);
  if (!s) s = fu_fill_check("hsad_graph_exec_update_fill", dst, pattern, width, count, &bytes);
  if (s) return s;
  nv_gnode_t *x = &e->nodes[node];
  if (e->exec) {
    nv_memset_node_params_t m;
    nv_fill_params(&m, dst, pattern, width, bytes);
    nv_result_t r = nv_cu.graph_exec_memset_node_set_params(e->exec, x->cu, &m, e->dev->ctx);
    if (r)
      return nv_fail(e->dev, r, "hsad_graph_exec_update_fill: node %s: "
                     "cuGraphExecMemsetNodeSetParams", x->name);
  }
  x->dst = dst, x->pattern = pattern, x->width = width, x->bytes = bytes;
  return HSAD_OK;
}

/* ---- the rest of the table ---------------------------------------------------------------- */

static hsad_status_t nv_graph_set_queue(hsad_graph_exec_t *ge, uint32_t qi, hsad_queue_t *queue) {
  nv_gexec_t *e = nvx(ge);
  if (!queue) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_exec_set_queue: NULL queue");
  if (qi >= e->nq)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_exec_set_queue: queue index %u not "
                     "below the exec's %u queues", qi, e->nq);
  if (hsad_queue_ops(queue) != &nv_backend_ops || nvq(queue)->dev != e->qs[qi]->dev)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_exec_set_queue: the new queue is "
                     "on another device than queue %u", qi);
  for (uint32_t j = 0; j < e->nq; j++)
    if (j != qi && e->qs[j] == nvq(queue))
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_exec_set_queue: the new queue is "
                       "already the exec's queue %u", j);
  e->qs[qi] = nvq(queue);
  e->joined[qi] = UINT64_MAX;
  e->last[qi] = (hsad_completion_t){0};
  return HSAD_OK;
}

static uint32_t nv_graph_queue_count(const hsad_graph_exec_t *ge) { return nvx(ge)->nq; }

static hsad_queue_t *nv_graph_queue(const hsad_graph_exec_t *ge, uint32_t i) {
  return i < nvx(ge)->nq ? (hsad_queue_t *)nvx(ge)->qs[i] : NULL;
}

static void nv_graph_counters(const hsad_graph_exec_t *ge, uint64_t out[HSAD_GRAPH_ROLLBACK_COUNT]) {
  memcpy(out, nvx(ge)->counters, sizeof nvx(ge)->counters);
}

static const char *nv_graph_rollback_detail(const hsad_graph_exec_t *ge) {
  return nvx(ge)->why[0] ? nvx(ge)->why : NULL;
}

/* The driver's handles of a fused exec's kernel node (hsad-bench-nvidia times
 * cuGraphExecKernelNodeSetParams on hsad's own exec with them); false when the exec was rolled
 * back or the node is not a kernel node. */
bool nv_graph_exec_native(const hsad_graph_exec_t *ge, uint32_t node, nv_graph_exec_t *out_exec,
                          nv_graph_node_t *out_node) {
  const nv_gexec_t *e = nvx(ge);
  if (!e || !e->exec || node >= e->nn || e->nodes[node].op != FU_OP_KERNEL) return false;
  *out_exec = e->exec;
  *out_node = e->nodes[node].cu;
  return true;
}

const hsad_graph_backend_ops_t nv_graph_ops = {
    .name = "CUDA graph",
    .instantiate = nv_graph_instantiate,
    .destroy = nv_graph_destroy_exec,
    .queue_count = nv_graph_queue_count,
    .queue = nv_graph_queue,
    .launch = nv_graph_launch,
    .update = nv_graph_update,
    .update_copy = nv_graph_update_copy,
    .update_fill = nv_graph_update_fill,
    .set_queue = nv_graph_set_queue,
    .counters = nv_graph_counters,
    .rollback_detail = nv_graph_rollback_detail,
};
