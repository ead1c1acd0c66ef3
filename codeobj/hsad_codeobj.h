/* hsad_codeobj.h - AMDGPU code objects: loading, metadata, kernel descriptors, kernarg builder.
 *
 * The one header other folders include from codeobj/. It needs no GPU and no ROCr.
 *
 * Objects and ownership
 *   hsad_codeobj_container_t  an input file or buffer: a plain code object (ELF), a clang
 *                             offload bundle (__CLANG_OFFLOAD_BUNDLE__) or a host ELF with a
 *                             .hip_fatbin section (many concatenated bundles). Lists the code
 *                             objects inside ("entries"). Owns a copy of the input bytes.
 *   hsad_codeobj_t            one loaded code object: its target, version and kernels. Owns a
 *                             private copy of the ELF image and every string and array reachable
 *                             from it; it does not depend on the container or the caller's buffer
 *                             after the load call returns.
 *   hsad_kernel_t             one kernel inside an hsad_codeobj_t; owned by it, valid until
 *                             hsad_codeobj_destroy(). Carries the decoded metadata
 *                             (hsad_kernel_info_t), the decoded kernel descriptor and a
 *                             precomputed kernarg plan used by hsad_kernarg_build().
 *
 * Thread safety: loading, destroying and the accessors are reentrant (no global mutable state
 * besides the per-thread error message of common/hsad_status.h and one-time initialisation
 * under pthread_once: libelf's version, comgr's dlopen). A loaded hsad_codeobj_t is immutable:
 * any number of threads may look kernels up, read their info and build kernargs concurrently
 * without locks. Destroy it only when no other thread uses it.
 *
 * Errors: every fallible call returns hsad_status_t; hsad_last_error() then holds a message that
 * starts with the file name (or the caller's label for a buffer) and says what is wrong, e.g.
 * "k.hsaco: truncated: section header table (offset 3520, 9 x 64 bytes) runs past the end of
 * the 4160-byte file".
 *
 * Rule sources: "AMDGPUUsage" below is LLVM's AMDGPU backend user guide
 * (llvm/docs/AMDGPUUsage.rst, sections "ELF Code Object", "Code Object Metadata",
 * "Kernel Descriptor", "Code Object V5 Metadata" and "Hidden/implicit kernel arguments").
 */
#ifndef HSAD_CODEOBJ_H
#define HSAD_CODEOBJ_H

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

/* ------------------------------------------------------------------------------------------ */
/* Targets (AMDGPUUsage "Target ID", "ELF Header" e_flags).                                   */

/* Feature setting of a target ID: xnack / sramecc. */
typedef enum hsad_feature {
  HSAD_FEATURE_UNSUPPORTED = 0, /* processor has no such feature (absent from the ID) */
  HSAD_FEATURE_ANY = 1,         /* supported, not specified: runs with either setting */
  HSAD_FEATURE_OFF = 2,         /* ":xnack-" */
  HSAD_FEATURE_ON = 3,          /* ":xnack+" */
} hsad_feature_t;

/* A parsed target ID such as "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-" or "gfx90a:xnack-". */
typedef struct hsad_target_id {
  char processor[16];       /* "gfx90a" */
  hsad_feature_t xnack;
  hsad_feature_t sramecc;
} hsad_target_id_t;

/* Parses a target ID, with or without the "amdgcn-amd-amdhsa--" prefix (an environment word
 * such as "amdgcn-amd-amdhsa-unknown-gfx90a", as newer clangs write in bundle entry ids, is
 * skipped the same way: llvm #91637). Features given in the
 * string become ON/OFF, the others ANY. Errors: HSAD_ERR_INVALID_ARGUMENT (NULL, empty, unknown
 * feature, processor name longer than 15 characters, feature given twice). */
hsad_status_t hsad_target_id_parse(const char *text, hsad_target_id_t *out_id);

/* Formats as "gfx90a:sramecc+:xnack-" (features in the canonical alphabetical order; ANY and
 * UNSUPPORTED omitted). Returns the length snprintf would; out may be NULL with n = 0. */
int hsad_target_id_format(const hsad_target_id_t *id, char *out, size_t n);

/* Target-ID compatibility (AMDGPUUsage "Target ID" and ROCr's ISA matching): same processor,
 * and for each feature the code object's ON/OFF must equal the agent's; a code object feature
 * ANY/UNSUPPORTED matches any agent setting; an agent feature ANY (unspecified, e.g. a user
 * typed "gfx90a") matches any code object setting. Pure; thread-safe. */
bool hsad_target_id_compatible(const hsad_target_id_t *code_object, const hsad_target_id_t *agent);

/* ------------------------------------------------------------------------------------------ */
/* Containers and entries                                                                     */

typedef enum hsad_container_kind {
  HSAD_CONTAINER_CODE_OBJECT = 0, /* the input is one AMDGPU ELF */
  HSAD_CONTAINER_BUNDLE = 1,      /* one clang offload bundle */
  HSAD_CONTAINER_HOST_FATBIN = 2, /* host ELF with .hip_fatbin (one or more bundles) */
} hsad_container_kind_t;

/* How the bundle holding an entry was stored (clang's compressed offload bundle "CCOB"). */
typedef enum hsad_compression {
  HSAD_COMPRESSION_NONE = 0, /* plain bundle, or a plain code object */
  HSAD_COMPRESSION_ZLIB = 1, /* CCOB method 0 */
  HSAD_COMPRESSION_ZSTD = 2, /* CCOB method 1 */
} hsad_compression_t;

/* One code object inside a container. `data` points into the container's copy of the input,
 * or into its decompressed copy of a compressed bundle. */
typedef struct hsad_codeobj_entry {
  const char *entry_id;  /* bundle entry id, "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-" (an
                            environment word, "...-amdhsa-unknown-gfx90a", is kept here);
                            "" for a plain code object */
  const char *target;    /* target ID from the entry id / ELF, "gfx90a:xnack-" */
  const void *data;      /* ELF bytes */
  size_t size;           /* bytes */
  uint64_t offset;       /* byte offset of the ELF in the input; for a compressed bundle, in
                            the decompressed bundle */
  uint32_t bundle_index; /* which bundle of a .hip_fatbin or bundle file (0 for the first) */
  hsad_compression_t compression; /* NONE, or how its bundle was compressed */
  uint32_t compressed_version;    /* CCOB format version (2 or 3); 0 when not compressed */
  uint64_t compressed_offset;     /* byte offset of the "CCOB" header in the input */
} hsad_codeobj_entry_t;

