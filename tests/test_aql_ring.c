/* test_aql_ring.c - the AQL ring object (hsa-dispatch/aql_ring.h) on plain host memory: no
 * ROCr, no kfd-emu. A fake amd_queue_t (slots, indices, a doorbell signal) is what the ring is
 * initialised from; the tests move its read index and the ring's `retired` by hand and check
 * reservation, wrap, spans past the ring's end, refusal without a hole and the doorbell.
 * Catches tests/mutation/04, 05, 06, 11, 27, 109 and 110 in milliseconds. The header policy
 * (hsad_aql.h: every packet's type, BARRIER bit and fence scopes) is pinned here too. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "hsa-dispatch/aql_ring.h"
#include "hsa-dispatch/hsad_aql.h"

#define SLOTS 8
#define BLOCK 512
#define LARGEST 8192

typedef struct fake_queue {
  _Alignas(64) amd_queue_t amd;
  _Alignas(64) uint8_t packets[SLOTS * 64];
  amd_signal_t bell, plain;
  uint64_t hw_doorbell;
  uint8_t *kernargs;
  dq_ring_kernarg_slot_t slots[SLOTS];
  dq_ring_t ring;
} fake_queue_t;

static uint64_t stored[16]; /* the signal path's doorbell stores, in order */
static uint32_t stores;
static uint64_t plain_handle;
static void fake_store(hsa_signal_t s, hsa_signal_value_t v) {
  cr_assert_eq(s.handle, plain_handle, "the ring's doorbell signal");
  if (stores < 16) stored[stores++] = (uint64_t)v;
}

/* A ring of SLOTS slots over host memory; hardware: a doorbell signal of AMD_SIGNAL_KIND_DOORBELL
 * (direct stores), else a user-kind signal (stores through fake_store). */
static fake_queue_t *fake(bool hardware) {
  fake_queue_t *f = aligned_alloc(64, sizeof *f);
  cr_assert_not_null(f);
  memset(f, 0, sizeof *f);
  uint32_t spare = dq_ring_kernarg_spare(BLOCK, SLOTS, LARGEST);
  f->kernargs = calloc(SLOTS + spare, BLOCK);
  cr_assert_not_null(f->kernargs);
  f->amd.hsa_queue.base_address = f->packets;
  f->amd.hsa_queue.size = SLOTS;
  f->bell.kind = AMD_SIGNAL_KIND_DOORBELL;
  f->bell.hardware_doorbell_ptr = &f->hw_doorbell;
  f->plain.kind = AMD_SIGNAL_KIND_USER;
  plain_handle = (uint64_t)(uintptr_t)&f->plain;
  f->amd.hsa_queue.doorbell_signal.handle = (uint64_t)(uintptr_t)(hardware ? &f->bell : &f->plain);
  memset(&f->ring, 0xa5, sizeof f->ring); /* init must set every field it reads */
  dq_ring_init(&f->ring, &f->amd, f->kernargs, BLOCK, f->slots, fake_store);
  stores = 0;
  return f;
}

static void unfake(fake_queue_t *f) {
  free(f->kernargs);
  free(f);
}

static uint64_t write_index(const fake_queue_t *f) { return f->amd.write_dispatch_id; }

Test(aql_ring, init_reads_the_amd_queue) {
  fake_queue_t *f = fake(true);
  cr_assert_eq(f->ring.packets, f->packets);
  cr_assert_eq(f->ring.size, SLOTS);
  cr_assert_eq(f->ring.mask, SLOTS - 1);
  cr_assert_eq(f->ring.kernarg_block, BLOCK);
  cr_assert_eq(f->ring.kernargs, f->kernargs);
  cr_assert_eq((void *)f->ring.write_index, (void *)&f->amd.write_dispatch_id);
  cr_assert_eq((void *)f->ring.read_index, (void *)&f->amd.read_dispatch_id);
  cr_assert_eq(f->ring.doorbell, &f->hw_doorbell, "a hardware doorbell is written directly");
  cr_assert_eq(f->ring.retired, 0);
  cr_assert_eq(f->ring.reserve_end, SLOTS);
  cr_assert_eq(f->ring.kernarg_slots, f->slots);
  for (uint32_t i = 0; i < SLOTS; i++) {
    cr_assert_eq(f->slots[i].stamp, 0);
    cr_assert_eq(f->slots[i].block, f->kernargs + i * BLOCK, "slot %u's block", i);
  }
  unfake(f);
  f = fake(false);
  cr_assert_null(f->ring.doorbell, "a plain signal goes through signal_store");
  cr_assert_eq(f->ring.doorbell_signal.handle, plain_handle);
  unfake(f);
}

