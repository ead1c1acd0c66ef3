/* variants.c - variant sets (hsad_variants.h): compile + load, the per-set choice cache, the
 * dispatch through it, and measured mode (autotune). Built with and without the AMD backend:
 * a set of another backend's kernels (NVIDIA) asks that backend's table for its checks and its
 * metadata rule (backend.h: variant_check, variant_select, queue_profiling); the cache, the
 * dispatch and measured mode are the same code for every vendor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HSAD_NO_AMD
#include <pthread.h>
#include <stdatomic.h>

#include "hsa-dispatch/backend.h"
#define DQ_LIKELY(x) __builtin_expect(!!(x), 1)
/* no AMD program to hold (hsa-dispatch/program.c) */
static inline uint64_t hsad_submit_kernel_hold(const hsad_device_kernel_t *k) { (void)k; return 0; }
static inline void hsad_submit_kernel_release(const hsad_device_kernel_t *k, uint64_t t) {
  (void)k, (void)t;
}
#else
#include "hsa-dispatch/dispatch_internal.h"
#endif
#include "hsa-dispatch/hsad_variants.h"

/* A cache word: bit 0 valid, bits 1-12 flat workgroup size, bits 13-29 dynamic LDS bytes (the
 * key, VS_KEY_MASK), bits 32-36 the chosen index. 0 is an empty slot. */
#define VS_WG_MAX 4095u
#define VS_LDS_MAX ((1u << 17) - 1)
#define VS_KEY_MASK ((1ull << 30) - 1)
#define VS_NO_KEY UINT64_MAX /* never equal to a masked word */

_Static_assert((HSAD_VARIANT_CACHE_SLOTS & (HSAD_VARIANT_CACHE_SLOTS - 1)) == 0,
               "the cache has a power-of-two number of slots");
_Static_assert(HSAD_VARIANT_MAX <= 32, "the index fits in 5 bits");

struct hsad_variant_set {
  /* read by every dispatch; written with release stores under `lock` */
  _Atomic uint64_t words[HSAD_VARIANT_CACHE_SLOTS];
  /* immutable after creation */
  uint32_t count;
  bool lds_args;                       /* some explicit argument is dynamic_shared_pointer */
  const hsad_device_kernel_t *kernels[HSAD_VARIANT_MAX];
  uint64_t holds[HSAD_VARIANT_MAX];    /* hsad_submit_kernel_hold's tokens (released at destroy) */
  const hsad_kernel_t *meta[HSAD_VARIANT_MAX];
  const hsad_backend_ops_t *ops;       /* the kernels' backend; NULL: AMD */
  hsad_device_t *device;               /* the kernels' device */
  const char *name;                    /* the kernel's name (variant 0's, owned by it) */
  /* under lock */
  pthread_mutex_t lock;
  hsad_variant_choice_t choices[HSAD_VARIANT_CACHE_SLOTS];
  uint64_t lock_takes;                 /* hsad_variant_set_stats; the stats call not counted */
  /* misses only: relaxed increments (a statistic, ordering nothing) */
  _Atomic uint64_t rule_runs;
};

static inline uint64_t vs_key(uint64_t wg, uint64_t lds) {
  if (wg > VS_WG_MAX || lds > VS_LDS_MAX) return VS_NO_KEY;
  return 1u | wg << 1 | lds << 13;
}

static inline uint32_t vs_home(uint64_t key) {
  return (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 59) & (HSAD_VARIANT_CACHE_SLOTS - 1);
}

/* The cached word of `key`, or 0. Lock-free: acquire loads (the word is stored with release
 * after its choice details). */
static inline uint64_t vs_find(const hsad_variant_set_t *set, uint64_t key) {
  uint32_t i = vs_home(key);
  for (uint32_t n = 0; n < HSAD_VARIANT_CACHE_SLOTS; n++) {
    uint64_t w = atomic_load_explicit(&set->words[i], memory_order_acquire);
    if ((w & VS_KEY_MASK) == key) return w;
    if (!w) return 0;
    i = (i + 1) & (HSAD_VARIANT_CACHE_SLOTS - 1);
  }
  return 0;
}

/* Stores (key -> choice) under the lock: replaces the key's entry when `replace`, keeps an
 * existing one otherwise (a concurrent insert of the same key made the same choice). Returns
 * the index the cache now holds for the key. A full table caches nothing. */
