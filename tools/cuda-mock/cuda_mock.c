/* cuda_mock.c - a host-only stand-in for libcuda.so.1 (the subset of nvidia/nv_cuda.h), so the
 * NVIDIA backend and tests/test_nvidia.c run where there is no NVIDIA GPU (CI, this machine):
 * HSAD_LIBCUDA=build/lib/hsad/cuda-mock/libcuda.so.1. What it models, and nothing more:
 *   - one device ("hsad cuda-mock", sm_90 limits of an H200), one primary context;
 *   - streams as FIFOs run in order by one host thread each: launches, 64-bit value writes,
 *     value waits (GEQ: they block the stream until another stream's write), copies, fills;
 *   - the kernels of tests/data/nvidia/nv_kernels.cu (and nv_run.cu's scale<float>) as host twins (found by name; parameter
 *     layouts as cuFuncGetParamInfo gives them for sm_90), run over the launch's grid;
 *   - device memory = host memory (unified addresses), pinned memory = calloc'd;
 *   - `fault` poisons the context: every later call in it returns CUDA_ERROR_ILLEGAL_ADDRESS
 *     (700), also cuDevicePrimaryCtxRetain after cuDevicePrimaryCtxReset, as the H200's driver
 *     580 does (a sticky error needs a new process);
 *   - dynamic shared memory above 48 KiB needs cuFuncSetAttribute first (else
 *     CUDA_ERROR_INVALID_VALUE);
 *   - graphs: nodes (kernel, 1-D memcpy between unified addresses, memset of 1/2/4-byte
 *     elements, empty) kept in the order added (a dependency must exist before its consumer, so
 *     that order is topological); an instantiated exec copies them, cuGraphLaunch enqueues them
 *     on the stream in that order, the exec's SetParams calls rewrite its copy only (graphs and
 *     launches already made keep theirs). CUDA_MOCK_REFUSE_MEMCPY_NODE=1 makes
 *     cuGraphAddMemcpyNode answer CUDA_ERROR_NOT_SUPPORTED (801), as a driver refusing a copy
 *     node (the backend then rolls back to sequential launches).
 * It checks nothing of the GPU's own semantics (memory model, timing). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef unsigned int res_t;
enum { OK = 0, EINVAL_ = 1, ENOTINIT = 3, ENOTFOUND = 500, ENOTREADY = 600, EILLEGAL = 700,
       EHANDLE = 400 };

static _Atomic res_t sticky; /* the context's poisoning error */
static int inited;

/* ---- kernels -------------------------------------------------------------------------- */
typedef struct {
  const char *name;
  uint32_t nparams, offset[6], size[6];
  uint32_t regs, local; /* registers per thread (0: 32), local bytes per thread */
  /* the JIT's register budget (cuModuleLoadDataEx): below `nospill` registers the kernel
   * spills `spill_per_reg` local bytes per register cut (0: no budget model) */
  uint32_t nospill, spill_per_reg;
  uint32_t max_threads; /* CU_JIT_MAX_THREADS_PER_BLOCK of its module (0: none) */
  int idx;              /* its row in funcs (max_dyn) */
} func_t;
static func_t funcs[] = {
    {"empty", 0, {0}, {0}, 0, 0, 0, 0, 0, 0},
    {"saxpy", 4, {0, 8, 16, 24}, {4, 8, 8, 4}, 0, 0, 0, 0, 0, 0},
    {"byval", 6, {0, 8, 32, 48, 56, 64}, {1, 24, 16, 8, 8, 8}, 0, 0, 0, 0, 0, 0},
    {"dyn_reverse", 2, {0, 8}, {8, 4}, 0, 0, 0, 0, 0, 0},
    {"add_one", 1, {0}, {8}, 0, 0, 0, 0, 0, 0},
    {"delay_store", 3, {0, 8, 16}, {8, 4, 8}, 0, 0, 0, 0, 0, 0},
    {"copy_one", 2, {0, 8}, {8, 8}, 0, 0, 0, 0, 0, 0},
    {"fault", 1, {0}, {8}, 0, 0, 0, 0, 0, 0},
    {"_Z5scaleIfEvPT_S0_j", 3, {0, 8, 12}, {8, 4, 4}, 0, 0, 0, 0, 0, 0}, /* tests/data/nvidia/nv_run.cu */
    {"affine", 4, {0, 8, 12, 16}, {8, 4, 4, 4}, 0, 0, 0, 0, 0, 0},
    /* mix as if built with spills (monitoring's alerts): 128 registers, 304 local bytes */
    {"mix", 3, {0, 8, 16}, {8, 8, 4}, 128, 304, 0, 0, 0, 0},
    /* tests/data/nvidia/nv_variants.cu's heavy (103 registers as written, as NVRTC 13.0 builds
     * it for sm_90; every register cut spills 4 bytes: 156 at 64, where ptxas spills 160) and a
     * kernel whose budget down to 56 registers costs no spill */
    {"heavy", 4, {0, 8, 16, 20}, {8, 8, 4, 4}, 103, 0, 103, 4, 0, 0},
    {"relaxed", 4, {0, 8, 16, 20}, {8, 8, 4, 4}, 96, 0, 56, 4, 0, 0},
};
enum { NFUNCS = sizeof funcs / sizeof funcs[0] };
static int max_dyn[NFUNCS];

