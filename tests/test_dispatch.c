/* test_dispatch.c - hsa-dispatch on kfd-emu: devices, packets byte by byte, kernargs, results,
 * batches, barriers, profiling, and every bad-input row with its own code and message. */
#include <hsa/amd_hsa_queue.h>
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "tests/test_dispatch_util.h"

/* ---- little-endian expected bytes, written independently of the hsa.h structs ---------- */
static void put16(uint8_t *b, uint32_t off, uint16_t v) { b[off] = v & 0xff; b[off + 1] = v >> 8; }
static void put32(uint8_t *b, uint32_t off, uint32_t v) {
  for (int i = 0; i < 4; i++) b[off + i] = (v >> (8 * i)) & 0xff;
}
static void put64(uint8_t *b, uint32_t off, uint64_t v) {
  for (int i = 0; i < 8; i++) b[off + i] = (v >> (8 * i)) & 0xff;
}

static void expect_packet(uint8_t out[64], uint16_t header, uint16_t dims, const uint16_t wg[3],
                          const uint32_t grid[3], uint32_t priv, uint32_t group, uint64_t ko,
                          uint64_t ka, uint64_t sig) {
  memset(out, 0, 64);
  put16(out, 0, header);
  put16(out, 2, dims);
  for (int i = 0; i < 3; i++) put16(out, 4 + 2 * i, wg[i]);
  for (int i = 0; i < 3; i++) put32(out, 12 + 4 * i, grid[i]);
  put32(out, 24, priv);
  put32(out, 28, group);
  put64(out, 32, ko);
  put64(out, 40, ka);
  put64(out, 56, sig);
}

static void dump_diff(const uint8_t *got, const uint8_t *want, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (got[i] != want[i]) cr_log_error("byte %zu: got 0x%02x want 0x%02x", i, got[i], want[i]);
}

/* The pure emitter: exact bytes for 1, 2 and 3 dimensions. */
Test(dispatch_packet, emitter_bytes_1d_2d_3d, .timeout = 60) {
  struct { uint16_t dims; uint16_t wg[3]; uint32_t grid[3]; } rows[] = {
      {1, {256, 1, 1}, {1000, 1, 1}},
      {2, {16, 8, 1}, {33, 17, 1}},
      {3, {4, 4, 2}, {9, 8, 7}},
  };
  for (size_t r = 0; r < 3; r++) {
    _Alignas(64) uint8_t slot[64];
    memset(slot, 0xAB, sizeof slot);
    put16(slot, 0, HSA_PACKET_TYPE_INVALID);
    hsad_aql_dispatch_t d = {.dims = rows[r].dims, .private_segment_size = 48,
                             .group_segment_size = 1024, .kernel_object = 0x7f0011223340ull,
                             .kernarg_address = (void *)0x7f0055667780ull,
                             .completion_signal = 0x7f00998877c0ull};
    memcpy(d.workgroup_size, rows[r].wg, sizeof d.workgroup_size);
    memcpy(d.grid_size, rows[r].grid, sizeof d.grid_size);
    uint16_t h = HSAD_AQL_HEADER(HSA_PACKET_TYPE_KERNEL_DISPATCH, 1, HSA_FENCE_SCOPE_SYSTEM,
                                 HSA_FENCE_SCOPE_SYSTEM);
    cr_assert_eq(h, 0x1502, "header 0x%x", h); /* type 2, barrier 1 << 8, system scope 2 << 9 | 2 << 11 */
    uint32_t word = hsad_aql_dispatch_fill((hsa_kernel_dispatch_packet_t *)slot, &d, h);
    /* the body is written with the header still INVALID */
    cr_assert_eq(slot[0] | slot[1] << 8, HSA_PACKET_TYPE_INVALID);
    cr_assert_eq(word, 0x1502u | (uint32_t)rows[r].dims << 16);
    hsad_aql_publish(slot, word);
    uint8_t want[64];
    expect_packet(want, h, rows[r].dims, rows[r].wg, rows[r].grid, 48, 1024, 0x7f0011223340ull,
                  0x7f0055667780ull, 0x7f00998877c0ull);
    dump_diff(slot, want, 64);
    cr_assert_arr_eq(slot, want, 64, "row %zu", r);
  }
}

/* The real ring: packets of 1D/2D/3D dispatches as the CP saw them. The CP writes the header
 * back to INVALID when done; the setup word and body stay, so bytes 2..63 are compared exactly
 * and the header must read INVALID. Expected kernarg_address: the first packet's block + (id %
 * 64) x 512 (the default kernarg_block_size, hsad_queue.h); expected completion_signal: the
 * epoch signal hsad_completion_signal returns for the packet's completion, 0 without one. */
Test(dispatch_packet, ring_bytes_1d_2d_3d, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "count_dispatch", 5, "count_dispatch", &k, &q);
  uint32_t *counter = th_alloc(&e, 4);
  uint32_t one = 1;
  hsad_karg_t args[2] = {HSAD_KARG_PTR(counter), HSAD_KARG_VAL(one)};
  struct { uint32_t dims, grid[3], block[3]; } rows[] = {
      {1, {1000, 0, 0}, {256, 0, 0}}, {2, {33, 17, 1}, {16, 8, 1}}, {3, {9, 8, 7}, {4, 4, 2}}};
  uint64_t block0 = 0;
  for (uint32_t r = 0; r < 3; r++) {
    hsad_launch_t l = {.dims = rows[r].dims, .args = args, .arg_count = 2};
    memcpy(l.grid, rows[r].grid, sizeof l.grid);
    memcpy(l.block, rows[r].block, sizeof l.block);
    hsad_completion_t c;
    uint64_t id;
    TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), &c, &id));
    cr_assert_eq(id, r);
    TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
    const uint8_t *slot = (const uint8_t *)th_packet(q, id);
    if (r == 0) {
      memcpy(&block0, slot + 40, 8); /* observed once: the ring's first kernarg block */
      cr_assert_neq(block0, 0);
      cr_assert_eq(block0 % 64, 0, "kernarg block 0x%llx is 64-byte aligned",
                   (unsigned long long)block0);
    }
    hsa_signal_t sig;
    hsa_signal_value_t lt;
    TH_OK(hsad_completion_signal(&c, &sig, &lt));
    cr_assert_neq(sig.handle, 0);
    uint16_t wg[3];
    uint32_t grid[3];
    for (int i = 0; i < 3; i++) {
      wg[i] = (uint16_t)(i < (int)rows[r].dims ? rows[r].block[i] : 1);
      grid[i] = i < (int)rows[r].dims ? rows[r].grid[i] : 1;
    }
    uint8_t want[64];
    expect_packet(want, HSA_PACKET_TYPE_INVALID, (uint16_t)rows[r].dims, wg, grid, 0, 0,
                  hsad_device_kernel_desc(k)->kernel_object, block0 + (id % 64) * 512,
                  sig.handle);
    dump_diff(slot, want, 64);
    cr_assert_arr_eq(slot, want, 64, "row %u", r);
  }
  cr_assert_eq(*counter, 3);
  /* fire-and-forget packets carry no completion signal */
  hsad_launch_t l = {.dims = 1, .grid = {1}, .block = {1}, .args = args, .arg_count = 2};
  uint64_t id;
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), NULL, &id));
  TH_OK(hsad_queue_wait_idle(q, th_in(10 * TH_SEC)));
  cr_assert_eq(id, 3);
  uint8_t want[64];
  expect_packet(want, HSA_PACKET_TYPE_INVALID, 1, (const uint16_t[3]){1, 1, 1},
                (const uint32_t[3]){1, 1, 1}, 0, 0, hsad_device_kernel_desc(k)->kernel_object,
                block0 + 3 * 512, 0);
  dump_diff((const uint8_t *)th_packet(q, id), want, 64);
  cr_assert_arr_eq((const uint8_t *)th_packet(q, id), want, 64, "fire-and-forget packet");
  cr_assert_eq(*counter, 4);
  hsad_buffer_free(counter);
  th_finish(&e, q, p);
}

