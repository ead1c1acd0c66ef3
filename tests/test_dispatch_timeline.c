/* test_dispatch_timeline.c - the completion timeline (hsad_queue.h, "Timeline"): kernarg blocks
 * of running kernels never reused, wait_idle waits for completion (not the read index), the
 * cross-queue barrier-value packet's bytes, completion interop values. Expected values are
 * computed here from the documented rules (AQL/AMD packet layouts, EPOCH_BASE = 2^62), not
 * taken from the library. */
#include "tests/test_dispatch_util.h"
#include "tests/test_dispatch_exact.h"

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
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *ks, *kf;
  hsad_program_t *ps = th_load(&e, "saxpy", 5, "saxpy", &ks);
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &kf);
  hsad_queue_t *q = th_queue(&e, 64);
  enum { N = 64, FILLS = 70, W = 16 };
  float *x = th_alloc(&e, N * 4), *y = th_alloc(&e, N * 4);
  for (uint32_t i = 0; i < N; i++) {
    x[i] = (float)i;
    y[i] = 1.0f;
  }
  float a = 3.0f;
  uint32_t n = N;
  hsad_karg_t sa[4] = {HSAD_KARG_VAL(a), HSAD_KARG_PTR(x), HSAD_KARG_PTR(y), HSAD_KARG_VAL(n)};
  hsad_launch_t ls = {.dims = 1, .grid = {N}, .block = {64}, .args = sa, .arg_count = 4};
  TH_OK(hsad_kernel_dispatch(q, ks, &ls, th_in(TH_SEC), NULL, NULL));
  uint32_t *buf = th_alloc(&e, FILLS * W * 4);
  memset(buf, 0, FILLS * W * 4);
  for (uint32_t i = 0; i < FILLS; i++) {
    uint32_t v = 1000 + i, w = W;
    hsad_karg_t fa[3] = {HSAD_KARG_PTR(buf + i * W), HSAD_KARG_VAL(v), HSAD_KARG_VAL(w)};
    hsad_launch_t lf = {.dims = 1, .grid = {W}, .block = {W}, .args = fa, .arg_count = 3};
    TH_OK(hsad_kernel_dispatch(q, kf, &lf, th_in(10 * TH_SEC), NULL, NULL));
  }
  TH_OK(hsad_queue_wait_idle(q, th_in(20 * TH_SEC)));
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
  TH_OK(hsad_runtime_close(e.rt));
}

/* wait_idle returns only after a 200 ms fire-and-forget kernel completed: its side effect is
 * visible when it returns (the read index passes the kernel at launch). */
Test(timeline, wait_idle_waits_for_a_running_kernel, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "200000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "fill", 1);
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "fill", 5, "fill", &k, &q);
  uint32_t n = 32, v = 0xC0FFEE;
  uint32_t *buf = th_alloc(&e, n * 4);
  memset(buf, 0, n * 4);
  hsad_karg_t fa[3] = {HSAD_KARG_PTR(buf), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {n}, .block = {32}, .args = fa, .arg_count = 3};
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), NULL, NULL));
  TH_OK(hsad_queue_wait_idle(q, th_in(10 * TH_SEC)));
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(buf[i], 0xC0FFEE, "buf[%u] = %#x", i, buf[i]);
  hsad_buffer_free(buf);
  th_finish(&e, q, p);
}

/* The cross-queue barrier: queue B's packet 0 is an AMD barrier-value packet waiting on queue
 * A's epoch signal. Bytes checked from the layouts: header type VENDOR_SPECIFIC (0) with the
 * BARRIER bit (bit 8), AmdFormat BARRIER_VALUE (2) in bits 16..23; signal @8, value @16 =
 * 2^62 - k + 1, mask @24 = -1, cond @32 = LT (2), completion signal @56. */
