/* test_codeobj_target.c - target IDs (parse, format, compatibility, entry selection), code
 * object versions and targets read from real objects, and the decoded kernel descriptor: exact
 * fields of a known kernel and, for every gfx9 object, agreement with llvm-objdump-15's
 * .amdhsa_* directives. */
#define _GNU_SOURCE /* memmem */
#include "test_codeobj_util.h"

#include <dirent.h>

#ifndef CO_KERNDIR
#define CO_KERNDIR "build/kernels"
#endif

Test(codeobj_target, parse_and_format) {
  hsad_target_id_t t;
  char buf[64];
  cr_assert_eq(hsad_target_id_parse("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", &t), HSAD_OK);
  cr_assert_str_eq(t.processor, "gfx90a");
  cr_assert_eq(t.sramecc, HSAD_FEATURE_ON);
  cr_assert_eq(t.xnack, HSAD_FEATURE_OFF);
  cr_assert_eq(hsad_target_id_format(&t, buf, sizeof buf), 22);
  cr_assert_str_eq(buf, "gfx90a:sramecc+:xnack-");
  cr_assert_eq(hsad_target_id_parse("gfx1030", &t), HSAD_OK);
  cr_assert_eq(t.xnack, HSAD_FEATURE_ANY);
  cr_assert_eq(t.sramecc, HSAD_FEATURE_ANY);
  hsad_target_id_format(&t, buf, sizeof buf);
  cr_assert_str_eq(buf, "gfx1030");
  /* code object v3 spelling */
  cr_assert_eq(hsad_target_id_parse("amdgcn-amd-amdhsa--gfx906+xnack", &t), HSAD_OK);
  cr_assert_eq(t.xnack, HSAD_FEATURE_ON);
  cr_assert_eq(hsad_target_id_parse("amdgcn-amd-amdhsa-gfx803", &t), HSAD_OK);
  cr_assert_str_eq(t.processor, "gfx803");

  cr_assert_eq(hsad_target_id_parse("", &t), HSAD_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(hsad_last_error(), "target ID '': no processor name");
  cr_assert_eq(hsad_target_id_parse("gfx90a:xnack+:xnack-", &t), HSAD_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(hsad_last_error(), "target ID 'gfx90a:xnack+:xnack-': xnack given twice");
  cr_assert_eq(hsad_target_id_parse("gfx12345678901234567", &t), HSAD_ERR_INVALID_ARGUMENT);
  cr_assert_str_eq(hsad_last_error(), "target ID 'gfx12345678901234567': processor name longer "
                                      "than 15 characters");
  cr_assert_eq(hsad_target_id_parse(NULL, &t), HSAD_ERR_INVALID_ARGUMENT);
}

static bool compat(const char *co, const char *agent) {
  hsad_target_id_t a, b;
  cr_assert_eq(hsad_target_id_parse(co, &a), HSAD_OK);
  cr_assert_eq(hsad_target_id_parse(agent, &b), HSAD_OK);
  return hsad_target_id_compatible(&a, &b);
}

/* AMDGPUUsage "Target ID": a feature the code object leaves unspecified runs with either
 * setting; a specified one must equal the agent's. */
Test(codeobj_target, compatibility_rules) {
  cr_assert(compat("gfx90a:xnack-", "gfx90a:sramecc+:xnack-"));
  cr_assert_not(compat("gfx90a:xnack-", "gfx90a:sramecc+:xnack+"));
  cr_assert(compat("gfx90a", "gfx90a:sramecc+:xnack+"));
  cr_assert(compat("gfx90a", "gfx90a:sramecc-:xnack-"));
  cr_assert_not(compat("gfx90a:sramecc-", "gfx90a:sramecc+:xnack-"));
  cr_assert_not(compat("gfx906", "gfx90a"));
  cr_assert_not(compat("gfx90a", "gfx90"));
  cr_assert(compat("gfx90a:xnack+", "gfx90a")); /* an unspecified agent accepts any */
}

Test(codeobj_target, select_entry) {
  hsad_codeobj_container_t *c = NULL;
  cr_assert_eq(hsad_codeobj_container_open_file(FIX("hip_scale.bundle"), &c), HSAD_OK);
  cr_assert_eq(hsad_codeobj_container_kind(c), HSAD_CONTAINER_BUNDLE);
  cr_assert_eq(hsad_codeobj_container_entry_count(c), 2);
  const hsad_codeobj_entry_t *e0 = hsad_codeobj_container_entry(c, 0);
  const hsad_codeobj_entry_t *e1 = hsad_codeobj_container_entry(c, 1);
  cr_assert_str_eq(e0->entry_id, "hipv4-amdgcn-amd-amdhsa--gfx1030");
  cr_assert_str_eq(e0->target, "gfx1030");
  cr_assert_str_eq(e1->entry_id, "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-");
  cr_assert_str_eq(e1->target, "gfx90a:xnack-");
  cr_assert_null(hsad_codeobj_container_entry(c, 2));
  size_t i = 9;
  cr_assert_eq(hsad_codeobj_container_select(c, "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-", &i),
               HSAD_OK);
  cr_assert_eq(i, 1);
  cr_assert_eq(hsad_codeobj_container_select(c, "gfx1030", &i), HSAD_OK);
  cr_assert_eq(i, 0);
  cr_assert_eq(hsad_codeobj_container_select(c, NULL, &i), HSAD_OK);
  cr_assert_eq(i, 0);
  hsad_codeobj_t *co = NULL;
  cr_assert_eq(hsad_codeobj_load_entry(c, 1, &co), HSAD_OK, "%s", hsad_last_error());
  cr_assert(strstr(hsad_codeobj_info(co)->name,
                   "hip_scale.bundle[hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-]"));
  cr_assert_str_eq(hsad_codeobj_info(co)->target, "amdgcn-amd-amdhsa--gfx90a:xnack-");
  co_test_kernel(co, "_Z5scalePffi");
  hsad_codeobj_destroy(co);
  hsad_codeobj_container_destroy(c);

  /* a .hip_fatbin host object: entries of every bundle in the section */
  cr_assert_eq(hsad_codeobj_container_open_file(FIX("hip_scale.host.o"), &c), HSAD_OK);
  cr_assert_eq(hsad_codeobj_container_kind(c), HSAD_CONTAINER_HOST_FATBIN);
  cr_assert_eq(hsad_codeobj_container_entry_count(c), 2);
  cr_assert_eq(hsad_codeobj_container_select(c, "gfx906:sramecc-:xnack-", &i), HSAD_OK);
  cr_assert_str_eq(hsad_codeobj_container_entry(c, i)->target, "gfx906");
  hsad_codeobj_container_destroy(c);

  /* most specific wins: an exact xnack- entry beats an any entry */
  static const char *ids[] = {"hipv4-amdgcn-amd-amdhsa--gfx90a", "hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-"};
  size_t fsize;
  void *elf = co_test_read(FIX("kernels-gfx90a-v4.hsaco"), &fsize);
  size_t hdr = 32 + 2 * 24 + strlen(ids[0]) + strlen(ids[1]);
  size_t total = hdr + 2 * fsize;
  unsigned char *b = calloc(1, total);
  memcpy(b, "__CLANG_OFFLOAD_BUNDLE__", 24);
  uint64_t n = 2, off = hdr;
  memcpy(b + 24, &n, 8);
  size_t p = 32;
  for (int k = 0; k < 2; k++) {
    uint64_t sz = fsize, il = strlen(ids[k]);
    memcpy(b + p, &off, 8);
    memcpy(b + p + 8, &sz, 8);
    memcpy(b + p + 16, &il, 8);
    memcpy(b + p + 24, ids[k], il);
    p += 24 + il;
    memcpy(b + off, elf, fsize);
    off += fsize;
  }
  cr_assert_eq(hsad_codeobj_container_open_memory(b, total, "two.bundle", &c), HSAD_OK, "%s",
               hsad_last_error());
  cr_assert_eq(hsad_codeobj_container_select(c, "gfx90a:sramecc+:xnack-", &i), HSAD_OK);
  cr_assert_eq(i, 1);
  cr_assert_eq(hsad_codeobj_container_select(c, "gfx90a:xnack+", &i), HSAD_OK);
  cr_assert_eq(i, 0);
  hsad_codeobj_container_destroy(c);
  free(b);
  free(elf);
}

Test(codeobj_target, versions_and_targets_of_real_objects) {
  struct {
    const char *file, *target;
    uint32_t version, mach, v0, v1;
    hsad_feature_t xnack, sramecc;
  } cases[] = {
      {"kernels-gfx90a-v5.hsaco", "amdgcn-amd-amdhsa--gfx90a", 5, 0x3f, 1, 2, HSAD_FEATURE_ANY,
       HSAD_FEATURE_ANY},
      {"kernels-gfx90a-v4.hsaco", "amdgcn-amd-amdhsa--gfx90a", 4, 0x3f, 1, 1, HSAD_FEATURE_ANY,
       HSAD_FEATURE_ANY},
      {"kernels-gfx90a_xnack--v4.hsaco", "amdgcn-amd-amdhsa--gfx90a:xnack-", 4, 0x3f, 1, 1,
       HSAD_FEATURE_OFF, HSAD_FEATURE_ANY},
      {"kernels-gfx90a_sramecc+_xnack+-v5.hsaco", "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+", 5,
       0x3f, 1, 2, HSAD_FEATURE_ON, HSAD_FEATURE_ON},
      /* v3 has no amdhsa.target: taken from e_flags (XNACK_V3 and SRAMECC_V3 set) */
      {"kernels-gfx90a-v3.hsaco", "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+", 3, 0x3f, 1, 0,
       HSAD_FEATURE_ON, HSAD_FEATURE_ON},
      {"kernels-gfx1030-v5.hsaco", "amdgcn-amd-amdhsa--gfx1030", 5, 0x36, 1, 2,
       HSAD_FEATURE_UNSUPPORTED, HSAD_FEATURE_UNSUPPORTED},
      {"kernels-gfx906-v4.hsaco", "amdgcn-amd-amdhsa--gfx906", 4, 0x2f, 1, 1, HSAD_FEATURE_ANY,
       HSAD_FEATURE_ANY},
      {"kernels-gfx940-v5.hsaco", "amdgcn-amd-amdhsa--gfx940", 5, 0x40, 1, 2, HSAD_FEATURE_ANY,
       HSAD_FEATURE_ANY},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", CO_FIXDIR, cases[i].file);
    hsad_codeobj_t *co = co_test_load(path);
    const hsad_codeobj_info_t *ci = hsad_codeobj_info(co);
    cr_assert_str_eq(ci->target, cases[i].target, "%s", path);
    cr_assert_eq(ci->code_object_version, cases[i].version, "%s", path);
    cr_assert_eq(ci->mach, cases[i].mach, "%s", path);
    cr_assert_eq(ci->amdhsa_version[0], cases[i].v0, "%s", path);
    cr_assert_eq(ci->amdhsa_version[1], cases[i].v1, "%s", path);
    cr_assert_eq(ci->target_id.xnack, cases[i].xnack, "%s", path);
    cr_assert_eq(ci->target_id.sramecc, cases[i].sramecc, "%s", path);
    cr_assert_eq(ci->kernel_count, 8, "%s", path);
    hsad_codeobj_destroy(co);
  }
}

/* Exact decode of one known descriptor (gfx90a vadd, v5). */
Test(codeobj_target, descriptor_fields_gfx90a) {
  hsad_codeobj_t *co = co_test_load(FIX("kernels-gfx90a-v5.hsaco"));
  const hsad_kernel_info_t *ki = hsad_kernel_info(co_test_kernel(co, "lds2"));
  const hsad_kernel_descriptor_t *d = &ki->descriptor;
  const hsad_kd_fields_t *f = &ki->kd;
  cr_assert_eq(d->kernarg_size, 48);
  cr_assert_eq(d->group_segment_fixed_size, 0);
  cr_assert_eq(d->compute_pgm_rsrc1, 0xAF0040u);
  cr_assert_eq(d->compute_pgm_rsrc2, 0x8Cu);
  cr_assert_eq(d->compute_pgm_rsrc3, 1);
  cr_assert_eq(d->kernel_code_properties, 9);
  cr_assert_eq(f->granulated_vgpr_count, 0);
  cr_assert_eq(f->vgpr_alloc, 8); /* (0 + 1) * 8: gfx90a unified-file granule */
  cr_assert_eq(f->granulated_sgpr_count, 1);
  cr_assert_eq(f->sgpr_alloc, 16);
  cr_assert_eq(f->float_denorm_mode_32, 3);
  cr_assert_eq(f->float_denorm_mode_16_64, 3);
  cr_assert(f->dx10_clamp);
  cr_assert(f->ieee_mode);
  cr_assert_not(f->enable_private_segment);
  cr_assert_eq(f->user_sgpr_count, 6);
  cr_assert(f->workgroup_id_x);
  cr_assert_not(f->workgroup_id_y);
  cr_assert_eq(f->accum_offset, 8);
  cr_assert(f->private_segment_buffer);
  cr_assert(f->kernarg_segment_ptr);
  cr_assert_not(f->dispatch_ptr);
  cr_assert_not(f->wavefront_size32);
  cr_assert_eq(ki->kd_mismatch, 0);
  /* scratch kernel: private segment enabled in rsrc2 and the note's 260 bytes in the kd */
  ki = hsad_kernel_info(co_test_kernel(co, "scratch"));
  cr_assert(ki->kd.enable_private_segment);
  cr_assert_eq(ki->descriptor.private_segment_fixed_size, 260);
  cr_assert_eq(ki->kd_mismatch, 0);
  hsad_codeobj_destroy(co);

  /* gfx1030: wave32 bit; the SGPR field is reserved (0) and never compared */
  co = co_test_load(FIX("kernels-gfx1030-v5.hsaco"));
  ki = hsad_kernel_info(co_test_kernel(co, "vadd"));
  cr_assert(ki->kd.wavefront_size32);
  cr_assert_eq(ki->wavefront_size, 32);
  cr_assert_eq(ki->kd.sgpr_alloc, 0);
  cr_assert_eq(ki->kd_mismatch, 0);
  hsad_codeobj_destroy(co);
}

/* note vs descriptor cross-check flags a disagreement (the note wins) */
static int bump_lds(const char *path, const msgpack_object *o, msgpack_packer *pk, void *ctx) {
  (void)o, (void)ctx;
  if (strcmp(path, "amdhsa.kernels/0/.group_segment_fixed_size")) return 0;
  msgpack_pack_uint32(pk, 1024);
  return 1;
}

Test(codeobj_target, descriptor_mismatch_flagged) {
  co_test_editor_t ed = {bump_lds, NULL, NULL};
  size_t size;
  void *img = co_test_rewrite(FIX("kernels-gfx90a-v5.hsaco"), &ed, &size);
  hsad_codeobj_t *co = NULL;
  cr_assert_eq(hsad_codeobj_load_memory(img, size, "m.hsaco", &co), HSAD_OK);
  free(img);
  const hsad_kernel_info_t *ki = hsad_kernel_info(hsad_codeobj_kernel_at(co, 0));
  cr_assert_eq(ki->group_segment_fixed_size, 1024);
  cr_assert_eq(ki->descriptor.group_segment_fixed_size, 0);
  cr_assert_eq(ki->kd_mismatch, HSAD_KD_MISMATCH_GROUP_SEGMENT);
  hsad_codeobj_destroy(co);
}

/* ---- llvm-objdump-15 .amdhsa_* directives vs our decode (objdump decodes gfx9 kds) ---- */
static long directive(const char *text, const char *kernel, const char *name) {
  char head[256];
  snprintf(head, sizeof head, ".amdhsa_kernel %s\n", kernel);
  const char *k = strstr(text, head);
  if (!k) return -1;
  const char *end = strstr(k, ".end_amdhsa_kernel");
  char key[128];
  snprintf(key, sizeof key, "\t%s ", name);
  const char *p = strstr(k, key);
  if (!p || (end && p > end)) return -2;
  return strtol(p + strlen(key), NULL, 10);
}

static unsigned objdump_check(const char *path) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "llvm-objdump-15 -D -j .rodata '%s' 2>&1", path);
  FILE *p = popen(cmd, "r");
  cr_assert(p);
  size_t cap = 1 << 20, n = 0;
  char *text = malloc(cap);
  while (n + 1 < cap && fgets(text + n, (int)(cap - n), p)) n += strlen(text + n);
  text[n] = '\0';
  pclose(p);
  hsad_codeobj_t *co = co_test_load(path);
  const hsad_codeobj_info_t *ci = hsad_codeobj_info(co);
  unsigned checked = 0;
  for (uint32_t i = 0; i < ci->kernel_count; i++) {
    const hsad_kernel_info_t *ki = hsad_kernel_info(hsad_codeobj_kernel_at(co, i));
    const hsad_kd_fields_t *f = &ki->kd;
    if (directive(text, ki->name, ".amdhsa_kernarg_size") < 0) continue; /* not decoded */
    struct {
      const char *name;
      long ours;
    } cmp[] = {
        {".amdhsa_group_segment_fixed_size", ki->descriptor.group_segment_fixed_size},
        {".amdhsa_private_segment_fixed_size", ki->descriptor.private_segment_fixed_size},
        {".amdhsa_kernarg_size", ki->descriptor.kernarg_size},
        {".amdhsa_next_free_vgpr", f->vgpr_alloc},
        {".amdhsa_next_free_sgpr", (long)(f->granulated_sgpr_count + 1) * 8},
        {".amdhsa_float_round_mode_32", f->float_round_mode_32},
        {".amdhsa_float_round_mode_16_64", f->float_round_mode_16_64},
        {".amdhsa_float_denorm_mode_32", f->float_denorm_mode_32},
        {".amdhsa_float_denorm_mode_16_64", f->float_denorm_mode_16_64},
        {".amdhsa_dx10_clamp", f->dx10_clamp},
        {".amdhsa_ieee_mode", f->ieee_mode},
        {".amdhsa_fp16_overflow", f->fp16_ovfl},
        {".amdhsa_system_sgpr_private_segment_wavefront_offset", f->enable_private_segment},
        {".amdhsa_system_sgpr_workgroup_id_x", f->workgroup_id_x},
        {".amdhsa_system_sgpr_workgroup_id_y", f->workgroup_id_y},
        {".amdhsa_system_sgpr_workgroup_id_z", f->workgroup_id_z},
        {".amdhsa_system_sgpr_workgroup_info", f->workgroup_info},
        {".amdhsa_system_vgpr_workitem_id", f->vgpr_workitem_id},
        {".amdhsa_exception_fp_ieee_invalid_op", f->exceptions & 1},
        {".amdhsa_exception_fp_denorm_src", (f->exceptions >> 1) & 1},
        {".amdhsa_exception_fp_ieee_div_zero", (f->exceptions >> 2) & 1},
        {".amdhsa_exception_fp_ieee_overflow", (f->exceptions >> 3) & 1},
        {".amdhsa_exception_fp_ieee_underflow", (f->exceptions >> 4) & 1},
        {".amdhsa_exception_fp_ieee_inexact", (f->exceptions >> 5) & 1},
        {".amdhsa_exception_int_div_zero", (f->exceptions >> 6) & 1},
        {".amdhsa_user_sgpr_private_segment_buffer", f->private_segment_buffer},
        {".amdhsa_user_sgpr_dispatch_ptr", f->dispatch_ptr},
        {".amdhsa_user_sgpr_queue_ptr", f->queue_ptr},
        {".amdhsa_user_sgpr_kernarg_segment_ptr", f->kernarg_segment_ptr},
        {".amdhsa_user_sgpr_dispatch_id", f->dispatch_id},
        {".amdhsa_user_sgpr_flat_scratch_init", f->flat_scratch_init},
        {".amdhsa_user_sgpr_private_segment_size", f->private_segment_size},
        {".amdhsa_uses_dynamic_stack", f->uses_dynamic_stack},
    };
    for (size_t c = 0; c < sizeof cmp / sizeof cmp[0]; c++) {
      long theirs = directive(text, ki->name, cmp[c].name);
      if (theirs == -2) continue; /* directive not printed for this target */
      cr_assert_eq(cmp[c].ours, theirs, "%s: %s %s: codeobj %ld, llvm-objdump %ld", path,
                   ki->name, cmp[c].name, cmp[c].ours, theirs);
    }
    checked++;
  }
  hsad_codeobj_destroy(co);
  free(text);
  return checked;
}

