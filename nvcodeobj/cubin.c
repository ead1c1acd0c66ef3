/* cubin.c - a cubin's kernels and their .nv.info records (libelf; no CUDA).
 *
 * Layout (as cuobjdump 13.0 --dump-elf prints it for the project's kernels, tests/data/nvidia/):
 * an ELF64 little-endian file, e_machine EM_CUDA (190), the SM in e_flags bits 15:8 (ELF ABI
 * version 8 and later, CUDA 12+) or bits 7:0 (older). Kernels are STT_FUNC symbols whose
 * st_other has STO_CUDA_ENTRY (0x10), defined in a .text.NAME section. Sections of type
 * SHT_CUDA_INFO (SHT_LOPROC) hold attribute records: the file-wide .nv.info (EIATTR_REGCOUNT,
 * EIATTR_FRAME_SIZE, EIATTR_MIN_STACK_SIZE, each a symbol index and a value) and one
 * .nv.info.NAME per kernel (sh_info = its .text section): EIATTR_KPARAM_INFO per parameter,
 * EIATTR_CBANK_PARAM_SIZE, EIATTR_PARAM_CBANK, EIATTR_MAX_THREADS, EIATTR_REQNTID, ...
 * A record is: u8 format, u8 attribute, then for EIFMT_SVAL a u16 size and that many bytes, for
 * EIFMT_NVAL / BVAL / HVAL a u16 value (4 bytes in all).
 * Every offset and size is checked against the image before libelf or we read through it. */
#include "nvcodeobj/nv_internal.h"

#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Names as cuobjdump prints them. */
enum {
  NV_SHT_CUDA_INFO = 0x70000000, /* SHT_LOPROC */
  NV_STO_CUDA_ENTRY = 0x10,
  EIFMT_NVAL = 1, EIFMT_BVAL = 2, EIFMT_HVAL = 3, EIFMT_SVAL = 4,
  EIATTR_MAX_THREADS = 0x05,
  EIATTR_PARAM_CBANK = 0x0a,
  EIATTR_REQNTID = 0x10,
  EIATTR_FRAME_SIZE = 0x11,
  EIATTR_MIN_STACK_SIZE = 0x12,
  EIATTR_KPARAM_INFO = 0x17,
  EIATTR_CBANK_PARAM_SIZE = 0x19,
  EIATTR_MAXREG_COUNT = 0x1b,
  EIATTR_REGCOUNT = 0x2f,
  EIATTR_NUM_BARRIERS = 0x4c,
};

static pthread_once_t nv_elf_once = PTHREAD_ONCE_INIT;
static void nv_elf_init(void) { elf_version(EV_CURRENT); }

static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint16_t rd16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }

/* One attribute record. */
typedef struct nv_rec {
  unsigned format, attr;
  const uint8_t *value; /* SVAL: its bytes; others: the u16 field */
  uint32_t size;        /* SVAL: bytes; others: 2 */
  uint32_t offset;      /* of the record in its section */
} nv_rec_t;

/* Next record at *pos of a section of len bytes; 1 = got one, 0 = end, <0 = error reported. */
static int nv_rec_next(const char *what, const char *sec, const uint8_t *d, size_t len,
                       size_t *pos, nv_rec_t *r, hsad_status_t *st) {
  if (*pos >= len) return 0;
  size_t at = *pos;
  if (len - at < 4) {
    *st = hsad_fail(HSAD_ERR_TRUNCATED,
                    "%s: truncated: %s: record at offset %zu needs 4 bytes, %zu left of the "
                    "%zu-byte section", what, sec, at, len - at, len);
    return -1;
  }
  r->format = d[at];
  r->attr = d[at + 1];
  r->offset = (uint32_t)at;
  if (r->format == EIFMT_SVAL) {
    r->size = rd16(d + at + 2);
    if (r->size > len - at - 4) {
      *st = hsad_fail(HSAD_ERR_TRUNCATED,
                      "%s: truncated: %s: record at offset %zu (attribute 0x%02x) says %u bytes, "
                      "%zu left of the %zu-byte section", what, sec, at, r->attr, r->size,
                      len - at - 4, len);
      return -1;
    }
    r->value = d + at + 4;
    *pos = at + 4 + r->size;
    return 1;
  }
  if (r->format < EIFMT_NVAL || r->format > EIFMT_SVAL) {
    *st = hsad_fail(HSAD_ERR_BAD_ELF,
                    "%s: %s: record at offset %zu has format 0x%02x; known: 1..4 (EIFMT_NVAL, "
                    "EIFMT_BVAL, EIFMT_HVAL, EIFMT_SVAL)", what, sec, at, r->format);
    return -1;
  }
  r->value = d + at + 2;
  r->size = 2;
  *pos = at + 4;
  return 1;
}

