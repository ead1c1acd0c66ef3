/* queue.c - hardware queues: creation (ROCr queue, kernarg blocks, timeline), the device's
 * shared queues, destruction and the sticky queue error (hsad_queue.h step 10). */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hsa-dispatch/dispatch_internal.h"

/* ---- sticky errors ---------------------------------------------------------------------- */

hsad_status_t dq_queue_fail(const hsad_queue_t *q) {
  int e = atomic_load_explicit(&q->error, memory_order_acquire);
  if (e == HSAD_ERR_CLOSED)
    return hsad_fail(HSAD_ERR_CLOSED, "queue on device %u: the hsa-dispatch runtime was closed",
                     q->device->info.index);
  return hsad_fail(HSAD_ERR_QUEUE_ERROR, "%s", q->error_msg);
}

/* ROCr's queue error callback (runs on ROCr's async event thread). */
static void queue_error_cb(hsa_status_t status, hsa_queue_t *source, void *data) {
  (void)source;
  hsad_queue_t *q = data;
  if (atomic_load_explicit(&q->error, memory_order_relaxed)) return;
  const char *s = NULL;
  if (hsad_rocr.hsa_status_string(status, &s) != HSA_STATUS_SUCCESS || !s) s = "unknown";
  q->hsa_status = status;
  snprintf(q->error_msg, sizeof q->error_msg,
           "queue %llu on device %u (%s) faulted: HSA status 0x%x (%s); %s",
           (unsigned long long)q->hsa->id, q->device->info.index, q->device->info.isa_name,
           (unsigned)status, s,
           q->shared ? "a shared queue: hsad_device_queue hands out its replacement"
                     : "destroy it and create a new queue");
  dq_timeline_fault(q); /* how far the timeline got */
  /* release: the message is written before the error becomes visible */
  atomic_store_explicit(&q->error, HSAD_ERR_QUEUE_ERROR, memory_order_seq_cst);
  atomic_store(&q->hot_uid, 0); /* after the gate (dq_queue_hot_refresh) */
  /* Release every host and device waiter on the timeline now (epoch value 0 is below every
   * epoch's threshold; waits then see the error). */
  hsad_rocr.hsa_signal_store_screlease(q->epoch_signal, 0);
}

hsad_status_t hsad_queue_error(const hsad_queue_t *q) {
  if (!q) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_error: NULL queue");
  if (DQ_FOREIGN(q)) return q->ops->queue_error(q);
  return atomic_load_explicit(&q->error, memory_order_acquire) ? dq_queue_fail(q) : HSAD_OK;
}

void dq_device_release(hsad_device_t *d) {
  /* Shared queues were closed with the live list; hsa_shut_down frees their ROCr objects. */
  for (int i = 0; i < HSAD_SHARED_QUEUES; i++) d->shared[i] = NULL;
  memset(d->karg_cached, 0, sizeof d->karg_cached); /* their memory goes with hsa_shut_down */
}

/* ---- queues ----------------------------------------------------------------------------- */

