/* hsad_cli.h - entry points of the hsad commands (one file each in tools/hsad/).
 * Each takes argv with argv[0] = the command name and returns the process exit code:
 * 0 success, 1 failure (message on stderr), 2 usage error. */
#ifndef HSAD_CLI_H
#define HSAD_CLI_H

int hsad_cmd_info(int argc, char **argv);
int hsad_cmd_inspect(int argc, char **argv);
int hsad_cmd_compile(int argc, char **argv);
int hsad_cmd_run(int argc, char **argv);
int hsad_cmd_bench(int argc, char **argv);
int hsad_cmd_graph(int argc, char **argv);

#endif
