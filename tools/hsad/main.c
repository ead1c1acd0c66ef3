/* hsad - command-line front end of hsa-dispatch.
 *
 * Device selection: with /dev/kfd present hsad uses the GPU through the system's libhsakmt.
 * Without it (or with HSAD_DEVICE=emu) hsad re-executes itself once with kfd-emu's
 * libhsakmt.so.1 first on LD_LIBRARY_PATH, so the unmodified ROCr runs on the emulated GPU.
 * HSAD_DEVICE=hw without /dev/kfd is an error. Commands that need no ROCr (inspect, compile)
 * never load it.
 */
#include "tools/hsad/hsad_cli.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Commands live in their own files; a command whose file is not built is reported as such. */
int hsad_cmd_info(int argc, char **argv) __attribute__((weak));
int hsad_cmd_inspect(int argc, char **argv) __attribute__((weak));
int hsad_cmd_compile(int argc, char **argv) __attribute__((weak));
int hsad_cmd_run(int argc, char **argv) __attribute__((weak));
int hsad_cmd_bench(int argc, char **argv) __attribute__((weak));

static const struct {
  const char *name;
  int needs_device;
  const char *help;
} commands[] = {
    {"info", 1, "agents, ISAs, CUs, queues, memory pools, NUMA"},
    {"inspect", 0, "code object metadata, registers, occupancy"},
    {"compile", 0, "OpenCL C / HIP source to a code object (comgr)"},
    {"run", 1, "compile or load a kernel, dispatch it, check results"},
    {"bench", 1, "dispatch benchmarks side by side (hsad, ROCr, HIP)"},
};

static int (*command_fn(const char *name))(int, char **) {
  if (!strcmp(name, "info")) return hsad_cmd_info;
  if (!strcmp(name, "inspect")) return hsad_cmd_inspect;
  if (!strcmp(name, "compile")) return hsad_cmd_compile;
  if (!strcmp(name, "run")) return hsad_cmd_run;
  if (!strcmp(name, "bench")) return hsad_cmd_bench;
  return NULL;
}

static void usage(FILE *f) {
  fprintf(f, "usage: hsad COMMAND [ARGS]   (hsad COMMAND --help for each)\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
  fprintf(f, "\nenvironment:\n"
             "  HSAD_DEVICE=emu|hw   force kfd-emu or the real GPU (default: hw if /dev/kfd "
             "exists)\n");
}

/* Directory of kfd-emu relative to this executable: BIN/../lib/hsad/kfd-emu. */
static int emu_dir(char *out, size_t n) {
  char exe[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) return -1;
  exe[len] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash) return -1;
  *slash = '\0';
  int w = snprintf(out, n, "%s/../lib/hsad/kfd-emu", exe);
  return (w < 0 || (size_t)w >= n) ? -1 : 0;
}

int hsad_select_device(char **argv) {
  const char *want = getenv("HSAD_DEVICE");
  int have_kfd = access("/dev/kfd", R_OK | W_OK) == 0;
  if (want && strcmp(want, "emu") && strcmp(want, "hw")) {
    fprintf(stderr, "hsad: HSAD_DEVICE=%s: expected 'emu' or 'hw'\n", want);
    return -1;
  }
  if (want && !strcmp(want, "hw")) {
    if (!have_kfd) {
      fprintf(stderr, "hsad: HSAD_DEVICE=hw but /dev/kfd is absent or not accessible: no AMD "
                      "GPU driver here (unset HSAD_DEVICE or set HSAD_DEVICE=emu for kfd-emu)\n");
      return -1;
    }
    return 0;
  }
  if (have_kfd && !want) return 0;
  if (getenv("HSAD_EMU_ACTIVE")) return 0; /* already re-executed with kfd-emu */
  char dir[PATH_MAX], lib[PATH_MAX + 32];
  if (emu_dir(dir, sizeof dir) != 0) {
    fprintf(stderr, "hsad: cannot locate the executable to find kfd-emu\n");
    return -1;
  }
  snprintf(lib, sizeof lib, "%s/libhsakmt.so.1", dir);
  if (access(lib, R_OK) != 0) {
    fprintf(stderr, "hsad: no /dev/kfd and kfd-emu not found at %s (build it with make)\n", lib);
    return -1;
  }
  const char *old = getenv("LD_LIBRARY_PATH");
  size_t sz = strlen(dir) + (old ? strlen(old) : 0) + 2;
  char *path = malloc(sz);
  if (!path) return -1;
  snprintf(path, sz, "%s%s%s", dir, old && *old ? ":" : "", old ? old : "");
  setenv("LD_LIBRARY_PATH", path, 1);
  setenv("HSAD_EMU_ACTIVE", "1", 1);
  free(path);
  execv("/proc/self/exe", argv);
  fprintf(stderr, "hsad: re-executing with kfd-emu failed\n");
  return -1;
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  int (*fn)(int, char **) = command_fn(argv[1]);
  size_t i = 0;
  for (; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(commands[i].name, argv[1])) break;
  if (i == sizeof commands / sizeof commands[0]) {
    fprintf(stderr, "hsad: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
  }
  if (!fn) {
    fprintf(stderr, "hsad: command '%s' is not part of this build\n", argv[1]);
    return 2;
  }
  if (commands[i].needs_device && hsad_select_device(argv) != 0) return 1;
  return fn(argc - 1, argv + 1);
}