static uint32_t vs_store(hsad_variant_set_t *set, uint64_t key, const hsad_variant_choice_t *c,
                         bool replace) {
  uint32_t index = c->index;
  if (key == VS_NO_KEY) return index;
  pthread_mutex_lock(&set->lock);
  set->lock_takes++;
  uint32_t i = vs_home(key);
  for (uint32_t n = 0; n < HSAD_VARIANT_CACHE_SLOTS; n++) {
    uint64_t w = atomic_load_explicit(&set->words[i], memory_order_relaxed);
    if (w && (w & VS_KEY_MASK) != key) {
      i = (i + 1) & (HSAD_VARIANT_CACHE_SLOTS - 1);
      continue;
    }
    if (w && !replace) {
      index = (uint32_t)(w >> 32) & 31;
    } else {
      set->choices[i] = *c;
      atomic_store_explicit(&set->words[i], key | (uint64_t)c->index << 32,
                            memory_order_release);
    }
    break;
  }
  pthread_mutex_unlock(&set->lock);
  return index;
}

/* The choice details of a cached key (under the lock); false when not cached. */
static bool vs_cached_choice(hsad_variant_set_t *set, uint64_t key, hsad_variant_choice_t *out) {
  if (key == VS_NO_KEY) return false;
  bool found = false;
  pthread_mutex_lock(&set->lock);
  set->lock_takes++;
  uint32_t i = vs_home(key);
  for (uint32_t n = 0; n < HSAD_VARIANT_CACHE_SLOTS; n++) {
    uint64_t w = atomic_load_explicit(&set->words[i], memory_order_relaxed);
    if (!w) break;
    if ((w & VS_KEY_MASK) == key) {
      *out = set->choices[i];
      found = true;
      break;
    }
    i = (i + 1) & (HSAD_VARIANT_CACHE_SLOTS - 1);
  }
  pthread_mutex_unlock(&set->lock);
  return found;
}

static uint64_t vs_flat_size(const hsad_launch_t *l) {
  uint64_t wg = l->block[0];
  if (l->dims > 1) wg *= l->block[1];
  if (l->dims > 2) wg *= l->block[2];
  return wg;
}

static uint64_t vs_dynamic_lds(const hsad_launch_t *l) {
  uint64_t lds = 0;
  for (uint32_t i = 0; i < l->arg_count && l->args; i++)
    if (l->args[i].tag == HSAD_KARG_LDS) lds += l->args[i].lds_bytes;
  return lds;
}

/* The metadata rule over variants [first, first + n) at (wg, lds): codeobj's for AMD, the
 * backend's otherwise; the index is relative to `first`. */
static hsad_status_t vs_rule(const hsad_variant_set_t *set, uint32_t first, uint32_t n,
                             uint64_t wg, uint64_t lds, hsad_variant_choice_t *out) {
  uint32_t w = wg > UINT32_MAX ? UINT32_MAX : (uint32_t)wg;
  uint32_t d = lds > UINT32_MAX ? UINT32_MAX : (uint32_t)lds;
  if (set->ops) return set->ops->variant_select(&set->kernels[first], n, w, d, out);
#ifndef HSAD_NO_AMD
  return hsad_kernel_variant_select(&set->meta[first], n, NULL, w, d, out);
#else
  return hsad_fail(HSAD_ERR_UNSUPPORTED, "variant sets: AMD kernels in a build without AMD");
#endif
}

/* The metadata rule for (wg, lds), cached. */
static hsad_status_t vs_choose(hsad_variant_set_t *set, uint64_t wg, uint64_t lds,
                               hsad_variant_choice_t *out, bool *out_cached) {
  uint64_t key = vs_key(wg, lds);
  if (vs_cached_choice(set, key, out)) {
    if (out_cached) *out_cached = true;
    return HSAD_OK;
  }
  if (out_cached) *out_cached = false;
  atomic_fetch_add_explicit(&set->rule_runs, 1, memory_order_relaxed);
  hsad_status_t s = vs_rule(set, 0, set->count, wg, lds, out);
  if (s) return s;
  out->index = vs_store(set, key, out, false);
  if (key != VS_NO_KEY) (void)vs_cached_choice(set, key, out); /* what the cache holds */
  return HSAD_OK;
}

