/* test_codeobj_cli.c - `hsad inspect` and `hsad compile` as a user runs them: exact table text,
 * exit codes, and error messages on stderr. */
#include "test_codeobj_util.h"

#include <sys/wait.h>
#include <unistd.h>

#ifndef CO_HSAD
#define CO_HSAD "build/bin/hsad"
#endif

/* Runs `hsad ARGS` with stdout and stderr captured together; returns the exit code. */
static int run(const char *args, char *out, size_t n) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s %s 2>&1", CO_HSAD, args);
  FILE *p = popen(cmd, "r");
  cr_assert(p);
  size_t used = 0, got;
  while (used + 1 < n && (got = fread(out + used, 1, n - 1 - used, p)) > 0) used += got;
  out[used] = '\0';
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(codeobj_cli, inspect_table_exact) {
  static char out[8192];
  cr_assert_eq(run("inspect --block 128 " FIX("kernels-gfx906-v4.hsaco"), out, sizeof out), 0,
               "%s", out);
  cr_assert_str_eq(out,
      "  amdgcn-amd-amdhsa--gfx906  code object v4  8 kernels\n"
      "  kernel     VGPR  AGPR  SGPR   spill  scratch    LDS kernarg wave  maxWG  waves/SIMD@block limiter\n"
      "  vadd          8     0    11     0/0        0      0      28   64    256  8@128 workgroups\n"
      "  lds2          7     0    12     0/0        0      0      48   64    256  8@128 workgroups\n"
      "  fixed_lds     2     0     7     0/0        0    512      20   64    128  8@128 workgroups\n"
      "  scratch       3     0    10     0/0      260      0      12   64    256  8@128 workgroups\n"
      "  noargs        0     0     0     0/0        0      0       0   64    256  8@128 workgroups\n"
      "  quals         2     0     9     0/0        0      0      32   64    256  8@128 workgroups\n"
      "  implicit      3     0     8     0/0        0      0      72   64    256  8@128 workgroups\n"
      "! spill        16     0    14    66/0      140      0      12   64    256  8@128 workgroups\n");
}

/* A plain C++ name of two overloads is ambiguous, naming both; a not-found message lists at
 * most 20 of librocrand's 80 kernels. */
Test(codeobj_cli, inspect_ambiguous_and_capped_list) {
  static char out[65536];
  const char *lib = "/usr/lib/x86_64-linux-gnu/librocrand.so.1";
  char args[512];
  snprintf(args, sizeof args, "inspect %s --kernel init_engines_kernel", lib);
  cr_assert_eq(run(args, out, sizeof out), 1, "%s", out);
  char want[4096];
  snprintf(want, sizeof want, "hsad inspect: HSAD_ERR_KERNEL_NOT_FOUND: %s[bundle 0: "
           "hipv4-amdgcn-amd-amdhsa--gfx1030]: ambiguous: 2 kernels match 'init_engines_kernel': "
           "_ZN12rocrand_host6detailL19init_engines_kernelEPN14rocrand_device15mrg32k3a_engineEjyy "
           "(rocrand_host::detail::init_engines_kernel(rocrand_device::mrg32k3a_engine*, unsigned "
           "int, unsigned long long, unsigned long long)), "
           "_ZN12rocrand_host6detailL19init_engines_kernelEPN14rocrand_device13xorwow_engineEjyy "
           "(rocrand_host::detail::init_engines_kernel(rocrand_device::xorwow_engine*, unsigned "
           "int, unsigned long long, unsigned long long)); give the full name of one\n", lib);
  cr_assert_str_eq(out, want);
  /* the qualified and the demangled name find one */
  snprintf(args, sizeof args, "inspect %s --kernel 'rocrand_host::detail::init_engines_kernel("
           "rocrand_device::xorwow_engine*, unsigned int, unsigned long long, unsigned long long)'",
           lib);
  cr_assert_eq(run(args, out, sizeof out), 0, "%s", out);
  cr_assert(strstr(out, "_ZN12rocrand_host6detailL19init_engines_kernelEPN14rocrand_device13"
                        "xorwow_engineEjyy\n"), "%s", out);
  snprintf(args, sizeof args, "inspect %s --kernel nope", lib);
  cr_assert_eq(run(args, out, sizeof out), 1, "%s", out);
  snprintf(want, sizeof want, "hsad inspect: HSAD_ERR_KERNEL_NOT_FOUND: %s[bundle 0: "
           "hipv4-amdgcn-amd-amdhsa--gfx1030]: no kernel named 'nope'; it has 80: "
           "_ZN12rocrand_host6detailL19init_engines_kernelEPN14rocrand_device15mrg32k3a_engineEjyy "
           "(rocrand_host::detail::init_engines_kernel(", lib);
  cr_assert(!strncmp(out, want, strlen(want)), "%s", out);
  size_t n = strlen(out), names = 0;
  for (const char *p = out; (p = strstr(p, "_ZN12rocrand_host")); p++) names++;
  cr_assert_eq(names, 20, "%s", out);
  cr_assert(n > 13 && !strcmp(out + n - 13, " and 60 more\n"), "%s", out);
}

