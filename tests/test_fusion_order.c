/* test_fusion_order.c - graph launches in stream order, cross-queue edges on exact epoch points
 * (fork/join fused on one queue pair, three queues and two devices), launch dependencies,
 * hsad_queue_barrier as an ordering point. Run with kfd-emu's default reordering of
 * non-barrier dispatches (last-first) and KFD_EMU_READ_INDEX=launch (make test): a missing
 * ordering shows as a wrong sum or ticket, not as a timing. */
#include <hsa/amd_hsa_signal.h>
#include <stdlib.h>

#include "fusion/hsad_fusion.h"
#include "hsa-dispatch/hsad_submit.h"
#include "memory/hsad_memory.h"
#include "tests/test_dispatch_util.h"
#include "tests/test_dispatch_exact.h"

#define BAR(w) (((w) >> HSA_PACKET_HEADER_BARRIER) & 1u)
#define TYPE(w) (((w) >> HSA_PACKET_HEADER_TYPE) & 0xffu)

static uint32_t pkt_word(const hsad_graph_exec_t *x, uint32_t qi, uint32_t i, int32_t *node) {
  uint8_t b[64];
  TH_OK(hsad_graph_exec_packet(x, qi, i, b, node));
  uint32_t w;
  memcpy(&w, b, 4);
  return w;
}

static uint32_t f2u(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

/* Kernels of these tests: fill (dst[i] = value), saxpy (y = a x + y), order_record (tickets). */
typedef struct kit {
  th_env_t e;
  hsad_program_t *pf, *ps, *po;
  const hsad_device_kernel_t *fill, *saxpy, *rec;
} kit_t;

static void kit_open(kit_t *t) {
  th_open(&t->e);
  t->pf = th_load(&t->e, "fill", 5, "fill", &t->fill);
  t->ps = th_load(&t->e, "saxpy", 5, "saxpy", &t->saxpy);
  t->po = th_load(&t->e, "order_record", 5, "order_record", &t->rec);
}

static void kit_close(kit_t *t) {
  hsad_program_destroy(t->po);
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

static void fill_set(fill_args_t *f, uint32_t *dst, uint32_t value, uint32_t n) {
  f->value = value;
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

/* An order_record node: slots[index] = ticket. */
static uint32_t rec(hsad_graph_t *g, const char *name, uint32_t lane, const kit_t *t,
                    uint32_t *counter, uint32_t *slots, uint32_t index, const uint32_t *deps,
                    uint32_t nd) {
  hsad_karg_t a[3] = {HSAD_KARG_PTR(counter), HSAD_KARG_PTR(slots), HSAD_KARG_VAL(index)};
  hsad_launch_t l = {.dims = 1, .grid = {1}, .block = {1}, .args = a, .arg_count = 3};
  uint32_t id = 0;
  TH_OK(hsad_graph_add_kernel(g, name, lane, t->rec, &l, deps, nd, &id));
  return id;
}

/* Issue 17's first wrong result: A: fill(p, L) -> B: acc += p, launched 1,000 times back to
 * back with hsad_graph_exec_update of A before each launch and no host wait. Stream order
 * gives acc = 0 + 1 + ... + 999 = 499500 in every element (exact in float); without the
 * stream-order BARRIER bit on the run's first packet, A of launch i + 1 overwrote p while B of
 * launch i read it (5049 instead of 4950 for 100 launches). */
Test(fusion_order, back_to_back_launches_with_updates, .timeout = 120) {
  kit_t t;
  kit_open(&t);
  hsad_queue_t *q = th_queue(&t.e, 64);
  enum { N = 48, LAUNCHES = 1000 };
  uint32_t *p = th_alloc(&t.e, N * 4);
  float *acc = th_alloc(&t.e, N * 4);
  memset(acc, 0, N * 4);
  fill_args_t fa;
  saxpy_args_t sa;
  fill_set(&fa, p, f2u(0.0f), N);
  saxpy_set(&sa, (const float *)p, acc, N);
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t a, b;
  TH_OK(hsad_graph_add_kernel(g, "A", 0, t.fill, &fa.l, NULL, 0, &a));
  TH_OK(hsad_graph_add_kernel(g, "B", 0, t.saxpy, &sa.l, &a, 1, &b));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  hsad_completion_t done = {0};
  for (uint32_t l = 0; l < LAUNCHES; l++) {
    fill_set(&fa, p, f2u((float)l), N);
    TH_OK(hsad_graph_exec_update(x, a, &fa.l));
    TH_OK(hsad_graph_launch(x, 0, th_in(10 * TH_SEC), &done, NULL));
  }
  TH_OK(hsad_completion_wait(&done, th_in(30 * TH_SEC)));
  for (uint32_t i = 0; i < N; i++)
    cr_assert_eq(acc[i], 499500.0f, "acc[%u] = %.1f, stream order gives 499500", i, acc[i]);
  uint64_t counts[HSAD_GRAPH_ROLLBACK_COUNT];
  hsad_graph_exec_counters(x, counts);
  cr_assert_eq(counts[HSAD_GRAPH_ROLLBACK_NONE], LAUNCHES);
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q);
  kit_close(&t);
}

/* A graph between plain dispatches on its queue, no host wait anywhere: fill(p, i) (fire and
 * forget) -> graph [B: acc += p (root), C: fill(p, 100) after B] -> acc += p (fire and
 * forget). Stream order: each round adds i + 100; 50 rounds give 1225 + 5000 = 6225. The
 * graph's root read the old p before the stream-order rule. */
Test(fusion_order, between_plain_dispatches, .timeout = 120) {
  kit_t t;
  kit_open(&t);
  hsad_queue_t *q = th_queue(&t.e, 64);
  enum { N = 40, ROUNDS = 50 };
  uint32_t *p = th_alloc(&t.e, N * 4);
  float *acc = th_alloc(&t.e, N * 4);
  memset(acc, 0, N * 4);
  memset(p, 0, N * 4);
  fill_args_t fc, fplain;
  saxpy_args_t sb;
  fill_set(&fc, p, f2u(100.0f), N);
  saxpy_set(&sb, (const float *)p, acc, N);
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t b, c;
  TH_OK(hsad_graph_add_kernel(g, "B", 0, t.saxpy, &sb.l, NULL, 0, &b));
  TH_OK(hsad_graph_add_kernel(g, "C", 0, t.fill, &fc.l, &b, 1, &c));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  for (uint32_t r = 0; r < ROUNDS; r++) {
    fill_set(&fplain, p, f2u((float)r), N);
    TH_OK(hsad_kernel_dispatch(q, t.fill, &fplain.l, th_in(10 * TH_SEC), NULL, NULL));
    TH_OK(hsad_graph_launch(x, 0, th_in(10 * TH_SEC), NULL, NULL));
    TH_OK(hsad_kernel_dispatch(q, t.saxpy, &sb.l, th_in(10 * TH_SEC), NULL, NULL));
  }
  TH_OK(hsad_queue_wait_idle(q, th_in(30 * TH_SEC)));
  for (uint32_t i = 0; i < N; i++)
    cr_assert_eq(acc[i], 6225.0f, "acc[%u] = %.1f, stream order gives 6225", i, acc[i]);
  for (uint32_t i = 0; i < N; i++) cr_assert_eq(p[i], f2u(100.0f));
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q);
  kit_close(&t);
}

/* HSAD_GRAPH_UNORDERED publishes the first packet without the BARRIER bit (the precomputed
 * word keeps it): the ring shows both. Unknown flags are refused. */
Test(fusion_order, unordered_flag_drops_only_the_first_bit, .timeout = 60) {
  kit_t t;
  kit_open(&t);
  hsad_queue_t *q = th_queue(&t.e, 64);
  uint32_t *counter = th_alloc(&t.e, 4), *slots = th_alloc(&t.e, 16);
  *counter = 0;
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  rec(g, "A", 0, &t, counter, slots, 0, NULL, 0);
  rec(g, "B", 0, &t, counter, slots, 1, NULL, 0);
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  /* A (stream order), B (independent), the epoch barrier-AND */
  cr_assert_eq(hsad_graph_exec_packet_count(x, 0), 3);
  cr_assert_eq(BAR(pkt_word(x, 0, 0, NULL)), 1);
  cr_assert_eq(BAR(pkt_word(x, 0, 1, NULL)), 0);
  cr_assert_eq(pkt_word(x, 0, 2, NULL), 0x1503u);
  hsad_completion_t c;
  TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), &c, NULL));
  TH_OK(hsad_graph_launch(x, HSAD_GRAPH_UNORDERED, th_in(TH_SEC), &c, NULL));
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  cr_assert_eq(*counter, 4);
  TH_ERR_IS(hsad_graph_launch(x, 1u << 7, th_in(TH_SEC), &c, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_launch: unknown flags 0x80");
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q);
  kit_close(&t);
}

