/* test_dispatch_cli.c - the hsad commands of issues 4 and 10 end to end: info, run (comgr
 * source and a code object, outputs, JSON, errors), arguments checked against the metadata,
 * large kernarg segments, raw-bytes and vector scalars, kfd-emu noop runs, HIP partial
 * workgroups, kernel lookup by demangled name, getopt_long and JSON errors. hsad selects kfd-emu
 * itself when there is no /dev/kfd. */
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/test_dispatch_util.h"

#ifndef HSAD_BIN
#define HSAD_BIN "build/bin/hsad"
#endif

/* Runs `cmd` (stderr merged), returns the exit status and the output (malloc'd). */
static int sh(const char *cmd, char **out) {
  char full[4096];
  snprintf(full, sizeof full, "%s 2>&1", cmd);
  FILE *p = popen(full, "r");
  cr_assert_not_null(p);
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  size_t got;
  while ((got = fread(buf + n, 1, cap - n - 1, p)) > 0) {
    n += got;
    if (n + 1 == cap) buf = realloc(buf, cap *= 2);
  }
  buf[n] = '\0';
  int st = pclose(p);
  *out = buf;
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* json-c lookups by a dotted path ("kernel.name", "buffers.0.first"; numbers index arrays) */
static json_object *jget(json_object *j, const char *path) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *save = NULL, *t = strtok_r(buf, ".", &save); t; t = strtok_r(NULL, ".", &save)) {
    json_object *next = NULL;
    if (json_object_is_type(j, json_type_array))
      next = json_object_array_get_idx(j, (size_t)atoi(t));
    else
      json_object_object_get_ex(j, t, &next);
    cr_assert_not_null(next, "no %s in %s", path, json_object_to_json_string(j));
    j = next;
  }
  return j;
}
static const char *jstr(json_object *j, const char *path) {
  return json_object_get_string(jget(j, path));
}
static int64_t jint(json_object *j, const char *path) { return json_object_get_int64(jget(j, path)); }
static const char *jtext(json_object *j, const char *path) {
  return json_object_to_json_string_ext(jget(j, path), JSON_C_TO_STRING_SPACED);
}

Test(dispatch_cli, info_text_and_json, .timeout = 120) {
  char *o;
  cr_assert_eq(sh(HSAD_BIN " info", &o), 0, "%s", o);
  cr_assert(strstr(o, "GPU 0: gfx90a"), "%s", o);
  cr_assert(strstr(o, "ISA amdgcn-amd-amdhsa--gfx90a"), "%s", o);
  cr_assert(strstr(o, "104 CUs x 4 SIMDs, wavefront 64"), "%s", o);
  cr_assert(strstr(o, "LDS 65536 bytes per workgroup"), "%s", o);
  cr_assert(strstr(o, "nearest CPU agent 0 (NUMA node 0)"), "%s", o);
  cr_assert(strstr(o, "CPU agent 0:") && strstr(o, "NUMA node 0"), "%s", o);
  free(o);
  cr_assert_eq(sh("KFD_EMU_GPUS=2 KFD_EMU_CPU_NODES=2 " HSAD_BIN " info --json", &o), 0, "%s", o);
  /* stdout is the JSON object; kfd-emu may note on stderr that the host has one NUMA node */
  json_object *j = json_tokener_parse(strchr(o, '{'));
  cr_assert_not_null(j, "%s", o);
  cr_assert_eq(jint(j, "cpus.1.numa_node"), 1);
  cr_assert_eq(jint(j, "gpus.1.index"), 1);
  cr_assert_str_eq(jstr(j, "gpus.1.name"), "gfx90a");
  cr_assert_eq(jint(j, "gpus.1.nearest_cpu"), 1);
  cr_assert_eq(jint(j, "gpus.1.nearest_cpu_numa_node"), 1);
  cr_assert_eq(jint(j, "gpus.0.lds_bytes"), 65536);
  cr_assert_str_eq(jtext(j, "gpus.0.max_workgroup_dim"), "[ 1024, 1024, 1024 ]");
  json_object_put(j);
  free(o);
  /* getopt_long errors, as text and as JSON */
  cr_assert_eq(sh(HSAD_BIN " info --bogus", &o), 2, "%s", o);
  cr_assert_str_eq(o, "hsad info: unknown option '--bogus' (see hsad info --help)\n");
  free(o);
  cr_assert_eq(sh(HSAD_BIN " info --json --bogus=1", &o), 2, "%s", o);
  cr_assert_str_eq(o, "{ \"error\": { \"command\": \"info\", \"status\": \"usage\", "
                   "\"exit_code\": 2, \"message\": \"unknown option '--bogus' (see hsad info "
                   "--help)\" } }\n");
  free(o);  /* a setting kfd-emu refuses: its reason on stderr (first) and in the JSON error's message */
#define GPSS_WHY "KFD_EMU_GPSS: unknown kfd-emu variable (known: KFD_EMU_GPUS, KFD_EMU_ISA, "    \
  "KFD_EMU_VRAM_MB, KFD_EMU_CPU_NODES, KFD_EMU_GPU_NUMA, KFD_EMU_NO_TWIN, KFD_EMU_ORDER, "        \
  "KFD_EMU_TWINS, KFD_EMU_FAULT_KERNEL, KFD_EMU_DELAY_US, KFD_EMU_DELAY_KERNEL, "                 \
  "KFD_EMU_CP_STALL_MS, KFD_EMU_PREEMPT_TIMEOUT_MS, KFD_EMU_DOORBELL_GRACE_MS, "                 \
  "KFD_EMU_READ_INDEX, KFD_EMU_ACCESS, "                                                        \
  "KFD_EMU_PUBLICATION_CHECK_US, KFD_EMU_RING_WATCH, KFD_EMU_VERBOSE, KFD_EMU_CL_SOURCE, "  \
  "KFD_EMU_KERNEL_MODE)"
#define OUT_OF_RESOURCES "HSA status 0x1008 (HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime "     \
  "failed to allocate the necessary resources. This error may also occur when the core runtime " \
  "library needs to spawn threads or create internal OS-specific events.)"
  cr_assert_eq(sh("KFD_EMU_GPSS=1 " HSAD_BIN " info --json", &o), 1, "%s", o);
  cr_assert_str_eq(o, "kfd-emu: " GPSS_WHY "\n{ \"error\": { \"command\": \"info\", "
                   "\"status\": \"HSAD_ERR_HSA\", \"exit_code\": 1, \"message\": \"HSAD_ERR_HSA: "
                   "hsa_init on kfd-emu (kfd-emu refused its configuration: " GPSS_WHY "): "
                   OUT_OF_RESOURCES "\" } }\n");
  free(o);
  cr_assert_eq(sh("KFD_EMU_GPUS=0 " HSAD_BIN " info", &o), 1, "%s", o);
  cr_assert_str_eq(o, "kfd-emu: KFD_EMU_GPUS=0: expected an integer in [1, 8]\nhsad info: "
                   "HSAD_ERR_HSA: hsa_init on kfd-emu (kfd-emu refused its configuration: "
                   "KFD_EMU_GPUS=0: expected an integer in [1, 8]): " OUT_OF_RESOURCES "\n");
  free(o);
#undef GPSS_WHY
#undef OUT_OF_RESOURCES
}

/* README: "With --json every command prints one JSON object, also on failure": graph and
 * compile too, an unknown command with --json, and run --help's description of the error. */
Test(dispatch_cli, json_from_every_command, .timeout = 120) {
  char *o, cmd[2048];
  cr_assert_eq(sh(HSAD_BIN " bogus --json", &o), 2, "%s", o);
  cr_assert_str_eq(o, "{ \"error\": { \"command\": \"bogus\", \"status\": \"usage\", \"exit_code\": "
                      "2, \"message\": \"unknown command 'bogus' (commands: info, inspect, compile, "
                      "run, bench, graph)\" } }\n");
  free(o);
  char tmp[] = "/tmp/hsad-cli-XXXXXX";
  cr_assert_not_null(mkdtemp(tmp));
  snprintf(cmd, sizeof cmd, "cd %s && %s compile kernels/saxpy.cl --target gfx90a -o %s/s.hsaco "
           "--json", HSAD_SRCDIR, HSAD_BIN, tmp);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  struct stat st;
  char path[256];
  snprintf(path, sizeof path, "%s/s.hsaco", tmp);
  cr_assert_eq(stat(path, &st), 0);
  char want[2048];
  snprintf(want, sizeof want, "{ \"compile\": { \"source\": \"kernels/saxpy.cl\", \"target\": "
           "\"gfx90a\", \"output\": \"%s\", \"bytes\": %lld, \"kernels\": [ \"saxpy\" ], "
           "\"warnings\": [ ] } }\n",
           path, (long long)st.st_size);
  cr_assert_str_eq(o, want);
  free(o);
  cr_assert_eq(sh(HSAD_BIN " compile x.cl -o y --json", &o), 2, "%s", o);
  cr_assert_str_eq(o, "{ \"error\": { \"command\": \"compile\", \"status\": \"usage\", "
                      "\"exit_code\": 2, \"message\": \"--target is required (see hsad compile "
                      "--help)\" } }\n");
  free(o);
  snprintf(cmd, sizeof cmd, "cd %s && %s graph examples/saxpy-pipeline.json --launches 3 --json "
           "2>/dev/null", HSAD_SRCDIR, HSAD_BIN);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  json_object *j = json_tokener_parse(o);
  cr_assert_not_null(j, "%s", o);
  cr_assert_str_eq(jstr(j, "graph.file"), "examples/saxpy-pipeline.json");
  cr_assert_eq(jint(j, "graph.nodes"), 3);
  cr_assert_eq(jint(j, "graph.queues"), 2);
  cr_assert_eq(jint(j, "graph.launches"), 3);
  cr_assert_str_eq(jstr(j, "graph.path"), "fused");
  cr_assert_str_eq(jtext(j, "graph.fused"), "true");
  cr_assert_str_eq(jtext(j, "graph.queue_packets"), "[ 3, 1 ]");
  cr_assert_str_eq(jtext(j, "graph.paths"), "{ \"fused\": 3 }");
  cr_assert_str_eq(jtext(j, "graph.checks"), "[ { \"buffer\": \"out\", \"elements\": 5 }, "
                                             "{ \"buffer\": \"y\", \"elements\": 4 } ]");
  cr_assert(jget(j, "graph.host_submit_us.median") && jget(j, "graph.submit_wait_us.min"));
  json_object_put(j);
  free(o);
  snprintf(cmd, sizeof cmd, "%s graph %s/none.json --json", HSAD_BIN, tmp);
  cr_assert_eq(sh(cmd, &o), 1, "%s", o);
  j = json_tokener_parse(o);
  cr_assert_not_null(j, "%s", o);
  cr_assert_str_eq(jstr(j, "error.command"), "graph");
  cr_assert_str_eq(jstr(j, "error.status"), "error");
  cr_assert_eq(jint(j, "error.exit_code"), 1);
  json_object_put(j);
  free(o);
  cr_assert_eq(sh(HSAD_BIN " run --help", &o), 0, "%s", o);
  cr_assert(strstr(o, "\n--json       one JSON object on stdout, also for errors: {\"error\": "
                      "{\"command\", \"status\",\n             \"exit_code\", \"message\"}} "
                      "(status: an HSAD_ERR_* name, \"usage\" or \"error\")\n"), "%s", o);
  free(o);
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  cr_assert_eq(system(cmd), 0);
}

