/* launch_check.c - step 1 and 2 of the submit contract (hsad_queue.h): a launch checked
 * against its kernel's metadata and the device, and its kernarg segment built. Cold path:
 * dispatch.c calls it on a miss of the per-thread launch cache, hsad_launch_prepare once, and
 * batches for every entry. Touches no queue state. */
#include <stdio.h>
#include <string.h>

#include "hsa-dispatch/dispatch_internal.h"

/* The kernarg segment within the library's limit and the slots it spans within the ring
 * (hsad_queue.h step 4). */
static hsad_status_t kernarg_fits(const hsad_queue_t *q, const hsad_device_kernel_desc_t *kd) {
  uint32_t ks = kd->kernarg_segment_size;
  if (DQ_UNLIKELY(ks > DQ_KERNARG_SEGMENT_MAX))
    return hsad_fail(HSAD_ERR_RESOURCE_EXHAUSTED, "kernel %s: kernarg segment of %u bytes exceeds "
                     "hsa-dispatch's limit of %u bytes (HSAD_KERNARG_SEGMENT_MAX)", kd->name, ks,
                     DQ_KERNARG_SEGMENT_MAX);
  uint32_t m = (ks + q->ring.kernarg_block - 1) / q->ring.kernarg_block;
  if (DQ_UNLIKELY(m > q->ring.size))
    return hsad_fail(HSAD_ERR_RESOURCE_EXHAUSTED, "kernel %s: kernarg segment of %u bytes spans %u "
                     "kernarg blocks of %u bytes, one per packet slot, but the queue has %u slots",
                     kd->name, ks, m, q->ring.kernarg_block, q->ring.size);
  return HSAD_OK;
}

/* Checks the launch against kernel and device and builds the kernarg segment into `kbuf`
 * (DQ_KERNARG_SEGMENT_MAX bytes, 64-byte aligned). Fills everything of *d but the kernarg address
 * and the completion signal. Touches no queue state. */
