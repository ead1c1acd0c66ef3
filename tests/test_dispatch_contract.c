/* test_dispatch_contract.c - the submit contract of hsad_queue.h, one test per step that a
 * deliberate bug of tests/mutation/ breaks (`make mutation`). Expected values come from the
 * documented rules and from the test's own inputs: kernarg block = first block + (id % size) x
 * kernarg_block_size with the block size set here, the kernel's explicit argument bytes at
 * their OpenCL offsets, results computed here, the doorbell value = the last packet id. */
#include <hsa/amd_hsa_queue.h>
#include <hsa/amd_hsa_signal.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/test_dispatch_util.h"
#include "tests/test_dispatch_exact.h"

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

/* The value in the queue's doorbell: what the packet processor was last told to run up to. */
static uint64_t doorbell_value(hsad_queue_t *q) {
  const amd_signal_t *s = (const amd_signal_t *)(uintptr_t)hsad_queue_hsa(q)->doorbell_signal.handle;
  cr_assert_eq(s->kind, AMD_SIGNAL_KIND_DOORBELL, "doorbell signal kind %lld", (long long)s->kind);
  return __atomic_load_n(s->hardware_doorbell_ptr, __ATOMIC_ACQUIRE);
}

static const amd_queue_t *amdq(hsad_queue_t *q) { return (const amd_queue_t *)hsad_queue_hsa(q); }

/* Step 4: packet id's kernarg block is block (id % size), blocks kernarg_block_size apart, and
 * holds that packet's own arguments. 70 fills (wrapping a 64-slot ring with 320-byte blocks: fill's v5 segment is 272 bytes),
 * each waited on, each with its own destination and value: fill's explicit arguments are
 * dst @0 (8 bytes), value @8, n @12 (OpenCL layout). */
Test(contract, kernarg_block_of_each_slot, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *k;
  hsad_program_t *p = th_load(&e, "fill", 5, "fill", &k);
  hsad_queue_t *q;
  TH_OK(hsad_queue_create(e.dev, &(hsad_queue_options_t){.size = 64, .kernarg_block_size = 320},
                          &q));
  enum { FILLS = 70, W = 8 };
  uint32_t *buf = th_alloc(&e, FILLS * W * 4);
  uint64_t block0 = 0;
  for (uint32_t i = 0; i < FILLS; i++) {
    uint32_t v = 0x5000 + i, n = W;
    hsad_karg_t fa[3] = {HSAD_KARG_PTR(buf + i * W), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
    hsad_launch_t l = {.dims = 1, .grid = {W}, .block = {W}, .args = fa, .arg_count = 3};
    uint64_t id = th_run(q, k, &l, TH_SEC, 10 * TH_SEC);
    cr_assert_eq(id, i);
    const uint8_t *ka = th_packet(q, id)->kernarg_address;
    if (i == 0) block0 = (uint64_t)(uintptr_t)ka;
    cr_assert_eq(block0 % 64, 0, "kernarg blocks are 64-byte aligned (0x%llx)",
                 (unsigned long long)block0);
    cr_assert_eq((uint64_t)(uintptr_t)ka, block0 + (id % 64) * 320,
                 "packet %llu: kernarg 0x%llx, want first block 0x%llx + %llu x 320",
                 (unsigned long long)id, (unsigned long long)(uintptr_t)ka,
                 (unsigned long long)block0, (unsigned long long)(id % 64));
    cr_assert_eq(get64(ka, 0), (uint64_t)(uintptr_t)(buf + i * W), "packet %u dst", i);
    cr_assert_eq(get32(ka, 8), 0x5000 + i, "packet %u value", i);
    cr_assert_eq(get32(ka, 12), W, "packet %u n", i);
    for (uint32_t j = 0; j < W; j++)
      cr_assert_eq(buf[i * W + j], 0x5000 + i, "fill %u element %u = %#x", i, j, buf[i * W + j]);
  }
  hsad_buffer_free(buf);
  th_finish(&e, q, p);
}

/* Step 2: the per-thread launch cache never reuses a launch whose by-value arguments changed
 * (saxpy's float a and uint n, 4 bytes each), results against a reference computed here. */
Test(contract, cache_sees_changed_scalars, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "saxpy", 5, "saxpy", &k, &q);
  enum { N = 256 };
  float *x = th_alloc(&e, N * 4), *y = th_alloc(&e, N * 4), want[N];
  for (uint32_t i = 0; i < N; i++) {
    x[i] = (float)i;
    y[i] = want[i] = 1.0f;
  }
  float a = 2.0f;
  uint32_t n = N;
  hsad_karg_t args[4] = {HSAD_KARG_VAL(a), HSAD_KARG_PTR(x), HSAD_KARG_PTR(y), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {N}, .block = {64}, .args = args, .arg_count = 4};
  const float as[3] = {2.0f, 3.0f, 3.0f};
  const uint32_t ns[3] = {N, N, N / 2};
  for (int r = 0; r < 3; r++) {
    a = as[r];
    n = ns[r];
    th_run(q, k, &l, TH_SEC, 10 * TH_SEC);
    for (uint32_t i = 0; i < ns[r]; i++) want[i] = as[r] * (float)i + want[i];
    for (uint32_t i = 0; i < N; i++)
      cr_assert_eq(y[i], want[i], "round %d (a %g, n %u): y[%u] = %g, want %g", r, (double)a, n,
                   i, (double)y[i], (double)want[i]);
  }
  hsad_buffer_free(x);
  hsad_buffer_free(y);
  th_finish(&e, q, p);
}