/* Step 3: a full ring is refused, and the refusal leaves no hole (write index unchanged). */
Test(aql_ring, reserve_up_to_size_then_refuse_without_a_hole) {
  fake_queue_t *f = fake(true);
  uint64_t id = 99;
  cr_assert(dq_ring_try_reserve(&f->ring, 5, true, &id));
  cr_assert_eq(id, 0);
  cr_assert(dq_ring_try_reserve(&f->ring, 3, true, &id));
  cr_assert_eq(id, 5);
  cr_assert_eq(write_index(f), SLOTS);
  id = 99;
  cr_assert_not(dq_ring_try_reserve(&f->ring, 1, true, &id), "a 9th packet in 8 slots");
  cr_assert_eq(id, 99, "a refusal writes no id");
  cr_assert_eq(write_index(f), SLOTS, "a refusal leaves the write index");
  /* one slot completed: one more fits, two do not (a run is all or nothing) */
  dq_ring_retire(&f->ring, 1);
  cr_assert_not(dq_ring_try_reserve(&f->ring, 2, true, &id));
  cr_assert_eq(write_index(f), SLOTS);
  cr_assert(dq_ring_try_reserve(&f->ring, 1, true, &id));
  cr_assert_eq(id, SLOTS);
  cr_assert_eq(write_index(f), SLOTS + 1);
  unfake(f);
}

/* Step 3: kernel dispatches are bounded by completion (`retired`), barrier packets by the read
 * index: a read index that advanced at launch does not free a slot's kernarg block. */
Test(aql_ring, kernarg_slots_wait_for_completion_not_the_read_index) {
  fake_queue_t *f = fake(true);
  uint64_t id;
  cr_assert(dq_ring_try_reserve(&f->ring, SLOTS, true, &id));
  f->amd.read_dispatch_id = 4; /* launched, not completed */
  cr_assert_not(dq_ring_try_reserve(&f->ring, 1, true, &id), "kernarg slot before completion");
  cr_assert_eq(write_index(f), SLOTS);
  cr_assert(dq_ring_try_reserve(&f->ring, 4, false, &id), "barrier slots once launched");
  cr_assert_eq(id, SLOTS);
  cr_assert_not(dq_ring_try_reserve(&f->ring, 1, false, &id));
  dq_ring_retire(&f->ring, 5);
  cr_assert_not(dq_ring_try_reserve(&f->ring, 2, true, &id), "12 reserved, 5 retired: 1 free");
  cr_assert(dq_ring_try_reserve(&f->ring, 1, true, &id));
  cr_assert_eq(id, 12);
  unfake(f);
}

Test(aql_ring, wrap_maps_ids_onto_slots_and_blocks) {
  fake_queue_t *f = fake(true);
  uint64_t id;
  f->amd.write_dispatch_id = 6;
  dq_ring_retire(&f->ring, 2);
  f->amd.read_dispatch_id = 2;
  cr_assert(dq_ring_try_reserve(&f->ring, 4, true, &id), "a run across the ring's end");
  cr_assert_eq(id, 6);
  cr_assert_eq(write_index(f), 10);
  uint64_t want_slot[4] = {6, 7, 0, 1};
  for (uint32_t i = 0; i < 4; i++) {
    cr_assert_eq(dq_ring_slot(&f->ring, id + i), f->packets + want_slot[i] * 64, "id %llu",
                 (unsigned long long)(id + i));
    cr_assert_eq(dq_ring_kernarg(&f->ring, id + i), f->kernargs + want_slot[i] * BLOCK,
                 "id %llu: its own slot's block", (unsigned long long)(id + i));
  }
  cr_assert_eq(dq_ring_kernarg(&f->ring, 0), f->kernargs);
  cr_assert_eq(dq_ring_kernarg(&f->ring, 1000001), f->kernargs + 1 * BLOCK);
  unfake(f);
}

/* Step 4: one slot per kernarg block; a segment starting in the last slot stays contiguous in
 * the spare blocks. */
