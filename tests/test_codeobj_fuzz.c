/* test_codeobj_fuzz.c - corrupt code objects never crash or hang inside ROCr's loader: every
 * gfx90a code object that kernels/ builds is corrupted in seeded, ELF-aware ways (ELF header,
 * section headers, .shstrtab bytes, symbol entries, .dynamic entries, string/hash bytes, note
 * bytes, program headers, plain byte flips, and combinations) and loaded through
 * hsad_program_load_memory on kfd-emu. The loads run in forked children (several cases per
 * child, the case in progress kept in shared memory), so an abort or a fault inside ROCr is
 * reported with the file, the seed and the corruption instead of killing the suite, and a
 * child that died is replaced by a fresh one starting at the next case.
 * The rule: every load ends in HSAD_OK (its kernels resolve, each kernel object holds the 64
 * bytes hsad decoded as its descriptor - kfd-emu: a GPU address is the host address of the
 * same bytes -, the program destroys with HSAD_OK) or in an error whose message starts with
 * the object's label ("fz:FILE#SEED: "); no signal, no hang (5 s per case).
 * FZ_CASES (environment) overrides the cases per file; FZ_VERBOSE=1 prints every case;
 * FZ_DUMP=DIR writes each crashing image to DIR/LABEL; FZ_DIR=DIR fuzzes DIR's *-gfx90a-*.hsaco
 * instead of kernels/' (e.g. build/tests/codeobj). */
#include "test_codeobj_util.h"

#include "hsa-dispatch/hsad.h"

#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef CO_KERNDIR
#error "CO_KERNDIR must be defined by the build"
#endif

#define FZ_MAX_FILES 32
#define FZ_DEFAULT_CASES 1000
#define FZ_MSG 200
/* A p_memsz between this and 2^63 is lowered to it: such an object is valid, and ROCr
 * allocates and kfd-emu zeroes the whole block (2 GiB took 10.5 s: a timeout, not a crash);
 * larger values stay, to reach the wrap-around check. */
#define FZ_MEMSZ_CAP 0x4000000

typedef struct {
  int done;      /* the child finished the case */
  int status;    /* hsad_status_t */
  char msg[FZ_MSG];
} fz_result_t;

typedef struct {
  volatile int current; /* the case the child works on */
  fz_result_t r[];
} fz_shared_t;

typedef struct {
  char name[64];
  unsigned char *buf;
  size_t size;
} fz_file_t;

static uint64_t fz_next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t fz_below(uint64_t *s, uint64_t n) { return n ? fz_next(s) % n : 0; }

/* An interesting replacement for a field of `width` bytes holding `orig`. */
static uint64_t fz_value(uint64_t *s, uint64_t orig, size_t file_size, unsigned shnum) {
  switch (fz_below(s, 14)) {
  case 0: return 0;
  case 1: return 1;
  case 2: return orig + 1;
  case 3: return orig - 1;
  case 4: return orig ^ (1ull << fz_below(s, 64));
  case 5: return UINT64_MAX;
  case 6: return 0xffffffffull;
  case 7: return 0x7fffffffull;
  case 8: return file_size;
  case 9: return file_size - 1 - fz_below(s, 64);
  case 10: return shnum + fz_below(s, 3);
  case 11: return fz_below(s, file_size);
  case 12: return orig + 8 * (1 + fz_below(s, 4));
  default: return fz_next(s);
  }
}

static void fz_put(unsigned char *p, size_t width, uint64_t v) { memcpy(p, &v, width); }
static uint64_t fz_get(const unsigned char *p, size_t width) {
  uint64_t v = 0;
  memcpy(&v, p, width);
  return v;
}

typedef struct {
  Elf64_Ehdr eh;
  const Elf64_Shdr *sh; /* in the original image */
  int symtab, dynsym, dynamic, note, shstrtab, strtab, dynstr, hash;
} fz_layout_t;

static void fz_layout(const unsigned char *img, fz_layout_t *l) {
  memset(l, 0, sizeof *l);
  memcpy(&l->eh, img, sizeof l->eh);
  l->sh = (const Elf64_Shdr *)(const void *)(img + l->eh.e_shoff);
  l->symtab = l->dynsym = l->dynamic = l->note = l->strtab = l->dynstr = l->hash = -1;
  l->shstrtab = l->eh.e_shstrndx;
  for (int i = 0; i < l->eh.e_shnum; i++) {
    switch (l->sh[i].sh_type) {
    case SHT_SYMTAB: l->symtab = i; l->strtab = (int)l->sh[i].sh_link; break;
    case SHT_DYNSYM: l->dynsym = i; l->dynstr = (int)l->sh[i].sh_link; break;
    case SHT_DYNAMIC: l->dynamic = i; break;
    case SHT_NOTE: l->note = i; break;
    case SHT_HASH: l->hash = i; break;
    case SHT_GNU_HASH: if (l->hash < 0) l->hash = i; break;
    }
  }
}

