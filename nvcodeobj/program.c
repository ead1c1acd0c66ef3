/* program.c - opening cubin, fatbin and PTX inputs; entry selection.
 *
 * Fatbin container (CUDA's fatbinary_section.h names the magic; the rest as nvcc 13.0 writes it,
 * tests/data/nvidia/byval*.fatbin): a 16-byte header { u32 magic 0xBA55ED50, u16 version 1,
 * u16 header size 16, u64 bytes of entries that follow }, then entries, each a header
 * { u16 kind (1 PTX, 2 ELF), u16 version, u32 header size (64), u64 payload size (padded),
 * u32 compressed size, u32 -, u16 minor, u16 major (code version), u32 arch (90 = sm_90),
 * u32 name offset, u32 name size, u64 flags, u64 -, u64 uncompressed size } and its payload.
 * Flags: 0x1 64-bit, 0x10 Linux host, 0x2000 LZ4-compressed (older toolkits), 0x8000
 * zstd-compressed (CUDA 12.8+, --compress-mode). zstd payloads are decoded; LZ4 ones are listed
 * as unsupported. Several containers may follow one another (a host object's .nv_fatbin). */
#include "nvcodeobj/nv_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

enum {
  NV_FATBIN_HEADER = 16,
  NV_FATBIN_ENTRY_HEADER = 64,
  NV_FATBIN_FLAG_LZ4 = 0x2000,
  NV_FATBIN_FLAG_ZSTD = 0x8000,
};
#define NV_MAX_UNCOMPRESSED (1ull << 30) /* 1 GiB: larger declared sizes are refused */

struct hsad_nv_program {
  nv_pool_t pool;
  hsad_nv_file_kind_t kind;
  const char *label;
  uint8_t *bytes;
  size_t size;
  hsad_nv_entry_t *entries;
  size_t entry_count, entry_cap;
};

static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint16_t rd16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

static hsad_nv_entry_t *add_entry(hsad_nv_program_t *p) {
  if (p->entry_count == p->entry_cap) {
    size_t cap = p->entry_cap ? p->entry_cap * 2 : 8;
    hsad_nv_entry_t *ne = realloc(p->entries, cap * sizeof *ne);
    if (!ne) return NULL;
    p->entries = ne;
    p->entry_cap = cap;
  }
  hsad_nv_entry_t *e = &p->entries[p->entry_count++];
  memset(e, 0, sizeof *e);
  e->ptx_version = e->ptx_target = "";
  return e;
}

/* The one entry of a program that is a whole cubin or PTX file: kind, all of p's bytes. NULL
 * when out of memory (the message set: "LABEL: out of memory"). */
static hsad_nv_entry_t *whole_entry(hsad_nv_program_t *p, hsad_nv_entry_kind_t kind) {
  hsad_nv_entry_t *e = add_entry(p);
  if (!e) {
    hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", p->label);
    return NULL;
  }
  e->kind = kind;
  e->size = e->uncompressed_size = p->size;
  e->data = p->bytes;
  return e;
}

bool nv_is_ptx(const uint8_t *d, size_t size) {
  size_t i = 0;
  while (i < size) {
    while (i < size && (d[i] == ' ' || d[i] == '\t' || d[i] == '\r' || d[i] == '\n')) i++;
    if (i + 1 < size && d[i] == '/' && d[i + 1] == '/') {
      while (i < size && d[i] != '\n') i++;
      continue;
    }
    return size - i >= 8 && !memcmp(d + i, ".version", 8);
  }
  return false;
}

/* The token after `word` (a directive) on its line, into the pool; "" when absent. */
static const char *ptx_word_after(nv_pool_t *pool, const char *t, size_t n, size_t at) {
  while (at < n && (t[at] == ' ' || t[at] == '\t')) at++;
  size_t end = at;
  while (end < n && t[end] != ' ' && t[end] != '\t' && t[end] != '\n' && t[end] != '\r' &&
         t[end] != '(' && t[end] != ',' && t[end] != '{' && t[end] != '\0')
    end++;
  return nv_pool_strndup(pool, t + at, end - at);
}

