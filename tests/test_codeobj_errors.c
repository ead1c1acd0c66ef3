/* test_codeobj_errors.c - bad input never crashes or leaks: each case has its own error code and
 * a message naming the file and the problem. Run under ASan/UBSan with
 * `make BUILD=/tmp/cobuild SAN=-fsanitize=address,undefined /tmp/cobuild/tests/test_codeobj_errors`. */
#include "test_codeobj_util.h"

#include "hsa-dispatch/hsad.h"

#define V5 FIX("kernels-gfx90a-v5.hsaco")

Test(codeobj_errors, not_elf) {
  const char text[] = "hello, this is not a code object at all";
  co_test_expect_fail(text, sizeof text, "t.txt", HSAD_ERR_NOT_ELF, "t.txt: not an ELF file");
  co_test_expect_fail(text, 0, "empty", HSAD_ERR_NOT_ELF, "empty: not an ELF file");
  hsad_codeobj_container_t *c = NULL;
  cr_assert_eq(hsad_codeobj_container_open_memory(text, sizeof text, "t.txt", &c),
               HSAD_ERR_NOT_ELF);
  cr_assert_null(c);
  cr_assert(strstr(hsad_last_error(), "t.txt: neither an ELF file nor a clang offload bundle"));
}

Test(codeobj_errors, missing_file) {
  hsad_codeobj_t *co = NULL;
  cr_assert_eq(hsad_codeobj_load_file("/nonexistent/x.hsaco", NULL, &co), HSAD_ERR_IO);
  cr_assert_str_eq(hsad_last_error(), "/nonexistent/x.hsaco: cannot open: No such file or directory");
  cr_assert_eq(hsad_codeobj_load_file("/tmp", NULL, &co), HSAD_ERR_IO);
  cr_assert_str_eq(hsad_last_error(), "/tmp: not a regular file");
}

/* Every prefix of a real code object fails cleanly: < 4 bytes is not ELF, the rest truncated. */
Test(codeobj_errors, truncated_at_every_offset) {
  size_t size;
  unsigned char *buf = co_test_read(V5, &size);
  for (size_t n = 0; n < size; n++) {
    hsad_codeobj_t *co = NULL;
    hsad_status_t st = hsad_codeobj_load_memory(buf, n, "cut.hsaco", &co);
    hsad_status_t want = n < 4 ? HSAD_ERR_NOT_ELF : HSAD_ERR_TRUNCATED;
    cr_assert_eq(st, want, "prefix %zu: %s: %s", n, hsad_status_name(st), hsad_last_error());
    cr_assert_null(co);
    cr_assert(!strncmp(hsad_last_error(), "cut.hsaco: ", 11), "%s", hsad_last_error());
    if (n >= 4)
      cr_assert(strstr(hsad_last_error(), "truncated"), "%zu: %s", n, hsad_last_error());
  }
  hsad_codeobj_t *co = NULL;
  cr_assert_eq(hsad_codeobj_load_memory(buf, size, "whole.hsaco", &co), HSAD_OK);
  hsad_codeobj_destroy(co);
  free(buf);
}

Test(codeobj_errors, truncated_header_message) {
  size_t size;
  unsigned char *buf = co_test_read(V5, &size);
  co_test_expect_fail(buf, 40, "h.hsaco", HSAD_ERR_TRUNCATED,
                      "h.hsaco: truncated: 40 bytes, shorter than the 64-byte ELF64 header");
  co_test_expect_fail(buf, 64, "h.hsaco", HSAD_ERR_TRUNCATED,
                      "h.hsaco: truncated: program header table");
  free(buf);
}

/* A program header whose file range runs past the file, or a PT_LOAD with more file bytes than
 * memory bytes: refused before ROCr's loader copies the segment (a fuzzed code object with
 * either crashed hsad run in hsa_executable_load_agent_code_object's memcpy). */
Test(codeobj_errors, segment_past_end_or_above_memsz) {
  size_t size;
  unsigned char *buf = co_test_read(V5, &size);
  Elf64_Ehdr eh;
  memcpy(&eh, buf, sizeof eh);
  unsigned i = 0;
  Elf64_Phdr ph;
  for (; i < eh.e_phnum; i++) {
    memcpy(&ph, buf + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type == PT_LOAD && ph.p_offset > 0 && ph.p_filesz > 0) break;
  }
  cr_assert_lt(i, eh.e_phnum, "no PT_LOAD with file bytes past offset 0");
  unsigned char *at = buf + eh.e_phoff + i * sizeof ph;
  Elf64_Phdr bad = ph;
  bad.p_filesz = size; /* offset > 0: ends past the file */
  memcpy(at, &bad, sizeof bad);
  char want[256];
  snprintf(want, sizeof want, "p.hsaco: truncated: segment %u (type 1, offset %llu, %zu bytes) "
           "runs past the end of the %zu-byte file", i, (unsigned long long)ph.p_offset, size, size);
  co_test_expect_fail(buf, size, "p.hsaco", HSAD_ERR_TRUNCATED, want);
  cr_assert_str_eq(hsad_last_error(), want);
  bad = ph;
  bad.p_offset = UINT64_MAX - 2; /* offset + filesz wraps */
  memcpy(at, &bad, sizeof bad);
  snprintf(want, sizeof want, "p.hsaco: truncated: segment %u (type 1, offset %llu, %llu bytes) "
           "runs past the end of the %zu-byte file", i, (unsigned long long)(UINT64_MAX - 2),
           (unsigned long long)ph.p_filesz, size);
  co_test_expect_fail(buf, size, "p.hsaco", HSAD_ERR_TRUNCATED, want);
  cr_assert_str_eq(hsad_last_error(), want);
  bad = ph;
  bad.p_memsz = ph.p_filesz - 1;
  memcpy(at, &bad, sizeof bad);
  snprintf(want, sizeof want, "p.hsaco: segment %u (PT_LOAD) has %llu file bytes, more than its "
           "%llu memory bytes (p_filesz > p_memsz)", i, (unsigned long long)ph.p_filesz,
           (unsigned long long)ph.p_filesz - 1);
  co_test_expect_fail(buf, size, "p.hsaco", HSAD_ERR_BAD_ELF, want);
  cr_assert_str_eq(hsad_last_error(), want);
  memcpy(at, &ph, sizeof ph);
  hsad_codeobj_t *co = NULL;
  cr_assert_eq(hsad_codeobj_load_memory(buf, size, "whole.hsaco", &co), HSAD_OK);
  hsad_codeobj_destroy(co);
  free(buf);
}

/* ---- ELF structures ROCr's loader trusts (codeobj/elf.c; mutations 86-89) ----
 * Each case patches one field of a good code object and asserts the code and whole message:
 * the fuzz test (test_codeobj_fuzz) found each of these aborting or faulting inside
 * hsa_executable_load_agent_code_object before codeobj refused them. */
static Elf64_Ehdr elf_ehdr(const unsigned char *buf) {
  Elf64_Ehdr eh;
  memcpy(&eh, buf, sizeof eh);
  return eh;
}
static Elf64_Shdr elf_shdr(const unsigned char *buf, unsigned i) {
  Elf64_Shdr sh;
  memcpy(&sh, buf + elf_ehdr(buf).e_shoff + i * sizeof sh, sizeof sh);
  return sh;
}
static void elf_shdr_put(unsigned char *buf, unsigned i, const Elf64_Shdr *sh) {
  memcpy(buf + elf_ehdr(buf).e_shoff + i * sizeof *sh, sh, sizeof *sh);
}
/* The first section of `type` (asserted to exist). */
static unsigned elf_find(const unsigned char *buf, uint32_t type) {
  Elf64_Ehdr eh = elf_ehdr(buf);
  for (unsigned i = 1; i < eh.e_shnum; i++)
    if (elf_shdr(buf, i).sh_type == type) return i;
  cr_assert_fail("no section of type %u", type);
  return 0;
}
/* Symbol j of the symbol table section `tab` and its name. */
static Elf64_Sym elf_sym(const unsigned char *buf, unsigned tab, unsigned j) {
  Elf64_Sym sym;
  memcpy(&sym, buf + elf_shdr(buf, tab).sh_offset + j * sizeof sym, sizeof sym);
  return sym;
}
static void elf_sym_put(unsigned char *buf, unsigned tab, unsigned j, const Elf64_Sym *sym) {
  memcpy(buf + elf_shdr(buf, tab).sh_offset + j * sizeof *sym, sym, sizeof *sym);
}
static const char *elf_sym_name(const unsigned char *buf, unsigned tab, unsigned j) {
  return (const char *)buf + elf_shdr(buf, elf_shdr(buf, tab).sh_link).sh_offset +
         elf_sym(buf, tab, j).st_name;
}
/* The .symtab index of symbol `name`. */
static unsigned elf_sym_find(const unsigned char *buf, unsigned tab, const char *name) {
  Elf64_Shdr t = elf_shdr(buf, tab);
  for (unsigned j = 0; j < t.sh_size / sizeof(Elf64_Sym); j++)
    if (!strcmp(elf_sym_name(buf, tab, j), name)) return j;
  cr_assert_fail("no symbol %s", name);
  return 0;
}
#define EXPECT_BAD_ELF(buf, size, ...)                                                        \
  do {                                                                                        \
    char want_[512];                                                                          \
    snprintf(want_, sizeof want_, __VA_ARGS__);                                               \
    co_test_expect_fail(buf, size, "e.hsaco", HSAD_ERR_BAD_ELF, want_);                       \
    cr_assert_str_eq(hsad_last_error(), want_);                                               \
  } while (0)
static void expect_loads(const unsigned char *buf, size_t size) {
  hsad_codeobj_t *co = NULL;
  cr_assert_eq(hsad_codeobj_load_memory(buf, size, "whole.hsaco", &co), HSAD_OK, "%s",
               hsad_last_error());
  hsad_codeobj_destroy(co);
}

/* Section names and types (mutation 86): ROCr's loader makes a std::string of each section's
 * name (abort on NULL: sh_name outside .shstrtab, or .shstrtab no string table), reads every
 * section but 0 (SHT_NULL ones faulted) and takes .symtab/.strtab/.note by name. */
Test(codeobj_errors, section_names_and_types) {
  size_t size;
  unsigned char *buf = co_test_read(V5, &size);
  Elf64_Ehdr eh = elf_ehdr(buf);
  unsigned shstr = eh.e_shstrndx, symtab = elf_find(buf, SHT_SYMTAB);
  unsigned dynsym = elf_find(buf, SHT_DYNSYM);
  Elf64_Shdr st = elf_shdr(buf, shstr);
  /* sh_name one past the table's end (the first offset outside) */
  Elf64_Shdr sh = elf_shdr(buf, dynsym), bad = sh;
  bad.sh_name = (uint32_t)st.sh_size;
  elf_shdr_put(buf, dynsym, &bad);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: section %u: name offset %u (sh_name) is outside the "
                 "%llu-byte section name table (section %u)", dynsym, (unsigned)st.sh_size,
                 (unsigned long long)st.sh_size, shstr);
  /* the last name offset inside is read (the empty string of the table's final NUL) */
  bad.sh_name = (uint32_t)st.sh_size - 1;
  elf_shdr_put(buf, dynsym, &bad);
  expect_loads(buf, size);
  /* .dynsym named .symtab: the name of the symbol table section */
  bad.sh_name = elf_shdr(buf, symtab).sh_name;
  elf_shdr_put(buf, dynsym, &bad);
  /* .dynsym comes first: it is the section named .symtab of the wrong type */
  EXPECT_BAD_ELF(buf, size, "e.hsaco: section %u is named .symtab but has type 11, expected "
                 "SHT_SYMTAB (2): ROCr's loader takes the section of that name as one", dynsym);
  elf_shdr_put(buf, dynsym, &sh);
  /* a SHT_NULL section past section 0 */
  unsigned comment = symtab - 1;
  Elf64_Shdr c = elf_shdr(buf, comment), cnull = c;
  cnull.sh_type = SHT_NULL;
  elf_shdr_put(buf, comment, &cnull);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: section %u has type SHT_NULL (0): only section 0 may "
                 "(ROCr's loader reads every other section's name and type)", comment);
  elf_shdr_put(buf, comment, &c);
  /* e_shstrndx naming the symbol table; the name table not ending with NUL */
  Elf64_Ehdr e2 = eh;
  e2.e_shstrndx = (uint16_t)symtab;
  memcpy(buf, &e2, sizeof e2);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: section name table (section %u, e_shstrndx) has type 2, "
                 "expected SHT_STRTAB (3)", symtab);
  memcpy(buf, &eh, sizeof eh);
  buf[st.sh_offset + st.sh_size - 1] = 'x';
  EXPECT_BAD_ELF(buf, size, "e.hsaco: section name table (section %u, e_shstrndx, %llu bytes) "
                 "does not end with a NUL byte", shstr, (unsigned long long)st.sh_size);
  buf[st.sh_offset + st.sh_size - 1] = '\0';
  expect_loads(buf, size);
  free(buf);
}

