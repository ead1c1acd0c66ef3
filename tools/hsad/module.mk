# tools/hsad: the hsad command. Each command adds its own file here.
HSAD_TOOL_SRCS += tools/hsad/main.c
HSAD_TOOL_SRCS += tools/hsad/cmd_inspect.c tools/hsad/cmd_compile.c
HSAD_TOOL_SRCS += tools/hsad/cmd_info.c tools/hsad/cmd_run.c tools/hsad/cmd_bench.c
