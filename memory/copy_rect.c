/* copy_rect.c - 2-D/3-D (pitched) copies: one box of width bytes x height rows x depth slices,
 * each side with its own row pitch and slice pitch (hsad_memcpy_2d_async, hsad_memcpy_3d_async).
 *
 * Checks first (nothing is submitted for a box that would be refused): the geometry (pitch at
 * least the width, slice pitch at least pitch x height), each side's footprint (first byte of
 * row 0 to the last byte of the last row) inside one allocation, not both sides pageable, no
 * byte of a destination row in a source row (exact, row by row, only when the footprints
 * overlap), and access of the GPU that runs the copy to both sides.
 *
 * Then the copy, one "piece" (piece_start): ROCr's SDMA rectangle copy
 * (hsa_amd_memory_async_copy_rect, one call) where ROCr 5.2.3 takes it; else, when the box
 * needs at least mem_blit_min_dmas() DMAs, one dispatch of the copy kernel (rect_blit.c,
 * kernels/copy_rect.cl); else one hsa_amd_memory_async_copy per run of rows (a run: rows that
 * lie back to back on both sides, i.e. width == both pitches, merged into one DMA; the whole
 * box when the slice pitches also equal width x height). ROCr 5.2.3's rules for the rectangle
 * copy (hsa_ext_amd.cpp, amd_gpu_agent.cpp DmaCopyRect, amd_blit_sdma.cpp
 * SubmitCopyRectCommand): a GPU agent copies, one side at least is device memory (host-to-host
 * is refused), both base addresses and pitches (slice pitches when depth > 1) are multiples of
 * 4 bytes, each extent fits hsa_dim3_t's 32 bits, and the GPU has an SDMA engine for the
 * direction (else HSA_STATUS_ERROR_OUT_OF_RESOURCES, remembered per device for the runtime
 * generation so it is asked once; pitches beyond the SDMA packet's fields give
 * HSA_STATUS_ERROR_INVALID_ARGUMENT). This library checks the first four itself and falls back
 * to the kernel or rows when ROCr answers either of the two statuses; kfd-emu has no SDMA
 * queues (ROCr uses blit kernels for every copy there), nor has a GPU under HSA_ENABLE_SDMA=0.
 *
 * A pageable side (malloc'd memory) is staged, packed (see "a pageable side" below).
 */
#include <stdio.h>
#include <stdlib.h>
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

/* The runtime generation in which ROCr said a device has no SDMA engine for the rectangle
 * copy (HSA_STATUS_ERROR_OUT_OF_RESOURCES): later boxes go straight to the kernel or rows. */
static _Atomic uint64_t no_sdma_gen[MEM_MAX_DEVICES];

/* One device-side copy: box g between addresses the GPU uses. */
typedef struct piece {
  mem_rect_t g;
  hsa_agent_t dst_agent, src_agent;
  hsa_amd_copy_direction_t dir;
  bool sdma_ok;   /* ROCr's rectangle copy may take it (rocr_takes) */
  uint32_t bd;    /* the GPU that runs it */
} piece_t;

static piece_t piece_of(const mem_rect_t *g, const mem_side_t *d, const mem_side_t *s,
                        uint32_t bd, hsa_agent_t cpu) {
  piece_t p = {.g = *g, .bd = bd, .sdma_ok = rocr_takes(d, s, g)};
  p.g.dst = d->gpu_p, p.g.src = s->gpu_p;
  p.dst_agent = d->device_mem ? mem_st.gpu_agents[d->owner] : cpu;
  p.src_agent = s->device_mem ? mem_st.gpu_agents[s->owner]
                : d->device_mem ? cpu : mem_st.gpu_agents[bd];
  p.dir = d->device_mem && s->device_mem ? hsaDeviceToDevice
          : d->device_mem                ? hsaHostToDevice
                                         : hsaDeviceToHost;
  return p;
}

/* One DMA per run of rows; `sig` is set to the number of DMAs first (each decrements it).
 * A refusal after the first leaves the runs in flight to finish, takes the rest off the
 * signal, writes the failure to fail_msg and sets *partial. */
