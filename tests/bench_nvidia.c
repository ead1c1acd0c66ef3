/* bench_nvidia.c - hsad-bench-nvidia: the NVIDIA backend's costs next to the driver's own
 * (issue 19). On the first NVIDIA device:
 *   dispatch   host ns per submit: hsad_kernel_dispatch (no completion) against cuLaunchKernel
 *              and cuLaunchKernelEx (no attributes) on a stream of their own, and the CUDA
 *              runtime's cudaLaunchKernel (libcudart.so loaded with dlopen where installed:
 *              HSAD_LIBCUDART, else libcudart.so.13 / .12 / .so, else CUDA_HOME's lib64; the
 *              kernel from cudaLibraryLoadFromFile + cudaLibraryGetKernel, a cudaKernel_t the
 *              runtime launches as is), for `empty` (no parameters) and `saxpy` (4 parameters
 *              packed from the metadata); each round submits COUNT per path in bursts of
 *              100, the paths taking turns burst by burst, each burst's stream drained after
 *              it (not timed: the driver's queue never fills, so the figure is host cost);
 *   roundtrip  launch + wait: hsad_kernel_dispatch with a completion + hsad_completion_wait
 *              against cuLaunchKernel + cuStreamSynchronize and cuLaunchKernel + cuEventRecord
 *              + cuEventSynchronize, ns per round trip.
 *   barrier    a cross-queue dependency: kernel on queue A, kernel on queue B after it, wait
 *              for B. hsad: hsad_queue_barrier on A's completion (cuStreamWaitValue64 on A's
 *              epoch); driver: cuEventRecord + cuStreamWaitEvent. "submit": host ns of the
 *              dependency call(s) alone; "trip": ns of the whole kernel -> kernel -> wait.
 *              Checked first: 50 times a 20 us delay_store on A and copy_one on B must read
 *              the value A stored (a missing dependency reads the old one).
 *   pool       alloc + free of pinned host memory of 4 KiB, 1 MiB and 64 MiB: hsad_host_pool
 *              (warm: every timed alloc a hit) against cuMemHostAlloc + cuMemFreeHost and
 *              mmap + cuMemHostRegister + cuMemHostUnregister + munmap (a pool miss), ns per
 *              pair; the ratio is also taken round by round (driver / hsad of the same round)
 *              and shown as min / median / max. Checked: every timed pool alloc was a hit (the
 *              stats count them exactly).
 *   copy       host <-> device copies of 4 KiB, 1 MiB and 64 MiB, ns per copy and GB/s:
 *              hsad_memcpy_async + hsad_completion_wait from / to a pool block (pinned) and
 *              from / to malloc'd memory (pageable), against cuMemcpyHtoDAsync_v2 /
 *              cuMemcpyDtoHAsync_v2 + cuStreamSynchronize from / to cuMemHostAlloc'd and
 *              malloc'd memory. Checked: after each path's round the bytes are compared with
 *              the pattern that path wrote (a fresh pattern per path and round).
 *   pageable   the pageable strategies of nvidia/nv_memory.c, host <-> device, 4 KiB .. 64 MiB:
 *              the driver's cuMemcpyHtoDAsync / DtoHAsync + cuStreamSynchronize on malloc'd
 *              memory against hsad_memcpy_async forced DIRECT (thresholds 1 / SIZE_MAX),
 *              STAGED (pool blocks, 256 KiB chunks, 3 in flight) and PINNED
 *              (cuMemHostRegister in place), and by default (the thresholds it ships); ns per
 *              copy and GB/s, then the fastest per size and direction. Checked: each round's
 *              device -> host copies bring back the pattern its host -> device copies sent.
 *   timing     what device times cost: hsad_kernel_dispatch with a completion on a queue
 *              created with profiling (cuEventRecord before and after, hsad_completion_times
 *              readable) against the same on a plain queue, host ns per submit; checked: the
 *              last dispatch's times read back (end >= start).
 *   graph      hsad graphs (CUDA graphs) against raw cuGraph calls: launch, launch + wait,
 *              one node update, instantiate, for a 10-node chain, a 100-node DAG over two
 *              queues and a fork/join (bench_nvidia_graph.h). Checked: every node ran once per
 *              launch on both paths.
 *   producers  1, 2, 4, 8 threads submitting into one shared queue or a queue each: hsad
 *              against cuLaunchKernel from as many threads (bench_nvidia_producers.h).
 * Prints min / median / max over rounds, the targets of issue 19 with the measured ratios, and
 * the same as JSON lines when given a file.
 * Usage: hsad-bench-nvidia CUBIN [--rounds R] [--count N] [--json FILE] [--plot DIR] [--suites LIST]
 * (LIST: comma-separated of dispatch,roundtrip,barrier,pool,copy,pageable,graph,timing,producers;
 * default all; --plot: bench_nvidia_plot.h; scripts/nv-bench-table.py renders README's tables
 * from the --json file). Exit 0 also
 * when there is no NVIDIA GPU (it says so), 1 on a failure (a failed check says what differs). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "hsa-dispatch/hsad.h"
#include "memory/hsad_memory.h"
#include "fusion/hsad_fusion.h"
#include "nvidia/nv_cuda.h"
#include "nvidia/nv_internal.h" /* nv_graph_exec_native (libhsad.a) */

#define MAXR 64
#define SUBMIT_BURST 100 /* dispatch: submits timed back to back between drains */

static int fail(const char *what, hsad_status_t s) {
  fprintf(stderr, "hsad-bench-nvidia: %s: %s: %s\n", what, hsad_status_name(s), hsad_last_error());
  return 1;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static FILE *json;

#include "bench_nvidia_plot.h"

/* Sorts v and prints min / median / max; returns the median. bytes > 0: also GB/s (median). */
static double report_b(const char *suite, const char *path, const char *kernel, double *v, int n,
                       double bytes) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  printf("%-9s %-22s %-7s min %11.1f  median %11.1f  max %11.1f ns", suite, path, kernel, v[0],
         v[n / 2], v[n - 1]);
  if (bytes > 0) printf("  %7.2f GB/s", bytes / v[n / 2]);
  printf("\n");
  bench_row_keep(suite, path, kernel, v[0], v[n / 2], v[n - 1]);
  if (json)
    fprintf(json, "{\"suite\":\"%s\",\"path\":\"%s\",\"kernel\":\"%s\",\"min_ns\":%.1f,"
            "\"median_ns\":%.1f,\"max_ns\":%.1f,\"rounds\":%d,\"bytes\":%.0f}\n", suite, path,
            kernel, v[0], v[n / 2], v[n - 1], n, bytes);
  return v[n / 2];
}
static double report(const char *suite, const char *path, const char *kernel, double *v, int n) {
  return report_b(suite, path, kernel, v, n, 0);
}