static const char *const fz_shdr_fields[] = {"sh_name", "sh_type", "sh_flags", "sh_addr",
                                             "sh_offset", "sh_size", "sh_link", "sh_info",
                                             "sh_addralign", "sh_entsize"};
static const unsigned char fz_shdr_off[] = {0, 4, 8, 16, 24, 32, 40, 44, 48, 56};
static const unsigned char fz_shdr_w[] = {4, 4, 8, 8, 8, 8, 4, 4, 8, 8};
static const char *const fz_sym_fields[] = {"st_name", "st_info", "st_other", "st_shndx",
                                            "st_value", "st_size"};
static const unsigned char fz_sym_off[] = {0, 4, 5, 6, 8, 16};
static const unsigned char fz_sym_w[] = {4, 1, 1, 2, 8, 8};
static const char *const fz_ph_fields[] = {"p_type", "p_flags", "p_offset", "p_vaddr",
                                           "p_paddr", "p_filesz", "p_memsz", "p_align"};
static const unsigned char fz_ph_off[] = {0, 4, 8, 16, 24, 32, 40, 48};
static const unsigned char fz_ph_w[] = {4, 4, 8, 8, 8, 8, 8, 8};
static const char *const fz_eh_fields[] = {"e_phoff", "e_shoff", "e_phnum", "e_shnum",
                                           "e_shstrndx", "e_entry", "e_phentsize",
                                           "e_shentsize"};
static const unsigned char fz_eh_off[] = {32, 40, 56, 60, 62, 24, 54, 58};
static const unsigned char fz_eh_w[] = {8, 8, 2, 2, 2, 8, 2, 2};

/* Sets a field at `at` and describes it. */
static void fz_field(unsigned char *img, size_t at, size_t w, const char *what, uint64_t *s,
                     size_t size, unsigned shnum, char *d, size_t dn) {
  uint64_t orig = fz_get(img + at, w), v = fz_value(s, orig, size, shnum);
  if (w < 8) v &= (1ull << (8 * w)) - 1;
  fz_put(img + at, w, v);
  snprintf(d, dn, "%s 0x%llx -> 0x%llx", what, (unsigned long long)orig, (unsigned long long)v);
}

/* Byte `k` of section `i` (or `n` random bytes when i < 0) set to a random value. */
static void fz_bytes(unsigned char *img, size_t size, const fz_layout_t *l, int i, unsigned n,
                     uint64_t *s, char *d, size_t dn) {
  size_t base = 0, len = size;
  if (i >= 0 && l->sh[i].sh_size && l->sh[i].sh_offset + l->sh[i].sh_size <= size) {
    base = l->sh[i].sh_offset;
    len = l->sh[i].sh_size;
  }
  size_t used = 0;
  used += (size_t)snprintf(d, dn, "%u byte(s) of section %d:", n, i);
  for (unsigned k = 0; k < n; k++) {
    size_t at = base + fz_below(s, len);
    unsigned char v = (unsigned char)(fz_below(s, 3) == 0 ? 0 : fz_next(s));
    if (used < dn)
      used += (size_t)snprintf(d + used, dn - used, " [%zu] 0x%02x->0x%02x", at, img[at], v);
    img[at] = v;
  }
}

enum { FZ_KINDS = 10 };
static const char *const fz_kind_names[FZ_KINDS] = {
    "ehdr", "shdr", "shstrtab", "sym", "dynamic", "strings/hash", "note", "phdr", "bytes",
    "combo"};

