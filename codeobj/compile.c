/* compile.c - OpenCL C / HIP source to a code object through comgr (amd_comgr.h).
 * Pipeline (comgr's documented actions): COMPILE_SOURCE_WITH_DEVICE_LIBS_TO_BC ->
 * CODEGEN_BC_TO_RELOCATABLE -> LINK_RELOCATABLE_TO_EXECUTABLE, logging on so the compiler's
 * diagnostics ("k.cl:3:5: error: ...") come back as a LOG data object.
 * Debian's comgr 2.4 does not find clang's resource headers (opencl-c.h, HIP wrappers) by itself:
 * the build passes their folder (`clang-15 -print-resource-dir`/include) as
 * HSAD_CLANG_RESOURCE_INCLUDE and it is added with -I, plus -Xclang -finclude-default-header for
 * OpenCL. */
#include "codeobj/codeobj_internal.h"

#include <amd_comgr.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef HSAD_CLANG_RESOURCE_INCLUDE
#define HSAD_CLANG_RESOURCE_INCLUDE ""
#endif
/* Debian's rocm-device-libs bitcode folder (found at build time). */
#ifndef HSAD_DEVICE_LIB_DIR
#define HSAD_DEVICE_LIB_DIR "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode"
#endif

/* comgr is loaded on first use (dlopen), not linked: libamd_comgr pulls in libLLVM, whose
 * loading and static constructors cost ~25 ms at every process start, which `hsad inspect`
 * (budget: 20 ms for an 80-kernel code object) must not pay. */
static struct {
  __typeof__(&amd_comgr_action_data_count) action_data_count;
  __typeof__(&amd_comgr_action_data_get_data) action_data_get_data;
  __typeof__(&amd_comgr_action_info_set_isa_name) action_info_set_isa_name;
  __typeof__(&amd_comgr_action_info_set_language) action_info_set_language;
  __typeof__(&amd_comgr_action_info_set_logging) action_info_set_logging;
  __typeof__(&amd_comgr_action_info_set_option_list) action_info_set_option_list;
  __typeof__(&amd_comgr_create_action_info) create_action_info;
  __typeof__(&amd_comgr_create_data) create_data;
  __typeof__(&amd_comgr_create_data_set) create_data_set;
  __typeof__(&amd_comgr_data_set_add) data_set_add;
  __typeof__(&amd_comgr_destroy_action_info) destroy_action_info;
  __typeof__(&amd_comgr_destroy_data_set) destroy_data_set;
  __typeof__(&amd_comgr_do_action) do_action;
  __typeof__(&amd_comgr_get_data) get_data;
  __typeof__(&amd_comgr_get_isa_count) get_isa_count;
  __typeof__(&amd_comgr_get_isa_name) get_isa_name;
  __typeof__(&amd_comgr_release_data) release_data;
  __typeof__(&amd_comgr_set_data) set_data;
  __typeof__(&amd_comgr_set_data_name) set_data_name;
  __typeof__(&amd_comgr_status_string) status_string;
} cg;
static const char *cg_error; /* why comgr could not be loaded, NULL once loaded */
static char cg_error_buf[512];
static pthread_once_t cg_once = PTHREAD_ONCE_INIT;

