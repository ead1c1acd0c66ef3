/* monitor.c - per-dispatch records, alerts (hsad_monitor.h). The submit path calls
 * dq_monitor_begin/dq_monitor_end only when q->monitor is set (dispatch.c). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hsa-dispatch/dispatch_internal.h"
#include "hsa-dispatch/hsad_emu_abi.h"

#define MON_TABLE (2 * HSAD_MONITOR_KERNELS) /* open addressing, at most half full */

/* What the monitor knows of one (kernel object, workgroup size, group segment size): written
 * once under the monitor's lock, then published by a release store of `used`. */
typedef struct mon_kernel {
  _Atomic uint32_t used;
  uint64_t kernel_object;
  uint32_t workgroup, lds;
  char *name;
  uint32_t vgpr, agpr, sgpr, vspill, sspill;
  uint32_t waves_per_simd, occupancy_percent;
  hsad_execution_t execution;
  char *emu_line; /* kfd-emu's line for a twin or no-code alert (NULL otherwise) */
} mon_kernel_t;

/* One ring cell (Vyukov's bounded queue): seq == pos: free for the producer of pos;
 * seq == pos + 1: holds the record of pos; the drainer frees it with seq = pos + capacity.
 * Producers claim pos with a CAS on tail (relaxed: the cell's seq acquire/release orders the
 * contents). */
typedef struct mon_cell {
  _Atomic uint64_t seq;
  uint64_t packet_id;
  const mon_kernel_t *kernel;
  uint64_t kernel_object;
  uint16_t dims, workgroup[3];
  uint32_t grid[3];
  uint32_t private_segment_size, group_segment_size;
  uint32_t lane_before, thread_id;
  uint64_t scratch_before;
  uint64_t t0, t1;
} mon_cell_t;

struct dq_monitor {
  hsad_monitor_options_t opt;
  uint32_t capacity;
  mon_cell_t *cells;
  int64_t clock_offset;                 /* ROCr timestamp ns - hsad_now_ns */
  _Alignas(64) _Atomic uint64_t tail;   /* next position producers claim */
  _Atomic uint64_t dropped;             /* records lost to a full ring (total) */
  _Alignas(64) uint64_t head;           /* next position the drainer reads */
  uint64_t dropped_reported;
  pthread_mutex_t lock;                 /* kernel table inserts */
  uint32_t kernel_count;
  mon_kernel_t kernels[MON_TABLE];
};

static const char mon_unknown[] = "?";

/* kfd-emu's answer for the kernel at ko (hsad_rocr_emu_kernel_mode); a twin's or a missing
 * kernel's line kept in e->emu_line for its alert. */
static void kernel_execution(mon_kernel_t *e, uint64_t ko) {
  char line[2048];
  int mode = hsad_rocr_emu_kernel_mode(ko, line, sizeof line);
  e->execution = mode == HSAD_EMU_MODE_NOT_EMULATED ? HSAD_EXECUTION_DEVICE
                 : mode == KFD_EMU_KERNEL_SOURCE    ? HSAD_EXECUTION_EMU_SOURCE
                 : mode == KFD_EMU_KERNEL_TWIN      ? HSAD_EXECUTION_EMU_TWIN
                 : mode == KFD_EMU_KERNEL_NONE      ? HSAD_EXECUTION_EMU_NONE
                 : mode == KFD_EMU_KERNEL_BUILD_FAILED ? HSAD_EXECUTION_EMU_BUILD_FAILED
                                                       : HSAD_EXECUTION_UNKNOWN;
  if (e->execution == HSAD_EXECUTION_EMU_TWIN || e->execution == HSAD_EXECUTION_EMU_NONE)
    e->emu_line = strdup(line);
}

static void alert(const struct dq_monitor *m, hsad_queue_t *q, hsad_alert_reason_t reason,
                  const char *kernel, uint64_t packet_id, uint64_t value, uint64_t threshold,
                  const char *fmt, ...) __attribute__((format(printf, 8, 9)));
