/* cli.c - error reporting, getopt_long messages and JSON output shared by the hsad commands. */
#define _GNU_SOURCE /* vasprintf */
#include "tools/hsad/hsad_cli.h"

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

json_object *hsad_cli_json_double(double v, const char *fmt) {
  if (!isfinite(v)) return NULL; /* json-c adds NULL as JSON null */
  char b[64];
  snprintf(b, sizeof b, fmt, v);
  return json_object_new_double_s(v, b);
}