Test(codeobj_cli, inspect_floor_and_kernel) {
  static char out[4096];
  /* floor 9 flags every gfx90a kernel (8 waves per SIMD at most) */
  cr_assert_eq(run("inspect --floor 9 --kernel vadd " FIX("kernels-gfx90a-v5.hsaco"), out,
                   sizeof out), 0);
  cr_assert(strstr(out, "\n! vadd       8     0    10     0/0        0      0     288   64    256  "
                        "8@256 waves\n"),
            "%s", out);
  cr_assert_eq(run("inspect --kernel nope " FIX("kernels-gfx90a-v5.hsaco"), out, sizeof out), 1);
  char want[1024];
  snprintf(want, sizeof want, "hsad inspect: HSAD_ERR_KERNEL_NOT_FOUND: %s: no kernel named "
           "'nope'; it has 8: vadd, lds2, fixed_lds, scratch, noargs, quals, implicit, spill\n",
           FIX("kernels-gfx90a-v5.hsaco"));
  cr_assert_str_eq(out, want);
  /* with --json: one error object on stdout, nothing else */
  cr_assert_eq(run("inspect --json --kernel nope " FIX("kernels-gfx90a-v5.hsaco"), out,
                   sizeof out), 1);
  snprintf(want, sizeof want, "{ \"error\": { \"command\": \"inspect\", \"status\": "
           "\"HSAD_ERR_KERNEL_NOT_FOUND\", \"exit_code\": 1, \"message\": "
           "\"HSAD_ERR_KERNEL_NOT_FOUND: %s: no kernel named 'nope'; it has 8: vadd, lds2, "
           "fixed_lds, scratch, noargs, quals, implicit, spill\" } }\n",
           FIX("kernels-gfx90a-v5.hsaco"));
  cr_assert_str_eq(out, want);
  cr_assert_eq(run("inspect --json /nonexistent.hsaco", out, sizeof out), 1);
  cr_assert_str_eq(out, "{ \"error\": { \"command\": \"inspect\", \"status\": \"HSAD_ERR_IO\", "
                        "\"exit_code\": 1, \"message\": \"/nonexistent.hsaco: cannot open: No "
                        "such file or directory\" } }\n");
  cr_assert_eq(run("inspect --json --bogus x", out, sizeof out), 2);
  cr_assert_str_eq(out, "{ \"error\": { \"command\": \"inspect\", \"status\": \"usage\", "
                        "\"exit_code\": 2, \"message\": \"unknown option '--bogus' (see hsad "
                        "inspect --help)\" } }\n");
}

/* --demangle: C++ names demangled in the table and as "demangled" in JSON; --kernel takes the
 * mangled, demangled or plain function name; an unknown one lists the kernels demangled. */
