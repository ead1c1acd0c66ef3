/* test_memory_rect.c - 2-D/3-D (pitched) copies and granting an allocation to another device
 * (issue 21): sub-rectangles and a 3-D box inside a larger volume, each compared byte by byte
 * with an independent host loop (guard bytes untouched); which ROCr calls carry them (the SDMA
 * rectangle copy tried, rows after its refusal, merged rows); every bad input's code and
 * message with nothing written; a refused later row; hsad_mem_grant on 2 emulated GPUs under
 * KFD_EMU_ACCESS=strict. */
#include <dlfcn.h>
#include <stdlib.h>

#include "memory/hsad_memory.h"
/* mem_rocr, memory/'s table of ROCr entry points: wrappers below count and inspect its copy
 * calls (an injection that exists only in this test) */
#include "memory/mem_internal.h"
#include "tests/test_dispatch_util.h"

static void fill_lcg(uint8_t *p, size_t n, uint32_t seed) {
  uint32_t x = seed;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    p[i] = (uint8_t)(x >> 24);
  }
}

/* The expected destination: `before` with the box copied, by a plain host loop. */
static void host_box(uint8_t *dst, size_t dp, size_t ds, const uint8_t *src, size_t sp,
                     size_t ss, size_t w, size_t h, size_t d) {
  for (size_t z = 0; z < d; z++)
    for (size_t y = 0; y < h; y++)
      for (size_t x = 0; x < w; x++) dst[z * ds + y * dp + x] = src[z * ss + y * sp + x];
}

static void same_bytes(const uint8_t *got, const uint8_t *want, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(got[i], want[i], "%s: byte %zu is 0x%02x, want 0x%02x", what, i, got[i],
                 want[i]);
}

/* ---- wrappers of memory/'s ROCr copy calls ------------------------------------------------ */
static struct {
  __typeof__(hsa_amd_memory_async_copy) *copy;
  __typeof__(hsa_amd_memory_async_copy_rect) *rect;
  _Atomic uint32_t copies, rects;
  hsa_status_t rect_status;          /* what the last rect call returned */
  hsa_amd_copy_direction_t rect_dir;
  hsa_pitched_ptr_t rect_dst, rect_src;
  hsa_dim3_t rect_range;
  bool emulate_sdma;                 /* perform the rect copy on the host (an SDMA engine) */
  void *refuse_dst;                  /* refuse the row copy to this destination */
} w;
static void (*sig_sub)(hsa_signal_t, hsa_signal_value_t);

static hsa_status_t w_copy(void *dst, hsa_agent_t da, const void *src, hsa_agent_t sa, size_t n,
                           uint32_t nd, const hsa_signal_t *deps, hsa_signal_t done) {
  atomic_fetch_add(&w.copies, 1);
  if (w.refuse_dst && dst == w.refuse_dst) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  return w.copy(dst, da, src, sa, n, nd, deps, done);
}

static hsa_status_t w_rect(const hsa_pitched_ptr_t *dst, const hsa_dim3_t *doff,
                           const hsa_pitched_ptr_t *src, const hsa_dim3_t *soff,
                           const hsa_dim3_t *range, hsa_agent_t agent,
                           hsa_amd_copy_direction_t dir, uint32_t nd, const hsa_signal_t *deps,
                           hsa_signal_t done) {
  atomic_fetch_add(&w.rects, 1);
  w.rect_dir = dir, w.rect_dst = *dst, w.rect_src = *src, w.rect_range = *range;
  if (!w.emulate_sdma) {
    w.rect_status = w.rect(dst, doff, src, soff, range, agent, dir, nd, deps, done);
    return w.rect_status;
  }
  cr_assert_eq(nd, 0, "the emulated engine takes no dependencies here");
  cr_assert(doff->x == 0 && doff->y == 0 && doff->z == 0 && soff->x == 0 && soff->y == 0 &&
            soff->z == 0);
  host_box(dst->base, dst->pitch, dst->slice, src->base, src->pitch, src->slice, range->x,
           range->y, range->z);
  sig_sub(done, 1);
  w.rect_status = HSA_STATUS_SUCCESS;
  return HSA_STATUS_SUCCESS;
}

static void w_arm(bool emulate_sdma, void *refuse_dst) {
  cr_assert_not_null(mem_rocr.hsa_amd_memory_async_copy, "memory/ has not resolved ROCr yet");
  if (!w.copy) {
    w.copy = mem_rocr.hsa_amd_memory_async_copy;
    w.rect = mem_rocr.hsa_amd_memory_async_copy_rect;
    mem_rocr.hsa_amd_memory_async_copy = w_copy;
    mem_rocr.hsa_amd_memory_async_copy_rect = w_rect;
    *(void **)&sig_sub = dlsym(RTLD_DEFAULT, "hsa_signal_subtract_screlease");
    cr_assert_not_null(sig_sub);
  }
  atomic_store(&w.copies, 0);
  atomic_store(&w.rects, 0);
  w.rect_status = (hsa_status_t)-1;
  w.emulate_sdma = emulate_sdma;
  w.refuse_dst = refuse_dst;
}

static void w_disarm(void) {
  if (!w.copy) return;
  mem_rocr.hsa_amd_memory_async_copy = w.copy;
  mem_rocr.hsa_amd_memory_async_copy_rect = w.rect;
  w.copy = NULL;
}

static void open_mem(th_env_t *e) {
  th_open(e);
  void *p = NULL; /* memory/ resolves ROCr at its first call */
  TH_OK(hsad_mem_alloc(e->dev, HSAD_MEM_DEVICE, 4096, NULL, 0, &p));
  TH_OK(hsad_mem_free(p));
}

static void wait_ok(hsad_completion_t *c) { TH_OK(hsad_completion_wait(c, th_in(20 * TH_SEC))); }

/* The tests that count row DMAs turn the copy kernel off (HSAD_RECT_BLIT_MIN_DMAS=0). */
static void rows_only(void) { setenv("HSAD_RECT_BLIT_MIN_DMAS", "0", 1); }

/* 2-D: a 45 x 20 sub-rectangle at (x 7, y 3) of a 131-byte-pitch host image goes H2D into a
 * 64-byte-pitch device image at (x 5, y 2) (odd pitches: rows, 20 DMAs, no rectangle call),
 * then D2D into a 48-byte-pitch image, then D2H back to a packed host buffer (pitch = width
 * = 45: rows merge, 1 DMA); 4-aligned pitches try ROCr's rectangle copy first (refused on
 * kfd-emu: no SDMA engine, HSA_STATUS_ERROR_OUT_OF_RESOURCES) and then go by rows. Every
 * destination equals a host loop's result byte for byte, guards included. */
