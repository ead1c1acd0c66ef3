/* test_fusion_capture.c - stream capture (hsad_fusion.h "capture"): submits to a capturing
 * queue recorded into a graph (nothing reaches the ring), replayed; fork/join captured across
 * two queues and fused; every refusal with its exact message; the uncaptured path after end.
 * Run with kfd-emu's default reordering of non-barrier dispatches (last-first) and
 * KFD_EMU_READ_INDEX=launch (make test): a lost stream-order edge shows as a wrong sum. */
#include <stdlib.h>

#include "fusion/hsad_fusion.h"
#include "tests/test_dispatch_util.h"

#define BAR(w) (((w) >> HSA_PACKET_HEADER_BARRIER) & 1u)
#define TYPE(w) (((w) >> HSA_PACKET_HEADER_TYPE) & 0xffu)

static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

static uint64_t write_id(hsad_queue_t *q) {
  return ((const amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id;
}

static unsigned long long qid(hsad_queue_t *q) {
  return (unsigned long long)hsad_queue_hsa(q)->id;
}

/* The epoch of node `node` captured by the `capture`-th capture of the process. */
static uint64_t cap_epoch(uint32_t capture, uint32_t node) {
  return HSAD_CAPTURE_EPOCH_BASE + ((uint64_t)capture << 32) + node;
}

/* Kernels of these tests: fill (dst[i] = value), saxpy (y = a x + y). */
typedef struct kit {
  th_env_t e;
  hsad_program_t *pf, *ps;
  const hsad_device_kernel_t *fill, *saxpy;
} kit_t;

static void kit_open(kit_t *t) {
  th_open(&t->e);
  t->pf = th_load(&t->e, "fill", 5, "fill", &t->fill);
  t->ps = th_load(&t->e, "saxpy", 5, "saxpy", &t->saxpy);
}

static void kit_close(kit_t *t) {
  hsad_program_destroy(t->ps);
  hsad_program_destroy(t->pf);
  TH_OK(hsad_runtime_close(t->e.rt));
}

/* Launch descriptions whose argument arrays live in the caller's frame. */
typedef struct fill_args {
  hsad_karg_t a[3];
  hsad_launch_t l;
  uint32_t value, n;
} fill_args_t;

static void fill_set(fill_args_t *f, void *dst, float value, uint32_t n) {
  f->value = f2u(value);
  f->n = n;
  f->a[0] = (hsad_karg_t)HSAD_KARG_PTR(dst);
  f->a[1] = (hsad_karg_t)HSAD_KARG_VAL(f->value);
  f->a[2] = (hsad_karg_t)HSAD_KARG_VAL(f->n);
  f->l = (hsad_launch_t){.dims = 1, .grid = {n}, .block = {n < 64 ? n : 64}, .args = f->a,
                         .arg_count = 3};
}

typedef struct saxpy_args {
  hsad_karg_t a[4];
  hsad_launch_t l;
  float alpha;
  uint32_t n;
} saxpy_args_t;

/* y += x (alpha 1: exact for the integers these tests add) */
static void saxpy_set(saxpy_args_t *s, const float *x, float *y, uint32_t n) {
  s->alpha = 1.0f;
  s->n = n;
  s->a[0] = (hsad_karg_t)HSAD_KARG_VAL(s->alpha);
  s->a[1] = (hsad_karg_t)HSAD_KARG_PTR(x);
  s->a[2] = (hsad_karg_t)HSAD_KARG_PTR(y);
  s->a[3] = (hsad_karg_t)HSAD_KARG_VAL(s->n);
  s->l = (hsad_launch_t){.dims = 1, .grid = {n}, .block = {n < 64 ? n : 64}, .args = s->a,
                         .arg_count = 4};
}

/* Issue 17's test: fill(p, 2) -> acc += p -> barrier -> fill(p, 1) -> acc += p captured on one
 * queue (the last dispatch with HSAD_LAUNCH_NO_BARRIER, which the graph drops), nothing in the
 * ring; instantiated and launched 100 times back to back with no host wait: acc = 100 x 3 =
 * 300 exactly, p = 1. Without the stream-order edges of the capture the nodes are independent
 * and kfd-emu runs them last-first (acc 200: each acc += p reads the other fill's value or
 * none). Then a plain dispatch on the queue runs as before the capture. */
Test(fusion_capture, mixed_sequence_replayed_100_times, .timeout = 120) {
  kit_t t;
  kit_open(&t);
  hsad_queue_t *q = th_queue(&t.e, 64);
  enum { N = 48, LAUNCHES = 100 };
  float *p = th_alloc(&t.e, N * 4), *acc = th_alloc(&t.e, N * 4);
  memset(acc, 0, N * 4);
  fill_args_t f1, f2;
  saxpy_args_t s1, s2;
  fill_set(&f1, p, 5.0f, N);
  hsad_completion_t c;
  TH_OK(hsad_kernel_dispatch(q, t.fill, &f1.l, th_in(TH_SEC), &c, NULL));
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  cr_assert_eq(write_id(q), 1);
  hsad_graph_t *g, *ended = NULL;
  TH_OK(hsad_graph_create(0, &g));
  cr_assert_not(hsad_queue_capturing(q));
  TH_OK(hsad_queue_capture_begin(q, g, 0));
  cr_assert(hsad_queue_capturing(q));
  fill_set(&f1, p, 2.0f, N);
  saxpy_set(&s1, p, acc, N);
  fill_set(&f2, p, 1.0f, N);
  saxpy_set(&s2, p, acc, N);
  s2.l.flags = HSAD_LAUNCH_NO_BARRIER;
  hsad_completion_t cn[5];
  uint64_t ids[5];
  TH_OK(hsad_kernel_dispatch(q, t.fill, &f1.l, th_in(TH_SEC), &cn[0], &ids[0]));
  TH_OK(hsad_kernel_dispatch(q, t.saxpy, &s1.l, th_in(TH_SEC), &cn[1], &ids[1]));
  TH_OK(hsad_queue_barrier(q, NULL, 0, th_in(TH_SEC), &cn[2]));
  ids[2] = cn[2].packet_id;
  TH_OK(hsad_kernel_dispatch(q, t.fill, &f2.l, th_in(TH_SEC), &cn[3], &ids[3]));
  TH_OK(hsad_kernel_dispatch(q, t.saxpy, &s2.l, th_in(TH_SEC), &cn[4], &ids[4]));
  for (uint32_t i = 0; i < 5; i++) {
    cr_assert_eq(cn[i].queue, q);
    cr_assert_eq(cn[i].epoch, cap_epoch(1, i), "node %u: epoch 0x%llx", i,
                 (unsigned long long)cn[i].epoch);
    cr_assert_eq(cn[i].packet_id, i);
    cr_assert_eq(ids[i], i);
  }
  /* nothing reached the ring, and nothing ran: p still holds the plain fill's 5 */
  cr_assert_eq(write_id(q), 1);
  cr_assert_eq(hsad_queue_error(q), HSAD_OK);
  TH_OK(hsad_queue_capture_end(q, &ended));
  cr_assert_eq(ended, g);
  cr_assert_not(hsad_queue_capturing(q));
  cr_assert_eq(write_id(q), 1);
  for (uint32_t i = 0; i < N; i++) cr_assert_eq(f2u(p[i]), f2u(5.0f));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  /* a chain: every packet has the BARRIER bit; the barrier node is a barrier-AND; the last
   * kernel carries the epoch */
  cr_assert_eq(hsad_graph_exec_packet_count(x, 0), 5);
  for (uint32_t i = 0; i < 5; i++) {
    uint8_t b[64];
    int32_t node;
    TH_OK(hsad_graph_exec_packet(x, 0, i, b, &node));
    uint32_t w;
    memcpy(&w, b, 4);
    cr_assert_eq(node, (int32_t)i);
    cr_assert_eq(BAR(w), 1, "packet %u", i);
    cr_assert_eq(TYPE(w), i == 2 ? HSA_PACKET_TYPE_BARRIER_AND : HSA_PACKET_TYPE_KERNEL_DISPATCH);
  }
  hsad_completion_t done = {0};
  for (uint32_t l = 0; l < LAUNCHES; l++) {
    hsad_graph_rollback_t why;
    TH_OK(hsad_graph_launch(x, HSAD_GRAPH_NO_ROLLBACK, th_in(10 * TH_SEC), &done, &why));
    cr_assert_eq(why, HSAD_GRAPH_ROLLBACK_NONE);
  }
  TH_OK(hsad_completion_wait(&done, th_in(30 * TH_SEC)));
  cr_assert_eq(done.epoch, 1 + LAUNCHES);
  cr_assert_eq(done.packet_id, 5 * LAUNCHES);
  for (uint32_t i = 0; i < N; i++) {
    cr_assert_eq(acc[i], 300.0f, "acc[%u] = %.1f, 100 launches of +2 +1 give 300", i, acc[i]);
    cr_assert_eq(f2u(p[i]), f2u(1.0f), "p[%u] = %.1f", i, p[i]);
  }
  /* after the end: an ordinary dispatch (packet 501, epoch 102) */
  uint64_t id;
  TH_OK(hsad_kernel_dispatch(q, t.saxpy, &s1.l, th_in(TH_SEC), &c, &id));
  cr_assert_eq(id, 1 + 5 * LAUNCHES);
  cr_assert_eq(c.queue, q);
  cr_assert_eq(c.epoch, 2 + LAUNCHES);
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  for (uint32_t i = 0; i < N; i++) cr_assert_eq(acc[i], 301.0f, "acc[%u] = %.1f", i, acc[i]);
  cr_assert_eq(write_id(q), 2 + 5 * LAUNCHES);
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q);
  kit_close(&t);
}

/* Fork/join captured across two queues (as cudaEventRecord + cudaStreamWaitEvent during
 * capture): qa: A fill(p, 7); qb: barrier after A, B accb += p; qa: C acca += p, barrier
 * after B, D acca += accb, E fill(p, 0). Launched 10 times back to back, fused
 * (HSAD_GRAPH_ROLLBACK_NONE): accb = 7 n, acca = 7 n + 7 n (n + 1) / 2: 70 and 455 for n = 10;
 * p = 0. */
Test(fusion_capture, fork_join_two_queues_fused, .timeout = 120) {
  kit_t t;
  kit_open(&t);
  hsad_queue_t *qa = th_queue(&t.e, 64), *qb = th_queue(&t.e, 64);
  enum { N = 40, LAUNCHES = 10 };
  float *p = th_alloc(&t.e, N * 4), *acca = th_alloc(&t.e, N * 4), *accb = th_alloc(&t.e, N * 4);
  memset(acca, 0, N * 4);
  memset(accb, 0, N * 4);
  fill_args_t fa, fe;
  saxpy_args_t sb, sc, sd;
  fill_set(&fa, p, 7.0f, N);
  fill_set(&fe, p, 0.0f, N);
  saxpy_set(&sb, p, accb, N);
  saxpy_set(&sc, p, acca, N);
  saxpy_set(&sd, accb, acca, N);
  hsad_graph_t *g, *ga = NULL, *gb = NULL;
  TH_OK(hsad_graph_create(0, &g));
  TH_OK(hsad_queue_capture_begin(qa, g, 0));
  TH_OK(hsad_queue_capture_begin(qb, g, 1));
  hsad_completion_t ca, cfork, cb, cjoin;
  TH_OK(hsad_kernel_dispatch(qa, t.fill, &fa.l, 0, &ca, NULL));
  TH_OK(hsad_queue_barrier(qb, &ca, 1, 0, &cfork));
  TH_OK(hsad_kernel_dispatch(qb, t.saxpy, &sb.l, 0, &cb, NULL));
  TH_OK(hsad_kernel_dispatch(qa, t.saxpy, &sc.l, 0, NULL, NULL));
  TH_OK(hsad_queue_barrier(qa, &cb, 1, 0, &cjoin));
  TH_OK(hsad_kernel_dispatch(qa, t.saxpy, &sd.l, 0, NULL, NULL));
  TH_OK(hsad_kernel_dispatch(qa, t.fill, &fe.l, 0, NULL, NULL));
  cr_assert_eq(ca.epoch, cap_epoch(1, 0));
  cr_assert_eq(cfork.epoch, cap_epoch(2, 1));
  cr_assert_eq(cb.epoch, cap_epoch(2, 2));
  cr_assert_eq(cjoin.epoch, cap_epoch(1, 4));
  cr_assert_eq(write_id(qa), 0);
  cr_assert_eq(write_id(qb), 0);
  TH_OK(hsad_queue_capture_end(qb, &gb));
  TH_OK(hsad_queue_capture_end(qa, &ga));
  cr_assert(ga == g && gb == g);
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, (hsad_queue_t *[]){qa, qb}, 2, &x));
  hsad_graph_destroy(g);
  cr_assert_eq(hsad_graph_exec_queue_count(x), 2);
  cr_assert_eq(hsad_graph_exec_queue(x, 0), qa);
  cr_assert_eq(hsad_graph_exec_queue(x, 1), qb);
  hsad_completion_t done[2];
  for (uint32_t l = 0; l < LAUNCHES; l++) {
    hsad_graph_rollback_t why = HSAD_GRAPH_ROLLBACK_COUNT;
    TH_OK(hsad_graph_launch(x, HSAD_GRAPH_NO_ROLLBACK, th_in(10 * TH_SEC), done, &why));
    cr_assert_eq(why, HSAD_GRAPH_ROLLBACK_NONE, "launch %u: %s", l, hsad_graph_rollback_name(why));
  }
  TH_OK(hsad_completion_wait_all(done, 2, th_in(30 * TH_SEC)));
  for (uint32_t i = 0; i < N; i++) {
    cr_assert_eq(accb[i], 70.0f, "accb[%u] = %.1f", i, accb[i]);
    cr_assert_eq(acca[i], 455.0f, "acca[%u] = %.1f", i, acca[i]);
    cr_assert_eq(f2u(p[i]), 0u, "p[%u] = %.1f", i, p[i]);
  }
  uint64_t counts[HSAD_GRAPH_ROLLBACK_COUNT];
  hsad_graph_exec_counters(x, counts);
  cr_assert_eq(counts[HSAD_GRAPH_ROLLBACK_NONE], LAUNCHES);
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(qb);
  hsad_queue_destroy(qa);
  kit_close(&t);
}

