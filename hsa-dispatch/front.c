/* front.c - the public API of a build without the AMD backend (make BACKENDS=nvidia): every
 * call finds the object's backend table (backend.h) and forwards to it. Needs no ROCm header.
 * With AMD built, hsa-dispatch/runtime.c, program.c, queue.c, dispatch.c and timeline.c are
 * the front instead (AMD's own implementation, forwarding other backends' objects on their
 * cold paths). Messages of the checks made here match theirs. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hsa-dispatch/backend.h"
#include "hsa-dispatch/monitor_common.h"
#include "hsa-dispatch/runtime_refs.h"
#include "memory/hsad_memory.h"

#define FR_MAX_DEVICES 16

struct hsad_device {
  const hsad_backend_ops_t *ops;
  void *impl;
  hsad_device_info_t info;
};

struct hsad_runtime {
  pthread_mutex_t lock; /* its reference count: fr_refs (runtime_refs.h) */
  uint32_t device_count;
  hsad_device_t devices[FR_MAX_DEVICES];
};

static hsad_runtime_t fr_rt = {.lock = PTHREAD_MUTEX_INITIALIZER};
static hsad_rt_refs_t fr_refs; /* opens, close hooks (under fr_rt.lock) */
static _Atomic uint64_t fr_generation;

uint64_t hsad_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool fr_open(void) { return hsad_rt_refs_open(&fr_refs); }

static hsad_status_t fr_check_open(void) {
  return fr_open() ? HSAD_OK
                   : hsad_fail(HSAD_ERR_CLOSED, "hsa-dispatch runtime is closed (call hsad_runtime_open)");
}

/* A NULL pointer argument named as memory/'s checks name it ("hsad_mem_alloc: out_ptr is
 * NULL"). */
static hsad_status_t fr_null(const char *who, const char *param) {
  return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", who, param);
}

static hsad_status_t fr_amd_only(const char *who) {
  return hsad_fail(HSAD_ERR_UNSUPPORTED, "%s: AMD only, and this libhsad was built without the "
                   "AMD backend (make BACKENDS=nvidia)", who);
}

/* ---- runtime -------------------------------------------------------------------------- */

hsad_status_t hsad_runtime_open(hsad_runtime_t **out_runtime) {
  if (!out_runtime) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_runtime_open: out_runtime is NULL");
  pthread_mutex_lock(&fr_rt.lock);
  if (fr_refs.refs == 0) {
    char why[512] = "";
    fr_rt.device_count = 0;
    for (const hsad_backend_ops_t *const *b = hsad_backends; *b; b++) {
      uint32_t n = 0;
      hsad_status_t s = (*b)->open(&n, why, sizeof why);
      if (s) {
        for (const hsad_backend_ops_t *const *c = hsad_backends; c != b; c++) (*c)->close();
        pthread_mutex_unlock(&fr_rt.lock);
        return s;
      }
      for (uint32_t i = 0; i < n && fr_rt.device_count < FR_MAX_DEVICES; i++) {
        uint32_t g = fr_rt.device_count++;
        hsad_device_t *d = &fr_rt.devices[g];
        memset(d, 0, sizeof *d);
        d->ops = *b;
        (*b)->device_describe(i, g, d, &d->info, &d->impl);
        d->info.index = g;
      }
    }
    if (fr_rt.device_count == 0) {
      for (const hsad_backend_ops_t *const *b = hsad_backends; *b; b++) (*b)->close();
      pthread_mutex_unlock(&fr_rt.lock);
      return hsad_fail(HSAD_ERR_NO_DEVICE, "no GPU: this libhsad serves NVIDIA GPUs only (built "
                       "with BACKENDS=nvidia): %s", why[0] ? why : "no device");
    }
    atomic_fetch_add_explicit(&fr_generation, 1, memory_order_release);
  }
  hsad_rt_refs_take(&fr_refs);
  pthread_mutex_unlock(&fr_rt.lock);
  *out_runtime = &fr_rt;
  return HSAD_OK;
}

