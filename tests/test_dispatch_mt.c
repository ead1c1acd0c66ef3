/* test_dispatch_mt.c - many producers on one small queue, a full ring, and queue faults. */
#include <hsa/amd_hsa_queue.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
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

/* ---- producers of every kind on one 64-slot queue (the hot path's kernarg stamps, doorbell
 * and reservation bound under contention: hsa-dispatch/aql_ring.h) ---- */

#include "fusion/hsad_fusion.h"

typedef struct mix {
  hsad_queue_t *q;
  const hsad_device_kernel_t *kc, *ks; /* count_dispatch, struct_1k */
  uint32_t *counter, *out;             /* out: struct_1k's 64 results per graph launch */
  uint32_t count, value, grid, block;  /* producer: dispatches, value added, geometry */
  int kind;                            /* 0 hot hits, 1 batches of 4, 2 prepared, 3 graph */
  hsad_status_t status;
  char msg[256];
} mix_t;

#define MIX_GRAPH_RUNS 120
static uint32_t mix_blob[MIX_GRAPH_RUNS][256];

static void mix_fail(mix_t *m, hsad_status_t s, const char *what, uint32_t i) {
  m->status = s;
  snprintf(m->msg, sizeof m->msg, "%s %u: %s", what, i, hsad_last_error());
}

/* struct_1k in a graph, its node updated before every launch without waiting: launches in
 * flight put it in ring-copy mode (its 1296-byte segment into its slot's block and those of
 * its 2 padding slots). Run r writes out[64 r + i] = mix_blob[r][i % 256] + i. */
static void mix_graph(mix_t *m) {
  uint32_t n = 64;
  hsad_karg_t a[3] = {HSAD_KARG_PTR(m->out), {.tag = HSAD_KARG_BYTES, .size = 1024,
                      .bytes = mix_blob[0]}, HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {64}, .block = {64}, .args = a, .arg_count = 3};
  hsad_graph_t *g;
  hsad_graph_exec_t *x;
  uint32_t node;
  hsad_status_t s = hsad_graph_create(0, &g);
  if (!s) s = hsad_graph_add_kernel(g, "S", 0, m->ks, &l, NULL, 0, &node);
  if (!s) s = hsad_graph_instantiate(g, &m->q, 1, &x);
  hsad_graph_destroy(g);
  if (s) return mix_fail(m, s, "graph", 0);
  hsad_completion_t c = {0};
  for (uint32_t r = 0; r < m->count && !s; r++) {
    a[0] = (hsad_karg_t)HSAD_KARG_PTR(m->out + 64 * r);
    a[1].bytes = mix_blob[r];
    if (r) s = hsad_graph_exec_update(x, node, &l);
    if (!s) s = hsad_graph_launch(x, 0, th_in(60 * TH_SEC), &c, NULL);
    if (s) mix_fail(m, s, "graph launch", r);
  }
  if (!s && (s = hsad_completion_wait(&c, th_in(60 * TH_SEC)))) mix_fail(m, s, "graph wait", 0);
  hsad_graph_exec_destroy(x);
}

static void *mix_produce(void *arg) {
  mix_t *m = arg;
  if (m->kind == 3) {
    mix_graph(m);
    return NULL;
  }
  hsad_karg_t args[2] = {HSAD_KARG_PTR(m->counter), HSAD_KARG_VAL(m->value)};
  hsad_launch_t l = {.dims = 1, .grid = {m->grid}, .block = {m->block}, .args = args,
                     .arg_count = 2, .flags = HSAD_LAUNCH_NO_BARRIER};
  uint64_t deadline = th_in(120 * TH_SEC);
  hsad_prepared_launch_t *p = NULL;
  if (m->kind == 2 && (m->status = hsad_launch_prepare(m->q, m->kc, &l, &p))) {
    mix_fail(m, m->status, "prepare", 0);
    return NULL;
  }
  hsad_dispatch_desc_t items[4] = {{m->kc, l}, {m->kc, l}, {m->kc, l}, {m->kc, l}};
  for (uint32_t i = 0; i < m->count; i++) {
    hsad_status_t s = m->kind == 0   ? hsad_kernel_dispatch(m->q, m->kc, &l, deadline, NULL, NULL)
                      : m->kind == 1 ? hsad_queue_dispatch_batch(m->q, items, 4, deadline, NULL, NULL)
                                     : hsad_prepared_dispatch(p, deadline, NULL, NULL);
    if (s) {
      mix_fail(m, s, "dispatch", i);
      break;
    }
  }
  hsad_launch_destroy(p);
  return NULL;
}