static void co_comgr_load(void) {
  void *h = dlopen("libamd_comgr.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(cg_error_buf, sizeof cg_error_buf, "%s", dlerror());
    cg_error = cg_error_buf;
    return;
  }
#define CO_SYM(name)                                                                           \
  do {                                                                                         \
    *(void **)&cg.name = dlsym(h, "amd_comgr_" #name);                                         \
    if (!cg.name) {                                                                            \
      snprintf(cg_error_buf, sizeof cg_error_buf, "symbol amd_comgr_%s missing", #name);      \
      cg_error = cg_error_buf;                                                                 \
      return;                                                                                  \
    }                                                                                          \
  } while (0)
  CO_SYM(action_data_count);
  CO_SYM(get_isa_count);
  CO_SYM(get_isa_name);
  CO_SYM(action_data_get_data);
  CO_SYM(action_info_set_isa_name);
  CO_SYM(action_info_set_language);
  CO_SYM(action_info_set_logging);
  CO_SYM(action_info_set_option_list);
  CO_SYM(create_action_info);
  CO_SYM(create_data);
  CO_SYM(create_data_set);
  CO_SYM(data_set_add);
  CO_SYM(destroy_action_info);
  CO_SYM(destroy_data_set);
  CO_SYM(do_action);
  CO_SYM(get_data);
  CO_SYM(release_data);
  CO_SYM(set_data);
  CO_SYM(set_data_name);
  CO_SYM(status_string);
#undef CO_SYM
}

typedef struct {
  char **v;
  size_t n, cap;
  int oom;
} co_opts_t;

static void co_opt_add(co_opts_t *o, const char *fmt, const char *arg) {
  if (o->oom) return;
  if (o->n == o->cap) {
    size_t cap = o->cap ? o->cap * 2 : 16;
    char **v = realloc(o->v, cap * sizeof *v);
    if (!v) {
      o->oom = 1;
      return;
    }
    o->v = v;
    o->cap = cap;
  }
  size_t len = strlen(fmt) + (arg ? strlen(arg) : 0) + 1;
  char *s = malloc(len);
  if (!s) {
    o->oom = 1;
    return;
  }
  snprintf(s, len, fmt, arg ? arg : "");
  o->v[o->n++] = s;
}

static void co_opts_free(co_opts_t *o) {
  for (size_t i = 0; i < o->n; i++) free(o->v[i]);
  free(o->v);
}

/* Concatenates the LOG and DIAGNOSTIC data objects of `set` into a malloc'd string. */
static char *co_collect_log(amd_comgr_data_set_t set) {
  char *out = NULL;
  size_t used = 0;
  amd_comgr_data_kind_t kinds[2] = {AMD_COMGR_DATA_KIND_LOG, AMD_COMGR_DATA_KIND_DIAGNOSTIC};
  for (int k = 0; k < 2; k++) {
    size_t count = 0;
    if (cg.action_data_count(set, kinds[k], &count)) continue;
    for (size_t i = 0; i < count; i++) {
      amd_comgr_data_t d;
      if (cg.action_data_get_data(set, kinds[k], i, &d)) continue;
      size_t sz = 0;
      if (!cg.get_data(d, &sz, NULL) && sz) {
        char *n = realloc(out, used + sz + 1);
        if (n) {
          out = n;
          if (!cg.get_data(d, &sz, out + used)) used += sz;
          out[used] = '\0';
        }
      }
      cg.release_data(d);
    }
  }
  return out;
}

/* comgr compiles a copy at /tmp/comgr-XXXXXX/input/NAME: diagnostics name that path. Rewrites
 * every "<path>/input/NAME" token back to the caller's source name so they read NAME:LINE:COL. */
static char *co_fix_paths(char *log, const char *base, const char *source_name) {
  if (!log || !*base) return log;
  char needle[300];
  snprintf(needle, sizeof needle, "/input/%s", base);
  size_t nl = strlen(needle), sl = strlen(source_name), ll = strlen(log);
  size_t cap = ll + 1, used = 0;
  char *out = malloc(cap);
  if (!out) return log;
  const char *p = log;
  for (;;) {
    const char *hit = strstr(p, needle);
    if (!hit) break;
    const char *start = hit;
    while (start > p && start[-1] != ' ' && start[-1] != '\n' && start[-1] != '(' &&
           start[-1] != '\'')
      start--;
    size_t keep = (size_t)(start - p);
    size_t need = used + keep + sl + 1;
    if (need > cap) {
      cap = need + ll;
      char *n = realloc(out, cap);
      if (!n) {
        free(out);
        return log;
      }
      out = n;
    }
    memcpy(out + used, p, keep);
    used += keep;
    memcpy(out + used, source_name, sl);
    used += sl;
    p = hit + nl;
  }
  size_t rest = strlen(p);
  if (used + rest + 1 > cap) {
    char *n = realloc(out, used + rest + 1);
    if (!n) {
      free(out);
      return log;
    }
    out = n;
  }
  memcpy(out + used, p, rest + 1);
  free(log);
  return out;
}

/* The processor must be one comgr knows (amd_comgr_get_isa_name lists
 * "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-" and the like): comgr itself only answers
 * INVALID_ARGUMENT from amd_comgr_action_info_set_isa_name. A processor codeobj knows (its
 * occupancy table) that this comgr predates is UNSUPPORTED, any other INVALID_ARGUMENT; the
 * message lists the processors this comgr knows, each once. */
static hsad_status_t co_check_processor(const char *source_name, const char *processor) {
  size_t n = 0;
  if (cg.get_isa_count(&n) != AMD_COMGR_STATUS_SUCCESS) return HSAD_OK; /* comgr will say */
  const char *prefix = "amdgcn-amd-amdhsa--";
  size_t plen = strlen(prefix), want = strlen(processor);
  char known[2048] = "";
  size_t used = 0;
  for (size_t i = 0; i < n; i++) {
    const char *name = NULL;
    if (cg.get_isa_name(i, &name) != AMD_COMGR_STATUS_SUCCESS || !name ||
        strncmp(name, prefix, plen))
      continue;
    const char *proc = name + plen;
    size_t len = strcspn(proc, ":");
    if (len == want && !strncmp(proc, processor, len)) return HSAD_OK;
    /* each processor once (comgr lists one entry per feature combination) */
    char item[40];
    snprintf(item, sizeof item, "%.*s", (int)(len < 32 ? len : 32), proc);
    bool seen = false;
    for (const char *p = known; (p = strstr(p, item)) != NULL; p += strlen(item))
      if ((p == known || p[-1] == ' ') && (p[strlen(item)] == ',' || !p[strlen(item)])) {
        seen = true;
        break;
      }
    if (!seen && used + strlen(item) + 3 < sizeof known)
      used += (size_t)snprintf(known + used, sizeof known - used, "%s%s", used ? ", " : "", item);
  }
  if (hsad_gfx_limits_find(processor)) /* a real processor this comgr predates */
    return hsad_fail(HSAD_ERR_UNSUPPORTED,
                     "%s: this comgr cannot compile for %s (a newer ROCm's can); it compiles for "
                     "%s", source_name, processor, used ? known : "no processor");
  return hsad_fail(HSAD_ERR_INVALID_ARGUMENT,
                   "%s: target processor '%s' is unknown to comgr; it compiles for %s",
                   source_name, processor, used ? known : "no processor");
}

static const char *co_comgr_msg(amd_comgr_status_t s) {
  const char *m = NULL;
  if (cg.status_string(s, &m) || !m) return "unknown comgr status";
  return m;
}

/* Every kernel of a budgeted compile against its budget (hsad_compile_options_t.budget). */
static hsad_status_t co_budget_check(const char *name, const hsad_variant_budget_t *b,
                                     const void *elf, size_t size) {
  hsad_codeobj_t *co = NULL;
  hsad_status_t st = hsad_codeobj_load_memory(elf, size, name, &co);
  if (st) return st;
  for (uint32_t k = 0; k < hsad_codeobj_info(co)->kernel_count && !st; k++) {
    const hsad_kernel_t *kern = hsad_codeobj_kernel_at(co, k);
    const hsad_kernel_info_t *ki = hsad_kernel_info(kern);
    if (b->max_workgroup_size) {
      uint32_t r = ki->reqd_workgroup_size[0] * ki->reqd_workgroup_size[1] *
                   ki->reqd_workgroup_size[2];
      if ((ki->present & HSAD_KI_HAS_REQD_WORKGROUP_SIZE) && r > b->max_workgroup_size) {
        st = hsad_fail(HSAD_ERR_COMPILE,
                       "%s: kernel '%s': its reqd_work_group_size %ux%ux%u (%u work-items) "
                       "conflicts with the budget's maximum workgroup size %u",
                       name, ki->name, ki->reqd_workgroup_size[0], ki->reqd_workgroup_size[1],
                       ki->reqd_workgroup_size[2], r, b->max_workgroup_size);
        break;
      }
      if (ki->max_flat_workgroup_size != b->max_workgroup_size) {
        st = hsad_fail(HSAD_ERR_COMPILE,
                       "%s: kernel '%s' got .max_flat_workgroup_size %u, not the budget's %u: "
                       "its own attributes conflict, or it is not declared with __kernel "
                       "(OpenCL) or __global__ from hip/hip_runtime.h (HIP)",
                       name, ki->name, ki->max_flat_workgroup_size, b->max_workgroup_size);
        break;
      }
    }
    if (b->min_waves_per_eu) {
      hsad_occupancy_t o;
      if (hsad_kernel_occupancy(kern, NULL, ki->wavefront_size, 0, &o) == HSAD_OK &&
          o.waves_per_simd < b->min_waves_per_eu)
        st = hsad_fail(HSAD_ERR_COMPILE,
                       "%s: kernel '%s': the compiler cannot meet the budget of %u waves per "
                       "SIMD: %u VGPRs (%u allocated), %u SGPRs and %u LDS bytes allow %u (%s)",
                       name, ki->name, b->min_waves_per_eu, ki->vgpr_count, o.vgprs_allocated,
                       ki->sgpr_count, ki->group_segment_fixed_size, o.waves_per_simd,
                       hsad_occ_limiter_name(o.limiter));
    }
  }
  hsad_codeobj_destroy(co);
  return st;
}

/* The OpenCL source with its carried copy appended (HSAD_CL_SOURCE_SYMBOL, hsad_codeobj.h):
 * malloc'd in *out (caller frees), or NULL when out of memory. Line numbers of the source are
 * unchanged: the array follows its last line. */
static char *co_carry_source(const char *source, size_t size, const char *source_name,
                             const hsad_compile_options_t *o, size_t *out_size) {
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  if (!m) return NULL;
  fwrite(source, 1, size, m);
  fprintf(m, "\n__attribute__((used, visibility(\"protected\"))) constant uchar %s[] = {",
          HSAD_CL_SOURCE_SYMBOL);
  /* the blob: magic, options line, source, NUL */
  char *blob = NULL;
  size_t blen = 0;
  FILE *b = open_memstream(&blob, &blen);
  if (b) {
    fputs(HSAD_CL_SOURCE_MAGIC, b);
    for (uint32_t i = 0; i < o->define_count; i++) fprintf(b, "%s-D%s", i ? " " : "", o->defines[i]);
    fputc('\n', b);
    /* self-contained: the files it includes (next to it, in -I folders) inlined; if that
     * fails (an unreadable include), as given: comgr reports the include itself */
    char *expanded = NULL;
    size_t elen = 0;
    if (hsad_cl_source_expand(source, size, source_name, o->include_dirs, o->include_dir_count,
                              &expanded, &elen) == HSAD_OK)
      fwrite(expanded, 1, elen, b);
    else
      fwrite(source, 1, size, b);
    free(expanded);
    fputc(0, b);
    fclose(b);
  }
  for (size_t i = 0; blob && i < blen; i++) fprintf(m, "%s%u", !i ? "\n" : i % 32 ? "," : ",\n", (uint8_t)blob[i]);
  fprintf(m, "};\n");
  free(blob);
  bool ok = blob != NULL;
  if (fclose(m) != 0 || !ok) {
    free(text);
    return NULL;
  }
  *out_size = len;
  return text;
}

hsad_status_t hsad_codeobj_compile(const char *source, size_t source_size,
                                   const char *source_name, const hsad_compile_options_t *opts,
                                   void **out_data, size_t *out_size, char **out_log) {
  if (out_data) *out_data = NULL;
  if (out_size) *out_size = 0;
  if (out_log) *out_log = NULL;
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_codeobj_compile", {source, "source"},
                                   {source_name, "source_name"}, {opts, "opts"});
  if (!ns) ns = HSAD_NULL_ARGS("hsad_codeobj_compile", {opts->target, "opts->target"},
                               {out_data, "out_data"}, {out_size, "out_size"});
  if (ns) return ns;
  if (opts->opt_level < 0 || opts->opt_level > 3)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: -O%d: optimization level must be 0..3",
                     source_name, opts->opt_level);
  if (opts->code_object_version && (opts->code_object_version < 4 ||
                                    opts->code_object_version > 5))
    return hsad_fail(HSAD_ERR_CODE_OBJECT_VERSION,
                     "%s: code object version %u requested: supported are 4 and 5", source_name,
                     opts->code_object_version);
  hsad_target_id_t tid;
  hsad_status_t st = hsad_target_id_parse(opts->target, &tid);
  if (st) return st;
  pthread_once(&cg_once, co_comgr_load);
  if (cg_error)
    return hsad_fail(HSAD_ERR_UNSUPPORTED,
                     "%s: comgr (libamd_comgr.so.2, Debian package libamd-comgr2) cannot be "
                     "loaded: %s",
                     source_name, cg_error);
  size_t nlen = strlen(source_name);
  amd_comgr_language_t lang;
  if (nlen > 3 && !strcmp(source_name + nlen - 3, ".cl")) lang = AMD_COMGR_LANGUAGE_OPENCL_2_0;
  else if (nlen > 4 && !strcmp(source_name + nlen - 4, ".hip")) lang = AMD_COMGR_LANGUAGE_HIP;
  else
    return hsad_fail(HSAD_ERR_UNSUPPORTED,
                     "%s: unknown source language (expected a .cl or .hip file name)",
                     source_name);
  if (source_size == 0)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: empty source (0 bytes): nothing to compile",
                     source_name);
  if ((st = co_check_processor(source_name, tid.processor)) != HSAD_OK) return st;
  char isa[96], tidtext[48];
  hsad_target_id_format(&tid, tidtext, sizeof tidtext);
  snprintf(isa, sizeof isa, "amdgcn-amd-amdhsa--%s", tidtext);

  co_opts_t copt = {0}, gopt = {0};
  if (HSAD_CLANG_RESOURCE_INCLUDE[0]) {
    co_opt_add(&copt, "-I%s", HSAD_CLANG_RESOURCE_INCLUDE);
    /* HIP's amd_hip_runtime.h includes <include/cuda_wrappers/...>: the resource dir itself */
    if (lang == AMD_COMGR_LANGUAGE_HIP) co_opt_add(&copt, "-I%s/..", HSAD_CLANG_RESOURCE_INCLUDE);
  }
  for (uint32_t i = 0; i < opts->include_dir_count; i++)
    co_opt_add(&copt, "-I%s", opts->include_dirs[i]);
  for (uint32_t i = 0; i < opts->define_count; i++) co_opt_add(&copt, "-D%s", opts->defines[i]);
  if (lang != AMD_COMGR_LANGUAGE_HIP) {
    co_opt_add(&copt, "-Xclang", NULL);
    co_opt_add(&copt, "-finclude-default-header", NULL);
    co_opt_add(&copt, "-cl-std=CL2.0", NULL);
  }
  if (lang == AMD_COMGR_LANGUAGE_HIP) {
    /* comgr 2.4 links no device libraries for HIP (ockl symbols stay undefined): link them into
     * the bitcode as clang's HIP driver does, with -mlink-builtin-bitcode. */
    uint32_t major = co_gfx_major(tid.processor);
    char isa_lib[64], abi_lib[40];
    snprintf(isa_lib, sizeof isa_lib, "oclc_isa_version_%s.bc", tid.processor + 3);
    snprintf(abi_lib, sizeof abi_lib, "oclc_abi_version_%u00.bc",
             opts->code_object_version ? opts->code_object_version : 4);
    const char *libs[] = {"hip.bc", "ocml.bc", "ockl.bc", "oclc_daz_opt_off.bc",
                          "oclc_unsafe_math_off.bc", "oclc_finite_only_off.bc",
                          "oclc_correctly_rounded_sqrt_on.bc",
                          major >= 10 ? "oclc_wavefrontsize64_off.bc" : "oclc_wavefrontsize64_on.bc",
                          isa_lib, abi_lib};
    for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++) {
      char path[512];
      snprintf(path, sizeof path, "%s/%s", HSAD_DEVICE_LIB_DIR, libs[i]);
      if (access(path, R_OK) != 0) {
        co_opts_free(&copt);
        co_opts_free(&gopt);
        return hsad_fail(HSAD_ERR_UNSUPPORTED,
                         "%s: HIP for %s needs the device library %s, absent (install "
                         "rocm-device-libs)",
                         source_name, tid.processor, path);
      }
      co_opt_add(&copt, "-Xclang", NULL);
      co_opt_add(&copt, "-mlink-builtin-bitcode", NULL);
      co_opt_add(&copt, "-Xclang", NULL);
      co_opt_add(&copt, "%s", path);
    }
  }
  /* The register budget: launch-bound attributes on every kernel, the source unchanged. */
  const hsad_variant_budget_t *bud = &opts->budget;
  char attr[160] = "", budget_header[64] = "";
  if (bud->max_workgroup_size || bud->min_waves_per_eu) {
    const hsad_gfx_limits_t *lim = hsad_gfx_limits_find(tid.processor);
    uint32_t most = lim ? lim->max_waves_per_simd : 20;
    if (bud->max_workgroup_size > 1024 || bud->min_waves_per_eu > most) {
      co_opts_free(&copt);
      co_opts_free(&gopt);
      if (bud->max_workgroup_size > 1024)
        return hsad_fail(HSAD_ERR_INVALID_ARGUMENT,
                         "%s: budget maximum workgroup size %u: must be 1..1024", source_name,
                         bud->max_workgroup_size);
      return hsad_fail(HSAD_ERR_INVALID_ARGUMENT,
                       "%s: budget of %u waves per SIMD: %s runs at most %u", source_name,
                       bud->min_waves_per_eu, tid.processor, most);
    }
    int n = snprintf(attr, sizeof attr, "__attribute__((");
    if (bud->max_workgroup_size)
      n += snprintf(attr + n, sizeof attr - (size_t)n, "amdgpu_flat_work_group_size(1, %u)%s",
                    bud->max_workgroup_size, bud->min_waves_per_eu ? ", " : "");
    if (bud->min_waves_per_eu)
      n += snprintf(attr + n, sizeof attr - (size_t)n, "amdgpu_waves_per_eu(%u)",
                    bud->min_waves_per_eu);
    snprintf(attr + n, sizeof attr - (size_t)n, "))");
    if (lang != AMD_COMGR_LANGUAGE_HIP) {
      /* `__kernel` and `kernel` are keywords of OpenCL C: as macros they expand once, to the
       * keyword itself followed by the attributes (a macro is not re-expanded in itself) */
      co_opt_add(&copt, "-D__kernel=__kernel %s", attr);
      co_opt_add(&copt, "-Dkernel=__kernel", NULL);
    } else {
      /* HIP: __global__ comes from hip/hip_runtime.h; a header included first pulls it in and
       * redefines __global__, and the include guards keep the source's own #include from
       * redefining it back */
      snprintf(budget_header, sizeof budget_header, "/tmp/hsad-budget-XXXXXX.h");
      int fd = mkstemps(budget_header, 2);
      FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
      bool ok = f && fprintf(f, "#include <hip/hip_runtime.h>\n#undef __global__\n"
                                "#define __global__ __attribute__((global)) %s\n", attr) > 0;
      if (f) ok = fclose(f) == 0 && ok;
      else if (fd >= 0) close(fd);
      if (!ok) {
        if (fd >= 0) unlink(budget_header);
        co_opts_free(&copt);
        co_opts_free(&gopt);
        return hsad_fail(HSAD_ERR_IO, "%s: cannot write the budget header %s: %s", source_name,
                         budget_header, strerror(errno));
      }
      co_opt_add(&copt, "-include", NULL);
      co_opt_add(&copt, "%s", budget_header);
    }
  }
  char olevel[8];
  snprintf(olevel, sizeof olevel, "-O%d", opts->opt_level);
  co_opt_add(&copt, olevel, NULL);
  co_opt_add(&gopt, olevel, NULL);
  if (opts->code_object_version) {
    char cov[40];
    snprintf(cov, sizeof cov, "-mcode-object-version=%u", opts->code_object_version);
    co_opt_add(&copt, cov, NULL);
    co_opt_add(&gopt, cov, NULL);
  }
  if (copt.oom || gopt.oom) {
    co_opts_free(&copt);
    co_opts_free(&gopt);
    if (budget_header[0]) unlink(budget_header);
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory", source_name);
  }

  amd_comgr_data_t src = {0};
  amd_comgr_data_set_t in = {0}, bc = {0}, reloc = {0}, exe = {0};
  amd_comgr_action_info_t info = {0};
  bool have_src = false, have_in = false, have_bc = false, have_reloc = false, have_exe = false,
       have_info = false;
  amd_comgr_status_t cs;
  const char *step = "";
  char *log = NULL, *carried = NULL;
  size_t carried_size = 0;
  const char *base = strrchr(source_name, '/');
  base = base ? base + 1 : source_name;