static hsad_status_t piece_rows(const char *what, const piece_t *p, const hsa_signal_t *deps,
                                uint32_t ndeps, hsa_signal_t sig, const mem_report_t *keep,
                                char *fail_msg, bool *partial) {
  const mem_rect_t *r = &p->g;
  runs_t u = runs_of(r);
  mem_rocr.hsa_signal_store_screlease(sig, (hsa_signal_value_t)u.n);
  for (size_t k = 0; k < u.n; k++) {
    size_t od = run_offset(&u, k, r->dpitch, r->dslice), os = run_offset(&u, k, r->spitch,
                                                                          r->sslice);
    hsa_status_t st = mem_rocr.hsa_amd_memory_async_copy(r->dst + od, p->dst_agent,
                                                         r->src + os, p->src_agent, u.len,
                                                         ndeps, ndeps ? deps : NULL, sig);
    if (st == HSA_STATUS_SUCCESS) continue;
    if (k == 0) { /* nothing in flight */
      mem_rocr.hsa_signal_store_screlease(sig, 1);
      return mem_hsa_fail(st, "%s: hsa_amd_memory_async_copy(row run 0 of %zu, %zu bytes, %p <- "
                          "%p)", what, u.n, u.len, (void *)r->dst, (const void *)r->src);
    }
    const char *hs = NULL;
    if (mem_rocr.hsa_status_string(st, &hs) != HSA_STATUS_SUCCESS || !hs) hs = "unknown status";
    snprintf(fail_msg, 512, "%s: hsa_amd_memory_async_copy refused row run %zu of %zu (%zu "
             "bytes at destination %p): HSA status 0x%x (%s); the copy stopped there: %zu of "
             "%zu bytes were not copied", what, k, u.n, u.len, (void *)(r->dst + od),
             (unsigned)st, hs, (u.n - k) * u.len, u.n * u.len);
    *partial = true;
    if (keep) mem_fail_keep(*keep, fail_msg); /* before the signal can reach 0 */
    mem_rocr.hsa_signal_subtract_screlease(sig, (hsa_signal_value_t)(u.n - k));
    break;
  }
  mem_rect_count(MEM_RECT_ROWS);
  return HSAD_OK;
}

/* Starts one device-side copy: ROCr's SDMA rectangle copy where it takes it, else the copy
 * kernel when the box needs at least mem_blit_min_dmas() row DMAs (and fits it), else rows
 * (also when the kernel cannot be had: compile, load or queue refused). `sig` reaches 0 once
 * the bytes are at the destination. An error: nothing of it is in flight. A row DMA refused
 * after the first: *partial, the message in fail_msg (512 bytes) and, keep non-NULL, kept
 * under *keep before `sig` can reach 0. */
static hsad_status_t piece_start(const char *what, const piece_t *p, const hsa_signal_t *deps,
                                 uint32_t ndeps, hsa_signal_t sig, const mem_report_t *keep,
                                 char *fail_msg, bool *partial) {
  const mem_rect_t *r = &p->g;
  uint64_t gen = atomic_load_explicit(&mem_st.generation, memory_order_acquire);
  *partial = false;
  if (p->sdma_ok && atomic_load_explicit(&no_sdma_gen[p->bd], memory_order_relaxed) != gen) {
    hsa_pitched_ptr_t pd = {r->dst, r->dpitch, r->depth > 1 ? r->dslice : 0};
    hsa_pitched_ptr_t ps = {(void *)r->src, r->spitch, r->depth > 1 ? r->sslice : 0};
    hsa_dim3_t zero = {0, 0, 0};
    hsa_dim3_t range = {(uint32_t)r->width, (uint32_t)r->height, (uint32_t)r->depth};
    mem_rocr.hsa_signal_store_screlease(sig, 1);
    hsa_status_t st = mem_rocr.hsa_amd_memory_async_copy_rect(
        &pd, &zero, &ps, &zero, &range, mem_st.gpu_agents[p->bd], p->dir, ndeps,
        ndeps ? deps : NULL, sig);
    if (st == HSA_STATUS_SUCCESS) {
      mem_rect_count(MEM_RECT_SDMA);
      return HSAD_OK;
    }
    if (st == HSA_STATUS_ERROR_OUT_OF_RESOURCES) /* no SDMA engine: not asked again */
      atomic_store_explicit(&no_sdma_gen[p->bd], gen, memory_order_relaxed);
    else if (st != HSA_STATUS_ERROR_INVALID_ARGUMENT)
      return mem_hsa_fail(st, "%s: hsa_amd_memory_async_copy_rect(%zu x %zu x %zu bytes)", what,
                          r->width, r->height, r->depth);
  }
  if (runs_of(r).n >= mem_blit_min_dmas() && mem_blit_fits(r)) {
    bool in_flight = false;
    mem_rocr.hsa_signal_store_screlease(sig, 1);
    if (!mem_blit_rect(p->bd, r, r->cdeps, r->ncdeps, sig, r->deadline_ns, &in_flight)) {
      mem_rect_count(MEM_RECT_BLIT);
      return HSAD_OK;
    }
    /* nothing submitted (no kernel for this GPU, or its queue refused): rows instead */
  }
  return piece_rows(what, p, deps, ndeps, sig, keep, fail_msg, partial);
}

