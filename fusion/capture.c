/* capture.c - stream capture (hsad_fusion.h "Capture"): while a queue captures,
 * hsad_kernel_dispatch and hsad_queue_barrier on it record graph nodes on the capture's lane
 * instead of reaching the queue. The hooks: an AMD queue's through hsa-dispatch's gate
 * (hsad_submit.h "capture": capture_kernel / capture_barrier below); another backend's queue
 * through its table (backend.h "stream capture": its capture_set flag, then its dispatch and
 * barrier call hsad_backend_capture_kernel / _barrier). Built on the public graph API only;
 * built with and without the AMD backend. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "fusion/hsad_fusion.h"
#include "hsa-dispatch/backend.h"
#ifndef HSAD_NO_AMD
#include "hsa-dispatch/hsad_submit.h"
#endif

/* One running capture: the queue's recorder state (hsad_submit_capture_ctx). */
typedef struct fu_capture {
  hsad_queue_t *queue;
  hsad_graph_t *graph;
  uint32_t lane;
  uint32_t id;              /* 1 .. HSAD_CAPTURE_ID_MAX, in the epochs of its completions */
  int64_t last;             /* the node this capture recorded last (-1: none yet) */
  struct fu_capture *next;  /* the running captures */
} fu_capture_t;

/* Serialises every capture call of the process: begin, end and each recorded submit (any
 * thread may submit to a capturing queue; several queues may record into one graph). */
static pthread_mutex_t fu_cap_lock = PTHREAD_MUTEX_INITIALIZER;
static fu_capture_t *fu_caps;   /* running captures (under fu_cap_lock) */
static uint32_t fu_cap_last_id; /* the last capture id handed out (under fu_cap_lock) */

/* The queue's number in messages: an AMD queue's HSA id, another backend's trace id. */
static unsigned long long queue_id(const hsad_queue_t *q) {
  const hsad_backend_ops_t *ops = hsad_queue_ops(q);
  if (ops) return (unsigned long long)ops->queue_trace_id(q);
#ifndef HSAD_NO_AMD
  return (unsigned long long)hsad_queue_hsa(q)->id;
#else
  return 0;
#endif
}

/* The running capture of q, or NULL (under fu_cap_lock). */
static fu_capture_t *capture_of(const hsad_queue_t *q) {
  fu_capture_t *c = fu_caps;
  while (c && c->queue != q) c = c->next;
  return c;
}

/* Records one node (kernel when k, else barrier) after deps and hands out its completion. */
static hsad_status_t record(fu_capture_t *c, const hsad_device_kernel_t *k, const hsad_launch_t *l,
                            const uint32_t *deps, uint32_t dep_count,
                            hsad_completion_t *out_completion, uint64_t *out_packet_id) {
  uint32_t node = 0;
  hsad_status_t s = k ? hsad_graph_add_kernel(c->graph, NULL, c->lane, k, l, deps, dep_count, &node)
                      : hsad_graph_add_barrier(c->graph, NULL, c->lane, deps, dep_count, &node);
  if (s) return s;
  c->last = node;
  if (out_completion)
    *out_completion = (hsad_completion_t){
        .queue = c->queue,
        .epoch = HSAD_CAPTURE_EPOCH_BASE + ((uint64_t)c->id << 32) + node,
        .packet_id = node};
  if (out_packet_id) *out_packet_id = node;
  return HSAD_OK;
}

#ifndef HSAD_NO_AMD
/* This thread's kernarg image of the launch being checked (never held across calls). */
static _Thread_local uint8_t fu_cap_image[HSAD_KERNARG_SEGMENT_MAX];

/* An AMD queue's captured dispatch (its gate's hook). */
static hsad_status_t capture_kernel(hsad_queue_t *q, const hsad_device_kernel_t *k,
                                    const hsad_launch_t *l, uint64_t deadline_ns,
                                    hsad_completion_t *out_completion, uint64_t *out_packet_id) {
  pthread_mutex_lock(&fu_cap_lock);
  fu_capture_t *c = capture_of(q);
  if (!c) { /* the capture ended after this submit passed the gate: not captured */
    pthread_mutex_unlock(&fu_cap_lock);
    return hsad_kernel_dispatch(q, k, l, deadline_ns, out_completion, out_packet_id);
  }
  /* every check of hsad_kernel_dispatch now, so a bad launch fails at its call */
  hsad_aql_dispatch_t body;
  hsad_status_t s = hsad_submit_check(q, k, l, &body, fu_cap_image);
  uint32_t prev = (uint32_t)c->last;
  if (!s) s = record(c, k, l, &prev, c->last >= 0, out_completion, out_packet_id);
  pthread_mutex_unlock(&fu_cap_lock);
  return s;
}
#endif