typedef struct hsad_codeobj_container hsad_codeobj_container_t;

/* Opens a file / buffer and lists the AMDGPU code objects inside (host entries of bundles and
 * non-amdgcn entries are skipped). The container copies the input (open_memory) or reads the
 * whole file (open_file); `label` names a buffer in messages (NULL: "<memory>").
 * Inputs: an AMDGPU ELF; a clang offload bundle, plain or compressed (clang's "CCOB" format
 * versions 2 and 3, zlib or zstd; ROCm 6+ default), or several back to back; a host ELF whose
 * .hip_fatbin section holds such bundles (one per HIP translation unit), walked by each bundle's
 * own size fields. A compressed bundle's declared uncompressed size is checked against what its
 * payload can expand to (zlib: 1032:1; zstd: the frame's content size; at most 4 GiB) before
 * it is allocated, and against what it expanded to after.
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL out or data), HSAD_ERR_IO (open/read failed: message
 * has errno text), HSAD_ERR_NOT_ELF (neither ELF nor bundle, or a compressed bundle holding no
 * bundle), HSAD_ERR_TRUNCATED (a bundle header/entry or the .hip_fatbin section runs past the
 * end; a compressed bundle whose sizes disagree with its payload or whose payload does not
 * decompress: the message names the bundle, its offset and the zlib/zstd reason),
 * HSAD_ERR_BAD_ELF (host ELF whose section table is malformed), HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND
 * (bundle/fatbin with no amdgcn entry, or a host ELF without .hip_fatbin), HSAD_ERR_UNSUPPORTED
 * (compressed bundle format version other than 2/3, or a method other than zlib/zstd),
 * HSAD_ERR_OUT_OF_MEMORY. */
hsad_status_t hsad_codeobj_container_open_file(const char *path,
                                               hsad_codeobj_container_t **out_container);
hsad_status_t hsad_codeobj_container_open_memory(const void *data, size_t size,
                                                 const char *label,
                                                 hsad_codeobj_container_t **out_container);
/* Frees the container and its copy of the input; entries (and their data pointers) become
 * invalid. Code objects loaded from it stay valid (they own copies). NULL is a no-op. */
void hsad_codeobj_container_destroy(hsad_codeobj_container_t *container);

/* What the input was. Never fails for a container from open_*. Thread-safe (read-only). */
hsad_container_kind_t hsad_codeobj_container_kind(const hsad_codeobj_container_t *container);
/* Number of amdgcn code objects found (>= 1 for an opened container; 0 for NULL). */
size_t hsad_codeobj_container_entry_count(const hsad_codeobj_container_t *container);
/* Entry i (0-based, in file order: bundle by bundle, entries in bundle order) or NULL when
 * i >= count. Owned by the container, valid until it is destroyed. Thread-safe (read-only). */
const hsad_codeobj_entry_t *hsad_codeobj_container_entry(const hsad_codeobj_container_t *c,
                                                         size_t i);

/* Picks the entry for an agent ISA (target ID, see hsad_target_id_compatible): among
 * compatible entries the one whose features match the agent most exactly (an exact ON/OFF
 * match beats ANY), the first on ties. agent_isa NULL: the first entry.
 * Errors: HSAD_ERR_INVALID_ARGUMENT (bad agent_isa text), HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND
 * (no compatible entry; the message lists the targets the file has). */
hsad_status_t hsad_codeobj_container_select(const hsad_codeobj_container_t *container,
                                            const char *agent_isa, size_t *out_index);

/* Offload bundles in the container: 1 for a bundle file, the number found in a .hip_fatbin
 * section (HIP emits one bundle per translation unit, so a program's kernels are spread over
 * them), 0 for a plain code object. Entry bundle_index values run 0..count-1. */
uint32_t hsad_codeobj_container_bundle_count(const hsad_codeobj_container_t *container);

/* As hsad_codeobj_container_select, among the entries of one bundle only: an agent needs the
 * matching entry of every bundle of a fat binary to have all of its kernels.
 * Errors: HSAD_ERR_INVALID_ARGUMENT, HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND (message names the bundle
 * and the targets it has). */
hsad_status_t hsad_codeobj_container_select_in_bundle(const hsad_codeobj_container_t *container,
                                                      uint32_t bundle_index,
                                                      const char *agent_isa,
                                                      size_t *out_index);

/* ------------------------------------------------------------------------------------------ */
/* Code objects                                                                               */

typedef struct hsad_codeobj hsad_codeobj_t;
typedef struct hsad_kernel hsad_kernel_t;

/* Code-object-wide facts. Strings owned by the hsad_codeobj_t. */
typedef struct hsad_codeobj_info {
  const char *name;            /* file name / label used in messages */
  uint32_t code_object_version;/* 3, 4 or 5 (from e_ident[EI_ABIVERSION]: 1, 2, 3) */
  uint32_t e_flags;            /* ELF e_flags */
  uint32_t mach;               /* e_flags & EF_AMDGPU_MACH */
  const char *target;          /* amdhsa.target, "amdgcn-amd-amdhsa--gfx90a:xnack-" */
  hsad_target_id_t target_id;  /* parsed; agrees with e_flags (checked at load) */
  uint32_t amdhsa_version[2];  /* amdhsa.version */
  const void *image;           /* the ELF bytes (private copy) */
  size_t image_size;
  uint32_t kernel_count;
} hsad_codeobj_info_t;