Test(timeline, barrier_value_packet_bytes, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "200000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "fill", 1);
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *kf;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &kf);
  hsad_queue_t *qa = th_queue(&e, 64), *qb = th_queue(&e, 64);
  uint32_t n = 16, v = 9;
  uint32_t *buf = th_alloc(&e, n * 4);
  hsad_karg_t fa[3] = {HSAD_KARG_PTR(buf), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
  hsad_launch_t lf = {.dims = 1, .grid = {n}, .block = {16}, .args = fa, .arg_count = 3};
  /* three epochs on A so k = 3 (distinct from 1, catching off-by-one in either direction) */
  hsad_completion_t ca[3], cb;
  for (int i = 0; i < 3; i++) TH_OK(hsad_kernel_dispatch(qa, kf, &lf, th_in(TH_SEC), &ca[i], NULL));
  cr_assert_eq(ca[0].epoch, 1);
  cr_assert_eq(ca[1].epoch, 2);
  cr_assert_eq(ca[2].epoch, 3);
  cr_assert_eq(ca[2].queue, qa);
  hsa_signal_t sig;
  hsa_signal_value_t lt;
  TH_OK(hsad_completion_signal(&ca[2], &sig, &lt));
  cr_assert_eq(lt, TL_EPOCH_BASE - 3 + 1, "lt value %lld", (long long)lt);
  /* the signal is A's epoch signal: the completion signal of A's epoch packets */
  const uint8_t *ra = (const uint8_t *)hsad_queue_hsa(qa)->base_address;
  cr_assert_eq(get64(ra, 2 * 64 + 56), sig.handle);
  TH_OK(hsad_queue_barrier(qb, &ca[2], 1, th_in(TH_SEC), &cb));
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
  TH_OK(hsad_completion_signal(&cb, &bsig, &lt));
  cr_assert_eq(lt, TL_EPOCH_BASE);
  cr_assert_eq(get64(rb, 56), bsig.handle);
  TH_OK(hsad_completion_wait(&cb, th_in(10 * TH_SEC)));
  /* B's barrier completed only after A's third epoch */
  cr_assert(hsad_completion_done(&ca[2]));
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(buf[i], 9);
  hsad_buffer_free(buf);
  hsad_queue_destroy(qa);
  hsad_queue_destroy(qb);
  hsad_program_destroy(pf);
  TH_OK(hsad_runtime_close(e.rt));
}

/* A 16-element fill launch of `value` into dst. */
typedef struct tl_fill {
  uint32_t value, n;
  hsad_karg_t args[3];
  hsad_launch_t l;
} tl_fill_t;

static void tl_fill_init(tl_fill_t *f, uint32_t *dst, uint32_t value) {
  f->value = value;
  f->n = 16;
  f->args[0] = HSAD_KARG_PTR(dst);
  f->args[1] = HSAD_KARG_VAL(f->value);
  f->args[2] = HSAD_KARG_VAL(f->n);
  f->l = (hsad_launch_t){.dims = 1, .grid = {16}, .block = {16}, .args = f->args, .arg_count = 3};
}

/* wait_any / wait_all over completions of two queues, TIMEOUT from a completion wait, an idle
 * wait, wait_all and wait_any while queue A is held by a gate (a barrier-AND on a signal the
 * test owns: packet 0), with their whole messages. B's fill completes: wait_any returns index 1.
 * After the gate opens every wait succeeds and both results are exact. */
