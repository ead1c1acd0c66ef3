/* load.c - hsad_codeobj_t: load one code object (ELF checks, metadata, target agreement,
 * descriptors, kernarg plans, name hash tables) and the accessors. */
#include "codeobj/codeobj_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static hsad_status_t co_build_hash(hsad_codeobj_t *co) {
  uint32_t n = co->info.kernel_count;
  uint32_t cap = 8;
  while (cap < 2 * n) cap <<= 1;
  co->hash_mask = cap - 1;
  co->by_name = co_arena_alloc(&co->arena, (size_t)cap * sizeof(uint32_t));
  co->by_symbol = co_arena_alloc(&co->arena, (size_t)cap * sizeof(uint32_t));
  if (!co->by_name || !co->by_symbol)
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", co->info.name);
  for (uint32_t k = 0; k < n; k++) {
    const hsad_kernel_info_t *ki = &co->kernels[k].info;
    for (int t = 0; t < 2; t++) {
      const char *key = t ? ki->symbol : ki->name;
      uint32_t *tab = t ? co->by_symbol : co->by_name;
      uint32_t i = co_hash_str(key, strlen(key)) & co->hash_mask;
      for (;; i = (i + 1) & co->hash_mask) {
        if (!tab[i]) {
          tab[i] = k + 1;
          break;
        }
        const hsad_kernel_info_t *o = &co->kernels[tab[i] - 1].info;
        if (!strcmp(t ? o->symbol : o->name, key))
          return hsad_fail(HSAD_ERR_METADATA_TYPE, "%s: kernel %s '%s' appears twice (%u and %u)",
                           co->info.name, t ? "symbol" : "name", key, tab[i] - 1, k);
      }
    }
  }
  return HSAD_OK;
}

static const char *co_feature_word(hsad_feature_t f) {
  switch (f) {
  case HSAD_FEATURE_ON: return "on";
  case HSAD_FEATURE_OFF: return "off";
  case HSAD_FEATURE_ANY: return "any";
  default: return "unsupported";
  }
}

/* amdhsa.target must name the same processor and feature settings as e_flags. A feature absent
 * from the note string corresponds to e_flags ANY or UNSUPPORTED. */
static hsad_status_t co_check_target(hsad_codeobj_t *co, const hsad_target_id_t *flags) {
  const char *name = co->info.name;
  if (!co->info.target) { /* v3 without amdhsa.target: e_flags decide */
    co->info.target_id = *flags;
    char buf[64];
    int n = snprintf(buf, sizeof buf, "amdgcn-amd-amdhsa--");
    hsad_target_id_format(flags, buf + n, sizeof buf - (size_t)n);
    co->info.target = co_arena_strndup(&co->arena, buf, strlen(buf));
    if (!co->info.target) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
    return HSAD_OK;
  }
  hsad_target_id_t note;
  if (hsad_target_id_parse(co->info.target, &note) != HSAD_OK) {
    char why[256]; /* the parser's message lives in the buffer hsad_fail writes */
    snprintf(why, sizeof why, "%s", hsad_last_error());
    return hsad_fail(HSAD_ERR_METADATA_TYPE, "%s: amdhsa.target '%s' is not a target ID: %s",
                     name, co->info.target, why);
  }
  if (strcmp(note.processor, flags->processor))
    return hsad_fail(HSAD_ERR_TARGET_MISMATCH,
                     "%s: amdhsa.target '%s' names processor %s, e_flags (0x%x) say %s", name,
                     co->info.target, note.processor, co->info.e_flags, flags->processor);
  struct {
    const char *what;
    hsad_feature_t n, f;
  } feats[2] = {{"xnack", note.xnack, flags->xnack}, {"sramecc", note.sramecc, flags->sramecc}};
  for (int i = 0; i < 2; i++) {
    bool note_set = feats[i].n == HSAD_FEATURE_ON || feats[i].n == HSAD_FEATURE_OFF;
    bool flag_set = feats[i].f == HSAD_FEATURE_ON || feats[i].f == HSAD_FEATURE_OFF;
    if (note_set != flag_set || (note_set && feats[i].n != feats[i].f))
      return hsad_fail(HSAD_ERR_TARGET_MISMATCH,
                       "%s: amdhsa.target '%s' has %s %s, e_flags (0x%x) have %s %s", name,
                       co->info.target, feats[i].what,
                       note_set ? co_feature_word(feats[i].n) : "unspecified", co->info.e_flags,
                       feats[i].what, co_feature_word(feats[i].f));
  }
  note.xnack = flags->xnack; /* keep UNSUPPORTED vs ANY from e_flags */
  note.sramecc = flags->sramecc;
  co->info.target_id = note;
  return HSAD_OK;
}