/* A barrier captured right after the capture's first node waits for it, as after any later
 * node (fusion/capture.c capture_barrier: its stream-order dependency is the capture's last
 * node, node 0 included). fill(p, 2) node 0, the barrier node 1, acc += p node 2 on one queue:
 * three packets, each with the BARRIER bit (without the edge 0 -> 1 the barrier-AND, packet 1,
 * has none); launched 3 times, acc = 6. The edge is in the graph: adding 1 -> 0 makes the
 * cycle hsad_graph_instantiate reports. */
Test(fusion_capture, barrier_after_node_zero_waits_for_it, .timeout = 60) {
  kit_t t;
  kit_open(&t);
  hsad_queue_t *q = th_queue(&t.e, 64);
  enum { N = 32, LAUNCHES = 3 };
  float *p = th_alloc(&t.e, N * 4), *acc = th_alloc(&t.e, N * 4);
  memset(p, 0, N * 4);
  memset(acc, 0, N * 4);
  fill_args_t f;
  saxpy_args_t sa;
  fill_set(&f, p, 2.0f, N);
  saxpy_set(&sa, p, acc, N);
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  TH_OK(hsad_queue_capture_begin(q, g, 0));
  hsad_completion_t cn[3];
  TH_OK(hsad_kernel_dispatch(q, t.fill, &f.l, 0, &cn[0], NULL));
  TH_OK(hsad_queue_barrier(q, NULL, 0, 0, &cn[1]));
  TH_OK(hsad_kernel_dispatch(q, t.saxpy, &sa.l, 0, &cn[2], NULL));
  for (uint32_t i = 0; i < 3; i++) cr_assert_eq(cn[i].epoch, cap_epoch(1, i), "node %u", i);
  TH_OK(hsad_queue_capture_end(q, NULL));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  cr_assert_eq(hsad_graph_exec_packet_count(x, 0), 3);
  for (uint32_t i = 0; i < 3; i++) {
    uint8_t b[64];
    int32_t node = -2;
    TH_OK(hsad_graph_exec_packet(x, 0, i, b, &node));
    uint32_t w;
    memcpy(&w, b, 4);
    cr_assert_eq(node, (int32_t)i, "packet %u: node %d", i, node);
    cr_assert_eq(TYPE(w), i == 1 ? HSA_PACKET_TYPE_BARRIER_AND : HSA_PACKET_TYPE_KERNEL_DISPATCH,
                 "packet %u: type %u", i, TYPE(w));
    cr_assert_eq(BAR(w), 1, "packet %u (node %u) lacks the BARRIER bit", i, i);
  }
  hsad_completion_t done = {0};
  for (uint32_t l = 0; l < LAUNCHES; l++) {
    hsad_graph_rollback_t why = HSAD_GRAPH_ROLLBACK_COUNT;
    TH_OK(hsad_graph_launch(x, HSAD_GRAPH_NO_ROLLBACK, th_in(10 * TH_SEC), &done, &why));
    cr_assert_eq(why, HSAD_GRAPH_ROLLBACK_NONE, "launch %u: %s", l, hsad_graph_rollback_name(why));
  }
  TH_OK(hsad_completion_wait(&done, th_in(30 * TH_SEC)));
  for (uint32_t i = 0; i < N; i++) {
    cr_assert_eq(acc[i], 6.0f, "acc[%u] = %.1f, 3 launches of +2 give 6", i, acc[i]);
    cr_assert_eq(f2u(p[i]), f2u(2.0f), "p[%u] = %.1f", i, p[i]);
  }
  hsad_graph_exec_destroy(x);
  /* node 1 waits for node 0 in the graph itself: the edge 1 -> 0 closes a cycle */
  TH_OK(hsad_graph_add_edge(g, 1, 0));
  hsad_graph_exec_t *cyc = NULL;
  TH_ERR_IS(hsad_graph_instantiate(g, &q, 1, &cyc), HSAD_ERR_GRAPH,
            "cycle: node0 -> node1 -> node0");
  cr_assert_null(cyc);
  hsad_graph_destroy(g);
  hsad_queue_destroy(q);
  kit_close(&t);
}

