/* test_survivors.c - tests written for survivors of `make mutation-sample` (issue 18): each test
 * names the mutants it kills (tests/mutation-sample/REPORT.md lists them by number, file:line
 * and change). Expected values come from outside the code under test: whole messages as the
 * headers document them, bytes counted by glibc's allocator (mallinfo2), results computed here.
 *
 * Heap balance: a library object created and destroyed returns every byte it took from the
 * heap. After warm-up rounds (ROCr and kfd-emu keep pools and vectors that grow for the first
 * few dozen queues, then stay: measured 0 bytes per queue round after 64), SURV_ROUNDS more
 * rounds must leave glibc's in-use byte count (mallinfo2().uordblks) within a tolerance per
 * round below the smallest leak the test is for. */
#include "tests/test_dispatch_util.h"

#include <malloc.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fusion/hsad_fusion.h"
#include "memory/hsad_memory.h"
#include "hsa-dispatch/hsad_monitor.h"
#include "hsa-dispatch/hsad_variants.h"
#include "hsa-dispatch/hsad_rocr.h"
#include "hsa-dispatch/hsad_submit.h"

#define SURV_ROUNDS 16

static size_t surv_heap_in_use(void) { return mallinfo2().uordblks; }

/* Runs `round` `warmup` times, then SURV_ROUNDS times, and asserts the heap in use grew by less
 * than `tolerance` bytes per measured round. A real leak grows the heap in every attempt;
 * another thread's allocation (kfd-emu's CP, ROCr's event threads: mallinfo2 counts the whole
 * process) can fall into one under load, so the check passes when any of 3 attempts of
 * SURV_ROUNDS rounds stays within the tolerance. */
#define SURV_HEAP_BALANCED(what, warmup, tolerance, round)                                    \
  do {                                                                                        \
    for (int w_ = 0; w_ < (warmup); w_++) round;                                              \
    long long grown_ = 0;                                                                     \
    for (int a_ = 0; a_ < 3; a_++) {                                                          \
      size_t before_ = surv_heap_in_use();                                                    \
      for (int r_ = 0; r_ < SURV_ROUNDS; r_++) round;                                         \
      grown_ = (long long)surv_heap_in_use() - (long long)before_;                            \
      if (grown_ < (long long)(tolerance) * SURV_ROUNDS) break;                               \
    }                                                                                         \
    cr_assert_lt(grown_, (long long)(tolerance) * SURV_ROUNDS,                                \
                 "%s: the heap in use grew by %lld bytes in %d rounds (%lld per round; "      \
                 "tolerance %d), in each of 3 attempts", what, grown_, SURV_ROUNDS,           \
                 grown_ / SURV_ROUNDS, (int)(tolerance));                                     \
  } while (0)

static const hsad_device_kernel_t *surv_round_kernels[2]; /* empty, fill */
/* fill's buffer: n = 0 writes nothing, but kfd-emu's source mode (the kernel runs from its
 * OpenCL C through POCL, where a fault cannot be trapped) refuses a buffer argument outside
 * memory the GPU can reach, as a memory violation: a real buffer, allocated once */
static void *surv_round_buffer;

static void surv_queue_round(th_env_t *e, bool profiling, bool monitor) {
  hsad_queue_t *q = NULL;
  TH_OK(hsad_queue_create(e->dev, &(hsad_queue_options_t){.size = 64, .profiling = profiling}, &q));
  if (monitor) {
    /* two kernels in the monitor's kernel table: each name is a copy the monitor frees */
    TH_OK(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.no_alerts = true}));
    uint32_t zero = 0;
    hsad_karg_t a[3] = {HSAD_KARG_PTR(surv_round_buffer), HSAD_KARG_VAL(zero), HSAD_KARG_VAL(zero)};
    hsad_launch_t le = {.dims = 1, .grid = {1}, .block = {1}};
    hsad_launch_t lf = {.dims = 1, .grid = {1}, .block = {1}, .args = a, .arg_count = 3};
    TH_OK(hsad_kernel_dispatch(q, surv_round_kernels[0], &le, th_in(TH_SEC), NULL, NULL));
    TH_OK(hsad_kernel_dispatch(q, surv_round_kernels[1], &lf, th_in(TH_SEC), NULL, NULL));
    TH_OK(hsad_queue_wait_idle(q, th_in(5 * TH_SEC)));
  }
  hsad_queue_destroy(q);
}

/* hsad_queue_destroy frees the queue's timeline (epoch array, timestamp signals: mutant 24's
 * dq_timeline_fini) and its monitor (mutant 22's dq_monitor_fini, mutant 74: the kernel names
 * of its table), with and without profiling and monitoring. */
Test(heap, queue_destroy_returns_every_byte, .timeout = 120) {
  th_env_t e;
  th_open(&e);
  hsad_program_t *pe = th_load(&e, "empty", 5, "empty", &surv_round_kernels[0]);
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &surv_round_kernels[1]);
  surv_round_buffer = th_alloc(&e, 4096);
  SURV_HEAP_BALANCED("plain queue", 64, 16, surv_queue_round(&e, false, false));
  SURV_HEAP_BALANCED("profiling queue", 64, 16, surv_queue_round(&e, true, false));
  SURV_HEAP_BALANCED("monitored profiling queue", 64, 16, surv_queue_round(&e, true, true));
  hsad_buffer_free(surv_round_buffer);
  hsad_program_destroy(pf);
  hsad_program_destroy(pe);
  TH_OK(hsad_runtime_close(e.rt));
}

static void surv_runtime_round(bool leave_queue) {
  th_env_t e;
  th_open(&e);
  hsad_queue_t *q = NULL;
  TH_OK(hsad_queue_create(e.dev, &(hsad_queue_options_t){.size = 64, .profiling = true}, &q));
  if (!leave_queue) hsad_queue_destroy(q);
  TH_OK(hsad_runtime_close(e.rt)); /* the last close destroys a queue left open ... */
  if (leave_queue) hsad_queue_destroy(q); /* ... and the handle's memory goes now */
}

/* The last hsad_runtime_close destroys the queues left open with everything they hold (mutant
 * 24: their timelines, 2 KiB of epochs and 64 timestamp signals for a 64-packet profiling
 * queue: 7 KiB per round). ROCr's hsa_init / hsa_shut_down keep 22 to 300 bytes per cycle:
 * 2048 bytes per round tolerated. */
Test(heap, runtime_close_frees_open_queues, .timeout = 120) {
  SURV_HEAP_BALANCED("runtime with its queue destroyed", 16, 2048, surv_runtime_round(false));
  SURV_HEAP_BALANCED("runtime with a queue left open", 16, 2048, surv_runtime_round(true));
}

/* A 2-dimensional launch of a kernel with .reqd_workgroup_size (limits-v5.s: hd_reqd, 64x1x1):
 * the message prints the launch's workgroup as 3 sizes, 1 for every dimension past dims, never
 * block[2] of a 2-dimensional launch (mutant 54). */
#ifndef CO_FIXDIR
#define CO_FIXDIR "build/tests/codeobj"
#endif
Test(launch_check, reqd_workgroup_message_of_two_dims, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  hsad_program_t *pl;
  TH_OK(hsad_program_load_file(e.dev, TH_FIXDIR "/limits-v5.hsaco", &pl));
  const hsad_device_kernel_t *kr;
  TH_OK(hsad_program_kernel(pl, "hd_reqd", &kr));
  hsad_queue_t *q = th_queue(&e, 64);
  void *x = th_alloc(&e, 256);
  hsad_karg_t one[1] = {HSAD_KARG_PTR(x)};
  hsad_launch_t l = {.dims = 2, .grid = {64, 2}, .block = {32, 1, 7}, .args = one, .arg_count = 1};
  TH_ERR_IS(hsad_kernel_dispatch(q, kr, &l, 0, NULL, NULL), HSAD_ERR_WORKGROUP,
            "kernel hd_reqd: workgroup 32x1x1 differs from its .reqd_workgroup_size 64x1x1");
  l = (hsad_launch_t){.dims = 1, .grid = {64}, .block = {16, 5, 7}, .args = one, .arg_count = 1};
  TH_ERR_IS(hsad_kernel_dispatch(q, kr, &l, 0, NULL, NULL), HSAD_ERR_WORKGROUP,
            "kernel hd_reqd: workgroup 16x1x1 differs from its .reqd_workgroup_size 64x1x1");
  /* fixed_lds (tests/data/codeobj/kernels.cl): reqd_work_group_size(64, 2, 1), each size in
   * its place (mutant 55) */
  hsad_program_t *pk;
  TH_OK(hsad_program_load_file(e.dev, CO_FIXDIR "/kernels-gfx90a-v5.hsaco", &pk));
  const hsad_device_kernel_t *kf;
  TH_OK(hsad_program_kernel(pk, "fixed_lds", &kf));
  int64_t kv = 3;
  int16_t sv = 4;
  uint8_t uv = 5;
  hsad_karg_t four[4] = {HSAD_KARG_PTR(x), HSAD_KARG_VAL(kv), HSAD_KARG_VAL(sv), HSAD_KARG_VAL(uv)};
  l = (hsad_launch_t){.dims = 2, .grid = {64, 2}, .block = {32, 2}, .args = four, .arg_count = 4};
  TH_ERR_IS(hsad_kernel_dispatch(q, kf, &l, 0, NULL, NULL), HSAD_ERR_WORKGROUP,
            "kernel fixed_lds: workgroup 32x2x1 differs from its .reqd_workgroup_size 64x2x1");
  cr_assert_eq(((const amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id, 0);
  hsad_program_destroy(pk);
  hsad_buffer_free(x);
  hsad_queue_destroy(q);
  hsad_program_destroy(pl);
  TH_OK(hsad_runtime_close(e.rt));
}

/* A graph on two queues whose second ring stays full until the deadline: the launch fails
 * with hsad_fusion.h's message ("graph launch, queue 1 of 2: " + the ring's timeout + the
 * cancellation), queue 0's reserved run becomes no-op barrier-AND packets (its epoch point
 * keeps the BARRIER bit) so queue 0 goes on, and nothing of the graph ran; once the ring
 * drains the graph launches and runs (mutants 143 and 147: cancel_runs). Queue 1 is held full
 * by a barrier-AND on a signal the test holds at 1, then 63 empty kernels. */
Test(graph, launch_timeout_on_second_queue_cancels_the_first, .timeout = 60) {
  /* queue 0's CP retires the cancelled run (its header becomes INVALID) as soon as it sees it:
   * a CP that waits 5 ms before each packet leaves the test the time to read the header it got
   * (without it, a loaded machine failed this now and then); queue 1's barrier-AND still
   * launches long before the 20 ms deadline */
  setenv("KFD_EMU_CP_STALL_MS", "5", 1);
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *fill, *empty;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &fill);
  hsad_program_t *pe = th_load(&e, "empty", 5, "empty", &empty);
  hsad_queue_t *q[2] = {th_queue(&e, 64), th_queue(&e, 64)};
  uint32_t *dst0 = th_alloc(&e, 64 * 4), *dst1 = th_alloc(&e, 64 * 4), v0 = 7, v1 = 9, n = 64;
  memset(dst0, 0xab, 64 * 4);
  memset(dst1, 0xab, 64 * 4);
  hsad_karg_t a0[3] = {HSAD_KARG_PTR(dst0), HSAD_KARG_VAL(v0), HSAD_KARG_VAL(n)};
  hsad_karg_t a1[3] = {HSAD_KARG_PTR(dst1), HSAD_KARG_VAL(v1), HSAD_KARG_VAL(n)};
  hsad_launch_t l0 = {.dims = 1, .grid = {64}, .block = {64}, .args = a0, .arg_count = 3};
  hsad_launch_t l1 = {.dims = 1, .grid = {64}, .block = {64}, .args = a1, .arg_count = 3};
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t na, nb;
  TH_OK(hsad_graph_add_kernel(g, "A", 0, fill, &l0, NULL, 0, &na));
  TH_OK(hsad_graph_add_kernel(g, "B", 1, fill, &l1, NULL, 0, &nb));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, q, 2, &x));
  hsad_graph_destroy(g);
  cr_assert_eq(hsad_graph_exec_queue(x, 0), q[0]);
  cr_assert_eq(hsad_graph_exec_packet_count(x, 0), 1);
  cr_assert_eq(hsad_graph_exec_packet_count(x, 1), 1);

  hsa_signal_t gate;
  cr_assert_eq(hsad_rocr.hsa_signal_create(1, 0, NULL, &gate), HSA_STATUS_SUCCESS);
  TH_OK(hsad_queue_barrier_signals(q[1], NULL, 0, &gate, 1, (hsa_signal_t){0}, th_in(TH_SEC),
                                   NULL));
  hsad_launch_t le = {.dims = 1, .grid = {1}, .block = {1}};
  for (int i = 0; i < 63; i++) TH_OK(hsad_kernel_dispatch(q[1], empty, &le, th_in(TH_SEC), NULL, NULL));
  const amd_queue_t *aq0 = (const amd_queue_t *)hsad_queue_hsa(q[0]);
  const amd_queue_t *aq1 = (const amd_queue_t *)hsad_queue_hsa(q[1]);
  cr_assert_eq(aq1->write_dispatch_id, 64);

  hsad_completion_t done[2];
  hsad_graph_rollback_t why;
  hsad_status_t s = hsad_graph_launch(x, HSAD_GRAPH_NO_ROLLBACK, th_in(20000000ull), done, &why);
  /* the counts of queue 1 as they stand (nothing completes while the gate is held; the
   * barrier-AND launched and freed its slot, where the library may have put an epoch packet) */
  char want[1024];
  uint64_t w1 = aq1->write_dispatch_id, rd1 = aq1->read_dispatch_id;
  snprintf(want, sizeof want, "graph launch, queue 1 of 2: queue %llu on device 0 is full (64 "
           "packets; %llu not yet completed, %llu not yet launched; 1 requested) and the "
           "deadline passed; nothing was submitted; the runs reserved on the queues before it "
           "were cancelled (no-op packets): nothing of the graph ran",
           (unsigned long long)hsad_queue_hsa(q[1])->id, (unsigned long long)w1,
           (unsigned long long)(w1 - rd1));
  cr_assert_eq(s, HSAD_ERR_TIMEOUT, "%s: %s", hsad_status_name(s), hsad_last_error());
  cr_assert_str_eq(hsad_last_error(), want);
  /* queue 0: its run (packet 0, node A, an epoch point) is a barrier-AND with the BARRIER bit */
  cr_assert_eq(aq0->write_dispatch_id, 1);
  uint16_t h0 = __atomic_load_n(&th_packet(q[0], 0)->header, __ATOMIC_ACQUIRE);
  cr_assert_eq((h0 >> HSA_PACKET_HEADER_TYPE) & 0xff, HSA_PACKET_TYPE_BARRIER_AND);
  cr_assert_eq((h0 >> HSA_PACKET_HEADER_BARRIER) & 1, 1);
  TH_OK(hsad_queue_wait_idle(q[0], th_in(5 * TH_SEC)));
  for (int i = 0; i < 64; i++) cr_assert_eq(dst0[i], 0xabababab, "dst0[%d] written", i);

  hsad_rocr.hsa_signal_store_screlease(gate, 0);
  TH_OK(hsad_queue_wait_idle(q[1], th_in(5 * TH_SEC)));
  for (int i = 0; i < 64; i++) cr_assert_eq(dst1[i], 0xabababab, "dst1[%d] written", i);
  TH_OK(hsad_graph_launch(x, HSAD_GRAPH_NO_ROLLBACK, th_in(TH_SEC), done, &why));
  TH_OK(hsad_completion_wait_all(done, 2, th_in(5 * TH_SEC)));
  for (int i = 0; i < 64; i++) {
    cr_assert_eq(dst0[i], 7);
    cr_assert_eq(dst1[i], 9);
  }
  hsad_graph_exec_destroy(x);
  hsad_rocr.hsa_signal_destroy(gate);
  hsad_buffer_free(dst0);
  hsad_buffer_free(dst1);
  hsad_queue_destroy(q[1]);
  hsad_queue_destroy(q[0]);
  hsad_program_destroy(pe);
  hsad_program_destroy(pf);
  TH_OK(hsad_runtime_close(e.rt));
}