typedef struct op {
  int kind; /* 0 kernel, 1 write, 2 wait, 3 copy, 4 fill (esize-byte elements), 5 nothing,
               6 event record (write, and the host's time into *stamp) */
  func_t *f;
  unsigned grid[3], block[3], shared;
  _Alignas(16) uint8_t params[128]; /* the kernels read their parameters in place */
  volatile uint64_t *addr;
  uint64_t value;
  void *dst;
  const void *src;
  size_t bytes;
  unsigned esize;   /* fill: element bytes (1, 2, 4) */
  volatile uint64_t *stamp; /* event record: where the time goes */
  struct op *next;
} op_t;

typedef struct stream {
  pthread_mutex_t lock;
  pthread_cond_t cv;
  op_t *head, *tail;
  int busy, quit;
  pthread_t thread;
  int generation;                 /* ctx_resets when created */
} stream_t;
static int ctx_resets;            /* cuDevicePrimaryCtxReset calls so far */

#define P(type, off) (*(type *)(o->params + (off)))

static void run_kernel(op_t *o) {
  const char *n = o->f->name;
  unsigned blocks = o->grid[0] * o->grid[1] * o->grid[2], threads = o->block[0];
  if (!strcmp(n, "saxpy")) {
    float a = P(float, 0), *x = P(float *, 8), *y = P(float *, 16);
    unsigned cnt = P(unsigned, 24);
    for (unsigned i = 0; i < blocks * threads; i++)
      if (i < cnt) y[i] = a * x[i] + y[i];
  } else if (!strcmp(n, "byval")) {
    struct { char c; short s; int i; double d; char t[3]; } m;
    memcpy(&m, o->params + 8, 24);
    float v[4];
    memcpy(v, o->params + 32, 16);
    long long *out = P(long long *, 64);
    out[0] = P(char, 0); out[1] = m.c; out[2] = m.s; out[3] = m.i; out[4] = (long long)(m.d * 1000.0);
    out[5] = m.t[0] * 10000 + m.t[1] * 100 + m.t[2];
    for (int k = 0; k < 4; k++) out[6 + k] = (long long)(v[k] * 10);
    out[10] = (long long)(P(double, 48) * 1000.0);
    out[11] = (long long)P(unsigned long long, 56);
  } else if (!strcmp(n, "dyn_reverse")) {
    int *data = P(int *, 0);
    unsigned words = P(unsigned, 8);
    if (o->shared < words * 4) { sticky = EILLEGAL; return; } /* out of its shared memory */
    int *tmp = malloc(threads * sizeof *tmp);
    for (unsigned b = 0; b < blocks; b++) {
      memcpy(tmp, data + b * threads, threads * sizeof *tmp);
      for (unsigned t = 0; t < threads; t++) data[b * threads + t] = tmp[threads - 1 - t];
    }
    free(tmp);
  } else if (!strcmp(n, "add_one")) {
    __atomic_fetch_add(P(unsigned long long *, 0), 1, __ATOMIC_SEQ_CST);
  } else if (!strcmp(n, "delay_store")) {
    uint64_t ns = P(uint64_t, 16);
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
    __atomic_store_n(P(int *, 0), P(int, 8), __ATOMIC_SEQ_CST);
  } else if (!strcmp(n, "copy_one")) {
    *P(int *, 0) = __atomic_load_n(P(int *, 8), __ATOMIC_SEQ_CST);
  } else if (!strcmp(n, "fault")) {
    sticky = EILLEGAL;
  } else if (!strcmp(n, "affine")) {
    unsigned *x = P(unsigned *, 0), mul = P(unsigned, 8), add = P(unsigned, 12), cnt = P(unsigned, 16);
    for (unsigned i = 0; i < blocks * threads; i++)
      if (i < cnt) x[i] = x[i] * mul + add;
  } else if (!strcmp(n, "mix")) {
    unsigned *d = P(unsigned *, 0), cnt = P(unsigned, 16);
    const unsigned *src = P(const unsigned *, 8);
    for (unsigned i = 0; i < blocks * threads; i++)
      if (i < cnt) d[i] = d[i] * 31u + src[i];
  } else if (!strcmp(n, "heavy")) { /* nv_variants.cu's heavy */
    const unsigned *x = P(const unsigned *, 0);
    unsigned *y = P(unsigned *, 8), cnt = P(unsigned, 16), k = P(unsigned, 20);
    for (unsigned t = 0; t < blocks * threads && t < cnt; t++) {
      unsigned acc[87], sum = 0;
      for (unsigned j = 0; j < 87; j++) acc[j] = t * (j + 1);
      for (unsigned i = 0; i < k; i++) {
        unsigned v = x[(t + i) % cnt];
        for (unsigned j = 0; j < 87; j++) acc[j] = acc[j] * 0x9E3779B1u + (v ^ j);
      }
      for (unsigned j = 0; j < 87; j++) sum ^= acc[j] + j;
      y[t] = sum;
    }
  } else if (!strcmp(n, "relaxed")) {
    const unsigned *x = P(const unsigned *, 0);
    unsigned *y = P(unsigned *, 8), cnt = P(unsigned, 16), k = P(unsigned, 20);
    for (unsigned t = 0; t < blocks * threads && t < cnt; t++) y[t] = x[t] * 7u + k;
  } else if (!strcmp(n, "_Z5scaleIfEvPT_S0_j")) { /* scale<float>(float *, float, unsigned) */
    float *d = P(float *, 0), f = P(float, 8);
    unsigned cnt = P(unsigned, 12);
    for (unsigned i = 0; i < blocks * threads; i++)
      if (i < cnt) d[i] *= f;
  }
}

