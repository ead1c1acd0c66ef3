/* hsad compile - OpenCL C / HIP source to a code object through comgr (codeobj/). */
#define _GNU_SOURCE /* asprintf */
#include "tools/hsad/hsad_cli.h"

#include "codeobj/hsad_codeobj.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void compile_usage(FILE *f) {
  fprintf(f, "usage: hsad compile SRC.cl|SRC.hip --target ISA [-O0..3] [-DNAME[=V]] [-IDIR]\n"
             "                    [--code-object-version 4|5] [--max-workgroup-size N]\n"
             "                    [--waves-per-eu W] [--json] -o OUT.hsaco\n"
             "  --target ISA   target ID, e.g. gfx90a or gfx90a:xnack-\n"
             "  --max-workgroup-size N, --waves-per-eu W\n"
             "                 a register budget set on every kernel without editing the source\n"
             "                 (amdgpu_flat_work_group_size(1, N), amdgpu_waves_per_eu(W)); the\n"
             "                 result is checked against it\n"
             "  --json         one JSON object on stdout: {\"compile\": {\"source\", \"target\",\n"
             "                 \"output\", \"bytes\", \"kernels\": [NAME, ...],\n"
             "                 \"warnings\": [...]}}, or on failure\n"
             "                 {\"error\": {\"command\", \"status\", \"exit_code\", \"message\"}}\n"
             "  the kernels are read back from what was written; if that fails the file stays\n"
             "  and the exit code is 0, with a warning (with --json: \"kernels\": null, the\n"
             "  reason in \"warnings\")\n"
             "  diagnostics are printed as FILE:LINE:COL: error|warning: ...\n");
}

/* Everything hsad compile holds; compile_free releases it. */
typedef struct compile {
  hsad_cli_t cli;
  const char *src, *out;
  hsad_compile_options_t o;
  const char **defs, **incs;
  void *obj; /* the code object */
  size_t obj_size;
  hsad_codeobj_t *co; /* read back from obj */
  char *warning;
} compile_t;

static void compile_free(compile_t *c) {
  hsad_codeobj_destroy(c->co);
  free(c->warning);
  free(c->obj);
  free(c->defs);
  free(c->incs);
}

enum { OPT_TARGET = 256, OPT_COV, OPT_MAXWG, OPT_WAVES, OPT_JSON };
static const struct option compile_opts[] = {
    {"target", required_argument, NULL, OPT_TARGET},
    {"code-object-version", required_argument, NULL, OPT_COV},
    {"max-workgroup-size", required_argument, NULL, OPT_MAXWG},
    {"waves-per-eu", required_argument, NULL, OPT_WAVES},
    {"json", no_argument, NULL, OPT_JSON},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0}};

/* --max-workgroup-size N / --waves-per-eu W: the register budget. */
static int compile_option_budget(compile_t *c, int opt, const char *v) {
  char *end;
  unsigned long n = strtoul(v, &end, 10);
  unsigned long most = opt == OPT_MAXWG ? 1024 : 20;
  if (!*v || *end || n < 1 || n > most)
    return hsad_cli_fail(&c->cli, 2, "usage", "--%s %s: expected an integer from 1 to %lu",
                         opt == OPT_MAXWG ? "max-workgroup-size" : "waves-per-eu", v, most);
  if (opt == OPT_MAXWG) c->o.budget.max_workgroup_size = (uint32_t)n;
  else c->o.budget.min_waves_per_eu = (uint32_t)n;
  return 0;
}

/* One option getopt_long returned (opt) with its value v (ctx: the compile_t). */
static int compile_option(void *ctx, int opt, const char *v, char **argv) {
  compile_t *c = ctx;
  switch (opt) {
  case 'h': compile_usage(stdout); return HSAD_CLI_DONE;
  case OPT_TARGET: c->o.target = v; return 0;
  case OPT_JSON: c->cli.json = true; return 0;
  case 'o': c->out = v; return 0;
  case OPT_COV:
    if (strcmp(v, "4") && strcmp(v, "5"))
      return hsad_cli_fail(&c->cli, 2, "usage", "--code-object-version %s: expected 4 or 5", v);
    c->o.code_object_version = (uint32_t)atoi(v);
    return 0;
  case OPT_MAXWG:
  case OPT_WAVES: return compile_option_budget(c, opt, v);
  case 'O':
    if (strlen(v) != 1 || v[0] < '0' || v[0] > '3')
      return hsad_cli_fail(&c->cli, 2, "usage", "-O%s: expected -O0, -O1, -O2 or -O3", v);
    c->o.opt_level = v[0] - '0';
    return 0;
  case 'D': c->defs[c->o.define_count++] = v; return 0;
  case 'I': c->incs[c->o.include_dir_count++] = v; return 0;
  default: /* ':' a value missing, '?' unknown: named as the other commands name them */
    return hsad_cli_getopt_fail(&c->cli, opt, argv);
  }
}

/* getopt_long: `--opt value` and `--opt=value`; -O, -D, -I take attached values as cc does
 * (-O2, -DNAME=V, -Idir; -D NAME and -I dir work too). Then SRC, and the output must not be
 * the source. */
