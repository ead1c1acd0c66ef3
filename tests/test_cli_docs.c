/* test_cli_docs.c - what the documentation shows runs as written (issue 10):
 *   - every `hsad ...` line of README.md's sh code blocks, in order, from a directory laid out
 *     like the source tree (kernels/, build/ linked), `hsad` found on PATH;
 *   - every example line of `hsad --help` and `hsad COMMAND --help` for every command;
 *   - README.md's library example (the C code block): compiled against the headers and
 *     libhsad.a, run, its output checked;
 *   - `hsad --version`; `make install` (DESTDIR, PREFIX=/usr): the layout README.md gives, the
 *     installed hsad finding its kfd-emu, a user's twin library built against the installed
 *     kfd_emu_twin.h run through KFD_EMU_TWINS, the C example against the installed libhsad.so.
 * Each command must exit 0 and print no error or warning; --json commands print one JSON
 * object (parsed with json-c). Commands are taken from the text at run time, so the
 * documentation cannot drift from what runs. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/hsad_version.h"

#ifndef HSAD_SRCDIR
#define HSAD_SRCDIR "."
#endif
#ifndef HSAD_BUILDDIR
#define HSAD_BUILDDIR "build"
#endif
#ifndef HSAD_BINDIR
#define HSAD_BINDIR "build/bin"
#endif
#ifndef TEST_CC
#define TEST_CC "cc"
#endif
#ifndef TEST_SAN
#define TEST_SAN ""
#endif
#ifndef TEST_LIBS
#define TEST_LIBS ""
#endif

/* Runs `cmd` with sh in `dir` (stderr merged); returns the exit status, output in *out. */
static int sh_in(const char *dir, const char *cmd, char **out) {
  size_t len = strlen(cmd) + strlen(dir) + 256;
  char *full = malloc(len);
  snprintf(full, len, "cd '%s' && PATH='%s':\"$PATH\" && { %s\n} 2>&1", dir, HSAD_BINDIR, cmd);
  FILE *p = popen(full, "r");
  free(full);
  cr_assert_not_null(p);
  size_t cap = 1 << 16, n = 0, got;
  char *buf = malloc(cap);
  while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
    n += got;
    if (n + 1 == cap) buf = realloc(buf, cap *= 2);
  }
  buf[n] = '\0';
  int st = pclose(p);
  *out = buf;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
  b[n] = '\0';
  fclose(f);
  return b;
}

typedef struct cmds {
  char *line[128];
  int n;
} cmds_t;

/* Appends the logical line starting at *p (continued by a trailing backslash) and advances
 * *p past it. */
static void take_line(const char **p, cmds_t *c) {
  char buf[4096];
  size_t n = 0;
  const char *s = *p;
  while (*s == ' ') s++;
  for (;;) {
    const char *e = strchr(s, '\n');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    bool cont = len && s[len - 1] == '\\';
    if (cont) len--;
    cr_assert_lt(n + len + 1, sizeof buf);
    memcpy(buf + n, s, len);
    n += len;
    s = e ? e + 1 : s + len;
    if (!cont || !e) break;
    while (*s == ' ') s++;
  }
  buf[n] = '\0';
  cr_assert_lt(c->n, 128);
  c->line[c->n++] = strdup(buf);
  *p = s;
}

/* A here-document that writes a file (`cat > F <<'TAG'` ... TAG) becomes one command, so the
 * hsad lines after it find the file as a reader who pastes the block does. */
static bool take_heredoc(const char **p, cmds_t *c) {
  const char *s = *p;
  while (*s == ' ') s++;
  const char *e = strchr(s, '\n'), *q = strstr(s, "<<'");
  if (strncmp(s, "cat > ", 6) || !e || !q || q > e) return false;
  const char *t = q + 3, *te = strchr(t, '\'');
  if (!te || te > e) return false;
  char tag[40];
  snprintf(tag, sizeof tag, "\n%.*s\n", (int)(te - t), t);
  const char *end = strstr(e, tag);
  cr_assert_not_null(end, "README.md: a here-document without its end: %.*s", (int)(e - s), s);
  end += strlen(tag);
  cr_assert_lt(c->n, 128);
  c->line[c->n++] = strndup(s, (size_t)(end - s));
  *p = end;
  return true;
}