static void *stream_main(void *arg) {
  stream_t *s = arg;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (!s->head && !s->quit) pthread_cond_wait(&s->cv, &s->lock);
    if (!s->head) break;
    op_t *o = s->head;
    s->busy = 1;
    pthread_mutex_unlock(&s->lock);
    if (!sticky) {
      switch (o->kind) {
      case 0: run_kernel(o); break;
      case 6: {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        *o->stamp = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
        __atomic_store_n(o->addr, o->value, __ATOMIC_SEQ_CST);
        break;
      }
      case 1: __atomic_store_n(o->addr, o->value, __ATOMIC_SEQ_CST); break;
      case 2:
        while (!sticky && (int64_t)(__atomic_load_n(o->addr, __ATOMIC_SEQ_CST) - o->value) < 0) {
          struct timespec ts = {0, 20000};
          nanosleep(&ts, NULL);
        }
        break;
      case 3: memmove(o->dst, o->src, o->bytes); break;
      case 4:
        for (size_t i = 0; i < o->bytes; i += o->esize) memcpy((uint8_t *)o->dst + i, &o->value, o->esize);
        break;
      }
    }
    pthread_mutex_lock(&s->lock);
    s->head = o->next;
    if (!s->head) s->tail = NULL;
    s->busy = 0;
    free(o);
    pthread_cond_broadcast(&s->cv);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

static res_t enqueue(stream_t *s, op_t *o) {
  if (sticky) {
    free(o);
    return sticky;
  }
  if (!s) return EHANDLE; /* the legacy default stream is not modelled */
  o->next = NULL;
  pthread_mutex_lock(&s->lock);
  if (s->tail) s->tail->next = o; else s->head = o;
  s->tail = o;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->lock);
  return OK;
}

/* ---- memory ranges (cuPointerGetAttribute's MEMORY_TYPE: 1 host (pinned), 2 device) -------- */
typedef struct range {
  uintptr_t base;
  size_t bytes;
  unsigned type;
  struct range *next;
} range_t;
static pthread_mutex_t ranges_lock = PTHREAD_MUTEX_INITIALIZER;
static range_t *ranges;
static void range_add(const void *p, size_t n, unsigned type) {
  range_t *r = malloc(sizeof *r);
  if (!r) return;
  *r = (range_t){(uintptr_t)p, n, type, NULL};
  pthread_mutex_lock(&ranges_lock);
  r->next = ranges;
  ranges = r;
  pthread_mutex_unlock(&ranges_lock);
}
static void range_del(const void *p) {
  pthread_mutex_lock(&ranges_lock);
  for (range_t **q = &ranges; *q; q = &(*q)->next)
    if ((*q)->base == (uintptr_t)p) {
      range_t *r = *q;
      *q = r->next;
      free(r);
      break;
    }
  pthread_mutex_unlock(&ranges_lock);
}

/* ---- the API ---------------------------------------------------------------------------- */
res_t cuInit(unsigned flags) {
  (void)flags;
  for (int i = 0; i < NFUNCS; i++) funcs[i].idx = i;
  inited = 1;
  return OK;
}
res_t cuDriverGetVersion(int *v) { *v = 13000; return OK; }
/* NVRTC 13 looks cuInit and cuGetExportTable up in the libcuda.so.1 already loaded and crashes
 * when the latter is missing (hsad run compiles .cu sources after the runtime opened the mock):
 * there is no export table here (CUDA_ERROR_NOT_SUPPORTED), and NVRTC compiles without it. */
res_t cuGetExportTable(const void **table, const void *id) {
  (void)id;
  *table = NULL;
  return 801;
}
res_t cuGetErrorName(res_t e, const char **s) {
  *s = e == 0 ? "CUDA_SUCCESS" : e == 1 ? "CUDA_ERROR_INVALID_VALUE" : e == 400 ? "CUDA_ERROR_INVALID_HANDLE"
     : e == 500 ? "CUDA_ERROR_NOT_FOUND" : e == 600 ? "CUDA_ERROR_NOT_READY"
     : e == 700 ? "CUDA_ERROR_ILLEGAL_ADDRESS" : e == 801 ? "CUDA_ERROR_NOT_SUPPORTED"
     : "CUDA_ERROR_UNKNOWN";
  return OK;
}
res_t cuGetErrorString(res_t e, const char **s) {
  *s = e == 700 ? "an illegal memory access was encountered" : e == 1 ? "invalid argument"
     : e == 801 ? "operation not supported" : "mock error";
  return OK;
}
res_t cuDeviceGetCount(int *n) { *n = inited ? 1 : 0; return inited ? OK : ENOTINIT; }
res_t cuDeviceGet(int *d, int ordinal) { *d = ordinal; return ordinal == 0 ? OK : EINVAL_; }
res_t cuDeviceGetName(char *name, int len, int dev) {
  (void)dev;
  strncpy(name, "hsad cuda-mock", (size_t)len);
  name[len - 1] = 0;
  return OK;
}
res_t cuDeviceGetAttribute(int *v, unsigned a, int dev) {
  (void)dev;
  switch (a) {
  case 1: *v = 1024; break;   case 2: case 3: *v = 1024; break; case 4: *v = 64; break;
  case 5: *v = 2147483647; break; case 6: case 7: *v = 65535; break;
  case 8: *v = 49152; break;  case 10: *v = 32; break; case 16: *v = 132; break;
  case 19: case 41: *v = 1; break; case 39: *v = 2048; break;
  case 75: *v = 9; break;     case 76: *v = 0; break; case 97: *v = 232448; break;
  case 122: *v = 1; break;    default: *v = 0; return EINVAL_;
  }
  return OK;
}
res_t cuDeviceTotalMem_v2(size_t *b, int dev) { (void)dev; *b = 1ull << 34; return OK; }
res_t cuDeviceGetPCIBusId(char *id, int len, int dev) {
  (void)dev;
  strncpy(id, "0000:00:00.0", (size_t)len);
  return OK;
}
static int ctx_token;
/* As the H200's driver 580 does: a sticky error survives cuDevicePrimaryCtxReset, the next
 * retain answers it (the process must be restarted). */
