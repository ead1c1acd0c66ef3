/* kernels.c - maps an AQL packet's kernel_object back to the kernel and its host twin.
 *
 * ROCr's loader copies each code object into one allocation, starting at ELF offset 0, so the
 * kernel descriptor at kernel_object lies inside an allocation whose first bytes are the
 * AMDGPU ELF header. Its dynamic symbol table (PT_DYNAMIC: DT_SYMTAB, DT_STRTAB, DT_HASH) names
 * the `NAME.kd` symbol whose value is kernel_object - base, and its NT_AMDGPU_METADATA note
 * gives the explicit arguments' offsets, sizes and value kinds, read by codeobj/
 * (hsad_codeobj_load_note). Objects that are no
 * ELF (ROCr's own blit kernels, bare amd_kernel_code_t) are offered to blit_rocr.c.
 *
 * Results are cached per (kernel_object, allocation generation), so a code object unloaded
 * and another loaded at the same address is looked up anew.
 */
#define _GNU_SOURCE
#include "tools/kfd-emu/emu.h"

#include <dlfcn.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codeobj/hsad_codeobj.h"

#ifndef EM_AMDGPU
#define EM_AMDGPU 224
#endif
#define NT_AMDGPU_METADATA 32

/* Provided by blit_rocr.c when built in: twins of ROCr's bare blit kernels. */
kfd_emu_twin_fn kfd_emu_rocr_blit_twin(const void *kernel_object, const char **out_name)
    __attribute__((weak));

#define CACHE_SIZE 256
static pthread_mutex_t k_lock = PTHREAD_MUTEX_INITIALIZER;
static emu_kernel_t *cache[CACHE_SIZE];
static emu_kernel_t *retired; /* evicted, freed at reset: a CP may still hold them */
static void *twin_libs[16];
static int ntwin_libs = -1;
/* A message that outlives the lookup (*why): kept once per text until reset (errors are rare;
 * kfd-emu has no thread-local room to spare, see co_status.c). Under k_lock. */
typedef struct emu_message {
  struct emu_message *next;
  char text[];
} emu_message_t;
static emu_message_t *messages;

static void kernel_free(emu_kernel_t *k) {
  if (!k) return;
  free(k->cl_source);
  free(k->cl_options);
  free(k->origin_file);
  free(k->source_error);
  free(k);
}

void emu_kernels_reset(void) {
  pthread_mutex_lock(&k_lock);
  for (int i = 0; i < CACHE_SIZE; i++) {
    kernel_free(cache[i]);
    cache[i] = NULL;
  }
  while (retired) {
    emu_kernel_t *n = retired->retired;
    kernel_free(retired);
    retired = n;
  }
  while (messages) {
    emu_message_t *n = messages->next;
    free(messages);
    messages = n;
  }
  pthread_mutex_unlock(&k_lock);
}

static void load_twin_libs(void) {
  ntwin_libs = 0;
  const char *env = getenv("KFD_EMU_TWINS");
  if (env && *env) {
    char *copy = strdup(env), *save = NULL;
    for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p && ntwin_libs < 15;
         p = strtok_r(NULL, ":", &save)) {
      void *h = dlopen(p, RTLD_NOW | RTLD_LOCAL);
      if (h) twin_libs[ntwin_libs++] = h;
      else emu_log("KFD_EMU_TWINS: cannot load %s: %s", p, dlerror());
    }
    free(copy);
  }
  Dl_info info;
  if (dladdr((void *)&load_twin_libs, &info) && info.dli_fname) {
    char path[4096];
    const char *slash = strrchr(info.dli_fname, '/');
    int dir = slash ? (int)(slash - info.dli_fname) : 0;
    snprintf(path, sizeof path, "%.*s%slibkfd-emu-twins.so", dir, info.dli_fname,
             slash ? "/" : "");
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h) twin_libs[ntwin_libs++] = h;
  }
}

static kfd_emu_twin_fn find_twin(const char *name) {
  char sym[300];
  snprintf(sym, sizeof sym, "kfd_emu_twin_%s", name);
  if (ntwin_libs < 0) load_twin_libs();
  for (int i = 0; i < ntwin_libs; i++) {
    void *f = dlsym(twin_libs[i], sym);
    if (f) return (kfd_emu_twin_fn)f;
  }
  return (kfd_emu_twin_fn)dlsym(RTLD_DEFAULT, sym);
}

