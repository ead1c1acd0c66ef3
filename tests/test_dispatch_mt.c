/* test_dispatch_mt.c - many producers on one small queue, a full ring, and queue faults. */
#include <hsa/amd_hsa_queue.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "tests/test_dispatch_util.h"

typedef struct producer {
  hsad_queue_t *q;
  const hsad_device_kernel_t *k;
  uint32_t *counter;
  uint32_t count;
  hsad_status_t status;
  char msg[256];
} producer_t;

static void *produce(void *arg) {
  producer_t *p = arg;
  uint32_t one = 1;
  hsad_karg_t args[2] = {HSAD_KARG_PTR(p->counter), HSAD_KARG_VAL(one)};
  hsad_launch_t l = {.dims = 1, .grid = {1}, .block = {1}, .args = args, .arg_count = 2,
                     .flags = HSAD_LAUNCH_NO_BARRIER};
  uint64_t deadline = th_in(120 * TH_SEC);
  for (uint32_t i = 0; i < p->count; i++) {
    p->status = hsad_kernel_dispatch(p->q, p->k, &l, deadline, NULL, NULL);
    if (p->status) {
      snprintf(p->msg, sizeof p->msg, "dispatch %u: %s", i, hsad_last_error());
      break;
    }
  }
  return NULL;
}

/* The fill and count_dispatch kernels with their buffers and 1-dimensional launches:
 * fill(buf, v = 9, n = 4) over 4 work-items, count_dispatch(counter, one = 1) on 1 work-item. */
typedef struct mt_kit {
  const hsad_device_kernel_t *kf, *kc;
  hsad_program_t *pf, *pc;
  uint32_t *buf, *counter, n, v, one;
  hsad_karg_t fa[3], ca[2];
  hsad_launch_t lf, lc;
} mt_kit_t;

/* Opens the runtime and loads fill and count_dispatch (v5). */
static void mt_load(th_env_t *e, mt_kit_t *m) {
  th_open(e);
  m->pf = th_load(e, "fill", 5, "fill", &m->kf);
  m->pc = th_load(e, "count_dispatch", 5, "count_dispatch", &m->kc);
}

/* Allocates buf (16 bytes) and counter (4 bytes) and builds both launches. */
static void mt_buffers(th_env_t *e, mt_kit_t *m) {
  m->n = 4;
  m->v = 9;
  m->one = 1;
  m->buf = th_alloc(e, 16);
  m->counter = th_alloc(e, 4);
  m->fa[0] = HSAD_KARG_PTR(m->buf);
  m->fa[1] = HSAD_KARG_VAL(m->v);
  m->fa[2] = HSAD_KARG_VAL(m->n);
  m->lf = (hsad_launch_t){.dims = 1, .grid = {4}, .block = {4}, .args = m->fa, .arg_count = 3};
  m->ca[0] = HSAD_KARG_PTR(m->counter);
  m->ca[1] = HSAD_KARG_VAL(m->one);
  m->lc = (hsad_launch_t){.dims = 1, .grid = {1}, .block = {1}, .args = m->ca, .arg_count = 2};
}

/* Frees the buffers, destroys q (when not NULL) and both programs, closes the runtime. */
static void mt_close(th_env_t *e, mt_kit_t *m, hsad_queue_t *q) {
  hsad_buffer_free(m->buf);
  hsad_buffer_free(m->counter);
  if (q) hsad_queue_destroy(q);
  hsad_program_destroy(m->pf);
  hsad_program_destroy(m->pc);
  TH_OK(hsad_runtime_close(e->rt));
}

/* 4 threads x 100,000 fire-and-forget dispatches of a counting kernel into one 64-slot queue:
 * the count is exact and every reserved slot was consumed (write index = read index; the
 * write index counts the 400,000 dispatches plus the barrier-AND checkpoints producers added
 * when the ring was full of packets no epoch covered). */