#ifndef HSAD_NO_AMD
/* AMD kernels: one device, one name, the same explicit arguments. */
static hsad_status_t vs_check_amd(const hsad_device_kernel_t *const *kernels, uint32_t count,
                                  bool *out_lds_args) {
  const hsad_kernel_info_t *k0 = hsad_kernel_info(kernels[0]->desc.codeobj_kernel);
  bool lds_args = false;
  for (uint32_t a = 0; a < k0->arg_count; a++)
    if (k0->args[a].value_kind == HSAD_VK_DYNAMIC_SHARED_POINTER) lds_args = true;
  for (uint32_t i = 1; i < count; i++) {
    const hsad_kernel_info_t *ki = hsad_kernel_info(kernels[i]->desc.codeobj_kernel);
    if (kernels[i]->program->device != kernels[0]->program->device)
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "variant %u of kernel '%s' is on device %u, "
                       "variant 0 on device %u", i, k0->name,
                       kernels[i]->program->device->info.index,
                       kernels[0]->program->device->info.index);
    if (strcmp(ki->name, k0->name))
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "variant %u is kernel '%s', variant 0 is '%s'",
                       i, ki->name, k0->name);
    uint32_t na = 0, nb = 0;
    for (uint32_t a = 0; a < k0->arg_count; a++) na += !hsad_value_kind_is_hidden(k0->args[a].value_kind);
    for (uint32_t a = 0; a < ki->arg_count; a++) nb += !hsad_value_kind_is_hidden(ki->args[a].value_kind);
    if (na != nb)
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "kernel '%s': variant %u has %u explicit "
                       "arguments, variant 0 has %u", k0->name, i, nb, na);
    for (uint32_t a = 0; a < na; a++)
      if (ki->args[a].size != k0->args[a].size ||
          ki->args[a].value_kind != k0->args[a].value_kind)
        return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "kernel '%s': argument %u of variant %u is "
                         "%s of %u bytes, of variant 0 %s of %u bytes", k0->name, a, i,
                         hsad_value_kind_name(ki->args[a].value_kind), ki->args[a].size,
                         hsad_value_kind_name(k0->args[a].value_kind), k0->args[a].size);
  }
  *out_lds_args = lds_args;
  return HSAD_OK;
}
#endif

static const char *vs_vendor(const hsad_backend_ops_t *ops) { return ops ? ops->name : "amd"; }

hsad_status_t hsad_variant_set_create(const hsad_device_kernel_t *const *kernels, uint32_t count,
                                      hsad_variant_set_t **out_set) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_variant_set_create", {kernels, "kernels"},
                                   {out_set, "out_set"});
  if (ns) return ns;
  if (count == 0 || count > HSAD_VARIANT_MAX)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_variant_set_create: %u variants (1..%u)",
                     count, HSAD_VARIANT_MAX);
  for (uint32_t i = 0; i < count; i++)
    if (!kernels[i])
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_variant_set_create: variant %u is NULL",
                       i);
  const hsad_backend_ops_t *ops = hsad_object_ops(kernels[0]);
  for (uint32_t i = 1; i < count; i++)
    if (hsad_object_ops(kernels[i]) != ops)
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_variant_set_create: variant %u is a %s "
                       "kernel, variant 0 a %s kernel: a set is one kernel on one device", i,
                       vs_vendor(hsad_object_ops(kernels[i])), vs_vendor(ops));
  bool lds_args = false;
  hsad_device_t *device = NULL;
  hsad_status_t s;
  if (ops) {
    if (!ops->variant_check || !ops->variant_select || !ops->queue_profiling)
      return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_variant_set_create: variant 0 is a %s "
                       "kernel: its backend has no variant sets", ops->name);
    s = ops->variant_check(kernels, count, &device);
    lds_args = true; /* every launch may carry dynamic shared memory (HSAD_KARG_LDS_BYTES) */
  } else {
#ifndef HSAD_NO_AMD
    s = vs_check_amd(kernels, count, &lds_args);
    device = kernels[0]->program->device;
#else
    s = hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_variant_set_create: AMD kernels in a build without "
                  "AMD");
#endif
  }
  if (s) return s;
  hsad_variant_set_t *set = calloc(1, sizeof *set);
  if (!set)
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "hsad_variant_set_create: %zu bytes", sizeof *set);
  set->count = count;
  set->lds_args = lds_args;
  set->ops = ops;
  set->device = device;
  set->name = hsad_device_kernel_desc(kernels[0])->name;
  for (uint32_t i = 0; i < count; i++) {
    set->kernels[i] = kernels[i];
    set->meta[i] = hsad_device_kernel_desc(kernels[i])->codeobj_kernel;
    set->holds[i] = hsad_submit_kernel_hold(kernels[i]); /* its program outlives the set */
  }
  pthread_mutex_init(&set->lock, NULL);
  *out_set = set;
  return HSAD_OK;
}