Test(codeobj_target, descriptor_vs_llvm_objdump) {
  unsigned checked = objdump_check(FIX("kernels-gfx906-v4.hsaco"));
  checked += objdump_check(FIX("kernels-gfx906-v5.hsaco"));
  cr_assert_geq(checked, 16, "llvm-objdump decoded only %u gfx906 descriptors", checked);
  DIR *d = opendir(CO_KERNDIR);
  if (d) {
    struct dirent *de;
    while ((de = readdir(d))) {
      if (!strstr(de->d_name, "gfx906") || !strstr(de->d_name, ".hsaco")) continue;
      char path[1024];
      snprintf(path, sizeof path, "%s/%s", CO_KERNDIR, de->d_name);
      checked += objdump_check(path);
    }
    closedir(d);
  }
  cr_log_info("%u descriptors agree with llvm-objdump-15", checked);
}

/* kernarg preload (gfx940+, LLVM 17+: bytes 58-59 of the descriptor) is decoded where present:
 * patched into a real descriptor, found by its bytes in the image. */
Test(codeobj_target, descriptor_kernarg_preload) {
  hsad_codeobj_t *co = co_test_load(FIX("kernels-gfx940-v5.hsaco"));
  const hsad_codeobj_info_t *ci = hsad_codeobj_info(co);
  const hsad_kernel_info_t *ki = hsad_kernel_info(co_test_kernel(co, "vadd"));
  cr_assert_eq(ki->kd.kernarg_preload_length, 0);
  unsigned char *img = malloc(ci->image_size);
  memcpy(img, ci->image, ci->image_size);
  unsigned char *kd = memmem(img, ci->image_size, &ki->descriptor, 64);
  cr_assert(kd);
  uint16_t preload = (uint16_t)(4u | (2u << 7)); /* 4 SGPR dwords from kernarg dword 2 */
  memcpy(kd + 58, &preload, 2);
  size_t size = ci->image_size;
  hsad_codeobj_destroy(co);
  cr_assert_eq(hsad_codeobj_load_memory(img, size, "pre.hsaco", &co), HSAD_OK, "%s",
               hsad_last_error());
  free(img);
  ki = hsad_kernel_info(co_test_kernel(co, "vadd"));
  cr_assert_eq(ki->kd.kernarg_preload_length, 4);
  cr_assert_eq(ki->kd.kernarg_preload_offset, 2);
  cr_assert_eq(ki->descriptor.kernarg_preload, preload);
  hsad_codeobj_destroy(co);
}

