/* bench_report.c - output of hsad bench: table, JSON, CSV, gnuplot PNGs.
 *
 * JSON schema "hsad-bench/1" (one object for the whole run, every suite alike):
 *   {"schema": "hsad-bench/1",
 *    "device": {"index": 0, "isa": "gfx90a", "emulated": true},
 *    "time_note": "kfd-emu: ... host-side costs ..." | null (real GPU),
 *    "interrupted": false,                     (SIGINT/SIGTERM: what was measured so far)
 *    "options": {"rounds": 5, "count": 10000, "callgrind": true, "callgrind_count": 10000},
 *    "suites": [
 *      {"suite": "dispatch", "title": "...", "params": "rounds=5 count=10000 ...",
 *       "interrupted": false,
 *       "results": [                            (one per path, or per path and configuration)
 *         {"path": "hsad", "config": "" | "threads=4 queues=shared",
 *          "x": null | {"name": "threads", "value": 4},
 *          "ok": true, "note": null | "why not measured (or why a figure is missing)",
 *          "results_checked": false | true,    (the path's results were checked every round)
 *          "wrong": false | true,              (a check failed: the note says how; a wrong
 *                                               path's figures are no speed, no ratio uses them)
 *          "metrics": {"ns_per_submit": {"unit": "ns", "min": 20.1, "median": 22.3,
 *                                        "max": 30.2, "samples": [22.3, ...]}, ...}}],
 *       "ratios": [                             (computed per round, then summarised)
 *         {"name": "hsad / rocr-textbook", "config": "", "metric": "ns_per_submit",
 *          "x": null | {"name": "deps", "value": 5},
 *          "min": 0.8, "median": 0.9, "max": 1.1, "samples": [...]}]}]}
 * "samples" has one value per round (one value for deterministic figures such as
 * instructions_per_submit). Units: "ns", "us", "instructions", "submits_per_s", "allocations",
 * "edges", "launches".
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/hsad/bench.h"

static void header(const bench_ctx_t *ctx) {
  printf("hsad bench on device %u, %s%s\n", ctx->devi, ctx->isa, ctx->emulated ? " (kfd-emu)" : "");
  if (ctx->emulated) printf("(" BENCH_EMU_NOTE ")\n");
}

/* "threads=4 queues=shared": the axis value, then the rest of the configuration */
static void cfg_label(char *b, size_t n, const char *xname, double x, const char *config) {
  if (xname) snprintf(b, n, "%s=%g%s%s", xname, x, config[0] ? " " : "", config);
  else snprintf(b, n, "%s", config);
}

static void fmt_num(char *b, size_t n, double v) {
  if (v >= 1e6) snprintf(b, n, "%.0f", v);
  else if (v >= 100) snprintf(b, n, "%.1f", v);
  else snprintf(b, n, "%.3g", v);
}

void bench_report_table(const bench_ctx_t *ctx, const bench_suite_result_t *s, uint32_t n) {
  header(ctx);
  for (uint32_t i = 0; i < n; i++) {
    const bench_suite_result_t *r = &s[i];
    printf("\n== %s: %s%s\n   (%s; min / median / max over rounds)\n", r->suite, r->title,
           r->interrupted ? " [interrupted]" : "", r->params);
    printf("%-14s %-24s %-26s %10s %10s %10s  %s\n", "path", "config", "metric", "min", "median",
           "max", "unit");
    for (uint32_t j = 0; j < r->nrows; j++) {
      const bench_row_t *w = &r->rows[j];
      char cfg[96];
      cfg_label(cfg, sizeof cfg, w->xname, w->x, w->config);
      for (uint32_t k = 0; k < w->nm; k++) {
        const bench_metric_t *m = &w->m[k];
        char a[32], b[32], c[32];
        fmt_num(a, sizeof a, m->min);
        fmt_num(b, sizeof b, m->median);
        fmt_num(c, sizeof c, m->max);
        if (m->n == 1) printf("%-14s %-24s %-26s %10s %10s %10s  %s\n", w->path, cfg,
                              m->name, "", b, "", m->unit);
        else printf("%-14s %-24s %-26s %10s %10s %10s  %s\n", w->path, cfg, m->name, a, b,
                    c, m->unit);
      }
      if (w->absent || w->note[0])
        printf("%-14s %-24s %s%s\n", w->path, cfg,
               w->absent ? "not measured: " : w->wrong ? "WRONG: " : "note: ", w->note);
    }
    for (uint32_t j = 0; j < r->nratios; j++) {
      const bench_ratio_t *q = &r->ratios[j];
      char name[200], cfg[96];
      cfg_label(cfg, sizeof cfg, q->xname, q->x, q->config);
      /* "ratio A / B CONFIG" spans the path and config columns (14 + 1 + 24), the figures
       * stand under min / median / max, the unit is x (times) */
      snprintf(name, sizeof name, "ratio %s%s%s", q->name, cfg[0] ? " " : "", cfg);
      if (q->m.n == 1) printf("%-39s %-26s %10s %10.3f %10s  x\n", name, q->m.name, "",
                              q->m.median, "");
      else printf("%-39s %-26s %10.3f %10.3f %10.3f  x\n", name, q->m.name, q->m.min,
                  q->m.median, q->m.max);
    }
  }
}