hsad_status_t hsad_variant_set_from_programs(hsad_program_t *const *programs, uint32_t count,
                                             const char *name, hsad_variant_set_t **out_set) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_variant_set_from_programs", {programs, "programs"},
                                   {name, "name"}, {out_set, "out_set"});
  if (ns) return ns;
  if (count == 0 || count > HSAD_VARIANT_MAX)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_variant_set_from_programs: %u variants "
                     "(1..%u)", count, HSAD_VARIANT_MAX);
  const hsad_device_kernel_t *k[HSAD_VARIANT_MAX];
  for (uint32_t i = 0; i < count; i++) {
    hsad_status_t s = hsad_program_kernel(programs[i], name, &k[i]);
    if (s) return s;
  }
  return hsad_variant_set_create(k, count, out_set);
}

void hsad_variant_set_destroy(hsad_variant_set_t *set) {
  if (!set) return;
  for (uint32_t i = 0; i < set->count; i++)
    hsad_submit_kernel_release(set->kernels[i], set->holds[i]);
  pthread_mutex_destroy(&set->lock);
  free(set);
}

uint32_t hsad_variant_set_count(const hsad_variant_set_t *set) { return set ? set->count : 0; }

const hsad_device_kernel_t *hsad_variant_set_kernel(const hsad_variant_set_t *set, uint32_t i) {
  return set && i < set->count ? set->kernels[i] : NULL;
}

hsad_status_t hsad_variant_set_stats(hsad_variant_set_t *set, hsad_variant_set_stats_t *out) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_variant_set_stats", {set, "set"}, {out, "out_stats"});
  if (s) return s;
  pthread_mutex_lock(&set->lock);
  uint32_t keys = 0;
  for (uint32_t i = 0; i < HSAD_VARIANT_CACHE_SLOTS; i++)
    keys += atomic_load_explicit(&set->words[i], memory_order_relaxed) != 0;
  *out = (hsad_variant_set_stats_t){
      .rule_runs = atomic_load_explicit(&set->rule_runs, memory_order_relaxed),
      .lock_takes = set->lock_takes, .cached_keys = keys};
  pthread_mutex_unlock(&set->lock);
  return HSAD_OK;
}

hsad_status_t hsad_variant_set_candidate(hsad_variant_set_t *set, uint32_t i,
                                         uint32_t workgroup_size, uint32_t dynamic_lds,
                                         hsad_variant_choice_t *out_choice) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_variant_set_candidate", {set, "set"},
                                  {out_choice, "out_choice"});
  if (s) return s;
  if (i >= set->count)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_variant_set_candidate: variant %u of %u", i,
                     set->count);
  s = vs_rule(set, i, 1, workgroup_size, dynamic_lds, out_choice);
  if (!s) out_choice->index = i;
  return s;
}

hsad_status_t hsad_variant_set_select(hsad_variant_set_t *set, uint32_t workgroup_size,
                                      uint32_t dynamic_lds, hsad_variant_choice_t *out_choice,
                                      bool *out_cached) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_variant_set_select", {set, "set"},
                                  {out_choice, "out_choice"});
  if (s) return s;
  return vs_choose(set, workgroup_size, dynamic_lds, out_choice, out_cached);
}

/* Everything but a hit in the key's home slot: the probe, the rule on a miss (or variant 0 for
 * geometry its checks refuse), then the dispatch. */
static __attribute__((noinline)) hsad_status_t
vs_dispatch_slow(hsad_queue_t *q, hsad_variant_set_t *set, const hsad_launch_t *l,
                 uint64_t deadline_ns, hsad_completion_t *out_completion,
                 uint64_t *out_packet_id) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_variant_dispatch", {set, "set"}, {l, "launch"});
  if (ns) return ns;
  uint64_t wg = vs_flat_size(l);
  uint64_t lds = set->lds_args ? vs_dynamic_lds(l) : 0;
  uint64_t w = vs_find(set, vs_key(wg, lds));
  const hsad_device_kernel_t *k = set->kernels[0];
  if (w) {
    k = set->kernels[(w >> 32) & 31];
  } else if (l->dims >= 1 && l->dims <= 3 && wg != 0) {
    hsad_variant_choice_t c;
    hsad_status_t s = vs_choose(set, wg, lds, &c, NULL);
    if (s) return s;
    k = set->kernels[c.index];
  }
  return hsad_kernel_dispatch(q, k, l, deadline_ns, out_completion, out_packet_id);
}

