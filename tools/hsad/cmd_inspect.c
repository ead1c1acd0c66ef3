/* hsad inspect - code object metadata, registers, occupancy (codeobj/; no GPU, no ROCr). */
#include "tools/hsad/hsad_cli.h"

#include "codeobj/hsad_codeobj.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void inspect_usage(FILE *f) {
  fprintf(f,
          "usage: hsad inspect FILE [--target ISA] [--kernel NAME] [--json] [--block N]\n"
          "                         [--floor N] [--repeat N] [--pressure]\n"
          "  FILE          code object (.hsaco), clang offload bundle, or host ELF with .hip_fatbin\n"
          "  --target ISA  only the code object for this target ID (e.g. gfx90a:xnack-)\n"
          "  --kernel NAME only this kernel\n"
          "  --json        JSON: {\"target\", \"code_object_version\", \"kernels\": [...]} per code\n"
          "                object (an array of them, with \"entry_id\", for bundles)\n"
          "  --block N     workgroup size for the occupancy column (default 256, capped at the\n"
          "                kernel's .max_flat_workgroup_size)\n"
          "  --floor N     flag kernels below N waves per SIMD (default 2)\n"
          "  --repeat N    load and format N times; print the mean time per run to stderr\n"
          "  --pressure    register-pressure report per kernel and workgroup size: VGPR/AGPR/SGPR,\n"
          "                spills, scratch per work-item and per wave, LDS, waves per SIMD and\n"
          "                workgroups per CU with the limiter, the next cliff (VGPRs fewer for\n"
          "                one more wave per SIMD) and the cost against the best workgroup size;\n"
          "                sizes 64..1024 (32.. for wave32) up to .max_flat_workgroup_size, or\n"
          "                only --block N when given\n");
}

typedef struct {
  const char *file, *target, *kernel;
  int json, pressure, block_set;
  unsigned block, floor, repeat;
} inspect_opts_t;

/* ---- output buffer (formatting is timed too, so it goes to memory first) ---- */
typedef struct {
  char *p;
  size_t n, cap;
  int oom;
} obuf_t;

static void ob_printf(obuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ob_printf(obuf_t *b, const char *fmt, ...) {
  if (b->oom) return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
    va_end(ap);
    if (w < 0) return;
    if (b->p && (size_t)w < b->cap - b->n) {
      b->n += (size_t)w;
      return;
    }
    size_t cap = b->cap ? b->cap * 2 : 65536;
    while (cap - b->n <= (size_t)w) cap *= 2;
    char *np = realloc(b->p, cap);
    if (!np) {
      b->oom = 1;
      return;
    }
    b->p = np;
    b->cap = cap;
  }
}

static void ob_str(obuf_t *b, const char *s) { /* JSON string */
  ob_printf(b, "\"");
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '"' || *c == '\\') ob_printf(b, "\\%c", *c);
    else if (*c < 0x20) ob_printf(b, "\\u%04x", *c);
    else ob_printf(b, "%c", *c);
  }
  ob_printf(b, "\"");
}

static const char *yes(bool v) { return v ? "true" : "false"; }

