/* cmd_run.c - `hsad run`: compile or load a kernel, set up its arguments, dispatch it, report.
 *
 * Arguments are checked against the kernel's metadata before anything runs: one --arg per
 * explicit argument, buffers for global pointers, scalars whose TYPE matches the argument's
 * .type_name (uint takes u32:, float4 takes f32:V0,V1,V2,V3), raw bytes (hex:, bin:) of exactly
 * the argument's .size for structs and anything else. The dispatch runs on a dedicated queue
 * whose per-slot kernarg block holds the kernel's kernarg segment (up to
 * HSAD_KERNARG_SEGMENT_MAX, which the library refuses above), so no dispatch needs padding.
 */
#define _GNU_SOURCE /* dlfcn RTLD_DEFAULT */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <float.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hsa-dispatch/hsad.h"
#ifndef HSAD_NO_AMD
#include "hsa-dispatch/hsad_rocr.h"
#include "tools/kfd-emu/kfd_emu.h"
#endif
#include "nvcodeobj/hsad_nv_codeobj.h"
#include "tools/hsad/hsad_cli.h"
#include "tools/hsad/hsad_cli_args.h"
#include "tools/hsad/run_fault.h"

static void usage_backends(FILE *f);

static void usage(FILE *f) {
  fprintf(f,
    "usage: hsad run SOURCE.cl|SOURCE.hip|FILE.hsaco KERNEL --grid X[,Y[,Z]] [--block X[,Y[,Z]]]\n"
    "                [--arg SPEC]... [--repeat N] [--device N] [--co-version 4|5] [-O0..3]\n"
    "                [-DNAME[=V]]... [-IDIR]... [--json] [--variants auto|LIST] [--trace FILE.json]\n"
    "                [--source FILE.cl]\n"
    "       hsad run SOURCE.cu|FILE.cubin|FILE.fatbin|FILE.ptx KERNEL --device N ...  (NVIDIA)\n"
    "\n"
    "Compiles SOURCE with comgr for the device's ISA (or loads a code object / bundle), creates\n"
    "the arguments, dispatches KERNEL N times in order (each packet has the barrier bit, so the\n"
    "runs form a dependent chain), waits, and reports the device, the kernel's resources and the\n"
    "timings. Buffers live in host-coherent fine-grained memory of the GPU's nearest NUMA node.\n"
    "The dispatch uses its own queue, whose per-slot kernarg block holds the kernel's kernarg\n"
    "segment (up to 8192 bytes). KERNEL is the kernel's name; a C++ (HIP) kernel can also be named\n"
    "by its demangled name or its plain function name when that is unique.\n"
    "\n"
    "--grid / --block   work-items per dimension (block default 64 / 1 / 1, clamped to the grid);\n"
    "                   HIP kernels want a grid that is a multiple of the block (warned otherwise)\n"
    "--arg SPEC, one per explicit kernel argument, in order (checked against the metadata):\n"
    "  buf:TYPE:COUNT[:INIT][:out[=FILE]][:txt=FILE]   for a global pointer argument\n"
    "        a buffer of COUNT elements of TYPE (the pointee's: f32 for a float*; integers of\n"
    "        either signedness); INIT is zeros (default), iota (0,1,2,...),\n"
    "        random[=SEED] (uniform [0,1) for floats, [0,1000) for integers), const=V, or\n"
    "        file=PATH (raw bytes of a regular file, at most COUNT elements; a shorter file\n"
    "        leaves the rest zero, with a warning). `out` prints a summary of the buffer after\n"
    "        the run, `out=FILE` writes its raw bytes to FILE, `txt=FILE` one element per line\n"
    "        (%%.9g for floats); every output file (out=, txt=, --trace) is another file, and\n"
    "        not the input. Each is checked before anything runs: an existing file must be\n"
    "        writable and not a folder, a new one must be creatable (its folder exists; the\n"
    "        check removes it again); names not created yet compare by their resolved folder\n"
    "        (a.bin, ./a.bin and d/../a.bin are one file); a refusal is exit 2, nothing written.\n"
    "  TYPE:VALUE    a scalar of the argument's type: u32:1000 for a uint, f32:2.5 for a float,\n"
    "                i64:-3 for a long (another TYPE is an error naming the argument;\n"
    "                HIP kernels: the types of the mangled name, _Z5scalePffj takes float*,\n"
    "                float, unsigned int; extern \"C\" ones have none: sizes only, warned)\n"
    "  TYPE:V0,V1,.. a vector: f32:1,2,3,4 for a float4 (as many values as the vector has)\n"
    "  hex:BYTES[*N] raw bytes in memory order (little-endian), e.g. hex:0000803f for 1.0f;\n"
    "                *N repeats them N times: hex:01000000*256 is a uint[256] of ones. For\n"
    "                structs and any by-value argument; the length must equal the argument's size\n"
    "  bin:FILE      the bytes of a regular file, whose size must equal the argument's size\n"
    "  lds:BYTES     dynamic LDS for a __local pointer argument\n"
    "  TYPE is one of i8 u8 i16 u16 i32 u32 i64 u64 f32 f64. Integers (here and in every\n"
    "  option) are decimal, or hexadecimal after 0x: u32:010 is ten, u32:0x10 sixteen.\n"
    "--repeat N   dispatch N times (default 1); --device N (default 0)\n"
    "--json       one JSON object on stdout, also for errors: {\"error\": {\"command\", \"status\",\n"
    "             \"exit_code\", \"message\"}} (status: an HSAD_ERR_* name, \"usage\" or \"error\")\n"
    "--variants auto|LIST   compile SOURCE once per register budget (hsad_variants.h), show each\n"
    "             variant's budget, VGPRs, spills, scratch and waves per SIMD at the block size,\n"
    "             the choice with its reason, and run the chosen one. LIST: WG:WAVES,... with WG\n"
    "             a maximum workgroup size (1..1024) and WAVES a minimum of waves per SIMD, 0 =\n"
    "             not set (0:0 is the source as written); auto: 0:0, B:0 and B:4 for the block's\n"
    "             B work-items (a budget the compiler cannot meet is skipped with its reason)\n"
    "--trace FILE.json   monitor every dispatch and write a Chrome/Perfetto trace (hsad_monitor.h:\n"
    "             a queue track, submit slices, flows; alerts on stderr); the records are drained\n"
    "             every quarter of the 1024-packet queue, so each --repeat keeps its device times\n"
    "\n"
    );
  usage_backends(f);
}

/* usage's second half: NVIDIA devices, kfd-emu, examples. */
static void usage_backends(FILE *f) {
  fprintf(f,
    "On an NVIDIA device (--device N; hsad info lists them): SOURCE.cu is compiled with NVRTC for\n"
    "the device's sm (-D and -I passed on; -O is not: NVRTC optimizes fully), a .cubin, .fatbin or\n"
    "PTX file is loaded by the driver (a fatbin's entry for the device's sm). CUDA code objects\n"
    "keep each parameter's size only: buf: goes to an 8-byte (pointer) parameter, a scalar or\n"
    "hex:/bin: must have the parameter's size (a float3 is 12 bytes), and a C++ kernel's mangled\n"
    "name gives the types checked as above. lds:BYTES, last, is the dynamic shared memory\n"
    "(extern __shared__). Buffers are pinned host memory mapped for the GPU; the dispatches run\n"
    "in order on a stream of their own (--trace: a profiling one, each dispatch timed by a\n"
    "cuEventRecord pair; the trace and alerts as on AMD). --co-version is AMD's. --variants on\n"
    "NVIDIA: SOURCE.cu through NVRTC to PTX once, then the driver's JIT once per budget: rN (at\n"
    "most N registers per thread) or T:B (__launch_bounds__(T, B) as JIT options), 0:0 as\n"
    "written; each variant's registers, local bytes and blocks per SM at the block, the rule's\n"
    "choice (least local memory, most blocks per SM); auto = 0:0, B:H, B:F (H, F: the blocks of\n"
    "half and all of the SM's threads) and measures: each variant run once, timed by device\n"
    "events, the fastest dispatched (the buffers are restored after the measuring runs).\n"
    "\n"
    "Without a GPU, hsad runs on kfd-emu, which executes an OpenCL C kernel from its own source\n"
    "through POCL: SOURCE.cl compiled here carries it (its includes inlined); for a code object\n"
    "from elsewhere give it with --source FILE.cl (with -I for its includes). A kernel without\n"
    "source (HIP, a foreign object) runs through its host twin, a C function named\n"
    "kfd_emu_twin_<kernel symbol> (<hsad/tools/kfd-emu/kfd_emu_twin.h>) in a library named in\n"
    "KFD_EMU_TWINS, and hsad run says so (\"ran host twin of 'K' (no source)\"). A kernel with\n"
    "neither is an error naming it and both remedies; KFD_EMU_NO_TWIN=noop completes it without\n"
    "running it (hsad run then says the kernel was not executed).\n"
    "A kernel run from source executes on POCL's host threads, where kfd-emu cannot trap its\n"
    "faults: an access outside its buffers that hits unmapped memory (on a GPU, a memory fault\n"
    "the queue reports as HSAD_ERR_QUEUE_ERROR, exit 1) ends hsad by SIGSEGV; hsad run first\n"
    "names the kernel, the address and its buffers on stderr. One that lands in mapped memory is\n"
    "not seen at all. KFD_EMU_KERNEL_MODE=twin runs a kernel's host twin instead, whose accesses\n"
    "outside GPU-accessible memory (KFD_EMU_ACCESS) and faults are that queue error.\n"
    "\n"
    "examples (from the source tree, after make):\n"
    "  hsad run kernels/saxpy.cl saxpy --grid 100000 --block 256 --arg f32:2.5 \\\n"
    "      --arg buf:f32:100000:iota --arg buf:f32:100000:const=1:out --arg u32:100000 --repeat 10\n"
    "  hsad run kernels/big_args.cl scale4 --grid 8 --arg buf:f32:32:iota:out --arg f32:1,2,3,4 \\\n"
    "      --arg u32:8\n"
    "  hsad run kernels/big_args.cl struct_1k --grid 300 --arg buf:u32:300:out \\\n"
    "      --arg hex:01000000*256 --arg u32:300\n"
    "  hsad run build/kernels/vector_add-gfx90a-v5.hsaco vector_add --grid 1000 --block 256 \\\n"
    "      --arg buf:f32:1000:iota --arg buf:f32:1000:const=0.5 --arg buf:f32:1000:out \\\n"
    "      --arg u32:1000 --json\n"
    "  hsad run kernels/vector_add.cl vector_add --grid 4096 --block 256 --variants auto \\\n"
    "      --arg buf:f32:4096:iota --arg buf:f32:4096:const=1 --arg buf:f32:4096:out \\\n"
    "      --arg u32:4096 --trace vector_add-trace.json\n");
}

/* --trace: the records of q drained so far into t; *dropped grows by those the ring lost. */
static hsad_status_t trace_drain(hsad_queue_t *q, hsad_trace_t *t, uint64_t *dropped) {
  hsad_dispatch_record_t rec[256];
  uint32_t n = 0;
  uint64_t d = 0;
  hsad_status_t s;
  while (!(s = hsad_queue_monitor_drain(q, rec, 256, &n, &d))) {
    *dropped += d;
    if (!n) break;
    if ((s = hsad_trace_add(t, rec, n))) break;
  }
  return s;
}

/* --trace's alerts on stderr as the library prints them, but kfd-emu's (host twin, no code):
 * hsad run has said those already, as warnings (kfd_emu_kernel_mode). */
static void trace_alert(const hsad_monitor_alert_t *a, void *user) {
  (void)user;
  if (a->reason == HSAD_ALERT_EMU_HOST_TWIN || a->reason == HSAD_ALERT_EMU_NO_CODE) return;
  fprintf(stderr, "hsad: alert %s: %s\n", hsad_alert_reason_name(a->reason), a->message);
}

/* --trace: the rest of q's records, then the file. */
static hsad_status_t write_trace(hsad_queue_t *q, hsad_trace_t *t, const char *path,
                                 uint32_t cap) {
  uint64_t dropped = 0;
  hsad_status_t s = trace_drain(q, t, &dropped);
  if (!s) s = hsad_trace_write(t, path);
  if (!s && dropped)
    fprintf(stderr, "hsad run: --trace %s: %llu dispatches beyond the %u-record ring not traced\n",
            path, (unsigned long long)dropped, cap);
  return s;
}

#ifndef HSAD_NO_AMD /* --variants: AMD only */
/* --variants LIST: WG:WAVES entries separated by commas. 0 on success. */
static int parse_variants(const char *v, hsad_variant_budget_t *out, uint32_t *out_n, char *why,
                          size_t whyn) {
  uint32_t n = 0;
  const char *p = v;
  while (1) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char e[64];
    unsigned long wg = 0, w = 0;
    char *x;
    int ok = len > 0 && len < sizeof e;
    if (ok) {
      memcpy(e, p, len);
      e[len] = 0;
      const char *colon = strchr(e, ':');
      ok = colon && colon != e && colon[1] && e[0] >= '0' && e[0] <= '9' && colon[1] >= '0' &&
           colon[1] <= '9';
      if (ok) {
        errno = 0;
        wg = strtoul(e, &x, 10);
        ok = x == colon && !errno;
        w = ok ? strtoul(colon + 1, &x, 10) : 0;
        ok = ok && !*x && !errno && wg <= UINT32_MAX && w <= UINT32_MAX;
      }
    } else {
      snprintf(e, sizeof e, "%.*s", (int)(len < 40 ? len : 40), p);
    }
    if (!ok || n == HSAD_VARIANT_MAX) {
      if (ok)
        snprintf(why, whyn, "more than %u variants", HSAD_VARIANT_MAX);
      else
        snprintf(why, whyn, "entry %u '%s': expected WG:WAVES (a maximum workgroup size and a "
                 "minimum of waves per SIMD, 0 = not set)", n, e);
      return -1;
    }
    out[n++] = (hsad_variant_budget_t){(uint32_t)wg, (uint32_t)w};
    if (!end) break;
    p = end + 1;
  }
  *out_n = n;
  return 0;
}

