/* test_fusion.c - kernel graphs (fusion/hsad_fusion.h): edges honoured, BARRIER bits only where
 * an edge needs one, packet bytes, one doorbell per queue, updates, cycles. */
#include <hsa/amd_hsa_signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fusion/hsad_fusion.h"
#include "tests/test_dispatch_util.h"

#define BAR(w) (((w) >> HSA_PACKET_HEADER_BARRIER) & 1u)
#define TYPE(w) (((w) >> HSA_PACKET_HEADER_TYPE) & 0xffu)

static uint64_t doorbell_value(hsad_queue_t *q) {
  amd_signal_t *s = (amd_signal_t *)(uintptr_t)hsad_queue_hsa(q)->doorbell_signal.handle;
  return *(volatile uint64_t *)s->hardware_doorbell_ptr;
}

/* An order_record node: slots[index] = ticket. */
static uint32_t rec(hsad_graph_t *g, const char *name, uint32_t lane,
                    const hsad_device_kernel_t *k, uint32_t *counter, uint32_t *slots,
                    uint32_t index, const uint32_t *deps, uint32_t nd) {
  hsad_karg_t a[3] = {HSAD_KARG_PTR(counter), HSAD_KARG_PTR(slots), HSAD_KARG_VAL(index)};
  hsad_launch_t l = {.dims = 1, .grid = {1}, .block = {1}, .args = a, .arg_count = 3};
  uint32_t id = 0;
  TH_OK(hsad_graph_add_kernel(g, name, lane, k, &l, deps, nd, &id));
  return id;
}

static uint32_t pkt_word(const hsad_graph_exec_t *x, uint32_t qi, uint32_t i, int32_t *node) {
  uint8_t b[64];
  TH_OK(hsad_graph_exec_packet(x, qi, i, b, node));
  uint32_t w;
  memcpy(&w, b, 4);
  return w;
}

/* A barrier node last on its queue is the run's epoch point itself (fusion/exec.c add_point:
 * a barrier-AND node gets the BARRIER bit and the epoch signal, no packet is added; seed 28
 * mutant 45 added a barrier-AND after it). A -> B -> J (J a barrier node): 3 packets a launch,
 * J's the last, with the BARRIER bit, its completion the epoch of packet 2 of each launch. */
Test(fusion, barrier_node_last_is_the_point, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "order_record", 5, "order_record", &k, &q);
  uint32_t *counter = th_alloc(&e, 4), *slots = th_alloc(&e, 16);
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t a = rec(g, "A", 0, k, counter, slots, 0, NULL, 0);
  uint32_t b = rec(g, "B", 0, k, counter, slots, 1, &a, 1);
  uint32_t j;
  TH_OK(hsad_graph_add_barrier(g, "J", 0, &b, 1, &j));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  cr_assert_eq(hsad_graph_exec_packet_count(x, 0), 3);
  cr_assert_eq(hsad_graph_exec_point_count(x, 0), 1);
  int32_t node;
  uint32_t w = pkt_word(x, 0, 2, &node);
  cr_assert_eq(node, (int32_t)j);
  cr_assert_eq(TYPE(w), HSA_PACKET_TYPE_BARRIER_AND);
  cr_assert_eq(BAR(w), 1);
  for (int round = 0; round < 2; round++) {
    *counter = 0;
    memset(slots, 0xff, 16);
    hsad_completion_t done;
    TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), &done, NULL));
    TH_OK(hsad_completion_wait_all(&done, 1, th_in(10 * TH_SEC)));
    cr_assert_eq(done.packet_id, 3 * round + 2);
    cr_assert_eq(doorbell_value(q), 3 * (uint64_t)round + 2);
    cr_assert_eq(slots[0], 0);
    cr_assert_eq(slots[1], 1);
  }
  hsad_graph_exec_destroy(x);
  hsad_buffer_free(slots);
  hsad_buffer_free(counter);
  th_finish(&e, q, p);
}

/* Diamond A -> {B, C} -> D on one queue. */
Test(fusion, diamond_one_queue, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "order_record", 5, "order_record", &k, &q);
  uint32_t *counter = th_alloc(&e, 4), *slots = th_alloc(&e, 16);
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t a = rec(g, "A", 0, k, counter, slots, 0, NULL, 0);
  uint32_t b = rec(g, "B", 0, k, counter, slots, 1, &a, 1);
  uint32_t c = rec(g, "C", 0, k, counter, slots, 2, &a, 1);
  rec(g, "D", 0, k, counter, slots, 3, (uint32_t[]){b, c}, 2);
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  cr_assert_eq(hsad_graph_exec_queue_count(x), 1);
  cr_assert_eq(hsad_graph_exec_packet_count(x, 0), 4);
  int32_t node;
  /* A: no dep, the run's first packet: BARRIER (stream order, after earlier work on the
   * queue); B: dep on A, BARRIER; C: A implied by B's barrier, none; D: BARRIER */
  uint32_t want_bar[4] = {1, 1, 0, 1};
  for (uint32_t i = 0; i < 4; i++) {
    uint32_t w = pkt_word(x, 0, i, &node);
    cr_assert_eq(node, (int32_t)i);
    cr_assert_eq(TYPE(w), HSA_PACKET_TYPE_KERNEL_DISPATCH);
    cr_assert_eq(BAR(w), want_bar[i], "packet %u barrier %u", i, BAR(w));
  }
  for (int round = 0; round < 3; round++) {
    *counter = 0;
    memset(slots, 0xff, 16);
    hsad_completion_t done;
    TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), &done, NULL));
    TH_OK(hsad_completion_wait_all(&done, 1, th_in(10 * TH_SEC)));
    cr_assert_eq(done.packet_id, 4 * round + 3);
    cr_assert_eq(doorbell_value(q), 4 * (uint64_t)round + 3);
    cr_assert_eq(slots[0], 0);
    cr_assert(slots[1] > slots[0] && slots[2] > slots[0]);
    cr_assert(slots[3] > slots[1] && slots[3] > slots[2]);
    cr_assert_eq(slots[3], 3);
  }
  /* the ring's bodies: kernarg address of each slot's block, last carries the epoch signal */
  const hsa_kernel_dispatch_packet_t *ring =
      (const hsa_kernel_dispatch_packet_t *)hsad_queue_hsa(q)->base_address;
  hsa_signal_t es;
  hsa_signal_value_t lt;
  hsad_completion_t c0 = {.queue = q, .epoch = 1};
  TH_OK(hsad_completion_signal(&c0, &es, &lt));
  /* kernarg segments: prepublished by the exec, one per node (64-byte aligned, 64 bytes apart
   * x 2 versions: order_record v5's 280-byte segment takes 320 per version), the same address
   * in every launch (no update happened), outside the queue's ring of 512-byte kernarg blocks,
   * each holding its node's explicit arguments (order_record's notes: counter @0, slots @8,
   * index @16); a plain dispatch after the graph (packet 12, hsad_kernel_dispatch's own path)
   * uses the ring's block 12 */
  uint64_t seg0 = (uint64_t)(uintptr_t)ring[0].kernarg_address;
  cr_assert_eq(seg0 % 64, 0);
  for (uint32_t i = 0; i < 12; i++) {
    uint64_t ka = (uint64_t)(uintptr_t)ring[i].kernarg_address;
    cr_assert_eq(ka, seg0 + (i % 4) * 640ull, "packet %u kernarg %#llx, want %#llx", i,
                 (unsigned long long)ka, (unsigned long long)(seg0 + (i % 4) * 640ull));
    const uint8_t *kb = (const uint8_t *)(uintptr_t)ka;
    uint64_t c8, s8;
    uint32_t idx;
    memcpy(&c8, kb, 8);
    memcpy(&s8, kb + 8, 8);
    memcpy(&idx, kb + 16, 4);
    cr_assert_eq(c8, (uint64_t)(uintptr_t)counter, "packet %u counter", i);
    cr_assert_eq(s8, (uint64_t)(uintptr_t)slots, "packet %u slots", i);
    cr_assert_eq(idx, i % 4, "packet %u is node %u", i, i % 4);
  }
  for (uint32_t i = 8; i < 12; i++) {
    cr_assert_eq(ring[i].grid_size_x, 1);
    cr_assert_eq(ring[i].completion_signal.handle, i == 11 ? es.handle : 0);
  }
  uint32_t nine = 9;
  hsad_karg_t pa[3] = {HSAD_KARG_PTR(counter), HSAD_KARG_PTR(slots), HSAD_KARG_VAL(nine)};
  hsad_launch_t pl = {.dims = 1, .grid = {1}, .block = {1}, .args = pa, .arg_count = 3};
  cr_assert_eq(th_run(q, k, &pl, TH_SEC, 10 * TH_SEC), 12);
  uint64_t block12 = (uint64_t)(uintptr_t)ring[12].kernarg_address;
  cr_assert(block12 + 512 <= seg0 || block12 >= seg0 + 4 * 640,
            "the graph's segments are not the ring's blocks");
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q);
  hsad_program_destroy(p);
  hsad_runtime_close(e.rt);
}

/* Fan-in 12: twelve independent nodes, one sink. Only the sink has the BARRIER bit. */
Test(fusion, fan_in_12, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "order_record", 5, "order_record", &k, &q);
  uint32_t *counter = th_alloc(&e, 4), *slots = th_alloc(&e, 13 * 4);
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t src[12];
  for (uint32_t i = 0; i < 12; i++) src[i] = rec(g, NULL, 0, k, counter, slots, i, NULL, 0);
  rec(g, "sink", 0, k, counter, slots, 12, src, 12);
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  cr_assert_eq(hsad_graph_exec_packet_count(x, 0), 13);
  /* the first source has the stream-order bit, the sink its fan-in's */
  for (uint32_t i = 0; i < 13; i++) cr_assert_eq(BAR(pkt_word(x, 0, i, NULL)), i == 0 || i == 12);
  *counter = 0;
  hsad_completion_t done;
  TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), &done, NULL));
  TH_OK(hsad_completion_wait_all(&done, 1, th_in(10 * TH_SEC)));
  cr_assert_eq(slots[12], 12);
  cr_assert_eq(doorbell_value(q), 12);
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q);
  hsad_program_destroy(p);
  hsad_runtime_close(e.rt);
}

/* Two lanes on two queues, captured: lane 0 A0 -> A1, lane 1 B0 -> B1 with B1 waiting for A0.
 * A0 is an epoch point of queue 0 (the run's first packet carries it: BARRIER bit and the
 * epoch signal); queue 1 gets one barrier-value packet on exactly that point, not on queue
 * 0's whole run; one doorbell per queue. */
