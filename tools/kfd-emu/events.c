/* events.c - KFD events. Each event has an id (1..EMU_MAX_EVENTS-1) and a slot in the event
 * mailbox page; HWData2 is that slot's address, which ROCr copies into amd_signal_t's
 * event_mailbox_ptr (interrupt_signal.cpp). When the CP completes a packet whose completion
 * signal has a mailbox, it stores the event id there and fires the event, as the KFD interrupt
 * handler does for a real CP's end-of-pipe interrupt.
 *
 * Waiters block on one condition variable (CLOCK_MONOTONIC) with the caller's timeout; no
 * wait spins. Firing follows KFD's set_event (kfd_events.c): every thread waiting at that
 * moment wakes, and an auto-reset event stays signaled only when nobody was waiting, for the
 * next wait to consume. (ROCr shares one auto-reset event among several signals and waiters.)
 */
#include "tools/kfd-emu/emu.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct emu_event {
  bool used, manual_reset, signaled;
  uint32_t waiters; /* threads blocked on this event now */
  uint64_t gen;     /* bumped by every fire */
  HsaEvent *ev;
} emu_event_t;

static pthread_mutex_t ev_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ev_cond;
static emu_event_t events[EMU_MAX_EVENTS];
static uint64_t mailbox[EMU_MAX_EVENTS] __attribute__((aligned(4096)));
static uint32_t next_id = 1;

void emu_events_init(void) {
  static bool once;
  if (once) return;
  once = true;
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&ev_cond, &a);
  pthread_condattr_destroy(&a);
}

void emu_event_fire(uint32_t id) {
  if (id == 0 || id >= EMU_MAX_EVENTS) return;
  pthread_mutex_lock(&ev_lock);
  emu_event_t *e = &events[id];
  if (e->used) {
    e->gen++;
    e->signaled = e->manual_reset || e->waiters == 0;
    pthread_cond_broadcast(&ev_cond);
  }
  pthread_mutex_unlock(&ev_lock);
}

