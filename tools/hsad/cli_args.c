/* cli_args.c - kernel arguments shared by hsad run and hsad graph (hsad_cli_args.h): element
 * types, scalar parsing, and the check against a kernel's metadata. */
#include "tools/hsad/hsad_cli_args.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tools/hsad/hsad_cli.h"

const char *const cli_tnames[CLI_NTYPES] = {"i8",  "u8",  "i16", "u16", "i32",
                                            "u32", "i64", "u64", "f32", "f64"};
const uint32_t cli_tsize[CLI_NTYPES] = {1, 1, 2, 2, 4, 4, 8, 8, 4, 8};

int cli_parse_type(const char *s, size_t n, etype_t *out) {
  for (int i = 0; i < 10; i++)
    if (strlen(cli_tnames[i]) == n && !strncmp(s, cli_tnames[i], n)) {
      *out = (etype_t)i;
      return 0;
    }
  return -1;
}

/* Decimal, or hexadecimal after 0x/0X; never octal ("010" is ten, as a user reads it). */
static int cli_base(const char *p) { return p[0] == '0' && (p[1] == 'x' || p[1] == 'X') ? 16 : 10; }

int cli_parse_uint(const char *v, uint64_t max, uint64_t *out) {
  const char *p = v;
  while (*p == ' ' || *p == '\t') p++;
  if (*p == '-' || *p == '+' || *p < '0' || *p > '9') return -1;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(p, &end, cli_base(p));
  if (*end || errno || x > max) return -1;
  *out = x;
  return 0;
}

int cli_parse_int(const char *v, int64_t min, int64_t max, int64_t *out) {
  char *end;
  errno = 0;
  long long x = strtoll(v, &end, cli_base(v[0] == '-' || v[0] == '+' ? v + 1 : v));
  if (end == v || *end || errno || x < min || x > max) return -1;
  *out = x;
  return 0;
}

static const int64_t tmin[] = {INT8_MIN, 0, INT16_MIN, 0, INT32_MIN, 0, INT64_MIN, 0, 0, 0};
static const uint64_t tmax[] = {INT8_MAX, UINT8_MAX, INT16_MAX, UINT16_MAX, INT32_MAX,
                                UINT32_MAX, INT64_MAX, UINT64_MAX, 0, 0};