Test(fusion, cross_queue_capture, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q0;
  hsad_program_t *p = th_start(&e, "order_record", 5, "order_record", &k, &q0);
  hsad_queue_t *q1 = th_queue(&e, 64);
  uint32_t *counter = th_alloc(&e, 4), *slots = th_alloc(&e, 16);
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(HSAD_GRAPH_CAPTURE, &g));
  uint32_t a0 = rec(g, "A0", 0, k, counter, slots, 0, NULL, 0);
  rec(g, "A1", 0, k, counter, slots, 1, NULL, 0);
  rec(g, "B0", 1, k, counter, slots, 2, NULL, 0);
  rec(g, "B1", 1, k, counter, slots, 3, &a0, 1);
  hsad_graph_exec_t *x;
  hsad_queue_t *lanes[2] = {q0, q1};
  TH_OK(hsad_graph_instantiate(g, lanes, 2, &x));
  hsad_graph_destroy(g);
  cr_assert_eq(hsad_graph_exec_queue_count(x), 2);
  cr_assert_eq(hsad_graph_exec_queue(x, 0), q0);
  /* q0: A0 (BARRIER, epoch point 0), A1 (BARRIER, epoch point 1) */
  cr_assert_eq(hsad_graph_exec_packet_count(x, 0), 2);
  cr_assert_eq(BAR(pkt_word(x, 0, 0, NULL)), 1);
  cr_assert_eq(BAR(pkt_word(x, 0, 1, NULL)), 1);
  cr_assert_eq(hsad_graph_exec_point_count(x, 0), 2);
  uint32_t pt;
  TH_OK(hsad_graph_exec_point(x, 0, 0, &pt));
  cr_assert_eq(pt, 0);
  TH_OK(hsad_graph_exec_point(x, 0, 1, &pt));
  cr_assert_eq(pt, 1);
  TH_ERR_IS(hsad_graph_exec_point(x, 0, 2, &pt), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_exec_point: queue 0 point 2 out of range");
  /* q1: B0 (stream-order BARRIER), barrier-value (no BARRIER), B1 (BARRIER: B0 is its lane
   * predecessor; epoch point 0) */
  cr_assert_eq(hsad_graph_exec_packet_count(x, 1), 3);
  cr_assert_eq(hsad_graph_exec_point_count(x, 1), 1);
  cr_assert_eq(BAR(pkt_word(x, 1, 0, NULL)), 1);
  int32_t node;
  uint32_t w = pkt_word(x, 1, 1, &node);
  cr_assert_eq(node, -1);
  cr_assert_eq(TYPE(w), HSA_PACKET_TYPE_VENDOR_SPECIFIC);
  cr_assert_eq(w >> 16, HSA_AMD_PACKET_TYPE_BARRIER_VALUE);
  cr_assert_eq(BAR(w), 0);
  cr_assert_eq(BAR(pkt_word(x, 1, 2, NULL)), 1);
  /* from the second launch on, each queue holding a root starts with one barrier-value packet
   * on the other queue's previous run (stream order over the whole exec): 3 and 4 packets */
  uint64_t end0 = 0, end1 = 0; /* packets written so far on q0, q1 */
  for (uint32_t round = 1; round <= 3; round++) {
    *counter = 0;
    hsad_completion_t done[2];
    TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), done, NULL));
    TH_OK(hsad_completion_wait_all(done, 2, th_in(10 * TH_SEC)));
    uint32_t pre = round > 1;
    uint64_t first1 = end1;
    end0 += 2 + pre;
    end1 += 3 + pre;
    cr_assert_eq(doorbell_value(q0), end0 - 1);
    cr_assert_eq(doorbell_value(q1), end1 - 1);
    cr_assert_eq(done[0].packet_id, end0 - 1);
    cr_assert_eq(done[1].packet_id, end1 - 1);
    cr_assert(slots[3] > slots[0] && slots[1] > slots[0] && slots[3] > slots[2]);
    /* the barrier-value packet in the ring: queue 0's epoch signal, LT, the threshold of A0's
     * point (epoch 2 x round - 1 of queue 0; the run's completion is epoch 2 x round) */
    const hsa_amd_barrier_value_packet_t *bv =
        (const hsa_amd_barrier_value_packet_t *)hsad_queue_hsa(q1)->base_address + first1 + pre + 1;
    hsa_signal_t es;
    hsa_signal_value_t lt;
    cr_assert_eq(done[0].epoch, 2 * round);
    cr_assert_eq(done[1].epoch, round);
    hsad_completion_t a0_point = {.queue = q0, .epoch = 2 * round - 1};
    TH_OK(hsad_completion_signal(&a0_point, &es, &lt));
    cr_assert_eq(bv->signal.handle, es.handle);
    cr_assert_eq(bv->value, lt);
    cr_assert_eq(lt, HSAD_EPOCH_BASE - (int64_t)(2 * round - 1) + 1);
    cr_assert_eq(bv->mask, -1);
    cr_assert_eq(bv->cond, HSA_SIGNAL_CONDITION_LT);
    cr_assert_eq(bv->completion_signal.handle, 0);
    if (pre) { /* q1's head: queue 0's previous run (epoch 2 x (round - 1)) */
      const hsa_amd_barrier_value_packet_t *head =
          (const hsa_amd_barrier_value_packet_t *)hsad_queue_hsa(q1)->base_address + first1;
      cr_assert_eq(head->signal.handle, es.handle);
      cr_assert_eq(head->value, HSAD_EPOCH_BASE - (int64_t)(2 * (round - 1)) + 1);
    }
  }
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q1);
  hsad_queue_destroy(q0);
  hsad_program_destroy(p);
  hsad_runtime_close(e.rt);
}

/* Steps 5-6 for graph launches: every packet body of a fused launch (kernel packets, the
 * barrier-value packet on the other queue's epoch, the epoch packets) and of the rollback path
 * is complete when its header becomes valid. KFD_EMU_RING_WATCH checks every store into both
 * rings (a body byte written while its header is valid is a queue error); 40 fused and 5
 * sequential launches of the cross-queue graph wrap both 64-slot rings. Each launch's order
 * and the count of kernels run are exact. */
Test(fusion, bodies_complete_when_headers_valid, .timeout = 120) {
  setenv("KFD_EMU_RING_WATCH", "1", 1);
  /* kernels as their twins: POCL's LLVM (source mode) installs its own SIGSEGV and SIGTRAP
   * handlers when it compiles (RemoveFileOnSignal), and a ring store faulting while they are
   * swapped crashed the watch's process (1 run in ~130: kfd-emu's CP thread in retire()) */
  setenv("KFD_EMU_KERNEL_MODE", "twin", 1);
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q0;
  hsad_program_t *p = th_start(&e, "order_record", 5, "order_record", &k, &q0);
  hsad_queue_t *q1 = th_queue(&e, 64);
  uint32_t *counter = th_alloc(&e, 4), *slots = th_alloc(&e, 16);
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(HSAD_GRAPH_CAPTURE, &g));
  uint32_t a0 = rec(g, "A0", 0, k, counter, slots, 0, NULL, 0);
  rec(g, "A1", 0, k, counter, slots, 1, NULL, 0);
  rec(g, "B0", 1, k, counter, slots, 2, NULL, 0);
  rec(g, "B1", 1, k, counter, slots, 3, &a0, 1);
  hsad_graph_exec_t *x;
  hsad_queue_t *lanes[2] = {q0, q1};
  TH_OK(hsad_graph_instantiate(g, lanes, 2, &x));
  hsad_graph_destroy(g);
  for (uint32_t round = 0; round < 45; round++) {
    *counter = 0;
    memset(slots, 0xff, 16);
    hsad_completion_t done[2];
    hsad_graph_rollback_t why = HSAD_GRAPH_ROLLBACK_NONE;
    TH_OK(hsad_graph_launch(x, round < 40 ? 0 : HSAD_GRAPH_SEQUENTIAL, th_in(10 * TH_SEC), done,
                            &why));
    cr_assert_eq(why, round < 40 ? HSAD_GRAPH_ROLLBACK_NONE : HSAD_GRAPH_ROLLBACK_REQUESTED,
                 "round %u: path %d", round, (int)why);
    TH_OK(hsad_completion_wait_all(done, 2, th_in(10 * TH_SEC)));
    cr_assert_eq(*counter, 4, "round %u: %u kernels ran", round, *counter);
    cr_assert(slots[1] > slots[0] && slots[3] > slots[0] && slots[3] > slots[2],
              "round %u: order %u %u %u %u", round, slots[0], slots[1], slots[2], slots[3]);
  }
  TH_OK(hsad_queue_error(q0));
  TH_OK(hsad_queue_error(q1));
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q1);
  hsad_queue_destroy(q0);
  hsad_program_destroy(p);
  hsad_runtime_close(e.rt);
  unsetenv("KFD_EMU_RING_WATCH");
}

Test(fusion, cycle_names_its_nodes, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "order_record", 5, "order_record", &k, &q);
  uint32_t *counter = th_alloc(&e, 4), *slots = th_alloc(&e, 16);
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t a = rec(g, "load", 0, k, counter, slots, 0, NULL, 0);
  uint32_t b = rec(g, "scale", 0, k, counter, slots, 1, &a, 1);
  uint32_t c = rec(g, "store", 0, k, counter, slots, 2, &b, 1);
  rec(g, "other", 0, k, counter, slots, 3, NULL, 0);
  TH_OK(hsad_graph_add_edge(g, c, b));
  hsad_graph_exec_t *x = NULL;
  hsad_status_t s = hsad_graph_instantiate(g, &q, 1, &x);
  cr_assert_eq(s, HSAD_ERR_GRAPH);
  cr_assert_str_eq(hsad_last_error(), "cycle: scale -> store -> scale");
  cr_assert_null(x);
  hsad_graph_destroy(g);
  hsad_queue_destroy(q);
  hsad_program_destroy(p);
  hsad_runtime_close(e.rt);
}

/* Node names are unique: a taken name (given, truncated or the default node<id>) is refused by
 * both add calls, naming the name and the node that has it, and nothing is recorded. */
Test(fusion, duplicate_names_refused, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "order_record", 5, "order_record", &k, &q);
  uint32_t *counter = th_alloc(&e, 4), *slots = th_alloc(&e, 64);
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t a = rec(g, "load", 0, k, counter, slots, 0, NULL, 0);
  rec(g, "node2", 0, k, counter, slots, 1, &a, 1);
  rec(g, "a_name_of_exactly_31_bytes_xxxx", 0, k, counter, slots, 2, NULL, 0);
  hsad_karg_t args[3] = {HSAD_KARG_PTR(counter), HSAD_KARG_PTR(slots), HSAD_KARG_VAL(a)};
  hsad_launch_t l = {.dims = 1, .grid = {1}, .block = {1}, .args = args, .arg_count = 3};
  uint32_t id = 77;
  TH_ERR_IS(hsad_graph_add_kernel(g, "load", 1, k, &l, &a, 1, &id), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_add_kernel: node name 'load' is the name of node 0; node names are unique");
  TH_ERR_IS(hsad_graph_add_barrier(g, "load", 0, &a, 1, &id), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_add_barrier: node name 'load' is the name of node 0; node names are "
            "unique");
  TH_ERR_IS(hsad_graph_add_kernel(g, "a_name_of_exactly_31_bytes_xxxx_and_more", 0, k, &l, NULL,
                                  0, &id), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_add_kernel: node name 'a_name_of_exactly_31_bytes_xxxx_and_more' "
            "(truncated to 31 bytes: 'a_name_of_exactly_31_bytes_xxxx') is the name of node 2; "
            "node names are unique");
  /* node 3 would be node3 by default (free); node2 is taken by node 1 */
  rec(g, NULL, 0, k, counter, slots, 3, NULL, 0);
  rec(g, "x", 0, k, counter, slots, 4, NULL, 0);
  rec(g, "y", 0, k, counter, slots, 5, NULL, 0);
  rec(g, "z", 0, k, counter, slots, 6, NULL, 0);
  rec(g, "node8", 0, k, counter, slots, 7, NULL, 0); /* id 7 */
  TH_ERR_IS(hsad_graph_add_barrier(g, NULL, 0, NULL, 0, &id), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_add_barrier: node name 'node8' (the default for a NULL name) is the name "
            "of node 7; node names are unique");
  cr_assert_eq(id, 77, "nothing recorded");
  /* the refusals recorded nothing: the next node is id 8, and the graph runs 8 nodes */
  cr_assert_eq(rec(g, "last", 0, k, counter, slots, 8, NULL, 0), 8);
  hsad_graph_exec_t *x = NULL;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_completion_t done;
  TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), &done, NULL));
  TH_OK(hsad_completion_wait(&done, th_in(TH_SEC)));
  cr_assert_eq(*counter, 9);
  hsad_graph_exec_destroy(x);
  hsad_graph_destroy(g);
  hsad_queue_destroy(q);
  hsad_program_destroy(p);
  hsad_runtime_close(e.rt);
}

