/* bench_nvidia_plot.h - hsad-bench-nvidia --plot DIR (issue 22), included by bench_nvidia.c
 * before its report helpers: every row report_b prints is kept (bench_row_keep), and at the
 * end each suite gets DIR/SUITE.dat (one row per line: "path kernel", median, min, max in ns)
 * and DIR/SUITE.gp, a gnuplot script drawing the medians as bars with min..max error bars on a
 * log axis into DIR/SUITE.png. gnuplot (HSAD_GNUPLOT, else the first `gnuplot` on PATH) then
 * runs each script in DIR; where there is none (the lent H200 has no package registry), the
 * scripts and data stay, it says so on stdout ("plot: no gnuplot ...: wrote ..."), and the run
 * does not fail. A failing gnuplot is reported (its exit status) and fails the run. */
#include <errno.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct bench_row {
  char suite[16], label[80];
  double min, med, max;
} bench_row_t;

static bench_row_t *bench_rows;
static size_t bench_nrows, bench_caprows;

static void bench_row_keep(const char *suite, const char *path, const char *kernel, double min,
                           double med, double max) {
  if (bench_nrows == bench_caprows) {
    size_t cap = bench_caprows ? 2 * bench_caprows : 256;
    bench_row_t *n = realloc(bench_rows, cap * sizeof *n);
    if (!n) return; /* out of memory: the plot lacks the row; the table and JSON have it */
    bench_rows = n, bench_caprows = cap;
  }
  bench_row_t *r = &bench_rows[bench_nrows++];
  snprintf(r->suite, sizeof r->suite, "%s", suite);
  snprintf(r->label, sizeof r->label, "%s %s", path, kernel);
  r->min = min, r->med = med, r->max = max;
}

/* The gnuplot to run: HSAD_GNUPLOT, else `gnuplot` found on PATH; NULL when none. */
static const char *bench_gnuplot(char *buf, size_t n) {
  const char *env = getenv("HSAD_GNUPLOT");
  if (env && *env) return access(env, X_OK) == 0 ? env : NULL;
  const char *path = getenv("PATH");
  for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
    const char *e = strchr(p, ':');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    snprintf(buf, n, "%.*s/gnuplot", (int)len, p);
    if (len && access(buf, X_OK) == 0) return buf;
    p += len + (e != NULL);
  }
  return NULL;
}

/* DIR/SUITE.dat and DIR/SUITE.gp for one suite; 0, or 1 with the reason on stderr. */
static int bench_plot_write(const char *dir, const char *suite, const char *title) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s.dat", dir, suite);
  FILE *d = fopen(path, "w");
  if (!d) {
    fprintf(stderr, "hsad-bench-nvidia: --plot: %s: %s\n", path, strerror(errno));
    return 1;
  }
  fprintf(d, "# %s: label, median, min, max (ns)\n", suite);
  for (size_t i = 0; i < bench_nrows; i++)
    if (!strcmp(bench_rows[i].suite, suite))
      fprintf(d, "\"%s\" %.1f %.1f %.1f\n", bench_rows[i].label, bench_rows[i].med,
              bench_rows[i].min, bench_rows[i].max);
  fclose(d);
  snprintf(path, sizeof path, "%s/%s.gp", dir, suite);
  FILE *g = fopen(path, "w");
  if (!g) {
    fprintf(stderr, "hsad-bench-nvidia: --plot: %s: %s\n", path, strerror(errno));
    return 1;
  }
  fprintf(g, "# gnuplot %s.gp (in this folder) draws %s.png from %s.dat\n"
          "set terminal pngcairo size 1400,720 noenhanced\nset output '%s.png'\n"
          "set title \"hsad-bench-nvidia %s: median ns, min..max over rounds\\n%s\"\n"
          "set ylabel 'ns'\nset logscale y\nset grid ytics\nset style fill solid 0.5\n"
          "set boxwidth 0.6\nset xtics rotate by 45 right font ',8'\nset bmargin 12\n"
          "plot '%s.dat' using 0:2:xtic(1) with boxes notitle, "
          "'' using 0:2:3:4 with yerrorbars lc rgb 'black' pt -1 notitle\n",
          suite, suite, suite, suite, suite, title, suite);
  fclose(g);
  return 0;
}

/* Every suite's files, then gnuplot on each when there is one. 0, or 1 on a failure. */
static int bench_plot(const char *dir, const char *title) {
  if (mkdir(dir, 0777) && errno != EEXIST) {
    fprintf(stderr, "hsad-bench-nvidia: --plot %s: cannot create the folder: %s\n", dir,
            strerror(errno));
    return 1;
  }
  char gbuf[4096], list[1024] = "";
  const char *gp = bench_gnuplot(gbuf, sizeof gbuf);
  int rc = 0;
  for (size_t i = 0; i < bench_nrows; i++) {
    const char *s = bench_rows[i].suite;
    size_t j = 0;
    while (j < i && strcmp(bench_rows[j].suite, s)) j++;
    if (j < i) continue; /* done */
    if (bench_plot_write(dir, s, title)) {
      rc = 1;
      continue;
    }
    size_t l = strlen(list);
    snprintf(list + l, sizeof list - l, "%s%s", l ? "," : "", s);
    if (!gp) continue;
    pid_t pid = fork();
    if (pid == 0) {
      char script[64];
      snprintf(script, sizeof script, "%s.gp", s);
      if (chdir(dir) == 0) execl(gp, gp, script, (char *)NULL);
      _exit(127);
    }
    int st = -1;
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
      fprintf(stderr, "hsad-bench-nvidia: --plot: %s %s/%s.gp failed (status %d)\n", gp, dir, s,
              st);
      rc = 1;
      continue;
    }
    printf("plot      %s/%s.png\n", dir, s);
  }
  if (!gp)
    printf("plot      no gnuplot (HSAD_GNUPLOT, PATH): wrote %s/{%s}.gp and .dat; run "
           "`gnuplot NAME.gp` in %s where gnuplot is installed\n", dir, list, dir);
  return rc;
}