/* One corruption of kind `kind` of `img` (a copy of a valid object), described in d. */
static void fz_one(unsigned char *img, size_t size, const fz_layout_t *l, unsigned kind,
                   uint64_t *s, char *d, size_t dn) {
  unsigned shnum = l->eh.e_shnum;
  char what[64];
  switch (kind) {
  case 0: {
    unsigned f = (unsigned)fz_below(s, 8);
    fz_field(img, fz_eh_off[f], fz_eh_w[f], fz_eh_fields[f], s, size, shnum, d, dn);
    return;
  }
  case 1: {
    unsigned i = 1 + (unsigned)fz_below(s, shnum - 1), f = (unsigned)fz_below(s, 10);
    snprintf(what, sizeof what, "section %u %s", i, fz_shdr_fields[f]);
    fz_field(img, l->eh.e_shoff + (size_t)i * 64 + fz_shdr_off[f], fz_shdr_w[f], what, s, size,
             shnum, d, dn);
    return;
  }
  case 2: fz_bytes(img, size, l, l->shstrtab, 1 + (unsigned)fz_below(s, 2), s, d, dn); return;
  case 3: {
    int t = (l->symtab >= 0 && (l->dynsym < 0 || fz_below(s, 2))) ? l->symtab : l->dynsym;
    if (t < 0) break;
    size_t n = l->sh[t].sh_size / 24;
    unsigned e = (unsigned)fz_below(s, n), f = (unsigned)fz_below(s, 6);
    snprintf(what, sizeof what, "section %d symbol %u %s", t, e, fz_sym_fields[f]);
    fz_field(img, l->sh[t].sh_offset + (size_t)e * 24 + fz_sym_off[f], fz_sym_w[f], what, s,
             size, shnum, d, dn);
    return;
  }
  case 4: {
    int t = l->dynamic;
    if (t < 0) break;
    unsigned e = (unsigned)fz_below(s, l->sh[t].sh_size / 16), f = (unsigned)fz_below(s, 2);
    snprintf(what, sizeof what, "dynamic entry %u %s", e, f ? "d_val" : "d_tag");
    fz_field(img, l->sh[t].sh_offset + (size_t)e * 16 + 8 * f, 8, what, s, size, shnum, d, dn);
    return;
  }
  case 5: {
    int c[4] = {l->strtab, l->dynstr, l->hash, l->dynsym};
    fz_bytes(img, size, l, c[fz_below(s, 4)], 1 + (unsigned)fz_below(s, 3), s, d, dn);
    return;
  }
  case 6: fz_bytes(img, size, l, l->note, 1 + (unsigned)fz_below(s, 3), s, d, dn); return;
  case 7: {
    if (!l->eh.e_phnum) break;
    unsigned i = (unsigned)fz_below(s, l->eh.e_phnum), f = (unsigned)fz_below(s, 8);
    snprintf(what, sizeof what, "segment %u %s", i, fz_ph_fields[f]);
    fz_field(img, l->eh.e_phoff + (size_t)i * 56 + fz_ph_off[f], fz_ph_w[f], what, s, size,
             shnum, d, dn);
    return;
  }
  default: break;
  }
  fz_bytes(img, size, l, -1, 1 + (unsigned)fz_below(s, 6), s, d, dn);
}

/* Lowers a PT_LOAD p_memsz between FZ_MEMSZ_CAP and 2^63 (in the original's program header
 * table) to FZ_MEMSZ_CAP, saying so in d. */
static void fz_cap_memsz(unsigned char *img, const fz_layout_t *l, char *d, size_t dn) {
  for (unsigned i = 0; i < l->eh.e_phnum; i++) {
    unsigned char *ph = img + l->eh.e_phoff + (size_t)i * 56;
    uint64_t memsz = fz_get(ph + 40, 8);
    if (fz_get(ph, 4) != PT_LOAD || memsz <= FZ_MEMSZ_CAP || memsz > UINT64_MAX / 2) continue;
    fz_put(ph + 40, 8, FZ_MEMSZ_CAP);
    size_t used = strlen(d);
    snprintf(d + used, dn - used, " (segment %u p_memsz 0x%llx lowered to 0x%x)", i,
             (unsigned long long)memsz, FZ_MEMSZ_CAP);
  }
}

/* Case `seed` of file f: a fresh copy in `img`, its corruption described in d. */
static void fz_make(const fz_file_t *f, uint64_t seed, unsigned char *img, char *d, size_t dn) {
  memcpy(img, f->buf, f->size);
  fz_layout_t l;
  fz_layout(f->buf, &l);
  uint64_t s = seed * 0x2545f4914f6cdd1dull + 17;
  unsigned kind = (unsigned)(seed % FZ_KINDS);
  size_t used = (size_t)snprintf(d, dn, "%s: ", fz_kind_names[kind]);
  if (kind != FZ_KINDS - 1) {
    fz_one(img, f->size, &l, kind, &s, d + used, dn - used);
  } else {
    unsigned n = 2 + (unsigned)fz_below(&s, 2);
    for (unsigned k = 0; k < n && used + 2 < dn; k++) {
      fz_one(img, f->size, &l, 1 + (unsigned)fz_below(&s, FZ_KINDS - 2), &s, d + used,
             dn - used);
      used += strlen(d + used);
      if (used + 3 < dn && k + 1 < n) used += (size_t)snprintf(d + used, dn - used, "; ");
    }
  }
  fz_cap_memsz(img, &l, d, dn);
}

