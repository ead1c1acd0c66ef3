/* hsad_codeobj_metadata.h - kernel metadata: argument value kinds, address spaces, .args entries,
 * kernel descriptors and hsad_kernel_info_t (AMDGPUUsage "Code Object V3+ Kernel Metadata Map",
 * "Kernel Descriptor").
 *
 * Part of codeobj/'s public interface: include codeobj/hsad_codeobj.h (the umbrella,
 * with the objects, ownership, thread-safety and error rules that hold for every part)
 * or this header alone. */
#ifndef HSAD_CODEOBJ_METADATA_H
#define HSAD_CODEOBJ_METADATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hsad_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------------------------ */
/* Enumerations mirroring metadata strings (AMDGPUUsage, "Code Object V3+ Kernel Argument     */
/* Metadata Map").                                                                            */

/* .value_kind of a kernel argument. Values are stable (tests and tools compare them). */
typedef enum hsad_value_kind {
  HSAD_VK_BY_VALUE = 0,             /* "by_value": bytes copied into the kernarg segment */
  HSAD_VK_GLOBAL_BUFFER,            /* "global_buffer": a global/constant pointer */
  HSAD_VK_DYNAMIC_SHARED_POINTER,   /* "dynamic_shared_pointer": an LDS (group) offset */
  HSAD_VK_SAMPLER,                  /* "sampler": 64-bit sampler handle */
  HSAD_VK_IMAGE,                    /* "image": 64-bit image handle */
  HSAD_VK_PIPE,                     /* "pipe": 64-bit pipe handle */
  HSAD_VK_QUEUE,                    /* "queue": 64-bit device queue handle */
  /* hidden arguments: written by hsad_kernarg_build() from the dispatch or the runtime */
  HSAD_VK_HIDDEN_GLOBAL_OFFSET_X,   /* u64: global offset x (work-items) */
  HSAD_VK_HIDDEN_GLOBAL_OFFSET_Y,
  HSAD_VK_HIDDEN_GLOBAL_OFFSET_Z,
  HSAD_VK_HIDDEN_NONE,              /* placeholder, left zero */
  HSAD_VK_HIDDEN_PRINTF_BUFFER,     /* u64 pointer */
  HSAD_VK_HIDDEN_HOSTCALL_BUFFER,   /* u64 pointer */
  HSAD_VK_HIDDEN_DEFAULT_QUEUE,     /* u64 pointer */
  HSAD_VK_HIDDEN_COMPLETION_ACTION, /* u64 pointer */
  HSAD_VK_HIDDEN_MULTIGRID_SYNC_ARG,/* u64 pointer */
  HSAD_VK_HIDDEN_BLOCK_COUNT_X,     /* v5 u32: grid_size / workgroup_size (full workgroups) */
  HSAD_VK_HIDDEN_BLOCK_COUNT_Y,
  HSAD_VK_HIDDEN_BLOCK_COUNT_Z,
  HSAD_VK_HIDDEN_GROUP_SIZE_X,      /* v5 u16: workgroup size (work-items) */
  HSAD_VK_HIDDEN_GROUP_SIZE_Y,
  HSAD_VK_HIDDEN_GROUP_SIZE_Z,
  HSAD_VK_HIDDEN_REMAINDER_X,       /* v5 u16: grid_size % workgroup_size (partial group) */
  HSAD_VK_HIDDEN_REMAINDER_Y,
  HSAD_VK_HIDDEN_REMAINDER_Z,
  HSAD_VK_HIDDEN_GRID_DIMS,         /* v5 u16: 1..3 */
  HSAD_VK_HIDDEN_HEAP_V1,           /* v5 u64 pointer to the device heap */
  HSAD_VK_HIDDEN_DYNAMIC_LDS_SIZE,  /* v5 u32: dynamic LDS bytes of this dispatch */
  HSAD_VK_HIDDEN_PRIVATE_BASE,      /* v5 u32: high half of the private aperture base */
  HSAD_VK_HIDDEN_SHARED_BASE,       /* v5 u32: high half of the shared aperture base */
  HSAD_VK_HIDDEN_QUEUE_PTR,         /* v5 u64: the hsa_queue_t / amd_queue_t address */
  HSAD_VK_COUNT_
} hsad_value_kind_t;

