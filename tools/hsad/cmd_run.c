/* cmd_run.c - `hsad run`: compile or load a kernel, set up its arguments, dispatch it, report. */
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsa-dispatch/hsad.h"
#include "hsa-dispatch/hsad_rocr.h"
#include "tools/hsad/hsad_cli.h"

static void usage(FILE *f) {
  fprintf(f,
    "usage: hsad run SOURCE.cl|SOURCE.hip|FILE.hsaco KERNEL --grid X[,Y[,Z]] [--block X[,Y[,Z]]]\n"
    "                [--arg SPEC]... [--repeat N] [--device N] [--co-version 4|5] [-O0..3]\n"
    "                [-DNAME[=V]]... [--json]\n"
    "\n"
    "Compiles SOURCE with comgr for the device's ISA (or loads a code object / bundle), creates\n"
    "the arguments, dispatches KERNEL N times in order (each packet has the barrier bit, so the\n"
    "runs form a dependent chain), waits, and reports the device, the kernel's resources and the\n"
    "timings. Buffers live in host-coherent fine-grained memory of the GPU's nearest NUMA node.\n"
    "\n"
    "--grid / --block   work-items per dimension (block default 64 / 1 / 1, clamped to the grid)\n"
    "--arg SPEC, one per explicit kernel argument, in order:\n"
    "  buf:TYPE:COUNT[:INIT][:out[=FILE]][:txt=FILE]\n"
    "        a buffer of COUNT elements of TYPE; INIT is zeros (default), iota (0,1,2,...),\n"
    "        random[=SEED] (uniform [0,1) for floats, [0,1000) for integers), const=V, or\n"
    "        file=PATH (raw bytes, at most COUNT elements). `out` prints a summary of the buffer\n"
    "        after the run, `out=FILE` writes its raw bytes to FILE, `txt=FILE` one element per\n"
    "        line (%%.9g for floats).\n"
    "  TYPE:VALUE    a scalar, e.g. f32:2.5 u32:1000 i64:-3\n"
    "  lds:BYTES     dynamic LDS for a __local pointer argument\n"
    "  TYPE is one of i8 u8 i16 u16 i32 u32 i64 u64 f32 f64.\n"
    "--repeat N   dispatch N times (default 1); --device N (default 0); --json: one JSON object\n"
    "\n"
    "example:\n"
    "  hsad run kernels/saxpy.cl saxpy --grid 100000 --block 256 --arg f32:2.5 \\\n"
    "      --arg buf:f32:100000:iota --arg buf:f32:100000:const=1:out --repeat 10\n");
}

typedef enum { T_I8, T_U8, T_I16, T_U16, T_I32, T_U32, T_I64, T_U64, T_F32, T_F64 } etype_t;
static const char *tnames[] = {"i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64"};
static const uint32_t tsize[] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};

/* --repeat: each dispatch is timed (8 bytes) and waits for ring space, not for the GPU */
#define REPEAT_MAX 10000000u

typedef enum { A_BUF, A_SCALAR, A_LDS } akind_t;

typedef struct arg {
  akind_t kind;
  etype_t type;
  uint64_t count;
  void *ptr;
  uint8_t value[8];
  uint32_t lds;
  char init[256];
  bool out;
  const char *out_file, *txt_file;
  const char *spec; /* the --arg value, for messages */
} arg_t;

static int parse_type(const char *s, size_t n, etype_t *out) {
  for (int i = 0; i < 10; i++)
    if (strlen(tnames[i]) == n && !strncmp(s, tnames[i], n)) {
      *out = (etype_t)i;
      return 0;
    }
  return -1;
}

/* Unsigned integer: decimal, 0x hex or 0 octal; no sign, no trailing characters, at most max. */
static int parse_uint(const char *v, uint64_t max, uint64_t *out) {
  const char *p = v;
  while (*p == ' ' || *p == '\t') p++;
  if (*p == '-' || *p == '+' || *p < '0' || *p > '9') return -1;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(p, &end, 0);
  if (*end || errno || x > max) return -1;
  *out = x;
  return 0;
}

static int parse_int(const char *v, int64_t min, int64_t max, int64_t *out) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, 0);
  if (end == v || *end || errno || x < min || x > max) return -1;
  *out = x;
  return 0;
}