static void json_kernel(obuf_t *b, const hsad_kernel_t *k, const inspect_opts_t *o) {
  const hsad_kernel_info_t *ki = hsad_kernel_info(k);
  ob_printf(b, "{\"name\": ");
  ob_str(b, ki->name);
  ob_printf(b, ", \"symbol\": ");
  ob_str(b, ki->symbol);
  if (ki->present & HSAD_KI_HAS_LANGUAGE) ob_printf(b, ", \"language\": "), ob_str(b, ki->language);
  if (ki->present & HSAD_KI_HAS_LANGUAGE_VERSION)
    ob_printf(b, ", \"language_version\": [%u, %u]", ki->language_version[0],
              ki->language_version[1]);
  if (ki->present & HSAD_KI_HAS_KIND) ob_printf(b, ", \"kind\": "), ob_str(b, ki->kind);
  if (ki->present & HSAD_KI_HAS_VEC_TYPE_HINT)
    ob_printf(b, ", \"vec_type_hint\": "), ob_str(b, ki->vec_type_hint);
  if (ki->present & HSAD_KI_HAS_DEVICE_ENQUEUE_SYMBOL)
    ob_printf(b, ", \"device_enqueue_symbol\": "), ob_str(b, ki->device_enqueue_symbol);
  if (ki->present & HSAD_KI_HAS_REQD_WORKGROUP_SIZE)
    ob_printf(b, ", \"reqd_workgroup_size\": [%u, %u, %u]", ki->reqd_workgroup_size[0],
              ki->reqd_workgroup_size[1], ki->reqd_workgroup_size[2]);
  if (ki->present & HSAD_KI_HAS_WORKGROUP_SIZE_HINT)
    ob_printf(b, ", \"workgroup_size_hint\": [%u, %u, %u]", ki->workgroup_size_hint[0],
              ki->workgroup_size_hint[1], ki->workgroup_size_hint[2]);
  ob_printf(b,
            ", \"kernarg_segment_size\": %u, \"kernarg_segment_align\": %u, "
            "\"group_segment_fixed_size\": %u, \"private_segment_fixed_size\": %u, "
            "\"wavefront_size\": %u, \"sgpr_count\": %u, \"vgpr_count\": %u",
            ki->kernarg_segment_size, ki->kernarg_segment_align, ki->group_segment_fixed_size,
            ki->private_segment_fixed_size, ki->wavefront_size, ki->sgpr_count, ki->vgpr_count);
  if (ki->present & HSAD_KI_HAS_AGPR_COUNT) ob_printf(b, ", \"agpr_count\": %u", ki->agpr_count);
  if (ki->present & HSAD_KI_HAS_SGPR_SPILL_COUNT)
    ob_printf(b, ", \"sgpr_spill_count\": %u", ki->sgpr_spill_count);
  if (ki->present & HSAD_KI_HAS_VGPR_SPILL_COUNT)
    ob_printf(b, ", \"vgpr_spill_count\": %u", ki->vgpr_spill_count);
  ob_printf(b, ", \"max_flat_workgroup_size\": %u", ki->max_flat_workgroup_size);
  if (ki->hidden_args_beyond_segment)
    ob_printf(b, ", \"hidden_args_beyond_segment\": %u", ki->hidden_args_beyond_segment);
  if (ki->present & HSAD_KI_HAS_USES_DYNAMIC_STACK)
    ob_printf(b, ", \"uses_dynamic_stack\": %s", yes(ki->uses_dynamic_stack));
  if (ki->present & HSAD_KI_HAS_WGP_MODE)
    ob_printf(b, ", \"workgroup_processor_mode\": %s", yes(ki->workgroup_processor_mode));
  if (ki->present & HSAD_KI_HAS_UNIFORM_WORK_GROUP_SIZE)
    ob_printf(b, ", \"uniform_work_group_size\": %s", yes(ki->uniform_work_group_size));
  ob_printf(b, ", \"args\": [");
  for (uint32_t i = 0; i < ki->arg_count; i++) {
    const hsad_kernel_arg_t *a = &ki->args[i];
    ob_printf(b, "%s{", i ? ", " : "");
    if (a->present & HSAD_ARG_HAS_NAME) ob_printf(b, "\"name\": "), ob_str(b, a->name),
                                          ob_printf(b, ", ");
    if (a->present & HSAD_ARG_HAS_TYPE_NAME)
      ob_printf(b, "\"type_name\": "), ob_str(b, a->type_name), ob_printf(b, ", ");
    ob_printf(b, "\"offset\": %u, \"size\": %u, \"value_kind\": \"%s\"", a->offset, a->size,
              hsad_value_kind_name(a->value_kind));
    if (a->present & HSAD_ARG_HAS_ADDRESS_SPACE)
      ob_printf(b, ", \"address_space\": \"%s\"", hsad_address_space_name(a->address_space));
    if (a->present & HSAD_ARG_HAS_ACCESS)
      ob_printf(b, ", \"access\": \"%s\"", hsad_access_name(a->access));
    if (a->present & HSAD_ARG_HAS_ACTUAL_ACCESS)
      ob_printf(b, ", \"actual_access\": \"%s\"", hsad_access_name(a->actual_access));
    if (a->present & HSAD_ARG_HAS_POINTEE_ALIGN)
      ob_printf(b, ", \"pointee_align\": %u", a->pointee_align);
    if (a->present & HSAD_ARG_HAS_IS_CONST) ob_printf(b, ", \"is_const\": %s", yes(a->is_const));
    if (a->present & HSAD_ARG_HAS_IS_RESTRICT)
      ob_printf(b, ", \"is_restrict\": %s", yes(a->is_restrict));
    if (a->present & HSAD_ARG_HAS_IS_VOLATILE)
      ob_printf(b, ", \"is_volatile\": %s", yes(a->is_volatile));
    if (a->present & HSAD_ARG_HAS_IS_PIPE) ob_printf(b, ", \"is_pipe\": %s", yes(a->is_pipe));
    ob_printf(b, "}");
  }
  ob_printf(b, "]");
  const hsad_kernel_descriptor_t *d = &ki->descriptor;
  const hsad_kd_fields_t *f = &ki->kd;
  ob_printf(b,
            ", \"descriptor\": {\"group_segment_fixed_size\": %u, "
            "\"private_segment_fixed_size\": %u, \"kernarg_size\": %u, "
            "\"kernel_code_entry_byte_offset\": %lld, \"compute_pgm_rsrc1\": %u, "
            "\"compute_pgm_rsrc2\": %u, \"compute_pgm_rsrc3\": %u, "
            "\"kernel_code_properties\": %u, \"granulated_vgpr_count\": %u, "
            "\"granulated_sgpr_count\": %u, \"vgpr_alloc\": %u, \"sgpr_alloc\": %u, "
            "\"enable_private_segment\": %s, \"user_sgpr_count\": %u, \"wavefront_size32\": %s, "
            "\"uses_dynamic_stack\": %s, \"wgp_mode\": %s, \"accum_offset\": %u, "
            "\"kernarg_preload_length\": %u, \"kernarg_preload_offset\": %u, "
            "\"mismatch\": %u}",
            d->group_segment_fixed_size, d->private_segment_fixed_size, d->kernarg_size,
            (long long)d->kernel_code_entry_byte_offset, d->compute_pgm_rsrc1,
            d->compute_pgm_rsrc2, d->compute_pgm_rsrc3, d->kernel_code_properties,
            f->granulated_vgpr_count, f->granulated_sgpr_count, f->vgpr_alloc, f->sgpr_alloc,
            yes(f->enable_private_segment), f->user_sgpr_count, yes(f->wavefront_size32),
            yes(f->uses_dynamic_stack), yes(f->wgp_mode), f->accum_offset,
            f->kernarg_preload_length, f->kernarg_preload_offset, ki->kd_mismatch);
  uint32_t block = o->block < ki->max_flat_workgroup_size ? o->block : ki->max_flat_workgroup_size;
  hsad_occupancy_t occ;
  hsad_status_t st = hsad_kernel_occupancy(k, NULL, block, 0, &occ);
  if (st == HSAD_OK)
    ob_printf(b,
              ", \"occupancy\": {\"workgroup_size\": %u, \"waves_per_simd\": %u, "
              "\"waves_per_cu\": %u, \"workgroups_per_cu\": %u, \"wgp_mode\": %s, "
              "\"limiter\": \"%s\", \"vgprs_allocated\": %u, \"lds_per_workgroup\": %u}",
              block, occ.waves_per_simd, occ.waves_per_cu, occ.workgroups_per_cu,
              occ.wgp_mode ? "true" : "false", hsad_occ_limiter_name(occ.limiter),
              occ.vgprs_allocated, occ.lds_per_workgroup);
  else
    ob_printf(b, ", \"occupancy\": {\"error\": "), ob_str(b, hsad_last_error()),
        ob_printf(b, "}");
  hsad_pressure_report_t pr;
  hsad_kernel_pressure(k, st == HSAD_OK ? &occ : NULL, o->floor, &pr);
  ob_printf(b,
            ", \"pressure\": {\"scratch_per_work_item\": %u, \"scratch_per_wave\": %llu, "
            "\"spills\": %s, \"low_occupancy\": %s, \"flagged\": %s}}",
            pr.scratch_per_work_item, (unsigned long long)pr.scratch_per_wave, yes(pr.spills),
            yes(pr.low_occupancy), yes(pr.flagged));
}

