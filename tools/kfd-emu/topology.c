/* topology.c - emulated KFD topology: CPU (NUMA) nodes, then GPU nodes, their memory banks,
 * caches and IO links, configured from KFD_EMU_* environment variables (see README.md).
 *
 * Node properties follow what ROCr 5.2 reads (amd_topology.cpp, amd_gpu_agent.cpp):
 * EngineId gives the ISA, NumFComputeCores / NumSIMDPerCU the CU count, DoorbellType 2 the
 * 64-bit AQL doorbells of gfx9+, and every node has at least one cache entry.
 */
#include "tools/kfd-emu/emu.h"

#include <numa.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <elf.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

emu_state_t emu = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* CU counts, SIMDs and wave slots from AMD's public specifications and LLVM AMDGPUUsage:
 * gfx908 = MI100 (120 CUs), gfx90a = MI210 (104 CUs), gfx1030 = RX 6800 XT (72 CUs, 2 SIMD32
 * per CU, wave32 default). Device ids are the PCI ids of those boards. */
static const emu_isa_t isas[] = {
    {"gfx90a", 9, 0, 10, 104, 4, 8, 64, 8, 32, 0x740f, true, true, 512 * 1024, 800 * 4 * 4},
    {"gfx908", 9, 0, 8, 120, 4, 10, 64, 8, 32, 0x738c, true, true, 256 * 1024, 800 * 4 * 4},
    {"gfx1030", 10, 3, 0, 72, 2, 16, 32, 4, 32, 0x73bf, false, false, 256 * 1024, 800 * 4 * 2},
};

void emu_log(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("kfd-emu: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* Why the last configuration load refused it ("" when it did not); under emu.lock, like
 * emu_config_load (kfd_emu.h). */
static char config_error[1024];

/* A configuration error: printed as emu_log does and kept for kfd_emu_config_error. */
__attribute__((format(printf, 1, 2))) static void config_refused(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(config_error, sizeof config_error, fmt, ap);
  va_end(ap);
  emu_log("%s", config_error);
}

EMU_PUBLIC size_t kfd_emu_config_error(char *buf, size_t size) {
  pthread_mutex_lock(&emu.lock);
  size_t n = strlen(config_error);
  if (size) snprintf(buf, size, "%s", config_error);
  pthread_mutex_unlock(&emu.lock);
  return n;
}

uint64_t emu_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int env_u64(const char *name, uint64_t lo, uint64_t hi, uint64_t def, uint64_t *out) {
  const char *v = getenv(name);
  *out = def;
  if (!v || !*v) return 0;
  char *end;
  unsigned long long x = strtoull(v, &end, 10);
  if (*end || x < lo || x > hi) {
    config_refused("%s=%s: expected an integer in [%llu, %llu]", name, v, (unsigned long long)lo,
                   (unsigned long long)hi);
    return -1;
  }
  *out = x;
  return 0;
}

static const emu_isa_t *isa_by_name(const char *n, size_t len) {
  for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++)
    if (strlen(isas[i].name) == len && !strncasecmp(isas[i].name, n, len)) return &isas[i];
  return NULL;
}

/* Every variable kfd-emu reads (README.md, kfd-emu). */
static const char *const knobs[] = {
    "KFD_EMU_GPUS", "KFD_EMU_ISA", "KFD_EMU_VRAM_MB", "KFD_EMU_CPU_NODES", "KFD_EMU_GPU_NUMA",
    "KFD_EMU_NO_TWIN", "KFD_EMU_ORDER", "KFD_EMU_TWINS", "KFD_EMU_FAULT_KERNEL",
    "KFD_EMU_DELAY_US", "KFD_EMU_DELAY_KERNEL", "KFD_EMU_CP_STALL_MS", "KFD_EMU_PREEMPT_TIMEOUT_MS",
    "KFD_EMU_DOORBELL_GRACE_MS", "KFD_EMU_READ_INDEX", "KFD_EMU_ACCESS",
    "KFD_EMU_PUBLICATION_CHECK_US", "KFD_EMU_RING_WATCH", "KFD_EMU_VERBOSE",
    "KFD_EMU_CL_SOURCE", "KFD_EMU_KERNEL_MODE",
};

/* A KFD_EMU_* variable kfd-emu does not know is a typo that would silently change nothing. */
static int unknown_knobs(void) {
  extern char **environ;
  for (char **e = environ; e && *e; e++) {
    if (strncmp(*e, "KFD_EMU_", 8)) continue;
    size_t len = strcspn(*e, "=");
    bool known = false;
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
      known |= strlen(knobs[i]) == len && !strncmp(knobs[i], *e, len);
    if (known) continue;
    char list[1024] = "";
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++)
      snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", knobs[i]);
    config_refused("%.*s: unknown kfd-emu variable (known: %s)", (int)len, *e, list);
    return -1;
  }
  return 0;
}