static void alert(const struct dq_monitor *m, hsad_queue_t *q, hsad_alert_reason_t reason,
                  const char *kernel, uint64_t packet_id, uint64_t value, uint64_t threshold,
                  const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dq_monitor_alert_v(&m->opt, q, reason, kernel, packet_id, value, threshold, fmt, ap);
  va_end(ap);
}

/* ---- the kernel table ---- */

static uint32_t kernel_hash(uint64_t ko, uint32_t wg, uint32_t lds) {
  uint64_t h = ko * 0x9E3779B97F4A7C15ull ^ ((uint64_t)wg << 32 | lds) * 0xC2B2AE3D27D4EB4Full;
  return (uint32_t)(h >> 40) & (MON_TABLE - 1);
}

static bool kernel_is(const mon_kernel_t *e, uint64_t ko, uint32_t wg, uint32_t lds) {
  return e->kernel_object == ko && e->workgroup == wg && e->lds == lds;
}

/* The device kernel whose descriptor is at `ko` (runtime lock held). */
static const hsad_device_kernel_t *kernel_by_object(uint64_t ko) {
  for (const hsad_program_t *p = hsad_rt.programs; p; p = p->next)
    for (uint32_t i = 0; !p->dead && i < p->kernel_count; i++)
      if (p->kernels[i].desc.kernel_object == ko) return &p->kernels[i];
  return NULL;
}

/* Fills a new entry (monitor lock held). False: kernel unknown or out of memory. */
static bool kernel_describe(mon_kernel_t *e, uint64_t ko, uint32_t wg, uint32_t lds,
                            hsad_pressure_row_t *row, bool *has_row) {
  *has_row = false;
  pthread_mutex_lock(&hsad_rt.lock);
  const hsad_device_kernel_t *k = kernel_by_object(ko);
  if (k) {
    e->name = strdup(k->desc.name);
    uint32_t fixed = k->desc.group_segment_fixed_size;
    const hsad_kernel_t *ck = k->desc.codeobj_kernel;
    if (ck && hsad_kernel_pressure_at(ck, NULL, wg, lds > fixed ? lds - fixed : 0, row) == HSAD_OK)
      *has_row = true;
  }
  pthread_mutex_unlock(&hsad_rt.lock);
  if (!k || !e->name) return false;
  kernel_execution(e, ko);
  if (*has_row) {
    e->vgpr = row->vgpr_count;
    e->agpr = row->agpr_count;
    e->sgpr = row->sgpr_count;
    e->vspill = row->vgpr_spill_count;
    e->sspill = row->sgpr_spill_count;
    e->waves_per_simd = row->occupancy.waves_per_simd;
    e->occupancy_percent = row->best_work_items_per_cu
                               ? (uint32_t)((uint64_t)row->work_items_per_cu * 100 /
                                            row->best_work_items_per_cu)
                               : 0;
  }
  return true;
}

/* kfd-emu's alerts of a newly described entry: a host twin ran, or nothing can (no lock held). */
static void kernel_emu_alerts(const struct dq_monitor *m, hsad_queue_t *q, const mon_kernel_t *e,
                              uint64_t packet_id) {
  if (!e->emu_line) return;
  alert(m, q, e->execution == HSAD_EXECUTION_EMU_TWIN ? HSAD_ALERT_EMU_HOST_TWIN
                                                      : HSAD_ALERT_EMU_NO_CODE,
        e->name, packet_id, 0, 0, "%s", e->emu_line);
}

