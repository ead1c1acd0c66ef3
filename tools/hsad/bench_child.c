/* bench_child.c - child processes of hsad bench: the HIP coprocess and callgrind runs.
 *
 * Every child runs in its own process group (setpgid in the child), so stopping it stops
 * whatever it started (valgrind, HIP's threads); every read has a deadline; the live groups are
 * kept in a fixed table the signal handler can walk (kill() is async-signal-safe).
 * Protocol: a child prints lines starting with "@bench " (the rest is the message); any other
 * output (ROCr, HIP or valgrind messages) is kept as `last` for error notes.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tools/hsad/bench.h"

#define MAX_LIVE 16
static volatile pid_t live[MAX_LIVE]; /* process group ids of running children */

static void live_add(pid_t p) {
  for (int i = 0; i < MAX_LIVE; i++)
    if (!live[i]) {
      live[i] = p;
      return;
    }
}

static void live_del(pid_t p) {
  for (int i = 0; i < MAX_LIVE; i++)
    if (live[i] == p) live[i] = 0;
}

void bench_children_kill_all(int sig) {
  for (int i = 0; i < MAX_LIVE; i++)
    if (live[i] > 0) kill(-live[i], sig);
}

int bench_child_start(bench_child_t *c, char *const argv[], bool with_stdin, const char *label,
                      char *note, size_t n) {
  int out[2], in[2] = {-1, -1};
  memset(c, 0, sizeof *c);
  c->to_fd = c->from_fd = -1;
  snprintf(c->label, sizeof c->label, "%s", label);
  if (pipe2(out, O_CLOEXEC)) {
    snprintf(note, n, "%s: pipe: %s", label, strerror(errno));
    return -1;
  }
  if (with_stdin && pipe2(in, O_CLOEXEC)) {
    snprintf(note, n, "%s: pipe: %s", label, strerror(errno));
    close(out[0]);
    close(out[1]);
    return -1;
  }
#ifdef __SANITIZE_ADDRESS__
  /* this build's kfd-emu is instrumented: a child that is not (HIP) must preload the same
   * AddressSanitizer runtime before it loads kfd-emu */
  Dl_info di;
  void *asan = dlsym(RTLD_DEFAULT, "__asan_init");
  const char *preload = asan && dladdr(asan, &di) && di.dli_fname ? di.dli_fname : NULL;
#endif
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
#ifdef __SANITIZE_ADDRESS__
    if (preload) setenv("LD_PRELOAD", preload, 1);
#endif
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    int devnull = open("/dev/null", O_RDONLY);
    dup2(with_stdin ? in[0] : devnull, 0);
    dup2(out[1], 1);
    dup2(out[1], 2);
    execv(argv[0], argv);
    dprintf(1, "@bench err cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(out[1]);
  if (with_stdin) close(in[0]);
  if (pid < 0) {
    snprintf(note, n, "%s: fork: %s", label, strerror(errno));
    close(out[0]);
    if (with_stdin) close(in[1]);
    return -1;
  }
  setpgid(pid, pid); /* also from here: no window where a kill of the group misses it */
  live_add(pid);
  c->pid = pid;
  c->from_fd = out[0];
  c->to_fd = with_stdin ? in[1] : -1;
  return 0;
}

int bench_child_line(bench_child_t *c, char *line, size_t n, uint64_t deadline_ns) {
  for (;;) {
    char *nl;
    while ((nl = memchr(c->buf, '\n', c->len))) {
      size_t l = (size_t)(nl - c->buf);
      *nl = '\0';
      int proto = !strncmp(c->buf, "@bench ", 7);
      if (proto) snprintf(line, n, "%s", c->buf + 7);
      else if (l) snprintf(c->last, sizeof c->last, "%.255s", c->buf);
      memmove(c->buf, nl + 1, c->len - l - 1);
      c->len -= l + 1;
      if (proto) return 0;
    }
    if (c->len == sizeof c->buf) c->len = 0; /* an endless line of noise: drop it */
    if (bench_stopped()) return -3;
    /* past the deadline, what is already in the pipe is still read before giving up */
    uint64_t now = hsad_now_ns();
    uint64_t left_ms = now >= deadline_ns ? 0 : (deadline_ns - now) / 1000000 + 1;
    struct pollfd p = {.fd = c->from_fd, .events = POLLIN};
    int r = poll(&p, 1, left_ms > 100 ? 100 : (int)left_ms); /* 100 ms: see bench_stop */
    if (r < 0 && errno != EINTR) return -1;
    if (r == 0 && now >= deadline_ns) return -2;
    if (r <= 0) continue;
    ssize_t k = read(c->from_fd, c->buf + c->len, sizeof c->buf - c->len);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    c->len += (size_t)k;
  }
}

int bench_child_cmd(bench_ctx_t *ctx, bench_child_t *c, const char *cmd, char *reply, size_t n) {
  char line[1024];
  size_t l = strlen(cmd);
  if (c->to_fd < 0 || write(c->to_fd, cmd, l) != (ssize_t)l || write(c->to_fd, "\n", 1) != 1) {
    snprintf(reply, n, "%s: cannot send '%s' (it exited%s%s)", c->label, cmd,
             c->last[0] ? ": " : "", c->last);
    return -1;
  }
  int r = bench_child_line(c, line, sizeof line, hsad_now_ns() + ctx->timeout_s * 1000000000ull);
  if (r == 0 && !strncmp(line, "ok", 2)) {
    snprintf(reply, n, "%s", line[2] == ' ' ? line + 3 : "");
    return 0;
  }
  if (r == 0) snprintf(reply, n, "%s: %s", c->label, !strncmp(line, "err ", 4) ? line + 4 : line);
  else if (r == -2)
    snprintf(reply, n, "%s: no reply to '%s' within %u s (stopped)", c->label, cmd,
             ctx->timeout_s);
  else if (r == -3) snprintf(reply, n, "%s: interrupted", c->label);
  else
    snprintf(reply, n, "%s exited during '%s'%s%s", c->label, cmd, c->last[0] ? ": " : "",
             c->last);
  return -1;
}

static void close_fds(bench_child_t *c) {
  if (c->to_fd >= 0) close(c->to_fd);
  if (c->from_fd >= 0) close(c->from_fd);
  c->to_fd = c->from_fd = -1;
}

/* True once the child exited; it is left a zombie (not reaped), so its process group id cannot
 * be reused before reap() has killed what else is left in the group. */
static bool exited(pid_t pid) {
  siginfo_t si;
  memset(&si, 0, sizeof si);
  return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

static int reap(bench_child_t *c) {
  int st = -1;
  kill(-c->pid, SIGKILL); /* whatever it left in its group */
  while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR) {
  }
  live_del(c->pid);
  c->pid = 0;
  return st;
}

int bench_child_wait(bench_child_t *c, uint64_t deadline_ns) {
  while (c->pid) {
    if (exited(c->pid)) {
      close_fds(c);
      return reap(c);
    }
    if (hsad_now_ns() >= deadline_ns || bench_stopped()) {
      bench_child_stop(c);
      return -2;
    }
    /* drain output so the child never blocks on a full pipe */
    char tmp[1024];
    char line[256];
    if (c->from_fd >= 0) {
      struct pollfd p = {.fd = c->from_fd, .events = POLLIN};
      if (poll(&p, 1, 20) > 0) {
        ssize_t k = read(c->from_fd, tmp, sizeof tmp);
        if (k > 0 && c->len + (size_t)k <= sizeof c->buf) {
          memcpy(c->buf + c->len, tmp, (size_t)k);
          c->len += (size_t)k;
          while (bench_child_line(c, line, sizeof line, 0) == 0) {
          }
        } else if (k <= 0) {
          close(c->from_fd);
          c->from_fd = -1;
        }
      }
    } else {
      nanosleep(&(struct timespec){0, 20000000}, NULL);
    }
  }
  return -1;
}

int bench_child_stop(bench_child_t *c) {
  int st = -1;
  if (!c->pid) {
    close_fds(c);
    return st;
  }
  if (c->to_fd >= 0) { /* a coprocess: ask it to quit first */
    if (write(c->to_fd, "quit\n", 5) < 0) {
    }
  }
  close_fds(c);
  for (int i = 0; i < 50 && !exited(c->pid); i++) { /* 0.5 s to quit, SIGTERM after 0.1 s */
    if (i == 10) kill(-c->pid, SIGTERM);
    nanosleep(&(struct timespec){0, 10000000}, NULL);
  }
  st = reap(c); /* SIGKILL to the group, then reap */
  return st;
}

/* ---- HIP coprocess ------------------------------------------------------------------------ */

bench_child_t *bench_hip(bench_ctx_t *ctx, char *note, size_t n) {
  if (ctx->hip_started) return &ctx->hip;
  if (ctx->hip_failed) {
    snprintf(note, n, "%s", ctx->hip_note);
    return NULL;
  }
  ctx->hip_failed = true;
  if (access(ctx->hip_exe, X_OK) != 0) {
    snprintf(ctx->hip_note, sizeof ctx->hip_note,
             "HIP path absent: %.400s not found (built with hipcc; in the source tree: make "
             "build/bin/hsad-bench-hip)", ctx->hip_exe);
    snprintf(note, n, "%s", ctx->hip_note);
    return NULL;
  }
  char *argv[] = {ctx->hip_exe, "--serve", NULL};
  if (bench_child_start(&ctx->hip, argv, true, "hsad-bench-hip", ctx->hip_note,
                        sizeof ctx->hip_note)) {
    snprintf(note, n, "%s", ctx->hip_note);
    return NULL;
  }
  char line[512];
  int r = bench_child_line(&ctx->hip, line, sizeof line,
                           hsad_now_ns() + ctx->timeout_s * 1000000000ull);
  if (r != 0 || strncmp(line, "ready", 5)) {
    snprintf(ctx->hip_note, sizeof ctx->hip_note, "HIP path failed: hsad-bench-hip %.200s%s%.250s",
             r == -2 ? "did not start in time" : r == 0 ? line : "exited at start",
             ctx->hip.last[0] ? ": " : "", ctx->hip.last);
    bench_child_stop(&ctx->hip);
    snprintf(note, n, "%s", ctx->hip_note);
    return NULL;
  }
  ctx->hip_failed = false;
  ctx->hip_started = true;
  return &ctx->hip;
}

/* ---- callgrind ------------------------------------------------------------------------- */

static bool is_alloc_fn(const char *name) {
  static const char *const fns[] = {"malloc", "calloc", "realloc", "memalign", "posix_memalign",
                                    "aligned_alloc"};
  for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
    if (!strcmp(name, fns[i])) return true;
  return false;
}

/* "(12) malloc" or "(12)" (a name given before) or "malloc" (no compression): is it an
 * allocation function? `alloc_ids` remembers the compressed ids that are. */
static bool fn_is_alloc(const char *v, uint8_t **alloc_ids, size_t *n) {
  char *end;
  if (*v != '(') return is_alloc_fn(v);
  unsigned long id = strtoul(v + 1, &end, 10);
  if (*end != ')' || id > (1u << 22)) return false;
  if (end[1] == ' ') { /* a definition */
    bool a = is_alloc_fn(end + 2);
    if (id >= *n) {
      size_t m = (id + 1) * 2;
      uint8_t *p = realloc(*alloc_ids, m);
      if (!p) return a;
      memset(p + *n, 0, m - *n);
      *alloc_ids = p;
      *n = m;
    }
    (*alloc_ids)[id] = a;
    return a;
  }
  return id < *n && (*alloc_ids)[id];
}

/* Reads a callgrind profile: fills job->parts (label, Ir, allocation calls whose caller is not
 * itself an allocation function: realloc calling malloc counts once) and returns the last
 * total, -1 when none. */
static double parse_profile(FILE *f, bench_cg_job_t *job) {
  char l[1024];
  double ir = -1;
  bench_cg_part_t *part = NULL;
  uint8_t *alloc_ids = NULL;
  size_t nids = 0;
  bool caller_alloc = false, callee_alloc = false;
  job->nparts = 0;
  while (fgets(l, sizeof l, f)) {
    l[strcspn(l, "\n")] = '\0';
    double v;
    if (!strncmp(l, "part:", 5) || (!part && (!strncmp(l, "fn=", 3) || !strncmp(l, "totals:", 7)))) {
      part = job->nparts < BENCH_CG_MAX_PARTS ? &job->parts[job->nparts++] : part;
      if (part && job->nparts <= BENCH_CG_MAX_PARTS) memset(part, 0, sizeof *part);
    }
    if (!strncmp(l, "desc: Trigger: Client Request: ", 31) && part)
      snprintf(part->label, sizeof part->label, "%.63s", l + 31);
    else if (!strncmp(l, "fn=", 3)) caller_alloc = fn_is_alloc(l + 3, &alloc_ids, &nids);
    else if (!strncmp(l, "cfn=", 4)) callee_alloc = fn_is_alloc(l + 4, &alloc_ids, &nids);
    else if (!strncmp(l, "calls=", 6) && callee_alloc && !caller_alloc && part)
      part->allocs += strtod(l + 6, NULL);
    else if (sscanf(l, "summary: %lf", &v) == 1 || sscanf(l, "totals: %lf", &v) == 1) {
      ir = v;
      if (part) part->ir = v;
    }
  }
  free(alloc_ids);
  return ir;
}

const bench_cg_part_t *bench_cg_part(const bench_cg_job_t *job, const char *label) {
  for (uint32_t i = 0; i < job->nparts; i++)
    if (!strcmp(job->parts[i].label, label)) return &job->parts[i];
  return NULL;
}

int bench_callgrind_start(bench_ctx_t *ctx, char *const argv[], const char *fn,
                          bench_cg_job_t *job, char *note, size_t n) {
  (void)ctx;
  memset(job, 0, sizeof *job);
  snprintf(job->fn, sizeof job->fn, "%s", fn);
  /* the profile goes to a memfd (no file in /tmp); the child opens it as /proc/self/fd/N */
  int fd = memfd_create("hsad-bench-callgrind", 0);
  if (fd < 0) {
    snprintf(note, n, "callgrind: memfd_create: %s", strerror(errno));
    return -1;
  }
  char opt_out[64], opt_fn[8][160];
  snprintf(opt_out, sizeof opt_out, "--callgrind-out-file=/proc/self/fd/%d", fd);
  /* --fair-sched=yes: valgrind runs one thread at a time; with its default lock a thread
   * spinning in ROCr (a signal wait) can keep kfd-emu's CP thread or ROCr's event thread from
   * running for seconds. --instr-atstart=no: start-up (ROCr, code object load) runs without
   * instrumentation; the child starts it around the measured loop. --combine-dumps=yes: the
   * parts a child dumps (CALLGRIND_DUMP_STATS_AT) follow each other in the one memfd. */
  char *vg[48] = {"/usr/bin/valgrind", "--tool=callgrind", "--fair-sched=yes",
                  "--instr-atstart=no", "--combine-dumps=yes", opt_out};
  int k = 6;
  const char *f = fn;
  for (int i = 0; i < 8 && *f; i++) { /* one --toggle-collect per function of "a,b,c" */
    size_t l = strcspn(f, ",");
    snprintf(opt_fn[i], sizeof opt_fn[i], "--toggle-collect=%.*s", (int)l, f);
    vg[k++] = opt_fn[i];
    f += l + (f[l] == ',');
  }
  for (int i = 0; argv[i] && k < 47; i++) vg[k++] = argv[i];
  vg[k] = NULL;
  if (access(vg[0], X_OK) != 0) vg[0] = "/usr/local/bin/valgrind";
  if (access(vg[0], X_OK) != 0) {
    close(fd);
    snprintf(note, n, "callgrind: valgrind not installed (apt-get install valgrind)");
    return -1;
  }
  if (bench_child_start(&job->c, vg, false, "callgrind", note, n)) {
    close(fd);
    return -1;
  }
  job->fd = fd;
  job->t0 = hsad_now_ns();
  return 0;
}

int bench_callgrind_finish(bench_ctx_t *ctx, bench_cg_job_t *job, double *out_ir, char *note,
                           size_t n) {
  bench_child_t *c = &job->c;
  int fd = job->fd;
  /* deadlines: start-up under valgrind gets 3 x --timeout from the child's start, the measured
   * loop --timeout */
  char line[256], stage[64] = "start-up (ROCr and kfd-emu under valgrind)";
  uint64_t deadline = job->t0 + 3 * ctx->timeout_s * 1000000000ull;
  uint32_t limit = 3 * ctx->timeout_s;
  int r = 0;
  while ((r = bench_child_line(c, line, sizeof line, deadline)) == 0) {
    if (!strncmp(line, "stage ", 6)) {
      snprintf(stage, sizeof stage, "%.63s", line + 6);
      deadline = hsad_now_ns() + ctx->timeout_s * 1000000000ull;
      limit = ctx->timeout_s;
    }
    if (!strcmp(line, "done")) break;
  }
  int st = bench_child_wait(c, deadline);
  if (st == -2 || r == -2) {
    if (c->pid) bench_child_stop(c);
    close(fd);
    snprintf(note, n, "callgrind: no progress within %u s in %s; stopped (valgrind "
             "--fair-sched=yes)", limit, stage);
    return -1;
  }
  if (r == -3) {
    if (c->pid) bench_child_stop(c);
    close(fd);
    snprintf(note, n, "callgrind: interrupted");
    return -1;
  }
  if (st < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
    snprintf(note, n, "callgrind run failed (%s %d)%s%s",
             st >= 0 && WIFSIGNALED(st) ? "signal" : "exit status",
             st >= 0 && WIFSIGNALED(st) ? WTERMSIG(st) : st >= 0 ? WEXITSTATUS(st) : -1,
             c->last[0] ? ": " : "", c->last);
    close(fd);
    return -1;
  }
  /* the profile: "summary: N" (or "totals: N") is the Ir collected inside fn; with parts,
   * each part's "totals:" and its allocation calls */
  FILE *f = fdopen(fd, "r");
  double ir = -1;
  if (f) {
    rewind(f);
    ir = parse_profile(f, job);
    fclose(f);
  } else {
    close(fd);
  }
  if (ir < 0) {
    snprintf(note, n, "callgrind wrote no totals (collection never entered %s)", job->fn);
    return -1;
  }
  *out_ir = ir;
  return 0;
}

int bench_callgrind(bench_ctx_t *ctx, char *const argv[], const char *fn, double *out_ir,
                    char *note, size_t n) {
  bench_cg_job_t job;
  if (bench_callgrind_start(ctx, argv, fn, &job, note, n)) return -1;
  return bench_callgrind_finish(ctx, &job, out_ir, note, n);
}