Test(memory_rect, sub_rectangles_2d, .timeout = 60) {
  th_env_t e;
  rows_only();
  open_mem(&e);
  enum { SP = 131, SH = 37, DP = 64, DH = 30, W = 45, H = 20, EP = 48 };
  uint8_t *src = NULL, *dev = NULL, *dev2 = NULL, *back = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_FINE, SP * SH, NULL, 0, (void **)&src));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, DP * DH, NULL, 0, (void **)&dev));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, EP * H, NULL, 0, (void **)&dev2));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_FINE, W * H + 16, NULL, 0, (void **)&back));
  fill_lcg(src, SP * SH, 3);
  memset(dev, 0xee, DP * DH); /* kfd-emu: device memory is host memory */
  memset(dev2, 0xdd, EP * H);
  memset(back, 0xcc, W * H + 16);
  uint8_t want[DP * DH], want2[EP * H], wantb[W * H + 16];
  memset(want, 0xee, sizeof want);
  memset(want2, 0xdd, sizeof want2);
  memset(wantb, 0xcc, sizeof wantb);
  host_box(want + 2 * DP + 5, DP, 0, src + 3 * SP + 7, SP, 0, W, H, 1);
  w_arm(false, NULL);
  hsad_completion_t c1, c2, c3;
  TH_OK(hsad_memcpy_2d_async(e.dev, dev + 2 * DP + 5, DP, src + 3 * SP + 7, SP, W, H, NULL, 0,
                             th_in(TH_SEC), &c1));
  wait_ok(&c1);
  same_bytes(dev, want, sizeof want, "H2D");
  cr_assert_eq(atomic_load(&w.rects), 0, "odd pitch: no rectangle call");
  cr_assert_eq(atomic_load(&w.copies), H, "one DMA per row");
  /* D2D, ordered after c1 by a dependency: 4-aligned pointers and pitches (64, 48) */
  host_box(want2, EP, 0, want + 2 * DP + 4, DP, 0, 44, H, 1);
  w_arm(false, NULL);
  TH_OK(hsad_memcpy_2d_async(e.dev, dev2, EP, dev + 2 * DP + 4, DP, 44, H, &c1, 1,
                             th_in(TH_SEC), &c2));
  wait_ok(&c2);
  same_bytes(dev2, want2, sizeof want2, "D2D");
  cr_assert_eq(atomic_load(&w.rects), 1, "the rectangle copy was tried");
  cr_assert_eq(w.rect_status, HSA_STATUS_ERROR_OUT_OF_RESOURCES, "kfd-emu: no SDMA engine");
  cr_assert_eq(w.rect_dir, hsaDeviceToDevice);
  cr_assert_eq(w.rect_dst.pitch, EP);
  cr_assert_eq(w.rect_src.pitch, DP);
  cr_assert_eq(w.rect_dst.slice, 0);
  cr_assert(w.rect_range.x == 44 && w.rect_range.y == H && w.rect_range.z == 1);
  cr_assert_eq(atomic_load(&w.copies), H, "then rows");
  /* D2H into a packed buffer: pitch 45 on both sides? no: source pitch 48, so rows */
  host_box(wantb + 8, W, 0, want + 2 * DP + 5, DP, 0, W, H, 1);
  w_arm(false, NULL);
  TH_OK(hsad_memcpy_2d_async(e.dev, back + 8, W, dev + 2 * DP + 5, DP, W, H, NULL, 0,
                             th_in(TH_SEC), &c3));
  wait_ok(&c3);
  same_bytes(back, wantb, sizeof wantb, "D2H");
  cr_assert_eq(atomic_load(&w.copies), H);
  /* packed on both sides: one DMA for the whole rectangle */
  memset(back, 0xcc, W * H + 16);
  memset(wantb, 0xcc, sizeof wantb);
  memcpy(wantb + 3, src + 100, W * H);
  w_arm(false, NULL);
  TH_OK(hsad_memcpy_2d_async(e.dev, back + 3, W, src + 100, W, W, H, NULL, 0, th_in(TH_SEC),
                             &c3));
  wait_ok(&c3);
  same_bytes(back, wantb, sizeof wantb, "packed");
  cr_assert_eq(atomic_load(&w.copies), 1, "rows back to back merge");
  cr_assert_eq(atomic_load(&w.rects), 0, "host to host: no rectangle call");
  w_disarm();
  TH_OK(hsad_mem_free(src));
  TH_OK(hsad_mem_free(dev));
  TH_OK(hsad_mem_free(dev2));
  TH_OK(hsad_mem_free(back));
  TH_OK(hsad_runtime_close(e.rt));
}

/* Where ROCr takes the rectangle copy (an SDMA engine, emulated here on the host), it is one
 * call with the pitches, slice pitches, range and direction of the box, no row DMA. */
Test(memory_rect, sdma_rectangle_call, .timeout = 60) {
  th_env_t e;
  open_mem(&e);
  uint8_t *h = NULL, *d = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_FINE, 8192, NULL, 0, (void **)&h));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 8192, NULL, 0, (void **)&d));
  fill_lcg(h, 8192, 5);
  memset(d, 0, 8192);
  uint8_t want[8192];
  memset(want, 0, sizeof want);
  host_box(want + 64, 40, 400, h + 4, 36, 36 * 6, 32, 5, 3);
  w_arm(true, NULL);
  hsad_completion_t c;
  hsad_pitched_ptr_t pd = {d + 64, 40, 400}, ps = {h + 4, 36, 36 * 6};
  hsad_extent_t ex = {32, 5, 3};
  TH_OK(hsad_memcpy_3d_async(e.dev, &pd, &ps, &ex, NULL, 0, th_in(TH_SEC), &c));
  wait_ok(&c);
  same_bytes(d, want, sizeof want, "H2D rect");
  cr_assert_eq(atomic_load(&w.rects), 1);
  cr_assert_eq(atomic_load(&w.copies), 0);
  cr_assert_eq(w.rect_dir, hsaHostToDevice);
  cr_assert(w.rect_dst.base == d + 64 && w.rect_dst.pitch == 40 && w.rect_dst.slice == 400);
  cr_assert(w.rect_src.base == h + 4 && w.rect_src.pitch == 36 && w.rect_src.slice == 216);
  cr_assert(w.rect_range.x == 32 && w.rect_range.y == 5 && w.rect_range.z == 3);
  /* back, D2H: direction device to host */
  memset(h, 0, 8192);
  w_arm(true, NULL);
  TH_OK(hsad_memcpy_2d_async(e.dev, h, 32, d + 64, 40, 32, 5, NULL, 0, th_in(TH_SEC), &c));
  wait_ok(&c);
  cr_assert_eq(w.rect_dir, hsaDeviceToHost);
  uint8_t wb[160];
  host_box(wb, 32, 0, want + 64, 40, 0, 32, 5, 1);
  same_bytes(h, wb, sizeof wb, "D2H rect");
  for (int i = 160; i < 8192; i++) cr_assert_eq(h[i], 0);
  w_disarm();
  TH_OK(hsad_mem_free(h));
  TH_OK(hsad_mem_free(d));
  TH_OK(hsad_runtime_close(e.rt));
}

/* 3-D: a 21 x 5 x 4 box at (x 5, y 2, z 1) of a host volume (pitch 50, 9 rows, slice pitch
 * 50 * 10 = 500: a row of gap after each slice, 7 slices) goes into a device volume (pitch 33,
 * 8 rows, slice pitch 33 * 8 + 7 = 271, 6 slices) at (x 3, y 1, z 2), then the device box back
 * into a packed host buffer (pitch 21, slice 105: one DMA per... all merged: 1 DMA). */