/* 1,000 launches of a fill -> saxpy-free chain with the fill value updated between launches. */
Test(fusion, thousand_launches_with_updates, .timeout = 120) {
  th_env_t e;
  const hsad_device_kernel_t *fill, *rk;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "fill", 5, "fill", &fill, &q);
  hsad_program_t *p2 = th_load(&e, "order_record", 5, "order_record", &rk);
  enum { N = 64 };
  uint32_t *buf = th_alloc(&e, N * 4), *counter = th_alloc(&e, 4), *slots = th_alloc(&e, 8);
  uint32_t v = 0, n = N;
  *counter = 0;
  hsad_karg_t fa[3] = {HSAD_KARG_PTR(buf), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
  hsad_launch_t fl = {.dims = 1, .grid = {N}, .block = {64}, .args = fa, .arg_count = 3};
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(HSAD_GRAPH_CAPTURE, &g));
  uint32_t f = 0;
  TH_OK(hsad_graph_add_kernel(g, "fill", 0, fill, &fl, NULL, 0, &f));
  rec(g, "after", 0, rk, counter, slots, 1, NULL, 0);
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  for (uint32_t i = 1; i <= 1000; i++) {
    v = 3 * i + 7;
    n = N - (i % 5);  /* fewer elements: the tail keeps the previous value */
    fl.grid[0] = n;
    fl.block[0] = n < 32 ? n : 32;
    TH_OK(hsad_graph_exec_update(x, f, &fl));
    hsad_completion_t done;
    TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), &done, NULL));
    TH_OK(hsad_completion_wait(&done, th_in(10 * TH_SEC)));
    for (uint32_t j = 0; j < n; j++) cr_assert_eq(buf[j], 3 * i + 7, "launch %u: buf[%u] %u", i, j, buf[j]);
    cr_assert_eq(slots[1], i - 1);  /* the dependent node ran once per launch, after fill */
  }
  cr_assert_eq(*counter, 1000);
  /* a wrong update is refused and names the node; the node is unchanged */
  fl.dims = 0;
  TH_ERR_IS(hsad_graph_exec_update(x, f, &fl), HSAD_ERR_GRID,
            "node fill: kernel fill: dims 0, must be 1..3");
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q);
  hsad_program_destroy(p2);
  hsad_program_destroy(p);
  hsad_runtime_close(e.rt);
}

/* A diamond plus a cross-queue node; run the same exec fused or as asked, check results. */
typedef struct fu_kit {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_program_t *p;
  uint32_t *counter, *slots;
} fu_kit_t;

static void kit_open(fu_kit_t *t) {
  th_open(&t->e);
  t->p = th_load(&t->e, "order_record", 5, "order_record", &t->k);
  t->counter = th_alloc(&t->e, 4);
  t->slots = th_alloc(&t->e, 64 * 4);
  *t->counter = 0;
  memset(t->slots, 0xff, 64 * 4);
}

static void kit_close(fu_kit_t *t) {
  hsad_program_destroy(t->p);
  hsad_runtime_close(t->e.rt);
}

/* fan-in of `n` sources into one sink (index n) on lane 0 */
static hsad_graph_exec_t *fan_in(fu_kit_t *t, uint32_t n, hsad_queue_t *q) {
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t src[64];
  for (uint32_t i = 0; i < n; i++) src[i] = rec(g, NULL, 0, t->k, t->counter, t->slots, i, NULL, 0);
  rec(g, "sink", 0, t->k, t->counter, t->slots, n, src, n);
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  return x;
}

static void check_fan_in(const fu_kit_t *t, uint32_t n) {
  cr_assert_eq(*t->counter, n + 1);
  cr_assert_eq(t->slots[n], n, "sink ticket %u", t->slots[n]);
  for (uint32_t i = 0; i < n; i++) cr_assert(t->slots[i] < n, "source %u ticket %u", i, t->slots[i]);
}

Test(fusion_rollback, requested_same_results, .timeout = 60) {
  fu_kit_t t;
  kit_open(&t);
  hsad_queue_t *q = th_queue(&t.e, 64);
  hsad_graph_exec_t *x = fan_in(&t, 5, q);
  hsad_graph_rollback_t why = HSAD_GRAPH_ROLLBACK_COUNT;
  hsad_completion_t c;
  TH_OK(hsad_graph_launch(x, HSAD_GRAPH_SEQUENTIAL, th_in(TH_SEC), &c, &why));
  cr_assert_eq(why, HSAD_GRAPH_ROLLBACK_REQUESTED);
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  check_fan_in(&t, 5);
  cr_assert_eq(c.packet_id, 5);  /* one packet per node, no barrier */
  cr_assert_eq(c.epoch, 6);      /* every node is an epoch packet */
  *t.counter = 0;
  TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), &c, &why));
  cr_assert_eq(why, HSAD_GRAPH_ROLLBACK_NONE);
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  check_fan_in(&t, 5);
  cr_assert_eq(c.packet_id, 11);
  cr_assert_eq(c.epoch, 7);      /* the fused launch: one epoch */
  uint64_t cnt[HSAD_GRAPH_ROLLBACK_COUNT];
  hsad_graph_exec_counters(x, cnt);
  cr_assert_eq(cnt[HSAD_GRAPH_ROLLBACK_NONE], 1);
  cr_assert_eq(cnt[HSAD_GRAPH_ROLLBACK_REQUESTED], 1);
  cr_assert_str_eq(hsad_graph_rollback_name(why), "fused");
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q);
  kit_close(&t);
}

Test(fusion_rollback, ring_too_small, .timeout = 60) {
  fu_kit_t t;
  kit_open(&t);
  uint32_t qmin = hsad_device_info(t.e.dev)->queue_min_size;
  uint32_t size = qmin > 16 ? qmin : 16;
  hsad_queue_t *q = th_queue(&t.e, size);
  hsad_graph_exec_t *x = fan_in(&t, size, q);  /* size + 1 packets */
  hsad_graph_rollback_t why;
  hsad_completion_t c;
  char want[256];
  snprintf(want, sizeof want, "graph launch cannot be fused (ring too small: %u packets on queue "
           "0, its ring holds %u) and rollback is forbidden", size + 1, size);
  hsad_status_t s = hsad_graph_launch(x, HSAD_GRAPH_NO_ROLLBACK, th_in(TH_SEC), &c, &why);
  cr_assert_eq(s, HSAD_ERR_RESOURCE_EXHAUSTED);
  cr_assert_str_eq(hsad_last_error(), want);
  TH_OK(hsad_graph_launch(x, 0, th_in(10 * TH_SEC), &c, &why));
  cr_assert_eq(why, HSAD_GRAPH_ROLLBACK_RING_SIZE);
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  check_fan_in(&t, size);
  uint64_t cnt[HSAD_GRAPH_ROLLBACK_COUNT];
  hsad_graph_exec_counters(x, cnt);
  cr_assert_eq(cnt[HSAD_GRAPH_ROLLBACK_RING_SIZE], 1);
  cr_assert_eq(cnt[HSAD_GRAPH_ROLLBACK_NONE], 0);
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q);
  kit_close(&t);
}

/* size - 2 slow fire-and-forget dispatches leave 2 free slots; the fused run needs 4: the
 * launch waits for room (as hsad_kernel_dispatch does) and runs fused after them. */
Test(fusion_rollback, ring_full_waits, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "5000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "count_dispatch", 1);
  fu_kit_t t;
  kit_open(&t);
  const hsad_device_kernel_t *kc;
  hsad_program_t *pc = th_load(&t.e, "count_dispatch", 5, "count_dispatch", &kc);
  uint32_t size = hsad_device_info(t.e.dev)->queue_min_size;
  hsad_queue_t *q = th_queue(&t.e, size);
  hsad_graph_exec_t *x = fan_in(&t, 3, q);
  cr_assert_eq(hsad_graph_exec_packet_count(x, 0), 4);
  uint32_t *cnt = th_alloc(&t.e, 4), one = 1;
  *cnt = 0;
  hsad_karg_t a[2] = {HSAD_KARG_PTR(cnt), HSAD_KARG_VAL(one)};
  hsad_launch_t l = {.dims = 1, .grid = {1}, .block = {1}, .args = a, .arg_count = 2};
  for (uint32_t i = 0; i < size - 2; i++)
    TH_OK(hsad_kernel_dispatch(q, kc, &l, th_in(TH_SEC), NULL, NULL));
  hsad_graph_rollback_t why;
  hsad_completion_t c;
  TH_OK(hsad_graph_launch(x, 0, th_in(20 * TH_SEC), &c, &why));
  cr_assert_eq(why, HSAD_GRAPH_ROLLBACK_NONE);
  TH_OK(hsad_completion_wait(&c, th_in(20 * TH_SEC)));
  check_fan_in(&t, 3);
  cr_assert_eq(*cnt, size - 2, "the graph's completion covers the queue's earlier work");
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q);
  hsad_program_destroy(pc);
  kit_close(&t);
}

/* Lane 0 waits for lane 1 and lane 1 for lane 0 on two queues (a0 -> b0 -> a1): fused since
 * epoch points (it rolled back on every launch as "cross-queue edges both ways"); with
 * HSAD_GRAPH_NO_ROLLBACK too. */
Test(fusion_rollback, edges_both_ways_fuse, .timeout = 60) {
  fu_kit_t t;
  kit_open(&t);
  hsad_queue_t *q[2] = {th_queue(&t.e, 64), th_queue(&t.e, 64)};
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(HSAD_GRAPH_CAPTURE, &g));
  uint32_t a0 = rec(g, "a0", 0, t.k, t.counter, t.slots, 0, NULL, 0);
  uint32_t b0 = rec(g, "b0", 1, t.k, t.counter, t.slots, 1, &a0, 1);
  rec(g, "a1", 0, t.k, t.counter, t.slots, 2, &b0, 1);
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, q, 2, &x));
  hsad_graph_destroy(g);
  /* queue 0: a0 (point 0), barrier-value on b0's point, a1 (point 1); queue 1: barrier-value
   * on a0's point, b0 (a producer: BARRIER bit, its point) */
  cr_assert_eq(hsad_graph_exec_packet_count(x, 0), 3);
  cr_assert_eq(hsad_graph_exec_packet_count(x, 1), 2);
  hsad_graph_rollback_t why;
  hsad_completion_t c[2];
  for (int round = 0; round < 4; round++) {
    *t.counter = 0;
    TH_OK(hsad_graph_launch(x, round ? 0 : HSAD_GRAPH_NO_ROLLBACK, th_in(10 * TH_SEC), c, &why));
    cr_assert_eq(why, HSAD_GRAPH_ROLLBACK_NONE);
    TH_OK(hsad_completion_wait_all(c, 2, th_in(10 * TH_SEC)));
    cr_assert_eq(t.slots[0], 0);
    cr_assert_eq(t.slots[1], 1);
    cr_assert_eq(t.slots[2], 2);
  }
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(q[1]);
  hsad_queue_destroy(q[0]);
  kit_close(&t);
}

/* A fault mid-graph reaches every waiter of the launch within its deadline; the exec then runs
 * on a new queue (the faulting node faults there too: KFD_EMU_FAULT_KERNEL is per process). */
Test(fusion, fault_mid_graph, .timeout = 60) {
  setenv("KFD_EMU_FAULT_KERNEL", "fill", 1);
  fu_kit_t t;
  kit_open(&t);
  const hsad_device_kernel_t *kf;
  hsad_program_t *pf = th_load(&t.e, "fill", 5, "fill", &kf);
  hsad_queue_t *q[2] = {th_queue(&t.e, 64), th_queue(&t.e, 64)};
  uint32_t *buf = th_alloc(&t.e, 64 * 4), v = 5, n = 64;
  hsad_karg_t fa[3] = {HSAD_KARG_PTR(buf), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
  hsad_launch_t fl = {.dims = 1, .grid = {64}, .block = {64}, .args = fa, .arg_count = 3};
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(HSAD_GRAPH_CAPTURE, &g));
  rec(g, "first", 0, t.k, t.counter, t.slots, 0, NULL, 0);
  uint32_t f = 0;
  TH_OK(hsad_graph_add_kernel(g, "faulty", 0, kf, &fl, NULL, 0, &f));
  rec(g, "after", 0, t.k, t.counter, t.slots, 1, NULL, 0);
  rec(g, "other", 1, t.k, t.counter, t.slots, 2, &f, 1);
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, q, 2, &x));
  hsad_graph_destroy(g);
  hsad_completion_t c[2];
  char msg[512];
  TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), c, NULL));
  TH_ERR_IS(hsad_completion_wait_all(c, 2, th_in(5 * TH_SEC)), HSAD_ERR_QUEUE_ERROR,
            "completion 0 of 2: %s", th_fault_msg(q[0], msg, sizeof msg));
  TH_ERR_IS(hsad_completion_wait(&c[0], th_in(5 * TH_SEC)), HSAD_ERR_QUEUE_ERROR, "%s", msg);
  /* queue 1's barrier-value waiter was released by the fault (hsad_queue.h: its queue goes
   * on), so its completion is reached; only wait_all / queue 0 report the error */
  TH_OK(hsad_completion_wait(&c[1], th_in(5 * TH_SEC)));
  cr_assert_eq(*t.counter, 2);
  cr_assert_eq(t.slots[0], 0);        /* the node before the fault ran first */
  cr_assert_eq(t.slots[1], 0xffffffffu); /* the node behind the fault never ran */
  cr_assert_eq(t.slots[2], 1);
  /* the sticky error refuses the next launch before anything is reserved */
  TH_ERR_IS(hsad_graph_launch(x, 0, th_in(TH_SEC), c, NULL), HSAD_ERR_QUEUE_ERROR, "%s", msg);
  hsad_queue_t *fresh = th_queue(&t.e, 64);
  TH_OK(hsad_graph_exec_set_queue(x, 0, fresh));
  cr_assert_eq(hsad_graph_exec_queue(x, 0), fresh);
  *t.counter = 0;
  memset(t.slots, 0xff, 12);
  TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), c, NULL));
  TH_ERR_IS(hsad_completion_wait_all(c, 2, th_in(5 * TH_SEC)), HSAD_ERR_QUEUE_ERROR,
            "completion 0 of 2: %s", th_fault_msg(fresh, msg, sizeof msg));
  TH_OK(hsad_completion_wait(&c[1], th_in(5 * TH_SEC)));
  cr_assert_eq(*t.counter, 2);
  cr_assert_eq(t.slots[0], 0);        /* ran on the new queue */
  cr_assert_eq(t.slots[1], 0xffffffffu); /* behind the fault: never ran */
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(fresh);
  hsad_queue_destroy(q[1]);
  hsad_queue_destroy(q[0]);
  hsad_program_destroy(pf);
  kit_close(&t);
}

