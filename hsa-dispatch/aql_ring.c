/* aql_ring.c - the AQL ring object's set-up (aql_ring.h; the arithmetic is inline there). */
#include "hsa-dispatch/aql_ring.h"

void dq_ring_init(dq_ring_t *ring, amd_queue_t *amd, uint8_t *kernargs, uint32_t kernarg_block,
                  dq_ring_signal_store_fn signal_store) {
  hsa_queue_t *hsa = &amd->hsa_queue;
  ring->packets = hsa->base_address;
  ring->size = hsa->size;
  ring->mask = (uint64_t)hsa->size - 1;
  ring->kernarg_block = kernarg_block;
  ring->kernargs = kernargs;
  ring->write_index = (_Atomic uint64_t *)&amd->write_dispatch_id;
  ring->read_index = (_Atomic uint64_t *)&amd->read_dispatch_id;
  ring->doorbell_signal = hsa->doorbell_signal;
  ring->signal_store = signal_store;
  const amd_signal_t *bell = (const amd_signal_t *)(uintptr_t)hsa->doorbell_signal.handle;
  ring->doorbell = bell && bell->kind == AMD_SIGNAL_KIND_DOORBELL ? bell->hardware_doorbell_ptr
                                                                  : NULL;
  atomic_store_explicit(&ring->retired, 0, memory_order_relaxed);
  atomic_store_explicit(&ring->rung, 0, memory_order_relaxed);
}

int dq_ring_doorbell_settle(dq_ring_t *ring, uint64_t id) {
  dq_ring_doorbell(ring, id);
  return 0;
}