Test(codeobj_cli, inspect_demangle) {
  static char out[8192];
  cr_assert_eq(run("inspect --demangle " FIX("hip_scale-gfx90a.hsaco"), out, sizeof out), 0,
               "%s", out);
  cr_assert_str_eq(out,
      "  amdgcn-amd-amdhsa--gfx90a  code object v4  1 kernels\n"
      "  kernel                     VGPR  AGPR  SGPR   spill  scratch    LDS kernarg wave  maxWG  "
      "waves/SIMD@block limiter\n"
      "  scale(float*, float, int)     3     0    11     0/0        0      0      16   64   1024  "
      "8@256 waves\n");
  static char out2[8192];
  cr_assert_eq(run("inspect --kernel scale " FIX("hip_scale-gfx90a.hsaco"), out2, sizeof out2),
               0, "%s", out2);
  cr_assert(strstr(out2, "\n  _Z5scalePffi     3     0    11     0/0"), "%s", out2);
  cr_assert_eq(run("inspect --kernel 'scale(float*, float, int)' " FIX("hip_scale-gfx90a.hsaco"),
                   out, sizeof out), 0, "%s", out);
  cr_assert_str_eq(out, out2);
  cr_assert_eq(run("inspect --json --demangle --kernel _Z5scalePffi " FIX("hip_scale-gfx90a.hsaco"),
                   out, sizeof out), 0, "%s", out);
  cr_assert(strstr(out, "\"kernels\": [ { \"name\": \"_Z5scalePffi\", \"demangled\": "
                        "\"scale(float*, float, int)\", \"symbol\": \"_Z5scalePffi.kd\", "),
            "%s", out);
  cr_assert_eq(run("inspect --kernel scal " FIX("hip_scale-gfx90a.hsaco"), out, sizeof out), 1);
  char want[1024];
  snprintf(want, sizeof want, "hsad inspect: HSAD_ERR_KERNEL_NOT_FOUND: %s: no kernel named "
           "'scal'; it has 1: _Z5scalePffi (scale(float*, float, int))\n",
           FIX("hip_scale-gfx90a.hsaco"));
  cr_assert_str_eq(out, want);
}

Test(codeobj_cli, inspect_bundle_entries) {
  static char out[4096];
  cr_assert_eq(run("inspect --target gfx90a:xnack- " FIX("hip_scale.bundle"), out, sizeof out), 0);
  cr_assert_str_eq(out,
      "[hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-]  amdgcn-amd-amdhsa--gfx90a:xnack-  code object v4  "
      "1 kernels\n"
      "  kernel        VGPR  AGPR  SGPR   spill  scratch    LDS kernarg wave  maxWG  "
      "waves/SIMD@block limiter\n"
      "  _Z5scalePffi     3     0    11     0/0        0      0      16   64   1024  8@256 waves\n");
  cr_assert_eq(run("inspect --json " FIX("hip_scale.host.o"), out, sizeof out), 0);
  cr_assert_eq(out[0], '[', "%s", out);
  cr_assert(strstr(out, "{ \"entry_id\": \"hipv4-amdgcn-amd-amdhsa--gfx906\", \"bundle_index\": 0, "
                        "\"offset\": 8192, \"target\": \"amdgcn-amd-amdhsa--gfx906\", "
                        "\"code_object_version\": 4"),
            "%s", out);
}

Test(codeobj_cli, inspect_errors) {
  static char out[4096];
  cr_assert_eq(run("inspect /nonexistent.hsaco", out, sizeof out), 1);
  cr_assert_str_eq(out, "hsad inspect: /nonexistent.hsaco: cannot open: No such file or "
                        "directory\n");
  cr_assert_eq(run("inspect " FIX("kernels-gfx906-v2.hsaco"), out, sizeof out), 1);
  cr_assert(strstr(out, "code object version 2 (EI_ABIVERSION 0) is not supported: supported are "
                        "3 (read only), 4 and 5\n"),
            "%s", out);
  cr_assert_eq(run("inspect --target gfx1100 " FIX("hip_scale.bundle"), out, sizeof out), 1);
  cr_assert(strstr(out, "no code object for gfx1100: the file has gfx1030, gfx90a:xnack-"), "%s",
            out);
  cr_assert_eq(run("inspect", out, sizeof out), 2);
  cr_assert_eq(run("inspect --block 0 x", out, sizeof out), 2);
  cr_assert_str_eq(out, "hsad inspect: --block 0: expected a positive integer\n");
  cr_assert_eq(run("inspect --bogus x", out, sizeof out), 2);
}

