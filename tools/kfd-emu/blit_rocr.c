/* blit_rocr.c - host twins of ROCr 5.2.3's blit kernels and their identification by header
 * (see blit_rocr.h for the headers and kernarg layouts).
 *
 * What the machine code does, per work-item i = workgroup id * 64 + local id, with N =
 * num_workitems (the stride) and all addresses 64-bit:
 *
 * CopyAligned (src and dst equally aligned modulo 4):
 *   1. bytes:   s = p1_src + i, t = p1_dst + i;        per lane while s < p2_src:  copy 1, += N
 *   2. dwordx4: s = p2_src + 16i, t = p2_dst + 16i;    per WAVE while any lane's s < p3_src:
 *               every lane copies 16 bytes, += 16N     (no exec mask in this loop)
 *   3. dwords:  s = p3_src + 4i, t = p3_dst + 4i;      per lane while s < p4_src:  copy 4, += 4N
 *   4. bytes:   s = p4_src + i, t = p4_dst + i;        once, if s < p4_src_end:    copy 1
 * CopyMisaligned:
 *   1. s = p1_src + i, t = p1_dst + i; per WAVE while any lane's s < p2_src: every lane copies
 *      the bytes at s, s+N, s+2N, s+3N to t, t+N, t+2N, t+3N, then s, t += 4N
 *   2. s = p2_src + i, t = p2_dst + i; per lane while s < p2_src_end: copy 1, += N
 * Fill (value v):
 *   1. t = p1_dst + 16i; per WAVE while any lane's t < p2_dst: every lane stores v x4, += 16N
 *   2. t = p2_dst + 4i;  per lane while t < p2_dst_end: store v, += 4N
 *
 * A wavefront here is the workgroup (ROCr's workgroups are 64 work-items, wave64); "any lane"
 * is lane 0, which has the lowest address. Consecutive lanes touch consecutive addresses in each
 * step, so each step of a workgroup is done as one memmove/fill of the lanes it covers, after
 * both ranges of the step were checked with the dispatch's gpu_accessible (as kernel twins
 * check their buffers): a range the GPU may not reach is a memory violation with nothing of
 * that step written, so KFD_EMU_ACCESS=strict covers copies and fills too.
 */
#include "tools/kfd-emu/blit_rocr.h"

#include <hsa/amd_hsa_kernel_code.h>
#include <stdint.h>
#include <string.h>

_Static_assert(sizeof(amd_kernel_code_t) == 256, "amd_kernel_code_t is 256 bytes");
_Static_assert(offsetof(amd_kernel_code_t, kernel_code_entry_byte_offset) == 16, "layout");
_Static_assert(offsetof(amd_kernel_code_t, max_scratch_backing_memory_byte_size) == 40, "layout");
_Static_assert(offsetof(amd_kernel_code_t, compute_pgm_rsrc1) == 48, "layout");
_Static_assert(offsetof(amd_kernel_code_t, compute_pgm_rsrc2) == 52, "layout");
_Static_assert(offsetof(amd_kernel_code_t, kernel_code_properties) == 56, "layout");

#define BR_WAVE 64u /* ROCr's blit workgroup (and wavefront) size; the code shifts by 6 */

/* ---- kernarg access (fixed layout, read unaligned-safe) ---- */

static uint64_t br_u64(const uint8_t *k, uint32_t off) {
  uint64_t v;
  memcpy(&v, k + off, sizeof(v));
  return v;
}

static uint32_t br_u32(const uint8_t *k, uint32_t off) {
  uint32_t v;
  memcpy(&v, k + off, sizeof(v));
  return v;
}

/* Kernarg bytes each kernel reads; a smaller declared kernarg segment is an error. */
#define BR_COPY_ALIGNED_KERNARG 84u
#define BR_COPY_MISALIGNED_KERNARG 52u
#define BR_FILL_KERNARG 32u

static int br_kernarg_ok(const kfd_emu_dispatch_t *d, uint32_t need) {
  return d->kernarg != NULL && (d->kernarg_size == 0 || d->kernarg_size >= need);
}

/* ---- the two loop shapes ---- */

/* One step of `lanes` consecutive lanes, w bytes each, at byte offset `off` from the phase's
 * start addresses: a copy (src -> dst) or, when fill is set, 4-byte stores of `value` to dst. */
typedef struct br_phase {
  uint64_t src, dst; /* start addresses of the phase (src unused by a fill) */
  uint64_t end;      /* the loop runs while the compared address (src, or dst for a fill) < end */
  uint64_t w;        /* bytes per lane per access */
  uint64_t stride;   /* bytes a lane advances per access: N * w */
  int fill;
  uint32_t value;
  const kfd_emu_dispatch_t *d; /* its gpu_accessible checks every range a step touches */
} br_phase_t;

