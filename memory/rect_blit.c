/* rect_blit.c - the 2-D/3-D copy kernel (kernels/copy_rect.cl, `hsad_copy_rect`) for boxes the
 * SDMA rectangle copy cannot take: GPUs without an SDMA engine (kfd-emu; a real GPU under
 * HSA_ENABLE_SDMA=0) or pitches/pointers that are not multiples of 4, when the box needs at
 * least mem_blit_min_dmas() row DMAs (copy_rect.c chooses).
 *
 * The source text of kernels/copy_rect.cl is built into the library (.incbin below) and
 * compiled with comgr (hsad_codeobj_compile, as fusion/blit.c compiles the graph copy kernels)
 * for the processor of the GPU that runs it, once per processor per process; the code object
 * carries its source (hsad_codeobj_compile appends it), so kfd-emu runs the kernel from that
 * source through POCL (no twin). Each device gets, on first use, the program and one queue of
 * its own (64 packets), kept until the runtime closes: the kernel cannot go on the copy queue,
 * whose barrier waits for the copy itself. On that queue: a barrier after the copy's
 * dependencies (completions), the dispatch (BARRIER bit: in order), then a barrier-AND that
 * decrements the caller's signal once the kernel completed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codeobj/hsad_codeobj_compile.h"
#include "memory/mem_internal.h"

/* kernels/copy_rect.cl's bytes (make runs the compiler in the repository root; memory/
 * module.mk makes the object depend on the file) */
__asm__(".section .rodata\n"
        ".globl mem_copy_rect_cl\n.hidden mem_copy_rect_cl\n"
        ".globl mem_copy_rect_cl_end\n.hidden mem_copy_rect_cl_end\n"
        "mem_copy_rect_cl:\n.incbin \"kernels/copy_rect.cl\"\nmem_copy_rect_cl_end:\n"
        ".previous\n");
extern const char mem_copy_rect_cl[], mem_copy_rect_cl_end[];

typedef struct blit_dev {
  uint64_t gen;             /* runtime generation of the fields below */
  hsad_program_t *program;
  const hsad_device_kernel_t *kernel;
  hsad_queue_t *queue;
  hsad_status_t failed;     /* compile/load/queue refused: no retry this generation */
  char why[512];
} blit_dev_t;

static pthread_mutex_t blit_lock = PTHREAD_MUTEX_INITIALIZER;
static blit_dev_t blit_devs[MEM_MAX_DEVICES];
enum { BLIT_CACHE = 16 };
static struct {
  char processor[64];
  void *elf;
  size_t size;
} blit_cache[BLIT_CACHE];
/* programs and queues of a closed runtime, destroyed later (mem_blit_reap) */
static hsad_program_t *dead_prog[4 * MEM_MAX_DEVICES];
static hsad_queue_t *dead_queue[4 * MEM_MAX_DEVICES];
static uint32_t dead_n;

static _Atomic uint64_t rect_stats[4];

void mem_rect_count(int path) { atomic_fetch_add_explicit(&rect_stats[path], 1, memory_order_relaxed); }

hsad_status_t hsad_copy_rect_stats(hsad_copy_rect_stats_t *out) {
  if (!out) return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "hsad_copy_rect_stats: out is NULL");
  out->sdma = atomic_load_explicit(&rect_stats[MEM_RECT_SDMA], memory_order_relaxed);
  out->rows = atomic_load_explicit(&rect_stats[MEM_RECT_ROWS], memory_order_relaxed);
  out->blit = atomic_load_explicit(&rect_stats[MEM_RECT_BLIT], memory_order_relaxed);
  out->staged = atomic_load_explicit(&rect_stats[MEM_RECT_STAGED], memory_order_relaxed);
  return HSAD_OK;
}

uint64_t mem_blit_min_dmas(void) {
  const char *e = getenv("HSAD_RECT_BLIT_MIN_DMAS");
  if (!e || !*e) return HSAD_COPY_RECT_BLIT_MIN_DMAS;
  char *end = NULL;
  unsigned long long v = strtoull(e, &end, 10);
  if (*end || end == e) return HSAD_COPY_RECT_BLIT_MIN_DMAS;
  return v ? (uint64_t)v : UINT64_MAX; /* 0: never */
}

