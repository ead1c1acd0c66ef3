/* test_bench.c - `hsad bench` end to end on kfd-emu: the JSON of every suite parses (json-c)
 * and has its fields for every path (short --count and --rounds), --csv, --plot PNGs that
 * file(1) recognises, an absent HIP program as a note, SIGINT printing what was measured, usage
 * errors. No timed assertions: figures are checked for presence, sample counts and order
 * (min <= median <= max), never for their size. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef HSAD_BIN
#define HSAD_BIN "build/bin/hsad"
#endif

/* Runs `cmd`; stdout into *out, stderr into *err (both malloc'd); returns the exit status. */
static int sh2(const char *cmd, char **out, char **err) {
  char errf[] = "/tmp/test-bench-err-XXXXXX", full[8192];
  int fd = mkstemp(errf);
  cr_assert_geq(fd, 0);
  close(fd);
  snprintf(full, sizeof full, "%s 2>%s", cmd, errf);
  FILE *p = popen(full, "r");
  cr_assert_not_null(p);
  size_t cap = 1 << 16, n = 0, got;
  char *buf = malloc(cap);
  while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
    n += got;
    if (n + 1 == cap) buf = realloc(buf, cap *= 2);
  }
  buf[n] = '\0';
  int st = pclose(p);
  *out = buf;
  FILE *f = fopen(errf, "r");
  char *e = calloc(1, 1 << 16);
  if (f) {
    size_t k = fread(e, 1, (1 << 16) - 1, f);
    e[k] = '\0';
    fclose(f);
  }
  unlink(errf);
  *err = e;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static json_object *get(json_object *o, const char *key) {
  json_object *v = NULL;
  cr_assert(json_object_object_get_ex(o, key, &v), "no \"%s\" in %s", key,
            json_object_to_json_string(o));
  return v;
}

/* Parses a run's JSON and checks the run-level fields; returns the "suites" array. */
static json_object *parse_run(const char *txt, json_object **root, uint32_t rounds) {
  *root = json_tokener_parse(txt);
  cr_assert_not_null(*root, "not JSON: %s", txt);
  cr_assert_str_eq(json_object_get_string(get(*root, "schema")), "hsad-bench/1");
  json_object *dev = get(*root, "device");
  cr_assert_eq(json_object_get_int(get(dev, "index")), 0);
  cr_assert_str_eq(json_object_get_string(get(dev, "isa")), "gfx90a:sramecc+:xnack-");
  cr_assert(json_object_get_boolean(get(dev, "emulated")));
  cr_assert_str_eq(json_object_get_string(get(*root, "time_note")),
                   "kfd-emu: kernels ran as host twins; times are host-side costs, not GPU "
                   "performance");
  cr_assert_not(json_object_get_boolean(get(*root, "interrupted")));
  cr_assert_eq(json_object_get_int(get(get(*root, "options"), "rounds")), (int)rounds);
  return get(*root, "suites");
}

/* Checks metric `name` of a result: unit, `n` samples, min <= median <= max within samples. */
static void check_metric(json_object *res, const char *name, const char *unit, size_t n) {
  json_object *m = get(get(res, "metrics"), name);
  cr_assert_str_eq(json_object_get_string(get(m, "unit")), unit, "%s", name);
  json_object *s = get(m, "samples");
  cr_assert_eq(json_object_array_length(s), n, "%s: %s", name, json_object_to_json_string(m));
  double mn = json_object_get_double(get(m, "min")), md = json_object_get_double(get(m, "median")),
         mx = json_object_get_double(get(m, "max"));
  cr_assert(mn <= md && md <= mx, "%s: %s", name, json_object_to_json_string(m));
  for (size_t i = 0; i < n; i++) {
    double v = json_object_get_double(json_object_array_get_idx(s, i));
    cr_assert(v >= mn && v <= mx, "%s sample %zu: %s", name, i, json_object_to_json_string(m));
  }
}

static json_object *find_result(json_object *suite, const char *path, const char *config,
                                double x) {
  json_object *rs = get(suite, "results");
  for (size_t i = 0; i < json_object_array_length(rs); i++) {
    json_object *r = json_object_array_get_idx(rs, i), *xo = get(r, "x");
    if (strcmp(json_object_get_string(get(r, "path")), path) ||
        strcmp(json_object_get_string(get(r, "config")), config))
      continue;
    if (xo && json_object_get_double(get(xo, "value")) != x) continue;
    cr_assert(json_object_get_boolean(get(r, "ok")), "%s %s: %s", path, config,
              json_object_to_json_string(r));
    return r;
  }
  cr_assert_fail("no result %s '%s' %g in %s", path, config, x, json_object_to_json_string(rs));
  return NULL;
}

