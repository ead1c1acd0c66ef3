/* argtype.c - kernel argument types (hsad_codeobj_kernarg.h, issue 21): scalar type names as
 * .type_name spells them, C++ parameter types of a mangled kernel name, and each kernel's
 * by-value parameter types found at load for hsad_kernarg_build's type check. hsad run and
 * hsad graph classify with these same functions (tools/hsad/cli_args.c).
 * Sources: AMDGPUUsage "Code Object V3+ Kernel Argument Metadata Map" (.type_name, present
 * for OpenCL C); the Itanium C++ ABI mangling (HIP kernels have no .type_name), demangled by
 * libstdc++'s abi::__cxa_demangle (extern "C" __cxa_demangle), loaded with dlopen. */
#include "codeobj/hsad_codeobj_kernarg.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const type_names[HSAD_KARG_TYPE_COUNT_] = {
    NULL, "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "f32", "f64"};
static const uint8_t type_sizes[HSAD_KARG_TYPE_COUNT_] = {0, 1, 1, 2, 2, 4, 4, 8, 8, 4, 8};

const char *hsad_karg_type_name(hsad_karg_type_t type) {
  return (unsigned)type < HSAD_KARG_TYPE_COUNT_ ? type_names[type] : NULL;
}

uint32_t hsad_karg_type_size(hsad_karg_type_t type) {
  return (unsigned)type < HSAD_KARG_TYPE_COUNT_ ? type_sizes[type] : 0;
}

bool hsad_karg_type_is_float(hsad_karg_type_t type) {
  return type == HSAD_KARG_TYPE_F32 || type == HSAD_KARG_TYPE_F64;
}

/* Scalar type names of OpenCL C and C/C++ (HIP) as .type_name spells them, and their type. */
static const struct {
  const char *name;
  hsad_karg_type_t type;
} scalar_names[] = {
    {"char", HSAD_KARG_TYPE_I8},          {"signed char", HSAD_KARG_TYPE_I8},
    {"int8_t", HSAD_KARG_TYPE_I8},        {"uchar", HSAD_KARG_TYPE_U8},
    {"unsigned char", HSAD_KARG_TYPE_U8}, {"uint8_t", HSAD_KARG_TYPE_U8},
    {"bool", HSAD_KARG_TYPE_U8},          {"_Bool", HSAD_KARG_TYPE_U8},
    {"short", HSAD_KARG_TYPE_I16},        {"int16_t", HSAD_KARG_TYPE_I16},
    {"ushort", HSAD_KARG_TYPE_U16},       {"unsigned short", HSAD_KARG_TYPE_U16},
    {"uint16_t", HSAD_KARG_TYPE_U16},     {"int", HSAD_KARG_TYPE_I32},
    {"int32_t", HSAD_KARG_TYPE_I32},      {"uint", HSAD_KARG_TYPE_U32},
    {"unsigned int", HSAD_KARG_TYPE_U32}, {"unsigned", HSAD_KARG_TYPE_U32},
    {"uint32_t", HSAD_KARG_TYPE_U32},     {"long", HSAD_KARG_TYPE_I64},
    {"long long", HSAD_KARG_TYPE_I64},    {"int64_t", HSAD_KARG_TYPE_I64},
    {"ptrdiff_t", HSAD_KARG_TYPE_I64},    {"intptr_t", HSAD_KARG_TYPE_I64},
    {"ulong", HSAD_KARG_TYPE_U64},        {"unsigned long", HSAD_KARG_TYPE_U64},
    {"unsigned long long", HSAD_KARG_TYPE_U64}, {"uint64_t", HSAD_KARG_TYPE_U64},
    {"size_t", HSAD_KARG_TYPE_U64},       {"uintptr_t", HSAD_KARG_TYPE_U64},
    {"float", HSAD_KARG_TYPE_F32},        {"double", HSAD_KARG_TYPE_F64},
};

hsad_type_name_class_t hsad_type_name_classify(const char *tn, hsad_karg_type_t *out_type,
                                               uint32_t *out_width) {
  if (!tn || !*tn) return HSAD_TYPE_NAME_UNKNOWN;
  while (!strncmp(tn, "const ", 6) || !strncmp(tn, "volatile ", 9)) tn += tn[0] == 'c' ? 6 : 9;
  if (!strncmp(tn, "struct ", 7) || !strncmp(tn, "union ", 6) || !strncmp(tn, "half", 4) ||
      !strncmp(tn, "_Float16", 8) || !strcmp(tn, "__fp16"))
    return HSAD_TYPE_NAME_RAW;
  size_t n = strlen(tn), base = n;
  while (base && tn[base - 1] >= '0' && tn[base - 1] <= '9') base--;
  uint32_t width = 1;
  if (base < n) {
    width = (uint32_t)strtoul(tn + base, NULL, 10);
    if (width != 2 && width != 3 && width != 4 && width != 8 && width != 16)
      return HSAD_TYPE_NAME_UNKNOWN;
  }
  for (size_t i = 0; i < sizeof scalar_names / sizeof scalar_names[0]; i++)
    if (strlen(scalar_names[i].name) == base && !strncmp(tn, scalar_names[i].name, base) &&
        (width == 1 || !strchr(scalar_names[i].name, ' ')) &&
        (width == 1 || !strchr(scalar_names[i].name, '_'))) {
      *out_type = scalar_names[i].type;
      *out_width = width;
      return HSAD_TYPE_NAME_SCALAR;
    }
  return HSAD_TYPE_NAME_UNKNOWN;
}

/* ---- C++ (HIP) parameter types from the mangled name ------------------------------------- */

