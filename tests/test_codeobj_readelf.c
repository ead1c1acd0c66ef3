/* test_codeobj_readelf.c - every metadata field codeobj decodes equals what
 * `llvm-readelf-15 --notes` prints, and every field llvm-readelf prints is decoded (none
 * missing, none invented): for the fixtures, every code object kernels/ builds (5 targets x
 * v4/v5), the entries of an offload bundle and a .hip_fatbin object, and the code objects of
 * Debian's librocrand1 (7 targets x 80 kernels). */
#include "test_codeobj_util.h"

#include <dirent.h>
#include <unistd.h>

#ifndef CO_HSAD
#define CO_HSAD "build/bin/hsad"
#endif
#ifndef CO_KERNDIR
#define CO_KERNDIR "build/kernels"
#endif
#define ROCRAND "/usr/lib/x86_64-linux-gnu/librocrand.so.1"

typedef struct {
  int kernel, arg; /* arg -1: kernel-level; kernel -1: top level */
  char key[64];
  char val[1024];
} rec_t;

typedef struct {
  rec_t *r;
  size_t n, cap;
} recs_t;

static rec_t *rec_add(recs_t *rs, int k, int a, const char *key, const char *val) {
  if (rs->n == rs->cap) {
    rs->cap = rs->cap ? rs->cap * 2 : 1024;
    rs->r = realloc(rs->r, rs->cap * sizeof *rs->r);
    cr_assert(rs->r);
  }
  rec_t *r = &rs->r[rs->n++];
  r->kernel = k;
  r->arg = a;
  snprintf(r->key, sizeof r->key, "%s", key);
  snprintf(r->val, sizeof r->val, "%s", val);
  return r;
}

/* YAML scalar as llvm's YAML writer prints it: plain, or single-quoted with '' for '. */
static void unquote(const char *s, char *out, size_t n) {
  while (*s == ' ') s++;
  size_t len = strlen(s);
  while (len && (s[len - 1] == ' ' || s[len - 1] == '\n')) len--;
  size_t o = 0;
  if (len >= 2 && s[0] == '\'' && s[len - 1] == '\'') {
    for (size_t i = 1; i + 1 < len && o + 1 < n; i++) {
      out[o++] = s[i];
      if (s[i] == '\'' && s[i + 1] == '\'') i++;
    }
  } else if (len >= 2 && s[0] == '"' && s[len - 1] == '"') {
    for (size_t i = 1; i + 1 < len && o + 1 < n; i++) out[o++] = s[i];
  } else {
    for (size_t i = 0; i < len && o + 1 < n; i++) out[o++] = s[i];
  }
  out[o] = '\0';
}

