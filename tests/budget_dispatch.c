/* budget_dispatch.c - the dispatch path's instruction budget, measured as users link the library.
 *
 * A plain program linked to the shared libhsad.so (not libhsad.a: PLT calls, TLS through the
 * dynamic linker and symbol interposition all count as they do for a user). It submits COUNT
 * dispatches of vector_add (4 explicit arguments: three buffers and n) into a queue that holds
 * them all, by one path, with valgrind's callgrind instrumentation around that loop only:
 *
 *   budget_dispatch dispatch COUNT KERNEL   hsad_kernel_dispatch (the launch cache hits after
 *                                           the first)
 *   budget_dispatch prepared COUNT KERNEL   hsad_prepared_dispatch of one hsad_launch_prepare
 *   budget_dispatch steady COUNT KERNEL     hsad_kernel_dispatch in a loop longer than the
 *                                           ring: the ring's first lap is submitted and waited
 *                                           for (one more dispatch, not counted, retires it),
 *                                           then COUNT dispatches are counted whose slots the
 *                                           first lap used (their kernarg blocks hold the
 *                                           launch's image: only the arguments are copied)
 *
 * KERNEL: vector_add-v5 (4 arguments, a 288-byte kernarg segment with code object v5's hidden
 * arguments), vector_add-v4 (the same kernel as code object v4: 88 bytes) or empty-v5 (no
 * argument, no kernarg segment: what `hsad bench dispatch` submits).
 *
 * Run it as valgrind --tool=callgrind --instr-atstart=no --toggle-collect=FUNCTION: Ir / COUNT
 * is the path's cost per submit (tests/test_budget.c; callgrind is deterministic). The kernels
 * run as kfd-emu's host twins afterwards (the queue is drained, the result checked). Prints
 * "ok" and exits 0, or one line saying what failed and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <valgrind/callgrind.h>

#include "hsa-dispatch/hsad.h"

#ifndef TEST_KERNDIR
#define TEST_KERNDIR "build/kernels"
#endif

#define CHECK(expr)                                                                           \
  do {                                                                                        \
    hsad_status_t s_ = (expr);                                                                \
    if (s_) {                                                                                 \
      printf("%s: %s: %s\n", #expr, hsad_status_name(s_), hsad_last_error());                 \
      return 1;                                                                               \
    }                                                                                         \
  } while (0)

int main(int argc, char **argv) {
  if (argc != 4 ||
      (strcmp(argv[1], "dispatch") && strcmp(argv[1], "prepared") && strcmp(argv[1], "steady")) ||
      (strcmp(argv[3], "vector_add-v5") && strcmp(argv[3], "vector_add-v4") &&
       strcmp(argv[3], "empty-v5"))) {
    printf("usage: budget_dispatch dispatch|prepared|steady COUNT "
           "vector_add-v5|vector_add-v4|empty-v5\n");
    return 2;
  }
  bool empty = !strcmp(argv[3], "empty-v5");
  int version = argv[3][strlen(argv[3]) - 1] - '0';
  bool prepared = !strcmp(argv[1], "prepared"), steady = !strcmp(argv[1], "steady");
  uint32_t count = (uint32_t)strtoul(argv[2], NULL, 10);
  if (count < 1 || count > 16384) {
    printf("COUNT %s: 1..16384\n", argv[2]);
    return 2;
  }
  uint32_t slots = 64; /* steady: count + 2 (the first lap's barrier, the uncounted dispatch) */
  while (slots < count + 1 + steady) slots *= 2;
  hsad_runtime_t *rt;
  hsad_device_t *dev;
  CHECK(hsad_runtime_open(&rt));
  CHECK(hsad_device_get(rt, 0, &dev));
  char path[512];
  snprintf(path, sizeof path, "%s/%s-%s-v%d.hsaco", TEST_KERNDIR, empty ? "empty" : "vector_add",
           hsad_device_info(dev)->name, version);
  hsad_program_t *prog;
  const hsad_device_kernel_t *k;
  CHECK(hsad_program_load_file(dev, path, &prog));
  CHECK(hsad_program_kernel(prog, empty ? "empty" : "vector_add", &k));
  hsad_queue_t *q;
  CHECK(hsad_queue_create(dev, &(hsad_queue_options_t){.size = slots}, &q));
  enum { N = 64 };
  float *a, *b, *c;
  CHECK(hsad_buffer_alloc(dev, N * sizeof(float), (void **)&a));
  CHECK(hsad_buffer_alloc(dev, N * sizeof(float), (void **)&b));
  CHECK(hsad_buffer_alloc(dev, N * sizeof(float), (void **)&c));
  for (int i = 0; i < N; i++) {
    a[i] = (float)i;
    b[i] = (float)(2 * i);
    c[i] = 0;
  }
  uint32_t n = N;
  hsad_karg_t args[4] = {HSAD_KARG_PTR(a), HSAD_KARG_PTR(b), HSAD_KARG_PTR(c), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {N}, .block = {N}, .args = empty ? NULL : args,
                     .arg_count = empty ? 0 : 4};
  hsad_prepared_launch_t *pl = NULL;
  if (prepared) CHECK(hsad_launch_prepare(q, k, &l, &pl));
  else CHECK(hsad_kernel_dispatch(q, k, &l, HSAD_DEADLINE_NEVER, NULL, NULL)); /* fills the cache */
  if (steady) { /* packets 1 .. slots - 2, a barrier at slots - 1, waited; packet `slots` (slot
                   0) finds the ring full until it retires them */
    for (uint32_t i = 1; i < slots - 1; i++)
      CHECK(hsad_kernel_dispatch(q, k, &l, HSAD_DEADLINE_NEVER, NULL, NULL));
    hsad_completion_t lap;
    CHECK(hsad_queue_barrier(q, NULL, 0, HSAD_DEADLINE_NEVER, &lap));
    CHECK(hsad_completion_wait(&lap, hsad_now_ns() + 60ull * 1000000000ull));
    CHECK(hsad_kernel_dispatch(q, k, &l, HSAD_DEADLINE_NEVER, NULL, NULL));
  }
  hsad_status_t s = HSAD_OK;
  CALLGRIND_START_INSTRUMENTATION;
  if (prepared)
    for (uint32_t i = 0; i < count && !s; i++) s = hsad_prepared_dispatch(pl, HSAD_DEADLINE_NEVER, NULL, NULL);
  else
    for (uint32_t i = 0; i < count && !s; i++)
      s = hsad_kernel_dispatch(q, k, &l, HSAD_DEADLINE_NEVER, NULL, NULL);
  CALLGRIND_STOP_INSTRUMENTATION;
  CHECK(s);
  hsad_completion_t done;
  CHECK(hsad_queue_barrier(q, NULL, 0, HSAD_DEADLINE_NEVER, &done));
  CHECK(hsad_completion_wait(&done, hsad_now_ns() + 60ull * 1000000000ull));
  for (int i = 0; i < N && !empty; i++)
    if (c[i] != (float)(3 * i)) {
      printf("c[%d] = %g, want %g\n", i, (double)c[i], (double)(3 * i));
      return 1;
    }
  hsad_launch_destroy(pl);
  hsad_queue_destroy(q);
  printf("ok\n");
  fflush(stdout);
  _Exit(0); /* without hsa_shut_down: under valgrind it alone costs seconds */
}