hsad_status_t hsad_runtime_close(hsad_runtime_t *runtime) {
  if (!runtime) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_runtime_close: runtime is NULL");
  pthread_mutex_lock(&fr_rt.lock);
  bool last;
  hsad_status_t s = hsad_rt_refs_drop(&fr_refs, &last);
  if (last) /* the hooks have run */
    for (const hsad_backend_ops_t *const *b = hsad_backends; *b; b++) (*b)->close();
  pthread_mutex_unlock(&fr_rt.lock);
  return s;
}

uint32_t hsad_device_count(const hsad_runtime_t *runtime) {
  return runtime && fr_open() ? fr_rt.device_count : 0;
}
uint32_t hsad_cpu_count(const hsad_runtime_t *runtime) {
  (void)runtime;
  return 0; /* CPU agents are ROCr's */
}
const hsad_cpu_info_t *hsad_cpu_info(const hsad_runtime_t *runtime, uint32_t index) {
  (void)runtime;
  (void)index;
  return NULL;
}

hsad_status_t hsad_device_get(hsad_runtime_t *runtime, uint32_t index, hsad_device_t **out_device) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_device_get", {runtime, "runtime"},
                                  {out_device, "out_device"});
  if (s) return s;
  if (!fr_open()) return hsad_fail(HSAD_ERR_CLOSED, "hsad_device_get: the runtime is closed");
  if (index >= fr_rt.device_count)
    return hsad_fail(HSAD_ERR_DEVICE_INDEX, "device index %u out of range: %u GPU device(s), "
                     "valid indices 0..%u", index, fr_rt.device_count, fr_rt.device_count - 1);
  *out_device = &fr_rt.devices[index];
  return HSAD_OK;
}

const hsad_device_info_t *hsad_device_info(const hsad_device_t *device) {
  return device ? &device->info : NULL;
}

hsad_runtime_t *hsad_device_runtime(const hsad_device_t *device) {
  uintptr_t p = (uintptr_t)device, lo = (uintptr_t)&fr_rt.devices[0];
  if (!device || p < lo || p >= (uintptr_t)&fr_rt.devices[FR_MAX_DEVICES] ||
      (p - lo) % sizeof(hsad_device_t) != 0 || !fr_open() ||
      (p - lo) / sizeof(hsad_device_t) >= fr_rt.device_count)
    return NULL;
  return &fr_rt;
}

uint64_t hsad_runtime_generation(const hsad_runtime_t *runtime) {
  if (runtime != &fr_rt || !fr_open()) return 0;
  return atomic_load_explicit(&fr_generation, memory_order_acquire);
}

hsad_status_t hsad_runtime_on_close(hsad_runtime_t *runtime, void (*fn)(void *arg), void *arg) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_runtime_on_close", {runtime, "runtime"});
  if (ns) return ns;
  if (runtime != &fr_rt)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_runtime_on_close: runtime %p is not the "
                     "hsa-dispatch runtime", (void *)runtime);
  if (!fn) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_runtime_on_close: NULL fn");
  pthread_mutex_lock(&fr_rt.lock);
  hsad_status_t s = hsad_rt_refs_hook(&fr_refs, fn, arg);
  pthread_mutex_unlock(&fr_rt.lock);
  return s;
}

hsad_status_t hsad_buffer_alloc(hsad_device_t *device, size_t size, void **out_ptr) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_buffer_alloc", {device, "device"}, {out_ptr, "out_ptr"});
  if (s) return s;
  if (!size) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_buffer_alloc: size 0");
  s = fr_check_open();
  return s ? s : device->ops->buffer_alloc(device, device->impl, size, out_ptr);
}

