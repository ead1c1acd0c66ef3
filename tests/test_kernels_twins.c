/* test_kernels_twins.c - the twins alone, called the way kfd-emu's CP calls them (one call per
 * workgroup, x fastest, LDS zeroed per workgroup), without ROCr: ROCr blit kernel
 * identification by exact header bytes, ROCr blit twins against ROCr's own kernarg arithmetic
 * for many sizes and alignments, ROCclr blit twin edge cases, and the argument checks (metadata
 * mismatch, NULL buffers, LDS bounds, unsupported shapes). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tools/kfd-emu/blit_rocr.h"
#include "tools/kfd-emu/kfd_emu_twin.h"

/* ---------------------------------------------------------------- a minimal CP */

typedef struct tw_launch {
  kfd_emu_arg_t args[16];
  uint32_t arg_count;
  uint8_t kernarg[256];
  uint32_t kernarg_size;
  uint32_t dims, grid[3], block[3], group_size;
} tw_launch_t;

/* Appends an explicit argument at the next offset aligned to its size (max 8), as the AMDGPU
 * ABI lays out OpenCL arguments; returns its offset. */
static uint32_t tw_add(tw_launch_t *l, kfd_emu_arg_kind_t kind, const void *v, uint32_t size) {
  uint32_t align = size >= 8 ? 8 : size;
  uint32_t off = (l->kernarg_size + align - 1) / align * align;
  l->args[l->arg_count++] = (kfd_emu_arg_t){off, size, kind};
  memcpy(l->kernarg + off, v, size);
  l->kernarg_size = off + size;
  return off;
}

static void tw_ptr(tw_launch_t *l, const void *p) { tw_add(l, KFD_EMU_ARG_GLOBAL_BUFFER, &p, 8); }
static void tw_u32(tw_launch_t *l, uint32_t v) { tw_add(l, KFD_EMU_ARG_BY_VALUE, &v, 4); }
static void tw_u64(tw_launch_t *l, uint64_t v) { tw_add(l, KFD_EMU_ARG_BY_VALUE, &v, 8); }
static void tw_f32(tw_launch_t *l, float v) { tw_add(l, KFD_EMU_ARG_BY_VALUE, &v, 4); }

static void tw_shape(tw_launch_t *l, uint32_t dims, uint32_t gx, uint32_t gy, uint32_t gz,
                     uint32_t bx, uint32_t by, uint32_t bz) {
  l->dims = dims;
  l->grid[0] = gx, l->grid[1] = gy, l->grid[2] = gz;
  l->block[0] = bx, l->block[1] = by, l->block[2] = bz;
}

/* Runs fn over every workgroup; returns the first nonzero twin result. */
static int tw_run(kfd_emu_twin_fn fn, const tw_launch_t *l) {
  hsa_kernel_dispatch_packet_t pkt;
  memset(&pkt, 0, sizeof pkt);
  pkt.group_segment_size = l->group_size;
  pkt.grid_size_x = l->grid[0], pkt.grid_size_y = l->grid[1], pkt.grid_size_z = l->grid[2];
  pkt.workgroup_size_x = (uint16_t)l->block[0];
  pkt.workgroup_size_y = (uint16_t)l->block[1];
  pkt.workgroup_size_z = (uint16_t)l->block[2];
  uint8_t *lds = calloc(1, l->group_size ? l->group_size : 1);
  kfd_emu_dispatch_t d = {
      .packet = &pkt, .kernel_name = "test", .kernarg = l->kernarg,
      .kernarg_size = l->kernarg_size, .args = l->args, .arg_count = l->arg_count,
      .dims = l->dims, .group_segment = l->group_size ? lds : NULL,
  };
  memcpy(d.grid, l->grid, sizeof d.grid);
  memcpy(d.block, l->block, sizeof d.block);
  uint32_t n[3];
  for (int i = 0; i < 3; i++) n[i] = (l->grid[i] + l->block[i] - 1) / l->block[i];
  int rc = 0;
  for (uint32_t z = 0; z < n[2] && !rc; z++)
    for (uint32_t y = 0; y < n[1] && !rc; y++)
      for (uint32_t x = 0; x < n[0] && !rc; x++) {
        kfd_emu_workgroup_t wg = {{x, y, z}, {0}, {0}};
        const uint32_t id[3] = {x, y, z};
        for (int i = 0; i < 3; i++) {
          wg.base[i] = id[i] * l->block[i];
          uint32_t left = l->grid[i] - wg.base[i];
          wg.size[i] = left < l->block[i] ? left : l->block[i];
        }
        memset(lds, 0, l->group_size ? l->group_size : 1);
        rc = fn(&d, &wg);
      }
  free(lds);
  return rc;
}

