/* hsad_cli.h - entry points of the hsad commands (one file each in tools/hsad/) and the helpers
 * they share (tools/hsad/cli.c, tools/hsad/demangle.cc; kernel arguments: hsad_cli_args.h).
 *
 * Each command takes argv with argv[0] = the command name and returns the process exit code:
 * 0 success, 1 failure, 2 usage error. Options are parsed with getopt_long (`--opt value` and
 * `--opt=value`); errors go through hsad_cli_fail: "hsad CMD: MESSAGE" on stderr, or, when the
 * command line holds --json, one JSON object on stdout (json-c):
 *   {"error": {"command": "run", "status": "HSAD_ERR_KERNEL_NOT_FOUND", "exit_code": 1,
 *              "message": "..."}}
 * status is the hsad_status_t name for library failures, "usage" for command-line errors and
 * "error" for others (a file that cannot be read, ...). Not thread-safe (one command per
 * process). */
#ifndef HSAD_CLI_H
#define HSAD_CLI_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/hsad_status.h"
#include "hsa-dispatch/hsad.h"

int hsad_cmd_info(int argc, char **argv);
int hsad_cmd_inspect(int argc, char **argv);
int hsad_cmd_compile(int argc, char **argv);
int hsad_cmd_run(int argc, char **argv);
int hsad_cmd_bench(int argc, char **argv);
int hsad_cmd_graph(int argc, char **argv);

/* One command's reporting context. */
typedef struct hsad_cli {
  const char *cmd; /* "run", "info", ... */
  bool json;       /* errors as JSON on stdout */
} hsad_cli_t;

/* True when argv[1..argc) holds "--json" (looked for before option parsing, so errors found
 * while parsing are already reported as JSON). */
bool hsad_cli_wants_json(int argc, char **argv);

/* Reports a failure (printf-style message, no trailing newline needed) and returns exit_code.
 * status: "usage", "error" or an hsad_status_t name. */
int hsad_cli_fail(const hsad_cli_t *cli, int exit_code, const char *status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Reports a library failure: the status name and hsad_last_error(); returns 1. */
int hsad_cli_fail_status(const hsad_cli_t *cli, hsad_status_t s);

/* The getopt_long error for the option at argv[optind - 1] (getopt returned '?' or ':' with an
 * optstring starting with ':'): "unknown option '--x'" or "option '--grid' needs a value".
 * Returns 2. */
int hsad_cli_getopt_fail(const hsad_cli_t *cli, int ret, char **argv);

/* ---- commands as phases (hsad run, graph, compile): each phase is a function returning 0 to
 * go on, or what ends the command: its exit code, or HSAD_CLI_DONE (done without a failure,
 * --help: the command exits 0). */
#define HSAD_CLI_DONE (-1)
/* Runs a phase; its nonzero result returns from the calling function. */
#define HSAD_CLI_TRY(phase)                                                                   \
  do {                                                                                        \
    int rc_ = (phase);                                                                        \
    if (rc_) return rc_;                                                                      \
  } while (0)

/* A command's option scan: getopt_long over argv (argv[0] the command's name; a fresh scan,
 * getopt's own messages off) with `optstring` (starting with ':', so that a missing value is
 * told from an unknown option) and `longopts`, each option it returns and its value (optarg)
 * handed to the phase option(ctx, opt, value, argv). Returns option's first nonzero result, or
 * 0 with optind at the first operand (GNU getopt_long moves the operands after the options). */
struct option;
int hsad_cli_getopt(int argc, char **argv, const char *optstring, const struct option *longopts,
                    int (*option)(void *ctx, int opt, const char *value, char **argv), void *ctx);

/* The whole of file `path` (any file that reads as a stream), malloc'd with a NUL after its
 * *out_size bytes (the caller frees). NULL with errno set (fopen's, fread's, ENOMEM). */
char *hsad_cli_slurp(const char *path, size_t *out_size);

/* qsort's comparison of two uint64_t, ascending. */
int hsad_cli_cmp_u64(const void *a, const void *b);

/* Prints obj on stdout (json-c, JSON_C_TO_STRING_SPACED) and a newline; drops the reference. */
void hsad_cli_print_json(json_object *obj);

/* A double for JSON: null when not finite (JSON has no inf/nan); else the value, serialized
 * with `fmt` ("%.9g" for f32 values, "%.17g" for f64) so floats print at their precision. */
json_object *hsad_cli_json_double(double v, const char *fmt);

/* The demangled form of an Itanium C++ ABI name (_Z...) through libstdc++'s
 * abi::__cxa_demangle, malloc'd (caller frees); NULL when `name` is not a mangled name. */
char *hsad_cli_demangle(const char *name);

/* Kernels a message lists at most (then "and 60 more"). */
#define HSAD_CLI_LIST_MAX 20

/* The kernel a user named by a C++ name, among n kernels whose .name is name_at(ctx, i) (the
 * exact .name / symbol lookup is the caller's, first): the one whose demangled name is `name`,
 * or whose function name is, qualified or not ("scale" for "scale(float*, int)",
 * "init_engines_kernel" or "ns::init_engines_kernel" for "ns::init_engines_kernel(int*)",
 * "generate_kernel" for "void ns::generate_kernel<int>(int*)"). 0 with *out_index when
 * exactly one matches; else -1 with *out_why (malloc'd; NULL when out of memory):
 *   "no kernel named 'nope'; it has 3: _Z5scalePffj (scale(float*, float, unsigned int)), ..."
 *   "ambiguous: 2 kernels match 'scale': A (a), B (b); give the full name of one"
 * each list capped at HSAD_CLI_LIST_MAX names ("... and 60 more"). */
int hsad_cli_kernel_match(const char *name, uint32_t n,
                          const char *(*name_at)(const void *ctx, uint32_t i), const void *ctx,
                          uint32_t *out_index, char **out_why);

/* The kernel of a loaded program a user named (hsad run's KERNEL, hsad graph's "kernel" under
 * "kernels"): hsad_program_kernel's exact .name / symbol lookup, then hsad_cli_kernel_match.
 * HSAD_OK with *out; HSAD_ERR_KERNEL_NOT_FOUND with *out_why (malloc'd: "no kernel named ...;
 * it has ..." or "ambiguous: ..."; the caller names the file); another status with
 * hsad_last_error() (HSAD_ERR_OUT_OF_MEMORY when the message could not be built). */
hsad_status_t hsad_cli_program_kernel(const hsad_program_t *prog, const char *name,
                                      const hsad_device_kernel_t **out, char **out_why);

/* hsad inspect for NVIDIA programs (cmd_inspect_nv.c): cubins, fatbins, PTX. */
typedef struct hsad_nv_inspect_opts {
  const char *file, *kernel;
  bool json, pressure, block_set;
  unsigned block; /* threads per block for the occupancy line; --pressure: only this size */
} hsad_nv_inspect_opts_t;
bool hsad_inspect_nv_detect(const char *path);
int hsad_inspect_nv(const hsad_nv_inspect_opts_t *opts, const hsad_cli_t *cli);
int hsad_compile_nv(int argc, char **argv, const hsad_cli_t *cli);

#endif
