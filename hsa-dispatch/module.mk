# hsa-dispatch: runtime, devices, programs, queues and the AQL dispatch path (libhsad).
HSAD_LIB_SRCS += hsa-dispatch/runtime.c hsa-dispatch/program.c hsa-dispatch/queue.c
HEADERS += hsa-dispatch/hsad.h hsa-dispatch/hsad_queue.h hsa-dispatch/hsad_aql.h
