/* launch_cache.h - the calling thread's cache of its last checked launch (hsad_queue.h step 2;
 * internal; launch_cache.c).
 *
 * A launch with the same queue, kernel, geometry and arguments as the thread's last successful
 * one reuses its checked packet body and kernarg image (one copy of the image into the slot's
 * block) instead of checking the geometry and building every hidden argument again. The
 * arguments are the same when a signature entry's (DQ_SIG_INDEX: up to 4 POINTERs in 8-byte
 * slots and 4-byte BYTES, natural layout) have the tags, types and sizes the entry's check
 * accepted (each hit then writes their values into the image: no value enters a check), or
 * when a value-keyed entry's have the same compared bytes and values. Keys are unique ids,
 * never pointers, so a freed and reallocated queue or kernel cannot alias an old entry; only
 * successful launches are entered, so a hit needs no check.
 *
 * Ownership: one entry per thread, allocated on the thread's first miss (64-byte aligned) and
 * freed when the thread exits (a pthread key's destructor). The thread-local pointer is
 * initial-exec: a hit reads it with one %fs-relative load, without __tls_get_addr (the entry
 * itself, ~9 KiB, is not static TLS, so a dlopen of libhsad.so still finds room for it). Before
 * the first miss it points at dq_launch_cache_none, one shared entry that no launch hits
 * (kernel_uid 0, hot_ids DQ_HOT_NONE) and nothing writes, so a hit needs no NULL test.
 * Thread safety: each thread reads and writes its own entry only.
 */
#ifndef HSAD_LAUNCH_CACHE_H
#define HSAD_LAUNCH_CACHE_H

#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "hsa-dispatch/dispatch_internal.h"

#pragma GCC visibility push(hidden) /* library-internal (dispatch_internal.h) */

#define DQ_LAUNCH_CACHE_ARGS 16  /* launches with more explicit arguments are not entered */
#define DQ_LAUNCH_CACHE_VALUE 16 /* nor those with a by-value argument above 16 bytes */
#define DQ_SIG_ARGS 4            /* signature entries: at most 4 explicit arguments */
/* A signature entry's launch: n (0..DQ_SIG_ARGS) explicit arguments, argument i a POINTER in
 * an 8-byte slot (bit i of val4 clear) or 4 BYTES, typed or not (bit i set), in the natural
 * layout (each at the previous one's end aligned to its size, the first at 0). Its index,
 * 0..30: (1 << n) - 1 + val4. */
#define DQ_SIG_INDEX(n, val4) ((1u << (n)) - 1u + (val4))

_Static_assert(offsetof(hsad_karg_t, type) == 2 && offsetof(hsad_karg_t, size) == 4 &&
                   offsetof(hsad_karg_t, pointer) == 8 && offsetof(hsad_karg_t, scalar) == 8 &&
                   sizeof(hsad_karg_t) == 16,
               "hsad_karg_t: tag and type (one word), size, then the 8-byte value");