/* out=FILE and txt=FILE that cannot be written in full (/dev/full: every flush fails with ENOSPC)
 * are errors with exit status 1, not "written to"; the bytes are buffered, so only fclose sees it. */
Test(dispatch_cli, run_output_write_error, .timeout = 120) {
  char *o, cmd[2048];
  static const char *const opt[] = {"out=/dev/full", "txt=/dev/full"};
  for (int i = 0; i < 2; i++) {
    snprintf(cmd, sizeof cmd, "cd %s && ( %s run kernels/saxpy.cl saxpy --grid 10 --arg f32:2 "
             "--arg buf:f32:10:iota --arg buf:f32:10:%s --arg u32:10 2>&1 >/dev/null )",
             HSAD_SRCDIR, HSAD_BIN, opt[i]);
    cr_assert_eq(sh(cmd, &o), 1, "%s: %s", opt[i], o);
    cr_assert_str_eq(o, "hsad run: /dev/full: No space left on device\n", "%s", opt[i]);
    free(o);
  }
}

/* Two outputs naming one file, or an output naming the input, are refused before anything runs
 * (exit 2, nothing written): the later write silently replaced the earlier one (out= of two
 * buffers, out= and txt= of one), and txt=SOURCE overwrote the kernel's source (found by a
 * fresh-eyes run). */
Test(dispatch_cli, run_outputs_share_no_file, .timeout = 120) {
  char tmp[] = "/tmp/hsad-outs-XXXXXX", cmd[4096], want[2048], *o;
  cr_assert_not_null(mkdtemp(tmp));
  snprintf(cmd, sizeof cmd, "cp %s/kernels/saxpy.cl %s/k.cl", HSAD_SRCDIR, tmp);
  cr_assert_eq(system(cmd), 0);
  static const struct {
    const char *x, *y, *trace, *msg;
  } rows[] = {
      {"iota:out=%1$s/a.bin", "out=%1$s/a.bin", "",
       "--arg buf:f32:10:out=%1$s/a.bin: out=%1$s/a.bin is also the out= of --arg "
       "buf:f32:10:iota:out=%1$s/a.bin: give each output a file of its own (the later write "
       "would replace the earlier)"},
      {"iota", "out=%1$s/b.bin:txt=%1$s/b.bin", "",
       "--arg buf:f32:10:out=%1$s/b.bin:txt=%1$s/b.bin: txt=%1$s/b.bin is also the out= of --arg "
       "buf:f32:10:out=%1$s/b.bin:txt=%1$s/b.bin: give each output a file of its own (the later "
       "write would replace the earlier)"},
      {"iota:txt=%1$s/k.cl", "out", "",
       "--arg buf:f32:10:iota:txt=%1$s/k.cl: txt=%1$s/k.cl is the input %1$s/k.cl: refusing to "
       "overwrite it"},
      {"iota:out=%1$s/t.json", "out", " --trace %1$s/t.json",
       "--trace %1$s/t.json is also the out= of --arg buf:f32:10:iota:out=%1$s/t.json: give "
       "each output a file of its own (the later write would replace the earlier)"},
      {"iota", "out", "", ""}, /* --trace naming k.cl by another path: set below */
  };
  for (int i = 0; i < 5; i++) {
    char x[512], y[512], tr[512], m[1536];
    snprintf(x, sizeof x, rows[i].x, tmp);
    snprintf(y, sizeof y, rows[i].y, tmp);
    snprintf(tr, sizeof tr, rows[i].trace, tmp);
    snprintf(m, sizeof m, rows[i].msg, tmp);
    if (i == 4) { /* the same file under another spelling: found by its inode */
      snprintf(tr, sizeof tr, " --trace %s/../%s/k.cl", tmp, tmp + 5);
      snprintf(m, sizeof m, "--trace %s/../%s/k.cl is the input %s/k.cl: refusing to overwrite "
               "it", tmp, tmp + 5, tmp);
    }
    snprintf(cmd, sizeof cmd, "%s run %s/k.cl saxpy --grid 10 --arg f32:2 --arg buf:f32:10:%s "
             "--arg buf:f32:10:%s --arg u32:10%s", HSAD_BIN, tmp, x, y, tr);
    cr_assert_eq(sh(cmd, &o), 2, "row %d: %s", i, o);
    snprintf(want, sizeof want, "hsad run: %s\n", m);
    cr_assert_str_eq(o, want, "row %d", i);
    free(o);
  }
  /* nothing was written; the source is intact */
  snprintf(cmd, sizeof cmd, "cd %s && ls && cmp k.cl %s/kernels/saxpy.cl", tmp, HSAD_SRCDIR);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert_str_eq(o, "k.cl\n");
  free(o);
  snprintf(cmd, sizeof cmd, "rm -r %s", tmp);
  cr_assert_eq(system(cmd), 0);
}

/* Outputs that do not exist yet are compared by their resolved names (the directory resolved +
 * the file name): a.bin, ./a.bin, sub/../a.bin and link/a.bin (link -> .) are one file, refused
 * before anything runs as two existing names of one inode are; sub/a.bin is another file. */
Test(dispatch_cli, run_outputs_share_no_new_file, .timeout = 120) {
  char tmp[] = "/tmp/hsad-outs-XXXXXX", cmd[4096], want[2048], *o;
  cr_assert_not_null(mkdtemp(tmp));
  snprintf(cmd, sizeof cmd, "cd %s && cp %s/kernels/saxpy.cl k.cl && mkdir sub && ln -s . link",
           tmp, HSAD_SRCDIR);
  cr_assert_eq(system(cmd), 0);
  static const struct {
    const char *x, *y, *trace, *msg;
  } rows[] = {
      {"iota:out=a.bin", "out=./a.bin", "",
       "--arg buf:f32:10:out=./a.bin: out=./a.bin is also the out= of --arg "
       "buf:f32:10:iota:out=a.bin: give each output a file of its own (the later write would "
       "replace the earlier)"},
      {"iota:txt=a.bin", "out=sub/../a.bin", "",
       "--arg buf:f32:10:out=sub/../a.bin: out=sub/../a.bin is also the txt= of --arg "
       "buf:f32:10:iota:txt=a.bin: give each output a file of its own (the later write would "
       "replace the earlier)"},
      {"iota:out=link/a.bin", "out", " --trace ./sub/../a.bin",
       "--trace ./sub/../a.bin is also the out= of --arg buf:f32:10:iota:out=link/a.bin: give "
       "each output a file of its own (the later write would replace the earlier)"},
  };
  for (int i = 0; i < 3; i++) {
    snprintf(cmd, sizeof cmd, "cd %s && %s run k.cl saxpy --grid 10 --arg f32:2 --arg "
             "buf:f32:10:%s --arg buf:f32:10:%s --arg u32:10%s", tmp, HSAD_BIN, rows[i].x,
             rows[i].y, rows[i].trace);
    cr_assert_eq(sh(cmd, &o), 2, "row %d: %s", i, o);
    snprintf(want, sizeof want, "hsad run: %s\n", rows[i].msg);
    cr_assert_str_eq(o, want, "row %d", i);
    free(o);
  }
  /* nothing was written */
  snprintf(cmd, sizeof cmd, "cd %s && ls . sub", tmp);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert_str_eq(o, ".:\nk.cl\nlink\nsub\n\nsub:\n");
  free(o);
  /* sub/a.bin and a.bin are two files: both written (x = 0..9, y = 2x) */
  snprintf(cmd, sizeof cmd, "cd %s && %s run k.cl saxpy --grid 10 --arg f32:2 --arg "
           "buf:f32:10:iota:out=a.bin --arg buf:f32:10:out=sub/a.bin --arg u32:10 >/dev/null && "
           "od -An -tf4 -w40 a.bin sub/a.bin | tr -s ' '", tmp, HSAD_BIN);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert_str_eq(o, " 0 1 2 3 4 5 6 7 8 9\n 0 2 4 6 8 10 12 14 16 18\n");
  free(o);
  snprintf(cmd, sizeof cmd, "rm -r %s", tmp);
  cr_assert_eq(system(cmd), 0);
}

/* Every output (out=, txt=, --trace) is checked before anything runs (exit 2, the one line: no
 * compile, no device line), as file= inputs are: a missing directory, a path through a file, a
 * directory named as the file; a check that creates a file removes it, so a later refusal leaves
 * nothing (before: the kernel ran and the write failed after it, exit 1). */
Test(dispatch_cli, run_outputs_writable_before_run, .timeout = 120) {
  char tmp[] = "/tmp/hsad-outs-XXXXXX", cmd[4096], want[2048], *o;
  cr_assert_not_null(mkdtemp(tmp));
  snprintf(cmd, sizeof cmd, "cd %s && cp %s/kernels/saxpy.cl k.cl", tmp, HSAD_SRCDIR);
  cr_assert_eq(system(cmd), 0);
  static const struct {
    const char *y, *trace, *msg;
  } rows[] = {
      {"out=/nonexistent-dir/x.bin", "",
       "--arg buf:f32:10:out=/nonexistent-dir/x.bin: out=/nonexistent-dir/x.bin: cannot create "
       "it: No such file or directory"},
      {"txt=none/x.txt", "",
       "--arg buf:f32:10:txt=none/x.txt: txt=none/x.txt: cannot create it: No such file or "
       "directory"},
      {"out", " --trace k.cl/t.json", "--trace k.cl/t.json: cannot create it: Not a directory"},
      {"out=.", "", "--arg buf:f32:10:out=.: out=. is a directory, not a file"},
      {"out=ok.bin:txt=ok.txt", " --trace none/t.json",
       "--trace none/t.json: cannot create it: No such file or directory"},
  };
  for (int i = 0; i < 5; i++) {
    snprintf(cmd, sizeof cmd, "cd %s && %s run k.cl saxpy --grid 10 --arg f32:2 --arg "
             "buf:f32:10:iota --arg buf:f32:10:%s --arg u32:10%s", tmp, HSAD_BIN, rows[i].y,
             rows[i].trace);
    cr_assert_eq(sh(cmd, &o), 2, "row %d: %s", i, o);
    snprintf(want, sizeof want, "hsad run: %s\n", rows[i].msg);
    cr_assert_str_eq(o, want, "row %d", i);
    free(o);
  }
  /* ok.bin and ok.txt, checked before the trace was refused, are not left behind */
  snprintf(cmd, sizeof cmd, "cd %s && ls", tmp);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert_str_eq(o, "k.cl\n");
  free(o);
  /* a dangling symbolic link passes (the write follows it and creates its target) */
  snprintf(cmd, sizeof cmd, "cd %s && ln -s t.bin dl && %s run k.cl saxpy --grid 10 --arg f32:2 "
           "--arg buf:f32:10:iota --arg buf:f32:10:out=dl --arg u32:10 >/dev/null && od -An -tf4 "
           "-w40 t.bin | tr -s ' '", tmp, HSAD_BIN);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert_str_eq(o, " 0 2 4 6 8 10 12 14 16 18\n");
  free(o);
  snprintf(cmd, sizeof cmd, "rm -r %s", tmp);
  cr_assert_eq(system(cmd), 0);
}

/* Every "0x<hex>" of s replaced by "0x?" (addresses differ from run to run), in place. */
static void mask_hex(char *s) {
  char *w = s;
  for (const char *p = s; *p;) {
    if (p[0] == '0' && p[1] == 'x' && p[2] && strchr("0123456789abcdef", p[2])) {
      for (p += 2; *p && strchr("0123456789abcdef", *p); p++) {} /* read past before writing */
      *w++ = '0', *w++ = 'x', *w++ = '?';
    } else {
      *w++ = *p++;
    }
  }
  *w = '\0';
}