/* A .hip_fatbin with two bundles (two translation units): the agent needs the entry of each. */
Test(codeobj_target, fatbin_many_bundles) {
  hsad_codeobj_container_t *c = NULL;
  cr_assert_eq(hsad_codeobj_container_open_file(FIX("hip_multi.so"), &c), HSAD_OK, "%s",
               hsad_last_error());
  cr_assert_eq(hsad_codeobj_container_kind(c), HSAD_CONTAINER_HOST_FATBIN);
  cr_assert_eq(hsad_codeobj_container_bundle_count(c), 2);
  cr_assert_eq(hsad_codeobj_container_entry_count(c), 4);
  const char *want[2] = {"_Z5scalePffi", "_Z6offsetPii"};
  for (uint32_t b = 0; b < 2; b++) {
    size_t i;
    cr_assert_eq(hsad_codeobj_container_select_in_bundle(c, b, "gfx90a:sramecc+:xnack-", &i),
                 HSAD_OK, "%s", hsad_last_error());
    const hsad_codeobj_entry_t *e = hsad_codeobj_container_entry(c, i);
    cr_assert_eq(e->bundle_index, b);
    cr_assert_str_eq(e->target, "gfx90a");
    hsad_codeobj_t *co = NULL;
    cr_assert_eq(hsad_codeobj_load_entry(c, i, &co), HSAD_OK, "%s", hsad_last_error());
    co_test_kernel(co, want[b]);
    char label[256];
    snprintf(label, sizeof label, "hip_multi.so[bundle %u: hipv4-amdgcn-amd-amdhsa--gfx90a]", b);
    cr_assert(strstr(hsad_codeobj_info(co)->name, label), "%s", hsad_codeobj_info(co)->name);
    hsad_codeobj_destroy(co);
  }
  size_t i;
  cr_assert_eq(hsad_codeobj_container_select_in_bundle(c, 1, "gfx1030", &i),
               HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND);
  cr_assert(strstr(hsad_last_error(), "hip_multi.so: no code object for gfx1030 in bundle 1: it "
                                      "has gfx906, gfx90a"),
            "%s", hsad_last_error());
  cr_assert_eq(hsad_codeobj_container_select_in_bundle(c, 2, NULL, &i),
               HSAD_ERR_BUNDLE_ENTRY_NOT_FOUND);
  hsad_codeobj_container_destroy(c);
  cr_assert_eq(hsad_codeobj_container_bundle_count(NULL), 0);
}

