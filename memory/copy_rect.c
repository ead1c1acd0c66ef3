/* copy_rect.c - 2-D/3-D (pitched) copies: one box of width bytes x height rows x depth slices,
 * each side with its own row pitch and slice pitch (hsad_memcpy_2d_async, hsad_memcpy_3d_async).
 *
 * Checks first (nothing is submitted for a box that would be refused): the geometry (pitch at
 * least the width, slice pitch at least pitch x height), each side's footprint (first byte of
 * row 0 to the last byte of the last row) inside one allocation, no pageable side, no byte of
 * a destination row in a source row (exact, row by row, only when the footprints overlap), and
 * access of the GPU that runs the copy to both sides.
 *
 * Then the copy: ROCr's SDMA rectangle copy (hsa_amd_memory_async_copy_rect, one call) where
 * ROCr 5.2.3 takes it, else one hsa_amd_memory_async_copy per run of rows (a run: rows that lie
 * back to back on both sides, i.e. width == both pitches, merged into one DMA; the whole box
 * when the slice pitches also equal width x height). ROCr 5.2.3's rules for the rectangle copy
 * (hsa_ext_amd.cpp, amd_gpu_agent.cpp DmaCopyRect, amd_blit_sdma.cpp SubmitCopyRectCommand):
 * a GPU agent copies, one side at least is device memory (host-to-host is refused), both base
 * addresses and pitches (slice pitches when depth > 1) are multiples of 4 bytes, each extent
 * fits hsa_dim3_t's 32 bits, and the GPU has an SDMA engine for the direction (else
 * HSA_STATUS_ERROR_OUT_OF_RESOURCES; pitches beyond the SDMA packet's fields give
 * HSA_STATUS_ERROR_INVALID_ARGUMENT). This library checks the first four itself and falls back
 * to rows when ROCr answers either of the two statuses; kfd-emu has no SDMA queues (ROCr uses
 * blit kernels for every copy there), so on kfd-emu every box goes by rows.
 */
#include <stdio.h>
#include <string.h>

#include "memory/mem_internal.h"

typedef __int128 i128;

static i128 floor_div(i128 a, i128 b) { /* b > 0 */
  i128 q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* Bytes from a side's first byte to one past its last: (depth-1)*slice + (height-1)*pitch +
 * width; false when it does not fit size_t. */
static bool footprint(size_t pitch, size_t slice, const mem_rect_t *r, size_t *out) {
  size_t a = 0, b = 0, f = 0;
  if (__builtin_mul_overflow(r->depth - 1, slice, &a) ||
      __builtin_mul_overflow(r->height - 1, pitch, &b) || __builtin_add_overflow(a, b, &f) ||
      __builtin_add_overflow(f, r->width, &f))
    return false;
  *out = f;
  return true;
}

/* Checks one side's pitches; `role` is "destination" or "source". */
static hsad_status_t geometry_check(const char *what, const char *role, size_t pitch,
                                    size_t slice, const mem_rect_t *r, size_t *out_span) {
  if (pitch < r->width)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: the %s pitch %zu is smaller than the width "
                     "%zu bytes (its rows would overlap)", what, role, pitch, r->width);
  if (r->depth > 1) {
    size_t plane = 0;
    if (__builtin_mul_overflow(pitch, r->height, &plane))
      return hsad_fail(HSAD_ERR_RANGE, "%s: the %s pitch %zu x height %zu overflows size_t", what,
                       role, pitch, r->height);
    if (slice < plane)
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: the %s slice pitch %zu is smaller than "
                       "pitch %zu x height %zu = %zu bytes (its slices would overlap)", what,
                       role, slice, pitch, r->height, plane);
  }
  if (!footprint(pitch, r->depth > 1 ? slice : 0, r, out_span))
    return hsad_fail(HSAD_ERR_RANGE, "%s: the %s box (%zu x %zu x %zu bytes, pitch %zu, slice "
                     "pitch %zu) spans more than size_t", what, role, r->width, r->height,
                     r->depth, pitch, slice);
  return HSAD_OK;
}

/* The first destination row (dy, dz) that shares a byte with a source row (sy, sz); false when
 * none does. Rows of a side never overlap each other (pitch >= width, slice >= pitch * height),
 * so for each destination row at most two source slices and, in each, one source row can be
 * the first to reach it. */