static int drv(const char *what, nv_result_t r) {
  if (!r) return 0;
  fprintf(stderr, "hsad-bench-nvidia: %s: CUDA error %u\n", what, r);
  return 1;
}
#define DRV(expr) do { if (drv(#expr, (expr))) return 1; } while (0)
#define HS(what, expr) do { hsad_status_t s_ = (expr); if (s_) return fail(what, s_); } while (0)

static int want(const char *suites, const char *name) {
  size_t n = strlen(name);
  for (const char *p = suites; (p = strstr(p, name)); p += n)
    if ((p == suites || p[-1] == ',') && (p[n] == ',' || !p[n])) return 1;
  return 0;
}

#include "bench_nvidia_graph.h"
#include "bench_nvidia_producers.h"

/* ---- barrier ---------------------------------------------------------------------------- */

typedef struct bench_env {
  hsad_device_t *dev;
  hsad_queue_t *q, *qb;
  nv_stream_t sa, sb;
  nv_event_t ev;
  const hsad_device_kernel_t *kempty, *kdelay, *kcopy;
  nv_function_t fempty, fdelay, fcopy;
  int rounds;
} bench_env_t;

/* 50 times: A stores i + 1 after 20 us, B copies it; B must see i + 1. */
static int barrier_check(bench_env_t *b, int *p, int *dst) {
  for (int raw = 0; raw < 2; raw++)
    for (int i = 0; i < 50; i++) {
      int v = (raw + 1) * 1000 + i;
      unsigned long long ns = 20000;
      *dst = -1;
      if (!raw) {
        hsad_karg_t da[] = {HSAD_KARG_PTR(p), HSAD_KARG_VAL(v), HSAD_KARG_VAL(ns)};
        hsad_karg_t ca[] = {HSAD_KARG_PTR(dst), HSAD_KARG_PTR(p)};
        hsad_launch_t ld = {.dims = 1, .grid = {1, 1, 1}, .block = {1, 1, 1}, .args = da,
                            .arg_count = 3};
        hsad_launch_t lc = {.dims = 1, .grid = {1, 1, 1}, .block = {1, 1, 1}, .args = ca,
                            .arg_count = 2};
        hsad_completion_t c1, c2;
        HS("barrier check: dispatch A", hsad_kernel_dispatch(b->q, b->kdelay, &ld,
                                                             HSAD_DEADLINE_NEVER, &c1, NULL));
        HS("barrier check: barrier", hsad_queue_barrier(b->qb, &c1, 1, HSAD_DEADLINE_NEVER, NULL));
        HS("barrier check: dispatch B", hsad_kernel_dispatch(b->qb, b->kcopy, &lc,
                                                             HSAD_DEADLINE_NEVER, &c2, NULL));
        HS("barrier check: wait", hsad_completion_wait(&c2, hsad_now_ns() + 10000000000ull));
      } else {
        void *da[] = {&p, &v, &ns}, *ca[] = {&dst, &p};
        DRV(nv_cu.launch_kernel(b->fdelay, 1, 1, 1, 1, 1, 1, 0, b->sa, da, NULL));
        DRV(nv_cu.event_record(b->ev, b->sa));
        DRV(nv_cu.stream_wait_event(b->sb, b->ev, 0));
        DRV(nv_cu.launch_kernel(b->fcopy, 1, 1, 1, 1, 1, 1, 0, b->sb, ca, NULL));
        DRV(nv_cu.stream_synchronize(b->sb));
      }
      if (*(volatile int *)dst != v) {
        fprintf(stderr, "hsad-bench-nvidia: barrier check (%s): B read %d, A stored %d: the "
                "dependency did not hold\n", raw ? "cuEventRecord + cuStreamWaitEvent" :
                "hsad_queue_barrier", *dst, v);
        return 1;
      }
    }
  return 0;
}

static int suite_barrier(bench_env_t *b, double *ratio_trip) {
  int *p, *dst;
  HS("hsad_buffer_alloc", hsad_buffer_alloc(b->dev, 64, (void **)&p));
  HS("hsad_buffer_alloc", hsad_buffer_alloc(b->dev, 64, (void **)&dst));
  if (barrier_check(b, p, dst)) return 1;
  printf("barrier   check: 50 + 50 dependent kernel pairs read what the first stored\n");
  enum { TRIPS = 1000 };
  double sub[2][MAXR], trip[2][MAXR];
  hsad_launch_t le = {.dims = 1, .grid = {1, 1, 1}, .block = {1, 1, 1}};
  for (int r = 0; r < b->rounds; r++) {
    uint64_t hs = 0, rs = 0;
    for (int i = 0; i < TRIPS; i++) { /* submit: the dependency call alone */
      hsad_completion_t ca;
      HS("dispatch A", hsad_kernel_dispatch(b->q, b->kempty, &le, HSAD_DEADLINE_NEVER, &ca, NULL));
      uint64_t t0 = hsad_now_ns();
      HS("hsad_queue_barrier", hsad_queue_barrier(b->qb, &ca, 1, HSAD_DEADLINE_NEVER, NULL));
      hs += hsad_now_ns() - t0;
      DRV(nv_cu.launch_kernel(b->fempty, 1, 1, 1, 1, 1, 1, 0, b->sa, NULL, NULL));
      t0 = hsad_now_ns();
      DRV(nv_cu.event_record(b->ev, b->sa));
      DRV(nv_cu.stream_wait_event(b->sb, b->ev, 0));
      rs += hsad_now_ns() - t0;
    }
    HS("wait_idle", hsad_queue_wait_idle(b->qb, HSAD_DEADLINE_NEVER));
    DRV(nv_cu.stream_synchronize(b->sb));
    sub[0][r] = (double)hs / TRIPS;
    sub[1][r] = (double)rs / TRIPS;
    uint64_t t0 = hsad_now_ns();
    for (int i = 0; i < TRIPS; i++) { /* trip: kernel on A -> kernel on B -> wait for B */
      hsad_completion_t ca, cb;
      HS("dispatch A", hsad_kernel_dispatch(b->q, b->kempty, &le, HSAD_DEADLINE_NEVER, &ca, NULL));
      HS("barrier", hsad_queue_barrier(b->qb, &ca, 1, HSAD_DEADLINE_NEVER, NULL));
      HS("dispatch B", hsad_kernel_dispatch(b->qb, b->kempty, &le, HSAD_DEADLINE_NEVER, &cb, NULL));
      HS("wait B", hsad_completion_wait(&cb, HSAD_DEADLINE_NEVER));
    }
    uint64_t t1 = hsad_now_ns();
    for (int i = 0; i < TRIPS; i++) {
      DRV(nv_cu.launch_kernel(b->fempty, 1, 1, 1, 1, 1, 1, 0, b->sa, NULL, NULL));
      DRV(nv_cu.event_record(b->ev, b->sa));
      DRV(nv_cu.stream_wait_event(b->sb, b->ev, 0));
      DRV(nv_cu.launch_kernel(b->fempty, 1, 1, 1, 1, 1, 1, 0, b->sb, NULL, NULL));
      DRV(nv_cu.stream_synchronize(b->sb));
    }
    uint64_t t2 = hsad_now_ns();
    trip[0][r] = (double)(t1 - t0) / TRIPS;
    trip[1][r] = (double)(t2 - t1) / TRIPS;
  }
  report("barrier", "hsad_queue_barrier", "submit", sub[0], b->rounds);
  report("barrier", "EventRecord+WaitEvent", "submit", sub[1], b->rounds);
  double h = report("barrier", "hsad_queue_barrier", "trip", trip[0], b->rounds);
  double d = report("barrier", "EventRecord+WaitEvent", "trip", trip[1], b->rounds);
  *ratio_trip = d / h;
  hsad_buffer_free(p);
  hsad_buffer_free(dst);
  return 0;
}