static hsad_status_t queue_create(hsad_device_t *d, const hsad_queue_options_t *o, bool shared,
                                  hsad_queue_t **out_queue) {
  hsad_queue_options_t def = {0};
  if (!o) o = &def;
  const hsad_device_info_t *di = &d->info;
  uint32_t size = o->size;
  if (!size) {
    size = 1024;
    if (size < di->queue_min_size) size = di->queue_min_size;
    if (di->queue_max_size && size > di->queue_max_size) size = di->queue_max_size;
  }
  if ((size & (size - 1)) || size < di->queue_min_size ||
      (di->queue_max_size && size > di->queue_max_size))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "queue size %u packets: must be a power of two "
                     "in [%u, %u] on device %u", size, di->queue_min_size, di->queue_max_size,
                     di->index);
  uint32_t kb = o->kernarg_block_size ? o->kernarg_block_size : 512;
  if (kb % 64 || kb > DQ_KERNARG_SEGMENT_MAX)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "kernarg_block_size %u: must be a multiple of 64 "
                     "up to %u bytes", kb, DQ_KERNARG_SEGMENT_MAX);
  if (o->private_segment_size > di->max_private_per_work_item)
    return hsad_fail(HSAD_ERR_SCRATCH_LIMIT, "queue private_segment_size %u bytes per work-item "
                     "exceeds device %u's limit of %u (%u bytes per wave / wavefront %u)",
                     o->private_segment_size, di->index, di->max_private_per_work_item,
                     HSAD_MAX_WAVE_SCRATCH, di->wavefront_size);
  if (!d->has_kernarg_pool)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "device %u: no kernarg memory pool reachable", di->index);
  /* the queue, then its ring's kernarg slots (aql_ring.h: one per slot) */
  size_t qbytes =
      (sizeof(hsad_queue_t) + (size_t)size * sizeof(dq_ring_kernarg_slot_t) + 63) & ~(size_t)63;
  hsad_queue_t *q = aligned_alloc(64, qbytes);
  if (!q) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_queue_create: out of host memory");
  memset(q, 0, qbytes);
  q->device = d;
  q->shared = shared;
  q->dynamic_stack = o->dynamic_stack_size ? o->dynamic_stack_size : 16384;
  q->spin_ns = o->spin_ns ? o->spin_ns : 50000;
  q->profiling = o->profiling;
  hsa_status_t st = hsad_rocr.hsa_queue_create(d->agent, size, HSA_QUEUE_TYPE_MULTI, queue_error_cb, q,
                                     o->private_segment_size ? o->private_segment_size : UINT32_MAX,
                                     UINT32_MAX, &q->hsa);
  if (st != HSA_STATUS_SUCCESS) {
    free(q);
    if (st == HSA_STATUS_ERROR_OUT_OF_RESOURCES && o->private_segment_size)
      return dq_hsa_fail(st, "hsad_rocr.hsa_queue_create(device %u, %u packets) reserving %u bytes of "
                         "scratch per work-item for every wave slot of the device (ROCr sizes "
                         "queue scratch as bytes x 64 lanes x scratch slots x CUs); use a smaller "
                         "private_segment_size, or 0 to let ROCr grow scratch on demand",
                         di->index, size, o->private_segment_size);
    return dq_hsa_fail(st, "hsad_rocr.hsa_queue_create(device %u, %u packets)", di->index, size);
  }
  void *ka = NULL;
  size_t kbytes = ((size_t)size + dq_kernarg_spare(kb, size)) * kb;
  st = hsad_rocr.hsa_amd_memory_pool_allocate(d->kernarg_pool, kbytes, 0, &ka);
  if (st == HSA_STATUS_SUCCESS) st = hsad_rocr.hsa_amd_agents_allow_access(1, &d->agent, NULL, ka);
  if (st != HSA_STATUS_SUCCESS) {
    if (ka) hsad_rocr.hsa_amd_memory_pool_free(ka);
    hsad_rocr.hsa_queue_destroy(q->hsa);
    free(q);
    return dq_hsa_fail(st, "kernarg ring of (%u + %u) x %u bytes for device %u", size,
                       dq_kernarg_spare(kb, size), kb, di->index);
  }
  memset(ka, 0, kbytes);
  q->amd = (amd_queue_t *)q->hsa;
  dq_ring_init(&q->ring, q->amd, ka, kb, (dq_ring_kernarg_slot_t *)(void *)(q + 1),
               hsad_rocr.hsa_signal_store_screlease);
  hsad_status_t s = dq_timeline_init(q);
  if (s) {
    hsad_rocr.hsa_amd_memory_pool_free(ka);
    hsad_rocr.hsa_queue_destroy(q->hsa);
    free(q);
    return s;
  }
  if (o->profiling) hsad_rocr.hsa_amd_profiling_set_profiler_enabled(q->hsa, 1);
  q->queue_ptr = (uint64_t)(uintptr_t)q->hsa;
  q->private_base_hi = q->amd->private_segment_aperture_base_hi;
  q->shared_base_hi = q->amd->group_segment_aperture_base_hi;
  q->karg_rt = (hsad_kernarg_runtime_t){.queue_ptr = q->queue_ptr,
                                        .private_base = q->private_base_hi,
                                        .shared_base = q->shared_base_hi};
  q->uid = dq_next_uid();
  q->max_private = di->max_private_per_work_item;
  q->lds_bytes = di->lds_bytes;
  dq_queue_general(q);
  dq_monitor_queue_created(q);
  pthread_mutex_lock(&hsad_rt.lock);
  q->next = hsad_rt.queues;
  hsad_rt.queues = q;
  pthread_mutex_unlock(&hsad_rt.lock);
  *out_queue = q;
  return HSAD_OK;
}

