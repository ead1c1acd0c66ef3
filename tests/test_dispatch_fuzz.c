/* test_dispatch_fuzz.c - a differential, randomized test of hsad_kernel_dispatch's launch
 * cache (hsad_queue.h, "The argument path"; hsa-dispatch/launch_cache.h): seeded sequences of
 * dispatches over kernels of several signatures (POINTERs and 4-byte values: signature
 * entries; f32 first; 8-byte values, LDS, more than 4 arguments, a 1 KiB struct: value-keyed
 * or not entered), two queues (one whose kernarg blocks are smaller than the v5 segments:
 * padding, the general path), varying geometry, flags, argument spellings (POINTER,
 * HSAD_KARG_VAL of a pointer, typed and untyped BYTES, SCALAR, LDS) and values, with wrong
 * arguments and geometries mixed in, monitoring toggled on a queue, captures, completions.
 * Every dispatch is compared with a model that shares no code with the cache: the kernarg
 * segment from hsad_kernarg_build (codeobj/) with the queue's hidden values, the packet's 64
 * bytes by the AQL rules (hsad_queue.h steps 4-6), the slots it took (write index); a refused
 * launch must report hsad_kernarg_build's code and message (arguments) or, for the geometry
 * and the LDS limit, those of the same launch on a monitored queue (always the general path),
 * and must reserve no slot. Each queue starts a round closed by a gate (a barrier-AND on a
 * signal), so the CP launches nothing while packets are read; then the gate opens and the
 * kernels run (every pointer is a real buffer, every count within it). Kernels run as their
 * twins (KFD_EMU_KERNEL_MODE=twin, set before the runtime opens): the bytes are the point. */
#include "tests/test_dispatch_util.h"
#include "tests/test_dispatch_exact.h"
#include "fusion/hsad_fusion.h"

#include <pthread.h>
#include <stdlib.h>

/* ---- the seeded generator (splitmix64) ---- */
typedef struct fz_rng {
  uint64_t s;
} fz_rng_t;
static uint64_t fz_next(fz_rng_t *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static uint32_t fz_below(fz_rng_t *r, uint32_t n) { return (uint32_t)(fz_next(r) % n); }
static bool fz_chance(fz_rng_t *r, uint32_t percent) { return fz_below(r, 100) < percent; }

/* ---- kernels: each explicit parameter's kind ---- */
enum { FZ_P = 'P', FZ_U = 'U', FZ_F = 'F', FZ_Q = 'Q', FZ_L = 'L', FZ_B = 'B' };
typedef struct fz_kernel {
  const char *file, *name;
  int ver;
  const char *params; /* one letter per explicit argument; NULL: any spelling (fz_any_values) */
  hsad_program_t *p;
  const hsad_device_kernel_t *k;
} fz_kernel_t;

#define FZ_KERNELS 10
static const fz_kernel_t fz_kernel_table[FZ_KERNELS] = {
    {"vector_add", "vector_add", 5, "PPPU", NULL, NULL},
    {"vector_add", "vector_add", 4, "PPPU", NULL, NULL},
    {"saxpy", "saxpy", 5, "FPPU", NULL, NULL},
    {"fill", "fill", 4, "PUU", NULL, NULL},
    {"fill", "fill", 5, "PUU", NULL, NULL},
    {"count_dispatch", "count_dispatch", 5, "PU", NULL, NULL},
    {"lds_reduce", "lds_reduce_dyn", 5, "PPUL", NULL, NULL},
    {"big_args", "args8", 5, "PQQQQQQQQ", NULL, NULL},
    {"empty", "empty", 5, "", NULL, NULL},
    {"big_args", "struct_1k", 5, "PBU", NULL, NULL},
};

#define FZ_BUFS 6
#define FZ_BUF_BYTES (64u * 1024u)
#define FZ_MAX_ARGS 12

/* One launch and the storage its arguments point at (alive until the dispatch returned). */
typedef struct fz_launch {
  uint32_t kernel;
  hsad_launch_t l;
  hsad_karg_t a[FZ_MAX_ARGS];
  uint64_t store[FZ_MAX_ARGS][2];
  float *ptrs[FZ_MAX_ARGS];
  uint8_t blob[1024];
  bool want_completion;
  bool prepare;      /* hsad_launch_prepare first (it replaces the thread's entry too) */
  bool null_id;      /* out_packet_id NULL */
  bool batch;        /* a batch of the same launch twice first (it does not touch the cache) */
  bool bad_geometry; /* made invalid on purpose: the monitored queue's refusal is the model */
} fz_launch_t;

/* One queue of the test and what the model knows of it. */
typedef struct fz_queue {
  hsad_queue_t *q;
  uint32_t size, block;
  uint64_t ka_base; /* kernarg address of slot 0, once seen (0: not yet) */
  hsa_signal_t gate;
  bool monitored, profiling;
} fz_queue_t;

/* Counts by the model's idea of the path (for the report) and by outcome. */
typedef struct fz_counts {
  uint32_t dispatches, sig_hits, keyed_hits, misses, general, refused, captured;
  uint32_t refused_by[32];
} fz_counts_t;

/* The model's idea of the calling thread's cache entry: the last successful launch. */
typedef struct fz_entry {
  bool valid;
  const hsad_queue_t *q;
  uint64_t qgen, kgen;
  const hsad_device_kernel_t *k;
  uint8_t geometry[28];
  uint32_t count;
  bool sig;
  hsad_karg_t args[FZ_MAX_ARGS];
  uint64_t values[FZ_MAX_ARGS][2];
} fz_entry_t;

typedef struct fz_ctx {
  th_env_t e;
  fz_kernel_t kern[16];
  uint32_t nk;
  float *bufs[FZ_BUFS];
  fz_queue_t fq[3]; /* 128 x 512 bytes; 64 x 256 (v5 segments span 2 blocks); profiling */
  hsad_queue_t *ref; /* monitored: refusals' reference */
  uint64_t deadline_ns; /* the dispatches' (relative) */
  uint32_t timeouts;
  bool shared; /* other threads dispatch on the queues too: no write-index bookkeeping */
  fz_counts_t n;
} fz_ctx_t;

static uint64_t fz_wi(const hsad_queue_t *q) {
  const amd_queue_t *a = (const amd_queue_t *)hsad_queue_hsa(q);
  return __atomic_load_n(&a->write_dispatch_id, __ATOMIC_ACQUIRE);
}

/* ---- argument spellings ---- */
static void fz_ptr_arg(fz_rng_t *r, fz_ctx_t *c, fz_launch_t *x, uint32_t i) {
  float *p = (float *)((uint8_t *)c->bufs[fz_below(r, FZ_BUFS)] + 16 * fz_below(r, 512));
  x->ptrs[i] = p;
  switch (fz_below(r, 4)) {
  case 0: x->a[i] = HSAD_KARG_PTR(p); break;
  case 1: x->a[i] = HSAD_KARG_VAL(x->ptrs[i]); break;
  case 2: x->a[i] = (hsad_karg_t){.tag = HSAD_KARG_POINTER, .size = 4, .pointer = (uintptr_t)p}; break;
  default: x->a[i] = (hsad_karg_t){.tag = HSAD_KARG_POINTER, .size = 0, .pointer = (uintptr_t)p};
  }
}

/* A 4-byte (U, F) or 8-byte (Q) value as typed bytes, untyped bytes or a SCALAR. */
static void fz_val_arg(fz_rng_t *r, fz_launch_t *x, uint32_t i, char kind, uint64_t v) {
  uint32_t size = kind == FZ_Q ? 8 : 4;
  x->store[i][0] = v;
  x->store[i][1] = 0;
  uint16_t typed = kind == FZ_F   ? HSAD_KARG_TYPE_F32
                   : kind == FZ_Q ? (fz_chance(r, 50) ? HSAD_KARG_TYPE_U64 : HSAD_KARG_TYPE_I64)
                                  : (fz_chance(r, 50) ? HSAD_KARG_TYPE_U32 : HSAD_KARG_TYPE_I32);
  switch (fz_below(r, 5)) {
  case 0:
  case 1: x->a[i] = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .type = typed, .size = size, .bytes = x->store[i]}; break;
  case 2: x->a[i] = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .size = size, .bytes = x->store[i]}; break;
  default: x->a[i] = (hsad_karg_t){.tag = HSAD_KARG_SCALAR, .type = typed, .size = size, .scalar = v};
  }
}