/* Symbol names and relocation links (mutation 87): a symbol table's sh_link must be a string
 * table and each st_name inside it (ROCr's loader aborted on the NULL name). */
Test(codeobj_errors, symbol_names_and_links) {
  size_t size;
  unsigned char *buf = co_test_read(V5, &size);
  unsigned symtab = elf_find(buf, SHT_SYMTAB);
  Elf64_Shdr t = elf_shdr(buf, symtab), str = elf_shdr(buf, t.sh_link);
  unsigned j = elf_sym_find(buf, symtab, "vadd.kd");
  Elf64_Sym sym = elf_sym(buf, symtab, j), bad = sym;
  bad.st_name = (uint32_t)str.sh_size;
  elf_sym_put(buf, symtab, j, &bad);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: symbol %u of section %u: name offset %u (st_name) is "
                 "outside its %llu-byte string table (section %u)", j, symtab,
                 (unsigned)str.sh_size, (unsigned long long)str.sh_size, t.sh_link);
  elf_sym_put(buf, symtab, j, &sym);
  /* sh_link to the .rodata bytes (PROGBITS) */
  unsigned rodata = elf_shdr(buf, elf_find(buf, SHT_DYNSYM)).sh_link + 1;
  cr_assert_eq(elf_shdr(buf, rodata).sh_type, SHT_PROGBITS);
  Elf64_Shdr tl = t;
  tl.sh_link = rodata;
  elf_shdr_put(buf, symtab, &tl);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: string table (section %u, sh_link of symbol table section "
                 "%u) has type 1, expected SHT_STRTAB (3)", rodata, symtab);
  elf_shdr_put(buf, symtab, &t);
  buf[str.sh_offset + str.sh_size - 1] = 'x';
  EXPECT_BAD_ELF(buf, size, "e.hsaco: string table (section %u, sh_link of symbol table section "
                 "%u, %llu bytes) does not end with a NUL byte", t.sh_link, symtab,
                 (unsigned long long)str.sh_size);
  buf[str.sh_offset + str.sh_size - 1] = '\0';
  /* .hash retyped SHT_RELA (ROCr asserted reading it): 4-byte entries */
  unsigned hash = elf_find(buf, SHT_HASH);
  Elf64_Shdr h = elf_shdr(buf, hash), hr = h;
  hr.sh_type = SHT_RELA;
  elf_shdr_put(buf, hash, &hr);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: relocation section %u (type 4): sh_entsize 4, sh_size %llu, "
                 "sh_link %u, sh_info 0: expected entries of 24 bytes filling it, sh_link a "
                 "symbol table and sh_info a section below e_shnum %u", hash,
                 (unsigned long long)h.sh_size, h.sh_link, elf_ehdr(buf).e_shnum);
  elf_shdr_put(buf, hash, &h);
  expect_loads(buf, size);
  free(buf);
}

/* Symbol placement (mutation 88): a defined symbol's section exists and, allocated, holds its
 * whole address range; a data symbol of .symtab is defined (ROCr's loader indexed its
 * section list with st_shndx, asserted the address in the segment, read an absent section). */
Test(codeobj_errors, symbol_section_and_range) {
  size_t size;
  unsigned char *buf = co_test_read(V5, &size);
  Elf64_Ehdr eh = elf_ehdr(buf);
  unsigned symtab = elf_find(buf, SHT_SYMTAB);
  unsigned j = elf_sym_find(buf, symtab, "vadd.kd");
  Elf64_Sym sym = elf_sym(buf, symtab, j), bad = sym;
  Elf64_Shdr sec = elf_shdr(buf, sym.st_shndx);
  bad.st_value = sec.sh_addr - 64; /* 64 bytes below its section */
  elf_sym_put(buf, symtab, j, &bad);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: symbol %u 'vadd.kd' of section %u: address 0x%llx, 64 bytes "
                 "(st_value, st_size) lies outside its section %u (address 0x%llx, %llu bytes)",
                 j, symtab, (unsigned long long)(sec.sh_addr - 64), sym.st_shndx,
                 (unsigned long long)sec.sh_addr, (unsigned long long)sec.sh_size);
  bad.st_value = sec.sh_addr + sec.sh_size - 63; /* its last byte one past the section */
  elf_sym_put(buf, symtab, j, &bad);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: symbol %u 'vadd.kd' of section %u: address 0x%llx, 64 bytes "
                 "(st_value, st_size) lies outside its section %u (address 0x%llx, %llu bytes)",
                 j, symtab, (unsigned long long)(sec.sh_addr + sec.sh_size - 63), sym.st_shndx,
                 (unsigned long long)sec.sh_addr, (unsigned long long)sec.sh_size);
  bad = sym;
  bad.st_shndx = eh.e_shnum;
  elf_sym_put(buf, symtab, j, &bad);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: symbol %u 'vadd.kd' of section %u: section index %u "
                 "(st_shndx) is not below e_shnum %u", j, symtab, eh.e_shnum, eh.e_shnum);
  bad.st_shndx = SHN_UNDEF;
  elf_sym_put(buf, symtab, j, &bad);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: symbol %u 'vadd.kd' of section %u: a data or kernel symbol "
                 "(type 1) with no section (st_shndx 0, SHN_UNDEF)", j, symtab);
  bad = sym;
  bad.st_value = sec.sh_addr + sec.sh_size - 64; /* the section's last 64 bytes: inside */
  elf_sym_put(buf, symtab, j, &bad);
  expect_loads(buf, size);
  free(buf);
}

/* Load segments (mutation 89): PT_LOAD p_vaddr = p_offset modulo p_align, ascending without
 * overlap, ending above 0, and every allocated section inside one (ROCr's loader asserted
 * Segment::Offset and a non-empty block). */
Test(codeobj_errors, load_segments_hold_sections) {
  size_t size;
  unsigned char *buf = co_test_read(V5, &size);
  Elf64_Ehdr eh = elf_ehdr(buf);
  unsigned load[8], n = 0;
  Elf64_Phdr ph[8];
  for (unsigned i = 0; i < eh.e_phnum && n < 8; i++) {
    Elf64_Phdr p;
    memcpy(&p, buf + eh.e_phoff + i * sizeof p, sizeof p);
    if (p.p_type == PT_LOAD) {
      load[n] = i;
      ph[n++] = p;
    }
  }
  cr_assert_geq(n, 2);
  unsigned char *at0 = buf + eh.e_phoff + load[0] * sizeof(Elf64_Phdr);
  unsigned char *at1 = buf + eh.e_phoff + load[1] * sizeof(Elf64_Phdr);
  Elf64_Phdr bad = ph[0];
  bad.p_vaddr = ph[0].p_vaddr + 1;
  memcpy(at0, &bad, sizeof bad);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: segment %u (PT_LOAD): address 0x%llx and file offset 0x%llx "
                 "differ modulo its alignment %llu (p_align a power of two, p_vaddr = p_offset "
                 "modulo p_align)", load[0], (unsigned long long)bad.p_vaddr,
                 (unsigned long long)bad.p_offset, (unsigned long long)bad.p_align);
  memcpy(at0, &ph[0], sizeof bad);
  /* the second PT_LOAD moved below the first one's end (congruent still) */
  bad = ph[1];
  bad.p_vaddr = ph[1].p_offset % ph[1].p_align;
  cr_assert_lt(bad.p_vaddr, ph[0].p_vaddr + ph[0].p_memsz);
  memcpy(at1, &bad, sizeof bad);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: segment %u (PT_LOAD, address 0x%llx, %llu bytes) starts "
                 "below the end of the PT_LOAD segment before it: PT_LOAD segments must ascend "
                 "by p_vaddr without overlap", load[1], (unsigned long long)bad.p_vaddr,
                 (unsigned long long)bad.p_memsz);
  /* the second PT_LOAD no longer PT_LOAD: .text lies in no PT_LOAD */
  bad = ph[1];
  bad.p_type = PT_NULL;
  memcpy(at1, &bad, sizeof bad);
  unsigned text = 0;
  for (unsigned i = 1; i < eh.e_shnum; i++)
    if (elf_shdr(buf, i).sh_flags & SHF_EXECINSTR) text = i;
  Elf64_Shdr tx = elf_shdr(buf, text);
  cr_assert_eq(tx.sh_addr, ph[1].p_vaddr);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: section %u (SHF_ALLOC, address 0x%llx, %llu bytes) lies in "
                 "no PT_LOAD segment", text, (unsigned long long)tx.sh_addr,
                 (unsigned long long)tx.sh_size);
  /* its p_memsz one byte short of .text */
  bad = ph[1];
  bad.p_memsz = bad.p_filesz = tx.sh_size - 1;
  memcpy(at1, &bad, sizeof bad);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: section %u (SHF_ALLOC, address 0x%llx, %llu bytes) lies in "
                 "no PT_LOAD segment", text, (unsigned long long)tx.sh_addr,
                 (unsigned long long)tx.sh_size);
  /* p_vaddr + p_memsz wrapping */
  bad = ph[1];
  bad.p_memsz = UINT64_MAX - bad.p_vaddr + 1;
  memcpy(at1, &bad, sizeof bad);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: segment %u (PT_LOAD, address 0x%llx, %llu bytes) wraps "
                 "around the address space", load[1], (unsigned long long)bad.p_vaddr,
                 (unsigned long long)bad.p_memsz);
  memcpy(at1, &ph[1], sizeof bad);
  expect_loads(buf, size);
  free(buf);
}

/* Symbol tables of whole entries (mutation 84): libelf's elf_getdata refuses one whose sh_size
 * is not a multiple of 24, so ROCr's loader saw no symbol of such a .symtab and every kernel
 * went missing after the load (test_codeobj_fuzz: "sh_size 0xa8 -> 0xa7"). */
