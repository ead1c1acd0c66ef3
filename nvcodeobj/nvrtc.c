/* nvrtc.c - CUDA C++ to cubin with NVRTC, loaded with dlopen on first use (never linked), as
 * LLVM offload's dynamic_cuda and IREE's dynamic symbol tables load their vendor libraries.
 * Tried in order: libnvrtc.so.13, libnvrtc.so.12 (the loader's path), then the same names under
 * /usr/local/cuda/lib64. NVRTC needs no GPU and no driver. */
#include "nvcodeobj/nv_internal.h"
#include "nvcodeobj/nv_nvrtc.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
#define NV_NVRTC_FIELD(name, ret, args) nv_##name##_fn name;
  NV_NVRTC_SYMBOLS(NV_NVRTC_FIELD)
#undef NV_NVRTC_FIELD
  void *lib;
  char why[768];
} nv_rtc;
static pthread_once_t nv_rtc_once = PTHREAD_ONCE_INIT;

static void nv_rtc_load(void) {
  static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12",
                                      "/usr/local/cuda/lib64/libnvrtc.so.13",
                                      "/usr/local/cuda/lib64/libnvrtc.so.12"};
  size_t len = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0] && !nv_rtc.lib; i++) {
    nv_rtc.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!nv_rtc.lib && len < sizeof nv_rtc.why - 1) {
      const char *err = dlerror();
      len += (size_t)snprintf(nv_rtc.why + len, sizeof nv_rtc.why - len, "%s%s", len ? "; " : "",
                              err ? err : names[i]);
    }
  }
  if (!nv_rtc.lib) return;
