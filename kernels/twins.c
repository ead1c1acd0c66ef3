/* twins.c - host twins of the kernels in kernels/ (OpenCL C) and kernels/hip/vector_add.hip.
 *
 * Each twin does, for one workgroup, exactly what the kernel's source does for the work-items
 * of that workgroup (kernels/README.md gives each kernel's contract). Arguments are read only
 * through the metadata (twins_util.h). A twin returns nonzero where the kernel would fault:
 * a NULL pointer it would dereference, or an LDS access outside the packet's group segment; and
 * for an argument the metadata does not declare as expected.
 *
 * Global ids are those of OpenCL's get_global_id() with a zero global offset: kfd_emu_dispatch_t
 * does not carry the hidden global offset, and every dispatcher here writes zero there.
 */
#include <math.h>
#include <stdint.h>

#include "kernels/twins_util.h"

/* vector_add(global const float *a, global const float *b, global float *c, uint n) */
KFD_EMU_TWIN(vector_add) {
  float *a, *b, *c;
  uint32_t n;
  if (tw_arg_ptr(d, 0, (void **)&a) || tw_arg_ptr(d, 1, (void **)&b) ||
      tw_arg_ptr(d, 2, (void **)&c) || tw_arg_val(d, 3, &n, sizeof(n)))
    return TW_ERR_ARG;
  uint64_t lo, hi;
  tw_span(wg, n, &lo, &hi);
  if (!tw_reach(d, a, lo, hi - lo, 4) || !tw_reach(d, b, lo, hi - lo, 4) ||
      !tw_reach(d, c, lo, hi - lo, 4))
    return TW_ERR_FAULT;
  for (uint64_t r = 0; r < tw_rows(wg); r++)
    for (uint64_t lx = 0; lx < wg->size[0]; lx++) {
      uint64_t i = (uint64_t)wg->base[0] + lx;
      if (i >= n) continue;
      if (!a || !b || !c) return TW_ERR_FAULT;
      c[i] = a[i] + b[i];
    }
  return 0;
}

/* saxpy(float a, global const float *x, global float *y, uint n): y[i] = fma(a, x[i], y[i]) */
KFD_EMU_TWIN(saxpy) {
  float a, *x, *y;
  uint32_t n;
  if (tw_arg_val(d, 0, &a, sizeof(a)) || tw_arg_ptr(d, 1, (void **)&x) ||
      tw_arg_ptr(d, 2, (void **)&y) || tw_arg_val(d, 3, &n, sizeof(n)))
    return TW_ERR_ARG;
  uint64_t lo, hi;
  tw_span(wg, n, &lo, &hi);
  if (!tw_reach(d, x, lo, hi - lo, 4) || !tw_reach(d, y, lo, hi - lo, 4)) return TW_ERR_FAULT;
  for (uint64_t r = 0; r < tw_rows(wg); r++)
    for (uint64_t lx = 0; lx < wg->size[0]; lx++) {
      uint64_t i = (uint64_t)wg->base[0] + lx;
      if (i >= n) continue;
      if (!x || !y) return TW_ERR_FAULT;
      y[i] = fmaf(a, x[i], y[i]);
    }
  return 0;
}

/* fill(global uint *dst, uint value, uint n) */
KFD_EMU_TWIN(fill) {
  uint32_t *dst, value, n;
  if (tw_arg_ptr(d, 0, (void **)&dst) || tw_arg_val(d, 1, &value, sizeof(value)) ||
      tw_arg_val(d, 2, &n, sizeof(n)))
    return TW_ERR_ARG;
  uint64_t lo, hi;
  tw_span(wg, n, &lo, &hi);
  if (!tw_reach(d, dst, lo, hi - lo, 4)) return TW_ERR_FAULT;
  for (uint64_t r = 0; r < tw_rows(wg); r++)
    for (uint64_t lx = 0; lx < wg->size[0]; lx++) {
      uint64_t i = (uint64_t)wg->base[0] + lx;
      if (i >= n) continue;
      if (!dst) return TW_ERR_FAULT;
      dst[i] = value;
    }
  return 0;
}

/* empty(void) */
KFD_EMU_TWIN(empty) {
  (void)d;
  (void)wg;
  return 0;
}

/* order_record(global uint *counter, global uint *slots, uint index):
 * work-item (0,0,0): slots[index] = atomic_inc(counter). The ticket is taken with a sequentially
 * consistent fetch-add, so dispatches on different emulated GPUs (different CP threads) that
 * share one counter draw distinct tickets. */
