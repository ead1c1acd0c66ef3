/* test_dispatch_util.h - shared setup of the hsa-dispatch Criterion tests. */
#ifndef TEST_DISPATCH_UTIL_H
#define TEST_DISPATCH_UTIL_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "hsa-dispatch/hsad.h"

#ifndef TEST_KERNDIR
#define TEST_KERNDIR "build/kernels"
#endif
#ifndef DQ_FIXDIR
#define DQ_FIXDIR "build/tests/dispatch"
#endif

#define DQ_SEC 1000000000ull

/* Asserts HSAD_OK and prints the status name and message otherwise. */
#define DQ_OK(expr)                                                                        \
  do {                                                                                     \
    hsad_status_t s_ = (expr);                                                             \
    cr_assert_eq(s_, HSAD_OK, "%s -> %s: %s", #expr, hsad_status_name(s_), hsad_last_error()); \
  } while (0)

/* Asserts the exact status and that the message contains `needle`. */
#define DQ_ERR(expr, status, needle)                                                       \
  do {                                                                                     \
    hsad_status_t s_ = (expr);                                                             \
    cr_assert_eq(s_, status, "%s -> %s (want %s): %s", #expr, hsad_status_name(s_),        \
                 hsad_status_name(status), hsad_last_error());                             \
    cr_assert(strstr(hsad_last_error(), needle) != NULL, "message '%s' lacks '%s'",        \
              hsad_last_error(), needle);                                                  \
  } while (0)

typedef struct dq_env {
  hsad_runtime_t *rt;
  hsad_device_t *dev;
} dq_env_t;

static inline void dq_open(dq_env_t *e) {
  DQ_OK(hsad_runtime_open(&e->rt));
  DQ_OK(hsad_device_get(e->rt, 0, &e->dev));
}

/* Loads TEST_KERNDIR/<name>-<isa processor>-v<ver>.hsaco and resolves kernel `kname`. */
static inline hsad_program_t *dq_load(dq_env_t *e, const char *file, int ver, const char *kname,
                                      const hsad_device_kernel_t **out_k) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s-%s-v%d.hsaco", TEST_KERNDIR, file,
           hsad_device_info(e->dev)->name, ver);
  hsad_program_t *p = NULL;
  DQ_OK(hsad_program_load_file(e->dev, path, &p));
  if (out_k) DQ_OK(hsad_program_kernel(p, kname, out_k));
  return p;
}

static inline uint64_t dq_in(uint64_t ns) { return hsad_now_ns() + ns; }

#endif