res_t cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  (void)dev;
  if (sticky) return sticky;
  *ctx = &ctx_token;
  return OK;
}
res_t cuDevicePrimaryCtxRelease_v2(int dev) { (void)dev; return OK; }
res_t cuDevicePrimaryCtxReset_v2(int dev) {
  (void)dev;
  ctx_resets++;
  for (int i = 0; i < NFUNCS; i++) max_dyn[i] = 0;
  return OK;
}
res_t cuCtxSetCurrent(void *ctx) { return ctx == &ctx_token ? OK : EINVAL_; }
/* A module's kernels: funcs itself (cuModuleLoadData, or no budget), or a copy built under the
 * JIT options of cuModuleLoadDataEx. */
typedef struct module { func_t *fn; } module_t;
static module_t module_plain;

/* Warps per SM the register file holds at r registers per thread (sm_90: 4 sub-partitions of
 * 16384 registers, a warp's registers in units of 256). */
static int warps_by_regs(int r) { return 16384 / ((r * 32 + 255) / 256 * 256) * 4; }

/* The mock's ptxas: the register cap of the options (CU_JIT_MAX_REGISTERS, raised to ptxas'
 * lower bound of 24; else CU_JIT_MAX_THREADS_PER_BLOCK T with CU_JIT_MIN_CTA_PER_SM M: the most
 * registers, in steps of 8, that keep M blocks of T threads resident), applied to every kernel:
 * registers down to the cap, `spill_per_reg` local bytes per register below `nospill` (a kernel
 * without a model: 4 per register below its own count). */
static void jit_budget(func_t *f, unsigned n, unsigned *opt, void **val) {
  int cap = 255, maxregs = 0, threads = 0, ctas = 0;
  for (unsigned i = 0; i < n; i++) {
    int v = (int)(uintptr_t)val[i];
    if (opt[i] == 0) maxregs = v;
    if (opt[i] == 32) threads = v;
    if (opt[i] == 31) ctas = v;
  }
  if (maxregs) {
    cap = maxregs < 24 ? 24 : maxregs;
  } else if (threads) {
    int warps = (threads + 31) / 32, want = ctas > 0 ? ctas : 1;
    for (cap = 248; cap > 24 && warps_by_regs(cap) / warps < want; cap -= 8) {}
    if (warps_by_regs(255) / warps >= want) cap = 255;
  }
  for (int i = 0; i < NFUNCS; i++) { /* no model: every register cut spills 4 bytes */
    uint32_t regs = f[i].regs ? f[i].regs : 32, nospill = f[i].nospill ? f[i].nospill : regs;
    f[i].max_threads = threads > 0 ? (uint32_t)threads : 0;
    if ((int)regs <= cap) continue;
    if ((int)nospill > cap)
      f[i].local += (nospill - (uint32_t)cap) * (f[i].spill_per_reg ? f[i].spill_per_reg : 4);
    f[i].regs = (uint32_t)cap;
  }
}

