/* hsad - command-line front end of hsa-dispatch.
 *
 * Device selection is libhsad's (hsa-dispatch/hsad_rocr.h): with /dev/kfd present the GPU is
 * used through the system's libhsakmt; without it (or with HSAD_DEVICE=emu) kfd-emu's
 * libhsakmt.so.1 is loaded before ROCr, so the unmodified ROCr runs on the emulated GPU.
 * HSAD_DEVICE=hw without /dev/kfd is an error. Commands that need no GPU (inspect, compile)
 * never load ROCr.
 */
#include "tools/hsad/hsad_cli.h"

#include "common/hsad_version.h"

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
int hsad_cmd_graph(int argc, char **argv) __attribute__((weak));

static const struct {
  const char *name;
  const char *help;
} commands[] = {
    {"info", "agents, ISAs, CUs, queues, memory pools, NUMA"},
    {"inspect", "code object metadata, registers, occupancy"},
    {"compile", "OpenCL C / HIP source to a code object (comgr)"},
    {"run", "compile or load a kernel, dispatch it, check results"},
    {"bench", "dispatch benchmarks side by side (hsad, ROCr, HIP)"},
    {"graph", "a kernel graph from JSON, launched fused (or --sequential)"},
};

static int (*command_fn(const char *name))(int, char **) {
  if (!strcmp(name, "info")) return hsad_cmd_info;
  if (!strcmp(name, "inspect")) return hsad_cmd_inspect;
  if (!strcmp(name, "compile")) return hsad_cmd_compile;
  if (!strcmp(name, "run")) return hsad_cmd_run;
  if (!strcmp(name, "bench")) return hsad_cmd_bench;
  if (!strcmp(name, "graph")) return hsad_cmd_graph;
  return NULL;
}

static void usage(FILE *f) {
  fprintf(f, "usage: hsad COMMAND [ARGS]   (hsad COMMAND --help for each)\n"
             "       hsad --version\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].help);
  fprintf(f, "\nenvironment:\n"
             "  HSAD_DEVICE=emu|hw   force kfd-emu or the real GPU (default: hw if /dev/kfd "
             "exists)\n");
}

int main(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("hsad %s\n", hsad_version_string());
    return 0;
  }
  int (*fn)(int, char **) = command_fn(argv[1]);
  size_t i = 0;
  for (; i < sizeof commands / sizeof commands[0]; i++)
    if (!strcmp(commands[i].name, argv[1])) break;
  if (i == sizeof commands / sizeof commands[0]) {
    if (hsad_cli_wants_json(argc - 1, argv + 1)) { /* --json: the error object, no usage text */
      char names[256];
      size_t k = 0;
      for (size_t c = 0; c < sizeof commands / sizeof commands[0]; c++)
        k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", c ? ", " : "", commands[c].name);
      hsad_cli_t cli = {.cmd = argv[1], .json = true};
      return hsad_cli_fail(&cli, 2, "usage", "unknown command '%s' (commands: %s)", argv[1], names);
    }
    fprintf(stderr, "hsad: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
  }
  if (!fn) {
    fprintf(stderr, "hsad: command '%s' is not part of this build\n", argv[1]);
    return 2;
  }
  return fn(argc - 1, argv + 1);
}