typedef struct dq_launch_cache {
  /* the key, compared on every hit (dq_launch_cache_same, dq_launch_cache_hot) */
  uint64_t queue_uid, kernel_uid; /* kernel_uid 0: no entry (uids start at 1) */
  uint64_t hot_ids;               /* DQ_HOT_KEY(queue_uid, kernel's hot_id): the hot path's
                                     key of both (k->hot_id ^ q->hot_uid); DQ_HOT_NONE: none
                                     (a uid too high, no hot case, a segment the hot path does
                                     not copy; while the entry is filled: the image is then
                                     another launch's, dispatch_internal.h) */
  uint64_t hot_count_flags;       /* the hot path's key for hsad_launch_t's adjacent arg_count
                                     and flags (one 8-byte compare): arg_count | flags << 32
                                     (whether the hot path may submit the entry at all is
                                     hot_ids') */
  uint32_t arg_count;             /* the launch's */
  uint32_t fast_count;            /* arg_count when the hot path may submit the entry, else
                                     UINT32_MAX */
  uint32_t bytes_mask;            /* bit i: argument i is BYTES, its value compared below */
  uint32_t sig;                   /* 0: the key holds the values (args, masks, words, values);
                                     else DQ_SIG_INDEX(n, val4) + 1 (at most 31): a signature
                                     entry whose key is the arguments' tags, types and sizes
                                     only, each hit writing the values into the image
                                     (dq_launch_cache_put_by_sig) */
  const void *hot_case;           /* where hsad_kernel_dispatch's hot path goes for `sig`: the
                                     address of its case (dq_hot_cases[sig]) */
  uint64_t sig_key[DQ_SIG_ARGS];  /* signature entry: argument i's first 8 bytes (tag, type,
                                     size) where it is 4 BYTES (bit i of val4) */
  uint32_t hot_word;              /* the packet's first word (header | setup << 16) for the
                                     entry's flags (hsad_aql_kernel_header_of_flags) */
  uint32_t copy;                  /* image bytes the hot path copies (kernel's kernarg_copy) */
  uint32_t copy16;                /* copy / 16 */
  const hsad_device_kernel_t *kernel; /* the kernel whose uid is kernel_uid (on a hit: the
                                     caller's, since uids are unique) */
  uint64_t stamp;                 /* this entry's image, unique for the process (a new one
                                     each time an entry is made): the hot path stores it as
                                     the kernarg stamp of a slot whose block it copied the
                                     whole image into, and copies only the first
                                     DQ_RING_STAMP_BYTES into a block that has it (aql_ring.h) */
  hsad_launch_geometry_t geometry; /* the launch's dims, grid[3], block[3] (backend.h) */
  _Alignas(16) uint8_t args[DQ_LAUNCH_CACHE_ARGS][16];  /* each hsad_karg_t as given, masked */
  _Alignas(16) uint8_t masks[DQ_LAUNCH_CACHE_ARGS][16]; /* its bytes that are compared: the
                                     tag and type (a typed value never hits an untyped entry,
                                     nor the reverse: its type check ran on the miss); POINTER
                                     the 8-byte value; SCALAR size and value; LDS lds_bytes;
                                     BYTES the size (the value is compared through `bytes`) */
  uint64_t words[DQ_LAUNCH_CACHE_ARGS];   /* BYTES of 4 or 8 bytes: the value */
  uint8_t values[DQ_LAUNCH_CACHE_ARGS][DQ_LAUNCH_CACHE_VALUE]; /* other BYTES: the value */
  _Alignas(64) uint8_t packet[64]; /* the checked packet: bytes 4..63 (kernarg address and
                                      completion signal 0) */
  dq_built_t built;               /* checked body and kernarg image */
} dq_launch_cache_t;

_Static_assert(offsetof(hsad_launch_t, flags) == offsetof(hsad_launch_t, arg_count) + 4,
               "hsad_launch_t: arg_count and flags adjacent (dq_launch_cache_hot)");

/* hsad_kernel_dispatch's table of its cases' addresses (labels), indexed by an entry's `sig`:
 * published by hsad_kernel_dispatch on its miss paths (a label's address exists only inside its
 * function), read when an entry is made; NULL before the first miss: entries made then (a
 * prepared launch's) do not take the hot path. */
extern const void *const *dq_hot_cases;

/* This thread's entry: &dq_launch_cache_none (no entry: kernel_uid 0) before its first miss,
 * so a hit needs no NULL test. */
extern __thread dq_launch_cache_t *dq_launch_cache_mine __attribute__((tls_model("initial-exec")));
extern dq_launch_cache_t dq_launch_cache_none;

