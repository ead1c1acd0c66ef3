/* test_dispatch_public.c - public behaviour of hsad.h with no other test (issue 12): programs
 * loaded from memory and their accessors, the device's ROCr agent, hsad_runtime_open's
 * NO_DEVICE cases, hsad_buffer_alloc's promises (zeroed, 4096-aligned, the nearest NUMA node's
 * pool, access granted to the device), and ISA mismatches on xnack or sramecc alone. Expected
 * values come from the kernels' sources, the build commands and ROCr's own queries, never from
 * the library under test. */
#include "fusion/hsad_fusion.h"
#include "tests/test_dispatch_util.h"
#include "tests/test_dispatch_exact.h"

#include <hsa/hsa_ext_amd.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The whole file as bytes (malloc'd). */
static uint8_t *pub_read(const char *path, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  cr_assert(f, "open %s", path);
  cr_assert_eq(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  cr_assert_gt(n, 0);
  rewind(f);
  uint8_t *b = malloc((size_t)n);
  cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *out_size = (size_t)n;
  return b;
}

/* lds_reduce-gfx90a-v5.hsaco (kernels/lds_reduce.cl: two kernels, lds_reduce and
 * lds_reduce_dyn; built with -mcpu=gfx90a -mcode-object-version=5) loaded from memory: the
 * label names it, the codeobj view holds a private copy of the bytes (the caller's buffer is
 * overwritten before the dispatch), kernel_at / kernel_count / kernel agree with the names,
 * the program's device is the device, and the kernel runs (partial sums of 0..999 by 256). */
Test(public, program_load_memory_and_accessors, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  size_t size;
  uint8_t *bytes = pub_read(TEST_KERNDIR "/lds_reduce-gfx90a-v5.hsaco", &size);
  uint8_t *copy = malloc(size);
  memcpy(copy, bytes, size);
  hsad_program_t *p = NULL;
  TH_OK(hsad_program_load_memory(e.dev, bytes, size, "lds-in-memory", &p));
  cr_assert_eq(hsad_program_device(p), e.dev);
  cr_assert_eq(hsad_program_kernel_count(p), 2);
  const hsad_codeobj_t *co = hsad_program_codeobj(p);
  cr_assert_not_null(co);
  const hsad_codeobj_info_t *ci = hsad_codeobj_info(co);
  cr_assert_str_eq(ci->name, "lds-in-memory");
  cr_assert_eq(ci->code_object_version, 5);
  cr_assert_str_eq(ci->target, "amdgcn-amd-amdhsa--gfx90a");
  cr_assert_eq(ci->kernel_count, 2);
  cr_assert_eq(ci->image_size, size);
  cr_assert_neq(ci->image, (const void *)bytes);
  memset(bytes, 0xff, size); /* the program must not read the caller's bytes any more */
  cr_assert_eq(memcmp(ci->image, copy, size), 0);
  const hsad_device_kernel_t *k0 = hsad_program_kernel_at(p, 0), *k1 = hsad_program_kernel_at(p, 1);
  cr_assert_not_null(k0);
  cr_assert_not_null(k1);
  cr_assert_null(hsad_program_kernel_at(p, 2));
  cr_assert_null(hsad_program_kernel_at(NULL, 0));
  cr_assert_eq(hsad_program_kernel_count(NULL), 0);
  cr_assert_null(hsad_program_codeobj(NULL));
  cr_assert_null(hsad_program_device(NULL));
  const char *n0 = hsad_device_kernel_desc(k0)->name, *n1 = hsad_device_kernel_desc(k1)->name;
  bool order_a = !strcmp(n0, "lds_reduce") && !strcmp(n1, "lds_reduce_dyn");
  bool order_b = !strcmp(n1, "lds_reduce") && !strcmp(n0, "lds_reduce_dyn");
  cr_assert(order_a || order_b, "kernels %s, %s", n0, n1);
  const hsad_device_kernel_t *k, *kd;
  TH_OK(hsad_program_kernel(p, "lds_reduce", &k));
  TH_OK(hsad_program_kernel(p, "lds_reduce_dyn.kd", &kd));
  cr_assert_eq(k, order_a ? k0 : k1);
  cr_assert_eq(kd, order_a ? k1 : k0);
  cr_assert_eq(hsad_device_kernel_desc(k)->group_segment_fixed_size, 1024); /* float[256] */
  TH_ERR_IS(hsad_program_kernel(p, "nope", &k0), HSAD_ERR_KERNEL_NOT_FOUND,
            "lds-in-memory: no kernel named 'nope' (2 kernels)");
  free(bytes);
  free(copy);
  enum { N = 1000, B = 256, G = 4 };
  float *in = th_alloc(&e, N * 4), *part = th_alloc(&e, G * 4);
  for (uint32_t i = 0; i < N; i++) in[i] = (float)i;
  uint32_t n = N;
  hsad_karg_t a[3] = {HSAD_KARG_PTR(in), HSAD_KARG_PTR(part), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {G * B}, .block = {B}, .args = a, .arg_count = 3};
  hsad_queue_t *q = th_queue(&e, 64);
  th_run(q, k, &l, TH_SEC, 10 * TH_SEC);
  for (uint32_t g = 0; g < G; g++) {
    uint32_t lo = g * B, hi = lo + B < N ? lo + B : N, want = 0;
    for (uint32_t i = lo; i < hi; i++) want += i;
    cr_assert_eq(part[g], (float)want, "partial[%u] = %g, want %u", g, (double)part[g], want);
  }
  hsad_buffer_free(in);
  hsad_buffer_free(part);
  th_finish(&e, q, p);
}

/* Issue 21: hsad_program_destroy with one of its kernels in flight is refused (HSAD_ERR_IN_USE,
 * naming the kernel, the queue and the packet) and the program stays usable; a kernel of
 * another program in flight does not block it; after the completion, the destroy succeeds.
 * KFD_EMU_CP_STALL_MS holds the CP 300 ms before every packet, so the packets are still queued
 * when the destroy runs. */
Test(public, program_destroy_in_flight_refused, .timeout = 60) {
  setenv("KFD_EMU_CP_STALL_MS", "300", 1);
  th_env_t e;
  th_open(&e);
  size_t size;
  uint8_t *bytes = pub_read(TEST_KERNDIR "/empty-gfx90a-v5.hsaco", &size);
  hsad_program_t *p = NULL, *other = NULL;
  TH_OK(hsad_program_load_memory(e.dev, bytes, size, "empty-a", &p));
  TH_OK(hsad_program_load_memory(e.dev, bytes, size, "empty-b", &other));
  free(bytes);
  const hsad_device_kernel_t *k, *ko;
  TH_OK(hsad_program_kernel(p, "empty", &k));
  TH_OK(hsad_program_kernel(other, "empty", &ko));
  cr_assert_neq(hsad_device_kernel_desc(k)->kernel_object, hsad_device_kernel_desc(ko)->kernel_object);
  hsad_queue_t *q = th_queue(&e, 64), *shared = NULL;
  TH_OK(hsad_device_queue(e.dev, &shared));
  hsad_launch_t l = {.dims = 1, .grid = {64}, .block = {64}};
  hsad_completion_t c, c2;
  uint64_t id, sid;
  TH_OK(hsad_kernel_dispatch(q, ko, &l, th_in(TH_SEC), NULL, NULL)); /* the other program's */
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), &c, &id));
  TH_ERR_IS(hsad_program_destroy(p), HSAD_ERR_IN_USE,
            "hsad_program_destroy(empty-a): kernel 'empty' is in flight on queue %llu of device "
            "0 (packet %llu, not known to have completed): wait for a completion after it "
            "(hsad_completion_wait, hsad_queue_wait_idle), then destroy the program",
            (unsigned long long)hsad_queue_hsa(q)->id, (unsigned long long)id);
  cr_assert_eq(id, 1);
  TH_OK(hsad_completion_wait(&c, th_in(20 * TH_SEC)));
  /* the program is still loaded: a dispatch without a completion on a shared queue is in
   * flight until a later completion of that queue is reached */
  TH_OK(hsad_kernel_dispatch(shared, k, &l, th_in(TH_SEC), NULL, &sid));
  TH_ERR_IS(hsad_program_destroy(p), HSAD_ERR_IN_USE,
            "hsad_program_destroy(empty-a): kernel 'empty' is in flight on queue %llu of device "
            "0 (packet %llu, not known to have completed): wait for a completion after it "
            "(hsad_completion_wait, hsad_queue_wait_idle), then destroy the program",
            (unsigned long long)hsad_queue_hsa(shared)->id, (unsigned long long)sid);
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), &c2, NULL));
  TH_OK(hsad_queue_wait_idle(shared, th_in(20 * TH_SEC)));
  TH_OK(hsad_completion_wait(&c2, th_in(20 * TH_SEC)));
  TH_OK(hsad_program_destroy(p));
  TH_OK(hsad_program_destroy(NULL));
  /* `other`'s packet 0 completed before the completion of packet 1 was reached */
  TH_OK(hsad_program_destroy(other));
  hsad_queue_destroy(q);
  TH_OK(hsad_runtime_close(e.rt));
}