static json_object *metric_json(const bench_metric_t *m, bool with_unit) {
  json_object *o = json_object_new_object(), *a = json_object_new_array();
  if (with_unit) json_object_object_add(o, "unit", json_object_new_string(m->unit));
  json_object_object_add(o, "min", json_object_new_double(m->min));
  json_object_object_add(o, "median", json_object_new_double(m->median));
  json_object_object_add(o, "max", json_object_new_double(m->max));
  for (uint32_t i = 0; i < m->n; i++) json_object_array_add(a, json_object_new_double(m->v[i]));
  json_object_object_add(o, "samples", a);
  return o;
}

/* A row's or ratio's "x": {"name": XNAME, "value": X}, or null (NULL) when it has none. */
static json_object *x_json(const char *xname, double x) {
  if (!xname) return NULL;
  json_object *o = json_object_new_object();
  json_object_object_add(o, "name", json_object_new_string(xname));
  json_object_object_add(o, "value", json_object_new_double(x));
  return o;
}

int bench_report_json(const bench_ctx_t *ctx, const bench_suite_result_t *s, uint32_t n,
                      bool interrupted) {
  json_object *root = json_object_new_object();
  json_object_object_add(root, "schema", json_object_new_string("hsad-bench/1"));
  json_object *dev = json_object_new_object();
  json_object_object_add(dev, "index", json_object_new_int((int)ctx->devi));
  json_object_object_add(dev, "isa", json_object_new_string(ctx->isa));
  json_object_object_add(dev, "emulated", json_object_new_boolean(ctx->emulated));
  json_object_object_add(root, "device", dev);
  json_object_object_add(root, "time_note",
                         ctx->emulated ? json_object_new_string(BENCH_EMU_NOTE) : NULL);
  json_object_object_add(root, "interrupted", json_object_new_boolean(interrupted));
  json_object *op = json_object_new_object();
  json_object_object_add(op, "rounds", json_object_new_int((int)ctx->rounds));
  json_object_object_add(op, "count", json_object_new_int((int)ctx->count));
  json_object_object_add(op, "callgrind", json_object_new_boolean(ctx->callgrind));
  json_object_object_add(op, "callgrind_count", json_object_new_int((int)ctx->cg_count));
  json_object_object_add(root, "options", op);
  json_object *suites = json_object_new_array();
  for (uint32_t i = 0; i < n; i++) {
    const bench_suite_result_t *r = &s[i];
    json_object *so = json_object_new_object(), *rows = json_object_new_array(),
                *ratios = json_object_new_array();
    json_object_object_add(so, "suite", json_object_new_string(r->suite));
    json_object_object_add(so, "title", json_object_new_string(r->title));
    json_object_object_add(so, "params", json_object_new_string(r->params));
    json_object_object_add(so, "interrupted", json_object_new_boolean(r->interrupted));
    for (uint32_t j = 0; j < r->nrows; j++) {
      const bench_row_t *w = &r->rows[j];
      json_object *ro = json_object_new_object(), *ms = json_object_new_object();
      json_object_object_add(ro, "path", json_object_new_string(w->path));
      json_object_object_add(ro, "config", json_object_new_string(w->config));
      json_object_object_add(ro, "x", x_json(w->xname, w->x));
      json_object_object_add(ro, "ok", json_object_new_boolean(!w->absent));
      json_object_object_add(ro, "note", w->note[0] ? json_object_new_string(w->note) : NULL);
      json_object_object_add(ro, "results_checked", json_object_new_boolean(w->checked));
      json_object_object_add(ro, "wrong", json_object_new_boolean(w->wrong));
      for (uint32_t k = 0; k < w->nm; k++)
        json_object_object_add(ms, w->m[k].name, metric_json(&w->m[k], true));
      json_object_object_add(ro, "metrics", ms);
      json_object_array_add(rows, ro);
    }
    for (uint32_t j = 0; j < r->nratios; j++) {
      const bench_ratio_t *q = &r->ratios[j];
      json_object *qo = metric_json(&q->m, false);
      json_object_object_add(qo, "name", json_object_new_string(q->name));
      json_object_object_add(qo, "config", json_object_new_string(q->config));
      json_object_object_add(qo, "x", x_json(q->xname, q->x));
      json_object_object_add(qo, "metric", json_object_new_string(q->m.name));
      json_object_array_add(ratios, qo);
    }
    json_object_object_add(so, "results", rows);
    json_object_object_add(so, "ratios", ratios);
    json_object_array_add(suites, so);
  }
  json_object_object_add(root, "suites", suites);
  const char *txt = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
                                                             JSON_C_TO_STRING_NOSLASHESCAPE);
  int rc = txt && printf("%s\n", txt) > 0 ? 0 : -1;
  json_object_put(root);
  return rc;
}