static void budget_name(const hsad_variant_budget_t *b, char *out, size_t n) {
  if (!b->max_workgroup_size && !b->min_waves_per_eu) snprintf(out, n, "as written");
  else if (!b->min_waves_per_eu) snprintf(out, n, "wg<=%u", b->max_workgroup_size);
  else if (!b->max_workgroup_size) snprintf(out, n, "waves>=%u", b->min_waves_per_eu);
  else snprintf(out, n, "wg<=%u waves>=%u", b->max_workgroup_size, b->min_waves_per_eu);
}

#endif

/* --repeat: each dispatch is timed (8 bytes) and waits for ring space, not for the GPU */
#define REPEAT_MAX 10000000u

/* Element e of buffer a: integers exactly; as a double. */
static __int128 elem_geti(const arg_t *a, uint64_t e) { return cli_elem_int(a->type, a->ptr, e); }
static double elem_get(const arg_t *a, uint64_t e) { return cli_elem_double(a->type, a->ptr, e); }

static const char *fmt_i128(char buf[48], __int128 v) {
  char tmp[48];
  int n = 0;
  bool neg = v < 0;
  unsigned __int128 u = neg ? -(unsigned __int128)v : (unsigned __int128)v;
  do tmp[n++] = (char)('0' + (int)(u % 10)); while ((u /= 10));
  int j = 0;
  if (neg) buf[j++] = '-';
  while (n) buf[j++] = tmp[--n];
  buf[j] = '\0';
  return buf;
}

/* Summary of a buffer: integers exactly; floats over their finite values, NaN/inf counted. */
typedef struct summary {
  __int128 isum, imin, imax;
  double fsum, fmin, fmax;
  uint64_t finite, nan, inf;
} summary_t;

static void summarize(const arg_t *a, summary_t *s) {
  memset(s, 0, sizeof *s);
  for (uint64_t e = 0; e < a->count; e++) {
    if (!cli_is_float(a->type)) {
      __int128 v = elem_geti(a, e);
      s->isum += v;
      if (!e || v < s->imin) s->imin = v;
      if (!e || v > s->imax) s->imax = v;
      continue;
    }
    double v = elem_get(a, e);
    if (isnan(v)) s->nan++;
    else if (isinf(v)) s->inf++;
    else {
      s->fsum += v;
      if (!s->finite || v < s->fmin) s->fmin = v;
      if (!s->finite || v > s->fmax) s->fmax = v;
      s->finite++;
    }
  }
}

/* One element: integers exactly, floats %.9g; in JSON a non-finite float is null. */
static void print_elem(const arg_t *a, uint64_t e, bool json) {
  char b[48];
  if (!cli_is_float(a->type)) fputs(fmt_i128(b, elem_geti(a, e)), stdout);
  else if (json && !isfinite(elem_get(a, e))) fputs("null", stdout);
  else printf("%.9g", elem_get(a, e));
}

static void elem_set(arg_t *a, uint64_t i, double v) {
  uint8_t *p = (uint8_t *)a->ptr + i * cli_tsize[a->type];
  switch (a->type) {
  case T_I8: *(int8_t *)p = (int8_t)v; break;
  case T_U8: *p = (uint8_t)v; break;
  case T_I16: *(int16_t *)p = (int16_t)v; break;
  case T_U16: *(uint16_t *)p = (uint16_t)v; break;
  case T_I32: *(int32_t *)p = (int32_t)v; break;
  case T_U32: *(uint32_t *)p = (uint32_t)v; break;
  case T_I64: *(int64_t *)p = (int64_t)v; break;
  case T_U64: *(uint64_t *)p = (uint64_t)v; break;
  case T_F32: *(float *)p = (float)v; break;
  case T_F64: *(double *)p = v; break;
  }
}

static int init_buffer(arg_t *a) {
  const char *in = a->init;
  if (!strcmp(in, "zeros")) return 0; /* hsad_buffer_alloc zeroes */
  if (!strcmp(in, "iota")) {
    for (uint64_t i = 0; i < a->count; i++) elem_set(a, i, (double)i);
    return 0;
  }
  if (!strncmp(in, "random", 6)) {
    uint64_t x = in[6] == '=' ? strtoull(in + 7, NULL, 0) : 42;
    bool fl = a->type == T_F32 || a->type == T_F64;
    for (uint64_t i = 0; i < a->count; i++) {
      x = x * 6364136223846793005ull + 1442695040888963407ull; /* LCG (Knuth MMIX) */
      uint32_t r = (uint32_t)(x >> 40); /* 24 random bits */
      elem_set(a, i, fl ? (double)r / 16777216.0 : (double)(r % 1000));
    }
    return 0;
  }
  if (!strncmp(in, "const=", 6)) { /* value parsed and range-checked by parse_arg */
    for (uint64_t i = 0; i < a->count; i++)
      memcpy((uint8_t *)a->ptr + i * cli_tsize[a->type], a->value, cli_tsize[a->type]);
    return 0;
  }
  if (!strncmp(in, "file=", 5)) { /* checked by check_file: a regular file */
    FILE *f = fopen(in + 5, "rb");
    if (!f) return -1;
    (void)fread(a->ptr, 1, a->count * cli_tsize[a->type], f);
    int err = ferror(f);
    fclose(f);
    return err ? -1 : 0;
  }
  return -1;
}

static int parse_dims(const char *s, uint32_t out[3], uint32_t *dims) {
  char *end;
  uint32_t n = 0;
  out[0] = out[1] = out[2] = 1;
  while (*s && n < 3) {
    char num[32];
    size_t len = strcspn(s, ",");
    if (len >= sizeof num) return -1;
    memcpy(num, s, len);
    num[len] = '\0';
    uint64_t v;
    if (cli_parse_uint(num, UINT32_MAX, &v) || !v) return -1;
    out[n++] = (uint32_t)v;
    end = (char *)s + len;
    s = *end == ',' ? end + 1 : end;
  }
  if (*s) return -1;
  *dims = n;
  return n ? 0 : -1;
}

static int ends_with(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n >= m && !strcmp(s + n - m, suf);
}

/* file=PATH must name a regular file; a size other than the buffer's is reported. */
static int check_file(const arg_t *a, uint32_t i, char *why, size_t whyn, char *warn,
                      size_t warnn) {
  const char *path = a->init + 5;
  struct stat st;
  if (stat(path, &st)) {
    snprintf(why, whyn, "--arg %s: file=%s: %s", a->spec, path, strerror(errno));
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    snprintf(why, whyn, "--arg %s: file=%s is %s, not a regular file", a->spec, path,
             S_ISDIR(st.st_mode) ? "a directory" : "a special file");
    return -1;
  }
  uint64_t want = a->count * cli_tsize[a->type];
  warn[0] = '\0';
  if ((uint64_t)st.st_size < want)
    snprintf(warn, warnn, "arg %u: file=%s holds %lld bytes, the buffer %llu: the remaining "
             "%llu bytes are zero", i, path, (long long)st.st_size, (unsigned long long)want,
             (unsigned long long)(want - (uint64_t)st.st_size));
  else if ((uint64_t)st.st_size > want)
    snprintf(warn, warnn, "arg %u: file=%s holds %lld bytes, the buffer %llu: only the first "
             "%llu bytes were read", i, path, (long long)st.st_size, (unsigned long long)want,
             (unsigned long long)want);
  return 0;
}

#ifndef HSAD_NO_AMD
/* ---- kfd-emu twins --------------------------------------------------------------------- */

/* True when kfd-emu would find a twin for `symbol` (NAME.kd without .kd): the places it looks
 * (tools/kfd-emu/kfd_emu_twin.h): KFD_EMU_TWINS, libkfd-emu-twins.so beside kfd-emu, this
 * process. */
static bool twin_exists(const char *symbol) {
  char sym[600];
  size_t n = strlen(symbol);
  if (n > 3 && !strcmp(symbol + n - 3, ".kd")) n -= 3;
  snprintf(sym, sizeof sym, "kfd_emu_twin_%.*s", (int)n, symbol);
  bool found = dlsym(RTLD_DEFAULT, sym) != NULL;
  const char *env = getenv("KFD_EMU_TWINS");
  char *copy = env ? strdup(env) : NULL, *save = NULL;
  for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p && !found;
       p = strtok_r(NULL, ":", &save)) {
    void *h = dlopen(p, RTLD_LAZY | RTLD_LOCAL);
    if (h) {
      found = dlsym(h, sym) != NULL;
      dlclose(h);
    }
  }
  free(copy);
  const char *dir = hsad_rocr_emu_dir();
  if (!found && dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/libkfd-emu-twins.so", dir);
    void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
    if (h) {
      found = dlsym(h, sym) != NULL;
      dlclose(h);
    }
  }
  return found;
}

#endif

/* ---- kernel lookup ------------------------------------------------------------------------ */

/* The kernel `name`: its .name, or (for C++ names) its demangled name, or the plain
 * function name of the demangled one ("scale" for "scale(float*, unsigned int)") when exactly
 * one kernel has it (hsad_cli_program_kernel, as hsad graph's "kernel"). KERNEL_NOT_FOUND lists
 * the kernels there are, or those that match (at most HSAD_CLI_LIST_MAX). */
static int find_kernel(const hsad_cli_t *cli, const hsad_program_t *prog, const char *input,
                       const char *name, const hsad_device_kernel_t **out) {
  char *why;
  hsad_status_t s = hsad_cli_program_kernel(prog, name, out, &why);
  if (s != HSAD_ERR_KERNEL_NOT_FOUND) return s ? hsad_cli_fail_status(cli, s) : 0;
  int rc = hsad_cli_fail(cli, 1, "HSAD_ERR_KERNEL_NOT_FOUND", "HSAD_ERR_KERNEL_NOT_FOUND: %s: %s",
                         input, why);
  free(why);
  return rc;
}

/* ---- the command ------------------------------------------------------------------------ */

#ifndef HSAD_NO_AMD

/* The dedicated queue's options: profiling, and a per-slot kernarg block that holds the
 * kernel's kernarg segment (512 bytes by default; larger blocks get a shorter ring, at most
 * 4 MiB of kernarg memory, never below the device's minimum queue size). */
static hsad_queue_options_t queue_options(const hsad_device_info_t *di, uint32_t kernarg_size) {
  hsad_queue_options_t qo = {.size = 1024, .profiling = true};
  uint32_t block = (kernarg_size + 63) & ~63u;
  if (block > 512 && block <= HSAD_KERNARG_SEGMENT_MAX) { /* larger: the library refuses it */
    qo.kernarg_block_size = block;
    uint32_t size = 1024;
    while (size > 64 && (uint64_t)size * block > (4u << 20)) size /= 2;
    if (size < di->queue_min_size) size = di->queue_min_size;
    qo.size = size;
  }
  return qo;
}

#endif

enum { OPT_GRID = 256, OPT_BLOCK, OPT_ARG, OPT_REPEAT, OPT_DEVICE, OPT_COV, OPT_JSON,
       OPT_VARIANTS, OPT_TRACE, OPT_SOURCE };

static const struct option run_opts[] = {
    {"grid", required_argument, NULL, OPT_GRID},
    {"block", required_argument, NULL, OPT_BLOCK},
    {"arg", required_argument, NULL, OPT_ARG},
    {"repeat", required_argument, NULL, OPT_REPEAT},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"co-version", required_argument, NULL, OPT_COV},
    {"json", no_argument, NULL, OPT_JSON},
    {"variants", required_argument, NULL, OPT_VARIANTS},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"source", required_argument, NULL, OPT_SOURCE},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* warnings: on stderr as "hsad run: warning: ...", in JSON in "warnings" */
typedef struct warnings {
  char *text[16];
  uint32_t n;
} warnings_t;