hsad_status_t hsad_queue_create(hsad_device_t *device, const hsad_queue_options_t *options,
                                hsad_queue_t **out_queue) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_queue_create", {device, "device"},
                                  {out_queue, "out_queue"});
  if (!s) s = dq_check_open();
  if (s) return s;
  if (DQ_FOREIGN(device)) {
    s = device->ops->queue_create(device, device->backend_device, options, out_queue);
    if (!s && device->ops->monitor_enable) dq_monitor_queue_created(*out_queue);
    return s;
  }
  return queue_create(device, options, false, out_queue);
}

static void queue_free(hsad_queue_t *q, bool live) {
  if (live) {
    dq_monitor_fini(q);
    hsad_rocr.hsa_queue_destroy(q->hsa);
    dq_resident_reclaim(q, true);
    hsad_rocr.hsa_amd_memory_pool_free(q->ring.kernargs);
    dq_timeline_fini(q);
  }
  free(q);
}

void hsad_queue_destroy(hsad_queue_t *q) {
  if (DQ_FOREIGN(q)) {
    q->ops->queue_destroy(q);
    return;
  }
  if (!q || q->shared) return;
  bool live = false;
  pthread_mutex_lock(&hsad_rt.lock);
  for (hsad_queue_t **pp = &hsad_rt.queues; *pp; pp = &(*pp)->next)
    if (*pp == q) {
      *pp = q->next;
      live = true;
      break;
    }
  pthread_mutex_unlock(&hsad_rt.lock);
  queue_free(q, live && dq_is_open());
}

/* The oldest packet of q in [from, to) whose kernel_object is a kernel of a live program:
 * "kernel 'NAME', packet ID" into out, or "" (runtime lock held). */
static void oldest_kernel(const hsad_queue_t *q, uint64_t from, uint64_t to, char *out, size_t n) {
  out[0] = 0;
  for (uint64_t id = from; id < to; id++) {
    const uint8_t *slot = dq_ring_slot(&q->ring, id);
    uint64_t ko = __atomic_load_n((const uint64_t *)(const void *)(slot + 32), __ATOMIC_RELAXED);
    for (const hsad_program_t *p = hsad_rt.programs; p; p = p->next)
      for (uint32_t k = 0; p->device == q->device && k < p->kernel_count; k++)
        if (p->kernels[k].desc.kernel_object == ko) {
          snprintf(out, n, "; the oldest, packet %llu, a dispatch of kernel '%s'",
                   (unsigned long long)id, p->kernels[k].desc.name);
          return;
        }
  }
}

hsad_status_t hsad_queue_destroy_deadline(hsad_queue_t *q, uint64_t deadline_ns) {
  static const char what[] = "hsad_queue_destroy_deadline";
  if (!q) return HSAD_OK;
  if (!q->ops && q->shared)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: queue %llu is one of device %u's shared "
                     "queues (hsad_device_queue): the runtime destroys it at its last close",
                     what, (unsigned long long)q->hsa->id, q->device->info.index);
  /* a closed runtime or a faulted queue runs nothing more: the wait answers at once */
  hsad_status_t s = hsad_queue_wait_idle(q, deadline_ns);
  if (s == HSAD_ERR_TIMEOUT && !q->ops) {
    char oldest[320];
    pthread_mutex_lock(&hsad_rt.lock);
    uint64_t w = __atomic_load_n(&q->amd->write_dispatch_id, __ATOMIC_ACQUIRE);
    uint64_t r = dq_retire(q);
    if (w - r > q->ring.size) r = w - q->ring.size;
    oldest_kernel(q, r, w, oldest, sizeof oldest);
    pthread_mutex_unlock(&hsad_rt.lock);
    return hsad_fail(HSAD_ERR_TIMEOUT, "%s: queue %llu on device %u: packets %llu to %llu had "
                     "not completed by the deadline%s. Not destroyed: the queue is live and "
                     "usable (its timeline closed by a barrier-AND); call again with a later "
                     "deadline, or let the process exit", what,
                     (unsigned long long)q->hsa->id, q->device->info.index,
                     (unsigned long long)r, (unsigned long long)(w - 1), oldest);
  }
  if (s == HSAD_ERR_TIMEOUT || s == HSAD_ERR_INVALID_ARGUMENT) return s; /* capturing */
  hsad_queue_destroy(q); /* idle, faulted or closed: hsa_queue_destroy returns at once */
  hsad_clear_error();
  return HSAD_OK;
}