static void csv_field(const char *s) {
  if (!strpbrk(s, ",\"\n")) {
    fputs(s, stdout);
    return;
  }
  putchar('"');
  for (; *s; s++) {
    if (*s == '"') putchar('"');
    putchar(*s);
  }
  putchar('"');
}

void bench_report_csv(const bench_ctx_t *ctx, const bench_suite_result_t *s, uint32_t n) {
  printf("suite,path,config,metric,unit,min,median,max,samples,device,emulated,note\n");
  for (uint32_t i = 0; i < n; i++) {
    const bench_suite_result_t *r = &s[i];
    for (uint32_t j = 0; j < r->nrows; j++) {
      const bench_row_t *w = &r->rows[j];
      for (uint32_t k = 0; k < w->nm || (k == 0 && w->nm == 0); k++) {
        char cfg[96];
        cfg_label(cfg, sizeof cfg, w->xname, w->x, w->config);
        printf("%s,%s,", r->suite, w->path);
        csv_field(cfg);
        if (w->nm) {
          const bench_metric_t *m = &w->m[k];
          printf(",%s,%s,%.4f,%.4f,%.4f,%u,", m->name, m->unit, m->min, m->median, m->max, m->n);
        } else {
          printf(",,,,,,0,");
        }
        printf("%s,%d,", ctx->isa, ctx->emulated);
        csv_field(w->note);
        putchar('\n');
      }
    }
    for (uint32_t j = 0; j < r->nratios; j++) {
      const bench_ratio_t *q = &r->ratios[j];
      char cfg[96];
      cfg_label(cfg, sizeof cfg, q->xname, q->x, q->config);
      printf("%s,", r->suite);
      csv_field(q->name);
      putchar(',');
      csv_field(cfg);
      printf(",%s,ratio,%.4f,%.4f,%.4f,%u,%s,%d,\n", q->m.name, q->m.min, q->m.median, q->m.max,
             q->m.n, ctx->isa, ctx->emulated);
    }
  }
}

/* plot_one's lines: one series per path and configuration (names[0..np)), over the x axis */
static void plot_lines(FILE *g, const bench_suite_result_t *r, const bench_row_t *const *names,
                       uint32_t np) {
  uint32_t used = 0;
  for (uint32_t t = 0; t < np; t++) {
    fprintf(g, "$d%u << EOD\n", t);
    for (uint32_t j = 0; j < r->nrows; j++) {
      bench_row_t *w = &r->rows[j];
      if (strcmp(w->path, names[t]->path) || strcmp(w->config, names[t]->config) || !w->xname)
        continue;
      for (uint32_t k = 0; k < w->nm; k++)
        if (!strcmp(w->m[k].name, r->plot_metric) && w->m[k].n)
          fprintf(g, "%g %g %g %g\n", w->x, w->m[k].median, w->m[k].min, w->m[k].max);
    }
    fprintf(g, "EOD\n");
  }
  fprintf(g, "set xlabel '%s'\nset offsets 0.3, 0.3, 0, 0\nplot ", r->plot_xname);
  for (uint32_t t = 0; t < np; t++) {
    fprintf(g, "%s$d%u using 1:2:3:4 with yerrorlines title '%s%s%s'", used ? ", " : "", t,
            names[t]->path, names[t]->config[0] ? " " : "", names[t]->config);
    used++;
  }
  fprintf(g, "\n");
}