/* saxpy with n = 2^20 on buffers of 4 floats: every access past element 3 is outside them. */
#define SAXPY_OOB " run kernels/saxpy.cl saxpy --grid 1048576 --block 256 --arg f32:2 --arg " \
  "buf:f32:4:iota --arg buf:f32:4:out --arg u32:1048576"

/* A kernel run from its OpenCL C source (POCL under kfd-emu) that accesses memory outside its
 * buffers: kfd-emu cannot trap it (POCL's threads), so hsad dies by SIGSEGV as before, but first
 * says so on stderr (tools/hsad/run_fault.h): the kernel, the fault address (outside both
 * buffers), the buffers, what a GPU does. No core file (ulimit -c 0). */
Test(dispatch_cli, run_source_kernel_fault_named, .timeout = 120) {
  char tmp[] = "/tmp/hsad-fault-XXXXXX", cmd[4096], path[256], *o;
  cr_assert_not_null(mkdtemp(tmp));
  snprintf(path, sizeof path, "%s/stderr", tmp);
  snprintf(cmd, sizeof cmd, "cd %s && ulimit -c 0 && KFD_EMU_KERNEL_MODE=source exec %s" SAXPY_OOB
           " >/dev/null 2>%s", HSAD_SRCDIR, HSAD_BIN, path);
  int st = system(cmd);
#ifdef __SANITIZE_ADDRESS__ /* ASan's SIGSEGV handler, installed first, reports and exits */
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st), "wait status %#x", st);
#else
  cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "wait status %#x", st);
#endif
  snprintf(cmd, sizeof cmd, "cat %s && rm -r %s", path, tmp);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  unsigned long long fault, x, y;
  cr_assert_eq(sscanf(o, "hsad run: kernel saxpy faulted at address %llx on a host thread: kfd-emu "
                      "runs it from its OpenCL C source on POCL's threads, where it cannot trap "
                      "faults, so an access outside the kernel's buffers (arg 1 (buf:f32:4:iota) "
                      "%llx, 16 B; arg 2 (buf:f32:4:out) %llx", &fault, &x, &y), 3, "%s", o);
  cr_assert(!(fault >= x && fault < x + 16) && !(fault >= y && fault < y + 16),
            "fault %#llx inside x %#llx or y %#llx", fault, x, y);
  mask_hex(o);
#ifdef __SANITIZE_ADDRESS__
  strchr(o, '\n')[1] = '\0'; /* ASan's report follows the line */
#endif
  cr_assert_str_eq(o, "hsad run: kernel saxpy faulted at address 0x? on a host thread: kfd-emu "
                   "runs it from its OpenCL C source on POCL's threads, where it cannot trap "
                   "faults, so an access outside the kernel's buffers (arg 1 (buf:f32:4:iota) "
                   "0x?, 16 B; arg 2 (buf:f32:4:out) 0x?, 16 B) ends hsad by the signal; on a GPU "
                   "it is a memory fault that the queue reports as HSAD_ERR_QUEUE_ERROR "
                   "(KFD_EMU_KERNEL_MODE=twin runs the kernel's host twin, if it has one, whose "
                   "faults are queue errors)\n");
  free(o);
}

/* The same kernel run by its host twin (KFD_EMU_KERNEL_MODE=twin): kfd-emu checks the twin's
 * ranges (and traps its faults), so the access is the queue error a GPU's memory fault is:
 * exit 1, HSAD_ERR_QUEUE_ERROR with the HSA status, kfd-emu naming the kernel and workgroup
 * (the first outside depends on where the buffers lie in kfd-emu's memory). */
Test(dispatch_cli, run_twin_kernel_fault_is_queue_error, .timeout = 120) {
  char cmd[2048], *o;
  snprintf(cmd, sizeof cmd, "cd %s && ( KFD_EMU_KERNEL_MODE=twin %s" SAXPY_OOB " >/dev/null )",
           HSAD_SRCDIR, HSAD_BIN);
  cr_assert_eq(sh(cmd, &o), 1, "%s", o);
  static const char head[] = "hsad run: warning: ran host twin of 'saxpy' (KFD_EMU_KERNEL_MODE=twin; "
                             "it has source)\nkfd-emu: GPU 0 queue 1: kernel saxpy: memory "
                             "violation in workgroup (";
  static const char tail[] = ",0,0)\nhsad run: HSAD_ERR_QUEUE_ERROR: queue 1 on device 0 "
      "(gfx90a:sramecc+:xnack-) faulted: HSA status 0x29 (HSA_STATUS_ERROR_MEMORY_APERTURE_"
      "VIOLATION: The agent attempted to access memory beyond the largest legal address.)\n";
  cr_assert(!strncmp(o, head, strlen(head)), "%s", o);
  char *end;
  unsigned long wg = strtoul(o + strlen(head), &end, 10);
  cr_assert(end > o + strlen(head) && wg < 4096, "%s", o);
  cr_assert_str_eq(end, tail);
  free(o);
}

/* CUDA input on an AMD device is named as such: a .cu source mirrors the NVIDIA side's message
 * for .cl/.hip ("neither an ELF file nor a clang offload bundle" before), a cubin is the
 * library's message (codeobj_errors/nvidia_files_named) (found by a fresh-eyes run). */
Test(dispatch_cli, run_cuda_input_on_amd_device, .timeout = 120) {
  char cmd[2048], *o;
  snprintf(cmd, sizeof cmd, "cd %s && %s run examples/nv_saxpy.cu saxpy --grid 4", HSAD_SRCDIR,
           HSAD_BIN);
  cr_assert_eq(sh(cmd, &o), 1, "%s", o);
  cr_assert_str_eq(o, "hsad run: examples/nv_saxpy.cu: device 0, kfd-emu gfx90a (gfx90a), is an "
                      "AMD GPU: give an OpenCL C (.cl) or HIP (.hip) source or a code object (CUDA "
                      "sources are NVIDIA's: --device N of an NVIDIA GPU)\n");
  free(o);
  snprintf(cmd, sizeof cmd, "cd %s && %s run tests/data/nvidia/byval.sm_90.cubin saxpy --grid 4",
           HSAD_SRCDIR, HSAD_BIN);
  cr_assert_eq(sh(cmd, &o), 1, "%s", o);
  cr_assert_str_eq(o, "hsad run: HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND: tests/data/nvidia/byval.sm_90."
                      "cubin: an NVIDIA cubin (ELF e_machine 190, EM_CUDA), not an AMD code "
                      "object: an NVIDIA device loads it\n");
  free(o);
}

/* Integers are decimal or 0x hex, never octal: u32:010 is ten elements (saxpy y = 2x over iota:
 * sum 90; as octal it was eight: sum 56), 0x10 sixteen (sum 240), 0X0a ten, 08 eight (an
 * error as octal). */
Test(dispatch_cli, run_integers_decimal_or_hex, .timeout = 120) {
  char *o, cmd[2048];
  static const struct { const char *n, *sum; } rows[] = {
      {"010", "sum 90,"}, {"0x10", "sum 240,"}, {"0X0a", "sum 90,"}};
  for (int i = 0; i < 3; i++) {
    snprintf(cmd, sizeof cmd, "cd %s && %s run kernels/saxpy.cl saxpy --grid 16 --arg f32:2 "
             "--arg buf:f32:16:iota --arg buf:f32:16:out --arg u32:%s 2>&1", HSAD_SRCDIR,
             HSAD_BIN, rows[i].n);
    cr_assert_eq(sh(cmd, &o), 0, "%s: %s", rows[i].n, o);
    cr_assert(strstr(o, rows[i].sum), "u32:%s: want '%s' in\n%s", rows[i].n, rows[i].sum, o);
    free(o);
  }
  snprintf(cmd, sizeof cmd, "cd %s && %s run kernels/saxpy.cl saxpy --grid 16 --arg f32:2 "
           "--arg buf:f32:16:iota --arg buf:f32:16:out --arg u32:08 2>&1", HSAD_SRCDIR, HSAD_BIN);
  cr_assert_eq(sh(cmd, &o), 0, "u32:08 (not octal, so not an error): %s", o);
  cr_assert(strstr(o, "sum 56,"), "u32:08 is eight: %s", o);
  free(o);
}