static bool rows_overlap(const mem_rect_t *r, size_t s_span, size_t out[4]) {
  const i128 w = (i128)r->width, s = (i128)(uintptr_t)r->src, sp = (i128)r->spitch;
  const i128 ss = r->depth > 1 ? (i128)r->sslice : 1, fs = (i128)s_span;
  const i128 f1 = (i128)(r->height - 1) * sp + w; /* one source slice's footprint */
  for (size_t dz = 0; dz < r->depth; dz++)
    for (size_t dy = 0; dy < r->height; dy++) {
      i128 a = (i128)(uintptr_t)r->dst + (i128)dz * (i128)r->dslice + (i128)dy * (i128)r->dpitch;
      if (a + w <= s || a >= s + fs) continue;
      i128 zlo = r->depth > 1 ? floor_div(a - s - f1, ss) + 1 : 0;
      if (zlo < 0) zlo = 0;
      for (i128 z = zlo; z < (i128)r->depth && z <= zlo + 1; z++) {
        i128 base = s + z * (r->depth > 1 ? ss : 0);
        if (base >= a + w) break;
        i128 y = floor_div(a - base - w, sp) + 1;
        if (y < 0) y = 0;
        if (y < (i128)r->height && base + y * sp < a + w) {
          out[0] = dy, out[1] = dz, out[2] = (size_t)y, out[3] = (size_t)z;
          return true;
        }
      }
    }
  return false;
}

static bool rocr_takes(const mem_side_t *d, const mem_side_t *s, const mem_rect_t *r) {
  if (!d->device_mem && !s->device_mem) return false; /* hsaHostToHost: refused by ROCr */
  uintptr_t a = (uintptr_t)d->gpu_p | (uintptr_t)s->gpu_p;
  size_t p = r->dpitch | r->spitch | (r->depth > 1 ? (r->dslice | r->sslice) : 0);
  return a % 4 == 0 && p % 4 == 0 && r->width <= UINT32_MAX && r->height <= UINT32_MAX &&
         r->depth <= UINT32_MAX;
}

/* The k-th run of rows: where it starts on each side and its bytes. */
typedef struct runs {
  size_t n, len;        /* runs, bytes per run */
  size_t per_slice;     /* runs per slice */
} runs_t;

static runs_t runs_of(const mem_rect_t *r) {
  bool rows_packed = r->width == r->dpitch && r->width == r->spitch;
  if (rows_packed && (r->depth == 1 ||
                      (r->dslice == r->width * r->height && r->sslice == r->dslice)))
    return (runs_t){1, r->width * r->height * r->depth, 1};
  if (rows_packed) return (runs_t){r->depth, r->width * r->height, 1};
  return (runs_t){r->height * r->depth, r->width, r->height};
}

static size_t run_offset(const runs_t *u, size_t k, size_t pitch, size_t slice) {
  return (k / u->per_slice) * slice + (k % u->per_slice) * pitch;
}