#define CAPTURING(who, q)                                                                    \
  "%s: queue %llu is capturing (hsad_queue_capture_begin): a capture records "             \
  "hsad_kernel_dispatch and hsad_queue_barrier only; end it first (hsad_queue_capture_end)", \
      who, qid(q)

/* begin / end misuse, the submit calls a capture refuses, barrier dependencies it cannot
 * record, a failing check at the captured call: exact codes and messages; none of it writes a
 * packet on the capturing queue. */
Test(fusion_capture, refusals_and_messages, .timeout = 60) {
  kit_t t;
  kit_open(&t);
  hsad_queue_t *q = th_queue(&t.e, 64), *q2 = th_queue(&t.e, 64);
  enum { N = 16 };
  float *p = th_alloc(&t.e, N * 4);
  fill_args_t f;
  fill_set(&f, p, 3.0f, N);
  hsad_graph_t *g, *g2, *other;
  TH_OK(hsad_graph_create(0, &g));
  TH_OK(hsad_graph_create(HSAD_GRAPH_CAPTURE, &g2));
  TH_OK(hsad_graph_create(0, &other));
  /* an exec using q, made before the capture */
  uint32_t n0;
  TH_OK(hsad_graph_add_kernel(other, "F", 0, t.fill, &f.l, NULL, 0, &n0));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(other, &q, 1, &x));
  hsad_prepared_launch_t *prep;
  TH_OK(hsad_launch_prepare(q, t.fill, &f.l, &prep));

  TH_ERR_IS(hsad_queue_capture_begin(NULL, NULL, 0), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_queue_capture_begin: NULL queue");
  TH_ERR_IS(hsad_queue_capture_begin(q, NULL, 0), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_queue_capture_begin: NULL graph");
  TH_ERR_IS(hsad_queue_capture_begin(q, g, 64), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_queue_capture_begin: lane 64 not below 64");
  TH_ERR_IS(hsad_queue_capture_end(NULL, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_queue_capture_end: NULL queue");
  TH_ERR_IS(hsad_queue_capture_end(q, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_queue_capture_end: queue %llu is not capturing", qid(q));
  hsad_queue_t *shared;
  TH_OK(hsad_device_queue(t.e.dev, &shared));
  TH_ERR_IS(hsad_queue_capture_begin(shared, g, 0), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_queue_capture_begin: queue %llu is a shared queue of device 0 "
            "(hsad_device_queue): its other users' submits would be captured; capture on a "
            "queue of your own (hsad_queue_create)", qid(shared));
  cr_assert_not(hsad_queue_capturing(shared));

  TH_OK(hsad_queue_capture_begin(q, g, 3));
  TH_ERR_IS(hsad_queue_capture_begin(q, g, 4), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_queue_capture_begin: queue %llu is already capturing (lane 3); end that "
            "capture first (hsad_queue_capture_end)", qid(q));
  TH_ERR_IS(hsad_queue_capture_begin(q2, g, 3), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_queue_capture_begin: lane 3 of the graph is being captured on queue %llu; "
            "give each queue its own lane", qid(q));

  /* submit calls a capture does not record */
  hsad_completion_t c;
  TH_ERR_IS(hsad_prepared_dispatch(prep, th_in(TH_SEC), NULL, NULL), HSAD_ERR_INVALID_ARGUMENT,
            CAPTURING("hsad_prepared_dispatch", q));
  hsad_dispatch_desc_t item = {.kernel = t.fill, .launch = f.l};
  TH_ERR_IS(hsad_queue_dispatch_batch(q, &item, 1, th_in(TH_SEC), NULL, NULL),
            HSAD_ERR_INVALID_ARGUMENT, CAPTURING("hsad_queue_dispatch_batch", q));
  TH_ERR_IS(hsad_queue_flush(q, th_in(TH_SEC), &c), HSAD_ERR_INVALID_ARGUMENT,
            CAPTURING("hsad_queue_flush", q));
  TH_ERR_IS(hsad_queue_wait_idle(q, th_in(TH_SEC)), HSAD_ERR_INVALID_ARGUMENT,
            CAPTURING("hsad_queue_wait_idle", q));
  hsa_signal_t fake = {1};
  TH_ERR_IS(hsad_queue_barrier_signals(q, NULL, 0, &fake, 1, (hsa_signal_t){0}, th_in(TH_SEC),
                                       NULL),
            HSAD_ERR_INVALID_ARGUMENT, CAPTURING("hsad_queue_barrier_signals (HSA signals)", q));
  TH_ERR_IS(hsad_queue_barrier_signals(q, NULL, 0, NULL, 0, fake, th_in(TH_SEC), NULL),
            HSAD_ERR_INVALID_ARGUMENT, CAPTURING("hsad_queue_barrier_signals (HSA signals)", q));
  TH_ERR_IS(hsad_graph_launch(x, 0, th_in(TH_SEC), NULL, NULL), HSAD_ERR_INVALID_ARGUMENT,
            CAPTURING("graph launch, queue 0 of 1: hsad_submit_reserve_epochs", q));
  TH_ERR_IS(hsad_graph_launch(x, HSAD_GRAPH_SEQUENTIAL, th_in(TH_SEC), NULL, NULL),
            HSAD_ERR_INVALID_ARGUMENT, CAPTURING("hsad_submit_reserve", q));
  cr_assert_eq(hsad_queue_error(q), HSAD_OK, "capturing is not an error");

  /* barrier dependencies: real work, an ended capture, another graph */
  hsad_completion_t real, ended_dep, other_dep;
  TH_OK(hsad_kernel_dispatch(q2, t.fill, &f.l, th_in(TH_SEC), &real, NULL));
  hsad_completion_t deps[2] = {{0}, real}; /* an empty one is satisfied */
  TH_ERR_IS(hsad_queue_barrier(q, deps, 2, 0, NULL),
            HSAD_ERR_INVALID_ARGUMENT,
            "hsad_queue_barrier: queue %llu is capturing: dependency 1 is work submitted "
            "outside the capture (epoch 1 of queue %llu), which a graph cannot wait for: wait "
            "for it before hsad_queue_capture_begin, or pass it to hsad_graph_launch_after",
            qid(q), qid(q2));
  TH_OK(hsad_completion_wait(&real, th_in(10 * TH_SEC)));
  TH_OK(hsad_queue_capture_begin(q2, g2, 0)); /* capture 2 */
  TH_OK(hsad_kernel_dispatch(q2, t.fill, &f.l, 0, &ended_dep, NULL));
  TH_OK(hsad_queue_capture_end(q2, NULL));
  TH_ERR_IS(hsad_queue_barrier(q, &ended_dep, 1, 0, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_queue_barrier: queue %llu is capturing: dependency 0 is node 0 of a capture "
            "on queue %llu that has ended", qid(q), qid(q2));
  TH_OK(hsad_queue_capture_begin(q2, g2, 0)); /* capture 3: g2 holds node 0 already */
  TH_OK(hsad_kernel_dispatch(q2, t.fill, &f.l, 0, &other_dep, NULL));
  cr_assert_eq(other_dep.epoch, cap_epoch(3, 1), "ids of refused begins are not used");
  TH_ERR_IS(hsad_queue_barrier(q, &other_dep, 1, 0, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_queue_barrier: queue %llu is capturing: dependency 0 is node 1 of another "
            "graph (captured on queue %llu); a barrier joins captures into the same graph only",
            qid(q), qid(q2));
  TH_OK(hsad_queue_capture_end(q2, NULL));

  /* a failing check at the captured call: the code and message of an uncaptured dispatch,
   * nothing recorded (the next node is node 0) */
  fill_args_t bad;
  fill_set(&bad, p, 1.0f, N);
  bad.l.grid[0] = 0;
  hsad_status_t s = hsad_kernel_dispatch(q, t.fill, &bad.l, 0, &c, NULL);
  char captured_msg[1024];
  snprintf(captured_msg, sizeof captured_msg, "%s", hsad_last_error());
  cr_assert_eq(s, HSAD_ERR_GRID, "%s", captured_msg);
  uint64_t id = 99;
  TH_OK(hsad_kernel_dispatch(q, t.fill, &f.l, 0, &c, &id));
  cr_assert_eq(id, 0);
  cr_assert_eq(c.epoch, cap_epoch(1, 0));
  /* a captured completion was never issued on its queue: waiting on it is refused */
  TH_ERR_IS(hsad_completion_wait(&c, th_in(TH_SEC)), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_completion_wait: epoch %llu was never issued on queue %llu (last epoch 0)",
            (unsigned long long)cap_epoch(1, 0), qid(q));
  cr_assert_not(hsad_completion_done(&c));
  cr_assert_eq(write_id(q), 0, "nothing reached the capturing queue's ring");
  TH_OK(hsad_queue_capture_end(q, NULL));
  TH_ERR_IS(hsad_kernel_dispatch(q, t.fill, &bad.l, 0, NULL, NULL), HSAD_ERR_GRID, "%s",
            captured_msg);

  /* after the end every refused call works again */
  TH_OK(hsad_prepared_dispatch(prep, th_in(TH_SEC), NULL, NULL));
  TH_OK(hsad_queue_dispatch_batch(q, &item, 1, th_in(TH_SEC), NULL, NULL));
  TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), NULL, NULL));
  TH_OK(hsad_queue_barrier(q, &real, 1, th_in(TH_SEC), NULL));
  TH_OK(hsad_queue_wait_idle(q, th_in(10 * TH_SEC)));
  /* prepared, batch, graph (its fill carries the epoch), the barrier-value packet on q2's
   * epoch 1, wait_idle's barrier-AND */
  cr_assert_eq(write_id(q), 5, "write id %llu", (unsigned long long)write_id(q));
  for (uint32_t i = 0; i < N; i++) cr_assert_eq(f2u(p[i]), f2u(3.0f));
  hsad_launch_destroy(prep);
  hsad_graph_exec_destroy(x);
  hsad_graph_destroy(other);
  hsad_graph_destroy(g2);
  hsad_graph_destroy(g);
  hsad_queue_destroy(q2);
  hsad_queue_destroy(q);
  kit_close(&t);
}
