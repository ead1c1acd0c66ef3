/* nv_cuda.c - loads the CUDA driver (libcuda.so.1) with dlopen into nv_cu (nv_cuda.h). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvidia/nv_cuda.h"

nv_cuda_t nv_cu;

static pthread_once_t nv_once = PTHREAD_ONCE_INIT;
static hsad_status_t nv_load_status;
static char nv_load_msg[512];

static void nv_cuda_load_once(void) {
  const char *path = getenv("HSAD_LIBCUDA");
  if (!path || !*path) path = "libcuda.so.1";
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *why = dlerror();
    nv_load_status = HSAD_ERR_UNSUPPORTED;
    snprintf(nv_load_msg, sizeof nv_load_msg, "no NVIDIA driver: dlopen %s: %s", path,
             why ? why : "unknown error");
    return;
  }
  nv_cuda_t t;
  memset(&t, 0, sizeof t);
#define NV_CUDA_SYM_(member, symbol, ret, params)                                            \
  t.member = (nv_##symbol##_fn)dlsym(lib, #symbol);                                          \
  if (!t.member) {                                                                           \
    nv_load_status = HSAD_ERR_UNSUPPORTED;                                                   \
    snprintf(nv_load_msg, sizeof nv_load_msg, "NVIDIA driver %s lacks %s (the backend needs " \
             "a driver of CUDA 12.4 or later)", path, #symbol);                              \
    dlclose(lib);                                                                            \
    return;                                                                                  \
  }
  NV_CUDA_FUNCTIONS(NV_CUDA_SYM_)
  NV_CUDA_STRUCT_FUNCTIONS(NV_CUDA_SYM_)
#undef NV_CUDA_SYM_
  nv_result_t r = t.init(0);
  if (r != NV_SUCCESS) {
    char e[160];
    const char *name = NULL, *str = NULL;
    t.get_error_name(r, &name);
    t.get_error_string(r, &str);
    snprintf(e, sizeof e, "%s (%s)", name ? name : "?", str ? str : "?");
    nv_load_status = r == NV_ERROR_NO_DEVICE ? HSAD_ERR_NO_DEVICE : HSAD_ERR_UNSUPPORTED;
    snprintf(nv_load_msg, sizeof nv_load_msg, "cuInit(0) in %s: error %u: %s", path, r, e);
    dlclose(lib);
    return;
  }
  t.driver_get_version(&t.driver_version);
  nv_cu = t; /* published by pthread_once's synchronisation */
  nv_load_status = HSAD_OK;
}

hsad_status_t nv_cuda_load(void) {
  pthread_once(&nv_once, nv_cuda_load_once);
  if (nv_load_status) return hsad_fail(nv_load_status, "%s", nv_load_msg);
  return HSAD_OK;
}

const char *nv_cuda_error(nv_result_t r, char *buf, size_t size) {
  const char *name = NULL, *str = NULL;
  if (nv_cu.get_error_name) nv_cu.get_error_name(r, &name);
  if (nv_cu.get_error_string) nv_cu.get_error_string(r, &str);
  snprintf(buf, size, "%s (%s)", name ? name : "CUDA error", str ? str : "no description");
  return buf;
}