static void warn_add(warnings_t *w, bool json, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void warn_add(warnings_t *w, bool json, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *m = NULL;
  if (vasprintf(&m, fmt, ap) < 0) m = NULL;
  va_end(ap);
  if (!m) return;
  if (!json) fprintf(stderr, "hsad run: warning: %s\n", m);
  if (w->n < 16) w->text[w->n++] = m;
  else free(m);
}


#ifndef HSAD_NO_AMD
/* --source FILE.cl (issue 20): the OpenCL C source of a code object from elsewhere, for
 * kfd-emu. Made self-contained (hsad_cl_source_expand: its includes, next to it or in the -I
 * folders, inlined) into a temporary file named first in KFD_EMU_CL_SOURCE, which kfd-emu reads
 * when it first looks the kernel up (tools/kfd-emu/kernels.c); removed at exit. 0, or 2 (a
 * usage error) / 1 with the message in why and its status in *status. */
static char source_tmp[64];
static void source_tmp_remove(void) {
  if (source_tmp[0]) unlink(source_tmp);
}
static int source_apply(const char *path, const char *input, const char *const *incs,
                        uint32_t nincs, const char **status, char *why, size_t n) {
  *status = "usage";
  if (!ends_with(path, ".cl"))
    return snprintf(why, n, "--source %s: expected an OpenCL C file (.cl)", path), 2;
  if (ends_with(input, ".cl") || ends_with(input, ".hip") || ends_with(input, ".cu"))
    return snprintf(why, n, "--source %s: gives the source of a code object from elsewhere; "
                    "%s is compiled here and carries its own source", path, input), 2;
  *status = "error";
  char *self = NULL;
  size_t len = 0, slen = 0;
  char *text = hsad_cli_slurp(path, &len);
  if (!text) return snprintf(why, n, "--source %s: %s", path, strerror(errno)), 1;
  hsad_status_t st = hsad_cl_source_expand(text, len, path, incs, nincs, &self, &slen);
  free(text);
  if (st) {
    *status = hsad_status_name(st);
    return snprintf(why, n, "--source %s: %s", path, hsad_last_error()), 1;
  }
  snprintf(source_tmp, sizeof source_tmp, "/tmp/hsad-source-XXXXXX.cl");
  int fd = mkstemps(source_tmp, 3);
  bool ok = fd >= 0 && write(fd, self, slen) == (ssize_t)slen;
  if (fd >= 0) close(fd);
  free(self);
  if (!ok) {
    snprintf(why, n, "--source %s: cannot write %s: %s", path, source_tmp, strerror(errno));
    source_tmp_remove();
    return 1;
  }
  atexit(source_tmp_remove);
  const char *old = getenv("KFD_EMU_CL_SOURCE");
  char *list = NULL;
  if (asprintf(&list, "%s%s%s", source_tmp, old && *old ? ":" : "", old ? old : "") < 0)
    return snprintf(why, n, "--source %s: out of memory", path), 1;
  setenv("KFD_EMU_CL_SOURCE", list, 1);
  free(list);
  return 0;
}

/* --source given: kfd-emu must run the kernel from it (emu_mode: kfd_emu_kernel_mode's answer,
 * said: its line). NULL, or the failure message (in why). A code object that carries its own
 * source runs from that: warned. */
static const char *source_check(const char *path, const char *kname, int emu_mode,
                                const char *said, warnings_t *warns, bool json, char *why,
                                size_t n) {
  if (n > 1024) n = 1024; /* said (up to 4 KiB) is cut to fit */
  if (emu_mode == KFD_EMU_KERNEL_SOURCE && !strstr(said, source_tmp)) {
    warn_add(warns, json, "--source %s is not used: the code object carries its own source, "
             "which kfd-emu runs", path);
    return NULL;
  }
  if (emu_mode == KFD_EMU_KERNEL_SOURCE || emu_mode == KFD_EMU_KERNEL_BUILD_FAILED) return NULL;
  snprintf(why, n, "--source %s has no kernel '%s' (kfd-emu: %.900s)", path, kname, said);
  return why;
}
#endif

static json_object *json_u64(uint64_t v) { return json_object_new_uint64(v); }

static json_object *json_i128(__int128 v) {
  char b[48];
  fmt_i128(b, v);
  return json_object_new_double_s((double)v, b); /* the exact decimal, whatever its size */
}

static json_object *json_elem(const arg_t *a, uint64_t e) {
  if (!cli_is_float(a->type)) return json_i128(elem_geti(a, e));
  return hsad_cli_json_double(elem_get(a, e), "%.9g");
}

/* out=FILE (raw bytes) and txt=FILE (one element per line) of the buffers after the run: 0, or
 * -1 with the failure reported and *rc its exit code. */
static int write_outputs(const hsad_cli_t *cli, arg_t *args, uint32_t nargs, int *rc) {
  for (uint32_t i = 0; i < nargs; i++) {
    arg_t *a = &args[i];
    if (a->kind != A_BUF) continue;
    if (a->out_file) {
      FILE *f = fopen(a->out_file, "wb");
      /* fclose too: a full disk (ENOSPC) shows only when the buffered bytes are flushed */
      bool ok = f && fwrite(a->ptr, cli_tsize[a->type], a->count, f) == a->count;
      if (f && fclose(f) != 0) ok = false;
      if (!ok) {
        *rc = hsad_cli_fail(cli, 1, "error", "%s: %s", a->out_file, strerror(errno));
        return -1;
      }
    }
    if (a->txt_file) {
      FILE *f = fopen(a->txt_file, "w");
      if (!f) {
        *rc = hsad_cli_fail(cli, 1, "error", "%s: %s", a->txt_file, strerror(errno));
        return -1;
      }
      char b[48];
      for (uint64_t e = 0; e < a->count; e++) {
        if (cli_is_float(a->type)) fprintf(f, "%.9g\n", elem_get(a, e));
        else fprintf(f, "%s\n", fmt_i128(b, elem_geti(a, e)));
      }
      bool ok = !ferror(f);
      if (fclose(f) != 0) ok = false;
      if (!ok) {
        *rc = hsad_cli_fail(cli, 1, "error", "%s: %s", a->txt_file, strerror(errno ? errno : EIO));
        return -1;
      }
    }
  }
  return 0;
}

/* --json's "buffers": every buffer's type, count, sum (and NaN / inf counts) and first 8. */
static json_object *json_buffers(const arg_t *args, uint32_t nargs) {
  json_object *j;
  json_object *bufs = json_object_new_array();
  for (uint32_t i = 0; i < nargs; i++) {
    const arg_t *a = &args[i];
    if (a->kind != A_BUF) continue;
    summary_t sm;
    summarize(a, &sm);
    j = json_object_new_object();
    json_object_object_add(j, "arg", json_object_new_int64(i));
    json_object_object_add(j, "type", json_object_new_string(cli_tnames[a->type]));
    json_object_object_add(j, "count", json_u64(a->count));
    if (!cli_is_float(a->type)) {
      json_object_object_add(j, "sum", json_i128(sm.isum));
    } else { /* over the finite elements, else null */
      json_object_object_add(j, "sum", sm.finite ? hsad_cli_json_double(sm.fsum, "%.17g")
                                                 : NULL);
      json_object_object_add(j, "nan", json_u64(sm.nan));
      json_object_object_add(j, "inf", json_u64(sm.inf));
    }
    json_object *first = json_object_new_array();
    for (uint64_t e = 0; e < a->count && e < 8; e++) json_object_array_add(first, json_elem(a, e));
    json_object_object_add(j, "first", first);
    json_object_array_add(bufs, j);
  }
  return bufs;
}

/* The text report's line per buffer asked for (out, out=FILE, txt=FILE). */
static void print_buffers(const arg_t *args, uint32_t nargs) {
  for (uint32_t i = 0; i < nargs; i++) {
    const arg_t *a = &args[i];
    if (a->kind != A_BUF || !(a->out || a->out_file || a->txt_file)) continue;
    summary_t sm;
    char b1[48], b2[48], b3[48];
    summarize(a, &sm);
    printf("arg %u (%s x %llu): ", i, cli_tnames[a->type], (unsigned long long)a->count);
    if (!cli_is_float(a->type))
      printf("sum %s, min %s, max %s", fmt_i128(b1, sm.isum), fmt_i128(b2, sm.imin),
             fmt_i128(b3, sm.imax));
    else if (sm.finite)
      printf("sum %.9g, min %.9g, max %.9g", sm.fsum, sm.fmin, sm.fmax);
    else
      printf("sum n/a, min n/a, max n/a");
    if (sm.nan || sm.inf)
      printf(" (%s%llu NaN, %llu inf)", sm.finite ? "finite elements only; " : "",
             (unsigned long long)sm.nan, (unsigned long long)sm.inf);
    printf(", first:");
    for (uint64_t e = 0; e < a->count && e < 8; e++) {
      putchar(' ');
      print_elem(a, e, false);
    }
    printf("\n");
    if (a->out_file) printf("  written to %s\n", a->out_file);
    if (a->txt_file) printf("  written to %s (text)\n", a->txt_file);
  }
}

/* ---- the command: one state object, phases that return an exit code (0: go on) ----------- */

#define TRY HSAD_CLI_TRY /* hsad_cli.h: runs a phase; its nonzero result ends the command */
#define RUN_USAGE(r, ...) hsad_cli_fail(&(r)->cli, 2, "usage", __VA_ARGS__)
#define RUN_FAIL(r, status, ...) hsad_cli_fail(&(r)->cli, 1, status, __VA_ARGS__)

/* Everything hsad run holds, from the command line to the report; run_free releases it all. */
typedef struct run {
  hsad_cli_t cli;
  /* the command line (run_parse_options, run_check_command_line) */
  const char *input, *kname, *trace_path, *variants, *source_path;
  uint32_t grid[3], block[3], gdims, bdims, dims, repeat, devi, co_version;
  int opt; /* -O */
  bool opt_set;
  arg_t *args; /* one per --arg */
  const char **defs, **incs;
  uint32_t nargs, ndefs, nincs;
  warnings_t warns;
  char why[2048];
  /* the device, the program and its kernel (run_open_device, run_load_program, ...) */
  hsad_runtime_t *rt;
  hsad_device_t *dev;
  const hsad_device_info_t *di;
  hsad_program_t *prog;
  char *log; /* the compiler's */
  const hsad_device_kernel_t *k;
  const hsad_device_kernel_desc_t *kd;
  uint64_t t_compile;
  /* the dispatch (run_bind_args, run_dispatch_loop) */
  hsad_karg_t *kargs;
  uint32_t nkargs, dyn_lds; /* dyn_lds: dynamic LDS / shared memory bytes */
  hsad_queue_t *q;
  uint64_t *submit; /* ns per submit, sorted after the loop */
  uint64_t t_start, t_submitted, t_done, gpu_start, gpu_end;
  bool have_gpu_time;
#ifndef HSAD_NO_AMD
  const hsad_kernel_info_t *ki;
  hsad_variant_budget_t budgets[HSAD_VARIANT_MAX]; /* --variants LIST */
  uint32_t nbudgets, nvprogs;
  hsad_program_t *vprogs[HSAD_VARIANT_MAX]; /* the compiled variants; [0] moves to prog */
  hsad_variant_budget_t vbudget[HSAD_VARIANT_MAX];
  hsad_variant_set_t *vset;
  json_object *jvariants;
  bool emulated, executed;
  int emu_mode;
#endif
  hsad_queue_options_t qo;
  hsad_trace_t *trace; /* --trace */
  hsad_completion_t marks[2];
  uint64_t trace_dropped;
  uint32_t mon_cap;
  struct run_nv { /* on an NVIDIA device (run_nvidia) */
    char *image;  /* the cubin, fatbin or PTX */
    size_t image_size;
    bool cu;      /* compiled here from a .cu */
    char target[16];
    uint32_t sm;
    hsad_nv_program_t *meta;
    const hsad_nv_kernel_info_t *ki; /* the cubin's record of the kernel; NULL for PTX */
    uint32_t *sizes;
    hsad_nv_occupancy_t occ;
    bool have_occ;
    /* --variants (nv_compile_variants, nv_select_variant) */
    hsad_nv_budget_t budgets[HSAD_VARIANT_MAX], vbudget[HSAD_VARIANT_MAX];
    uint32_t nbudgets, nvprogs;
    hsad_program_t *vprogs[HSAD_VARIANT_MAX]; /* [0] moves to prog */
    hsad_variant_set_t *vset;
    json_object *jvariants;
    uint32_t regs; /* the chosen variant's registers per thread */
  } nv;
} run_t;

static void run_free(run_t *r) {
  hsad_trace_destroy(r->trace);
  if (r->q) hsad_queue_destroy(r->q);
  for (uint32_t i = 0; r->args && i < r->nargs; i++)
    if (r->args[i].ptr) hsad_buffer_free(r->args[i].ptr);
  if (r->args) cli_args_free(r->args, r->nargs);
  for (uint32_t i = 0; i < r->warns.n; i++) free(r->warns.text[i]);
#ifndef HSAD_NO_AMD
  hsad_variant_set_destroy(r->vset);
  json_object_put(r->jvariants);
  for (uint32_t i = 0; i < HSAD_VARIANT_MAX; i++) hsad_program_destroy(r->vprogs[i]);
#endif
  hsad_variant_set_destroy(r->nv.vset);
  json_object_put(r->nv.jvariants);
  for (uint32_t i = 0; i < HSAD_VARIANT_MAX; i++)
    if (r->nv.vprogs[i]) hsad_program_destroy(r->nv.vprogs[i]);
  if (r->prog) hsad_program_destroy(r->prog);
  hsad_nv_program_destroy(r->nv.meta);
  if (r->rt) hsad_runtime_close(r->rt);
  free(r->submit);
  free(r->kargs);
  free(r->log);
  free(r->args);
  free(r->defs);
  free(r->incs);
  free(r->nv.image);
  free(r->nv.sizes);
}

/* A library failure (the status name and hsad_last_error(), advice to API users left out). */
static int run_check(run_t *r, hsad_status_t s) { return s ? hsad_cli_fail_status(&r->cli, s) : 0; }

/* A library failure as the compile steps report it: the status name and hsad_last_error(). */
static int run_fail_named(run_t *r, hsad_status_t s) {
  return RUN_FAIL(r, hsad_status_name(s), "%s: %s", hsad_status_name(s), hsad_last_error());
}

/* cli_check_args' warnings (ctx: the run_t) */
static void run_warn(void *ctx, const char *msg) {
  run_t *r = ctx;
  warn_add(&r->warns, r->cli.json, "%s", msg);
}

/* ---- phase: parse options ------------------------------------------------------------------ */

static int run_option_arg(run_t *r, const char *v) {
  arg_t *a = &r->args[r->nargs++]; /* counted even when wrong: run_free frees its bytes */
  if (cli_parse_arg_spec(v, a, r->why, sizeof r->why))
    return RUN_USAGE(r, "--arg %s: %s", v, r->why);
  return 0;
}

static int run_option_number(run_t *r, int c, const char *v) {
  uint64_t n;
  if (c == OPT_REPEAT) {
    if (cli_parse_uint(v, REPEAT_MAX, &n) || !n)
      return RUN_USAGE(r, "--repeat %s: expected an integer from 1 to %u", v, REPEAT_MAX);
    r->repeat = (uint32_t)n;
  } else if (c == OPT_DEVICE) {
    if (cli_parse_uint(v, UINT32_MAX, &n))
      return RUN_USAGE(r, "--device %s: expected a device index (0, 1, ...)", v);
    r->devi = (uint32_t)n;
  } else if (c == OPT_COV) {
    if (strcmp(v, "4") && strcmp(v, "5"))
      return RUN_USAGE(r, "--co-version %s: expected 4 or 5", v);
    r->co_version = (uint32_t)atoi(v);
  } else { /* -O */
    if (strlen(v) != 1 || v[0] < '0' || v[0] > '3')
      return RUN_USAGE(r, "-O%s: expected -O0, -O1, -O2 or -O3", v);
    r->opt = v[0] - '0';
    r->opt_set = true;
  }
  return 0;
}

/* One option getopt_long returned (c) with its value v (ctx: the run_t). */
static int run_option(void *ctx, int c, const char *v, char **argv) {
  run_t *r = ctx;
  switch (c) {
  case 'h': usage(stdout); return HSAD_CLI_DONE;
  case OPT_JSON: r->cli.json = true; return 0;
  case OPT_TRACE:
    if (!*v) return RUN_USAGE(r, "--trace: expected a file name");
    r->trace_path = v;
    return 0;
  case OPT_SOURCE: r->source_path = v; return 0;
  case OPT_VARIANTS:
    r->variants = v; /* parsed when the device is known: AMD's WG:WAVES, NVIDIA's rN, T:B */
    return 0;
  case OPT_GRID:
  case OPT_BLOCK:
    if (parse_dims(v, c == OPT_GRID ? r->grid : r->block, c == OPT_GRID ? &r->gdims : &r->bdims))
      return RUN_USAGE(r, "--%s %s: expected X[,Y[,Z]], each an integer from 1 to %u",
                       c == OPT_GRID ? "grid" : "block", v, UINT32_MAX);
    return 0;
  case OPT_ARG: return run_option_arg(r, v);
  case OPT_REPEAT: case OPT_DEVICE: case OPT_COV: case 'O': return run_option_number(r, c, v);
  case 'D':
    if (!*v) return RUN_USAGE(r, "-D: expected -DNAME or -DNAME=VALUE");
    r->defs[r->ndefs++] = v;
    return 0;
  case 'I':
    if (!*v) return RUN_USAGE(r, "-I: expected -IDIR");
    r->incs[r->nincs++] = v;
    return 0;
  default: return hsad_cli_getopt_fail(&r->cli, c, argv);
  }
}

static int run_parse_options(run_t *r, int argc, char **argv) {
  r->args = calloc((size_t)argc + 1, sizeof *r->args);
  r->defs = calloc((size_t)argc + 1, sizeof *r->defs);
  r->incs = calloc((size_t)argc + 1, sizeof *r->incs);
  if (!r->args || !r->defs || !r->incs)
    return RUN_FAIL(r, "HSAD_ERR_OUT_OF_MEMORY", "out of memory");
  TRY(hsad_cli_getopt(argc, argv, ":hO:D:I:", run_opts, run_option, r));
  for (int i = optind; i < argc; i++) {
    if (!r->input) r->input = argv[i];
    else if (!r->kname) r->kname = argv[i];
    else return RUN_USAGE(r, "unexpected argument '%s' (one SOURCE and one KERNEL; see hsad run "
                          "--help)", argv[i]);
  }
  return 0;
}

/* ---- phase: the command line as a whole (defaults, file=PATH, --source) --------------------- */

/* The name a file that does not exist yet will have: its directory resolved (realpath: ".",
 * "..", symbolic links) + "/" + its file name, into out; false when the directory does not
 * resolve or the file name is empty, "." or "..". */
static bool resolved_new_path(const char *path, char *out, size_t n) {
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) return false;
  char dir[PATH_MAX], real[PATH_MAX];
  size_t len = slash ? (size_t)(slash - path) : 0;
  if (len >= sizeof dir) return false;
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (!len) snprintf(dir, sizeof dir, "/");
  else snprintf(dir, sizeof dir, "%.*s", (int)len, path);
  if (!realpath(dir, real)) return false;
  int w = snprintf(out, n, "%s/%s", strcmp(real, "/") ? real : "", base);
  return w > 0 && (size_t)w < n;
}

