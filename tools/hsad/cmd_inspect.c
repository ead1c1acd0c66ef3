/* hsad inspect - code object metadata, registers, occupancy (codeobj/; no GPU, no ROCr). */
#include "tools/hsad/hsad_cli.h"

#include "codeobj/hsad_codeobj.h"

#include <errno.h>
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
          "                         [--demangle]\n"
          "  FILE          code object (.hsaco), clang offload bundle, or host ELF with .hip_fatbin;\n"
          "                NVIDIA: a cubin, a fatbin or PTX (kernels, registers, shared, local,\n"
          "                parameter offset:size, blocks per SM; --pressure: per block size)\n"
          "  --target ISA  only the code object for this target ID (e.g. gfx90a:xnack-)\n"
          "  --kernel NAME only this kernel\n"
          "  --json        JSON: {\"target\", \"code_object_version\", \"kernels\": [...]} per code\n"
          "                object (an array of them, with \"entry_id\", for bundles)\n"
          "  --block N     workgroup size for the occupancy column (default 256, capped at the\n"
          "                kernel's .max_flat_workgroup_size)\n"
          "  --floor N     flag kernels below N waves per SIMD (default 2)\n"
          "  --repeat N    load and format N times; print the mean time per run to stderr\n"
          "  --demangle    show C++ kernel names demangled (JSON: a \"demangled\" field); --kernel\n"
          "                also takes the demangled or plain function name\n"
          "  --pressure    register-pressure report per kernel and workgroup size: VGPR/AGPR/SGPR,\n"
          "                spills, scratch per work-item and per wave, LDS, waves per SIMD and\n"
          "                workgroups per CU with the limiter, the next cliff (VGPRs fewer for\n"
          "                one more wave per SIMD) and the cost against the best workgroup size;\n"
          "                sizes 64..1024 (32.. for wave32) up to .max_flat_workgroup_size, or\n"
          "                only --block N when given\n");
}

typedef struct {
  const char *file, *target, *kernel;
  int json, pressure, block_set, demangle;
  unsigned block, floor, repeat;
  hsad_cli_t cli;
} inspect_opts_t;