/* A same-shape update of a node's first argument survives a move to another queue
 * (hsad_graph_exec_set_queue rebuilds each kernel from its stored launch, refreshed from the
 * latest segment; seed 28 mutant 51 refreshed every argument but the first, so the moved exec
 * wrote the old buffer). fill(dst, value, n): b1 at instantiate, b2 by update, then the move. */
Test(fusion, update_of_first_argument_survives_set_queue, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "fill", 5, "fill", &k, &q);
  uint32_t *b1 = th_alloc(&e, 64 * 4), *b2 = th_alloc(&e, 64 * 4), v = 7, n = 64;
  memset(b1, 0, 256);
  memset(b2, 0, 256);
  hsad_karg_t a[3] = {HSAD_KARG_PTR(b1), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {64}, .block = {64}, .args = a, .arg_count = 3};
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t node;
  TH_OK(hsad_graph_add_kernel(g, "F", 0, k, &l, NULL, 0, &node));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  hsad_completion_t c;
  TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), &c, NULL));
  TH_OK(hsad_completion_wait(&c, th_in(5 * TH_SEC)));
  a[0] = HSAD_KARG_PTR(b2);
  v = 9;
  TH_OK(hsad_graph_exec_update(x, node, &l));
  TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), &c, NULL));
  TH_OK(hsad_completion_wait(&c, th_in(5 * TH_SEC)));
  for (uint32_t i = 0; i < 64; i++) {
    cr_assert_eq(b1[i], 7, "b1[%u] = %u", i, b1[i]);
    cr_assert_eq(b2[i], 9, "b2[%u] = %u", i, b2[i]);
  }
  memset(b2, 0, 256);
  hsad_queue_t *fresh = th_queue(&e, 64);
  TH_OK(hsad_graph_exec_set_queue(x, 0, fresh));
  TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), &c, NULL));
  TH_OK(hsad_completion_wait(&c, th_in(5 * TH_SEC)));
  for (uint32_t i = 0; i < 64; i++) {
    cr_assert_eq(b1[i], 7, "after the move: b1[%u] = %u", i, b1[i]);
    cr_assert_eq(b2[i], 9, "after the move: b2[%u] = %u", i, b2[i]);
  }
  hsad_graph_exec_destroy(x);
  hsad_queue_destroy(fresh);
  hsad_buffer_free(b2);
  hsad_buffer_free(b1);
  th_finish(&e, q, p);
}

/* hsad graph: the example pipeline fused and sequential, and an error naming node and field. */
static char *run_cmd(const char *cmd, int *rc) {
  FILE *f = popen(cmd, "r");
  cr_assert_not_null(f);
  static char out[8192];
  size_t n = fread(out, 1, sizeof out - 1, f);
  out[n] = 0;
  *rc = pclose(f);
  return out;
}

Test(fusion_cli, example_pipeline, .timeout = 120) {
  int rc;
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "cd %s && %s graph examples/saxpy-pipeline.json --launches 100 2>&1",
           HSAD_SRCDIR, HSAD_BIN);
  char *out = run_cmd(cmd, &rc);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "graph examples/saxpy-pipeline.json: 3 nodes on 2 queue(s), 100 "
                        "launch(es), path: fused\n  queue 0: 3 packets, 1 doorbell per launch\n"
                        "  queue 1: 1 packet, 1 doorbell per launch\n"), "%s", out);
  cr_assert(strstr(out, "  check out: 5 elements OK\n  check y: 4 elements OK\n"), "%s", out);
  snprintf(cmd, sizeof cmd, "cd %s && %s graph examples/saxpy-pipeline.json --launches 100 "
           "--sequential 2>&1", HSAD_SRCDIR, HSAD_BIN);
  out = run_cmd(cmd, &rc);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "path: sequential requested\n  not fused: 100 of 100 launches "
                        "(sequential requested)\n"), "%s", out);
  cr_assert(strstr(out, "  check out: 5 elements OK\n"), "%s", out);
  /* as README.md's first mention runs it: one launch, the checks hold (they describe the buffers
   * after the first launch whatever --launches says) */
  snprintf(cmd, sizeof cmd, "cd %s && %s graph examples/saxpy-pipeline.json 2>&1", HSAD_SRCDIR,
           HSAD_BIN);
  out = run_cmd(cmd, &rc);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, ", 1 launch(es), path: fused\n"), "%s", out);
  cr_assert(strstr(out, "  check out: 5 elements OK\n  check y: 4 elements OK\n"), "%s", out);
  /* options through getopt_long, with clear errors */
  snprintf(cmd, sizeof cmd, "cd %s && %s graph --launches=0 examples/saxpy-pipeline.json 2>&1",
           HSAD_SRCDIR, HSAD_BIN);
  out = run_cmd(cmd, &rc);
  cr_assert_eq(WEXITSTATUS(rc), 2);
  cr_assert_str_eq(out, "hsad graph: --launches 0: expected an integer from 1 to 1000000\n");
  snprintf(cmd, sizeof cmd, "%s graph x.json --launches 2>&1", HSAD_BIN);
  out = run_cmd(cmd, &rc);
  cr_assert_eq(WEXITSTATUS(rc), 2);
  cr_assert_str_eq(out, "hsad graph: option '--launches' needs a value (see hsad graph --help)\n");
}

/* A check that does not hold names the check, the element, both values and the launch. */
Test(fusion_cli, failed_check_names_element, .timeout = 60) {
  char path[] = "/tmp/hsad-graph-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  const char *js = "{\"kernels\": {\"s\": {\"source\": \"" HSAD_SRCDIR "/kernels/saxpy.cl\", "
                   "\"kernel\": \"saxpy\"}}, \"buffers\": {\"x\": {\"type\": \"f32\", \"count\": 4,"
                   " \"init\": \"iota\"}, \"y\": {\"type\": \"f32\", \"count\": 4}},"
                   " \"nodes\": [{\"name\": \"first\", \"kernel\": \"s\", \"grid\": [4],"
                   " \"args\": [{\"f32\": 2}, \"x\", \"y\", {\"u32\": 4}]}],"
                   " \"checks\": [{\"buffer\": \"y\", \"equals\": [0, 2, 5, 6]}]}";
  cr_assert_eq(write(fd, js, strlen(js)), (ssize_t)strlen(js));
  close(fd);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "%s graph %s --launches 3 2>/dev/null", HSAD_BIN, path);
  int rc;
  run_cmd(cmd, &rc);
  cr_assert_eq(WEXITSTATUS(rc), 1);
  snprintf(cmd, sizeof cmd, "%s graph %s --launches 3 2>&1 >/dev/null", HSAD_BIN, path);
  char *out = run_cmd(cmd, &rc);
  unlink(path);
  /* y = 2 * iota after the first launch: y[2] is 4 */
  cr_assert_str_eq(out, "hsad graph: checks[0]: buffer y[2] is 4, field \"equals\" wants 5 (after "
                        "the first launch)\n");
}

Test(fusion_cli, errors_name_node_and_field, .timeout = 60) {
  char path[] = "/tmp/hsad-graph-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  const char *js = "{\"kernels\": {\"s\": {\"source\": \"" HSAD_SRCDIR "/kernels/saxpy.cl\", "
                   "\"kernel\": \"saxpy\"}}, \"buffers\": {\"x\": {\"type\": \"f32\", \"count\": 4}},"
                   " \"nodes\": [{\"name\": \"first\", \"kernel\": \"s\", \"grid\": [4],"
                   " \"args\": [{\"f32\": 1}, \"x\", \"nope\", {\"u32\": 4}]}]}";
  cr_assert_eq(write(fd, js, strlen(js)), (ssize_t)strlen(js));
  close(fd);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "%s graph %s 2>&1", HSAD_BIN, path);
  int rc;
  char *out = run_cmd(cmd, &rc);
  unlink(path);
  cr_assert_eq(WEXITSTATUS(rc), 1);
  cr_assert_str_eq(out, "hsad graph: node first: field \"args\"[2]: no buffer 'nope'\n");
}

/* Writes js to a temporary file (its path in path[32]) and runs `hsad graph PATH OPTS`, stderr
 * merged; returns the output (static) and the exit status in *rc. */
static char *graph_json(const char *js, const char *opts, char path[32], int *rc) {
  snprintf(path, 32, "/tmp/hsad-graph-XXXXXX");
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  cr_assert_eq(write(fd, js, strlen(js)), (ssize_t)strlen(js));
  close(fd);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "%s graph %s %s 2>&1", HSAD_BIN, path, opts);
  char *out = run_cmd(cmd, rc);
  unlink(path);
  *rc = WEXITSTATUS(*rc);
  return out;
}

/* A failed check prints the element as it is: integers exactly (a u32 of 4000000001 was "4e+09",
 * a u64 of 2^64 - 1 "1.84467441e+19": the value and the wanted one read the same), an f64 with
 * the 17 digits that tell it from its neighbours ("0.3" for 0.30000000000000004), an f32 with 9
 * (found by a fresh-eyes run). */