/* The fork/join diamond across two queues: A (queue 0) -> B (queue 0), A -> C (queue 1),
 * B -> D, C -> D (queue 0). It fuses (it used to roll back on every launch as "cross-queue
 * edges both ways"): queue 0 = A (BARRIER, epoch point 0: C waits for exactly it), B
 * (BARRIER), barrier-value on queue 1's point 0, D (BARRIER, epoch point 1); queue 1 =
 * barrier-value on queue 0's point 0 (stream-order BARRIER), C (a producer: BARRIER bit, its
 * own point 0: no barrier-AND after it). */
Test(fusion_order, fork_join_two_queues_fused, .timeout = 60) {
  kit_t t;
  kit_open(&t);
  hsad_queue_t *q[2] = {th_queue(&t.e, 64), th_queue(&t.e, 64)};
  uint32_t *counter = th_alloc(&t.e, 4), *slots = th_alloc(&t.e, 16);
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t a = rec(g, "A", 0, &t, counter, slots, 0, NULL, 0);
  uint32_t b = rec(g, "B", 0, &t, counter, slots, 1, &a, 1);
  uint32_t c = rec(g, "C", 1, &t, counter, slots, 2, &a, 1);
  rec(g, "D", 0, &t, counter, slots, 3, (uint32_t[]){b, c}, 2);
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, q, 2, &x));
  hsad_graph_destroy(g);
  cr_assert_eq(hsad_graph_exec_queue_count(x), 2);
  cr_assert_eq(hsad_graph_exec_queue(x, 0), q[0]);
  cr_assert_eq(hsad_graph_exec_packet_count(x, 0), 4);
  cr_assert_eq(hsad_graph_exec_packet_count(x, 1), 2);
  const int32_t want_node0[4] = {0, 1, -1, 3}, want_node1[2] = {-1, 2};
  const uint32_t want_bar0[4] = {1, 1, 0, 1}, want_bar1[2] = {1, 1};
  for (uint32_t i = 0; i < 4; i++) {
    int32_t node;
    uint32_t w = pkt_word(x, 0, i, &node);
    cr_assert_eq(node, want_node0[i], "queue 0 packet %u node %d", i, node);
    cr_assert_eq(BAR(w), want_bar0[i], "queue 0 packet %u barrier", i);
    cr_assert_eq(TYPE(w), i == 2 ? HSA_PACKET_TYPE_VENDOR_SPECIFIC
                                 : HSA_PACKET_TYPE_KERNEL_DISPATCH);
  }
  for (uint32_t i = 0; i < 2; i++) {
    int32_t node;
    uint32_t w = pkt_word(x, 1, i, &node);
    cr_assert_eq(node, want_node1[i], "queue 1 packet %u node %d", i, node);
    cr_assert_eq(BAR(w), want_bar1[i], "queue 1 packet %u barrier", i);
  }
  cr_assert_eq(pkt_word(x, 1, 0, NULL),
               0x1500u | ((uint32_t)HSA_AMD_PACKET_TYPE_BARRIER_VALUE << 16));
  uint32_t pt;
  cr_assert_eq(hsad_graph_exec_point_count(x, 0), 2);
  TH_OK(hsad_graph_exec_point(x, 0, 0, &pt));
  cr_assert_eq(pt, 0);
  TH_OK(hsad_graph_exec_point(x, 0, 1, &pt));
  cr_assert_eq(pt, 3);
  cr_assert_eq(hsad_graph_exec_point_count(x, 1), 1);
  TH_OK(hsad_graph_exec_point(x, 1, 0, &pt));
  cr_assert_eq(pt, 1);
  /* from the second launch on, queue 0 (the root's) starts with a barrier-value packet on
   * queue 1's previous run: a node of this launch must not start before every node of the
   * previous one completed (stream order over the whole exec, as cuGraphLaunch) */
  uint64_t end0 = 0;
  for (uint32_t round = 1; round <= 20; round++) {
    *counter = 0;
    memset(slots, 0xff, 16);
    hsad_completion_t done[2];
    hsad_graph_rollback_t why;
    TH_OK(hsad_graph_launch(x, HSAD_GRAPH_NO_ROLLBACK, th_in(TH_SEC), done, &why));
    cr_assert_eq(why, HSAD_GRAPH_ROLLBACK_NONE);
    TH_OK(hsad_completion_wait_all(done, 2, th_in(10 * TH_SEC)));
    uint32_t pre = round > 1;
    uint64_t first0 = end0;
    end0 += 4 + pre;
    cr_assert_eq(done[0].epoch, 2 * round);
    cr_assert_eq(done[1].epoch, round);
    cr_assert_eq(done[0].packet_id, end0 - 1);
    cr_assert_eq(done[1].packet_id, 2 * round - 1);
    cr_assert_eq(slots[0], 0, "round %u: A ticket %u", round, slots[0]);
    cr_assert_eq(slots[3], 3, "round %u: D ticket %u", round, slots[3]);
    cr_assert(slots[1] + slots[2] == 3 && slots[1] != slots[2], "round %u: B %u C %u", round,
              slots[1], slots[2]);
    /* the barrier-value packets in the rings wait for exactly the producer's point */
    const hsa_amd_barrier_value_packet_t *bv1 =
        (const hsa_amd_barrier_value_packet_t *)th_packet(q[1], 2 * (round - 1));
    const hsa_amd_barrier_value_packet_t *bv0 =
        (const hsa_amd_barrier_value_packet_t *)th_packet(q[0], first0 + pre + 2);
    hsa_signal_t s0, s1;
    hsa_signal_value_t lt;
    hsad_completion_t a_point = {.queue = q[0], .epoch = 2 * round - 1};
    TH_OK(hsad_completion_signal(&a_point, &s0, &lt));
    cr_assert_eq(bv1->signal.handle, s0.handle);
    cr_assert_eq(bv1->value, HSAD_EPOCH_BASE - (int64_t)(2 * round - 1) + 1);
    TH_OK(hsad_completion_signal(&done[1], &s1, &lt));
    cr_assert_eq(bv0->signal.handle, s1.handle);
    cr_assert_eq(bv0->value, HSAD_EPOCH_BASE - (int64_t)round + 1);
    cr_assert_eq(bv0->cond, HSA_SIGNAL_CONDITION_LT);
    cr_assert_eq(bv0->mask, -1);
    if (pre) {
      const hsa_amd_barrier_value_packet_t *head =
          (const hsa_amd_barrier_value_packet_t *)th_packet(q[0], first0);
      cr_assert_eq(head->signal.handle, s1.handle);
      cr_assert_eq(head->value, HSAD_EPOCH_BASE - (int64_t)(round - 1) + 1);
    }
  }
  uint64_t counts[HSAD_GRAPH_ROLLBACK_COUNT];
  hsad_graph_exec_counters(x, counts);
  cr_assert_eq(counts[HSAD_GRAPH_ROLLBACK_NONE], 20);
  cr_assert_eq(counts[HSAD_GRAPH_ROLLBACK_QUEUE_CYCLE], 0);
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q[1]);
  hsad_queue_destroy(q[0]);
  kit_close(&t);
}