/* Returns 1 (a memory violation, nothing touched) when a range of the step lies outside
 * memory the GPU may reach (kfd_emu_dispatch_t.gpu_accessible, as the kernel twins check:
 * known allocations, and with KFD_EMU_ACCESS=strict only those mapped to this GPU). */
static int br_step(const br_phase_t *ph, uint64_t off, uint64_t lanes) {
  uint8_t *dst = (uint8_t *)(uintptr_t)(ph->dst + off);
  uint64_t bytes = lanes * ph->w;
  const void *src = (const void *)(uintptr_t)(ph->src + off);
  if (ph->d->gpu_accessible &&
      (!ph->d->gpu_accessible(dst, bytes) || (!ph->fill && !ph->d->gpu_accessible(src, bytes))))
    return 1;
  if (!ph->fill) {
    memmove(dst, src, bytes);
    return 0;
  }
  for (uint64_t k = 0; k < bytes / 4; k++) memcpy(dst + 4 * k, &ph->value, 4);
  return 0;
}

/* Per-lane loop: lane l (0 <= l < lanes; work-item i0 + l) starts at offset (i0 + l) * w and
 * repeats while its compared address is below end (lanes that fail are masked off for good);
 * `once` stops after the first pass (CopyAligned phase 4). */
static int br_lane_loop(const br_phase_t *ph, uint64_t i0, uint32_t lanes, int once) {
  uint64_t cmp = ph->fill ? ph->dst : ph->src;
  for (uint64_t off = i0 * ph->w;; off += ph->stride) {
    uint64_t a = cmp + off;
    if (a >= ph->end) break;
    /* the lanes still below end: a prefix, since addresses grow with the lane */
    uint64_t n = (ph->end - a + ph->w - 1) / ph->w;
    if (br_step(ph, off, n < lanes ? n : lanes)) return 1;
    if (once || ph->stride == 0) break; /* stride 0 would spin forever on the GPU */
  }
  return 0;
}

/* Per-wave loop: while lane 0's compared address is below end, every lane does `unroll`
 * accesses at its address + u * stride (u < unroll), then all advance by unroll * stride. */
static int br_wave_loop(const br_phase_t *ph, uint64_t i0, uint32_t lanes, uint32_t unroll) {
  uint64_t cmp = ph->fill ? ph->dst : ph->src;
  if (ph->stride == 0) return 0; /* would never advance; a twin must not hang */
  for (uint64_t off = i0 * ph->w; cmp + off < ph->end; off += unroll * ph->stride)
    for (uint32_t u = 0; u < unroll; u++)
      if (br_step(ph, off + u * ph->stride, lanes)) return 1;
  return 0;
}

/* ---- twins ---- */

static int br_copy_aligned(const kfd_emu_dispatch_t *d, const kfd_emu_workgroup_t *wg) {
  if (!br_kernarg_ok(d, BR_COPY_ALIGNED_KERNARG)) return 1;
  const uint8_t *k = d->kernarg;
  uint64_t s1 = br_u64(k, 0), t1 = br_u64(k, 8), s2 = br_u64(k, 16), t2 = br_u64(k, 24);
  uint64_t s3 = br_u64(k, 32), t3 = br_u64(k, 40), s4 = br_u64(k, 48), t4 = br_u64(k, 56);
  uint64_t s4_end = br_u64(k, 64);
  uint64_t n = br_u32(k, 80);
  if (s4_end > s1 && (s1 == 0 || t1 == 0)) return 1;
  uint64_t i0 = (uint64_t)wg->id[0] * BR_WAVE;
  uint32_t lanes = wg->size[0];
  for (uint64_t r = 0; r < (uint64_t)wg->size[1] * wg->size[2]; r++) {
    if (br_lane_loop(&(br_phase_t){s1, t1, s2, 1, n, 0, 0, d}, i0, lanes, 0) ||
        br_wave_loop(&(br_phase_t){s2, t2, s3, 16, 16 * n, 0, 0, d}, i0, lanes, 1) ||
        br_lane_loop(&(br_phase_t){s3, t3, s4, 4, 4 * n, 0, 0, d}, i0, lanes, 0) ||
        br_lane_loop(&(br_phase_t){s4, t4, s4_end, 1, n, 0, 0, d}, i0, lanes, 1))
      return 1;
  }
  return 0;
}