hsad_status_t hsad_buffer_free(void *ptr) {
  if (!ptr) return HSAD_OK;
  for (const hsad_backend_ops_t *const *b = hsad_backends; *b; b++)
    if ((*b)->buffer_free(ptr)) return HSAD_OK;
  return hsad_fail(HSAD_ERR_NOT_ALLOCATED, "hsad_buffer_free: %p was not allocated by hsad "
                   "(or was freed already)", ptr);
}

/* ---- programs ------------------------------------------------------------------------- */

hsad_status_t hsad_program_load_file(hsad_device_t *device, const char *path,
                                     hsad_program_t **out_program) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_program_load_file", {device, "device"}, {path, "path"},
                                  {out_program, "out_program"});
  if (!s) s = fr_check_open();
  if (s) return s;
  void *data = NULL;
  size_t size = 0;
  if ((s = hsad_backend_read_file(path, &data, &size)) != HSAD_OK) return s;
  s = device->ops->program_load(device, device->impl, data, size, path, out_program);
  free(data);
  return s;
}

hsad_status_t hsad_program_load_memory(hsad_device_t *device, const void *data, size_t size,
                                       const char *label, hsad_program_t **out_program) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_program_load_memory", {device, "device"}, {data, "data"},
                                  {out_program, "out_program"});
  if (s) return s;
  if (!size) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_program_load_memory: size 0");
  s = fr_check_open();
  return s ? s : device->ops->program_load(device, device->impl, data, size,
                                           label ? label : "<memory>", out_program);
}

hsad_status_t hsad_program_destroy(hsad_program_t *p) {
  if (p) hsad_object_ops(p)->program_destroy(p);
  return HSAD_OK;
}
const hsad_codeobj_t *hsad_program_codeobj(const hsad_program_t *p) {
  (void)p;
  return NULL; /* AMD code objects only */
}
hsad_device_t *hsad_program_device(const hsad_program_t *p) {
  return p ? hsad_object_ops(p)->program_device(p) : NULL;
}
uint32_t hsad_program_kernel_count(const hsad_program_t *p) {
  return p ? hsad_object_ops(p)->program_kernel_count(p) : 0;
}
hsad_status_t hsad_program_kernel(const hsad_program_t *p, const char *name,
                                  const hsad_device_kernel_t **out_kernel) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_program_kernel", {p, "program"}, {name, "name"},
                                  {out_kernel, "out_kernel"});
  if (!s) s = fr_check_open();
  return s ? s : hsad_object_ops(p)->program_kernel(p, name, out_kernel);
}
const hsad_device_kernel_t *hsad_program_kernel_at(const hsad_program_t *p, uint32_t i) {
  return p ? hsad_object_ops(p)->program_kernel_at(p, i) : NULL;
}
const hsad_device_kernel_desc_t *hsad_device_kernel_desc(const hsad_device_kernel_t *k) {
  return k ? hsad_object_ops(k)->kernel_desc(k) : NULL;
}

/* ---- queues, dispatch, completions ---------------------------------------------------- */

hsad_status_t hsad_queue_create(hsad_device_t *device, const hsad_queue_options_t *options,
                                hsad_queue_t **out_queue) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_queue_create", {device, "device"},
                                  {out_queue, "out_queue"});
  if (!s) s = fr_check_open();
  if (!s) s = device->ops->queue_create(device, device->impl, options, out_queue);
  if (!s && device->ops->monitor_enable) dq_monitor_queue_created(*out_queue);
  return s;
}
void hsad_queue_destroy(hsad_queue_t *q) {
  if (q) hsad_queue_ops(q)->queue_destroy(q);
}
hsad_status_t hsad_queue_destroy_deadline(hsad_queue_t *q, uint64_t deadline_ns) {
  if (!q) return HSAD_OK;
  hsad_status_t s = hsad_queue_wait_idle(q, deadline_ns);
  if (s == HSAD_ERR_TIMEOUT || s == HSAD_ERR_INVALID_ARGUMENT) return s;
  hsad_queue_ops(q)->queue_destroy(q);
  hsad_clear_error();
  return HSAD_OK;
}
hsad_status_t hsad_device_queue(hsad_device_t *device, hsad_queue_t **out_queue) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_device_queue", {device, "device"},
                                  {out_queue, "out_queue"});
  if (!s) s = fr_check_open();
  return s ? s : device->ops->device_queue(device, device->impl, out_queue);
}
hsad_device_t *hsad_queue_device(const hsad_queue_t *q) {
  return q ? hsad_queue_ops(q)->queue_device(q) : NULL;
}
uint32_t hsad_queue_size(const hsad_queue_t *q) { return q ? hsad_queue_ops(q)->queue_size(q) : 0; }
hsad_status_t hsad_queue_error(const hsad_queue_t *q) {
  if (!q) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_error: NULL queue");
  return hsad_queue_ops(q)->queue_error(q);
}

