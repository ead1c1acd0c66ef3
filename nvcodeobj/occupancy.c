/* occupancy.c - blocks per SM of a kernel (the CUDA Occupancy Calculator's rules).
 *
 * Limits: CUDA C++ Programming Guide, "Features and Technical Specifications", table
 * "Technical Specifications per Compute Capability" (threads, warps, blocks and registers per SM,
 * shared memory per SM and per block, 1 KB of shared memory reserved per block from 8.0 on).
 * Allocation: registers are given to a warp in units of 256 and warps are placed whole in one of
 * the SM's 4 sub-partitions, each holding a quarter of the register file; a block's shared memory
 * (static + dynamic + the reserved 1 KB) is allocated in units of 128 bytes. These are the
 * Occupancy Calculator's rules, and what the driver's
 * cuOccupancyMaxActiveBlocksPerMultiprocessor answered on an H200 (driver 580) for every block
 * size 32..1024 and five dynamic shared sizes of the project's kernels
 * (tests/data/nvidia/NAME.sm_90.cubin.driver.txt, compared by tests/test_nv_codeobj.c). */
#include "nvcodeobj/nv_internal.h"

static const hsad_nv_sm_limits_t nv_limits[] = {
  /* sm  warp  thr/blk thr/SM warps blocks regs   r/thr unit sub  shared/SM  max/blk  default  rsv   unit */
  {80, 32, 1024, 2048, 64, 32, 65536, 255, 256, 4, 167936, 166912, 49152, 1024, 128},
  {86, 32, 1024, 1536, 48, 16, 65536, 255, 256, 4, 102400, 101376, 49152, 1024, 128},
  {89, 32, 1024, 1536, 48, 24, 65536, 255, 256, 4, 102400, 101376, 49152, 1024, 128},
  {90, 32, 1024, 2048, 64, 32, 65536, 255, 256, 4, 233472, 232448, 49152, 1024, 128},
};

hsad_status_t hsad_nv_sm_limits_get(uint32_t sm, hsad_nv_sm_limits_t *out_limits) {
  if (!out_limits) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_nv_sm_limits_get: out_limits is NULL");
  for (size_t i = 0; i < sizeof nv_limits / sizeof nv_limits[0]; i++)
    if (nv_limits[i].sm == sm) {
      *out_limits = nv_limits[i];
      return HSAD_OK;
    }
  return hsad_fail(HSAD_ERR_UNSUPPORTED,
                   "sm_%u: no occupancy limits for it; known: sm_80, sm_86, sm_89, sm_90", sm);
}

const char *hsad_nv_limiter_name(hsad_nv_limiter_t limiter) {
  switch (limiter) {
  case HSAD_NV_LIMIT_WARPS: return "warps";
  case HSAD_NV_LIMIT_BLOCKS: return "blocks";
  case HSAD_NV_LIMIT_REGISTERS: return "registers";
  case HSAD_NV_LIMIT_SHARED: return "shared";
  default: return "none";
  }
}

static uint32_t round_up(uint32_t v, uint32_t unit) { return unit ? (v + unit - 1) / unit * unit : v; }

/* Warps per SM the register file holds at this many registers per thread. */
static uint32_t warps_by_registers(uint32_t regs, const hsad_nv_sm_limits_t *l, uint32_t *per_warp) {
  *per_warp = round_up(regs * l->warp_size, l->register_alloc_unit);
  if (*per_warp == 0) return l->max_warps_per_sm;
  uint32_t sub = l->register_sub_partitions ? l->register_sub_partitions : 1;
  return l->registers_per_sm / sub / *per_warp * sub;
}

uint32_t hsad_nv_kernel_max_threads(const hsad_nv_kernel_info_t *kernel,
                                    const hsad_nv_sm_limits_t *limits) {
  if (!kernel || !limits) return 0;
  uint32_t per_warp, by_regs = warps_by_registers(kernel->registers, limits, &per_warp);
  uint32_t max = kernel->max_threads ? kernel->max_threads : limits->max_threads_per_block;
  if (max > limits->max_threads_per_block) max = limits->max_threads_per_block;
  if (by_regs * limits->warp_size < max) max = by_regs * limits->warp_size;
  return max;
}

hsad_status_t hsad_nv_occupancy_at(const hsad_nv_kernel_info_t *kernel,
                                   const hsad_nv_sm_limits_t *l, uint32_t block_size,
                                   uint32_t dynamic_shared_bytes, hsad_nv_occupancy_t *o) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_nv_occupancy_at", {kernel, "kernel"}, {l, "limits"},
                                   {o, "out_occupancy"});
  if (ns) return ns;
  if (block_size == 0)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_nv_occupancy_at: block_size is 0");
  *o = (hsad_nv_occupancy_t){.block_size = block_size, .dynamic_shared_bytes = dynamic_shared_bytes};
  o->warps_per_block = (block_size + l->warp_size - 1) / l->warp_size;
  uint32_t warps_regs = warps_by_registers(kernel->registers, l, &o->registers_per_warp);
  uint64_t shared = (uint64_t)kernel->static_shared_bytes + dynamic_shared_bytes +
                    l->reserved_shared_per_block;
  shared = (shared + l->shared_alloc_unit - 1) / l->shared_alloc_unit * l->shared_alloc_unit;
  o->shared_per_block = shared > UINT32_MAX ? UINT32_MAX : (uint32_t)shared;
  o->blocks_by_warps = l->max_warps_per_sm / o->warps_per_block;
  o->blocks_by_blocks = l->max_blocks_per_sm;
  o->blocks_by_registers = warps_regs / o->warps_per_block;
  o->blocks_by_shared = (uint32_t)(l->shared_per_sm / shared);
  o->fits = true;
  if (block_size > l->max_threads_per_block || (kernel->max_threads && block_size > kernel->max_threads))
    o->why_not = "block size above the kernel's or the SM's max threads per block";
  else if (kernel->registers > l->max_registers_per_thread)
    o->why_not = "registers per thread above the SM's limit";
  else if (o->blocks_by_registers == 0)
    o->why_not = "the block's registers exceed the register file";
  else if ((uint64_t)kernel->static_shared_bytes + dynamic_shared_bytes > l->max_shared_per_block)
    o->why_not = "shared memory above the SM's max per block";
  if (o->why_not) {
    o->fits = false;
    return HSAD_OK;
  }
  struct { uint32_t blocks; hsad_nv_limiter_t who; } bounds[] = {
    {o->blocks_by_warps, HSAD_NV_LIMIT_WARPS}, {o->blocks_by_blocks, HSAD_NV_LIMIT_BLOCKS},
    {o->blocks_by_registers, HSAD_NV_LIMIT_REGISTERS}, {o->blocks_by_shared, HSAD_NV_LIMIT_SHARED},
  };
  o->blocks_per_sm = UINT32_MAX;
  for (size_t i = 0; i < 4; i++)
    if (bounds[i].blocks < o->blocks_per_sm) {
      o->blocks_per_sm = bounds[i].blocks;
      o->limiter = bounds[i].who;
    }
  if (o->blocks_per_sm == 0) o->limiter = HSAD_NV_LIMIT_SHARED;
  o->warps_per_sm = o->blocks_per_sm * o->warps_per_block;
  o->occupancy_pct = o->warps_per_sm * 100 / l->max_warps_per_sm;
  return HSAD_OK;
}