/* hsad_program_destroy while a prepared launch, a graph exec's kernel node or a variant set
 * still holds one of its kernels (nothing in flight) is refused, naming the kernel and the
 * count, and the program stays loaded and usable: it returned HSAD_OK, and the prepared
 * launch's next submission faulted its queue (kfd-emu: "kernel_object is no kernel descriptor",
 * HSA_STATUS_ERROR_INVALID_CODE_OBJECT; a GPU fetches freed code), a variant set read freed
 * metadata (found by a fresh-eyes run). Once they are destroyed, the destroy succeeds. */
Test(public, program_destroy_refused_while_held, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  size_t size;
  uint8_t *bytes = pub_read(TEST_KERNDIR "/empty-gfx90a-v5.hsaco", &size);
  hsad_program_t *p = NULL, *other = NULL;
  TH_OK(hsad_program_load_memory(e.dev, bytes, size, "empty-a", &p));
  TH_OK(hsad_program_load_memory(e.dev, bytes, size, "empty-b", &other));
  free(bytes);
  const hsad_device_kernel_t *k, *ko;
  TH_OK(hsad_program_kernel(p, "empty", &k));
  TH_OK(hsad_program_kernel(other, "empty", &ko));
  hsad_queue_t *q = th_queue(&e, 64);
  hsad_launch_t l = {.dims = 1, .grid = {64}, .block = {64}};
  const char *held = "hsad_program_destroy(%s): kernel 'empty' is still held by %u prepared "
                     "launch(es), graph exec kernel node(s) or variant set(s), which would submit "
                     "its freed code: destroy them first (hsad_launch_destroy, "
                     "hsad_graph_exec_destroy, hsad_variant_set_destroy); the program stays loaded";
  /* a prepared launch */
  hsad_prepared_launch_t *pl;
  TH_OK(hsad_launch_prepare(q, k, &l, &pl));
  TH_ERR_IS(hsad_program_destroy(p), HSAD_ERR_IN_USE, held, "empty-a", 1u);
  hsad_completion_t c;
  TH_OK(hsad_prepared_dispatch(pl, th_in(TH_SEC), &c, NULL));
  TH_OK(hsad_completion_wait(&c, th_in(20 * TH_SEC)));
  TH_OK(hsad_queue_error(q));
  hsad_launch_destroy(pl);
  /* a graph exec: one count per kernel node; a copy node holds no program of the caller's */
  hsad_graph_t *g;
  TH_OK(hsad_graph_create(0, &g));
  uint32_t a;
  TH_OK(hsad_graph_add_kernel(g, "A", 0, k, &l, NULL, 0, &a));
  TH_OK(hsad_graph_add_kernel(g, "B", 0, k, &l, &a, 1, NULL));
  TH_OK(hsad_graph_add_kernel(g, "C", 0, ko, &l, &a, 1, NULL));
  hsad_graph_exec_t *x;
  TH_OK(hsad_graph_instantiate(g, &q, 1, &x));
  hsad_graph_destroy(g);
  TH_ERR_IS(hsad_program_destroy(p), HSAD_ERR_IN_USE, held, "empty-a", 2u);
  TH_ERR_IS(hsad_program_destroy(other), HSAD_ERR_IN_USE, held, "empty-b", 1u);
  TH_OK(hsad_graph_launch(x, 0, th_in(TH_SEC), &c, NULL));
  TH_OK(hsad_completion_wait(&c, th_in(20 * TH_SEC)));
  hsad_graph_exec_destroy(x);
  /* a variant set of both programs' kernels */
  hsad_program_t *both[2] = {p, other};
  hsad_variant_set_t *vs;
  TH_OK(hsad_variant_set_from_programs(both, 2, "empty", &vs));
  TH_ERR_IS(hsad_program_destroy(other), HSAD_ERR_IN_USE, held, "empty-b", 1u);
  hsad_variant_set_destroy(vs);
  /* a failed prepare holds nothing */
  hsad_launch_t bad = {.dims = 1, .grid = {64}, .block = {2048}};
  cr_assert_eq(hsad_launch_prepare(q, k, &bad, &pl), HSAD_ERR_WORKGROUP);
  TH_OK(hsad_program_destroy(p));
  TH_OK(hsad_program_destroy(other));
  hsad_queue_destroy(q);
  TH_OK(hsad_runtime_close(e.rt));
}