/* Another backend's captured dispatch: the backend ran every check of hsad_kernel_dispatch. */
hsad_status_t hsad_backend_capture_kernel(hsad_queue_t *q, const hsad_device_kernel_t *k,
                                          const hsad_launch_t *l, uint64_t deadline_ns,
                                          hsad_completion_t *out_completion,
                                          uint64_t *out_packet_id) {
  pthread_mutex_lock(&fu_cap_lock);
  fu_capture_t *c = capture_of(q);
  if (!c) { /* the capture ended after this submit passed the gate: not captured */
    pthread_mutex_unlock(&fu_cap_lock);
    return hsad_kernel_dispatch(q, k, l, deadline_ns, out_completion, out_packet_id);
  }
  uint32_t prev = (uint32_t)c->last;
  hsad_status_t s = record(c, k, l, &prev, c->last >= 0, out_completion, out_packet_id);
  pthread_mutex_unlock(&fu_cap_lock);
  return s;
}

/* The node of dependency i of a barrier recorded by capture c; *out_has false: satisfied
 * (an empty completion). */
static hsad_status_t dep_node(const fu_capture_t *c, const hsad_completion_t *d, uint32_t i,
                              uint32_t *out_node, bool *out_has) {
  *out_has = false;
  if (!d->queue || !d->epoch) return HSAD_OK;
  if (d->epoch < HSAD_CAPTURE_EPOCH_BASE)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_barrier: queue %llu is capturing: "
                     "dependency %u is work submitted outside the capture (epoch %llu of queue "
                     "%llu), which a graph cannot wait for: wait for it before "
                     "hsad_queue_capture_begin, or pass it to hsad_graph_launch_after",
                     queue_id(c->queue), i, (unsigned long long)d->epoch, queue_id(d->queue));
  uint32_t id = (uint32_t)((d->epoch - HSAD_CAPTURE_EPOCH_BASE) >> 32);
  uint32_t node = (uint32_t)d->epoch;
  const fu_capture_t *src = capture_of(d->queue);
  if (!src || src->id != id)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_barrier: queue %llu is capturing: "
                     "dependency %u is node %u of a capture on queue %llu that has ended",
                     queue_id(c->queue), i, node, queue_id(d->queue));
  if (src->graph != c->graph)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_barrier: queue %llu is capturing: "
                     "dependency %u is node %u of another graph (captured on queue %llu); a "
                     "barrier joins captures into the same graph only", queue_id(c->queue), i,
                     node, queue_id(d->queue));
  *out_node = node;
  *out_has = true;
  return HSAD_OK;
}

static hsad_status_t capture_barrier(hsad_queue_t *q, const hsad_completion_t *deps,
                                     uint32_t dep_count, uint64_t deadline_ns,
                                     hsad_completion_t *out_completion) {
  pthread_mutex_lock(&fu_cap_lock);
  fu_capture_t *c = capture_of(q);
  if (!c) {
    pthread_mutex_unlock(&fu_cap_lock);
    return hsad_queue_barrier(q, deps, dep_count, deadline_ns, out_completion);
  }
  enum { LOCAL = 16 };
  uint32_t local[LOCAL], *nodes = local;
  if (dep_count + 1 > LOCAL && !(nodes = malloc(((size_t)dep_count + 1) * sizeof *nodes))) {
    pthread_mutex_unlock(&fu_cap_lock);
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_queue_barrier: %u dependencies", dep_count);
  }
  uint32_t n = 0;
  hsad_status_t s = HSAD_OK;
  for (uint32_t i = 0; i < dep_count && !s; i++) {
    bool has;
    s = dep_node(c, &deps[i], i, &nodes[n], &has);
    n += has;
  }
  if (c->last >= 0) nodes[n++] = (uint32_t)c->last; /* stream order */
  if (!s) s = record(c, NULL, NULL, nodes, n, out_completion, NULL);
  if (nodes != local) free(nodes);
  pthread_mutex_unlock(&fu_cap_lock);
  return s;
}

