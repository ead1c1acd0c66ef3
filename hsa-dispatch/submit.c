/* submit.c - hsad_submit.h: the ring internals exported for packet-writing modules. */
#include <stddef.h>
#include <string.h>

#include "hsa-dispatch/queue_submit.h"
#include "hsa-dispatch/hsad_submit.h"

hsad_status_t hsad_submit_check(const hsad_queue_t *q, const hsad_device_kernel_t *k,
                                const hsad_launch_t *l, hsad_aql_dispatch_t *out_body,
                                uint8_t *out_image) {
  dq_built_t *b = &dq_scratch;
  if (DQ_FOREIGN(q)) return dq_amd_only("hsad_submit_check", "the queue");
  hsad_status_t s = HSAD_NULL_ARGS("hsad_submit_check", {q, "queue"}, {k, "kernel"},
                                  {l, "launch"}, {out_body, "out_body"}, {out_image, "out_image"});
  if (!s) s = dq_launch_check(q, k, l, b);
  if (s) return s;
  *out_body = b->d;
  memcpy(out_image, b->image, k->desc.kernarg_segment_size);
  return HSAD_OK;
}

hsad_status_t hsad_submit_reserve(hsad_queue_t *q, uint32_t n, bool epoch_last,
                                  uint64_t deadline_ns, uint64_t *out_first, uint64_t *out_epoch) {
  if (DQ_FOREIGN(q)) return dq_amd_only("hsad_submit_reserve", "the queue");
  if (!q || !out_first || n == 0 || n > q->ring.size)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_submit_reserve: %u packets for a ring of "
                     "%u slots", n, q ? q->ring.size : 0);
  if (dq_gate(q)) { /* the sticky error, or a capture: a graph launch is not recorded */
    hsad_status_t s = dq_gate_fail(q, "hsad_submit_reserve");
    if (s) return s;
  }
  if (epoch_last) {
    uint64_t epoch = 0;
    hsad_status_t s = dq_reserve_epoch(q, n, true, deadline_ns, out_first, &epoch);
    if (!s && out_epoch) *out_epoch = epoch;
    return s;
  }
  if (out_epoch) *out_epoch = 0;
  return dq_reserve(q, n, deadline_ns, out_first);
}

hsad_status_t hsad_submit_reserve_epochs(hsad_queue_t *q, uint32_t n, uint32_t epoch_count,
                                         uint64_t deadline_ns, uint64_t *out_first,
                                         uint64_t *out_first_epoch) {
  if (DQ_FOREIGN(q)) return dq_amd_only("hsad_submit_reserve_epochs", "the queue");
  if (!q || !out_first || !out_first_epoch || n == 0 || n > q->ring.size || !epoch_count ||
      epoch_count > n)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_submit_reserve_epochs: %u packets with %u "
                     "epoch packets for a ring of %u slots", n, epoch_count, q ? q->ring.size : 0);
  if (dq_gate(q)) {
    hsad_status_t s = dq_gate_fail(q, "hsad_submit_reserve_epochs");
    if (s) return s;
  }
  return dq_reserve_epochs(q, n, epoch_count, deadline_ns, out_first, out_first_epoch);
}

hsad_status_t hsad_submit_dep_check(const hsad_completion_t *c, uint32_t index) {
  if (c && c->epoch && DQ_FOREIGN(c->queue))
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "dependency %u: a completion of a %s queue: the AMD "
                     "packet processor cannot wait for it (wait for it on the host first)", index,
                     c->queue->ops->name);
  return c ? dq_dep_check(c, index)
           : hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "dependency %u: NULL completion", index);
}

bool hsad_submit_profiling(const hsad_queue_t *q) { return q && q->ts_signals; }
uint64_t hsad_submit_timestamp_signal(hsad_queue_t *q, uint64_t id) {
  return q->ts_signals ? dq_ts_arm(q, id) : 0;
}

void hsad_submit_set_result_hook(hsad_queue_t *q, hsad_submit_result_fn hook, void *ctx) {
  if (!q) return;
  q->result_ctx = ctx;
  q->result_hook = hook;
}