/* The child of public::runtime_close_preempts_runaway_kernel, run by re-executing this binary
 * (a fresh process, so exit() runs every exit handler as a program's would): writes one report
 * line to fd HSAD_TEST_RUNAWAY_FD and exits 0, or 3 when the set-up failed. No Criterion here. */
static void runaway_close_child(int fd) {
  hsad_runtime_t *rt = NULL;
  hsad_device_t *dev = NULL;
  hsad_program_t *p = NULL;
  const hsad_device_kernel_t *k = NULL;
  hsad_queue_t *q = NULL;
  hsad_completion_t c;
  char path[512];
  hsad_launch_t l = {.dims = 1, .grid = {64}, .block = {64}};
  hsad_status_t s = hsad_runtime_open(&rt);
  if (!s) s = hsad_device_get(rt, 0, &dev);
  if (!s) snprintf(path, sizeof path, "%s/empty-%s-v5.hsaco", TEST_KERNDIR,
                   hsad_device_info(dev)->name);
  if (!s) s = hsad_program_load_file(dev, path, &p);
  if (!s) s = hsad_program_kernel(p, "empty", &k);
  if (!s) s = hsad_queue_create(dev, &(hsad_queue_options_t){.size = 64}, &q);
  if (!s) s = hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), &c, NULL);
  if (s) {
    dprintf(fd, "set-up: %s\n", hsad_last_error());
    exit(3);
  }
  hsad_status_t running = hsad_completion_wait(&c, th_in(300000000));
  uint64_t t0 = hsad_now_ns();
  s = hsad_runtime_close(rt);
  uint64_t took = hsad_now_ns() - t0;
  hsad_status_t w = hsad_completion_wait(&c, th_in(TH_SEC));
  dprintf(fd, "running=%s close=%s within_2s=%d wait=%s: %s\n", hsad_status_name(running),
          hsad_status_name(s), took < 2 * TH_SEC, hsad_status_name(w), hsad_last_error());
  /* an abandoned queue's CP thread finishes its workgroup meanwhile, then exits */
  if (getenv("HSAD_TEST_RUNAWAY_LINGER")) nanosleep(&(struct timespec){2, 500000000}, NULL);
  hsad_queue_destroy(q); /* host memory only, after the close */
  hsad_program_destroy(p);
  exit(0);
}

__attribute__((constructor)) static void runaway_close_child_main(void) {
  const char *fd = getenv("HSAD_TEST_RUNAWAY_FD");
  if (fd) runaway_close_child(atoi(fd));
}

/* hsad_runtime_close with a kernel that never ends in flight (issue 21). kfd-emu holds the
 * dispatch of 'empty' 60 s (KFD_EMU_DELAY_US's maximum: a runaway kernel for this test; it is
 * running: its completion times out at 300 ms). On hardware ROCr's hsa_queue_destroy makes the
 * KFD preempt (unmap) a queue with an active dispatch; kfd-emu's hsaKmtDestroyQueue does the
 * same: its CP abandons the dispatch (no completion signal). So the close returns HSAD_OK
 * within 2 s (before: 60 s in DestroyQueue), the completion answers HSAD_ERR_CLOSED with the
 * runtime's message, and the process exits 0 within 5 s of the close. The child is this binary
 * re-executed (its constructor runs the scenario and exits), so the parent times its exit and
 * kills it past the deadlines. */
/* Runs the child with `env` (NAME=VALUE pairs, NULL-terminated) and stderr into err_path;
 * asserts its report and that it exited 0 within exit_s seconds of the report. */
