/* test_dispatch_variants.c - variant sets (hsa-dispatch/hsad_variants.h, issue 9): one source
 * compiled per register budget and loaded, the choice per workgroup size made once and cached,
 * the dispatch going to the chosen build (the packet's kernel_object), the error for a size no
 * variant allows, measured mode on a profiling queue, and the cache under concurrent use. */
#include <hsa/amd_hsa_queue.h>
#include <pthread.h>
#include <stdlib.h>

#include "test_dispatch_util.h"

#define N 4096

typedef struct vfix {
  th_env_t e;
  hsad_program_t *p[3];
  hsad_variant_set_t *set;
  float *a, *b, *c;
} vfix_t;

static char *read_all(const char *path, size_t *out_n) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  s[n] = 0;
  *out_n = (size_t)n;
  return s;
}

/* kernels/vector_add.cl (its twin runs it on kfd-emu) as written (OpenCL's default maximum
 * workgroup size, 256), with a 1024 maximum, and with a 64 maximum and 8 waves per SIMD. */
static void vfix_open(vfix_t *f) {
  th_open(&f->e);
  size_t n;
  char *src = read_all(HSAD_SRCDIR "/kernels/vector_add.cl", &n);
  hsad_compile_options_t o = {.opt_level = 2, .code_object_version = 5};
  hsad_variant_budget_t b[3] = {{0, 0}, {1024, 0}, {64, 8}};
  TH_OK(hsad_program_compile_variants(f->e.dev, src, n, "vector_add.cl", &o, b, 3, f->p, NULL));
  free(src);
  TH_OK(hsad_variant_set_from_programs(f->p, 3, "vector_add", &f->set));
  f->a = th_alloc(&f->e, N * 4);
  f->b = th_alloc(&f->e, N * 4);
  f->c = th_alloc(&f->e, N * 4);
  for (int i = 0; i < N; i++) {
    f->a[i] = (float)i;
    f->b[i] = 0.5f * (float)i;
  }
}

static void vfix_close(vfix_t *f) {
  hsad_buffer_free(f->a);
  hsad_buffer_free(f->b);
  hsad_buffer_free(f->c);
  hsad_variant_set_destroy(f->set);
  for (int i = 0; i < 3; i++) hsad_program_destroy(f->p[i]);
  TH_OK(hsad_runtime_close(f->e.rt));
}

static uint64_t kobj(vfix_t *f, uint32_t i) {
  return hsad_device_kernel_desc(hsad_variant_set_kernel(f->set, i))->kernel_object;
}

static uint32_t n_items = N;

static hsad_launch_t vlaunch(vfix_t *f, hsad_karg_t args[4], uint32_t block) {
  args[0] = HSAD_KARG_PTR(f->a);
  args[1] = HSAD_KARG_PTR(f->b);
  args[2] = HSAD_KARG_PTR(f->c);
  args[3] = HSAD_KARG_VAL(n_items);
  return (hsad_launch_t){.dims = 1, .grid = {N}, .block = {block}, .args = args, .arg_count = 4};
}

static void check_sum(vfix_t *f) {
  for (int i = 0; i < N; i++) cr_assert_eq(f->c[i], 1.5f * (float)i, "c[%d] = %f", i, f->c[i]);
}

