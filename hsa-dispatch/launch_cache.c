/* launch_cache.c - the per-thread launch cache's cold side: allocation and entering a launch
 * (launch_cache.h). */
#include <pthread.h>
#include <stdlib.h>

#include "hsa-dispatch/launch_cache.h"
#include "hsa-dispatch/queue_submit.h"

/* No entry: every key field 0 (kernel_uid 0 matches no kernel) but the hot key, DQ_HOT_NONE
 * (0 would match a kernel whose hot_id is 0 on a queue whose hot key is 0); never written. */
dq_launch_cache_t dq_launch_cache_none __attribute__((aligned(64))) = {.hot_ids = DQ_HOT_NONE};
__thread dq_launch_cache_t *dq_launch_cache_mine
    __attribute__((tls_model("initial-exec"))) = &dq_launch_cache_none;

_Static_assert(DQ_KERNARG_SEGMENT_MAX % 16 == 0, "an image rounded up to 16 bytes fits");

/* The last stamp given to an entry (launch_cache.h): stamps are never reused. */
static _Atomic uint64_t stamp_last;

static pthread_key_t cache_key;     /* frees a thread's entry when it exits */
static pthread_once_t cache_key_once = PTHREAD_ONCE_INIT;
/* A thread's exit (cache_key's destructor): the thread's pointer goes back to the empty entry
 * before its entry is freed, so a destructor of another key that runs later in the exit and
 * dispatches finds no entry (not freed memory) and makes a new one, which the next round of
 * destructors frees (POSIX: up to PTHREAD_DESTRUCTOR_ITERATIONS rounds). */
static void cache_free(void *c) {
  dq_launch_cache_mine = &dq_launch_cache_none;
  free(c);
}
static void cache_key_create(void) { (void)pthread_key_create(&cache_key, cache_free); }

static dq_launch_cache_t *cache_mine(void) {
  dq_launch_cache_t *c = dq_launch_cache_mine;
  if (DQ_LIKELY(c != &dq_launch_cache_none)) return c;
  c = aligned_alloc(64, (sizeof *c + 63) & ~(size_t)63);
  if (!c) return NULL;
  memset(c, 0, offsetof(dq_launch_cache_t, built));
  pthread_once(&cache_key_once, cache_key_create);
  (void)pthread_setspecific(cache_key, c);
  dq_launch_cache_mine = c;
  return c;
}

/* The signature entry (launch_cache.h, DQ_SIG_INDEX) of a checked launch, + 1, or 0 where it
 * has none: more than DQ_SIG_ARGS arguments, an argument other than a POINTER in an 8-byte
 * slot (a 4-byte slot's pointer must fit: a value check) or 4 BYTES (SCALAR, LDS and other
 * sizes keep their values in the key), or a slot off the natural layout. Writes c->sig_key. */
static uint32_t signature_of(dq_launch_cache_t *c, const hsad_device_kernel_t *k,
                             const hsad_launch_t *l) {
  const hsad_kernarg_plan_t *plan = k->plan;
  if (!plan || l->arg_count > DQ_SIG_ARGS || plan->explicit_count != l->arg_count) return 0;
  uint32_t val4 = 0, off = 0;
  for (uint32_t i = 0; i < l->arg_count; i++) {
    const hsad_karg_t *arg = &l->args[i];
    const hsad_kernarg_slot_t *slot = &plan->explicit_args[i];
    uint32_t size;
    if (arg->tag == HSAD_KARG_POINTER && arg->type == 0 && slot->size == 8) {
      size = 8;
    } else if (arg->tag == HSAD_KARG_BYTES && arg->size == 4 && slot->size == 4) {
      size = 4;
      val4 |= 1u << i;
      memcpy(&c->sig_key[i], arg, 8);
    } else {
      return 0;
    }
    off = (off + size - 1) & ~(size - 1);
    if (slot->offset != off) return 0;
    off += size;
  }
  return DQ_SIG_INDEX(l->arg_count, val4) + 1;
}

