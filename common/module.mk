# common: status codes and messages, linked into libhsad.
HSAD_LIB_SRCS += common/status.c
HEADERS += common/hsad_status.h