/* Six producers on one 64-slot queue for many laps: hot-path hits of count_dispatch from two
 * threads with different geometries (1 and 256 work-items: other hidden arguments, so a
 * block stamped by one entry is never right for the other), batches of 4 (their claims clear
 * the stamps), a prepared launch (no ring block), another thread of hits with a third
 * geometry, and a graph of struct_1k updated before every launch (ring-copy mode over 3
 * blocks). kfd-emu checks every packet's hidden arguments against its geometry and runs no
 * packet the doorbell does not cover (strict): the count is exact (each producer's value x
 * its dispatches), every struct_1k run's 64 results are exact, the queue never faulted, and
 * every reserved slot was consumed. */
Test(dispatch_mt, every_producer_kind_one_64_slot_queue, .timeout = 240) {
  th_env_t e;
  const hsad_device_kernel_t *kc, *ks;
  hsad_queue_t *q;
  hsad_program_t *pc = th_start(&e, "count_dispatch", 5, "count_dispatch", &kc, &q);
  hsad_program_t *pb = th_load(&e, "big_args", 5, "struct_1k", &ks);
  uint32_t *counter = th_alloc(&e, 4);
  uint32_t *out = th_alloc(&e, MIX_GRAPH_RUNS * 64 * 4);
  memset(out, 0, MIX_GRAPH_RUNS * 64 * 4);
  for (uint32_t r = 0; r < MIX_GRAPH_RUNS; r++)
    for (uint32_t j = 0; j < 256; j++) mix_blob[r][j] = r * 10000u + j * 3u;
  enum { PRODUCERS = 6 };
  mix_t m[PRODUCERS] = {
      {.kind = 0, .count = 6000, .value = 1, .grid = 1, .block = 1},
      {.kind = 0, .count = 6000, .value = 1000, .grid = 256, .block = 64},
      {.kind = 1, .count = 600, .value = 100000, .grid = 128, .block = 32},
      {.kind = 2, .count = 3000, .value = 10, .grid = 64, .block = 64},
      {.kind = 0, .count = 3000, .value = 100, .grid = 96, .block = 32},
      {.kind = 3, .count = MIX_GRAPH_RUNS},
  };
  pthread_t t[PRODUCERS];
  uint64_t want = 0;
  for (int i = 0; i < PRODUCERS; i++) {
    m[i].q = q, m[i].kc = kc, m[i].ks = ks, m[i].counter = counter, m[i].out = out;
    want += (uint64_t)m[i].count * m[i].value * (m[i].kind == 1 ? 4 : 1);
    cr_assert_eq(pthread_create(&t[i], NULL, mix_produce, &m[i]), 0);
  }
  for (int i = 0; i < PRODUCERS; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < PRODUCERS; i++) cr_assert_eq(m[i].status, HSAD_OK, "producer %d: %s", i, m[i].msg);
  TH_OK(hsad_queue_wait_idle(q, th_in(60 * TH_SEC)));
  TH_OK(hsad_queue_error(q));
  const amd_queue_t *aq = (const amd_queue_t *)hsad_queue_hsa(q);
  cr_assert_eq(aq->read_dispatch_id, aq->write_dispatch_id);
  cr_assert_eq(want, 6000ull + 6000000 + 240000000 + 30000 + 300000, "the sum as written");
  cr_assert_eq(__atomic_load_n(counter, __ATOMIC_ACQUIRE), (uint32_t)want, "count %u, want %llu",
               __atomic_load_n(counter, __ATOMIC_ACQUIRE), (unsigned long long)want);
  for (uint32_t r = 0; r < MIX_GRAPH_RUNS; r++)
    for (uint32_t i = 0; i < 64; i++)
      cr_assert_eq(out[64 * r + i], mix_blob[r][i % 256] + i, "run %u out[%u] = %u", r, i,
                   out[64 * r + i]);
  hsad_buffer_free(out);
  hsad_buffer_free(counter);
  hsad_program_destroy(pb);
  th_finish(&e, q, pc);
}