#define TRY(what, call)                                                                        \
  do {                                                                                         \
    step = what;                                                                               \
    if ((cs = (call)) != AMD_COMGR_STATUS_SUCCESS) goto comgr_fail;                            \
  } while (0)
  TRY("create data", cg.create_data(AMD_COMGR_DATA_KIND_SOURCE, &src));
  have_src = true;
  if (lang != AMD_COMGR_LANGUAGE_HIP) {
    carried = co_carry_source(source, source_size, source_name, opts, &carried_size);
    if (!carried) {
      cs = AMD_COMGR_STATUS_ERROR_OUT_OF_RESOURCES;
      step = "carry the source";
      goto comgr_fail;
    }
  }
  TRY("set data", carried ? cg.set_data(src, carried_size, carried)
                          : cg.set_data(src, source_size, source));
  TRY("set data name", cg.set_data_name(src, base));
  TRY("create data set", cg.create_data_set(&in));
  have_in = true;
  TRY("add data", cg.data_set_add(in, src));
  TRY("create data set", cg.create_data_set(&bc));
  have_bc = true;
  TRY("create data set", cg.create_data_set(&reloc));
  have_reloc = true;
  TRY("create data set", cg.create_data_set(&exe));
  have_exe = true;
  TRY("create action info", cg.create_action_info(&info));
  have_info = true;
  TRY("set isa name", cg.action_info_set_isa_name(info, isa));
  TRY("set language", cg.action_info_set_language(info, lang));
  TRY("set logging", cg.action_info_set_logging(info, true));
