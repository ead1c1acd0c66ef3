/* queue.c - hardware queues, the AQL dispatch path, batches, the signal pool and waits.
 * The protocol and its memory ordering are documented in hsad_queue.h. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hsa-dispatch/dispatch_internal.h"

#define DQ_LIKELY(x) __builtin_expect(!!(x), 1)
#define DQ_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define DQ_KARG_STACK 4096 /* largest kernarg block a dispatch builds on the stack */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* ---- sticky errors ---------------------------------------------------------------------- */

static hsad_status_t queue_fail(const hsad_queue_t *q) {
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
           "queue %llu on device %u (%s) faulted: HSA status 0x%x (%s); destroy it and create a "
           "new queue", (unsigned long long)q->hsa->id, q->device->info.index,
           q->device->info.isa_name, (unsigned)status, s);
  /* release: the message is written before the error becomes visible */
  atomic_store_explicit(&q->error, HSAD_ERR_QUEUE_ERROR, memory_order_release);
  /* Complete the queue's outstanding pool signals with -1 so blocked waiters wake now. */
  hsad_completion_t *pool = atomic_load_explicit(&q->device->signals_ready, memory_order_acquire);
  for (uint32_t i = 0; pool && i < HSAD_SIGNAL_POOL_SIZE; i++) {
    hsad_completion_t *c = &pool[i];
    if (atomic_load_explicit(&c->state, memory_order_acquire) != DQ_SIG_FREE &&
        atomic_load_explicit(&c->queue, memory_order_acquire) == q)
      hsad_rocr.hsa_signal_store_screlease(c->signal, -1);
  }
}

hsad_status_t hsad_queue_error(const hsad_queue_t *q) {
  if (!q) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_error: NULL queue");
  return atomic_load_explicit(&q->error, memory_order_acquire) ? queue_fail(q) : HSAD_OK;
}

/* ---- signal pool ------------------------------------------------------------------------ */

static hsad_completion_t *pool_get(hsad_device_t *d) {
  hsad_completion_t *pool = atomic_load_explicit(&d->signals_ready, memory_order_acquire);
  if (DQ_LIKELY(pool)) return pool;
  pthread_mutex_lock(&d->lock);
  pool = d->signals;
  if (!pool) {
    pool = calloc(HSAD_SIGNAL_POOL_SIZE, sizeof *pool);
    uint32_t n = 0;
    for (; pool && n < HSAD_SIGNAL_POOL_SIZE; n++) {
      if (hsad_rocr.hsa_signal_create(0, 0, NULL, &pool[n].signal) != HSA_STATUS_SUCCESS) break;
      pool[n].amd = (amd_signal_t *)(uintptr_t)pool[n].signal.handle;
      pool[n].device = d;
    }
    if (pool && n < HSAD_SIGNAL_POOL_SIZE) {
      while (n--) hsad_rocr.hsa_signal_destroy(pool[n].signal);
      free(pool);
      pool = NULL;
    }
    d->signals = pool;
    if (pool) atomic_store_explicit(&d->signals_ready, pool, memory_order_release);
  }
  pthread_mutex_unlock(&d->lock);
  return pool;
}

hsad_completion_t *dq_signal_acquire(hsad_device_t *d) {
  hsad_completion_t *pool = pool_get(d);
  if (!pool) return NULL;
  uint32_t start = atomic_fetch_add_explicit(&d->signal_hint, 1, memory_order_relaxed);
  for (uint32_t i = 0; i < HSAD_SIGNAL_POOL_SIZE; i++) {
    hsad_completion_t *c = &pool[(start + i) % HSAD_SIGNAL_POOL_SIZE];
    uint32_t st = atomic_load_explicit(&c->state, memory_order_relaxed);
    if (st == DQ_SIG_ORPHAN &&
        __atomic_load_n(&c->amd->value, __ATOMIC_ACQUIRE) > 0)
      continue; /* released while its packet was in flight: not yet reusable */
    if (st != DQ_SIG_BUSY &&
        atomic_compare_exchange_strong_explicit(&c->state, &st, DQ_SIG_BUSY,
                                                memory_order_acquire, memory_order_relaxed))
      return c;
  }
  return NULL;
}

void hsad_completion_release(hsad_completion_t *c) {
  if (!c) return;
  bool in_flight = __atomic_load_n(&c->amd->value, __ATOMIC_ACQUIRE) > 0;
  atomic_store_explicit(&c->queue, NULL, memory_order_relaxed);
  atomic_store_explicit(&c->state, in_flight ? DQ_SIG_ORPHAN : DQ_SIG_FREE, memory_order_release);
}