/* ---- monitoring (hsad_monitor.h): the queue's backend keeps the records; messages as
 * hsa-dispatch/monitor.c's ---------------------------------------------------------------- */

hsad_status_t hsad_queue_monitor_enable(hsad_queue_t *q, const hsad_monitor_options_t *options) {
  if (!q) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_monitor_enable: NULL queue");
  return hsad_backend_monitor_enable(q, options);
}

void hsad_queue_monitor_disable(hsad_queue_t *q) {
  if (q && hsad_queue_ops(q)->monitor_disable) hsad_queue_ops(q)->monitor_disable(q);
}

hsad_status_t hsad_queue_monitor_drain(hsad_queue_t *q, hsad_dispatch_record_t *out_records,
                                       uint32_t capacity, uint32_t *out_count,
                                       uint64_t *out_dropped) {
  hsad_status_t s = hsad_monitor_drain_args_check(q, out_records, capacity, out_count);
  return s ? s : hsad_backend_monitor_drain(q, out_records, capacity, out_count, out_dropped);
}

hsad_status_t hsad_kernel_dispatch(hsad_queue_t *q, const hsad_device_kernel_t *k,
                                   const hsad_launch_t *l, uint64_t deadline_ns,
                                   hsad_completion_t *out_completion, uint64_t *out_packet_id) {
  if (__builtin_expect(!q, 0))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_kernel_dispatch: NULL queue");
  return hsad_queue_ops(q)->kernel_dispatch(q, k, l, deadline_ns, out_completion, out_packet_id);
}

hsad_status_t hsad_launch_prepare(hsad_queue_t *q, const hsad_device_kernel_t *k,
                                  const hsad_launch_t *l, hsad_prepared_launch_t **out) {
  (void)q, (void)k, (void)l, (void)out;
  return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_launch_prepare: prepared launches are AMD only "
                   "for now (use hsad_kernel_dispatch)");
}
hsad_status_t hsad_prepared_dispatch(const hsad_prepared_launch_t *p, uint64_t deadline_ns,
                                     hsad_completion_t *out_completion, uint64_t *out_packet_id) {
  (void)p, (void)deadline_ns, (void)out_completion, (void)out_packet_id;
  return fr_amd_only("hsad_prepared_dispatch");
}
void hsad_launch_destroy(hsad_prepared_launch_t *p) { (void)p; }

hsad_status_t hsad_queue_dispatch_batch(hsad_queue_t *q, const hsad_dispatch_desc_t *items,
                                        uint32_t count, uint64_t deadline_ns,
                                        hsad_completion_t *out_completion,
                                        uint64_t *out_first_packet_id) {
  hsad_status_t s = hsad_batch_args_check(q, items, count);
  return s ? s : hsad_backend_batch_one_by_one(q, items, count, deadline_ns, out_completion,
                                               out_first_packet_id);
}