hsad_status_t hsad_backend_capture_barrier(hsad_queue_t *q, const hsad_completion_t *deps,
                                           uint32_t dep_count, uint64_t deadline_ns,
                                           hsad_completion_t *out_completion) {
  return capture_barrier(q, deps, dep_count, deadline_ns, out_completion);
}

#ifndef HSAD_NO_AMD
static const hsad_submit_capture_ops_t fu_capture_ops = {
    .kernel = capture_kernel,
    .barrier = capture_barrier,
};
#endif

/* Diverts q's submits to capture c: an AMD queue's gate, another backend's table. */
static hsad_status_t capture_start(hsad_queue_t *q, fu_capture_t *c) {
  const hsad_backend_ops_t *ops = hsad_queue_ops(q);
  if (ops) return ops->capture_set(q, true);
#ifndef HSAD_NO_AMD
  return hsad_submit_capture_start(q, &fu_capture_ops, c);
#else
  (void)c;
  return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "not a queue of a backend built in");
#endif
}

static void capture_stop(hsad_queue_t *q) {
  const hsad_backend_ops_t *ops = hsad_queue_ops(q);
  if (ops) {
    (void)ops->capture_set(q, false);
    return;
  }
#ifndef HSAD_NO_AMD
  (void)hsad_submit_capture_stop(q);
#endif
}

hsad_status_t hsad_queue_capture_begin(hsad_queue_t *q, hsad_graph_t *graph, uint32_t lane) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_queue_capture_begin", {q, "queue"}, {graph, "graph"});
  if (ns) return ns;
  if (lane >= HSAD_GRAPH_MAX_LANES)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_capture_begin: lane %u not below %u",
                     lane, (unsigned)HSAD_GRAPH_MAX_LANES);
  pthread_mutex_lock(&fu_cap_lock);
  hsad_status_t s = HSAD_OK;
  const fu_capture_t *running = capture_of(q);
  if (running)
    s = hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_capture_begin: queue %llu is already "
                  "capturing (lane %u); end that capture first (hsad_queue_capture_end)",
                  queue_id(q), running->lane);
  for (const fu_capture_t *o = fu_caps; o && !s; o = o->next)
    if (o->graph == graph && o->lane == lane)
      s = hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_capture_begin: lane %u of the graph "
                    "is being captured on queue %llu; give each queue its own lane", lane,
                    queue_id(o->queue));
  fu_capture_t *c = s ? NULL : calloc(1, sizeof *c);
  if (!s && !c)
    s = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_queue_capture_begin: %zu bytes", sizeof *c);
  if (!s) {
    uint32_t id = fu_cap_last_id >= HSAD_CAPTURE_ID_MAX ? 1 : fu_cap_last_id + 1;
    *c = (fu_capture_t){.queue = q, .graph = graph, .lane = lane, .id = id, .last = -1,
                        .next = fu_caps};
    s = capture_start(q, c);
    if (s) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", hsad_last_error());
      s = hsad_fail(s, "hsad_queue_capture_begin: %s", msg);
      free(c);
    } else {
      fu_caps = c;
      fu_cap_last_id = id;
    }
  }
  pthread_mutex_unlock(&fu_cap_lock);
  return s;
}

hsad_status_t hsad_queue_capture_end(hsad_queue_t *q, hsad_graph_t **out_graph) {
  if (!q) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_capture_end: NULL queue");
  pthread_mutex_lock(&fu_cap_lock);
  fu_capture_t *c = capture_of(q);
  if (c) {
    capture_stop(q);
    fu_capture_t **at = &fu_caps;
    while (*at != c) at = &(*at)->next;
    *at = c->next;
  }
  pthread_mutex_unlock(&fu_cap_lock);
  if (!c)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_capture_end: queue %llu is not "
                     "capturing", queue_id(q));
  if (out_graph) *out_graph = c->graph;
  free(c);
  return HSAD_OK;
}

bool hsad_queue_capturing(const hsad_queue_t *q) {
  pthread_mutex_lock(&fu_cap_lock);
  bool on = q && capture_of(q) != NULL;
  pthread_mutex_unlock(&fu_cap_lock);
  return on;
}