/* ---- a pageable side: staged, packed ------------------------------------------------------
 * The box's rows are packed back to back in pinned pool blocks (row y of slice z of a chunk at
 * ((z - z0) * ny + (y - y0)) * width), so the device side of each chunk is one piece whose
 * staging side has pitch == width: one DMA when the device side's pitch is the width too,
 * else one SDMA rectangle or one kernel dispatch, instead of a DMA per row. Chunks: the whole
 * box up to staging_max (HSAD_COPY_DEFAULT_STAGING_MAX), else at most HSAD_COPY_MAX_BUFFERS
 * chunks of at least HSAD_COPY_DEFAULT_CHUNK bytes (whole slices, or rows of one slice), as a
 * 1-D asynchronous copy from a pageable source stages whole (copy.c). A pageable SOURCE is
 * packed chunk by chunk before the call returns, each chunk's piece submitted as soon as it is
 * packed (its DMA overlaps the packing of the next); the caller may rewrite it once the call
 * returned. A pageable DESTINATION: every chunk's piece is submitted at once, and each chunk is
 * unpacked into the destination's rows by ROCr's event thread when its piece completed; the
 * completion is reached after the last unpack (the bytes between the rows are never written).
 * Every block goes back to the pool before the completion. */
typedef struct stage_chunk {
  size_t z0, nz, y0, ny;
  void *buf;
  hsa_signal_t sig;
  bool skip;                       /* never submitted, or nothing to unpack */
} stage_chunk_t;

typedef struct stage_op {
  bool to_device;                  /* the pageable side is the source */
  uint8_t *host;                   /* the pageable side's first byte */
  size_t hpitch, hslice, width;
  hsad_host_pool_t *pool;
  uint32_t n;
  stage_chunk_t c[HSAD_COPY_MAX_BUFFERS];
  _Atomic uint32_t left;           /* chunks not retired, + 1 while the call submits */
  hsa_signal_t finish;
  mem_report_t report;
  bool failed;                     /* set before the caller's reference is dropped */
  char msg[512];
} stage_op_t;

static uint32_t plan_chunks(const mem_rect_t *r, stage_chunk_t *c) {
  size_t w = r->width, h = r->height, d = r->depth, slice = w * h, total = slice * d;
  size_t t = (total + HSAD_COPY_MAX_BUFFERS - 1) / HSAD_COPY_MAX_BUFFERS;
  if (t < HSAD_COPY_DEFAULT_CHUNK) t = HSAD_COPY_DEFAULT_CHUNK;
  if (total <= HSAD_COPY_DEFAULT_STAGING_MAX) t = total;
  uint32_t n = 0;
  if (slice <= t || d > 1) { /* whole slices: at least ceil(d / 8) per chunk */
    size_t per = slice <= t ? t / slice : 1, least = (d + HSAD_COPY_MAX_BUFFERS - 1) /
                                                     HSAD_COPY_MAX_BUFFERS;
    if (per < least) per = least;
    if (slice > t && d <= HSAD_COPY_MAX_BUFFERS) per = 1;
    for (size_t z = 0; z < d; z += per)
      c[n++] = (stage_chunk_t){.z0 = z, .nz = d - z < per ? d - z : per, .y0 = 0, .ny = h};
    return n;
  }
  size_t per = t / w, least = (h + HSAD_COPY_MAX_BUFFERS - 1) / HSAD_COPY_MAX_BUFFERS;
  if (per < least) per = least;
  if (per == 0) per = 1;
  for (size_t y = 0; y < h; y += per)
    c[n++] = (stage_chunk_t){.z0 = 0, .nz = 1, .y0 = y, .ny = h - y < per ? h - y : per};
  return n;
}