/* The library's twins, declared as kfd-emu finds them (by name). */
#define TWIN(name) int kfd_emu_twin_##name(const kfd_emu_dispatch_t *, const kfd_emu_workgroup_t *)
TWIN(vector_add);
TWIN(saxpy);
TWIN(fill);
TWIN(empty);
TWIN(order_record);
TWIN(count_dispatch);
TWIN(lds_reduce);
TWIN(lds_reduce_dyn);
TWIN(big_private);
TWIN(hip_vector_add);
TWIN(__amd_rocclr_copyBuffer);
TWIN(__amd_rocclr_copyBufferAligned);
TWIN(__amd_rocclr_copyBufferRect);
TWIN(__amd_rocclr_copyBufferRectAligned);
TWIN(__amd_rocclr_fillBufferAligned);
TWIN(__amd_rocclr_fillBufferAligned2D);
TWIN(__amd_rocclr_streamOpsWrite);
TWIN(__amd_rocclr_streamOpsWait);

/* ---------------------------------------------------------------- ROCr blit identification */

/* The header words ROCr 5.2.3 writes (GpuAgent::AssembleShader), spelled out as numbers:
 * rsrc1 = VGPR granules | SGPR granules << 6 | FLOAT_DENORM_MODE_16_64 3 << 18 | IEEE 1 << 23,
 * rsrc2 = USER_SGPR_COUNT 2 << 1 | ENABLE_SGPR_WORKGROUP_ID_X 1 << 7, properties = KERNARG_PTR. */
static void *tw_rocr_header(uint32_t rsrc1, uint64_t accum) {
  uint8_t *p = aligned_alloc(4096, 4096);
  memset(p, 0, 4096);
  const int64_t entry = 256;
  const uint32_t rsrc2 = 0x84, props = 0x8;
  memcpy(p + 16, &entry, 8);
  memcpy(p + 40, &accum, 8);
  memcpy(p + 48, &rsrc1, 4);
  memcpy(p + 52, &rsrc2, 4);
  memcpy(p + 56, &props, 4);
  memset(p + 256, 0xBF, 64); /* machine code follows; not part of the identity */
  return p;
}

Test(rocr_blit, identified_by_exact_header) {
  const struct {
    uint32_t rsrc1;
    uint64_t accum90a;
    const char *name;
  } k[] = {
      {0x008C00C2u, 5ull << 32, "CopyAligned"},    /* SGPR granules 3, VGPR granules 2 */
      {0x008C0082u, 5ull << 32, "CopyMisaligned"}, /* 2 / 2 */
      {0x008C0081u, 3ull << 32, "Fill"},           /* 2 / 1 */
  };
  for (int i = 0; i < 3; i++)
    for (int gfx90a = 0; gfx90a < 2; gfx90a++) {
      uint8_t *h = tw_rocr_header(k[i].rsrc1, gfx90a ? k[i].accum90a : 0);
      const char *name = NULL;
      cr_assert_not_null(kfd_emu_rocr_blit_twin(h, &name), "%s gfx90a=%d", k[i].name, gfx90a);
      cr_assert_str_eq(name, k[i].name);
      cr_assert_not_null(kfd_emu_rocr_blit_twin(h, NULL));
      /* any other byte of the 256 set: not a ROCr blit */
      for (int b = 0; b < 256; b++) {
        h[b] ^= 0x10;
        cr_assert_null(kfd_emu_rocr_blit_twin(h, &name), "%s byte %d changed", k[i].name, b);
        h[b] ^= 0x10;
      }
      free(h);
    }
  uint8_t *h = tw_rocr_header(0x008C00C2u, 0);
  cr_assert_null(kfd_emu_rocr_blit_twin(NULL, NULL));
  cr_assert_null(kfd_emu_rocr_blit_twin(h + 64, NULL), "not page aligned");
  /* the wrong accumulation offset for the kernel: not ROCr's */
  uint64_t bad = 3ull << 32;
  memcpy(h + 40, &bad, 8);
  cr_assert_null(kfd_emu_rocr_blit_twin(h, NULL));
  free(h);
}

/* ---------------------------------------------------------------- ROCr blit twins */