static int br_copy_misaligned(const kfd_emu_dispatch_t *d, const kfd_emu_workgroup_t *wg) {
  if (!br_kernarg_ok(d, BR_COPY_MISALIGNED_KERNARG)) return 1;
  const uint8_t *k = d->kernarg;
  uint64_t s1 = br_u64(k, 0), t1 = br_u64(k, 8), s2 = br_u64(k, 16), t2 = br_u64(k, 24);
  uint64_t s2_end = br_u64(k, 32);
  uint64_t n = br_u32(k, 48);
  if (s2_end > s1 && (s1 == 0 || t1 == 0)) return 1;
  uint64_t i0 = (uint64_t)wg->id[0] * BR_WAVE;
  uint32_t lanes = wg->size[0];
  for (uint64_t r = 0; r < (uint64_t)wg->size[1] * wg->size[2]; r++) {
    if (br_wave_loop(&(br_phase_t){s1, t1, s2, 1, n, 0, 0, d}, i0, lanes, 4) ||
        br_lane_loop(&(br_phase_t){s2, t2, s2_end, 1, n, 0, 0, d}, i0, lanes, 0))
      return 1;
  }
  return 0;
}

static int br_fill(const kfd_emu_dispatch_t *d, const kfd_emu_workgroup_t *wg) {
  if (!br_kernarg_ok(d, BR_FILL_KERNARG)) return 1;
  const uint8_t *k = d->kernarg;
  uint64_t t1 = br_u64(k, 0), t2 = br_u64(k, 8), t2_end = br_u64(k, 16);
  uint32_t value = br_u32(k, 24);
  uint64_t n = br_u32(k, 28);
  if (t2_end > t1 && t1 == 0) return 1;
  uint64_t i0 = (uint64_t)wg->id[0] * BR_WAVE;
  uint32_t lanes = wg->size[0];
  for (uint64_t r = 0; r < (uint64_t)wg->size[1] * wg->size[2]; r++) {
    if (br_wave_loop(&(br_phase_t){0, t1, t2, 16, 16 * n, 1, value, d}, i0, lanes, 1) ||
        br_lane_loop(&(br_phase_t){0, t2, t2_end, 4, 4 * n, 1, value, d}, i0, lanes, 0))
      return 1;
  }
  return 0;
}

/* ---- identification ---- */

typedef struct br_kernel {
  const char *name;
  int sgprs, vgprs; /* ROCr's table in GpuAgent::AssembleShader */
  kfd_emu_twin_fn twin;
} br_kernel_t;

static const br_kernel_t br_kernels[] = {
    {"CopyAligned", 32, 12, br_copy_aligned},
    {"CopyMisaligned", 23, 10, br_copy_misaligned},
    {"Fill", 19, 8, br_fill},
};

/* The header ROCr writes for a kernel; gfx90a adds the ACCUM_OFFSET word. */
static void br_expected_header(const br_kernel_t *kd, int gfx90a, amd_kernel_code_t *out) {
  uint32_t gran_sgprs = (uint32_t)(kd->sgprs - 1) / 8, gran_vgprs = (uint32_t)(kd->vgprs - 1) / 4;
  memset(out, 0, sizeof(*out));
  out->kernel_code_entry_byte_offset = sizeof(amd_kernel_code_t);
  out->kernel_code_properties = AMD_KERNEL_CODE_PROPERTIES_ENABLE_SGPR_KERNARG_SEGMENT_PTR;
  out->compute_pgm_rsrc1 =
      (gran_vgprs << AMD_COMPUTE_PGM_RSRC_ONE_GRANULATED_WORKITEM_VGPR_COUNT_SHIFT) |
      (gran_sgprs << AMD_COMPUTE_PGM_RSRC_ONE_GRANULATED_WAVEFRONT_SGPR_COUNT_SHIFT) |
      (3u << AMD_COMPUTE_PGM_RSRC_ONE_FLOAT_DENORM_MODE_16_64_SHIFT) |
      (1u << AMD_COMPUTE_PGM_RSRC_ONE_ENABLE_IEEE_MODE_SHIFT);
  out->compute_pgm_rsrc2 = (2u << AMD_COMPUTE_PGM_RSRC_TWO_USER_SGPR_COUNT_SHIFT) |
                           (1u << AMD_COMPUTE_PGM_RSRC_TWO_ENABLE_SGPR_WORKGROUP_ID_X_SHIFT);
  if (gfx90a) out->max_scratch_backing_memory_byte_size = (uint64_t)(((gran_vgprs + 1) * 8) / 4 - 1) << 32;
}

kfd_emu_twin_fn kfd_emu_rocr_blit_twin(const void *kernel_object, const char **out_name) {
  if (kernel_object == NULL || ((uintptr_t)kernel_object & 0xfff) != 0) return NULL;
  for (size_t i = 0; i < sizeof(br_kernels) / sizeof(br_kernels[0]); i++)
    for (int gfx90a = 0; gfx90a <= 1; gfx90a++) {
      amd_kernel_code_t want;
      br_expected_header(&br_kernels[i], gfx90a, &want);
      if (memcmp(kernel_object, &want, sizeof(want)) == 0) {
        if (out_name) *out_name = br_kernels[i].name;
        return br_kernels[i].twin;
      }
    }
  return NULL;
}