/* The whole file as bytes (malloc'd). */
static uint8_t *surv_read(const char *path, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  cr_assert(f, "open %s", path);
  cr_assert_eq(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  cr_assert_gt(n, 0);
  rewind(f);
  uint8_t *b = malloc((size_t)n);
  cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *out_size = (size_t)n;
  return b;
}

/* An offload bundle (codeobj/bundle.c's layout: "__CLANG_OFFLOAD_BUNDLE__", u64 entry count,
 * per entry u64 offset, u64 size, u64 id length, the id; then the code objects) holding one
 * code object under `id`. */
static uint8_t *surv_bundle(const char *id, const uint8_t *co, size_t co_size, size_t *out_size) {
  size_t idlen = strlen(id), head = 24 + 8 + 24 + idlen, off = (head + 4095) & ~(size_t)4095;
  uint8_t *b = calloc(1, off + co_size);
  uint64_t words[4] = {1, off, co_size, idlen};
  memcpy(b, "__CLANG_OFFLOAD_BUNDLE__", 24);
  memcpy(b + 24, words, 32);
  memcpy(b + 56, id, idlen);
  memcpy(b + off, co, co_size);
  *out_size = off + co_size;
  return b;
}

static void surv_mismatch_round(th_env_t *e, const uint8_t *bundle, size_t size) {
  hsad_program_t *p = (hsad_program_t *)1;
  TH_ERR_IS(hsad_program_load_memory(e->dev, bundle, size, "only1030", &p), HSAD_ERR_ISA_MISMATCH,
            "only1030: code object targets gfx1030, device 0 (gfx90a) supports "
            "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-: compile for gfx90a:sramecc+:xnack-");
  cr_assert_eq(p, (hsad_program_t *)1);
}

/* A bundle without an entry for the device: an ISA mismatch naming the bundle's targets and
 * the device's, out_program untouched, and every byte of the selection freed (mutant 16: the
 * array of selected code objects). */
Test(program, bundle_without_device_entry, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  size_t co_size, size;
  uint8_t *co = surv_read(TEST_KERNDIR "/fill-gfx1030-v5.hsaco", &co_size);
  uint8_t *bundle = surv_bundle("hipv4-amdgcn-amd-amdhsa--gfx1030", co, co_size, &size);
  SURV_HEAP_BALANCED("ISA mismatch of a bundle", 8, 16, surv_mismatch_round(&e, bundle, size));
  free(bundle);
  free(co);
  TH_OK(hsad_runtime_close(e.rt));
}

/* A variant set's cache holds keys outside their home slot too (linear probing): 24 workgroup
 * sizes dispatched twice; the first round misses 24 times (the rule runs once per size, the
 * mutex taken 3 times per miss: hsad_variants.h), the second round hits every size, with no
 * rule run and no lock, including the sizes whose home slot another size took first (mutant
 * 91: the probe's step). The home slot is variants.c's hash (Fibonacci hashing of the key
 * 1 | wg << 1, top 5 bits): the test checks that the 24 sizes do collide. Then
 * hsad_variant_set_select finds each size in the cache (seed 28 mutant 38). */
Test(variants, probed_keys_hit_without_lock, .timeout = 60) {
  uint32_t homes = 0, collided = 0;
  for (uint64_t wg = 1; wg <= 24; wg++) {
    uint32_t home = (uint32_t)((((1u | wg << 1) * 0x9E3779B97F4A7C15ull) >> 59) & 31);
    if (homes & (1u << home)) collided++;
    homes |= 1u << home;
  }
  cr_assert_gt(collided, 0, "24 sizes in 32 slots without a collision");
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *fill;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &fill);
  hsad_variant_set_t *set = NULL;
  TH_OK(hsad_variant_set_create(&fill, 1, &set));
  hsad_queue_t *q = th_queue(&e, 64);
  uint32_t *dst = th_alloc(&e, 64 * 4);
  hsad_variant_set_stats_t st;
  for (int round = 0; round < 2; round++) {
    for (uint32_t wg = 1; wg <= 24; wg++) {
      uint32_t value = 100 * (uint32_t)round + wg, n = wg;
      hsad_karg_t a[3] = {HSAD_KARG_PTR(dst), HSAD_KARG_VAL(value), HSAD_KARG_VAL(n)};
      hsad_launch_t l = {.dims = 1, .grid = {wg}, .block = {wg}, .args = a, .arg_count = 3};
      hsad_completion_t c;
      TH_OK(hsad_variant_dispatch(q, set, &l, th_in(TH_SEC), &c, NULL));
      TH_OK(hsad_completion_wait(&c, th_in(5 * TH_SEC)));
      for (uint32_t i = 0; i < wg; i++) cr_assert_eq(dst[i], value, "round %d wg %u", round, wg);
    }
    TH_OK(hsad_variant_set_stats(set, &st));
    cr_assert_eq(st.rule_runs, 24, "round %d: rule runs %llu", round,
                 (unsigned long long)st.rule_runs);
    cr_assert_eq(st.lock_takes, 72, "round %d: lock takes %llu", round,
                 (unsigned long long)st.lock_takes);
    cr_assert_eq(st.cached_keys, 24, "round %d: cached keys %u", round, st.cached_keys);
  }
  /* hsad_variant_set_select finds every size cached, those off their home slot too (seed 28
   * mutant 38: the locked lookup's probe step): no rule run, one lock take each */
  for (uint32_t wg = 1; wg <= 24; wg++) {
    hsad_variant_choice_t ch;
    bool cached = false;
    TH_OK(hsad_variant_set_select(set, wg, 0, &ch, &cached));
    cr_assert(cached, "wg %u not found in the cache", wg);
    cr_assert_eq(ch.index, 0);
  }
  TH_OK(hsad_variant_set_stats(set, &st));
  cr_assert_eq(st.rule_runs, 24, "rule runs %llu", (unsigned long long)st.rule_runs);
  cr_assert_eq(st.lock_takes, 96, "lock takes %llu", (unsigned long long)st.lock_takes);
  cr_assert_eq(st.cached_keys, 24, "cached keys %u", st.cached_keys);
  hsad_buffer_free(dst);
  hsad_queue_destroy(q);
  hsad_variant_set_destroy(set);
  hsad_program_destroy(pf);
  TH_OK(hsad_runtime_close(e.rt));
}

/* Dispatches fill(dst, value, n) with the given geometry on q and waits; returns its packet. */
static const hsa_kernel_dispatch_packet_t *surv_fill(hsad_queue_t *q, const hsad_device_kernel_t *k,
                                                     uint64_t dst, uint32_t value, uint32_t n,
                                                     uint32_t dims, const uint32_t grid[3],
                                                     const uint32_t block[3]) {
  hsad_karg_t a[3] = {HSAD_KARG_PTR((uintptr_t)dst), HSAD_KARG_VAL(value), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = dims, .args = a, .arg_count = 3};
  memcpy(l.grid, grid, sizeof l.grid);
  memcpy(l.block, block, sizeof l.block);
  hsad_completion_t c;
  uint64_t id;
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), &c, &id));
  TH_OK(hsad_completion_wait(&c, th_in(5 * TH_SEC)));
  return th_packet(q, id);
}

/* The launch cache (hsad_queue.h: a launch equal to the previous one on the thread reuses its
 * checked packet and kernargs) compares every geometry word and all 64 bits of a pointer: a
 * launch that differs only in block[0] (mutant 41's '&' between the words), only in grid[1],
 * or only in the high half of a pointer argument (mutant 43: the pointer compared as an LDS
 * size, 32 bits) gets its own packet and kernargs. fill with n = 0 writes nothing; the two
 * pointers are pages mapped at 0x100001000 and 0x200001000 and registered for the GPU, because
 * kfd-emu's source mode (fill runs from its OpenCL C through POCL, where a fault cannot be
 * trapped) refuses a buffer argument that does not start in memory the GPU can reach. */