Test(memory_rect, box_3d_inside_volume, .timeout = 60) {
  th_env_t e;
  rows_only();
  open_mem(&e);
  enum { SP = 50, SS = 500, SZ = 7, DP = 33, DS = 271, DZ = 6, W = 21, H = 5, D = 4 };
  uint8_t *vol = NULL, *dv = NULL, *out = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_COARSE, SS * SZ, NULL, 0, (void **)&vol));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, DS * DZ, NULL, 0, (void **)&dv));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_FINE, W * H * D, NULL, 0, (void **)&out));
  fill_lcg(vol, SS * SZ, 11);
  memset(dv, 0x5a, DS * DZ);
  memset(out, 0, W * H * D);
  static uint8_t want[DS * DZ], wout[W * H * D];
  memset(want, 0x5a, sizeof want);
  const uint8_t *s0 = vol + 1 * SS + 2 * SP + 5;
  host_box(want + 2 * DS + 1 * DP + 3, DP, DS, s0, SP, SS, W, H, D);
  w_arm(false, NULL);
  hsad_completion_t c1, c2;
  hsad_pitched_ptr_t pd = {dv + 2 * DS + 1 * DP + 3, DP, DS}, ps = {(void *)s0, SP, SS};
  hsad_extent_t ex = {W, H, D};
  TH_OK(hsad_memcpy_3d_async(e.dev, &pd, &ps, &ex, NULL, 0, th_in(TH_SEC), &c1));
  wait_ok(&c1);
  same_bytes(dv, want, sizeof want, "3-D H2D");
  cr_assert_eq(atomic_load(&w.copies), H * D, "a DMA per row");
  host_box(wout, W, W * H, want + 2 * DS + 1 * DP + 3, DP, DS, W, H, D);
  hsad_pitched_ptr_t po = {out, W, W * H};
  w_arm(false, NULL);
  TH_OK(hsad_memcpy_3d_async(e.dev, &po, &pd, &ex, &c1, 1, th_in(TH_SEC), &c2));
  wait_ok(&c2);
  same_bytes(out, wout, sizeof wout, "3-D D2H packed");
  cr_assert_eq(atomic_load(&w.copies), H * D, "source rows not packed: a DMA per row");
  /* packed both sides (pitch = width, slice = width * height): one DMA */
  uint8_t *out2 = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, W * H * D, NULL, 0, (void **)&out2));
  hsad_pitched_ptr_t po2 = {out2, W, W * H};
  w_arm(false, NULL);
  TH_OK(hsad_memcpy_3d_async(e.dev, &po2, &po, &ex, NULL, 0, th_in(TH_SEC), &c2));
  wait_ok(&c2);
  same_bytes(out2, wout, sizeof wout, "3-D packed");
  cr_assert_eq(atomic_load(&w.copies), 1);
  w_disarm();
  TH_OK(hsad_mem_free(vol));
  TH_OK(hsad_mem_free(dv));
  TH_OK(hsad_mem_free(out));
  TH_OK(hsad_mem_free(out2));
  TH_OK(hsad_runtime_close(e.rt));
}

/* Every bad input: its code and exact message, nothing written, nothing submitted; a zero
 * extent completes after its dependencies with nothing written. */
Test(memory_rect, bad_input_rows, .timeout = 60) {
  th_env_t e;
  rows_only();
  open_mem(&e);
  uint8_t *d = NULL, *h = NULL, *gone = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 4096, NULL, 0, (void **)&d));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_FINE, 4096, NULL, 0, (void **)&h));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 4096, NULL, 0, (void **)&gone));
  TH_OK(hsad_mem_free(gone));
  memset(d, 0x3c, 4096);
  fill_lcg(h, 4096, 1);
  uint8_t pageable[256];
  const char *w2 = "hsad_memcpy_2d_async", *w3 = "hsad_memcpy_3d_async";
  hsad_completion_t c = {0}, deps[65];
  memset(deps, 0, sizeof deps);
  uint64_t dl = th_in(TH_SEC);
  w_arm(false, NULL);
  TH_ERR_IS(hsad_memcpy_2d_async(NULL, d, 64, h, 64, 64, 4, NULL, 0, dl, &c),
            HSAD_ERR_INVALID_ARGUMENT, "%s: device is NULL", w2);
  TH_ERR_IS(hsad_memcpy_2d_async(e.dev, d, 64, h, 64, 64, 4, NULL, 0, dl, NULL),
            HSAD_ERR_INVALID_ARGUMENT, "%s: out_completion is NULL", w2);
  TH_ERR_IS(hsad_memcpy_2d_async(e.dev, d, 64, h, 64, 64, 4, NULL, 2, dl, &c),
            HSAD_ERR_INVALID_ARGUMENT, "%s: deps is NULL with dep_count 2", w2);
  TH_ERR_IS(hsad_memcpy_2d_async(e.dev, d, 64, h, 64, 64, 4, deps, 65, dl, &c),
            HSAD_ERR_INVALID_ARGUMENT, "%s: dep_count 65 is above 64", w2);
  TH_ERR_IS(hsad_memcpy_2d_async(e.dev, NULL, 64, h, 64, 64, 4, NULL, 0, dl, &c),
            HSAD_ERR_INVALID_ARGUMENT, "%s: the destination pointer is NULL", w2);
  TH_ERR_IS(hsad_memcpy_2d_async(e.dev, d, 64, NULL, 64, 64, 4, NULL, 0, dl, &c),
            HSAD_ERR_INVALID_ARGUMENT, "%s: the source pointer is NULL", w2);
  TH_ERR_IS(hsad_memcpy_2d_async(e.dev, d, 63, h, 64, 64, 4, NULL, 0, dl, &c),
            HSAD_ERR_INVALID_ARGUMENT, "%s: the destination pitch 63 is smaller than the width "
            "64 bytes (its rows would overlap)", w2);
  TH_ERR_IS(hsad_memcpy_2d_async(e.dev, d, 64, h, 0, 64, 4, NULL, 0, dl, &c),
            HSAD_ERR_INVALID_ARGUMENT, "%s: the source pitch 0 is smaller than the width 64 "
            "bytes (its rows would overlap)", w2);
  TH_ERR_IS(hsad_memcpy_2d_async(e.dev, d, SIZE_MAX / 2, h, 64, 64, 4, NULL, 0, dl, &c),
            HSAD_ERR_RANGE, "%s: the destination box (64 x 4 x 1 bytes, pitch %zu, slice pitch 0) "
            "spans more than size_t", w2, SIZE_MAX / 2);
  TH_ERR_IS(hsad_memcpy_2d_async(e.dev, d, 64, h, 64, 65, 64, NULL, 0, dl, &c),
            HSAD_ERR_INVALID_ARGUMENT, "%s: the destination pitch 64 is smaller than the width "
            "65 bytes (its rows would overlap)", w2);
  TH_ERR_IS(hsad_memcpy_2d_async(e.dev, d + 1, 64, h, 64, 64, 64, NULL, 0, dl, &c),
            HSAD_ERR_RANGE, "%s: the destination %p + 4096 bytes runs 1 bytes past the end of "
            "device memory at %p (4096 bytes)", w2, (void *)(d + 1), (void *)d);
  TH_ERR_IS(hsad_memcpy_2d_async(e.dev, d, 64, h + 64, 64, 64, 64, NULL, 0, dl, &c),
            HSAD_ERR_RANGE, "%s: the source %p + 4096 bytes runs 64 bytes past the end of "
            "host-fine memory at %p (4096 bytes)", w2, (void *)(h + 64), (void *)h);
  TH_ERR_IS(hsad_memcpy_2d_async(e.dev, gone, 64, h, 64, 64, 4, NULL, 0, dl, &c),
            HSAD_ERR_FREED, "%s: the destination %p lies in device memory that was freed (4096 "
            "bytes at %p)", w2, (void *)gone, (void *)gone);
  uint8_t pageable2[256];
  TH_ERR_IS(hsad_memcpy_2d_async(e.dev, pageable2, 64, pageable, 64, 64, 4, NULL, 0, dl, &c),
            HSAD_ERR_INVALID_ARGUMENT, "%s: the destination %p and the source %p are both "
            "pageable host memory: nothing for a GPU to copy (copy the rows with memcpy)", w2,
            (void *)pageable2, (void *)pageable);
  /* overlap: the first destination row that shares a byte with a source row */
  TH_ERR_IS(hsad_memcpy_2d_async(e.dev, d + 100, 128, d, 128, 64, 8, NULL, 0, dl, &c),
            HSAD_ERR_OVERLAP, "%s: destination row 0 of slice 0 (%p) and source row 1 of slice "
            "0 (%p) overlap", w2, (void *)(d + 100), (void *)(d + 128));
  TH_ERR_IS(hsad_memcpy_2d_async(e.dev, d + 200, 128, d, 128, 64, 8, NULL, 0, dl, &c),
            HSAD_ERR_OVERLAP, "%s: destination row 0 of slice 0 (%p) and source row 2 of slice "
            "0 (%p) overlap", w2, (void *)(d + 200), (void *)(d + 256));
  /* 3-D */
  hsad_pitched_ptr_t pd = {d, 64, 64 * 4}, ps = {h, 64, 64 * 4};
  hsad_extent_t ex = {64, 4, 4};
  TH_ERR_IS(hsad_memcpy_3d_async(e.dev, NULL, &ps, &ex, NULL, 0, dl, &c),
            HSAD_ERR_INVALID_ARGUMENT, "%s: dst is NULL", w3);
  TH_ERR_IS(hsad_memcpy_3d_async(e.dev, &pd, NULL, &ex, NULL, 0, dl, &c),
            HSAD_ERR_INVALID_ARGUMENT, "%s: src is NULL", w3);
  TH_ERR_IS(hsad_memcpy_3d_async(e.dev, &pd, &ps, NULL, NULL, 0, dl, &c),
            HSAD_ERR_INVALID_ARGUMENT, "%s: extent is NULL", w3);
  hsad_pitched_ptr_t bad_slice = {d, 64, 255};
  TH_ERR_IS(hsad_memcpy_3d_async(e.dev, &bad_slice, &ps, &ex, NULL, 0, dl, &c),
            HSAD_ERR_INVALID_ARGUMENT, "%s: the destination slice pitch 255 is smaller than "
            "pitch 64 x height 4 = 256 bytes (its slices would overlap)", w3);
  hsad_pitched_ptr_t huge = {h, SIZE_MAX / 2, SIZE_MAX};
  TH_ERR_IS(hsad_memcpy_3d_async(e.dev, &pd, &huge, &ex, NULL, 0, dl, &c),
            HSAD_ERR_RANGE, "%s: the source pitch %zu x height 4 overflows size_t", w3,
            SIZE_MAX / 2);
  /* slices interleave but share no byte: legal; sharing one: refused */
  hsad_pitched_ptr_t a = {d, 64, 512}, b = {d + 256, 64, 512};
  hsad_extent_t ex2 = {64, 4, 4};
  TH_ERR_IS(hsad_memcpy_3d_async(e.dev, &b, &a, &(hsad_extent_t){64, 5, 4}, NULL, 0, dl, &c),
            HSAD_ERR_OVERLAP, "%s: destination row 0 of slice 0 (%p) and source row 4 of slice "
            "0 (%p) overlap", w3, (void *)(d + 256), (void *)(d + 256));
  cr_assert_eq(atomic_load(&w.copies) + atomic_load(&w.rects), 0, "nothing was submitted");
  for (int i = 0; i < 4096; i++) cr_assert_eq(d[i], 0x3c, "d[%d] was written", i);
  uint8_t want[4096];
  memcpy(want, d, sizeof want);
  host_box(want + 256, 64, 512, d, 64, 512, 64, 4, 4);
  hsad_completion_t ok;
  TH_OK(hsad_memcpy_3d_async(e.dev, &b, &a, &ex2, NULL, 0, dl, &ok));
  wait_ok(&ok);
  same_bytes(d, want, sizeof want, "interleaved slices");
  /* zero extent: nothing copied (not even checked), the completion comes after the deps */
  memset(d, 0x3c, 4096);
  hsad_completion_t z;
  TH_OK(hsad_memcpy_2d_async(e.dev, NULL, 0, NULL, 0, 0, 4, &ok, 1, dl, &z));
  wait_ok(&z);
  TH_OK(hsad_memcpy_3d_async(e.dev, &pd, &ps, &(hsad_extent_t){64, 4, 0}, NULL, 0, dl, &z));
  wait_ok(&z);
  for (int i = 0; i < 4096; i++) cr_assert_eq(d[i], 0x3c);
  w_disarm();
  TH_OK(hsad_mem_free(d));
  TH_OK(hsad_mem_free(h));
  TH_OK(hsad_runtime_close(e.rt));
}