/* Issue 10: hsad_codeobj.h compiles as C++ (tests/codeobj_cxx.cpp, g++ -std=c++11 -pedantic
 * -Werror) and the C++ unit sees the same layout and functions. */
int co_cxx_probe(char *out, size_t n);
Test(codeobj_target, header_compiles_as_cxx) {
  char buf[32] = "";
  cr_assert_eq(co_cxx_probe(buf, sizeof buf), 64 + 48);
  cr_assert_str_eq(buf, "gfx90a:xnack-");
}

/* Issue 10: an environment word in the triple ("amdgcn-amd-amdhsa-unknown-gfx90a", llvm #91637)
 * parses as the empty-environment form does; a feature's '-' is no environment. */
Test(codeobj_target, triple_with_environment) {
  hsad_target_id_t id;
  cr_assert_eq(hsad_target_id_parse("amdgcn-amd-amdhsa-unknown-gfx90a:xnack-", &id), HSAD_OK);
  cr_assert_str_eq(id.processor, "gfx90a");
  cr_assert_eq(id.xnack, HSAD_FEATURE_OFF);
  cr_assert_eq(hsad_target_id_parse("amdgcn-amd-amdhsa-gfx90a:xnack-", &id), HSAD_OK);
  cr_assert_str_eq(id.processor, "gfx90a");
  cr_assert_eq(id.xnack, HSAD_FEATURE_OFF);
  cr_assert_eq(hsad_target_id_parse("amdgcn-amd-amdhsa-unknown-gfx1030", &id), HSAD_OK);
  cr_assert_str_eq(id.processor, "gfx1030");
  cr_assert_eq(id.xnack, HSAD_FEATURE_ANY);
}