static json_object *run_suite(const char *suite, const char *extra, json_object **root,
                              const char *expect_suite) {
  char cmd[1024], *out, *err;
  snprintf(cmd, sizeof cmd, "%s bench %s --json --rounds 2 --count 1000 %s", HSAD_BIN, suite,
           extra);
  int rc = sh2(cmd, &out, &err);
  cr_assert_eq(rc, 0, "%s\nstderr: %s", out, err);
  /* a progress line per suite on stderr: suite, path, elapsed */
  char want[64];
  snprintf(want, sizeof want, "s] %-9s -              done in ", expect_suite);
  cr_assert_not_null(strstr(err, want), "%s", err);
  json_object *suites = parse_run(out, root, 2);
  cr_assert_eq(json_object_array_length(suites), 1);
  json_object *s = json_object_array_get_idx(suites, 0);
  cr_assert_str_eq(json_object_get_string(get(s, "suite")), expect_suite);
  cr_assert_not(json_object_get_boolean(get(s, "interrupted")));
  free(out);
  free(err);
  return s;
}

Test(bench, dispatch_json_with_callgrind, .timeout = 600) {
  json_object *root;
  json_object *s = run_suite("dispatch", "--callgrind-count 1000", &root, "dispatch");
  static const char *const paths[] = {"hsad", "hsad-prepared", "rocr-textbook", "hip",
                                      "hsad-variants"};
  json_object *rs = get(s, "results");
  cr_assert_eq(json_object_array_length(rs), 5);
  for (int p = 0; p < 5; p++) {
    json_object *r = json_object_array_get_idx(rs, (size_t)p);
    cr_assert_str_eq(json_object_get_string(get(r, "path")), paths[p]);
    cr_assert(json_object_get_boolean(get(r, "ok")), "%s", json_object_to_json_string(r));
    check_metric(r, "ns_per_submit", "ns", 2);
#ifdef __SANITIZE_ADDRESS__
    /* an ASan hsad (and its kfd-emu) cannot run under valgrind: the note says so */
    cr_assert_str_eq(json_object_get_string(get(r, "note")),
                     "callgrind: not run (this hsad is built with AddressSanitizer)");
    continue;
#endif
    cr_assert_null(get(r, "note"), "%s", json_object_to_json_string(r));
    check_metric(r, "instructions_per_submit", "instructions", 1); /* deterministic */
    cr_assert_gt(json_object_get_double(get(get(get(r, "metrics"), "instructions_per_submit"),
                                            "median")), 0);
  }
  /* ratios per round: 2 samples for ns, 1 for instructions */
  json_object *q = get(s, "ratios");
#ifdef __SANITIZE_ADDRESS__
  cr_assert_eq(json_object_array_length(q), 3);
  json_object_put(root);
  return;
#endif
  cr_assert_eq(json_object_array_length(q), 6);
  static const char *const names[] = {"hsad / rocr-textbook", "hsad-prepared / rocr-textbook",
                                      "hsad / hip"};
  for (int i = 0; i < 6; i++) {
    json_object *o = json_object_array_get_idx(q, (size_t)i);
    cr_assert_str_eq(json_object_get_string(get(o, "name")), names[i % 3]);
    cr_assert_str_eq(json_object_get_string(get(o, "metric")),
                     i < 3 ? "ns_per_submit" : "instructions_per_submit");
    cr_assert_eq(json_object_array_length(get(o, "samples")), i < 3 ? 2u : 1u);
  }
  json_object_put(root);
}

Test(bench, roundtrip_json, .timeout = 300) {
  json_object *root;
  json_object *s = run_suite("roundtrip", "", &root, "roundtrip");
  cr_assert_eq(json_object_array_length(get(s, "results")), 3);
  static const char *const mets[] = {"total_us", "submit_us", "doorbell_to_start_us",
                                     "start_to_end_us", "end_to_wake_us"};
  for (int p = 0; p < 2; p++) {
    json_object *r = find_result(s, p ? "rocr-textbook" : "hsad", "", 0);
    for (int m = 0; m < 5; m++) check_metric(r, mets[m], "us", 2);
  }
  json_object *hip = find_result(s, "hip", "", 0);
  check_metric(hip, "total_us", "us", 2);
  check_metric(hip, "submit_us", "us", 2);
  cr_assert_eq(json_object_object_length(get(hip, "metrics")), 2);
  json_object_put(root);
}