/* A later row ROCr refuses stops the copy: the completion is still reached, the rows before
 * it are exact, the rest untouched, and the waiter is told which run and how many bytes. The
 * first row refused: HSAD_ERR_HSA from the call, nothing in flight, nothing written. */
Test(memory_rect, refused_later_row_is_reported, .timeout = 60) {
  th_env_t e;
  rows_only();
  open_mem(&e);
  uint8_t *h = NULL, *d = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_FINE, 4096, NULL, 0, (void **)&h));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 4096, NULL, 0, (void **)&d));
  fill_lcg(h, 4096, 9);
  memset(d, 0, 4096);
  w_arm(false, d + 3 * 100);
  hsad_completion_t c;
  TH_OK(hsad_memcpy_2d_async(e.dev, d, 100, h, 99, 90, 8, NULL, 0, th_in(TH_SEC), &c));
  const char *oor = NULL;
  hsa_status_t (*str)(hsa_status_t, const char **) = NULL;
  *(void **)&str = dlsym(RTLD_DEFAULT, "hsa_status_string");
  cr_assert(str && str(HSA_STATUS_ERROR_OUT_OF_RESOURCES, &oor) == HSA_STATUS_SUCCESS);
  TH_ERR_IS(hsad_completion_wait(&c, th_in(20 * TH_SEC)), HSAD_ERR_HSA,
            "hsad_memcpy_2d_async: hsa_amd_memory_async_copy refused row run 3 of 8 (90 bytes at "
            "destination %p): HSA status 0x1008 (%s); the copy stopped there: 450 of 720 bytes "
            "were not copied", (void *)(d + 300), oor);
  TH_ERR_IS(hsad_mem_result(&c), HSAD_ERR_HSA,
            "hsad_memcpy_2d_async: hsa_amd_memory_async_copy refused row run 3 of 8 (90 bytes at "
            "destination %p): HSA status 0x1008 (%s); the copy stopped there: 450 of 720 bytes "
            "were not copied", (void *)(d + 300), oor);
  uint8_t want[4096];
  memset(want, 0, sizeof want);
  host_box(want, 100, 0, h, 99, 0, 90, 3, 1);
  same_bytes(d, want, sizeof want, "rows before the refusal");
  /* the first row refused */
  memset(d, 0, 4096);
  w_arm(false, d);
  hsad_completion_t c2;
  memset(&c2, 0x11, sizeof c2);
  TH_ERR_IS(hsad_memcpy_2d_async(e.dev, d, 100, h, 99, 90, 8, NULL, 0, th_in(TH_SEC), &c2),
            HSAD_ERR_HSA, "hsad_memcpy_2d_async: hsa_amd_memory_async_copy(row run 0 of 8, 90 "
            "bytes, %p <- %p): HSA status 0x1008 (%s)", (void *)d, (void *)h, oor);
  cr_assert_null(c2.queue, "no completion for a refused copy");
  for (int i = 0; i < 4096; i++) cr_assert_eq(d[i], 0);
  w_disarm();
  TH_OK(hsad_mem_free(h));
  TH_OK(hsad_mem_free(d));
  TH_OK(hsad_runtime_close(e.rt));
}