/* Whether paths a and b name one file: the same text, two existing names of one inode, or two
 * names of one file not created yet (resolved_new_path: a.bin, ./a.bin, d/../a.bin). */
static bool same_file(const char *a, const char *b) {
  struct stat sa, sb;
  if (!strcmp(a, b)) return true;
  bool ea = !stat(a, &sa), eb = !stat(b, &sb);
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ea || eb) return false;
  char ra[PATH_MAX], rb[PATH_MAX];
  return resolved_new_path(a, ra, sizeof ra) && resolved_new_path(b, rb, sizeof rb) &&
         !strcmp(ra, rb);
}

/* One file hsad run writes: out=FILE or txt=FILE of an --arg, or --trace. */
typedef struct run_output { const char *path, *opt; const arg_t *arg; } run_output_t;

/* "--arg SPEC: out=F" or "--trace F" (o's option as the user gave it) into buf. */
static const char *output_name(const run_output_t *o, char *buf, size_t n) {
  if (o->arg) snprintf(buf, n, "--arg %s: %s=%s", o->arg->spec, o->opt, o->path);
  else snprintf(buf, n, "--trace %s", o->path);
  return buf;
}

/* Whether o's file can be written, checked before anything runs (else the kernel ran and its
 * results were lost to an unwritable path): an existing file must be writable (access W_OK) and
 * not a directory; a new one is created and removed at once, so the check leaves no file behind
 * (the error is the one the write would meet: no such directory, permission, read-only file
 * system). 0, or the refusal reported (exit 2). */
static int check_writable(run_t *r, const run_output_t *o) {
  char me[1200];
  struct stat st;
  if (!stat(o->path, &st)) {
    if (S_ISDIR(st.st_mode))
      return RUN_USAGE(r, "%s is a directory, not a file", output_name(o, me, sizeof me));
    if (access(o->path, W_OK))
      return RUN_USAGE(r, "%s: cannot write it: %s", output_name(o, me, sizeof me),
                       strerror(errno));
    return 0;
  }
  int fd = open(o->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST) return 0; /* a dangling symbolic link: the write follows it */
  if (fd < 0)
    return RUN_USAGE(r, "%s: cannot create it: %s", output_name(o, me, sizeof me),
                     strerror(errno));
  close(fd);
  unlink(o->path);
  return 0;
}

/* Every output names a file of its own that is not the input: a second write of one file
 * silently replaced the first (two buffers' out=, one buffer's out= and txt=), and an output
 * naming SOURCE overwrote it (hsad compile refuses -o SOURCE likewise); then every output can be
 * written (check_writable). Checked before anything runs, so a refusal writes nothing. */
static int check_outputs(run_t *r) {
  run_output_t *outs = malloc((2 * (size_t)r->nargs + 1) * sizeof *outs);
  if (!outs) return RUN_FAIL(r, "HSAD_ERR_OUT_OF_MEMORY", "out of memory");
  uint32_t n = 0;
  for (uint32_t i = 0; i < r->nargs; i++) {
    const arg_t *a = &r->args[i];
    if (a->kind != A_BUF) continue;
    if (a->out_file) outs[n++] = (run_output_t){a->out_file, "out", a};
    if (a->txt_file) outs[n++] = (run_output_t){a->txt_file, "txt", a};
  }
  if (r->trace_path) outs[n++] = (run_output_t){r->trace_path, NULL, NULL};
  char me[1200];
  int rc = 0;
  for (uint32_t j = 0; j < n && !rc; j++) {
    if (same_file(outs[j].path, r->input)) {
      rc = RUN_USAGE(r, "%s is the input %s: refusing to overwrite it",
                     output_name(&outs[j], me, sizeof me), r->input);
      break;
    }
    for (uint32_t i = 0; i < j && !rc; i++)
      if (same_file(outs[i].path, outs[j].path))
        rc = RUN_USAGE(r, "%s is also the %s= of --arg %s: give each output a file of its own "
                       "(the later write would replace the earlier)",
                       output_name(&outs[j], me, sizeof me), outs[i].opt, outs[i].arg->spec);
  }
  for (uint32_t j = 0; j < n && !rc; j++) rc = check_writable(r, &outs[j]);
  free(outs);
  return rc;
}

static int run_check_command_line(run_t *r) {
  if (!r->input || !r->kname || !r->gdims)
    return RUN_USAGE(r, "need SOURCE|FILE, KERNEL and --grid (see hsad run --help)");
  if (!r->bdims) {
    r->bdims = r->gdims;
    r->block[0] = r->grid[0] < 64 ? r->grid[0] : 64;
  }
  r->dims = r->gdims > r->bdims ? r->gdims : r->bdims;
  for (uint32_t d = r->gdims; d < 3; d++) r->grid[d] = 1;
  for (uint32_t i = 0; i < r->nargs; i++) {
    char w[1024];
    if (r->args[i].kind == A_BUF && !strncmp(r->args[i].init, "file=", 5)) {
      if (check_file(&r->args[i], i, r->why, sizeof r->why, w, sizeof w))
        return RUN_USAGE(r, "%s", r->why);
      if (w[0]) warn_add(&r->warns, r->cli.json, "%s", w);
    }
  }
  TRY(check_outputs(r));
#ifndef HSAD_NO_AMD
  const char *sstatus = NULL;
  int rc = 0;
  if (r->source_path && (rc = source_apply(r->source_path, r->input, r->incs, r->nincs,
                                           &sstatus, r->why, sizeof r->why)))
    return hsad_cli_fail(&r->cli, rc, sstatus, "%s", r->why);
#else
  if (r->source_path) return RUN_USAGE(r, "--source: kfd-emu's (AMD); this hsad has no AMD backend");
#endif
  return 0;
}

static int run_open_device(run_t *r) {
  TRY(run_check(r, hsad_runtime_open(&r->rt)));
  TRY(run_check(r, hsad_device_get(r->rt, r->devi, &r->dev)));
  r->di = hsad_device_info(r->dev);
  return 0;
}

/* ---- phase: load the program (shared) ------------------------------------------------------ */

/* The input file's bytes (a source or a code object): *out malloc'd, or the failure reported;
 * `empty` says what an empty file is ("the source file is empty"). */
static int run_read_input(run_t *r, const char *empty, char **out, size_t *out_size) {
  struct stat st;
  if (!stat(r->input, &st) && S_ISDIR(st.st_mode))
    return RUN_FAIL(r, "error", "%s: is a directory", r->input);
  *out = hsad_cli_slurp(r->input, out_size);
  if (!*out) return RUN_FAIL(r, "error", "%s: %s", r->input, strerror(errno));
  if (!*out_size) {
    free(*out);
    *out = NULL;
    return RUN_FAIL(r, "error", "%s: %s", r->input, empty);
  }
  return 0;
}

/* ---- phase: bind the arguments (shared) ---------------------------------------------------- */

/* Buffers allocated and initialised, and the kernel arguments of args[0..count) (cli_arg_karg;
 * pad_vec3 on AMD): r->kargs, r->nkargs; lds:BYTES adds to r->dyn_lds. */
static int run_bind_args(run_t *r, uint32_t count, bool pad_vec3) {
  r->kargs = calloc(r->nargs + 1, sizeof *r->kargs);
  if (!r->kargs) return RUN_FAIL(r, "HSAD_ERR_OUT_OF_MEMORY", "out of memory");
  for (uint32_t i = 0; i < count; i++) {
    arg_t *a = &r->args[i];
    if (a->kind == A_BUF) {
      TRY(run_check(r, hsad_buffer_alloc(r->dev, a->count * cli_tsize[a->type], &a->ptr)));
      if (init_buffer(a))
        return RUN_FAIL(r, "error", "--arg %s: cannot read %s: %s", a->spec, a->init,
                        strerror(errno));
    }
    if (a->kind == A_LDS) r->dyn_lds += a->lds;
    r->kargs[r->nkargs++] = cli_arg_karg(a, pad_vec3);
  }
  return 0;
}

/* ---- phase: the dispatch loop (shared) ----------------------------------------------------- */

/* --trace: the monitor of r->q (a ring of the records of two queue sizes at most) and the
 * trace. */
static int trace_setup(run_t *r) {
  r->mon_cap = 1;
  while (r->mon_cap < r->repeat && r->mon_cap < (1u << 20)) r->mon_cap <<= 1;
  if (r->mon_cap > 2 * r->qo.size) r->mon_cap = 2 * r->qo.size;
  TRY(run_check(r, hsad_queue_monitor_enable(r->q, &(hsad_monitor_options_t){
                                                       .capacity = r->mon_cap,
                                                       .alert = trace_alert})));
  return run_check(r, hsad_trace_create(&r->trace));
}

/* --trace: a profiling queue holds the device times of its last `size` packets, so the
 * records are drained every quarter ring: the run asks for a completion every size/4
 * dispatches (a barrier-AND packet each) and, size/4 dispatches later, waits for it (usually
 * long reached) and drains what completed, well before a slot of an undrained record is
 * reused (size packets later). Before dispatch `rep`: the wait and drain when one is due. */
static hsad_status_t run_trace_catch_up(run_t *r, uint32_t rep) {
  uint32_t step = r->qo.size / 4;
  if (!r->trace || rep % step || rep < 2 * step) return HSAD_OK;
  /* the mark of dispatch rep - step - 1 */
  hsad_status_t s = hsad_completion_wait(&r->marks[(rep / step + 1) & 1],
                                         hsad_now_ns() + 120000000000ull);
  return s ? s : trace_drain(r->q, r->trace, &r->trace_dropped);
}

/* Dispatch `rep` of the loop: the completion it signals (the last one's, a --trace mark, or
 * none), then the submit. */
static hsad_status_t run_submit(run_t *r, const hsad_launch_t *l, uint32_t rep,
                                hsad_completion_t *done, uint64_t deadline) {
  hsad_completion_t *signal = rep + 1 == r->repeat ? done : NULL;
  uint32_t step = r->qo.size / 4;
  if (!signal && r->trace && (rep + 1) % step == 0) signal = &r->marks[((rep + 1) / step) & 1];
#ifndef HSAD_NO_AMD
  if (r->vset) return hsad_variant_dispatch(r->q, r->vset, l, deadline, signal, NULL);
#endif
  if (r->nv.vset) return hsad_variant_dispatch(r->q, r->nv.vset, l, deadline, signal, NULL);
  return hsad_kernel_dispatch(r->q, r->k, l, deadline, signal, NULL);
}

/* --repeat dispatches in order, the wait for the last, its device timestamps (AMD), --trace's
 * file; r->submit sorted. */