static hsad_status_t nv_rec_short(const char *what, const char *sec, const nv_rec_t *r,
                                  const char *attr, uint32_t want) {
  return hsad_fail(HSAD_ERR_BAD_ELF,
                   "%s: %s: %s record at offset %u has %u bytes of value, expected %s%u", what,
                   sec, attr, r->offset, r->size, r->format == EIFMT_SVAL ? "" : "EIFMT_SVAL of ",
                   want);
}

/* The parts of the ELF the reader needs, validated. */
typedef struct nv_elf {
  const char *what;
  Elf *elf;
  size_t shnum, shstrndx;
  const uint8_t *image;
  size_t size;
  const Elf64_Sym *syms;
  size_t nsyms;
  size_t strtab; /* section index of the symbol names */
} nv_elf_t;

static const char *sec_name(const nv_elf_t *e, const Elf64_Shdr *sh) {
  const char *n = elf_strptr(e->elf, e->shstrndx, sh->sh_name);
  return n ? n : "";
}

static const char *sym_name(const nv_elf_t *e, const Elf64_Sym *s) {
  const char *n = elf_strptr(e->elf, e->strtab, s->st_name);
  return n ? n : "";
}

static Elf64_Shdr *shdr(const nv_elf_t *e, size_t i) {
  Elf_Scn *scn = elf_getscn(e->elf, i);
  return scn ? elf64_getshdr(scn) : NULL;
}

static const uint8_t *sec_bytes(const nv_elf_t *e, const Elf64_Shdr *sh) {
  return sh->sh_type == SHT_NOBITS ? NULL : e->image + sh->sh_offset;
}