/* The hot path: a set without LDS arguments whose key sits in its home slot (the usual case)
 * costs the flat size, one multiply-shift hash, one load and one compare, then a tail call. */
hsad_status_t hsad_variant_dispatch(hsad_queue_t *q, hsad_variant_set_t *set,
                                    const hsad_launch_t *l, uint64_t deadline_ns,
                                    hsad_completion_t *out_completion, uint64_t *out_packet_id) {
  if (DQ_LIKELY(set && l && !set->lds_args)) {
    uint64_t wg = l->block[0];
    if (l->dims > 1) {
      wg *= l->block[1];
      if (l->dims > 2) wg *= l->block[2];
    }
    if (DQ_LIKELY(wg <= VS_WG_MAX)) {
      uint64_t key = 1u | wg << 1;
      uint64_t w = atomic_load_explicit(&set->words[vs_home(key)], memory_order_acquire);
      if (DQ_LIKELY((w & VS_KEY_MASK) == key))
        return hsad_kernel_dispatch(q, set->kernels[(w >> 32) & 31], l, deadline_ns,
                                    out_completion, out_packet_id);
    }
  }
  return vs_dispatch_slow(q, set, l, deadline_ns, out_completion, out_packet_id);
}

/* Whether variant i allows a workgroup of wg work-items: its maximum (AMD's
 * .max_flat_workgroup_size, NVIDIA's CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) and AMD's
 * .reqd_workgroup_size. */
static bool vs_allows(const hsad_variant_set_t *set, uint32_t i, uint64_t wg) {
#ifndef HSAD_NO_AMD
  if (!set->ops) {
    const hsad_kernel_info_t *ki = hsad_kernel_info(set->meta[i]);
    bool has_reqd = ki->present & HSAD_KI_HAS_REQD_WORKGROUP_SIZE;
    uint64_t reqd = (uint64_t)ki->reqd_workgroup_size[0] * ki->reqd_workgroup_size[1] *
                    ki->reqd_workgroup_size[2];
    return wg <= ki->max_flat_workgroup_size && (!has_reqd || reqd == wg);
  }
#endif
  return wg <= hsad_device_kernel_desc(set->kernels[i])->max_flat_workgroup_size;
}

hsad_status_t hsad_variant_set_autotune(hsad_variant_set_t *set, hsad_queue_t *q,
                                        const hsad_launch_t *l, uint64_t deadline_ns,
                                        hsad_variant_tuning_t *out) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_variant_set_autotune", {set, "set"}, {q, "queue"},
                                   {l, "launch"});
  if (ns) return ns;
  const char *name = set->name;
  hsad_device_t *qd = hsad_queue_device(q);
  if (qd != set->device)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_variant_set_autotune: kernel '%s': the "
                     "queue is on device %u, the set's variants on device %u", name,
                     qd ? hsad_device_info(qd)->index : UINT32_MAX,
                     hsad_device_info(set->device)->index);
  bool profiling;
#ifndef HSAD_NO_AMD
  if (!hsad_queue_ops(q)) profiling = q->profiling;
  else
