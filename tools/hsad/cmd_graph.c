/* cmd_graph.c - `hsad graph FILE.json`: build a kernel graph from JSON, launch it N times
 * (fused, or --sequential: the rollback path), check buffers, report times.
 *
 * Format (json-c; every error names the node / buffer and the field):
 *   {
 *     "kernels": { "NAME": {"code_object": "PATH.hsaco" | "source": "PATH.cl|.hip",
 *                           "kernel": "KERNEL"}, ... },
 *     "buffers": { "NAME": {"type": "f32", "count": N, "init": "zeros|iota|const=V"}, ... },
 *     "nodes": [ {"name": "N", "kernel": "NAME", "lane": 0, "grid": [X,Y,Z], "block": [..],
 *                 "args": ["BUFFER", {"f32": 2.5}, {"u32": 7}, {"f32": [1, 2, 3, 4]},
 *                          {"hex": "BYTES[*N]"}, {"lds": BYTES}, ...],
 *                 "deps": ["OTHER NODE", ...]},
 *               {"name": "N", "copy": {"dst": "BUFFER", "src": "BUFFER", "count": ELEMENTS},
 *                "lane": 0, "deps": [...]},
 *               {"name": "N", "fill": {"dst": "BUFFER", "value": V, "count": ELEMENTS}}, ... ],
 *     "checks": [ {"buffer": "NAME", "equals": V | [V0, V1, ...]} ]
 *   }
 * A copy or fill node runs the library's copy / fill kernel (hsad_graph_add_copy / _fill): no
 * "kernel", "grid", "block" or "args"; "count" in elements of dst's type (default: all of dst,
 * a copy also at most src's), a copy's buffers have elements of one size and are not the same
 * buffer, a fill's value is one element of dst's type (1, 2 or 4 bytes).
 * Any other key is an error naming it, where it is and the known keys; a key given twice in one
 * object is an error naming its line and column and the first one's (json-c keeps the last
 * value alone, so the first definition would be lost without a word). An "equals" array has at
 * most as many values as the buffer has elements; checks are validated before anything runs.
 * Relative "code_object" / "source" paths are relative to the JSON file's folder. A kernel's
 * "kernel" is looked up as hsad run's KERNEL (hsad_cli_program_kernel): its .name or symbol, or
 * for C++ its demangled name or function name ("scale(float*, float, unsigned int)", "scale"),
 * with hsad run's messages when no kernel or several match; a node's "kernel" is a NAME under
 * "kernels", exactly.
 * Lane i runs on its own queue. Types (buffers and scalars): i8 u8 i16 u16 i32 u32 i64 u64 f32
 * f64. A node's args are checked against the kernel's metadata as hsad run's --arg are
 * (tools/hsad/cli_args.c, the same messages: a float takes {"f32": V}, a float* a buffer of
 * type "f32"), and each value against its type (an integer in range, no fraction). "equals" with one value
 * checks every element, with an array the first elements (exact comparison). Checks describe
 * one launch: they run after the first launch (buffers are not re-initialized between launches,
 * so later launches only add timings).
 * On an NVIDIA device (--device N) the graph is a CUDA graph (nvidia/nv_graph.c): a kernel's
 * "code_object" is a .cubin, .fatbin or .ptx file, its "source" a CUDA .cu file compiled with
 * NVRTC for the device's sm; args are checked as hsad run's on NVIDIA (cli_check_nv_args: the
 * parameter sizes of the cubin's .nv.info; a 3-vector is 3 elements wide, CUDA's layout).
 */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <getopt.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fusion/hsad_fusion.h"
#include "nvcodeobj/hsad_nv_codeobj.h"
#include "tools/hsad/hsad_cli.h"
#include "tools/hsad/hsad_cli_args.h"

static void usage(FILE *f) {
  fprintf(f, "usage: hsad graph FILE.json [--launches N] [--sequential] [--device N] [--json]\n"
             "\nInstantiates the graph described by FILE.json (format: tools/hsad/cmd_graph.c and\n"
             "README.md), launches it N times (default 1) fused as one submission per queue, or\n"
             "with --sequential one node at a time (the rollback path), checks the \"checks\"\n"
             "after the first launch, and prints the path taken and host submit / submit+wait\n"
             "times per launch. --json: one JSON object on stdout, {\"graph\": {\"file\", \"nodes\",\n"
             "\"queues\", \"launches\", \"path\" (of the last launch), \"paths\" (launches per path),\n"
             "\"fused\", \"cuda_graph\" (an NVIDIA device: one CUDA graph), \"queue_packets\" (AMD),\n"
             "\"host_submit_us\",\n"
             "\"submit_wait_us\" (median, min), \"checks\": [{\"buffer\", \"elements\"}]}}, or on\n"
             "failure {\"error\": {\"command\", \"status\", \"exit_code\", \"message\"}}.\n"
             "\nexamples (from the source tree, after make):\n"
             "  hsad graph examples/saxpy-pipeline.json --launches 100\n"
             "  hsad graph examples/saxpy-pipeline.json --sequential\n"
             "  hsad graph examples/fork-join.json --launches 100   # fork to lane 1, join on lane 0\n");
}

enum { MAXK = 32, MAXB = 64, MAXN = 1024, MAXA = 16 };
typedef struct gbuf { const char *name; etype_t t; uint32_t esize; uint64_t count; void *ptr; } gbuf_t;

/* v as an element of type t (integers from iv, floats from v), little-endian */
static void put_value(etype_t t, double v, int64_t iv, uint8_t out[8]) {
  if (t == T_F32) {
    float x = (float)v;
    memcpy(out, &x, 4);
  } else if (t == T_F64) {
    memcpy(out, &v, 8);
  } else {
    memcpy(out, &iv, cli_tsize[t]); /* the low bytes (little-endian) */
  }
}

/* Element i of b as text that tells it from every other value of its type: integers exactly,
 * f32 with 9 significant digits, f64 with 17 (%.9g merged 4000000001 and 4000000000 into
 * "4e+09", and 0.30000000000000004 into "0.3"). */
static const char *format_value(const gbuf_t *b, uint64_t i, char out[48]) {
  if (cli_is_float(b->t)) {
    snprintf(out, 48, b->t == T_F64 ? "%.17g" : "%.9g", cli_elem_double(b->t, b->ptr, i));
  } else {
    __int128 v = cli_elem_int(b->t, b->ptr, i); /* within int64_t or uint64_t: one element */
    if (v < 0) snprintf(out, 48, "%lld", (long long)v);
    else snprintf(out, 48, "%llu", (unsigned long long)v);
  }
  return out;
}

/* The first key of object o that is not in known[] (NULL-terminated): writes
 * 'unknown key "grdi" (known: name, kernel, ...)' to why and returns -1; 0 when all are known. */
static int unknown_key(json_object *o, const char *const *known, char *why, size_t whyn) {
  json_object_object_foreach(o, key, val) {
    (void)val;
    size_t i = 0;
    while (known[i] && strcmp(known[i], key)) i++;
    if (known[i]) continue;
    size_t k = (size_t)snprintf(why, whyn, "unknown key \"%s\" (known:", key);
    for (i = 0; known[i] && k < whyn; i++)
      k += (size_t)snprintf(why + k, whyn - k, "%s %s", i ? "," : "", known[i]);
    if (k < whyn) snprintf(why + k, whyn - k, ")");
    return -1;
  }
  return 0;
}
static const char *const top_keys[] = {"kernels", "buffers", "nodes", "checks", NULL};
static const char *const kernel_keys[] = {"code_object", "source", "kernel", NULL};
static const char *const buffer_keys[] = {"type", "count", "init", NULL};
static const char *const node_keys[] = {"name", "kernel", "lane", "grid", "block", "args", "deps",
                                        "copy", "fill", NULL};
static const char *const copy_keys[] = {"dst", "src", "count", NULL};
static const char *const fill_keys[] = {"dst", "value", "count", NULL};

/* A copy or fill node's operands (hsad_graph_add_copy / _fill). */
typedef struct blit_node {
  bool fill;
  void *dst;
  const void *src;
  uint64_t bytes;     /* copy */
  uint32_t pattern;   /* fill: the value's bytes */
  uint32_t width;     /* fill: element bytes */
  uint64_t count;     /* fill: elements */
} blit_node_t;

static int json_uint(json_object *v, uint64_t lo, uint64_t hi, uint64_t *out, char *why, size_t whyn);
static int check_value(etype_t t, json_object *v, uint8_t want[8], char *why, size_t whyn);

/* The buffer named by field `key` of object o, or -1 with why. */
static int blit_buffer(json_object *o, const char *what, const char *key, const gbuf_t *bufs,
                       uint32_t nb, char *why, size_t whyn) {
  json_object *v;
  if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string)) {
    snprintf(why, whyn, "field \"%s\".\"%s\": missing or not a buffer name", what, key);
    return -1;
  }
  for (uint32_t i = 0; i < nb; i++)
    if (!strcmp(bufs[i].name, json_object_get_string(v))) return (int)i;
  snprintf(why, whyn, "field \"%s\".\"%s\": no buffer '%s'", what, key, json_object_get_string(v));
  return -1;
}

/* Parses {"copy": {"dst", "src", "count"}} or {"fill": {"dst", "value", "count"}}: count in
 * elements of dst's type (default: all of dst), within both buffers; a copy's buffers have
 * elements of one size; a fill's value is one element of dst's type (1, 2 or 4 bytes). */