static void fz_label(const fz_file_t *f, uint64_t seed, char *out, size_t n) {
  snprintf(out, n, "fz:%s#%llu", f->name, (unsigned long long)seed);
}

/* Loads one case; the program's kernels must resolve and it must destroy cleanly. */
static void fz_run_case(hsad_device_t *dev, const fz_file_t *f, uint64_t seed,
                        unsigned char *img, fz_result_t *r) {
  char d[512], label[96];
  fz_make(f, seed, img, d, sizeof d);
  fz_label(f, seed, label, sizeof label);
  hsad_program_t *p = NULL;
  hsad_status_t st = hsad_program_load_memory(dev, img, f->size, label, &p);
  r->status = st;
  snprintf(r->msg, sizeof r->msg, "%s", st ? hsad_last_error() : "");
  if (st == HSAD_OK) {
    uint32_t n = hsad_program_kernel_count(p);
    for (uint32_t k = 0; k < n; k++) {
      const hsad_device_kernel_desc_t *kd = hsad_device_kernel_desc(hsad_program_kernel_at(p, k));
      const hsad_device_kernel_t *byname = NULL;
      if (!kd->name || !kd->kernel_object ||
          hsad_program_kernel(p, kd->name, &byname) != HSAD_OK ||
          byname != hsad_program_kernel_at(p, k)) {
        r->status = -1;
        snprintf(r->msg, sizeof r->msg, "kernel %u does not resolve", k);
      } else if (memcmp((const void *)(uintptr_t)kd->kernel_object,
                        &hsad_kernel_info(kd->codeobj_kernel)->descriptor, 64)) {
        r->status = -3;
        snprintf(r->msg, sizeof r->msg,
                 "kernel %u (%s): ROCr's kernel object holds other bytes than the descriptor "
                 "hsad decoded",
                 k, kd->name);
      }
    }
    if (hsad_program_destroy(p) != HSAD_OK) {
      r->status = -2;
      snprintf(r->msg, sizeof r->msg, "destroy: %s", hsad_last_error());
    }
  }
  r->done = 1;
}

static void fz_child(fz_shared_t *sh, const fz_file_t *files, unsigned nfiles, unsigned cases,
                     unsigned start) {
  hsad_runtime_t *rt = NULL;
  hsad_device_t *dev = NULL;
  if (hsad_runtime_open(&rt) || hsad_device_get(rt, 0, &dev)) _exit(90);
  size_t max = 0;
  for (unsigned i = 0; i < nfiles; i++) max = files[i].size > max ? files[i].size : max;
  unsigned char *img = malloc(max);
  if (!img) _exit(91);
  for (unsigned c = start; c < nfiles * cases; c++) {
    sh->current = (int)c;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    alarm(5);
    fz_run_case(dev, &files[c / cases], c % cases + 1000000ull * (c / cases), img, &sh->r[c]);
  }
  alarm(0);
  free(img);
  hsad_runtime_close(rt);
  _exit(0);
}

static unsigned fz_files(fz_file_t *files, const char *kdir) {
  DIR *dir = opendir(kdir);
  cr_assert(dir, "cannot open %s (make kernels)", kdir);
  char names[FZ_MAX_FILES][64];
  unsigned n = 0;
  struct dirent *de;
  while ((de = readdir(dir)) && n < FZ_MAX_FILES) {
    size_t len = strnlen(de->d_name, 64);
    if (len < 7 || len >= 64 || strcmp(de->d_name + len - 6, ".hsaco") ||
        !strstr(de->d_name, "-gfx90a-"))
      continue;
    memcpy(names[n++], de->d_name, len + 1);
  }
  closedir(dir);
  qsort(names, n, 64, (int (*)(const void *, const void *))strcmp);
  for (unsigned i = 0; i < n; i++) {
    char path[PATH_MAX + 64];
    snprintf(path, PATH_MAX, "%s/", kdir);
    memcpy(path + strlen(path), names[i], 64);
    memcpy(files[i].name, names[i], 64);
    files[i].buf = co_test_read(path, &files[i].size);
  }
  return n;
}