static void runaway_close_run(const char *const *env, const char *err_path, int exit_s) {
  int fds[2];
  cr_assert_eq(pipe(fds), 0);
  fflush(NULL);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    char v[16];
    snprintf(v, sizeof v, "%d", fds[1]);
    setenv("HSAD_TEST_RUNAWAY_FD", v, 1);
    for (int i = 0; env[i]; i += 2) setenv(env[i], env[i + 1], 1);
    int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (e < 0 || dup2(e, 2) < 0) _exit(126);
    execl("/proc/self/exe", "test_dispatch_public", (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  char rep[1024];
  size_t n = 0;
  uint64_t dl = th_in(30 * TH_SEC);
  while (n < sizeof rep - 1 && !memchr(rep, '\n', n) && hsad_now_ns() < dl) {
    struct pollfd pf = {.fd = fds[0], .events = POLLIN};
    if (poll(&pf, 1, 100) <= 0) continue;
    ssize_t r = read(fds[0], rep + n, sizeof rep - 1 - n);
    if (r <= 0) break;
    n += (size_t)r;
  }
  rep[n] = 0;
  close(fds[0]);
  uint64_t exit_dl = th_in((uint64_t)exit_s * TH_SEC);
  int status = 0;
  pid_t got = 0;
  while ((got = waitpid(pid, &status, WNOHANG)) == 0 && hsad_now_ns() < exit_dl)
    nanosleep(&(struct timespec){0, 10000000}, NULL);
  if (got == 0) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  cr_assert_str_eq(rep, "running=HSAD_ERR_TIMEOUT close=HSAD_OK within_2s=1 wait=HSAD_ERR_CLOSED: "
                        "queue on device 0: the hsa-dispatch runtime was closed\n");
  cr_assert_eq(got, pid, "the child had not exited %d s after its report", exit_s);
  cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status 0x%x", status);
}

Test(public, runtime_close_preempts_runaway_kernel, .timeout = 90) {
  static const char *const env[] = {"KFD_EMU_DELAY_US", "60000000", "KFD_EMU_DELAY_KERNEL",
                                    "empty", NULL};
  char err[] = "/tmp/hsad_runaway_err_XXXXXX";
  int fd = mkstemp(err);
  cr_assert_geq(fd, 0);
  close(fd);
  runaway_close_run(env, err, 5);
  unlink(err);
}

/* kfd-emu's limit (hsad.h, hsad_runtime_close): a workgroup already running on the CP thread
 * (tests/data/dispatch/slow_twin.c: 'empty' as a twin whose workgroup sleeps 2 s) cannot be
 * preempted; with KFD_EMU_PREEMPT_TIMEOUT_MS=200 hsaKmtDestroyQueue gives up after 200 ms and
 * abandons the queue, saying so on stderr (exact line, once), and the close still returns
 * HSAD_OK within 2 s with the same report; the thread finishes its workgroup and exits without
 * touching the freed ring, and the process exits 0 (it lingers 2.5 s for that). */
Test(public, runtime_close_abandons_unpreemptible_workgroup, .timeout = 90) {
  static const char *const env[] = {"KFD_EMU_TWINS", TH_FIXDIR "/libslow_twin.so",
                                    "KFD_EMU_KERNEL_MODE", "twin", "KFD_EMU_PREEMPT_TIMEOUT_MS",
                                    "200", "HSAD_TEST_RUNAWAY_LINGER", "1", NULL};
  char err[] = "/tmp/hsad_runaway_err_XXXXXX";
  int fd = mkstemp(err);
  cr_assert_geq(fd, 0);
  close(fd);
  runaway_close_run(env, err, 8);
  FILE *f = fopen(err, "r");
  cr_assert_not_null(f);
  static char text[8192];
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = 0;
  fclose(f);
  unlink(err);
  const char *head = "kfd-emu: GPU 0 queue ";
  const char *tail = ": preemption timed out after 200 ms (KFD_EMU_PREEMPT_TIMEOUT_MS): its CP "
                     "thread is still inside a workgroup of kernel empty, which a host thread "
                     "cannot leave; the queue is abandoned (the thread exits once that workgroup "
                     "returns)\n";
  const char *at = strstr(text, head);
  cr_assert_not_null(at, "stderr: %s", text);
  const char *id_end = at + strlen(head);
  while (*id_end >= '0' && *id_end <= '9') id_end++;
  cr_assert(id_end > at + strlen(head) && !strncmp(id_end, tail, strlen(tail)), "stderr: %s",
            text);
  cr_assert_null(strstr(id_end, head), "said once: %s", text);
}

/* Issue 21: teardown with a deadline. A kernel that runs for 2.5 s (KFD_EMU_DELAY_US on
 * 'empty': the CP is stuck in it, as with a runaway grid) and a 300 ms deadline:
 * hsad_queue_destroy_deadline returns HSAD_ERR_TIMEOUT at the deadline (not after the
 * kernel), naming the queue, the packets (the dispatch 0 and the flush's barrier 1) and the
 * kernel; the queue is live (no sticky error) and still runs what is submitted; with a later
 * deadline the same call destroys it once the kernel ended. A shared queue is refused. */
Test(public, queue_destroy_deadline_runaway_kernel, .timeout = 60) {
  setenv("KFD_EMU_DELAY_US", "2500000", 1);
  setenv("KFD_EMU_DELAY_KERNEL", "empty", 1);
  th_env_t e;
  const hsad_device_kernel_t *k, *kf;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "empty", 5, "empty", &k, &q);
  hsad_program_t *pf = th_load(&e, "fill", 5, "fill", &kf);
  hsad_launch_t l = {.dims = 1, .grid = {64}, .block = {64}};
  uint64_t id;
  TH_OK(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), NULL, &id));
  cr_assert_eq(id, 0);
  uint64_t t0 = hsad_now_ns();
  TH_ERR_IS(hsad_queue_destroy_deadline(q, t0 + 300000000), HSAD_ERR_TIMEOUT,
            "hsad_queue_destroy_deadline: queue %llu on device 0: packets 0 to 1 had not "
            "completed by the deadline; the oldest, packet 0, a dispatch of kernel 'empty'. Not "
            "destroyed: the queue is live and usable (its timeline closed by a barrier-AND); "
            "call again with a later deadline, or let the process exit",
            (unsigned long long)hsad_queue_hsa(q)->id);
  uint64_t waited = hsad_now_ns() - t0;
  cr_assert(waited >= 300000000 && waited < 1500000000, "returned after %llu ns",
            (unsigned long long)waited);
  TH_OK(hsad_queue_error(q));
  /* still usable: a fill after the runaway one runs once it ended */
  uint32_t *buf = th_alloc(&e, 64 * sizeof(uint32_t));
  uint32_t v = 0x5a5a5a5au, n = 64;
  hsad_karg_t a[3] = {HSAD_KARG_PTR(buf), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
  hsad_launch_t lf = {.dims = 1, .grid = {64}, .block = {64}, .args = a, .arg_count = 3};
  hsad_completion_t c;
  TH_OK(hsad_kernel_dispatch(q, kf, &lf, th_in(TH_SEC), &c, &id));
  cr_assert_eq(id, 2);
  TH_OK(hsad_queue_destroy_deadline(q, th_in(30 * TH_SEC)));
  cr_assert_geq(hsad_now_ns() - t0, 2000000000ull, "destroyed after the kernel ended");
  for (int i = 0; i < 64; i++) cr_assert_eq(buf[i], 0x5a5a5a5au, "buf[%d] = 0x%x", i, buf[i]);
  hsad_queue_t *shared = NULL;
  TH_OK(hsad_device_queue(e.dev, &shared));
  TH_ERR_IS(hsad_queue_destroy_deadline(shared, th_in(TH_SEC)), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_queue_destroy_deadline: queue %llu is one of device 0's shared queues "
            "(hsad_device_queue): the runtime destroys it at its last close",
            (unsigned long long)hsad_queue_hsa(shared)->id);
  TH_OK(hsad_queue_destroy_deadline(NULL, 0));
  TH_OK(hsad_buffer_free(buf));
  TH_OK(hsad_program_destroy(pf));
  TH_OK(hsad_program_destroy(p));
  TH_OK(hsad_runtime_close(e.rt));
}

/* Issue 21: kernel arguments. HSAD_KARG_VAL of a pointer variable is a pointer argument (and
 * of a const pointer to const); the literal forms pass converted scalars; a uint64_t holding
 * the address given by value for `global const float *x` is refused with the argument named
 * (by index: saxpy's code object has no .name for its arguments),
 * also right after the same launch with the pointer succeeded (the per-thread launch cache
 * holds that launch: a changed tag is a miss, so the check runs). saxpy: y = 2.5 x + y. */
