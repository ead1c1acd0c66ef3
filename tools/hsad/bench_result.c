/* bench_result.c - the result model of hsad bench (bench.h): rows, per-round samples,
 * per-round ratios, min/median/max. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/hsad/bench.h"

bench_row_t *bench_row_add(bench_suite_result_t *r, const char *path, const char *config,
                           const char *xname, double x) {
  bench_row_t *row = bench_row_find(r, path, config, x);
  if (row) return row;
  if (r->nrows == r->cap) {
    uint32_t cap = r->cap ? 2 * r->cap : 8;
    bench_row_t *p = realloc(r->rows, cap * sizeof *p);
    if (!p) return NULL;
    r->rows = p;
    r->cap = cap;
  }
  row = &r->rows[r->nrows++];
  memset(row, 0, sizeof *row);
  snprintf(row->path, sizeof row->path, "%s", path);
  snprintf(row->config, sizeof row->config, "%s", config ? config : "");
  row->xname = xname;
  row->x = x;
  return row;
}

bench_row_t *bench_row_find(bench_suite_result_t *r, const char *path, const char *config,
                            double x) {
  for (uint32_t i = 0; i < r->nrows; i++)
    if (!strcmp(r->rows[i].path, path) && !strcmp(r->rows[i].config, config ? config : "") &&
        r->rows[i].x == x)
      return &r->rows[i];
  return NULL;
}

/* Sets *flag (row->absent or row->wrong) with the row's note; once set, later calls keep the
 * first note (the first reason or failure is the one to report). */
static void row_mark(bench_row_t *row, bool *flag, const char *fmt, va_list ap) {
  if (*flag) return;
  vsnprintf(row->note, sizeof row->note, fmt, ap);
  *flag = true;
}

void bench_row_absent(bench_row_t *row, const char *fmt, ...) {
  if (!row) return;
  va_list ap;
  va_start(ap, fmt);
  row_mark(row, &row->absent, fmt, ap);
  va_end(ap);
}

void bench_row_wrong(bench_row_t *row, const char *fmt, ...) {
  if (!row) return;
  va_list ap;
  va_start(ap, fmt);
  row_mark(row, &row->wrong, fmt, ap);
  va_end(ap);
}

bench_metric_t *bench_metric(bench_row_t *row, const char *name) {
  for (uint32_t i = 0; i < row->nm; i++)
    if (!strcmp(row->m[i].name, name)) return &row->m[i];
  return NULL;
}

void bench_sample(bench_row_t *row, const char *name, const char *unit, double v) {
  if (!row) return;
  bench_metric_t *m = bench_metric(row, name);
  if (!m) {
    if (row->nm == BENCH_MAX_METRICS) return;
    m = &row->m[row->nm++];
    memset(m, 0, sizeof *m);
    m->name = name;
    m->unit = unit;
  }
  if (m->n < BENCH_MAX_ROUNDS) m->v[m->n++] = v;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double bench_median(double *v, uint32_t n) {
  if (!n) return 0;
  qsort(v, n, sizeof *v, cmp_d);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void bench_ratio(bench_suite_result_t *r, const char *a_path, const char *b_path,
                 const char *config, double x, const char *name) {
  bench_row_t *a = bench_row_find(r, a_path, config, x), *b = bench_row_find(r, b_path, config, x);
  if (!a || !b || a->wrong || b->wrong) return; /* a wrong path is not faster or slower */
  bench_metric_t *ma = bench_metric(a, name), *mb = bench_metric(b, name);
  if (!ma || !mb) return;
  uint32_t n = ma->n < mb->n ? ma->n : mb->n;
  if (!n) return;
  if (r->nratios == r->rcap) {
    uint32_t cap = r->rcap ? 2 * r->rcap : 8;
    bench_ratio_t *p = realloc(r->ratios, cap * sizeof *p);
    if (!p) return;
    r->ratios = p;
    r->rcap = cap;
  }
  bench_ratio_t *q = &r->ratios[r->nratios++];
  memset(q, 0, sizeof *q);
  snprintf(q->name, sizeof q->name, "%s / %s", a_path, b_path);
  snprintf(q->config, sizeof q->config, "%s", config ? config : "");
  q->xname = a->xname;
  q->x = x;
  q->m.name = name;
  q->m.unit = "ratio";
  /* round i of A against round i of B (interleaved in the same round); a deterministic
   * figure (one sample) is compared against every round of the other */
  uint32_t rounds = ma->n > mb->n ? ma->n : mb->n;
  for (uint32_t i = 0; i < rounds && q->m.n < BENCH_MAX_ROUNDS; i++) {
    double x = ma->v[ma->n == 1 ? 0 : i < ma->n ? i : ma->n - 1];
    double y = mb->v[mb->n == 1 ? 0 : i < mb->n ? i : mb->n - 1];
    if ((ma->n != 1 && i >= ma->n) || (mb->n != 1 && i >= mb->n)) break;
    if (y > 0) q->m.v[q->m.n++] = x / y;
  }
  if (!q->m.n) r->nratios--;
}

static void finish_metric(bench_metric_t *m) {
  double s[BENCH_MAX_ROUNDS];
  if (!m->n) return;
  memcpy(s, m->v, m->n * sizeof *s);
  m->median = bench_median(s, m->n);
  m->min = s[0];
  m->max = s[m->n - 1];
}

void bench_suite_finish(bench_suite_result_t *r) {
  for (uint32_t i = 0; i < r->nrows; i++)
    for (uint32_t j = 0; j < r->rows[i].nm; j++) finish_metric(&r->rows[i].m[j]);
  for (uint32_t i = 0; i < r->nratios; i++) finish_metric(&r->ratios[i].m);
}

void bench_suite_free(bench_suite_result_t *r) {
  free(r->rows);
  free(r->ratios);
  memset(r, 0, sizeof *r);
}