/* .address_space; HSAD_AS_NONE when the field is absent. */
typedef enum hsad_address_space {
  HSAD_AS_NONE = 0, HSAD_AS_PRIVATE, HSAD_AS_GLOBAL, HSAD_AS_CONSTANT, HSAD_AS_LOCAL,
  HSAD_AS_GENERIC, HSAD_AS_REGION
} hsad_address_space_t;

/* .access / .actual_access; HSAD_ACCESS_NONE when absent. */
typedef enum hsad_access {
  HSAD_ACCESS_NONE = 0, HSAD_ACCESS_READ_ONLY, HSAD_ACCESS_WRITE_ONLY, HSAD_ACCESS_READ_WRITE
} hsad_access_t;

/* Metadata spelling of each enumerator ("global_buffer", "hidden_block_count_x", "global",
 * "read_only"), or NULL for a value out of range / NONE. Static strings. Thread-safe. */
const char *hsad_value_kind_name(hsad_value_kind_t kind);
const char *hsad_address_space_name(hsad_address_space_t as);
const char *hsad_access_name(hsad_access_t access);
/* True for the HSAD_VK_HIDDEN_* kinds. */
bool hsad_value_kind_is_hidden(hsad_value_kind_t kind);

/* ------------------------------------------------------------------------------------------ */
/* Kernel metadata (AMDGPUUsage "Code Object V3+ Kernel Metadata Map").                        */

/* One entry of .args. Strings are owned by the hsad_codeobj_t; "" when the field is absent
 * (test `present` for absence). offset/size in bytes within the kernarg segment. */
typedef struct hsad_kernel_arg {
  const char *name;          /* .name */
  const char *type_name;     /* .type_name, e.g. "float*" */
  uint32_t offset;           /* .offset (bytes) */
  uint32_t size;             /* .size (bytes) */
  hsad_value_kind_t value_kind;        /* .value_kind */
  hsad_address_space_t address_space; /* .address_space */
  hsad_access_t access;                /* .access */
  hsad_access_t actual_access;         /* .actual_access */
  uint32_t pointee_align;    /* .pointee_align (bytes; dynamic_shared_pointer only), else 0 */
  bool is_const, is_restrict, is_volatile, is_pipe; /* .is_const etc.; false when absent */
  uint32_t present;          /* HSAD_ARG_HAS_* bits: which optional fields the note has */
} hsad_kernel_arg_t;

enum {
  HSAD_ARG_HAS_NAME = 1u << 0, HSAD_ARG_HAS_TYPE_NAME = 1u << 1,
  HSAD_ARG_HAS_ADDRESS_SPACE = 1u << 2, HSAD_ARG_HAS_ACCESS = 1u << 3,
  HSAD_ARG_HAS_ACTUAL_ACCESS = 1u << 4, HSAD_ARG_HAS_POINTEE_ALIGN = 1u << 5,
  HSAD_ARG_HAS_IS_CONST = 1u << 6, HSAD_ARG_HAS_IS_RESTRICT = 1u << 7,
  HSAD_ARG_HAS_IS_VOLATILE = 1u << 8, HSAD_ARG_HAS_IS_PIPE = 1u << 9,
};

/* The 64-byte kernel descriptor exactly as stored at symbol NAME.kd (AMDGPUUsage "Kernel
 * Descriptor"; LLVM's llvm/Support/AMDHSAKernelDescriptor.h). Little-endian, read by the CP. */
typedef struct hsad_kernel_descriptor {
  uint32_t group_segment_fixed_size;   /* 0: LDS bytes */
  uint32_t private_segment_fixed_size; /* 4: scratch bytes per work-item */
  uint32_t kernarg_size;               /* 8: kernarg segment bytes */
  uint8_t reserved0[4];                /* 12 */
  int64_t kernel_code_entry_byte_offset; /* 16: entry relative to the descriptor */
  uint8_t reserved1[20];               /* 24 */
  uint32_t compute_pgm_rsrc3;          /* 44 */
  uint32_t compute_pgm_rsrc1;          /* 48 */
  uint32_t compute_pgm_rsrc2;          /* 52 */
  uint16_t kernel_code_properties;     /* 56 */
  uint16_t kernarg_preload;            /* 58: gfx940+ (LLVM 17+): length bits 6:0, offset 15:7 */
  uint8_t reserved2[4];                /* 60 */
} hsad_kernel_descriptor_t;
HSAD_STATIC_ASSERT(sizeof(hsad_kernel_descriptor_t) == 64, "kernel descriptor is 64 bytes");
HSAD_STATIC_ASSERT(offsetof(hsad_kernel_descriptor_t, kernel_code_entry_byte_offset) == 16, "kd");
HSAD_STATIC_ASSERT(offsetof(hsad_kernel_descriptor_t, compute_pgm_rsrc3) == 44, "kd rsrc3");
HSAD_STATIC_ASSERT(offsetof(hsad_kernel_descriptor_t, compute_pgm_rsrc1) == 48, "kd rsrc1");
HSAD_STATIC_ASSERT(offsetof(hsad_kernel_descriptor_t, compute_pgm_rsrc2) == 52, "kd rsrc2");
HSAD_STATIC_ASSERT(offsetof(hsad_kernel_descriptor_t, kernel_code_properties) == 56, "kd props");

