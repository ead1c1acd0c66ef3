/* memory.c - emulated GPU memory. Every allocation is host memory (mmap); the GPU virtual
 * address equals the CPU address, so mapping to GPU nodes returns the same address. A sorted
 * table of allocations and registered user ranges answers hsaKmtQueryPointerInfo and lets the
 * CP check that packet pointers (kernarg segment, kernel object) lie in GPU-accessible memory.
 *
 * Frame-buffer allocations count against the GPU's emulated VRAM size (KFD_EMU_VRAM_MB) and
 * fail with HSAKMT_STATUS_NO_MEMORY beyond it, as KFD does.
 */
#include "tools/kfd-emu/emu.h"

#include <errno.h>
#include <numa.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static pthread_rwlock_t mem_lock = PTHREAD_RWLOCK_INITIALIZER;
static emu_alloc_t *allocs; /* sorted by base */
static size_t nallocs, cap;
static uint64_t next_gen = 1;

/* Index of the first allocation with base > addr. Caller holds mem_lock. */
static size_t upper(uintptr_t addr) {
  size_t lo = 0, hi = nallocs;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (allocs[mid].base <= addr) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static long find_locked(uintptr_t addr) {
  size_t i = upper(addr);
  if (i == 0) return -1;
  const emu_alloc_t *a = &allocs[i - 1];
  return (addr - a->base < a->size) ? (long)(i - 1) : -1;
}

bool emu_mem_find(uintptr_t addr, uint64_t len, emu_alloc_t *out) {
  pthread_rwlock_rdlock(&mem_lock);
  long i = find_locked(addr);
  bool ok = i >= 0 && len <= allocs[i].size - (addr - allocs[i].base);
  if (ok && out) *out = allocs[i];
  pthread_rwlock_unlock(&mem_lock);
  return ok;
}

bool emu_mem_gpu_ok(uint32_t gpu, uintptr_t addr, uint64_t len) {
  pthread_rwlock_rdlock(&mem_lock);
  long i = find_locked(addr);
  bool ok = i >= 0 && len <= allocs[i].size - (addr - allocs[i].base) &&
            (!emu.cfg.access_strict || (allocs[i].gpu_mask >> gpu & 1));
  pthread_rwlock_unlock(&mem_lock);
  return ok;
}

/* Sets the GPU mapping of the range containing addr. */
static bool set_mapping(uintptr_t addr, uint64_t size, uint32_t mask) {
  pthread_rwlock_wrlock(&mem_lock);
  long i = find_locked(addr);
  bool ok = i >= 0 && (size ? size : 1) <= allocs[i].size - (addr - allocs[i].base);
  if (ok) allocs[i].gpu_mask = mask;
  pthread_rwlock_unlock(&mem_lock);
  return ok;
}

/* Drops user registrations overlapping [base, base + size): mmap just handed out that range,
 * so whatever was registered there was unmapped since (real KFD invalidates such userptr
 * ranges through its MMU notifier). HIP keeps pageable ranges it pinned registered after the
 * program freed them; without this a later allocation at the same address failed. */
static void drop_stale_user(uintptr_t base, uint64_t size) {
  pthread_rwlock_wrlock(&mem_lock);
  size_t k = 0;
  for (size_t i = 0; i < nallocs; i++) {
    const emu_alloc_t *a = &allocs[i];
    if (a->user && a->base < base + size && base < a->base + a->size) continue;
    allocs[k++] = allocs[i];
  }
  nallocs = k;
  pthread_rwlock_unlock(&mem_lock);
}

static HSAKMT_STATUS insert(const emu_alloc_t *a) {
  pthread_rwlock_wrlock(&mem_lock);
  if (find_locked(a->base) >= 0 || find_locked(a->base + a->size - 1) >= 0) {
    pthread_rwlock_unlock(&mem_lock);
    return HSAKMT_STATUS_INVALID_PARAMETER; /* overlaps a known range */
  }
  if (nallocs == cap) {
    size_t ncap = cap ? cap * 2 : 256;
    emu_alloc_t *n = realloc(allocs, ncap * sizeof *n);
    if (!n) {
      pthread_rwlock_unlock(&mem_lock);
      return HSAKMT_STATUS_NO_MEMORY;
    }
    allocs = n;
    cap = ncap;
  }
  size_t i = upper(a->base);
  memmove(&allocs[i + 1], &allocs[i], (nallocs - i) * sizeof *allocs);
  allocs[i] = *a;
  allocs[i].gen = next_gen++;
  nallocs++;
  pthread_rwlock_unlock(&mem_lock);
  return HSAKMT_STATUS_SUCCESS;
}

/* Removes the range starting exactly at base; copies it to *out. */
static bool remove_at(uintptr_t base, bool user, emu_alloc_t *out) {
  pthread_rwlock_wrlock(&mem_lock);
  long i = find_locked(base);
  bool ok = i >= 0 && allocs[i].base == base && allocs[i].user == user;
  if (ok) {
    *out = allocs[i];
    memmove(&allocs[i], &allocs[i + 1], (nallocs - (size_t)i - 1) * sizeof *allocs);
    nallocs--;
  }
  pthread_rwlock_unlock(&mem_lock);
  return ok;
}

void emu_mem_reset(void) {
  pthread_rwlock_wrlock(&mem_lock);
  free(allocs);
  allocs = NULL;
  nallocs = cap = 0;
  pthread_rwlock_unlock(&mem_lock);
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtAllocMemory(HSAuint32 node, HSAuint64 size, HsaMemFlags flags,
                                           void **out) {
  if (!out || size == 0) return HSAKMT_STATUS_INVALID_PARAMETER;
  if (emu.open_count == 0) return HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
  emu_gpu_t *g = emu_gpu_of_node(node);
  if (!g && node >= emu.cfg.cpu_nodes) return HSAKMT_STATUS_INVALID_NODE_UNIT;
  if (flags.ui32.GDSMemory) return HSAKMT_STATUS_NOT_SUPPORTED;
  size = (size + 4095) & ~4095ull;
  bool vram = g && !flags.ui32.Scratch;
  if (vram) {
    uint64_t used = atomic_fetch_add(&g->vram_used, size);
    if (used + size > g->vram_bytes) {
      atomic_fetch_sub(&g->vram_used, size);
      return HSAKMT_STATUS_NO_MEMORY;
    }
  }
  int mflags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  /* Pre-fault frame buffer below 1 GiB so the first copies into it are not page-fault bound. */
  if (vram && size < (1ull << 30)) mflags |= MAP_POPULATE;
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE | (flags.ui32.ExecuteAccess ? PROT_EXEC : 0),
                 mflags, -1, 0);
  if (p == MAP_FAILED) {
    if (vram) atomic_fetch_sub(&g->vram_used, size);
    return HSAKMT_STATUS_NO_MEMORY;
  }
  /* system memory of emulated CPU node `node` lives on host node `node` when the host has it
   * (bound before the first touch, as KFD allocates on the node); topology.c said at open which
   * nodes the host lacks */
  if (!g && (int)node < emu.host_numa_nodes) numa_tonode_memory(p, size, (int)node);
  drop_stale_user((uintptr_t)p, size);
  emu_alloc_t a = {.base = (uintptr_t)p, .size = size, .node = node, .flags = flags,
                   .mmapped = true};
  HSAKMT_STATUS st = insert(&a);
  if (st != HSAKMT_STATUS_SUCCESS) {
    munmap(p, size);
    if (vram) atomic_fetch_sub(&g->vram_used, size);
    return st;
  }
  *out = p;
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtFreeMemory(void *addr, HSAuint64 size) {
  (void)size;
  emu_alloc_t a;
  if (!addr || !remove_at((uintptr_t)addr, false, &a)) return HSAKMT_STATUS_INVALID_PARAMETER;
  emu_gpu_t *g = emu_gpu_of_node(a.node);
  if (g && !a.flags.ui32.Scratch) atomic_fetch_sub(&g->vram_used, a.size);
  munmap((void *)a.base, a.size);
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtRegisterMemoryWithFlags(void *addr, HSAuint64 size,
                                                       HsaMemFlags flags) {
  if (!addr || size == 0) return HSAKMT_STATUS_INVALID_PARAMETER;
  emu_alloc_t a = {.base = (uintptr_t)addr, .size = size, .node = 0, .flags = flags,
                   .user = true};
  /* Registering a range that is already an allocation is a no-op, as in the thunk. */
  if (emu_mem_find((uintptr_t)addr, size, NULL)) return HSAKMT_STATUS_SUCCESS;
  return insert(&a);
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtDeregisterMemory(void *addr) {
  emu_alloc_t a;
  if (!addr) return HSAKMT_STATUS_INVALID_PARAMETER;
  remove_at((uintptr_t)addr, true, &a); /* deregistering an allocation is a no-op */
  return HSAKMT_STATUS_SUCCESS;
}

/* Without a node list the thunk maps to every GPU (fmm.c: all_gpu_id_array). */
EMU_PUBLIC HSAKMT_STATUS hsaKmtMapMemoryToGPU(void *addr, HSAuint64 size, HSAuint64 *alt) {
  if (!addr) return HSAKMT_STATUS_INVALID_PARAMETER;
  uint32_t all = emu.cfg.gpus >= 32 ? UINT32_MAX : (1u << emu.cfg.gpus) - 1;
  if (!set_mapping((uintptr_t)addr, size, all)) return HSAKMT_STATUS_INVALID_PARAMETER;
  if (alt) *alt = (HSAuint64)(uintptr_t)addr;
  return HSAKMT_STATUS_SUCCESS;
}

/* The node list replaces the mapping: nodes left out are unmapped, as in the thunk (ROCr's
 * allow_access passes every agent allowed so far). */
EMU_PUBLIC HSAKMT_STATUS hsaKmtMapMemoryToGPUNodes(void *addr, HSAuint64 size, HSAuint64 *alt,
                                                   HsaMemMapFlags flags, HSAuint64 n,
                                                   HSAuint32 *nodes) {
  (void)flags;
  uint32_t mask = 0;
  for (HSAuint64 i = 0; i < n; i++) {
    emu_gpu_t *g = nodes ? emu_gpu_of_node(nodes[i]) : NULL;
    if (!g) return HSAKMT_STATUS_INVALID_NODE_UNIT;
    mask |= 1u << g->index;
  }
  if (!addr) return HSAKMT_STATUS_INVALID_PARAMETER;
  if (!set_mapping((uintptr_t)addr, size, mask)) return HSAKMT_STATUS_INVALID_PARAMETER;
  if (alt) *alt = (HSAuint64)(uintptr_t)addr;
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtUnmapMemoryToGPU(void *addr) {
  if (!addr) return HSAKMT_STATUS_INVALID_PARAMETER;
  set_mapping((uintptr_t)addr, 1, 0);
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtQueryPointerInfo(const void *ptr, HsaPointerInfo *info) {
  if (!info) return HSAKMT_STATUS_INVALID_PARAMETER;
  memset(info, 0, sizeof *info);
  emu_alloc_t a;
  if (!ptr || !emu_mem_find((uintptr_t)ptr, 1, &a)) {
    info->Type = HSA_POINTER_UNKNOWN;
    return HSAKMT_STATUS_ERROR;
  }
  info->Type = a.user ? HSA_POINTER_REGISTERED_USER : HSA_POINTER_ALLOCATED;
  info->Node = a.node;
  info->MemFlags = a.flags;
  info->CPUAddress = (void *)a.base;
  info->GPUAddress = a.base;
  info->SizeInBytes = a.size;
  info->UserData = a.user_data;
  /* The GPUs it is mapped to, as KFD lists them (ROCr's hsa_amd_pointer_info turns them into
   * its `accessible` agents). The array stays valid until this thread's next query. */
  static _Thread_local HSAuint32 mapped[32];
  uint32_t n = 0;
  for (uint32_t g = 0; g < emu.cfg.gpus && n < 32; g++)
    if (a.gpu_mask >> g & 1) mapped[n++] = emu.gpus[g].node_id;
  info->NMappedNodes = info->NRegisteredNodes = n;
  info->MappedNodes = info->RegisteredNodes = mapped;
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtSetMemoryUserData(const void *ptr, void *user_data) {
  pthread_rwlock_wrlock(&mem_lock);
  long i = ptr ? find_locked((uintptr_t)ptr) : -1;
  if (i >= 0) allocs[i].user_data = user_data;
  pthread_rwlock_unlock(&mem_lock);
  return i >= 0 ? HSAKMT_STATUS_SUCCESS : HSAKMT_STATUS_INVALID_PARAMETER;
}