Test(bench, producers_json, .timeout = 300) {
  json_object *root;
  json_object *s = run_suite("producers", "", &root, "producers");
  static const char *const paths[] = {"hsad", "rocr-textbook", "hip"};
  cr_assert_eq(json_object_array_length(get(s, "results")), 3 * 2 * 4);
  for (int p = 0; p < 3; p++)
    for (int l = 0; l < 2; l++)
      for (int t = 1; t <= 8; t *= 2) {
        json_object *r = find_result(s, paths[p], l ? "queues=each" : "queues=shared", t);
        cr_assert_str_eq(json_object_get_string(get(get(r, "x"), "name")), "threads");
        check_metric(r, "ns_per_submit", "ns", 2);
        check_metric(r, "submits_per_s", "submits_per_s", 2);
      }
  json_object_put(root);
}

Test(bench, barrier_json, .timeout = 300) {
  json_object *root;
  json_object *s = run_suite("barrier", "", &root, "barrier");
  static const char *const paths[] = {"hsad", "rocr-textbook", "hip"};
  cr_assert_eq(json_object_array_length(get(s, "results")), 3 * 21);
  for (int p = 0; p < 3; p++) {
    json_object *x = find_result(s, paths[p], "cross-queue", 0);
    cr_assert_null(get(x, "x"));
    check_metric(x, "edge_submit_us", "us", 2);
    check_metric(x, "latency_us", "us", 2);
    for (int k = 1; k <= 20; k++) {
      json_object *r = find_result(s, paths[p], "", k);
      cr_assert_str_eq(json_object_get_string(get(get(r, "x"), "name")), "deps");
      check_metric(r, "submit_us", "us", 2);
      check_metric(r, "latency_us", "us", 2);
    }
  }
  json_object_put(root);
}

/* memory suites: copy (quick run: 4 KiB..4 MiB), pool (3 sizes); every path measured, the
 * crossovers reported on the auto row, the pool's counters on the pool row */
Test(bench, copy_json, .timeout = 300) {
  json_object *root;
  json_object *s = run_suite("copy", "", &root, "copy");
  static const char *const paths[] = {"pinned", "staged", "pipelined", "pinned-in-place", "auto",
                                      "async", "async-deferred", "hip-pinned", "hip-pageable"};
  cr_assert_eq(json_object_array_length(get(s, "results")), 9 * 6);
  for (int p = 0; p < 9; p++)
    for (double x = 4096; x <= 4 << 20; x *= 4) {
      json_object *r = find_result(s, paths[p], "", x);
      cr_assert_str_eq(json_object_get_string(get(get(r, "x"), "name")), "bytes");
      check_metric(r, "us", "us", 2);
      check_metric(r, "GBps", "GB/s", 2);
    }
  const char *note = json_object_get_string(get(find_result(s, "auto", "", 4096), "note"));
  cr_assert(note && !strncmp(note, "measured crossovers: staged <= ", 31), "%s", note);
  json_object_put(root);
}

/* pool: every path timed at 3 sizes; callgrind counts instructions per 4 KiB stream-ordered
 * pair: plain (the free names the queue's timeline, no packet), after a dispatch (rule 2's
 * barrier-AND at each reuse: more) and HIP's hipMalloc + hipFree (more than the plain pair:
 * issue 21's target) */
Test(bench, pool_json, .timeout = 600) {
  json_object *root;
  json_object *s = run_suite("pool", "--callgrind-count 100", &root, "pool");
  static const char *const paths[] = {"pool", "pool-4threads", "hsa-pool", "hip", "stream",
                                      "hip-stream"};
  cr_assert_eq(json_object_array_length(get(s, "results")), 6 * 3 + 1);
  static const double sizes[] = {4096, 1 << 20, 64 << 20};
  for (int p = 0; p < 6; p++)
    for (int k = 0; k < 3; k++)
      check_metric(find_result(s, paths[p], "", sizes[k]), "ns_per_alloc_free", "ns", 2);
  const char *note = json_object_get_string(get(find_result(s, "pool", "", 4096), "note"));
  cr_assert(note && !strncmp(note, "pool counters over the suite: ", 30), "%s", note);
#ifndef __SANITIZE_ADDRESS__ /* (an ASan build runs no callgrind: no instruction rows) */
  json_object *cg[3] = {find_result(s, "stream", "", 4096),
                        find_result(s, "stream", "after-dispatch", 4096),
                        find_result(s, "hip-stream", "", 4096)};
  double ir[3];
  for (int i = 0; i < 3; i++) {
    check_metric(cg[i], "instructions_per_pair", "instructions", 1);
    ir[i] = json_object_get_double(get(get(get(cg[i], "metrics"), "instructions_per_pair"),
                                       "median"));
  }
  cr_assert(ir[0] > 0 && ir[0] < ir[1] && ir[0] < ir[2], "stream %.0f, after a dispatch %.0f, "
            "hip %.0f instructions per pair", ir[0], ir[1], ir[2]);
#endif
  json_object_put(root);
}