hsad_status_t nv_ptx_read(nv_pool_t *pool, const char *t, size_t n, hsad_nv_entry_t *entry) {
  size_t entries = 0;
  for (int pass = 0; pass < 2; pass++) {
    hsad_nv_kernel_info_t *ks = NULL;
    if (pass == 1) {
      ks = nv_pool_alloc(pool, entries * sizeof *ks);
      if (!ks) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "out of memory");
      entry->kernels = ks;
      entry->kernel_count = (uint32_t)entries;
    }
    size_t k = 0;
    for (size_t i = 0; i < n;) {
      if (t[i] == '/' && i + 1 < n && t[i + 1] == '/') { /* comment to end of line */
        while (i < n && t[i] != '\n') i++;
        continue;
      }
      bool word_start = i == 0 || t[i - 1] == ' ' || t[i - 1] == '\t' || t[i - 1] == '\n';
      if (word_start && t[i] == '.') {
        if (n - i > 7 && !memcmp(t + i, ".entry", 6) && (t[i + 6] == ' ' || t[i + 6] == '\t')) {
          if (pass == 1 && k < entries) {
            ks[k].name = ptx_word_after(pool, t, n, i + 6);
            if (!ks[k].name) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "out of memory");
          }
          k++;
        } else if (pass == 1 && n - i > 9 && !memcmp(t + i, ".version", 8) && !*entry->ptx_version) {
          entry->ptx_version = ptx_word_after(pool, t, n, i + 8);
        } else if (pass == 1 && n - i > 8 && !memcmp(t + i, ".target", 7) && !*entry->ptx_target) {
          entry->ptx_target = ptx_word_after(pool, t, n, i + 7);
        }
        if (!entry->ptx_version || !entry->ptx_target)
          return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "out of memory");
      }
      i++;
    }
    if (pass == 0) entries = k;
  }
  return HSAD_OK;
}