/* A directory laid out like the source tree: its folders and build/ (this build) linked. */
static void make_tree(char dir[64]) {
  strcpy(dir, "/tmp/hsad-docs-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "for d in kernels common codeobj hsa-dispatch tools examples tests; do "
           "ln -s '%s'/$d '%s'/$d || exit 1; done && ln -s '%s' '%s/build'", HSAD_SRCDIR, dir,
           HSAD_BUILDDIR, dir);
  cr_assert_eq(system(cmd), 0);
}

static void remove_tree(const char *dir) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

/* Runs every command in order; each must exit 0 without an error or warning line, and a
 * --json command must print exactly one JSON object without "error". */
static void run_all(const char *dir, const cmds_t *c, const char *where) {
  for (int i = 0; i < c->n; i++) {
    char *o;
    int rc = sh_in(dir, c->line[i], &o);
    cr_expect_eq(rc, 0, "%s: `%s` exited %d:\n%s", where, c->line[i], rc, o);
    cr_expect(!strstr(o, ": warning:") && !strstr(o, "error"), "%s: `%s` printed:\n%s", where,
              c->line[i], o);
    const char *json = strstr(c->line[i], "--json"), *comment = strstr(c->line[i], " #");
    if (json && (!comment || json < comment)) {
      /* stdout's object; kfd-emu may say something on stderr before it (a host with one NUMA
       * node emulating two) */
      const char *js = strchr(o, '{') ? strchr(o, '{') : o;
      json_tokener *tok = json_tokener_new();
      json_object *j = json_tokener_parse_ex(tok, js, (int)strlen(js));
      cr_expect_not_null(j, "%s: `%s` printed no JSON object:\n%s", where, c->line[i], o);
      if (j) {
        cr_expect(json_object_is_type(j, json_type_object) &&
                      !json_object_object_get_ex(j, "error", NULL),
                  "%s: `%s`:\n%s", where, c->line[i], o);
        const char *rest = js + json_tokener_get_parse_end(tok);
        while (*rest == '\n' || *rest == ' ') rest++;
        cr_expect_eq(*rest, '\0', "%s: `%s`: more than one JSON value:\n%s", where, c->line[i], o);
        json_object_put(j);
      }
      json_tokener_free(tok);
    }
    free(o);
  }
}