void mem_blit_close(void) { /* runtime lock held (mem_async_close): no runtime call here */
  pthread_mutex_lock(&blit_lock);
  for (uint32_t i = 0; i < MEM_MAX_DEVICES; i++) {
    blit_dev_t *b = &blit_devs[i];
    if (dead_n < 4 * MEM_MAX_DEVICES && (b->program || b->queue)) {
      dead_prog[dead_n] = b->program;
      dead_queue[dead_n++] = b->queue;
    }
    memset(b, 0, sizeof *b);
  }
  pthread_mutex_unlock(&blit_lock);
}

void mem_blit_reap(void) { /* no memory/ or runtime lock held */
  pthread_mutex_lock(&blit_lock);
  uint32_t n = dead_n;
  hsad_program_t *p[4 * MEM_MAX_DEVICES];
  hsad_queue_t *q[4 * MEM_MAX_DEVICES];
  memcpy(p, dead_prog, n * sizeof p[0]);
  memcpy(q, dead_queue, n * sizeof q[0]);
  dead_n = 0;
  pthread_mutex_unlock(&blit_lock);
  for (uint32_t i = 0; i < n; i++) {
    hsad_queue_destroy(q[i]);
    hsad_program_destroy(p[i]);
  }
}

/* The code object for `processor`, compiled on first use (kept for the process). */
static hsad_status_t blit_object(const char *processor, const void **out_elf, size_t *out_size) {
  pthread_mutex_lock(&blit_lock);
  uint32_t i = 0;
  while (i < BLIT_CACHE && blit_cache[i].elf && strcmp(blit_cache[i].processor, processor)) i++;
  void *elf = i < BLIT_CACHE ? blit_cache[i].elf : NULL;
  size_t n = elf ? blit_cache[i].size : 0;
  pthread_mutex_unlock(&blit_lock);
  if (i == BLIT_CACHE)
    return hsad_fail(HSAD_ERR_RESOURCE_EXHAUSTED, "more than %u processors in one process",
                     (unsigned)BLIT_CACHE);
  if (!elf) { /* compiled outside the lock (0.2 s); a racing thread's copy is dropped */
    hsad_compile_options_t o = {.target = processor, .opt_level = 2, .code_object_version = 5};
    hsad_status_t s = hsad_codeobj_compile(mem_copy_rect_cl,
                                           (size_t)(mem_copy_rect_cl_end - mem_copy_rect_cl),
                                           "kernels/copy_rect.cl", &o, &elf, &n, NULL);
    if (s) return s;
    pthread_mutex_lock(&blit_lock);
    if (!blit_cache[i].elf) {
      snprintf(blit_cache[i].processor, sizeof blit_cache[i].processor, "%s", processor);
      blit_cache[i].size = n;
      blit_cache[i].elf = elf;
    } else {
      free(elf);
    }
    elf = blit_cache[i].elf;
    n = blit_cache[i].size;
    pthread_mutex_unlock(&blit_lock);
  }
  *out_elf = elf;
  *out_size = n;
  return HSAD_OK;
}