Test(fusion_cli, failed_check_prints_exact_element, .timeout = 120) {
  static const struct {
    const char *type, *init, *equals, *msg;
  } cases[] = {
      {"u32", "const=4000000001", "4000000000",
       "buffer z[0] is 4000000001, field \"equals\" wants 4000000000"},
      {"u64", "const=18446744073709551615", "[18446744073709551614]",
       "buffer z[0] is 18446744073709551615, field \"equals\" wants 18446744073709551614"},
      {"i64", "const=-9007199254740993", "-9007199254740992",
       "buffer z[0] is -9007199254740993, field \"equals\" wants -9007199254740992"},
      {"i32", "const=-2147483647", "[-2147483648]",
       "buffer z[0] is -2147483647, field \"equals\" wants -2147483648"},
      {"f64", "const=0.30000000000000004", "0.3",
       "buffer z[0] is 0.30000000000000004, field \"equals\" wants 0.3"},
      {"f32", "const=16777217", "16777218",
       "buffer z[0] is 16777216, field \"equals\" wants 16777218"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char js[1024], path[32], want[512];
    snprintf(js, sizeof js, "{\"kernels\": {}, \"buffers\": {\"z\": {\"type\": \"%s\", \"count\": "
             "2, \"init\": \"%s\"}, \"w\": {\"type\": \"u32\", \"count\": 4}}, \"nodes\": "
             "[{\"name\": \"f\", \"fill\": {\"dst\": \"w\", \"value\": 1}}], \"checks\": "
             "[{\"buffer\": \"z\", \"equals\": %s}]}", cases[i].type, cases[i].init,
             cases[i].equals);
    int rc;
    char *out = graph_json(js, "", path, &rc);
    snprintf(want, sizeof want, "hsad graph: checks[0]: %s (after the first launch)\n",
             cases[i].msg);
    cr_assert_eq(rc, 1, "%s: %s", cases[i].type, out);
    cr_assert_str_eq(out, want, "%s", cases[i].type);
  }
}

/* saxpy(float a, float* x, float* y, uint n) with buffers of four types, one node with `args` */
static char *saxpy_node(const char *args, int *rc) {
  char js[2048], path[32];
  snprintf(js, sizeof js, "{\"kernels\": {\"s\": {\"source\": \"" HSAD_SRCDIR "/kernels/saxpy.cl\","
           " \"kernel\": \"saxpy\"}}, \"buffers\": {\"x\": {\"type\": \"f32\", \"count\": 4, "
           "\"init\": \"iota\"}, \"y\": {\"type\": \"f32\", \"count\": 4}, \"d\": {\"type\": "
           "\"f64\", \"count\": 4}, \"u\": {\"type\": \"u32\", \"count\": 4}}, \"nodes\": "
           "[{\"name\": \"first\", \"kernel\": \"s\", \"grid\": [4], \"args\": %s}], \"checks\": "
           "[{\"buffer\": \"y\", \"equals\": [0, 2, 4, 6]}]}", args);
  return graph_json(js, "", path, rc);
}

/* A \u0000 escape in any JSON string is refused with its position: json-c keeps the NUL, but names,
 * paths and values are C strings, so "x\u0000junk" used to run as buffer "x" (and a kernel
 * "saxpy\u0000zz", a dep "a\u0000q", a type "f32\u0000" alike). An escaped backslash before
 * "u0000" is no escape: that name reaches the buffer lookup. */
Test(fusion_cli, nul_escape_refused, .timeout = 60) {
  char js[1024], path[32], want[512];
  const char *head = "{\"kernels\": {\"s\": {\"source\": \"" HSAD_SRCDIR "/kernels/saxpy.cl\", "
                     "\"kernel\": \"saxpy\"}}, \"buffers\": {\"x\": {\"type\": \"f32\", \"count\": "
                     "4}, \"y\": {\"type\": \"f32\", \"count\": 4}}, \"nodes\": [{\"name\": \"a\", "
                     "\"kernel\": \"s\", \"grid\": [4], \"args\": [{\"f32\": 2}, \"x";
  snprintf(js, sizeof js, "%s\\u0000junk\", \"y\", {\"u32\": 4}]}]}", head);
  int rc;
  char *out = graph_json(js, "", path, &rc);
  cr_assert_eq(rc, 1, "%s", out);
  size_t at = strlen(head);
  snprintf(want, sizeof want, "hsad graph: %s: line 1, column %zu (byte %zu): a \\u0000 escape (a "
           "NUL character) in a string: names, paths and values are C strings, which would end "
           "there\n", path, at + 1, at);
  cr_assert_str_eq(out, want);
  snprintf(js, sizeof js, "%s\\\\u0000\", \"y\", {\"u32\": 4}]}]}", head);
  out = graph_json(js, "", path, &rc);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert_str_eq(out, "hsad graph: node a: field \"args\"[1]: no buffer 'x\\u0000'\n");
}

/* A node's arguments go through hsad run's checks against the metadata (kind, type, element
 * type, count) and its values through hsad run's range and integrality checks. */
Test(fusion_cli, args_checked_against_metadata, .timeout = 120) {
  static const struct {
    const char *args, *msg;
  } bad[] = {
      {"[{\"u32\": 2}, \"x\", \"y\", {\"u32\": 4}]",
       "node first: argument 0 of kernel 'saxpy' is a float: give {\"f32\": VALUE}"},
      {"[{\"f32\": 2}, \"x\", \"y\", {\"f32\": 1024}]",
       "node first: argument 3 of kernel 'saxpy' is a uint: give {\"u32\": VALUE}"},
      {"[{\"f32\": 2}, \"x\", \"d\", {\"u32\": 4}]",
       "node first: argument 2 of kernel 'saxpy' is a float* (4-byte floating-point elements): "
       "give a buffer of type \"f32\", not buffer \"d\" of type \"f64\""},
      {"[{\"f32\": 2}, \"x\", \"u\", {\"u32\": 4}]",
       "node first: argument 2 of kernel 'saxpy' is a float* (4-byte floating-point elements): "
       "give a buffer of type \"f32\", not buffer \"u\" of type \"u32\""},
      {"[{\"f32\": 2}, \"x\", \"y\", {\"u32\": -1}]",
       "node first: argument 3 of kernel 'saxpy': '-1' is not an integer from 0 to 4294967295 (u32)"},
      {"[{\"f32\": 2}, \"x\", \"y\", {\"u32\": 2.5}]",
       "node first: argument 3 of kernel 'saxpy': '2.5' is not an integer from 0 to 4294967295 (u32)"},
      {"[{\"f32\": 2}, \"x\", \"y\", {\"u32\": 4294967296}]",
       "node first: argument 3 of kernel 'saxpy': '4294967296' is not an integer from 0 to "
       "4294967295 (u32)"},
      {"[{\"f32\": \"2\"}, \"x\", \"y\", {\"u32\": 4}]",
       "node first: argument 0 of kernel 'saxpy': \"2\" is not a number"},
      {"[{\"f32\": 2}, \"x\", \"y\"]",
       "node first: kernel 'saxpy' takes 4 argument(s) (float, float*, float*, uint), got 3 in "
       "\"args\""},
      {"[{\"f32\": 2}, {\"u32\": 3}, \"y\", {\"u32\": 4}]",
       "node first: argument 1 of kernel 'saxpy' is a global buffer (float*): give the name of a "
       "buffer"},
      {"[{\"f32\": 2}, \"x\", \"y\", \"u\"]",
       "node first: argument 3 of kernel 'saxpy' is a by-value uint (4 bytes), not a buffer: give "
       "its value ({\"TYPE\": VALUE} or {\"hex\": \"BYTES\"})"},
      {"[{\"f32\": 2}, \"x\", \"y\", {\"hex\": \"0400\"}]",
       "node first: argument 3 of kernel 'saxpy' is 4 bytes, got 2 bytes"},
      {"[{\"f32\": [2, 3]}, \"x\", \"y\", {\"u32\": 4}]",
       "node first: argument 0 of kernel 'saxpy' is a float: give {\"f32\": VALUE}"},
      {"[{\"f32\": 2}, \"x\", \"y\", {\"q32\": 4}]",
       "node first: field \"args\"[3]: \"q32\" is not a TYPE (i8 u8 i16 u16 i32 u32 i64 u64 f32 "
       "f64), \"hex\" or \"lds\""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc;
    char *out = saxpy_node(bad[i].args, &rc);
    char want[1024];
    snprintf(want, sizeof want, "hsad graph: %s\n", bad[i].msg);
    cr_assert_eq(rc, 1, "%s: %s", bad[i].args, out);
    cr_assert_str_eq(out, want, "%s", bad[i].args);
  }
  /* the right types run; n as raw bytes too */
  int rc;
  char *out = saxpy_node("[{\"f32\": 2}, \"x\", \"y\", {\"hex\": \"04000000\"}]", &rc);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "  check y: 4 elements OK\n"), "%s", out);
}

/* A graph of two saxpy nodes with text spliced into the top level, kernel s, buffer u (u32, 4
 * elements, checked), node second and check 0, and `equals` as the check's "equals". */
static char *two_nodes(const char *top, const char *kern, const char *buf, const char *node,
                       const char *chk, const char *equals, char path[32], int *rc) {
  /* a key the override gives replaces the default (a key given twice is refused) */
  const char *ucount = strstr(buf, "\"count\"") ? "" : ", \"count\": 4";
  const char *name = strstr(node, "\"name\"") ? "" : "\"name\": \"second\", ";
  const char *grid = strstr(node, "\"grid\"") ? "" : ", \"grid\": [4]";
  char js[4096];
  snprintf(js, sizeof js, "{\"kernels\": {\"s\": {\"source\": \"" HSAD_SRCDIR "/kernels/saxpy.cl\","
           " \"kernel\": \"saxpy\"%s}}, \"buffers\": {\"x\": {\"type\": \"f32\", \"count\": 4, "
           "\"init\": \"iota\"}, \"y\": {\"type\": \"f32\", \"count\": 4}, \"u\": {\"type\": \"u32\""
           "%s%s}}, \"nodes\": [{\"name\": "
           "\"first\", \"kernel\": \"s\", \"grid\": [4], \"args\": [{\"f32\": 2}, \"x\", \"y\", "
           "{\"u32\": 4}]}, {%s\"kernel\": \"s\"%s, \"args\": "
           "[{\"f32\": 2}, \"x\", \"y\", {\"u32\": 4}], \"deps\": [\"first\"]%s}], \"checks\": "
           "[{\"buffer\": \"u\", \"equals\": %s%s}]%s}", kern, ucount, buf, name, grid, node, equals,
           chk, top);
  return graph_json(js, "", path, rc);
}

/* A dependency named 1,500 times is one edge (the list once overflowed a 1,024-entry array on
 * the stack): the graph runs, 2 packets on one queue, y = 2x + (2x + 0) = 4x. */
Test(fusion_cli, repeated_dependency_is_one_edge, .timeout = 120) {
  static char js[24576];
  int o = snprintf(js, sizeof js, "{\"kernels\": {\"s\": {\"source\": \"" HSAD_SRCDIR
                   "/kernels/saxpy.cl\", \"kernel\": \"saxpy\"}}, \"buffers\": {\"x\": {\"type\": "
                   "\"f32\", \"count\": 4, \"init\": \"iota\"}, \"y\": {\"type\": \"f32\", "
                   "\"count\": 4}}, \"nodes\": [{\"name\": \"first\", \"kernel\": \"s\", \"grid\": "
                   "[4], \"args\": [{\"f32\": 2}, \"x\", \"y\", {\"u32\": 4}]}, {\"name\": "
                   "\"second\", \"kernel\": \"s\", \"grid\": [4], \"args\": [{\"f32\": 2}, \"x\", "
                   "\"y\", {\"u32\": 4}], \"deps\": [");
  for (int i = 0; i < 1500; i++) o += snprintf(js + o, sizeof js - o, "%s\"first\"", i ? ", " : "");
  snprintf(js + o, sizeof js - o, "]}], \"checks\": [{\"buffer\": \"y\", \"equals\": [0, 4, 8, 12]}]}");
  char path[32];
  int rc;
  char *out = graph_json(js, "", path, &rc);
  cr_assert_eq(rc, 0, "%s", out);
  char want[128];
  snprintf(want, sizeof want, "graph %s: 2 nodes on 1 queue(s), 1 launch(es), path: fused\n", path);
  cr_assert(strncmp(out, want, strlen(want)) == 0, "%s", out);
  cr_assert(strstr(out, "\n  queue 0: 2 packets, 1 doorbell per launch\n"), "%s", out);
  cr_assert(strstr(out, "\n  check y: 4 elements OK\n"), "%s", out);
}

/* Unknown keys are errors naming the key, where it is and the known keys ("dep" for "deps"
 * would drop a dependency); a check longer than its buffer, or with a value its type cannot
 * hold, is refused before anything runs. */