Test(bench, absent_hip_is_a_note, .timeout = 300) {
  char *out, *err;
  int rc = sh2("HSAD_BENCH_HIP=/nonexistent/hsad-bench-hip " HSAD_BIN
               " bench dispatch --json --rounds 1 --count 1000 --no-callgrind", &out, &err);
  cr_assert_eq(rc, 0, "%s\n%s", out, err);
  json_object *root, *suites = parse_run(out, &root, 1);
  json_object *s = json_object_array_get_idx(suites, 0);
  json_object *rs = get(s, "results");
  for (size_t i = 0; i < json_object_array_length(rs); i++) {
    json_object *r = json_object_array_get_idx(rs, i);
    bool hip = !strcmp(json_object_get_string(get(r, "path")), "hip");
    cr_assert_eq(json_object_get_boolean(get(r, "ok")), !hip, "%s", json_object_to_json_string(r));
    cr_assert_not(json_object_get_boolean(get(r, "results_checked"))); /* no results to check */
    cr_assert_not(json_object_get_boolean(get(r, "wrong")));
    if (hip) {
      cr_assert_str_eq(json_object_get_string(get(r, "note")),
                       "HIP path absent: /nonexistent/hsad-bench-hip not found (built with "
                       "hipcc; in the source tree: make build/bin/hsad-bench-hip)");
      cr_assert_eq(json_object_object_length(get(r, "metrics")), 0);
    } else {
      check_metric(r, "ns_per_submit", "ns", 1);
    }
  }
  /* the ratios against hip are left out, the others stay */
  json_object *q = get(s, "ratios");
  cr_assert_eq(json_object_array_length(q), 2);
  json_object_put(root);
  free(out);
  free(err);
  /* the table says it too */
  rc = sh2("HSAD_BENCH_HIP=/nonexistent/hsad-bench-hip " HSAD_BIN
           " bench dispatch --rounds 1 --count 1000 --no-callgrind", &out, &err);
  cr_assert_eq(rc, 0, "%s\n%s", out, err);
  char want[256];
  snprintf(want, sizeof want, "\n%-14s %-24s not measured: HIP path absent: "
           "/nonexistent/hsad-bench-hip not found", "hip", "");
  cr_assert_not_null(strstr(out, want), "%s", out);
  /* a ratio row's columns stand under the header's: the name across path and config, the
   * metric under metric, the median right-aligned under median, unit x */
  const char *hdr = strstr(out, "\npath ");
  cr_assert_not_null(hdr, "%s", out);
  char hwant[256];
  snprintf(hwant, sizeof hwant, "\n%-14s %-24s %-26s %10s %10s %10s  %s\n", "path", "config",
           "metric", "min", "median", "max", "unit");
  cr_assert(!strncmp(hdr, hwant, strlen(hwant)), "%s", out);
  const char *row = strstr(out, "\nratio hsad / rocr-textbook ");
  cr_assert_not_null(row, "%s", out);
  snprintf(want, sizeof want, "\n%-39s %-26s %10s ", "ratio hsad / rocr-textbook",
           "ns_per_submit", "");
  size_t pre = strlen(want);
  cr_assert(!strncmp(row, want, pre), "%s", row);
  char *end;
  double v = strtod(row + pre, &end); /* the median, %10.3f */
  cr_assert(v > 0 && end == row + pre + 10, "%s", row);
  snprintf(want, sizeof want, " %10s  x\n", "");
  cr_assert(!strncmp(end, want, strlen(want)), "%s", row);
  cr_assert_eq(end - row, 1 + 14 + 1 + 24 + 1 + 26 + 1 + 10 + 1 + 10,
               "the median ends where the header's median does:\n%s", out);
  free(out);
  free(err);
}