static hsad_status_t entry_decompress(hsad_nv_program_t *p, const char *what,
                                      hsad_nv_entry_t *e, const uint8_t *payload,
                                      uint64_t csize, uint64_t flags) {
  if (flags & NV_FATBIN_FLAG_LZ4) {
    char msg[96];
    snprintf(msg, sizeof msg, "compressed with LZ4 (flags 0x%llx): not decoded",
             (unsigned long long)flags);
    e->unsupported = nv_pool_strndup(&p->pool, msg, strlen(msg));
    return e->unsupported ? HSAD_OK : hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
  }
  unsigned long long frame = ZSTD_getFrameContentSize(payload, csize);
  if (frame == ZSTD_CONTENTSIZE_ERROR || frame == ZSTD_CONTENTSIZE_UNKNOWN ||
      frame != e->uncompressed_size)
    return hsad_fail(HSAD_ERR_TRUNCATED,
                     "%s: zstd frame of %llu bytes: content size %s, the entry says %llu", what,
                     (unsigned long long)csize,
                     frame == ZSTD_CONTENTSIZE_ERROR ? "unreadable"
                     : frame == ZSTD_CONTENTSIZE_UNKNOWN ? "not recorded" : "differs",
                     (unsigned long long)e->uncompressed_size);
  if (frame > NV_MAX_UNCOMPRESSED)
    return hsad_fail(HSAD_ERR_UNSUPPORTED, "%s: %llu bytes uncompressed, above the 1 GiB limit",
                     what, frame);
  uint8_t *out = nv_pool_alloc(&p->pool, (size_t)frame);
  if (!out) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory (%llu bytes)", what, frame);
  size_t got = ZSTD_decompress(out, (size_t)frame, payload, (size_t)csize);
  if (ZSTD_isError(got) || got != frame)
    return hsad_fail(HSAD_ERR_TRUNCATED, "%s: zstd: %s", what,
                     ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short output");
  e->data = out;
  return HSAD_OK;
}

static hsad_status_t read_entry_image(hsad_nv_program_t *p, const char *what, hsad_nv_entry_t *e,
                                      const uint8_t *img, size_t size) {
  if (e->kind == HSAD_NV_ENTRY_PTX) {
    size_t len = strnlen((const char *)img, size); /* payloads are NUL-padded */
    return nv_ptx_read(&p->pool, (const char *)img, len, e);
  }
  return nv_cubin_read(&p->pool, what, img, size, e);
}

static hsad_status_t fatbin_entry(hsad_nv_program_t *p, uint32_t container, uint64_t at,
                                  uint64_t end, uint64_t *out_next) {
  const uint8_t *h = p->bytes + at;
  size_t idx = p->entry_count;
  if (end - at < NV_FATBIN_ENTRY_HEADER)
    return hsad_fail(HSAD_ERR_TRUNCATED,
                     "%s: truncated: fatbin entry %zu header at offset %llu needs 64 bytes, %llu "
                     "left of the container", p->label, idx, (unsigned long long)at,
                     (unsigned long long)(end - at));
  unsigned kind = rd16(h);
  uint32_t hsize = rd32(h + 4);
  uint64_t psize = rd64(h + 8), flags = rd64(h + 40);
  if (hsize < NV_FATBIN_ENTRY_HEADER || !nv_fits(at, hsize, end) || !nv_fits(at + hsize, psize, end))
    return hsad_fail(HSAD_ERR_TRUNCATED,
                     "%s: truncated: fatbin entry %zu at offset %llu: header %u + payload %llu "
                     "bytes run past the container's end at %llu", p->label, idx,
                     (unsigned long long)at, hsize, (unsigned long long)psize,
                     (unsigned long long)end);
  if (kind != HSAD_NV_FATBIN_ENTRY_ELF && kind != HSAD_NV_FATBIN_ENTRY_PTX)
    return hsad_fail(HSAD_ERR_UNSUPPORTED,
                     "%s: fatbin entry %zu at offset %llu has kind %u; known: 1 (PTX), 2 (ELF)",
                     p->label, idx, (unsigned long long)at, kind);
  hsad_nv_entry_t *e = add_entry(p);
  if (!e) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", p->label);
  e->kind = (hsad_nv_entry_kind_t)kind;
  e->sm = rd32(h + 28);
  e->container_index = container;
  e->offset = at + hsize;
  e->size = psize;
  e->uncompressed_size = psize;
  e->compressed = (flags & (NV_FATBIN_FLAG_LZ4 | NV_FATBIN_FLAG_ZSTD)) != 0;
  char arch[32], what[160];
  snprintf(arch, sizeof arch, "%s_%u", kind == HSAD_NV_FATBIN_ENTRY_PTX ? "compute" : "sm", e->sm);
  e->arch = nv_pool_strndup(&p->pool, arch, strlen(arch));
  if (!e->arch) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", p->label);
  snprintf(what, sizeof what, "%s: fatbin entry %zu (%s %s at offset %llu)", p->label, idx,
           arch, kind == HSAD_NV_FATBIN_ENTRY_PTX ? "PTX" : "ELF", (unsigned long long)e->offset);
  const uint8_t *payload = p->bytes + at + hsize;
  hsad_status_t st;
  if (e->compressed) {
    uint64_t csize = rd32(h + 16);
    if (csize == 0 || csize > psize) csize = psize;
    e->size = csize;
    e->uncompressed_size = rd64(h + 56);
    st = entry_decompress(p, what, e, payload, csize, flags);
    if (st != HSAD_OK || !e->data) goto done;
    st = read_entry_image(p, what, e, e->data, (size_t)e->uncompressed_size);
  } else {
    /* a private, 16-aligned copy: libelf and the symbol table want aligned bytes */
    uint8_t *copy = nv_pool_alloc(&p->pool, (size_t)psize);
    if (!copy) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", p->label);
    memcpy(copy, payload, (size_t)psize);
    e->data = copy;
    st = read_entry_image(p, what, e, copy, (size_t)psize);
  }
done:
  *out_next = at + hsize + psize;
  return st;
}

static hsad_status_t fatbin_read(hsad_nv_program_t *p) {
  uint64_t at = 0;
  uint32_t container = 0;
  while (at < p->size) {
    const uint8_t *h = p->bytes + at;
    if (container > 0) { /* padding after the last container is fine */
      size_t z = at;
      while (z < p->size && p->bytes[z] == 0) z++;
      if (z == p->size) break;
      at = (z - at < 8) ? at : (z & ~(uint64_t)7);
      h = p->bytes + at;
    }
    if (p->size - at < NV_FATBIN_HEADER)
      return hsad_fail(HSAD_ERR_TRUNCATED,
                       "%s: truncated: fatbin container %u header at offset %llu needs 16 bytes, "
                       "%llu left", p->label, container, (unsigned long long)at,
                       (unsigned long long)(p->size - at));
    if (rd32(h) != HSAD_NV_FATBIN_MAGIC)
      return hsad_fail(HSAD_ERR_NOT_ELF,
                       "%s: bytes at offset %llu are no fatbin container (magic 0x%08x, expected "
                       "0x%08x)", p->label, (unsigned long long)at, rd32(h), HSAD_NV_FATBIN_MAGIC);
    unsigned hsize = rd16(h + 6);
    uint64_t body = rd64(h + 8);
    if (hsize < NV_FATBIN_HEADER || !nv_fits(at, hsize, p->size) ||
        !nv_fits(at + hsize, body, p->size))
      return hsad_fail(HSAD_ERR_TRUNCATED,
                       "%s: truncated: fatbin container %u at offset %llu: header %u + %llu bytes "
                       "of entries run past the end of the %zu-byte file", p->label, container,
                       (unsigned long long)at, hsize, (unsigned long long)body, p->size);
    uint64_t e = at + hsize, end = at + hsize + body;
    while (e < end) {
      hsad_status_t st = fatbin_entry(p, container, e, end, &e);
      if (st != HSAD_OK) return st;
    }
    at = end;
    container++;
  }
  return HSAD_OK;
}

hsad_status_t hsad_nv_program_open_memory(const void *data, size_t size, const char *label,
                                          hsad_nv_program_t **out_program) {
  if (!out_program) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_nv_program_open_memory: out_program is NULL");
  *out_program = NULL;
  if (!label) label = "<memory>";
  if (!data || size == 0)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: no data (%s)", label,
                     data ? "size 0" : "NULL pointer");
  hsad_nv_program_t *p = calloc(1, sizeof *p);
  if (!p) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
  hsad_status_t st = HSAD_ERR_OUT_OF_MEMORY;
  p->label = nv_pool_strndup(&p->pool, label, strlen(label));
  p->bytes = nv_pool_alloc(&p->pool, size);
  if (!p->label || !p->bytes) {
    st = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu bytes)", label, size);
    goto fail;
  }
  memcpy(p->bytes, data, size);
  p->size = size;
  if (size >= 4 && !memcmp(p->bytes, "\177ELF", 4)) {
    p->kind = HSAD_NV_FILE_CUBIN;
    hsad_nv_entry_t *e = whole_entry(p, HSAD_NV_ENTRY_ELF);
    if (!e) goto fail; /* st: HSAD_ERR_OUT_OF_MEMORY */
    st = nv_cubin_read(&p->pool, p->label, p->bytes, size, e);
  } else if (size >= 4 && rd32(p->bytes) == HSAD_NV_FATBIN_MAGIC) {
    p->kind = HSAD_NV_FILE_FATBIN;
    st = fatbin_read(p);
  } else if (nv_is_ptx(p->bytes, size)) {
    p->kind = HSAD_NV_FILE_PTX;
    hsad_nv_entry_t *e = whole_entry(p, HSAD_NV_ENTRY_PTX);
    if (!e) goto fail; /* st: HSAD_ERR_OUT_OF_MEMORY */
    st = nv_ptx_read(&p->pool, (const char *)p->bytes, size, e);
    if (st == HSAD_OK) {
      unsigned sm = 0;
      sscanf(e->ptx_target, "sm_%u", &sm);
      char arch[32];
      snprintf(arch, sizeof arch, "compute_%u", sm);
      e->sm = sm;
      e->arch = nv_pool_strndup(&p->pool, arch, strlen(arch));
      if (!e->arch) {
        st = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", label);
        goto fail;
      }
    }
  } else {
    st = hsad_fail(HSAD_ERR_NOT_ELF,
                   "%s: not a cubin (no \\177ELF magic), a fatbin (magic 0x%08x) or PTX text "
                   "(first directive .version) in its %zu bytes", label, HSAD_NV_FATBIN_MAGIC,
                   size);
  }
  if (st != HSAD_OK) goto fail;
  *out_program = p;
  return HSAD_OK;