/* The published header word in the ring, seen before the CP runs: KFD_EMU_CP_STALL_MS delays
 * the CP after it saw a valid header. */
Test(dispatch_packet, published_header_word, .timeout = 60) {
  setenv("KFD_EMU_CP_STALL_MS", "300", 1);
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "empty", 5, "empty", &k, &q);
  hsad_launch_t l = {.dims = 2, .grid = {8, 4}, .block = {8, 2}};
  uint64_t id;
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), NULL, &id));
  hsad_launch_t l2 = {.dims = 1, .grid = {64}, .block = {64}, .flags = HSAD_LAUNCH_NO_BARRIER |
                      HSAD_LAUNCH_FENCE_AGENT};
  TH_OK(hsad_kernel_dispatch(q, k, &l2, th_in(TH_SEC), NULL, NULL));
  const uint32_t *w = (const uint32_t *)hsad_queue_hsa(q)->base_address;
  uint32_t w0 = __atomic_load_n(&w[(id % 64) * 16], __ATOMIC_ACQUIRE);
  uint32_t w1 = __atomic_load_n(&w[((id + 1) % 64) * 16], __ATOMIC_ACQUIRE);
  cr_assert_eq(w0, 0x00021502u, "packet 0: header|setup 0x%08x", w0);
  /* no barrier bit, agent-scope fences (1 << 9 | 1 << 11), 1 dimension */
  cr_assert_eq(w1, 0x00010a02u, "packet 1: header|setup 0x%08x", w1);
  TH_OK(hsad_queue_wait_idle(q, th_in(20 * TH_SEC)));
  th_finish(&e, q, p);
}

/* ---- kernarg bytes -------------------------------------------------------------------- */

/* saxpy(float a, const float *x, float *y, uint n) at grid 1000, workgroup 192: the whole
 * kernarg segment, hard-coded from the code objects' notes (`llvm-readelf-15 --notes
 * build/kernels/saxpy-gfx90a-v{4,5}.hsaco`), never from the library's metadata parse.
 *   both: a by_value @0 (4), x global_buffer @8 (8), y global_buffer @16 (8), n by_value @24 (4)
 *   v5 (.kernarg_segment_size 288): hidden_block_count_x/y/z @32/36/40 (u32), hidden_group_size
 *     x/y/z @44/46/48 (u16), hidden_remainder_x/y/z @50/52/54 (u16), hidden_global_offset_x/y/z
 *     @72/80/88 (u64), hidden_grid_dims @96 (u16); bytes 56..71 and 98..287 are not declared
 *   v4 (.kernarg_segment_size 88): hidden_global_offset_x/y/z @32/40/48 (u64), hidden_none @56,
 *     64, 72, 80 (8 each)
 * Values: block count = grid / workgroup (whole workgroups: 1000 / 192 = 5), remainder = grid %
 * workgroup (the partial one: 40), as CLR writes them (rocvirtual.cpp) and as device-libs'
 * __ockl_get_local_size reads them; global offsets 0; every undeclared byte zero. */
static uint32_t saxpy_kernarg_image(int ver, float a, const float *x, const float *y, uint32_t n,
                                    uint8_t out[512]) {
  memset(out, 0, 512);
  memcpy(out + 0, &a, 4);
  put64(out, 8, (uint64_t)(uintptr_t)x);
  put64(out, 16, (uint64_t)(uintptr_t)y);
  put32(out, 24, n);
  if (ver == 4) return 88; /* global offsets and hidden_none: all zero */
  put32(out, 32, 5);       /* hidden_block_count_x: 1000 / 192 */
  put32(out, 36, 1);       /* hidden_block_count_y */
  put32(out, 40, 1);       /* hidden_block_count_z */
  put16(out, 44, 192);     /* hidden_group_size_x */
  put16(out, 46, 1);       /* hidden_group_size_y */
  put16(out, 48, 1);       /* hidden_group_size_z */
  put16(out, 50, 40);      /* hidden_remainder_x: 1000 % 192 */
  put16(out, 52, 0);       /* hidden_remainder_y: 1 % 1 */
  put16(out, 54, 0);       /* hidden_remainder_z */
  put16(out, 96, 1);       /* hidden_grid_dims */
  return 288;
}

