/* elf.c - AMDGPU ELF checks, the NT_AMDGPU_METADATA note and NAME.kd descriptors (libelf).
 * Sources: AMDGPUUsage "ELF Code Object" (header fields, EI_ABIVERSION per code object version,
 * "Note Records" NT_AMDGPU_METADATA = 32 owned by "AMDGPU", "Symbols" NAME.kd of 64 bytes).
 * Every offset and size is checked against the buffer before libelf or we read through it. */
#include "codeobj/codeobj_internal.h"

#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

enum {
  CO_EM_AMDGPU = 224,
  CO_ELFOSABI_AMDGPU_HSA = 64,
  CO_NT_AMDGPU_METADATA = 32,
};

static pthread_once_t co_elf_once = PTHREAD_ONCE_INIT;
static void co_elf_init(void) { elf_version(EV_CURRENT); }

/* a + b <= limit without overflow */
static bool co_fits(uint64_t off, uint64_t len, uint64_t limit) {
  return off <= limit && len <= limit - off;
}

static const char *co_machine_name(unsigned m) {
  switch (m) {
  case 0: return "EM_NONE";
  case 3: return "EM_386";
  case 40: return "EM_ARM";
  case 62: return "EM_X86_64";
  case 183: return "EM_AARCH64";
  case 224: return "EM_AMDGPU";
  default: return "unknown";
  }
}

static Elf64_Shdr co_shdr(const uint8_t *image, const Elf64_Ehdr *eh, unsigned i) {
  Elf64_Shdr sh;
  memcpy(&sh, image + eh->e_shoff + (uint64_t)i * sizeof sh, sizeof sh);
  return sh;
}

/* A string table libelf's elf_strptr reads: SHT_STRTAB (so its file range was checked), not
 * empty, its last byte NUL. `what` names its role, `by` (with `by_index` when nonzero) the
 * field that chose it. */
static hsad_status_t co_check_strtab(const char *name, const uint8_t *image, const Elf64_Shdr *sh,
                                     unsigned index, const char *what, const char *by,
                                     unsigned by_index) {
  char from[64];
  if (by_index) snprintf(from, sizeof from, "%s %u", by, by_index);
  else snprintf(from, sizeof from, "%s", by);
  if (sh->sh_type != SHT_STRTAB)
    return hsad_fail(HSAD_ERR_BAD_ELF,
                     "%s: %s (section %u, %s) has type %u, expected SHT_STRTAB (3)", name, what,
                     index, from, sh->sh_type);
  if (sh->sh_size == 0 || image[sh->sh_offset + sh->sh_size - 1] != '\0')
    return hsad_fail(HSAD_ERR_BAD_ELF,
                     "%s: %s (section %u, %s, %llu bytes) does not end with a NUL byte", name,
                     what, index, from, (unsigned long long)sh->sh_size);
  return HSAD_OK;
}

/* Section names (sections' file ranges already checked). ROCr's loader (amd_elf_image.cpp)
 * builds a std::string from elf_strptr for every section's name, which aborts the process
 * ("basic_string: construction from null") when sh_name lies outside .shstrtab or .shstrtab is
 * no string table; it then takes the sections named .symtab, .strtab and .note as a symbol
 * table, a string table and a note section without looking at their type (a PROGBITS named
 * .symtab faulted). */
static hsad_status_t co_check_section_names(const char *name, const uint8_t *image,
                                            const Elf64_Ehdr *eh) {
  Elf64_Shdr st = co_shdr(image, eh, eh->e_shstrndx);
  hsad_status_t s = co_check_strtab(name, image, &st, eh->e_shstrndx, "section name table",
                                    "e_shstrndx", 0);
  if (s) return s;
  static const struct {
    const char *name;
    uint32_t type;
    const char *type_name;
  } by_name[] = {{".symtab", SHT_SYMTAB, "SHT_SYMTAB"},
                 {".strtab", SHT_STRTAB, "SHT_STRTAB"},
                 {".note", SHT_NOTE, "SHT_NOTE"}};
  for (unsigned i = 1; i < eh->e_shnum; i++) {
    Elf64_Shdr sh = co_shdr(image, eh, i);
    if (sh.sh_type == SHT_NULL)
      return hsad_fail(HSAD_ERR_BAD_ELF,
                       "%s: section %u has type SHT_NULL (0): only section 0 may (ROCr's loader "
                       "reads every other section's name and type)",
                       name, i);
    if (sh.sh_name >= st.sh_size)
      return hsad_fail(HSAD_ERR_BAD_ELF,
                       "%s: section %u: name offset %u (sh_name) is outside the %llu-byte "
                       "section name table (section %u)",
                       name, i, sh.sh_name, (unsigned long long)st.sh_size, eh->e_shstrndx);
    const char *sn = (const char *)image + st.sh_offset + sh.sh_name;
    for (unsigned k = 0; k < sizeof by_name / sizeof by_name[0]; k++)
      if (!strcmp(sn, by_name[k].name) && sh.sh_type != by_name[k].type)
        return hsad_fail(HSAD_ERR_BAD_ELF,
                         "%s: section %u is named %s but has type %u, expected %s (%u): ROCr's "
                         "loader takes the section of that name as one",
                         name, i, sn, sh.sh_type, by_name[k].type_name, by_name[k].type);
  }
  return HSAD_OK;
}

