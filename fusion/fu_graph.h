/* fu_graph.h - recorded graphs as every backend reads them, and the table through which a
 * backend other than AMD runs them (not installed). Needs no ROCm header: the build without
 * AMD (make BACKENDS=nvidia) compiles fusion/graph.c and fusion/graph_front.c with it alone.
 *
 * Backends: hsad_graph_instantiate hands a graph whose queues belong to a backend table
 * (hsa-dispatch/backend.h: hsad_backend_ops_t.graph) to that table; the exec it returns begins
 * with the same table (fu_exec_head_t), and every public hsad_graph_exec_* / launch call on it
 * is forwarded there (FU_BACKEND_EXEC: one load and branch; AMD's execs hold NULL). */
#ifndef FU_GRAPH_H
#define FU_GRAPH_H

#include <string.h>

#include "fusion/hsad_fusion.h"

/* Work-items of a copy/fill node of `bytes` bytes (16 per work-item) and its workgroup size. */
uint32_t fu_blit_items(uint64_t bytes, uint32_t *out_block);

/* The largest copy/fill node: 16 bytes per work-item, at most 2^32 - 1 work-items. */
#define FU_BLIT_MAX_BYTES (16ull * 0xffffffffull)

/* ---- graphs (graph.c) ---- */

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

/* ---- copy and fill nodes (graph.c) ---- */

/* The launch of a copy node (args: dst, src, bytes) or a fill node (dst, pattern, width,
 * bytes); values point into v. */
typedef struct fu_blit_args {
  hsad_karg_t args[4];
  uint64_t bytes;
  uint32_t pattern, width;
} fu_blit_args_t;

hsad_launch_t fu_blit_launch(fu_blit_args_t *v, bool fill, void *dst, const void *src);
/* Checks a copy's operands (memcpy semantics: no overlap), naming `fn` in messages. */
/* hsad_graph_instantiate's argument checks, one cause per message: NULL graph, NULL
 * lane_queues, NULL out_exec, a graph without nodes (HSAD_ERR_INVALID_ARGUMENT). */
hsad_status_t fu_instantiate_args_check(const hsad_graph_t *g, hsad_queue_t *const *lane_queues,
                                        hsad_graph_exec_t **out);
hsad_status_t fu_copy_check(const char *fn, const void *dst, const void *src, size_t size);
/* Checks a fill's operands; *out_bytes = count x width. */
hsad_status_t fu_fill_check(const char *fn, const void *dst, uint32_t pattern, uint32_t width,
                            size_t count, uint64_t *out_bytes);

/* ---- backends other than AMD ---- */

/* A backend's graph functions (nvidia/nv_graph.c: CUDA graphs). Arguments are checked as the
 * public functions document; instantiate gets a graph whose lanes all have queues of the
 * backend. */
typedef struct hsad_graph_backend_ops {
  const char *name;                         /* "CUDA graph" */
  hsad_status_t (*instantiate)(const hsad_graph_t *graph, hsad_queue_t *const *lane_queues,
                               uint32_t lane_count, hsad_graph_exec_t **out_exec);
  void (*destroy)(hsad_graph_exec_t *exec);
  uint32_t (*queue_count)(const hsad_graph_exec_t *exec);
  hsad_queue_t *(*queue)(const hsad_graph_exec_t *exec, uint32_t queue_index);
  hsad_status_t (*launch)(hsad_graph_exec_t *exec, uint32_t flags, const hsad_completion_t *deps,
                          uint32_t dep_count, uint64_t deadline_ns,
                          hsad_completion_t *out_completions, hsad_graph_rollback_t *out_reason);
  hsad_status_t (*update)(hsad_graph_exec_t *exec, uint32_t node, const hsad_launch_t *launch);
  hsad_status_t (*update_copy)(hsad_graph_exec_t *exec, uint32_t node, void *dst,
                               const void *src, size_t size);
  hsad_status_t (*update_fill)(hsad_graph_exec_t *exec, uint32_t node, void *dst,
                               uint32_t pattern, uint32_t width, size_t count);
  hsad_status_t (*set_queue)(hsad_graph_exec_t *exec, uint32_t queue_index, hsad_queue_t *queue);
  void (*counters)(const hsad_graph_exec_t *exec, uint64_t out[HSAD_GRAPH_ROLLBACK_COUNT]);
  const char *(*rollback_detail)(const hsad_graph_exec_t *exec);
} hsad_graph_backend_ops_t;

/* The first member of every exec: its backend's graph table (NULL: AMD). */
typedef struct fu_exec_head {
  const hsad_graph_backend_ops_t *ops;
} fu_exec_head_t;

static inline const hsad_graph_backend_ops_t *fu_exec_ops(const hsad_graph_exec_t *e) {
  return e ? ((const fu_exec_head_t *)(const void *)e)->ops : NULL;
}