/* Columns. The kernel name comes first, padded to the longest; when a name is longer than 48
 * characters (mangled C++), it goes last instead, unpadded, so the figures stay aligned and the
 * name stays whole. */
static void table_kernel(obuf_t *b, const hsad_kernel_t *k, const inspect_opts_t *o, int w) {
  const hsad_kernel_info_t *ki = hsad_kernel_info(k);
  uint32_t block = o->block < ki->max_flat_workgroup_size ? o->block : ki->max_flat_workgroup_size;
  hsad_occupancy_t occ;
  char occs[40];
  hsad_status_t st = hsad_kernel_occupancy(k, NULL, block, 0, &occ);
  if (st == HSAD_OK)
    snprintf(occs, sizeof occs, "%u@%u %s", occ.waves_per_simd, block,
             hsad_occ_limiter_name(occ.limiter));
  else
    snprintf(occs, sizeof occs, "n/a");
  hsad_pressure_report_t pr;
  hsad_kernel_pressure(k, st == HSAD_OK ? &occ : NULL, o->floor, &pr);
  char spills[24];
  snprintf(spills, sizeof spills, "%u/%u", ki->vgpr_spill_count, ki->sgpr_spill_count);
  ob_printf(b, "%s ", pr.flagged ? "!" : " ");
  if (w) ob_printf(b, "%-*s ", w, ki->name);
  ob_printf(b, "%5u %5u %5u %7s %8u %6u %7u %4u %6u  %-*s", ki->vgpr_count, ki->agpr_count,
            ki->sgpr_count, spills, ki->private_segment_fixed_size, ki->group_segment_fixed_size,
            ki->kernarg_segment_size, ki->wavefront_size, ki->max_flat_workgroup_size,
            w ? 0 : 24, occs);
  if (!w) ob_printf(b, "  %s", ki->name);
  ob_printf(b, "%s", ki->kd_mismatch ? "  (descriptor differs from note)" : "");
  if (ki->hidden_args_beyond_segment)
    ob_printf(b, "  (%u hidden args past the kernarg segment: absent)",
              ki->hidden_args_beyond_segment);
  ob_printf(b, "\n");
}

