/* bundle.c - containers: a plain code object, a clang offload bundle (plain or compressed), or a
 * host ELF whose .hip_fatbin section holds one or more bundles back to back; entry selection by
 * target ID.
 * Bundle layout (clang's ClangOffloadBundler, uncompressed format): the 24-byte magic
 * "__CLANG_OFFLOAD_BUNDLE__", u64 entry count, then per entry u64 offset (from the bundle start),
 * u64 size, u64 id length, id bytes ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"); little-endian.
 * Compressed bundles (clang's CompressedOffloadBundle, the ROCm 6+ default), little-endian:
 * "CCOB", u16 version, u16 method (0 zlib, 1 zstd: llvm::compression::Format), then
 *   version 2: u32 total size (header + payload), u32 uncompressed size, u64 hash (24 bytes)
 *   version 3: u64 total size, u64 uncompressed size, u64 hash (32 bytes)
 * and the payload: a zlib stream or a zstd frame holding one uncompressed bundle. The hash
 * (low 64 bits of the MD5 of the uncompressed bundle) is informational and not checked; the
 * uncompressed size is checked against what the payload can expand to before allocating, and
 * against what it did expand to after. Version 1 has no total size, so it cannot be walked
 * past inside a .hip_fatbin section: refused. Several bundles in one section are walked by
 * their sizes (the total size of a compressed one, the end of the last entry of a plain one),
 * so magic bytes inside a payload are never taken for a bundle. */
#define _GNU_SOURCE
#include "codeobj/codeobj_internal.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_findDecompressedSize: exported by libzstd.so 1.4+ */
#include <zstd.h>

#define CO_BUNDLE_MAGIC "__CLANG_OFFLOAD_BUNDLE__"
enum { CO_BUNDLE_MAGIC_LEN = 24 };
#define CO_CCOB_MAGIC "CCOB"
enum { CO_CCOB_MAGIC_LEN = 4 };
/* deflate expands at most 1032:1 (zlib's FAQ / zlib.h deflateBound reasoning); a larger
 * declared size is a corrupt header, refused before allocating. */
enum { CO_ZLIB_MAX_RATIO = 1032 };
#define CO_CCOB_MAX_UNCOMPRESSED (4ull << 30) /* 4 GiB: larger is a corrupt header */

/* What a bundle came out of (NULL for a plain bundle). */
typedef struct co_ccob {
  uint64_t offset;       /* of the "CCOB" header in the input */
  uint32_t version;      /* 2 or 3 */
  hsad_compression_t method;
} co_ccob_t;

struct hsad_codeobj_container {
  const char *name;
  hsad_container_kind_t kind;
  uint8_t *data;
  size_t size;
  hsad_codeobj_entry_t *entries;
  size_t count, cap;
  uint8_t **blobs;       /* decompressed bundles (malloc'd), entries point into them */
  size_t nblobs;
  co_arena_t arena;
};

static bool co_fits(uint64_t off, uint64_t len, uint64_t limit) {
  return off <= limit && len <= limit - off;
}

static uint64_t co_le64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static hsad_status_t co_add_entry(hsad_codeobj_container_t *c, const uint8_t *buf,
                                  const char *id, size_t id_len, const char *target,
                                  size_t target_len, uint64_t off, uint64_t size, uint32_t bundle,
                                  const co_ccob_t *z) {
  if (c->count == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 8;
    hsad_codeobj_entry_t *e = realloc(c->entries, cap * sizeof *e);
    if (!e) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", c->name);
    c->entries = e;
    c->cap = cap;
  }
  hsad_codeobj_entry_t *e = &c->entries[c->count];
  e->entry_id = co_arena_strndup(&c->arena, id, id_len);
  e->target = co_arena_strndup(&c->arena, target, target_len);
  if (!e->entry_id || !e->target) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory",
                                                   c->name);
  e->data = buf + off;
  e->size = (size_t)size;
  e->offset = off;
  e->bundle_index = bundle;
  e->compression = z ? z->method : HSAD_COMPRESSION_NONE;
  e->compressed_version = z ? z->version : 0;
  e->compressed_offset = z ? z->offset : 0;
  c->count++;
  return HSAD_OK;
}