hsad_status_t hsad_queue_barrier(hsad_queue_t *q, const hsad_completion_t *deps,
                                 uint32_t dep_count, uint64_t deadline_ns,
                                 hsad_completion_t *out_completion) {
  if (!q) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_barrier: NULL queue");
  if (!deps && dep_count)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_barrier: NULL deps with dep_count %u",
                     dep_count);
  return hsad_queue_ops(q)->queue_barrier(q, deps, dep_count, deadline_ns, out_completion);
}

hsad_status_t hsad_queue_flush(hsad_queue_t *q, uint64_t deadline_ns, hsad_completion_t *out) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_queue_flush", {q, "queue"}, {out, "out_completion"});
  if (s) return s;
  return hsad_queue_ops(q)->queue_flush(q, deadline_ns, out);
}

hsad_status_t hsad_queue_wait_idle(hsad_queue_t *q, uint64_t deadline_ns) {
  if (!q) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_wait_idle: NULL queue");
  hsad_completion_t c;
  hsad_status_t s = hsad_backend_capture_refuse(q, "hsad_queue_wait_idle");
  if (!s) s = hsad_queue_flush(q, deadline_ns, &c);
  return s ? s : hsad_completion_wait(&c, deadline_ns);
}

hsad_status_t hsad_completion_wait(const hsad_completion_t *c, uint64_t deadline_ns) {
  if (!c) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_completion_wait: NULL completion");
  if (!c->queue || !c->epoch) return HSAD_OK;
  return hsad_queue_ops(c->queue)->completion_wait(c, deadline_ns);
}

bool hsad_completion_done(const hsad_completion_t *c) {
  return !c || !c->queue || !c->epoch || hsad_queue_ops(c->queue)->completion_done(c);
}

hsad_status_t hsad_completion_wait_all(const hsad_completion_t *cs, uint32_t n,
                                       uint64_t deadline_ns) {
  if (!cs && n)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_completion_wait_all: NULL completions");
  return hsad_backend_wait_all(cs, n, deadline_ns);
}

hsad_status_t hsad_completion_wait_any(const hsad_completion_t *cs, uint32_t n,
                                       uint64_t deadline_ns, uint32_t *out_index) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_completion_wait_any", {cs, "completions"},
                                  {out_index, "out_index"});
  if (s) return s;
  if (!n) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_completion_wait_any: count 0");
  return hsad_backend_wait_any(cs, n, deadline_ns, out_index);
}

hsad_status_t hsad_completion_times(const hsad_completion_t *c, uint64_t *out_start_ns,
                                    uint64_t *out_end_ns) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_completion_times", {c, "completion"},
                                  {out_start_ns, "out_start_ns"}, {out_end_ns, "out_end_ns"});
  if (s) return s;
  if (!c->queue)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_completion_times: the queue was created without "
                     "profiling (hsad_queue_options_t.profiling)");
  return hsad_queue_ops(c->queue)->completion_times(c, out_start_ns, out_end_ns);
}

/* ---- memory (memory/hsad_memory.h: the calls both vendors have) ------------------------- */

hsad_status_t hsad_mem_alloc(hsad_device_t *device, hsad_mem_kind_t kind, size_t size,
                             hsad_device_t *const *access, uint32_t access_count,
                             void **out_ptr) {
  (void)access;
  if (!out_ptr) return fr_null("hsad_mem_alloc", "out_ptr");
  if (!device) return fr_null("hsad_mem_alloc", "device");
  if (access_count)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_mem_alloc: peer access lists are AMD only");
  hsad_status_t s = fr_check_open();
  return s ? s : device->ops->mem_alloc(device, device->impl, (uint32_t)kind, size, out_ptr);
}

hsad_status_t hsad_mem_free(void *ptr) {
  if (!ptr) return HSAD_OK;
  for (const hsad_backend_ops_t *const *b = hsad_backends; *b; b++) {
    hsad_status_t s = (*b)->mem_free(ptr);
    if (s != HSAD_ERR_NOT_ALLOCATED) return s;
  }
  return hsad_fail(HSAD_ERR_NOT_ALLOCATED, "hsad_mem_free: %p was not allocated by hsad", ptr);
}

