/* hsad.h - hsa-dispatch: runtime, devices and code objects loaded on a device.
 *
 * The public header of hsa-dispatch/; it includes hsad_queue.h (queues, dispatch, completions)
 * and hsad_aql.h (the AQL packet layouts the library writes).
 *
 * Objects and ownership
 *   hsad_runtime_t  the process-wide ROCr runtime, reference counted: every successful
 *                   hsad_runtime_open() takes a reference (the first one calls hsa_init and
 *                   discovers agents), every hsad_runtime_close() drops one (the last one
 *                   destroys the device queues and signal pools and calls hsa_shut_down).
 *                   The handle stays valid memory after the last close: any call that takes
 *                   it, or an object created under it, then fails with HSAD_ERR_CLOSED.
 *   hsad_device_t   one GPU agent. Owned by the runtime; valid while the runtime is open.
 *   hsad_program_t  one code object loaded and frozen on one device (an hsa_executable_t).
 *                   Owned by the caller: hsad_program_destroy(). Owns its hsad_codeobj_t.
 *   hsad_device_kernel_t  one kernel of a program: kernel_object, segment sizes and the
 *                   codeobj metadata, resolved once at load. Owned by the program.
 *
 * Thread safety: open/close are serialised by a process-wide mutex. Device and kernel
 * accessors are read-only and thread-safe. Program load/destroy are thread-safe with respect to
 * other programs; destroy a program only when no other thread dispatches its kernels and no
 * packet using them is in flight.
 *
 * Errors: every fallible call returns hsad_status_t; hsad_last_error() then says what failed,
 * on which device / kernel, which limit, and the HSA status name for HSAD_ERR_HSA.
 *
 * Rule sources: "HSA" = HSA Platform System Architecture / Runtime Programmer's Reference 1.2;
 * "ROCr" = ROCR-Runtime 5.2.x behaviour (file named where it matters).
 */
#ifndef HSAD_H
#define HSAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "codeobj/hsad_codeobj.h"
#include "common/hsad_status.h"
#include "hsa-dispatch/hsad_vendor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hsad_runtime hsad_runtime_t;
typedef struct hsad_device hsad_device_t;
typedef struct hsad_program hsad_program_t;
typedef struct hsad_device_kernel hsad_device_kernel_t;

enum {
  HSAD_MAX_POOLS = 8,      /* memory pools reported per agent */
  HSAD_MAX_ISAS = 4,       /* ISAs reported per GPU agent */
  HSAD_NAME_MAX = 64,      /* bytes of agent / product names, NUL included */
  HSAD_ISA_NAME_MAX = 96,  /* bytes of ISA names, NUL included */
};

/* Per-wave scratch limit of gfx9+ (COMPUTE_TMPRING_SIZE.WAVESIZE; ROCr amd_gpu_agent.cpp
 * MAX_WAVE_SCRATCH), bytes. */
#define HSAD_MAX_WAVE_SCRATCH 8387584u

/* One memory pool of an agent (hsa_amd_agent_iterate_memory_pools). */
typedef struct hsad_pool_info {
  uint32_t segment;           /* hsa_amd_segment_t: 0 global, 1 readonly, 2 private, 3 group */
  uint32_t global_flags;      /* HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_* bits (global pools) */
  uint64_t size;              /* bytes */
  uint64_t alloc_granule;     /* bytes (HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE) */
  bool alloc_allowed;         /* HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED */
  const char *kind;           /* "kernarg", "fine-grained", "coarse-grained", "group",
                                 "private", "readonly": static string */
} hsad_pool_info_t;

/* One CPU agent. node = the KFD topology node, which is the NUMA node on Linux (KFD reports
 * one CPU node per NUMA node, numbered first). */