void emu_signal_notify(amd_signal_t *s) {
  if (s->event_mailbox_ptr) {
    atomic_store_explicit((_Atomic uint64_t *)(uintptr_t)s->event_mailbox_ptr, s->event_id,
                          memory_order_release);
    emu_event_fire(s->event_id);
  }
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtCreateEvent(HsaEventDescriptor *desc, bool manual_reset,
                                           bool signaled, HsaEvent **out) {
  if (!desc || !out) return HSAKMT_STATUS_INVALID_PARAMETER;
  if (emu.open_count == 0) return HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
  HsaEvent *e = calloc(1, sizeof *e);
  if (!e) return HSAKMT_STATUS_NO_MEMORY;
  pthread_mutex_lock(&ev_lock);
  uint32_t id = 0;
  for (uint32_t k = 0; k < EMU_MAX_EVENTS - 1; k++) {
    uint32_t c = 1 + (next_id - 1 + k) % (EMU_MAX_EVENTS - 1);
    if (!events[c].used) {
      id = c;
      break;
    }
  }
  if (id == 0) { /* KFD's per-process event limit, as the real driver reports it */
    pthread_mutex_unlock(&ev_lock);
    free(e);
    return HSAKMT_STATUS_NO_MEMORY;
  }
  next_id = id + 1;
  events[id] = (emu_event_t){.used = true, .manual_reset = manual_reset, .signaled = signaled,
                             .ev = e};
  /* atomic, as the CP's stores to it are: a CP thread may still complete a packet of a signal
   * whose event had this id (ROCr recycles ids) */
  atomic_store_explicit((_Atomic uint64_t *)&mailbox[id], 0, memory_order_relaxed);
  pthread_mutex_unlock(&ev_lock);
  e->EventId = id;
  e->EventData.EventType = desc->EventType;
  e->EventData.HWData1 = id;
  e->EventData.HWData2 = (HSAuint64)(uintptr_t)&mailbox[id];
  e->EventData.HWData3 = sizeof(uint64_t);
  if (desc->EventType == HSA_EVENTTYPE_SIGNAL)
    e->EventData.EventData.SyncVar = desc->SyncVar;
  *out = e;
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtDestroyEvent(HsaEvent *e) {
  if (!e || e->EventId == 0 || e->EventId >= EMU_MAX_EVENTS) return HSAKMT_STATUS_INVALID_HANDLE;
  pthread_mutex_lock(&ev_lock);
  bool ok = events[e->EventId].used && events[e->EventId].ev == e;
  if (ok) memset(&events[e->EventId], 0, sizeof events[0]);
  pthread_mutex_unlock(&ev_lock);
  if (!ok) return HSAKMT_STATUS_INVALID_HANDLE;
  free(e);
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtSetEvent(HsaEvent *e) {
  if (!e || e->EventId == 0 || e->EventId >= EMU_MAX_EVENTS) return HSAKMT_STATUS_INVALID_HANDLE;
  emu_event_fire(e->EventId);
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtResetEvent(HsaEvent *e) {
  if (!e || e->EventId == 0 || e->EventId >= EMU_MAX_EVENTS) return HSAKMT_STATUS_INVALID_HANDLE;
  pthread_mutex_lock(&ev_lock);
  events[e->EventId].signaled = false;
  pthread_mutex_unlock(&ev_lock);
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtWaitOnMultipleEvents(HsaEvent *evs[], HSAuint32 n, bool all,
                                                    HSAuint32 ms) {
  if (!evs || n == 0) return HSAKMT_STATUS_INVALID_PARAMETER;
  for (HSAuint32 i = 0; i < n; i++)
    if (!evs[i] || evs[i]->EventId == 0 || evs[i]->EventId >= EMU_MAX_EVENTS)
      return HSAKMT_STATUS_INVALID_HANDLE;
  emu_cp_kick_all(); /* a host thread waits for the GPU: let the CPs look for work now */
  /* No wait blocks longer than 20 ms: an auto-reset event fired while its waiter was between
   * its signal check and this call is consumed by whichever thread waits first, and ROCr 5.2
   * (~AqlQueue, its async-events thread) then waits "forever" on both sides. ROCr re-checks
   * its signals after every return, so an early WAIT_TIMEOUT only costs a loop turn. */
  if (ms > 20) ms = 20;
  struct timespec dl;
  clock_gettime(CLOCK_MONOTONIC, &dl);
  {
    dl.tv_sec += ms / 1000;
    dl.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
      dl.tv_sec++;
      dl.tv_nsec -= 1000000000L;
    }
  }
  HSAKMT_STATUS st = HSAKMT_STATUS_SUCCESS;
  uint64_t gen_small[64], *gen0 = n <= 64 ? gen_small : malloc(n * sizeof *gen0);
  if (!gen0) return HSAKMT_STATUS_NO_MEMORY;
  pthread_mutex_lock(&ev_lock);
  for (HSAuint32 i = 0; i < n; i++) {
    gen0[i] = events[evs[i]->EventId].gen;
    events[evs[i]->EventId].waiters++;
  }
  for (;;) {
    HSAuint32 ready = 0;
    for (HSAuint32 i = 0; i < n; i++) {
      const emu_event_t *e = &events[evs[i]->EventId];
      if (e->signaled || e->gen != gen0[i]) ready++;
    }
    if (all ? ready == n : ready > 0) {
      for (HSAuint32 i = 0; i < n; i++) {
        emu_event_t *e = &events[evs[i]->EventId];
        if (e->signaled && !e->manual_reset) e->signaled = false;
      }
      break;
    }
    int r = pthread_cond_timedwait(&ev_cond, &ev_lock, &dl);
    if (r == ETIMEDOUT) {
      st = HSAKMT_STATUS_WAIT_TIMEOUT;
      break;
    }
  }
  for (HSAuint32 i = 0; i < n; i++)
    if (events[evs[i]->EventId].waiters) events[evs[i]->EventId].waiters--;
  pthread_mutex_unlock(&ev_lock);
  if (gen0 != gen_small) free(gen0);
  return st;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtWaitOnEvent(HsaEvent *e, HSAuint32 ms) {
  return hsaKmtWaitOnMultipleEvents(&e, 1, true, ms);
}
