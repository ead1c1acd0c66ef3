/* runtime_refs.h - the runtime's reference count and close hooks (hsad_runtime_open / _close /
 * _on_close, hsad.h), one text for both builds' runtimes: hsa-dispatch/runtime.c (with AMD) and
 * hsa-dispatch/front.c (make BACKENDS=nvidia). Not installed.
 *
 * Thread safety: every function but hsad_rt_refs_open runs under the runtime's lock;
 * hsad_rt_refs_open takes none (the count's atomic mirror). */
#ifndef HSAD_RUNTIME_REFS_H
#define HSAD_RUNTIME_REFS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/hsad_status.h"

/* Close hooks a runtime keeps at most (hsad_runtime_on_close). */
#define HSAD_RT_HOOKS 8

typedef struct hsad_rt_refs {
  uint32_t refs;             /* opens minus closes (under the lock) */
  _Atomic uint32_t open;     /* refs, published for lock-free checks */
  uint32_t hook_count;
  struct {
    void (*fn)(void *);
    void *arg;
  } hooks[HSAD_RT_HOOKS];
} hsad_rt_refs_t;

/* Whether the runtime is open (no lock). */
static inline bool hsad_rt_refs_open(hsad_rt_refs_t *r) {
  return atomic_load_explicit(&r->open, memory_order_acquire) > 0;
}

/* One more reference (hsad_runtime_open, once the runtime is up). */
static inline void hsad_rt_refs_take(hsad_rt_refs_t *r) {
  r->refs++;
  atomic_store_explicit(&r->open, r->refs, memory_order_release);
}

/* hsad_runtime_close's count: HSAD_ERR_CLOSED ("hsad_runtime_close: the runtime is already
 * closed") when no reference is left; else one dropped, and *out_last tells whether it was the
 * last: then the runtime reads as closed and its hooks have run, the last registered first (the
 * caller tears the runtime down). */
static inline hsad_status_t hsad_rt_refs_drop(hsad_rt_refs_t *r, bool *out_last) {
  *out_last = false;
  if (r->refs == 0)
    return hsad_fail(HSAD_ERR_CLOSED, "hsad_runtime_close: the runtime is already closed");
  atomic_store_explicit(&r->open, --r->refs, memory_order_release);
  if (r->refs) return HSAD_OK;
  for (uint32_t i = r->hook_count; i-- > 0;) r->hooks[i].fn(r->hooks[i].arg);
  *out_last = true;
  return HSAD_OK;
}

/* hsad_runtime_on_close's table: fn(arg) added once (a pair already there is kept as it is);
 * HSAD_ERR_RESOURCE_EXHAUSTED when HSAD_RT_HOOKS are there already. */
static inline hsad_status_t hsad_rt_refs_hook(hsad_rt_refs_t *r, void (*fn)(void *), void *arg) {
  for (uint32_t i = 0; i < r->hook_count; i++)
    if (r->hooks[i].fn == fn && r->hooks[i].arg == arg) return HSAD_OK;
  if (r->hook_count == HSAD_RT_HOOKS)
    return hsad_fail(HSAD_ERR_RESOURCE_EXHAUSTED, "hsad_runtime_on_close: %d hooks at most",
                     HSAD_RT_HOOKS);
  r->hooks[r->hook_count].fn = fn;
  r->hooks[r->hook_count].arg = arg;
  r->hook_count++;
  return HSAD_OK;
}

#endif