Test(codeobj_cli, compile_and_inspect) {
  char dir[] = "/tmp/hsad-cli-XXXXXX";
  cr_assert(mkdtemp(dir));
  char src[256], obj[256], args[1024];
  snprintf(src, sizeof src, "%s/k.cl", dir);
  snprintf(obj, sizeof obj, "%s/k.hsaco", dir);
  FILE *f = fopen(src, "w");
  fputs("__kernel void k(__global int *o, int v) { o[get_global_id(0)] = v * FACTOR; }\n", f);
  fclose(f);
  static char out[8192];
  snprintf(args, sizeof args, "compile %s --target gfx90a:xnack- -O3 -DFACTOR=3 "
           "--code-object-version 5 -o %s", src, obj);
  cr_assert_eq(run(args, out, sizeof out), 0, "%s", out);
  cr_assert_str_eq(out, "");
  snprintf(args, sizeof args, "inspect --json %s", obj);
  cr_assert_eq(run(args, out, sizeof out), 0, "%s", out);
  cr_assert(!strncmp(out, "{ \"target\": \"amdgcn-amd-amdhsa--gfx90a:xnack-\", "
                        "\"code_object_version\": 5, \"kernels\": [ { \"name\": \"k\", ", 90),
            "%s", out);
  /* a compile error: the compiler's FILE:LINE:COL diagnostics, then hsad's line; exit 1 */
  snprintf(args, sizeof args, "compile %s --target gfx906 -o %s", src, obj);
  cr_assert_eq(run(args, out, sizeof out), 1);
  char want[1024];
  snprintf(want, sizeof want, "%s:1:69: error: use of undeclared identifier 'FACTOR'", src);
  cr_assert(strstr(out, want), "%s", out);
  snprintf(want, sizeof want, "hsad compile: %s: compilation for gfx906 failed\n", src);
  cr_assert(strstr(out, want), "%s", out);
  /* comgr's INVALID_ARGUMENT named: an unknown processor (the list is Debian 12's comgr 2.4)
   * and an empty source file */
  snprintf(args, sizeof args, "compile %s --target gfx9999 -o %s", src, obj);
  cr_assert_eq(run(args, out, sizeof out), 1);
  snprintf(want, sizeof want, "hsad compile: %s: target processor 'gfx9999' is unknown to comgr; "
           "it compiles for gfx600, gfx601, gfx602, gfx700, gfx701, gfx702, gfx703, gfx704, "
           "gfx705, gfx801, gfx802, gfx803, gfx805, gfx810, gfx900, gfx902, gfx904, gfx906, "
           "gfx908, gfx909, gfx90a, gfx90c, gfx1010, gfx1011, gfx1012, gfx1013, gfx1030, gfx1031, "
           "gfx1032, gfx1033, gfx1034, gfx1035, gfx1036\n", src);
  cr_assert_str_eq(out, want);
  f = fopen(src, "w");
  fclose(f);
  snprintf(args, sizeof args, "compile %s --target gfx90a -o %s", src, obj);
  cr_assert_eq(run(args, out, sizeof out), 1);
  snprintf(want, sizeof want, "hsad compile: %s: empty source (0 bytes): nothing to compile\n",
           src);
  cr_assert_str_eq(out, want);
  cr_assert_eq(run("compile x.cl -o y", out, sizeof out), 2);
  cr_assert_str_eq(out, "hsad compile: --target is required (see hsad compile --help)\n");
  cr_assert_eq(run("compile x.cl --target gfx90a -O7 -o y", out, sizeof out), 2);
  unlink(src);
  unlink(obj);
  rmdir(dir);
}