#if defined(__x86_64__)
#define EMU_HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define EMU_HOST_MACHINE EM_AARCH64
#endif

/* A KFD_EMU_TWINS entry must be a readable ELF shared library for this machine. */
static int twin_lib_check(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || access(path, R_OK) != 0) {
    config_refused("KFD_EMU_TWINS: %s: no such readable file", path);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    config_refused("KFD_EMU_TWINS: %s: not a regular file", path);
    return -1;
  }
  Elf64_Ehdr eh;
  memset(&eh, 0, sizeof eh);
  FILE *f = fopen(path, "rb");
  size_t got = f ? fread(&eh, 1, sizeof eh, f) : 0;
  if (f) fclose(f);
  if (got < sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
      eh.e_ident[EI_CLASS] != ELFCLASS64) {
    config_refused("KFD_EMU_TWINS: %s: not an ELF shared library (64-bit; build twins with -shared "
                   "-fPIC)", path);
    return -1;
  }
  if (eh.e_type != ET_DYN) {
    config_refused("KFD_EMU_TWINS: %s: an ELF file of type %u, not a shared library (build "
                   "twins with -shared -fPIC)", path, eh.e_type);
    return -1;
  }
#ifdef EMU_HOST_MACHINE
  if (eh.e_machine != EMU_HOST_MACHINE) {
    config_refused("KFD_EMU_TWINS: %s: a shared library for machine %u, not this host's (%u)", path,
                   eh.e_machine, EMU_HOST_MACHINE);
    return -1;
  }
#endif
  return 0;
}

