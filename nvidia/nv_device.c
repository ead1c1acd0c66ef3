/* nv_device.c - the NVIDIA backend's devices, contexts, faults, programs and kernels, and its
 * table (backend.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvidia/nv_internal.h"

nv_dev_t nv_devs[NV_MAX_DEVICES];
uint32_t nv_dev_count;

static _Thread_local nv_context_t nv_tls_ctx;
static _Thread_local uint64_t nv_tls_gen;

hsad_status_t nv_ctx_enter(nv_dev_t *dev) {
  uint64_t gen = atomic_load_explicit(&dev->generation, memory_order_acquire);
  if (__builtin_expect(nv_tls_ctx == dev->ctx && nv_tls_gen == gen, 1)) return HSAD_OK;
  nv_result_t r = nv_cu.ctx_set_current(dev->ctx);
  if (r != NV_SUCCESS) return nv_fail(dev, r, "cuCtxSetCurrent(device %u)", dev->info.index);
  nv_tls_ctx = dev->ctx;
  nv_tls_gen = gen;
  return HSAD_OK;
}

bool nv_error_is_fatal(nv_result_t r) {
  /* cuda.h: 700 ILLEGAL_ADDRESS, 701 LAUNCH_OUT_OF_RESOURCES is not sticky, 702 LAUNCH_TIMEOUT,
   * 714 HARDWARE_STACK_ERROR, 715 ILLEGAL_INSTRUCTION, 716 MISALIGNED_ADDRESS,
   * 717 INVALID_ADDRESS_SPACE, 718 INVALID_PC, 719 LAUNCH_FAILED, 720 COOPERATIVE_LAUNCH_TOO_LARGE
   * is not sticky; 999 UNKNOWN. */
  return r == 700 || r == 702 || (r >= 714 && r <= 719) || r == 999;
}

