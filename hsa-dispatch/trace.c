/* trace.c - Chrome trace-event JSON of monitoring records (hsad_monitor.h, json-c). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef HSAD_NO_AMD /* the build without AMD: every queue is a backend's */
#include "hsa-dispatch/backend.h"
#define TRACE_QUEUE_ID(q) hsad_queue_ops(q)->queue_trace_id(q)
#else
#include "hsa-dispatch/dispatch_internal.h"
#define TRACE_QUEUE_ID(q) ((q)->ops ? (q)->ops->queue_trace_id(q) : (q)->hsa->id)
#endif

#define TRACE_GPU_PID (1 << 30)

typedef struct trace_rec {
  hsad_dispatch_record_t r;      /* kernel points into `name` */
  char *name;
  uint32_t device;               /* device index */
  uint32_t node;                 /* the device's KFD node id (HSA_AGENT_INFO_NODE) */
  char device_name[HSAD_NAME_MAX];
  uint64_t queue_id;             /* hsa_queue_t.id */
  uint32_t lane;                 /* track of its queue, set while writing */
  uint32_t ordinal;              /* its queue among its device's queues, set while writing */
} trace_rec_t;

struct hsad_trace {
  trace_rec_t *recs;
  size_t count, cap;
};

hsad_status_t hsad_trace_create(hsad_trace_t **out) {
  if (!out) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_trace_create: NULL out_trace");
  *out = calloc(1, sizeof **out);
  if (!*out) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_trace_create: out of host memory");
  return HSAD_OK;
}

void hsad_trace_destroy(hsad_trace_t *t) {
  if (!t) return;
  for (size_t i = 0; i < t->count; i++) free(t->recs[i].name);
  free(t->recs);
  free(t);
}

hsad_status_t hsad_trace_add(hsad_trace_t *t, const hsad_dispatch_record_t *records, size_t n) {
  if (!t) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_trace_add: NULL trace");
  if (!records && n)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_trace_add: NULL records with count %zu", n);
  if (t->count + n > t->cap) {
    size_t cap = t->cap ? t->cap : 256;
    while (cap < t->count + n) cap *= 2;
    trace_rec_t *r = realloc(t->recs, cap * sizeof *r);
    if (!r) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_trace_add: %zu records", cap);
    t->recs = r;
    t->cap = cap;
  }
  for (size_t i = 0; i < n; i++) {
    trace_rec_t *e = &t->recs[t->count];
    memset(e, 0, sizeof *e);
    e->r = records[i];
    e->name = strdup(records[i].kernel ? records[i].kernel : "?");
    if (!e->name) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_trace_add: kernel name");
    e->r.kernel = e->name;
    const hsad_queue_t *q = records[i].queue;
    if (q) {
      const hsad_device_info_t *di = hsad_device_info(hsad_queue_device(q));
      e->device = di->index;
      e->node = di->node;
      snprintf(e->device_name, sizeof e->device_name, "%s", di->name);
      e->queue_id = TRACE_QUEUE_ID(q);
    }
    t->count++;
  }
  return HSAD_OK;
}