static uint64_t file_size(const char *path) {
  size_t n;
  free(co_test_read(path, &n));
  return n;
}

/* Issue 10: entry ids with an environment word ("hipv4-amdgcn-amd-amdhsa-unknown-gfx90a"),
 * entries at unaligned offsets (mkcontainer.py --gap 5), match as the "--" form does. */
Test(codeobj_target, bundle_ids_with_environment_unaligned) {
  hsad_codeobj_container_t *c = NULL;
  cr_assert_eq(hsad_codeobj_container_open_file(FIX("env.bundle"), &c), HSAD_OK, "%s",
               hsad_last_error());
  cr_assert_eq(hsad_codeobj_container_entry_count(c), 2);
  const hsad_codeobj_entry_t *e0 = hsad_codeobj_container_entry(c, 0);
  const hsad_codeobj_entry_t *e1 = hsad_codeobj_container_entry(c, 1);
  cr_assert_str_eq(e0->entry_id, "hipv4-amdgcn-amd-amdhsa-unknown-gfx1030");
  cr_assert_str_eq(e0->target, "gfx1030");
  cr_assert_str_eq(e1->entry_id, "hipv4-amdgcn-amd-amdhsa-unknown-gfx90a");
  cr_assert_str_eq(e1->target, "gfx90a");
  /* header: 32 + 2 x 24 + 39 + 38 = 157 bytes, then a 5-byte gap before each entry */
  uint64_t s0 = file_size(FIX("kernels-gfx1030-v5.hsaco"));
  cr_assert_eq(e0->offset, 162);
  cr_assert_eq(e0->size, s0);
  cr_assert_eq(e1->offset, 162 + s0 + 5);
  cr_assert_eq(e0->compression, HSAD_COMPRESSION_NONE);
  size_t i = 9;
  cr_assert_eq(hsad_codeobj_container_select(c, "gfx90a:sramecc+:xnack-", &i), HSAD_OK, "%s",
               hsad_last_error());
  cr_assert_eq(i, 1);
  cr_assert_eq(hsad_codeobj_container_select(c, "amdgcn-amd-amdhsa-unknown-gfx1030", &i),
               HSAD_OK);
  cr_assert_eq(i, 0);
  hsad_codeobj_t *co = NULL;
  cr_assert_eq(hsad_codeobj_load_entry(c, 1, &co), HSAD_OK, "%s", hsad_last_error());
  size_t fsize;
  void *want = co_test_read(FIX("kernels-gfx90a-v5.hsaco"), &fsize);
  cr_assert_eq(hsad_codeobj_info(co)->image_size, fsize);
  cr_assert_eq(memcmp(hsad_codeobj_info(co)->image, want, fsize), 0);
  co_test_kernel(co, "vadd");
  free(want);
  hsad_codeobj_destroy(co);
  hsad_codeobj_container_destroy(c);
  /* the one-call path used by program load picks it too */
  cr_assert_eq(hsad_codeobj_load_file(FIX("env.bundle"), "gfx90a:xnack-", &co), HSAD_OK, "%s",
               hsad_last_error());
  cr_assert_str_eq(hsad_codeobj_info(co)->target, "amdgcn-amd-amdhsa--gfx90a");
  hsad_codeobj_destroy(co);
}