static void kernarg_case(int ver) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "saxpy", ver, "saxpy", &k, &q);
  uint32_t n = 1000;
  float a = 2.5f, *x = th_alloc(&e, n * 4), *y = th_alloc(&e, n * 4);
  hsad_karg_t args[4] = {HSAD_KARG_VAL(a), HSAD_KARG_PTR(x), HSAD_KARG_PTR(y), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {n}, .block = {192}, .args = args, .arg_count = 4};
  /* inputs, and the reference computed here: y = a x + y, exact in float for these values */
  float *want_y = malloc(n * sizeof *want_y);
  for (uint32_t i = 0; i < n; i++) {
    x[i] = (float)i;
    y[i] = 1.0f + (float)i;
    want_y[i] = 3.5f * (float)i + 1.0f;
  }
  uint64_t id = th_run(q, k, &l, TH_SEC, 10 * TH_SEC);
  const uint8_t *ka = th_packet(q, id)->kernarg_address;
  uint8_t want[512];
  uint32_t size = saxpy_kernarg_image(ver, a, x, y, n, want);
  cr_assert_eq(hsad_device_kernel_desc(k)->kernarg_segment_size, size,
               "v%d .kernarg_segment_size", ver);
  cr_assert_eq(want[0] | want[1] << 8 | want[2] << 16 | (uint32_t)want[3] << 24, 0x40200000u,
               "2.5f is 0x40200000");
  dump_diff(ka, want, size);
  cr_assert_arr_eq(ka, want, size, "v%d kernarg segment (%u bytes)", ver, size);
  for (uint32_t i = 0; i < n; i++)
    cr_assert_eq(y[i], want_y[i], "y[%u] = %g, want %g", i, (double)y[i], (double)want_y[i]);
  free(want_y);
  hsad_buffer_free(x);
  hsad_buffer_free(y);
  th_finish(&e, q, p);
}

Test(dispatch_kernarg, saxpy_v5_bytes, .timeout = 60) { kernarg_case(5); }
Test(dispatch_kernarg, saxpy_v4_bytes, .timeout = 60) { kernarg_case(4); }

/* ---- results -------------------------------------------------------------------------- */

Test(dispatch_result, vector_add_and_saxpy, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  for (int ver = 4; ver <= 5; ver++) {
    const hsad_device_kernel_t *kv, *ks;
    hsad_program_t *pv = th_load(&e, "vector_add", ver, "vector_add", &kv);
    hsad_program_t *ps = th_load(&e, "saxpy", ver, "saxpy", &ks);
    hsad_queue_t *q;
    TH_OK(hsad_device_queue(e.dev, &q));
    uint32_t n = 100003; /* a partial last workgroup */
    float *a = th_alloc(&e, n * 4), *b = th_alloc(&e, n * 4), *c = th_alloc(&e, n * 4);
    for (uint32_t i = 0; i < n; i++) {
      a[i] = (float)i * 0.5f;
      b[i] = (float)(n - i);
    }
    hsad_karg_t va[4] = {HSAD_KARG_PTR(a), HSAD_KARG_PTR(b), HSAD_KARG_PTR(c), HSAD_KARG_VAL(n)};
    hsad_launch_t l = {.dims = 1, .grid = {n}, .block = {256}, .args = va, .arg_count = 4};
    TH_OK(hsad_kernel_dispatch(q, kv, &l, th_in(TH_SEC), NULL, NULL));
    /* then c = 3 * a + c, ordered after the add by the barrier bit */
    float s = 3.0f;
    hsad_karg_t sa[4] = {HSAD_KARG_VAL(s), HSAD_KARG_PTR(a), HSAD_KARG_PTR(c), HSAD_KARG_VAL(n)};
    hsad_launch_t l2 = {.dims = 1, .grid = {n}, .block = {64}, .args = sa, .arg_count = 4};
    th_run(q, ks, &l2, TH_SEC, 20 * TH_SEC);
    for (uint32_t i = 0; i < n; i++) {
      float want = fmaf(3.0f, a[i], a[i] + b[i]);
      cr_assert_eq(c[i], want, "v%d c[%u] = %f, want %f", ver, i, c[i], want);
    }
    hsad_buffer_free(a);
    hsad_buffer_free(b);
    hsad_buffer_free(c);
    hsad_program_destroy(pv);
    hsad_program_destroy(ps);
  }
  TH_OK(hsad_runtime_close(e.rt));
}

/* count_dispatch(uint *counter, uint v) at grid 33x17, workgroup 16x8: the kernarg segment
 * from the code object's notes (`llvm-readelf-15 --notes build/kernels/count_dispatch-gfx90a-
 * v5.hsaco`: .kernarg_segment_size 272; counter @0, v @8; hidden_block_count_x/y/z @16/20/24,
 * hidden_group_size_x/y/z @28/30/32, hidden_remainder_x/y/z @34/36/38, hidden_global_offset_x/
 * y/z @56/64/72, hidden_grid_dims @80). Block counts are whole workgroups (33 / 16 = 2, 17 / 8
 * = 2), remainders the partial ones (33 % 16 = 1, 17 % 8 = 1). */
static void count_dispatch_2d_image(const uint32_t *counter, uint32_t v, uint8_t out[272]) {
  memset(out, 0, 272);
  put64(out, 0, (uint64_t)(uintptr_t)counter);
  put32(out, 8, v);
  put32(out, 16, 2);
  put32(out, 20, 2);
  put32(out, 24, 1);
  put16(out, 28, 16);
  put16(out, 30, 8);
  put16(out, 32, 1);
  put16(out, 34, 1);
  put16(out, 36, 1);
  put16(out, 38, 0);
  put16(out, 80, 2);
}

/* A prepared launch writes the same packet body as hsad_kernel_dispatch, both equal to the
 * values fixed here: setup 2 dimensions, workgroup 16x8x1, grid 33x17x1, no private or group
 * segment (notes: 0 and 0), completion signal 0 or hsad_completion_signal's. The dispatch's
 * kernarg address is its slot's block (first block + (id % 64) x 512); every packet of the
 * prepared launch points at the launch's resident segment instead (one address, outside the
 * ring, written once at prepare), and both segments hold the same bytes; the v5 hidden
 * arguments also satisfy kfd-emu's check against the packet. */
