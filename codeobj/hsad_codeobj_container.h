/* hsad_codeobj_container.h - containers: a plain code object, a clang offload bundle or a HIP fat
 * binary, and the entries inside.
 *
 * Part of codeobj/'s public interface: include codeobj/hsad_codeobj.h (the umbrella,
 * with the objects, ownership, thread-safety and error rules that hold for every part)
 * or this header alone. */
#ifndef HSAD_CODEOBJ_CONTAINER_H
#define HSAD_CODEOBJ_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hsad_status.h"
#include "codeobj/hsad_codeobj_target.h"

#ifdef __cplusplus
extern "C" {
#endif

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

#ifdef __cplusplus
}
#endif
#endif /* HSAD_CODEOBJ_CONTAINER_H */
