/* bench_paths.c - the textbook ROCr sequence and queue helpers shared by the suites. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "hsa-dispatch/hsad_rocr.h"
#include "tools/hsad/bench_paths.h"

const hsad_launch_t bench_launch = {.dims = 1, .grid = {1}, .block = {1}};

__attribute__((noinline)) void bench_rocr_submit(bench_rocr_q_t *c) {
  hsa_queue_t *q = c->q;
  uint64_t id = hsad_rocr.hsa_queue_add_write_index_screlease(q, 1);
  while (id - hsad_rocr.hsa_queue_load_read_index_scacquire(q) >= q->size) {
  }
  hsa_kernel_dispatch_packet_t *p =
      (hsa_kernel_dispatch_packet_t *)q->base_address + (id & (q->size - 1));
  p->workgroup_size_x = 1;
  p->workgroup_size_y = 1;
  p->workgroup_size_z = 1;
  p->reserved0 = 0;
  p->grid_size_x = 1;
  p->grid_size_y = 1;
  p->grid_size_z = 1;
  p->private_segment_size = c->priv;
  p->group_segment_size = c->group;
  p->kernel_object = c->kernel_object;
  p->kernarg_address = c->kernarg;
  p->reserved2 = 0;
  p->completion_signal = c->signal;
  uint16_t header = (HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                    (1 << HSA_PACKET_HEADER_BARRIER) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
  __atomic_store_n((uint32_t *)p, header | (1u << 16), __ATOMIC_RELEASE);
  hsad_rocr.hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)id);
}

void bench_rocr_barrier(bench_rocr_q_t *c, const hsa_signal_t deps[5], hsa_signal_t done) {
  hsa_queue_t *q = c->q;
  uint64_t id = hsad_rocr.hsa_queue_add_write_index_screlease(q, 1);
  while (id - hsad_rocr.hsa_queue_load_read_index_scacquire(q) >= q->size) {
  }
  hsa_barrier_and_packet_t *p = (hsa_barrier_and_packet_t *)q->base_address + (id & (q->size - 1));
  p->reserved0 = 0;
  p->reserved1 = 0;
  for (int i = 0; i < 5; i++) p->dep_signal[i] = deps[i];
  p->reserved2 = 0;
  p->completion_signal = done;
  uint16_t header = (HSA_PACKET_TYPE_BARRIER_AND << HSA_PACKET_HEADER_TYPE) |
                    (1 << HSA_PACKET_HEADER_BARRIER) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                    (HSA_FENCE_SCOPE_SYSTEM << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE);
  __atomic_store_n((uint32_t *)p, header, __ATOMIC_RELEASE);
  hsad_rocr.hsa_signal_store_screlease(q->doorbell_signal, (hsa_signal_value_t)id);
}

int bench_rocr_wait(bench_ctx_t *ctx, hsa_signal_t s) {
  uint64_t deadline = hsad_now_ns() + ctx->timeout_s * 1000000000ull;
  while (hsad_rocr.hsa_signal_wait_scacquire(s, HSA_SIGNAL_CONDITION_LT, 1, 10000000,
                                             HSA_WAIT_STATE_BLOCKED) >= 1)
    if (hsad_now_ns() > deadline || bench_stopped()) return -1;
  return 0;
}

uint32_t bench_queue_size(const bench_ctx_t *ctx, uint32_t n) {
  const hsad_device_info_t *di = hsad_device_info(ctx->dev);
  uint32_t qs = di->queue_min_size > 64 ? di->queue_min_size : 64;
  while (qs < n && qs < di->queue_max_size) qs *= 2;
  return qs;
}

int bench_rocr_open(bench_ctx_t *ctx, uint32_t size, bool profiling, bench_rocr_q_t *c,
                    char *note, size_t n) {
  memset(c, 0, sizeof *c);
  const hsad_device_kernel_desc_t *kd = hsad_device_kernel_desc(ctx->k);
  c->kernel_object = kd->kernel_object;
  c->group = kd->group_segment_fixed_size;
  c->priv = kd->private_segment_fixed_size;
  hsa_status_t st = hsad_rocr.hsa_queue_create(hsad_device_agent(ctx->dev), size,
                                               HSA_QUEUE_TYPE_MULTI, NULL, NULL, UINT32_MAX,
                                               UINT32_MAX, &c->q);
  if (st != HSA_STATUS_SUCCESS) {
    snprintf(note, n, "hsa_queue_create(%u packets) failed: 0x%x", size, (unsigned)st);
    return -1;
  }
  if (profiling) hsad_rocr.hsa_amd_profiling_set_profiler_enabled(c->q, 1);
  /* the kernarg segment (the empty kernel's hidden arguments) is built once, as a textbook
   * loop reuses it */
  uint32_t ksize = kd->kernarg_segment_size ? kd->kernarg_segment_size : 64;
  hsad_status_t s = hsad_buffer_alloc(ctx->dev, (ksize + 63) & ~63u, &c->kernarg);
  hsad_dispatch_dims_t dd = {.grid_size = {1, 1, 1}, .workgroup_size = {1, 1, 1}, .dims = 1};
  hsad_kernarg_runtime_t krt = {.queue_ptr = (uint64_t)(uintptr_t)c->q};
  uint32_t group = 0;
  if (!s) s = hsad_kernarg_build(kd->codeobj_kernel, NULL, 0, &dd, &krt, c->kernarg, ksize, &group);
  if (s) {
    snprintf(note, n, "%s", hsad_last_error());
    bench_rocr_close(c);
    return -1;
  }
  return 0;
}