Test(timeline, wait_any_wait_all_and_timeouts, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *kf;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &kf);
  hsad_queue_t *qa = th_queue(&e, 64), *qb = th_queue(&e, 64);
  unsigned long long ida = hsad_queue_hsa(qa)->id;
  uint32_t *ba = th_alloc(&e, 64), *bb = th_alloc(&e, 64);
  tl_fill_t fa, fb;
  tl_fill_init(&fa, ba, 5);
  tl_fill_init(&fb, bb, 6);
  hsa_signal_t gate = th_gate(qa);
  hsad_completion_t c[2];
  uint64_t pid = 99;
  TH_OK(hsad_kernel_dispatch(qa, kf, &fa.l, th_in(TH_SEC), &c[0], &pid));
  cr_assert_eq(pid, 1);
  cr_assert_eq(c[0].queue, qa);
  cr_assert_eq(c[0].epoch, 1);
  cr_assert_eq(c[0].packet_id, 1);
  cr_assert_not(hsad_completion_done(&c[0]));
  TH_ERR_IS(hsad_completion_wait(&c[0], hsad_now_ns()), HSAD_ERR_TIMEOUT,
            "completion (epoch 1, packet 1) on queue %llu (device 0) not reached at the deadline "
            "(0 epochs completed)", ida);
  TH_ERR_IS(hsad_queue_wait_idle(qa, hsad_now_ns()), HSAD_ERR_TIMEOUT,
            "completion (epoch 1, packet 1) on queue %llu (device 0) not reached at the deadline "
            "(0 epochs completed)", ida);
  uint32_t idx = 99;
  TH_ERR_IS(hsad_completion_wait_any(c, 1, hsad_now_ns(), &idx), HSAD_ERR_TIMEOUT,
            "hsad_completion_wait_any: none of 1 completions reached at the deadline");
  cr_assert_eq(idx, 99);
  TH_OK(hsad_kernel_dispatch(qb, kf, &fb.l, th_in(TH_SEC), &c[1], NULL));
  TH_OK(hsad_completion_wait_any(c, 2, th_in(10 * TH_SEC), &idx));
  cr_assert_eq(idx, 1);
  for (uint32_t i = 0; i < 16; i++) cr_assert_eq(bb[i], 6, "bb[%u] = %u", i, bb[i]);
  cr_assert_not(hsad_completion_done(&c[0]));
  TH_ERR_IS(hsad_completion_wait_all(c, 2, hsad_now_ns()), HSAD_ERR_TIMEOUT,
            "completion 0 of 2: completion (epoch 1, packet 1) on queue %llu (device 0) not "
            "reached at the deadline (0 epochs completed)", ida);
  for (uint32_t i = 0; i < 16; i++) cr_assert_eq(ba[i], 0, "ba[%u] = %u before the gate", i, ba[i]);
  th_gate_open(gate);
  TH_OK(hsad_completion_wait_all(c, 2, th_in(10 * TH_SEC)));
  TH_OK(hsad_queue_wait_idle(qa, th_in(10 * TH_SEC)));
  cr_assert(hsad_completion_done(&c[0]));
  for (uint32_t i = 0; i < 16; i++) cr_assert_eq(ba[i], 5, "ba[%u] = %u", i, ba[i]);
  /* wait_any with both reached: the first index */
  idx = 99;
  TH_OK(hsad_completion_wait_any(c, 2, th_in(TH_SEC), &idx));
  cr_assert_eq(idx, 0);
  /* an empty completion is already done; count 0 for wait_any is an invalid argument; an
   * epoch never issued is refused by name */
  hsad_completion_t empty = {0};
  cr_assert(hsad_completion_done(&empty));
  TH_OK(hsad_completion_wait(&empty, hsad_now_ns()));
  TH_OK(hsad_completion_wait_all(c, 0, hsad_now_ns()));
  idx = 99;
  TH_ERR_IS(hsad_completion_wait_any(c, 0, th_in(TH_SEC), &idx), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_completion_wait_any: count 0");
  cr_assert_eq(idx, 99);
  hsad_completion_t future = {.queue = qa, .epoch = 7, .packet_id = 0};
  TH_ERR_IS(hsad_completion_wait(&future, th_in(TH_SEC)), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_completion_wait: epoch 7 was never issued on queue %llu (last epoch 1)", ida);
  TH_ERR_IS(hsad_completion_wait(NULL, th_in(TH_SEC)), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_completion_wait: NULL completion");
  th_gate_destroy(gate);
  hsad_buffer_free(ba);
  hsad_buffer_free(bb);
  hsad_queue_destroy(qa);
  hsad_queue_destroy(qb);
  hsad_program_destroy(pf);
  TH_OK(hsad_runtime_close(e.rt));
}

/* Header words computed from HSA 1.2 (2.9.1): type bits 0..7, BARRIER bit 8, acquire fence
 * scope bits 9..10, release bits 11..12 (SYSTEM = 2); a kernel dispatch's setup (dimensions)
 * in the upper 16 bits of the first word. */
#define TL_TYPE_KERNEL_DISPATCH 2u
#define TL_TYPE_BARRIER_AND 3u
#define TL_FENCES_SYSTEM ((2u << 9) | (2u << 11))

/* Completion times: UNSUPPORTED on a queue without profiling; on a profiling queue, asked
 * before the dispatch completed (held by a gate) INVALID_ARGUMENT naming the packet, after it
 * start <= end, both nonzero; a barrier's completion has none, nor a dispatch whose slot a
 * later packet reused. */
Test(timeline, completion_times_before_and_after, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *kf;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &kf);
  hsad_queue_t *qp, *qn = th_queue(&e, 64);
  TH_OK(hsad_queue_create(e.dev, &(hsad_queue_options_t){.size = 64, .profiling = true}, &qp));
  uint32_t *buf = th_alloc(&e, 64);
  tl_fill_t f;
  tl_fill_init(&f, buf, 0x5eed);
  uint64_t start = 1, end = 1;
  hsad_completion_t cn;
  TH_OK(hsad_kernel_dispatch(qn, kf, &f.l, th_in(TH_SEC), &cn, NULL));
  TH_OK(hsad_completion_wait(&cn, th_in(10 * TH_SEC)));
  TH_ERR_IS(hsad_completion_times(&cn, &start, &end), HSAD_ERR_UNSUPPORTED,
            "hsad_completion_times: the queue was created without profiling "
            "(hsad_queue_options_t.profiling)");
  hsa_signal_t gate = th_gate(qp); /* packet 0 */
  hsad_completion_t c;
  TH_OK(hsad_kernel_dispatch(qp, kf, &f.l, th_in(TH_SEC), &c, NULL));
  cr_assert_eq(c.packet_id, 1); /* the dispatch; its epoch rides on a barrier-AND at 2 */
  cr_assert_eq(((const amd_queue_t *)hsad_queue_hsa(qp))->write_dispatch_id, 3);
  TH_ERR_IS(hsad_completion_times(&c, &start, &end), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_completion_times: packet 1 has not completed");
  cr_assert_eq(start, 1);
  cr_assert_eq(end, 1);
  th_gate_open(gate);
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  TH_OK(hsad_completion_times(&c, &start, &end));
  cr_assert_neq(start, 0);
  cr_assert_neq(end, 0);
  cr_assert_leq(start, end, "start %llu end %llu", (unsigned long long)start,
                (unsigned long long)end);
  for (uint32_t i = 0; i < 16; i++) cr_assert_eq(buf[i], 0x5eed);
  hsad_completion_t cb;
  TH_OK(hsad_queue_barrier(qp, NULL, 0, th_in(TH_SEC), &cb));
  cr_assert_eq(cb.packet_id, 3);
  TH_OK(hsad_completion_wait(&cb, th_in(10 * TH_SEC)));
  TH_ERR_IS(hsad_completion_times(&cb, &start, &end), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_completion_times: packet 3 is not a kernel dispatch, or its slot was reused "
            "(times are kept for 64 packets)");
  /* 64 more dispatches (packets 4..67) reuse packet 1's slot: its times are gone */
  for (uint32_t i = 0; i < 64; i++)
    TH_OK(hsad_kernel_dispatch(qp, kf, &f.l, th_in(10 * TH_SEC), NULL, NULL));
  TH_OK(hsad_queue_wait_idle(qp, th_in(10 * TH_SEC)));
  TH_ERR_IS(hsad_completion_times(&c, &start, &end), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_completion_times: packet 1 is not a kernel dispatch, or its slot was reused "
            "(times are kept for 64 packets)");
  th_gate_destroy(gate);
  hsad_buffer_free(buf);
  hsad_queue_destroy(qp);
  hsad_queue_destroy(qn);
  hsad_program_destroy(pf);
  TH_OK(hsad_runtime_close(e.rt));
}

/* HSAD_LAUNCH_NO_BARRIER with a completion: the dispatch keeps its BARRIER bit clear and has no
 * completion signal; a barrier-AND follows it (BARRIER bit, no dep_signals) whose completion
 * signal is the queue's epoch signal. Bytes read while a gate holds the queue at packet 0. */
Test(timeline, no_barrier_completion_trailing_barrier_and, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *kf;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &kf);
  hsad_queue_t *q = th_queue(&e, 64);
  uint32_t *buf = th_alloc(&e, 64);
  tl_fill_t f;
  tl_fill_init(&f, buf, 77);
  f.l.flags = HSAD_LAUNCH_NO_BARRIER;
  hsa_signal_t gate = th_gate(q);
  hsad_completion_t c;
  uint64_t pid = 99;
  TH_OK(hsad_kernel_dispatch(q, kf, &f.l, th_in(TH_SEC), &c, &pid));
  cr_assert_eq(pid, 1);
  cr_assert_eq(c.packet_id, 1);
  cr_assert_eq(c.epoch, 1);
  const amd_queue_t *aq = (const amd_queue_t *)hsad_queue_hsa(q);
  cr_assert_eq(aq->write_dispatch_id, 3);
  hsa_signal_t sig;
  hsa_signal_value_t lt;
  TH_OK(hsad_completion_signal(&c, &sig, &lt));
  cr_assert_eq(lt, TL_EPOCH_BASE);
  const uint8_t *ring = (const uint8_t *)hsad_queue_hsa(q)->base_address;
  const uint8_t *d = ring + 64, *b = ring + 128;
  cr_assert_eq(th_get32(d, 0), TL_TYPE_KERNEL_DISPATCH | TL_FENCES_SYSTEM | (1u << 16),
               "dispatch header word %#x", th_get32(d, 0));
  cr_assert_eq(th_get64(d, 56), 0, "the dispatch carries no completion signal");
  cr_assert_eq(th_get32(b, 0), TL_TYPE_BARRIER_AND | (1u << 8) | TL_FENCES_SYSTEM,
               "barrier-AND header word %#x", th_get32(b, 0));
  for (uint32_t i = 0; i < 5; i++) cr_assert_eq(th_get64(b, 8 + 8 * i), 0, "dep_signal[%u]", i);
  cr_assert_eq(th_get64(b, 56), sig.handle, "completion signal = the epoch signal");
  cr_assert_not(hsad_completion_done(&c));
  th_gate_open(gate);
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  for (uint32_t i = 0; i < 16; i++) cr_assert_eq(buf[i], 77);
  th_gate_destroy(gate);
  hsad_buffer_free(buf);
  th_finish(&e, q, pf);
}

/* A completion stays valid after many dispatches: the first of 1000 (each with a completion,
 * 15 ring wraps of a 64-slot queue) still waits OK and reports done; epochs count 1..1000 and
 * every dispatch ran once (count_dispatch adds 1 per dispatch). */
Test(timeline, first_of_1000_completions_still_valid, .timeout = 120) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "count_dispatch", 5, "count_dispatch", &k, &q);
  uint32_t *counter = th_alloc(&e, 64), one = 1;
  hsad_karg_t a[2] = {HSAD_KARG_PTR(counter), HSAD_KARG_VAL(one)};
  hsad_launch_t l = {.dims = 1, .grid = {64}, .block = {64}, .args = a, .arg_count = 2};
  hsad_completion_t first, c;
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(10 * TH_SEC), &first, NULL));
  for (uint32_t i = 1; i < 1000; i++) {
    TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(10 * TH_SEC), &c, NULL));
    cr_assert_eq(c.epoch, i + 1);
    cr_assert_eq(c.packet_id, i);
  }
  TH_OK(hsad_completion_wait(&c, th_in(20 * TH_SEC)));
  cr_assert_eq(*counter, 1000);
  cr_assert_eq(first.epoch, 1);
  cr_assert(hsad_completion_done(&first));
  TH_OK(hsad_completion_wait(&first, th_in(TH_SEC)));
  TH_OK(hsad_completion_wait_all(&first, 1, th_in(TH_SEC)));
  hsad_buffer_free(counter);
  th_finish(&e, q, p);
}