/* Spill and occupancy alerts of a newly described entry (no lock held). */
static void kernel_alerts(const struct dq_monitor *m, hsad_queue_t *q, const mon_kernel_t *e,
                          const hsad_pressure_row_t *row, uint64_t packet_id) {
  uint64_t regs = (uint64_t)e->vgpr + e->agpr + e->sgpr;
  uint64_t spills = (uint64_t)e->vspill + e->sspill;
  uint32_t sp = m->opt.spill_ratio_percent;
  if (spills && spills * 100 > sp * regs)
    alert(m, q, HSAD_ALERT_SPILL_RATIO, e->name, packet_id, regs ? spills * 100 / regs : 100, sp,
          "kernel %s: %llu spilled registers (%u VGPR + %u SGPR) are %llu%% of its %llu registers "
          "(%u VGPR + %u AGPR + %u SGPR), above the %u%% threshold",
          e->name, (unsigned long long)spills, e->vspill, e->sspill,
          (unsigned long long)(regs ? spills * 100 / regs : 100), (unsigned long long)regs, e->vgpr,
          e->agpr, e->sgpr, sp);
  uint32_t op = m->opt.occupancy_percent;
  if (row->best_work_items_per_cu &&
      (uint64_t)row->work_items_per_cu * 100 < (uint64_t)op * row->best_work_items_per_cu)
    alert(m, q, HSAD_ALERT_LOW_OCCUPANCY, e->name, packet_id, e->occupancy_percent, op,
          "kernel %s at workgroup size %u: %u resident work-items per CU, %u%% of the %u at its "
          "best workgroup size %u, below the %u%% threshold (limited by %s)",
          e->name, e->workgroup, row->work_items_per_cu, e->occupancy_percent,
          row->best_work_items_per_cu, row->best_workgroup_size, op,
          hsad_occ_limiter_name(row->occupancy.limiter));
}

/* The entry of (ko, wg, lds): lock-free when known; else described under the monitor's lock
 * (first dispatch only), NULL when the table is full or the kernel unknown. */
static const mon_kernel_t *kernel_get(struct dq_monitor *m, hsad_queue_t *q, uint64_t ko,
                                      uint32_t wg, uint32_t lds, uint64_t packet_id) {
  uint32_t h = kernel_hash(ko, wg, lds);
  for (uint32_t i = 0; i < MON_TABLE; i++) {
    const mon_kernel_t *e = &m->kernels[(h + i) & (MON_TABLE - 1)];
    if (!atomic_load_explicit(&e->used, memory_order_acquire)) break; /* pairs with release */
    if (kernel_is(e, ko, wg, lds)) return e;
  }
  pthread_mutex_lock(&m->lock);
  mon_kernel_t *e = NULL;
  for (uint32_t i = 0; i < MON_TABLE; i++) {
    mon_kernel_t *c = &m->kernels[(h + i) & (MON_TABLE - 1)];
    if (!atomic_load_explicit(&c->used, memory_order_relaxed)) { e = c; break; }
    if (kernel_is(c, ko, wg, lds)) {
      pthread_mutex_unlock(&m->lock);
      return c;
    }
  }
  hsad_pressure_row_t row;
  bool has_row = false;
  if (e && m->kernel_count < HSAD_MONITOR_KERNELS) {
    e->kernel_object = ko;
    e->workgroup = wg;
    e->lds = lds;
    if (kernel_describe(e, ko, wg, lds, &row, &has_row)) {
      m->kernel_count++;
      atomic_store_explicit(&e->used, 1, memory_order_release);
    } else {
      memset((char *)e + sizeof e->used, 0, sizeof *e - sizeof e->used);
      e = NULL;
    }
  } else {
    e = NULL;
  }
  pthread_mutex_unlock(&m->lock);
  if (e) kernel_emu_alerts(m, q, e, packet_id);
  if (e && has_row) kernel_alerts(m, q, e, &row, packet_id);
  return e;
}

/* ---- the submit side ---- */

static _Thread_local uint32_t mon_tid;

static uint64_t queue_scratch(const hsad_queue_t *q) {
  return __atomic_load_n(&q->amd->scratch_backing_memory_byte_size, __ATOMIC_RELAXED);
}