Test(fusion_cli, unknown_keys_and_bad_checks, .timeout = 120) {
  char path[32], want[1024];
  int rc;
  char *out = two_nodes(", \"check\": []", "", "", "", "", "[0]", path, &rc);
  snprintf(want, sizeof want, "hsad graph: %s: top level: unknown key \"check\" (known: kernels, "
           "buffers, nodes, checks)\n", path);
  cr_assert_eq(rc, 1);
  cr_assert_str_eq(out, want);
  static const struct {
    const char *kern, *buf, *node, *chk, *equals, *msg;
  } bad[] = {
      {", \"src\": \"a.cl\"", "", "", "", "[0]",
       "kernel s: unknown key \"src\" (known: code_object, source, kernel)"},
      {"", ", \"int\": \"iota\"", "", "", "[0]",
       "buffer u: unknown key \"int\" (known: type, count, init)"},
      {"", "", ", \"dep\": [\"first\"]", "", "[0]",
       "node second: unknown key \"dep\" (known: name, kernel, lane, grid, block, args, deps, copy, fill)"},
      {"", "", ", \"grdi\": [4]", "", "[0]",
       "node second: unknown key \"grdi\" (known: name, kernel, lane, grid, block, args, deps, copy, fill)"},
      {"", "", "", ", \"equal\": 0", "[0]",
       "checks[0]: unknown key \"equal\" (known: buffer, equals)"},
      {"", "", "", "", "[0, 0, 0, 0, 0]",
       "checks[0]: field \"equals\": 5 values, buffer u has 4 elements (an array checks 1 to 4 "
       "first elements, a number all of them)"},
      {"", "", "", "", "[0, 2.5]",
       "checks[0]: field \"equals\"[1]: '2.5' is not an integer from 0 to 4294967295 (u32)"},
      {"", "", "", "", "-1",
       "checks[0]: field \"equals\": '-1' is not an integer from 0 to 4294967295 (u32)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    out = two_nodes("", bad[i].kern, bad[i].buf, bad[i].node, bad[i].chk, bad[i].equals, path,
                    &rc);
    snprintf(want, sizeof want, "hsad graph: %s\n", bad[i].msg);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_str_eq(out, want);
  }
  out = two_nodes("", "", "", "", "", "[0, 0, 0, 0]", path, &rc);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "  check u: 4 elements OK\n"), "%s", out);
}

/* Numbers out of range are reported with the value as written: a count whose bytes exceed the
 * buffer limit (not a wrapped size), a negative lane, grid or count, a fraction. */
Test(fusion_cli, numbers_out_of_range, .timeout = 120) {
  static const struct {
    const char *buf, *node, *msg;
  } bad[] = {
      {", \"count\": 4611686018427387904", "",
       "buffer u: field \"count\": 4611686018427387904 x 4-byte u32 exceeds the buffer limit of "
       "1099511627776 bytes (274877906944 elements)"},
      {", \"count\": -4", "",
       "buffer u: field \"count\": '-4' is not an integer from 1 to 274877906944 (the buffer "
       "limit, 1099511627776 bytes, in 4-byte u32 elements)"},
      {", \"count\": 2.5", "",
       "buffer u: field \"count\": '2.5' is not an integer from 1 to 274877906944 (the buffer "
       "limit, 1099511627776 bytes, in 4-byte u32 elements)"},
      {", \"init\": \"const=-1\"", "",
       "buffer u: field \"init\": const=V: '-1' is not an integer from 0 to 4294967295 (u32)"},
      {"", ", \"lane\": -1",
       "node second: field \"lane\": '-1' is not an integer from 0 to 63 (one queue per lane, at "
       "most 64)"},
      {"", ", \"lane\": 64",
       "node second: field \"lane\": '64' is not an integer from 0 to 63 (one queue per lane, at "
       "most 64)"},
      {"", ", \"grid\": [-4]",
       "node second: field \"grid\"[0]: '-4' is not an integer from 1 to 4294967295"},
      {"", ", \"block\": [4294967296]",
       "node second: field \"block\"[0]: '4294967296' is not an integer from 1 to 4294967295"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char path[32], want[1024];
    int rc;
    char *out = two_nodes("", "", bad[i].buf, bad[i].node, "", "[0]", path, &rc);
    snprintf(want, sizeof want, "hsad graph: %s\n", bad[i].msg);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_str_eq(out, want);
  }
}

/* hsad graph refuses a node name taken by an earlier node (deps name nodes) or longer than
 * the library keeps, before the library would. */
Test(fusion_cli, node_names_unique, .timeout = 120) {
  static const struct {
    const char *node, *msg;
  } bad[] = {
      {", \"name\": \"first\"",
       "node first: field \"name\": also the name of node #0 (names are unique: \"deps\" name "
       "nodes)"},
      {", \"name\": \"a_name_of_more_than_31_bytes_xxxx\"",
       "node a_name_of_more_than_31_bytes_xxxx: field \"name\": 33 bytes, at most 31"},
      {", \"name\": 7", "node #1: field \"name\": 7 is not a string"},
      {", \"name\": \"\"", "node #1: field \"name\": empty (leave it out for \"#1\")"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char path[32], want[1024];
    int rc;
    char *out = two_nodes("", "", "", bad[i].node, "", "[0]", path, &rc);
    snprintf(want, sizeof want, "hsad graph: %s\n", bad[i].msg);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_str_eq(out, want);
  }
}

/* A kernel with both "code_object" and "source" is refused (one of them silently won before). */
Test(fusion_cli, kernel_with_two_programs_refused, .timeout = 60) {
  char path[32];
  int rc;
  char *out = two_nodes("", ", \"code_object\": \"saxpy-gfx90a-v5.hsaco\"", "", "", "", "[0]",
                        path, &rc);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert_str_eq(out, "hsad graph: kernel s: both \"code_object\" and \"source\"; give one\n");
}

/* A graph file that is not JSON: file, line, column and byte offset, with json-c's reason
 * (json_tokener_error_desc) or what is wrong; a directory or a missing file in one line. */
Test(fusion_cli, file_errors, .timeout = 60) {
  static const struct {
    const char *js, *msg;
  } bad[] = {
      {"{", "line 1, column 2 (byte 1): the JSON ends early (an unclosed {, [ or string)"},
      {"", "line 1, column 1 (byte 0): the file is empty (no JSON)"},
      {"{\n  \"nodes\": [],\n  \"kernels\": tru }",
       "line 3, column 17 (byte 33): JSON parse error: boolean expected"},
      {"{\"nodes\": []} x", "line 1, column 15 (byte 14): text after the JSON value"},
      {"[1, 2]", "not a JSON object"},
      /* a key given twice in one object: json-c keeps the last value alone, so buffer "x" was
       * silently the second definition and the first one's node messages named the other type
       * (found by a fresh-eyes run); the same key in two objects is fine */
      {"{\"buffers\": {\"x\": {\"type\": \"f32\", \"count\": 4},\n  \"y\": {\"type\": "
       "\"f32\", \"count\": 4}, \"x\": {\"type\": \"u8\", \"count\": 3}}}",
       "line 2, column 37 (byte 83): key \"x\" given a second time in the same object (first at "
       "line 1, column 14): JSON keeps only the last value; give each key once"},
      {"{\"nodes\": [{\"name\": \"a\", \"lane\": 0, \"lane\": 1}], \"kernels\": {}}",
       "line 1, column 37 (byte 36): key \"lane\" given a second time in the same object (first "
       "at line 1, column 26): JSON keeps only the last value; give each key once"},
      {"{\"a\": 1, \"b\": 2, \"b\": 3, \"a\": 4}",
       "line 1, column 18 (byte 17): key \"b\" given a second time in the same object (first at "
       "line 1, column 10): JSON keeps only the last value; give each key once"},
      {"{\"a\": {\"k\": \"\\\"k\\\"\", \"\\\"k\\\"\": 1}, \"a\": []}",
       "line 1, column 35 (byte 34): key \"a\" given a second time in the same object (first at "
       "line 1, column 2): JSON keeps only the last value; give each key once"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char path[32], want[512];
    int rc;
    char *out = graph_json(bad[i].js, "", path, &rc);
    snprintf(want, sizeof want, "hsad graph: %s: %s\n", path, bad[i].msg);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert_str_eq(out, want);
  }
  int rc;
  char *out = run_cmd(HSAD_BIN " graph /tmp 2>&1", &rc);
  cr_assert_eq(WEXITSTATUS(rc), 1);
  cr_assert_str_eq(out, "hsad graph: /tmp is a directory (give a graph's .json file)\n");
  out = run_cmd(HSAD_BIN " graph /nonexistent/g.json 2>&1", &rc);
  cr_assert_eq(WEXITSTATUS(rc), 1);
  cr_assert_str_eq(out, "hsad graph: /nonexistent/g.json: No such file or directory\n");
}

/* struct_1k's blob for launch r: v[j] = r x 1000 + j. */
static void blob_1k(uint32_t *v, uint32_t r) {
  for (uint32_t j = 0; j < 256; j++) v[j] = r * 1000u + j;
}

/* Kernels whose kernarg segment spans several kernarg blocks (struct_1k: 1296 bytes on 512-byte
 * blocks = 3 slots) fuse with their padding: A (struct_1k) -> B (struct_1k) -> C (fill), one
 * queue: packets A, pad, pad, B (BARRIER), pad, pad, C (BARRIER, the epoch): 7 per launch, the
 * padding barrier-AND word 0x0003 (no BARRIER bit, no fences) of node -1. Three fused launches
 * with A's struct updated in place (doorbell 7r + 6), then one sequential (each node its own
 * epoch: A's and B's last padding packet carries it, 7 packets again): every result exact. A
 * graph whose last packet is padding turns it into the epoch barrier (0x1503). */
Test(fusion, kernarg_spanning_nodes, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *ks, *kf;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "big_args", 5, "struct_1k", &ks, &q);
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &kf);
  enum { N = 300 };
  uint32_t *out = th_alloc(&e, 2 * N * 4), *fo = th_alloc(&e, 16 * 4);
  static uint32_t va[256], vb[256];
  blob_1k(va, 1);
  blob_1k(vb, 2);
  uint32_t n = N, fv = 77, fn = 16;
  hsad_karg_t aa[3] = {HSAD_KARG_PTR(out), {.tag = HSAD_KARG_BYTES, .size = 1024, .bytes = va},
                       HSAD_KARG_VAL(n)};
  hsad_karg_t ab[3] = {HSAD_KARG_PTR(out + N), {.tag = HSAD_KARG_BYTES, .size = 1024, .bytes = vb},
                       HSAD_KARG_VAL(n)};
  hsad_karg_t af[3] = {HSAD_KARG_PTR(fo), HSAD_KARG_VAL(fv), HSAD_KARG_VAL(fn)};
  hsad_launch_t la = {.dims = 1, .grid = {N}, .block = {64}, .args = aa, .arg_count = 3};
  hsad_launch_t lb = la, lf = {.dims = 1, .grid = {16}, .block = {16}, .args = af, .arg_count = 3};
  lb.args = ab;
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t a, b, c;
  TH_OK(hsad_graph_add_kernel(g, "A", 0, ks, &la, NULL, 0, &a));
  TH_OK(hsad_graph_add_kernel(g, "B", 0, ks, &lb, &a, 1, &b));
  TH_OK(hsad_graph_add_kernel(g, "C", 0, kf, &lf, &b, 1, &c));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  cr_assert_eq(hsad_graph_exec_packet_count(x, 0), 7);
  const int32_t want_node[7] = {0, -1, -1, 1, -1, -1, 2};
  const uint32_t want_word[7] = {0, 0x0003, 0x0003, 0, 0x0003, 0x0003, 0};
  for (uint32_t i = 0; i < 7; i++) {
    int32_t node;
    uint32_t w = pkt_word(x, 0, i, &node);
    cr_assert_eq(node, want_node[i], "packet %u node %d", i, node);
    if (want_node[i] < 0) {
      cr_assert_eq(w, want_word[i], "packet %u word %#x", i, w);
    } else {
      cr_assert_eq(TYPE(w), HSA_PACKET_TYPE_KERNEL_DISPATCH);
      cr_assert_eq(BAR(w), 1u, "packet %u barrier", i); /* 0: stream order; 3, 6: deps */
    }
  }
  for (uint32_t r = 0; r < 4; r++) {
    blob_1k(va, 10 + r);
    TH_OK(hsad_graph_exec_update(x, a, &la));
    memset(out, 0, 2 * N * 4);
    memset(fo, 0, 16 * 4);
    hsad_completion_t done;
    hsad_graph_rollback_t why;
    TH_OK(hsad_graph_launch(x, r == 3 ? HSAD_GRAPH_SEQUENTIAL : 0, th_in(TH_SEC), &done, &why));
    TH_OK(hsad_completion_wait_all(&done, 1, th_in(10 * TH_SEC)));
    cr_assert_eq(why, r == 3 ? HSAD_GRAPH_ROLLBACK_REQUESTED : HSAD_GRAPH_ROLLBACK_NONE);
    cr_assert_eq(done.packet_id, 7 * (uint64_t)r + 6, "launch %u completion at %llu", r,
                 (unsigned long long)done.packet_id);
    cr_assert_eq(doorbell_value(q), 7 * (uint64_t)r + 6);
    for (uint32_t i = 0; i < N; i++) {
      cr_assert_eq(out[i], (10 + r) * 1000u + i % 256 + i, "launch %u A out[%u] = %u", r, i, out[i]);
      cr_assert_eq(out[N + i], 2000u + i % 256 + i, "launch %u B out[%u] = %u", r, i, out[N + i]);
    }
    for (uint32_t i = 0; i < 16; i++) cr_assert_eq(fo[i], 77);
  }
  hsad_graph_exec_destroy(x);
  /* a lone spanning node: its last padding packet is the epoch barrier */
  TH_OK(hsad_graph_create(0, &g));
  TH_OK(hsad_graph_add_kernel(g, "A", 0, ks, &la, NULL, 0, &a));
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  cr_assert_eq(hsad_graph_exec_packet_count(x, 0), 3);
  int32_t node;
  cr_assert_eq(pkt_word(x, 0, 1, &node), 0x0003);
  cr_assert_eq(pkt_word(x, 0, 2, &node), 0x0003u | 1u << 8 | 2u << 9 | 2u << 11);
  cr_assert_eq(node, -1);
  hsad_completion_t done;
  TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), &done, NULL));
  TH_OK(hsad_completion_wait_all(&done, 1, th_in(10 * TH_SEC)));
  cr_assert_eq(done.packet_id, 28 + 2);
  for (uint32_t i = 0; i < N; i++) cr_assert_eq(out[i], 13000u + i % 256 + i);
  /* rebinding to a queue of 256-byte kernarg blocks would need 6 slots for A, not 3 */
  hsad_queue_t *q256;
  TH_OK(hsad_queue_create(e.dev, &(hsad_queue_options_t){.size = 64, .kernarg_block_size = 256},
                          &q256));
  cr_assert_eq(hsad_graph_exec_set_queue(x, 0, q256), HSAD_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(hsad_last_error(), "hsad_graph_exec_set_queue: node A: its kernarg segment of "
                   "1296 bytes takes 6 slots on the new queue (256-byte kernarg blocks), 3 on "
                   "queue 0; instantiate the graph on it instead");
  cr_assert_eq(hsad_graph_exec_queue(x, 0), q);
  hsad_queue_destroy(q256);
  hsad_graph_exec_destroy(x);
  hsad_buffer_free(out);
  hsad_buffer_free(fo);
  hsad_program_destroy(pf);
  th_finish(&e, q, p);
}

