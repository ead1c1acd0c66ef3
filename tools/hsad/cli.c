/* cli.c - error reporting, getopt_long messages and JSON output shared by the hsad commands. */
#define _GNU_SOURCE /* vasprintf */
#include "tools/hsad/hsad_cli.h"

#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool hsad_cli_wants_json(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--")) break;
    if (!strcmp(argv[i], "--json")) return true;
  }
  return false;
}

void hsad_cli_print_json(json_object *obj) {
  fputs(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE),
        stdout);
  fputc('\n', stdout);
  fflush(stdout);
  json_object_put(obj);
}

static int cli_report(const hsad_cli_t *cli, int exit_code, const char *status, const char *msg) {
  size_t n = strlen(msg);
  while (n && msg[n - 1] == '\n') n--;
  if (cli->json) {
    json_object *e = json_object_new_object();
    json_object_object_add(e, "command", json_object_new_string(cli->cmd));
    json_object_object_add(e, "status", json_object_new_string(status));
    json_object_object_add(e, "exit_code", json_object_new_int(exit_code));
    json_object_object_add(e, "message", json_object_new_string_len(msg, (int)n));
    json_object *o = json_object_new_object();
    json_object_object_add(o, "error", e);
    hsad_cli_print_json(o);
  } else {
    fprintf(stderr, "hsad %s: %.*s\n", cli->cmd, (int)n, msg);
  }
  return exit_code;
}

int hsad_cli_fail(const hsad_cli_t *cli, int exit_code, const char *status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = NULL;
  if (vasprintf(&msg, fmt, ap) < 0) msg = NULL;
  va_end(ap);
  int rc = cli_report(cli, exit_code, status, msg ? msg : "out of memory");
  free(msg);
  return rc;
}

/* Library advice meant for API users ("destroy it and create a new queue"): a command-line
 * user cannot follow it, so it is left out. */
static const char *const api_advice[] = {
    "; destroy it and create a new queue",
};

int hsad_cli_fail_status(const hsad_cli_t *cli, hsad_status_t s) {
  char msg[4096];
  snprintf(msg, sizeof msg, "%s", hsad_last_error());
  for (size_t i = 0; i < sizeof api_advice / sizeof api_advice[0]; i++) {
    char *p = strstr(msg, api_advice[i]);
    if (p) memmove(p, p + strlen(api_advice[i]), strlen(p + strlen(api_advice[i])) + 1);
  }
  return hsad_cli_fail(cli, 1, hsad_status_name(s), "%s: %s", hsad_status_name(s), msg);
}

int hsad_cli_getopt_fail(const hsad_cli_t *cli, int ret, char **argv) {
  extern int optind, optopt;
  const char *a = argv[optind - 1];
  char name[256];
  if (!strncmp(a, "--", 2)) /* a long option: its name, without "=value" */
    snprintf(name, sizeof name, "%.*s", (int)strcspn(a, "="), a);
  else if (optopt > 0 && optopt < 128) /* a short option, maybe inside a cluster ("-xO") */
    snprintf(name, sizeof name, "-%c", optopt);
  else
    snprintf(name, sizeof name, "%s", a);
  if (ret == ':')
    return hsad_cli_fail(cli, 2, "usage", "option '%s' needs a value (see hsad %s --help)",
                         name, cli->cmd);
  return hsad_cli_fail(cli, 2, "usage", "unknown option '%s' (see hsad %s --help)", name,
                       cli->cmd);
}

int hsad_cli_getopt(int argc, char **argv, const char *optstring, const struct option *longopts,
                    int (*option)(void *ctx, int opt, const char *value, char **argv), void *ctx) {
  optind = 0; /* 0, not 1: glibc's getopt starts afresh (its state of an earlier scan dropped) */
  opterr = 0;
  int opt;
  while ((opt = getopt_long(argc, argv, optstring, longopts, NULL)) != -1)
    HSAD_CLI_TRY(option(ctx, opt, optarg, argv));
  return 0;
}

char *hsad_cli_slurp(const char *path, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 65536, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break; /* so buf[n] is there for the NUL */
    char *nb = realloc(buf, cap * 2);
    if (!nb) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = nb;
    cap *= 2;
  }
  int err = ferror(f);
  fclose(f);
  if (err || !buf) {
    free(buf);
    return NULL;
  }
  buf[n] = '\0';
  *out_size = n;
  return buf;
}

int hsad_cli_cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

