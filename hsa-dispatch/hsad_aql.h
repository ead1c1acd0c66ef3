/* hsad_aql.h - the AQL packets hsa-dispatch writes, pinned, and the pure packet emitter.
 *
 * The packet processor reads these 64-byte structures from the queue ring (HSA 1.2 system
 * architecture, 2.9 "Architected Queuing Language"). The layouts are ROCr's hsa.h types;
 * the static asserts below pin every offset the library relies on, so a header that differs
 * fails the build instead of corrupting packets.
 *
 * Publication protocol (every function here follows it): the 64-byte body is written while
 * the 16-bit header is HSA_PACKET_TYPE_INVALID; then header and setup are published together
 * with ONE 32-bit atomic store with release ordering (`header | setup << 16`), so the packet
 * processor never sees a valid header before the body (HSA 1.2, 2.9.1; ROCr and every HSA
 * dispatcher do the same).
 *
 * Header policy: the hsad_aql_*_header functions below are the only place that sets a
 * packet's type, BARRIER bit and fence scopes (IREE's aql_emitter.h does the same); every
 * submitter, fusion's graph runs included, takes its headers there.
 *
 * Thread safety: pure functions of their arguments; no global state.
 */
#ifndef HSAD_AQL_H
#define HSAD_AQL_H

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hsad_status.h"