static kfd_emu_twin_fn tw_rocr(uint32_t rsrc1) {
  void *h = tw_rocr_header(rsrc1, 0);
  kfd_emu_twin_fn fn = kfd_emu_rocr_blit_twin(h, NULL);
  free(h);
  return fn;
}

/* ROCr's BlitKernel::SubmitLinearCopyCommand kernargs and grid, as amd_blit_kernel.cpp computes
 * them for num_cus compute units; then the twin over the whole grid. */
static void tw_rocr_copy(uint8_t *dst, const uint8_t *src, uint64_t size, uint32_t num_cus) {
  tw_launch_t l;
  memset(&l, 0, sizeof l);
  uint64_t s = (uintptr_t)src, d = (uintptr_t)dst;
  uint32_t n = 64 * 4 * num_cus;
  kfd_emu_twin_fn fn;
  if ((s & 3) == (d & 3)) {
    fn = tw_rocr(0x008C00C2u);
    uint64_t p1 = size < ((0x100 - (d & 0xFF)) & 0xFF) ? size : ((0x100 - (d & 0xFF)) & 0xFF);
    uint64_t blk = (uint64_t)n * 16;
    uint64_t p2 = (size - p1) / blk * blk;
    uint64_t p3 = (size - p1 - p2) / 4 * 4;
    uint64_t v[10] = {s, d, s + p1, d + p1, s + p1 + p2, d + p1 + p2, s + p1 + p2 + p3,
                      d + p1 + p2 + p3, s + size, d + size};
    memcpy(l.kernarg, v, 80);
    memcpy(l.kernarg + 80, &n, 4);
  } else {
    fn = tw_rocr(0x008C0082u);
    uint64_t blk = (uint64_t)n * 4;
    uint64_t p1 = size / blk * blk;
    uint64_t v[6] = {s, d, s + p1, d + p1, s + size, d + size};
    memcpy(l.kernarg, v, 48);
    memcpy(l.kernarg + 48, &n, 4);
  }
  cr_assert_not_null(fn);
  tw_shape(&l, 1, (n + 63) / 64 * 64, 1, 1, 64, 1, 1);
  cr_assert_eq(tw_run(fn, &l), 0);
}

Test(rocr_blit, copy_aligned_and_misaligned_match_memcpy) {
  const size_t cap = (1u << 20) + 64;
  uint8_t *src = malloc(cap), *dst = malloc(cap), *want = malloc(cap);
  const uint64_t sizes[] = {0, 1, 3, 4, 15, 16, 255, 256, 257, 4096, 65536 + 5, 65536 * 3 + 17,
                            (1u << 20)};
  const uint32_t cus[] = {1, 4, 104};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
    for (size_t so = 0; so < 8; so += 3)
      for (size_t dof = 0; dof < 8; dof += dof < 2 ? 1 : 3)
        for (size_t ci = 0; ci < 3; ci++) {
          uint64_t n = sizes[si];
          if (n + 16 > cap) n = cap - 16;
          for (size_t i = 0; i < cap; i++) src[i] = (uint8_t)(i * 7 + si), dst[i] = 0xEE;
          memcpy(want, dst, cap);
          memcpy(want + dof, src + so, n);
          tw_rocr_copy(dst + dof, src + so, n, cus[ci]);
          cr_assert(memcmp(dst, want, cap) == 0, "size %lu src+%zu dst+%zu cus %u", (unsigned long)n,
                    so, dof, cus[ci]);
        }
  free(src);
  free(dst);
  free(want);
}

Test(rocr_blit, fill_matches_rocr_phases) {
  const size_t words = (1u << 18) + 16;
  uint32_t *buf = malloc(words * 4);
  const uint64_t counts[] = {0, 1, 3, 4, 5, 63, 64, 65, 1000, 4096 + 3, (1u << 18)};
  const uint32_t cus[] = {1, 104};
  for (size_t ci = 0; ci < sizeof counts / sizeof counts[0]; ci++)
    for (size_t off = 0; off < 4; off++)
      for (size_t u = 0; u < 2; u++) {
        uint64_t count = counts[ci];
        for (size_t i = 0; i < words; i++) buf[i] = 0xABABABABu;
        /* BlitKernel::SubmitLinearFillCommand */
        uint32_t n = 64 * cus[u], value = 0x9E3779B9u;
        uint64_t t = (uintptr_t)(buf + off), bytes = count * 4, blk = (uint64_t)n * 16;
        uint64_t p1 = bytes / blk * blk;
        tw_launch_t l;
        memset(&l, 0, sizeof l);
        uint64_t v[3] = {t, t + p1, t + bytes};
        memcpy(l.kernarg, v, 24);
        memcpy(l.kernarg + 24, &value, 4);
        memcpy(l.kernarg + 28, &n, 4);
        tw_shape(&l, 1, (n + 63) / 64 * 64, 1, 1, 64, 1, 1);
        cr_assert_eq(tw_run(tw_rocr(0x008C0081u), &l), 0);
        for (size_t i = 0; i < words; i++) {
          uint32_t want = i >= off && i < off + count ? value : 0xABABABABu;
          if (buf[i] != want) cr_assert_fail("count %lu off %zu: word %zu = 0x%x", (unsigned long)count, off, i, buf[i]);
        }
      }
  free(buf);
}