/* Workgroup sizes of the pressure report: --block N alone, .reqd_workgroup_size alone, or
 * 64, 128, ... 1024 (from 32 for wave32) up to .max_flat_workgroup_size (the maximum itself
 * when it is no power of 2). Returns the count. */
static int pressure_sizes(const hsad_kernel_info_t *ki, const inspect_opts_t *o,
                          uint32_t out[8]) {
  if (ki->present & HSAD_KI_HAS_REQD_WORKGROUP_SIZE) {
    out[0] = ki->reqd_workgroup_size[0] * ki->reqd_workgroup_size[1] * ki->reqd_workgroup_size[2];
    return 1;
  }
  if (o->block_set) {
    out[0] = o->block;
    return 1;
  }
  int n = 0;
  for (uint32_t w = ki->wavefront_size == 32 ? 32 : 64; w <= 1024 && n < 7; w *= 2) {
    if (w >= ki->max_flat_workgroup_size) {
      out[n++] = ki->max_flat_workgroup_size;
      break;
    }
    out[n++] = w;
  }
  return n;
}

static void pressure_table(obuf_t *b, const hsad_kernel_t *k, const inspect_opts_t *o, int w) {
  const hsad_kernel_info_t *ki = hsad_kernel_info(k);
  uint32_t sizes[8];
  int n = pressure_sizes(ki, o, sizes);
  for (int i = 0; i < n; i++) {
    hsad_pressure_row_t r;
    ob_printf(b, "  %-*s %5u ", w, ki->name, sizes[i]);
    if (hsad_kernel_pressure_at(k, NULL, sizes[i], 0, &r) != HSAD_OK) {
      ob_printf(b, "n/a: %s\n", hsad_last_error());
      continue;
    }
    char spill[24], cliff[40], cost[40];
    snprintf(spill, sizeof spill, "%u/%u", r.vgpr_spill_count, r.sgpr_spill_count);
    if (r.cliff_vgprs_fewer)
      snprintf(cliff, sizeof cliff, "-%u VGPRs: %u waves", r.cliff_vgprs_fewer,
               r.cliff_waves_per_simd);
    else
      snprintf(cliff, sizeof cliff, "none");
    if (r.block_cost_percent)
      snprintf(cost, sizeof cost, "%u%% (best %u)", r.block_cost_percent, r.best_workgroup_size);
    else
      snprintf(cost, sizeof cost, "0%% (best)");
    ob_printf(b, "%5u %5u %5u %7s %8u%s %9llu %6u %6u %5u %-10s %-19s %s\n", r.vgpr_count,
              r.agpr_count, r.sgpr_count, spill, r.scratch_per_work_item,
              r.dynamic_stack ? "+" : " ", (unsigned long long)r.scratch_per_wave,
              r.lds_per_workgroup, r.occupancy.waves_per_simd, r.occupancy.workgroups_per_cu,
              hsad_occ_limiter_name(r.occupancy.limiter), cliff, cost);
  }
}