#define NV_NVRTC_LOAD(name, ret, args)                                                            \
  if (!(nv_rtc.name = (nv_##name##_fn)dlsym(nv_rtc.lib, #name))) {                               \
    snprintf(nv_rtc.why, sizeof nv_rtc.why, "NVRTC has no %s", #name);                           \
    dlclose(nv_rtc.lib);                                                                          \
    nv_rtc.lib = NULL;                                                                            \
    return;                                                                                       \
  }
  NV_NVRTC_SYMBOLS(NV_NVRTC_LOAD)
#undef NV_NVRTC_LOAD
}

bool hsad_nv_nvrtc_available(char *why, size_t why_size) {
  pthread_once(&nv_rtc_once, nv_rtc_load);
  if (!nv_rtc.lib && why && why_size) snprintf(why, why_size, "%s", nv_rtc.why);
  return nv_rtc.lib != NULL;
}

static bool target_ok(const char *t) {
  if (strncmp(t, "sm_", 3) || !t[3]) return false;
  const char *p = t + 3;
  while (*p >= '0' && *p <= '9') p++;
  return p > t + 3 && p - (t + 3) <= 3 && (*p == '\0' || (p[0] == 'a' && !p[1]) || (p[0] == 'f' && !p[1]));
}

static char *cat2(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  char *s = malloc(la + lb + 1);
  if (s) {
    memcpy(s, a, la);
    memcpy(s + la, b, lb + 1);
  }
  return s;
}

/* The compile of hsad_nv_compile (ptx false: a cubin for sm_NN) and hsad_nv_compile_ptx (ptx
 * true: PTX for compute_NN, NUL-terminated, the NUL counted in *out_size). */
static hsad_status_t nv_compile_to(const char *source, const char *name,
                                   const hsad_nv_compile_options_t *o, bool ptx, void **out_cubin,
                                   size_t *out_size, char **out_log) {
  if (out_log) *out_log = NULL;
  if (!source || !o || !o->target || !out_cubin || !out_size)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_nv_compile: NULL %s",
                     !source ? "source" : !o ? "options" : !o->target ? "options->target" : "out");
  if (!name) name = "<source>";
  if (!target_ok(o->target))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT,
                     "%s: target '%s' is not a real architecture sm_NN (e.g. sm_90, sm_90a)", name,
                     o->target);
  char why[768];
  if (!hsad_nv_nvrtc_available(why, sizeof why))
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "%s: NVRTC cannot be loaded: %s", name, why);
  size_t nopt = 1 + o->define_count + o->include_dir_count + o->extra_count, k = 0;
  char **opts = calloc(nopt, sizeof *opts);
  hsad_status_t st = HSAD_OK;
  nv_nvrtcProgram prog = NULL;
  char *log = NULL;
  if (!opts) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
  opts[k++] = cat2(ptx ? "-arch=compute_" : "-arch=", ptx ? o->target + 3 : o->target);
  for (size_t i = 0; i < o->define_count; i++) opts[k++] = cat2("-D", o->defines[i]);
  for (size_t i = 0; i < o->include_dir_count; i++) opts[k++] = cat2("-I", o->include_dirs[i]);
  for (size_t i = 0; i < o->extra_count; i++) opts[k++] = cat2("", o->extra[i]);
  for (size_t i = 0; i < k; i++)
    if (!opts[i]) {
      st = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
      goto out;
    }
  nv_nvrtcResult r = nv_rtc.nvrtcCreateProgram(&prog, source, name, 0, NULL, NULL);
  if (r != 0) {
    st = hsad_fail(HSAD_ERR_COMPILE, "%s: nvrtcCreateProgram: %s", name,
                   nv_rtc.nvrtcGetErrorString(r));
    goto out;
  }
  nv_nvrtcResult cr = nv_rtc.nvrtcCompileProgram(prog, (int)k, (const char *const *)opts);
  size_t log_size = 0;
  if (nv_rtc.nvrtcGetProgramLogSize(prog, &log_size) == 0 && log_size) {
    log = calloc(1, log_size + 1);
    if (log) nv_rtc.nvrtcGetProgramLog(prog, log);
  }
  if (cr != 0) {
    st = hsad_fail(HSAD_ERR_COMPILE, "%s: nvrtcCompileProgram (%s): %s\n%s", name, o->target,
                   nv_rtc.nvrtcGetErrorString(cr), log ? log : "");
    goto out;
  }
  size_t size = 0;
  const char *what = ptx ? "PTX" : "CUBIN";
  if ((r = ptx ? nv_rtc.nvrtcGetPTXSize(prog, &size) : nv_rtc.nvrtcGetCUBINSize(prog, &size)) !=
          0 || size == 0) {
    st = hsad_fail(HSAD_ERR_COMPILE, "%s: nvrtcGet%sSize: %s (size %zu)", name, what,
                   nv_rtc.nvrtcGetErrorString(r), size);
    goto out;
  }
  void *cubin = malloc(size);
  if (!cubin) {
    st = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu-byte %s)", name, size,
                   ptx ? "PTX" : "cubin");
    goto out;
  }
  if ((r = ptx ? nv_rtc.nvrtcGetPTX(prog, cubin) : nv_rtc.nvrtcGetCUBIN(prog, cubin)) != 0) {
    free(cubin);
    st = hsad_fail(HSAD_ERR_COMPILE, "%s: nvrtcGet%s: %s", name, what,
                   nv_rtc.nvrtcGetErrorString(r));
    goto out;
  }
  *out_cubin = cubin;
  *out_size = size;
  if (out_log) {
    *out_log = log ? log : calloc(1, 1);
    log = NULL;
  }
out:
  if (prog) nv_rtc.nvrtcDestroyProgram(&prog);
  for (size_t i = 0; i < k; i++) free(opts[i]);
  free(opts);
  free(log);
  return st;
}

hsad_status_t hsad_nv_compile(const char *source, const char *name,
                              const hsad_nv_compile_options_t *o, void **out_cubin,
                              size_t *out_size, char **out_log) {
  return nv_compile_to(source, name, o, false, out_cubin, out_size, out_log);
}

hsad_status_t hsad_nv_compile_ptx(const char *source, const char *name,
                                  const hsad_nv_compile_options_t *o, char **out_ptx,
                                  size_t *out_size, char **out_log) {
  void *ptx = NULL;
  hsad_status_t s = nv_compile_to(source, name, o, true, out_ptx ? &ptx : NULL, out_size, out_log);
  if (!s) *out_ptx = ptx;
  return s;
}