/* The per-wave loop of CopyAligned phase 2 copies whole 16-byte lanes for every lane of the
 * wavefront while lane 0 is in range, even past the phase end: kernargs that end phase 2 mid-way
 * through a wave (ROCr never does) show the hardware's over-copy. */
Test(rocr_blit, copy_aligned_phase2_is_per_wave) {
  uint8_t src[4096], dst[4096];
  for (int i = 0; i < 4096; i++) src[i] = (uint8_t)i, dst[i] = 0;
  uint64_t s = (uintptr_t)src, d = (uintptr_t)dst;
  uint32_t n = 64;
  /* phase 1 empty, phase 2 = [0, 32) (2 lanes' worth), phases 3 and 4 empty */
  uint64_t v[10] = {s, d, s, d, s + 32, d + 32, s + 32, d + 32, s + 32, d + 32};
  tw_launch_t l;
  memset(&l, 0, sizeof l);
  memcpy(l.kernarg, v, 80);
  memcpy(l.kernarg + 80, &n, 4);
  tw_shape(&l, 1, 64, 1, 1, 64, 1, 1);
  cr_assert_eq(tw_run(tw_rocr(0x008C00C2u), &l), 0);
  /* all 64 lanes copied 16 bytes: 1024 bytes */
  cr_assert(memcmp(dst, src, 1024) == 0);
  cr_assert_eq(dst[1024], 0);
}

/* ---------------------------------------------------------------- ROCclr blit twins */

/* copyBuffer as ROCclr 5.2.3 launches it: size = bytes / 4 + 1 work-items, remain = bytes % 4,
 * grid aligned up to 256. */
Test(rocclr_blit, copy_buffer_remain_and_origins) {
  uint8_t src[2048], dst[2048], want[2048];
  for (uint64_t bytes = 0; bytes < 600; bytes += 37)
    for (uint64_t so = 0; so < 5; so += 2)
      for (uint64_t dof = 0; dof < 5; dof++) {
        for (int i = 0; i < 2048; i++) src[i] = (uint8_t)(i * 3 + 1), dst[i] = 0x55;
        memcpy(want, dst, sizeof want);
        memcpy(want + dof, src + so, bytes);
        tw_launch_t l;
        memset(&l, 0, sizeof l);
        uint64_t size = bytes / 4 + 1;
        tw_ptr(&l, src);
        tw_ptr(&l, dst);
        tw_u64(&l, so);
        tw_u64(&l, dof);
        tw_u64(&l, size);
        tw_u32(&l, (uint32_t)(bytes % 4));
        tw_shape(&l, 1, (uint32_t)((size + 255) / 256 * 256), 1, 1, 256, 1, 1);
        cr_assert_eq(tw_run(kfd_emu_twin___amd_rocclr_copyBuffer, &l), 0);
        cr_assert(memcmp(dst, want, sizeof dst) == 0, "bytes %lu src+%lu dst+%lu",
                  (unsigned long)bytes, (unsigned long)so, (unsigned long)dof);
      }
  /* remain == 8: one byte per work-item */
  for (int i = 0; i < 2048; i++) src[i] = (uint8_t)i, dst[i] = 0;
  tw_launch_t l;
  memset(&l, 0, sizeof l);
  tw_ptr(&l, src);
  tw_ptr(&l, dst);
  tw_u64(&l, 1);
  tw_u64(&l, 2);
  tw_u64(&l, 100);
  tw_u32(&l, 8);
  tw_shape(&l, 1, 256, 1, 1, 256, 1, 1);
  cr_assert_eq(tw_run(kfd_emu_twin___amd_rocclr_copyBuffer, &l), 0);
  cr_assert(memcmp(dst + 2, src + 1, 100) == 0);
  cr_assert_eq(dst[1], 0);
  cr_assert_eq(dst[102], 0);
}