static const int64_t tmin[] = {INT8_MIN, 0, INT16_MIN, 0, INT32_MIN, 0, INT64_MIN, 0, 0, 0};
static const uint64_t tmax[] = {INT8_MAX, UINT8_MAX, INT16_MAX, UINT16_MAX, INT32_MAX,
                                UINT32_MAX, INT64_MAX, UINT64_MAX, 0, 0};
static bool is_float(etype_t t) { return t == T_F32 || t == T_F64; }
static bool is_signed(etype_t t) { return t == T_I8 || t == T_I16 || t == T_I32 || t == T_I64; }

/* A value of type t into out (little-endian, tsize[t] bytes). On error, why says what. */
static int parse_scalar(etype_t t, const char *v, uint8_t out[8], char *why, size_t whyn) {
  char *end;
  memset(out, 0, 8);
  if (is_float(t)) {
    errno = 0;
    double d = t == T_F32 ? strtof(v, &end) : strtod(v, &end);
    if (end == v || *end) {
      snprintf(why, whyn, "'%s' is not a %s number", v, tnames[t]);
      return -1;
    }
    if (errno == ERANGE && isinf(d)) {
      snprintf(why, whyn, "'%s' is out of range for %s (max %g)", v, tnames[t],
               t == T_F32 ? (double)FLT_MAX : DBL_MAX);
      return -1;
    }
    if (t == T_F32) {
      float f = (float)d;
      memcpy(out, &f, 4);
    } else {
      memcpy(out, &d, 8);
    }
    return 0;
  }
  if (is_signed(t)) {
    int64_t x;
    if (parse_int(v, tmin[t], (int64_t)tmax[t], &x)) {
      snprintf(why, whyn, "'%s' is not an integer from %lld to %lld (%s)", v, (long long)tmin[t],
               (long long)tmax[t], tnames[t]);
      return -1;
    }
    memcpy(out, &x, tsize[t]);
    return 0;
  }
  uint64_t x;
  if (parse_uint(v, tmax[t], &x)) {
    snprintf(why, whyn, "'%s' is not an integer from 0 to %llu (%s)", v,
             (unsigned long long)tmax[t], tnames[t]);
    return -1;
  }
  memcpy(out, &x, tsize[t]);
  return 0;
}

/* A buffer's size limit: COUNT x element size must stay below this (and below SIZE_MAX). */
#define BUF_MAX_BYTES (1ull << 40)

static int parse_arg(const char *spec, arg_t *a, char *why, size_t whyn) {
  memset(a, 0, sizeof *a);
  snprintf(why, whyn, "not a valid SPEC (see hsad run --help)");
  if (!strncmp(spec, "lds:", 4)) {
    uint64_t n;
    a->kind = A_LDS;
    if (parse_uint(spec + 4, UINT32_MAX, &n)) {
      snprintf(why, whyn, "BYTES '%s' is not an integer from 0 to %u", spec + 4, UINT32_MAX);
      return -1;
    }
    a->lds = (uint32_t)n;
    return 0;
  }
  if (strncmp(spec, "buf:", 4)) {
    const char *colon = strchr(spec, ':');
    if (!colon || parse_type(spec, (size_t)(colon - spec), &a->type)) return -1;
    a->kind = A_SCALAR;
    return parse_scalar(a->type, colon + 1, a->value, why, whyn);
  }
  a->kind = A_BUF;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", spec + 4);
  char *save = NULL, *tok = strtok_r(buf, ":", &save);
  if (!tok || parse_type(tok, strlen(tok), &a->type)) return -1;
  tok = strtok_r(NULL, ":", &save);
  uint64_t lim = BUF_MAX_BYTES / tsize[a->type];
  if (SIZE_MAX / tsize[a->type] < lim) lim = SIZE_MAX / tsize[a->type];
  if (!tok || parse_uint(tok, UINT64_MAX, &a->count) || !a->count) {
    snprintf(why, whyn, "COUNT '%s' is not a positive integer", tok ? tok : "");
    return -1;
  }
  if (a->count > lim) {
    snprintf(why, whyn, "COUNT %s x %u-byte %s exceeds the buffer limit of %llu bytes (%llu elements)",
             tok, tsize[a->type], tnames[a->type], (unsigned long long)BUF_MAX_BYTES,
             (unsigned long long)lim);
    return -1;
  }
  snprintf(a->init, sizeof a->init, "zeros");
  while ((tok = strtok_r(NULL, ":", &save))) {
    uint64_t seed;
    if (!strcmp(tok, "out")) a->out = true;
    else if (!strncmp(tok, "out=", 4)) a->out_file = strdup(tok + 4);
    else if (!strncmp(tok, "txt=", 4)) a->txt_file = strdup(tok + 4);
    else if (!strcmp(tok, "zeros") || !strcmp(tok, "iota") || !strcmp(tok, "random") ||
             !strncmp(tok, "file=", 5))
      snprintf(a->init, sizeof a->init, "%s", tok);
    else if (!strncmp(tok, "random=", 7)) {
      if (parse_uint(tok + 7, UINT64_MAX, &seed)) {
        snprintf(why, whyn, "random=SEED: '%s' is not an integer from 0 to %llu", tok + 7,
                 (unsigned long long)UINT64_MAX);
        return -1;
      }
      snprintf(a->init, sizeof a->init, "%s", tok);
    } else if (!strncmp(tok, "const=", 6)) {
      char w[256];
      if (parse_scalar(a->type, tok + 6, a->value, w, sizeof w)) {
        snprintf(why, whyn, "const=V: %s", w);
        return -1;
      }
      snprintf(a->init, sizeof a->init, "%s", tok);
    } else return -1;
  }
  return 0;
}

