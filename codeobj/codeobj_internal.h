/* codeobj_internal.h - shared between the files of codeobj/ only (never included elsewhere). */
#ifndef HSAD_CODEOBJ_INTERNAL_H
#define HSAD_CODEOBJ_INTERNAL_H

#include "codeobj/hsad_codeobj.h"

#include <stddef.h>
#include <stdint.h>

/* ---- arena: every string and array of one hsad_codeobj_t, freed at once ---- */
typedef struct co_arena_block co_arena_block_t;
typedef struct co_arena {
  co_arena_block_t *head;
} co_arena_t;

/* 8-byte aligned, zeroed; NULL when out of memory. */
void *co_arena_alloc(co_arena_t *arena, size_t size);
/* NUL-terminated copy of n bytes; NULL when out of memory. */
char *co_arena_strndup(co_arena_t *arena, const char *s, size_t n);
void co_arena_free(co_arena_t *arena);

/* ---- string hash table over an array of kernels (open addressing, index + 1 per slot) ---- */
uint32_t co_hash_str(const char *s, size_t n);

/* ---- loaded objects ---- */
struct hsad_kernel {
  hsad_kernel_info_t info;
  hsad_kernarg_plan_t plan;
  const hsad_codeobj_t *owner;
  /* per explicit argument (plan.explicit_count): the hsad_karg_type_t of a by-value
   * parameter's scalar (a vector's element), HSAD_KARG_UNTYPED when unknown (kernarg.c, at
   * load: .type_name, else the mangled name's parameter types) */
  const uint8_t *arg_type;
  /* file offset in the image of the bytes `info.descriptor` was copied from (elf.c,
   * co_elf_read_descriptors); hsad_kernel_descriptor_offset */
  uint64_t descriptor_offset;
};

struct hsad_codeobj {
  hsad_codeobj_info_t info;
  hsad_kernel_t *kernels;
  uint32_t *by_name;    /* slots: kernel index + 1, 0 = empty; size hash_mask + 1 */
  uint32_t *by_symbol;
  uint32_t hash_mask;
  void *image;          /* malloc'd ELF copy (info.image) */
  co_arena_t arena;
  const char *entry_id; /* bundle entry id it was loaded from ("" otherwise; in arena) */
  bool from_hip;        /* a HIP bundle entry (hip-/hipv4-) or a .hip_fatbin section */
};

/* ---- elf.c: ELF checks, note, symbols (libelf) ---- */
typedef struct co_elf {
  const char *name;          /* for messages */
  const uint8_t *image;
  size_t size;
  struct Elf *elf;           /* libelf handle over image */
  uint32_t abi_version;      /* e_ident[EI_ABIVERSION] */
  uint32_t code_object_version;
  uint32_t e_flags;
  uint16_t e_type;
  const uint8_t *note_desc;  /* NT_AMDGPU_METADATA payload (msgpack), inside image */
  size_t note_size;
  size_t shnum;
} co_elf_t;

/* Validates header, version, sections, and finds the metadata note. On success the caller
 * owns e->elf (co_elf_close). `image` must stay alive and writable-private while e is open. */
hsad_status_t co_elf_open(co_elf_t *e, const char *name, uint8_t *image, size_t size);
void co_elf_close(co_elf_t *e);

/* Resolves every kernel's .symbol to its 64-byte descriptor bytes (one pass over the symbol
 * table, lookups in the code object's symbol hash). */
hsad_status_t co_elf_read_descriptors(co_elf_t *e, hsad_codeobj_t *co);

/* Opens a libelf handle over the image of a loaded code object (co_elf_open checked it when
 * it was loaded, so none of its checks are repeated and the note is not looked up: note_desc,
 * abi_version and the other header fields stay 0; shnum is set). `image` (size bytes) is only
 * read and must outlive e; the caller owns e->elf (co_elf_close). Errors: HSAD_ERR_BAD_ELF
 * (libelf cannot read it, out of memory included: its message quoted). Thread-safe (each call
 * its own handle; libelf's version set once under pthread_once). */
hsad_status_t co_elf_attach(co_elf_t *e, const char *name, const uint8_t *image, size_t size);

/* The symbol named `name` in the section named .symtab (the last one of that name, skipping
 * e_shstrndx; ROCr 5.2.3's GElfImage::pullElf takes its symbols from that section only), the
 * first at index `from` or later: found or not, its index, binding, type, st_shndx, st_value,
 * its section's name, SHF_ALLOC, sh_addr and sh_offset, and the PT_LOAD segment whose file bytes
 * hold the 64 bytes at st_value (gelf_getphdr) - the shape of hsad_symtab_symbol_t
 * (codeobj/hsad_codeobj_load.h), whose strings point into e->image.
 * Reads through libelf on an open e (co_elf_open or co_elf_attach): section headers with
 * gelf_getshdr, the bytes of .shstrtab, .symtab and its sh_link string table as stored with
 * elf_rawdata (SHF_COMPRESSED ignored, as ROCr's loader ignores it: elf_getdata and elf_strptr
 * would refuse such a table), each 24-byte Elf64_Sym copied out of them, every name looked up
 * inside its table's bytes and NUL-ended there (else no match). Cost: one pass over the section
 * headers, one over the symbols from `from` on, one over the program headers for a found one.
 * Errors: HSAD_ERR_BAD_ELF when libelf cannot read a section header, a program header or a
 * table's bytes (the message names e->name, the section and
 * libelf's reason); *out is then unchanged. Thread-safe for different handles; one handle is
 * read by one thread at a time (libelf loads section data lazily). */
hsad_status_t co_elf_symtab_find(const co_elf_t *e, const char *name, uint64_t from,
                                 hsad_symtab_symbol_t *out);

/* ---- target.c ---- */
/* Processor name for an EF_AMDGPU_MACH value, NULL if unknown. */
const char *co_mach_name(uint32_t mach);
/* Target ID from e_flags for a code object version (3: XNACK_V3/SRAMECC_V3 bits; 4+: 2-bit). */
hsad_status_t co_target_from_flags(const char *name, uint32_t e_flags, uint32_t version,
                                   hsad_target_id_t *out);

/* ---- metadata.c: msgpack note -> kernels ---- */
hsad_status_t co_metadata_decode(const char *name, const uint8_t *desc, size_t size,
                                 uint32_t version, hsad_codeobj_t *co);

/* ---- descriptor.c ---- */
void co_kd_decode(const hsad_kernel_descriptor_t *kd, const hsad_target_id_t *target,
                  hsad_kd_fields_t *out);
uint32_t co_kd_cross_check(const hsad_kernel_info_t *ki, const hsad_target_id_t *target);
/* gfx major number (9 for gfx90a, 10 for gfx1030), 0 when not a gfx name. */
uint32_t co_gfx_major(const char *processor);
bool co_is_unified_agpr(const char *processor); /* gfx90a, gfx940, gfx941, gfx942 */

/* ---- kernarg.c ---- */
hsad_status_t co_kernarg_plan_init(const char *name, co_arena_t *arena, hsad_kernel_t *k);
/* k->arg_type from .type_name or the mangled name (called by co_kernarg_plan_init). */
hsad_status_t co_kernarg_types_init(const char *name, co_arena_t *arena, hsad_kernel_t *k);

#endif