Test(aql_ring, span_past_the_end) {
  fake_queue_t *f = fake(true);
  cr_assert_eq(dq_ring_span(&f->ring, 0), 1);
  cr_assert_eq(dq_ring_span(&f->ring, 1), 1);
  cr_assert_eq(dq_ring_span(&f->ring, BLOCK), 1);
  cr_assert_eq(dq_ring_span(&f->ring, BLOCK + 1), 2);
  cr_assert_eq(dq_ring_span(&f->ring, 3 * BLOCK), 3);
  cr_assert_eq(dq_ring_span(&f->ring, LARGEST), LARGEST / BLOCK);
  cr_assert_eq(dq_ring_kernarg_spare(BLOCK, SLOTS, LARGEST), SLOTS - 1, "capped by the ring");
  cr_assert_eq(dq_ring_kernarg_spare(BLOCK, 64, LARGEST), LARGEST / BLOCK - 1);
  cr_assert_eq(dq_ring_kernarg_spare(LARGEST, 64, LARGEST), 0);
  /* the largest segment a ring of 8 x 512 takes (8 blocks) from its last slot */
  uint32_t spare = dq_ring_kernarg_spare(BLOCK, SLOTS, LARGEST);
  uint32_t ksize = SLOTS * BLOCK;
  uint8_t *start = dq_ring_kernarg(&f->ring, SLOTS - 1);
  cr_assert_leq(start + ksize, f->kernargs + (SLOTS + spare) * BLOCK);
  uint64_t id;
  f->amd.write_dispatch_id = SLOTS - 1;
  dq_ring_retire(&f->ring, SLOTS - 1);
  cr_assert(dq_ring_try_reserve(&f->ring, dq_ring_span(&f->ring, ksize), true, &id));
  cr_assert_eq(write_index(f), SLOTS - 1 + SLOTS, "the whole ring for the one dispatch");
  unfake(f);
}

/* Step 7: a producer stores its id, then the highest id the write index shows reserved while
 * a later one was reserved meanwhile; nothing else is stored. */
Test(aql_ring, doorbell_ends_at_the_highest_reserved_id) {
  fake_queue_t *f = fake(true);
  f->amd.write_dispatch_id = 6; /* ids 0..5 reserved */
  dq_ring_doorbell(&f->ring, 5);
  cr_assert_eq(f->hw_doorbell, 5, "the last reserved id: its own");
  dq_ring_doorbell(&f->ring, 3); /* a slower producer of id 3, after 4 and 5 were reserved */
  cr_assert_eq(f->hw_doorbell, 5, "id 3 then the highest reserved id, 5");
  f->amd.write_dispatch_id = 10;
  dq_ring_doorbell(&f->ring, 9);
  cr_assert_eq(f->hw_doorbell, 9);
  cr_assert_eq(dq_ring_doorbell_fast(&f->ring, 9), 0);
  cr_assert_eq(f->hw_doorbell, 9);
  cr_assert_eq(dq_ring_doorbell_fast(&f->ring, 7), 0, "ids 8 and 9 were reserved after 7");
  cr_assert_eq(f->hw_doorbell, 9);
  unfake(f);
}

Test(aql_ring, commit_rings_the_runs_last_id) {
  fake_queue_t *f = fake(false);
  f->amd.write_dispatch_id = 14;
  dq_ring_commit(&f->ring, 10, 4);
  cr_assert_eq(stores, 1, "one store: nothing reserved past the run");
  cr_assert_eq(stored[0], 13, "the last packet of [10, 14)");
  f->amd.write_dispatch_id = 15;
  dq_ring_commit(&f->ring, 14, 1);
  cr_assert_eq(stores, 2);
  cr_assert_eq(stored[1], 14);
  unfake(f);
}

/* Through a signal (no hardware doorbell): the same stores, in order, each one the value
 * stored; the fix-up after a later reservation is a second store. */
Test(aql_ring, doorbell_through_the_signal) {
  fake_queue_t *f = fake(false);
  f->amd.write_dispatch_id = 3;
  dq_ring_commit(&f->ring, 0, 3);
  f->amd.write_dispatch_id = 8;
  dq_ring_doorbell(&f->ring, 1);
  dq_ring_doorbell(&f->ring, 7);
  cr_assert_eq(stores, 4);
  cr_assert_eq(stored[0], 2);
  cr_assert_eq(stored[1], 1, "a producer stores its own id first");
  cr_assert_eq(stored[2], 7, "then the highest reserved id (write index 8)");
  cr_assert_eq(stored[3], 7);
  cr_assert_eq(f->hw_doorbell, 0, "the hardware doorbell is not the signal's");
  unfake(f);
}

/* The hot path's one-slot reservation: bounded by reserve_end = retired + size (one compare),
 * refused without a hole when the ring is full or the write index read is stale. */