/* Step 2: the cache key includes the kernel: fill of the v4 code object after fill of the v5
 * one, same geometry and arguments, runs the v4 kernel (its kernel_object in the packet). */
Test(contract, cache_sees_changed_kernel, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k5, *k4;
  hsad_queue_t *q;
  hsad_program_t *p5 = th_start(&e, "fill", 5, "fill", &k5, &q);
  hsad_program_t *p4 = th_load(&e, "fill", 4, "fill", &k4);
  uint64_t ko5 = hsad_device_kernel_desc(k5)->kernel_object;
  uint64_t ko4 = hsad_device_kernel_desc(k4)->kernel_object;
  cr_assert_neq(ko4, ko5);
  uint32_t *buf = th_alloc(&e, 64), v = 11, n = 16;
  hsad_karg_t fa[3] = {HSAD_KARG_PTR(buf), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {16}, .block = {16}, .args = fa, .arg_count = 3};
  uint64_t id = th_run(q, k5, &l, TH_SEC, 10 * TH_SEC);
  cr_assert_eq(th_packet(q, id)->kernel_object, ko5);
  id = th_run(q, k4, &l, TH_SEC, 10 * TH_SEC);
  cr_assert_eq(th_packet(q, id)->kernel_object, ko4, "packet %llu ran kernel object 0x%llx, "
               "want the v4 fill 0x%llx", (unsigned long long)id,
               (unsigned long long)th_packet(q, id)->kernel_object, (unsigned long long)ko4);
  for (uint32_t i = 0; i < 16; i++) cr_assert_eq(buf[i], 11);
  hsad_buffer_free(buf);
  hsad_program_destroy(p4);
  th_finish(&e, q, p5);
}

/* Step 7: the doorbell holds the last packet id after a single dispatch, a batch of 10
 * (ids 1..10: 10, not its first id 1) and a barrier; each packet ran. */
Test(contract, doorbell_is_last_id, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "order_record", 5, "order_record", &k, &q);
  uint32_t *counter = th_alloc(&e, 4), *slots = th_alloc(&e, 11 * 4);
  uint32_t idx[11];
  hsad_karg_t args[11][3];
  hsad_dispatch_desc_t items[11];
  for (uint32_t i = 0; i < 11; i++) {
    idx[i] = i;
    args[i][0] = HSAD_KARG_PTR(counter);
    args[i][1] = HSAD_KARG_PTR(slots);
    args[i][2] = HSAD_KARG_VAL(idx[i]);
    items[i] = (hsad_dispatch_desc_t){k, {.dims = 1, .grid = {1}, .block = {1},
                                          .args = args[i], .arg_count = 3}};
  }
  uint64_t id;
  TH_OK(hsad_kernel_dispatch(q, k, &items[0].launch, th_in(TH_SEC), NULL, &id));
  cr_assert_eq(id, 0);
  cr_assert_eq(doorbell_value(q), 0);
  uint64_t first;
  hsad_completion_t c;
  TH_OK(hsad_queue_dispatch_batch(q, items + 1, 10, th_in(TH_SEC), &c, &first));
  cr_assert_eq(first, 1);
  cr_assert_eq(c.packet_id, 10);
  cr_assert_eq(doorbell_value(q), 10, "doorbell %llu after a batch of ids 1..10",
               (unsigned long long)doorbell_value(q));
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  for (uint32_t i = 0; i < 11; i++) cr_assert_eq(slots[i], i, "slot %u ticket %u", i, slots[i]);
  /* a fire-and-forget batch of 3 (ids 11..13) */
  for (uint32_t i = 0; i < 3; i++) idx[i] = i;
  TH_OK(hsad_queue_dispatch_batch(q, items, 3, th_in(TH_SEC), NULL, &first));
  cr_assert_eq(first, 11);
  cr_assert_eq(doorbell_value(q), 13);
  TH_OK(hsad_queue_barrier(q, NULL, 0, th_in(TH_SEC), &c));
  cr_assert_eq(c.packet_id, 14);
  cr_assert_eq(doorbell_value(q), 14);
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  for (uint32_t i = 0; i < 3; i++) cr_assert_eq(slots[i], 11 + i, "slot %u ticket %u", i, slots[i]);
  cr_assert_eq(*counter, 14);
  hsad_buffer_free(counter);
  hsad_buffer_free(slots);
  th_finish(&e, q, p);
}

