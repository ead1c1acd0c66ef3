/* emu.h - kfd-emu internals shared by its files (not a public header).
 *
 * kfd-emu is a replacement libhsakmt.so.1: the unmodified ROCr calls it as it would call the
 * real thunk, and it answers with emulated KFD nodes (CPU NUMA nodes first, then GPUs), host
 * memory standing in for VRAM (GPU virtual address == CPU address), KFD events with an event
 * mailbox, and a software command processor (CP): one thread per user-mode queue ROCr creates,
 * executing its AQL packets.
 */
#ifndef KFD_EMU_INTERNAL_H
#define KFD_EMU_INTERNAL_H

#include <hsakmt.h>
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <hsa/amd_hsa_queue.h>
#include <hsa/amd_hsa_signal.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "tools/kfd-emu/kfd_emu.h"
#include "tools/kfd-emu/kfd_emu_twin.h"

#define EMU_MAX_GPUS 8
#define EMU_MAX_CPU_NODES 2
#define EMU_MAX_NODES (EMU_MAX_GPUS + EMU_MAX_CPU_NODES)
#define EMU_MAX_EVENTS 4096 /* KFD's per-process event limit (KFD_SIGNAL_EVENT_LIMIT) */
#define EMU_PUBLIC __attribute__((visibility("default")))

/* AQL queue error codes the CP writes into amd_queue_t.queue_inactive_signal; ROCr's
 * AqlQueue::DynamicScratchHandler maps them to HSA status codes (ROCr 5.2 amd_aql_queue.cpp). */
enum {
  EMU_QERR_SCRATCH_WAVE64 = 0x1,         /* insufficient scratch: ROCr grows it and resumes */
  EMU_QERR_SCRATCH_WAVE32 = 0x401,
  EMU_QERR_INVALID_DIM = 0x2,            /* HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS */
  EMU_QERR_INVALID_GROUP_MEM = 0x4,      /* HSA_STATUS_ERROR_INVALID_ALLOCATION */
  EMU_QERR_INVALID_CODE = 0x8,           /* HSA_STATUS_ERROR_INVALID_CODE_OBJECT */
  EMU_QERR_INVALID_FORMAT = 0x20,        /* HSA_STATUS_ERROR_INVALID_PACKET_FORMAT */
  EMU_QERR_GROUP_TOO_LARGE = 0x40,       /* HSA_STATUS_ERROR_INVALID_ARGUMENT */
  EMU_QERR_INVALID_ARGUMENT = 0x40,      /* the same bit: a misaligned kernarg_address */
  EMU_QERR_MEMORY_VIOLATION = 0x20000000, /* HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION */
  EMU_QERR_ILLEGAL_INSTRUCTION = 0x40000000, /* HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION */};
/* Not an error: run_dispatch left a dispatch because its queue is being destroyed (cp.c). */
#define EMU_PREEMPTED 0x80000000u

typedef struct emu_isa {
  const char *name;
  uint32_t major, minor, stepping;
  uint32_t cus, simds_per_cu, waves_per_simd, wave_size, shader_engines, scratch_slots_per_cu;
  uint16_t device_id;
  bool sramecc, xnack;
  uint32_t vgpr_bytes_per_cu, sgpr_bytes_per_cu;
} emu_isa_t;

typedef struct emu_queue emu_queue_t;

typedef struct emu_gpu {
  uint32_t index;    /* 0-based GPU index */
  uint32_t node_id;  /* KFD node id */
  uint32_t cpu_node; /* node id of the CPU node its IO link goes to */
  const emu_isa_t *isa;
  uint64_t vram_bytes;
  _Atomic uint64_t vram_used;
  uint64_t *doorbells; /* one page of 64-bit doorbells, one per queue slot */
  bool doorbell_used[512];

  pthread_mutex_t lock; /* guards the queues list and doorbell_used */
  emu_queue_t *queues;  /* each with its own CP thread */
  _Atomic uint32_t kick;     /* futex word: bumped to wake this GPU's CP threads */
  _Atomic uint32_t sleeping; /* CP threads (about to be) asleep on kick */
} emu_gpu_t;