/* Integer element types, exactly (every type fits in __int128). */
static __int128 elem_geti(const arg_t *a, uint64_t i) {
  const uint8_t *p = (const uint8_t *)a->ptr + i * tsize[a->type];
  switch (a->type) {
  case T_I8: return *(const int8_t *)p;
  case T_U8: return *p;
  case T_I16: return *(const int16_t *)p;
  case T_U16: return *(const uint16_t *)p;
  case T_I32: return *(const int32_t *)p;
  case T_U32: return *(const uint32_t *)p;
  case T_I64: return *(const int64_t *)p;
  case T_U64: return *(const uint64_t *)p;
  default: return 0;
  }
}

static double elem_get(const arg_t *a, uint64_t i) {
  const uint8_t *p = (const uint8_t *)a->ptr + i * tsize[a->type];
  if (a->type == T_F32) return *(const float *)p;
  if (a->type == T_F64) return *(const double *)p;
  return (double)elem_geti(a, i);
}

static const char *fmt_i128(char buf[48], __int128 v) {
  char tmp[48];
  int n = 0;
  bool neg = v < 0;
  unsigned __int128 u = neg ? -(unsigned __int128)v : (unsigned __int128)v;
  do tmp[n++] = (char)('0' + (int)(u % 10)); while ((u /= 10));
  int j = 0;
  if (neg) buf[j++] = '-';
  while (n) buf[j++] = tmp[--n];
  buf[j] = '\0';
  return buf;
}

/* Summary of a buffer: integers exactly; floats over their finite values, NaN/inf counted. */
typedef struct summary {
  __int128 isum, imin, imax;
  double fsum, fmin, fmax;
  uint64_t finite, nan, inf;
} summary_t;

static void summarize(const arg_t *a, summary_t *s) {
  memset(s, 0, sizeof *s);
  for (uint64_t e = 0; e < a->count; e++) {
    if (!is_float(a->type)) {
      __int128 v = elem_geti(a, e);
      s->isum += v;
      if (!e || v < s->imin) s->imin = v;
      if (!e || v > s->imax) s->imax = v;
      continue;
    }
    double v = elem_get(a, e);
    if (isnan(v)) s->nan++;
    else if (isinf(v)) s->inf++;
    else {
      s->fsum += v;
      if (!s->finite || v < s->fmin) s->fmin = v;
      if (!s->finite || v > s->fmax) s->fmax = v;
      s->finite++;
    }
  }
}

/* One element: integers exactly, floats %.9g; in JSON a non-finite float is null. */
static void print_elem(const arg_t *a, uint64_t e, bool json) {
  char b[48];
  if (!is_float(a->type)) fputs(fmt_i128(b, elem_geti(a, e)), stdout);
  else if (json && !isfinite(elem_get(a, e))) fputs("null", stdout);
  else printf("%.9g", elem_get(a, e));
}

