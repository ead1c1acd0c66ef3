/* bench_copy.c - suite `copy`: host -> device copy latency and bandwidth for sizes 4 KiB to
 * 256 MiB (x4 steps; a quick run, --count below 10000, stops at 4 MiB).
 *
 * Paths (all host -> device memory of the same GPU, through memory/):
 *   pinned           the source is a pinned pool block: one hsa_amd_memory_async_copy;
 *   staged           pageable source (malloc, touched), forced through one staging block;
 *   pipelined        pageable, forced through the chunk pipeline (default chunk and buffers);
 *   pinned-in-place  pageable, forced: hsa_amd_memory_lock_to_pool, DMA, unlock;
 *   auto             pageable with the default thresholds (the strategy it picks);
 *   async            pageable, hsad_memcpy_async + hsad_completion_wait, default options: the
 *                    source is staged whole before the call returns (reusable at once, issue 21);
 *   async-deferred   the same with HSAD_COPY_SOURCE_DEFERRED (the zero-copy read after the call
 *                    returned: pinned in place from 64 KiB; the behaviour before issue 21);
 *   hip-pinned / hip-pageable  hipMemcpyAsync + hipStreamSynchronize from hipHostMalloc'd or
 *                    malloc'd memory (hsad-bench-hip).
 * Per round, size and path: R = clamp(32 MiB / size, 3, 100) synchronous copies; the sample is
 * their median: us (per copy) and GBps (bytes / us / 1000). After the rounds the crossovers of
 * the medians are reported on the "auto" row: the largest size where staged is at least as
 * fast as pipelined, the smallest from which pinned-in-place beats pipelined; these are the
 * measured thresholds (the library's defaults come from such a run: README, "Measured").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memory/hsad_memory.h"
#include "tools/hsad/bench_paths.h"

static const char *const paths[] = {"pinned", "staged", "pipelined", "pinned-in-place", "auto",
                                    "async", "async-deferred", "hip-pinned", "hip-pageable"};
#define NP 9
#define NHSAD 7 /* paths before the HIP ones */
#define MAXSZ 9

static int copy_hsad(bench_ctx_t *ctx, int p, size_t size, uint32_t reps, void *dev,
                     void *pinned, void *pageable, bench_row_t *row) {
  static const uint32_t force[] = {0, HSAD_COPY_STAGED, HSAD_COPY_PIPELINED, HSAD_COPY_PINNED, 0,
                                   0, 0};
  hsad_copy_options_t o = {.force = force[p], .flags = p == 6 ? HSAD_COPY_SOURCE_DEFERRED : 0};
  double v[100];
  for (uint32_t i = 0; i < reps && !bench_stopped(); i++) {
    uint64_t t0 = hsad_now_ns(), dl = t0 + ctx->timeout_s * 1000000000ull;
    hsad_status_t s;
    if (p >= 5) {
      hsad_completion_t c;
      s = hsad_memcpy_async(ctx->dev, dev, pageable, size, NULL, 0, &o, dl, &c);
      if (!s) s = hsad_completion_wait(&c, dl);
    } else {
      s = hsad_memcpy(ctx->dev, dev, p == 0 ? pinned : pageable, size, &o, dl);
    }
    uint64_t t1 = hsad_now_ns();
    if (s) {
      bench_row_absent(row, "%s", hsad_last_error());
      return -1;
    }
    v[i] = (double)(t1 - t0) / 1e3;
  }
  if (bench_stopped()) return 0;
  double us = bench_median(v, reps);
  bench_sample(row, "us", "us", us);
  bench_sample(row, "GBps", "GB/s", (double)size / us / 1e3);
  return 0;
}

static int copy_hip(bench_ctx_t *ctx, int pinned, size_t size, uint32_t reps, bench_row_t *row) {
  char note[BENCH_NOTE_MAX], cmd[96], reply[BENCH_NOTE_MAX];
  bench_child_t *hip = bench_hip(ctx, note, sizeof note);
  double us;
  snprintf(cmd, sizeof cmd, "memcpy %zu %u %d", size, reps, pinned);
  if (!hip || bench_child_cmd(ctx, hip, cmd, reply, sizeof reply) ||
      sscanf(reply, "%lf", &us) != 1) {
    bench_row_absent(row, "%s", hip ? reply : note);
    return -1;
  }
  bench_sample(row, "us", "us", us);
  bench_sample(row, "GBps", "GB/s", (double)size / us / 1e3);
  return 0;
}

static double med_of(bench_suite_result_t *out, const char *path, size_t size) {
  bench_row_t *r = bench_row_find(out, path, "", (double)size);
  bench_metric_t *m = r && !r->absent ? bench_metric(r, "us") : NULL;
  if (!m || !m->n) return -1;
  double v[BENCH_MAX_ROUNDS];
  memcpy(v, m->v, m->n * sizeof v[0]);
  return bench_median(v, m->n);
}

/* What one round of the copy suite measures with. */
typedef struct copy_suite {
  const size_t *sizes;
  uint32_t nsz;
  bench_row_t *(*rows)[MAXSZ];
  void *dev, *pinned;
  uint8_t *pageable;
  bool ok[NP];
} copy_suite_t;

/* Round r: every size (copies per sample: clamp(32 MiB / size, 3, 100)), every path still ok,
 * in an order rotated per round. */
static void copy_round(bench_ctx_t *ctx, copy_suite_t *cs, uint32_t r) {
  for (uint32_t k = 0; k < cs->nsz && !bench_stopped(); k++) {
    size_t size = cs->sizes[k];
    uint32_t reps = (uint32_t)(((size_t)32 << 20) / size);
    if (reps < 3) reps = 3;
    if (reps > 100) reps = 100;
    for (int i = 0; i < NP && !bench_stopped(); i++) {
      int p = (int)((i + r) % NP);
      if (!cs->ok[p]) continue;
      bench_row_t *row = cs->rows[p][k];
      int rc = p < NHSAD ? copy_hsad(ctx, p, size, reps, cs->dev, cs->pinned, cs->pageable, row)
                         : copy_hip(ctx, p == NHSAD, size, reps, row);
      if (rc) cs->ok[p] = false;
    }
  }
}