void dq_monitor_begin(hsad_queue_t *q, dq_mon_mark_t *mark) {
  mark->scratch = queue_scratch(q);
  mark->lane = __atomic_load_n(&q->amd->scratch_wave64_lane_byte_size, __ATOMIC_RELAXED);
  mark->t1 = 0;
  mark->t0 = hsad_now_ns();
}

void dq_monitor_end(hsad_queue_t *q, const hsad_aql_dispatch_t *d, uint64_t id,
                    const dq_mon_mark_t *mark) {
  struct dq_monitor *m = q->monitor;
  uint32_t wg = (uint32_t)d->workgroup_size[0] * d->workgroup_size[1] * d->workgroup_size[2];
  const mon_kernel_t *k = kernel_get(m, q, d->kernel_object, wg, d->group_segment_size, id);
  if (!mon_tid) mon_tid = (uint32_t)syscall(SYS_gettid);
  uint64_t pos = atomic_load_explicit(&m->tail, memory_order_relaxed);
  mon_cell_t *c;
  for (;;) {
    c = &m->cells[pos & (m->capacity - 1)];
    uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
    int64_t dif = (int64_t)(seq - pos);
    if (dif == 0) {
      if (atomic_compare_exchange_weak_explicit(&m->tail, &pos, pos + 1, memory_order_relaxed,
                                                memory_order_relaxed))
        break;
    } else if (dif < 0) { /* full: never wait */
      atomic_fetch_add_explicit(&m->dropped, 1, memory_order_relaxed);
      return;
    } else {
      pos = atomic_load_explicit(&m->tail, memory_order_relaxed);
    }
  }
  c->packet_id = id;
  c->kernel = k;
  c->kernel_object = d->kernel_object;
  c->dims = d->dims;
  memcpy(c->workgroup, d->workgroup_size, sizeof c->workgroup);
  memcpy(c->grid, d->grid_size, sizeof c->grid);
  c->private_segment_size = d->private_segment_size;
  c->group_segment_size = d->group_segment_size;
  c->lane_before = mark->lane;
  c->thread_id = mon_tid;
  c->scratch_before = mark->scratch;
  c->t0 = mark->t0;
  c->t1 = mark->t1;
  atomic_store_explicit(&c->seq, pos + 1, memory_order_release); /* pairs with the drainer */
}

/* ---- enable / disable ---- */

/* ROCr's system timestamp (ns) minus hsad_now_ns, from the closest of 3 bracketed reads. */
static int64_t clock_offset(void) {
  int64_t best = 0;
  uint64_t best_gap = UINT64_MAX;
  double scale = hsad_rt.timestamp_hz ? 1e9 / (double)hsad_rt.timestamp_hz : 1.0;
  for (int i = 0; i < 3; i++) {
    uint64_t ticks = 0;
    uint64_t a = hsad_now_ns();
    if (hsad_rocr.hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP, &ticks) != HSA_STATUS_SUCCESS)
      return 0;
    uint64_t b = hsad_now_ns();
    if (b - a < best_gap) {
      best_gap = b - a;
      best = (int64_t)((double)ticks * scale) - (int64_t)(a + (b - a) / 2);
    }
  }
  return best;
}

static void monitor_flush_alerts(hsad_queue_t *q);

