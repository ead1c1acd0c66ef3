/* twins_rocclr.c - host twins of HIP's (ROCclr's) buffer blit kernels, so hipMemcpy (device to
 * device, and any copy ROCclr does with kernels) and hipMemset run on kfd-emu.
 *
 * ROCclr 5.2.3 compiles these kernels at run time from OpenCL source (ROCclr device/blitcl.cpp,
 * device/rocm/rocblitcl.cpp); each __amd_rocclr_X kernel calls __amd_X, which ROCm-Device-Libs
 * 5.2.3 defines (opencl/src/misc/amdblit.cl). The semantics below are those of that source,
 * restated per kernel; the explicit arguments are read through the metadata of the code object
 * ROCclr built. ROCclr launches them with a zero global offset.
 *
 * Not covered (no twin, so a dispatch is a queue error naming the kernel): the image kernels
 * (__amd_rocclr_fillImage, copyImage, copyImage1DA, copyBufferToImage, copyImageToBuffer: they
 * need image descriptors), __amd_rocclr_scheduler (device enqueue) and __amd_rocclr_gwsInit
 * (global wave sync; kfd-emu refuses GWS allocation, so HIP does not launch it).
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "kernels/twins_util.h"

/* ulong4 kernel argument (32 bytes). */
typedef struct tw_ulong4 {
  uint64_t x, y, z, w;
} tw_ulong4_t;

/* Copies the bytes that work-items [lo, hi) of a 1-D copy kernel move when work-item i moves
 * `unit` bytes from src + i * unit to dst + i * unit. Identical to doing it work-item by
 * work-item for non-overlapping buffers; memmove keeps overlapping ones defined. */
static void tw_copy_units(uint8_t *dst, const uint8_t *src, uint64_t lo, uint64_t hi,
                          uint64_t unit) {
  if (hi > lo) memmove(dst + lo * unit, src + lo * unit, (hi - lo) * unit);
}

/* __amd_rocclr_copyBuffer(global uchar *srcI, global uchar *dstI, ulong srcOrigin,
 *                         ulong dstOrigin, ulong size, uint remain)
 * src = srcI + srcOrigin, dst = dstI + dstOrigin; work-item id < size:
 *   remain == 8:        dst[id] = src[id]                              (byte copy)
 *   else id < size - 1: ((uint *)dst)[id] = ((uint *)src)[id]          (dword copy)
 *   else (id == size-1): bytes id*4 .. id*4 + remain - 1 copied one by one.
 * ROCclr passes size = bytes / 4 + 1 and remain = bytes % 4. */
KFD_EMU_TWIN(__amd_rocclr_copyBuffer) {
  uint8_t *src, *dst;
  uint64_t src_origin, dst_origin, size;
  uint32_t remain;
  if (tw_arg_ptr(d, 0, (void **)&src) || tw_arg_ptr(d, 1, (void **)&dst) ||
      tw_arg_val(d, 2, &src_origin, 8) || tw_arg_val(d, 3, &dst_origin, 8) ||
      tw_arg_val(d, 4, &size, 8) || tw_arg_val(d, 5, &remain, 4))
    return TW_ERR_ARG;
  uint64_t lo = wg->base[0], hi = lo + wg->size[0];
  if (hi > size) hi = size;
  if (lo >= hi) return 0;
  if (!src || !dst) return TW_ERR_FAULT;
  src += src_origin;
  dst += dst_origin;
  for (uint64_t r = 0; r < tw_rows(wg); r++) {
    if (remain == 8) {
      tw_copy_units(dst, src, lo, hi, 1);
      continue;
    }
    uint64_t last = size - 1; /* the one work-item that copies `remain` bytes */
    tw_copy_units(dst, src, lo, hi < last ? hi : last, 4);
    if (hi > last && last >= lo)
      for (uint32_t i = 0; i < remain; ++i) dst[last * 4 + i] = src[last * 4 + i];
  }
  return 0;
}

/* __amd_rocclr_copyBufferAligned(global uint *src, global uint *dst, ulong srcOrigin,
 *                                ulong dstOrigin, ulong size, uint alignment)
 * work-item id < size: alignment == 16: uint4 element id + srcOrigin -> id + dstOrigin;
 * otherwise the same with uint elements. Origins are in elements. */