/* In a public function taking exec `e`: forwards the call to e's backend and returns its
 * result (AMD's execs fall through). */
#define FU_BACKEND_EXEC(e, call)                                                               \
  do {                                                                                         \
    const hsad_graph_backend_ops_t *fu_o_ = fu_exec_ops(e);                                    \
    if (__builtin_expect(fu_o_ != NULL, 0)) return fu_o_->call;                                \
  } while (0)

/* hsad_graph_instantiate of a graph whose first node's lane queue belongs to a backend table
 * (graph.c): checks that the backend has graphs (else HSAD_ERR_UNSUPPORTED naming it) and
 * forwards. lanes are already checked (every used lane has a queue). */
hsad_status_t fu_backend_instantiate(const hsad_graph_t *g, hsad_queue_t *const *lane_queues,
                                     uint32_t lane_count, hsad_graph_exec_t **out);
/* True when a node's lane queue belongs to a backend table (not AMD); every used lane has a
 * queue (checked before). */
bool fu_graph_foreign(const hsad_graph_t *g, hsad_queue_t *const *lane_queues);
/* HSAD_ERR_UNSUPPORTED "WHO: the exec runs as a CUDA graph (nvidia): it has no AQL packets". */
hsad_status_t fu_backend_no_packets(const hsad_graph_exec_t *e, const char *who);

/* ---- the update fast path's arguments, shared by the backends ---- */

/* A kernel node whose 1 to 4 explicit arguments are each a POINTER in an 8-byte slot or 4 BYTES,
 * typed or not (bit a of val4 set), has signature FU_SIG(n, val4); any other node 0. hsad_graph_exec_update
 * checks and writes such a node's arguments in code made for its signature (fu_put_by_sig). */
#define FU_SIG(n, val4) ((uint8_t)((n) << 4 | (val4)))

static inline uint64_t fu_load8(const void *at) {
  uint64_t v;
  memcpy(&v, at, 8);
  return v;
}

/* For signature FU_SIG(n, val4), both constants once inlined: a POINTER's tag and type are one
 * 4-byte compare, 4 BYTES one 8-byte compare (tag, type and size against the descriptor's key:
 * a typed value must have the type it was checked with) and a NULL test, with no branch; then
 * each value is one load and one store at its offset in dst. `desc` holds n descriptors of
 * `stride` bytes, each with its argument's uint32_t offset into dst at byte 0 and its uint64_t
 * key at byte 8. False, with nothing written, when an argument's tag, type or size differs. */
static inline __attribute__((always_inline)) bool fu_put_sig(uint8_t *dst, const hsad_karg_t *x,
                                                             const void *desc, size_t stride,
                                                             uint32_t n, uint32_t val4) {
  const uint8_t *dd = (const uint8_t *)desc;
  uint64_t diff = 0;
  _Pragma("GCC unroll 4") for (uint32_t a = 0; a < n; a++) {
    if (val4 >> a & 1) {
      diff |= (fu_load8(&x[a]) ^ fu_load8(dd + a * stride + 8)) | (uint64_t)(x[a].bytes == NULL);
    } else {
      uint32_t tag;
      memcpy(&tag, &x[a], 4);
      diff |= tag ^ HSAD_KARG_POINTER;
    }
  }
  if (diff) return false;
  _Pragma("GCC unroll 4") for (uint32_t a = 0; a < n; a++) {
    uint32_t off;
    memcpy(&off, dd + a * stride, 4);
    if (val4 >> a & 1) memcpy(dst + off, x[a].bytes, 4);
    else memcpy(dst + off, &x[a].pointer, 8);
  }
  return true;
}

#define FU_SIG_CASE_(n, m) \
  case FU_SIG(n, m): return fu_put_sig(dst, x, desc, stride, n, m) ? 1 : 0;
#define FU_SIG_CASES2_(n, m) FU_SIG_CASE_(n, m) FU_SIG_CASE_(n, (m) + 1)
#define FU_SIG_CASES4_(n, m) FU_SIG_CASES2_(n, m) FU_SIG_CASES2_(n, (m) + 2)
#define FU_SIG_CASES8_(n, m) FU_SIG_CASES4_(n, m) FU_SIG_CASES4_(n, (m) + 4)

/* fu_put_sig for the node's signature: 1 written, 0 an argument differs (nothing written),
 * -1 no signature (sig 0 or unknown: the caller's general loop). */
static inline __attribute__((always_inline)) int fu_put_by_sig(uint8_t sig, uint8_t *dst,
                                                               const hsad_karg_t *x,
                                                               const void *desc, size_t stride) {
  switch (sig) {
  FU_SIG_CASES2_(1, 0)
  FU_SIG_CASES4_(2, 0)
  FU_SIG_CASES8_(3, 0)
  FU_SIG_CASES8_(4, 0)
  FU_SIG_CASES8_(4, 8)
  default: return -1;
  }
}

#endif /* FU_GRAPH_H */
