/* test_dispatch_timeline.c - the completion timeline (hsad_queue.h, "Timeline"): kernarg blocks
 * of running kernels never reused, wait_idle waits for completion (not the read index), the
 * cross-queue barrier-value packet's bytes, completion interop values. Expected values are
 * computed here from the documented rules (AQL/AMD packet layouts, EPOCH_BASE = 2^62), not
 * taken from the library. */
#include "tests/test_dispatch_util.h"

#include <stdlib.h>

/* 2^62, the documented initial value of a queue's epoch signal (not HSAD_EPOCH_BASE). */
#define TL_EPOCH_BASE 4611686018427387904ll

static uint64_t get64(const uint8_t *p, uint32_t o) {
  uint64_t v;
  memcpy(&v, p + o, 8);
  return v;
}
static uint32_t get32(const uint8_t *p, uint32_t o) {
  uint32_t v;
  memcpy(&v, p + o, 4);
  return v;
}

/* A 200 ms saxpy occupies the 64-slot queue's first slot while 70 fire-and-forget fills (each
 * with its own value and destination) wrap the ring past it: every fill's result proves it
 * read its own kernarg block, and the long kernel's result proves its block was not reused
 * while it ran (KFD_EMU_READ_INDEX=launch moves the read index at launch, in make test). */
Test(timeline, kernarg_blocks_not_reused_while_running, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "200000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "saxpy", 1);
  dq_env_t e;
  dq_open(&e);
  const hsad_device_kernel_t *ks, *kf;
  hsad_program_t *ps = dq_load(&e, "saxpy", 5, "saxpy", &ks);
  hsad_program_t *pf = dq_load(&e, "fill", 5, "fill", &kf);
  hsad_queue_t *q = dq_queue(&e, 64);
  enum { N = 64, FILLS = 70, W = 16 };
  float *x = dq_alloc(&e, N * 4), *y = dq_alloc(&e, N * 4);
  for (uint32_t i = 0; i < N; i++) {
    x[i] = (float)i;
    y[i] = 1.0f;
  }
  float a = 3.0f;
  uint32_t n = N;
  hsad_karg_t sa[4] = {HSAD_KARG_VAL(a), HSAD_KARG_PTR(x), HSAD_KARG_PTR(y), HSAD_KARG_VAL(n)};
  hsad_launch_t ls = {.dims = 1, .grid = {N}, .block = {64}, .args = sa, .arg_count = 4};
  DQ_OK(hsad_kernel_dispatch(q, ks, &ls, dq_in(DQ_SEC), NULL, NULL));
  uint32_t *buf = dq_alloc(&e, FILLS * W * 4);
  memset(buf, 0, FILLS * W * 4);
  for (uint32_t i = 0; i < FILLS; i++) {
    uint32_t v = 1000 + i, w = W;
    hsad_karg_t fa[3] = {HSAD_KARG_PTR(buf + i * W), HSAD_KARG_VAL(v), HSAD_KARG_VAL(w)};
    hsad_launch_t lf = {.dims = 1, .grid = {W}, .block = {W}, .args = fa, .arg_count = 3};
    DQ_OK(hsad_kernel_dispatch(q, kf, &lf, dq_in(10 * DQ_SEC), NULL, NULL));
  }
  DQ_OK(hsad_queue_wait_idle(q, dq_in(20 * DQ_SEC)));
  for (uint32_t i = 0; i < N; i++)
    cr_assert_eq(y[i], 3.0f * (float)i + 1.0f, "y[%u] = %g", i, (double)y[i]);
  for (uint32_t i = 0; i < FILLS; i++)
    for (uint32_t j = 0; j < W; j++)
      cr_assert_eq(buf[i * W + j], 1000 + i, "fill %u element %u = %u", i, j, buf[i * W + j]);
  hsad_buffer_free(x);
  hsad_buffer_free(y);
  hsad_buffer_free(buf);
  hsad_queue_destroy(q);
  hsad_program_destroy(ps);
  hsad_program_destroy(pf);
  DQ_OK(hsad_runtime_close(e.rt));
}

/* wait_idle returns only after a 200 ms fire-and-forget kernel completed: its side effect is
 * visible when it returns (the read index passes the kernel at launch). */
