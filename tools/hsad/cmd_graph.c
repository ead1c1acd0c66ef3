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
 * Any other key is an error naming it, where it is and the known keys. An "equals" array has at
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

/* errors through hsad_cli_fail: "hsad graph: MESSAGE" on stderr, or the JSON error object */
#define GFAIL(...) do { hsad_cli_fail(&cli, 1, "error", __VA_ARGS__); goto out; } while (0)
#define GCHECK(expr) do { hsad_status_t s_ = (expr); if (s_) { \
  hsad_cli_fail(&cli, 1, hsad_status_name(s_), "%s: %s", hsad_status_name(s_), hsad_last_error()); \
  goto out; } } while (0)

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

/* element i of b as a double (for messages) */
static double get_value(const gbuf_t *b, uint64_t i) { return cli_elem_double(b->t, b->ptr, i); }

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

static char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long sz = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)sz + 1);
  if (b && fread(b, 1, (size_t)sz, f) != (size_t)sz) { free(b); b = NULL; }
  if (b) b[sz] = 0, *n = (size_t)sz;
  fclose(f);
  return b;
}

/* The JSON object of file `path`, or NULL with why: "F: No such file or directory", "F is a
 * directory", "F: line 3, column 7: JSON parse error: unexpected character" (json-c's
 * json_tokener_error_desc), "F: line 1, column 2: the JSON ends early (an unclosed { or [)",
 * "F: line 9, column 1: text after the JSON value". */
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
  char *text = slurp(path, &n);
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
  if (e == json_tokener_continue || (!o && e == json_tokener_success)) {
    what = n ? "the JSON ends early (an unclosed {, [ or string)" : "the file is empty (no JSON)";
    at = n;
  } else if (e != json_tokener_success) {
    snprintf(desc, sizeof desc, "JSON parse error: %s", json_tokener_error_desc(e));
    what = desc;
  } else if (at < n) {
    what = "text after the JSON value";
  }
  if (what) {
    uint64_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < n; i++) {
      if (text[i] == '\n') line++, col = 1;
      else col++;
    }
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
  char *data = slurp(path, &n);
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

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

