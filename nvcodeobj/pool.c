/* pool.c - a program's allocations, freed together. */
#include "nvcodeobj/nv_internal.h"

#include <stdlib.h>
#include <string.h>

void *nv_pool_alloc(nv_pool_t *pool, size_t size) {
  if (pool->count == pool->cap) {
    size_t cap = pool->cap ? pool->cap * 2 : 32;
    void **np = realloc(pool->ptrs, cap * sizeof *np);
    if (!np) return NULL;
    pool->ptrs = np;
    pool->cap = cap;
  }
  void *p = calloc(1, size ? size : 1);
  if (p) pool->ptrs[pool->count++] = p;
  return p;
}

char *nv_pool_strndup(nv_pool_t *pool, const char *s, size_t n) {
  char *p = nv_pool_alloc(pool, n + 1);
  if (p) memcpy(p, s, n);
  return p;
}

void nv_pool_free(nv_pool_t *pool) {
  for (size_t i = 0; i < pool->count; i++) free(pool->ptrs[i]);
  free(pool->ptrs);
  memset(pool, 0, sizeof *pool);
}
