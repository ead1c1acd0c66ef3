/* bench_memory_rect.c - the 2-D copy paths side by side (README, "Memory", 2-D/3-D copies):
 * for each box (rows x width bytes, device to device, pitch = width + 64), the time of
 * hsad_memcpy_2d_async + hsad_completion_wait by rows (HSAD_RECT_BLIT_MIN_DMAS=0), by the copy
 * kernel (=1) and packed (both pitches = width: one DMA), best of N after 2 warm-up runs (the
 * first kernel of a process pays comgr's compile and, on kfd-emu, POCL's build). Not a test:
 * `make build/tests/bench_memory_rect && build/tests/bench_memory_rect` (kfd-emu without a GPU).
 * Exit 1 with the library's message on any error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsa-dispatch/hsad.h"
#include "memory/hsad_memory.h"

static int by_value(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Best time in ns of `reps` copies of the box (after 2 unmeasured ones). */
static uint64_t best_ns(hsad_device_t *dev, uint8_t *d, size_t dp, uint8_t *s, size_t sp,
                        size_t w, size_t h, int reps) {
  uint64_t t[64];
  for (int i = 0; i < reps + 2; i++) {
    hsad_completion_t c;
    uint64_t t0 = hsad_now_ns();
    if (hsad_memcpy_2d_async(dev, d, dp, s, sp, w, h, NULL, 0, t0 + 10000000000ull, &c) ||
        hsad_completion_wait(&c, hsad_now_ns() + 60000000000ull)) {
      fprintf(stderr, "bench_memory_rect: %s\n", hsad_last_error());
      exit(1);
    }
    if (i >= 2) t[i - 2] = hsad_now_ns() - t0;
  }
  qsort(t, (size_t)reps, sizeof t[0], by_value);
  return t[0];
}

int main(void) {
  hsad_runtime_t *rt = NULL;
  hsad_device_t *dev = NULL;
  if (hsad_runtime_open(&rt) || hsad_device_get(rt, 0, &dev)) {
    fprintf(stderr, "bench_memory_rect: %s\n", hsad_last_error());
    return 1;
  }
  static const size_t shapes[][2] = {{64, 256}, {256, 1024}, {65536, 64}, {64, 2}, {64, 3},
                                     {64, 4},   {64, 8},     {4096, 2},    {4096, 4}};
  printf("# device to device, best of 31 (7 for 1024 rows), us\n");
  printf("%-14s %12s %12s %14s\n", "box", "rows", "kernel", "packed (1 DMA)");
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    size_t w = shapes[k][0], h = shapes[k][1], p = w + 64;
    uint8_t *a = NULL, *b = NULL;
    if (hsad_mem_alloc(dev, HSAD_MEM_DEVICE, p * h, NULL, 0, (void **)&a) ||
        hsad_mem_alloc(dev, HSAD_MEM_DEVICE, p * h, NULL, 0, (void **)&b)) {
      fprintf(stderr, "bench_memory_rect: %s\n", hsad_last_error());
      return 1;
    }
    memset(a, 1, p * h);
    memset(b, 2, p * h);
    int reps = h >= 1024 ? 7 : 31;
    setenv("HSAD_RECT_BLIT_MIN_DMAS", "0", 1);
    uint64_t rows = best_ns(dev, b, p, a, p, w, h, reps);
    setenv("HSAD_RECT_BLIT_MIN_DMAS", "1", 1);
    uint64_t kern = best_ns(dev, b, p, a, p, w, h, reps);
    uint64_t packed = best_ns(dev, b, w, a, w, w, h, reps);
    char box[32];
    snprintf(box, sizeof box, "%zu x %zu B", h, w);
    printf("%-14s %12.1f %12.1f %14.1f\n", box, rows / 1e3, kern / 1e3, packed / 1e3);
    hsad_mem_free(a);
    hsad_mem_free(b);
  }
  return hsad_runtime_close(rt) ? 1 : 0;
}