/* ---- the copy kernel (kernels/copy_rect.cl) and pageable sides ---------------------------- */

static hsad_copy_rect_stats_t stats_now(void) {
  hsad_copy_rect_stats_t s;
  TH_OK(hsad_copy_rect_stats(&s));
  return s;
}

/* The kernel on kfd-emu (no SDMA engine: the 4-aligned box tries ROCr's rectangle copy once,
 * then goes to the kernel): 2-D device to device with pitches 131 and 97 (not multiples of 4)
 * at odd offsets (7, 3), widths 61 (three 16-byte pieces and 13 bytes), 5 (under one piece)
 * and 48 (whole pieces); 3-D host-fine to device, pitches 53 / 71, slice pitches with gaps
 * (53 * 9 + 3, 71 * 8 + 1), odd offsets. Each destination equals a host loop's result byte
 * for byte, bytes outside the box included; no row DMA was made (one kernel per box). */
Test(memory_rect, blit_exact_2d_3d, .timeout = 120) {
  th_env_t e;
  open_mem(&e);
  enum { SP = 131, DP = 97, H = 40, N = SP * (H + 2), M = DP * (H + 2) };
  uint8_t *a = NULL, *b = NULL, *hv = NULL, *dv = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, N, NULL, 0, (void **)&a));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, M, NULL, 0, (void **)&b));
  fill_lcg(a, N, 21);
  static uint8_t want[M];
  const size_t widths[3] = {61, 5, 48};
  for (int i = 0; i < 3; i++) {
    memset(b, 0x77, M);
    memset(want, 0x77, M);
    host_box(want + 3, DP, 0, a + 7, SP, 0, widths[i], H, 1);
    w_arm(false, NULL);
    hsad_copy_rect_stats_t s0 = stats_now();
    hsad_completion_t c;
    TH_OK(hsad_memcpy_2d_async(e.dev, b + 3, DP, a + 7, SP, widths[i], H, NULL, 0,
                               th_in(TH_SEC), &c));
    wait_ok(&c);
    same_bytes(b, want, M, "2-D kernel");
    hsad_copy_rect_stats_t s1 = stats_now();
    cr_assert_eq(s1.blit - s0.blit, 1, "width %zu: one kernel", widths[i]);
    cr_assert_eq(s1.rows - s0.rows, 0);
    cr_assert_eq(atomic_load(&w.copies), 0, "width %zu: no row DMA", widths[i]);
  }
  /* 4-aligned pitches: the rectangle copy is tried (no SDMA engine on kfd-emu), then the kernel */
  memset(b, 0x77, M);
  memset(want, 0x77, M);
  host_box(want, 96, 0, a, 128, 0, 64, H, 1);
  w_arm(false, NULL);
  hsad_completion_t c;
  TH_OK(hsad_memcpy_2d_async(e.dev, b, 96, a, 128, 64, H, NULL, 0, th_in(TH_SEC), &c));
  wait_ok(&c);
  same_bytes(b, want, M, "2-D kernel after the SDMA refusal");
  cr_assert_eq(atomic_load(&w.rects), 1);
  cr_assert_eq(w.rect_status, HSA_STATUS_ERROR_OUT_OF_RESOURCES);
  cr_assert_eq(atomic_load(&w.copies), 0);
  /* 3-D: host-fine volume into a device volume */
  enum { HP = 53, HS = 53 * 9 + 3, HZ = 6, VP = 71, VS = 71 * 8 + 1, VZ = 5, W = 45, BH = 7,
         BD = 4 };
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_HOST_FINE, HS * HZ, NULL, 0, (void **)&hv));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, VS * VZ, NULL, 0, (void **)&dv));
  fill_lcg(hv, HS * HZ, 23);
  memset(dv, 0x19, VS * VZ);
  static uint8_t want3[VS * VZ];
  memset(want3, 0x19, sizeof want3);
  const uint8_t *s0p = hv + 1 * HS + 1 * HP + 5;
  uint8_t *d0p = dv + 1 * VS + 1 * VP + 3;
  host_box(want3 + (d0p - dv), VP, VS, s0p, HP, HS, W, BH, BD);
  w_arm(false, NULL);
  hsad_copy_rect_stats_t s0 = stats_now();
  hsad_pitched_ptr_t pd = {d0p, VP, VS}, ps = {(void *)s0p, HP, HS};
  TH_OK(hsad_memcpy_3d_async(e.dev, &pd, &ps, &(hsad_extent_t){W, BH, BD}, NULL, 0,
                             th_in(TH_SEC), &c));
  wait_ok(&c);
  same_bytes(dv, want3, sizeof want3, "3-D kernel");
  cr_assert_eq(stats_now().blit - s0.blit, 1);
  cr_assert_eq(atomic_load(&w.copies), 0);
  w_disarm();
  TH_OK(hsad_mem_free(a));
  TH_OK(hsad_mem_free(b));
  TH_OK(hsad_mem_free(hv));
  TH_OK(hsad_mem_free(dv));
  TH_OK(hsad_runtime_close(e.rt));
}

/* Below HSAD_COPY_RECT_BLIT_MIN_DMAS rows the box goes by rows (3 rows: 3 DMAs, no kernel);
 * at it, one kernel. */
Test(memory_rect, blit_threshold, .timeout = 60) {
  th_env_t e;
  open_mem(&e);
  uint8_t *a = NULL, *b = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 4096, NULL, 0, (void **)&a));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 4096, NULL, 0, (void **)&b));
  fill_lcg(a, 4096, 2);
  for (uint32_t rows = HSAD_COPY_RECT_BLIT_MIN_DMAS - 1; rows <= HSAD_COPY_RECT_BLIT_MIN_DMAS;
       rows++) {
    memset(b, 0, 4096);
    uint8_t want[4096];
    memset(want, 0, sizeof want);
    host_box(want + 1, 33, 0, a + 2, 35, 0, 30, rows, 1);
    w_arm(false, NULL);
    hsad_copy_rect_stats_t s0 = stats_now();
    hsad_completion_t c;
    TH_OK(hsad_memcpy_2d_async(e.dev, b + 1, 33, a + 2, 35, 30, rows, NULL, 0, th_in(TH_SEC),
                               &c));
    wait_ok(&c);
    same_bytes(b, want, sizeof want, "threshold");
    hsad_copy_rect_stats_t s1 = stats_now();
    bool blit = rows >= HSAD_COPY_RECT_BLIT_MIN_DMAS;
    cr_assert_eq(s1.blit - s0.blit, blit ? 1 : 0, "%u rows", rows);
    cr_assert_eq(s1.rows - s0.rows, blit ? 0 : 1, "%u rows", rows);
    cr_assert_eq(atomic_load(&w.copies), blit ? 0 : rows, "%u rows", rows);
  }
  w_disarm();
  TH_OK(hsad_mem_free(a));
  TH_OK(hsad_mem_free(b));
  TH_OK(hsad_runtime_close(e.rt));
}