KFD_EMU_TWIN(__amd_rocclr_copyBufferAligned) {
  uint8_t *src, *dst;
  uint64_t src_origin, dst_origin, size;
  uint32_t alignment;
  if (tw_arg_ptr(d, 0, (void **)&src) || tw_arg_ptr(d, 1, (void **)&dst) ||
      tw_arg_val(d, 2, &src_origin, 8) || tw_arg_val(d, 3, &dst_origin, 8) ||
      tw_arg_val(d, 4, &size, 8) || tw_arg_val(d, 5, &alignment, 4))
    return TW_ERR_ARG;
  uint64_t lo = wg->base[0], hi = lo + wg->size[0];
  if (hi > size) hi = size;
  if (lo >= hi) return 0;
  if (!src || !dst) return TW_ERR_FAULT;
  uint64_t unit = alignment == 16 ? 16 : 4;
  for (uint64_t r = 0; r < tw_rows(wg); r++)
    tw_copy_units(dst + dst_origin * unit, src + src_origin * unit, lo, hi, unit);
  return 0;
}

/* Shared body of copyBufferRect (unit 1) and copyBufferRectAligned (unit 4, or 16 when
 * size.w == 16): work-item (x, y, z) with x < size.x, y < size.y, z < size.z copies element
 *   rect.z + x + y * rect.x + z * rect.y     (rect = {row pitch, slice pitch, origin}, elements)
 * from src to dst. */
static int tw_copy_rect(const kfd_emu_dispatch_t *d, const kfd_emu_workgroup_t *wg, int aligned) {
  uint8_t *src, *dst;
  tw_ulong4_t sr, dr, sz;
  if (tw_arg_ptr(d, 0, (void **)&src) || tw_arg_ptr(d, 1, (void **)&dst) ||
      tw_arg_val(d, 2, &sr, 32) || tw_arg_val(d, 3, &dr, 32) || tw_arg_val(d, 4, &sz, 32))
    return TW_ERR_ARG;
  uint64_t unit = !aligned ? 1 : sz.w == 16 ? 16 : 4;
  for (uint64_t lz = 0; lz < wg->size[2]; lz++) {
    uint64_t z = (uint64_t)wg->base[2] + lz;
    if (z >= sz.z) continue;
    for (uint64_t ly = 0; ly < wg->size[1]; ly++) {
      uint64_t y = (uint64_t)wg->base[1] + ly;
      if (y >= sz.y) continue;
      uint64_t lo = wg->base[0], hi = lo + wg->size[0];
      if (hi > sz.x) hi = sz.x;
      if (lo >= hi) continue;
      if (!src || !dst) return TW_ERR_FAULT;
      uint64_t so = sr.z + y * sr.x + z * sr.y, dof = dr.z + y * dr.x + z * dr.y;
      tw_copy_units(dst + dof * unit, src + so * unit, lo, hi, unit);
    }
  }
  return 0;
}

/* __amd_rocclr_copyBufferRect(global uchar *src, global uchar *dst, ulong4 srcRect,
 *                             ulong4 dstRect, ulong4 size) */
KFD_EMU_TWIN(__amd_rocclr_copyBufferRect) { return tw_copy_rect(d, wg, 0); }

/* __amd_rocclr_copyBufferRectAligned(global uint *src, global uint *dst, ulong4 srcRect,
 *                                    ulong4 dstRect, ulong4 size) */
KFD_EMU_TWIN(__amd_rocclr_copyBufferRectAligned) { return tw_copy_rect(d, wg, 1); }

/* The fill kernels take four views of one buffer and use the first non-NULL one of
 * bufULong (unit 8), bufUInt (4), bufUShort (2), else bufUChar (1); the pattern (a constant
 * buffer) is read in the same unit. */