/* graph: 4 graphs x 4 paths, every launch checked (5 per round), callgrind parts per path;
 * hsad's paths order every edge and its update allocates nothing; a HIP path found wrong says
 * how and is left out of the ratios. */
static double median_of(json_object *r, const char *metric) {
  return json_object_get_double(get(get(get(r, "metrics"), metric), "median"));
}

Test(bench, graph_json, .timeout = 120) {
  json_object *root;
  json_object *s = run_suite("graph", "--callgrind-count 1000", &root, "graph");
  cr_assert_str_eq(json_object_get_string(get(s, "params")),
                   "rounds=2 launches=5 callgrind_calls=2 (medians)");
  static const char *const paths[] = {"hsad-graph", "hsad-dispatch", "hip-graph", "hip-stream"};
  static const char *const graphs[] = {"chain10", "dag100", "diamond", "chain100"};
  json_object *rs = get(s, "results");
  cr_assert_eq(json_object_array_length(rs), 16);
  for (int g = 0; g < 4; g++)
    for (int p = 0; p < 4; p++) {
      json_object *r = json_object_array_get_idx(rs, (size_t)(4 * g + p));
      cr_assert_str_eq(json_object_get_string(get(r, "path")), paths[p]);
      cr_assert_str_eq(json_object_get_string(get(r, "config")), graphs[g]);
      cr_assert_null(get(r, "x"));
      cr_assert(json_object_get_boolean(get(r, "ok")), "%s", json_object_to_json_string(r));
      cr_assert(json_object_get_boolean(get(r, "results_checked")), "%s",
                json_object_to_json_string(r));
      check_metric(r, "launch_ns", "ns", 2);
      check_metric(r, "launch_wait_ns", "ns", 2);
      check_metric(r, "violated_edges", "edges", 2);
      check_metric(r, "checked_launches", "launches", 2);
      cr_assert_eq(median_of(r, "checked_launches"), 5);
      bool graph = p == 0 || p == 2, hsad = p < 2;
      if (graph) check_metric(r, "instantiate_us", "us", 2);
      if (hsad) { /* hsad orders what the graph asks, on every launch */
        cr_assert_not(json_object_get_boolean(get(r, "wrong")), "%s", json_object_to_json_string(r));
        cr_assert_eq(median_of(r, "violated_edges"), 0);
        cr_assert_eq(json_object_get_double(get(get(get(r, "metrics"), "violated_edges"), "max")), 0);
      } else if (json_object_get_boolean(get(r, "wrong"))) { /* HIP 5.2.3's dag100 graph */
        const char *note = json_object_get_string(get(r, "note"));
        cr_assert(note && !strncmp(note, "ordering: ", 10) &&
                  strstr(note, " edges each): this path orders less than the graph asks"), "%s", note);
        cr_assert_gt(json_object_get_double(get(get(get(r, "metrics"), "violated_edges"), "max")), 0);
      }
#ifndef __SANITIZE_ADDRESS__
      check_metric(r, "launch_instructions", "instructions", 1);
      check_metric(r, "launch_allocations", "allocations", 1);
      cr_assert_gt(median_of(r, "launch_instructions"), 0);
      if (graph) {
        check_metric(r, "update_instructions", "instructions", 1);
        check_metric(r, "update_allocations", "allocations", 1);
        check_metric(r, "instantiate_instructions", "instructions", 1);
        cr_assert_gt(median_of(r, "update_instructions"), 0);
      }
      if (hsad) cr_assert_eq(median_of(r, "launch_allocations"), 0, "%s", paths[p]);
      if (p == 0) cr_assert_eq(median_of(r, "update_allocations"), 0); /* patched in place */
      bool extra = g == 1 || g == 3; /* dag100 and chain100 against chain10 */
      if (extra) check_metric(r, "instructions_per_extra_node", "instructions", 1);
      cr_assert_eq(json_object_object_length(get(r, "metrics")),
                   (size_t)(graph ? 10 : 6) + extra, "%s", json_object_to_json_string(r));
#endif
    }
  /* ratios: hsad-graph against hip-graph and hsad-dispatch, none against a wrong row */
  json_object *q = get(s, "ratios");
  cr_assert_gt(json_object_array_length(q), 0);
  for (size_t i = 0; i < json_object_array_length(q); i++) {
    json_object *o = json_object_array_get_idx(q, i);
    const char *name = json_object_get_string(get(o, "name"));
    cr_assert(!strcmp(name, "hsad-graph / hip-graph") || !strcmp(name, "hsad-graph / hsad-dispatch"),
              "%s", name);
    const char *b = strchr(name, '/') + 2;
    json_object *rb = find_result(s, b, json_object_get_string(get(o, "config")), 0);
    cr_assert_not(json_object_get_boolean(get(rb, "wrong")), "%s", json_object_to_json_string(o));
  }
  json_object_put(root);
}