static void pressure_json(obuf_t *b, const hsad_kernel_t *k, const inspect_opts_t *o) {
  const hsad_kernel_info_t *ki = hsad_kernel_info(k);
  ob_printf(b, "{\"name\": ");
  ob_str(b, ki->name);
  ob_printf(b, ", \"symbol\": ");
  ob_str(b, ki->symbol);
  ob_printf(b, ", \"wavefront_size\": %u, \"max_flat_workgroup_size\": %u, \"pressure\": [",
            ki->wavefront_size, ki->max_flat_workgroup_size);
  uint32_t sizes[8];
  int n = pressure_sizes(ki, o, sizes);
  for (int i = 0; i < n; i++) {
    hsad_pressure_row_t r;
    ob_printf(b, "%s{\"workgroup_size\": %u", i ? ", " : "", sizes[i]);
    if (hsad_kernel_pressure_at(k, NULL, sizes[i], 0, &r) != HSAD_OK) {
      ob_printf(b, ", \"error\": ");
      ob_str(b, hsad_last_error());
      ob_printf(b, "}");
      continue;
    }
    ob_printf(b,
              ", \"vgpr_count\": %u, \"agpr_count\": %u, \"sgpr_count\": %u, "
              "\"vgpr_spill_count\": %u, \"sgpr_spill_count\": %u, "
              "\"scratch_per_work_item\": %u, \"scratch_per_wave\": %llu, "
              "\"dynamic_stack\": %s, \"lds_per_workgroup\": %u, \"waves_per_simd\": %u, "
              "\"waves_per_cu\": %u, \"workgroups_per_cu\": %u, \"wgp_mode\": %s, "
              "\"limiter\": \"%s\", \"vgprs_counted\": %u, \"vgprs_allocated\": %u, "
              "\"next_cliff\": ",
              r.vgpr_count, r.agpr_count, r.sgpr_count, r.vgpr_spill_count, r.sgpr_spill_count,
              r.scratch_per_work_item, (unsigned long long)r.scratch_per_wave,
              yes(r.dynamic_stack), r.lds_per_workgroup, r.occupancy.waves_per_simd,
              r.occupancy.waves_per_cu, r.occupancy.workgroups_per_cu, yes(r.occupancy.wgp_mode),
              hsad_occ_limiter_name(r.occupancy.limiter), r.regs, r.occupancy.vgprs_allocated);
    if (r.cliff_vgprs_fewer)
      ob_printf(b, "{\"vgprs_fewer\": %u, \"waves_per_simd\": %u}", r.cliff_vgprs_fewer,
                r.cliff_waves_per_simd);
    else
      ob_printf(b, "null");
    ob_printf(b,
              ", \"work_items_per_cu\": %u, \"best_workgroup_size\": %u, "
              "\"best_work_items_per_cu\": %u, \"block_cost_percent\": %u}",
              r.work_items_per_cu, r.best_workgroup_size, r.best_work_items_per_cu,
              r.block_cost_percent);
  }
  ob_printf(b, "]}");
}