#ifdef __cplusplus
extern "C" {
#endif

HSAD_STATIC_ASSERT(sizeof(hsa_kernel_dispatch_packet_t) == 64, "AQL kernel dispatch packet size");
HSAD_STATIC_ASSERT(offsetof(hsa_kernel_dispatch_packet_t, header) == 0, "header");
HSAD_STATIC_ASSERT(offsetof(hsa_kernel_dispatch_packet_t, setup) == 2, "setup");
HSAD_STATIC_ASSERT(offsetof(hsa_kernel_dispatch_packet_t, workgroup_size_x) == 4, "wg x");
HSAD_STATIC_ASSERT(offsetof(hsa_kernel_dispatch_packet_t, workgroup_size_y) == 6, "wg y");
HSAD_STATIC_ASSERT(offsetof(hsa_kernel_dispatch_packet_t, workgroup_size_z) == 8, "wg z");
HSAD_STATIC_ASSERT(offsetof(hsa_kernel_dispatch_packet_t, grid_size_x) == 12, "grid x");
HSAD_STATIC_ASSERT(offsetof(hsa_kernel_dispatch_packet_t, grid_size_y) == 16, "grid y");
HSAD_STATIC_ASSERT(offsetof(hsa_kernel_dispatch_packet_t, grid_size_z) == 20, "grid z");
HSAD_STATIC_ASSERT(offsetof(hsa_kernel_dispatch_packet_t, private_segment_size) == 24, "private");
HSAD_STATIC_ASSERT(offsetof(hsa_kernel_dispatch_packet_t, group_segment_size) == 28, "group");
HSAD_STATIC_ASSERT(offsetof(hsa_kernel_dispatch_packet_t, kernel_object) == 32, "kernel_object");
HSAD_STATIC_ASSERT(offsetof(hsa_kernel_dispatch_packet_t, kernarg_address) == 40, "kernarg");
HSAD_STATIC_ASSERT(offsetof(hsa_kernel_dispatch_packet_t, completion_signal) == 56, "signal");
HSAD_STATIC_ASSERT(sizeof(hsa_barrier_and_packet_t) == 64, "AQL barrier-AND packet size");
HSAD_STATIC_ASSERT(offsetof(hsa_barrier_and_packet_t, dep_signal) == 8, "dep_signal");
HSAD_STATIC_ASSERT(offsetof(hsa_barrier_and_packet_t, completion_signal) == 56, "signal");
HSAD_STATIC_ASSERT(sizeof(hsa_barrier_or_packet_t) == 64, "AQL barrier-OR packet size");
HSAD_STATIC_ASSERT(sizeof(hsa_amd_barrier_value_packet_t) == 64, "AMD barrier-value packet size");
HSAD_STATIC_ASSERT(offsetof(hsa_amd_barrier_value_packet_t, signal) == 8, "barrier-value signal");
HSAD_STATIC_ASSERT(offsetof(hsa_amd_barrier_value_packet_t, value) == 16, "barrier-value value");
HSAD_STATIC_ASSERT(offsetof(hsa_amd_barrier_value_packet_t, mask) == 24, "barrier-value mask");
HSAD_STATIC_ASSERT(offsetof(hsa_amd_barrier_value_packet_t, cond) == 32, "barrier-value cond");
HSAD_STATIC_ASSERT(offsetof(hsa_amd_barrier_value_packet_t, completion_signal) == 56,
               "barrier-value completion");

/* Header bits (HSA 1.2 runtime, hsa_packet_header_t). */
#define HSAD_AQL_HEADER(type, barrier, acquire, release)                                   \
  ((uint16_t)(((type) << HSA_PACKET_HEADER_TYPE) | ((barrier) << HSA_PACKET_HEADER_BARRIER) | \
              ((acquire) << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |                        \
              ((release) << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE)))

/* ---- The header policy: the one place that decides the packet type, the BARRIER bit and the
 * acquire/release fence scopes of every packet the library writes (single dispatch, batches,
 * queue barriers and flushes, kernarg padding) and fusion writes (graph runs). ---- */

/* A kernel dispatch: BARRIER bit when `barrier` (stream order; hsad_launch_t's
 * HSAD_LAUNCH_NO_BARRIER clears it); acquire and release fences at system scope, or agent scope
 * with `fence_agent` (HSAD_LAUNCH_FENCE_AGENT). A constant expression (for tables). */
#define HSAD_AQL_KERNEL_HEADER(barrier, fence_agent)                                       \
  HSAD_AQL_HEADER(HSA_PACKET_TYPE_KERNEL_DISPATCH, (barrier) ? 1u : 0u,                    \
                  (fence_agent) ? HSA_FENCE_SCOPE_AGENT : HSA_FENCE_SCOPE_SYSTEM,          \
                  (fence_agent) ? HSA_FENCE_SCOPE_AGENT : HSA_FENCE_SCOPE_SYSTEM)

static inline uint16_t hsad_aql_kernel_header(bool barrier, bool fence_agent) {
  return HSAD_AQL_KERNEL_HEADER(barrier, fence_agent);
}

/* The kernel dispatch header of launch flags whose bit 0 clears the BARRIER bit and bit 1 asks
 * for agent-scope fences (hsad_queue.h pins HSAD_LAUNCH_NO_BARRIER == 1 and
 * HSAD_LAUNCH_FENCE_AGENT == 2); other bits are ignored. One table load: the dispatch hot path. */
static inline uint16_t hsad_aql_kernel_header_of_flags(uint32_t flags) {
  static const uint16_t headers[4] = {
      HSAD_AQL_KERNEL_HEADER(1, 0), HSAD_AQL_KERNEL_HEADER(0, 0),
      HSAD_AQL_KERNEL_HEADER(1, 1), HSAD_AQL_KERNEL_HEADER(0, 1)};
  return headers[flags & 3];
}

/* A barrier-AND that orders (`barrier`: it starts after every earlier packet completed; an
 * epoch packet, a queue barrier, a graph's barrier node) with system-scope fences. */
static inline uint16_t hsad_aql_barrier_and_header(bool barrier) {
  return HSAD_AQL_HEADER(HSA_PACKET_TYPE_BARRIER_AND, barrier ? 1u : 0u, HSA_FENCE_SCOPE_SYSTEM,
                         HSA_FENCE_SCOPE_SYSTEM);
}

/* A padding packet: a slot taken by a dispatch whose kernarg segment spans several blocks
 * (hsad_queue.h step 4) or a cancelled reservation. A barrier-AND without dependencies, BARRIER
 * bit or fences, so it completes as soon as the packet processor reaches it and orders
 * nothing; with `carries_epoch` (the run's last padding packet holds the epoch signal) it is
 * an epoch barrier-AND instead (BARRIER bit, system fences). */
static inline uint16_t hsad_aql_pad_header(bool carries_epoch) {
  return carries_epoch ? hsad_aql_barrier_and_header(true)
                       : HSAD_AQL_HEADER(HSA_PACKET_TYPE_BARRIER_AND, 0, HSA_FENCE_SCOPE_NONE,
                                         HSA_FENCE_SCOPE_NONE);
}

/* An AMD barrier-value packet (HSA_PACKET_TYPE_VENDOR_SPECIFIC) with system-scope fences;
 * `barrier` as for a barrier-AND. */
static inline uint16_t hsad_aql_barrier_value_header(bool barrier) {
  return HSAD_AQL_HEADER(HSA_PACKET_TYPE_VENDOR_SPECIFIC, barrier ? 1u : 0u,
                         HSA_FENCE_SCOPE_SYSTEM, HSA_FENCE_SCOPE_SYSTEM);
}

/* The word that publishes a barrier-value packet (header | AmdFormat << 16), as
 * hsad_aql_barrier_value_fill returns it. */
static inline uint32_t hsad_aql_barrier_value_word(bool barrier) {
  return (uint32_t)hsad_aql_barrier_value_header(barrier) |
         ((uint32_t)HSA_AMD_PACKET_TYPE_BARRIER_VALUE << 16);
}

/* The geometry and resources of one kernel dispatch packet. */
typedef struct hsad_aql_dispatch {
  uint16_t dims;               /* setup dimensions, 1..3 */
  uint16_t workgroup_size[3];  /* work-items; unused dimensions 1 */
  uint32_t grid_size[3];       /* work-items; unused dimensions 1 */
  uint32_t private_segment_size; /* bytes per work-item */
  uint32_t group_segment_size; /* bytes per workgroup (fixed + dynamic LDS) */
  uint64_t kernel_object;      /* kernel descriptor address */
  void *kernarg_address;       /* kernarg segment, 16-byte aligned at least */
  uint64_t completion_signal;  /* hsa_signal_t handle, 0 for none */
} hsad_aql_dispatch_t;

/* Writes bytes 4..63 of a kernel dispatch packet at `slot` (reserved2 = 0) and leaves bytes
 * 0..3 untouched. Returns the 32-bit word to publish: header | setup << 16 with
 * setup = dims (HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS). */
static inline uint32_t hsad_aql_dispatch_fill(hsa_kernel_dispatch_packet_t *slot,
                                              const hsad_aql_dispatch_t *d, uint16_t header) {
  slot->workgroup_size_x = d->workgroup_size[0];
  slot->workgroup_size_y = d->workgroup_size[1];
  slot->workgroup_size_z = d->workgroup_size[2];
  slot->reserved0 = 0;
  slot->grid_size_x = d->grid_size[0];
  slot->grid_size_y = d->grid_size[1];
  slot->grid_size_z = d->grid_size[2];
  slot->private_segment_size = d->private_segment_size;
  slot->group_segment_size = d->group_segment_size;
  slot->kernel_object = d->kernel_object;
  slot->kernarg_address = d->kernarg_address;
  slot->reserved2 = 0;
  slot->completion_signal.handle = d->completion_signal;
  return (uint32_t)header | ((uint32_t)d->dims << (16 + HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS));
}

/* Writes bytes 2..63 of a barrier-AND (or -OR) packet: up to 5 dep_signal handles (0 =
 * satisfied, HSA 1.2 system architecture 2.6.5.9). Returns the word to publish (setup 0). */
static inline uint32_t hsad_aql_barrier_fill(hsa_barrier_and_packet_t *slot,
                                             const uint64_t deps[5], uint64_t completion,
                                             uint16_t header) {
  slot->reserved0 = 0;
  slot->reserved1 = 0;
  for (int i = 0; i < 5; i++) slot->dep_signal[i].handle = deps ? deps[i] : 0;
  slot->reserved2 = 0;
  slot->completion_signal.handle = completion;
  return header;
}

/* Writes bytes 4..63 of an AMD barrier-value vendor packet (ROCr hsa_ext_amd.h: waits until
 * (value(signal) & mask) cond value). Returns the word to publish: the 16-bit AQL header
 * (type HSA_PACKET_TYPE_VENDOR_SPECIFIC) | AmdFormat HSA_AMD_PACKET_TYPE_BARRIER_VALUE << 16. */
static inline uint32_t hsad_aql_barrier_value_fill(hsa_amd_barrier_value_packet_t *slot,
                                                   uint64_t signal, int64_t value, int64_t mask,
                                                   uint32_t cond, uint64_t completion,
                                                   uint16_t header) {
  slot->reserved0 = 0;
  slot->signal.handle = signal;
  slot->value = value;
  slot->mask = mask;
  slot->cond = cond;
  slot->reserved1 = 0;
  slot->reserved2 = 0;
  slot->reserved3 = 0;
  slot->completion_signal.handle = completion;
  return (uint32_t)header | ((uint32_t)HSA_AMD_PACKET_TYPE_BARRIER_VALUE << 16);
}

/* Publishes a filled packet: one 32-bit atomic store, release (orders the body before it). */
static inline void hsad_aql_publish(void *slot, uint32_t header_setup) {
  __atomic_store_n((uint32_t *)slot, header_setup, __ATOMIC_RELEASE);
}

#ifdef __cplusplus
}
#endif
#endif /* HSAD_AQL_H */