static hsad_status_t check_full(const hsad_queue_t *q, const hsad_device_kernel_t *k,
                             const hsad_launch_t *l, hsad_aql_dispatch_t *d, void *kbuf) {
  const hsad_device_kernel_desc_t *kd = &k->desc;
  const hsad_device_info_t *di = &q->device->info;
  if (DQ_UNLIKELY(k->program->device != q->device))
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "kernel %s is loaded on device %u, the queue is "
                     "on device %u", kd->name, k->program->device->info.index, di->index);
  uint32_t dims = l->dims;
  if (DQ_UNLIKELY(dims < 1 || dims > 3))
    return hsad_fail(HSAD_ERR_GRID, "kernel %s: dims %u, must be 1..3", kd->name, dims);
  hsad_dispatch_dims_t dd;
  uint32_t flat = 1;
  for (uint32_t i = 0; i < 3; i++) {
    uint32_t g = l->grid[i], b = l->block[i];
    if (i >= dims) {
      hsad_status_t s = hsad_launch_unused_dim_check(kd->name, i, dims, g, b);
      if (DQ_UNLIKELY(s)) return s;
      g = b = 1;
    } else {
      if (DQ_UNLIKELY(g == 0))
        return hsad_fail(HSAD_ERR_GRID, "kernel %s: grid[%u] is 0 work-items", kd->name, i);
      if (DQ_UNLIKELY(di->max_grid_dim[i] && g > di->max_grid_dim[i]))
        return hsad_fail(HSAD_ERR_GRID, "kernel %s: grid[%u]=%u exceeds device %u's maximum %u "
                         "(HSA_AGENT_INFO_GRID_MAX_DIM)", kd->name, i, g, di->index,
                         di->max_grid_dim[i]);
      if (DQ_UNLIKELY(b == 0))
        return hsad_fail(HSAD_ERR_WORKGROUP, "kernel %s: block[%u] is 0 work-items", kd->name, i);
      if (DQ_UNLIKELY(b > di->max_workgroup_dim[i]))
        return hsad_fail(HSAD_ERR_WORKGROUP, "kernel %s: block[%u]=%u exceeds device %u's "
                         "maximum %u (HSA_AGENT_INFO_WORKGROUP_MAX_DIM)", kd->name, i, b,
                         di->index, di->max_workgroup_dim[i]);
    }
    if (DQ_UNLIKELY(kd->reqd_workgroup_size[0] && b != kd->reqd_workgroup_size[i]))
      return hsad_fail(HSAD_ERR_WORKGROUP, "kernel %s: workgroup %ux%ux%u differs from its "
                       ".reqd_workgroup_size %ux%ux%u", kd->name, l->block[0],
                       dims > 1 ? l->block[1] : 1, dims > 2 ? l->block[2] : 1,
                       kd->reqd_workgroup_size[0], kd->reqd_workgroup_size[1],
                       kd->reqd_workgroup_size[2]);
    dd.grid_size[i] = g;
    dd.workgroup_size[i] = (uint16_t)b;
    dd.global_offset[i] = 0;
    d->grid_size[i] = g;
    d->workgroup_size[i] = (uint16_t)b;
    flat *= b;
  }
  uint64_t items; /* HSA_AGENT_INFO_GRID_MAX_SIZE bounds the whole grid (HSA runtime spec
                    2.3.1, hsa_agent_info_t): ROCr gives UINT32_MAX work-items */
  bool beyond = __builtin_mul_overflow((uint64_t)dd.grid_size[0] * dd.grid_size[1],
                                       (uint64_t)dd.grid_size[2], &items);
  if (DQ_UNLIKELY(beyond || items > q->device->grid_max_size)) {
    char total[32] = "more than 2^64";
    if (!beyond) snprintf(total, sizeof total, "%llu", (unsigned long long)items);
    return hsad_fail(HSAD_ERR_GRID, "kernel %s: grid of %ux%ux%u = %s work-items exceeds "
                     "device %u's maximum of %llu work-items in a grid "
                     "(HSA_AGENT_INFO_GRID_MAX_SIZE)", kd->name, dd.grid_size[0],
                     dd.grid_size[1], dd.grid_size[2], total, di->index,
                     (unsigned long long)q->device->grid_max_size);
  }
  uint32_t max_flat = kd->max_flat_workgroup_size;
  if (di->max_workgroup_size && di->max_workgroup_size < max_flat) max_flat = di->max_workgroup_size;
  if (DQ_UNLIKELY(flat > max_flat))
    return hsad_fail(HSAD_ERR_WORKGROUP, "kernel %s: workgroup of %u work-items exceeds its "
                     ".max_flat_workgroup_size %u (device %u maximum %u)", kd->name, flat,
                     kd->max_flat_workgroup_size, di->index, di->max_workgroup_size);
  hsad_status_t s = kernarg_fits(q, kd);
  if (DQ_UNLIKELY(s)) return s;
  dd.dims = (uint16_t)dims;
  uint32_t group = kd->group_segment_fixed_size;
  s = hsad_kernarg_build(kd->codeobj_kernel, l->args, l->arg_count, &dd, &q->karg_rt, kbuf,
                         DQ_KERNARG_SEGMENT_MAX, &group);
  if (DQ_UNLIKELY(s)) return s;
  if (DQ_UNLIKELY(group > di->lds_bytes))
    return hsad_fail(HSAD_ERR_LDS_LIMIT, "kernel %s: group segment of %u bytes (%u fixed + %u "
                     "dynamic) exceeds device %u's LDS of %u bytes per workgroup", kd->name, group,
                     kd->group_segment_fixed_size, group - kd->group_segment_fixed_size, di->index,
                     di->lds_bytes);
  uint32_t priv = kd->private_segment_fixed_size;
  if (kd->uses_dynamic_stack && q->dynamic_stack > priv) priv = q->dynamic_stack;
  if (DQ_UNLIKELY((uint64_t)priv * di->wavefront_size > HSAD_MAX_WAVE_SCRATCH))
    return hsad_fail(HSAD_ERR_SCRATCH_LIMIT, "kernel %s: private segment of %u bytes per "
                     "work-item x wavefront %u = %llu bytes per wave exceeds the device's scratch "
                     "limit of %u bytes per wave (%u per work-item)%s", kd->name, priv,
                     di->wavefront_size, (unsigned long long)priv * di->wavefront_size,
                     HSAD_MAX_WAVE_SCRATCH, di->max_private_per_work_item,
                     kd->uses_dynamic_stack ? "; the kernel uses a dynamic stack: lower the "
                                              "queue's dynamic_stack_size" : "");
  d->dims = (uint16_t)dims;
  d->private_segment_size = priv;
  d->group_segment_size = group;
  d->kernel_object = kd->kernel_object;
  return HSAD_OK;
}

/* Geometry of a launch checked with few branches; false sends dq_launch_check to check_full,
 * which finds and reports the exact problem. */
