/* nv_memory.c - NVIDIA memory: device memory (cuMemAlloc), pinned host memory mapped for the
 * device (cuMemHostAlloc PORTABLE | DEVICEMAP), asynchronous copies on a per-device copy stream
 * (cuMemcpyAsync over unified addresses: host to device, device to host, device to device)
 * ordered after completions of any queue and completing on that stream's timeline.
 *
 * A pageable host side (memory the driver does not know: cuPointerGetAttribute(MEMORY_TYPE)
 * answers an error) gets a strategy by size, measured on the H200 (README, "NVIDIA GPUs": the
 * pageable table of hsad-bench-nvidia, two machines; a strategy is the default where it was
 * at least 5% faster than the driver's pageable path in both); STAGED and PINNED copies
 * return once the bytes are at dst:
 *   STAGED / PIPELINED  through pinned pool blocks (hsad_host_pool of the device's node) in
 *                       chunks of 256 KiB, 3 in flight: the host copies chunk i while the
 *                       engine moves chunk i - 1. Default for host -> device up to 64 KiB
 *                       (1.13-1.23x; at 4 and 256 KiB it won on one machine and lost on the
 *                       other) and device -> host up to 1 MiB (1.06-1.66x).
 *   DIRECT              the driver's own pageable path (cuMemcpyAsync): default between.
 *   PINNED              cuMemHostRegister of the host range in place, the copy, unregister:
 *                       default for host -> device from 64 MiB (1.59x and 1.68x); device ->
 *                       host at 64 MiB only 1.04x / 1.12x, so it stays DIRECT. A range the
 *                       driver refuses to register (registered in part already, read-only)
 *                       goes DIRECT.
 * hsad_copy_options_t: staging_max / pin_threshold replace the defaults for both directions
 * (DIRECT between them), chunk_size / chunk_buffers the pipeline's, force picks a strategy.
 *
 * Every allocation is recorded (base, size, kind, device, context generation) so hsad_mem_free
 * and hsad_buffer_free find their backend from the pointer alone; the list is short-lived
 * state under one mutex (frees are not a per-dispatch path). */
#include <stdlib.h>
#include <string.h>

#include "memory/hsad_memory.h"
#include "nvidia/nv_internal.h"

typedef struct nv_alloc {
  void *base;
  size_t size;
  uint32_t kind;            /* HSAD_MEM_* (1 device, 2/3 host) or 0: hsad_buffer_alloc */
  nv_dev_t *dev;
  uint64_t generation;
  struct nv_alloc *next;
} nv_alloc_t;

static pthread_mutex_t nv_mem_lock = PTHREAD_MUTEX_INITIALIZER;
static nv_alloc_t *nv_allocs;

static hsad_status_t nv_record(nv_dev_t *dev, void *base, size_t size, uint32_t kind) {
  nv_alloc_t *a = malloc(sizeof *a);
  if (!a) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "allocation record");
  *a = (nv_alloc_t){.base = base, .size = size, .kind = kind, .dev = dev,
                    .generation = atomic_load_explicit(&dev->generation, memory_order_acquire)};
  pthread_mutex_lock(&nv_mem_lock);
  a->next = nv_allocs;
  nv_allocs = a;
  pthread_mutex_unlock(&nv_mem_lock);
  return HSAD_OK;
}

static nv_alloc_t *nv_unrecord(void *base) {
  pthread_mutex_lock(&nv_mem_lock);
  nv_alloc_t *a = NULL;
  for (nv_alloc_t **p = &nv_allocs; *p; p = &(*p)->next)
    if ((*p)->base == base) {
      a = *p;
      *p = a->next;
      break;
    }
  pthread_mutex_unlock(&nv_mem_lock);
  return a;
}

static void nv_release(nv_alloc_t *a) {
  nv_dev_t *dev = a->dev;
  if (atomic_load_explicit(&dev->generation, memory_order_acquire) == a->generation &&
      nv_ctx_enter(dev) == HSAD_OK) {
    if (a->kind == 1)
      nv_cu.mem_free((nv_deviceptr_t)(uintptr_t)a->base);
    else
      nv_cu.mem_free_host(a->base);
  }
  free(a);
}

static hsad_status_t nv_host_alloc(nv_dev_t *dev, size_t size, void **out) {
  hsad_status_t s = nv_ctx_enter(dev);
  if (s) return s;
  void *p = NULL;
  nv_result_t r = nv_cu.mem_host_alloc(&p, size, NV_MEMHOSTALLOC_PORTABLE | NV_MEMHOSTALLOC_DEVICEMAP);
  if (r == NV_ERROR_OUT_OF_MEMORY)
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "device %u: cuMemHostAlloc of %zu bytes: out of "
                     "memory", dev->info.index, size);
  if (r != NV_SUCCESS)
    return nv_fail(dev, r, "device %u: cuMemHostAlloc of %zu bytes", dev->info.index, size);
  *out = p;
  return HSAD_OK;
}