/* ---- any spelling, for kernels that never run (fz_odd_table: no twin, no source, completed
 * unexecuted by KFD_EMU_NO_TWIN=noop): mostly the spelling the parameter's kind takes, else
 * any tag, type, size and bytes; the model decides what is accepted ---- */
static void fz_fill_store(fz_rng_t *r, fz_launch_t *x, uint32_t i) {
  x->store[i][0] = fz_next(r);
  x->store[i][1] = fz_next(r);
}

static uint32_t fz_lds(fz_rng_t *r) { return fz_chance(r, 3) ? 70000 : 4 * fz_below(r, 1024); }

static uint64_t fz_pointer(fz_rng_t *r, uint32_t slot_size) {
  uint64_t v = fz_next(r) & ~7ull;
  return slot_size == 4 && fz_chance(r, 90) ? (uint32_t)v : v;
}

static void fz_any_values(fz_rng_t *r, const hsad_device_kernel_t *k, fz_launch_t *x, bool keep) {
  const hsad_kernarg_plan_t *plan = hsad_kernel_kernarg_plan(hsad_device_kernel_desc(k)->codeobj_kernel);
  static const uint16_t types_of[9][3] = {
      [1] = {HSAD_KARG_TYPE_I8, HSAD_KARG_TYPE_U8, HSAD_KARG_TYPE_U8},
      [2] = {HSAD_KARG_TYPE_I16, HSAD_KARG_TYPE_U16, HSAD_KARG_TYPE_I16},
      [4] = {HSAD_KARG_TYPE_I32, HSAD_KARG_TYPE_U32, HSAD_KARG_TYPE_F32},
      [8] = {HSAD_KARG_TYPE_I64, HSAD_KARG_TYPE_U64, HSAD_KARG_TYPE_F64}};
  uint32_t n = plan->explicit_count;
  for (uint32_t i = 0; i < n && i < FZ_MAX_ARGS; i++) {
    const hsad_kernarg_slot_t *slot = &plan->explicit_args[i];
    hsad_karg_t *a = &x->a[i];
    if (keep) { /* the same spelling, new values */
      if (a->tag == HSAD_KARG_POINTER) a->pointer = fz_pointer(r, slot->size);
      else if (a->tag == HSAD_KARG_SCALAR) a->scalar = a->size < 8 ? fz_next(r) & ((1ull << (8 * (a->size & 7))) - 1) : fz_next(r);
      else if (a->tag == HSAD_KARG_LDS) a->lds_bytes = fz_lds(r);
      else if (a->tag == HSAD_KARG_BYTES && a->bytes) fz_fill_store(r, x, i);
      continue;
    }
    fz_fill_store(r, x, i);
    if (fz_chance(r, 92)) {
      if (slot->kind == HSAD_VK_DYNAMIC_SHARED_POINTER) {
        *a = HSAD_KARG_LDS_BYTES(fz_lds(r));
      } else if (slot->kind != HSAD_VK_BY_VALUE) {
        *a = (hsad_karg_t){.tag = HSAD_KARG_POINTER, .size = fz_below(r, 3) * 4, .pointer = fz_pointer(r, slot->size)};
      } else {
        uint32_t sz = slot->size;
        uint16_t type = sz <= 8 && types_of[sz][0] ? types_of[sz][fz_below(r, 3)] : 0;
        uint32_t how = fz_below(r, 3);
        if (how == 0 || !type)
          *a = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .size = sz, .bytes = x->store[i]};
        else if (how == 1)
          *a = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .type = type, .size = sz, .bytes = x->store[i]};
        else
          *a = (hsad_karg_t){.tag = HSAD_KARG_SCALAR, .type = type, .size = sz, .scalar = x->store[i][0] & (sz < 8 ? (1ull << (8 * sz)) - 1 : ~0ull)};
      }
    } else {
      static const uint32_t sizes[] = {0, 1, 2, 4, 8, 16};
      *a = (hsad_karg_t){.tag = (uint16_t)fz_below(r, 5), .type = (uint16_t)fz_below(r, 12),
                         .size = fz_chance(r, 50) ? slot->size : sizes[fz_below(r, 6)],
                         .pointer = fz_next(r)};
      if (a->tag == HSAD_KARG_BYTES) a->bytes = fz_chance(r, 10) ? NULL : x->store[i];
    }
  }
  x->l.args = x->a;
  x->l.arg_count = n;
}

/* New values (pointers and numbers) for every argument of launch x, keeping its spelling when
 * `keep` (the same signature: a signature entry's hit). */
static void fz_values(fz_rng_t *r, fz_ctx_t *c, fz_launch_t *x, bool keep) {
  const fz_kernel_t *kk = &c->kern[x->kernel];
  if (!kk->params) {
    fz_any_values(r, kk->k, x, keep);
    return;
  }
  uint32_t n = (uint32_t)strlen(kk->params);
  uint32_t block0 = x->l.block[0] ? x->l.block[0] : 1;
  for (uint32_t i = 0; i < n; i++) {
    char kind = kk->params[i];
    if (kind == FZ_P) {
      if (!keep) {
        fz_ptr_arg(r, c, x, i);
      } else {
        float *p = (float *)((uint8_t *)c->bufs[fz_below(r, FZ_BUFS)] + 16 * fz_below(r, 512));
        x->ptrs[i] = p;
        x->a[i].pointer = (uintptr_t)p;
      }
    } else if (kind == FZ_U || kind == FZ_F || kind == FZ_Q) {
      uint64_t v = fz_chance(r, 50) ? fz_below(r, 4097) : (fz_next(r) & (kind == FZ_Q ? ~0ull : 0x7fffffffull));
      if (kind == FZ_F) {
        float f = (float)(int32_t)fz_below(r, 2001) / 8.0f - 100.0f;
        uint32_t w;
        memcpy(&w, &f, 4);
        v = w;
      }
      if (!keep || x->a[i].tag == HSAD_KARG_SCALAR || x->a[i].bytes == NULL) {
        if (keep && x->a[i].tag == HSAD_KARG_SCALAR) {
          x->a[i].scalar = v;
          x->store[i][0] = v;
        } else {
          fz_val_arg(r, x, i, kind, v);
        }
      } else {
        x->store[i][0] = v;
        x->a[i].bytes = x->store[i];
      }
    } else if (kind == FZ_L) {
      x->a[i] = HSAD_KARG_LDS_BYTES(block0 * 4 + 4 * fz_below(r, 16));
    } else { /* FZ_B: a 1 KiB struct */
      for (uint32_t j = 0; j < sizeof x->blob; j++) x->blob[j] = (uint8_t)fz_next(r);
      x->a[i] = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .size = 1024, .bytes = x->blob};
    }
  }
  x->l.args = x->a;
  x->l.arg_count = n;
}

