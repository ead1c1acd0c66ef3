/* aql_ring.h - the AQL ring of a queue as an object: packet slots, kernarg blocks, the write
 * and read indices, the completion bound and the doorbell (internal; aql_ring.c).
 *
 * What it owns: nothing. The packet slots and the indices are ROCr's (hsa_queue_create's
 * amd_queue_t), the kernarg blocks the queue's (one block per slot, then spare blocks that keep
 * a segment starting in the last slot contiguous, hsad_queue.h step 4). Everything here is
 * arithmetic over those addresses, so it runs on plain host memory as well (tests/
 * test_aql_ring.c builds a ring over a fake amd_queue_t without ROCr or kfd-emu).
 *
 * Contract (hsad_queue.h steps 3, 4, 7):
 *  - A slot whose kernarg block is used (kernel dispatches) is reserved only while
 *    write + n - retired <= size: the packet that last used the slot and its block completed.
 *  - A slot without kernargs (barrier packets) is reserved while write + n - read <= size: the
 *    packet processor has consumed the packet that was there (HSA 1.2 system architecture
 *    2.8.3: slots below the read index belong to producers again).
 *  - Nothing is reserved unless the whole run fits: a refused reservation leaves the write
 *    index as it was (no hole the packet processor would wait on forever).
 *  - A dispatch whose kernarg segment exceeds one block takes one slot per block (the slots
 *    after it carry padding), and its segment lies contiguous from its own slot's block.
 *  - A slot's kernarg stamp (kernarg_slots[slot].stamp; 0: none) is nonzero only while the slot's
 *    block holds the image of the launch-cache entry with that stamp (launch_cache.h), as the
 *    dispatch hot path copied it there: that path stores the stamp after a whole copy, and on
 *    a later hit whose slot has its entry's stamp copies only the image's first
 *    DQ_RING_STAMP_BYTES (the explicit arguments, which change per hit). Every other writer
 *    of a slot's block clears the slot's stamp first (dq_ring_kernarg_claim; fusion's
 *    ring-copy packets through hsad_submit_ring_t). The stamps are host memory of the
 *    library's own: the packet processor never writes kernarg memory.
 *  - The doorbell ends at the highest id reserved when the last producer rang: each producer
 *    stores its own (last) id, then reads the write index and stores the highest reserved id
 *    while a later id was reserved meanwhile (dq_ring_doorbell says why that is enough).
 * Memory ordering: the reservation is a compare-and-swap (seq_cst) on write_dispatch_id after
 * an acquire load of the bound (retired or read_dispatch_id), so the slot's previous packet is
 * complete before its slot and block are rewritten. The doorbell store is release (after the
 * headers' release stores) and followed by a seq_cst fence and a seq_cst load of the write
 * index.
 * Thread safety: every function is multi-producer safe; dq_ring_init is not (one owner, before
 * any producer).
 */
#ifndef HSAD_AQL_RING_H
#define HSAD_AQL_RING_H

#include <hsa/amd_hsa_queue.h>
#include <hsa/amd_hsa_signal.h>
#include <hsa/hsa.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#pragma GCC visibility push(hidden) /* library-internal (dispatch_internal.h) */

#define DQ_LIKELY(x) __builtin_expect(!!(x), 1)
#define DQ_UNLIKELY(x) __builtin_expect(!!(x), 0)

_Static_assert(offsetof(amd_queue_t, write_dispatch_id) == 56, "amd_queue_t write index");
_Static_assert(offsetof(amd_queue_t, read_dispatch_id) == 128, "amd_queue_t read index");
_Static_assert(offsetof(amd_signal_t, value) == 8, "amd_signal_t value");
_Static_assert(offsetof(amd_signal_t, hardware_doorbell_ptr) == 8, "amd_signal_t doorbell");

/* One slot's kernarg block and its stamp (the contract above): 16 bytes per slot, so the hot
 * path reads both with one index. */
typedef struct dq_ring_kernarg_slot {
  uint64_t stamp;                       /* 0: none */
  uint8_t *block;                       /* kernargs + slot x kernarg_block */
} dq_ring_kernarg_slot_t;
_Static_assert(sizeof(dq_ring_kernarg_slot_t) == 16, "a kernarg slot record is a quarter of an AQL slot");

/* A store into a doorbell signal (ROCr's hsa_signal_store_screlease). */
typedef void (*dq_ring_signal_store_fn)(hsa_signal_t signal, hsa_signal_value_t value);