/* A pageable (malloc'd) source: rewritten right after the call returned, with the command
 * processor stalling 30 ms before every packet (KFD_EMU_CP_STALL_MS=30) and the copy gated
 * behind a dependency opened only after the rewrite (a barrier on a raw signal on a queue of
 * the test: the device side cannot start earlier however late this thread runs), the
 * destination still gets the bytes of call time: a 2-D box of 61 x 40 (one staging chunk, packed: one kernel),
 * a 3-D box (5 slices), and a 2-D box of 2999 x 2796 bytes (8.4 MB: 4 chunks of 699 rows, whole row
 * groups, each staged and submitted before the call returns). Bytes outside every box stay. */
Test(memory_rect, pageable_source_reusable_at_return, .timeout = 180) {
  setenv("KFD_EMU_CP_STALL_MS", "30", 1);
  th_env_t e;
  open_mem(&e);
  struct { size_t sp, ss, dp, ds, w, h, d; } cases[3] = {
      {131, 0, 97, 0, 61, 40, 1}, {53, 53 * 9 + 3, 71, 71 * 8 + 1, 45, 7, 5},
      {3001, 0, 3000, 0, 2999, 2796, 1}};
  hsa_status_t (*sig_create)(hsa_signal_value_t, uint32_t, const hsa_agent_t *, hsa_signal_t *);
  hsa_status_t (*sig_destroy)(hsa_signal_t);
  void (*sig_store)(hsa_signal_t, hsa_signal_value_t);
  *(void **)&sig_create = dlsym(RTLD_DEFAULT, "hsa_signal_create");
  *(void **)&sig_destroy = dlsym(RTLD_DEFAULT, "hsa_signal_destroy");
  *(void **)&sig_store = dlsym(RTLD_DEFAULT, "hsa_signal_store_screlease");
  cr_assert(sig_create && sig_destroy && sig_store);
  hsad_queue_t *gq = NULL;
  TH_OK(hsad_queue_create(e.dev, &(hsad_queue_options_t){.size = 64}, &gq));
  for (int i = 0; i < 3; i++) {
    size_t sfoot = (cases[i].d - 1) * cases[i].ss + (cases[i].h - 1) * cases[i].sp + cases[i].w;
    size_t dfoot = (cases[i].d - 1) * cases[i].ds + (cases[i].h - 1) * cases[i].dp + cases[i].w;
    hsa_signal_t gate;
    cr_assert_eq(sig_create(1, 0, NULL, &gate), HSA_STATUS_SUCCESS);
    hsad_completion_t gc;
    TH_OK(hsad_queue_barrier_signals(gq, NULL, 0, &gate, 1, (hsa_signal_t){0}, th_in(TH_SEC),
                                     &gc));
    uint8_t *src = malloc(sfoot + 8), *keep = malloc(sfoot + 8), *want = malloc(dfoot + 16);
    uint8_t *dst = NULL;
    TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, dfoot + 16, NULL, 0, (void **)&dst));
    fill_lcg(src, sfoot + 8, 31 + i);
    memcpy(keep, src, sfoot + 8);
    memset(dst, 0x42, dfoot + 16);
    memset(want, 0x42, dfoot + 16);
    host_box(want + 5, cases[i].dp, cases[i].ds, keep + 3, cases[i].sp, cases[i].ss, cases[i].w,
             cases[i].h, cases[i].d);
    hsad_copy_rect_stats_t s0 = stats_now();
    hsad_pitched_ptr_t pd = {dst + 5, cases[i].dp, cases[i].ds},
                       ps = {src + 3, cases[i].sp, cases[i].ss};
    hsad_completion_t c;
    TH_OK(hsad_memcpy_3d_async(e.dev, &pd, &ps,
                               &(hsad_extent_t){cases[i].w, cases[i].h, cases[i].d}, &gc, 1,
                               th_in(TH_SEC), &c));
    memset(src, 0xff, sfoot + 8); /* the caller reuses its buffer at once */
    cr_assert(!hsad_completion_done(&c), "case %d: gated: not done before the gate opens", i);
    sig_store(gate, 0);
    wait_ok(&c);
    sig_destroy(gate);
    TH_OK(hsad_mem_result(&c));
    same_bytes(dst, want, dfoot + 16, "pageable source");
    hsad_copy_rect_stats_t s1 = stats_now();
    cr_assert_eq(s1.staged - s0.staged, 1, "case %d", i);
    /* packed staging rows: each chunk is one piece (kernel), never a DMA per row */
    cr_assert_eq(s1.blit - s0.blit, i == 2 ? 4 : 1, "case %d: %llu kernels", i,
                 (unsigned long long)(s1.blit - s0.blit));
    cr_assert_eq(s1.rows - s0.rows, 0, "case %d", i);
    free(src);
    free(keep);
    free(want);
    TH_OK(hsad_mem_free(dst));
  }
  hsad_queue_destroy(gq);
  TH_OK(hsad_runtime_close(e.rt));
}

/* A pageable (malloc'd) destination gets exactly the box (2-D with odd pitches and offsets,
 * 3-D with slice gaps, a 4-chunk 2-D box of 8.4 MB) and every byte outside it is untouched;
 * it is complete when the completion is reached (a copy queue barrier after it: the next
 * copy, from it, sees every byte). */
Test(memory_rect, pageable_destination_exact, .timeout = 180) {
  th_env_t e;
  open_mem(&e);
  struct { size_t sp, ss, dp, ds, w, h, d; } cases[3] = {
      {97, 0, 131, 0, 61, 40, 1}, {71, 71 * 8 + 1, 53, 53 * 9 + 3, 45, 7, 5},
      {3000, 0, 3001, 0, 2999, 2796, 1}};
  for (int i = 0; i < 3; i++) {
    size_t sfoot = (cases[i].d - 1) * cases[i].ss + (cases[i].h - 1) * cases[i].sp + cases[i].w;
    size_t dfoot = (cases[i].d - 1) * cases[i].ds + (cases[i].h - 1) * cases[i].dp + cases[i].w;
    uint8_t *src = NULL, *dst = malloc(dfoot + 16), *want = malloc(dfoot + 16);
    TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, sfoot + 8, NULL, 0, (void **)&src));
    fill_lcg(src, sfoot + 8, 41 + i);
    memset(dst, 0xa5, dfoot + 16);
    memset(want, 0xa5, dfoot + 16);
    host_box(want + 9, cases[i].dp, cases[i].ds, src + 1, cases[i].sp, cases[i].ss, cases[i].w,
             cases[i].h, cases[i].d);
    hsad_copy_rect_stats_t s0 = stats_now();
    hsad_pitched_ptr_t pd = {dst + 9, cases[i].dp, cases[i].ds},
                       ps = {src + 1, cases[i].sp, cases[i].ss};
    hsad_completion_t c;
    TH_OK(hsad_memcpy_3d_async(e.dev, &pd, &ps,
                               &(hsad_extent_t){cases[i].w, cases[i].h, cases[i].d}, NULL, 0,
                               th_in(TH_SEC), &c));
    wait_ok(&c);
    TH_OK(hsad_mem_result(&c));
    same_bytes(dst, want, dfoot + 16, "pageable destination");
    hsad_copy_rect_stats_t s1 = stats_now();
    cr_assert_eq(s1.staged - s0.staged, 1, "case %d", i);
    cr_assert_eq(s1.blit - s0.blit, i == 2 ? 4 : 1, "case %d", i);
    free(dst);
    free(want);
    TH_OK(hsad_mem_free(src));
  }
  TH_OK(hsad_runtime_close(e.rt));
}