/* Loads one code object (a linked AMDGPU ELF, ET_DYN). Copies the bytes. A relocatable object
 * (ET_REL, clang -c) is refused with HSAD_ERR_UNSUPPORTED and a message saying to link it
 * (ld.lld-15 -shared): its entry offsets are unresolved relocations.
 * Checks, in order: ELF magic, class ELF64 / little-endian / e_machine EM_AMDGPU (224) /
 * OS ABI ELFOSABI_AMDGPU_HSA (64), every header, section, and note in bounds, code object
 * version (v3 read-only; v4 and v5 fully), the NT_AMDGPU_METADATA note and its msgpack,
 * amdhsa.target vs e_flags (processor, xnack, sramecc), every kernel's fields and types,
 * value kinds, and each kernel's NAME.kd symbol (64 bytes in a loaded section).
 * `label` names a buffer in messages (NULL: "<memory>").
 * Errors (message names the file and the problem): HSAD_ERR_INVALID_ARGUMENT,
 * HSAD_ERR_IO, HSAD_ERR_NOT_ELF, HSAD_ERR_TRUNCATED, HSAD_ERR_BAD_ELF,
 * HSAD_ERR_CODE_OBJECT_VERSION (names the version found and "supported: 3 (read), 4, 5"),
 * HSAD_ERR_BAD_NOTE, HSAD_ERR_BAD_METADATA, HSAD_ERR_METADATA_TYPE (names kernel and field),
 * HSAD_ERR_UNKNOWN_VALUE_KIND, HSAD_ERR_MISSING_DESCRIPTOR, HSAD_ERR_TARGET_MISMATCH,
 * HSAD_ERR_UNSUPPORTED (ET_REL), HSAD_ERR_OUT_OF_MEMORY. */
hsad_status_t hsad_codeobj_load_memory(const void *data, size_t size, const char *label,
                                       hsad_codeobj_t **out_codeobj);

/* Loads the kernel metadata of a code object from its NT_AMDGPU_METADATA note payload alone
 * (`desc`, the note's msgpack bytes, `size` of them; copied), for a code object whose ELF file
 * image is not at hand: a loader's image laid out by p_vaddr (ROCr's loader copies each
 * segment to its address; section headers are not loaded), as kfd-emu finds it behind a
 * dispatch's kernel_object (tools/kfd-emu/kernels.c). Decodes what hsad_codeobj_load_memory
 * decodes from the note, with the same checks and messages: the kernels in note order, their
 * arguments (explicit and hidden) and kernarg plans, amdhsa.target parsed into target_id.
 * What needs the ELF is absent: every kernel's descriptor and kd fields are zero and
 * kd_mismatch 0, info.image NULL, e_flags and mach 0 (no e_flags check of the target).
 * code_object_version: 3, 4 or 5 (e_ident[EI_ABIVERSION] 1, 2, 3 of the ELF header, which a
 * loaded image keeps at offset 0). `label` names it in messages (NULL: "<memory>").
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL desc or out_codeobj), HSAD_ERR_CODE_OBJECT_VERSION
 * (not 3..5; the message names it), HSAD_ERR_BAD_METADATA, HSAD_ERR_METADATA_TYPE,
 * HSAD_ERR_UNKNOWN_VALUE_KIND (as hsad_codeobj_load_memory's), HSAD_ERR_OUT_OF_MEMORY. On
 * failure *out_codeobj is NULL. Thread-safe (no shared state; the message is per thread). */
hsad_status_t hsad_codeobj_load_note(const void *desc, size_t size,
                                     uint32_t code_object_version, const char *label,
                                     hsad_codeobj_t **out_codeobj);

/* Loads the code object for `agent_isa` from any input (plain code object, bundle or host
 * fat binary): container_open_file + container_select + load. agent_isa NULL: the first one.
 * A fat binary with several bundles (one per HIP translation unit) yields only the best entry
 * over all bundles (the earliest on ties): open the container and use
 * hsad_codeobj_container_select_in_bundle for each bundle to get all of its kernels.
 * For a plain code object with agent_isa given, the object's target must be compatible
 * (HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND otherwise, message "... targets gfx906, not gfx90a").
 * Errors: those of the three calls. */
hsad_status_t hsad_codeobj_load_file(const char *path, const char *agent_isa,
                                     hsad_codeobj_t **out_codeobj);

/* Loads entry i of a container (the entry's id becomes part of the code object's name). */
hsad_status_t hsad_codeobj_load_entry(const hsad_codeobj_container_t *container, size_t i,
                                      hsad_codeobj_t **out_codeobj);

/* Frees the code object, its kernels, infos, plans and strings. NULL is a no-op. No other
 * thread may use the code object or its kernels during or after the call. */
void hsad_codeobj_destroy(hsad_codeobj_t *codeobj);

/* Code-object-wide facts; owned by the code object (NULL for NULL). Thread-safe (read-only). */
const hsad_codeobj_info_t *hsad_codeobj_info(const hsad_codeobj_t *codeobj);

/* Kernels in the order of amdhsa.kernels in the note. i >= kernel_count: NULL. Owned by the
 * code object. Thread-safe (read-only). */
const hsad_kernel_t *hsad_codeobj_kernel_at(const hsad_codeobj_t *codeobj, uint32_t i);

/* O(1) expected lookup by .name (hash table built at load) or, when `name` ends in ".kd", by
 * .symbol. Errors: HSAD_ERR_INVALID_ARGUMENT (NULL), HSAD_ERR_KERNEL_NOT_FOUND (message names
 * the file and the kernel). Thread-safe on a loaded code object. */
hsad_status_t hsad_codeobj_kernel_find(const hsad_codeobj_t *codeobj, const char *name,
                                       const hsad_kernel_t **out_kernel);

/* The offload-bundle entry id the code object was loaded from by hsad_codeobj_load_entry /
 * hsad_codeobj_load_file ("hipv4-amdgcn-amd-amdhsa--gfx90a"); "" for a plain code object, for
 * hsad_codeobj_load_memory and for NULL. Owned by the code object. Thread-safe (read-only). */
const char *hsad_codeobj_entry_id(const hsad_codeobj_t *codeobj);

/* True when the code object is HIP device code by where it came from: an offload-bundle entry
 * of offload kind "hip" or "hipv4" (entry ids "hip-..." / "hipv4-..."), or any entry of a host
 * ELF's .hip_fatbin section. ROCm 5.2's HIP compiler writes .language "OpenCL C" and no
 * .type_name, so the metadata alone cannot tell (HIP's blockDim is the partial size in a last
 * partial workgroup, which callers may want to warn about). False for a plain code object
 * and NULL. Thread-safe (read-only). */
bool hsad_codeobj_is_hip(const hsad_codeobj_t *codeobj);

/* The code object a kernel belongs to (NULL for NULL). O(1); thread-safe. */
const hsad_codeobj_t *hsad_kernel_codeobj(const hsad_kernel_t *kernel);

/* The kernel's position in its code object (0-based, amdhsa.kernels order: the i of
 * hsad_codeobj_kernel_at); UINT32_MAX for NULL. O(1); thread-safe. */
uint32_t hsad_kernel_index(const hsad_kernel_t *kernel);