void hsad_codeobj_destroy(hsad_codeobj_t *co) {
  if (!co) return;
  free(co->image);
  co_arena_free(&co->arena);
  free(co);
}

hsad_status_t hsad_codeobj_load_memory(const void *data, size_t size, const char *label,
                                       hsad_codeobj_t **out_codeobj) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_codeobj_load_memory", {out_codeobj, "out_codeobj"});
  if (ns) return ns;
  if (!data && size)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_codeobj_load_memory: NULL data with size "
                     "%zu", size);
  *out_codeobj = NULL;
  if (!label) label = "<memory>";
  hsad_codeobj_t *co = calloc(1, sizeof *co);
  if (!co) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
  hsad_status_t st = HSAD_OK;
  co_elf_t e = {0};
  co->info.name = co_arena_strndup(&co->arena, label, strlen(label));
  co->image = malloc(size ? size : 1);
  if (!co->info.name || !co->image) {
    st = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu bytes)", label, size);
    goto fail;
  }
  if (size) memcpy(co->image, data, size);
  co->info.image = co->image;
  co->info.image_size = size;
  const char *name = co->info.name;

  st = co_elf_open(&e, name, co->image, size);
  if (st) goto fail;
  co->info.code_object_version = e.code_object_version;
  co->info.e_flags = e.e_flags;
  co->info.mach = e.e_flags & 0xffu;
  hsad_target_id_t flags;
  st = co_target_from_flags(name, e.e_flags, e.code_object_version, &flags);
  if (st) goto fail;
  st = co_metadata_decode(name, e.note_desc, e.note_size, e.code_object_version, co);
  if (st) goto fail;
  st = co_check_target(co, &flags);
  if (st) goto fail;
  st = co_build_hash(co);
  if (st) goto fail;
  st = co_elf_read_descriptors(&e, co);
  if (st) goto fail;
  for (uint32_t k = 0; k < co->info.kernel_count; k++) {
    hsad_kernel_t *kern = &co->kernels[k];
    co_kd_decode(&kern->info.descriptor, &co->info.target_id, &kern->info.kd);
    kern->info.kd_mismatch = co_kd_cross_check(&kern->info, &co->info.target_id);
    st = co_kernarg_plan_init(name, &co->arena, kern);
    if (st) goto fail;
  }
  co_elf_close(&e);
  *out_codeobj = co;
  return HSAD_OK;
fail:
  co_elf_close(&e);
  hsad_codeobj_destroy(co);
  return st;
}