/* graph without HIP: the hip rows are notes, hsad's paths are measured and checked */
Test(bench, graph_absent_hip_is_a_note, .timeout = 60) {
  char *out, *err;
  int rc = sh2("HSAD_BENCH_HIP=/nonexistent/hsad-bench-hip " HSAD_BIN
               " bench graph --json --rounds 1 --count 1000 --no-callgrind", &out, &err);
  cr_assert_eq(rc, 0, "%s\n%s", out, err);
  json_object *root, *suites = parse_run(out, &root, 1);
  json_object *rs = get(json_object_array_get_idx(suites, 0), "results");
  cr_assert_eq(json_object_array_length(rs), 16);
  for (size_t i = 0; i < 16; i++) {
    json_object *r = json_object_array_get_idx(rs, i);
    bool hip = !strncmp(json_object_get_string(get(r, "path")), "hip-", 4);
    cr_assert_eq(json_object_get_boolean(get(r, "ok")), !hip, "%s", json_object_to_json_string(r));
    cr_assert_eq(json_object_get_boolean(get(r, "results_checked")), !hip);
    if (hip)
      cr_assert_str_eq(json_object_get_string(get(r, "note")),
                       "HIP path absent: /nonexistent/hsad-bench-hip not found (built with "
                       "hipcc; in the source tree: make build/bin/hsad-bench-hip)");
    else
      check_metric(r, "violated_edges", "edges", 1);
  }
  json_object_put(root);
  free(out);
  free(err);
}

/* --plot: one PNG per suite that file(1) recognises; --csv; nothing left in TMPDIR. */
Test(bench, all_plot_csv_and_no_temporary_files, .timeout = 600) {
  char dir[] = "/tmp/test-bench-plot-XXXXXX", tmp[] = "/tmp/test-bench-tmp-XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  cr_assert_not_null(mkdtemp(tmp));
  char cmd[1024], *out, *err;
  snprintf(cmd, sizeof cmd, "TMPDIR=%s %s bench all --csv --rounds 1 --count 1000 "
           "--callgrind-count 1000 --plot %s/png", tmp, HSAD_BIN, dir);
  int rc = sh2(cmd, &out, &err);
  cr_assert_eq(rc, 0, "%s\n%s", out, err);
  cr_assert_eq(strncmp(out, "suite,path,config,metric,unit,min,median,max,samples,device,emulated,"
                            "note\n", 72), 0, "%s", out);
#ifndef __SANITIZE_ADDRESS__ /* (an ASan build runs no callgrind) */
  cr_assert_not_null(strstr(out, "\ndispatch,hsad,,instructions_per_submit,instructions,"), "%s", out);
#endif
  cr_assert_not_null(strstr(out, "\nproducers,hsad,threads=8 queues=each,ns_per_submit,ns,"), "%s", out);
  cr_assert_not_null(strstr(out, "\nbarrier,rocr-textbook,deps=20,submit_us,us,"), "%s", out);
  cr_assert_not_null(strstr(out, "\nroundtrip,hip,,total_us,us,"), "%s", out);
  static const char *const suites[] = {"dispatch", "roundtrip", "producers", "barrier", "copy",
                                       "pool", "graph"};
  cr_assert_not_null(strstr(out, "\ngraph,hsad-graph,dag100,launch_ns,ns,"), "%s", out);
  for (int i = 0; i < 7; i++) {
    char f[512], *fo, *fe;
    snprintf(f, sizeof f, "file -b %s/png/%s.png", dir, suites[i]);
    cr_assert_eq(sh2(f, &fo, &fe), 0);
    cr_assert_eq(strncmp(fo, "PNG image data, 960 x 560,", 26), 0, "%s: %s", suites[i], fo);
    free(fo);
    free(fe);
    snprintf(f, sizeof f, "%s/png/%s.png", dir, suites[i]);
    unlink(f);
  }
  snprintf(cmd, sizeof cmd, "%s/png", dir);
  cr_assert_eq(rmdir(cmd), 0);
  cr_assert_eq(rmdir(dir), 0);
  /* comgr's work directory was removed, callgrind wrote to a memfd */
  DIR *d = opendir(tmp);
  cr_assert_not_null(d);
  struct dirent *e;
  while ((e = readdir(d)))
    cr_assert(!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."), "left in TMPDIR: %s",
              e->d_name);
  closedir(d);
  rmdir(tmp);
  free(out);
  free(err);
}