/* One symbol of symbol table `t` (section ti, string table `str`): its name inside `str`; a
 * defined symbol in a section of the file, and in an allocated section its
 * address range [st_value, st_value + st_size) inside the section's. ROCr's loader indexes its
 * section list with st_shndx unchecked (faults past e_shnum or on a SHT_NULL section) and
 * asserts that a loaded symbol's address lies in its load segment (Segment::Offset). SHN_ABS
 * is kept for symbols ROCr does not load (not STT_OBJECT / STT_COMMON / kernel type 10). */
static hsad_status_t co_check_symbol(const char *name, const uint8_t *image,
                                     const Elf64_Ehdr *eh, unsigned ti, unsigned j,
                                     const Elf64_Shdr *t, const Elf64_Shdr *str) {
  Elf64_Sym sym;
  memcpy(&sym, image + t->sh_offset + (uint64_t)j * sizeof sym, sizeof sym);
  if (sym.st_name >= str->sh_size)
    return hsad_fail(HSAD_ERR_BAD_ELF,
                     "%s: symbol %u of section %u: name offset %u (st_name) is outside its "
                     "%llu-byte string table (section %u)",
                     name, j, ti, sym.st_name, (unsigned long long)str->sh_size, t->sh_link);
  const char *sn = (const char *)image + str->sh_offset + sym.st_name;
  unsigned type = ELF64_ST_TYPE(sym.st_info);
  bool loaded = type == STT_OBJECT || type == STT_COMMON || type == 10;
  if (sym.st_shndx == SHN_UNDEF && loaded && t->sh_type == SHT_SYMTAB)
    return hsad_fail(HSAD_ERR_BAD_ELF,
                     "%s: symbol %u '%s' of section %u: a data or kernel symbol (type %u) with no "
                     "section (st_shndx 0, SHN_UNDEF)",
                     name, j, sn, ti, type);
  if (sym.st_shndx == SHN_UNDEF) return HSAD_OK;
  if (sym.st_shndx == SHN_ABS && !loaded) return HSAD_OK;
  if (sym.st_shndx >= eh->e_shnum)
    return hsad_fail(HSAD_ERR_BAD_ELF,
                     "%s: symbol %u '%s' of section %u: section index %u (st_shndx) is not below "
                     "e_shnum %u",
                     name, j, sn, ti, sym.st_shndx, eh->e_shnum);
  /* not SHT_NULL: co_check_section_names refused those past section 0 */
  Elf64_Shdr sec = co_shdr(image, eh, sym.st_shndx);
  if (!(sec.sh_flags & SHF_ALLOC)) return HSAD_OK;
  uint64_t rel = sym.st_value - sec.sh_addr;
  if (sym.st_value < sec.sh_addr || !co_fits(rel, sym.st_size, sec.sh_size))
    return hsad_fail(HSAD_ERR_BAD_ELF,
                     "%s: symbol %u '%s' of section %u: address 0x%llx, %llu bytes (st_value, "
                     "st_size) lies outside its section %u (address 0x%llx, %llu bytes)",
                     name, j, sn, ti, (unsigned long long)sym.st_value,
                     (unsigned long long)sym.st_size, sym.st_shndx,
                     (unsigned long long)sec.sh_addr, (unsigned long long)sec.sh_size);
  return HSAD_OK;
}

/* Symbol tables: each links to a string table (ROCr's loader makes a std::string of every
 * symbol's name, aborting on NULL from elf_strptr) and each symbol passes co_check_symbol. */
