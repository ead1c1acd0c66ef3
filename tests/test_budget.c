/* test_budget.c - the dispatch path's instruction budget: instructions per submit of
 * hsad_kernel_dispatch and hsad_prepared_dispatch, measured through the shared libhsad.so as
 * users link it (tests/budget_dispatch.c under valgrind --tool=callgrind; deterministic), may
 * not exceed the counts committed in tests/data/dispatch_budget.txt by more than 10%.
 *
 * A change that makes the path cheaper should lower the committed count (the test prints the
 * measured figure); one that makes it dearer by more than 10% fails here. Skipped, with the
 * reason, where valgrind is not installed (scripts/deps.sh installs it) or under
 * AddressSanitizer (valgrind cannot run such an executable). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef BUDGET_BIN
#define BUDGET_BIN "build/tests/budget/budget_dispatch"
#endif
#ifndef HSAD_SRCDIR
#define HSAD_SRCDIR "."
#endif
#define BUDGET_FILE HSAD_SRCDIR "/tests/data/dispatch_budget.txt"
#define BUDGET_COUNT 1000 /* submits measured */

static const char *valgrind_path(void) {
  static const char *const where[] = {"/usr/bin/valgrind", "/usr/local/bin/valgrind"};
  for (size_t i = 0; i < sizeof where / sizeof where[0]; i++)
    if (access(where[i], X_OK) == 0) return where[i];
  return NULL;
}

/* The committed budget of (path, kernel) in instructions per submit; fails if absent. */
static double committed(const char *path, const char *kernel) {
  FILE *f = fopen(BUDGET_FILE, "r");
  cr_assert_not_null(f, "cannot open %s", BUDGET_FILE);
  char line[256], p[64], k[64];
  double ir = -1, v;
  while (fgets(line, sizeof line, f))
    if (line[0] != '#' && sscanf(line, "%63s %63s %lf", p, k, &v) == 3 && !strcmp(p, path) &&
        !strcmp(k, kernel))
      ir = v;
  fclose(f);
  cr_assert_gt(ir, 0, "%s has no budget for %s %s", BUDGET_FILE, path, kernel);
  return ir;
}

/* Runs the budget program for (path, kernel) under callgrind, collecting inside the submit
 * function only; returns its instructions per submit. */
static double measure(const char *path, const char *kernel) {
  const char *vg = valgrind_path();
  char out[] = "/tmp/hsad-budget.XXXXXX";
  int fd = mkstemp(out);
  cr_assert_geq(fd, 0, "mkstemp");
  close(fd);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s --tool=callgrind --fair-sched=yes --instr-atstart=no "
           "--toggle-collect=hsad_kernel_dispatch --toggle-collect=hsad_prepared_dispatch "
           "--callgrind-out-file=%s %s %s %d %s 2>&1", vg, out, BUDGET_BIN, path, BUDGET_COUNT,
           kernel);
  FILE *p = popen(cmd, "r");
  cr_assert_not_null(p, "popen %s", cmd);
  char text[8192] = "";
  size_t n = fread(text, 1, sizeof text - 1, p);
  text[n] = '\0';
  int st = pclose(p);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed (%d): %s", cmd, st, text);
  cr_assert_not_null(strstr(text, "\nok\n"), "%s: no 'ok': %s", cmd, text);
  FILE *f = fopen(out, "r");
  cr_assert_not_null(f, "no callgrind profile %s", out);
  char line[512];
  double ir = -1, v;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "totals: %lf", &v) == 1 || sscanf(line, "summary: %lf", &v) == 1) ir = v;
  fclose(f);
  unlink(out);
  cr_assert_gt(ir, 0, "callgrind collected nothing inside the submit function: %s", cmd);
  return ir / BUDGET_COUNT;
}

static void check(const char *path, const char *kernel) {
#ifdef __SANITIZE_ADDRESS__
  cr_skip_test("valgrind cannot run an AddressSanitizer build");
#endif
  if (!valgrind_path()) cr_skip_test("valgrind is not installed (scripts/deps.sh installs it)");
  double want = committed(path, kernel), got = measure(path, kernel);
  cr_log_info("%s %s: %.2f instructions per submit (committed %.0f)", path, kernel, got, want);
  cr_expect_leq(got, want * 1.10, "%s %s: %.2f instructions per submit, more than 10%% above "
                "the committed %.0f (%s)", path, kernel, got, want, BUDGET_FILE);
}

Test(budget, dispatch_vector_add_v5, .timeout = 120) { check("dispatch", "vector_add-v5"); }
Test(budget, prepared_vector_add_v5, .timeout = 120) { check("prepared", "vector_add-v5"); }
Test(budget, dispatch_vector_add_v4, .timeout = 120) { check("dispatch", "vector_add-v4"); }
Test(budget, prepared_vector_add_v4, .timeout = 120) { check("prepared", "vector_add-v4"); }
Test(budget, dispatch_empty, .timeout = 120) { check("dispatch", "empty-v5"); }
Test(budget, steady_vector_add_v5, .timeout = 120) { check("steady", "vector_add-v5"); }
Test(budget, steady_vector_add_v4, .timeout = 120) { check("steady", "vector_add-v4"); }
Test(budget, steady_empty, .timeout = 120) { check("steady", "empty-v5"); }
Test(budget, prepared_empty, .timeout = 120) { check("prepared", "empty-v5"); }
