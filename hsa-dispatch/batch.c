/* batch.c - hsad_queue_dispatch_batch: many dispatches as one contiguous run of packets
 * (hsad_queue.h, batches): every entry checked first, one reservation, bodies filled, headers
 * published last-to-first, one doorbell. */
#include "hsa-dispatch/queue_submit.h"

/* Slots of batch entry i: its dispatch and its padding (hsad_queue.h step 4). */
static inline uint32_t batch_span(const hsad_queue_t *q, const hsad_dispatch_desc_t *it) {
  return dq_span(q, it->kernel->desc.kernarg_segment_size);
}

hsad_status_t hsad_queue_dispatch_batch(hsad_queue_t *q, const hsad_dispatch_desc_t *items,
                                        uint32_t count, uint64_t deadline_ns,
                                        hsad_completion_t *out_completion,
                                        uint64_t *out_first_packet_id) {
  hsad_status_t args = hsad_batch_args_check(q, items, count);
  if (args) return args;
  if (q->ops)
    return hsad_backend_batch_one_by_one(q, items, count, deadline_ns, out_completion,
                                         out_first_packet_id);
  if (dq_gate(q)) {
    hsad_status_t s = dq_gate_fail(q, "hsad_queue_dispatch_batch");
    if (s) return s;
  }
  if (count > q->ring.size)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "batch of %u packets exceeds the queue's %u "
                     "slots", count, q->ring.size);
  dq_built_t *const bp = &dq_scratch;
  /* Pass 1: validate everything before anything is reserved; count the slots. */
  uint32_t slots = 0;
  for (uint32_t i = 0; i < count; i++) {
    hsad_status_t s = items[i].kernel ? dq_launch_check(q, items[i].kernel, &items[i].launch, bp)
                                      : hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "NULL kernel");
    if (s) return hsad_batch_entry_fail(s, i);
    slots += batch_span(q, &items[i]);
  }
  /* The completion rides on the last dispatch when it has the BARRIER bit, no timestamp
   * signal and no padding; else on the last entry's last padding packet; else on a
   * barrier-AND after it. */
  uint32_t last_span = batch_span(q, &items[count - 1]);
  bool carries_epoch = out_completion && last_span == 1 &&
             !(items[count - 1].launch.flags & HSAD_LAUNCH_NO_BARRIER) && !q->ts_signals;
  bool trailing_epoch = out_completion && last_span == 1 && !carries_epoch;
  uint32_t total = slots + trailing_epoch;
  if (total > q->ring.size)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "batch of %u packets (%u dispatches + %u "
                     "kernarg padding + %u completion barrier) exceeds the queue's %u slots",
                     total, count, slots - count, (uint32_t)trailing_epoch, q->ring.size);
  uint64_t first = 0, epoch = 0;
  dq_mon_mark_t mark;
  if (DQ_UNLIKELY(q->monitor)) dq_monitor_begin(q, &mark);
  hsad_status_t s = out_completion
                        ? dq_reserve_epoch(q, total, true, deadline_ns, &first, &epoch)
                        : dq_reserve(q, total, deadline_ns, &first);
  if (s) return s;
  /* Pass 2: build kernargs and fill every dispatch body; headers stay INVALID. The inputs were
   * validated in pass 1 and are the caller's const data: the build cannot fail now. */
  for (uint32_t i = 0, at = 0; i < count; at += batch_span(q, &items[i]), i++) {
    uint64_t id = first + at;
    (void)dq_launch_check(q, items[i].kernel, &items[i].launch, bp);
    uint64_t sig = carries_epoch && i == count - 1 ? q->epoch_signal.handle
                   : q->ts_signals       ? dq_ts_arm(q, id)
                                         : 0;
    (void)dq_fill_dispatch(q, id, &bp->d, bp->image, items[i].kernel->desc.kernarg_segment_size,
                        dq_dispatch_header(items[i].launch.flags), sig);
  }
  /* Pass 3: publish last-to-first (each entry's padding before it; the last entry's run ends
   * with the epoch packet unless the dispatch carries it), so the first packet becomes valid
   * last. */
  for (uint32_t i = count, at = slots; i-- > 0;) {
    uint32_t span = batch_span(q, &items[i]);
    at -= span;
    bool last = i == count - 1;
    dq_publish_padding(q, first + at, span + (last && trailing_epoch),
                       last && out_completion && !carries_epoch);
    uint32_t dims = items[i].launch.dims;
    hsad_aql_publish(dq_slot(q, first + at),
                     dq_dispatch_header(items[i].launch.flags) |
                         (dims << (16 + HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS)));
  }
  dq_ring_commit(&q->ring, first, total);
  /* Monitoring on: one record per entry, after the doorbell (pass 4 rebuilds each body; the
   * ring slots may already be reused) */
  if (DQ_UNLIKELY(q->monitor)) {
    dq_monitor_close(&mark); /* one submit interval for the whole batch */
    for (uint32_t i = 0, at = 0; i < count; at += batch_span(q, &items[i]), i++) {
      (void)dq_launch_check(q, items[i].kernel, &items[i].launch, bp);
      dq_monitor_end(q, &bp->d, first + at, &mark);
    }
  }
  if (out_completion)
    *out_completion =
        (hsad_completion_t){.queue = q, .epoch = epoch, .packet_id = first + total - 1};
  if (out_first_packet_id) *out_first_packet_id = first;
  return HSAD_OK;
}