static int run_dispatch_loop(run_t *r) {
  hsad_launch_t l = {.dims = r->dims, .args = r->kargs, .arg_count = r->nkargs};
  memcpy(l.grid, r->grid, sizeof l.grid);
  memcpy(l.block, r->block, sizeof l.block);
  r->submit = calloc(r->repeat, sizeof *r->submit);
  if (!r->submit) return RUN_FAIL(r, "HSAD_ERR_OUT_OF_MEMORY", "out of memory");
  hsad_completion_t done = {0}; /* a value: nothing to release */
  hsad_status_t s = HSAD_OK;
  r->t_start = hsad_now_ns();
  for (uint32_t rep = 0; rep < r->repeat && !s; rep++) {
    if ((s = run_trace_catch_up(r, rep))) break;
    uint64_t t0 = hsad_now_ns();
    s = run_submit(r, &l, rep, &done, t0 + 10000000000ull);
    r->submit[rep] = hsad_now_ns() - t0;
  }
  r->t_submitted = hsad_now_ns();
  if (!s) s = hsad_completion_wait(&done, r->t_submitted + 120000000000ull);
  r->t_done = hsad_now_ns();
  if (r->di->vendor != HSAD_VENDOR_NVIDIA)
    r->have_gpu_time = !s && hsad_completion_times(&done, &r->gpu_start, &r->gpu_end) == HSAD_OK;
  TRY(run_check(r, s));
  if (r->trace_path) TRY(run_check(r, write_trace(r->q, r->trace, r->trace_path, r->mon_cap)));
  qsort(r->submit, r->repeat, sizeof *r->submit, hsad_cli_cmp_u64);
  return 0;
}

/* ---- phase: report (shared pieces) --------------------------------------------------------- */

/* "dims", "grid", "block" and, when given, "blocks" (NVIDIA's per launch) of the dispatch. */
static void json_add_geometry(json_object *j, const run_t *r, const uint32_t *blocks) {
  json_object *g = json_object_new_array(), *b = json_object_new_array();
  json_object *bl = blocks ? json_object_new_array() : NULL;
  for (int d = 0; d < 3; d++) {
    json_object_array_add(g, json_object_new_int64(r->grid[d]));
    json_object_array_add(b, json_object_new_int64(r->block[d]));
    if (bl) json_object_array_add(bl, json_object_new_int64(blocks[d]));
  }
  json_object_object_add(j, "dims", json_object_new_int64(r->dims));
  json_object_object_add(j, "grid", g);
  json_object_object_add(j, "block", b);
  if (bl) json_object_object_add(j, "blocks", bl);
}

/* "timings_ns", "buffers" and the rest of the report object o after them: --variants' object,
 * --trace's file, "warnings"; then o is printed. */
static void json_finish(run_t *r, json_object *o) {
  json_object *j = json_object_new_object();
  json_object_object_add(j, "compile", json_u64(r->t_compile));
  json_object_object_add(j, "submit_min", json_u64(r->submit[0]));
  json_object_object_add(j, "submit_median", json_u64(r->submit[r->repeat / 2]));
  json_object_object_add(j, "submit_max", json_u64(r->submit[r->repeat - 1]));
  json_object_object_add(j, "submit_to_complete", json_u64(r->t_done - r->t_submitted));
  json_object_object_add(j, "end_to_end", json_u64(r->t_done - r->t_start));
  if (r->have_gpu_time)
    json_object_object_add(j, "last_dispatch_gpu", json_u64(r->gpu_end - r->gpu_start));
  json_object_object_add(o, "timings_ns", j);
  json_object_object_add(o, "buffers", json_buffers(r->args, r->nargs));
#ifndef HSAD_NO_AMD
  if (r->jvariants) {
    json_object_object_add(o, "variants", r->jvariants);
    r->jvariants = NULL;
  }
#endif
  if (r->nv.jvariants) {
    json_object_object_add(o, "variants", r->nv.jvariants);
    r->nv.jvariants = NULL;
  }
  if (r->trace_path) json_object_object_add(o, "trace", json_object_new_string(r->trace_path));
  json_object *wa = json_object_new_array();
  for (uint32_t i = 0; i < r->warns.n; i++)
    json_object_array_add(wa, json_object_new_string(r->warns.text[i]));
  json_object_object_add(o, "warnings", wa);
  hsad_cli_print_json(o);
}

/* The text report's "timings: ..." line, without its newline. */
static void print_timings(const run_t *r) {
  printf("timings: submit median %llu ns (min %llu, max %llu); last submit -> complete %.1f us; "
         "end to end %.1f us", (unsigned long long)r->submit[r->repeat / 2],
         (unsigned long long)r->submit[0], (unsigned long long)r->submit[r->repeat - 1],
         (r->t_done - r->t_submitted) / 1e3, (r->t_done - r->t_start) / 1e3);
}

/* ---- NVIDIA devices ------------------------------------------------------------------------ */

/* --variants LIST on NVIDIA: entries rN (a cap of N registers per thread, CU_JIT_MAX_REGISTERS)
 * or T:B (__launch_bounds__(T, B) as JIT options: at most T threads per block, at least B
 * blocks per SM; 0 = not set, 0:0 is the source as written), separated by commas. */
static int nv_parse_variants(const char *v, hsad_nv_budget_t *out, uint32_t *out_n, char *why,
                             size_t whyn) {
  uint32_t n = 0;
  for (const char *p = v;; n++) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char e[64], *x = NULL;
    unsigned long a = 0, b = 0;
    bool ok = len > 0 && len < sizeof e && n < HSAD_VARIANT_MAX;
    snprintf(e, sizeof e, "%.*s", (int)(len < 40 ? len : 40), p);
    errno = 0;
    if (ok && e[0] == 'r') {
      ok = e[1] >= '0' && e[1] <= '9' && (a = strtoul(e + 1, &x, 10), !*x) && !errno &&
           a <= UINT32_MAX;
      if (ok) out[n] = (hsad_nv_budget_t){(uint32_t)a, 0, 0};
    } else if (ok) {
      const char *colon = strchr(e, ':');
      ok = colon && e[0] >= '0' && e[0] <= '9' && colon[1] >= '0' && colon[1] <= '9' &&
           (a = strtoul(e, &x, 10), x == colon) && (b = strtoul(colon + 1, &x, 10), !*x) &&
           !errno && a <= UINT32_MAX && b <= UINT32_MAX;
      if (ok) out[n] = (hsad_nv_budget_t){0, (uint32_t)a, (uint32_t)b};
    }
    if (!ok) {
      if (n == HSAD_VARIANT_MAX) snprintf(why, whyn, "more than %u variants", HSAD_VARIANT_MAX);
      else snprintf(why, whyn, "entry %u '%s': expected rN (at most N registers per thread) or "
                    "T:B (at most T threads per block, at least B blocks per SM: "
                    "__launch_bounds__(T, B); 0 = not set, 0:0 = as written)", n, e);
      return -1;
    }
    if (!end) break;
    p = end + 1;
  }
  *out_n = n + 1;
  return 0;
}

static void nv_budget_name(const hsad_nv_budget_t *b, char *out, size_t n) {
  if (b->max_registers) snprintf(out, n, "regs<=%u", b->max_registers);
  else if (!b->max_threads && !b->min_blocks_per_sm) snprintf(out, n, "as written");
  else if (!b->min_blocks_per_sm) snprintf(out, n, "threads<=%u", b->max_threads);
  else snprintf(out, n, "threads<=%u blocks>=%u", b->max_threads, b->min_blocks_per_sm);
}

/* --variants on NVIDIA: the source through NVRTC to PTX and the driver's JIT per budget (auto:
 * 0:0, B:H and B:F for the block's B threads, H and F the blocks of half and all of the SM's
 * threads, one at a time so a budget the JIT cannot meet is skipped with its reason). */
static int nv_compile_variants(run_t *r) {
  hsad_nv_compile_options_t o = {.target = r->nv.target, .defines = r->defs,
                                 .define_count = r->ndefs, .include_dirs = r->incs,
                                 .include_dir_count = r->nincs};
  uint64_t t0 = hsad_now_ns();
  hsad_status_t s = HSAD_OK;
  if (strcmp(r->variants, "auto")) {
    s = hsad_nv_program_compile_variants(r->dev, r->nv.image, r->input, &o, r->nv.budgets,
                                         r->nv.nbudgets, r->nv.vprogs, NULL);
    if (s) return run_fail_named(r, s);
    memcpy(r->nv.vbudget, r->nv.budgets, sizeof r->nv.vbudget);
    r->nv.nvprogs = r->nv.nbudgets;
  } else {
    uint32_t flat = r->block[0] * r->block[1] * r->block[2];
    uint32_t full = r->di->max_waves_per_cu * r->di->wavefront_size / (flat ? flat : 1);
    full = full < 1 ? 1 : full > 32 ? 32 : full;
    hsad_nv_budget_t a[3] = {{0, 0, 0}, {0, flat, full / 2 ? full / 2 : 1}, {0, flat, full}};
    for (uint32_t i = 0; i < 3; i++) {
      char bn[64];
      nv_budget_name(&a[i], bn, sizeof bn);
      s = hsad_nv_program_compile_variants(r->dev, r->nv.image, r->input, &o, &a[i], 1,
                                           &r->nv.vprogs[r->nv.nvprogs], NULL);
      if (s && i == 0) return run_fail_named(r, s);
      if (s) warn_add(&r->warns, r->cli.json, "variant budget %s skipped: %s", bn,
                      hsad_last_error());
      else r->nv.vbudget[r->nv.nvprogs++] = a[i];
    }
  }
  hsad_clear_error();
  r->t_compile = hsad_now_ns() - t0;
  return 0;
}

static const char *nv_reason_name(hsad_variant_reason_t reason) {
  switch (reason) {
  case HSAD_VARIANT_NO_SPILL: return "no local memory, most blocks per SM";
  case HSAD_VARIANT_LEAST_SPILL: return "least local memory per thread";
  case HSAD_VARIANT_MEASURED: return "measured fastest";
  default: return "?";
  }
}

/* --variants on NVIDIA: variant i's line (text) or object (JSON, into cands). */
static void nv_report_variant(run_t *r, uint32_t i, uint32_t flat, uint64_t ns,
                              json_object *cands) {
  const hsad_device_kernel_desc_t *kd = hsad_device_kernel_desc(hsad_variant_set_kernel(r->nv.vset, i));
  hsad_variant_choice_t c = {0};
  bool allowed = hsad_variant_set_candidate(r->nv.vset, i, flat, r->dyn_lds, &c) == HSAD_OK;
  hsad_variant_choice_t all; /* registers without the block: the rule over the kernel at 32 */
  if (!allowed && hsad_variant_set_candidate(r->nv.vset, i, 32, 0, &all) == HSAD_OK) c = all;
  const hsad_nv_budget_t *b = &r->nv.vbudget[i];
  char bn[64];
  nv_budget_name(b, bn, sizeof bn);
  if (cands) {
    json_object *j = json_object_new_object();
    json_object_object_add(j, "index", json_object_new_int64(i));
    json_object_object_add(j, "max_registers", json_object_new_int64(b->max_registers));
    json_object_object_add(j, "max_threads", json_object_new_int64(b->max_threads));
    json_object_object_add(j, "min_blocks_per_sm", json_object_new_int64(b->min_blocks_per_sm));
    json_object_object_add(j, "registers", json_object_new_int64(c.regs));
    json_object_object_add(j, "local_bytes", json_object_new_int64(kd->private_segment_fixed_size));
    json_object_object_add(j, "max_threads_per_block",
                           json_object_new_int64(kd->max_flat_workgroup_size));
    json_object_object_add(j, "blocks_per_sm", allowed ? json_object_new_int64(c.blocks_per_sm)
                                                       : NULL);
    json_object_object_add(j, "device_ns", ns != UINT64_MAX ? json_u64(ns) : NULL);
    json_object_array_add(cands, j);
    return;
  }
  printf("  variant %u (%s): %u registers, local %u B/thread, ", i, bn, c.regs,
         kd->private_segment_fixed_size);
  if (allowed) printf("%u blocks/SM", c.blocks_per_sm);
  else printf("does not allow %u threads (maximum %u)", flat, kd->max_flat_workgroup_size);
  if (ns != UINT64_MAX) printf(", %llu ns", (unsigned long long)ns);
  printf("\n");
}

/* --variants auto on NVIDIA: measured mode (hsad_variant_set_autotune: each allowed variant run
 * once on the profiling queue, timed by its cuEventRecord pair). The buffers are put back as
 * they were, so the runs that follow see the inputs the user gave. */
static int nv_measure_variants(run_t *r, hsad_variant_tuning_t *t) {
  void *saved[64] = {0};
  size_t bytes[64] = {0};
  for (uint32_t i = 0; i < r->nargs && i < 64; i++)
    if (r->args[i].kind == A_BUF && r->args[i].ptr) {
      bytes[i] = r->args[i].count * cli_tsize[r->args[i].type];
      if ((saved[i] = malloc(bytes[i]))) memcpy(saved[i], r->args[i].ptr, bytes[i]);
    }
  hsad_launch_t l = {.dims = r->dims, .args = r->kargs, .arg_count = r->nkargs};
  memcpy(l.grid, r->grid, sizeof l.grid);
  memcpy(l.block, r->block, sizeof l.block);
  hsad_status_t s = hsad_variant_set_autotune(r->nv.vset, r->q, &l,
                                              hsad_now_ns() + 120000000000ull, t);
  for (uint32_t i = 0; i < r->nargs && i < 64; i++) {
    if (saved[i]) memcpy(r->args[i].ptr, saved[i], bytes[i]);
    free(saved[i]);
  }
  return s ? run_fail_named(r, s) : 0;
}

/* --variants on NVIDIA: the rule's choice at the block (and, for auto, the measured one), each
 * variant and the reason reported; the set dispatches the choice (cached per block size). */