hsad_status_t dq_launch_cache_fill(const hsad_queue_t *q, const hsad_device_kernel_t *k,
                                   const hsad_launch_t *l, const dq_built_t **out_built) {
  dq_launch_cache_t *c = cache_mine();
  if (!c)
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_kernel_dispatch: the thread's launch cache "
                     "(%zu bytes)", sizeof *c);
  /* no entry until the key is complete (both keys: the general path's, the hot path's), since
   * the check rewrites the image; the hot key DQ_HOT_NONE, not 0, which a kernel whose hot_id
   * is 0 on a queue whose hot key is 0 matches (dispatch_internal.h) */
  c->kernel_uid = 0;
  c->hot_ids = DQ_HOT_NONE;
  hsad_status_t s = dq_launch_check(q, k, l, &c->built);
  if (s) return s;
  *out_built = &c->built;
  if (l->arg_count > DQ_LAUNCH_CACHE_ARGS) return HSAD_OK; /* built, not entered */
  uint32_t bytes_mask = 0;
  for (uint32_t i = 0; i < l->arg_count; i++) {
    const hsad_karg_t *arg = &l->args[i];
    uint8_t *have = c->args[i], *mask = c->masks[i];
    memcpy(have, arg, 16);
    memset(mask, 0, 16);
    memset(mask, 0xff, 4);                                   /* tag and type */
    if (arg->tag == HSAD_KARG_POINTER) memset(mask + 8, 0xff, 8); /* the value */
    else if (arg->tag == HSAD_KARG_SCALAR) memset(mask + 4, 0xff, 12); /* size, the value */
    else if (arg->tag == HSAD_KARG_LDS) memset(mask + 8, 0xff, 4); /* lds_bytes */
    else memset(mask + 4, 0xff, 4);                          /* BYTES: size; value below */
    for (int j = 0; j < 16; j++) have[j] &= mask[j];
    if (arg->tag != HSAD_KARG_BYTES) continue;
    if (arg->size > DQ_LAUNCH_CACHE_VALUE) return HSAD_OK;
    bytes_mask |= 1u << i;
    c->words[i] = 0;
    memcpy(arg->size == 4 || arg->size == 8 ? (void *)&c->words[i] : c->values[i], arg->bytes,
           arg->size);
  }
  hsad_launch_geometry_store(&c->geometry, l);
  hsa_kernel_dispatch_packet_t *pkt = (hsa_kernel_dispatch_packet_t *)c->packet;
  memset(c->packet, 0, sizeof c->packet);
  uint32_t setup_word = hsad_aql_dispatch_fill(pkt, &c->built.d, 0);
  c->hot_word = setup_word | dq_dispatch_header(l->flags);
  c->copy = k->kernarg_copy; /* a multiple of 16: zero the image's bytes past the segment, up
                                to the copy and the stamp's bytes (aql_ring.h) */
  uint32_t copied = c->copy > DQ_RING_STAMP_BYTES ? c->copy : DQ_RING_STAMP_BYTES;
  memset(c->built.image + k->desc.kernarg_segment_size, 0,
         copied > k->desc.kernarg_segment_size ? copied - k->desc.kernarg_segment_size : 0);
  c->fast_count = dq_ring_span(&q->ring, k->desc.kernarg_segment_size) == 1 &&
                          c->copy <= 16 * DQ_COPY16_MAX ? l->arg_count : UINT32_MAX;
  c->copy16 = c->copy / 16;
  c->bytes_mask = bytes_mask;
  c->sig = c->fast_count != UINT32_MAX ? signature_of(c, k, l) : 0;
  const void *const *cases = __atomic_load_n(&dq_hot_cases, __ATOMIC_RELAXED);
  c->hot_case = cases ? cases[c->sig] : NULL;
  c->hot_count_flags = (uint64_t)l->arg_count | (uint64_t)l->flags << 32;
  c->stamp = atomic_fetch_add_explicit(&stamp_last, 1, memory_order_relaxed) + 1;
  c->queue_uid = q->uid;
  c->kernel = k;
  c->arg_count = l->arg_count;
  c->kernel_uid = k->uid;
  /* the hot key last, and the one mark of whether the hot path may submit the entry:
   * DQ_HOT_NONE with no case yet or a segment over one block or DQ_COPY16_MAX x 16 bytes */
  c->hot_ids = q->uid < DQ_HOT_QUEUE_UIDS && k->hot_id && c->fast_count != UINT32_MAX &&
                       c->hot_case
                   ? DQ_HOT_KEY(q->uid, k->hot_id) : DQ_HOT_NONE;
  return HSAD_OK;
}
