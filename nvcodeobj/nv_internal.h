/* nv_internal.h - nvcodeobj's private types (not installed). */
#ifndef HSAD_NV_INTERNAL_H
#define HSAD_NV_INTERNAL_H

#include "nvcodeobj/hsad_nv_codeobj.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every allocation of a program, freed together by nv_pool_free. */
typedef struct nv_pool {
  void **ptrs;
  size_t count, cap;
} nv_pool_t;
void *nv_pool_alloc(nv_pool_t *pool, size_t size); /* zeroed; NULL on OOM */
char *nv_pool_strndup(nv_pool_t *pool, const char *s, size_t n);
void nv_pool_free(nv_pool_t *pool);

/* a + b <= limit without overflow */
static inline bool nv_fits(uint64_t off, uint64_t len, uint64_t limit) {
  return off <= limit && len <= limit - off;
}

/* Reads the kernels of one cubin image (size bytes at image, which the caller keeps alive) into
 * entry->kernels / kernel_count / sm / arch; `what` names it in messages ("k.cubin" or
 * "k.fatbin: entry 2 (sm_90 ELF at offset 4176)"). Errors as hsad_nv_program_open_memory. */
hsad_status_t nv_cubin_read(nv_pool_t *pool, const char *what, const uint8_t *image, size_t size,
                            hsad_nv_entry_t *entry);

/* Lists a PTX text's .version, .target and .entry names into entry. Never fails but for OOM. */
hsad_status_t nv_ptx_read(nv_pool_t *pool, const char *text, size_t size, hsad_nv_entry_t *entry);

/* True when data looks like PTX: printable text whose first directive is ".version". */
bool nv_is_ptx(const uint8_t *data, size_t size);

#endif