res_t cuModuleLoadData(void **m, const void *image) {
  (void)image;
  if (sticky) return sticky;
  module_plain.fn = funcs;
  *m = &module_plain;
  return OK;
}
res_t cuModuleLoadDataEx(void **m, const void *image, unsigned n, unsigned *opt, void **val) {
  (void)image;
  if (sticky) return sticky;
  if (n && (!opt || !val)) return EINVAL_;
  module_t *mod = malloc(sizeof *mod);
  mod->fn = malloc(sizeof funcs);
  memcpy(mod->fn, funcs, sizeof funcs);
  jit_budget(mod->fn, n, opt, val);
  *m = mod;
  return OK;
}
res_t cuModuleUnload(void *m) {
  if (m != &module_plain && m) {
    free(((module_t *)m)->fn);
    free(m);
  }
  return sticky ? sticky : OK;
}
res_t cuModuleGetFunction(void **f, void *m, const char *name) {
  func_t *fn = ((module_t *)m)->fn;
  for (int i = 0; i < NFUNCS; i++)
    if (!strcmp(fn[i].name, name)) { *f = &fn[i]; return OK; }
  return ENOTFOUND;
}
res_t cuModuleGetFunctionCount(unsigned *n, void *m) { (void)m; *n = NFUNCS; return OK; }
res_t cuModuleEnumerateFunctions(void **f, unsigned n, void *m) {
  func_t *fn = ((module_t *)m)->fn;
  for (unsigned i = 0; i < n && i < NFUNCS; i++) f[i] = &fn[i];
  return OK;
}
res_t cuFuncGetName(const char **name, void *f) { *name = ((func_t *)f)->name; return OK; }
res_t cuFuncLoad(void *f) { return f ? OK : 1; }
res_t cuFuncGetParamInfo(void *fn, size_t i, size_t *off, size_t *size) {
  func_t *f = fn;
  if (i >= f->nparams) return EINVAL_;
  *off = f->offset[i];
  *size = f->size[i];
  return OK;
}
res_t cuFuncGetAttribute(int *v, unsigned a, void *fn) {
  func_t *f = fn;
  int i = f->idx, regs = f->regs ? (int)f->regs : 32;
  int max = warps_by_regs(regs) * 32 < 1024 ? warps_by_regs(regs) * 32 : 1024;
  if (f->max_threads && (int)f->max_threads < max) max = (int)f->max_threads;
  switch (a) {
  case 0: *v = max; break; case 1: *v = 0; break; case 3: *v = (int)f->local; break;
  case 4: *v = regs; break;
  case 8: *v = max_dyn[i] ? max_dyn[i] : 49152; break; default: *v = 0; return EINVAL_;
  }
  return OK;
}
/* sm_90's limits: 2048 threads, 32 blocks, 65536 registers (allocated per warp in units of 256)
 * and 228 KiB of shared memory per SM (1 KiB reserved per block) */