/* A float for JSON: null when not finite (JSON has no inf/nan). */
static void print_json_double(double v) {
  if (isfinite(v)) printf("%.17g", v);
  else fputs("null", stdout);
}

static void elem_set(arg_t *a, uint64_t i, double v) {
  uint8_t *p = (uint8_t *)a->ptr + i * tsize[a->type];
  switch (a->type) {
  case T_I8: *(int8_t *)p = (int8_t)v; break;
  case T_U8: *p = (uint8_t)v; break;
  case T_I16: *(int16_t *)p = (int16_t)v; break;
  case T_U16: *(uint16_t *)p = (uint16_t)v; break;
  case T_I32: *(int32_t *)p = (int32_t)v; break;
  case T_U32: *(uint32_t *)p = (uint32_t)v; break;
  case T_I64: *(int64_t *)p = (int64_t)v; break;
  case T_U64: *(uint64_t *)p = (uint64_t)v; break;
  case T_F32: *(float *)p = (float)v; break;
  case T_F64: *(double *)p = v; break;
  }
}

static int init_buffer(arg_t *a) {
  const char *in = a->init;
  if (!strcmp(in, "zeros")) return 0; /* hsad_buffer_alloc zeroes */
  if (!strcmp(in, "iota")) {
    for (uint64_t i = 0; i < a->count; i++) elem_set(a, i, (double)i);
    return 0;
  }
  if (!strncmp(in, "random", 6)) {
    uint64_t x = in[6] == '=' ? strtoull(in + 7, NULL, 0) : 42;
    bool fl = a->type == T_F32 || a->type == T_F64;
    for (uint64_t i = 0; i < a->count; i++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull; /* LCG (Knuth MMIX) */
      uint32_t r = (uint32_t)(x >> 40); /* 24 random bits */
      elem_set(a, i, fl ? (double)r / 16777216.0 : (double)(r % 1000));
    }
    return 0;
  }
  if (!strncmp(in, "const=", 6)) { /* value parsed and range-checked by parse_arg */
    for (uint64_t i = 0; i < a->count; i++)
      memcpy((uint8_t *)a->ptr + i * tsize[a->type], a->value, tsize[a->type]);
    return 0;
  }
  if (!strncmp(in, "file=", 5)) {
    FILE *f = fopen(in + 5, "rb");
    if (!f) {
      fprintf(stderr, "hsad run: %s: %s\n", in + 5, strerror(errno));
      return -1;
    }
    size_t got = fread(a->ptr, 1, a->count * tsize[a->type], f);
    fclose(f);
    (void)got;
    return 0;
  }
  return -1;
}

static int parse_dims(const char *s, uint32_t out[3], uint32_t *dims) {
  char *end;
  uint32_t n = 0;
  out[0] = out[1] = out[2] = 1;
  while (*s && n < 3) {
    char num[32];
    size_t len = strcspn(s, ",");
    if (len >= sizeof num) return -1;
    memcpy(num, s, len);
    num[len] = '\0';
    uint64_t v;
    if (parse_uint(num, UINT32_MAX, &v) || !v) return -1;
    out[n++] = (uint32_t)v;
    end = (char *)s + len;
    s = *end == ',' ? end + 1 : end;
  }
  if (*s) return -1;
  *dims = n;
  return n ? 0 : -1;
}