#ifndef HSAD_NO_AMD /* AMD code objects: codeobj/ (not in make BACKENDS=nvidia) */
/* ---- output buffer (formatting is timed too, so it goes to memory first) ---- */
typedef struct {
  char *p;
  size_t n, cap;
  int oom;
  json_object *json; /* --json: the document (an array when json_many) */
  bool json_many;
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

/* ---- JSON (json-c) ---- */
#define J_ADD(o, key, val) json_object_object_add((o), (key), (val))
static json_object *j_u(uint64_t v) { return json_object_new_uint64(v); }
static json_object *j_s(const char *v) { return json_object_new_string(v); }
static json_object *j_b(bool v) { return json_object_new_boolean(v); }
static json_object *j_u3(const uint32_t v[3]) {
  json_object *a = json_object_new_array_ext(3);
  for (int i = 0; i < 3; i++) json_object_array_add(a, j_u(v[i]));
  return a;
}

/* "demangled": the C++ name of a mangled kernel (with --demangle), nothing otherwise */
/* A kernel's JSON object, begun with its names: "name", "demangled" (--demangle, a mangled
 * name) and "symbol" (json_kernel's and pressure_json's first fields). */
static json_object *j_kernel_names(const hsad_kernel_info_t *ki, const inspect_opts_t *opt) {
  json_object *j = json_object_new_object();
  J_ADD(j, "name", j_s(ki->name));
  char *dm = opt->demangle ? hsad_cli_demangle(ki->name) : NULL;
  if (dm) J_ADD(j, "demangled", j_s(dm));
  free(dm);
  J_ADD(j, "symbol", j_s(ki->symbol));
  return j;
}

/* "args": every argument's metadata (explicit and hidden), as the code object gives it. */
static json_object *json_kernel_args(const hsad_kernel_info_t *ki) {
  json_object *args = json_object_new_array_ext((int)ki->arg_count);
  for (uint32_t i = 0; i < ki->arg_count; i++) {
    const hsad_kernel_arg_t *a = &ki->args[i];
    json_object *ja = json_object_new_object();
    if (a->present & HSAD_ARG_HAS_NAME) J_ADD(ja, "name", j_s(a->name));
    if (a->present & HSAD_ARG_HAS_TYPE_NAME) J_ADD(ja, "type_name", j_s(a->type_name));
    J_ADD(ja, "offset", j_u(a->offset));
    J_ADD(ja, "size", j_u(a->size));
    J_ADD(ja, "value_kind", j_s(hsad_value_kind_name(a->value_kind)));
    if (a->present & HSAD_ARG_HAS_ADDRESS_SPACE)
      J_ADD(ja, "address_space", j_s(hsad_address_space_name(a->address_space)));
    if (a->present & HSAD_ARG_HAS_ACCESS) J_ADD(ja, "access", j_s(hsad_access_name(a->access)));
    if (a->present & HSAD_ARG_HAS_ACTUAL_ACCESS)
      J_ADD(ja, "actual_access", j_s(hsad_access_name(a->actual_access)));
    if (a->present & HSAD_ARG_HAS_POINTEE_ALIGN) J_ADD(ja, "pointee_align", j_u(a->pointee_align));
    if (a->present & HSAD_ARG_HAS_IS_CONST) J_ADD(ja, "is_const", j_b(a->is_const));
    if (a->present & HSAD_ARG_HAS_IS_RESTRICT) J_ADD(ja, "is_restrict", j_b(a->is_restrict));
    if (a->present & HSAD_ARG_HAS_IS_VOLATILE) J_ADD(ja, "is_volatile", j_b(a->is_volatile));
    if (a->present & HSAD_ARG_HAS_IS_PIPE) J_ADD(ja, "is_pipe", j_b(a->is_pipe));
    json_object_array_add(args, ja);
  }
  return args;
}

/* "descriptor": the kernel descriptor's fields and what they decode to. */
static json_object *json_kernel_descriptor(const hsad_kernel_info_t *ki) {
  const hsad_kernel_descriptor_t *d = &ki->descriptor;
  const hsad_kd_fields_t *f = &ki->kd;
  json_object *jd = json_object_new_object();
  J_ADD(jd, "group_segment_fixed_size", j_u(d->group_segment_fixed_size));
  J_ADD(jd, "private_segment_fixed_size", j_u(d->private_segment_fixed_size));
  J_ADD(jd, "kernarg_size", j_u(d->kernarg_size));
  J_ADD(jd, "kernel_code_entry_byte_offset",
        json_object_new_int64((int64_t)d->kernel_code_entry_byte_offset));
  J_ADD(jd, "compute_pgm_rsrc1", j_u(d->compute_pgm_rsrc1));
  J_ADD(jd, "compute_pgm_rsrc2", j_u(d->compute_pgm_rsrc2));
  J_ADD(jd, "compute_pgm_rsrc3", j_u(d->compute_pgm_rsrc3));
  J_ADD(jd, "kernel_code_properties", j_u(d->kernel_code_properties));
  J_ADD(jd, "granulated_vgpr_count", j_u(f->granulated_vgpr_count));
  J_ADD(jd, "granulated_sgpr_count", j_u(f->granulated_sgpr_count));
  J_ADD(jd, "vgpr_alloc", j_u(f->vgpr_alloc));
  J_ADD(jd, "sgpr_alloc", j_u(f->sgpr_alloc));
  J_ADD(jd, "enable_private_segment", j_b(f->enable_private_segment));
  J_ADD(jd, "user_sgpr_count", j_u(f->user_sgpr_count));
  J_ADD(jd, "wavefront_size32", j_b(f->wavefront_size32));
  J_ADD(jd, "uses_dynamic_stack", j_b(f->uses_dynamic_stack));
  J_ADD(jd, "wgp_mode", j_b(f->wgp_mode));
  J_ADD(jd, "accum_offset", j_u(f->accum_offset));
  J_ADD(jd, "kernarg_preload_length", j_u(f->kernarg_preload_length));
  J_ADD(jd, "kernarg_preload_offset", j_u(f->kernarg_preload_offset));
  J_ADD(jd, "mismatch", j_u(ki->kd_mismatch));
  return jd;
}

/* "occupancy" at the workgroup size of --block (clamped to the kernel's maximum) and
 * "pressure" (scratch, spills, low occupancy below --floor) into j. */
static void json_kernel_occupancy(json_object *j, const hsad_kernel_t *k,
                                  const hsad_kernel_info_t *ki, const inspect_opts_t *o) {
  uint32_t block = o->block < ki->max_flat_workgroup_size ? o->block : ki->max_flat_workgroup_size;
  hsad_occupancy_t occ;
  hsad_status_t st = hsad_kernel_occupancy(k, NULL, block, 0, &occ);
  json_object *jo = json_object_new_object();
  if (st == HSAD_OK) {
    J_ADD(jo, "workgroup_size", j_u(block));
    J_ADD(jo, "waves_per_simd", j_u(occ.waves_per_simd));
    J_ADD(jo, "waves_per_cu", j_u(occ.waves_per_cu));
    J_ADD(jo, "workgroups_per_cu", j_u(occ.workgroups_per_cu));
    J_ADD(jo, "wgp_mode", j_b(occ.wgp_mode));
    J_ADD(jo, "limiter", j_s(hsad_occ_limiter_name(occ.limiter)));
    J_ADD(jo, "vgprs_allocated", j_u(occ.vgprs_allocated));
    J_ADD(jo, "lds_per_workgroup", j_u(occ.lds_per_workgroup));
  } else {
    J_ADD(jo, "error", j_s(hsad_last_error()));
  }
  J_ADD(j, "occupancy", jo);
  hsad_pressure_report_t pr;
  hsad_kernel_pressure(k, st == HSAD_OK ? &occ : NULL, o->floor, &pr);
  json_object *jp = json_object_new_object();
  J_ADD(jp, "scratch_per_work_item", j_u(pr.scratch_per_work_item));
  J_ADD(jp, "scratch_per_wave", j_u(pr.scratch_per_wave));
  J_ADD(jp, "spills", j_b(pr.spills));
  J_ADD(jp, "low_occupancy", j_b(pr.low_occupancy));
  J_ADD(jp, "flagged", j_b(pr.flagged));
  J_ADD(j, "pressure", jp);
}

static json_object *json_kernel(const hsad_kernel_t *k, const inspect_opts_t *o) {
  const hsad_kernel_info_t *ki = hsad_kernel_info(k);
  json_object *j = j_kernel_names(ki, o);
  if (ki->present & HSAD_KI_HAS_LANGUAGE) J_ADD(j, "language", j_s(ki->language));
  if (ki->present & HSAD_KI_HAS_LANGUAGE_VERSION) {
    json_object *v = json_object_new_array_ext(2);
    json_object_array_add(v, j_u(ki->language_version[0]));
    json_object_array_add(v, j_u(ki->language_version[1]));
    J_ADD(j, "language_version", v);
  }
  if (ki->present & HSAD_KI_HAS_KIND) J_ADD(j, "kind", j_s(ki->kind));
  if (ki->present & HSAD_KI_HAS_VEC_TYPE_HINT) J_ADD(j, "vec_type_hint", j_s(ki->vec_type_hint));
  if (ki->present & HSAD_KI_HAS_DEVICE_ENQUEUE_SYMBOL)
    J_ADD(j, "device_enqueue_symbol", j_s(ki->device_enqueue_symbol));
  if (ki->present & HSAD_KI_HAS_REQD_WORKGROUP_SIZE)
    J_ADD(j, "reqd_workgroup_size", j_u3(ki->reqd_workgroup_size));
  if (ki->present & HSAD_KI_HAS_WORKGROUP_SIZE_HINT)
    J_ADD(j, "workgroup_size_hint", j_u3(ki->workgroup_size_hint));
  J_ADD(j, "kernarg_segment_size", j_u(ki->kernarg_segment_size));
  J_ADD(j, "kernarg_segment_align", j_u(ki->kernarg_segment_align));
  J_ADD(j, "group_segment_fixed_size", j_u(ki->group_segment_fixed_size));
  J_ADD(j, "private_segment_fixed_size", j_u(ki->private_segment_fixed_size));
  J_ADD(j, "wavefront_size", j_u(ki->wavefront_size));
  J_ADD(j, "sgpr_count", j_u(ki->sgpr_count));
  J_ADD(j, "vgpr_count", j_u(ki->vgpr_count));
  if (ki->present & HSAD_KI_HAS_AGPR_COUNT) J_ADD(j, "agpr_count", j_u(ki->agpr_count));
  if (ki->present & HSAD_KI_HAS_SGPR_SPILL_COUNT)
    J_ADD(j, "sgpr_spill_count", j_u(ki->sgpr_spill_count));
  if (ki->present & HSAD_KI_HAS_VGPR_SPILL_COUNT)
    J_ADD(j, "vgpr_spill_count", j_u(ki->vgpr_spill_count));
  J_ADD(j, "max_flat_workgroup_size", j_u(ki->max_flat_workgroup_size));
  if (ki->hidden_args_beyond_segment)
    J_ADD(j, "hidden_args_beyond_segment", j_u(ki->hidden_args_beyond_segment));
  if (ki->present & HSAD_KI_HAS_USES_DYNAMIC_STACK)
    J_ADD(j, "uses_dynamic_stack", j_b(ki->uses_dynamic_stack));
  if (ki->present & HSAD_KI_HAS_WGP_MODE)
    J_ADD(j, "workgroup_processor_mode", j_b(ki->workgroup_processor_mode));
  if (ki->present & HSAD_KI_HAS_UNIFORM_WORK_GROUP_SIZE)
    J_ADD(j, "uniform_work_group_size", j_b(ki->uniform_work_group_size));
  J_ADD(j, "args", json_kernel_args(ki));
  J_ADD(j, "descriptor", json_kernel_descriptor(ki));
  json_kernel_occupancy(j, k, ki, o);
  return j;
}

/* The name shown in tables: demangled with --demangle (C++ names), else .name. Caller frees
 * *to_free. */
static const char *shown_name(const char *name, const inspect_opts_t *o, char **to_free) {
  *to_free = o->demangle ? hsad_cli_demangle(name) : NULL;
  return *to_free ? *to_free : name;
}

static size_t shown_len(const hsad_kernel_t *k, const inspect_opts_t *o) {
  char *dm;
  size_t n = strlen(shown_name(hsad_kernel_info(k)->name, o, &dm));
  free(dm);
  return n;
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
  char *dm;
  const char *name = shown_name(ki->name, o, &dm);
  ob_printf(b, "%s ", pr.flagged ? "!" : " ");
  if (w) ob_printf(b, "%-*s ", w, name);
  ob_printf(b, "%5u %5u %5u %7s %8u %6u %7u %4u %6u  %-*s", ki->vgpr_count, ki->agpr_count,
            ki->sgpr_count, spills, ki->private_segment_fixed_size, ki->group_segment_fixed_size,
            ki->kernarg_segment_size, ki->wavefront_size, ki->max_flat_workgroup_size,
            w ? 0 : 24, occs);
  if (!w) ob_printf(b, "  %s", name);
  free(dm);
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
    char *dm;
    ob_printf(b, "  %-*s %5u ", w, shown_name(ki->name, o, &dm), sizes[i]);
    free(dm);
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

static json_object *pressure_json(const hsad_kernel_t *k, const inspect_opts_t *o) {
  const hsad_kernel_info_t *ki = hsad_kernel_info(k);
  json_object *j = j_kernel_names(ki, o);
  J_ADD(j, "wavefront_size", j_u(ki->wavefront_size));
  J_ADD(j, "max_flat_workgroup_size", j_u(ki->max_flat_workgroup_size));
  uint32_t sizes[8];
  int n = pressure_sizes(ki, o, sizes);
  json_object *rows = json_object_new_array_ext(n);
  for (int i = 0; i < n; i++) {
    hsad_pressure_row_t r;
    json_object *jr = json_object_new_object();
    J_ADD(jr, "workgroup_size", j_u(sizes[i]));
    json_object_array_add(rows, jr);
    if (hsad_kernel_pressure_at(k, NULL, sizes[i], 0, &r) != HSAD_OK) {
      J_ADD(jr, "error", j_s(hsad_last_error()));
      continue;
    }
    J_ADD(jr, "vgpr_count", j_u(r.vgpr_count));
    J_ADD(jr, "agpr_count", j_u(r.agpr_count));
    J_ADD(jr, "sgpr_count", j_u(r.sgpr_count));
    J_ADD(jr, "vgpr_spill_count", j_u(r.vgpr_spill_count));
    J_ADD(jr, "sgpr_spill_count", j_u(r.sgpr_spill_count));
    J_ADD(jr, "scratch_per_work_item", j_u(r.scratch_per_work_item));
    J_ADD(jr, "scratch_per_wave", j_u(r.scratch_per_wave));
    J_ADD(jr, "dynamic_stack", j_b(r.dynamic_stack));
    J_ADD(jr, "lds_per_workgroup", j_u(r.lds_per_workgroup));
    J_ADD(jr, "waves_per_simd", j_u(r.occupancy.waves_per_simd));
    J_ADD(jr, "waves_per_cu", j_u(r.occupancy.waves_per_cu));
    J_ADD(jr, "workgroups_per_cu", j_u(r.occupancy.workgroups_per_cu));
    J_ADD(jr, "wgp_mode", j_b(r.occupancy.wgp_mode));
    J_ADD(jr, "limiter", j_s(hsad_occ_limiter_name(r.occupancy.limiter)));
    J_ADD(jr, "vgprs_counted", j_u(r.regs));
    J_ADD(jr, "vgprs_allocated", j_u(r.occupancy.vgprs_allocated));
    json_object *cliff = NULL; /* JSON null: no cliff */
    if (r.cliff_vgprs_fewer) {
      cliff = json_object_new_object();
      J_ADD(cliff, "vgprs_fewer", j_u(r.cliff_vgprs_fewer));
      J_ADD(cliff, "waves_per_simd", j_u(r.cliff_waves_per_simd));
    }
    J_ADD(jr, "next_cliff", cliff);
    J_ADD(jr, "work_items_per_cu", j_u(r.work_items_per_cu));
    J_ADD(jr, "best_workgroup_size", j_u(r.best_workgroup_size));
    J_ADD(jr, "best_work_items_per_cu", j_u(r.best_work_items_per_cu));
    J_ADD(jr, "block_cost_percent", j_u(r.block_cost_percent));
  }
  J_ADD(j, "pressure", rows);
  return j;
}

static const char *compression_name(hsad_compression_t m) {
  return m == HSAD_COMPRESSION_ZLIB ? "zlib" : m == HSAD_COMPRESSION_ZSTD ? "zstd" : "none";
}

/* The kernel --kernel names: its .name or symbol, else (C++) its demangled name or the plain
 * function name of exactly one demangled name ("scale" for "scale(float*, int)"), as hsad run
 * looks kernels up (hsad_cli_kernel_match). Not found or ambiguous: KERNEL_NOT_FOUND listing
 * the kernels, or those that match (demangled in parentheses; at most HSAD_CLI_LIST_MAX).
 * Returns 0 or the exit code. */
static const char *co_kernel_name(const void *co, uint32_t i) {
  return hsad_kernel_info(hsad_codeobj_kernel_at(co, i))->name;
}

static int find_kernel(const inspect_opts_t *o, const hsad_codeobj_t *co,
                       const hsad_kernel_t **out) {
  if (hsad_codeobj_kernel_find(co, o->kernel, out) == HSAD_OK) return 0;
  const hsad_codeobj_info_t *ci = hsad_codeobj_info(co);
  uint32_t i;
  char *why;
  *out = NULL;
  if (!hsad_cli_kernel_match(o->kernel, ci->kernel_count, co_kernel_name, co, &i, &why)) {
    *out = hsad_codeobj_kernel_at(co, i);
    return 0;
  }
  int rc = why ? hsad_cli_fail(&o->cli, 1, "HSAD_ERR_KERNEL_NOT_FOUND",
                               "HSAD_ERR_KERNEL_NOT_FOUND: %s: %s", ci->name, why)
               : hsad_cli_fail(&o->cli, 1, "HSAD_ERR_OUT_OF_MEMORY", "out of memory");
  free(why);
  return rc;
}

/* One entry as JSON: where it is in its container, its target and its kernels (only: the one
 * --kernel named, else all). */
static void inspect_one_json(obuf_t *b, const hsad_codeobj_container_t *c,
                             const hsad_codeobj_entry_t *e, const hsad_codeobj_t *co,
                             const hsad_kernel_t *only, const inspect_opts_t *o,
                             const char *selected) {
  const hsad_codeobj_info_t *ci = hsad_codeobj_info(co);
  json_object *j = json_object_new_object();
  if (hsad_codeobj_container_kind(c) != HSAD_CONTAINER_CODE_OBJECT) {
    J_ADD(j, "entry_id", j_s(e->entry_id));
    J_ADD(j, "bundle_index", j_u(e->bundle_index));
    if (e->compression != HSAD_COMPRESSION_NONE) {
      J_ADD(j, "compression", j_s(compression_name(e->compression)));
      J_ADD(j, "compressed_version", j_u(e->compressed_version));
      J_ADD(j, "compressed_offset", j_u(e->compressed_offset));
    }
    J_ADD(j, "offset", j_u(e->offset));
  }
  if (selected) J_ADD(j, "selected_for", j_s(selected));
  J_ADD(j, "target", j_s(ci->target));
  J_ADD(j, "code_object_version", j_u(ci->code_object_version));
  json_object *ks = json_object_new_array();
  for (uint32_t k = 0; k < ci->kernel_count; k++) {
    const hsad_kernel_t *kern = hsad_codeobj_kernel_at(co, k);
    if (only && kern != only) continue;
    json_object_array_add(ks, o->pressure ? pressure_json(kern, o) : json_kernel(kern, o));
  }
  J_ADD(j, "kernels", ks);
  if (b->json_many) json_object_array_add(b->json, j);
  else b->json = j;
}

/* The widest shown kernel name among those listed, at least 6; when `cap`, 0 once one is
 * longer than 48 (then the name goes last, unpadded). */
static int names_width(const hsad_codeobj_t *co, const hsad_kernel_t *only,
                       const inspect_opts_t *o, bool cap) {
  int w = 6;
  for (uint32_t k = 0; k < hsad_codeobj_info(co)->kernel_count; k++) {
    const hsad_kernel_t *kern = hsad_codeobj_kernel_at(co, k);
    if (only && kern != only) continue;
    size_t len = shown_len(kern, o);
    if (cap && (int)len > w) w = len > 48 ? 0 : (int)len;
    else if (!cap && (int)len > w) w = (int)len;
    if (!w) break;
  }
  return w;
}

/* One entry as text: its header line, then the kernel table (or --pressure's). */
static void inspect_one_text(obuf_t *b, const hsad_codeobj_container_t *c,
                             const hsad_codeobj_entry_t *e, const hsad_codeobj_t *co,
                             const hsad_kernel_t *only, const inspect_opts_t *o, int first) {
  const hsad_codeobj_info_t *ci = hsad_codeobj_info(co);
  char where[600] = "", how[64] = "";
  if (e->compression != HSAD_COMPRESSION_NONE)
    snprintf(how, sizeof how, " (compressed: CCOB v%u %s)", e->compressed_version,
             compression_name(e->compression));
  if (hsad_codeobj_container_kind(c) == HSAD_CONTAINER_HOST_FATBIN ||
      hsad_codeobj_container_bundle_count(c) > 1)
    snprintf(where, sizeof where, "[bundle %u%s: %s]", e->bundle_index, how, e->entry_id);
  else if (hsad_codeobj_container_kind(c) != HSAD_CONTAINER_CODE_OBJECT)
    snprintf(where, sizeof where, "[%s%s]", e->entry_id, how);
  ob_printf(b, "%s%s  %s  code object v%u  %u kernels\n", first ? "" : "\n", where,
            ci->target, ci->code_object_version, ci->kernel_count);
  int w = names_width(co, only, o, !o->pressure); /* --pressure: names stay whole */
  if (o->pressure)
    ob_printf(b, "  %-*s %5s %5s %5s %5s %7s %9s %9s %6s %6s %5s %-10s %-19s %s\n", w,
              "kernel", "block", "VGPR", "AGPR", "SGPR", "spill", "scr/item", "scr/wave",
              "LDS", "w/SIMD", "WG/CU", "limiter", "next cliff", "block cost");
  else {
    ob_printf(b, "  ");
    if (w) ob_printf(b, "%-*s ", w, "kernel");
    ob_printf(b, "%5s %5s %5s %7s %8s %6s %7s %4s %6s  %s%s\n", "VGPR", "AGPR", "SGPR", "spill",
              "scratch", "LDS", "kernarg", "wave", "maxWG", "waves/SIMD@block limiter",
              w ? "" : "  kernel");
  }
  for (uint32_t k = 0; k < ci->kernel_count; k++) {
    const hsad_kernel_t *kern = hsad_codeobj_kernel_at(co, k);
    if (only && kern != only) continue;
    if (o->pressure) pressure_table(b, kern, o, w);
    else table_kernel(b, kern, o, w);
  }
}

/* `selected`: the target ID the entry was selected for (NULL: every entry listed). */
static int inspect_one(obuf_t *b, const hsad_codeobj_container_t *c, size_t i,
                       const inspect_opts_t *o, int first, const char *selected) {
  const hsad_codeobj_entry_t *e = hsad_codeobj_container_entry(c, i);
  hsad_codeobj_t *co;
  hsad_status_t st = hsad_codeobj_load_entry(c, i, &co);
  if (st != HSAD_OK) return hsad_cli_fail(&o->cli, 1, hsad_status_name(st), "%s", hsad_last_error());
  const hsad_kernel_t *only = NULL;
  int rc = o->kernel ? find_kernel(o, co, &only) : 0;
  if (!rc && o->json) inspect_one_json(b, c, e, co, only, o, selected);
  else if (!rc) inspect_one_text(b, c, e, co, only, o, first);
  hsad_codeobj_destroy(co);
  return rc;
}

static int inspect_run(const inspect_opts_t *o, obuf_t *b) {
  hsad_codeobj_container_t *c;
  hsad_status_t st = hsad_codeobj_container_open_file(o->file, &c);
  if (st != HSAD_OK) return hsad_cli_fail(&o->cli, 1, hsad_status_name(st), "%s", hsad_last_error());
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
    if ((st = hsad_codeobj_container_select(c, target, &idx)) != HSAD_OK) {
      rc = hsad_cli_fail(&o->cli, 1, hsad_status_name(st), "%s", hsad_last_error());
    } else if (!many) {
      rc = inspect_one(b, c, idx, o, 1, target);
    } else {
      b->json_many = o->json;
      if (o->json) b->json = json_object_new_array();
      int first = 1;
      uint32_t nb = hsad_codeobj_container_bundle_count(c);
      for (uint32_t bi = 0; bi < nb && !rc; bi++) {
        if (hsad_codeobj_container_select_in_bundle(c, bi, target, &idx) != HSAD_OK) continue;
        rc = inspect_one(b, c, idx, o, first, target);
        first = 0;
      }
    }
  } else {
    b->json_many = o->json && many;
    if (b->json_many) b->json = json_object_new_array();
    for (size_t i = 0; i < n && !rc; i++) rc = inspect_one(b, c, i, o, i == 0, NULL);
  }
  if (o->json && !rc && b->json)
    ob_printf(b, "%s\n", json_object_to_json_string_ext(b->json, JSON_C_TO_STRING_SPACED |
                                                                    JSON_C_TO_STRING_NOSLASHESCAPE));
  json_object_put(b->json);
  b->json = NULL;
  hsad_codeobj_container_destroy(c);
  return rc;
}

#endif /* HSAD_NO_AMD */

static int parse_uint(const char *s, unsigned *out) {
  char *end;
  unsigned long v = strtoul(s, &end, 10);
  if (!*s || *end || v > 1u << 20) return -1;
  *out = (unsigned)v;
  return 0;
}

/* An AMD code object (codeobj/), --repeat times; in the build without AMD, the reason it is
 * not read. */
static int inspect_amd(const inspect_opts_t *o) {
#ifdef HSAD_NO_AMD
  FILE *f = fopen(o->file, "rb");
  if (!f)
    return hsad_cli_fail(&o->cli, 1, "HSAD_ERR_IO", "%s: cannot open: %s", o->file, strerror(errno));
  fclose(f);
  return hsad_cli_fail(&o->cli, 1, "HSAD_ERR_UNSUPPORTED", "%s: not a cubin, fatbin or PTX file: "
                       "AMD code objects (.hsaco, offload bundles) need hsad built with the AMD "
                       "backend (this one was built with make BACKENDS=nvidia)", o->file);
#else
  obuf_t b = {0};
  int rc = 0;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (unsigned r = 0; r < o->repeat && !rc; r++) {
    b.n = 0;
    rc = inspect_run(o, &b);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (b.oom) rc = hsad_cli_fail(&o->cli, 1, "HSAD_ERR_OUT_OF_MEMORY", "out of memory formatting the output");
  if (!rc && b.n) fwrite(b.p, 1, b.n, stdout);
  if (o->repeat > 1) {
    double ms = ((double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    fprintf(stderr, "hsad inspect: %u runs, %.3f ms per run (load + metadata + format)\n",
            o->repeat, ms / o->repeat);
  }
  free(b.p);
  return rc;
#endif
}

int hsad_cmd_inspect(int argc, char **argv) {
  inspect_opts_t o = {.block = 256, .floor = 2, .repeat = 1,
                      .cli = {.cmd = "inspect", .json = hsad_cli_wants_json(argc, argv)}};
  /* getopt_long: `--opt value` and `--opt=value` */
  enum { OPT_TARGET = 256, OPT_KERNEL, OPT_JSON, OPT_BLOCK, OPT_FLOOR, OPT_REPEAT, OPT_PRESSURE,
         OPT_DEMANGLE };
  static const struct option longopts[] = {
      {"target", required_argument, NULL, OPT_TARGET},
      {"kernel", required_argument, NULL, OPT_KERNEL},
      {"json", no_argument, NULL, OPT_JSON},
      {"block", required_argument, NULL, OPT_BLOCK},
      {"floor", required_argument, NULL, OPT_FLOOR},
      {"repeat", required_argument, NULL, OPT_REPEAT},
      {"pressure", no_argument, NULL, OPT_PRESSURE},
      {"demangle", no_argument, NULL, OPT_DEMANGLE},
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
    case OPT_DEMANGLE: o.demangle = 1; break;
    case OPT_BLOCK: uval = &o.block, oname = "--block", o.block_set = 1; break;
    case OPT_FLOOR: uval = &o.floor, oname = "--floor"; break;
    case OPT_REPEAT: uval = &o.repeat, oname = "--repeat"; break;
    default:
      return hsad_cli_getopt_fail(&o.cli, c, argv);
    }
    if (uval && (parse_uint(optarg, uval) || (*uval == 0 && uval != &o.floor)))
      return hsad_cli_fail(&o.cli, 2, "usage", "%s %s: expected a positive integer", oname,
                           optarg);
  }
  for (int i = optind; i < argc; i++) {
    if (o.file)
      return hsad_cli_fail(&o.cli, 2, "usage", "one FILE only (got %s and %s)", o.file, argv[i]);
    o.file = argv[i];
  }
  if (!o.file) {
    if (o.cli.json) return hsad_cli_fail(&o.cli, 2, "usage", "FILE is required");
    inspect_usage(stderr);
    return 2;
  }
  if (hsad_inspect_nv_detect(o.file)) { /* cubin, fatbin or PTX: nvcodeobj */
    hsad_nv_inspect_opts_t nv = {.file = o.file, .kernel = o.kernel, .json = o.json,
                                 .pressure = o.pressure, .block_set = o.block_set, .block = o.block};
    return hsad_inspect_nv(&nv, &o.cli);
  }
  return inspect_amd(&o);
}
