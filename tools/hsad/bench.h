/* bench.h - the framework of `hsad bench`: suites, paths, interleaved rounds, one result model.
 *
 * A suite measures several paths (hsad, hsad-prepared, rocr-textbook, hip, ...) doing the same
 * thing on the same device. It runs ROUNDS rounds; in each round every path is measured once,
 * in an order rotated per round, so drift of a shared machine hits all paths alike. A row
 * (one path, optionally at one configuration such as "threads=4") holds metrics; a metric holds
 * one sample per round and is reported as min / median / max over the rounds. Ratios between
 * paths are computed per round (sample r of A / sample r of B) and reported the same way.
 * Deterministic figures (callgrind instruction counts) are metrics with one sample.
 *
 * Output (bench_report.c): a table per suite on stdout, or --json (schema in bench_report.c),
 * or --csv; --plot DIR writes one gnuplot PNG per suite. Progress lines go to stderr.
 *
 * Children (bench_child.c): the HIP side runs in hsad-bench-hip, a coprocess driven by one-line
 * commands so its measurements interleave with the in-process paths; callgrind runs re-execute
 * hsad (or hsad-bench-hip) under valgrind. Every child runs in its own process group with a
 * deadline, and SIGINT/SIGTERM stop them all (kill of the group) and print what was measured.
 */
#ifndef HSAD_BENCH_H
#define HSAD_BENCH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hsa-dispatch/hsad.h"

#define BENCH_MAX_ROUNDS 64
#define BENCH_MAX_METRICS 12
#define BENCH_NOTE_MAX 512

/* One figure of one row: a sample per round (v[0..n)), summarised by bench_suite_finish. */
typedef struct bench_metric {
  const char *name; /* JSON key: "ns_per_submit", "instructions_per_submit", ... (static) */
  const char *unit; /* "ns", "us", "instructions", "submits_per_s" (static) */
  uint32_t n;
  double v[BENCH_MAX_ROUNDS];
  double min, median, max;
} bench_metric_t;

typedef struct bench_row {
  char path[24];        /* hsad, hsad-prepared, rocr-textbook, hip */
  char config[48];      /* "" or e.g. "queues=shared" (the part that is not on the x axis) */
  const char *xname;    /* the suite's configuration axis ("threads", "deps"), or NULL */
  double x;             /* value on that axis; rows are keyed by (path, config, x) */
  bool absent;          /* not measured: note says why */
  bool checked;         /* the path's results were checked in every round it ran */
  bool wrong;           /* a check failed (note says how): its figures are not a speed */
  char note[BENCH_NOTE_MAX];
  uint32_t nm;
  bench_metric_t m[BENCH_MAX_METRICS];
} bench_row_t;

typedef struct bench_ratio {
  char name[96];        /* "hsad / rocr-textbook" */
  char config[48];
  const char *xname;
  double x;
  bench_metric_t m;     /* m.name: the metric compared; samples per round */
} bench_ratio_t;

typedef struct bench_suite_result {
  const char *suite;    /* "dispatch" */
  char title[160];      /* one line: what was measured */
  char params[160];     /* "rounds=5 count=10000": what the samples are */
  const char *plot_metric; /* metric plotted by --plot (one per suite) */
  const char *plot_xname;  /* x axis of the plot (NULL: one bar per path) */
  bool plot_logy;          /* bars on a log axis (paths orders of magnitude apart) */
  bool interrupted;     /* stopped by SIGINT/SIGTERM: rows hold what was measured */
  bench_row_t *rows;
  uint32_t nrows, cap;
  bench_ratio_t *ratios;
  uint32_t nratios, rcap;
} bench_suite_result_t;

/* A running child process (its own process group). */
typedef struct bench_child {
  pid_t pid;             /* 0: not running */
  int to_fd, from_fd;    /* its stdin (or -1), its stdout+stderr */
  char buf[8192];
  size_t len;
  char last[256];        /* last line that was not a protocol line (an error message) */
  char label[64];
} bench_child_t;