typedef char *(*co_cxa_demangle_fn)(const char *mangled, char *out, size_t *length, int *status);
static co_cxa_demangle_fn co_cxa_demangle;
static pthread_once_t co_demangler_once = PTHREAD_ONCE_INIT;

/* libstdc++'s demangler: already in the process (hsad, ROCr's own dependency) or loaded. The
 * handle is kept for the process's life. */
static void co_demangler_load(void) {
  void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
  if (h) co_cxa_demangle = (co_cxa_demangle_fn)dlsym(h, "__cxa_demangle");
}

/* The demangled name (malloc'd), NULL when not mangled, not demangled or no demangler. */
static char *co_demangle(const char *name) {
  if (!name || strncmp(name, "_Z", 2) != 0) return NULL;
  pthread_once(&co_demangler_once, co_demangler_load);
  if (!co_cxa_demangle) return NULL;
  int status = 0;
  char *out = co_cxa_demangle(name, NULL, NULL, &status);
  if (status != 0) {
    free(out);
    return NULL;
  }
  return out;
}

/* The demangled name ends in the parameter list, "scale(float*, float, unsigned int)"
 * (libstdc++'s spelling: "float const*" for a pointer to const, typedefs such as float4
 * resolved to HIP_vector_type<float, 4u>). */
int hsad_cxx_param_types(const char *mangled, char (*out)[HSAD_CXX_TYPE_MAX], int max) {
  char *dm = co_demangle(mangled);
  if (!dm) return -1;
  size_t n = strlen(dm);
  int count = -1;
  if (n && dm[n - 1] == ')') {
    size_t open = n - 1;
    int depth = 0;
    for (size_t i = n; i-- > 0;) { /* the '(' matching the final ')' */
      if (dm[i] == ')') depth++;
      else if (dm[i] == '(' && --depth == 0) {
        open = i;
        break;
      }
    }
    if (depth == 0 && open < n - 1) {
      count = 0;
      const char *p = dm + open + 1, *end = dm + n - 1;
      int d = 0;
      const char *start = p;
      for (; p <= end; p++) {
        if (p < end && (*p == '(' || *p == '<' || *p == '[')) d++;
        else if (p < end && (*p == ')' || *p == '>' || *p == ']')) d--;
        else if (p == end || (*p == ',' && d == 0)) {
          while (start < p && *start == ' ') start++;
          size_t len = (size_t)(p - start);
          if (len == 0 || (len == 4 && !strncmp(start, "void", 4))) {
            if (p == end) break; /* "()" or "(void)": no parameters */
          }
          if (count < max && len < HSAD_CXX_TYPE_MAX) {
            memcpy(out[count], start, len);
            out[count][len] = '\0';
          } else if (count < max) {
            out[count][0] = '\0'; /* too long to classify: size only */
          }
          count++;
          start = p + 1;
        }
      }
    }
  }
  free(dm);
  return count;
}

void hsad_cxx_type_class(const char *t, char *b, size_t bn) {
  char w[HSAD_CXX_TYPE_MAX];
  size_t k = 0;
  /* drop cv and restrict qualifiers word by word */
  for (const char *p = t; *p && k + 1 < sizeof w;) {
    static const char *const quals[] = {"const", "volatile", "__restrict", "restrict"};
    bool skipped = false;
    for (size_t q = 0; q < 4; q++) {
      size_t ql = strlen(quals[q]);
      bool start = p == t || p[-1] == ' ' || p[-1] == '*' || p[-1] == '<';
      if (start && !strncmp(p, quals[q], ql) && (p[ql] == ' ' || p[ql] == '*' || !p[ql] ||
                                                 p[ql] == '>')) {
        p += ql;
        while (*p == ' ') p++;
        skipped = true;
        break;
      }
    }
    if (!skipped) w[k++] = *p++;
  }
  while (k && w[k - 1] == ' ') k--;
  w[k] = '\0';
  bool ptr = k && w[k - 1] == '*';
  if (ptr) {
    w[--k] = '\0';
    while (k && w[k - 1] == ' ') w[--k] = '\0';
    if (strchr(w, '*')) { /* a pointer to a pointer: no element type to compare */
      snprintf(b, bn, "%s", "");
      return;
    }
  }
  char base[HSAD_CXX_TYPE_MAX];
  unsigned width = 0;
  if (!strncmp(w, "HIP_vector_type<", 16)) {
    const char *comma = strrchr(w, ',');
    if (!comma || sscanf(comma + 1, " %uu>", &width) != 1 || width < 1 || width > 16 ||
        (size_t)(comma - (w + 16)) >= sizeof base) {
      snprintf(b, bn, "%s", "");
      return;
    }
    memcpy(base, w + 16, (size_t)(comma - (w + 16)));
    base[comma - (w + 16)] = '\0';
    /* OpenCL's one-word names for the multi-word C types a vector can have */
    static const char *const one_word[][2] = {
        {"unsigned char", "uchar"}, {"signed char", "char"},  {"unsigned short", "ushort"},
        {"unsigned int", "uint"},   {"unsigned long", "ulong"}, {"long long", "long"},
        {"unsigned long long", "ulong"}};
    for (size_t i = 0; i < sizeof one_word / sizeof one_word[0]; i++)
      if (!strcmp(base, one_word[i][0])) snprintf(base, sizeof base, "%s", one_word[i][1]);
  } else {
    snprintf(base, sizeof base, "%s", w);
  }
  int r = width > 1 ? snprintf(b, bn, "%s%u%s", base, width, ptr ? "*" : "")
                    : snprintf(b, bn, "%s%s", base, ptr ? "*" : "");
  if (r < 0 || (size_t)r >= bn) b[0] = '\0'; /* too long to classify: size only */
}