json_object *hsad_cli_json_double(double v, const char *fmt) {
  if (!isfinite(v)) return NULL; /* json-c adds NULL as JSON null */
  char b[64];
  snprintf(b, sizeof b, fmt, v);
  return json_object_new_double_s(v, b);
}

/* kernel names: the demangler (demangle.cc, both builds) */

/* Appends "NAME (DEMANGLED)" (or "NAME") to the list in *b (malloc'd, *len bytes used). */
static int list_add(char **b, size_t *len, size_t *cap, const char *kn, const char *dm) {
  size_t need = *len + strlen(kn) + (dm ? strlen(dm) : 0) + 8;
  if (need > *cap) {
    char *nb = realloc(*b, need * 2);
    if (!nb) return -1; /* *b and *cap as they were */
    *b = nb;
    *cap = need * 2;
  }
  *len += (size_t)snprintf(*b + *len, *cap - *len, "%s%s%s%s%s", *len ? ", " : "", kn,
                           dm ? " (" : "", dm ? dm : "", dm ? ")" : "");
  return 0;
}

int hsad_cli_kernel_match(const char *name, uint32_t n,
                          const char *(*name_at)(const void *ctx, uint32_t i), const void *ctx,
                          uint32_t *out_index, char **out_why) {
  char *all = NULL, *hits = NULL;
  size_t all_len = 0, all_cap = 0, hit_len = 0, hit_cap = 0;
  uint32_t matches = 0, listed = 0, hits_listed = 0;
  int oom = 0;
  *out_why = NULL;
  for (uint32_t i = 0; i < n; i++) {
    const char *kn = name_at(ctx, i);
    char *dm = hsad_cli_demangle(kn);
    if (dm) {
      /* the function name: before the parameters or template arguments, after a template's
       * return type ("void ns::f<int>(int*)": "ns::f"); unqualified: after the last "::" */
      size_t fl = strcspn(dm, "(<");
      const char *fn = dm;
      for (const char *p = dm; p < dm + fl; p++)
        if (*p == ' ') fn = p + 1;
      size_t qn = (size_t)(dm + fl - fn), un = qn;
      const char *uq = fn;
      for (const char *p = fn; p + 1 < dm + fl; p++)
        if (p[0] == ':' && p[1] == ':') uq = p + 2, un = (size_t)(dm + fl - uq);
      size_t nl = strlen(name);
      if (!strcmp(dm, name) || (nl == qn && !strncmp(fn, name, qn)) ||
          (nl == un && !strncmp(uq, name, un))) {
        *out_index = i;
        if (matches++ < HSAD_CLI_LIST_MAX) {
          oom |= list_add(&hits, &hit_len, &hit_cap, kn, dm);
          hits_listed++;
        }
      }
    }
    if (listed < HSAD_CLI_LIST_MAX) {
      oom |= list_add(&all, &all_len, &all_cap, kn, dm);
      listed++;
    }
    free(dm);
  }
  int rc = -1;
  if (oom) {
    rc = -1; /* *out_why stays NULL: out of memory */
  } else if (matches == 1) {
    rc = 0;
  } else if (matches > 1) {
    char more[64] = "";
    if (matches > hits_listed) snprintf(more, sizeof more, " and %u more", matches - hits_listed);
    if (asprintf(out_why, "ambiguous: %u kernels match '%s': %s%s; give the full name of one",
                 matches, name, hits, more) < 0)
      *out_why = NULL;
  } else {
    char more[64] = "";
    if (n > listed) snprintf(more, sizeof more, " and %u more", n - listed);
    if (asprintf(out_why, "no kernel named '%s'; it has %u%s%s%s", name, n, n ? ": " : "",
                 n ? all : "", more) < 0)
      *out_why = NULL;
  }
  free(all);
  free(hits);
  return rc;
}

static const char *program_kernel_name(const void *prog, uint32_t i) {
  return hsad_device_kernel_desc(hsad_program_kernel_at(prog, i))->name;
}

hsad_status_t hsad_cli_program_kernel(const hsad_program_t *prog, const char *name,
                                      const hsad_device_kernel_t **out, char **out_why) {
  *out_why = NULL;
  hsad_status_t s = hsad_program_kernel(prog, name, out);
  if (s != HSAD_ERR_KERNEL_NOT_FOUND) return s;
  uint32_t i;
  if (!hsad_cli_kernel_match(name, hsad_program_kernel_count(prog), program_kernel_name, prog,
                             &i, out_why)) {
    *out = hsad_program_kernel_at(prog, i);
    return HSAD_OK;
  }
  return *out_why ? HSAD_ERR_KERNEL_NOT_FOUND : hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "out of memory");
}
