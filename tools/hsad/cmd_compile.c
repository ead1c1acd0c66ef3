/* hsad compile - OpenCL C / HIP source to a code object through comgr (codeobj/). */
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
             "                    [--waves-per-eu W] -o OUT.hsaco\n"
             "  --target ISA   target ID, e.g. gfx90a or gfx90a:xnack-\n"
             "  --max-workgroup-size N, --waves-per-eu W\n"
             "                 a register budget set on every kernel without editing the source\n"
             "                 (amdgpu_flat_work_group_size(1, N), amdgpu_waves_per_eu(W)); the\n"
             "                 result is checked against it\n"
             "  diagnostics are printed as FILE:LINE:COL: error|warning: ...\n");
}

static char *slurp(const char *path, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 65536, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
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
  if (err) {
    free(buf);
    return NULL;
  }
  *out_size = n;
  return buf;
}

int hsad_cmd_compile(int argc, char **argv) {
  const hsad_cli_t cli = {.cmd = "compile", .json = false}; /* compile has no JSON output */
  const char *src = NULL, *out = NULL;
  hsad_compile_options_t o = {.opt_level = 2};
  const char **defs = calloc((size_t)argc, sizeof *defs);
  const char **incs = calloc((size_t)argc, sizeof *incs);
  int rc = 2;
  if (!defs || !incs) {
    fprintf(stderr, "hsad compile: out of memory\n");
    rc = 1;
    goto done;
  }
  o.defines = defs;
  o.include_dirs = incs;
  /* getopt_long: `--opt value` and `--opt=value`; -O, -D, -I take attached values as cc does
   * (-O2, -DNAME=V, -Idir; -D NAME and -I dir work too) */
  enum { OPT_TARGET = 256, OPT_COV, OPT_MAXWG, OPT_WAVES };
  static const struct option longopts[] = {
      {"target", required_argument, NULL, OPT_TARGET},
      {"code-object-version", required_argument, NULL, OPT_COV},
      {"max-workgroup-size", required_argument, NULL, OPT_MAXWG},
      {"waves-per-eu", required_argument, NULL, OPT_WAVES},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, ":ho:O:D:I:", longopts, NULL)) != -1) {
    switch (c) {
    case 'h':
      compile_usage(stdout);
      rc = 0;
      goto done;
    case OPT_TARGET: o.target = optarg; break;
    case 'o': out = optarg; break;
    case OPT_COV:
      if (strcmp(optarg, "4") && strcmp(optarg, "5")) {
        fprintf(stderr, "hsad compile: --code-object-version %s: expected 4 or 5\n", optarg);
        goto done;
      }
      o.code_object_version = (uint32_t)atoi(optarg);
      break;
    case OPT_MAXWG:
    case OPT_WAVES: {
      char *end;
      unsigned long v = strtoul(optarg, &end, 10);
      unsigned long most = c == OPT_MAXWG ? 1024 : 20;
      if (!*optarg || *end || v < 1 || v > most) {
        fprintf(stderr, "hsad compile: --%s %s: expected an integer from 1 to %lu\n",
                c == OPT_MAXWG ? "max-workgroup-size" : "waves-per-eu", optarg, most);
        goto done;
      }
      if (c == OPT_MAXWG) o.budget.max_workgroup_size = (uint32_t)v;
      else o.budget.min_waves_per_eu = (uint32_t)v;
      break;
    }
    case 'O':
      if (strlen(optarg) != 1 || optarg[0] < '0' || optarg[0] > '3') {
        fprintf(stderr, "hsad compile: -O%s: expected -O0, -O1, -O2 or -O3\n", optarg);
        goto done;
      }
      o.opt_level = optarg[0] - '0';
      break;
    case 'D': defs[o.define_count++] = optarg; break;
    case 'I': incs[o.include_dir_count++] = optarg; break;
    default: /* ':' a value missing, '?' unknown: named as the other commands name them */
      hsad_cli_getopt_fail(&cli, c, argv);
      goto done;
    }
  }
  for (int i = optind; i < argc; i++) {
    if (src) {
      fprintf(stderr, "hsad compile: one source file only (got %s and %s)\n", src, argv[i]);
      goto done;
    }
    src = argv[i];
  }
  if (!src || !o.target || !out) {
    fprintf(stderr, "hsad compile: %s is required (see hsad compile --help)\n",
            !src ? "SRC" : !o.target ? "--target" : "-o");
    goto done;
  }
  struct stat ss, so;
  if (stat(src, &ss) == 0 && stat(out, &so) == 0 && ss.st_dev == so.st_dev &&
      ss.st_ino == so.st_ino) {
    fprintf(stderr, "hsad compile: -o %s is the source file %s itself: refusing to overwrite it\n",
            out, src);
    goto done;
  }
  rc = 1;
  size_t size = 0;
  char *text = slurp(src, &size);
  if (!text) {
    fprintf(stderr, "hsad compile: %s: cannot read: %s\n", src, strerror(errno));
    goto done;
  }
  void *obj = NULL;
  size_t obj_size = 0;
  char *log = NULL;
  hsad_status_t st = hsad_codeobj_compile(text, size, src, &o, &obj, &obj_size, &log);
  free(text);
  if (log && *log) fputs(log, stderr); /* the compiler's diagnostics, FILE:LINE:COL */
  if (st != HSAD_OK) {
    if (st == HSAD_ERR_COMPILE && log && *log)
      fprintf(stderr, "hsad compile: %s: compilation for %s failed\n", src, o.target);
    else
      fprintf(stderr, "hsad compile: %s\n", hsad_last_error());
    free(log);
    goto done;
  }
  free(log);
  FILE *f = fopen(out, "wb");
  int ok = f && fwrite(obj, 1, obj_size, f) == obj_size;
  if (f && fclose(f) != 0) ok = 0;
  if (!ok) {
    fprintf(stderr, "hsad compile: %s: cannot write: %s\n", out, strerror(errno));
    free(obj);
    goto done;
  }
  free(obj);
  rc = 0;
done:
  free(defs);
  free(incs);
  return rc;
}