static int nv_select_variant(run_t *r) {
  uint32_t flat = r->block[0] * r->block[1] * r->block[2];
  hsad_variant_choice_t rule, ch;
  hsad_status_t s = hsad_variant_set_select(r->nv.vset, flat, r->dyn_lds, &rule, NULL);
  if (s) return run_fail_named(r, s);
  hsad_variant_tuning_t t = {0};
  for (uint32_t i = 0; i < HSAD_VARIANT_MAX; i++) t.ns[i] = UINT64_MAX;
  bool measured = !strcmp(r->variants, "auto");
  if (measured) TRY(nv_measure_variants(r, &t));
  ch = measured ? t.choice : rule;
  json_object *cands = r->cli.json ? json_object_new_array() : NULL;
  if (!r->cli.json)
    printf("variants of %s at block size %u (%s):\n", r->kd->name, flat, r->di->name);
  for (uint32_t i = 0; i < r->nv.nvprogs; i++) nv_report_variant(r, i, flat, t.ns[i], cands);
  if (r->cli.json) {
    r->nv.jvariants = json_object_new_object();
    json_object_object_add(r->nv.jvariants, "candidates", cands);
    json_object_object_add(r->nv.jvariants, "rule_choice", json_object_new_int64(rule.index));
    json_object_object_add(r->nv.jvariants, "rule_reason",
                           json_object_new_string(nv_reason_name(rule.reason)));
    json_object_object_add(r->nv.jvariants, "choice", json_object_new_int64(ch.index));
    json_object_object_add(r->nv.jvariants, "reason",
                           json_object_new_string(nv_reason_name(ch.reason)));
  } else {
    printf("rule: variant %u (%s; %u of %u variants allow %u threads)\n", rule.index,
           nv_reason_name(rule.reason), rule.candidates, r->nv.nvprogs, flat);
    if (measured)
      printf("choice: variant %u (measured fastest: %llu ns; the rule's variant %u: %llu ns)\n",
             ch.index, (unsigned long long)t.ns[ch.index], rule.index,
             (unsigned long long)t.ns[rule.index]);
    else
      printf("choice: variant %u (%s)\n", ch.index, nv_reason_name(ch.reason));
  }
  r->k = hsad_variant_set_kernel(r->nv.vset, ch.index);
  r->kd = hsad_device_kernel_desc(r->k);
  r->nv.regs = ch.regs;
  return 0;
}

/* The options that are AMD's, and a program NVIDIA's driver cannot take. */
static int nv_check_options(run_t *r) {
  const hsad_device_info_t *di = r->di;
  if (r->variants && !ends_with(r->input, ".cu"))
    return RUN_USAGE(r, "--variants needs a source (.cu): register budgets are set when the "
                     "driver compiles its PTX, %s is compiled already", r->input);
  if (r->variants && strcmp(r->variants, "auto") &&
      nv_parse_variants(r->variants, r->nv.budgets, &r->nv.nbudgets, r->why, sizeof r->why))
    return RUN_USAGE(r, "--variants %s: %s", r->variants, r->why);
  if (r->co_version)
    return RUN_FAIL(r, "HSAD_ERR_UNSUPPORTED", "--co-version %u: device %u, %s (%s), is an "
                    "NVIDIA GPU; code object versions are AMD's", r->co_version, di->index,
                    di->product_name, di->name);
  if (ends_with(r->input, ".cl") || ends_with(r->input, ".hip") || ends_with(r->input, ".hsaco"))
    return RUN_FAIL(r, "HSAD_ERR_UNSUPPORTED", "%s: device %u, %s (%s), is an NVIDIA GPU: give a "
                    "CUDA source (.cu) or a .cubin, .fatbin or .ptx file (OpenCL C, HIP and code "
                    "objects are AMD's)", r->input, di->index, di->product_name, di->name);
  r->nv.cu = ends_with(r->input, ".cu");
  if (!r->nv.cu && (r->ndefs || r->nincs || r->opt_set))
    return RUN_USAGE(r, "-D, -I and -O apply to a source (.cu); %s is compiled already", r->input);
  return 0;
}

/* SOURCE.cu through NVRTC for the device's sm: r->nv.image becomes the cubin. */
static int nv_compile(run_t *r) {
  if (r->opt_set)
    warn_add(&r->warns, r->cli.json, "-O%d: not passed to NVRTC, which optimizes fully", r->opt);
  hsad_nv_compile_options_t o = {.target = r->nv.target, .defines = r->defs,
                                 .define_count = r->ndefs, .include_dirs = r->incs,
                                 .include_dir_count = r->nincs};
  void *cubin = NULL;
  size_t cubin_size = 0;
  uint64_t t0 = hsad_now_ns();
  hsad_status_t s = hsad_nv_compile(r->nv.image, r->input, &o, &cubin, &cubin_size, &r->log);
  r->t_compile = hsad_now_ns() - t0;
  if (s) return run_fail_named(r, s);
  free(r->nv.image);
  r->nv.image = cubin;
  r->nv.image_size = cubin_size;
  size_t ll = r->log ? strlen(r->log) : 0;
  while (ll && (r->log[ll - 1] == '\n' || r->log[ll - 1] == ' ')) r->log[--ll] = '\0';
  if (ll) warn_add(&r->warns, r->cli.json, "NVRTC: %s", r->log);
  return 0;
}

/* The program (compiled or loaded by the driver), its kernel, and the cubin's record of it
 * (registers, parameter sizes; none for PTX). */
static int nv_load_program(run_t *r) {
  TRY(run_read_input(r, r->nv.cu ? "the source file is empty" : "the file is empty",
                     &r->nv.image, &r->nv.image_size));
  snprintf(r->nv.target, sizeof r->nv.target, "sm_%u%u", r->di->cc_major, r->di->cc_minor);
  r->nv.sm = r->di->cc_major * 10 + r->di->cc_minor;
  if (r->variants) TRY(nv_compile_variants(r)); /* from the source, before nv_compile */
  if (r->nv.cu) TRY(nv_compile(r));
  if (r->variants) {
    r->prog = r->nv.vprogs[0];
    r->nv.vprogs[0] = NULL;
  } else {
    TRY(run_check(r, hsad_program_load_memory(r->dev, r->nv.image, r->nv.image_size, r->input,
                                              &r->prog)));
  }
  TRY(find_kernel(&r->cli, r->prog, r->input, r->kname, &r->k));
  if (r->variants) {
    hsad_program_t *ps[HSAD_VARIANT_MAX] = {r->prog};
    for (uint32_t i = 1; i < r->nv.nvprogs; i++) ps[i] = r->nv.vprogs[i];
    TRY(run_check(r, hsad_variant_set_from_programs(ps, r->nv.nvprogs,
                                                    hsad_device_kernel_desc(r->k)->name,
                                                    &r->nv.vset)));
  }
  r->kd = hsad_device_kernel_desc(r->k);
  size_t ei;
  if (!hsad_nv_program_open_memory(r->nv.image, r->nv.image_size, r->input, &r->nv.meta) &&
      !hsad_nv_program_select(r->nv.meta, r->nv.sm, &ei)) {
    const hsad_nv_entry_t *en = hsad_nv_program_entry(r->nv.meta, ei);
    if (en->kind != HSAD_NV_ENTRY_ELF || hsad_nv_entry_find_kernel(en, r->kd->name, &r->nv.ki) ||
        !(r->nv.ki->present & HSAD_NV_KI_HAS_PARAMS))
      r->nv.ki = NULL;
  }
  hsad_clear_error();
  return 0;
}

/* The arguments against the parameter sizes (and a C++ kernel's mangled name), then bound;
 * lds:BYTES, last, is the dynamic shared memory. */
static int nv_check_and_bind_args(run_t *r) {
  const hsad_nv_kernel_info_t *ki = r->nv.ki;
  uint32_t nparams = r->nargs, dyn = 0, bad;
  while (nparams && r->args[nparams - 1].kind == A_LDS) dyn += r->args[--nparams].lds;
  if (ki) {
    r->nv.sizes = calloc(ki->param_count + 1, sizeof *r->nv.sizes);
    if (!r->nv.sizes) return RUN_FAIL(r, "HSAD_ERR_OUT_OF_MEMORY", "out of memory");
    for (uint32_t i = 0; i < ki->param_count; i++) r->nv.sizes[i] = ki->params[i].size;
    if (cli_check_nv_args(r->kd->name, ki->param_count, r->nv.sizes, r->args, nparams,
                          run_warn, r, &bad, r->why, sizeof r->why)) {
      if (bad == nparams) return RUN_FAIL(r, "HSAD_ERR_ARG_COUNT", "%s", r->why);
      return RUN_FAIL(r, "HSAD_ERR_ARG_KIND", "--arg %s: %s", r->args[bad].spec, r->why);
    }
  } else {
    for (uint32_t i = 0; i < nparams; i++)
      if (r->args[i].kind == A_LDS)
        return RUN_FAIL(r, "HSAD_ERR_ARG_KIND", "--arg %s: argument %u of kernel '%s': "
                        "lds:BYTES (dynamic shared memory, extern __shared__) is not a "
                        "parameter; give it after the parameters", r->args[i].spec, i,
                        r->kd->name);
  }
  TRY(run_bind_args(r, nparams, false)); /* CUDA's 3-vectors are 3 wide */
  r->dyn_lds = dyn;
  if (dyn) r->kargs[r->nkargs++] = HSAD_KARG_LDS_BYTES(dyn);
  return 0;
}

static void nv_blocks(const run_t *r, uint32_t blocks[3]) {
  for (int d = 0; d < 3; d++)
    blocks[d] = (uint32_t)(((uint64_t)r->grid[d] + r->block[d] - 1) / r->block[d]);
}

static void nv_report_json(run_t *r) {
  const hsad_device_info_t *di = r->di;
  const hsad_device_kernel_desc_t *kd = r->kd;
  const hsad_nv_kernel_info_t *ki = r->nv.ki;
  json_object *o = json_object_new_object(), *j = json_object_new_object();
  json_object_object_add(j, "index", json_object_new_int64(di->index));
  json_object_object_add(j, "vendor", json_object_new_string("nvidia"));
  json_object_object_add(j, "name", json_object_new_string(di->name));
  json_object_object_add(j, "product", json_object_new_string(di->product_name));
  json_object_object_add(j, "sms", json_object_new_int64(di->compute_units));
  json_object_object_add(j, "cuda_version", json_object_new_int64(di->cuda_version));
  json_object_object_add(j, "driver_version", json_object_new_string(di->driver_version));
  json_object_object_add(o, "device", j);
  j = json_object_new_object();
  json_object_object_add(j, "name", json_object_new_string(kd->name));
  json_object_object_add(j, "registers", r->nv.vset ? json_object_new_int64(r->nv.regs)
                                         : ki ? json_object_new_int64(ki->registers) : NULL);
  json_object_object_add(j, "static_shared_bytes",
                         json_object_new_int64(kd->group_segment_fixed_size));
  json_object_object_add(j, "local_bytes", json_object_new_int64(kd->private_segment_fixed_size));
  json_object_object_add(j, "param_bytes", json_object_new_int64(kd->kernarg_segment_size));
  json_object *ps = ki ? json_object_new_array() : NULL;
  for (uint32_t i = 0; ki && i < ki->param_count; i++)
    json_object_array_add(ps, json_object_new_int64(ki->params[i].size));
  json_object_object_add(j, "param_sizes", ps);
  json_object_object_add(j, "max_threads_per_block",
                         json_object_new_int64(kd->max_flat_workgroup_size));
  if (r->nv.have_occ) {
    json_object *oc = json_object_new_object();
    json_object_object_add(oc, "blocks_per_sm", json_object_new_int64(r->nv.occ.blocks_per_sm));
    json_object_object_add(oc, "warps_per_sm", json_object_new_int64(r->nv.occ.warps_per_sm));
    json_object_object_add(oc, "occupancy_pct", json_object_new_int64(r->nv.occ.occupancy_pct));
    json_object_object_add(oc, "limiter",
                           json_object_new_string(hsad_nv_limiter_name(r->nv.occ.limiter)));
    json_object_object_add(j, "occupancy", oc);
  }
  json_object_object_add(o, "kernel", j);
  if (r->nv.cu) {
    j = json_object_new_object();
    json_object_object_add(j, "compiler", json_object_new_string("nvrtc"));
    json_object_object_add(j, "target", json_object_new_string(r->nv.target));
    json_object_object_add(j, "cubin_bytes", json_u64(r->nv.image_size));
    json_object_object_add(o, "compile", j);
  }
  uint32_t blocks[3];
  nv_blocks(r, blocks);
  j = json_object_new_object();
  json_add_geometry(j, r, blocks);
  json_object_object_add(j, "dynamic_shared", json_object_new_int64(r->dyn_lds));
  json_object_object_add(j, "repeat", json_object_new_int64(r->repeat));
  json_object_object_add(j, "executed", json_object_new_boolean(true));
  json_object_object_add(o, "dispatch", j);
  json_finish(r, o);
}

static void nv_report_text(const run_t *r) {
  const hsad_device_info_t *di = r->di;
  const hsad_device_kernel_desc_t *kd = r->kd;
  const hsad_nv_kernel_info_t *ki = r->nv.ki;
  printf("device %u: %s (%s), %u SMs, CUDA %d.%d, driver %s\n", di->index, di->product_name,
         di->name, di->compute_units, di->cuda_version / 1000, di->cuda_version % 1000 / 10,
         di->driver_version[0] ? di->driver_version : "?");
  if (r->nv.cu)
    printf("compiled %s with NVRTC for %s in %.1f ms (%zu-byte cubin)\n", r->input, r->nv.target,
           r->t_compile / 1e6, r->nv.image_size);
  printf("kernel %s: ", kd->name);
  if (r->nv.vset) printf("%u registers, ", r->nv.regs);
  else if (ki) printf("%u registers, ", ki->registers);
  printf("shared %u B static + %u dynamic, local %u B/thread, parameters %u B",
         kd->group_segment_fixed_size, r->dyn_lds, kd->private_segment_fixed_size,
         kd->kernarg_segment_size);
  if (ki) printf(" (%u)", ki->param_count);
  printf(", max %u threads/block\n", kd->max_flat_workgroup_size);
  if (r->nv.have_occ)
    printf("occupancy: %u blocks/SM, %u warps/SM (%u%%; limited by %s)\n",
           r->nv.occ.blocks_per_sm, r->nv.occ.warps_per_sm, r->nv.occ.occupancy_pct,
           hsad_nv_limiter_name(r->nv.occ.limiter));
  uint32_t blocks[3];
  nv_blocks(r, blocks);
  printf("dispatch: %uD grid %ux%ux%u, block %ux%ux%u, %u time(s) in order; %ux%ux%u blocks "
         "per launch\n", r->dims, r->grid[0], r->grid[1], r->grid[2], r->block[0], r->block[1],
         r->block[2], r->repeat, blocks[0], blocks[1], blocks[2]);
  print_timings(r);
  printf("\n");
  print_buffers(r->args, r->nargs);
  if (r->trace_path) printf("trace: %s\n", r->trace_path);
}

