/* status.c - names and per-thread messages of hsad_status_t. */
#include "common/hsad_status.h"

#include <stdio.h>

static _Thread_local char tls_message[1024];

const char *hsad_status_name(hsad_status_t status) {
  switch (status) {
#define HSAD_NAME(x) case x: return #x;
    HSAD_NAME(HSAD_OK)
    HSAD_NAME(HSAD_ERR_INVALID_ARGUMENT)
    HSAD_NAME(HSAD_ERR_OUT_OF_MEMORY)
    HSAD_NAME(HSAD_ERR_IO)
    HSAD_NAME(HSAD_ERR_UNSUPPORTED)
    HSAD_NAME(HSAD_ERR_TIMEOUT)
    HSAD_NAME(HSAD_ERR_RESOURCE_EXHAUSTED)
    HSAD_NAME(HSAD_ERR_HSA)
    HSAD_NAME(HSAD_ERR_CLOSED)
    HSAD_NAME(HSAD_ERR_DRIVER)
    HSAD_NAME(HSAD_ERR_NOT_ELF)
    HSAD_NAME(HSAD_ERR_TRUNCATED)
    HSAD_NAME(HSAD_ERR_BAD_ELF)
    HSAD_NAME(HSAD_ERR_CODE_OBJECT_VERSION)
    HSAD_NAME(HSAD_ERR_BAD_NOTE)
    HSAD_NAME(HSAD_ERR_BAD_METADATA)
    HSAD_NAME(HSAD_ERR_METADATA_TYPE)
    HSAD_NAME(HSAD_ERR_UNKNOWN_VALUE_KIND)
    HSAD_NAME(HSAD_ERR_MISSING_DESCRIPTOR)
    HSAD_NAME(HSAD_ERR_KERNEL_NOT_FOUND)
    HSAD_NAME(HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND)
    HSAD_NAME(HSAD_ERR_TARGET_MISMATCH)
    HSAD_NAME(HSAD_ERR_ARG_COUNT)
    HSAD_NAME(HSAD_ERR_ARG_SIZE)
    HSAD_NAME(HSAD_ERR_ARG_KIND)
    HSAD_NAME(HSAD_ERR_ARG_VALUE)
    HSAD_NAME(HSAD_ERR_COMPILE)
    HSAD_NAME(HSAD_ERR_DEVICE_INDEX)
    HSAD_NAME(HSAD_ERR_ISA_MISMATCH)
    HSAD_NAME(HSAD_ERR_GRID)
    HSAD_NAME(HSAD_ERR_WORKGROUP)
    HSAD_NAME(HSAD_ERR_LDS_LIMIT)
    HSAD_NAME(HSAD_ERR_SCRATCH_LIMIT)
    HSAD_NAME(HSAD_ERR_QUEUE_ERROR)
    HSAD_NAME(HSAD_ERR_NO_DEVICE)
    HSAD_NAME(HSAD_ERR_GRAPH)
    HSAD_NAME(HSAD_ERR_NUMA)
    HSAD_NAME(HSAD_ERR_NOT_ALLOCATED)
    HSAD_NAME(HSAD_ERR_FREED)
    HSAD_NAME(HSAD_ERR_RANGE)
    HSAD_NAME(HSAD_ERR_OVERLAP)
    HSAD_NAME(HSAD_ERR_NO_ACCESS)
    HSAD_NAME(HSAD_ERR_IN_USE)
#undef HSAD_NAME
  }
  return "HSAD_ERR_UNKNOWN";
}

const char *hsad_last_error(void) { return tls_message; }

void hsad_clear_error(void) { tls_message[0] = '\0'; }

hsad_status_t hsad_failv(hsad_status_t status, const char *fmt, va_list ap) {
  vsnprintf(tls_message, sizeof tls_message, fmt, ap);
  return status;
}

hsad_status_t hsad_fail(hsad_status_t status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hsad_failv(status, fmt, ap);
  va_end(ap);
  return status;
}