/* A value of type t into out (little-endian, cli_tsize[t] bytes). On error, why says what. */
int cli_parse_scalar(etype_t t, const char *v, uint8_t out[8], char *why, size_t whyn) {
  char *end;
  memset(out, 0, 8);
  if (cli_is_float(t)) {
    errno = 0;
    double d = t == T_F32 ? strtof(v, &end) : strtod(v, &end);
    if (end == v || *end) {
      snprintf(why, whyn, "'%s' is not a %s number", v, cli_tnames[t]);
      return -1;
    }
    if (errno == ERANGE && isinf(d)) {
      snprintf(why, whyn, "'%s' is out of range for %s (max %g)", v, cli_tnames[t],
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
  if (cli_is_signed(t)) {
    int64_t x;
    if (cli_parse_int(v, tmin[t], (int64_t)tmax[t], &x)) {
      snprintf(why, whyn, "'%s' is not an integer from %lld to %lld (%s)", v, (long long)tmin[t],
               (long long)tmax[t], cli_tnames[t]);
      return -1;
    }
    memcpy(out, &x, cli_tsize[t]);
    return 0;
  }
  uint64_t x;
  if (cli_parse_uint(v, tmax[t], &x)) {
    snprintf(why, whyn, "'%s' is not an integer from 0 to %llu (%s)", v,
             (unsigned long long)tmax[t], cli_tnames[t]);
    return -1;
  }
  memcpy(out, &x, cli_tsize[t]);
  return 0;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* hex:BYTES[*N]: pairs of hex digits in memory order ('_' and ' ' may separate them), the
 * whole repeated N times. */
int cli_parse_hex(const char *h, arg_t *a, char *why, size_t whyn) {
  a->kind = A_BYTES;
  const char *star = strchr(h, '*');
  size_t len = star ? (size_t)(star - h) : strlen(h);
  uint64_t rep = 1;
  if (star && (cli_parse_uint(star + 1, BYTES_MAX, &rep) || !rep)) {
    snprintf(why, whyn, "hex:BYTES*N: N '%s' is not an integer from 1 to %u", star + 1, BYTES_MAX);
    return -1;
  }
  uint8_t one[4096];
  size_t n = 0;
  for (size_t i = 0; i < len;) {
    if (h[i] == '_' || h[i] == ' ') {
      i++;
      continue;
    }
    int hi = hexval((unsigned char)h[i]), lo = i + 1 < len ? hexval((unsigned char)h[i + 1]) : -1;
    if (hi < 0 || lo < 0) {
      snprintf(why, whyn, "hex:BYTES: '%.*s' is not pairs of hex digits (one pair per byte, in "
               "memory order)", (int)len, h);
      return -1;
    }
    if (n == sizeof one) {
      snprintf(why, whyn, "hex:BYTES: more than %zu bytes before *N", sizeof one);
      return -1;
    }
    one[n++] = (uint8_t)(hi << 4 | lo);
    i += 2;
  }
  if (!n) {
    snprintf(why, whyn, "hex:BYTES: no bytes given");
    return -1;
  }
  if (n * rep > BYTES_MAX) {
    snprintf(why, whyn, "hex:BYTES*N: %zu x %llu bytes exceed %u", n, (unsigned long long)rep,
             BYTES_MAX);
    return -1;
  }
  a->nbytes = (uint32_t)(n * rep);
  a->bytes = malloc(a->nbytes);
  if (!a->bytes) {
    snprintf(why, whyn, "out of memory");
    return -1;
  }
  for (uint64_t r = 0; r < rep; r++) memcpy(a->bytes + r * n, one, n);
  return 0;
}

/* ---- arguments against the metadata ------------------------------------------------------ */

/* The classifications are codeobj/'s (hsad_codeobj_kernarg.h), shared with the library's own
 * type check of typed values: hsad_type_name_classify for .type_name, hsad_cxx_param_types and
 * hsad_cxx_type_class for the types of a C++ (HIP) kernel's mangled name. */
typedef enum { TN_UNKNOWN, TN_SCALAR, TN_RAW } tn_class_t;
_Static_assert((int)TN_UNKNOWN == (int)HSAD_TYPE_NAME_UNKNOWN &&
                   (int)TN_SCALAR == (int)HSAD_TYPE_NAME_SCALAR &&
                   (int)TN_RAW == (int)HSAD_TYPE_NAME_RAW, "tn_class_t is hsad_type_name_class_t");
_Static_assert(HSAD_KARG_TYPE_I8 == T_I8 + 1 && HSAD_KARG_TYPE_F64 == T_F64 + 1,
               "hsad_karg_type_t is etype_t + 1");

/* A by-value argument's .type_name: a scalar or OpenCL vector of a known type (*out_type,
 * *out_width), a struct/union/half that only raw bytes can give (TN_RAW), or a name not known
 * (a typedef: checked by size only). */
static tn_class_t classify_type(const char *tn, etype_t *out_type, uint32_t *out_width) {
  hsad_karg_type_t t;
  tn_class_t c = (tn_class_t)hsad_type_name_classify(tn, &t, out_width);
  if (c == TN_SCALAR) *out_type = (etype_t)(t - 1);
  return c;
}

#define CXX_TYPE_MAX HSAD_CXX_TYPE_MAX
#define cxx_param_types hsad_cxx_param_types
#define cxx_type_class hsad_cxx_type_class

#ifndef HSAD_NO_AMD /* the AMD checks read code-object metadata (codeobj/) */
/* "argument 3 ('n')" (the name when the metadata has one) */
static const char *arg_label(char *b, size_t n, uint32_t index, const hsad_kernel_arg_t *ka) {
  if (ka->name[0]) snprintf(b, n, "argument %u ('%s')", index, ka->name);
  else snprintf(b, n, "argument %u", index);
  return b;
}

/* The kernel's explicit signature: "(float a, float* x, float* y, uint n)"; the types of a
 * C++ kernel from its mangled name (cxx, one per explicit argument) when the metadata has none. */
static void signature(const hsad_kernel_info_t *ki, char (*cxx)[CXX_TYPE_MAX], char *b,
                      size_t n) {
  size_t k = (size_t)snprintf(b, n, "(");
  bool first = true;
  for (uint32_t j = 0, e = 0; j < ki->arg_count && k < n; j++) {
    const hsad_kernel_arg_t *ka = &ki->args[j];
    if (hsad_value_kind_is_hidden(ka->value_kind)) continue;
    const char *tn = ka->type_name[0] || !cxx ? ka->type_name : cxx[e];
    e++;
    if (tn[0])
      k += (size_t)snprintf(b + k, n - k, "%s%s%s%s", first ? "" : ", ", tn,
                            ka->name[0] ? " " : "", ka->name);
    else
      k += (size_t)snprintf(b + k, n - k, "%s%s %u bytes%s%s", first ? "" : ", ",
                            hsad_value_kind_name(ka->value_kind), ka->size,
                            ka->name[0] ? " " : "", ka->name);
    first = false;
  }
  if (k < n) snprintf(b + k, n - k, ")");
}

#endif

/* "a" or "an" before a type name as it is read ("an int", "an unsigned int", "a uint"). */
static const char *article(const char *tn) {
  return strchr("aeioAEIO", tn[0]) || !strncmp(tn, "unsigned", 8) ? "an" : "a";
}

#ifndef HSAD_NO_AMD
/* What check_arg could not check: a scalar whose type neither the metadata nor the mangled name
 * gives (checked by size only). */
typedef enum { CHECKED_TYPE, CHECKED_SIZE_ONLY } checked_t;

/* check_arg for a global buffer argument (label lb): a buffer, of elements of the pointee's
 * size and kind when cls names one ("float*": f32; integers of either signedness). */
static int check_buffer_arg(const arg_t *a, const char *lb, const char *tn, const char *cls,
                            const char *kname, bool g, char *why, size_t whyn) {
  if (a->kind != A_BUF) {
    snprintf(why, whyn, "%s of kernel '%s' is a global buffer%s%s%s: give %s", lb, kname,
             tn[0] ? " (" : "", tn, tn[0] ? ")" : "",
             g ? "the name of a buffer" : "buf:TYPE:COUNT[:INIT]");
    return -1;
  }
  /* the elements against the pointee ("float*": f32); integers of either signedness */
  size_t cl = strlen(cls);
  etype_t t;
  uint32_t width;
  char pointee[CXX_TYPE_MAX];
  if (cl > 1 && cl < sizeof pointee && cls[cl - 1] == '*') {
    memcpy(pointee, cls, cl - 1);
    pointee[cl - 1] = '\0';
    if (classify_type(pointee, &t, &width) == TN_SCALAR &&
        (cli_tsize[t] != cli_tsize[a->type] || cli_is_float(t) != cli_is_float(a->type))) {
      if (g)
        snprintf(why, whyn, "%s of kernel '%s' is %s %s (%u-byte %s elements): give a buffer "
                 "of type \"%s\", not buffer %s of type \"%s\"", lb, kname, article(tn), tn,
                 cli_tsize[t], cli_is_float(t) ? "floating-point" : "integer", cli_tnames[t],
                 a->spec, cli_tnames[a->type]);
      else
        snprintf(why, whyn, "%s of kernel '%s' is %s %s (%u-byte %s elements): give "
                 "buf:%s:COUNT[:INIT], not buf:%s", lb, kname, article(tn), tn,
                 cli_tsize[t], cli_is_float(t) ? "floating-point" : "integer", cli_tnames[t],
                 cli_tnames[a->type]);
      return -1;
    }
  }
  return 0;
}

/* check_arg for a scalar given for by-value argument ka (label lb): its type and vector width
 * when cls names one, else its size only (*checked); a 3-vector padded to 4 elements. */
static int check_scalar_arg(arg_t *a, const hsad_kernel_arg_t *ka, const char *lb, const char *tn,
                            const char *cls, const char *kname, bool g, char *why, size_t whyn,
                            checked_t *checked) {
  hsad_value_kind_t vk = ka->value_kind;
  etype_t t;
  uint32_t width;
  tn_class_t c = vk == HSAD_VK_BY_VALUE ? classify_type(cls, &t, &width) : TN_UNKNOWN;
  if (c == TN_RAW) {
    snprintf(why, whyn, "%s of kernel '%s' is %u bytes of %s: give its bytes with %s", lb,
             kname, ka->size, tn, g ? "{\"hex\": \"BYTES[*N]\"}" : "hex:BYTES[*N] or bin:FILE");
    return -1;
  }
  if (c == TN_SCALAR && (t != a->type || width != a->nvals)) {
    if (width == 1 && g)
      snprintf(why, whyn, "%s of kernel '%s' is %s %s: give {\"%s\": VALUE}", lb, kname,
               article(tn), tn, cli_tnames[t]);
    else if (width == 1)
      snprintf(why, whyn, "%s of kernel '%s' is %s %s: give %s:VALUE", lb, kname,
               article(tn), tn, cli_tnames[t]);
    else if (g)
      snprintf(why, whyn, "%s of kernel '%s' is %s %s: give %u values, {\"%s\": [V0, V1, ...]} "
               "(or {\"hex\": \"BYTES\"})", lb, kname, article(tn), tn, width, cli_tnames[t]);
    else
      snprintf(why, whyn, "%s of kernel '%s' is %s %s: give %u comma-separated values, "
               "%s:V0,V1,... (or hex:BYTES)", lb, kname, article(tn), tn, width,
               cli_tnames[t]);
    return -1;
  }
  uint32_t got = a->nvals * cli_tsize[a->type];
  if (c == TN_SCALAR && width == 3) got = 4 * cli_tsize[a->type]; /* 3-vectors are 4 wide */
  if (got != ka->size) {
    snprintf(why, whyn, "%s of kernel '%s' is %u bytes, got %u (%u x %s)", lb, kname, ka->size,
             got, a->nvals, cli_tnames[a->type]);
    return -1;
  }
  if (c == TN_SCALAR && width == 3) memset(a->value + 3 * cli_tsize[a->type], 0, cli_tsize[a->type]);
  if (c == TN_UNKNOWN) *checked = CHECKED_SIZE_ONLY;
  return 0;
}

/* Checks given argument e (a) against explicit argument ka of kernel kname; on a mismatch
 * writes the message to why and returns -1. `tn` is the argument's type as shown (.type_name,
 * or the demangled C++ parameter type), `cls` the same type as classify_type reads it (""
 * when unknown). The hints are in syn's syntax. Fills the scalar's bytes for 3-element vectors
 * (padded to 4). *checked says whether a scalar's type could be checked or only its size. */
static int check_arg(arg_t *a, uint32_t e, const hsad_kernel_arg_t *ka, const char *tn,
                     const char *cls, const char *kname, cli_syntax_t syn, char *why,
                     size_t whyn, checked_t *checked) {
  bool g = syn == CLI_SYNTAX_GRAPH;
  char lb[600];
  arg_label(lb, sizeof lb, e, ka);
  *checked = CHECKED_TYPE;
  hsad_value_kind_t vk = ka->value_kind;
  if (vk == HSAD_VK_DYNAMIC_SHARED_POINTER) {
    if (a->kind == A_LDS) return 0;
    snprintf(why, whyn, "%s of kernel '%s' is a __local pointer: use %s (the "
             "dynamic LDS size), not a %s", lb, kname, g ? "{\"lds\": BYTES}" : "--arg lds:BYTES",
             a->kind == A_BUF ? "buffer" : a->kind == A_SCALAR ? "scalar" : "byte string");
    return -1;
  }
  if (a->kind == A_LDS) {
    snprintf(why, whyn, "%s of kernel '%s' is %s, not a __local pointer", lb, kname,
             hsad_value_kind_name(vk));
    return -1;
  }
  if (vk == HSAD_VK_GLOBAL_BUFFER) return check_buffer_arg(a, lb, tn, cls, kname, g, why, whyn);
  if (a->kind == A_BUF) {
    snprintf(why, whyn, "%s of kernel '%s' is a %s %s (%u bytes), not a buffer: give its value "
             "(%s)", lb, kname, vk == HSAD_VK_BY_VALUE ? "by-value" : hsad_value_kind_name(vk),
             tn[0] ? tn : "argument", ka->size,
             g ? "{\"TYPE\": VALUE} or {\"hex\": \"BYTES\"}" : "TYPE:VALUE, hex:BYTES or bin:FILE");
    return -1;
  }
  if (a->kind == A_BYTES) {
    if (a->nbytes == ka->size) return 0;
    snprintf(why, whyn, "%s of kernel '%s' is %u bytes, got %u bytes", lb, kname, ka->size,
             a->nbytes);
    return -1;
  }
  return check_scalar_arg(a, ka, lb, tn, cls, kname, g, why, whyn, checked);
}

int cli_check_args(const hsad_device_kernel_desc_t *kd, arg_t *args, uint32_t nargs,
                   cli_syntax_t syn, void (*warn)(void *ctx, const char *msg), void *ctx,
                   uint32_t *out_bad, char *why, size_t whyn) {
  const hsad_kernel_info_t *ki = hsad_kernel_info(kd->codeobj_kernel);
  const char *kname = kd->name;
  uint32_t nexplicit = hsad_kernel_kernarg_plan(kd->codeobj_kernel)->explicit_count;
  /* A C++ (HIP) kernel's metadata has no .type_name: its mangled name has the types. */
  char(*cxx)[CXX_TYPE_MAX] = NULL;
  int ncxx = -1, rc = 0;
  if (!strncmp(kname, "_Z", 2) && (cxx = calloc(nexplicit + 1, sizeof *cxx)))
    ncxx = cxx_param_types(kname, cxx, (int)nexplicit);
  if (ncxx >= 0 && (uint32_t)ncxx != nexplicit) ncxx = -1; /* not one type per argument */
  if (nargs != nexplicit) {
    char sig[4096];
    signature(ki, ncxx >= 0 ? cxx : NULL, sig, sizeof sig);
    snprintf(why, whyn, "kernel '%s' takes %u argument(s) %s, got %u%s", kname, nexplicit, sig,
             nargs, syn == CLI_SYNTAX_GRAPH ? " in \"args\"" : " --arg");
    *out_bad = nargs;
    free(cxx);
    return -1;
  }
  for (uint32_t j = 0, e = 0; j < ki->arg_count && e < nargs; j++) {
    const hsad_kernel_arg_t *ka = &ki->args[j];
    if (hsad_value_kind_is_hidden(ka->value_kind)) continue;
    const char *tn = ka->type_name;
    char cls[CXX_TYPE_MAX];
    snprintf(cls, sizeof cls, "%s", tn);
    if (!tn[0] && ncxx >= 0) {
      tn = cxx[e];
      cxx_type_class(tn, cls, sizeof cls);
    }
    checked_t checked;
    if (check_arg(&args[e], e, ka, tn, cls, kname, syn, why, whyn, &checked)) {
      *out_bad = e;
      rc = -1;
      break;
    }
    if (checked == CHECKED_SIZE_ONLY && warn) {
      char lb[600], w[2048];
      arg_label(lb, sizeof lb, e, ka);
      if (!tn[0])
        snprintf(w, sizeof w, "%s of kernel '%s' has no type in the code object (no "
                 ".type_name, and %s): only its size was checked (%u bytes, given %s)", lb,
                 kname, strncmp(kname, "_Z", 2) ? "an unmangled name, e.g. extern \"C\", "
                 "carries no parameter types" : "its mangled name does not give one type per "
                 "argument", ka->size, args[e].spec);
      else
        snprintf(w, sizeof w, "%s of kernel '%s' is %s %s, a type %s cannot check "
                 "a scalar against: only its size was checked (%u bytes, given %s)", lb, kname,
                 article(tn), tn, syn == CLI_SYNTAX_GRAPH ? "hsad graph" : "hsad run",
                 ka->size, args[e].spec);
      warn(ctx, w);
    }
    e++;
  }
  free(cxx);
  return rc;
}

const char *cli_arg_label_of(const hsad_device_kernel_desc_t *kd, uint32_t e, char *b, size_t n) {
  const hsad_kernel_info_t *ki = hsad_kernel_info(kd->codeobj_kernel);
  char lb[600];
  snprintf(lb, sizeof lb, "argument %u", e);
  for (uint32_t j = 0, k = 0; j < ki->arg_count; j++) {
    if (hsad_value_kind_is_hidden(ki->args[j].value_kind)) continue;
    if (k++ == e) {
      arg_label(lb, sizeof lb, e, &ki->args[j]);
      break;
    }
  }
  snprintf(b, n, "%s of kernel '%s'", lb, kd->name);
  return b;
}
#endif /* HSAD_NO_AMD */

/* ---- NVIDIA kernels: sizes, and the types of a C++ kernel's mangled name ---------------- */

/* cli_check_nv_args for argument e (a) against a parameter of `size` bytes whose C++ type is
 * tn ("" when unknown); 0, with *size_only set when a scalar's type was unknown, or -1 with
 * the message in why. */
static int nv_check_arg(const arg_t *a, uint32_t e, const char *tn, uint32_t size,
                        const char *kname, bool *size_only, char *why, size_t whyn) {
  char cls[CXX_TYPE_MAX] = "";
  if (tn[0]) cxx_type_class(tn, cls, sizeof cls);
  size_t cl = strlen(cls);
  bool ptr = cl > 1 && cls[cl - 1] == '*';
  int rc = -1;
  if (a->kind == A_BUF) {
    etype_t t;
    uint32_t width;
    char pointee[CXX_TYPE_MAX];
    if (tn[0] && !ptr && cl)
      snprintf(why, whyn, "argument %u of kernel '%s' is %s %s (%u bytes), not a pointer: give "
               "its value (TYPE:VALUE, hex:BYTES or bin:FILE)", e, kname, article(tn), tn, size);
    else if (size != 8)
      snprintf(why, whyn, "argument %u of kernel '%s' is a %u-byte parameter: a buffer is "
               "passed as an 8-byte pointer; give its value (TYPE:VALUE, hex:BYTES or "
               "bin:FILE)", e, kname, size);
    else if (ptr && cl - 1 < sizeof pointee &&
             (memcpy(pointee, cls, cl - 1), pointee[cl - 1] = '\0',
              classify_type(pointee, &t, &width) == TN_SCALAR) &&
             (cli_tsize[t] != cli_tsize[a->type] || cli_is_float(t) != cli_is_float(a->type)))
      snprintf(why, whyn, "argument %u of kernel '%s' is %s %s (%u-byte %s elements): give "
               "buf:%s:COUNT[:INIT], not buf:%s", e, kname, article(tn), tn, cli_tsize[t],
               cli_is_float(t) ? "floating-point" : "integer", cli_tnames[t],
               cli_tnames[a->type]);
    else
      rc = 0;
  } else if (ptr) {
    snprintf(why, whyn, "argument %u of kernel '%s' is %s %s: give buf:TYPE:COUNT[:INIT]", e,
             kname, article(tn), tn);
  } else if (a->kind == A_BYTES) {
    if (a->nbytes == size) rc = 0;
    else
      snprintf(why, whyn, "argument %u of kernel '%s' is %u bytes, got %u bytes", e, kname,
               size, a->nbytes);
  } else { /* A_SCALAR: CUDA's vectors are not padded (a float3 is 12 bytes) */
    etype_t t;
    uint32_t width;
    tn_class_t c = cls[0] ? classify_type(cls, &t, &width) : TN_UNKNOWN;
    uint32_t got = a->nvals * cli_tsize[a->type];
    if (c == TN_RAW)
      snprintf(why, whyn, "argument %u of kernel '%s' is %u bytes of %s: give its bytes with "
               "hex:BYTES[*N] or bin:FILE", e, kname, size, tn);
    else if (c == TN_SCALAR && (t != a->type || width != a->nvals) && width == 1)
      snprintf(why, whyn, "argument %u of kernel '%s' is %s %s: give %s:VALUE", e, kname,
               article(tn), tn, cli_tnames[t]);
    else if (c == TN_SCALAR && (t != a->type || width != a->nvals))
      snprintf(why, whyn, "argument %u of kernel '%s' is %s %s: give %u comma-separated "
               "values, %s:V0,V1,... (or hex:BYTES)", e, kname, article(tn), tn, width,
               cli_tnames[t]);
    else if (got != size)
      snprintf(why, whyn, "argument %u of kernel '%s' is %u bytes, got %u (%u x %s)", e, kname,
               size, got, a->nvals, cli_tnames[a->type]);
    else {
      rc = 0;
      *size_only = c != TN_SCALAR;
    }
  }
  return rc;
}

int cli_check_nv_args(const char *kname, uint32_t nparams, const uint32_t *sizes, arg_t *args,
                      uint32_t nargs, void (*warn)(void *ctx, const char *msg), void *ctx,
                      uint32_t *out_bad, char *why, size_t whyn) {
  char(*cxx)[CXX_TYPE_MAX] = NULL;
  int ncxx = -1, rc = 0;
  if (!strncmp(kname, "_Z", 2) && (cxx = calloc(nparams + 1, sizeof *cxx)))
    ncxx = cxx_param_types(kname, cxx, (int)nparams);
  if (ncxx >= 0 && (uint32_t)ncxx != nparams) ncxx = -1; /* not one type per parameter */
  for (uint32_t e = 0; e < nargs; e++)
    if (args[e].kind == A_LDS) {
      snprintf(why, whyn, "argument %u of kernel '%s': lds:BYTES (dynamic shared memory, extern "
               "__shared__) is not a parameter; give it after the parameters", e, kname);
      *out_bad = e;
      free(cxx);
      return -1;
    }
  if (nargs != nparams) {
    char sig[4096];
    size_t k = (size_t)snprintf(sig, sizeof sig, "(");
    for (uint32_t j = 0; j < nparams && k < sizeof sig; j++)
      k += (size_t)snprintf(sig + k, sizeof sig - k, "%s%s%s%u bytes", j ? ", " : "",
                            ncxx >= 0 ? cxx[j] : "", ncxx >= 0 ? " " : "", sizes[j]);
    if (k < sizeof sig) snprintf(sig + k, sizeof sig - k, ")");
    snprintf(why, whyn, "kernel '%s' takes %u parameter(s) %s, got %u --arg (lds:BYTES, its "
             "dynamic shared memory, not counted)", kname, nparams, sig, nargs);
    *out_bad = nargs;
    free(cxx);
    return -1;
  }
  uint32_t size_only = 0;
  for (uint32_t e = 0; e < nargs && !rc; e++) {
    bool unknown = false;
    *out_bad = e;
    rc = nv_check_arg(&args[e], e, ncxx >= 0 ? cxx[e] : "", sizes[e], kname, &unknown, why,
                      whyn);
    size_only += unknown;
  }
  if (!rc && size_only && warn) {
    char w[1024];
    snprintf(w, sizeof w, "kernel '%s': %u scalar argument(s) checked by size only (%s)", kname,
             size_only, ncxx >= 0 ? "types the check does not know" : "an unmangled name, e.g. "
             "extern \"C\", carries no parameter types, and CUDA code objects keep sizes only");
    warn(ctx, w);
  }
  free(cxx);
  return rc;
}

/* ---- hsad run's --arg SPEC, and the kernel argument of a checked arg_t ------------------- */

#define TYPE_LIST "i8 u8 i16 u16 i32 u32 i64 u64 f32 f64"

/* bin:FILE: the bytes of a regular file. */
static int read_bin(const char *path, arg_t *a, char *why, size_t whyn) {
  a->kind = A_BYTES;
  struct stat st;
  if (stat(path, &st)) {
    snprintf(why, whyn, "bin:%s: %s", path, strerror(errno));
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(why, whyn, "bin:%s: not a regular file%s", path, S_ISDIR(st.st_mode) ?
             " (a directory)" : "");
    return -1;
  }
  if (st.st_size == 0 || st.st_size > BYTES_MAX) {
    snprintf(why, whyn, "bin:%s: %lld bytes; expected 1 to %u (the argument's size)", path,
             (long long)st.st_size, BYTES_MAX);
    return -1;
  }
  a->nbytes = (uint32_t)st.st_size;
  a->bytes = malloc(a->nbytes);
  FILE *f = a->bytes ? fopen(path, "rb") : NULL;
  if (!f || fread(a->bytes, 1, a->nbytes, f) != a->nbytes) {
    snprintf(why, whyn, "bin:%s: %s", path, f ? "short read" : strerror(errno));
    if (f) fclose(f);
    return -1;
  }
  fclose(f);
  return 0;
}

/* lds:BYTES (after "lds:"). */
static int parse_lds_spec(const char *v, arg_t *a, char *why, size_t whyn) {
  uint64_t n;
  a->kind = A_LDS;
  if (cli_parse_uint(v, UINT32_MAX, &n)) {
    snprintf(why, whyn, "BYTES '%s' is not an integer from 0 to %u", v, UINT32_MAX);
    return -1;
  }
  a->lds = (uint32_t)n;
  return 0;
}

/* TYPE:VALUE or TYPE:V0,V1,... (a vector). */
static int parse_scalar_spec(const char *spec, arg_t *a, char *why, size_t whyn) {
  const char *colon = strchr(spec, ':');
  if (!colon) {
    snprintf(why, whyn, "no ':' in the SPEC: give buf:TYPE:COUNT[:INIT][:out], TYPE:VALUE, "
             "hex:BYTES, bin:FILE or lds:BYTES (see hsad run --help)");
    return -1;
  }
  if (cli_parse_type(spec, (size_t)(colon - spec), &a->type)) {
    snprintf(why, whyn, "'%.*s' is neither a TYPE (%s) nor buf, hex, bin or lds",
             (int)(colon - spec), spec, TYPE_LIST);
    return -1;
  }
  a->kind = A_SCALAR;
  const char *v = colon + 1;
  do {
    char one[256];
    size_t len = strcspn(v, ",");
    if (a->nvals == VEC_MAX) {
      snprintf(why, whyn, "more than %u values (OpenCL vectors have at most 16)", VEC_MAX);
      return -1;
    }
    if (len >= sizeof one) len = sizeof one - 1;
    memcpy(one, v, len);
    one[len] = '\0';
    if (cli_parse_scalar(a->type, one, a->value + a->nvals * cli_tsize[a->type], why, whyn))
      return -1;
    a->nvals++;
    v += strcspn(v, ",");
  } while (*v++ == ',');
  return 0;
}

/* One option of buf:TYPE:COUNT[:OPTION]...: an INIT, out, out=FILE or txt=FILE. */
static int parse_buf_option(const char *tok, arg_t *a, char *why, size_t whyn) {
  uint64_t seed;
  bool is_init = !strcmp(tok, "zeros") || !strcmp(tok, "iota") || !strcmp(tok, "random") ||
                 !strncmp(tok, "random=", 7) || !strncmp(tok, "file=", 5) ||
                 !strncmp(tok, "const=", 6);
  /* a second INIT, out=FILE or txt=FILE: the last one silently won */
  if (is_init && a->init[0]) {
    snprintf(why, whyn, "'%s': a second INIT after '%s' (give one of zeros, iota, "
             "random[=SEED], const=V, file=PATH)", tok, a->init);
    return -1;
  }
  const char *const *file = !strncmp(tok, "out=", 4) ? &a->out_file
                            : !strncmp(tok, "txt=", 4) ? &a->txt_file : NULL;
  if (file && *file) {
    snprintf(why, whyn, "'%s': a second %.3s=FILE after '%.3s=%s'", tok, tok, tok, *file);
    return -1;
  }
  if (!strcmp(tok, "out")) a->out = true;
  else if (!strncmp(tok, "out=", 4)) a->out_file = strdup(tok + 4);
  else if (!strncmp(tok, "txt=", 4)) a->txt_file = strdup(tok + 4);
  else if (!strcmp(tok, "zeros") || !strcmp(tok, "iota") || !strcmp(tok, "random") ||
           !strncmp(tok, "file=", 5))
    snprintf(a->init, sizeof a->init, "%s", tok);
  else if (!strncmp(tok, "random=", 7)) {
    if (cli_parse_uint(tok + 7, UINT64_MAX, &seed)) {
      snprintf(why, whyn, "random=SEED: '%s' is not an integer from 0 to %llu", tok + 7,
               (unsigned long long)UINT64_MAX);
      return -1;
    }
    snprintf(a->init, sizeof a->init, "%s", tok);
  } else if (!strncmp(tok, "const=", 6)) {
    char w[256];
    if (cli_parse_scalar(a->type, tok + 6, a->value, w, sizeof w)) {
      snprintf(why, whyn, "const=V: %s", w);
      return -1;
    }
    snprintf(a->init, sizeof a->init, "%s", tok);
  } else {
    snprintf(why, whyn, "'%s' is not a buffer option (zeros, iota, random[=SEED], const=V, "
             "file=PATH, out, out=FILE, txt=FILE)", tok);
    return -1;
  }
  return 0;
}

/* buf:TYPE:COUNT[:OPTION]... (after "buf:"). */
static int parse_buf_spec(const char *v, arg_t *a, char *why, size_t whyn) {
  a->kind = A_BUF;
  char buf[1024];
  snprintf(buf, sizeof buf, "%s", v);
  char *save = NULL, *tok = strtok_r(buf, ":", &save);
  if (!tok || cli_parse_type(tok, strlen(tok), &a->type)) {
    snprintf(why, whyn, "buf:TYPE: '%s' is not a TYPE (%s)", tok ? tok : "", TYPE_LIST);
    return -1;
  }
  tok = strtok_r(NULL, ":", &save);
  uint64_t lim = CLI_BUF_MAX_BYTES / cli_tsize[a->type];
  if (SIZE_MAX / cli_tsize[a->type] < lim) lim = SIZE_MAX / cli_tsize[a->type];
  if (!tok || cli_parse_uint(tok, UINT64_MAX, &a->count) || !a->count) {
    snprintf(why, whyn, "COUNT '%s' is not a positive integer", tok ? tok : "");
    return -1;
  }
  if (a->count > lim) {
    snprintf(why, whyn, "COUNT %s x %u-byte %s exceeds the buffer limit of %llu bytes (%llu "
             "elements)", tok, cli_tsize[a->type], cli_tnames[a->type],
             (unsigned long long)CLI_BUF_MAX_BYTES, (unsigned long long)lim);
    return -1;
  }
  a->init[0] = '\0'; /* none given yet: zeros after the options */
  while ((tok = strtok_r(NULL, ":", &save)))
    if (parse_buf_option(tok, a, why, whyn)) return -1;
  if (!a->init[0]) snprintf(a->init, sizeof a->init, "zeros");
  return 0;
}

int cli_parse_arg_spec(const char *spec, arg_t *a, char *why, size_t whyn) {
  memset(a, 0, sizeof *a);
  a->spec = spec;
  if (!strncmp(spec, "lds:", 4)) return parse_lds_spec(spec + 4, a, why, whyn);
  if (!strncmp(spec, "hex:", 4)) return cli_parse_hex(spec + 4, a, why, whyn);
  if (!strncmp(spec, "bin:", 4)) return read_bin(spec + 4, a, why, whyn);
  if (!strncmp(spec, "buf:", 4)) return parse_buf_spec(spec + 4, a, why, whyn);
  return parse_scalar_spec(spec, a, why, whyn);
}

hsad_karg_t cli_arg_karg(const arg_t *a, bool pad_vec3) {
  switch (a->kind) {
  case A_BUF: return HSAD_KARG_PTR(a->ptr);
  case A_LDS: return HSAD_KARG_LDS_BYTES(a->lds);
  case A_BYTES:
    return (hsad_karg_t){.tag = HSAD_KARG_BYTES, .size = a->nbytes, .bytes = a->bytes};
  case A_SCALAR: break;
  }
  uint32_t width = a->nvals == 3 && pad_vec3 ? 4 : a->nvals;
  return (hsad_karg_t){.tag = HSAD_KARG_BYTES, .size = width * cli_tsize[a->type],
                       .bytes = a->value};
}

void cli_args_free(arg_t *args, uint32_t nargs) {
  for (uint32_t i = 0; i < nargs; i++) {
    free(args[i].bytes);
    free((char *)args[i].out_file);
    free((char *)args[i].txt_file);
    args[i].bytes = NULL;
    args[i].out_file = args[i].txt_file = NULL;
  }
}

__int128 cli_elem_int(etype_t t, const void *base, uint64_t i) {
  const uint8_t *p = (const uint8_t *)base + i * cli_tsize[t];
  switch (t) {
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

double cli_elem_double(etype_t t, const void *base, uint64_t i) {
  const uint8_t *p = (const uint8_t *)base + i * cli_tsize[t];
  if (t == T_F32) return *(const float *)p;
  if (t == T_F64) return *(const double *)p;
  return (double)cli_elem_int(t, base, i);
}