Test(rocclr_blit, copy_buffer_aligned_units) {
  uint32_t src[512], dst[512];
  for (uint32_t align = 4; align <= 16; align += 12) {
    for (int i = 0; i < 512; i++) src[i] = 0x1000u + i, dst[i] = 0;
    tw_launch_t l;
    memset(&l, 0, sizeof l);
    tw_ptr(&l, src);
    tw_ptr(&l, dst);
    tw_u64(&l, 3); /* origins in elements of `align` bytes */
    tw_u64(&l, 5);
    tw_u64(&l, 20);
    tw_u32(&l, align);
    tw_shape(&l, 1, 256, 1, 1, 256, 1, 1);
    cr_assert_eq(tw_run(kfd_emu_twin___amd_rocclr_copyBufferAligned, &l), 0);
    uint32_t w = align / 4;
    for (uint32_t i = 0; i < 512; i++) {
      uint32_t want = i >= 5 * w && i < (5 + 20) * w ? src[i - 5 * w + 3 * w] : 0;
      cr_assert_eq(dst[i], want, "align %u word %u", align, i);
    }
  }
}

Test(rocclr_blit, copy_buffer_rect_3d) {
  static uint8_t src[8192], dst[8192], want[8192];
  for (int i = 0; i < 8192; i++) src[i] = (uint8_t)(i * 5), dst[i] = want[i] = 0x11;
  /* rect = {row pitch, slice pitch, origin}; size = {x, y, z, unused} */
  uint64_t sr[4] = {40, 800, 7, 0}, dr[4] = {64, 1024, 3, 0}, sz[4] = {33, 9, 3, 0};
  for (uint64_t z = 0; z < sz[2]; z++)
    for (uint64_t y = 0; y < sz[1]; y++)
      for (uint64_t x = 0; x < sz[0]; x++)
        want[dr[2] + x + y * dr[0] + z * dr[1]] = src[sr[2] + x + y * sr[0] + z * sr[1]];
  tw_launch_t l;
  memset(&l, 0, sizeof l);
  tw_ptr(&l, src);
  tw_ptr(&l, dst);
  tw_add(&l, KFD_EMU_ARG_BY_VALUE, sr, 32);
  tw_add(&l, KFD_EMU_ARG_BY_VALUE, dr, 32);
  tw_add(&l, KFD_EMU_ARG_BY_VALUE, sz, 32);
  tw_shape(&l, 3, 40, 16, 4, 8, 8, 4); /* grid larger than the rectangle, partial groups */
  cr_assert_eq(tw_run(kfd_emu_twin___amd_rocclr_copyBufferRect, &l), 0);
  cr_assert(memcmp(dst, want, sizeof dst) == 0);
}

Test(rocclr_blit, fill_buffer_aligned_picks_first_view) {
  uint8_t buf[1024];
  const uint64_t pattern[2] = {0x0807060504030201ull, 0x100F0E0D0C0B0A09ull};
  /* view index -> element size: 0 uchar, 1 ushort, 2 uint, 3 ulong */
  for (int view = 0; view < 4; view++) {
    uint64_t unit = 1ull << view;
    memset(buf, 0xCC, sizeof buf);
    tw_launch_t l;
    memset(&l, 0, sizeof l);
    for (int v = 0; v < 4; v++) tw_ptr(&l, v == view ? buf : NULL);
    tw_ptr(&l, pattern);
    tw_u32(&l, 2);  /* patternSize in elements */
    tw_u64(&l, 3);  /* offset in elements */
    tw_u64(&l, 10); /* work-items */
    tw_shape(&l, 1, 256, 1, 1, 256, 1, 1);
    cr_assert_eq(tw_run(kfd_emu_twin___amd_rocclr_fillBufferAligned, &l), 0);
    for (uint64_t i = 0; i < sizeof buf; i++) {
      uint64_t e0 = 3 * unit, e1 = (3 + 10 * 2) * unit;
      uint8_t want = i >= e0 && i < e1 ? ((const uint8_t *)pattern)[(i - e0) % (2 * unit)] : 0xCC;
      cr_assert_eq(buf[i], want, "view %d byte %lu", view, (unsigned long)i);
    }
  }
  /* all four views NULL: the uchar path dereferences NULL, a fault */
  tw_launch_t l;
  memset(&l, 0, sizeof l);
  for (int v = 0; v < 4; v++) tw_ptr(&l, NULL);
  tw_ptr(&l, pattern);
  tw_u32(&l, 1);
  tw_u64(&l, 0);
  tw_u64(&l, 1);
  tw_shape(&l, 1, 256, 1, 1, 256, 1, 1);
  cr_assert_eq(tw_run(kfd_emu_twin___amd_rocclr_fillBufferAligned, &l), 2);
}