Test(launch_cache, every_geometry_word_and_pointer_bit, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *fill;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &fill);
  hsad_queue_t *q = th_queue(&e, 64);
  uint32_t *dst = th_alloc(&e, 256 * 4);
  const hsa_kernel_dispatch_packet_t *p;
  p = surv_fill(q, fill, (uintptr_t)dst, 1, 64, 1, (uint32_t[3]){64, 1, 1}, (uint32_t[3]){64, 1, 1});
  cr_assert_eq(p->workgroup_size_x, 64);
  p = surv_fill(q, fill, (uintptr_t)dst, 1, 64, 1, (uint32_t[3]){64, 1, 1}, (uint32_t[3]){32, 1, 1});
  cr_assert_eq(p->workgroup_size_x, 32, "block[0] 64 -> 32: packet says %u", p->workgroup_size_x);
  p = surv_fill(q, fill, (uintptr_t)dst, 2, 64, 2, (uint32_t[3]){64, 1, 1}, (uint32_t[3]){64, 1, 1});
  cr_assert_eq(p->grid_size_y, 1);
  p = surv_fill(q, fill, (uintptr_t)dst, 2, 64, 2, (uint32_t[3]){64, 2, 1}, (uint32_t[3]){64, 1, 1});
  cr_assert_eq(p->grid_size_y, 2, "grid[1] 1 -> 2: packet says %u", p->grid_size_y);
  for (int i = 0; i < 64; i++) cr_assert_eq(dst[i], 2);
  const uint64_t lo = 0x100001000ull, hi = 0x200001000ull;
  void *page[2];
  for (int i = 0; i < 2; i++) {
    void *want = (void *)(uintptr_t)(i ? hi : lo);
    page[i] = mmap(want, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
                   MAP_FIXED_NOREPLACE, -1, 0);
#ifdef __SANITIZE_ADDRESS__ /* ASan's shadow memory owns these addresses */
    if (page[i] != want) {
      if (i) munmap(page[0], 4096);
      cr_skip_test("an AddressSanitizer build: mmap at %p refused (ASan's shadow is there)", want);
    }
#endif
    cr_assert_eq(page[i], want, "mmap at %p: %p", want, page[i]);
    TH_OK(hsad_mem_register(e.dev, page[i], 4096, NULL, 0, NULL));
  }
  uint64_t got;
  p = surv_fill(q, fill, lo, 3, 0, 1, (uint32_t[3]){64, 1, 1}, (uint32_t[3]){64, 1, 1});
  memcpy(&got, p->kernarg_address, 8);
  cr_assert_eq(got, lo);
  p = surv_fill(q, fill, hi, 3, 0, 1, (uint32_t[3]){64, 1, 1}, (uint32_t[3]){64, 1, 1});
  memcpy(&got, p->kernarg_address, 8);
  cr_assert_eq(got, hi, "pointer 0x%llx -> 0x%llx: kernargs say 0x%llx", (unsigned long long)lo,
               (unsigned long long)hi, (unsigned long long)got);
  for (int i = 0; i < 2; i++) {
    TH_OK(hsad_mem_unregister(page[i]));
    munmap(page[i], 4096);
  }
  hsad_buffer_free(dst);
  hsad_queue_destroy(q);
  hsad_program_destroy(pf);
  TH_OK(hsad_runtime_close(e.rt));
}

/* hsad_status_name: every enumerator of common/hsad_status.h by its own spelling, unknown
 * values as "HSAD_ERR_UNKNOWN"; hsad_fail keeps the formatted reason (truncated to 1023 bytes,
 * as the header says) per thread, and hsad_clear_error empties it. */