/* The BYTES arguments of a launch whose other bytes matched the entry: their values. */
static inline __attribute__((always_inline)) bool dq_launch_cache_values_same(const dq_launch_cache_t *c,
                                               const hsad_karg_t *args) {
  for (uint32_t m = c->bytes_mask; m; m &= m - 1) {
    uint32_t i = (uint32_t)__builtin_ctz(m);
    const void *bytes = args[i].bytes;
    if (DQ_UNLIKELY(!bytes)) return false;
    uint32_t size = args[i].size; /* equal to the entry's: the masked compare covered it */
    if (size == 4) {
      uint32_t value;
      memcpy(&value, bytes, 4);
      if (value != c->words[i]) return false;
    } else if (size == 8) {
      uint64_t value;
      memcpy(&value, bytes, 8);
      if (value != c->words[i]) return false;
    } else {
      for (uint32_t j = 0; j < size; j++) /* up to DQ_LAUNCH_CACHE_VALUE bytes, no call */
        if (((const uint8_t *)bytes)[j] != c->values[i][j]) return false;
    }
  }
  return true;
}

/* Whether the entry is kernel k's on the queue whose uid is `quid` (q->uid: the general
 * path's key; the hot path compares hot_ids instead). */
static inline __attribute__((always_inline)) bool
dq_launch_cache_ids_same(const dq_launch_cache_t *c, uint64_t quid, const hsad_device_kernel_t *k) {
  if (c->kernel_uid != k->uid) return false;
  if (c->queue_uid != quid) return false;
  return true;
}

/* Whether (q, k, l) has the entry's kernel, queue (dq_launch_cache_ids_same with q->uid),
 * argument count and geometry (its 28 bytes as two 16-byte compares): the general path's key.
 * The arguments are dq_launch_cache_args_same's (a value-keyed entry) or
 * dq_launch_cache_put_by_sig's (a signature entry). */
static inline __attribute__((always_inline)) bool
dq_launch_cache_same(const dq_launch_cache_t *c, const hsad_queue_t *q,
                     const hsad_device_kernel_t *k, const hsad_launch_t *l) {
  if (!dq_launch_cache_ids_same(c, q->uid, k)) return false;
  if (c->arg_count != l->arg_count) return false;
  return hsad_launch_geometry_same(&c->geometry, l);
}

/* hsad_launch_geometry_same for the hot path, which is compiled for SSE4.1 (dispatch.c): the
 * two 16-byte differences or'ed and tested for zero (ptest), one instruction fewer. */
#if defined(__x86_64__)
#define DQ_HOT_TARGET __attribute__((target("sse4.1")))
#include <smmintrin.h>
static inline __attribute__((always_inline)) DQ_HOT_TARGET bool
dq_launch_geometry_same_hot(const hsad_launch_geometry_t *g, const hsad_launch_t *l) {
  const uint8_t *b = (const uint8_t *)&l->dims;
  __m128i diff = _mm_or_si128(
      _mm_xor_si128(_mm_loadu_si128((const __m128i *)b), _mm_load_si128((const __m128i *)g->lo)),
      _mm_xor_si128(_mm_loadu_si128((const __m128i *)(b + 12)),
                    _mm_load_si128((const __m128i *)g->hi)));
  return _mm_testz_si128(diff, diff);
}
#else
#define DQ_HOT_TARGET
#define dq_launch_geometry_same_hot hsad_launch_geometry_same
#endif

/* The hot path's key: whether (q, k, l) is the entry's launch on a queue that takes the hot
 * path (DQ_HOT_KEY: the kernel's hot_id ^ the queue's hot key, one compare), with the entry's
 * argument count and flags (one 8-byte compare with c->hot_count_flags) and geometry; an
 * entry the hot path may not submit has DQ_HOT_NONE, which no kernel and queue match. The
 * arguments are the caller's. */
static inline __attribute__((always_inline)) DQ_HOT_TARGET bool dq_launch_cache_hot(const dq_launch_cache_t *c,
                                                                      const hsad_queue_t *q,
                                                                      const hsad_device_kernel_t *k,
                                                                      const hsad_launch_t *l) {
  uint64_t count_flags;
  memcpy(&count_flags, &l->arg_count, 8);
  if ((k->hot_id ^ atomic_load_explicit(&((hsad_queue_t *)q)->hot_uid, memory_order_relaxed)) !=
      c->hot_ids) /* DQ_HOT_KEY: the kernel, the queue, its gate and mode in one compare */
    return false;
  if (count_flags != c->hot_count_flags) return false;
  return dq_launch_geometry_same_hot(&c->geometry, l);
}