Test(rocclr_blit, fill_buffer_aligned_2d_pitch) {
  uint32_t buf[64 * 20];
  const uint32_t pattern = 0xDEADBEEFu;
  for (int i = 0; i < 64 * 20; i++) buf[i] = 0;
  tw_launch_t l;
  memset(&l, 0, sizeof l);
  tw_ptr(&l, NULL);
  tw_ptr(&l, NULL);
  tw_ptr(&l, buf);
  tw_ptr(&l, NULL);
  tw_ptr(&l, &pattern);
  tw_u32(&l, 1);
  tw_u64(&l, 70); /* origin, elements */
  tw_u64(&l, 13); /* width */
  tw_u64(&l, 9);  /* height */
  tw_u64(&l, 64); /* pitch, elements */
  tw_shape(&l, 2, 16, 16, 1, 16, 16, 1);
  cr_assert_eq(tw_run(kfd_emu_twin___amd_rocclr_fillBufferAligned2D, &l), 0);
  for (uint32_t i = 0; i < 64 * 20; i++) {
    uint32_t r = (i - 70) / 64, c = (i - 70) % 64;
    bool in = i >= 70 && r < 9 && c < 13;
    cr_assert_eq(buf[i], in ? pattern : 0u, "word %u", i);
  }
}

Test(rocclr_blit, stream_ops_write_and_wait) {
  uint32_t w32 = 0;
  uint64_t w64 = 0;
  tw_launch_t l;
  memset(&l, 0, sizeof l);
  tw_ptr(&l, &w32);
  tw_ptr(&l, NULL);
  tw_u64(&l, 0x1234567890ull);
  tw_u64(&l, 4);
  tw_shape(&l, 1, 1, 1, 1, 1, 1, 1);
  cr_assert_eq(tw_run(kfd_emu_twin___amd_rocclr_streamOpsWrite, &l), 0);
  cr_assert_eq(w32, 0x34567890u);
  memset(&l, 0, sizeof l);
  tw_ptr(&l, NULL);
  tw_ptr(&l, &w64);
  tw_u64(&l, 0xFFFFFFFFFFull);
  tw_u64(&l, 8);
  tw_shape(&l, 1, 1, 1, 1, 1, 1, 1);
  cr_assert_eq(tw_run(kfd_emu_twin___amd_rocclr_streamOpsWrite, &l), 0);
  cr_assert_eq(w64, 0xFFFFFFFFFFull);
  /* conditions already true return at once: GEQ, EQ, AND, NOR */
  const uint64_t conds[4][2] = {{0, 5}, {1, 0x34567890}, {2, 0x10}, {3, 0x1}};
  for (int c = 0; c < 4; c++) {
    memset(&l, 0, sizeof l);
    tw_ptr(&l, &w32);
    tw_ptr(&l, NULL);
    tw_u64(&l, conds[c][1]);
    tw_u64(&l, conds[c][0]);
    tw_u64(&l, c == 3 ? 0x3 : 0xFFFFFFFFull);
    tw_shape(&l, 1, 1, 1, 1, 1, 1, 1);
    cr_assert_eq(tw_run(kfd_emu_twin___amd_rocclr_streamOpsWait, &l), 0, "op %d", c);
  }
}

/* ---------------------------------------------------------------- kernels/ twins */

