/* graph_front.c - the public graph calls of a build without the AMD backend (make
 * BACKENDS=nvidia): graph.c records graphs as with AMD; instantiate hands them to the queues'
 * backend (fu_backend_instantiate) and every call on an exec goes to the exec's table
 * (fu_graph.h). With AMD built, exec.c and launch.c are these functions (forwarding other
 * backends' execs the same way); capture.c is built either way. Needs no ROCm header. */
#include "fusion/fu_graph.h"
#include "hsa-dispatch/backend.h"

static hsad_status_t gf_null(const char *who) {
  return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: NULL exec", who);
}

hsad_status_t hsad_graph_instantiate(const hsad_graph_t *g, hsad_queue_t *const *lq,
                                     uint32_t lane_count, hsad_graph_exec_t **out) {
  hsad_status_t s0 = fu_instantiate_args_check(g, lq, out);
  if (s0) return s0;
  for (uint32_t i = 0; i < g->n; i++) {
    uint32_t lane = g->nodes[i].lane;
    if (lane >= lane_count || !lq[lane])
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "node %s: lane %u has no queue (%u lanes "
                       "given)", g->nodes[i].name, lane, lane_count);
  }
  return fu_backend_instantiate(g, lq, lane_count, out);
}

void hsad_graph_exec_destroy(hsad_graph_exec_t *e) {
  if (e) fu_exec_ops(e)->destroy(e);
}

uint32_t hsad_graph_exec_queue_count(const hsad_graph_exec_t *e) {
  return e ? fu_exec_ops(e)->queue_count(e) : 0;
}

hsad_queue_t *hsad_graph_exec_queue(const hsad_graph_exec_t *e, uint32_t i) {
  return e ? fu_exec_ops(e)->queue(e, i) : NULL;
}

uint32_t hsad_graph_exec_packet_count(const hsad_graph_exec_t *e, uint32_t i) {
  (void)e, (void)i;
  return 0; /* AQL packets: AMD only */
}

uint32_t hsad_graph_exec_point_count(const hsad_graph_exec_t *e, uint32_t i) {
  (void)e, (void)i;
  return 0;
}

hsad_status_t hsad_graph_exec_point(const hsad_graph_exec_t *e, uint32_t qi, uint32_t point,
                                    uint32_t *out_packet_index) {
  (void)qi, (void)point, (void)out_packet_index;
  return e ? fu_backend_no_packets(e, "hsad_graph_exec_point") : gf_null("hsad_graph_exec_point");
}

hsad_status_t hsad_graph_exec_packet(const hsad_graph_exec_t *e, uint32_t qi, uint32_t i,
                                     uint8_t out[64], int32_t *out_node) {
  (void)qi, (void)i, (void)out, (void)out_node;
  return e ? fu_backend_no_packets(e, "hsad_graph_exec_packet") : gf_null("hsad_graph_exec_packet");
}

hsad_status_t hsad_graph_launch_after(hsad_graph_exec_t *e, uint32_t flags,
                                      const hsad_completion_t *deps, uint32_t dep_count,
                                      uint64_t deadline_ns, hsad_completion_t *out,
                                      hsad_graph_rollback_t *out_reason) {
  FU_BACKEND_EXEC(e, launch(e, flags, deps, dep_count, deadline_ns, out, out_reason));
  return gf_null("hsad_graph_launch");
}

hsad_status_t hsad_graph_launch(hsad_graph_exec_t *e, uint32_t flags, uint64_t deadline_ns,
                                hsad_completion_t *out, hsad_graph_rollback_t *out_reason) {
  FU_BACKEND_EXEC(e, launch(e, flags, NULL, 0, deadline_ns, out, out_reason));
  return gf_null("hsad_graph_launch");
}

void hsad_graph_exec_counters(const hsad_graph_exec_t *e,
                              uint64_t out_counts[HSAD_GRAPH_ROLLBACK_COUNT]) {
  if (e) {
    fu_exec_ops(e)->counters(e, out_counts);
    return;
  }
  for (uint32_t i = 0; i < HSAD_GRAPH_ROLLBACK_COUNT; i++) out_counts[i] = 0;
}

hsad_status_t hsad_graph_exec_set_queue(hsad_graph_exec_t *e, uint32_t qi, hsad_queue_t *q) {
  FU_BACKEND_EXEC(e, set_queue(e, qi, q));
  return gf_null("hsad_graph_exec_set_queue");
}

hsad_status_t hsad_graph_exec_update(hsad_graph_exec_t *e, uint32_t node, const hsad_launch_t *l) {
  FU_BACKEND_EXEC(e, update(e, node, l));
  return gf_null("hsad_graph_exec_update");
}

hsad_status_t hsad_graph_exec_update_copy(hsad_graph_exec_t *e, uint32_t node, void *dst,
                                          const void *src, size_t size) {
  FU_BACKEND_EXEC(e, update_copy(e, node, dst, src, size));
  return gf_null("hsad_graph_exec_update_copy");
}

hsad_status_t hsad_graph_exec_update_fill(hsad_graph_exec_t *e, uint32_t node, void *dst,
                                          uint32_t pattern, uint32_t width, size_t count) {
  FU_BACKEND_EXEC(e, update_fill(e, node, dst, pattern, width, count));
  return gf_null("hsad_graph_exec_update_fill");
}