/* Fork/join over three queues with edges both ways between each pair, data checked: A (q0)
 * writes p0; B (q1) and C (q2) each add p0 into their own buffer; D (q0) adds both into acc;
 * E (q1) and F (q2) then add acc into theirs (edges from q0 back to q1 and q2). 60 launches
 * back to back, no host wait: every value exact (integers below 2^24). */
Test(fusion_order, fork_join_three_queues, .timeout = 120) {
  kit_t t;
  kit_open(&t);
  hsad_queue_t *q[3] = {th_queue(&t.e, 64), th_queue(&t.e, 64), th_queue(&t.e, 64)};
  enum { N = 32, LAUNCHES = 60 };
  uint32_t *p0 = th_alloc(&t.e, N * 4);
  float *b1 = th_alloc(&t.e, N * 4), *c2 = th_alloc(&t.e, N * 4), *acc = th_alloc(&t.e, N * 4);
  float *e1 = th_alloc(&t.e, N * 4), *f2 = th_alloc(&t.e, N * 4);
  memset(b1, 0, N * 4), memset(c2, 0, N * 4), memset(acc, 0, N * 4);
  memset(e1, 0, N * 4), memset(f2, 0, N * 4);
  fill_args_t fa;
  saxpy_args_t sb, sc, sd1, sd2, se, sf;
  fill_set(&fa, p0, f2u(1.0f), N);
  saxpy_set(&sb, (const float *)p0, b1, N);
  saxpy_set(&sc, (const float *)p0, c2, N);
  saxpy_set(&sd1, b1, acc, N);
  saxpy_set(&sd2, c2, acc, N);
  saxpy_set(&se, acc, e1, N);
  saxpy_set(&sf, acc, f2, N);
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t a, b, c, d1, d2, e, f;
  TH_OK(hsad_graph_add_kernel(g, "A", 0, t.fill, &fa.l, NULL, 0, &a));
  TH_OK(hsad_graph_add_kernel(g, "B", 1, t.saxpy, &sb.l, &a, 1, &b));
  TH_OK(hsad_graph_add_kernel(g, "C", 2, t.saxpy, &sc.l, &a, 1, &c));
  TH_OK(hsad_graph_add_kernel(g, "D1", 0, t.saxpy, &sd1.l, &b, 1, &d1));
  TH_OK(hsad_graph_add_kernel(g, "D2", 0, t.saxpy, &sd2.l, (uint32_t[]){c, d1}, 2, &d2));
  TH_OK(hsad_graph_add_kernel(g, "E", 1, t.saxpy, &se.l, (uint32_t[]){d2, b}, 2, &e));
  TH_OK(hsad_graph_add_kernel(g, "F", 2, t.saxpy, &sf.l, (uint32_t[]){d2, c}, 2, &f));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, q, 3, &x));
  hsad_graph_destroy(g);
  cr_assert_eq(hsad_graph_exec_queue_count(x), 3);
  /* queue 0: A (BARRIER, point 0: B and C wait for it), barrier-value on B's point, D1,
   * barrier-value on C's point, D2 (BARRIER: D1 before it; point 1: E and F wait for it);
   * queues 1 and 2: barrier-value on A's point, B / C (BARRIER, point 0), barrier-value on
   * D2's point, E / F (BARRIER: B / C before it; point 1, the run's completion) */
  static const int32_t want_node[3][5] = {{0, -1, 3, -1, 4}, {-1, 1, -1, 5}, {-1, 2, -1, 6}};
  static const uint32_t want_type[3][5] = {{2, 0, 2, 0, 2}, {0, 2, 0, 2}, {0, 2, 0, 2}};
  static const uint32_t want_bar[3][5] = {{1, 0, 0, 0, 1}, {1, 1, 0, 1}, {1, 1, 0, 1}};
  static const uint32_t want_points[3][2] = {{0, 4}, {1, 3}, {1, 3}};
  for (uint32_t qi = 0; qi < 3; qi++) {
    uint32_t np = qi ? 4 : 5;
    cr_assert_eq(hsad_graph_exec_packet_count(x, qi), np, "queue %u", qi);
    for (uint32_t i = 0; i < np; i++) {
      int32_t node;
      uint32_t w = pkt_word(x, qi, i, &node);
      cr_assert_eq(node, want_node[qi][i], "queue %u packet %u node %d", qi, i, node);
      cr_assert_eq(TYPE(w), want_type[qi][i], "queue %u packet %u type", qi, i);
      cr_assert_eq(BAR(w), want_bar[qi][i], "queue %u packet %u barrier", qi, i);
    }
    cr_assert_eq(hsad_graph_exec_point_count(x, qi), 2);
    for (uint32_t j = 0; j < 2; j++) {
      uint32_t pt;
      TH_OK(hsad_graph_exec_point(x, qi, j, &pt));
      cr_assert_eq(pt, want_points[qi][j], "queue %u point %u at %u", qi, j, pt);
    }
  }
  hsad_completion_t done[3];
  for (uint32_t l = 1; l <= LAUNCHES; l++) {
    fill_set(&fa, p0, f2u((float)l), N);
    TH_OK(hsad_graph_exec_update(x, a, &fa.l));
    hsad_graph_rollback_t why;
    TH_OK(hsad_graph_launch(x, 0, th_in(10 * TH_SEC), done, &why));
    cr_assert_eq(why, HSAD_GRAPH_ROLLBACK_NONE);
  }
  TH_OK(hsad_completion_wait_all(done, 3, th_in(30 * TH_SEC)));
  /* after launch l: b1 = c2 = sum(1..l) = S(l), acc = 2 sum_k S(k), e1 = f2 = sum_k acc(k) */
  double s = 0, accv = 0, ev = 0;
  for (uint32_t l = 1; l <= LAUNCHES; l++) {
    s += l;
    accv += 2 * s;
    ev += accv;
  }
  for (uint32_t i = 0; i < N; i++) {
    cr_assert_eq(b1[i], (float)s, "b1[%u] = %.1f, want %.1f", i, b1[i], s);
    cr_assert_eq(c2[i], (float)s, "c2[%u]", i);
    cr_assert_eq(acc[i], (float)accv, "acc[%u] = %.1f, want %.1f", i, acc[i], accv);
    cr_assert_eq(e1[i], (float)ev, "e1[%u] = %.1f, want %.1f", i, e1[i], ev);
    cr_assert_eq(f2[i], (float)ev, "f2[%u]", i);
  }
  hsad_graph_exec_destroy(x);
  for (int i = 2; i >= 0; i--) hsad_queue_destroy(q[i]);
  kit_close(&t);
}

/* Launch dependencies: a kernel on another queue (delayed 20 ms by kfd-emu) fills p; the graph
 * (root: acc += p) launched after its completion reads the filled values, with no host wait.
 * The ring shows the barrier-value packet at the head of the run (stream-order BARRIER bit,
 * the producer queue's epoch signal and threshold). A dependency on the graph's own queue
 * costs no packet; an epoch never issued is refused, nothing reserved. */
