# common: status codes and messages, linked into libhsad.
HSAD_LIB_SRCS += common/status.c common/null_args.c
HEADERS += common/hsad_status.h
HSAD_LIB_SRCS += common/version.c
HEADERS += common/hsad_version.h
# the version of hsad.pc comes from the header's macros
HSAD_VERSION_STR := $(shell sed -n 's/^\#define HSAD_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\)$$/\2/p' \
  common/hsad_version.h | paste -sd. -)