/* A pageable source staged (one chunk, by rows: the kernel off) whose row run 3 ROCr refuses:
 * the completion is reached with the refusal kept (the direct path's message), rows 0-2 are
 * exact, the rest untouched; its first row refused: HSAD_ERR_HSA from the call, nothing
 * written, and a later copy through the same pool works. */
Test(memory_rect, pageable_source_refused_row, .timeout = 60) {
  th_env_t e;
  rows_only();
  open_mem(&e);
  uint8_t *d = NULL, *h = malloc(4096);
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, 4096, NULL, 0, (void **)&d));
  fill_lcg(h, 4096, 13);
  memset(d, 0, 4096);
  const char *oor = NULL;
  hsa_status_t (*str)(hsa_status_t, const char **) = NULL;
  *(void **)&str = dlsym(RTLD_DEFAULT, "hsa_status_string");
  cr_assert(str && str(HSA_STATUS_ERROR_OUT_OF_RESOURCES, &oor) == HSA_STATUS_SUCCESS);
  w_arm(false, d + 3 * 100);
  hsad_completion_t c;
  TH_OK(hsad_memcpy_2d_async(e.dev, d, 100, h, 99, 90, 8, NULL, 0, th_in(TH_SEC), &c));
  TH_ERR_IS(hsad_completion_wait(&c, th_in(20 * TH_SEC)), HSAD_ERR_HSA,
            "hsad_memcpy_2d_async: hsa_amd_memory_async_copy refused row run 3 of 8 (90 bytes at "
            "destination %p): HSA status 0x1008 (%s); the copy stopped there: 450 of 720 bytes "
            "were not copied", (void *)(d + 300), oor);
  uint8_t want[4096];
  memset(want, 0, sizeof want);
  host_box(want, 100, 0, h, 99, 0, 90, 3, 1);
  same_bytes(d, want, sizeof want, "rows before the refusal");
  memset(d, 0, 4096);
  w_arm(false, d);
  hsad_completion_t c2 = {0};
  /* the source named is the staging block (its address is the pool's): prefix and suffix */
  cr_assert_eq(hsad_memcpy_2d_async(e.dev, d, 100, h, 99, 90, 8, NULL, 0, th_in(TH_SEC), &c2),
               HSAD_ERR_HSA);
  char pre[160], suf[512];
  snprintf(pre, sizeof pre, "hsad_memcpy_2d_async: hsa_amd_memory_async_copy(row run 0 of 8, 90 "
           "bytes, %p <- 0x", (void *)d);
  snprintf(suf, sizeof suf, "): HSA status 0x1008 (%s)", oor);
  const char *m = hsad_last_error();
  cr_assert(strncmp(m, pre, strlen(pre)) == 0 && strlen(m) > strlen(suf) &&
            strcmp(m + strlen(m) - strlen(suf), suf) == 0, "message: %s", m);
  cr_assert_null(c2.queue, "no completion for a refused copy");
  w_disarm();
  for (int i = 0; i < 4096; i++) cr_assert_eq(d[i], 0);
  memset(want, 0, sizeof want);
  host_box(want, 100, 0, h, 99, 0, 90, 8, 1);
  TH_OK(hsad_memcpy_2d_async(e.dev, d, 100, h, 99, 90, 8, NULL, 0, th_in(TH_SEC), &c2));
  wait_ok(&c2);
  same_bytes(d, want, sizeof want, "after the refusals");
  free(h);
  TH_OK(hsad_mem_free(d));
  TH_OK(hsad_runtime_close(e.rt));
}

/* Stream order on kfd-emu with the copy kernel: on one queue, fill(A, 0x11111111) delayed 20 ms
 * (KFD_EMU_DELAY_KERNEL=fill), then the box A -> B after it (its completion as the dependency),
 * then, after a barrier on the copy's completion, fill(A, 0x22222222). B's box must hold
 * 0x11 bytes (not the 0x33 A held before the first fill: the copy waited for it; not 0x22: the
 * second fill waited for the copy), bytes outside the box 0x44, and A ends 0x22. The same with
 * a pageable destination (staged: the unpack happens before the completion). */
Test(memory_rect, stream_order_kernel_before_and_after, .timeout = 120) {
  setenv("KFD_EMU_DELAY_US", "20000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "fill", 1);
  th_env_t e;
  open_mem(&e);
  char path[512];
  snprintf(path, sizeof path, "%s/fill-%s-v5.hsaco", TEST_KERNDIR, hsad_device_info(e.dev)->name);
  hsad_program_t *p = NULL;
  const hsad_device_kernel_t *k = NULL;
  TH_OK(hsad_program_load_file(e.dev, path, &p));
  TH_OK(hsad_program_kernel(p, "fill", &k));
  hsad_queue_t *q = NULL;
  TH_OK(hsad_queue_create(e.dev, &(hsad_queue_options_t){.size = 64}, &q));
  enum { AP = 100, H = 30, N = AP * H, BP = 77, W = 61, M = BP * H };
  uint8_t *a = NULL, *b = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, N, NULL, 0, (void **)&a));
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, M, NULL, 0, (void **)&b));
  uint8_t *pb = malloc(M);
  for (int pass = 0; pass < 2; pass++) {
    uint8_t *dst = pass ? pb : b;
    memset(a, 0x33, N);
    memset(dst, 0x44, M);
    uint32_t v1 = 0x11111111u, v2 = 0x22222222u, n = N / 4;
    hsad_karg_t a1[3] = {HSAD_KARG_PTR(a), HSAD_KARG_VAL(v1), HSAD_KARG_VAL(n)};
    hsad_karg_t a2[3] = {HSAD_KARG_PTR(a), HSAD_KARG_VAL(v2), HSAD_KARG_VAL(n)};
    hsad_launch_t l1 = {.dims = 1, .grid = {768}, .block = {256}, .args = a1, .arg_count = 3};
    hsad_launch_t l2 = {.dims = 1, .grid = {768}, .block = {256}, .args = a2, .arg_count = 3};
    hsad_completion_t k1, cc, k2;
    hsad_copy_rect_stats_t s0 = stats_now();
    TH_OK(hsad_kernel_dispatch(q, k, &l1, th_in(TH_SEC), &k1, NULL));
    TH_OK(hsad_memcpy_2d_async(e.dev, dst + 3, BP, a + 1, AP, W, H, &k1, 1, th_in(TH_SEC), &cc));
    TH_OK(hsad_queue_barrier(q, &cc, 1, th_in(TH_SEC), NULL));
    TH_OK(hsad_kernel_dispatch(q, k, &l2, th_in(TH_SEC), &k2, NULL));
    TH_OK(hsad_completion_wait(&k2, th_in(20 * TH_SEC)));
    cr_assert(hsad_completion_done(&cc), "the second fill ran after the copy");
    TH_OK(hsad_completion_wait(&cc, th_in(TH_SEC)));
    hsad_copy_rect_stats_t s1 = stats_now();
    cr_assert_eq(s1.blit - s0.blit, 1, "pass %d: the copy kernel", pass);
    cr_assert_eq(s1.staged - s0.staged, pass ? 1 : 0);
    for (size_t y = 0; y < H; y++)
      for (size_t x = 0; x < BP; x++) {
        size_t i = y * BP + x;
        /* row r of the box covers [3 + r * BP, 3 + r * BP + W) */
        bool in = false;
        for (size_t r = 0; r < H; r++)
          if (i >= 3 + r * BP && i < 3 + r * BP + W) in = true;
        uint8_t want = in ? 0x11 : 0x44;
        cr_assert_eq(dst[i], want, "pass %d: byte %zu is 0x%02x, want 0x%02x", pass, i, dst[i],
                     want);
      }
    for (size_t i = 0; i < N; i++) cr_assert_eq(a[i], 0x22, "a[%zu] = 0x%02x", i, a[i]);
  }
  free(pb);
  hsad_queue_destroy(q);
  hsad_program_destroy(p);
  TH_OK(hsad_mem_free(a));
  TH_OK(hsad_mem_free(b));
  TH_OK(hsad_runtime_close(e.rt));
}