void dq_device_release(hsad_device_t *d) {
  /* Shared queues were closed with the live list; hsa_shut_down frees their ROCr objects. */
  for (int i = 0; i < HSAD_SHARED_QUEUES; i++) d->shared[i] = NULL;
  if (d->signals) {
    for (uint32_t i = 0; i < HSAD_SIGNAL_POOL_SIZE; i++) hsad_rocr.hsa_signal_destroy(d->signals[i].signal);
    free(d->signals);
  }
  d->signals = NULL;
  atomic_store(&d->signals_ready, NULL);
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
  if (kb % 64 || kb > DQ_KARG_STACK)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "kernarg_block_size %u: must be a multiple of 64 "
                     "up to %u bytes", kb, DQ_KARG_STACK);
  if (o->private_segment_size > di->max_private_per_work_item)
    return hsad_fail(HSAD_ERR_SCRATCH_LIMIT, "queue private_segment_size %u bytes per work-item "
                     "exceeds device %u's limit of %u (%u bytes per wave / wavefront %u)",
                     o->private_segment_size, di->index, di->max_private_per_work_item,
                     HSAD_MAX_WAVE_SCRATCH, di->wavefront_size);
  if (!d->has_kernarg_pool)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "device %u: no kernarg memory pool reachable", di->index);
  hsad_queue_t *q = aligned_alloc(64, (sizeof *q + 63) & ~(size_t)63);
  if (!q) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_queue_create: out of host memory");
  memset(q, 0, sizeof *q);
  q->device = d;
  q->shared = shared;
  q->size = size;
  q->mask = size - 1;
  q->kernarg_block = kb;
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
  st = hsad_rocr.hsa_amd_memory_pool_allocate(d->kernarg_pool, (size_t)size * kb, 0, &ka);
  if (st == HSA_STATUS_SUCCESS) st = hsad_rocr.hsa_amd_agents_allow_access(1, &d->agent, NULL, ka);
  if (st != HSA_STATUS_SUCCESS) {
    if (ka) hsad_rocr.hsa_amd_memory_pool_free(ka);
    hsad_rocr.hsa_queue_destroy(q->hsa);
    free(q);
    return dq_hsa_fail(st, "kernarg ring of %u x %u bytes for device %u", size, kb, di->index);
  }
  memset(ka, 0, (size_t)size * kb);
  q->kernargs = ka;
  if (o->profiling) hsad_rocr.hsa_amd_profiling_set_profiler_enabled(q->hsa, 1);
  q->amd = (amd_queue_t *)q->hsa;
  q->ring = q->hsa->base_address;
  q->doorbell_signal = q->hsa->doorbell_signal;
  amd_signal_t *ds = (amd_signal_t *)(uintptr_t)q->doorbell_signal.handle;
  /* Doorbell type 2 (gfx9+): ROCr's AqlQueue::StoreRelaxed stores the 64-bit packet id at
   * hardware_doorbell_ptr with release ordering; do the same without the call. */
  q->doorbell = (ds && ds->kind == AMD_SIGNAL_KIND_DOORBELL) ? ds->hardware_doorbell_ptr : NULL;
  q->queue_ptr = (uint64_t)(uintptr_t)q->hsa;
  q->private_base_hi = q->amd->private_segment_aperture_base_hi;
  q->shared_base_hi = q->amd->group_segment_aperture_base_hi;
  q->karg_rt = (hsad_kernarg_runtime_t){.queue_ptr = q->queue_ptr,
                                        .private_base = q->private_base_hi,
                                        .shared_base = q->shared_base_hi};
  q->uid = dq_next_uid();
  q->max_private = di->max_private_per_work_item;
  q->lds_bytes = di->lds_bytes;
  pthread_mutex_lock(&hsad_rt.lock);
  q->next = hsad_rt.queues;
  hsad_rt.queues = q;
  pthread_mutex_unlock(&hsad_rt.lock);
  /* the device's signal pool exists before the first dispatch needs it (shared queues are
   * created under d->lock: hsad_device_queue does it after unlocking) */
  if (!shared) (void)pool_get(d);
  *out_queue = q;
  return HSAD_OK;
}

hsad_status_t hsad_queue_create(hsad_device_t *device, const hsad_queue_options_t *options,
                                hsad_queue_t **out_queue) {
  if (!device || !out_queue)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_create: NULL device or out_queue");
  hsad_status_t s = dq_check_open();
  if (s) return s;
  return queue_create(device, options, false, out_queue);
}

static void queue_free(hsad_queue_t *q, bool live) {
  if (live) {
    hsad_rocr.hsa_queue_destroy(q->hsa);
    hsad_rocr.hsa_amd_memory_pool_free(q->kernargs);
  }
  free(q);
}

