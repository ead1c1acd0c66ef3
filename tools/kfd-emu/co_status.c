/* co_status.c - the message functions of common/hsad_status.h for kfd-emu's own copy of
 * codeobj/ (module.mk: kernels.c reads kernel metadata with it), in place of common/status.c.
 *
 * kfd-emu is dlopened (by ROCr, or by libhsad before ROCr) and has initial-exec TLS (fault.c,
 * ring_watch.c), so all its thread-local storage comes from glibc's small static TLS surplus:
 * status.c's 1 KiB per-thread message made the dlopen fail ("cannot allocate memory in static
 * TLS block"). Here a thread's message is a heap buffer (8 bytes of TLS), allocated on its
 * first failure and freed when the thread ends. Hidden like the rest (the version script). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/hsad_status.h"

#define CO_MESSAGE_BYTES 1024

static __thread char *co_message;
static pthread_key_t co_message_key;
static pthread_once_t co_message_once = PTHREAD_ONCE_INIT;
static void co_message_key_init(void) { pthread_key_create(&co_message_key, free); }

const char *hsad_last_error(void) { return co_message ? co_message : ""; }

hsad_status_t hsad_failv(hsad_status_t status, const char *fmt, va_list ap) {
  if (!co_message) {
    pthread_once(&co_message_once, co_message_key_init);
    co_message = malloc(CO_MESSAGE_BYTES);
    if (!co_message) return status; /* out of memory: the status without its message */
    pthread_setspecific(co_message_key, co_message);
  }
  vsnprintf(co_message, CO_MESSAGE_BYTES, fmt, ap);
  return status;
}

hsad_status_t hsad_fail(hsad_status_t status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  hsad_failv(status, fmt, ap);
  va_end(ap);
  return status;
}