/* One compiler step: the action's options set, then the action from -> to; its failure keeps
 * the log comgr left in `to` (the compiler's diagnostics) for compile_fail. */
#define ACTION(what, options, count, kind, from, to)                                          \
  do {                                                                                         \
    TRY("set options", cg.action_info_set_option_list(info, options, count));                 \
    step = what;                                                                               \
    if ((cs = cg.do_action(kind, info, from, to)) != AMD_COMGR_STATUS_SUCCESS) {               \
      log = co_collect_log(to);                                                                \
      goto compile_fail;                                                                       \
    }                                                                                          \
  } while (0)
  ACTION("compile source with device libraries", (const char **)copt.v, copt.n,
         AMD_COMGR_ACTION_COMPILE_SOURCE_WITH_DEVICE_LIBS_TO_BC, in, bc);
  ACTION("code generation", (const char **)gopt.v, gopt.n,
         AMD_COMGR_ACTION_CODEGEN_BC_TO_RELOCATABLE, bc, reloc);
  ACTION("link", NULL, 0, AMD_COMGR_ACTION_LINK_RELOCATABLE_TO_EXECUTABLE, reloc, exe);
#undef ACTION
  {
    /* warnings of the compile step */
    log = co_fix_paths(co_collect_log(bc), base, source_name);
    amd_comgr_data_t obj;
    TRY("get executable", cg.action_data_get_data(exe, AMD_COMGR_DATA_KIND_EXECUTABLE, 0,
                                                         &obj));
    size_t sz = 0;
    cs = cg.get_data(obj, &sz, NULL);
    void *buf = cs == AMD_COMGR_STATUS_SUCCESS ? malloc(sz ? sz : 1) : NULL;
    if (buf) cs = cg.get_data(obj, &sz, buf);
    cg.release_data(obj);
    if (!buf) {
      st = hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu bytes)", source_name, sz);
      goto out;
    }
    if (cs != AMD_COMGR_STATUS_SUCCESS) {
      free(buf);
      goto comgr_fail;
    }
    *out_data = buf;
    *out_size = sz;
    st = HSAD_OK;
    goto out;
  }