typedef struct hsad_cpu_info {
  uint32_t index;                 /* position among CPU agents */
  uint32_t numa_node;             /* HSA_AGENT_INFO_NODE */
  char name[HSAD_NAME_MAX];       /* HSA_AGENT_INFO_NAME */
  uint32_t compute_units;         /* cores (HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT) */
  uint32_t pool_count;
  hsad_pool_info_t pools[HSAD_MAX_POOLS];
} hsad_cpu_info_t;

/* One GPU agent. Every field is read once at hsad_runtime_open(). */
typedef struct hsad_device_info {
  uint32_t index;                 /* position among GPU agents: hsad_device_get(index) */
  uint32_t node;                  /* HSA_AGENT_INFO_NODE (KFD node id) */
  char name[HSAD_NAME_MAX];       /* HSA_AGENT_INFO_NAME, "gfx90a" */
  char product_name[HSAD_NAME_MAX]; /* HSA_AMD_AGENT_INFO_PRODUCT_NAME */
  char isa_name[HSAD_ISA_NAME_MAX]; /* first ISA without the triple, "gfx90a:sramecc+:xnack-" */
  uint32_t isa_count;             /* ISAs of the agent (hsa_agent_iterate_isas) */
  char isa_names[HSAD_MAX_ISAS][HSAD_ISA_NAME_MAX]; /* full, "amdgcn-amd-amdhsa--gfx90a:..." */
  uint32_t compute_units;         /* HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT */
  uint32_t simds_per_cu;          /* HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU */
  uint32_t max_waves_per_cu;      /* HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU */
  uint32_t wavefront_size;        /* HSA_AGENT_INFO_WAVEFRONT_SIZE, work-items */
  uint32_t lds_bytes;             /* group segment bytes per workgroup (the group pool size) */
  uint32_t max_workgroup_size;    /* HSA_AGENT_INFO_WORKGROUP_MAX_SIZE, work-items (flat) */
  uint16_t max_workgroup_dim[3];  /* HSA_AGENT_INFO_WORKGROUP_MAX_DIM */
  uint32_t max_grid_dim[3];       /* HSA_AGENT_INFO_GRID_MAX_DIM */
  uint32_t queue_min_size;        /* HSA_AGENT_INFO_QUEUE_MIN_SIZE, packets */
  uint32_t queue_max_size;        /* HSA_AGENT_INFO_QUEUE_MAX_SIZE, packets */
  uint32_t queues_max;            /* HSA_AGENT_INFO_QUEUES_MAX */
  uint32_t max_private_per_work_item; /* bytes: HSAD_MAX_WAVE_SCRATCH / wavefront_size */
  uint64_t max_wave_scratch;      /* bytes per wave: HSAD_MAX_WAVE_SCRATCH */
  uint64_t local_memory_bytes;    /* size of the device-local (coarse-grained) global pool */
  int32_t nearest_cpu;            /* index of the nearest CPU agent, -1 if none is reachable */
  uint32_t nearest_cpu_numa_distance; /* link NUMA distance to it (0 if unknown) */
  uint32_t nearest_cpu_hops;      /* link hops to it */
  uint32_t pool_count;
  hsad_pool_info_t pools[HSAD_MAX_POOLS];
  /* Both vendors (issue 19). */
  hsad_vendor_t vendor;           /* HSAD_VENDOR_AMD / HSAD_VENDOR_NVIDIA */
  uint32_t vendor_index;          /* position among the devices of its vendor (NVIDIA: the
                                     CUDA device ordinal) */
  int32_t numa_node;              /* NUMA node the device is attached to: AMD the nearest CPU
                                     agent's node, NVIDIA the PCI function's
                                     /sys/bus/pci/devices/<bus id>/numa_node; -1 unknown */
  char pci_bus_id[32];            /* NVIDIA: cuDeviceGetPCIBusId ("0000:19:00.0"); AMD: "" */
  uint32_t cc_major, cc_minor;    /* NVIDIA compute capability (9, 0 for sm_90); AMD: 0 */
  int32_t cuda_version;           /* NVIDIA: cuDriverGetVersion (13000 = CUDA 13.0); AMD: 0 */
  char driver_version[32];        /* NVIDIA: the kernel driver's version
                                     (/sys/module/nvidia/version, "580.159.04"); AMD: "" */
} hsad_device_info_t;

