/* bench_nvidia.c - hsad-bench-nvidia: the NVIDIA backend's costs next to the driver's own
 * (issue 19). On the first NVIDIA device:
 *   dispatch   host ns per submit: hsad_kernel_dispatch (no completion) against cuLaunchKernel
 *              and cuLaunchKernelEx (no attributes) on a stream of their own, for `empty` (no parameters) and `saxpy` (4 parameters
 *              packed from the metadata); each round submits COUNT per path, paths
 *              interleaved, the streams drained between rounds (not timed);
 *   roundtrip  launch + wait: hsad_kernel_dispatch with a completion + hsad_completion_wait
 *              against cuLaunchKernel + cuStreamSynchronize, ns per round trip.
 * Prints min / median / max over rounds, and the same as JSON lines when given a file.
 * Usage: hsad-bench-nvidia CUBIN [--rounds R] [--count N] [--json FILE]. Exit 0 also when
 * there is no NVIDIA GPU (it says so), 1 on a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsa-dispatch/hsad.h"
#include "memory/hsad_memory.h"
#include "nvidia/nv_cuda.h"

#define MAXR 64

static int fail(const char *what, hsad_status_t s) {
  fprintf(stderr, "hsad-bench-nvidia: %s: %s: %s\n", what, hsad_status_name(s), hsad_last_error());
  return 1;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static FILE *json;

static void report(const char *suite, const char *path, const char *kernel, double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  printf("%-9s %-16s %-7s min %9.1f  median %9.1f  max %9.1f ns\n", suite, path, kernel, v[0],
         v[n / 2], v[n - 1]);
  if (json)
    fprintf(json, "{\"suite\":\"%s\",\"path\":\"%s\",\"kernel\":\"%s\",\"min_ns\":%.1f,"
            "\"median_ns\":%.1f,\"max_ns\":%.1f,\"rounds\":%d}\n", suite, path, kernel, v[0],
            v[n / 2], v[n - 1], n);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: hsad-bench-nvidia CUBIN [--rounds R] [--count N] [--json FILE]\n");
    return 2;
  }
  int rounds = 7, count = 20000;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--rounds")) rounds = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--count")) count = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--json")) json = fopen(argv[i + 1], "w");
  }
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
  void *raw_args[] = {&a, &x, &y, &n};
  hsad_karg_t args[] = {HSAD_KARG_VAL(a), HSAD_KARG_PTR(x), HSAD_KARG_PTR(y), HSAD_KARG_VAL(n)};
  hsad_launch_t le = {.dims = 1, .grid = {256, 1, 1}, .block = {256, 1, 1}};
  hsad_launch_t ls = {.dims = 1, .grid = {256, 1, 1}, .block = {256, 1, 1}, .args = args, .arg_count = 4};
  double v[6][MAXR], rt_hsad[MAXR], rt_raw[MAXR];
  for (int round = 0; round < rounds; round++) {
    for (int kind = 0; kind < 2; kind++) {
      const hsad_device_kernel_t *k = kind ? ksaxpy : kempty;
      hsad_launch_t *l = kind ? &ls : &le;
      uint64_t t0 = hsad_now_ns();
      for (int i = 0; i < count; i++)
        if ((s = hsad_kernel_dispatch(q, k, l, HSAD_DEADLINE_NEVER, NULL, NULL)))
          return fail("hsad_kernel_dispatch", s);
      uint64_t t1 = hsad_now_ns();
      if ((s = hsad_queue_wait_idle(q, HSAD_DEADLINE_NEVER))) return fail("wait_idle", s);
      uint64_t t2 = hsad_now_ns();
      for (int i = 0; i < count; i++)
        if ((r = nv_cu.launch_kernel(kind ? fsaxpy : fempty, 1, 1, 1, 256, 1, 1, 0, stream,
                                     kind ? raw_args : NULL, NULL))) {
          fprintf(stderr, "hsad-bench-nvidia: cuLaunchKernel: error %u\n", r);
          return 1;
        }
      uint64_t t3 = hsad_now_ns();
      nv_cu.stream_synchronize(stream);
      nv_launch_config_t cfg = {.grid_dim_x = 1, .grid_dim_y = 1, .grid_dim_z = 1,
                                .block_dim_x = 256, .block_dim_y = 1, .block_dim_z = 1,
                                .stream = stream};
      uint64_t t4 = hsad_now_ns();
      for (int i = 0; i < count; i++)
        if ((r = nv_cu.launch_kernel_ex(&cfg, kind ? fsaxpy : fempty, kind ? raw_args : NULL,
                                        NULL))) {
          fprintf(stderr, "hsad-bench-nvidia: cuLaunchKernelEx: error %u\n", r);
          return 1;
        }
      uint64_t t5 = hsad_now_ns();
      nv_cu.stream_synchronize(stream);
      v[kind * 3][round] = (double)(t1 - t0) / count;
      v[kind * 3 + 1][round] = (double)(t3 - t2) / count;
      v[kind * 3 + 2][round] = (double)(t5 - t4) / count;
    }
    enum { TRIPS = 2000 };
    uint64_t t0 = hsad_now_ns();
    for (int i = 0; i < TRIPS; i++) {
      hsad_completion_t c;
      if ((s = hsad_kernel_dispatch(q, kempty, &le, HSAD_DEADLINE_NEVER, &c, NULL)) ||
          (s = hsad_completion_wait(&c, HSAD_DEADLINE_NEVER)))
        return fail("roundtrip", s);
    }
    uint64_t t1 = hsad_now_ns();
    for (int i = 0; i < TRIPS; i++) {
      nv_cu.launch_kernel(fempty, 1, 1, 1, 256, 1, 1, 0, stream, NULL, NULL);
      nv_cu.stream_synchronize(stream);
    }
    uint64_t t2 = hsad_now_ns();
    rt_hsad[round] = (double)(t1 - t0) / TRIPS;
    rt_raw[round] = (double)(t2 - t1) / TRIPS;
    fprintf(stderr, "hsad-bench-nvidia: round %d of %d done\n", round + 1, rounds);
  }
  report("dispatch", "hsad", "empty", v[0], rounds);
  report("dispatch", "cuLaunchKernel", "empty", v[1], rounds);
  report("dispatch", "cuLaunchKernelEx", "empty", v[2], rounds);
  report("dispatch", "hsad", "saxpy", v[3], rounds);
  report("dispatch", "cuLaunchKernel", "saxpy", v[4], rounds);
  report("dispatch", "cuLaunchKernelEx", "saxpy", v[5], rounds);
  report("roundtrip", "hsad", "empty", rt_hsad, rounds);
  report("roundtrip", "cuLaunch+Sync", "empty", rt_raw, rounds);
  nv_cu.stream_destroy(stream);
  hsad_queue_destroy(q);
  hsad_mem_free(x);
  hsad_mem_free(y);
  hsad_program_destroy(prog);
  hsad_runtime_close(rt);
  if (json) fclose(json);
  return 0;
}
