/* test_kernels_hip.c - HIP (libamdhip64 5.2.3, unchanged) on kfd-emu: the hipcc-built vector add
 * program, and hipMemcpy / hipMemset / hipMemcpy2D / hipMemset2D byte-exact. Device-to-device
 * copies and memsets run ROCclr's blit kernels (__amd_rocclr_copyBuffer, copyBufferRect,
 * fillBufferAligned, fillBufferAligned2D: twins in kernels/twins_rocclr.c); host<->device copies
 * go through ROCr's blit kernels (tools/kfd-emu/blit_rocr.c). */
#define _GNU_SOURCE /* dladdr, Dl_info */
#define __HIP_PLATFORM_AMD__ 1
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <hip/hip_runtime_api.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#ifndef TEST_HIP_VECTOR_ADD
#define TEST_HIP_VECTOR_ADD "build/bin/hip-vector-add"
#endif

extern char **environ;

#define HIP_OK(call) cr_assert_eq((call), hipSuccess, "%s: %s", #call, hipGetErrorString(call))

TestSuite(hip, .timeout = 120);

#ifdef __SANITIZE_ADDRESS__
void __asan_init(void); /* the ASan runtime's entry point: finds its library with dladdr */
#endif

Test(hip, vector_add_program_exits_0) {
  pid_t pid;
  char *argv[] = {(char *)TEST_HIP_VECTOR_ADD, NULL};
#ifdef __SANITIZE_ADDRESS__
  /* a sanitizer build: kfd-emu (instrumented) is loaded into the uninstrumented HIP program,
   * so the ASan runtime this process uses is preloaded there (it must come first); leaks of
   * HIP and ROCr are not this project's */
  Dl_info asan;
  cr_assert(dladdr((void *)__asan_init, &asan) && asan.dli_fname, "ASan runtime not found");
  setenv("LD_PRELOAD", asan.dli_fname, 1);
  setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
#endif
  cr_assert_eq(posix_spawn(&pid, TEST_HIP_VECTOR_ADD, NULL, NULL, argv, environ), 0,
               "spawn %s", TEST_HIP_VECTOR_ADD);
  int st = 0;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st), "hip-vector-add died (status 0x%x)", st);
  cr_assert_eq(WEXITSTATUS(st), 0, "hip-vector-add exit status");
}

static void pattern(uint8_t *p, size_t n, uint32_t seed) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)((i * 167u + seed * 13u + (i >> 11)) ^ seed);
}

/* Host -> device -> device -> host with odd sizes and offsets; guard bytes around the final
 * destination stay untouched. */
Test(hip, memcpy_h2d_d2d_d2h_byte_exact) {
  const size_t cap = (3u << 20) + 64;
  uint8_t *h_src = malloc(cap), *h_dst = malloc(cap), *d1, *d2;
  cr_assert(h_src && h_dst);
  HIP_OK(hipMalloc((void **)&d1, cap));
  HIP_OK(hipMalloc((void **)&d2, cap));
  const size_t sizes[] = {1, 3, 17, 4096 + 5, 65536, (1u << 20) + 3, 3u << 20};
  const size_t offs[][3] = {{0, 0, 0}, {1, 2, 3}, {4, 7, 1}, {3, 3, 3}};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++)
    for (size_t oi = 0; oi < sizeof offs / sizeof offs[0]; oi++) {
      size_t n = sizes[si], a = offs[oi][0], b = offs[oi][1], c = offs[oi][2];
      if (n + 16 > cap) n = cap - 16;
      pattern(h_src, cap, (uint32_t)(si * 8 + oi));
      memset(h_dst, 0xEE, cap);
      HIP_OK(hipMemset(d2, 0x11, cap));
      HIP_OK(hipMemcpy(d1 + a, h_src, n, hipMemcpyHostToDevice));
      HIP_OK(hipMemcpy(d2 + b, d1 + a, n, hipMemcpyDeviceToDevice));
      HIP_OK(hipMemcpy(h_dst + c, d2 + b, n, hipMemcpyDeviceToHost));
      cr_assert(memcmp(h_dst + c, h_src, n) == 0, "size %zu offsets %zu/%zu/%zu differ", n, a, b, c);
      for (size_t i = 0; i < c; i++) cr_assert_eq(h_dst[i], 0xEE);
      for (size_t i = c + n; i < c + n + 8; i++) cr_assert_eq(h_dst[i], 0xEE);
      /* the device bytes around the D2D destination keep the memset value */
      uint8_t guard[16];
      if (b) {
        HIP_OK(hipMemcpy(guard, d2, b, hipMemcpyDeviceToHost));
        for (size_t i = 0; i < b; i++) cr_assert_eq(guard[i], 0x11, "d2d wrote before dst");
      }
      HIP_OK(hipMemcpy(guard, d2 + b + n, 8, hipMemcpyDeviceToHost));
      for (size_t i = 0; i < 8; i++) cr_assert_eq(guard[i], 0x11, "d2d wrote past the end");
    }
  HIP_OK(hipFree(d1));
  HIP_OK(hipFree(d2));
  free(h_src);
  free(h_dst);
}