hsad_status_t hsad_queue_monitor_enable(hsad_queue_t *q, const hsad_monitor_options_t *options) {
  if (!q) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_monitor_enable: NULL queue");
  if (DQ_FOREIGN(q)) return hsad_backend_monitor_enable(q, options);
  hsad_monitor_options_t o;
  hsad_status_t s = dq_monitor_options("hsad_queue_monitor_enable", options, &o);
  if (s) return s;
  struct dq_monitor *m = q->monitor;
  if (m && m->capacity == o.capacity) {
    m->opt = o;
    return HSAD_OK;
  }
  if (m) hsad_queue_monitor_disable(q);
  m = aligned_alloc(64, (sizeof *m + 63) & ~(size_t)63);
  mon_cell_t *cells = calloc(o.capacity, sizeof *cells);
  if (!m || !cells) {
    free(m);
    free(cells);
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_queue_monitor_enable: %u records of %zu bytes",
                     o.capacity, sizeof *cells);
  }
  memset(m, 0, sizeof *m);
  m->opt = o;
  m->capacity = o.capacity;
  m->cells = cells;
  for (uint32_t i = 0; i < o.capacity; i++) atomic_init(&cells[i].seq, i);
  pthread_mutex_init(&m->lock, NULL);
  m->clock_offset = clock_offset();
  q->monitor = m;
  dq_queue_general(q);
  return HSAD_OK;
}

void hsad_queue_monitor_disable(hsad_queue_t *q) {
  if (q && q->ops && q->ops->monitor_disable) q->ops->monitor_disable(q);
  if (!q || q->ops || !q->monitor) return;
  monitor_flush_alerts(q);
  struct dq_monitor *m = q->monitor;
  q->monitor = NULL;
  dq_queue_general(q);
  for (uint32_t i = 0; i < MON_TABLE; i++) {
    free(m->kernels[i].name);
    free(m->kernels[i].emu_line);
  }
  pthread_mutex_destroy(&m->lock);
  free(m->cells);
  free(m);
}

void dq_monitor_fini(hsad_queue_t *q) { hsad_queue_monitor_disable(q); }

/* ---- drain ---- */

/* Device times of packet `id` when it completed: 1 with times, 0 completed without times
 * (slot reused), -1 not completed yet. */
static int device_times(hsad_queue_t *q, const struct dq_monitor *m, uint64_t id,
                        uint64_t *start, uint64_t *end) {
  uint64_t slot = id & q->ring.mask;
  if (atomic_load_explicit(&q->ts_ids[slot], memory_order_acquire) != id) return 0;
  const amd_signal_t *s = (const amd_signal_t *)(uintptr_t)q->ts_signals[slot].handle;
  if (__atomic_load_n(&s->value, __ATOMIC_ACQUIRE) != 0) return -1;
  hsa_amd_profiling_dispatch_time_t t;
  if (hsad_rocr.hsa_amd_profiling_get_dispatch_time(q->device->agent, q->ts_signals[slot], &t) !=
      HSA_STATUS_SUCCESS)
    return 0;
  if (atomic_load_explicit(&q->ts_ids[slot], memory_order_acquire) != id) return 0;
  double scale = hsad_rt.timestamp_hz ? 1e9 / (double)hsad_rt.timestamp_hz : 1.0;
  *start = (uint64_t)((int64_t)((double)t.start * scale) - m->clock_offset);
  *end = (uint64_t)((int64_t)((double)t.end * scale) - m->clock_offset);
  return 1;
}

/* Scratch alerts of one drained record. */
static void scratch_alerts(const struct dq_monitor *m, hsad_queue_t *q,
                           const hsad_dispatch_record_t *r, uint32_t lane_before) {
  if (!r->private_segment_size) return;
  uint64_t before = r->queue_scratch_before, after = r->queue_scratch_after;
  if (after > before && (before == 0 || lane_before < r->private_segment_size))
    alert(m, q, HSAD_ALERT_SCRATCH_GROWTH, r->kernel, r->packet_id, after, before,
          "kernel %s (packet %llu): ROCr grew the queue's scratch from %llu to %llu bytes for %u "
          "bytes per work-item (the queue had %u per lane)",
          r->kernel, (unsigned long long)r->packet_id, (unsigned long long)before,
          (unsigned long long)after, r->private_segment_size, lane_before);
  if (m->opt.scratch_limit && after > m->opt.scratch_limit)
    alert(m, q, HSAD_ALERT_SCRATCH_LIMIT, r->kernel, r->packet_id, after, m->opt.scratch_limit,
          "kernel %s (packet %llu): the queue's scratch is %llu bytes, above the limit of %llu",
          r->kernel, (unsigned long long)r->packet_id, (unsigned long long)after,
          (unsigned long long)m->opt.scratch_limit);
}

