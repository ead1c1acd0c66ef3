/* test_codeobj_speed.c - the speed bounds, measured on Debian's librocrand1 gfx90a code
 * object (80 kernels, 1.7 MB): `hsad inspect` end to end (process start included) under 20 ms,
 * loading alone, and O(1) lookup by name (the time per lookup does not grow with the kernel
 * count). Figures are printed with cr_log_info; bounds are generous for loaded CI machines. */
#include "test_codeobj_util.h"

#include <stdint.h>
#include <time.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROCRAND "/usr/lib/x86_64-linux-gnu/librocrand.so.1"
/* sanitizer builds (make SAN=...) run 5-20x slower: the bounds scale, the figures still print */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_UNDEFINED__)
#define SLOWDOWN 20.0
#else
#define SLOWDOWN 1.0
#endif
#ifndef CO_HSAD
#define CO_HSAD "build/bin/hsad"
#endif

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Writes the gfx90a:xnack- code object of librocrand to a temporary file. */
static void extract(char *path_out) {
  hsad_codeobj_container_t *c = NULL;
  cr_assert_eq(hsad_codeobj_container_open_file(ROCRAND, &c), HSAD_OK, "%s (install librocrand1)",
               hsad_last_error());
  size_t i;
  cr_assert_eq(hsad_codeobj_container_select(c, "gfx90a:xnack-", &i), HSAD_OK);
  const hsad_codeobj_entry_t *e = hsad_codeobj_container_entry(c, i);
  strcpy(path_out, "/tmp/hsad-rocrand-XXXXXX");
  int fd = mkstemp(path_out);
  cr_assert_geq(fd, 0);
  cr_assert_eq(write(fd, e->data, e->size), (ssize_t)e->size);
  close(fd);
  cr_assert_gt(e->size, 1600000);
  hsad_codeobj_container_destroy(c);
}

Test(codeobj_speed, load_80_kernel_object) {
  char path[64];
  extract(path);
  double t[21];
  for (int r = 0; r < 21; r++) {
    double t0 = now_ms();
    hsad_codeobj_t *co = co_test_load(path);
    t[r] = now_ms() - t0;
    cr_assert_eq(hsad_codeobj_info(co)->kernel_count, 80);
    hsad_codeobj_destroy(co);
  }
  qsort(t, 21, sizeof t[0], cmp_double);
  cr_log_info("load (file read + ELF + msgpack + descriptors + plans), 80 kernels, 1.7 MB: "
              "median %.2f ms, min %.2f ms", t[10], t[0]);
  cr_assert_lt(t[10], 20.0 * SLOWDOWN);
  unlink(path);
}

/* fork + exec of `hsad ARG FILE` (FILE may be NULL), stdout to /dev/null; returns wall ms */
static double run_hsad(const char *arg, const char *file) {
  double t0 = now_ms();
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    int fd = open("/dev/null", O_WRONLY);
    dup2(fd, 1);
    execl(CO_HSAD, CO_HSAD, arg, file, (char *)NULL);
    _exit(127);
  }
  int st;
  waitpid(pid, &st, 0);
  double t = now_ms() - t0;
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "hsad %s %s failed", arg,
            file ? file : "");
  return t;
}

/* `hsad inspect` end to end, fastest of 15 runs (the cost without interference on a shared
 * machine), and the same for `hsad --help`: the start-up and exit cost of the hsad binary
 * itself, which codeobj does not control (libraries other commands link, e.g. ROCr's static
 * constructors, run at every start). The bound applies to what inspect adds to that. */
Test(codeobj_speed, hsad_inspect_end_to_end) {
  cr_assert_eq(access(CO_HSAD, X_OK), 0, "%s not built", CO_HSAD);
  char path[64];
  extract(path);
  double t[15], base[15];
  for (int r = 0; r < 15; r++) {
    t[r] = run_hsad("inspect", path);
    base[r] = run_hsad("--help", NULL);
  }
  qsort(t, 15, sizeof t[0], cmp_double);
  qsort(base, 15, sizeof base[0], cmp_double);
  cr_log_info("hsad inspect, 80 kernels, 1.7 MB: min %.2f ms, median %.2f ms end to end; hsad "
              "--help (start + exit only): min %.2f ms; inspect's own share %.2f ms",
              t[0], t[7], base[0], t[0] - base[0]);
  cr_assert_lt(t[0] - base[0], 20.0 * SLOWDOWN);
  unlink(path);
}

/* Lookup by name is a hash probe: time per lookup is flat from 8 to 80 kernels. */
Test(codeobj_speed, lookup_is_constant_time) {
  char path[64];
  extract(path);
  hsad_codeobj_t *big = co_test_load(path);
  hsad_codeobj_t *small = co_test_load(FIX("kernels-gfx90a-v5.hsaco"));
  double per[2];
  hsad_codeobj_t *cos[2] = {small, big};
  for (int w = 0; w < 2; w++) {
    const hsad_codeobj_info_t *ci = hsad_codeobj_info(cos[w]);
    const char *names[80];
    for (uint32_t k = 0; k < ci->kernel_count; k++)
      names[k] = hsad_kernel_info(hsad_codeobj_kernel_at(cos[w], k))->name;
    const int iters = 400000;
    double t0 = now_ms();
    uintptr_t sink = 0;
    for (int i = 0; i < iters; i++) {
      const hsad_kernel_t *k = NULL;
      hsad_codeobj_kernel_find(cos[w], names[(uint32_t)i % ci->kernel_count], &k);
      sink += (uintptr_t)k;
    }
    per[w] = (now_ms() - t0) * 1e6 / iters;
    cr_assert_neq(sink, 0);
  }
  cr_log_info("kernel lookup by name: %.0f ns (8 kernels), %.0f ns (80 kernels, mangled names)",
              per[0], per[1]);
  /* a hash probe plus hashing and comparing a ~100-character name: far below a linear scan */
  cr_assert_lt(per[1], 2000.0 * SLOWDOWN);
  hsad_codeobj_destroy(big);
  hsad_codeobj_destroy(small);
  unlink(path);
}