/* ---- pool ------------------------------------------------------------------------------- */

#define NSZ 3
static const size_t bsizes[NSZ] = {4096, (size_t)1 << 20, (size_t)64 << 20};
static const char *const bnames[NSZ] = {"4KiB", "1MiB", "64MiB"};

static int suite_pool(bench_env_t *b, int count, double ratio[NSZ], double rmin[NSZ]) {
  hsad_host_pool_t *pool;
  HS("hsad_host_pool_get", hsad_host_pool_get(b->dev, &pool));
  for (int z = 0; z < NSZ; z++) {
    size_t size = bsizes[z];
    int n = count, nd = count / 50 > 200 ? 200 : count / 50;
    if (z == 2) nd = 20;
    if (nd < 5) nd = 5;
    double vp[MAXR], vd[MAXR], vr[MAXR], vq[MAXR];
    for (int r = 0; r < b->rounds; r++) {
      void *p;
      HS("pool warm", hsad_host_pool_alloc(pool, size, &p));
      HS("pool warm", hsad_host_pool_free(pool, p));
      hsad_host_pool_stats_t s0, s1;
      HS("stats", hsad_host_pool_stats(pool, &s0));
      uint64_t t0 = hsad_now_ns();
      for (int i = 0; i < n; i++) {
        HS("hsad_host_pool_alloc", hsad_host_pool_alloc(pool, size, &p));
        HS("hsad_host_pool_free", hsad_host_pool_free(pool, p));
      }
      uint64_t t1 = hsad_now_ns();
      HS("stats", hsad_host_pool_stats(pool, &s1));
      if (s1.hits - s0.hits != (uint64_t)n || s1.misses != s0.misses) {
        fprintf(stderr, "hsad-bench-nvidia: pool check: %d allocs of %zu bytes: %llu hits, %llu "
                "misses (every one must hit the cache)\n", n, size,
                (unsigned long long)(s1.hits - s0.hits), (unsigned long long)(s1.misses - s0.misses));
        return 1;
      }
      for (int i = 0; i < nd; i++) {
        DRV(nv_cu.mem_host_alloc(&p, size, NV_MEMHOSTALLOC_PORTABLE | NV_MEMHOSTALLOC_DEVICEMAP));
        DRV(nv_cu.mem_free_host(p));
      }
      uint64_t t2 = hsad_now_ns();
      for (int i = 0; i < nd; i++) {
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return fail("mmap", HSAD_ERR_OUT_OF_MEMORY);
        DRV(nv_cu.mem_host_register(p, size, NV_MEMHOSTREGISTER_PORTABLE |
                                                 NV_MEMHOSTREGISTER_DEVICEMAP));
        DRV(nv_cu.mem_host_unregister(p));
        munmap(p, size);
      }
      uint64_t t3 = hsad_now_ns();
      vp[r] = (double)(t1 - t0) / n;
      vd[r] = (double)(t2 - t1) / nd;
      vr[r] = (double)(t3 - t2) / nd;
      vq[r] = vd[r] / vp[r];
    }
    double p = report("pool", "hsad_host_pool", bnames[z], vp, b->rounds);
    double d = report("pool", "cuMemHostAlloc+Free", bnames[z], vd, b->rounds);
    report("pool", "mmap+cuMemHostRegister", bnames[z], vr, b->rounds);
    report("pool", "ratio driver/hsad", bnames[z], vq, b->rounds); /* per round; sorts vq */
    rmin[z] = vq[0];
    ratio[z] = d / p;
  }
  printf("pool      check: every timed hsad_host_pool_alloc hit the cache (hsad_host_pool_stats)\n");
  return 0;
}

/* ---- copy ------------------------------------------------------------------------------- */

static void fill(uint8_t *p, size_t n, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    p[i] = (uint8_t)(x >> 24);
  }
}

static int same(const uint8_t *p, size_t n, uint32_t seed, const char *path, const char *size) {
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    if (p[i] != (uint8_t)(x >> 24)) {
      fprintf(stderr, "hsad-bench-nvidia: copy check (%s, %s): byte %zu of %zu is 0x%02x, the "
              "pattern's 0x%02x\n", path, size, i, n, p[i], (uint8_t)(x >> 24));
      return 1;
    }
  }
  return 0;
}