/* Captures begun and ended over and over on a queue while another thread dispatches into it
 * (hot-path hits of count_dispatch, value 1): each dispatch either reaches the ring or is
 * recorded by the capture that was open (the gate folded into the queue's hot key, which every
 * capture start zeroes and its end restores: dispatch_internal.h dq_queue_hot_refresh), never
 * both, never neither: once every captured graph has been launched once, the count is exactly
 * the dispatches made, and the queue never faulted. */
typedef struct cap_race {
  hsad_queue_t *q;
  const hsad_device_kernel_t *k;
  uint32_t *counter, count;
  _Atomic uint32_t issued; /* dispatches returned */
  _Atomic uint32_t seen;   /* `issued` as the capturing thread last read it */
  _Atomic int done;
  hsad_status_t status;
  char msg[256];
} cap_race_t;

static void *cap_race_produce(void *arg) {
  cap_race_t *c = arg;
  uint32_t one = 1;
  hsad_karg_t args[2] = {HSAD_KARG_PTR(c->counter), HSAD_KARG_VAL(one)};
  hsad_launch_t l = {.dims = 1, .grid = {1}, .block = {1}, .args = args, .arg_count = 2,
                     .flags = HSAD_LAUNCH_NO_BARRIER};
  for (uint32_t i = 0; i < c->count; i++) {
    c->status = hsad_kernel_dispatch(c->q, c->k, &l, th_in(60 * TH_SEC), NULL, NULL);
    if (c->status) {
      snprintf(c->msg, sizeof c->msg, "dispatch %u: %s", i, hsad_last_error());
      break;
    }
    atomic_store(&c->issued, i + 1);
    while (i + 1 - atomic_load(&c->seen) > 8) sched_yield(); /* the capturer keeps up */
  }
  atomic_store(&c->done, 1);
  return NULL;
}

Test(dispatch_mt, captures_while_another_thread_dispatches, .timeout = 120) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "count_dispatch", 5, "count_dispatch", &k, &q);
  cap_race_t c = {.q = q, .k = k, .counter = th_alloc(&e, 4), .count = 6000};
  *c.counter = 0;
  enum { MAX_CAPTURES = 4000 };
  hsad_graph_t **graphs = calloc(MAX_CAPTURES, sizeof *graphs);
  cr_assert_not_null(graphs);
  pthread_t t;
  cr_assert_eq(pthread_create(&t, NULL, cap_race_produce, &c), 0);
  uint32_t n = 0;
  while (!atomic_load(&c.done)) {
    cr_assert_lt(n, MAX_CAPTURES);
    hsad_graph_t *g, *got = NULL;
    TH_OK(hsad_graph_create(0, &g));
    TH_OK(hsad_queue_capture_begin(q, g, 0));
    uint32_t at = atomic_load(&c.issued); /* open for 1..5 dispatches (or the last) */
    while (atomic_load(&c.issued) < at + 1 + n % 5 && !atomic_load(&c.done))
      atomic_store(&c.seen, atomic_load(&c.issued)), sched_yield();
    TH_OK(hsad_queue_capture_end(q, &got));
    cr_assert_eq(got, g);
    graphs[n++] = g;
    at = atomic_load(&c.issued); /* closed for 1..7: they reach the ring */
    while (atomic_load(&c.issued) < at + 1 + n % 7 && !atomic_load(&c.done))
      atomic_store(&c.seen, atomic_load(&c.issued)), sched_yield();
  }
  pthread_join(t, NULL);
  cr_assert_eq(c.status, HSAD_OK, "%s", c.msg);
  uint32_t recorded = 0, launched = 0;
  for (uint32_t i = 0; i < n; i++) {
    hsad_graph_exec_t *x;
    hsad_status_t s = hsad_graph_instantiate(graphs[i], &q, 1, &x);
    if (s == HSAD_ERR_INVALID_ARGUMENT && strstr(hsad_last_error(), "the graph has no nodes")) {
      /* 3 or more dispatches returned while it was open (i % 5 >= 2, not the last capture):
       * the one after the first two began after the capture's start (a fence of the first
       * one's submit, or its recording, orders its read of the hot key after it) */
      cr_assert(i % 5 < 2 || i == n - 1, "capture %u of %u recorded nothing", i, n);
      hsad_graph_destroy(graphs[i]);
      continue;
    }
    TH_OK(s);
    recorded += hsad_graph_exec_packet_count(x, 0) > 0;
    hsad_completion_t done;
    TH_OK(hsad_graph_launch(x, 0, th_in(10 * TH_SEC), &done, NULL));
    TH_OK(hsad_completion_wait(&done, th_in(10 * TH_SEC)));
    hsad_graph_exec_destroy(x);
    hsad_graph_destroy(graphs[i]);
    launched++;
  }
  free(graphs);
  TH_OK(hsad_queue_wait_idle(q, th_in(60 * TH_SEC)));
  TH_OK(hsad_queue_error(q));
  cr_assert_eq(__atomic_load_n(c.counter, __ATOMIC_ACQUIRE), c.count,
               "count %u, want %u (%u captures, %u with nodes)",
               __atomic_load_n(c.counter, __ATOMIC_ACQUIRE), c.count, n, launched);
  cr_log_info("%u captures, %u with nodes (%u packets > 0)", n, launched, recorded);
  hsad_buffer_free(c.counter);
  th_finish(&e, q, p);
}

