/* nv_monitor.c - dispatch monitoring on NVIDIA queues (hsad_monitor.h, issue 22): the records,
 * spill and occupancy alerts of AMD's monitor (hsa-dispatch/monitor.c), from the CUDA kernel
 * attributes (cuFuncGetAttribute: registers, local bytes; cuOccupancyMaxActiveBlocksPerMultiprocessor)
 * and, on a profiling queue, the device times of nv_queue.c's cuEventRecord pair.
 *
 * State: a ring of records under the monitor's own mutex (the monitored path only: an
 * unmonitored queue's dispatch tests q->monitor once) and a table of the (kernel, block size,
 * dynamic shared bytes) it described, with its own copy of each kernel name. On a profiling
 * queue every monitored dispatch is timed (nv_dispatch_timed: as AMD's profiling queues time
 * every packet), with a completion of the monitor's own when the caller asked for none. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nvidia/nv_internal.h"
#include "hsa-dispatch/monitor_common.h"

typedef struct nv_mon_kernel {
  const nv_kernel_t *k;
  uint32_t block, dynamic;
  char *name;
  uint32_t registers, local, shared;       /* per thread, per thread, per block (static+dyn) */
  uint32_t blocks_per_sm, warps_per_sm, occupancy_percent;
} nv_mon_kernel_t;

typedef struct nv_mon_cell {
  uint64_t id, epoch;                      /* epoch: the completion (0: none, not timed) */
  nv_queue_t *tq;                          /* the queue whose slot times it (NULL: its own) */
  const nv_mon_kernel_t *kernel;           /* NULL: table full */
  uint64_t kernel_object;
  uint16_t dims, block[3];
  uint32_t grid[3];
  uint32_t thread_id;
  uint64_t t0, t1;
} nv_mon_cell_t;

struct nv_monitor {
  hsad_monitor_options_t opt;
  pthread_mutex_t lock;                    /* everything below */
  uint32_t capacity;
  nv_mon_cell_t *cells;
  uint64_t head, tail;                     /* positions: head <= tail <= head + capacity */
  uint64_t dropped, dropped_reported;
  uint32_t kernel_count;
  nv_mon_kernel_t kernels[HSAD_MONITOR_KERNELS];
};

static inline nv_queue_t *nvq(const hsad_queue_t *q) { return (nv_queue_t *)(uintptr_t)q; }

static void nv_monitor_free(struct nv_monitor *m) {
  if (!m) return;
  for (uint32_t i = 0; i < m->kernel_count; i++) free(m->kernels[i].name);
  pthread_mutex_destroy(&m->lock);
  free(m->cells);
  free(m);
}

hsad_status_t nv_monitor_enable(hsad_queue_t *queue, const hsad_monitor_options_t *options) {
  nv_queue_t *q = nvq(queue);
  hsad_monitor_options_t o;
  hsad_status_t s = dq_monitor_options("hsad_queue_monitor_enable", options, &o);
  if (s) return s;
  if (q->monitor && q->monitor->capacity == o.capacity) {
    q->monitor->opt = o;
    return HSAD_OK;
  }
  struct nv_monitor *m = calloc(1, sizeof *m);
  nv_mon_cell_t *cells = calloc(o.capacity, sizeof *cells);
  if (!m || !cells) {
    free(m);
    free(cells);
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_queue_monitor_enable: %u records of %zu bytes",
                     o.capacity, sizeof *cells);
  }
  m->opt = o;
  m->capacity = o.capacity;
  m->cells = cells;
  pthread_mutex_init(&m->lock, NULL);
  nv_monitor_free(q->monitor);
  q->monitor = m;
  return HSAD_OK;
}

void nv_monitor_disable(hsad_queue_t *queue) {
  nv_queue_t *q = nvq(queue);
  struct nv_monitor *m = q->monitor;
  q->monitor = NULL;
  nv_monitor_free(m);
}

