/* test_mutation_patches.c - the deliberate bugs of tests/mutation/ (`make mutation`) stay
 * usable: each patch still applies to the tree (`git apply --check`, no build), carries its
 * header (contract step, bug, model), and together they cover steps 1-10 of the submit contract
 * of hsa-dispatch/hsad_queue.h. A refactor that makes a patch stale fails here. */
#include <criterion/criterion.h>
#include <glob.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#ifndef HSAD_SRCDIR
#define HSAD_SRCDIR "."
#endif

/* Runs a shell command in the source tree; returns its exit status, output in out. */
static int run(const char *cmd, char *out, size_t cap) {
  char full[2048];
  snprintf(full, sizeof full, "cd '%s' && %s 2>&1", HSAD_SRCDIR, cmd);
  FILE *f = popen(full, "r");
  cr_assert_not_null(f, "popen %s", full);
  size_t n = fread(out, 1, cap - 1, f);
  out[n] = 0;
  int st = pclose(f);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static glob_t patches(void) {
  glob_t g;
  cr_assert_eq(glob(HSAD_SRCDIR "/tests/mutation/*.patch", 0, NULL, &g), 0,
               "no patch in " HSAD_SRCDIR "/tests/mutation");
  return g;
}

Test(mutation_patches, each_applies_to_the_tree, .timeout = 60) {
  glob_t g = patches();
  char cmd[1024], out[4096];
  for (size_t i = 0; i < g.gl_pathc; i++) {
    snprintf(cmd, sizeof cmd, "git apply --check '%s'", g.gl_pathv[i]);
    int st = run(cmd, out, sizeof out);
    cr_expect_eq(st, 0, "%s is stale (refresh it against the tree): %s", g.gl_pathv[i], out);
    cr_expect_str_empty(out, "%s: %s", g.gl_pathv[i], out);
  }
  /* the script's own check agrees */
  char want[64];
  snprintf(want, sizeof want, "%zu patches, 0 stale\n", g.gl_pathc);
  cr_assert_eq(run("scripts/mutation.sh --check", out, sizeof out), 0, "%s", out);
  cr_assert_str_eq(out, want);
  globfree(&g);
}

Test(mutation_patches, headers_cover_steps_1_to_10, .timeout = 60) {
  glob_t g = patches();
  bool step[11] = {false};
  for (size_t i = 0; i < g.gl_pathc; i++) {
    FILE *f = fopen(g.gl_pathv[i], "r");
    cr_assert_not_null(f, "%s", g.gl_pathv[i]);
    char line[512];
    bool has_step = false, has_bug = false, has_models = false;
    while (fgets(line, sizeof line, f) && line[0] == '#') {
      int s;
      if (sscanf(line, "# Step: %d", &s) == 1 && s >= 1 && s <= 10) step[s] = true;
      has_step |= strncmp(line, "# Step: ", 8) == 0;
      has_bug |= strncmp(line, "# Bug: ", 7) == 0;
      has_models |= strncmp(line, "# Models: ", 10) == 0;
    }
    fclose(f);
    cr_expect(has_step && has_bug && has_models, "%s: header lacks '# Step:', '# Bug:' or "
              "'# Models:'", g.gl_pathv[i]);
  }
  for (int s = 1; s <= 10; s++) cr_expect(step[s], "no mutation of contract step %d", s);
  globfree(&g);
}