Test(codeobj_errors, symbol_table_whole_entries) {
  size_t size;
  unsigned char *buf = co_test_read(V5, &size);
  unsigned symtab = elf_find(buf, SHT_SYMTAB), dynsym = elf_find(buf, SHT_DYNSYM);
  Elf64_Shdr t = elf_shdr(buf, symtab), bad = t;
  cr_assert_eq(t.sh_size, 18 * 24);
  bad.sh_size = t.sh_size - 1;
  elf_shdr_put(buf, symtab, &bad);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: symbol table section %u has sh_size 431, not a multiple "
                 "of its 24-byte entries: libelf (hsad's and ROCr's ELF reader) reads none of "
                 "its symbols", symtab);
  /* one whole entry fewer (the last, spill.kd, then comes from .dynsym) still loads */
  bad.sh_size = t.sh_size - 24;
  elf_shdr_put(buf, symtab, &bad);
  expect_loads(buf, size);
  elf_shdr_put(buf, symtab, &t);
  Elf64_Shdr d = elf_shdr(buf, dynsym), dbad = d;
  dbad.sh_size = d.sh_size + 8;
  elf_shdr_put(buf, dynsym, &dbad);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: symbol table section %u has sh_size %llu, not a multiple "
                 "of its 24-byte entries: libelf (hsad's and ROCr's ELF reader) reads none of "
                 "its symbols", dynsym, (unsigned long long)d.sh_size + 8);
  elf_shdr_put(buf, dynsym, &d);
  expect_loads(buf, size);
  free(buf);
}

/* kfd-emu's device 0 of a newly opened runtime (*rt: close it at the end). */
static hsad_device_t *device0(hsad_runtime_t **rt) {
  hsad_device_t *dev = NULL;
  cr_assert_eq(hsad_runtime_open(rt), HSAD_OK, "%s", hsad_last_error());
  cr_assert_eq(hsad_device_get(*rt, 0, &dev), HSAD_OK, "%s", hsad_last_error());
  return dev;
}

/* hsad_program_load_memory of buf on kfd-emu's device 0 fails with `want` and message `msg`
 * before ROCr loads it, while hsad_codeobj_load_memory (hsad inspect) still reads it. */
static void expect_program_fails(hsad_device_t *dev, const unsigned char *buf, size_t size,
                                 hsad_status_t want, const char *msg) {
  hsad_program_t *p = NULL;
  hsad_status_t st = hsad_program_load_memory(dev, buf, size, "e.hsaco", &p);
  cr_assert_eq(st, want, "got %s (%s), want %s", hsad_status_name(st), hsad_last_error(),
               hsad_status_name(want));
  cr_assert_null(p);
  cr_assert_str_eq(hsad_last_error(), msg);
  expect_loads(buf, size);
}

/* ... or loads, and kernel vadd resolves to its descriptor bytes (kfd-emu: a GPU address is
 * the host address of the same bytes). */
static void expect_program_loads(hsad_device_t *dev, const unsigned char *buf, size_t size) {
  hsad_program_t *p = NULL;
  cr_assert_eq(hsad_program_load_memory(dev, buf, size, "e.hsaco", &p), HSAD_OK, "%s",
               hsad_last_error());
  const hsad_device_kernel_t *k = NULL;
  cr_assert_eq(hsad_program_kernel(p, "vadd", &k), HSAD_OK, "%s", hsad_last_error());
  const hsad_device_kernel_desc_t *d = hsad_device_kernel_desc(k);
  cr_assert_neq(d->kernel_object, 0);
  cr_assert_eq(memcmp((const void *)(uintptr_t)d->kernel_object,
                      &hsad_kernel_info(d->codeobj_kernel)->descriptor, 64), 0);
  cr_assert_eq(hsad_program_destroy(p), HSAD_OK, "%s", hsad_last_error());
}

/* Descriptor symbols ROCr's loader exposes (hsa-dispatch/program.c, mutation 83): it reads
 * symbols from the section named .symtab only and loads STT_OBJECT ones unless STB_LOCAL, and
 * type 10 ones; a kernel whose
 * NAME.kd is elsewhere (hsad's codeobj finds it in .dynsym) loaded in ROCr and then failed
 * with "kernel symbol NAME.kd not found in the frozen executable" (HSA status 0x1013): 664 of
 * test_codeobj_fuzz's 20,000 cases. Now refused before hsa_executable_load_agent_code_object,
 * naming the kernel and the cause. */
Test(codeobj_errors, descriptor_symbol_rocr_exposes) {
  hsad_runtime_t *rt = NULL;
  hsad_device_t *dev = device0(&rt);
  size_t size;
  unsigned char *buf = co_test_read(V5, &size);
  unsigned symtab = elf_find(buf, SHT_SYMTAB);
  unsigned j = elf_sym_find(buf, symtab, "vadd.kd"), f = elf_sym_find(buf, symtab, "vadd");
  Elf64_Sym sym = elf_sym(buf, symtab, j), bad = sym;
  char want[512];
  /* STB_LOCAL: ROCr skips local symbols of code object v3+ */
  bad.st_info = ELF64_ST_INFO(STB_LOCAL, STT_OBJECT);
  elf_sym_put(buf, symtab, j, &bad);
  snprintf(want, sizeof want, "e.hsaco: kernel 'vadd': its descriptor symbol vadd.kd (symbol %u "
           "of .symtab, section %u) has binding 0 (STB_LOCAL) and type 1 (STT_OBJECT): ROCr's "
           "loader exposes a kernel descriptor only through a non-local STT_OBJECT or a type 10 "
           "symbol", j,
           symtab);
  expect_program_fails(dev, buf, size, HSAD_ERR_MISSING_DESCRIPTOR, want);
  /* STT_FUNC: not a symbol ROCr loads */
  bad.st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
  elf_sym_put(buf, symtab, j, &bad);
  snprintf(want, sizeof want, "e.hsaco: kernel 'vadd': its descriptor symbol vadd.kd (symbol %u "
           "of .symtab, section %u) has binding 1 (STB_GLOBAL) and type 2 (STT_FUNC): ROCr's "
           "loader exposes a kernel descriptor only through a non-local STT_OBJECT or a type 10 "
           "symbol", j,
           symtab);
  expect_program_fails(dev, buf, size, HSAD_ERR_MISSING_DESCRIPTOR, want);
  /* the boundary: STB_WEAK is not local, ROCr loads and finds it */
  bad.st_info = ELF64_ST_INFO(STB_WEAK, STT_OBJECT);
  elf_sym_put(buf, symtab, j, &bad);
  expect_program_loads(dev, buf, size);
  /* ... and type 10 (STT_AMDGPU_HSA_KERNEL), which ROCr loads even when local */
  bad.st_info = ELF64_ST_INFO(STB_LOCAL, 10);
  elf_sym_put(buf, symtab, j, &bad);
  expect_program_loads(dev, buf, size);
  /* its name changed to the kernel's own ("vadd"): no vadd.kd in .symtab */
  bad = sym;
  bad.st_name = elf_sym(buf, symtab, f).st_name;
  elf_sym_put(buf, symtab, j, &bad);
  snprintf(want, sizeof want, "e.hsaco: kernel 'vadd': its descriptor symbol vadd.kd is not in "
           ".symtab (section %u, 18 symbols), the only symbol table ROCr's loader reads (not "
           ".dynsym)", symtab);
  expect_program_fails(dev, buf, size, HSAD_ERR_MISSING_DESCRIPTOR, want);
  elf_sym_put(buf, symtab, j, &sym);
  expect_program_loads(dev, buf, size);
  /* .symtab renamed "symtab" (its name one byte on): ROCr finds no table by name */
  Elf64_Shdr t = elf_shdr(buf, symtab), tbad = t;
  tbad.sh_name = t.sh_name + 1;
  elf_shdr_put(buf, symtab, &tbad);
  expect_program_fails(dev, buf, size, HSAD_ERR_MISSING_DESCRIPTOR,
                       "e.hsaco: kernel 'vadd': no section is named .symtab, the only symbol "
                       "table ROCr's loader reads (not .dynsym): it would not expose vadd.kd");
  elf_shdr_put(buf, symtab, &t);
  expect_program_loads(dev, buf, size);
  free(buf);
  cr_assert_eq(hsad_runtime_close(rt), HSAD_OK);
}

/* ROCr's kernel object must hold the descriptor hsad decoded, from the same file bytes
 * (hsa-dispatch/program.c, check_kernel_object; mutation 143): ROCr 5.2.3 places a NAME.kd at
 * its st_value in the block it loads the PT_LOAD segments into and never looks at SHF_ALLOC,
 * while hsad copied the descriptor from its section's file bytes. Measured without the check on
 * kfd-emu: vadd.kd moved to .strtab loads, and ROCr's kernel object is the ELF header (7f 45 4c
 * 46 ...: address 0, file offset 0) while hsad's descriptor is .strtab's first bytes (00 76 61
 * 64 ..., file offset 0x33b9). .rodata without SHF_ALLOC loads: its address still lies inside
 * the first PT_LOAD, which loads it from the same file offset (test_codeobj_fuzz: 8 such
 * objects). hsad_codeobj_load_memory (hsad inspect) still reads every object. */
Test(codeobj_errors, descriptor_symbol_in_unallocated_section) {
  hsad_runtime_t *rt = NULL;
  hsad_device_t *dev = device0(&rt);
  size_t size;
  unsigned char *buf = co_test_read(V5, &size);
  unsigned symtab = elf_find(buf, SHT_SYMTAB), rodata = 0, strtab = 0;
  Elf64_Ehdr eh = elf_ehdr(buf);
  const char *names = (const char *)buf + elf_shdr(buf, eh.e_shstrndx).sh_offset;
  for (unsigned i = 1; i < eh.e_shnum; i++) {
    if (!strcmp(names + elf_shdr(buf, i).sh_name, ".rodata")) rodata = i;
    if (!strcmp(names + elf_shdr(buf, i).sh_name, ".strtab")) strtab = i;
  }
  cr_assert(rodata && strtab && symtab == 10 && rodata == 6 && strtab == 12);
  unsigned j = elf_sym_find(buf, symtab, "vadd.kd");
  cr_assert_eq(j, 3);
  Elf64_Sym sym = elf_sym(buf, symtab, j), bad = sym;
  cr_assert_eq(sym.st_shndx, rodata);
  Elf64_Shdr ro = elf_shdr(buf, rodata), robad = ro;
  cr_assert_eq(ro.sh_flags, SHF_ALLOC);
  cr_assert_eq(elf_shdr(buf, strtab).sh_offset, 0x33b9);
  /* vadd.kd moved to .strtab (not allocated, address 0): hsad would read its descriptor from
   * .strtab's first 64 file bytes, ROCr from the loaded image at address 0 (the ELF header) */
  bad.st_shndx = (uint16_t)strtab;
  bad.st_value = 0;
  elf_sym_put(buf, symtab, j, &bad);
  expect_program_fails(dev, buf, size, HSAD_ERR_MISSING_DESCRIPTOR,
                       "e.hsaco: kernel 'vadd': its descriptor symbol vadd.kd (symbol 3 of "
                       ".symtab, section 10) lies in section 12 (.strtab) at address 0x0, which "
                       "segment 1 (PT_LOAD) loads from file offset 0x0, while hsad read the "
                       "descriptor from file offset 0x33b9: ROCr's kernel object would hold "
                       "other bytes than this descriptor");
  elf_sym_put(buf, symtab, j, &sym);
  expect_program_loads(dev, buf, size);
  /* .rodata, which holds every NAME.kd, with SHF_ALLOC cleared: still inside the first PT_LOAD
   * at the file offset hsad reads, so ROCr's kernel object is hsad's descriptor */
  robad.sh_flags = 0;
  elf_shdr_put(buf, rodata, &robad);
  expect_program_loads(dev, buf, size);
  robad.sh_flags = SHF_ALLOC | SHF_WRITE;
  elf_shdr_put(buf, rodata, &robad);
  expect_program_loads(dev, buf, size);
  elf_shdr_put(buf, rodata, &ro);
  free(buf);
  cr_assert_eq(hsad_runtime_close(rt), HSAD_OK);
}