/* ---- hsad_mem_grant ------------------------------------------------------------------------ */

/* Two emulated GPUs, strict access: device 0's memory x (not granted to device 1) read by a
 * saxpy kernel on device 1 faults the queue; a copy whose blit runs on device 1 is refused
 * (HSAD_ERR_NO_ACCESS). After hsad_mem_grant(x + 100, device 1) (an interior address: the
 * whole allocation), the copy works and a kernel on device 1 reads the right values; a second
 * grant is HSAD_OK; the errors name the pointer. */
Test(memory_rect, grant_to_second_gpu, .timeout = 120) {
  setenv("KFD_EMU_GPUS", "2", 1);
  setenv("KFD_EMU_ACCESS", "strict", 1);
  th_env_t e;
  open_mem(&e);
  hsad_device_t *g1 = NULL;
  TH_OK(hsad_device_get(e.rt, 1, &g1));
  enum { N = 1000 };
  float *x = NULL, *y = NULL, *y1 = NULL;
  TH_OK(hsad_mem_alloc(e.dev, HSAD_MEM_DEVICE, N * 4, NULL, 0, (void **)&x));
  TH_OK(hsad_mem_alloc(g1, HSAD_MEM_HOST_FINE, N * 4, NULL, 0, (void **)&y));
  TH_OK(hsad_mem_alloc(g1, HSAD_MEM_DEVICE, N * 4, NULL, 0, (void **)&y1));
  for (uint32_t i = 0; i < N; i++) x[i] = (float)i, y[i] = 0.5f;
  hsad_mem_info_t info;
  TH_OK(hsad_mem_info(x, &info));
  cr_assert_eq(info.access_mask, 0x1);
  /* a copy device 1 runs (its memory -> x) is refused before the grant */
  TH_ERR_IS(hsad_memcpy(g1, x, y1, 64, NULL, th_in(TH_SEC)), HSAD_ERR_NO_ACCESS,
            "hsad_memcpy: device 1 runs the blit and cannot reach the destination %p (device "
            "memory at %p, granted to device mask 0x1): add device 1 to its access list",
            (void *)x, (void *)x);
  char path[512];
  snprintf(path, sizeof path, "%s/saxpy-%s-v5.hsaco", TEST_KERNDIR, hsad_device_info(g1)->name);
  hsad_program_t *p = NULL;
  const hsad_device_kernel_t *k = NULL;
  TH_OK(hsad_program_load_file(g1, path, &p));
  TH_OK(hsad_program_kernel(p, "saxpy", &k));
  hsad_queue_t *q = NULL;
  TH_OK(hsad_queue_create(g1, &(hsad_queue_options_t){.size = 64}, &q));
  float a = 2.0f;
  uint32_t n = N;
  hsad_karg_t args[4] = {HSAD_KARG_VAL(a), HSAD_KARG_PTR(x), HSAD_KARG_PTR(y), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {1024}, .block = {256}, .args = args, .arg_count = 4};
  hsad_completion_t c;
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), &c, NULL));
  char msg[512];
  snprintf(msg, sizeof msg, "queue %llu on device 1 (gfx90a:sramecc+:xnack-) faulted: HSA status "
           "0x29 (HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access "
           "memory beyond the largest legal address.); destroy it and create a new queue",
           (unsigned long long)hsad_queue_hsa(q)->id);
  TH_ERR_IS(hsad_completion_wait(&c, th_in(20 * TH_SEC)), HSAD_ERR_QUEUE_ERROR, "%s", msg);
  hsad_queue_destroy(q);
  /* the grant: an interior address stands for the whole allocation */
  TH_OK(hsad_mem_grant((uint8_t *)x + 100, g1));
  TH_OK(hsad_mem_info(x, &info));
  cr_assert_eq(info.access_mask, 0x3);
  TH_OK(hsad_mem_grant(x, g1)); /* idempotent */
  TH_OK(hsad_mem_grant(x, e.dev));
  TH_OK(hsad_mem_info(x, &info));
  cr_assert_eq(info.access_mask, 0x3);
  for (uint32_t i = 0; i < N; i++) y[i] = 0.5f;
  TH_OK(hsad_queue_create(g1, &(hsad_queue_options_t){.size = 64}, &q));
  th_run(q, k, &l, TH_SEC, 20 * TH_SEC);
  for (uint32_t i = 0; i < N; i++)
    cr_assert_eq(y[i], 2.0f * (float)i + 0.5f, "y[%u] = %g", i, (double)y[i]);
  TH_OK(hsad_queue_error(q));
  /* and the copy device 1 runs: y1 (device 1) -> x */
  for (uint32_t i = 0; i < N; i++) y1[i] = -(float)i;
  TH_OK(hsad_memcpy(g1, x, y1, N * 4, NULL, th_in(20 * TH_SEC)));
  for (uint32_t i = 0; i < N; i++) cr_assert_eq(x[i], -(float)i, "x[%u] = %g", i, (double)x[i]);
  /* errors name the pointer */
  int stack_var = 0;
  TH_ERR_IS(hsad_mem_grant(NULL, g1), HSAD_ERR_INVALID_ARGUMENT, "hsad_mem_grant: ptr is NULL");
  TH_ERR_IS(hsad_mem_grant(&stack_var, g1), HSAD_ERR_NOT_ALLOCATED,
            "hsad_mem_grant: %p is no allocation of the library (hsad_mem_alloc, "
            "hsad_mem_alloc_async, hsad_host_pool_alloc)", (void *)&stack_var);
  TH_ERR_IS(hsad_mem_grant(x, NULL), HSAD_ERR_INVALID_ARGUMENT, "hsad_mem_grant: device is NULL");
  uint8_t *reg = aligned_alloc(4096, 8192);
  TH_OK(hsad_mem_register(e.dev, reg, 8192, NULL, 0, NULL));
  TH_ERR_IS(hsad_mem_grant(reg + 8, g1), HSAD_ERR_UNSUPPORTED,
            "hsad_mem_grant: %p lies in registered memory (8192 bytes at %p): ROCr grants "
            "locked memory only when it is locked (hsa_amd_memory_lock_to_pool); unregister it "
            "and register it again with device 1 in its access list", (void *)(reg + 8),
            (void *)reg);
  TH_OK(hsad_mem_unregister(reg));
  free(reg);
  hsad_queue_destroy(q);
  hsad_program_destroy(p);
  TH_OK(hsad_mem_free(y1));
  TH_OK(hsad_mem_free(y));
  TH_OK(hsad_mem_free(x));
  TH_ERR_IS(hsad_mem_grant(x, g1), HSAD_ERR_FREED,
            "hsad_mem_grant: %p lies in device memory that was freed (4000 bytes at %p)",
            (void *)x, (void *)x);
  TH_OK(hsad_runtime_close(e.rt));
}