/* The measured crossovers in auto0's note (the first "auto" row). */
static void copy_note_crossovers(bench_suite_result_t *out, const size_t *sizes, uint32_t nsz,
                                 bench_row_t *auto0) {
  /* crossovers of the medians (a path "wins" a size when it is at least 5% faster):
   * pin_from = the smallest size from which pinned-in-place wins over staged and pipelined at
   * every larger size; staged_max = the largest size below pin_from up to which staged is
   * within 5% of the best pageable path at every size */
  size_t staged_max = 0, pin_from = 0;
  for (uint32_t k = nsz; k-- > 0;) {
    double pi = med_of(out, "pinned-in-place", sizes[k]), pl = med_of(out, "pipelined", sizes[k]),
           st = med_of(out, "staged", sizes[k]);
    if (pi > 0 && pl > 0 && st > 0 && pi * 1.05 < pl && pi * 1.05 < st) pin_from = sizes[k];
    else break;
  }
  for (uint32_t k = 0; k < nsz && (!pin_from || sizes[k] < pin_from); k++) {
    double pi = med_of(out, "pinned-in-place", sizes[k]), pl = med_of(out, "pipelined", sizes[k]),
           st = med_of(out, "staged", sizes[k]);
    double best = pl < pi ? pl : pi;
    if (st > 0 && best > 0 && st <= best * 1.05) staged_max = sizes[k];
    else break;
  }
  if (!auto0->absent)
    snprintf(auto0->note, sizeof auto0->note,
             "measured crossovers: staged <= %zu bytes, pinned-in-place >= %s%zu bytes "
             "(defaults: staging_max %zu, pin_threshold %zu)",
             staged_max, pin_from ? "" : "(never within the sizes) ", pin_from,
             (size_t)HSAD_COPY_DEFAULT_STAGING_MAX, (size_t)HSAD_COPY_DEFAULT_PIN_THRESHOLD);
}

int bench_suite_copy(bench_ctx_t *ctx, bench_suite_result_t *out) {
  size_t sizes[MAXSZ];
  uint32_t nsz = 0;
  size_t maxsz = ctx->count >= 10000 ? (size_t)256 << 20 : (size_t)4 << 20;
  for (size_t s = 4096; s <= maxsz && nsz < MAXSZ; s *= 4) sizes[nsz++] = s;
  snprintf(out->title, sizeof out->title,
           "host -> device copies: pinned, pageable by strategy, pageable auto, HIP hipMemcpyAsync");
  snprintf(out->params, sizeof out->params,
           "rounds=%u sizes=4KiB..%zuMiB x4 copies_per_sample=clamp(32MiB/size,3,100) (medians)",
           ctx->rounds, maxsz >> 20);
  out->plot_metric = "GBps";
  out->plot_xname = "bytes";
  bench_row_t *rows[NP][MAXSZ];
  /* add every row first: adding may move the rows (the pointers are taken afterwards) */
  for (int p = 0; p < NP; p++)
    for (uint32_t k = 0; k < nsz; k++) bench_row_add(out, paths[p], "", "bytes", (double)sizes[k]);
  for (int p = 0; p < NP; p++)
    for (uint32_t k = 0; k < nsz; k++) rows[p][k] = bench_row_find(out, paths[p], "", (double)sizes[k]);
  void *dev = NULL, *pinned = NULL;
  uint8_t *pageable = malloc(maxsz);
  hsad_host_pool_t *pool = NULL;
  hsad_status_t s = hsad_mem_alloc(ctx->dev, HSAD_MEM_DEVICE, maxsz, NULL, 0, &dev);
  if (!s) s = hsad_host_pool_get(ctx->dev, &pool);
  if (!s) s = hsad_host_pool_alloc(pool, maxsz, &pinned);
  if (s || !pageable) {
    for (int p = 0; p < NP; p++)
      for (uint32_t k = 0; k < nsz; k++)
        bench_row_absent(rows[p][k], "%s", pageable ? hsad_last_error() : "out of host memory");
    free(pageable);
    hsad_mem_free(dev);
    return -1;
  }
  memset(pageable, 1, maxsz); /* touched: page faults are not what is measured */
  memset(pinned, 2, maxsz);
  copy_suite_t cs = {.sizes = sizes, .nsz = nsz, .rows = rows, .dev = dev, .pinned = pinned,
                     .pageable = pageable};
  for (int p = 0; p < NP; p++) cs.ok[p] = true;
  for (uint32_t r = 0; r < ctx->rounds && !bench_stopped(); r++) {
    copy_round(ctx, &cs, r);
    bench_progress(ctx, "copy", "all paths", "round %u/%u", r + 1, ctx->rounds);
  }
  copy_note_crossovers(out, sizes, nsz, rows[4][0]);
  hsad_host_pool_free(pool, pinned);
  hsad_mem_free(dev);
  free(pageable);
  for (uint32_t k = 0; k < nsz; k++) {
    bench_ratio(out, "auto", "pinned", "", (double)sizes[k], "us");
    bench_ratio(out, "hip-pageable", "auto", "", (double)sizes[k], "us");
    bench_ratio(out, "hip-pinned", "pinned", "", (double)sizes[k], "us");
    bench_ratio(out, "async", "async-deferred", "", (double)sizes[k], "us");
  }
  return cs.ok[0] || cs.ok[4] ? 0 : -1;
}
