/* rocr.c - loads ROCr at run time and picks its thunk (see hsad_rocr.h). */
#define _GNU_SOURCE
#include "hsa-dispatch/hsad_rocr.h"
#include "hsa-dispatch/hsad_emu_abi.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

hsad_rocr_t hsad_rocr;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static hsad_status_t load_status;
static char load_message[1024];
static int emulated;
static char emu_dir[PATH_MAX]; /* directory kfd-emu was loaded from, "" if not */
static void *emu_handle;       /* kfd-emu's dlopen handle when the thunk is kfd-emu */

/* dlopens kfd-emu's libhsakmt.so.1 from dir; 0 on success. */
static int open_emu(const char *dir, char *tried, size_t n) {
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/libhsakmt.so.1", dir);
  size_t len = strlen(tried);
  snprintf(tried + len, n - len, "%s%s", len ? ", " : "", path);
  void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  if (!h) return -1;
  emu_handle = h;
  if (!realpath(dir, emu_dir)) snprintf(emu_dir, sizeof emu_dir, "%s", dir);
  return 0;
}

static int load_emu(char *tried, size_t n) {
  const char *env = getenv("HSAD_KFD_EMU_DIR");
  if (env && *env) return open_emu(env, tried, n);
  Dl_info info;
  char dir[PATH_MAX];
  /* The object holding this code: libhsad.so, or the executable libhsad.a is linked into
   * (dladdr names the main program "" or argv[0]: use /proc/self/exe then). */
  bool in_shared_lib = dladdr((void *)&hsad_rocr_load, &info) && info.dli_fname &&
                       strstr(info.dli_fname, ".so") && realpath(info.dli_fname, dir);
  if (!in_shared_lib) {
    ssize_t n = readlink("/proc/self/exe", dir, sizeof dir - 1);
    if (n <= 0) return -1;
    dir[n] = '\0';
  }
  char *slash = strrchr(dir, '/');
  if (!slash) return -1;
  *slash = '\0';
  char cand[PATH_MAX + 32];
  snprintf(cand, sizeof cand, "%s/hsad/kfd-emu", dir);
  if (open_emu(cand, tried, n) == 0) return 0;
  snprintf(cand, sizeof cand, "%s/../lib/hsad/kfd-emu", dir);
  return open_emu(cand, tried, n);
}

static void load(void) {
  load_status = HSAD_ERR_NO_DEVICE;
  const char *want = getenv("HSAD_DEVICE");
  int have_kfd = access("/dev/kfd", R_OK | W_OK) == 0;
  if (want && *want && strcmp(want, "emu") && strcmp(want, "hw")) {
    snprintf(load_message, sizeof load_message,
             "HSAD_DEVICE=%s: expected 'emu' (kfd-emu) or 'hw' (a GPU through /dev/kfd)", want);
    return;
  }
  int hw = want && *want ? !strcmp(want, "hw") : have_kfd;
  if (hw && !have_kfd) {
    snprintf(load_message, sizeof load_message,
             "HSAD_DEVICE=hw but /dev/kfd is absent or not accessible: no AMD GPU driver here "
             "(unset HSAD_DEVICE to use kfd-emu)");
    return;
  }
  void *rocr = dlopen("libhsa-runtime64.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (rocr) {
    /* ROCr is already in the process: it came with its thunk, keep both. */
    emulated = dlsym(RTLD_DEFAULT, "kfd_emu_rocr_blit_twin") != NULL;
    if (emulated) emu_handle = dlopen("libhsakmt.so.1", RTLD_NOW | RTLD_NOLOAD);
  } else {
    if (!hw) {
      char tried[3 * PATH_MAX];
      tried[0] = '\0';
      if (load_emu(tried, sizeof tried) != 0) {
        snprintf(load_message, sizeof load_message,
                 "%s, but kfd-emu could not be loaded (tried %s: %s); build it with make or "
                 "set HSAD_KFD_EMU_DIR",
                 have_kfd ? "HSAD_DEVICE=emu" : "no /dev/kfd (no AMD GPU driver)",
                 tried[0] ? tried : "nothing", dlerror());
        return;
      }
      emulated = 1;
    }
    rocr = dlopen("libhsa-runtime64.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!rocr) {
      snprintf(load_message, sizeof load_message,
               "cannot load ROCr (libhsa-runtime64.so.1): %s (install libhsa-runtime64-1)",
               dlerror());
      return;
    }
  }
#define HSAD_ROCR_SYM(f)                                                                      \
  if (!(hsad_rocr.f = (__typeof__(f) *)dlsym(rocr, #f))) {                                  \
    snprintf(load_message, sizeof load_message, "ROCr lacks %s: %s", #f, dlerror());        \
    memset(&hsad_rocr, 0, sizeof hsad_rocr);                                                 \
    return;                                                                                  \
  }
  HSAD_ROCR_FUNCS(HSAD_ROCR_SYM)
#undef HSAD_ROCR_SYM
  load_status = HSAD_OK;
}

hsad_status_t hsad_rocr_load(void) {
  pthread_once(&once, load);
  if (load_status != HSAD_OK) return hsad_fail(load_status, "%s", load_message);
  return HSAD_OK;
}

int hsad_rocr_is_emulated(void) { return emulated; }

const char *hsad_rocr_emu_dir(void) { return emu_dir[0] ? emu_dir : NULL; }

int hsad_rocr_emu_config_error(char *buf, size_t size) {
  if (size) buf[0] = '\0';
  if (!emulated || !emu_handle) return 0;
  kfd_emu_config_error_fn f;
  *(void **)&f = dlsym(emu_handle, "kfd_emu_config_error");
  return f && f(buf, size) > 0;
}

int hsad_rocr_emu_kernel_mode(uint64_t kernel_object, char *buf, size_t size) {
  if (size) buf[0] = '\0';
  if (!emulated || !emu_handle) return HSAD_EMU_MODE_NOT_EMULATED;
  kfd_emu_kernel_mode_fn f;
  *(void **)&f = dlsym(emu_handle, "kfd_emu_kernel_mode");
  return f ? f(kernel_object, buf, size) : HSAD_EMU_MODE_NOT_EMULATED;
}