/* A wrong argument (or count) in launch x: refused, or accepted where the rule accepts it. */
static void fz_mutate(fz_rng_t *r, fz_launch_t *x) {
  uint32_t n = x->l.arg_count;
  uint32_t what = fz_below(r, 14);
  if (what == 0 || n == 0) {
    x->l.arg_count = n + 1 - 2 * (n && fz_chance(r, 50)); /* one more or one fewer */
    return;
  }
  if (what == 1) {
    x->l.args = NULL;
    return;
  }
  uint32_t i = fz_below(r, n);
  hsad_karg_t *a = &x->a[i];
  static uint64_t eight = 7;
  switch (what) {
  case 2: *a = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .type = HSAD_KARG_TYPE_F32, .size = 4, .bytes = x->store[i]}; break;
  case 3: *a = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .type = HSAD_KARG_TYPE_I32, .size = 4, .bytes = x->store[i]}; break;
  case 4: *a = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .size = 8, .bytes = &eight}; break;
  case 5: *a = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .type = a->tag == HSAD_KARG_BYTES ? a->type : 0, .size = 4, .bytes = NULL}; break;
  case 6: *a = HSAD_KARG_LDS_BYTES(4096); break; /* enough for lds_reduce_dyn where it is accepted */
  case 7: *a = (hsad_karg_t){.tag = HSAD_KARG_POINTER, .size = 8, .pointer = (uintptr_t)x->ptrs[i]}; break;
  case 8: *a = (hsad_karg_t){.tag = HSAD_KARG_SCALAR, .size = 4, .scalar = 1}; break;
  case 9: *a = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .type = HSAD_KARG_TYPE_U8, .size = 4, .bytes = x->store[i]}; break;
  case 10: *a = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .type = 99, .size = 4, .bytes = x->store[i]}; break;
  case 11: a->tag = 9; break;
  case 12: a->type = a->tag == HSAD_KARG_POINTER ? 5 : a->type; a->tag = a->tag == HSAD_KARG_LDS ? HSAD_KARG_LDS : a->tag; if (a->tag == HSAD_KARG_LDS) a->lds_bytes = 1u << 20; break;
  default: *a = (hsad_karg_t){.tag = HSAD_KARG_BYTES, .type = HSAD_KARG_TYPE_F64, .size = 8, .bytes = &eight};
  }
}

/* A valid geometry (only dimension 0 indexes the buffers: at most 2048 work-items; rows1: 1-D
 * workgroups, lds_reduce_dyn's twin's shape) or, with bad, one that the check refuses. */
static void fz_geometry(fz_rng_t *r, fz_launch_t *x, bool bad, bool rows1) {
  static const uint32_t blocks[] = {1, 2, 16, 32, 64, 64, 128, 256};
  hsad_launch_t *l = &x->l;
  l->dims = 1 + fz_below(r, 3);
  memset(l->grid, 0, sizeof l->grid);
  memset(l->block, 0, sizeof l->block);
  l->block[0] = blocks[fz_below(r, 8)];
  l->grid[0] = 1 + fz_below(r, 2048);
  for (uint32_t d = 1; d < 3; d++) {
    if (d < l->dims) {
      l->grid[d] = 1 + fz_below(r, 3);
      l->block[d] = l->block[0] <= 64 && !rows1 ? 1 + fz_below(r, 2) : 1;
    } else if (fz_chance(r, 50)) {
      l->grid[d] = 1;
      l->block[d] = 1;
    }
  }
  if (!rows1 && fz_chance(r, 15)) { /* 64 x 2 work-item workgroups (fixed_lds's .reqd_workgroup_size) */
    l->dims = 2;
    l->block[0] = 64;
    l->block[1] = 2;
    l->block[2] = 1;
    l->grid[0] = 64 * (1 + fz_below(r, 8));
    l->grid[1] = 2 * (1 + fz_below(r, 2));
    l->grid[2] = fz_chance(r, 50) ? 1 : 0;
  }
  x->bad_geometry = bad;
  if (!bad) return;
  switch (fz_below(r, 7)) {
  case 6: /* 2^33 work-items in all, each dimension within its limit */
    l->dims = 3;
    l->grid[0] = 1u << 16;
    l->grid[1] = 1u << 16;
    l->grid[2] = 2;
    l->block[1] = l->block[2] = 1;
    break;
  case 0: l->block[0] = 0; break;
  case 1: l->grid[0] = 0; break;
  case 2: l->dims = fz_chance(r, 50) ? 0 : 4; break;
  case 3: l->block[0] = 1024; l->block[1] = 2; l->dims = l->dims < 2 ? 2 : l->dims; l->grid[1] = 2; break;
  case 4: l->dims = 1; l->grid[1] = 2; break;
  default: l->block[0] = 2048;
  }
}

/* One field of a valid geometry changed (the key's second half: block sizes, an unused
 * dimension written 0 or 1), keeping it valid where it was. */
static void fz_geometry_tweak(fz_rng_t *r, fz_launch_t *x, bool rows1) {
  static const uint32_t blocks[] = {1, 2, 16, 32, 64, 128, 256};
  hsad_launch_t *l = &x->l;
  uint32_t flat_rest = (l->dims > 1 ? l->block[1] : 1) * (l->dims > 2 ? l->block[2] : 1);
  switch (fz_below(r, 4)) {
  case 0: /* block[0] */
    l->block[0] = blocks[fz_below(r, flat_rest > 1 ? 5 : 7)];
    break;
  case 1: /* block[1] of a 2-D or 3-D launch */
    if (l->dims > 1 && !rows1 && l->block[0] <= 64) l->block[1] = l->block[1] == 2 ? 1 : 2;
    break;
  case 2: /* an unused dimension as 0 or as 1 */
    for (uint32_t d = l->dims; d < 3; d++)
      if (fz_chance(r, 50)) {
        l->grid[d] = l->grid[d] ? 0 : 1;
        l->block[d] = l->grid[d];
      }
    break;
  default: /* the last grid size */
    l->grid[l->dims - 1] = l->grid[l->dims - 1] > 1 ? l->grid[l->dims - 1] - 1 : 2;
  }
}

/* New values for one argument of x only (`tmp`: scratch space). */
static void fz_one_value(fz_rng_t *r, fz_ctx_t *c, fz_launch_t *x, fz_launch_t *tmp) {
  *tmp = *x;
  fz_values(r, c, x, true);
  if (!x->l.arg_count) return;
  uint32_t j = fz_below(r, x->l.arg_count);
  for (uint32_t i = 0; i < x->l.arg_count && i < FZ_MAX_ARGS; i++) {
    if (i == j) continue;
    x->a[i] = tmp->a[i];
    memcpy(x->store[i], tmp->store[i], sizeof x->store[i]);
    x->ptrs[i] = tmp->ptrs[i];
    if (x->a[i].tag == HSAD_KARG_BYTES && x->a[i].size > 16) memcpy(x->blob, tmp->blob, sizeof x->blob);
  }
}

/* ---- the model ---- */
static uint32_t fz_copy_bytes(const hsad_kernarg_plan_t *plan, uint32_t segment) {
  uint32_t end = 0;
  for (uint32_t i = 0; i < plan->explicit_count; i++)
    if (plan->explicit_args[i].offset + plan->explicit_args[i].size > end)
      end = plan->explicit_args[i].offset + plan->explicit_args[i].size;
  for (uint32_t i = 0; i < plan->hidden_count; i++)
    if (plan->hidden_args[i].offset + plan->hidden_args[i].size > end)
      end = plan->hidden_args[i].offset + plan->hidden_args[i].size;
  end = (end + 15) & ~15u;
  uint32_t all = (segment + 15) & ~15u;
  return end < all ? end : all;
}

/* Whether the launch (checked fine) is a signature entry by the rule (hsad_queue.h). */
static bool fz_sig_shape(const hsad_kernarg_plan_t *plan, const hsad_launch_t *l) {
  if (l->arg_count > 4) return false;
  uint32_t off = 0;
  for (uint32_t i = 0; i < l->arg_count; i++) {
    const hsad_karg_t *a = &l->args[i];
    uint32_t size;
    if (a->tag == HSAD_KARG_POINTER && a->type == 0 && plan->explicit_args[i].size == 8) size = 8;
    else if (a->tag == HSAD_KARG_BYTES && a->size == 4 && plan->explicit_args[i].size == 4) size = 4;
    else return false;
    off = (off + size - 1) & ~(size - 1);
    if (plan->explicit_args[i].offset != off) return false;
    off += size;
  }
  return true;
}

