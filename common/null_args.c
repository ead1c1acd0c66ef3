/* null_args.c - hsad_null_args (common/hsad_status.h): the one NULL-pointer check every public
 * call's argument errors go through, so each message names one parameter. Only hsad_fail is
 * used, so kfd-emu's codeobj/ copy links it with its own message functions (co_status.c). */
#include "common/hsad_status.h"

hsad_status_t hsad_null_args(const char *fn, const hsad_arg_t *args, unsigned count) {
  for (unsigned i = 0; i < count; i++)
    if (!args[i].ptr) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: NULL %s", fn, args[i].name);
  return HSAD_OK;
}