/* plot_one's bars: one bar per row with the metric (a placeholder when none was measured) */
static void plot_bars(FILE *g, const bench_suite_result_t *r) {
  fprintf(g, "$d << EOD\n");
  uint32_t rows = 0;
  for (uint32_t j = 0; j < r->nrows; j++) {
    bench_row_t *w = &r->rows[j];
    for (uint32_t k = 0; k < w->nm; k++)
      if (!strcmp(w->m[k].name, r->plot_metric) && w->m[k].n) {
        fprintf(g, "\"%s%s%s\" %g %g %g\n", w->path, w->config[0] ? "\\n" : "", w->config,
                w->m[k].median, w->m[k].min, w->m[k].max);
        rows++;
      }
  }
  fprintf(g, "EOD\n");
  if (!rows) fprintf(g, "$d << EOD\n\"none measured\" 0 0 0\nEOD\n");
  /* a log axis: the boxes stand on the axis' bottom */
  fprintf(g, "set style fill solid 0.5\nset boxwidth 0.6\nset xrange [-0.6:*]\nunset key\n%s",
          r->plot_logy ? "set xtics font ',8'\nset boxwidth 0.6 absolute\n" : "");
  fprintf(g, "plot $d using 0:2:xtic(1) with boxes, '' using 0:2:3:4 with yerrorbars lc "
             "rgb 'black' pt 0\n");
}

/* One PNG per suite: the suite's plot_metric, median with min..max error bars; per path over
 * the configuration axis (lines) when the suite has one, else one bar per path. The data goes
 * to gnuplot inline (datablocks): no temporary files. */
static int plot_one(const bench_ctx_t *ctx, const bench_suite_result_t *r, const char *dir) {
  if (!r->plot_metric) return 0;
  char png[4096];
  snprintf(png, sizeof png, "%s/%s.png", dir, r->suite);
  FILE *g = popen("gnuplot", "w");
  if (!g) {
    fprintf(stderr, "hsad bench: --plot: cannot run gnuplot: %s\n", strerror(errno));
    return -1;
  }
  const char *unit = "";
  for (uint32_t j = 0; j < r->nrows; j++) {
    bench_row_t *w = &r->rows[j];
    for (uint32_t k = 0; k < w->nm; k++)
      if (!strcmp(w->m[k].name, r->plot_metric)) unit = w->m[k].unit;
  }
  fprintf(g, "set terminal pngcairo size 960,560 noenhanced\nset output '%s'\n", png);
  fprintf(g, "set title \"%s: %s, median and min..max over rounds\\n%s%s\"\n", r->suite,
          r->plot_metric, ctx->isa, ctx->emulated ? " (kfd-emu: host-side costs)" : "");
  /* paths differ by orders of magnitude (HIP): a log axis for the lines, 0-based bars */
  fprintf(g, "set ylabel '%s'\nset grid ytics\nset key below\n%s\n", unit,
          r->plot_xname || r->plot_logy ? "set logscale y" : "set yrange [0:*]");
  /* series (path and the configuration off the axis) in row order */
  const bench_row_t *names[32];
  uint32_t np = 0;
  for (uint32_t j = 0; j < r->nrows && np < 32; j++) {
    uint32_t t = 0;
    while (t < np && (strcmp(names[t]->path, r->rows[j].path) ||
                      strcmp(names[t]->config, r->rows[j].config)))
      t++;
    if (t == np) names[np++] = &r->rows[j];
  }
  if (r->plot_xname) plot_lines(g, r, names, np);
  else plot_bars(g, r);
  int st = pclose(g);
  struct stat sb;
  if (st != 0 || stat(png, &sb) != 0 || sb.st_size == 0) {
    fprintf(stderr, "hsad bench: --plot: gnuplot failed for %s (exit status %d; is gnuplot-nox "
            "installed?)\n", png, st);
    return -1;
  }
  fprintf(stderr, "hsad bench: wrote %s\n", png);
  return 0;
}

int bench_report_plot(const bench_ctx_t *ctx, const bench_suite_result_t *s, uint32_t n,
                      const char *dir) {
  int rc = 0;
  for (uint32_t i = 0; i < n; i++)
    if (plot_one(ctx, &s[i], dir)) rc = -1;
  return rc;
}