Test(aql_ring, reserve_one_bounded_by_reserve_end) {
  fake_queue_t *f = fake(true);
  cr_assert_eq(f->ring.reserve_end, SLOTS, "retired 0 + size");
  uint64_t id = 99;
  for (uint64_t i = 0; i < SLOTS; i++) {
    cr_assert(dq_ring_try_reserve_one(&f->ring, &id));
    cr_assert_eq(id, i);
  }
  id = 99;
  cr_assert_not(dq_ring_try_reserve_one(&f->ring, &id), "a 9th packet in 8 slots");
  cr_assert_eq(id, 99);
  cr_assert_eq(write_index(f), SLOTS, "no hole");
  dq_ring_retire(&f->ring, 3);
  cr_assert_eq(f->ring.retired, 3);
  cr_assert_eq(f->ring.reserve_end, 3 + SLOTS);
  for (uint64_t i = 0; i < 3; i++) {
    cr_assert(dq_ring_try_reserve_one(&f->ring, &id));
    cr_assert_eq(id, SLOTS + i);
  }
  cr_assert_not(dq_ring_try_reserve_one(&f->ring, &id), "full again at retired + size");
  cr_assert_eq(write_index(f), SLOTS + 3);
  unfake(f);
}

/* Kernarg stamps (aql_ring.h): a writer other than the hot path clears the stamps of the slots
 * whose blocks it writes, up to the ring's last slot (past it: spare blocks, no stamp). */
Test(aql_ring, kernarg_claim_clears_the_stamps_it_writes) {
  fake_queue_t *f = fake(true);
  for (uint32_t i = 0; i < SLOTS; i++) f->slots[i].stamp = 100 + i;
  cr_assert_eq(dq_ring_kernarg_claim(&f->ring, 2, 1), f->kernargs + 2 * BLOCK);
  cr_assert_eq(dq_ring_kernarg_claim(&f->ring, SLOTS + 4, 2), f->kernargs + 4 * BLOCK,
               "id size + 4: slot 4");
  cr_assert_eq(dq_ring_kernarg_claim(&f->ring, 7, 3), f->kernargs + 7 * BLOCK,
               "a span from the last slot runs into the spare blocks");
  uint64_t want[SLOTS] = {100, 101, 0, 103, 0, 0, 106, 0};
  for (uint32_t i = 0; i < SLOTS; i++)
    cr_assert_eq(f->slots[i].stamp, want[i], "slot %u's stamp", i);
  unfake(f);
}

/* hsad_aql.h's header policy, bit for bit: type bits 0-7, BARRIER bit 8, acquire scope bits
 * 9-10, release scope bits 11-12 (HSA 1.2 hsa_packet_header_t; scope system 2, agent 1,
 * none 0; type kernel dispatch 2, barrier-AND 3, vendor 0). */
Test(aql_header, policy_bits) {
  cr_assert_eq(hsad_aql_kernel_header(true, false), 0x1502);
  cr_assert_eq(hsad_aql_kernel_header(false, false), 0x1402);
  cr_assert_eq(hsad_aql_kernel_header(true, true), 0x0b02);
  cr_assert_eq(hsad_aql_kernel_header(false, true), 0x0a02);
  cr_assert_eq(hsad_aql_barrier_and_header(true), 0x1503);
  cr_assert_eq(hsad_aql_barrier_and_header(false), 0x1403);
  cr_assert_eq(hsad_aql_pad_header(false), 0x0003, "padding: no BARRIER bit, no fences");
  cr_assert_eq(hsad_aql_pad_header(true), 0x1503, "epoch padding: a plain barrier-AND");
  cr_assert_eq(hsad_aql_barrier_value_header(true), 0x1500);
  cr_assert_eq(hsad_aql_barrier_value_header(false), 0x1400);
  cr_assert_eq(hsad_aql_barrier_value_word(false), 0x00021400u, "AmdFormat 2: barrier-value");
  cr_assert_eq(HSA_AMD_PACKET_TYPE_BARRIER_VALUE, 2);
}

/* Launch flags select the kernel header: bit 0 (HSAD_LAUNCH_NO_BARRIER) clears the BARRIER
 * bit, bit 1 (HSAD_LAUNCH_FENCE_AGENT) narrows both fences to the agent; other bits ignored. */
Test(aql_header, kernel_header_of_flags) {
  for (uint32_t flags = 0; flags < 16; flags++)
    cr_assert_eq(hsad_aql_kernel_header_of_flags(flags),
                 hsad_aql_kernel_header(!(flags & 1), (flags & 2) != 0), "flags %u", flags);
  cr_assert_eq(hsad_aql_kernel_header_of_flags(0), 0x1502);
  cr_assert_eq(hsad_aql_kernel_header_of_flags(3), 0x0a02);
}