static int parse_blit(json_object *nd, json_object *jcopy, json_object *jfill, const gbuf_t *bufs,
                      uint32_t nb, blit_node_t *out, char *why, size_t whyn) {
  static const char *const others[] = {"kernel", "grid", "block", "args"};
  const char *what = jcopy ? "copy" : "fill";
  json_object *o = jcopy ? jcopy : jfill, *v;
  if (jcopy && jfill) return snprintf(why, whyn, "fields \"copy\" and \"fill\": a node is one of them"), -1;
  for (int i = 0; i < 4; i++)
    if (json_object_object_get_ex(nd, others[i], &v))
      return snprintf(why, whyn, "field \"%s\": a %s node has none (it runs the library's %s "
                      "kernel)", others[i], what, what), -1;
  if (!json_object_is_type(o, json_type_object))
    return snprintf(why, whyn, "field \"%s\": not an object", what), -1;
  char w[256];
  if (unknown_key(o, jcopy ? copy_keys : fill_keys, w, sizeof w))
    return snprintf(why, whyn, "field \"%s\": %s", what, w), -1;
  int di = blit_buffer(o, what, "dst", bufs, nb, why, whyn);
  if (di < 0) return -1;
  const gbuf_t *d = &bufs[di];
  uint64_t count = d->count;
  int si = -1;
  if (jcopy) {
    if ((si = blit_buffer(o, what, "src", bufs, nb, why, whyn)) < 0) return -1;
    if (si == di)
      return snprintf(why, whyn, "field \"copy\": src %s is dst (copy nodes have memcpy "
                      "semantics: the ranges must not overlap)", d->name), -1;
    if (bufs[si].esize != d->esize)
      return snprintf(why, whyn, "field \"copy\": src %s has %u-byte elements, dst %s %u-byte",
                      bufs[si].name, bufs[si].esize, d->name, d->esize), -1;
    if (bufs[si].count < count) count = bufs[si].count;
  }
  if (json_object_object_get_ex(o, "count", &v) && json_uint(v, 1, count, &count, w, sizeof w))
    return snprintf(why, whyn, "field \"%s\".\"count\": %s (elements%s)", what, w,
                    jcopy ? " of both buffers" : " of dst"), -1;
  *out = (blit_node_t){.fill = !jcopy, .dst = d->ptr, .count = count};
  if (jcopy) {
    out->src = bufs[si].ptr;
    out->bytes = count * d->esize;
    return 0;
  }
  if (d->esize > 4)
    return snprintf(why, whyn, "field \"fill\": dst %s has %u-byte elements; a fill writes 1, "
                    "2 or 4", d->name, d->esize), -1;
  if (!json_object_object_get_ex(o, "value", &v))
    return snprintf(why, whyn, "field \"fill\".\"value\": missing"), -1;
  uint8_t want[8] = {0};
  if (check_value(d->t, v, want, w, sizeof w))
    return snprintf(why, whyn, "field \"fill\".\"value\": %s", w), -1;
  memcpy(&out->pattern, want, 4);
  out->width = d->esize;
  return 0;
}
static const char *const check_keys[] = {"buffer", "equals", NULL};

/* A check's value v as an element of type t into want (cli_parse_scalar: an integer in range,
 * no fraction); -1 with why otherwise. */
static int check_value(etype_t t, json_object *v, uint8_t want[8], char *why, size_t whyn) {
  if (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double)) {
    snprintf(why, whyn, "%s is not a number", json_object_to_json_string(v));
    return -1;
  }
  return cli_parse_scalar(t, json_object_to_json_string(v), want, why, whyn);
}

/* v as an integer from lo to hi into *out; -1 with why ("'-1' is not an integer from 0 to 63",
 * the value as written) otherwise. */
static int json_uint(json_object *v, uint64_t lo, uint64_t hi, uint64_t *out, char *why, size_t whyn) {
  const char *text = json_object_to_json_string(v);
  if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0 ||
      json_object_get_uint64(v) < lo || json_object_get_uint64(v) > hi) {
    snprintf(why, whyn, "'%s' is not an integer from %llu to %llu", text, (unsigned long long)lo,
             (unsigned long long)hi);
    return -1;
  }
  *out = json_object_get_uint64(v);
  return 0;
}

/* cli_check_args' warnings: "hsad graph: warning: node N: ..." on stderr (ctx: the node's name) */
static void graph_warn(void *ctx, const char *msg) {
  fprintf(stderr, "hsad graph: warning: node %s: %s\n", (const char *)ctx, msg);
}

/* Byte offset of the first \u0000 escape in JSON text (json-c keeps the NUL, and every name, path
 * and value here is used as a C string, so "x\u0000junk" would be buffer "x"), or n. Backslashes
 * occur only inside strings and pair up, so an odd run of them before "u0000" is an escape. */
static size_t nul_escape_at(const char *text, size_t n) {
  for (size_t i = 1; i + 5 <= n; i++) {
    if (memcmp(text + i, "u0000", 5)) continue;
    size_t b = 0;
    while (b < i && text[i - 1 - b] == '\\') b++;
    if (b % 2) return i - 1;
  }
  return n;
}

/* One object being scanned by duplicate_key_at: where each key's text starts and its length. */
typedef struct key_frame { bool object, expect_key; size_t nkeys, cap, *at, *len; } key_frame_t;

typedef struct key_sort { const char *text; const key_frame_t *f; } key_sort_t;

/* Orders key indices by text, then by position (qsort_r). */
static int key_cmp(const void *x, const void *y, void *ctx) {
  const key_sort_t *k = ctx;
  size_t i = *(const size_t *)x, j = *(const size_t *)y;
  size_t li = k->f->len[i], lj = k->f->len[j];
  int c = memcmp(k->text + k->f->at[i], k->text + k->f->at[j], li < lj ? li : lj);
  if (!c) c = li < lj ? -1 : li > lj;
  return c ? c : (k->f->at[i] < k->f->at[j] ? -1 : 1);
}

/* The key of f given twice whose second occurrence comes first (raw text compared, so "\u0078"
 * and "x" differ): sets *first, *second to the byte offsets of the two opening quotes; false
 * when every key differs. Sorted, O(k log k): a file of many keys does not stall the check. */
static bool frame_duplicate(const char *text, const key_frame_t *f, size_t *first, size_t *second) {
  if (f->nkeys < 2) return false;
  size_t *idx = malloc(f->nkeys * sizeof *idx);
  if (!idx) return false; /* out of memory: the check is skipped, json-c's reading stands */
  for (size_t i = 0; i < f->nkeys; i++) idx[i] = i;
  key_sort_t k = {text, f};
  qsort_r(idx, f->nkeys, sizeof *idx, key_cmp, &k);
  bool found = false;
  for (size_t j = 1; j < f->nkeys; j++) {
    size_t p = idx[j - 1], q = idx[j];
    if (f->len[p] != f->len[q] || memcmp(text + f->at[p], text + f->at[q], f->len[q])) continue;
    if (j >= 2 && f->len[idx[j - 2]] == f->len[q] &&
        !memcmp(text + f->at[idx[j - 2]], text + f->at[q], f->len[q]))
      continue; /* a third occurrence: the group's second is the one to report */
    if (!found || f->at[q] < *second) *first = f->at[p], *second = f->at[q], found = true;
  }
  free(idx);
  return found;
}

/* Byte offset of the first key given a second time in one object of valid JSON text (json-c
 * keeps the last value alone: a buffer, kernel or field defined twice would silently be its
 * second definition), *first_at the first one's; n when there is none. Every object is
 * checked when it closes; the duplicate reported is the earliest in the text among them. Out
 * of memory, the check is skipped (n). */
static size_t duplicate_key_at(const char *text, size_t n, size_t *first_at) {
  key_frame_t *st = NULL;
  size_t depth = 0, cap = 0, best = n;
  bool oom = false;
  for (size_t i = 0; i < n && !oom; i++) {
    char c = text[i];
    key_frame_t *top = depth ? &st[depth - 1] : NULL;
    if (c == '"') {
      size_t j = i + 1;
      while (j < n && text[j] != '"') j += text[j] == '\\' ? 2 : 1;
      if (top && top->object && top->expect_key) {
        if (top->nkeys == top->cap) {
          size_t ncap = top->cap ? 2 * top->cap : 8;
          size_t *at = realloc(top->at, ncap * sizeof *at);
          if (at) top->at = at;
          size_t *len = at ? realloc(top->len, ncap * sizeof *len) : NULL;
          if (len) top->len = len;
          if (!at || !len) {
            oom = true;
            break;
          }
          top->cap = ncap;
        }
        top->at[top->nkeys] = i;
        top->len[top->nkeys++] = j + 1 - i;
        top->expect_key = false;
      }
      i = j;
    } else if (c == '{' || c == '[') {
      if (depth == cap) {
        key_frame_t *more = realloc(st, (cap ? 2 * cap : 16) * sizeof *st);
        if (!more) {
          oom = true;
          break;
        }
        st = more;
        cap = cap ? 2 * cap : 16;
      }
      st[depth++] = (key_frame_t){.object = c == '{', .expect_key = c == '{'};
    } else if ((c == '}' || c == ']') && top) {
      size_t a = 0, b = 0;
      if (top->object && frame_duplicate(text, top, &a, &b) && b < best) best = b, *first_at = a;
      free(top->at);
      free(top->len);
      depth--;
    } else if (c == ',' && top && top->object) {
      top->expect_key = true;
    }
  }
  while (depth) free(st[depth - 1].at), free(st[depth - 1].len), depth--;
  free(st);
  return oom ? n : best;
}

