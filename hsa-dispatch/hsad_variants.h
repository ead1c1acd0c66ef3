/* hsad_variants.h - variant sets: several builds of one kernel dispatched as one kernel (issue
 * 9, "Variants and selection"). Included by hsad.h.
 *
 * A variant set holds up to HSAD_VARIANT_MAX loaded builds of one kernel (same .name, same
 * explicit arguments) on one device, typically one per register budget
 * (hsad_program_compile_variants). hsad_variant_dispatch takes a launch like
 * hsad_kernel_dispatch and submits it with the variant chosen for the launch's workgroup size
 * (flat: block[0] x block[1] x block[2] over `dims`) and dynamic LDS (the sum of its
 * HSAD_KARG_LDS arguments): the rule is codeobj's hsad_kernel_variant_select (metadata only:
 * among variants allowing the size, the highest waves per SIMD without spills and without more
 * scratch; if every variant spills, the least spilling; ties to fewer VGPRs, then the lower
 * index), or, after hsad_variant_set_autotune, the variant measured fastest.
 *
 * The choice cache: the choice is made once per (set, workgroup size, dynamic LDS) and kept in
 * the set, in a table of HSAD_VARIANT_CACHE_SLOTS 64-bit words (open addressing, linear
 * probing). A word packs the key (flat size < 4096, dynamic LDS < 2^17 bytes) and the chosen
 * index; a dispatch whose key is cached costs a few loads and compares before
 * hsad_kernel_dispatch (which then finds the chosen kernel in the calling thread's launch cache
 * as usual): no lock, no allocation, no counter (hsad_variant_set_stats counts misses only).
 * Measured with callgrind (hsad bench dispatch --rounds 3 --count 1000, path hsad-variants,
 * 10,000 submits of an empty kernel, warm caches): 176.0 instructions per submit against 149.0
 * for hsad_kernel_dispatch itself. A miss runs the rule, then takes the set's
 * mutex to insert the word with one release store (dispatchers read words with acquire loads,
 * never a torn entry). Keys outside the packed ranges, and keys beyond a full table, are chosen
 * by the rule on every dispatch (correct, slower). The words only ever name immutable data (the
 * kernels are fixed at creation), so a dispatcher racing with an insert or an autotune update
 * uses either the old or the new choice, both valid. The choice details (hsad_variant_choice_t)
 * live beside the words and are read and written under the mutex only.
 *
 * NVIDIA (issue 22): the same sets hold NVIDIA kernels (hsad_nv_program_compile_variants below
 * builds them: the source through NVRTC to PTX once, then the driver's JIT once per budget).
 * The metadata rule there (nvidia/nv_variants.c): among variants allowing the block (the
 * driver's CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, and at least one resident block), those
 * with the least local memory per thread (CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: spills and stack;
 * the driver gives no separate spill count); among them the most resident blocks per SM
 * (cuOccupancyMaxActiveBlocksPerMultiprocessor at the block and the dynamic shared bytes),
 * ties to fewer registers (CU_FUNC_ATTRIBUTE_NUM_REGS), then the lower index. Reason
 * HSAD_VARIANT_NO_SPILL when that least is 0 bytes, else HSAD_VARIANT_LEAST_SPILL. An NVIDIA
 * choice reports regs = registers per thread, scratch_per_work_item = local bytes per thread,
 * spills 0, blocks_per_sm, and waves_per_simd = resident warps per SM sub-partition (blocks x
 * warps per block / 4). The cache key is (block size, dynamic shared bytes) as on AMD (the
 * dynamic shared memory, HSAD_KARG_LDS_BYTES, is part of every NVIDIA key, so NVIDIA
 * dispatches take hsad_variant_dispatch's probing path, a few loads more than AMD's hit).
 *
 * Thread safety: hsad_variant_dispatch, hsad_variant_set_select and hsad_variant_set_autotune
 * may run concurrently on one set from any threads. Create and destroy are not concurrent with
 * use of the same set. The set does not own its kernels: their programs must outlive it.
 */
#ifndef HSAD_VARIANTS_H
#define HSAD_VARIANTS_H

#include "hsa-dispatch/hsad.h" /* program, device and kernel types; hsad_queue.h */