/* ---- runtime ------------------------------------------------------------------------- */

/* Takes a reference on the process-wide runtime. The first reference calls hsa_init() and
 * discovers every GPU and CPU agent (names, ISAs, limits, memory pools, and each GPU's nearest
 * CPU agent: smallest NUMA distance of hsa_amd_agent_memory_pool_get_info(GPU, CPU's global
 * pool, HSA_AMD_AGENT_MEMORY_POOL_INFO_LINK_INFO), ties broken by fewer link hops, then lower
 * index). Returns the same handle every time. Thread-safe.
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL out), HSAD_ERR_HSA (hsa_init failed: message has the
 * HSA status string), HSAD_ERR_NO_DEVICE (no GPU agent; the runtime is not kept open),
 * HSAD_ERR_OUT_OF_MEMORY, HSAD_ERR_UNSUPPORTED (an x86-64 CPU without SSE4.1, which the
 * dispatch hot path is compiled for: every host CPU ROCm supports has it). */
hsad_status_t hsad_runtime_open(hsad_runtime_t **out_runtime);

/* Drops one reference. The last one destroys the shared device queues and signal pools and
 * calls hsa_shut_down(); programs and queues the caller still holds are then unusable (calls on
 * them fail with HSAD_ERR_CLOSED; hsad_program_destroy / hsad_queue_destroy only free their
 * host memory). Thread-safe. Errors: HSAD_ERR_INVALID_ARGUMENT (NULL), HSAD_ERR_CLOSED (no
 * reference left).
 * Work in flight (issue 21): the last close does not wait for it. Every queue still holding
 * packets is destroyed the way hardware aborts it: hsa_queue_destroy makes the KFD preempt
 * (unmap) a queue with an active dispatch, bounded by amdgpu's queue_preemption_timeout_ms
 * (9 s by default; past it the KFD resets the GPU); its waves and every packet not completed
 * are dropped, their completion signals never decremented, and waits on their completions
 * answer HSAD_ERR_CLOSED "queue on device N: the hsa-dispatch runtime was closed". So a
 * kernel that never ends does not hang the close: it returns HSAD_OK once the queue is
 * preempted (tests/test_dispatch_public.c, public::runtime_close_preempts_runaway_kernel:
 * under 2 s with a 60 s kernel in flight, and the process exits 0). kfd-emu preempts the same
 * way at its preemption points (the injected KFD_EMU_DELAY_US, between twin workgroups); its
 * limit: a host thread already inside one workgroup (a twin or POCL kernel that loops forever)
 * cannot be stopped, so after KFD_EMU_PREEMPT_TIMEOUT_MS (9000) DestroyQueue abandons that
 * queue (said on stderr) and the close returns all the same, the thread finishing that
 * workgroup in the background. To wait for the work instead, wait for its completions, or
 * hsad_queue_destroy_deadline each queue, before closing. */
hsad_status_t hsad_runtime_close(hsad_runtime_t *runtime);

/* GPU / CPU agent counts (0 when closed or NULL). */
uint32_t hsad_device_count(const hsad_runtime_t *runtime);
uint32_t hsad_cpu_count(const hsad_runtime_t *runtime);

/* GPU agent `index` (0-based, enumeration order of hsa_iterate_agents). Errors:
 * HSAD_ERR_INVALID_ARGUMENT, HSAD_ERR_CLOSED, HSAD_ERR_DEVICE_INDEX (message gives the index
 * and the device count). */
hsad_status_t hsad_device_get(hsad_runtime_t *runtime, uint32_t index, hsad_device_t **out_device);