/* Packs (to_device) or unpacks chunk k between the pageable rows and its block. */
static void stage_move(const stage_op_t *op, const stage_chunk_t *c) {
  uint8_t *b = c->buf;
  for (size_t z = 0; z < c->nz; z++)
    for (size_t y = 0; y < c->ny; y++) {
      uint8_t *h = op->host + (c->z0 + z) * op->hslice + (c->y0 + y) * op->hpitch;
      uint8_t *s = b + (z * c->ny + y) * op->width;
      if (op->to_device) memcpy(s, h, op->width);
      else memcpy(h, s, op->width);
    }
}

static void stage_release(stage_op_t *op) {
  if (atomic_fetch_sub_explicit(&op->left, 1, memory_order_acq_rel) != 1) return;
  if (op->failed) mem_fail_keep(op->report, op->msg);
  hsa_signal_t fin = op->finish;
  free(op);
  mem_rocr.hsa_signal_subtract_screlease(fin, 1); /* last: the op is gone */
}

/* Chunk k's piece completed (or never ran): unpack, give its block and signal back. */
static void stage_retire(stage_op_t *op, uint32_t k) {
  stage_chunk_t *c = &op->c[k];
  if (!op->to_device && !c->skip) stage_move(op, c);
  hsad_host_pool_free(op->pool, c->buf);
  mem_signal_give(c->sig);
  stage_release(op);
}

static bool stage_done(hsa_signal_value_t v, void *arg) {
  (void)v;
  stage_op_t *op = (stage_op_t *)((uintptr_t)arg & ~(uintptr_t)7);
  stage_retire(op, (uint32_t)((uintptr_t)arg & 7));
  return false;
}

/* Takes every block and signal first (nothing submitted for a copy that cannot be staged). */
static hsad_status_t stage_prepare(const char *what, hsad_device_t *device, const mem_rect_t *r,
                                   bool to_device, hsa_signal_t completion,
                                   const mem_report_t *report, stage_op_t **out) {
  hsad_host_pool_t *pool = NULL;
  hsad_status_t s = hsad_host_pool_get(device, &pool);
  if (s) return s;
  stage_op_t *op = calloc(1, sizeof *op);
  if (!op) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: staging bookkeeping", what);
  op->to_device = to_device;
  op->host = to_device ? (uint8_t *)r->src : r->dst;
  op->hpitch = to_device ? r->spitch : r->dpitch;
  op->hslice = r->depth > 1 ? (to_device ? r->sslice : r->dslice) : 0;
  op->width = r->width;
  op->pool = pool;
  op->finish = completion;
  op->report = report ? *report : (mem_report_t){NULL, completion.handle};
  op->n = plan_chunks(r, op->c);
  for (uint32_t k = 0; k < op->n && !s; k++) {
    s = hsad_host_pool_alloc(pool, op->c[k].nz * op->c[k].ny * r->width, &op->c[k].buf);
    if (!s) s = mem_signal_take(1, &op->c[k].sig);
  }
  if (s) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", hsad_last_error());
    for (uint32_t k = 0; k < op->n; k++) {
      if (op->c[k].buf) hsad_host_pool_free(pool, op->c[k].buf);
      if (op->c[k].sig.handle) mem_signal_give(op->c[k].sig);
    }
    free(op);
    return hsad_fail(s, "%s", msg);
  }
  atomic_store_explicit(&op->left, op->n + 1, memory_order_relaxed);
  *out = op;
  return HSAD_OK;
}