static hsad_status_t co_check_symbols(const char *name, const uint8_t *image,
                                      const Elf64_Ehdr *eh) {
  for (unsigned i = 1; i < eh->e_shnum; i++) {
    Elf64_Shdr t = co_shdr(image, eh, i);
    if (t.sh_type == SHT_RELA || t.sh_type == SHT_REL) {
      /* ROCr's loader reads a SHT_RELA section through libelf (asserting it can), its sh_info
       * section and its sh_link symbol table by index, unchecked */
      size_t esz = t.sh_type == SHT_RELA ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel);
      Elf64_Shdr ln = co_shdr(image, eh, t.sh_link < eh->e_shnum ? t.sh_link : 0);
      if (t.sh_entsize != esz || t.sh_size % esz || t.sh_link >= eh->e_shnum ||
          t.sh_info >= eh->e_shnum ||
          (ln.sh_type != SHT_SYMTAB && ln.sh_type != SHT_DYNSYM))
        return hsad_fail(HSAD_ERR_BAD_ELF,
                         "%s: relocation section %u (type %u): sh_entsize %llu, sh_size %llu, "
                         "sh_link %u, sh_info %u: expected entries of %zu bytes filling it, "
                         "sh_link a symbol table and sh_info a section below e_shnum %u",
                         name, i, t.sh_type, (unsigned long long)t.sh_entsize,
                         (unsigned long long)t.sh_size, t.sh_link, t.sh_info, esz, eh->e_shnum);
      continue;
    }
    if (t.sh_type != SHT_SYMTAB && t.sh_type != SHT_DYNSYM) continue;
    Elf64_Shdr str = co_shdr(image, eh, t.sh_link);
    hsad_status_t s = co_check_strtab(name, image, &str, t.sh_link, "string table",
                                      "sh_link of symbol table section", i);
    if (s) return s;
    for (unsigned j = 0; j < t.sh_size / sizeof(Elf64_Sym); j++) {
      s = co_check_symbol(name, image, eh, i, j, &t, &str);
      if (s) return s;
    }
  }
  return HSAD_OK;
}

/* Load segments: ROCr's loader (LoadSegmentsV2) allocates one block from the first PT_LOAD's
 * p_vaddr to the last one's p_vaddr + p_memsz and copies each segment at its p_vaddr, asserting
 * that it lies inside (Segment::Offset) and that the block is not empty; symbols are placed by
 * the segment holding their section; it then asks for the block's address 0. So the PT_LOAD
 * segments ascend without overlap (the ELF rule), the first one starts at address 0, they end
 * above it, and every allocated section with bytes lies inside one. */
static hsad_status_t co_check_load_segments(const char *name, const uint8_t *image,
                                            const Elf64_Ehdr *eh) {
  uint64_t end = 0;
  unsigned loads = 0;
  for (unsigned i = 0; i < eh->e_phnum; i++) {
    Elf64_Phdr ph;
    memcpy(&ph, image + eh->e_phoff + (uint64_t)i * sizeof ph, sizeof ph);
    if (ph.p_type != PT_LOAD) continue;
    if (ph.p_align > 1 && ((ph.p_align & (ph.p_align - 1)) != 0 ||
                           (ph.p_vaddr - ph.p_offset) % ph.p_align))
      return hsad_fail(HSAD_ERR_BAD_ELF,
                       "%s: segment %u (PT_LOAD): address 0x%llx and file offset 0x%llx differ "
                       "modulo its alignment %llu (p_align a power of two, p_vaddr = p_offset "
                       "modulo p_align)",
                       name, i, (unsigned long long)ph.p_vaddr, (unsigned long long)ph.p_offset,
                       (unsigned long long)ph.p_align);
    if (!co_fits(ph.p_vaddr, ph.p_memsz, UINT64_MAX) || (loads && ph.p_vaddr < end))
      return hsad_fail(HSAD_ERR_BAD_ELF,
                       "%s: segment %u (PT_LOAD, address 0x%llx, %llu bytes) %s", name, i,
                       (unsigned long long)ph.p_vaddr, (unsigned long long)ph.p_memsz,
                       !co_fits(ph.p_vaddr, ph.p_memsz, UINT64_MAX)
                           ? "wraps around the address space"
                           : "starts below the end of the PT_LOAD segment before it: PT_LOAD "
                             "segments must ascend by p_vaddr without overlap");
    /* ROCr 5.2.3 (LoadedCodeObjectImpl::getLoadBase, through getDelta at the end of
     * ExecutableImpl::LoadCodeObject, and R_AMDGPU_RELATIVE64 in ApplyRelocations) takes the
     * load block's Address(0), and Segment::Offset asserts that address 0 lies in the block,
     * which starts at the first PT_LOAD's p_vaddr: so that p_vaddr must be 0. */
    if (!loads && ph.p_vaddr != 0)
      return hsad_fail(HSAD_ERR_BAD_ELF,
                       "%s: segment %u (the first PT_LOAD) has p_vaddr 0x%llx: ROCr 5.2.3's "
                       "loader requires the first loadable segment at address 0 (it aborts "
                       "otherwise)",
                       name, i, (unsigned long long)ph.p_vaddr);
    end = ph.p_vaddr + ph.p_memsz;
    loads++;
  }
  if (loads && end == 0)
    return hsad_fail(HSAD_ERR_BAD_ELF,
                     "%s: its %u PT_LOAD segments end at address 0: nothing to load", name, loads);
  for (unsigned i = 1; i < eh->e_shnum; i++) {
    Elf64_Shdr sh = co_shdr(image, eh, i);
    if (sh.sh_type == SHT_NULL || !(sh.sh_flags & SHF_ALLOC) || sh.sh_size == 0) continue;
    bool inside = false;
    for (unsigned k = 0; k < eh->e_phnum && !inside; k++) {
      Elf64_Phdr ph;
      memcpy(&ph, image + eh->e_phoff + (uint64_t)k * sizeof ph, sizeof ph);
      inside = ph.p_type == PT_LOAD && sh.sh_addr >= ph.p_vaddr &&
               co_fits(sh.sh_addr - ph.p_vaddr, sh.sh_size, ph.p_memsz);
    }
    if (!inside)
      return hsad_fail(HSAD_ERR_BAD_ELF,
                       "%s: section %u (SHF_ALLOC, address 0x%llx, %llu bytes) lies in no PT_LOAD "
                       "segment",
                       name, i, (unsigned long long)sh.sh_addr, (unsigned long long)sh.sh_size);
  }
  return HSAD_OK;
}

