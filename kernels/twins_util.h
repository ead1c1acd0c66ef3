/* twins_util.h - helpers shared by the host twins in kernels/ (internal to kernels/).
 *
 * Every helper reads kernel arguments through kfd_emu_arg(), i.e. at the offsets and sizes the
 * code object's metadata declares, and checks the argument's value kind, so a kernarg layout
 * bug in a dispatcher (or a kernel whose signature changed without its twin) surfaces as a
 * queue error instead of a silently plausible result.
 */
#ifndef KERNELS_TWINS_UTIL_H
#define KERNELS_TWINS_UTIL_H

#include <stdint.h>

#include "tools/kfd-emu/kfd_emu_twin.h"

/* Nonzero twin result: the metadata does not declare the argument the twin expects. */
#define TW_ERR_ARG 1
/* Nonzero twin result: a pointer the kernel would dereference is NULL, or an access would fall
 * outside the group segment the packet provides. */
#define TW_ERR_FAULT 2
/* Nonzero twin result: a launch shape the kernel's source does not support (documented per
 * kernel in kernels/README.md). */
#define TW_ERR_SHAPE 3

/* True when elements [first, first + count) of size `elem` at p are GPU-accessible memory
 * (kfd_emu_dispatch_t.gpu_accessible); an empty range always is. */
static inline int tw_reach(const kfd_emu_dispatch_t *d, const void *p, uint64_t first,
                           uint64_t count, size_t elem) {
  if (count == 0) return 1;
  if (!p) return 0;
  return !d->gpu_accessible || d->gpu_accessible((const uint8_t *)p + first * elem, count * elem);
}

/* Global ids [*lo, *hi) of a 1-D kernel's workgroup that fall below n. */
static inline void tw_span(const kfd_emu_workgroup_t *wg, uint64_t n, uint64_t *lo, uint64_t *hi) {
  uint64_t b = wg->base[0], e = b + wg->size[0];
  *lo = b < n ? b : n;
  *hi = e < n ? e : n;
}

/* Reads explicit argument `index` as a global (or constant) buffer pointer. */
static inline int tw_arg_ptr(const kfd_emu_dispatch_t *d, uint32_t index, void **out_ptr) {
  uint64_t v;
  if (index >= d->arg_count || d->args[index].kind != KFD_EMU_ARG_GLOBAL_BUFFER) return -1;
  if (kfd_emu_arg(d, index, &v, sizeof(v)) != 0) return -1;
  *out_ptr = (void *)(uintptr_t)v;
  return 0;
}

/* Reads explicit by-value argument `index` of exactly `size` bytes. */
static inline int tw_arg_val(const kfd_emu_dispatch_t *d, uint32_t index, void *out,
                             size_t size) {
  if (index >= d->arg_count || d->args[index].kind != KFD_EMU_ARG_BY_VALUE) return -1;
  return kfd_emu_arg(d, index, out, size);
}

/* Reads a dynamic_shared_pointer argument: its value is the byte offset of the dynamic
 * allocation within the workgroup's group segment (a 32-bit LDS address). */
static inline int tw_arg_lds(const kfd_emu_dispatch_t *d, uint32_t index, uint32_t *out_offset) {
  if (index >= d->arg_count || d->args[index].kind != KFD_EMU_ARG_DYNAMIC_SHARED_POINTER)
    return -1;
  return kfd_emu_arg(d, index, out_offset, sizeof(*out_offset));
}

/* Rows of a workgroup: work-items that share one local id x (size y * size z). A 1-D kernel
 * (one that reads only get_global_id(0)) launched with a 2-D or 3-D grid runs its x-work once per
 * row; twins do the same, one row after another (one legal order of the hardware's race). */
static inline uint64_t tw_rows(const kfd_emu_workgroup_t *wg) {
  return (uint64_t)wg->size[1] * wg->size[2];
}

/* True for the workgroup that holds the work-item with global id (0,0,0). */
static inline int tw_is_first_group(const kfd_emu_workgroup_t *wg) {
  return wg->base[0] == 0 && wg->base[1] == 0 && wg->base[2] == 0 && wg->size[0] > 0 &&
         wg->size[1] > 0 && wg->size[2] > 0;
}

#endif /* KERNELS_TWINS_UTIL_H */