static hsad_status_t nv_elf_check(nv_elf_t *e) {
  const char *what = e->what;
  if (e->size < sizeof(Elf64_Ehdr))
    return hsad_fail(HSAD_ERR_TRUNCATED,
                     "%s: truncated: %zu bytes, shorter than the 64-byte ELF64 header", what,
                     e->size);
  Elf64_Ehdr eh;
  memcpy(&eh, e->image, sizeof eh);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64)
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: ELF class %u, expected ELFCLASS64 (2)", what,
                     eh.e_ident[EI_CLASS]);
  if (eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: ELF data encoding %u, expected ELFDATA2LSB (1)",
                     what, eh.e_ident[EI_DATA]);
  if (eh.e_machine != HSAD_NV_EM_CUDA)
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: e_machine %u, expected EM_CUDA (190): not a cubin",
                     what, eh.e_machine);
  if (eh.e_shentsize != sizeof(Elf64_Shdr))
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: e_shentsize %u, expected 64", what, eh.e_shentsize);
  if (eh.e_shnum == 0 || !nv_fits(eh.e_shoff, (uint64_t)eh.e_shnum * 64, e->size))
    return hsad_fail(HSAD_ERR_TRUNCATED,
                     "%s: truncated: section header table (offset %llu, %u x 64 bytes) runs past "
                     "the end of the %zu-byte file", what, (unsigned long long)eh.e_shoff,
                     eh.e_shnum, e->size);
  if (eh.e_shstrndx == 0 || eh.e_shstrndx >= eh.e_shnum)
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: e_shstrndx %u is not one of the %u sections", what,
                     eh.e_shstrndx, eh.e_shnum);
  for (unsigned i = 1; i < eh.e_shnum; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, e->image + eh.e_shoff + (uint64_t)i * 64, sizeof sh);
    if (sh.sh_type != SHT_NOBITS && !nv_fits(sh.sh_offset, sh.sh_size, e->size))
      return hsad_fail(HSAD_ERR_TRUNCATED,
                       "%s: truncated: section %u (offset %llu, %llu bytes) runs past the end "
                       "of the %zu-byte file", what, i, (unsigned long long)sh.sh_offset,
                       (unsigned long long)sh.sh_size, e->size);
  }
  pthread_once(&nv_elf_once, nv_elf_init);
  e->elf = elf_memory((char *)e->image, e->size);
  if (!e->elf || elf_kind(e->elf) != ELF_K_ELF)
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: libelf: %s", what, elf_errmsg(-1));
  e->shnum = eh.e_shnum;
  e->shstrndx = eh.e_shstrndx;
  Elf64_Shdr *strsh = shdr(e, e->shstrndx);
  if (!strsh || strsh->sh_type != SHT_STRTAB)
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: section %zu (e_shstrndx) is no SHT_STRTAB", what,
                     e->shstrndx);
  for (size_t i = 1; i < e->shnum; i++) {
    Elf64_Shdr *sh = shdr(e, i);
    if (!sh || sh->sh_type != SHT_SYMTAB) continue;
    if (sh->sh_entsize != sizeof(Elf64_Sym) || sh->sh_size % sizeof(Elf64_Sym))
      return hsad_fail(HSAD_ERR_BAD_ELF,
                       "%s: .symtab: entry size %llu and size %llu, expected entries of 24 bytes",
                       what, (unsigned long long)sh->sh_entsize, (unsigned long long)sh->sh_size);
    Elf64_Shdr *names = sh->sh_link < e->shnum ? shdr(e, sh->sh_link) : NULL;
    if (!names || names->sh_type != SHT_STRTAB)
      return hsad_fail(HSAD_ERR_BAD_ELF, "%s: .symtab: sh_link %u is no string table", what,
                       sh->sh_link);
    e->syms = (const Elf64_Sym *)(e->image + sh->sh_offset);
    e->nsyms = sh->sh_size / sizeof(Elf64_Sym);
    e->strtab = sh->sh_link;
    if (sh->sh_offset % 8) /* our copies are 16-aligned; a file that is not gets a message */
      return hsad_fail(HSAD_ERR_BAD_ELF, "%s: .symtab at offset %llu is not 8-byte aligned",
                       what, (unsigned long long)sh->sh_offset);
    return HSAD_OK;
  }
  return hsad_fail(HSAD_ERR_BAD_ELF,
                   "%s: no .symtab section: a cubin's kernels are its STT_FUNC symbols", what);
}

/* File-wide .nv.info: per-symbol registers, frame and stack sizes. */
typedef struct nv_global {
  uint32_t *regcount, *frame, *stack; /* indexed by symbol; UINT32_MAX = absent */
} nv_global_t;