/* Runs llvm-readelf-15 --notes and parses the AMDGPU Metadata YAML into records. */
static void readelf_notes(const char *path, recs_t *rs) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "llvm-readelf-15 --notes '%s' 2>&1", path);
  FILE *p = popen(cmd, "r");
  cr_assert(p, "popen llvm-readelf-15");
  char line[4096];
  int in = 0, k = -1, a = -1;
  char section[64] = "", kkey[64] = "";
  rec_t *list = NULL;
  while (fgets(line, sizeof line, p)) {
    if (!in) {
      const char *t = line;
      while (*t == ' ') t++;
      if (!strncmp(t, "---", 3)) in = 1;
      continue;
    }
    if (!strncmp(line, "...", 3)) break;
    int ind = 0;
    while (line[ind] == ' ') ind++;
    char *c = line + ind;
    int dash = 0;
    if (c[0] == '-' && c[1] == ' ') {
      dash = 1;
      c += 2;
      while (*c == ' ') c++;
    }
    char *colon = (c[0] == '.' || !strncmp(c, "amdhsa.", 7)) ? strstr(c, ":") : NULL;
    char key[64] = "", val[1024] = "";
    if (colon) {
      snprintf(key, sizeof key, "%.*s", (int)(colon - c), c);
      unquote(colon + 1, val, sizeof val);
    } else {
      unquote(c, val, sizeof val);
    }
    if (ind == 0 && colon) { /* top level */
      snprintf(section, sizeof section, "%s", key);
      list = NULL;
      if (val[0]) rec_add(rs, -1, -1, key, val);
      else if (strcmp(key, "amdhsa.kernels")) list = rec_add(rs, -1, -1, key, "");
      continue;
    }
    if (strcmp(section, "amdhsa.kernels")) { /* a top-level list such as amdhsa.version */
      cr_assert(list && dash, "unexpected line in %s: %s", path, line);
      size_t l = strlen(list->val);
      snprintf(list->val + l, sizeof list->val - l, "%s%s", l ? "," : "", val);
      continue;
    }
    if (ind == 2 && dash) { /* new kernel */
      k++;
      a = -1;
    }
    if ((ind == 2 && dash) || (ind == 4 && colon)) {
      snprintf(kkey, sizeof kkey, "%s", key);
      list = NULL;
      if (!strcmp(key, ".args")) continue;
      if (val[0] || !colon) rec_add(rs, k, -1, key, val);
      else list = rec_add(rs, k, -1, key, "");
      continue;
    }
    if (!strcmp(kkey, ".args")) {
      if (ind == 6 && dash) a++;
      cr_assert(colon, "unexpected arg line in %s: %s", path, line);
      rec_add(rs, k, a, key, val);
      continue;
    }
    cr_assert(list && dash, "unexpected kernel line in %s: %s", path, line);
    size_t l = strlen(list->val);
    snprintf(list->val + l, sizeof list->val - l, "%s%s", l ? "," : "", val);
  }
  int rc = pclose(p);
  cr_assert_eq(rc, 0, "llvm-readelf-15 failed on %s", path);
  cr_assert(in, "no AMDGPU Metadata YAML from llvm-readelf-15 for %s", path);
}

static const char *tf(bool b) { return b ? "true" : "false"; }