Test(public, karg_pointer_idiom_literals_and_integer_for_pointer, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "saxpy", 5, "saxpy", &k, &q);
  enum { N = 100 };
  float *x = th_alloc(&e, N * sizeof(float)), *y = th_alloc(&e, N * sizeof(float));
  for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = 1.0f;
  const float *const cx = x;
  hsad_karg_t ok[4] = {HSAD_KARG_F32(2.5f), HSAD_KARG_VAL(cx), HSAD_KARG_VAL(y),
                       HSAD_KARG_U32(N)};
  cr_assert_eq(ok[1].tag, HSAD_KARG_POINTER);
  cr_assert_eq(ok[1].pointer, (uint64_t)(uintptr_t)x);
  cr_assert_eq(ok[2].tag, HSAD_KARG_POINTER);
  cr_assert_eq(ok[3].tag, HSAD_KARG_BYTES);
  cr_assert_eq(ok[3].size, 4);
  float arr2[2] = {1.0f, 2.0f}; /* an array passes its bytes, it is no pointer */
  hsad_karg_t av = HSAD_KARG_VAL(arr2);
  cr_assert_eq(av.tag, HSAD_KARG_BYTES);
  cr_assert_eq(av.size, 8);
  cr_assert_eq(av.bytes, (const void *)arr2);
  hsad_launch_t l = {.dims = 1, .grid = {N}, .block = {64}, .args = ok, .arg_count = 4};
  th_run(q, k, &l, TH_SEC, 10 * TH_SEC);
  for (int i = 0; i < N; i++)
    cr_assert_eq(y[i], 2.5f * (float)i + 1.0f, "y[%d] = %g", i, (double)y[i]);
  uint64_t addr = (uint64_t)(uintptr_t)x;
  hsad_karg_t bad[4] = {HSAD_KARG_F32(2.5f), HSAD_KARG_VAL(addr), HSAD_KARG_VAL(y),
                        HSAD_KARG_U32(N)};
  l.args = bad;
  TH_ERR_IS(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), NULL, NULL), HSAD_ERR_ARG_KIND,
            "%s/saxpy-gfx90a-v5.hsaco: kernel 'saxpy': argument 1 is a global_buffer (a "
            "pointer): pass HSAD_KARG_PTR(p) or HSAD_KARG_VAL of a pointer variable, not 8 bytes",
            TEST_KERNDIR);
  hsad_prepared_launch_t *pl = NULL;
  TH_ERR_IS(hsad_launch_prepare(q, k, &l, &pl), HSAD_ERR_ARG_KIND,
            "%s/saxpy-gfx90a-v5.hsaco: kernel 'saxpy': argument 1 is a global_buffer (a "
            "pointer): pass HSAD_KARG_PTR(p) or HSAD_KARG_VAL of a pointer variable, not 8 bytes",
            TEST_KERNDIR);
  for (int i = 0; i < N; i++) cr_assert_eq(y[i], 2.5f * (float)i + 1.0f, "y[%d] unchanged", i);
  TH_OK(hsad_buffer_free(x));
  TH_OK(hsad_buffer_free(y));
  th_finish(&e, q, p);
}

/* Issue 21: typed values against saxpy's .type_name (float a, ..., uint n). An integer for
 * `float a` and a float for `uint n` refused with the argument and both types named, by
 * hsad_kernel_dispatch and hsad_launch_prepare alike, y untouched; the right types run, y exact.
 * After untyped bytes 0x40000000 (2.0f) for `a` ran, an i32 of the same bits is refused: the
 * per-thread launch cache compares tag and type, not only the bits. */
Test(public, karg_type_checked_against_type_name, .timeout = 60) {
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "saxpy", 5, "saxpy", &k, &q);
  enum { N = 100 };
  float *x = th_alloc(&e, N * sizeof(float)), *y = th_alloc(&e, N * sizeof(float));
  for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = 1.0f;
  int n = N;
  hsad_karg_t args[4] = {HSAD_KARG_I32(2), HSAD_KARG_PTR(x), HSAD_KARG_PTR(y), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {N}, .block = {64}, .args = args, .arg_count = 4};
  TH_ERR_IS(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), NULL, NULL), HSAD_ERR_ARG_KIND,
            "%s/saxpy-gfx90a-v5.hsaco: kernel 'saxpy': argument 0 is float (floating-point), the "
            "value given is i32 (integer)", TEST_KERNDIR);
  hsad_prepared_launch_t *pl = NULL;
  TH_ERR_IS(hsad_launch_prepare(q, k, &l, &pl), HSAD_ERR_ARG_KIND,
            "%s/saxpy-gfx90a-v5.hsaco: kernel 'saxpy': argument 0 is float (floating-point), the "
            "value given is i32 (integer)", TEST_KERNDIR);
  cr_assert_null(pl);
  float nf = N;
  args[0] = HSAD_KARG_F32(2.5f);
  args[3] = HSAD_KARG_VAL(nf);
  TH_ERR_IS(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), NULL, NULL), HSAD_ERR_ARG_KIND,
            "%s/saxpy-gfx90a-v5.hsaco: kernel 'saxpy': argument 3 is uint (integer), the value "
            "given is f32 (floating-point)", TEST_KERNDIR);
  for (int i = 0; i < N; i++) cr_assert_eq(y[i], 1.0f, "y[%d] untouched", i);
  args[3] = HSAD_KARG_VAL(n); /* an int for a uint: integers of either signedness */
  th_run(q, k, &l, TH_SEC, 10 * TH_SEC);
  for (int i = 0; i < N; i++)
    cr_assert_eq(y[i], 2.5f * (float)i + 1.0f, "y[%d] = %g", i, (double)y[i]);
  uint32_t two_bits = 0x40000000u; /* 2.0f, untyped: checked by size only */
  args[0] = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .size = 4, .bytes = &two_bits};
  th_run(q, k, &l, TH_SEC, 10 * TH_SEC);
  for (int i = 0; i < N; i++)
    cr_assert_eq(y[i], 4.5f * (float)i + 1.0f, "y[%d] = %g", i, (double)y[i]);
  args[0] = HSAD_KARG_I32(0x40000000); /* the same bits, typed: a miss, then refused */
  TH_ERR_IS(hsad_kernel_dispatch(q, k, &l, th_in(TH_SEC), NULL, NULL), HSAD_ERR_ARG_KIND,
            "%s/saxpy-gfx90a-v5.hsaco: kernel 'saxpy': argument 0 is float (floating-point), the "
            "value given is i32 (integer)", TEST_KERNDIR);
  for (int i = 0; i < N; i++)
    cr_assert_eq(y[i], 4.5f * (float)i + 1.0f, "y[%d] unchanged", i);
  /* SCALAR values (C++'s literal forms) twice in a row, only the value changed: the second
   * launch must not be taken for the first (the launch cache compares a SCALAR's value) */
  args[0] = (hsad_karg_t){.tag = HSAD_KARG_SCALAR, .type = HSAD_KARG_TYPE_F32, .size = 4,
                          .scalar = 0x3f800000u}; /* 1.0f */
  th_run(q, k, &l, TH_SEC, 10 * TH_SEC);
  for (int i = 0; i < N; i++)
    cr_assert_eq(y[i], 5.5f * (float)i + 1.0f, "y[%d] = %g", i, (double)y[i]);
  args[0].scalar = 0x40400000u; /* 3.0f */
  th_run(q, k, &l, TH_SEC, 10 * TH_SEC);
  for (int i = 0; i < N; i++)
    cr_assert_eq(y[i], 8.5f * (float)i + 1.0f, "y[%d] = %g", i, (double)y[i]);
  TH_OK(hsad_buffer_free(x));
  TH_OK(hsad_buffer_free(y));
  th_finish(&e, q, p);
}