/* Line and column (from 1) of byte `at` of text. */
static void line_column(const char *text, size_t n, size_t at, uint64_t *line, uint64_t *col) {
  *line = 1, *col = 1;
  for (size_t i = 0; i < at && i < n; i++) {
    if (text[i] == '\n') ++*line, *col = 1;
    else ++*col;
  }
}

/* The JSON object of file `path`, or NULL with why: "F: No such file or directory", "F is a
 * directory", "F: line 3, column 7: JSON parse error: unexpected character" (json-c's
 * json_tokener_error_desc), "F: line 1, column 2: the JSON ends early (an unclosed { or [)",
 * "F: line 9, column 1: text after the JSON value", "F: line 1, column 40 (byte 39): a \u0000
 * escape (a NUL character) in a string: ...", "F: line 2, column 37 (byte 83): key "x" given a
 * second time in the same object (first at line 1, column 14): ...". */
static json_object *parse_file(const char *path, char *why, size_t whyn) {
  struct stat st;
  if (stat(path, &st)) {
    snprintf(why, whyn, "%s: %s", path, strerror(errno));
    return NULL;
  }
  if (S_ISDIR(st.st_mode)) {
    snprintf(why, whyn, "%s is a directory (give a graph's .json file)", path);
    return NULL;
  }
  size_t n = 0;
  char *text = hsad_cli_slurp(path, &n);
  if (!text) {
    snprintf(why, whyn, "%s: %s", path, errno ? strerror(errno) : "cannot read");
    return NULL;
  }
  json_tokener *tok = json_tokener_new();
  if (!tok) {
    free(text);
    snprintf(why, whyn, "out of memory");
    return NULL;
  }
  json_object *o = json_tokener_parse_ex(tok, text, (int)n);
  enum json_tokener_error e = json_tokener_get_error(tok);
  size_t at = json_tokener_get_parse_end(tok);
  if (o && e == json_tokener_success)
    while (at < n && strchr(" \t\r\n", text[at])) at++;
  const char *what = NULL;
  char desc[256];
  size_t first = 0;
  if (e == json_tokener_continue || (!o && e == json_tokener_success)) {
    what = n ? "the JSON ends early (an unclosed {, [ or string)" : "the file is empty (no JSON)";
    at = n;
  } else if (e != json_tokener_success) {
    snprintf(desc, sizeof desc, "JSON parse error: %s", json_tokener_error_desc(e));
    what = desc;
  } else if (at < n) {
    what = "text after the JSON value";
  } else if ((at = nul_escape_at(text, n)) < n) {
    what = "a \\u0000 escape (a NUL character) in a string: names, paths and values are C "
           "strings, which would end there";
  } else if ((at = duplicate_key_at(text, n, &first)) < n) {
    uint64_t fl, fc;
    line_column(text, n, first, &fl, &fc);
    size_t klen = strcspn(text + at + 1, "\"") + 2;
    snprintf(desc, sizeof desc, "key %.*s given a second time in the same object (first at line "
             "%llu, column %llu): JSON keeps only the last value; give each key once",
             (int)(klen > 64 ? 64 : klen), text + at, (unsigned long long)fl,
             (unsigned long long)fc);
    what = desc;
  }
  if (what) {
    uint64_t line, col;
    line_column(text, n, at, &line, &col);
    snprintf(why, whyn, "%s: line %llu, column %llu (byte %zu): %s", path,
             (unsigned long long)line, (unsigned long long)col, at, what);
    if (o) json_object_put(o);
    o = NULL;
  }
  json_tokener_free(tok);
  free(text);
  return o;
}

/* path relative to the folder of `file` unless absolute */
static const char *rel_path(const char *file, const char *p, char *buf, size_t n) {
  const char *slash = strrchr(file, '/');
  if (p[0] == '/' || !slash) return p;
  snprintf(buf, n, "%.*s/%s", (int)(slash - file), file, p);
  return buf;
}

/* NVIDIA: a kernel's program image (for its .nv.info) and its parameter sizes (NULL: PTX or no
 * record, as hsad run: the arguments are then checked by the driver's layout at instantiate). */
typedef struct nv_kernel_meta {
  void *image;
  size_t size;
  uint32_t sm;
  const char *label;
  uint32_t *sizes, count;
} nv_kernel_meta_t;

/* Loads path on NVIDIA device dev: a .cu source through NVRTC for its sm, else the file as the
 * driver takes it (cubin, fatbin, PTX). 1 and why on error. */
static int nv_load(hsad_device_t *dev, const char *path, bool source, hsad_program_t **out,
                   nv_kernel_meta_t *m, char *why, size_t whyn) {
  const hsad_device_info_t *di = hsad_device_info(dev);
  char target[16];
  snprintf(target, sizeof target, "sm_%u%u", di->cc_major, di->cc_minor);
  m->sm = di->cc_major * 10 + di->cc_minor;
  m->label = path;
  size_t n = 0;
  char *data = hsad_cli_slurp(path, &n);
  if (!data) return snprintf(why, whyn, "%.1024s: %s", path, strerror(errno)), 1;
  if (source) {
    hsad_nv_compile_options_t o = {.target = target};
    char *log = NULL;
    void *cubin = NULL;
    size_t cs = 0;
    hsad_status_t s = hsad_nv_compile(data, path, &o, &cubin, &cs, &log);
    free(data);
    free(log);
    if (s) return snprintf(why, whyn, "%s: %s", hsad_status_name(s), hsad_last_error()), 1;
    data = cubin, n = cs;
  }
  hsad_status_t s = hsad_program_load_memory(dev, data, n, path, out);
  if (s) {
    free(data);
    return snprintf(why, whyn, "%s: %s", hsad_status_name(s), hsad_last_error()), 1;
  }
  m->image = data, m->size = n;
  return 0;
}

/* m->sizes for kernel `name` from the image's cubin for m->sm (none for PTX). 1: no memory. */
static int nv_sizes(nv_kernel_meta_t *m, const char *name) {
  hsad_nv_program_t *meta = NULL;
  size_t ei;
  const hsad_nv_kernel_info_t *ki = NULL;
  if (!hsad_nv_program_open_memory(m->image, m->size, m->label, &meta) &&
      !hsad_nv_program_select(meta, m->sm, &ei)) {
    const hsad_nv_entry_t *en = hsad_nv_program_entry(meta, ei);
    if (en->kind != HSAD_NV_ENTRY_ELF || hsad_nv_entry_find_kernel(en, name, &ki) ||
        !(ki->present & HSAD_NV_KI_HAS_PARAMS))
      ki = NULL;
  }
  hsad_clear_error();
  int rc = 0;
  if (ki && (m->sizes = calloc(ki->param_count + 1, sizeof *m->sizes)) != NULL) {
    m->count = ki->param_count;
    for (uint32_t i = 0; i < ki->param_count; i++) m->sizes[i] = ki->params[i].size;
  } else if (ki) {
    rc = 1;
  }
  hsad_nv_program_destroy(meta);
  return rc;
}

/* "argument A of kernel 'K'" (NVIDIA: CUDA code objects name no parameters), else as hsad run
 * labels an AMD kernel's argument. */
static const char *arg_label(bool nv, const hsad_device_kernel_desc_t *kd, uint32_t a, char *b,
                             size_t n) {
#ifndef HSAD_NO_AMD
  if (!nv) return cli_arg_label_of(kd, a, b, n);
#else
  (void)nv;
#endif
  snprintf(b, n, "argument %u of kernel '%s'", a, kd->name);
  return b;
}

/* ---- the command: one state object, phases that return an exit code (0: go on) ----------- */

#define TRY HSAD_CLI_TRY /* hsad_cli.h: runs a phase; its nonzero result ends the command */
/* errors through hsad_cli_fail: "hsad graph: MESSAGE" on stderr, or the JSON error object */
#define GRAPH_FAIL(gc, ...) hsad_cli_fail(&(gc)->cli, 1, "error", __VA_ARGS__)
#define GRAPH_USAGE(gc, ...) hsad_cli_fail(&(gc)->cli, 2, "usage", __VA_ARGS__)