Test(timeline, wait_idle_waits_for_a_running_kernel, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "200000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "fill", 1);
  dq_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = dq_start(&e, "fill", 5, "fill", &k, &q);
  uint32_t n = 32, v = 0xC0FFEE;
  uint32_t *buf = dq_alloc(&e, n * 4);
  memset(buf, 0, n * 4);
  hsad_karg_t fa[3] = {HSAD_KARG_PTR(buf), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {n}, .block = {32}, .args = fa, .arg_count = 3};
  DQ_OK(hsad_kernel_dispatch(q, k, &l, dq_in(DQ_SEC), NULL, NULL));
  DQ_OK(hsad_queue_wait_idle(q, dq_in(10 * DQ_SEC)));
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(buf[i], 0xC0FFEE, "buf[%u] = %#x", i, buf[i]);
  hsad_buffer_free(buf);
  dq_finish(&e, q, p);
}

/* The cross-queue barrier: queue B's packet 0 is an AMD barrier-value packet waiting on queue
 * A's epoch signal. Bytes checked from the layouts: header type VENDOR_SPECIFIC (0) with the
 * BARRIER bit (bit 8), AmdFormat BARRIER_VALUE (2) in bits 16..23; signal @8, value @16 =
 * 2^62 - k + 1, mask @24 = -1, cond @32 = LT (2), completion signal @56. */
Test(timeline, barrier_value_packet_bytes, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "200000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "fill", 1);
  dq_env_t e;
  dq_open(&e);
  const hsad_device_kernel_t *kf;
  hsad_program_t *pf = dq_load(&e, "fill", 5, "fill", &kf);
  hsad_queue_t *qa = dq_queue(&e, 64), *qb = dq_queue(&e, 64);
  uint32_t n = 16, v = 9;
  uint32_t *buf = dq_alloc(&e, n * 4);
  hsad_karg_t fa[3] = {HSAD_KARG_PTR(buf), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
  hsad_launch_t lf = {.dims = 1, .grid = {n}, .block = {16}, .args = fa, .arg_count = 3};
  /* three epochs on A so k = 3 (distinct from 1, catching off-by-one in either direction) */
  hsad_completion_t ca[3], cb;
  for (int i = 0; i < 3; i++) DQ_OK(hsad_kernel_dispatch(qa, kf, &lf, dq_in(DQ_SEC), &ca[i], NULL));
  cr_assert_eq(ca[0].epoch, 1);
  cr_assert_eq(ca[1].epoch, 2);
  cr_assert_eq(ca[2].epoch, 3);
  cr_assert_eq(ca[2].queue, qa);
  hsa_signal_t sig;
  hsa_signal_value_t lt;
  DQ_OK(hsad_completion_signal(&ca[2], &sig, &lt));
  cr_assert_eq(lt, TL_EPOCH_BASE - 3 + 1, "lt value %lld", (long long)lt);
  /* the signal is A's epoch signal: the completion signal of A's epoch packets */
  const uint8_t *ra = (const uint8_t *)hsad_queue_hsa(qa)->base_address;
  cr_assert_eq(get64(ra, 2 * 64 + 56), sig.handle);
  DQ_OK(hsad_queue_barrier(qb, &ca[2], 1, dq_in(DQ_SEC), &cb));
  cr_assert_eq(cb.queue, qb);
  cr_assert_eq(cb.epoch, 1);
  cr_assert_eq(cb.packet_id, 0);
  const uint8_t *rb = (const uint8_t *)hsad_queue_hsa(qb)->base_address;
  /* A's first fill still runs (200 ms each): B's CP waits at packet 0, header still there */
  uint32_t hdr = get32(rb, 0);
  cr_assert_eq(hdr & 0xff, 0, "header %#x: type VENDOR_SPECIFIC", hdr);
  cr_assert_eq((hdr >> 8) & 1, 1, "header %#x: BARRIER bit", hdr);
  cr_assert_eq(hdr >> 16, 2, "header %#x: AmdFormat BARRIER_VALUE", hdr);
  cr_assert_eq(get64(rb, 8), sig.handle);
  cr_assert_eq((int64_t)get64(rb, 16), TL_EPOCH_BASE - 2);
  cr_assert_eq((int64_t)get64(rb, 24), -1ll);
  cr_assert_eq(get32(rb, 32), 2);
  hsa_signal_t bsig;
  DQ_OK(hsad_completion_signal(&cb, &bsig, &lt));
  cr_assert_eq(lt, TL_EPOCH_BASE);
  cr_assert_eq(get64(rb, 56), bsig.handle);
  DQ_OK(hsad_completion_wait(&cb, dq_in(10 * DQ_SEC)));
  /* B's barrier completed only after A's third epoch */
  cr_assert(hsad_completion_done(&ca[2]));
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(buf[i], 9);
  hsad_buffer_free(buf);
  hsad_queue_destroy(qa);
  hsad_queue_destroy(qb);
  hsad_program_destroy(pf);
  DQ_OK(hsad_runtime_close(e.rt));
}