/* The last two paths cross the memory with the copy path, so a gap between the first two
 * says whether it is the memory (a pool block: mmap + mbind + cuMemHostRegister; or
 * cuMemHostAlloc's) or the copy call (hsad_memcpy_async or the driver's). */
enum { CP_HSAD_PINNED, CP_DRV_PINNED, CP_HSAD_PAGEABLE, CP_DRV_PAGEABLE, CP_DRV_POOL,
       CP_HSAD_HOSTALLOC, NCP };
static const char *const cpnames[NCP] = {"hsad pinned(pool)", "cuMemcpy pinned",
                                         "hsad pageable", "cuMemcpy pageable",
                                         "cuMemcpy pool block", "hsad cuMemHostAlloc"};

static int suite_copy(bench_env_t *b, double ratio[2][NSZ]) {
  hsad_host_pool_t *pool;
  HS("hsad_host_pool_get", hsad_host_pool_get(b->dev, &pool));
  uint32_t seed = 1;
  for (int z = 0; z < NSZ; z++) {
    size_t size = bsizes[z];
    int reps = z == 0 ? 200 : z == 1 ? 50 : 5;
    uint8_t *hp, *dp, *pg = malloc(size), *dev;
    if (!pg) return fail("malloc", HSAD_ERR_OUT_OF_MEMORY);
    HS("pool", hsad_host_pool_alloc(pool, size, (void **)&hp));
    DRV(nv_cu.mem_host_alloc((void **)&dp, size, NV_MEMHOSTALLOC_PORTABLE));
    HS("hsad_mem_alloc", hsad_mem_alloc(b->dev, HSAD_MEM_DEVICE, size, NULL, 0, (void **)&dev));
    double v[NCP][2][MAXR];
    for (int r = 0; r < b->rounds; r++)
      for (int path = 0; path < NCP; path++) {
        uint8_t *host = path == CP_HSAD_PINNED || path == CP_DRV_POOL           ? hp
                        : path == CP_DRV_PINNED || path == CP_HSAD_HOSTALLOC ? dp
                                                                              : pg;
        bool hsad = path == CP_HSAD_PINNED || path == CP_HSAD_PAGEABLE ||
                    path == CP_HSAD_HOSTALLOC;
        for (int dir = 0; dir < 2; dir++) { /* 0: H2D, 1: D2H */
          uint32_t sd = seed++;
          /* the source holds a fresh pattern */
          if (dir == 0) {
            fill(host, size, sd);
          } else {
            fill(pg, size, sd);
            hsad_completion_t c;
            HS("stage", hsad_memcpy_async(b->dev, dev, pg, size, NULL, 0, NULL,
                                          HSAD_DEADLINE_NEVER, &c));
            HS("stage", hsad_completion_wait(&c, HSAD_DEADLINE_NEVER));
            memset(host, 0, size);
          }
          uint64_t t0 = hsad_now_ns();
          for (int i = 0; i < reps; i++) {
            if (hsad) {
              hsad_completion_t c;
              HS("hsad_memcpy_async", hsad_memcpy_async(b->dev, dir ? (void *)host : dev,
                                                        dir ? (void *)dev : host, size, NULL, 0,
                                                        NULL, HSAD_DEADLINE_NEVER, &c));
              HS("hsad_completion_wait", hsad_completion_wait(&c, HSAD_DEADLINE_NEVER));
            } else {
              if (dir == 0)
                DRV(nv_cu.memcpy_htod_async((nv_deviceptr_t)(uintptr_t)dev, host, size, b->sa));
              else
                DRV(nv_cu.memcpy_dtoh_async(host, (nv_deviceptr_t)(uintptr_t)dev, size, b->sa));
              DRV(nv_cu.stream_synchronize(b->sa));
            }
          }
          v[path][dir][r] = (double)(hsad_now_ns() - t0) / reps;
          /* the check: what arrived is the pattern */
          if (dir == 0) {
            memset(pg == host ? hp : pg, 0, size);
            uint8_t *chk = pg == host ? hp : pg;
            hsad_completion_t c;
            HS("check", hsad_memcpy_async(b->dev, chk, dev, size, NULL, 0, NULL,
                                          HSAD_DEADLINE_NEVER, &c));
            HS("check", hsad_completion_wait(&c, HSAD_DEADLINE_NEVER));
            if (same(chk, size, sd, cpnames[path], bnames[z])) return 1;
          } else if (same(host, size, sd, cpnames[path], bnames[z])) {
            return 1;
          }
        }
      }
    double med[NCP][2];
    for (int path = 0; path < NCP; path++)
      for (int dir = 0; dir < 2; dir++) {
        char name[64];
        snprintf(name, sizeof name, "%s %s", dir ? "D2H" : "H2D", cpnames[path]);
        med[path][dir] = report_b("copy", name, bnames[z], v[path][dir], b->rounds, (double)size);
      }
    ratio[0][z] = (med[CP_DRV_PINNED][0] + med[CP_DRV_PINNED][1]) /
                  (med[CP_HSAD_PINNED][0] + med[CP_HSAD_PINNED][1]);
    ratio[1][z] = (med[CP_DRV_PAGEABLE][0] + med[CP_DRV_PAGEABLE][1]) /
                  (med[CP_HSAD_PAGEABLE][0] + med[CP_HSAD_PAGEABLE][1]);
    HS("pool free", hsad_host_pool_free(pool, hp));
    DRV(nv_cu.mem_free_host(dp));
    HS("hsad_mem_free", hsad_mem_free(dev));
    free(pg);
  }
  printf("copy      check: every path's bytes matched its pattern after each round\n");
  return 0;
}

/* ---- the CUDA runtime (dlopen; absent: the rows say why) -------------------------------- */

typedef struct { unsigned x, y, z; } cudart_dim3_t; /* dim3 */
typedef struct cudart {
  int (*launch)(const void *, cudart_dim3_t, cudart_dim3_t, void **, size_t, void *);
  int (*sync)(void *);
  void *kempty, *ksaxpy, *stream;
  char why[256];
} cudart_t;

/* cudaLaunchKernel takes a cudaKernel_t as its function (CUDA 12+): the cubin is loaded with
 * cudaLibraryLoadFromFile, the same image hsad loaded with the driver. */
