/* monitor_common.h - monitoring's vendor-neutral internals (monitor_common.c), shared by AMD's
 * monitor (monitor.c), the NVIDIA backend's (nvidia/nv_monitor.c) and the front of the build
 * without AMD (front.c). Not installed; needs no ROCm header. */
#ifndef HSAD_MONITOR_COMMON_H
#define HSAD_MONITOR_COMMON_H

#include <stdarg.h>

#include "hsa-dispatch/hsad.h"
#include "hsa-dispatch/hsad_monitor.h"

/* An alert once per (kernel, reason) for the process, to o->alert or one stderr line
 * ("hsad: alert REASON: MESSAGE"); nothing when o->no_alerts. Thread-safe. */
void dq_monitor_alert(const hsad_monitor_options_t *o, hsad_queue_t *q, hsad_alert_reason_t reason,
                      const char *kernel, uint64_t packet_id, uint64_t value, uint64_t threshold,
                      const char *fmt, ...) __attribute__((format(printf, 8, 9)));
void dq_monitor_alert_v(const hsad_monitor_options_t *o, hsad_queue_t *q, hsad_alert_reason_t reason,
                        const char *kernel, uint64_t packet_id, uint64_t value, uint64_t threshold,
                        const char *fmt, va_list ap);
/* hsad_queue_monitor_enable's option checks and defaults into *out (errors name `what`:
 * "WHAT: capacity N records: must be a power of two up to 16777216"). */
hsad_status_t dq_monitor_options(const char *what, const hsad_monitor_options_t *o,
                                 hsad_monitor_options_t *out);
/* A queue just created: monitored when hsad_monitor_enable_process is on (out of memory: it
 * runs unmonitored; hsad_queue_monitor_enable can retry). */
void dq_monitor_queue_created(hsad_queue_t *q);

#endif