hsad_status_t mem_rect_start(const char *what, hsad_device_t *device, const mem_rect_t *r,
                             const hsa_signal_t *deps, uint32_t dep_count,
                             hsa_signal_t completion, bool check_only,
                             const mem_report_t *report) {
  hsad_status_t s;
  size_t dspan = 0, sspan = 0;
  if ((s = geometry_check(what, "destination", r->dpitch, r->dslice, r, &dspan))) return s;
  if ((s = geometry_check(what, "source", r->spitch, r->sslice, r, &sspan))) return s;
  mem_side_t d, sr;
  if ((s = mem_side_classify(what, "destination", r->dst, dspan, &d))) return s;
  if ((s = mem_side_classify(what, "source", r->src, sspan, &sr))) return s;
  if (d.pageable || sr.pageable)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: the %s %p is pageable host memory: a 2-D/3-D "
                     "copy needs memory the GPU reaches (hsad_mem_alloc, hsad_mem_register or a "
                     "host pool block)", what, d.pageable ? "destination" : "source",
                     d.pageable ? (const void *)r->dst : (const void *)r->src);
  size_t at[4];
  if (rows_overlap(r, sspan, at))
    return hsad_fail(HSAD_ERR_OVERLAP, "%s: destination row %zu of slice %zu (%p) and source row "
                     "%zu of slice %zu (%p) overlap", what, at[0], at[1],
                     (void *)(r->dst + at[1] * r->dslice + at[0] * r->dpitch), at[2], at[3],
                     (const void *)(r->src + at[3] * r->sslice + at[2] * r->spitch));
  uint32_t dev = mem_device_index(device);
  uint32_t bd = sr.device_mem ? sr.owner : d.device_mem ? d.owner : dev;
  if ((s = mem_side_access(what, "destination", &d, bd))) return s;
  if ((s = mem_side_access(what, "source", &sr, bd))) return s;
  if (check_only) return HSAD_OK;

  hsa_agent_t gpu = mem_st.gpu_agents[bd], cpu = mem_cpu_agent_of(device);
  if (rocr_takes(&d, &sr, r)) {
    hsa_pitched_ptr_t pd = {d.gpu_p, r->dpitch, r->depth > 1 ? r->dslice : 0};
    hsa_pitched_ptr_t ps = {sr.gpu_p, r->spitch, r->depth > 1 ? r->sslice : 0};
    hsa_dim3_t zero = {0, 0, 0};
    hsa_dim3_t range = {(uint32_t)r->width, (uint32_t)r->height, (uint32_t)r->depth};
    hsa_amd_copy_direction_t dir = d.device_mem && sr.device_mem ? hsaDeviceToDevice
                                   : d.device_mem                ? hsaHostToDevice
                                                                 : hsaDeviceToHost;
    hsa_status_t st = mem_rocr.hsa_amd_memory_async_copy_rect(
        &pd, &zero, &ps, &zero, &range, gpu, dir, dep_count, dep_count ? deps : NULL, completion);
    if (st == HSA_STATUS_SUCCESS) return HSAD_OK;
    if (st != HSA_STATUS_ERROR_OUT_OF_RESOURCES && st != HSA_STATUS_ERROR_INVALID_ARGUMENT)
      return mem_hsa_fail(st, "%s: hsa_amd_memory_async_copy_rect(%zu x %zu x %zu bytes)", what,
                          r->width, r->height, r->depth);
    /* no SDMA engine, or beyond its packet's limits: rows */
  }
  hsa_agent_t dst_agent = d.device_mem ? mem_st.gpu_agents[d.owner] : cpu;
  hsa_agent_t src_agent = sr.device_mem ? mem_st.gpu_agents[sr.owner] : d.device_mem ? cpu : gpu;
  runs_t u = runs_of(r);
  /* set before the first DMA: each decrements it once (the waiter sees 0 after the last) */
  mem_rocr.hsa_signal_store_screlease(completion, (hsa_signal_value_t)u.n);
  for (size_t k = 0; k < u.n; k++) {
    size_t od = run_offset(&u, k, r->dpitch, r->dslice), os = run_offset(&u, k, r->spitch,
                                                                          r->sslice);
    hsa_status_t st = mem_rocr.hsa_amd_memory_async_copy(d.gpu_p + od, dst_agent, sr.gpu_p + os,
                                                         src_agent, u.len, dep_count,
                                                         dep_count ? deps : NULL, completion);
    if (st == HSA_STATUS_SUCCESS) continue;
    if (k == 0) { /* nothing in flight */
      mem_rocr.hsa_signal_store_screlease(completion, 1);
      return mem_hsa_fail(st, "%s: hsa_amd_memory_async_copy(row run 0 of %zu, %zu bytes, %p <- "
                          "%p)", what, u.n, u.len, (void *)r->dst, (const void *)r->src);
    }
    /* a later run refused: the runs in flight finish, the completion is reached after them,
     * and the refusal is kept for its waiter */
    const char *hs = NULL;
    if (mem_rocr.hsa_status_string(st, &hs) != HSA_STATUS_SUCCESS || !hs) hs = "unknown status";
    char msg[512];
    snprintf(msg, sizeof msg, "%s: hsa_amd_memory_async_copy refused row run %zu of %zu (%zu "
             "bytes at destination %p): HSA status 0x%x (%s); the copy stopped there: %zu of "
             "%zu bytes were not copied", what, k, u.n, u.len, (void *)(r->dst + od),
             (unsigned)st, hs, (u.n - k) * u.len, u.n * u.len);
    mem_fail_keep(report ? *report : (mem_report_t){NULL, completion.handle}, msg);
    mem_rocr.hsa_signal_subtract_screlease(completion, (hsa_signal_value_t)(u.n - k));
    break;
  }
  return HSAD_OK;
}