static const char *compression_name(hsad_compression_t m) {
  return m == HSAD_COMPRESSION_ZLIB ? "zlib" : m == HSAD_COMPRESSION_ZSTD ? "zstd" : "none";
}

/* `selected`: the target ID the entry was selected for (NULL: every entry listed). */
static int inspect_one(obuf_t *b, const hsad_codeobj_container_t *c, size_t i,
                       const inspect_opts_t *o, int first, const char *selected) {
  const hsad_codeobj_entry_t *e = hsad_codeobj_container_entry(c, i);
  hsad_codeobj_t *co;
  if (hsad_codeobj_load_entry(c, i, &co) != HSAD_OK) {
    fprintf(stderr, "hsad inspect: %s\n", hsad_last_error());
    return 1;
  }
  const hsad_codeobj_info_t *ci = hsad_codeobj_info(co);
  const hsad_kernel_t *only = NULL;
  if (o->kernel && hsad_codeobj_kernel_find(co, o->kernel, &only) != HSAD_OK) {
    fprintf(stderr, "hsad inspect: %s\n", hsad_last_error());
    hsad_codeobj_destroy(co);
    return 1;
  }
  bool bundled = hsad_codeobj_container_kind(c) != HSAD_CONTAINER_CODE_OBJECT;
  if (o->json) {
    ob_printf(b, "%s{", first ? "" : ",\n");
    if (bundled) {
      ob_printf(b, "\"entry_id\": ");
      ob_str(b, e->entry_id);
      ob_printf(b, ", \"bundle_index\": %u, ", e->bundle_index);
      if (e->compression != HSAD_COMPRESSION_NONE)
        ob_printf(b, "\"compression\": \"%s\", \"compressed_version\": %u, "
                     "\"compressed_offset\": %llu, ",
                  compression_name(e->compression), e->compressed_version,
                  (unsigned long long)e->compressed_offset);
      ob_printf(b, "\"offset\": %llu, ", (unsigned long long)e->offset);
    }
    if (selected) {
      ob_printf(b, "\"selected_for\": ");
      ob_str(b, selected);
      ob_printf(b, ", ");
    }
    ob_printf(b, "\"target\": ");
    ob_str(b, ci->target);
    ob_printf(b, ", \"code_object_version\": %u, \"kernels\": [", ci->code_object_version);
    int n = 0;
    for (uint32_t k = 0; k < ci->kernel_count; k++) {
      const hsad_kernel_t *kern = hsad_codeobj_kernel_at(co, k);
      if (only && kern != only) continue;
      ob_printf(b, "%s", n++ ? ",\n  " : "\n  ");
      if (o->pressure) pressure_json(b, kern, o);
      else json_kernel(b, kern, o);
    }
    ob_printf(b, "]}");
  } else {
    char where[600] = "", how[64] = "";
    if (e->compression != HSAD_COMPRESSION_NONE)
      snprintf(how, sizeof how, " (compressed: CCOB v%u %s)", e->compressed_version,
               compression_name(e->compression));
    if (hsad_codeobj_container_kind(c) == HSAD_CONTAINER_HOST_FATBIN ||
        hsad_codeobj_container_bundle_count(c) > 1)
      snprintf(where, sizeof where, "[bundle %u%s: %s]", e->bundle_index, how, e->entry_id);
    else if (bundled)
      snprintf(where, sizeof where, "[%s%s]", e->entry_id, how);
    ob_printf(b, "%s%s  %s  code object v%u  %u kernels\n", first ? "" : "\n", where,
              ci->target, ci->code_object_version, ci->kernel_count);
    int w = 6;
    for (uint32_t k = 0; k < ci->kernel_count; k++) {
      const hsad_kernel_t *kern = hsad_codeobj_kernel_at(co, k);
      if (only && kern != only) continue;
      size_t len = strlen(hsad_kernel_info(kern)->name);
      if ((int)len > w) w = len > 48 ? 0 : (int)len;
      if (!w) break;
    }
    if (o->pressure) {
      /* names stay whole: the column is as wide as the longest */
      int pw = 6;
      for (uint32_t k = 0; k < ci->kernel_count; k++) {
        const hsad_kernel_t *kern = hsad_codeobj_kernel_at(co, k);
        if (only && kern != only) continue;
        int len = (int)strlen(hsad_kernel_info(kern)->name);
        if (len > pw) pw = len;
      }
      ob_printf(b, "  %-*s %5s %5s %5s %5s %7s %9s %9s %6s %6s %5s %-10s %-19s %s\n", pw,
                "kernel", "block", "VGPR", "AGPR", "SGPR", "spill", "scr/item", "scr/wave",
                "LDS", "w/SIMD", "WG/CU", "limiter", "next cliff", "block cost");
      for (uint32_t k = 0; k < ci->kernel_count; k++) {
        const hsad_kernel_t *kern = hsad_codeobj_kernel_at(co, k);
        if (only && kern != only) continue;
        pressure_table(b, kern, o, pw);
      }
      hsad_codeobj_destroy(co);
      return 0;
    }
    ob_printf(b, "  ");
    if (w) ob_printf(b, "%-*s ", w, "kernel");
    ob_printf(b, "%5s %5s %5s %7s %8s %6s %7s %4s %6s  %s%s\n", "VGPR", "AGPR", "SGPR", "spill",
              "scratch", "LDS", "kernarg", "wave", "maxWG", "waves/SIMD@block limiter",
              w ? "" : "  kernel");
    for (uint32_t k = 0; k < ci->kernel_count; k++) {
      const hsad_kernel_t *kern = hsad_codeobj_kernel_at(co, k);
      if (only && kern != only) continue;
      table_kernel(b, kern, o, w);
    }
  }
  hsad_codeobj_destroy(co);
  return 0;
}