/* Spill and occupancy alerts of a newly described entry (no lock held). */
static void nv_kernel_alerts(const struct nv_monitor *m, hsad_queue_t *q, const nv_mon_kernel_t *e,
                             uint32_t max_threads, uint64_t id) {
  if (e->local)
    dq_monitor_alert(&m->opt, q, HSAD_ALERT_SPILL_RATIO, e->name, id, e->local, 0,
                     "kernel %s: %u bytes of local memory per thread (spilled registers or a "
                     "stack; CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES) with %u registers",
                     e->name, e->local, e->registers);
  uint32_t op = m->opt.occupancy_percent;
  if (e->occupancy_percent < op)
    dq_monitor_alert(&m->opt, q, HSAD_ALERT_LOW_OCCUPANCY, e->name, id, e->occupancy_percent, op,
                     "kernel %s at block size %u: %u resident threads per SM (%u blocks), %u%% of "
                     "the SM's %u, below the %u%% threshold (%u registers, %u bytes shared per "
                     "block)",
                     e->name, e->block, e->blocks_per_sm * e->block, e->blocks_per_sm,
                     e->occupancy_percent, max_threads, op, e->registers, e->shared);
}

/* The entry of (k, block, dynamic), described on first sight (m->lock held; *fresh: new). */
static const nv_mon_kernel_t *nv_kernel_get(struct nv_monitor *m, nv_queue_t *q,
                                            const nv_kernel_t *k, uint32_t block,
                                            uint32_t dynamic, bool *fresh) {
  *fresh = false;
  for (uint32_t i = 0; i < m->kernel_count; i++) {
    const nv_mon_kernel_t *e = &m->kernels[i];
    if (e->k == k && e->block == block && e->dynamic == dynamic) return e;
  }
  if (m->kernel_count == HSAD_MONITOR_KERNELS) return NULL;
  nv_mon_kernel_t *e = &m->kernels[m->kernel_count];
  int blocks = 0;
  if (nv_cu.occupancy_max_active_blocks(&blocks, k->fn, (int)block, dynamic) != NV_SUCCESS)
    blocks = 0; /* no model: occupancy 0, no alert */
  *e = (nv_mon_kernel_t){.k = k, .block = block, .dynamic = dynamic, .name = strdup(k->desc.name),
                         .registers = k->registers, .local = k->desc.private_segment_fixed_size,
                         .shared = k->static_shared + dynamic, .blocks_per_sm = (uint32_t)blocks};
  if (!e->name) return NULL;
  uint32_t max_threads = q->dev->info.max_waves_per_cu * q->dev->info.wavefront_size;
  e->warps_per_sm = e->blocks_per_sm * ((block + 31) / 32);
  e->occupancy_percent =
      max_threads ? (uint32_t)((uint64_t)e->blocks_per_sm * block * 100 / max_threads) : 0;
  m->kernel_count++;
  *fresh = blocks > 0;
  return e;
}

static _Thread_local uint32_t nv_mon_tid;

void nv_monitor_record(nv_queue_t *q, nv_queue_t *tq, const nv_kernel_t *k, const uint32_t geo[7],
                       uint32_t dynamic, uint64_t id, uint64_t epoch, uint64_t t0, uint64_t t1) {
  struct nv_monitor *m = q->monitor;
  uint32_t dims = geo[0];
  uint32_t block = geo[4] * (dims > 1 ? geo[5] : 1) * (dims > 2 ? geo[6] : 1);
  if (!nv_mon_tid) nv_mon_tid = (uint32_t)syscall(SYS_gettid);
  pthread_mutex_lock(&m->lock);
  bool fresh;
  const nv_mon_kernel_t *e = nv_kernel_get(m, q, k, block, dynamic, &fresh);
  if (m->tail - m->head == m->capacity) {
    m->dropped++;
  } else {
    nv_mon_cell_t *x = &m->cells[m->tail++ & (m->capacity - 1)];
    *x = (nv_mon_cell_t){.id = id, .epoch = epoch, .tq = tq == q ? NULL : tq, .kernel = e,
                         .kernel_object = k->desc.kernel_object, .dims = (uint16_t)dims,
                         .thread_id = nv_mon_tid, .t0 = t0, .t1 = t1};
    for (uint32_t i = 0; i < 3; i++) {
      bool used = i < dims;
      x->block[i] = (uint16_t)(used ? geo[4 + i] : 1);
      x->grid[i] = used ? geo[1 + i] : 1;
    }
  }
  pthread_mutex_unlock(&m->lock);
  if (fresh)
    nv_kernel_alerts(m, (hsad_queue_t *)q, e,
                     q->dev->info.max_waves_per_cu * q->dev->info.wavefront_size, id);
}