hsad_status_t co_elf_open(co_elf_t *e, const char *name, uint8_t *image, size_t size) {
  memset(e, 0, sizeof *e);
  e->name = name;
  e->image = image;
  e->size = size;
  if (size < 4 || memcmp(image, ELFMAG, SELFMAG))
    return hsad_fail(HSAD_ERR_NOT_ELF,
                     "%s: not an ELF file (no \\177ELF magic in the first 4 bytes of %zu)", name,
                     size);
  if (size < sizeof(Elf64_Ehdr))
    return hsad_fail(HSAD_ERR_TRUNCATED,
                     "%s: truncated: %zu bytes, shorter than the 64-byte ELF64 header", name,
                     size);
  Elf64_Ehdr eh;
  memcpy(&eh, image, sizeof eh);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64)
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: ELF class %u (%s), expected ELFCLASS64", name,
                     eh.e_ident[EI_CLASS],
                     eh.e_ident[EI_CLASS] == ELFCLASS32 ? "ELFCLASS32" : "invalid");
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: ELF data encoding %u, expected ELFDATA2LSB (1)",
                     name, eh.e_ident[EI_DATA]);
  if (eh.e_machine != CO_EM_AMDGPU)
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: e_machine %u (%s), expected 224 (EM_AMDGPU)", name,
                     eh.e_machine, co_machine_name(eh.e_machine));
  if (eh.e_ident[EI_OSABI] != CO_ELFOSABI_AMDGPU_HSA)
    return hsad_fail(HSAD_ERR_BAD_ELF,
                     "%s: OS ABI %u, expected 64 (ELFOSABI_AMDGPU_HSA); PAL/Mesa code objects "
                     "are not HSA code objects",
                     name, eh.e_ident[EI_OSABI]);
  /* EI_ABIVERSION: 0 = v2, 1 = v3, 2 = v4, 3 = v5, 4 = v6 ... */
  e->abi_version = eh.e_ident[EI_ABIVERSION];
  uint32_t version = e->abi_version + 2;
  if (version < 3 || version > 5)
    return hsad_fail(HSAD_ERR_CODE_OBJECT_VERSION,
                     "%s: code object version %u (EI_ABIVERSION %u) is not supported: supported "
                     "are 3 (read only), 4 and 5",
                     name, version, e->abi_version);
  e->code_object_version = version;
  e->e_flags = eh.e_flags;
  e->e_type = eh.e_type;
  /* ET_REL (clang -c): kernel descriptors' kernel_code_entry_byte_offset and every code
   * reference are R_AMDGPU_* relocations still to resolve, so its descriptors read as entry
   * offset 0 (tinygrad #11816). ROCr's loader takes linked code objects only: refuse it, the
   * same way for hsad inspect and program load, saying how to link it. */
  if (eh.e_type == ET_REL)
    return hsad_fail(HSAD_ERR_UNSUPPORTED,
                     "%s: relocatable object (ET_REL, e.g. from clang -c): kernel entry offsets "
                     "are unresolved relocations; link it into a code object first: "
                     "ld.lld-15 -shared OBJ.o -o OBJ.hsaco",
                     name);
  if (eh.e_type != ET_DYN)
    return hsad_fail(HSAD_ERR_BAD_ELF,
                     "%s: e_type %u, expected ET_DYN (3, a linked code object)", name, eh.e_type);
  if (eh.e_ehsize != sizeof(Elf64_Ehdr))
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: e_ehsize %u, expected 64", name, eh.e_ehsize);
  if (eh.e_phnum) {
    if (eh.e_phentsize != sizeof(Elf64_Phdr))
      return hsad_fail(HSAD_ERR_BAD_ELF, "%s: e_phentsize %u, expected 56", name,
                       eh.e_phentsize);
    if (!co_fits(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr), size))
      return hsad_fail(HSAD_ERR_TRUNCATED,
                       "%s: truncated: program header table (offset %llu, %u x 56 bytes) runs "
                       "past the end of the %zu-byte file",
                       name, (unsigned long long)eh.e_phoff, eh.e_phnum, size);
    /* ROCr's loader copies each segment's p_filesz bytes from p_offset into p_memsz bytes
     * without checking either: a range past the file, or more file bytes than memory,
     * crashed hsad_program_load in hsa_executable_load_agent_code_object (memcpy). */
    for (unsigned i = 0; i < eh.e_phnum; i++) {
      Elf64_Phdr ph;
      memcpy(&ph, image + eh.e_phoff + (uint64_t)i * sizeof ph, sizeof ph);
      if (ph.p_type == PT_NULL) continue;
      if (!co_fits(ph.p_offset, ph.p_filesz, size))
        return hsad_fail(HSAD_ERR_TRUNCATED,
                         "%s: truncated: segment %u (type %u, offset %llu, %llu bytes) runs past "
                         "the end of the %zu-byte file",
                         name, i, ph.p_type, (unsigned long long)ph.p_offset,
                         (unsigned long long)ph.p_filesz, size);
      if (ph.p_type == PT_LOAD && ph.p_filesz > ph.p_memsz)
        return hsad_fail(HSAD_ERR_BAD_ELF,
                         "%s: segment %u (PT_LOAD) has %llu file bytes, more than its %llu "
                         "memory bytes (p_filesz > p_memsz)",
                         name, i, (unsigned long long)ph.p_filesz,
                         (unsigned long long)ph.p_memsz);
    }
  }
  if (eh.e_shnum == 0 || eh.e_shoff == 0)
    return hsad_fail(HSAD_ERR_BAD_ELF,
                     "%s: no section header table (e_shnum %u, e_shoff %llu): cannot find the "
                     "metadata note and symbols",
                     name, eh.e_shnum, (unsigned long long)eh.e_shoff);
  if (eh.e_shentsize != sizeof(Elf64_Shdr))
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: e_shentsize %u, expected 64", name, eh.e_shentsize);
  if (!co_fits(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), size))
    return hsad_fail(HSAD_ERR_TRUNCATED,
                     "%s: truncated: section header table (offset %llu, %u x 64 bytes) runs past "
                     "the end of the %zu-byte file",
                     name, (unsigned long long)eh.e_shoff, eh.e_shnum, size);
  if (eh.e_shstrndx >= eh.e_shnum)
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: e_shstrndx %u is not below e_shnum %u", name,
                     eh.e_shstrndx, eh.e_shnum);
  for (unsigned i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, image + eh.e_shoff + (uint64_t)i * sizeof sh, sizeof sh);
    if (sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL) continue;
    if (!co_fits(sh.sh_offset, sh.sh_size, size))
      return hsad_fail(HSAD_ERR_TRUNCATED,
                       "%s: truncated: section %u (type %u, offset %llu, %llu bytes) runs past the "
                       "end of the %zu-byte file",
                       name, i, sh.sh_type, (unsigned long long)sh.sh_offset,
                       (unsigned long long)sh.sh_size, size);
    if ((sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) &&
        sh.sh_entsize != sizeof(Elf64_Sym))
      return hsad_fail(HSAD_ERR_BAD_ELF, "%s: symbol table section %u has sh_entsize %llu, "
                       "expected 24", name, i, (unsigned long long)sh.sh_entsize);
    /* libelf's elf_getdata refuses a symbol table that is not whole entries, so hsad's
     * descriptor lookup and ROCr's loader (GElfSection::pull, ROCr 5.2.3) see none of its
     * symbols: with .symtab so, every kernel went missing after a successful load ("not found
     * in the frozen executable"). */
    if ((sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) &&
        sh.sh_size % sizeof(Elf64_Sym))
      return hsad_fail(HSAD_ERR_BAD_ELF,
                       "%s: symbol table section %u has sh_size %llu, not a multiple of its "
                       "24-byte entries: libelf (hsad's and ROCr's ELF reader) reads none of its "
                       "symbols",
                       name, i, (unsigned long long)sh.sh_size);
    if ((sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM) &&
        (sh.sh_link >= eh.e_shnum))
      return hsad_fail(HSAD_ERR_BAD_ELF, "%s: symbol table section %u links to section %u, "
                       "beyond e_shnum %u", name, i, sh.sh_link, eh.e_shnum);
  }
  hsad_status_t rule = co_check_section_names(name, image, &eh);
  if (!rule) rule = co_check_symbols(name, image, &eh);
  if (!rule) rule = co_check_load_segments(name, image, &eh);
  if (rule) return rule;
  e->shnum = eh.e_shnum;

  pthread_once(&co_elf_once, co_elf_init);
  e->elf = elf_memory((char *)image, size);
  if (!e->elf)
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: libelf cannot read it: %s", name, elf_errmsg(-1));

  /* The metadata note: the first NT_AMDGPU_METADATA owned by "AMDGPU" in any SHT_NOTE. */
  Elf_Scn *scn = NULL;
  while ((scn = elf_nextscn(e->elf, scn))) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE) continue;
    Elf_Data *d = elf_rawdata(scn, NULL);
    if (!d || !d->d_buf) continue;
    size_t off = 0, next, name_off, desc_off;
    GElf_Nhdr nh;
    while (off < d->d_size) {
      next = gelf_getnote(d, off, &nh, &name_off, &desc_off);
      if (next == 0) {
        size_t idx = elf_ndxscn(scn), dsize = d->d_size;
        co_elf_close(e);
        return hsad_fail(HSAD_ERR_BAD_NOTE,
                         "%s: note at offset %zu of section %zu (%zu bytes): its header, name or "
                         "description size runs past the section",
                         name, off, idx, dsize);
      }
      if (nh.n_type == CO_NT_AMDGPU_METADATA && nh.n_namesz == 7 &&
          !memcmp((const char *)d->d_buf + name_off, "AMDGPU", 7)) {
        e->note_desc = (const uint8_t *)d->d_buf + desc_off;
        e->note_size = nh.n_descsz;
        return HSAD_OK;
      }
      off = next;
    }
  }
  co_elf_close(e);
  return hsad_fail(HSAD_ERR_BAD_NOTE,
                   "%s: no NT_AMDGPU_METADATA note (type 32, owner \"AMDGPU\"): not a code "
                   "object v3+ or its metadata was stripped",
                   name);
}