/* Moves up to `cap` records out; force: take records whose dispatch has not completed. */
static uint32_t drain(hsad_queue_t *q, hsad_dispatch_record_t *out, uint32_t cap, bool force) {
  struct dq_monitor *m = q->monitor;
  bool failed = atomic_load_explicit(&q->error, memory_order_relaxed) != 0;
  uint32_t n = 0;
  while (n < cap) {
    uint64_t pos = m->head;
    mon_cell_t *c = &m->cells[pos & (m->capacity - 1)];
    if (atomic_load_explicit(&c->seq, memory_order_acquire) != pos + 1) break; /* empty */
    hsad_dispatch_record_t *r = &out[n];
    *r = (hsad_dispatch_record_t){
        .queue = q, .packet_id = c->packet_id, .kernel_object = c->kernel_object,
        .dims = c->dims, .private_segment_size = c->private_segment_size,
        .group_segment_size = c->group_segment_size, .thread_id = c->thread_id,
        .queue_scratch_before = c->scratch_before, .submit_start_ns = c->t0,
        .submit_end_ns = c->t1};
    memcpy(r->workgroup, c->workgroup, sizeof r->workgroup);
    memcpy(r->grid, c->grid, sizeof r->grid);
    const mon_kernel_t *k = c->kernel;
    r->kernel = k ? k->name : mon_unknown;
    r->execution = k ? k->execution : HSAD_EXECUTION_UNKNOWN;
    if (k) {
      r->vgpr_count = k->vgpr;
      r->agpr_count = k->agpr;
      r->sgpr_count = k->sgpr;
      r->vgpr_spill_count = k->vspill;
      r->sgpr_spill_count = k->sspill;
      r->waves_per_simd = k->waves_per_simd;
      r->occupancy_percent = k->occupancy_percent;
    }
    if (q->ts_signals) {
      int t = device_times(q, m, c->packet_id, &r->start_ns, &r->end_ns);
      if (t < 0 && !force && !failed) break; /* times still to come: a later drain */
      r->device_times = t > 0;
      if (t <= 0) r->start_ns = r->end_ns = 0;
    }
    r->queue_scratch_after = queue_scratch(q);
    uint32_t lane_before = c->lane_before;
    atomic_store_explicit(&c->seq, pos + m->capacity, memory_order_release); /* free the cell */
    m->head = pos + 1;
    scratch_alerts(m, q, r, lane_before);
    n++;
  }
  return n;
}

static void monitor_flush_alerts(hsad_queue_t *q) {
  hsad_dispatch_record_t buf[64];
  while (drain(q, buf, 64, true) == 64) {
  }
}

hsad_status_t hsad_queue_monitor_drain(hsad_queue_t *q, hsad_dispatch_record_t *out_records,
                                       uint32_t capacity, uint32_t *out_count,
                                       uint64_t *out_dropped) {
  hsad_status_t s = hsad_monitor_drain_args_check(q, out_records, capacity, out_count);
  if (s) return s;
  if (DQ_FOREIGN(q))
    return hsad_backend_monitor_drain(q, out_records, capacity, out_count, out_dropped);
  *out_count = 0;
  struct dq_monitor *m = q->monitor;
  if (!m)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_queue_monitor_drain: monitoring is not enabled "
                     "on the queue (hsad_queue_monitor_enable, hsad_monitor_enable_process)");
  *out_count = drain(q, out_records, capacity, false);
  if (out_dropped) {
    uint64_t d = atomic_load_explicit(&m->dropped, memory_order_relaxed);
    *out_dropped = d - m->dropped_reported;
    m->dropped_reported = d;
  }
  return HSAD_OK;
}
