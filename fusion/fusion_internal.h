/* fusion_internal.h - what fusion/'s files share (not installed). */
#ifndef FUSION_INTERNAL_H
#define FUSION_INTERNAL_H

#include "fusion/hsad_fusion.h"

/* The library's copy and fill kernels loaded on one device (blit.c). */
typedef struct fu_blit {
  hsad_device_t *device;
  hsad_program_t *program;  /* owned by the exec that loaded it */
  const hsad_device_kernel_t *copy, *fill;
} fu_blit_t;

/* Compiles (once per processor per process) and loads the kernels on `device`. Errors: those of
 * hsad_codeobj_compile ("graph copy/fill kernels for gfx90a: ...") and
 * hsad_program_load_memory. */
hsad_status_t fu_blit_load(hsad_device_t *device, fu_blit_t *out);

/* Work-items of a copy/fill node of `bytes` bytes (16 per work-item) and its workgroup size. */
uint32_t fu_blit_items(uint64_t bytes, uint32_t *out_block);

/* The largest copy/fill node: 16 bytes per work-item, at most 2^32 - 1 work-items. */
#define FU_BLIT_MAX_BYTES (16ull * 0xffffffffull)

#endif /* FUSION_INTERNAL_H */