/* Read-only facts; owned by the runtime; NULL for a NULL device. Thread-safe. */
const hsad_device_info_t *hsad_device_info(const hsad_device_t *device);
#ifndef HSAD_NO_AMD
/* AMD only: the ROCr agent of the device, for interoperation with plain HSA calls (zero handle
 * for NULL and for a device of another vendor). */
#include <hsa/hsa.h>
hsa_agent_t hsad_device_agent(const hsad_device_t *device);
#endif
/* The runtime owning `device`, or NULL when `device` is not one of this runtime's devices
 * (a foreign or stale pointer: only its address is compared, it is never dereferenced) or the
 * runtime is closed. For modules built on hsa-dispatch (memory/) to refuse foreign devices.
 * Thread-safe. */
hsad_runtime_t *hsad_device_runtime(const hsad_device_t *device);
/* Counts hsa_init calls of this runtime: it changes when the last reference was closed and the
 * runtime opened again (every ROCr object of the earlier generation is gone). 0 when closed or
 * for a foreign handle. Thread-safe. */
uint64_t hsad_runtime_generation(const hsad_runtime_t *runtime);
/* Registers fn(arg) to run at the last hsad_runtime_close, before the queues are destroyed and
 * hsa_shut_down (ROCr still usable; the runtime already counts as closed). Hooks run in reverse
 * order of registration, under the runtime's lock: they must not call hsad_runtime_* or create
 * queues. Registering the same (fn, arg) again is a no-op; hooks stay registered for later
 * generations. For modules built on hsa-dispatch (memory/ releases its pools and signals).
 * Errors: HSAD_ERR_INVALID_ARGUMENT, HSAD_ERR_RESOURCE_EXHAUSTED (8 hooks). Thread-safe. */
hsad_status_t hsad_runtime_on_close(hsad_runtime_t *runtime, void (*fn)(void *arg), void *arg);
/* CPU agent `index`, or NULL when out of range / closed. */
const hsad_cpu_info_t *hsad_cpu_info(const hsad_runtime_t *runtime, uint32_t index);

/* CLOCK_MONOTONIC in ns: the time base of every deadline in this library. */
uint64_t hsad_now_ns(void);
/* A deadline that never passes. */
#define HSAD_DEADLINE_NEVER UINT64_MAX

/* ---- host-coherent buffers ----------------------------------------------------------- */

/* Allocates `size` bytes of fine-grained system memory from the pool of the device's nearest
 * CPU agent (its NUMA node) and grants the device access (hsa_amd_agents_allow_access). The
 * memory is coherent between host and device, zeroed, aligned to at least 4096 bytes.
 * A thin form of hsad_mem_alloc(device, HSAD_MEM_HOST_FINE, size, NULL, 0, out_ptr) (memory/
 * hsad_memory.h) that zeroes the bytes: one allocator and one registry, so hsad_mem_info
 * answers for it (kind HSAD_MEM_HOST_FINE) and hsad_mem_free frees it as well as
 * hsad_buffer_free does. On an NVIDIA device: pinned host memory mapped for the device
 * (cuMemHostAlloc), recorded by its backend. Thread-safe.
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL, size 0, a device of no open runtime),
 * HSAD_ERR_CLOSED, HSAD_ERR_UNSUPPORTED (no fine-grained pool near the device),
 * HSAD_ERR_OUT_OF_MEMORY, HSAD_ERR_RANGE (size overflows the pool's granule), HSAD_ERR_HSA. */