/* hsad_queue_flush: an empty queue gives the empty completion; after fire-and-forget packets a
 * barrier-AND epoch packet (BARRIER bit, epoch signal); flushing again adds nothing and returns
 * the same completion; it is reached only after the packets before it ran. */
Test(timeline, flush_covers_fire_and_forget, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *kf;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &kf);
  hsad_queue_t *q = th_queue(&e, 64);
  const amd_queue_t *aq = (const amd_queue_t *)hsad_queue_hsa(q);
  hsad_completion_t c = {.queue = q, .epoch = 9, .packet_id = 9};
  TH_OK(hsad_queue_flush(q, th_in(TH_SEC), &c));
  cr_assert_eq(c.queue, NULL);
  cr_assert_eq(c.epoch, 0);
  cr_assert_eq(c.packet_id, 0);
  cr_assert_eq(aq->write_dispatch_id, 0);
  uint32_t *b1 = th_alloc(&e, 64), *b2 = th_alloc(&e, 64);
  tl_fill_t f1, f2;
  tl_fill_init(&f1, b1, 11);
  tl_fill_init(&f2, b2, 22);
  hsa_signal_t gate = th_gate(q); /* packet 0 */
  TH_OK(hsad_kernel_dispatch(q, kf, &f1.l, th_in(TH_SEC), NULL, NULL)); /* 1 */
  TH_OK(hsad_kernel_dispatch(q, kf, &f2.l, th_in(TH_SEC), NULL, NULL)); /* 2 */
  TH_OK(hsad_queue_flush(q, th_in(TH_SEC), &c));
  cr_assert_eq(c.queue, q);
  cr_assert_eq(c.epoch, 1);
  cr_assert_eq(c.packet_id, 3);
  cr_assert_eq(aq->write_dispatch_id, 4);
  const uint8_t *b = (const uint8_t *)hsad_queue_hsa(q)->base_address + 3 * 64;
  cr_assert_eq(th_get32(b, 0), TL_TYPE_BARRIER_AND | (1u << 8) | TL_FENCES_SYSTEM,
               "flush packet header word %#x", th_get32(b, 0));
  hsa_signal_t sig;
  hsa_signal_value_t lt;
  TH_OK(hsad_completion_signal(&c, &sig, &lt));
  cr_assert_eq(th_get64(b, 56), sig.handle);
  hsad_completion_t again;
  TH_OK(hsad_queue_flush(q, th_in(TH_SEC), &again));
  cr_assert_eq(again.queue, q);
  cr_assert_eq(again.epoch, 1);
  cr_assert_eq(again.packet_id, 3);
  cr_assert_eq(aq->write_dispatch_id, 4);
  cr_assert_not(hsad_completion_done(&c));
  for (uint32_t i = 0; i < 16; i++) cr_assert_eq(b1[i] | b2[i], 0);
  th_gate_open(gate);
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  for (uint32_t i = 0; i < 16; i++) {
    cr_assert_eq(b1[i], 11);
    cr_assert_eq(b2[i], 22);
  }
  TH_ERR_IS(hsad_queue_flush(q, th_in(TH_SEC), NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_queue_flush: NULL out_completion");
  th_gate_destroy(gate);
  hsad_buffer_free(b1);
  hsad_buffer_free(b2);
  th_finish(&e, q, pf);
}

/* Error epochs: a fill that faults (KFD_EMU_FAULT_KERNEL=fill, a memory aperture violation)
 * between count_dispatch epochs. The epoch reached before the fault stays OK everywhere (wait,
 * wait_all, as a barrier dependency of another queue); the faulting epoch and the one behind it
 * return the queue's error with its whole message (queue id, device, ISA, ROCr's status and
 * status string), as do wait_all (naming the index), wait_any (index of the faulted one),
 * a barrier depending on it, dispatch, flush and hsad_queue_error; the kernel behind the fault
 * never ran. */
Test(timeline, error_epochs, .timeout = 60) {
  setenv("KFD_EMU_FAULT_KERNEL", "fill", 1);
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *kf, *kc;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &kf);
  hsad_program_t *pc = th_load(&e, "count_dispatch", 5, "count_dispatch", &kc);
  hsad_queue_t *q = th_queue(&e, 64), *q2 = th_queue(&e, 64);
  uint32_t *counter = th_alloc(&e, 64), *buf = th_alloc(&e, 64), one = 1;
  hsad_karg_t ca[2] = {HSAD_KARG_PTR(counter), HSAD_KARG_VAL(one)};
  hsad_launch_t lc = {.dims = 1, .grid = {64}, .block = {64}, .args = ca, .arg_count = 2};
  tl_fill_t f;
  tl_fill_init(&f, buf, 3);
  hsad_completion_t c0, cf, c2;
  TH_OK(hsad_kernel_dispatch(q, kc, &lc, th_in(TH_SEC), &c0, NULL));
  TH_OK(hsad_completion_wait(&c0, th_in(10 * TH_SEC)));
  TH_OK(hsad_kernel_dispatch(q, kf, &f.l, th_in(TH_SEC), &cf, NULL));
  TH_OK(hsad_kernel_dispatch(q, kc, &lc, th_in(TH_SEC), &c2, NULL));
  cr_assert_eq(cf.epoch, 2);
  cr_assert_eq(c2.epoch, 3);
  char msg[512];
  th_fault_msg(q, msg, sizeof msg);
  TH_ERR_IS(hsad_completion_wait(&c2, th_in(10 * TH_SEC)), HSAD_ERR_QUEUE_ERROR, "%s", msg);
  TH_ERR_IS(hsad_completion_wait(&cf, th_in(TH_SEC)), HSAD_ERR_QUEUE_ERROR, "%s", msg);
  cr_assert(hsad_completion_done(&cf));
  cr_assert(hsad_completion_done(&c2));
  TH_OK(hsad_completion_wait(&c0, th_in(TH_SEC)));
  hsad_completion_t pair[2] = {c0, c2};
  TH_OK(hsad_completion_wait_all(pair, 1, th_in(TH_SEC)));
  TH_ERR_IS(hsad_completion_wait_all(pair, 2, th_in(TH_SEC)), HSAD_ERR_QUEUE_ERROR,
            "completion 1 of 2: %s", msg);
  hsad_completion_t rev[2] = {c2, c0};
  uint32_t idx = 99;
  TH_ERR_IS(hsad_completion_wait_any(rev, 2, th_in(TH_SEC), &idx), HSAD_ERR_QUEUE_ERROR, "%s",
            msg);
  cr_assert_eq(idx, 0);
  hsad_completion_t cb;
  TH_OK(hsad_queue_barrier(q2, &c0, 1, th_in(TH_SEC), &cb));
  TH_OK(hsad_completion_wait(&cb, th_in(10 * TH_SEC)));
  TH_ERR_IS(hsad_queue_barrier(q2, &c2, 1, th_in(TH_SEC), &cb), HSAD_ERR_QUEUE_ERROR, "%s", msg);
  TH_ERR_IS(hsad_kernel_dispatch(q, kc, &lc, th_in(TH_SEC), NULL, NULL), HSAD_ERR_QUEUE_ERROR,
            "%s", msg);
  hsad_completion_t cfl;
  TH_ERR_IS(hsad_queue_flush(q, th_in(TH_SEC), &cfl), HSAD_ERR_QUEUE_ERROR, "%s", msg);
  TH_ERR_IS(hsad_queue_error(q), HSAD_ERR_QUEUE_ERROR, "%s", msg);
  TH_OK(hsad_queue_error(q2));
  cr_assert_eq(*counter, 1);
  hsad_buffer_free(counter);
  hsad_buffer_free(buf);
  hsad_queue_destroy(q);
  hsad_queue_destroy(q2);
  hsad_program_destroy(pc);
  hsad_program_destroy(pf);
  TH_OK(hsad_runtime_close(e.rt));
}