/* us with 3 decimals from ns, exact */
static json_object *us(uint64_t ns) {
  char b[32];
  snprintf(b, sizeof b, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
  return json_object_new_double_s((double)ns / 1000.0, b);
}

static json_object *u32x3(const uint32_t v[3]) {
  json_object *a = json_object_new_array();
  for (int i = 0; i < 3; i++) json_object_array_add(a, json_object_new_int64(v[i]));
  return a;
}

static json_object *record_args(const trace_rec_t *e) {
  const hsad_dispatch_record_t *r = &e->r;
  json_object *o = json_object_new_object();
  char ko[24];
  snprintf(ko, sizeof ko, "0x%" PRIx64, r->kernel_object);
#define ADD(k, v) json_object_object_add(o, k, v)
#define I64(x) json_object_new_int64((int64_t)(x))
  ADD("queue", I64(e->queue_id));
  ADD("packet_id", I64(r->packet_id));
  ADD("kernel", json_object_new_string(r->kernel));
  ADD("kernel_object", json_object_new_string(ko));
  ADD("dims", I64(r->dims));
  ADD("grid", u32x3(r->grid));
  uint32_t wg[3] = {r->workgroup[0], r->workgroup[1], r->workgroup[2]};
  ADD("workgroup", u32x3(wg));
  ADD("vgpr_count", I64(r->vgpr_count));
  ADD("agpr_count", I64(r->agpr_count));
  ADD("sgpr_count", I64(r->sgpr_count));
  ADD("vgpr_spill_count", I64(r->vgpr_spill_count));
  ADD("sgpr_spill_count", I64(r->sgpr_spill_count));
  ADD("private_segment_size", I64(r->private_segment_size));
  ADD("group_segment_size", I64(r->group_segment_size));
  ADD("waves_per_simd", I64(r->waves_per_simd));
  ADD("occupancy_percent", I64(r->occupancy_percent));
  ADD("queue_scratch_before", I64(r->queue_scratch_before));
  ADD("queue_scratch_after", I64(r->queue_scratch_after));
  ADD("thread_id", I64(r->thread_id));
  ADD("submit_start_ns", I64(r->submit_start_ns));
  ADD("submit_end_ns", I64(r->submit_end_ns));
  if (r->device_times) {
    ADD("start_ns", I64(r->start_ns));
    ADD("end_ns", I64(r->end_ns));
  }
#undef I64
#undef ADD
  return o;
}

static json_object *event(const char *name, const char *cat, const char *ph, int64_t pid,
                          int64_t tid) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "name", json_object_new_string(name));
  if (cat) json_object_object_add(o, "cat", json_object_new_string(cat));
  json_object_object_add(o, "ph", json_object_new_string(ph));
  json_object_object_add(o, "pid", json_object_new_int64(pid));
  json_object_object_add(o, "tid", json_object_new_int64(tid));
  return o;
}

static json_object *meta(const char *what, int64_t pid, int64_t tid, const char *value) {
  json_object *o = event(what, NULL, "M", pid, tid);
  json_object *a = json_object_new_object();
  json_object_object_add(a, "name", json_object_new_string(value));
  json_object_object_add(o, "args", a);
  return o;
}

/* Track (tid) of a queue lane on its device process: queue id * 64 + lane + 1, lanes < 64. */
static int64_t lane_tid(const trace_rec_t *e) { return (int64_t)(e->queue_id * 64 + e->lane + 1); }

static int by_start(const void *a, const void *b) {
  const trace_rec_t *x = *(trace_rec_t *const *)a, *y = *(trace_rec_t *const *)b;
  if (x->device != y->device) return x->device < y->device ? -1 : 1;
  if (x->queue_id != y->queue_id) return x->queue_id < y->queue_id ? -1 : 1;
  if (x->r.start_ns != y->r.start_ns) return x->r.start_ns < y->r.start_ns ? -1 : 1;
  return x->r.end_ns < y->r.end_ns ? -1 : x->r.end_ns > y->r.end_ns;
}

/* One host submission: the records of one thread with the same submit interval and queue (a
 * batch, one queue's part of a graph launch, or a single dispatch). */
static int by_submission(const void *a, const void *b) {
  const trace_rec_t *x = *(trace_rec_t *const *)a, *y = *(trace_rec_t *const *)b;
  if (x->r.thread_id != y->r.thread_id) return x->r.thread_id < y->r.thread_id ? -1 : 1;
  if (x->r.submit_start_ns != y->r.submit_start_ns)
    return x->r.submit_start_ns < y->r.submit_start_ns ? -1 : 1;
  if (x->r.submit_end_ns != y->r.submit_end_ns)
    return x->r.submit_end_ns < y->r.submit_end_ns ? -1 : 1;
  if (x->queue_id != y->queue_id) return x->queue_id < y->queue_id ? -1 : 1;
  return x->r.packet_id < y->r.packet_id ? -1 : x->r.packet_id > y->r.packet_id;
}

static bool same_submission(const trace_rec_t *x, const trace_rec_t *y) {
  return x->r.thread_id == y->r.thread_id && x->r.submit_start_ns == y->r.submit_start_ns &&
         x->r.submit_end_ns == y->r.submit_end_ns && x->queue_id == y->queue_id;
}

/* Assigns lanes so that slices of one track never overlap nor touch (greedy by start: a lane is
 * reused by a slice starting after its last slice ended), so that a flow's ts inside a slice
 * names one slice. Queue ordinals: per device, in ascending hsa_queue_t.id (creation order).
 * Returns false when a queue needs more than 64 lanes. */