void hsad_queue_destroy(hsad_queue_t *q) {
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

void dq_queues_close_all(void) {
  for (hsad_queue_t *q = hsad_rt.queues; q; q = q->next) {
    atomic_store(&q->error, HSAD_ERR_CLOSED);
    hsad_rocr.hsa_queue_destroy(q->hsa);
    hsad_rocr.hsa_amd_memory_pool_free(q->kernargs);
    /* shared queues are kept (not freed) so stale handles still read CLOSED */
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
  if (!d || !out_queue)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_device_queue: NULL device or out_queue");
  hsad_status_t s = dq_check_open();
  if (s) return s;
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
  (void)pool_get(d);
  *out_queue = q;
  return HSAD_OK;
}

hsad_device_t *hsad_queue_device(const hsad_queue_t *q) { return q ? q->device : NULL; }
hsa_queue_t *hsad_queue_hsa(const hsad_queue_t *q) { return q ? q->hsa : NULL; }
uint32_t hsad_queue_size(const hsad_queue_t *q) { return q ? q->size : 0; }

/* ---- the dispatch path ----------------------------------------------------------------- */

/* Checks the launch against kernel and device and builds the kernarg segment into `kbuf`
 * (q->kernarg_block bytes, 64-byte aligned). Fills everything of *d but the kernarg address
 * and the completion signal. Touches no queue state. */
static hsad_status_t prepare(const hsad_queue_t *q, const hsad_device_kernel_t *k,
                             const hsad_launch_t *l, hsad_aql_dispatch_t *d, void *kbuf) {
  const hsad_device_kernel_desc_t *kd = &k->desc;
  const hsad_device_info_t *di = &q->device->info;
  if (DQ_UNLIKELY(k->program->device != q->device))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "kernel %s is loaded on device %u, the queue is "
                     "on device %u", kd->name, k->program->device->info.index, di->index);
  uint32_t dims = l->dims;
  if (DQ_UNLIKELY(dims < 1 || dims > 3))
    return hsad_fail(HSAD_ERR_GRID, "kernel %s: dims %u, must be 1..3", kd->name, dims);
  hsad_dispatch_dims_t dd;
  uint32_t flat = 1;
  for (uint32_t i = 0; i < 3; i++) {
    uint32_t g = l->grid[i], b = l->block[i];
    if (i >= dims) {
      if (DQ_UNLIKELY(g > 1 || b > 1))
        return hsad_fail(g > 1 ? HSAD_ERR_GRID : HSAD_ERR_WORKGROUP, "kernel %s: dimension %u "
                         "unused (dims %u) but grid[%u]=%u block[%u]=%u; use 0 or 1", kd->name, i,
                         dims, i, g, i, b);
      g = b = 1;
    } else {
      if (DQ_UNLIKELY(g == 0))
        return hsad_fail(HSAD_ERR_GRID, "kernel %s: grid[%u] is 0 work-items", kd->name, i);
      if (DQ_UNLIKELY(di->max_grid_dim[i] && g > di->max_grid_dim[i]))
        return hsad_fail(HSAD_ERR_GRID, "kernel %s: grid[%u]=%u exceeds device %u's maximum %u "
                         "(HSA_AGENT_INFO_GRID_MAX_DIM)", kd->name, i, g, di->index,
                         di->max_grid_dim[i]);
      if (DQ_UNLIKELY(b == 0))
        return hsad_fail(HSAD_ERR_WORKGROUP, "kernel %s: block[%u] is 0 work-items", kd->name, i);
      if (DQ_UNLIKELY(b > di->max_workgroup_dim[i]))
        return hsad_fail(HSAD_ERR_WORKGROUP, "kernel %s: block[%u]=%u exceeds device %u's "
                         "maximum %u (HSA_AGENT_INFO_WORKGROUP_MAX_DIM)", kd->name, i, b,
                         di->index, di->max_workgroup_dim[i]);
    }
    if (DQ_UNLIKELY(kd->reqd_workgroup_size[0] && b != kd->reqd_workgroup_size[i]))
      return hsad_fail(HSAD_ERR_WORKGROUP, "kernel %s: workgroup %ux%ux%u differs from its "
                       ".reqd_workgroup_size %ux%ux%u", kd->name, l->block[0],
                       dims > 1 ? l->block[1] : 1, dims > 2 ? l->block[2] : 1,
                       kd->reqd_workgroup_size[0], kd->reqd_workgroup_size[1],
                       kd->reqd_workgroup_size[2]);
    dd.grid_size[i] = g;
    dd.workgroup_size[i] = (uint16_t)b;
    dd.global_offset[i] = 0;
    d->grid_size[i] = g;
    d->workgroup_size[i] = (uint16_t)b;
    flat *= b;
  }
  uint32_t max_flat = kd->max_flat_workgroup_size;
  if (di->max_workgroup_size && di->max_workgroup_size < max_flat) max_flat = di->max_workgroup_size;
  if (DQ_UNLIKELY(flat > max_flat))
    return hsad_fail(HSAD_ERR_WORKGROUP, "kernel %s: workgroup of %u work-items exceeds its "
                     ".max_flat_workgroup_size %u (device %u maximum %u)", kd->name, flat,
                     kd->max_flat_workgroup_size, di->index, di->max_workgroup_size);
  if (DQ_UNLIKELY(kd->kernarg_segment_size > q->kernarg_block))
    return hsad_fail(HSAD_ERR_RESOURCE_EXHAUSTED, "kernel %s: kernarg segment of %u bytes exceeds "
                     "the queue's kernarg_block_size of %u bytes (create the queue with a larger "
                     "one)", kd->name, kd->kernarg_segment_size, q->kernarg_block);
  dd.dims = (uint16_t)dims;
  uint32_t group = kd->group_segment_fixed_size;
  hsad_status_t s = hsad_kernarg_build(kd->codeobj_kernel, l->args, l->arg_count, &dd,
                                       &q->karg_rt, kbuf, q->kernarg_block, &group);
  if (DQ_UNLIKELY(s)) return s;
  if (DQ_UNLIKELY(group > di->lds_bytes))
    return hsad_fail(HSAD_ERR_LDS_LIMIT, "kernel %s: group segment of %u bytes (%u fixed + %u "
                     "dynamic) exceeds device %u's LDS of %u bytes per workgroup", kd->name, group,
                     kd->group_segment_fixed_size, group - kd->group_segment_fixed_size, di->index,
                     di->lds_bytes);
  uint32_t priv = kd->private_segment_fixed_size;
  if (kd->uses_dynamic_stack && q->dynamic_stack > priv) priv = q->dynamic_stack;
  if (DQ_UNLIKELY((uint64_t)priv * di->wavefront_size > HSAD_MAX_WAVE_SCRATCH))
    return hsad_fail(HSAD_ERR_SCRATCH_LIMIT, "kernel %s: private segment of %u bytes per "
                     "work-item x wavefront %u = %llu bytes per wave exceeds the device's scratch "
                     "limit of %u bytes per wave (%u per work-item)%s", kd->name, priv,
                     di->wavefront_size, (unsigned long long)priv * di->wavefront_size,
                     HSAD_MAX_WAVE_SCRATCH, di->max_private_per_work_item,
                     kd->uses_dynamic_stack ? "; the kernel uses a dynamic stack: lower the "
                                              "queue's dynamic_stack_size" : "");
  d->dims = (uint16_t)dims;
  d->private_segment_size = priv;
  d->group_segment_size = group;
  d->kernel_object = kd->kernel_object;
  return HSAD_OK;
}

/* Reserves n consecutive packet ids while the ring has room (see hsad_queue.h). */
static inline hsad_status_t reserve(hsad_queue_t *q, uint32_t n, uint64_t deadline,
                                    uint64_t *out_id) {
  _Atomic uint64_t *wp = (_Atomic uint64_t *)&q->amd->write_dispatch_id;
  uint64_t w = atomic_load_explicit(wp, memory_order_relaxed);
  uint32_t spins = 0;
  for (;;) {
    uint64_t r = __atomic_load_n(&q->amd->read_dispatch_id, __ATOMIC_ACQUIRE);
    if (DQ_LIKELY(w - r <= q->size - n)) { /* w < r (stale w) wraps and takes the slow path */
      if (DQ_LIKELY(atomic_compare_exchange_weak_explicit(wp, &w, w + n, memory_order_acq_rel,
                                                          memory_order_relaxed))) {
        *out_id = w;
        return HSAD_OK;
      }
      continue; /* another producer moved the write index: w was reloaded */
    }
    if (DQ_UNLIKELY(w < r)) {
      w = atomic_load_explicit(wp, memory_order_relaxed);
      continue;
    }
    /* Full: back off until the deadline. Nothing is reserved yet, so giving up leaves no hole. */
    if (atomic_load_explicit(&q->error, memory_order_relaxed)) return queue_fail(q);
    if (deadline == 0 || hsad_now_ns() >= deadline)
      return hsad_fail(HSAD_ERR_TIMEOUT, "queue %llu on device %u is full (%u packets, %llu in "
                       "flight, %u requested) and the deadline passed; nothing was submitted",
                       (unsigned long long)q->hsa->id, q->device->info.index, q->size,
                       (unsigned long long)(w - r), n);
    if (++spins < 64) cpu_relax();
    else sched_yield();
    w = atomic_load_explicit(wp, memory_order_relaxed);
  }
}

/* Stores `id` (or a higher id another producer rang) into the doorbell; see hsad_queue.h. */
static inline void ring_doorbell(hsad_queue_t *q, uint64_t id) {
  uint64_t v = id + 1; /* rung holds the highest rung id + 1 (0: none) */
  uint64_t cur = atomic_load_explicit(&q->rung, memory_order_relaxed);
  while (cur < v &&
         !atomic_compare_exchange_weak_explicit(&q->rung, &cur, v, memory_order_relaxed,
                                                memory_order_relaxed)) {
  }
  uint64_t val = (cur > v ? cur : v) - 1;
  for (;;) {
    if (DQ_LIKELY(q->doorbell != NULL))
      __atomic_store_n(q->doorbell, val, __ATOMIC_RELEASE);
    else
      hsad_rocr.hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)val);
    atomic_thread_fence(memory_order_seq_cst);
    uint64_t hi = atomic_load_explicit(&q->rung, memory_order_relaxed) - 1;
    if (DQ_LIKELY(hi <= val)) return;
    val = hi;
  }
}