/* Parses the bundle at buf + base (bytes up to buf + limit available); *out_end: end of its
 * last byte. buf is the input, or a decompressed bundle (z says which compressed one). */
static hsad_status_t co_parse_bundle(hsad_codeobj_container_t *c, const uint8_t *buf,
                                     uint64_t base, uint64_t limit, uint32_t bundle,
                                     const co_ccob_t *z, uint64_t *out_end) {
  const uint8_t *b = buf + base;
  uint64_t avail = limit - base;
  if (avail < CO_BUNDLE_MAGIC_LEN + 8)
    return hsad_fail(HSAD_ERR_TRUNCATED,
                     "%s: truncated: offload bundle %u at offset %llu has %llu bytes, its header "
                     "needs 32",
                     c->name, bundle, (unsigned long long)base, (unsigned long long)avail);
  uint64_t n = co_le64(b + CO_BUNDLE_MAGIC_LEN);
  if (n > (avail - 32) / 24)
    return hsad_fail(HSAD_ERR_TRUNCATED,
                     "%s: truncated: offload bundle %u at offset %llu declares %llu entries, more "
                     "than its %llu bytes can hold",
                     c->name, bundle, (unsigned long long)base, (unsigned long long)n,
                     (unsigned long long)avail);
  uint64_t p = 32, end = 32;
  for (uint64_t i = 0; i < n; i++) {
    if (!co_fits(p, 24, avail))
      return hsad_fail(HSAD_ERR_TRUNCATED,
                       "%s: truncated: offload bundle %u entry %llu header runs past the end",
                       c->name, bundle, (unsigned long long)i);
    uint64_t off = co_le64(b + p), size = co_le64(b + p + 8), idlen = co_le64(b + p + 16);
    p += 24;
    if (!co_fits(p, idlen, avail))
      return hsad_fail(HSAD_ERR_TRUNCATED,
                       "%s: truncated: offload bundle %u entry %llu id (%llu bytes) runs past "
                       "the end",
                       c->name, bundle, (unsigned long long)i, (unsigned long long)idlen);
    const char *id = (const char *)b + p;
    p += idlen;
    if (!co_fits(off, size, avail))
      return hsad_fail(HSAD_ERR_TRUNCATED,
                       "%s: truncated: offload bundle %u entry %llu '%.*s' (offset %llu, %llu "
                       "bytes) runs past the end (%llu bytes)",
                       c->name, bundle, (unsigned long long)i, (int)(idlen > 80 ? 80 : idlen), id,
                       (unsigned long long)off, (unsigned long long)size,
                       (unsigned long long)avail);
    if (off + size > end) end = off + size;
    if (p > end) end = p;
    /* keep amdgcn entries: "<kind>-amdgcn-amd-amdhsa-[-]<target id>" */
    static const char triple[] = "amdgcn-amd-amdhsa-";
    const char *t = NULL;
    for (uint64_t j = 0; j + sizeof triple - 1 <= idlen; j++)
      if (!memcmp(id + j, triple, sizeof triple - 1)) {
        t = id + j + sizeof triple - 1;
        break;
      }
    if (!t || size == 0) continue;
    /* The environment field: empty ("amdhsa--gfx90a") or a word such as "unknown" that newer
     * clangs write ("amdhsa-unknown-gfx90a"); both name the same target. A target ID holds
     * no '-' before its first ':' (features end in '+'/'-'), so a word ending in '-' with no
     * ':' before it is the environment. */
    const char *id_end = id + idlen;
    if (t < id_end && *t == '-') {
      t++;
    } else {
      const char *dash = memchr(t, '-', (size_t)(id_end - t));
      if (dash && !memchr(t, ':', (size_t)(dash - t)) && dash + 1 < id_end) t = dash + 1;
    }
    hsad_status_t st = co_add_entry(c, buf, id, (size_t)idlen, t, (size_t)(id + idlen - t),
                                    base + off, size, bundle, z);
    if (st) return st;
  }
  *out_end = base + end;
  return HSAD_OK;
}