/* Step 8: a completion is reached only after its packet completed: a 200 ms fill's values are
 * there when the wait returns (epoch 1 of a fresh queue, then epoch 2). */
Test(contract, completion_after_the_work, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "200000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "fill", 1);
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "fill", 5, "fill", &k, &q);
  uint32_t *buf = th_alloc(&e, 2 * 32 * 4), n = 32;
  for (uint32_t r = 0; r < 2; r++) {
    uint32_t v = 0xA000 + r;
    hsad_karg_t fa[3] = {HSAD_KARG_PTR(buf + 32 * r), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
    hsad_launch_t l = {.dims = 1, .grid = {32}, .block = {32}, .args = fa, .arg_count = 3};
    hsad_completion_t c;
    TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), &c, NULL));
    cr_assert_eq(c.epoch, r + 1);
    TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
    for (uint32_t i = 0; i < 32; i++)
      cr_assert_eq(buf[32 * r + i], 0xA000 + r, "round %u: buf[%u] = %#x when the wait returned",
                   r, i, buf[32 * r + i]);
  }
  hsad_buffer_free(buf);
  th_finish(&e, q, p);
}

/* Step 8: a NO_BARRIER dispatch with a completion is followed by a barrier-AND carrying the
 * epoch (BARRIER bit set), so its completion covers the NO_BARRIER dispatch before it, which
 * kfd-emu runs after it (consecutive dispatches without the BARRIER bit run last-first). */
Test(contract, no_barrier_completion_gets_barrier_and, .timeout = 60) {
  setenv("KFD_EMU_CP_STALL_MS", "300", 1);
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "fill", 5, "fill", &k, &q);
  uint32_t *a = th_alloc(&e, 64), *b = th_alloc(&e, 64), va = 0xAA, vb = 0xBB, n = 16;
  hsad_karg_t fa[3] = {HSAD_KARG_PTR(a), HSAD_KARG_VAL(va), HSAD_KARG_VAL(n)};
  hsad_karg_t fb[3] = {HSAD_KARG_PTR(b), HSAD_KARG_VAL(vb), HSAD_KARG_VAL(n)};
  hsad_launch_t la = {.dims = 1, .grid = {16}, .block = {16}, .args = fa, .arg_count = 3,
                      .flags = HSAD_LAUNCH_NO_BARRIER};
  hsad_launch_t lb = la;
  lb.args = fb;
  uint64_t ida, idb;
  hsad_completion_t c;
  TH_OK(hsad_kernel_dispatch(q, k, &la, th_in(TH_SEC), NULL, &ida));
  TH_OK(hsad_kernel_dispatch(q, k, &lb, th_in(TH_SEC), &c, &idb));
  /* KFD_EMU_CP_STALL_MS holds the CP 300 ms after it saw a valid header: the published words
   * are read before it ran them. Dispatches: type 2, no BARRIER bit, system fences (0x1402),
   * 1 dimension; barrier-AND: type 3 with the BARRIER bit (0x1503), setup 0. */
  const uint32_t *words = (const uint32_t *)hsad_queue_hsa(q)->base_address;
  cr_assert_eq(__atomic_load_n(&words[16 * 1], __ATOMIC_ACQUIRE), 0x00011402u, "packet 1 %#x",
               words[16]);
  cr_assert_eq(__atomic_load_n(&words[16 * 2], __ATOMIC_ACQUIRE), 0x00001503u, "packet 2 %#x",
               words[32]);
  cr_assert_eq(ida, 0);
  cr_assert_eq(idb, 1);
  cr_assert_eq(c.packet_id, 1);
  cr_assert_eq(amdq(q)->write_dispatch_id, 3, "dispatch, dispatch, barrier-AND");
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  for (uint32_t i = 0; i < 16; i++) {
    cr_assert_eq(a[i], 0xAA, "a[%u] = %#x: the completion came before the earlier dispatch", i,
                 a[i]);
    cr_assert_eq(b[i], 0xBB);
  }
  /* packet 2: barrier-AND with no dep_signal and the epoch signal as completion signal */
  const uint8_t *s2 = (const uint8_t *)th_packet(q, 2);
  const uint8_t *s1 = (const uint8_t *)th_packet(q, 1);
  hsa_signal_t epoch;
  hsa_signal_value_t lt;
  TH_OK(hsad_completion_signal(&c, &epoch, &lt));
  for (uint32_t o = 8; o < 48; o += 8) cr_assert_eq(get64(s2, o), 0, "dep_signal @%u", o);
  cr_assert_eq(get64(s2, 56), epoch.handle, "the barrier-AND carries the epoch signal");
  cr_assert_eq(get64(s1, 56), 0, "the NO_BARRIER dispatch carries no completion signal");
  hsad_buffer_free(a);
  hsad_buffer_free(b);
  th_finish(&e, q, p);
}