/* SIGINT: the run stops, prints what it measured (JSON "interrupted": true) and exits 130. */
Test(bench, sigint_prints_what_was_measured, .timeout = 300) {
  int out[2], errp[2];
  cr_assert_eq(pipe(out), 0);
  cr_assert_eq(pipe(errp), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(errp[1], 2);
    close(out[0]);
    close(errp[0]);
    execl(HSAD_BIN, HSAD_BIN, "bench", "dispatch", "barrier", "--json", "--rounds", "64",
          "--count", "1000", "--no-callgrind", (char *)NULL);
    _exit(127);
  }
  close(out[1]);
  close(errp[1]);
  /* wait for the first finished round, then ^C */
  FILE *e = fdopen(errp[0], "r");
  char line[512];
  bool seen = false;
  while (!seen && fgets(line, sizeof line, e)) seen = strstr(line, "round 1/64") != NULL;
  cr_assert(seen);
  kill(pid, SIGINT);
  FILE *o = fdopen(out[0], "r");
  size_t cap = 1 << 20, n = 0, got;
  char *buf = malloc(cap);
  while ((got = fread(buf + n, 1, cap - n - 1, o)) > 0) n += got;
  buf[n] = '\0';
  int st = 0;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 130, "status %d", st);
  bool said = false;
  while (fgets(line, sizeof line, e)) said |= !strcmp(line, "hsad bench: interrupted by SIGINT: printing what was measured\n");
  cr_assert(said);
  json_object *root = json_tokener_parse(buf);
  cr_assert_not_null(root, "%s", buf);
  cr_assert(json_object_get_boolean(get(root, "interrupted")));
  json_object *s = json_object_array_get_idx(get(root, "suites"), 0);
  cr_assert_str_eq(json_object_get_string(get(s, "suite")), "dispatch");
  cr_assert(json_object_get_boolean(get(s, "interrupted")));
  /* round 1 was measured for the in-process paths */
  json_object *r = json_object_array_get_idx(get(s, "results"), 0);
  cr_assert_str_eq(json_object_get_string(get(r, "path")), "hsad");
  json_object *m = get(get(r, "metrics"), "ns_per_submit");
  cr_assert_geq(json_object_array_length(get(m, "samples")), 1u);
  json_object_put(root);
  fclose(o);
  fclose(e);
  free(buf);
}