static uint16_t co_le16(const uint8_t *p) {
  uint16_t v;
  memcpy(&v, p, 2);
  return v;
}
static uint32_t co_le32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* Decompresses the compressed bundle at `at` (input bytes up to `limit`) and parses the bundle
 * inside; *out_end: the end of its payload (at + total size). */
static hsad_status_t co_parse_ccob(hsad_codeobj_container_t *c, uint64_t at, uint64_t limit,
                                   uint32_t bundle, uint64_t *out_end) {
  const uint8_t *h = c->data + at;
  uint64_t avail = limit - at;
  if (avail < 8)
    return hsad_fail(HSAD_ERR_TRUNCATED,
                     "%s: truncated: compressed offload bundle %u at offset %llu has %llu bytes, "
                     "its header needs 24 (version 2) or 32 (version 3)",
                     c->name, bundle, (unsigned long long)at, (unsigned long long)avail);
  uint32_t version = co_le16(h + 4), method = co_le16(h + 6);
  if (version != 2 && version != 3)
    return hsad_fail(HSAD_ERR_UNSUPPORTED,
                     "%s: compressed offload bundle %u at offset %llu has format version %u; "
                     "supported are 2 and 3 (version 1 has no total size)",
                     c->name, bundle, (unsigned long long)at, version);
  uint64_t hdr = version == 2 ? 24 : 32;
  if (avail < hdr)
    return hsad_fail(HSAD_ERR_TRUNCATED,
                     "%s: truncated: compressed offload bundle %u at offset %llu has %llu bytes, "
                     "its version %u header needs %llu",
                     c->name, bundle, (unsigned long long)at, (unsigned long long)avail, version,
                     (unsigned long long)hdr);
  uint64_t total = version == 2 ? co_le32(h + 8) : co_le64(h + 8);
  uint64_t usize = version == 2 ? co_le32(h + 12) : co_le64(h + 16);
  if (method != 0 && method != 1)
    return hsad_fail(HSAD_ERR_UNSUPPORTED,
                     "%s: compressed offload bundle %u at offset %llu uses compression method "
                     "%u; known are 0 (zlib) and 1 (zstd)",
                     c->name, bundle, (unsigned long long)at, method);
  if (total <= hdr || total > avail)
    return hsad_fail(HSAD_ERR_TRUNCATED,
                     "%s: truncated: compressed offload bundle %u at offset %llu declares %llu "
                     "bytes (header and payload), %llu are there",
                     c->name, bundle, (unsigned long long)at, (unsigned long long)total,
                     (unsigned long long)avail);
  const uint8_t *payload = h + hdr;
  uint64_t csize = total - hdr;
  const char *mname = method == 0 ? "zlib" : "zstd";
  /* the declared size, checked before allocating it */
  uint64_t most = CO_CCOB_MAX_UNCOMPRESSED;
  if (method == 0 && csize < most / CO_ZLIB_MAX_RATIO) most = csize * CO_ZLIB_MAX_RATIO;
  if (method == 1) {
    /* every frame of the payload, skippable frames (RFC 8878 3.1.2) holding nothing: LLVM
     * decompresses the payload with one ZSTD_decompress, which reads them all */
    unsigned long long fcs = ZSTD_findDecompressedSize(payload, (size_t)csize);
    if (fcs == ZSTD_CONTENTSIZE_ERROR)
      return hsad_fail(HSAD_ERR_TRUNCATED,
                       "%s: compressed offload bundle %u at offset %llu: its %llu-byte payload "
                       "is not a sequence of zstd frames",
                       c->name, bundle, (unsigned long long)at, (unsigned long long)csize);
    if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != usize)
      return hsad_fail(HSAD_ERR_TRUNCATED,
                       "%s: compressed offload bundle %u at offset %llu declares %llu "
                       "uncompressed bytes, its zstd frames hold %llu",
                       c->name, bundle, (unsigned long long)at, (unsigned long long)usize, fcs);
  }
  if (usize < CO_BUNDLE_MAGIC_LEN + 8 || usize > most)
    return hsad_fail(HSAD_ERR_TRUNCATED,
                     "%s: compressed offload bundle %u at offset %llu declares %llu uncompressed "
                     "bytes; its %llu-byte %s payload can hold %llu to %llu",
                     c->name, bundle, (unsigned long long)at, (unsigned long long)usize,
                     (unsigned long long)csize, mname, (unsigned long long)CO_BUNDLE_MAGIC_LEN + 8,
                     (unsigned long long)most);
  if (c->nblobs % 8 == 0) {
    uint8_t **nb = realloc(c->blobs, (c->nblobs + 8) * sizeof *nb);
    if (!nb) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", c->name);
    c->blobs = nb;
  }
  uint8_t *out = malloc((size_t)usize);
  if (!out)
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY,
                     "%s: out of memory decompressing bundle %u (%llu bytes)", c->name, bundle,
                     (unsigned long long)usize);
  c->blobs[c->nblobs++] = out;
  uint64_t got = 0;
  const char *why = NULL;
  char zbuf[96];
  if (method == 0) {
    uLongf dlen = (uLongf)usize;
    int zr = uncompress(out, &dlen, payload, (uLong)csize);
    got = dlen;
    if (zr == Z_BUF_ERROR) why = "it decompresses to more bytes than declared";
    else if (zr != Z_OK) {
      snprintf(zbuf, sizeof zbuf, "zlib: %s", zr == Z_DATA_ERROR ? "corrupt or incomplete stream"
                                                                : zError(zr));
      why = zbuf;
    }
  } else {
    size_t zr = ZSTD_decompress(out, (size_t)usize, payload, (size_t)csize);
    if (ZSTD_isError(zr)) {
      snprintf(zbuf, sizeof zbuf, "zstd: %s", ZSTD_getErrorName(zr));
      why = zbuf;
    } else {
      got = zr;
    }
  }
  if (!why && got != usize) why = "it decompresses to fewer bytes than declared";
  if (why)
    return hsad_fail(HSAD_ERR_TRUNCATED,
                     "%s: compressed offload bundle %u at offset %llu (%s, %llu uncompressed "
                     "bytes declared): %s",
                     c->name, bundle, (unsigned long long)at, mname, (unsigned long long)usize,
                     why);
  if (memcmp(out, CO_BUNDLE_MAGIC, CO_BUNDLE_MAGIC_LEN))
    return hsad_fail(HSAD_ERR_NOT_ELF,
                     "%s: compressed offload bundle %u at offset %llu decompresses to no offload "
                     "bundle (no __CLANG_OFFLOAD_BUNDLE__ magic)",
                     c->name, bundle, (unsigned long long)at);
  co_ccob_t z = {.offset = at, .version = version,
                 .method = method == 0 ? HSAD_COMPRESSION_ZLIB : HSAD_COMPRESSION_ZSTD};
  uint64_t end;
  hsad_status_t st = co_parse_bundle(c, out, 0, usize, bundle, &z, &end);
  if (st) return st;
  *out_end = at + total;
  return HSAD_OK;
}