hsad_status_t hsad_codeobj_load_note(const void *desc, size_t size,
                                     uint32_t code_object_version, const char *label,
                                     hsad_codeobj_t **out_codeobj) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_codeobj_load_note", {desc, "desc"},
                                   {out_codeobj, "out_codeobj"});
  if (ns) return ns;
  *out_codeobj = NULL;
  if (!label) label = "<memory>";
  if (code_object_version < 3 || code_object_version > 5)
    return hsad_fail(HSAD_ERR_CODE_OBJECT_VERSION,
                     "%s: code object v%u (supported: 3 (read), 4, 5)", label,
                     code_object_version);
  hsad_codeobj_t *co = calloc(1, sizeof *co);
  if (!co) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
  hsad_status_t st = HSAD_OK;
  co->info.name = co_arena_strndup(&co->arena, label, strlen(label));
  if (!co->info.name) {
    st = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    goto fail;
  }
  co->info.code_object_version = code_object_version;
  st = co_metadata_decode(co->info.name, desc, size, code_object_version, co);
  if (st) goto fail;
  if (co->info.target && hsad_target_id_parse(co->info.target, &co->info.target_id) != HSAD_OK) {
    char why[256]; /* the parser's message lives in the buffer hsad_fail writes */
    snprintf(why, sizeof why, "%s", hsad_last_error());
    st = hsad_fail(HSAD_ERR_METADATA_TYPE, "%s: amdhsa.target '%s' is not a target ID: %s",
                   co->info.name, co->info.target, why);
    goto fail;
  }
  st = co_build_hash(co);
  if (st) goto fail;
  for (uint32_t k = 0; k < co->info.kernel_count; k++) {
    st = co_kernarg_plan_init(co->info.name, &co->arena, &co->kernels[k]);
    if (st) goto fail;
  }
  *out_codeobj = co;
  return HSAD_OK;
fail:
  hsad_codeobj_destroy(co);
  return st;
}

const hsad_codeobj_info_t *hsad_codeobj_info(const hsad_codeobj_t *co) {
  return co ? &co->info : NULL;
}

const hsad_kernel_t *hsad_codeobj_kernel_at(const hsad_codeobj_t *co, uint32_t i) {
  return co && i < co->info.kernel_count ? &co->kernels[i] : NULL;
}

const char *hsad_codeobj_entry_id(const hsad_codeobj_t *co) {
  return co && co->entry_id ? co->entry_id : "";
}

bool hsad_codeobj_is_hip(const hsad_codeobj_t *co) { return co && co->from_hip; }

const hsad_codeobj_t *hsad_kernel_codeobj(const hsad_kernel_t *kernel) {
  return kernel ? kernel->owner : NULL;
}

uint32_t hsad_kernel_index(const hsad_kernel_t *kernel) {
  return kernel ? (uint32_t)(kernel - kernel->owner->kernels) : UINT32_MAX;
}

uint64_t hsad_kernel_descriptor_offset(const hsad_kernel_t *kernel) {
  return kernel && kernel->owner->info.image ? kernel->descriptor_offset : UINT64_MAX;
}

const hsad_kernel_info_t *hsad_kernel_info(const hsad_kernel_t *kernel) {
  return kernel ? &kernel->info : NULL;
}

hsad_status_t hsad_codeobj_kernel_find(const hsad_codeobj_t *co, const char *name,
                                       const hsad_kernel_t **out_kernel) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_codeobj_kernel_find", {co, "codeobj"}, {name, "name"},
                                   {out_kernel, "out_kernel"});
  if (ns) return ns;
  *out_kernel = NULL;
  size_t n = strlen(name);
  bool sym = n > 3 && !strcmp(name + n - 3, ".kd");
  if (co->info.kernel_count) {
    for (int t = sym ? 1 : 0; t >= 0; t--) { /* ".kd": symbol table first, then names */
      const uint32_t *tab = t ? co->by_symbol : co->by_name;
      for (uint32_t i = co_hash_str(name, n) & co->hash_mask;; i = (i + 1) & co->hash_mask) {
        uint32_t slot = tab[i];
        if (!slot) break;
        const hsad_kernel_info_t *ki = &co->kernels[slot - 1].info;
        if (!strcmp(t ? ki->symbol : ki->name, name)) {
          *out_kernel = &co->kernels[slot - 1];
          return HSAD_OK;
        }
      }
    }
  }
  return hsad_fail(HSAD_ERR_KERNEL_NOT_FOUND, "%s: no kernel named '%s' (%u kernels)",
                   co->info.name, name, co->info.kernel_count);
}