res_t cuOccupancyMaxActiveBlocksPerMultiprocessor(int *n, void *fn, int block, size_t dyn) {
  func_t *f = fn;
  if (sticky) return sticky;
  if (block <= 0 || block > 1024) return EINVAL_;
  int regs = f->regs ? (int)f->regs : 32, warps = (block + 31) / 32;
  int b = 2048 / (warps * 32);
  if (warps_by_regs(regs) / warps < b) b = warps_by_regs(regs) / warps;
  if (f->max_threads && block > (int)f->max_threads) b = 0;
  if (b > 32) b = 32;
  if (dyn && (int)((233472) / (dyn + 1024)) < b) b = (int)(233472 / (dyn + 1024));
  *n = b;
  return OK;
}
res_t cuFuncSetAttribute(void *fn, unsigned a, int v) {
  if (a != 8 || v > 232448) return EINVAL_;
  max_dyn[((func_t *)fn)->idx] = v;
  return OK;
}
res_t cuStreamCreate(void **out, unsigned flags) {
  (void)flags;
  if (sticky) return sticky;
  stream_t *s = calloc(1, sizeof *s);
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cv, NULL);
  s->generation = ctx_resets;
  pthread_create(&s->thread, NULL, stream_main, s);
  *out = s;
  return OK;
}
res_t cuStreamDestroy_v2(void *h) {
  stream_t *s = h;
  if (s->generation != ctx_resets) { /* the reset destroyed it: the H200's driver 580 crashed */
    fprintf(stderr, "cuda-mock: cuStreamDestroy of a stream the context reset destroyed "
            "(the H200's driver crashes here: SIGSEGV in libcuda)\n");
    abort();
  }
  pthread_mutex_lock(&s->lock);
  s->quit = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->lock);
  pthread_join(s->thread, NULL);
  free(s);
  return sticky ? sticky : OK;
}
res_t cuStreamQuery(void *h) {
  stream_t *s = h;
  if (sticky) return sticky;
  pthread_mutex_lock(&s->lock);
  int idle = !s->head && !s->busy;
  pthread_mutex_unlock(&s->lock);
  return sticky ? sticky : idle ? OK : ENOTREADY;
}
res_t cuStreamSynchronize(void *h) {
  stream_t *s = h;
  pthread_mutex_lock(&s->lock);
  while ((s->head || s->busy) && !sticky) pthread_cond_wait(&s->cv, &s->lock);
  pthread_mutex_unlock(&s->lock);
  return sticky ? sticky : OK;
}
/* A kernel launch as an op (the launch's checks; *out NULL on error). */
static res_t kernel_op(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                       unsigned bz, unsigned shared, void **params, void **extra, op_t **out) {
  func_t *f = fn;
  int i = f->idx;
  *out = NULL;
  if (sticky) return sticky;
  if (bx * by * bz > 1024 || !gx || !bx) return EINVAL_;
  if (shared > (unsigned)(max_dyn[i] ? max_dyn[i] : 49152)) return EINVAL_;
  op_t *o = calloc(1, sizeof *o);
  o->kind = 0, o->f = f, o->shared = shared;
  o->grid[0] = gx, o->grid[1] = gy, o->grid[2] = gz;
  o->block[0] = bx, o->block[1] = by, o->block[2] = bz;
  if (extra) {
    void *buf = NULL;
    size_t size = 0;
    for (int k = 0; extra[k]; k += 2) {
      if (extra[k] == (void *)1) buf = extra[k + 1];
      else if (extra[k] == (void *)2) size = *(size_t *)extra[k + 1];
      else { free(o); return EINVAL_; }
    }
    uint32_t need = f->nparams ? f->offset[f->nparams - 1] + f->size[f->nparams - 1] : 0;
    if (!buf || size != need || size > sizeof o->params) { free(o); return EINVAL_; }
    memcpy(o->params, buf, size);
  } else if (params) {
    for (uint32_t k = 0; k < f->nparams; k++) memcpy(o->params + f->offset[k], params[k], f->size[k]);
  } else if (f->nparams) {
    free(o);
    return EINVAL_;
  }
  *out = o;
  return OK;
}
res_t cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                     unsigned bz, unsigned shared, void *h, void **params, void **extra) {
  op_t *o;
  res_t r = kernel_op(fn, gx, gy, gz, bx, by, bz, shared, params, extra, &o);
  return r ? r : enqueue(h, o);
}
res_t cuStreamWriteValue64_v2(void *h, uint64_t addr, uint64_t v, unsigned flags) {
  (void)flags;
  op_t *o = calloc(1, sizeof *o);
  o->kind = 1, o->addr = (volatile uint64_t *)(uintptr_t)addr, o->value = v;
  return enqueue(h, o);
}
res_t cuStreamWaitValue64_v2(void *h, uint64_t addr, uint64_t v, unsigned flags) {
  if (flags != 0) return EINVAL_; /* GEQ only */
  op_t *o = calloc(1, sizeof *o);
  o->kind = 2, o->addr = (volatile uint64_t *)(uintptr_t)addr, o->value = v;
  return enqueue(h, o);
}
res_t cuMemAlloc_v2(uint64_t *p, size_t n) {
  if (sticky) return sticky;
  void *m = aligned_alloc(256, (n + 255) & ~(size_t)255);
  if (!m) return 2;
  *p = (uint64_t)(uintptr_t)m;
  range_add(m, n, 2);
  return OK;
}
res_t cuMemFree_v2(uint64_t p) {
  range_del((void *)(uintptr_t)p);
  free((void *)(uintptr_t)p);
  return sticky ? sticky : OK;
}
res_t cuMemHostAlloc(void **p, size_t n, unsigned flags) {
  (void)flags;
  if (sticky) return sticky;
  *p = calloc(1, n);
  if (*p) range_add(*p, n, 1);
  return *p ? OK : 2;
}
res_t cuMemFreeHost(void *p) {
  range_del(p);
  free(p);
  return sticky ? sticky : OK;
}
res_t cuMemHostGetDevicePointer_v2(uint64_t *d, void *h, unsigned flags) {
  (void)flags;
  *d = (uint64_t)(uintptr_t)h;
  return sticky ? sticky : OK;
}
static int range_known(uint64_t p) {
  int known = 0;
  pthread_mutex_lock(&ranges_lock);
  for (range_t *q = ranges; q && !known; q = q->next) known = p >= q->base && p - q->base < q->bytes;
  pthread_mutex_unlock(&ranges_lock);
  return known;
}
/* For tests: copies so far with a side the driver does not know (pageable host memory). */
static _Atomic long pageable_copies;
long cuda_mock_pageable_copies(void) { return pageable_copies; }
res_t cuMemcpyAsync(uint64_t dst, uint64_t src, size_t n, void *h) {
  if (!range_known(dst) || !range_known(src)) pageable_copies++;
  op_t *o = calloc(1, sizeof *o);
  o->kind = 3, o->dst = (void *)(uintptr_t)dst, o->src = (const void *)(uintptr_t)src, o->bytes = n;
  return enqueue(h, o);
}
res_t cuMemsetD8Async(uint64_t dst, unsigned char v, size_t n, void *h) {
  op_t *o = calloc(1, sizeof *o);
  o->kind = 4, o->dst = (void *)(uintptr_t)dst, o->value = v, o->bytes = n, o->esize = 1;
  return enqueue(h, o);
}
res_t cuMemsetD16Async(uint64_t dst, unsigned short v, size_t n, void *h) {
  op_t *o = calloc(1, sizeof *o);
  o->kind = 4, o->dst = (void *)(uintptr_t)dst, o->value = v, o->bytes = 2 * n, o->esize = 2;
  return enqueue(h, o);
}
res_t cuMemsetD32Async(uint64_t dst, unsigned v, size_t n, void *h) {
  op_t *o = calloc(1, sizeof *o);
  o->kind = 4, o->dst = (void *)(uintptr_t)dst, o->value = v, o->bytes = 4 * n, o->esize = 4;
  return enqueue(h, o);
}
/* pinned registration: host memory is device memory here */
res_t cuMemHostRegister_v2(void *p, size_t n, unsigned flags) {
  (void)flags;
  if (sticky) return sticky;
  if (!p || !n) return EINVAL_;
  range_add(p, n, 1);
  return OK;
}
res_t cuMemHostUnregister(void *p) {
  range_del(p);
  return sticky ? sticky : OK;
}
/* MEMORY_TYPE (2) only; pageable memory is CUDA_ERROR_INVALID_VALUE, as the driver answers */
res_t cuPointerGetAttribute(void *data, unsigned attr, uint64_t ptr) {
  if (attr != 2) return EINVAL_;
  res_t r = EINVAL_;
  pthread_mutex_lock(&ranges_lock);
  for (range_t *q = ranges; q; q = q->next)
    if (ptr >= q->base && ptr - q->base < q->bytes) {
      *(unsigned *)data = q->type;
      r = OK;
      break;
    }
  pthread_mutex_unlock(&ranges_lock);
  return r;
}
res_t cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t n, void *h) {
  return cuMemcpyAsync(dst, (uint64_t)(uintptr_t)src, n, h);
}
res_t cuMemcpyDtoHAsync_v2(void *dst, uint64_t src, size_t n, void *h) {
  return cuMemcpyAsync((uint64_t)(uintptr_t)dst, src, n, h);
}
/* events: a counter the recording stream writes (its nth record writes n) and waiters wait
 * for (GEQ the last record's n), on the streams' FIFOs as value writes and waits */