hsad_status_t hsad_buffer_alloc(hsad_device_t *device, size_t size, void **out_ptr);
/* Frees what hsad_buffer_alloc (or hsad_mem_alloc, hsad_host_pool_alloc) returned: the same
 * call as hsad_mem_free, its messages naming hsad_buffer_free. NULL: HSAD_OK, nothing done.
 * Nothing reaches ROCr unless ptr is a live allocation's base, so a misuse is an error, not a
 * ROCr complaint or a crash:
 *   HSAD_ERR_FREED          freed already (a double free; one of the last 1024 frees):
 *                           "hsad_buffer_free: 0x.. was already freed (host-fine memory of N
 *                           bytes at 0x..)"
 *   HSAD_ERR_NOT_ALLOCATED  no allocation starts at ptr (malloc memory, an interior pointer,
 *                           memory of a runtime since closed): "hsad_buffer_free: 0x.. was not
 *                           allocated or registered by hsad"
 *   HSAD_ERR_INVALID_ARGUMENT  registered caller memory (use hsad_mem_unregister)
 *   HSAD_ERR_IN_USE         a timed-out synchronous copy or fill still uses it
 *   HSAD_ERR_HSA            ROCr refused the free.
 * Returned void before issue 21; callers that ignore the status keep working. Thread-safe. */
hsad_status_t hsad_buffer_free(void *ptr);

/* ---- programs (code objects loaded on a device) -------------------------------------- */

/* Loads a code object (plain AMDGPU ELF, offload bundle or host fat binary; see codeobj) onto
 * `device`: picks the entry matching the device's ISA; a fat binary with several bundles (one
 * per HIP translation unit) contributes the matching entry of every bundle, all loaded into the
 * one executable, and kernels are looked up across them (hsad_program_codeobj is the first; two
 * units defining the same kernel: HSAD_ERR_METADATA_TYPE naming both). Checks each code object's target ID
 * against every ISA of the agent (hsad_target_id_compatible; ROCr #198: check before loading)
 * and that every kernel's NAME.kd is a symbol ROCr's loader exposes: a non-local STT_OBJECT
 * (or a type 10) symbol of the section named .symtab (ROCr 5.2.3 reads no other symbol table,
 * .dynsym included, and skips local ones; such a kernel loaded and then was "not found in the
 * frozen executable"; hsad_codeobj_load_memory and hsad inspect still read the object),
 * then hsa_code_object_reader_create_from_memory, hsa_executable_create_alt,
 * hsa_executable_load_agent_code_object, hsa_executable_freeze, and resolves every kernel's
 * NAME.kd symbol once (HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT).
 * Errors: those of hsad_codeobj_container_open_file/_memory and hsad_codeobj_load_entry,
 * HSAD_ERR_ISA_MISMATCH ("k.hsaco: code object targets gfx908, device 0 (gfx90a) supports
 * amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"), HSAD_ERR_MISSING_DESCRIPTOR ("k.hsaco: kernel
 * 'vadd': its descriptor symbol vadd.kd (symbol 3 of .symtab, section 10) has binding 0
 * (STB_LOCAL) and type 1 (STT_OBJECT): ROCr's loader exposes a kernel descriptor only through a
 * non-local STT_OBJECT or a type 10 symbol"; or it is not in .symtab; or no section is named
 * .symtab), HSAD_ERR_HSA (a loader call failed: names it and its status), HSAD_ERR_CLOSED,
 * HSAD_ERR_OUT_OF_MEMORY. Thread-safe. */
hsad_status_t hsad_program_load_file(hsad_device_t *device, const char *path,
                                     hsad_program_t **out_program);
hsad_status_t hsad_program_load_memory(hsad_device_t *device, const void *data, size_t size,
                                       const char *label, hsad_program_t **out_program);