void co_elf_close(co_elf_t *e) {
  if (e->elf) elf_end(e->elf);
  e->elf = NULL;
}

static int co_find_symbol_kernel(const hsad_codeobj_t *co, const char *s, size_t n) {
  uint32_t h = co_hash_str(s, n);
  for (uint32_t i = h & co->hash_mask;; i = (i + 1) & co->hash_mask) {
    uint32_t slot = co->by_symbol[i];
    if (!slot) return -1;
    const char *sym = co->kernels[slot - 1].info.symbol;
    if (!strncmp(sym, s, n) && sym[n] == '\0') return (int)(slot - 1);
  }
}

hsad_status_t co_elf_read_descriptors(co_elf_t *e, hsad_codeobj_t *co) {
  uint32_t n = co->info.kernel_count;
  if (n == 0) return HSAD_OK;
  uint8_t *found = co_arena_alloc(&co->arena, n);
  if (!found) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", e->name);
  uint32_t nfound = 0;
  /* Prefer .symtab (complete); fall back to .dynsym. */
  for (int pass = 0; pass < 2 && nfound < n; pass++) {
    Elf_Scn *scn = NULL;
    while ((scn = elf_nextscn(e->elf, scn)) && nfound < n) {
      GElf_Shdr sh;
      if (!gelf_getshdr(scn, &sh)) continue;
      if (sh.sh_type != (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM)) continue;
      Elf_Data *d = elf_getdata(scn, NULL);
      if (!d || !d->d_buf) continue;
      size_t count = d->d_size / sizeof(Elf64_Sym);
      for (size_t i = 0; i < count && nfound < n; i++) {
        GElf_Sym sym;
        if (!gelf_getsym(d, (int)i, &sym)) continue;
        const char *sname = elf_strptr(e->elf, sh.sh_link, sym.st_name);
        if (!sname) continue;
        size_t len = strlen(sname);
        if (len < 4 || strcmp(sname + len - 3, ".kd")) continue;
        int k = co_find_symbol_kernel(co, sname, len);
        if (k < 0 || found[k]) continue;
        hsad_kernel_info_t *ki = &co->kernels[k].info;
        if (sym.st_shndx == SHN_UNDEF || sym.st_shndx >= e->shnum)
          return hsad_fail(HSAD_ERR_MISSING_DESCRIPTOR,
                           "%s: kernel '%s': symbol %s is undefined (section index %u)", e->name,
                           ki->name, sname, sym.st_shndx);
        Elf_Scn *ds = elf_getscn(e->elf, sym.st_shndx);
        GElf_Shdr dsh;
        if (!ds || !gelf_getshdr(ds, &dsh) || dsh.sh_type == SHT_NOBITS ||
            dsh.sh_type == SHT_NULL || !co_fits(dsh.sh_offset, dsh.sh_size, e->size))
          return hsad_fail(HSAD_ERR_MISSING_DESCRIPTOR,
                           "%s: kernel '%s': symbol %s is in section %u, which holds no bytes",
                           e->name, ki->name, sname, sym.st_shndx);
        /* ET_DYN (the only type co_elf_open accepts): st_value is an address in the section */
        uint64_t rel = sym.st_value;
        {
          if (rel < dsh.sh_addr)
            return hsad_fail(HSAD_ERR_MISSING_DESCRIPTOR,
                             "%s: kernel '%s': symbol %s address 0x%llx lies before its section "
                             "(0x%llx)",
                             e->name, ki->name, sname, (unsigned long long)rel,
                             (unsigned long long)dsh.sh_addr);
          rel -= dsh.sh_addr;
        }
        if (!co_fits(rel, 64, dsh.sh_size))
          return hsad_fail(HSAD_ERR_TRUNCATED,
                           "%s: kernel '%s': descriptor %s (64 bytes at section offset %llu) runs "
                           "past its %llu-byte section",
                           e->name, ki->name, sname, (unsigned long long)rel,
                           (unsigned long long)dsh.sh_size);
        memcpy(&ki->descriptor, e->image + dsh.sh_offset + rel, 64);
        co->kernels[k].descriptor_offset = dsh.sh_offset + rel;
        found[k] = 1;
        nfound++;
      }
    }
  }
  if (nfound < n) {
    for (uint32_t k = 0; k < n; k++)
      if (!found[k])
        return hsad_fail(HSAD_ERR_MISSING_DESCRIPTOR,
                         "%s: kernel '%s': kernel descriptor symbol '%s' not found in the symbol "
                         "tables",
                         e->name, co->kernels[k].info.name, co->kernels[k].info.symbol);
  }
  return HSAD_OK;
}

