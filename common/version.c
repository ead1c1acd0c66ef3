/* version.c - hsad_version(): the version libhsad was built as (common/hsad_version.h). */
#include "common/hsad_version.h"

#define HSAD_STR_(x) #x
#define HSAD_STR(x) HSAD_STR_(x)

uint32_t hsad_version(void) { return HSAD_VERSION; }

const char *hsad_version_string(void) {
  return HSAD_STR(HSAD_VERSION_MAJOR) "." HSAD_STR(HSAD_VERSION_MINOR) "." HSAD_STR(
      HSAD_VERSION_PATCH);
}