/* Destroys the executable and the code object. NULL: HSAD_OK, nothing done.
 * A packet of one of its kernels still in flight is refused, and the program stays loaded
 * and usable (freeing its code under a queued packet makes the packet processor fetch a
 * kernel_object that is no longer GPU memory): a packet counts as in flight while it sits on
 * a live queue of the program's device between the queue's completion timeline (the epochs
 * reached: hsad_queue.h, "Timeline") and its write index. A dispatch submitted without a
 * completion therefore counts until a later completion of its queue is reached; wait for one
 * (hsad_completion_wait, hsad_queue_wait_idle) before destroying. Cost: one pass over the
 * unretired slots of the device's queues (at most the ring size each), under the runtime lock.
 * After the runtime's last close it only frees host memory (no check).
 * A kernel still held by an object that will submit it later (a prepared launch, a graph exec's
 * kernel node, a variant set) is refused the same way, before any packet is looked at: destroy
 * those first (the next submission would fetch freed code: a queue fault).
 * Errors: HSAD_ERR_IN_USE "hsad_program_destroy(CODE OBJECT): kernel 'NAME' is still held by N
 * prepared launch(es), graph exec kernel node(s) or variant set(s), which would submit its freed
 * code: destroy them first (hsad_launch_destroy, hsad_graph_exec_destroy,
 * hsad_variant_set_destroy); the program stays loaded"; HSAD_ERR_IN_USE
 * "hsad_program_destroy(CODE OBJECT): kernel 'NAME' is in flight on
 * queue ID of device N (packet P, not known to have completed): wait for a completion after it
 * (hsad_completion_wait, hsad_queue_wait_idle), then destroy the program" (the first such
 * packet found). NVIDIA programs: not checked, always HSAD_OK (cuModuleUnload). Returned void
 * before issue 21; callers that ignore the status keep working. Do not race it with
 * dispatches of the same program from other threads. After HSAD_OK the handle and its kernels
 * are freed: a second hsad_program_destroy of it, or any use, is undefined (as free() twice);
 * after HSAD_ERR_IN_USE the program is untouched and still the caller's. */
hsad_status_t hsad_program_destroy(hsad_program_t *program);

/* The codeobj view of the loaded code object (metadata of every kernel). */
const hsad_codeobj_t *hsad_program_codeobj(const hsad_program_t *program);
hsad_device_t *hsad_program_device(const hsad_program_t *program);
uint32_t hsad_program_kernel_count(const hsad_program_t *program);

/* Kernel by .name (or NAME.kd), O(1) expected (codeobj's hash table). Owned by the program.
 * Errors: HSAD_ERR_INVALID_ARGUMENT, HSAD_ERR_CLOSED, HSAD_ERR_KERNEL_NOT_FOUND (names the
 * kernel and the code object). */
hsad_status_t hsad_program_kernel(const hsad_program_t *program, const char *name,
                                  const hsad_device_kernel_t **out_kernel);
/* Kernel i in note order, NULL if out of range. */
const hsad_device_kernel_t *hsad_program_kernel_at(const hsad_program_t *program, uint32_t i);

/* Facts of a loaded kernel. */
typedef struct hsad_device_kernel_desc {
  const char *name;                  /* .name */
  uint64_t kernel_object;            /* address of the kernel descriptor in device memory */
  uint32_t kernarg_segment_size;     /* bytes (.kernarg_segment_size) */
  uint32_t kernarg_segment_align;    /* bytes */
  uint32_t group_segment_fixed_size; /* LDS bytes (.group_segment_fixed_size) */
  uint32_t private_segment_fixed_size; /* scratch bytes per work-item */
  uint32_t max_flat_workgroup_size;  /* work-items (.max_flat_workgroup_size; 1024 if absent) */
  uint32_t reqd_workgroup_size[3];   /* .reqd_workgroup_size, 0 if absent */
  bool uses_dynamic_stack;           /* .uses_dynamic_stack */
  const hsad_kernel_t *codeobj_kernel; /* metadata, kernarg plan (owned by the program) */
} hsad_device_kernel_desc_t;

const hsad_device_kernel_desc_t *hsad_device_kernel_desc(const hsad_device_kernel_t *kernel);

#ifdef __cplusplus
}
#endif

#include "hsa-dispatch/hsad_queue.h"
#include "hsa-dispatch/hsad_monitor.h"
#include "hsa-dispatch/hsad_variants.h"

#endif /* HSAD_H */