static hsad_status_t nv_global_read(const nv_elf_t *e, nv_pool_t *pool, nv_global_t *g) {
  g->regcount = nv_pool_alloc(pool, e->nsyms * 4);
  g->frame = nv_pool_alloc(pool, e->nsyms * 4);
  g->stack = nv_pool_alloc(pool, e->nsyms * 4);
  if (!g->regcount || !g->frame || !g->stack) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", e->what);
  memset(g->regcount, 0xff, e->nsyms * 4);
  memset(g->frame, 0xff, e->nsyms * 4);
  memset(g->stack, 0xff, e->nsyms * 4);
  for (size_t i = 1; i < e->shnum; i++) {
    Elf64_Shdr *sh = shdr(e, i);
    if (!sh || sh->sh_type != NV_SHT_CUDA_INFO || strcmp(sec_name(e, sh), ".nv.info")) continue;
    const uint8_t *d = sec_bytes(e, sh);
    size_t pos = 0;
    nv_rec_t r;
    hsad_status_t st = HSAD_OK;
    int got;
    while ((got = nv_rec_next(e->what, ".nv.info", d, sh->sh_size, &pos, &r, &st)) > 0) {
      uint32_t *into = r.attr == EIATTR_REGCOUNT ? g->regcount
                       : r.attr == EIATTR_FRAME_SIZE ? g->frame
                       : r.attr == EIATTR_MIN_STACK_SIZE ? g->stack : NULL;
      if (!into) continue;
      const char *an = r.attr == EIATTR_REGCOUNT ? "EIATTR_REGCOUNT"
                       : r.attr == EIATTR_FRAME_SIZE ? "EIATTR_FRAME_SIZE" : "EIATTR_MIN_STACK_SIZE";
      if (r.format != EIFMT_SVAL || r.size < 8) return nv_rec_short(e->what, ".nv.info", &r, an, 8);
      uint32_t sym = rd32(r.value);
      if (sym >= e->nsyms)
        return hsad_fail(HSAD_ERR_BAD_ELF,
                         "%s: .nv.info: %s record at offset %u names symbol %u of %zu", e->what,
                         an, r.offset, sym, e->nsyms);
      into[sym] = rd32(r.value + 4);
    }
    if (got < 0) return st;
  }
  return HSAD_OK;
}

/* Finds the section named prefix+kernel whose sh_info is the kernel's .text section (the
 * name alone when sh_info is 0). 0 when none. */
static size_t find_sec(const nv_elf_t *e, const char *prefix, const char *kernel, size_t text) {
  size_t plen = strlen(prefix);
  for (size_t i = 1; i < e->shnum; i++) {
    Elf64_Shdr *sh = shdr(e, i);
    if (!sh) continue;
    const char *n = sec_name(e, sh);
    if (strncmp(n, prefix, plen) || strcmp(n + plen, kernel)) continue;
    if (sh->sh_info == 0 || sh->sh_info == text) return i;
  }
  return 0;
}

