/* launch_cache.h - the calling thread's cache of its last checked launch (hsad_queue.h step 2;
 * internal; launch_cache.c).
 *
 * A launch with the same queue, kernel, geometry and argument values as the thread's last
 * successful one reuses its checked packet body and kernarg image (one copy of the image into
 * the slot's block) instead of checking the geometry and building every hidden argument again.
 * Keys are unique ids, never pointers, so a freed and reallocated queue or kernel cannot alias
 * an old entry; only successful launches are entered, so a hit needs no check.
 *
 * Ownership: one entry per thread, allocated on the thread's first miss (64-byte aligned) and
 * freed when the thread exits (a pthread key's destructor). The thread-local pointer is
 * initial-exec: a hit reads it with one %fs-relative load, without __tls_get_addr (the entry
 * itself, ~9 KiB, is not static TLS, so a dlopen of libhsad.so still finds room for it).
 * Thread safety: each thread reads and writes its own entry only.
 */
#ifndef HSAD_LAUNCH_CACHE_H
#define HSAD_LAUNCH_CACHE_H

#include <string.h>

#include "hsa-dispatch/dispatch_internal.h"

#pragma GCC visibility push(hidden) /* library-internal (dispatch_internal.h) */

#define DQ_LAUNCH_CACHE_ARGS 16  /* launches with more explicit arguments are not entered */
#define DQ_LAUNCH_CACHE_VALUE 16 /* nor those with a by-value argument above 16 bytes */

_Static_assert(offsetof(hsad_karg_t, type) == 2 && offsetof(hsad_karg_t, size) == 4 &&
                   offsetof(hsad_karg_t, pointer) == 8 && offsetof(hsad_karg_t, scalar) == 8 &&
                   sizeof(hsad_karg_t) == 16,
               "hsad_karg_t: tag and type (one word), size, then the 8-byte value");
_Static_assert((HSAD_KARG_POINTER & 1) && (HSAD_KARG_SCALAR & 1) && !(HSAD_KARG_BYTES & 1) &&
                   !(HSAD_KARG_LDS & 1), "the launch cache tells inline values by the odd tags");
_Static_assert(offsetof(hsad_launch_t, grid) == 4 && offsetof(hsad_launch_t, block) == 16,
               "launch geometry is 7 consecutive uint32_t");

typedef struct dq_launch_cache {
  uint64_t queue_uid, kernel_uid; /* kernel_uid 0: no entry (uids start at 1) */
  uint32_t geometry[7];           /* hsad_launch_t dims, grid[3], block[3] as given */
  uint32_t arg_count;
  hsad_karg_t args[DQ_LAUNCH_CACHE_ARGS]; /* as given; BYTES: `bytes` is not compared */
  uint64_t words[DQ_LAUNCH_CACHE_ARGS];   /* BYTES of 4 or 8 bytes: the value */
  uint8_t values[DQ_LAUNCH_CACHE_ARGS][DQ_LAUNCH_CACHE_VALUE]; /* other BYTES: the value */
  dq_built_t built;               /* checked body and kernarg image */
} dq_launch_cache_t;

/* This thread's entry, NULL before its first miss. */
extern __thread dq_launch_cache_t *dq_launch_cache_mine __attribute__((tls_model("initial-exec")));

/* Argument i of a launch against the entry's: tag and type as one word (a typed value is
 * never taken for an untyped one, nor the reverse: the check of its type ran on the miss),
 * then the value; POINTER and SCALAR (odd tags) hold it in the 8 bytes of the union. */
static inline bool dq_launch_cache_arg_same(const dq_launch_cache_t *c, uint32_t i,
                                            const hsad_karg_t *arg) {
  const hsad_karg_t *have = &c->args[i];
  uint32_t tag_type, have_tag_type;
  memcpy(&tag_type, arg, 4);
  memcpy(&have_tag_type, have, 4);
  if (tag_type != have_tag_type) return false;
  if (DQ_LIKELY(tag_type & 1)) return arg->pointer == have->pointer;
  if ((uint16_t)tag_type != HSAD_KARG_BYTES) return arg->lds_bytes == have->lds_bytes;
  if (arg->size != have->size || !arg->bytes) return false;
  if (arg->size == 4) {
    uint32_t value;
    memcpy(&value, arg->bytes, 4);
    return value == c->words[i];
  }
  if (arg->size == 8) {
    uint64_t value;
    memcpy(&value, arg->bytes, 8);
    return value == c->words[i];
  }
  return !memcmp(arg->bytes, c->values[i], arg->size);
}

/* The thread's build of (q, k, l) when its entry holds that launch, else NULL. */
static inline const dq_built_t *dq_launch_cache_lookup(const hsad_queue_t *q,
                                                       const hsad_device_kernel_t *k,
                                                       const hsad_launch_t *l) {
  const dq_launch_cache_t *c = dq_launch_cache_mine;
  if (DQ_UNLIKELY(c == NULL)) return NULL;
  uint64_t given[3], have[3];
  uint32_t given_z, have_z;
  memcpy(given, &l->dims, 24);
  memcpy(&given_z, &l->block[2], 4);
  memcpy(have, c->geometry, 24);
  memcpy(&have_z, &c->geometry[6], 4);
  if ((c->kernel_uid != k->uid) | (c->queue_uid != q->uid) | (c->arg_count != l->arg_count) |
      (((given[0] ^ have[0]) | (given[1] ^ have[1]) | (given[2] ^ have[2]) | (given_z ^ have_z)) != 0))
    return NULL;
  for (uint32_t i = 0; i < l->arg_count; i++)
    if (!dq_launch_cache_arg_same(c, i, &l->args[i])) return NULL;
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