/* Kernel dispatch headers indexed by flags & 3 (HSAD_LAUNCH_NO_BARRIER, _FENCE_AGENT). */
static const uint16_t dispatch_headers[4] = {
    HSAD_AQL_HEADER(HSA_PACKET_TYPE_KERNEL_DISPATCH, 1, HSA_FENCE_SCOPE_SYSTEM, HSA_FENCE_SCOPE_SYSTEM),
    HSAD_AQL_HEADER(HSA_PACKET_TYPE_KERNEL_DISPATCH, 0, HSA_FENCE_SCOPE_SYSTEM, HSA_FENCE_SCOPE_SYSTEM),
    HSAD_AQL_HEADER(HSA_PACKET_TYPE_KERNEL_DISPATCH, 1, HSA_FENCE_SCOPE_AGENT, HSA_FENCE_SCOPE_AGENT),
    HSAD_AQL_HEADER(HSA_PACKET_TYPE_KERNEL_DISPATCH, 0, HSA_FENCE_SCOPE_AGENT, HSA_FENCE_SCOPE_AGENT),
};

static inline uint16_t dispatch_header(uint32_t flags) { return dispatch_headers[flags & 3]; }

static inline hsad_status_t take_completion(hsad_queue_t *q, hsad_completion_t **out) {
  hsad_completion_t *c = dq_signal_acquire(q->device);
  if (DQ_UNLIKELY(!c))
    return hsad_fail(HSAD_ERR_RESOURCE_EXHAUSTED, "device %u: all %u completion signals are in "
                     "use; wait on and release completions", q->device->info.index,
                     HSAD_SIGNAL_POOL_SIZE);
  /* No waiter can be blocked on a pool signal being handed out: a plain store is enough;
   * the packet's header release store publishes it to the CP. */
  __atomic_store_n(&c->amd->value, 1, __ATOMIC_RELAXED);
  atomic_store_explicit(&c->queue, q, memory_order_relaxed);
  *out = c;
  return HSAD_OK;
}

/* ---- the fast path ------------------------------------------------------------------- */

/* Geometry of a launch checked with few branches; false sends the caller to prepare(), which
 * finds and reports the exact problem. */