Test(codeobj_cli, inspect_fatbin_target_every_bundle) {
  static char out[4096];
  cr_assert_eq(run("inspect --target gfx906 " FIX("hip_multi.so"), out, sizeof out), 0, "%s", out);
  cr_assert_str_eq(out,
      "[bundle 0: hipv4-amdgcn-amd-amdhsa--gfx906]  amdgcn-amd-amdhsa--gfx906  code object v4  "
      "1 kernels\n"
      "  kernel        VGPR  AGPR  SGPR   spill  scratch    LDS kernarg wave  maxWG  "
      "waves/SIMD@block limiter\n"
      "  _Z5scalePffi     3     0    11     0/0        0      0      16   64   1024  10@256 waves\n"
      "\n"
      "[bundle 1: hipv4-amdgcn-amd-amdhsa--gfx906]  amdgcn-amd-amdhsa--gfx906  code object v4  "
      "1 kernels\n"
      "  kernel        VGPR  AGPR  SGPR   spill  scratch    LDS kernarg wave  maxWG  "
      "waves/SIMD@block limiter\n"
      "  _Z6offsetPii     2     0     6     0/0        0      0      12   64   1024  10@256 waves\n");
}

/* Issue 10: inspect refuses a relocatable object with the same words as the library. */
Test(codeobj_cli, inspect_relocatable_object) {
  static char out[4096];
  cr_assert_eq(run("inspect " FIX("kernels-gfx90a.o"), out, sizeof out), 1, "%s", out);
  cr_assert_str_eq(out, "hsad inspect: " FIX("kernels-gfx90a.o") ": relocatable object (ET_REL, "
                        "e.g. from clang -c): kernel entry offsets are unresolved relocations; "
                        "link it into a code object first: ld.lld-15 -shared OBJ.o -o "
                        "OBJ.hsaco\n");
}

/* Issue 10: --target gfx90a on a bundle with xnack+ (first) and xnack- entries picks what a
 * gfx90a device with xnack off loads, and says so. */
Test(codeobj_cli, inspect_target_without_xnack_picks_xnack_off) {
  static char out[8192];
  cr_assert_eq(run("inspect --target gfx90a --kernel vadd " FIX("xnack.bundle"), out, sizeof out),
               0, "%s", out);
  cr_assert_str_eq(out,
      "--target gfx90a: picked the gfx90a:xnack- entries, as a gfx90a device with xnack off "
      "(the default) loads them; the file also has xnack+ entries\n"
      "\n"
      "[hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-]  amdgcn-amd-amdhsa--gfx90a:xnack-  code object v4  "
      "8 kernels\n"
      "  kernel  VGPR  AGPR  SGPR   spill  scratch    LDS kernarg wave  maxWG  "
      "waves/SIMD@block limiter\n"
      "  vadd       6     0    11     0/0        0      0      28   64    256  8@256 waves\n");
  cr_assert_eq(run("inspect --json --target gfx90a --kernel vadd " FIX("xnack.bundle"), out, sizeof out), 0);
  cr_assert(strstr(out, "[ { \"entry_id\": \"hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-\", "
                        "\"bundle_index\": 0, \"offset\": "),
            "%s", out);
  cr_assert(strstr(out, ", \"selected_for\": \"gfx90a:xnack-\", \"target\": "
                        "\"amdgcn-amd-amdhsa--gfx90a:xnack-\""),
            "%s", out);
  /* an explicit xnack+ is honoured */
  cr_assert_eq(run("inspect --target gfx90a:xnack+ --kernel vadd " FIX("xnack.bundle"), out,
                   sizeof out), 0);
  cr_assert(!strncmp(out, "[hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+]  ", 42), "%s", out);
}

/* Issue 10: compressed bundles in a .hip_fatbin, and a partial hidden block, as inspect shows
 * them. */
Test(codeobj_cli, inspect_compressed_fatbin_and_partial_hidden) {
  static char out[16384];
  cr_assert_eq(run("inspect --target gfx90a " FIX("ccob_multi.o"), out, sizeof out), 0, "%s",
               out);
  cr_assert(strstr(out, "[bundle 0 (compressed: CCOB v2 zlib): hipv4-amdgcn-amd-amdhsa--gfx90a]  "
                        "amdgcn-amd-amdhsa--gfx90a  code object v5  8 kernels\n"),
            "%s", out);
  cr_assert(strstr(out, "\n[bundle 1 (compressed: CCOB v3 zstd): hipv4-amdgcn-amd-amdhsa--gfx90a]"
                        "  amdgcn-amd-amdhsa--gfx90a  code object v4  1 kernels\n"),
            "%s", out);
  cr_assert(strstr(out, "\n[bundle 2: hipv4-amdgcn-amd-amdhsa-unknown-gfx90a]  "
                        "amdgcn-amd-amdhsa--gfx90a  code object v5  1 kernels\n"),
            "%s", out);
  cr_assert(strstr(out, "  hw_implicit24     1     0     2     0/0        0      0      40   64"
                        "    256  8@256 waves  (4 hidden args past the kernarg segment: "
                        "absent)\n"),
            "%s", out);
}