/* True when the line at s runs hsad: "hsad ..." or "VAR=value ... hsad ...". */
static bool is_hsad_cmd(const char *s) {
  while (*s == ' ') s++;
  for (;;) {
    if (!strncmp(s, "hsad ", 5)) return true;
    const char *w = s;
    while (*w && strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789", *w)) w++;
    if (w == s || *w != '=') return false;
    s = w + strcspn(w, " \n");
    if (*s != ' ') return false;
    while (*s == ' ') s++;
  }
}

Test(cli_docs, readme_hsad_commands, .timeout = 300) {
  char path[512];
  snprintf(path, sizeof path, "%s/README.md", HSAD_SRCDIR);
  char *md = slurp(path);
  cmds_t c = {0};
  /* every line of a ```sh block whose command is hsad (possibly after VAR=value words) */
  for (const char *p = strstr(md, "```sh\n"); p; p = strstr(p, "```sh\n")) {
    p += 6;
    const char *end = strstr(p, "```");
    cr_assert_not_null(end);
    while (p < end) {
      if (take_heredoc(&p, &c)) {
        cr_assert_leq(p, end, "README.md: a here-document runs past its code block");
      } else if (is_hsad_cmd(p)) {
        take_line(&p, &c);
      } else {
        const char *e = strchr(p, '\n');
        p = e ? e + 1 : end;
      }
    }
    p = end + 3;
  }
  free(md);
  /* the section lists info, compile, inspect, run and bench: at least 8 lines */
  cr_assert_geq(c.n, 8, "found only %d hsad commands in README.md", c.n);
  char dir[64];
  make_tree(dir);
  run_all(dir, &c, "README.md");
  /* what the README's run of saxpy computes: y = 1 + 10 x 2.5 x i */
  char *o;
  int saxpy = -1;
  for (int i = 0; i < c.n && saxpy < 0; i++)
    if (strstr(c.line[i], "run kernels/saxpy.cl saxpy")) saxpy = i;
  cr_assert_geq(saxpy, 0, "README.md shows no hsad run of kernels/saxpy.cl");
  cr_assert_eq(sh_in(dir, c.line[saxpy], &o), 0, "%s", o);
  cr_expect(strstr(o, "first: 1 26 51 76 101 126 151 176"), "%s", o);
  free(o);
  /* the user's own transpose (issue 20), from the file the README's here-document wrote:
   * out[r] for r = 0, 1, ... is in[r * 48] */
  int tr = -1;
  for (int i = 0; i < c.n && tr < 0; i++)
    if (strstr(c.line[i], "run transpose.cl transpose")) tr = i;
  cr_assert_geq(tr, 1, "README.md shows no hsad run of its transpose.cl");
  cr_assert(!strncmp(c.line[tr - 1], "cat > transpose.cl", 18), "%s", c.line[tr - 1]);
  cr_assert_eq(sh_in(dir, c.line[tr], &o), 0, "%s", o);
  cr_expect(strstr(o, "first: 0 48 96 144 192 240 288 336"), "%s", o);
  cr_expect(strstr(o, "ran from its OpenCL C source through POCL"), "%s", o);
  free(o);
  remove_tree(dir);
  for (int i = 0; i < c.n; i++) free(c.line[i]);
}

Test(cli_docs, help_examples, .timeout = 300) {
  static const char *const cmds[] = {"", "info", "inspect", "compile", "run", "bench", "graph"};
  cmds_t c = {0};
  char dir[64];
  make_tree(dir);
  char *texts[7];
  for (int k = 0; k < 7; k++) {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "hsad %s --help", cmds[k]);
    cr_assert_eq(sh_in(dir, cmd, &texts[k]), 0, "`%s`: %s", cmd, texts[k]);
    /* indented lines after a line starting with "example", up to a blank line */
    const char *p = texts[k];
    while ((p = strstr(p, "\nexample"))) {
      p = strchr(p + 1, '\n');
      if (!p) break;
      p++;
      while (*p == ' ' && p[1] == ' ') take_line(&p, &c);
    }
  }
  /* hsad run --help shows four, hsad info --help two, hsad graph --help three */
  cr_assert_geq(c.n, 8, "found only %d example commands in the --help texts", c.n);
  int graph = 0;
  for (int i = 0; i < c.n; i++) graph += !strncmp(c.line[i], "hsad graph ", 11);
  cr_assert_eq(graph, 3, "hsad graph --help:\n%s", texts[6]);
  run_all(dir, &c, "--help");
  /* run --help says how to give a twin */
  cr_expect(strstr(texts[4], "KFD_EMU_TWINS") && strstr(texts[4], "kfd_emu_twin.h"), "%s",
            texts[4]);
  for (int k = 0; k < 7; k++) free(texts[k]);
  remove_tree(dir);
  for (int i = 0; i < c.n; i++) free(c.line[i]);
}