static bool assign_lanes(trace_rec_t **v, size_t n) {
  uint64_t ends[64];
  size_t i = 0;
  uint32_t ordinal = 0;
  while (i < n) {
    size_t j = i;
    uint32_t lanes = 0;
    if (i > 0 && v[i - 1]->device != v[i]->device) ordinal = 0;
    while (j < n && v[j]->device == v[i]->device && v[j]->queue_id == v[i]->queue_id) {
      uint32_t l = 0;
      while (l < lanes && ends[l] >= v[j]->r.start_ns) l++;
      if (l == lanes) {
        if (lanes == 64) return false;
        lanes++;
      }
      ends[l] = v[j]->r.end_ns;
      v[j]->lane = l;
      v[j]->ordinal = ordinal;
      j++;
    }
    ordinal++;
    i = j;
  }
  return true;
}

static int by_tid(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* The host submit slice of the submission v[0..n): "submit <kernel>" with the record as args
 * for one dispatch, "submit <n> dispatches" with the queue, interval, packet ids and kernels
 * for more. */
static json_object *submit_slice(trace_rec_t *const *v, size_t n, int64_t pid) {
  const hsad_dispatch_record_t *r = &v[0]->r;
  char name[300];
  if (n == 1)
    snprintf(name, sizeof name, "submit %s", r->kernel);
  else
    snprintf(name, sizeof name, "submit %zu dispatches", n);
  json_object *h = event(name, "submit", "X", pid, r->thread_id);
  json_object_object_add(h, "ts", us(r->submit_start_ns));
  json_object_object_add(h, "dur", us(r->submit_end_ns - r->submit_start_ns));
  if (n == 1) {
    json_object_object_add(h, "args", record_args(v[0]));
    return h;
  }
  json_object *a = json_object_new_object(), *ids = json_object_new_array(),
              *ks = json_object_new_array();
  for (size_t i = 0; i < n; i++) {
    json_object_array_add(ids, json_object_new_int64((int64_t)v[i]->r.packet_id));
    json_object_array_add(ks, json_object_new_string(v[i]->r.kernel));
  }
  json_object_object_add(a, "queue", json_object_new_int64((int64_t)v[0]->queue_id));
  json_object_object_add(a, "dispatches", json_object_new_int64((int64_t)n));
  json_object_object_add(a, "packet_ids", ids);
  json_object_object_add(a, "kernels", ks);
  json_object_object_add(a, "thread_id", json_object_new_int64(r->thread_id));
  json_object_object_add(a, "submit_start_ns", json_object_new_int64((int64_t)r->submit_start_ns));
  json_object_object_add(a, "submit_end_ns", json_object_new_int64((int64_t)r->submit_end_ns));
  json_object_object_add(h, "args", a);
  return h;
}

static hsad_status_t build(const hsad_trace_t *t, json_object *ev) {
  int64_t pid = getpid();
  size_t count = t->count;
  trace_rec_t **v = malloc((count ? count : 1) * sizeof *v);
  uint32_t *tids = malloc((count ? count : 1) * sizeof *tids);
  if (!v || !tids) {
    free(v);
    free(tids);
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_trace_write: %zu records", count);
  }
  json_object_array_add(ev, meta("process_name", pid, 0, "hsa-dispatch"));
  /* host threads, named as rocprofv3 names them: the main thread 0, the others 1, 2, ... in
   * ascending thread id */
  for (size_t i = 0; i < count; i++) tids[i] = t->recs[i].r.thread_id;
  qsort(tids, count, sizeof *tids, by_tid);
  uint32_t index = 0;
  for (size_t i = 0; i < count; i++) {
    if (i > 0 && tids[i] == tids[i - 1]) continue;
    char name[48];
    snprintf(name, sizeof name, "THREAD %u (%u)", (int64_t)tids[i] == pid ? 0 : ++index, tids[i]);
    json_object_array_add(ev, meta("thread_name", pid, tids[i], name));
  }
  free(tids);
  /* host submit slices: one per submission */
  for (size_t i = 0; i < count; i++) v[i] = &t->recs[i];
  qsort(v, count, sizeof *v, by_submission);
  for (size_t i = 0, j; i < count; i = j) {
    for (j = i + 1; j < count && same_submission(v[j], v[i]); j++) {
    }
    json_object_array_add(ev, submit_slice(&v[i], j - i, pid));
  }
  /* device slices: lanes per queue */
  size_t nd = 0;
  for (size_t i = 0; i < count; i++)
    if (t->recs[i].r.device_times) v[nd++] = &t->recs[i];
  qsort(v, nd, sizeof *v, by_start);
  if (!assign_lanes(v, nd)) {
    free(v);
    return hsad_fail(HSAD_ERR_RESOURCE_EXHAUSTED, "hsad_trace_write: more than 64 dispatches "
                     "overlap on one queue");
  }
  for (size_t i = 0; i < nd; i++) {
    const trace_rec_t *e = v[i];
    int64_t gpid = TRACE_GPU_PID + e->device;
    bool dev_seen = false, lane_seen = false;
    for (size_t j = 0; j < i; j++) {
      dev_seen |= v[j]->device == e->device;
      lane_seen |= v[j]->device == e->device && v[j]->queue_id == e->queue_id &&
                   v[j]->lane == e->lane;
    }
    char name[96];
    if (!dev_seen) {
      snprintf(name, sizeof name, "GPU %u %s", e->device, e->device_name);
      json_object_array_add(ev, meta("process_name", gpid, 0, name));
    }
    if (!lane_seen) {
      int k = snprintf(name, sizeof name, "COMPUTE Agent [%u] QUEUE [%u] GPU", e->node,
                       e->ordinal);
      if (e->lane) snprintf(name + k, sizeof name - (size_t)k, " lane %u", e->lane);
      json_object_array_add(ev, meta("thread_name", gpid, lane_tid(e), name));
    }
  }
  free(v);
  /* dispatch slices and flows, in the order the records were added */
  uint64_t flow = 0;
  for (size_t i = 0; i < count; i++) {
    const trace_rec_t *e = &t->recs[i];
    const hsad_dispatch_record_t *r = &e->r;
    if (!r->device_times) continue;
    int64_t gpid = TRACE_GPU_PID + e->device;
    json_object *d = event(r->kernel, "dispatch", "X", gpid, lane_tid(e));
    json_object_object_add(d, "ts", us(r->start_ns));
    json_object_object_add(d, "dur", us(r->end_ns - r->start_ns));
    json_object_object_add(d, "args", record_args(e));
    json_object_array_add(ev, d);
    flow++;
    /* both ends at the middle of their slices: inside them, whatever the neighbours */
    json_object *s = event("dispatch", "flow", "s", pid, r->thread_id);
    json_object_object_add(s, "id", json_object_new_int64((int64_t)flow));
    json_object_object_add(s, "ts", us(r->submit_start_ns + (r->submit_end_ns - r->submit_start_ns) / 2));
    json_object_array_add(ev, s);
    json_object *f = event("dispatch", "flow", "f", gpid, lane_tid(e));
    json_object_object_add(f, "id", json_object_new_int64((int64_t)flow));
    json_object_object_add(f, "bp", json_object_new_string("e"));
    json_object_object_add(f, "ts", us(r->start_ns + (r->end_ns - r->start_ns) / 2));
    json_object_array_add(ev, f);
  }
  return HSAD_OK;
}

hsad_status_t hsad_trace_write(const hsad_trace_t *t, const char *path) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_trace_write", {t, "trace"}, {path, "path"});
  if (ns) return ns;
  json_object *root = json_object_new_object();
  json_object *ev = json_object_new_array();
  if (!root || !ev) {
    json_object_put(root);
    json_object_put(ev);
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_trace_write: JSON objects");
  }
  json_object_object_add(root, "traceEvents", ev);
  json_object_object_add(root, "displayTimeUnit", json_object_new_string("ns"));
  hsad_status_t s = build(t, ev);
  if (s) {
    json_object_put(root);
    return s;
  }
  const char *text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
  FILE *f = fopen(path, "w");
  if (!f) {
    int e = errno;
    json_object_put(root);
    return hsad_fail(HSAD_ERR_IO, "hsad_trace_write: cannot create %s: %s", path, strerror(e));
  }
  bool ok = fputs(text, f) >= 0 && fputc('\n', f) != EOF;
  int e = errno;
  ok = (fclose(f) == 0) && ok;
  if (!ok && !e) e = errno;
  json_object_put(root);
  if (!ok) return hsad_fail(HSAD_ERR_IO, "hsad_trace_write: writing %s: %s", path, strerror(e));
  return HSAD_OK;
}