Test(fusion_order, launch_after_kernel_on_other_queue, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "20000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "fill", 1);
  kit_t t;
  kit_open(&t);
  hsad_queue_t *q = th_queue(&t.e, 64), *other = th_queue(&t.e, 64);
  enum { N = 16 };
  uint32_t *p = th_alloc(&t.e, N * 4);
  float *acc = th_alloc(&t.e, N * 4);
  memset(p, 0, N * 4);
  memset(acc, 0, N * 4);
  saxpy_args_t sb;
  saxpy_set(&sb, (const float *)p, acc, N);
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  TH_OK(hsad_graph_add_kernel(g, "B", 0, t.saxpy, &sb.l, NULL, 0, NULL));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  fill_args_t fa;
  hsad_completion_t filled, own, done;
  for (uint32_t r = 1; r <= 3; r++) {
    fill_set(&fa, p, f2u((float)(10 * r)), N);
    TH_OK(hsad_kernel_dispatch(other, t.fill, &fa.l, th_in(TH_SEC), &filled, NULL));
    TH_OK(hsad_queue_flush(q, th_in(TH_SEC), &own)); /* a same-queue dependency: no packet */
    uint64_t w0 = ((amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id;
    TH_OK(hsad_graph_launch_after(x, 0, (hsad_completion_t[]){filled, own, {0}}, 3,
                                  th_in(TH_SEC), &done, NULL));
    uint64_t w1 = ((amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id;
    cr_assert_eq(w1 - w0, 2, "one barrier-value packet and the kernel (it carries the epoch)");
    const hsa_amd_barrier_value_packet_t *bv =
        (const hsa_amd_barrier_value_packet_t *)th_packet(q, w0);
    hsa_signal_t sig;
    hsa_signal_value_t lt;
    TH_OK(hsad_completion_signal(&filled, &sig, &lt));
    cr_assert_eq(bv->signal.handle, sig.handle);
    cr_assert_eq(bv->value, lt);
    cr_assert_eq(bv->cond, HSA_SIGNAL_CONDITION_LT);
    cr_assert_eq(bv->completion_signal.handle, 0);
    TH_OK(hsad_completion_wait(&done, th_in(10 * TH_SEC)));
    float want = 10.0f * (float)(r * (r + 1) / 2);
    for (uint32_t i = 0; i < N; i++)
      cr_assert_eq(acc[i], want, "round %u: acc[%u] = %.1f, want %.1f (read p before the fill)",
                   r, i, acc[i], want);
  }
  hsad_completion_t never = {.queue = other, .epoch = 1000};
  uint64_t w0 = ((amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id;
  char want[256];
  snprintf(want, sizeof want, "dependency 1: epoch 1000 was never issued on queue %llu (last "
           "epoch 3)", (unsigned long long)hsad_queue_hsa(other)->id);
  TH_ERR_IS(hsad_graph_launch_after(x, 0, (hsad_completion_t[]){filled, never}, 2, th_in(TH_SEC),
                                    &done, NULL),
            HSAD_ERR_INVALID_ARGUMENT, "%s", want);
  cr_assert_eq(((amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id, w0, "nothing reserved");
  TH_ERR_IS(hsad_graph_launch_after(x, 0, NULL, 1, th_in(TH_SEC), &done, NULL),
            HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_launch: NULL deps with a count of 1");
  /* the rollback path takes the dependency as a barrier */
  fill_set(&fa, p, f2u(1000.0f), N);
  TH_OK(hsad_kernel_dispatch(other, t.fill, &fa.l, th_in(TH_SEC), &filled, NULL));
  hsad_graph_rollback_t why;
  TH_OK(hsad_graph_launch_after(x, HSAD_GRAPH_SEQUENTIAL, &filled, 1, th_in(TH_SEC), &done, &why));
  cr_assert_eq(why, HSAD_GRAPH_ROLLBACK_REQUESTED);
  TH_OK(hsad_completion_wait(&done, th_in(10 * TH_SEC)));
  for (uint32_t i = 0; i < N; i++) cr_assert_eq(acc[i], 1060.0f, "acc[%u] = %.1f", i, acc[i]);
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(other);
  hsad_queue_destroy(q);
  kit_close(&t);
}

/* Launch dependency on an asynchronous copy (the device's copy queue): 64 KiB host -> device,
 * then a graph whose root adds the copied values; the copy blit is delayed 20 ms. */
Test(fusion_order, launch_after_async_copy, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "20000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "CopyAligned", 1);
  kit_t t;
  kit_open(&t);
  hsad_queue_t *q = th_queue(&t.e, 64);
  enum { N = 16384 };
  float *src = NULL, *dst = NULL, *acc = NULL;
  TH_OK(hsad_mem_alloc(t.e.dev, HSAD_MEM_HOST_FINE, N * 4, NULL, 0, (void **)&src));
  TH_OK(hsad_mem_alloc(t.e.dev, HSAD_MEM_DEVICE, N * 4, NULL, 0, (void **)&dst));
  acc = th_alloc(&t.e, N * 4);
  for (uint32_t i = 0; i < N; i++) src[i] = (float)(i % 1000), acc[i] = 0;
  saxpy_args_t sb;
  saxpy_set(&sb, dst, acc, N);
  sb.l.block[0] = 256;
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  TH_OK(hsad_graph_add_kernel(g, "B", 0, t.saxpy, &sb.l, NULL, 0, NULL));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  hsad_completion_t copied, done;
  TH_OK(hsad_memcpy_async(t.e.dev, dst, src, N * 4, NULL, 0, NULL, th_in(TH_SEC), &copied));
  TH_OK(hsad_graph_launch_after(x, 0, &copied, 1, th_in(TH_SEC), &done, NULL));
  TH_OK(hsad_completion_wait(&done, th_in(10 * TH_SEC)));
  for (uint32_t i = 0; i < N; i++)
    cr_assert_eq(acc[i], (float)(i % 1000), "acc[%u] = %.1f: the root ran before the copy", i,
                 acc[i]);
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q);
  TH_OK(hsad_mem_free(dst));
  TH_OK(hsad_mem_free(src));
  kit_close(&t);
}

/* Two devices (KFD_EMU_GPUS=2): the fork/join with its side node on device 1, edges both
 * ways across devices, fused, tickets exact over 20 launches. */
Test(fusion_order, fork_join_two_devices, .timeout = 60) {
  setenv("KFD_EMU_GPUS", "2", 1);
  kit_t t;
  kit_open(&t);
  hsad_device_t *d1;
  TH_OK(hsad_device_get(t.e.rt, 1, &d1));
  hsad_queue_t *q[2] = {th_queue(&t.e, 64), NULL};
  TH_OK(hsad_queue_create(d1, &(hsad_queue_options_t){.size = 64}, &q[1]));
  char path[512];
  snprintf(path, sizeof path, "%s/order_record-%s-v5.hsaco", TEST_KERNDIR,
           hsad_device_info(d1)->name);
  hsad_program_t *p1;
  TH_OK(hsad_program_load_file(d1, path, &p1));
  const hsad_device_kernel_t *rec1;
  TH_OK(hsad_program_kernel(p1, "order_record", &rec1));
  uint32_t *counter, *slots;
  TH_OK(hsad_mem_alloc(t.e.dev, HSAD_MEM_HOST_FINE, 4, &d1, 1, (void **)&counter));
  TH_OK(hsad_mem_alloc(t.e.dev, HSAD_MEM_HOST_FINE, 16, &d1, 1, (void **)&slots));
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t a = rec(g, "A", 0, &t, counter, slots, 0, NULL, 0);
  uint32_t b = rec(g, "B", 0, &t, counter, slots, 1, &a, 1);
  hsad_karg_t ca[3] = {HSAD_KARG_PTR(counter), HSAD_KARG_PTR(slots), HSAD_KARG_VAL((uint32_t){2})};
  hsad_launch_t cl = {.dims = 1, .grid = {1}, .block = {1}, .args = ca, .arg_count = 3};
  uint32_t c;
  TH_OK(hsad_graph_add_kernel(g, "C", 1, rec1, &cl, &a, 1, &c));
  rec(g, "D", 0, &t, counter, slots, 3, (uint32_t[]){b, c}, 2);
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, q, 2, &x));
  hsad_graph_destroy(g);
  for (uint32_t round = 0; round < 20; round++) {
    *counter = 0;
    memset(slots, 0xff, 16);
    hsad_completion_t done[2];
    hsad_graph_rollback_t why;
    TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), done, &why));
    cr_assert_eq(why, HSAD_GRAPH_ROLLBACK_NONE);
    TH_OK(hsad_completion_wait_all(done, 2, th_in(10 * TH_SEC)));
    cr_assert_eq(slots[0], 0);
    cr_assert_eq(slots[3], 3);
    cr_assert(slots[1] + slots[2] == 3 && slots[1] != slots[2]);
  }
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q[1]);
  hsad_queue_destroy(q[0]);
  hsad_program_destroy(p1);
  TH_OK(hsad_mem_free(slots));
  TH_OK(hsad_mem_free(counter));
  kit_close(&t);
}

/* issue 18's untested path: hsad_graph_exec_update, then hsad_graph_exec_set_queue, then a
 * launch: the updated arguments run on the new queue. A profiling queue for a plain one is
 * refused with the reason. */
Test(fusion_order, update_then_set_queue, .timeout = 60) {
  kit_t t;
  kit_open(&t);
  hsad_queue_t *q = th_queue(&t.e, 64), *q2 = th_queue(&t.e, 64), *prof;
  TH_OK(hsad_queue_create(t.e.dev, &(hsad_queue_options_t){.size = 64, .profiling = true}, &prof));
  enum { N = 8 };
  uint32_t *p = th_alloc(&t.e, N * 4);
  fill_args_t fa;
  fill_set(&fa, p, 1, N);
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t a;
  TH_OK(hsad_graph_add_kernel(g, "A", 0, t.fill, &fa.l, NULL, 0, &a));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  fill_set(&fa, p, 77, N - 2);
  memset(p, 0, N * 4);
  TH_OK(hsad_graph_exec_update(x, a, &fa.l));
  TH_OK(hsad_graph_exec_set_queue(x, 0, q2));
  hsad_completion_t done;
  TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), &done, NULL));
  cr_assert_eq(done.queue, q2);
  TH_OK(hsad_completion_wait(&done, th_in(10 * TH_SEC)));
  for (uint32_t i = 0; i < N; i++) cr_assert_eq(p[i], i < N - 2 ? 77u : 0u, "p[%u] = %u", i, p[i]);
  cr_assert_eq(((amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id, 0);
  TH_ERR_IS(hsad_graph_exec_set_queue(x, 0, prof), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_exec_set_queue: the new queue is a profiling queue and queue 0 is not "
            "(where epoch packets go is laid out at instantiate); instantiate the graph on it "
            "instead");
  cr_assert_eq(hsad_graph_exec_queue(x, 0), q2);
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(prof);
  hsad_queue_destroy(q2);
  hsad_queue_destroy(q);
  kit_close(&t);
}

/* What the tests above never combine: a fork/join over two queues of 64 slots (runs wrap the
 * rings), A: fill(p, l) on queue 0 -> B: acc += p on queue 1 -> C: acc2 += acc on queue 0,
 * A updated before every launch, 600 launches back to back with no host wait, and after 300
 * both queues moved (hsad_graph_exec_set_queue) to two other queues while launches are in
 * flight. Stream order: acc = 0 + 1 + ... + 599 = 179700 in every element, and acc2 the sum of
 * acc's running values (599 * 600 * 601 / 6 = 35999900, 35999904 in float). Before
 * set_queue waited for the old queue's run, launch 300's fill overwrote p while launch 299's
 * B still read it (acc 179668-179683). */
Test(fusion_order, fork_join_updates_wrap_and_move, .timeout = 120) {
  kit_t t;
  kit_open(&t);
  hsad_queue_t *q[4] = {th_queue(&t.e, 64), th_queue(&t.e, 64), th_queue(&t.e, 64),
                        th_queue(&t.e, 64)};
  enum { N = 16, LAUNCHES = 600 };
  uint32_t *p = th_alloc(&t.e, N * 4);
  float *acc = th_alloc(&t.e, N * 4), *acc2 = th_alloc(&t.e, N * 4);
  memset(acc, 0, N * 4);
  memset(acc2, 0, N * 4);
  fill_args_t fa;
  saxpy_args_t sb, sc;
  fill_set(&fa, p, f2u(0.0f), N);
  saxpy_set(&sb, (const float *)p, acc, N);
  saxpy_set(&sc, acc, acc2, N);
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t a, b, c;
  TH_OK(hsad_graph_add_kernel(g, "A", 0, t.fill, &fa.l, NULL, 0, &a));
  TH_OK(hsad_graph_add_kernel(g, "B", 1, t.saxpy, &sb.l, &a, 1, &b));
  TH_OK(hsad_graph_add_kernel(g, "C", 0, t.saxpy, &sc.l, &b, 1, &c));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, q, 2, &x));
  hsad_graph_destroy(g);
  hsad_completion_t done[2] = {{0}};
  for (uint32_t l = 0; l < LAUNCHES; l++) {
    if (l == LAUNCHES / 2)
      for (uint32_t qi = 0; qi < 2; qi++)
        TH_OK(hsad_graph_exec_set_queue(x, qi, q[2 + (hsad_graph_exec_queue(x, qi) == q[1])]));
    fill_set(&fa, p, f2u((float)l), N);
    TH_OK(hsad_graph_exec_update(x, a, &fa.l));
    TH_OK(hsad_graph_launch(x, 0, th_in(10 * TH_SEC), done, NULL));
  }
  TH_OK(hsad_completion_wait_all(done, 2, th_in(30 * TH_SEC)));
  float want_acc = 0, want_acc2 = 0; /* the same float additions in stream order */
  for (uint32_t l = 0; l < LAUNCHES; l++) {
    want_acc += (float)l;
    want_acc2 += want_acc;
  }
  cr_assert_eq(want_acc, 179700.0f);
  cr_assert_eq(want_acc2, 35999904.0f); /* 35,999,900 rounded to float (spacing 4 there) */
  for (uint32_t i = 0; i < N; i++) {
    cr_assert_eq(acc[i], want_acc, "acc[%u] = %.1f, stream order gives 179700", i, acc[i]);
    cr_assert_eq(acc2[i], want_acc2, "acc2[%u] = %.1f, stream order gives %.1f", i, acc2[i],
                 want_acc2);
  }
  uint64_t counts[HSAD_GRAPH_ROLLBACK_COUNT];
  hsad_graph_exec_counters(x, counts);
  cr_assert_eq(counts[HSAD_GRAPH_ROLLBACK_NONE], LAUNCHES);
  hsad_graph_exec_destroy(x);
  for (int i = 0; i < 4; i++) hsad_queue_destroy(q[i]);
  kit_close(&t);
}