typedef struct emu_config {
  uint32_t gpus, cpu_nodes;
  const emu_isa_t *isa[EMU_MAX_GPUS];
  uint32_t gpu_numa[EMU_MAX_GPUS];
  uint64_t vram_bytes;
  bool noop_missing_twin;
  /* KFD_EMU_KERNEL_MODE=twin: a kernel with a twin runs it even when it has source (the
   * cross-check of twins against sources, tests/test_kfd_emu_source.c); default: source first */
  bool twin_first;
  bool in_order;         /* KFD_EMU_ORDER=inorder: no reordering of non-barrier dispatches */
  bool read_index_at_launch; /* KFD_EMU_READ_INDEX=launch: read index passes a packet when it is
                                launched, before it executes (HSA allows it) */
  char fault_kernel[256];
  char delay_kernel[256];
  uint64_t delay_us;
  uint64_t cp_stall_ms;
  uint64_t preempt_timeout_ms; /* KFD_EMU_PREEMPT_TIMEOUT_MS: DestroyQueue's preemption bound */
  uint64_t doorbell_grace_ms;
  bool doorbell_strict;     /* KFD_EMU_DOORBELL_GRACE_MS=strict: an unrung packet never runs */
  bool access_strict;       /* KFD_EMU_ACCESS=strict: only memory mapped to the GPU is reachable */
  uint64_t publication_check_ns; /* KFD_EMU_PUBLICATION_CHECK_US: re-read delay, 0: off */
  bool ring_watch;          /* KFD_EMU_RING_WATCH=1: every ring store checked (ring_watch.c) */
  bool verbose;
} emu_config_t;

typedef struct emu_state {
  pthread_mutex_t lock;
  int open_count;
  emu_config_t cfg;
  emu_gpu_t gpus[EMU_MAX_GPUS];
  uint64_t sys_mem_bytes;
  uint32_t ncpus;
  int host_numa_nodes;          /* libnuma: host nodes (0: no NUMA support) */
} emu_state_t;

extern emu_state_t emu;

/* topology.c */
/* 0, or -1 with the message printed and kept for kfd_emu_config_error (kfd_emu.h); under
 * emu.lock */
int emu_config_load(emu_config_t *cfg);
emu_gpu_t *emu_gpu_of_node(uint32_t node_id);
uint64_t emu_now_ns(void);
void emu_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* memory.c */
typedef struct emu_alloc {
  uintptr_t base;
  uint64_t size;
  uint32_t node;
  HsaMemFlags flags;
  bool user;        /* registered user memory (not owned) */
  bool mmapped;     /* owned, free with munmap */
  uint64_t gen;     /* unique per allocation, for caches keyed by address */
  uint32_t gpu_mask; /* bit i: mapped to GPU i (MapMemoryToGPU / MapMemoryToGPUNodes) */
  void *user_data;
} emu_alloc_t;
/* Copies the allocation containing [addr, addr+len) into *out; false if none does. */
bool emu_mem_find(uintptr_t addr, uint64_t len, emu_alloc_t *out);
/* True when GPU `gpu` (index) may access [addr, addr+len): inside one known allocation and,
 * with KFD_EMU_ACCESS=strict, mapped to that GPU. Thread-safe. */
bool emu_mem_gpu_ok(uint32_t gpu, uintptr_t addr, uint64_t len);
void emu_mem_reset(void);

/* events.c */
void emu_events_init(void);
void emu_event_fire(uint32_t event_id);
void emu_signal_notify(amd_signal_t *s); /* mailbox write + event wake for interrupt signals */

/* fault.c: twins run under a fault handler (see fault.c) */
#define EMU_TWIN_FAULTED (-0x7fff)
typedef struct emu_twin_fault {
  int sig, code;
  void *addr;
} emu_twin_fault_t;
/* ring_watch.c (KFD_EMU_RING_WATCH): watches a queue's ring; returns its index or -1. */
int emu_ring_watch_add(uint8_t *ring, size_t bytes, uint32_t size, const amd_queue_t *amdq);
void emu_ring_watch_remove(int index);
/* True, with the packet id and byte, once a body byte was written after its header. */
bool emu_ring_watch_violation(int index, uint64_t *out_id, uint32_t *out_byte);
void emu_fault_install(void);      /* once per process; chains to the previous handlers */
void emu_fault_thread_start(void); /* on each CP thread: alternate signal stack */
void emu_fault_thread_stop(void);
/* Calls twin(d, wg); returns its result, or EMU_TWIN_FAULTED with *out_fault set. */
int emu_twin_call(kfd_emu_twin_fn twin, const kfd_emu_dispatch_t *d,
                  const kfd_emu_workgroup_t *wg, emu_twin_fault_t *out_fault);