static int param_cmp(const void *a, const void *b) {
  const hsad_nv_param_t *x = a, *y = b;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* The kernel's .nv.info.NAME records. */
static hsad_status_t nv_kernel_info(const nv_elf_t *e, nv_pool_t *pool, size_t info_sec,
                                    hsad_nv_kernel_info_t *k) {
  Elf64_Shdr *sh = shdr(e, info_sec);
  const uint8_t *d = sec_bytes(e, sh);
  char sec[300];
  snprintf(sec, sizeof sec, ".nv.info.%s", k->name);
  size_t pos = 0, nparams = 0;
  nv_rec_t r;
  hsad_status_t st = HSAD_OK;
  int got;
  while ((got = nv_rec_next(e->what, sec, d, sh->sh_size, &pos, &r, &st)) > 0)
    if (r.attr == EIATTR_KPARAM_INFO) nparams++;
  if (got < 0) return st;
  hsad_nv_param_t *params = nv_pool_alloc(pool, nparams * sizeof *params);
  if (!params) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", e->what);
  size_t n = 0;
  pos = 0;
  while (nv_rec_next(e->what, sec, d, sh->sh_size, &pos, &r, &st) > 0) {
    switch (r.attr) {
    case EIATTR_KPARAM_INFO: {
      if (r.format != EIFMT_SVAL || r.size < 12)
        return nv_rec_short(e->what, sec, &r, "EIATTR_KPARAM_INFO", 12);
      uint32_t word = rd32(r.value + 8);
      params[n].index = rd16(r.value + 4);
      params[n].offset = rd16(r.value + 6);
      params[n].size = word >> 18; /* bits 31:18; 17 space (0: constant bank), 16:12 cbank */
      n++;
      k->present |= HSAD_NV_KI_HAS_PARAMS;
      break;
    }
    case EIATTR_CBANK_PARAM_SIZE:
      if (r.format != EIFMT_HVAL) return nv_rec_short(e->what, sec, &r, "EIATTR_CBANK_PARAM_SIZE", 2);
      k->param_bytes = rd16(r.value);
      break;
    case EIATTR_PARAM_CBANK:
      if (r.format != EIFMT_SVAL || r.size < 8)
        return nv_rec_short(e->what, sec, &r, "EIATTR_PARAM_CBANK", 8);
      k->param_cbank_offset = rd32(r.value + 4) & 0xffff;
      break;
    case EIATTR_MAXREG_COUNT:
      if (r.format != EIFMT_HVAL) return nv_rec_short(e->what, sec, &r, "EIATTR_MAXREG_COUNT", 2);
      k->max_registers = rd16(r.value);
      k->present |= HSAD_NV_KI_HAS_MAXREG;
      break;
    case EIATTR_NUM_BARRIERS:
      if (r.format == EIFMT_BVAL) k->barriers = r.value[0];
      break;
    case EIATTR_MAX_THREADS:
    case EIATTR_REQNTID: {
      bool max = r.attr == EIATTR_MAX_THREADS;
      if (r.format != EIFMT_SVAL || r.size < 12)
        return nv_rec_short(e->what, sec, &r, max ? "EIATTR_MAX_THREADS" : "EIATTR_REQNTID", 12);
      uint32_t *v = max ? k->maxntid : k->reqntid;
      for (int i = 0; i < 3; i++) v[i] = rd32(r.value + 4 * i);
      k->present |= max ? HSAD_NV_KI_HAS_MAX_THREADS : HSAD_NV_KI_HAS_REQNTID;
      break;
    }
    default:
      break;
    }
  }
  qsort(params, n, sizeof *params, param_cmp);
  for (size_t i = 0; i < n; i++)
    if (params[i].index != i)
      return hsad_fail(HSAD_ERR_BAD_ELF,
                       "%s: %s: EIATTR_KPARAM_INFO records give parameter %u where %zu was due "
                       "(%zu records; a parameter missing or given twice)", e->what, sec,
                       params[i].index, i, n);
  k->params = params;
  k->param_count = (uint32_t)n;
  return HSAD_OK;
}

static uint64_t dims_product(const uint32_t v[3]) {
  uint64_t p = 1;
  for (int i = 0; i < 3; i++) p *= v[i] ? v[i] : 1;
  return p;
}

static int kern_cmp(const void *a, const void *b) {
  const Elf64_Sym *x = *(const Elf64_Sym *const *)a, *y = *(const Elf64_Sym *const *)b;
  return x->st_shndx < y->st_shndx ? -1 : x->st_shndx > y->st_shndx;
}

static hsad_status_t nv_kernel_read(const nv_elf_t *e, nv_pool_t *pool, const nv_global_t *g,
                                    const Elf64_Sym *s, uint32_t sm, bool reserved_smem,
                                    hsad_nv_kernel_info_t *k) {
  const char *name = sym_name(e, s);
  size_t text = s->st_shndx, symi = (size_t)(s - e->syms);
  k->name = nv_pool_strndup(pool, name, strlen(name));
  if (!k->name) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", e->what);
  size_t info = find_sec(e, ".nv.info.", name, text);
  if (!info || shdr(e, info)->sh_type != NV_SHT_CUDA_INFO)
    return hsad_fail(HSAD_ERR_BAD_ELF,
                     "%s: kernel %s has no .nv.info.%s section (SHT_CUDA_INFO): its parameter "
                     "layout is unknown", e->what, name, name);
  k->present |= HSAD_NV_KI_HAS_INFO;
  hsad_status_t st = nv_kernel_info(e, pool, info, k);
  if (st != HSAD_OK) return st;
  if (g->regcount[symi] != UINT32_MAX) {
    k->registers = g->regcount[symi];
    k->present |= HSAD_NV_KI_HAS_REGCOUNT;
  } else {
    k->registers = (uint32_t)(shdr(e, text)->sh_info >> 24);
  }
  if (g->frame[symi] != UINT32_MAX) {
    k->local_bytes = g->frame[symi];
    k->present |= HSAD_NV_KI_HAS_FRAME_SIZE;
  }
  if (g->stack[symi] != UINT32_MAX) {
    k->stack_bytes = g->stack[symi];
    k->present |= HSAD_NV_KI_HAS_MIN_STACK;
  }
  size_t i;
  if ((i = find_sec(e, ".nv.shared.", name, text))) k->shared_section_bytes = (uint32_t)shdr(e, i)->sh_size;
  if ((i = find_sec(e, ".nv.local.", name, text))) k->local_section_bytes = (uint32_t)shdr(e, i)->sh_size;
  if ((i = find_sec(e, ".nv.constant0.", name, text))) k->const_bank0_bytes = (uint32_t)shdr(e, i)->sh_size;
  k->reserved_shared_bytes = sm >= 90 && reserved_smem && k->shared_section_bytes >= 1024 ? 1024 : 0;
  k->static_shared_bytes = k->shared_section_bytes - k->reserved_shared_bytes;
  uint64_t mt = (k->present & HSAD_NV_KI_HAS_MAX_THREADS) ? dims_product(k->maxntid)
                : (k->present & HSAD_NV_KI_HAS_REQNTID) ? dims_product(k->reqntid) : 1024;
  k->max_threads = mt > 1024 ? 1024 : (uint32_t)mt;
  return HSAD_OK;
}

hsad_status_t nv_cubin_read(nv_pool_t *pool, const char *what, const uint8_t *image, size_t size,
                            hsad_nv_entry_t *entry) {
  nv_elf_t e = {.what = what, .image = image, .size = size};
  hsad_status_t st = nv_elf_check(&e);
  const Elf64_Sym **ks = NULL;
  if (st != HSAD_OK) goto out;
  Elf64_Ehdr eh;
  memcpy(&eh, image, sizeof eh);
  uint32_t sm = eh.e_ident[EI_ABIVERSION] >= 8 ? (eh.e_flags >> 8) & 0xff : eh.e_flags & 0xff;
  if (entry->sm && entry->sm != sm) {
    st = hsad_fail(HSAD_ERR_BAD_ELF, "%s: the cubin's e_flags say sm_%u, its fatbin entry sm_%u",
                   what, sm, entry->sm);
    goto out;
  }
  entry->sm = sm;
  char arch[16];
  snprintf(arch, sizeof arch, "sm_%u", sm);
  entry->arch = nv_pool_strndup(pool, arch, strlen(arch));
  nv_global_t g;
  if ((st = nv_global_read(&e, pool, &g)) != HSAD_OK) goto out;
  size_t nk = 0;
  bool reserved_smem = false;
  ks = calloc(e.nsyms ? e.nsyms : 1, sizeof *ks);
  if (!ks || !entry->arch) {
    st = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    goto out;
  }
  for (size_t i = 1; i < e.nsyms; i++) {
    const Elf64_Sym *s = &e.syms[i];
    if (!strncmp(sym_name(&e, s), ".nv.reservedSmem", 16)) reserved_smem = true;
    if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || !(s->st_other & NV_STO_CUDA_ENTRY)) continue;
    if (s->st_shndx == 0 || s->st_shndx >= e.shnum) {
      st = hsad_fail(HSAD_ERR_BAD_ELF, "%s: kernel symbol %s is in section %u of %zu", what,
                     sym_name(&e, s), s->st_shndx, e.shnum);
      goto out;
    }
    ks[nk++] = s;
  }
  qsort(ks, nk, sizeof *ks, kern_cmp); /* .text section order, as cuobjdump lists them */
  hsad_nv_kernel_info_t *kernels = nv_pool_alloc(pool, nk * sizeof *kernels);
  if (!kernels) {
    st = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    goto out;
  }
  for (size_t i = 0; i < nk; i++)
    if ((st = nv_kernel_read(&e, pool, &g, ks[i], sm, reserved_smem, &kernels[i])) != HSAD_OK)
      goto out;
  entry->kernels = kernels;
  entry->kernel_count = (uint32_t)nk;
out:
  free(ks);
  if (e.elf) elf_end(e.elf);
  return st;
}