static int tw_fill_args(const kfd_emu_dispatch_t *d, uint8_t **out_buf, uint64_t *out_unit,
                        const uint8_t **out_pattern, uint32_t *out_pattern_size) {
  void *b[4], *pattern;
  if (tw_arg_ptr(d, 0, &b[0]) || tw_arg_ptr(d, 1, &b[1]) || tw_arg_ptr(d, 2, &b[2]) ||
      tw_arg_ptr(d, 3, &b[3]) || tw_arg_ptr(d, 4, &pattern) ||
      tw_arg_val(d, 5, out_pattern_size, 4))
    return TW_ERR_ARG;
  if (b[3]) *out_buf = b[3], *out_unit = 8;
  else if (b[2]) *out_buf = b[2], *out_unit = 4;
  else if (b[1]) *out_buf = b[1], *out_unit = 2;
  else *out_buf = b[0], *out_unit = 1;
  *out_pattern = pattern;
  return 0;
}

/* __amd_rocclr_fillBufferAligned(global uchar *bufUChar, global ushort *bufUShort,
 *     global uint *bufUInt, global ulong *bufULong, constant uchar *pattern, uint patternSize,
 *     ulong offset, ulong size)
 * work-item id < size: elements offset + id * patternSize .. + patternSize - 1 of the chosen
 * view = pattern elements 0 .. patternSize - 1 (offset and patternSize in elements). */
KFD_EMU_TWIN(__amd_rocclr_fillBufferAligned) {
  uint8_t *buf;
  const uint8_t *pattern;
  uint64_t unit, offset, size;
  uint32_t psize;
  int rc = tw_fill_args(d, &buf, &unit, &pattern, &psize);
  if (rc) return rc;
  if (tw_arg_val(d, 6, &offset, 8) || tw_arg_val(d, 7, &size, 8)) return TW_ERR_ARG;
  uint64_t lo = wg->base[0], hi = lo + wg->size[0];
  if (hi > size) hi = size;
  if (lo >= hi || psize == 0) return 0;
  if (!buf || !pattern) return TW_ERR_FAULT;
  uint64_t pbytes = (uint64_t)psize * unit;
  for (uint64_t r = 0; r < tw_rows(wg); r++)
    for (uint64_t id = lo; id < hi; id++)
      memcpy(buf + (offset + id * psize) * unit, pattern, pbytes);
  return 0;
}

/* __amd_rocclr_fillBufferAligned2D(same four views, constant uchar *pattern, uint patternSize,
 *     ulong origin, ulong width, ulong height, ulong pitch)
 * work-item (x, y) with x < width, y < height: elements origin + y * pitch + x ..
 * + patternSize - 1 = the pattern (note: x is NOT scaled by patternSize, as in the source). */
KFD_EMU_TWIN(__amd_rocclr_fillBufferAligned2D) {
  void *b[4], *pattern;
  uint32_t psize;
  uint64_t origin, width, height, pitch;
  if (tw_arg_ptr(d, 0, &b[0]) || tw_arg_ptr(d, 1, &b[1]) || tw_arg_ptr(d, 2, &b[2]) ||
      tw_arg_ptr(d, 3, &b[3]) || tw_arg_ptr(d, 4, &pattern) || tw_arg_val(d, 5, &psize, 4) ||
      tw_arg_val(d, 6, &origin, 8) || tw_arg_val(d, 7, &width, 8) ||
      tw_arg_val(d, 8, &height, 8) || tw_arg_val(d, 9, &pitch, 8))
    return TW_ERR_ARG;
  /* Unlike the 1-D kernel, the last branch tests bufUChar: all four NULL writes nothing. */
  uint8_t *buf;
  uint64_t unit;
  if (b[3]) buf = b[3], unit = 8;
  else if (b[2]) buf = b[2], unit = 4;
  else if (b[1]) buf = b[1], unit = 2;
  else if (b[0]) buf = b[0], unit = 1;
  else return 0;
  for (uint64_t lz = 0; lz < wg->size[2]; lz++)
    for (uint64_t ly = 0; ly < wg->size[1]; ly++) {
      uint64_t y = (uint64_t)wg->base[1] + ly;
      if (y >= height) continue;
      for (uint64_t lx = 0; lx < wg->size[0]; lx++) {
        uint64_t x = (uint64_t)wg->base[0] + lx;
        if (x >= width) break;
        if (psize == 0) continue;
        if (!pattern) return TW_ERR_FAULT;
        memcpy((uint8_t *)buf + (origin + y * pitch + x) * unit, pattern, (uint64_t)psize * unit);
      }
    }
  return 0;
}

