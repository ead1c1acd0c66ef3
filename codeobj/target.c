/* target.c - target IDs: EF_AMDGPU_MACH names, parsing, formatting, compatibility.
 * Sources: AMDGPUUsage "Target ID", "Processors", and table "AMDGPU ELF Header e_flags"
 * (EF_AMDGPU_MACH_* values, EF_AMDGPU_FEATURE_XNACK/SRAMECC for v3 and v4+). */
#include "codeobj/codeobj_internal.h"

#include <stdio.h>
#include <string.h>

static const struct {
  uint8_t mach;
  const char *name;
} co_machs[] = {
    {0x20, "gfx600"},  {0x21, "gfx601"},  {0x22, "gfx700"},  {0x23, "gfx701"},
    {0x24, "gfx702"},  {0x25, "gfx703"},  {0x26, "gfx704"},  {0x28, "gfx801"},
    {0x29, "gfx802"},  {0x2a, "gfx803"},  {0x2b, "gfx810"},  {0x2c, "gfx900"},
    {0x2d, "gfx902"},  {0x2e, "gfx904"},  {0x2f, "gfx906"},  {0x30, "gfx908"},
    {0x31, "gfx909"},  {0x32, "gfx90c"},  {0x33, "gfx1010"}, {0x34, "gfx1011"},
    {0x35, "gfx1012"}, {0x36, "gfx1030"}, {0x37, "gfx1031"}, {0x38, "gfx1032"},
    {0x39, "gfx1033"}, {0x3a, "gfx602"},  {0x3b, "gfx705"},  {0x3c, "gfx805"},
    {0x3d, "gfx1035"}, {0x3e, "gfx1034"}, {0x3f, "gfx90a"},  {0x40, "gfx940"},
    {0x41, "gfx1100"}, {0x42, "gfx1013"}, {0x43, "gfx1150"}, {0x44, "gfx1103"},
    {0x45, "gfx1036"}, {0x46, "gfx1101"}, {0x47, "gfx1102"}, {0x48, "gfx1200"},
    {0x4a, "gfx1151"}, {0x4b, "gfx941"},  {0x4c, "gfx942"},  {0x4e, "gfx1201"},
    {0x4f, "gfx950"},
};

const char *co_mach_name(uint32_t mach) {
  for (size_t i = 0; i < sizeof co_machs / sizeof co_machs[0]; i++)
    if (co_machs[i].mach == mach) return co_machs[i].name;
  return NULL;
}

static const char co_triple[] = "amdgcn-amd-amdhsa-";

hsad_status_t hsad_target_id_parse(const char *text, hsad_target_id_t *out_id) {
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_target_id_parse", {text, "text"}, {out_id, "out_id"});
  if (ns) return ns;
  const char *p = text;
  if (!strncmp(p, co_triple, sizeof co_triple - 1)) {
    p += sizeof co_triple - 1;
    if (*p == '-') {
      p++; /* empty environment: "amdgcn-amd-amdhsa--gfx90a" */
    } else { /* an environment word: "amdgcn-amd-amdhsa-unknown-gfx90a" */
      const char *dash = strchr(p, '-');
      if (dash && dash[1] && memchr(p, ':', (size_t)(dash - p)) == NULL) p = dash + 1;
    }
  }
  size_t n = strcspn(p, ":+");
  if (n == 0)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "target ID '%s': no processor name", text);
  if (n >= sizeof out_id->processor)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT,
                     "target ID '%s': processor name longer than %zu characters", text,
                     sizeof out_id->processor - 1);
  hsad_target_id_t id = {.xnack = HSAD_FEATURE_ANY, .sramecc = HSAD_FEATURE_ANY};
  memcpy(id.processor, p, n);
  id.processor[n] = '\0';
  p += n;
  bool seen_xnack = false, seen_sramecc = false;
  while (*p) {
    hsad_feature_t setting;
    const char *feat;
    size_t flen;
    if (*p == '+') { /* v3 spelling: gfx906+xnack */
      feat = p + 1;
      flen = strcspn(feat, ":+");
      setting = HSAD_FEATURE_ON;
      p = feat + flen;
    } else { /* ':' v4 spelling: gfx90a:xnack- */
      feat = p + 1;
      flen = strcspn(feat, ":+-");
      const char *sign = feat + flen;
      if (*sign == '+') setting = HSAD_FEATURE_ON;
      else if (*sign == '-') setting = HSAD_FEATURE_OFF;
      else
        return hsad_fail(HSAD_ERR_INVALID_ARGUMENT,
                         "target ID '%s': feature '%.*s' needs a '+' or '-' suffix", text,
                         (int)flen, feat);
      p = sign + 1;
    }
    if (flen == 5 && !strncmp(feat, "xnack", 5)) {
      if (seen_xnack)
        return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "target ID '%s': xnack given twice", text);
      seen_xnack = true;
      id.xnack = setting;
    } else if (flen == 7 && !strncmp(feat, "sramecc", 7)) {
      if (seen_sramecc)
        return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "target ID '%s': sramecc given twice", text);
      seen_sramecc = true;
      id.sramecc = setting;
    } else {
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT,
                       "target ID '%s': unknown feature '%.*s' (known: sramecc, xnack)", text,
                       (int)flen, feat);
    }
  }
  *out_id = id;
  return HSAD_OK;
}