/* hsad_queue_barrier with no dependency and no completion writes one barrier-AND (BARRIER
 * bit, system fences; no dep_signal, no completion signal): a dispatch after
 * it with HSAD_LAUNCH_NO_BARRIER still starts only when the delayed fill before it completed. */
Test(fusion_order, queue_barrier_is_an_ordering_point, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "20000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "fill", 1);
  kit_t t;
  kit_open(&t);
  hsad_queue_t *q = th_queue(&t.e, 64);
  enum { N = 16 };
  uint32_t *p = th_alloc(&t.e, N * 4);
  float *acc = th_alloc(&t.e, N * 4);
  memset(p, 0, N * 4);
  memset(acc, 0, N * 4);
  fill_args_t fa;
  saxpy_args_t sb;
  fill_set(&fa, p, f2u(5.0f), N);
  saxpy_set(&sb, (const float *)p, acc, N);
  sb.l.flags = HSAD_LAUNCH_NO_BARRIER;
  TH_OK(hsad_kernel_dispatch(q, t.fill, &fa.l, th_in(TH_SEC), NULL, NULL));
  TH_OK(hsad_queue_barrier(q, NULL, 0, th_in(TH_SEC), NULL));
  cr_assert_eq(((amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id, 2);
  const hsa_barrier_and_packet_t *bp = (const hsa_barrier_and_packet_t *)th_packet(q, 1);
  for (int i = 0; i < 5; i++) cr_assert_eq(bp->dep_signal[i].handle, 0);
  cr_assert_eq(bp->completion_signal.handle, 0);
  TH_OK(hsad_kernel_dispatch(q, t.saxpy, &sb.l, th_in(TH_SEC), NULL, NULL));
  TH_OK(hsad_queue_wait_idle(q, th_in(10 * TH_SEC)));
  for (uint32_t i = 0; i < N; i++) cr_assert_eq(acc[i], 5.0f, "acc[%u] = %.1f", i, acc[i]);
  hsad_queue_destroy(q);
  kit_close(&t);
}

/* ---- copy and fill nodes ------------------------------------------------------------------- */

/* Fill (2-byte pattern, 501 elements: 1002 bytes, not a multiple of 16) on queue 0 -> copy to
 * another buffer on queue 1. 100 launches back to back with hsad_graph_exec_update_fill before
 * each, no host wait: b holds the last pattern, nothing past the 1002 bytes is written. The
 * copy node's packet: grid 63 (ceil(1002 / 16)), workgroup 63; its kernarg segment in the ring:
 * dst, src, 1002 (hsad_graph_copy's arguments). */
Test(fusion_copy, fill_then_copy_across_queues, .timeout = 120) {
  kit_t t;
  kit_open(&t);
  hsad_queue_t *q[2] = {th_queue(&t.e, 64), th_queue(&t.e, 64)};
  enum { COUNT = 501, BYTES = 2 * COUNT };
  uint8_t *a = th_alloc(&t.e, 4096), *b = th_alloc(&t.e, 4096);
  memset(a, 0xee, 4096);
  memset(b, 0xee, 4096);
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t f, c;
  TH_OK(hsad_graph_add_fill(g, "F", 0, a, 0x1234, 2, COUNT, NULL, 0, &f));
  TH_OK(hsad_graph_add_copy(g, "C", 1, b, a, BYTES, &f, 1, &c));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, q, 2, &x));
  hsad_graph_destroy(g);
  uint8_t body[64];
  int32_t node;
  /* queue 1: barrier-value on F's point, C (its epoch: a barrier-AND follows) */
  cr_assert_eq(hsad_graph_exec_packet_count(x, 1), 3);
  TH_OK(hsad_graph_exec_packet(x, 1, 1, body, &node));
  cr_assert_eq(node, (int32_t)c);
  const hsa_kernel_dispatch_packet_t *kp = (const hsa_kernel_dispatch_packet_t *)body;
  cr_assert_eq(kp->grid_size_x, 63);
  cr_assert_eq(kp->workgroup_size_x, 63);
  cr_assert_eq(kp->grid_size_y, 1);
  hsad_completion_t done[2];
  for (uint32_t l = 1; l <= 100; l++) {
    TH_OK(hsad_graph_exec_update_fill(x, f, a, 0x1000 + l, 2, COUNT));
    TH_OK(hsad_graph_launch(x, 0, th_in(10 * TH_SEC), done, NULL));
  }
  TH_OK(hsad_completion_wait_all(done, 2, th_in(30 * TH_SEC)));
  for (uint32_t i = 0; i < BYTES; i++)
    cr_assert_eq(b[i], i % 2 ? 0x10 : 0x64, "b[%u] = 0x%02x", i, b[i]);
  for (uint32_t i = BYTES; i < 4096; i++) cr_assert_eq(b[i], 0xee, "b[%u] past the copy", i);
  for (uint32_t i = BYTES; i < 4096; i++) cr_assert_eq(a[i], 0xee, "a[%u] past the fill", i);
  /* the copy's kernarg image in the ring: dst, src, bytes (hsad_graph_copy's metadata) */
  const hsa_kernel_dispatch_packet_t *ring = th_packet(q[1], done[1].packet_id - 1);
  const uint8_t *ka = ring->kernarg_address;
  uint64_t v[3];
  memcpy(v, ka, 24);
  cr_assert_eq(v[0], (uint64_t)(uintptr_t)b);
  cr_assert_eq(v[1], (uint64_t)(uintptr_t)a);
  cr_assert_eq(v[2], BYTES);
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q[1]);
  hsad_queue_destroy(q[0]);
  kit_close(&t);
}