/* Issue 9: hsad inspect --pressure, table (sizes 64..256 up to .max_flat_workgroup_size) and
 * JSON (--block N alone). Figures as in test_codeobj_occupancy's pressure_report_per_isa. */
Test(codeobj_cli, inspect_pressure_table_and_json) {
  static char out[16384];
  cr_assert_eq(run("inspect --pressure " FIX("pressure-spill-gfx906.hsaco"), out, sizeof out), 0,
               "%s", out);
  cr_assert_str_eq(out,
      "  amdgcn-amd-amdhsa--gfx906  code object v5  2 kernels\n"
      "  kernel block  VGPR  AGPR  SGPR   spill  scr/item  scr/wave    LDS w/SIMD WG/CU limiter"
      "    next cliff          block cost\n"
      "  hog       64    32     0    14   218/0      396      25344      0      8    32 vgpr   "
      "    -4 VGPRs: 9 waves   0% (best)\n"
      "  hog      128    32     0    14   218/0      396      25344      0      8    16 vgpr   "
      "    none                0% (best)\n"
      "  hog      256    32     0    14   218/0      396      25344      0      8     8 vgpr   "
      "    -4 VGPRs: 9 waves   0% (best)\n"
      "  light     64     2     0     6     0/0        0          0      0     10    40 waves  "
      "    none                0% (best)\n"
      "  light    128     2     0     6     0/0        0          0      0      8    16 workgro"
      "ups none                20% (best 64)\n"
      "  light    256     2     0     6     0/0        0          0      0     10    10 waves  "
      "    none                0% (best)\n");
  cr_assert_eq(run("inspect --pressure --json --block 256 --kernel hog "
                   FIX("pressure-gfx90a.hsaco"), out, sizeof out), 0, "%s", out);
  cr_assert_str_eq(out,
      "{ \"target\": \"amdgcn-amd-amdhsa--gfx90a\", \"code_object_version\": 5, \"kernels\": [ "
      "{ \"name\": \"hog\", \"symbol\": \"hog.kd\", \"wavefront_size\": 64, "
      "\"max_flat_workgroup_size\": 256, \"pressure\": [ { \"workgroup_size\": 256, "
      "\"vgpr_count\": 118, \"agpr_count\": 0, \"sgpr_count\": 9, \"vgpr_spill_count\": 0, "
      "\"sgpr_spill_count\": 0, \"scratch_per_work_item\": 0, \"scratch_per_wave\": 0, "
      "\"dynamic_stack\": false, \"lds_per_workgroup\": 0, \"waves_per_simd\": 4, "
      "\"waves_per_cu\": 16, \"workgroups_per_cu\": 4, \"wgp_mode\": false, \"limiter\": "
      "\"vgpr\", \"vgprs_counted\": 118, \"vgprs_allocated\": 120, \"next_cliff\": "
      "{ \"vgprs_fewer\": 22, \"waves_per_simd\": 5 }, \"work_items_per_cu\": 1024, "
      "\"best_workgroup_size\": 64, \"best_work_items_per_cu\": 1024, "
      "\"block_cost_percent\": 0 } ] } ] }\n");
}