static inline bool geometry_fast(const hsad_device_kernel_t *k, const hsad_launch_t *l,
                                 hsad_aql_dispatch_t *d) {
  uint32_t dims = l->dims;
  if (DQ_UNLIKELY(dims - 1u > 2u)) return false;
  uint32_t g0 = l->grid[0], g1 = l->grid[1], g2 = l->grid[2];
  uint32_t b0 = l->block[0], b1 = l->block[1], b2 = l->block[2];
  if (dims < 3) {
    if (DQ_UNLIKELY((g2 | b2) > 1)) return false;
    g2 = b2 = 1;
  }
  if (dims < 2) {
    if (DQ_UNLIKELY((g1 | b1) > 1)) return false;
    g1 = b1 = 1;
  }
  if (DQ_UNLIKELY(!g0 | !g1 | !g2 | !b0 | !b1 | !b2)) return false;
  if (DQ_UNLIKELY((g0 > k->max_grid[0]) | (g1 > k->max_grid[1]) | (g2 > k->max_grid[2]))) return false;
  if (DQ_UNLIKELY((b0 > k->max_dim[0]) | (b1 > k->max_dim[1]) | (b2 > k->max_dim[2]))) return false;
  if (DQ_UNLIKELY(b0 * b1 * b2 > k->max_flat)) return false; /* each <= 1024: no overflow */
  if (DQ_UNLIKELY(k->has_reqd) &&
      ((b0 != k->desc.reqd_workgroup_size[0]) | (b1 != k->desc.reqd_workgroup_size[1]) |
       (b2 != k->desc.reqd_workgroup_size[2])))
    return false;
  d->dims = (uint16_t)dims;
  d->grid_size[0] = g0;
  d->grid_size[1] = g1;
  d->grid_size[2] = g2;
  d->workgroup_size[0] = (uint16_t)b0;
  d->workgroup_size[1] = (uint16_t)b1;
  d->workgroup_size[2] = (uint16_t)b2;
  return true;
}

/* Per-thread cache of the last launch: the kernarg segment hsad_kernarg_build produced and the
 * checked packet body. A launch with the same queue, kernel, geometry and argument values
 * reuses both (one copy of the kernarg bytes into the slot's block) instead of re-checking the
 * geometry and re-writing every hidden argument. Keys are unique ids, never pointers, so a
 * freed and reallocated queue or kernel cannot alias an old entry. Only successful launches are
 * cached, so a hit needs no check. */
#define DQ_KC_ARGS 16
#define DQ_KC_VAL 16
typedef struct dq_kcache {
  uint64_t quid, kuid;
  uint32_t geom[7];               /* launch dims, grid[3], block[3] as given */
  uint32_t nargs;
  hsad_aql_dispatch_t d;          /* checked body: geometry, segments, kernel_object */
  hsad_karg_t args[DQ_KC_ARGS];
  uint8_t vals[DQ_KC_ARGS][DQ_KC_VAL];
  _Alignas(64) uint8_t image[DQ_KARG_STACK];
} dq_kcache_t;
static _Thread_local dq_kcache_t dq_kc;

_Static_assert(offsetof(hsad_launch_t, grid) == 4 && offsetof(hsad_launch_t, block) == 16,
               "launch geometry is 7 consecutive uint32_t");

static inline bool kcache_hit(const dq_kcache_t *c, const hsad_queue_t *q,
                              const hsad_device_kernel_t *k, const hsad_launch_t *l) {
  uint64_t a[3], b[3];
  uint32_t a3, b3;
  memcpy(a, &l->dims, 24);
  memcpy(&a3, &l->block[2], 4);
  memcpy(b, c->geom, 24);
  memcpy(&b3, &c->geom[6], 4);
  /* kuid is 0 while the entry is invalid (uids start at 1) */
  if ((c->kuid != k->uid) | (c->quid != q->uid) | (c->nargs != l->arg_count) |
      (((a[0] ^ b[0]) | (a[1] ^ b[1]) | (a[2] ^ b[2]) | (a3 ^ b3)) != 0))
    return false;
  for (uint32_t i = 0; i < c->nargs; i++) {
    const hsad_karg_t *x = &l->args[i], *y = &c->args[i];
    if (x->tag != y->tag) return false;
    if (x->tag == HSAD_KARG_BYTES) {
      if (x->size != y->size || !x->bytes) return false;
      if (x->size == 4) {
        uint32_t u, v;
        memcpy(&u, x->bytes, 4);
        memcpy(&v, c->vals[i], 4);
        if (u != v) return false;
      } else if (x->size == 8) {
        uint64_t u, v;
        memcpy(&u, x->bytes, 8);
        memcpy(&v, c->vals[i], 8);
        if (u != v) return false;
      } else if (memcmp(x->bytes, c->vals[i], x->size)) {
        return false;
      }
    } else if (x->tag == HSAD_KARG_POINTER) {
      if (x->pointer != y->pointer) return false;
    } else if (x->lds_bytes != y->lds_bytes) {
      return false;
    }
  }
  return true;
}

/* Cache miss: checks the launch, builds its kernarg segment into the cache's image and, when
 * every value fits, remembers the key. Errors as hsad_kernel_dispatch documents. */
