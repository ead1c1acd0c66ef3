/* hsad inspect for NVIDIA programs: cubins, fatbins, PTX (nvcodeobj/; no GPU, no CUDA). */
#include "tools/hsad/hsad_cli.h"

#include "nvcodeobj/hsad_nv_codeobj.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* True when the file is a cubin (ELF, e_machine 190), a fatbin or PTX text. */
bool hsad_inspect_nv_detect(const char *path) {
  unsigned char h[64] = {0};
  FILE *f = fopen(path, "rb");
  if (!f) return false;
  size_t n = fread(h, 1, sizeof h, f);
  fclose(f);
  if (n >= 20 && !memcmp(h, "\177ELF", 4)) return (h[18] | h[19] << 8) == HSAD_NV_EM_CUDA;
  uint32_t magic;
  memcpy(&magic, h, 4);
  if (n >= 4 && magic == HSAD_NV_FATBIN_MAGIC) return true;
  size_t len = strlen(path);
  return len > 4 && !strcmp(path + len - 4, ".ptx");
}

static const char *kind_name(hsad_nv_file_kind_t k) {
  return k == HSAD_NV_FILE_CUBIN ? "cubin" : k == HSAD_NV_FILE_FATBIN ? "fatbin" : "ptx";
}

static json_object *j_u(uint64_t v) { return json_object_new_uint64(v); }

static json_object *occ_json(const hsad_nv_occupancy_t *o) {
  json_object *j = json_object_new_object();
  json_object_object_add(j, "block", j_u(o->block_size));
  json_object_object_add(j, "fits", json_object_new_boolean(o->fits));
  if (!o->fits) {
    json_object_object_add(j, "why_not", json_object_new_string(o->why_not));
    return j;
  }
  json_object_object_add(j, "blocks_per_sm", j_u(o->blocks_per_sm));
  json_object_object_add(j, "warps_per_sm", j_u(o->warps_per_sm));
  json_object_object_add(j, "occupancy_pct", j_u(o->occupancy_pct));
  json_object_object_add(j, "limiter", json_object_new_string(hsad_nv_limiter_name(o->limiter)));
  json_object_object_add(j, "registers_per_warp", j_u(o->registers_per_warp));
  json_object_object_add(j, "shared_per_block", j_u(o->shared_per_block));
  return j;
}

static void occ_line(const hsad_nv_occupancy_t *o) {
  if (!o->fits) {
    printf("    block %4u: does not fit: %s\n", o->block_size, o->why_not);
    return;
  }
  printf("    block %4u: %2u blocks/SM, %2u warps/SM (%3u%%), limiter %-9s regs/warp %5u, "
         "shared/block %6u\n", o->block_size, o->blocks_per_sm, o->warps_per_sm,
         o->occupancy_pct, hsad_nv_limiter_name(o->limiter), o->registers_per_warp,
         o->shared_per_block);
}

static json_object *kernel_json(const hsad_nv_entry_t *e, const hsad_nv_kernel_info_t *k,
                                const hsad_nv_sm_limits_t *lim, const hsad_nv_inspect_opts_t *o) {
  json_object *j = json_object_new_object();
  json_object_object_add(j, "name", json_object_new_string(k->name));
  if (e->kind == HSAD_NV_ENTRY_PTX) return j;
  json_object_object_add(j, "registers", j_u(k->registers));
  json_object_object_add(j, "static_shared_bytes", j_u(k->static_shared_bytes));
  json_object_object_add(j, "reserved_shared_bytes", j_u(k->reserved_shared_bytes));
  json_object_object_add(j, "local_bytes", j_u(k->local_bytes));
  json_object_object_add(j, "stack_bytes", j_u(k->stack_bytes));
  json_object_object_add(j, "const_bank0_bytes", j_u(k->const_bank0_bytes));
  json_object_object_add(j, "param_bytes", j_u(k->param_bytes));
  json_object_object_add(j, "max_threads", j_u(lim ? hsad_nv_kernel_max_threads(k, lim) : k->max_threads));
  json_object *params = json_object_new_array();
  for (uint32_t i = 0; i < k->param_count; i++) {
    json_object *p = json_object_new_object();
    json_object_object_add(p, "offset", j_u(k->params[i].offset));
    json_object_object_add(p, "size", j_u(k->params[i].size));
    json_object_array_add(params, p);
  }
  json_object_object_add(j, "params", params);
  if (lim && o->pressure) {
    json_object *rows = json_object_new_array();
    uint32_t max = hsad_nv_kernel_max_threads(k, lim);
    for (uint32_t b = o->block_set ? o->block : 32; b <= (o->block_set ? o->block : max); b += 32) {
      hsad_nv_occupancy_t occ;
      hsad_nv_occupancy_at(k, lim, b, 0, &occ);
      json_object_array_add(rows, occ_json(&occ));
      if (o->block_set) break;
    }
    json_object_object_add(j, "occupancy", rows);
  }
  return j;
}