static int cudart_open(cudart_t *c, const char *cubin) {
  memset(c, 0, sizeof *c);
  const char *env = getenv("HSAD_LIBCUDART");
  const char *names[] = {env && *env ? env : "libcudart.so.13", "libcudart.so.12", "libcudart.so",
                         "/usr/local/cuda/lib64/libcudart.so"};
  void *lib = NULL;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !lib; i++)
    lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(c->why, sizeof c->why, "no CUDA runtime (dlopen libcudart.so.13: %s)", dlerror());
    return 0;
  }
  int (*load)(void **, const char *, void *, void **, unsigned, void *, void **, unsigned) =
      (int (*)(void **, const char *, void *, void **, unsigned, void *, void **, unsigned))
          dlsym(lib, "cudaLibraryLoadFromFile");
  int (*get)(void **, void *, const char *) =
      (int (*)(void **, void *, const char *))dlsym(lib, "cudaLibraryGetKernel");
  int (*stream)(void **, unsigned) = (int (*)(void **, unsigned))dlsym(lib, "cudaStreamCreateWithFlags");
  c->launch = (int (*)(const void *, cudart_dim3_t, cudart_dim3_t, void **, size_t, void *))
      dlsym(lib, "cudaLaunchKernel");
  c->sync = (int (*)(void *))dlsym(lib, "cudaStreamSynchronize");
  if (!load || !get || !stream || !c->launch || !c->sync) {
    snprintf(c->why, sizeof c->why, "the CUDA runtime lacks cudaLibraryLoadFromFile, "
             "cudaLibraryGetKernel, cudaStreamCreateWithFlags, cudaLaunchKernel or "
             "cudaStreamSynchronize (CUDA 12+ has them)");
    return 0;
  }
  void *l;
  int e = load(&l, cubin, NULL, NULL, 0, NULL, NULL, 0);
  if (!e) e = get(&c->kempty, l, "empty");
  if (!e) e = get(&c->ksaxpy, l, "saxpy");
  if (!e) e = stream(&c->stream, 1); /* cudaStreamNonBlocking */
  if (e) {
    snprintf(c->why, sizeof c->why, "the CUDA runtime refused %s: cudaError %d", cubin, e);
    return 0;
  }
  return 1;
}

/* ---- pageable strategies ---------------------------------------------------------------- */

enum { PG_DRIVER, PG_DIRECT, PG_STAGED, PG_PINNED, PG_DEFAULT, NPG };
static const char *const pgnames[NPG] = {"driver", "hsad direct", "hsad staged", "hsad pinned",
                                         "hsad default"};

