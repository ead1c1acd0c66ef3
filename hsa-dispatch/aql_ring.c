/* aql_ring.c - the AQL ring object's set-up (aql_ring.h; the arithmetic is inline there). */
#include "hsa-dispatch/aql_ring.h"

void dq_ring_init(dq_ring_t *ring, amd_queue_t *amd, uint8_t *kernargs, uint32_t kernarg_block,
                  dq_ring_kernarg_slot_t *kernarg_slots, dq_ring_signal_store_fn signal_store) {
  hsa_queue_t *hsa = &amd->hsa_queue;
  ring->packets = hsa->base_address;
  ring->size = hsa->size;
  ring->mask = (uint64_t)hsa->size - 1;
  ring->kernarg_block = kernarg_block;
  ring->kernargs = kernargs;
  ring->kernarg_slots = kernarg_slots;
  for (uint32_t i = 0; i < ring->size; i++)
    kernarg_slots[i] = (dq_ring_kernarg_slot_t){.stamp = 0, .block = kernargs + (size_t)i * kernarg_block};
  ring->write_index = (_Atomic uint64_t *)&amd->write_dispatch_id;
  ring->read_index = (_Atomic uint64_t *)&amd->read_dispatch_id;
  ring->doorbell_signal = hsa->doorbell_signal;
  ring->signal_store = signal_store;
  const amd_signal_t *bell = (const amd_signal_t *)(uintptr_t)hsa->doorbell_signal.handle;
  ring->doorbell = bell && bell->kind == AMD_SIGNAL_KIND_DOORBELL ? bell->hardware_doorbell_ptr
                                                                  : NULL;
  dq_ring_retire(ring, 0);
}

int dq_ring_doorbell_settle(dq_ring_t *ring, uint64_t stored) {
  for (;;) {
    uint64_t write = atomic_load_explicit(ring->write_index, memory_order_seq_cst);
    if (write - 1 <= stored) return 0; /* nothing reserved past the value stored last */
    stored = write - 1;
    dq_ring_doorbell_store(ring, stored);
  }
}