hsad_status_t nv_fail(nv_dev_t *dev, nv_result_t r, const char *fmt, ...) {
  char what[512], err[192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (dev && nv_error_is_fatal(r)) {
    nv_device_fault(dev, r, what);
    return hsad_fail(HSAD_ERR_QUEUE_ERROR, "%s", dev->lost_msg);
  }
  return hsad_fail(HSAD_ERR_DRIVER, "%s: %s", what, nv_cuda_error(r, err, sizeof err));
}

void nv_device_fault(nv_dev_t *dev, nv_result_t r, const char *where) {
  pthread_mutex_lock(&dev->lock);
  if (!atomic_load_explicit(&dev->lost, memory_order_relaxed)) {
    char err[192];
    snprintf(dev->lost_msg, sizeof dev->lost_msg,
             "device %u (%s, %s) faulted: %s, seen by %s; its CUDA context is lost with every "
             "queue, program and allocation made in it", dev->info.index, dev->info.product_name,
             dev->info.name, nv_cuda_error(r, err, sizeof err), where);
    atomic_store_explicit(&dev->lost, 1, memory_order_release);
  }
  for (nv_queue_t *q = dev->queues; q; q = q->next) {
    if (atomic_load_explicit(&q->error, memory_order_acquire)) continue;
    snprintf(q->error_msg, sizeof q->error_msg, "queue %llu on %s; %s",
             (unsigned long long)q->uid, dev->lost_msg,
             q->shared ? "a shared queue: hsad_device_queue hands out its replacement"
                       : "destroy it and create a new queue (that resets the device's context)");
    /* release: error_msg before error (waiters read the message after seeing error) */
    atomic_store_explicit(&q->error, HSAD_ERR_QUEUE_ERROR, memory_order_release);
  }
  pthread_mutex_unlock(&dev->lock);
}

hsad_status_t nv_device_recover(nv_dev_t *dev) {
  if (atomic_load_explicit(&dev->dead, memory_order_acquire))
    return hsad_fail(HSAD_ERR_QUEUE_ERROR, "%s", dev->lost_msg);
  /* the faulted context goes entirely: off this thread, every retain of ours released, then
   * reset (a context with outstanding retains kept its sticky error across the reset on the
   * H200: the next retain answered CUDA_ERROR_ILLEGAL_ADDRESS) */
  (void)nv_cu.ctx_set_current(NULL);
  for (; dev->retains; dev->retains--) (void)nv_cu.primary_ctx_release(dev->cu);
  nv_result_t r = nv_cu.primary_ctx_reset(dev->cu);
  /* From here the old context's objects are gone whatever comes next: a new generation, so
   * no queue, program or allocation of the old one is handed to the driver again (on the
   * H200, cuStreamDestroy of a faulted queue's stream after the reset crashed inside libcuda
   * when the retain below failed and the runtime closed) */
  atomic_fetch_add_explicit(&dev->generation, 1, memory_order_acq_rel);
  if (r != NV_SUCCESS) return nv_fail(NULL, r, "cuDevicePrimaryCtxReset(device %u)", dev->info.index);
  nv_context_t ctx = NULL;
  r = nv_cu.primary_ctx_retain(&ctx, dev->cu);
  if (r != NV_SUCCESS && nv_error_is_fatal(r)) {
    /* Seen on the H200 (driver 580, CUDA 13.0): a sticky error (CUDA_ERROR_ILLEGAL_ADDRESS)
     * survives cuDevicePrimaryCtxReset, the next retain answers it again. NVIDIA documents
     * that after such errors the process must be restarted to use CUDA again. */
    char err[192];
    size_t n = strlen(dev->lost_msg);
    snprintf(dev->lost_msg + n, sizeof dev->lost_msg - n, "; the CUDA driver keeps the error "
             "after cuDevicePrimaryCtxReset (cuDevicePrimaryCtxRetain answers %s): restart the "
             "process to use the device again (CUDA's sticky errors)",
             nv_cuda_error(r, err, sizeof err));
    atomic_store_explicit(&dev->dead, 1, memory_order_release);
    return hsad_fail(HSAD_ERR_QUEUE_ERROR, "%s", dev->lost_msg);
  }
  if (r != NV_SUCCESS) return nv_fail(NULL, r, "cuDevicePrimaryCtxRetain(device %u)", dev->info.index);
  dev->retains++;
  dev->ctx = ctx;
  dev->copyq = NULL; /* its stream went with the context; the list below frees its host part */
  dev->shared = NULL;
  atomic_store_explicit(&dev->lost, 0, memory_order_release);
  return HSAD_OK;
}

/* ---- discovery ------------------------------------------------------------------------ */

static int nv_attr(nv_dev_t *d, nv_device_attribute_t a) {
  int v = 0;
  if (nv_cu.device_get_attribute(&v, a, d->cu) != NV_SUCCESS) v = 0;
  return v;
}

static void nv_read_line(const char *path, char *out, size_t size) {
  FILE *f = fopen(path, "r");
  out[0] = '\0';
  if (!f) return;
  if (fgets(out, (int)size, f)) out[strcspn(out, "\n")] = '\0';
  fclose(f);
}

/* The kernel driver's version: /sys/module/nvidia/version, else the NVRM line of
 * /proc/driver/nvidia/version ("... Kernel Module  580.159.04  ..."). */
static void nv_driver_version(char *out, size_t size) {
  nv_read_line("/sys/module/nvidia/version", out, size);
  if (out[0]) return;
  char line[256];
  nv_read_line("/proc/driver/nvidia/version", line, sizeof line);
  const char *m = strstr(line, "Kernel Module");
  if (m && sscanf(m + 13, " %31s", out) == 1) return;
  out[0] = '\0';
}

static uint32_t nv_clip(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v; }

static void nv_describe_one(nv_dev_t *d, uint32_t ordinal) {
  hsad_device_info_t *i = &d->info;
  memset(i, 0, sizeof *i);
  i->vendor = HSAD_VENDOR_NVIDIA;
  i->vendor_index = ordinal;
  i->node = ordinal;
  i->cc_major = (uint32_t)nv_attr(d, NV_DEV_COMPUTE_CAPABILITY_MAJOR);
  i->cc_minor = (uint32_t)nv_attr(d, NV_DEV_COMPUTE_CAPABILITY_MINOR);
  snprintf(i->name, sizeof i->name, "sm_%u%u", i->cc_major, i->cc_minor);
  snprintf(i->isa_name, sizeof i->isa_name, "sm_%u%u", i->cc_major, i->cc_minor);
  snprintf(i->isa_names[0], sizeof i->isa_names[0], "nvptx64-nvidia-cuda--sm_%u%u", i->cc_major,
           i->cc_minor);
  i->isa_count = 1;
  if (nv_cu.device_get_name(i->product_name, (int)sizeof i->product_name, d->cu) != NV_SUCCESS)
    snprintf(i->product_name, sizeof i->product_name, "NVIDIA GPU %u", ordinal);
  i->compute_units = (uint32_t)nv_attr(d, NV_DEV_MULTIPROCESSOR_COUNT);
  i->simds_per_cu = 4; /* SM sub-partitions (Volta and later) */
  i->wavefront_size = (uint32_t)nv_attr(d, NV_DEV_WARP_SIZE);
  if (!i->wavefront_size) i->wavefront_size = 32;
  i->max_waves_per_cu = (uint32_t)nv_attr(d, NV_DEV_MAX_THREADS_PER_MULTIPROCESSOR) / i->wavefront_size;
  i->max_workgroup_size = (uint32_t)nv_attr(d, NV_DEV_MAX_THREADS_PER_BLOCK);
  static const nv_device_attribute_t bdim[3] = {NV_DEV_MAX_BLOCK_DIM_X, NV_DEV_MAX_BLOCK_DIM_Y,
                                                NV_DEV_MAX_BLOCK_DIM_Z};
  static const nv_device_attribute_t gdim[3] = {NV_DEV_MAX_GRID_DIM_X, NV_DEV_MAX_GRID_DIM_Y,
                                                NV_DEV_MAX_GRID_DIM_Z};
  for (int k = 0; k < 3; k++) {
    int b = nv_attr(d, bdim[k]);
    i->max_workgroup_dim[k] = (uint16_t)(b > 65535 ? 65535 : b);
    d->max_grid_blocks[k] = (uint32_t)nv_attr(d, gdim[k]);
    /* work-items, as on AMD: blocks x the largest block of that dimension */
    i->max_grid_dim[k] = nv_clip((uint64_t)d->max_grid_blocks[k] * (uint64_t)b);
  }
  d->max_shared_optin = (uint32_t)nv_attr(d, NV_DEV_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  i->lds_bytes = d->max_shared_optin ? d->max_shared_optin
                                     : (uint32_t)nv_attr(d, NV_DEV_MAX_SHARED_MEMORY_PER_BLOCK);
  i->queue_min_size = 1;
  i->queue_max_size = UINT32_MAX; /* a stream has no ring to size */
  i->queues_max = 0;              /* no fixed limit */
  size_t mem = 0;
  if (nv_cu.device_total_mem(&mem, d->cu) == NV_SUCCESS) i->local_memory_bytes = mem;
  i->nearest_cpu = -1;
  i->numa_node = -1;
  char bus[32] = "";
  if (nv_cu.device_get_pci_bus_id(bus, (int)sizeof bus, d->cu) == NV_SUCCESS) {
    snprintf(i->pci_bus_id, sizeof i->pci_bus_id, "%s", bus);
    char path[96], v[32];
    for (char *c = bus; *c; c++)
      if (*c >= 'A' && *c <= 'F') *c = (char)(*c - 'A' + 'a');
    snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/numa_node", bus);
    nv_read_line(path, v, sizeof v);
    if (v[0]) i->numa_node = atoi(v);
  }
  i->cuda_version = nv_cu.driver_version;
  nv_driver_version(i->driver_version, sizeof i->driver_version);
}

static hsad_status_t nv_open(uint32_t *out_count, char *out_why, size_t why_size) {
  *out_count = 0;
  if (getenv("HSAD_NO_NVIDIA")) {
    snprintf(out_why, why_size, "NVIDIA backend disabled (HSAD_NO_NVIDIA is set)");
    return HSAD_OK;
  }
  hsad_status_t s = nv_cuda_load();
  if (s) {
    snprintf(out_why, why_size, "%s", hsad_last_error());
    return HSAD_OK; /* no driver: no NVIDIA device, not an error */
  }
  int n = 0;
  nv_result_t r = nv_cu.device_get_count(&n);
  if (r != NV_SUCCESS) return nv_fail(NULL, r, "cuDeviceGetCount");
  if (n > NV_MAX_DEVICES) n = NV_MAX_DEVICES;
  nv_dev_count = 0;
  for (int o = 0; o < n; o++) {
    nv_dev_t *d = &nv_devs[nv_dev_count];
    memset(d, 0, sizeof *d);
    pthread_mutex_init(&d->lock, NULL);
    if ((r = nv_cu.device_get(&d->cu, o)) != NV_SUCCESS)
      return nv_fail(NULL, r, "cuDeviceGet(%d)", o);
    if ((r = nv_cu.primary_ctx_retain(&d->ctx, d->cu)) != NV_SUCCESS)
      return nv_fail(NULL, r, "cuDevicePrimaryCtxRetain(device ordinal %d)", o);
    d->retains = 1;
    nv_describe_one(d, (uint32_t)o);
    nv_dev_count++;
  }
  if (!nv_dev_count) snprintf(out_why, why_size, "the NVIDIA driver reports no device");
  *out_count = nv_dev_count;
  return HSAD_OK;
}

static void nv_describe(uint32_t i, uint32_t index, hsad_device_t *device,
                        hsad_device_info_t *out_info, void **out_impl) {
  nv_devs[i].pub = device;
  nv_devs[i].info.index = index;
  *out_info = nv_devs[i].info;
  *out_impl = &nv_devs[i];
}

static void nv_close(void) {
  nv_memory_close();
  for (uint32_t i = 0; i < nv_dev_count; i++) {
    nv_dev_t *d = &nv_devs[i];
    pthread_mutex_lock(&d->lock);
    while (d->queues) {
      nv_queue_t *q = d->queues;
      d->queues = q->next;
      q->next = NULL;
      /* the caller's queues stay valid memory and fail with CLOSED; ours are freed */
      if (q == d->copyq || (hsad_queue_t *)q == d->shared) {
        pthread_mutex_unlock(&d->lock);
        nv_queue_free(q);
        pthread_mutex_lock(&d->lock);
      } else {
        snprintf(q->error_msg, sizeof q->error_msg, "queue %llu: the hsa-dispatch runtime was "
                 "closed", (unsigned long long)q->uid);
        atomic_store_explicit(&q->error, HSAD_ERR_CLOSED, memory_order_release);
        q->dev = NULL;
      }
    }
    d->copyq = NULL;
    d->shared = NULL;
    pthread_mutex_unlock(&d->lock);
    for (; d->retains; d->retains--) nv_cu.primary_ctx_release(d->cu);
  }
  nv_dev_count = 0;
}

/* ---- programs and kernels ------------------------------------------------------------- */

/* The by-value parameters' types of a C++ kernel, from its mangled name (Itanium C++ ABI, as
 * NVRTC and nvcc mangle a kernel without extern "C"; the same classification as AMD's HIP
 * kernels, codeobj/argtype.c): n entries, 0 where the type is not an arithmetic scalar (a
 * pointer, a struct, a typedef the demangler keeps). NULL for an extern "C" name (a cubin
 * carries no parameter types), a name that does not demangle to n parameters, or no memory:
 * then sizes alone are checked. */
static uint8_t *nv_param_types(const char *name, uint32_t n) {
  if (!n || strncmp(name, "_Z", 2) != 0) return NULL;
  char(*cxx)[HSAD_CXX_TYPE_MAX] = calloc(n + 1, sizeof *cxx);
  uint8_t *types = cxx ? calloc(n, 1) : NULL;
  if (!types || hsad_cxx_param_types(name, cxx, (int)n) != (int)n) {
    free(cxx);
    free(types);
    return NULL;
  }
  for (uint32_t i = 0; i < n; i++) {
    char cls[HSAD_CXX_TYPE_MAX];
    hsad_karg_type_t t;
    uint32_t width;
    hsad_cxx_type_class(cxx[i], cls, sizeof cls);
    if (hsad_type_name_classify(cls, &t, &width) == HSAD_TYPE_NAME_SCALAR) types[i] = (uint8_t)t;
  }
  free(cxx);
  return types;
}

_Static_assert(offsetof(nv_kernel_t, ops) == offsetof(hsad_kernel_head_t, ops) &&
                   offsetof(nv_kernel_t, uid) == offsetof(hsad_kernel_head_t, uid) &&
                   offsetof(nv_kernel_t, hot_id) == offsetof(hsad_kernel_head_t, hot_id),
               "an NVIDIA kernel begins with the kernel head");

static hsad_status_t nv_kernel_read(nv_program_t *p, nv_kernel_t *k, nv_function_t fn) {
  k->ops = &nv_backend_ops;
  k->uid = hsad_backend_next_uid();
  k->hot_id = 0; /* never the AMD hot path's key */
  k->program = p;
  k->fn = fn;
  const char *name = NULL;
  nv_result_t r = nv_cu.func_get_name(&name, fn);
  if (r != NV_SUCCESS || !name) return nv_fail(p->dev, r, "%s: cuFuncGetName", p->label);
  k->desc.name = strdup(name);
  if (!k->desc.name) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: kernel name", p->label);
  uint32_t cap = 16;
  k->param_offset = malloc(cap * sizeof *k->param_offset);
  k->param_size = malloc(cap * sizeof *k->param_size);
  for (size_t i = 0; i < NV_MAX_PARAMS; i++) {
    size_t off = 0, size = 0;
    if (nv_cu.func_get_param_info(fn, i, &off, &size) != NV_SUCCESS) break; /* past the last */
    if (k->param_count == cap) {
      cap *= 2;
      uint32_t *o = realloc(k->param_offset, cap * sizeof *o);
      if (o) k->param_offset = o;
      uint32_t *z = realloc(k->param_size, cap * sizeof *z);
      if (z) k->param_size = z;
      if (!o || !z) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: kernel %s: parameters",
                                     p->label, name);
    }
    if (!k->param_offset || !k->param_size)
      return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: kernel %s: parameters", p->label, name);
    k->param_offset[k->param_count] = (uint32_t)off;
    k->param_size[k->param_count] = (uint32_t)size;
    if (off + size > k->param_bytes) k->param_bytes = (uint32_t)(off + size);
    k->param_count++;
  }
  k->param_type = nv_param_types(k->desc.name, k->param_count);
  /* With lazy loading (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2) a function
   * that cuModuleEnumerateFunctions returned is not loaded yet, and cuFuncGetAttribute answers
   * CUDA_ERROR_FUNCTION_NOT_LOADED (seen on the H200: every attribute read as 0): load it. */
  nv_result_t lr = nv_cu.func_load(fn);
  if (lr != NV_SUCCESS) return nv_fail(p->dev, lr, "%s: kernel %s: cuFuncLoad", p->label, name);
  static const struct { nv_function_attribute_t attr; const char *name; } attrs[5] = {
      {NV_FUNC_MAX_THREADS_PER_BLOCK, "CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK"},
      {NV_FUNC_SHARED_SIZE_BYTES, "CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES"},
      {NV_FUNC_LOCAL_SIZE_BYTES, "CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES"},
      {NV_FUNC_NUM_REGS, "CU_FUNC_ATTRIBUTE_NUM_REGS"},
      {NV_FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, "CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES"}};
  int v[5] = {0};
  for (int a = 0; a < 5; a++)
    if ((lr = nv_cu.func_get_attribute(&v[a], attrs[a].attr, fn)) != NV_SUCCESS)
      return nv_fail(p->dev, lr, "%s: kernel %s: cuFuncGetAttribute(%s)", p->label, name,
                     attrs[a].name);
  k->desc.max_flat_workgroup_size = (uint32_t)v[0];
  k->static_shared = (uint32_t)v[1];
  k->desc.private_segment_fixed_size = (uint32_t)v[2];
  k->registers = (uint32_t)v[3];
  atomic_init(&k->dynamic_shared_max, (uint32_t)v[4]);
  k->desc.kernel_object = (uint64_t)(uintptr_t)fn;
  k->desc.kernarg_segment_size = k->param_bytes;
  k->desc.kernarg_segment_align = 8;
  k->desc.group_segment_fixed_size = k->static_shared;
  k->desc.codeobj_kernel = NULL; /* no AMD metadata: the layout is cuFuncGetParamInfo's */
  return HSAD_OK;
}

static void nv_program_free(nv_program_t *p) {
  if (!p) return;
  for (uint32_t i = 0; i < p->kernel_count; i++) {
    free((char *)p->kernels[i].desc.name);
    free(p->kernels[i].param_offset);
    free(p->kernels[i].param_size);
    free(p->kernels[i].param_type);
  }
  free(p->kernels);
  if (p->module && p->dev &&
      atomic_load_explicit(&p->dev->generation, memory_order_acquire) == p->generation &&
      nv_ctx_enter(p->dev) == HSAD_OK)
    nv_cu.module_unload(p->module);
  free(p);
}

hsad_status_t nv_program_load_jit(nv_dev_t *dev, const void *data, size_t size,
                                  const char *label, const nv_jit_t *jit, hsad_program_t **out) {
  if (atomic_load_explicit(&dev->lost, memory_order_acquire))
    return hsad_fail(HSAD_ERR_QUEUE_ERROR, "%s: %s; create a queue on it first (that resets the "
                     "context)", label, dev->lost_msg);
  if (size < 4)
    return hsad_fail(HSAD_ERR_INVALID_ARGUMENT, "%s: %zu bytes: no cubin, fatbin or PTX", label,
                     size);
  hsad_status_t s = nv_ctx_enter(dev);
  if (s) return s;
  nv_program_t *p = calloc(1, sizeof *p);
  if (!p) return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: program", label);
  p->ops = &nv_backend_ops;
  p->uid = hsad_backend_next_uid();
  p->dev = dev;
  p->generation = atomic_load_explicit(&dev->generation, memory_order_acquire);
  snprintf(p->label, sizeof p->label, "%s", label ? label : "(memory)");
  /* cuModuleLoadData reads PTX as a NUL-terminated string: give it a terminated copy */
  const void *image = data;
  char *text = NULL;
  const uint8_t *b = data;
  bool elf = b[0] == 0x7f && b[1] == 'E' && b[2] == 'L' && b[3] == 'F';
  bool fatbin = b[0] == 0x50 && b[1] == 0xed && b[2] == 0x55 && b[3] == 0xba;
  if (!elf && !fatbin) {
    text = malloc(size + 1);
    if (!text) {
      free(p);
      return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: %zu bytes", label, size);
    }
    memcpy(text, data, size);
    text[size] = '\0';
    image = text;
  }
  nv_result_t r;
  char jit_log[2048] = "";
  if (jit && jit->count) { /* the JIT's options, and its error log for the message */
    nv_jit_option_t opt[NV_JIT_MAX_OPTIONS + 2];
    void *val[NV_JIT_MAX_OPTIONS + 2];
    uint32_t n = jit->count < NV_JIT_MAX_OPTIONS ? jit->count : NV_JIT_MAX_OPTIONS;
    for (uint32_t i = 0; i < n; i++) {
      opt[i] = jit->option[i];
      val[i] = (void *)(uintptr_t)jit->value[i];
    }
    opt[n] = NV_JIT_ERROR_LOG_BUFFER, val[n] = jit_log;
    opt[n + 1] = NV_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, val[n + 1] = (void *)(uintptr_t)sizeof jit_log;
    r = nv_cu.module_load_data_ex(&p->module, image, n + 2, opt, val);
  } else {
    r = nv_cu.module_load_data(&p->module, image);
  }
  free(text);
  if (r != NV_SUCCESS) {
    p->module = NULL;
    nv_program_free(p);
    jit_log[sizeof jit_log - 1] = '\0';
    return nv_fail(dev, r, "%s: %s on device %u (%s, %s)%s%s", label,
                   jit && jit->count ? "cuModuleLoadDataEx" : "cuModuleLoadData",
                   dev->info.index, dev->info.product_name, dev->info.name,
                   jit_log[0] ? "; JIT log: " : "", jit_log);
  }
  unsigned int n = 0;
  if ((r = nv_cu.module_get_function_count(&n, p->module)) != NV_SUCCESS) {
    nv_program_free(p);
    return nv_fail(dev, r, "%s: cuModuleGetFunctionCount", label);
  }
  nv_function_t *fns = calloc(n ? n : 1, sizeof *fns);
  p->kernels = calloc(n ? n : 1, sizeof *p->kernels);
  if (!fns || !p->kernels) {
    free(fns);
    nv_program_free(p);
    return hsad_fail(HSAD_ERR_OUT_OF_MEMORY, "%s: %u kernels", label, n);
  }
  if (n && (r = nv_cu.module_enumerate_functions(fns, n, p->module)) != NV_SUCCESS) {
    free(fns);
    nv_program_free(p);
    return nv_fail(dev, r, "%s: cuModuleEnumerateFunctions", label);
  }
  for (unsigned int i = 0; i < n; i++) {
    p->kernel_count = i + 1;
    s = nv_kernel_read(p, &p->kernels[i], fns[i]);
    if (s) {
      free(fns);
      nv_program_free(p);
      return s;
    }
  }
  free(fns);
  *out = (hsad_program_t *)p;
  return HSAD_OK;
}

static hsad_status_t nv_program_load(hsad_device_t *device, void *impl, const void *data,
                                     size_t size, const char *label, hsad_program_t **out) {
  (void)device;
  return nv_program_load_jit(impl, data, size, label, NULL, out);
}

static void nv_program_destroy(hsad_program_t *program) { nv_program_free((nv_program_t *)program); }

static hsad_device_t *nv_program_device(const hsad_program_t *program) {
  const nv_program_t *p = (const nv_program_t *)program;
  return p->dev ? p->dev->pub : NULL;
}

static uint32_t nv_program_kernel_count(const hsad_program_t *program) {
  return ((const nv_program_t *)program)->kernel_count;
}

static hsad_status_t nv_program_kernel(const hsad_program_t *program, const char *name,
                                       const hsad_device_kernel_t **out) {
  const nv_program_t *p = (const nv_program_t *)program;
  size_t len = strlen(name);
  if (len > 3 && !strcmp(name + len - 3, ".kd")) len -= 3; /* NAME.kd, as on AMD */
  for (uint32_t i = 0; i < p->kernel_count; i++)
    if (strlen(p->kernels[i].desc.name) == len && !strncmp(p->kernels[i].desc.name, name, len)) {
      *out = (const hsad_device_kernel_t *)&p->kernels[i];
      return HSAD_OK;
    }
  char list[256] = "";
  size_t at = 0;
  for (uint32_t i = 0; i < p->kernel_count && at < sizeof list - 1; i++)
    at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "",
                           p->kernels[i].desc.name);
  return hsad_fail(HSAD_ERR_KERNEL_NOT_FOUND, "%s: no kernel '%s' (%u kernels: %s)", p->label,
                   name, p->kernel_count, list);
}