Test(dispatch_mt, four_producers_one_64_slot_queue, .timeout = 240) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *prog = th_start(&e, "count_dispatch", 5, "count_dispatch", &k, &q);
  uint32_t *counter = th_alloc(&e, 4);
  uint32_t per = 100000;
  const char *env = getenv("HSAD_TEST_MT_PER_THREAD"); /* smaller runs under TSan */
  if (env) per = (uint32_t)strtoul(env, NULL, 10);
  producer_t p[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    p[i] = (producer_t){.q = q, .k = k, .counter = counter, .count = per};
    cr_assert_eq(pthread_create(&t[i], NULL, produce, &p[i]), 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 4; i++) cr_assert_eq(p[i].status, HSAD_OK, "producer %d: %s", i, p[i].msg);
  TH_OK(hsad_queue_wait_idle(q, th_in(60 * TH_SEC)));
  const amd_queue_t *aq = (const amd_queue_t *)hsad_queue_hsa(q);
  cr_assert_geq(aq->write_dispatch_id, 4ull * per);
  cr_assert_eq(aq->read_dispatch_id, aq->write_dispatch_id);
  cr_assert_eq(__atomic_load_n(counter, __ATOMIC_ACQUIRE), 4 * per);
  hsad_buffer_free(counter);
  th_finish(&e, q, prog);
}

/* A full ring with a short deadline gives HSAD_ERR_TIMEOUT, reserves nothing, and the queue
 * works after. The first packet (fill) takes 300 ms; 63 counting packets wait behind it. */
Test(dispatch_mt, ring_full_timeout_then_works, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "300000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "fill", 1);
  th_env_t e;
  mt_kit_t m;
  mt_load(&e, &m);
  hsad_queue_t *q = th_queue(&e, 64);
  mt_buffers(&e, &m);
  TH_OK(hsad_kernel_dispatch(q, m.kf, &m.lf, th_in(TH_SEC), NULL, NULL));
  for (int i = 0; i < 63; i++)
    TH_OK(hsad_kernel_dispatch(q, m.kc, &m.lc, th_in(TH_SEC), NULL, NULL));
  /* With KFD_EMU_READ_INDEX=launch (make test) the read index passes the fill once it is
   * launched: the ring then has a free slot for no dispatch (kernargs are reclaimed on
   * completion) but for the one barrier-AND checkpoint a producer facing a full ring adds, so
   * 65 packets are not yet completed and 64 not yet launched. With `complete` the read index
   * stays at 0 until the fill completed: no checkpoint, 64 and 64. */
  const amd_queue_t *aq = (const amd_queue_t *)hsad_queue_hsa(q);
  bool at_launch = th_first_launched(q); /* the fill */
  unsigned pending = at_launch ? 65 : 64;
  uint64_t t0 = hsad_now_ns();
  hsad_completion_t c;
  TH_ERR_IS(hsad_kernel_dispatch(q, m.kc, &m.lc, th_in(20000000ull), &c, NULL), HSAD_ERR_TIMEOUT,
            "queue %llu on device 0 is full (64 packets; %u not yet completed, 64 not yet "
            "launched; 1 requested) and the deadline passed; nothing was submitted",
            (unsigned long long)hsad_queue_hsa(q)->id, pending);
  uint64_t waited = hsad_now_ns() - t0;
  cr_assert(waited >= 20000000ull && waited < 250000000ull, "waited %llu ns",
            (unsigned long long)waited);
  TH_ERR_IS(hsad_kernel_dispatch(q, m.kc, &m.lc, 0, NULL, NULL), HSAD_ERR_TIMEOUT,
            "queue %llu on device 0 is full (64 packets; %u not yet completed, 64 not yet "
            "launched; 1 requested) and the deadline passed; nothing was submitted",
            (unsigned long long)hsad_queue_hsa(q)->id, pending);
  /* No dispatch was reserved. With no epoch packet in flight, a producer facing a full ring
   * adds one barrier-AND (so reclaim progresses) once the packet processor freed a slot: with
   * KFD_EMU_READ_INDEX=launch that happens as soon as the fill launched. */
  cr_assert_eq(aq->write_dispatch_id, pending,
               "a timed-out submit reserved nothing but a checkpoint (write index %llu)",
               (unsigned long long)aq->write_dispatch_id);
  /* the queue drains and works after */
  th_run(q, m.kc, &m.lc, 10 * TH_SEC, 10 * TH_SEC);
  cr_assert_eq(*m.counter, 64);
  cr_assert_eq(m.buf[3], 9);
  mt_close(&e, &m, q);
}