static int compile_parse_options(compile_t *c, int argc, char **argv) {
  c->defs = calloc((size_t)argc, sizeof *c->defs);
  c->incs = calloc((size_t)argc, sizeof *c->incs);
  if (!c->defs || !c->incs)
    return hsad_cli_fail(&c->cli, 1, "HSAD_ERR_OUT_OF_MEMORY", "out of memory");
  c->o.defines = c->defs;
  c->o.include_dirs = c->incs;
  HSAD_CLI_TRY(hsad_cli_getopt(argc, argv, ":ho:O:D:I:", compile_opts, compile_option, c));
  for (int i = optind; i < argc; i++) {
    if (c->src)
      return hsad_cli_fail(&c->cli, 2, "usage", "one source file only (got %s and %s)", c->src,
                           argv[i]);
    c->src = argv[i];
  }
  if (!c->src || !c->o.target || !c->out)
    return hsad_cli_fail(&c->cli, 2, "usage", "%s is required (see hsad compile --help)",
                         !c->src ? "SRC" : !c->o.target ? "--target" : "-o");
  struct stat ss, so;
  if (stat(c->src, &ss) == 0 && stat(c->out, &so) == 0 && ss.st_dev == so.st_dev &&
      ss.st_ino == so.st_ino)
    return hsad_cli_fail(&c->cli, 2, "usage", "-o %s is the source file %s itself: refusing to "
                         "overwrite it", c->out, c->src);
  return 0;
}

/* The source through comgr (its diagnostics on stderr, FILE:LINE:COL), written to -o. */
static int compile_and_write(compile_t *c) {
  size_t size = 0;
  char *text = hsad_cli_slurp(c->src, &size);
  if (!text)
    return hsad_cli_fail(&c->cli, 1, "error", "%s: cannot read: %s", c->src, strerror(errno));
  char *log = NULL;
  hsad_status_t st = hsad_codeobj_compile(text, size, c->src, &c->o, &c->obj, &c->obj_size, &log);
  free(text);
  if (log && *log) fputs(log, stderr);
  bool has_log = log && *log;
  free(log);
  if (st == HSAD_ERR_COMPILE && has_log)
    return hsad_cli_fail(&c->cli, 1, hsad_status_name(st), "%s: compilation for %s failed",
                         c->src, c->o.target);
  if (st != HSAD_OK) return hsad_cli_fail(&c->cli, 1, hsad_status_name(st), "%s", hsad_last_error());
  FILE *f = fopen(c->out, "wb");
  int ok = f && fwrite(c->obj, 1, c->obj_size, f) == c->obj_size;
  if (f && fclose(f) != 0) ok = 0;
  if (!ok) return hsad_cli_fail(&c->cli, 1, "error", "%s: cannot write: %s", c->out, strerror(errno));
  return 0;
}

/* Its kernels, read back from the bytes just written, with and without --json alike: the
 * file is written, so a failure to read it back is a warning (stderr, or "warnings" with
 * "kernels": null) and the exit code stays 0. */
static void compile_report(compile_t *c) {
  hsad_status_t ls = hsad_codeobj_load_memory(c->obj, c->obj_size, c->out, &c->co);
  if (ls && asprintf(&c->warning, "%s: written, but hsad cannot read it back to list its "
                     "kernels: %s: %s", c->out, hsad_status_name(ls), hsad_last_error()) < 0)
    c->warning = NULL;
  if (c->warning && !c->cli.json) fprintf(stderr, "hsad compile: warning: %s\n", c->warning);
  if (!c->cli.json) return;
  json_object *j = json_object_new_object(); /* what was written: the file, its size, kernels */
  json_object_object_add(j, "source", json_object_new_string(c->src));
  json_object_object_add(j, "target", json_object_new_string(c->o.target));
  json_object_object_add(j, "output", json_object_new_string(c->out));
  json_object_object_add(j, "bytes", json_object_new_uint64(c->obj_size));
  json_object *ks = c->co ? json_object_new_array() : NULL;
  for (uint32_t i = 0; c->co && i < hsad_codeobj_info(c->co)->kernel_count; i++)
    json_object_array_add(ks, json_object_new_string(
                                  hsad_kernel_info(hsad_codeobj_kernel_at(c->co, i))->name));
  json_object_object_add(j, "kernels", ks);
  json_object *wa = json_object_new_array();
  if (ls) json_object_array_add(wa, json_object_new_string(c->warning ? c->warning : c->out));
  json_object_object_add(j, "warnings", wa);
  json_object *r = json_object_new_object();
  json_object_object_add(r, "compile", j);
  hsad_cli_print_json(r);
}

int hsad_cmd_compile(int argc, char **argv) {
  compile_t c = {.cli = {.cmd = "compile", .json = hsad_cli_wants_json(argc, argv)},
                 .o = {.opt_level = 2}};
  for (int i = 1; i < argc; i++) { /* CUDA C++: NVRTC (nvcodeobj), cubin out */
    size_t len = strlen(argv[i]);
    if (len > 3 && !strcmp(argv[i] + len - 3, ".cu")) return hsad_compile_nv(argc, argv, &c.cli);
  }
  int rc = compile_parse_options(&c, argc, argv);
  if (!rc) rc = compile_and_write(&c);
  if (!rc) compile_report(&c);
  compile_free(&c);
  return rc == HSAD_CLI_DONE ? 0 : rc;
}