static hsad_status_t stage_run(const char *what, hsad_device_t *device, const mem_rect_t *r,
                               const mem_side_t *d, const mem_side_t *sr, uint32_t bd,
                               const hsa_signal_t *deps, uint32_t ndeps,
                               hsa_signal_t completion, const mem_report_t *report) {
  stage_op_t *op = NULL;
  hsad_status_t s = stage_prepare(what, device, r, sr->pageable, completion, report, &op);
  if (s) return s;
  mem_rect_count(MEM_RECT_STAGED);
  hsa_agent_t cpu = mem_cpu_agent_of(device);
  for (uint32_t k = 0; k < op->n; k++) {
    stage_chunk_t *c = &op->c[k];
    mem_side_t st = {.gpu_p = c->buf, .p = c->buf}; /* the block: host memory the GPU reaches */
    mem_rect_t g = *r;
    g.width = r->width, g.height = c->ny, g.depth = c->nz;
    /* every piece waits for the dependencies: the first may have gone by rows, a later one
     * to the kernel (its queue's barrier-value packets pass at once once they were reached) */
    piece_t p;
    if (op->to_device) {
      stage_move(op, c);
      g.spitch = r->width, g.sslice = c->ny * r->width;
      mem_side_t dd = *d;
      dd.gpu_p = d->gpu_p + c->z0 * (r->depth > 1 ? r->dslice : 0) + c->y0 * r->dpitch;
      p = piece_of(&g, &dd, &st, bd, cpu);
    } else {
      g.dpitch = r->width, g.dslice = c->ny * r->width;
      mem_side_t ss = *sr;
      ss.gpu_p = sr->gpu_p + c->z0 * (r->depth > 1 ? r->sslice : 0) + c->y0 * r->spitch;
      p = piece_of(&g, &st, &ss, bd, cpu);
    }
    bool partial = false;
    s = piece_start(what, &p, deps, ndeps, c->sig, NULL, op->msg, &partial);
    if (s && k == 0) { /* nothing in flight: undo it all */
      char msg[1024];
      snprintf(msg, sizeof msg, "%s", hsad_last_error());
      for (uint32_t i = 0; i < op->n; i++) {
        hsad_host_pool_free(op->pool, op->c[i].buf);
        mem_signal_give(op->c[i].sig);
      }
      free(op);
      return hsad_fail(s, "%s", msg);
    }
    if (s) { /* chunks before k are in flight: the copy stops here */
      snprintf(op->msg, sizeof op->msg, "%s: the copy stopped at staging chunk %u of %u (%zu "
               "bytes were not copied): %s", what, k, op->n,
               (r->height * r->depth - (c->z0 * r->height + c->y0)) * r->width,
               hsad_last_error());
      op->failed = true;
      for (uint32_t i = k; i < op->n; i++) {
        op->c[i].skip = true;
        stage_retire(op, i);
      }
      break;
    }
    if (partial) { /* a row run of the piece refused: the copy stops at this chunk */
      op->failed = true;
      if (!op->to_device) { /* its block holds rows that never came: none is unpacked */
        c->skip = true;
        size_t l = strlen(op->msg);
        snprintf(op->msg + l, sizeof op->msg - l, " (staging chunk %u of %u: none of its rows "
                 "reached the destination)", k, op->n);
      }
    }
    /* watched once submitted; a handler ROCr refuses is replaced by a wait here */
    if (mem_rocr.hsa_amd_signal_async_handler(c->sig, HSA_SIGNAL_CONDITION_EQ, 0, stage_done,
                                              (void *)((uintptr_t)op | k)) !=
        HSA_STATUS_SUCCESS) {
      while (mem_rocr.hsa_signal_wait_scacquire(c->sig, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX,
                                                HSA_WAIT_STATE_BLOCKED) != 0) {
      }
      stage_retire(op, k);
    }
    if (partial) { /* the rest is not copied */
      for (uint32_t i = k + 1; i < op->n; i++) {
        op->c[i].skip = true;
        stage_retire(op, i);
      }
      break;
    }
  }
  stage_release(op); /* the call's reference */
  return HSAD_OK;
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
  if (d.pageable && sr.pageable)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: the destination %p and the source %p are "
                     "both pageable host memory: nothing for a GPU to copy (copy the rows with "
                     "memcpy)", what, (void *)r->dst, (const void *)r->src);
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
  if (d.pageable || sr.pageable)
    return stage_run(what, device, r, &d, &sr, bd, deps, dep_count, completion, report);
  piece_t p = piece_of(r, &d, &sr, bd, mem_cpu_agent_of(device));
  char msg[512];
  bool partial = false;
  mem_report_t key = report ? *report : (mem_report_t){NULL, completion.handle};
  return piece_start(what, &p, deps, dep_count, completion, &key, msg, &partial);
}