static void kernel_text(const hsad_nv_entry_t *e, const hsad_nv_kernel_info_t *k,
                        const hsad_nv_sm_limits_t *lim, const hsad_nv_inspect_opts_t *o) {
  if (e->kind == HSAD_NV_ENTRY_PTX) {
    printf("  .entry %s\n", k->name);
    return;
  }
  printf("  %s\n    REG:%u STACK:%u SHARED:%u LOCAL:%u CONSTANT[0]:%u  (static shared %u, local "
         "%u per thread, max threads %u)\n    params (offset:size):", k->name, k->registers,
         k->stack_bytes, k->shared_section_bytes, k->local_section_bytes, k->const_bank0_bytes,
         k->static_shared_bytes, k->local_bytes,
         lim ? hsad_nv_kernel_max_threads(k, lim) : k->max_threads);
  for (uint32_t i = 0; i < k->param_count; i++) printf(" %u:%u", k->params[i].offset, k->params[i].size);
  printf(k->param_count ? "\n" : " none\n");
  if (!lim) return;
  uint32_t max = hsad_nv_kernel_max_threads(k, lim);
  if (!o->pressure) {
    hsad_nv_occupancy_t occ;
    hsad_nv_occupancy_at(k, lim, o->block, 0, &occ);
    occ_line(&occ);
    return;
  }
  for (uint32_t b = o->block_set ? o->block : 32; b <= (o->block_set ? o->block : max); b += 32) {
    hsad_nv_occupancy_t occ;
    hsad_nv_occupancy_at(k, lim, b, 0, &occ);
    occ_line(&occ);
    if (o->block_set) break;
  }
}

int hsad_inspect_nv(const hsad_nv_inspect_opts_t *o, const hsad_cli_t *cli) {
  hsad_nv_program_t *p;
  hsad_status_t st = hsad_nv_program_open_file(o->file, &p);
  if (st != HSAD_OK) return hsad_cli_fail(cli, 1, hsad_status_name(st), "%s", hsad_last_error());
  json_object *doc = o->json ? json_object_new_object() : NULL, *entries = NULL;
  size_t n = hsad_nv_program_entry_count(p);
  if (doc) {
    json_object_object_add(doc, "file", json_object_new_string(o->file));
    json_object_object_add(doc, "format", json_object_new_string(kind_name(hsad_nv_program_kind(p))));
    entries = json_object_new_array();
    json_object_object_add(doc, "entries", entries);
  } else {
    printf("%s: %s, %zu entr%s\n", o->file, kind_name(hsad_nv_program_kind(p)), n, n == 1 ? "y" : "ies");
  }
  int rc = 0, found = 0;
  for (size_t i = 0; i < n; i++) {
    const hsad_nv_entry_t *e = hsad_nv_program_entry(p, i);
    hsad_nv_sm_limits_t lim;
    bool have_lim = e->kind == HSAD_NV_ENTRY_ELF && hsad_nv_sm_limits_get(e->sm, &lim) == HSAD_OK;
    json_object *je = NULL, *jk = NULL;
    if (doc) {
      je = json_object_new_object();
      json_object_object_add(je, "arch", json_object_new_string(e->arch));
      json_object_object_add(je, "kind", json_object_new_string(e->kind == HSAD_NV_ENTRY_PTX ? "ptx" : "elf"));
      json_object_object_add(je, "offset", j_u(e->offset));
      json_object_object_add(je, "size", j_u(e->size));
      json_object_object_add(je, "compressed", json_object_new_boolean(e->compressed));
      json_object_object_add(je, "uncompressed_size", j_u(e->uncompressed_size));
      if (e->unsupported) json_object_object_add(je, "unsupported", json_object_new_string(e->unsupported));
      if (e->kind == HSAD_NV_ENTRY_PTX) {
        json_object_object_add(je, "ptx_version", json_object_new_string(e->ptx_version));
        json_object_object_add(je, "ptx_target", json_object_new_string(e->ptx_target));
      }
      jk = json_object_new_array();
      json_object_object_add(je, "kernels", jk);
      json_object_array_add(entries, je);
    } else {
      printf("\nentry %zu: %s %s, offset %llu, %llu bytes%s", i, e->arch,
             e->kind == HSAD_NV_ENTRY_PTX ? "PTX" : "ELF", (unsigned long long)e->offset,
             (unsigned long long)e->size, e->compressed ? " compressed" : "");
      if (e->compressed) printf(" (%llu uncompressed)", (unsigned long long)e->uncompressed_size);
      if (e->kind == HSAD_NV_ENTRY_PTX) printf(", .version %s .target %s", e->ptx_version, e->ptx_target);
      printf(", %u kernel%s\n", e->kernel_count, e->kernel_count == 1 ? "" : "s");
      if (e->unsupported) printf("  not read: %s\n", e->unsupported);
    }
    for (uint32_t k = 0; k < e->kernel_count; k++) {
      const hsad_nv_kernel_info_t *ki = &e->kernels[k];
      if (o->kernel && strcmp(o->kernel, ki->name)) continue;
      found++;
      if (doc) json_object_array_add(jk, kernel_json(e, ki, have_lim ? &lim : NULL, o));
      else kernel_text(e, ki, have_lim ? &lim : NULL, o);
    }
  }
  if (o->kernel && !found)
    rc = hsad_cli_fail(cli, 1, "HSAD_ERR_KERNEL_NOT_FOUND", "%s: no kernel '%s' in any entry",
                       o->file, o->kernel);
  else if (doc)
    printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_SPACED |
                                                         JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(doc);
  hsad_nv_program_destroy(p);
  return rc;
}