/* An injected kernel fault reaches every waiter on the queue within its deadline, sticks to the
 * queue, and a new queue works after. */
Test(dispatch_mt, injected_fault_reaches_waiters, .timeout = 60) {
  setenv("KFD_EMU_FAULT_KERNEL", "fill", 1);
  th_env_t e;
  mt_kit_t m;
  mt_load(&e, &m);
  hsad_queue_t *q = th_queue(&e, 64);
  mt_buffers(&e, &m);
  hsad_completion_t c0, cf, c2;
  char msg[512];
  TH_OK(hsad_kernel_dispatch(q, m.kc, &m.lc, th_in(TH_SEC), &c0, NULL));
  TH_OK(hsad_completion_wait(&c0, th_in(10 * TH_SEC)));
  TH_OK(hsad_kernel_dispatch(q, m.kf, &m.lf, th_in(TH_SEC), &cf, NULL));
  TH_OK(hsad_kernel_dispatch(q, m.kc, &m.lc, th_in(TH_SEC), &c2, NULL)); /* behind the fault */
  uint64_t t0 = hsad_now_ns();
  TH_ERR_IS(hsad_completion_wait(&c2, th_in(5 * TH_SEC)), HSAD_ERR_QUEUE_ERROR, "%s",
            th_fault_msg(q, msg, sizeof msg));
  cr_assert(hsad_now_ns() - t0 < 5 * TH_SEC, "the error reached the waiter before its deadline");
  TH_ERR_IS(hsad_completion_wait(&cf, th_in(5 * TH_SEC)), HSAD_ERR_QUEUE_ERROR, "%s", msg);
  /* sticky: the next call on the queue reports it; a completion the queue reached before the
   * fault stays reached */
  TH_ERR_IS(hsad_kernel_dispatch(q, m.kc, &m.lc, th_in(TH_SEC), NULL, NULL), HSAD_ERR_QUEUE_ERROR,
            "%s", msg);
  TH_OK(hsad_completion_wait(&c0, th_in(TH_SEC)));
  TH_ERR_IS(hsad_queue_wait_idle(q, th_in(TH_SEC)), HSAD_ERR_QUEUE_ERROR, "%s", msg);
  TH_ERR_IS(hsad_queue_error(q), HSAD_ERR_QUEUE_ERROR, "%s", msg);
  cr_assert_eq(*m.counter, 1);
  hsad_queue_destroy(q);
  /* a new queue works */
  q = th_queue(&e, 64);
  th_run(q, m.kc, &m.lc, TH_SEC, 10 * TH_SEC);
  cr_assert_eq(*m.counter, 2);
  mt_close(&e, &m, q);
}

/* A shared queue that faulted is replaced for later callers; its holders keep seeing the error. */
Test(dispatch_mt, faulted_shared_queue_is_replaced, .timeout = 60) {
  setenv("KFD_EMU_FAULT_KERNEL", "fill", 1);
  th_env_t e;
  mt_kit_t m;
  mt_load(&e, &m);
  hsad_queue_t *a, *b, *a2, *b2;
  TH_OK(hsad_device_queue(e.dev, &a));
  TH_OK(hsad_device_queue(e.dev, &b));
  cr_assert_neq(a, b);
  mt_buffers(&e, &m);
  hsad_completion_t c;
  char msg[512];
  TH_OK(hsad_kernel_dispatch(a, m.kf, &m.lf, th_in(TH_SEC), &c, NULL));
  TH_ERR_IS(hsad_completion_wait(&c, th_in(5 * TH_SEC)), HSAD_ERR_QUEUE_ERROR, "%s",
            th_shared_fault_msg(a, msg, sizeof msg));
  TH_OK(hsad_device_queue(e.dev, &a2)); /* a's turn: replaced */
  TH_OK(hsad_device_queue(e.dev, &b2)); /* b's turn: still b */
  cr_assert_neq(a2, a);
  cr_assert_eq(b2, b);
  TH_ERR_IS(hsad_queue_error(a), HSAD_ERR_QUEUE_ERROR, "%s", msg);
  th_run(a2, m.kc, &m.lc, TH_SEC, 10 * TH_SEC);
  cr_assert_eq(*m.counter, 1);
  mt_close(&e, &m, NULL);
}