int emu_config_load(emu_config_t *cfg) {
  memset(cfg, 0, sizeof *cfg);
  config_error[0] = '\0';
  uint64_t v;
  if (env_u64("KFD_EMU_GPUS", 1, EMU_MAX_GPUS, 1, &v)) return -1;
  cfg->gpus = (uint32_t)v;
  if (env_u64("KFD_EMU_CPU_NODES", 1, EMU_MAX_CPU_NODES, 1, &v)) return -1;
  cfg->cpu_nodes = (uint32_t)v;
  if (env_u64("KFD_EMU_VRAM_MB", 64, 1u << 20, 16384, &v)) return -1;
  cfg->vram_bytes = v << 20;
  if (env_u64("KFD_EMU_DELAY_US", 0, 60000000, 0, &cfg->delay_us)) return -1;
  if (env_u64("KFD_EMU_CP_STALL_MS", 0, 600000, 0, &cfg->cp_stall_ms)) return -1;
  /* amdgpu's queue_preemption_timeout_ms defaults to 9000 */
  if (env_u64("KFD_EMU_PREEMPT_TIMEOUT_MS", 1, 600000, 9000, &cfg->preempt_timeout_ms)) return -1;
  const char *dg = getenv("KFD_EMU_DOORBELL_GRACE_MS");
  if (dg && !strcmp(dg, "strict")) {
    cfg->doorbell_strict = true;
    cfg->doorbell_grace_ms = 1000; /* when to say so on stderr */
  } else if (dg && *dg) {
    char *end;
    unsigned long long x = strtoull(dg, &end, 10);
    if (*end || x < 1 || x > 3600000 || *dg == '-' || *dg == '+' || *dg == ' ') {
      config_refused("KFD_EMU_DOORBELL_GRACE_MS=%s: expected an integer in [1, 3600000] or "
                     "'strict'", dg);
      return -1;
    }
    cfg->doorbell_grace_ms = x;
  } else {
    cfg->doorbell_grace_ms = 1000;
  }
  if (env_u64("KFD_EMU_PUBLICATION_CHECK_US", 0, 10000000, 0, &v)) return -1;
  cfg->publication_check_ns = v * 1000;
  if (env_u64("KFD_EMU_RING_WATCH", 0, 1, 0, &v)) return -1;
  cfg->ring_watch = v == 1;
  const char *ac = getenv("KFD_EMU_ACCESS");
  if (ac && *ac) {
    if (!strcmp(ac, "strict")) cfg->access_strict = true;
    else if (strcmp(ac, "lenient")) {
      config_refused("KFD_EMU_ACCESS=%s: expected 'lenient' (default) or 'strict'", ac);
      return -1;
    }
  }

  /* KFD_EMU_ISA: one name for all GPUs, or a comma-separated list, one per GPU. */
  const char *isa = getenv("KFD_EMU_ISA");
  const char *p = (isa && *isa) ? isa : "gfx90a";
  for (uint32_t i = 0; i < cfg->gpus; i++) {
    size_t len = strcspn(p, ",");
    const emu_isa_t *e = isa_by_name(p, len);
    if (!e) {
      config_refused("KFD_EMU_ISA=%s: unknown ISA '%.*s' (supported: gfx90a, gfx908, gfx1030)", isa,
                     (int)len, p);
      return -1;
    }
    cfg->isa[i] = e;
    if (p[len] == ',') p += len + 1;
  }
  uint32_t entries = 1;
  for (const char *c = isa ? isa : ""; *c; c++) entries += *c == ',';
  if (entries > 1 && entries != cfg->gpus) {
    config_refused("KFD_EMU_ISA=%s: %u entries for KFD_EMU_GPUS=%u (give one ISA for all GPUs, "
                   "or one per GPU)", isa, entries, cfg->gpus);
    return -1;
  }
  /* KFD_EMU_GPU_NUMA: CPU node index of each GPU's IO link, e.g. "0,1"; default round-robin. */
  const char *numa = getenv("KFD_EMU_GPU_NUMA");
  for (uint32_t i = 0; i < cfg->gpus; i++) cfg->gpu_numa[i] = i % cfg->cpu_nodes;
  if (numa && *numa) {
    uint32_t entries_n = 1;
    for (const char *c = numa; *c; c++) entries_n += *c == ',';
    if (entries_n != cfg->gpus) {
      config_refused("KFD_EMU_GPU_NUMA=%s: %u entries for KFD_EMU_GPUS=%u (give one CPU node "
                     "index per GPU)", numa, entries_n, cfg->gpus);
      return -1;
    }
    const char *q = numa;
    for (uint32_t i = 0; i < cfg->gpus && *q; i++) {
      char *end;
      unsigned long n = strtoul(q, &end, 10);
      if (end == q || n >= cfg->cpu_nodes || (*end && *end != ',')) {
        config_refused("KFD_EMU_GPU_NUMA=%s: entry %u is not a CPU node index below %u", numa, i,
                       cfg->cpu_nodes);
        return -1;
      }
      cfg->gpu_numa[i] = (uint32_t)n;
      q = *end ? end + 1 : end;
    }
  }
  const char *km = getenv("KFD_EMU_KERNEL_MODE");
  if (km && *km) {
    if (!strcmp(km, "twin")) cfg->twin_first = true;
    else if (strcmp(km, "source")) {
      config_refused("KFD_EMU_KERNEL_MODE=%s: expected 'source' (default) or 'twin'", km);
      return -1;
    }
  }
  const char *nt = getenv("KFD_EMU_NO_TWIN");
  if (nt && *nt) {
    if (!strcmp(nt, "noop")) cfg->noop_missing_twin = true;
    else if (strcmp(nt, "error")) {
      config_refused("KFD_EMU_NO_TWIN=%s: expected 'error' (default) or 'noop'", nt);
      return -1;
    }
  }
  const char *ord = getenv("KFD_EMU_ORDER");
  if (ord && *ord) {
    if (!strcmp(ord, "inorder")) cfg->in_order = true;
    else if (strcmp(ord, "reverse")) {
      config_refused("KFD_EMU_ORDER=%s: expected 'reverse' (default) or 'inorder'", ord);
      return -1;
    }
  }
  const char *ri = getenv("KFD_EMU_READ_INDEX");
  if (ri && *ri) {
    if (!strcmp(ri, "launch")) cfg->read_index_at_launch = true;
    else if (strcmp(ri, "complete")) {
      config_refused("KFD_EMU_READ_INDEX=%s: expected 'complete' (default) or 'launch'", ri);
      return -1;
    }
  }
  const char *tw = getenv("KFD_EMU_TWINS");
  if (tw && *tw) {
    char *copy = strdup(tw), *save = NULL;
    int count = 0;
    for (char *t = copy ? strtok_r(copy, ":", &save) : NULL; t; t = strtok_r(NULL, ":", &save))
      if (++count > 15 || twin_lib_check(t) != 0) {
        if (count > 15) config_refused("KFD_EMU_TWINS: more than 15 libraries");
        free(copy);
        return -1;
      }
    free(copy);
  }
  const char *fk = getenv("KFD_EMU_FAULT_KERNEL");
  const char *dk = getenv("KFD_EMU_DELAY_KERNEL");
  if ((fk && strlen(fk) >= sizeof cfg->fault_kernel) ||
      (dk && strlen(dk) >= sizeof cfg->delay_kernel)) {
    config_refused("%s: a kernel name longer than %zu bytes",
                   fk && strlen(fk) >= sizeof cfg->fault_kernel ? "KFD_EMU_FAULT_KERNEL"
                                                                : "KFD_EMU_DELAY_KERNEL",
                   sizeof cfg->fault_kernel - 1);
    return -1;
  }
  if (dk && *dk && !cfg->delay_us) {
    config_refused("KFD_EMU_DELAY_KERNEL=%s: no effect without KFD_EMU_DELAY_US", dk);
    return -1;
  }
  if (fk) snprintf(cfg->fault_kernel, sizeof cfg->fault_kernel, "%s", fk);
  if (dk) snprintf(cfg->delay_kernel, sizeof cfg->delay_kernel, "%s", dk);
  const char *vb = getenv("KFD_EMU_VERBOSE");
  if (vb && *vb && strcmp(vb, "0") && strcmp(vb, "1")) {
    config_refused("KFD_EMU_VERBOSE=%s: expected 0 or 1", vb);
    return -1;
  }
  cfg->verbose = vb && !strcmp(vb, "1");
  return unknown_knobs();
}