Test(dispatch_cli, run_source_and_code_object, .timeout = 120) {
  char *o, cmd[2048];
  char tmp[] = "/tmp/hsad-cli-XXXXXX";
  cr_assert_not_null(mkdtemp(tmp));
  snprintf(cmd, sizeof cmd, "cd %s && %s run kernels/saxpy.cl saxpy --grid 1000 --block 128 "
           "--arg f32:2 --arg buf:f32:1000:iota --arg buf:f32:1000:const=1:out:txt=%s/y.txt "
           "--arg u32:1000 --repeat 3", HSAD_SRCDIR, HSAD_BIN, tmp);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert(strstr(o, "compiled kernels/saxpy.cl with comgr"), "%s", o);
  cr_assert(strstr(o, "dispatch: 1D grid 1000x1x1, block 128x1x1, 3 time(s) in order"), "%s", o);
  cr_assert(strstr(o, "first: 1 7 13 19 25"), "%s", o); /* 1 + 3 * 2 * i */
  free(o);
  char path[512];
  snprintf(path, sizeof path, "%s/y.txt", tmp);
  FILE *f = fopen(path, "r");
  cr_assert_not_null(f);
  for (int i = 0; i < 1000; i++) {
    float v;
    cr_assert_eq(fscanf(f, "%f", &v), 1);
    cr_assert_eq(v, 1.0f + 6.0f * (float)i, "y[%d] = %f", i, v);
  }
  fclose(f);
  /* a code object, JSON */
  snprintf(cmd, sizeof cmd, "%s run %s/vector_add-gfx90a-v5.hsaco vector_add --grid 100 "
           "--arg buf:f32:100:iota --arg buf:f32:100:const=0.5 --arg buf:f32:100 --arg u32:100 "
           "--json", HSAD_BIN, TEST_KERNDIR);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  json_object *j = json_tokener_parse(o);
  cr_assert_not_null(j, "%s", o);
  cr_assert_str_eq(jstr(j, "kernel.name"), "vector_add");
  cr_assert_eq(jint(j, "kernel.code_object_version"), 5);
  cr_assert_str_eq(jtext(j, "buffers.2.first"), "[ 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5 ]");
  cr_assert_eq(jint(j, "buffers.2.sum"), 5000); /* 0.5 + ... + 99.5 */
  cr_assert(json_object_get_boolean(jget(j, "dispatch.executed")));
  cr_assert_eq(json_object_array_length(jget(j, "warnings")), 0);
  json_object_put(j);
  free(o);
  /* errors: ISA mismatch, grid 0, unknown kernel, bad --arg */
  snprintf(cmd, sizeof cmd, "%s run %s/saxpy-gfx908-v5.hsaco saxpy --grid 4", HSAD_BIN,
           TEST_KERNDIR);
  cr_assert_eq(sh(cmd, &o), 1, "%s", o);
  cr_assert(strstr(o, "HSAD_ERR_ISA_MISMATCH") && strstr(o, "targets gfx908"), "%s", o);
  free(o);
  snprintf(cmd, sizeof cmd, "%s run %s/saxpy-gfx90a-v5.hsaco nope --grid 4", HSAD_BIN, TEST_KERNDIR);
  cr_assert_eq(sh(cmd, &o), 1, "%s", o);
  snprintf(cmd, sizeof cmd, "hsad run: HSAD_ERR_KERNEL_NOT_FOUND: %s/saxpy-gfx90a-v5.hsaco: no "
           "kernel named 'nope'; it has 1: saxpy\n", TEST_KERNDIR);
  cr_assert_str_eq(o, cmd);
  free(o);
  snprintf(cmd, sizeof cmd, "%s run %s/saxpy-gfx90a-v5.hsaco saxpy --grid 4 --arg buf:q32:4",
           HSAD_BIN, TEST_KERNDIR);
  cr_assert_eq(sh(cmd, &o), 2, "%s", o);
  cr_assert_str_eq(o, "hsad run: --arg buf:q32:4: buf:TYPE: 'q32' is not a TYPE (i8 u8 i16 u16 "
                      "i32 u32 i64 u64 f32 f64)\n");
  free(o);
  /* each malformed SPEC names the part that is wrong and what that part accepts */
  static const struct {
    const char *spec, *msg;
  } bad_spec[] = {
      {"buf:f32:10:bogus", "'bogus' is not a buffer option (zeros, iota, random[=SEED], const=V, "
                           "file=PATH, out, out=FILE, txt=FILE)"},
      {"q32:1", "'q32' is neither a TYPE (i8 u8 i16 u16 i32 u32 i64 u64 f32 f64) nor buf, hex, bin "
                "or lds"},
      {"foo", "no ':' in the SPEC: give buf:TYPE:COUNT[:INIT][:out], TYPE:VALUE, hex:BYTES, "
              "bin:FILE or lds:BYTES (see hsad run --help)"},
      {"buf:f32", "COUNT '' is not a positive integer"},
      /* an INIT or an output file given twice: the last one silently won (iota:const=2 was
       * const=2; found by a fresh-eyes run) */
      {"buf:f32:10:iota:const=2", "'const=2': a second INIT after 'iota' (give one of zeros, "
                                  "iota, random[=SEED], const=V, file=PATH)"},
      {"buf:u8:10:zeros:out:zeros", "'zeros': a second INIT after 'zeros' (give one of zeros, "
                                    "iota, random[=SEED], const=V, file=PATH)"},
      {"buf:f32:10:out=a.bin:out=b.bin", "'out=b.bin': a second out=FILE after 'out=a.bin'"},
      {"buf:f32:10:txt=a:out:txt=b", "'txt=b': a second txt=FILE after 'txt=a'"},
  };
  for (size_t i = 0; i < sizeof bad_spec / sizeof bad_spec[0]; i++) {
    char want[1024];
    snprintf(cmd, sizeof cmd, "%s run k.cl k --grid 4 --arg %s", HSAD_BIN, bad_spec[i].spec);
    cr_assert_eq(sh(cmd, &o), 2, "%s", o);
    snprintf(want, sizeof want, "hsad run: --arg %s: %s\n", bad_spec[i].spec, bad_spec[i].msg);
    cr_assert_str_eq(o, want);
    free(o);
  }
  cr_assert_eq(sh(HSAD_BIN " run --help", &o), 0, "%s", o);
  cr_assert(strstr(o, "buf:TYPE:COUNT[:INIT][:out[=FILE]][:txt=FILE]"), "%s", o);
  cr_assert(strstr(o, "random[=SEED]"), "%s", o);
  free(o);
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  cr_assert_eq(system(cmd), 0);
}

/* The README's and --help's saxpy takes 4 arguments: three --arg are refused with the
 * signature; --opt=value works as --opt value. */
Test(dispatch_cli, run_argument_count_and_getopt, .timeout = 120) {
  char *o, cmd[2048];
  snprintf(cmd, sizeof cmd, "%s run %s/saxpy-gfx90a-v5.hsaco saxpy --grid 100 --arg f32:2.5 "
           "--arg buf:f32:100:iota --arg buf:f32:100:const=1:out", HSAD_BIN, TEST_KERNDIR);
  cr_assert_eq(sh(cmd, &o), 1, "%s", o);
  cr_assert_str_eq(o, "hsad run: kernel 'saxpy' takes 4 argument(s) (float, float*, "
                      "float*, uint), got 3 --arg\n");
  free(o);
  snprintf(cmd, sizeof cmd, "%s run %s/saxpy-gfx90a-v5.hsaco saxpy --grid=100 --block=50 "
           "--arg=f32:2.5 --arg buf:f32:100:iota --arg=buf:f32:100:const=1:out --arg u32:100 "
           "--repeat=2", HSAD_BIN, TEST_KERNDIR);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert(strstr(o, "dispatch: 1D grid 100x1x1, block 50x1x1, 2 time(s) in order\n"), "%s", o);
  cr_assert(strstr(o, "arg 2 (f32 x 100): sum 24850, min 1, max 496, first: 1 6 11 16 21 26 31 "
                      "36\n"), "%s", o); /* 1 + 2 x 2.5 x i */
  free(o);
  static const char *const bad[][2] = {
      {"--grid", "hsad run: option '--grid' needs a value (see hsad run --help)\n"},
      {"-O", "hsad run: option '-O' needs a value (see hsad run --help)\n"},
      {"--nope=3", "hsad run: unknown option '--nope' (see hsad run --help)\n"},
      {"-q", "hsad run: unknown option '-q' (see hsad run --help)\n"},
      {"-O7", "hsad run: -O7: expected -O0, -O1, -O2 or -O3\n"},
      {"--grid 0", "hsad run: --grid 0: expected X[,Y[,Z]], each an integer from 1 to "
                   "4294967295\n"},
      {"extra --grid 1", "hsad run: unexpected argument 'extra' (one SOURCE and one KERNEL; see "
                         "hsad run --help)\n"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(cmd, sizeof cmd, "%s run k.cl k %s", HSAD_BIN, bad[i][0]);
    cr_assert_eq(sh(cmd, &o), 2, "%s: %s", cmd, o);
    cr_assert_str_eq(o, bad[i][1], "%s", cmd);
    free(o);
  }
}

/* Scalars are checked against .type_name, vectors and structs take values / raw bytes of
 * exactly the argument's size, buffers and scalars go where the metadata says. */
Test(dispatch_cli, run_arguments_checked_against_metadata, .timeout = 120) {
  static const char *const cases[][2] = {
      {"saxpy-gfx90a-v5.hsaco saxpy --arg f32:1 --arg buf:f32:4 --arg buf:f32:4 --arg f32:1.5",
       "hsad run: --arg f32:1.5: argument 3 of kernel 'saxpy' is a uint: give u32:VALUE\n"},
      {"saxpy-gfx90a-v5.hsaco saxpy --arg f32:1 --arg buf:f32:4 --arg buf:f32:4 --arg i32:4",
       "hsad run: --arg i32:4: argument 3 of kernel 'saxpy' is a uint: give u32:VALUE\n"},
      {"saxpy-gfx90a-v5.hsaco saxpy --arg u64:3 --arg buf:f32:4 --arg buf:f32:4 --arg u32:4",
       "hsad run: --arg u64:3: argument 0 of kernel 'saxpy' is a float: give f32:VALUE\n"},
      {"saxpy-gfx90a-v5.hsaco saxpy --arg buf:f32:4 --arg buf:f32:4 --arg buf:f32:4 --arg u32:4",
       "hsad run: --arg buf:f32:4: argument 0 of kernel 'saxpy' is a by-value float (4 "
       "bytes), not a buffer: give its value (TYPE:VALUE, hex:BYTES or bin:FILE)\n"},
      {"saxpy-gfx90a-v5.hsaco saxpy --arg f32:1 --arg buf:u8:4 --arg buf:f32:4 --arg u32:4",
       "hsad run: --arg buf:u8:4: argument 1 of kernel 'saxpy' is a float* (4-byte "
       "floating-point elements): give buf:f32:COUNT[:INIT], not buf:u8\n"},
      {"saxpy-gfx90a-v5.hsaco saxpy --arg f32:1 --arg buf:f32:4 --arg buf:i32:4 --arg u32:4",
       "hsad run: --arg buf:i32:4: argument 2 of kernel 'saxpy' is a float* (4-byte "
       "floating-point elements): give buf:f32:COUNT[:INIT], not buf:i32\n"},
      {"saxpy-gfx90a-v5.hsaco saxpy --arg f32:1 --arg u64:4096 --arg buf:f32:4 --arg u32:4",
       "hsad run: --arg u64:4096: argument 1 of kernel 'saxpy' is a global buffer "
       "(float*): give buf:TYPE:COUNT[:INIT]\n"},
      {"saxpy-gfx90a-v5.hsaco saxpy --arg hex:0000803f00 --arg buf:f32:4 --arg buf:f32:4 "
       "--arg u32:4",
       "hsad run: --arg hex:0000803f00: argument 0 of kernel 'saxpy' is 4 bytes, got 5 "
       "bytes\n"},
      {"big_args-gfx90a-v5.hsaco scale4 --arg buf:f32:16 --arg f32:1,2,3 --arg u32:4",
       "hsad run: --arg f32:1,2,3: argument 1 of kernel 'scale4' is a float4: give 4 "
       "comma-separated values, f32:V0,V1,... (or hex:BYTES)\n"},
      {"big_args-gfx90a-v5.hsaco struct_1k --arg buf:u32:4 --arg u32:1 --arg u32:4",
       "hsad run: --arg u32:1: argument 1 of kernel 'struct_1k' is 1024 bytes of struct "
       "blob: give its bytes with hex:BYTES[*N] or bin:FILE\n"},
      {"big_args-gfx90a-v5.hsaco struct_1k --arg buf:u32:4 --arg hex:00*1000 --arg u32:4",
       "hsad run: --arg hex:00*1000: argument 1 of kernel 'struct_1k' is 1024 bytes, got "
       "1000 bytes\n"},
      {"big_args-gfx90a-v5.hsaco struct_8k --arg buf:u32:4 --arg hex:00*8192 --arg u32:4",
       "hsad run: HSAD_ERR_RESOURCE_EXHAUSTED: kernel struct_8k: kernarg segment of 8464 bytes "
       "exceeds hsa-dispatch's limit of 8192 bytes (HSAD_KERNARG_SEGMENT_MAX)\n"},
      {"lds_reduce-gfx90a-v5.hsaco lds_reduce_dyn --arg buf:f32:4 --arg buf:f32:4 --arg u32:4 "
       "--arg u32:4",
       "hsad run: --arg u32:4: argument 3 of kernel 'lds_reduce_dyn' is a __local "
       "pointer: use --arg lds:BYTES (the dynamic LDS size), not a scalar\n"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *o, cmd[2048];
    snprintf(cmd, sizeof cmd, "%s run %s/%s --grid 4", HSAD_BIN, TEST_KERNDIR, cases[i][0]);
    cr_assert_eq(sh(cmd, &o), 1, "%s: %s", cmd, o);
    cr_assert_str_eq(o, cases[i][1], "%s", cmd);
    free(o);
  }
  static const char *const usage[][2] = {
      {"--arg hex:0g", "hsad run: --arg hex:0g: hex:BYTES: '0g' is not pairs of hex digits (one "
                       "pair per byte, in memory order)\n"},
      {"--arg bin:/", "hsad run: --arg bin:/: bin:/: not a regular file (a directory)\n"},
      {"--arg buf:f32:4:file=/", "hsad run: --arg buf:f32:4:file=/: file=/ is a directory, not "
                                 "a regular file\n"},
      {"--arg f32:1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17",
       "hsad run: --arg f32:1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17: more than 16 values "
       "(OpenCL vectors have at most 16)\n"},
  };
  for (size_t i = 0; i < sizeof usage / sizeof usage[0]; i++) {
    char *o, cmd[2048];
    snprintf(cmd, sizeof cmd, "%s run %s/saxpy-gfx90a-v5.hsaco saxpy --grid 4 %s", HSAD_BIN,
             TEST_KERNDIR, usage[i][0]);
    cr_assert_eq(sh(cmd, &o), 2, "%s: %s", cmd, o);
    cr_assert_str_eq(o, usage[i][1], "%s", cmd);
    free(o);
  }
}

/* Reads `n` bytes of a file the command wrote. */
static void read_file(const char *path, void *out, size_t n) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s", path);
  cr_assert_eq(fread(out, 1, n, f), n, "%s", path);
  cr_assert_eq(fgetc(f), EOF, "%s is longer than %zu bytes", path, n);
  fclose(f);
}

/* Kernarg segments above the default 512-byte kernarg block: 72 ulong arguments, a 1 KiB
 * struct (from hex and from a file); a by-value float4 and a float given as raw bytes. */
Test(dispatch_cli, run_large_kernargs_vectors_raw_bytes, .timeout = 120) {
  char tmp[] = "/tmp/hsad-cli-XXXXXX";
  cr_assert_not_null(mkdtemp(tmp));
  char *o, cmd[8192], path[512];
  int n = snprintf(cmd, sizeof cmd, "%s run %s/big_args-gfx90a-v5.hsaco args72 --grid 1 "
                   "--arg buf:u64:72:out=%s/a72.bin", HSAD_BIN, TEST_KERNDIR, tmp);
  for (int i = 0; i < 72; i++)
    n += snprintf(cmd + n, sizeof cmd - (size_t)n, " --arg u64:%llu",
                  0x0102030405060708ull * (unsigned long long)(i + 1));
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert(strstr(o, "kernarg 840 B\n"), "%s", o);
  cr_assert(strstr(o, "dispatch: 1D grid 1x1x1, block 1x1x1, 1 time(s) in order; own queue of "
                      "1024 packets with 896-byte kernarg blocks (kernarg segment 840 B)\n"), "%s", o);
  free(o);
  uint64_t v[72];
  snprintf(path, sizeof path, "%s/a72.bin", tmp);
  read_file(path, v, sizeof v);
  for (int i = 0; i < 72; i++) cr_assert_eq(v[i], 0x0102030405060708ull * (uint64_t)(i + 1), "%d", i);

  /* struct blob { uint v[256]; } from hex with a repeat count: out[i] = 1 + i */
  snprintf(cmd, sizeof cmd, "%s run %s/big_args-gfx90a-v5.hsaco struct_1k --grid 300 --block 64 "
           "--arg buf:u32:300:out=%s/s1.bin --arg hex:01000000*256 --arg u32:300", HSAD_BIN,
           TEST_KERNDIR, tmp);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert(strstr(o, "own queue of 1024 packets with 1344-byte kernarg blocks (kernarg segment "
                      "1296 B)\n"), "%s", o);
  free(o);
  uint32_t u[300];
  snprintf(path, sizeof path, "%s/s1.bin", tmp);
  read_file(path, u, sizeof u);
  for (uint32_t i = 0; i < 300; i++) cr_assert_eq(u[i], 1 + i, "%u", i);
  /* the same struct from a file: b.v[j] = 1000 * j */
  uint32_t blob[256];
  for (uint32_t j = 0; j < 256; j++) blob[j] = 1000 * j;
  snprintf(path, sizeof path, "%s/blob.bin", tmp);
  FILE *f = fopen(path, "wb");
  cr_assert_eq(fwrite(blob, 1, sizeof blob, f), sizeof blob);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s run %s/big_args-gfx90a-v4.hsaco struct_1k --grid 300 "
           "--arg buf:u32:300:out=%s/s2.bin --arg bin:%s --arg u32:300", HSAD_BIN, TEST_KERNDIR,
           tmp, path);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  free(o);
  snprintf(path, sizeof path, "%s/s2.bin", tmp);
  read_file(path, u, sizeof u);
  for (uint32_t i = 0; i < 300; i++) cr_assert_eq(u[i], 1000 * (i % 256) + i, "%u", i);

  /* float4 by value: y[i] = iota * (1, 2, 3, 4) */
  snprintf(cmd, sizeof cmd, "%s run %s/big_args-gfx90a-v5.hsaco scale4 --grid 8 "
           "--arg buf:f32:32:iota:out --arg f32:1,2,3,4 --arg u32:8", HSAD_BIN, TEST_KERNDIR);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert(strstr(o, "arg 0 (f32 x 32): sum 1280, min 0, max 124, first: 0 2 6 12 4 10 18 28\n"),
            "%s", o);
  free(o);
  /* a float as raw bytes (0x40200000 = 2.5f), a uint as hex */
  snprintf(cmd, sizeof cmd, "%s run %s/saxpy-gfx90a-v5.hsaco saxpy --grid 4 --arg hex:00002040 "
           "--arg buf:f32:4:iota --arg buf:f32:4:const=1:out --arg hex:04_00_00_00", HSAD_BIN,
           TEST_KERNDIR);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert(strstr(o, "arg 2 (f32 x 4): sum 19, min 1, max 8.5, first: 1 3.5 6 8.5\n"), "%s", o);
  free(o);
  /* file= shorter than the buffer: said, the rest zero */
  snprintf(path, sizeof path, "%s/8.bin", tmp);
  f = fopen(path, "wb");
  float two[2] = {5, 7};
  cr_assert_eq(fwrite(two, 1, 8, f), 8);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s run %s/saxpy-gfx90a-v5.hsaco saxpy --grid 4 --arg f32:1 "
           "--arg buf:f32:4:file=%s --arg buf:f32:4:out --arg u32:4", HSAD_BIN, TEST_KERNDIR,
           path);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  char want[1024];
  snprintf(want, sizeof want, "hsad run: warning: arg 1: file=%s holds 8 bytes, the buffer 16: "
           "the remaining 8 bytes are zero\n", path);
  cr_assert(!strncmp(o, want, strlen(want)), "%s", o);
  cr_assert(strstr(o, "arg 2 (f32 x 4): sum 12, min 0, max 7, first: 5 7 0 0\n"), "%s", o);
  free(o);
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  cr_assert_eq(system(cmd), 0);
}