/* hsad compile K.cu --target sm_90 [-D NAME[=V]] [-I DIR] -o K.cubin (NVRTC, nvcodeobj). */
int hsad_compile_nv(int argc, char **argv, const hsad_cli_t *cli) {
  const char *src = NULL, *target = NULL, *out = NULL, *defs[64], *incs[64];
  size_t nd = 0, ni = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char **val = NULL;
    if (!strcmp(a, "--target") || !strcmp(a, "-o")) {
      if (i + 1 >= argc) return hsad_cli_fail(cli, 2, "usage", "%s needs a value", a);
      *(a[1] == 'o' ? &out : &target) = argv[++i];
    } else if (!strncmp(a, "--target=", 9)) {
      target = a + 9;
    } else if ((a[0] == '-' && (a[1] == 'D' || a[1] == 'I'))) {
      const char *v = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
      if (!v) return hsad_cli_fail(cli, 2, "usage", "%s needs a value", a);
      if ((a[1] == 'D' ? nd : ni) >= 64) return hsad_cli_fail(cli, 2, "usage", "more than 64 %s", a);
      val = a[1] == 'D' ? &defs[nd++] : &incs[ni++];
      *val = v;
    } else if (!strcmp(a, "--json")) {
    } else if (a[0] == '-') {
      return hsad_cli_fail(cli, 2, "usage", "%s: not an option of hsad compile for .cu sources "
                           "(--target sm_NN, -D, -I, -o)", a);
    } else {
      src = a;
    }
  }
  if (!src || !target || !out)
    return hsad_cli_fail(cli, 2, "usage", "hsad compile K.cu --target sm_NN -o K.cubin "
                         "(missing %s)", !src ? "the source" : !target ? "--target" : "-o");
  FILE *f = fopen(src, "rb");
  if (!f) return hsad_cli_fail(cli, 1, "HSAD_ERR_IO", "%s: cannot open", src);
  char *text = NULL;
  size_t n = 0, cap = 0, got;
  do {
    if (n + 4096 + 1 > cap) {
      cap = cap ? cap * 2 : 65536;
      char *nt = realloc(text, cap);
      if (!nt) { free(text); fclose(f); return hsad_cli_fail(cli, 1, "HSAD_ERR_OUT_OF_MEMORY", "out of memory"); }
      text = nt;
    }
    got = fread(text + n, 1, cap - n - 1, f);
    n += got;
  } while (got);
  fclose(f);
  text[n] = 0;
  hsad_nv_compile_options_t opts = {.target = target, .defines = defs, .define_count = nd,
                                    .include_dirs = incs, .include_dir_count = ni};
  void *cubin = NULL;
  size_t size = 0;
  char *log = NULL;
  hsad_status_t st = hsad_nv_compile(text, src, &opts, &cubin, &size, &log);
  free(text);
  if (st != HSAD_OK) return hsad_cli_fail(cli, 1, hsad_status_name(st), "%s", hsad_last_error());
  if (log && *log) fputs(log, stderr);
  free(log);
  FILE *o = fopen(out, "wb");
  bool ok = o && fwrite(cubin, 1, size, o) == size;
  if (o && fclose(o)) ok = false;
  free(cubin);
  if (!ok) return hsad_cli_fail(cli, 1, "HSAD_ERR_IO", "%s: cannot write the cubin", out);
  if (cli->json) printf("{ \"output\": \"%s\", \"size\": %zu, \"target\": \"%s\" }\n", out, size, target);
  else printf("%s: %zu bytes, %s\n", out, size, target);
  return 0;
}
