/* gate.c - the queue's gate (the sticky error and the capture flag in one word, dq_gate) and
 * the capture hooks fusion/capture.c records through (hsad_submit.h "capture"). Cold. */
#include "hsa-dispatch/dispatch_internal.h"

hsad_status_t dq_gate_fail(const hsad_queue_t *q, const char *who) {
  if (q->ops) return dq_amd_only(who, "the queue");
  if (atomic_load_explicit(&q->error, memory_order_acquire)) return dq_queue_fail(q);
  if (!atomic_load_explicit(&((hsad_queue_t *)q)->capturing, memory_order_acquire))
    return HSAD_OK; /* the capture ended since the gate was read */
  return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: queue %llu is capturing "
                   "(hsad_queue_capture_begin): a capture records hsad_kernel_dispatch and "
                   "hsad_queue_barrier only; end it first (hsad_queue_capture_end)", who,
                   (unsigned long long)q->hsa->id);
}

hsad_status_t hsad_submit_capture_start(hsad_queue_t *q, const hsad_submit_capture_ops_t *ops,
                                        void *ctx) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_submit_capture_start", {q, "queue"}, {ops, "ops"},
                                  {ctx, "ctx"});
  if (s) return s;
  if (q->ops) /* AQL-level hooks; hsad_queue_capture_begin captures them by their table */
    return dq_amd_only("hsad_submit_capture_start", "the queue");
  if (atomic_load_explicit(&q->error, memory_order_acquire)) return dq_queue_fail(q);
  if (q->shared)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "queue %llu is a shared queue of device %u "
                     "(hsad_device_queue): its other users' submits would be captured; capture "
                     "on a queue of your own (hsad_queue_create)",
                     (unsigned long long)q->hsa->id, q->device->info.index);
  if (atomic_load_explicit(&q->capturing, memory_order_relaxed))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "queue %llu is already capturing",
                     (unsigned long long)q->hsa->id);
  q->capture_ctx = ctx;
  atomic_store_explicit(&q->capture_ops, ops, memory_order_release);
  atomic_store_explicit(&q->capturing, 1, memory_order_seq_cst);
  atomic_store(&q->hot_uid, 0); /* after the gate (dq_queue_hot_refresh) */
  return HSAD_OK;
}

void *hsad_submit_capture_stop(hsad_queue_t *q) {
  if (!q || q->ops || !atomic_load_explicit(&q->capturing, memory_order_relaxed)) return NULL;
  atomic_store_explicit(&q->capturing, 0, memory_order_seq_cst);
  atomic_store_explicit(&q->capture_ops, NULL, memory_order_release);
  dq_queue_hot_refresh(q);
  void *ctx = q->capture_ctx;
  q->capture_ctx = NULL;
  return ctx;
}

void *hsad_submit_capture_ctx(const hsad_queue_t *q) {
  return q && !q->ops && atomic_load_explicit(&((hsad_queue_t *)q)->capturing, memory_order_acquire)
             ? q->capture_ctx
             : NULL;
}