/* Everything hsad graph holds, from the command line to the report; graph_free releases it. */
typedef struct graph_cmd {
  hsad_cli_t cli;
  /* the command line (graph_parse_options) */
  const char *file;
  uint32_t launches, devi;
  bool sequential;
  char why[2048];
  /* the JSON and the device (graph_open) */
  json_object *root;
  hsad_runtime_t *rt;
  hsad_device_t *dev;
  bool nv; /* an NVIDIA device: the graph is a CUDA graph */
  /* "kernels" (graph_load_kernels); progs[nk] may be loaded before its kernel is found */
  hsad_program_t *progs[MAXK];
  const hsad_device_kernel_t *kern[MAXK];
  const char *kname[MAXK];
  nv_kernel_meta_t nvk[MAXK];
  uint32_t nk;
  /* "buffers" (graph_read_buffers) */
  gbuf_t bufs[MAXB];
  uint32_t nb;
  /* "nodes" (graph_add_nodes) */
  hsad_graph_t *g;
  const char *nname[MAXN];
  bool nname_own[MAXN]; /* a default name ("#i"), strdup'd */
  arg_t gargs[MAXA];    /* one node's arguments (hex: bytes malloc'd until the node is added) */
  uint32_t nn, nlanes, ngargs;
  /* "checks" (graph_read_checks: validated before anything runs) */
  json_object *checks;
  uint32_t check_buf[MAXN]; /* the buffer of each check */
  size_t nc;
  /* the launches (graph_instantiate, graph_launch_loop) */
  hsad_queue_t *queues[HSAD_GRAPH_MAX_LANES];
  hsad_graph_exec_t *x;
  uint32_t nq;
  hsad_completion_t done[HSAD_GRAPH_MAX_LANES];
  hsad_graph_rollback_t rb; /* the last launch's path */
  uint64_t *tsub, *twait;   /* ns per launch: submit, submit+wait; sorted after the loop */
  uint64_t counts[HSAD_GRAPH_ROLLBACK_COUNT]; /* launches per path */
  json_object *checks_report; /* --json: the checks that held */
  char checked[4096];         /* the check lines, printed after the summary */
} graph_cmd_t;

/* One node of "nodes" being added (graph_add_node's phases). */
typedef struct graph_node {
  uint32_t index;
  const char *name;
  json_object *json;
  bool blit; /* a copy or fill node: bl */
  blit_node_t bl;
  uint32_t ki, lane; /* ki: the index of its kernel under "kernels" */
  hsad_launch_t l;
  hsad_karg_t args[MAXA];
  uint32_t deps[MAXN], ndeps;
} graph_node_t;

static void graph_free(graph_cmd_t *gc) {
  for (uint32_t a = 0; a < gc->ngargs; a++) free(gc->gargs[a].bytes);
  for (uint32_t i = 0; i < MAXN; i++)
    if (gc->nname_own[i]) free((char *)gc->nname[i]);
  free(gc->tsub);
  free(gc->twait);
  hsad_graph_exec_destroy(gc->x);
  hsad_graph_destroy(gc->g);
  for (uint32_t i = 0; i < gc->nlanes; i++) hsad_queue_destroy(gc->queues[i]);
  for (uint32_t i = 0; i < gc->nb; i++) hsad_buffer_free(gc->bufs[i].ptr);
  /* nk + 1: a program whose "kernel" lookup failed is loaded but not counted yet */
  for (uint32_t i = 0; i <= gc->nk && i < MAXK; i++) {
    hsad_program_destroy(gc->progs[i]);
    free(gc->nvk[i].sizes);
    free(gc->nvk[i].image);
  }
  if (gc->rt) hsad_runtime_close(gc->rt);
  if (gc->root) json_object_put(gc->root);
  json_object_put(gc->checks_report);
}

/* A library failure: the status name and hsad_last_error(). */
static int graph_check(graph_cmd_t *gc, hsad_status_t s) {
  if (!s) return 0;
  return hsad_cli_fail(&gc->cli, 1, hsad_status_name(s), "%s: %s", hsad_status_name(s),
                       hsad_last_error());
}

/* ---- phase: parse options ------------------------------------------------------------------ */

enum { OPT_LAUNCHES = 256, OPT_SEQUENTIAL, OPT_DEVICE, OPT_JSON };
static const struct option graph_opts[] = {{"launches", required_argument, NULL, OPT_LAUNCHES},
                                           {"sequential", no_argument, NULL, OPT_SEQUENTIAL},
                                           {"device", required_argument, NULL, OPT_DEVICE},
                                           {"json", no_argument, NULL, OPT_JSON},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};

/* One option getopt_long returned (opt) with its value v (ctx: the graph_cmd_t). */
static int graph_option(void *ctx, int opt, const char *v, char **argv) {
  graph_cmd_t *gc = ctx;
  char *end;
  unsigned long n;
  switch (opt) {
  case 'h': usage(stdout); return HSAD_CLI_DONE;
  case OPT_SEQUENTIAL: gc->sequential = true; return 0;
  case OPT_JSON: gc->cli.json = true; return 0;
  case OPT_LAUNCHES:
  case OPT_DEVICE:
    errno = 0;
    n = strtoul(v, &end, 10);
    if (!*v || *end || errno || n > 1000000 || (opt == OPT_LAUNCHES && n == 0))
      return GRAPH_USAGE(gc, "%s %s: expected an integer from %d to 1000000",
                         opt == OPT_LAUNCHES ? "--launches" : "--device", v,
                         opt == OPT_LAUNCHES ? 1 : 0);
    if (opt == OPT_LAUNCHES) gc->launches = (uint32_t)n;
    else gc->devi = (uint32_t)n;
    return 0;
  default: return hsad_cli_getopt_fail(&gc->cli, opt, argv);
  }
}

static int graph_parse_options(graph_cmd_t *gc, int argc, char **argv) {
  TRY(hsad_cli_getopt(argc, argv, ":h", graph_opts, graph_option, gc));
  for (int i = optind; i < argc; i++) {
    if (gc->file)
      return GRAPH_USAGE(gc, "one FILE only (got %s and %s)", gc->file, argv[i]);
    gc->file = argv[i];
  }
  if (!gc->file) {
    if (gc->cli.json) return GRAPH_USAGE(gc, "FILE.json is required (see hsad graph --help)");
    usage(stderr);
    return 2;
  }
  return 0;
}

/* ---- phase: read the JSON, open the device ------------------------------------------------- */

static int graph_open(graph_cmd_t *gc) {
  char perr[1024] = "";
  gc->root = parse_file(gc->file, perr, sizeof perr);
  if (!gc->root) return GRAPH_FAIL(gc, "%s\n", perr);
  if (!json_object_is_type(gc->root, json_type_object))
    return GRAPH_FAIL(gc, "%s: not a JSON object\n", gc->file);
  if (unknown_key(gc->root, top_keys, gc->why, sizeof gc->why))
    return GRAPH_FAIL(gc, "%s: top level: %s\n", gc->file, gc->why);
  TRY(graph_check(gc, hsad_runtime_open(&gc->rt)));
  TRY(graph_check(gc, hsad_device_get(gc->rt, gc->devi, &gc->dev)));
  gc->nv = hsad_device_info(gc->dev)->vendor == HSAD_VENDOR_NVIDIA;
  return 0;
}

/* ---- phase: load the kernels (AMD and NVIDIA) ---------------------------------------------- */

/* AMD: kernel kn's "source" file sp compiled for the device's ISA into progs[nk]. */
static int graph_load_amd_source(graph_cmd_t *gc, const char *kn, const char *sp) {
#ifdef HSAD_NO_AMD
  (void)sp;
  return GRAPH_FAIL(gc, "kernel %s: field \"source\": an AMD source needs the AMD backend\n", kn);
#else
  size_t n = 0;
  char *src = hsad_cli_slurp(sp, &n), *log = NULL;
  if (!src) return GRAPH_FAIL(gc, "kernel %s: field \"source\": %s: %s\n", kn, sp, strerror(errno));
  hsad_compile_options_t o = {.target = hsad_device_info(gc->dev)->isa_name, .opt_level = 2};
  void *elf = NULL;
  size_t es = 0;
  hsad_status_t s = hsad_codeobj_compile(src, n, sp, &o, &elf, &es, &log);
  free(src);
  free(log);
  if (s)
    return GRAPH_FAIL(gc, "kernel %s: field \"source\": %s: %s\n", kn, hsad_status_name(s),
                      hsad_last_error());
  s = hsad_program_load_memory(gc->dev, elf, es, sp, &gc->progs[gc->nk]);
  free(elf);
  return graph_check(gc, s);
#endif
}

/* Kernel kn's program into progs[nk]: kv's "code_object" (else "source"), relative to the
 * JSON file's folder; NVIDIA through nv_load. *kpath: the file, in pbuf when relative. */
static int graph_load_program(graph_cmd_t *gc, const char *kn, json_object *kv,
                              const char **kpath, char *pbuf, size_t pbufn) {
  json_object *path;
  if (json_object_object_get_ex(kv, "code_object", NULL) &&
      json_object_object_get_ex(kv, "source", NULL))
    return GRAPH_FAIL(gc, "kernel %s: both \"code_object\" and \"source\"; give one\n", kn);
  const char *pf = json_object_object_get_ex(kv, "code_object", &path) ? "code_object"
                   : json_object_object_get_ex(kv, "source", &path)    ? "source"
                                                                        : NULL;
  if (pf && !json_object_is_type(path, json_type_string))
    return GRAPH_FAIL(gc, "kernel %s: field \"%s\": %s is not a string (a file name)\n", kn, pf,
                      json_object_to_json_string(path));
  if (!pf) return GRAPH_FAIL(gc, "kernel %s: field \"code_object\" or \"source\" missing\n", kn);
  *kpath = rel_path(gc->file, json_object_get_string(path), pbuf, pbufn);
  if (gc->nv) {
    if (nv_load(gc->dev, *kpath, !strcmp(pf, "source"), &gc->progs[gc->nk], &gc->nvk[gc->nk],
                gc->why, sizeof gc->why))
      return GRAPH_FAIL(gc, "kernel %s: field \"%s\": %s\n", kn, pf, gc->why);
    return 0;
  }
  if (!strcmp(pf, "code_object"))
    return graph_check(gc, hsad_program_load_file(gc->dev, *kpath, &gc->progs[gc->nk]));
  return graph_load_amd_source(gc, kn, *kpath);
}