Test(dispatch_prepared, same_packet_and_kernarg_bytes_as_dispatch, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "count_dispatch", 5, "count_dispatch", &k, &q);
  uint32_t *counter = th_alloc(&e, 4);
  *counter = 0;
  uint32_t three = 3;
  hsad_karg_t args[2] = {HSAD_KARG_PTR(counter), HSAD_KARG_VAL(three)};
  hsad_launch_t l = {.dims = 2, .grid = {33, 17, 1}, .block = {16, 8, 1}, .args = args,
                     .arg_count = 2};
  hsad_prepared_launch_t *pl;
  TH_OK(hsad_launch_prepare(q, k, &l, &pl));
  uint64_t id0, id1;
  hsad_completion_t c;
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), NULL, &id0));
  TH_OK(hsad_prepared_dispatch(pl, th_in(TH_SEC), &c, &id1));
  cr_assert_eq(id0, 0);
  cr_assert_eq(id1, 1);
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  hsa_signal_t sig;
  hsa_signal_value_t lt;
  TH_OK(hsad_completion_signal(&c, &sig, &lt));
  const uint8_t *s0 = (const uint8_t *)th_packet(q, id0), *s1 = (const uint8_t *)th_packet(q, id1);
  uint64_t block0;
  memcpy(&block0, s0 + 40, 8); /* observed once: the ring's first kernarg block */
  cr_assert_eq(block0 % 64, 0);
  static const uint16_t wg[3] = {16, 8, 1};
  static const uint32_t grid[3] = {33, 17, 1};
  uint64_t ko = hsad_device_kernel_desc(k)->kernel_object;
  uint8_t want[64], kwant[272];
  /* the CP wrote each header back to INVALID when the packet was done */
  expect_packet(want, HSA_PACKET_TYPE_INVALID, 2, wg, grid, 0, 0, ko, block0, 0);
  dump_diff(s0, want, 64);
  cr_assert_arr_eq(s0, want, 64, "packet 0 (hsad_kernel_dispatch)");
  uint64_t resident;
  memcpy(&resident, s1 + 40, 8);
  cr_assert(resident % 64 == 0 && (resident + 272 <= block0 || resident >= block0 + 64 * 512),
            "the prepared launch's segment %#llx lies outside the ring's blocks from %#llx",
            (unsigned long long)resident, (unsigned long long)block0);
  expect_packet(want, HSA_PACKET_TYPE_INVALID, 2, wg, grid, 0, 0, ko, resident, sig.handle);
  dump_diff(s1, want, 64);
  cr_assert_arr_eq(s1, want, 64, "packet 1 (hsad_prepared_dispatch)");
  cr_assert_eq(hsad_device_kernel_desc(k)->kernarg_segment_size, 272);
  count_dispatch_2d_image(counter, 3, kwant);
  for (uint64_t i = 0; i < 2; i++) {
    const uint8_t *kb = (const uint8_t *)(uintptr_t)(i ? resident : block0);
    dump_diff(kb, kwant, 272);
    cr_assert_arr_eq(kb, kwant, 272, "packet %llu's kernarg segment", (unsigned long long)i);
  }
  for (int i = 0; i < 100; i++) TH_OK(hsad_prepared_dispatch(pl, th_in(TH_SEC), NULL, NULL));
  uint64_t idl;
  TH_OK(hsad_prepared_dispatch(pl, th_in(TH_SEC), &c, &idl));
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  cr_assert_eq(*counter, 3u * 103u, "counter %u", *counter);
  /* the last one, past the ring's end (id 102, or later by the barrier-AND checkpoints a
   * producer facing a full ring adds): slot id % 64, the same resident segment and bytes */
  cr_assert_geq(idl, 102);
  TH_OK(hsad_completion_signal(&c, &sig, &lt));
  expect_packet(want, HSA_PACKET_TYPE_INVALID, 2, wg, grid, 0, 0, ko, resident, sig.handle);
  dump_diff((const uint8_t *)th_packet(q, idl), want, 64);
  cr_assert_arr_eq((const uint8_t *)th_packet(q, idl), want, 64, "packet %llu",
                   (unsigned long long)idl);
  cr_assert_arr_eq((const uint8_t *)(uintptr_t)resident, kwant, 272);
  hsad_launch_destroy(pl);
  cr_assert_eq(hsad_prepared_dispatch(NULL, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(hsad_last_error(), "hsad_prepared_dispatch: NULL prepared launch");
  /* a bad launch is refused at prepare time with dispatch's own error */
  hsad_launch_t bad = l;
  bad.grid[0] = 0;
  cr_assert_eq(hsad_launch_prepare(q, k, &bad, &pl), HSAD_ERR_GRID);
  hsad_buffer_free(counter);
  th_finish(&e, q, p);
}

/* Dynamic LDS: the group segment of the packet is fixed + dynamic bytes, and the kernarg
 * segment is the one the notes declare (`llvm-readelf-15 --notes build/kernels/lds_reduce-
 * gfx90a-v5.hsaco`, lds_reduce_dyn: .group_segment_fixed_size 0, .kernarg_segment_size 280;
 * in @0, part @8, n @16, the dynamic_shared_pointer @20 (4 bytes, .pointee_align 4: its LDS
 * offset, the fixed size aligned up = 0); hidden_block_count_x/y/z @24/28/32, hidden_group_size
 * x/y/z @36/38/40, hidden_remainder_x/y/z @42/44/46, hidden_global_offset_x/y/z @64/72/80,
 * hidden_grid_dims @88, hidden_hostcall_buffer @104, hidden_multigrid_sync_arg @112,
 * hidden_heap_v1 @120 (none provided: 0), hidden_queue_ptr @224 (the hsa_queue_t)). */
Test(dispatch_result, lds_reduce_dynamic, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "lds_reduce", 5, "lds_reduce_dyn", &k, &q);
  uint32_t n = 1000, wg = 128, groups = (n + wg - 1) / wg;
  float *in = th_alloc(&e, n * 4), *part = th_alloc(&e, groups * 4);
  for (uint32_t i = 0; i < n; i++) in[i] = 1.0f;
  hsad_karg_t args[4] = {HSAD_KARG_PTR(in), HSAD_KARG_PTR(part), HSAD_KARG_VAL(n),
                         HSAD_KARG_LDS_BYTES(wg * 4)};
  hsad_launch_t l = {.dims = 1, .grid = {n}, .block = {wg}, .args = args, .arg_count = 4};
  uint64_t id = th_run(q, k, &l, TH_SEC, 10 * TH_SEC);
  cr_assert_eq(th_packet(q, id)->group_segment_size, 0 + 128 * 4, "0 fixed + 512 dynamic bytes");
  uint8_t want[280] = {0};
  put64(want, 0, (uint64_t)(uintptr_t)in);
  put64(want, 8, (uint64_t)(uintptr_t)part);
  put32(want, 16, 1000);
  put32(want, 20, 0);   /* the dynamic LDS starts after 0 fixed bytes */
  put32(want, 24, 7);   /* hidden_block_count_x: 1000 / 128 */
  put32(want, 28, 1);
  put32(want, 32, 1);
  put16(want, 36, 128); /* hidden_group_size_x */
  put16(want, 38, 1);
  put16(want, 40, 1);
  put16(want, 42, 104); /* hidden_remainder_x: 1000 % 128 */
  put16(want, 88, 1);   /* hidden_grid_dims */
  put64(want, 224, (uint64_t)(uintptr_t)hsad_queue_hsa(q)); /* hidden_queue_ptr */
  cr_assert_eq(hsad_device_kernel_desc(k)->kernarg_segment_size, 280);
  const uint8_t *ka = th_packet(q, id)->kernarg_address;
  dump_diff(ka, want, 280);
  cr_assert_arr_eq(ka, want, 280, "lds_reduce_dyn kernarg segment");
  for (uint32_t g = 0; g < groups; g++)
    cr_assert_eq(part[g], g == groups - 1 ? (float)(n - g * wg) : (float)wg, "partial[%u]", g);
  /* the same kernel asking for more LDS than the device has */
  args[3] = HSAD_KARG_LDS_BYTES(70000);
  TH_ERR_IS(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), NULL, NULL), HSAD_ERR_LDS_LIMIT,
            "kernel lds_reduce_dyn: group segment of 70000 bytes (0 fixed + 70000 "
            "dynamic) exceeds device 0's LDS of 65536 bytes per workgroup");
  hsad_buffer_free(in);
  hsad_buffer_free(part);
  th_finish(&e, q, p);
}