/* The kernel's metadata and descriptor; owned by the code object (NULL only for NULL).
 * Thread-safe (read-only). */
const hsad_kernel_info_t *hsad_kernel_info(const hsad_kernel_t *kernel);

/* ------------------------------------------------------------------------------------------ */
/* Kernarg builder                                                                            */

/* One explicit argument value, in .args order (hidden arguments excluded). */
typedef enum hsad_karg_tag {
  HSAD_KARG_BYTES = 0,   /* `bytes`, `size` must equal the argument's .size. Any kind but
                            dynamic_shared_pointer and global_buffer (issue 21: a pointer is
                            HSAD_KARG_POINTER, so an integer is never taken for an address) */
  HSAD_KARG_POINTER = 1, /* `pointer`: global_buffer / image / sampler / pipe / queue; written
                            in .size bytes (8, or 4 for 32-bit address spaces: must fit) */
  HSAD_KARG_LDS = 2,     /* `lds_bytes`: dynamic_shared_pointer; the builder assigns the LDS
                            offset (see hsad_kernarg_build) */
} hsad_karg_tag_t;

typedef struct hsad_karg {
  hsad_karg_tag_t tag;
  uint32_t size;         /* BYTES: bytes at `bytes`; otherwise ignored */
  union {
    const void *bytes;
    uint64_t pointer;
    uint32_t lds_bytes;
  };
} hsad_karg_t;

/* Argument constructors: HSAD_KARG_VAL(lvalue) passes the bytes of an lvalue by value (its
 * sizeof is the size checked against .size), HSAD_KARG_PTR(p) a buffer address,
 * HSAD_KARG_LDS_BYTES(n) n bytes of dynamic LDS. C: compound literals (usable in any
 * initializer of automatic storage). C++ has neither compound literals nor (before C++20)
 * designated initializers: the same macros call the inline constructors below, so one spelling
 * serves both.
 * HSAD_KARG_VAL of an lvalue of pointer type (`float *x; HSAD_KARG_VAL(x)`) is a pointer
 * argument (tag HSAD_KARG_POINTER, the pointer's value), as HSAD_KARG_PTR(x) is: bytes
 * (HSAD_KARG_BYTES) given for a global_buffer are refused (HSAD_ERR_ARG_KIND, issue 21: an
 * integer that holds an address is not accepted as a pointer), so the idiom must say it is
 * a pointer. C finds pointer types with GCC/Clang's __builtin_classify_type (an array is
 * not a pointer: it passes its bytes); C++ with a template on the lvalue's type.
 * Literals (C only: compound literals, alive until the end of the enclosing block):
 * HSAD_KARG_I32(x), HSAD_KARG_U32(x), HSAD_KARG_I64(x), HSAD_KARG_U64(x), HSAD_KARG_F32(x),
 * HSAD_KARG_F64(x) pass x converted to int32_t, uint32_t, int64_t, uint64_t, float, double:
 * `HSAD_KARG_F32(2.5f)`, `HSAD_KARG_U32(n * 2)`. */