/* The model's path of a successful launch (the report's counts) and the entry it leaves. */
static void fz_count_path(fz_ctx_t *c, fz_entry_t *m, const fz_queue_t *fq, uint64_t qgen,
                          uint64_t kgen, const fz_launch_t *x, uint32_t span) {
  const hsad_launch_t *l = &x->l;
  const hsad_device_kernel_t *k = c->kern[x->kernel].k;
  const hsad_kernarg_plan_t *plan = hsad_kernel_kernarg_plan(hsad_device_kernel_desc(k)->codeobj_kernel);
  bool same = m->valid && m->q == fq->q && m->qgen == qgen && m->kgen == kgen && m->k == k &&
              m->count == l->arg_count && !memcmp(m->geometry, l, 28);
  bool sig = span == 1 && fz_sig_shape(plan, l);
  bool args_same = same;
  for (uint32_t i = 0; same && i < l->arg_count; i++) {
    const hsad_karg_t *a = &l->args[i], *b = &m->args[i];
    if (a->tag != b->tag || a->type != b->type) args_same = false;
    else if (a->tag == HSAD_KARG_BYTES && a->size != b->size) args_same = false;
    else if (!m->sig && a->tag == HSAD_KARG_POINTER && a->pointer != b->pointer) args_same = false;
    else if (!m->sig && a->tag == HSAD_KARG_SCALAR && (a->size != b->size || a->scalar != b->scalar)) args_same = false;
    else if (!m->sig && a->tag == HSAD_KARG_LDS && a->lds_bytes != b->lds_bytes) args_same = false;
    else if (!m->sig && a->tag == HSAD_KARG_BYTES && a->size <= 16 &&
             memcmp(a->bytes, m->values[i], a->size)) args_same = false;
    else if (a->tag == HSAD_KARG_BYTES && a->size > 16) args_same = false;
  }
  if (fq->monitored || x->want_completion || span > 1) c->n.general++;
  else if (same && args_same && m->sig) c->n.sig_hits++;
  else if (same && args_same) c->n.keyed_hits++;
  else c->n.misses++;
  m->valid = l->arg_count <= 16;
  m->q = fq->q;
  m->qgen = qgen;
  m->kgen = kgen;
  m->k = k;
  m->count = l->arg_count;
  memcpy(m->geometry, l, 28);
  m->sig = sig;
  for (uint32_t i = 0; i < l->arg_count && i < FZ_MAX_ARGS; i++) {
    m->args[i] = l->args[i];
    memset(m->values[i], 0, 16);
    if (l->args[i].tag == HSAD_KARG_BYTES && l->args[i].size <= 16)
      memcpy(m->values[i], l->args[i].bytes, l->args[i].size);
  }
}

/* The packet's private segment: the fixed size, or the queue's dynamic_stack_size (16384 by
 * default) for a kernel with a dynamic stack. */
static uint32_t fz_private(const hsad_device_kernel_desc_t *kd) {
  uint32_t priv = kd->private_segment_fixed_size;
  return kd->uses_dynamic_stack && priv < 16384 ? 16384 : priv;
}

/* Whether the launch's geometry passes hsad_queue.h's GRID and WORKGROUP checks (else the
 * monitored queue's refusal is the model). */
static bool fz_geometry_ok(const hsad_device_info_t *di, const hsad_device_kernel_desc_t *kd,
                           const hsad_launch_t *l) {
  if (l->dims < 1 || l->dims > 3) return false;
  uint32_t flat = 1;
  uint64_t items = 1; /* at most 2^32 x 2^32: the product of two fits; checked after each */
  for (uint32_t d = 0; d < 3; d++) {
    uint32_t g = l->grid[d], b = l->block[d];
    if (d >= l->dims) {
      if (g > 1 || b > 1) return false;
      g = b = 1;
    }
    if (!g || !b || b > di->max_workgroup_dim[d]) return false;
    if (di->max_grid_dim[d] && g > di->max_grid_dim[d]) return false;
    items *= g;
    if (kd->reqd_workgroup_size[0] && b != kd->reqd_workgroup_size[d]) return false;
    flat *= b;
    if (items > UINT32_MAX) return false; /* HSA_AGENT_INFO_GRID_MAX_SIZE: ROCr's UINT32_MAX */
  }
  uint32_t max_flat = kd->max_flat_workgroup_size;
  if (di->max_workgroup_size && di->max_workgroup_size < max_flat) max_flat = di->max_workgroup_size;
  return flat <= max_flat;
}