/* Every bundle, plain or compressed, in input bytes [pos, limit): the next magic, then past the
 * bundle by its own sizes. Zero padding between bundles (section alignment) is skipped. */
static hsad_status_t co_walk_bundles(hsad_codeobj_container_t *c, uint64_t pos, uint64_t limit) {
  uint32_t bundle = 0;
  while (pos < limit) {
    const uint8_t *m = memmem(c->data + pos, (size_t)(limit - pos), CO_BUNDLE_MAGIC,
                              CO_BUNDLE_MAGIC_LEN);
    const uint8_t *z = memmem(c->data + pos, (size_t)(m ? (uint64_t)(m - c->data) - pos
                                                        : limit - pos),
                              CO_CCOB_MAGIC, CO_CCOB_MAGIC_LEN);
    if (!m && !z) break;
    uint64_t at = (uint64_t)((z ? z : m) - c->data), end;
    hsad_status_t st = z ? co_parse_ccob(c, at, limit, bundle++, &end)
                         : co_parse_bundle(c, c->data, at, limit, bundle++, NULL, &end);
    if (st) return st;
    pos = end > at ? end : at + 1;
  }
  return HSAD_OK;
}

static pthread_once_t co_host_once = PTHREAD_ONCE_INIT;
static void co_host_init(void) { elf_version(EV_CURRENT); }