compile_fail:
  log = co_fix_paths(log, base, source_name);
  st = hsad_fail(HSAD_ERR_COMPILE, "%s: %s for %s failed:\n%.900s%s", source_name, step, isa,
                 log && *log ? log : "(comgr returned no diagnostics)",
                 log && strlen(log) > 900 ? "\n[... see the full log]" : "");
  goto out;
comgr_fail:
  st = hsad_fail(cs == AMD_COMGR_STATUS_ERROR_OUT_OF_RESOURCES ? HSAD_ERR_OUT_OF_MEMORY
                                                              : HSAD_ERR_COMPILE,
                 "%s: comgr %s failed: %s", source_name, step, co_comgr_msg(cs));
out:
#undef TRY
  if (out_log) *out_log = log;
  else free(log);
  if (have_info) cg.destroy_action_info(info);
  if (have_exe) cg.destroy_data_set(exe);
  if (have_reloc) cg.destroy_data_set(reloc);
  if (have_bc) cg.destroy_data_set(bc);
  if (have_in) cg.destroy_data_set(in);
  if (have_src) cg.release_data(src);
  free(carried);
  co_opts_free(&copt);
  co_opts_free(&gopt);
  if (budget_header[0]) unlink(budget_header);
  if (st == HSAD_OK && attr[0]) {
    st = co_budget_check(source_name, bud, *out_data, *out_size);
    if (st) {
      free(*out_data);
      *out_data = NULL;
      *out_size = 0;
    }
  }
  return st;
}

