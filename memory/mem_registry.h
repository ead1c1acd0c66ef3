/* mem_registry.h - the registry of live allocations (memory/ internal). */
#ifndef HSAD_MEM_REGISTRY_H
#define HSAD_MEM_REGISTRY_H

#include "memory/mem_internal.h"

/* One live range: an allocation, a registration or a pool block (kept while the block exists,
 * in use or cached: the block's state says which). */
typedef struct mem_entry {
  uintptr_t base;
  size_t size;                  /* bytes of the range (pool blocks: class bytes) */
  size_t req_size;              /* bytes asked for (pool blocks: see the block's req_size) */
  hsad_mem_kind_t kind;
  hsad_device_t *device;
  int32_t numa_node;
  uint32_t access_mask;
  void *device_ptr;
  hsad_host_pool_t *pool;       /* pool blocks */
  uint32_t block;               /* pool blocks: descriptor index */
  struct hsad_mem_pool *spool;  /* HSAD_MEM_STREAM blocks: their stream-ordered pool */
  bool freed;                   /* HSAD_MEM_STREAM: cached in its pool (kept registered, so a
                                   reuse costs no insert): mem_registry_find answers FREED */
} mem_entry_t;

enum { MEM_FIND_NONE = 0, MEM_FIND_LIVE = 1, MEM_FIND_FREED = 2 };

/* Inserts e; HSAD_ERR_OVERLAP (no message; *out_conflict = the entry in the way) when it
 * overlaps a live entry; clears tombstones it covers. */
hsad_status_t mem_registry_insert(const mem_entry_t *e, mem_entry_t *out_conflict);
/* Removes the entry whose base is `base`; tomb: remember it as freed. */
bool mem_registry_remove(uintptr_t base, bool tomb, mem_entry_t *out);
/* MEM_FIND_LIVE (*out = the entry containing addr), MEM_FIND_FREED (out->kind and the
 * tombstone's range, or the range of a `freed` entry), or MEM_FIND_NONE. */
int mem_registry_find(uintptr_t addr, mem_entry_t *out, uintptr_t *out_tomb_base,
                      size_t *out_tomb_size);
/* Marks the entry whose base is `base` freed (a cached stream-ordered block) or handed out
 * again with req_size bytes asked for; false: no entry there. O(log n), no tombstone scan. */
bool mem_registry_set_freed(uintptr_t base, bool freed, size_t req_size);
/* ORs mask into the access mask of the live entry whose base is `base`; false: none. */
bool mem_registry_add_access(uintptr_t base, uint32_t mask);
void mem_registry_set_device_ptr(uintptr_t base, void *device_ptr, int32_t node);

#endif