static int inspect_run(const inspect_opts_t *o, obuf_t *b) {
  hsad_codeobj_container_t *c;
  if (hsad_codeobj_container_open_file(o->file, &c) != HSAD_OK) {
    fprintf(stderr, "hsad inspect: %s\n", hsad_last_error());
    return 1;
  }
  int rc = 0;
  size_t n = hsad_codeobj_container_entry_count(c);
  bool many = hsad_codeobj_container_kind(c) != HSAD_CONTAINER_CODE_OBJECT;
  if (o->target) {
    /* The matching entry of every bundle (a HIP fat binary has one per translation unit).
     * A target without xnack ("gfx90a") is what a user types for a device; a device runs
     * with xnack off unless HSA_XNACK=1, so with both xnack+ and xnack- entries present it
     * loads the xnack- ones: pick those, and say so. */
    char target[80];
    snprintf(target, sizeof target, "%s", o->target);
    hsad_target_id_t want;
    if (hsad_target_id_parse(o->target, &want) == HSAD_OK && want.xnack == HSAD_FEATURE_ANY) {
      bool on = false, off = false;
      for (size_t i = 0; i < n; i++) {
        hsad_target_id_t t;
        if (hsad_target_id_parse(hsad_codeobj_container_entry(c, i)->target, &t) != HSAD_OK ||
            !hsad_target_id_compatible(&t, &want))
          continue;
        on |= t.xnack == HSAD_FEATURE_ON;
        off |= t.xnack == HSAD_FEATURE_OFF;
      }
      if (on && off) {
        want.xnack = HSAD_FEATURE_OFF;
        hsad_target_id_format(&want, target, sizeof target);
        if (!o->json)
          ob_printf(b, "--target %s: picked the %s entries, as a %s device with xnack off "
                       "(the default) loads them; the file also has xnack+ entries\n\n",
                    o->target, target, want.processor);
      }
    }
    size_t idx;
    if (hsad_codeobj_container_select(c, target, &idx) != HSAD_OK) {
      fprintf(stderr, "hsad inspect: %s\n", hsad_last_error());
      rc = 1;
    } else if (!many) {
      rc = inspect_one(b, c, idx, o, 1, target);
    } else {
      ob_printf(b, o->json ? "[" : "");
      int first = 1;
      uint32_t nb = hsad_codeobj_container_bundle_count(c);
      for (uint32_t bi = 0; bi < nb && !rc; bi++) {
        if (hsad_codeobj_container_select_in_bundle(c, bi, target, &idx) != HSAD_OK) continue;
        rc = inspect_one(b, c, idx, o, first, target);
        first = 0;
      }
      ob_printf(b, o->json ? "]" : "");
    }
  } else {
    if (o->json && many) ob_printf(b, "[");
    for (size_t i = 0; i < n && !rc; i++) rc = inspect_one(b, c, i, o, i == 0, NULL);
    if (o->json && many) ob_printf(b, "]");
  }
  if (o->json) ob_printf(b, "\n");
  hsad_codeobj_container_destroy(c);
  return rc;
}

