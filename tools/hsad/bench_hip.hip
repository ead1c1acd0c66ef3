// hsad-bench-hip COUNT - the HIP side of `hsad bench dispatch`: COUNT launches of an empty kernel
// with hipLaunchKernelGGL on the null stream, in blocks of 1000 timed with CLOCK_MONOTONIC.
// Prints "ns MIN MEDIAN MAX" (ns per launch over the blocks) and exits 0, or 1 on a HIP error.
// bench_hip_submit() is the unit `hsad bench` counts instructions of under callgrind.
// Built with hipcc for gfx90a (the device kfd-emu emulates by default); -rdynamic exports the
// kfd-emu twin of the kernel below, so the emulated GPU can complete it.
#include <hip/hip_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

extern "C" __global__ void hsad_bench_empty(void) {}

// kfd-emu host twin (kfd_emu_twin.h's signature; nothing to do for an empty kernel).
extern "C" __attribute__((visibility("default"))) int kfd_emu_twin_hsad_bench_empty(const void *,
                                                                                    const void *) {
  return 0;
}

extern "C" __attribute__((noinline)) void bench_hip_submit(void) {
  hipLaunchKernelGGL(hsad_bench_empty, dim3(1), dim3(1), 0, 0);
}

static unsigned long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  unsigned count = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 0) : 100000;
  unsigned blocks = count / 1000 ? count / 1000 : 1;
  double *v = (double *)calloc(blocks, sizeof *v);
  if (hipSetDevice(0) != hipSuccess || hipFree(0) != hipSuccess) {
    fprintf(stderr, "hsad-bench-hip: no HIP device\n");
    return 1;
  }
  // first launch (outside bench_hip_submit: it loads the code object through comgr)
  hipLaunchKernelGGL(hsad_bench_empty, dim3(1), dim3(1), 0, 0);
  if (hipDeviceSynchronize() != hipSuccess) return 1;
  for (unsigned b = 0; b < blocks; b++) {
    unsigned long long t0 = now_ns();
    for (unsigned i = 0; i < 1000; i++) bench_hip_submit();
    v[b] = (double)(now_ns() - t0) / 1000.0;
  }
  hipError_t e = hipDeviceSynchronize();
  if (e != hipSuccess || hipGetLastError() != hipSuccess) {
    fprintf(stderr, "hsad-bench-hip: %s\n", hipGetErrorString(e));
    return 1;
  }
  qsort(v, blocks, sizeof *v, cmp);
  printf("ns %.1f %.1f %.1f\n", v[0], v[blocks / 2], v[blocks - 1]);
  // a chain of 10 launches on the null stream (in order) and a wait for the last
  double ch[200];
  for (int run = 0; run < 200; run++) {
    unsigned long long t0 = now_ns();
    for (int i = 0; i < 10; i++) hipLaunchKernelGGL(hsad_bench_empty, dim3(1), dim3(1), 0, 0);
    if (hipStreamSynchronize(0) != hipSuccess) return 1;
    ch[run] = (double)(now_ns() - t0) / 1e3;
  }
  qsort(ch, 200, sizeof *ch, cmp);
  printf("chain_us %.2f %.2f %.2f\n", ch[0], ch[100], ch[199]);
  return 0;
}