/* Kernel kn of "kernels": its program, its "kernel" looked up as hsad run names kernels (.name
 * or symbol, else demangled or plain C++ names), on NVIDIA its parameter sizes; kname[nk++]. */
static int graph_load_kernel(graph_cmd_t *gc, const char *kn, json_object *kv) {
  if (gc->nk == MAXK) return GRAPH_FAIL(gc, "kernel %s: more than %d kernels\n", kn, MAXK);
  if (!json_object_is_type(kv, json_type_object))
    return GRAPH_FAIL(gc, "kernel %s: not an object\n", kn);
  if (unknown_key(kv, kernel_keys, gc->why, sizeof gc->why))
    return GRAPH_FAIL(gc, "kernel %s: %s\n", kn, gc->why);
  json_object *sym;
  if (!json_object_object_get_ex(kv, "kernel", &sym) || !json_object_is_type(sym, json_type_string))
    return GRAPH_FAIL(gc, "kernel %s: field \"kernel\": missing or not a string\n", kn);
  char pbuf[4096];
  const char *kpath = NULL; /* the file, as its kernel messages name it */
  TRY(graph_load_program(gc, kn, kv, &kpath, pbuf, sizeof pbuf));
  uint32_t k = gc->nk;
  char *kwhy = NULL;
  hsad_status_t s = hsad_cli_program_kernel(gc->progs[k], json_object_get_string(sym),
                                            &gc->kern[k], &kwhy);
  if (s == HSAD_ERR_KERNEL_NOT_FOUND) {
    int rc = hsad_cli_fail(&gc->cli, 1, "HSAD_ERR_KERNEL_NOT_FOUND",
                           "kernel %s: field \"kernel\": %s: %s", kn, kpath, kwhy);
    free(kwhy);
    return rc;
  }
  if (s) return GRAPH_FAIL(gc, "kernel %s: field \"kernel\": %s\n", kn, hsad_last_error());
  if (gc->nv && nv_sizes(&gc->nvk[k], hsad_device_kernel_desc(gc->kern[k])->name))
    return GRAPH_FAIL(gc, "out of memory\n");
  gc->kname[gc->nk++] = kn;
  return 0;
}

static int graph_load_kernels(graph_cmd_t *gc) {
  json_object *jk;
  if (!json_object_object_get_ex(gc->root, "kernels", &jk) ||
      !json_object_is_type(jk, json_type_object))
    return GRAPH_FAIL(gc, "%s: field \"kernels\": missing or not an object\n", gc->file);
  json_object_object_foreach(jk, kn, kv) TRY(graph_load_kernel(gc, kn, kv));
  return 0;
}

/* ---- phase: the buffers -------------------------------------------------------------------- */

/* Buffer b allocated and filled as bv's "init" says: zeros, iota or const=V (V of b's type). */
static int graph_init_buffer(graph_cmd_t *gc, gbuf_t *b, json_object *bv) {
  json_object *in;
  const char *init = "zeros";
  if (json_object_object_get_ex(bv, "init", &in)) {
    if (!json_object_is_type(in, json_type_string))
      return GRAPH_FAIL(gc, "buffer %s: field \"init\": %s is not a string (zeros, iota or "
                        "const=V)\n", b->name, json_object_to_json_string(in));
    init = json_object_get_string(in);
  }
  uint8_t cv[8] = {0};
  bool iota = !strcmp(init, "iota");
  if (!strncmp(init, "const=", 6)) {
    if (cli_parse_scalar(b->t, init + 6, cv, gc->why, sizeof gc->why))
      return GRAPH_FAIL(gc, "buffer %s: field \"init\": const=V: %s\n", b->name, gc->why);
  } else if (!iota && strcmp(init, "zeros")) {
    return GRAPH_FAIL(gc, "buffer %s: field \"init\": '%s' is not zeros, iota or const=V\n",
                      b->name, init);
  }
  TRY(graph_check(gc, hsad_buffer_alloc(gc->dev, b->count * b->esize, &b->ptr)));
  for (uint64_t i = 0; i < b->count; i++) {
    uint8_t *p = (uint8_t *)b->ptr + i * b->esize;
    if (iota) put_value(b->t, (double)i, (int64_t)i, p);
    else memcpy(p, cv, b->esize);
  }
  return 0;
}

/* Buffer bn of "buffers": its type and count (within CLI_BUF_MAX_BYTES), then its elements. */
static int graph_read_buffer(graph_cmd_t *gc, const char *bn, json_object *bv) {
  if (gc->nb == MAXB) return GRAPH_FAIL(gc, "buffer %s: more than %d buffers\n", bn, MAXB);
  if (!json_object_is_type(bv, json_type_object))
    return GRAPH_FAIL(gc, "buffer %s: not an object\n", bn);
  if (unknown_key(bv, buffer_keys, gc->why, sizeof gc->why))
    return GRAPH_FAIL(gc, "buffer %s: %s\n", bn, gc->why);
  gbuf_t *b = &gc->bufs[gc->nb];
  b->name = bn;
  json_object *t, *c;
  etype_t ti;
  if (!json_object_object_get_ex(bv, "type", &t) || !json_object_is_type(t, json_type_string) ||
      cli_parse_type(json_object_get_string(t), strlen(json_object_get_string(t)), &ti))
    return GRAPH_FAIL(gc, "buffer %s: field \"type\": missing or not one of i8 u8 i16 u16 i32 "
                      "u32 i64 u64 f32 f64\n", bn);
  uint64_t lim = CLI_BUF_MAX_BYTES / cli_tsize[ti];
  if (!json_object_object_get_ex(bv, "count", &c))
    return GRAPH_FAIL(gc, "buffer %s: field \"count\": missing (a number of elements)\n", bn);
  if (json_uint(c, 1, UINT64_MAX, &b->count, gc->why, sizeof gc->why))
    return GRAPH_FAIL(gc, "buffer %s: field \"count\": '%s' is not an integer from 1 to %llu "
                      "(the buffer limit, %llu bytes, in %u-byte %s elements)\n", bn,
                      json_object_to_json_string(c), (unsigned long long)lim,
                      (unsigned long long)CLI_BUF_MAX_BYTES, cli_tsize[ti], cli_tnames[ti]);
  if (b->count > lim)
    return GRAPH_FAIL(gc, "buffer %s: field \"count\": %s x %u-byte %s exceeds the buffer limit "
                      "of %llu bytes (%llu elements)\n", bn, json_object_to_json_string(c),
                      cli_tsize[ti], cli_tnames[ti], (unsigned long long)CLI_BUF_MAX_BYTES,
                      (unsigned long long)lim);
  b->t = ti;
  b->esize = cli_tsize[ti];
  TRY(graph_init_buffer(gc, b, bv));
  gc->nb++;
  return 0;
}

static int graph_read_buffers(graph_cmd_t *gc) {
  json_object *jb;
  if (!json_object_object_get_ex(gc->root, "buffers", &jb)) return 0;
  if (!json_object_is_type(jb, json_type_object))
    return GRAPH_FAIL(gc, "%s: field \"buffers\": not an object\n", gc->file);
  json_object_object_foreach(jb, bn, bv) TRY(graph_read_buffer(gc, bn, bv));
  return 0;
}

/* ---- phase: the nodes (name, kernel or blit, lane, grid, args, deps) ----------------------- */

/* The node's name ("#i" when none), unique and within HSAD_GRAPH_NAME_MAX; its keys known. */
static int graph_node_name(graph_cmd_t *gc, graph_node_t *nd) {
  uint32_t i = nd->index;
  char nm[32];
  snprintf(nm, sizeof nm, "#%u", i);
  if (!json_object_is_type(nd->json, json_type_object))
    return GRAPH_FAIL(gc, "node %s: not an object\n", nm);
  json_object *v = NULL;
  if (json_object_object_get_ex(nd->json, "name", &v) && !json_object_is_type(v, json_type_string))
    return GRAPH_FAIL(gc, "node %s: field \"name\": %s is not a string\n", nm,
                      json_object_to_json_string(v));
  gc->nname[i] = v ? json_object_get_string(v) : strdup(nm);
  gc->nname_own[i] = !v;
  if (!gc->nname[i]) return GRAPH_FAIL(gc, "out of memory\n");
  const char *N = nd->name = gc->nname[i];
  if (!*N) /* (every message names nodes: "node : ..." would name none) */
    return GRAPH_FAIL(gc, "node %s: field \"name\": empty (leave it out for \"%s\")\n", nm, nm);
  if (unknown_key(nd->json, node_keys, gc->why, sizeof gc->why))
    return GRAPH_FAIL(gc, "node %s: %s\n", N, gc->why);
  if (strlen(N) >= HSAD_GRAPH_NAME_MAX)
    return GRAPH_FAIL(gc, "node %s: field \"name\": %zu bytes, at most %d\n", N, strlen(N),
                      HSAD_GRAPH_NAME_MAX - 1);
  for (uint32_t j = 0; j < i; j++)
    if (!strcmp(gc->nname[j], N))
      return GRAPH_FAIL(gc, "node %s: field \"name\": also the name of node #%u (names are "
                        "unique: \"deps\" name nodes)\n", N, j);
  return 0;
}