/* C++ kernels: KERNEL_NOT_FOUND lists them demangled, a plain or demangled name finds one,
 * an overloaded name is ambiguous; without a twin and KFD_EMU_NO_TWIN=noop the run says the
 * kernel was not executed. */
Test(dispatch_cli, run_cxx_names_and_noop, .timeout = 180) {
  char tmp[] = "/tmp/hsad-cli-XXXXXX";
  cr_assert_not_null(mkdtemp(tmp));
  char *o, cmd[4096], want[4096];
  snprintf(cmd, sizeof cmd, "%s compile %s/tests/data/cli/mangled.hip --target gfx90a -o "
           "%s/m.hsaco", HSAD_BIN, HSAD_SRCDIR, tmp);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  free(o);
  snprintf(cmd, sizeof cmd, "%s run %s/m.hsaco nope --grid 4", HSAD_BIN, tmp);
  cr_assert_eq(sh(cmd, &o), 1, "%s", o);
  snprintf(want, sizeof want, "hsad run: HSAD_ERR_KERNEL_NOT_FOUND: %s/m.hsaco: no kernel named "
           "'nope'; it has 3: _Z5scalePffj (scale(float*, float, unsigned int)), _Z5scalePddj "
           "(scale(double*, double, unsigned int)), _Z5shiftPiij (shift(int*, int, unsigned "
           "int))\n", tmp);
  cr_assert_str_eq(o, want);
  free(o);
  snprintf(cmd, sizeof cmd, "%s run %s/m.hsaco scale --grid 4", HSAD_BIN, tmp);
  cr_assert_eq(sh(cmd, &o), 1, "%s", o);
  snprintf(want, sizeof want, "hsad run: HSAD_ERR_KERNEL_NOT_FOUND: %s/m.hsaco: ambiguous: 2 "
           "kernels match 'scale': _Z5scalePffj (scale(float*, float, unsigned int)), _Z5scalePddj "
           "(scale(double*, double, unsigned int)); give the full name of one\n", tmp);
  cr_assert_str_eq(o, want);
  free(o);
  /* neither source (a HIP code object carries no OpenCL C) nor twin: hsad run refuses it before
   * dispatching (kfd_emu_kernel_mode), naming the kernel and both remedies */
  snprintf(cmd, sizeof cmd, "%s run %s/m.hsaco 'scale(float*, float, unsigned int)' --grid 4 "
           "--arg buf:f32:4 --arg f32:2 --arg u32:4", HSAD_BIN, tmp);
  cr_assert_eq(sh(cmd, &o), 1, "%s", o);
  snprintf(want, sizeof want, "hsad run: HSAD_ERR_UNSUPPORTED: %s/m.hsaco: kernel _Z5scalePffj has "
           "neither source nor a host twin: build its code object with hsad (hsad compile, hsad "
           "run FILE.cl, hsad_codeobj_compile), which carries the OpenCL C source, or name the "
           "source in KFD_EMU_CL_SOURCE=FILE.cl (hsad run --source FILE.cl); or give a twin "
           "kfd_emu_twin__Z5scalePffj in "
           "KFD_EMU_TWINS (kfd_emu_twin.h); KFD_EMU_NO_TWIN=noop completes it unexecuted\n", tmp);
  cr_assert_str_eq(o, want);
  free(o);
  snprintf(cmd, sizeof cmd, "KFD_EMU_NO_TWIN=noop %s run %s/m.hsaco shift --grid 256 --block 64 "
           "--arg buf:i32:256:iota:out --arg i32:5 --arg u32:256", HSAD_BIN, tmp);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert(!strncmp(o, "hsad run: warning: kernel _Z5shiftPiij was not executed: kfd-emu has no "
                        "host twin for it and KFD_EMU_NO_TWIN=noop completes such dispatches "
                        "without running them, so every buffer still holds its initial "
                        "contents\n", 190), "%s", o);
  cr_assert(strstr(o, "104 CUs, kfd-emu (the kernel was NOT executed: no host twin, "
                      "KFD_EMU_NO_TWIN=noop)\n"), "%s", o);
  cr_assert(!strstr(o, "ran as host twins"), "%s", o);
  cr_assert(strstr(o, "arg 0 (i32 x 256): sum 32640, min 0, max 255, first: 0 1 2 3 4 5 6 7\n"),
            "%s", o);
  free(o);
  snprintf(cmd, sizeof cmd, "KFD_EMU_NO_TWIN=noop %s run %s/m.hsaco 'shift' --grid 4 "
           "--arg buf:i32:4 --arg i32:5 --arg u32:4 --json", HSAD_BIN, tmp);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  json_object *j = json_tokener_parse(o);
  cr_assert_not_null(j, "%s", o);
  cr_assert(!json_object_get_boolean(jget(j, "dispatch.executed")), "%s", o);
  cr_assert_str_eq(jstr(j, "warnings.0"), "kernel _Z5shiftPiij was not executed: kfd-emu has no "
                   "host twin for it and KFD_EMU_NO_TWIN=noop completes such dispatches without "
                   "running them, so every buffer still holds its initial contents");
  json_object_put(j);
  free(o);
  /* a kernel with code to run under noop runs as usual: kernels/ code objects carry their
   * OpenCL C source (kernels/carry_source.py), so fill runs from it through POCL */
  snprintf(cmd, sizeof cmd, "KFD_EMU_NO_TWIN=noop %s run %s/fill-gfx90a-v5.hsaco fill --grid 4 "
           "--arg buf:u32:4:out --arg u32:9 --arg u32:4", HSAD_BIN, TEST_KERNDIR);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert(strstr(o, "kfd-emu (the kernel ran from its OpenCL C source through POCL;"), "%s", o);
  cr_assert(strstr(o, "first: 9 9 9 9\n"), "%s", o);
  free(o);
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  cr_assert_eq(system(cmd), 0);
}