/* Our value of a kernel-level field, or NULL if we do not decode the field. */
static const char *ours_kernel(const hsad_kernel_info_t *ki, const char *key, char *b, size_t n) {
#define U(field)                                                                               \
  if (!strcmp(key, "." #field)) return snprintf(b, n, "%u", ki->field), b;
#define S(field)                                                                               \
  if (!strcmp(key, "." #field)) return ki->field;
#define B(field)                                                                               \
  if (!strcmp(key, "." #field)) return tf(ki->field);
  S(name) S(symbol) S(language) S(kind) S(vec_type_hint) S(device_enqueue_symbol)
  U(kernarg_segment_size) U(kernarg_segment_align) U(group_segment_fixed_size)
  U(private_segment_fixed_size) U(wavefront_size) U(sgpr_count) U(vgpr_count) U(agpr_count)
  U(sgpr_spill_count) U(vgpr_spill_count) U(max_flat_workgroup_size)
  B(uses_dynamic_stack) B(workgroup_processor_mode) B(uniform_work_group_size)
  if (!strcmp(key, ".language_version"))
    return snprintf(b, n, "%u,%u", ki->language_version[0], ki->language_version[1]), b;
  if (!strcmp(key, ".reqd_workgroup_size"))
    return snprintf(b, n, "%u,%u,%u", ki->reqd_workgroup_size[0], ki->reqd_workgroup_size[1],
                    ki->reqd_workgroup_size[2]), b;
  if (!strcmp(key, ".workgroup_size_hint"))
    return snprintf(b, n, "%u,%u,%u", ki->workgroup_size_hint[0], ki->workgroup_size_hint[1],
                    ki->workgroup_size_hint[2]), b;
  return NULL;
#undef U
#undef S
#undef B
}

static const char *ours_arg(const hsad_kernel_arg_t *a, const char *key, char *b, size_t n) {
  if (!strcmp(key, ".name")) return a->name;
  if (!strcmp(key, ".type_name")) return a->type_name;
  if (!strcmp(key, ".offset")) return snprintf(b, n, "%u", a->offset), b;
  if (!strcmp(key, ".size")) return snprintf(b, n, "%u", a->size), b;
  if (!strcmp(key, ".pointee_align")) return snprintf(b, n, "%u", a->pointee_align), b;
  if (!strcmp(key, ".value_kind")) return hsad_value_kind_name(a->value_kind);
  if (!strcmp(key, ".address_space")) return hsad_address_space_name(a->address_space);
  if (!strcmp(key, ".access")) return hsad_access_name(a->access);
  if (!strcmp(key, ".actual_access")) return hsad_access_name(a->actual_access);
  if (!strcmp(key, ".is_const")) return tf(a->is_const);
  if (!strcmp(key, ".is_restrict")) return tf(a->is_restrict);
  if (!strcmp(key, ".is_volatile")) return tf(a->is_volatile);
  if (!strcmp(key, ".is_pipe")) return tf(a->is_pipe);
  return NULL;
}

/* Compares one code object file against llvm-readelf-15; returns the kernels checked. */
static unsigned check_file(const char *path, const char *label) {
  hsad_codeobj_t *co = NULL;
  hsad_status_t st = hsad_codeobj_load_file(path, NULL, &co);
  cr_assert_eq(st, HSAD_OK, "%s: %s", label, hsad_last_error());
  const hsad_codeobj_info_t *ci = hsad_codeobj_info(co);
  recs_t rs = {0};
  readelf_notes(path, &rs);
  unsigned *kcount = calloc(ci->kernel_count + 1, sizeof *kcount);
  unsigned **acount = calloc(ci->kernel_count + 1, sizeof *acount);
  int max_k = -1;
  char b[1024];
  for (size_t i = 0; i < rs.n; i++) {
    const rec_t *r = &rs.r[i];
    if (r->kernel < 0) {
      if (!strcmp(r->key, "amdhsa.target"))
        cr_assert_str_eq(ci->target, r->val, "%s: amdhsa.target", label);
      else if (!strcmp(r->key, "amdhsa.version")) {
        snprintf(b, sizeof b, "%u,%u", ci->amdhsa_version[0], ci->amdhsa_version[1]);
        cr_assert_str_eq(b, r->val, "%s: amdhsa.version", label);
      }
      continue; /* amdhsa.printf etc. are not per-kernel metadata */
    }
    cr_assert_lt((uint32_t)r->kernel, ci->kernel_count, "%s: readelf has more kernels", label);
    if (r->kernel > max_k) max_k = r->kernel;
    const hsad_kernel_info_t *ki = hsad_kernel_info(hsad_codeobj_kernel_at(co, r->kernel));
    if (r->arg < 0) {
      const char *v = ours_kernel(ki, r->key, b, sizeof b);
      cr_assert(v, "%s: kernel %s: llvm-readelf shows field %s that codeobj does not decode",
                label, ki->name, r->key);
      cr_assert_str_eq(v, r->val, "%s: kernel %s: %s", label, ki->name, r->key);
      kcount[r->kernel]++;
    } else {
      cr_assert_lt((uint32_t)r->arg, ki->arg_count, "%s: kernel %s: readelf has more args", label,
                   ki->name);
      const char *v = ours_arg(&ki->args[r->arg], r->key, b, sizeof b);
      cr_assert(v, "%s: kernel %s arg %d: llvm-readelf shows field %s that codeobj does not "
                "decode", label, ki->name, r->arg, r->key);
      cr_assert_str_eq(v, r->val, "%s: kernel %s arg %d: %s", label, ki->name, r->arg, r->key);
      if (!acount[r->kernel]) acount[r->kernel] = calloc(ki->arg_count + 1, sizeof(unsigned));
      acount[r->kernel][r->arg]++;
    }
  }
  cr_assert_eq((uint32_t)(max_k + 1), ci->kernel_count, "%s: kernel count", label);
  /* nothing invented: the fields we report present are exactly those readelf printed */
  for (uint32_t k = 0; k < ci->kernel_count; k++) {
    const hsad_kernel_info_t *ki = hsad_kernel_info(hsad_codeobj_kernel_at(co, k));
    unsigned ours = 10 + (unsigned)__builtin_popcount(ki->present & ~HSAD_KI_HAS_ARGS);
    cr_assert_eq(kcount[k], ours, "%s: kernel %s: readelf %u fields, codeobj %u", label,
                 ki->name, kcount[k], ours);
    for (uint32_t a = 0; a < ki->arg_count; a++) {
      unsigned mine = 3 + (unsigned)__builtin_popcount(ki->args[a].present);
      cr_assert_eq(acount[k] ? acount[k][a] : 0, mine, "%s: kernel %s arg %u: field count",
                   label, ki->name, a);
    }
    free(acount[k]);
  }
  unsigned n = ci->kernel_count;
  free(kcount);
  free(acount);
  free(rs.r);
  hsad_codeobj_destroy(co);
  return n;
}

/* Writes each entry of a container to a temporary file and checks it. */
static unsigned check_container(const char *path, size_t want_entries) {
  hsad_codeobj_container_t *c = NULL;
  cr_assert_eq(hsad_codeobj_container_open_file(path, &c), HSAD_OK, "%s", hsad_last_error());
  size_t n = hsad_codeobj_container_entry_count(c);
  if (want_entries) cr_assert_eq(n, want_entries, "%s: %zu entries", path, n);
  unsigned kernels = 0;
  for (size_t i = 0; i < n; i++) {
    const hsad_codeobj_entry_t *e = hsad_codeobj_container_entry(c, i);
    char tmp[] = "/tmp/hsad-co-XXXXXX";
    int fd = mkstemp(tmp);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, e->data, e->size), (ssize_t)e->size);
    close(fd);
    char label[512];
    snprintf(label, sizeof label, "%s[%s]", path, e->entry_id);
    kernels += check_file(tmp, label);
    unlink(tmp);
  }
  hsad_codeobj_container_destroy(c);
  return kernels;
}

/* ---- hsad inspect --json: a small JSON reader (test code) flattening to path -> text ---- */
typedef struct {
  const char *p;
  recs_t *out;
  int ok;
} jp_t;

static void jp_ws(jp_t *j) {
  while (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r') j->p++;
}

static void jp_string(jp_t *j, char *out, size_t n) {
  size_t o = 0;
  if (*j->p != '"') {
    j->ok = 0;
    return;
  }
  j->p++;
  while (*j->p && *j->p != '"') {
    char c = *j->p++;
    if (c == '\\') {
      c = *j->p++;
      if (c == 'u') {
        unsigned v = 0;
        for (int i = 0; i < 4 && *j->p; i++, j->p++)
          v = v * 16 + (unsigned)(*j->p <= '9' ? *j->p - '0' : (*j->p | 32) - 'a' + 10);
        c = (char)v;
      }
    }
    if (o + 1 < n) out[o++] = c;
  }
  if (*j->p != '"') j->ok = 0;
  else j->p++;
  out[o] = '\0';
}

static void jp_scalar(jp_t *j, char *out, size_t n) {
  if (*j->p == '"') {
    jp_string(j, out, n);
    return;
  }
  size_t o = 0;
  while (*j->p && !strchr(",]} \n", *j->p)) {
    if (o + 1 < n) out[o++] = *j->p;
    j->p++;
  }
  out[o] = '\0';
  if (!o) j->ok = 0;
}

static void jp_value(jp_t *j, const char *path) {
  char sub[512];
  jp_ws(j);
  if (*j->p == '{') {
    j->p++;
    jp_ws(j);
    while (j->ok && *j->p != '}') {
      char key[128];
      jp_string(j, key, sizeof key);
      jp_ws(j);
      if (*j->p++ != ':') j->ok = 0;
      snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "/" : "", key);
      jp_value(j, sub);
      jp_ws(j);
      if (*j->p == ',') j->p++, jp_ws(j);
      else if (*j->p != '}') j->ok = 0;
    }
    j->p++;
  } else if (*j->p == '[') {
    j->p++;
    jp_ws(j);
    char joined[1024] = "";
    int scalars = *j->p != '{' && *j->p != '[';
    for (unsigned i = 0; j->ok && *j->p != ']'; i++) {
      if (scalars) {
        char v[256];
        jp_scalar(j, v, sizeof v);
        size_t l = strlen(joined);
        snprintf(joined + l, sizeof joined - l, "%s%s", l ? "," : "", v);
      } else {
        snprintf(sub, sizeof sub, "%s/%u", path, i);
        jp_value(j, sub);
      }
      jp_ws(j);
      if (*j->p == ',') j->p++, jp_ws(j);
      else if (*j->p != ']') j->ok = 0;
    }
    j->p++;
    if (scalars) rec_add(j->out, 0, 0, path, joined);
  } else {
    char v[1024];
    jp_scalar(j, v, sizeof v);
    rec_add(j->out, 0, 0, path, v);
  }
}

static const char *jfind(const recs_t *rs, const char *path) {
  for (size_t i = 0; i < rs->n; i++)
    if (!strcmp(rs->r[i].key, path)) return rs->r[i].val;
  return NULL;
}

/* Every field llvm-readelf prints equals the same field of `hsad inspect --json`, and the JSON
 * has no metadata field readelf lacks. */
static void check_json(const char *path) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "%s inspect --json '%s'", CO_HSAD, path);
  FILE *p = popen(cmd, "r");
  cr_assert(p);
  size_t cap = 1 << 22, n = 0;
  char *text = malloc(cap);
  size_t got;
  while ((got = fread(text + n, 1, cap - 1 - n, p)) > 0) n += got;
  text[n] = '\0';
  cr_assert_eq(pclose(p), 0, "%s failed", cmd);
  recs_t js = {0}, re = {0};
  jp_t j = {text, &js, 1};
  jp_value(&j, "");
  jp_ws(&j);
  cr_assert(j.ok && *j.p == '\0', "%s: output is not valid JSON near '%.40s'", path, j.p);
  readelf_notes(path, &re);
  char jpath[512];
  for (size_t i = 0; i < re.n; i++) {
    const rec_t *r = &re.r[i];
    if (r->kernel < 0) {
      if (!strcmp(r->key, "amdhsa.target"))
        cr_assert_str_eq(jfind(&js, "target"), r->val, "%s: target", path);
      continue;
    }
    if (r->arg < 0)
      snprintf(jpath, sizeof jpath, "kernels/%d/%s", r->kernel, r->key + 1);
    else
      snprintf(jpath, sizeof jpath, "kernels/%d/args/%d/%s", r->kernel, r->arg, r->key + 1);
    const char *v = jfind(&js, jpath);
    cr_assert(v, "%s: JSON lacks %s (readelf: %s)", path, jpath, r->val);
    cr_assert_str_eq(v, r->val, "%s: %s", path, jpath);
  }
  /* the JSON's metadata fields (not descriptor/occupancy/pressure) all come from the note */
  for (size_t i = 0; i < js.n; i++) {
    const char *k = js.r[i].key;
    int kern, arg, used = 0;
    char field[128];
    if (strncmp(k, "kernels/", 8) || strstr(k, "/descriptor/") || strstr(k, "/occupancy/") ||
        strstr(k, "/pressure/"))
      continue;
    if (sscanf(k, "kernels/%d/args/%d/%127s%n", &kern, &arg, field, &used) == 3) {
    } else if (sscanf(k, "kernels/%d/%127s%n", &kern, field, &used) == 2) {
      arg = -1;
      if (!strcmp(field, "args")) continue; /* "args": [] for a kernel without .args */
    } else {
      continue;
    }
    bool found = false;
    for (size_t e = 0; e < re.n && !found; e++)
      found = re.r[e].kernel == kern && re.r[e].arg == arg && !strcmp(re.r[e].key + 1, field);
    cr_assert(found, "%s: JSON field %s is not in the note", path, k);
  }
  free(js.r);
  free(re.r);
  free(text);
}

Test(codeobj_readelf, inspect_json) {
  cr_assert_eq(access(CO_HSAD, X_OK), 0, "%s not built", CO_HSAD);
  const char *names[] = {"kernels-gfx90a-v5.hsaco", "kernels-gfx906-v4.hsaco",
                         "kernels-gfx1030-v5.hsaco", "kernels-gfx90a-v3.hsaco",
                         "handwritten-v5.hsaco"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", CO_FIXDIR, names[i]);
    check_json(path);
  }
  /* the 80-kernel rocrand object */
  hsad_codeobj_container_t *c = NULL;
  cr_assert_eq(hsad_codeobj_container_open_file(ROCRAND, &c), HSAD_OK);
  size_t idx;
  cr_assert_eq(hsad_codeobj_container_select(c, "gfx90a:xnack-", &idx), HSAD_OK);
  const hsad_codeobj_entry_t *e = hsad_codeobj_container_entry(c, idx);
  char tmp[] = "/tmp/hsad-json-XXXXXX";
  int fd = mkstemp(tmp);
  cr_assert_eq(write(fd, e->data, e->size), (ssize_t)e->size);
  close(fd);
  check_json(tmp);
  unlink(tmp);
  hsad_codeobj_container_destroy(c);
}

Test(codeobj_readelf, fixtures) {
  const char *names[] = {"kernels-gfx90a-v5.hsaco", "kernels-gfx90a-v4.hsaco",
                         "kernels-gfx90a-v3.hsaco", "kernels-gfx90a_xnack--v4.hsaco",
                         "kernels-gfx90a_sramecc+_xnack+-v5.hsaco", "kernels-gfx906-v4.hsaco",
                         "kernels-gfx906-v5.hsaco", "kernels-gfx908-v5.hsaco",
                         "kernels-gfx940-v5.hsaco", "kernels-gfx1030-v5.hsaco",
                         "kernels-gfx1030-v4.hsaco", "kernels-gfx1100-v5.hsaco",
                         "handwritten-v4.hsaco", "handwritten-v5.hsaco"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", CO_FIXDIR, names[i]);
    cr_assert_gt(check_file(path, path), 0);
  }
}

Test(codeobj_readelf, project_kernels) {
  DIR *d = opendir(CO_KERNDIR);
  cr_assert(d, "%s missing: build the project's kernels first (make kernels)", CO_KERNDIR);
  struct dirent *de;
  unsigned files = 0, v4 = 0, v5 = 0;
  while ((de = readdir(d))) {
    size_t l = strlen(de->d_name);
    if (l < 7 || strcmp(de->d_name + l - 6, ".hsaco")) continue;
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", CO_KERNDIR, de->d_name);
    check_file(path, path);
    files++;
    v4 += strstr(de->d_name, "-v4.") != NULL;
    v5 += strstr(de->d_name, "-v5.") != NULL;
  }
  closedir(d);
  cr_assert_geq(files, 10, "only %u code objects in %s", files, CO_KERNDIR);
  cr_assert(v4 && v5, "need both v4 and v5 code objects");
  cr_log_info("checked %u code objects of kernels/", files);
}

Test(codeobj_readelf, bundle_and_host_fatbin) {
  cr_assert_eq(check_container(FIX("hip_scale.bundle"), 2), 2);
  cr_assert_eq(check_container(FIX("hip_scale.host.o"), 2), 2);
  cr_assert_eq(check_container(FIX("hip_multi.so"), 4), 4);
}

Test(codeobj_readelf, rocrand) {
  cr_assert_eq(access(ROCRAND, R_OK), 0,
               ROCRAND " missing: scripts/deps.sh installs librocrand1");
  unsigned kernels = check_container(ROCRAND, 7); /* gfx803 ... gfx1030; the host entry skipped */
  cr_assert_eq(kernels, 7 * 80, "%u kernels", kernels);
}