Test(twins, vector_add_reads_metadata_offsets) {
  float a[300], b[300], c[300];
  for (int i = 0; i < 300; i++) a[i] = (float)i, b[i] = 0.5f, c[i] = -1.0f;
  tw_launch_t l;
  memset(&l, 0, sizeof l);
  /* a layout with padding between the arguments: the twin must follow the offsets */
  l.args[0] = (kfd_emu_arg_t){8, 8, KFD_EMU_ARG_GLOBAL_BUFFER};
  l.args[1] = (kfd_emu_arg_t){32, 8, KFD_EMU_ARG_GLOBAL_BUFFER};
  l.args[2] = (kfd_emu_arg_t){48, 8, KFD_EMU_ARG_GLOBAL_BUFFER};
  l.args[3] = (kfd_emu_arg_t){100, 4, KFD_EMU_ARG_BY_VALUE};
  l.arg_count = 4;
  float *pa = a, *pb = b, *pc = c;
  uint32_t n = 250;
  memcpy(l.kernarg + 8, &pa, 8);
  memcpy(l.kernarg + 32, &pb, 8);
  memcpy(l.kernarg + 48, &pc, 8);
  memcpy(l.kernarg + 100, &n, 4);
  l.kernarg_size = 104;
  tw_shape(&l, 1, 270, 1, 1, 64, 1, 1);
  cr_assert_eq(tw_run(kfd_emu_twin_vector_add, &l), 0);
  for (int i = 0; i < 300; i++) cr_assert_eq(c[i], i < 250 ? (float)i + 0.5f : -1.0f, "c[%d]", i);
}

Test(twins, metadata_mismatch_and_null_are_errors) {
  float a[4] = {0}, c[4];
  tw_launch_t l;
  memset(&l, 0, sizeof l);
  tw_ptr(&l, a);
  tw_ptr(&l, a);
  tw_ptr(&l, c);
  tw_u64(&l, 4); /* n declared 8 bytes: not the kernel's uint */
  tw_shape(&l, 1, 4, 1, 1, 4, 1, 1);
  cr_assert_eq(tw_run(kfd_emu_twin_vector_add, &l), 1);
  memset(&l, 0, sizeof l);
  tw_ptr(&l, a);
  tw_ptr(&l, NULL);
  tw_ptr(&l, c);
  tw_u32(&l, 4);
  tw_shape(&l, 1, 4, 1, 1, 4, 1, 1);
  cr_assert_eq(tw_run(kfd_emu_twin_vector_add, &l), 2);
  /* n = 0: the NULL buffer is never dereferenced, as on hardware */
  memset(&l, 0, sizeof l);
  tw_ptr(&l, a);
  tw_ptr(&l, NULL);
  tw_ptr(&l, c);
  tw_u32(&l, 0);
  tw_shape(&l, 1, 4, 1, 1, 4, 1, 1);
  cr_assert_eq(tw_run(kfd_emu_twin_vector_add, &l), 0);
  /* a by-value argument declared as a buffer */
  memset(&l, 0, sizeof l);
  tw_ptr(&l, c);
  tw_ptr(&l, c);
  tw_u32(&l, 4);
  tw_shape(&l, 1, 4, 1, 1, 4, 1, 1);
  cr_assert_eq(tw_run(kfd_emu_twin_fill, &l), 1);
}

Test(twins, saxpy_fill_empty_big_private) {
  float x[100], y[100], y0[100];
  for (int i = 0; i < 100; i++) x[i] = 1.0f / (float)(i + 1), y[i] = y0[i] = (float)i * 0.3f;
  tw_launch_t l;
  memset(&l, 0, sizeof l);
  tw_f32(&l, 1.1f);
  tw_ptr(&l, x);
  tw_ptr(&l, y);
  tw_u32(&l, 99);
  tw_shape(&l, 1, 100, 1, 1, 32, 1, 1);
  cr_assert_eq(tw_run(kfd_emu_twin_saxpy, &l), 0);
  for (int i = 0; i < 100; i++) cr_assert_eq(y[i], i < 99 ? fmaf(1.1f, x[i], y0[i]) : y0[i]);

  uint32_t dst[70];
  memset(dst, 0, sizeof dst);
  memset(&l, 0, sizeof l);
  tw_ptr(&l, dst);
  tw_u32(&l, 7);
  tw_u32(&l, 65);
  tw_shape(&l, 1, 70, 1, 1, 16, 1, 1);
  cr_assert_eq(tw_run(kfd_emu_twin_fill, &l), 0);
  for (int i = 0; i < 70; i++) cr_assert_eq(dst[i], i < 65 ? 7u : 0u);

  memset(&l, 0, sizeof l);
  tw_shape(&l, 3, 5, 5, 5, 2, 2, 2);
  cr_assert_eq(tw_run(kfd_emu_twin_empty, &l), 0);

  uint32_t in[3] = {0, 1, 0xFFFFFFFFu}, out[3];
  memset(&l, 0, sizeof l);
  tw_ptr(&l, in);
  tw_ptr(&l, out);
  tw_u32(&l, 3);
  tw_shape(&l, 1, 3, 1, 1, 64, 1, 1);
  cr_assert_eq(tw_run(kfd_emu_twin_big_private, &l), 0);
  /* s = 0: sum over k of k * 2654435761 (mod 2^32) = 2654435761 * 1023 * 1024 / 2 */
  cr_assert_eq(out[0], (uint32_t)(2654435761u * (uint32_t)(1023u * 512u)));
}