static hsad_status_t launch_build(const hsad_queue_t *q, const hsad_device_kernel_t *k,
                                  const hsad_launch_t *l) {
  dq_kcache_t *c = &dq_kc;
  c->kuid = 0; /* invalid until the key is complete */
  hsad_aql_dispatch_t d;
  hsad_status_t s = HSAD_OK;
  if (DQ_LIKELY(geometry_fast(k, l, &d) && k->program->device == q->device)) {
    if (DQ_UNLIKELY(k->desc.kernarg_segment_size > q->kernarg_block))
      return hsad_fail(HSAD_ERR_RESOURCE_EXHAUSTED, "kernel %s: kernarg segment of %u bytes "
                       "exceeds the queue's kernarg_block_size of %u bytes (create the queue "
                       "with a larger one)", k->desc.name, k->desc.kernarg_segment_size,
                       q->kernarg_block);
    hsad_dispatch_dims_t dd = {.dims = d.dims};
    for (int i = 0; i < 3; i++) {
      dd.grid_size[i] = d.grid_size[i];
      dd.workgroup_size[i] = d.workgroup_size[i];
    }
    uint32_t group = k->desc.group_segment_fixed_size;
    s = hsad_kernarg_build(k->desc.codeobj_kernel, l->args, l->arg_count, &dd, &q->karg_rt,
                           c->image, q->kernarg_block, &group);
    if (s) return s;
    if (DQ_UNLIKELY(group > q->lds_bytes))
      return hsad_fail(HSAD_ERR_LDS_LIMIT, "kernel %s: group segment of %u bytes (%u fixed + %u "
                       "dynamic) exceeds device %u's LDS of %u bytes per workgroup", k->desc.name,
                       group, k->desc.group_segment_fixed_size,
                       group - k->desc.group_segment_fixed_size, q->device->info.index,
                       q->lds_bytes);
    uint32_t priv = k->desc.private_segment_fixed_size;
    if (k->dyn_stack && q->dynamic_stack > priv) priv = q->dynamic_stack;
    if (DQ_UNLIKELY(priv > q->max_private)) s = prepare(q, k, l, &d, c->image); /* reports it */
    if (s) return s;
    d.group_segment_size = group;
    d.private_segment_size = priv;
    d.kernel_object = k->desc.kernel_object;
  } else {
    s = prepare(q, k, l, &d, c->image); /* finds and reports what is wrong */
    if (s) return s;
  }
  d.kernarg_address = NULL;
  d.completion_signal = 0;
  c->d = d;
  if (l->arg_count > DQ_KC_ARGS) return HSAD_OK; /* built, not cached */
  for (uint32_t i = 0; i < l->arg_count; i++) {
    c->args[i] = l->args[i];
    if (l->args[i].tag == HSAD_KARG_BYTES) {
      if (l->args[i].size > DQ_KC_VAL) return HSAD_OK;
      memcpy(c->vals[i], l->args[i].bytes, l->args[i].size);
    }
  }
  memcpy(c->geom, &l->dims, sizeof c->geom);
  c->quid = q->uid;
  c->nargs = l->arg_count;
  c->kuid = k->uid;
  return HSAD_OK;
}

/* Steps 3-6 of a dispatch whose packet body `d` and kernarg image are built: the hot path
 * shared by hsad_kernel_dispatch and hsad_prepared_dispatch. */
static inline __attribute__((always_inline)) hsad_status_t
submit_built(hsad_queue_t *q, const hsad_aql_dispatch_t *d, const uint8_t *image, uint32_t ksize,
             uint16_t header, uint64_t deadline_ns, hsad_completion_t **out_completion,
             uint64_t *out_packet_id) {
  hsad_completion_t *c = NULL;
  uint64_t sig = 0;
  hsad_status_t s;
  if (out_completion) {
    s = take_completion(q, &c);
    if (DQ_UNLIKELY(s)) return s;
    sig = c->signal.handle;
  }
  uint64_t id = 0;
  s = reserve(q, 1, deadline_ns, &id);
  if (DQ_UNLIKELY(s)) {
    if (c) __atomic_store_n(&c->amd->value, 0, __ATOMIC_RELAXED);
    if (c) hsad_completion_release(c);
    return s;
  }
  /* Slot `id` and its kernarg block are ours: the packet that used them before (id - size)
   * completed, since id - size < read_dispatch_id. */
  uint64_t slot = id & q->mask;
  uint8_t *ka = q->kernargs + slot * q->kernarg_block;
  if (ksize) memcpy(ka, image, ksize);
  hsa_kernel_dispatch_packet_t *pkt = (hsa_kernel_dispatch_packet_t *)(q->ring + slot * 64);
  uint32_t word = hsad_aql_dispatch_fill(pkt, d, header);
  pkt->kernarg_address = ka;
  pkt->completion_signal.handle = sig;
  hsad_aql_publish(pkt, word);
  ring_doorbell(q, id);
  if (out_completion) *out_completion = c;
  if (out_packet_id) *out_packet_id = id;
  return HSAD_OK;
}

hsad_status_t hsad_kernel_dispatch(hsad_queue_t *q, const hsad_device_kernel_t *k,
                                   const hsad_launch_t *l, uint64_t deadline_ns,
                                   hsad_completion_t **out_completion, uint64_t *out_packet_id) {
  if (DQ_UNLIKELY(!q || !k || !l))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_kernel_dispatch: NULL queue, kernel or launch");
  if (DQ_UNLIKELY(atomic_load_explicit(&q->error, memory_order_relaxed))) return queue_fail(q);
  dq_kcache_t *kc = &dq_kc;
  if (DQ_UNLIKELY(!kcache_hit(kc, q, k, l))) {
    hsad_status_t s = launch_build(q, k, l);
    if (DQ_UNLIKELY(s)) return s;
  }
  return submit_built(q, &kc->d, kc->image, k->desc.kernarg_segment_size,
                      dispatch_header(l->flags), deadline_ns, out_completion, out_packet_id);
}

struct hsad_prepared_launch {
  hsad_queue_t *queue;
  hsad_aql_dispatch_t d; /* body without kernarg address and completion signal */
  uint16_t header;
  uint32_t ksize;
  _Alignas(64) uint8_t image[]; /* ksize bytes of kernarg segment */
};

hsad_status_t hsad_launch_prepare(hsad_queue_t *q, const hsad_device_kernel_t *k,
                                  const hsad_launch_t *l, hsad_prepared_launch_t **out) {
  if (!q || !k || !l || !out)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_launch_prepare: NULL queue, kernel, launch "
                     "or out_prepared");
  if (atomic_load_explicit(&q->error, memory_order_relaxed)) return queue_fail(q);
  hsad_status_t s = launch_build(q, k, l); /* every check; fills this thread's image */
  if (s) return s;
  uint32_t ksize = k->desc.kernarg_segment_size;
  hsad_prepared_launch_t *p = aligned_alloc(64, (sizeof *p + ksize + 63) & ~(size_t)63);
  if (!p)
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_launch_prepare: kernel %s: %zu bytes",
                     k->desc.name, sizeof *p + ksize);
  p->queue = q;
  p->d = dq_kc.d;
  p->header = dispatch_header(l->flags);
  p->ksize = ksize;
  memcpy(p->image, dq_kc.image, ksize);
  *out = p;
  return HSAD_OK;
}