hsad_status_t co_elf_attach(co_elf_t *e, const char *name, const uint8_t *image, size_t size) {
  memset(e, 0, sizeof *e);
  e->name = name;
  e->image = image;
  e->size = size;
  pthread_once(&co_elf_once, co_elf_init);
  /* elf_memory's ELF_C_READ_MMAP_PRIVATE would convert data in place only for a foreign byte
   * order or misaligned tables; co_elf_open accepted ELFDATA2LSB only and the image is
   * malloc'd, and nothing here writes through the handle */
  e->elf = elf_memory((char *)image, size);
  size_t shnum = 0;
  if (!e->elf || elf_getshdrnum(e->elf, &shnum)) {
    co_elf_close(e);
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: libelf cannot read it: %s", name, elf_errmsg(-1));
  }
  e->shnum = shnum;
  return HSAD_OK;
}

/* The bytes of section i as stored (elf_rawdata): ROCr's loader reads a section's bytes so,
 * SHF_COMPRESSED or not, while elfutils' elf_getdata and elf_strptr take a SHF_COMPRESSED table
 * for a compressed one and give no symbol or name of it (the fuzz cases with that flag on
 * .symtab, .strtab or .shstrtab load in ROCr). *out NULL for a section without file bytes. */
static hsad_status_t co_raw(const co_elf_t *e, size_t i, const Elf_Data **out) {
  Elf_Scn *scn = elf_getscn(e->elf, i);
  Elf_Data *d = scn ? elf_rawdata(scn, NULL) : NULL;
  GElf_Shdr sh;
  if (!d && (!scn || !gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_NOBITS && sh.sh_size)))
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: libelf cannot read the bytes of section %zu: %s",
                     e->name, i, elf_errmsg(-1));
  *out = d && d->d_buf ? d : NULL;
  return HSAD_OK;
}