/* Host ELF: find .hip_fatbin and parse every bundle in it. */
static hsad_status_t co_parse_host(hsad_codeobj_container_t *c) {
  pthread_once(&co_host_once, co_host_init);
  if (c->size < EI_NIDENT || c->data[EI_CLASS] != ELFCLASS64)
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: host ELF that is not ELF64 (class %u)", c->name,
                     c->size > EI_CLASS ? c->data[EI_CLASS] : 0);
  if (c->size < sizeof(Elf64_Ehdr))
    return hsad_fail(HSAD_ERR_TRUNCATED, "%s: truncated: %zu bytes, shorter than an ELF64 header",
                     c->name, c->size);
  Elf64_Ehdr eh;
  memcpy(&eh, c->data, sizeof eh);
  if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
      !co_fits(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), c->size) ||
      eh.e_shstrndx >= eh.e_shnum)
    return hsad_fail(HSAD_ERR_TRUNCATED,
                     "%s: truncated or malformed host ELF: section header table (offset %llu, %u "
                     "entries) not within the %zu-byte file",
                     c->name, (unsigned long long)eh.e_shoff, eh.e_shnum, c->size);
  Elf64_Shdr strsh;
  memcpy(&strsh, c->data + eh.e_shoff + (uint64_t)eh.e_shstrndx * sizeof strsh, sizeof strsh);
  if (!co_fits(strsh.sh_offset, strsh.sh_size, c->size))
    return hsad_fail(HSAD_ERR_TRUNCATED, "%s: truncated: section name table runs past the end",
                     c->name);
  Elf *elf = elf_memory((char *)c->data, c->size);
  if (!elf) return hsad_fail(HSAD_ERR_BAD_ELF, "%s: libelf: %s", c->name, elf_errmsg(-1));
  hsad_status_t st = HSAD_OK;
  bool found = false;
  Elf_Scn *scn = NULL;
  while ((scn = elf_nextscn(elf, scn))) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh)) continue;
    const char *sn = elf_strptr(elf, eh.e_shstrndx, sh.sh_name);
    if (!sn || strcmp(sn, ".hip_fatbin")) continue;
    found = true;
    if (sh.sh_type == SHT_NOBITS || !co_fits(sh.sh_offset, sh.sh_size, c->size)) {
      st = hsad_fail(HSAD_ERR_TRUNCATED,
                     "%s: truncated: .hip_fatbin (offset %llu, %llu bytes) runs past the end of "
                     "the %zu-byte file",
                     c->name, (unsigned long long)sh.sh_offset, (unsigned long long)sh.sh_size,
                     c->size);
      break;
    }
    st = co_walk_bundles(c, sh.sh_offset, sh.sh_offset + sh.sh_size);
    break;
  }
  elf_end(elf);
  if (st) return st;
  if (!found)
    return hsad_fail(HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND,
                     "%s: host ELF (e_machine %u) without a .hip_fatbin section: no GPU code "
                     "objects in it",
                     c->name, eh.e_machine);
  c->kind = HSAD_CONTAINER_HOST_FATBIN;
  return HSAD_OK;
}

void hsad_codeobj_container_destroy(hsad_codeobj_container_t *c) {
  if (!c) return;
  free(c->data);
  free(c->entries);
  for (size_t i = 0; i < c->nblobs; i++) free(c->blobs[i]);
  free(c->blobs);
  co_arena_free(&c->arena);
  free(c);
}