/* Step 10: a queue fault releases device-side waiters: queue B's barrier on a completion of
 * queue A, submitted before A faulted, completes (B goes on), and A's error is sticky with its
 * full message. */
Test(contract, fault_releases_cross_queue_waiters, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "200000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "fill", 1);
  setenv("KFD_EMU_FAULT_KERNEL", "count_dispatch", 1);
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *kf, *kc;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &kf);
  hsad_program_t *pc = th_load(&e, "count_dispatch", 5, "count_dispatch", &kc);
  hsad_queue_t *qa = th_queue(&e, 64), *qb = th_queue(&e, 64);
  uint32_t *buf = th_alloc(&e, 64), *counter = th_alloc(&e, 4), v = 3, n = 16, one = 1;
  hsad_karg_t fa[3] = {HSAD_KARG_PTR(buf), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
  hsad_karg_t ca[2] = {HSAD_KARG_PTR(counter), HSAD_KARG_VAL(one)};
  hsad_launch_t lf = {.dims = 1, .grid = {16}, .block = {16}, .args = fa, .arg_count = 3};
  hsad_launch_t lc = {.dims = 1, .grid = {1}, .block = {1}, .args = ca, .arg_count = 2};
  hsad_completion_t cfault, cb;
  TH_OK(hsad_kernel_dispatch(qa, kf, &lf, th_in(TH_SEC), NULL, NULL)); /* 200 ms */
  TH_OK(hsad_kernel_dispatch(qa, kc, &lc, th_in(TH_SEC), &cfault, NULL)); /* faults */
  TH_OK(hsad_queue_barrier(qb, &cfault, 1, th_in(TH_SEC), &cb));
  TH_OK(hsad_completion_wait(&cb, th_in(10 * TH_SEC)));
  char want[512];
  snprintf(want, sizeof want, "queue %llu on device 0 (%s) faulted: HSA status 0x29 "
           "(HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory "
           "beyond the largest legal address.); destroy it and create a new queue",
           (unsigned long long)hsad_queue_hsa(qa)->id, hsad_device_info(e.dev)->isa_name);
  TH_ERR_IS(hsad_completion_wait(&cfault, th_in(10 * TH_SEC)), HSAD_ERR_QUEUE_ERROR, "%s", want);
  /* step 1: every submit path refuses a faulted queue, nothing reserved */
  uint64_t w = amdq(qa)->write_dispatch_id;
  /* the thread's launch-cache entry is the faulting launch's: a hit, refused by the queue's hot
   * key (0 once faulted) */
  TH_ERR_IS(hsad_kernel_dispatch(qa, kc, &lc, th_in(TH_SEC), NULL, NULL), HSAD_ERR_QUEUE_ERROR,
            "%s", want);
  TH_ERR_IS(hsad_kernel_dispatch(qa, kf, &lf, th_in(TH_SEC), NULL, NULL), HSAD_ERR_QUEUE_ERROR,
            "%s", want);
  hsad_dispatch_desc_t item = {kf, lf};
  TH_ERR_IS(hsad_queue_dispatch_batch(qa, &item, 1, th_in(TH_SEC), NULL, NULL),
            HSAD_ERR_QUEUE_ERROR, "%s", want);
  TH_ERR_IS(hsad_queue_barrier(qa, NULL, 0, th_in(TH_SEC), &cb), HSAD_ERR_QUEUE_ERROR, "%s", want);
  cr_assert_eq(amdq(qa)->write_dispatch_id, w);
  for (uint32_t i = 0; i < 16; i++) cr_assert_eq(buf[i], 3);
  /* queue B goes on */
  th_run(qb, kf, &lf, TH_SEC, 10 * TH_SEC);
  unsetenv("KFD_EMU_FAULT_KERNEL");
  hsad_buffer_free(buf);
  hsad_buffer_free(counter);
  hsad_queue_destroy(qa);
  hsad_queue_destroy(qb);
  hsad_program_destroy(pf);
  hsad_program_destroy(pc);
  TH_OK(hsad_runtime_close(e.rt));
}