static uint32_t node_count(void) { return emu.cfg.cpu_nodes + emu.cfg.gpus; }

emu_gpu_t *emu_gpu_of_node(uint32_t node_id) {
  if (node_id < emu.cfg.cpu_nodes || node_id >= node_count()) return NULL;
  return &emu.gpus[node_id - emu.cfg.cpu_nodes];
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtOpenKFD(void) {
  pthread_mutex_lock(&emu.lock);
  if (emu.open_count++ > 0) {
    pthread_mutex_unlock(&emu.lock);
    return HSAKMT_STATUS_SUCCESS;
  }
  if (emu_config_load(&emu.cfg) != 0) {
    emu.open_count = 0;
    pthread_mutex_unlock(&emu.lock);
    return HSAKMT_STATUS_INVALID_PARAMETER;
  }
  long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
  emu.sys_mem_bytes = (uint64_t)pages * (uint64_t)psz;
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  emu.ncpus = n > 0 ? (uint32_t)n : 1;
  /* emulated CPU node i's memory is bound to host node i where the host has it (memory.c) */
  emu.host_numa_nodes = numa_available() >= 0 ? numa_max_node() + 1 : 0;
  static bool numa_said; /* once per process: under emu.lock */
  if (emu.cfg.cpu_nodes > 1 && (int)emu.cfg.cpu_nodes > emu.host_numa_nodes && !numa_said) {
    numa_said = true;
    for (uint32_t c = (uint32_t)emu.host_numa_nodes; c < emu.cfg.cpu_nodes; c++)
      emu_log("emulated CPU node %u has no host NUMA node (the host has %d): its memory is not "
              "bound to a node", c, emu.host_numa_nodes);
  }
  emu_events_init();
  emu_fault_install();
  for (uint32_t i = 0; i < emu.cfg.gpus; i++) {
    emu_gpu_t *g = &emu.gpus[i];
    memset(g, 0, sizeof *g);
    g->index = i;
    g->node_id = emu.cfg.cpu_nodes + i;
    g->cpu_node = emu.cfg.gpu_numa[i];
    g->isa = emu.cfg.isa[i];
    g->vram_bytes = emu.cfg.vram_bytes;
    pthread_mutex_init(&g->lock, NULL);
    g->doorbells = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (g->doorbells == MAP_FAILED) {
      g->doorbells = NULL;
      emu.open_count = 0;
      pthread_mutex_unlock(&emu.lock);
      return HSAKMT_STATUS_NO_MEMORY;
    }
  }
  if (emu.cfg.verbose)
    emu_log("opened: %u GPU(s), %u CPU node(s)", emu.cfg.gpus, emu.cfg.cpu_nodes);
  pthread_mutex_unlock(&emu.lock);
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtCloseKFD(void) {
  pthread_mutex_lock(&emu.lock);
  if (emu.open_count == 0) {
    pthread_mutex_unlock(&emu.lock);
    return HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
  }
  if (--emu.open_count == 0) {
    for (uint32_t i = 0; i < emu.cfg.gpus; i++) {
      emu_cp_stop(&emu.gpus[i]);
      if (emu.gpus[i].doorbells) munmap(emu.gpus[i].doorbells, 4096);
      emu.gpus[i].doorbells = NULL;
      pthread_mutex_destroy(&emu.gpus[i].lock);
    }
    emu_kernels_reset();
  }
  pthread_mutex_unlock(&emu.lock);
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtGetVersion(HsaVersionInfo *v) {
  if (!v) return HSAKMT_STATUS_INVALID_PARAMETER;
  v->KernelInterfaceMajorVersion = 1;
  v->KernelInterfaceMinorVersion = 8;
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtAcquireSystemProperties(HsaSystemProperties *p) {
  if (!p) return HSAKMT_STATUS_INVALID_PARAMETER;
  if (emu.open_count == 0) return HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
  memset(p, 0, sizeof *p);
  p->NumNodes = node_count();
  p->PlatformOem = 0x414d44; /* "AMD" */
  p->PlatformId = 0x454d55;  /* "EMU" */
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtReleaseSystemProperties(void) { return HSAKMT_STATUS_SUCCESS; }

static void set_name(HsaNodeProperties *p, const char *name) {
  for (size_t i = 0; i < HSA_PUBLIC_NAME_SIZE - 1 && name[i]; i++) {
    p->MarketingName[i] = (HSAuint16)name[i];
    p->AMDName[i] = (HSAuint8)name[i];
  }
}

static uint32_t gpu_links(const emu_gpu_t *g) { (void)g; return 1; }

static uint32_t cpu_links(uint32_t cpu) {
  uint32_t n = emu.cfg.cpu_nodes - 1;
  for (uint32_t i = 0; i < emu.cfg.gpus; i++)
    if (emu.gpus[i].cpu_node == cpu) n++;
  return n;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtGetNodeProperties(HSAuint32 node, HsaNodeProperties *p) {
  if (!p) return HSAKMT_STATUS_INVALID_PARAMETER;
  if (emu.open_count == 0) return HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
  if (node >= node_count()) return HSAKMT_STATUS_INVALID_NODE_UNIT;
  memset(p, 0, sizeof *p);
  p->NumCaches = 1;
  if (node < emu.cfg.cpu_nodes) {
    uint32_t per = emu.ncpus / emu.cfg.cpu_nodes;
    p->NumCPUCores = per ? per : 1;
    p->NumMemoryBanks = 1;
    p->NumIOLinks = cpu_links(node);
    p->CComputeIdLo = node * p->NumCPUCores;
    p->MaxEngineClockMhzCCompute = 2000;
    char name[64];
    snprintf(name, sizeof name, "kfd-emu CPU node %u", node);
    set_name(p, name);
    return HSAKMT_STATUS_SUCCESS;
  }
  const emu_gpu_t *g = emu_gpu_of_node(node);
  const emu_isa_t *isa = g->isa;
  p->NumFComputeCores = isa->cus * isa->simds_per_cu;
  p->NumSIMDPerCU = isa->simds_per_cu;
  p->NumMemoryBanks = 3; /* frame buffer, LDS, scratch */
  p->NumIOLinks = gpu_links(g);
  p->FComputeIdLo = 0x80000000u + g->index * 0x1000;
  p->Capability.ui32.DoorbellType = 2;
  p->Capability.ui32.SRAM_EDCSupport = isa->sramecc ? 1 : 0;
  p->MaxWavesPerSIMD = isa->waves_per_simd;
  p->LDSSizeInKB = 64;
  p->WaveFrontSize = isa->wave_size;
  p->NumShaderBanks = isa->shader_engines;
  p->NumArrays = 1;
  p->NumCUPerArray = isa->cus / isa->shader_engines;
  p->MaxSlotsScratchCU = isa->scratch_slots_per_cu;
  p->EngineId.ui32.Major = isa->major;
  p->EngineId.ui32.Minor = isa->minor;
  p->EngineId.ui32.Stepping = isa->stepping;
  p->VendorId = 0x1002;
  p->DeviceId = isa->device_id;
  p->LocationId = (g->index + 1) << 8; /* bus g+1, device 0, function 0 */
  p->LocalMemSize = g->vram_bytes;
  p->MaxEngineClockMhzFCompute = 1700;
  p->MaxEngineClockMhzCCompute = 2000;
  p->DrmRenderMinor = 128 + (int)g->index;
  p->NumSdmaEngines = 2;
  p->NumSdmaQueuesPerEngine = 8;
  p->NumCpQueues = 24;
  p->UniqueID = 0x6b66642d656d7500ull + g->index; /* "kfd-emu" + index */
  p->VGPRSizePerCU = isa->vgpr_bytes_per_cu;
  p->SGPRSizePerCU = isa->sgpr_bytes_per_cu;
  char name[64];
  snprintf(name, sizeof name, "kfd-emu %s", isa->name);
  set_name(p, name);
  return HSAKMT_STATUS_SUCCESS;
}

/* Apertures of the emulated GPU: nonzero, 64-bit, outside the user address space (ROCr asserts
 * the group aperture is nonzero; real gfx9 apertures sit in the non-canonical hole too). */
#define EMU_LDS_APERTURE 0x1000000000000ull
#define EMU_SCRATCH_APERTURE 0x2000000000000ull

EMU_PUBLIC HSAKMT_STATUS hsaKmtGetNodeMemoryProperties(HSAuint32 node, HSAuint32 n,
                                                       HsaMemoryProperties *m) {
  if (!m) return HSAKMT_STATUS_INVALID_PARAMETER;
  if (emu.open_count == 0) return HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
  if (node >= node_count()) return HSAKMT_STATUS_INVALID_NODE_UNIT;
  memset(m, 0, sizeof *m * n);
  if (node < emu.cfg.cpu_nodes) {
    if (n < 1) return HSAKMT_STATUS_INVALID_PARAMETER;
    m[0].HeapType = HSA_HEAPTYPE_SYSTEM;
    m[0].SizeInBytes = emu.sys_mem_bytes / emu.cfg.cpu_nodes;
    m[0].Width = 64;
    m[0].MemoryClockMax = 3200;
    return HSAKMT_STATUS_SUCCESS;
  }
  if (n < 3) return HSAKMT_STATUS_INVALID_PARAMETER;
  const emu_gpu_t *g = emu_gpu_of_node(node);
  m[0].HeapType = HSA_HEAPTYPE_FRAME_BUFFER_PRIVATE;
  m[0].SizeInBytes = g->vram_bytes;
  m[0].Width = 4096;
  m[0].MemoryClockMax = 1600;
  m[1].HeapType = HSA_HEAPTYPE_GPU_LDS;
  m[1].SizeInBytes = 64 * 1024;
  m[1].VirtualBaseAddress = EMU_LDS_APERTURE;
  m[2].HeapType = HSA_HEAPTYPE_GPU_SCRATCH;
  m[2].SizeInBytes = 4ull << 30;
  m[2].VirtualBaseAddress = EMU_SCRATCH_APERTURE;
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtGetNodeCacheProperties(HSAuint32 node, HSAuint32 proc,
                                                      HSAuint32 n, HsaCacheProperties *c) {
  (void)proc;
  if (!c) return HSAKMT_STATUS_INVALID_PARAMETER;
  if (emu.open_count == 0) return HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
  if (node >= node_count()) return HSAKMT_STATUS_INVALID_NODE_UNIT;
  if (n < 1) return HSAKMT_STATUS_INVALID_PARAMETER;
  memset(c, 0, sizeof *c * n);
  c[0].CacheLevel = 2;
  c[0].CacheLineSize = 64;
  c[0].CacheLinesPerTag = 1;
  c[0].CacheAssociativity = 16;
  c[0].CacheType.ui32.Data = 1;
  if (node < emu.cfg.cpu_nodes) {
    c[0].CacheSize = 1024; /* KiB */
    c[0].CacheType.ui32.CPU = 1;
  } else {
    c[0].CacheSize = 8192;
    c[0].CacheType.ui32.HSACU = 1;
    c[0].ProcessorIdLow = emu_gpu_of_node(node)->node_id;
  }
  c[0].SiblingMap[0] = 1;
  return HSAKMT_STATUS_SUCCESS;
}

static void fill_link(HsaIoLinkProperties *l, uint32_t from, uint32_t to, bool pcie) {
  memset(l, 0, sizeof *l);
  l->IoLinkType = pcie ? HSA_IOLINKTYPE_PCIEXPRESS : HSA_IOLINK_TYPE_QPI_1_1;
  l->VersionMajor = pcie ? 4 : 1;
  l->NodeFrom = from;
  l->NodeTo = to;
  /* Weight is what ROCr reports as NUMA distance: KFD uses 20 for PCIe, 21 between sockets. */
  l->Weight = pcie ? 20 : 21;
  l->MinimumLatency = pcie ? 1000 : 100; /* ns */
  l->MaximumLatency = pcie ? 2000 : 200;
  l->MinimumBandwidth = pcie ? 16000 : 40000; /* MB/s */
  l->MaximumBandwidth = pcie ? 32000 : 80000;
  l->RecTransferSize = 4096;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtGetNodeIoLinkProperties(HSAuint32 node, HSAuint32 n,
                                                       HsaIoLinkProperties *l) {
  if (!l) return HSAKMT_STATUS_INVALID_PARAMETER;
  if (emu.open_count == 0) return HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;
  if (node >= node_count()) return HSAKMT_STATUS_INVALID_NODE_UNIT;
  uint32_t k = 0;
  if (node < emu.cfg.cpu_nodes) {
    for (uint32_t c = 0; c < emu.cfg.cpu_nodes && k < n; c++)
      if (c != node) fill_link(&l[k++], node, c, false);
    for (uint32_t i = 0; i < emu.cfg.gpus && k < n; i++)
      if (emu.gpus[i].cpu_node == node) fill_link(&l[k++], node, emu.gpus[i].node_id, true);
  } else if (n >= 1) {
    fill_link(&l[k++], node, emu_gpu_of_node(node)->cpu_node, true);
  }
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtGetClockCounters(HSAuint32 node, HsaClockCounters *c) {
  (void)node;
  if (!c) return HSAKMT_STATUS_INVALID_PARAMETER;
  uint64_t t = emu_now_ns();
  c->GPUClockCounter = t; /* the emulated GPU clock is CLOCK_MONOTONIC in ns */
  c->CPUClockCounter = t;
  c->SystemClockCounter = t;
  c->SystemClockFrequencyHz = 1000000000ull;
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtGetXNACKMode(HSAint32 *enable) {
  if (!enable) return HSAKMT_STATUS_INVALID_PARAMETER;
  *enable = 0;
  return HSAKMT_STATUS_SUCCESS;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtSetXNACKMode(HSAint32 enable) {
  return enable == 0 ? HSAKMT_STATUS_SUCCESS : HSAKMT_STATUS_NOT_SUPPORTED;
}

EMU_PUBLIC HSAKMT_STATUS hsaKmtGetTileConfig(HSAuint32 node, HsaGpuTileConfig *cfg) {
  if (!cfg || !emu_gpu_of_node(node)) return HSAKMT_STATUS_INVALID_PARAMETER;
  cfg->NumTileConfigs = 0;
  cfg->NumMacroTileConfigs = 0;
  cfg->GbAddrConfig = 0x2a114042; /* gfx9 GB_ADDR_CONFIG with a 256-byte pipe interleave, which
                                   * HIP's address library asserts; images are not emulated */
  cfg->NumBanks = 16;
  cfg->NumRanks = 1;
  return HSAKMT_STATUS_SUCCESS;
}