/* nvcodeobj/hsad_nv_codeobj.h's hsad_nv_compile_options_t (include it to fill one) */
struct hsad_nv_compile_options;

#ifdef __cplusplus
extern "C" {
#endif

/* Variants per set (the limit of hsad_kernel_variant_select). */
#define HSAD_VARIANT_MAX 16
/* (workgroup size, dynamic LDS) choices a set caches. */
#define HSAD_VARIANT_CACHE_SLOTS 32

typedef struct hsad_variant_set hsad_variant_set_t;

#ifndef HSAD_NO_AMD
/* Compiles `source` once per budget (codeobj's hsad_codeobj_compile_variants: budgets[i] = {0,
 * 0} is the source as written; opts->budget is ignored; opts->target NULL: the device's ISA
 * name) and loads each result on `device`: out_programs[i] (caller destroys each with
 * hsad_program_destroy) holds the build of budgets[i], labelled "NAME[variant I: wg<=N
 * waves>=W]". *out_log (may be NULL): the last compile's log, malloc'd. On failure no program
 * is returned. Errors: those of hsad_codeobj_compile_variants (a budget the compiler cannot
 * meet: HSAD_ERR_COMPILE naming the kernel and the counts) and hsad_program_load_memory;
 * HSAD_ERR_INVALID_ARGUMENT (NULL, count 0 or above HSAD_VARIANT_MAX). Thread-safe. */
hsad_status_t hsad_program_compile_variants(hsad_device_t *device, const char *source,
                                            size_t source_size, const char *source_name,
                                            const hsad_compile_options_t *opts,
                                            const hsad_variant_budget_t *budgets, uint32_t count,
                                            hsad_program_t **out_programs, char **out_log);
#endif

/* An NVIDIA register budget: options of the driver's JIT (cuModuleLoadDataEx), which compiles
 * the PTX of the unchanged source once per budget. max_registers is NVRTC's and nvcc's
 * -maxrregcount for the one kernel; max_threads and min_blocks_per_sm are what
 * __launch_bounds__(max_threads, min_blocks_per_sm) says, set without editing the source. The
 * driver ignores CU_JIT_MIN_CTA_PER_SM next to CU_JIT_MAX_REGISTERS, and a kernel's own
 * .maxntid / .minnctapersm directives (its __launch_bounds__) win over the options. {0, 0, 0}
 * is the source as written. */
#define HSAD_NV_MIN_REGISTERS 24u /* ptxas raises a smaller cap to 24 ("adjusting per thread
                                     register count of 16 to lower bound of 24", sm_80..sm_120) */
typedef struct hsad_nv_budget {
  uint32_t max_registers;     /* CU_JIT_MAX_REGISTERS: 24..255 registers per thread; 0: none */
  uint32_t max_threads;       /* CU_JIT_MAX_THREADS_PER_BLOCK: 1..1024; 0: none */
  uint32_t min_blocks_per_sm; /* CU_JIT_MIN_CTA_PER_SM: 1..32, needs max_threads; 0: none */
} hsad_nv_budget_t;

/* NVIDIA variants: compiles CUDA C++ `source` (NUL-terminated) once with NVRTC to PTX
 * (hsad_nv_compile_ptx; opts->target NULL: the device's sm_NN) and loads it on `device` once
 * per budget with the budget's JIT options: out_programs[i] (caller destroys each with
 * hsad_program_destroy) holds the build of budgets[i], labelled "NAME[variant I: regs<=R]",
 * "NAME[variant I: threads<=T blocks>=B]" or "NAME[variant I: as written]". Each result is
 * checked against its budget: every kernel's registers at most max_registers, and with
 * max_threads and min_blocks_per_sm, min_blocks_per_sm blocks of max_threads resident
 * (cuOccupancyMaxActiveBlocksPerMultiprocessor); else HSAD_ERR_COMPILE "cannot meet" naming
 * the variant, the kernel and the numbers (a kernel's own __launch_bounds__ win over the
 * options). *out_log (may be NULL): NVRTC's log, malloc'd.
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL, count 0 or above HSAD_VARIANT_MAX; a budget out of
 * range: max_registers below HSAD_NV_MIN_REGISTERS or above 255, max_threads above 1024,
 * min_blocks_per_sm above 32 or without max_threads, max_registers with min_blocks_per_sm: the
 * message names the variant and the limit), HSAD_ERR_UNSUPPORTED (device is not an NVIDIA
 * device of the open runtime, or the library has no NVIDIA backend), those of
 * hsad_nv_compile_ptx and of the driver's load (HSAD_ERR_DRIVER with the JIT's error log).
 * On failure no program is returned. Thread-safe. */
hsad_status_t hsad_nv_program_compile_variants(hsad_device_t *device, const char *source,
                                               const char *source_name,
                                               const struct hsad_nv_compile_options *opts,
                                               const hsad_nv_budget_t *budgets, uint32_t count,
                                               hsad_program_t **out_programs, char **out_log);

/* Makes a set of `count` variants of one kernel (kernels[i]: variant i). Checks: every kernel
 * non-NULL and of the same device, the same .name, and the same explicit arguments (count,
 * .size, .value_kind each) as kernels[0], so one launch fits them all.
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL, count 0 or above HSAD_VARIANT_MAX, a mismatch: the
 * message names the variant, the kernel and the field), HSAD_ERR_OUT_OF_MEMORY. Thread-safe.
 * The set holds its kernels: hsad_program_destroy of a variant's program is HSAD_ERR_IN_USE
 * until hsad_variant_set_destroy. */
hsad_status_t hsad_variant_set_create(const hsad_device_kernel_t *const *kernels, uint32_t count,
                                      hsad_variant_set_t **out_set);

/* The same with kernel `name` of each program (programs[i]: variant i). Errors: as
 * hsad_variant_set_create, those of hsad_program_kernel (HSAD_ERR_KERNEL_NOT_FOUND naming the
 * program). */
hsad_status_t hsad_variant_set_from_programs(hsad_program_t *const *programs, uint32_t count,
                                             const char *name, hsad_variant_set_t **out_set);

/* Frees the set (NULL ok); dispatches already submitted are unaffected. */
void hsad_variant_set_destroy(hsad_variant_set_t *set);

/* Variants in the set (0 for NULL), and variant i (NULL when out of range). */
uint32_t hsad_variant_set_count(const hsad_variant_set_t *set);
const hsad_device_kernel_t *hsad_variant_set_kernel(const hsad_variant_set_t *set, uint32_t i);

/* The variant the set dispatches at `workgroup_size` work-items (flat) with `dynamic_lds`
 * extra LDS bytes: the cached choice (reason HSAD_VARIANT_MEASURED after an autotune of that
 * key), else the metadata rule's choice, which is cached. *out_cached (may be NULL): whether
 * the choice was in the cache before the call. Errors: HSAD_ERR_INVALID_ARGUMENT (NULL set or
 * out_choice), HSAD_ERR_WORKGROUP (no variant allows the size: "LABEL: kernel 'k': no variant
 * allows workgroup size 2048 (variants allow up to 256, 1024)"), HSAD_ERR_UNSUPPORTED /
 * HSAD_ERR_LDS_LIMIT from the occupancy model. Thread-safe. */
hsad_status_t hsad_variant_set_select(hsad_variant_set_t *set, uint32_t workgroup_size,
                                      uint32_t dynamic_lds, hsad_variant_choice_t *out_choice,
                                      bool *out_cached);

/* Variant i's figures at `workgroup_size` and `dynamic_lds`, as the metadata rule sees them
 * (the rule over variant i alone: reason, candidates 1), whether or not the rule would choose
 * it; no cache is read or written. Errors: HSAD_ERR_INVALID_ARGUMENT (NULL, i out of range),
 * HSAD_ERR_WORKGROUP (the variant does not allow the size; the message as
 * hsad_variant_set_select's). Thread-safe. */
hsad_status_t hsad_variant_set_candidate(hsad_variant_set_t *set, uint32_t i,
                                         uint32_t workgroup_size, uint32_t dynamic_lds,
                                         hsad_variant_choice_t *out_choice);

/* What the set's cache did (a statistic for tests and tuning). Hits of hsad_variant_dispatch
 * are not counted: the hit path has no counter, so its cost is unchanged. */
typedef struct hsad_variant_set_stats {
  uint64_t rule_runs;    /* times the metadata rule (hsad_kernel_variant_select) ran for a
                            key not in the cache: once per (workgroup size, dynamic LDS) while
                            the key fits the cache, more when several threads miss the same
                            key at once (each runs the rule; one choice is kept) */
  uint64_t lock_takes;   /* times a dispatch, select or autotune took the set's mutex: a
                            dispatch hit takes none; a miss takes it 3 times (look up, insert,
                            read back); hsad_variant_set_select takes it once per call for a
                            cached key (to copy the choice details) */
  uint32_t cached_keys;  /* keys in the cache, at most HSAD_VARIANT_CACHE_SLOTS */
} hsad_variant_set_stats_t;

/* Copies the set's counters into *out_stats (under the set's mutex; not counted in
 * lock_takes). Errors: HSAD_ERR_INVALID_ARGUMENT ("hsad_variant_set_stats: NULL set", or
 * NULL out_stats). Thread-safe. */
hsad_status_t hsad_variant_set_stats(hsad_variant_set_t *set, hsad_variant_set_stats_t *out_stats);

/* hsad_kernel_dispatch of the launch with the set's variant for its workgroup size and dynamic
 * LDS (see the cache above). Arguments, completion, packet id, deadline and every error as
 * hsad_kernel_dispatch, plus: HSAD_ERR_INVALID_ARGUMENT (NULL set), HSAD_ERR_WORKGROUP when no
 * variant allows the workgroup size (message as hsad_variant_set_select). A launch with dims
 * outside 1..3 or a workgroup size 0 goes to variant 0, whose checks report it.
 * Thread-safe (multi-producer); a cached key takes no lock. */
hsad_status_t hsad_variant_dispatch(hsad_queue_t *queue, hsad_variant_set_t *set,
                                    const hsad_launch_t *launch, uint64_t deadline_ns,
                                    hsad_completion_t *out_completion, uint64_t *out_packet_id);

/* Result of one autotune. */
typedef struct hsad_variant_tuning {
  hsad_variant_choice_t choice;  /* the fastest (reason HSAD_VARIANT_MEASURED); its metadata
                                    figures at the workgroup size as hsad_kernel_variant_select
                                    gives them */
  uint32_t count;                /* variants in the set */
  uint32_t timed;                /* variants that ran */
  uint64_t ns[HSAD_VARIANT_MAX]; /* device time of variant i (profiling end - start, ns);
                                    UINT64_MAX: not run (it does not allow the workgroup size,
                                    or hsad_kernel_dispatch refused the launch for it) */
} hsad_variant_tuning_t;

/* Measured mode (what Triton's autotuner does): runs the launch once with each variant that
 * allows its workgroup size, one after the other on the profiling queue `queue`, each waited
 * for (until deadline_ns), times each from its profiling timestamps (hsad_completion_times),
 * and caches the fastest for the launch's (workgroup size, dynamic LDS) in the set, replacing
 * the metadata choice: the cache key is thus (kernel = the set, block size, ISA = the set's
 * device). Ties go to the lower index. A variant whose dispatch is refused counts as infinitely
 * slow (Triton's rule for failing configurations). The launch runs once per timed variant, so
 * it must be safe to repeat (write its outputs, not accumulate into them). *out_tuning may be
 * NULL. Errors: HSAD_ERR_INVALID_ARGUMENT (NULL; a queue of another device than the set's:
 * "hsad_variant_set_autotune: kernel 'k': the queue is on device 1, the set's variants on
 * device 0"; a launch hsad_kernel_dispatch refuses as INVALID_ARGUMENT), HSAD_ERR_UNSUPPORTED
 * (the queue was created
 * without profiling), HSAD_ERR_WORKGROUP (no variant allows the size, or every one was
 * refused: the last refusal's message), the queue's sticky error, HSAD_ERR_TIMEOUT (a run did
 * not complete by the deadline; nothing is cached). Thread-safe; concurrent dispatches of the
 * set use the old choice until the new one is stored. */
hsad_status_t hsad_variant_set_autotune(hsad_variant_set_t *set, hsad_queue_t *queue,
                                        const hsad_launch_t *launch, uint64_t deadline_ns,
                                        hsad_variant_tuning_t *out_tuning);

#ifdef __cplusplus
}
#endif
#endif /* HSAD_VARIANTS_H */