typedef struct dq_ring {
  /* read-mostly: set by dq_ring_init */
  uint8_t *packets;                     /* hsa_queue_t.base_address: size x 64-byte slots */
  uint64_t mask;                        /* size - 1 (size is a power of two) */
  uint32_t size;                        /* slots */
  uint32_t kernarg_block;               /* bytes of kernarg segment per slot (multiple of 64) */
  uint8_t *kernargs;                    /* (size + spare) x kernarg_block bytes */
  dq_ring_kernarg_slot_t *kernarg_slots; /* size entries: each slot's block and the stamp of
                                           the image it holds (see the contract) */
  _Atomic uint64_t *write_index;        /* &amd_queue_t.write_dispatch_id */
  _Atomic uint64_t *read_index;         /* &amd_queue_t.read_dispatch_id (the CP's) */
  volatile uint64_t *doorbell;          /* direct 64-bit doorbell (gfx9+), NULL: the signal */
  hsa_signal_t doorbell_signal;         /* hsa_queue_t.doorbell_signal */
  dq_ring_signal_store_fn signal_store; /* how to ring doorbell_signal when doorbell is NULL */
  /* written by the completion side (dq_ring_retire): every packet id < retired has completed;
   * reserve_end = retired + size, the hot path's bound (dq_ring_try_reserve_one) */
  _Alignas(64) _Atomic uint64_t retired;
  _Atomic uint64_t reserve_end;
} dq_ring_t;

/* Blocks past the ring's last one: a segment of up to `largest` bytes (at most `size` blocks:
 * a span never exceeds the ring) starting in the last slot's block stays contiguous. */
static inline uint32_t dq_ring_kernarg_spare(uint32_t block, uint32_t size, uint32_t largest) {
  uint32_t blocks = (largest + block - 1) / block;
  return (blocks < size ? blocks : size) - 1;
}

/* Sets up `ring` over ROCr's queue `amd` (its slots, indices and doorbell signal) and the
 * queue's kernarg blocks. The doorbell is written directly when the doorbell signal is a
 * hardware doorbell (AMD_SIGNAL_KIND_DOORBELL: ROCr's AqlQueue stores the 64-bit packet id at
 * hardware_doorbell_ptr, release), else through signal_store. retired starts at 0.
 * kernarg_slots: `size` entries (the caller's memory, like kernargs): each slot's block is
 * written here, its stamp 0. */
void dq_ring_init(dq_ring_t *ring, amd_queue_t *amd, uint8_t *kernargs, uint32_t kernarg_block,
                  dq_ring_kernarg_slot_t *kernarg_slots, dq_ring_signal_store_fn signal_store);

/* Slots a dispatch with a kernarg segment of ksize bytes takes: one per kernarg block. */
static inline uint32_t dq_ring_span(const dq_ring_t *ring, uint32_t ksize) {
  return ksize <= ring->kernarg_block ? 1 : (ksize + ring->kernarg_block - 1) / ring->kernarg_block;
}

/* The 64-byte slot of packet `id`. */
static inline uint8_t *dq_ring_slot(const dq_ring_t *ring, uint64_t id) {
  return ring->packets + (id & ring->mask) * 64;
}

/* The kernarg block of packet `id`: its segment starts here (and runs on into the next
 * blocks, or the spare blocks past the last one, when it spans several). */
static inline uint8_t *dq_ring_kernarg(const dq_ring_t *ring, uint64_t id) {
  return ring->kernargs + (id & ring->mask) * ring->kernarg_block;
}

/* The bytes a hot-path hit copies into a block that holds its entry's image (the slot's stamp
 * is the entry's): the explicit arguments of a signature entry (at most 4 x 8 bytes). */
#define DQ_RING_STAMP_BYTES 32

/* The kernarg block of packet `id` for a writer other than the dispatch hot path, whose
 * segment spans `span` blocks: the stamps of the slots whose blocks it writes (those of ids
 * id .. id + span - 1 up to the ring's last slot; past it the spare blocks, which no slot
 * has) are cleared first. */
static inline uint8_t *dq_ring_kernarg_claim(const dq_ring_t *ring, uint64_t id, uint32_t span) {
  uint64_t slot = id & ring->mask;
  for (uint64_t j = slot; j < slot + span && j < ring->size; j++) ring->kernarg_slots[j].stamp = 0;
  return ring->kernarg_slots[slot].block;
}

/* Every packet id below `retired` completed (timeline.c, after the epoch signal's acquire
 * load showed it): stores reserve_end, then retired (release both). */
