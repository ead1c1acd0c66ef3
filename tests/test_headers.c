/* test_headers.c - the public headers serve C++ as well as C (issue 10).
 *
 * The build already proved the compile half: every installed header (HEADERS in the module.mk
 * files) is compiled alone as C11 and as C++11, -Wall -Wextra -pedantic -Werror (stamps under
 * build/hdrcheck/, prerequisites of this binary). Here tests/api_cxx.cpp, compiled with g++,
 * runs a real dispatch through the C API and the HSAD_KARG_* macros from C++, and its
 * KFD_EMU_TWIN definition keeps its C name. And the library's folders include nothing of tools/
 * (issue 23: the emulator depends on the library's ABI header, hsad_emu_abi.h, not the
 * reverse). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hsad_version.h"
#include "hsa-dispatch/hsad.h"

int api_cxx_saxpy(const char *hsaco, uint32_t n, char *msg, size_t msg_size);
int api_cxx_version(char *out, size_t n);
int api_cxx_literals(const char *hsaco, uint32_t count, char *fields, size_t fn, char *refused,
                     size_t rn);

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

/* Issue 21: C++'s literal forms (tag SCALAR = 3, the value inside; HSAD_KARG_VAL of an rvalue
 * too, of an lvalue typed bytes pointing at it: tag 0) and saxpy run with them: y = 2.5 x + 1
 * exactly; an integer literal for `float a` refused with the argument and both types named. */
Test(headers, cxx_literal_forms_typed, .timeout = 60) {
  hsad_runtime_t *rt;
  hsad_device_t *dev;
  cr_assert_eq(hsad_runtime_open(&rt), HSAD_OK, "%s", hsad_last_error());
  cr_assert_eq(hsad_device_get(rt, 0, &dev), HSAD_OK, "%s", hsad_last_error());
  char path[512], fields[1024] = "", refused[1024] = "";
  snprintf(path, sizeof path, "%s/saxpy-%s-v5.hsaco", TEST_KERNDIR, hsad_device_info(dev)->name);
  int bad = api_cxx_literals(path, 1000, fields, sizeof fields, refused, sizeof refused);
  cr_assert_eq(bad, 0, "C++ literals saxpy: %d wrong elements (%s)", bad, refused);
  cr_assert_str_eq(fields,
                   "3 i32 4 0xfffffffe\n"      /* HSAD_KARG_I32(-2) */
                   "3 u32 4 0x3\n"
                   "3 i64 8 0xfffffffffffffffc\n"
                   "3 u64 8 0x5\n"
                   "3 f32 4 0x40200000\n"      /* 2.5f */
                   "3 f64 8 0x3ff8000000000000\n" /* 1.5 */
                   "3 f32 4 0x40200000\n"      /* HSAD_KARG_VAL(2.5f) */
                   "3 i32 4 0xfffffffa\n"      /* HSAD_KARG_VAL(lv + 1), lv = -7 */
                   "0 i32 4 0x1\n"             /* HSAD_KARG_VAL(lv): typed bytes at lv */
                   "0 f64 8 0x2\n");           /* HSAD_KARG_VAL(dv), a const double */
  char want[1024];
  snprintf(want, sizeof want, "HSAD_ERR_ARG_KIND: %s: kernel 'saxpy': argument 0 is float "
           "(floating-point), the value given is i32 (integer)", path);
  cr_assert_str_eq(refused, want);
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

/* Every `#include "tools/...` line of a library folder's .c and .h files, as "path:line: text"
 * lines appended to out. */
static void tool_includes(const char *folder, char *out, size_t size) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/%s", HSAD_SRCDIR, folder);
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "library folder %s", dir);
  for (struct dirent *e; (e = readdir(d));) {
    const char *dot = strrchr(e->d_name, '.');
    if (!dot || (strcmp(dot, ".c") && strcmp(dot, ".h"))) continue;
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    char line[512];
    for (unsigned no = 1; fgets(line, sizeof line, f); no++)
      if (!strncmp(line, "#include \"tools/", strlen("#include \"tools/"))) {
        size_t used = strlen(out);
        snprintf(out + used, size - used, "%s/%s:%u: %s", folder, e->d_name, no, line);
      }
    fclose(f);
  }
  closedir(d);
}

/* The library's folders depend on no tool (kfd-emu, the hsad CLI, cuda-mock): a tool may
 * include the library's public headers, never the reverse. */
Test(headers, library_includes_no_tool_header) {
  static const char *const folders[] = {"common", "codeobj", "hsa-dispatch", "memory",
                                        "fusion", "nvidia", "nvcodeobj"};
  char found[4096] = "";
  for (size_t i = 0; i < sizeof folders / sizeof folders[0]; i++)
    tool_includes(folders[i], found, sizeof found);
  cr_assert_str_eq(found, "", "library files include tool headers:\n%s", found);
}