/* Program, kernel and queue of device index `bd` (made on first use, outside every lock). */
static hsad_status_t blit_get(uint32_t bd, blit_dev_t *out) {
  uint64_t gen = atomic_load_explicit(&mem_st.generation, memory_order_acquire);
  pthread_mutex_lock(&blit_lock);
  blit_dev_t cur = blit_devs[bd];
  pthread_mutex_unlock(&blit_lock);
  if (cur.gen == gen && cur.queue) return *out = cur, HSAD_OK;
  if (cur.gen == gen && cur.failed) return hsad_fail(cur.failed, "%s", cur.why);
  hsad_device_t *device = mem_st.devices[bd];
  const char *processor = hsad_device_info(device)->name;
  blit_dev_t b = {.gen = gen};
  const void *elf = NULL;
  size_t size = 0;
  hsad_status_t s = strlen(processor) < sizeof blit_cache[0].processor
                        ? blit_object(processor, &elf, &size)
                        : hsad_fail(HSAD_ERR_UNSUPPORTED, "processor name too long");
  if (!s) s = hsad_program_load_memory(device, elf, size, "hsad_copy_rect", &b.program);
  if (!s) s = hsad_program_kernel(b.program, "hsad_copy_rect", &b.kernel);
  if (!s) s = hsad_queue_create(device, &(hsad_queue_options_t){.size = 64}, &b.queue);
  if (s) {
    b.failed = s;
    snprintf(b.why, sizeof b.why, "the 2-D/3-D copy kernel (kernels/copy_rect.cl) for %s: %s",
             processor, hsad_last_error());
    hsad_program_destroy(b.program);
    b.program = NULL;
  }
  pthread_mutex_lock(&blit_lock);
  bool won = atomic_load_explicit(&mem_st.generation, memory_order_acquire) == gen &&
             blit_devs[bd].gen != gen;
  if (won) blit_devs[bd] = b;
  cur = blit_devs[bd];
  pthread_mutex_unlock(&blit_lock);
  if (!won) { /* another thread won, or the runtime closed meanwhile */
    hsad_queue_destroy(b.queue);
    hsad_program_destroy(b.program);
    if (cur.gen != gen) return hsad_fail(HSAD_ERR_CLOSED, "the runtime was closed");
  }
  if (cur.failed) return hsad_fail(cur.failed, "%s", cur.why);
  *out = cur;
  return HSAD_OK;
}

bool mem_blit_fits(const mem_rect_t *g) {
  uint64_t per_row = (g->width + 15) / 16, rows = 0, items = 0;
  return g->height <= UINT32_MAX && !__builtin_mul_overflow(g->height, g->depth, &rows) &&
         rows <= UINT32_MAX && per_row <= UINT32_MAX &&
         !__builtin_mul_overflow(rows, per_row, &items) && items <= UINT32_MAX - 255;
}

hsad_status_t mem_blit_rect(uint32_t bd, const mem_rect_t *g, const hsad_completion_t *deps,
                            uint32_t dep_count, hsa_signal_t done, uint64_t deadline_ns,
                            bool *out_in_flight) {
  *out_in_flight = false;
  blit_dev_t b = {0};
  hsad_status_t s = blit_get(bd, &b);
  if (s) return s;
  uint64_t dl = deadline_ns ? deadline_ns : hsad_now_ns() + 10000000000ull;
  if (dep_count && (s = hsad_queue_barrier(b.queue, deps, dep_count, dl, NULL))) return s;
  uint64_t dpitch = g->dpitch, dslice = g->depth > 1 ? g->dslice : 0, spitch = g->spitch;
  uint64_t sslice = g->depth > 1 ? g->sslice : 0, width = g->width;
  uint32_t height = (uint32_t)g->height, rows = (uint32_t)(g->height * g->depth);
  uint32_t per_row = (uint32_t)((g->width + 15) / 16);
  uint64_t items = (uint64_t)rows * per_row;
  hsad_karg_t a[10] = {HSAD_KARG_PTR(g->dst), HSAD_KARG_PTR(g->src), HSAD_KARG_VAL(dpitch),
                       HSAD_KARG_VAL(dslice), HSAD_KARG_VAL(spitch), HSAD_KARG_VAL(sslice),
                       HSAD_KARG_VAL(width), HSAD_KARG_VAL(height), HSAD_KARG_VAL(rows),
                       HSAD_KARG_VAL(per_row)};
  /* whole workgroups of 256 (one geometry: kfd-emu's POCL builds it once) */
  hsad_launch_t l = {.dims = 1, .grid = {(uint32_t)((items + 255) / 256 * 256), 1, 1},
                     .block = {256, 1, 1}, .args = a, .arg_count = 10};
  hsad_completion_t kc;
  if ((s = hsad_kernel_dispatch(b.queue, b.kernel, &l, dl, &kc, NULL))) return s;
  *out_in_flight = true;
  /* the barrier-AND after it (BARRIER bit) decrements `done` once the kernel completed */
  if (!hsad_queue_barrier_signals(b.queue, NULL, 0, NULL, 0, done, dl, NULL)) return HSAD_OK;
  /* no room for it: the kernel is in flight, so wait for it here and decrement ourselves */
  (void)hsad_completion_wait(&kc, HSAD_DEADLINE_NEVER);
  mem_rocr.hsa_signal_subtract_screlease(done, 1);
  return HSAD_OK;
}