KFD_EMU_TWIN(order_record) {
  uint32_t *counter, *slots, index;
  if (tw_arg_ptr(d, 0, (void **)&counter) || tw_arg_ptr(d, 1, (void **)&slots) ||
      tw_arg_val(d, 2, &index, sizeof(index)))
    return TW_ERR_ARG;
  if (!tw_is_first_group(wg)) return 0;
  if (!tw_reach(d, counter, 0, 1, 4) || !tw_reach(d, slots, index, 1, 4)) return TW_ERR_FAULT;
  slots[index] = __atomic_fetch_add(counter, 1u, __ATOMIC_SEQ_CST);
  return 0;
}

/* count_dispatch(global uint *counter, uint value): work-item (0,0,0) atomically adds value. */
KFD_EMU_TWIN(count_dispatch) {
  uint32_t *counter, value;
  if (tw_arg_ptr(d, 0, (void **)&counter) || tw_arg_val(d, 1, &value, sizeof(value)))
    return TW_ERR_ARG;
  if (!tw_is_first_group(wg)) return 0;
  if (!tw_reach(d, counter, 0, 1, 4)) return TW_ERR_FAULT;
  __atomic_fetch_add(counter, value, __ATOMIC_SEQ_CST);
  return 0;
}

/* count_pair(global uint *a, uint value, global uint *b): work-item (0,0,0) atomically adds
 * value to *a and to *b. */
KFD_EMU_TWIN(count_pair) {
  uint32_t *a, *b, value;
  if (tw_arg_ptr(d, 0, (void **)&a) || tw_arg_val(d, 1, &value, sizeof(value)) ||
      tw_arg_ptr(d, 2, (void **)&b))
    return TW_ERR_ARG;
  if (!tw_is_first_group(wg)) return 0;
  if (!tw_reach(d, a, 0, 1, 4) || !tw_reach(d, b, 0, 1, 4)) return TW_ERR_FAULT;
  __atomic_fetch_add(a, value, __ATOMIC_SEQ_CST);
  __atomic_fetch_add(b, value, __ATOMIC_SEQ_CST);
  return 0;
}

/* count_scaled(uint value, uint scale, global uint *counter): work-item (0,0,0) atomically adds
 * value * scale. */
KFD_EMU_TWIN(count_scaled) {
  uint32_t *counter, value, scale;
  if (tw_arg_val(d, 0, &value, sizeof(value)) || tw_arg_val(d, 1, &scale, sizeof(scale)) ||
      tw_arg_ptr(d, 2, (void **)&counter))
    return TW_ERR_ARG;
  if (!tw_is_first_group(wg)) return 0;
  if (!tw_reach(d, counter, 0, 1, 4)) return TW_ERR_FAULT;
  __atomic_fetch_add(counter, value * scale, __ATOMIC_SEQ_CST);
  return 0;
}

/* The reduction tree of kernels/lds_reduce.cl, run on `tmp` (the workgroup's LDS). Only 1-D
 * workgroups of at most LDS_REDUCE_MAX work-items are supported: with more rows, the rows would
 * race on the same LDS words on hardware. */
#define LDS_REDUCE_MAX 256u

static int lds_reduce_group(const kfd_emu_dispatch_t *d, const kfd_emu_workgroup_t *wg,
                            const float *in, float *partial, uint32_t n, uint32_t lds_offset,
                            uint32_t lds_need) {
  uint32_t lsz = wg->size[0];
  if (tw_rows(wg) != 1 || d->block[0] > LDS_REDUCE_MAX) return TW_ERR_SHAPE;
  uint32_t lds_size = d->packet->group_segment_size;
  if (!d->group_segment || lds_offset > lds_size || lds_size - lds_offset < lds_need)
    return TW_ERR_FAULT;
  uint64_t lo, hi;
  tw_span(wg, n, &lo, &hi);
  if (!tw_reach(d, in, lo, hi - lo, 4) || !tw_reach(d, partial, wg->id[0], 1, 4))
    return TW_ERR_FAULT;
  float *tmp = (float *)(d->group_segment + lds_offset);
  for (uint32_t lid = 0; lid < lsz; lid++) {
    uint64_t gid = (uint64_t)wg->base[0] + lid;
    if (gid < n && !in) return TW_ERR_FAULT;
    tmp[lid] = gid < n ? in[gid] : 0.0f;
  }
  for (uint32_t s = LDS_REDUCE_MAX / 2; s > 0; s >>= 1)
    for (uint32_t lid = 0; lid < s && lid + s < lsz; lid++) tmp[lid] += tmp[lid + s];
  if (!partial) return TW_ERR_FAULT;
  partial[wg->id[0]] = tmp[0];
  return 0;
}

/* lds_reduce(global const float *in, global float *partial, uint n): a static
 * __local float[256] at group segment offset 0 (.group_segment_fixed_size 1024, which the
 * packet's group_segment_size must cover). */