/* Issue 10: compressed offload bundles, CCOB v2 (zlib) and v3 (zstd), each holding
 * hip_scale.bundle: the same entries, byte for byte, as the plain bundle. */
Test(codeobj_target, compressed_bundles_v2_zlib_v3_zstd) {
  hsad_codeobj_container_t *plain = NULL;
  cr_assert_eq(hsad_codeobj_container_open_file(FIX("hip_scale.bundle"), &plain), HSAD_OK);
  struct {
    const char *file;
    hsad_compression_t method;
    uint32_t version;
  } cases[] = {{FIX("hip_scale.ccob2"), HSAD_COMPRESSION_ZLIB, 2},
               {FIX("hip_scale.ccob3"), HSAD_COMPRESSION_ZSTD, 3}};
  for (int k = 0; k < 2; k++) {
    hsad_codeobj_container_t *c = NULL;
    cr_assert_eq(hsad_codeobj_container_open_file(cases[k].file, &c), HSAD_OK, "%s",
                 hsad_last_error());
    cr_assert_eq(hsad_codeobj_container_kind(c), HSAD_CONTAINER_BUNDLE);
    cr_assert_eq(hsad_codeobj_container_bundle_count(c), 1);
    cr_assert_eq(hsad_codeobj_container_entry_count(c), 2);
    for (size_t i = 0; i < 2; i++) {
      const hsad_codeobj_entry_t *e = hsad_codeobj_container_entry(c, i);
      const hsad_codeobj_entry_t *p = hsad_codeobj_container_entry(plain, i);
      cr_assert_str_eq(e->entry_id, p->entry_id);
      cr_assert_eq(e->compression, cases[k].method);
      cr_assert_eq(e->compressed_version, cases[k].version);
      cr_assert_eq(e->compressed_offset, 0);
      cr_assert_eq(e->offset, p->offset);
      cr_assert_eq(e->size, p->size);
      cr_assert_eq(memcmp(e->data, p->data, p->size), 0);
    }
    size_t i = 9;
    cr_assert_eq(hsad_codeobj_container_select(c, "gfx90a:xnack-", &i), HSAD_OK);
    cr_assert_eq(i, 1);
    hsad_codeobj_t *co = NULL;
    cr_assert_eq(hsad_codeobj_load_entry(c, 1, &co), HSAD_OK, "%s", hsad_last_error());
    co_test_kernel(co, "_Z5scalePffi");
    hsad_codeobj_destroy(co);
    hsad_codeobj_container_destroy(c);
  }
  hsad_codeobj_container_destroy(plain);
}