/* What an NVIDIA file given for an AMD code object is (a cubin: ELF e_machine EM_CUDA, 190; a
 * fatbin: CUDA's fatbinary magic 0xBA55ED50 little-endian; PTX: ".version" and ".target sm_"
 * within its first 4 KiB), or NULL. Only for the message: these fail either way. */
static const char *co_nvidia_kind(const uint8_t *data, size_t size, uint16_t elf_machine) {
  if (elf_machine == 190) return "an NVIDIA cubin (ELF e_machine 190, EM_CUDA)";
  static const uint8_t fatbin[4] = {0x50, 0xed, 0x55, 0xba};
  if (size >= 4 && !memcmp(data, fatbin, 4)) return "an NVIDIA fatbin (magic 0xba55ed50)";
  size_t head = size < 4096 ? size : 4096;
  if (memmem(data, head, ".version", 8) && memmem(data, head, ".target sm_", 11))
    return "NVIDIA PTX text (.version, .target sm_...)";
  return NULL;
}

/* Takes ownership of `data` (malloc'd). */
static hsad_status_t co_container_init(uint8_t *data, size_t size, const char *label,
                                       hsad_codeobj_container_t **out) {
  hsad_codeobj_container_t *c = calloc(1, sizeof *c);
  if (!c) {
    free(data);
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
  }
  c->data = data;
  c->size = size;
  c->name = co_arena_strndup(&c->arena, label, strlen(label));
  hsad_status_t st = HSAD_OK;
  if (!c->name) {
    st = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
    goto fail;
  }
  if ((size >= CO_BUNDLE_MAGIC_LEN && !memcmp(data, CO_BUNDLE_MAGIC, CO_BUNDLE_MAGIC_LEN)) ||
      (size >= CO_CCOB_MAGIC_LEN && !memcmp(data, CO_CCOB_MAGIC, CO_CCOB_MAGIC_LEN))) {
    /* a bundle file, compressed or not; several back to back (a .hip_fatbin dump) as well */
    c->kind = HSAD_CONTAINER_BUNDLE;
    st = co_walk_bundles(c, 0, size);
  } else if (size >= 4 && !memcmp(data, "\177ELF", 4)) {
    uint16_t machine = 0;
    if (size >= 20) memcpy(&machine, data + 18, 2);
    if (machine == 224) { /* EM_AMDGPU: a plain code object */
      c->kind = HSAD_CONTAINER_CODE_OBJECT;
      char target[64] = "";
      hsad_target_id_t id;
      if (size >= sizeof(Elf64_Ehdr)) {
        uint32_t flags;
        memcpy(&flags, data + 48, 4);
        uint32_t version = data[EI_ABIVERSION] + 2u;
        if (co_target_from_flags(c->name, flags, version, &id) == HSAD_OK)
          hsad_target_id_format(&id, target, sizeof target);
      }
      hsad_clear_error();
      st = co_add_entry(c, c->data, "", 0, target, strlen(target), 0, size, 0, NULL);
    } else if (co_nvidia_kind(data, size, machine)) {
      st = hsad_fail(HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND, "%s: %s, not an AMD code object: an "
                     "NVIDIA device loads it", c->name, co_nvidia_kind(data, size, machine));
    } else {
      st = co_parse_host(c);
    }
  } else if (co_nvidia_kind(data, size, 0)) {
    st = hsad_fail(HSAD_ERR_NOT_ELF, "%s: %s, not an AMD code object: an NVIDIA device loads it",
                   c->name, co_nvidia_kind(data, size, 0));
  } else {
    st = hsad_fail(HSAD_ERR_NOT_ELF,
                   "%s: neither an ELF file nor a clang offload bundle (%zu bytes, no \\177ELF or "
                   "__CLANG_OFFLOAD_BUNDLE__ magic)",
                   c->name, size);
  }
  if (st) goto fail;
  if (c->count == 0) {
    st = hsad_fail(HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND,
                   "%s: no amdgcn code object entry in the %s", c->name,
                   c->kind == HSAD_CONTAINER_BUNDLE ? "offload bundle" : ".hip_fatbin section");
    goto fail;
  }
  *out = c;
  return HSAD_OK;
fail:
  hsad_codeobj_container_destroy(c);
  return st;
}