/* Shared queues of closed runtimes: kept (not freed) so that handles a caller still holds read
 * HSAD_ERR_CLOSED instead of freed memory; freed when the process exits (the caller can never
 * destroy them). At most min(2, queues_max) per device and open/close cycle, plus shared queues
 * that faulted and were replaced. Only touched under hsad_rt.lock and at exit. */
static hsad_queue_t *dq_graveyard;

__attribute__((destructor)) static void dq_graveyard_free(void) {
  for (hsad_queue_t *q = dq_graveyard, *next; q; q = next) {
    next = q->next;
    free(q);
  }
  dq_graveyard = NULL;
}

void dq_queues_close_all(void) {
  for (hsad_queue_t *q = hsad_rt.queues, *next; q; q = next) {
    next = q->next;
    atomic_store(&q->error, HSAD_ERR_CLOSED);
    atomic_store(&q->hot_uid, 0); /* after the gate (dq_queue_hot_refresh) */
    dq_monitor_fini(q);
    hsad_rocr.hsa_queue_destroy(q->hsa);
    dq_resident_drop(q);
    hsad_rocr.hsa_amd_memory_pool_free(q->ring.kernargs);
    dq_timeline_fini(q);
    if (q->shared) {
      q->next = dq_graveyard;
      dq_graveyard = q;
    }
  }
  hsad_rt.queues = NULL;
  for (hsad_program_t *p = hsad_rt.programs; p; p = p->next) {
    hsad_rocr.hsa_executable_destroy(p->executable);
    hsad_rocr.hsa_code_object_reader_destroy(p->reader);
    p->dead = true;
  }
  hsad_rt.programs = NULL;
}

hsad_status_t hsad_device_queue(hsad_device_t *d, hsad_queue_t **out_queue) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_device_queue", {d, "device"}, {out_queue, "out_queue"});
  if (!s) s = dq_check_open();
  if (s) return s;
  if (DQ_FOREIGN(d)) return d->ops->device_queue(d, d->backend_device, out_queue);
  uint32_t n = d->info.queues_max && d->info.queues_max < HSAD_SHARED_QUEUES ? d->info.queues_max
                                                                             : HSAD_SHARED_QUEUES;
  uint32_t i = atomic_fetch_add_explicit(&d->shared_rr, 1, memory_order_relaxed) % n;
  hsad_queue_t *q = __atomic_load_n(&d->shared[i], __ATOMIC_ACQUIRE);
  if (DQ_LIKELY(q && !atomic_load_explicit(&q->error, memory_order_relaxed))) {
    *out_queue = q;
    return HSAD_OK;
  }
  pthread_mutex_lock(&d->lock);
  q = d->shared[i];
  if (!q || atomic_load(&q->error)) {
    /* A faulted shared queue stays allocated (holders see its error); replace it. */
    hsad_queue_t *nq = NULL;
    s = queue_create(d, NULL, true, &nq);
    if (s == HSAD_OK) __atomic_store_n(&d->shared[i], nq, __ATOMIC_RELEASE);
    q = nq;
  }
  pthread_mutex_unlock(&d->lock);
  if (s) return s;
  *out_queue = q;
  return HSAD_OK;
}

hsad_device_t *hsad_queue_device(const hsad_queue_t *q) {
  if (DQ_FOREIGN(q)) return q->ops->queue_device(q);
  return q ? q->device : NULL;
}
hsa_queue_t *hsad_queue_hsa(const hsad_queue_t *q) { return q && !q->ops ? q->hsa : NULL; }
uint32_t hsad_queue_size(const hsad_queue_t *q) {
  if (DQ_FOREIGN(q)) return q->ops->queue_size(q);
  return q ? q->ring.size : 0;
}