typedef struct {
  volatile uint64_t count;
  uint64_t recorded;
  volatile uint64_t ns;     /* CLOCK_MONOTONIC when the stream reached the last record */
} event_t;
res_t cuEventCreate(void **e, unsigned flags) {
  (void)flags;
  if (sticky) return sticky;
  *e = calloc(1, sizeof(event_t));
  return *e ? OK : 2;
}
res_t cuEventDestroy_v2(void *e) { free(e); return sticky ? sticky : OK; }
res_t cuEventRecord(void *e, void *h) {
  event_t *ev = e;
  op_t *o = calloc(1, sizeof *o);
  o->kind = 6, o->addr = &ev->count, o->value = ++ev->recorded, o->stamp = &ev->ns;
  return enqueue(h, o);
}
res_t cuEventQuery(void *e) {
  event_t *ev = e;
  if (sticky) return sticky;
  return __atomic_load_n(&ev->count, __ATOMIC_ACQUIRE) >= ev->recorded ? OK : ENOTREADY;
}
res_t cuEventSynchronize(void *e) {
  event_t *ev = e;
  while (!sticky && __atomic_load_n(&ev->count, __ATOMIC_ACQUIRE) < ev->recorded) {
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
  }
  return sticky ? sticky : OK;
}
/* as the driver: both events recorded and reached, else CUDA_ERROR_NOT_READY (600) or, never
 * recorded, CUDA_ERROR_INVALID_HANDLE (400) */
res_t cuEventElapsedTime_v2(float *ms, void *a, void *b) {
  event_t *s = a, *t = b;
  if (sticky) return sticky;
  if (!s->recorded || !t->recorded) return EHANDLE;
  if (cuEventQuery(a) || cuEventQuery(b)) return ENOTREADY;
  *ms = (float)(((double)t->ns - (double)s->ns) / 1e6);
  return OK;
}
res_t cuStreamWaitEvent(void *h, void *e, unsigned flags) {
  event_t *ev = e;
  if (flags) return EINVAL_;
  op_t *o = calloc(1, sizeof *o);
  o->kind = 2, o->addr = &ev->count, o->value = ev->recorded;
  return enqueue(h, o);
}
typedef struct {
  unsigned gx, gy, gz, bx, by, bz, shared;
  void *stream;
  void *attrs;
  unsigned nattrs;
} launch_config_t;
res_t cuLaunchKernelEx(const launch_config_t *c, void *fn, void **params, void **extra) {
  if (c->nattrs) return EINVAL_; /* attributes are not modelled */
  return cuLaunchKernel(fn, c->gx, c->gy, c->gz, c->bx, c->by, c->bz, c->shared, c->stream,
                        params, extra);
}

/* ---- graphs ------------------------------------------------------------------------------ */
typedef struct gnode {
  struct graph *g;
  int index;
  op_t op;                        /* what a launch enqueues (kind 5: an empty node) */
} gnode_t;
typedef struct graph {
  gnode_t **nodes;
  int n, cap;
} graph_t;
typedef struct gexec {
  graph_t *g;
  op_t *ops;
  int n;
} gexec_t;
typedef struct {
  void *func;
  unsigned gx, gy, gz, bx, by, bz, shared;
  void **params, **extra;
  void *kern, *ctx;
} kernel_node_params_t;
typedef struct {
  size_t src_x, src_y, src_z, src_lod;
  unsigned src_type;
  const void *src_host;
  uint64_t src_device;
  void *src_array, *reserved0;
  size_t src_pitch, src_height;
  size_t dst_x, dst_y, dst_z, dst_lod;
  unsigned dst_type;
  void *dst_host;
  uint64_t dst_device;
  void *dst_array, *reserved1;
  size_t dst_pitch, dst_height;
  size_t width, height, depth;
} memcpy3d_t;
typedef struct {
  uint64_t dst;
  size_t pitch;
  unsigned value, esize;
  size_t width, height;
} memset_params_t;