static int parse_uint(const char *s, unsigned *out) {
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (!*s || *end || v > 1u << 20) return -1;
  *out = (unsigned)v;
  return 0;
}

int hsad_cmd_inspect(int argc, char **argv) {
  inspect_opts_t o = {.block = 256, .floor = 2, .repeat = 1};
  /* getopt_long: `--opt value` and `--opt=value` */
  enum { OPT_TARGET = 256, OPT_KERNEL, OPT_JSON, OPT_BLOCK, OPT_FLOOR, OPT_REPEAT, OPT_PRESSURE };
  static const struct option longopts[] = {
      {"target", required_argument, NULL, OPT_TARGET},
      {"kernel", required_argument, NULL, OPT_KERNEL},
      {"json", no_argument, NULL, OPT_JSON},
      {"block", required_argument, NULL, OPT_BLOCK},
      {"floor", required_argument, NULL, OPT_FLOOR},
      {"repeat", required_argument, NULL, OPT_REPEAT},
      {"pressure", no_argument, NULL, OPT_PRESSURE},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  opterr = 0;
  optind = 1;
  int c;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    unsigned *uval = NULL;
    const char *oname = "";
    switch (c) {
    case 'h':
      inspect_usage(stdout);
      return 0;
    case OPT_TARGET: o.target = optarg; break;
    case OPT_KERNEL: o.kernel = optarg; break;
    case OPT_JSON: o.json = 1; break;
    case OPT_PRESSURE: o.pressure = 1; break;
    case OPT_BLOCK: uval = &o.block, oname = "--block", o.block_set = 1; break;
    case OPT_FLOOR: uval = &o.floor, oname = "--floor"; break;
    case OPT_REPEAT: uval = &o.repeat, oname = "--repeat"; break;
    case ':':
      fprintf(stderr, "hsad inspect: option '%s' needs a value\n", argv[optind - 1]);
      return 2;
    default:
      fprintf(stderr, "hsad inspect: unknown option '%s'\n", argv[optind - 1]);
      inspect_usage(stderr);
      return 2;
    }
    if (uval && (parse_uint(optarg, uval) || (*uval == 0 && uval != &o.floor))) {
      fprintf(stderr, "hsad inspect: %s %s: expected a positive integer\n", oname, optarg);
      return 2;
    }
  }
  for (int i = optind; i < argc; i++) {
    if (o.file) {
      fprintf(stderr, "hsad inspect: one FILE only (got %s and %s)\n", o.file, argv[i]);
      return 2;
    }
    o.file = argv[i];
  }
  if (!o.file) {
    inspect_usage(stderr);
    return 2;
  }
  obuf_t b = {0};
  int rc = 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (unsigned r = 0; r < o.repeat && !rc; r++) {
    b.n = 0;
    rc = inspect_run(&o, &b);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (b.oom) {
    fprintf(stderr, "hsad inspect: out of memory formatting the output\n");
    rc = 1;
  }
  if (!rc && b.n) fwrite(b.p, 1, b.n, stdout);
  if (o.repeat > 1) {
    double ms = ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    fprintf(stderr, "hsad inspect: %u runs, %.3f ms per run (load + metadata + format)\n",
            o.repeat, ms / o.repeat);
  }
  free(b.p);
  return rc;
}