static inline void dq_ring_retire(dq_ring_t *ring, uint64_t retired) {
  atomic_store_explicit(&ring->reserve_end, retired + ring->size, memory_order_release);
  atomic_store_explicit(&ring->retired, retired, memory_order_release);
}

/* The id a reservation may not pass: `retired` for slots whose kernarg block is reused
 * (kernel dispatches), else the packet processor's read index (acquire: the slot's previous
 * packet, and its block, are done before they are rewritten). */
static inline uint64_t dq_ring_bound(dq_ring_t *ring, bool kernarg) {
  return kernarg ? atomic_load_explicit(&ring->retired, memory_order_acquire)
                 : atomic_load_explicit(ring->read_index, memory_order_acquire);
}

/* Whether ids [write, write + n) fit in the ring above `bound`: write + n - bound <= size
 * (n <= size), computed as write - bound <= mask + 1 - n (one compare with the mask for one
 * slot). A stale write (below bound) makes the difference wrap: no room. */
static inline bool dq_ring_fits(const dq_ring_t *ring, uint64_t write, uint64_t bound,
                                uint32_t n) {
  return write - bound <= ring->mask + 1 - n;
}

/* Tries to take ids [*out_id, *out_id + n) without waiting. kernarg: bounded by `retired`
 * (the slots' kernarg blocks are reused), else by the read index. False: no room now, nothing
 * reserved. */
static inline bool dq_ring_try_reserve(dq_ring_t *ring, uint32_t n, bool kernarg,
                                       uint64_t *out_id) {
  uint64_t write = atomic_load_explicit(ring->write_index, memory_order_relaxed);
  for (;;) {
    uint64_t bound = dq_ring_bound(ring, kernarg);
    if (DQ_UNLIKELY(write < bound)) { /* a stale write index */
      write = atomic_load_explicit(ring->write_index, memory_order_relaxed);
      continue;
    }
    if (!dq_ring_fits(ring, write, bound, n)) return false;
    if (atomic_compare_exchange_weak_explicit(ring->write_index, &write, write + n,
                                              memory_order_seq_cst, memory_order_relaxed)) {
      *out_id = write;
      return true;
    }
  }
}

/* dq_ring_doorbell's slow side, out of line (aql_ring.c): stores ids the write index shows
 * reserved until no id was reserved past the last one stored. Returns 0 (so the hot path
 * reaches it as a tail call). */
int dq_ring_doorbell_settle(dq_ring_t *ring, uint64_t stored);

/* One doorbell store of `value` (release: after the headers' release stores), then the
 * seq_cst fence that orders it before the caller's next load of the write index. */
static inline void dq_ring_doorbell_store(dq_ring_t *ring, uint64_t value) {
  if (DQ_LIKELY(ring->doorbell != NULL))
    __atomic_store_n(ring->doorbell, value, __ATOMIC_RELEASE);
  else
    ring->signal_store(ring->doorbell_signal, (hsa_signal_value_t)value);
  atomic_thread_fence(memory_order_seq_cst);
}

/* Rings the doorbell for published packet `id` (hsad_queue.h step 7): stores id, then reads
 * the write index; when nothing was reserved past id (write == id + 1: one producer, or
 * producers ringing in order) that is all, else dq_ring_doorbell_settle stores the highest
 * reserved id. Why the doorbell then ends at the highest id any producer published: the store
 * is followed by a seq_cst fence and the reservations are seq_cst compare-and-swaps, so of two
 * producers A (id a) and B (id b > a), either A's read of the write index sees B's
 * reservation (A stores b or higher itself), or it does not, and then B's reservation, hence
 * B's doorbell store, comes after A's store: the last store of the doorbell is always made by
 * a producer whose read of the write index showed nothing reserved past its value. A doorbell
 * above a packet still being written is allowed: the packet processor waits for its header
 * (HSA 1.2 system architecture 2.8.3). The step "B's reservation, hence B's doorbell store,
 * comes after A's store" rests on the hardware ordering B's doorbell store (release) after its
 * compare-and-swap: x86-64 (a locked instruction) and ARMv8 (a store-release follows every
 * earlier access) do; the C11 model alone gives it only with a seq_cst fence (or a seq_cst
 * doorbell store) after the reservation, which the hot path leaves out. */
static inline int dq_ring_doorbell_check(dq_ring_t *ring, uint64_t id);
static inline void dq_ring_doorbell(dq_ring_t *ring, uint64_t id) {
  dq_ring_doorbell_store(ring, id);
  (void)dq_ring_doorbell_check(ring, id);
}