/* Options through getopt_long: `--opt=value` and `--opt value` alike, clear errors. */
Test(codeobj_cli, getopt_forms_and_errors) {
  static char out[8192], out2[8192];
  cr_assert_eq(run("inspect --block=128 --kernel=vadd " FIX("kernels-gfx906-v4.hsaco"), out,
                   sizeof out), 0, "%s", out);
  cr_assert_eq(run("inspect " FIX("kernels-gfx906-v4.hsaco") " --kernel vadd --block 128", out2,
                   sizeof out2), 0, "%s", out2);
  cr_assert_str_eq(out, out2);
  cr_assert(strstr(out, "  vadd       8     0    11     0/0        0      0      28   64    256  "
                        "8@128 workgroups\n"),
            "%s", out);
  cr_assert_eq(run("inspect x --block", out, sizeof out), 2);
  cr_assert_str_eq(out, "hsad inspect: option '--block' needs a value (see hsad inspect --help)\n");
  cr_assert_eq(run("inspect --block=0 x", out, sizeof out), 2);
  cr_assert_str_eq(out, "hsad inspect: --block 0: expected a positive integer\n");
  cr_assert_eq(run("inspect --bogus x", out, sizeof out), 2);
  cr_assert_str_eq(out, "hsad inspect: unknown option '--bogus' (see hsad inspect --help)\n");
  cr_assert_eq(run("inspect a b", out, sizeof out), 2);
  cr_assert_str_eq(out, "hsad inspect: one FILE only (got a and b)\n");
  cr_assert_eq(run("compile x.cl --target gfx90a -o", out, sizeof out), 2);
  cr_assert_str_eq(out, "hsad compile: option '-o' needs a value (see hsad compile --help)\n");
  /* as every command says it: one line, no usage dump */
  cr_assert_eq(run("compile --bogus x.cl", out, sizeof out), 2);
  cr_assert_str_eq(out, "hsad compile: unknown option '--bogus' (see hsad compile --help)\n");
  cr_assert_eq(run("compile x.cl --target=gfx90a --max-waves=2 -o y", out, sizeof out), 2);
  cr_assert_str_eq(out, "hsad compile: unknown option '--max-waves' (see hsad compile --help)\n");
  cr_assert_eq(run("compile -Q x.cl", out, sizeof out), 2);
  cr_assert_str_eq(out, "hsad compile: unknown option '-Q' (see hsad compile --help)\n");
  cr_assert_eq(run("compile --target gfx90a -o y", out, sizeof out), 2);
  cr_assert_str_eq(out, "hsad compile: SRC is required (see hsad compile --help)\n");
  cr_assert_eq(run("compile x.cl -o y", out, sizeof out), 2);
  cr_assert_str_eq(out, "hsad compile: --target is required (see hsad compile --help)\n");
  cr_assert_eq(run("compile x.cl --target=gfx90a --waves-per-eu=0 -o y", out, sizeof out), 2);
  cr_assert_str_eq(out, "hsad compile: --waves-per-eu 0: expected an integer from 1 to 20\n");
  cr_assert_eq(run("compile x.cl --target gfx90a --max-workgroup-size 2048 -o y", out,
                   sizeof out), 2);
  cr_assert_str_eq(out, "hsad compile: --max-workgroup-size 2048: expected an integer from 1 "
                        "to 1024\n");
  cr_assert_eq(run("compile x.cl --target gfx90a -O7 -o y", out, sizeof out), 2);
  cr_assert_str_eq(out, "hsad compile: -O7: expected -O0, -O1, -O2 or -O3\n");
}

/* hsad compile --max-workgroup-size / --waves-per-eu: the budget reaches every kernel of the
 * unchanged source (pressure.cl on gfx906: hog 114 -> 64 VGPRs, spilling, at 4 waves). */
Test(codeobj_cli, compile_with_budget, .timeout = 120) {
  char dir[] = "/tmp/hsad-cli-XXXXXX";
  cr_assert(mkdtemp(dir));
  char args[1024], obj[256];
  snprintf(obj, sizeof obj, "%s/b.hsaco", dir);
  static char out[8192];
  snprintf(args, sizeof args,
           "compile %s/pressure.cl --target=gfx906 --max-workgroup-size 1024 --waves-per-eu=4 "
           "-o %s", CO_SRCDIR, obj);
  cr_assert_eq(run(args, out, sizeof out), 0, "%s", out);
  snprintf(args, sizeof args, "inspect --kernel hog --block 1024 %s", obj);
  cr_assert_eq(run(args, out, sizeof out), 0, "%s", out);
  cr_assert(strstr(out, "\n! hog       64     0    14   150/0      316      0      12   64   1024 "
                        " 4@1024 vgpr\n"),
            "%s", out);
  unlink(obj);
  rmdir(dir);
}
