/* test_dispatch_util.h - shared setup of the hsa-dispatch Criterion tests. */
#ifndef TEST_DISPATCH_UTIL_H
#define TEST_DISPATCH_UTIL_H

#include <criterion/criterion.h>
#include <hsa/amd_hsa_queue.h>
#include <sched.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "hsa-dispatch/hsad.h"

#ifndef TEST_KERNDIR
#define TEST_KERNDIR "build/kernels"
#endif
#ifndef TH_FIXDIR
#define TH_FIXDIR "build/tests/dispatch"
#endif

#define TH_SEC 1000000000ull

/* Asserts HSAD_OK and prints the status name and message otherwise. */
#define TH_OK(expr)                                                                        \
  do {                                                                                     \
    hsad_status_t s_ = (expr);                                                             \
    cr_assert_eq(s_, HSAD_OK, "%s -> %s: %s", #expr, hsad_status_name(s_), hsad_last_error()); \
  } while (0)

/* Asserts the exact status and that hsad_last_error() is exactly the printf-formatted text
 * (issue 12: whole messages, never a substring). */
#define TH_ERR_IS(expr, status, ...)                                                        \
  do {                                                                                      \
    hsad_status_t s_ = (expr);                                                              \
    char want_[1024];                                                                       \
    snprintf(want_, sizeof want_, __VA_ARGS__);                                             \
    cr_assert_eq(s_, status, "%s -> %s (want %s): %s", #expr, hsad_status_name(s_),         \
                 hsad_status_name(status), hsad_last_error());                              \
    cr_assert_str_eq(hsad_last_error(), want_, "%s: message\n  got  '%s'\n  want '%s'", #expr, \
                     hsad_last_error(), want_);                                             \
  } while (0)

/* The message of queue q's sticky error after kfd-emu's injected memory aperture violation
 * (KFD_EMU_FAULT_KERNEL) on device 0: hsad_queue.h's wording, ROCr's queue id, and ROCr
 * 5.2.3's status string for HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION (0x29). */
static inline const char *th_fault_msg(hsad_queue_t *q, char *out, size_t n) {
  snprintf(out, n, "queue %llu on device 0 (gfx90a:sramecc+:xnack-) faulted: HSA status 0x29 "
           "(HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory "
           "beyond the largest legal address.); destroy it and create a new queue",
           (unsigned long long)hsad_queue_hsa(q)->id);
  return out;
}

/* The same for one of the device's shared queues (hsad_device_queue): the advice differs. */
static inline const char *th_shared_fault_msg(hsad_queue_t *q, char *out, size_t n) {
  snprintf(out, n, "queue %llu on device 0 (gfx90a:sramecc+:xnack-) faulted: HSA status 0x29 "
           "(HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory "
           "beyond the largest legal address.); a shared queue: hsad_device_queue hands out its "
           "replacement", (unsigned long long)hsad_queue_hsa(q)->id);
  return out;
}

/* True when kfd-emu runs with KFD_EMU_READ_INDEX=launch (make test): then waits (1 s) until
 * queue q's read index passed packet 0, i.e. the CP launched it, and asserts it did. */
static inline bool th_first_launched(hsad_queue_t *q) {
  const char *ri = getenv("KFD_EMU_READ_INDEX");
  if (!ri || strcmp(ri, "launch")) return false;
  const amd_queue_t *aq = (const amd_queue_t *)hsad_queue_hsa(q);
  uint64_t until = hsad_now_ns() + TH_SEC;
  while (__atomic_load_n(&aq->read_dispatch_id, __ATOMIC_ACQUIRE) < 1 && hsad_now_ns() < until)
    sched_yield();
  cr_assert_eq(aq->read_dispatch_id, 1, "packet 0 was launched");
  return true;
}

typedef struct th_env {
  hsad_runtime_t *rt;
  hsad_device_t *dev;
} th_env_t;

static inline void th_open(th_env_t *e) {
  TH_OK(hsad_runtime_open(&e->rt));
  TH_OK(hsad_device_get(e->rt, 0, &e->dev));
}

/* Loads TEST_KERNDIR/<name>-<isa processor>-v<ver>.hsaco and resolves kernel `kname`. */
static inline hsad_program_t *th_load(th_env_t *e, const char *file, int ver, const char *kname,
                                      const hsad_device_kernel_t **out_k) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s-%s-v%d.hsaco", TEST_KERNDIR, file,
           hsad_device_info(e->dev)->name, ver);
  hsad_program_t *p = NULL;
  TH_OK(hsad_program_load_file(e->dev, path, &p));
  if (out_k) TH_OK(hsad_program_kernel(p, kname, out_k));
  return p;
}

static inline uint64_t th_in(uint64_t ns) { return hsad_now_ns() + ns; }

/* A queue of `size` packets, other options default. */
static inline hsad_queue_t *th_queue(th_env_t *e, uint32_t size) {
  hsad_queue_t *q = NULL;
  TH_OK(hsad_queue_create(e->dev, &(hsad_queue_options_t){.size = size}, &q));
  return q;
}

/* A buffer of `size` bytes on the device. */
static inline void *th_alloc(th_env_t *e, size_t size) {
  void *p = NULL;
  TH_OK(hsad_buffer_alloc(e->dev, size, &p));
  return p;
}

/* The usual start of a test: opens the runtime, loads kernel `kname` of `file` (code object
 * version `ver`) and creates a 64-packet queue. Returns the program. */
static inline hsad_program_t *th_start(th_env_t *e, const char *file, int ver, const char *kname,
                                       const hsad_device_kernel_t **out_k, hsad_queue_t **out_q) {
  th_open(e);
  hsad_program_t *p = th_load(e, file, ver, kname, out_k);
  *out_q = th_queue(e, 64);
  return p;
}

/* The usual end of a test: destroys the queue and the program, closes the runtime. */
static inline void th_finish(th_env_t *e, hsad_queue_t *q, hsad_program_t *p) {
  hsad_queue_destroy(q);
  hsad_program_destroy(p);
  TH_OK(hsad_runtime_close(e->rt));
}

/* Dispatches with a completion (submit deadline now + submit_ns), waits for it (deadline now +
 * wait_ns) and releases it. Returns the packet id. */
static inline uint64_t th_run(hsad_queue_t *q, const hsad_device_kernel_t *k,
                              const hsad_launch_t *l, uint64_t submit_ns, uint64_t wait_ns) {
  hsad_completion_t c;
  uint64_t id;
  TH_OK(hsad_kernel_dispatch(q, k, l, th_in(submit_ns), &c, &id));
  TH_OK(hsad_completion_wait(&c, th_in(wait_ns)));
  return id;
}

/* The ring slot of packet `id` in a 64-packet queue. */
static inline const hsa_kernel_dispatch_packet_t *th_packet(hsad_queue_t *q, uint64_t id) {
  return (const hsa_kernel_dispatch_packet_t *)hsad_queue_hsa(q)->base_address + (id % 64);
}

#endif