hsad_status_t nv_buffer_alloc(hsad_device_t *device, void *impl, size_t size, void **out) {
  (void)device;
  nv_dev_t *dev = impl;
  void *p;
  hsad_status_t s = nv_host_alloc(dev, size, &p);
  if (s) return s;
  memset(p, 0, size);
  if ((s = nv_record(dev, p, size, 0)) != HSAD_OK) {
    nv_cu.mem_free_host(p);
    return s;
  }
  *out = p;
  return HSAD_OK;
}

bool nv_buffer_free(void *ptr) {
  nv_alloc_t *a = nv_unrecord(ptr);
  if (!a) return false;
  nv_release(a);
  return true;
}

hsad_status_t nv_mem_alloc(hsad_device_t *device, void *impl, uint32_t kind, size_t size,
                           void **out) {
  (void)device;
  nv_dev_t *dev = impl;
  if (kind < 1 || kind > 3)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_mem_alloc: kind %u is not DEVICE, HOST_FINE "
                     "or HOST_COARSE", kind);
  if (!size) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_mem_alloc: size 0");
  if (atomic_load_explicit(&dev->lost, memory_order_acquire))
    return hsad_fail(HSAD_ERR_QUEUE_ERROR, "hsad_mem_alloc: %s; create a queue on it first (that "
                     "resets the context)", dev->lost_msg);
  void *p = NULL;
  hsad_status_t s;
  if (kind == 1) {
    if ((s = nv_ctx_enter(dev)) != HSAD_OK) return s;
    nv_deviceptr_t d = 0;
    nv_result_t r = nv_cu.mem_alloc(&d, size);
    if (r == NV_ERROR_OUT_OF_MEMORY)
      return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_mem_alloc: %zu bytes of device memory on "
                       "device %u (%llu bytes in all): cuMemAlloc out of memory", size,
                       dev->info.index, (unsigned long long)dev->info.local_memory_bytes);
    if (r != NV_SUCCESS)
      return nv_fail(dev, r, "hsad_mem_alloc: cuMemAlloc(%zu) on device %u", size, dev->info.index);
    p = (void *)(uintptr_t)d;
  } else if ((s = nv_host_alloc(dev, size, &p)) != HSAD_OK) {
    return s;
  }
  if ((s = nv_record(dev, p, size, kind)) != HSAD_OK) {
    if (kind == 1)
      nv_cu.mem_free((nv_deviceptr_t)(uintptr_t)p);
    else
      nv_cu.mem_free_host(p);
    return s;
  }
  *out = p;
  return HSAD_OK;
}

hsad_status_t nv_mem_free(void *ptr) {
  nv_alloc_t *a = nv_unrecord(ptr);
  if (!a) return nv_host_pool_free_any(ptr); /* a pool block, or not ours: the caller says why */
  nv_release(a);
  return HSAD_OK;
}

static hsad_status_t nv_copy_queue(nv_dev_t *dev, nv_queue_t **out) {
  pthread_mutex_lock(&dev->lock);
  nv_queue_t *q = dev->copyq;
  pthread_mutex_unlock(&dev->lock);
  if (q && !atomic_load_explicit(&q->error, memory_order_acquire)) {
    *out = q;
    return HSAD_OK;
  }
  if (atomic_load_explicit(&dev->lost, memory_order_acquire)) {
    pthread_mutex_lock(&dev->lock);
    hsad_status_t s = atomic_load_explicit(&dev->lost, memory_order_relaxed) ? nv_device_recover(dev)
                                                                             : HSAD_OK;
    pthread_mutex_unlock(&dev->lock);
    if (s) return s;
  }
  nv_queue_t *made;
  hsad_status_t s = nv_queue_make(dev, NULL, true, &made);
  if (s) return s;
  pthread_mutex_lock(&dev->lock);
  if (dev->copyq && !atomic_load_explicit(&dev->copyq->error, memory_order_acquire)) {
    q = dev->copyq;
  } else {
    dev->copyq = made;
    q = made;
    made = NULL;
  }
  pthread_mutex_unlock(&dev->lock);
  if (made) nv_queue_free(made);
  *out = q;
  return HSAD_OK;
}

/* The copy queue's waiters spin (as cuStreamSynchronize does under the default scheduling)
 * until the copies enqueued should be done at NV_COPY_BYTES_PER_NS, then sleep: on the H200
 * a sleeping wait overslept a 64 MiB copy by 40% (39 against 54.7 GB/s). */