hsad_status_t nv_monitor_dispatch(nv_queue_t *q, const hsad_device_kernel_t *kernel,
                                  const hsad_launch_t *l, hsad_completion_t *out_completion,
                                  uint64_t *out_packet_id) {
  hsad_completion_t own, *c = out_completion ? out_completion : q->profiling ? &own : NULL;
  uint64_t id = 0, t0 = hsad_now_ns();
  uint32_t dynamic = 0;
  hsad_status_t s = nv_dispatch_unmonitored(q, kernel, l, c, &id, &dynamic);
  uint64_t t1 = hsad_now_ns();
  if (s) return s;
  if (out_packet_id) *out_packet_id = id;
  uint32_t geo[7];
  memcpy(geo, &l->dims, sizeof geo); /* dims, grid[3], block[3] (fu_graph's layout too) */
  nv_monitor_record(q, q, (const nv_kernel_t *)(uintptr_t)kernel, geo, dynamic, id,
                    q->profiling && c ? c->epoch : 0, t0, t1);
  return HSAD_OK;
}

hsad_status_t nv_monitor_drain(hsad_queue_t *queue, hsad_dispatch_record_t *out, uint32_t cap,
                               uint32_t *out_count, uint64_t *out_dropped) {
  nv_queue_t *q = nvq(queue);
  *out_count = 0;
  struct nv_monitor *m = q->monitor;
  if (!m)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_queue_monitor_drain: monitoring is not enabled "
                     "on the queue (hsad_queue_monitor_enable, hsad_monitor_enable_process)");
  bool failed = atomic_load_explicit(&q->error, memory_order_acquire) != 0;
  pthread_mutex_lock(&m->lock);
  uint32_t n = 0;
  while (n < cap && m->head < m->tail) {
    const nv_mon_cell_t *x = &m->cells[m->head & (m->capacity - 1)];
    hsad_dispatch_record_t *r = &out[n];
    const nv_mon_kernel_t *e = x->kernel;
    *r = (hsad_dispatch_record_t){
        .queue = queue, .packet_id = x->id, .kernel = e ? e->name : "?",
        .kernel_object = x->kernel_object, .dims = x->dims, .thread_id = x->thread_id,
        .submit_start_ns = x->t0, .submit_end_ns = x->t1,
        .execution = e ? HSAD_EXECUTION_DEVICE : HSAD_EXECUTION_UNKNOWN};
    memcpy(r->workgroup, x->block, sizeof r->workgroup);
    memcpy(r->grid, x->grid, sizeof r->grid);
    if (e) {
      r->vgpr_count = e->registers;
      r->private_segment_size = e->local;
      r->group_segment_size = e->shared;
      r->waves_per_simd = e->warps_per_sm;
      r->occupancy_percent = e->occupancy_percent;
    }
    if (x->epoch) {
      hsad_queue_t *tq = x->tq ? (hsad_queue_t *)x->tq : queue;
      hsad_completion_t c = {.queue = tq, .epoch = x->epoch, .packet_id = x->id};
      if (!failed && !nv_completion_done(&c)) break; /* times still to come: a later drain */
      uint64_t a, b;
      if (!failed && nv_completion_times(&c, &a, &b) == HSAD_OK)
        r->device_times = true, r->start_ns = a, r->end_ns = b;
    }
    m->head++;
    n++;
  }
  *out_count = n;
  if (out_dropped) {
    *out_dropped = m->dropped - m->dropped_reported;
    m->dropped_reported = m->dropped;
  }
  pthread_mutex_unlock(&m->lock);
  return HSAD_OK;
}

uint64_t nv_queue_trace_id(const hsad_queue_t *queue) {
  return ((const nv_queue_t *)(const void *)queue)->uid;
}