static inline bool geometry_fast(const hsad_device_kernel_t *k, const hsad_launch_t *l,
                                 hsad_aql_dispatch_t *d) {
  uint32_t dims = l->dims;
  if (DQ_UNLIKELY(dims - 1u > 2u)) return false;
  uint32_t g0 = l->grid[0], g1 = l->grid[1], g2 = l->grid[2];
  uint32_t b0 = l->block[0], b1 = l->block[1], b2 = l->block[2];
  if (dims < 3) {
    if (DQ_UNLIKELY((g2 | b2) > 1)) return false;
    g2 = b2 = 1;
  }
  if (dims < 2) {
    if (DQ_UNLIKELY((g1 | b1) > 1)) return false;
    g1 = b1 = 1;
  }
  if (DQ_UNLIKELY(!g0 | !g1 | !g2 | !b0 | !b1 | !b2)) return false;
  if (DQ_UNLIKELY((g0 > k->max_grid[0]) | (g1 > k->max_grid[1]) | (g2 > k->max_grid[2]))) return false;
  if (DQ_UNLIKELY((b0 > k->max_dim[0]) | (b1 > k->max_dim[1]) | (b2 > k->max_dim[2]))) return false;
  uint64_t items; /* (g0 * g1 fits 64 bits; the third factor may not) */
  if (DQ_UNLIKELY(__builtin_mul_overflow((uint64_t)g0 * g1, (uint64_t)g2, &items) ||
                  items > k->max_grid_items))
    return false;
  if (DQ_UNLIKELY(b0 * b1 * b2 > k->max_flat)) return false; /* each <= 1024: no overflow */
  if (DQ_UNLIKELY(k->has_reqd) &&
      ((b0 != k->desc.reqd_workgroup_size[0]) | (b1 != k->desc.reqd_workgroup_size[1]) |
       (b2 != k->desc.reqd_workgroup_size[2])))
    return false;
  d->dims = (uint16_t)dims;
  d->grid_size[0] = g0;
  d->grid_size[1] = g1;
  d->grid_size[2] = g2;
  d->workgroup_size[0] = (uint16_t)b0;
  d->workgroup_size[1] = (uint16_t)b1;
  d->workgroup_size[2] = (uint16_t)b2;
  return true;
}

_Thread_local dq_built_t dq_scratch;

hsad_status_t dq_launch_check(const hsad_queue_t *q, const hsad_device_kernel_t *k,
                              const hsad_launch_t *l, dq_built_t *c) {
  hsad_aql_dispatch_t d;
  hsad_status_t s = HSAD_OK;
  if (DQ_UNLIKELY(k->ops)) /* another vendor's kernel: its uid never hits the launch cache */
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "kernel %s is loaded on a %s device, the queue "
                     "is on device %u (AMD)", k->ops->kernel_desc(k)->name, k->ops->name,
                     q->device->info.index);
  if (DQ_LIKELY(geometry_fast(k, l, &d) && k->program->device == q->device)) {
    if (DQ_UNLIKELY(k->desc.kernarg_segment_size > q->ring.kernarg_block)) {
      s = kernarg_fits(q, &k->desc);
      if (s) return s;
    }
    hsad_dispatch_dims_t dd = {.dims = d.dims};
    for (int i = 0; i < 3; i++) {
      dd.grid_size[i] = d.grid_size[i];
      dd.workgroup_size[i] = d.workgroup_size[i];
    }
    uint32_t group = k->desc.group_segment_fixed_size;
    s = hsad_kernarg_build(k->desc.codeobj_kernel, l->args, l->arg_count, &dd, &q->karg_rt,
                           c->image, DQ_KERNARG_SEGMENT_MAX, &group);
    if (s) return s;
    if (DQ_UNLIKELY(group > q->lds_bytes))
      return hsad_fail(HSAD_ERR_LDS_LIMIT, "kernel %s: group segment of %u bytes (%u fixed + %u "
                       "dynamic) exceeds device %u's LDS of %u bytes per workgroup", k->desc.name,
                       group, k->desc.group_segment_fixed_size,
                       group - k->desc.group_segment_fixed_size, q->device->info.index,
                       q->lds_bytes);
    uint32_t priv = k->desc.private_segment_fixed_size;
    if (k->dyn_stack && q->dynamic_stack > priv) priv = q->dynamic_stack;
    if (DQ_UNLIKELY(priv > q->max_private)) s = check_full(q, k, l, &d, c->image); /* reports it */
    if (s) return s;
    d.group_segment_size = group;
    d.private_segment_size = priv;
    d.kernel_object = k->desc.kernel_object;
  } else {
    s = check_full(q, k, l, &d, c->image); /* finds and reports what is wrong */
    if (s) return s;
  }
  d.kernarg_address = NULL;
  d.completion_signal = 0;
  c->d = d;
  return HSAD_OK;
}
