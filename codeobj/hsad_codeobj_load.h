/* hsad_codeobj_load.h - code objects and their kernels: loading from memory, a file, a note or a
 * container entry; lookup and accessors.
 *
 * Part of codeobj/'s public interface: include codeobj/hsad_codeobj.h (the umbrella,
 * with the objects, ownership, thread-safety and error rules that hold for every part)
 * or this header alone. */
#ifndef HSAD_CODEOBJ_LOAD_H
#define HSAD_CODEOBJ_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/hsad_status.h"
#include "codeobj/hsad_codeobj_metadata.h"
#include "codeobj/hsad_codeobj_target.h"
#include "codeobj/hsad_codeobj_container.h"

#ifdef __cplusplus
extern "C" {
#endif

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
 * version (v3 read-only; v4 and v5 fully), the ELF structures ROCr's loader trusts unchecked
 * (HSAD_ERR_BAD_ELF, each message naming the section, symbol or segment and the rule: section
 * names inside a NUL-ended .shstrtab, no SHT_NULL section past 0, .symtab/.strtab/.note of
 * their types; symbol tables of whole 24-byte entries (libelf reads none of one that is not)
 * linked to NUL-ended string tables, st_name inside, defined
 * symbols' st_shndx below e_shnum and [st_value, st_value + st_size) inside an allocated
 * section, no undefined data symbol in .symtab; relocation sections of 24-byte entries linked
 * to a symbol table; PT_LOAD p_vaddr = p_offset mod p_align, the first PT_LOAD at p_vaddr 0
 * (ROCr 5.2.3's loader asserts it: LoadedCodeObjectImpl::getLoadBase), ascending without
 * overlap, ending above 0, every allocated section inside one: corrupt objects that aborted or
 * faulted inside hsa_executable_load_agent_code_object), the NT_AMDGPU_METADATA note and its
 * msgpack,
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

/* One symbol of the code object's section named .symtab, as hsad_codeobj_symtab_find reports
 * it. That section is the one ROCr's loader (ROCr 5.2.3, GElfImage::pullElf) takes its symbols
 * from: the last section of that name, never .dynsym or another SHT_SYMTAB. Strings point into
 * the code object's image (owned by it, valid until hsad_codeobj_destroy). */
typedef struct hsad_symtab_symbol {
  uint32_t symtab_section; /* index of the last section named .symtab; 0: there is none */
  uint64_t symtab_count;   /* its symbols: sh_size / 24, symbol 0 included (0 with no .symtab) */
  bool found;              /* a symbol of that name at an index >= `from`; when false the fields
                              below are 0 and section_name is "" */
  uint64_t index;          /* the first such symbol's index in .symtab */
  uint8_t binding;         /* ELF64_ST_BIND(st_info): 0 STB_LOCAL, 1 STB_GLOBAL, 2 STB_WEAK */
  uint8_t type;            /* ELF64_ST_TYPE(st_info): 1 STT_OBJECT, 2 STT_FUNC, 10 the AMDGPU
                              kernel type ... */
  uint16_t section;        /* st_shndx, as stored (0 SHN_UNDEF, 0xfff1 SHN_ABS ...) */
  bool section_allocated;  /* `section` is a section of the file (1 .. e_shnum - 1) whose
                              sh_flags hold SHF_ALLOC (loaded into a PT_LOAD segment) */
  const char *section_name;/* that section's name in .shstrtab; "" for an index that is no
                              section of the file (never NULL) */
  bool section_in_file;    /* `section` is a section of the file (1 .. e_shnum - 1); when false
                              section_allocated is false and the section_* numbers are 0 */
  uint64_t value;          /* st_value: for the ET_DYN code objects codeobj loads, a virtual
                              address (ROCr 5.2.3's kernel object: the loaded image's base +
                              value - load_first) */
  uint64_t section_address;/* that section's sh_addr */
  uint64_t section_offset; /* its sh_offset: the symbol's bytes in the section lie at file
                              offset section_offset + value - section_address, where
                              hsad_codeobj_load_memory reads a descriptor */
  bool in_segment;         /* the 64 bytes at `value` lie wholly in one PT_LOAD segment's
                              file-backed range [p_vaddr, p_vaddr + p_filesz) */
  uint32_t segment;        /* that segment's index in the program header table (0 when
                              in_segment is false) */
  uint64_t segment_offset; /* the file offset that segment loads `value` from: p_offset + value -
                              p_vaddr (0 when in_segment is false) */
  uint64_t load_first;     /* p_vaddr of the first PT_LOAD segment (program header order; 0 with
                              none) */
  uint64_t load_last_end;  /* p_vaddr + p_memsz of the last PT_LOAD segment (0 with none) */
} hsad_symtab_symbol_t;

/* Finds the first symbol named `name` (e.g. "vadd.kd") at index `from` or later in the code
 * object's section named .symtab, reading the ELF image through libelf (the tables' bytes as
 * stored, SHF_COMPRESSED ignored as ROCr's loader ignores it); call again with `from` =
 * out_symbol->index + 1 for the next one of the same name. hsa-dispatch's program load checks
 * with it that ROCr's loader would expose every kernel's NAME.kd. On HSAD_OK *out_symbol is
 * filled: no .symtab (symtab_section 0) and no such symbol (found false) are answers, not
 * errors. The image's structures were checked at load (hsad_codeobj_load_memory: section
 * names inside .shstrtab, symbol tables of whole entries with NUL-ended string tables), so a
 * loaded code object fails here only when libelf runs out of memory. Costs one pass over the
 * section headers, one over .symtab from `from` on and one over the program headers (a libelf handle opened and closed per
 * call: no state is kept in the code object).
 * Errors: HSAD_ERR_INVALID_ARGUMENT (NULL codeobj, name or out_symbol; a code object with no ELF
 * image, from hsad_codeobj_load_note: the message names it), HSAD_ERR_BAD_ELF (libelf cannot
 * read the image, a section or program header or a table's bytes, out of memory included; the message
 * quotes libelf's reason). On failure *out_symbol is unchanged. Thread-safe on a loaded code
 * object (read-only). */
hsad_status_t hsad_codeobj_symtab_find(const hsad_codeobj_t *codeobj, const char *name,
                                       uint64_t from, hsad_symtab_symbol_t *out_symbol);

/* The file offset in the code object's ELF image (hsad_codeobj_info()->image) of the 64 bytes
 * hsad_kernel_info()->descriptor was copied from: the NAME.kd symbol hsad_codeobj_load_memory
 * took (the first of that name in the SHT_SYMTAB sections, in section order, else in .dynsym)
 * at its section's sh_offset + st_value - sh_addr. UINT64_MAX for NULL and for a code object
 * with no image (hsad_codeobj_load_note). O(1); thread-safe. */
uint64_t hsad_kernel_descriptor_offset(const hsad_kernel_t *kernel);

/* The code object a kernel belongs to (NULL for NULL). O(1); thread-safe. */
const hsad_codeobj_t *hsad_kernel_codeobj(const hsad_kernel_t *kernel);

/* The kernel's position in its code object (0-based, amdhsa.kernels order: the i of
 * hsad_codeobj_kernel_at); UINT32_MAX for NULL. O(1); thread-safe. */
uint32_t hsad_kernel_index(const hsad_kernel_t *kernel);

/* The kernel's metadata and descriptor; owned by the code object (NULL only for NULL).
 * Thread-safe (read-only). */
const hsad_kernel_info_t *hsad_kernel_info(const hsad_kernel_t *kernel);

#ifdef __cplusplus
}
#endif
#endif /* HSAD_CODEOBJ_LOAD_H */