/* Steps 5-6: a packet's body is complete when its header becomes valid. A packet processor may
 * read a packet as soon as its header is valid (another producer's doorbell can cover it), so
 * no byte of it may be written after. KFD_EMU_RING_WATCH makes kfd-emu check every store into
 * the ring (a body byte written while the header is valid is a queue error). Single
 * dispatches with and without a completion, prepared dispatches, a batch and a barrier, each
 * dispatch adding its own value: the sum is exact; then a cross-queue barrier (barrier-value
 * packet) and a barrier on 7 raw signals with a decrement (barrier-AND packets). */
Test(contract, bodies_complete_when_headers_valid, .timeout = 120) {
  setenv("KFD_EMU_RING_WATCH", "1", 1);
  /* kernels as their twins: POCL's LLVM (source mode) installs its own SIGSEGV and SIGTRAP
   * handlers when it compiles (RemoveFileOnSignal), and a ring store faulting while they are
   * swapped crashed the watch's process (1 run in ~130: kfd-emu's CP thread in retire()) */
  setenv("KFD_EMU_KERNEL_MODE", "twin", 1);
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "count_dispatch", 5, "count_dispatch", &k, &q);
  uint32_t *counter = th_alloc(&e, 4), value = 0;
  hsad_karg_t args[2] = {HSAD_KARG_PTR(counter), HSAD_KARG_VAL(value)};
  hsad_launch_t l = {.dims = 1, .grid = {1}, .block = {1}, .args = args, .arg_count = 2};
  uint32_t sum = 0;
  hsad_completion_t c;
  for (uint32_t i = 0; i < 100; i++) { /* wraps the 64-slot ring */
    value = i + 1;
    sum += value;
    l.grid[0] = 1 + i % 5;
    TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(10 * TH_SEC), i % 2 ? &c : NULL, NULL));
    if (i % 2) TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  }
  value = 1000;
  hsad_prepared_launch_t *pl;
  TH_OK(hsad_launch_prepare(q, k, &l, &pl));
  for (uint32_t i = 0; i < 5; i++) {
    TH_OK(hsad_prepared_dispatch(pl, th_in(10 * TH_SEC), i == 4 ? &c : NULL, NULL));
    sum += 1000;
  }
  hsad_launch_destroy(pl);
  uint32_t vals[4] = {7, 70, 700, 7000};
  hsad_karg_t bargs[4][2];
  hsad_dispatch_desc_t items[4];
  for (uint32_t i = 0; i < 4; i++) {
    bargs[i][0] = HSAD_KARG_PTR(counter);
    bargs[i][1] = HSAD_KARG_VAL(vals[i]);
    items[i] = (hsad_dispatch_desc_t){k, {.dims = 1, .grid = {1}, .block = {1},
                                          .args = bargs[i], .arg_count = 2}};
    sum += vals[i];
  }
  TH_OK(hsad_queue_dispatch_batch(q, items, 4, th_in(10 * TH_SEC), &c, NULL));
  TH_OK(hsad_queue_barrier(q, &c, 1, th_in(10 * TH_SEC), &c));
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  /* a barrier on another queue's completion (one barrier-value packet), then one on 7 raw
   * HSA signals and a decrement (two barrier-AND packets of 5 dep_signals, an epoch packet) */
  hsad_queue_t *q2 = th_queue(&e, 64);
  hsad_completion_t c2;
  value = 30000;
  TH_OK(hsad_kernel_dispatch(q2, k, &l, th_in(10 * TH_SEC), &c2, NULL));
  sum += 30000;
  TH_OK(hsad_queue_barrier(q, &c2, 1, th_in(10 * TH_SEC), &c));
  th_sig_api_t sa = th_sig_api();
  hsa_signal_t sigs[7], dec;
  for (int i = 0; i < 7; i++) cr_assert_eq(sa.create(0, 0, NULL, &sigs[i]), HSA_STATUS_SUCCESS);
  cr_assert_eq(sa.create(1, 0, NULL, &dec), HSA_STATUS_SUCCESS);
  TH_OK(hsad_queue_barrier_signals(q, &c, 1, sigs, 7, dec, th_in(10 * TH_SEC), &c));
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(10 * TH_SEC), &c, NULL));
  sum += 30000;
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  TH_OK(hsad_queue_error(q));
  TH_OK(hsad_queue_error(q2));
  cr_assert_eq(*counter, sum, "counter %u, want %u", *counter, sum);
  cr_assert_eq(__atomic_load_n(&((amd_signal_t *)(uintptr_t)dec.handle)->value, __ATOMIC_ACQUIRE),
               0, "the decrement signal was decremented once");
  for (int i = 0; i < 7; i++) sa.destroy(sigs[i]);
  sa.destroy(dec);
  hsad_queue_destroy(q2);
  hsad_buffer_free(counter);
  th_finish(&e, q, p);
}