Test(codeobj_fuzz, corrupt_objects_refused_or_loaded, .timeout = 300) {
  fz_file_t files[FZ_MAX_FILES];
  const char *kdir = getenv("FZ_DIR") ? getenv("FZ_DIR") : CO_KERNDIR;
  unsigned nfiles = fz_files(files, kdir);
  cr_assert_geq(nfiles, getenv("FZ_DIR") ? 1 : 20, "%u gfx90a code objects in %s (make kernels)",
                nfiles, kdir);
  const char *env = getenv("FZ_CASES");
  unsigned cases = env ? (unsigned)strtoul(env, NULL, 10) : FZ_DEFAULT_CASES;
  bool verbose = getenv("FZ_VERBOSE") && *getenv("FZ_VERBOSE") == '1';
  unsigned total = nfiles * cases;
  size_t shsize = sizeof(fz_shared_t) + (size_t)total * sizeof(fz_result_t);
  fz_shared_t *sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  cr_assert_neq(sh, MAP_FAILED);
  int *death = calloc(total, sizeof *death); /* wait status of a child that died in the case */
  unsigned start = 0, deaths = 0;
  while (start < total) {
    sh->current = -1;
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) fz_child(sh, files, nfiles, cases, start);
    int ws;
    cr_assert_eq(waitpid(pid, &ws, 0), pid);
    if (WIFEXITED(ws) && WEXITSTATUS(ws) == 0) break;
    cr_assert(sh->current >= (int)start, "child died before its first case (status 0x%x)", ws);
    death[sh->current] = ws ? ws : -1;
    deaths++;
    start = (unsigned)sh->current + 1;
  }
  unsigned ok = 0, refused = 0, rocr = 0, bad = 0;
  unsigned char *img = malloc(4 << 20);
  for (unsigned c = 0; c < total; c++) {
    const fz_file_t *f = &files[c / cases];
    uint64_t seed = c % cases + 1000000ull * (c / cases);
    char d[512], label[96];
    cr_assert_leq(f->size, (size_t)4 << 20);
    fz_make(f, seed, img, d, sizeof d);
    fz_label(f, seed, label, sizeof label);
    const fz_result_t *r = &sh->r[c];
    size_t ll = strlen(label);
    if (death[c] && getenv("FZ_DUMP")) { /* FZ_DUMP=DIR: the crashing images, for a debugger */
      char path[600];
      snprintf(path, sizeof path, "%s/%s", getenv("FZ_DUMP"), label);
      FILE *out = fopen(path, "wb");
      if (out) {
        fwrite(img, 1, f->size, out);
        fclose(out);
      }
    }
    if (death[c]) {
      bad++;
      int ws = death[c];
      cr_log_error("CRASH %s (%s): %s %d", label, d,
                   WIFSIGNALED(ws) ? "signal" : "exit", WIFSIGNALED(ws) ? WTERMSIG(ws) :
                   WEXITSTATUS(ws));
      continue;
    }
    if (!r->done) {
      bad++;
      cr_log_error("NOT RUN %s (%s)", label, d);
      continue;
    }
    if (r->status == HSAD_OK) {
      ok++;
    } else if (r->status < 0 || strncmp(r->msg, label, ll) || strncmp(r->msg + ll, ": ", 2) ||
               strlen(r->msg) < ll + 12) {
      bad++;
      cr_log_error("BAD %s (%s): status %d, message '%s'", label, d, r->status, r->msg);
    } else if (r->status == HSAD_ERR_HSA) {
      rocr++;
    } else {
      refused++;
    }
    if (verbose)
      cr_log_info("%s (%s): %s %s", label, d, hsad_status_name((hsad_status_t)r->status), r->msg);
  }
  cr_log_info("codeobj fuzz: %u files x %u cases: %u loaded, %u refused by hsad, %u refused by "
              "ROCr (HSAD_ERR_HSA), %u crashed/hung/bad (%u child deaths)",
              nfiles, cases, ok, refused, rocr, bad, deaths);
  free(img);
  free(death);
  for (unsigned i = 0; i < nfiles; i++) free(files[i].buf);
  munmap(sh, shsize);
  cr_assert_eq(bad, 0, "%u of %u corrupt objects crashed, hung or gave a bad message", bad, total);
}