fail:
  hsad_nv_program_destroy(p);
  return st;
}

hsad_status_t hsad_nv_program_open_file(const char *path, hsad_nv_program_t **out_program) {
  if (!path || !out_program)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_nv_program_open_file: %s is NULL",
                     path ? "out_program" : "path");
  *out_program = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) return hsad_fail(HSAD_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  uint8_t *buf = NULL;
  size_t n = 0, cap = 0;
  for (;;) {
    if (n == cap) {
      cap = cap ? cap * 2 : 65536;
      uint8_t *nb = realloc(buf, cap);
      if (!nb) {
        free(buf);
        fclose(f);
        return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory reading it", path);
      }
      buf = nb;
    }
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (got == 0) break;
  }
  int err = ferror(f) ? errno : 0;
  fclose(f);
  if (err) {
    free(buf);
    return hsad_fail(HSAD_ERR_IO, "%s: read failed: %s", path, strerror(err));
  }
  hsad_status_t st = n ? hsad_nv_program_open_memory(buf, n, path, out_program)
                       : hsad_fail(HSAD_ERR_TRUNCATED, "%s: truncated: the file is empty", path);
  free(buf);
  return st;
}

void hsad_nv_program_destroy(hsad_nv_program_t *program) {
  if (!program) return;
  free(program->entries);
  nv_pool_free(&program->pool);
  free(program);
}