/* build/bin/hip-vector-add (hipcc, kernels/module.mk) */
#ifndef HIP_VECTOR_ADD
#define HIP_VECTOR_ADD "build/bin/hip-vector-add"
#endif

/* hip_vector_add's n given as u32:1000: HIP metadata has no types, the name none either */
static const char size_only_n[] =
    "hsad run: warning: argument 3 of kernel 'hip_vector_add' has no type in the code object "
    "(no .type_name, and an unmangled name, e.g. extern \"C\", carries no parameter types): "
    "only its size was checked (4 bytes, given u32:1000)\n";
/* ... and with --grid 1000 --block 256 */
/* a HIP code object carries no OpenCL C source: kfd-emu runs its twin, and hsad run says so */
static const char hip_twin_said[] =
    "hsad run: warning: ran host twin of 'hip_vector_add' (no source)\n";
static const char hip_warnings[] =
    "hsad run: warning: argument 3 of kernel 'hip_vector_add' has no type in the code object "
    "(no .type_name, and an unmangled name, e.g. extern \"C\", carries no parameter types): "
    "only its size was checked (4 bytes, given u32:1000)\n"
    "hsad run: warning: grid 1000 is not a multiple of the block 256 in x: in the last "
    "workgroup (blockIdx.x 3) HIP's blockDim.x is 232, not 256, so an index blockIdx.x * "
    "blockDim.x + threadIdx.x covers 696..927 and work-items 928..999 are never computed; "
    "use --grid 1024 and bound-check in the kernel\n";

/* A HIP kernel with a partial last workgroup: blockDim is the partial size there, so the
 * usual index misses elements: hsad warns, and the result shows why. */
Test(dispatch_cli, run_hip_partial_workgroup_warning, .timeout = 180) {
  char tmp[] = "/tmp/hsad-cli-XXXXXX";
  cr_assert_not_null(mkdtemp(tmp));
  char *o, cmd[4096];
  snprintf(cmd, sizeof cmd, "%s run %s/kernels/hip/vector_add.hip hip_vector_add --grid 1000 "
           "--block 256 --arg buf:f32:1000:iota --arg buf:f32:1000:iota "
           "--arg buf:f32:1000:out=%s/c.bin --arg u32:1000", HSAD_BIN, HSAD_SRCDIR, tmp);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert(!strncmp(o, hip_warnings, sizeof hip_warnings - 1), "%s", o);
  cr_assert(!strncmp(o + sizeof hip_warnings - 1, hip_twin_said, sizeof hip_twin_said - 1), "%s",
            o);
  free(o);
  float c[1000];
  char path[512];
  snprintf(path, sizeof path, "%s/c.bin", tmp);
  read_file(path, c, sizeof c);
  for (int i = 0; i < 928; i++) cr_assert_eq(c[i], 2.0f * (float)i, "%d", i);
  for (int i = 928; i < 1000; i++) cr_assert_eq(c[i], 0.0f, "%d", i);
  /* a multiple of the block: no grid warning (the size-only one stays), every element */
  snprintf(cmd, sizeof cmd, "%s run %s/kernels/hip/vector_add.hip hip_vector_add --grid 1024 "
           "--block 256 --arg buf:f32:1000:iota --arg buf:f32:1000:iota "
           "--arg buf:f32:1000:out=%s/c.bin --arg u32:1000", HSAD_BIN, HSAD_SRCDIR, tmp);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert(!strncmp(o, size_only_n, sizeof size_only_n - 1), "%s", o);
  cr_assert(!strncmp(o + sizeof size_only_n - 1, hip_twin_said, sizeof hip_twin_said - 1), "%s",
            o);
  cr_assert_null(strstr(o + sizeof size_only_n + sizeof hip_twin_said - 2, "warning"), "%s", o);
  free(o);
  read_file(path, c, sizeof c);
  for (int i = 0; i < 1000; i++) cr_assert_eq(c[i], 2.0f * (float)i, "%d", i);
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  cr_assert_eq(system(cmd), 0);
}

/* The same kernel as hipcc built it into build/bin/hip-vector-add (a .hip_fatbin, bundle
 * entry hipv4-amdgcn-amd-amdhsa--gfx90a, an extern "C" name, no .type_name): HIP by where its
 * code came from, so the partial workgroup is warned about. */
Test(dispatch_cli, run_hip_fatbin_partial_workgroup_warning, .timeout = 180) {
  char tmp[] = "/tmp/hsad-cli-XXXXXX";
  cr_assert_not_null(mkdtemp(tmp));
  char *o, cmd[4096], path[512];
  snprintf(cmd, sizeof cmd, "%s run %s hip_vector_add --grid 1000 --block 256 "
           "--arg buf:f32:1000:iota --arg buf:f32:1000:iota --arg buf:f32:1000:out=%s/c.bin "
           "--arg u32:1000", HSAD_BIN, HIP_VECTOR_ADD, tmp);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert(!strncmp(o, hip_warnings, sizeof hip_warnings - 1), "%s", o);
  cr_assert(!strncmp(o + sizeof hip_warnings - 1, hip_twin_said, sizeof hip_twin_said - 1), "%s",
            o);
  cr_assert(strstr(o, "dispatch: 1D grid 1000x1x1, block 256x1x1, 1 time(s) in order"), "%s", o);
  free(o);
  float c[1000];
  snprintf(path, sizeof path, "%s/c.bin", tmp);
  read_file(path, c, sizeof c);
  for (int i = 0; i < 928; i++) cr_assert_eq(c[i], 2.0f * (float)i, "%d", i);
  for (int i = 928; i < 1000; i++) cr_assert_eq(c[i], 0.0f, "%d", i);
  /* --json: both warnings in "warnings", then the twin's */
  snprintf(cmd, sizeof cmd, "%s run %s hip_vector_add --grid 1000 --block 256 "
           "--arg buf:f32:1000:iota --arg buf:f32:1000:iota --arg buf:f32:1000 "
           "--arg u32:1000 --json", HSAD_BIN, HIP_VECTOR_ADD);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  json_object *j = json_tokener_parse(o);
  cr_assert_not_null(j, "%s", o);
  cr_assert_eq(json_object_array_length(jget(j, "warnings")), 3, "%s", o);
  cr_assert(!strncmp(jstr(j, "warnings.1"), "grid 1000 is not a multiple of the block 256 in x:",
                     50), "%s", o);
  cr_assert_str_eq(jstr(j, "warnings.2"), "ran host twin of 'hip_vector_add' (no source)");
  json_object_put(j);
  free(o);
  /* the OpenCL vector add from a plain code object: no warning */
  snprintf(cmd, sizeof cmd, "%s run %s/vector_add-gfx90a-v5.hsaco vector_add --grid 1000 "
           "--block 256 --arg buf:f32:1000:iota --arg buf:f32:1000:iota --arg buf:f32:1000 "
           "--arg u32:1000", HSAD_BIN, TEST_KERNDIR);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  cr_assert_null(strstr(o, "warning"), "%s", o);
  free(o);
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  cr_assert_eq(system(cmd), 0);
}

/* Scalar and buffer types of C++ kernels from their mangled names (HIP metadata has no
 * .type_name), with the messages of the OpenCL path; extern "C" kernels: a warning that only
 * sizes were checked. */