_Static_assert(sizeof(hsad_submit_kernarg_slot_t) == sizeof(dq_ring_kernarg_slot_t) &&
                   offsetof(hsad_submit_kernarg_slot_t, stamp) ==
                       offsetof(dq_ring_kernarg_slot_t, stamp) &&
                   offsetof(hsad_submit_kernarg_slot_t, block) ==
                       offsetof(dq_ring_kernarg_slot_t, block),
               "hsad_submit_kernarg_slot_t is the ring's dq_ring_kernarg_slot_t");

void hsad_submit_ring(const hsad_queue_t *q, hsad_submit_ring_t *out) {
  *out = (hsad_submit_ring_t){.packets = q->ring.packets, .mask = q->ring.mask,
                              .kernargs = q->ring.kernargs, .kernarg_block = q->ring.kernarg_block,
                              .kernarg_slots = (hsad_submit_kernarg_slot_t *)(void *)q->ring.kernarg_slots,
                              .epoch_signal = q->epoch_signal.handle,
                              .epoch_value = q->epoch_value};
}

/* The cache class of a block of `size` bytes (4096 << class), or -1: above the largest. */
static int karg_class(size_t size) {
  int c = 0;
  while (c < 9 && ((size_t)4096 << c) < size) c++;
  return c < 9 ? c : -1;
}

hsad_status_t hsad_submit_kernarg_alloc(hsad_device_t *d, size_t size, void **out) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_submit_kernarg_alloc", {d, "device"},
                                   {out, "out_ptr"});
  if (ns) return ns;
  if (!size) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_submit_kernarg_alloc: size 0");
  if (!d->has_kernarg_pool)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "device %u: no kernarg memory pool reachable",
                     d->info.index);
  int c = karg_class(size);
  void *p = NULL;
  if (c >= 0) {
    pthread_mutex_lock(&d->lock);
    if (d->karg_cached[c]) p = d->karg_cache[c][--d->karg_cached[c]];
    pthread_mutex_unlock(&d->lock);
  }
  if (!p) {
    size_t bytes = c >= 0 ? (size_t)4096 << c : size;
    hsa_status_t st = hsad_rocr.hsa_amd_memory_pool_allocate(d->kernarg_pool, bytes, 0, &p);
    if (st == HSA_STATUS_SUCCESS) st = hsad_rocr.hsa_amd_agents_allow_access(1, &d->agent, NULL, p);
    if (st != HSA_STATUS_SUCCESS) {
      if (p) hsad_rocr.hsa_amd_memory_pool_free(p);
      return dq_hsa_fail(st, "kernarg memory of %zu bytes for device %u", size, d->info.index);
    }
  }
  memset(p, 0, size);
  *out = p;
  return HSAD_OK;
}

void hsad_submit_kernarg_free(hsad_device_t *d, void *p, size_t size) {
  if (!p) return;
  int c = d ? karg_class(size) : -1;
  if (c >= 0) {
    pthread_mutex_lock(&d->lock);
    bool kept = d->karg_cached[c] < 8;
    if (kept) d->karg_cache[c][d->karg_cached[c]++] = p;
    pthread_mutex_unlock(&d->lock);
    if (kept) return;
  }
  hsad_rocr.hsa_amd_memory_pool_free(p);
}

void *hsad_submit_slot(hsad_queue_t *q, uint64_t id) { return dq_slot(q, id); }
void *hsad_submit_kernarg(hsad_queue_t *q, uint64_t id) {
  return dq_ring_kernarg_claim(&q->ring, id, 1);
}
uint32_t hsad_submit_kernarg_block(const hsad_queue_t *q) { return q->ring.kernarg_block; }
uint32_t hsad_submit_kernarg_span(const hsad_queue_t *q, uint32_t ksize) {
  return dq_span(q, ksize);
}
uint64_t hsad_submit_epoch_signal(const hsad_queue_t *q) { return q->epoch_signal.handle; }
void hsad_submit_publish(hsad_queue_t *q, uint64_t id, uint32_t word) {
  hsad_aql_publish(dq_slot(q, id), word);
}
void hsad_submit_doorbell(hsad_queue_t *q, uint64_t last_id) { dq_ring_doorbell(&q->ring, last_id); }

