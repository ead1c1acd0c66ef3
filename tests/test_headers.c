/* test_headers.c - the public headers serve C++ as well as C (issue 10).
 *
 * The build already proved the compile half: every installed header (HEADERS in the module.mk
 * files) is compiled alone as C11 and as C++11, -Wall -Wextra -pedantic -Werror (stamps under
 * build/hdrcheck/, prerequisites of this binary). Here tests/api_cxx.cpp, compiled with g++,
 * runs a real dispatch through the C API and the HSAD_KARG_* macros from C++, and its
 * KFD_EMU_TWIN definition keeps its C name. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "common/hsad_version.h"
#include "hsa-dispatch/hsad.h"

int api_cxx_saxpy(const char *hsaco, uint32_t n, char *msg, size_t msg_size);
int api_cxx_version(char *out, size_t n);

Test(headers, cxx_saxpy_dispatch, .timeout = 60) {
  hsad_runtime_t *rt;
  hsad_device_t *dev;
  cr_assert_eq(hsad_runtime_open(&rt), HSAD_OK, "%s", hsad_last_error());
  cr_assert_eq(hsad_device_get(rt, 0, &dev), HSAD_OK, "%s", hsad_last_error());
  char path[512], msg[512] = "";
  snprintf(path, sizeof path, "%s/saxpy-%s-v5.hsaco", TEST_KERNDIR, hsad_device_info(dev)->name);
  /* 1000 elements with 64-wide workgroups: the last workgroup is partial (1000 % 64 = 40) */
  int bad = api_cxx_saxpy(path, 1000, msg, sizeof msg);
  cr_assert_eq(bad, 0, "C++ saxpy: %d wrong elements (%s)", bad, msg);
  cr_assert_str_eq(msg, "ok");
  cr_assert_eq(hsad_runtime_close(rt), HSAD_OK);
}

Test(headers, cxx_version_matches_c) {
  char s[32];
  cr_assert_eq(api_cxx_version(s, sizeof s), 1);
  char want[32];
  snprintf(want, sizeof want, "%u.%u.%u", HSAD_VERSION_MAJOR, HSAD_VERSION_MINOR,
           HSAD_VERSION_PATCH);
  cr_assert_str_eq(s, want);
  cr_assert_eq(hsad_version(), (uint32_t)(HSAD_VERSION_MAJOR << 16 | HSAD_VERSION_MINOR << 8 |
                                          HSAD_VERSION_PATCH));
}

Test(headers, cxx_twin_has_c_name) {
  void *self = dlopen(NULL, RTLD_NOW);
  cr_assert_not_null(self);
  cr_assert_not_null(dlsym(self, "kfd_emu_twin_api_cxx_probe"),
                     "KFD_EMU_TWIN from C++ must export the unmangled twin name");
  dlclose(self);
}