/* KFD_EMU_CL_SOURCE: colon-separated OpenCL C files for code objects that carry no source; the
 * first that builds and has a kernel of k's name is its source. */
static void explicit_source(emu_kernel_t *k) {
  const char *env = getenv("KFD_EMU_CL_SOURCE");
  if (!env || !*env) return;
  char *copy = strdup(env), *save = NULL;
  for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p && !k->cl_source;
       p = strtok_r(NULL, ":", &save)) {
    FILE *f = fopen(p, "rb");
    if (!f) {
      emu_log("KFD_EMU_CL_SOURCE: cannot read %s", p);
      continue;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    char buf[4096];
    size_t got;
    while (m && (got = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, got, m);
    fclose(f);
    if (m) fclose(m);
    char why[2048];
    if (text && emu_cl_check("", text, k->name, why, sizeof why)) {
      k->cl_source = text;
      k->cl_options = strdup("");
      k->origin_file = strdup(p);
      k->source_origin = k->origin_file ? k->origin_file : "KFD_EMU_CL_SOURCE";
    } else {
      /* a file POCL cannot build is an error for every kernel it could have been the source
       * of (kfd_emu_kernel_mode: BUILD_FAILED); one without this kernel is not */
      if (text && emu_cl_builds("", text) == 0 && !k->source_error) k->source_error = strdup(why);
      free(text);
    }
  }
  free(copy);
}

/* Records a hidden argument's offset where the CP checks or uses it. */
static void set_hidden(emu_kernel_t *k, hsad_value_kind_t kind, uint32_t off) {
  for (unsigned d = 0; d < 3; d++) {
    if (kind == HSAD_VK_HIDDEN_BLOCK_COUNT_X + d) k->hidden_block_count[d] = off;
    if (kind == HSAD_VK_HIDDEN_GROUP_SIZE_X + d) k->hidden_group_size[d] = off;
    if (kind == HSAD_VK_HIDDEN_REMAINDER_X + d) k->hidden_remainder[d] = off;
    if (kind == HSAD_VK_HIDDEN_GLOBAL_OFFSET_X + d) k->hidden_global_offset[d] = off;
  }
  if (kind == HSAD_VK_HIDDEN_GRID_DIMS) k->hidden_grid_dims = off;
}

/* Fills k's arguments from the metadata of kernel `sym` ("NAME.kd") in the note payload, read
 * by codeobj/ (hsad_codeobj_load_note: the project's one metadata reader, linked into kfd-emu
 * with its symbols kept local, see module.mk). NULL, or the reason with codeobj's message in
 * buf. */
static const char *parse_metadata(const void *desc, size_t size, uint32_t version,
                                  const char *sym, emu_kernel_t *k, char *buf, size_t n) {
  hsad_codeobj_t *co = NULL;
  const hsad_kernel_t *kern = NULL;
  if (hsad_codeobj_load_note(desc, size, version, "the code object's NT_AMDGPU_METADATA note",
                             &co) != HSAD_OK ||
      hsad_codeobj_kernel_find(co, sym, &kern) != HSAD_OK) {
    snprintf(buf, n, "%s", hsad_last_error());
    hsad_codeobj_destroy(co);
    return buf;
  }
  const hsad_kernel_info_t *ki = hsad_kernel_info(kern);
  const char *err = NULL;
  k->wave32 = ki->wavefront_size == 32;
  k->kernarg_size = ki->kernarg_segment_size;
  k->kernarg_align = ki->kernarg_segment_align ? ki->kernarg_segment_align : 16;
  for (uint32_t a = 0; a < ki->arg_count; a++) {
    const hsad_kernel_arg_t *am = &ki->args[a];
    if (hsad_value_kind_is_hidden(am->value_kind)) {
      set_hidden(k, am->value_kind, am->offset);
      continue;
    }
    if (k->arg_count == EMU_MAX_ARGS) {
      err = "more than 512 explicit arguments (EMU_MAX_ARGS)";
      break;
    }
    kfd_emu_arg_t *x = &k->args[k->arg_count++];
    x->offset = am->offset;
    x->size = am->size;
    x->kind = am->value_kind == HSAD_VK_BY_VALUE        ? KFD_EMU_ARG_BY_VALUE
              : am->value_kind == HSAD_VK_GLOBAL_BUFFER ? KFD_EMU_ARG_GLOBAL_BUFFER
              : am->value_kind == HSAD_VK_DYNAMIC_SHARED_POINTER
                  ? KFD_EMU_ARG_DYNAMIC_SHARED_POINTER
                  : KFD_EMU_ARG_OTHER;
  }
  hsad_codeobj_destroy(co);
  return err;
}

/* Takes the source a code object carries (codeobj/hsad_codeobj.h, HSAD_CL_SOURCE_SYMBOL):
 * "HSADCL1\n", the build options, "\n", the source, NUL. Anything else is ignored. */
static void carried_source(emu_kernel_t *k, const char *blob, uint64_t size) {
  static const char magic[] = HSAD_CL_SOURCE_MAGIC;
  if (size < sizeof magic || memcmp(blob, magic, sizeof magic - 1) || blob[size - 1]) return;
  const char *opts = blob + sizeof magic - 1, *nl = strchr(opts, '\n');
  if (!nl) return;
  free(k->cl_source);
  free(k->cl_options);
  k->cl_options = strndup(opts, (size_t)(nl - opts));
  k->cl_source = strdup(nl + 1);
  k->source_origin = "code object";
}

/* Finds the .kd symbol at offset kd_off of the loaded image and the kernel's metadata. */
static const char *parse_code_object(const emu_alloc_t *a, uint64_t kd_off, emu_kernel_t *k,
                                     char *buf, size_t n) {
  elf_version(EV_CURRENT);
  Elf *e = elf_memory((char *)a->base, a->size);
  if (!e) return "the code object's ELF image does not parse";
  const char *why = "kernel_object is no kernel descriptor (no NAME.kd symbol at that address)";
  GElf_Ehdr eh;
  size_t nph = 0;
  uint64_t symtab = 0, strtab = 0, strsz = 0, hash = 0, syment = sizeof(Elf64_Sym);
  Elf_Data *note = NULL;
  char sym[256] = "";
  if (!gelf_getehdr(e, &eh) || eh.e_machine != EM_AMDGPU || elf_getphdrnum(e, &nph) != 0) {
    why = "the allocation holding kernel_object is no AMDGPU code object";
    goto out;
  }
  for (size_t i = 0; i < nph; i++) {
    GElf_Phdr ph;
    if (!gelf_getphdr(e, (int)i, &ph)) continue;
    /* The loaded image is laid out by p_vaddr. */
    if (ph.p_type == PT_NOTE) note = elf_getdata_rawchunk(e, ph.p_vaddr, ph.p_filesz, ELF_T_NHDR);
    if (ph.p_type != PT_DYNAMIC) continue;
    Elf_Data *d = elf_getdata_rawchunk(e, ph.p_vaddr, ph.p_filesz, ELF_T_DYN);
    for (size_t j = 0; d && j < d->d_size / sizeof(Elf64_Dyn); j++) {
      GElf_Dyn dyn;
      if (!gelf_getdyn(d, (int)j, &dyn)) break;
      if (dyn.d_tag == DT_SYMTAB) symtab = dyn.d_un.d_ptr;
      else if (dyn.d_tag == DT_STRTAB) strtab = dyn.d_un.d_ptr;
      else if (dyn.d_tag == DT_STRSZ) strsz = dyn.d_un.d_val;
      else if (dyn.d_tag == DT_HASH) hash = dyn.d_un.d_ptr;
      else if (dyn.d_tag == DT_SYMENT) syment = dyn.d_un.d_val;
    }
  }
  if (!symtab || !strtab || syment != sizeof(Elf64_Sym) || strtab >= a->size ||
      strsz > a->size - strtab) {
    why = "the code object has no usable dynamic symbol table";
    goto out;
  }
  uint64_t nsyms = 0;
  if (hash && hash + 8 <= a->size) nsyms = ((const uint32_t *)(a->base + hash))[1];
  else if (strtab > symtab) nsyms = (strtab - symtab) / syment;
  if (symtab >= a->size || nsyms > (a->size - symtab) / syment) {
    why = "the dynamic symbol table runs past the code object";
    goto out;
  }
  const Elf64_Sym *syms = (const Elf64_Sym *)(a->base + symtab);
  const char *strs = (const char *)(a->base + strtab);
  for (uint64_t i = 1; i < nsyms; i++)
    if (syms[i].st_name < strsz && syms[i].st_value < a->size &&
        syms[i].st_size <= a->size - syms[i].st_value &&
        !strncmp(strs + syms[i].st_name, HSAD_CL_SOURCE_SYMBOL, strsz - syms[i].st_name))
      carried_source(k, (const char *)(a->base + syms[i].st_value), syms[i].st_size);
  for (uint64_t i = 1; i < nsyms; i++) {
    if (syms[i].st_value != kd_off || syms[i].st_name >= strsz) continue;
    const char *n = strs + syms[i].st_name;
    size_t len = strnlen(n, strsz - syms[i].st_name);
    if (len < 4 || len >= sizeof sym || strcmp(n + len - 3, ".kd")) continue;
    memcpy(sym, n, len + 1);
    break;
  }
  if (!sym[0]) goto out;
  snprintf(k->name, sizeof k->name, "%.*s", (int)(strlen(sym) - 3), sym);
  why = "the code object has no NT_AMDGPU_METADATA note";
  size_t noff = 0, name_off, desc_off;
  GElf_Nhdr nh;
  while (note && (noff = gelf_getnote(note, noff, &nh, &name_off, &desc_off)) > 0) {
    if (nh.n_type != NT_AMDGPU_METADATA || nh.n_namesz != 7 ||
        memcmp((const char *)note->d_buf + name_off, "AMDGPU", 7))
      continue;
    /* e_ident[EI_ABIVERSION]: 1, 2, 3 are code object v3, v4, v5 */
    why = parse_metadata((const char *)note->d_buf + desc_off, nh.n_descsz,
                         (uint32_t)eh.e_ident[EI_ABIVERSION] + 2, sym, k, buf, n);
    break;
  }
out:
  elf_end(e);
  return why;
}

/* The interned copy of text (messages, under k_lock). */
static const char *intern_message(const char *text) {
  for (emu_message_t *m = messages; m; m = m->next)
    if (!strcmp(m->text, text)) return m->text;
  emu_message_t *m = malloc(sizeof *m + strlen(text) + 1);
  if (!m) return "out of host memory (a code object's metadata did not load)";
  strcpy(m->text, text);
  m->next = messages;
  messages = m;
  return m->text;
}

const emu_kernel_t *emu_kernel_lookup(uint64_t kernel_object, const char **why) {
  char md_why[512]; /* codeobj's message, interned when it is the answer */
  emu_alloc_t a;
  *why = "kernel_object is 0";
  if (kernel_object == 0) return NULL;
  if ((kernel_object & 63) != 0) {
    *why = "kernel_object is not 64-byte aligned (kernel descriptors are)";
    return NULL;
  }
  if (!emu_mem_find(kernel_object, 64, &a)) {
    *why = "kernel_object is not in GPU-accessible memory";
    return NULL;
  }
  uint32_t slot = (uint32_t)((kernel_object >> 6) * 2654435761u) % CACHE_SIZE;
  pthread_mutex_lock(&k_lock);
  emu_kernel_t *c = cache[slot];
  if (c && c->kernel_object == kernel_object && c->gen == a.gen) {
    pthread_mutex_unlock(&k_lock);
    return c;
  }
  emu_kernel_t *k = calloc(1, sizeof *k);
  if (!k) {
    pthread_mutex_unlock(&k_lock);
    *why = "out of host memory";
    return NULL;
  }
  k->kernel_object = kernel_object;
  k->gen = a.gen;
  for (int d = 0; d < 3; d++)
    k->hidden_block_count[d] = k->hidden_group_size[d] = k->hidden_remainder[d] = UINT32_MAX;
  k->hidden_grid_dims = UINT32_MAX;
  k->hidden_global_offset[0] = k->hidden_global_offset[1] = k->hidden_global_offset[2] = UINT32_MAX;
  const char *err = NULL;
  if (a.size >= 4 && !memcmp((const void *)a.base, "\177ELF", 4)) {
    err = parse_code_object(&a, kernel_object - a.base, k, md_why, sizeof md_why);
    if (err == md_why) err = intern_message(md_why);
    /* precedence: the kernel's own source, then a twin (never chosen over a source by name);
     * KFD_EMU_KERNEL_MODE=twin reverses it for kernels that have a twin (the cross-check) */
    if (!err && emu.cfg.twin_first && (k->twin = find_twin(k->name)) && k->cl_source) {
      free(k->cl_source);
      free(k->cl_options);
      k->cl_source = k->cl_options = NULL;
      k->source_set_aside = true;
    }
    if (!err && !k->cl_source && !k->twin) explicit_source(k);
    if (!err && !k->cl_source && !k->twin) k->twin = find_twin(k->name);
    /* the descriptor's fixed segment sizes (AMDGPUUsage "Kernel Descriptor": bytes 0 and 4) */
    memcpy(&k->group_fixed, (const void *)kernel_object, 4);
    memcpy(&k->private_fixed, (const void *)(kernel_object + 4), 4);
  } else {
    const char *bname = NULL;
    k->twin = kfd_emu_rocr_blit_twin ? kfd_emu_rocr_blit_twin((const void *)kernel_object, &bname)
                                     : NULL;
    k->kernarg_align = 16; /* no LDS, no scratch: group_fixed = private_fixed = 0 */
    k->rocr_blit = true;
    if (k->twin) snprintf(k->name, sizeof k->name, "%s", bname ? bname : "rocr_blit");
    else err = "kernel_object is neither in a code object nor one of ROCr's blit kernels";
  }
  if (err) {
    kernel_free(k);
    pthread_mutex_unlock(&k_lock);
    *why = err;
    return NULL;
  }
  if (cache[slot]) {
    cache[slot]->retired = retired;
    retired = cache[slot];
  }
  cache[slot] = k;
  pthread_mutex_unlock(&k_lock);
  return k;
}

void emu_kernel_no_code_message(const char *name, char *why, size_t n) {
  snprintf(why, n, "kernel %s has neither source nor a host twin: build its code object with "
           "hsad (hsad compile, hsad run FILE.cl, hsad_codeobj_compile), which carries the "
           "OpenCL C source, or name the source in KFD_EMU_CL_SOURCE=FILE.cl (hsad run --source "
           "FILE.cl); or give a twin "
           "kfd_emu_twin_%s in KFD_EMU_TWINS (kfd_emu_twin.h); KFD_EMU_NO_TWIN=noop completes it "
           "unexecuted", name, name);
}

void emu_kernel_twin_notice(const emu_kernel_t *k) {
  static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
  static char said[64][256];
  static int nsaid;
  /* said only with KFD_EMU_VERBOSE=1: kfd-emu is a library in its user's process, and hsad run
   * already says it (kfd_emu_kernel_mode) */
  if (!emu.cfg.verbose || k->rocr_blit || !strncmp(k->name, "__amd_rocclr_", 13)) return;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < nsaid; i++)
    if (!strcmp(said[i], k->name)) {
      pthread_mutex_unlock(&lock);
      return;
    }
  if (nsaid < 64) snprintf(said[nsaid++], sizeof said[0], "%s", k->name);
  pthread_mutex_unlock(&lock);
  emu_log("ran host twin of '%s' (%s)", k->name,
          k->source_set_aside ? "KFD_EMU_KERNEL_MODE=twin; it has source" : "no source");
}