hsad_status_t hsad_codeobj_compile_variants(const char *source, size_t source_size,
                                            const char *source_name,
                                            const hsad_compile_options_t *opts,
                                            const hsad_variant_budget_t *budgets, uint32_t count,
                                            hsad_codeobj_t **out_variants, char **out_log) {
  if (out_log) *out_log = NULL;
  hsad_status_t ns = HSAD_NULL_ARGS("hsad_codeobj_compile_variants", {source, "source"},
                                   {source_name, "source_name"}, {opts, "opts"},
                                   {budgets, "budgets"}, {out_variants, "out_variants"});
  if (ns) return ns;
  if (count == 0 || count > 16)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_codeobj_compile_variants: %u variants "
                     "(1..16)", count);
  memset(out_variants, 0, count * sizeof *out_variants);
  hsad_compile_options_t o = *opts;
  hsad_status_t st = HSAD_OK;
  void *elf = NULL;
  size_t size = 0;
  char *log = NULL;
  /* a kernel's own workgroup bound, seen in a compile without a budget */
  hsad_codeobj_t *base = NULL;
  for (uint32_t i = 0; i < count; i++)
    if (budgets[i].max_workgroup_size) {
      o.budget = (hsad_variant_budget_t){0, 0};
      st = hsad_codeobj_compile(source, source_size, source_name, &o, &elf, &size, &log);
      if (!st) st = hsad_codeobj_load_memory(elf, size, source_name, &base);
      free(elf);
      elf = NULL;
      break;
    }
  size_t nlen = strlen(source_name);
  uint32_t dflt = nlen > 4 && !strcmp(source_name + nlen - 4, ".hip") ? 1024 : 256;
  for (uint32_t i = 0; i < count && !st && base; i++) {
    if (!budgets[i].max_workgroup_size) continue;
    for (uint32_t k = 0; k < hsad_codeobj_info(base)->kernel_count; k++) {
      const hsad_kernel_info_t *ki = hsad_kernel_info(hsad_codeobj_kernel_at(base, k));
      if (ki->max_flat_workgroup_size < dflt &&
          budgets[i].max_workgroup_size > ki->max_flat_workgroup_size) {
        st = hsad_fail(HSAD_ERR_COMPILE,
                       "%s: kernel '%s' declares a maximum workgroup size of %u (its own "
                       "attributes); variant %u asks %u",
                       source_name, ki->name, ki->max_flat_workgroup_size, i,
                       budgets[i].max_workgroup_size);
        break;
      }
    }
  }
  hsad_codeobj_destroy(base);
  for (uint32_t i = 0; i < count && !st; i++) {
    o.budget = budgets[i];
    free(log);
    log = NULL;
    st = hsad_codeobj_compile(source, source_size, source_name, &o, &elf, &size, &log);
    if (st) break;
    char label[1200];
    snprintf(label, sizeof label, "%s[variant %u: wg<=%u waves>=%u]", source_name, i,
             budgets[i].max_workgroup_size, budgets[i].min_waves_per_eu);
    st = hsad_codeobj_load_memory(elf, size, label, &out_variants[i]);
    free(elf);
    elf = NULL;
  }
  if (st)
    for (uint32_t i = 0; i < count; i++) {
      hsad_codeobj_destroy(out_variants[i]);
      out_variants[i] = NULL;
    }
  if (out_log) *out_log = log;
  else free(log);
  return st;
}