Test(twins, order_record_and_count_dispatch_once_per_grid) {
  uint32_t counter = 10, slots[4] = {0};
  for (uint32_t i = 0; i < 4; i++) {
    tw_launch_t l;
    memset(&l, 0, sizeof l);
    tw_ptr(&l, &counter);
    tw_ptr(&l, slots);
    tw_u32(&l, 3 - i);
    tw_shape(&l, 2, 100, 3, 1, 32, 2, 1);
    cr_assert_eq(tw_run(kfd_emu_twin_order_record, &l), 0);
  }
  cr_assert_eq(counter, 14u);
  cr_assert_eq(slots[3], 10u);
  cr_assert_eq(slots[0], 13u);
  tw_launch_t l;
  memset(&l, 0, sizeof l);
  tw_ptr(&l, &counter);
  tw_u32(&l, 5);
  tw_shape(&l, 3, 64, 4, 4, 16, 2, 2);
  cr_assert_eq(tw_run(kfd_emu_twin_count_dispatch, &l), 0);
  cr_assert_eq(counter, 19u);
}

Test(twins, lds_reduce_bounds_and_shapes) {
  float in[500], partial[8];
  for (int i = 0; i < 500; i++) in[i] = 1.0f;
  tw_launch_t l;
  memset(&l, 0, sizeof l);
  tw_ptr(&l, in);
  tw_ptr(&l, partial);
  tw_u32(&l, 500);
  tw_shape(&l, 1, 500, 1, 1, 128, 1, 1);
  l.group_size = 1024;
  cr_assert_eq(tw_run(kfd_emu_twin_lds_reduce, &l), 0);
  cr_assert_eq(partial[0], 128.0f);
  cr_assert_eq(partial[3], 116.0f); /* partial workgroup: 500 - 384 */
  l.group_size = 512; /* less than .group_segment_fixed_size */
  cr_assert_eq(tw_run(kfd_emu_twin_lds_reduce, &l), 2);
  l.group_size = 1024;
  tw_shape(&l, 2, 500, 2, 1, 128, 2, 1);
  cr_assert_eq(tw_run(kfd_emu_twin_lds_reduce, &l), 3);
  tw_shape(&l, 1, 1024, 1, 1, 512, 1, 1);
  cr_assert_eq(tw_run(kfd_emu_twin_lds_reduce, &l), 3);

  /* dynamic: the kernarg holds the LDS offset of the dynamic allocation */
  memset(&l, 0, sizeof l);
  tw_ptr(&l, in);
  tw_ptr(&l, partial);
  tw_u32(&l, 500);
  uint32_t off = 256;
  tw_add(&l, KFD_EMU_ARG_DYNAMIC_SHARED_POINTER, &off, 4);
  tw_shape(&l, 1, 500, 1, 1, 256, 1, 1);
  l.group_size = 256 + 1024;
  cr_assert_eq(tw_run(kfd_emu_twin_lds_reduce_dyn, &l), 0);
  cr_assert_eq(partial[0], 256.0f);
  cr_assert_eq(partial[1], 244.0f);
  l.group_size = 256 + 1020;
  cr_assert_eq(tw_run(kfd_emu_twin_lds_reduce_dyn, &l), 2);
}

Test(twins, hip_vector_add_uses_blockdim_of_this_group) {
  float a[100], b[100], c[100];
  for (int i = 0; i < 100; i++) a[i] = (float)i, b[i] = 1.0f, c[i] = 0.0f;
  tw_launch_t l;
  memset(&l, 0, sizeof l);
  tw_ptr(&l, a);
  tw_ptr(&l, b);
  tw_ptr(&l, c);
  tw_u32(&l, 100);
  tw_shape(&l, 1, 100, 1, 1, 64, 1, 1); /* HIP never launches this: last group has 36 */
  cr_assert_eq(tw_run(kfd_emu_twin_hip_vector_add, &l), 0);
  /* group 1: blockIdx 1 * blockDim 36 + t -> elements 36..71, as __ockl_get_local_size gives */
  for (int i = 0; i < 100; i++) cr_assert_eq(c[i], i < 72 ? (float)i + 1.0f : 0.0f, "c[%d]", i);
}