/* hsad run on an NVIDIA device: a .cu source through NVRTC for the device's sm, or a cubin,
 * fatbin or PTX file loaded by the driver; the arguments checked against the parameter sizes
 * of the cubin's .nv.info (and a C++ kernel's mangled name), buffers in pinned host memory
 * mapped for the GPU, the dispatches in order on a stream of their own. */

static int run_nvidia(run_t *r) {
  TRY(nv_check_options(r));
  TRY(nv_load_program(r));
  TRY(nv_check_and_bind_args(r));
  if (r->trace_path) {
    /* --trace: a profiling stream (each dispatch bracketed by a cuEventRecord pair, times kept
     * for 256 dispatches: the drain every quarter of that, as on AMD's 1024-packet queue) */
    r->qo = (hsad_queue_options_t){.size = 256, .profiling = true};
    TRY(run_check(r, hsad_queue_create(r->dev, &r->qo, &r->q)));
    TRY(trace_setup(r));
  } else
    /* --variants auto measures: a profiling stream */
    TRY(run_check(r, hsad_queue_create(r->dev, r->variants && !strcmp(r->variants, "auto") ?
                                       &(hsad_queue_options_t){.profiling = true} : NULL,
                                       &r->q)));
  if (r->nv.vset) TRY(nv_select_variant(r));
  TRY(run_dispatch_loop(r));
  uint32_t flat = r->block[0] * r->block[1] * r->block[2];
  hsad_nv_sm_limits_t lim;
  r->nv.have_occ = r->nv.ki && !r->nv.vset && !hsad_nv_sm_limits_get(r->nv.sm, &lim) &&
                   !hsad_nv_occupancy_at(r->nv.ki, &lim, flat, r->dyn_lds, &r->nv.occ) &&
                   r->nv.occ.fits;
  hsad_clear_error();
  int rc = 0;
  if (write_outputs(&r->cli, r->args, r->nargs, &rc)) return rc;
  if (r->cli.json) nv_report_json(r);
  else nv_report_text(r);
  return 0;
}

/* ---- AMD devices --------------------------------------------------------------------------- */

#ifndef HSAD_NO_AMD
/* --variants auto: one at a time, so a budget the compiler cannot meet is skipped with its
 * reason: as written, wg<=B and wg<=B waves>=4 for the block's B work-items. */
static int amd_compile_variants_auto(run_t *r, const char *src, size_t n,
                                     const hsad_compile_options_t *o) {
  uint32_t flat = r->block[0] * r->block[1] * r->block[2];
  hsad_variant_budget_t a[3] = {{0, 0}, {flat, 0}, {flat, 4}};
  for (uint32_t i = 0; i < 3; i++) {
    if (i && (flat == 0 || flat > 1024)) break;
    char bn[64];
    budget_name(&a[i], bn, sizeof bn);
    free(r->log);
    r->log = NULL;
    hsad_status_t s = hsad_program_compile_variants(r->dev, src, n, r->input, o, &a[i], 1,
                                                    &r->vprogs[r->nvprogs], &r->log);
    if (s == HSAD_ERR_COMPILE && i) {
      warn_add(&r->warns, r->cli.json, "variant budget %s skipped: %s", bn, hsad_last_error());
      continue;
    }
    if (s) return run_fail_named(r, s);
    r->vbudget[r->nvprogs++] = a[i];
  }
  return 0;
}

/* --variants: the source once per register budget; variant 0 becomes r->prog. */
static int amd_compile_variants(run_t *r, const char *src, size_t n,
                                const hsad_compile_options_t *o) {
  uint64_t t0 = hsad_now_ns();
  if (!strcmp(r->variants, "auto")) {
    TRY(amd_compile_variants_auto(r, src, n, o));
  } else {
    hsad_status_t s = hsad_program_compile_variants(r->dev, src, n, r->input, o, r->budgets,
                                                    r->nbudgets, r->vprogs, &r->log);
    if (s) return run_fail_named(r, s);
    r->nvprogs = r->nbudgets;
    memcpy(r->vbudget, r->budgets, r->nbudgets * sizeof *r->budgets);
  }
  r->t_compile = hsad_now_ns() - t0;
  r->prog = r->vprogs[0];
  r->vprogs[0] = NULL; /* freed as prog */
  return 0;
}

/* The source with comgr into a code object, loaded. */
static int amd_compile_one(run_t *r, const char *src, size_t n, const hsad_compile_options_t *o) {
  void *elf = NULL;
  size_t elf_size = 0;
  uint64_t t0 = hsad_now_ns();
  hsad_status_t s = hsad_codeobj_compile(src, n, r->input, o, &elf, &elf_size, &r->log);
  r->t_compile = hsad_now_ns() - t0;
  if (s) { /* the error message usually carries the compiler's log already: print it once */
    const char *e = hsad_last_error(), *log = r->log;
    bool in_msg = log && *log && strstr(e, log);
    return RUN_FAIL(r, hsad_status_name(s), "%s: %s%s%s", hsad_status_name(s), e,
                    log && *log && !in_msg ? "\n" : "", log && !in_msg ? log : "");
  }
  s = hsad_program_load_memory(r->dev, elf, elf_size, r->input, &r->prog);
  free(elf);
  return run_check(r, s);
}

/* SOURCE.cl / SOURCE.hip compiled for the device's ISA (once, or once per --variants budget),
 * or a code object / bundle loaded. */
static int amd_load_program(run_t *r) {
  if (r->variants && strcmp(r->variants, "auto") &&
      parse_variants(r->variants, r->budgets, &r->nbudgets, r->why, sizeof r->why))
    return RUN_USAGE(r, "--variants %s: %s", r->variants, r->why);
  if (ends_with(r->input, ".cu"))
    return RUN_FAIL(r, "HSAD_ERR_UNSUPPORTED", "%s: device %u, %s (%s), is an AMD GPU: give an "
                    "OpenCL C (.cl) or HIP (.hip) source or a code object (CUDA sources are "
                    "NVIDIA's: --device N of an NVIDIA GPU)", r->input, r->di->index,
                    r->di->product_name, r->di->name);
  if (!ends_with(r->input, ".cl") && !ends_with(r->input, ".hip")) {
    if (r->variants)
      return RUN_USAGE(r, "--variants needs a source (.cl or .hip): register budgets are set "
                       "when it is compiled, %s is compiled already", r->input);
    return run_check(r, hsad_program_load_file(r->dev, r->input, &r->prog));
  }
  char *src = NULL;
  size_t n = 0;
  TRY(run_read_input(r, "the source file is empty (no kernel to compile)", &src, &n));
  hsad_compile_options_t o = {.target = r->di->isa_name, .opt_level = r->opt,
                              .defines = r->defs, .define_count = r->ndefs,
                              .include_dirs = r->incs, .include_dir_count = r->nincs,
                              .code_object_version = r->co_version};
  int rc = r->variants ? amd_compile_variants(r, src, n, &o) : amd_compile_one(r, src, n, &o);
  free(src);
  return rc;
}

/* KERNEL in the program (and the variant set of --variants: variant 0 is prog, the others
 * vprogs[1..]); then one --arg per explicit argument, each of the kind and type the metadata
 * declares, bound. */
static int amd_find_kernel_and_bind(run_t *r) {
  TRY(find_kernel(&r->cli, r->prog, r->input, r->kname, &r->k));
  if (r->variants) {
    hsad_program_t *ps[HSAD_VARIANT_MAX];
    ps[0] = r->prog;
    for (uint32_t i = 1; i < r->nvprogs; i++) ps[i] = r->vprogs[i];
    TRY(run_check(r, hsad_variant_set_from_programs(ps, r->nvprogs,
                                                    hsad_device_kernel_desc(r->k)->name,
                                                    &r->vset)));
  }
  r->kd = hsad_device_kernel_desc(r->k);
  r->ki = hsad_kernel_info(r->kd->codeobj_kernel);
  r->kname = r->kd->name;
  uint32_t bad;
  if (cli_check_args(r->kd, r->args, r->nargs, CLI_SYNTAX_RUN, run_warn, r, &bad, r->why,
                     sizeof r->why)) {
    if (bad == r->nargs) return RUN_FAIL(r, "HSAD_ERR_ARG_COUNT", "%s", r->why);
    return RUN_FAIL(r, "HSAD_ERR_ARG_KIND", "--arg %s: %s", r->args[bad].spec, r->why);
  }
  return run_bind_args(r, r->nargs, true);
}

/* HIP's blockDim is the partial size in the last workgroup (ockl's get_local_size): the
 * usual blockIdx.x * blockDim.x + threadIdx.x then misses the tail. ROCm 5.2's HIP code
 * objects say .language "OpenCL C": a HIP kernel is one from a .hip source, from a HIP
 * offload-bundle entry or .hip_fatbin (hsad_codeobj_is_hip: an extern "C" kernel of a
 * hipcc program), or with a C++ (mangled) name. OpenCL kernels (get_global_id) are not
 * affected. */
static void amd_warn_hip_grid(run_t *r) {
  const uint32_t *grid = r->grid, *block = r->block;
  bool hip = ends_with(r->input, ".hip") || !strncmp(r->kname, "_Z", 2) ||
             hsad_codeobj_is_hip(hsad_kernel_codeobj(r->kd->codeobj_kernel)) ||
             (r->ki->language && strstr(r->ki->language, "HIP"));
  for (uint32_t d = 0; hip && d < r->dims; d++) {
    if (grid[d] % block[d] == 0) continue;
    uint32_t part = grid[d] % block[d], last = grid[d] / block[d];
    static const char xyz[] = "xyz";
    warn_add(&r->warns, r->cli.json, "grid %u is not a multiple of the block %u in %c: in the "
             "last workgroup (blockIdx.%c %u) HIP's blockDim.%c is %u, not %u, so an index "
             "blockIdx.%c * blockDim.%c + threadIdx.%c covers %llu..%llu and work-items "
             "%llu..%u are never computed; use --grid %llu and bound-check in the kernel",
             grid[d], block[d], xyz[d], xyz[d], last, xyz[d], part, block[d], xyz[d], xyz[d],
             xyz[d], (unsigned long long)last * part,
             (unsigned long long)last * part + part - 1,
             (unsigned long long)last * part + part, grid[d] - 1,
             ((unsigned long long)grid[d] + block[d] - 1) / block[d] * block[d]);
  }
}

/* kfd-emu: the kernel's own source (POCL), else a twin (said), else an error naming both
 * remedies (tools/kfd-emu/kfd_emu.h, kfd_emu_kernel_mode); r->executed says whether it runs. */
static int amd_check_emulation(run_t *r) {
  r->emulated = hsad_rocr_is_emulated();
  const char *nt = getenv("KFD_EMU_NO_TWIN");
  bool noop = nt && !strcmp(nt, "noop");
  r->emu_mode = KFD_EMU_KERNEL_TWIN;
  kfd_emu_kernel_mode_fn mode_fn = NULL;
  if (r->emulated) *(void **)&mode_fn = dlsym(RTLD_DEFAULT, "kfd_emu_kernel_mode");
  if (mode_fn) {
    char said[4096];
    r->emu_mode = mode_fn(r->kd->kernel_object, said, sizeof said);
    if (r->source_path && source_check(r->source_path, r->kname, r->emu_mode, said, &r->warns,
                                       r->cli.json, r->why, sizeof r->why))
      return RUN_FAIL(r, "HSAD_ERR_KERNEL_NOT_FOUND", "HSAD_ERR_KERNEL_NOT_FOUND: %s", r->why);
    if (r->emu_mode == KFD_EMU_KERNEL_TWIN) warn_add(&r->warns, r->cli.json, "%s", said);
    if (r->emu_mode == KFD_EMU_KERNEL_BUILD_FAILED)
      return RUN_FAIL(r, "HSAD_ERR_COMPILE", "HSAD_ERR_COMPILE: %s: kfd-emu: %s", r->input, said);
    if (r->emu_mode == KFD_EMU_KERNEL_NONE && !noop)
      return RUN_FAIL(r, "HSAD_ERR_UNSUPPORTED", "HSAD_ERR_UNSUPPORTED: %s: %s", r->input, said);
  }
  r->executed = !(r->emulated && noop && r->emu_mode != KFD_EMU_KERNEL_SOURCE &&
                  !twin_exists(r->ki->symbol));
  if (!r->executed)
    warn_add(&r->warns, r->cli.json, "kernel %s was not executed: kfd-emu has no host twin for "
             "it and KFD_EMU_NO_TWIN=noop completes such dispatches without running them, so "
             "every buffer still holds its initial contents", r->kname);
  return 0;
}