/* __amd_rocclr_streamOpsWrite(global uint *ptrInt, global ulong *ptrUlong, ulong value,
 *                             ulong sizeBytes)
 * (launched with one work-item) ptrInt != NULL: *ptrInt = (uint)value, else
 * *ptrUlong = value; relaxed atomic stores. Device-Libs 5.2.3's __amd_streamOpsWrite takes three
 * arguments, so sizeBytes is ignored. */
KFD_EMU_TWIN(__amd_rocclr_streamOpsWrite) {
  uint32_t *p32;
  uint64_t *p64, value;
  if (tw_arg_ptr(d, 0, (void **)&p32) || tw_arg_ptr(d, 1, (void **)&p64) ||
      tw_arg_val(d, 2, &value, 8))
    return TW_ERR_ARG;
  for (uint64_t i = 0; i < (uint64_t)wg->size[0] * tw_rows(wg); i++) {
    if (p32) {
      __atomic_store_n(p32, (uint32_t)value, __ATOMIC_RELAXED);
    } else {
      if (!p64) return TW_ERR_FAULT;
      __atomic_store_n(p64, value, __ATOMIC_RELAXED);
    }
  }
  return 0;
}

/* The wait condition of __amd_streamOpsWait, with the source's types (the int / long casts are
 * compared against unsigned values, so every comparison is unsigned). Returns 1 to keep waiting. */
static int tw_stream_wait_more(const uint32_t *p32, const uint64_t *p64, uint64_t value,
                               uint64_t op, uint64_t mask) {
  if (p32) {
    uint32_t v = __atomic_load_n(p32, __ATOMIC_RELAXED);
    switch (op) {
    case 0: return (uint32_t)(int32_t)(v & (uint32_t)mask) < (uint32_t)value;
    case 1: return (v & (uint32_t)mask) != (uint32_t)value;
    case 2: return !((v & (uint32_t)mask) & (uint32_t)value);
    case 3: return ((v | (uint32_t)value) & (uint32_t)mask) == (uint32_t)mask;
    default: return 0;
    }
  }
  uint64_t v = __atomic_load_n(p64, __ATOMIC_RELAXED);
  switch (op) {
  case 0: return (uint64_t)(int64_t)(v & mask) < value;
  case 1: return (v & mask) != value;
  case 2: return !((v & mask) & value);
  case 3: return ((v | value) & mask) == mask;
  default: return 0;
  }
}

/* __amd_rocclr_streamOpsWait(global uint *ptrInt, global ulong *ptrUlong, ulong value,
 *                            ulong flags, ulong mask)
 * (one work-item) spins until the 32-bit (ptrInt != NULL) or 64-bit word satisfies flags:
 * 0 GEQ, 1 EQ, 2 AND, 3 NOR (see tw_stream_wait_more); other flags return at once. Like the
 * kernel, it has no timeout: it holds the emulated GPU's CP until the condition holds. It sleeps
 * 50 us between polls instead of s_sleep, to leave the host's cores to whoever writes the word. */
KFD_EMU_TWIN(__amd_rocclr_streamOpsWait) {
  uint32_t *p32;
  uint64_t *p64, value, op, mask;
  if (tw_arg_ptr(d, 0, (void **)&p32) || tw_arg_ptr(d, 1, (void **)&p64) ||
      tw_arg_val(d, 2, &value, 8) || tw_arg_val(d, 3, &op, 8) || tw_arg_val(d, 4, &mask, 8))
    return TW_ERR_ARG;
  if (!tw_is_first_group(wg)) return 0;
  if (!p32 && !p64) return TW_ERR_FAULT;
  struct timespec nap = {0, 50000};
  while (tw_stream_wait_more(p32, p64, value, op, mask)) nanosleep(&nap, NULL);
  return 0;
}