/* A value-keyed entry (sig 0) whose kernel, queue, count and geometry matched: whether the
 * launch's `count` arguments are the entry's, one masked compare of packed bytes per argument,
 * then the BYTES values. */
static inline __attribute__((always_inline)) bool dq_launch_cache_args_same(const dq_launch_cache_t *c,
                                             const hsad_launch_t *l, uint32_t count) {
  const uint8_t *a = (const uint8_t *)l->args;
  if (DQ_UNLIKELY(a == NULL) && count) return false; /* the check reports it */
#ifdef __SSE2__
  __m128i acc = _mm_setzero_si128();
  switch (count) { /* unrolled: no loop counter on the hot path */
#define DQ_ARG_CASE(n)                                                                        \
  case n:                                                                                     \
    acc = _mm_or_si128(                                                                       \
        acc, _mm_and_si128(_mm_xor_si128(_mm_loadu_si128((const __m128i *)(a + 16 * (n - 1))), \
                                         _mm_load_si128((const __m128i *)c->args[n - 1])),     \
                           _mm_load_si128((const __m128i *)c->masks[n - 1])));                 \
    __attribute__((fallthrough));
    DQ_ARG_CASE(16) DQ_ARG_CASE(15) DQ_ARG_CASE(14) DQ_ARG_CASE(13) DQ_ARG_CASE(12)
    DQ_ARG_CASE(11) DQ_ARG_CASE(10) DQ_ARG_CASE(9) DQ_ARG_CASE(8) DQ_ARG_CASE(7)
    DQ_ARG_CASE(6) DQ_ARG_CASE(5) DQ_ARG_CASE(4) DQ_ARG_CASE(3) DQ_ARG_CASE(2) DQ_ARG_CASE(1)
#undef DQ_ARG_CASE
  case 0:
    break;
  default:
    return false; /* above DQ_LAUNCH_CACHE_ARGS: never entered */
  }
  if (_mm_movemask_epi8(_mm_cmpeq_epi8(acc, _mm_setzero_si128())) != 0xffff) return false;
#else
  uint64_t acc = 0;
  for (uint32_t i = 0; i < count; i++) {
    uint64_t v[2], h[2], m[2];
    memcpy(v, a + 16 * i, 16);
    memcpy(h, c->args[i], 16);
    memcpy(m, c->masks[i], 16);
    acc |= ((v[0] ^ h[0]) & m[0]) | ((v[1] ^ h[1]) & m[1]);
  }
  if (acc) return false;
#endif
  return dq_launch_cache_values_same(c, l->args);
}

/* A signature entry's hit (DQ_SIG_INDEX(n, val4), both constants once inlined), its kernel,
 * queue, count and geometry matched: checks that the launch's arguments x[0 .. n) are what the
 * entry's check accepted (POINTER: its tag and type word is {HSAD_KARG_POINTER, 0}; 4 BYTES:
 * its tag, type and size are the entry's and `bytes` is not NULL; x not NULL), then writes
 * their values into the image at their natural offsets (hsad_queue.h, "The argument path").
 * The rest of the image (padding, hidden arguments) depends on the kernel, the queue and the
 * geometry only. False, with nothing written, when an argument differs: the caller takes the
 * general path, whose check reports it. */
