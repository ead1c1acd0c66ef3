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
  hsad_cli_t cli = {.cmd = "compile", .json = hsad_cli_wants_json(argc, argv)};
  for (int i = 1; i < argc; i++) { /* CUDA C++: NVRTC (nvcodeobj), cubin out */
    size_t len = strlen(argv[i]);
    if (len > 3 && !strcmp(argv[i] + len - 3, ".cu")) return hsad_compile_nv(argc, argv, &cli);
  }
  const char *src = NULL, *out = NULL;
  hsad_compile_options_t o = {.opt_level = 2};
  const char **defs = calloc((size_t)argc, sizeof *defs);
  const char **incs = calloc((size_t)argc, sizeof *incs);
  int rc = 2;
  if (!defs || !incs) {
    rc = hsad_cli_fail(&cli, 1, "HSAD_ERR_OUT_OF_MEMORY", "out of memory");
    goto done;
  }
  o.defines = defs;
  o.include_dirs = incs;
  /* getopt_long: `--opt value` and `--opt=value`; -O, -D, -I take attached values as cc does
   * (-O2, -DNAME=V, -Idir; -D NAME and -I dir work too) */
  enum { OPT_TARGET = 256, OPT_COV, OPT_MAXWG, OPT_WAVES, OPT_JSON };
  static const struct option longopts[] = {
      {"target", required_argument, NULL, OPT_TARGET},
      {"code-object-version", required_argument, NULL, OPT_COV},
      {"max-workgroup-size", required_argument, NULL, OPT_MAXWG},
      {"waves-per-eu", required_argument, NULL, OPT_WAVES},
      {"json", no_argument, NULL, OPT_JSON},
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
    case OPT_JSON: cli.json = true; break;
    case 'o': out = optarg; break;
    case OPT_COV:
      if (strcmp(optarg, "4") && strcmp(optarg, "5")) {
        hsad_cli_fail(&cli, 2, "usage", "--code-object-version %s: expected 4 or 5", optarg);
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
        hsad_cli_fail(&cli, 2, "usage", "--%s %s: expected an integer from 1 to %lu",
                      c == OPT_MAXWG ? "max-workgroup-size" : "waves-per-eu", optarg, most);
        goto done;
      }
      if (c == OPT_MAXWG) o.budget.max_workgroup_size = (uint32_t)v;
      else o.budget.min_waves_per_eu = (uint32_t)v;
      break;
    }
    case 'O':
      if (strlen(optarg) != 1 || optarg[0] < '0' || optarg[0] > '3') {
        hsad_cli_fail(&cli, 2, "usage", "-O%s: expected -O0, -O1, -O2 or -O3", optarg);
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
      hsad_cli_fail(&cli, 2, "usage", "one source file only (got %s and %s)", src, argv[i]);
      goto done;
    }
    src = argv[i];
  }
  if (!src || !o.target || !out) {
    hsad_cli_fail(&cli, 2, "usage", "%s is required (see hsad compile --help)",
                  !src ? "SRC" : !o.target ? "--target" : "-o");
    goto done;
  }
  struct stat ss, so;
  if (stat(src, &ss) == 0 && stat(out, &so) == 0 && ss.st_dev == so.st_dev &&
      ss.st_ino == so.st_ino) {
    hsad_cli_fail(&cli, 2, "usage", "-o %s is the source file %s itself: refusing to overwrite it",
                  out, src);
    goto done;
  }
  rc = 1;
  size_t size = 0;
  char *text = slurp(src, &size);
  if (!text) {
    hsad_cli_fail(&cli, 1, "error", "%s: cannot read: %s", src, strerror(errno));
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
      hsad_cli_fail(&cli, 1, hsad_status_name(st), "%s: compilation for %s failed", src, o.target);
    else
      hsad_cli_fail(&cli, 1, hsad_status_name(st), "%s", hsad_last_error());
    free(log);
    goto done;
  }
  free(log);
  FILE *f = fopen(out, "wb");
  int ok = f && fwrite(obj, 1, obj_size, f) == obj_size;
  if (f && fclose(f) != 0) ok = 0;
  if (!ok) {
    hsad_cli_fail(&cli, 1, "error", "%s: cannot write: %s", out, strerror(errno));
    free(obj);
    goto done;
  }
  /* Its kernels, read back from the bytes just written, with and without --json alike: the
   * file is written, so a failure to read it back is a warning (stderr, or "warnings" with
   * "kernels": null) and the exit code stays 0. */
  hsad_codeobj_t *co = NULL;
  char *warning = NULL;
  hsad_status_t ls = hsad_codeobj_load_memory(obj, obj_size, out, &co);
  if (ls && asprintf(&warning, "%s: written, but hsad cannot read it back to list its kernels: "
                     "%s: %s", out, hsad_status_name(ls), hsad_last_error()) < 0)
    warning = NULL;
  if (warning && !cli.json) fprintf(stderr, "hsad compile: warning: %s\n", warning);
  if (cli.json) { /* what was written: the file, its size and its kernels */
    json_object *j = json_object_new_object();
    json_object_object_add(j, "source", json_object_new_string(src));
    json_object_object_add(j, "target", json_object_new_string(o.target));
    json_object_object_add(j, "output", json_object_new_string(out));
    json_object_object_add(j, "bytes", json_object_new_uint64(obj_size));
    json_object *ks = co ? json_object_new_array() : NULL;
    for (uint32_t i = 0; co && i < hsad_codeobj_info(co)->kernel_count; i++)
      json_object_array_add(ks, json_object_new_string(
                                    hsad_kernel_info(hsad_codeobj_kernel_at(co, i))->name));
    json_object_object_add(j, "kernels", ks);
    json_object *wa = json_object_new_array();
    if (ls) json_object_array_add(wa, json_object_new_string(warning ? warning : out));
    json_object_object_add(j, "warnings", wa);
    json_object *r = json_object_new_object();
    json_object_object_add(r, "compile", j);
    hsad_cli_print_json(r);
  }
  hsad_codeobj_destroy(co);
  free(warning);
  free(obj);
  rc = 0;
done:
  free(defs);
  free(incs);
  return rc;
}