hsad_status_t hsad_codeobj_container_open_memory(const void *data, size_t size,
                                                 const char *label,
                                                 hsad_codeobj_container_t **out) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_codeobj_container_open_memory",
                                   {out, "out_container"});
  if (ns) return ns;
  if (!data && size)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_codeobj_container_open_memory: NULL data "
                     "with size %zu", size);
  *out = NULL;
  uint8_t *copy = malloc(size ? size : 1);
  if (!copy) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "out of memory (%zu bytes)", size);
  if (size) memcpy(copy, data, size);
  return co_container_init(copy, size, label ? label : "<memory>", out);
}

hsad_status_t hsad_codeobj_container_open_file(const char *path,
                                               hsad_codeobj_container_t **out) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_codeobj_container_open_file", {path, "path"},
                                   {out, "out_container"});
  if (ns) return ns;
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return hsad_fail(HSAD_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0) {
    int err = errno;
    fclose(f);
    return hsad_fail(HSAD_ERR_IO, "%s: cannot stat: %s", path, strerror(err));
  }
  if (!S_ISREG(sb.st_mode)) {
    fclose(f);
    return hsad_fail(HSAD_ERR_IO, "%s: not a regular file", path);
  }
  size_t size = (size_t)sb.st_size;
  uint8_t *data = malloc(size ? size : 1);
  if (!data) {
    fclose(f);
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu bytes)", path, size);
  }
  size_t got = size ? fread(data, 1, size, f) : 0;
  int err = ferror(f) ? errno : 0;
  fclose(f);
  if (got != size) {
    free(data);
    return hsad_fail(HSAD_ERR_IO, "%s: read %zu of %zu bytes%s%s", path, got, size,
                     err ? ": " : "", err ? strerror(err) : "");
  }
  return co_container_init(data, size, path, out);
}

hsad_container_kind_t hsad_codeobj_container_kind(const hsad_codeobj_container_t *c) {
  return c->kind;
}
size_t hsad_codeobj_container_entry_count(const hsad_codeobj_container_t *c) {
  return c ? c->count : 0;
}
const hsad_codeobj_entry_t *hsad_codeobj_container_entry(const hsad_codeobj_container_t *c,
                                                         size_t i) {
  return c && i < c->count ? &c->entries[i] : NULL;
}

/* Best compatible entry among those of `bundle` (all bundles when bundle < 0). */
static hsad_status_t co_select(const hsad_codeobj_container_t *c, long bundle,
                               const char *agent_isa, size_t *out_index) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_codeobj_container_select", {c, "container"},
                                   {out_index, "out_index"});
  if (ns) return ns;
  hsad_target_id_t agent = {0};
  if (agent_isa) {
    hsad_status_t st = hsad_target_id_parse(agent_isa, &agent);
    if (st) return st;
  }
  int best = -1, best_score = -1;
  for (size_t i = 0; i < c->count; i++) {
    if (bundle >= 0 && c->entries[i].bundle_index != (uint32_t)bundle) continue;
    if (!agent_isa) {
      best = (int)i;
      break;
    }
    hsad_target_id_t t;
    if (hsad_target_id_parse(c->entries[i].target, &t) != HSAD_OK) continue;
    if (!hsad_target_id_compatible(&t, &agent)) continue;
    int score = 0;
    bool xs = t.xnack == HSAD_FEATURE_ON || t.xnack == HSAD_FEATURE_OFF;
    bool ss = t.sramecc == HSAD_FEATURE_ON || t.sramecc == HSAD_FEATURE_OFF;
    score += xs && t.xnack == agent.xnack;
    score += ss && t.sramecc == agent.sramecc;
    if (score > best_score) {
      best = (int)i;
      best_score = score;
    }
  }
  hsad_clear_error();
  if (best < 0) {
    char list[512] = "";
    size_t used = 0;
    for (size_t i = 0; i < c->count && used < sizeof list - 1; i++) {
      if (bundle >= 0 && c->entries[i].bundle_index != (uint32_t)bundle) continue;
      int w = snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "",
                       c->entries[i].target[0] ? c->entries[i].target : "?");
      if (w < 0) break;
      used += (size_t)w;
      if (used >= sizeof list) used = sizeof list - 1;
    }
    if (bundle >= 0)
      return hsad_fail(HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND,
                       "%s: no code object for %s in bundle %ld: it has %s", c->name,
                       agent_isa ? agent_isa : "any target", bundle, used ? list : "no entries");
    return hsad_fail(HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND,
                     "%s: no code object for %s: the file has %s", c->name, agent_isa, list);
  }
  *out_index = (size_t)best;
  return HSAD_OK;
}