/* What the node runs (a copy or fill: bl; else its "kernel": ki) and its "lane". */
static int graph_node_target(graph_cmd_t *gc, graph_node_t *nd) {
  const char *N = nd->name;
  json_object *jcopy = NULL, *jfill = NULL, *v;
  json_object_object_get_ex(nd->json, "copy", &jcopy);
  json_object_object_get_ex(nd->json, "fill", &jfill);
  nd->blit = jcopy || jfill;
  if (nd->blit &&
      parse_blit(nd->json, jcopy, jfill, gc->bufs, gc->nb, &nd->bl, gc->why, sizeof gc->why))
    return GRAPH_FAIL(gc, "node %s: %s\n", N, gc->why);
  if (!nd->blit) {
    if (!json_object_object_get_ex(nd->json, "kernel", &v))
      return GRAPH_FAIL(gc, "node %s: field \"kernel\": missing\n", N);
    if (!json_object_is_type(v, json_type_string))
      return GRAPH_FAIL(gc, "node %s: field \"kernel\": %s is not a string (a name under "
                        "\"kernels\")\n", N, json_object_to_json_string(v));
    while (nd->ki < gc->nk && strcmp(gc->kname[nd->ki], json_object_get_string(v))) nd->ki++;
    if (nd->ki == gc->nk)
      return GRAPH_FAIL(gc, "node %s: field \"kernel\": no kernel '%s'\n", N,
                        json_object_get_string(v));
  }
  uint64_t u = 0;
  if (json_object_object_get_ex(nd->json, "lane", &v) &&
      json_uint(v, 0, HSAD_GRAPH_MAX_LANES - 1, &u, gc->why, sizeof gc->why))
    return GRAPH_FAIL(gc, "node %s: field \"lane\": %s (one queue per lane, at most %d)\n", N,
                      gc->why, HSAD_GRAPH_MAX_LANES);
  nd->lane = (uint32_t)u;
  if (nd->lane + 1 > gc->nlanes) gc->nlanes = nd->lane + 1;
  return 0;
}

/* A kernel node's "grid" (1-3 sizes) and "block" (as many; default min(grid[0], 64)). */
static int graph_node_dims(graph_cmd_t *gc, graph_node_t *nd) {
  const char *N = nd->name;
  hsad_launch_t *l = &nd->l;
  json_object *gr;
  uint64_t u;
  if (!json_object_object_get_ex(nd->json, "grid", &gr) || !json_object_is_type(gr, json_type_array) ||
      json_object_array_length(gr) < 1 || json_object_array_length(gr) > 3)
    return GRAPH_FAIL(gc, "node %s: field \"grid\": missing or not an array of 1-3 sizes\n", N);
  l->dims = (uint32_t)json_object_array_length(gr);
  for (uint32_t d = 0; d < l->dims; d++) {
    if (json_uint(json_object_array_get_idx(gr, d), 1, UINT32_MAX, &u, gc->why, sizeof gc->why))
      return GRAPH_FAIL(gc, "node %s: field \"grid\"[%u]: %s\n", N, d, gc->why);
    l->grid[d] = (uint32_t)u;
  }
  if (!json_object_object_get_ex(nd->json, "block", &gr)) {
    l->block[0] = l->grid[0] < 64 ? l->grid[0] : 64;
    return 0;
  }
  if (!json_object_is_type(gr, json_type_array) || json_object_array_length(gr) != l->dims)
    return GRAPH_FAIL(gc, "node %s: field \"block\": not an array of %u sizes\n", N, l->dims);
  for (uint32_t d = 0; d < l->dims; d++) {
    if (json_uint(json_object_array_get_idx(gr, d), 1, UINT32_MAX, &u, gc->why, sizeof gc->why))
      return GRAPH_FAIL(gc, "node %s: field \"block\"[%u]: %s\n", N, d, gc->why);
    l->block[d] = (uint32_t)u;
  }
  return 0;
}

/* gargs[a] of node N from av: its kind and type (a buffer name, {"hex": ...}, {"lds": ...} or
 * {"TYPE": V | [V0, ...]}); a scalar's values are read by graph_node_value. */
static int graph_node_arg(graph_cmd_t *gc, const char *N, uint32_t a, json_object *av) {
  arg_t *ga = &gc->gargs[a];
  ga->spec = json_object_to_json_string_ext(av, JSON_C_TO_STRING_SPACED);
  if (json_object_is_type(av, json_type_string)) {
    uint32_t bi = 0;
    while (bi < gc->nb && strcmp(gc->bufs[bi].name, json_object_get_string(av))) bi++;
    if (bi == gc->nb)
      return GRAPH_FAIL(gc, "node %s: field \"args\"[%u]: no buffer '%s'\n", N, a,
                        json_object_get_string(av));
    *ga = (arg_t){.spec = ga->spec, .kind = A_BUF, .type = gc->bufs[bi].t,
                  .count = gc->bufs[bi].count, .ptr = gc->bufs[bi].ptr};
    return 0;
  }
  const char *tk = NULL;
  json_object *sv = NULL;
  if (json_object_is_type(av, json_type_object) && json_object_object_length(av) == 1) {
    json_object_object_foreach(av, k_, v_) { tk = k_; sv = v_; }
  }
  if (!tk)
    return GRAPH_FAIL(gc, "node %s: field \"args\"[%u]: %s is neither a buffer name nor "
                      "{\"TYPE\": VALUE}, {\"TYPE\": [V0, V1, ...]}, {\"hex\": \"BYTES[*N]\"} or "
                      "{\"lds\": BYTES}\n", N, a, ga->spec);
  if (!strcmp(tk, "hex")) {
    if (!json_object_is_type(sv, json_type_string))
      return GRAPH_FAIL(gc, "node %s: field \"args\"[%u]: {\"hex\": ...} takes a string of hex "
                        "digits, not %s\n", N, a, json_object_to_json_string(sv));
    if (cli_parse_hex(json_object_get_string(sv), ga, gc->why, sizeof gc->why))
      return GRAPH_FAIL(gc, "node %s: field \"args\"[%u]: %s\n", N, a, gc->why);
    return 0;
  }
  if (!strcmp(tk, "lds")) {
    uint64_t n = 0;
    if (!json_object_is_type(sv, json_type_int) ||
        cli_parse_uint(json_object_to_json_string(sv), UINT32_MAX, &n))
      return GRAPH_FAIL(gc, "node %s: field \"args\"[%u]: {\"lds\": %s}: BYTES is not an integer "
                        "from 0 to %u\n", N, a, json_object_to_json_string(sv), UINT32_MAX);
    ga->kind = A_LDS;
    ga->lds = (uint32_t)n;
    return 0;
  }
  if (cli_parse_type(tk, strlen(tk), &ga->type))
    return GRAPH_FAIL(gc, "node %s: field \"args\"[%u]: \"%s\" is not a TYPE (i8 u8 i16 u16 i32 "
                      "u32 i64 u64 f32 f64), \"hex\" or \"lds\"\n", N, a, tk);
  ga->kind = A_SCALAR;
  ga->nvals = 1;
  if (json_object_is_type(sv, json_type_array)) {
    size_t nv = json_object_array_length(sv);
    if (nv < 1 || nv > VEC_MAX)
      return GRAPH_FAIL(gc, "node %s: field \"args\"[%u]: %zu values; a vector has 1 to %u\n", N,
                        a, nv, VEC_MAX);
    ga->nvals = (uint32_t)nv;
  }
  return 0;
}

/* gargs[0..na) against the kernel's metadata, as hsad run's --arg are: NVIDIA the cubin's
 * parameter sizes (cli_check_nv_args; trailing lds are no parameters), AMD cli_check_args. */
static int graph_node_check_args(graph_cmd_t *gc, const graph_node_t *nd, uint32_t na) {
  uint32_t bad;
  const char *N = nd->name;
  const hsad_device_kernel_desc_t *kd = hsad_device_kernel_desc(gc->kern[nd->ki]);
  const nv_kernel_meta_t *m = &gc->nvk[nd->ki];
  uint32_t np = na; /* NVIDIA: lds last, not a parameter */
  while (gc->nv && np && gc->gargs[np - 1].kind == A_LDS) np--;
  if (gc->nv && m->sizes &&
      cli_check_nv_args(kd->name, m->count, m->sizes, gc->gargs, np, graph_warn, (void *)N, &bad,
                        gc->why, sizeof gc->why))
    return GRAPH_FAIL(gc, "node %s: %s\n", N, gc->why);
#ifndef HSAD_NO_AMD
  if (!gc->nv && cli_check_args(kd, gc->gargs, na, CLI_SYNTAX_GRAPH, graph_warn, (void *)N, &bad,
                                gc->why, sizeof gc->why))
    return GRAPH_FAIL(gc, "node %s: %s\n", N, gc->why);
#endif
  return 0;
}

/* gargs[a]'s values (a scalar's, each range-checked for the argument's type; av its JSON) and
 * its kernel argument args[a]. */