int hsad_target_id_format(const hsad_target_id_t *id, char *out, size_t n) {
  const char *s = id->sramecc == HSAD_FEATURE_ON ? ":sramecc+"
                  : id->sramecc == HSAD_FEATURE_OFF ? ":sramecc-" : "";
  const char *x = id->xnack == HSAD_FEATURE_ON ? ":xnack+"
                  : id->xnack == HSAD_FEATURE_OFF ? ":xnack-" : "";
  return snprintf(out, n, "%s%s%s", id->processor, s, x);
}

static bool co_feature_ok(hsad_feature_t code_object, hsad_feature_t agent) {
  if (code_object != HSAD_FEATURE_ON && code_object != HSAD_FEATURE_OFF) return true;
  if (agent != HSAD_FEATURE_ON && agent != HSAD_FEATURE_OFF) return true;
  return code_object == agent;
}

bool hsad_target_id_compatible(const hsad_target_id_t *code_object,
                               const hsad_target_id_t *agent) {
  if (!code_object || !agent) return false;
  if (strcmp(code_object->processor, agent->processor)) return false;
  return co_feature_ok(code_object->xnack, agent->xnack) &&
         co_feature_ok(code_object->sramecc, agent->sramecc);
}

hsad_status_t co_target_from_flags(const char *name, uint32_t e_flags, uint32_t version,
                                   hsad_target_id_t *out) {
  uint32_t mach = e_flags & 0xffu;
  const char *proc = co_mach_name(mach);
  if (!proc)
    return hsad_fail(HSAD_ERR_BAD_ELF, "%s: e_flags 0x%x: unknown EF_AMDGPU_MACH 0x%02x", name,
                     e_flags, mach);
  memset(out, 0, sizeof *out);
  snprintf(out->processor, sizeof out->processor, "%s", proc);
  if (version == 3) { /* EF_AMDGPU_FEATURE_XNACK_V3 0x100, SRAMECC_V3 0x200: set = on */
    out->xnack = (e_flags & 0x100u) ? HSAD_FEATURE_ON : HSAD_FEATURE_ANY;
    out->sramecc = (e_flags & 0x200u) ? HSAD_FEATURE_ON : HSAD_FEATURE_ANY;
  } else { /* v4+: 2-bit fields, 0 unsupported, 1 any, 2 off, 3 on */
    static const hsad_feature_t map[4] = {HSAD_FEATURE_UNSUPPORTED, HSAD_FEATURE_ANY,
                                          HSAD_FEATURE_OFF, HSAD_FEATURE_ON};
    out->xnack = map[(e_flags >> 8) & 3u];
    out->sramecc = map[(e_flags >> 10) & 3u];
  }
  return HSAD_OK;
}
