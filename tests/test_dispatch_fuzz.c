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
  const char *params; /* one letter per explicit argument */
  hsad_program_t *p;
  const hsad_device_kernel_t *k;
} fz_kernel_t;

#define FZ_KERNELS 9
static const fz_kernel_t fz_kernel_table[FZ_KERNELS] = {
    {"vector_add", "vector_add", 5, "PPPU", NULL, NULL},
    {"vector_add", "vector_add", 4, "PPPU", NULL, NULL},
    {"saxpy", "saxpy", 5, "FPPU", NULL, NULL},
    {"fill", "fill", 4, "PUU", NULL, NULL},
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
  bool bad_geometry; /* made invalid on purpose: the monitored queue's refusal is the model */
} fz_launch_t;

/* One queue of the test and what the model knows of it. */
typedef struct fz_queue {
  hsad_queue_t *q;
  uint32_t size, block;
  uint64_t ka_base; /* kernarg address of slot 0, once seen (0: not yet) */
  hsa_signal_t gate;
  bool monitored;
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
  dq_env_t e;
  fz_kernel_t kern[FZ_KERNELS];
  float *bufs[FZ_BUFS];
  fz_queue_t fq[2];
  hsad_queue_t *ref; /* monitored: refusals' reference */
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

/* New values (pointers and numbers) for every argument of launch x, keeping its spelling when
 * `keep` (the same signature: a signature entry's hit). */
static void fz_values(fz_rng_t *r, fz_ctx_t *c, fz_launch_t *x, bool keep) {
  const fz_kernel_t *kk = &c->kern[x->kernel];
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
  case 6: *a = HSAD_KARG_LDS_BYTES(64); break;
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
  x->bad_geometry = bad;
  if (!bad) return;
  switch (fz_below(r, 6)) {
  case 0: l->block[0] = 0; break;
  case 1: l->grid[0] = 0; break;
  case 2: l->dims = fz_chance(r, 50) ? 0 : 4; break;
  case 3: l->block[0] = 1024; l->block[1] = 2; l->dims = l->dims < 2 ? 2 : l->dims; l->grid[1] = 2; break;
  case 4: l->dims = 1; l->grid[1] = 2; break;
  default: l->block[0] = 2048;
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

/* Dispatches launch x on fq and compares everything with the model. */
static void fz_dispatch(fz_ctx_t *c, fz_entry_t *m, fz_queue_t *fq, uint64_t qgen, uint64_t kgen,
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
  static _Alignas(64) uint8_t image[65536];
  memset(image, 0, sizeof image);
  uint32_t group = 0;
  hsad_status_t want = HSAD_OK;
  char want_msg[1024] = "";
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
  }
  bool refuse = x->bad_geometry || want != HSAD_OK;
  if (refuse && !capturing) {
    /* the general path's own answer: the same launch on the monitored queue */
    uint64_t rwi = fz_wi(c->ref);
    hsad_status_t rs = hsad_kernel_dispatch(c->ref, k, l, dq_in(DQ_SEC), NULL, NULL);
    cr_assert_neq(rs, HSAD_OK, "step %u: the monitored queue accepted a launch the model refuses", step);
    cr_assert_eq(fz_wi(c->ref), rwi, "step %u: the refused launch reserved slots on the monitored queue", step);
    if (want_msg[0])
      cr_assert_str_eq(hsad_last_error(), want_msg, "step %u: general path's message", step);
    else
      snprintf(want_msg, sizeof want_msg, "%s", hsad_last_error());
    want = rs;
  }
  uint64_t wi0 = fz_wi(q), id = UINT64_MAX;
  hsad_completion_t comp;
  hsad_status_t s = hsad_kernel_dispatch(q, k, l, dq_in(5 * DQ_SEC), x->want_completion ? &comp : NULL, &id);
  uint64_t wi1 = fz_wi(q);
  if (capturing) {
    cr_assert_eq(wi1, wi0, "step %u: a captured dispatch moved the write index", step);
    if (!refuse) cr_assert_eq(s, HSAD_OK, "step %u: captured: %s", step, hsad_last_error());
    c->n.captured++;
    return;
  }
  if (refuse) {
    cr_assert_eq(s, want, "step %u: kernel %s: got %s (%s), want %s (%s)", step, kd->name,
                 hsad_status_name(s), s ? hsad_last_error() : "", hsad_status_name(want), want_msg);
    cr_assert_str_eq(hsad_last_error(), want_msg, "step %u: kernel %s: message", step, kd->name);
    cr_assert_eq(wi1, wi0, "step %u: a refused launch reserved %llu slots", step,
                 (unsigned long long)(wi1 - wi0));
    c->n.refused++;
    c->n.refused_by[s & 31]++;
    m->valid = false; /* the refusal replaced the thread's entry */
    return;
  }
  cr_assert_eq(s, HSAD_OK, "step %u: kernel %s refused: %s %s", step, kd->name,
               hsad_status_name(s), hsad_last_error());
  cr_assert_eq(id, wi0, "step %u: packet id %llu, write index was %llu", step,
               (unsigned long long)id, (unsigned long long)wi0);
  uint32_t ks = kd->kernarg_segment_size;
  uint32_t span = ks ? (ks + fq->block - 1) / fq->block : 1;
  bool barrier = !(l->flags & HSAD_LAUNCH_NO_BARRIER);
  bool carries = x->want_completion && span == 1 && barrier;
  uint32_t slots = span + (x->want_completion && span == 1 && !carries);
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
  w.private_segment_size = kd->private_segment_fixed_size;
  w.group_segment_size = group;
  w.kernel_object = kd->kernel_object;
  uint64_t ka = dq_get64(pk, 40);
  if (!fq->ka_base) fq->ka_base = ka - (id % fq->size) * fq->block;
  w.kernarg_address = (void *)(uintptr_t)(fq->ka_base + (id % fq->size) * fq->block);
  uint64_t sig = dq_get64(pk, 56);
  cr_assert_eq(sig != 0, carries, "step %u: completion signal %#llx, carries the epoch: %d", step,
               (unsigned long long)sig, carries);
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
}

/* ---- set-up ---- */
static void fz_load(fz_ctx_t *c, uint32_t i) {
  c->kern[i] = fz_kernel_table[i];
  c->kern[i].p = dq_load(&c->e, c->kern[i].file, c->kern[i].ver, c->kern[i].name, &c->kern[i].k);
}

static void fz_queue(fz_ctx_t *c, fz_queue_t *fq, uint32_t size, uint32_t block) {
  memset(fq, 0, sizeof *fq);
  fq->size = size;
  fq->block = block;
  DQ_OK(hsad_queue_create(c->e.dev, &(hsad_queue_options_t){.size = size, .kernarg_block_size = block}, &fq->q));
}

static void fz_open(fz_ctx_t *c) {
  memset(c, 0, sizeof *c);
  setenv("KFD_EMU_KERNEL_MODE", "twin", 1);
  dq_open(&c->e);
  for (uint32_t i = 0; i < FZ_KERNELS; i++) fz_load(c, i);
  for (uint32_t i = 0; i < FZ_BUFS; i++) {
    c->bufs[i] = dq_alloc(&c->e, FZ_BUF_BYTES);
    memset(c->bufs[i], 0, FZ_BUF_BYTES);
  }
  fz_queue(c, &c->fq[0], 128, 512);
  fz_queue(c, &c->fq[1], 64, 256);
  DQ_OK(hsad_queue_create(c->e.dev, &(hsad_queue_options_t){.size = 64}, &c->ref));
  DQ_OK(hsad_queue_monitor_enable(c->ref, NULL));
}

static void fz_round_open(fz_ctx_t *c) {
  for (int i = 0; i < 2; i++) c->fq[i].gate = dq_gate(c->fq[i].q);
}

static void fz_round_close(fz_ctx_t *c) {
  for (int i = 0; i < 2; i++) {
    dq_gate_open(c->fq[i].gate);
    DQ_OK(hsad_queue_wait_idle(c->fq[i].q, dq_in(30 * DQ_SEC)));
    cr_assert_eq(hsad_queue_error(c->fq[i].q), HSAD_OK, "queue %d: %s", i, hsad_last_error());
    dq_gate_destroy(c->fq[i].gate);
  }
}

static void fz_close(fz_ctx_t *c) {
  for (int i = 0; i < 2; i++) hsad_queue_destroy(c->fq[i].q);
  hsad_queue_destroy(c->ref);
  for (uint32_t i = 0; i < FZ_BUFS; i++) hsad_buffer_free(c->bufs[i]);
  for (uint32_t i = 0; i < FZ_KERNELS; i++) DQ_OK(hsad_program_destroy(c->kern[i].p));
  DQ_OK(hsad_runtime_close(c->e.rt));
}

/* A new launch: kernel, geometry, flags, spelling and values at random. */
static void fz_new_launch(fz_rng_t *r, fz_ctx_t *c, fz_launch_t *x) {
  memset(x, 0, sizeof *x);
  x->kernel = fz_below(r, FZ_KERNELS);
  fz_geometry(r, x, false, strchr(c->kern[x->kernel].params, FZ_L) != NULL);
  x->l.flags = fz_below(r, 4);
  fz_values(r, c, x, false);
}

/* One seeded sequence: rounds of gated dispatches on two queues. Between rounds a queue may be
 * destroyed and created again (often at the same address: a new uid), a program unloaded and
 * loaded again (a new kernel uid), monitoring toggled; within a round a capture may record a
 * few dispatches. */
static void fz_sequence(uint64_t seed, uint32_t steps) {
  fz_ctx_t *c = calloc(1, sizeof *c);
  fz_open(c);
  fz_rng_t r = {seed};
  fz_entry_t m = {0};
  uint64_t qgen[2] = {1, 1}, kgen[FZ_KERNELS] = {0};
  for (uint32_t i = 0; i < FZ_KERNELS; i++) kgen[i] = 1;
  fz_launch_t *x = calloc(1, sizeof *x), *save = calloc(1, sizeof *save);
  fz_new_launch(&r, c, x);
  uint32_t qi = 0, step = 0, same_addr = 0, recreated = 0, reloaded = 0, toggles = 0, captures = 0;
  while (step < steps) {
    fz_round_open(c);
    uint64_t start[2] = {fz_wi(c->fq[0].q), fz_wi(c->fq[1].q)};
    for (;;) {
      if (fz_wi(c->fq[0].q) - start[0] > c->fq[0].size - 20 ||
          fz_wi(c->fq[1].q) - start[1] > c->fq[1].size - 16 || step >= steps)
        break;
      step++;
      uint32_t roll = fz_below(&r, 100);
      if (roll < 12) {
        /* the same launch again, values too: a value-keyed entry's hit */
      } else if (roll < 55) {
        fz_values(&r, c, x, true); /* same launch, new values: a signature entry's hit */
      } else if (roll < 62) {
        x->l.flags = fz_below(&r, 4); /* flags are not in the key */
        fz_values(&r, c, x, true);
      } else if (roll < 68) {
        qi = fz_chance(&r, 70) ? 0 : 1; /* maybe the other queue */
        fz_values(&r, c, x, true);
      } else if (roll < 74) {
        fz_geometry(&r, x, false, strchr(c->kern[x->kernel].params, FZ_L) != NULL);
        fz_values(&r, c, x, true);
      } else if (roll < 82) {
        fz_values(&r, c, x, false); /* another spelling */
      } else if (roll < 90) {
        fz_new_launch(&r, c, x);
      } else if (roll < 97) {
        *save = *x; /* a wrong argument, then the launch as it was */
        fz_mutate(&r, x);
      } else {
        *save = *x;
        fz_geometry(&r, x, true, strchr(c->kern[x->kernel].params, FZ_L) != NULL);
      }
      x->want_completion = fz_chance(&r, 5);
      fz_queue_t *fqm = &c->fq[qi];
      if (fqm->monitored ? fz_chance(&r, 25) : fz_chance(&r, 2)) { /* monitoring toggled */
        fz_queue_t *fq = fqm;
        if (fq->monitored) hsad_queue_monitor_disable(fq->q);
        else DQ_OK(hsad_queue_monitor_enable(fq->q, NULL));
        fq->monitored = !fq->monitored;
        toggles++;
      }
      if (fz_chance(&r, 1) && !x->want_completion) { /* a capture between hits */
        hsad_graph_t *g = NULL;
        DQ_OK(hsad_graph_create(0, &g));
        DQ_OK(hsad_queue_capture_begin(c->fq[qi].q, g, 0));
        fz_dispatch(c, &m, &c->fq[qi], qgen[qi], kgen[x->kernel], x, step, true);
        DQ_OK(hsad_queue_capture_end(c->fq[qi].q, NULL));
        hsad_graph_destroy(g);
        captures++;
      }
      x->l.args = x->l.args ? x->a : NULL;
      fz_dispatch(c, &m, &c->fq[qi], qgen[qi], kgen[x->kernel], x, step, false);
      if (roll >= 90) {
        *x = *save;
        x->l.args = x->a;
        for (uint32_t i = 0; i < FZ_MAX_ARGS; i++)
          if (x->a[i].tag == HSAD_KARG_BYTES && x->a[i].bytes && x->a[i].size <= 16) x->a[i].bytes = x->store[i];
        for (uint32_t i = 0; i < FZ_MAX_ARGS; i++)
          if (x->a[i].tag == HSAD_KARG_BYTES && x->a[i].size == 1024) x->a[i].bytes = x->blob;
      }
    }
    fz_round_close(c);
    if (fz_chance(&r, 15)) { /* a queue destroyed and another created, likely at its address */
      uint32_t i = fz_below(&r, 2);
      hsad_queue_t *old = c->fq[i].q;
      uint32_t size = c->fq[i].size, block = c->fq[i].block;
      bool mon = c->fq[i].monitored;
      hsad_queue_destroy(old);
      fz_queue(c, &c->fq[i], size, block);
      if (mon) DQ_OK(hsad_queue_monitor_enable(c->fq[i].q, NULL));
      c->fq[i].monitored = mon;
      same_addr += c->fq[i].q == old;
      qgen[i]++;
      recreated++;
    }
    if (fz_chance(&r, 15)) { /* a program unloaded and loaded again */
      uint32_t i = fz_below(&r, FZ_KERNELS);
      for (uint32_t j = 0; j < FZ_KERNELS; j++)
        if (j != i && c->kern[j].p == c->kern[i].p) i = j < i ? j : i;
      DQ_OK(hsad_program_destroy(c->kern[i].p));
      fz_load(c, i);
      kgen[i]++;
      reloaded++;
    }
  }
  cr_log_warn("seed %#llx: %u dispatches: %u signature hits, %u keyed hits, %u misses, %u general "
              "(monitored, completion or span), %u refused (GRID %u WORKGROUP %u ARG_COUNT %u "
              "ARG_SIZE %u ARG_KIND %u ARG_VALUE %u INVALID_ARGUMENT %u LDS_LIMIT %u), %u captured; "
              "%u queues re-created (%u at the same address), %u programs re-loaded, %u monitor "
              "toggles, %u captures", (unsigned long long)seed, c->n.dispatches, c->n.sig_hits,
              c->n.keyed_hits, c->n.misses, c->n.general, c->n.refused,
              c->n.refused_by[HSAD_ERR_GRID & 31], c->n.refused_by[HSAD_ERR_WORKGROUP & 31],
              c->n.refused_by[HSAD_ERR_ARG_COUNT & 31], c->n.refused_by[HSAD_ERR_ARG_SIZE & 31],
              c->n.refused_by[HSAD_ERR_ARG_KIND & 31], c->n.refused_by[HSAD_ERR_ARG_VALUE & 31],
              c->n.refused_by[HSAD_ERR_INVALID_ARGUMENT & 31], c->n.refused_by[HSAD_ERR_LDS_LIMIT & 31],
              c->n.captured, recreated, same_addr, reloaded, toggles, captures);
  /* the sequence exercised every path (the model's counts) */
  cr_assert_gt(c->n.sig_hits, steps / 8, "signature hits %u of %u", c->n.sig_hits, steps);
  cr_assert_gt(c->n.keyed_hits, steps / 50, "keyed hits %u of %u", c->n.keyed_hits, steps);
  cr_assert_gt(c->n.refused, steps / 20, "refusals %u of %u", c->n.refused, steps);
  free(x);
  free(save);
  fz_close(c);
  free(c);
}

Test(launch_cache_fuzz, seeded_sequence_matches_the_model, .timeout = 120) {
  fz_sequence(0x5eed0001ull, 2000);
}