/* Sizes around the 16-byte step and widths 1, 2, 4; copies updated in place; a kernel node
 * between a fill and a copy (fill p with a float's bytes -> acc += p -> copy acc out). */
Test(fusion_copy, sizes_widths_and_a_kernel_between, .timeout = 60) {
  kit_t t;
  kit_open(&t);
  hsad_queue_t *q = th_queue(&t.e, 64);
  uint8_t *src = th_alloc(&t.e, 8192), *dst = th_alloc(&t.e, 8192);
  for (uint32_t i = 0; i < 8192; i++) src[i] = (uint8_t)(i * 7 + 3);
  static const size_t sizes[] = {1, 15, 16, 17, 4099};
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(HSAD_GRAPH_CAPTURE, &g));
  uint32_t cp;
  TH_OK(hsad_graph_add_copy(g, "copy", 0, dst, src, 1, NULL, 0, &cp));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  for (uint32_t s = 0; s < 5; s++) {
    memset(dst, 0, 8192);
    TH_OK(hsad_graph_exec_update_copy(x, cp, dst + s, src + 100, sizes[s]));
    hsad_completion_t c;
    TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), &c, NULL));
    TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
    for (uint32_t i = 0; i < 8192; i++) {
      uint8_t want = i >= s && i < s + sizes[s] ? (uint8_t)((i - s + 100) * 7 + 3) : 0;
      cr_assert_eq(dst[i], want, "size %zu: dst[%u] = 0x%02x, want 0x%02x", sizes[s], i, dst[i],
                   want);
    }
  }
  hsad_graph_exec_destroy(x);
  /* fill widths 1 and 4, then a kernel reading the filled floats, then a copy of its output */
  enum { N = 37 };
  uint32_t *p = th_alloc(&t.e, N * 4);
  float *acc = th_alloc(&t.e, N * 4), *out = th_alloc(&t.e, N * 4);
  uint8_t *bytes = th_alloc(&t.e, 100);
  memset(acc, 0, N * 4);
  saxpy_args_t sa;
  saxpy_set(&sa, (const float *)p, acc, N);
  TH_OK(hsad_graph_create(HSAD_GRAPH_CAPTURE, &g));
  TH_OK(hsad_graph_add_fill(g, "bytes", 0, bytes, 0x5a, 1, 99, NULL, 0, NULL));
  TH_OK(hsad_graph_add_fill(g, "p", 0, p, f2u(2.5f), 4, N, NULL, 0, NULL));
  TH_OK(hsad_graph_add_kernel(g, "acc", 0, t.saxpy, &sa.l, NULL, 0, NULL));
  TH_OK(hsad_graph_add_copy(g, "out", 0, out, acc, N * 4, NULL, 0, NULL));
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  hsad_completion_t c = {0};
  for (int l = 0; l < 4; l++) TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), &c, NULL));
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  for (uint32_t i = 0; i < N; i++) cr_assert_eq(out[i], 10.0f, "out[%u] = %.2f", i, out[i]);
  for (uint32_t i = 0; i < 100; i++) cr_assert_eq(bytes[i], i < 99 ? 0x5a : 0, "bytes[%u]", i);
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q);
  kit_close(&t);
}