hsad_status_t hsad_prepared_dispatch(const hsad_prepared_launch_t *p, uint64_t deadline_ns,
                                     hsad_completion_t **out_completion,
                                     uint64_t *out_packet_id) {
  if (DQ_UNLIKELY(!p))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_prepared_dispatch: NULL prepared launch");
  hsad_queue_t *q = p->queue;
  if (DQ_UNLIKELY(atomic_load_explicit(&q->error, memory_order_relaxed))) return queue_fail(q);
  return submit_built(q, &p->d, p->image, p->ksize, p->header, deadline_ns, out_completion,
                      out_packet_id);
}

void hsad_launch_destroy(hsad_prepared_launch_t *p) { free(p); }

/* A no-op barrier-AND packet (all dep_signal 0) in place of a packet that could not be built
 * after its slot was reserved, so the CP never waits on a hole. */
static void plug_hole(hsad_queue_t *q, uint64_t id, uint64_t completion) {
  hsa_barrier_and_packet_t *pkt = (hsa_barrier_and_packet_t *)(q->ring + (id & q->mask) * 64);
  hsad_aql_publish(pkt, hsad_aql_barrier_fill(pkt, NULL, completion,
                                              HSAD_AQL_HEADER(HSA_PACKET_TYPE_BARRIER_AND, 1,
                                                              HSA_FENCE_SCOPE_SYSTEM,
                                                              HSA_FENCE_SCOPE_SYSTEM)));
}

hsad_status_t hsad_queue_dispatch_batch(hsad_queue_t *q, const hsad_dispatch_desc_t *items,
                                        uint32_t count, uint64_t deadline_ns,
                                        hsad_completion_t **out_completion,
                                        uint64_t *out_first_packet_id) {
  if (!q || !items || !count)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_dispatch_batch: NULL queue/items or "
                     "count 0");
  if (count > q->size)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "batch of %u packets exceeds the queue's %u "
                     "slots", count, q->size);
  if (atomic_load_explicit(&q->error, memory_order_relaxed)) return queue_fail(q);
  _Alignas(64) uint8_t kbuf[DQ_KARG_STACK];
  hsad_aql_dispatch_t d;
  /* Pass 1: validate everything before anything is reserved. */
  for (uint32_t i = 0; i < count; i++) {
    if (!items[i].kernel)
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "batch entry %u: NULL kernel", i);
    hsad_status_t s = prepare(q, items[i].kernel, &items[i].launch, &d, kbuf);
    if (s) {
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", hsad_last_error());
      return hsad_fail(s, "batch entry %u: %s", i, msg);
    }
  }
  hsad_completion_t *c = NULL;
  if (out_completion) {
    hsad_status_t s = take_completion(q, &c);
    if (s) return s;
  }
  uint64_t first = 0;
  hsad_status_t s = reserve(q, count, deadline_ns, &first);
  if (s) {
    if (c) __atomic_store_n(&c->amd->value, 0, __ATOMIC_RELAXED);
    if (c) hsad_completion_release(c);
    return s;
  }
  /* Pass 2: build kernargs in place and fill every body; headers stay INVALID. */
  for (uint32_t i = 0; i < count; i++) {
    uint64_t id = first + i;
    uint64_t slot = id & q->mask;
    uint8_t *ka = q->kernargs + slot * q->kernarg_block;
    uint64_t sig = (c && i == count - 1) ? c->signal.handle : 0;
    if (prepare(q, items[i].kernel, &items[i].launch, &d, ka) != HSAD_OK) {
      plug_hole(q, id, sig); /* unreachable: pass 1 validated the same inputs */
      continue;
    }
    d.kernarg_address = ka;
    d.completion_signal = sig;
    hsad_aql_dispatch_fill((hsa_kernel_dispatch_packet_t *)(q->ring + slot * 64), &d,
                           dispatch_header(items[i].launch.flags));
  }
  /* Pass 3: publish last-to-first, so the first packet becomes valid last and the CP finds
   * the whole batch ready (a plugged slot is already valid and is skipped). */
  for (uint32_t i = count; i-- > 0;) {
    uint8_t *slot = q->ring + ((first + i) & q->mask) * 64;
    if (__atomic_load_n((uint16_t *)slot, __ATOMIC_RELAXED) != HSA_PACKET_TYPE_INVALID) continue;
    uint32_t dims = items[i].launch.dims;
    hsad_aql_publish(slot, dispatch_header(items[i].launch.flags) |
                               (dims << (16 + HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS)));
  }
  ring_doorbell(q, first + count - 1);
  if (out_completion) *out_completion = c;
  if (out_first_packet_id) *out_first_packet_id = first;
  return HSAD_OK;
}