Test(bench, usage_errors, .timeout = 60) {
  char *out, *err;
  cr_assert_eq(sh2(HSAD_BIN " bench nope", &out, &err), 2);
  cr_assert_str_eq(err, "hsad bench: unknown suite 'nope' (this build has: dispatch, roundtrip, "
                        "producers, barrier, copy, pool, graph, all)\n");
  free(out);
  free(err);
  cr_assert_eq(sh2(HSAD_BIN " bench --rounds 0", &out, &err), 2);
  cr_assert_str_eq(err, "hsad bench: --rounds 0: expected an integer from 1 to 64\n");
  free(out);
  free(err);
  cr_assert_eq(sh2(HSAD_BIN " bench --bogus", &out, &err), 2);
  cr_assert_str_eq(err, "hsad bench: unknown option '--bogus' (see hsad bench --help)\n");
  free(out);
  free(err);
  cr_assert_eq(sh2(HSAD_BIN " bench --rounds", &out, &err), 2);
  cr_assert_str_eq(err, "hsad bench: option '--rounds' needs a value (see hsad bench --help)\n");
  free(out);
  free(err);
  /* with --json the error is one JSON object on stdout, stderr stays empty */
  cr_assert_eq(sh2(HSAD_BIN " bench --json --csv", &out, &err), 2);
  cr_assert_str_eq(out, "{ \"error\": { \"command\": \"bench\", \"status\": \"usage\", "
                        "\"exit_code\": 2, \"message\": \"--json and --csv exclude each other\" } }\n");
  cr_assert_str_eq(err, "");
  free(out);
  free(err);
  /* --plot naming a file that exists and is no folder: refused before any suite runs (it ran
   * every suite, then gnuplot wrote the PNG to stdout and the message asked whether gnuplot was
   * installed; found by a fresh-eyes run) */
  char file[] = "/tmp/test-bench-notdir-XXXXXX";
  int fd = mkstemp(file);
  cr_assert(fd >= 0);
  close(fd);
  char cmd[256];
  snprintf(cmd, sizeof cmd, HSAD_BIN " bench dispatch --rounds 1 --count 100 --no-callgrind "
           "--plot %s", file);
  cr_assert_eq(sh2(cmd, &out, &err), 2);
  char want[256];
  snprintf(want, sizeof want, "hsad bench: --plot %s: not a directory (--plot DIR writes one "
           "PNG per suite into DIR)\n", file);
  cr_assert_str_eq(err, want);
  cr_assert_str_eq(out, "");
  free(out);
  free(err);
  struct stat st;
  cr_assert_eq(stat(file, &st), 0);
  cr_assert_eq(st.st_size, 0, "the file was left as it was");
  unlink(file);
  cr_assert_eq(sh2(HSAD_BIN " bench nope --json", &out, &err), 2);
  cr_assert_str_eq(out, "{ \"error\": { \"command\": \"bench\", \"status\": \"usage\", "
                        "\"exit_code\": 2, \"message\": \"unknown suite 'nope' (this build has: "
                        "dispatch, roundtrip, producers, barrier, copy, pool, graph, all)\" } }\n");
  free(out);
  free(err);
}

/* A callgrind child that cannot finish within its deadline is reported (which stage) and
 * stopped with its process group: 9,000,000 submits and more under callgrind cannot finish in
 * 2 s. */
Test(bench, stuck_callgrind_child_is_reported_and_stopped, .timeout = 300) {
#ifdef __SANITIZE_ADDRESS__
  cr_skip_test("an AddressSanitizer build runs no callgrind");
#endif
  /* a count of our own, so that other runs of this test on the machine are not mistaken for
   * leftovers of this one */
  char *out, *err, cmdl[512], mark[64];
  unsigned cnt = 9000000u + (unsigned)getpid() % 1000000u;
  snprintf(cmdl, sizeof cmdl, "HSAD_BENCH_HIP=/nonexistent/hsad-bench-hip %s bench dispatch "
           "--json --rounds 1 --count 1000 --callgrind-count %u --timeout 2", HSAD_BIN, cnt);
  snprintf(mark, sizeof mark, "--count %u --device", cnt);
  int rc = sh2(cmdl, &out, &err);
  cr_assert_eq(rc, 0, "%s\n%s", out, err);
  json_object *root, *suites = parse_run(out, &root, 1);
  json_object *rs = get(json_object_array_get_idx(suites, 0), "results");
  for (size_t i = 0; i < 3; i++) {
    json_object *r = json_object_array_get_idx(rs, i);
    cr_assert(json_object_get_boolean(get(r, "ok")), "%s", json_object_to_json_string(r));
    check_metric(r, "ns_per_submit", "ns", 1); /* the timing stays */
    json_object *m = NULL;
    cr_assert_not(json_object_object_get_ex(get(r, "metrics"), "instructions_per_submit", &m));
    const char *note = json_object_get_string(get(r, "note"));
    cr_assert_not_null(note, "%s", json_object_to_json_string(r));
    bool startup = !strcmp(note, "callgrind: no progress within 6 s in start-up (ROCr and kfd-emu "
                                 "under valgrind); stopped (valgrind --fair-sched=yes)");
    bool measure = !strcmp(note, "callgrind: no progress within 2 s in measure; stopped "
                                 "(valgrind --fair-sched=yes)");
    cr_assert(startup || measure, "%s", note);
  }
  json_object_put(root);
  /* nothing of the children is left */
  DIR *d = opendir("/proc");
  struct dirent *e;
  while ((e = readdir(d))) {
    char path[300], cmd[4096];
    snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
    FILE *f = fopen(path, "r");
    if (!f) continue;
    size_t n = fread(cmd, 1, sizeof cmd - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i++)
      if (!cmd[i]) cmd[i] = ' ';
    cmd[n] = '\0';
    cr_assert_null(strstr(cmd, mark), "left running: pid %s: %s",
                   e->d_name, cmd);
  }
  closedir(d);
  free(out);
  free(err);
}