hsad_status_t hsad_codeobj_container_select(const hsad_codeobj_container_t *c,
                                            const char *agent_isa, size_t *out_index) {
  return co_select(c, -1, agent_isa, out_index);
}

uint32_t hsad_codeobj_container_bundle_count(const hsad_codeobj_container_t *c) {
  if (!c || c->kind == HSAD_CONTAINER_CODE_OBJECT || !c->count) return 0;
  return c->entries[c->count - 1].bundle_index + 1;
}

hsad_status_t hsad_codeobj_container_select_in_bundle(const hsad_codeobj_container_t *c,
                                                      uint32_t bundle_index,
                                                      const char *agent_isa,
                                                      size_t *out_index) {
  return co_select(c, (long)bundle_index, agent_isa, out_index);
}

hsad_status_t hsad_codeobj_load_entry(const hsad_codeobj_container_t *c, size_t i,
                                      hsad_codeobj_t **out_codeobj) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_codeobj_load_entry", {c, "container"},
                                   {out_codeobj, "out_codeobj"});
  if (ns) return ns;
  if (i >= c->count)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_codeobj_load_entry: entry %zu out of range "
                     "(%zu entries)", i, c->count);
  const hsad_codeobj_entry_t *e = &c->entries[i];
  if (c->kind == HSAD_CONTAINER_CODE_OBJECT)
    return hsad_codeobj_load_memory(e->data, e->size, c->name, out_codeobj);
  char label[1024];
  if (c->kind == HSAD_CONTAINER_HOST_FATBIN)
    snprintf(label, sizeof label, "%s[bundle %u: %s]", c->name, e->bundle_index, e->entry_id);
  else
    snprintf(label, sizeof label, "%s[%s]", c->name, e->entry_id);
  hsad_status_t st = hsad_codeobj_load_memory(e->data, e->size, label, out_codeobj);
  if (st) return st;
  hsad_codeobj_t *co = *out_codeobj;
  const char *id = co_arena_strndup(&co->arena, e->entry_id, strlen(e->entry_id));
  if (!id) {
    hsad_codeobj_destroy(co);
    *out_codeobj = NULL;
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
  }
  co->entry_id = id;
  /* clang's offload kinds: "hip" and "hipv4" (code object v4+ ABI) are HIP device code */
  co->from_hip = c->kind == HSAD_CONTAINER_HOST_FATBIN || !strncmp(id, "hip-", 4) ||
                 !strncmp(id, "hipv4-", 6);
  return HSAD_OK;
}

hsad_status_t hsad_codeobj_load_file(const char *path, const char *agent_isa,
                                     hsad_codeobj_t **out_codeobj) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_codeobj_load_file", {out_codeobj, "out_codeobj"});
  if (ns) return ns;
  *out_codeobj = NULL;
  hsad_codeobj_container_t *c;
  hsad_status_t st = hsad_codeobj_container_open_file(path, &c);
  if (st) return st;
  size_t idx;
  st = hsad_codeobj_container_select(c, agent_isa, &idx);
  if (!st) st = hsad_codeobj_load_entry(c, idx, out_codeobj);
  hsad_codeobj_container_destroy(c);
  return st;
}