Test(cli_docs, readme_library_example, .timeout = 300) {
  char path[512];
  snprintf(path, sizeof path, "%s/README.md", HSAD_SRCDIR);
  char *md = slurp(path);
  const char *p = strstr(md, "```c\n");
  cr_assert_not_null(p, "README.md has no C example");
  p += 5;
  const char *end = strstr(p, "```");
  cr_assert_not_null(end);
  char dir[64];
  make_tree(dir);
  char src[128], cmd[2048], *o;
  snprintf(src, sizeof src, "%s/example.c", dir);
  FILE *f = fopen(src, "w");
  cr_assert_not_null(f);
  fwrite(p, 1, (size_t)(end - p), f);
  fclose(f);
  /* strict first (C11, every warning an error), then the README's own build-and-run line */
  snprintf(cmd, sizeof cmd, "%s -std=c11 -Wall -Wextra -Werror -I'%s' example.c -o example "
           "'%s/lib/libhsad.a' %s -lm", TEST_CC, HSAD_SRCDIR, HSAD_BUILDDIR, TEST_LIBS);
  cr_assert_eq(sh_in(dir, cmd, &o), 0, "`%s`:\n%s", cmd, o);
  free(o);
  const char *q = strstr(end, "`cc -std=c11 ");
  cr_assert_not_null(q, "README.md does not say how to build the example");
  q++;
  size_t qn = strcspn(q, "`");
  cr_assert_lt(qn, sizeof cmd);
  for (size_t i = 0; i < qn; i++) cmd[i] = q[i] == '\n' ? ' ' : q[i];
  cmd[qn] = '\0';
  free(md);
  if (TEST_SAN[0]) { /* a sanitizer build: libhsad.a needs the sanitizer's runtime */
    char *tail = strdup(cmd + 2);
    snprintf(cmd, sizeof cmd, "cc %s%s", TEST_SAN, tail);
    free(tail);
  }
  cr_assert_eq(sh_in(dir, cmd, &o), 0, "`%s`:\n%s", cmd, o);
  cr_expect_str_eq(o, "c[999] = 999.5\n", "`%s`", cmd);
  free(o);
  remove_tree(dir);
}

/* hsad --version: the version of common/hsad_version.h, exactly. */
Test(cli_docs, version_output) {
  char *o, want[64];
  cr_assert_eq(sh_in(HSAD_SRCDIR, "hsad --version", &o), 0, "%s", o);
  snprintf(want, sizeof want, "hsad %d.%d.%d\n", HSAD_VERSION_MAJOR, HSAD_VERSION_MINOR,
           HSAD_VERSION_PATCH);
  cr_assert_str_eq(o, want);
  free(o);
  cr_assert_eq(sh_in(HSAD_SRCDIR, "hsad --bogus", &o), 2, "%s", o);
  free(o);
}

/* `make install DESTDIR=... PREFIX=/usr` puts everything where README.md says (copies of this
 * build: `all` is taken as made); the installed hsad finds its kfd-emu with no variable set;
 * a user's twin built against the installed kfd_emu_twin.h runs through KFD_EMU_TWINS with an
 * exact result; the README's example links against the installed libhsad.so. */
