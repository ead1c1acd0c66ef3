/* pocl.c - source mode: runs an OpenCL C kernel from its own source through POCL.
 *
 * A kernel whose code object carries its source (kernels.c: the `__hsad_cl_source` symbol,
 * codeobj/hsad_codeobj.h HSAD_CL_SOURCE_SYMBOL) or whose source is named in KFD_EMU_CL_SOURCE
 * executes with the semantics of that source: POCL (Debian's pocl-opencl-icd, a CPU OpenCL
 * implementation, loaded with dlopen on the first source-mode dispatch) builds it for the host
 * and runs the dispatch the AQL packet describes:
 *   - arguments from the kernarg segment at the offsets and sizes of the kernel's metadata:
 *     global_buffer values as SVM pointers (the GPU address is the host address on kfd-emu:
 *     no buffer object, no copy); by_value bytes as they are; dynamic_shared_pointer as
 *     clSetKernelArg(size, NULL), the sizes from the LDS offsets the dispatcher wrote and the
 *     packet's group_segment_size;
 *   - the packet's grid and workgroup sizes, the hidden_global_offset_x/y/z arguments (when
 *     the kernel has them) as the global work offset;
 *   - partial workgroups: POCL 3.1 has no non-uniform workgroups (CL_INVALID_WORK_GROUP_SIZE),
 *     so a grid that is not a multiple of the workgroup runs as up to 8 rectangular pieces of
 *     uniform workgroups, each with its own global offset, from a build specialised to the
 *     dispatch geometry: -D__HSAD_GRID_d, __HSAD_BLOCK_d, __HSAD_OFFSET_d make the work-item
 *     functions (get_group_id, get_num_groups, get_global_size, get_global_offset,
 *     get_enqueued_local_size, get_global_linear_id) answer for the whole grid, as the code
 *     object would; get_global_id, get_local_id and get_local_size (the partial size) are POCL's.
 * Builds are cached in-process per (source, options, geometry) and across processes by POCL's
 * kernel cache (POCL_CACHE_DIR, default ~/.cache/pocl).
 *
 * Threading: each CP thread enqueues on its own command queue; a cl_kernel's arguments and
 * enqueue are serialised by its program's lock. Kernels run on POCL's worker threads, outside
 * kfd-emu's fault handler: an out-of-bounds access of a source-mode kernel cannot be trapped.
 */
#define _GNU_SOURCE
#define CL_TARGET_OPENCL_VERSION 300
#include "tools/kfd-emu/emu.h"

#include <CL/cl.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the OpenCL entry points used, loaded from libOpenCL.so.1 (ocl-icd) ---- */
#define CL_FNS(X)                                                                            \
  X(clGetPlatformIDs) X(clGetPlatformInfo) X(clGetDeviceIDs) X(clCreateContext)              \
  X(clCreateCommandQueueWithProperties) X(clCreateProgramWithSource) X(clBuildProgram)       \
  X(clGetProgramBuildInfo) X(clGetProgramInfo) X(clCreateKernel) X(clSetKernelArg)           \
  X(clSetKernelArgSVMPointer) X(clEnqueueNDRangeKernel) X(clFinish) X(clReleaseProgram)      \
  X(clReleaseCommandQueue)                                                                   \
  X(clGetKernelInfo) X(clGetKernelArgInfo)
static struct {
#define X(f) __typeof__(&f) f;
  CL_FNS(X)
#undef X
} cl;

static void (*ns_ctype_init)(void);
static _Thread_local bool cl_thread_ready;

/* Makes this thread ready to call into POCL's link namespace (its libc's per-thread state). */
static void cl_thread_enter(void) {
  if (cl_thread_ready) return;
  cl_thread_ready = true;
  if (ns_ctype_init) ns_ctype_init();
}

static pthread_once_t cl_once = PTHREAD_ONCE_INIT;
static char cl_init_error[512];
static cl_context cl_ctx;
static cl_device_id cl_dev;

