/* fusion_internal.h - what fusion/'s files share (not installed). */
#ifndef FUSION_INTERNAL_H
#define FUSION_INTERNAL_H

#include "fusion/fu_graph.h"
#include "hsa-dispatch/hsad_submit.h"

/* The library's copy and fill kernels loaded on one device (blit.c). */
typedef struct fu_blit {
  hsad_device_t *device;
  hsad_program_t *program;  /* owned by the exec that loaded it */
  const hsad_device_kernel_t *copy, *fill;
} fu_blit_t;

/* Compiles (once per processor per process) and loads the kernels on `device`. Errors: those of
 * hsad_codeobj_compile ("graph copy/fill kernels for gfx90a: ...") and
 * hsad_program_load_memory. */
hsad_status_t fu_blit_load(hsad_device_t *device, fu_blit_t *out);

/* ---- execs (exec.c: instantiate, set_queue, updates; launch.c: launches) ---- */

enum { FU_KERNEL, FU_BARRIER_AND, FU_BARRIER_VALUE };

/* Launch-time work a packet needs beyond copying its 64 bytes (fu_pkt_t.fix). */
enum {
  FU_FIX_VALUE = 1u << 0, /* barrier-value: the producer point's threshold of this launch */
  FU_FIX_STAMP = 1u << 1, /* kernel on a profiling queue: arm the slot's timestamp signal */
  FU_FIX_COPY = 1u << 2,  /* kernel in ring-copy mode: its image goes into the slot's kernarg
                             block (both prepublished versions may still be read) */
};

/* An explicit argument as a same-shape update sees it: its tag and size in the stored launch
 * and its offset in the kernarg segment; for hsad_graph_exec_update's fast path, what the first
 * 8 bytes of an hsad_karg_t (tag, then size) must be, masked (a POINTER's size is ignored), and
 * how its value is written. */
typedef struct fu_argd {
  uint32_t offset;
  uint16_t size;                  /* BYTES, SCALAR: the value's bytes; POINTER: 8; LDS: 0 */
  uint8_t tag;                    /* hsad_karg_tag_t (key's low 32 bits: tag and type) */
  uint8_t put;                    /* FU_PUT_*: how the fast path writes it */
  uint64_t key, mask;             /* (first 8 bytes of the hsad_karg_t & mask) == key */
  uint64_t nonnull;               /* PTR8: 1 (any pointer value); else 0 (bytes must not be NULL) */
} fu_argd_t;

/* PTR8: the 8 bytes of the union (a POINTER, an 8-byte SCALAR); VAL8/VAL4: 8 or 4 bytes at
 * `bytes`; IN4: the low 4 bytes of a SCALAR */
enum { FU_PUT_NONE, FU_PUT_PTR8, FU_PUT_VAL8, FU_PUT_VAL4, FU_PUT_IN4 };

/* One packet of a queue's run, precomputed: `body` is written as is (the header INVALID), then
 * `word` is published. A kernel's kernarg segment is prepublished in the exec's kernarg memory
 * (two versions, so an update while a launch is in flight writes the one no packet reads) and
 * the body points at the version in use: a launch copies no kernargs. */