/* Issue 10: three bundles in one .hip_fatbin (4096-aligned): CCOB v2 zlib stored, whose host
 * entry holds a decoy "CCOB" header and bundle magic in the clear; CCOB v3 zstd; a plain
 * bundle. Walked by their sizes: 3 bundles, 3 amdgcn entries, the decoys never parsed. */
Test(codeobj_target, fatbin_compressed_back_to_back) {
  size_t size;
  uint8_t *raw = co_test_read(FIX("ccob_multi.o"), &size);
  cr_assert(memmem(raw, size, "__CLANG_OFFLOAD_BUNDLE__\xe8\x03", 26), "decoy not in the clear");
  uint32_t total0; /* CCOB v2 total size at section offset 4096 + 8 */
  memcpy(&total0, raw + 4096 + 8, 4);
  free(raw);
  hsad_codeobj_container_t *c = NULL;
  cr_assert_eq(hsad_codeobj_container_open_file(FIX("ccob_multi.o"), &c), HSAD_OK, "%s",
               hsad_last_error());
  cr_assert_eq(hsad_codeobj_container_kind(c), HSAD_CONTAINER_HOST_FATBIN);
  cr_assert_eq(hsad_codeobj_container_bundle_count(c), 3);
  cr_assert_eq(hsad_codeobj_container_entry_count(c), 3);
  const hsad_codeobj_entry_t *e[3];
  for (int i = 0; i < 3; i++) {
    e[i] = hsad_codeobj_container_entry(c, (size_t)i);
    cr_assert_eq(e[i]->bundle_index, (uint32_t)i);
  }
  cr_assert_eq(e[0]->compression, HSAD_COMPRESSION_ZLIB);
  cr_assert_eq(e[0]->compressed_version, 2);
  cr_assert_eq(e[0]->compressed_offset, 4096);
  cr_assert_eq(e[1]->compression, HSAD_COMPRESSION_ZSTD);
  cr_assert_eq(e[1]->compressed_version, 3);
  cr_assert_eq(e[1]->compressed_offset, 4096 + (total0 + 4095) / 4096 * 4096);
  cr_assert_eq(e[2]->compression, HSAD_COMPRESSION_NONE);
  cr_assert_str_eq(e[2]->entry_id, "hipv4-amdgcn-amd-amdhsa-unknown-gfx90a");
  const char *kern[3] = {"vadd", "_Z6offsetPii", "hw_implicit24"};
  for (int i = 0; i < 3; i++) {
    size_t idx = 9;
    cr_assert_eq(hsad_codeobj_container_select_in_bundle(c, (uint32_t)i, "gfx90a:xnack-", &idx),
                 HSAD_OK, "%s", hsad_last_error());
    cr_assert_eq(idx, (size_t)i);
    hsad_codeobj_t *co = NULL;
    cr_assert_eq(hsad_codeobj_load_entry(c, idx, &co), HSAD_OK, "%s", hsad_last_error());
    co_test_kernel(co, kern[i]);
    hsad_codeobj_destroy(co);
  }
  hsad_codeobj_container_destroy(c);
}

static void expect_ccob_fail(const uint8_t *buf, size_t n, hsad_status_t want, const char *msg) {
  hsad_codeobj_container_t *c = NULL;
  hsad_status_t st = hsad_codeobj_container_open_memory(buf, n, "c.ccob", &c);
  cr_assert_eq(st, want, "%s: %s", hsad_status_name(st), hsad_last_error());
  cr_assert_null(c);
  cr_assert_str_eq(hsad_last_error(), msg);
}

/* Issue 21: a CCOB v3 payload whose zstd data begins (and ends) with a skippable frame (RFC
 * 8878 3.1.2: magic 0x184D2A5?, 4-byte size, content) opens as LLVM's reader opens it: the same
 * entries, byte for byte, as the plain bundle; a skippable frame cut short is refused. */
Test(codeobj_target, ccob3_zstd_skippable_frames) {
  size_t n3;
  uint8_t *z3 = co_test_read(FIX("hip_scale.ccob3"), &n3);
  static const uint8_t skip[] = {0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 'h', 's', 'a', 'd'};
  size_t n = n3 + 2 * sizeof skip;
  uint8_t *b = malloc(n);
  memcpy(b, z3, 32); /* header: magic, version 3, method 1, total, size, hash */
  memcpy(b + 32, skip, sizeof skip);
  memcpy(b + 32 + sizeof skip, z3 + 32, n3 - 32);
  memcpy(b + n3 + sizeof skip, skip, sizeof skip);
  uint64_t total = n;
  memcpy(b + 8, &total, 8);
  hsad_codeobj_container_t *plain = NULL, *c = NULL;
  cr_assert_eq(hsad_codeobj_container_open_file(FIX("hip_scale.bundle"), &plain), HSAD_OK);
  cr_assert_eq(hsad_codeobj_container_open_memory(b, n, "s.ccob", &c), HSAD_OK, "%s",
               hsad_last_error());
  cr_assert_eq(hsad_codeobj_container_entry_count(c), 2);
  for (size_t i = 0; i < 2; i++) {
    const hsad_codeobj_entry_t *e = hsad_codeobj_container_entry(c, i);
    const hsad_codeobj_entry_t *p = hsad_codeobj_container_entry(plain, i);
    cr_assert_str_eq(e->entry_id, p->entry_id);
    cr_assert_eq(e->compression, HSAD_COMPRESSION_ZSTD);
    cr_assert_eq(e->size, p->size);
    cr_assert_eq(memcmp(e->data, p->data, p->size), 0);
  }
  hsad_codeobj_t *co = NULL;
  cr_assert_eq(hsad_codeobj_load_entry(c, 1, &co), HSAD_OK, "%s", hsad_last_error());
  co_test_kernel(co, "_Z5scalePffi");
  hsad_codeobj_destroy(co);
  hsad_codeobj_container_destroy(c);
  hsad_codeobj_container_destroy(plain);
  /* the leading skippable frame says 200 bytes of content: it runs past the payload */
  b[32 + 4] = 200;
  char msg[256];
  snprintf(msg, sizeof msg, "c.ccob: compressed offload bundle 0 at offset 0: its %zu-byte "
           "payload is not a sequence of zstd frames", n - 32);
  expect_ccob_fail(b, n, HSAD_ERR_TRUNCATED, msg);
  free(b);
  free(z3);
}