/* hipMemset (bytes), hipMemsetD16, hipMemsetD32 at assorted offsets and lengths.
 * ROCclr 5.2.3 splits a fill into an unaligned head (up to the next 8-byte boundary), an aligned
 * body and a tail (device/blit.cpp FillBufferInfo::PackInfo) without clamping the head to the
 * fill size: a fill shorter than its head writes the whole head and then launches a body of
 * (size - head) / 8 = ~2^61 elements, which faults on hardware too. The lengths below are never
 * shorter than the head: any length at offset 0, at least 8 bytes at offsets 1-3. */
Test(hip, memset_d8_d16_d32_byte_exact) {
  const size_t cap = (1u << 20) + 256;
  uint8_t *h = malloc(cap), *want = malloc(cap), *d;
  cr_assert(h && want);
  HIP_OK(hipMalloc((void **)&d, cap));
  const size_t lens[] = {1, 2, 3, 7, 8, 9, 15, 64, 1000, 4097, (1u << 20) + 1};
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++)
    for (size_t off = 0; off < 4; off++) {
      size_t n = lens[li];
      if (off && n < 8) continue;
      memset(want, 0x77, cap);
      HIP_OK(hipMemset(d, 0x77, cap));
      /* bytes */
      HIP_OK(hipMemset(d + off, 0xA5, n));
      memset(want + off, 0xA5, n);
      /* 16-bit words after it, 2-aligned */
      size_t o16 = (off + n + 8) & ~(size_t)1, n16 = n / 2 + 4; /* >= 8 bytes >= head */
      if (o16 + 2 * n16 + 8 <= cap) {
        HIP_OK(hipMemsetD16((hipDeviceptr_t)(d + o16), 0xBEEF, n16));
        for (size_t i = 0; i < n16; i++) want[o16 + 2 * i] = 0xEF, want[o16 + 2 * i + 1] = 0xBE;
      }
      HIP_OK(hipMemcpy(h, d, cap, hipMemcpyDeviceToHost));
      for (size_t i = 0; i < cap; i++)
        if (h[i] != want[i]) cr_assert_fail("len %zu off %zu: byte %zu = 0x%x, want 0x%x", n, off, i, h[i], want[i]);
      /* 32-bit words, 4-aligned */
      size_t n32 = n / 4 + 1, o32 = 4 * off;
      HIP_OK(hipMemsetD32((hipDeviceptr_t)(d + o32), 0x12345678, n32));
      for (size_t i = 0; i < n32 && o32 + 4 * i + 4 <= cap; i++) {
        want[o32 + 4 * i] = 0x78, want[o32 + 4 * i + 1] = 0x56;
        want[o32 + 4 * i + 2] = 0x34, want[o32 + 4 * i + 3] = 0x12;
      }
      HIP_OK(hipMemcpy(h, d, cap, hipMemcpyDeviceToHost));
      for (size_t i = 0; i < cap; i++)
        if (h[i] != want[i]) cr_assert_fail("D32 len %zu off %zu: byte %zu = 0x%x, want 0x%x", n, off, i, h[i], want[i]);
    }
  HIP_OK(hipFree(d));
  free(h);
  free(want);
}

/* hipMemcpy2D device to device (pitched rows) and hipMemset2D. */
Test(hip, memcpy2d_and_memset2d_byte_exact) {
  const size_t w = 333, hgt = 37, spitch = 512, dpitch = 768;
  size_t cap = dpitch * (hgt + 2);
  uint8_t *src_h = malloc(spitch * hgt), *h = malloc(cap), *want = malloc(cap), *ds, *dd;
  cr_assert(src_h && h && want);
  HIP_OK(hipMalloc((void **)&ds, spitch * hgt));
  HIP_OK(hipMalloc((void **)&dd, cap));
  pattern(src_h, spitch * hgt, 99);
  HIP_OK(hipMemcpy(ds, src_h, spitch * hgt, hipMemcpyHostToDevice));
  HIP_OK(hipMemset(dd, 0x33, cap));
  HIP_OK(hipMemcpy2D(dd + 5, dpitch, ds + 3, spitch, w, hgt, hipMemcpyDeviceToDevice));
  memset(want, 0x33, cap);
  for (size_t y = 0; y < hgt; y++) memcpy(want + 5 + y * dpitch, src_h + 3 + y * spitch, w);
  HIP_OK(hipMemcpy(h, dd, cap, hipMemcpyDeviceToHost));
  for (size_t i = 0; i < cap; i++)
    if (h[i] != want[i]) cr_assert_fail("2D copy: byte %zu (row %zu col %zu) = 0x%x, want 0x%x", i, i / dpitch, i % dpitch, h[i], want[i]);

  HIP_OK(hipMemset2D(dd + dpitch, dpitch, 0xC4, 100, 10));
  for (size_t y = 0; y < 10; y++) memset(want + dpitch + y * dpitch, 0xC4, 100);
  HIP_OK(hipMemcpy(h, dd, cap, hipMemcpyDeviceToHost));
  for (size_t i = 0; i < cap; i++)
    if (h[i] != want[i]) cr_assert_fail("2D memset: byte %zu = 0x%x, want 0x%x", i, h[i], want[i]);
  HIP_OK(hipFree(ds));
  HIP_OK(hipFree(dd));
  free(src_h);
  free(h);
  free(want);
}