typedef struct fu_pkt {
  _Alignas(64) uint8_t body[64];  /* the whole packet, header INVALID; every field a launch
                                     does not patch (fix) is final: kernarg address, epoch
                                     completion signal, barrier-value signal */
  uint32_t word;                  /* header | setup << 16 */
  uint8_t kind;
  uint8_t fix;                    /* FU_FIX_* */
  uint8_t cur;                    /* kernel: the version of karg the body points at */
  bool epoch;                     /* an epoch point: BARRIER bit, the epoch signal */
  bool pad;                       /* kernarg padding after a kernel (hsad_queue.h step 4) */
  uint32_t ksize;                 /* kernel: kernarg bytes */
  uint8_t *image;                 /* kernel: a kernarg image (exec-owned host memory): the
                                     node's segment in ring-copy mode; else karg[cur] is */
  uint8_t *karg[2];               /* kernel: the segment prepublished (exec kernarg memory) */
  const hsad_kernarg_slot_t *slots; /* kernel: its explicit arguments (offsets, sizes) */
  struct fu_argd *argd;           /* kernel: per explicit argument, what a same-shape update
                                     compares and where it writes (exec-owned) */
  bool ptr8;                      /* kernel: every pointer argument has an 8-byte slot */
  uint32_t queue_index;           /* the exec's queue it is on */
  struct fu_queue *fq;            /* kernel: &exec->qs[queue_index], */
  hsad_completion_t *last;        /* &exec->last[queue_index] (hsad_graph_exec_update) */
  hsad_completion_t prev;         /* kernel: the last run that read karg[cur ^ 1] (free once
                                     it completed; queue NULL: never read) */
  hsad_completion_t copy_until;   /* FU_FIX_COPY: the versions are free once it completed */
  uint32_t wait_queue;            /* barrier-value: producer queue index */
  uint32_t wait_point;            /* barrier-value: the producer queue's epoch point index */
  const int64_t *wait_value;      /* barrier-value: &exec->qs[wait_queue].point_value (fu_seal) */
  int32_t node;                   /* -1: a packet of the exec's own */
  uint32_t span;                  /* kernel: slots it takes (1 + its padding packets) */
  /* hsad_graph_exec_update's fast path (node_fast), set by fu_seal: */
  uint8_t sig;                    /* FU_SIG(n, val4) of its explicit arguments, 0: none */
  const hsad_launch_t *launch;    /* &exec->launches[node] */
  const volatile int64_t *epoch_value; /* fq->ring.epoch_value */
  const int64_t *below;           /* &fq->done_below, or &fu_never_below in ring-copy mode:
                                     karg[cur] may be written when *epoch_value < *below */
} fu_pkt_t;


/* fu_pkt_t.below in ring-copy mode: no epoch value is below it. */
extern const int64_t fu_never_below;

/* A barrier-value packet of a queue's run (not its packet 0): its index and its threshold's
 * terms (fu_pkt_t.wait_value, wait_point). */
typedef struct fu_value {
  uint32_t index;
  int64_t wait_point;
  const int64_t *wait_value;
} fu_value_t;

typedef struct fu_queue {
  hsad_queue_t *q;
  hsad_submit_ring_t ring;        /* q's ring as values (hsad_submit_ring) */
  uint8_t *kmem;                  /* the kernarg memory of its kernel packets (2 versions each) */
  size_t kmem_bytes;
  fu_pkt_t *pkts;
  uint32_t n;
  uint32_t *points;               /* packet indices of the epoch points, increasing; the last
                                     is n - 1 (the run's completion) */
  uint32_t npoints;
  uint32_t unordered_clear;       /* bits HSAD_GRAPH_UNORDERED clears from packet 0's word: its
                                     stream-order BARRIER bit, unless it is needed there (the
                                     packet has it for a dependency or carries an epoch) */
  struct fu_value *values;        /* its barrier-value packets after packet 0 */
  uint32_t nvalues;
  uint32_t ncopy;                 /* kernel packets in ring-copy mode (fu_copy_mode) */
  bool has_root;                  /* holds a node without dependencies: launch deps wait here */
  bool profiling;                 /* kernel packets carry timestamp signals, never the epoch */
  /* the current launch */
  uint32_t pre;                   /* launch-dependency packets ahead of the run */
  uint64_t first_id, first_epoch;
  int64_t done_below;             /* exec->last[this queue] completed when the epoch value
                                     is below it (INT64_MAX: no run yet); fu_last_set */
  int64_t point_value;            /* a barrier-value's value for point 0 of this run
                                     (HSAD_EPOCH_BASE - first_epoch + 1; point j: minus j) */
} fu_queue_t;