Test(status, names_and_messages) {
  static const struct { hsad_status_t s; const char *name; } all[] = {
#define SURV_S(x) {x, #x}
    SURV_S(HSAD_OK), SURV_S(HSAD_ERR_INVALID_ARGUMENT), SURV_S(HSAD_ERR_OUT_OF_MEMORY),
    SURV_S(HSAD_ERR_IO), SURV_S(HSAD_ERR_UNSUPPORTED), SURV_S(HSAD_ERR_TIMEOUT),
    SURV_S(HSAD_ERR_RESOURCE_EXHAUSTED), SURV_S(HSAD_ERR_HSA), SURV_S(HSAD_ERR_CLOSED),
    SURV_S(HSAD_ERR_NOT_ELF), SURV_S(HSAD_ERR_TRUNCATED), SURV_S(HSAD_ERR_BAD_ELF),
    SURV_S(HSAD_ERR_CODE_OBJECT_VERSION), SURV_S(HSAD_ERR_BAD_NOTE),
    SURV_S(HSAD_ERR_BAD_METADATA), SURV_S(HSAD_ERR_METADATA_TYPE),
    SURV_S(HSAD_ERR_UNKNOWN_VALUE_KIND), SURV_S(HSAD_ERR_MISSING_DESCRIPTOR),
    SURV_S(HSAD_ERR_KERNEL_NOT_FOUND), SURV_S(HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND),
    SURV_S(HSAD_ERR_TARGET_MISMATCH), SURV_S(HSAD_ERR_ARG_COUNT), SURV_S(HSAD_ERR_ARG_SIZE),
    SURV_S(HSAD_ERR_ARG_KIND), SURV_S(HSAD_ERR_ARG_VALUE), SURV_S(HSAD_ERR_COMPILE),
    SURV_S(HSAD_ERR_DEVICE_INDEX), SURV_S(HSAD_ERR_ISA_MISMATCH), SURV_S(HSAD_ERR_GRID),
    SURV_S(HSAD_ERR_WORKGROUP), SURV_S(HSAD_ERR_LDS_LIMIT), SURV_S(HSAD_ERR_SCRATCH_LIMIT),
    SURV_S(HSAD_ERR_QUEUE_ERROR), SURV_S(HSAD_ERR_NO_DEVICE), SURV_S(HSAD_ERR_GRAPH),
    SURV_S(HSAD_ERR_NUMA), SURV_S(HSAD_ERR_NOT_ALLOCATED), SURV_S(HSAD_ERR_FREED),
    SURV_S(HSAD_ERR_RANGE), SURV_S(HSAD_ERR_OVERLAP), SURV_S(HSAD_ERR_NO_ACCESS),
    SURV_S(HSAD_ERR_IN_USE),
#undef SURV_S
  };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    cr_assert_str_eq(hsad_status_name(all[i].s), all[i].name);
  cr_assert_str_eq(hsad_status_name((hsad_status_t)9999), "HSAD_ERR_UNKNOWN");
  cr_assert_eq(hsad_fail(HSAD_ERR_GRID, "grid[%u] is %d", 2u, 0), HSAD_ERR_GRID);
  cr_assert_str_eq(hsad_last_error(), "grid[2] is 0");
  char big[2000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  cr_assert_eq(hsad_fail(HSAD_ERR_IO, "%s!", big), HSAD_ERR_IO);
  cr_assert_eq(strlen(hsad_last_error()), 1023);
  cr_assert_eq(strncmp(hsad_last_error(), big, 1023), 0);
  hsad_clear_error();
  cr_assert_str_eq(hsad_last_error(), "");
}

/* A barrier-AND with no dependencies at ring slot `id`: BARRIER bit and the epoch signal as its
 * completion when `epoch`, system-scope fences; published at once. */
static void surv_publish_barrier(hsad_queue_t *q, uint64_t id, bool epoch) {
  uint16_t h = HSAD_AQL_HEADER(HSA_PACKET_TYPE_BARRIER_AND, epoch, HSA_FENCE_SCOPE_SYSTEM,
                               HSA_FENCE_SCOPE_SYSTEM);
  uint32_t w = hsad_aql_barrier_fill((hsa_barrier_and_packet_t *)hsad_submit_slot(q, id), NULL,
                                     epoch ? hsad_submit_epoch_signal(q) : 0, h);
  hsad_submit_publish(q, id, w);
}

/* hsad_submit.h's reservations, used as a packet-writing module would: ids and epoch numbers
 * as the header gives them (consecutive ids, epochs numbered in ring order from 1), the
 * packets written, the doorbell rung, the epochs reached; and each argument error's whole
 * message (the rule of hsad_submit_reserve_epochs: the last epoch packet is the last packet). */
Test(submit_api, reserve_publish_and_errors, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  hsad_queue_t *q = th_queue(&e, 64);
  uint64_t first = 99, epoch = 77;
  TH_OK(hsad_submit_reserve(q, 2, false, th_in(TH_SEC), &first, &epoch));
  cr_assert_eq(first, 0);
  cr_assert_eq(epoch, 0);
  surv_publish_barrier(q, 0, false);
  surv_publish_barrier(q, 1, false);
  TH_OK(hsad_submit_reserve(q, 1, true, th_in(TH_SEC), &first, &epoch));
  cr_assert_eq(first, 2);
  cr_assert_eq(epoch, 1);
  surv_publish_barrier(q, 2, true);
  hsad_submit_doorbell(q, 2);
  hsad_completion_t c = {.queue = q, .epoch = 1, .packet_id = 2};
  TH_OK(hsad_completion_wait(&c, th_in(5 * TH_SEC)));
  uint64_t first_epoch = 0;
  TH_OK(hsad_submit_reserve_epochs(q, 3, 2, th_in(TH_SEC), &first, &first_epoch));
  cr_assert_eq(first, 3);
  cr_assert_eq(first_epoch, 2);
  surv_publish_barrier(q, 3, true);
  surv_publish_barrier(q, 4, false);
  surv_publish_barrier(q, 5, true);
  hsad_submit_doorbell(q, 5);
  c = (hsad_completion_t){.queue = q, .epoch = 3, .packet_id = 5};
  TH_OK(hsad_completion_wait(&c, th_in(5 * TH_SEC)));
  cr_assert(hsad_completion_done(&(hsad_completion_t){.queue = q, .epoch = 2, .packet_id = 3}));
  cr_assert_eq(((const amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id, 6);

  TH_ERR_IS(hsad_submit_reserve(NULL, 1, false, 0, &first, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_submit_reserve: 1 packets for a ring of 0 slots");
  TH_ERR_IS(hsad_submit_reserve(q, 1, false, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_submit_reserve: 1 packets for a ring of 64 slots");
  TH_ERR_IS(hsad_submit_reserve(q, 0, true, 0, &first, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_submit_reserve: 0 packets for a ring of 64 slots");
  TH_ERR_IS(hsad_submit_reserve(q, 65, false, 0, &first, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_submit_reserve: 65 packets for a ring of 64 slots");
#define SURV_EPOCHS_MSG(n, count, slots)                                                      \
  "hsad_submit_reserve_epochs: " #n " packets with " #count " epoch packets for a ring of "   \
  #slots " slots"
  TH_ERR_IS(hsad_submit_reserve_epochs(NULL, 3, 2, 0, &first, &first_epoch),
            HSAD_ERR_INVALID_ARGUMENT, SURV_EPOCHS_MSG(3, 2, 0));
  TH_ERR_IS(hsad_submit_reserve_epochs(q, 3, 2, 0, NULL, &first_epoch),
            HSAD_ERR_INVALID_ARGUMENT, SURV_EPOCHS_MSG(3, 2, 64));
  TH_ERR_IS(hsad_submit_reserve_epochs(q, 3, 2, 0, &first, NULL),
            HSAD_ERR_INVALID_ARGUMENT, SURV_EPOCHS_MSG(3, 2, 64));
  TH_ERR_IS(hsad_submit_reserve_epochs(q, 0, 2, 0, &first, &first_epoch),
            HSAD_ERR_INVALID_ARGUMENT, SURV_EPOCHS_MSG(0, 2, 64));
  TH_ERR_IS(hsad_submit_reserve_epochs(q, 65, 2, 0, &first, &first_epoch),
            HSAD_ERR_INVALID_ARGUMENT, SURV_EPOCHS_MSG(65, 2, 64));
  TH_ERR_IS(hsad_submit_reserve_epochs(q, 3, 0, 0, &first, &first_epoch),
            HSAD_ERR_INVALID_ARGUMENT, SURV_EPOCHS_MSG(3, 0, 64));
  TH_ERR_IS(hsad_submit_reserve_epochs(q, 1, 2, 0, &first, &first_epoch),
            HSAD_ERR_INVALID_ARGUMENT, SURV_EPOCHS_MSG(1, 2, 64));
#undef SURV_EPOCHS_MSG
  TH_ERR_IS(hsad_submit_dep_check(NULL, 4), HSAD_ERR_INVALID_ARGUMENT,
            "dependency 4: NULL completion");
  hsad_aql_dispatch_t body;
  uint8_t image[64];
  /* one cause each, the first NULL in parameter order (common/null_args.c: mutant 102) */
  TH_ERR_IS(hsad_submit_check(NULL, NULL, NULL, &body, image), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_submit_check: NULL queue");
  TH_ERR_IS(hsad_submit_check(q, NULL, NULL, &body, image), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_submit_check: NULL kernel");
  /* hsad_submit_check of fill(dst, 7, 64) over 2 x 32 work-items: the body as the header says
   * (kernarg address and completion signal 0: mutant 62), the kernarg segment's explicit
   * arguments at their OpenCL offsets (pointer 0, uint 8, uint 12) */
  const hsad_device_kernel_t *fill;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &fill);
  uint32_t *dst = th_alloc(&e, 256), value = 7, count = 64;
  hsad_karg_t fa[3] = {HSAD_KARG_PTR(dst), HSAD_KARG_VAL(value), HSAD_KARG_VAL(count)};
  hsad_launch_t lf = {.dims = 1, .grid = {64}, .block = {32}, .args = fa, .arg_count = 3};
  TH_ERR_IS(hsad_submit_check(q, fill, NULL, &body, image), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_submit_check: NULL launch");
  TH_ERR_IS(hsad_submit_check(q, fill, &lf, NULL, image), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_submit_check: NULL out_body");
  TH_ERR_IS(hsad_submit_check(q, fill, &lf, &body, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_submit_check: NULL out_image");
  memset(&body, 0xee, sizeof body);
  uint8_t kimage[HSAD_KERNARG_SEGMENT_MAX];
  TH_OK(hsad_submit_check(q, fill, &lf, &body, kimage));
  cr_assert_eq(body.dims, 1);
  cr_assert_eq(body.grid_size[0], 64);
  cr_assert_eq(body.grid_size[1], 1);
  cr_assert_eq(body.grid_size[2], 1);
  cr_assert_eq(body.workgroup_size[0], 32);
  cr_assert_eq(body.workgroup_size[1], 1);
  cr_assert_eq(body.workgroup_size[2], 1);
  cr_assert_null(body.kernarg_address);
  cr_assert_eq(body.completion_signal, 0);
  cr_assert_eq(body.kernel_object, hsad_device_kernel_desc(fill)->kernel_object);
  uint64_t ptr;
  uint32_t v32, n32;
  memcpy(&ptr, kimage, 8);
  memcpy(&v32, kimage + 8, 4);
  memcpy(&n32, kimage + 12, 4);
  cr_assert_eq(ptr, (uint64_t)(uintptr_t)dst);
  cr_assert_eq(v32, 7);
  cr_assert_eq(n32, 64);
  hsad_buffer_free(dst);
  hsad_program_destroy(pf);
  /* a reservation of the whole ring (n = size: mutant 63), on a fresh queue */
  hsad_queue_t *q2 = th_queue(&e, 64);
  TH_OK(hsad_submit_reserve(q2, 64, true, th_in(TH_SEC), &first, &epoch));
  cr_assert_eq(first, 0);
  cr_assert_eq(epoch, 1);
  for (uint64_t id = 0; id < 64; id++) surv_publish_barrier(q2, id, id == 63);
  hsad_submit_doorbell(q2, 63);
  c = (hsad_completion_t){.queue = q2, .epoch = 1, .packet_id = 63};
  TH_OK(hsad_completion_wait(&c, th_in(5 * TH_SEC)));
  TH_OK(hsad_submit_reserve_epochs(q2, 64, 1, th_in(TH_SEC), &first, &first_epoch));
  cr_assert_eq(first, 64);
  cr_assert_eq(first_epoch, 2);
  for (uint64_t id = 64; id < 128; id++) surv_publish_barrier(q2, id, id == 127);
  hsad_submit_doorbell(q2, 127);
  c = (hsad_completion_t){.queue = q2, .epoch = 2, .packet_id = 127};
  TH_OK(hsad_completion_wait(&c, th_in(5 * TH_SEC)));
  hsad_queue_destroy(q2);
  cr_assert(!hsad_submit_profiling(NULL));
  cr_assert(!hsad_submit_profiling(q));
  cr_assert(!hsad_submit_monitored(NULL));
  cr_assert_eq(((const amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id, 6, "nothing reserved");
  hsad_queue_destroy(q);
  TH_OK(hsad_runtime_close(e.rt));
}

/* A batch writes the kernarg blocks of its own slots and nothing else (hsad_queue.h step 4:
 * one block per slot, hsad_submit_kernarg gives its address): the blocks of the next slots,
 * set to a pattern first, are untouched after a batch of two fills (mutant 48: the kernarg copy
 * took the header word as its size). */
Test(batch, writes_only_its_kernarg_blocks, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *fill;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &fill);
  hsad_queue_t *q = th_queue(&e, 64);
  uint32_t block = hsad_submit_kernarg_block(q);
  cr_assert_eq(block, 512, "the default kernarg block (hsad_queue_options_t)");
  for (uint64_t id = 2; id < 16; id++) memset(hsad_submit_kernarg(q, id), 0xa5, block);
  uint32_t *dst = th_alloc(&e, 128 * 4), v0 = 5, v1 = 6, n = 64;
  hsad_karg_t a0[3] = {HSAD_KARG_PTR(dst), HSAD_KARG_VAL(v0), HSAD_KARG_VAL(n)};
  hsad_karg_t a1[3] = {HSAD_KARG_PTR(dst + 64), HSAD_KARG_VAL(v1), HSAD_KARG_VAL(n)};
  hsad_dispatch_desc_t items[2] = {
      {fill, {.dims = 1, .grid = {64}, .block = {64}, .args = a0, .arg_count = 3}},
      {fill, {.dims = 1, .grid = {64}, .block = {64}, .args = a1, .arg_count = 3}},
  };
  hsad_completion_t c;
  TH_OK(hsad_queue_dispatch_batch(q, items, 2, th_in(TH_SEC), &c, NULL));
  TH_OK(hsad_completion_wait(&c, th_in(5 * TH_SEC)));
  for (int i = 0; i < 128; i++) cr_assert_eq(dst[i], i < 64 ? 5u : 6u, "dst[%d]", i);
  for (uint64_t id = 2; id < 16; id++) {
    const uint8_t *ka = hsad_submit_kernarg(q, id);
    for (uint32_t b = 0; b < block; b++)
      cr_assert_eq(ka[b], 0xa5, "kernarg block of slot %llu, byte %u written by the batch",
                   (unsigned long long)id, b);
  }
  hsad_buffer_free(dst);
  hsad_queue_destroy(q);
  hsad_program_destroy(pf);
  TH_OK(hsad_runtime_close(e.rt));
}

/* Every public call refuses a NULL object, a NULL out-parameter or an index out of range with
 * HSAD_ERR_INVALID_ARGUMENT and its documented message, one argument at a time (each check of
 * an `a || b || c` list on its own), and writes nothing. */
Test(arguments, null_and_out_of_range, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *fill;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &fill);
  hsad_queue_t *q = th_queue(&e, 64);
  uint32_t *dst = th_alloc(&e, 256), v = 1, n = 64;
  hsad_karg_t a[3] = {HSAD_KARG_PTR(dst), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {64}, .block = {64}, .args = a, .arg_count = 3};
  const char *m;
  /* hsa-dispatch */
  /* each message names the one NULL parameter, the first in parameter order (mutant 102) */
  m = "hsad_kernel_dispatch: NULL %s";
  TH_ERR_IS(hsad_kernel_dispatch(NULL, NULL, NULL, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "queue");
  TH_ERR_IS(hsad_kernel_dispatch(q, NULL, NULL, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "kernel");
  TH_ERR_IS(hsad_kernel_dispatch(q, fill, NULL, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "launch");
  hsad_prepared_launch_t *pl = NULL;
  m = "hsad_launch_prepare: NULL %s";
  TH_ERR_IS(hsad_launch_prepare(NULL, fill, &l, &pl), HSAD_ERR_INVALID_ARGUMENT, m, "queue");
  TH_ERR_IS(hsad_launch_prepare(q, NULL, &l, &pl), HSAD_ERR_INVALID_ARGUMENT, m, "kernel");
  TH_ERR_IS(hsad_launch_prepare(q, fill, NULL, &pl), HSAD_ERR_INVALID_ARGUMENT, m, "launch");
  TH_ERR_IS(hsad_launch_prepare(q, fill, &l, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "out_prepared");
  cr_assert_null(pl);
  hsad_dispatch_desc_t item = {fill, l};
  m = "hsad_queue_dispatch_batch: %s";
  TH_ERR_IS(hsad_queue_dispatch_batch(NULL, NULL, 0, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "NULL queue");
  TH_ERR_IS(hsad_queue_dispatch_batch(q, NULL, 0, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "NULL items");
  TH_ERR_IS(hsad_queue_dispatch_batch(q, &item, 0, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "count 0");
  uint32_t count = 9;
  hsad_dispatch_record_t rec[1];
  m = "hsad_queue_monitor_drain: NULL %s";
  TH_ERR_IS(hsad_queue_monitor_drain(NULL, rec, 1, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "queue");
  TH_ERR_IS(hsad_queue_monitor_drain(q, NULL, 1, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "out_count");
  TH_ERR_IS(hsad_queue_monitor_drain(q, NULL, 1, &count, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_queue_monitor_drain: NULL out_records with capacity 1");
  cr_assert_eq(count, 9);
  hsad_program_t *p = NULL;
  m = "hsad_program_load_file: NULL %s";
  TH_ERR_IS(hsad_program_load_file(NULL, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "device");
  TH_ERR_IS(hsad_program_load_file(e.dev, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "path");
  TH_ERR_IS(hsad_program_load_file(e.dev, "x", NULL), HSAD_ERR_INVALID_ARGUMENT, m, "out_program");
  m = "hsad_program_load_memory: %s";
  TH_ERR_IS(hsad_program_load_memory(NULL, NULL, 0, "x", NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "NULL device");
  TH_ERR_IS(hsad_program_load_memory(e.dev, NULL, 0, "x", NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "NULL data");
  TH_ERR_IS(hsad_program_load_memory(e.dev, dst, 0, "x", NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "NULL out_program");
  TH_ERR_IS(hsad_program_load_memory(e.dev, dst, 0, "x", &p), HSAD_ERR_INVALID_ARGUMENT, m,
            "size 0");
  cr_assert_null(p);
  const hsad_device_kernel_t *k = NULL;
  m = "hsad_program_kernel: NULL %s";
  TH_ERR_IS(hsad_program_kernel(NULL, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "program");
  TH_ERR_IS(hsad_program_kernel(pf, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "name");
  TH_ERR_IS(hsad_program_kernel(pf, "fill", NULL), HSAD_ERR_INVALID_ARGUMENT, m, "out_kernel");
  cr_assert_null(k);
  hsad_queue_t *q2 = NULL;
  m = "hsad_queue_create: NULL %s";
  TH_ERR_IS(hsad_queue_create(NULL, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "device");
  TH_ERR_IS(hsad_queue_create(e.dev, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "out_queue");
  m = "hsad_device_queue: NULL %s";
  TH_ERR_IS(hsad_device_queue(NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "device");
  TH_ERR_IS(hsad_device_queue(e.dev, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "out_queue");
  cr_assert_null(q2);
  hsad_device_t *d = NULL;
  m = "hsad_device_get: NULL %s";
  TH_ERR_IS(hsad_device_get(NULL, 0, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "runtime");
  TH_ERR_IS(hsad_device_get(e.rt, 0, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "out_device");
  cr_assert_null(d);
  hsad_completion_t c = {0}, cs[1] = {{0}};
  hsa_signal_t sig = {0};
  m = "hsad_queue_barrier: %s";
  TH_ERR_IS(hsad_queue_barrier(NULL, NULL, 1, 0, &c), HSAD_ERR_INVALID_ARGUMENT, m, "NULL queue");
  TH_ERR_IS(hsad_queue_barrier(q, NULL, 1, 0, &c), HSAD_ERR_INVALID_ARGUMENT, m,
            "NULL deps with dep_count 1");
  TH_ERR_IS(hsad_queue_barrier_signals(q, NULL, 0, NULL, 2, sig, 0, &c), HSAD_ERR_INVALID_ARGUMENT,
            m, "NULL and_signals with signal_count 2");
  TH_ERR_IS(hsad_queue_flush(NULL, 0, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_queue_flush: NULL queue");
  TH_ERR_IS(hsad_queue_flush(q, 0, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_queue_flush: NULL out_completion");
  TH_ERR_IS(hsad_queue_wait_idle(NULL, 0), HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_wait_idle: NULL queue");
  TH_ERR_IS(hsad_completion_wait_all(NULL, 1, 0), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_completion_wait_all: NULL completions");
  TH_OK(hsad_completion_wait_all(NULL, 0, 0));
  uint32_t index = 7;
  m = "hsad_completion_wait_any: %s";
  TH_ERR_IS(hsad_completion_wait_any(NULL, 0, 0, NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "NULL completions");
  TH_ERR_IS(hsad_completion_wait_any(cs, 0, 0, NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "NULL out_index");
  TH_ERR_IS(hsad_completion_wait_any(cs, 0, 0, &index), HSAD_ERR_INVALID_ARGUMENT, m, "count 0");
  cr_assert_eq(index, 7);
  uint64_t t0 = 5, t1 = 6;
  m = "hsad_completion_times: NULL %s";
  TH_ERR_IS(hsad_completion_times(NULL, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "completion");
  TH_ERR_IS(hsad_completion_times(&c, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "out_start_ns");
  TH_ERR_IS(hsad_completion_times(&c, &t0, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "out_end_ns");
  cr_assert(t0 == 5 && t1 == 6);
  hsa_signal_value_t lt = 3;
  hsad_completion_t cq = {.queue = q, .epoch = 1};
  m = "hsad_completion_signal: %s";
  TH_ERR_IS(hsad_completion_signal(NULL, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "NULL completion");
  TH_ERR_IS(hsad_completion_signal(&c, &sig, &lt), HSAD_ERR_INVALID_ARGUMENT, m,
            "an empty completion (it has no signal)");
  TH_ERR_IS(hsad_completion_signal(&cq, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "NULL out_signal");
  TH_ERR_IS(hsad_completion_signal(&cq, &sig, NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "NULL out_lt_value");
  cr_assert(sig.handle == 0 && lt == 3);
  hsad_trace_t *t = NULL;
  TH_ERR_IS(hsad_trace_create(NULL), HSAD_ERR_INVALID_ARGUMENT, "hsad_trace_create: NULL out_trace");
  TH_OK(hsad_trace_create(&t));
  TH_ERR_IS(hsad_trace_add(NULL, NULL, 1), HSAD_ERR_INVALID_ARGUMENT, "hsad_trace_add: NULL trace");
  TH_ERR_IS(hsad_trace_add(t, NULL, 1), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_trace_add: NULL records with count 1");
  m = "hsad_trace_write: NULL %s";
  TH_ERR_IS(hsad_trace_write(NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "trace");
  TH_ERR_IS(hsad_trace_write(t, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "path");
  hsad_trace_destroy(t);
  /* variant sets */
  hsad_variant_set_t *set = NULL;
  m = "hsad_variant_set_create: NULL %s";
  TH_ERR_IS(hsad_variant_set_create(NULL, 0, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "kernels");
  TH_ERR_IS(hsad_variant_set_create(&fill, 0, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "out_set");
  m = "hsad_variant_set_create: %u variants (1..%u)";
  TH_ERR_IS(hsad_variant_set_create(&fill, 0, &set), HSAD_ERR_INVALID_ARGUMENT, m, 0u, HSAD_VARIANT_MAX);
  m = "hsad_variant_set_from_programs: NULL %s";
  TH_ERR_IS(hsad_variant_set_from_programs(NULL, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "programs");
  TH_ERR_IS(hsad_variant_set_from_programs(&pf, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "name");
  TH_ERR_IS(hsad_variant_set_from_programs(&pf, 0, "fill", NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "out_set");
  m = "hsad_variant_set_from_programs: %u variants (1..%u)";
  TH_ERR_IS(hsad_variant_set_from_programs(&pf, 0, "fill", &set), HSAD_ERR_INVALID_ARGUMENT, m,
            0u, HSAD_VARIANT_MAX);
  TH_ERR_IS(hsad_variant_set_from_programs(&pf, HSAD_VARIANT_MAX + 1, "fill", &set),
            HSAD_ERR_INVALID_ARGUMENT, m, HSAD_VARIANT_MAX + 1, HSAD_VARIANT_MAX);
  cr_assert_null(set);
  TH_OK(hsad_variant_set_from_programs(&pf, 1, "fill", &set));
  cr_assert_eq(hsad_variant_set_count(set), 1);
  cr_assert_eq(hsad_variant_set_kernel(set, 0), fill);
  cr_assert_null(hsad_variant_set_kernel(set, 1));
  cr_assert_null(hsad_variant_set_kernel(NULL, 0));
  cr_assert_eq(hsad_variant_set_count(NULL), 0);
  hsad_variant_set_stats_t st;
  TH_ERR_IS(hsad_variant_set_stats(NULL, &st), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_variant_set_stats: NULL set");
  TH_ERR_IS(hsad_variant_set_stats(set, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_variant_set_stats: NULL out_stats");
  hsad_variant_choice_t ch;
  m = "hsad_variant_set_select: NULL %s";
  TH_ERR_IS(hsad_variant_set_select(NULL, 64, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "set");
  TH_ERR_IS(hsad_variant_set_select(set, 64, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "out_choice");
  m = "hsad_variant_set_candidate: %s";
  TH_ERR_IS(hsad_variant_set_candidate(NULL, 5, 64, 0, NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "NULL set");
  TH_ERR_IS(hsad_variant_set_candidate(set, 5, 64, 0, NULL), HSAD_ERR_INVALID_ARGUMENT, m,
            "NULL out_choice");
  TH_ERR_IS(hsad_variant_set_candidate(set, 5, 64, 0, &ch), HSAD_ERR_INVALID_ARGUMENT, m,
            "variant 5 of 1");
  hsad_variant_tuning_t tu;
  m = "hsad_variant_set_autotune: NULL %s";
  TH_ERR_IS(hsad_variant_set_autotune(NULL, NULL, NULL, 0, &tu), HSAD_ERR_INVALID_ARGUMENT, m,
            "set");
  TH_ERR_IS(hsad_variant_set_autotune(set, NULL, NULL, 0, &tu), HSAD_ERR_INVALID_ARGUMENT, m,
            "queue");
  TH_ERR_IS(hsad_variant_set_autotune(set, q, NULL, 0, &tu), HSAD_ERR_INVALID_ARGUMENT, m,
            "launch");
  TH_ERR_IS(hsad_variant_dispatch(q, NULL, NULL, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_variant_dispatch: NULL set");
  TH_ERR_IS(hsad_variant_dispatch(q, set, NULL, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_variant_dispatch: NULL launch");
  hsad_variant_set_destroy(set);
  cr_assert_eq(((const amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id, 0, "nothing submitted");
  hsad_buffer_free(dst);
  hsad_queue_destroy(q);
  hsad_program_destroy(pf);
  TH_OK(hsad_runtime_close(e.rt));
}

/* The same for fusion/ and memory/: graph recording, instantiation, exec queries, launches,
 * updates and queue changes; allocation info, host pools, NUMA queries. */
Test(arguments, graphs_and_memory, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *fill;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &fill);
  hsad_queue_t *q = th_queue(&e, 64);
  uint32_t *dst = th_alloc(&e, 256), v = 1, n = 64;
  hsad_karg_t a[3] = {HSAD_KARG_PTR(dst), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {64}, .block = {64}, .args = a, .arg_count = 3};
  const char *m;
  hsad_graph_t *g = NULL;
  TH_ERR_IS(hsad_graph_create(0, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_create: NULL out_graph");
  TH_ERR_IS(hsad_graph_create(0x80 | HSAD_GRAPH_CAPTURE, &g), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_create: unknown flags 0x80 (known: HSAD_GRAPH_CAPTURE)");
  cr_assert_null(g);
  TH_OK(hsad_graph_create(0, &g));
  uint32_t id = 77;
  TH_ERR_IS(hsad_graph_add_kernel(NULL, "A", 0, fill, &l, NULL, 0, &id), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_add_kernel: NULL graph");
  TH_ERR_IS(hsad_graph_add_kernel(g, "A", 0, fill, &l, NULL, 1, &id), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_add_kernel: NULL deps with a count of 1");
  TH_ERR_IS(hsad_graph_add_kernel(g, "A", 64, fill, &l, NULL, 0, &id), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_add_kernel: lane 64 not below 64");
  TH_ERR_IS(hsad_graph_add_barrier(g, "B", 0, (uint32_t[]){0}, 1, &id), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_add_barrier: dependency 0 is node 0, not recorded yet (0 nodes)");
  TH_ERR_IS(hsad_graph_add_kernel(g, "A", 0, NULL, NULL, NULL, 0, &id), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_add_kernel: NULL kernel");
  TH_ERR_IS(hsad_graph_add_kernel(g, "A", 0, fill, NULL, NULL, 0, &id), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_add_kernel: NULL launch");
  hsad_launch_t noargs = l;
  noargs.args = NULL;
  TH_ERR_IS(hsad_graph_add_kernel(g, "A", 0, fill, &noargs, NULL, 0, &id), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_add_kernel: NULL args with count 3");
  cr_assert_eq(id, 77, "nothing recorded");
  hsad_graph_exec_t *x = NULL;
  hsad_queue_t *lanes[1] = {q};
  TH_ERR_IS(hsad_graph_instantiate(g, lanes, 1, &x), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_instantiate: the graph has no nodes (nothing to run)");
  TH_OK(hsad_graph_add_kernel(g, "A", 0, fill, &l, NULL, 0, &id));
  cr_assert_eq(id, 0);
  m = "hsad_graph_add_edge: node %u -> %u: the graph has %u nodes";
  TH_ERR_IS(hsad_graph_add_edge(NULL, 0, 0), HSAD_ERR_INVALID_ARGUMENT, m, 0u, 0u, 0u);
  TH_ERR_IS(hsad_graph_add_edge(g, 1, 0), HSAD_ERR_INVALID_ARGUMENT, m, 1u, 0u, 1u);
  TH_ERR_IS(hsad_graph_add_edge(g, 0, 1), HSAD_ERR_INVALID_ARGUMENT, m, 0u, 1u, 1u);
  TH_ERR_IS(hsad_graph_instantiate(NULL, lanes, 1, &x), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_instantiate: NULL graph");
  TH_ERR_IS(hsad_graph_instantiate(g, NULL, 1, &x), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_instantiate: NULL lane_queues");
  TH_ERR_IS(hsad_graph_instantiate(g, lanes, 1, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_instantiate: NULL out_exec");
  cr_assert_null(x);
  TH_OK(hsad_graph_instantiate(g, lanes, 1, &x));
  hsad_graph_destroy(g);
  /* counts and queues past the exec's queues are 0 / NULL (mutant 117) */
  cr_assert_eq(hsad_graph_exec_queue_count(x), 1);
  cr_assert_eq(hsad_graph_exec_point_count(x, 0), 1);
  cr_assert_eq(hsad_graph_exec_point_count(x, 1), 0);
  cr_assert_eq(hsad_graph_exec_packet_count(x, 0), 1);
  cr_assert_eq(hsad_graph_exec_packet_count(x, 1), 0);
  cr_assert_eq(hsad_graph_exec_queue(x, 0), q);
  cr_assert_null(hsad_graph_exec_queue(x, 1));
  cr_assert_eq(hsad_graph_exec_queue_count(NULL), 0);
  cr_assert_eq(hsad_graph_exec_point_count(NULL, 0), 0);
  cr_assert_eq(hsad_graph_exec_packet_count(NULL, 0), 0);
  cr_assert_null(hsad_graph_exec_queue(NULL, 0));
  uint32_t pt = 99;
  m = "hsad_graph_exec_point: queue %u point %u out of range";
  TH_ERR_IS(hsad_graph_exec_point(NULL, 0, 0, &pt), HSAD_ERR_INVALID_ARGUMENT, m, 0u, 0u);
  TH_ERR_IS(hsad_graph_exec_point(x, 0, 0, NULL), HSAD_ERR_INVALID_ARGUMENT, m, 0u, 0u);
  TH_ERR_IS(hsad_graph_exec_point(x, 1, 0, &pt), HSAD_ERR_INVALID_ARGUMENT, m, 1u, 0u);
  TH_ERR_IS(hsad_graph_exec_point(x, 0, 1, &pt), HSAD_ERR_INVALID_ARGUMENT, m, 0u, 1u);
  cr_assert_eq(pt, 99);
  uint8_t pkt[64];
  int32_t node = 5;
  m = "hsad_graph_exec_packet: queue %u packet %u out of range";
  TH_ERR_IS(hsad_graph_exec_packet(NULL, 0, 0, pkt, &node), HSAD_ERR_INVALID_ARGUMENT, m, 0u, 0u);
  TH_ERR_IS(hsad_graph_exec_packet(x, 0, 0, NULL, &node), HSAD_ERR_INVALID_ARGUMENT, m, 0u, 0u);
  TH_ERR_IS(hsad_graph_exec_packet(x, 1, 0, pkt, &node), HSAD_ERR_INVALID_ARGUMENT, m, 1u, 0u);
  TH_ERR_IS(hsad_graph_exec_packet(x, 0, 1, pkt, &node), HSAD_ERR_INVALID_ARGUMENT, m, 0u, 1u);
  cr_assert_eq(node, 5);
  hsad_completion_t done[1];
  TH_ERR_IS(hsad_graph_launch(NULL, 0, 0, done, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_launch: NULL exec");
  TH_ERR_IS(hsad_graph_launch_after(x, 0, NULL, 2, 0, done, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_launch: NULL deps with a count of 2");
  TH_ERR_IS(hsad_graph_exec_set_queue(NULL, 0, q), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_exec_set_queue: NULL exec");
  TH_ERR_IS(hsad_graph_exec_set_queue(x, 0, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_exec_set_queue: NULL queue");
  TH_ERR_IS(hsad_graph_exec_set_queue(x, 1, q), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_exec_set_queue: queue index 1 not below the exec's 1 queues");
  m = "hsad_graph_exec_update: node %u is not a node of the exec (%u nodes)";
  TH_ERR_IS(hsad_graph_exec_update(NULL, 0, &l), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_exec_update: NULL exec");
  TH_ERR_IS(hsad_graph_exec_update(x, 0, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_graph_exec_update: NULL launch");
  TH_ERR_IS(hsad_graph_exec_update(x, 1, &l), HSAD_ERR_INVALID_ARGUMENT, m, 1u, 1u);
  cr_assert_eq(((const amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id, 0, "nothing submitted");
  hsad_graph_exec_destroy(x);
  /* memory */
  hsad_mem_info_t info;
  m = "hsad_mem_info: NULL %s";
  TH_ERR_IS(hsad_mem_info(NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "ptr");
  TH_ERR_IS(hsad_mem_info(dst, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "out_info");
  (void)info;
  hsad_host_pool_t *pool = NULL;
  TH_ERR_IS(hsad_host_pool_get(e.dev, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_host_pool_get: out_pool is NULL");
  TH_ERR_IS(hsad_host_pool_get_node(e.rt, 0, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_host_pool_get_node: out_pool is NULL");
  TH_OK(hsad_host_pool_get(e.dev, &pool));
  hsad_host_pool_stats_t ps;
  m = "hsad_host_pool_stats: NULL %s";
  TH_ERR_IS(hsad_host_pool_stats(NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "pool");
  TH_ERR_IS(hsad_host_pool_stats(pool, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "out_stats");
  (void)ps;
  int32_t numa = 42;
  m = "hsad_numa_page_node: NULL %s";
  TH_ERR_IS(hsad_numa_page_node(NULL, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "ptr");
  TH_ERR_IS(hsad_numa_page_node(dst, NULL), HSAD_ERR_INVALID_ARGUMENT, m, "out_node");
  cr_assert_eq(numa, 42);
  hsad_buffer_free(dst);
  hsad_queue_destroy(q);
  hsad_program_destroy(pf);
  TH_OK(hsad_runtime_close(e.rt));
}

/* Monitoring options (hsad_monitor.h): a capacity that is not a power of two up to 2^24 is
 * refused by both enables with the whole message; a full ring drops records and says how many
 * (8 records kept of 10 dispatches, 2 dropped, oldest first); enabling again with the same
 * capacity keeps the ring, with another capacity replaces it (empty); disable on NULL or an
 * unmonitored queue does nothing; draining an unmonitored queue is UNSUPPORTED. */
Test(monitor_options, capacity_full_ring_and_reenable, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *fill;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &fill);
  hsad_queue_t *q = th_queue(&e, 64);
  TH_ERR_IS(hsad_queue_monitor_enable(NULL, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_queue_monitor_enable: NULL queue");
  TH_ERR_IS(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.capacity = 3}),
            HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_monitor_enable: capacity 3 records: must be a "
            "power of two up to 16777216");
  TH_ERR_IS(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.capacity = 1u << 25}),
            HSAD_ERR_INVALID_ARGUMENT, "hsad_queue_monitor_enable: capacity 33554432 records: "
            "must be a power of two up to 16777216");
  TH_ERR_IS(hsad_monitor_enable_process(&(hsad_monitor_options_t){.capacity = 6}),
            HSAD_ERR_INVALID_ARGUMENT, "hsad_monitor_enable_process: capacity 6 records: must be "
            "a power of two up to 16777216");
  hsad_dispatch_record_t rec[16];
  uint32_t count = 5;
  uint64_t dropped = 5;
  TH_ERR_IS(hsad_queue_monitor_drain(q, rec, 16, &count, &dropped), HSAD_ERR_UNSUPPORTED,
            "hsad_queue_monitor_drain: monitoring is not enabled on the queue "
            "(hsad_queue_monitor_enable, hsad_monitor_enable_process)");
  hsad_queue_monitor_disable(NULL);
  hsad_queue_monitor_disable(q);
  TH_OK(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.capacity = 8, .no_alerts = true}));
  uint32_t *dst = th_alloc(&e, 64 * 4);
  for (uint32_t i = 1; i <= 10; i++) {
    uint32_t n = i;
    hsad_karg_t a[3] = {HSAD_KARG_PTR(dst), HSAD_KARG_VAL(i), HSAD_KARG_VAL(n)};
    hsad_launch_t l = {.dims = 1, .grid = {i}, .block = {i}, .args = a, .arg_count = 3};
    TH_OK(hsad_kernel_dispatch(q, fill, &l, th_in(TH_SEC), NULL, NULL));
  }
  TH_OK(hsad_queue_wait_idle(q, th_in(5 * TH_SEC)));
  TH_OK(hsad_queue_monitor_drain(q, rec, 16, &count, &dropped));
  cr_assert_eq(count, 8);
  cr_assert_eq(dropped, 2);
  for (uint32_t i = 0; i < 8; i++) {
    cr_assert_eq(rec[i].grid[0], i + 1, "record %u: grid %u", i, rec[i].grid[0]);
    cr_assert_str_eq(rec[i].kernel, "fill");
  }
  /* the same capacity: the ring stays (one new record), another: a new, empty ring */
  TH_OK(hsad_kernel_dispatch(q, fill, &(hsad_launch_t){.dims = 1, .grid = {1}, .block = {1},
        .args = (hsad_karg_t[]){HSAD_KARG_PTR(dst), HSAD_KARG_VAL(count), HSAD_KARG_VAL(count)},
        .arg_count = 3}, th_in(TH_SEC), NULL, NULL));
  TH_OK(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.capacity = 8, .no_alerts = true}));
  TH_OK(hsad_queue_wait_idle(q, th_in(5 * TH_SEC)));
  TH_OK(hsad_queue_monitor_drain(q, rec, 16, &count, &dropped));
  cr_assert_eq(count, 1);
  cr_assert_eq(dropped, 0);
  TH_OK(hsad_kernel_dispatch(q, fill, &(hsad_launch_t){.dims = 1, .grid = {1}, .block = {1},
        .args = (hsad_karg_t[]){HSAD_KARG_PTR(dst), HSAD_KARG_VAL(count), HSAD_KARG_VAL(count)},
        .arg_count = 3}, th_in(TH_SEC), NULL, NULL));
  TH_OK(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.capacity = 16, .no_alerts = true}));
  TH_OK(hsad_queue_wait_idle(q, th_in(5 * TH_SEC)));
  TH_OK(hsad_queue_monitor_drain(q, rec, 16, &count, &dropped));
  cr_assert_eq(count, 0);
  hsad_queue_monitor_disable(q);
  hsad_buffer_free(dst);
  hsad_queue_destroy(q);
  hsad_program_destroy(pf);
  TH_OK(hsad_runtime_close(e.rt));
}

#ifndef MON_FIXTURE
#define MON_FIXTURE "build/tests/monitor/monitor-v5.hsaco"
#endif
static char surv_alert_msg[512];
static hsad_monitor_alert_t surv_alert;
static int surv_alerts;
static void surv_on_alert(const hsad_monitor_alert_t *a, void *user) {
  (void)user;
  /* kfd-emu's emu-no-code alert for hm_scratch (neither source nor twin) is not counted here
   * (tests/test_monitor.c checks it) */
  if (a->reason == HSAD_ALERT_EMU_NO_CODE) return;
  if (surv_alerts++) return;
  surv_alert = *a;
  snprintf(surv_alert_msg, sizeof surv_alert_msg, "%s", a->message);
}

/* The scratch growth alert's whole message (hm_scratch of tests/data/monitor/monitor.s: 256
 * private bytes per work-item, on a queue created with 16): the kernel, the packet, the sizes
 * before and after from the record, the kernel's private segment and the queue's (mutant 77:
 * two of its arguments swapped). Run without a twin (KFD_EMU_NO_TWIN=noop), as test_monitor. */
Test(monitor_options, scratch_growth_alert_message, .timeout = 60) {
  setenv("KFD_EMU_NO_TWIN", "noop", 1);
  th_env_t e;
  th_open(&e);
  hsad_program_t *p;
  TH_OK(hsad_program_load_file(e.dev, MON_FIXTURE, &p));
  const hsad_device_kernel_t *k;
  TH_OK(hsad_program_kernel(p, "hm_scratch", &k));
  void *b = th_alloc(&e, 4096);
  hsad_karg_t a[1] = {HSAD_KARG_PTR(b)};
  hsad_queue_t *q;
  TH_OK(hsad_queue_create(e.dev, &(hsad_queue_options_t){.size = 64, .private_segment_size = 16},
                          &q));
  TH_OK(hsad_queue_monitor_enable(q, &(hsad_monitor_options_t){.alert = surv_on_alert}));
  hsad_launch_t l = {.dims = 1, .grid = {256}, .block = {64}, .args = a, .arg_count = 1};
  hsad_completion_t c;
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), &c, NULL));
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  hsad_dispatch_record_t r[2];
  uint32_t n;
  TH_OK(hsad_queue_monitor_drain(q, r, 2, &n, NULL));
  cr_assert_eq(n, 1);
  cr_assert_eq(surv_alerts, 1);
  cr_assert_eq(surv_alert.reason, HSAD_ALERT_SCRATCH_GROWTH);
  cr_assert(r[0].queue_scratch_after > r[0].queue_scratch_before);
  char want[512];
  snprintf(want, sizeof want, "kernel hm_scratch (packet %llu): ROCr grew the queue's scratch "
           "from %llu to %llu bytes for 256 bytes per work-item (the queue had 16 per lane)",
           (unsigned long long)r[0].packet_id, (unsigned long long)r[0].queue_scratch_before,
           (unsigned long long)r[0].queue_scratch_after);
  cr_assert_str_eq(surv_alert_msg, want);
  hsad_queue_destroy(q);
  hsad_buffer_free(b);
  hsad_program_destroy(p);
  TH_OK(hsad_runtime_close(e.rt));
}

/* A 2-dimensional launch whose block[2] is 0 (allowed: dimensions past dims are 0 or 1, written
 * as 1) has a workgroup of block[0] x block[1]: the set runs its rule for 64 work-items and
 * caches that key (mutant 93: block[2] multiplied in, a workgroup of 0 sent to variant 0 with
 * no rule run). */
Test(variants, two_dims_ignore_block_z, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *fill;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &fill);
  hsad_variant_set_t *set = NULL;
  TH_OK(hsad_variant_set_create(&fill, 1, &set));
  hsad_queue_t *q = th_queue(&e, 64);
  uint32_t *dst = th_alloc(&e, 64 * 4), value = 11, n = 64;
  hsad_karg_t a[3] = {HSAD_KARG_PTR(dst), HSAD_KARG_VAL(value), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 2, .grid = {8, 8}, .block = {8, 8, 0}, .args = a, .arg_count = 3};
  hsad_completion_t c;
  TH_OK(hsad_variant_dispatch(q, set, &l, th_in(TH_SEC), &c, NULL));
  TH_OK(hsad_completion_wait(&c, th_in(5 * TH_SEC)));
  for (int i = 0; i < 8; i++) cr_assert_eq(dst[i], 11);
  hsad_variant_set_stats_t st;
  TH_OK(hsad_variant_set_stats(set, &st));
  cr_assert_eq(st.rule_runs, 1);
  cr_assert_eq(st.cached_keys, 1);
  hsad_variant_choice_t ch;
  bool cached = false;
  TH_OK(hsad_variant_set_select(set, 64, 0, &ch, &cached));
  cr_assert(cached, "the 8 x 8 workgroup is cached as 64 work-items");
  cr_assert_eq(ch.index, 0);
  hsad_buffer_free(dst);
  hsad_queue_destroy(q);
  hsad_variant_set_destroy(set);
  hsad_program_destroy(pf);
  TH_OK(hsad_runtime_close(e.rt));
}

static json_object *surv_get(json_object *o, const char *key) {
  json_object *v = NULL;
  cr_assert(json_object_object_get_ex(o, key, &v), "no \"%s\" in %s", key,
            json_object_to_json_string(o));
  return v;
}
static int64_t surv_int(json_object *o, const char *key) {
  return json_object_get_int64(surv_get(o, key));
}
static const char *surv_str(json_object *o, const char *key) {
  return json_object_get_string(surv_get(o, key));
}

/* hsad_trace_write of hand-made records (no queue: device 0, queue 0, ordinal 0): dispatches
 * 10 and 11 overlap on the device, so 11 gets lane 1 (its own track, "... GPU lane 1") and 12,
 * after both, lane 0 again (mutant 86: the lane count); 12 and 13 were submitted together, one
 * host slice "submit 2 dispatches" whose args give the submit interval (mutant 88); a dispatch
 * slice's args carry the device times (mutant 82). Times in us in the JSON, ns in the args. */
Test(trace, lanes_batches_and_device_times, .timeout = 60) {
  hsad_trace_t *t;
  TH_OK(hsad_trace_create(&t));
  hsad_dispatch_record_t r[4];
  memset(r, 0, sizeof r);
  const uint64_t start[4] = {1000, 1500, 3000, 4000}, end[4] = {2000, 2500, 3500, 4500};
  const uint64_t sub[4] = {100, 110, 120, 120};
  for (int i = 0; i < 4; i++) {
    r[i] = (hsad_dispatch_record_t){.packet_id = 10 + (uint64_t)i, .kernel = "k", .dims = 1,
                                    .grid = {64, 1, 1}, .workgroup = {64, 1, 1}, .thread_id = 77,
                                    .submit_start_ns = sub[i], .submit_end_ns = sub[i] + 5,
                                    .start_ns = start[i], .end_ns = end[i], .device_times = true};
  }
  TH_OK(hsad_trace_add(t, r, 4));
  char path[] = "/tmp/hsad-surv-trace-XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  TH_OK(hsad_trace_write(t, path));
  hsad_trace_destroy(t);
  json_object *root = json_object_from_file(path);
  unlink(path);
  cr_assert_not_null(root);
  json_object *ev = surv_get(root, "traceEvents");
  int64_t lane0 = -1, lane1 = -1;
  size_t len = json_object_array_length(ev);
  for (size_t i = 0; i < len; i++) {
    json_object *e = json_object_array_get_idx(ev, i);
    if (strcmp(surv_str(e, "ph"), "M") || strcmp(surv_str(e, "name"), "thread_name")) continue;
    const char *nm = surv_str(surv_get(e, "args"), "name");
    if (!strcmp(nm, "COMPUTE Agent [0] QUEUE [0] GPU")) lane0 = surv_int(e, "tid");
    if (!strcmp(nm, "COMPUTE Agent [0] QUEUE [0] GPU lane 1")) lane1 = surv_int(e, "tid");
  }
  cr_assert(lane0 >= 0 && lane1 >= 0 && lane0 != lane1, "tracks: lane 0 %lld, lane 1 %lld",
            (long long)lane0, (long long)lane1);
  int dispatches = 0, singles = 0, batches = 0;
  for (size_t i = 0; i < len; i++) {
    json_object *e = json_object_array_get_idx(ev, i);
    if (strcmp(surv_str(e, "ph"), "X")) continue;
    json_object *a = surv_get(e, "args");
    if (!strcmp(surv_str(e, "cat"), "dispatch")) {
      int64_t id = surv_int(a, "packet_id");
      cr_assert(id >= 10 && id <= 13);
      cr_assert_eq(surv_int(e, "tid"), id == 11 ? lane1 : lane0, "packet %lld's track", (long long)id);
      cr_assert_eq(surv_int(a, "start_ns"), (int64_t)start[id - 10]);
      cr_assert_eq(surv_int(a, "end_ns"), (int64_t)end[id - 10]);
      dispatches++;
    } else if (!strcmp(surv_str(e, "name"), "submit 2 dispatches")) {
      cr_assert_eq(surv_int(a, "dispatches"), 2);
      cr_assert_eq(surv_int(a, "submit_start_ns"), 120);
      cr_assert_eq(surv_int(a, "submit_end_ns"), 125);
      cr_assert_eq(surv_int(a, "thread_id"), 77);
      batches++;
    } else {
      cr_assert_str_eq(surv_str(e, "name"), "submit k");
      cr_assert_eq(surv_int(a, "submit_start_ns"), (int64_t)sub[surv_int(a, "packet_id") - 10]);
      singles++;
    }
  }
  cr_assert_eq(dispatches, 4);
  cr_assert_eq(singles, 2);
  cr_assert_eq(batches, 1);
  json_object_put(root);
}

/* The two public functions no other test calls: hsad_copy_strategy_name (the header's names)
 * and hsad_codeobj_entry_id (a bundle entry's id; "" for a plain code object and for NULL). */
Test(public_rest, copy_strategy_names_and_entry_id) {
  cr_assert_str_eq(hsad_copy_strategy_name(HSAD_COPY_DIRECT), "direct");
  cr_assert_str_eq(hsad_copy_strategy_name(HSAD_COPY_STAGED), "staged");
  cr_assert_str_eq(hsad_copy_strategy_name(HSAD_COPY_PIPELINED), "pipelined");
  cr_assert_str_eq(hsad_copy_strategy_name(HSAD_COPY_PINNED), "pinned");
  cr_assert_str_eq(hsad_copy_strategy_name((hsad_copy_strategy_t)9), "unknown");
  size_t co_size, size;
  uint8_t *bytes = surv_read(TEST_KERNDIR "/fill-gfx1030-v5.hsaco", &co_size);
  uint8_t *bundle = surv_bundle("hipv4-amdgcn-amd-amdhsa--gfx1030", bytes, co_size, &size);
  hsad_codeobj_container_t *c;
  TH_OK(hsad_codeobj_container_open_memory(bundle, size, "b", &c));
  hsad_codeobj_t *co;
  TH_OK(hsad_codeobj_load_entry(c, 0, &co));
  cr_assert_str_eq(hsad_codeobj_entry_id(co), "hipv4-amdgcn-amd-amdhsa--gfx1030");
  hsad_codeobj_destroy(co);
  hsad_codeobj_container_destroy(c);
  TH_OK(hsad_codeobj_load_memory(bytes, co_size, "plain", &co));
  cr_assert_str_eq(hsad_codeobj_entry_id(co), "");
  hsad_codeobj_destroy(co);
  cr_assert_str_eq(hsad_codeobj_entry_id(NULL), "");
  free(bundle);
  free(bytes);
}

static void surv_instantiate_round(hsad_graph_t *g, hsad_queue_t *const *lanes) {
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, lanes, 2, &x));
  hsad_graph_exec_destroy(x);
}

/* Instantiating a graph and destroying the exec returns every byte (mutant 138: a work array
 * of hsad_graph_instantiate). A fork/join over two queues: cross-queue edges, epoch points. */
Test(heap, graph_instantiate_returns_every_byte, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *fill;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &fill);
  hsad_queue_t *q[2] = {th_queue(&e, 64), th_queue(&e, 64)};
  uint32_t *dst = th_alloc(&e, 256), v = 1, n = 64;
  hsad_karg_t a[3] = {HSAD_KARG_PTR(dst), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {64}, .block = {64}, .args = a, .arg_count = 3};
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t na, nb, nc;
  TH_OK(hsad_graph_add_kernel(g, "A", 0, fill, &l, NULL, 0, &na));
  TH_OK(hsad_graph_add_kernel(g, "B", 1, fill, &l, &na, 1, &nb));
  TH_OK(hsad_graph_add_kernel(g, "C", 0, fill, &l, (uint32_t[]){na, nb}, 2, &nc));
  /* 32 warm-up rounds: ROCr's and glibc's own tables still grow over the first ~20 (the
   * kernarg block cache is warm after one) */
  SURV_HEAP_BALANCED("graph instantiate", 32, 16, surv_instantiate_round(g, q));
  hsad_graph_destroy(g);
  hsad_buffer_free(dst);
  hsad_queue_destroy(q[1]);
  hsad_queue_destroy(q[0]);
  hsad_program_destroy(pf);
  TH_OK(hsad_runtime_close(e.rt));
}

/* One round of capture begins: a refused one (the shared queue, `want` its exact message), a
 * begin / end pair on q (the end hands back g), a begin refused while q captures. */
static void surv_capture_round(hsad_queue_t *shared, hsad_queue_t *q, hsad_graph_t *g,
                               const char *want) {
  hsad_status_t s = hsad_queue_capture_begin(shared, g, 0);
  if (s != HSAD_ERR_INVALID_ARGUMENT || strcmp(hsad_last_error(), want))
    cr_assert_fail("refused begin: %s: '%s', want '%s'", hsad_status_name(s), hsad_last_error(),
                   want);
  cr_assert_not(hsad_queue_capturing(shared));
  TH_OK(hsad_queue_capture_begin(q, g, 1));
  cr_assert_eq(hsad_queue_capture_begin(q, g, 2), HSAD_ERR_INVALID_ARGUMENT);
  hsad_graph_t *ended = NULL;
  TH_OK(hsad_queue_capture_end(q, &ended));
  cr_assert_eq(ended, g);
}

/* hsad_queue_capture_begin returns every byte when the queue refuses to capture (seed-28
 * mutant fusion/capture.c:235: the capture record, 40 bytes, kept when the AMD gate refuses a
 * shared queue) and when a capture ends (its record freed by hsad_queue_capture_end). */
Test(heap, refused_capture_begin_returns_every_byte, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  hsad_queue_t *shared, *q = th_queue(&e, 64);
  TH_OK(hsad_device_queue(e.dev, &shared));
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  char want[512];
  snprintf(want, sizeof want, "hsad_queue_capture_begin: queue %llu is a shared queue of "
           "device 0 (hsad_device_queue): its other users' submits would be captured; capture "
           "on a queue of your own (hsad_queue_create)",
           (unsigned long long)hsad_queue_hsa(shared)->id);
  SURV_HEAP_BALANCED("refused capture begins", 8, 16, surv_capture_round(shared, q, g, want));
  hsad_graph_destroy(g);
  hsad_queue_destroy(q);
  TH_OK(hsad_runtime_close(e.rt));
}

static void *surv_free_in_thread(void *p) {
  cr_assert_eq(hsad_mem_free(p), HSAD_OK);
  return NULL;
}

/* The registry of allocations is shared by threads: memory freed on another thread (which then
 * exits) leaves the registry usable here (mutant 153: the registry lock kept by the freeing
 * thread, so the next lookup waits forever); the freed address reads as freed. */
Test(memory_threads, free_on_another_thread, .timeout = 20) {
  th_env_t e;
  th_open(&e);
  void *b = NULL, *c = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_FINE, 4096, NULL, 0, &b));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_FINE, 8192, NULL, 0, &c));
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, surv_free_in_thread, b), 0);
  cr_assert_eq(pthread_join(th, NULL), 0);
  hsad_mem_info_t info;
  TH_OK(hsad_mem_info(c, &info));
  cr_assert_eq(info.size, 8192);
  hsad_status_t s = hsad_mem_info(b, &info);
  cr_assert_eq(s, HSAD_ERR_FREED, "%s: %s", hsad_status_name(s), hsad_last_error());
  TH_OK(hsad_mem_free(c));
  TH_OK(hsad_runtime_close(e.rt));
}

/* A block of the device's pinned host pool is reachable by the GPU (hsad_memory.h: pool blocks
 * are granted to every GPU): fill writes it, under kfd-emu's strict access checks (mutant 169:
 * no hsa_amd_agents_allow_access after the allocation). */
Test(host_pool, block_written_by_a_kernel, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *fill;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &fill);
  hsad_queue_t *q = th_queue(&e, 64);
  hsad_host_pool_t *pool;
  TH_OK(hsad_host_pool_get(e.dev, &pool));
  uint32_t *p = NULL, value = 0x5eed, n = 1024;
  TH_OK(hsad_host_pool_alloc(pool, n * 4, (void **)&p));
  memset(p, 0, n * 4);
  hsad_karg_t a[3] = {HSAD_KARG_PTR(p), HSAD_KARG_VAL(value), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {n}, .block = {64}, .args = a, .arg_count = 3};
  hsad_completion_t c;
  TH_OK(hsad_kernel_dispatch(q, fill, &l, th_in(TH_SEC), &c, NULL));
  TH_OK(hsad_completion_wait(&c, th_in(5 * TH_SEC)));
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(p[i], 0x5eed, "p[%u]", i);
  TH_OK(hsad_host_pool_free(pool, p));
  hsad_queue_destroy(q);
  hsad_program_destroy(pf);
  TH_OK(hsad_runtime_close(e.rt));
}

static void surv_async_round(hsad_device_t *dev, void *dst, const void *src) {
  hsad_completion_t c;
  TH_OK(hsad_memcpy_async(dev, dst, src, 4096, NULL, 0, NULL, th_in(TH_SEC), &c));
  TH_OK(hsad_completion_wait(&c, th_in(5 * TH_SEC)));
}

/* Asynchronous copies hand their signals back once reached (the next copy reclaims them): a
 * long run of copies, each waited for, holds no more memory than a few (mutant 194: nothing
 * reclaimed, every copy's bookkeeping and signals kept). Data checked at the end. */
Test(heap, async_copies_reclaim, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  uint8_t *src = NULL, *dst = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_FINE, 4096, NULL, 0, (void **)&src));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 4096, NULL, 0, (void **)&dst));
  for (int i = 0; i < 4096; i++) src[i] = (uint8_t)(i * 7);
  SURV_HEAP_BALANCED("async copies", 80, 16, surv_async_round(e.dev, dst, src));
  uint8_t back[4096];
  TH_OK(hsad_memcpy(e.dev, back, dst, 4096, NULL, th_in(5 * TH_SEC)));
  for (int i = 0; i < 4096; i++) cr_assert_eq(back[i], (uint8_t)(i * 7), "byte %d", i);
  TH_OK(hsad_mem_free(dst));
  TH_OK(hsad_mem_free(src));
  TH_OK(hsad_runtime_close(e.rt));
}

/* ---- seed 28 (stop 28): mutation-sample.py --seed 28 --count 60 --folders hsa-dispatch,fusion */

static void surv_multi_unit_round(th_env_t *e, const uint8_t *so, size_t size) {
  hsad_program_t *p = NULL;
  TH_OK(hsad_program_load_memory(e->dev, so, size, "hip_multi", &p));
  TH_OK(hsad_program_destroy(p));
}

/* A program of two translation units (hip_multi.so: hip_scale.hip and hip_second.hip, one
 * .hip_fatbin bundle each) whose kernels differ loads with both kernels, in unit order (seed 28
 * mutant 9: every kernel of a later unit reported as defined in two units), one whose units
 * both define a kernel is refused (hip_dup.o); loading and
 * destroying it returns every byte (seed 28 mutant 11: the array of selected code objects, 16
 * bytes for two units; mutant 12: the units, readers and kernel table of a destroyed program). */
Test(program, two_units_load_and_free, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  size_t size;
  uint8_t *so = surv_read(CO_FIXDIR "/hip_multi.so", &size);
  hsad_program_t *p = NULL;
  TH_OK(hsad_program_load_memory(e.dev, so, size, "hip_multi", &p));
  cr_assert_eq(hsad_program_kernel_count(p), 2);
  cr_assert_str_eq(hsad_device_kernel_desc(hsad_program_kernel_at(p, 0))->name, "_Z5scalePffi");
  cr_assert_str_eq(hsad_device_kernel_desc(hsad_program_kernel_at(p, 1))->name, "_Z6offsetPii");
  TH_OK(hsad_program_destroy(p));
  /* the same kernel in both units (hip_dup.o): refused naming both (seed 29 mutant 3: the
   * duplicate check skipped each later unit's first kernel) */
  size_t dsize;
  uint8_t *dup = surv_read(CO_FIXDIR "/hip_dup.o", &dsize);
  p = (hsad_program_t *)1;
  TH_ERR_IS(hsad_program_load_memory(e.dev, dup, dsize, "dup", &p), HSAD_ERR_METADATA_TYPE,
            "kernel '_Z5scalePffi' is defined in two translation units: dup[bundle 0: "
            "hipv4-amdgcn-amd-amdhsa--gfx90a] and dup[bundle 1: hipv4-amdgcn-amd-amdhsa--gfx90a]");
  cr_assert_eq(p, (hsad_program_t *)1);
  free(dup);
  /* 200 warm-up rounds: ROCr's loader keeps ~40 bytes per executable for its first ~100 */
  SURV_HEAP_BALANCED("two-unit program load and destroy", 200, 16,
                     surv_multi_unit_round(&e, so, size));
  free(so);
  TH_OK(hsad_runtime_close(e.rt));
}

static uint64_t surv_write_id(hsad_queue_t *q) {
  return ((const amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id;
}

/* One barrier-AND packet without an epoch, reserved, published and rung: its id. */
static uint64_t surv_plain_packet(hsad_queue_t *q) {
  uint64_t id = 99;
  TH_OK(hsad_submit_reserve(q, 1, false, th_in(TH_SEC), &id, NULL));
  surv_publish_barrier(q, id, false);
  hsad_submit_doorbell(q, id);
  return id;
}

/* hsad_submit_point_issue issues a pending point's epoch only when nobody has yet (no test
 * called it; written while triaging seed 28's mutant 20, it kills timeline.c:435's && as ||: a
 * pending point flushed again after its epoch was issued submits a second barrier-AND for the
 * packets reserved since). Ids and epochs as hsad_submit.h gives them. */
Test(submit_api, point_issue_once, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  hsad_queue_t *q = th_queue(&e, 64);
  cr_assert_eq(surv_plain_packet(q), 0);
  hsad_submit_point_t pt;
  TH_OK(hsad_submit_point(q, &pt));
  cr_assert(pt.pending);
  cr_assert_eq(pt.completion.epoch, 1);
  cr_assert_eq(pt.end, 1);
  /* someone else issues epoch 1 (a barrier-AND at id 1), then a packet without one (id 2) */
  hsad_completion_t c;
  TH_OK(hsad_queue_flush(q, th_in(TH_SEC), &c));
  cr_assert_eq(c.epoch, 1);
  cr_assert_eq(c.packet_id, 1);
  cr_assert_eq(surv_plain_packet(q), 2);
  bool packet = true;
  TH_OK(hsad_submit_point_issue(&pt, th_in(TH_SEC), &packet));
  cr_assert_not(packet, "epoch 1 was issued already: no packet");
  cr_assert_eq(surv_write_id(q), 3);
  /* a pending point nobody issued: one barrier-AND epoch packet (id 3, epoch 2) */
  TH_OK(hsad_submit_point(q, &pt));
  cr_assert(pt.pending);
  cr_assert_eq(pt.completion.epoch, 2);
  cr_assert_eq(pt.end, 3);
  TH_OK(hsad_submit_point_issue(&pt, th_in(TH_SEC), &packet));
  cr_assert(packet);
  cr_assert_eq(surv_write_id(q), 4);
  TH_OK(hsad_completion_wait(&pt.completion, th_in(5 * TH_SEC)));
  /* a covered point (the last packet carries epoch 2): nothing to issue */
  TH_OK(hsad_submit_point(q, &pt));
  cr_assert_not(pt.pending);
  cr_assert_eq(pt.completion.epoch, 2);
  cr_assert_eq(pt.end, 4);
  packet = true;
  TH_OK(hsad_submit_point_issue(&pt, th_in(TH_SEC), &packet));
  cr_assert_not(packet);
  cr_assert_eq(surv_write_id(q), 4);
  hsad_queue_destroy(q);
  TH_OK(hsad_runtime_close(e.rt));
}

/* hsad_variant_set_stats counts every cached key, the one in slot 0 too (seed 28 mutant 41: the
 * count started at slot 1). Workgroup sizes 44 and 61 both have home slot 0 (variants.c's hash
 * of the key 1 | wg << 1, computed here): 44 takes slot 0, 61 probes on to slot 1. */
Test(variants, stats_count_slot_zero, .timeout = 60) {
  const uint32_t sizes[2] = {44, 61};
  for (int i = 0; i < 2; i++)
    cr_assert_eq((((1u | (uint64_t)sizes[i] << 1) * 0x9E3779B97F4A7C15ull) >> 59) & 31, 0,
                 "wg %u: home slot", sizes[i]);
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *fill;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &fill);
  hsad_variant_set_t *set = NULL;
  TH_OK(hsad_variant_set_create(&fill, 1, &set));
  hsad_variant_set_stats_t st;
  for (int i = 0; i < 2; i++) {
    hsad_variant_choice_t ch;
    bool cached = true;
    TH_OK(hsad_variant_set_select(set, sizes[i], 0, &ch, &cached));
    cr_assert_not(cached, "wg %u: cached before its first select", sizes[i]);
    cr_assert_eq(ch.index, 0);
    TH_OK(hsad_variant_set_stats(set, &st));
    cr_assert_eq(st.cached_keys, (uint32_t)i + 1, "after wg %u: cached keys %u", sizes[i],
                 st.cached_keys);
    cr_assert_eq(st.rule_runs, (uint64_t)i + 1);
  }
  hsad_variant_set_destroy(set);
  hsad_program_destroy(pf);
  TH_OK(hsad_runtime_close(e.rt));
}