/* Everything a suite needs: the device, the empty kernel, options, the HIP coprocess. */
typedef struct bench_ctx {
  hsad_runtime_t *rt;
  hsad_device_t *dev;
  hsad_program_t *prog;
  const hsad_device_kernel_t *k; /* "empty", no arguments */
  const hsad_device_kernel_t *k_order; /* "order_record" of the same program (graph suite) */
  char isa[64];
  bool emulated;
  uint32_t devi;
  uint32_t count;        /* submits per path per round (suites scale from it) */
  uint32_t rounds;
  uint32_t cg_count;     /* submits counted under callgrind */
  bool callgrind;
  uint32_t timeout_s;    /* deadline of each child command / run */
  int elf_fd;            /* memfd holding the empty kernel's code object (for children) */
  char self[4096];       /* this executable */
  char hip_exe[4096];    /* hsad-bench-hip */
  bench_child_t hip;     /* the HIP coprocess, started on first use */
  bool hip_started, hip_failed;
  char hip_note[BENCH_NOTE_MAX];
  uint64_t t0_ns;        /* start of the command, for progress lines */
} bench_ctx_t;

/* ---- the suite registry (bench_main.c) ---------------------------------------------------- */
typedef int (*bench_suite_fn)(bench_ctx_t *ctx, bench_suite_result_t *out);
int bench_suite_dispatch(bench_ctx_t *ctx, bench_suite_result_t *out);
int bench_suite_roundtrip(bench_ctx_t *ctx, bench_suite_result_t *out);
int bench_suite_producers(bench_ctx_t *ctx, bench_suite_result_t *out);
int bench_suite_barrier(bench_ctx_t *ctx, bench_suite_result_t *out);
int bench_suite_copy(bench_ctx_t *ctx, bench_suite_result_t *out);  /* bench_copy.c (memory/) */
int bench_suite_pool(bench_ctx_t *ctx, bench_suite_result_t *out);  /* bench_pool.c (memory/) */
/* The pool suite's callgrind child: `hsad bench --child stream|stream-dispatch --count N`. */
int bench_pool_child(bench_ctx_t *ctx, const char *path);
int bench_suite_graph(bench_ctx_t *ctx, bench_suite_result_t *out); /* bench_graph.c (fusion/) */
/* Marks a row wrong (its results failed a check) with a printf-style note. */
void bench_row_wrong(bench_row_t *row, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- results (bench_result.c) ------------------------------------------------------------- */
/* Returns the row (path, config, x), appending it first; NULL when out of memory. */
bench_row_t *bench_row_add(bench_suite_result_t *r, const char *path, const char *config,
                           const char *xname, double x);
bench_row_t *bench_row_find(bench_suite_result_t *r, const char *path, const char *config,
                            double x);
/* Marks a row absent with a printf-style note (keeps samples already taken). */
void bench_row_absent(bench_row_t *row, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Adds sample v of metric `name` (unit) to the row. */
void bench_sample(bench_row_t *row, const char *name, const char *unit, double v);
bench_metric_t *bench_metric(bench_row_t *row, const char *name);
/* Adds a ratio a/b of metric `name` for every round both rows have (per-round ratios). */
void bench_ratio(bench_suite_result_t *r, const char *a_path, const char *b_path,
                 const char *config, double x, const char *name);
/* Fills min/median/max of every metric and ratio. */
void bench_suite_finish(bench_suite_result_t *r);
void bench_suite_free(bench_suite_result_t *r);
double bench_median(double *v, uint32_t n); /* sorts v */

/* ---- output (bench_report.c) -------------------------------------------------------------- */
void bench_report_table(const bench_ctx_t *ctx, const bench_suite_result_t *s, uint32_t n);
int bench_report_json(const bench_ctx_t *ctx, const bench_suite_result_t *s, uint32_t n,
                      bool interrupted);
void bench_report_csv(const bench_ctx_t *ctx, const bench_suite_result_t *s, uint32_t n);
int bench_report_plot(const bench_ctx_t *ctx, const bench_suite_result_t *s, uint32_t n,
                      const char *dir);
#define BENCH_EMU_NOTE \
  "kfd-emu: kernels ran as host twins; times are host-side costs, not GPU performance"

/* ---- control (bench_main.c) --------------------------------------------------------------- */
extern volatile sig_atomic_t bench_stop; /* set by SIGINT/SIGTERM */
static inline bool bench_stopped(void) { return bench_stop != 0; }
/* "hsad bench: [  12.3 s] suite: path what" on stderr. */
void bench_progress(const bench_ctx_t *ctx, const char *suite, const char *path,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---- children (bench_child.c) ------------------------------------------------------------- */
/* Starts argv[0] in its own process group, stdout+stderr to a pipe, stdin from a pipe when
 * `with_stdin`. Returns 0, or -1 with `note` filled. */
int bench_child_start(bench_child_t *c, char *const argv[], bool with_stdin, const char *label,
                      char *note, size_t n);
/* Reads the next protocol line ("@bench ...", prefix stripped) until deadline_ns.
 * Returns 0, -1 (child exited / pipe closed), -2 (deadline), -3 (bench_stop). */
int bench_child_line(bench_child_t *c, char *line, size_t n, uint64_t deadline_ns);
/* Sends one command line and reads the reply line: "ok ..." gives 0 with the rest in `reply`;
 * anything else -1 with `reply` = the reason. Deadline: ctx->timeout_s. */
int bench_child_cmd(bench_ctx_t *ctx, bench_child_t *c, const char *cmd, char *reply, size_t n);
/* SIGTERM to the child's process group, SIGKILL after 1 s, reaps it. Returns its wait status. */
int bench_child_stop(bench_child_t *c);
/* Waits for exit until deadline_ns (then stops it): returns the wait status or -2 on timeout. */
int bench_child_wait(bench_child_t *c, uint64_t deadline_ns);
/* Sends SIGKILL to every live child's group (async-signal-safe; used by the signal handler). */
void bench_children_kill_all(int sig);

/* The HIP coprocess (started on first use); NULL with *note set when HIP is absent/failed. */
bench_child_t *bench_hip(bench_ctx_t *ctx, char *note, size_t n);
/* Runs `argv` under callgrind (instrumentation only between the child's
 * CALLGRIND_START/STOP_INSTRUMENTATION, collection only inside `fn`, or inside each of several
 * functions separated by ',', which must not call each other); total Ir in *out_ir (of the
 * last part when the child dumped parts).
 * Returns 0, or -1 with `note` saying why (no progress within the deadline: which stage). */
int bench_callgrind(bench_ctx_t *ctx, char *const argv[], const char *fn, double *out_ir,
                    char *note, size_t n);
/* The same in two steps, so that several callgrind children run at once (instruction counts do
 * not depend on what else runs): start, then finish (waits, reads the count). */
#define BENCH_CG_MAX_PARTS 48
typedef struct bench_cg_part {
  char label[64]; /* CALLGRIND_DUMP_STATS_AT's string ("" for the dump at exit) */
  double ir;      /* instructions collected in this part */
  double allocs;  /* calls of malloc, calloc, realloc, memalign, posix_memalign, aligned_alloc
                     (operator new counts through malloc) collected in this part */
} bench_cg_part_t;
typedef struct bench_cg_job {
  bench_child_t c;
  int fd;       /* the memfd the profile is written to */
  uint64_t t0;  /* start, for the start-up deadline */
  char fn[256]; /* the function collected in, or several separated by ',' */
  /* filled by bench_callgrind_finish: one part per CALLGRIND_DUMP_STATS_AT of the child
   * (valgrind --combine-dumps=yes), then the part dumped at exit */
  uint32_t nparts;
  bench_cg_part_t parts[BENCH_CG_MAX_PARTS];
} bench_cg_job_t;
/* The part labelled `label` of a finished job, or NULL. */
const bench_cg_part_t *bench_cg_part(const bench_cg_job_t *job, const char *label);
int bench_callgrind_start(bench_ctx_t *ctx, char *const argv[], const char *fn,
                          bench_cg_job_t *job, char *note, size_t n);
int bench_callgrind_finish(bench_ctx_t *ctx, bench_cg_job_t *job, double *out_ir, char *note,
                           size_t n);

#endif /* HSAD_BENCH_H */