static int suite_pageable(bench_env_t *b) {
  static const size_t sz[] = {4 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  enum { NZ = sizeof sz / sizeof sz[0] };
  uint8_t *pg = malloc(sz[NZ - 1]), *back = malloc(sz[NZ - 1]), *dev;
  if (!pg || !back) return fail("malloc", HSAD_ERR_OUT_OF_MEMORY);
  HS("hsad_mem_alloc", hsad_mem_alloc(b->dev, HSAD_MEM_DEVICE, sz[NZ - 1], NULL, 0, (void **)&dev));
  const hsad_copy_options_t opt[NPG] = {
      [PG_DIRECT] = {.staging_max = 1, .pin_threshold = SIZE_MAX},
      [PG_STAGED] = {.force = HSAD_COPY_STAGED},
      [PG_PINNED] = {.force = HSAD_COPY_PINNED}};
  uint32_t seed = 7;
  for (int z = 0; z < NZ; z++) {
    size_t n = sz[z];
    int reps = (int)(((size_t)32 << 20) / n);
    reps = reps > 200 ? 200 : reps < 3 ? 3 : reps;
    double v[NPG][2][MAXR], med[NPG][2];
    for (int r = 0; r < b->rounds; r++)
      for (int path = 0; path < NPG; path++) {
        uint32_t sd = seed++;
        fill(pg, n, sd);
        memset(back, 0, n);
        for (int dir = 0; dir < 2; dir++) {
          uint8_t *host = dir ? back : pg;
          uint64_t t0 = hsad_now_ns();
          for (int i = 0; i < reps; i++) {
            if (path == PG_DRIVER) {
              if (dir) DRV(nv_cu.memcpy_dtoh_async(host, (nv_deviceptr_t)(uintptr_t)dev, n, b->sa));
              else DRV(nv_cu.memcpy_htod_async((nv_deviceptr_t)(uintptr_t)dev, host, n, b->sa));
              DRV(nv_cu.stream_synchronize(b->sa));
            } else {
              hsad_completion_t c;
              HS("hsad_memcpy_async", hsad_memcpy_async(b->dev, dir ? (void *)host : dev,
                                                        dir ? (void *)dev : host, n, NULL, 0,
                                                        path == PG_DEFAULT ? NULL : &opt[path],
                                                        HSAD_DEADLINE_NEVER, &c));
              HS("hsad_completion_wait", hsad_completion_wait(&c, HSAD_DEADLINE_NEVER));
            }
          }
          v[path][dir][r] = (double)(hsad_now_ns() - t0) / reps;
        }
        char size[24];
        snprintf(size, sizeof size, "%zuKiB", n >> 10);
        if (same(back, n, sd, pgnames[path], size)) return 1;
      }
    for (int dir = 0; dir < 2; dir++) {
      int best = 0;
      for (int path = 0; path < NPG; path++) {
        char name[64], kernel[24];
        snprintf(name, sizeof name, "%s %s", dir ? "D2H" : "H2D", pgnames[path]);
        snprintf(kernel, sizeof kernel, "%zuKiB", n >> 10);
        med[path][dir] = report_b("pageable", name, kernel, v[path][dir], b->rounds, (double)n);
        if (path != PG_DEFAULT && med[path][dir] < med[best][dir]) best = path;
      }
      printf("pageable  %s %zuKiB: fastest %s (%.2fx the driver's); default %.2fx the driver's\n",
             dir ? "D2H" : "H2D", n >> 10, pgnames[best], med[PG_DRIVER][dir] / med[best][dir],
             med[PG_DRIVER][dir] / med[PG_DEFAULT][dir]);
    }
  }
  printf("pageable  check: every round's D2H brought back the pattern its H2D sent\n");
  HS("hsad_mem_free", hsad_mem_free(dev));
  free(pg), free(back);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: hsad-bench-nvidia CUBIN [--rounds R] [--count N] [--json FILE] "
            "[--plot DIR] [--suites LIST]\n");
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0); /* whole lines between the progress lines on stderr */
  int rounds = 7, count = 20000;
  const char *suites = "dispatch,roundtrip,barrier,pool,copy,pageable,graph,timing,producers";
  const char *plot = NULL;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) {
      fprintf(stderr, "hsad-bench-nvidia: %s needs a value\n", argv[i]);
      return 2;
    }
    if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--count")) count = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--json")) json = fopen(argv[i + 1], "w");
    else if (!strcmp(argv[i], "--suites")) suites = argv[i + 1];
    else if (!strcmp(argv[i], "--plot")) plot = argv[i + 1];
    else {
      fprintf(stderr, "hsad-bench-nvidia: unknown option %s (--rounds, --count, --json, "
              "--plot, --suites)\n", argv[i]);
      return 2;
    }
  }
  if (count < 1) count = 20000;
  if (rounds < 1 || rounds > MAXR) rounds = 7;
  if (nv_cuda_load() != HSAD_OK) {
    printf("hsad-bench-nvidia: no NVIDIA GPU: %s\n", hsad_last_error());
    return 0;
  }
  hsad_runtime_t *rt;
  hsad_status_t s = hsad_runtime_open(&rt);
  if (s) return fail("hsad_runtime_open", s);
  hsad_device_t *dev = NULL;
  for (uint32_t i = 0; i < hsad_device_count(rt) && !dev; i++) {
    hsad_device_t *d;
    if (!hsad_device_get(rt, i, &d) && hsad_device_info(d)->vendor == HSAD_VENDOR_NVIDIA) dev = d;
  }
  if (!dev) {
    printf("hsad-bench-nvidia: no NVIDIA device\n");
    return 0;
  }
  const hsad_device_info_t *di = hsad_device_info(dev);
  printf("hsad-bench-nvidia on device %u: %s (%s), CUDA %d.%d, driver %s; rounds %d, count %d\n",
         di->index, di->product_name, di->name, di->cuda_version / 1000,
         di->cuda_version % 1000 / 10, di->driver_version, rounds, count);
  if (json) /* the run's facts first (scripts/nv-bench-table.py heads its tables with them) */
    fprintf(json, "{\"suite\":\"meta\",\"device\":\"%s\",\"arch\":\"%s\",\"cuda\":\"%d.%d\","
            "\"driver\":\"%s\",\"rounds\":%d,\"count\":%d}\n", di->product_name, di->name,
            di->cuda_version / 1000, di->cuda_version % 1000 / 10, di->driver_version, rounds,
            count);
  hsad_program_t *prog;
  if ((s = hsad_program_load_file(dev, argv[1], &prog))) return fail("hsad_program_load_file", s);
  const hsad_device_kernel_t *kempty, *ksaxpy;
  if ((s = hsad_program_kernel(prog, "empty", &kempty))) return fail("kernel empty", s);
  if ((s = hsad_program_kernel(prog, "saxpy", &ksaxpy))) return fail("kernel saxpy", s);
  hsad_queue_t *q;
  if ((s = hsad_queue_create(dev, NULL, &q))) return fail("hsad_queue_create", s);
  float *x, *y;
  if ((s = hsad_mem_alloc(dev, HSAD_MEM_DEVICE, 1 << 16, NULL, 0, (void **)&x)) ||
      (s = hsad_mem_alloc(dev, HSAD_MEM_DEVICE, 1 << 16, NULL, 0, (void **)&y)))
    return fail("hsad_mem_alloc", s);
  /* the raw path: the same CUfunction, a stream of its own, the same parameter values */
  nv_stream_t stream;
  nv_result_t r = nv_cu.stream_create(&stream, NV_STREAM_NON_BLOCKING);
  if (r) {
    fprintf(stderr, "hsad-bench-nvidia: cuStreamCreate: error %u\n", r);
    return 1;
  }
  nv_function_t fempty = (nv_function_t)(uintptr_t)hsad_device_kernel_desc(kempty)->kernel_object;
  nv_function_t fsaxpy = (nv_function_t)(uintptr_t)hsad_device_kernel_desc(ksaxpy)->kernel_object;
  float a = 2.0f;
  unsigned n = 256;
  void *raw_args[] = {&a, &x, &y, &n}, **crt_args = raw_args;
  hsad_karg_t args[] = {HSAD_KARG_VAL(a), HSAD_KARG_PTR(x), HSAD_KARG_PTR(y), HSAD_KARG_VAL(n)};
  hsad_launch_t le = {.dims = 1, .grid = {256, 1, 1}, .block = {256, 1, 1}};
  hsad_launch_t ls = {.dims = 1, .grid = {256, 1, 1}, .block = {256, 1, 1}, .args = args, .arg_count = 4};
  double v[8][MAXR], rt_hsad[MAXR], rt_raw[MAXR], rt_ev[MAXR];
  nv_event_t rt_event;
  if ((r = nv_cu.event_create(&rt_event, NV_EVENT_DISABLE_TIMING))) {
    fprintf(stderr, "hsad-bench-nvidia: cuEventCreate: error %u\n", r);
    return 1;
  }
  cudart_t crt;
  int have_rt = cudart_open(&crt, argv[1]);
  int dd = want(suites, "dispatch"), rr = want(suites, "roundtrip");
  for (int round = 0; round < rounds && (dd || rr); round++) {
    for (int kind = 0; kind < 2 && dd; kind++) {
      const hsad_device_kernel_t *k = kind ? ksaxpy : kempty;
      hsad_launch_t *l = kind ? &ls : &le;
      /* bursts of SUBMIT_BURST submits, the paths taking turns burst by burst (the first
       * path rotating from round to round), each path's stream drained after its burst
       * (untimed): the driver's queue never fills, so the figure is host cost alone */
      nv_launch_config_t cfg = {.grid_dim_x = 1, .grid_dim_y = 1, .grid_dim_z = 1,
                                .block_dim_x = 256, .block_dim_y = 1, .block_dim_z = 1,
                                .stream = stream};
      int paths = have_rt ? 4 : 3, bursts = count / SUBMIT_BURST > 0 ? count / SUBMIT_BURST : 1;
      int per = bursts * SUBMIT_BURST;
      uint64_t host[4] = {0, 0, 0, 0};
      for (int b = 0; b < bursts * paths; b++) {
        int path = (b + round) % paths;
        uint64_t t0 = hsad_now_ns();
        if (path == 0) { /* (the path chosen once per burst: no branch among the timed calls) */
          for (int i = 0; i < SUBMIT_BURST; i++)
            if ((s = hsad_kernel_dispatch(q, k, l, HSAD_DEADLINE_NEVER, NULL, NULL)))
              return fail("hsad_kernel_dispatch", s);
        } else if (path == 1) {
          for (int i = 0; i < SUBMIT_BURST; i++)
            DRV(nv_cu.launch_kernel(kind ? fsaxpy : fempty, 1, 1, 1, 256, 1, 1, 0, stream,
                                    kind ? raw_args : NULL, NULL));
        } else if (path == 2) {
          for (int i = 0; i < SUBMIT_BURST; i++)
            DRV(nv_cu.launch_kernel_ex(&cfg, kind ? fsaxpy : fempty, kind ? raw_args : NULL,
                                       NULL));
        } else { /* the CUDA runtime's launch of the same kernel image */
          for (int i = 0; i < SUBMIT_BURST; i++)
            DRV((nv_result_t)crt.launch(kind ? crt.ksaxpy : crt.kempty, (cudart_dim3_t){1, 1, 1},
                                        (cudart_dim3_t){256, 1, 1}, kind ? crt_args : NULL, 0,
                                        crt.stream));
        }
        host[path] += hsad_now_ns() - t0;
        if (path == 0) {
          if ((s = hsad_queue_wait_idle(q, HSAD_DEADLINE_NEVER))) return fail("wait_idle", s);
        } else if (path == 3) {
          crt.sync(crt.stream);
        } else {
          DRV(nv_cu.stream_synchronize(stream));
        }
      }
      for (int path = 0; path < 3; path++) v[kind * 3 + path][round] = (double)host[path] / per;
      if (have_rt) v[6 + kind][round] = (double)host[3] / per;
    }
    enum { TRIPS = 2000 };
    uint64_t t0 = hsad_now_ns();
    for (int i = 0; i < TRIPS && rr; i++) {
      hsad_completion_t c;
      if ((s = hsad_kernel_dispatch(q, kempty, &le, HSAD_DEADLINE_NEVER, &c, NULL)) ||
          (s = hsad_completion_wait(&c, HSAD_DEADLINE_NEVER)))
        return fail("roundtrip", s);
    }
    uint64_t t1 = hsad_now_ns();
    for (int i = 0; i < TRIPS && rr; i++) {
      nv_cu.launch_kernel(fempty, 1, 1, 1, 256, 1, 1, 0, stream, NULL, NULL);
      nv_cu.stream_synchronize(stream);
    }
    uint64_t t2 = hsad_now_ns();
    for (int i = 0; i < TRIPS && rr; i++) {
      nv_cu.launch_kernel(fempty, 1, 1, 1, 256, 1, 1, 0, stream, NULL, NULL);
      nv_cu.event_record(rt_event, stream);
      nv_cu.event_synchronize(rt_event);
    }
    uint64_t t3 = hsad_now_ns();
    rt_hsad[round] = (double)(t1 - t0) / TRIPS;
    rt_raw[round] = (double)(t2 - t1) / TRIPS;
    rt_ev[round] = (double)(t3 - t2) / TRIPS;
    fprintf(stderr, "hsad-bench-nvidia: round %d of %d done\n", round + 1, rounds);
  }
  double med[8] = {0};
  if (dd) {
    med[0] = report("dispatch", "hsad", "empty", v[0], rounds);
    med[1] = report("dispatch", "cuLaunchKernel", "empty", v[1], rounds);
    report("dispatch", "cuLaunchKernelEx", "empty", v[2], rounds);
    if (have_rt) report("dispatch", "cudaLaunchKernel", "empty", v[6], rounds);
    med[2] = report("dispatch", "hsad", "saxpy", v[3], rounds);
    med[3] = report("dispatch", "cuLaunchKernel", "saxpy", v[4], rounds);
    report("dispatch", "cuLaunchKernelEx", "saxpy", v[5], rounds);
    if (have_rt) report("dispatch", "cudaLaunchKernel", "saxpy", v[7], rounds);
    else printf("dispatch  cudaLaunchKernel: not measured: %s\n", crt.why);
  }
  if (rr) {
    med[4] = report("roundtrip", "hsad", "empty", rt_hsad, rounds);
    med[5] = report("roundtrip", "cuLaunch+Sync", "empty", rt_raw, rounds);
    med[6] = report("roundtrip", "cuLaunch+EventSync", "empty", rt_ev, rounds);
  }
  /* barrier, pool, copy */
  bench_env_t be = {.dev = dev, .q = q, .sa = stream, .kempty = kempty, .fempty = fempty,
                    .rounds = rounds};
  double bar_ratio = 0, pool_ratio[NSZ] = {0}, pool_rmin[NSZ] = {0}, copy_ratio[2][NSZ] = {{0}};
  int bb = want(suites, "barrier"), pp = want(suites, "pool"), cc = want(suites, "copy");
  if (bb) {
    if ((s = hsad_program_kernel(prog, "delay_store", &be.kdelay)) ||
        (s = hsad_program_kernel(prog, "copy_one", &be.kcopy)))
      return fail("kernels delay_store, copy_one", s);
    be.fdelay = (nv_function_t)(uintptr_t)hsad_device_kernel_desc(be.kdelay)->kernel_object;
    be.fcopy = (nv_function_t)(uintptr_t)hsad_device_kernel_desc(be.kcopy)->kernel_object;
    if ((s = hsad_queue_create(dev, NULL, &be.qb))) return fail("hsad_queue_create", s);
    DRV(nv_cu.stream_create(&be.sb, NV_STREAM_NON_BLOCKING));
    DRV(nv_cu.event_create(&be.ev, NV_EVENT_DISABLE_TIMING));
    if (suite_barrier(&be, &bar_ratio)) return 1;
    fprintf(stderr, "hsad-bench-nvidia: barrier done\n");
  }
  if (pp) {
    if (suite_pool(&be, count, pool_ratio, pool_rmin)) return 1;
    fprintf(stderr, "hsad-bench-nvidia: pool done\n");
  }
  if (cc) {
    if (suite_copy(&be, copy_ratio)) return 1;
    fprintf(stderr, "hsad-bench-nvidia: copy done\n");
  }
  if (want(suites, "pageable")) {
    if (suite_pageable(&be)) return 1;
    fprintf(stderr, "hsad-bench-nvidia: pageable done\n");
  }
  double timing_ratio = 0;
  if (want(suites, "timing")) {
    hsad_queue_options_t po = {.profiling = true};
    hsad_queue_t *pq;
    HS("hsad_queue_create (profiling)", hsad_queue_create(dev, &po, &pq));
    double tv[2][MAXR];
    hsad_completion_t c = {0};
    for (int round = 0; round < rounds; round++)
      for (int path = 0; path < 2; path++) {
        hsad_queue_t *tq = path ? pq : q;
        uint64_t t0 = hsad_now_ns();
        for (int i = 0; i < count / 10; i++)
          HS("hsad_kernel_dispatch", hsad_kernel_dispatch(tq, kempty, &le, HSAD_DEADLINE_NEVER, &c, NULL));
        uint64_t t1 = hsad_now_ns();
        HS("wait", hsad_completion_wait(&c, HSAD_DEADLINE_NEVER));
        tv[path][round] = (double)(t1 - t0) / (count / 10);
      }
    uint64_t ts, te;
    HS("hsad_completion_times", hsad_completion_times(&c, &ts, &te));
    if (te < ts) {
      fprintf(stderr, "hsad-bench-nvidia: timing: end %llu before start %llu\n",
              (unsigned long long)te, (unsigned long long)ts);
      return 1;
    }
    printf("timing    check: the last dispatch ran %llu ns on the device (hsad_completion_times)\n",
           (unsigned long long)(te - ts));
    double a = report("timing", "dispatch+completion", "empty", tv[0], rounds);
    double b = report("timing", "profiling queue", "empty", tv[1], rounds);
    timing_ratio = b - a;
    hsad_queue_destroy(pq);
  }
  double graph_ratio[3][2] = {{0}};
  int gg = want(suites, "graph");
  if (gg) {
    const hsad_device_kernel_t *kaff;
    if ((s = hsad_program_kernel(prog, "affine", &kaff))) return fail("kernel affine", s);
    if (suite_graph(dev, kaff, rounds, graph_ratio)) return 1;
  }
  double prod_ratio[2][PB_NT] = {{0}};
  int pr = want(suites, "producers");
  if (pr) {
    if (suite_producers(dev, kempty, fempty, rounds, count, prod_ratio)) return 1;
    fprintf(stderr, "hsad-bench-nvidia: producers done\n");
  }
  /* issue 19's targets, from the medians above */
  if (dd)
    printf("target    dispatch within 5%% of cuLaunchKernel: empty %+.1f%%, saxpy %+.1f%%\n",
           (med[0] / med[1] - 1) * 100, (med[2] / med[3] - 1) * 100);
  if (rr)
    printf("target    roundtrip faster than cuLaunchKernel + cuStreamSynchronize: %.3fx, + "
           "cuEventRecord + cuEventSynchronize: %.3fx\n", med[5] / med[4], med[6] / med[4]);
  if (bb)
    printf("target    cross-queue wait faster than cuEventRecord + cuStreamWaitEvent (trip): "
           "%.3fx\n", bar_ratio);
  if (pp)
    printf("target    pool alloc+free >= 100x faster than cuMemHostAlloc + cuMemFreeHost: "
           "%.0fx (4KiB), %.0fx (1MiB), %.0fx (64MiB) (medians); the worst round %.0fx / %.0fx / "
           "%.0fx\n", pool_ratio[0], pool_ratio[1], pool_ratio[2], pool_rmin[0], pool_rmin[1],
           pool_rmin[2]);
  if (cc)
    printf("target    copy, driver time / hsad time (H2D + D2H): pinned %.3f / %.3f / %.3f, "
           "pageable %.3f / %.3f / %.3f (4KiB / 1MiB / 64MiB)\n", copy_ratio[0][0],
           copy_ratio[0][1], copy_ratio[0][2], copy_ratio[1][0], copy_ratio[1][1],
           copy_ratio[1][2]);
  if (want(suites, "timing"))
    printf("cost      device times per dispatch (profiling queue, event pair): %+.0f ns\n",
           timing_ratio);
  if (gg)
    printf("target    graph launch host ns within 10%% of cuGraphLaunch: chain10 %+.1f%%, dag100 "
           "%+.1f%%, forkjoin %+.1f%%; update within 10%% of cuGraphExecKernelNodeSetParams: "
           "%+.1f%% / %+.1f%% / %+.1f%%\n", (graph_ratio[0][0] - 1) * 100,
           (graph_ratio[1][0] - 1) * 100, (graph_ratio[2][0] - 1) * 100,
           (graph_ratio[0][1] - 1) * 100, (graph_ratio[1][1] - 1) * 100,
           (graph_ratio[2][1] - 1) * 100);
  if (pr)
    printf("target    producers, hsad ns per submit over cuLaunchKernel's (1 / 2 / 4 / 8 threads): "
           "one queue %.3f / %.3f / %.3f / %.3f, a queue each %.3f / %.3f / %.3f / %.3f\n",
           prod_ratio[1][0], prod_ratio[1][1], prod_ratio[1][2], prod_ratio[1][3],
           prod_ratio[0][0], prod_ratio[0][1], prod_ratio[0][2], prod_ratio[0][3]);
  int rc = 0;
  if (plot) {
    char title[512];
    snprintf(title, sizeof title, "%s (%s), CUDA %d.%d, driver %s; %d rounds of %d",
             di->product_name, di->name, di->cuda_version / 1000, di->cuda_version % 1000 / 10,
             di->driver_version, rounds, count);
    rc = bench_plot(plot, title);
  }
  if (be.qb) hsad_queue_destroy(be.qb);
  if (be.sb) nv_cu.stream_destroy(be.sb);
  if (be.ev) nv_cu.event_destroy(be.ev);
  nv_cu.event_destroy(rt_event);
  nv_cu.stream_destroy(stream);
  hsad_queue_destroy(q);
  hsad_mem_free(x);
  hsad_mem_free(y);
  hsad_program_destroy(prog);
  hsad_runtime_close(rt);
  if (json) fclose(json);
  free(bench_rows);
  return rc;
}