/* A device-side waiter on a queue that faults is released (hsad_queue.h, "Errors of the
 * queue"): queue B's barrier waits on A's faulting epoch (A held by a gate when the barrier is
 * made); when the gate opens A faults, B's barrier-value packet is satisfied by the epoch
 * signal's release to 0, B goes on (its count_dispatch runs: counter 1, B has no error) while
 * A's completion reports the fault. */
Test(timeline, fault_releases_device_waiters_on_other_queues, .timeout = 60) {
  setenv("KFD_EMU_FAULT_KERNEL", "fill", 1);
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *kf, *kc;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &kf);
  hsad_program_t *pc = th_load(&e, "count_dispatch", 5, "count_dispatch", &kc);
  hsad_queue_t *qa = th_queue(&e, 64), *qb = th_queue(&e, 64);
  uint32_t *counter = th_alloc(&e, 64), *buf = th_alloc(&e, 64), one = 1;
  hsad_karg_t ca[2] = {HSAD_KARG_PTR(counter), HSAD_KARG_VAL(one)};
  hsad_launch_t lc = {.dims = 1, .grid = {64}, .block = {64}, .args = ca, .arg_count = 2};
  tl_fill_t f;
  tl_fill_init(&f, buf, 3);
  hsa_signal_t gate = th_gate(qa);
  hsad_completion_t cf, cb, cc;
  TH_OK(hsad_kernel_dispatch(qa, kf, &f.l, th_in(TH_SEC), &cf, NULL));
  TH_OK(hsad_queue_barrier(qb, &cf, 1, th_in(TH_SEC), &cb));
  TH_OK(hsad_kernel_dispatch(qb, kc, &lc, th_in(TH_SEC), &cc, NULL));
  cr_assert_eq(cb.packet_id, 0);
  cr_assert_eq(cc.packet_id, 1);
  TH_ERR_IS(hsad_completion_wait(&cc, hsad_now_ns()), HSAD_ERR_TIMEOUT,
            "completion (epoch 2, packet 1) on queue %llu (device 0) not reached at the deadline "
            "(0 epochs completed)", (unsigned long long)hsad_queue_hsa(qb)->id);
  cr_assert_eq(*counter, 0);
  th_gate_open(gate);
  char msg[512];
  th_fault_msg(qa, msg, sizeof msg);
  TH_ERR_IS(hsad_completion_wait(&cf, th_in(10 * TH_SEC)), HSAD_ERR_QUEUE_ERROR, "%s", msg);
  TH_OK(hsad_completion_wait(&cc, th_in(10 * TH_SEC)));
  TH_OK(hsad_completion_wait(&cb, th_in(TH_SEC)));
  cr_assert_eq(*counter, 1);
  TH_OK(hsad_queue_error(qb));
  th_gate_destroy(gate);
  hsad_buffer_free(counter);
  hsad_buffer_free(buf);
  hsad_queue_destroy(qa);
  hsad_queue_destroy(qb);
  hsad_program_destroy(pc);
  hsad_program_destroy(pf);
  TH_OK(hsad_runtime_close(e.rt));
}