/* Refusals, each with its message; nothing recorded or changed. */
Test(fusion_copy, refusals, .timeout = 60) {
  kit_t t;
  kit_open(&t);
  hsad_queue_t *q = th_queue(&t.e, 64);
  uint8_t *a = th_alloc(&t.e, 4096);
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  char want[256];
  snprintf(want, sizeof want, "hsad_graph_add_copy: dst %p and src %p overlap over 100 bytes; "
           "copy nodes have memcpy semantics", (void *)(a + 50), (void *)a);
  TH_ERR_IS(hsad_graph_add_copy(g, "c", 0, a + 50, a, 100, NULL, 0, NULL),
            HSAD_ERR_INVALID_ARGUMENT, "%s", want);
  TH_ERR_IS(hsad_graph_add_copy(g, "c", 0, a, NULL, 100, NULL, 0, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_add_copy: NULL src");
  TH_ERR_IS(hsad_graph_add_copy(g, "c", 0, NULL, NULL, 0, NULL, 0, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_add_copy: NULL dst");
  TH_ERR_IS(hsad_graph_add_copy(g, "c", 0, a, a + 200, 0, NULL, 0, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_add_copy: size 0");
  TH_ERR_IS(hsad_graph_add_copy(g, "c", 0, a, a + 2048, (size_t)1 << 40, NULL, 0, NULL),
            HSAD_ERR_RANGE, "hsad_graph_add_copy: 1099511627776 bytes; a copy node moves at "
            "most 68719476720 (16 bytes per work-item, 2^32 - 1 work-items)");
  TH_ERR_IS(hsad_graph_add_fill(g, "f", 0, a, 7, 3, 10, NULL, 0, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_add_fill: width 3 (1, 2 or 4 bytes)");
  TH_ERR_IS(hsad_graph_add_fill(g, "f", 0, a, 0x1ff, 1, 10, NULL, 0, NULL),
            HSAD_ERR_INVALID_ARGUMENT, "hsad_graph_add_fill: pattern 0x1ff does not fit in 1 byte");
  uint32_t f, k;
  TH_OK(hsad_graph_add_fill(g, "f", 0, a, 0xff, 1, 10, NULL, 0, &f));
  cr_assert_eq(f, 0, "the refusals recorded nothing");
  uint32_t *counter = th_alloc(&t.e, 4), *slots = th_alloc(&t.e, 16);
  k = rec(g, "k", 0, &t, counter, slots, 0, &f, 1);
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  TH_ERR_IS(hsad_graph_exec_update_copy(x, f, a, a + 100, 10), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_exec_update_copy: node f is a fill node, not a copy node");
  TH_ERR_IS(hsad_graph_exec_update_fill(x, k, a, 1, 1, 10), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_exec_update_fill: node k is a kernel node, not a fill node");
  hsad_launch_t l = {.dims = 1, .grid = {1}, .block = {1}};
  TH_ERR_IS(hsad_graph_exec_update(x, f, &l), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_exec_update: node f is a fill node, not a kernel node");
  TH_ERR_IS(hsad_graph_exec_update_fill(x, 9, a, 1, 1, 10), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_exec_update_fill: node 9 is not a node of the exec (2 nodes)");
  TH_ERR_IS(hsad_graph_exec_update_fill(NULL, 9, a, 1, 1, 10), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_exec_update_fill: NULL exec");
  TH_ERR_IS(hsad_graph_exec_update_fill(x, f, a, 1, 2, 0), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_exec_update_fill: count 0");
  TH_ERR_IS(hsad_graph_exec_update_fill(x, f, a, 1, 3, 1), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_exec_update_fill: width 3 (1, 2 or 4 bytes)");
  TH_ERR_IS(hsad_graph_exec_update_fill(x, f, NULL, 1, 3, 0), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_exec_update_fill: NULL dst");
  memset(a, 0, 16);
  hsad_completion_t c;
  TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), &c, NULL));
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  for (uint32_t i = 0; i < 16; i++) cr_assert_eq(a[i], i < 10 ? 0xff : 0, "a[%u]", i);
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q);
  kit_close(&t);
}

/* ---- prepublished kernargs: where an update goes ------------------------------------------ */

/* A fill node updated (new dst slice and value, same shape) around launches held in flight by
 * kfd-emu's 100 ms delay of fill: launch 1 completes, update in place (launch 2 reads version
 * 0 at the same address); update while launch 2 runs: version 1 (seg0 + one stride); update
 * while launches 2 and 3 run: ring-copy mode (launch 4's segment is its ring slot's kernarg
 * block); after all completed, the next update leaves the mode (launch 5 on version 1 again).
 * Every launch wrote its own slice with its own value: no in-flight segment was overwritten. */
Test(fusion_kernargs, update_goes_where_no_packet_reads, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "100000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "fill", 1);
  kit_t t;
  kit_open(&t);
  hsad_queue_t *q = th_queue(&t.e, 64);
  enum { N = 16 };
  uint32_t *b = th_alloc(&t.e, 5 * N * 4);
  memset(b, 0, 5 * N * 4);
  fill_args_t fa;
  fill_set(&fa, b, 1, N);
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t a;
  TH_OK(hsad_graph_add_kernel(g, "A", 0, t.fill, &fa.l, NULL, 0, &a));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  uint32_t ksize = hsad_device_kernel_desc(t.fill)->kernarg_segment_size;
  uint64_t stride = ksize > 64 ? (ksize + 63) & ~63ull : 64;
  hsad_submit_ring_t r;
  hsad_submit_ring(q, &r);
  hsad_completion_t c[6];
  uint64_t ka[6];
  for (uint32_t l = 1; l <= 5; l++) {
    if (l > 1) {
      fill_set(&fa, b + (l - 1) * N, l, N);
      TH_OK(hsad_graph_exec_update(x, a, &fa.l));
    }
    TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), &c[l], NULL));
    ka[l] = (uint64_t)(uintptr_t)th_packet(q, c[l].packet_id)->kernarg_address;
    if (l == 1 || l == 4) TH_OK(hsad_completion_wait(&c[l], th_in(10 * TH_SEC)));
  }
  TH_OK(hsad_completion_wait(&c[5], th_in(10 * TH_SEC)));
  cr_assert_eq(ka[2], ka[1], "launch 1 completed: update in place");
  cr_assert_eq(ka[3], ka[1] + stride, "launch 2 in flight: the other version");
  cr_assert_eq(ka[4], (uint64_t)(uintptr_t)r.kernargs + (c[4].packet_id & r.mask) * r.kernarg_block,
               "launches 2 and 3 in flight: the ring slot's kernarg block");
  cr_assert_eq(ka[5], ka[3], "all completed: back on the prepublished version in use (1)");
  for (uint32_t l = 1; l <= 5; l++)
    for (uint32_t i = 0; i < N; i++)
      cr_assert_eq(b[(l - 1) * N + i], l, "launch %u: b[%u] = %u", l, (l - 1) * N + i,
                   b[(l - 1) * N + i]);
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q);
  kit_close(&t);
}

/* struct_1k (1296 bytes of kernargs: 3 blocks of 512) as a graph node, updated while launches 1
 * and 2 are held by a gate: ring-copy mode, so launch 3 copies its segment into its ring slot's
 * kernarg block and on into the blocks of its 2 padding slots, which vector_add's hot-path hits
 * of the ring's first lap had stamped (launch_cache.h). The copy clears the stamps of every
 * block it covers, so vector_add's hits there on the next lap copy their whole image again:
 * each of those blocks holds vector_add's hidden arguments (those of the block before the
 * gate's), and every result is exact. With the first slot's stamp cleared alone, the hits
 * would copy 32 bytes over struct_1k's struct (kfd-emu checks the hidden arguments). */
Test(fusion_kernargs, ring_copy_clears_the_stamps_of_its_span, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *kv, *ks;
  hsad_program_t *pv = th_load(&e, "vector_add", 5, "vector_add", &kv);
  hsad_program_t *pb = th_load(&e, "big_args", 5, "struct_1k", &ks);
  hsad_queue_t *q = th_queue(&e, 64);
  hsad_submit_ring_t r;
  hsad_submit_ring(q, &r);
  cr_assert_eq(r.kernarg_block, 512);
  float *a = th_alloc(&e, 256), *b = th_alloc(&e, 256), *c = th_alloc(&e, 256);
  for (int i = 0; i < 64; i++) a[i] = (float)i, b[i] = (float)(2 * i), c[i] = -1;
  uint32_t n = 64;
  hsad_karg_t x[4] = {HSAD_KARG_PTR(a), HSAD_KARG_PTR(b), HSAD_KARG_PTR(c), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {64}, .block = {64}, .args = x, .arg_count = 4};
  uint64_t id;
  for (uint64_t want = 0; want < 63; want++) { /* 0 a miss, 1..62 hits: slots 1..62 stamped */
    TH_OK(hsad_kernel_dispatch(q, kv, &l, th_in(TH_SEC), NULL, &id));
    cr_assert_eq(id, want);
  }
  hsad_completion_t done;
  TH_OK(hsad_queue_flush(q, th_in(TH_SEC), &done)); /* 63 */
  TH_OK(hsad_completion_wait(&done, th_in(10 * TH_SEC)));
  cr_assert_neq(r.kernarg_slots[5].stamp, 0, "slot 5: a hit's stamp");
  uint32_t *out = th_alloc(&e, 3 * 300 * 4);
  static uint32_t v[3][256];
  uint32_t n1k = 300;
  for (uint32_t k = 0; k < 3; k++)
    for (uint32_t j = 0; j < 256; j++) v[k][j] = (k + 1) * 100000u + j * 7u;
  hsad_karg_t a1k[3] = {HSAD_KARG_PTR(out), {.tag = HSAD_KARG_BYTES, .size = 1024, .bytes = v[0]},
                        HSAD_KARG_VAL(n1k)};
  hsad_launch_t l1k = {.dims = 1, .grid = {300}, .block = {64}, .args = a1k, .arg_count = 3};
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t node;
  TH_OK(hsad_graph_add_kernel(g, "S", 0, ks, &l1k, NULL, 0, &node));
  hsad_graph_exec_t *gx;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &gx));
  hsad_graph_destroy(g);
  hsa_signal_t gate = th_gate(q); /* 64 */
  hsad_completion_t run[3];
  for (uint32_t k = 0; k < 3; k++) {
    if (k) {
      a1k[0] = (hsad_karg_t)HSAD_KARG_PTR(out + 300 * k);
      a1k[1].bytes = v[k];
      TH_OK(hsad_graph_exec_update(gx, node, &l1k));
    }
    TH_OK(hsad_graph_launch(gx, 0, th_in(TH_SEC), &run[k], NULL));
  }
  /* launch 3's kernel packet: the one whose kernarg address is its slot's block */
  uint64_t k3 = UINT64_MAX;
  uint64_t w = ((const amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id;
  for (uint64_t p = 65; p < w; p++)
    if ((uint64_t)(uintptr_t)th_packet(q, p)->kernarg_address ==
        (uint64_t)(uintptr_t)(r.kernargs + (p & r.mask) * r.kernarg_block))
      k3 = p;
  cr_assert_neq(k3, UINT64_MAX, "no packet of launch 3 reads its ring slot's block");
  cr_assert_lt(k3 + 2, 128, "launch 3's span ends in the second lap (packets 65..%llu)",
               (unsigned long long)w);
  cr_assert_eq(r.kernarg_slots[(k3 + 1) & r.mask].stamp, 0, "padding slot 1's stamp cleared");
  cr_assert_eq(r.kernarg_slots[(k3 + 2) & r.mask].stamp, 0, "padding slot 2's stamp cleared");
  th_gate_open(gate);
  TH_OK(hsad_completion_wait(&run[2], th_in(10 * TH_SEC)));
  th_gate_destroy(gate);
  for (uint32_t k = 0; k < 3; k++)
    for (uint32_t i = 0; i < 300; i++)
      cr_assert_eq(out[300 * k + i], v[k][i % 256] + i, "launch %u out[%u] = %u", k + 1, i,
                   out[300 * k + i]);
  /* the next lap: the general path retires the ring (packet w), then 63 hits, the stamped
   * slots among them */
  for (int i = 0; i < 64; i++) c[i] = -1;
  TH_OK(hsad_kernel_dispatch(q, kv, &l, th_in(TH_SEC), &done, &id));
  cr_assert_eq(id, w);
  TH_OK(hsad_completion_wait(&done, th_in(10 * TH_SEC)));
  for (uint64_t want = w + 1; want < w + 64; want++) {
    TH_OK(hsad_kernel_dispatch(q, kv, &l, th_in(TH_SEC), NULL, &id));
    cr_assert_eq(id, want);
  }
  TH_OK(hsad_queue_flush(q, th_in(TH_SEC), &done));
  TH_OK(hsad_completion_wait(&done, th_in(10 * TH_SEC)));
  TH_OK(hsad_queue_error(q));
  const uint8_t *ref = r.kernargs + 5 * r.kernarg_block;
  for (uint64_t p = k3 + 1; p <= k3 + 2; p++) {
    const uint8_t *blk = r.kernargs + (p & r.mask) * r.kernarg_block;
    cr_assert_eq(th_get32(blk, 32), 1u, "block %llu: hidden_block_count_x %#x",
                 (unsigned long long)(p & r.mask), th_get32(blk, 32));
    cr_assert_arr_eq(blk, ref, 112, "block %llu is vector_add's (block 5's)",
                     (unsigned long long)(p & r.mask));
  }
  for (int i = 0; i < 64; i++) cr_assert_eq(c[i], (float)(3 * i), "c[%d] = %g", i, (double)c[i]);
  hsad_graph_exec_destroy(gx);
  float *bufs[3] = {a, b, c};
  for (int i = 0; i < 3; i++) hsad_buffer_free(bufs[i]);
  hsad_buffer_free(out);
  hsad_queue_destroy(q);
  hsad_program_destroy(pb);
  hsad_program_destroy(pv);
  TH_OK(hsad_runtime_close(e.rt));
}