Test(dispatch_cli, run_cxx_argument_types, .timeout = 180) {
  char tmp[] = "/tmp/hsad-cli-XXXXXX";
  cr_assert_not_null(mkdtemp(tmp));
  char *o, cmd[4096], want[4096];
  snprintf(cmd, sizeof cmd, "%s compile %s/tests/data/cli/mangled.hip --target gfx90a -o "
           "%s/m.hsaco && %s compile %s/tests/data/cli/hip_types.hip --target gfx90a -o "
           "%s/t.hsaco", HSAD_BIN, HSAD_SRCDIR, tmp, HSAD_BIN, HSAD_SRCDIR, tmp);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  free(o);
#define TY "_Z5typesP15HIP_vector_typeIfLj4EES0_lhPKd"
  static const char *const cases[][3] = {
      {"m", "_Z5scalePffj --arg buf:f32:4 --arg u32:2 --arg u32:4",
       "hsad run: --arg u32:2: argument 1 of kernel '_Z5scalePffj' is a float: give f32:VALUE\n"},
      {"m", "_Z5scalePffj --arg buf:f32:4 --arg f32:2 --arg i32:4",
       "hsad run: --arg i32:4: argument 2 of kernel '_Z5scalePffj' is an unsigned int: give "
       "u32:VALUE\n"},
      {"m", "_Z5scalePddj --arg buf:f64:4 --arg f32:2 --arg u32:4",
       "hsad run: --arg f32:2: argument 1 of kernel '_Z5scalePddj' is a double: give "
       "f64:VALUE\n"},
      {"m", "shift --arg buf:i32:4 --arg u32:5 --arg u32:4",
       "hsad run: --arg u32:5: argument 1 of kernel '_Z5shiftPiij' is an int: give i32:VALUE\n"},
      {"m", "_Z5scalePffj --arg buf:u8:4 --arg f32:2 --arg u32:4",
       "hsad run: --arg buf:u8:4: argument 0 of kernel '_Z5scalePffj' is a float* (4-byte "
       "floating-point elements): give buf:f32:COUNT[:INIT], not buf:u8\n"},
      {"m", "_Z5scalePddj --arg buf:f32:4 --arg f64:2 --arg u32:4",
       "hsad run: --arg buf:f32:4: argument 0 of kernel '_Z5scalePddj' is a double* (8-byte "
       "floating-point elements): give buf:f64:COUNT[:INIT], not buf:f32\n"},
      {"m", "shift --arg buf:f32:4 --arg i32:5 --arg u32:4",
       "hsad run: --arg buf:f32:4: argument 0 of kernel '_Z5shiftPiij' is an int* (4-byte "
       "integer elements): give buf:i32:COUNT[:INIT], not buf:f32\n"},
      {"m", "shift --arg buf:i32:4 --arg i32:5",
       "hsad run: kernel '_Z5shiftPiij' takes 3 argument(s) (int*, int, unsigned int), got 2 "
       "--arg\n"},
      {"t", "types --arg buf:f32:16 --arg f32:1 --arg i64:4 --arg u8:1 --arg buf:f64:4",
       "hsad run: --arg f32:1: argument 1 of kernel '" TY "' is a HIP_vector_type<float, 4u>: "
       "give 4 comma-separated values, f32:V0,V1,... (or hex:BYTES)\n"},
      {"t", "types --arg buf:f32:16 --arg f32:1,2,3,4 --arg u64:4 --arg u8:1 --arg buf:f64:4",
       "hsad run: --arg u64:4: argument 2 of kernel '" TY "' is a long: give i64:VALUE\n"},
      {"t", "types --arg buf:f32:16 --arg f32:1,2,3,4 --arg i64:4 --arg i8:1 --arg buf:f64:4",
       "hsad run: --arg i8:1: argument 3 of kernel '" TY "' is an unsigned char: give "
       "u8:VALUE\n"},
      {"t", "types --arg buf:f32:16 --arg f32:1,2,3,4 --arg i64:4 --arg u8:1 --arg buf:f32:4",
       "hsad run: --arg buf:f32:4: argument 4 of kernel '" TY "' is a double const* (8-byte "
       "floating-point elements): give buf:f64:COUNT[:INIT], not buf:f32\n"},
      {"t", "types --arg buf:i32:16 --arg f32:1,2,3,4 --arg i64:4 --arg u8:1 --arg buf:f64:4",
       "hsad run: --arg buf:i32:16: argument 0 of kernel '" TY "' is a HIP_vector_type<float, "
       "4u>* (4-byte floating-point elements): give buf:f32:COUNT[:INIT], not buf:i32\n"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(cmd, sizeof cmd, "%s run %s/%s.hsaco %s --grid 4", HSAD_BIN, tmp, cases[i][0],
             cases[i][1]);
    cr_assert_eq(sh(cmd, &o), 1, "%s: %s", cmd, o);
    cr_assert_str_eq(o, cases[i][2], "%s", cmd);
    free(o);
  }
  /* every type right: it runs (no twin: noop), no size-only warning; buffers of integers of the
   * other signedness are accepted (same bytes) */
  snprintf(cmd, sizeof cmd, "{ KFD_EMU_NO_TWIN=noop %s run %s/t.hsaco types --grid 4 "
           "--arg buf:f32:16 --arg f32:1,2,3,4 --arg i64:4 --arg u8:1 --arg buf:f64:4 2>&1 && "
           "KFD_EMU_NO_TWIN=noop %s run %s/m.hsaco shift --grid 4 --arg buf:u32:4 --arg i32:5 "
           "--arg u32:4; }", HSAD_BIN, tmp, HSAD_BIN, tmp);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  snprintf(want, sizeof want, "hsad run: warning: kernel " TY " was not executed: kfd-emu has "
           "no host twin for it and KFD_EMU_NO_TWIN=noop completes such dispatches without "
           "running them, so every buffer still holds its initial contents\n");
  cr_assert(!strncmp(o, want, strlen(want)), "%s", o);
  cr_assert_null(strstr(o, "size was checked"), "%s", o);
  free(o);
#undef TY
  /* extern "C": no types anywhere, a warning per scalar that only its size was checked; a
   * float for the unsigned n is then taken as its bits (0x3fc00000), as the warning says */
  snprintf(cmd, sizeof cmd, "%s run %s hip_vector_add --grid 1024 --block 256 "
           "--arg buf:f32:1024:iota --arg buf:f32:1024:const=1 --arg buf:f32:1024:out "
           "--arg f32:1.5", HSAD_BIN, HIP_VECTOR_ADD);
  cr_assert_eq(sh(cmd, &o), 0, "%s", o);
  static const char size_only_f[] =
      "hsad run: warning: argument 3 of kernel 'hip_vector_add' has no type in the code object "
      "(no .type_name, and an unmangled name, e.g. extern \"C\", carries no parameter types): "
      "only its size was checked (4 bytes, given f32:1.5)\n";
  cr_assert(!strncmp(o, size_only_f, sizeof size_only_f - 1), "%s", o);
  cr_assert(strstr(o, "arg 2 (f32 x 1024): sum 524800, min 1, max 1024, first: 1 2 3 4 5 6 7 "
                      "8\n"), "%s", o);
  free(o);
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  cr_assert_eq(system(cmd), 0);
}

/* Failures with --json: one JSON error object on stdout, the exit code in it. */
Test(dispatch_cli, run_json_errors, .timeout = 120) {
  char *o, cmd[2048];
  char tmp[] = "/tmp/hsad-cli-XXXXXX";
  cr_assert_not_null(mkdtemp(tmp));
  snprintf(cmd, sizeof cmd, "%s run %s/saxpy-gfx90a-v5.hsaco nope --grid 4 --json", HSAD_BIN,
           TEST_KERNDIR);
  cr_assert_eq(sh(cmd, &o), 1, "%s", o);
  json_object *j = json_tokener_parse(o);
  cr_assert_not_null(j, "%s", o);
  cr_assert_str_eq(jstr(j, "error.command"), "run");
  cr_assert_str_eq(jstr(j, "error.status"), "HSAD_ERR_KERNEL_NOT_FOUND");
  cr_assert_eq(jint(j, "error.exit_code"), 1);
  char want[2048];
  snprintf(want, sizeof want, "HSAD_ERR_KERNEL_NOT_FOUND: %s/saxpy-gfx90a-v5.hsaco: no kernel "
           "named 'nope'; it has 1: saxpy", TEST_KERNDIR);
  cr_assert_str_eq(jstr(j, "error.message"), want);
  json_object_put(j);
  free(o);
  /* the option error comes before --json on the command line: still JSON */
  cr_assert_eq(sh(HSAD_BIN " run k.cl k --repeat 0 --json", &o), 2, "%s", o);
  cr_assert_str_eq(o, "{ \"error\": { \"command\": \"run\", \"status\": \"usage\", \"exit_code\": "
                      "2, \"message\": \"--repeat 0: expected an integer from 1 to 10000000\" } }\n");
  free(o);
  /* an empty source names the file */
  snprintf(cmd, sizeof cmd, ": > %s/empty.cl && %s run %s/empty.cl k --grid 1 --json", tmp,
           HSAD_BIN, tmp);
  cr_assert_eq(sh(cmd, &o), 1, "%s", o);
  j = json_tokener_parse(o);
  cr_assert_not_null(j, "%s", o);
  snprintf(want, sizeof want, "%s/empty.cl: the source file is empty (no kernel to compile)", tmp);
  cr_assert_str_eq(jstr(j, "error.message"), want);
  cr_assert_str_eq(jstr(j, "error.status"), "error");
  json_object_put(j);
  free(o);
  /* a queue error: no advice to destroy a queue the command line never had */
  snprintf(cmd, sizeof cmd, "KFD_EMU_FAULT_KERNEL=fill %s run %s/fill-gfx90a-v5.hsaco fill "
           "--grid 4 --arg buf:u32:4 --arg u32:1 --arg u32:4 --json", HSAD_BIN, TEST_KERNDIR);
  cr_assert_eq(sh(cmd, &o), 1, "%s", o);
  const char *js = strchr(o, '{');
  cr_assert_not_null(js, "%s", o);
  cr_assert(!strncmp(o, "kfd-emu: GPU 0 queue 1: kernel fill: injected fault "
                        "(KFD_EMU_FAULT_KERNEL)\n", 70), "%s", o);
  j = json_tokener_parse(js);
  cr_assert_not_null(j, "%s", o);
  cr_assert_str_eq(jstr(j, "error.message"), "HSAD_ERR_QUEUE_ERROR: queue 1 on device 0 "
                   "(gfx90a:sramecc+:xnack-) faulted: HSA status 0x29 "
                   "(HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access "
                   "memory beyond the largest legal address.)");
  json_object_put(j);
  free(o);
  snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
  cr_assert_eq(system(cmd), 0);
}

/* ---- issue 9: --variants and --trace ---------------------------------------------------- */

#define VA_ARGS "--arg buf:f32:4096:iota --arg buf:f32:4096:const=0.5 --arg buf:f32:4096:out " \
                "--arg u32:4096"

/* One source, three budgets: at 1024 work-items only the 1024 build allows the size; at 64
 * all do and the choice is the rule's (no spills, most waves, fewest VGPRs, lowest index). */
Test(dispatch_cli, run_variants_list, .timeout = 180) {
  char *o;
  int rc = sh("cd " HSAD_SRCDIR " && " HSAD_BIN " run kernels/vector_add.cl vector_add "
              "--grid 4096 --block 1024 --variants 0:0,1024:0,64:8 " VA_ARGS, &o);
  cr_assert_eq(rc, 0, "%s", o);
  const char *want =
      "variants of vector_add at workgroup size 1024 (gfx90a):\n"
      "  variant 0 (as written): 6 VGPRs, 0 spills, scratch 0 B/work-item, does not "
      "allow 1024 work-items (maximum 256)\n"
      "  variant 1 (wg<=1024): 6 VGPRs, 0 spills, scratch 0 B/work-item, 8 waves/SIMD\n"
      "  variant 2 (wg<=64 waves>=8): 6 VGPRs, 0 spills, scratch 0 B/work-item, does "
      "not allow 1024 work-items (maximum 64)\n"
      "choice: variant 1 (no spills, most waves; 1 of 3 variants allow 1024 work-items)\n";
  cr_assert(!strncmp(o, want, strlen(want)), "%s", o);
  cr_assert(strstr(o, "dispatch: 1D grid 4096x1x1, block 1024x1x1, 1 time(s) in order"), "%s", o);
  cr_assert(strstr(o, "arg 2 (f32 x 4096): sum 8388608, min 0.5, max 4095.5, first: 0.5 1.5 "
                      "2.5 3.5 4.5 5.5 6.5 7.5\n"), "%s", o);
  free(o);
  /* 64: every variant allows it */
  rc = sh("cd " HSAD_SRCDIR " && " HSAD_BIN " run kernels/vector_add.cl vector_add "
          "--grid 4096 --block 64 --variants 0:0,1024:0,64:8 --json " VA_ARGS, &o);
  cr_assert_eq(rc, 0, "%s", o);
  json_object *j = json_tokener_parse(o);
  cr_assert_not_null(j, "%s", o);
  cr_assert_eq(json_object_array_length(jget(j, "variants.candidates")), 3);
  cr_assert_eq(jint(j, "variants.candidates.1.max_workgroup_size"), 1024);
  cr_assert_eq(jint(j, "variants.candidates.2.min_waves_per_eu"), 8);
  cr_assert_eq(jint(j, "variants.candidates.2.max_flat_workgroup_size"), 64);
  cr_assert_eq(jint(j, "variants.candidates.0.waves_per_simd"), 8);
  cr_assert_str_eq(jstr(j, "variants.reason"), "no spills, most waves");
  int64_t ch = jint(j, "variants.choice"), best = 0;
  for (int64_t i = 1; i < 3; i++) { /* fewest VGPRs, then the lowest index */
    char p1[64], p2[64];
    snprintf(p1, sizeof p1, "variants.candidates.%d.vgpr", (int)i);
    snprintf(p2, sizeof p2, "variants.candidates.%d.vgpr", (int)best);
    if (jint(j, p1) < jint(j, p2)) best = i;
  }
  cr_assert_eq(ch, best);
  cr_assert_str_eq(jtext(j, "buffers.2.first"), "[ 0.5, 1.5, 2.5, 3.5, 4.5, 5.5, 6.5, 7.5 ]");
  json_object_put(j);
  free(o);
}

Test(dispatch_cli, run_variants_errors, .timeout = 180) {
  char *o;
  /* a bad LIST entry */
  int rc = sh(HSAD_BIN " run kernels/vector_add.cl vector_add --grid 64 --variants 0:0,256:x "
              VA_ARGS, &o);
  cr_assert_eq(rc, 2, "%s", o);
  cr_assert_str_eq(o, "hsad run: --variants 0:0,256:x: entry 1 '256:x': expected WG:WAVES (a "
                      "maximum workgroup size and a minimum of waves per SIMD, 0 = not set)\n");
  free(o);
  /* no variant allows the block */
  rc = sh("cd " HSAD_SRCDIR " && " HSAD_BIN " run kernels/vector_add.cl vector_add --grid 4096 "
          "--block 1024 --variants 0:0,64:8 " VA_ARGS, &o);
  cr_assert_eq(rc, 1, "%s", o);
  cr_assert_str_eq(o, "hsad run: HSAD_ERR_WORKGROUP: kernels/vector_add.cl[variant 0: wg<=0 "
                      "waves>=0]: kernel 'vector_add': no variant allows workgroup size 1024 "
                      "(variants allow up to 256, 64)\n");
  free(o);
  /* a budget the compiler cannot meet: 48 KiB of LDS leave one workgroup per CU */
  rc = sh("cd " HSAD_SRCDIR " && " HSAD_BIN " run tests/data/dispatch/lds48k.cl lds48k "
          "--grid 64 --variants 0:0,0:8 --arg buf:f32:64", &o);
  cr_assert_eq(rc, 1, "%s", o);
  cr_assert_str_eq(o, "hsad run: HSAD_ERR_COMPILE: tests/data/dispatch/lds48k.cl: kernel "
                      "'lds48k': the compiler cannot meet the budget of 8 waves per SIMD: "
                      "3 VGPRs (8 allocated), 6 SGPRs and 49152 LDS bytes allow 1 (lds)\n");
  free(o);
  /* auto skips that budget with its reason and runs */
  rc = sh("cd " HSAD_SRCDIR " && KFD_EMU_NO_TWIN=noop " HSAD_BIN " run "
          "tests/data/dispatch/lds48k.cl lds48k --grid 64 --block 64 --variants auto "
          "--arg buf:f32:64", &o);
  cr_assert_eq(rc, 0, "%s", o);
  cr_assert(strstr(o, "hsad run: warning: variant budget wg<=64 waves>=4 skipped: "
                      "tests/data/dispatch/lds48k.cl: kernel 'lds48k': the compiler cannot meet "
                      "the budget of 4 waves per SIMD: "), "%s", o);
  cr_assert(strstr(o, "choice: variant 0 (no spills, most waves; 2 of 2 variants allow 64 "
                      "work-items)\n"), "%s", o);
  cr_assert(strstr(o, "  variant 1 (wg<=64): 3 VGPRs, 0 spills, scratch 0 B/work-item, 1 "
                      "waves/SIMD\n"), "%s", o);
  free(o);
  /* a budget out of range */
  rc = sh("cd " HSAD_SRCDIR " && " HSAD_BIN " run kernels/vector_add.cl vector_add --grid 64 "
          "--variants 0:0,2048:0 " VA_ARGS, &o);
  cr_assert_eq(rc, 1, "%s", o);
  cr_assert_str_eq(o, "hsad run: HSAD_ERR_INVALID_ARGUMENT: kernels/vector_add.cl: budget maximum "
                      "workgroup size 2048: must be 1..1024\n");
  free(o);
  /* a compiled code object has no budgets to set */
  rc = sh(HSAD_BIN " run build/kernels/vector_add-gfx90a-v5.hsaco vector_add --grid 64 "
          "--variants auto " VA_ARGS, &o);
  cr_assert_eq(rc, 2, "%s", o);
  cr_assert_str_eq(o, "hsad run: --variants needs a source (.cl or .hip): register budgets are "
                      "set when it is compiled, build/kernels/vector_add-gfx90a-v5.hsaco is "
                      "compiled already\n");
  free(o);
}

/* --trace: the file parses back (json-c); one queue track named as rocprofv3 names it, one
 * slice per dispatch with the record as args, slices on one track never overlap. */
Test(dispatch_cli, run_trace_file, .timeout = 180) {
  char path[] = "/tmp/hsad-trace-XXXXXX.json", cmd[1024], *o;
  int fd = mkstemps(path, 5);
  cr_assert_geq(fd, 0);
  close(fd);
  snprintf(cmd, sizeof cmd, "cd " HSAD_SRCDIR " && " HSAD_BIN " run kernels/vector_add.cl "
           "vector_add --grid 4096 --block 256 --repeat 5 --trace %s " VA_ARGS, path);
  int rc = sh(cmd, &o);
  cr_assert_eq(rc, 0, "%s", o);
  char line[600];
  snprintf(line, sizeof line, "\ntrace: %s\n", path);
  cr_assert(strstr(o, line), "%s", o);
  free(o);
  json_object *root = json_object_from_file(path);
  cr_assert_not_null(root, "%s does not parse", path);
  unlink(path);
  cr_assert_str_eq(jstr(root, "displayTimeUnit"), "ns");
  json_object *ev = jget(root, "traceEvents");
  size_t n = json_object_array_length(ev);
  int64_t gpu_pid = (1ll << 30), qtid = -1, slices = 0, submits = 0;
  double ts[5], end[5];
  int64_t pkt[5];
  char track[64] = "", thread[64] = "", want_thread[64] = "";
  for (size_t i = 0; i < n; i++) {
    json_object *e = json_object_array_get_idx(ev, i);
    const char *ph = jstr(e, "ph"), *name = jstr(e, "name");
    if (!strcmp(ph, "M") && jint(e, "pid") == gpu_pid && !strcmp(name, "process_name"))
      cr_assert_str_eq(jstr(e, "args.name"), "GPU 0 gfx90a");
    if (!strcmp(ph, "M") && jint(e, "pid") == gpu_pid && !strcmp(name, "thread_name")) {
      cr_assert_eq(qtid, -1, "one queue track");
      qtid = jint(e, "tid");
      snprintf(track, sizeof track, "%s", jstr(e, "args.name"));
    }
    if (!strcmp(ph, "M") && jint(e, "pid") != gpu_pid && !strcmp(name, "thread_name")) {
      cr_assert_str_eq(thread, "", "one thread track");
      snprintf(thread, sizeof thread, "%s", jstr(e, "args.name"));
      /* hsad submits from its main thread: THREAD 0 (<its pid, also its tid>) */
      snprintf(want_thread, sizeof want_thread, "THREAD 0 (%lld)", (long long)jint(e, "pid"));
      cr_assert_eq(jint(e, "tid"), jint(e, "pid"));
    }
    if (!strcmp(ph, "X") && !strcmp(name, "submit vector_add")) submits++;
    if (!strcmp(ph, "X") && jint(e, "pid") == gpu_pid) {
      cr_assert_str_eq(name, "vector_add");
      cr_assert_lt(slices, 5);
      ts[slices] = json_object_get_double(jget(e, "ts"));
      end[slices] = ts[slices] + json_object_get_double(jget(e, "dur"));
      pkt[slices] = jint(e, "args.packet_id");
      cr_assert_str_eq(jtext(e, "args.grid"), "[ 4096, 1, 1 ]");
      cr_assert_str_eq(jtext(e, "args.workgroup"), "[ 256, 1, 1 ]");
      cr_assert_str_eq(jstr(e, "args.kernel"), "vector_add");
      cr_assert_eq(jint(e, "args.dims"), 1);
      cr_assert_eq(jint(e, "args.vgpr_spill_count"), 0);
      cr_assert_eq(jint(e, "tid"), qtid);
      slices++;
    }
  }
  cr_assert_eq(slices, 5);
  cr_assert_eq(submits, 5);
  /* rocprofv3's names: GPU 0 is KFD node 1 (node 0 is the CPU), the agent's first queue */
  cr_assert_str_eq(track, "COMPUTE Agent [1] QUEUE [0] GPU");
  cr_assert_str_eq(thread, want_thread);
  /* one dispatch per packet, in order, never overlapping on the track */
  for (int i = 1; i < 5; i++) {
    cr_assert_eq(pkt[i], pkt[0] + i);
    cr_assert_geq(ts[i], end[i - 1], "slice %d starts before %d ends", i, i - 1);
  }
  json_object_put(root);
}

/* --trace with --repeat beyond the profiling queue's 1024 packets of device times: the records
 * are drained every quarter ring, so all 2500 dispatches keep their device slice (before, the
 * first 1476 lost theirs silently), one per packet, on one track, never overlapping, and
 * nothing is reported dropped. */
Test(dispatch_cli, run_trace_repeat_beyond_the_ring, .timeout = 180) {
  char path[] = "/tmp/hsad-trace-XXXXXX.json", cmd[1024], *o;
  int fd = mkstemps(path, 5);
  cr_assert_geq(fd, 0);
  close(fd);
  snprintf(cmd, sizeof cmd, "cd " HSAD_SRCDIR " && " HSAD_BIN " run kernels/vector_add.cl "
           "vector_add --grid 4096 --block 256 --repeat 2500 --trace %s " VA_ARGS, path);
  int rc = sh(cmd, &o);
  cr_assert_eq(rc, 0, "%s", o);
  cr_assert_null(strstr(o, "not traced"), "%s", o);
  free(o);
  json_object *root = json_object_from_file(path);
  cr_assert_not_null(root, "%s does not parse", path);
  unlink(path);
  json_object *ev = jget(root, "traceEvents");
  size_t n = json_object_array_length(ev);
  int64_t gpu_pid = (1ll << 30), qtid = -1;
  int64_t *pkt = calloc(2500, sizeof *pkt);
  double *ts = calloc(2500, sizeof *ts), *end = calloc(2500, sizeof *end);
  int slices = 0, submits = 0, tracks = 0, s = 0, f = 0;
  for (size_t i = 0; i < n; i++) {
    json_object *e = json_object_array_get_idx(ev, i);
    const char *ph = jstr(e, "ph"), *name = jstr(e, "name");
    if (!strcmp(ph, "M") && jint(e, "pid") == gpu_pid && !strcmp(name, "thread_name")) {
      tracks++;
      qtid = jint(e, "tid");
      cr_assert_str_eq(jstr(e, "args.name"), "COMPUTE Agent [1] QUEUE [0] GPU");
    }
    if (!strcmp(ph, "X") && jint(e, "pid") != gpu_pid) submits++;
    if (!strcmp(ph, "X") && jint(e, "pid") == gpu_pid) {
      cr_assert_lt(slices, 2500);
      cr_assert_eq(jint(e, "tid"), qtid);
      ts[slices] = json_object_get_double(jget(e, "ts"));
      end[slices] = ts[slices] + json_object_get_double(jget(e, "dur"));
      pkt[slices++] = jint(e, "args.packet_id");
    }
    s += !strcmp(ph, "s");
    f += !strcmp(ph, "f");
  }
  cr_assert_eq(tracks, 1);
  cr_assert_eq(submits, 2500);
  cr_assert_eq(slices, 2500);
  cr_assert_eq(s, 2500);
  cr_assert_eq(f, 2500);
  /* in packet order; the run's completion marks (a barrier-AND every 256 dispatches, and the
   * last dispatch's) take packet ids between them */
  int gaps = 0;
  for (int i = 1; i < 2500; i++) {
    cr_assert_gt(pkt[i], pkt[i - 1]);
    cr_assert_leq(pkt[i] - pkt[i - 1], 2, "packets %lld -> %lld", (long long)pkt[i - 1],
                  (long long)pkt[i]);
    gaps += pkt[i] - pkt[i - 1] == 2;
    cr_assert_geq(ts[i], end[i - 1], "slice %d starts before %d ends", i, i - 1);
  }
  cr_assert_eq(gaps, 9, "a completion mark after dispatches 255, 511, ..., 2303");
  free(pkt);
  free(ts);
  free(end);
  json_object_put(root);
}