static inline __attribute__((always_inline)) bool dq_launch_cache_put_sig(dq_launch_cache_t *c,
                                                                          const hsad_karg_t *x,
                                                                          uint32_t n,
                                                                          uint32_t val4) {
  if (n && DQ_UNLIKELY(x == NULL)) return false;
  _Pragma("GCC unroll 4") for (uint32_t a = 0; a < n; a++) {
    if (val4 >> a & 1) {
      uint64_t key;
      memcpy(&key, &x[a], 8);
      if (DQ_UNLIKELY(key != c->sig_key[a]) || DQ_UNLIKELY(x[a].bytes == NULL)) return false;
    } else {
      uint32_t tag;
      memcpy(&tag, &x[a], 4);
      if (DQ_UNLIKELY(tag != HSAD_KARG_POINTER)) return false; /* type 0 */
    }
  }
  uint32_t off = 0;
  _Pragma("GCC unroll 4") for (uint32_t a = 0; a < n; a++) {
    if (val4 >> a & 1) {
      off = (off + 3) & ~3u;
      memcpy(c->built.image + off, x[a].bytes, 4);
      off += 4;
    } else {
      off = (off + 7) & ~7u;
      memcpy(c->built.image + off, &x[a].pointer, 8);
      off += 8;
    }
  }
  return true;
}

#define DQ_SIG_CASE_(n, m) \
  case DQ_SIG_INDEX(n, m) + 1: return dq_launch_cache_put_sig(c, x, n, m) ? 1 : 0;
#define DQ_SIG_CASES2_(n, m) DQ_SIG_CASE_(n, m) DQ_SIG_CASE_(n, (m) + 1)
#define DQ_SIG_CASES4_(n, m) DQ_SIG_CASES2_(n, m) DQ_SIG_CASES2_(n, (m) + 2)
#define DQ_SIG_CASES8_(n, m) DQ_SIG_CASES4_(n, m) DQ_SIG_CASES4_(n, (m) + 4)

/* dq_launch_cache_put_sig for the entry's signature (c->sig 1..31: one case each): 1 the
 * values written, 0 an argument differs (nothing written); -1 a value-keyed entry (sig 0). */
static inline __attribute__((always_inline)) int dq_launch_cache_put_by_sig(dq_launch_cache_t *c,
                                                                            const hsad_karg_t *x) {
  switch (c->sig & 31) { /* masked: a table of 32 without a bounds check */
  case 0: return -1;
  DQ_SIG_CASE_(0, 0)
  DQ_SIG_CASES2_(1, 0)
  DQ_SIG_CASES4_(2, 0)
  DQ_SIG_CASES8_(3, 0)
  DQ_SIG_CASES8_(4, 0)
  DQ_SIG_CASES8_(4, 8)
  }
  return -1; /* not reached */
}

/* Whether the launch's arguments are the entry's (its kernel, queue, count and geometry
 * matched): a value-keyed entry compares them; a signature entry checks their signature and
 * writes their values into the image. */
static inline __attribute__((always_inline)) bool dq_launch_cache_args_hit(dq_launch_cache_t *c,
                                                                           const hsad_launch_t *l,
                                                                           uint32_t count) {
  int put = dq_launch_cache_put_by_sig(c, l->args);
  return put < 0 ? dq_launch_cache_args_same(c, l, count) : put;
}

/* The thread's build of (q, k, l) when its entry holds that launch, else NULL. */
static inline const dq_built_t *dq_launch_cache_lookup(const hsad_queue_t *q,
                                                       const hsad_device_kernel_t *k,
                                                       const hsad_launch_t *l) {
  dq_launch_cache_t *c = dq_launch_cache_mine;
  if (!dq_launch_cache_same(c, q, k, l) ||
      !dq_launch_cache_args_hit(c, l, c->arg_count))
    return NULL;
  return &c->built;
}

/* A miss: checks and builds (q, k, l) into the thread's entry (dq_launch_check) and, when every
 * value fits, enters its key. *out_built: the build (valid until this thread's next launch).
 * Errors as hsad_kernel_dispatch documents; HSAD_ERR_OUT_OF_MEMORY when the thread's entry
 * cannot be allocated. Cold. */
hsad_status_t dq_launch_cache_fill(const hsad_queue_t *q, const hsad_device_kernel_t *k,
                                   const hsad_launch_t *l, const dq_built_t **out_built);

#pragma GCC visibility pop

#endif