/* Steps 3-7 under contention: 4 threads x 2,000 order_record dispatches into one 64-slot queue,
 * each packet with its own slot index (producer x 2000 + i). Every packet ran exactly once
 * (the tickets are exactly 0..7999) and each producer's packets ran in its submission order
 * (BARRIER bit: its tickets increase). */
typedef struct ticket_producer {
  hsad_queue_t *q;
  const hsad_device_kernel_t *k;
  uint32_t *counter, *slots, first;
  hsad_status_t status;
  char msg[256];
} ticket_producer_t;

static void *ticket_produce(void *arg) {
  ticket_producer_t *p = arg;
  for (uint32_t i = 0; i < 2000; i++) {
    uint32_t index = p->first + i;
    hsad_karg_t a[3] = {HSAD_KARG_PTR(p->counter), HSAD_KARG_PTR(p->slots),
                        HSAD_KARG_VAL(index)};
    hsad_launch_t l = {.dims = 1, .grid = {1}, .block = {1}, .args = a, .arg_count = 3};
    p->status = hsad_kernel_dispatch(p->q, p->k, &l, th_in(60 * TH_SEC), NULL, NULL);
    if (p->status) {
      snprintf(p->msg, sizeof p->msg, "dispatch %u: %s", i, hsad_last_error());
      break;
    }
  }
  return NULL;
}

Test(contract, producers_tickets_exact, .timeout = 240) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "order_record", 5, "order_record", &k, &q);
  enum { T = 4, PER = 2000, N = T * PER };
  uint32_t *counter = th_alloc(&e, 4), *slots = th_alloc(&e, N * 4);
  memset(slots, 0xff, N * 4);
  ticket_producer_t tp[T];
  pthread_t th[T];
  for (uint32_t t = 0; t < T; t++) {
    tp[t] = (ticket_producer_t){.q = q, .k = k, .counter = counter, .slots = slots,
                                .first = t * PER};
    cr_assert_eq(pthread_create(&th[t], NULL, ticket_produce, &tp[t]), 0);
  }
  for (uint32_t t = 0; t < T; t++) pthread_join(th[t], NULL);
  for (uint32_t t = 0; t < T; t++) cr_assert_eq(tp[t].status, HSAD_OK, "producer %u: %s", t, tp[t].msg);
  TH_OK(hsad_queue_wait_idle(q, th_in(60 * TH_SEC)));
  cr_assert_eq(*counter, N);
  static uint8_t seen[N];
  memset(seen, 0, sizeof seen);
  for (uint32_t t = 0; t < T; t++)
    for (uint32_t i = 0; i < PER; i++) {
      uint32_t v = slots[t * PER + i];
      cr_assert_lt(v, N, "producer %u packet %u: ticket %u", t, i, v);
      cr_assert_eq(seen[v], 0, "ticket %u twice", v);
      seen[v] = 1;
      if (i) cr_assert_gt(v, slots[t * PER + i - 1], "producer %u packet %u ran before %u", t, i,
                          i - 1);
    }
  hsad_buffer_free(counter);
  hsad_buffer_free(slots);
  th_finish(&e, q, p);
}
