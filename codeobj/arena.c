/* arena.c - bump allocator for the strings and arrays of one code object; FNV-1a hash. */
#include "codeobj/codeobj_internal.h"

#include <stdlib.h>
#include <string.h>

struct co_arena_block {
  co_arena_block_t *next;
  size_t used, cap;
  _Alignas(8) unsigned char data[];
};

enum { CO_ARENA_BLOCK = 64 * 1024 };

void *co_arena_alloc(co_arena_t *arena, size_t size) {
  size = (size + 7u) & ~(size_t)7u;
  co_arena_block_t *b = arena->head;
  if (!b || b->cap - b->used < size) {
    size_t cap = size > CO_ARENA_BLOCK ? size : CO_ARENA_BLOCK;
    b = malloc(sizeof *b + cap);
    if (!b) return NULL;
    b->used = 0;
    b->cap = cap;
    b->next = arena->head;
    arena->head = b;
  }
  void *p = b->data + b->used;
  b->used += size;
  memset(p, 0, size);
  return p;
}

char *co_arena_strndup(co_arena_t *arena, const char *s, size_t n) {
  char *p = co_arena_alloc(arena, n + 1);
  if (!p) return NULL;
  if (n) memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

void co_arena_free(co_arena_t *arena) {
  co_arena_block_t *b = arena->head;
  while (b) {
    co_arena_block_t *next = b->next;
    free(b);
    b = next;
  }
  arena->head = NULL;
}

uint32_t co_hash_str(const char *s, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 16777619u;
  }
  return h;
}