KFD_EMU_TWIN(lds_reduce) {
  float *in, *partial;
  uint32_t n;
  if (tw_arg_ptr(d, 0, (void **)&in) || tw_arg_ptr(d, 1, (void **)&partial) ||
      tw_arg_val(d, 2, &n, sizeof(n)))
    return TW_ERR_ARG;
  return lds_reduce_group(d, wg, in, partial, n, 0, LDS_REDUCE_MAX * sizeof(float));
}

/* lds_reduce_dyn(global const float *in, global float *partial, uint n, local float *tmp):
 * tmp is the dynamic group segment at the offset the kernarg holds; the workgroup uses
 * workgroup size * 4 bytes of it. */
KFD_EMU_TWIN(lds_reduce_dyn) {
  float *in, *partial;
  uint32_t n, lds_offset;
  if (tw_arg_ptr(d, 0, (void **)&in) || tw_arg_ptr(d, 1, (void **)&partial) ||
      tw_arg_val(d, 2, &n, sizeof(n)) || tw_arg_lds(d, 3, &lds_offset))
    return TW_ERR_ARG;
  return lds_reduce_group(d, wg, in, partial, n, lds_offset, wg->size[0] * sizeof(float));
}

/* big_private(global const uint *in, global uint *out, uint n): see kernels/big_private.cl. */
#define BIG_PRIVATE_WORDS 1024u

KFD_EMU_TWIN(big_private) {
  uint32_t *in, *out, n;
  if (tw_arg_ptr(d, 0, (void **)&in) || tw_arg_ptr(d, 1, (void **)&out) ||
      tw_arg_val(d, 2, &n, sizeof(n)))
    return TW_ERR_ARG;
  uint64_t lo, hi;
  tw_span(wg, n, &lo, &hi);
  if (!tw_reach(d, in, lo, hi - lo, 4) || !tw_reach(d, out, lo, hi - lo, 4)) return TW_ERR_FAULT;
  uint32_t p[BIG_PRIVATE_WORDS];
  for (uint64_t r = 0; r < tw_rows(wg); r++)
    for (uint64_t lx = 0; lx < wg->size[0]; lx++) {
      uint64_t i = (uint64_t)wg->base[0] + lx;
      if (i >= n) continue;
      if (!in || !out) return TW_ERR_FAULT;
      uint32_t s = in[i];
      for (uint32_t k = 0; k < BIG_PRIVATE_WORDS; k++) p[k] = s ^ (k * 2654435761u);
      uint32_t j = s & (BIG_PRIVATE_WORDS - 1), acc = 0;
      for (uint32_t k = 0; k < BIG_PRIVATE_WORDS; k++) {
        acc += p[j];
        j = (j * 5 + 1) & (BIG_PRIVATE_WORDS - 1);
      }
      out[i] = acc;
    }
  return 0;
}

/* hip_vector_add(const float *a, const float *b, float *c, unsigned int n), the extern "C"
 * kernel of kernels/hip/vector_add.hip: i = blockIdx.x * blockDim.x + threadIdx.x in 32-bit
 * unsigned arithmetic, where HIP's blockDim.x is __ockl_get_local_size(0), the size of THIS
 * workgroup (smaller in a partial last workgroup, which HIP's own launches never produce). */
KFD_EMU_TWIN(hip_vector_add) {
  float *a, *b, *c;
  uint32_t n;
  if (tw_arg_ptr(d, 0, (void **)&a) || tw_arg_ptr(d, 1, (void **)&b) ||
      tw_arg_ptr(d, 2, (void **)&c) || tw_arg_val(d, 3, &n, sizeof(n)))
    return TW_ERR_ARG;
  uint64_t lo = (uint64_t)wg->id[0] * wg->size[0], hi = lo + wg->size[0];
  if (hi > n) hi = n;
  if (lo < hi && (!tw_reach(d, a, lo, hi - lo, 4) || !tw_reach(d, b, lo, hi - lo, 4) ||
                  !tw_reach(d, c, lo, hi - lo, 4)))
    return TW_ERR_FAULT;
  for (uint64_t r = 0; r < tw_rows(wg); r++)
    for (uint32_t lx = 0; lx < wg->size[0]; lx++) {
      uint32_t i = wg->id[0] * wg->size[0] + lx;
      if (i >= n) continue;
      if (!a || !b || !c) return TW_ERR_FAULT;
      c[i] = a[i] + b[i];
    }
  return 0;
}

/* args72(global ulong *out, ulong a0, ..., ulong a71): work-item 0 stores out[i] = a_i */
KFD_EMU_TWIN(args72) {
  uint64_t *out, v[72];
  if (tw_arg_ptr(d, 0, (void **)&out)) return TW_ERR_ARG;
  for (uint32_t i = 0; i < 72; i++)
    if (tw_arg_val(d, 1 + i, &v[i], sizeof v[i])) return TW_ERR_ARG;
  if (wg->id[0] || wg->id[1] || wg->id[2]) return 0; /* work-item 0 is in workgroup 0 */
  if (!tw_reach(d, out, 0, 72, 8)) return TW_ERR_FAULT;
  for (uint32_t i = 0; i < 72; i++) out[i] = v[i];
  return 0;
}

