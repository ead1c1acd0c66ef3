/* test_codeobj_util.h - helpers shared by tests/test_codeobj_*.c (header-only, test code).
 * Fixtures are built by codeobj/module.mk into CO_FIXDIR from tests/data/codeobj. */
#ifndef TEST_CODEOBJ_UTIL_H
#define TEST_CODEOBJ_UTIL_H

#include "codeobj/hsad_codeobj.h"

#include <criterion/criterion.h>
#include <gelf.h>
#include <libelf.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CO_FIXDIR
#error "CO_FIXDIR must be defined by the build"
#endif
#define FIX(name) CO_FIXDIR "/" name

static inline void *co_test_read(const char *path, size_t *out_size) {
  FILE *f = fopen(path, "rb");
  cr_assert(f, "cannot open fixture %s (build it with make)", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void *p = malloc(n ? (size_t)n : 1);
  cr_assert(p);
  cr_assert_eq(fread(p, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *out_size = (size_t)n;
  return p;
}

static inline hsad_codeobj_t *co_test_load(const char *path) {
  hsad_codeobj_t *co = NULL;
  hsad_status_t st = hsad_codeobj_load_file(path, NULL, &co);
  cr_assert_eq(st, HSAD_OK, "load %s: %s: %s", path, hsad_status_name(st), hsad_last_error());
  return co;
}

static inline const hsad_kernel_t *co_test_kernel(const hsad_codeobj_t *co, const char *name) {
  const hsad_kernel_t *k = NULL;
  hsad_status_t st = hsad_codeobj_kernel_find(co, name, &k);
  cr_assert_eq(st, HSAD_OK, "find %s: %s", name, hsad_last_error());
  return k;
}

/* File offset and size of the NT_AMDGPU_METADATA payload in an AMDGPU ELF (via libelf). */
static inline void co_test_find_note(void *buf, size_t size, size_t *out_hdr_off,
                                     size_t *out_desc_off, size_t *out_desc_size) {
  elf_version(EV_CURRENT);
  Elf *e = elf_memory(buf, size);
  cr_assert(e);
  Elf_Scn *scn = NULL;
  while ((scn = elf_nextscn(e, scn))) {
    GElf_Shdr sh;
    gelf_getshdr(scn, &sh);
    if (sh.sh_type != SHT_NOTE) continue;
    Elf_Data *d = elf_rawdata(scn, NULL);
    size_t off = 0, next, noff, doff;
    GElf_Nhdr nh;
    while ((next = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
      if (nh.n_type == 32) {
        *out_hdr_off = sh.sh_offset + off;
        *out_desc_off = sh.sh_offset + doff;
        *out_desc_size = nh.n_descsz;
        elf_end(e);
        return;
      }
      off = next;
    }
  }
  elf_end(e);
  cr_assert_fail("no NT_AMDGPU_METADATA note");
}

/* Re-encodes the metadata of `buf` with msgpack-c, calling `edit` for every value with its path
 * ("amdhsa.kernels/0/.args/3/.value_kind"); `edit` packs a replacement and returns 1, or 0 to
 * keep the value. Map keys pass through `rename` (may be NULL) first. The new payload must not be
 * longer than the old (the test asserts); the note's n_descsz is set to the new length. */
typedef int (*co_test_edit_fn)(const char *path, const msgpack_object *o, msgpack_packer *pk,
                               void *ctx);
typedef const char *(*co_test_rename_fn)(const char *path, const char *key, void *ctx);

typedef struct {
  co_test_edit_fn edit;
  co_test_rename_fn rename;
  void *ctx;
} co_test_editor_t;

static inline void co_test_pack(const co_test_editor_t *ed, const char *path,
                                const msgpack_object *o, msgpack_packer *pk) {
  if (ed->edit && ed->edit(path, o, pk, ed->ctx)) return;
  char sub[512];
  if (o->type == MSGPACK_OBJECT_MAP) {
    msgpack_pack_map(pk, o->via.map.size);
    for (uint32_t i = 0; i < o->via.map.size; i++) {
      const msgpack_object *k = &o->via.map.ptr[i].key;
      char key[128] = "";
      if (k->type == MSGPACK_OBJECT_STR)
        snprintf(key, sizeof key, "%.*s", (int)k->via.str.size, k->via.str.ptr);
      snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "/" : "", key);
      const char *nk = ed->rename ? ed->rename(sub, key, ed->ctx) : NULL;
      if (nk) {
        msgpack_pack_str(pk, strlen(nk));
        msgpack_pack_str_body(pk, nk, strlen(nk));
      } else {
        msgpack_pack_object(pk, *k);
      }
      co_test_pack(ed, sub, &o->via.map.ptr[i].val, pk);
    }
  } else if (o->type == MSGPACK_OBJECT_ARRAY) {
    msgpack_pack_array(pk, o->via.array.size);
    for (uint32_t i = 0; i < o->via.array.size; i++) {
      snprintf(sub, sizeof sub, "%s/%u", path, i);
      co_test_pack(ed, sub, &o->via.array.ptr[i], pk);
    }
  } else {
    msgpack_pack_object(pk, *o);
  }
}

/* Returns a malloc'd copy of the file at `path` with its metadata rewritten by `ed`. The new
 * note (same owner and type) is appended at the end of the file and the note section's header
 * is pointed at it, so the payload may grow. */
static inline void *co_test_rewrite(const char *path, const co_test_editor_t *ed,
                                    size_t *out_size) {
  size_t size, hdr, doff, dsize;
  unsigned char *buf = co_test_read(path, &size);
  co_test_find_note(buf, size, &hdr, &doff, &dsize);
  msgpack_unpacked u;
  msgpack_unpacked_init(&u);
  size_t off = 0;
  cr_assert_eq(msgpack_unpack_next(&u, (const char *)buf + doff, dsize, &off),
               MSGPACK_UNPACK_SUCCESS);
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  co_test_pack(ed, "", &u.data, &pk);
  /* which section holds the note */
  Elf64_Ehdr eh;
  memcpy(&eh, buf, sizeof eh);
  int sec = -1;
  for (int i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, buf + eh.e_shoff + (size_t)i * sizeof sh, sizeof sh);
    if (sh.sh_type == SHT_NOTE && hdr >= sh.sh_offset && hdr < sh.sh_offset + sh.sh_size)
      sec = i;
  }
  cr_assert_geq(sec, 0);
  size_t at = (size + 3) & ~(size_t)3;
  size_t body = (sb.size + 3) & ~(size_t)3;
  size_t nsize = at + 12 + 8 + body;
  unsigned char *out = calloc(1, nsize);
  cr_assert(out);
  memcpy(out, buf, size);
  uint32_t nh[3] = {7, (uint32_t)sb.size, 32};
  memcpy(out + at, nh, 12);
  memcpy(out + at + 12, "AMDGPU\0", 8);
  memcpy(out + at + 20, sb.data, sb.size);
  Elf64_Shdr sh;
  size_t shpos = eh.e_shoff + (size_t)sec * sizeof sh;
  memcpy(&sh, out + shpos, sizeof sh);
  sh.sh_offset = at;
  sh.sh_size = 20 + body;
  memcpy(out + shpos, &sh, sizeof sh);
  msgpack_sbuffer_destroy(&sb);
  msgpack_unpacked_destroy(&u);
  free(buf);
  *out_size = nsize;
  return out;
}

/* Asserts that loading `buf` fails with `want` and a message that contains each needle. */
#define co_test_expect_fail(buf, size, label, want, ...)                                        \
  do {                                                                                         \
    hsad_codeobj_t *co_ = NULL;                                                                \
    hsad_clear_error();                                                                        \
    hsad_status_t st_ = hsad_codeobj_load_memory((buf), (size), (label), &co_);                \
    cr_assert_eq(st_, (want), "got %s (%s), want %s", hsad_status_name(st_),                   \
                 hsad_last_error(), hsad_status_name(want));                                   \
    cr_assert_null(co_);                                                                       \
    const char *needles_[] = {__VA_ARGS__};                                                    \
    for (size_t i_ = 0; i_ < sizeof needles_ / sizeof needles_[0]; i_++)                       \
      cr_assert(strstr(hsad_last_error(), needles_[i_]), "message '%s' lacks '%s'",            \
                hsad_last_error(), needles_[i_]);                                              \
  } while (0)

#endif