res_t cuGraphCreate(void **out, unsigned flags) {
  if (flags) return EINVAL_;
  if (sticky) return sticky;
  *out = calloc(1, sizeof(graph_t));
  return *out ? OK : 2;
}
res_t cuGraphDestroy(void *h) {
  graph_t *g = h;
  for (int i = 0; i < g->n; i++) free(g->nodes[i]);
  free(g->nodes);
  free(g);
  return OK;
}
static res_t add_node(void **out, void *h, void *const *deps, size_t ndeps, const op_t *op) {
  graph_t *g = h;
  if (sticky) return sticky;
  for (size_t i = 0; i < ndeps; i++)
    if (!deps[i] || ((gnode_t *)deps[i])->g != g) return EINVAL_;
  if (g->n == g->cap) {
    int c = g->cap ? 2 * g->cap : 16;
    gnode_t **nn = realloc(g->nodes, (size_t)c * sizeof *nn);
    if (!nn) return 2;
    g->nodes = nn, g->cap = c;
  }
  gnode_t *x = calloc(1, sizeof *x);
  if (!x) return 2;
  x->g = g, x->index = g->n, x->op = *op;
  g->nodes[g->n++] = x;
  *out = x;
  return OK;
}
static res_t kernel_node_op(const kernel_node_params_t *p, op_t *op) {
  op_t *o;
  if (!p->func || p->kern) return EINVAL_;
  res_t r = kernel_op(p->func, p->gx, p->gy, p->gz, p->bx, p->by, p->bz, p->shared, p->params,
                      p->extra, &o);
  if (r) return r;
  *op = *o;
  free(o);
  return OK;
}
static res_t memcpy_node_op(const memcpy3d_t *c, op_t *op) {
  if (c->src_type != 4 || c->dst_type != 4 || c->height != 1 || c->depth != 1 || !c->width)
    return EINVAL_;
  if (getenv("CUDA_MOCK_REFUSE_MEMCPY_NODE")) return 801; /* CUDA_ERROR_NOT_SUPPORTED */
  memset(op, 0, sizeof *op);
  op->kind = 3, op->dst = (void *)(uintptr_t)c->dst_device;
  op->src = (const void *)(uintptr_t)c->src_device, op->bytes = c->width;
  return OK;
}
static res_t memset_node_op(const memset_params_t *m, op_t *op) {
  if ((m->esize != 1 && m->esize != 2 && m->esize != 4) || m->height != 1 || !m->width)
    return EINVAL_;
  memset(op, 0, sizeof *op);
  op->kind = 4, op->dst = (void *)(uintptr_t)m->dst, op->value = m->value, op->esize = m->esize;
  op->bytes = m->width * m->esize;
  return OK;
}
res_t cuGraphAddEmptyNode(void **out, void *g, void *const *deps, size_t ndeps) {
  op_t op = {.kind = 5};
  return add_node(out, g, deps, ndeps, &op);
}
res_t cuGraphAddKernelNode_v2(void **out, void *g, void *const *deps, size_t ndeps,
                              const kernel_node_params_t *p) {
  op_t op;
  res_t r = kernel_node_op(p, &op);
  return r ? r : add_node(out, g, deps, ndeps, &op);
}
res_t cuGraphAddMemcpyNode(void **out, void *g, void *const *deps, size_t ndeps,
                           const memcpy3d_t *c, void *ctx) {
  op_t op;
  res_t r = ctx == &ctx_token ? memcpy_node_op(c, &op) : EINVAL_;
  return r ? r : add_node(out, g, deps, ndeps, &op);
}
res_t cuGraphAddMemsetNode(void **out, void *g, void *const *deps, size_t ndeps,
                           const memset_params_t *m, void *ctx) {
  op_t op;
  res_t r = ctx == &ctx_token ? memset_node_op(m, &op) : EINVAL_;
  return r ? r : add_node(out, g, deps, ndeps, &op);
}
res_t cuGraphInstantiateWithFlags(void **out, void *h, unsigned long long flags) {
  graph_t *g = h;
  if (flags) return EINVAL_;
  if (sticky) return sticky;
  gexec_t *x = calloc(1, sizeof *x);
  x->ops = calloc((size_t)g->n + 1, sizeof *x->ops);
  x->g = g, x->n = g->n;
  for (int i = 0; i < g->n; i++) x->ops[i] = g->nodes[i]->op;
  *out = x;
  return OK;
}
res_t cuGraphExecDestroy(void *h) {
  gexec_t *x = h;
  free(x->ops);
  free(x);
  return OK;
}
res_t cuGraphLaunch(void *h, void *stream) {
  gexec_t *x = h;
  if (sticky) return sticky;
  if (!stream) return EHANDLE;
  for (int i = 0; i < x->n; i++) {
    if (x->ops[i].kind == 5) continue;
    op_t *o = malloc(sizeof *o);
    *o = x->ops[i];
    res_t r = enqueue(stream, o);
    if (r) return r;
  }
  return OK;
}
static op_t *exec_op(gexec_t *x, void *node, int kind) {
  gnode_t *n = node;
  if (!n || n->g != x->g || n->index >= x->n || x->ops[n->index].kind != kind) return NULL;
  return &x->ops[n->index];
}
res_t cuGraphExecKernelNodeSetParams_v2(void *h, void *node, const kernel_node_params_t *p) {
  op_t *at = exec_op(h, node, 0), op;
  if (!at) return EINVAL_;
  res_t r = kernel_node_op(p, &op);
  if (!r) *at = op;
  return r;
}
res_t cuGraphExecMemcpyNodeSetParams(void *h, void *node, const memcpy3d_t *c, void *ctx) {
  op_t *at = exec_op(h, node, 3), op;
  if (!at || ctx != &ctx_token) return EINVAL_;
  res_t r = memcpy_node_op(c, &op);
  if (!r) *at = op;
  return r;
}
res_t cuGraphExecMemsetNodeSetParams(void *h, void *node, const memset_params_t *m, void *ctx) {
  op_t *at = exec_op(h, node, 4), op;
  if (!at || ctx != &ctx_token) return EINVAL_;
  res_t r = memset_node_op(m, &op);
  if (!r) *at = op;
  return r;
}
