/* monitor_common.c - the vendor-neutral part of monitoring (hsad_monitor.h): alert reasons
 * and execution names, alerts once per (kernel, reason) for the process, the options' checks
 * and defaults, process-wide monitoring of queues created afterwards. Built with every
 * backend (make BACKENDS=nvidia too: needs no ROCm header); AMD's records are monitor.c's,
 * NVIDIA's nvidia/nv_monitor.c's. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hsa-dispatch/monitor_common.h"

/* ---- alerts: once per (kernel name, reason) for the process ---- */

typedef struct mon_raised {
  char *kernel;
  hsad_alert_reason_t reason;
} mon_raised_t;

static pthread_mutex_t mon_alert_lock = PTHREAD_MUTEX_INITIALIZER;
static mon_raised_t *mon_raised;
static size_t mon_raised_count, mon_raised_cap;

const char *hsad_alert_reason_name(hsad_alert_reason_t reason) {
  switch (reason) {
  case HSAD_ALERT_SPILL_RATIO: return "spill-ratio";
  case HSAD_ALERT_LOW_OCCUPANCY: return "low-occupancy";
  case HSAD_ALERT_SCRATCH_LIMIT: return "scratch-limit";
  case HSAD_ALERT_SCRATCH_GROWTH: return "scratch-growth";
  case HSAD_ALERT_EMU_HOST_TWIN: return "emu-host-twin";
  case HSAD_ALERT_EMU_NO_CODE: return "emu-no-code";
  }
  return "unknown";
}

const char *hsad_execution_name(hsad_execution_t e) {
  switch (e) {
  case HSAD_EXECUTION_DEVICE: return "device";
  case HSAD_EXECUTION_EMU_SOURCE: return "emu-source";
  case HSAD_EXECUTION_EMU_TWIN: return "emu-twin";
  case HSAD_EXECUTION_EMU_NONE: return "emu-none";
  case HSAD_EXECUTION_EMU_BUILD_FAILED: return "emu-build-failed";
  case HSAD_EXECUTION_UNKNOWN: break;
  }
  return "unknown";
}

/* True the first time (kernel, reason) is seen (remembered then). */
static bool alert_first(const char *kernel, hsad_alert_reason_t reason) {
  bool first = true;
  pthread_mutex_lock(&mon_alert_lock);
  for (size_t i = 0; i < mon_raised_count && first; i++)
    if (mon_raised[i].reason == reason && !strcmp(mon_raised[i].kernel, kernel)) first = false;
  if (first) {
    if (mon_raised_count == mon_raised_cap) {
      size_t cap = mon_raised_cap ? 2 * mon_raised_cap : 16;
      mon_raised_t *n = realloc(mon_raised, cap * sizeof *n);
      if (n) mon_raised = n, mon_raised_cap = cap;
    }
    char *copy = mon_raised_count < mon_raised_cap ? strdup(kernel) : NULL;
    if (copy) mon_raised[mon_raised_count++] = (mon_raised_t){copy, reason};
    /* out of memory: the alert is delivered, and may be delivered again later */
  }
  pthread_mutex_unlock(&mon_alert_lock);
  return first;
}

void hsad_monitor_alerts_reset(void) {
  pthread_mutex_lock(&mon_alert_lock);
  for (size_t i = 0; i < mon_raised_count; i++) free(mon_raised[i].kernel);
  free(mon_raised);
  mon_raised = NULL;
  mon_raised_count = mon_raised_cap = 0;
  pthread_mutex_unlock(&mon_alert_lock);
}

void dq_monitor_alert_v(const hsad_monitor_options_t *o, hsad_queue_t *q, hsad_alert_reason_t reason,
                    const char *kernel, uint64_t packet_id, uint64_t value, uint64_t threshold,
                    const char *fmt, va_list ap) {
  if (o->no_alerts || !alert_first(kernel, reason)) return;
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  hsad_monitor_alert_t a = {.reason = reason, .kernel = kernel, .queue = q,
                            .packet_id = packet_id, .value = value, .threshold = threshold,
                            .message = msg};
  if (o->alert)
    o->alert(&a, o->alert_user);
  else
    fprintf(stderr, "hsad: alert %s: %s\n", hsad_alert_reason_name(reason), msg);
}

void dq_monitor_alert(const hsad_monitor_options_t *o, hsad_queue_t *q, hsad_alert_reason_t reason,
                      const char *kernel, uint64_t packet_id, uint64_t value, uint64_t threshold,
                      const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  dq_monitor_alert_v(o, q, reason, kernel, packet_id, value, threshold, fmt, ap);
  va_end(ap);
}


/* ---- options ---- */

static hsad_monitor_options_t with_defaults(const hsad_monitor_options_t *o);

static hsad_status_t check_options(const char *what, const hsad_monitor_options_t *o) {
  if (o && o->capacity && ((o->capacity & (o->capacity - 1)) || o->capacity > (1u << 24)))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: capacity %u records: must be a power of two "
                     "up to 16777216", what, o->capacity);
  return HSAD_OK;
}

hsad_status_t dq_monitor_options(const char *what, const hsad_monitor_options_t *o,
                                 hsad_monitor_options_t *out) {
  hsad_status_t s = check_options(what, o);
  if (!s) *out = with_defaults(o);
  return s;
}

static hsad_monitor_options_t with_defaults(const hsad_monitor_options_t *o) {
  hsad_monitor_options_t r = o ? *o : (hsad_monitor_options_t){0};
  if (!r.capacity) r.capacity = 4096;
  if (!r.spill_ratio_percent) r.spill_ratio_percent = 10;
  if (!r.occupancy_percent) r.occupancy_percent = 50;
  return r;
}

static pthread_mutex_t mon_process_lock = PTHREAD_MUTEX_INITIALIZER;
static bool mon_process_on;
static hsad_monitor_options_t mon_process_opt;

hsad_status_t hsad_monitor_enable_process(const hsad_monitor_options_t *options) {
  hsad_status_t s = check_options("hsad_monitor_enable_process", options);
  if (s) return s;
  pthread_mutex_lock(&mon_process_lock);
  mon_process_opt = with_defaults(options);
  mon_process_on = true;
  pthread_mutex_unlock(&mon_process_lock);
  return HSAD_OK;
}

void hsad_monitor_disable_process(void) {
  pthread_mutex_lock(&mon_process_lock);
  mon_process_on = false;
  pthread_mutex_unlock(&mon_process_lock);
}

void dq_monitor_queue_created(hsad_queue_t *q) {
  pthread_mutex_lock(&mon_process_lock);
  bool on = mon_process_on;
  hsad_monitor_options_t o = mon_process_opt;
  pthread_mutex_unlock(&mon_process_lock);
  /* out of memory: the queue runs unmonitored (hsad_queue_monitor_enable can retry) */
  if (on) (void)hsad_queue_monitor_enable(q, &o);
}