/* The other ways ROCr's kernel object misses hsad's descriptor (check_kernel_object), each
 * against its boundary; kernels-gfx90a-v5: .rodata (6) at address and file offset 0x1cc0,
 * vadd.kd at 0x1cc0, lds2.kd at 0x1d00, PT_LOAD 1 [0, 0x1ec0) from file offset 0. */
Test(codeobj_errors, descriptor_symbol_where_rocr_places_it) {
  hsad_runtime_t *rt = NULL;
  hsad_device_t *dev = device0(&rt);
  size_t size;
  unsigned char *buf = co_test_read(V5, &size);
  unsigned symtab = elf_find(buf, SHT_SYMTAB);
  Elf64_Ehdr eh = elf_ehdr(buf);
  Elf64_Shdr ro = elf_shdr(buf, 6), robad = ro;
  Elf64_Sym kd = elf_sym(buf, symtab, 3), one = elf_sym(buf, symtab, 1), dup = kd, moved = kd;
  cr_assert(ro.sh_addr == 0x1cc0 && ro.sh_offset == 0x1cc0 && kd.st_value == 0x1cc0);
  Elf64_Phdr ph, phbad;
  unsigned char *at1 = buf + eh.e_phoff + 1 * sizeof ph;
  memcpy(&ph, at1, sizeof ph);
  cr_assert(ph.p_type == PT_LOAD && ph.p_vaddr == 0 && ph.p_offset == 0 &&
            ph.p_filesz == 0x1ec0 && ph.p_memsz == 0x1ec0);
  /* .rodata's file bytes moved 64 on (allocated still): hsad reads lds2's descriptor bytes */
  robad.sh_offset = ro.sh_offset + 0x40;
  elf_shdr_put(buf, 6, &robad);
  expect_program_fails(dev, buf, size, HSAD_ERR_MISSING_DESCRIPTOR,
                       "e.hsaco: kernel 'vadd': its descriptor symbol vadd.kd (symbol 3 of "
                       ".symtab, section 10) lies in section 6 (.rodata) at address 0x1cc0, which "
                       "segment 1 (PT_LOAD) loads from file offset 0x1cc0, while hsad read the "
                       "descriptor from file offset 0x1d00: ROCr's kernel object would hold "
                       "other bytes than this descriptor");
  elf_shdr_put(buf, 6, &ro);
  /* the first PT_LOAD's file bytes ending one byte short of vadd.kd's end (its memory zeros) */
  phbad = ph;
  phbad.p_filesz = 0x1cff;
  memcpy(at1, &phbad, sizeof ph);
  expect_program_fails(dev, buf, size, HSAD_ERR_MISSING_DESCRIPTOR,
                       "e.hsaco: kernel 'vadd': its descriptor symbol vadd.kd (symbol 3 of "
                       ".symtab, section 10) lies in section 6 (.rodata) at address 0x1cc0, and no "
                       "PT_LOAD segment loads those 64 bytes from the file (p_vaddr to p_vaddr + "
                       "p_filesz): ROCr's kernel object would not hold the descriptor hsad read "
                       "from file offset 0x1cc0");
  /* ending at vadd.kd's end: vadd passes, the next kernel of the note is named */
  phbad.p_filesz = 0x1d00;
  memcpy(at1, &phbad, sizeof ph);
  expect_program_fails(dev, buf, size, HSAD_ERR_MISSING_DESCRIPTOR,
                       "e.hsaco: kernel 'lds2': its descriptor symbol lds2.kd (symbol 5 of "
                       ".symtab, section 10) lies in section 6 (.rodata) at address 0x1d00, and no "
                       "PT_LOAD segment loads those 64 bytes from the file (p_vaddr to p_vaddr + "
                       "p_filesz): ROCr's kernel object would not hold the descriptor hsad read "
                       "from file offset 0x1d00");
  memcpy(at1, &ph, sizeof ph);
  /* hsad's descriptor from another symbol than ROCr's: a local vadd.kd first (symbol 1, which
   * hsad takes and ROCr skips) at lds2.kd's address */
  dup.st_info = ELF64_ST_INFO(STB_LOCAL, STT_OBJECT);
  dup.st_value = 0x1d00;
  elf_sym_put(buf, symtab, 1, &dup);
  expect_program_fails(dev, buf, size, HSAD_ERR_MISSING_DESCRIPTOR,
                       "e.hsaco: kernel 'vadd': its descriptor symbol vadd.kd (symbol 3 of "
                       ".symtab, section 10) lies in section 6 (.rodata) at address 0x1cc0, which "
                       "segment 1 (PT_LOAD) loads from file offset 0x1cc0, while hsad read the "
                       "descriptor from file offset 0x1d00: ROCr's kernel object would hold "
                       "other bytes than this descriptor");
  /* ... at the same address: the same bytes */
  dup.st_value = 0x1cc0;
  elf_sym_put(buf, symtab, 1, &dup);
  expect_program_loads(dev, buf, size);
  /* ROCr's symbol in .comment (9, not allocated) at address 0x6000, past the block ROCr loads
   * the PT_LOAD segments into ([0, 0x5170): the last PT_LOAD ends there), its value still
   * 0x1cc0 (hsad reads the local one): ROCr finds no segment for the section, kernel object 0 */
  Elf64_Shdr cm = elf_shdr(buf, 9), cmbad = cm;
  cr_assert_eq(cm.sh_flags & SHF_ALLOC, 0);
  cmbad.sh_addr = 0x6000;
  elf_shdr_put(buf, 9, &cmbad);
  moved.st_shndx = 9;
  elf_sym_put(buf, symtab, 3, &moved);
  expect_program_fails(dev, buf, size, HSAD_ERR_MISSING_DESCRIPTOR,
                       "e.hsaco: kernel 'vadd': its descriptor symbol vadd.kd (symbol 3 of "
                       ".symtab, section 10) lies in section 9 (.comment), whose address 0x6000 is "
                       "outside the block ROCr's loader allocates for the PT_LOAD segments (0x0, "
                       "20848 bytes): its kernel object would be address 0");
  /* at the block's last byte: ROCr places vadd.kd at 0x1cc0 of the block, hsad's bytes */
  cmbad.sh_addr = 0x516f;
  elf_shdr_put(buf, 9, &cmbad);
  expect_program_loads(dev, buf, size);
  elf_shdr_put(buf, 9, &cm);
  elf_sym_put(buf, symtab, 3, &kd);
  elf_sym_put(buf, symtab, 1, &one);
  expect_program_loads(dev, buf, size);
  free(buf);
  cr_assert_eq(hsad_runtime_close(rt), HSAD_OK);
}

/* The first PT_LOAD at address 0 (codeobj/elf.c, co_check_load_segments; mutation 150): ROCr
 * 5.2.3 loads the PT_LOAD segments into one block starting at the first one's p_vaddr, then asks
 * for the block's address 0 (LoadedCodeObjectImpl::getLoadBase, at the end of every load), and
 * Segment::Offset asserts that address 0 lies inside. kernels-gfx90a-v5: segment 0 PT_PHDR at
 * 0x40, segment 1 the first PT_LOAD [0, 0x1ec0) from file offset 0 (.note at 0x200 is its first
 * section), segment 2 PT_LOAD at 0x2f00. Measured without the rule on kfd-emu: the object whose
 * first PT_LOAD starts at .note (0x200, file offset 0x200: every other rule holds, each section
 * and descriptor at the same file bytes) passed codeobj, and hsad_program_load_memory aborted the
 * process inside hsa_executable_load_agent_code_object (SIGABRT, Segment::Offset's assert). */
Test(codeobj_errors, first_load_segment_at_address_0) {
  hsad_runtime_t *rt = NULL;
  hsad_device_t *dev = device0(&rt);
  size_t size;
  unsigned char *buf = co_test_read(V5, &size);
  Elf64_Ehdr eh = elf_ehdr(buf);
  Elf64_Phdr ph0, ph1, ph2, bad;
  unsigned char *at1 = buf + eh.e_phoff + 1 * sizeof ph1;
  memcpy(&ph0, buf + eh.e_phoff, sizeof ph0);
  memcpy(&ph1, at1, sizeof ph1);
  memcpy(&ph2, at1 + sizeof ph1, sizeof ph2);
  cr_assert(ph0.p_type == PT_PHDR && ph0.p_vaddr == 0x40);
  cr_assert(ph1.p_type == PT_LOAD && ph1.p_vaddr == 0 && ph1.p_offset == 0 &&
            ph1.p_filesz == 0x1ec0 && ph1.p_memsz == 0x1ec0 && ph1.p_align == 0x1000);
  cr_assert(ph2.p_type == PT_LOAD && ph2.p_vaddr == 0x2f00);
  cr_assert_eq(elf_shdr(buf, 1).sh_addr, 0x200);
  const char *want = "e.hsaco: segment 1 (the first PT_LOAD) has p_vaddr 0x200: ROCr 5.2.3's "
                     "loader requires the first loadable segment at address 0 (it aborts "
                     "otherwise)";
  /* starting at .note: the ELF and program headers no longer loaded */
  bad = ph1;
  bad.p_vaddr = bad.p_paddr = bad.p_offset = 0x200;
  bad.p_filesz = bad.p_memsz = 0x1ec0 - 0x200;
  memcpy(at1, &bad, sizeof bad);
  EXPECT_BAD_ELF(buf, size, "%s", want);
  hsad_program_t *p = NULL;
  hsad_status_t st = hsad_program_load_memory(dev, buf, size, "e.hsaco", &p);
  cr_assert_eq(st, HSAD_ERR_BAD_ELF, "got %s (%s)", hsad_status_name(st), hsad_last_error());
  cr_assert_null(p);
  cr_assert_str_eq(hsad_last_error(), want);
  /* one byte on from 0 (p_align 1, so that p_vaddr = p_offset modulo p_align holds) */
  bad = ph1;
  bad.p_vaddr = 1;
  bad.p_align = 1;
  memcpy(at1, &bad, sizeof bad);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: segment 1 (the first PT_LOAD) has p_vaddr 0x1: ROCr "
                 "5.2.3's loader requires the first loadable segment at address 0 (it aborts "
                 "otherwise)");
  /* segment 1 no longer PT_LOAD: segment 2 is the first */
  bad = ph1;
  bad.p_type = PT_NULL;
  memcpy(at1, &bad, sizeof bad);
  EXPECT_BAD_ELF(buf, size, "e.hsaco: segment 2 (the first PT_LOAD) has p_vaddr 0x2f00: ROCr "
                 "5.2.3's loader requires the first loadable segment at address 0 (it aborts "
                 "otherwise)");
  /* at 0 with p_align 1: loads (PT_PHDR at 0x40 is no PT_LOAD) */
  bad = ph1;
  bad.p_align = 1;
  memcpy(at1, &bad, sizeof bad);
  expect_program_loads(dev, buf, size);
  memcpy(at1, &ph1, sizeof ph1);
  expect_program_loads(dev, buf, size);
  free(buf);
  cr_assert_eq(hsad_runtime_close(rt), HSAD_OK);
}

/* hsad_codeobj_symtab_find: the symbols of the section named .symtab through libelf, as
 * program load's check reads them (kernels-gfx90a-v5: .symtab is section 10, 18 symbols;
 * vadd at 2 in .text (7), vadd.kd at 3 in .rodata (6)). */