/* struct_Nk(global uint *out, struct { uint v[words]; } b, uint n):
 * out[i] = b.v[i % words] + i for i < n */
static int tw_struct_words(const kfd_emu_dispatch_t *d, const kfd_emu_workgroup_t *wg,
                           uint32_t words) {
  uint32_t *out, b[2048], n;
  if (tw_arg_ptr(d, 0, (void **)&out) || tw_arg_val(d, 1, b, words * 4u) ||
      tw_arg_val(d, 2, &n, sizeof n))
    return TW_ERR_ARG;
  uint64_t lo, hi;
  tw_span(wg, n, &lo, &hi);
  if (!tw_reach(d, out, lo, hi - lo, 4)) return TW_ERR_FAULT;
  for (uint64_t r = 0; r < tw_rows(wg); r++)
    for (uint64_t i = lo; i < hi; i++) out[i] = b[i % words] + (uint32_t)i;
  return 0;
}
KFD_EMU_TWIN(struct_1k) { return tw_struct_words(d, wg, 256); }
KFD_EMU_TWIN(struct_4k) { return tw_struct_words(d, wg, 1024); }
KFD_EMU_TWIN(struct_8k) { return tw_struct_words(d, wg, 2048); }

/* scale4(global float4 *y, float4 s, uint n): y[i] = y[i] * s (per component) for i < n */
KFD_EMU_TWIN(scale4) {
  float *y, s[4];
  uint32_t n;
  if (tw_arg_ptr(d, 0, (void **)&y) || tw_arg_val(d, 1, s, sizeof s) ||
      tw_arg_val(d, 2, &n, sizeof n))
    return TW_ERR_ARG;
  uint64_t lo, hi;
  tw_span(wg, n, &lo, &hi);
  if (!tw_reach(d, y, lo, hi - lo, 16)) return TW_ERR_FAULT;
  for (uint64_t r = 0; r < tw_rows(wg); r++)
    for (uint64_t i = lo; i < hi; i++)
      for (int c = 0; c < 4; c++) y[i * 4 + c] *= s[c];
  return 0;
}

/* The library's graph copy and fill kernels (fusion/blit.c): 16 bytes per work-item.
 * hsad_graph_copy(global uchar *dst, global const uchar *src, ulong bytes) */
KFD_EMU_TWIN(hsad_graph_copy) {
  uint8_t *dst, *src;
  uint64_t bytes;
  if (tw_arg_ptr(d, 0, (void **)&dst) || tw_arg_ptr(d, 1, (void **)&src) ||
      tw_arg_val(d, 2, &bytes, sizeof(bytes)))
    return TW_ERR_ARG;
  uint64_t lo, hi;
  tw_span(wg, (bytes + 15) / 16, &lo, &hi);
  uint64_t b0 = lo * 16, b1 = hi * 16 < bytes ? hi * 16 : bytes;
  if (b1 <= b0) return 0;
  if (!tw_reach(d, dst, b0, b1 - b0, 1) || !tw_reach(d, src, b0, b1 - b0, 1)) return TW_ERR_FAULT;
  for (uint64_t j = b0; j < b1; j++) dst[j] = src[j];
  return 0;
}

/* hsad_graph_fill(global uchar *dst, uint pattern, uint width, ulong bytes): byte j is byte
 * (j % width) of the little-endian pattern. */
KFD_EMU_TWIN(hsad_graph_fill) {
  uint8_t *dst;
  uint32_t pattern, width;
  uint64_t bytes;
  if (tw_arg_ptr(d, 0, (void **)&dst) || tw_arg_val(d, 1, &pattern, sizeof(pattern)) ||
      tw_arg_val(d, 2, &width, sizeof(width)) || tw_arg_val(d, 3, &bytes, sizeof(bytes)))
    return TW_ERR_ARG;
  if (width == 0) return TW_ERR_SHAPE; /* the kernel would divide by zero */
  uint64_t lo, hi;
  tw_span(wg, (bytes + 15) / 16, &lo, &hi);
  uint64_t b0 = lo * 16, b1 = hi * 16 < bytes ? hi * 16 : bytes;
  if (b1 <= b0) return 0;
  if (!tw_reach(d, dst, b0, b1 - b0, 1)) return TW_ERR_FAULT;
  for (uint64_t j = b0; j < b1; j++) dst[j] = (uint8_t)(pattern >> (8 * (uint32_t)(j % width)));
  return 0;
}