#endif
    profiling = hsad_queue_ops(q)->queue_profiling && hsad_queue_ops(q)->queue_profiling(q);
  if (!profiling)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_variant_set_autotune: kernel '%s': the queue "
                     "was created without profiling (hsad_queue_options_t.profiling): no "
                     "device times to compare", name);
  uint64_t wg = vs_flat_size(l), lds = set->lds_args ? vs_dynamic_lds(l) : 0;
  /* the variants allowed at this size: those the rule considers (an error when none) */
  hsad_variant_choice_t meta;
  hsad_status_t s = vs_rule(set, 0, set->count, wg, lds, &meta);
  if (s) return s;
  hsad_variant_tuning_t t = {.count = set->count};
  hsad_status_t refused = HSAD_OK;
  char refusal[512] = "";
  uint32_t best = UINT32_MAX;
  for (uint32_t i = 0; i < set->count; i++) {
    t.ns[i] = UINT64_MAX;
    if (!vs_allows(set, i, wg)) continue;
    hsad_completion_t c;
    s = hsad_kernel_dispatch(q, set->kernels[i], l, deadline_ns, &c, NULL);
    if (s == HSAD_ERR_QUEUE_ERROR || s == HSAD_ERR_CLOSED || s == HSAD_ERR_TIMEOUT ||
        s == HSAD_ERR_INVALID_ARGUMENT)
      return s;
    if (s) { /* refused for this variant: infinitely slow */
      refused = s;
      snprintf(refusal, sizeof refusal, "variant %u: %s", i, hsad_last_error());
      continue;
    }
    /* c.packet_id is the dispatch (on a profiling queue the epoch rides on a barrier-AND
     * after it; the dispatch's timestamps are in its slot's signal) */
    s = hsad_completion_wait(&c, deadline_ns);
    if (s) return s;
    uint64_t start = 0, end = 0;
    s = hsad_completion_times(&c, &start, &end);
    if (s) return s;
    t.ns[i] = end - start;
    t.timed++;
    if (best == UINT32_MAX || t.ns[i] < t.ns[best]) best = i;
  }
  if (best == UINT32_MAX)
    return hsad_fail(refused ? refused : HSAD_ERR_WORKGROUP,
                     "hsad_variant_set_autotune: kernel '%s': no variant ran at workgroup size "
                     "%llu (%s)", name, (unsigned long long)wg, refusal);
  /* the winner's metadata figures at this size: the rule over it alone */
  hsad_variant_choice_t c;
  s = vs_rule(set, best, 1, wg, lds, &c);
  if (s) return s;
  c.index = best;
  c.reason = HSAD_VARIANT_MEASURED;
  c.candidates = meta.candidates;
  (void)vs_store(set, vs_key(wg, lds), &c, true);
  t.choice = c;
  if (out) *out = t;
  hsad_clear_error();
  return HSAD_OK;
}

#ifndef HSAD_WITH_NVIDIA
hsad_status_t hsad_nv_program_compile_variants(hsad_device_t *device, const char *source,
                                               const char *source_name,
                                               const struct hsad_nv_compile_options *opts,
                                               const hsad_nv_budget_t *budgets, uint32_t count,
                                               hsad_program_t **out_programs, char **out_log) {
  (void)device, (void)source, (void)source_name, (void)opts, (void)budgets, (void)count;
  (void)out_programs;
  if (out_log) *out_log = NULL;
  return hsad_fail(HSAD_ERR_UNSUPPORTED, "hsad_nv_program_compile_variants: this libhsad was "
                   "built without the NVIDIA backend (make BACKENDS=amd)");
}
#endif

#ifndef HSAD_NO_AMD
hsad_status_t hsad_program_compile_variants(hsad_device_t *device, const char *source,
                                            size_t source_size, const char *source_name,
                                            const hsad_compile_options_t *opts,
                                            const hsad_variant_budget_t *budgets, uint32_t count,
                                            hsad_program_t **out_programs, char **out_log) {
  if (out_log) *out_log = NULL;
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_program_compile_variants", {device, "device"},
                                   {source, "source"}, {source_name, "source_name"},
                                   {opts, "opts"}, {budgets, "budgets"},
                                   {out_programs, "out_programs"});
  if (ns) return ns;
  if (count == 0 || count > HSAD_VARIANT_MAX)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_program_compile_variants: %u variants "
                     "(1..%u)", count, HSAD_VARIANT_MAX);
  hsad_compile_options_t o = *opts;
  if (!o.target) o.target = device->info.isa_name;
  hsad_codeobj_t *co[HSAD_VARIANT_MAX];
  hsad_status_t s =
      hsad_codeobj_compile_variants(source, source_size, source_name, &o, budgets, count, co,
                                    out_log);
  if (s) return s;
  uint32_t loaded = 0;
  for (; loaded < count && !s; loaded++) {
    const hsad_codeobj_info_t *ci = hsad_codeobj_info(co[loaded]);
    s = hsad_program_load_memory(device, ci->image, ci->image_size, ci->name,
                                 &out_programs[loaded]);
    if (s) break;
  }
  for (uint32_t i = 0; i < count; i++) hsad_codeobj_destroy(co[i]);
  if (s) {
    for (uint32_t i = 0; i < loaded; i++) {
      hsad_program_destroy(out_programs[i]);
      out_programs[i] = NULL;
    }
    return s;
  }
  return HSAD_OK;
}
#endif