/* The 8 bytes of a pointer lvalue at `at`, as an integer (a byte copy: no aliasing). */
static inline uint64_t hsad_karg_pointer_at_(const void *at) {
  uint64_t v = 0;
  for (unsigned i = 0; i < sizeof v; i++) ((unsigned char *)&v)[i] = ((const unsigned char *)at)[i];
  return v;
}
#ifdef __cplusplus
static inline hsad_karg_t hsad_karg_bytes_(const void *bytes, uint32_t size) {
  hsad_karg_t k;
  k.tag = HSAD_KARG_BYTES;
  k.size = size;
  k.bytes = bytes;
  return k;
}
static inline hsad_karg_t hsad_karg_pointer_(uint64_t address) {
  hsad_karg_t k;
  k.tag = HSAD_KARG_POINTER;
  k.size = 8;
  k.pointer = address;
  return k;
}
static inline hsad_karg_t hsad_karg_lds_(uint32_t bytes) {
  hsad_karg_t k;
  k.tag = HSAD_KARG_LDS;
  k.size = 0;
  k.lds_bytes = bytes;
  return k;
}
}
extern "C++" {
template <typename T> struct hsad_karg_is_pointer_ { enum { value = 0 }; };
template <typename T> struct hsad_karg_is_pointer_<T *> { enum { value = 1 }; };
template <typename T> static inline hsad_karg_t hsad_karg_val_(const T &v) {
  if (hsad_karg_is_pointer_<T>::value)
    return hsad_karg_pointer_(hsad_karg_pointer_at_(&v));
  return hsad_karg_bytes_(&v, (uint32_t)sizeof v);
}
}
extern "C" {
#define HSAD_KARG_VAL(lvalue) hsad_karg_val_(lvalue)
#define HSAD_KARG_PTR(p) hsad_karg_pointer_((uint64_t)(uintptr_t)(p))
#define HSAD_KARG_LDS_BYTES(n) hsad_karg_lds_((uint32_t)(n))
#else
#if defined(__GNUC__) || defined(__clang__)
/* 1 for an lvalue of pointer type; 0 for an array (its type differs from its decayed one) */
#define HSAD_KARG_IS_POINTER_(x)                                                              \
  (__builtin_classify_type(x) == 5 /* pointer_type_class */ &&                                \
   __builtin_types_compatible_p(__typeof__(x), __typeof__(((void)0, (x)))))
#else
#define HSAD_KARG_IS_POINTER_(x) 0
#endif
/* .pointer and .bytes share their 8 bytes (LP64): the address of the lvalue is stored as the
 * integer .pointer for bytes, so one designator serves both tags */
#define HSAD_KARG_VAL(lvalue)                                                                 \
  ((hsad_karg_t){.tag = HSAD_KARG_IS_POINTER_(lvalue) ? HSAD_KARG_POINTER : HSAD_KARG_BYTES,  \
                 .size = HSAD_KARG_IS_POINTER_(lvalue) ? 8u : (uint32_t)sizeof(lvalue),       \
                 .pointer = HSAD_KARG_IS_POINTER_(lvalue)                                     \
                                ? hsad_karg_pointer_at_(&(lvalue))                            \
                                : (uint64_t)(uintptr_t)(const void *)&(lvalue)})
#define HSAD_KARG_SCALAR_(type, x)                                                            \
  ((hsad_karg_t){.tag = HSAD_KARG_BYTES, .size = sizeof(type), .bytes = &(const type){(type)(x)}})
#define HSAD_KARG_I32(x) HSAD_KARG_SCALAR_(int32_t, x)
#define HSAD_KARG_U32(x) HSAD_KARG_SCALAR_(uint32_t, x)
#define HSAD_KARG_I64(x) HSAD_KARG_SCALAR_(int64_t, x)
#define HSAD_KARG_U64(x) HSAD_KARG_SCALAR_(uint64_t, x)
#define HSAD_KARG_F32(x) HSAD_KARG_SCALAR_(float, x)
#define HSAD_KARG_F64(x) HSAD_KARG_SCALAR_(double, x)
#define HSAD_KARG_PTR(p) \
  ((hsad_karg_t){.tag = HSAD_KARG_POINTER, .size = 8, .pointer = (uint64_t)(uintptr_t)(p)})
#define HSAD_KARG_LDS_BYTES(n) \
  ((hsad_karg_t){.tag = HSAD_KARG_LDS, .size = 0, .lds_bytes = (n)})
#endif

/* The dispatch geometry the hidden arguments describe (the AQL packet's fields). */
typedef struct hsad_dispatch_dims {
  uint32_t grid_size[3];      /* work-items per dimension, >= 1 (unused dims: 1) */
  uint16_t workgroup_size[3]; /* work-items per dimension, >= 1 */
  uint16_t dims;              /* 1..3 (hidden_grid_dims; the packet's setup dimensions) */
  uint64_t global_offset[3];  /* hidden_global_offset_x/y/z, work-items; usually 0 */
} hsad_dispatch_dims_t;

/* Hidden values only the runtime knows. Zero for any the caller does not provide: the field
 * is then written as 0 (a kernel that dereferences it faults, as with ROCr's defaults). */
typedef struct hsad_kernarg_runtime {
  uint64_t queue_ptr;           /* hidden_queue_ptr: amd_queue_t address */
  uint64_t heap_v1;             /* hidden_heap_v1 */
  uint64_t hostcall_buffer;     /* hidden_hostcall_buffer */
  uint64_t printf_buffer;       /* hidden_printf_buffer */
  uint64_t multigrid_sync_arg;  /* hidden_multigrid_sync_arg */
  uint64_t default_queue;       /* hidden_default_queue */
  uint64_t completion_action;   /* hidden_completion_action */
  uint32_t private_base;        /* hidden_private_base: high 32 bits of the private aperture */
  uint32_t shared_base;         /* hidden_shared_base: high 32 bits of the shared aperture */
} hsad_kernarg_runtime_t;

/* The per-kernel plan, precomputed at load (read-only; for callers that emit their own). */
typedef struct hsad_kernarg_slot {
  uint32_t offset;              /* bytes into the kernarg segment */
  uint32_t size;                /* bytes */
  hsad_value_kind_t kind;
  uint32_t align;               /* dynamic_shared_pointer: LDS alignment (bytes), else 0 */
} hsad_kernarg_slot_t;

typedef struct hsad_kernarg_plan {
  uint32_t segment_size;        /* .kernarg_segment_size, bytes */
  uint32_t segment_align;       /* max(.kernarg_segment_align, 16), bytes */
  uint32_t explicit_count;      /* explicit (non-hidden) arguments */
  const hsad_kernarg_slot_t *explicit_args;
  uint32_t hidden_count;        /* hidden arguments the note declares (incl. hidden_none) */
  const hsad_kernarg_slot_t *hidden_args;
  uint32_t group_segment_fixed_size; /* .group_segment_fixed_size, bytes */
  bool has_dynamic_lds;         /* any dynamic_shared_pointer argument */
} hsad_kernarg_plan_t;

/* The kernel's kernarg plan (explicit slots in .args order, then hidden slots in .args order),
 * built at load; owned by the code object; NULL only for NULL. Thread-safe (read-only). */
const hsad_kernarg_plan_t *hsad_kernel_kernarg_plan(const hsad_kernel_t *kernel);

/* Builds the kernarg segment of one dispatch into `out` (out_size >= .kernarg_segment_size,
 * `out` aligned to at least 16 bytes; 64 recommended). The first kernarg_segment_size bytes are
 * zeroed, explicit arguments copied at their .offset, each hidden argument written field by
 * field, little-endian, in its declared .size at its declared .offset (v4: global offsets,
 * hidden_none (left 0), printf, hostcall, default queue, completion action, multigrid; v5:
 * block counts, group sizes, remainders, grid dims, global offsets, heap, private/shared base,
 * queue pointer, dynamic LDS size, ...). Bytes beyond kernarg_segment_size are not touched.
 * dynamic_shared_pointer arguments receive, in .args order, the LDS offset
 * align_up(running, max(.pointee_align, 4)) starting at .group_segment_fixed_size; the running
 * end is returned in *out_group_segment_size (fixed + dynamic bytes incl. alignment padding:
 * the AQL packet's group_segment_size). No allocation; thread-safe; O(args).
 * block_count = grid_size / workgroup_size, remainder = grid_size % workgroup_size
 * (AMDGPUUsage "Code Object V5 Metadata" hidden arguments; device libs' ockl derives
 * get_num_groups as block_count + (remainder != 0)).
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL kernel/out/dims, dims->dims not 1..3, a grid or
 * workgroup size 0, out not 16-byte aligned), HSAD_ERR_RESOURCE_EXHAUSTED (out_size smaller than
 * kernarg_segment_size), HSAD_ERR_ARG_COUNT (arg_count != explicit arguments; message says both
 * counts), HSAD_ERR_ARG_SIZE (BYTES value size != .size; names argument index, name, both
 * sizes), HSAD_ERR_ARG_KIND (tag does not suit .value_kind, e.g. LDS for a by_value),
 * HSAD_ERR_ARG_VALUE (pointer does not fit a 4-byte slot, a hidden value does not fit its
 * declared size, or the group segment exceeds 4 GiB). On error `out` content is unspecified. */
hsad_status_t hsad_kernarg_build(const hsad_kernel_t *kernel, const hsad_karg_t *args,
                                 uint32_t arg_count, const hsad_dispatch_dims_t *dims,
                                 const hsad_kernarg_runtime_t *runtime, void *out,
                                 size_t out_size, uint32_t *out_group_segment_size);

/* ------------------------------------------------------------------------------------------ */
/* Occupancy and register pressure                                                            */

/* Per-processor limits (codeobj/occupancy.c cites the source of every value). */
typedef struct hsad_gfx_limits {
  const char *processor;        /* "gfx90a" */
  uint32_t simd_per_cu;         /* SIMDs per CU (per WGP-half on gfx10+: CU mode) */
  uint32_t max_waves_per_simd;  /* wave slots per SIMD */
  uint32_t vgprs_per_simd;      /* VGPRs per lane available to one SIMD (wave64 units; on
                                   gfx90a/gfx940 the unified VGPR+AGPR file) */
  uint32_t vgpr_granule;        /* allocation granule (registers), wave64 */
  uint32_t vgpr_granule_w32;    /* allocation granule for wave32 (gfx10+), else 0 */
  uint32_t vgprs_per_simd_w32;  /* VGPRs per lane for wave32 (gfx10+), else 0 */
  uint32_t max_vgprs_per_wave;  /* addressable VGPRs per wave (incl. AGPRs when unified) */
  uint32_t sgprs_per_simd;      /* 0 = SGPRs do not limit occupancy (gfx10+) */
  uint32_t sgpr_granule;
  uint32_t lds_per_cu;          /* bytes of LDS a workgroup's CU (or WGP) can hold */
  uint32_t lds_granule;         /* allocation granule, bytes */
  uint32_t max_workgroups_per_cu; /* workgroup slots per CU */
  bool unified_agpr;            /* gfx90a/gfx940: AGPRs share the VGPR file */
} hsad_gfx_limits_t;

/* Table entry for a processor ("gfx90a", "gfx90a:xnack-" or a full target). NULL if unknown. */
const hsad_gfx_limits_t *hsad_gfx_limits_find(const char *processor);

typedef enum hsad_occ_limiter {
  HSAD_OCC_WAVE_SLOTS = 0, HSAD_OCC_VGPR, HSAD_OCC_SGPR, HSAD_OCC_LDS, HSAD_OCC_WORKGROUPS,
} hsad_occ_limiter_t;
const char *hsad_occ_limiter_name(hsad_occ_limiter_t l); /* "waves", "vgpr", "sgpr", ... */

typedef struct hsad_occupancy {
  uint32_t waves_per_simd;      /* resident waves of this kernel per SIMD */
  uint32_t waves_per_cu;        /* per CU, or per WGP (2 CUs) when wgp_mode */
  uint32_t workgroups_per_cu;   /* per CU, or per WGP (2 CUs) when wgp_mode */
  bool wgp_mode;                /* gfx10+ kernel in WGP mode: a workgroup's waves may use both
                                   CUs of a work-group processor (AMDGPUUsage, WGP_MODE) */
  uint32_t waves_per_workgroup;
  hsad_occ_limiter_t limiter;   /* the resource that bounds it */
  uint32_t vgprs_allocated;     /* per work-item after granule rounding */
  uint32_t lds_per_workgroup;   /* bytes after granule rounding */
} hsad_occupancy_t;

/* Occupancy of `kernel` at `workgroup_size` work-items (flat) with `dynamic_lds` extra LDS
 * bytes, on `limits` (NULL: the table of the code object's processor). Model (LLVM's
 * AMDGPUBaseInfo IsaInfo, which the compiler uses): waves per workgroup = ceil(size / wave
 * size); per SIMD the VGPR bound is total / align(VGPRs (+ AGPRs, after accum_offset, on the
 * unified gfx90a/gfx940 file), granule), the SGPR bound LLVM's GFX8/9 table; per CU the
 * workgroup bound is the minimum of wave slots, those register bounds times SIMDs, LDS per CU /
 * align(LDS, 512), and 16 barriers (single-wave workgroups need none). On gfx10+ a kernel in WGP
 * mode (.workgroup_processor_mode or the descriptor's WGP_MODE) gets a WGP: 4 SIMDs, twice the
 * LDS and 32 barriers. The limiter is the bound that is strictly below the wave slots (the
 * first of vgpr, sgpr, lds, workgroups on ties). waves_per_simd = ceil(waves per CU / SIMDs).
 * Errors: HSAD_ERR_UNSUPPORTED (no table for the processor), HSAD_ERR_WORKGROUP (size 0 or
 * above .max_flat_workgroup_size), HSAD_ERR_LDS_LIMIT (LDS above lds_per_cu),
 * HSAD_ERR_INVALID_ARGUMENT. */
hsad_status_t hsad_kernel_occupancy(const hsad_kernel_t *kernel, const hsad_gfx_limits_t *limits,
                                    uint32_t workgroup_size, uint32_t dynamic_lds,
                                    hsad_occupancy_t *out_occupancy);

/* Register-pressure flags of one kernel. */
typedef struct hsad_pressure_report {
  uint32_t vgpr_spill_count, sgpr_spill_count;
  uint32_t scratch_per_work_item;  /* bytes: .private_segment_fixed_size */
  uint64_t scratch_per_wave;       /* bytes: per work-item x wavefront_size */
  bool spills;                     /* any spill */
  bool low_occupancy;              /* waves_per_simd < floor */
  bool dynamic_stack;              /* .uses_dynamic_stack */
  bool flagged;                    /* spills || low_occupancy */
} hsad_pressure_report_t;

/* Fills the report; `occupancy` may be NULL (low_occupancy false then). floor: waves per SIMD
 * below which a kernel is flagged (hsad inspect's default: 2). Never fails for valid pointers:
 * HSAD_ERR_INVALID_ARGUMENT for NULL kernel/out. */
hsad_status_t hsad_kernel_pressure(const hsad_kernel_t *kernel, const hsad_occupancy_t *occupancy,
                                   uint32_t floor, hsad_pressure_report_t *out_report);

/* One line of the register-pressure report (issue 9; hsad inspect --pressure): one kernel at
 * one workgroup size on one processor. Every figure follows hsad_kernel_occupancy's model. */
typedef struct hsad_pressure_row {
  uint32_t workgroup_size;         /* work-items (flat) */
  uint32_t vgpr_count, agpr_count, sgpr_count;  /* .vgpr_count, .agpr_count, .sgpr_count */
  uint32_t vgpr_spill_count, sgpr_spill_count;  /* .vgpr_spill_count, .sgpr_spill_count */
  uint32_t scratch_per_work_item;  /* bytes: .private_segment_fixed_size */
  uint64_t scratch_per_wave;       /* bytes: per work-item x .wavefront_size */
  bool dynamic_stack;              /* .uses_dynamic_stack: the scratch figures are a minimum */
  uint32_t lds_per_workgroup;      /* bytes allocated per workgroup: fixed + dynamic, rounded
                                      to the LDS granule */
  hsad_occupancy_t occupancy;      /* waves per SIMD, workgroups per CU (WGP), the limiter */
  uint32_t regs;                   /* VGPRs per work-item the model counts: arch VGPRs, plus
                                      AGPRs after accum_offset on gfx90a/gfx940's unified file
                                      (the larger of the two files on gfx908) */
  /* The next cliff: with cliff_vgprs_fewer fewer of `regs` (the largest count that is a whole
   * number of allocation granules and gives more waves per SIMD at this workgroup size), the
   * kernel runs cliff_waves_per_simd waves per SIMD. Both 0 when no register count would gain
   * a level (another limit binds, or the maximum is reached). */
  uint32_t cliff_vgprs_fewer;
  uint32_t cliff_waves_per_simd;
  /* The block-size cost: resident work-items per CU (WGP) here, against the best workgroup
   * size (every multiple of the wave size up to .max_flat_workgroup_size, and that maximum;
   * only .reqd_workgroup_size when the kernel has one), the smallest on ties.
   * block_cost_percent = 100 * (best - here) / best, rounded down; 0 when this size is best. */
  uint32_t work_items_per_cu;
  uint32_t best_workgroup_size;
  uint32_t best_work_items_per_cu;
  uint32_t block_cost_percent;
} hsad_pressure_row_t;

/* Fills the report line of `kernel` at `workgroup_size` work-items with `dynamic_lds` extra LDS
 * bytes, on `limits` (NULL: the code object's processor; tables for gfx906, gfx908, gfx90a,
 * gfx940/941/942, gfx1030, gfx1100). Pure computation, no allocation; thread-safe.
 * Errors: as hsad_kernel_occupancy (HSAD_ERR_UNSUPPORTED without a table, HSAD_ERR_WORKGROUP,
 * HSAD_ERR_LDS_LIMIT), HSAD_ERR_INVALID_ARGUMENT (NULL kernel/out). */
hsad_status_t hsad_kernel_pressure_at(const hsad_kernel_t *kernel, const hsad_gfx_limits_t *limits,
                                      uint32_t workgroup_size, uint32_t dynamic_lds,
                                      hsad_pressure_row_t *out_row);

/* ------------------------------------------------------------------------------------------ */
/* Compilation through comgr                                                                  */

/* A register budget (issue 9, variants): launch bounds the library sets on every kernel of a
 * source, the source unchanged. clang derives its register limits from them (HIP's
 * __launch_bounds__(T, M) means the same: flat_work_group_size(1, T) + waves_per_eu(M)).
 * OpenCL: every `__kernel`/`kernel` gains __attribute__((amdgpu_flat_work_group_size(1, N),
 * amdgpu_waves_per_eu(W))) through -D definitions of those keywords; HIP: `__global__` is
 * redefined the same way after hip/hip_runtime.h (a header passed with -include), so HIP kernels
 * must be declared with __global__. A zero field is not set. */
typedef struct hsad_variant_budget {
  uint32_t max_workgroup_size;  /* work-items, 1..1024: amdgpu_flat_work_group_size(1, N) */
  uint32_t min_waves_per_eu;    /* waves per SIMD, 1..the processor's maximum:
                                   amdgpu_waves_per_eu(W) */
} hsad_variant_budget_t;

typedef struct hsad_compile_options {
  const char *target;           /* target ID, "gfx90a" or "gfx90a:xnack-" (required) */
  int opt_level;                /* 0..3 */
  const char *const *defines;   /* "NAME" or "NAME=VALUE", define_count of them */
  uint32_t define_count;
  const char *const *include_dirs; /* extra -I directories */
  uint32_t include_dir_count;
  uint32_t code_object_version; /* 4 or 5; 0: comgr's default */
  hsad_variant_budget_t budget; /* {0, 0}: none */
} hsad_compile_options_t;

/* The source an OpenCL C code object carries (issue 20): hsad_codeobj_compile appends to a
 * ".cl" source a program-scope constant HSAD_CL_SOURCE_SYMBOL (protected visibility, kept with
 * __attribute__((used)), so it is in the dynamic symbol table and in a loaded segment) whose
 * bytes are HSAD_CL_SOURCE_MAGIC, the -D build options on one line, the source made
 * self-contained by hsad_cl_source_expand (its includes inlined: no -I is carried), and a NUL. kfd-emu finds it from a dispatch's kernel_object and runs the
 * kernel from that source through POCL. kernels/carry_source.py does the same for make. */
#define HSAD_CL_SOURCE_SYMBOL "__hsad_cl_source"
#define HSAD_CL_SOURCE_MAGIC "HSADCL1\n"

/* A self-contained copy of an OpenCL C source (issue 20): every `#include "F"` found next to
 * the including file (source_name's folder for the source itself) or in include_dirs (in
 * order), and every `#include <F>` found in include_dirs, is replaced by F's text, recursively,
 * between `#line 1 "PATH"` and `#line N "PARENT"` directives (so diagnostics keep their files
 * and lines); an include found nowhere (a compiler header such as opencl-c.h) stays as it is.
 * Textual: a file included twice is inlined twice (its include guards still work; #pragma
 * once does not). *out_text (malloc'd, caller frees; NUL-terminated) and *out_size (bytes,
 * without the NUL). Used for the source a code object carries and by `hsad run --source`.
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL), HSAD_ERR_IO (an include that exists cannot be
 * read: names it and the line including it), HSAD_ERR_COMPILE (nested deeper than 16: names
 * the file and line), HSAD_ERR_OUT_OF_MEMORY. Thread-safe. */
hsad_status_t hsad_cl_source_expand(const char *source, size_t size, const char *source_name,
                                    const char *const *include_dirs, uint32_t include_dir_count,
                                    char **out_text, size_t *out_size);

/* Compiles OpenCL C (".cl", as OpenCL C 2.0) or HIP (".hip") source to a code object with
 * comgr (COMPILE_SOURCE_WITH_DEVICE_LIBS_TO_BC, CODEGEN_BC_TO_RELOCATABLE,
 * LINK_RELOCATABLE_TO_EXECUTABLE). comgr (libamd_comgr.so.2) is loaded with dlopen on the first
 * call, so programs that never compile do not pay for loading libLLVM. clang's resource include
 * folder (found at build time) is passed with -I, and -Xclang -finclude-default-header for
 * OpenCL. `source_name` is the name diagnostics show ("dir/k.cl:3:5: error: ..."; comgr's
 * temporary path is rewritten back to it). On success *out_data (malloc'd, caller frees) holds
 * the ELF and *out_size its bytes. *out_log (malloc'd, may be NULL, caller frees; out_log itself
 * may be NULL) gets the compiler's diagnostics on success (warnings) and failure.
 * HIP: compiled with the system HIP headers (Debian libamdhip64-dev); Debian's comgr 2.4 links
 * no device libraries for HIP, so hip/ocml/ockl/oclc_*.bc from rocm-device-libs (folder found at
 * build time) are linked into the bitcode with -mlink-builtin-bitcode, as clang's HIP driver
 * does (wave64 on gfx9, wave32 on gfx10+).
 * With a budget, every kernel of the result is checked against it: .max_flat_workgroup_size
 * must equal max_workgroup_size (else the budget did not reach the kernel: HSAD_ERR_COMPILE
 * naming it), a .reqd_workgroup_size above it is a conflict (HSAD_ERR_COMPILE naming the kernel
 * and both sizes), and the registers must allow min_waves_per_eu waves per SIMD (one-wave
 * workgroups, hsad_kernel_occupancy's model; HSAD_ERR_COMPILE "cannot meet" with the counts).
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL argument, -O outside 0..3, bad target ID, a budget
 * field out of range),
 * HSAD_ERR_CODE_OBJECT_VERSION (code_object_version not 0, 4 or 5), HSAD_ERR_UNSUPPORTED
 * (file name not .cl/.hip, comgr cannot be loaded, or a HIP device library for the processor
 * is absent), HSAD_ERR_COMPILE (compile, codegen or
 * link failed; the message names the step and target and holds the first 900 bytes of the
 * diagnostics, *out_log all of them), HSAD_ERR_OUT_OF_MEMORY. Thread-safe (comgr is; the
 * one-time load uses pthread_once). */
hsad_status_t hsad_codeobj_compile(const char *source, size_t source_size,
                                   const char *source_name, const hsad_compile_options_t *opts,
                                   void **out_data, size_t *out_size, char **out_log);

/* Variants (issue 9): compiles one unchanged source once per budget (opts->budget is ignored;
 * budgets[i] = {0, 0} is the source as written) and loads each result: out_variants[i] (caller
 * destroys each) is the code object of budgets[i], labelled "NAME[variant I: wg<=N waves>=W]".
 * When a budget sets max_workgroup_size, the source is first compiled without a budget, and a
 * kernel whose own attributes bound its workgroup size below the language default (OpenCL 256,
 * HIP 1024) refuses a larger budget (HSAD_ERR_COMPILE: "kernel 'k' declares a maximum workgroup
 * size of 128 (its own attributes); variant 1 asks 256"). *out_log (may be NULL): the log of
 * the last compile, malloc'd. Errors: those of hsad_codeobj_compile and
 * hsad_codeobj_load_memory; HSAD_ERR_INVALID_ARGUMENT (NULL, count 0 or above 16). On failure
 * no code object is returned. Thread-safe. */
hsad_status_t hsad_codeobj_compile_variants(const char *source, size_t source_size,
                                            const char *source_name,
                                            const hsad_compile_options_t *opts,
                                            const hsad_variant_budget_t *budgets, uint32_t count,
                                            hsad_codeobj_t **out_variants, char **out_log);

/* Why a variant was chosen. */
typedef enum hsad_variant_reason {
  HSAD_VARIANT_NO_SPILL = 0,  /* highest waves per SIMD among those without spills and without
                                 more scratch than the least of them */
  HSAD_VARIANT_LEAST_SPILL,   /* every allowed variant spills: the fewest VGPR + SGPR spills */
  HSAD_VARIANT_MEASURED,      /* timed on the device (hsad_variant_set_autotune in
                                 hsa-dispatch/hsad_variants.h): the shortest run */
} hsad_variant_reason_t;

/* "no spills, most waves", "least spilling", "measured fastest"; "?" for other values. */
const char *hsad_variant_reason_name(hsad_variant_reason_t reason);

typedef struct hsad_variant_choice {
  uint32_t index;                /* into the kernels array */
  hsad_variant_reason_t reason;
  uint32_t waves_per_simd;       /* its predicted occupancy at the workgroup size */
  uint32_t spills;               /* its .vgpr_spill_count + .sgpr_spill_count */
  uint32_t scratch_per_work_item;/* bytes */
  uint32_t regs;                 /* VGPRs counted (hsad_pressure_row_t.regs) */
  uint32_t candidates;           /* variants that allow the workgroup size */
} hsad_variant_choice_t;

/* Picks, among `count` variants of one kernel (the same kernel of each variant code object),
 * the one to dispatch at `workgroup_size` work-items with `dynamic_lds` extra LDS bytes, from
 * metadata alone: among variants allowing the size (.max_flat_workgroup_size, and
 * .reqd_workgroup_size when present), those without spills and without more scratch than the
 * least of them; the highest waves per SIMD (hsad_kernel_occupancy on `limits`, NULL: each
 * kernel's processor) wins, ties to fewer VGPRs, then to the lower index. When every allowed
 * variant spills: the fewest spills, ties to more waves, then fewer VGPRs, then the lower index.
 * The caller caches the answer per (kernel, workgroup size). Pure; thread-safe; O(count).
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL, count 0 or above 16), HSAD_ERR_WORKGROUP (no variant allows the
 * size: the message names the kernel, the size and each variant's maximum),
 * HSAD_ERR_UNSUPPORTED / HSAD_ERR_LDS_LIMIT as hsad_kernel_occupancy. */
hsad_status_t hsad_kernel_variant_select(const hsad_kernel_t *const *kernels, uint32_t count,
                                         const hsad_gfx_limits_t *limits,
                                         uint32_t workgroup_size, uint32_t dynamic_lds,
                                         hsad_variant_choice_t *out_choice);

#ifdef __cplusplus
}
#endif
#endif /* HSAD_CODEOBJ_H */