Test(cli_docs, install_layout_and_user_twin, .timeout = 300) {
  char tmp[] = "/tmp/hsad-install-XXXXXX";
  cr_assert_not_null(mkdtemp(tmp));
  char cmd[4096], *o;
  snprintf(cmd, sizeof cmd, "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C '%s' -o all "
           "install DESTDIR='%s' PREFIX=/usr BUILD='%s'", HSAD_SRCDIR, tmp, HSAD_BUILDDIR);
  cr_assert_eq(sh_in(tmp, cmd, &o), 0, "`%s`:\n%s", cmd, o);
  free(o);
  static const char *const files[] = {
      "bin/hsad", "bin/hsad-bench-hip", "lib/libhsad.a", "lib/libhsad.so.0", "lib/libhsad.so",
      "lib/hsad/kfd-emu/libhsakmt.so.1", "lib/hsad/kfd-emu/libkfd-emu-twins.so",
      "lib/pkgconfig/hsad.pc", "include/hsad/hsa-dispatch/hsad.h",
      "include/hsad/hsa-dispatch/hsad_queue.h", "include/hsad/codeobj/hsad_codeobj.h",
      "include/hsad/common/hsad_version.h", "include/hsad/memory/hsad_memory.h",
      "include/hsad/fusion/hsad_fusion.h", "include/hsad/tools/kfd-emu/kfd_emu_twin.h",
      "include/hsad/tools/kfd-emu/kfd_emu.h", "share/hsad/kernels/saxpy.cl",
      "share/hsad/kernels/vector_add-gfx90a-v5.hsaco"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/usr/%s", tmp, files[i]);
    cr_expect_eq(access(path, R_OK), 0, "make install did not write %s", path);
    if (!strncmp(files[i], "bin/", 4))
      cr_expect_eq(access(path, X_OK), 0, "%s is not executable", path);
  }
  /* pkg-config, as README's Library section uses it */
  snprintf(cmd, sizeof cmd, "export PKG_CONFIG_PATH='%s/usr/lib/pkgconfig'; pkg-config "
           "--modversion hsad && pkg-config --cflags --libs hsad", tmp);
  cr_assert_eq(sh_in(tmp, cmd, &o), 0, "%s", o);
  char want[256];
  /* pkg-config drops -L/usr/lib, a system directory */
  snprintf(want, sizeof want, "%d.%d.%d\n-I/usr/include/hsad -lhsad \n", HSAD_VERSION_MAJOR,
           HSAD_VERSION_MINOR, HSAD_VERSION_PATCH);
  cr_expect_str_eq(o, want);
  free(o);
  /* the installed hsad: kfd-emu from ../lib/hsad/kfd-emu beside it, nothing from this build */
  snprintf(cmd, sizeof cmd, "env -u LD_LIBRARY_PATH -u HSAD_KFD_EMU_DIR '%s/usr/bin/hsad' info",
           tmp);
  cr_assert_eq(sh_in(tmp, cmd, &o), 0, "%s", o);
  cr_expect(strstr(o, "GPU 0: gfx90a"), "%s", o);
  cr_expect(!strstr(o, "error") && !strstr(o, "warning"), "%s", o);
  free(o);
  /* README's examples from the installed copy: its kernels in share/hsad/kernels (issue 21) */
  snprintf(cmd, sizeof cmd, "env -u LD_LIBRARY_PATH -u HSAD_KFD_EMU_DIR '%s/usr/bin/hsad' run "
           "'%s/usr/share/hsad/kernels/vector_add-gfx90a-v5.hsaco' vector_add --grid 4 "
           "--arg buf:f32:4:iota --arg buf:f32:4:iota --arg buf:f32:4:out --arg u32:4", tmp, tmp);
  cr_assert_eq(sh_in(tmp, cmd, &o), 0, "%s", o);
  cr_expect(strstr(o, "0 2 4 6"), "%s", o);
  free(o);
  /* a user's twin, against the installed header, for a kernel kfd-emu has no twin for */
  snprintf(cmd, sizeof cmd, "%s -shared -fPIC -Wall -Wextra -Werror -I'%s/usr/include' "
           "'%s/tests/data/cli/user_twin.c' -o libmytwins.so", TEST_CC, tmp, HSAD_SRCDIR);
  cr_assert_eq(sh_in(tmp, cmd, &o), 0, "`%s`:\n%s", cmd, o);
  free(o);
  /* its own source first: hsad run FILE.cl carries it, and kfd-emu runs it through POCL even
   * with a twin of the same name given (a twin is never chosen by name over the source) */
  static const char run[] = "'%s/usr/bin/hsad' run '%s' poly "
                            "--grid 1000 --block 256 --arg buf:f32:1000:out=y.bin "
                            "--arg buf:f32:1000:iota --arg f32:2 --arg u32:1000";
  char line[2048], src[512];
  snprintf(src, sizeof src, "%s/tests/data/cli/user_twin.cl", HSAD_SRCDIR);
  snprintf(line, sizeof line, run, tmp, src);
  snprintf(cmd, sizeof cmd, "env -u LD_LIBRARY_PATH -u HSAD_KFD_EMU_DIR "
           "KFD_EMU_TWINS='%s/libmytwins.so' %s", tmp, line);
  cr_assert_eq(sh_in(tmp, cmd, &o), 0, "%s", o);
  cr_expect(strstr(o, "kfd-emu (the kernel ran from its OpenCL C source through POCL;"), "%s", o);
  cr_expect(!strstr(o, "warning") && !strstr(o, "host twin"), "%s", o);
  free(o);
  char path[512];
  snprintf(path, sizeof path, "%s/y.bin", tmp);
  for (int pass = 0; pass < 2; pass++) {
    if (pass) {
      /* the same kernel from a code object without source (clang alone): no twin, the error
       * naming both remedies; the user's twin, the run */
      cr_assert_eq(remove(path), 0, "%s", path);
      snprintf(line, sizeof line, run, tmp, USER_TWIN_HSACO);
      snprintf(cmd, sizeof cmd, "env -u LD_LIBRARY_PATH -u HSAD_KFD_EMU_DIR %s", line);
      cr_assert_eq(sh_in(tmp, cmd, &o), 1, "%s", o);
      char want[1024];
      snprintf(want, sizeof want, "hsad run: HSAD_ERR_UNSUPPORTED: %s: kernel poly has neither "
               "source nor a host twin: build its code object with hsad (hsad compile, hsad run "
               "FILE.cl, hsad_codeobj_compile), which carries the OpenCL C source, or name the "
               "source in KFD_EMU_CL_SOURCE=FILE.cl (hsad run --source FILE.cl); or give a twin "
               "kfd_emu_twin_poly in "
               "KFD_EMU_TWINS (kfd_emu_twin.h); KFD_EMU_NO_TWIN=noop completes it unexecuted\n",
               USER_TWIN_HSACO);
      cr_expect_str_eq(o, want);
      free(o);
      snprintf(cmd, sizeof cmd, "env -u LD_LIBRARY_PATH -u HSAD_KFD_EMU_DIR "
               "KFD_EMU_TWINS='%s/libmytwins.so' %s", tmp, line);
      cr_assert_eq(sh_in(tmp, cmd, &o), 0, "%s", o);
      cr_expect(strstr(o, "kfd-emu (kernels ran as host twins;"), "%s", o);
      /* the one warning: hsad run says the twin ran (kfd-emu itself is silent) */
      static const char said[] = "hsad run: warning: ran host twin of 'poly' (no source)\n";
      const char *w = strstr(o, said);
      cr_expect(w && strstr(o, "warning") == w + 10 && !strstr(w + sizeof said - 1, "warning") &&
                !strstr(o, "kfd-emu: "), "%s", o);
      free(o);
    }
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    float y[1000];
    cr_assert_eq(fread(y, 4, 1000, f), 1000);
    cr_assert_eq(fgetc(f), EOF);
    fclose(f);
    for (int i = 0; i < 1000; i++) {
      float x = (float)i, e = 2.0f * x * x + 1.0f;
      cr_assert_eq(y[i], e, "pass %d: y[%d] = %.9g, want %.9g", pass, i, y[i], e);
    }
  }
  /* README's C example against the installed headers and libhsad.so: kfd-emu found beside the
   * library (lib/hsad/kfd-emu), no variable */
  snprintf(path, sizeof path, "%s/README.md", HSAD_SRCDIR);
  char *md = slurp(path);
  const char *p = strstr(md, "```c\n");
  cr_assert_not_null(p, "README.md has no C example");
  p += 5;
  const char *end = strstr(p, "```");
  cr_assert_not_null(end);
  char dir[64];
  make_tree(dir);
  snprintf(path, sizeof path, "%s/example.c", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fwrite(p, 1, (size_t)(end - p), f);
  fclose(f);
  free(md);
  snprintf(cmd, sizeof cmd, "%s -std=c11 -Wall -Wextra -Werror -I'%s/usr/include/hsad' "
           "example.c -o example -L'%s/usr/lib' -lhsad && env -u HSAD_KFD_EMU_DIR "
           "LD_LIBRARY_PATH='%s/usr/lib' ./example", TEST_CC, tmp, tmp, tmp);
  cr_assert_eq(sh_in(dir, cmd, &o), 0, "`%s`:\n%s", cmd, o);
  cr_expect_str_eq(o, "c[999] = 999.5\n", "`%s`", cmd);
  free(o);
  remove_tree(dir);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
  cr_assert_eq(system(cmd), 0);
}