static int graph_node_value(graph_cmd_t *gc, graph_node_t *nd, uint32_t a, json_object *av) {
  arg_t *ga = &gc->gargs[a];
  if (ga->kind == A_SCALAR) {
    const hsad_device_kernel_desc_t *kd = hsad_device_kernel_desc(gc->kern[nd->ki]);
    json_object *sv = NULL;
    json_object_object_foreach(av, k_, v_) { (void)k_; sv = v_; }
    for (uint32_t e = 0; e < ga->nvals; e++) {
      json_object *ev = json_object_is_type(sv, json_type_array) ? json_object_array_get_idx(sv, e) : sv;
      char w[512], lb[600];
      bool number = json_object_is_type(ev, json_type_int) || json_object_is_type(ev, json_type_double);
      if (!number) snprintf(w, sizeof w, "%s is not a number", json_object_to_json_string(ev));
      if (!number || cli_parse_scalar(ga->type, json_object_to_json_string(ev),
                                      ga->value + e * cli_tsize[ga->type], w, sizeof w))
        return GRAPH_FAIL(gc, "node %s: %s: %s\n", nd->name,
                          arg_label(gc->nv, kd, a, lb, sizeof lb), w);
    }
  }
  nd->args[a] = cli_arg_karg(ga, !gc->nv);
  return 0;
}

/* A kernel node's "args": the given arguments (kinds and types), checked against the kernel's
 * metadata as hsad run's --arg are, then the values; l.args. */
static int graph_node_args(graph_cmd_t *gc, graph_node_t *nd) {
  json_object *ja = NULL;
  if (json_object_object_get_ex(nd->json, "args", &ja) && !json_object_is_type(ja, json_type_array))
    return GRAPH_FAIL(gc, "node %s: field \"args\": not an array\n", nd->name);
  uint32_t na = ja ? (uint32_t)json_object_array_length(ja) : 0;
  if (na > MAXA)
    return GRAPH_FAIL(gc, "node %s: field \"args\": more than %d arguments\n", nd->name, MAXA);
  memset(gc->gargs, 0, sizeof gc->gargs);
  gc->ngargs = na;
  for (uint32_t a = 0; a < na; a++)
    TRY(graph_node_arg(gc, nd->name, a, json_object_array_get_idx(ja, a)));
  TRY(graph_node_check_args(gc, nd, na));
  for (uint32_t a = 0; a < na; a++)
    TRY(graph_node_value(gc, nd, a, json_object_array_get_idx(ja, a)));
  nd->l.args = nd->args;
  nd->l.arg_count = na;
  return 0;
}

/* The node's "deps": names of earlier nodes, each edge once however often it is named. */
static int graph_node_deps(graph_cmd_t *gc, graph_node_t *nd) {
  const char *N = nd->name;
  json_object *jd;
  if (!json_object_object_get_ex(nd->json, "deps", &jd)) return 0;
  if (!json_object_is_type(jd, json_type_array))
    return GRAPH_FAIL(gc, "node %s: field \"deps\": not an array of node names\n", N);
  for (size_t d = 0; d < json_object_array_length(jd); d++) {
    json_object *dj = json_object_array_get_idx(jd, d);
    if (!json_object_is_type(dj, json_type_string))
      return GRAPH_FAIL(gc, "node %s: field \"deps\"[%zu]: %s is not a node name\n", N, d,
                        json_object_to_json_string(dj));
    const char *dn = json_object_get_string(dj);
    uint32_t j = 0;
    while (j < nd->index && strcmp(gc->nname[j], dn ? dn : "")) j++;
    if (j == nd->index)
      return GRAPH_FAIL(gc, "node %s: field \"deps\"[%zu]: no earlier node '%s'\n", N, d,
                        dn ? dn : "");
    uint32_t k = 0; /* a repeated name adds no edge (and cannot overflow deps[]: < MAXN) */
    while (k < nd->ndeps && nd->deps[k] != j) k++;
    if (k == nd->ndeps) nd->deps[nd->ndeps++] = j;
  }
  return 0;
}

/* Node nd of "nodes", read and added to the graph. */
static int graph_add_node(graph_cmd_t *gc, graph_node_t *nd) {
  TRY(graph_node_name(gc, nd));
  TRY(graph_node_target(gc, nd));
  if (!nd->blit) {
    TRY(graph_node_dims(gc, nd));
    TRY(graph_node_args(gc, nd));
  }
  TRY(graph_node_deps(gc, nd));
  const blit_node_t *bl = &nd->bl;
  hsad_status_t s;
  if (!nd->blit)
    s = hsad_graph_add_kernel(gc->g, nd->name, nd->lane, gc->kern[nd->ki], &nd->l, nd->deps,
                              nd->ndeps, NULL);
  else if (bl->fill)
    s = hsad_graph_add_fill(gc->g, nd->name, nd->lane, bl->dst, bl->pattern, bl->width,
                            bl->count, nd->deps, nd->ndeps, NULL);
  else
    s = hsad_graph_add_copy(gc->g, nd->name, nd->lane, bl->dst, bl->src, bl->bytes, nd->deps,
                            nd->ndeps, NULL);
  TRY(graph_check(gc, s));
  for (uint32_t a = 0; a < gc->ngargs; a++) free(gc->gargs[a].bytes); /* copied by the graph */
  gc->ngargs = 0;
  return 0;
}

static int graph_add_nodes(graph_cmd_t *gc) {
  json_object *jn;
  if (!json_object_object_get_ex(gc->root, "nodes", &jn) ||
      !json_object_is_type(jn, json_type_array))
    return GRAPH_FAIL(gc, "%s: field \"nodes\": missing or not an array\n", gc->file);
  TRY(graph_check(gc, hsad_graph_create(0, &gc->g)));
  gc->nn = (uint32_t)json_object_array_length(jn);
  if (gc->nn > MAXN) return GRAPH_FAIL(gc, "%s: field \"nodes\": more than %d nodes\n", gc->file, MAXN);
  for (uint32_t i = 0; i < gc->nn; i++) {
    graph_node_t nd = {.index = i, .json = json_object_array_get_idx(jn, i),
                       .l = {.dims = 1, .grid = {1, 1, 1}, .block = {1, 1, 1}}};
    TRY(graph_add_node(gc, &nd));
  }
  return 0;
}

/* ---- phase: the checks, before anything runs ----------------------------------------------- */

/* Check c: its keys, its buffer, its values (each one of the buffer's type), and no more values
 * than the buffer has elements; check_buf[c]. */
static int graph_read_check(graph_cmd_t *gc, size_t c) {
  json_object *ck = json_object_array_get_idx(gc->checks, c), *bname, *eq;
  if (!json_object_is_type(ck, json_type_object)) return GRAPH_FAIL(gc, "checks[%zu]: not an object\n", c);
  if (unknown_key(ck, check_keys, gc->why, sizeof gc->why))
    return GRAPH_FAIL(gc, "checks[%zu]: %s\n", c, gc->why);
  if (!json_object_object_get_ex(ck, "buffer", &bname))
    return GRAPH_FAIL(gc, "checks[%zu]: field \"buffer\": missing\n", c);
  if (!json_object_is_type(bname, json_type_string))
    return GRAPH_FAIL(gc, "checks[%zu]: field \"buffer\": %s is not a string (a buffer name)\n", c,
                      json_object_to_json_string(bname));
  uint32_t bi = 0;
  while (bi < gc->nb && strcmp(gc->bufs[bi].name, json_object_get_string(bname))) bi++;
  if (bi == gc->nb)
    return GRAPH_FAIL(gc, "checks[%zu]: field \"buffer\": no buffer '%s'\n", c,
                      json_object_get_string(bname));
  if (!json_object_object_get_ex(ck, "equals", &eq))
    return GRAPH_FAIL(gc, "checks[%zu]: field \"equals\": missing\n", c);
  const gbuf_t *b = &gc->bufs[bi];
  bool arr = json_object_is_type(eq, json_type_array);
  uint64_t n = arr ? json_object_array_length(eq) : 1;
  if (arr && (n == 0 || n > b->count))
    return GRAPH_FAIL(gc, "checks[%zu]: field \"equals\": %llu values, buffer %s has %llu elements "
                      "(an array checks 1 to %llu first elements, a number all of them)\n", c,
                      (unsigned long long)n, b->name, (unsigned long long)b->count,
                      (unsigned long long)b->count);
  for (uint64_t e = 0; e < n; e++) {
    uint8_t want[8];
    char w[512];
    if (check_value(b->t, arr ? json_object_array_get_idx(eq, e) : eq, want, w, sizeof w)) {
      if (arr) return GRAPH_FAIL(gc, "checks[%zu]: field \"equals\"[%llu]: %s\n", c, (unsigned long long)e, w);
      return GRAPH_FAIL(gc, "checks[%zu]: field \"equals\": %s\n", c, w);
    }
  }
  gc->check_buf[c] = bi;
  return 0;
}

static int graph_read_checks(graph_cmd_t *gc) {
  if (json_object_object_get_ex(gc->root, "checks", &gc->checks)) {
    if (!json_object_is_type(gc->checks, json_type_array))
      return GRAPH_FAIL(gc, "%s: field \"checks\": not an array\n", gc->file);
    gc->nc = json_object_array_length(gc->checks);
    if (gc->nc > MAXN) return GRAPH_FAIL(gc, "%s: field \"checks\": more than %d checks\n", gc->file, MAXN);
  }
  for (size_t c = 0; c < gc->nc; c++) TRY(graph_read_check(gc, c));
  return 0;
}

/* ---- phase: instantiate, launch, check ----------------------------------------------------- */