struct hsad_graph_exec {
  const hsad_graph_backend_ops_t *ops; /* NULL: AMD's own (fu_graph.h: another backend's exec
                                          begins with its table) */
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
  fu_pkt_t **node_fast;           /* node -> its packet when hsad_graph_exec_update's fast path
                                     serves it (a kernel node, pointers in 8-byte slots, every
                                     argument FU_PUT_PTR8/VAL8/VAL4); else NULL */
  const hsad_device_kernel_t **node_k;
  uint64_t *node_hold;            /* kernel nodes: hsad_submit_kernel_hold's token (0: none);
                                     NULL until instantiate succeeded */
  uint8_t *node_op;               /* FU_OP_* */
  char (*names)[HSAD_GRAPH_NAME_MAX];
  fu_blit_t *blits;               /* copy/fill kernels, one per device that runs such nodes */
  uint32_t nblits;
  struct fu_old_kmem {            /* kernarg memory of queues set_queue replaced: packets in
                                     flight on the old queue may read it (freed at destroy) */
    hsad_device_t *device;
    void *mem;
    size_t bytes;
  } *old_kmem;
  uint32_t nold_kmem;
};

/* Writes the fields of packet p that depend on its queue and kernarg version into its body
 * (INVALID header, kernarg address, epoch completion signal, a barrier-value's signal) and its
 * `fix` bits (exec.c; instantiate, set_queue and updates call it). */
void fu_seal(const hsad_graph_exec_t *e, const fu_queue_t *fq, fu_pkt_t *p);

/* True when run c of fq's queue completed (or never happened: queue NULL), or the queue
 * faulted: one load (hsad_submit_ring_t.epoch_value). */
static inline bool fu_run_done(const fu_queue_t *fq, const hsad_completion_t *c) {
  return !c->queue ||
         __atomic_load_n(fq->ring.epoch_value, __ATOMIC_ACQUIRE) <
             HSAD_EPOCH_BASE - (int64_t)c->epoch + 1;
}

/* Puts kernel packet p in ring-copy mode or takes it out (FU_FIX_COPY, fq->ncopy and the update
 * fast path's `below`, which must agree). */
static inline void fu_copy_mode(fu_queue_t *fq, fu_pkt_t *p, bool on) {
  if (!(p->fix & FU_FIX_COPY) != !on) fq->ncopy = on ? fq->ncopy + 1 : fq->ncopy - 1;
  p->fix = (uint8_t)(on ? p->fix | FU_FIX_COPY : p->fix & ~FU_FIX_COPY);
  p->below = on ? &fu_never_below : &fq->done_below;
}

/* Records run c as the exec's last on queue qi (exec->last[qi] and its done_below). */
static inline void fu_last_set(hsad_graph_exec_t *e, uint32_t qi, hsad_completion_t c) {
  e->last[qi] = c;
  e->qs[qi].done_below = c.queue ? HSAD_EPOCH_BASE - (int64_t)c.epoch + 1 : INT64_MAX;
}

/* Headers of the packets fusion writes: hsad_aql.h's header policy, as the library's own
 * submitters use it (HSA 1.2 system architecture 2.9; AQL header bits). A kernel's BARRIER bit
 * is the graph's (`barrier`: a dependency or stream order), its fence scope the launch's. */
static inline uint16_t kernel_header(uint32_t flags, bool barrier) {
  return hsad_aql_kernel_header(barrier, (flags & HSAD_LAUNCH_FENCE_AGENT) != 0);
}
/* Kernarg padding (orders nothing); as a queue's epoch packet, a plain barrier-AND. */
static inline uint16_t pad_header(bool epoch) { return hsad_aql_pad_header(epoch); }
static inline uint16_t barrier_header(bool barrier) { return hsad_aql_barrier_and_header(barrier); }

#endif /* FUSION_INTERNAL_H */