hsad_status_t hsad_queue_barrier(hsad_queue_t *q, hsad_completion_t *const deps[5],
                                 uint64_t deadline_ns, hsad_completion_t **out_completion) {
  if (!q) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_barrier: NULL queue");
  if (atomic_load_explicit(&q->error, memory_order_relaxed)) return queue_fail(q);
  uint64_t dep[5] = {0};
  for (int i = 0; deps && i < 5; i++) dep[i] = deps[i] ? deps[i]->signal.handle : 0;
  hsad_completion_t *c = NULL;
  if (out_completion) {
    hsad_status_t s = take_completion(q, &c);
    if (s) return s;
  }
  uint64_t id = 0;
  hsad_status_t s = reserve(q, 1, deadline_ns, &id);
  if (s) {
    if (c) __atomic_store_n(&c->amd->value, 0, __ATOMIC_RELAXED);
    if (c) hsad_completion_release(c);
    return s;
  }
  hsa_barrier_and_packet_t *pkt = (hsa_barrier_and_packet_t *)(q->ring + (id & q->mask) * 64);
  hsad_aql_publish(pkt, hsad_aql_barrier_fill(pkt, dep, c ? c->signal.handle : 0,
                                              HSAD_AQL_HEADER(HSA_PACKET_TYPE_BARRIER_AND, 1,
                                                              HSA_FENCE_SCOPE_SYSTEM,
                                                              HSA_FENCE_SCOPE_SYSTEM)));
  ring_doorbell(q, id);
  if (out_completion) *out_completion = c;
  return HSAD_OK;
}

/* ---- waits ----------------------------------------------------------------------------- */

static void sleep_ns(uint64_t ns) {
  struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
  nanosleep(&ts, NULL);
}

hsad_status_t hsad_queue_wait_idle(hsad_queue_t *q, uint64_t deadline_ns) {
  if (!q) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_wait_idle: NULL queue");
  uint64_t target = __atomic_load_n(&q->amd->write_dispatch_id, __ATOMIC_ACQUIRE);
  uint64_t start = hsad_now_ns(), back = 1000;
  uint32_t polls = 0;
  for (;;) {
    if (atomic_load_explicit(&q->error, memory_order_acquire)) return queue_fail(q);
    if (__atomic_load_n(&q->amd->read_dispatch_id, __ATOMIC_ACQUIRE) >= target) return HSAD_OK;
    uint64_t now = hsad_now_ns();
    if (now >= deadline_ns)
      return hsad_fail(HSAD_ERR_TIMEOUT, "queue %llu on device %u: %llu packet(s) still pending "
                       "at the deadline", (unsigned long long)q->hsa->id, q->device->info.index,
                       (unsigned long long)(target - __atomic_load_n(&q->amd->read_dispatch_id,
                                                                     __ATOMIC_ACQUIRE)));
    if (now - start < q->spin_ns) {
      /* yield now and then: on an oversubscribed host (or kfd-emu, whose CP is a
       * thread) the producer of the completion may need this core */
      if ((++polls & 15) == 0) sched_yield();
      else cpu_relax();
      continue;
    }
    uint64_t left = deadline_ns - now;
    sleep_ns(back < left ? back : left);
    if (back < 1000000) back *= 2;
  }
}

bool hsad_completion_done(const hsad_completion_t *c) {
  return c && __atomic_load_n(&c->amd->value, __ATOMIC_ACQUIRE) < 1;
}

hsad_status_t hsad_completion_wait(hsad_completion_t *c, uint64_t deadline_ns) {
  if (!c) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_completion_wait: NULL completion");
  hsad_queue_t *q = atomic_load_explicit(&c->queue, memory_order_relaxed);
  if (!q) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_completion_wait: completion was "
                           "released or never attached to a packet");
  volatile int64_t *val = &c->amd->value;
  uint64_t start = hsad_now_ns();
  uint32_t polls = 0;
  while (__atomic_load_n(val, __ATOMIC_ACQUIRE) >= 1) {
    if (atomic_load_explicit(&q->error, memory_order_acquire)) return queue_fail(q);
    uint64_t now = hsad_now_ns();
    if (now >= deadline_ns)
      return hsad_fail(HSAD_ERR_TIMEOUT, "completion on queue %llu (device %u) not done at the "
                       "deadline", (unsigned long long)q->hsa->id, q->device->info.index);
    if (now - start < q->spin_ns) {
      /* yield now and then: on an oversubscribed host (or kfd-emu, whose CP is a
       * thread) the producer of the completion may need this core */
      if ((++polls & 15) == 0) sched_yield();
      else cpu_relax();
      continue;
    }
    /* Block in slices of at most 10 ms so the deadline and queue errors are seen. */
    uint64_t slice = deadline_ns - now;
    if (slice > 10000000ull) slice = 10000000ull;
    uint64_t ticks = (uint64_t)((double)slice * (double)hsad_rt.timestamp_hz / 1e9) + 1;
    hsad_rocr.hsa_signal_wait_scacquire(c->signal, HSA_SIGNAL_CONDITION_LT, 1, ticks, HSA_WAIT_STATE_BLOCKED);
  }
  if (atomic_load_explicit(&q->error, memory_order_acquire)) return queue_fail(q);
  return HSAD_OK;
}

hsad_status_t hsad_completion_times(const hsad_completion_t *c, uint64_t *out_start_ns,
                                    uint64_t *out_end_ns) {
  if (!c || !out_start_ns || !out_end_ns)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_completion_times: NULL argument");
  hsad_queue_t *q = atomic_load_explicit(&c->queue, memory_order_relaxed);
  if (!q || !q->profiling)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_completion_times: the queue was created without "
                     "profiling (hsad_queue_options_t.profiling)");
  if (!hsad_completion_done(c))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_completion_times: packet not completed");
  hsa_amd_profiling_dispatch_time_t t;
  hsa_status_t st = hsad_rocr.hsa_amd_profiling_get_dispatch_time(q->device->agent, c->signal, &t);
  if (st != HSA_STATUS_SUCCESS) return dq_hsa_fail(st, "hsa_amd_profiling_get_dispatch_time");
  double scale = 1e9 / (double)hsad_rt.timestamp_hz;
  *out_start_ns = (uint64_t)((double)t.start * scale);
  *out_end_ns = (uint64_t)((double)t.end * scale);
  return HSAD_OK;
}