Test(variants, choice_cached_per_size_and_dispatched, .timeout = 180) {
  vfix_t f = {0};
  vfix_open(&f);
  cr_assert_eq(hsad_variant_set_count(f.set), 3);
  cr_assert_str_eq(hsad_codeobj_info(hsad_program_codeobj(f.p[1]))->name,
                   "vector_add.cl[variant 1: wg<=1024 waves>=0]");
  const hsad_kernel_info_t *ki[3];
  for (uint32_t i = 0; i < 3; i++)
    ki[i] = hsad_kernel_info(hsad_device_kernel_desc(hsad_variant_set_kernel(f.set, i))
                                 ->codeobj_kernel);
  cr_assert_eq(ki[0]->max_flat_workgroup_size, 256);
  cr_assert_eq(ki[1]->max_flat_workgroup_size, 1024);
  cr_assert_eq(ki[2]->max_flat_workgroup_size, 64);

  hsad_variant_choice_t c;
  bool cached = true;
  /* 64: every variant allows it and none spills; all reach gfx90a's 8 waves per SIMD, so the
   * fewest VGPRs, then the lowest index */
  TH_OK(hsad_variant_set_select(f.set, 64, 0, &c, &cached));
  cr_assert_eq(cached, false);
  cr_assert_eq(c.candidates, 3);
  cr_assert_eq(c.reason, HSAD_VARIANT_NO_SPILL);
  cr_assert_eq(c.waves_per_simd, 8);
  cr_assert_eq(c.spills, 0);
  /* vector_add needs 6 VGPRs under every budget: the tie goes to the lowest index */
  for (uint32_t i = 0; i < 3; i++)
    cr_assert_eq(ki[i]->vgpr_count, 6, "variant %u: %u VGPRs", i, ki[i]->vgpr_count);
  const uint32_t fewest = 0;
  cr_assert_eq(c.index, fewest);
  TH_OK(hsad_variant_set_select(f.set, 64, 0, &c, &cached));
  cr_assert_eq(cached, true);
  cr_assert_eq(c.index, fewest);
  /* 1024: only variant 1 allows it */
  TH_OK(hsad_variant_set_select(f.set, 1024, 0, &c, &cached));
  cr_assert_eq(cached, false);
  cr_assert_eq(c.index, 1);
  cr_assert_eq(c.candidates, 1);
  cr_assert_eq(c.regs, ki[1]->vgpr_count);
  /* 256: variants 0 and 1 */
  TH_OK(hsad_variant_set_select(f.set, 256, 0, &c, &cached));
  cr_assert_eq(c.candidates, 2);
  cr_assert_eq(c.index, 0, "equal VGPRs and waves: the lower index");
  cr_assert_eq(c.waves_per_simd, 8);
  const uint32_t at256 = 0;

  /* dispatches go to the chosen build: the packet's kernel_object */
  hsad_queue_t *q = th_queue(&f.e, 64);
  hsad_karg_t args[4];
  uint32_t blocks[3] = {1024, 256, 64};
  uint32_t want[3] = {1, at256, fewest};
  for (int r = 0; r < 2; r++) /* the second round: every key cached */
    for (int i = 0; i < 3; i++) {
      memset(f.c, 0, N * 4);
      hsad_launch_t l = vlaunch(&f, args, blocks[i]);
      hsad_completion_t done;
      uint64_t id;
      TH_OK(hsad_variant_dispatch(q, f.set, &l, th_in(TH_SEC), &done, &id));
      TH_OK(hsad_completion_wait(&done, th_in(10 * TH_SEC)));
      cr_assert_eq(th_packet(q, id)->kernel_object, kobj(&f, want[i]), "block %u", blocks[i]);
      check_sum(&f);
    }

  /* a workgroup size no variant allows: the kernel and the numbers; nothing submitted */
  uint64_t w0 = ((const amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id;
  hsad_launch_t l = vlaunch(&f, args, 2048);
  hsad_status_t s = hsad_variant_dispatch(q, f.set, &l, th_in(TH_SEC), NULL, NULL);
  cr_assert_eq(s, HSAD_ERR_WORKGROUP, "%s", hsad_status_name(s));
  cr_assert_str_eq(hsad_last_error(),
                   "vector_add.cl[variant 0: wg<=0 waves>=0]: kernel 'vector_add': no variant "
                   "allows workgroup size 2048 (variants allow up to 256, 1024, 64)");
  cr_assert_eq(((const amd_queue_t *)hsad_queue_hsa(q))->write_dispatch_id, w0);
  /* 2-D: 32 x 32 = 1024 work-items, variant 1 */
  hsad_launch_t l2 = {.dims = 2, .grid = {64, 64}, .block = {32, 32}, .args = args,
                      .arg_count = 4};
  uint64_t id;
  TH_OK(hsad_variant_dispatch(q, f.set, &l2, th_in(TH_SEC), NULL, &id));
  cr_assert_eq(th_packet(q, id)->kernel_object, kobj(&f, 1));
  /* geometry the dispatch checks refuse goes to variant 0, whose checks report it */
  hsad_launch_t l0 = vlaunch(&f, args, 0);
  TH_ERR_IS(hsad_variant_dispatch(q, f.set, &l0, th_in(TH_SEC), NULL, NULL), HSAD_ERR_WORKGROUP,
            "kernel vector_add: block[0] is 0 work-items");
  TH_ERR_IS(hsad_variant_dispatch(q, NULL, &l0, 0, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_variant_dispatch: NULL set");
  TH_OK(hsad_queue_wait_idle(q, th_in(10 * TH_SEC)));
  hsad_queue_destroy(q);
  vfix_close(&f);
}

/* A set must be one kernel with one argument list. */
Test(variants, set_of_different_kernels_refused, .timeout = 180) {
  th_env_t e;
  th_open(&e);
  const hsad_device_kernel_t *va, *sx, *k[2];
  hsad_program_t *pa = th_load(&e, "vector_add", 5, "vector_add", &va);
  hsad_program_t *ps = th_load(&e, "saxpy", 5, "saxpy", &sx);
  hsad_variant_set_t *set = NULL;
  k[0] = va;
  k[1] = sx;
  TH_ERR_IS(hsad_variant_set_create(k, 2, &set), HSAD_ERR_INVALID_ARGUMENT,
            "variant 1 is kernel 'saxpy', variant 0 is 'vector_add'");
  TH_ERR_IS(hsad_variant_set_create(k, 17, &set), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_variant_set_create: 17 variants (1..16)");
  hsad_program_t *progs[2] = {pa, ps};
  TH_ERR_IS(hsad_variant_set_from_programs(progs, 2, "vector_add", &set), HSAD_ERR_KERNEL_NOT_FOUND,
            "%s/saxpy-gfx90a-v5.hsaco: no kernel named 'vector_add' (1 kernels)", TEST_KERNDIR);
  cr_assert_null(set);
  k[1] = va; /* the same build twice is a valid (if useless) set */
  TH_OK(hsad_variant_set_create(k, 2, &set));
  hsad_variant_choice_t c;
  TH_OK(hsad_variant_set_select(set, 128, 0, &c, NULL));
  cr_assert_eq(c.index, 0);
  hsad_variant_set_destroy(set);
  hsad_program_destroy(pa);
  hsad_program_destroy(ps);
  TH_OK(hsad_runtime_close(e.rt));
}

/* Measured mode: each allowed variant runs once on a profiling queue; the fastest by its
 * profiling timestamps is cached for that size and used by later dispatches. Device times on
 * kfd-emu are host times of the twin, so the test checks the rule against the reported times,
 * never a timing itself. */
Test(variants, autotune_caches_the_fastest, .timeout = 180) {
  vfix_t f = {0};
  vfix_open(&f);
  hsad_queue_t *plain = th_queue(&f.e, 64), *prof = NULL;
  TH_OK(hsad_queue_create(f.e.dev, &(hsad_queue_options_t){.size = 64, .profiling = true},
                          &prof));
  hsad_karg_t args[4];
  hsad_launch_t l = vlaunch(&f, args, 64);
  hsad_variant_tuning_t t;
  hsad_status_t s = hsad_variant_set_autotune(f.set, plain, &l, th_in(10 * TH_SEC), &t);
  cr_assert_eq(s, HSAD_ERR_UNSUPPORTED);
  cr_assert_str_eq(hsad_last_error(),
                   "hsad_variant_set_autotune: kernel 'vector_add': the queue was created "
                   "without profiling (hsad_queue_options_t.profiling): no device times to "
                   "compare");

  /* 64: all three run */
  memset(f.c, 0, N * 4);
  uint64_t w0 = ((const amd_queue_t *)hsad_queue_hsa(prof))->write_dispatch_id;
  TH_OK(hsad_variant_set_autotune(f.set, prof, &l, th_in(10 * TH_SEC), &t));
  check_sum(&f);
  /* each run: the dispatch and the barrier-AND carrying its epoch */
  cr_assert_eq(((const amd_queue_t *)hsad_queue_hsa(prof))->write_dispatch_id - w0, 6);
  cr_assert_eq(t.count, 3);
  cr_assert_eq(t.timed, 3);
  uint32_t best = 0;
  for (uint32_t i = 0; i < 3; i++) {
    cr_assert_neq(t.ns[i], UINT64_MAX);
    if (t.ns[i] < t.ns[best]) best = i;
  }
  cr_assert_eq(t.choice.index, best);
  cr_assert_eq(t.choice.reason, HSAD_VARIANT_MEASURED);
  cr_assert_eq(t.choice.candidates, 3);
  cr_assert_str_eq(hsad_variant_reason_name(t.choice.reason), "measured fastest");
  hsad_variant_choice_t c;
  bool cached = false;
  TH_OK(hsad_variant_set_select(f.set, 64, 0, &c, &cached));
  cr_assert_eq(cached, true);
  cr_assert_eq(c.reason, HSAD_VARIANT_MEASURED);
  cr_assert_eq(c.index, best);
  uint64_t id;
  TH_OK(hsad_variant_dispatch(plain, f.set, &l, th_in(TH_SEC), NULL, &id));
  cr_assert_eq(th_packet(plain, id)->kernel_object, kobj(&f, best));

  /* 1024: only variant 1 runs; the others are marked not run */
  l = vlaunch(&f, args, 1024);
  TH_OK(hsad_variant_set_autotune(f.set, prof, &l, th_in(10 * TH_SEC), &t));
  cr_assert_eq(t.timed, 1);
  cr_assert_eq(t.ns[0], UINT64_MAX);
  cr_assert_neq(t.ns[1], UINT64_MAX);
  cr_assert_eq(t.ns[2], UINT64_MAX);
  cr_assert_eq(t.choice.index, 1);
  /* 2048: none */
  l = vlaunch(&f, args, 2048);
  TH_ERR_IS(hsad_variant_set_autotune(f.set, prof, &l, th_in(10 * TH_SEC), &t), HSAD_ERR_WORKGROUP,
            "vector_add.cl[variant 0: wg<=0 waves>=0]: kernel 'vector_add': no variant allows "
            "workgroup size 2048 (variants allow up to 256, 1024, 64)");
  TH_OK(hsad_queue_wait_idle(plain, th_in(10 * TH_SEC)));
  hsad_queue_destroy(plain);
  hsad_queue_destroy(prof);
  vfix_close(&f);
}

/* The cache under concurrent use: 4 threads select and dispatch sizes in different orders; every
 * answer equals the single-threaded one. */
typedef struct vthr {
  vfix_t *f;
  hsad_queue_t *q;
  uint32_t seed;
  uint32_t want[4];
  int bad;
} vthr_t;

static const uint32_t sizes[4] = {64, 128, 256, 1024};

static void *vthread(void *arg) {
  vthr_t *t = arg;
  hsad_karg_t args[4];
  for (uint32_t r = 0; r < 400; r++) {
    uint32_t i = (r * 7 + t->seed) & 3;
    hsad_variant_choice_t c;
    if (hsad_variant_set_select(t->f->set, sizes[i], 0, &c, NULL) || c.index != t->want[i])
      t->bad++;
    if (r % 20 == 0) {
      hsad_launch_t l = vlaunch(t->f, args, sizes[i]);
      if (hsad_variant_dispatch(t->q, t->f->set, &l, th_in(10 * TH_SEC), NULL, NULL)) t->bad++;
    }
  }
  return NULL;
}

Test(variants, cache_shared_by_threads, .timeout = 180) {
  vfix_t f = {0};
  vfix_open(&f);
  /* the answers, from a second set (its own empty cache) */
  hsad_variant_set_t *ref = NULL;
  TH_OK(hsad_variant_set_from_programs(f.p, 3, "vector_add", &ref));
  uint32_t want[4];
  for (int i = 0; i < 4; i++) {
    hsad_variant_choice_t c;
    TH_OK(hsad_variant_set_select(ref, sizes[i], 0, &c, NULL));
    want[i] = c.index;
  }
  hsad_variant_set_destroy(ref);
  hsad_queue_t *q = th_queue(&f.e, 256);
  vthr_t t[4];
  pthread_t th[4];
  for (uint32_t i = 0; i < 4; i++) {
    t[i] = (vthr_t){.f = &f, .q = q, .seed = i};
    memcpy(t[i].want, want, sizeof want);
    pthread_create(&th[i], NULL, vthread, &t[i]);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    cr_assert_eq(t[i].bad, 0, "thread %d", i);
  }
  TH_OK(hsad_queue_wait_idle(q, th_in(20 * TH_SEC)));
  check_sum(&f);
  hsad_queue_destroy(q);
  vfix_close(&f);
}

/* tests/data/codeobj/pressure.cl's hog on the device (gfx90a: 512 VGPRs per lane, 8 waves per
 * SIMD at most): 4 builds whose metadata differ, and the choice per workgroup size dispatched
 * (the packet's kernel_object), made once per size (hsad_variant_set_stats). hog has no twin:
 * it completes unexecuted (KFD_EMU_NO_TWIN=noop). */
Test(variants, hog_choice_per_size_on_device, .timeout = 180) {
  setenv("KFD_EMU_NO_TWIN", "noop", 1);
  th_env_t e;
  th_open(&e);
  cr_assert_str_eq(hsad_device_info(e.dev)->name, "gfx90a");
  size_t n;
  char *src = read_all(HSAD_SRCDIR "/tests/data/codeobj/pressure.cl", &n);
  hsad_compile_options_t o = {.opt_level = 2, .code_object_version = 5};
  hsad_variant_budget_t b[4] = {{64, 0}, {0, 0}, {1024, 8}, {1024, 5}};
  hsad_program_t *p[4];
  TH_OK(hsad_program_compile_variants(e.dev, src, n, "pressure.cl", &o, b, 4, p, NULL));
  free(src);
  hsad_variant_set_t *set;
  TH_OK(hsad_variant_set_from_programs(p, 4, "hog", &set));
  const hsad_kernel_info_t *ki[4];
  uint64_t ko[4];
  for (uint32_t i = 0; i < 4; i++) {
    const hsad_device_kernel_desc_t *d = hsad_device_kernel_desc(hsad_variant_set_kernel(set, i));
    ki[i] = hsad_kernel_info(d->codeobj_kernel);
    ko[i] = d->kernel_object;
  }
  /* the budgets as the metadata shows them */
  static const uint32_t maxwg[4] = {64, 256, 1024, 1024}, vgprs[4] = {104, 104, 64, 96},
                        spills[4] = {0, 0, 182, 2}, scratch[4] = {0, 0, 348, 12};
  for (uint32_t i = 0; i < 4; i++) {
    cr_assert_eq(ki[i]->max_flat_workgroup_size, maxwg[i], "variant %u", i);
    cr_assert_eq(ki[i]->vgpr_count, vgprs[i], "variant %u: %u", i, ki[i]->vgpr_count);
    cr_assert_eq(ki[i]->vgpr_spill_count, spills[i], "variant %u: %u", i, ki[i]->vgpr_spill_count);
    cr_assert_eq(ki[i]->private_segment_fixed_size, scratch[i], "variant %u: %u", i,
                 ki[i]->private_segment_fixed_size);
  }
  /* 64: all 4 allow it; 0 and 1 do not spill (104 VGPRs: 4 waves), equal: the lower index.
   * 256: variant 0 is out, 1 is the only one without spills. 1024: 2 and 3 both spill: the
   * least spilling, 3 (2 spills against 182) */
  static const uint32_t sizes[3] = {64, 256, 1024}, want[3] = {0, 1, 3}, cands[3] = {4, 3, 2},
                        waves[3] = {4, 4, 4};
  static const hsad_variant_reason_t why[3] = {HSAD_VARIANT_NO_SPILL, HSAD_VARIANT_NO_SPILL,
                                               HSAD_VARIANT_LEAST_SPILL};
  hsad_queue_t *q = th_queue(&e, 64);
  hsad_variant_set_stats_t st;
  TH_OK(hsad_variant_set_stats(set, &st));
  cr_assert_eq(st.rule_runs, 0);
  cr_assert_eq(st.lock_takes, 0);
  cr_assert_eq(st.cached_keys, 0);
  float *io = th_alloc(&e, 1024 * 256 * 16);
  int32_t iters = 1;
  hsad_karg_t args[2] = {HSAD_KARG_PTR(io), HSAD_KARG_VAL(iters)};
  for (uint32_t s = 0; s < 3; s++) {
    hsad_launch_t l = {.dims = 1, .grid = {sizes[s] * 4}, .block = {sizes[s]}, .args = args,
                       .arg_count = 2};
    for (int r = 0; r < 5; r++) { /* 5 dispatches: the rule runs for the first only */
      hsad_completion_t done;
      uint64_t id;
      TH_OK(hsad_variant_dispatch(q, set, &l, th_in(TH_SEC), &done, &id));
      TH_OK(hsad_completion_wait(&done, th_in(10 * TH_SEC)));
      const hsa_kernel_dispatch_packet_t *pk = th_packet(q, id);
      cr_assert_eq(pk->kernel_object, ko[want[s]], "block %u dispatch %d", sizes[s], r);
      cr_assert_eq(pk->private_segment_size, scratch[want[s]]);
      cr_assert_eq(pk->workgroup_size_x, sizes[s]);
    }
    TH_OK(hsad_variant_set_stats(set, &st));
    cr_assert_eq(st.rule_runs, s + 1, "block %u: %llu rule runs", sizes[s],
                 (unsigned long long)st.rule_runs);
    cr_assert_eq(st.lock_takes, 3 * (s + 1), "block %u: %llu", sizes[s],
                 (unsigned long long)st.lock_takes);
    cr_assert_eq(st.cached_keys, s + 1);
  }
  for (uint32_t s = 0; s < 3; s++) {
    hsad_variant_choice_t c;
    bool cached = false;
    TH_OK(hsad_variant_set_select(set, sizes[s], 0, &c, &cached));
    cr_assert_eq(cached, true);
    cr_assert_eq(c.index, want[s], "block %u: variant %u", sizes[s], c.index);
    cr_assert_eq(c.reason, why[s], "block %u", sizes[s]);
    cr_assert_eq(c.candidates, cands[s], "block %u", sizes[s]);
    cr_assert_eq(c.waves_per_simd, waves[s], "block %u: %u waves", sizes[s], c.waves_per_simd);
    cr_assert_eq(c.spills, spills[want[s]]);
    cr_assert_eq(c.regs, vgprs[want[s]]);
  }
  /* the selects: one lock each (the cached choice's details), no rule */
  TH_OK(hsad_variant_set_stats(set, &st));
  cr_assert_eq(st.rule_runs, 3);
  cr_assert_eq(st.lock_takes, 12);
  TH_ERR_IS(hsad_variant_set_stats(NULL, &st), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_variant_set_stats: NULL set");
  TH_ERR_IS(hsad_variant_set_stats(set, NULL), HSAD_ERR_INVALID_ARGUMENT,
            "hsad_variant_set_stats: NULL out_stats");
  TH_OK(hsad_queue_wait_idle(q, th_in(10 * TH_SEC)));
  hsad_queue_destroy(q);
  hsad_buffer_free(io);
  hsad_variant_set_destroy(set);
  for (int i = 0; i < 4; i++) hsad_program_destroy(p[i]);
  TH_OK(hsad_runtime_close(e.rt));
}

/* Measured mode on a queue of another device (KFD_EMU_GPUS=2): refused before anything runs,
 * naming both devices. */
Test(variants, autotune_refuses_a_queue_of_another_device, .timeout = 180) {
  setenv("KFD_EMU_GPUS", "2", 1);
  vfix_t f = {0};
  vfix_open(&f);
  hsad_device_t *d1;
  TH_OK(hsad_device_get(f.e.rt, 1, &d1));
  hsad_queue_t *q1 = NULL;
  TH_OK(hsad_queue_create(d1, &(hsad_queue_options_t){.size = 64, .profiling = true}, &q1));
  hsad_karg_t args[4];
  hsad_launch_t l = vlaunch(&f, args, 64);
  uint64_t w0 = ((const amd_queue_t *)hsad_queue_hsa(q1))->write_dispatch_id;
  TH_ERR_IS(hsad_variant_set_autotune(f.set, q1, &l, th_in(10 * TH_SEC), NULL),
            HSAD_ERR_INVALID_ARGUMENT, "hsad_variant_set_autotune: kernel 'vector_add': the "
            "queue is on device 1, the set's variants on device 0");
  cr_assert_eq(((const amd_queue_t *)hsad_queue_hsa(q1))->write_dispatch_id, w0);
  hsad_variant_choice_t c;
  bool cached = true;
  TH_OK(hsad_variant_set_select(f.set, 64, 0, &c, &cached));
  cr_assert_eq(cached, false, "nothing was cached");
  hsad_queue_destroy(q1);
  vfix_close(&f);
}