#define NV_COPY_BYTES_PER_NS 50 /* 50 GB/s: PCIe 5 x16 moved 54.7 GB/s on the H200 */
static void nv_copy_expect(nv_queue_t *q, size_t size) {
  uint64_t now = hsad_now_ns(), end = atomic_load_explicit(&q->spin_until_ns, memory_order_relaxed);
  if (end < now) end = now;
  atomic_store_explicit(&q->spin_until_ns, end + size / NV_COPY_BYTES_PER_NS, memory_order_relaxed);
}

/* ---- pageable host sides ----------------------------------------------------------------- */

#define NV_H2D_STAGE_MAX ((size_t)64 << 10)
#define NV_D2H_STAGE_MAX ((size_t)1 << 20)
#define NV_H2D_PIN_MIN ((size_t)64 << 20)
#define NV_STAGE_CHUNK ((size_t)256 << 10)
#define NV_STAGE_BUFFERS 3u

/* 0: pageable host memory (the driver knows nothing of it), else CU_MEMORYTYPE_HOST / DEVICE */
static unsigned nv_mem_type(const void *p) {
  unsigned t = 0;
  if (nv_cu.pointer_get_attribute(&t, NV_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                  (nv_deviceptr_t)(uintptr_t)p) != NV_SUCCESS)
    return 0;
  return t;
}

static hsad_copy_strategy_t nv_strategy(const hsad_copy_options_t *o, bool h2d, size_t size) {
  if (o && o->force) return (hsad_copy_strategy_t)o->force;
  size_t stage = o && o->staging_max ? o->staging_max : h2d ? NV_H2D_STAGE_MAX : NV_D2H_STAGE_MAX;
  size_t pin = o && o->pin_threshold ? o->pin_threshold : h2d ? NV_H2D_PIN_MIN : SIZE_MAX;
  if (size <= stage) return HSAD_COPY_STAGED;
  if (size >= pin) return HSAD_COPY_PINNED;
  return HSAD_COPY_DIRECT;
}

/* One piece on the copy stream: cuMemcpyAsync, then the next epoch (*c). */
static hsad_status_t nv_copy_piece(nv_queue_t *q, void *dst, const void *src, size_t n,
                                   hsad_completion_t *c) {
  hsad_status_t s = nv_queue_seal_fast(q);
  if (s) return s;
  nv_result_t r = nv_cu.memcpy_async((nv_deviceptr_t)(uintptr_t)dst,
                                     (nv_deviceptr_t)(uintptr_t)src, n, q->stream);
  if (r != NV_SUCCESS)
    return nv_fail(q->dev, r, "hsad_memcpy_async: cuMemcpyAsync(%p <- %p, %zu bytes) on device %u",
                   dst, src, n, q->dev->info.index);
  atomic_store_explicit(&q->since_epoch, 1, memory_order_relaxed);
  nv_copy_expect(q, n);
  return nv_queue_epoch(q, c);
}

/* Through pool blocks, `nbuf` chunks in flight; returns when every byte is at dst. */
static hsad_status_t nv_copy_staged(nv_dev_t *dev, nv_queue_t *q, uint8_t *dst, const uint8_t *src,
                                    size_t size, bool h2d, const hsad_copy_options_t *o,
                                    hsad_completion_t *out) {
  size_t chunk = o && o->chunk_size ? o->chunk_size : NV_STAGE_CHUNK;
  uint32_t nbuf = o && o->chunk_buffers ? o->chunk_buffers : NV_STAGE_BUFFERS;
  if (nbuf > HSAD_COPY_MAX_BUFFERS) nbuf = HSAD_COPY_MAX_BUFFERS;
  if (chunk > size) chunk = size;
  size_t nch = (size + chunk - 1) / chunk;
  if (nbuf > nch) nbuf = (uint32_t)nch;
  struct hsad_host_pool *pool;
  hsad_status_t s = nv_host_pool_get(dev->pub, dev, &pool);
  uint8_t *blk[HSAD_COPY_MAX_BUFFERS] = {0};
  hsad_completion_t done[HSAD_COPY_MAX_BUFFERS] = {{0}};
  for (uint32_t i = 0; !s && i < nbuf; i++) s = nv_host_pool_alloc(pool, chunk, (void **)&blk[i]);
  size_t issued = 0, landed = 0; /* chunks enqueued; chunks copied out (device -> host) */
  if (h2d) {
    for (; !s && issued < nch; issued++) {
      size_t off = issued * chunk, n = size - off < chunk ? size - off : chunk;
      uint32_t k = (uint32_t)(issued % nbuf);
      if (issued >= nbuf) s = nv_completion_wait(&done[k], HSAD_DEADLINE_NEVER);
      if (!s) memcpy(blk[k], src + off, n);
      if (!s) s = nv_copy_piece(q, dst + off, blk[k], n, &done[k]);
    }
  } else {
    for (; !s && landed < nch; landed++) {
      for (; !s && issued < nch && issued < landed + nbuf; issued++) {
        size_t off = issued * chunk, n = size - off < chunk ? size - off : chunk;
        s = nv_copy_piece(q, blk[issued % nbuf], src + off, n, &done[issued % nbuf]);
      }
      if (s) break;
      size_t off = landed * chunk, n = size - off < chunk ? size - off : chunk;
      uint32_t k = (uint32_t)(landed % nbuf);
      if (!(s = nv_completion_wait(&done[k], HSAD_DEADLINE_NEVER))) memcpy(dst + off, blk[k], n);
    }
  }
  /* blocks go back once nothing in flight reads or writes them */
  for (uint32_t i = 0; i < nbuf; i++)
    if (done[i].queue) (void)nv_completion_wait(&done[i], HSAD_DEADLINE_NEVER);
  for (uint32_t i = 0; i < nbuf; i++)
    if (blk[i]) (void)nv_host_pool_free(pool, blk[i]);
  if (s) return s;
  return nv_queue_flush((hsad_queue_t *)q, HSAD_DEADLINE_NEVER, out);
}