/* One queue per lane, the graph instantiated on them, the timing arrays. */
static int graph_instantiate(graph_cmd_t *gc) {
  for (uint32_t i = 0; i < gc->nlanes; i++) {
    hsad_queue_options_t qo = {0};
    TRY(graph_check(gc, hsad_queue_create(gc->dev, &qo, &gc->queues[i])));
  }
  TRY(graph_check(gc, hsad_graph_instantiate(gc->g, gc->queues, gc->nlanes, &gc->x)));
  gc->nq = hsad_graph_exec_queue_count(gc->x);
  gc->tsub = malloc(gc->launches * sizeof *gc->tsub);
  gc->twait = malloc(gc->launches * sizeof *gc->twait);
  if (!gc->tsub || !gc->twait) return GRAPH_FAIL(gc, "out of memory\n");
  gc->checks_report = json_object_new_array();
  return 0;
}

/* Check c (validated by graph_read_check) on its buffer after the first launch: the failure
 * names the first element that differs; else its line and its --json object. */
static int graph_run_check(graph_cmd_t *gc, size_t c) {
  json_object *eq;
  json_object_object_get_ex(json_object_array_get_idx(gc->checks, c), "equals", &eq);
  const gbuf_t *b = &gc->bufs[gc->check_buf[c]];
  bool arr = json_object_is_type(eq, json_type_array);
  uint64_t n = arr ? json_object_array_length(eq) : b->count;
  uint8_t want[8] = {0};
  if (!arr) check_value(b->t, eq, want, gc->why, sizeof gc->why); /* once for all */
  for (uint64_t i = 0; i < n; i++) {
    json_object *ev = arr ? json_object_array_get_idx(eq, i) : eq;
    uint8_t *got = (uint8_t *)b->ptr + i * b->esize;
    if (arr) check_value(b->t, ev, want, gc->why, sizeof gc->why);
    if (memcmp(want, got, b->esize)) {
      char v[48];
      return GRAPH_FAIL(gc, "checks[%zu]: buffer %s[%llu] is %s, field \"equals\" wants %s "
                        "(after the first launch)\n", c, b->name, (unsigned long long)i,
                        format_value(b, i, v), json_object_to_json_string(ev));
    }
  }
  json_object *jck = json_object_new_object();
  json_object_object_add(jck, "buffer", json_object_new_string(b->name));
  json_object_object_add(jck, "elements", json_object_new_uint64(n));
  json_object_array_add(gc->checks_report, jck);
  size_t used = strlen(gc->checked);
  snprintf(gc->checked + used, sizeof gc->checked - used, "  check %s: %llu elements OK\n",
           b->name, (unsigned long long)n);
  return 0;
}

/* --launches launches, each waited for (10 s deadlines), the checks after the first; the
 * times sorted and the launches per path. */
static int graph_launch_loop(graph_cmd_t *gc) {
  bool warned_rollback = false;
  gc->rb = HSAD_GRAPH_ROLLBACK_NONE;
  for (uint32_t r = 0; r < gc->launches; r++) {
    uint64_t t0 = hsad_now_ns();
    TRY(graph_check(gc, hsad_graph_launch(gc->x, gc->sequential ? HSAD_GRAPH_SEQUENTIAL : 0,
                                          t0 + 10000000000ull, gc->done, &gc->rb)));
    uint64_t t1 = hsad_now_ns();
    if (gc->rb != HSAD_GRAPH_ROLLBACK_NONE && !gc->sequential && !warned_rollback) {
      warned_rollback = true; /* once: the counts follow in the summary */
      fprintf(stderr, "hsad graph: warning: launch %u was not fused (%s): it ran node by node "
              "(rollback to sequential submission; same results, the host waits between "
              "queues)\n", r + 1, hsad_graph_rollback_name(gc->rb));
    }
    TRY(graph_check(gc, hsad_completion_wait_all(gc->done, gc->nq, t1 + 10000000000ull)));
    gc->tsub[r] = t1 - t0;
    gc->twait[r] = hsad_now_ns() - t0;
    for (size_t c = 0; r == 0 && c < gc->nc; c++) TRY(graph_run_check(gc, c));
  }
  hsad_graph_exec_counters(gc->x, gc->counts);
  qsort(gc->tsub, gc->launches, sizeof *gc->tsub, hsad_cli_cmp_u64);
  qsort(gc->twait, gc->launches, sizeof *gc->twait, hsad_cli_cmp_u64);
  return 0;
}

/* ---- phase: the report (text or JSON) ------------------------------------------------------ */

/* {"median", "min"} of sorted ns times t, in us */
static json_object *graph_json_times(const graph_cmd_t *gc, const uint64_t *t) {
  json_object *o = json_object_new_object();
  json_object_object_add(o, "median", hsad_cli_json_double(t[gc->launches / 2] / 1e3, "%.3f"));
  json_object_object_add(o, "min", hsad_cli_json_double(t[0] / 1e3, "%.3f"));
  return o;
}

static void graph_report_json(graph_cmd_t *gc) {
  json_object *j = json_object_new_object();
  json_object_object_add(j, "file", json_object_new_string(gc->file));
  json_object_object_add(j, "nodes", json_object_new_int64(gc->nn));
  json_object_object_add(j, "queues", json_object_new_int64(gc->nq));
  json_object_object_add(j, "launches", json_object_new_int64(gc->launches));
  json_object_object_add(j, "path", json_object_new_string(hsad_graph_rollback_name(gc->rb)));
  json_object_object_add(j, "fused", json_object_new_boolean(gc->rb == HSAD_GRAPH_ROLLBACK_NONE));
  json_object *paths = json_object_new_object(); /* launches per path, the paths taken */
  for (uint32_t i = 0; i < HSAD_GRAPH_ROLLBACK_COUNT; i++)
    if (gc->counts[i])
      json_object_object_add(paths, hsad_graph_rollback_name((hsad_graph_rollback_t)i),
                             json_object_new_uint64(gc->counts[i]));
  json_object_object_add(j, "paths", paths);
  json_object *pk = json_object_new_array(); /* fused: packets per queue, one doorbell each */
  json_object_object_add(j, "cuda_graph", json_object_new_boolean(gc->nv));
  for (uint32_t qi = 0; qi < gc->nq && gc->rb == HSAD_GRAPH_ROLLBACK_NONE && !gc->nv; qi++)
    json_object_array_add(pk, json_object_new_int64(hsad_graph_exec_packet_count(gc->x, qi)));
  json_object_object_add(j, "queue_packets", pk);
  json_object_object_add(j, "host_submit_us", graph_json_times(gc, gc->tsub));
  json_object_object_add(j, "submit_wait_us", graph_json_times(gc, gc->twait));
  json_object_object_add(j, "checks", gc->checks_report);
  gc->checks_report = NULL;
  json_object *r = json_object_new_object();
  json_object_object_add(r, "graph", j);
  hsad_cli_print_json(r);
}

static void graph_report_text(const graph_cmd_t *gc) {
  const bool fused = gc->rb == HSAD_GRAPH_ROLLBACK_NONE;
  printf("graph %s: %u nodes on %u queue(s), %u launch(es), path: %s\n", gc->file, gc->nn, gc->nq,
         gc->launches, hsad_graph_rollback_name(gc->rb));
  if (gc->nv && fused)
    printf("  one CUDA graph launched on queue 0's stream (cuGraphLaunch)%s\n",
           gc->nq > 1 ? "; the other queues joined after it" : "");
  if (gc->nv && hsad_graph_exec_rollback_detail(gc->x))
    printf("  the driver refused the CUDA graph: %s\n", hsad_graph_exec_rollback_detail(gc->x));
  for (uint32_t qi = 0; qi < gc->nq && fused && !gc->nv; qi++) {
    uint32_t np = hsad_graph_exec_packet_count(gc->x, qi);
    printf("  queue %u: %u packet%s, 1 doorbell per launch\n", qi, np, np == 1 ? "" : "s");
  }
  if (gc->counts[HSAD_GRAPH_ROLLBACK_NONE] != gc->launches) {
    printf("  not fused:");
    for (uint32_t i = 1, sep = 0; i < HSAD_GRAPH_ROLLBACK_COUNT; i++)
      if (gc->counts[i])
        printf("%s %llu of %u launches (%s)", sep++ ? "," : "", (unsigned long long)gc->counts[i],
               gc->launches, hsad_graph_rollback_name((hsad_graph_rollback_t)i));
    printf("\n");
  }
  const uint64_t *ts = gc->tsub, *tw = gc->twait;
  printf("  host submit: median %.2f us (min %.2f); submit+wait: median %.2f us (min %.2f)\n",
         ts[gc->launches / 2] / 1e3, ts[0] / 1e3, tw[gc->launches / 2] / 1e3, tw[0] / 1e3);
  fputs(gc->checked, stdout);
}

int hsad_cmd_graph(int argc, char **argv) {
  graph_cmd_t gc = {.cli = {.cmd = "graph", .json = hsad_cli_wants_json(argc, argv)},
                    .launches = 1};
  int rc = graph_parse_options(&gc, argc, argv);
  if (!rc) rc = graph_open(&gc);
  if (!rc) rc = graph_load_kernels(&gc);
  if (!rc) rc = graph_read_buffers(&gc);
  if (!rc) rc = graph_add_nodes(&gc);
  if (!rc) rc = graph_read_checks(&gc);
  if (!rc) rc = graph_instantiate(&gc);
  if (!rc) rc = graph_launch_loop(&gc);
  if (!rc && gc.cli.json) graph_report_json(&gc);
  else if (!rc) graph_report_text(&gc);
  graph_free(&gc);
  return rc == HSAD_CLI_DONE ? 0 : rc;
}