/* Dispatches launch x on fq and compares everything with the model. */
static int fz_dispatch(fz_ctx_t *c, fz_entry_t *m, fz_queue_t *fq, uint64_t qgen, uint64_t kgen,
                        fz_launch_t *x, uint32_t step, bool capturing) {
  const hsad_device_kernel_t *k = c->kern[x->kernel].k;
  const hsad_device_kernel_desc_t *kd = hsad_device_kernel_desc(k);
  const hsad_launch_t *l = &x->l;
  hsad_queue_t *q = fq->q;
  c->n.dispatches++;
  /* the model: kernarg bytes and group segment, or the refusal */
  const amd_queue_t *aq = (const amd_queue_t *)hsad_queue_hsa(q);
  hsad_kernarg_runtime_t rt = {.queue_ptr = (uint64_t)(uintptr_t)aq,
                               .private_base = aq->private_segment_aperture_base_hi,
                               .shared_base = aq->group_segment_aperture_base_hi};
  static _Thread_local _Alignas(64) uint8_t image[65536];
  memset(image, 0, sizeof image);
  uint32_t group = 0;
  hsad_status_t want = HSAD_OK;
  char want_msg[1024] = "";
  x->bad_geometry = !fz_geometry_ok(hsad_device_info(c->e.dev), kd, l);
  if (!x->bad_geometry) {
    hsad_dispatch_dims_t dd = {.dims = (uint16_t)l->dims};
    for (int d = 0; d < 3; d++) {
      dd.grid_size[d] = (uint32_t)d < l->dims ? l->grid[d] : 1;
      dd.workgroup_size[d] = (uint16_t)((uint32_t)d < l->dims ? l->block[d] : 1);
    }
    group = kd->group_segment_fixed_size;
    want = hsad_kernarg_build(kd->codeobj_kernel, l->args, l->arg_count, &dd, &rt, image,
                              sizeof image, &group);
    if (want) snprintf(want_msg, sizeof want_msg, "%s", hsad_last_error());
    else if (group > hsad_device_info(c->e.dev)->lds_bytes) want = HSAD_ERR_LDS_LIMIT;
    else if ((uint64_t)fz_private(kd) * hsad_device_info(c->e.dev)->wavefront_size > HSAD_MAX_WAVE_SCRATCH)
      want = HSAD_ERR_SCRATCH_LIMIT;
  }
  bool refuse = x->bad_geometry || want != HSAD_OK;
  if (getenv("FZ_TRACE")) {
    fprintf(stderr, "step %u %s q%u dims %u grid %u %u %u block %u %u %u flags %u args %s%u:", step,
            kd->name, (unsigned)(fq - c->fq), l->dims, l->grid[0], l->grid[1], l->grid[2],
            l->block[0], l->block[1], l->block[2], l->flags, l->args ? "" : "NULL ", l->arg_count);
    for (uint32_t i = 0; l->args && i < l->arg_count && i < FZ_MAX_ARGS; i++)
      fprintf(stderr, " {%u %u %u %#llx}", l->args[i].tag, l->args[i].type, l->args[i].size,
              (unsigned long long)l->args[i].pointer);
    fprintf(stderr, " -> want %d\n", want);
  }
  if (x->prepare && !capturing) { /* every check, then the thread's entry holds the launch */
    hsad_prepared_launch_t *pl = NULL;
    hsad_status_t ps = hsad_launch_prepare(q, k, l, &pl);
    if (refuse) {
      cr_assert_neq(ps, HSAD_OK, "step %u: hsad_launch_prepare accepted a launch the model refuses", step);
      if (want_msg[0]) cr_assert_str_eq(hsad_last_error(), want_msg, "step %u: prepare's message", step);
    } else {
      cr_assert_eq(ps, HSAD_OK, "step %u: hsad_launch_prepare: %s", step, hsad_last_error());
      hsad_launch_destroy(pl);
    }
  }
  if (x->batch && !capturing && !refuse) {
    hsad_dispatch_desc_t items[2] = {{k, *l}, {k, *l}};
    uint64_t first = UINT64_MAX, bw = fz_wi(q);
    hsad_status_t bs = hsad_queue_dispatch_batch(q, items, 2, th_in(c->deadline_ns), NULL, &first);
    if (bs == HSAD_ERR_TIMEOUT) return 0; /* a full ring: nothing reserved by the batch */
    cr_assert_eq(bs, HSAD_OK, "step %u: a batch of the launch: %s", step, hsad_last_error());
    if (!c->shared) cr_assert_eq(first, bw, "step %u: batch's first packet", step);
  }
  uint64_t wi0 = fz_wi(q), id = UINT64_MAX;
  hsad_completion_t comp;
  bool null_id = x->null_id && !c->shared;
  hsad_status_t s = hsad_kernel_dispatch(q, k, l, th_in(c->deadline_ns), x->want_completion ? &comp : NULL,
                                         null_id ? NULL : &id);
  uint64_t wi1 = fz_wi(q);
  if (null_id && s == HSAD_OK) id = wi0;
  if (capturing) {
    cr_assert_eq(wi1, wi0, "step %u: a captured dispatch moved the write index", step);
    if (!refuse) cr_assert_eq(s, HSAD_OK, "step %u: captured: %s", step, hsad_last_error());
    c->n.captured++;
    return 1;
  }
  if (s == HSAD_ERR_TIMEOUT && !refuse) { /* a full ring (closed by its gate) */
    /* no dispatch was reserved; the producer may have added the epoch barrier-AND that a ring
     * full of fire-and-forget packets needs for reclaim (hsad_queue.h, "Timeline") */
    cr_assert_leq(wi1 - wi0, 1, "step %u: a timed-out dispatch reserved %llu slots (%s)", step,
                  (unsigned long long)(wi1 - wi0), hsad_last_error());
    for (uint64_t j = wi0; j < wi1; j++) {
      const uint8_t *b = (const uint8_t *)hsad_queue_hsa(q)->base_address + (j % fq->size) * 64;
      cr_assert_eq(b[0], HSA_PACKET_TYPE_BARRIER_AND, "step %u: packet %llu of a timed-out "
                   "dispatch has type %u", step, (unsigned long long)j, b[0]);
    }
    c->timeouts++;
    return 0;
  }
  if (refuse) {
    char got_msg[1024];
    snprintf(got_msg, sizeof got_msg, "%s", s ? hsad_last_error() : "");
    /* the general path's own answer: the same launch on the monitored queue (only now: its
     * miss replaces the thread's entry, which the launch on q must find as it was) */
    uint64_t rwi = fz_wi(c->ref);
    hsad_status_t rs = hsad_kernel_dispatch(c->ref, k, l, th_in(TH_SEC), NULL, NULL);
    cr_assert_neq(rs, HSAD_OK, "step %u: the monitored queue accepted a launch the model refuses", step);
    cr_assert_eq(fz_wi(c->ref), rwi, "step %u: the refused launch reserved slots on the monitored queue", step);
    if (want_msg[0])
      cr_assert_str_eq(hsad_last_error(), want_msg, "step %u: general path's message\n  got  %s\n"
                       "  want %s", step, hsad_last_error(), want_msg);
    else
      snprintf(want_msg, sizeof want_msg, "%s", hsad_last_error());
    if (!want) want = rs;
    cr_assert_eq(rs, want, "step %u: the monitored queue: %s, the model: %s", step,
                 hsad_status_name(rs), hsad_status_name(want));
    cr_assert_eq(s, want, "step %u: kernel %s: got %s (%s), want %s (%s)", step, kd->name,
                 hsad_status_name(s), got_msg, hsad_status_name(want), want_msg);
    cr_assert_str_eq(got_msg, want_msg, "step %u: kernel %s: message", step, kd->name);
    if (!c->shared)
      cr_assert_eq(wi1, wi0, "step %u: a refused launch reserved %llu slots", step,
                   (unsigned long long)(wi1 - wi0));
    c->n.refused++;
    c->n.refused_by[s & 31]++;
    m->valid = false; /* the refusal replaced the thread's entry */
    return -1;
  }
  cr_assert_eq(s, HSAD_OK, "step %u: kernel %s refused: %s %s", step, kd->name,
               hsad_status_name(s), hsad_last_error());
  cr_assert(c->shared ? id >= wi0 && id < wi1 : id == wi0, "step %u: packet id %llu, write "
            "index was %llu", step, (unsigned long long)id, (unsigned long long)wi0);
  uint32_t ks = kd->kernarg_segment_size;
  uint32_t span = ks ? (ks + fq->block - 1) / fq->block : 1;
  bool barrier = !(l->flags & HSAD_LAUNCH_NO_BARRIER);
  bool carries = x->want_completion && span == 1 && barrier && !fq->profiling;
  uint32_t slots = span + (x->want_completion && span == 1 && !carries);
  if (!c->shared)
    cr_assert_eq(wi1 - wi0, slots, "step %u: kernel %s took %llu slots, want %u", step, kd->name,
                 (unsigned long long)(wi1 - wi0), slots);
  fz_count_path(c, m, fq, qgen, kgen, x, span);
  /* the packet */
  const uint8_t *slot = (const uint8_t *)hsad_queue_hsa(q)->base_address + (id % fq->size) * 64;
  uint8_t pk[64];
  memcpy(pk, slot, 64);
  uint32_t scope = (l->flags & HSAD_LAUNCH_FENCE_AGENT) ? HSA_FENCE_SCOPE_AGENT : HSA_FENCE_SCOPE_SYSTEM;
  uint16_t header = (uint16_t)((HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE) |
                               ((barrier ? 1u : 0u) << HSA_PACKET_HEADER_BARRIER) |
                               (scope << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                               (scope << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
  hsa_kernel_dispatch_packet_t w;
  memset(&w, 0, sizeof w);
  w.header = header;
  w.setup = (uint16_t)l->dims;
  for (int d = 0; d < 3; d++) {
    uint32_t g = (uint32_t)d < l->dims ? l->grid[d] : 1, b = (uint32_t)d < l->dims ? l->block[d] : 1;
    (&w.workgroup_size_x)[d] = (uint16_t)b;
    (&w.grid_size_x)[d] = g;
  }
  w.private_segment_size = fz_private(kd);
  w.group_segment_size = group;
  w.kernel_object = kd->kernel_object;
  uint64_t ka = th_get64(pk, 40);
  if (!fq->ka_base) fq->ka_base = ka - (id % fq->size) * fq->block;
  w.kernarg_address = (void *)(uintptr_t)(fq->ka_base + (id % fq->size) * fq->block);
  uint64_t sig = th_get64(pk, 56);
  cr_assert_eq(sig != 0, carries || fq->profiling, "step %u: completion signal %#llx, carries "
               "the epoch: %d, profiling %d", step, (unsigned long long)sig, carries, fq->profiling);
  w.completion_signal.handle = sig;
  const uint8_t *wb = (const uint8_t *)&w;
  for (uint32_t b = 0; b < 64; b++)
    cr_assert_eq(pk[b], wb[b], "step %u: kernel %s (queue block %u, flags %u, dims %u): packet "
                 "byte %u is %#x, want %#x", step, kd->name, fq->block, l->flags, l->dims, b,
                 pk[b], wb[b]);
  /* the kernarg segment: every declared byte (the hot path copies up to the last declared
   * argument rounded up to 16; the rest of the block is unspecified) */
  const hsad_kernarg_plan_t *plan = hsad_kernel_kernarg_plan(kd->codeobj_kernel);
  uint32_t copy = fz_copy_bytes(plan, ks);
  if (copy > ks) copy = ks; /* past the segment: unspecified (the general path copies ks) */
  const uint8_t *kb = (const uint8_t *)(uintptr_t)ka;
  for (uint32_t b = 0; b < copy; b++)
    cr_assert_eq(kb[b], image[b], "step %u: kernel %s (queue block %u, %u args, dims %u grid %u "
                 "block %u): kernarg byte %u is %#x, want %#x", step, kd->name, fq->block,
                 l->arg_count, l->dims, l->grid[0], l->block[0], b, kb[b], image[b]);
  return 1;
}

/* ---- set-up ---- */
static const fz_kernel_t *fz_table = fz_kernel_table;

static void fz_load(fz_ctx_t *c, uint32_t i) {
  c->kern[i] = fz_table[i];
  if (c->kern[i].ver) {
    c->kern[i].p = th_load(&c->e, c->kern[i].file, c->kern[i].ver, c->kern[i].name, &c->kern[i].k);
    return;
  }
  TH_OK(hsad_program_load_file(c->e.dev, c->kern[i].file, &c->kern[i].p)); /* a path */
  TH_OK(hsad_program_kernel(c->kern[i].p, c->kern[i].name, &c->kern[i].k));
}

static void fz_queue(fz_ctx_t *c, fz_queue_t *fq, uint32_t size, uint32_t block, bool profiling) {
  memset(fq, 0, sizeof *fq);
  fq->size = size;
  fq->block = block;
  fq->profiling = profiling;
  TH_OK(hsad_queue_create(c->e.dev, &(hsad_queue_options_t){.size = size, .kernarg_block_size = block,
                                                            .profiling = profiling}, &fq->q));
}

static void fz_open(fz_ctx_t *c, const fz_kernel_t *table, uint32_t nk) {
  memset(c, 0, sizeof *c);
  fz_table = table;
  c->nk = nk;
  setenv("KFD_EMU_KERNEL_MODE", "twin", 1);
  setenv("KFD_EMU_NO_TWIN", "noop", 1); /* fz_odd_table's kernels: no twin, no source */
  th_open(&c->e);
  for (uint32_t i = 0; i < c->nk; i++) fz_load(c, i);
  for (uint32_t i = 0; i < FZ_BUFS; i++) {
    c->bufs[i] = th_alloc(&c->e, FZ_BUF_BYTES);
    memset(c->bufs[i], 0, FZ_BUF_BYTES);
  }
  fz_queue(c, &c->fq[0], 128, 512, false);
  fz_queue(c, &c->fq[1], 64, 256, false);
  fz_queue(c, &c->fq[2], 64, 512, true);
  c->deadline_ns = 5 * TH_SEC;
  TH_OK(hsad_queue_create(c->e.dev, &(hsad_queue_options_t){.size = 64}, &c->ref));
  TH_OK(hsad_queue_monitor_enable(c->ref, NULL));
}

static void fz_round_open(fz_ctx_t *c) {
  for (int i = 0; i < 3; i++) c->fq[i].gate = th_gate(c->fq[i].q);
}

static void fz_round_close(fz_ctx_t *c) {
  for (int i = 0; i < 3; i++) {
    th_gate_open(c->fq[i].gate);
    TH_OK(hsad_queue_wait_idle(c->fq[i].q, th_in(30 * TH_SEC)));
    cr_assert_eq(hsad_queue_error(c->fq[i].q), HSAD_OK, "queue %d: %s", i, hsad_last_error());
    th_gate_destroy(c->fq[i].gate);
  }
}

static void fz_close(fz_ctx_t *c) {
  for (int i = 0; i < 3; i++) hsad_queue_destroy(c->fq[i].q);
  hsad_queue_destroy(c->ref);
  for (uint32_t i = 0; i < FZ_BUFS; i++) hsad_buffer_free(c->bufs[i]);
  for (uint32_t i = 0; i < c->nk; i++) TH_OK(hsad_program_destroy(c->kern[i].p));
  TH_OK(hsad_runtime_close(c->e.rt));
}

/* Whether the kernel's twin needs 1-D workgroups (lds_reduce_dyn: an LDS argument). */
static bool fz_rows1(const fz_ctx_t *c, uint32_t kernel) {
  return c->kern[kernel].params && strchr(c->kern[kernel].params, FZ_L);
}

/* Whether kernels i and j take the same explicit arguments (kinds, offsets, sizes). */
static bool fz_same_layout(const fz_ctx_t *c, uint32_t i, uint32_t j) {
  const hsad_kernarg_plan_t *a = hsad_kernel_kernarg_plan(hsad_device_kernel_desc(c->kern[i].k)->codeobj_kernel);
  const hsad_kernarg_plan_t *b = hsad_kernel_kernarg_plan(hsad_device_kernel_desc(c->kern[j].k)->codeobj_kernel);
  if (a->explicit_count != b->explicit_count) return false;
  if ((c->kern[i].params == NULL) != (c->kern[j].params == NULL)) return false;
  if (c->kern[i].params && strcmp(c->kern[i].params, c->kern[j].params)) return false;
  for (uint32_t n = 0; n < a->explicit_count; n++)
    if (a->explicit_args[n].offset != b->explicit_args[n].offset ||
        a->explicit_args[n].size != b->explicit_args[n].size ||
        a->explicit_args[n].kind != b->explicit_args[n].kind)
      return false;
  return true;
}

/* A new launch: kernel, geometry, flags, spelling and values at random. */
static void fz_new_launch(fz_rng_t *r, fz_ctx_t *c, fz_launch_t *x) {
  memset(x, 0, sizeof *x);
  x->kernel = fz_below(r, c->nk);
  fz_geometry(r, x, false, fz_rows1(c, x->kernel));
  x->l.flags = fz_below(r, 4);
  fz_values(r, c, x, false);
}

/* One seeded sequence: rounds of gated dispatches on two queues. Between rounds a queue may be
 * destroyed and created again (often at the same address: a new uid), a program unloaded and
 * loaded again (a new kernel uid), monitoring toggled; within a round a capture may record a
 * few dispatches. */
static void fz_sequence(uint64_t seed, uint32_t steps, const fz_kernel_t *table, uint32_t nk,
                        uint32_t min_keyed) {
  fz_ctx_t *c = calloc(1, sizeof *c);
  fz_open(c, table, nk);
  fz_rng_t r = {seed};
  fz_entry_t m = {0};
  uint64_t qgen[3] = {1, 1, 1}, kgen[16] = {0};
  for (uint32_t i = 0; i < nk; i++) kgen[i] = 1;
  fz_launch_t *x = calloc(1, sizeof *x), *save = calloc(1, sizeof *save);
  fz_new_launch(&r, c, x);
  bool refused = false;
  uint32_t qi = 0, step = 0, same_addr = 0, recreated = 0, reloaded = 0, toggles = 0, captures = 0;
  while (step < steps) {
    fz_round_open(c);
    uint64_t start[3] = {fz_wi(c->fq[0].q), fz_wi(c->fq[1].q), fz_wi(c->fq[2].q)};
    for (;;) {
      if (fz_wi(c->fq[0].q) - start[0] > c->fq[0].size - 20 ||
          fz_wi(c->fq[1].q) - start[1] > c->fq[1].size - 16 ||
          fz_wi(c->fq[2].q) - start[2] > c->fq[2].size - 16 || step >= steps)
        break;
      step++;
      uint32_t roll = fz_below(&r, 100);
      if (refused && roll < 55) {
        fz_values(&r, c, x, false); /* refused as spelled: another spelling */
      } else if (roll < 12) {
        /* the same launch again, values too: a value-keyed entry's hit */
      } else if (roll < 55) { /* same launch, new values (a signature entry's hit), maybe only
                                 one argument's (a value-keyed entry's miss) */
        if (fz_chance(&r, 40)) fz_one_value(&r, c, x, save);
        else fz_values(&r, c, x, true);
      } else if (roll < 62) {
        x->l.flags = fz_below(&r, 4); /* flags are not in the key */
        fz_values(&r, c, x, true);
      } else if (roll < 68) {
        uint32_t pick = fz_below(&r, 100); /* maybe another queue */
        qi = pick < 60 ? 0 : pick < 85 ? 1 : 2;
        fz_values(&r, c, x, true);
      } else if (roll < 74) {
        if (x->bad_geometry || fz_chance(&r, 40)) fz_geometry(&r, x, false, fz_rows1(c, x->kernel));
        else fz_geometry_tweak(&r, x, fz_rows1(c, x->kernel));
        fz_values(&r, c, x, true);
      } else if (roll < 78) {
        fz_values(&r, c, x, false); /* another spelling */
      } else if (roll < 82) { /* another kernel, the same geometry (and spelling where the
                                 parameters are the same: vector_add v4 and v5) */
        uint32_t was = x->kernel;
        x->kernel = fz_below(&r, c->nk);
        for (uint32_t j = 0; j < c->nk && fz_chance(&r, 60); j++) /* mostly one of the same layout */
          if (j != was && fz_same_layout(c, j, was)) x->kernel = j;
        if (fz_rows1(c, x->kernel) && !fz_rows1(c, was)) fz_geometry(&r, x, false, true);
        fz_values(&r, c, x, fz_same_layout(c, x->kernel, was));
      } else if (roll < 90) {
        fz_new_launch(&r, c, x);
      } else if (roll < 97) {
        *save = *x; /* a wrong argument, then the launch as it was */
        fz_mutate(&r, x);
      } else {
        *save = *x;
        fz_geometry(&r, x, true, fz_rows1(c, x->kernel));
      }
      x->want_completion = fz_chance(&r, 5);
      x->prepare = fz_chance(&r, 3);
      x->null_id = fz_chance(&r, 10);
      x->batch = fz_chance(&r, 2);
      x->l.flags = (x->l.flags & 3) | (fz_chance(&r, 5) ? 0x10u : 0); /* unknown bits: ignored */
      fz_queue_t *fqm = &c->fq[qi];
      if (fqm->monitored ? fz_chance(&r, 25) : fz_chance(&r, 2)) { /* monitoring toggled */
        fz_queue_t *fq = fqm;
        if (fq->monitored) hsad_queue_monitor_disable(fq->q);
        else TH_OK(hsad_queue_monitor_enable(fq->q, NULL));
        fq->monitored = !fq->monitored;
        toggles++;
      }
      if (fz_chance(&r, 1) && !x->want_completion) { /* a capture between hits */
        hsad_graph_t *g = NULL;
        TH_OK(hsad_graph_create(0, &g));
        TH_OK(hsad_queue_capture_begin(c->fq[qi].q, g, 0));
        fz_dispatch(c, &m, &c->fq[qi], qgen[qi], kgen[x->kernel], x, step, true);
        TH_OK(hsad_queue_capture_end(c->fq[qi].q, NULL));
        hsad_graph_destroy(g);
        captures++;
      }
      x->l.args = x->l.args ? x->a : NULL;
      refused = fz_dispatch(c, &m, &c->fq[qi], qgen[qi], kgen[x->kernel], x, step, false) < 0 && roll < 90;
      if (roll >= 90) {
        *x = *save;
        x->l.args = x->a;
        for (uint32_t i = 0; i < FZ_MAX_ARGS; i++)
          if (x->a[i].tag == HSAD_KARG_BYTES && x->a[i].bytes && x->a[i].size <= 16) x->a[i].bytes = x->store[i];
        for (uint32_t i = 0; i < FZ_MAX_ARGS; i++)
          if (x->a[i].tag == HSAD_KARG_BYTES && x->a[i].size == 1024) x->a[i].bytes = x->blob;
      }
    }
    if (fz_chance(&r, 10)) { /* the gated ring filled up: hits until TIMEOUT, nothing reserved */
      c->deadline_ns = 2000000;
      x->want_completion = false;
      for (uint32_t j = 0; j < 300; j++) {
        fz_values(&r, c, x, true);
        step++;
        if (fz_dispatch(c, &m, &c->fq[qi], qgen[qi], kgen[x->kernel], x, step, false) == 0) break;
      }
      c->deadline_ns = 5 * TH_SEC;
    }
    fz_round_close(c);
    if (fz_chance(&r, 15)) { /* a queue destroyed and another created, likely at its address */
      uint32_t i = fz_below(&r, 3);
      hsad_queue_t *old = c->fq[i].q;
      uint32_t size = c->fq[i].size, block = c->fq[i].block;
      bool mon = c->fq[i].monitored;
      hsad_queue_destroy(old);
      fz_queue(c, &c->fq[i], size, block, c->fq[i].profiling);
      if (mon) TH_OK(hsad_queue_monitor_enable(c->fq[i].q, NULL));
      c->fq[i].monitored = mon;
      same_addr += c->fq[i].q == old;
      qgen[i]++;
      recreated++;
    }
    if (fz_chance(&r, 15)) { /* a program unloaded and loaded again */
      uint32_t i = fz_below(&r, c->nk);
      TH_OK(hsad_program_destroy(c->kern[i].p));
      fz_load(c, i);
      kgen[i]++;
      reloaded++;
    }
  }
  cr_log_info("seed %#llx: %u dispatches: %u signature hits, %u keyed hits, %u misses, %u general "
              "(monitored, completion or span), %u refused (GRID %u WORKGROUP %u ARG_COUNT %u "
              "ARG_SIZE %u ARG_KIND %u ARG_VALUE %u INVALID_ARGUMENT %u LDS_LIMIT %u), %u captured; "
              "%u queues re-created (%u at the same address), %u programs re-loaded, %u monitor "
              "toggles, %u captures, %u full rings", (unsigned long long)seed, c->n.dispatches, c->n.sig_hits,
              c->n.keyed_hits, c->n.misses, c->n.general, c->n.refused,
              c->n.refused_by[HSAD_ERR_GRID & 31], c->n.refused_by[HSAD_ERR_WORKGROUP & 31],
              c->n.refused_by[HSAD_ERR_ARG_COUNT & 31], c->n.refused_by[HSAD_ERR_ARG_SIZE & 31],
              c->n.refused_by[HSAD_ERR_ARG_KIND & 31], c->n.refused_by[HSAD_ERR_ARG_VALUE & 31],
              c->n.refused_by[HSAD_ERR_INVALID_ARGUMENT & 31], c->n.refused_by[HSAD_ERR_LDS_LIMIT & 31],
              c->n.captured, recreated, same_addr, reloaded, toggles, captures, c->timeouts);
  /* the sequence exercised every path (the model's counts) */
  cr_assert_gt(c->n.sig_hits, steps / 8, "signature hits %u of %u", c->n.sig_hits, steps);
  cr_assert_gt(c->n.keyed_hits, min_keyed, "keyed hits %u of %u", c->n.keyed_hits, steps);
  cr_assert_gt(c->n.refused, steps / 20, "refusals %u of %u", c->n.refused, steps);
  free(x);
  free(save);
  fz_close(c);
  free(c);
}

Test(launch_cache_fuzz, seeded_sequence_matches_the_model, .timeout = 120) {
  fz_sequence(0x5eed0001ull, 2000, fz_kernel_table, FZ_KERNELS, 40);
}

/* Two threads, each with its own cache entry, alternate between two kernels on one queue (one
 * kernel shared by both), with new values, spellings and wrong arguments; rounds are gated as
 * above (the main thread opens the gate between them). Each thread checks its own packets and
 * kernarg blocks against the model. Then 8 short-lived threads, one after the other. */
typedef struct fz_worker {
  fz_ctx_t c;
  uint64_t seed;
  uint32_t kernels[2];
  uint32_t rounds, per_round;
  pthread_barrier_t *bar;
} fz_worker_t;

static void *fz_worker_main(void *arg) {
  fz_worker_t *w = arg;
  fz_rng_t r = {w->seed};
  fz_entry_t m = {0};
  fz_launch_t *x = calloc(1, sizeof *x), *save = calloc(1, sizeof *save);
  uint32_t step = 0;
  for (uint32_t round = 0; round < w->rounds; round++) {
    pthread_barrier_wait(w->bar); /* the gate is closed */
    for (uint32_t i = 0; i < w->per_round; i++) {
      step++;
      uint32_t roll = fz_below(&r, 100);
      bool bad = false;
      if (roll < 45 || step == 1) { /* the other kernel: a miss, then its entry */
        memset(x, 0, sizeof *x);
        x->kernel = w->kernels[(step + (roll & 1)) & 1];
        fz_geometry(&r, x, false, false);
        x->l.flags = fz_below(&r, 4);
        fz_values(&r, &w->c, x, false);
      } else if (roll < 90) {
        fz_values(&r, &w->c, x, true);
      } else {
        *save = *x;
        fz_mutate(&r, x);
        bad = true;
      }
      fz_dispatch(&w->c, &m, &w->c.fq[0], 1, 1, x, step, false);
      if (bad) {
        *x = *save;
        x->l.args = x->a;
      }
    }
    pthread_barrier_wait(w->bar); /* done: the main thread opens the gate */
  }
  free(x);
  free(save);
  return NULL;
}

Test(launch_cache_fuzz, two_threads_alternate_kernels_on_one_queue, .timeout = 120) {
  fz_ctx_t *c = calloc(1, sizeof *c);
  fz_open(c, fz_kernel_table, FZ_KERNELS);
  pthread_barrier_t bar;
  pthread_barrier_init(&bar, NULL, 3);
  fz_worker_t w[2];
  const uint32_t kernels[2][2] = {{0, 3}, {2, 0}}; /* vector_add v5 + fill v4; saxpy + vector_add */
  for (int i = 0; i < 2; i++) {
    w[i].c = *c;
    w[i].c.shared = true;
    memset(&w[i].c.n, 0, sizeof w[i].c.n);
    w[i].seed = 0x7417ead0ull + (uint64_t)i;
    w[i].kernels[0] = kernels[i][0];
    w[i].kernels[1] = kernels[i][1];
    w[i].rounds = 12;
    w[i].per_round = 50;
    w[i].bar = &bar;
  }
  /* the kernarg address of slot 0, seen once by the main thread with empty (both workers' model) */
  c->fq[0].gate = th_gate(c->fq[0].q);
  uint64_t id;
  hsad_karg_t none[1];
  (void)none;
  TH_OK(hsad_kernel_dispatch(c->fq[0].q, c->kern[8].k, &(hsad_launch_t){.dims = 1, .grid = {1}, .block = {1}},
                             th_in(TH_SEC), NULL, &id));
  uint64_t ka = th_get64((const uint8_t *)hsad_queue_hsa(c->fq[0].q)->base_address + (id % 128) * 64, 40);
  for (int i = 0; i < 2; i++) w[i].c.fq[0].ka_base = ka - (id % 128) * 512;
  th_gate_open(c->fq[0].gate);
  TH_OK(hsad_queue_wait_idle(c->fq[0].q, th_in(30 * TH_SEC)));
  th_gate_destroy(c->fq[0].gate);
  pthread_t t[2];
  for (int i = 0; i < 2; i++) cr_assert_eq(pthread_create(&t[i], NULL, fz_worker_main, &w[i]), 0);
  for (uint32_t round = 0; round < w[0].rounds; round++) {
    c->fq[0].gate = th_gate(c->fq[0].q);
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);
    th_gate_open(c->fq[0].gate);
    TH_OK(hsad_queue_wait_idle(c->fq[0].q, th_in(30 * TH_SEC)));
    cr_assert_eq(hsad_queue_error(c->fq[0].q), HSAD_OK, "%s", hsad_last_error());
    th_gate_destroy(c->fq[0].gate);
  }
  for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
  /* short-lived threads, one at a time: each one's entry is freed when it exits (a pthread
   * key's destructor) and the next one's, often at the same address, starts empty */
  pthread_barrier_t bar2;
  pthread_barrier_init(&bar2, NULL, 2);
  for (uint32_t n = 0; n < 8; n++) {
    fz_worker_t s1 = w[n % 2];
    s1.seed = 0x5407ull + n;
    s1.rounds = 1;
    s1.per_round = 6;
    s1.bar = &bar2;
    memset(&s1.c.n, 0, sizeof s1.c.n);
    c->fq[0].gate = th_gate(c->fq[0].q);
    pthread_t st;
    cr_assert_eq(pthread_create(&st, NULL, fz_worker_main, &s1), 0);
    pthread_barrier_wait(&bar2);
    pthread_barrier_wait(&bar2);
    pthread_join(st, NULL);
    cr_assert_gt(s1.c.n.dispatches, 5, "short thread %u: %u dispatches", n, s1.c.n.dispatches);
    th_gate_open(c->fq[0].gate);
    TH_OK(hsad_queue_wait_idle(c->fq[0].q, th_in(30 * TH_SEC)));
    th_gate_destroy(c->fq[0].gate);
  }
  pthread_barrier_destroy(&bar2);
  for (int i = 0; i < 2; i++)
    cr_log_info("thread %d: %u dispatches: %u signature hits, %u keyed hits, %u misses, %u general, "
                "%u refused", i, w[i].c.n.dispatches, w[i].c.n.sig_hits, w[i].c.n.keyed_hits,
                w[i].c.n.misses, w[i].c.n.general, w[i].c.n.refused);
  for (int i = 0; i < 2; i++) {
    cr_assert_gt(w[i].c.n.sig_hits, 60, "thread %d: signature hits %u", i, w[i].c.n.sig_hits);
    cr_assert_gt(w[i].c.n.misses, 60, "thread %d: misses %u", i, w[i].c.n.misses);
  }
  pthread_barrier_destroy(&bar);
  fz_close(c);
  free(c);
}

/* Kernels of unusual layouts, never run: an 8-byte value and sub-word values (fixed_lds, with a
 * .reqd_workgroup_size), two LDS arguments, a char and a float4 (lds2), a 16-byte struct
 * (quals), a private segment (scratch, spill), no kernarg segment at all (noargs), hidden
 * arguments at unaligned offsets (hw_partial), an explicit argument after a hidden one
 * (hw_narrow), a 4-byte segment (hw_nohidden), hidden arguments past the segment
 * (hw_implicit24). */
#define FZ_ODD 12
static const fz_kernel_t fz_odd_table[FZ_ODD] = {
    {CO_FIXDIR "/kernels-gfx90a-v5.hsaco", "vadd", 0, NULL, NULL, NULL},
    {CO_FIXDIR "/kernels-gfx90a-v5.hsaco", "lds2", 0, NULL, NULL, NULL},
    {CO_FIXDIR "/kernels-gfx90a-v5.hsaco", "fixed_lds", 0, NULL, NULL, NULL},
    {CO_FIXDIR "/kernels-gfx90a-v5.hsaco", "scratch", 0, NULL, NULL, NULL},
    {CO_FIXDIR "/kernels-gfx90a-v5.hsaco", "noargs", 0, NULL, NULL, NULL},
    {CO_FIXDIR "/kernels-gfx90a-v5.hsaco", "quals", 0, NULL, NULL, NULL},
    {CO_FIXDIR "/kernels-gfx90a-v5.hsaco", "implicit", 0, NULL, NULL, NULL},
    {CO_FIXDIR "/kernels-gfx90a-v5.hsaco", "spill", 0, NULL, NULL, NULL},
    {CO_FIXDIR "/handwritten-v5.hsaco", "hw_partial", 0, NULL, NULL, NULL},
    {CO_FIXDIR "/handwritten-v5.hsaco", "hw_narrow", 0, NULL, NULL, NULL},
    {CO_FIXDIR "/handwritten-v5.hsaco", "hw_nohidden", 0, NULL, NULL, NULL},
    {CO_FIXDIR "/partial-hidden-v5.hsaco", "hw_implicit24", 0, NULL, NULL, NULL},
};

Test(launch_cache_fuzz, odd_layouts_and_any_spelling_match_the_model, .timeout = 120) {
  fz_sequence(0x0dd1a7e5ull, 2000, fz_odd_table, FZ_ODD, 20);
}