/* Fields decoded from the descriptor's words (AMDGPUUsage tables "compute_pgm_rsrc1/2/3" and
 * "Kernel Code Properties"). Register counts are the allocation the granulated fields imply. */
typedef struct hsad_kd_fields {
  uint32_t granulated_vgpr_count;   /* rsrc1 5:0 raw */
  uint32_t granulated_sgpr_count;   /* rsrc1 9:6 raw (reserved, 0, on gfx10+) */
  uint32_t vgpr_alloc;   /* VGPRs per work-item implied (incl. AGPRs on gfx90a/gfx940) */
  uint32_t sgpr_alloc;   /* SGPRs per wave implied; 0 on gfx10+ (field reserved there) */
  uint32_t priority, float_round_mode_32, float_round_mode_16_64, float_denorm_mode_32,
      float_denorm_mode_16_64;
  bool priv, dx10_clamp, debug_mode, ieee_mode, bulky, cdbg_user, fp16_ovfl, wgp_mode,
      mem_ordered, fwd_progress;
  bool enable_private_segment;      /* rsrc2 0: scratch enabled */
  uint32_t user_sgpr_count;         /* rsrc2 5:1 */
  bool enable_trap_handler, workgroup_id_x, workgroup_id_y, workgroup_id_z, workgroup_info;
  uint32_t vgpr_workitem_id;        /* rsrc2 12:11: 0=x, 1=x,y, 2=x,y,z */
  uint32_t granulated_lds_size;     /* rsrc2 23:15 (0 in code objects: CP uses the packet) */
  uint32_t exceptions;              /* rsrc2 30:24 bits as-is, shifted to bit 0 */
  uint32_t accum_offset;            /* gfx90a/gfx940 rsrc3 5:0 decoded: (raw + 1) * 4 VGPRs */
  bool tg_split;                    /* gfx90a/gfx940 rsrc3 16 */
  uint32_t shared_vgpr_count;       /* gfx10+ rsrc3 3:0 */
  uint32_t inst_pref_size;          /* gfx11+ rsrc3 9:4 */
  bool trap_on_start, trap_on_end, image_op; /* gfx11+ rsrc3 10, 11, 31 */
  /* kernel_code_properties */
  bool private_segment_buffer, dispatch_ptr, queue_ptr, kernarg_segment_ptr, dispatch_id,
      flat_scratch_init, private_segment_size, wavefront_size32, uses_dynamic_stack;
  uint32_t kernarg_preload_length;  /* SGPR dwords preloaded (0 when absent) */
  uint32_t kernarg_preload_offset;  /* dwords */
} hsad_kd_fields_t;

/* Everything the metadata note says about one kernel, plus the descriptor.
 * Strings and arrays are owned by the hsad_codeobj_t. Absent optional fields are 0 / "" /
 * false; `present` says which were in the note. */