static void cl_init(void) {
  /* A link namespace of its own: libpocl pulls in libclang-cpp and libLLVM-15, whose command-
   * line options clash with those comgr (libamd_comgr.so.2, hsad's compiler) links statically
   * into the same libLLVM registry ("Option ... registered more than once", an abort). */
  void *h = dlmopen(LM_ID_NEWLM, "libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    snprintf(cl_init_error, sizeof cl_init_error, "cannot load libOpenCL.so.1 (install "
             "pocl-opencl-icd and ocl-icd-libopencl1, scripts/deps.sh): %s", dlerror());
    return;
  }
  /* that namespace's libc sets up its ctype tables per thread only for the thread that loaded
   * it: every other thread calls its __ctype_init before entering POCL (cl_thread_enter) */
  Lmid_t lmid;
  void *libc = dlinfo(h, RTLD_DI_LMID, &lmid) == 0
                   ? dlmopen(lmid, "libc.so.6", RTLD_NOW | RTLD_NOLOAD) : NULL;
  if (libc) *(void **)&ns_ctype_init = dlsym(libc, "__ctype_init");
#define X(f)                                                                                 \
  if (!(*(void **)&cl.f = dlsym(h, #f))) {                                                   \
    snprintf(cl_init_error, sizeof cl_init_error, "libOpenCL.so.1 lacks %s", #f);           \
    return;                                                                                  \
  }
  CL_FNS(X)
#undef X
  cl_platform_id plats[16];
  cl_uint np = 0;
  if (cl.clGetPlatformIDs(16, plats, &np) != CL_SUCCESS) np = 0;
  for (cl_uint i = 0; i < np && !cl_dev; i++) {
    char name[256] = "";
    cl.clGetPlatformInfo(plats[i], CL_PLATFORM_NAME, sizeof name, name, NULL);
    if (!strstr(name, "Portable Computing Language")) continue;
    if (cl.clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_CPU, 1, &cl_dev, NULL) != CL_SUCCESS)
      cl_dev = NULL;
  }
  if (!cl_dev) {
    snprintf(cl_init_error, sizeof cl_init_error, "no POCL CPU device among %u OpenCL "
             "platforms (install pocl-opencl-icd, scripts/deps.sh)", np);
    return;
  }
  cl_int e;
  cl_ctx = cl.clCreateContext(NULL, 1, &cl_dev, NULL, NULL, &e);
  if (!cl_ctx)
    snprintf(cl_init_error, sizeof cl_init_error, "POCL: clCreateContext failed (%d)", e);
}

/* ---- in-process program cache ---- */
typedef struct cl_prog {
  struct cl_prog *next;
  uint64_t hash;
  char *key;          /* options + '\n' + source: compared in full on a hash hit */
  cl_program program; /* NULL when the build failed */
  char *error;        /* the build failure with POCL's log, when program is NULL */
  pthread_mutex_t lock; /* serialises argument setting and enqueue of its kernels */
  struct cl_kern {
    char name[256];
    cl_kernel kernel;
  } kernels[16];
  int nkernels;
} cl_prog_t;

static pthread_mutex_t progs_lock = PTHREAD_MUTEX_INITIALIZER;
static cl_prog_t *progs;
static _Thread_local cl_command_queue cl_queue;
/* A CP thread's command queue is released when the thread ends (a queue's CP thread goes with
 * the queue: created and destroyed queues would otherwise keep one POCL queue each). */
static pthread_key_t cl_queue_key;
static pthread_once_t cl_queue_key_once = PTHREAD_ONCE_INIT;
static void cl_queue_release(void *q) {
  cl_thread_enter();
  cl.clReleaseCommandQueue((cl_command_queue)q);
}
static void cl_queue_key_init(void) { pthread_key_create(&cl_queue_key, cl_queue_release); }

static uint64_t fnv1a(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
  return h;
}

/* Work-item functions answering for the whole grid when a partial dispatch runs in pieces;
 * prepended to every source, active only with -D__HSAD_PIECES. */
static const char prelude[] =
    "#ifdef __HSAD_PIECES\n"
    "static inline size_t __hsad_pick(uint d, size_t a, size_t b, size_t c, size_t e) {\n"
    "  return d == 0 ? a : d == 1 ? b : d == 2 ? c : e; }\n"
    "static inline size_t __hsad_goff(uint d) { return get_global_offset(d); }\n"
    "static inline size_t __hsad_gid(uint d) { return get_group_id(d); }\n"
    "#define __HSAD_G(d) __hsad_pick(d, __HSAD_GRID_0, __HSAD_GRID_1, __HSAD_GRID_2, 1)\n"
    "#define __HSAD_B(d) __hsad_pick(d, __HSAD_BLOCK_0, __HSAD_BLOCK_1, __HSAD_BLOCK_2, 1)\n"
    "#define __HSAD_O(d) __hsad_pick(d, __HSAD_OFFSET_0, __HSAD_OFFSET_1, __HSAD_OFFSET_2, 0)\n"
    "#define get_global_size(d) __HSAD_G(d)\n"
    "#define get_global_offset(d) __HSAD_O(d)\n"
    "#define get_enqueued_local_size(d) __HSAD_B(d)\n"
    "#define get_num_groups(d) ((__HSAD_G(d) + __HSAD_B(d) - 1) / __HSAD_B(d))\n"
    "#define get_group_id(d) ((__hsad_goff(d) - __HSAD_O(d)) / __HSAD_B(d) + __hsad_gid(d))\n"
    "#define get_global_linear_id() (((get_global_id(2) - __HSAD_O(2)) * __HSAD_G(1) + \\\n"
    "  (get_global_id(1) - __HSAD_O(1))) * __HSAD_G(0) + (get_global_id(0) - __HSAD_O(0)))\n"
    "#endif\n"
    "#line 1\n";

/* The program for (options, source), built on first use. Never NULL except out of memory. */
static cl_prog_t *prog_get(const char *options, const char *source, char *why, size_t n) {
  size_t ol = strlen(options), sl = strlen(source);
  char *key = malloc(ol + sl + 2);
  if (!key) {
    snprintf(why, n, "out of host memory");
    return NULL;
  }
  memcpy(key, options, ol);
  key[ol] = '\n';
  memcpy(key + ol + 1, source, sl + 1);
  uint64_t h = fnv1a(key, ol + sl + 1);
  pthread_mutex_lock(&progs_lock);
  for (cl_prog_t *p = progs; p; p = p->next)
    if (p->hash == h && !strcmp(p->key, key)) {
      pthread_mutex_unlock(&progs_lock);
      free(key);
      return p;
    }
  cl_prog_t *p = calloc(1, sizeof *p);
  if (!p) {
    pthread_mutex_unlock(&progs_lock);
    free(key);
    snprintf(why, n, "out of host memory");
    return NULL;
  }
  p->hash = h;
  p->key = key;
  pthread_mutex_init(&p->lock, NULL);
  /* -DNAME[=VALUE] options become #define lines: POCL parses build options with the ctype
   * functions of its own link namespace, whose thread state a CP thread (created by the main
   * namespace's libc) lacks (a crash in isspace). -I is not carried: a source with includes of
   * its own fails to build here, with POCL's log. */
  char defs[2048] = "";
  size_t dl = 0;
  char *copy = strdup(options), *save = NULL;
  for (char *t = copy ? strtok_r(copy, " ", &save) : NULL; t; t = strtok_r(NULL, " ", &save)) {
    if (strncmp(t, "-D", 2) || !t[2]) continue;
    char *eq = strchr(t + 2, '=');
    if (eq) *eq = ' ';
    dl += (size_t)snprintf(defs + dl, dl < sizeof defs ? sizeof defs - dl : 0, "#define %s%s\n",
                           t + 2, eq ? "" : " 1");
  }
  free(copy);
  const char *parts[3] = {defs, prelude, source};
  cl_int e;
  cl_program prog = cl.clCreateProgramWithSource(cl_ctx, 3, parts, NULL, &e);
  /* OpenCL C 2.0, as comgr builds it (codeobj/compile.c). POCL 3.1's CPU device in that mode
   * defines neither __opencl_c_generic_address_space nor __opencl_c_named_address_space_builtins,
   * so its opencl-c.h declares no vloadN/vstoreN for __global, __local or __private pointers
   * ("no matching function for call to '_cl_vload16'" for valid 2.0 code such as fusion/blit.c's
   * copy kernel); the second macro brings back the named-address-space declarations, which its
   * kernel library implements (the same builtins as in its 1.2 and 3.0 modes). */
  const char *opts = "-cl-std=CL2.0 -D__opencl_c_named_address_space_builtins=1";
  if (prog && (e = cl.clBuildProgram(prog, 1, &cl_dev, opts, NULL, NULL)) == CL_SUCCESS) {
    p->program = prog;
  } else {
    size_t ln = 0;
    char *log = NULL;
    if (prog && cl.clGetProgramBuildInfo(prog, cl_dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &ln) ==
                    CL_SUCCESS && (log = calloc(1, ln + 1)))
      cl.clGetProgramBuildInfo(prog, cl_dev, CL_PROGRAM_BUILD_LOG, ln, log, NULL);
    size_t mn = 256 + strlen(options) + (log ? strlen(log) : 0);
    p->error = malloc(mn);
    if (p->error)
      snprintf(p->error, mn, "POCL cannot build its source (error %d, options '%s'): %s", e,
               options, log && *log ? log : "no build log");
    free(log);
    if (prog) cl.clReleaseProgram(prog);
  }
  p->next = progs;
  progs = p;
  pthread_mutex_unlock(&progs_lock);
  return p;
}

/* The cl_kernel `name` of p, under p->lock. */
static cl_kernel prog_kernel(cl_prog_t *p, const char *name, char *why, size_t n) {
  for (int i = 0; i < p->nkernels; i++)
    if (!strcmp(p->kernels[i].name, name)) return p->kernels[i].kernel;
  cl_int e;
  cl_kernel k = cl.clCreateKernel(p->program, name, &e);
  if (!k) {
    snprintf(why, n, "kernel %s: its source has no kernel of that name (clCreateKernel %d)", name,
             e);
    return NULL;
  }
  if (p->nkernels < (int)(sizeof p->kernels / sizeof p->kernels[0])) {
    snprintf(p->kernels[p->nkernels].name, sizeof p->kernels[0].name, "%s", name);
    p->kernels[p->nkernels++].kernel = k;
  }
  return k;
}

bool emu_cl_check(const char *options, const char *source, const char *name, char *why,
                  size_t n) {
  pthread_once(&cl_once, cl_init);
  cl_thread_enter();
  if (cl_init_error[0]) {
    snprintf(why, n, "kernel %s: source mode: %s", name, cl_init_error);
    return false;
  }
  cl_prog_t *p = prog_get(options, source, why, n);
  if (!p) return false;
  if (!p->program) {
    snprintf(why, n, "kernel %s: %s", name, p->error ? p->error : "build failed");
    return false;
  }
  pthread_mutex_lock(&p->lock);
  bool has = prog_kernel(p, name, why, n) != NULL;
  pthread_mutex_unlock(&p->lock);
  return has;
}

int emu_cl_builds(const char *options, const char *source) {
  pthread_once(&cl_once, cl_init);
  cl_thread_enter();
  if (cl_init_error[0]) return -1;
  char why[256];
  cl_prog_t *p = prog_get(options, source, why, sizeof why);
  return p && p->program ? 1 : 0;
}

/* Sets the kernel's arguments from the kernarg segment; 0 or a queue error code. */
static uint32_t set_args(cl_kernel kern, const emu_kernel_t *k,
                         const hsa_kernel_dispatch_packet_t *pk, uint32_t gpu, char *why,
                         size_t n) {
  const uint8_t *ka = pk->kernarg_address;
  for (uint32_t i = 0; i < k->arg_count; i++) {
    const kfd_emu_arg_t *a = &k->args[i];
    cl_int e = CL_SUCCESS;
    if (a->kind == KFD_EMU_ARG_GLOBAL_BUFFER) {
      uint64_t v = 0;
      memcpy(&v, ka + a->offset, a->size < 8 ? a->size : 8);
      /* faults of a source-mode kernel cannot be trapped (POCL's threads): a NULL buffer is
       * refused up front, as the memory violation its dereference would be */
      if (!v) {
        snprintf(why, n, "kernel %s: argument %u is a NULL buffer (source mode refuses it: a "
                 "fault on POCL's threads cannot be trapped)", k->name, i);
        return EMU_QERR_MEMORY_VIOLATION;
      }
      if (!emu_mem_gpu_ok(gpu, (uintptr_t)v, 1)) {
        snprintf(why, n, "kernel %s: argument %u is %p, not memory GPU %u can reach", k->name, i,
                 (void *)(uintptr_t)v, gpu);
        return EMU_QERR_MEMORY_VIOLATION;
      }
      e = cl.clSetKernelArgSVMPointer(kern, i, (void *)(uintptr_t)v);
    } else if (a->kind == KFD_EMU_ARG_DYNAMIC_SHARED_POINTER) {
      /* its bytes: up to the next dynamic LDS offset, or the end of the group segment */
      uint32_t off = 0, end = pk->group_segment_size;
      memcpy(&off, ka + a->offset, 4);
      for (uint32_t j = 0; j < k->arg_count; j++) {
        uint32_t o2 = 0;
        if (j == i || k->args[j].kind != KFD_EMU_ARG_DYNAMIC_SHARED_POINTER) continue;
        memcpy(&o2, ka + k->args[j].offset, 4);
        if (o2 > off && o2 < end) end = o2;
      }
      size_t bytes = end > off ? end - off : 1;
      e = cl.clSetKernelArg(kern, i, bytes, NULL);
    } else if (a->kind == KFD_EMU_ARG_BY_VALUE) {
      e = cl.clSetKernelArg(kern, i, a->size, ka + a->offset);
    } else {
      snprintf(why, n, "kernel %s: argument %u is an image, sampler, pipe or queue: source mode "
               "supports buffers, __local pointers and by-value arguments", k->name, i);
      return EMU_QERR_INVALID_CODE;
    }
    if (e != CL_SUCCESS) {
      snprintf(why, n, "kernel %s: POCL refuses argument %u (%u bytes at kernarg offset %u): "
               "clSetKernelArg error %d", k->name, i, a->size, a->offset, e);
      return EMU_QERR_INVALID_CODE;
    }
  }
  return 0;
}

uint32_t emu_cl_dispatch(const emu_kernel_t *k, const hsa_kernel_dispatch_packet_t *pk,
                         uint32_t gpu, char *why, size_t n) {
  pthread_once(&cl_once, cl_init);
  cl_thread_enter();
  if (cl_init_error[0]) {
    snprintf(why, n, "kernel %s: source mode: %s", k->name, cl_init_error);
    return EMU_QERR_INVALID_CODE;
  }
  uint32_t dims = (pk->setup >> HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS) & 3;
  size_t grid[3] = {pk->grid_size_x, pk->grid_size_y, pk->grid_size_z};
  size_t block[3] = {pk->workgroup_size_x, pk->workgroup_size_y, pk->workgroup_size_z};
  size_t offset[3] = {0, 0, 0};
  for (int d = 0; d < 3; d++)
    if (k->hidden_global_offset[d] != UINT32_MAX &&
        k->hidden_global_offset[d] + 8 <= k->kernarg_size)
      memcpy(&offset[d], (const uint8_t *)pk->kernarg_address + k->hidden_global_offset[d], 8);
  bool partial = false;
  for (uint32_t d = 0; d < dims; d++) partial |= grid[d] % block[d] != 0;
  char options[1024 + 256];
  int ol = snprintf(options, sizeof options, "%s", k->cl_options ? k->cl_options : "");
  if (partial)
    snprintf(options + ol, sizeof options - (size_t)ol,
             " -D__HSAD_PIECES -D__HSAD_GRID_0=%zuUL -D__HSAD_GRID_1=%zuUL -D__HSAD_GRID_2=%zuUL"
             " -D__HSAD_BLOCK_0=%zuUL -D__HSAD_BLOCK_1=%zuUL -D__HSAD_BLOCK_2=%zuUL"
             " -D__HSAD_OFFSET_0=%zuUL -D__HSAD_OFFSET_1=%zuUL -D__HSAD_OFFSET_2=%zuUL",
             grid[0], grid[1], grid[2], block[0], block[1], block[2], offset[0], offset[1],
             offset[2]);
  cl_prog_t *p = prog_get(options, k->cl_source, why, n);
  if (!p) return EMU_QERR_INVALID_CODE;
  if (!p->program) {
    snprintf(why, n, "kernel %s: %s", k->name, p->error ? p->error : "build failed");
    return EMU_QERR_INVALID_CODE;
  }
  if (!cl_queue) {
    cl_int e;
    cl_queue = cl.clCreateCommandQueueWithProperties(cl_ctx, cl_dev, NULL, &e);
    if (!cl_queue) {
      snprintf(why, n, "kernel %s: POCL: clCreateCommandQueueWithProperties failed (%d)",
               k->name, e);
      return EMU_QERR_INVALID_CODE;
    }
    pthread_once(&cl_queue_key_once, cl_queue_key_init);
    pthread_setspecific(cl_queue_key, cl_queue);
  }
  pthread_mutex_lock(&p->lock);
  uint32_t err = 0;
  cl_kernel kern = prog_kernel(p, k->name, why, n);
  if (!kern) err = EMU_QERR_INVALID_CODE;
  if (!err) err = set_args(kern, k, pk, gpu, why, n);
  /* pieces: per dimension the full workgroups, then the partial one */
  for (uint32_t piece = 0; !err && piece < (1u << dims); piece++) {
    size_t off[3], size[3], local[3];
    bool empty = false;
    for (uint32_t d = 0; d < 3; d++) {
      size_t full = grid[d] / block[d] * block[d], rest = grid[d] - full;
      bool last = d < dims && (piece >> d) & 1;
      off[d] = offset[d] + (last ? full : 0);
      size[d] = last ? rest : full;
      local[d] = last ? rest : block[d];
      empty |= size[d] == 0;
    }
    if (empty) continue;
    cl_int e = cl.clEnqueueNDRangeKernel(cl_queue, kern, dims, off, size, local, 0, NULL, NULL);
    if (e != CL_SUCCESS) {
      snprintf(why, n, "kernel %s: POCL refuses the launch (grid %zux%zux%zu, workgroup "
               "%zux%zux%zu): clEnqueueNDRangeKernel error %d", k->name, size[0], size[1],
               size[2], local[0], local[1], local[2], e);
      err = EMU_QERR_INVALID_CODE;
    }
  }
  cl_int fe = cl.clFinish(cl_queue);
  if (!err && fe != CL_SUCCESS) {
    snprintf(why, n, "kernel %s: POCL: clFinish error %d", k->name, fe);
    err = EMU_QERR_INVALID_CODE;
  }
  pthread_mutex_unlock(&p->lock);
  return err;
}