_Static_assert(sizeof(hsad_submit_mark_t) == sizeof(dq_mon_mark_t) &&
                   offsetof(hsad_submit_mark_t, t0) == offsetof(dq_mon_mark_t, t0) &&
                   offsetof(hsad_submit_mark_t, scratch) == offsetof(dq_mon_mark_t, scratch) &&
                   offsetof(hsad_submit_mark_t, lane) == offsetof(dq_mon_mark_t, lane) &&
                   offsetof(hsad_submit_mark_t, t1) == offsetof(dq_mon_mark_t, t1),
               "hsad_submit_mark_t mirrors dq_mon_mark_t");

bool hsad_submit_monitored(const hsad_queue_t *q) { return q && q->monitor; }

void hsad_submit_monitor_begin(hsad_queue_t *q, hsad_submit_mark_t *mark) {
  dq_mon_mark_t m;
  dq_monitor_begin(q, &m);
  *mark = (hsad_submit_mark_t){.t0 = m.t0, .scratch = m.scratch, .lane = m.lane};
}

void hsad_submit_monitor_close(hsad_submit_mark_t *mark) {
  if (mark) mark->t1 = hsad_now_ns();
}

void hsad_submit_monitor_record(hsad_queue_t *q, const hsa_kernel_dispatch_packet_t *p,
                                uint16_t dims, uint64_t id, const hsad_submit_mark_t *mark) {
  if (!q || !q->monitor || !p || !mark) return;
  hsad_aql_dispatch_t d = {
      .dims = dims,
      .workgroup_size = {p->workgroup_size_x, p->workgroup_size_y, p->workgroup_size_z},
      .grid_size = {p->grid_size_x, p->grid_size_y, p->grid_size_z},
      .private_segment_size = p->private_segment_size,
      .group_segment_size = p->group_segment_size,
      .kernel_object = p->kernel_object,
      .kernarg_address = p->kernarg_address,
      .completion_signal = p->completion_signal.handle,
  };
  dq_mon_mark_t m = {.t0 = mark->t0, .scratch = mark->scratch, .lane = mark->lane,
                     .t1 = mark->t1 ? mark->t1 : hsad_now_ns()};
  dq_monitor_end(q, &d, id, &m);
}

/* ---- devices of other vendors --------------------------------------------------------- */

/* d is read only once it is known to be one of the open runtime's devices: a pointer that is
 * not a device is refused by the caller's own check, never dereferenced here. */
bool hsad_submit_device_foreign(const hsad_device_t *d) { return hsad_device_runtime(d) && d->ops; }

hsad_status_t hsad_submit_foreign_mem_alloc(hsad_device_t *d, uint32_t kind, size_t size,
                                            void **out_ptr) {
  hsad_status_t s = dq_check_open();
  if (s) return s;
  return d->ops->mem_alloc(d, d->backend_device, kind, size, out_ptr);
}

hsad_status_t hsad_submit_foreign_buffer_alloc(hsad_device_t *d, size_t size, void **out_ptr) {
  hsad_status_t s = dq_check_open();
  if (s) return s;
  return d->ops->buffer_alloc(d, d->backend_device, size, out_ptr);
}

hsad_status_t hsad_submit_foreign_mem_free(void *ptr) {
  for (const hsad_backend_ops_t *const *b = hsad_backends; *b; b++) {
    hsad_status_t s = (*b)->mem_free(ptr);
    if (s != HSAD_ERR_NOT_ALLOCATED) return s;
  }
  return HSAD_ERR_NOT_ALLOCATED;
}

hsad_status_t hsad_submit_foreign_memcpy_async(hsad_device_t *d, void *dst, const void *src,
                                               size_t size, const hsad_completion_t *deps,
                                               uint32_t dep_count,
                                               const struct hsad_copy_options *options,
                                               uint64_t deadline_ns,
                                               hsad_completion_t *out_completion) {
  hsad_status_t s = dq_check_open();
  if (s) return s;
  return d->ops->memcpy_async(d, d->backend_device, dst, src, size, deps, dep_count, options,
                              deadline_ns, out_completion);
}

hsad_status_t hsad_submit_foreign_host_pool_get(hsad_device_t *d, struct hsad_host_pool **out) {
  hsad_status_t s = dq_check_open();
  if (s) return s;
  return d->ops->host_pool_get(d, d->backend_device, out);
}
