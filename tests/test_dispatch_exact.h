/* test_dispatch_exact.h - a host-controlled gate and byte readers for the hsa-dispatch tests
 * (issue 12: no timed assertions; the whole-message TH_ERR_IS is in test_dispatch_util.h).
 * Include after test_dispatch_util.h. */
#ifndef TEST_DISPATCH_EXACT_H
#define TEST_DISPATCH_EXACT_H

#include <dlfcn.h>
#include <hsa/amd_hsa_queue.h>
#include <stdarg.h>

#include "tests/test_dispatch_util.h"

/* ROCr's signal calls (ROCr is in the process, loaded RTLD_GLOBAL by hsad_runtime_open). */
typedef struct th_sig_api {
  hsa_status_t (*create)(hsa_signal_value_t, uint32_t, const hsa_agent_t *, hsa_signal_t *);
  hsa_status_t (*destroy)(hsa_signal_t);
  void (*store)(hsa_signal_t, hsa_signal_value_t);
} th_sig_api_t;

static inline th_sig_api_t th_sig_api(void) {
  th_sig_api_t a;
  *(void **)&a.create = dlsym(RTLD_DEFAULT, "hsa_signal_create");
  *(void **)&a.destroy = dlsym(RTLD_DEFAULT, "hsa_signal_destroy");
  *(void **)&a.store = dlsym(RTLD_DEFAULT, "hsa_signal_store_screlease");
  cr_assert(a.create && a.destroy && a.store, "ROCr signal calls");
  return a;
}

/* Closes queue q until th_gate_open: a barrier-AND on a fresh HSA signal of value 1 (one
 * packet, no completion). Every later packet of q has the BARRIER bit, so nothing after it
 * runs before the gate opens: "not yet" is a state, not a race. */
static inline hsa_signal_t th_gate(hsad_queue_t *q) {
  th_sig_api_t a = th_sig_api();
  hsa_signal_t s;
  cr_assert_eq(a.create(1, 0, NULL, &s), HSA_STATUS_SUCCESS);
  TH_OK(hsad_queue_barrier_signals(q, NULL, 0, &s, 1, (hsa_signal_t){0}, th_in(TH_SEC), NULL));
  return s;
}

static inline void th_gate_open(hsa_signal_t s) { th_sig_api().store(s, 0); }

static inline void th_gate_destroy(hsa_signal_t s) { th_sig_api().destroy(s); }

static inline uint64_t th_get64(const void *p, uint32_t o) {
  uint64_t v;
  memcpy(&v, (const uint8_t *)p + o, 8);
  return v;
}
static inline uint32_t th_get32(const void *p, uint32_t o) {
  uint32_t v;
  memcpy(&v, (const uint8_t *)p + o, 4);
  return v;
}

#endif