/* Launches exec x (one queue) and waits for it. */
static void launch_wait(hsad_graph_exec_t *x) {
  hsad_completion_t done;
  TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), &done, NULL));
  TH_OK(hsad_completion_wait_all(&done, 1, th_in(10 * TH_SEC)));
}

/* hsad_graph_exec_update's fast path (same geometry, pointers and 4/8-byte values, every run
 * completed) compares each argument's tag and size before it writes any: a value of another
 * size, a NULL value and a count that differs fail with the checks' messages and change
 * nothing (the next launch uses the earlier values); a pointer passed as 8 bytes takes the
 * general path and works; a POINTER's size field is ignored; 73 arguments (args72) update
 * through the loop that is not unrolled, all or nothing. */
Test(fusion, update_checks_every_argument, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *kf, *k72;
  hsad_queue_t *q;
  hsad_program_t *pf = th_start(&e, "fill", 5, "fill", &kf, &q);
  hsad_program_t *pb = th_load(&e, "big_args", 5, "args72", &k72);
  uint32_t *fo = th_alloc(&e, 32 * 4), *fo2 = fo + 16;
  memset(fo, 0, 32 * 4);
  uint32_t v = 7, n = 16;
  hsad_karg_t af[3] = {HSAD_KARG_PTR(fo), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
  hsad_launch_t lf = {.dims = 1, .grid = {16}, .block = {16}, .args = af, .arg_count = 3};
  hsad_graph_t *g;
  uint32_t f, b;
  TH_OK(hsad_graph_create(0, &g));
  TH_OK(hsad_graph_add_kernel(g, "F", 0, kf, &lf, NULL, 0, &f));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  launch_wait(x);
  for (uint32_t i = 0; i < 16; i++) cr_assert_eq(fo[i], 7);
  v = 5;
  n = 8;
  TH_OK(hsad_graph_exec_update(x, f, &lf));
  launch_wait(x);
  for (uint32_t i = 0; i < 16; i++) cr_assert_eq(fo[i], i < 8 ? 5u : 7u, "fo[%u] = %u", i, fo[i]);
  uint64_t wide = 9;
  af[1] = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .size = 8, .bytes = &wide};
  const char *dev = hsad_device_info(e.dev)->name;
  TH_ERR_IS(hsad_graph_exec_update(x, f, &lf), HSAD_ERR_ARG_SIZE, "node F: %s/fill-%s-v5.hsaco: "
            "kernel 'fill': argument 1 has .size 4, value has 8 bytes", TEST_KERNDIR, dev);
  af[1] = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .size = 4, .bytes = NULL};
  TH_ERR_IS(hsad_graph_exec_update(x, f, &lf), HSAD_ERR_INVALID_ARGUMENT, "node F: %s/fill-%s-v5"
            ".hsaco: kernel 'fill': argument 1: NULL bytes", TEST_KERNDIR, dev);
  af[1] = HSAD_KARG_VAL(v);
  lf.arg_count = 2;
  TH_ERR_IS(hsad_graph_exec_update(x, f, &lf), HSAD_ERR_ARG_COUNT, "node F: %s/fill-%s-v5.hsaco: "
            "kernel 'fill' takes 3 explicit arguments, got 2", TEST_KERNDIR, dev);
  lf.arg_count = 3;
  v = 3;
  n = 16;
  memset(fo, 0, 16 * 4);
  launch_wait(x); /* nothing changed: 5 into the first 8 */
  for (uint32_t i = 0; i < 16; i++) cr_assert_eq(fo[i], i < 8 ? 5u : 0u, "fo[%u] = %u", i, fo[i]);
  uint64_t a2 = (uintptr_t)fo2; /* an integer holding the address: refused (issue 21) */
  af[0] = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .size = 8, .bytes = &a2};
  TH_ERR_IS(hsad_graph_exec_update(x, f, &lf), HSAD_ERR_ARG_KIND, "node F: %s/fill-%s-v5.hsaco: "
            "kernel 'fill': argument 0 is a global_buffer (a pointer): pass HSAD_KARG_PTR(p) or "
            "HSAD_KARG_VAL of a pointer variable, not 8 bytes", TEST_KERNDIR, dev);
  uint32_t *p2 = fo2;
  af[0] = HSAD_KARG_VAL(p2);
  TH_OK(hsad_graph_exec_update(x, f, &lf)); /* HSAD_KARG_VAL of a pointer: a pointer argument */
  launch_wait(x);
  for (uint32_t i = 0; i < 16; i++) cr_assert_eq(fo2[i], 3, "fo2[%u] = %u", i, fo2[i]);
  af[0] = (hsad_karg_t){.tag = HSAD_KARG_POINTER, .size = 12345, .pointer = (uintptr_t)fo};
  v = 11;
  TH_OK(hsad_graph_exec_update(x, f, &lf));
  launch_wait(x);
  for (uint32_t i = 0; i < 16; i++) cr_assert_eq(fo[i], 11, "fo[%u] = %u", i, fo[i]);
  hsad_graph_exec_destroy(x);
  /* 73 arguments */
  uint64_t *o72 = th_alloc(&e, 72 * 8), a72v[72];
  hsad_karg_t a72[73] = {HSAD_KARG_PTR(o72)};
  for (uint32_t i = 0; i < 72; i++) {
    a72v[i] = 0x1000u + i;
    a72[1 + i] = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .size = 8, .bytes = &a72v[i]};
  }
  hsad_launch_t l72 = {.dims = 1, .grid = {1}, .block = {1}, .args = a72, .arg_count = 73};
  TH_OK(hsad_graph_create(0, &g));
  TH_OK(hsad_graph_add_kernel(g, "W", 0, k72, &l72, NULL, 0, &b));
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  for (uint32_t i = 0; i < 72; i++) a72v[i] = 0x2000u + i;
  TH_OK(hsad_graph_exec_update(x, b, &l72));
  for (uint32_t i = 0; i < 72; i++) a72v[i] = 0x3000u + i;
  a72[71].bytes = NULL; /* argument 71 (a70): the update fails before it writes a0 */
  TH_ERR_IS(hsad_graph_exec_update(x, b, &l72), HSAD_ERR_INVALID_ARGUMENT, "node W: %s/big_args-"
            "%s-v5.hsaco: kernel 'args72': argument 71: NULL bytes", TEST_KERNDIR, dev);
  launch_wait(x);
  for (uint32_t i = 0; i < 72; i++)
    cr_assert_eq(o72[i], 0x2000u + i, "o72[%u] = %#llx", i, (unsigned long long)o72[i]);
  hsad_graph_exec_destroy(x);
  hsad_buffer_free(o72);
  hsad_buffer_free(fo);
  hsad_program_destroy(pb);
  th_finish(&e, q, pf);
}


/* Issue 21: hsad_graph_exec_update checks a typed value against fill's .type_name (uint
 * value): the node recorded with typed u32 values (HSAD_KARG_VAL of uint32_t), an f32 literal
 * and a float lvalue refused with the argument and both types named, the exec unchanged (the
 * next launch writes the earlier value); a u32 literal (the recorded type: the fast path), an
 * i32 (another type: the checked path), untyped bytes and a SCALAR value each accepted, the
 * launch after each writing exactly that value; and an f32 refused again after them. */
