/* hsad compile - OpenCL C / HIP source to a code object through comgr (codeobj/). */
#include "tools/hsad/hsad_cli.h"

#include "codeobj/hsad_codeobj.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void compile_usage(FILE *f) {
  fprintf(f, "usage: hsad compile SRC.cl|SRC.hip --target ISA [-O0..3] [-DNAME[=V]] [-IDIR]\n"
             "                    [--code-object-version 4|5] -o OUT.hsaco\n"
             "  --target ISA   target ID, e.g. gfx90a or gfx90a:xnack-\n"
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
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      compile_usage(stdout);
      rc = 0;
      goto done;
    } else if (!strcmp(a, "--target") || !strcmp(a, "-o") ||
               !strcmp(a, "--code-object-version")) {
      if (i + 1 >= argc) {
        fprintf(stderr, "hsad compile: %s needs a value\n", a);
        goto done;
      }
      const char *v = argv[++i];
      if (!strcmp(a, "--target")) o.target = v;
      else if (!strcmp(a, "-o")) out = v;
      else if (!strcmp(v, "4") || !strcmp(v, "5")) o.code_object_version = (uint32_t)atoi(v);
      else {
        fprintf(stderr, "hsad compile: --code-object-version %s: expected 4 or 5\n", v);
        goto done;
      }
    } else if (!strncmp(a, "-O", 2)) {
      if (strlen(a) != 3 || a[2] < '0' || a[2] > '3') {
        fprintf(stderr, "hsad compile: %s: expected -O0, -O1, -O2 or -O3\n", a);
        goto done;
      }
      o.opt_level = a[2] - '0';
    } else if (!strncmp(a, "-D", 2) && a[2]) {
      defs[o.define_count++] = a + 2;
    } else if (!strncmp(a, "-I", 2) && a[2]) {
      incs[o.include_dir_count++] = a + 2;
    } else if (a[0] == '-') {
      fprintf(stderr, "hsad compile: unknown option %s\n", a);
      compile_usage(stderr);
      goto done;
    } else if (src) {
      fprintf(stderr, "hsad compile: one source file only (got %s and %s)\n", src, a);
      goto done;
    } else {
      src = a;
    }
  }
  if (!src || !o.target || !out) {
    fprintf(stderr, "hsad compile: %s is required\n", !src ? "SRC" : !o.target ? "--target" : "-o");
    compile_usage(stderr);
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