/* The host range pinned in place (page-rounded) for the copy; false: the driver refused it. */
static bool nv_copy_pinned(nv_queue_t *q, void *dst, const void *src, size_t size,
                           hsad_completion_t *out, hsad_status_t *st) {
  uintptr_t host = (uintptr_t)(nv_mem_type(src) ? dst : src);
  uintptr_t base = host & ~(uintptr_t)4095, end = (host + size + 4095) & ~(uintptr_t)4095;
  if (nv_cu.mem_host_register((void *)base, end - base, NV_MEMHOSTREGISTER_PORTABLE) != NV_SUCCESS)
    return false;
  *st = nv_copy_piece(q, dst, src, size, out);
  if (!*st) *st = nv_completion_wait(out, HSAD_DEADLINE_NEVER);
  nv_cu.mem_host_unregister((void *)base);
  return true;
}

hsad_status_t nv_memcpy_async(hsad_device_t *device, void *impl, void *dst, const void *src,
                              size_t size, const hsad_completion_t *deps, uint32_t dep_count,
                              const hsad_copy_options_t *options, uint64_t deadline_ns,
                              hsad_completion_t *out_completion) {
  (void)device;
  nv_dev_t *dev = impl;
  /* one cause per message, worded as memory/copy_async.c's */
  static const char what[] = "hsad_memcpy_async";
  if (!out_completion)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: out_completion is NULL", what);
  if (size && (!dst || !src))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: %s is NULL", what, !dst ? "dst" : "src");
  nv_queue_t *q;
  hsad_status_t s = nv_copy_queue(dev, &q);
  if (s) return s;
  if ((s = nv_ctx_enter(dev)) != HSAD_OK) return s;
  if ((s = nv_queue_wait_deps(q, deps, dep_count, deadline_ns, "hsad_memcpy_async")) != HSAD_OK)
    return s;
  if (!size) return nv_queue_epoch(q, out_completion);
  if (options && options->force > HSAD_COPY_PINNED)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_memcpy_async: options->force %u is not an "
                     "hsad_copy_strategy_t (0..%d)", options->force, HSAD_COPY_PINNED);
  unsigned ts = nv_mem_type(src), td = nv_mem_type(dst);
  bool h2d = !ts && td == NV_MEMORYTYPE_DEVICE, d2h = !td && ts == NV_MEMORYTYPE_DEVICE;
  hsad_copy_strategy_t how = h2d || d2h ? nv_strategy(options, h2d, size) : HSAD_COPY_DIRECT;
  if (how == HSAD_COPY_STAGED || how == HSAD_COPY_PIPELINED)
    return nv_copy_staged(dev, q, dst, src, size, h2d, options, out_completion);
  if (how == HSAD_COPY_PINNED && nv_copy_pinned(q, dst, src, size, out_completion, &s)) return s;
  return nv_copy_piece(q, dst, src, size, out_completion);
}

void nv_memory_close(void) {
  nv_host_pools_close();
  pthread_mutex_lock(&nv_mem_lock);
  nv_alloc_t *a = nv_allocs;
  nv_allocs = NULL;
  pthread_mutex_unlock(&nv_mem_lock);
  while (a) {
    nv_alloc_t *next = a->next;
    nv_release(a);
    a = next;
  }
}