Test(fusion, update_checks_value_types, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *kf;
  hsad_queue_t *q;
  hsad_program_t *pf = th_start(&e, "fill", 5, "fill", &kf, &q);
  uint32_t *fo = th_alloc(&e, 16 * 4);
  memset(fo, 0, 16 * 4);
  uint32_t v = 7, n = 16;
  hsad_karg_t af[3] = {HSAD_KARG_PTR(fo), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
  cr_assert_eq(af[1].type, HSAD_KARG_TYPE_U32);
  hsad_launch_t lf = {.dims = 1, .grid = {16}, .block = {16}, .args = af, .arg_count = 3};
  hsad_graph_t *g;
  uint32_t f;
  TH_OK(hsad_graph_create(0, &g));
  TH_OK(hsad_graph_add_kernel(g, "F", 0, kf, &lf, NULL, 0, &f));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  launch_wait(x);
  for (uint32_t i = 0; i < 16; i++) cr_assert_eq(fo[i], 7);
  const char *dev = hsad_device_info(e.dev)->name;
  float fv = 5.0f;
  hsad_karg_t floats[2] = {HSAD_KARG_F32(5.0f), HSAD_KARG_VAL(fv)};
  struct {
    hsad_karg_t v;
    uint32_t want;
  } ok[4] = {{HSAD_KARG_U32(9), 9},
             {HSAD_KARG_I32(4), 4},
             {(hsad_karg_t){.tag = HSAD_KARG_BYTES, .size = 4, .bytes = &n}, 16},
             {(hsad_karg_t){.tag = HSAD_KARG_SCALAR, .type = HSAD_KARG_TYPE_U32, .size = 4,
                            .scalar = 12},
              12}};
  uint32_t have = 7;
  for (int round = 0; round < 5; round++) {
    for (int j = 0; j < 2; j++) {
      af[1] = floats[j];
      TH_ERR_IS(hsad_graph_exec_update(x, f, &lf), HSAD_ERR_ARG_KIND, "node F: %s/fill-%s-v5"
                ".hsaco: kernel 'fill': argument 1 is uint (integer), the value given is f32 "
                "(floating-point)", TEST_KERNDIR, dev);
      memset(fo, 0, 16 * 4);
      launch_wait(x); /* unchanged */
      for (uint32_t i = 0; i < 16; i++)
        cr_assert_eq(fo[i], have, "round %d: fo[%u] = %u, want %u", round, i, fo[i], have);
    }
    if (round == 4) break;
    af[1] = ok[round].v;
    TH_OK(hsad_graph_exec_update(x, f, &lf));
    have = ok[round].want;
    memset(fo, 0, 16 * 4);
    launch_wait(x);
    for (uint32_t i = 0; i < 16; i++)
      cr_assert_eq(fo[i], have, "after value %d: fo[%u] = %u, want %u", round, i, fo[i], have);
  }
  hsad_graph_exec_destroy(x);
  hsad_buffer_free(fo);
  th_finish(&e, q, pf);
}

/* JSON null or a number where hsad graph wants a string (a file, kernel, node, dependency or
 * buffer name): an error naming the field and the value, never a crash (a null "buffer" in a
 * check and a null "code_object" crashed it, a null "name" said "out of memory"). */
Test(fusion_cli, null_and_wrong_types, .timeout = 60) {
  static const struct {
    const char *js, *msg;
  } bad[] = {
      {"{\"kernels\":{},\"buffers\":{\"b\":{\"type\":\"u32\",\"count\":4}},\"nodes\":[],"
       "\"checks\":[{\"buffer\":null,\"equals\":0}]}",
       "checks[0]: field \"buffer\": null is not a string (a buffer name)"},
      {"{\"kernels\":{\"k\":{\"kernel\":\"saxpy\",\"code_object\":null}},\"buffers\":{},"
       "\"nodes\":[]}",
       "kernel k: field \"code_object\": null is not a string (a file name)"},
      {"{\"kernels\":{\"k\":{\"kernel\":\"saxpy\",\"source\":7}},\"buffers\":{},\"nodes\":[]}",
       "kernel k: field \"source\": 7 is not a string (a file name)"},
      {"{\"kernels\":{},\"buffers\":{},\"nodes\":[{\"name\":null}]}",
       "node #0: field \"name\": null is not a string"},
      {"{\"kernels\":{},\"buffers\":{},\"nodes\":[{\"kernel\":null}]}",
       "node #0: field \"kernel\": null is not a string (a name under \"kernels\")"},
      {"{\"kernels\":{},\"buffers\":{},\"nodes\":[{\"name\":\"a\",\"kernel\":5}]}",
       "node a: field \"kernel\": 5 is not a string (a name under \"kernels\")"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char path[32], want[512];
    int rc;
    char *out = graph_json(bad[i].js, "", path, &rc);
    snprintf(want, sizeof want, "hsad graph: %s\n", bad[i].msg);
    cr_assert_eq(rc, 1, "case %zu: %s", i, out);
    cr_assert_str_eq(out, want, "case %zu", i);
  }
}

/* A kernel's "kernel" names C++ kernels as hsad run's KERNEL does (hsad_cli_program_kernel):
 * demangled, plain function name or mangled, each running its own kernel (twins of
 * tests/data/cli/mangled_twins.c: the float and double overloads of scale give different
 * results); no kernel or several matching are hsad run's messages after the field. */
Test(fusion_cli, cxx_kernel_names, .timeout = 120) {
  char tmp[] = "/tmp/hsad-graph-cxx-XXXXXX", cmd[1024], js[4096], path[32], want[1024];
  cr_assert_not_null(mkdtemp(tmp));
  int rc;
  snprintf(cmd, sizeof cmd, "%s compile %s/tests/data/cli/mangled.hip --target gfx90a -o "
           "%s/m.hsaco 2>&1", HSAD_BIN, HSAD_SRCDIR, tmp);
  char *out = run_cmd(cmd, &rc);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert_eq(setenv("KFD_EMU_TWINS", FU_TWINS, 1), 0);
  static const char fmt[] =
      "{\"kernels\": {\"sf\": {\"code_object\": \"%s/m.hsaco\", \"kernel\": \"scale(float*, float, "
      "unsigned int)\"}, \"sd\": {\"code_object\": \"%s/m.hsaco\", \"kernel\": \"_Z5scalePddj\"}, "
      "\"sh\": {\"code_object\": \"%s/m.hsaco\", \"kernel\": \"%s\"}}, \"buffers\": {\"f\": "
      "{\"type\": \"f32\", \"count\": 4, \"init\": \"iota\"}, \"d\": {\"type\": \"f64\", \"count\": "
      "4, \"init\": \"iota\"}, \"i\": {\"type\": \"i32\", \"count\": 4, \"init\": \"iota\"}}, "
      "\"nodes\": [{\"name\": \"a\", \"kernel\": \"sf\", \"grid\": [4], \"args\": [\"f\", {\"f32\": "
      "2}, {\"u32\": 4}]}, {\"name\": \"b\", \"kernel\": \"sd\", \"grid\": [4], \"args\": [\"d\", "
      "{\"f64\": 3}, {\"u32\": 4}]}, {\"name\": \"c\", \"kernel\": \"sh\", \"grid\": [4], \"args\": "
      "[\"i\", {\"i32\": 5}, {\"u32\": 4}], \"deps\": [\"a\"]}], \"checks\": [{\"buffer\": \"f\", "
      "\"equals\": [0, 2, 4, 6]}, {\"buffer\": \"d\", \"equals\": [0, 3, 6, 9]}, {\"buffer\": "
      "\"i\", \"equals\": [5, 6, 7, 8]}]}";
  snprintf(js, sizeof js, fmt, tmp, tmp, tmp, "shift");
  out = graph_json(js, "", path, &rc);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, ": 3 nodes on 1 queue(s), 1 launch(es), path: fused\n"), "%s", out);
  cr_assert(strstr(out, "  check f: 4 elements OK\n  check d: 4 elements OK\n  check i: 4 "
                        "elements OK\n"), "%s", out);
  snprintf(js, sizeof js, fmt, tmp, tmp, tmp, "scale");
  out = graph_json(js, "", path, &rc);
  cr_assert_eq(rc, 1, "%s", out);
  snprintf(want, sizeof want, "hsad graph: kernel sh: field \"kernel\": %s/m.hsaco: ambiguous: 2 "
           "kernels match 'scale': _Z5scalePffj (scale(float*, float, unsigned int)), _Z5scalePddj "
           "(scale(double*, double, unsigned int)); give the full name of one\n", tmp);
  cr_assert_str_eq(out, want);
  snprintf(js, sizeof js, fmt, tmp, tmp, tmp, "nope");
  out = graph_json(js, "--json", path, &rc);
  cr_assert_eq(rc, 1, "%s", out);
  snprintf(want, sizeof want, "{ \"error\": { \"command\": \"graph\", \"status\": "
           "\"HSAD_ERR_KERNEL_NOT_FOUND\", \"exit_code\": 1, \"message\": \"kernel sh: field "
           "\\\"kernel\\\": %s/m.hsaco: no kernel named 'nope'; it has 3: _Z5scalePffj "
           "(scale(float*, float, unsigned int)), _Z5scalePddj (scale(double*, double, unsigned "
           "int)), _Z5shiftPiij (shift(int*, int, unsigned int))\" } }\n", tmp);
  cr_assert_str_eq(out, want);
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  cr_assert_eq(system(cmd), 0);
}

/* Copy and fill nodes in hsad graph's JSON: examples/copy-fill.json (fill y, y += 2x, copy 999
 * elements of y to out on lane 1: fused, checks exact), then each refusal with its message. */
static char *blit_graph(const char *fill, const char *copy, char path[32], int *rc) {
  char js[4096];
  snprintf(js, sizeof js, "{\"kernels\": {\"s\": {\"source\": \"" HSAD_SRCDIR "/kernels/saxpy.cl\","
           " \"kernel\": \"saxpy\"}}, \"buffers\": {\"x\": {\"type\": \"f32\", \"count\": 8, "
           "\"init\": \"iota\"}, \"y\": {\"type\": \"f32\", \"count\": 8}, \"d\": {\"type\": "
           "\"f64\", \"count\": 8}, \"b\": {\"type\": \"u8\", \"count\": 5}}, \"nodes\": ["
           "{\"name\": \"f\", %s}, {\"name\": \"c\", \"lane\": 1, %s, \"deps\": [\"f\"]}], "
           "\"checks\": [{\"buffer\": \"x\", \"equals\": [0, 1]}]}", fill, copy);
  return graph_json(js, "", path, rc);
}

Test(fusion_cli, copy_and_fill_nodes, .timeout = 120) {
  int rc;
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "cd %s && %s graph examples/copy-fill.json --launches 20 2>&1",
           HSAD_SRCDIR, HSAD_BIN);
  char *out = run_cmd(cmd, &rc);
  cr_assert_eq(rc, 0, "%s", out);
  cr_assert(strstr(out, "graph examples/copy-fill.json: 3 nodes on 2 queue(s), 20 launch(es), "
                        "path: fused\n  queue 0: 2 packets, 1 doorbell per launch\n  queue 1: 3 "
                        "packets, 1 doorbell per launch\n"), "%s", out);
  cr_assert(strstr(out, "  check out: 4 elements OK\n  check y: 2 elements OK\n"), "%s", out);
  char path[32], want[1024];
  static const struct {
    const char *fill, *copy, *msg;
  } bad[] = {
      {"\"fill\": {\"dst\": \"y\", \"value\": 2}, \"grid\": [4]",
       "\"copy\": {\"dst\": \"x\", \"src\": \"y\"}",
       "node f: field \"grid\": a fill node has none (it runs the library's fill kernel)"},
      {"\"fill\": {\"dst\": \"y\", \"value\": 2}", "\"copy\": {\"dst\": \"x\", \"src\": \"d\"}",
       "node c: field \"copy\": src d has 8-byte elements, dst x 4-byte"},
      {"\"fill\": {\"dst\": \"d\", \"value\": 2}", "\"copy\": {\"dst\": \"x\", \"src\": \"y\"}",
       "node f: field \"fill\": dst d has 8-byte elements; a fill writes 1, 2 or 4"},
      {"\"fill\": {\"dst\": \"b\", \"value\": 256}", "\"copy\": {\"dst\": \"x\", \"src\": \"y\"}",
       "node f: field \"fill\".\"value\": '256' is not an integer from 0 to 255 (u8)"},
      {"\"fill\": {\"dst\": \"y\"}", "\"copy\": {\"dst\": \"x\", \"src\": \"y\"}",
       "node f: field \"fill\".\"value\": missing"},
      {"\"fill\": {\"dst\": \"y\", \"value\": 1}", "\"copy\": {\"dst\": \"x\", \"src\": \"z\"}",
       "node c: field \"copy\".\"src\": no buffer 'z'"},
      {"\"fill\": {\"dst\": \"y\", \"value\": 1}",
       "\"copy\": {\"dst\": \"x\", \"src\": \"y\", \"count\": 9}",
       "node c: field \"copy\".\"count\": '9' is not an integer from 1 to 8 (elements of both "
       "buffers)"},
      {"\"fill\": {\"dst\": \"y\", \"value\": 1, \"bytes\": 4}",
       "\"copy\": {\"dst\": \"x\", \"src\": \"y\"}",
       "node f: field \"fill\": unknown key \"bytes\" (known: dst, value, count)"},
      {"\"fill\": {\"dst\": \"y\", \"value\": 1}, \"copy\": {\"dst\": \"x\", \"src\": \"y\"}",
       "\"copy\": {\"dst\": \"x\", \"src\": \"y\"}",
       "node f: fields \"copy\" and \"fill\": a node is one of them"},
      {"\"fill\": {\"dst\": \"y\", \"value\": 1}", "\"copy\": {\"dst\": \"x\", \"src\": \"x\"}",
       "node c: field \"copy\": src x is dst (copy nodes have memcpy semantics: the ranges must "
       "not overlap)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    out = blit_graph(bad[i].fill, bad[i].copy, path, &rc);
    snprintf(want, sizeof want, "hsad graph: %s\n", bad[i].msg);
    cr_assert_eq(rc, 1, "case %zu: %s", i, out);
    cr_assert_str_eq(out, want, "case %zu", i);
  }
  /* fill y with 2, copy 3 elements of y into x: x = 2, 2, 2, 3, 4, ... */
  out = blit_graph("\"fill\": {\"dst\": \"y\", \"value\": 2}",
                   "\"copy\": {\"dst\": \"x\", \"src\": \"y\", \"count\": 3}", path, &rc);
  cr_assert_eq(rc, 1, "%s", out);
  cr_assert_str_eq(out, "hsad graph: checks[0]: buffer x[0] is 2, field \"equals\" wants 0 (after "
                        "the first launch)\n");
}