/* Issue 10: a compressed bundle's header is checked before anything is allocated. */
Test(codeobj_target, compressed_bundle_errors) {
  size_t n2, n3;
  uint8_t *z2 = co_test_read(FIX("hip_scale.ccob2"), &n2);
  uint8_t *z3 = co_test_read(FIX("hip_scale.ccob3"), &n3);
  uint32_t usize2;
  memcpy(&usize2, z2 + 12, 4);
  uint64_t usize3;
  memcpy(&usize3, z3 + 16, 8);
  cr_assert_eq(usize2, file_size(FIX("hip_scale.bundle")));
  char msg[512];
  uint8_t *b = malloc(n2 > n3 ? n2 : n3);

  /* v2: 4 GiB - 16 declared, far above what 1032:1 zlib can give */
  memcpy(b, z2, n2);
  uint32_t huge = 0xfffffff0u;
  memcpy(b + 12, &huge, 4);
  snprintf(msg, sizeof msg,
           "c.ccob: compressed offload bundle 0 at offset 0 declares 4294967280 uncompressed "
           "bytes; its %zu-byte zlib payload can hold 32 to %zu",
           n2 - 24, (n2 - 24) * 1032);
  expect_ccob_fail(b, n2, HSAD_ERR_TRUNCATED, msg);
  /* one byte fewer declared than the payload holds */
  uint32_t less = usize2 - 1;
  memcpy(b + 12, &less, 4);
  snprintf(msg, sizeof msg,
           "c.ccob: compressed offload bundle 0 at offset 0 (zlib, %u uncompressed bytes "
           "declared): it decompresses to more bytes than declared",
           less);
  expect_ccob_fail(b, n2, HSAD_ERR_TRUNCATED, msg);
  /* one more: the payload ends first */
  uint32_t more = usize2 + 1;
  memcpy(b + 12, &more, 4);
  snprintf(msg, sizeof msg,
           "c.ccob: compressed offload bundle 0 at offset 0 (zlib, %u uncompressed bytes "
           "declared): it decompresses to fewer bytes than declared",
           more);
  expect_ccob_fail(b, n2, HSAD_ERR_TRUNCATED, msg);
  /* total size past the end of the input */
  memcpy(b, z2, n2);
  snprintf(msg, sizeof msg,
           "c.ccob: truncated: compressed offload bundle 0 at offset 0 declares %zu bytes "
           "(header and payload), %zu are there",
           n2, n2 - 1);
  expect_ccob_fail(b, n2 - 1, HSAD_ERR_TRUNCATED, msg);
  /* a corrupt deflate stream */
  b[24 + 2] ^= 0xff;
  b[24 + 3] ^= 0xff;
  snprintf(msg, sizeof msg,
           "c.ccob: compressed offload bundle 0 at offset 0 (zlib, %u uncompressed bytes "
           "declared): zlib: corrupt or incomplete stream",
           usize2);
  expect_ccob_fail(b, n2, HSAD_ERR_TRUNCATED, msg);
  /* version 1 (no total size) and an unknown method */
  memcpy(b, z2, n2);
  b[4] = 1;
  expect_ccob_fail(b, n2, HSAD_ERR_UNSUPPORTED,
                   "c.ccob: compressed offload bundle 0 at offset 0 has format version 1; "
                   "supported are 2 and 3 (version 1 has no total size)");
  b[4] = 2;
  b[6] = 7;
  expect_ccob_fail(b, n2, HSAD_ERR_UNSUPPORTED,
                   "c.ccob: compressed offload bundle 0 at offset 0 uses compression method 7; "
                   "known are 0 (zlib) and 1 (zstd)");
  expect_ccob_fail(b, 20, HSAD_ERR_TRUNCATED,
                   "c.ccob: truncated: compressed offload bundle 0 at offset 0 has 20 bytes, its "
                   "version 2 header needs 24");

  /* v3: the declared size must equal the zstd frame's content size */
  memcpy(b, z3, n3);
  uint64_t wrong = usize3 + 100;
  memcpy(b + 16, &wrong, 8);
  snprintf(msg, sizeof msg,
           "c.ccob: compressed offload bundle 0 at offset 0 declares %llu uncompressed bytes, "
           "its zstd frames hold %llu",
           (unsigned long long)wrong, (unsigned long long)usize3);
  expect_ccob_fail(b, n3, HSAD_ERR_TRUNCATED, msg);
  memcpy(b, z3, n3);
  memset(b + 32, 0, 4); /* no zstd magic */
  snprintf(msg, sizeof msg,
           "c.ccob: compressed offload bundle 0 at offset 0: its %zu-byte payload is not a "
           "sequence of zstd frames",
           n3 - 32);
  expect_ccob_fail(b, n3, HSAD_ERR_TRUNCATED, msg);
  free(b);
  free(z2);
  free(z3);
}