/* A batch: one reservation, headers first-one-last, one doorbell with the last id. */
Test(dispatch_batch, ordered_chain_of_ten, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "order_record", 5, "order_record", &k, &q);
  uint32_t *counter = th_alloc(&e, 4), *slots = th_alloc(&e, 40);
  uint32_t idx[10];
  hsad_karg_t args[10][3];
  hsad_dispatch_desc_t items[10];
  for (uint32_t i = 0; i < 10; i++) {
    idx[i] = i;
    args[i][0] = HSAD_KARG_PTR(counter);
    args[i][1] = HSAD_KARG_PTR(slots);
    args[i][2] = HSAD_KARG_VAL(idx[i]);
    items[i] = (hsad_dispatch_desc_t){k, {.dims = 1, .grid = {1}, .block = {1},
                                          .args = args[i], .arg_count = 3}};
  }
  hsad_completion_t c;
  uint64_t first;
  TH_OK(hsad_queue_dispatch_batch(q, items, 10, th_in(TH_SEC), &c, &first));
  cr_assert_eq(first, 0);
  cr_assert_eq(hsad_queue_hsa(q)->size, 64);
  TH_OK(hsad_completion_wait(&c, th_in(10 * TH_SEC)));
  for (uint32_t i = 0; i < 10; i++) cr_assert_eq(slots[i], i, "slot %u ticket %u", i, slots[i]);
  /* only the last packet carries the completion signal */
  const hsa_kernel_dispatch_packet_t *pk =
      (const hsa_kernel_dispatch_packet_t *)hsad_queue_hsa(q)->base_address;
  for (uint32_t i = 0; i < 9; i++) cr_assert_eq(pk[i].completion_signal.handle, 0);
  cr_assert_neq(pk[9].completion_signal.handle, 0);
  /* a bad entry rejects the whole batch before anything is reserved */
  items[4].launch.grid[0] = 0;
  TH_ERR_IS(hsad_queue_dispatch_batch(q, items, 10, th_in(TH_SEC), NULL, NULL), HSAD_ERR_GRID,
            "batch entry 4: kernel order_record: grid[0] is 0 work-items");
  cr_assert_eq(((const amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id, 10);
  hsad_buffer_free(counter);
  hsad_buffer_free(slots);
  th_finish(&e, q, p);
}

/* A barrier-AND on queue B waits for a completion of queue A. */
Test(dispatch_batch, cross_queue_barrier_and_profiling, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "50000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "fill", 1);
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *kf, *ko;
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &kf);
  hsad_program_t *po = th_load(&e, "order_record", 5, "order_record", &ko);
  hsad_queue_t *qa, *qb;
  TH_OK(hsad_queue_create(e.dev, &(hsad_queue_options_t){.size = 64, .profiling = true}, &qa));
  qb = th_queue(&e, 64);
  uint32_t n = 16, v = 7, zero = 0;
  uint32_t *buf = th_alloc(&e, n * 4), *counter = th_alloc(&e, 4), *slots = th_alloc(&e, 8);
  hsad_karg_t fa[3] = {HSAD_KARG_PTR(buf), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
  hsad_launch_t lf = {.dims = 1, .grid = {n}, .block = {16}, .args = fa, .arg_count = 3};
  hsad_completion_t ca, cb;
  TH_OK(hsad_kernel_dispatch(qa, kf, &lf, th_in(TH_SEC), &ca, NULL));
  TH_OK(hsad_queue_barrier(qb, &ca, 1, th_in(TH_SEC), NULL));
  hsad_karg_t oa[3] = {HSAD_KARG_PTR(counter), HSAD_KARG_PTR(slots), HSAD_KARG_VAL(zero)};
  hsad_launch_t lo = {.dims = 1, .grid = {1}, .block = {1}, .args = oa, .arg_count = 3};
  TH_OK(hsad_kernel_dispatch(qb, ko, &lo, th_in(TH_SEC), &cb, NULL));
  TH_OK(hsad_completion_wait(&cb, th_in(10 * TH_SEC)));
  /* the fill (50 ms) completed before the barrier let order_record run */
  cr_assert(hsad_completion_done(&ca));
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(buf[i], 7);
  cr_assert_eq(*counter, 1);
  uint64_t t0, t1;
  TH_OK(hsad_completion_times(&ca, &t0, &t1));
  cr_assert(t1 > t0 && t1 - t0 >= 40000000ull, "fill took %llu ns", (unsigned long long)(t1 - t0));
  TH_ERR_IS(hsad_completion_times(&cb, &t0, &t1), HSAD_ERR_UNSUPPORTED,
            "hsad_completion_times: the queue was created without profiling "
            "(hsad_queue_options_t.profiling)");
  hsad_buffer_free(buf);
  hsad_buffer_free(counter);
  hsad_buffer_free(slots);
  hsad_queue_destroy(qa);
  hsad_queue_destroy(qb);
  hsad_program_destroy(pf);
  hsad_program_destroy(po);
  TH_OK(hsad_runtime_close(e.rt));
}

/* ---- devices and topology -------------------------------------------------------------- */

Test(dispatch_device, info_and_shared_queues, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  const hsad_device_info_t *di = hsad_device_info(e.dev);
  cr_assert_str_eq(di->name, "gfx90a");
  cr_assert(strncmp(di->isa_name, "gfx90a", 6) == 0, "isa %s", di->isa_name);
  cr_assert(strncmp(di->isa_names[0], "amdgcn-amd-amdhsa--gfx90a", 25) == 0);
  cr_assert_eq(di->compute_units, 104);
  cr_assert_eq(di->wavefront_size, 64);
  cr_assert_eq(di->lds_bytes, 65536);
  cr_assert_eq(di->max_private_per_work_item, 8387584u / 64);
  cr_assert(di->queue_max_size >= 64 && di->queue_min_size <= 64);
  cr_assert_eq(di->nearest_cpu, 0);
  cr_assert_eq(hsad_cpu_count(e.rt), 1);
  cr_assert_eq(hsad_cpu_info(e.rt, 0)->numa_node, 0);
  hsad_queue_t *a, *b, *c;
  TH_OK(hsad_device_queue(e.dev, &a));
  TH_OK(hsad_device_queue(e.dev, &b));
  TH_OK(hsad_device_queue(e.dev, &c));
  cr_assert_neq(a, b);
  cr_assert_eq(a, c, "round-robin over 2 shared queues");
  hsad_queue_destroy(a); /* ignored for shared queues */
  TH_OK(hsad_queue_error(a));
  /* refcount: a second open shares the runtime; the first close keeps it open */
  hsad_runtime_t *rt2;
  TH_OK(hsad_runtime_open(&rt2));
  cr_assert_eq(rt2, e.rt);
  TH_OK(hsad_runtime_close(rt2));
  cr_assert_eq(hsad_device_count(e.rt), 1);
  TH_OK(hsad_runtime_close(e.rt));
}

Test(dispatch_device, two_numa_nodes_nearest_cpu, .timeout = 60) {
  setenv("KFD_EMU_GPUS", "2", 1);
  setenv("KFD_EMU_CPU_NODES", "2", 1);
  setenv("KFD_EMU_GPU_NUMA", "1,0", 1);
  hsad_runtime_t *rt;
  TH_OK(hsad_runtime_open(&rt));
  cr_assert_eq(hsad_device_count(rt), 2);
  cr_assert_eq(hsad_cpu_count(rt), 2);
  cr_assert_eq(hsad_cpu_info(rt, 0)->numa_node, 0);
  cr_assert_eq(hsad_cpu_info(rt, 1)->numa_node, 1);
  hsad_device_t *d0, *d1;
  TH_OK(hsad_device_get(rt, 0, &d0));
  TH_OK(hsad_device_get(rt, 1, &d1));
  cr_assert_eq(hsad_device_info(d0)->nearest_cpu, 1, "GPU 0 is linked to CPU node 1");
  cr_assert_eq(hsad_device_info(d1)->nearest_cpu, 0, "GPU 1 is linked to CPU node 0");
  TH_ERR_IS(hsad_device_get(rt, 2, &d0), HSAD_ERR_DEVICE_INDEX,
            "device index 2 out of range: 2 GPU device(s), valid indices 0..1");
  TH_OK(hsad_runtime_close(rt));
}

/* Two emulated GPUs of different ISAs: indices and vendor indices 0 and 1, each device loads
 * its own code object, a dispatch on the second GPU gives the exact result, and device 1's
 * kernel is refused on device 0's queue. */
Test(dispatch_device, second_gpu_dispatch, .timeout = 60) {
  setenv("KFD_EMU_GPUS", "2", 1);
  setenv("KFD_EMU_ISA", "gfx90a,gfx908", 1);
  th_env_t e0, e1;
  th_open(&e0);
  e1.rt = e0.rt;
  TH_OK(hsad_device_get(e1.rt, 1, &e1.dev));
  cr_assert_str_eq(hsad_device_info(e1.dev)->name, "gfx908");
  /* each GPU's position among AMD's devices (mutation-sample seed 28, mutant 4) */
  cr_assert_eq(hsad_device_info(e0.dev)->vendor_index, 0);
  cr_assert_eq(hsad_device_info(e1.dev)->vendor_index, 1);
  cr_assert_eq(hsad_device_info(e1.dev)->index, 1);
  const hsad_device_kernel_t *k1;
  hsad_program_t *p1 = th_load(&e1, "fill", 5, "fill", &k1);
  hsad_queue_t *q0, *q1;
  TH_OK(hsad_device_queue(e0.dev, &q0));
  TH_OK(hsad_device_queue(e1.dev, &q1));
  uint32_t n = 1000, v = 0xC0FFEEu, *buf = th_alloc(&e1, n * 4);
  memset(buf, 0, n * 4);
  hsad_karg_t args[3] = {HSAD_KARG_PTR(buf), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {n}, .block = {64}, .args = args, .arg_count = 3};
  th_run(q1, k1, &l, TH_SEC, 10 * TH_SEC);
  for (uint32_t i = 0; i < n; i++) cr_assert_eq(buf[i], v, "buf[%u] = 0x%x", i, buf[i]);
  TH_ERR_IS(hsad_kernel_dispatch(q0, k1, &l, th_in(TH_SEC), NULL, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "kernel fill is loaded on device 1, the queue is on device 0");
  hsad_buffer_free(buf);
  hsad_program_destroy(p1);
  TH_OK(hsad_runtime_close(e0.rt));
}

/* ---- bad input: one row each, own code and message -------------------------------------- */

Test(dispatch_errors, rows, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "saxpy", 5, "saxpy", &k, &q);
  float a = 1, *x = th_alloc(&e, 256);
  uint32_t n = 64;
  uint16_t short_n = 64;
  hsad_karg_t args[4] = {HSAD_KARG_VAL(a), HSAD_KARG_PTR(x), HSAD_KARG_PTR(x), HSAD_KARG_VAL(n)};
  hsad_launch_t ok = {.dims = 1, .grid = {64}, .block = {64}, .args = args, .arg_count = 4};
  hsad_launch_t l;
  const hsad_device_kernel_t *nk;

  /* unknown kernel */
  TH_ERR_IS(hsad_program_kernel(p, "no_such_kernel", &nk), HSAD_ERR_KERNEL_NOT_FOUND,
            "%s: no kernel named 'no_such_kernel' (1 kernels)",
            TEST_KERNDIR "/saxpy-gfx90a-v5.hsaco");
  /* wrong argument count */
  l = ok;
  l.arg_count = 3;
  TH_ERR_IS(hsad_kernel_dispatch(q, k, &l, 0, NULL, NULL), HSAD_ERR_ARG_COUNT,
            "%s: kernel 'saxpy' takes 4 explicit arguments, got 3",
            TEST_KERNDIR "/saxpy-gfx90a-v5.hsaco");
  /* wrong argument size */
  hsad_karg_t bad[4] = {args[0], args[1], args[2], HSAD_KARG_VAL(short_n)};
  l = ok;
  l.args = bad;
  TH_ERR_IS(hsad_kernel_dispatch(q, k, &l, 0, NULL, NULL), HSAD_ERR_ARG_SIZE,
            "%s: kernel 'saxpy': argument 3 has .size 4, value has 2 bytes",
            TEST_KERNDIR "/saxpy-gfx90a-v5.hsaco");
  /* grid 0 */
  l = ok;
  l.grid[0] = 0;
  TH_ERR_IS(hsad_kernel_dispatch(q, k, &l, 0, NULL, NULL), HSAD_ERR_GRID,
            "kernel saxpy: grid[0] is 0 work-items");
  l = ok;
  l.dims = 4;
  TH_ERR_IS(hsad_kernel_dispatch(q, k, &l, 0, NULL, NULL), HSAD_ERR_GRID,
            "kernel saxpy: dims 4, must be 1..3");
  /* workgroup above the maximum: per dimension, then flat */
  l = ok;
  l.block[0] = 2048;
  TH_ERR_IS(hsad_kernel_dispatch(q, k, &l, 0, NULL, NULL), HSAD_ERR_WORKGROUP,
            "kernel saxpy: block[0]=2048 exceeds device 0's maximum 1024 "
            "(HSA_AGENT_INFO_WORKGROUP_MAX_DIM)");
  l = ok;
  l.dims = 2;
  l.grid[1] = 64;
  l.block[0] = 64;
  l.block[1] = 32;
  TH_ERR_IS(hsad_kernel_dispatch(q, k, &l, 0, NULL, NULL), HSAD_ERR_WORKGROUP,
            "kernel saxpy: workgroup of 2048 work-items exceeds its "
            ".max_flat_workgroup_size 256 (device 0 maximum 1024)");
  l = ok;
  l.block[0] = 0;
  TH_ERR_IS(hsad_kernel_dispatch(q, k, &l, 0, NULL, NULL), HSAD_ERR_WORKGROUP,
            "kernel saxpy: block[0] is 0 work-items");
  /* a dimension the launch leaves unused: grid or block above 1 (the same rule and message as
   * on NVIDIA: hsad_launch_unused_dim_check) */
  l = ok;
  l.grid[2] = 5;
  TH_ERR_IS(hsad_kernel_dispatch(q, k, &l, 0, NULL, NULL), HSAD_ERR_GRID,
            "kernel saxpy: dimension 2 unused (dims 1) but grid[2]=5 block[2]=0; use 0 or 1");
  l = ok;
  l.block[1] = 2;
  TH_ERR_IS(hsad_kernel_dispatch(q, k, &l, 0, NULL, NULL), HSAD_ERR_WORKGROUP,
            "kernel saxpy: dimension 1 unused (dims 1) but grid[1]=0 block[1]=2; use 0 or 1");
  /* the whole grid above HSA_AGENT_INFO_GRID_MAX_SIZE (UINT32_MAX work-items) though each
   * dimension is within HSA_AGENT_INFO_GRID_MAX_DIM; a product past 2^64 said so; a batch
   * entry and a prepared launch take the same check */
  l = ok;
  l.dims = 2;
  l.grid[0] = l.grid[1] = 65536;
  l.block[1] = 1;
  TH_ERR_IS(hsad_kernel_dispatch(q, k, &l, 0, NULL, NULL), HSAD_ERR_GRID,
            "kernel saxpy: grid of 65536x65536x1 = 4294967296 work-items exceeds device 0's "
            "maximum of 4294967295 work-items in a grid (HSA_AGENT_INFO_GRID_MAX_SIZE)");
  hsad_prepared_launch_t *prep;
  TH_ERR_IS(hsad_launch_prepare(q, k, &l, &prep), HSAD_ERR_GRID,
            "kernel saxpy: grid of 65536x65536x1 = 4294967296 work-items exceeds device 0's "
            "maximum of 4294967295 work-items in a grid (HSA_AGENT_INFO_GRID_MAX_SIZE)");
  l.dims = 3;
  l.grid[0] = l.grid[1] = l.grid[2] = 0xffffffffu;
  l.block[2] = 1;
  TH_ERR_IS(hsad_kernel_dispatch(q, k, &l, 0, NULL, NULL), HSAD_ERR_GRID,
            "kernel saxpy: grid of 4294967295x4294967295x4294967295 = more than 2^64 work-items "
            "exceeds "
            "device 0's maximum of 4294967295 work-items in a grid "
            "(HSA_AGENT_INFO_GRID_MAX_SIZE)");
  /* nothing above was reserved */
  cr_assert_eq(((const amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id, 0);

  /* scratch above the limit, required workgroup size, dynamic stack (hand-written fixture) */
  hsad_program_t *pl;
  TH_OK(hsad_program_load_file(e.dev, TH_FIXDIR "/limits-v5.hsaco", &pl));
  const hsad_device_kernel_t *kh, *kr, *kd;
  TH_OK(hsad_program_kernel(pl, "hd_huge_private", &kh));
  TH_OK(hsad_program_kernel(pl, "hd_reqd", &kr));
  TH_OK(hsad_program_kernel(pl, "hd_dyn_stack", &kd));
  hsad_karg_t one[1] = {HSAD_KARG_PTR(x)};
  hsad_launch_t l1 = {.dims = 1, .grid = {64}, .block = {64}, .args = one, .arg_count = 1};
  TH_ERR_IS(hsad_kernel_dispatch(q, kh, &l1, 0, NULL, NULL), HSAD_ERR_SCRATCH_LIMIT,
            "kernel hd_huge_private: private segment of 200000 bytes per work-item x "
            "wavefront 64 = 12800000 bytes per wave exceeds the device's scratch limit of 8387584 "
            "bytes per wave (131056 per work-item)");
  hsad_launch_t l2 = l1;
  l2.block[0] = 32;
  TH_ERR_IS(hsad_kernel_dispatch(q, kr, &l2, 0, NULL, NULL), HSAD_ERR_WORKGROUP,
            "kernel hd_reqd: workgroup 32x1x1 differs from its .reqd_workgroup_size 64x1x1");
  /* dynamic stack: the queue's dynamic_stack_size is the private segment */
  hsad_queue_t *qs;
  TH_OK(hsad_queue_create(e.dev, &(hsad_queue_options_t){.size = 64, .dynamic_stack_size = 200000},
                          &qs));
  TH_ERR_IS(hsad_kernel_dispatch(qs, kd, &l1, 0, NULL, NULL), HSAD_ERR_SCRATCH_LIMIT,
            "kernel hd_dyn_stack: private segment of 200000 bytes per work-item x "
            "wavefront 64 = 12800000 bytes per wave exceeds the device's scratch limit of 8387584 "
            "bytes per wave (131056 per work-item); the kernel uses a dynamic stack: lower the "
            "queue's dynamic_stack_size");
  hsad_queue_destroy(qs);
  TH_ERR_IS(hsad_queue_create(e.dev, &(hsad_queue_options_t){.private_segment_size = 200000}, &qs),
            HSAD_ERR_SCRATCH_LIMIT,
            "queue private_segment_size 200000 bytes per work-item exceeds device 0's "
            "limit of 131056 (8387584 bytes per wave / wavefront 64)");
  TH_ERR_IS(hsad_queue_create(e.dev, &(hsad_queue_options_t){.size = 100}, &qs),
            HSAD_ERR_INVALID_ARGUMENT,
            "queue size 100 packets: must be a power of two in [64, 131072] on device 0");
  hsad_program_destroy(pl);

  /* ISA mismatch: a gfx908 code object on the gfx90a device */
  hsad_program_t *pm = NULL;
  TH_ERR_IS(
      hsad_program_load_file(e.dev, TEST_KERNDIR "/saxpy-gfx908-v5.hsaco", &pm),
      HSAD_ERR_ISA_MISMATCH,
      "%s/saxpy-gfx908-v5.hsaco: code object targets gfx908, device 0 (gfx90a) "
      "supports amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-: compile for gfx90a:sramecc+:xnack-",
      TEST_KERNDIR);
  /* device index out of range */
  hsad_device_t *d;
  TH_ERR_IS(hsad_device_get(e.rt, 1, &d), HSAD_ERR_DEVICE_INDEX,
            "device index 1 out of range: 1 GPU device(s), valid indices 0..0");
  /* the queue still works after all of that */
  float *y = th_alloc(&e, 256);
  for (int i = 0; i < 64; i++) x[i] = (float)i;
  args[2] = HSAD_KARG_PTR(y);
  th_run(q, k, &ok, TH_SEC, 10 * TH_SEC);
  for (int i = 0; i < 64; i++) cr_assert_eq(y[i], (float)i);

  /* use after close */
  TH_OK(hsad_runtime_close(e.rt));
  TH_ERR_IS(hsad_device_get(e.rt, 0, &d), HSAD_ERR_CLOSED,
            "hsad_device_get: the runtime is closed");
  TH_ERR_IS(hsad_kernel_dispatch(q, k, &ok, 0, NULL, NULL), HSAD_ERR_CLOSED,
            "queue on device 0: the hsa-dispatch runtime was closed");
  TH_ERR_IS(hsad_program_kernel(p, "saxpy", &nk), HSAD_ERR_CLOSED,
            "hsad_program_kernel(saxpy): the runtime was closed");
  TH_ERR_IS(hsad_queue_create(e.dev, NULL, &qs), HSAD_ERR_CLOSED,
            "hsa-dispatch runtime is closed (call hsad_runtime_open)");
  TH_ERR_IS(hsad_program_load_file(e.dev, TEST_KERNDIR "/saxpy-gfx90a-v5.hsaco", &pm),
            HSAD_ERR_CLOSED, "hsa-dispatch runtime is closed (call hsad_runtime_open)");
  TH_ERR_IS(hsad_runtime_close(e.rt), HSAD_ERR_CLOSED,
            "hsad_runtime_close: the runtime is already closed");
  hsad_queue_destroy(q);
  hsad_program_destroy(p);
}

/* Scratch: a kernel with a 4 KiB private array runs on a queue without reserved scratch and on
 * one with 512 bytes per work-item reserved up front (in both cases ROCr grows the queue's scratch
 * when the CP reports it short); the packet carries .private_segment_fixed_size. Reserving the
 * kernel's full 4100 bytes for every wave slot of the device (4100 x 64 x 32 slots x 104 CUs)
 * is more than ROCr binds to a queue (146800640 bytes, AcquireQueueScratch): a clear error. */
static uint32_t big_private_ref(uint32_t s) {
  uint32_t p[1024], j = s & 1023, acc = 0;
  for (uint32_t k = 0; k < 1024; k++) p[k] = s ^ (k * 2654435761u);
  for (uint32_t k = 0; k < 1024; k++) {
    acc += p[j];
    j = (j * 5 + 1) & 1023;
  }
  return acc;
}

Test(dispatch_result, big_private_scratch, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *k;
  hsad_program_t *p = th_load(&e, "big_private", 5, "big_private", &k);
  uint32_t priv = hsad_device_kernel_desc(k)->private_segment_fixed_size;
  cr_assert_eq(priv, 4100);
  hsad_queue_t *q;
  TH_ERR_IS(hsad_queue_create(
                e.dev, &(hsad_queue_options_t){.size = 64, .private_segment_size = priv}, &q),
            HSAD_ERR_HSA,
            "hsad_rocr.hsa_queue_create(device 0, 64 packets) reserving 4100 bytes "
            "of scratch per work-item for every wave slot of the device (ROCr sizes queue scratch "
            "as bytes x 64 lanes x scratch slots x CUs); use a smaller private_segment_size, or 0 "
            "to let ROCr grow scratch on demand: HSA status 0x1008 "
            "(HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary "
            "resources. This error may also occur when the core runtime library needs to spawn "
            "threads or create internal OS-specific events.)");
  for (int reserve = 0; reserve < 2; reserve++) {
    TH_OK(hsad_queue_create(e.dev, &(hsad_queue_options_t){.size = 64,
                            .private_segment_size = reserve ? 512 : 0}, &q));
    uint32_t n = 300, *in = th_alloc(&e, n * 4), *out = th_alloc(&e, n * 4);
    for (uint32_t i = 0; i < n; i++) in[i] = i * 7919u + 13u;
    hsad_karg_t args[3] = {HSAD_KARG_PTR(in), HSAD_KARG_PTR(out), HSAD_KARG_VAL(n)};
    hsad_launch_t l = {.dims = 1, .grid = {n}, .block = {64}, .args = args, .arg_count = 3};
    uint64_t id = th_run(q, k, &l, TH_SEC, 20 * TH_SEC);
    cr_assert_eq(th_packet(q, id)->private_segment_size, priv);
    for (uint32_t i = 0; i < n; i++)
      cr_assert_eq(out[i], big_private_ref(in[i]), "reserve %d: out[%u]", reserve, i);
    hsad_buffer_free(in);
    hsad_buffer_free(out);
    hsad_queue_destroy(q);
  }
  hsad_program_destroy(p);
  TH_OK(hsad_runtime_close(e.rt));
}