Test(codeobj_errors, symtab_find_reads_symtab) {
  size_t size;
  unsigned char *buf = co_test_read(V5, &size);
  hsad_codeobj_t *co = NULL;
  cr_assert_eq(hsad_codeobj_load_memory(buf, size, "s.hsaco", &co), HSAD_OK, "%s",
               hsad_last_error());
  hsad_symtab_symbol_t s;
  cr_assert_eq(hsad_codeobj_symtab_find(co, "vadd.kd", 0, &s), HSAD_OK, "%s", hsad_last_error());
  cr_assert(s.found);
  cr_assert_eq(s.symtab_section, 10);
  cr_assert_eq(s.symtab_count, 18);
  cr_assert_eq(s.index, 3);
  cr_assert_eq(s.binding, STB_GLOBAL);
  cr_assert_eq(s.type, STT_OBJECT);
  cr_assert_eq(s.section, 6);
  cr_assert(s.section_allocated);
  cr_assert_str_eq(s.section_name, ".rodata");
  /* where it lies: .rodata at address and file offset 0x1cc0, inside PT_LOAD 1 ([0, 0x1ec0)
   * from file offset 0); the PT_LOADs span 0 to 0x5170 (the last: 0x5100, 0x70 bytes) */
  cr_assert(s.section_in_file);
  cr_assert_eq(s.value, 0x1cc0);
  cr_assert_eq(s.section_address, 0x1cc0);
  cr_assert_eq(s.section_offset, 0x1cc0);
  cr_assert(s.in_segment);
  cr_assert_eq(s.segment, 1);
  cr_assert_eq(s.segment_offset, 0x1cc0);
  cr_assert_eq(s.load_first, 0);
  cr_assert_eq(s.load_last_end, 0x5170);
  /* hsad read vadd's descriptor from the same file offset */
  const hsad_kernel_t *kv = co_test_kernel(co, "vadd");
  cr_assert_eq(hsad_kernel_descriptor_offset(kv), 0x1cc0);
  cr_assert_eq(hsad_kernel_descriptor_offset(co_test_kernel(co, "lds2")), 0x1d00);
  cr_assert_eq(hsad_kernel_descriptor_offset(NULL), UINT64_MAX);
  cr_assert_eq(hsad_codeobj_symtab_find(co, "vadd", 0, &s), HSAD_OK);
  cr_assert(s.found);
  cr_assert_eq(s.index, 2);
  cr_assert_eq(s.type, STT_FUNC);
  cr_assert_eq(s.section, 7);
  cr_assert_str_eq(s.section_name, ".text");
  /* .text: address 0x2f00, file offset 0x1f00, in PT_LOAD 2 (0x2f00 from 0x1f00) */
  cr_assert(s.section_in_file && s.value == 0x2f00 && s.section_address == 0x2f00 &&
            s.section_offset == 0x1f00 && s.in_segment && s.segment == 2 &&
            s.segment_offset == 0x1f00);
  /* _DYNAMIC (0x5100 in .dynamic): PT_LOAD 3 (0x5100, 0x70 file bytes from 0x3100) */
  cr_assert_eq(hsad_codeobj_symtab_find(co, "_DYNAMIC", 0, &s), HSAD_OK);
  cr_assert(s.found && s.index == 1 && s.value == 0x5100 && s.section == 8);
  cr_assert(s.in_segment && s.segment == 3 && s.segment_offset == 0x3100);
  /* spill.kd's 64 bytes end where PT_LOAD 1's file bytes end (0x1e80 + 64 = 0x1ec0) */
  cr_assert_eq(hsad_codeobj_symtab_find(co, "spill.kd", 0, &s), HSAD_OK);
  cr_assert(s.found && s.value == 0x1e80 && s.in_segment && s.segment == 1 &&
            s.segment_offset == 0x1e80);
  /* `from` at the symbol finds it, one past it finds no other */
  cr_assert_eq(hsad_codeobj_symtab_find(co, "vadd.kd", 3, &s), HSAD_OK);
  cr_assert(s.found);
  cr_assert_eq(s.index, 3);
  cr_assert_eq(hsad_codeobj_symtab_find(co, "vadd.kd", 4, &s), HSAD_OK);
  cr_assert(!s.found);
  cr_assert_eq(s.symtab_section, 10);
  cr_assert_eq(s.symtab_count, 18);
  cr_assert_eq(s.index, 0);
  cr_assert_eq(s.section, 0);
  cr_assert(!s.section_allocated);
  cr_assert_str_eq(s.section_name, "");
  cr_assert(!s.section_in_file && !s.in_segment);
  cr_assert(s.value == 0 && s.section_address == 0 && s.section_offset == 0 && s.segment == 0 &&
            s.segment_offset == 0 && s.load_first == 0 && s.load_last_end == 0);
  cr_assert_eq(hsad_codeobj_symtab_find(co, "nope.kd", 0, &s), HSAD_OK);
  cr_assert(!s.found);
  cr_assert_eq(hsad_codeobj_symtab_find(co, "vadd.kd", UINT64_MAX, &s), HSAD_OK);
  cr_assert(!s.found);
  hsad_codeobj_destroy(co);
  /* a second vadd.kd: the local copy at 2 first, then the global one at 3 */
  unsigned symtab = elf_find(buf, SHT_SYMTAB);
  Elf64_Sym f = elf_sym(buf, symtab, 2), kd = elf_sym(buf, symtab, 3), dup = kd;
  dup.st_info = ELF64_ST_INFO(STB_LOCAL, STT_OBJECT);
  elf_sym_put(buf, symtab, 2, &dup);
  cr_assert_eq(hsad_codeobj_load_memory(buf, size, "s.hsaco", &co), HSAD_OK, "%s",
               hsad_last_error());
  cr_assert_eq(hsad_codeobj_symtab_find(co, "vadd.kd", 0, &s), HSAD_OK);
  cr_assert(s.found && s.index == 2 && s.binding == STB_LOCAL && s.type == STT_OBJECT);
  cr_assert_eq(hsad_codeobj_symtab_find(co, "vadd.kd", 3, &s), HSAD_OK);
  cr_assert(s.found && s.index == 3 && s.binding == STB_GLOBAL);
  hsad_codeobj_destroy(co);
  elf_sym_put(buf, symtab, 2, &f);
  /* SHF_COMPRESSED on .symtab, .strtab and .shstrtab: their bytes are read as stored, as ROCr's
   * loader reads them (it loads such an object; elfutils' elf_getdata and elf_strptr would
   * give no symbol or name of them: test_codeobj_fuzz's "sh_flags 0x0 -> 0xffffffff" cases) */
  Elf64_Ehdr eh = elf_ehdr(buf);
  unsigned tables[3] = {symtab, elf_shdr(buf, symtab).sh_link, eh.e_shstrndx};
  for (unsigned i = 0; i < 3; i++) {
    Elf64_Shdr c = elf_shdr(buf, tables[i]);
    c.sh_flags |= SHF_COMPRESSED;
    elf_shdr_put(buf, tables[i], &c);
  }
  cr_assert_eq(hsad_codeobj_load_memory(buf, size, "s.hsaco", &co), HSAD_OK, "%s",
               hsad_last_error());
  cr_assert_eq(hsad_codeobj_symtab_find(co, "vadd.kd", 0, &s), HSAD_OK, "%s", hsad_last_error());
  cr_assert(s.found && s.symtab_section == 10 && s.symtab_count == 18 && s.index == 3 &&
            s.section == 6 && s.section_allocated);
  cr_assert_str_eq(s.section_name, ".rodata");
  hsad_codeobj_destroy(co);
  for (unsigned i = 0; i < 3; i++) {
    Elf64_Shdr c = elf_shdr(buf, tables[i]);
    c.sh_flags &= ~(uint64_t)SHF_COMPRESSED;
    elf_shdr_put(buf, tables[i], &c);
  }
  /* no section named .symtab (renamed "symtab"): symtab_section 0 */
  Elf64_Shdr t = elf_shdr(buf, symtab), tbad = t;
  tbad.sh_name = t.sh_name + 1;
  elf_shdr_put(buf, symtab, &tbad);
  cr_assert_eq(hsad_codeobj_load_memory(buf, size, "s.hsaco", &co), HSAD_OK, "%s",
               hsad_last_error());
  s.symtab_section = 77;
  cr_assert_eq(hsad_codeobj_symtab_find(co, "vadd.kd", 0, &s), HSAD_OK);
  cr_assert(!s.found);
  cr_assert_eq(s.symtab_section, 0);
  cr_assert_eq(s.symtab_count, 0);
  /* argument errors leave *out_symbol as it was */
  s.index = 99;
  cr_assert_eq(hsad_codeobj_symtab_find(NULL, "x", 0, &s), HSAD_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(hsad_last_error(), "hsad_codeobj_symtab_find: NULL codeobj");
  cr_assert_eq(hsad_codeobj_symtab_find(co, NULL, 0, &s), HSAD_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(hsad_last_error(), "hsad_codeobj_symtab_find: NULL name");
  cr_assert_eq(hsad_codeobj_symtab_find(co, "x", 0, NULL), HSAD_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(hsad_last_error(), "hsad_codeobj_symtab_find: NULL out_symbol");
  cr_assert_eq(s.index, 99);
  hsad_codeobj_destroy(co);
  /* a code object read from its note alone has no image to read */
  size_t hoff, doff, dsize;
  co_test_find_note(buf, size, &hoff, &doff, &dsize);
  cr_assert_eq(hsad_codeobj_load_note(buf + doff, dsize, 5, "the note", &co), HSAD_OK, "%s",
               hsad_last_error());
  cr_assert_eq(hsad_codeobj_symtab_find(co, "vadd.kd", 0, &s), HSAD_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(hsad_last_error(), "hsad_codeobj_symtab_find: the note has no ELF image "
                   "(loaded from its metadata note alone)");
  cr_assert_eq(s.index, 99);
  cr_assert_eq(hsad_kernel_descriptor_offset(co_test_kernel(co, "vadd")), UINT64_MAX);
  hsad_codeobj_destroy(co);
  free(buf);
}

Test(codeobj_errors, wrong_class_data_machine_osabi) {
  size_t size;
  unsigned char *buf = co_test_read(V5, &size);
  buf[4] = 1; /* ELFCLASS32 */
  co_test_expect_fail(buf, size, "c.hsaco", HSAD_ERR_BAD_ELF,
                      "c.hsaco: ELF class 1 (ELFCLASS32), expected ELFCLASS64");
  buf[4] = 2;
  buf[5] = 2; /* big-endian */
  co_test_expect_fail(buf, size, "c.hsaco", HSAD_ERR_BAD_ELF,
                      "c.hsaco: ELF data encoding 2, expected ELFDATA2LSB (1)");
  buf[5] = 1;
  buf[18] = 62; /* EM_X86_64 */
  buf[19] = 0;
  co_test_expect_fail(buf, size, "c.hsaco", HSAD_ERR_BAD_ELF,
                      "c.hsaco: e_machine 62 (EM_X86_64), expected 224 (EM_AMDGPU)");
  buf[18] = 224;
  buf[7] = 0; /* ELFOSABI_NONE */
  co_test_expect_fail(buf, size, "c.hsaco", HSAD_ERR_BAD_ELF,
                      "c.hsaco: OS ABI 0, expected 64 (ELFOSABI_AMDGPU_HSA)");
  free(buf);
}

Test(codeobj_errors, code_object_versions) {
  size_t size;
  unsigned char *buf = co_test_read(V5, &size);
  buf[8] = 4; /* EI_ABIVERSION 4 = code object v6 */
  co_test_expect_fail(buf, size, "v6.hsaco", HSAD_ERR_CODE_OBJECT_VERSION,
                      "v6.hsaco: code object version 6 (EI_ABIVERSION 4) is not supported: "
                      "supported are 3 (read only), 4 and 5");
  free(buf);
  /* a real v2 object from clang-15 */
  hsad_codeobj_t *co = NULL;
  cr_assert_eq(hsad_codeobj_load_file(FIX("kernels-gfx906-v2.hsaco"), NULL, &co),
               HSAD_ERR_CODE_OBJECT_VERSION);
  cr_assert(strstr(hsad_last_error(), "kernels-gfx906-v2.hsaco: code object version 2 "
                                      "(EI_ABIVERSION 0) is not supported"));
}

Test(codeobj_errors, note_sizes_overflow) {
  size_t size, hdr, doff, dsize;
  unsigned char *buf = co_test_read(V5, &size);
  co_test_find_note(buf, size, &hdr, &doff, &dsize);
  uint32_t huge = 0xfffffff0u;
  memcpy(buf + hdr + 4, &huge, 4); /* n_descsz */
  co_test_expect_fail(buf, size, "n.hsaco", HSAD_ERR_BAD_NOTE, "n.hsaco: note at offset 0",
                      "runs past the section");
  memcpy(buf + hdr + 4, &dsize, 4);
  memcpy(buf + hdr, &huge, 4); /* n_namesz */
  co_test_expect_fail(buf, size, "n.hsaco", HSAD_ERR_BAD_NOTE, "runs past the section");
  free(buf);
}

Test(codeobj_errors, note_missing) {
  size_t size, hdr, doff, dsize;
  unsigned char *buf = co_test_read(V5, &size);
  co_test_find_note(buf, size, &hdr, &doff, &dsize);
  uint32_t other = 33;
  memcpy(buf + hdr + 8, &other, 4); /* n_type */
  co_test_expect_fail(buf, size, "m.hsaco", HSAD_ERR_BAD_NOTE,
                      "m.hsaco: no NT_AMDGPU_METADATA note (type 32, owner \"AMDGPU\")");
  free(buf);
}

Test(codeobj_errors, corrupt_msgpack) {
  size_t size, hdr, doff, dsize;
  unsigned char *buf = co_test_read(V5, &size);
  co_test_find_note(buf, size, &hdr, &doff, &dsize);
  unsigned char save = buf[doff];
  buf[doff] = 0xc1; /* never-used msgpack byte */
  co_test_expect_fail(buf, size, "p.hsaco", HSAD_ERR_BAD_METADATA,
                      "p.hsaco: NT_AMDGPU_METADATA note", "msgpack does not decode (parse error)");
  buf[doff] = save;
  uint32_t half = (uint32_t)dsize / 2;
  memcpy(buf + hdr + 4, &half, 4);
  co_test_expect_fail(buf, size, "p.hsaco", HSAD_ERR_BAD_METADATA,
                      "msgpack does not decode (data ends inside an object)");
  free(buf);
  /* every truncation of the payload: never a crash, always BAD_METADATA */
  buf = co_test_read(V5, &size);
  for (uint32_t n = 0; n < dsize; n++) {
    memcpy(buf + hdr + 4, &n, 4);
    hsad_codeobj_t *co = NULL;
    hsad_status_t st = hsad_codeobj_load_memory(buf, size, "p.hsaco", &co);
    cr_assert_eq(st, HSAD_ERR_BAD_METADATA, "payload cut at %u: %s", n, hsad_last_error());
  }
  free(buf);
}

Test(codeobj_errors, root_not_a_map) {
  size_t size, hdr, doff, dsize;
  unsigned char *buf = co_test_read(V5, &size);
  co_test_find_note(buf, size, &hdr, &doff, &dsize);
  buf[doff] = 0x90; /* empty array */
  co_test_expect_fail(buf, size, "r.hsaco", HSAD_ERR_METADATA_TYPE,
                      "r.hsaco: metadata root is a array, expected a map");
  free(buf);
}

/* ---- metadata of the wrong types, via msgpack-c re-encoding ---- */
typedef struct {
  const char *path;
  int kind; /* 0 string, 1 bool, 2 uint, 3 nil, 4 negative int */
  const char *s;
  uint64_t u;
} edit_t;

static int edit_one(const char *path, const msgpack_object *o, msgpack_packer *pk, void *ctx) {
  (void)o;
  const edit_t *e = ctx;
  if (strcmp(path, e->path)) return 0;
  switch (e->kind) {
  case 0:
    msgpack_pack_str(pk, strlen(e->s));
    msgpack_pack_str_body(pk, e->s, strlen(e->s));
    break;
  case 1: msgpack_pack_true(pk); break;
  case 2: msgpack_pack_uint64(pk, e->u); break;
  case 3: msgpack_pack_nil(pk); break;
  case 4: msgpack_pack_int64(pk, -5); break;
  }
  return 1;
}

static const char *rename_one(const char *path, const char *key, void *ctx) {
  (void)key;
  const edit_t *e = ctx;
  return strcmp(path, e->path) ? NULL : e->s;
}

static void expect_edit(edit_t e, hsad_status_t want, const char *msg) {
  co_test_editor_t ed = {edit_one, NULL, &e};
  size_t size;
  void *buf = co_test_rewrite(V5, &ed, &size);
  hsad_codeobj_t *co = NULL;
  hsad_status_t st = hsad_codeobj_load_memory(buf, size, "e.hsaco", &co);
  cr_assert_eq(st, want, "edit %s: got %s (%s)", e.path, hsad_status_name(st), hsad_last_error());
  cr_assert_null(co);
  cr_assert(strstr(hsad_last_error(), msg), "edit %s: message '%s' lacks '%s'", e.path,
            hsad_last_error(), msg);
  free(buf);
}

Test(codeobj_errors, metadata_wrong_types) {
  /* kernel 0 is vadd, kernel 1 lds2 */
  expect_edit((edit_t){"amdhsa.kernels/0/.vgpr_count", 0, "eight", 0}, HSAD_ERR_METADATA_TYPE,
              "e.hsaco: kernel 'vadd': field .vgpr_count is a string, expected an unsigned "
              "integer");
  expect_edit((edit_t){"amdhsa.kernels/1/.wavefront_size", 1, NULL, 0}, HSAD_ERR_METADATA_TYPE,
              "e.hsaco: kernel 'lds2': field .wavefront_size is a boolean, expected an unsigned "
              "integer");
  expect_edit((edit_t){"amdhsa.kernels/0/.sgpr_count", 4, NULL, 0}, HSAD_ERR_METADATA_TYPE,
              "e.hsaco: kernel 'vadd': field .sgpr_count is a negative integer");
  expect_edit((edit_t){"amdhsa.kernels/0/.kernarg_segment_size", 2, NULL, 1ull << 33},
              HSAD_ERR_METADATA_TYPE,
              "e.hsaco: kernel 'vadd': field .kernarg_segment_size is 8589934592, above 2^32-1");
  expect_edit((edit_t){"amdhsa.kernels/0/.name", 2, NULL, 7}, HSAD_ERR_METADATA_TYPE,
              "e.hsaco: kernel '#0': field .name is a unsigned integer, expected a string");
  expect_edit((edit_t){"amdhsa.kernels/0/.args/1/.offset", 3, NULL, 0}, HSAD_ERR_METADATA_TYPE,
              "e.hsaco: kernel 'vadd': field .args[1].offset is a nil, expected an unsigned "
              "integer");
  expect_edit((edit_t){"amdhsa.kernels/0/.args/0/.is_const", 0, "yes", 0},
              HSAD_ERR_METADATA_TYPE,
              "e.hsaco: kernel 'vadd': field .args[0].is_const is a string, expected a boolean");
  expect_edit((edit_t){"amdhsa.kernels/0/.args", 2, NULL, 3}, HSAD_ERR_METADATA_TYPE,
              "e.hsaco: kernel 'vadd': field .args is a unsigned integer, expected an array");
  expect_edit((edit_t){"amdhsa.kernels", 0, "none", 0}, HSAD_ERR_METADATA_TYPE,
              "e.hsaco: amdhsa.kernels is a string, expected an array");
  expect_edit((edit_t){"amdhsa.kernels/2", 2, NULL, 1}, HSAD_ERR_METADATA_TYPE,
              "e.hsaco: amdhsa.kernels[2] is a unsigned integer, expected a map");
  expect_edit((edit_t){"amdhsa.target", 2, NULL, 1}, HSAD_ERR_METADATA_TYPE,
              "e.hsaco: amdhsa.target is a unsigned integer, expected a string");
  expect_edit((edit_t){"amdhsa.kernels/0/.kernarg_segment_align", 2, NULL, 12},
              HSAD_ERR_METADATA_TYPE,
              "e.hsaco: kernel 'vadd': .kernarg_segment_align 12 is not a power of 2");
  expect_edit((edit_t){"amdhsa.kernels/0/.args/3/.offset", 2, NULL, 286}, HSAD_ERR_METADATA_TYPE,
              "e.hsaco: kernel 'vadd': argument 3 (.offset 286, .size 4) extends past "
              ".kernarg_segment_size 288");
  expect_edit((edit_t){"amdhsa.kernels/0/.args/0/.address_space", 0, "far", 0},
              HSAD_ERR_METADATA_TYPE,
              "e.hsaco: kernel 'vadd': argument 0 has unknown .address_space 'far'");
  expect_edit((edit_t){"amdhsa.kernels/2/.reqd_workgroup_size", 2, NULL, 4},
              HSAD_ERR_METADATA_TYPE,
              "e.hsaco: kernel 'fixed_lds': field .reqd_workgroup_size is a unsigned integer, "
              "expected an array");
}

Test(codeobj_errors, unknown_value_kind) {
  expect_edit((edit_t){"amdhsa.kernels/0/.args/4/.value_kind", 0, "hidden_mystery", 0},
              HSAD_ERR_UNKNOWN_VALUE_KIND,
              "e.hsaco: kernel 'vadd': argument 4 has unknown .value_kind 'hidden_mystery'");
}

static void expect_rename(const char *path, const char *to, hsad_status_t want, const char *msg) {
  edit_t e = {path, 0, to, 0};
  co_test_editor_t ed = {NULL, rename_one, &e};
  size_t size;
  void *buf = co_test_rewrite(V5, &ed, &size);
  co_test_expect_fail(buf, size, "e.hsaco", want, msg);
  free(buf);
}

Test(codeobj_errors, required_fields_missing) {
  expect_rename("amdhsa.kernels/0/.vgpr_count", ".vgpr_countX", HSAD_ERR_METADATA_TYPE,
                "e.hsaco: kernel 'vadd': required field .vgpr_count is missing");
  expect_rename("amdhsa.kernels/1/.symbol", ".symbolX", HSAD_ERR_METADATA_TYPE,
                "e.hsaco: kernel 'lds2': required field .symbol is missing");
  expect_rename("amdhsa.kernels/0/.args/2/.value_kind", ".value_kindX", HSAD_ERR_METADATA_TYPE,
                "e.hsaco: kernel 'vadd': argument 2 has no .value_kind (required)");
  expect_rename("amdhsa.target", "amdhsa.targetX", HSAD_ERR_METADATA_TYPE,
                "e.hsaco: amdhsa.target is missing (required in code object v5)");
}

Test(codeobj_errors, missing_descriptor) {
  edit_t e = {"amdhsa.kernels/1/.symbol", 0, "lds3.kd", 0};
  co_test_editor_t ed = {edit_one, NULL, &e};
  size_t size;
  void *buf = co_test_rewrite(V5, &ed, &size);
  co_test_expect_fail(buf, size, "d.hsaco", HSAD_ERR_MISSING_DESCRIPTOR,
                      "d.hsaco: kernel 'lds2': kernel descriptor symbol 'lds3.kd' not found in "
                      "the symbol tables");
  free(buf);
}

Test(codeobj_errors, duplicate_kernel) {
  edit_t e = {"amdhsa.kernels/1/.name", 0, "vadd", 0};
  co_test_editor_t ed = {edit_one, NULL, &e};
  size_t size;
  void *buf = co_test_rewrite(V5, &ed, &size);
  co_test_expect_fail(buf, size, "d.hsaco", HSAD_ERR_METADATA_TYPE,
                      "d.hsaco: kernel name 'vadd' appears twice (0 and 1)");
  free(buf);
}

Test(codeobj_errors, target_mismatch) {
  size_t size;
  unsigned char *buf = co_test_read(V5, &size);
  buf[48] = 0x2f; /* EF_AMDGPU_MACH gfx906 in a gfx90a object */
  co_test_expect_fail(buf, size, "t.hsaco", HSAD_ERR_TARGET_MISMATCH,
                      "t.hsaco: amdhsa.target 'amdgcn-amd-amdhsa--gfx90a' names processor "
                      "gfx90a, e_flags (0x52f) say gfx906");
  buf[48] = 0x3f;
  buf[49] = 0x06; /* xnack off (0x200) + sramecc any (0x400) */
  co_test_expect_fail(buf, size, "t.hsaco", HSAD_ERR_TARGET_MISMATCH,
                      "t.hsaco: amdhsa.target 'amdgcn-amd-amdhsa--gfx90a' has xnack "
                      "unspecified, e_flags (0x63f) have xnack off");
  buf[49] = 0x05;
  buf[48] = 0xee; /* unknown mach */
  co_test_expect_fail(buf, size, "t.hsaco", HSAD_ERR_BAD_ELF,
                      "t.hsaco: e_flags 0x5ee: unknown EF_AMDGPU_MACH 0xee");
  free(buf);
  edit_t e = {"amdhsa.target", 0, "amdgcn-amd-amdhsa--gfx90a:sramecc+", 0};
  co_test_editor_t ed = {edit_one, NULL, &e};
  buf = co_test_rewrite(V5, &ed, &size);
  co_test_expect_fail(buf, size, "t.hsaco", HSAD_ERR_TARGET_MISMATCH,
                      "has sramecc on, e_flags (0x53f) have sramecc any");
  free(buf);
}

Test(codeobj_errors, kernel_not_found) {
  hsad_codeobj_t *co = co_test_load(V5);
  const hsad_kernel_t *k = (const void *)1;
  cr_assert_eq(hsad_codeobj_kernel_find(co, "nope", &k), HSAD_ERR_KERNEL_NOT_FOUND);
  cr_assert_null(k);
  cr_assert(strstr(hsad_last_error(), "kernels-gfx90a-v5.hsaco: no kernel named 'nope' (8 "
                                      "kernels)"),
            "%s", hsad_last_error());
  cr_assert_eq(hsad_codeobj_kernel_find(co, "nope.kd", &k), HSAD_ERR_KERNEL_NOT_FOUND);
  hsad_codeobj_destroy(co);
}

Test(codeobj_errors, isa_not_in_file) {
  hsad_codeobj_t *co = NULL;
  cr_assert_eq(hsad_codeobj_load_file(FIX("hip_scale.bundle"), "gfx908", &co),
               HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND);
  cr_assert(strstr(hsad_last_error(), "hip_scale.bundle: no code object for gfx908: the file has "
                                      "gfx1030, gfx90a:xnack-"),
            "%s", hsad_last_error());
  /* xnack+ agent cannot run the xnack- entry */
  cr_assert_eq(hsad_codeobj_load_file(FIX("hip_scale.bundle"), "gfx90a:xnack+", &co),
               HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND);
  cr_assert_eq(hsad_codeobj_load_file(V5, "gfx906", &co), HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND);
  cr_assert(strstr(hsad_last_error(), "no code object for gfx906: the file has gfx90a"), "%s",
            hsad_last_error());
  cr_assert_eq(hsad_codeobj_load_file(V5, "gfx90a:bogus+", &co), HSAD_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(hsad_last_error(),
                   "target ID 'gfx90a:bogus+': unknown feature 'bogus' (known: sramecc, xnack)");
}

Test(codeobj_errors, bundle_truncated_and_absent) {
  size_t size;
  unsigned char *buf = co_test_read(FIX("hip_scale.bundle"), &size);
  for (size_t n = 0; n < size; n++) {
    hsad_codeobj_container_t *c = NULL;
    hsad_status_t st = hsad_codeobj_container_open_memory(buf, n, "b.bundle", &c);
    if (st == HSAD_OK) { /* a prefix can hold complete leading entries: they must load or fail */
      for (size_t i = 0; i < hsad_codeobj_container_entry_count(c); i++) {
        hsad_codeobj_t *co = NULL;
        if (hsad_codeobj_load_entry(c, i, &co) == HSAD_OK) hsad_codeobj_destroy(co);
      }
      hsad_codeobj_container_destroy(c);
      continue;
    }
    hsad_status_t want = n < 24 ? HSAD_ERR_NOT_ELF : HSAD_ERR_TRUNCATED;
    cr_assert_eq(st, want, "prefix %zu: %s", n, hsad_last_error());
    cr_assert(!strncmp(hsad_last_error(), "b.bundle: ", 10));
  }
  /* no amdgcn entry: rename the triples */
  for (size_t i = 0; i + 6 <= size; i++)
    if (!memcmp(buf + i, "amdgcn", 6)) buf[i + 4] = 'x';
  hsad_codeobj_container_t *c = NULL;
  cr_assert_eq(hsad_codeobj_container_open_memory(buf, size, "b.bundle", &c),
               HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND);
  cr_assert_str_eq(hsad_last_error(), "b.bundle: no amdgcn code object entry in the offload "
                                      "bundle");
  free(buf);
}

Test(codeobj_errors, host_elf_without_fatbin) {
  hsad_codeobj_t *co = NULL;
  cr_assert_eq(hsad_codeobj_load_file("/bin/sh", NULL, &co), HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND);
  cr_assert(strstr(hsad_last_error(), "/bin/sh: host ELF (e_machine 62) without a .hip_fatbin "
                                      "section"),
            "%s", hsad_last_error());
}

/* NVIDIA files given where an AMD code object is expected (hsad_program_load_file, hsad run /
 * graph on an AMD device) are named as what they are: a cubin was "host ELF (e_machine 190)
 * without a .hip_fatbin section", a fatbin and PTX "neither an ELF file nor a clang offload
 * bundle" (found by a fresh-eyes run). Status codes as before. */
Test(codeobj_errors, nvidia_files_named) {
  static const struct {
    const char *file;
    hsad_status_t st;
    const char *what;
  } rows[] = {
      {"byval.sm_90.cubin", HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND,
       "an NVIDIA cubin (ELF e_machine 190, EM_CUDA)"},
      {"byval.fatbin", HSAD_ERR_NOT_ELF, "an NVIDIA fatbin (magic 0xba55ed50)"},
      {"saxpy.ptx", HSAD_ERR_NOT_ELF, "NVIDIA PTX text (.version, .target sm_...)"},
  };
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    char path[512], want[1024];
    snprintf(path, sizeof path, CO_SRCDIR "/../nvidia/%s", rows[i].file);
    hsad_codeobj_container_t *c = NULL;
    cr_assert_eq(hsad_codeobj_container_open_file(path, &c), rows[i].st, "%s: %s", rows[i].file,
                 hsad_last_error());
    cr_assert_null(c);
    snprintf(want, sizeof want, "%s: %s, not an AMD code object: an NVIDIA device loads it", path,
             rows[i].what);
    cr_assert_str_eq(hsad_last_error(), want);
  }
}

Test(codeobj_errors, host_fatbin_truncated) {
  size_t size;
  unsigned char *buf = co_test_read(FIX("hip_scale.host.o"), &size);
  for (size_t n = 0; n < size; n += 7) {
    hsad_codeobj_container_t *c = NULL;
    hsad_status_t st = hsad_codeobj_container_open_memory(buf, n, "h.o", &c);
    if (st == HSAD_OK) hsad_codeobj_container_destroy(c);
    else cr_assert(!strncmp(hsad_last_error(), "h.o: ", 5), "%zu: %s", n, hsad_last_error());
  }
  free(buf);
}

/* A 5-byte array32 header claiming 2^32-1 kernels must not make msgpack-c allocate 100 GB. */
Test(codeobj_errors, msgpack_huge_declared_count) {
  size_t size, hdr, doff, dsize;
  unsigned char *buf = co_test_read(V5, &size);
  co_test_find_note(buf, size, &hdr, &doff, &dsize);
  static const unsigned char evil[] = {0x81, 0xae, 'a', 'm', 'd', 'h', 's', 'a', '.', 'k', 'e',
                                       'r', 'n', 'e', 'l', 's', 0xdd, 0xff, 0xff, 0xff, 0xff};
  memcpy(buf + doff, evil, sizeof evil);
  uint32_t n = sizeof evil;
  memcpy(buf + hdr + 4, &n, 4);
  co_test_expect_fail(buf, size, "big.hsaco", HSAD_ERR_BAD_METADATA,
                      "big.hsaco: NT_AMDGPU_METADATA note (21 bytes): msgpack does not decode "
                      "(data ends inside an object)");
  buf[doff + 16] = 0xdf; /* map32 */
  co_test_expect_fail(buf, size, "big.hsaco", HSAD_ERR_BAD_METADATA, "data ends inside");
  free(buf);
}

Test(codeobj_errors, target_not_a_target_id) {
  expect_edit((edit_t){"amdhsa.target", 0, "amdgcn-amd-amdhsa--gfx90a:turbo+", 0},
              HSAD_ERR_METADATA_TYPE,
              "e.hsaco: amdhsa.target 'amdgcn-amd-amdhsa--gfx90a:turbo+' is not a target ID: "
              "target ID 'amdgcn-amd-amdhsa--gfx90a:turbo+': unknown feature 'turbo' (known: "
              "sramecc, xnack)");
}

/* Issue 10: a relocatable object (clang -c) is refused, saying to link it; inspect says the same
 * (test_codeobj_cli) and so does program load, which goes through hsad_codeobj_load_entry. */
Test(codeobj_errors, relocatable_object_refused) {
  hsad_codeobj_t *co = NULL;
  cr_assert_eq(hsad_codeobj_load_file(FIX("kernels-gfx90a.o"), "gfx90a", &co),
               HSAD_ERR_UNSUPPORTED);
  cr_assert_null(co);
  cr_assert_str_eq(hsad_last_error(),
                   FIX("kernels-gfx90a.o") ": relocatable object (ET_REL, e.g. from clang -c): "
                   "kernel entry offsets are unresolved relocations; link it into a code object "
                   "first: ld.lld-15 -shared OBJ.o -o OBJ.hsaco");
}

/* hsad_codeobj_load_note (kfd-emu's metadata reader, issue 20): the note payload alone gives
 * the same kernels, arguments and kernarg plans as the whole file; no descriptors */
Test(codeobj_errors, load_note_matches_load_file) {
  size_t size, hdr, doff, dsize;
  void *buf = co_test_read(FIX("kernels-gfx90a-v5.hsaco"), &size);
  co_test_find_note(buf, size, &hdr, &doff, &dsize);
  hsad_codeobj_t *file = co_test_load(FIX("kernels-gfx90a-v5.hsaco")), *note = NULL;
  cr_assert_eq(hsad_codeobj_load_note((char *)buf + doff, dsize, 5, "the note", &note), HSAD_OK,
               "%s", hsad_last_error());
  const hsad_codeobj_info_t *fi = hsad_codeobj_info(file), *ni = hsad_codeobj_info(note);
  cr_assert_str_eq(ni->name, "the note");
  cr_assert_eq(ni->code_object_version, 5);
  cr_assert_str_eq(ni->target, fi->target);
  cr_assert_str_eq(ni->target_id.processor, "gfx90a");
  cr_assert_null(ni->image);
  cr_assert_eq(ni->e_flags, 0);
  cr_assert_eq(ni->kernel_count, fi->kernel_count);
  for (uint32_t k = 0; k < fi->kernel_count; k++) {
    const hsad_kernel_info_t *a = hsad_kernel_info(hsad_codeobj_kernel_at(file, k));
    const hsad_kernel_t *nk = NULL;
    cr_assert_eq(hsad_codeobj_kernel_find(note, a->symbol, &nk), HSAD_OK, "%s", a->symbol);
    const hsad_kernel_info_t *b = hsad_kernel_info(nk);
    cr_assert_str_eq(b->name, a->name);
    cr_assert_eq(b->kernarg_segment_size, a->kernarg_segment_size, "%s", a->name);
    cr_assert_eq(b->kernarg_segment_align, a->kernarg_segment_align, "%s", a->name);
    cr_assert_eq(b->wavefront_size, a->wavefront_size, "%s", a->name);
    cr_assert_eq(b->arg_count, a->arg_count, "%s", a->name);
    for (uint32_t i = 0; i < a->arg_count; i++) {
      cr_assert_eq(b->args[i].offset, a->args[i].offset, "%s arg %u", a->name, i);
      cr_assert_eq(b->args[i].size, a->args[i].size, "%s arg %u", a->name, i);
      cr_assert_eq(b->args[i].value_kind, a->args[i].value_kind, "%s arg %u", a->name, i);
    }
    cr_assert_eq(hsad_kernel_kernarg_plan(nk)->explicit_count,
                 hsad_kernel_kernarg_plan(hsad_codeobj_kernel_at(file, k))->explicit_count);
    hsad_kernel_descriptor_t zero = {0};
    cr_assert(!memcmp(&b->descriptor, &zero, sizeof zero), "%s: descriptor not zero", a->name);
  }
  hsad_codeobj_destroy(note);
  hsad_codeobj_destroy(file);
  free(buf);
}

Test(codeobj_errors, load_note_errors) {
  hsad_codeobj_t *co = (hsad_codeobj_t *)1;
  cr_assert_eq(hsad_codeobj_load_note(NULL, 4, 5, NULL, &co), HSAD_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(hsad_last_error(), "hsad_codeobj_load_note: NULL desc");
  static const unsigned char note[4] = {0};
  cr_assert_eq(hsad_codeobj_load_note(note, 4, 5, NULL, NULL), HSAD_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(hsad_last_error(), "hsad_codeobj_load_note: NULL out_codeobj");
  cr_assert_eq(co, (hsad_codeobj_t *)1);
  static const unsigned char garbage[] = {0xc1, 0xc1, 0xc1};
  cr_assert_eq(hsad_codeobj_load_note(garbage, sizeof garbage, 6, "n", &co),
               HSAD_ERR_CODE_OBJECT_VERSION);
  cr_assert_str_eq(hsad_last_error(), "n: code object v6 (supported: 3 (read), 4, 5)");
  cr_assert_null(co);
  cr_assert_eq(hsad_codeobj_load_note(garbage, sizeof garbage, 5, NULL, &co),
               HSAD_ERR_BAD_METADATA);
  cr_assert_str_eq(hsad_last_error(), "<memory>: NT_AMDGPU_METADATA note (3 bytes): msgpack "
                   "does not decode (parse error)");
  cr_assert_null(co);
}

/* Argument errors name one cause each: "FN: NULL PARAM" for the first NULL pointer in
 * parameter order (common/null_args.c: mutant 102), other conditions their own message. */
#define CO_ARG_ERR(expr, want)                                                                     \
  do {                                                                                             \
    cr_assert_eq((expr), HSAD_ERR_INVALID_ARGUMENT, "%s: %s", #expr, hsad_last_error());          \
    cr_assert_str_eq(hsad_last_error(), (want), "%s", #expr);                                      \
  } while (0)

Test(codeobj_errors, null_arguments_one_cause) {
  hsad_codeobj_t *co = co_test_load(V5);
  const hsad_kernel_t *k = hsad_codeobj_kernel_at(co, 0);
  cr_assert_not_null(k);
  hsad_codeobj_t *out = (hsad_codeobj_t *)1;
  hsad_codeobj_container_t *c = (hsad_codeobj_container_t *)1;
  /* containers and loads */
  CO_ARG_ERR(hsad_codeobj_container_open_memory("x", 1, "m", NULL),
             "hsad_codeobj_container_open_memory: NULL out_container");
  CO_ARG_ERR(hsad_codeobj_container_open_memory(NULL, 8, "m", &c),
             "hsad_codeobj_container_open_memory: NULL data with size 8");
  CO_ARG_ERR(hsad_codeobj_container_open_file(NULL, NULL),
             "hsad_codeobj_container_open_file: NULL path");
  CO_ARG_ERR(hsad_codeobj_container_open_file(V5, NULL),
             "hsad_codeobj_container_open_file: NULL out_container");
  cr_assert_eq(c, (hsad_codeobj_container_t *)1);
  cr_assert_eq(hsad_codeobj_container_open_file(V5, &c), HSAD_OK);
  size_t index = 77;
  CO_ARG_ERR(hsad_codeobj_container_select(NULL, NULL, NULL),
             "hsad_codeobj_container_select: NULL container");
  CO_ARG_ERR(hsad_codeobj_container_select(c, NULL, NULL),
             "hsad_codeobj_container_select: NULL out_index");
  cr_assert_eq(index, 77);
  CO_ARG_ERR(hsad_codeobj_load_entry(NULL, 0, NULL), "hsad_codeobj_load_entry: NULL container");
  CO_ARG_ERR(hsad_codeobj_load_entry(c, 0, NULL), "hsad_codeobj_load_entry: NULL out_codeobj");
  CO_ARG_ERR(hsad_codeobj_load_entry(c, 1, &out),
             "hsad_codeobj_load_entry: entry 1 out of range (1 entries)");
  hsad_codeobj_container_destroy(c);
  CO_ARG_ERR(hsad_codeobj_load_file(V5, NULL, NULL), "hsad_codeobj_load_file: NULL out_codeobj");
  CO_ARG_ERR(hsad_codeobj_load_memory("x", 1, "m", NULL),
             "hsad_codeobj_load_memory: NULL out_codeobj");
  CO_ARG_ERR(hsad_codeobj_load_memory(NULL, 4, "m", &out),
             "hsad_codeobj_load_memory: NULL data with size 4");
  cr_assert_eq(out, (hsad_codeobj_t *)1);
  const hsad_kernel_t *found = (const hsad_kernel_t *)1;
  CO_ARG_ERR(hsad_codeobj_kernel_find(NULL, NULL, NULL), "hsad_codeobj_kernel_find: NULL codeobj");
  CO_ARG_ERR(hsad_codeobj_kernel_find(co, NULL, NULL), "hsad_codeobj_kernel_find: NULL name");
  CO_ARG_ERR(hsad_codeobj_kernel_find(co, "x", NULL), "hsad_codeobj_kernel_find: NULL out_kernel");
  cr_assert_eq(found, (const hsad_kernel_t *)1);
  hsad_target_id_t id;
  CO_ARG_ERR(hsad_target_id_parse(NULL, NULL), "hsad_target_id_parse: NULL text");
  CO_ARG_ERR(hsad_target_id_parse("gfx90a", NULL), "hsad_target_id_parse: NULL out_id");
  (void)id;
  /* occupancy and pressure */
  hsad_occupancy_t occ;
  CO_ARG_ERR(hsad_kernel_occupancy(NULL, NULL, 64, 0, NULL), "hsad_kernel_occupancy: NULL kernel");
  CO_ARG_ERR(hsad_kernel_occupancy(k, NULL, 64, 0, NULL),
             "hsad_kernel_occupancy: NULL out_occupancy");
  (void)occ;
  CO_ARG_ERR(hsad_kernel_pressure(NULL, NULL, 0, NULL), "hsad_kernel_pressure: NULL kernel");
  CO_ARG_ERR(hsad_kernel_pressure(k, NULL, 0, NULL), "hsad_kernel_pressure: NULL out_report");
  hsad_variant_choice_t ch;
  CO_ARG_ERR(hsad_kernel_variant_select(&k, 17, NULL, 64, 0, &ch),
             "hsad_kernel_variant_select: 17 variants (1..16)");
  /* kernarg */
  hsad_dispatch_dims_t dims = {.grid_size = {64, 1, 1}, .workgroup_size = {64, 1, 1}, .dims = 1};
  uint8_t seg[HSAD_KERNARG_SEGMENT_MAX];
  CO_ARG_ERR(hsad_kernarg_build(NULL, NULL, 0, NULL, NULL, seg, sizeof seg, NULL),
             "hsad_kernarg_build: NULL kernel");
  CO_ARG_ERR(hsad_kernarg_build(k, NULL, 0, NULL, NULL, seg, sizeof seg, NULL),
             "hsad_kernarg_build: NULL dims");
  CO_ARG_ERR(hsad_kernarg_build(k, NULL, 2, &dims, NULL, seg, sizeof seg, NULL),
             "hsad_kernarg_build: NULL args with arg_count 2");
  char want[128];
  snprintf(want, sizeof want, "hsad_kernarg_build: NULL out for a %u-byte kernarg segment",
           hsad_kernel_info(k)->kernarg_segment_size);
  cr_assert_gt(hsad_kernel_info(k)->kernarg_segment_size, 0);
  CO_ARG_ERR(hsad_kernarg_build(k, NULL, 0, &dims, NULL, NULL, 0, NULL), want);
  /* compilation (checked before comgr is needed) */
  hsad_compile_options_t o = {0};
  void *data = NULL;
  size_t size = 0;
  CO_ARG_ERR(hsad_codeobj_compile(NULL, 0, NULL, NULL, NULL, NULL, NULL),
             "hsad_codeobj_compile: NULL source");
  CO_ARG_ERR(hsad_codeobj_compile("k", 1, "k.cl", NULL, NULL, NULL, NULL),
             "hsad_codeobj_compile: NULL opts");
  CO_ARG_ERR(hsad_codeobj_compile("k", 1, "k.cl", &o, &data, &size, NULL),
             "hsad_codeobj_compile: NULL opts->target");
  o.target = "gfx90a";
  CO_ARG_ERR(hsad_codeobj_compile("k", 1, "k.cl", &o, &data, NULL, NULL),
             "hsad_codeobj_compile: NULL out_size");
  hsad_variant_budget_t b[1] = {{0}};
  hsad_codeobj_t *vs[1];
  CO_ARG_ERR(hsad_codeobj_compile_variants("k", 1, "k.cl", &o, NULL, 1, vs, NULL),
             "hsad_codeobj_compile_variants: NULL budgets");
  CO_ARG_ERR(hsad_codeobj_compile_variants("k", 1, "k.cl", &o, b, 0, vs, NULL),
             "hsad_codeobj_compile_variants: 0 variants (1..16)");
  char *text = NULL;
  CO_ARG_ERR(hsad_cl_source_expand("k", 1, NULL, NULL, 0, &text, &size),
             "hsad_cl_source_expand: NULL source_name");
  CO_ARG_ERR(hsad_cl_source_expand("k", 1, "k.cl", NULL, 2, &text, &size),
             "hsad_cl_source_expand: NULL include_dirs with include_dir_count 2");
  cr_assert_null(text);
  cr_assert_null(data);
  hsad_codeobj_destroy(co);
}