typedef struct hsad_kernel_info {
  const char *name;                    /* .name (source name) */
  const char *symbol;                  /* .symbol, "NAME.kd" */
  const char *language;                /* .language, e.g. "OpenCL C", "HIP" */
  uint32_t language_version[2];        /* .language_version */
  const char *kind;                    /* .kind: "normal", "init", "fini" */
  const char *vec_type_hint;           /* .vec_type_hint */
  const char *device_enqueue_symbol;   /* .device_enqueue_symbol */
  uint32_t reqd_workgroup_size[3];     /* .reqd_workgroup_size, work-items */
  uint32_t workgroup_size_hint[3];     /* .workgroup_size_hint */
  uint32_t kernarg_segment_size;       /* .kernarg_segment_size, bytes */
  uint32_t kernarg_segment_align;      /* .kernarg_segment_align, bytes (power of 2) */
  uint32_t group_segment_fixed_size;   /* .group_segment_fixed_size, LDS bytes */
  uint32_t private_segment_fixed_size; /* .private_segment_fixed_size, bytes per work-item */
  uint32_t wavefront_size;             /* .wavefront_size, 32 or 64 */
  uint32_t sgpr_count;                 /* .sgpr_count, per wave */
  uint32_t vgpr_count;                 /* .vgpr_count, per work-item (arch VGPRs) */
  uint32_t agpr_count;                 /* .agpr_count (gfx908+) */
  uint32_t sgpr_spill_count;           /* .sgpr_spill_count */
  uint32_t vgpr_spill_count;           /* .vgpr_spill_count */
  uint32_t max_flat_workgroup_size;    /* .max_flat_workgroup_size, work-items */
  bool uses_dynamic_stack;             /* .uses_dynamic_stack */
  bool workgroup_processor_mode;       /* .workgroup_processor_mode (gfx10+) */
  bool uniform_work_group_size;        /* .uniform_work_group_size */
  uint32_t present;                    /* HSAD_KI_HAS_* bits */
  uint32_t arg_count;                  /* entries in args (explicit and hidden, note order;
                                          hidden ones past the segment left out) */
  const hsad_kernel_arg_t *args;
  hsad_kernel_descriptor_t descriptor; /* copy of the NAME.kd bytes */
  hsad_kd_fields_t kd;                 /* descriptor decoded */
  /* Cross-check of note vs descriptor: 0 if they agree, else HSAD_KD_MISMATCH_* bits (the
   * note wins; on gfx10+ the descriptor's SGPR field is reserved and never compared). */
  uint32_t kd_mismatch;
  /* Hidden arguments the note lists that end past .kernarg_segment_size (a partial hidden
   * block, e.g. amdgpu-implicitarg-num-bytes=24): not in `args`, never written. 0 normally. */
  uint32_t hidden_args_beyond_segment;
} hsad_kernel_info_t;

enum {
  HSAD_KI_HAS_LANGUAGE = 1u << 0, HSAD_KI_HAS_LANGUAGE_VERSION = 1u << 1,
  HSAD_KI_HAS_KIND = 1u << 2, HSAD_KI_HAS_VEC_TYPE_HINT = 1u << 3,
  HSAD_KI_HAS_DEVICE_ENQUEUE_SYMBOL = 1u << 4, HSAD_KI_HAS_REQD_WORKGROUP_SIZE = 1u << 5,
  HSAD_KI_HAS_WORKGROUP_SIZE_HINT = 1u << 6, HSAD_KI_HAS_AGPR_COUNT = 1u << 7,
  HSAD_KI_HAS_SGPR_SPILL_COUNT = 1u << 8, HSAD_KI_HAS_VGPR_SPILL_COUNT = 1u << 9,
  HSAD_KI_HAS_USES_DYNAMIC_STACK = 1u << 10, HSAD_KI_HAS_WGP_MODE = 1u << 11,
  HSAD_KI_HAS_UNIFORM_WORK_GROUP_SIZE = 1u << 12, HSAD_KI_HAS_ARGS = 1u << 13,
};

enum {
  HSAD_KD_MISMATCH_GROUP_SEGMENT = 1u << 0,   /* kd.group_segment_fixed_size != note */
  HSAD_KD_MISMATCH_PRIVATE_SEGMENT = 1u << 1, /* kd.private_segment_fixed_size != note */
  HSAD_KD_MISMATCH_KERNARG_SIZE = 1u << 2,    /* kd.kernarg_size != note (when kd's != 0) */
  HSAD_KD_MISMATCH_VGPR = 1u << 3,            /* note's VGPRs (+AGPRs) exceed kd allocation */
  HSAD_KD_MISMATCH_SGPR = 1u << 4,            /* gfx6-9: note's SGPRs exceed kd allocation */
  HSAD_KD_MISMATCH_WAVE_SIZE = 1u << 5,       /* wavefront_size32 bit vs .wavefront_size */
  HSAD_KD_MISMATCH_DYNAMIC_STACK = 1u << 6,   /* USES_DYNAMIC_STACK bit vs note */
};

#ifdef __cplusplus
}
#endif
#endif /* HSAD_CODEOBJ_METADATA_H */