static const hsad_device_kernel_t *nv_program_kernel_at(const hsad_program_t *program,
                                                        uint32_t i) {
  const nv_program_t *p = (const nv_program_t *)program;
  return i < p->kernel_count ? (const hsad_device_kernel_t *)&p->kernels[i] : NULL;
}

static const hsad_device_kernel_desc_t *nv_kernel_desc(const hsad_device_kernel_t *kernel) {
  return &((const nv_kernel_t *)kernel)->desc;
}

const hsad_backend_ops_t nv_backend_ops = {
    .name = "nvidia",
    .vendor = HSAD_VENDOR_NVIDIA,
    .open = nv_open,
    .device_describe = nv_describe,
    .close = nv_close,
    .program_load = nv_program_load,
    .program_destroy = nv_program_destroy,
    .program_device = nv_program_device,
    .program_kernel_count = nv_program_kernel_count,
    .program_kernel = nv_program_kernel,
    .program_kernel_at = nv_program_kernel_at,
    .kernel_desc = nv_kernel_desc,
    .queue_create = nv_queue_create,
    .device_queue = nv_device_queue,
    .queue_destroy = nv_queue_destroy,
    .queue_device = nv_queue_device,
    .queue_size = nv_queue_size,
    .queue_error = nv_queue_error,
    .kernel_dispatch = nv_kernel_dispatch,
    .queue_barrier = nv_queue_barrier,
    .queue_flush = nv_queue_flush,
    .completion_wait = nv_completion_wait,
    .completion_done = nv_completion_done,
    .completion_times = nv_completion_times,
    .buffer_alloc = nv_buffer_alloc,
    .buffer_free = nv_buffer_free,
    .mem_alloc = nv_mem_alloc,
    .mem_free = nv_mem_free,
    .memcpy_async = nv_memcpy_async,
    .host_pool_get = nv_host_pool_get,
    .host_pool_get_node = nv_host_pool_get_node,
    .host_pool_alloc = nv_host_pool_alloc,
    .host_pool_free = nv_host_pool_free,
    .host_pool_trim = nv_host_pool_trim,
    .host_pool_set_max_cached = nv_host_pool_set_max_cached,
    .host_pool_stats = nv_host_pool_stats,
    .graph = &nv_graph_ops,
    .variant_check = nv_variant_check,
    .variant_select = nv_variant_select,
    .queue_profiling = nv_queue_profiling,
    .monitor_enable = nv_monitor_enable,
    .monitor_disable = nv_monitor_disable,
    .monitor_drain = nv_monitor_drain,
    .queue_trace_id = nv_queue_trace_id,
    .capture_set = nv_queue_capture_set,
};
