/* clsource.c - a self-contained copy of an OpenCL C source: its #include files inlined
 * (hsad_cl_source_expand, hsad_codeobj.h), so the source a code object carries
 * (HSAD_CL_SOURCE_SYMBOL) or `hsad run --source` hands kfd-emu builds under POCL without the
 * folders it was compiled with. */
#define _GNU_SOURCE
#include "codeobj/codeobj_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CO_INCLUDE_DEPTH 16

typedef struct co_expand {
  FILE *out;
  const char *const *dirs;
  uint32_t ndirs;
  const char *top; /* the top source's name, for messages */
} co_expand_t;

static char *co_slurp(const char *path, size_t *out_len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  char buf[4096];
  size_t got;
  while (m && (got = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, got, m);
  fclose(f);
  if (!m || fclose(m) != 0) {
    free(text);
    return NULL;
  }
  *out_len = len;
  return text;
}

/* The file an include names: quoted ones next to the including file first, then the -I
 * folders in order (angle ones only there). NULL (not an error) when none has it: a header of
 * the compiler's own (opencl-c.h) stays an #include. */
static char *co_find_include(const co_expand_t *x, const char *from, const char *name,
                             bool quoted) {
  char path[4096];
  if (name[0] == '/') return access(name, R_OK) == 0 ? strdup(name) : NULL;
  if (quoted) {
    const char *slash = strrchr(from, '/');
    int dl = slash ? (int)(slash - from) : 0;
    snprintf(path, sizeof path, "%.*s%s%s", dl, from, slash ? "/" : "", name);
    if (access(path, R_OK) == 0) return strdup(path);
  }
  for (uint32_t i = 0; i < x->ndirs; i++) {
    snprintf(path, sizeof path, "%s/%s", x->dirs[i], name);
    if (access(path, R_OK) == 0) return strdup(path);
  }
  return NULL;
}

/* Writes `text` (the file `name`) with its includes inlined between #line directives. */
static hsad_status_t co_expand_text(co_expand_t *x, const char *text, size_t len,
                                    const char *name, int depth) {
  size_t line_no = 1;
  for (size_t i = 0; i < len; line_no++) {
    const char *line = text + i, *nl = memchr(line, '\n', len - i);
    size_t ll = nl ? (size_t)(nl - line) : len - i;
    i += ll + (nl ? 1 : 0);
    const char *p = line, *e = line + ll;
    while (p < e && (*p == ' ' || *p == '\t')) p++;
    bool directive = p < e && *p == '#';
    if (directive) {
      p++;
      while (p < e && (*p == ' ' || *p == '\t')) p++;
    }
    bool inc = directive && (size_t)(e - p) > 7 && !strncmp(p, "include", 7) &&
               (p[7] == ' ' || p[7] == '\t' || p[7] == '"' || p[7] == '<');
    char *found = NULL;
    char iname[1024] = "";
    if (inc) {
      p += 7;
      while (p < e && (*p == ' ' || *p == '\t')) p++;
      char close = p < e && *p == '"' ? '"' : p < e && *p == '<' ? '>' : 0;
      const char *q = close ? memchr(p + 1, close, (size_t)(e - p - 1)) : NULL;
      if (q && (size_t)(q - p - 1) < sizeof iname) {
        snprintf(iname, sizeof iname, "%.*s", (int)(q - p - 1), p + 1);
        found = co_find_include(x, name, iname, close == '"');
      }
    }
    if (!found) {
      fwrite(line, 1, ll, x->out);
      fputc('\n', x->out);
      continue;
    }
    if (depth >= CO_INCLUDE_DEPTH) {
      free(found);
      return hsad_fail(HSAD_ERR_COMPILE, "%s: includes nested deeper than %d (at %s:%zu, "
                       "#include \"%s\"): a cycle?", x->top, CO_INCLUDE_DEPTH, name, line_no,
                       iname);
    }
    size_t il = 0;
    char *itext = co_slurp(found, &il);
    if (!itext) {
      hsad_status_t st = hsad_fail(HSAD_ERR_IO, "%s: cannot read %s (included at %s:%zu): %s",
                                   x->top, found, name, line_no, strerror(errno));
      free(found);
      return st;
    }
    fprintf(x->out, "#line 1 \"%s\"\n", found);
    hsad_status_t st = co_expand_text(x, itext, il, found, depth + 1);
    free(itext);
    free(found);
    if (st) return st;
    fprintf(x->out, "#line %zu \"%s\"\n", line_no + 1, name);
  }
  return HSAD_OK;
}

hsad_status_t hsad_cl_source_expand(const char *source, size_t size, const char *source_name,
                                    const char *const *include_dirs, uint32_t include_dir_count,
                                    char **out_text, size_t *out_size) {
  if (out_text) *out_text = NULL;
  if (out_size) *out_size = 0;
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_cl_source_expand", {source, "source"},
                                   {source_name, "source_name"}, {out_text, "out_text"},
                                   {out_size, "out_size"});
  if (ns) return ns;
  if (include_dir_count && !include_dirs)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_cl_source_expand: NULL include_dirs with "
                     "include_dir_count %u", include_dir_count);
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  if (!m) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", source_name);
  co_expand_t x = {.out = m, .dirs = include_dirs, .ndirs = include_dir_count,
                   .top = source_name};
  hsad_status_t st = co_expand_text(&x, source, size, source_name, 0);
  if (fclose(m) != 0 && !st)
    st = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", source_name);
  if (st) {
    free(text);
    return st;
  }
  *out_text = text;
  *out_size = len;
  return HSAD_OK;
}