hsad_nv_file_kind_t hsad_nv_program_kind(const hsad_nv_program_t *program) {
  return program ? program->kind : (hsad_nv_file_kind_t)0;
}

size_t hsad_nv_program_entry_count(const hsad_nv_program_t *program) {
  return program ? program->entry_count : 0;
}

const hsad_nv_entry_t *hsad_nv_program_entry(const hsad_nv_program_t *program, size_t i) {
  return program && i < program->entry_count ? &program->entries[i] : NULL;
}

hsad_status_t hsad_nv_program_select(const hsad_nv_program_t *program, uint32_t device_sm,
                                     size_t *out_index) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_nv_program_select", {program, "program"},
                                   {out_index, "out_index"});
  if (ns) return ns;
  size_t best = SIZE_MAX, best_ptx = SIZE_MAX;
  for (size_t i = 0; i < program->entry_count; i++) {
    const hsad_nv_entry_t *e = &program->entries[i];
    if (!e->data) continue; /* listed, not decoded */
    if (e->kind == HSAD_NV_ENTRY_ELF) {
      if (e->sm / 10 == device_sm / 10 && e->sm <= device_sm &&
          (best == SIZE_MAX || e->sm > program->entries[best].sm))
        best = i;
    } else if (e->sm <= device_sm &&
               (best_ptx == SIZE_MAX || e->sm > program->entries[best_ptx].sm)) {
      best_ptx = i;
    }
  }
  if (best == SIZE_MAX) best = best_ptx;
  if (best != SIZE_MAX) {
    *out_index = best;
    return HSAD_OK;
  }
  char list[256] = "";
  size_t len = 0;
  for (size_t i = 0; i < program->entry_count && len < sizeof list - 40; i++)
    len += (size_t)snprintf(list + len, sizeof list - len, "%s%s%s", i ? ", " : "",
                            program->entries[i].arch,
                            program->entries[i].data ? "" : " (not decoded)");
  return hsad_fail(HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND,
                   "%s: no entry runs on sm_%u (a cubin of sm_%u.y with y <= %u, or PTX of "
                   "compute_xy <= %u); it has: %s", program->label, device_sm, device_sm / 10,
                   device_sm % 10, device_sm, list);
}

hsad_status_t hsad_nv_entry_find_kernel(const hsad_nv_entry_t *entry, const char *name,
                                        const hsad_nv_kernel_info_t **out_kernel) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_nv_entry_find_kernel", {entry, "entry"},
                                   {name, "name"}, {out_kernel, "out_kernel"});
  if (ns) return ns;
  for (uint32_t i = 0; i < entry->kernel_count; i++)
    if (!strcmp(entry->kernels[i].name, name)) {
      *out_kernel = &entry->kernels[i];
      return HSAD_OK;
    }
  char list[512] = "";
  size_t len = 0;
  uint32_t shown = 0;
  for (; shown < entry->kernel_count && shown < 20 && len < sizeof list - 80; shown++)
    len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", shown ? ", " : "",
                            entry->kernels[shown].name);
  if (shown < entry->kernel_count)
    snprintf(list + len, sizeof list - len, " and %u more", entry->kernel_count - shown);
  return hsad_fail(HSAD_ERR_KERNEL_NOT_FOUND, "no kernel '%s' in the %s entry; it has %u: %s",
                   name, entry->arch ? entry->arch : "?", entry->kernel_count,
                   entry->kernel_count ? list : "none");
}