int hsad_cmd_graph(int argc, char **argv) {
  const char *file = NULL;
  uint32_t launches = 1, devi = 0;
  bool sequential = false;
  hsad_cli_t cli = {.cmd = "graph", .json = hsad_cli_wants_json(argc, argv)};
  enum { OPT_LAUNCHES = 256, OPT_SEQUENTIAL, OPT_DEVICE, OPT_JSON };
  static const struct option longopts[] = {{"launches", required_argument, NULL, OPT_LAUNCHES},
                                           {"sequential", no_argument, NULL, OPT_SEQUENTIAL},
                                           {"device", required_argument, NULL, OPT_DEVICE},
                                           {"json", no_argument, NULL, OPT_JSON},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  int opt;
  while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    char *end;
    unsigned long v;
    switch (opt) {
    case 'h': usage(stdout); return 0;
    case OPT_SEQUENTIAL: sequential = true; break;
    case OPT_JSON: cli.json = true; break;
    case OPT_LAUNCHES:
    case OPT_DEVICE:
      errno = 0;
      v = strtoul(optarg, &end, 10);
      if (!*optarg || *end || errno || v > 1000000 || (opt == OPT_LAUNCHES && v == 0))
        return hsad_cli_fail(&cli, 2, "usage", "%s %s: expected an integer from %d to 1000000",
                             opt == OPT_LAUNCHES ? "--launches" : "--device", optarg,
                             opt == OPT_LAUNCHES ? 1 : 0);
      if (opt == OPT_LAUNCHES) launches = (uint32_t)v;
      else devi = (uint32_t)v;
      break;
    default: return hsad_cli_getopt_fail(&cli, opt, argv);
    }
  }
  for (int i = optind; i < argc; i++) {
    if (file) return hsad_cli_fail(&cli, 2, "usage", "one FILE only (got %s and %s)", file, argv[i]);
    file = argv[i];
  }
  if (!file) {
    if (cli.json) return hsad_cli_fail(&cli, 2, "usage", "FILE.json is required (see hsad graph --help)");
    usage(stderr);
    return 2;
  }
  int rc = 1;
  char perr[1024] = "";
  json_object *root = parse_file(file, perr, sizeof perr);
  hsad_runtime_t *rt = NULL;
  hsad_program_t *progs[MAXK] = {0};
  const hsad_device_kernel_t *kern[MAXK];
  const char *kname[MAXK];
  nv_kernel_meta_t nvk[MAXK];
  memset(nvk, 0, sizeof nvk);
  gbuf_t bufs[MAXB];
  uint32_t nk = 0, nb = 0, nn = 0, nlanes = 0;
  hsad_queue_t *queues[HSAD_GRAPH_MAX_LANES] = {0};
  hsad_graph_t *g = NULL;
  hsad_graph_exec_t *x = NULL;
  const char *nname[MAXN];
  bool nname_own[MAXN] = {0}; /* a default name ("#i"), strdup'd */
  uint64_t *tsub = NULL, *twait = NULL;
  json_object *jchecks = NULL; /* --json: the checks that held */
  arg_t gargs[MAXA]; /* one node's arguments (hex: bytes malloc'd until the node is added) */
  uint32_t ngargs = 0;
  if (!root) GFAIL("%s\n", perr);
  char why[2048];
  if (!json_object_is_type(root, json_type_object)) GFAIL("%s: not a JSON object\n", file);
  if (unknown_key(root, top_keys, why, sizeof why)) GFAIL("%s: top level: %s\n", file, why);
  GCHECK(hsad_runtime_open(&rt));
  hsad_device_t *dev;
  GCHECK(hsad_device_get(rt, devi, &dev));
  const bool nv = hsad_device_info(dev)->vendor == HSAD_VENDOR_NVIDIA;
  json_object *jk, *jb, *jn, *jc, *v;
  if (!json_object_object_get_ex(root, "kernels", &jk) || !json_object_is_type(jk, json_type_object))
    GFAIL("%s: field \"kernels\": missing or not an object\n", file);
  json_object_object_foreach(jk, kn, kv) {
    if (nk == MAXK) GFAIL("kernel %s: more than %d kernels\n", kn, MAXK);
    if (!json_object_is_type(kv, json_type_object)) GFAIL("kernel %s: not an object\n", kn);
    if (unknown_key(kv, kernel_keys, why, sizeof why)) GFAIL("kernel %s: %s\n", kn, why);
    json_object *sym, *path;
    if (!json_object_object_get_ex(kv, "kernel", &sym) || !json_object_is_type(sym, json_type_string))
      GFAIL("kernel %s: field \"kernel\": missing or not a string\n", kn);
    char pbuf[4096];
    const char *kpath = NULL; /* the file, as its kernel messages name it */
    const char *pf = json_object_object_get_ex(kv, "code_object", &path) ? "code_object"
                     : json_object_object_get_ex(kv, "source", &path)    ? "source"
                                                                          : NULL;
    if (pf && !json_object_is_type(path, json_type_string))
      GFAIL("kernel %s: field \"%s\": %s is not a string (a file name)\n", kn, pf,
            json_object_to_json_string(path));
    if (nv && pf) {
      kpath = rel_path(file, json_object_get_string(path), pbuf, sizeof pbuf);
      if (nv_load(dev, kpath, !strcmp(pf, "source"), &progs[nk], &nvk[nk], why, sizeof why))
        GFAIL("kernel %s: field \"%s\": %s\n", kn, pf, why);
    } else if (json_object_object_get_ex(kv, "code_object", &path)) {
      kpath = rel_path(file, json_object_get_string(path), pbuf, sizeof pbuf);
      GCHECK(hsad_program_load_file(dev, kpath, &progs[nk]));
    } else if (json_object_object_get_ex(kv, "source", &path)) {
#ifdef HSAD_NO_AMD
      GFAIL("kernel %s: field \"source\": an AMD source needs the AMD backend\n", kn);
#else
      size_t n = 0;
      const char *sp = kpath = rel_path(file, json_object_get_string(path), pbuf, sizeof pbuf);
      char *src = slurp(sp, &n), *log = NULL;
      if (!src) GFAIL("kernel %s: field \"source\": %s: %s\n", kn, sp, strerror(errno));
      hsad_compile_options_t o = {.target = hsad_device_info(dev)->isa_name, .opt_level = 2};
      void *elf = NULL;
      size_t es = 0;
      hsad_status_t s = hsad_codeobj_compile(src, n, sp, &o, &elf, &es, &log);
      free(src);
      free(log);
      if (s) GFAIL("kernel %s: field \"source\": %s: %s\n", kn, hsad_status_name(s), hsad_last_error());
      s = hsad_program_load_memory(dev, elf, es, sp, &progs[nk]);
      free(elf);
      GCHECK(s);
#endif
    } else {
      GFAIL("kernel %s: field \"code_object\" or \"source\" missing\n", kn);
    }
    /* as hsad run names kernels: .name or symbol, else demangled or plain C++ names */
    char *kwhy = NULL;
    hsad_status_t s = hsad_cli_program_kernel(progs[nk], json_object_get_string(sym), &kern[nk],
                                              &kwhy);
    if (s == HSAD_ERR_KERNEL_NOT_FOUND) {
      hsad_cli_fail(&cli, 1, "HSAD_ERR_KERNEL_NOT_FOUND", "kernel %s: field \"kernel\": %s: %s", kn,
                    kpath, kwhy);
      free(kwhy);
      goto out;
    }
    if (s) GFAIL("kernel %s: field \"kernel\": %s\n", kn, hsad_last_error());
    if (nv && nv_sizes(&nvk[nk], hsad_device_kernel_desc(kern[nk])->name))
      GFAIL("out of memory\n");
    kname[nk++] = kn;
  }
  if (json_object_object_get_ex(root, "buffers", &jb)) {
    if (!json_object_is_type(jb, json_type_object))
      GFAIL("%s: field \"buffers\": not an object\n", file);
    json_object_object_foreach(jb, bn, bv) {
      if (nb == MAXB) GFAIL("buffer %s: more than %d buffers\n", bn, MAXB);
      if (!json_object_is_type(bv, json_type_object)) GFAIL("buffer %s: not an object\n", bn);
      if (unknown_key(bv, buffer_keys, why, sizeof why)) GFAIL("buffer %s: %s\n", bn, why);
      gbuf_t *b = &bufs[nb];
      b->name = bn;
      json_object *t, *c, *in;
      etype_t ti;
      if (!json_object_object_get_ex(bv, "type", &t) || !json_object_is_type(t, json_type_string) ||
          cli_parse_type(json_object_get_string(t), strlen(json_object_get_string(t)), &ti))
        GFAIL("buffer %s: field \"type\": missing or not one of i8 u8 i16 u16 i32 u32 i64 u64 f32 "
              "f64\n", bn);
      uint64_t lim = CLI_BUF_MAX_BYTES / cli_tsize[ti];
      if (!json_object_object_get_ex(bv, "count", &c))
        GFAIL("buffer %s: field \"count\": missing (a number of elements)\n", bn);
      if (json_uint(c, 1, UINT64_MAX, &b->count, why, sizeof why))
        GFAIL("buffer %s: field \"count\": '%s' is not an integer from 1 to %llu (the buffer "
              "limit, %llu bytes, in %u-byte %s elements)\n", bn, json_object_to_json_string(c),
              (unsigned long long)lim, (unsigned long long)CLI_BUF_MAX_BYTES, cli_tsize[ti],
              cli_tnames[ti]);
      if (b->count > lim)
        GFAIL("buffer %s: field \"count\": %s x %u-byte %s exceeds the buffer limit of %llu bytes "
              "(%llu elements)\n", bn, json_object_to_json_string(c), cli_tsize[ti], cli_tnames[ti],
              (unsigned long long)CLI_BUF_MAX_BYTES, (unsigned long long)lim);
      b->t = ti;
      b->esize = cli_tsize[ti];
      const char *init = "zeros";
      if (json_object_object_get_ex(bv, "init", &in)) {
        if (!json_object_is_type(in, json_type_string))
          GFAIL("buffer %s: field \"init\": %s is not a string (zeros, iota or const=V)\n", bn,
                json_object_to_json_string(in));
        init = json_object_get_string(in);
      }
      uint8_t cv[8] = {0};
      bool iota = !strcmp(init, "iota");
      if (!strncmp(init, "const=", 6)) {
        if (cli_parse_scalar(ti, init + 6, cv, why, sizeof why))
          GFAIL("buffer %s: field \"init\": const=V: %s\n", bn, why);
      } else if (!iota && strcmp(init, "zeros")) {
        GFAIL("buffer %s: field \"init\": '%s' is not zeros, iota or const=V\n", bn, init);
      }
      GCHECK(hsad_buffer_alloc(dev, b->count * b->esize, &b->ptr));
      for (uint64_t i = 0; i < b->count; i++) {
        uint8_t *p = (uint8_t *)b->ptr + i * b->esize;
        if (iota) put_value(ti, (double)i, (int64_t)i, p);
        else memcpy(p, cv, b->esize);
      }
      nb++;
    }
  }
  if (!json_object_object_get_ex(root, "nodes", &jn) || !json_object_is_type(jn, json_type_array))
    GFAIL("%s: field \"nodes\": missing or not an array\n", file);
  GCHECK(hsad_graph_create(0, &g));
  nn = (uint32_t)json_object_array_length(jn);
  if (nn > MAXN) GFAIL("%s: field \"nodes\": more than %d nodes\n", file, MAXN);
  for (uint32_t i = 0; i < nn; i++) {
    json_object *nd = json_object_array_get_idx(jn, i);
    char nm[32];
    snprintf(nm, sizeof nm, "#%u", i);
    if (!json_object_is_type(nd, json_type_object)) GFAIL("node %s: not an object\n", nm);
    v = NULL;
    if (json_object_object_get_ex(nd, "name", &v) && !json_object_is_type(v, json_type_string))
      GFAIL("node %s: field \"name\": %s is not a string\n", nm, json_object_to_json_string(v));
    nname[i] = v ? json_object_get_string(v) : strdup(nm);
    nname_own[i] = !v;
    if (!nname[i]) GFAIL("out of memory\n");
    const char *N = nname[i];
    if (unknown_key(nd, node_keys, why, sizeof why)) GFAIL("node %s: %s\n", N, why);
    if (strlen(N) >= HSAD_GRAPH_NAME_MAX)
      GFAIL("node %s: field \"name\": %zu bytes, at most %d\n", N, strlen(N),
            HSAD_GRAPH_NAME_MAX - 1);
    for (uint32_t j = 0; j < i; j++)
      if (!strcmp(nname[j], N))
        GFAIL("node %s: field \"name\": also the name of node #%u (names are unique: \"deps\" "
              "name nodes)\n", N, j);
    json_object *jcopy = NULL, *jfill = NULL;
    json_object_object_get_ex(nd, "copy", &jcopy);
    json_object_object_get_ex(nd, "fill", &jfill);
    blit_node_t bl = {0};
    bool blit = jcopy || jfill;
    if (blit && parse_blit(nd, jcopy, jfill, bufs, nb, &bl, why, sizeof why))
      GFAIL("node %s: %s\n", N, why);
    uint32_t ki = 0;
    if (!blit) {
      if (!json_object_object_get_ex(nd, "kernel", &v)) GFAIL("node %s: field \"kernel\": missing\n", N);
      if (!json_object_is_type(v, json_type_string))
        GFAIL("node %s: field \"kernel\": %s is not a string (a name under \"kernels\")\n", N,
              json_object_to_json_string(v));
      while (ki < nk && strcmp(kname[ki], json_object_get_string(v))) ki++;
      if (ki == nk) GFAIL("node %s: field \"kernel\": no kernel '%s'\n", N, json_object_get_string(v));
    }
    uint64_t u = 0;
    if (json_object_object_get_ex(nd, "lane", &v) &&
        json_uint(v, 0, HSAD_GRAPH_MAX_LANES - 1, &u, why, sizeof why))
      GFAIL("node %s: field \"lane\": %s (one queue per lane, at most %d)\n", N, why,
            HSAD_GRAPH_MAX_LANES);
    uint32_t lane = (uint32_t)u;
    if (lane + 1 > nlanes) nlanes = lane + 1;
    hsad_launch_t l = {.dims = 1, .grid = {1, 1, 1}, .block = {1, 1, 1}};
    hsad_karg_t args[MAXA];
    if (!blit) {
      json_object *gr;
      if (!json_object_object_get_ex(nd, "grid", &gr) || !json_object_is_type(gr, json_type_array) ||
          json_object_array_length(gr) < 1 || json_object_array_length(gr) > 3)
        GFAIL("node %s: field \"grid\": missing or not an array of 1-3 sizes\n", N);
      l.dims = (uint32_t)json_object_array_length(gr);
      for (uint32_t d = 0; d < l.dims; d++) {
        if (json_uint(json_object_array_get_idx(gr, d), 1, UINT32_MAX, &u, why, sizeof why))
          GFAIL("node %s: field \"grid\"[%u]: %s\n", N, d, why);
        l.grid[d] = (uint32_t)u;
      }
      if (json_object_object_get_ex(nd, "block", &gr)) {
        if (!json_object_is_type(gr, json_type_array) || json_object_array_length(gr) != l.dims)
          GFAIL("node %s: field \"block\": not an array of %u sizes\n", N, l.dims);
        for (uint32_t d = 0; d < l.dims; d++) {
          if (json_uint(json_object_array_get_idx(gr, d), 1, UINT32_MAX, &u, why, sizeof why))
            GFAIL("node %s: field \"block\"[%u]: %s\n", N, d, why);
          l.block[d] = (uint32_t)u;
        }
      } else {
        l.block[0] = l.grid[0] < 64 ? l.grid[0] : 64;
      }
      json_object *ja = NULL;
      if (json_object_object_get_ex(nd, "args", &ja) && !json_object_is_type(ja, json_type_array))
        GFAIL("node %s: field \"args\": not an array\n", N);
      uint32_t na = ja ? (uint32_t)json_object_array_length(ja) : 0;
      if (na > MAXA) GFAIL("node %s: field \"args\": more than %d arguments\n", N, MAXA);
      /* the given arguments (kinds and types), checked against the kernel's metadata as hsad
       * run's --arg are, then the values (range and integrality for the argument's type) */
      memset(gargs, 0, sizeof gargs);
      ngargs = na;
      for (uint32_t a = 0; a < na; a++) {
        json_object *av = json_object_array_get_idx(ja, a);
        arg_t *ga = &gargs[a];
        ga->spec = json_object_to_json_string_ext(av, JSON_C_TO_STRING_SPACED);
        if (json_object_is_type(av, json_type_string)) {
          uint32_t bi = 0;
          while (bi < nb && strcmp(bufs[bi].name, json_object_get_string(av))) bi++;
          if (bi == nb) GFAIL("node %s: field \"args\"[%u]: no buffer '%s'\n", N, a, json_object_get_string(av));
          ga->kind = A_BUF;
          ga->type = bufs[bi].t;
          ga->count = bufs[bi].count;
          ga->ptr = bufs[bi].ptr;
          continue;
        }
        const char *tk = NULL;
        json_object *sv = NULL;
        if (json_object_is_type(av, json_type_object) && json_object_object_length(av) == 1) {
          json_object_object_foreach(av, k_, v_) { tk = k_; sv = v_; }
        }
        if (!tk)
          GFAIL("node %s: field \"args\"[%u]: %s is neither a buffer name nor {\"TYPE\": VALUE}, "
                "{\"TYPE\": [V0, V1, ...]}, {\"hex\": \"BYTES[*N]\"} or {\"lds\": BYTES}\n", N, a,
                ga->spec);
        if (!strcmp(tk, "hex")) {
          if (!json_object_is_type(sv, json_type_string))
            GFAIL("node %s: field \"args\"[%u]: {\"hex\": ...} takes a string of hex digits, not %s\n",
                  N, a, json_object_to_json_string(sv));
          if (cli_parse_hex(json_object_get_string(sv), ga, why, sizeof why))
            GFAIL("node %s: field \"args\"[%u]: %s\n", N, a, why);
          continue;
        }
        if (!strcmp(tk, "lds")) {
          uint64_t n = 0;
          if (!json_object_is_type(sv, json_type_int) ||
              cli_parse_uint(json_object_to_json_string(sv), UINT32_MAX, &n))
            GFAIL("node %s: field \"args\"[%u]: {\"lds\": %s}: BYTES is not an integer from 0 to %u\n",
                  N, a, json_object_to_json_string(sv), UINT32_MAX);
          ga->kind = A_LDS;
          ga->lds = (uint32_t)n;
          continue;
        }
        if (cli_parse_type(tk, strlen(tk), &ga->type))
          GFAIL("node %s: field \"args\"[%u]: \"%s\" is not a TYPE (i8 u8 i16 u16 i32 u32 i64 u64 f32 "
                "f64), \"hex\" or \"lds\"\n", N, a, tk);
        ga->kind = A_SCALAR;
        if (json_object_is_type(sv, json_type_array)) {
          size_t nv = json_object_array_length(sv);
          if (nv < 1 || nv > VEC_MAX)
            GFAIL("node %s: field \"args\"[%u]: %zu values; a vector has 1 to %u\n", N, a, nv, VEC_MAX);
          ga->nvals = (uint32_t)nv;
        } else {
          ga->nvals = 1;
        }
      }
      uint32_t bad;
      const hsad_device_kernel_desc_t *kd = hsad_device_kernel_desc(kern[ki]);
      uint32_t np = na; /* NVIDIA: lds last, not a parameter */
      while (nv && np && gargs[np - 1].kind == A_LDS) np--;
      if (nv && nvk[ki].sizes &&
          cli_check_nv_args(kd->name, nvk[ki].count, nvk[ki].sizes, gargs, np, graph_warn,
                            (void *)N, &bad, why, sizeof why))
        GFAIL("node %s: %s\n", N, why);
#ifndef HSAD_NO_AMD
      if (!nv && cli_check_args(kd, gargs, na, CLI_SYNTAX_GRAPH, graph_warn, (void *)N, &bad, why,
                                sizeof why))
        GFAIL("node %s: %s\n", N, why);
#endif
      for (uint32_t a = 0; a < na; a++) {
        arg_t *ga = &gargs[a];
        if (ga->kind == A_SCALAR) { /* the values, range-checked for the argument's type */
          json_object *sv = NULL;
          json_object_object_foreach(json_object_array_get_idx(ja, a), k_, v_) { (void)k_; sv = v_; }
          for (uint32_t e = 0; e < ga->nvals; e++) {
            json_object *ev = json_object_is_type(sv, json_type_array) ? json_object_array_get_idx(sv, e) : sv;
            char w[512], lb[600];
            if (!json_object_is_type(ev, json_type_int) && !json_object_is_type(ev, json_type_double))
              snprintf(w, sizeof w, "%s is not a number", json_object_to_json_string(ev));
            if ((!json_object_is_type(ev, json_type_int) && !json_object_is_type(ev, json_type_double)) ||
                cli_parse_scalar(ga->type, json_object_to_json_string(ev),
                                 ga->value + e * cli_tsize[ga->type], w, sizeof w))
              GFAIL("node %s: %s: %s\n", N, arg_label(nv, kd, a, lb, sizeof lb), w);
          }
        }
        args[a] = cli_arg_karg(ga, !nv);
      }
      l.args = args;
      l.arg_count = na;
    }
    uint32_t deps[MAXN], nd_ = 0;
    json_object *jd;
    if (json_object_object_get_ex(nd, "deps", &jd)) {
      if (!json_object_is_type(jd, json_type_array))
        GFAIL("node %s: field \"deps\": not an array of node names\n", N);
      for (size_t d = 0; d < json_object_array_length(jd); d++) {
        json_object *dj = json_object_array_get_idx(jd, d);
        if (!json_object_is_type(dj, json_type_string))
          GFAIL("node %s: field \"deps\"[%zu]: %s is not a node name\n", N, d,
                json_object_to_json_string(dj));
        const char *dn = json_object_get_string(dj);
        uint32_t j = 0;
        while (j < i && strcmp(nname[j], dn ? dn : "")) j++;
        if (j == i) GFAIL("node %s: field \"deps\"[%zu]: no earlier node '%s'\n", N, d, dn ? dn : "");
        deps[nd_++] = j;
      }
    }
    if (!blit)
      GCHECK(hsad_graph_add_kernel(g, N, lane, kern[ki], &l, deps, nd_, NULL));
    else if (bl.fill)
      GCHECK(hsad_graph_add_fill(g, N, lane, bl.dst, bl.pattern, bl.width, bl.count, deps, nd_,
                                 NULL));
    else
      GCHECK(hsad_graph_add_copy(g, N, lane, bl.dst, bl.src, bl.bytes, deps, nd_, NULL));
    for (uint32_t a = 0; a < ngargs; a++) free(gargs[a].bytes); /* copied by the graph */
    ngargs = 0;
  }
  /* the checks, before anything runs: keys, buffer, values (each one of the buffer's type), and
   * no more values than the buffer has elements */
  uint32_t check_buf[MAXN];
  size_t nc = 0;
  if (json_object_object_get_ex(root, "checks", &jc)) {
    if (!json_object_is_type(jc, json_type_array)) GFAIL("%s: field \"checks\": not an array\n", file);
    nc = json_object_array_length(jc);
    if (nc > MAXN) GFAIL("%s: field \"checks\": more than %d checks\n", file, MAXN);
  }
  for (size_t c = 0; c < nc; c++) {
    json_object *ck = json_object_array_get_idx(jc, c), *bname, *eq;
    if (!json_object_is_type(ck, json_type_object)) GFAIL("checks[%zu]: not an object\n", c);
    if (unknown_key(ck, check_keys, why, sizeof why)) GFAIL("checks[%zu]: %s\n", c, why);
    if (!json_object_object_get_ex(ck, "buffer", &bname))
      GFAIL("checks[%zu]: field \"buffer\": missing\n", c);
    if (!json_object_is_type(bname, json_type_string))
      GFAIL("checks[%zu]: field \"buffer\": %s is not a string (a buffer name)\n", c,
            json_object_to_json_string(bname));
    uint32_t bi = 0;
    while (bi < nb && strcmp(bufs[bi].name, json_object_get_string(bname))) bi++;
    if (bi == nb) GFAIL("checks[%zu]: field \"buffer\": no buffer '%s'\n", c, json_object_get_string(bname));
    if (!json_object_object_get_ex(ck, "equals", &eq)) GFAIL("checks[%zu]: field \"equals\": missing\n", c);
    bool arr = json_object_is_type(eq, json_type_array);
    uint64_t n = arr ? json_object_array_length(eq) : 1;
    if (arr && (n == 0 || n > bufs[bi].count))
      GFAIL("checks[%zu]: field \"equals\": %llu values, buffer %s has %llu elements (an array "
            "checks 1 to %llu first elements, a number all of them)\n", c, (unsigned long long)n,
            bufs[bi].name, (unsigned long long)bufs[bi].count, (unsigned long long)bufs[bi].count);
    for (uint64_t e = 0; e < n; e++) {
      uint8_t want[8];
      char w[512];
      if (check_value(bufs[bi].t, arr ? json_object_array_get_idx(eq, e) : eq, want, w, sizeof w)) {
        if (arr) GFAIL("checks[%zu]: field \"equals\"[%llu]: %s\n", c, (unsigned long long)e, w);
        GFAIL("checks[%zu]: field \"equals\": %s\n", c, w);
      }
    }
    check_buf[c] = bi;
  }
  for (uint32_t i = 0; i < nlanes; i++) {
    hsad_queue_options_t qo = {0};
    GCHECK(hsad_queue_create(dev, &qo, &queues[i]));
  }
  GCHECK(hsad_graph_instantiate(g, queues, nlanes, &x));
  uint32_t nq = hsad_graph_exec_queue_count(x);
  hsad_completion_t done[HSAD_GRAPH_MAX_LANES];
  hsad_graph_rollback_t rb = HSAD_GRAPH_ROLLBACK_NONE;
  tsub = malloc(launches * sizeof *tsub);
  twait = malloc(launches * sizeof *twait);
  if (!tsub || !twait) GFAIL("out of memory\n");
  char checked[4096] = ""; /* the check lines, printed after the summary */
  bool warned_rollback = false;
  jchecks = json_object_new_array();
  for (uint32_t r = 0; r < launches; r++) {
    uint64_t t0 = hsad_now_ns();
    GCHECK(hsad_graph_launch(x, sequential ? HSAD_GRAPH_SEQUENTIAL : 0, t0 + 10000000000ull, done, &rb));
    uint64_t t1 = hsad_now_ns();
    if (rb != HSAD_GRAPH_ROLLBACK_NONE && !sequential && !warned_rollback) {
      warned_rollback = true; /* once: the counts follow in the summary */
      fprintf(stderr, "hsad graph: warning: launch %u was not fused (%s): it ran node by node "
              "(rollback to sequential submission; same results, the host waits between "
              "queues)\n", r + 1, hsad_graph_rollback_name(rb));
    }
    GCHECK(hsad_completion_wait_all(done, nq, t1 + 10000000000ull));
    tsub[r] = t1 - t0;
    twait[r] = hsad_now_ns() - t0;
    if (r == 0) {
      for (size_t c = 0; c < nc; c++) { /* validated above */
        json_object *eq;
        json_object_object_get_ex(json_object_array_get_idx(jc, c), "equals", &eq);
        uint32_t bi = check_buf[c];
        bool arr = json_object_is_type(eq, json_type_array);
        uint64_t n = arr ? json_object_array_length(eq) : bufs[bi].count;
        uint8_t want[8] = {0};
        if (!arr) check_value(bufs[bi].t, eq, want, why, sizeof why); /* once for all */
        for (uint64_t i = 0; i < n; i++) {
          json_object *ev = arr ? json_object_array_get_idx(eq, i) : eq;
          uint8_t *got = (uint8_t *)bufs[bi].ptr + i * bufs[bi].esize;
          if (arr) check_value(bufs[bi].t, ev, want, why, sizeof why);
          if (memcmp(want, got, bufs[bi].esize))
            GFAIL("checks[%zu]: buffer %s[%llu] is %.9g, field \"equals\" wants %s (after the "
                  "first launch)\n", c, bufs[bi].name, (unsigned long long)i,
                  get_value(&bufs[bi], i), json_object_to_json_string(ev));
        }
        json_object *jck = json_object_new_object();
        json_object_object_add(jck, "buffer", json_object_new_string(bufs[bi].name));
        json_object_object_add(jck, "elements", json_object_new_uint64(n));
        json_object_array_add(jchecks, jck);
        size_t used = strlen(checked);
        snprintf(checked + used, sizeof checked - used, "  check %s: %llu elements OK\n",
                 bufs[bi].name, (unsigned long long)n);
      }
    }
  }
  uint64_t counts[HSAD_GRAPH_ROLLBACK_COUNT];
  hsad_graph_exec_counters(x, counts);
  qsort(tsub, launches, sizeof *tsub, cmp_u64);
  qsort(twait, launches, sizeof *twait, cmp_u64);
  if (cli.json) {
    json_object *j = json_object_new_object();
    json_object_object_add(j, "file", json_object_new_string(file));
    json_object_object_add(j, "nodes", json_object_new_int64(nn));
    json_object_object_add(j, "queues", json_object_new_int64(nq));
    json_object_object_add(j, "launches", json_object_new_int64(launches));
    json_object_object_add(j, "path", json_object_new_string(hsad_graph_rollback_name(rb)));
    json_object_object_add(j, "fused", json_object_new_boolean(rb == HSAD_GRAPH_ROLLBACK_NONE));
    json_object *paths = json_object_new_object(); /* launches per path, the paths taken */
    for (uint32_t i = 0; i < HSAD_GRAPH_ROLLBACK_COUNT; i++)
      if (counts[i])
        json_object_object_add(paths, hsad_graph_rollback_name((hsad_graph_rollback_t)i),
                               json_object_new_uint64(counts[i]));
    json_object_object_add(j, "paths", paths);
    json_object *pk = json_object_new_array(); /* fused: packets per queue, one doorbell each */
    json_object_object_add(j, "cuda_graph", json_object_new_boolean(nv));
    for (uint32_t qi = 0; qi < nq && rb == HSAD_GRAPH_ROLLBACK_NONE && !nv; qi++)
      json_object_array_add(pk, json_object_new_int64(hsad_graph_exec_packet_count(x, qi)));
    json_object_object_add(j, "queue_packets", pk);
    json_object *ts = json_object_new_object(), *tw = json_object_new_object();
    json_object_object_add(ts, "median", hsad_cli_json_double(tsub[launches / 2] / 1e3, "%.3f"));
    json_object_object_add(ts, "min", hsad_cli_json_double(tsub[0] / 1e3, "%.3f"));
    json_object_object_add(tw, "median", hsad_cli_json_double(twait[launches / 2] / 1e3, "%.3f"));
    json_object_object_add(tw, "min", hsad_cli_json_double(twait[0] / 1e3, "%.3f"));
    json_object_object_add(j, "host_submit_us", ts);
    json_object_object_add(j, "submit_wait_us", tw);
    json_object_object_add(j, "checks", jchecks);
    jchecks = NULL;
    json_object *r = json_object_new_object();
    json_object_object_add(r, "graph", j);
    hsad_cli_print_json(r);
  } else {
    printf("graph %s: %u nodes on %u queue(s), %u launch(es), path: %s\n", file, nn, nq, launches,
           hsad_graph_rollback_name(rb));
    if (nv && rb == HSAD_GRAPH_ROLLBACK_NONE)
      printf("  one CUDA graph launched on queue 0's stream (cuGraphLaunch)%s\n",
             nq > 1 ? "; the other queues joined after it" : "");
    if (nv && hsad_graph_exec_rollback_detail(x))
      printf("  the driver refused the CUDA graph: %s\n", hsad_graph_exec_rollback_detail(x));
    for (uint32_t qi = 0; qi < nq && rb == HSAD_GRAPH_ROLLBACK_NONE && !nv; qi++) {
      uint32_t np = hsad_graph_exec_packet_count(x, qi);
      printf("  queue %u: %u packet%s, 1 doorbell per launch\n", qi, np, np == 1 ? "" : "s");
    }
    if (counts[HSAD_GRAPH_ROLLBACK_NONE] != launches) {
      printf("  not fused:");
      for (uint32_t i = 1, sep = 0; i < HSAD_GRAPH_ROLLBACK_COUNT; i++)
        if (counts[i])
          printf("%s %llu of %u launches (%s)", sep++ ? "," : "", (unsigned long long)counts[i],
                 launches, hsad_graph_rollback_name((hsad_graph_rollback_t)i));
      printf("\n");
    }
    printf("  host submit: median %.2f us (min %.2f); submit+wait: median %.2f us (min %.2f)\n",
           tsub[launches / 2] / 1e3, tsub[0] / 1e3, twait[launches / 2] / 1e3, twait[0] / 1e3);
    fputs(checked, stdout);
  }
  rc = 0;
out:
  for (uint32_t a = 0; a < ngargs; a++) free(gargs[a].bytes);
  for (uint32_t i = 0; i < MAXN; i++)
    if (nname_own[i]) free((char *)nname[i]);
  free(tsub);
  free(twait);
  hsad_graph_exec_destroy(x);
  hsad_graph_destroy(g);
  for (uint32_t i = 0; i < nlanes; i++) hsad_queue_destroy(queues[i]);
  for (uint32_t i = 0; i < nb; i++) hsad_buffer_free(bufs[i].ptr);
  /* nk + 1: a program whose "kernel" lookup failed is loaded but not counted yet */
  for (uint32_t i = 0; i <= nk && i < MAXK; i++) {
    hsad_program_destroy(progs[i]);
    free(nvk[i].sizes);
    free(nvk[i].image);
  }
  if (rt) hsad_runtime_close(rt);
  if (root) json_object_put(root);
  json_object_put(jchecks);
  return rc;
}