/* ---- a thread's exit: its launch-cache entry (hsa-dispatch/launch_cache.c cache_free) ---- */

#include "hsa-dispatch/launch_cache.h"

typedef struct late {
  hsad_queue_t *q;
  const hsad_device_kernel_t *k;
  hsad_launch_t l;
  bool empty;            /* the thread's entry was the empty one when the late destructor ran */
  hsad_status_t s[2];
  uint64_t id[2];
} late_t;

static pthread_key_t late_key;

/* Another key's destructor, run after the library's (glibc runs them in key order; this key is
 * made after the library's): two dispatches of the thread's launch from its exit. */
static void late_dispatch(void *arg) {
  late_t *t = arg;
  t->empty = dq_launch_cache_mine == &dq_launch_cache_none;
  for (int i = 0; i < 2; i++)
    t->s[i] = hsad_kernel_dispatch(t->q, t->k, &t->l, th_in(10 * TH_SEC), NULL, &t->id[i]);
}

static void *late_thread(void *arg) {
  late_t *t = arg;
  t->s[0] = hsad_kernel_dispatch(t->q, t->k, &t->l, th_in(10 * TH_SEC), NULL, &t->id[0]);
  if (!t->s[0]) pthread_setspecific(late_key, t);
  return NULL;
}

/* A thread that dispatched (packet 1: its entry) and exits while another key's destructor,
 * run after the library's, dispatches again (packets 2 and 3, a miss then a hit): the
 * library's destructor freed the entry and left the thread on the empty one, so those
 * dispatches make a new entry instead of using freed memory; all 4 count, exactly. */
Test(dispatch_mt, dispatch_from_a_later_thread_destructor, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "count_dispatch", 5, "count_dispatch", &k, &q);
  uint32_t *counter = th_alloc(&e, 4), one = 1;
  *counter = 0;
  hsad_karg_t args[2] = {HSAD_KARG_PTR(counter), HSAD_KARG_VAL(one)};
  late_t t = {.q = q, .k = k, .l = {.dims = 1, .grid = {1}, .block = {1}, .args = args,
                                    .arg_count = 2}};
  uint64_t id;
  TH_OK(hsad_kernel_dispatch(q, k, &t.l, th_in(TH_SEC), NULL, &id)); /* the library's key */
  cr_assert_eq(id, 0);
  cr_assert_eq(pthread_key_create(&late_key, late_dispatch), 0);
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, late_thread, &t), 0);
  pthread_join(th, NULL);
  pthread_key_delete(late_key);
  cr_assert(t.empty, "the late destructor found the thread's freed entry");
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(t.s[i], HSAD_OK, "dispatch %d from the destructor: %s", i,
                 hsad_status_name(t.s[i]));
    cr_assert_eq(t.id[i], 2u + i);
  }
  TH_OK(hsad_queue_wait_idle(q, th_in(10 * TH_SEC)));
  TH_OK(hsad_queue_error(q));
  cr_assert_eq(__atomic_load_n(counter, __ATOMIC_ACQUIRE), 4);
  hsad_buffer_free(counter);
  th_finish(&e, q, p);
}