/* Refusals of hsad_program_load_memory, with their messages: NULL data or size 0, and an ISA
 * mismatch named by the label (saxpy built for gfx908). */
Test(public, program_load_memory_refusals, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  size_t size;
  uint8_t *bytes = pub_read(TEST_KERNDIR "/saxpy-gfx908-v5.hsaco", &size);
  hsad_program_t *p = (hsad_program_t *)1;
  TH_ERR_IS(hsad_program_load_memory(e.dev, NULL, size, "x", &p), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_program_load_memory: NULL data");
  TH_ERR_IS(hsad_program_load_memory(e.dev, bytes, 0, "x", &p), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_program_load_memory: size 0");
  cr_assert_eq(p, (hsad_program_t *)1);
  TH_ERR_IS(hsad_program_load_memory(e.dev, bytes, size, "saxpy908", &p), HSAD_ERR_ISA_MISMATCH,
            "saxpy908: code object targets gfx908, device 0 (gfx90a) supports "
            "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-: compile for gfx90a:sramecc+:xnack-");
  cr_assert_eq(p, (hsad_program_t *)1);
  free(bytes);
  TH_OK(hsad_runtime_close(e.rt));
}

/* hsad_device_agent is the ROCr agent of the device: ROCr itself says it is a GPU named gfx90a;
 * NULL gives the zero handle. */
Test(public, device_agent_is_the_rocr_gpu, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  hsa_agent_t a = hsad_device_agent(e.dev);
  cr_assert_neq(a.handle, 0);
  cr_assert_eq(hsad_device_agent(NULL).handle, 0);
  hsa_status_t (*get_info)(hsa_agent_t, hsa_agent_info_t, void *);
  *(void **)&get_info = dlsym(RTLD_DEFAULT, "hsa_agent_get_info");
  cr_assert_not_null(get_info);
  hsa_device_type_t t = HSA_DEVICE_TYPE_CPU;
  char name[64] = "";
  cr_assert_eq(get_info(a, HSA_AGENT_INFO_DEVICE, &t), HSA_STATUS_SUCCESS);
  cr_assert_eq(get_info(a, HSA_AGENT_INFO_NAME, name), HSA_STATUS_SUCCESS);
  cr_assert_eq(t, HSA_DEVICE_TYPE_GPU);
  cr_assert_str_eq(name, "gfx90a");
  TH_OK(hsad_runtime_close(e.rt));
}

/* HSAD_DEVICE=hw on a machine without /dev/kfd: NO_DEVICE with the reason, nothing opened. */
Test(public, runtime_open_hw_without_kfd, .timeout = 60) {
  if (access("/dev/kfd", F_OK) == 0) cr_skip_test("this machine has /dev/kfd");
  setenv("HSAD_DEVICE", "hw", 1);
  hsad_runtime_t *rt = NULL;
  TH_ERR_IS(hsad_runtime_open(&rt), HSAD_ERR_NO_DEVICE,
            "HSAD_DEVICE=hw but /dev/kfd is absent or not accessible: no AMD GPU driver here "
            "(unset HSAD_DEVICE to use kfd-emu)");
  cr_assert_null(rt);
  /* the same answer again (the load is decided once per process) */
  TH_ERR_IS(hsad_runtime_open(&rt), HSAD_ERR_NO_DEVICE,
            "HSAD_DEVICE=hw but /dev/kfd is absent or not accessible: no AMD GPU driver here "
            "(unset HSAD_DEVICE to use kfd-emu)");
  cr_assert_eq(hsad_device_count(rt), 0);
}

/* A value of HSAD_DEVICE other than emu / hw is refused by name; NULL out is refused. */
Test(public, runtime_open_bad_device_value, .timeout = 60) {
  TH_ERR_IS(hsad_runtime_open(NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_runtime_open: out_runtime is NULL");
  setenv("HSAD_DEVICE", "gpu0", 1);
  hsad_runtime_t *rt = NULL;
  TH_ERR_IS(hsad_runtime_open(&rt), HSAD_ERR_NO_DEVICE,
            "HSAD_DEVICE=gpu0: expected 'emu' (kfd-emu) or 'hw' (a GPU through /dev/kfd)");
  cr_assert_null(rt);
}

/* hsad_buffer_alloc's promises on a 2-node host whose GPU hangs off node 1
 * (KFD_EMU_CPU_NODES=2, KFD_EMU_GPU_NUMA=1): every size gives memory aligned to 4096 bytes and
 * zeroed (also a block ROCr hands out again after it was dirtied and freed); ROCr's pointer
 * info names the CPU agent of NUMA node 1 as its owner and the GPU among the agents that may
 * access it; a kernel writes and reads it under KFD_EMU_ACCESS=strict (only memory granted to
 * the GPU is reachable); size 0 and NULL are refused with the message. */
Test(public, buffer_alloc_promises, .timeout = 60) {
  setenv("KFD_EMU_CPU_NODES", "2", 1);
  setenv("KFD_EMU_GPU_NUMA", "1", 1);
  setenv("KFD_EMU_ACCESS", "strict", 1);
  th_env_t e;
  const hsad_device_kernel_t *k;
  hsad_queue_t *q;
  hsad_program_t *p = th_start(&e, "saxpy", 5, "saxpy", &k, &q);
  hsa_status_t (*ptr_info)(const void *, hsa_amd_pointer_info_t *, void *(*)(size_t), uint32_t *,
                           hsa_agent_t **);
  hsa_status_t (*get_info)(hsa_agent_t, hsa_agent_info_t, void *);
  *(void **)&ptr_info = dlsym(RTLD_DEFAULT, "hsa_amd_pointer_info");
  *(void **)&get_info = dlsym(RTLD_DEFAULT, "hsa_agent_get_info");
  cr_assert(ptr_info && get_info);
  static const size_t sizes[] = {1, 100, 4095, 4096, 4097, 65536 + 12, 3 << 20};
  for (uint32_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    for (int round = 0; round < 2; round++) {
      uint8_t *b = NULL;
      TH_OK(hsad_buffer_alloc(e.dev, sizes[s], (void **)&b));
      cr_assert_eq((uintptr_t)b % 4096, 0, "%zu bytes at %p", sizes[s], (void *)b);
      for (size_t i = 0; i < sizes[s]; i++)
        cr_assert_eq(b[i], 0, "%zu bytes, round %d: byte %zu = %#x", sizes[s], round, i, b[i]);
      hsa_amd_pointer_info_t info = {.size = sizeof info};
      uint32_t na = 0;
      hsa_agent_t *acc = NULL;
      cr_assert_eq(ptr_info(b, &info, malloc, &na, &acc), HSA_STATUS_SUCCESS);
      cr_assert_eq(info.type, HSA_EXT_POINTER_TYPE_HSA);
      cr_assert_eq(info.agentBaseAddress, (void *)b);
      cr_assert_geq(info.sizeInBytes, sizes[s]);
      hsa_device_type_t t = HSA_DEVICE_TYPE_GPU;
      uint32_t node = 99;
      cr_assert_eq(get_info(info.agentOwner, HSA_AGENT_INFO_DEVICE, &t), HSA_STATUS_SUCCESS);
      cr_assert_eq(get_info(info.agentOwner, HSA_AGENT_INFO_NODE, &node), HSA_STATUS_SUCCESS);
      cr_assert_eq(t, HSA_DEVICE_TYPE_CPU);
      cr_assert_eq(node, 1, "owner node %u", node);
      bool gpu = false;
      for (uint32_t i = 0; i < na; i++) gpu |= acc[i].handle == hsad_device_agent(e.dev).handle;
      cr_assert(gpu, "the GPU is among the %u agents allowed access", na);
      free(acc);
      memset(b, 0xa5, sizes[s]); /* dirty it: the next round may get this block back */
      hsad_buffer_free(b);
    }
  }
  /* a kernel reads x and reads/writes y, both from hsad_buffer_alloc (strict access) */
  enum { N = 1000 };
  float *x = NULL, *y = NULL;
  TH_OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&x));
  TH_OK(hsad_buffer_alloc(e.dev, N * 4, (void **)&y));
  for (uint32_t i = 0; i < N; i++) {
    x[i] = (float)i;
    y[i] = 0.5f;
  }
  float a = 2.0f;
  uint32_t n = N;
  hsad_karg_t args[4] = {HSAD_KARG_VAL(a), HSAD_KARG_PTR(x), HSAD_KARG_PTR(y), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {1024}, .block = {256}, .args = args, .arg_count = 4};
  th_run(q, k, &l, TH_SEC, 10 * TH_SEC);
  for (uint32_t i = 0; i < N; i++)
    cr_assert_eq(y[i], 2.0f * (float)i + 0.5f, "y[%u] = %g", i, (double)y[i]);
  TH_OK(hsad_queue_error(q));
  void *z = (void *)1;
  TH_ERR_IS(hsad_buffer_alloc(e.dev, 0, &z), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_buffer_alloc: size 0");
  cr_assert_eq(z, (void *)1);
  TH_ERR_IS(hsad_buffer_alloc(NULL, 0, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_buffer_alloc: NULL device");
  TH_ERR_IS(hsad_buffer_alloc(e.dev, 0, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_buffer_alloc: NULL out_ptr");
  hsad_buffer_free(x);
  hsad_buffer_free(y);
  th_finish(&e, q, p);
}

/* ISA mismatch on one feature alone, the processor matching (the device is
 * gfx90a:sramecc+:xnack-): fill.cl built for gfx90a:xnack+ and for gfx90a:sramecc- is refused
 * before ROCr sees it, with both sides named; built for gfx90a:sramecc+:xnack- (the device's
 * own ISA) it loads and runs. Fixtures: hsa-dispatch/module.mk, fill-<mcpu>.hsaco. */
Test(public, isa_mismatch_on_xnack_or_sramecc_alone, .timeout = 60) {
  th_env_t e;
  th_open(&e);
  hsad_program_t *p = NULL;
  TH_ERR_IS(hsad_program_load_file(e.dev, TH_FIXDIR "/fill-gfx90a_xnack+.hsaco", &p),
            HSAD_ERR_ISA_MISMATCH,
            "%s: code object targets gfx90a:xnack+, device 0 (gfx90a) "
            "supports amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-: compile for "
            "gfx90a:sramecc+:xnack-", TH_FIXDIR "/fill-gfx90a_xnack+.hsaco");
  cr_assert_null(p);
  TH_ERR_IS(hsad_program_load_file(e.dev, TH_FIXDIR "/fill-gfx90a_sramecc-.hsaco", &p),
            HSAD_ERR_ISA_MISMATCH,
            "%s: code object targets gfx90a:sramecc-, device 0 (gfx90a) "
            "supports amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-: compile for "
            "gfx90a:sramecc+:xnack-", TH_FIXDIR "/fill-gfx90a_sramecc-.hsaco");
  cr_assert_null(p);
  TH_OK(hsad_program_load_file(e.dev, TH_FIXDIR "/fill-gfx90a_sramecc+_xnack-.hsaco", &p));
  cr_assert_str_eq(hsad_codeobj_info(hsad_program_codeobj(p))->target,
                   "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
  const hsad_device_kernel_t *k;
  TH_OK(hsad_program_kernel(p, "fill", &k));
  uint32_t *buf = th_alloc(&e, 128), v = 0xfeed, n = 32;
  hsad_karg_t a[3] = {HSAD_KARG_PTR(buf), HSAD_KARG_VAL(v), HSAD_KARG_VAL(n)};
  hsad_launch_t l = {.dims = 1, .grid = {32}, .block = {32}, .args = a, .arg_count = 3};
  hsad_queue_t *q = th_queue(&e, 64);
  th_run(q, k, &l, TH_SEC, 10 * TH_SEC);
  for (uint32_t i = 0; i < 32; i++) cr_assert_eq(buf[i], 0xfeed);
  hsad_buffer_free(buf);
  th_finish(&e, q, p);
}

/* Close hooks record the order they ran in, what the runtime said about itself then (already
 * closed: 0 devices) and whether ROCr was still usable (hsa_system_get_info succeeds). */
static struct {
  int order[8], n;
  uint32_t devices_seen;
  hsa_status_t rocr_status;
  hsad_runtime_t *rt;
} pub_hooks;

static void pub_hook(void *arg) {
  int i = (int)(intptr_t)arg;
  pub_hooks.order[pub_hooks.n++] = i;
  pub_hooks.devices_seen = hsad_device_count(pub_hooks.rt);
  hsa_status_t (*sys_info)(hsa_system_info_t, void *);
  *(void **)&sys_info = dlsym(RTLD_DEFAULT, "hsa_system_get_info");
  uint64_t hz = 0;
  pub_hooks.rocr_status = sys_info ? sys_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &hz)
                                   : HSA_STATUS_ERROR;
}

/* Reference counting: two opens give the same handle and one hsa_init (same generation); the
 * first close leaves everything open; the last runs the close hooks (registered once each, 8 at
 * most, in reverse order, with ROCr still usable and the runtime already closed), then devices,
 * generation and hsad_device_runtime read as closed, and another close is refused. A reopen is
 * a new generation and runs the same hooks again at its last close. */
Test(public, runtime_refcount_generation_and_close_hooks, .timeout = 60) {
  hsad_runtime_t *r1 = NULL, *r2 = NULL;
  TH_OK(hsad_runtime_open(&r1));
  TH_OK(hsad_runtime_open(&r2));
  cr_assert_eq(r1, r2);
  pub_hooks.rt = r1;
  uint64_t g1 = hsad_runtime_generation(r1);
  cr_assert_neq(g1, 0);
  hsad_device_t *d;
  TH_OK(hsad_device_get(r1, 0, &d));
  cr_assert_eq(hsad_device_runtime(d), r1);
  hsad_device_t *foreign = (hsad_device_t *)&pub_hooks;
  cr_assert_null(hsad_device_runtime(foreign));
  cr_assert_null(hsad_device_runtime(NULL));
  cr_assert_eq(hsad_runtime_generation((hsad_runtime_t *)&pub_hooks), 0);
  for (int i = 0; i < 8; i++) TH_OK(hsad_runtime_on_close(r1, pub_hook, (void *)(intptr_t)i));
  TH_OK(hsad_runtime_on_close(r1, pub_hook, (void *)(intptr_t)3)); /* again: no-op */
  TH_ERR_IS(hsad_runtime_on_close(r1, pub_hook, (void *)(intptr_t)8),
            HSAD_ERR_RESOURCE_EXHAUSTED, "hsad_runtime_on_close: 8 hooks at most");
  TH_ERR_IS(hsad_runtime_on_close(r1, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_runtime_on_close: NULL fn");
  TH_ERR_IS(hsad_runtime_on_close(NULL, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_runtime_on_close: NULL runtime");
  TH_ERR_IS(hsad_runtime_on_close((hsad_runtime_t *)&pub_hooks, pub_hook, NULL),
            HSAD_ERR_INVALID_ARGUMENT, "hsad_runtime_on_close: runtime %p is not the hsa-dispatch "
            "runtime", (void *)&pub_hooks);
  TH_OK(hsad_runtime_close(r1));
  cr_assert_eq(pub_hooks.n, 0);
  cr_assert_eq(hsad_device_count(r1), 1);
  cr_assert_eq(hsad_runtime_generation(r1), g1);
  TH_OK(hsad_runtime_close(r1));
  cr_assert_eq(pub_hooks.n, 8);
  for (int i = 0; i < 8; i++) cr_assert_eq(pub_hooks.order[i], 7 - i, "hook %d ran %dth", 7 - i, i);
  cr_assert_eq(pub_hooks.devices_seen, 0);
  cr_assert_eq(pub_hooks.rocr_status, HSA_STATUS_SUCCESS);
  cr_assert_eq(hsad_device_count(r1), 0);
  cr_assert_eq(hsad_runtime_generation(r1), 0);
  cr_assert_null(hsad_device_runtime(d));
  TH_ERR_IS(hsad_runtime_close(r1), HSAD_ERR_CLOSED,
            "hsad_runtime_close: the runtime is already closed");
  TH_ERR_IS(hsad_runtime_close(NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_runtime_close: runtime is NULL");
  TH_OK(hsad_runtime_open(&r2));
  cr_assert_eq(r2, r1);
  cr_assert_eq(hsad_runtime_generation(r2), g1 + 1);
  pub_hooks.n = 0;
  TH_OK(hsad_runtime_close(r2));
  cr_assert_eq(pub_hooks.n, 8);
}

/* hsa_init failing (kfd-emu refuses KFD_EMU_GPUS=0): HSAD_ERR_HSA with kfd-emu's reason (asked
 * through its kfd_emu_config_error, as it printed it on stderr), the status hsa_init returns
 * (asked again here) and ROCr's string for it; nothing is kept open. */
Test(public, runtime_open_hsa_init_fails, .timeout = 60) {
  setenv("KFD_EMU_GPUS", "0", 1);
  hsad_runtime_t *rt = NULL;
  hsad_status_t s = hsad_runtime_open(&rt);
  char got[1024];
  snprintf(got, sizeof got, "%s", hsad_last_error());
  cr_assert_eq(s, HSAD_ERR_HSA, "%s: %s", hsad_status_name(s), got);
  cr_assert_null(rt);
  hsa_status_t (*init)(void);
  hsa_status_t (*status_string)(hsa_status_t, const char **);
  *(void **)&init = dlsym(RTLD_DEFAULT, "hsa_init");
  *(void **)&status_string = dlsym(RTLD_DEFAULT, "hsa_status_string");
  cr_assert(init && status_string);
  hsa_status_t st = init();
  cr_assert_neq(st, HSA_STATUS_SUCCESS);
  const char *ss = NULL;
  cr_assert_eq(status_string(st, &ss), HSA_STATUS_SUCCESS);
  char want[1024];
  snprintf(want, sizeof want, "hsa_init on kfd-emu (kfd-emu refused its configuration: "
           "KFD_EMU_GPUS=0: expected an integer in [1, 8]): HSA status 0x%x (%s)", (unsigned)st,
           ss);
  cr_assert_str_eq(got, want);
  cr_assert_eq(hsad_device_count(rt), 0);
}