/* dq_ring_doorbell's step after the store and fence of `id`: the write index read, and
 * dq_ring_doorbell_settle when a later id was reserved meanwhile. Returns 0. */
static inline int dq_ring_doorbell_check(dq_ring_t *ring, uint64_t id) {
  if (DQ_LIKELY(atomic_load_explicit(ring->write_index, memory_order_seq_cst) == id + 1)) return 0;
  return dq_ring_doorbell_settle(ring, id);
}

/* One attempt at reserving the single id *out_id for a dispatch that uses its slot's kernarg
 * block (bounded by `retired`), as dq_ring_try_reserve(ring, 1, true, ...) but without its
 * loop: false when the ring is full (write >= reserve_end, i.e. write + 1 - retired > size)
 * or another producer's compare-and-swap won (a stale read of the write index, below
 * `retired` too, loses it: the index moved on); nothing is reserved then and the caller
 * takes the waiting path. The hot path's reservation. */
static inline bool dq_ring_try_reserve_one(dq_ring_t *ring, uint64_t *out_id) {
  _Atomic uint64_t *write_index = ring->write_index; /* read once, before the acquire */
  uint64_t write = atomic_load_explicit(write_index, memory_order_relaxed);
  if (DQ_UNLIKELY(write >= atomic_load_explicit(&ring->reserve_end, memory_order_acquire)))
    return false;
  if (DQ_UNLIKELY(!atomic_compare_exchange_strong_explicit(write_index, &write, write + 1,
                                                           memory_order_seq_cst,
                                                           memory_order_relaxed)))
    return false;
  *out_id = write;
  return true;
}

/* Copies n16 <= DQ_COPY16_MAX x 16 bytes from src to dst (a kernarg image into a kernarg
 * block; both 16-byte aligned) inline, without a call or a loop: a jump into an unrolled
 * run. (A table of label addresses would take 3 instructions where the switch takes 6, but
 * hsad_kernel_dispatch already jumps through one, the signatures', and GCC lets every
 * computed goto of a function reach every label whose address is taken there: two cost more
 * than they save.) */
#define DQ_COPY16_MAX 16
static inline void dq_copy16(uint8_t *restrict dst, const uint8_t *restrict src, uint32_t n16) {
  typedef struct { uint64_t w[2]; } __attribute__((aligned(16))) chunk_t;
  chunk_t *d = (chunk_t *)(void *)dst;
  const chunk_t *s = (const chunk_t *)(const void *)src;
  switch (n16 & 31) { /* masked: a table of 32 without a bounds check */
    /* never (n16 <= DQ_COPY16_MAX): every value of n16 & 31 has its case, so no bounds check */
    case 17: case 18: case 19: case 20: case 21: case 22: case 23: case 24:
    case 25: case 26: case 27: case 28: case 29: case 30: case 31: __attribute__((fallthrough));
#define DQ_COPY16_CASE(n) case n: d[n - 1] = s[n - 1]; __attribute__((fallthrough));
    DQ_COPY16_CASE(16) DQ_COPY16_CASE(15) DQ_COPY16_CASE(14) DQ_COPY16_CASE(13)
    DQ_COPY16_CASE(12) DQ_COPY16_CASE(11) DQ_COPY16_CASE(10) DQ_COPY16_CASE(9)
    DQ_COPY16_CASE(8) DQ_COPY16_CASE(7) DQ_COPY16_CASE(6) DQ_COPY16_CASE(5)
    DQ_COPY16_CASE(4) DQ_COPY16_CASE(3) DQ_COPY16_CASE(2) DQ_COPY16_CASE(1)
#undef DQ_COPY16_CASE
    case 0: break;
  }
}

/* dq_ring_doorbell for a ring with a direct doorbell (ring->doorbell != NULL), the hot
 * path's: the store, the fence, the write index read; dq_ring_doorbell_settle when a later id
 * was reserved meanwhile. Returns 0. */
static inline int dq_ring_doorbell_fast(dq_ring_t *ring, uint64_t id) {
  __atomic_store_n(ring->doorbell, id, __ATOMIC_RELEASE);
  atomic_thread_fence(memory_order_seq_cst);
  return dq_ring_doorbell_check(ring, id);
}

/* Rings the doorbell for a published run [first, first + n): with its LAST packet id, so the
 * packet processor takes the whole run (rocm-systems PR #3040: a doorbell with the first id
 * leaves the rest waiting). */
static inline void dq_ring_commit(dq_ring_t *ring, uint64_t first, uint32_t n) {
  dq_ring_doorbell(ring, first + n - 1);
}

#pragma GCC visibility pop

#endif
