/* kfd_emu_twin.h - host twins: the C functions kfd-emu's command processor runs in place of a
 * kernel's machine code.
 *
 * kfd-emu executes no GPU ISA. When its CP processes an AQL kernel-dispatch packet it maps
 * packet.kernel_object (the address of the 64-byte kernel descriptor ROCr's loader placed in
 * device memory) back to the kernel's symbol: the descriptor lies inside one allocation that
 * starts with the code object's ELF image, whose dynamic symbol table names `NAME.kd`. It then
 * reads the kernel's explicit arguments (offset, size, value kind) from the code object's
 * NT_AMDGPU_METADATA note and calls the twin named `kfd_emu_twin_NAME` once per workgroup.
 *
 * Finding twins: kfd-emu looks the symbol `kfd_emu_twin_<NAME>` (NAME is the kernel's symbol
 * name without `.kd`, e.g. a mangled HIP name) up with dlsym in, in order: the libraries named
 * in KFD_EMU_TWINS (colon-separated paths), libkfd-emu-twins.so beside kfd-emu (the twins of
 * kernels/ and of HIP's blit kernels), and the process itself (an executable linked with
 * -rdynamic can carry twins of its own kernels). Define a twin with KFD_EMU_TWIN(NAME).
 *
 * A kernel without a twin is a queue error naming the kernel, unless KFD_EMU_NO_TWIN=noop, which
 * completes such dispatches without running anything (for dispatch benchmarks).
 *
 * Arguments are read at the offsets the metadata declares, never at offsets the twin assumes,
 * so a kernarg layout bug in the dispatcher shows up as a wrong result or a queue error.
 *
 * Threading: a twin runs on the CP thread of the queue that dispatched it (one thread per
 * queue: twins of different queues may run at the same time, as kernels of different hardware
 * queues do, so a twin must not keep mutable global state); workgroups of one dispatch run one
 * after another, in order of workgroup id (x fastest). Twins must not keep pointers past their
 * return.
 */
#ifndef KFD_EMU_TWIN_H
#define KFD_EMU_TWIN_H

#include <hsa/hsa.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Argument value kinds, as named by the metadata's .value_kind. */
typedef enum kfd_emu_arg_kind {
  KFD_EMU_ARG_BY_VALUE = 0,
  KFD_EMU_ARG_GLOBAL_BUFFER,
  KFD_EMU_ARG_DYNAMIC_SHARED_POINTER,
  KFD_EMU_ARG_HIDDEN, /* any hidden_* argument; twins do not read them */
  KFD_EMU_ARG_OTHER,  /* image, sampler, pipe, queue ... */
} kfd_emu_arg_kind_t;

/* One explicit argument as the metadata declares it (bytes). */
typedef struct kfd_emu_arg {
  uint32_t offset;
  uint32_t size;
  kfd_emu_arg_kind_t kind;
} kfd_emu_arg_t;

/* One dispatch, as the CP read it. Owned by kfd-emu; valid during the twin call only. */
typedef struct kfd_emu_dispatch {
  const hsa_kernel_dispatch_packet_t *packet; /* the AQL packet in the queue ring */
  const char *kernel_name;                    /* symbol without ".kd" */
  const uint8_t *kernarg;                     /* packet->kernarg_address */
  uint32_t kernarg_size;                      /* .kernarg_segment_size, 0 when unknown */
  const kfd_emu_arg_t *args;                  /* explicit (non-hidden) arguments, in order */
  uint32_t arg_count;
  uint32_t dims;                              /* packet setup dimensions, 1-3 */
  uint32_t grid[3];                           /* grid size in work-items */
  uint32_t block[3];                          /* workgroup size in work-items */
  uint8_t *group_segment;                     /* LDS of the current workgroup:
                                                 packet->group_segment_size bytes, zeroed
                                                 before each workgroup */
  /* True when [ptr, ptr + bytes) lies in memory the GPU can reach: an allocation of a memory
   * pool or registered (locked) host memory. A wave touching anything else faults on a dGPU
   * with XNACK off (kfd-emu's GPUs), so twins check each buffer range a workgroup touches and
   * return nonzero instead of touching plain host memory. Thread-safe. */
  bool (*gpu_accessible)(const void *ptr, uint64_t bytes);
} kfd_emu_dispatch_t;

/* One workgroup. Work-item global id = base[d] + local id, local id < size[d]. */
typedef struct kfd_emu_workgroup {
  uint32_t id[3];   /* workgroup id */
  uint32_t base[3]; /* global id of local id 0: id * block */
  uint32_t size[3]; /* work-items in this workgroup: block, or less at the grid's edge */
} kfd_emu_workgroup_t;

/* A twin returns 0, or a nonzero value to report a memory violation (the queue error
 * HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION, as a faulting wave would). */
typedef int (*kfd_emu_twin_fn)(const kfd_emu_dispatch_t *d, const kfd_emu_workgroup_t *wg);

/* C++: twins are looked up by their C name (dlsym), so the macro gives them C linkage. */
#ifdef __cplusplus
#define KFD_EMU_TWIN_LINKAGE_ extern "C"
#else
#define KFD_EMU_TWIN_LINKAGE_
#endif
#define KFD_EMU_TWIN(name)                                                                  \
  KFD_EMU_TWIN_LINKAGE_ __attribute__((visibility("default"))) int kfd_emu_twin_##name(    \
      const kfd_emu_dispatch_t *d, const kfd_emu_workgroup_t *wg);                         \
  KFD_EMU_TWIN_LINKAGE_ __attribute__((visibility("default"))) int kfd_emu_twin_##name(    \
      const kfd_emu_dispatch_t *d, const kfd_emu_workgroup_t *wg)

/* Copies explicit argument `index` into *out when it exists and is exactly `size` bytes.
 * Returns 0 on success, -1 when the metadata declares no such argument or another size. */
static inline int kfd_emu_arg(const kfd_emu_dispatch_t *d, uint32_t index, void *out,
                              size_t size) {
  if (index >= d->arg_count || d->args[index].size != size) return -1;
  memcpy(out, d->kernarg + d->args[index].offset, size);
  return 0;
}

#ifdef __cplusplus
}
#endif
#endif /* KFD_EMU_TWIN_H */