void emu_twin_fault_describe(const emu_twin_fault_t *f, char *out, size_t n);

/* cp.c */
void emu_cp_stop(emu_gpu_t *g); /* stops and frees every queue of g */
void emu_cp_kick_all(void);

/* kernels.c: kernel_object -> twin and argument layout */
/* explicit arguments per kernel (72 ulongs and more are valid OpenCL/HIP kernels) */
#define EMU_MAX_ARGS 512
typedef struct emu_kernel {
  struct emu_kernel *retired; /* evicted entries stay valid until CloseKFD */
  uint64_t kernel_object;
  uint64_t gen;
  char name[256];
  kfd_emu_twin_fn twin;
  bool rocr_blit; /* one of ROCr's bare blit kernels (blit_rocr.c) */
  bool wave32;
  uint32_t kernarg_size;
  uint32_t kernarg_align;  /* .kernarg_segment_align (bytes; 16 for ROCr's blit kernels) */
  uint32_t group_fixed;    /* kernel descriptor group_segment_fixed_size (bytes of LDS) */
  uint32_t private_fixed;  /* kernel descriptor private_segment_fixed_size (bytes/work-item) */
  uint32_t arg_count;
  kfd_emu_arg_t args[EMU_MAX_ARGS];
  /* v5 hidden arguments the CP checks against the packet (offset or UINT32_MAX) */
  uint32_t hidden_block_count[3], hidden_group_size[3], hidden_remainder[3], hidden_grid_dims;
  uint32_t hidden_global_offset[3]; /* hidden_global_offset_x/y/z (u64) or UINT32_MAX */
  /* Source mode (pocl.c): the kernel's OpenCL C source and build options (malloc'd, freed with
   * the entry), from the code object's __hsad_cl_source or KFD_EMU_CL_SOURCE; NULL: twin mode. */
  char *cl_source;
  char *cl_options;
  const char *source_origin; /* "code object" or the KFD_EMU_CL_SOURCE file (static/env) */
  bool source_set_aside;     /* it had source, but KFD_EMU_KERNEL_MODE=twin chose its twin */
  char *origin_file;         /* the KFD_EMU_CL_SOURCE file it runs from (malloc'd) */
  char *source_error;        /* a KFD_EMU_CL_SOURCE file POCL could not build (malloc'd) */
} emu_kernel_t;
/* Returns the kernel for kernel_object, or NULL with *why set to a message. Thread-safe. */
const emu_kernel_t *emu_kernel_lookup(uint64_t kernel_object, const char **why);
void emu_kernels_reset(void);
/* The message for a kernel with neither source nor twin: names it and both remedies. */
void emu_kernel_no_code_message(const char *name, char *why, size_t n);
/* Says once per kernel name and process, on stderr, that a twin ran (not for ROCr's and
 * ROCclr's blit kernels, which have no source by design). */
void emu_kernel_twin_notice(const emu_kernel_t *k);

/* pocl.c: source mode */
/* Runs the dispatch of k (k->cl_source set) through POCL; 0 or a queue error code with why. */
uint32_t emu_cl_dispatch(const emu_kernel_t *k, const hsa_kernel_dispatch_packet_t *packet,
                         uint32_t gpu, char *why, size_t n);
/* 1 when the source builds under POCL (cached), 0 when it does not, -1 when POCL is missing. */
int emu_cl_builds(const char *options, const char *source);
/* Builds the source (cached) and finds kernel `name`; false with the reason (POCL's build log)
 * in why. */
bool emu_cl_check(const char *options, const char *source, const char *name, char *why,
                  size_t n);

#endif