/* The NUL-ended string at `off` of string table bytes `d`, NULL when it is not inside. */
static const char *co_raw_str(const Elf_Data *d, uint64_t off) {
  if (!d || off >= d->d_size) return NULL;
  const char *s = (const char *)d->d_buf + off;
  return memchr(s, '\0', d->d_size - off) ? s : NULL;
}

/* The index of the last section named .symtab (not e_shstrndx's), 0 when none; its header in
 * *out. `names`: the bytes of the section name table. */
static hsad_status_t co_find_symtab(const co_elf_t *e, size_t shstrndx, const Elf_Data *names,
                                    size_t *index, GElf_Shdr *out) {
  *index = 0;
  Elf_Scn *scn = NULL;
  while ((scn = elf_nextscn(e->elf, scn))) {
    GElf_Shdr sh;
    size_t i = elf_ndxscn(scn);
    if (!gelf_getshdr(scn, &sh))
      return hsad_fail(HSAD_ERR_BAD_ELF, "%s: libelf cannot read the header of section %zu: %s",
                       e->name, i, elf_errmsg(-1));
    const char *sn = i == shstrndx ? NULL : co_raw_str(names, sh.sh_name);
    if (sn && !strcmp(sn, ".symtab")) *index = i, *out = sh;
  }
  return HSAD_OK;
}

/* Fills r's segment fields: the PT_LOAD whose file-backed bytes hold the 64 bytes at r->value
 * (co_elf_open refused overlapping PT_LOADs, so at most one does), the first PT_LOAD's address
 * and the last one's end. */