/* ---- a queue fault while other threads' hot-path hits continue ---- */

typedef struct fault_hitter {
  hsad_queue_t *q;
  const hsad_device_kernel_t *k;
  uint32_t *counter;
  _Atomic uint32_t ok;           /* dispatches that returned HSAD_OK */
  hsad_status_t first, again;    /* the first error, then the next dispatch's */
  char msg[512], msg_again[512];
} fault_hitter_t;

static void *fault_hit(void *arg) {
  fault_hitter_t *h = arg;
  uint32_t one = 1;
  hsad_karg_t args[2] = {HSAD_KARG_PTR(h->counter), HSAD_KARG_VAL(one)};
  hsad_launch_t l = {.dims = 1, .grid = {1}, .block = {1}, .args = args, .arg_count = 2,
                     .flags = HSAD_LAUNCH_NO_BARRIER};
  for (uint32_t i = 0; i < 10000000; i++) {
    h->first = hsad_kernel_dispatch(h->q, h->k, &l, th_in(30 * TH_SEC), NULL, NULL);
    if (h->first) {
      snprintf(h->msg, sizeof h->msg, "%s", hsad_last_error());
      break;
    }
    atomic_fetch_add(&h->ok, 1);
  }
  h->again = hsad_kernel_dispatch(h->q, h->k, &l, th_in(30 * TH_SEC), NULL, NULL);
  snprintf(h->msg_again, sizeof h->msg_again, "%s", hsad_last_error());
  return NULL;
}

/* Three threads hit the launch cache on one 64-slot queue (the hot path) when an injected
 * kernel fault stops it: each one's dispatches end with HSAD_ERR_QUEUE_ERROR and the fault's
 * message within its deadline (a hit that raced the fault either reached the ring before the
 * queue's hot key went to 0 or waited for room and saw the sticky error), the next one too (its
 * entry's hot key no longer matches the queue's), and nothing hangs. */
Test(dispatch_mt, fault_while_hits_continue, .timeout = 120) {
  setenv("KFD_EMU_FAULT_KERNEL", "fill", 1);
  th_env_t e;
  mt_kit_t m;
  mt_load(&e, &m);
  hsad_queue_t *q = th_queue(&e, 64);
  mt_buffers(&e, &m);
  fault_hitter_t h[3];
  pthread_t t[3];
  for (int i = 0; i < 3; i++) {
    h[i] = (fault_hitter_t){.q = q, .k = m.kc, .counter = m.counter};
    cr_assert_eq(pthread_create(&t[i], NULL, fault_hit, &h[i]), 0);
  }
  for (int i = 0; i < 3; i++) /* every thread is hitting */
    while (atomic_load(&h[i].ok) < 200) sched_yield();
  hsad_completion_t cf;
  char msg[512];
  TH_OK(hsad_kernel_dispatch(q, m.kf, &m.lf, th_in(TH_SEC), &cf, NULL));
  TH_ERR_IS(hsad_completion_wait(&cf, th_in(10 * TH_SEC)), HSAD_ERR_QUEUE_ERROR, "%s",
            th_fault_msg(q, msg, sizeof msg));
  for (int i = 0; i < 3; i++) pthread_join(t[i], NULL);
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(h[i].first, HSAD_ERR_QUEUE_ERROR, "thread %d: %s: %s", i,
                 hsad_status_name(h[i].first), h[i].msg);
    cr_assert_str_eq(h[i].msg, msg, "thread %d", i);
    cr_assert_eq(h[i].again, HSAD_ERR_QUEUE_ERROR, "thread %d again: %s", i,
                 hsad_status_name(h[i].again));
    cr_assert_str_eq(h[i].msg_again, msg, "thread %d again", i);
  }
  TH_ERR_IS(hsad_queue_error(q), HSAD_ERR_QUEUE_ERROR, "%s", msg);
  mt_close(&e, &m, q);
}