EMU_PUBLIC int kfd_emu_kernel_mode(uint64_t kernel_object, char *buf, size_t size) {
  const char *why = NULL;
  const emu_kernel_t *k = emu_kernel_lookup(kernel_object, &why);
  char tmp[1024];
  if (!buf || !size) {
    buf = tmp;
    size = sizeof tmp;
  }
  if (!k) {
    snprintf(buf, size, "kernel_object 0x%llx: %s", (unsigned long long)kernel_object, why);
    return KFD_EMU_KERNEL_UNKNOWN;
  }
  if (k->cl_source && !emu_cl_check(k->cl_options, k->cl_source, k->name, buf, size))
    return KFD_EMU_KERNEL_BUILD_FAILED;
  if (!k->cl_source && k->source_error) {
    snprintf(buf, size, "KFD_EMU_CL_SOURCE: %s", k->source_error);
    return KFD_EMU_KERNEL_BUILD_FAILED;
  }
  if (k->cl_source) {
    snprintf(buf, size, "ran '%s' from its OpenCL C source (%s) through POCL", k->name,
             k->source_origin ? k->source_origin : "code object");
    return KFD_EMU_KERNEL_SOURCE;
  }
  if (k->twin) {
    snprintf(buf, size, "ran host twin of '%s' (%s)", k->name,
             k->source_set_aside ? "KFD_EMU_KERNEL_MODE=twin; it has source" : "no source");
    return KFD_EMU_KERNEL_TWIN;
  }
  emu_kernel_no_code_message(k->name, buf, size);
  return KFD_EMU_KERNEL_NONE;
}