static hsad_status_t co_symtab_segment(const co_elf_t *e, hsad_symtab_symbol_t *r) {
  size_t n;
  if (elf_getphdrnum(e->elf, &n))
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: libelf cannot read the program header count: %s",
                     e->name, elf_errmsg(-1));
  bool first = true;
  for (size_t i = 0; i < n; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(e->elf, (int)i, &ph))
      return hsad_fail(HSAD_ERR_BAD_ELF, "%s: libelf cannot read program header %zu: %s",
                       e->name, i, elf_errmsg(-1));
    if (ph.p_type != PT_LOAD) continue;
    if (first) r->load_first = ph.p_vaddr;
    first = false;
    r->load_last_end = ph.p_vaddr + ph.p_memsz;
    if (r->value < ph.p_vaddr || !co_fits(r->value - ph.p_vaddr, 64, ph.p_filesz)) continue;
    r->in_segment = true;
    r->segment = (uint32_t)i;
    r->segment_offset = ph.p_offset + (r->value - ph.p_vaddr);
  }
  return HSAD_OK;
}

/* Fills r's symbol fields from `sym` (symbol j), its section's name, SHF_ALLOC, address and
 * file offset, and the PT_LOAD segment holding its value. */
static hsad_status_t co_symtab_entry(const co_elf_t *e, const Elf_Data *names, uint64_t j,
                                     const Elf64_Sym *sym, hsad_symtab_symbol_t *r) {
  r->found = true;
  r->index = j;
  r->binding = (uint8_t)ELF64_ST_BIND(sym->st_info);
  r->type = (uint8_t)ELF64_ST_TYPE(sym->st_info);
  r->section = sym->st_shndx;
  r->value = sym->st_value;
  hsad_status_t s = co_symtab_segment(e, r);
  if (s || sym->st_shndx == SHN_UNDEF || sym->st_shndx >= e->shnum) return s;
  GElf_Shdr sec;
  if (!gelf_getshdr(elf_getscn(e->elf, sym->st_shndx), &sec))
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: libelf cannot read the header of section %u: %s",
                     e->name, sym->st_shndx, elf_errmsg(-1));
  const char *sn = co_raw_str(names, sec.sh_name);
  r->section_name = sn ? sn : "";
  r->section_in_file = true;
  r->section_allocated = (sec.sh_flags & SHF_ALLOC) != 0;
  r->section_address = sec.sh_addr;
  r->section_offset = sec.sh_offset;
  return HSAD_OK;
}

hsad_status_t co_elf_symtab_find(const co_elf_t *e, const char *name, uint64_t from,
                                 hsad_symtab_symbol_t *out) {
  size_t shstrndx, ti;
  GElf_Shdr tab;
  const Elf_Data *names, *syms = NULL, *strs = NULL;
  if (elf_getshdrstrndx(e->elf, &shstrndx))
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: libelf cannot read the section name table index: %s",
                     e->name, elf_errmsg(-1));
  hsad_status_t s = co_raw(e, shstrndx, &names);
  if (!s) s = co_find_symtab(e, shstrndx, names, &ti, &tab);
  if (!s && ti) s = co_raw(e, ti, &syms);
  if (!s && ti) s = co_raw(e, tab.sh_link, &strs);
  if (s) return s;
  hsad_symtab_symbol_t r = {.symtab_section = (uint32_t)ti, .section_name = ""};
  r.symtab_count = ti ? tab.sh_size / sizeof(Elf64_Sym) : 0;
  /* whole entries inside the bytes (co_elf_open checked sh_size against the file) */
  uint64_t have = syms ? syms->d_size / sizeof(Elf64_Sym) : 0;
  for (uint64_t j = from; j < r.symtab_count && j < have; j++) {
    Elf64_Sym sym;
    memcpy(&sym, (const uint8_t *)syms->d_buf + j * sizeof sym, sizeof sym);
    const char *sn = co_raw_str(strs, sym.st_name);
    if (!sn || strcmp(sn, name)) continue;
    s = co_symtab_entry(e, names, j, &sym, &r);
    if (s) return s;
    break;
  }
  *out = r;
  return HSAD_OK;
}

hsad_status_t hsad_codeobj_symtab_find(const hsad_codeobj_t *co, const char *name, uint64_t from,
                                       hsad_symtab_symbol_t *out_symbol) {
  hsad_status_t s = HSAD_NULL_ARGS("hsad_codeobj_symtab_find", {co, "codeobj"}, {name, "name"},
                                   {out_symbol, "out_symbol"});
  if (s) return s;
  if (!co->info.image)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT,
                     "hsad_codeobj_symtab_find: %s has no ELF image (loaded from its metadata "
                     "note alone)",
                     co->info.name);
  co_elf_t e;
  s = co_elf_attach(&e, co->info.name, co->info.image, co->info.image_size);
  if (s) return s;
  s = co_elf_symtab_find(&e, name, from, out_symbol);
  co_elf_close(&e);
  return s;
}