void bench_rocr_close(bench_rocr_q_t *c) {
  if (c->q) hsad_rocr.hsa_queue_destroy(c->q);
  hsad_buffer_free(c->kernarg);
  memset(c, 0, sizeof *c);
}

int bench_rocr_drain(bench_ctx_t *ctx, bench_rocr_q_t *c) {
  uint64_t deadline = hsad_now_ns() + ctx->timeout_s * 1000000000ull;
  while (hsad_rocr.hsa_queue_load_read_index_scacquire(c->q) <
         hsad_rocr.hsa_queue_load_write_index_scacquire(c->q)) {
    if (hsad_now_ns() > deadline) return -1;
    nanosleep(&(struct timespec){0, 50000}, NULL);
  }
  return 0;
}

hsad_queue_t *bench_hsad_queue(bench_ctx_t *ctx, uint32_t size, bool profiling, char *note,
                               size_t n) {
  hsad_queue_t *q = NULL;
  hsad_status_t s = hsad_queue_create(
      ctx->dev, &(hsad_queue_options_t){.size = size, .profiling = profiling}, &q);
  if (s) {
    snprintf(note, n, "hsad_queue_create(%u packets): %s", size, hsad_last_error());
    return NULL;
  }
  return q;
}

int bench_hsad_drain(bench_ctx_t *ctx, hsad_queue_t *q, char *note, size_t n) {
  hsad_status_t s = hsad_queue_wait_idle(q, hsad_now_ns() + ctx->timeout_s * 1000000000ull);
  if (s) snprintf(note, n, "hsad_queue_wait_idle: %s", hsad_last_error());
  return s ? -1 : 0;
}

hsad_status_t bench_hsad_barrier(bench_ctx_t *ctx, hsad_queue_t *q, const bench_compl_t *deps,
                                 uint32_t n, bench_compl_t *out) {
  return hsad_queue_barrier(q, deps, n, hsad_now_ns() + ctx->timeout_s * 1000000000ull, out);
}

double bench_sys_offset_ns(void) {
  uint64_t freq = 0;
  hsad_rocr.hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &freq);
  double best = 1e18, off = 0;
  for (int i = 0; i < 16 && freq; i++) {
    uint64_t t = 0, a = hsad_now_ns();
    hsad_rocr.hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP, &t);
    uint64_t b = hsad_now_ns();
    if ((double)(b - a) < best) {
      best = (double)(b - a);
      off = (double)t * (1e9 / (double)freq) - (double)(a + b) / 2;
    }
  }
  return off;
}