/* --variants: variant i's line (text) or object (JSON, into cands). */
static void amd_report_variant(run_t *r, uint32_t i, uint32_t flat, json_object *cands) {
  const hsad_device_kernel_t *vk = hsad_variant_set_kernel(r->vset, i);
  const hsad_kernel_t *vck = hsad_device_kernel_desc(vk)->codeobj_kernel;
  const hsad_kernel_info_t *vi = hsad_kernel_info(vck);
  hsad_pressure_row_t row;
  bool allowed = hsad_kernel_pressure_at(vck, NULL, flat, r->dyn_lds, &row) == HSAD_OK;
  uint32_t spills = vi->vgpr_spill_count + vi->sgpr_spill_count;
  char bn[64];
  budget_name(&r->vbudget[i], bn, sizeof bn);
  if (cands) {
    json_object *j = json_object_new_object();
    json_object_object_add(j, "index", json_object_new_int64(i));
    json_object_object_add(j, "max_workgroup_size",
                           json_object_new_int64(r->vbudget[i].max_workgroup_size));
    json_object_object_add(j, "min_waves_per_eu",
                           json_object_new_int64(r->vbudget[i].min_waves_per_eu));
    json_object_object_add(j, "vgpr", json_object_new_int64(vi->vgpr_count));
    json_object_object_add(j, "spills", json_object_new_int64(spills));
    json_object_object_add(j, "scratch_bytes",
                           json_object_new_int64(vi->private_segment_fixed_size));
    json_object_object_add(j, "max_flat_workgroup_size",
                           json_object_new_int64(vi->max_flat_workgroup_size));
    json_object_object_add(j, "waves_per_simd",
                           allowed ? json_object_new_int64(row.occupancy.waves_per_simd) : NULL);
    json_object_array_add(cands, j);
  } else if (allowed) {
    printf("  variant %u (%s): %u VGPRs, %u spills, scratch %u B/work-item, %u waves/SIMD\n", i,
           bn, vi->vgpr_count, spills, vi->private_segment_fixed_size,
           row.occupancy.waves_per_simd);
  } else {
    printf("  variant %u (%s): %u VGPRs, %u spills, scratch %u B/work-item, does not allow "
           "%u work-items (maximum %u)\n", i, bn, vi->vgpr_count, spills,
           vi->private_segment_fixed_size, flat, vi->max_flat_workgroup_size);
  }
}

/* --variants: the choice at the block's size, each variant and the reason reported; the
 * chosen variant's kernel becomes r->k. */
static int amd_select_variant(run_t *r) {
  if (!r->vset) return 0;
  uint32_t flat = r->block[0] * r->block[1] * r->block[2];
  hsad_variant_choice_t ch;
  hsad_status_t s = hsad_variant_set_select(r->vset, flat, r->dyn_lds, &ch, NULL);
  if (s) return run_fail_named(r, s);
  json_object *cands = r->cli.json ? json_object_new_array() : NULL;
  if (!r->cli.json)
    printf("variants of %s at workgroup size %u (%s):\n", r->kname, flat, r->di->name);
  for (uint32_t i = 0; i < r->nvprogs; i++) amd_report_variant(r, i, flat, cands);
  if (r->cli.json) {
    r->jvariants = json_object_new_object();
    json_object_object_add(r->jvariants, "candidates", cands);
    json_object_object_add(r->jvariants, "choice", json_object_new_int64(ch.index));
    json_object_object_add(r->jvariants, "reason",
                           json_object_new_string(hsad_variant_reason_name(ch.reason)));
  } else {
    printf("choice: variant %u (%s; %u of %u variants allow %u work-items)\n", ch.index,
           hsad_variant_reason_name(ch.reason), ch.candidates, r->nvprogs, flat);
  }
  r->k = hsad_variant_set_kernel(r->vset, ch.index);
  r->kd = hsad_device_kernel_desc(r->k);
  r->ki = hsad_kernel_info(r->kd->codeobj_kernel);
  return 0;
}

/* The line hsad_run_fault_arm writes when the kernel, run from source by POCL under kfd-emu,
 * faults ("%p": the address): the kernel, its buffers (arg index, spec, address, bytes; cut at
 * 1 KiB), why kfd-emu cannot trap it and what a GPU does. */
static void amd_fault_line(const run_t *r, char *out, size_t n) {
  char bufs[1024] = "";
  size_t used = 0;
  for (uint32_t i = 0; i < r->nargs && used < sizeof bufs; i++) {
    const arg_t *a = &r->args[i];
    if (a->kind != A_BUF) continue;
    int w = snprintf(bufs + used, sizeof bufs - used, "%sarg %u (%s) %p, %llu B", used ? "; " : "",
                     i, a->spec, a->ptr, (unsigned long long)(a->count * cli_tsize[a->type]));
    used += w > 0 ? (size_t)w : 0;
  }
  snprintf(out, n, "hsad run: kernel %s faulted at address %%p on a host thread: kfd-emu runs it "
           "from its OpenCL C source on POCL's threads, where it cannot trap faults, so an access "
           "outside the kernel's buffers (%s) ends hsad by the signal; on a GPU it is a memory "
           "fault that the queue reports as HSAD_ERR_QUEUE_ERROR (KFD_EMU_KERNEL_MODE=twin runs "
           "the kernel's host twin, if it has one, whose faults are queue errors)\n",
           r->kname, bufs[0] ? bufs : "none");
}

/* The dispatch loop, under the fault guard (run_fault.h) when kfd-emu runs the kernel from
 * source: a fault there is named on stderr before the process dies by it. */
static int amd_dispatch(run_t *r) {
  bool guard = r->emulated && r->executed && r->emu_mode == KFD_EMU_KERNEL_SOURCE;
  if (guard) {
    char line[2048];
    amd_fault_line(r, line, sizeof line);
    guard = !hsad_run_fault_arm(line);
  }
  int rc = run_dispatch_loop(r);
  if (guard) hsad_run_fault_disarm();
  return rc;
}

/* The dedicated queue (queue_options) and, for --trace, its monitor and the trace. */
static int amd_create_queue(run_t *r) {
  r->qo = queue_options(r->di, r->kd->kernarg_segment_size);
  TRY(run_check(r, hsad_queue_create(r->dev, &r->qo, &r->q)));
  return r->trace_path ? trace_setup(r) : 0;
}

static json_object *amd_json_kernel(const run_t *r) {
  const hsad_kernel_info_t *ki = r->ki;
  json_object *j = json_object_new_object();
  uint32_t cov = hsad_codeobj_info(hsad_program_codeobj(r->prog))->code_object_version;
  json_object_object_add(j, "name", json_object_new_string(ki->name));
  json_object_object_add(j, "code_object_version", json_object_new_int64(cov));
  json_object_object_add(j, "vgpr", json_object_new_int64(ki->vgpr_count));
  json_object_object_add(j, "sgpr", json_object_new_int64(ki->sgpr_count));
  json_object_object_add(j, "agpr", json_object_new_int64(ki->agpr_count));
  json_object_object_add(j, "vgpr_spill", json_object_new_int64(ki->vgpr_spill_count));
  json_object_object_add(j, "sgpr_spill", json_object_new_int64(ki->sgpr_spill_count));
  json_object_object_add(j, "private_segment_bytes",
                         json_object_new_int64(ki->private_segment_fixed_size));
  json_object_object_add(j, "group_segment_bytes",
                         json_object_new_int64(ki->group_segment_fixed_size));
  json_object_object_add(j, "kernarg_segment_bytes",
                         json_object_new_int64(ki->kernarg_segment_size));
  json_object_object_add(j, "max_flat_workgroup_size",
                         json_object_new_int64(r->kd->max_flat_workgroup_size));
  hsad_occupancy_t occ;
  uint32_t flat = r->block[0] * r->block[1] * r->block[2];
  if (hsad_kernel_occupancy(r->kd->codeobj_kernel, NULL, flat, r->dyn_lds, &occ) == HSAD_OK) {
    json_object *oc = json_object_new_object();
    json_object_object_add(oc, "waves_per_simd", json_object_new_int64(occ.waves_per_simd));
    json_object_object_add(oc, "workgroups_per_cu", json_object_new_int64(occ.workgroups_per_cu));
    json_object_object_add(oc, "wgp_mode", json_object_new_boolean(occ.wgp_mode));
    json_object_object_add(oc, "limiter",
                           json_object_new_string(hsad_occ_limiter_name(occ.limiter)));
    json_object_object_add(j, "occupancy", oc);
  }
  return j;
}

static void amd_report_json(run_t *r) {
  const hsad_device_info_t *di = r->di;
  json_object *o = json_object_new_object(), *j = json_object_new_object();
  json_object_object_add(j, "index", json_object_new_int64(di->index));
  json_object_object_add(j, "name", json_object_new_string(di->name));
  json_object_object_add(j, "isa", json_object_new_string(di->isa_name));
  json_object_object_add(j, "compute_units", json_object_new_int64(di->compute_units));
  json_object_object_add(j, "emulated", json_object_new_boolean(r->emulated));
  json_object_object_add(o, "device", j);
  json_object_object_add(o, "kernel", amd_json_kernel(r));
  j = json_object_new_object();
  json_add_geometry(j, r, NULL);
  json_object_object_add(j, "dynamic_lds", json_object_new_int64(r->dyn_lds));
  json_object_object_add(j, "repeat", json_object_new_int64(r->repeat));
  json_object_object_add(j, "kernarg_block_bytes",
                         json_object_new_int64(r->qo.kernarg_block_size ? r->qo.kernarg_block_size
                                                                         : 512));
  json_object_object_add(j, "executed", json_object_new_boolean(r->executed));
  json_object_object_add(o, "dispatch", j);
  json_finish(r, o);
}

/* The text report's device line: kfd-emu says how the kernel ran. */
static void amd_print_device(const run_t *r) {
  const hsad_device_info_t *di = r->di;
  printf("device %u: %s (%s), %u CUs%s%s\n", di->index, di->name, di->isa_name,
         di->compute_units, r->emulated ? ", kfd-emu " : "",
         !r->emulated ? ""
         : r->executed ? (r->emu_mode == KFD_EMU_KERNEL_SOURCE
                              ? "(the kernel ran from its OpenCL C source through POCL; timings "
                                "are host-side costs, not GPU performance)"
                              : "(kernels ran as host twins; timings are host-side costs, not "
                                "GPU performance)")
                       : "(the kernel was NOT executed: no host twin, KFD_EMU_NO_TWIN=noop)");
}

static void amd_report_text(const run_t *r) {
  const hsad_kernel_info_t *ki = r->ki;
  const uint32_t *grid = r->grid, *block = r->block;
  amd_print_device(r);
  if (r->t_compile) printf("compiled %s with comgr in %.1f ms\n", r->input, r->t_compile / 1e6);
  uint32_t cov = hsad_codeobj_info(hsad_program_codeobj(r->prog))->code_object_version;
  printf("kernel %s: code object v%u, %u VGPR, %u SGPR, %u AGPR, spills %u/%u (VGPR/SGPR), "
         "scratch %u B/work-item, LDS %u B fixed + %u dynamic, kernarg %u B\n",
         ki->name, cov, ki->vgpr_count, ki->sgpr_count, ki->agpr_count, ki->vgpr_spill_count,
         ki->sgpr_spill_count, ki->private_segment_fixed_size, ki->group_segment_fixed_size,
         r->dyn_lds, ki->kernarg_segment_size);
  hsad_occupancy_t occ;
  uint32_t flat = block[0] * block[1] * block[2];
  if (hsad_kernel_occupancy(r->kd->codeobj_kernel, NULL, flat, r->dyn_lds, &occ) == HSAD_OK)
    printf("occupancy: %u waves/SIMD, %u workgroups/%s (limited by %s)\n", occ.waves_per_simd,
           occ.workgroups_per_cu, occ.wgp_mode ? "WGP" : "CU",
           hsad_occ_limiter_name(occ.limiter));
  printf("dispatch: %uD grid %ux%ux%u, block %ux%ux%u, %u time(s) in order", r->dims, grid[0],
         grid[1], grid[2], block[0], block[1], block[2], r->repeat);
  if (r->qo.kernarg_block_size)
    printf("; own queue of %u packets with %u-byte kernarg blocks (kernarg segment %u B)",
           r->qo.size, r->qo.kernarg_block_size, r->kd->kernarg_segment_size);
  printf("\n");
  print_timings(r);
  if (r->have_gpu_time) printf("; last dispatch on the device %.1f us",
                               (r->gpu_end - r->gpu_start) / 1e3);
  printf("\n");
  print_buffers(r->args, r->nargs);
  if (r->trace_path) printf("trace: %s\n", r->trace_path);
}
#endif

/* hsad run on an AMD device: compile or load, find the kernel, bind, check kfd-emu can run it,
 * choose a variant, dispatch on a queue of its own, write the outputs, report. */
static int run_amd(run_t *r) {
#ifdef HSAD_NO_AMD
  return RUN_FAIL(r, "HSAD_ERR_UNSUPPORTED", "--device %u: %s is not an NVIDIA GPU, and this hsad "
                  "was built without the AMD backend (make BACKENDS=nvidia)", r->devi,
                  r->di->name);
#else
  if (r->di->vendor != HSAD_VENDOR_AMD)
    return RUN_FAIL(r, "HSAD_ERR_UNSUPPORTED", "--device %u: %s (%s) is an NVIDIA GPU: hsad run "
                    "serves AMD devices only so far (NVIDIA: the library's hsad_kernel_dispatch, "
                    "hsad info)", r->devi, r->di->product_name, r->di->name);
  TRY(amd_load_program(r));
  TRY(amd_find_kernel_and_bind(r));
  amd_warn_hip_grid(r);
  TRY(amd_check_emulation(r));
  TRY(amd_select_variant(r));
  TRY(amd_create_queue(r));
  TRY(amd_dispatch(r));
  int rc = 0;
  if (write_outputs(&r->cli, r->args, r->nargs, &rc)) return rc;
  if (r->cli.json) amd_report_json(r);
  else amd_report_text(r);
  return 0;
#endif
}

int hsad_cmd_run(int argc, char **argv) {
  run_t r = {.cli = {.cmd = "run", .json = hsad_cli_wants_json(argc, argv)},
             .grid = {0, 1, 1}, .block = {0, 1, 1}, .repeat = 1, .opt = 2};
  int rc = run_parse_options(&r, argc, argv);
  if (!rc) rc = run_check_command_line(&r);
  if (!rc) rc = run_open_device(&r);
  if (!rc) rc = r.di->vendor == HSAD_VENDOR_NVIDIA ? run_nvidia(&r) : run_amd(&r);
  run_free(&r);
  return rc == HSAD_CLI_DONE ? 0 : rc;
}