hsad_status_t hsad_memcpy_async(hsad_device_t *device, void *dst, const void *src, size_t size,
                                const hsad_completion_t *deps, uint32_t dep_count,
                                const hsad_copy_options_t *options, uint64_t deadline_ns,
                                hsad_completion_t *out_completion) {
  if (!device) return fr_null("hsad_memcpy_async", "device");
  hsad_status_t s = fr_check_open();
  return s ? s : device->ops->memcpy_async(device, device->impl, dst, src, size, deps, dep_count,
                                           options, deadline_ns, out_completion);
}

/* ---- pinned host pools: the backend's (a pool begins with its table) ------------------- */

hsad_status_t hsad_host_pool_get(hsad_device_t *device, hsad_host_pool_t **out_pool) {
  if (!out_pool) return fr_null("hsad_host_pool_get", "out_pool");
  if (!device) return fr_null("hsad_host_pool_get", "device");
  hsad_status_t s = fr_check_open();
  return s ? s : device->ops->host_pool_get(device, device->impl, out_pool);
}

hsad_status_t hsad_host_pool_get_node(hsad_runtime_t *runtime, uint32_t numa_node,
                                      hsad_host_pool_t **out_pool) {
  if (!out_pool) return fr_null("hsad_host_pool_get_node", "out_pool");
  if (!runtime) return fr_null("hsad_host_pool_get_node", "runtime");
  hsad_status_t s = fr_check_open();
  if (s) return s;
  if (!fr_rt.device_count)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_host_pool_get_node: no device");
  return fr_rt.devices[0].ops->host_pool_get_node(numa_node, out_pool);
}

static const hsad_backend_ops_t *fr_pool_ops(const hsad_host_pool_t *pool) {
  return hsad_object_ops(pool);
}

hsad_status_t hsad_host_pool_alloc(hsad_host_pool_t *pool, size_t size, void **out_ptr) {
  if (!pool) return fr_null("hsad_host_pool_alloc", "pool");
  return fr_pool_ops(pool)->host_pool_alloc(pool, size, out_ptr);
}

hsad_status_t hsad_host_pool_free(hsad_host_pool_t *pool, void *ptr) {
  if (!pool) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_host_pool_free: NULL pool");
  return fr_pool_ops(pool)->host_pool_free(pool, ptr);
}

hsad_status_t hsad_host_pool_trim(hsad_host_pool_t *pool, uint64_t keep_bytes,
                                  uint64_t *out_released_bytes) {
  if (!pool) return fr_null("hsad_host_pool_trim", "pool");
  return fr_pool_ops(pool)->host_pool_trim(pool, keep_bytes, out_released_bytes);
}

hsad_status_t hsad_host_pool_set_max_cached(hsad_host_pool_t *pool, uint64_t max_cached_bytes) {
  if (!pool) return fr_null("hsad_host_pool_set_max_cached", "pool");
  return fr_pool_ops(pool)->host_pool_set_max_cached(pool, max_cached_bytes);
}

hsad_status_t hsad_host_pool_stats(const hsad_host_pool_t *pool,
                                   hsad_host_pool_stats_t *out_stats) {
  if (!pool) return HSAD_NULL_ARGS("hsad_host_pool_stats", {pool, "pool"});
  return fr_pool_ops(pool)->host_pool_stats(pool, out_stats);
}

hsad_status_t hsad_memcpy(hsad_device_t *device, void *dst, const void *src, size_t size,
                          const hsad_copy_options_t *options, uint64_t deadline_ns) {
  hsad_completion_t c;
  hsad_status_t s = hsad_memcpy_async(device, dst, src, size, NULL, 0, options, deadline_ns, &c);
  return s ? s : hsad_completion_wait(&c, deadline_ns ? deadline_ns : HSAD_DEADLINE_NEVER);
}