static char *slurp(const char *path, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  if (b) {
    b[n] = '\0';
    *out_size = (size_t)n;
  }
  return b;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static int ends_with(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n >= m && !strcmp(s + n - m, suf);
}

#define FAIL(...)                                                                     \
  do {                                                                                \
    fprintf(stderr, "hsad run: " __VA_ARGS__);                                        \
    rc = 1;                                                                           \
    goto out;                                                                         \
  } while (0)
#define CHECK(expr)                                                                   \
  do {                                                                                \
    hsad_status_t s_ = (expr);                                                        \
    if (s_) FAIL("%s: %s\n", hsad_status_name(s_), hsad_last_error());                \
  } while (0)

int hsad_cmd_run(int argc, char **argv) {
  const char *input = NULL, *kname = NULL;
  uint32_t grid[3] = {0, 1, 1}, block[3] = {0, 1, 1}, gdims = 0, bdims = 0, repeat = 1, devi = 0;
  uint32_t co_version = 0;
  int opt = 2;
  bool json = false;
  arg_t *args = calloc((size_t)argc + 1, sizeof *args);
  const char **defs = calloc((size_t)argc + 1, sizeof *defs);
  uint32_t nargs = 0, ndefs = 0;
  int rc = 2;
  hsad_runtime_t *rt = NULL;
  hsad_program_t *prog = NULL;
  hsad_queue_t *q = NULL;
  uint64_t *submit = NULL;
  hsad_karg_t *kargs = NULL;
  char *log = NULL;
  if (!args || !defs) return 1;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      rc = 0;
      goto out;
    } else if (!strcmp(a, "--json")) {
      json = true;
    } else if (!strcmp(a, "--grid") && v) {
      if (parse_dims(v, grid, &gdims))
        FAIL("--grid %s: expected X[,Y[,Z]], each an integer from 1 to %u\n", v, UINT32_MAX);
      i++;
    } else if (!strcmp(a, "--block") && v) {
      if (parse_dims(v, block, &bdims))
        FAIL("--block %s: expected X[,Y[,Z]], each an integer from 1 to %u\n", v, UINT32_MAX);
      i++;
    } else if (!strcmp(a, "--arg") && v) {
      char why[512];
      if (parse_arg(v, &args[nargs], why, sizeof why)) {
        fprintf(stderr, "hsad run: --arg %s: %s\n", v, why);
        goto out;
      }
      args[nargs].spec = v;
      nargs++;
      i++;
    } else if (!strcmp(a, "--repeat") && v) {
      uint64_t n;
      if (parse_uint(v, REPEAT_MAX, &n) || !n) {
        fprintf(stderr, "hsad run: --repeat %s: expected an integer from 1 to %u\n", v, REPEAT_MAX);
        goto out;
      }
      repeat = (uint32_t)n;
      i++;
    } else if (!strcmp(a, "--device") && v) {
      uint64_t n;
      if (parse_uint(v, UINT32_MAX, &n)) {
        fprintf(stderr, "hsad run: --device %s: expected a device index (0, 1, ...)\n", v);
        goto out;
      }
      devi = (uint32_t)n;
      i++;
    } else if (!strcmp(a, "--co-version") && v) {
      if (strcmp(v, "4") && strcmp(v, "5")) {
        fprintf(stderr, "hsad run: --co-version %s: expected 4 or 5\n", v);
        goto out;
      }
      co_version = (uint32_t)atoi(v);
      i++;
    } else if (!strncmp(a, "-O", 2)) {
      if (strlen(a) != 3 || a[2] < '0' || a[2] > '3') {
        fprintf(stderr, "hsad run: %s: expected -O0, -O1, -O2 or -O3\n", a);
        goto out;
      }
      opt = a[2] - '0';
    } else if (!strncmp(a, "-D", 2) && a[2]) {
      defs[ndefs++] = a + 2;
    } else if (a[0] == '-') {
      fprintf(stderr, "hsad run: unknown or incomplete option '%s'\n", a);
      usage(stderr);
      goto out;
    } else if (!input) {
      input = a;
    } else if (!kname) {
      kname = a;
    } else {
      fprintf(stderr, "hsad run: unexpected argument '%s'\n", a);
      goto out;
    }
  }
  if (!input || !kname || !gdims) {
    fprintf(stderr, "hsad run: need SOURCE|FILE, KERNEL and --grid\n");
    usage(stderr);
    goto out;
  }
  if (!bdims) {
    bdims = gdims;
    block[0] = grid[0] < 64 ? grid[0] : 64;
  }
  uint32_t dims = gdims > bdims ? gdims : bdims;
  for (uint32_t d = 0; d < 3; d++)
    if (d >= gdims) grid[d] = 1;

  CHECK(hsad_runtime_open(&rt));
  hsad_device_t *dev;
  CHECK(hsad_device_get(rt, devi, &dev));
  const hsad_device_info_t *di = hsad_device_info(dev);
  uint64_t t_compile = 0;
  if (ends_with(input, ".cl") || ends_with(input, ".hip")) {
    size_t n = 0;
    char *src = slurp(input, &n);
    if (!src) FAIL("%s: %s\n", input, strerror(errno));
    hsad_compile_options_t o = {.target = di->isa_name, .opt_level = opt, .defines = defs,
                                .define_count = ndefs, .code_object_version = co_version};
    void *elf = NULL;
    size_t elf_size = 0;
    uint64_t t0 = hsad_now_ns();
    hsad_status_t s = hsad_codeobj_compile(src, n, input, &o, &elf, &elf_size, &log);
    t_compile = hsad_now_ns() - t0;
    free(src);
    if (s) { /* the error message usually carries the compiler's log already: print it once */
      const char *e = hsad_last_error();
      bool in_msg = log && *log && strstr(e, log);
      size_t el = strlen(e);
      FAIL("%s: %s%s%s", hsad_status_name(s), e, el && e[el - 1] == '\n' ? "" : "\n",
           log && !in_msg ? log : "");
    }
    s = hsad_program_load_memory(dev, elf, elf_size, input, &prog);
    free(elf);
    CHECK(s);
  } else {
    CHECK(hsad_program_load_file(dev, input, &prog));
  }
  const hsad_device_kernel_t *k;
  CHECK(hsad_program_kernel(prog, kname, &k));
  const hsad_device_kernel_desc_t *kd = hsad_device_kernel_desc(k);
  const hsad_kernel_info_t *ki = hsad_kernel_info(kd->codeobj_kernel);

  /* __local pointer parameters take --arg lds:BYTES (checked here, so the message speaks of the
   * command line, not of the library's HSAD_KARG_LDS_BYTES) */
  for (uint32_t j = 0, e = 0; j < ki->arg_count && e < nargs; j++) {
    const hsad_kernel_arg_t *ka = &ki->args[j];
    if (hsad_value_kind_is_hidden(ka->value_kind)) continue;
    bool local = ka->value_kind == HSAD_VK_DYNAMIC_SHARED_POINTER;
    char nm[300] = "";
    if (ka->name[0]) snprintf(nm, sizeof nm, " ('%s')", ka->name);
    if (local && args[e].kind != A_LDS)
      FAIL("--arg %s: argument %u of kernel '%s'%s is a __local pointer: use --arg lds:BYTES "
           "(the dynamic LDS size), not a %s\n", args[e].spec, e, kname, nm,
           args[e].kind == A_BUF ? "buffer" : "scalar");
    if (!local && args[e].kind == A_LDS)
      FAIL("--arg %s: argument %u of kernel '%s'%s is %s, not a __local pointer\n", args[e].spec,
           e, kname, nm, hsad_value_kind_name(ka->value_kind));
    e++;
  }
  kargs = calloc(nargs + 1, sizeof *kargs);
  if (!kargs) FAIL("out of memory\n");
  uint32_t dyn_lds = 0;
  for (uint32_t i = 0; i < nargs; i++) {
    arg_t *a = &args[i];
    if (a->kind == A_BUF) {
      CHECK(hsad_buffer_alloc(dev, a->count * tsize[a->type], &a->ptr));
      if (init_buffer(a)) FAIL("--arg %u: bad initial content '%s'\n", i, a->init);
      kargs[i] = HSAD_KARG_PTR(a->ptr);
    } else if (a->kind == A_SCALAR) {
      kargs[i] = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .size = tsize[a->type], .bytes = a->value};
    } else {
      kargs[i] = HSAD_KARG_LDS_BYTES(a->lds);
      dyn_lds += a->lds;
    }
  }
  hsad_queue_options_t qo = {.size = 1024, .profiling = true};
  CHECK(hsad_queue_create(dev, &qo, &q));
  hsad_launch_t l = {.dims = dims, .args = kargs, .arg_count = nargs};
  memcpy(l.grid, grid, sizeof grid);
  memcpy(l.block, block, sizeof block);
  submit = calloc(repeat, sizeof *submit);
  if (!submit) FAIL("out of memory\n");
  hsad_completion_t c;
  uint64_t t_start = hsad_now_ns();
  for (uint32_t r = 0; r < repeat; r++) {
    uint64_t t0 = hsad_now_ns();
    CHECK(hsad_kernel_dispatch(q, k, &l, t0 + 10000000000ull, r + 1 == repeat ? &c : NULL, NULL));
    submit[r] = hsad_now_ns() - t0;
  }
  uint64_t t_submitted = hsad_now_ns();
  CHECK(hsad_completion_wait(&c, t_submitted + 120000000000ull));
  uint64_t t_done = hsad_now_ns();
  uint64_t gs = 0, ge = 0;
  bool have_gpu_time = hsad_completion_times(&c, &gs, &ge) == HSAD_OK;
  qsort(submit, repeat, sizeof *submit, cmp_u64);
  uint32_t flat = block[0] * block[1] * block[2];
  hsad_occupancy_t occ;
  bool have_occ = hsad_kernel_occupancy(kd->codeobj_kernel, NULL, flat, dyn_lds, &occ) == HSAD_OK;

  /* outputs */
  for (uint32_t i = 0; i < nargs; i++) {
    arg_t *a = &args[i];
    if (a->kind != A_BUF) continue;
    if (a->out_file) {
      FILE *f = fopen(a->out_file, "wb");
      if (!f || fwrite(a->ptr, tsize[a->type], a->count, f) != a->count)
        FAIL("%s: %s\n", a->out_file, strerror(errno));
      fclose(f);
    }
    if (a->txt_file) {
      FILE *f = fopen(a->txt_file, "w");
      if (!f) FAIL("%s: %s\n", a->txt_file, strerror(errno));
      char b[48];
      for (uint64_t e = 0; e < a->count; e++) {
        if (is_float(a->type)) fprintf(f, "%.9g\n", elem_get(a, e));
        else fprintf(f, "%s\n", fmt_i128(b, elem_geti(a, e)));
      }
      fclose(f);
    }
  }
  if (json) {
    printf("{\"device\": {\"index\": %u, \"name\": \"%s\", \"isa\": \"%s\", \"compute_units\": %u, "
           "\"emulated\": %s}, "
           "\"kernel\": {\"name\": \"%s\", \"code_object_version\": %u, \"vgpr\": %u, \"sgpr\": %u, "
           "\"agpr\": %u, \"vgpr_spill\": %u, \"sgpr_spill\": %u, \"private_segment_bytes\": %u, "
           "\"group_segment_bytes\": %u, \"kernarg_segment_bytes\": %u, "
           "\"max_flat_workgroup_size\": %u", di->index, di->name, di->isa_name, di->compute_units,
           hsad_rocr_is_emulated() ? "true" : "false", ki->name, hsad_codeobj_info(hsad_program_codeobj(prog))->code_object_version,
           ki->vgpr_count, ki->sgpr_count, ki->agpr_count, ki->vgpr_spill_count,
           ki->sgpr_spill_count, ki->private_segment_fixed_size, ki->group_segment_fixed_size,
           ki->kernarg_segment_size, kd->max_flat_workgroup_size);
    if (have_occ)
      printf(", \"occupancy\": {\"waves_per_simd\": %u, \"workgroups_per_cu\": %u, "
             "\"wgp_mode\": %s, \"limiter\": \"%s\"}",
             occ.waves_per_simd, occ.workgroups_per_cu, occ.wgp_mode ? "true" : "false",
             hsad_occ_limiter_name(occ.limiter));
    printf("}, \"dispatch\": {\"dims\": %u, \"grid\": [%u, %u, %u], \"block\": [%u, %u, %u], "
           "\"dynamic_lds\": %u, \"repeat\": %u}, \"timings_ns\": {\"compile\": %llu, "
           "\"submit_min\": %llu, \"submit_median\": %llu, \"submit_max\": %llu, "
           "\"submit_to_complete\": %llu, \"end_to_end\": %llu",
           dims, grid[0], grid[1], grid[2], block[0], block[1], block[2], dyn_lds, repeat,
           (unsigned long long)t_compile, (unsigned long long)submit[0],
           (unsigned long long)submit[repeat / 2], (unsigned long long)submit[repeat - 1],
           (unsigned long long)(t_done - t_submitted), (unsigned long long)(t_done - t_start));
    if (have_gpu_time) printf(", \"last_dispatch_gpu\": %llu", (unsigned long long)(ge - gs));
    printf("}, \"buffers\": [");
    bool first = true;
    for (uint32_t i = 0; i < nargs; i++) {
      arg_t *a = &args[i];
      if (a->kind != A_BUF) continue;
      summary_t sm;
      char b[48];
      summarize(a, &sm);
      printf("%s{\"arg\": %u, \"type\": \"%s\", \"count\": %llu, \"sum\": ", first ? "" : ", ", i,
             tnames[a->type], (unsigned long long)a->count);
      if (!is_float(a->type)) fputs(fmt_i128(b, sm.isum), stdout);
      else print_json_double(sm.finite ? sm.fsum : NAN); /* over the finite elements, else null */
      if (is_float(a->type))
        printf(", \"nan\": %llu, \"inf\": %llu", (unsigned long long)sm.nan,
               (unsigned long long)sm.inf);
      printf(", \"first\": [");
      for (uint64_t e = 0; e < a->count && e < 8; e++) {
        if (e) fputs(", ", stdout);
        print_elem(a, e, true);
      }
      printf("]}");
      first = false;
    }
    printf("]}\n");
  } else {
    printf("device %u: %s (%s), %u CUs%s\n", di->index, di->name, di->isa_name, di->compute_units,
           hsad_rocr_is_emulated() ? ", kfd-emu (kernels ran as host twins; timings are host-side "
                                     "costs, not GPU performance)" : "");
    if (t_compile) printf("compiled %s with comgr in %.1f ms\n", input, t_compile / 1e6);
    printf("kernel %s: code object v%u, %u VGPR, %u SGPR, %u AGPR, spills %u/%u (VGPR/SGPR), "
           "scratch %u B/work-item, LDS %u B fixed + %u dynamic, kernarg %u B\n",
           ki->name, hsad_codeobj_info(hsad_program_codeobj(prog))->code_object_version,
           ki->vgpr_count, ki->sgpr_count, ki->agpr_count, ki->vgpr_spill_count,
           ki->sgpr_spill_count, ki->private_segment_fixed_size, ki->group_segment_fixed_size,
           dyn_lds, ki->kernarg_segment_size);
    if (have_occ)
      printf("occupancy: %u waves/SIMD, %u workgroups/%s (limited by %s)\n", occ.waves_per_simd,
             occ.workgroups_per_cu, occ.wgp_mode ? "WGP" : "CU",
             hsad_occ_limiter_name(occ.limiter));
    printf("dispatch: %uD grid %ux%ux%u, block %ux%ux%u, %u time(s) in order\n", dims, grid[0],
           grid[1], grid[2], block[0], block[1], block[2], repeat);
    printf("timings: submit median %llu ns (min %llu, max %llu); last submit -> complete %.1f us; "
           "end to end %.1f us", (unsigned long long)submit[repeat / 2],
           (unsigned long long)submit[0], (unsigned long long)submit[repeat - 1],
           (t_done - t_submitted) / 1e3, (t_done - t_start) / 1e3);
    if (have_gpu_time) printf("; last dispatch on the device %.1f us", (ge - gs) / 1e3);
    printf("\n");
    for (uint32_t i = 0; i < nargs; i++) {
      arg_t *a = &args[i];
      if (a->kind != A_BUF || !(a->out || a->out_file || a->txt_file)) continue;
      summary_t sm;
      char b1[48], b2[48], b3[48];
      summarize(a, &sm);
      printf("arg %u (%s x %llu): ", i, tnames[a->type], (unsigned long long)a->count);
      if (!is_float(a->type))
        printf("sum %s, min %s, max %s", fmt_i128(b1, sm.isum), fmt_i128(b2, sm.imin),
               fmt_i128(b3, sm.imax));
      else if (sm.finite)
        printf("sum %.9g, min %.9g, max %.9g", sm.fsum, sm.fmin, sm.fmax);
      else
        printf("sum n/a, min n/a, max n/a");
      if (sm.nan || sm.inf)
        printf(" (%s%llu NaN, %llu inf)", sm.finite ? "finite elements only; " : "",
               (unsigned long long)sm.nan, (unsigned long long)sm.inf);
      printf(", first:");
      for (uint64_t e = 0; e < a->count && e < 8; e++) {
        putchar(' ');
        print_elem(a, e, false);
      }
      printf("\n");
      if (a->out_file) printf("  written to %s\n", a->out_file);
      if (a->txt_file) printf("  written to %s (text)\n", a->txt_file);
    }
  }
  rc = 0;
out:
  for (uint32_t i = 0; i < nargs; i++)
    if (args[i].ptr) hsad_buffer_free(args[i].ptr);
  if (q) hsad_queue_destroy(q);
  if (prog) hsad_program_destroy(prog);
  if (rt) hsad_runtime_close(rt);
  free(submit);
  free(kargs);
  free(log);
  free(args);
  free(defs);
  return rc;
}
